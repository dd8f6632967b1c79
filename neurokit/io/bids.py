"""BIDS EEG datasets through mne-bids: find the recordings of a task, read one with its sidecars.

A BIDS recording's data file is read by :func:`~neurokit.io.eeg.read_eeg` (header checks, 10-05 names,
template montage) and its sidecars by :func:`mne_bids.read_raw_bids`: the ``events.tsv`` rows (onset,
duration, ``trial_type``) become ``raw.annotations``, the ``channels.tsv`` types are applied and its
``bad`` channels interpolated (:func:`read_bids_eeg`). ``participants.tsv`` columns are read as
subject-level values (:func:`read_participants`).

Reference: Appelhoff et al., MNE-BIDS, JOSS 4(44):1896, 2019; Pernet et al., EEG-BIDS, Sci Data 6:103, 2019.
"""

from __future__ import annotations

import csv
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from neurokit._utils.errors import CardError, DataFileError
from neurokit.io.notes import raw_notes, set_raw_notes

logger = logging.getLogger("neurokit")

#: raw-data extensions BIDS allows for EEG (plus FIF, which mne-bids writes for MEG-style data)
EEG_EXTENSIONS = (".edf", ".bdf", ".vhdr", ".set", ".fif")


@dataclass
class BIDSRecording:
    """One EEG recording of a BIDS dataset: its data file and BIDS entities (``None`` when absent).

    Attributes
    ----------
    path : Path
        The recording's data file (``…/sub-01/eeg/sub-01_task-rest_eeg.edf``).
    subject : str
        The subject label without ``sub-``.
    session, task, run : str or None
        The ``ses-``, ``task-`` and ``run-`` labels without their prefixes.
    """

    path: Path
    subject: str
    session: str | None
    task: str | None
    run: str | None


def _mne_bids():
    try:
        import mne_bids
    except ImportError as exc:  # pragma: no cover - mne-bids is a dependency
        raise CardError("reading BIDS datasets needs mne-bids (pip install mne-bids)") from exc
    return mne_bids


def check_bids_root(root: str | Path) -> Path:
    """``root`` as a Path after checking it looks like a BIDS dataset (``dataset_description.json``).

    Parameters
    ----------
    root : str or Path
        The dataset folder (``~`` expanded).

    Returns
    -------
    Path

    Raises
    ------
    CardError
        Not a folder, or no ``dataset_description.json`` in it.
    """
    root = Path(root).expanduser()
    if not root.is_dir():
        raise CardError(f"BIDS root {root} is not a folder")
    if not (root / "dataset_description.json").exists():
        raise CardError(f"{root}: not a BIDS dataset (no dataset_description.json); give the dataset's top folder")
    return root


def entities_from_name(path: str | Path) -> dict[str, str]:
    """The BIDS entities of a file name (``subject``, ``session``, ``task``, ``run``, ``split``…, without their
    prefixes; absent ones left out), read by :func:`mne_bids.get_entities_from_fname`.

    Parameters
    ----------
    path : str or Path
        A BIDS file name or path.

    Returns
    -------
    dict of str to str

    Examples
    --------
    >>> entities_from_name("sub-01_ses-2_task-rest_run-03_eeg.edf")["run"]
    '03'
    """
    ent = _mne_bids().get_entities_from_fname(Path(path).name, on_error="ignore")
    return {k: str(v) for k, v in ent.items() if v is not None}


def dataset_root(path: str | Path) -> Path:
    """The BIDS dataset folder of a file: the nearest folder above it holding a ``dataset_description.json``,
    else the file's own folder.

    Parameters
    ----------
    path : str or Path
        A file inside a BIDS dataset (or not).

    Returns
    -------
    Path

    Examples
    --------
    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> (d / "sub-01" / "eeg").mkdir(parents=True)
    >>> _ = (d / "dataset_description.json").write_text("{}")
    >>> dataset_root(d / "sub-01" / "eeg" / "sub-01_task-rest_eeg.edf") == d.resolve()
    True
    """
    for d in Path(path).expanduser().resolve().parents:
        if (d / "dataset_description.json").is_file():
            return d
    return Path(path).parent


