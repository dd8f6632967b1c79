"""``neuro pretrain`` and ``neuro finetune``: the training commands, over :mod:`neurokit.pipelines.pretrain`, :mod:`~neurokit.pipelines.finetune` and :mod:`~neurokit.pipelines.multitask`."""

from __future__ import annotations

from pathlib import Path
from typing import Any, List, Optional

import typer

from neurokit._utils.staging import claim_entries
from neurokit.cli.common import (
    cli_words,
    console,
    is_main_rank,
    option_given,
    parse_fractions,
    record_command,
    parse_splits,
    parse_subjects,
    run_or_exit,
    setup_logging,
)
from neurokit.cli import finetune_options as o
from neurokit.cli.reports import print_comparison, print_m4oe_report, print_report, print_scheme_report


# ---------------------------------------------------------------------------------------- pretrain
def pretrain(
    ctx: typer.Context,
    stores: List[Path] = typer.Argument(..., help="Patch store(s) to pretrain on."),
    out: Path = typer.Option(Path("runs/pretrain"), "--out", "-o", help="Output folder (checkpoints, metrics.jsonl)."),
    model: str = typer.Option(
        "cbramod",
        help="Model family: {pretrain_models}.",
    ),
    epochs: int = typer.Option(40, help="Epochs (CBraMod: 40)."),
    max_steps: Optional[int] = typer.Option(
        None, show_default="none", help="Stop after this many optimiser steps (schedule spans them)."
    ),
    batch_size: int = typer.Option(
        128, help="Samples per step and process (CBraMod: 128; capped to the store's size)."
    ),
    lr: Optional[float] = typer.Option(None, show_default="cbramod 5e-4, sit 3e-4", help="Peak learning rate (AdamW)."),
    min_lr: Optional[float] = typer.Option(
        None,
        show_default="cbramod 1e-5",
        help="Final learning rate of the per-step cosine schedule (setting it turns the cosine schedule on).",
    ),
    weight_decay: Optional[float] = typer.Option(
        None, show_default="cbramod 0.05, sit 0.01", help="AdamW weight decay."
    ),
    clip_grad: Optional[float] = typer.Option(
        None, show_default="cbramod 1.0, sit 0 (off)", help="Gradient-norm clip (0 = off)."
    ),
    schedule: Optional[str] = typer.Option(
        None, show_default="cbramod cosine, sit constant", help="Learning-rate schedule: cosine or constant."
    ),
    n_layers: Optional[int] = typer.Option(
        None, show_default="none", help="Override the number of transformer layers (CBraMod: 12)."
    ),
    size: Optional[str] = typer.Option(
        None, "--model-size", show_default="none", help="SiT size: tiny, small or base."
    ),
    mask_ratio: Optional[float] = typer.Option(
        None, show_default="none", help="SiT video-MAE tube-mask ratio (default 0.75)."
    ),
    recipe: Optional[str] = typer.Option(
        None,
        "--recipe",
        show_default="neurokit",
        help="sit: neurokit (positions from the sphere, attention biased by distance between patches, output started at zero; learns on the shared fMRI) or reference (the metrics-lab vsMAE: 1-D index positions; stays at predict-zero there). docs/guide/surface.md.",
    ),
    split: str = typer.Option(
        "train", help="Card split to pretrain on: train (validation and test subjects stay unseen), val, test or all."
    ),
    subjects: Optional[str] = typer.Option(
        None, show_default="none", help="Only these subjects, e.g. '1-6' or 'S001,S002' (overrides --split)."
    ),
    stimuli: Optional[List[Path]] = typer.Option(
        None,
        "--stimuli",
        show_default="none",
        help="clip: stimulus store(s) from `neuro embed-stimuli`, one per run (repeatable).",
    ),
    lag_s: Optional[float] = typer.Option(
        None,
        "--lag",
        show_default="6",
        help="clip: hemodynamic lag in s (fMRI frames [t, t+1, t+2] pair with the window starting at t - lag).",
    ),
    segments: Optional[str] = typer.Option(
        None,
        show_default="all",
        help="clip: all, first_half or second_half of each movie clip (unseen-segments split).",
    ),
    fmri_init: Optional[Path] = typer.Option(
        None,
        "--fmri-init",
        show_default="none (random SiT)",
        help="clip: checkpoint whose SiT encoder starts the fMRI encoder (a `neuro pretrain --model sit` run; the release starts from vsMAE weights).",
    ),
    train_fmri_encoder: Optional[bool] = typer.Option(
        None,
        "--train-fmri-encoder/--freeze-fmri-encoder",
        show_default="frozen, as the release",
        help="clip: train the SiT with the heads (neurokit's option) or keep it frozen (the release's).",
    ),
    normalize: Optional[str] = typer.Option(
        None,
        "--normalize",
        show_default="corpus",
        help="cbramod: input amplitude normalisation, none, window (each window by its RMS), channel (each channel of each window by its RMS) or corpus (each corpus by the RMS of its training windows); recorded in the checkpoint, so fine-tuning from it normalises the same way.",
    ),
    val_fraction: Optional[float] = typer.Option(
        None,
        "--val-fraction",
        show_default="0.1",
        help="Share of the samples held out to log the masked loss beside its baselines each epoch: whole subjects of corpora with 5 or more; else EEG windows at random, surface fMRI a whole block of frames at the end of each run (0: none).",
    ),
    heldout_subjects: Optional[str] = typer.Option(
        None,
        "--heldout-subjects",
        show_default="none",
        help="Hold out exactly these subjects for the held-out masked loss, e.g. '7-10' with --split all (replaces --val-fraction).",
    ),
    heldout_own_scale: bool = typer.Option(
        False,
        "--heldout-own-scale",
        show_default="off: the training windows' RMS",
        help="--normalize corpus: scale a held-out store that has no training windows by its own RMS (a statistic of held-out data) instead of the training windows'.",
    ),
    seed: int = typer.Option(0, help="Random seed (sampling, masks, initialisation)."),
    device: str = typer.Option("auto", help="auto, cpu, cuda or cuda:K (under torchrun: one GPU per process)."),
    num_workers: int = typer.Option(0, help="DataLoader worker processes."),
    ckpt_every: int = typer.Option(
        0, "--checkpoint-every", "--ckpt-every", help="Also write last.pt every N steps (0: at each epoch end only)."
    ),
    resume: bool = typer.Option(
        False,
        "--resume",
        show_default="off",
        help="Continue from OUT/last.pt with its settings (options given again change them; more --epochs/--max-steps extend it).",
    ),
    overwrite: bool = typer.Option(
        False,
        "--overwrite",
        show_default="off",
        help="Start again in an OUT that holds a run (its files only; yours there stay).",
    ),
    progress: bool = typer.Option(True, help="Show a progress bar."),
    verbose: bool = typer.Option(False, "--verbose", "-v", show_default="off", help="Log each step."),
) -> None:
    """Self-supervised pretraining (CBraMod masked-patch reconstruction; SiT video-MAE).

    Several GPUs or nodes: torchrun --nproc_per_node=G -m neurokit pretrain STORE ...
    """
    setup_logging(verbose)
    from neurokit.pipelines.pretrain import pretrain_with_options

    # parameter names are the settings' (model_kwargs entries, optim fields, PretrainConfig fields): a message that
    # names one (``size='base'``) is said with its flag
    model_kwargs: dict[str, Any] = {
        k: v
        for k, v in dict(
            n_layers=n_layers,
            size=size,
            mask_ratio=mask_ratio,
            recipe=recipe,
            stimuli=[str(p) for p in stimuli or []],
            lag_s=lag_s,
            segments=segments,
            fmri_init=None if fmri_init is None else str(fmri_init),
            train_fmri_encoder=train_fmri_encoder,
        ).items()
        if v is not None and v != []
    }
    optim = dict(lr=lr, min_lr=min_lr, weight_decay=weight_decay, clip_grad=clip_grad, schedule=schedule)
    options: dict[str, Any] = dict(
        model=model,
        model_kwargs=model_kwargs,
        epochs=epochs,
        max_steps=max_steps,
        batch_size=batch_size,
        optim={k: v for k, v in optim.items() if v is not None},
        seed=seed,
        device=device,
        num_workers=num_workers,
        ckpt_every=ckpt_every,
        split=None if split == "all" else split,
        subjects=parse_subjects(subjects),
        heldout_subjects=parse_subjects(heldout_subjects),
        heldout_own_scale=heldout_own_scale,
        progress=progress,
    )
    options.update({k: v for k, v in (("normalize", normalize), ("val_fraction", val_fraction)) if v is not None})
    res = run_or_exit(
        pretrain_with_options,
        list(stores),
        out,
        options,
        given={k for k in ctx.params if option_given(ctx, k)},
        resume=resume,
        overwrite=overwrite,
        say=lambda m: console.print(cli_words(m)),
    )
    record_command(ctx, out, report="pretrain_summary.json")
    if is_main_rank():
        speed = f" ({res['samples_per_s']:.1f} samples/s)" if res["steps_run"] else " (nothing left to run)"
        console.print(
            f"[green]pretrained[/] {res['steps']} steps: loss {res['loss_first']:.4f} → {res['loss_last']:.4f}"
            f"{speed}; checkpoint {res['checkpoint']}"
        )
        for line in pretrain_lines(res):
            console.print(line)


