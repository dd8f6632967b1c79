"""Stimulus retrieval on simulated movie fMRI: simulate → neuro prepare → embed-stimuli → pretrain --model clip →
retrieve, on unseen subjects, with the shuffled-stimulus control.

    python benchmarks/retrieval_simulation.py --seed 0 --subjects 6 --out runs/retrieval_sim

The last line printed is one JSON object: ``top1``, ``top5``, ``top10`` (video, unseen subjects, mean over
subject × run × hemisphere, in %), ``chance_top5`` and the shuffled control's ``shuffled_top5`` under the
release's protocol (negatives from the run's other clips), and the same under the harder same-run negatives
(``same_run``); the full reports are in ``OUT/retrieval.json``, ``OUT/retrieval_same_run.json`` and
``OUT/retrieval_shuffled.json``. The last two subjects are the unseen test subjects; every step goes through
the same functions as the ``neuro`` commands.

``--train-fmri-encoder`` trains the SiT with the heads (neurokit's option); by default it stays frozen as in the
released config, so only the heads learn (the simulation has no vsMAE weights to start the SiT from).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--subjects", type=int, default=6, help="simulated subjects; the last 2 are held out")
    ap.add_argument("--out", type=Path, default=Path("runs/retrieval_sim"))
    ap.add_argument("--snr", type=float, default=None, help="signal/noise variance ratio (default: the simulation's)")
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--hemi", default="L", help="L, R or both")
    ap.add_argument(
        "--train-fmri-encoder", action="store_true", help="train the SiT too (default: frozen, as the release)"
    )
    ap.add_argument(
        "--surface-dir",
        type=Path,
        default=Path(os.environ.get("NEUROKIT_SHARED", ROOT.parent / "shared")) / "data/surface/hcp_fs_LR32k",
    )
    args = ap.parse_args(argv)
    res = run(
        args.out,
        args.surface_dir,
        seed=args.seed,
        n_subjects=args.subjects,
        snr=args.snr,
        epochs=args.epochs,
        hemi=None if args.hemi == "both" else args.hemi,
        train_fmri_encoder=args.train_fmri_encoder,
    )
    print(json.dumps(res))
    return res


def run(
    out: Path,
    surface_dir: Path,
    *,
    seed: int = 0,
    n_subjects: int = 6,
    snr: float | None = None,
    epochs: int = 10,
    hemi: str | None = "L",
    n_test: int = 2,
    progress: bool = False,
    train_fmri_encoder: bool = False,
) -> dict:
    """The whole simulation → retrieval path; returns the summary (fractions in %)."""
    from neurokit.pipelines.prepare import prepare
    from neurokit.training.config import PretrainConfig
    from neurokit.pipelines.pretrain import pretrain
    from neurokit.pipelines.retrieval import retrieve
    from neurokit.simulate import FMRISimulation, simulate_movie_dataset
    from neurokit.stimuli import StimulusEncoders, StimulusWindows, embed_stimuli

    if n_subjects <= n_test:
        raise SystemExit(f"--subjects must exceed the {n_test} held-out subjects")
    t0 = time.perf_counter()
    out = Path(out)
    sim_dir = out / "data"
    cfg = FMRISimulation(n_subjects=n_subjects, seed=seed, **({} if snr is None else {"snr": snr}))
    sim = simulate_movie_dataset(sim_dir, surface_dir, cfg, progress=progress)
    store = prepare(
        "simulated_movie",
        out / "fmri.h5",
        data_root=sim_dir,
        overwrite=True,
        progress=False,
        **({"hemi": hemi} if hemi else {}),
    )
    stim = embed_stimuli(
        sim["movie"],
        out / "stimuli.h5",
        encoders=StimulusEncoders(video="tiny", audio="tiny"),
        windows=StimulusWindows(clips=json.loads(Path(sim["clips"]).read_text())),
        overwrite=True,
        progress=progress,
    )
    subjects = [f"sim{i + 1:02d}" for i in range(n_subjects)]
    train, test = subjects[:-n_test], subjects[-n_test:]
    res = pretrain(
        [store],
        out / "clip",
        PretrainConfig(
            model="clip",
            model_kwargs={"stimuli": [str(stim)], **CLIP_SMALL, "train_fmri_encoder": train_fmri_encoder},
            epochs=epochs,
            batch_size=32,
            optim={"lr": 2e-3, "min_lr": 1e-5, "weight_decay": 0.05},
            seed=seed,
            device="cpu",
            subjects=train,
            progress=progress,
        ),
        overwrite=True,
    )
    rep = retrieve(
        res["checkpoint"], [store], [stim], subjects=test, seed=seed, device="cpu", out=out / "retrieval.json"
    )
    hard = retrieve(
        res["checkpoint"],
        [store],
        [stim],
        subjects=test,
        seed=seed,
        device="cpu",
        negatives_from="same_run",
        out=out / "retrieval_same_run.json",
    )
    ctl = retrieve(
        res["checkpoint"],
        [store],
        [stim],
        subjects=test,
        seed=seed,
        device="cpu",
        shuffle=True,
        out=out / "retrieval_shuffled.json",
    )
    pct = lambda v: round(100 * v, 1)  # noqa: E731
    return {
        "seed": seed,
        "subjects": n_subjects,
        "test_subjects": test,
        "snr": cfg.snr,
        "hemi": hemi or "L+R",
        "top1": pct(rep["video"]["top1"]["mean"]),
        "top5": pct(rep["video"]["top5"]["mean"]),
        "top10": pct(rep["video"]["top10"]["mean"]),
        "chance_top1": pct(rep["chance"]["top1"]),
        "chance_top5": pct(rep["chance"]["top5"]),
        "chance_top10": pct(rep["chance"]["top10"]),
        "audio_top5": pct(rep["audio"]["top5"]["mean"]),
        "shuffled_top5": pct(ctl["video"]["top5"]["mean"]),
        "same_run": {
            "top1": pct(hard["video"]["top1"]["mean"]),
            "top5": pct(hard["video"]["top5"]["mean"]),
            "top10": pct(hard["video"]["top10"]["mean"]),
            "audio_top5": pct(hard["audio"]["top5"]["mean"]),
        },
        "train_fmri_encoder": train_fmri_encoder,
        "n_queries": rep["n_queries"],
        "loss_first": round(res["loss_first"], 3),
        "loss_last": round(res["loss_last"], 3),
        "seconds": round(time.perf_counter() - t0, 1),
    }


#: the small fMRI encoder of the simulation (a 1-layer, 64-wide SiT, CPU-sized; the paper's is SiT-tiny, 12 layers)
CLIP_SMALL = {"dim": 64, "heads": 2, "n_layers": 1}


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
