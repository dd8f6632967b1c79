"""The ``neuro`` command line: a thin shell over :mod:`neurokit.pipelines`.

Run ``neuro --help`` or ``neuro COMMAND --help``; every option shows its default.
"""
from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from typer.core import TyperCommand

from neurokit._utils.errors import NeurokitError

app = typer.Typer(
    name="neuro",
    help="neurokit: raw EEG / surface fMRI → patch stores → foundation models (CBraMod, SiT).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
cards_app = typer.Typer(help="List and show data cards.", no_args_is_help=True)
app.add_typer(cards_app, name="cards")
console = Console(soft_wrap=True)  # paths in messages are not cut at the terminal width
err = Console(stderr=True, soft_wrap=True)  # one line per message, also when stderr is a file or a pipe


def _version(value: bool) -> None:
    if value:
        from neurokit._utils.version import VERSION as __version__

        console.print(f"neurokit {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version and exit."),
) -> None:
    """neurokit: raw EEG / surface fMRI → patch stores → foundation models (CBraMod, SiT)."""


def _is_main_rank() -> bool:
    import os

    return os.environ.get("RANK", "0") == "0"


def _setup_logging(verbose: bool) -> None:
    from rich.logging import RichHandler

    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, format="%(message)s",
                        handlers=[RichHandler(console=err, show_path=False)], force=True)


def _cli_words(text: str) -> str:
    """A pipeline message in the CLI's words: ``overwrite=True (CLI: --overwrite)`` → ``--overwrite``,
    ``hemi='L'`` → ``--hemi L`` for the running command's options, ``[PosixPath('a.h5')]`` → ``a.h5``."""
    text = re.sub(r"[\w.]+=[^\s,;()]+(?: or [\w.]+=[^\s,;()]+)? \(CLI: ([^)]+)\)", r"\1", text)
    text = re.sub(r"\[((?:\w*Path\('[^']*'\)(?:, )?)+)\]", lambda m: m.group(1), text)
    text = re.sub(r"\w*Path\('([^']*)'\)", r"\1", text)
    cmd = NeuroCommand.running
    flags = {prm.name: prm for prm in (cmd.params if cmd else []) if getattr(prm, "opts", None)
             and str(prm.opts[0]).startswith("-")}
    def flag(m):
        prm = flags.get(m.group(1))
        if prm is None:
            return m.group(0)
        value = m.group(3) if m.group(3) is not None else m.group(2)
        if getattr(prm, "is_flag", False):
            if value in ("True", "False") and prm.secondary_opts:
                return prm.opts[0] if value == "True" else prm.secondary_opts[0]
            return prm.opts[0]
        return f"{prm.opts[0]} {value}"
    return re.sub(r"\b([a-z_]+)=(?:'([^']*)'|([\w.:-]+))", flag, text)


def _fail(exc: Exception) -> None:
    err.print(f"[bold red]error:[/] {escape(_cli_words(str(exc)))}")
    raise typer.Exit(code=2)