def pretrain_lines(res: dict) -> list[str]:
    """What a pretraining summary says beyond the loss: the normalisation, the windows its stores kept, and the
    held-out masked loss against its baselines (last epoch) with the summary's ``verdict``, per layout where there
    are several."""
    from neurokit.data.provenance import kept_line
    from neurokit.evaluation.masked import heldout_line

    norm = res.get("normalize") or {}
    lines = [
        f"input normalisation: {norm.get('mode', 'none')}"
        + (
            " (corpus RMS: " + ", ".join(f"{k.split('#')[-1]} {v:.4g}" for k, v in norm["corpus_scales"].items()) + ")"
            if norm.get("corpus_scales")
            else ""
        )
    ]
    if res.get("kept"):
        lines.append(f"data: {kept_line(res['kept'])}")
    if res.get("heldout"):
        subj = [str(x) for x in res.get("subjects") or []]
        shown = ", ".join(subj[:6]) + (f", … (+{len(subj) - 6} more)" if len(subj) > 6 else "")
        trained = f"; trained on {len(subj)} subject(s): {shown}" if subj else ""
        lines.append(f"held out (not trained on): {res['heldout']}{trained}")
    hist = res.get("heldout_history") or []
    verdict = res.get("verdict")
    if hist and verdict:
        h = hist[-1]
        lines.append(f"{heldout_line(h)}; {_verdict_words(verdict)}")
        for name, v in (h.get("heldout_layouts") or {}).items():  # each layout's own figures, when there are several
            lines.append(f"  {name}: {heldout_line(v)}; {_verdict_words(verdict['layouts'][name])}")
        if verdict.get("note"):
            lines.append(f"note: {verdict['note']}")
    else:
        lines.append(f"held-out masked loss: none computed ({res.get('heldout') or 'no held-out windows'})")
    return lines


