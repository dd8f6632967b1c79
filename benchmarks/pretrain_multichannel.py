"""Multi-channel CBraMod pretraining on held-out EEGMMIDB subjects, against the four masked-patch baselines, over seeds
and recipe variants; the held-out loss curve as a figure.

Prepares (or reuses) the 64-channel EEGMMIDB left/right-imagery store of subjects 1-10 under ``--out``, pretrains a
2-layer CBraMod with ``neuro pretrain``'s loop on S001-S006 (270 windows of 64 × 4 × 200) for ``--steps`` steps per
variant and seed, holding out S007-S010 (180 windows), and prints per run the held-out masked loss beside
predict-zero, predict-mean, the spatial ridge and the temporal ridge
(:class:`neurokit.training.masked_baselines.MaskedBaselines`), as ratios to predict-zero, with wall and CPU minutes.
A variant is ``name:key=value,key=value`` over ``normalize``, ``zero_head`` (0/1), ``schedule``, ``lr``,
``weight_decay``, ``batch``; ``default`` is neuro pretrain's defaults. Runs already in ``--out`` are reused.
Figures and the table of recipe differences: docs/guide/pretraining.md.

Usage::

    python benchmarks/pretrain_multichannel.py --data-root ../shared/data/eeg --out /tmp/mc --steps 64 \\
        --seeds 0,1,2 [--variants default "old:normalize=corpus,zero_head=0"] [--plot docs/images/x.png]
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from pathlib import Path

import torch

HELD_OUT = ["S007", "S008", "S009", "S010"]


def parse_variant(text: str) -> tuple[str, dict[str, str]]:
    name, _, rest = text.partition(":")
    return name, dict(kv.split("=", 1) for kv in rest.split(",") if kv)


def run_one(store: Path, out: Path, steps: int, seed: int, opts: dict[str, str]) -> dict:
    import neurokit.pipelines.pretrain as P

    optim: dict = {k: float(opts[k]) for k in ("lr", "weight_decay") if k in opts}
    if "schedule" in opts:
        optim["schedule"] = opts["schedule"]
    P.ZERO_INIT_HEAD = opts.get("zero_head", "1") == "1"
    cfg = P.PretrainConfig(
        model_kwargs={"n_layers": 2},
        epochs=10_000,
        max_steps=steps,
        batch_size=int(opts.get("batch", 32)),
        optim=optim,
        seed=seed,
        split=None,
        heldout_subjects=HELD_OUT,
        progress=False,
        device="cpu",
        **({"normalize": opts["normalize"]} if "normalize" in opts else {}),
    )
    t0, c0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
    res = P.pretrain_or_resume([store], out, cfg)
    c1 = resource.getrusage(resource.RUSAGE_SELF)
    P.ZERO_INIT_HEAD = True
    cpu = (c1.ru_utime - c0.ru_utime) + (c1.ru_stime - c0.ru_stime)
    return {"wall_min": (time.perf_counter() - t0) / 60, "cpu_min": cpu / 60, **res}


def ratios(h: dict) -> dict[str, float]:
    z = h["heldout_zero"]
    return {k.replace("heldout_", ""): h[k] / z for k in h if k.startswith("heldout_") and k != "heldout_zero"}


def plot(runs: dict, path: Path, per_epoch: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    base = None
    for i, (name, seeds) in enumerate(runs.items()):
        for j, res in enumerate(seeds):
            hist = res["heldout_history"]
            x = [h["epoch"] * per_epoch for h in hist]
            y = [h["heldout_loss"] / h["heldout_zero"] for h in hist]
            ax.plot(x, y, color=colours[i % len(colours)], alpha=0.8, label=name if j == 0 else None)
            base = base or hist[-1]
    assert base is not None
    styles = {"zero": ":", "mean": "-.", "spatial": "--", "temporal": (0, (1, 3))}
    for k, r in ratios(base).items():
        if k in styles:
            ax.axhline(r, color="grey", linestyle=styles[k], label=f"{k} baseline ({r:.2f}; first run's)")
    ax.axhline(1.0, color="black", linestyle=":", label="predict-zero (1)")
    ax.set_xlabel("optimiser step (batch 32)")
    ax.set_ylabel("held-out masked loss / predict-zero")
    ax.set_title("CBraMod, 2 layers, EEGMMIDB 64 ch: held out S007-S010")
    ax.set_ylim(0.4, 1.6)
    ax.legend(fontsize=6, loc="lower left", ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-root", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--steps", type=int, default=64)
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--variants", nargs="*", default=["default"])
    ap.add_argument("--plot", type=Path, default=None)
    args = ap.parse_args()
    torch.set_num_threads(1)
    from neurokit.pipelines.prepare import prepare_or_reuse

    args.out.mkdir(parents=True, exist_ok=True)
    store, note = prepare_or_reuse(
        "physionet_mi",
        args.out / "mi64.h5",
        data_root=args.data_root,
        task="left_right_imagery",
        subjects=list(range(1, 11)),
    )
    print(note)
    runs: dict[str, list[dict]] = {}
    for v in args.variants:
        name, opts = parse_variant(v)
        for seed in [int(s) for s in args.seeds.split(",")]:
            res = run_one(store, args.out / f"{name}_s{seed}", args.steps, seed, opts)
            runs.setdefault(name, []).append(res)
            r = ratios(res["heldout_history"][-1])
            print(
                json.dumps(
                    {
                        "variant": name,
                        "seed": seed,
                        "steps": res["steps"],
                        "wall_min": round(res["wall_min"], 2),
                        "cpu_min": round(res["cpu_min"], 2),
                        "loss_first": round(res["loss_first"], 4),
                        "heldout_zero": round(res["heldout_history"][-1]["heldout_zero"], 4),
                        **{k: round(x, 3) for k, x in r.items()},
                    }
                ),
                flush=True,
            )
    if args.plot:
        plot(runs, args.plot, per_epoch=270 // 32)
        print(f"figure: {args.plot}")


if __name__ == "__main__":
    main()