def find_recordings(
    root: str | Path,
    task: str | None = None,
    *,
    subjects: Sequence[str] | None = None,
    sessions: Sequence[str] | None = None,
    runs: Sequence[str | int] | None = None,
) -> list[BIDSRecording]:
    """EEG recordings under a BIDS ``root``, sorted by (subject, session, run, path).

    Parameters
    ----------
    root : path
        Dataset folder holding ``dataset_description.json``.
    task : str, optional
        BIDS ``task-`` label; ``None`` takes every task.
    subjects, sessions : sequence of str, optional
        BIDS labels without prefix (``"001"``, not ``"sub-001"``).
    runs : sequence of str or int, optional
        Run indices; ``4`` matches ``run-4`` and ``run-04``.

    Raises
    ------
    CardError
        No recording matches (the message lists the tasks and subjects that are there).
    """
    mne_bids = _mne_bids()
    root = check_bids_root(root)
    found = mne_bids.find_matching_paths(
        root,
        subjects=list(subjects) if subjects else None,
        sessions=list(sessions) if sessions else None,
        tasks=task,
        suffixes="eeg",
        extensions=list(EEG_EXTENSIONS),
        datatypes="eeg",
    )
    want_runs = None if runs is None else {int(r) for r in runs}
    out = []
    for bp in found:
        if bp.split not in (None, "01"):  # later parts of a split FIF are read through the first
            from neurokit.io.eeg import fif_split_first

            first = fif_split_first(Path(bp.fpath))
            if first is not None and not first.exists():
                raise DataFileError(
                    f"{bp.fpath}: a later part of a split FIF recording whose first part {first.name} is not "
                    f"there; give the first part {first} (MNE reads every part through it), or leave the parts out"
                )
            continue
        if want_runs is not None and (bp.run is None or int(bp.run) not in want_runs):
            continue
        out.append(BIDSRecording(path=Path(bp.fpath), subject=bp.subject, session=bp.session, task=bp.task, run=bp.run))
    if not out:
        tasks = mne_bids.get_entity_vals(root, "task")
        subs = mne_bids.get_entity_vals(root, "subject")
        raise CardError(
            f"{root}: no EEG recording of task {task!r}"
            + (f", subjects {list(subjects)}" if subjects else "")
            + (f", runs {sorted(want_runs)}" if want_runs else "")
            + f" (tasks there: {tasks}; subjects: {subs[:10]}{'…' if len(subs) > 10 else ''})"
        )
    out.sort(key=lambda r: (r.subject, r.session or "", int(r.run) if r.run and r.run.isdigit() else -1, str(r.path)))
    return out


