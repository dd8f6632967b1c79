"""
Is it brain activity? The eye-movement check on motor imagery
=============================================================

EEGMMIDB shows its imagery targets on the left or right of the screen, so horizontal eye movements follow the
labels. Before believing a left- vs right-fist score, test whether the labels are decodable from the eyes alone:
:func:`neurokit.evaluation.confounds.check_confounds` fits a cross-validated classifier (folds by subject) on
per-window features of EOG channels or frontal proxies (Fp1/Fp2, AF7/AF8, F7/F8, F8 − F7) and runs a
within-subject permutation test. Every ``neuro finetune`` runs it; ``neuro check-confounds`` runs it alone.
"""

# %%
import os
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from neurokit.data.dataset import PatchDataset
from neurokit.evaluation.confounds import check_confounds
from neurokit.pipelines.prepare import prepare_or_reuse

shared = Path(os.environ.get("NEUROKIT_SHARED", "../shared"))
out = Path(tempfile.mkdtemp()) / "mi64.h5"
path, _ = prepare_or_reuse("physionet_mi", out, data_root=shared / "data/eeg", task="left_right_imagery")
res = check_confounds(path, split="train")
print(res.message)

# %%
# AUROC of each proxy's per-window mean alone, on the training subjects (0.5: no information).
names = list(res.single_aurocs)
fig, ax = plt.subplots(figsize=(7, 3.6), layout="constrained")
ax.bar(range(len(names)), [res.single_aurocs[n] for n in names], color="tab:orange")
ax.set_xticks(range(len(names)), names, rotation=90, fontsize=8)  # one label per bar, none overlapping
ax.axhline(0.5, color="k", ls="--", lw=1, label="chance")
ax.axhline(res.min_auroc, color="tab:red", ls=":", lw=1, label="firing threshold\n(with p < 0.01)")
ax.set_ylabel("AUROC (left vs right fist)")
ax.set_ylim(0.4, 1.0)
ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)  # beside the bars, not on them
ax.set_title(f"classifier on all proxies: AUROC {res.auroc:.2f}, p = {res.p_value:.3f}")
plt.show()

# %%
# The mean of F8 − F7 per window, by class: the horizontal-EOG pattern.
ds = PatchDataset(path).split()["train"]
ch = list(ds.info.ch_names)
x = np.stack([ds[i][0].numpy() for i in range(len(ds))])  # (n, C, N, 200), units of 100 µV
heog = (x[:, ch.index("F8")] - x[:, ch.index("F7")]).mean(axis=(1, 2)) * 100  # µV
fig, ax = plt.subplots(figsize=(6, 3), layout="constrained")
for c, name in enumerate(ds.info.label_names):
    ax.hist(heog[ds.labels == c], bins=30, alpha=0.6, label=name)
ax.set_xlabel("mean F8 − F7 over the 4-s window (µV)")
ax.set_ylabel("windows")
ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
plt.show()