def _run(fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except (NeurokitError, OSError, ValueError) as exc:  # OSError: permissions, full disk, missing files
        _fail(exc)
    except KeyboardInterrupt as exc:
        msg = getattr(exc, "message", None) or "interrupted; nothing was saved"
        err.print(f"[bold yellow]interrupted:[/] {escape(_cli_words(msg.removeprefix('interrupted').lstrip(': ')))}")
        raise typer.Exit(code=130)


class NeuroCommand(TyperCommand):
    """A command whose on/off flags given a value (``--frozen False``) get a message saying how flags work,
    instead of click's "unexpected extra argument"."""

    BOOL_WORDS = {"true", "false", "yes", "no", "on", "off", "0", "1"}
    running: "NeuroCommand | None" = None  # the command being run (for _cli_words)

    def parse_args(self, ctx, args):
        NeuroCommand.running = self
        flags = {o: prm for prm in self.params if getattr(prm, "is_flag", False)
                 for o in (*prm.opts, *prm.secondary_opts)}
        for i, a in enumerate(args):
            name, _, val = a.partition("=")
            nxt = val or (args[i + 1] if i + 1 < len(args) else "")
            if name in flags and nxt.lower() in self.BOOL_WORDS:
                prm = flags[name]
                off = f" or {prm.secondary_opts[0]} to turn it off" if prm.secondary_opts else " (leave it out for off)"
                raise typer.BadParameter(f"{name} is an on/off flag and takes no value (got {nxt!r}): give "
                                         f"{prm.opts[0]} to turn it on{off}", ctx=ctx, param=prm)
        return super().parse_args(ctx, args)


def _subjects(text: Optional[str]) -> Optional[List[str]]:
    if not text:
        return None
    from neurokit.cards import parse_ranges

    if all(part.strip().replace("-", "").isdigit() for part in text.split(",")):
        return [f"S{s:03d}" for s in _run(parse_ranges, text)]
    return [s.strip() for s in text.split(",") if s.strip()]


def metrics_table(title: str, metrics: dict) -> Table:
    t = Table(title=title)
    t.add_column("metric")
    t.add_column("value", justify="right")
    for k, v in metrics.items():
        if isinstance(v, float):
            t.add_row(k, f"{v:.4f}")
    return t


# ------------------------------------------------------------------------------------------- cards
@cards_app.command("list", cls=NeuroCommand)
def cards_list() -> None:
    """List the packaged data cards."""
    from neurokit.cards import list_cards, load_card

    cards = [load_card(n) for n in list_cards()]
    t = Table(title="data cards")
    # names and tasks are what users type: those columns are as wide as their longest entry, never cut
    t.add_column("name", no_wrap=True, min_width=max(len(c.name) for c in cards))
    t.add_column("modality")
    t.add_column("title", overflow="fold")
    t.add_column("tasks", no_wrap=False, min_width=max(len(task) for c in cards for task in c.tasks) + 1)
    t.add_column("licence", overflow="fold")
    for c in cards:
        t.add_row(escape(c.name), c.modality, escape(str(c.raw.get("title", ""))), escape(", ".join(c.tasks)),
                  escape(str(c.raw.get("licence", ""))))
    console.print(t, crop=False)


@cards_app.command("show", cls=NeuroCommand)
def cards_show(name: str = typer.Argument(..., help="Card name (see `neuro cards list`) or path to a .yaml card.")) -> None:
    """Print one data card."""
    from neurokit.cards import load_card

    c = _run(load_card, name)
    console.print(c.path.read_text() if c.path else json.dumps(c.raw, indent=2), markup=False, highlight=False,
                  soft_wrap=True)


# ----------------------------------------------------------------------------------------- prepare
@app.command(cls=NeuroCommand)
def prepare(
    card: Optional[str] = typer.Argument(None, show_default="none", help="Data card name or path (`neuro cards list`); not needed with --bids."),
    out: Path = typer.Option(..., "--out", "-o", help="Patch store to write (.h5)."),
    bids: Optional[Path] = typer.Option(None, "--bids", show_default="none", help="Read this BIDS dataset directly through mne-bids (--task is then its BIDS task label)."),
    events: Optional[str] = typer.Option(None, show_default="all trial types", help="With --bids: the events.tsv trial types to label, e.g. 'T1,T2'."),
    label_column: Optional[str] = typer.Option(None, show_default="none", help="With --bids: label every window with this participants.tsv column (e.g. group)."),
    data_root: Optional[Path] = typer.Option(None, "--data-root", show_default="none", envvar="NEUROKIT_DATA", help="Folder the card's file layout is relative to (env NEUROKIT_DATA)."),
    task: Optional[str] = typer.Option(None, show_default="none", help="Card task (labels, splits); default: the card's first task."),
    files: Optional[List[Path]] = typer.Option(None, "--file", "-f", show_default="none", help="Explicit recording(s) instead of the card's layout (repeatable)."),
    subjects: Optional[str] = typer.Option(None, show_default="none", help="Subject numbers to include, e.g. '1-10' (default: all in the card's splits)."),
    channels: Optional[str] = typer.Option(None, show_default="none", help="Channel subset: a card channel set (e.g. sensorimotor) or 'C3,Cz,C4' (default: the recipe's)."),
    overwrite: bool = typer.Option(False, help="Replace an existing store."),
    skip_bad: bool = typer.Option(False, help="Skip unreadable/too-short files with a warning instead of stopping."),
    encoding: Optional[str] = typer.Option(None, show_default="card's, else UTF-8 (Latin-1 fallback)", help="EEG cards: text encoding of EDF/BDF annotations (e.g. latin1)."),
    units: Optional[str] = typer.Option(None, show_default="card's, else µV with a warning", help="EEG cards: unit (V, mV, uV, nV) of channels whose unit is blank or unknown."),
    mesh: Optional[str] = typer.Option(None, show_default="from the vertex count", help="Surface cards: the data's mesh (ico6: already on the template, no resampling; fs_LR_59k: HCP 7T 1.6 mm, with --sphere-l/--sphere-r; any other name: a mesh of your own, with --sphere-l/--sphere-r)."),
    hemi: Optional[str] = typer.Option(None, show_default="all in the file", help="Surface cards: only this hemisphere (L or R)."),
    sphere_l: Optional[Path] = typer.Option(None, "--sphere-l", show_default="card/packaged", help="Surface cards: registered sphere of the left hemisphere's mesh."),
    sphere_r: Optional[Path] = typer.Option(None, "--sphere-r", show_default="card/packaged", help="Surface cards: registered sphere of the right hemisphere's mesh."),
    window_s: Optional[float] = typer.Option(None, "--window-s", show_default="card", help="EEG cards: window (sample) length in seconds, a multiple of 1 s."),
    crop_start: Optional[float] = typer.Option(None, "--crop-start", show_default="card", help="EEG cards: seconds dropped at the start of each recording."),
    crop_end: Optional[float] = typer.Option(None, "--crop-end", show_default="card", help="EEG cards: seconds dropped at the end of each recording."),
    line_freq: Optional[float] = typer.Option(None, "--line-freq", show_default="card", help="EEG cards: power-line frequency to notch, Hz (50 or 60; 0: no notch)."),
    min_duration: Optional[float] = typer.Option(None, "--min-duration", show_default="card", help="EEG cards: recordings shorter than this many seconds are dropped (0: keep all)."),
    n_jobs: int = typer.Option(1, "--n-jobs", "-j", help="EEG: recordings processed by N local worker processes (-1: every core); the store is the same."),
    scheduler: Optional[str] = typer.Option(None, "--scheduler", show_default="$DASK_SCHEDULER_ADDRESS", help="EEG: Dask scheduler address (tcp://host:8786) to process the recordings on; default the DASK_SCHEDULER_ADDRESS environment variable."),
    shards: bool = typer.Option(False, "--shards", show_default="off", help="Write OUT as a shard set (a folder: one store per recording, EEG file or surface run, + index.json) that keeps finished recordings if the run stops (full disk, bad file, kill)."),
    resume: bool = typer.Option(False, "--resume", show_default="off", help="With --shards: add only the recordings the set at OUT lacks."),
    stream_above: Optional[float] = typer.Option(None, "--stream-above", show_default="256", help="EEG: recordings larger than this many MiB of float64 samples are processed chunk by chunk in bounded memory (scratch files beside OUT); same windows."),
    verbose: bool = typer.Option(False, "--verbose", "-v", show_default="off", help="Log each step."),
) -> None:
    """Read recordings, preprocess them with the card's recipe and write an HDF5 patch store."""
    _setup_logging(verbose)
    from neurokit.cards import parse_ranges
    from neurokit.pipelines.prepare import prepare as run_prepare

    subj = _run(parse_ranges, subjects) if subjects else None
    if (card is None) == (bids is None):
        _fail(ValueError("give a data card, or --bids ROOT --task TASK (not both)"))
    if bids is not None:
        from neurokit.cards import bids_card

        if not task:
            _fail(ValueError("--bids needs --task (the BIDS task label, as in sub-01_task-LABEL_eeg.edf)"))
        card = _run(bids_card, bids, task, events=[e.strip() for e in events.split(",")] if events else None,
                    label_column=label_column)
        data_root = bids
    elif events or label_column:
        _fail(ValueError("--events and --label-column go with --bids (a card's task defines its labels)"))
    kwargs = {"skip_bad": skip_bad} if skip_bad else {}
    sph = {h: p.expanduser().resolve() for h, p in (("L", sphere_l), ("R", sphere_r)) if p is not None}
    kwargs.update({k: v for k, v in (("mesh", mesh), ("hemi", hemi), ("spheres", sph or None), ("encoding", encoding),
                                     ("units", units)) if v is not None})
    kwargs.update({k: v for k, v in (("n_jobs", n_jobs if n_jobs != 1 else None), ("scheduler", scheduler),
                                     ("shards", shards or None), ("resume", resume or None),
                                     ("stream_above_mb", stream_above)) if v is not None})
    kwargs.update({k: v for k, v in (("window_s", window_s), ("crop_start_s", crop_start), ("crop_end_s", crop_end),
                                     ("line_freq", line_freq), ("min_duration_s", min_duration)) if v is not None})
    path = _run(run_prepare, card, out, data_root=data_root, task=task, files=files or None, subjects=subj, channels=channels, overwrite=overwrite, **kwargs)
    from neurokit.data.dataset import PatchDataset

    s = PatchDataset(path)
    console.print(f"[green]wrote[/] {path}: {len(s)} samples of shape {s.sample_shape} ({s.info.modality}, task {s.info.task})")


# ---------------------------------------------------------------------------------------- pretrain
@app.command(cls=NeuroCommand)
def pretrain(
    ctx: typer.Context,
    stores: List[Path] = typer.Argument(..., help="Patch store(s) to pretrain on."),
    out: Path = typer.Option(Path("runs/pretrain"), "--out", "-o", help="Output folder (checkpoints, metrics.jsonl)."),
    model: str = typer.Option("cbramod", help="Model family: cbramod (EEG), sit (surface fMRI, vsMAE) or clip (fMRI-video-audio, needs --stimuli)."),
    epochs: int = typer.Option(40, help="Epochs (CBraMod: 40)."),
    max_steps: Optional[int] = typer.Option(None, show_default="none", help="Stop after this many optimiser steps (schedule spans them)."),
    batch_size: int = typer.Option(128, help="Samples per step and process (CBraMod: 128; capped to the store's size)."),
    lr: Optional[float] = typer.Option(None, show_default="cbramod 5e-4, sit 3e-4", help="Peak learning rate (AdamW)."),
    min_lr: Optional[float] = typer.Option(None, show_default="cbramod 1e-5", help="Final learning rate of the per-step cosine schedule (setting it turns the cosine schedule on)."),
    weight_decay: Optional[float] = typer.Option(None, show_default="cbramod 0.05, sit 0.01", help="AdamW weight decay."),
    clip_grad: Optional[float] = typer.Option(None, show_default="cbramod 1.0, sit 0 (off)", help="Gradient-norm clip (0 = off)."),
    schedule: Optional[str] = typer.Option(None, show_default="cbramod cosine, sit constant", help="Learning-rate schedule: cosine or constant."),
    n_layers: Optional[int] = typer.Option(None, show_default="none", help="Override the number of transformer layers (CBraMod: 12)."),
    model_size: Optional[str] = typer.Option(None, show_default="none", help="SiT size: tiny, small or base."),
    mask_ratio: Optional[float] = typer.Option(None, show_default="none", help="SiT video-MAE tube-mask ratio (default 0.75)."),
    split: str = typer.Option("train", help="Card split to pretrain on: train (validation and test subjects stay unseen), val, test or all."),
    subjects: Optional[str] = typer.Option(None, show_default="none", help="Only these subjects, e.g. '1-6' or 'S001,S002' (overrides --split)."),
    stimuli: Optional[List[Path]] = typer.Option(None, "--stimuli", show_default="none", help="clip: stimulus store(s) from `neuro embed-stimuli`, one per run (repeatable)."),
    lag: Optional[float] = typer.Option(None, "--lag", show_default="6", help="clip: hemodynamic lag in s (fMRI frames [t, t+1, t+2] pair with the window starting at t - lag)."),
    segments: Optional[str] = typer.Option(None, show_default="all", help="clip: all, first_half or second_half of each movie clip (unseen-segments split)."),
    seed: int = typer.Option(0, help="Random seed (sampling, masks, initialisation)."),
    device: str = typer.Option("auto", help="auto, cpu, cuda or cuda:K (under torchrun: one GPU per process)."),
    num_workers: int = typer.Option(0, help="DataLoader worker processes."),
    ckpt_every: int = typer.Option(0, "--checkpoint-every", "--ckpt-every", help="Also write last.pt every N steps (0: at each epoch end only)."),
    resume: bool = typer.Option(False, "--resume", show_default="off", help="Continue from OUT/last.pt with its settings (options given again change them; more --epochs/--max-steps extend it)."),
    overwrite: bool = typer.Option(False, "--overwrite", show_default="off", help="Start again in an OUT that holds a run."),
    progress: bool = typer.Option(True, help="Show a progress bar."),
    verbose: bool = typer.Option(False, "--verbose", "-v", show_default="off", help="Log each step."),
) -> None:
    """Self-supervised pretraining (CBraMod masked-patch reconstruction; SiT video-MAE).

    Several GPUs or nodes: torchrun --nproc_per_node=G -m neurokit pretrain STORE ...
    """
    _setup_logging(verbose)
    from neurokit.pipelines.pretrain import (
        PretrainConfig,
        check_pretrain_options,
        resume_config,
        select_pretrain_data,
    )
    from neurokit.pipelines.pretrain import pretrain as run

    kw = {k: v for k, v in (("n_layers", n_layers), ("size", model_size), ("mask_ratio", mask_ratio)) if v is not None}
    for k, v in (("stimuli", [str(p) for p in stimuli or []]), ("lag_s", lag), ("segments", segments)):
        if v is not None and v != []:
            kw[k] = v
    optim = {k: v for k, v in dict(lr=lr, min_lr=min_lr, weight_decay=weight_decay, clip_grad=clip_grad,
                                   schedule=schedule).items() if v is not None}
    opts = dict(model=model, model_kwargs=kw, epochs=epochs, max_steps=max_steps, batch_size=batch_size, optim=optim,
                seed=seed, device=device, num_workers=num_workers, ckpt_every=ckpt_every,
                split=None if split == "all" else split, subjects=_subjects(subjects), progress=progress)
    _run(check_pretrain_options, None, resume=resume, overwrite=overwrite)
    if resume:  # keep the run's settings; change only what the user gives again
        given = {k for k in ctx.params if _given(ctx, k)}
        ch = {k: v for k, v in opts.items() if k in given or k in ("device", "progress", "num_workers")}
        for k, v in (("optim", optim), ("model_kwargs", kw)):
            if v:
                ch[k] = v
        cfg = _run(resume_config, out, **ch)
    else:
        cfg = _run(PretrainConfig, **opts)
    _run(check_pretrain_options, cfg, resume=resume, overwrite=overwrite, given=_given_flags(ctx))
    if _is_main_rank():
        _, used = _run(select_pretrain_data, list(stores), cfg)
        console.print(f"pretraining on {used}")
    res = _run(run, list(stores), out, cfg, resume=resume, overwrite=overwrite)
    if _is_main_rank():
        speed = f" ({res['samples_per_s']:.1f} samples/s)" if res["steps_run"] else " (nothing left to run)"
        console.print(
            f"[green]pretrained[/] {res['steps']} steps: loss {res['loss_first']:.4f} → {res['loss_last']:.4f}"
            f"{speed}; checkpoint {res['checkpoint']}"
        )


def _given(ctx, name: str) -> bool:
    """Whether the user gave option ``name`` (on the command line or through its environment variable)."""
    src = ctx.get_parameter_source(name)
    return src is not None and src.name in ("COMMANDLINE", "ENVIRONMENT")


def _given_flags(ctx) -> set[str]:
    """The options the user gave, by their first flag (``--folds``, ``--task``…)."""
    return {str(prm.opts[0]) for prm in ctx.command.params
            if getattr(prm, "opts", None) and str(prm.opts[0]).startswith("-") and _given(ctx, prm.name)}


# ---------------------------------------------------------------------------------------- finetune
@app.command(cls=NeuroCommand)
def finetune(
    ctx: typer.Context,
    stores: List[Path] = typer.Argument(..., help="Labelled patch store(s)."),
    out: Path = typer.Option(Path("runs/finetune"), "--out", "-o", help="Output folder (best.pt, last.pt, report.json)."),
    init: Optional[str] = typer.Option(None, show_default="none", help="`neuro pretrain` checkpoint, released CBraMod state_dict, or Hub weights hub:ORG/NAME[@REVISION] (e.g. hub:weighting666/CBraMod; default: from scratch). Its model family is the run's."),
    allow_partial_init: bool = typer.Option(False, "--allow-partial-init", show_default="off", help="Load an --init file that covers only part of the backbone (the rest stays at random initial values)."),
    model: Optional[str] = typer.Option(None, show_default="the --init checkpoint's, else cbramod", help="Model family of a from-scratch backbone: cbramod (EEG) or sit (surface fMRI)."),
    head: str = typer.Option("auto", help="Head: all_patch_reps (flatten all tokens), avgpool, auto (the model's default: all_patch_reps for cbramod, avgpool for sit), or m4oe (several --task at once)."),
    epochs: int = typer.Option(50, help="Epochs (CBraMod: 50)."),
    batch_size: int = typer.Option(64, help="Batch size (CBraMod: 64)."),
    lr_backbone: float = typer.Option(1e-4, help="Backbone learning rate."),
    lr_head: float = typer.Option(5e-4, help="Head learning rate."),
    weight_decay: float = typer.Option(0.05, help="AdamW weight decay."),
    label_smoothing: float = typer.Option(0.1, help="Label smoothing (multi-class)."),
    frozen: bool = typer.Option(False, "--frozen/--no-frozen", help="Freeze the backbone weights (only the head trains; its dropout stays on in training, as in the CBraMod release)."),
    n_layers: Optional[int] = typer.Option(None, show_default="none", help="Layers of a from-scratch backbone."),
    train_subjects: Optional[str] = typer.Option(None, show_default="none", help="Override the card's train subjects, e.g. '1-6' (with --val-subjects and --test-subjects; single-task heads, --scheme card)."),
    val_subjects: Optional[str] = typer.Option(None, show_default="none", help="Override the card's validation subjects."),
    test_subjects: Optional[str] = typer.Option(None, show_default="none", help="Override the card's test subjects."),
    augment: Optional[str] = typer.Option(None, show_default="off", help="EEG augmentation, e.g. 'time_shift=0.1,scale=0.1,noise=5,channel_dropout=0.1,freq_shift=1,mixup=0.2,p=0.5' (seconds, fraction, µV, probability, Hz, Beta α, per-transform probability; --head m4oe: all but mixup)."),
    plots: bool = typer.Option(False, "--plots", show_default="off", help="Also draw the report's figures into OUT/plots (see `neuro plot-report`; --head m4oe: the modality contributions)."),
    scheme: str = typer.Option("card", help="Evaluation scheme: card (the card's splits), loso (leave one subject out), kfold-subject, cross-session, within-session (single-task heads)."),
    folds: int = typer.Option(5, help="k of the kfold-subject and within-session schemes."),
    seed: int = typer.Option(0, help="Random seed."),
    device: str = typer.Option("auto", help="auto, cpu, cuda or cuda:K."),
    num_workers: int = typer.Option(0, help="DataLoader worker processes."),
    overwrite: bool = typer.Option(False, "--overwrite", show_default="off", help="Replace an earlier run in OUT."),
    progress: bool = typer.Option(True, help="Show a progress bar."),
    verbose: bool = typer.Option(False, "--verbose", "-v", show_default="off", help="Log each step."),
    task: Optional[List[str]] = typer.Option(None, "--task", show_default="none", help="--head m4oe: a task CARD:TASK (repeatable; one store per task)."),
    modality: Optional[List[str]] = typer.Option(None, "--modality", show_default="the cards' modalities", help="--head m4oe: NAME=CH,CH or a card modality NAME (repeatable)."),
    m4oe_preset: str = typer.Option("small", "--m4oe-preset", help="--head m4oe: expert counts, small (CPU) or paper (32/128/16)."),
    alpha: float = typer.Option(0.1, help="--head m4oe: weight of the -α·I(M;E|T) term."),
    focal_gamma: Optional[float] = typer.Option(None, "--focal-gamma", show_default="none (cross-entropy)", help="--head m4oe: focal loss γ (release: 2)."),
    resume: bool = typer.Option(False, "--resume", show_default="off", help="Continue the run in OUT from its last.pt (written each epoch) up to --epochs, with the same settings (--scheme card)."),
    baselines: bool = typer.Option(True, "--baselines/--no-baselines", help="Score the classical baselines on the same split."),
) -> None:
    """Fine-tune on a labelled store; select on validation; score the test split once; print metrics.

    With --head m4oe and several --task CARD:TASK: one backbone, an M4oE mixture-of-experts head, per-task
    metrics and modality contributions (routing shares, not causal importance). Options that do not apply to
    the head are refused, never ignored.
    """
    _setup_logging(verbose)
    from neurokit.pipelines.finetune import FinetuneConfig, check_finetune_options
    from neurokit.pipelines.finetune import finetune as run

    splits = None
    if train_subjects or val_subjects or test_subjects:
        if not (train_subjects and val_subjects and test_subjects):
            _fail(ValueError("give all three of --train-subjects, --val-subjects and --test-subjects"))
        splits = {"train": _subjects(train_subjects), "val": _subjects(val_subjects), "test": _subjects(test_subjects)}
    kw = {"n_layers": n_layers} if n_layers is not None else {}
    cfg = _run(FinetuneConfig, model=model, model_kwargs=kw, head="auto" if head == "m4oe" else head, epochs=epochs,
               batch_size=batch_size, lr_backbone=lr_backbone, lr_head=lr_head, weight_decay=weight_decay,
               label_smoothing=label_smoothing, frozen=frozen, seed=seed, device=device, num_workers=num_workers,
               progress=progress, splits=splits, augment=augment, baselines=baselines,
               allow_partial_init=allow_partial_init)
    given = _given_flags(ctx)
    if task and head != "m4oe":
        _fail(ValueError(f"--task is for --head m4oe (got --head {head})"))
    _run(check_finetune_options, cfg, head=head, scheme=scheme, resume=resume, overwrite=overwrite, given=given)
    if head == "m4oe":
        from neurokit.pipelines.multitask import finetune_m4oe

        rep = _run(finetune_m4oe, list(stores), out, task or [], cfg, init=init, preset=m4oe_preset, alpha=alpha,
                   focal_gamma=focal_gamma, modalities=modality, baselines=baselines, overwrite=overwrite, resume=resume)
        print_m4oe_report(rep, out)
        if plots:
            from neurokit.plotting import plot_contributions

            path = _run(plot_contributions, rep, out / "plots" / "contributions.png")
            console.print(f"figures: {path}")
        return
    rep = _run(run, list(stores), out, cfg, init=init, overwrite=overwrite, scheme=scheme, n_folds=folds, resume=resume)
    if "folds" in rep:
        print_scheme_report(rep, out)
    else:
        print_report(rep, out)
    if plots:
        from neurokit.plotting.report import plot_report as draw

        files = _run(draw, out, out / "plots")
        console.print(f"figures: {', '.join(str(p) for p in files.values())}")


def print_report(rep: dict, out: Path) -> None:
    sp = ", ".join(f"{k}: {len(next(iter(v.values())))} {rep['split_by']}(s)" for k, v in rep["splits"].items())
    task = f"task {rep['task']} " if rep.get("task") else ""
    classes = f", classes {rep['label_names']}" if rep.get("label_names") else ""
    if rep.get("init_weights"):
        w = rep["init_weights"]
        console.print(f"init: loaded {w['loaded']}/{w['total']} backbone tensors from {rep['init']}"
                      + ("" if w["complete"] else f" ([yellow]partial[/]: {len(w['missing'])} missing, {len(w['unexpected'])} unexpected)"))
    console.print(f"{task}({rep['kind']}{escape(classes)}); split by {rep['split_by']} — {sp}")
    console.print(f"selected epoch {rep['best_epoch']} on validation {rep['selection_metric']} = {rep['val_best']:.4f}")
    console.print(metrics_table(f"{_title(rep)}: test metrics ({rep['n_samples']['test']} samples)", rep["test"]))
    if rep.get("baselines") or rep.get("chance"):
        console.print(comparison_table("test split: model vs classical baselines vs chance", {"model": rep}, _title(rep)))
    console.print(f"report: {out / 'report.json'}; checkpoint: {out / 'best.pt'}")


COMPARE = ("balanced_accuracy", "cohen_kappa", "auroc", "r2")


def comparison_table(title: str, runs: dict, label: str | None = None) -> Table:
    """One row per (task, method): the fine-tuned model, each baseline, chance; test metrics."""
    t = Table(title=title)
    t.add_column("task", overflow="fold")
    t.add_column("method")
    for m in COMPARE:
        t.add_column(m, justify="right")

    def row(task, name, metrics):
        t.add_row(task, name, *(f"{metrics[m]:.3f}" if isinstance(metrics.get(m), float) else "" for m in COMPARE))

    for task, rep in runs.items():  # the task named once, on its first row
        row(task, label or _title(rep), rep["test"])
        for b, r in (rep.get("baselines") or {}).items():
            if "test" in r:
                row("", b, r["test"])
            else:
                t.add_row("", b, f"failed: {r.get('error', '')}"[:60], *[""] * (len(COMPARE) - 1))
        if rep.get("chance"):
            row("", "chance", rep["chance"])
        t.add_section()
    return t


def _title(rep: dict) -> str:
    """The display name of a report's model family (reports from before it was recorded: CBraMod)."""
    if rep.get("model_title"):
        return rep["model_title"]
    from neurokit.models.registry import get_model_spec

    return get_model_spec(rep.get("model") or "cbramod").title


def print_m4oe_report(rep: dict, out: Path) -> None:
    title = _title(rep)
    console.print(f"{title} + M4oE head over {', '.join(rep['tasks'])}; selected epoch {rep['best_epoch']} "
                  f"(validation {rep['selection_metric']} = {rep['val_best']:.4f})")
    console.print(comparison_table(f"test split per task: {title} + M4oE vs classical baselines vs chance", rep["tasks"],
                                   f"{title}+M4oE"))
    console.print(contributions_table(rep["tasks"]))
    console.print(f"report: {out / 'report.json'}; checkpoint: {out / 'best.pt'} (resume: {out / 'last.pt'})")


def contributions_table(tasks: dict) -> Table:
    t = Table(title="modality contributions (mean share of MToE routing mass; not causal importance)")
    t.add_column("task", overflow="fold")
    t.add_column("modality shares")
    for name, r in tasks.items():
        mc = r["modality_contributions"]
        t.add_row(name, ", ".join(f"{m} {v:.3f}" for m, v in mc["mean"].items()))
    return t


def print_scheme_report(rep: dict, out: Path | None = None) -> None:
    """Per-fold table (MOABB's subject/session/score/time, and the test metrics) and mean ± std."""
    names = list(rep["folds"][0]["test"])
    t = Table(title=f"{rep['scheme']}: {len(rep['folds'])} folds")
    for col in ("fold", "subject", "session", rep["folds"][0]["score_metric"], *names):
        t.add_column(col, justify="right" if col not in ("fold", "subject", "session") else "left")
    for f in rep["folds"]:
        t.add_row(f["fold"], f["subject"], f["session"], f"{f['score']:.4f}", *(f"{f['test'].get(k, float('nan')):.4f}" for k in names))
    m, s = rep["mean"], rep["std"]
    t.add_row("mean ± std", "", "", f"{m['score']:.4f} ± {s['score']:.4f}", *(f"{m[k]:.4f} ± {s[k]:.4f}" for k in names))
    console.print(t)
    if out is not None:
        console.print(f"report: {out / 'report.json'}; MOABB-style results: {out / 'results.csv'}")


# ---------------------------------------------------------------------------------------- evaluate
@app.command(cls=NeuroCommand)
def evaluate(
    checkpoint: Path = typer.Argument(..., help="`neuro finetune` checkpoint (best.pt), or the folder of a `neuro finetune --scheme` run (every fold scored on its test samples)."),
    stores: List[Path] = typer.Argument(..., help="Labelled patch store(s)."),
    split: str = typer.Option("test", help="Split to score, as the checkpoint was fine-tuned: train, val, test, or all."),
    subjects: Optional[str] = typer.Option(None, show_default="none", help="Score these subjects instead of a split."),
    allow_seen: bool = typer.Option(False, "--allow-seen", show_default="off", help="Allow scoring subjects the model was trained or selected on (with --subjects or --split all)."),
    json_out: Optional[Path] = typer.Option(None, "--json", show_default="none", help="Also write the metrics to this JSON file."),
    device: str = typer.Option("auto", help="auto, cpu, cuda or cuda:K."),
) -> None:
    """Score a fine-tuned checkpoint on a store and print the metrics table."""
    _setup_logging(False)
    from neurokit.pipelines.evaluate import evaluate as run

    if checkpoint.is_dir():
        from neurokit.evaluation.schemes import evaluate_scheme

        res = _run(evaluate_scheme, checkpoint, list(stores), device=device)
        print_scheme_report(res)
        if json_out:
            json_out.parent.mkdir(parents=True, exist_ok=True)
            json_out.write_text(json.dumps(res, indent=2))
        return
    if split not in ("train", "val", "test", "all"):
        _fail(ValueError(f"--split {split}: choose train, val, test or all"))
    subj = _subjects(subjects)
    res = _run(run, checkpoint, list(stores), split=None if split == "all" else split, subjects=subj, device=device,
               allow_seen=allow_seen)
    what = f"subjects {', '.join(subj)}" if subj is not None else f"{split} split"
    if "tasks" in res:  # M4oE: one table per task, then the contributions
        for name, r in res["tasks"].items():
            console.print(metrics_table(f"{name}: {what} metrics ({r['n_samples']} samples)", r))
        console.print(contributions_table(res["tasks"]))
    else:
        seen = f"; [yellow]seen in training/selection: {', '.join(res['seen'])}[/]" if res.get("seen") else ""
        console.print(metrics_table(f"{what} metrics ({res['n_samples']} samples{seen})", res))
    if json_out:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps(res, indent=2))


