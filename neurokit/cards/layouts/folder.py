"""The ``folder`` layout (``layout: {kind: folder, pattern, subject_pattern}``): every file the card's globs find under
the data root, subjects and runs read from their paths (:func:`subject_of`, :func:`run_of`), labelled by the task's
run groups or events."""

from __future__ import annotations

import glob
import logging
import re
from pathlib import Path

from neurokit._utils.errors import CardError
from neurokit.cards.layouts.common import subjects_only
from neurokit.io.entry import FileEntry


logger = logging.getLogger("neurokit")

#: The default subject rule of folder layouts (a card's ``layout.subject_pattern`` or ``neuro prepare
#: --subject-pattern`` replaces it): a BIDS ``sub-<label>`` entity anywhere in the path relative to the data
#: root gives ``sub-<label>``; a FreeSurfer hemisphere file (``lh.``/``rh.`` names) in a subject's ``surf/`` folder
#: gives that subject's folder (``bert/surf/lh.rest.mgz`` → ``bert``); otherwise the file name up to its first ``_``
#: or ``.``, after a leading ``lh.``/``rh.`` (``Subject02_1.edf`` and ``Subject02_2.edf`` → ``Subject02``; TUEG
#: ``aaaaaaab_s001_t000.edf`` → ``aaaaaaab``, the patient; ``lh.sub01.mgz`` and ``rh.sub01.mgz`` → ``sub01``).
SUBJECT_PATTERN = r"(?:^|/)(?:[lr]h\.)?(?P<subject>[^/_.]+)[^/]*$"
SUBJECT_RULE = (
    "the BIDS sub- entity of the path, else the FreeSurfer subject folder above surf/, else the file name up to "
    f"its first '_' or '.' after a leading lh./rh. (subject_pattern {SUBJECT_PATTERN!r})"
)
FREESURFER_SUB = re.compile(r"(?:^|/)(?P<subject>[^/]+)/surf/[lr]h\.[^/]*$")
BIDS_SUB = re.compile(r"(?:^|[/_])sub-(?P<subject>[A-Za-z0-9]+)")
BIDS_RUN = re.compile(r"(?:^|[/_])run-(?P<run>\d+)")


def subject_of(rel_path: str | Path, pattern: str | None = None, *, where: str | Path = "card") -> str:
    """The subject id of a file of a folder layout, from its path relative to the data root.

    Parameters
    ----------
    rel_path : str | Path
        The file's path under the data root (matched with ``/`` separators).
    pattern : str, optional
        A regular expression searched in ``rel_path``: the subject is its group ``subject``, else its first group,
        else the whole match (``"^(?P<subject>[^/]+)/"``: the first folder). ``None``: the default rule
        (:data:`SUBJECT_RULE`): a BIDS ``sub-`` entity, else the FreeSurfer subject folder above ``surf/``, else
        :data:`SUBJECT_PATTERN` over the file name.
    where : str | Path
        The card, for messages.

    Returns
    -------
    str
        The subject id.

    Raises
    ------
    CardError
        ``pattern`` is not a valid regular expression, or does not match ``rel_path``.

    Examples
    --------
    >>> subject_of("Subject02_1.edf"), subject_of("Subject02_2.edf")
    ('Subject02', 'Subject02')
    >>> subject_of("sub-07/eeg/sub-07_task-rest_eeg.edf")
    'sub-07'
    >>> subject_of("lh.sub01.fsaverage5.mgz"), subject_of("bert/surf/rh.rest.fsaverage5.mgz")
    ('sub01', 'bert')
    >>> subject_of("S001/S001R04.edf", r"^(?P<subject>[^/]+)/")
    'S001'
    """
    rel = Path(rel_path).as_posix()
    if pattern is None:
        m = BIDS_SUB.search(rel)
        if m:
            return f"sub-{m['subject']}"
        m = FREESURFER_SUB.search(rel)
        if m:
            return m["subject"]
        pattern = SUBJECT_PATTERN
    try:
        rx = re.compile(pattern)
    except re.error as exc:
        raise CardError(f"{where}: subject_pattern {pattern!r} is not a valid regular expression ({exc})") from None
    m = rx.search(rel)
    if m is None:
        raise CardError(
            f"{where}: subject_pattern {pattern!r} does not match the file {rel!r}; give a pattern "
            "that matches every file (its group 'subject' is the subject id)"
        )
    subj = m["subject"] if "subject" in rx.groupindex else m.group(1) if rx.groups else m.group(0)
    if not subj:
        raise CardError(f"{where}: subject_pattern {pattern!r} gives an empty subject id for {rel!r}")
    return subj


def run_of(rel_path: str | Path, pattern: str | None = None) -> int | None:
    """The run number of a folder layout's file, from where the layout says runs are: the group ``run`` of
    ``pattern`` (a card's ``layout.subject_pattern``, e.g. ``"(?P<subject>Subject\\d+)_(?P<run>\\d+)"``), else a
    BIDS ``run-`` entity; ``None`` when neither names one. A number that merely ends the file name is not a run
    (``t4_and_t8.edf``, ``rec_v2.edf``, ``S1_2024.edf`` have none).

    Parameters
    ----------
    rel_path : str | pathlib.Path
        The file's path under the data root.
    pattern : str | None
        The layout's ``subject_pattern``; its group ``run`` (digits) is the run.

    Returns
    -------
    int | None
        The run number, or ``None`` when the path names none.

    Examples
    --------
    >>> run_of("Subject02_2.edf"), run_of("sub-01_task-x_run-03_eeg.edf"), run_of("rec.edf")
    (None, 3, None)
    >>> run_of("Subject02_2.edf", r"(?P<subject>Subject\d+)_(?P<run>\d+)")
    2
    """
    rel = Path(rel_path).as_posix()
    if pattern:
        m = re.search(pattern, rel)
        if m and "run" in m.re.groupindex and m["run"] is not None:
            return int(m["run"]) if m["run"].isdigit() else None
    m = BIDS_RUN.search(rel)
    if m:
        return int(m["run"])
    return None


