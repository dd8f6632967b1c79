"""Compute curve of masked pretraining against the baselines that see the same inputs (issue 46, item 3): the
held-out masked loss at several step budgets, 3 seeds each, beside every baseline of the run's held-out record.

``--modality eeg``: a 2-layer CBraMod (``neuro pretrain``'s loop, batch 32) on the 64-channel EEGMMIDB
left/right-imagery store of S001-S010 (prepared under ``--out`` as ``benchmarks/pretrain_multichannel.py`` does),
trained on S001-S006 and scored on whole held-out subjects S007-S010.

``--modality surface``: SiT-tiny / vsMAE (``neuro pretrain --model sit``'s defaults, batch 8) on the shared
fsaverage5 resting run (``neuro prepare fsaverage5_rest --task hemisphere``), scored on the pipeline's own held-out
frame block (``--split``, ``--val-fraction``), and, with the same weights and the same baselines, on another
subject (the CIFTI dtseries ``sub-MSC01_test``: 5 frames on fs_LR 32k, tubelets of 3 at stride 1).

How a budget is run. Each seed trains **once**, to the largest budget, with a learning rate that does not depend on
the run's length (``--schedule constant``, the default here; warm-up, if any, a fixed number of steps): the weights
after ``b`` steps are then exactly those of a run of ``b`` steps (data order and masks depend on the seed and the
step only; held-out scoring uses its own generator and changes no state). The pipeline scores the held-out data
after every epoch; this script keeps the model's weights and the process's CPU time at each of those scorings and
reads the budgets (multiples of an epoch's steps) from them. ``--schedule cosine`` instead trains one run per
budget (the cosine spans the run), at the sum of the budgets' cost.

Figures. Every held-out figure is a ratio to predict-zero on the values it predicts, as the run's summary reports
them (:func:`neurokit.evaluation.masked.masked_verdict`); every baseline the held-out record holds
(:data:`neurokit.evaluation.masked.BASELINE_NAMES`) is read, whatever this version of neurokit computes. The
baselines do not depend on the model: they are drawn as horizontal lines (mean over seeds). ``--rescore`` scores
the saved weights again with the installed code (new baselines, a new held-out set) instead of reading the run's
history (the saved weights at each budget, else, for the baselines only, the latest saved weights: they do not
depend on the model). CPU-minutes are the run's process CPU time (``torch`` on one thread) from the start of the run
to the budget, the baselines' fit and the earlier held-out scorings included (``train_cpu_min`` in the JSON leaves
them out); runs read with ``--collect`` that have no ``cpu.jsonl`` take it from ``--cpu-samples`` (``/proc`` samples
fitted linearly in steps). A run stopped early keeps every budget it reached (``--collect``; ``--run-steps``: the steps
it was asked for).

Output: a table (budget, steps, CPU-min, model mean ± sd over seeds, each baseline, the best, model / best), a
statement of where the model crosses the best baseline or, extrapolating the model's ratio linearly in log-steps
over the last three budgets, where it would; ``--json`` (raw results) and ``--plot`` (held-out ratio against steps
and against CPU-minutes).

Usage::

    nice -n 5 python benchmarks/pretrain_curve.py --modality eeg --data-root ../shared/data/eeg --out /tmp/curve/eeg \\
        --budgets 8,16,32,64,128 --seeds 0,1,2 --rescore --json benchmarks/results/pretrain_curve_eeg.json \\
        --plot docs/images/pretrain_curve_eeg.png
    nice -n 5 python benchmarks/pretrain_curve.py --modality surface --data-root ../shared/data/surface \\
        --out /tmp/curve/surface --budgets 6,12,24,48 --seeds 0,1,2 --split all \\
        --json benchmarks/results/pretrain_curve_surface.json --plot docs/images/pretrain_curve_surface.png
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import torch

EEG_HELD_OUT = ["S007", "S008", "S009", "S010"]
FSA5 = "fsaverage5_rest"
MSC = "cifti/sub-MSC01_test.dtseries.nii"
#: held-out record keys that are not baselines
NOT_BASELINES = {"loss", "zero", "n", "layouts"}


# --------------------------------------------------------------------------------------------------- data
def eeg_store(root: Path, out: Path) -> Path:
    """The 64-channel EEGMMIDB left/right-imagery store of S001-S010 (prepared once)."""
    from neurokit.pipelines.prepare import prepare_or_reuse

    store, note = prepare_or_reuse(
        "physionet_mi", out / "mi64.h5", data_root=root, task="left_right_imagery", subjects=list(range(1, 11))
    )
    print(note, flush=True)
    return Path(store)


def surface_stores(root: Path, out: Path) -> tuple[Path, Path]:
    """The fsaverage5 run's store and another subject's (fs_LR 32k CIFTI, 5 frames), prepared once."""
    from neurokit.cards.recipes import SurfaceRecipe
    from neurokit.preprocessing.surface.store import SurfaceRun, write_surface_store

    fsa5 = out / "fsa5.h5"
    if not fsa5.exists():
        cmd = [sys.executable, "-m", "neurokit", "prepare", FSA5, "--task", "hemisphere"]
        subprocess.run([*cmd, "--data-root", str(root / FSA5), "-o", str(fsa5)], check=True)
    msc = out / "msc_ico3.h5"
    if not msc.exists():
        spheres = {h: root / f"hcp_fs_LR32k/S1200.{h}.sphere.32k_fs_LR.surf.gii" for h in "LR"}
        run = SurfaceRun(root / MSC, "MSC01", "test", "1")
        write_surface_store(msc, [run], SurfaceRecipe(grid="ico3", tubelet=3, stride=1), spheres=spheres)
    return fsa5, msc


# --------------------------------------------------------------------------------------------------- figures
def ratios(h: dict[str, Any]) -> dict[str, float]:
    """The model's and every baseline's ratio to predict-zero on the values each predicts (``model``, then the
    baselines by their key suffix), from one held-out record."""
    from neurokit.evaluation.masked import BASELINE_NAMES

    zero = h["heldout_zero"]
    out = {"model": h["heldout_loss"] / zero}
    for k in BASELINE_NAMES:
        if k != "zero" and h.get(f"heldout_{k}") is not None:
            out[k] = h[f"heldout_{k}"] / h.get(f"heldout_{k}_zero", zero)
    return out


def verdict(h: dict[str, Any]) -> dict[str, Any]:
    from neurokit.evaluation.masked import masked_verdict

    v = masked_verdict(h)
    return {k: v[k] for k in ("best_baseline", "best_baseline_ratio", "beats_best_baseline", "says")}


# --------------------------------------------------------------------------------------------------- runs
class Probe:
    """Writes, at every held-out scoring the pipeline makes, the model's weights (``run/eval_{i}.pt``) and a line of
    ``run/cpu.jsonl``: the process's CPU seconds since ``c0`` at the start of the scoring, and those spent in
    training alone (the baselines' fit and earlier scorings left out). Written as the run goes, so a run stopped
    early keeps what it reached."""

    def __init__(self, run: Path, c0: float) -> None:
        self.run, self.c0, self.i, self.fit_end, self.scoring = run, c0, 0, c0, 0.0

    def __enter__(self) -> Probe:
        import neurokit.pipelines.pretrain as P

        self._orig = (P.heldout_masked_loss, P.fit_masked_baselines)
        orig_h, orig_f = self._orig

        def heldout(model, loader, **kw):
            t0 = time.process_time()
            r = orig_h(model, loader, **kw)
            torch.save(model.state_dict(), self.run / f"eval_{self.i}.pt")
            line = {"i": self.i, "cpu_s": t0 - self.c0, "train_cpu_s": t0 - self.fit_end - self.scoring}
            with (self.run / "cpu.jsonl").open("a") as fh:
                fh.write(json.dumps(line) + "\n")
            self.i += 1
            self.scoring += time.process_time() - t0
            return r

        def fit(*a, **kw):
            r = orig_f(*a, **kw)
            self.fit_end = time.process_time()
            return r

        P.heldout_masked_loss, P.fit_masked_baselines = heldout, fit
        return self

    def __exit__(self, *exc) -> None:
        import neurokit.pipelines.pretrain as P

        P.heldout_masked_loss, P.fit_masked_baselines = self._orig


def sampled_cpu(samples: Path | None, run: Path) -> tuple[float, float] | None:
    """CPU seconds at step 0 and per step of a run, fitted (least squares) to ``samples``: lines ``unix-time pid
    cpu-ticks(1/100 s) last-step run-folder`` taken every few seconds from ``/proc`` while the run went (for runs
    started before :class:`Probe` wrote ``cpu.jsonl``)."""
    if samples is None or not samples.exists():
        return None
    pts = [(int(w[3]), int(w[2]) / 100) for w in (ln.split() for ln in samples.read_text().splitlines())
           if len(w) == 5 and Path(w[4]) == run and int(w[3]) > 0]  # fmt: skip
    first: dict[int, float] = {}
    for step, sec in pts:  # the first sample at each step: later ones at the same step include its scoring
        first.setdefault(step, sec)
    pts = sorted(first.items())
    if len(pts) < 2:
        return None
    per_step, at0 = np.polyfit([p[0] for p in pts], [p[1] for p in pts], 1)
    return float(at0), float(per_step)


def config(a: argparse.Namespace, seed: int, steps: int):
    from neurokit.training.config import PretrainConfig

    optim: dict[str, Any] = {"schedule": a.schedule}
    for k in ("lr", "warmup_steps"):
        if getattr(a, k) is not None:
            optim[k] = getattr(a, k)
    kw: dict[str, Any] = dict(model_kwargs=dict(a.model_kwargs))
    if a.modality == "eeg":
        kw.update(model="cbramod", batch_size=32, split=None, heldout_subjects=EEG_HELD_OUT)
    else:
        kw.update(model="sit", batch_size=8, split=a.split, val_fraction=a.val_fraction)
    return PretrainConfig(**kw, epochs=100_000, max_steps=steps, optim=optim, seed=seed, progress=False, device="cpu")


def train(a: argparse.Namespace, store: Path, seed: int, steps: int, run: Path) -> dict:
    """One pretraining run of ``steps`` steps (reused when ``run`` holds it, or, with ``--collect``, what a run
    stopped early reached): its held-out history, with the CPU time and the weights file at each scoring."""
    import neurokit.pipelines.pretrain as P

    rec_path = run / "curve_run.json"
    if rec_path.exists():
        return json.loads(rec_path.read_text())
    cfg = config(a, seed, steps)
    if not (a.collect and (run / "metrics.jsonl").exists()):
        c0 = time.process_time()
        with Probe(run, c0):
            P.pretrain(store, run, cfg, overwrite=True)
    return collect(a, run, seed, steps, cfg)


def collect(a: argparse.Namespace, run: Path, seed: int, steps: int, cfg) -> dict:
    """The record of a run from its folder: ``metrics.jsonl`` (held-out history, steps), ``cpu.jsonl`` and
    ``eval_{i}.pt`` (:class:`Probe`), else CPU times fitted to ``--cpu-samples`` and the weights of ``last.pt``."""
    from neurokit.evaluation.masked import heldout_history

    lines = [json.loads(ln) for ln in (run / "metrics.jsonl").read_text().splitlines() if ln.strip()]
    per_epoch = sum(1 for r in lines if "step" in r and r.get("epoch") == 0 and "heldout_loss" not in r)
    done = max((r["step"] for r in lines if "step" in r and "heldout_loss" not in r), default=0)
    hist = heldout_history(lines)
    cpu = (
        [json.loads(ln) for ln in (run / "cpu.jsonl").read_text().splitlines()] if (run / "cpu.jsonl").exists() else []
    )
    fitted = sampled_cpu(a.cpu_samples, run)
    last = None
    if (run / "last.pt").exists() and not (run / "cpu.jsonl").exists():  # a run without eval_{i}.pt files
        ck = torch.load(run / "last.pt", map_location="cpu", weights_only=False)
        last = int(ck["step"])
        if not (run / f"last_{last}.pt").exists():
            torch.save(ck["state_dict"], run / f"last_{last}.pt")
    points = []
    for i, h in enumerate(hist):
        step = int(h.get("at_step") or round(h["epoch"] * per_epoch))
        p: dict[str, Any] = {"step": step, "heldout": h}
        if i < len(cpu):
            p.update(cpu_min=cpu[i]["cpu_s"] / 60, train_cpu_min=cpu[i]["train_cpu_s"] / 60, cpu_from="process_time")
        elif fitted is not None:
            p.update(cpu_min=(fitted[0] + fitted[1] * step) / 60, cpu_from="/proc samples, fitted")
        if (run / f"eval_{i}.pt").exists():
            p["weights"] = str(run / f"eval_{i}.pt")
        elif step == last:
            p["weights"] = str(run / f"last_{last}.pt")
        points.append(p)
    out = {
        "seed": seed,
        "steps_asked": steps,
        "steps_done": done,
        "per_epoch": per_epoch,
        "heldout_phrase": (
            json.loads((run / "pretrain_summary.json").read_text())["heldout"]
            if (run / "pretrain_summary.json").exists()
            else None
        ),  # fmt: skip
        "cpu_min_per_step_fitted": None if fitted is None else fitted[1] / 60,
        "points": points,
        "config": {"optim": vars(cfg.optim), "model_kwargs": cfg.model_kwargs, "batch_size": cfg.batch_size},
    }
    if done >= steps:
        rec_path = run / "curve_run.json"
        rec_path.write_text(json.dumps(out, indent=1, default=str))
    return out


def rescore(a: argparse.Namespace, store: Path, seed: int, weights: Path, other: Path | None) -> dict[str, Any]:
    """The held-out figures of saved weights computed again with the installed code, as ``neuro pretrain`` computes
    them (its split, normalisation, baselines, masks and scored values), and on ``other`` (another subject's store)
    with the same baselines, fitted on the same training samples."""
    cache = weights.with_name(weights.stem + ("_scored_other.json" if other is not None else "_scored.json"))
    if cache.exists():  # scored before (by this script, e.g. in a process per seed)
        return json.loads(cache.read_text())
    out = _rescore(a, store, seed, weights, other)
    cache.write_text(json.dumps(out, default=str))
    return out


def _rescore(a: argparse.Namespace, store: Path, seed: int, weights: Path, other: Path | None) -> dict[str, Any]:
    from neurokit.data.corpus import ScaledDataset, heldout_scales
    from neurokit.data.dataset import PatchDataset
    from neurokit.data.selection import layout_name, select_layouts, split_heldout
    from neurokit.training import masked_baselines as mb
    from neurokit.training.objectives import get_objective, heldout_masked_loss

    key = (str(store), seed, str(other))
    if key in _SCORERS:  # the split and the fitted baselines of this seed, kept: only the weights change
        model, fn_score = _SCORERS[key]
        model.load_state_dict(torch.load(weights, weights_only=True))
        return fn_score()
    cfg = config(a, seed, 1)
    objective = get_objective(cfg.model)
    ds_sel, _ = select_layouts([store], split=cfg.split, subjects=cfg.subjects, max_windows=cfg.max_windows,
                               seed=cfg.seed)[0]  # fmt: skip
    hold = split_heldout(ds_sel, cfg.val_fraction, cfg.seed, subjects=cfg.heldout_subjects)
    tr, held = hold.train, hold.held
    assert held is not None
    kw = {**cfg.model_kwargs, **({"input_norm": cfg.normalize} if cfg.normalize != "none" else {})}
    model = objective.build(tr.attrs, tr.sample_shape, kw)
    model.load_state_dict(torch.load(weights, weights_only=True))
    train_ds: Any = tr
    val_ds: Any = held
    if cfg.normalize == "corpus":
        sc = heldout_scales(tr, held)
        train_ds, val_ds = ScaledDataset(tr, sc), ScaledDataset(held, sc)
    bs = min(cfg.batch_size, len(tr))
    fitted = mb.fit_masked_baselines(model, [train_ds], seed=cfg.seed, batch_size=bs, predict=objective.masked)
    sets = {"heldout": (held, val_ds)}
    if other is not None:
        o = PatchDataset(other)
        sets["other_subject"] = (o, o)
    scorings = []
    for name, (h, ds) in sets.items():
        parts = [(tr, h, "")]
        source = mb.heldout_source_scoring(parts)
        fn = None
        if isinstance(source, mb.HeldoutSourceScoring):
            ds = mb.heldout_tagged([ds], parts, source)[0]
            fn = source.rescore
        loader = {layout_name(tr): torch.utils.data.DataLoader(ds, batch_size=bs, shuffle=False)}
        scorings.append((name, source, loader, fn))

    def score() -> dict[str, Any]:
        out: dict[str, Any] = {"phrase": hold.phrase}
        for name, source, loader, fn in scorings:
            if isinstance(source, mb.HeldoutSourceScoring):
                source.kept = source.seen = 0.0
            res = heldout_masked_loss(
                model, loader, seed=cfg.seed, baselines=fitted, predict=objective.masked, rescore=fn
            )
            scoring = source.phrase() if isinstance(source, mb.HeldoutSourceScoring) else source
            out[name] = {**res, **({"heldout_scoring": scoring} if scoring else {})}
        return out

    _SCORERS[key] = (model, score)
    return score()


#: rescore's split, fitted baselines and loaders, per (store, seed, other store)
_SCORERS: dict[tuple, tuple] = {}


# --------------------------------------------------------------------------------------------------- summary
def summarise(results: list[dict], budgets: list[int], part: str) -> list[dict]:
    """Per budget: steps, CPU-min, the model's and each baseline's ratio (mean, sd over seeds), the best baseline."""
    rows = []
    for b in budgets:
        per = [r["budgets"][str(b)] for r in results if str(b) in r["budgets"]]
        if not per or part not in per[0]:
            continue
        keys = list(per[0][part]["ratios"])
        row: dict[str, Any] = {"budget": b, "seeds": len(per), "cpu_min": float(np.mean([p["cpu_min"] for p in per]))}
        for k in keys:
            vals = [p[part]["ratios"][k] for p in per if k in p[part]["ratios"]]
            row[k] = (float(np.mean(vals)), float(np.std(vals)))
        base = {k: row[k][0] for k in keys if k != "model"}
        best = min(base, key=lambda k: base[k])
        row["best"] = best
        row["model_over_best"] = row["model"][0] / base[best]
        row["model_over_best_per_seed"] = [p[part]["ratios"]["model"] / p[part]["ratios"][best] for p in per]
        rows.append(row)
    return rows


def crossing(rows: list[dict], fit_last: int = 3) -> dict[str, Any]:
    """Where the model's mean ratio crosses the best baseline's: measured (between two budgets, interpolated in
    log-steps), or extrapolated from a straight line in log-steps through the last ``fit_last`` budgets."""
    steps = np.array([r["budget"] for r in rows], float)
    model = np.array([r["model"][0] for r in rows])
    best = np.array([r[r["best"]][0] for r in rows])
    cpu_per_step = float(np.mean([r["cpu_min"] / r["budget"] for r in rows]))
    below = np.flatnonzero(model < best)
    if below.size:
        i = int(below[0])
        if i == 0:
            return {
                "crossed": True,
                "steps": float(steps[0]),
                "says": f"below the best baseline from {steps[0]:g} steps",
            }
        d0, d1 = model[i - 1] - best[i - 1], model[i] - best[i]
        x = math.exp(math.log(steps[i - 1]) + (math.log(steps[i]) - math.log(steps[i - 1])) * d0 / (d0 - d1))
        return {"crossed": True, "steps": x, "cpu_min": x * cpu_per_step,
                "says": f"crosses the best baseline between {steps[i - 1]:g} and {steps[i]:g} steps (≈{x:.0f} "
                        f"steps, ≈{x * cpu_per_step:.1f} CPU-min, interpolated in log-steps)"}  # fmt: skip
    target = float(best[-1])
    gap = float(model[-1] - target)
    out: dict[str, Any] = {"crossed": False, "gap_at_last": gap, "target": target, "cpu_min_per_step": cpu_per_step}
    says = [f"stays {gap:.3f} above the best baseline ({target:.3f}) at {steps[-1]:g} steps"]
    for name, k in (("fit", min(fit_last, len(rows))), ("last_interval", 2)):
        if len(rows) < 2:
            break
        slope, icpt = np.polyfit(np.log(steps[-k:]), model[-k:], 1)
        e: dict[str, Any] = {"budgets": k, "per_doubling": float(slope * math.log(2)), "intercept": float(icpt),
                             "slope_per_e_fold": float(slope)}  # fmt: skip
        what = f"the last {k} budgets" if name == "fit" else "the last doubling"
        if slope > -1e-9 or (target - icpt) / slope > math.log(1e9):
            says.append(f"not falling over {what} (or reaching it only after 1e9 steps): no crossing in sight")
        else:
            x = math.exp((target - icpt) / slope)
            e.update(steps=x, cpu_min=x * cpu_per_step)
            says.append(f"falling {-slope * math.log(2):.3f} per doubling of steps over {what}, a straight line in "
                        f"log-steps reaches it at ≈{x:,.0f} steps ≈ {x * cpu_per_step:,.0f} CPU-min")  # fmt: skip
        out[name] = e
    out["says"] = "; ".join(says) + " (a straight line is optimistic where the curve flattens)"
    return out


def table(rows: list[dict], names: dict[str, str]) -> str:
    keys = [k for k in rows[0] if k not in ("budget", "seeds", "cpu_min", "best", "model_over_best",
                                            "model_over_best_per_seed", "model")]  # fmt: skip
    head = ["budget (steps)", "CPU-min", "model (mean ± sd, 3 seeds)"] + [names.get(k, k) for k in keys]
    head += ["best baseline", "model / best"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [str(r["budget"]), f"{r['cpu_min']:.2f}", f"{r['model'][0]:.3f} ± {r['model'][1]:.3f}"]
        cells += [f"{r[k][0]:.3f}" for k in keys]
        cells += [names.get(r["best"], r["best"]), f"{r['model_over_best']:.3f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot(rows_by_part: dict[str, list[dict]], results: list[dict], names: dict[str, str], path: Path,
         title: str, cross: dict | None = None) -> None:  # fmt: skip
    import matplotlib
    import matplotlib.ticker

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    parts = [p for p in rows_by_part if rows_by_part[p]]
    fig, axes = plt.subplots(len(parts), 2, figsize=(11, 4.2 * len(parts)), squeeze=False)
    styles = ["--", "-.", ":", (0, (5, 1)), (0, (1, 1)), (0, (3, 1, 1, 1)), (0, (5, 3))]
    for row_axes, part in zip(axes, parts):
        rows = rows_by_part[part]
        for ax, xkey, xlabel in zip(row_axes, ("budget", "cpu_min"), ("optimiser steps", "CPU-minutes (1 core)")):
            for r in results:  # each seed
                es = [r["budgets"][str(x["budget"])] for x in rows if str(x["budget"]) in r["budgets"]]
                xs = [e[xkey if xkey == "cpu_min" else "steps"] for e in es]
                ys = [e[part]["ratios"]["model"] for e in es]
                ax.plot(xs, ys, "o", color="C0", alpha=0.35, ms=4)
            x = [row[xkey] for row in rows]
            m = np.array([row["model"][0] for row in rows])
            s = np.array([row["model"][1] for row in rows])
            ax.plot(x, m, "-o", color="C0", lw=2, label="model (mean ± sd, 3 seeds)")
            ax.fill_between(x, m - s, m + s, color="C0", alpha=0.2)
            keys = [k for k in rows[-1] if isinstance(rows[-1][k], tuple) and k != "model"]
            for i, k in enumerate(keys):
                v = float(np.mean([row[k][0] for row in rows]))
                lw = 2 if k == rows[-1]["best"] else 1
                ax.axhline(
                    v, color=f"C{i + 1}", ls=styles[i % len(styles)], lw=lw, label=f"{names.get(k, k)} ({v:.3f})"
                )
            ax.axhline(1.0, color="black", ls=":", lw=0.8, label="predict-zero (1)")
            ax.set_xscale("log")
            ax.xaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
            ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
            ax.set_xticks(x)
            ax.set_xticklabels([f"{v:.3g}" for v in x], fontsize=7)
            ext = (cross or {}).get(part, {})
            for name, ls in (("fit", (0, (4, 2))), ("last_interval", (0, (1, 2)))):
                e = ext.get(name) or {}
                if xkey == "budget" and e.get("steps") and e["steps"] < 64 * x[-1]:
                    xe = np.geomspace(x[-1], e["steps"], 20)
                    ax.plot(xe, e["intercept"] + e["slope_per_e_fold"] * np.log(xe), color="C0", ls=ls, lw=1,
                            label=f"model extrapolated ({'last 3 budgets' if name == 'fit' else 'last doubling'}): "
                                  f"≈{e['steps']:,.0f} steps")  # fmt: skip
            ax.set_xlabel(xlabel)
            ax.set_ylabel("held-out masked MSE / predict-zero")
            ax.set_title(f"{title}: {part.replace('_', ' ')}", fontsize=9)
            ax.grid(alpha=0.3, which="both")
        row_axes[0].legend(fontsize=7, loc="best")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    print(f"figure: {path}", flush=True)


# --------------------------------------------------------------------------------------------------- main
def parse_kv(text: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kv in filter(None, text.split(",")):
        k, v = kv.split("=", 1)
        out[k] = (
            int(v) if v.lstrip("-").isdigit() else float(v) if v.replace(".", "", 1).replace("e-", "").isdigit() else v
        )
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--modality", choices=["eeg", "surface"], required=True)
    ap.add_argument("--data-root", type=Path, default=None, help="../shared/data/eeg or ../shared/data/surface")
    ap.add_argument("--out", type=Path, required=True, help="stores and runs (reused)")
    ap.add_argument("--budgets", default=None, help="steps, comma-separated (eeg 8,16,32,64,128; surface 6,12,24,48)")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--schedule", default="constant", choices=["constant", "cosine"])
    ap.add_argument("--lr", type=float, default=None)
    ap.add_argument("--warmup-steps", type=int, default=None)
    ap.add_argument("--model-kwargs", type=parse_kv, default=None,
                    help="e.g. n_layers=4 (default eeg n_layers=2; surface SiT-tiny's)")  # fmt: skip
    ap.add_argument("--split", default="all", help="surface: the store split pretrained on (default all)")
    ap.add_argument("--val-fraction", type=float, default=0.1, help="surface: share of tubelet onsets held out")
    ap.add_argument("--rescore", action="store_true", help="score the saved weights with the installed code")
    ap.add_argument("--tag", default="", help="run folder suffix (a recipe variant)")
    ap.add_argument("--train-only", action="store_true", help="train (or reuse) the runs and stop: no scoring")
    ap.add_argument("--collect", action="store_true", help="read runs stopped early from their folders")
    ap.add_argument(
        "--run-steps", type=int, default=None, help="steps the runs were asked for (default the last budget)"
    )
    ap.add_argument("--cpu-samples", type=Path, default=None, help="/proc CPU samples of runs without cpu.jsonl")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--plot", type=Path, default=None)
    a = ap.parse_args(argv)
    torch.set_num_threads(1)
    eeg = a.modality == "eeg"
    a.data_root = a.data_root or Path(f"../shared/data/{a.modality}")
    a.model_kwargs = a.model_kwargs if a.model_kwargs is not None else ({"n_layers": 2} if eeg else {})
    budgets = sorted(int(b) for b in (a.budgets or ("8,16,32,64,128" if eeg else "6,12,24,48")).split(","))
    a.out.mkdir(parents=True, exist_ok=True)
    if eeg:
        store, other = eeg_store(a.data_root, a.out), None
    else:
        store, other = surface_stores(a.data_root, a.out)
    from neurokit.evaluation.masked import BASELINE_NAMES

    names = {"model": "model", **{k: v for k, v in BASELINE_NAMES.items()}}
    results = []
    t_start = time.time()
    for seed in (int(s) for s in a.seeds.split(",")):
        per_budget: dict[str, Any] = {}
        if a.schedule == "constant":
            n = a.run_steps or budgets[-1]
            run_dir = a.out / f"{a.modality}{a.tag}_s{seed}_n{n}"
            if a.collect and not (run_dir / "metrics.jsonl").exists():
                raise SystemExit(f"--collect: no run in {run_dir}")
            rec = train(a, store, seed, n, run_dir)
            at = {p["step"]: p for p in rec["points"]}
            missing = [b for b in budgets if b not in at and b <= rec["steps_done"]]
            if missing:
                raise SystemExit(f"no held-out scoring at steps {missing}: the scorings fall at {sorted(at)}; choose "
                                 "budgets that are multiples of an epoch's steps")  # fmt: skip
            runs = {b: (run_dir, at[b]) for b in budgets if b in at}
        else:
            runs = {}
            for b in budgets:
                run_dir = a.out / f"{a.modality}{a.tag}_cos_s{seed}_n{b}"
                rec = train(a, store, seed, b, run_dir)
                if rec["points"] and rec["points"][-1]["step"] == b:
                    runs[b] = (run_dir, rec["points"][-1])
        if a.train_only or not runs:
            continue
        # the baselines of the installed code, from the latest saved weights (they do not depend on the model)
        ref, ref_step = None, None
        with_w = [p for p in rec["points"] if "weights" in p]
        if (a.rescore or other is not None) and with_w:
            ref_step = with_w[-1]["step"]
            ref = rescore(a, store, seed, Path(with_w[-1]["weights"]), other)
        for b, (_run_dir, point) in runs.items():
            entry: dict[str, Any] = {"steps": b, **{k: point[k] for k in ("cpu_min", "train_cpu_min", "cpu_from")
                                                    if k in point}}  # fmt: skip
            figs = {"heldout": point["heldout"]}
            if ref is not None:
                new = ref if b == ref_step else rescore(a, store, seed, Path(point["weights"]), other) if (
                    "weights" in point) else None  # fmt: skip
                if new is None:  # no weights at this budget: the history's figures, the missing baselines added
                    h = dict(point["heldout"])
                    for k in ("heldout_zero", "heldout_mean"):
                        if not math.isclose(h[k], ref["heldout"][k], rel_tol=1e-6):
                            raise SystemExit(
                                f"seed {seed}, {b} steps: {k} {h[k]} in the history, {ref['heldout'][k]} now"
                            )
                    h.update({k: v for k, v in ref["heldout"].items() if k.startswith("heldout_") and k not in h})
                    figs = {"heldout": h}
                    entry["baselines_from_step"] = ref_step
                    entry["model_ratio_at_that_step"] = {"history": ratios(with_w[-1]["heldout"])["model"],
                                                         "rescored": ratios(ref["heldout"])["model"]}  # fmt: skip
                elif a.rescore:
                    figs = {k: v for k, v in new.items() if k != "phrase"}
                    entry["history_model_ratio"] = ratios(point["heldout"])["model"]
                else:
                    figs["other_subject"] = new["other_subject"]
            for part, h in figs.items():
                entry[part] = {"ratios": ratios(h), "verdict": verdict(h), "raw": h}
            per_budget[str(b)] = entry
        phrase = rec["heldout_phrase"] or (ref or {}).get("phrase")
        results.append({"seed": seed, "heldout_phrase": phrase, "steps_done": rec["steps_done"],
                        "config": rec["config"], "budgets": per_budget})  # fmt: skip
        last = per_budget[str(max(runs))]["heldout"]
        print(f"seed {seed}: " + " · ".join(f"{b}: {e['heldout']['ratios']['model']:.3f} "
                                            f"({e.get('cpu_min', float('nan')):.2f} CPU-min)" for b, e in per_budget.items())
              + f"; best baseline {last['verdict']['best_baseline']} {last['verdict']['best_baseline_ratio']:.3f}",
              flush=True)  # fmt: skip
    if a.train_only:
        return 0
    parts = ["heldout"] + (["other_subject"] if other is not None else [])
    rows_by_part = {p: summarise(results, budgets, p) for p in parts}
    summary: dict[str, Any] = {}
    title = "CBraMod 2 layers, EEGMMIDB 64 ch" if eeg else "SiT / vsMAE, fsaverage5 run"
    print(f"held out: {results[0]['heldout_phrase']}")
    for p, rows in rows_by_part.items():
        if not rows:
            continue
        cross = crossing(rows)
        summary[p] = {"rows": rows, "crossing": cross}
        print(f"\n{p} ({title}; ratios to predict-zero):\n" + table(rows, names))
        print(f"{p}: the model {cross['says']}")
    if a.json:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        meta = {
            "modality": a.modality,
            "date": datetime.now(timezone.utc).isoformat(timespec="minutes"),
            "machine": f"{platform.machine()}, {platform.processor() or '?'}, torch {torch.__version__}, 1 thread",
            "argv": sys.argv,
            "budgets": budgets,
            "wall_min": (time.time() - t_start) / 60,
        }
        a.json.write_text(json.dumps({"meta": meta, "summary": summary, "results": results}, indent=1, default=str))
        print(f"results: {a.json}")
    if a.plot:
        plot(rows_by_part, results, names, a.plot, title, {p: v["crossing"] for p, v in summary.items()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
