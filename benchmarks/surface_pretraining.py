"""Surface pretraining (SiT / vsMAE) on the shared real fMRI, scored on held-out frames and on another subject
against the predictors that use the same information, over seeds: the table of docs/guide/surface.md.

Prepares (or reuses) under ``--out`` the ``fsaverage5_rest`` store (``neuro prepare fsaverage5_rest --task
hemisphere``: 100 frames on fsaverage5, ico3 patches, 3-frame tubelets; its frame blocks 0-59 / 60-79 / 80-99 are
runs 01b1 / 01b2 / 01b3) and a store of another subject (the CIFTI dtseries ``sub-MSC01_test``, 5 frames on fs_LR
32k, tubelets of 3 at stride 1). For each seed it pretrains with ``neuro pretrain``'s loop on frames 0-59 (both
hemispheres, 40 tubelets; nothing held out inside them) for ``--steps`` steps at batch 8, then scores the model with
its own tube masks (3 mask seeds) on frames 60-97 and on the other subject, on the vertices no visible patch holds,
beside:

- predict-zero (the ratios' denominator) and predict-mean (the visible values of the same frame);
- the per-vertex mean of the training tubelets (each patch, vertex and frame of the tubelet);
- the mean of the visible neighbouring patches of the same frame (:class:`~neurokit.training.masked_baselines.SurfaceBaselines`);
- the frame before the tubelet (held-out frames only: it is outside the sample, so no model here can use it; it
  says how slowly the signal moves).

``--recipe reference`` pretrains the metrics-lab vsMAE recipe (1-D index positions, no attention bias, default
output initialisation, AdamW 3e-4 constant); ``neurokit`` (default) what ``neuro pretrain --model sit`` does.
Runs already in ``--out`` are reused. Prints one line per seed, then mean ± std; writes ``results.json``.

Usage::

    python benchmarks/surface_pretraining.py --data-root ../shared/data/surface --out /tmp/sp --steps 120 \\
        --seeds 0,1,2 [--recipe reference] [--n-layers 4]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch

FSA5 = "fsaverage5_rest"
MSC = "cifti/sub-MSC01_test.dtseries.nii"


def stores(root: Path, out: Path) -> tuple[Path, Path]:
    """The two stores, prepared once."""
    from neurokit.cards.recipes import SurfaceRecipe
    from neurokit.preprocessing.surface.store import SurfaceRun, write_surface_store

    out.mkdir(parents=True, exist_ok=True)
    fsa5 = out / "fsa5.h5"
    if not fsa5.exists():
        cmd = ["neuro", "prepare", FSA5, "--task", "hemisphere", "--data-root", str(root / FSA5), "-o", str(fsa5)]
        subprocess.run(cmd, check=True)
    msc = out / "msc_ico3.h5"
    if not msc.exists():
        spheres = {h: root / f"hcp_fs_LR32k/S1200.{h}.sphere.32k_fs_LR.surf.gii" for h in "LR"}
        write_surface_store(
            msc, [SurfaceRun(root / MSC, "MSC01", "test", "1")], SurfaceRecipe(grid="ico3", tubelet=3, stride=1),
            spheres=spheres,
        )  # fmt: skip
    return fsa5, msc


class Extra:
    """Baselines of this benchmark only, on the scored values of each batch in loader order: the training
    tubelets' per-vertex mean (``train_mean``) and the frame before each tubelet (``prev``, when given)."""

    def __init__(self, train_mean: torch.Tensor, prev: list[torch.Tensor] | None, base) -> None:
        self.train_mean, self.prev, self.base, self.i = train_mean.double(), prev, base, 0

    def masked_sse(self, t, mask, scored):
        from neurokit.training.masked_baselines import masked_sse_of

        preds = {"train_mean": self.train_mean[None].expand_as(t)}
        if self.prev is not None:
            p = torch.stack(self.prev[self.i : self.i + len(t)]).double()  # (B, V-layout of one frame)
            preds["prev_frame"] = p[:, None].expand_as(t)
        self.i += len(t)
        return {**self.base.masked_sse(t, mask, scored), **masked_sse_of(t, mask, scored, preds)}


def score(model, ds, train_mean, prev, mask_seeds=(0, 1, 2)) -> dict:
    """Held-out figures averaged over mask seeds, as ratios to predict-zero."""
    from neurokit.training.masked_baselines import SurfaceBaselines
    from neurokit.training.objectives import heldout_masked_loss, vsmae_masked

    base = SurfaceBaselines.for_shape(ds.sample_shape)
    per = []
    for s in mask_seeds:
        loader = torch.utils.data.DataLoader(ds, batch_size=8, shuffle=False)
        r = heldout_masked_loss(model, loader, seed=s, baselines=Extra(train_mean, prev, base), predict=vsmae_masked)
        z = r["heldout_zero"]
        per.append(
            {
                "model": r["heldout_loss"] / z,
                "mean": r["heldout_mean"] / z,
                "train_mean": r["heldout_train_mean"] / z,
                "neighbours": r["heldout_neighbours"] / r.get("heldout_neighbours_zero", z),
                **({"prev_frame": r["heldout_prev_frame"] / r.get("heldout_prev_frame_zero", z)} if prev else {}),
                "zero": z,
            }
        )
    return {k: float(np.mean([p[k] for p in per])) for k in per[0]}


