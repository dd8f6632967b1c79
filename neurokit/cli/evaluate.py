"""``neuro evaluate`` and ``neuro baseline``: scoring finished runs and the classical baselines."""

from __future__ import annotations

import json
from pathlib import Path
from typing import List, Optional

import typer
from rich.table import Table
from rich.markup import escape

from neurokit.cli.common import (
    check_json_out,
    console,
    fail,
    metric_legend,
    metrics_table,
    parse_splits,
    parse_subjects,
    run_or_exit,
    setup_logging,
    short_metric,
)
from neurokit.cli.reports import (
    COMPARE,
    contributions_table,
    overlap_line,
    print_not_a_result,
    print_scheme_report,
    row_title,
    split_recordings_line,
)


# ---------------------------------------------------------------------------------------- evaluate
def evaluate(
    checkpoint: Path = typer.Argument(
        ...,
        help="`neuro finetune` checkpoint (best.pt), or the folder of a `neuro finetune --scheme` run (every fold scored on its test samples).",
    ),
    stores: List[Path] = typer.Argument(..., help="Labelled patch store(s)."),
    split: str = typer.Option(
        "test", help="Split to score, as the checkpoint was fine-tuned: train, val, test, or all."
    ),
    subjects: Optional[str] = typer.Option(None, show_default="none", help="Score these subjects instead of a split."),
    allow_seen: bool = typer.Option(
        False,
        "--allow-seen",
        show_default="off",
        help="Allow scoring subjects the model was trained or selected on (with --subjects or --split all).",
    ),
    allow_duplicate_recordings: bool = typer.Option(
        False,
        "--allow-duplicate-recordings",
        show_default="off",
        help="Score samples holding a recording (same SHA-256) of the checkpoint's training or validation split anyway; the result says so.",
    ),
    json_out: Optional[Path] = typer.Option(
        None, "--json", show_default="none", help="Also write the metrics to this JSON file."
    ),
    device: str = typer.Option("auto", help="auto, cpu, cuda or cuda:K."),
    allow_mismatch: Optional[str] = typer.Option(
        None,
        "--allow-mismatch",
        show_default="none",
        help="Score a store that differs from the checkpoint's data in these facts anyway: sfreq, patch, units (comma-separated); recorded in the result.",
    ),
    progress: bool = typer.Option(True, help="Show a progress bar."),
) -> None:
    """Score a fine-tuned checkpoint on a store and print the metrics table."""
    setup_logging(False)
    check_json_out(json_out)
    from neurokit.pipelines.evaluate import evaluate as run

    if checkpoint.is_dir():
        from neurokit.evaluation.schemes import evaluate_scheme

        res = run_or_exit(evaluate_scheme, checkpoint, list(stores), device=device)
        print_scheme_report(res)
        if json_out:
            json_out.parent.mkdir(parents=True, exist_ok=True)
            json_out.write_text(json.dumps(res, indent=2))
        return
    if split not in ("train", "val", "test", "all"):
        fail(ValueError(f"--split {split}: choose train, val, test or all"))
    subj = parse_subjects(subjects)
    res = run_or_exit(
        run,
        checkpoint,
        list(stores),
        split=None if split == "all" else split,
        subjects=subj,
        device=device,
        allow_seen=allow_seen,
        allow_duplicate_recordings=allow_duplicate_recordings,
        progress=progress,
        **({"allow_mismatch": allow_mismatch} if allow_mismatch else {}),
    )
    what = f"subjects {', '.join(subj)}" if subj is not None else f"{split} split"
    if "tasks" in res:  # M4oE: one table per task, then the contributions
        for name, r in res["tasks"].items():
            console.print(metrics_table(f"{name}: {what} metrics ({r['n_samples']} samples)", r))
            print_not_a_result(r, name)
        console.print(contributions_table(res["tasks"]))
    else:
        if res.get("input_adaptation"):  # a foundation model: how the store is fed to it
            console.print(f"input: {escape(res['input_adaptation']['line'])}")
        seen = f"; [yellow]seen in training/selection: {', '.join(res['seen'])}[/]" if res.get("seen") else ""
        console.print(metrics_table(f"{what} metrics ({res['n_samples']} samples{seen})", res, res.get("undefined")))
        print_not_a_result(res)
        if "pretraining_overlap" in res:
            console.print(overlap_line(res["pretraining_overlap"]).replace("test recording", "scored recording"))
        if res.get("split_recordings") is not None:
            console.print(split_recordings_line(res["split_recordings"], "scored"))
    if json_out:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps(res, indent=2))