# ------------------------------------------------------------------------------------- plot-report
@app.command("plot-report")
def plot_report(
    report: Path = typer.Argument(..., help="A `neuro finetune` run folder (or its report.json), single split or --scheme."),
    out: Path = typer.Option(Path("plots"), "--out", "-o", help="Folder for the PNG files."),
) -> None:
    """Draw a run's confusion matrix, ROC and PR curves, per-fold/per-subject scores and training curves."""
    _setup_logging(False)
    from neurokit.plotting.report import plot_report as run

    files = _run(run, report, out)
    for name, p in files.items():
        console.print(f"[green]wrote[/] {p}")


# ----------------------------------------------------------------------------- stimulus retrieval
@app.command("embed-stimuli")
def embed_stimuli_cmd(
    movie: Path = typer.Argument(..., help="Movie file (mp4, mkv, …; read with PyAV/FFmpeg)."),
    out: Path = typer.Option(..., "--out", "-o", help="Stimulus store to write (.h5)."),
    audio: Optional[Path] = typer.Option(None, show_default="the movie's audio track", help="Separate sound file (wav, flac, …)."),
    clips: Optional[Path] = typer.Option(None, show_default="one clip, no rest", help="JSON file [[onset_s, offset_s], ...] of the clips; other windows are rest."),
    run: Optional[str] = typer.Option(None, show_default="from the file name (run-1, MOVIE1)", help="Run id the store pairs with (the fMRI store's run)."),
    video_encoder: str = typer.Option("ViT-B-32", help="open_clip model for frames, or 'tiny' (random init)."),
    video_pretrained: Optional[str] = typer.Option(None, show_default="none (random init)", help="open_clip pretrained tag (e.g. laion2b_s34b_b79k; needs a network once) or a local weights file."),
    audio_encoder: str = typer.Option("ViT-B-32", help="open_clip vision tower for log-mel spectrograms (AST-style), or 'tiny'."),
    audio_pretrained: Optional[str] = typer.Option(None, show_default="none (random init)", help="open_clip pretrained tag or a local weights file."),
    window: float = typer.Option(3.0, help="Window length in s."),
    hop: float = typer.Option(1.0, help="Hop between windows in s (= the fMRI TR)."),
    every: int = typer.Option(1, help="Embed one frame in EVERY (1: all frames)."),
    overwrite: bool = typer.Option(False, "--overwrite", show_default="off", help="Replace an existing store."),
    progress: bool = typer.Option(True, help="Show progress bars."),
) -> None:
    """Embed a movie's video and audio (3-s windows, 1-s hop) with frozen open_clip towers into a stimulus store."""
    _setup_logging(False)
    from neurokit.stimuli.store import (
        StimulusEncoders,
        StimulusStore,
        StimulusWindows,
        embed_stimuli,
    )

    clip_list = None
    if clips is not None:
        try:
            clip_list = json.loads(clips.read_text())
        except (OSError, ValueError) as exc:
            _fail(ValueError(f"{clips}: not a JSON list of [onset_s, offset_s] pairs ({exc})"))
    encoders = StimulusEncoders(video_encoder, video_pretrained, audio_encoder, audio_pretrained)
    windows = _run(StimulusWindows, window_s=window, hop_s=hop, clips=clip_list, every=every)
    path = _run(embed_stimuli, movie, out, audio=audio, encoders=encoders, windows=windows, run=run,
                overwrite=overwrite, progress=progress)
    st = StimulusStore(path)
    console.print(f"[green]wrote[/] {path}: run {st.run!r}, {len(st)} windows ({int(st.rest.sum())} rest), "
                  f"video {st.video.shape[1]}-d, audio {st.audio.shape[1]}-d")