def read_bids_eeg(
    path: str | Path,
    *,
    interpolate_bads: bool = True,
    drop_channels: Sequence[str] | None = None,
    on_ch_mismatch: str = "raise",
    verbose: bool | str | None = "error",
    **read_opts,
):
    """Read one BIDS EEG recording with its sidecars.

    The data file is read by :func:`~neurokit.io.eeg.read_eeg` (its header checks, EEG channels, 10-05
    names, template montage; ``read_opts`` go to it); the sidecars by mne-bids
    (:func:`mne_bids.read_raw_bids`): ``events.tsv`` rows become the annotations (description =
    ``trial_type``), ``channels.tsv`` types and ``bad`` statuses are applied.

    Parameters
    ----------
    path : path
        The data file (``sub-01/eeg/sub-01_task-x_eeg.edf``) inside a BIDS dataset.
    interpolate_bads : bool
        Replace the channels ``channels.tsv`` marks bad by MNE's spherical-spline interpolation from the
        good ones (Perrin et al. 1989), so every recording keeps the dataset's channel set; they are listed in
        ``raw_notes(raw).applied["interpolated_channels"]`` (:func:`~neurokit.io.notes.raw_notes`). ``False``: leave them marked bad.
        CLI: ``neuro prepare --bids … --no-interpolate-bads``.
    drop_channels : sequence of str, optional
        Channels removed before the interpolation (labels as in the file or their 10-05 names, any case; names
        the recording lacks are ignored, as a dataset's recordings differ), e.g. a bad channel without a sensor
        position. They are listed in ``raw_notes(raw).applied["dropped_channels"]``. CLI: ``--drop-channels``.
    on_ch_mismatch : {"raise", "reorder", "rename"}
        mne-bids' rule for a ``channels.tsv`` whose names differ from the data file's (channels renamed after
        ``write_raw_bids``): refuse (mne-bids' default), match them by name in another order, or take the
        ``channels.tsv`` names position by position (:func:`mne_bids.read_raw_bids`). CLI: ``--on-ch-mismatch``.

    Returns
    -------
    raw : mne.io.Raw
        In volts; loaded when channels were interpolated, lazy otherwise.

    Raises
    ------
    FileNotFoundError
        No such file.
    DataFileError
        mne-bids cannot read the recording or its sidecars; a bad channel without a position to
        interpolate from; fewer than :data:`MIN_GOOD_NEIGHBOURS` good EEG channels with positions to
        interpolate from (the message names the file, the bad channels, the good ones and those without a
        position). Good channels without a position are left out of the interpolation with a warning.
    """
    from neurokit.io.eeg import read_eeg

    mne_bids = _mne_bids()
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file")
    try:
        bp = mne_bids.get_bids_path_from_fname(path, verbose="error")
        side = mne_bids.read_raw_bids(bp, on_ch_mismatch=on_ch_mismatch, verbose=verbose)
    except Exception as exc:  # mne-bids raises many types for bad names and sidecars
        hint = (
            "; channels.tsv names other channels than the file: read with --on-ch-mismatch rename (its names, by "
            "position) or reorder"
            if "channel" in str(exc).lower() and on_ch_mismatch == "raise"
            else ""
        )
        raise DataFileError(
            f"{path}: mne-bids could not read this recording ({type(exc).__name__}: {exc}){hint}"
        ) from exc
    raw = read_eeg(path, eeg_only=False, **read_opts)
    if on_ch_mismatch == "rename":
        _take_tsv_names(raw, side, path)
    renames = raw_notes(raw).renames
    assert renames is not None  # read_eeg records them on every recording it reads
    renamed = renames.renamed  # original label → 10-05 name
    name = {orig: renamed.get(orig, orig) for orig in side.ch_names}
    types = {name[c]: t for c, t in zip(side.ch_names, side.get_channel_types()) if name[c] in raw.ch_names}
    change = {c: t for c, t in types.items() if t != raw.get_channel_types(picks=[c])[0]}
    if change:
        raw.set_channel_types(change, on_unit_change="ignore", verbose="error")
    raw.pick("eeg", exclude=[])
    raw.set_annotations(side.annotations)
    dropped = _drop(raw, drop_channels, {v: k for k, v in name.items()})
    bids_bads = [name[c] for c in side.info["bads"] if name.get(c) in raw.ch_names]
    raw.info["bads"] = sorted(set(raw.info["bads"]) | set(bids_bads), key=raw.ch_names.index)
    if interpolate_bads and bids_bads:
        chs = {c["ch_name"]: c for c in raw.info["chs"]}
        no_pos = [c for c in bids_bads if not np.any(chs[c]["loc"][:3]) or not np.isfinite(chs[c]["loc"][:3]).all()]
        if no_pos:
            raise DataFileError(
                f"{path}: bad channel(s) {no_pos} (channels.tsv) have no sensor position to interpolate "
                f"from; {_remedies(path, no_pos)}"
            )
        others = [c for c in raw.info["bads"] if c not in bids_bads]
        no_pos_good = _check_neighbours(raw, bids_bads, others, path)
        raw.load_data(verbose="error")
        if no_pos_good:  # MNE's spline would take their NaN positions: leave them out of the fit, keep their signals
            keep = list(raw.info["bads"])
            raw.info["bads"] = keep + no_pos_good
            raw.interpolate_bads(reset_bads=False, exclude=others + no_pos_good, verbose="error")
            raw.info["bads"] = [c for c in keep if c not in bids_bads]
        else:
            raw.interpolate_bads(reset_bads=True, exclude=others, verbose="error")
        set_raw_notes(raw, applied={**raw_notes(raw).applied, "interpolated_channels": bids_bads})
    if dropped:
        set_raw_notes(raw, applied={**raw_notes(raw).applied, "dropped_channels": dropped})
    return raw