# ---------------------------------------------------------------------------------------- baseline
def parse_band(text: str) -> tuple[float, float] | None:
    """``--band`` text → ``(low, high)`` Hz, or ``None`` for ``none``; anything else exits with code 2."""
    if text.strip().lower() == "none":
        return None
    try:
        lo, hi = (float(v) for v in text.split(","))
    except ValueError:
        fail(ValueError(f"--band {text!r}: give LOW,HIGH in Hz (e.g. 8,32) or 'none'"))
    return lo, hi


def baseline(
    stores: List[Path] = typer.Argument(..., help="Labelled patch store(s)."),
    method: Optional[List[str]] = typer.Option(
        None,
        "--method",
        show_default="those that fit the channel count and modality",
        help="csp_lda, riemann_lr, bandpower_lr (EEG), patchmean_lr (surface fMRI), or eegnet (EEGNet-8,2 trained from scratch on the same split; EEG only) (repeatable).",
    ),
    band: str = typer.Option(
        "8,32",
        "--band",
        help="Band-pass LOW,HIGH in Hz before csp_lda and riemann_lr (MOABB's motor-imagery band), or 'none' for the store's band.",
    ),
    json_out: Optional[Path] = typer.Option(
        None, "--json", show_default="none", help="Also write the results to this JSON file."
    ),
    seed: int = typer.Option(0, help="Random seed."),
    epochs: int = typer.Option(50, help="--method eegnet: training epochs (the best on the validation split is kept)."),
    eegnet_out: Optional[Path] = typer.Option(
        None,
        "--eegnet-out",
        show_default="a temporary folder",
        help="--method eegnet: keep its run (best.pt, report.json) in this folder (refused if it holds a run).",
    ),
    overwrite: bool = typer.Option(False, "--overwrite", help="--eegnet-out: replace the run it holds."),
    device: str = typer.Option("auto", help="--method eegnet: auto, cpu, cuda."),
    train_subjects: Optional[str] = typer.Option(
        None, show_default="the card's", help="Override the card's train subjects, e.g. '1-6' (with the two below)."
    ),
    val_subjects: Optional[str] = typer.Option(
        None, show_default="the card's", help="Override the card's validation subjects."
    ),
    test_subjects: Optional[str] = typer.Option(
        None, show_default="the card's", help="Override the card's test subjects."
    ),
    progress: bool = typer.Option(True, help="--method eegnet: show a progress bar."),
) -> None:
    """Classical baselines (CSP+LDA, Riemannian tangent space + LR, band power + LR) on the card's split, and
    with --method eegnet EEGNet-8,2 trained from scratch on it."""
    setup_logging(False)
    check_json_out(json_out)
    from neurokit.pipelines.compare import baseline_with_eegnet as run

    splits = parse_splits(train_subjects, val_subjects, test_subjects)
    res = run_or_exit(
        run,
        list(stores),
        methods=method or None,
        seed=seed,
        band=parse_band(band),
        splits=splits,
        epochs=epochs,
        out=eegnet_out,
        overwrite=overwrite,
        device=device,
        progress=progress,
    )
    t = Table(
        title=f"{res['card']}:{res['task']} ({res['kind']}), test split ({res['n_samples']['test']} samples)",
        caption=metric_legend(COMPARE),
    )
    t.add_column("method", overflow="fold")
    for m in COMPARE:
        t.add_column(short_metric(m), justify="right")
    for name, r in list(res["baselines"].items()) + [("chance", {"test": res["chance"]})]:
        met = r.get("test") or {}
        t.add_row(
            name if name == "chance" else f"{row_title(name)} ({name})",
            *(
                f"{met[m]:.3f}"
                if isinstance(met.get(m), float)
                else r.get("error", "")[:40]
                if i == 0 and "error" in r
                else ""
                for i, m in enumerate(COMPARE)
            ),
        )
    console.print(t)
    if json_out:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps(res, indent=2, default=float))
