"""Held-out masked reconstruction against the predict-zero and predict-mean baselines, per input normalisation
(``neuro pretrain --normalize``), on the quick start's pool; optionally the Bonn fine-tuning from each checkpoint.

Prepares the Bonn (seizure) and EEGMMIDB (left/right imagery, sensorimotor channels) stores under ``--out``, pools
their training subjects' windows as single-channel 4-s samples (``pool_single_channel``, 3,000 windows, seed 0),
pretrains a 2-layer CBraMod per mode (batch 32, lr 1e-3, CPU) and prints, per mode, the held-out loss / predict-zero
and loss / predict-mean on the pool and per corpus. ``--multichannel`` pretrains on the 21-channel EEGMMIDB store
instead (spatial context). ``--finetune`` fine-tunes Bonn seizure detection from each checkpoint (quick-start
settings: 2 epochs, avgpool head) and prints its test balanced accuracy and AUROC. Figures: docs/guide/pretraining.md.

Usage::

    python benchmarks/pretrain_normalization.py --data-root ../shared/data/eeg --out /tmp/norm --epochs 15 \\
        [--modes none,window,channel,corpus] [--multichannel] [--finetune] [--seeds 0]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-root", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--epochs", type=int, default=15)
    ap.add_argument("--modes", default="none,window,channel,corpus")
    ap.add_argument("--multichannel", action="store_true")
    ap.add_argument("--finetune", action="store_true")
    ap.add_argument("--seeds", default="0", help="fine-tuning seeds, e.g. 0,1,2")
    args = ap.parse_args()
    torch.set_num_threads(1)

    from neurokit.cards import load_card
    from neurokit.data.corpus import ScaledDataset, corpus_ids
    from neurokit.data.dataset import PatchDataset
    from neurokit.store.patch_store import PatchStore
    from neurokit.models.checkpoint import load_checkpoint
    from neurokit.models.registry import get_model_spec
    from neurokit.training.config import FinetuneConfig
    from neurokit.pipelines.finetune import finetune
    from neurokit.pipelines.prepare import prepare_or_reuse
    from neurokit.data.selection import holdout_split, select_pretrain_data
    from neurokit.training.config import PretrainConfig
    from neurokit.pipelines.pretrain import pretrain
    from neurokit.pipelines.quickstart import pool_single_channel
    from neurokit.training.objectives import heldout_masked_loss

    args.out.mkdir(parents=True, exist_ok=True)
    stores = {}
    for card, task, ch in (("bonn_epilepsy", "seizure", None), ("physionet_mi", "left_right_imagery", "sensorimotor")):
        path, note = prepare_or_reuse(card, args.out / f"{card}.h5", data_root=args.data_root, task=task, channels=ch)
        print(note)
        stores[card] = (PatchStore(path), load_card(card).splits(task)["train"])
    if args.multichannel:
        data = stores["physionet_mi"][0].path
    else:
        data = pool_single_channel(list(stores.values()), args.out / "pooled.h5", seed=0)
    rows = {}
    for mode in args.modes.split(","):
        cfg = PretrainConfig(
            model_kwargs={"n_layers": 2},
            epochs=args.epochs,
            batch_size=32,
            optim={"lr": 1e-3},
            seed=0,
            device="cpu",
            normalize=mode,
            progress=False,
        )
        res = pretrain([data], args.out / f"pt_{mode}", cfg, overwrite=True)
        ck = load_checkpoint(res["checkpoint"])
        model = get_model_spec("cbramod").rebuild(ck["model_config"])
        model.load_state_dict(ck["state_dict"])
        _, val, held = holdout_split(
            select_pretrain_data([data], split=cfg.split, subjects=cfg.subjects)[0], cfg.val_fraction, cfg.seed
        )  # as pretrain
        per = {}
        ids = corpus_ids(val)
        for c in sorted(set(ids)):
            sub = PatchDataset(val.stores, samples=val.sample_ids[ids == c])
            if mode == "corpus":
                sub = ScaledDataset(sub, ck["normalize"]["corpus_scales"])
            r = heldout_masked_loss(model, torch.utils.data.DataLoader(sub, batch_size=64), seed=0)
            per[c.split("#")[-1]] = {
                "loss/zero": r["heldout_loss"] / r["heldout_zero"],
                "loss/mean": r["heldout_loss"] / r["heldout_mean"],
            }
        h = res["heldout_history"][-1]
        rows[mode] = {
            "loss/zero": h["heldout_loss"] / h["heldout_zero"],
            "loss/mean": h["heldout_loss"] / h["heldout_mean"],
            "per_corpus": per,
            "held": held,
        }
        if args.finetune:
            rows[mode]["bonn"] = {}
            for seed in (int(s) for s in args.seeds.split(",")):
                fcfg = FinetuneConfig(
                    epochs=2,
                    batch_size=32,
                    seed=seed,
                    device="cpu",
                    head="avgpool",
                    lr_backbone=5e-4,
                    lr_head=1e-3,
                    baselines=False,
                    progress=False,
                )
                rep = finetune(
                    [stores["bonn_epilepsy"][0].path],
                    args.out / f"ft_{mode}_s{seed}",
                    fcfg,
                    init=res["checkpoint"],
                    overwrite=True,
                )
                rows[mode]["bonn"][seed] = {k: rep["test"][k] for k in ("balanced_accuracy", "auroc")}
        print(mode, json.dumps(rows[mode]), flush=True)
    (args.out / "normalization.json").write_text(json.dumps(rows, indent=1))
    print("\n| normalize | loss / zero | loss / mean | per corpus: loss / zero, loss / mean |")
    for m, r in rows.items():
        per = "; ".join(f"{c} {v['loss/zero']:.3f}, {v['loss/mean']:.3f}" for c, v in r["per_corpus"].items())
        print(f"| {m} | {r['loss/zero']:.3f} | {r['loss/mean']:.3f} | {per} |")


if __name__ == "__main__":
    main()
