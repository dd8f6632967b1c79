"""
A labelled store, its splits and what a model must beat
=======================================================

Prepare the Bonn epilepsy recordings (Andrzejak et al. 2001) for seizure detection with the
``bonn_epilepsy`` card: single-channel segments at 173.61 Hz resampled to 200 Hz and cut into 4-s
windows, split by segment number (1–60 / 61–80 / 81–100 of every set). Then score the classical
baselines on the test split: any foundation-model result is only a result beside them and chance.
"""

# %%
import os
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from neurokit.data.dataset import PatchDataset
from neurokit.evaluation.baselines import baseline
from neurokit.pipelines.prepare import prepare_or_reuse

shared = Path(os.environ.get("NEUROKIT_SHARED", "../shared"))
out = Path(tempfile.mkdtemp()) / "bonn.h5"
path, note = prepare_or_reuse("bonn_epilepsy", out, data_root=shared / "data/eeg", task="seizure")
ds = PatchDataset(path)
print(note)
print(len(ds), "windows of shape", ds.sample_shape, "labels", ds.info.label_names)

# %%
# Windows per split and class: the split keeps every window of a segment together.
splits = ds.split()
counts = {k: np.bincount(d.labels, minlength=2) for k, d in splits.items()}
for k, c in counts.items():
    print(f"{k:5s}", dict(zip(ds.info.label_names, c.tolist())))

# %%
# The classical baselines on the test split (balanced accuracy and AUROC), beside chance (0.5).
res = baseline(path)
names = list(res["baselines"])
fig, ax = plt.subplots(figsize=(7, 3))
x = np.arange(len(names))
ax.bar(x - 0.2, [res["baselines"][n]["test"]["balanced_accuracy"] for n in names], 0.4, label="balanced accuracy")
ax.bar(x + 0.2, [res["baselines"][n]["test"]["auroc"] for n in names], 0.4, label="AUROC")
ax.axhline(0.5, color="k", ls="--", lw=1, label="chance")
ax.set_xticks(x, names, rotation=15)
ax.set_ylim(0, 1.05)
ax.legend(loc="lower right")
fig.tight_layout()
