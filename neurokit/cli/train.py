"""``neuro pretrain`` and ``neuro finetune``: the training commands, over :mod:`neurokit.pipelines.pretrain`, :mod:`~neurokit.pipelines.finetune` and :mod:`~neurokit.pipelines.multitask`."""

from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path
from typing import Any, List, Optional

import typer

from neurokit._utils.staging import claim_entries
from neurokit.cli.common import (
    console,
    fail,
    is_main_rank,
    option_given,
    options_given,
    parse_fractions,
    record_command,
    parse_splits,
    parse_subjects,
    run_or_exit,
    setup_logging,
)
from neurokit.cli.reports import print_m4oe_report, print_report, print_scheme_report


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
        say=console.print,
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
    """A verdict's words, in yellow when the model learned no more than the scale."""
    return verdict["says"] if verdict["beats_scale"] else f"[yellow]{verdict['says']}[/]"


# ---------------------------------------------------------------------------------------- finetune
def finetune(
    ctx: typer.Context,
    stores: List[Path] = typer.Argument(..., help="Labelled patch store(s)."),
    out: Path = typer.Option(
        Path("runs/finetune"), "--out", "-o", help="Output folder (best.pt, last.pt, report.json)."
    ),
    init: Optional[str] = typer.Option(
        None,
        show_default="none",
        help="`neuro pretrain` checkpoint, released CBraMod state_dict, or Hub weights hub:ORG/NAME[@REVISION] (e.g. hub:weighting666/CBraMod; default: from scratch). Its model family is the run's.",
    ),
    init_sha256: Optional[str] = typer.Option(
        None,
        "--init-sha256",
        show_default="none",
        help="Pin the --init weights: refuse a file whose SHA-256 is not this one (a local file or Hub weights).",
    ),
    allow_partial_init: bool = typer.Option(
        False,
        "--allow-partial-init",
        show_default="off",
        help="Load an --init file that covers only part of the backbone (the rest stays at random initial values).",
    ),
    allow_mismatch: Optional[str] = typer.Option(
        None,
        "--allow-mismatch",
        show_default="none",
        help="Fine-tune a store that differs from the --init checkpoint's pretraining data in these facts anyway: sfreq, patch, units (comma-separated); recorded in the report.",
    ),
    allow_duplicate_recordings: bool = typer.Option(
        False,
        "--allow-duplicate-recordings",
        show_default="off",
        help="Fine-tune and score although the test split holds a recording (same SHA-256) of the training or validation split; the report says so.",
    ),
    model: Optional[str] = typer.Option(
        None,
        show_default="the --init checkpoint's, else cbramod",
        help="Model family of a from-scratch backbone: {finetune_models}.",
    ),
    head: str = typer.Option(
        "auto",
        help="Head: all_patch_reps (flatten all tokens), avgpool, auto (the model's default: all_patch_reps for cbramod, avgpool for sit), or m4oe (several --task at once).",
    ),
    epochs: int = typer.Option(50, help="Epochs (CBraMod: 50)."),
    batch_size: int = typer.Option(64, help="Batch size (CBraMod: 64)."),
    lr_backbone: float = typer.Option(1e-4, help="Backbone learning rate."),
    lr_head: Optional[float] = typer.Option(
        None, show_default="1e-3·√(batch/256), the CBraMod release's", help="Head learning rate."
    ),
    weight_decay: float = typer.Option(0.05, help="AdamW weight decay."),
    label_smoothing: float = typer.Option(0.1, help="Label smoothing (multi-class)."),
    frozen: bool = typer.Option(
        False,
        "--frozen/--no-frozen",
        help="Freeze the backbone weights (only the head trains; its dropout stays on in training, as in the CBraMod release).",
    ),
    n_layers: Optional[int] = typer.Option(None, show_default="none", help="Layers of a from-scratch backbone."),
    train_subjects: Optional[str] = typer.Option(
        None,
        show_default="none",
        help="Override the card's train subjects, e.g. '1-6' (with --val-subjects and --test-subjects; single-task heads, --scheme card).",
    ),
    val_subjects: Optional[str] = typer.Option(
        None, show_default="none", help="Override the card's validation subjects."
    ),
    test_subjects: Optional[str] = typer.Option(None, show_default="none", help="Override the card's test subjects."),
    augment: Optional[str] = typer.Option(
        None,
        show_default="off",
        help="EEG augmentation, e.g. 'time_shift=0.1,scale=0.1,noise=5,channel_dropout=0.1,freq_shift=1,mixup=0.2,p=0.5' (seconds, fraction, µV, probability, Hz, Beta α, per-transform probability; --head m4oe: all but mixup).",
    ),
    plots: bool = typer.Option(
        False,
        "--plots",
        show_default="off",
        help="Also draw the report's figures into OUT/plots (see `neuro plot-report`; --head m4oe: the modality contributions).",
    ),
    scheme: str = typer.Option(
        "card",
        help="Evaluation scheme: card (the card's splits), loso (leave one subject out), kfold-subject, cross-session, within-session (single-task heads).",
    ),
    folds: int = typer.Option(5, help="k of the kfold-subject and within-session schemes."),
    seed: int = typer.Option(0, help="Random seed."),
    device: str = typer.Option("auto", help="auto, cpu, cuda or cuda:K."),
    num_workers: int = typer.Option(0, help="DataLoader worker processes."),
    overwrite: bool = typer.Option(
        False,
        "--overwrite",
        show_default="off",
        help="Replace an earlier run in OUT (its files only; yours there stay).",
    ),
    progress: bool = typer.Option(True, help="Show a progress bar."),
    verbose: bool = typer.Option(False, "--verbose", "-v", show_default="off", help="Log each step."),
    task: Optional[List[str]] = typer.Option(
        None, "--task", show_default="none", help="--head m4oe: a task CARD:TASK (repeatable; one store per task)."
    ),
    modality: Optional[List[str]] = typer.Option(
        None,
        "--modality",
        show_default="the cards' modalities",
        help="--head m4oe: NAME=CH,CH or a card modality NAME (repeatable).",
    ),
    m4oe_preset: str = typer.Option(
        "small", "--m4oe-preset", help="--head m4oe: expert counts, small (CPU) or paper (32/128/16)."
    ),
    alpha: float = typer.Option(0.1, help="--head m4oe: weight of the -α·I(M;E|T) term."),
    focal_gamma: Optional[float] = typer.Option(
        2.0,
        "--focal-gamma",
        help="--head m4oe: focal loss γ with α = 1 − training class frequency (release: 2; 0: class-weighted cross-entropy).",
    ),
    resume: bool = typer.Option(
        False,
        "--resume",
        show_default="off",
        help="Continue the run in OUT from its last.pt (written each epoch) up to --epochs, with the same settings (--scheme card).",
    ),
    baselines: bool = typer.Option(
        True, "--baselines/--no-baselines", help="Score the classical baselines on the same split."
    ),
    strategy: str = typer.Option(
        "full",
        help="How the backbone adapts: full, frozen (= --frozen), linear-probe (logistic regression on pooled frozen features) or lora (peft adapters + head); with --compare-scratch/--seeds a comma list, e.g. full,lora.",
    ),
    lora_rank: int = typer.Option(8, "--lora-rank", help="--strategy lora: adapter rank r."),
    lora_alpha: float = typer.Option(
        16.0, "--lora-alpha", help="--strategy lora: adapter scaling alpha (update scaled by alpha/r)."
    ),
    compare_scratch: bool = typer.Option(
        False,
        "--compare-scratch",
        show_default="off",
        help="Also train the same architecture from random weights and EEGNet-8,2 (same settings, split, seeds, label subsets) and linear probes of both; print pretrained vs scratch vs EEGNet with the differences. Needs --init.",
    ),
    seeds: Optional[int] = typer.Option(
        None,
        "--seeds",
        show_default="1",
        help="Repeat every arm with this many seeds (--seed, --seed+1, ...): mean ± std and paired differences.",
    ),
    label_fractions: Optional[str] = typer.Option(
        None,
        "--label-fractions",
        show_default="1",
        help="Fine-tune on these fractions of the training labels, e.g. 0.02,0.1,1 (stratified by class, seeded, whole subjects where possible).",
    ),
    probe: bool = typer.Option(
        True,
        "--probe/--no-probe",
        help="With --compare-scratch/--seeds/--label-fractions: also the linear probes of the pretrained and the random backbone.",
    ),
) -> None:
    """Fine-tune on a labelled store; select on validation; score the test split once; print metrics.

    With --head m4oe and several --task CARD:TASK: one backbone, an M4oE mixture-of-experts head, per-task
    metrics and modality contributions (routing shares, not causal importance). Options that do not apply to
    the head are refused, never ignored.
    """
    setup_logging(verbose)
    from neurokit.pipelines.finetune import FinetuneConfig, check_finetune_options
    from neurokit.pipelines.finetune import finetune as run

    compare = compare_scratch or seeds is not None or label_fractions is not None
    strategies = [x.strip() for x in strategy.split(",") if x.strip()] or ["full"]
    if compare:
        _check_compare_options(compare_scratch, init, head, resume, scheme, seeds, option_given(ctx, "strategy"))
    elif len(strategies) > 1:
        fail(
            ValueError(
                f"--strategy {strategy}: several strategies are compared with --compare-scratch or --seeds; "
                "a single run takes one"
            )
        )
    elif not probe:
        fail(
            ValueError(
                "--no-probe: the linear probes are arms of a comparison (--compare-scratch, --seeds, "
                "--label-fractions); a single run has none"
            )
        )
    fractions = run_or_exit(parse_fractions, label_fractions) if label_fractions is not None else [1.0]
    splits = parse_splits(train_subjects, val_subjects, test_subjects)
    kw = {"n_layers": n_layers} if n_layers is not None else {}
    cfg = run_or_exit(
        FinetuneConfig,
        model=model,
        model_kwargs=kw,
        head="auto" if head == "m4oe" else head,
        epochs=epochs,
        batch_size=batch_size,
        lr_backbone=lr_backbone,
        lr_head=lr_head,
        weight_decay=weight_decay,
        label_smoothing=label_smoothing,
        frozen=frozen,
        seed=seed,
        device=device,
        num_workers=num_workers,
        progress=progress,
        splits=splits,
        augment=augment,
        baselines=baselines,
        allow_partial_init=allow_partial_init,
        allow_mismatch=allow_mismatch,
        allow_duplicate_recordings=allow_duplicate_recordings,
        init_sha256=init_sha256,
        strategy="full" if compare else strategies[0],
        lora_rank=lora_rank,
        lora_alpha=lora_alpha,
    )
    given = options_given(ctx)
    if compare and "lora" in strategies:  # the LoRA sizes apply to the comparison's lora arm
        given -= {"--lora-rank", "--lora-alpha"}
    if compare and frozen and not option_given(ctx, "strategy"):
        strategies = ["frozen"]
    if task and head != "m4oe":
        fail(ValueError(f"--task is for --head m4oe (got --head {head})"))
    if init_sha256 and not init:
        fail(ValueError("--init-sha256 pins the --init weights file: give --init FILE (or hub:ORG/NAME) with it"))
    if head != "m4oe":  # the release's settings for the store's dataset, where the card gives them
        from neurokit.pipelines.finetune import card_defaults

        cfg, taken = run_or_exit(card_defaults, cfg, list(stores), given)
        if taken:
            console.print(
                "settings from the store's card (the release's for this dataset; options given override them): "
                + ", ".join(f"{k} {v}" for k, v in taken.items())
            )
    run_or_exit(
        check_finetune_options,
        cfg,
        head=head,
        scheme=scheme,
        resume=resume,
        overwrite=overwrite,
        given=given,
        init=init,
        stores=list(stores),
    )
    if head == "m4oe":
        from neurokit.pipelines.multitask import finetune_m4oe

        rep = run_or_exit(
            finetune_m4oe,
            list(stores),
            out,
            task or [],
            cfg,
            init=init,
            preset=m4oe_preset,
            alpha=alpha,
            focal_gamma=focal_gamma,
            modalities=modality,
            baselines=baselines,
            overwrite=overwrite,
            resume=resume,
        )
        record_command(ctx, out)
        print_m4oe_report(rep, out)
        if plots:
            from neurokit.plotting import plot_contributions

            path = run_or_exit(plot_contributions, rep, out / "plots" / "contributions.png")
            claim_entries(out, ["plots"])  # the run's figures: a later --overwrite replaces them
            console.print(f"figures: {path}")
        return
    if compare:
        from neurokit.cli.reports import print_comparison
        from neurokit.pipelines.compare import compare_pretraining

        res = run_or_exit(
            compare_pretraining,
            list(stores),
            out,
            cfg,
            init=init,
            seeds=seeds or 1,
            label_fractions=fractions,
            strategies=strategies,
            scratch=compare_scratch,
            probe=probe,
            overwrite=overwrite,
        )
        record_command(ctx, out, report="comparison.json")
        print_comparison(res, out)
        if plots:
            from neurokit.plotting.report import plot_report as draw

            files = run_or_exit(draw, out, out / "plots")
            console.print(f"figures: {', '.join(str(p) for p in files.values())}")
        return
    from neurokit.pipelines.compare import quiet_runs

    # the report printed below says what the run found (a confound, degenerate predictions): not its log too;
    # the folds of a scheme print no such lines, so their log keeps them
    with quiet_runs() if scheme == "card" else nullcontext():
        rep = run_or_exit(
            run, list(stores), out, cfg, init=init, overwrite=overwrite, scheme=scheme, n_folds=folds, resume=resume
        )
    record_command(ctx, out)
    if "folds" in rep:
        print_scheme_report(rep, out)
    else:
        print_report(rep, out)
    if plots:
        from neurokit.plotting.report import plot_report as draw

        files = run_or_exit(draw, out, out / "plots")
        claim_entries(out, ["plots"])  # the run's figures: a later --overwrite replaces them
        console.print(f"figures: {', '.join(str(p) for p in files.values())}")


def _check_compare_options(
    compare_scratch: bool, init, head: str, resume: bool, scheme: str, seeds, strategy_given: bool
) -> None:
    """Refuse, in one line, what a comparison (``--compare-scratch``, ``--seeds``, ``--label-fractions``) cannot do."""
    flags = "--compare-scratch/--seeds/--label-fractions"
    if compare_scratch and init is None:
        fail(
            ValueError(
                "--compare-scratch: compares fine-tuning from --init weights with training from scratch; "
                "give --init (a pretrain checkpoint or hub:ORG/NAME)"
            )
        )
    if head == "m4oe":
        fail(
            ValueError(
                f"{flags}: not with --head m4oe (the multi-task head has one run per task set); use a single-task head"
            )
        )
    if resume:
        fail(
            ValueError(
                f"--resume: a comparison ({flags}) resumes by itself: run the same command again and "
                "finished runs are reused"
            )
        )
    if scheme != "card":
        fail(ValueError(f"--scheme {scheme}: a comparison ({flags}) runs on the card's split; use --scheme card"))
    if seeds is not None and seeds < 1:
        fail(ValueError(f"--seeds {seeds}: must be >= 1"))
