"""The ``bids`` layout (``layout: {kind: bids, task, subdir, subject_format, run_format}``) and cards made on the fly for
a BIDS dataset (:func:`bids_card`): recordings through mne-bids, labels from ``events.tsv`` or ``participants.tsv``."""

from __future__ import annotations

import logging
from pathlib import Path

from neurokit._utils.errors import CardError
from neurokit.cards.ranges import parse_ranges
from neurokit.io.entry import FileEntry

logger = logging.getLogger("neurokit")


def bids_files(card, root, layout, tname, t, subjects) -> list[FileEntry]:
    """Recordings of a BIDS dataset (``layout: {kind: bids, task: BIDS task label, subdir, subject_format,
    run_format}``). Labels come from ``events.tsv`` ``trial_type`` through the task's ``run_groups``
    (BIDS runs) or ``events`` mapping, or from a ``participants.tsv`` column (task ``label_column``).

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
        BIDS subject labels or numbers to keep (``"sub-01"``, ``"01"`` and ``1`` are the same subject);
        ``None``: the subjects of the task's splits, else all.

    Returns
    -------
    list of FileEntry
        The labelled recordings (store subject ids by :meth:`~neurokit.cards.card.DataCard.store_subject`).

    Raises
    ------
    CardError
        No recording of the subjects asked for, or none the task's run groups label.

    Examples
    --------
    >>> from neurokit.cards.card import bids_card
    >>> card = bids_card("~/data/ds004362", "imagery")  # doctest: +SKIP
    >>> bids_files(card, Path("~/data/ds004362").expanduser(), card.raw["layout"], "imagery",
    ...            card.task("imagery")[1], [1, 2])  # doctest: +SKIP
    """
    from neurokit.io.bids import find_recordings

    base = root / layout.get("subdir", "")
    wanted = subjects or sorted({s for v in (t.get("splits") or {}).values() for s in parse_ranges(v)}) or None
    labels = None if wanted is None else [str(s) for s in wanted]
    recs = find_recordings(base, layout.get("task"), subjects=None)
    if labels is not None:  # BIDS labels may be zero-padded: match by number
        labels = [x.removeprefix("sub-") for x in labels]  # ids typed as stored (sub-01) or as labels (01)
        nums = {int(x) for x in labels if x.isdigit()}
        there = sorted({r.subject for r in recs})
        recs = [r for r in recs if (int(r.subject) if r.subject.isdigit() else None) in nums or r.subject in labels]
        found = {int(r.subject) if r.subject.isdigit() else r.subject for r in recs}
        missing: list = sorted(n for n in nums if n not in found and str(n) not in found)
        missing += sorted(x for x in labels if not x.isdigit() and x not in found)
        if not recs or subjects and missing:
            raise CardError(
                f"card {card.name!r}: no BIDS recording of subjects {missing or labels} under {base} "
                f"(subjects there: {', '.join(there[:20])}{'…' if len(there) > 20 else ''})"
            )

    out = bids_entries(card, recs, base, layout, tname)
    if not out:
        raise CardError(f"card {card.name!r} task {tname!r}: no BIDS recording under {base} belongs to its run groups")
    return out


def bids_entries(card, recs, base, layout, tname, explicit: bool = False) -> list[FileEntry]:
    """The :class:`FileEntry` of each BIDS recording of ``recs``, labelled by the task's rule
    (:meth:`task_events` over the BIDS run) or its ``participants.tsv`` column (``label_column``). A
    recording the rule labels not is left out with a warning, or, ``explicit`` (named by ``-f``), refused.

    Parameters
    ----------
    card : DataCard
        The card whose task labels the recordings.
    recs : list of BIDSRecording
        The recordings (:func:`~neurokit.io.bids.find_recordings`).
    base : pathlib.Path
        The BIDS dataset folder (for ``participants.tsv``).
    layout : dict
        The card's ``layout`` block (its ``run_format`` names run ids).
    tname : str
        The task's name.
    explicit : bool
        The recordings were named one by one: one the task does not label is an error, not a warning.

    Returns
    -------
    list of FileEntry
        One entry per labelled recording, with ``events`` or (``label_column``) ``label`` set.

    Raises
    ------
    CardError
        A subject without a ``label_column`` value or with a value that is not a class; with ``explicit``, a
        recording of a run no run group names.
    """
    from neurokit.io.bids import read_participants

    t = card.task(tname)[1]
    classes = list(t.get("classes") or [])
    te = card.task_events(tname)
    column = t.get("label_column")
    participants = read_participants(base) if column else {}
    run_fmt = layout.get("run_format")
    out, left = [], 0
    for r in recs:
        run = "" if r.run is None else (run_fmt.format(int(r.run)) if run_fmt and r.run.isdigit() else f"run-{r.run}")
        e = FileEntry(
            path=r.path, subject=card.store_subject(r.subject), session=r.session or "", run=run, reader="bids"
        )
        if column:
            value = participants.get(r.subject, {}).get(column)
            if value is None:
                raise CardError(f"{base / 'participants.tsv'}: no {column!r} value for sub-{r.subject}")
            if value not in classes:
                raise CardError(
                    f"card {card.name!r} task {tname!r}: sub-{r.subject}'s {column}={value!r} not in classes {classes}"
                )
            e.label = classes.index(value)
        elif te.labels:
            n = int(r.run) if r.run and r.run.isdigit() else None
            ev = te.of_file(r.path, n) if explicit else te.of_run(n)
            if ev is None:
                left += 1  # a run no group asks for
                continue
            e.events = ev
        out.append(e)
    if left and out:
        logger.warning(
            "card %s task %s: %d of %d BIDS recordings belong to no run group and are left out",
            card.name,
            tname,
            left,
            len(recs),
        )
    return out


def bids_explicit(card, paths, layout, tname, root: Path | None) -> list[FileEntry]:
    """:meth:`explicit_files` of a BIDS card: each file's entities from its name, its dataset folder the
    card's (``root`` / ``subdir``) or the nearest folder above it with a ``dataset_description.json``.

    Parameters
    ----------
    card : DataCard
        A card with a ``bids`` layout.
    paths : list of pathlib.Path
        The files named.
    layout : dict
        The card's ``layout`` block.
    tname : str
        The task's name.
    root : pathlib.Path | None
        The data root; ``None``: each file's dataset folder is found above it.

    Returns
    -------
    list of FileEntry
        The labelled recordings (:func:`bids_entries` with ``explicit=True``).

    Raises
    ------
    CardError
        A file name without a ``sub-`` entity, or a recording the task does not label.
    """
    from neurokit.io.bids import BIDSRecording, dataset_root, entities_from_name

    out = []
    for f in paths:
        ent = entities_from_name(f)
        if not ent.get("subject"):
            raise CardError(f"{f}: no BIDS sub- entity in its name; card {card.name!r} reads a BIDS dataset")
        base = root / layout.get("subdir", "") if root is not None else dataset_root(f)
        rec = BIDSRecording(
            path=f, subject=ent["subject"], session=ent.get("session"), task=ent.get("task"), run=ent.get("run")
        )
        out += bids_entries(card, [rec], base, layout, tname, explicit=True)
    return out