def _verdict_words(verdict: dict) -> str:
    """A verdict's words naming the best baseline, in yellow when the model learned no more than the scale."""
    from neurokit.evaluation.masked import verdict_words

    words = verdict_words(verdict)
    return words if verdict["beats_scale"] else f"[yellow]{words}[/]"


# ---------------------------------------------------------------------------------------- finetune
def finetune(
    ctx: typer.Context,
    stores: o.Stores,
    out: o.Out = Path("runs/finetune"),
    init: o.Init = None,
    init_sha256: o.InitSha256 = None,
    allow_partial_init: o.AllowPartialInit = False,
    allow_mismatch: o.AllowMismatch = None,
    allow_duplicate_recordings: o.AllowDuplicateRecordings = False,
    model: o.Model = None,
    head: o.Head = "auto",
    epochs: o.Epochs = 50,
    batch_size: o.BatchSize = 64,
    lr_backbone: o.LrBackbone = 1e-4,
    lr_head: o.LrHead = None,
    weight_decay: o.WeightDecay = 0.05,
    label_smoothing: o.LabelSmoothing = 0.1,
    frozen: o.Frozen = False,
    n_layers: o.NLayers = None,
    train_subjects: o.TrainSubjects = None,
    val_subjects: o.ValSubjects = None,
    test_subjects: o.TestSubjects = None,
    augment: o.Augment = None,
    plots: o.Plots = False,
    scheme: o.Scheme = "card",
    folds: o.Folds = 5,
    seed: o.Seed = 0,
    device: o.Device = "auto",
    num_workers: o.NumWorkers = 0,
    overwrite: o.Overwrite = False,
    progress: o.Progress = True,
    verbose: o.Verbose = False,
    task: o.Task = None,
    modality: o.Modality = None,
    m4oe_preset: o.M4oePreset = "small",
    alpha: o.Alpha = 0.1,
    focal_gamma: o.FocalGamma = 2.0,
    resume: o.Resume = False,
    baselines: o.Baselines = True,
    strategy: o.Strategy = "full",
    lora_rank: o.LoraRank = 8,
    lora_alpha: o.LoraAlpha = 16.0,
    compare_scratch: o.CompareScratch = False,
    seeds: o.Seeds = None,
    label_fractions: o.LabelFractions = None,
    probe: o.Probe = True,
) -> None:
    """Fine-tune on a labelled store; select on validation; score the test split once; print metrics.

    With --head m4oe and several --task CARD:TASK: one backbone, an M4oE mixture-of-experts head, per-task
    metrics and modality contributions (routing shares, not causal importance). Options that do not apply to
    the head are refused, never ignored.
    """
    setup_logging(verbose)
    from neurokit.pipelines.finetune_plan import plan_finetune, run_finetune

    fractions = run_or_exit(parse_fractions, label_fractions) if label_fractions is not None else None
    splits = parse_splits(train_subjects, val_subjects, test_subjects)
    given = {"splits" if k.endswith("_subjects") else k for k in ctx.params if option_given(ctx, k)}
    options = {k: v for k, v in ctx.params.items() if k not in o.NOT_PLANNED}
    plan = run_or_exit(
        plan_finetune, list(stores), out, splits=splits, label_fractions=fractions, given=given, **options
    )
    if plan.card_settings:
        console.print(
            "settings from the store's card (the release's for this dataset; options given override them): "
            + ", ".join(f"{k} {v}" for k, v in plan.card_settings.items())
        )
    rep = run_or_exit(run_finetune, plan)
    record_command(ctx, out, report="comparison.json" if plan.pipeline == "compare" else "report.json")
    if plan.pipeline == "m4oe":
        print_m4oe_report(rep, out)
    elif plan.pipeline == "compare":
        print_comparison(rep, out)
    elif "folds" in rep:
        print_scheme_report(rep, out)
    else:
        print_report(rep, out)
    if plots:
        from neurokit.plotting import plot_contributions
        from neurokit.plotting.report import plot_report

        if plan.pipeline == "m4oe":
            files = [run_or_exit(plot_contributions, rep, out / "plots" / "contributions.png")]
        else:
            files = list(run_or_exit(plot_report, out, out / "plots").values())
        if plan.pipeline != "compare":
            claim_entries(out, ["plots"])  # the run's figures: a later --overwrite replaces them
        console.print(f"figures: {', '.join(str(p) for p in files)}")
