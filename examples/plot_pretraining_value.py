"""
Does pretraining help? Pretrained vs from scratch at few labels
===============================================================

A foundation model is worth what it adds over the same architecture trained from random weights. This example
pretrains a 1-layer CBraMod for one epoch on single-channel windows of the Bonn *training* segments, then
fine-tunes seizure detection from those weights and from scratch, and trains EEGNet-8,2 (the compact network
BCI papers use as their deep baseline) on the same labels, with 2 seeds at 5 % and 25 % of the training labels
(:func:`neurokit.pipelines.compare.compare_pretraining`), and draws the label-efficiency curve beside the
classical baseline and chance. Small settings for a CPU: the figures are an illustration of the method; the
quick start and ``benchmarks/pretraining_value.py`` measure at larger sizes.
"""

# %%
import os
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt

from neurokit.data.dataset import PatchDataset
from neurokit.data.splits import resolve_splits
from neurokit.store.patch_store import PatchStore
from neurokit.evaluation.masked import heldout_line
from neurokit.pipelines.compare import compare_pretraining
from neurokit.training.config import FinetuneConfig
from neurokit.pipelines.prepare import prepare_or_reuse
from neurokit.training.config import PretrainConfig
from neurokit.pipelines.pretrain import pretrain
from neurokit.pipelines.quickstart import pool_single_channel

shared = Path(os.environ.get("NEUROKIT_SHARED", "../shared"))
work = Path(tempfile.mkdtemp())
store, _ = prepare_or_reuse("bonn_epilepsy", work / "bonn.h5", data_root=shared / "data/eeg", task="seizure")
# the training subjects of the store's split (as fine-tuning reads it from the card the store records)
train_subjects = resolve_splits(PatchDataset(store), complete=False)[1]["train"]["subjects"]
pool = pool_single_channel([(PatchStore(store), train_subjects)], work / "pool.h5", max_samples=1500)
pt = pretrain(
    [pool],
    work / "pt",
    PretrainConfig(model_kwargs={"n_layers": 1}, epochs=1, batch_size=32, optim=dict(lr=1e-3), progress=False),
)
# Bonn holds one channel per segment, so a masked one-second patch can only be predicted from its neighbours in
# time: on held-out subjects the model is expected to be near predict-zero here (multi-channel stores do better)
print(f"pretraining: {pt['steps']} steps; " + heldout_line(pt["heldout_history"][-1]))

# %%
cfg = FinetuneConfig(epochs=2, batch_size=64, head="avgpool", lr_backbone=5e-4, lr_head=1e-3, progress=False)
res = compare_pretraining(
    [store], work / "cmp", cfg, init=pt["checkpoint"], seeds=2, label_fractions=(0.05, 0.25), probe=False
)
for pair in ("pretrained − scratch", "pretrained − eegnet"):
    d = res["differences"][pair]
    for f in res["fractions"]:
        print(
            f"labels {float(f):.0%}: Δ AUROC {pair} {d[f]['auroc']['mean']:+.3f} ± {d[f]['auroc']['std']:.3f} "
            f"(better in {d[f]['auroc']['better']} of {d[f]['auroc']['n']} seeds)"
        )

# %%
fig, ax = plt.subplots(figsize=(6, 4), layout="constrained")
fr = [float(f) for f in res["fractions"]]
arms = (
    ("pretrained", "pretrained", "tab:blue"),
    ("scratch", "from scratch", "tab:gray"),
    ("eegnet", "EEGNet-8,2", "tab:green"),
)
for arm, label, colour in arms:
    m = [res["summary"][arm][f]["auroc"]["mean"] for f in res["fractions"]]
    s = [res["summary"][arm][f]["auroc"]["std"] for f in res["fractions"]]
    ax.errorbar(fr, m, yerr=s, marker="o", capsize=3, color=colour, label=label)
ax.plot(fr, [res["baselines"][f]["bandpower_lr"]["auroc"] for f in res["fractions"]], "k--", label="band power + LR")
ax.axhline(0.5, color="k", lw=0.8, label="chance")
ax.set_xscale("log")
ax.set_xlabel("fraction of the training labels")
ax.set_ylabel("test AUROC (mean ± std, 2 seeds)")
ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)  # beside the curves
plt.show()