@app.command()
def retrieve(
    checkpoint: Path = typer.Argument(..., help="`neuro pretrain --model clip` checkpoint (last.pt)."),
    fmri: List[Path] = typer.Option(..., "--fmri", help="Surface store(s) with the test runs (repeatable)."),
    stimuli: List[Path] = typer.Option(..., "--stimuli", help="Stimulus store(s), one per run (repeatable)."),
    subjects: Optional[str] = typer.Option(None, show_default="all", help="Test subjects, e.g. 'sim05,sim06' (unseen subjects)."),
    segments: str = typer.Option("all", help="all, or second_half for the unseen-segments test (train with --segments first_half)."),
    queries: int = typer.Option(100, help="Queries per subject x run x hemisphere."),
    negatives: int = typer.Option(32, help="Negatives per pool (pool = 1 + negatives)."),
    exclude: float = typer.Option(3.0, help="Negatives lie more than this many s from the true window."),
    shuffle: bool = typer.Option(False, "--shuffle", show_default="off", help="Control: stimulus windows shuffled against the fMRI (expect chance)."),
    seed: int = typer.Option(0, help="Seed of the query and negative draws."),
    json_out: Optional[Path] = typer.Option(None, "--json", show_default="none", help="Write the JSON report here."),
    device: str = typer.Option("auto", help="auto, cpu, cuda or cuda:K."),
) -> None:
    """Which clip was this person watching? Top-1/5/10 retrieval of video and audio windows from fMRI, beside chance."""
    _setup_logging(False)
    from neurokit.pipelines.retrieval import retrieve as run

    subj = [s.strip() for s in subjects.split(",") if s.strip()] if subjects else None
    rep = _run(run, checkpoint, list(fmri), list(stimuli), subjects=subj, segments=segments, n_queries=queries,
               n_negatives=negatives, exclude_s=exclude, shuffle=shuffle, seed=seed, device=device, out=json_out)
    t = Table(title=f"retrieval: {rep['n_units']} subject x run x hemisphere, {rep['n_queries']} queries, pool {rep['pool_size']}"
                    + (" (SHUFFLED control)" if rep["shuffled"] else ""))
    t.add_column("")
    for k in ("top1", "top5", "top10"):
        t.add_column(k, justify="right")
    for m in ("video", "audio"):
        t.add_row(m, *(f"{100 * rep[m][k]['mean']:.1f} ± {100 * rep[m][k]['std']:.1f} %" for k in ("top1", "top5", "top10")))
    t.add_row("chance", *(f"{100 * rep['chance'][k]:.1f} %" for k in ("top1", "top5", "top10")))
    console.print(t)
    if json_out:
        console.print(f"report: {json_out}")


