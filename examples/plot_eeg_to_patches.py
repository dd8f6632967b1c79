"""
From an EDF file to CBraMod patches
===================================

Read one EEGMMIDB motor-imagery run with :func:`neurokit.read_eeg` (MNE underneath, channel labels
normalised to the 10-05 system), preprocess it with the ``physionet_mi`` card's recipe (average
reference, 0.3 Hz high-pass, 60 Hz notch, 200 Hz, µV/100) and cut 4-s windows at the cues into
``(channels, n_patches, 200)`` patch tensors, the input of CBraMod.
"""

# %%
import os
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

import neurokit
from neurokit.cards.recipes import EEGRecipe
from neurokit.preprocessing.eeg import make_windows, preprocess_raw

shared = Path(os.environ.get("NEUROKIT_SHARED", "../shared"))
edf = shared / "data/eeg/MNE-eegbci-data/files/eegmmidb/1.0.0/S001/S001R04.edf"
raw = neurokit.read_eeg(edf)
print(raw.info["sfreq"], "Hz,", len(raw.ch_names), "channels:", raw.ch_names[:6], "…")

# %%
# The card's recipe, with the task's events (T1: left fist, T2: right fist) as labelled windows.
recipe = neurokit.load_card("physionet_mi").recipe()
recipe = EEGRecipe.from_dict({**recipe.to_dict(), "events": {"T1": 0, "T2": 1}})
raw = preprocess_raw(raw, recipe)
w = make_windows(raw, recipe)
print("patches:", w.patches.shape, w.patches.dtype, "labels:", np.bincount(w.labels))

# %%
# One window of C3, Cz and C4: five 1-s patches of 200 samples each (units of 100 µV).
picks = [raw.ch_names.index(c) for c in ("C3", "Cz", "C4")]
fig, axes = plt.subplots(3, 1, figsize=(8, 5), sharex=True)
t = np.arange(w.patches.shape[2] * 200) / 200.0
for ax, c, name in zip(axes, picks, ("C3", "Cz", "C4")):
    ax.plot(t, w.patches[0, c].reshape(-1) * 100, lw=0.7)
    for k in range(1, w.patches.shape[2]):
        ax.axvline(k, color="0.7", lw=0.5)
    ax.set_ylabel(f"{name} (µV)")
axes[-1].set_xlabel("time in the window (s); grey lines: patch edges")
fig.tight_layout()
