"""
Several foundation models on one store, beside EEGNet and a classical baseline
==============================================================================

``neuro compare`` (:func:`neurokit.pipelines.compare_models.compare_models` in Python) fine-tunes several models
on one card's store with the same seeds, label fractions, split and schedule, and scores them beside EEGNet-8,2
and the classical baseline of best validation score. Each foundation model is fed as its paper feeds it: the store
is adapted at load time to its input contract (rate, window, patch, units, channels; recorded in each run).

Here: EEGMMIDB left- vs right-fist imagery of four subjects (S001–S002 train, S007 validation, S009 test) over C3,
Cz and C4, and CBraMod, LaBraM and REVE at one layer from random weights, one epoch, one seed: a demonstration of
the comparison's shape that runs in seconds, not a result (no pretrained weights are loaded offline; give
``init={"labram": "weights.safetensors"}`` to fine-tune published ones).
"""

# %%
import os
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from neurokit.cli.reports import comparison_lines
from neurokit.pipelines.compare_models import compare_models, depth_kwargs
from neurokit.pipelines.prepare import prepare_or_reuse
from neurokit.training.config import FinetuneConfig

shared = Path(os.environ.get("NEUROKIT_SHARED", "../shared"))
tmp = Path(tempfile.mkdtemp())
path, note = prepare_or_reuse(
    "physionet_mi",
    tmp / "mi.h5",
    data_root=shared / "data/eeg",
    task="left_right_imagery",
    subjects=[1, 2, 7, 9],
    channels="C3,Cz,C4",
)
print(note)

# %%
# Every model: the same split, seed, label subset, epochs and batch; EEGNet at its authors' learning rate.
models = ["cbramod", "labram", "reve", "eegnet", "classical"]
cfg = FinetuneConfig(epochs=1, batch_size=16, head="avgpool", lr_backbone=5e-4, lr_head=1e-3, progress=False)
res = compare_models(
    path,
    tmp / "compare",
    cfg,
    models=models,
    model_kwargs=depth_kwargs(models, 1),
    seeds=1,
    eegnet_min_epochs=1,
)
print("\n".join(comparison_lines(res)))
for how in res["adaptations"].values():
    print(how["line"])

# %%
# Test AUROC per model, the best classical baseline (chosen on validation) and chance.
arms = res["arms"]
values = [res["summary"][a]["1"]["auroc"]["mean"] for a in arms]
best = res["classical"]["1"]["best"]
fig, ax = plt.subplots(figsize=(7, 3), layout="constrained")
ax.bar(np.arange(len(arms)), values, color="0.5")
ax.axhline(res["baselines"]["1"][best]["auroc"], color="tab:blue", lw=1.5, label=f"best classical ({best})")
ax.axhline(0.5, color="k", ls="--", lw=1, label="chance")
ax.set_xticks(np.arange(len(arms)), [res["arm_titles"][a].replace(" (", "\n(") for a in arms], fontsize=8)
ax.set_ylim(0, 1)
ax.set_ylabel("test AUROC")
ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
plt.show()