def prev_frames(store: Path, ds) -> list[torch.Tensor]:
    """The frame before each sample of ``ds`` (store order), in patch layout ``(N, V)``."""
    import h5py

    with h5py.File(store, "r") as f:
        frames, starts, table = f["frames"], f["sample_start"][:], f["patch_index"][:]
        rows = ds.index[:, 1]
        return [torch.from_numpy(np.asarray(frames[int(starts[r]) - 1])[table]) for r in rows]


def run_seed(
    fsa5: Path, msc: Path, out: Path, recipe: str, steps: int, seed: int, n_layers: int | None, optim: dict
) -> dict:
    import neurokit.pipelines.pretrain as P
    from neurokit.data.dataset import PatchDataset
    from neurokit.models.vsmae import VSMAE

    tag = "".join(f"_{k}{v:g}" for k, v in sorted(optim.items()))
    run = out / f"{recipe}_L{n_layers or 12}_s{seed}_n{steps}{tag}"
    if recipe == "reference":
        optim = {"lr": 3e-4, "schedule": "constant", "warmup_steps": 0, **optim}
    cfg = P.PretrainConfig(
        model="sit",
        model_kwargs={"recipe": recipe, **({"n_layers": n_layers} if n_layers else {})},
        epochs=10_000,
        max_steps=steps,
        batch_size=8,
        optim=optim,
        seed=seed,
        split="train",  # the card's frame block 0-59 (run 01b1)
        val_fraction=0.0,  # scored below on frames 60-97 instead
        progress=False,
        device="cpu",
    )
    t0, c0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
    res = P.pretrain_or_resume([fsa5], run, cfg)
    c1 = resource.getrusage(resource.RUSAGE_SELF)
    model = VSMAE.from_pretrained(run / "last.pt")
    train = PatchDataset(fsa5, runs=["01b1"])
    train_mean = torch.stack([train[i][0] for i in range(len(train))]).mean(0)
    held = PatchDataset(fsa5, runs=["01b2", "01b3"])
    other = PatchDataset(msc)
    return {
        "seed": seed,
        "steps": res["steps"],
        "cpu_min": (c1.ru_utime + c1.ru_stime - c0.ru_utime - c0.ru_stime) / 60,
        "wall_min": (time.perf_counter() - t0) / 60,
        "loss_first": res["loss_first"],
        "loss_last": res["loss_last"],
        "frames_60_97": score(model, held, train_mean, prev_frames(fsa5, held)),
        "other_subject": score(model, other, train_mean, None),
    }


def line(name: str, r: dict) -> str:
    keys = ["model", "mean", "train_mean", "neighbours", "prev_frame"]
    return f"{name:>14}: " + " · ".join(f"{k} {r[k]:.3f}" for k in keys if k in r) + f" (predict-zero {r['zero']:.3f})"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-root", type=Path, default=Path("../shared/data/surface"))
    ap.add_argument("--out", type=Path, default=Path("runs/surface_pretraining"))
    ap.add_argument("--steps", type=int, default=120)
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--recipe", default="neurokit", choices=["neurokit", "reference"])
    ap.add_argument("--n-layers", type=int, default=None, help="encoder depth (default SiT-tiny's 12)")
    ap.add_argument("--lr", type=float, default=None, help="learning rate (default: neuro pretrain's)")
    ap.add_argument("--warmup-steps", type=int, default=None, help="linear warm-up steps (default: neuro pretrain's)")
    a = ap.parse_args(argv)
    torch.set_num_threads(max(1, torch.get_num_threads()))
    fsa5, msc = stores(a.data_root, a.out)
    results = []
    for seed in (int(s) for s in a.seeds.split(",")):
        optim = {k: v for k, v in (("lr", a.lr), ("warmup_steps", a.warmup_steps)) if v is not None}
        r = run_seed(fsa5, msc, a.out, a.recipe, a.steps, seed, a.n_layers, optim)
        results.append(r)
        print(f"seed {seed}: {r['steps']} steps, {r['cpu_min']:.1f} CPU-min ({r['wall_min']:.1f} min wall), "
              f"training loss {r['loss_first']:.3f} → {r['loss_last']:.3f}", flush=True)  # fmt: skip
        for part in ("frames_60_97", "other_subject"):
            print(line(part, r[part]), flush=True)
    print(f"held-out masked MSE ÷ predict-zero, mean ± std over {len(results)} seed(s), recipe {a.recipe}:")
    for part in ("frames_60_97", "other_subject"):
        keys = [k for k in results[0][part] if k != "zero"]
        cells = [f"{k} {np.mean([r[part][k] for r in results]):.3f} ± {np.std([r[part][k] for r in results]):.3f}"
                 for k in keys]  # fmt: skip
        print(f"{part:>14}: " + " · ".join(cells))
    (a.out / f"results_{a.recipe}.json").write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