# ---------------------------------------------------------------------------------------- baseline
@app.command()
def baseline(
    stores: List[Path] = typer.Argument(..., help="Labelled patch store(s)."),
    method: Optional[List[str]] = typer.Option(None, "--method", show_default="those that fit the channel count", help="csp_lda, riemann_lr or bandpower_lr (repeatable)."),
    json_out: Optional[Path] = typer.Option(None, "--json", show_default="none", help="Also write the results to this JSON file."),
    seed: int = typer.Option(0, help="Random seed."),
) -> None:
    """Classical baselines (CSP+LDA, Riemannian tangent space + LR, band power + LR) on the card's split."""
    _setup_logging(False)
    from neurokit.evaluation.baselines import baseline as run

    res = _run(run, list(stores), methods=method or None, seed=seed)
    t = Table(title=f"{res['card']}:{res['task']} ({res['kind']}), test split ({res['n_samples']['test']} samples)")
    t.add_column("method")
    for m in COMPARE:
        t.add_column(m, justify="right")
    for name, r in list(res["baselines"].items()) + [("chance", {"test": res["chance"]})]:
        met = r.get("test") or {}
        t.add_row(name, *(f"{met[m]:.3f}" if isinstance(met.get(m), float) else r.get("error", "")[:40] if i == 0 and "error" in r else ""
                          for i, m in enumerate(COMPARE)))
    console.print(t)
    if json_out:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps(res, indent=2, default=float))


