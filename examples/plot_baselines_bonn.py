"""
A labelled store, its splits and what a model must beat
=======================================================

Prepare the Bonn epilepsy recordings (Andrzejak et al. 2001) for seizure detection with the
``bonn_epilepsy`` card: single-channel segments at 173.61 Hz resampled to 200 Hz and cut into 4-s
windows, split by segment number (1–60 / 61–80 / 81–100 of every set). Then score the classical
baselines on the test split: any foundation-model result is only a result beside them and chance. Bonn
recordings are single-channel, so of the three EEG baselines only band power + LR applies here: CSP + LDA and
tangent space + LR work on the covariance between channels and need two or more (the figure says so).
"""

# %%
import os
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from neurokit.data.dataset import PatchDataset
from neurokit.evaluation.baselines import BASELINE_TITLES, EEG_METHODS, baseline
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
# The classical baselines on the test split (balanced accuracy and AUROC), beside chance (0.5): every EEG
# baseline is named, and those that do not apply to one channel say so where their bars would be.
res = baseline(path)
for name, r in res["baselines"].items():
    print(
        f"{BASELINE_TITLES[name]:20s}",
        {m: round(v, 3) for m, v in r["test"].items() if m in ("balanced_accuracy", "auroc")},
    )
names = list(EEG_METHODS)
fig, ax = plt.subplots(figsize=(7, 3), layout="constrained")
x = np.arange(len(names))
for dx, metric, label in ((-0.2, "balanced_accuracy", "balanced accuracy"), (0.2, "auroc", "AUROC")):
    ran = [i for i, n in enumerate(names) if n in res["baselines"]]
    ax.bar(x[ran] + dx, [res["baselines"][names[i]]["test"][metric] for i in ran], 0.4, label=label)
for i, n in enumerate(names):
    if n not in res["baselines"]:
        ax.text(i, 0.25, "not applicable:\none channel", ha="center", va="center", fontsize=8, color="0.4")
ax.axhline(0.5, color="k", ls="--", lw=1, label="chance")
ax.set_xticks(x, [BASELINE_TITLES[n] for n in names])
ax.set_xlim(-0.6, len(names) - 0.4)  # room for every method's bars, those that ran and those that do not apply
ax.set_ylim(0, 1.05)
ax.set_ylabel("test split")
ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)  # beside the bars
plt.show()
