"""What pretraining is worth at a larger size, pretrained vs from scratch over seeds and label fractions.

CBraMod is pretrained for a fixed CPU budget on the shared EEG of the *training* subjects, then pretrained vs from scratch and the linear probes over seeds and label fractions on
downstream tasks, beside the classical baselines and chance (issue 17 item 8).

Corpus (built with the library's own preparation, never from validation or test subjects):

- Bonn epilepsy, the ``seizure`` task's training segments (seg001-seg060 of each set);
- EEGMMIDB, the card's ``motor_imagery_4class`` task (imagery runs 4/8/12 and 6/10/14 wherever present) with all 64
  channels, restricted to the ``left_right_imagery`` training subjects (``prepare(..., subjects=...)``): every
  channel of every 4-s event window becomes one pretraining window, about 3 times the quick start's pool;
- EEGMAT, its training subject (rest and arithmetic, all 20 channels).

Their training-subject windows pretrain with their own channels, one store layout per batch
(:func:`neurokit.data.selection.select_layouts`; at most ``--max-pool`` windows of each), and the pretraining
recordings are checked against
the validation and test recordings of every downstream task by content (SHA-256 and archive member,
:func:`neurokit.data.provenance.pretraining_overlap`): the script stops if any is found, and checks again that
every pretrained fine-tuning run recorded ``pretraining_overlap == []``.

Budget: ``--budget-min`` covers pretraining only. A probe of ``--probe-steps`` optimiser steps (its own folder,
discarded) measures the training throughput on this machine now; the run then gets a step cap
``(budget − probe time) × steps/s × 0.95`` (the 5 % pays the held-out evaluation after each epoch), with the
cosine schedule spanning exactly that cap (``PretrainConfig.max_steps``). The minutes actually spent are printed.

Downstream (:func:`neurokit.pipelines.compare.compare_pretraining`, the quick start's fine-tuning settings): Bonn
seizure vs non-seizure, EEGMMIDB left vs right fist imagery (sensorimotor channels), optionally EEGMAT rest vs
arithmetic (``--tasks bonn,mi,eegmat``). Output in ``--out``: ``pretraining_value.json`` (everything printed and
more), per task ``compare_<task>/comparison.json`` and ``label_efficiency_<task>.png``, and
``label_efficiency.png`` (all tasks side by side).

Usage::

    python benchmarks/pretraining_value.py --data-root ../shared/data/eeg --out /tmp/pv --budget-min 30
    python benchmarks/pretraining_value.py --data-root ../shared/data/eeg --out /tmp/pv_smoke \\
        --budget-min 0.5 --seeds 1 --label-fractions 0.1,1          # smoke test
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import re
import shlex
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import torch

#: downstream tasks: key → (card, task, channel set, fine-tuning epochs); the first two are the quick start's
DOWNSTREAM = {
    "bonn": ("bonn_epilepsy", "seizure", None, 2),
    "mi": ("physionet_mi", "left_right_imagery", "sensorimotor", 3),
    "eegmat": ("eegmat", None, None, 3),
}
#: extra unlabelled-for-pretraining stores: (card, task, channels, whose training subjects)
PRETRAIN_EXTRA = (("physionet_mi", "motor_imagery_4class", None, ("physionet_mi", "left_right_imagery")),)


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1],
    )
    ap.add_argument(
        "--data-root",
        type=Path,
        default=Path("../shared/data/eeg"),
        help="folder holding bonn/, MNE-eegbci-data/, eegmat/ (default ../shared/data/eeg)",
    )
    ap.add_argument("--out", type=Path, required=True, help="output folder (stores and runs there are reused)")
    ap.add_argument("--budget-min", type=float, default=30.0, help="CPU minutes of pretraining (default 30)")
    ap.add_argument("--seeds", type=int, default=3, help="fine-tuning seeds per arm and fraction (default 3)")
    ap.add_argument("--label-fractions", default="0.02,0.1,0.3,1", help="fractions of the training labels")
    ap.add_argument("--tasks", default="bonn,mi", help=f"downstream tasks, of {','.join(DOWNSTREAM)} (default bonn,mi)")
    ap.add_argument("--n-layers", type=int, default=2, help="CBraMod layers, 2-4 (default 2)")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--lr", type=float, default=5e-4, help="pretraining learning rate (AdamW, cosine)")
    ap.add_argument("--max-pool", type=int, default=100_000, help="most windows of each store pretrained on")
    ap.add_argument("--probe-steps", type=int, default=30, help="optimiser steps of the timing probe")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1, help="torch threads (default 1: shared machine)")
    ap.add_argument("--overwrite", action="store_true", help="redo pretraining and every fine-tuning run")
    args = ap.parse_args(argv)
    if not args.data_root.is_dir():
        ap.error(f"--data-root {args.data_root}: no such folder; give the folder holding bonn/, MNE-eegbci-data/")
    if not 2 <= args.n_layers <= 4:
        ap.error(f"--n-layers {args.n_layers}: 2 to 4")
    if args.budget_min <= 0:
        ap.error(f"--budget-min {args.budget_min}: must be > 0")
    bad = [t for t in args.tasks.split(",") if t not in DOWNSTREAM]
    if bad:
        ap.error(f"--tasks: unknown {', '.join(bad)}; allowed {', '.join(DOWNSTREAM)}")
    return args


def machine() -> dict:
    """CPU count, torch version and threads, platform, load average when the run started."""
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    return {
        "cpu_count": os.cpu_count(),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "processor": platform.processor(),
        "cuda": torch.cuda.is_available(),
        "loadavg_1_5_15": load,
    }


def main(argv=None) -> dict:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    from neurokit.cards import load_card
    from neurokit.cli.common import parse_fractions
    from neurokit.cli.reports import comparison_lines
    from neurokit.data.dataset import PatchDataset
    from neurokit.data.provenance import pretraining_overlap
    from neurokit.data.splits import resolve_splits
    from neurokit.store.patch_store import PatchStore
    from neurokit.models.checkpoint import load_checkpoint
    from neurokit.pipelines.compare import compare_pretraining
    from neurokit.training.config import FinetuneConfig
    from neurokit.pipelines.prepare import prepare_or_reuse
    from neurokit.evaluation.masked import heldout_line, heldout_lines
    from neurokit.training.config import PretrainConfig
    from neurokit.pipelines.pretrain import pretrain, pretrain_or_resume
    from neurokit.plotting.report import plot_label_efficiency

    t_start = time.perf_counter()
    fractions = parse_fractions(args.label_fractions)
    tasks = args.tasks.split(",")
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    record = {
        "command": " ".join(shlex.quote(a) for a in [sys.executable, *sys.argv]),
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": machine(),
        "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
    }
    print(f"command: {record['command']}")
    print(f"date: {record['date']}")
    m = record["machine"]
    print(
        f"machine: {m['cpu_count']} CPU(s), torch {m['torch']} ({m['torch_threads']} thread(s)), "
        f"{m['platform']}, load average {m['loadavg_1_5_15']} (other jobs share these cores)"
    )

    # ---------------------------------------------------------------- stores (downstream and pretraining)
    t0 = time.perf_counter()
    stores, pool_parts = {}, []
    for key in tasks:
        card, task, chans, _ = DOWNSTREAM[key]
        path = out / f"{key}.h5"
        path, note = prepare_or_reuse(
            card, path, data_root=args.data_root, task=task, channels=chans, overwrite=args.overwrite, progress=False
        )
        print(note)
        stores[key] = PatchStore(path)
    for key in DOWNSTREAM:  # every corpus's training recordings go into the pool, downstream or not
        card, task, chans, _ = DOWNSTREAM[key]
        if key not in stores:
            path, note = prepare_or_reuse(
                card,
                out / f"{key}.h5",
                data_root=args.data_root,
                task=task,
                channels=chans,
                overwrite=args.overwrite,
                progress=False,
            )
            print(note)
            stores[key] = PatchStore(path)
        if key != "mi":  # EEGMMIDB enters through its 64-channel store below
            train_part = resolve_splits(PatchDataset([stores[key].path]), complete=False)[1]["train"]
            pool_parts.append((stores[key], train_part["subjects"]))
    for card, task, chans, (split_card, split_task) in PRETRAIN_EXTRA:
        train = load_card(split_card).splits(split_task)["train"]
        subjects = sorted(int("".join(c for c in s if c.isdigit())) for s in train)
        path, note = prepare_or_reuse(
            card,
            out / f"pretrain_{card}_{task}.h5",
            data_root=args.data_root,
            task=task,
            channels=chans,
            subjects=subjects,
            overwrite=args.overwrite,
            progress=False,
        )
        print(note)
        pool_parts.append((PatchStore(path), train))
    pooled = [st.path for st, _ in pool_parts]  # each store keeps its channels; its card's train split is used
    by_corpus = {
        Path(st.path).stem: int(sum(1 for s in st.meta["subject"].astype(str) if s in set(tr))) for st, tr in pool_parts
    }
    n_pool = int(sum(min(v, args.max_pool) for v in by_corpus.values()))
    record["pool"] = {
        "paths": [str(p) for p in pooled],
        "windows": n_pool,
        "available_by_store": by_corpus,
        "seconds_prepare": time.perf_counter() - t0,
    }
    print(
        f"pretraining data: {n_pool} 4-s windows of training subjects only, every channel kept "
        f"({', '.join(f'{Path(st.path).stem} {st.sample_shape[0]} ch × {by_corpus[Path(st.path).stem]}' for st, _ in pool_parts)})"
    )

    # ---------------------------------------------------------------- budgeted pretraining
    base = dict(
        model_kwargs={"n_layers": args.n_layers},
        batch_size=args.batch_size,
        optim=dict(lr=args.lr),
        seed=args.seed,
        device="cpu",
        progress=False,
        max_windows=args.max_pool,
    )
    pre_dir = out / f"pretrain_L{args.n_layers}_b{args.budget_min:g}min"
    budget_s = args.budget_min * 60.0
    t0 = time.perf_counter()
    if (pre_dir / "last.pt").exists() and not args.overwrite:
        pt = pretrain_or_resume(
            pooled, pre_dir, PretrainConfig(**{**json.loads((pre_dir / "budget.json").read_text())["cfg"], **base})
        )
        budget = json.loads((pre_dir / "budget.json").read_text())
        print(f"reusing the pretraining in {pre_dir} (same budget)")
    else:
        probe = pretrain(
            pooled,
            out / "pretrain_probe",
            PretrainConfig(**base, epochs=1, max_steps=args.probe_steps, val_fraction=0.0),
            overwrite=True,
        )
        probe_s = time.perf_counter() - t0
        steps_per_s = probe["samples_per_s"] / args.batch_size
        n_train = int(round(n_pool * 0.9))  # approximately: the held-out subjects are 10 % of the windows
        per_epoch = max(1, math.ceil(n_train / args.batch_size))
        cap = max(1, int((budget_s - probe_s) * steps_per_s * 0.95))
        epochs = math.ceil(cap / per_epoch) + 1  # the step cap, not the epochs, ends the run
        budget = {
            "budget_s": budget_s,
            "probe_steps": args.probe_steps,
            "probe_s": probe_s,
            "steps_per_s": steps_per_s,
            "step_cap": cap,
            "cfg": {"epochs": epochs, "max_steps": cap},
        }
        print(
            f"timing probe: {args.probe_steps} steps, {steps_per_s:.2f} steps/s ({probe['samples_per_s']:.0f} windows/s)"
            f" → step cap {cap} (≈{cap / per_epoch:.2f} epochs of {per_epoch} steps) for the remaining "
            f"{(budget_s - probe_s) / 60:.1f} min"
        )
        t1 = time.perf_counter()
        pt = pretrain(pooled, pre_dir, PretrainConfig(**base, epochs=epochs, max_steps=cap), overwrite=args.overwrite)
        budget["pretrain_s"] = time.perf_counter() - t1
        # kept here too: a reused run that ended inside an epoch no longer reports its last held-out evaluation
        budget["heldout_history"] = pt.get("heldout_history")
        (pre_dir / "budget.json").write_text(json.dumps(budget, indent=2))
    budget["total_s"] = budget.get("probe_s", 0.0) + budget.get("pretrain_s", 0.0)
    history = budget.get("heldout_history") or pt.get("heldout_history") or []
    held = (history or [{}])[-1]
    pt = {**pt, "heldout_history": history}
    record["pretrain"] = {k: v for k, v in pt.items() if k != "history"}
    record["budget"] = budget
    n_held = sum(int(k) for k in re.findall(r"(\d+) windows \(", str(pt.get("heldout") or "")))
    record["pool"].update(train_windows=n_pool - n_held, heldout_windows=n_held)
    print(
        f"pretraining: {pt['steps']} steps of batch {args.batch_size} on {n_pool - n_held} training windows "
        f"({pt['steps'] * args.batch_size / max(1, n_pool - n_held):.1f} epochs; held out: {pt.get('heldout')}),"
        f" {budget['total_s'] / 60:.1f} min (probe included; budget {args.budget_min:g} min), "
        f"loss {pt['loss_first']:.4f} → {pt['loss_last']:.4f}"
    )
    if held:
        print(f"{heldout_line(held)} (input normalisation: {pt['normalize']['mode']})")
        print("\n".join(heldout_lines(held)[1:]))  # each layout's figures, when there are several

    # ---------------------------------------------------------------- no validation/test recording was pretrained on
    sources = load_checkpoint(pt["checkpoint"]).get("pretraining_sources")
    if not sources:
        raise SystemExit(f"{pt['checkpoint']}: records no pretraining sources; the overlap cannot be checked")
    overlap = {}
    for key, st in stores.items():
        _, sp = resolve_splits(PatchDataset([st.path]), complete=False)  # the split fine-tuning reads
        for split in ("val", "test"):
            found = pretraining_overlap(sources, PatchDataset([st.path], **sp[split]))
            overlap[f"{key}:{split}"] = found
            if found:
                raise SystemExit(
                    f"{key} {split} recordings were in the pretraining data: "
                    f"{', '.join(Path(o['path']).name + ':' + str(o.get('member', '')) for o in found[:5])}"
                )
    record["overlap_check"] = {"pretraining_sources": len(sources), "found": overlap}
    print(
        f"overlap check: none of the {len(sources)} pretraining recordings is a validation or test recording of "
        f"{', '.join(stores)} (by SHA-256 and member)"
    )

    # ---------------------------------------------------------------- downstream comparisons
    record["tasks"] = {}
    pngs, titles = [], []
    for key in tasks:
        card, task, _, epochs = DOWNSTREAM[key]
        cfg = FinetuneConfig(
            epochs=epochs,
            batch_size=args.batch_size,
            seed=args.seed,
            device="cpu",
            head="avgpool",
            lr_backbone=5e-4,
            lr_head=1e-3,
            progress=False,
        )
        t0 = time.perf_counter()
        cmp = compare_pretraining(
            [stores[key].path],
            out / f"compare_{key}",
            cfg,
            init=pt["checkpoint"],
            seeds=args.seeds,
            label_fractions=fractions,
            overwrite=args.overwrite,
        )
        secs = time.perf_counter() - t0
        reported = {}
        for r in cmp["runs"]:
            if r["pretrained"]:
                rep = json.loads((Path(r["dir"]) / "report.json").read_text())
                reported[r["dir"]] = rep.get("pretraining_overlap")
        bad = {d: o for d, o in reported.items() if o != []}
        if bad:
            raise SystemExit(f"{key}: fine-tuning runs report a pretraining overlap (or none checked): {bad}")
        print(
            f"\n{card}:{task or ''} (test split; {out / f'compare_{key}'}; {secs / 60:.1f} min; "
            f"pretraining_overlap [] in all {len(reported)} pretrained runs)"
        )
        for line in comparison_lines(cmp):
            print(line)
        one = sorted({(r["arm"], r["fraction"]) for r in cmp["runs"] if r.get("degenerate")})
        if one:
            print(
                "one predicted class for every test window (balanced accuracy not a result there): "
                + "; ".join(f"{a} at {float(f):.0%}" for a, f in one)
            )
        if (cmp.get("confounds") or {}).get("fired"):
            print(f"eye-movement confound: {cmp['confounds']['message']}")
        png = plot_label_efficiency(cmp, out / f"label_efficiency_{key}.png", dpi=80)
        pngs.append(png)
        titles.append(f"{card}: {task or 'rest vs arithmetic'} (test {cmp['metric']})")
        record["tasks"][key] = {
            "card": card,
            "task": task,
            "seconds": secs,
            "comparison": str(out / f"compare_{key}" / "comparison.json"),
            "pretraining_overlap_reported": len(reported),
            "png": str(png),
            "summary": cmp["summary"],
            "differences": cmp["differences"],
            "verdict": cmp["verdict"],
            "baselines": cmp["baselines"],
            "chance": cmp["chance"],
            "subsets": cmp["subsets"],
            "metric": cmp["metric"],
            "degenerate": [list(x) for x in one],
        }
    record["figure"] = str(side_by_side(pngs, out / "label_efficiency.png", titles))
    record["seconds"] = time.perf_counter() - t_start
    (out / "pretraining_value.json").write_text(json.dumps(record, indent=2, default=str))
    print(f"\ntotal {record['seconds'] / 60:.1f} min; wrote {out / 'pretraining_value.json'}, {record['figure']}")
    return record


def side_by_side(pngs: list[Path], out_png: Path, titles: list[str] | None = None) -> Path:
    """The label-efficiency PNGs of the tasks in one row (one figure for the docs), each under its task's name."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    imgs = [plt.imread(p) for p in pngs]
    h = max(i.shape[0] for i in imgs)
    fig, axes = plt.subplots(1, len(imgs), figsize=(sum(i.shape[1] for i in imgs) / 80, (h + 24) / 80), dpi=80)
    for ax, im, title in zip(axes if len(imgs) > 1 else [axes], imgs, titles or [""] * len(imgs)):
        ax.imshow(im)
        ax.set_title(title, fontsize=10)
        ax.axis("off")
    fig.subplots_adjust(0, 0, 1, 1 - 24 / (h + 24), 0, 0)
    fig.savefig(out_png, dpi=80)
    plt.close(fig)
    return out_png


if __name__ == "__main__":
    main()