#: where a folder layout's runs come from, for messages
RUN_RULE = (
    "a run is the BIDS run- entity or the 'run' group of the layout's subject_pattern "
    "(e.g. '(?P<subject>Subject\\d+)_(?P<run>\\d+)'); a number ending a file name is not read as a run"
)


def folder_files(card, root, layout, tname, t, subjects) -> list[FileEntry]:
    """Recordings of a ``layout: {kind: folder, pattern, subject_pattern}`` card: the files the globs find
    (later parts of split FIF recordings left out: :func:`~neurokit.io.eeg.fif_split_first`), each with the
    subject :func:`subject_of` gives and the run :func:`run_of` reads from its name. A task's ``events``
    label every file; its ``run_groups`` label the files of their runs (and leave the others out).

    Parameters
    ----------
    card : DataCard
        The card whose recordings are listed.
    root : pathlib.Path
        The data root (:func:`~neurokit.cards.card.resolve_data_root`).
    layout : dict
        The card's ``layout`` block.
    tname : str
        The task's name.
    t : dict
        The task's block of the card (its ``splits``, ``events``, ``run_groups``…).
    subjects : sequence of int or str | None
        Subject numbers or ids to keep (:func:`~neurokit.cards.layouts.common.subjects_only`); ``None``: all.

    Returns
    -------
    list of FileEntry
        The labelled recordings, sorted by path (run: the file stem).

    Raises
    ------
    CardError
        No file matches the globs; a ``subject_pattern`` that does not match a file; subjects not found; run
        groups that label no file.

    Examples
    --------
    >>> from neurokit.cards.card import load_card
    >>> card = load_card("eeg_folder")
    >>> folder_files(card, Path("~/data/mine").expanduser(), card.raw["layout"], *card.task(None),
    ...              None)  # doctest: +SKIP
    """
    from neurokit.io.eeg import drop_split_parts

    pats = layout.get("pattern", "**/*")
    pats = [pats] if isinstance(pats, str) else list(pats)
    paths = sorted({Path(p) for pat in pats for p in glob.glob(str(root / pat), recursive=True)})
    paths = [p for p in paths if p.is_file()]
    if not paths:
        raise CardError(f"card {card.name!r}: no file matches {pats} under {root}")
    paths, later = drop_split_parts(paths)
    if later:
        logger.info(
            "card %s: %d later part(s) of split FIF recordings are read through their first part",
            card.name,
            len(later),
        )
    pattern = layout.get("subject_pattern")
    # stable subject ids from the relative path: sorted listing, never listing order of the OS
    out = [
        FileEntry(path=p, subject=subject_of(p.relative_to(root), pattern, where=card.path or card.name), run=p.stem)
        for p in paths
    ]
    if subjects:
        out = subjects_only(card, out, subjects, root, f" (subject ids by {subject_rule(card)})")
    return label_folder(card, out, root, tname, t, pattern)


def label_folder(card, out, root, tname, t, pattern) -> list[FileEntry]:
    """Events of a folder layout's files by the task's rule (:meth:`task_events`: a file's run picks its run
    group, the task's ``events`` label the others); files the rule labels not are left out (see
    :func:`folder_files`).

    Parameters
    ----------
    card : DataCard
        The card whose task labels the files.
    out : list of FileEntry
        The files found (their ``events`` are set in place).
    root : pathlib.Path
        The data root the files lie under.
    tname : str
        The task's name.
    t : dict
        The task's block of the card.
    pattern : str | None
        The layout's ``subject_pattern`` (its ``run`` group names runs, :func:`run_of`).

    Returns
    -------
    list of FileEntry
        The entries the task labels (all of ``out`` when the task labels no events).

    Raises
    ------
    CardError
        The task's run groups label no file (the message names the runs asked for and found).
    """
    te = card.task_events(tname)
    if not te.labels:
        return out
    runs = {e.path: run_of(e.path.relative_to(root), pattern) for e in out}
    labelled = []
    for e in out:
        ev = te.of_run(runs[e.path])
        if ev is not None:
            e.events = ev
            labelled.append(e)
    if not labelled:
        found = sorted({r for r in runs.values() if r is not None})
        asked = te.runs()
        raise CardError(
            f"card {card.name!r} task {tname!r}: its run_groups ask for runs {asked}, but no file under {root} "
            f"has such a run (runs found: {found or 'none'}; {RUN_RULE}). "
            "Give the layout a subject_pattern with a 'run' group, or give the task 'events' to label every file"
        )
    if len(labelled) < len(out):
        logger.warning(
            "card %s task %s: %d of %d files belong to no run group and are left out",
            card.name,
            tname,
            len(out) - len(labelled),
            len(out),
        )
    return labelled


def subject_rule(card) -> str:
    """The rule giving a folder layout's subject ids, in words (``neuro cards show``, store attributes):
    the card's ``layout.subject_pattern`` or :data:`SUBJECT_PATTERN`.

    Parameters
    ----------
    card : DataCard
        A card with a folder layout.

    Returns
    -------
    str
        ``"subject_pattern '<regex>'"``, or :data:`SUBJECT_RULE` when the card gives none.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> subject_rule(SimpleNamespace(raw={"layout": {"subject_pattern": "^(?P<subject>[^/]+)/"}}))
    "subject_pattern '^(?P<subject>[^/]+)/'"
    """
    pat = (card.raw.get("layout") or {}).get("subject_pattern")
    return f"subject_pattern {pat!r}" if pat else SUBJECT_RULE