def _take_tsv_names(raw, side, path) -> None:
    """``on_ch_mismatch="rename"``: give ``raw`` (read from the file) the ``channels.tsv`` names mne-bids gave
    ``side``, position by position, in their 10-05 form; the file's labels stay recorded as the originals."""
    from neurokit.geometry.channels import normalize_ch_name

    notes = raw_notes(raw)
    renames = notes.renames
    assert renames is not None
    back = {v: k for k, v in renames.renamed.items()}  # 10-05 name → the file's label
    if len(side.ch_names) != len(raw.ch_names):
        raise DataFileError(
            f"{path}: channels.tsv lists {len(side.ch_names)} channels, the file {len(raw.ch_names)}: they cannot be "
            "renamed position by position (--on-ch-mismatch rename)"
        )
    new = {c: normalize_ch_name(t)[0] for c, t in zip(raw.ch_names, side.ch_names)}
    if len(set(new.values())) < len(new):
        raise DataFileError(f"{path}: channels.tsv names repeat after name standardisation: {list(side.ch_names)}")
    raw.rename_channels({c: n for c, n in new.items() if c != n})
    renames.renamed = {back.get(c, c): n for c, n in new.items() if back.get(c, c) != n}
    set_raw_notes(raw, renames=renames)
    side.rename_channels({t: new[c] for c, t in zip(list(new), side.ch_names) if t != new[c]})
    from neurokit.geometry.channels import montage_1005

    raw.set_montage(montage_1005(), on_missing="ignore", verbose="error")  # positions of the names now held


def _drop(raw, drop: Sequence[str] | None, original: dict[str, str]) -> list[str]:
    """Remove the channels ``drop`` names (file labels or 10-05 names, any case) from ``raw``; returns them."""
    if not drop:
        return []
    want = {str(d).strip().lower() for d in drop if str(d).strip()}
    gone = [c for c in raw.ch_names if c.lower() in want or original.get(c, c).lower() in want]
    if gone:
        raw.drop_channels(gone)
        raw.info["bads"] = [c for c in raw.info["bads"] if c not in gone]
    return gone


def channels_tsv(path: str | Path) -> Path:
    """The ``channels.tsv`` sidecar of a BIDS data file (``sub-01_task-x_eeg.edf`` → ``sub-01_task-x_channels.tsv``
    beside it), where its bad channels are marked.

    Parameters
    ----------
    path : str or Path
        The data file.

    Returns
    -------
    Path
        The sidecar's path (not checked to exist).

    Examples
    --------
    >>> channels_tsv("/d/sub-01/eeg/sub-01_task-rest_eeg.edf").name
    'sub-01_task-rest_channels.tsv'
    """
    path = Path(path)
    stem = path.name.split(".")[0]
    base = stem[: stem.rfind("_")] if "_" in stem else stem
    return path.with_name(f"{base}_channels.tsv")


def _remedies(path, bads: Sequence[str]) -> str:
    """The ways on from a refused interpolation, in the words of the API and of ``neuro prepare --bids``."""
    return (
        "read with interpolate_bads=False (CLI: neuro prepare --bids … --no-interpolate-bads), drop them before "
        f"the interpolation with drop_channels=[…] (CLI: --drop-channels {','.join(bads)}), or mark them good in "
        f"{channels_tsv(path)} (a channel subset does not help: bad channels are interpolated before the pick)"
    )


#: Fewest good EEG channels with sensor positions that :func:`read_bids_eeg` interpolates bad channels from.
#: MNE's spherical spline (Perrin et al. 1989) from fewer gives each bad channel little more than the mean of
#: those few (from one good channel, every interpolated channel is a copy of it: correlation 1).
MIN_GOOD_NEIGHBOURS = 4