# ------------------------------------------------------------------------------- plot-contributions
@app.command("plot-contributions")
def plot_contributions(
    report: Path = typer.Argument(..., help="report.json of `neuro finetune --head m4oe` (or `neuro evaluate --json`)."),
    out: Path = typer.Option(Path("contributions.png"), "--out", "-o", help="PNG to write."),
) -> None:
    """Draw the modality contributions per task: dataset mean and the per-sample spread."""
    _setup_logging(False)
    from neurokit.plotting import plot_contributions as run

    res = _run(run, report, out)
    console.print(f"[green]wrote[/] {res}")


# ------------------------------------------------------------------------------------ plot-surface
@app.command("plot-surface", cls=NeuroCommand)
def plot_surface(
    path: Optional[Path] = typer.Argument(None, show_default="none", help="Surface data file (CIFTI-2, GIFTI, MGH/MGZ, curv); not needed with --patches."),
    out: Path = typer.Option(Path("surface.png"), "--out", "-o", help="PNG to write."),
    hemi: Optional[str] = typer.Option(None, show_default="none", help="Hemisphere L or R (required for CIFTI files)."),
    frame: int = typer.Option(0, help="Frame to show."),
    surf_mesh: Optional[Path] = typer.Option(None, "--surf", show_default="none", help="Inflated surface of the data's mesh (default: nilearn's fsaverage5 for fsaverage5 data)."),
    patches: Optional[str] = typer.Option(None, show_default="none", help="Show this patch grid (e.g. ico2) on the template instead of the data."),
    allow_nan: bool = typer.Option(False, "--allow-nan", show_default="off", help="Draw files holding NaN/inf (shown as missing) instead of refusing them."),
) -> None:
    """Render one frame (or an icosahedral patch map) on the inflated surface and save a PNG."""
    _setup_logging(False)
    from neurokit.plotting.surface import patch_map
    from neurokit.plotting.surface import plot_surface as run

    if patches is None and path is None:
        _fail(ValueError("give a surface data file, or --patches icoK for a patch map"))
    if patches:
        res = _run(run, _run(patch_map, patches), out, hemi=hemi, title=f"{patches} patches on the ico6 template",
                   cmap="tab20", symmetric=False)
    else:
        res = _run(run, path, out, hemi=hemi, frame=frame, surf_mesh=surf_mesh, allow_nan=allow_nan)
    console.print(f"[green]wrote[/] {res}")


