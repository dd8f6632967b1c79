"""``neuro prepare``: recordings of a data card (or files) → an HDF5 patch store."""

from __future__ import annotations

from pathlib import Path
from typing import Any, List, Optional

import typer

from neurokit.cli.common import cli_words, console, fail, run_or_exit, setup_logging


# ----------------------------------------------------------------------------------------- prepare
def prepare(
    card: Optional[str] = typer.Argument(
        None, show_default="none", help="Data card name or path (`neuro cards list`); not needed with --bids."
    ),
    out: Path = typer.Option(..., "--out", "-o", help="Patch store to write (.h5)."),
    bids: Optional[Path] = typer.Option(
        None,
        "--bids",
        show_default="none",
        help="Read this BIDS dataset directly through mne-bids (--task is then its BIDS task label).",
    ),
    events: Optional[str] = typer.Option(
        None, show_default="all trial types", help="With --bids: the events.tsv trial types to label, e.g. 'T1,T2'."
    ),
    label_column: Optional[str] = typer.Option(
        None,
        show_default="none",
        help="With --bids: label every window with this participants.tsv column (e.g. group).",
    ),
    interpolate_bads: bool = typer.Option(
        True,
        "--interpolate-bads/--no-interpolate-bads",
        help="With --bids: interpolate the channels channels.tsv marks bad (MNE spherical spline); --no-interpolate-bads leaves them marked bad.",
    ),
    drop_channels: Optional[str] = typer.Option(
        None,
        "--drop-channels",
        show_default="none",
        help="With --bids: channels to remove before the bad ones are interpolated, e.g. 'Xref,EOG1' (file labels or 10-05 names).",
    ),
    on_ch_mismatch: Optional[str] = typer.Option(
        None,
        "--on-ch-mismatch",
        show_default="raise",
        help="With --bids: a channels.tsv whose names differ from the data file's (channels renamed after mne-bids wrote them): raise, reorder (match by name) or rename (its names, by position), as mne-bids' read_raw_bids.",
    ),
    data_root: Optional[Path] = typer.Option(
        None,
        "--data-root",
        show_default="none",
        envvar="NEUROKIT_DATA",
        help="Folder the card's file layout is relative to (env NEUROKIT_DATA).",
    ),
    task: Optional[str] = typer.Option(
        None, show_default="none", help="Card task (labels, splits); default: the card's first task."
    ),
    files: Optional[List[Path]] = typer.Option(
        None,
        "--file",
        "-f",
        show_default="none",
        help="Explicit recording(s) instead of the card's layout (repeatable).",
    ),
    subjects: Optional[str] = typer.Option(
        None,
        show_default="none",
        help="Subjects to include: numbers, e.g. '1-10', or ids as the layout names them, e.g. 'aaaaaaab,chb01' (default: all in the card's splits).",
    ),
    subject_pattern: Optional[str] = typer.Option(
        None,
        "--subject-pattern",
        show_default="card's, else the BIDS sub- entity or the file name up to its first '_' or '.'",
        help="Folder cards and -f files: regular expression over the file's path under the data root whose group 'subject' is the subject id, e.g. '^(?P<subject>[^/]+)/' (the first folder).",
    ),
    channels: Optional[str] = typer.Option(
        None,
        show_default="none",
        help="Channel subset: a card channel set (e.g. sensorimotor) or 'C3,Cz,C4' (default: the recipe's).",
    ),
    overwrite: bool = typer.Option(False, help="Replace an existing store."),
    skip_bad: bool = typer.Option(
        False,
        help="Skip unreadable/too-short files (and, with --dtype float16, recordings beyond its range) with a "
        "warning instead of stopping.",
    ),
    encoding: Optional[str] = typer.Option(
        None,
        show_default="card's, else UTF-8 (Latin-1 fallback)",
        help="EEG cards: text encoding of EDF/BDF annotations (e.g. latin1).",
    ),
    allow_truncated: bool = typer.Option(
        False,
        help="EEG cards: read the part of a truncated EDF/BDF/BrainVision file that is there (with a warning) "
        "instead of refusing it.",
    ),
    units: Optional[str] = typer.Option(
        None,
        show_default="card's, else µV with a warning",
        help="EEG cards: unit (V, mV, uV, nV) of channels whose unit is blank or unknown (with --override-units: of every EEG channel).",
    ),
    override_units: bool = typer.Option(
        False,
        "--override-units",
        show_default="off",
        help="EEG cards: --units replaces the unit every EEG channel's header states (a header that says µV over samples in volts: --units V --override-units).",
    ),
    mesh: Optional[str] = typer.Option(
        None,
        show_default="from the vertex count",
        help="Surface cards: the data's mesh (ico6: already on the template, no resampling; fs_LR_59k: HCP 7T 1.6 mm, with --sphere-l/--sphere-r; any other name: a mesh of your own, with --sphere-l/--sphere-r).",
    ),
    hemi: Optional[str] = typer.Option(
        None, show_default="all in the file", help="Surface cards: only this hemisphere (L or R)."
    ),
    sphere_l: Optional[Path] = typer.Option(
        None,
        "--sphere-l",
        show_default="card/packaged",
        help="Surface cards: registered sphere of the left hemisphere's mesh.",
    ),
    sphere_r: Optional[Path] = typer.Option(
        None,
        "--sphere-r",
        show_default="card/packaged",
        help="Surface cards: registered sphere of the right hemisphere's mesh.",
    ),
    window_s: Optional[float] = typer.Option(
        None, "--window-s", show_default="card", help="EEG cards: window (sample) length in seconds, a multiple of 1 s."
    ),
    event_repeated: Optional[str] = typer.Option(
        None,
        "--event-repeated",
        show_default="card (error)",
        help="EEG cards: two event windows at one time (a repeated marker, or two markers at one instant): error (refuse, as MNE's Epochs), first (keep the first marker), drop (keep a repeated one once, drop conflicting ones) or keep (a window per marker, as the CBraMod release's TUEV script).",
    ),
    crop_start: Optional[float] = typer.Option(
        None, "--crop-start", show_default="card", help="EEG cards: seconds dropped at the start of each recording."
    ),
    crop_end: Optional[float] = typer.Option(
        None, "--crop-end", show_default="card", help="EEG cards: seconds dropped at the end of each recording."
    ),
    line_freq: Optional[float] = typer.Option(
        None,
        "--line-freq",
        show_default="card",
        help="EEG cards: power-line frequency to notch, Hz (50 or 60; 0: no notch).",
    ),
    min_duration: Optional[float] = typer.Option(
        None,
        "--min-duration",
        show_default="card",
        help="EEG cards: recordings shorter than this many seconds are dropped (0: keep all).",
    ),
    n_jobs: int = typer.Option(
        1,
        "--n-jobs",
        "-j",
        help="EEG: recordings processed by N local worker processes (-1: every core); the store is the same.",
    ),
    scheduler: Optional[str] = typer.Option(
        None,
        "--scheduler",
        show_default="$DASK_SCHEDULER_ADDRESS",
        help="EEG: Dask scheduler address (tcp://host:8786) to process the recordings on; default the DASK_SCHEDULER_ADDRESS environment variable.",
    ),
    shards: bool = typer.Option(
        False,
        "--shards",
        show_default="off",
        help="Write OUT as a shard set (a folder: one store per recording, EEG file or surface run, + index.json) that keeps finished recordings if the run stops (full disk, bad file, kill).",
    ),
    resume: bool = typer.Option(
        False, "--resume", show_default="off", help="With --shards: add only the recordings the set at OUT lacks."
    ),
    stream_above: Optional[float] = typer.Option(
        None,
        "--stream-above",
        show_default="256",
        help="EEG: recordings larger than this many MiB of float64 samples are processed chunk by chunk in bounded memory (scratch files beside OUT); same windows.",
    ),
    allow_duplicate_recordings: bool = typer.Option(
        False,
        "--allow-duplicate-recordings",
        show_default="off",
        help="Keep the same recording under different subjects (identical files by SHA-256, or matching samples: an edited header, another format), recorded in the store; by default they are refused, naming both files (a file given twice is always read once).",
    ),
    dtype: str = typer.Option(
        "float32",
        "--dtype",
        help="EEG: dtype the windows are stored in: float32, or float16 (half the bytes and half the disk reads; "
        "values beyond ±65504, i.e. 6.55 V, refused or clipped as the card's preprocessing float16_overflow says; "
        "read back as float32).",
    ),
    progress: bool = typer.Option(True, help="Show a progress bar."),
    verbose: bool = typer.Option(False, "--verbose", "-v", show_default="off", help="Log each step."),
) -> None:
    """Read recordings, preprocess them with the card's recipe and write an HDF5 patch store."""
    setup_logging(verbose)
    from neurokit.cards.ranges import parse_subject_selection
    from neurokit.pipelines.prepare import prepare as run_prepare

    subj = run_or_exit(parse_subject_selection, subjects) if subjects is not None else None
    if files and subjects is not None:
        fail(
            ValueError(
                f"--subjects {subjects} selects recordings of a card's layout under --data-root; with -f the files "
                f"given ({len(files)}) are the selection: leave out --subjects, or the -f files"
            )
        )
    if (card is None) == (bids is None):
        fail(ValueError("give a data card, or --bids ROOT --task TASK (not both)"))
    if bids is not None:
        from neurokit.cards import bids_card

        if not task:
            fail(ValueError("--bids needs --task (the BIDS task label, as in sub-01_task-LABEL_eeg.edf)"))
        card = run_or_exit(
            bids_card,
            bids,
            task,
            events=[e.strip() for e in events.split(",")] if events else None,
            label_column=label_column,
        )
        data_root = bids
    elif events or label_column:
        fail(ValueError("--events and --label-column go with --bids (a card's task defines its labels)"))
    elif drop_channels or not interpolate_bads or on_ch_mismatch:
        what = "--drop-channels" if drop_channels else "--on-ch-mismatch" if on_ch_mismatch else "--no-interpolate-bads"
        fail(
            ValueError(
                f"{what}: for BIDS recordings (--bids), "
                "whose channels.tsv marks bad channels; for a card's recordings choose the channels with --channels"
            )
        )
    kwargs: dict[str, Any] = {"skip_bad": skip_bad} if skip_bad else {}
    kwargs.update(_bids_reading(interpolate_bads, drop_channels))
    if on_ch_mismatch is not None:
        if on_ch_mismatch not in ("raise", "reorder", "rename"):
            fail(ValueError(f"--on-ch-mismatch {on_ch_mismatch}: allowed values are raise, reorder, rename"))
        kwargs["on_ch_mismatch"] = on_ch_mismatch
    if subject_pattern is not None:
        kwargs["subject_pattern"] = subject_pattern
    sph = {h: p.expanduser().resolve() for h, p in (("L", sphere_l), ("R", sphere_r)) if p is not None}
    kwargs.update(
        {
            k: v
            for k, v in (
                ("mesh", mesh),
                ("hemi", hemi),
                ("spheres", sph or None),
                ("encoding", encoding),
                ("units", units),
                ("override_units", override_units or None),
                ("allow_truncated", allow_truncated or None),
            )
            if v is not None
        }
    )
    kwargs.update(
        {
            k: v
            for k, v in (
                ("n_jobs", n_jobs if n_jobs != 1 else None),
                ("scheduler", scheduler),
                ("shards", shards or None),
                ("resume", resume or None),
                ("stream_above_mb", stream_above),
                ("allow_duplicate_recordings", allow_duplicate_recordings or None),
                ("dtype", dtype if dtype != "float32" else None),
            )
            if v is not None
        }
    )
    kwargs.update(
        {
            k: v
            for k, v in (
                ("window_s", window_s),
                ("crop_start_s", crop_start),
                ("event_repeated", event_repeated),
                ("crop_end_s", crop_end),
                ("line_freq", line_freq),
                ("min_duration_s", min_duration),
            )
            if v is not None
        }
    )
    path = run_or_exit(
        run_prepare,
        card,
        out,
        data_root=data_root,
        task=task,
        files=files or None,
        subjects=subj,
        channels=channels,
        overwrite=overwrite,
        progress=progress,
        **kwargs,
    )
    from neurokit.data.dataset import PatchDataset
    from neurokit.data.provenance import kept_line, kept_summary, split_line, unlabelled_line

    s = PatchDataset(path)
    half = f", {s.stores[0].sample_dtype}" if s.stores[0].sample_dtype != "float32" else ""
    console.print(
        f"[green]wrote[/] {path}: {len(s)} samples of shape {s.sample_shape} ({s.info.modality}{half}, task {s.info.task})"
    )
    if s.info.modality == "eeg":
        console.print(f"windows: {kept_line(kept_summary(s.stores))}")
    splits = split_line(s)
    if splits:
        console.print(f"splits: {cli_words(splits)}")
    line = unlabelled_line(s)
    if line:
        console.print(f"[bold yellow]labels:[/] {line}")
    # a shard set's later shards (and its index) hold the copies found while it was written
    dups = max((st.attrs.get("duplicate_recordings") or [] for st in s.stores), key=len, default=[])
    if dups:
        console.print(
            f"[bold yellow]duplicates:[/] {len(dups)} recording(s) kept under several subjects "
            "(--allow-duplicate-recordings; listed in the store's duplicate_recordings)"
        )


def _bids_reading(interpolate_bads: bool, drop_channels: Optional[str]) -> dict[str, Any]:
    """``--no-interpolate-bads`` / ``--drop-channels`` as preparer options (only those given)."""
    out: dict[str, Any] = {} if interpolate_bads else {"interpolate_bads": False}
    names = [c.strip() for c in (drop_channels or "").split(",") if c.strip()]
    if names:
        out["drop_channels"] = names
    return out