def _check_neighbours(raw, bads: list[str], others: list[str], path) -> list[str]:
    """Refuse an interpolation of ``bads`` from fewer than :data:`MIN_GOOD_NEIGHBOURS` good EEG channels with
    positions; returns the good channels without a position (left out of the fit, with a warning)."""
    import warnings

    from neurokit.io.headers import short_list

    chs = {c["ch_name"]: c for c in raw.info["chs"]}
    good = [
        c for c, t in zip(raw.ch_names, raw.get_channel_types()) if t == "eeg" and c not in bads and c not in others
    ]
    no_pos = [c for c in good if not np.isfinite(chs[c]["loc"][:3]).all() or not np.any(chs[c]["loc"][:3])]
    placed = [c for c in good if c not in no_pos]
    if len(placed) < MIN_GOOD_NEIGHBOURS:
        without = f"; good channels without a sensor position: {short_list(no_pos)}" if no_pos else ""
        raise DataFileError(
            f"{path}: cannot interpolate the bad channels {short_list(bads)} (channels.tsv): only {len(placed)} good "
            f"EEG channel(s) with a sensor position {short_list(placed)}, and interpolation needs at least "
            f"{MIN_GOOD_NEIGHBOURS}{without}; {_remedies(path, bads)}"
        )
    if no_pos:
        warnings.warn(
            f"{path}: good channels {short_list(no_pos)} have no sensor position; the bad channels "
            f"{short_list(bads)} are interpolated from the {len(placed)} others",
            RuntimeWarning,
            stacklevel=4,
        )
    return no_pos


def read_participants(root: str | Path) -> dict[str, dict[str, str]]:
    """``participants.tsv`` as ``{subject label (no "sub-"): {column: value}}``; ``{}`` when absent.

    Values stay strings as written (``"n/a"`` included); columns come in file order.

    Parameters
    ----------
    root : str or Path
        The dataset folder.

    Returns
    -------
    dict of str to dict

    Examples
    --------
    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> _ = (d / "participants.tsv").write_text("participant_id\\tgroup\\nsub-01\\tpatient\\nsub-02\\tn/a\\n")
    >>> read_participants(d)
    {'01': {'group': 'patient'}, '02': {'group': 'n/a'}}
    """
    p = Path(root) / "participants.tsv"
    if not p.exists():
        return {}
    # utf-8-sig: a byte-order mark (mne-bids 0.18 writes one; so do spreadsheet programs) is not a column name
    with p.open(newline="", encoding="utf-8-sig") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    if rows and "participant_id" not in rows[0]:
        raise DataFileError(f"{p}: no participant_id column (columns: {list(rows[0])})")
    return {
        r["participant_id"].removeprefix("sub-"): {k: v for k, v in r.items() if k != "participant_id"} for r in rows
    }


def read_line_freq(path: str | Path) -> float | None:
    """``PowerLineFrequency`` (Hz) from a recording's ``*_eeg.json`` sidecar; ``None`` when absent or ``n/a``.

    Parameters
    ----------
    path : str or Path
        The recording's data file; its ``*_eeg.json`` is looked up beside it.

    Returns
    -------
    float or None
    """
    side = Path(path).with_suffix(".json")
    if not side.exists():
        return None
    try:
        v = json.loads(side.read_text()).get("PowerLineFrequency")
    except json.JSONDecodeError as exc:
        raise DataFileError(f"{side}: invalid JSON ({exc})") from exc
    return float(v) if isinstance(v, (int, float)) else None


def trial_types(path: str | Path) -> list[str]:
    """Distinct ``trial_type`` values of a recording's ``events.tsv`` (``[]`` without one).

    Parameters
    ----------
    path : str or Path
        The recording's data file; its ``*_events.tsv`` is looked up beside it.

    Returns
    -------
    list of str
        Sorted; ``n/a`` left out.
    """
    ev = Path(str(path).rsplit("_", 1)[0] + "_events.tsv")
    if not ev.exists():
        return []
    with ev.open(newline="", encoding="utf-8-sig") as fh:
        return sorted({r.get("trial_type", "n/a") for r in csv.DictReader(fh, delimiter="\t")} - {"n/a", None})