# -------------------------------------------------------------------------------------- quickstart
@app.command(cls=NeuroCommand)
def quickstart(
    data_root: Path = typer.Option(..., "--data-root", envvar="NEUROKIT_DATA", help="Folder holding bonn/ and MNE-eegbci-data/ (../shared/data/eeg)."),
    out: Path = typer.Option(Path("runs/quickstart"), "--out", "-o", help="Output folder (prepared stores in it are reused)."),
    pretrain_epochs: int = typer.Option(1, help="Pretraining epochs."),
    finetune_epochs: Optional[int] = typer.Option(None, show_default="2 Bonn, 3 imagery", help="Fine-tuning epochs of every task."),
    n_layers: int = typer.Option(2, help="CBraMod layers (paper: 12; small for a CPU demo)."),
    channels: str = typer.Option("sensorimotor", help="EEGMMIDB channels: a card channel set (sensorimotor: 21) or 'C3,Cz,C4'."),
    batch_size: int = typer.Option(32, help="Batch size for both stages."),
    seed: int = typer.Option(0, help="Random seed."),
    device: str = typer.Option("auto", help="auto, cpu, cuda."),
    overwrite: bool = typer.Option(False, "--overwrite", show_default="off", help="Start every stage again (default: reuse or resume the stages in OUT that match)."),
) -> None:
    """prepare → pretrain CBraMod on pooled training EEG → fine-tune Bonn seizure detection and EEGMMIDB
    left- vs right-fist imagery; print CBraMod, the classical baselines and chance per task.

    A small configuration (2 layers, few epochs) that runs on 2 CPU cores in a few minutes. Run again, it
    reuses the store and the runs in OUT that match the settings (and rebuilds a store that does not).
    """
    _setup_logging(False)
    from neurokit.pipelines.quickstart import run_quickstart

    res = _run(run_quickstart, data_root, out, pretrain_epochs=pretrain_epochs, finetune_epochs=finetune_epochs,
               n_layers=n_layers, channels=channels, batch_size=batch_size, seed=seed, device=device, overwrite=overwrite,
               say=console.print)
    console.print(comparison_table("quick start: test split per task (held-out subjects / segments)", res["tasks"]))
    console.print(f"total {res['seconds']:.0f} s; reports under {out}")


def main() -> None:  # pragma: no cover
    app(prog_name="neuro")


if __name__ == "__main__":  # pragma: no cover
    main()
