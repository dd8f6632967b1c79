"""The ``mne_eegbci`` layout: PhysioNet's EEG Motor Movement/Imagery files as :func:`mne.datasets.eegbci.load_data` lays
them out (``pattern``: ``"S{subject:03d}/S{subject:03d}R{run:02d}.edf"``), fetched when missing and a network is
reachable."""

from __future__ import annotations

import logging
import os
import re
from functools import lru_cache
from pathlib import Path

from neurokit._utils.errors import CardError
from neurokit.cards.ranges import format_ranges, parse_ranges
from neurokit.io.entry import FileEntry


logger = logging.getLogger("neurokit")


def eegbci_ids(rel: Path, pattern: str) -> tuple[int, int] | None:
    """``(subject, run)`` numbers of a file of an ``mne_eegbci`` layout, read through the layout's ``pattern``
    (``"S{subject:03d}/S{subject:03d}R{run:02d}.edf"``) matched at the end of its path, or of its name alone;
    ``None`` when neither matches.

    Parameters
    ----------
    rel : pathlib.Path
        The file's path relative to the data root (or its name).
    pattern : str
        The layout's ``pattern``, a :meth:`str.format` template with ``subject`` and ``run`` fields.

    Returns
    -------
    tuple of (int, int) | None
        ``(subject, run)``, or ``None``.

    Examples
    --------
    >>> eegbci_ids(Path("S001/S001R04.edf"), "S{subject:03d}/S{subject:03d}R{run:02d}.edf")
    (1, 4)
    >>> eegbci_ids(Path("S002R10.edf"), "S{subject:03d}/S{subject:03d}R{run:02d}.edf")
    (2, 10)
    >>> eegbci_ids(Path("rec.edf"), "S{subject:03d}/S{subject:03d}R{run:02d}.edf") is None
    True
    """
    import string

    def regex(pat: str) -> str:
        parts: list[str] = []
        for literal, field_name, _spec, _conv in string.Formatter().parse(pat):
            parts.append(re.escape(literal))
            if field_name in ("subject", "run"):
                seen = any(f"(?P<{field_name}>" in x for x in parts)
                parts.append(f"(?P={field_name})" if seen else f"(?P<{field_name}>\\d+)")
            elif field_name is not None:
                parts.append(".*?")
        return "".join(parts)

    for pat in dict.fromkeys((pattern, pattern.rsplit("/", 1)[-1])):
        try:
            m = re.search(f"(?:^|/){regex(pat)}$", rel.as_posix(), flags=re.I)
        except (re.error, ValueError):
            continue
        if m and "subject" in m.re.groupindex and "run" in m.re.groupindex:
            return int(m["subject"]), int(m["run"])
    return None


@lru_cache(maxsize=1)
def online() -> bool:
    """Whether PhysioNet is reachable (checked once per process; never in CI or with NEUROKIT_OFFLINE).

    Returns
    -------
    bool
        ``False`` when ``NEUROKIT_OFFLINE`` or ``CI`` is set, else whether ``physionet.org:443`` answers within 3 s.

    Examples
    --------
    >>> online()  # doctest: +SKIP
    True
    """
    if os.environ.get("NEUROKIT_OFFLINE") or os.environ.get("CI"):
        return False
    import socket

    try:
        socket.create_connection(("physionet.org", 443), timeout=3).close()
        return True
    except OSError:
        return False


def try_fetch_eegbci(root: Path, subject: int, run: int) -> None:
    """Fetch one EEGMMIDB recording with :func:`mne.datasets.eegbci.load_data` when PhysioNet is reachable
    (:func:`online`); a failed download is logged as a warning and nothing is raised.

    Parameters
    ----------
    root : pathlib.Path
        The data root (MNE puts the files under ``root/MNE-eegbci-data``).
    subject : int
        The subject number (1-109).
    run : int
        The run number (1-14).

    Examples
    --------
    >>> try_fetch_eegbci(Path("~/data").expanduser(), 1, 4)  # doctest: +SKIP
    """
    if not online():
        return
    try:
        import mne

        mne.datasets.eegbci.load_data(subject, [run], path=str(root), update_path=False, verbose="error")
    except Exception as exc:  # network errors: keep going with what is on disk
        logger.warning("could not fetch EEGMMIDB S%03d R%02d: %s", subject, run, exc)


def eegbci_files(card, root, layout, tname, t, subjects, download) -> list[FileEntry]:
    """Recordings of an ``mne_eegbci`` card: each subject's files of the runs of each of the task's run groups,
    fetched when missing (``download``) and PhysioNet is reachable; files still missing are skipped with a warning.

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
    subjects : sequence of int | None
        Subject numbers to keep; ``None``: the subjects of the task's splits, else the layout's ``subjects``.
    download : bool
        Fetch missing files (:func:`try_fetch_eegbci`).

    Returns
    -------
    list of FileEntry
        The recordings (subject ids ``S001``, runs ``R04``), sorted by subject and run, each with its run
        group's events.

    Raises
    ------
    CardError
        Subject ids that are not numbers; subjects the dataset does not have; no recording found.

    Examples
    --------
    >>> from neurokit.cards.card import load_card
    >>> card = load_card("physionet_mi")
    >>> eegbci_files(card, Path("~/data").expanduser(), card.raw["layout"], "left_right_imagery",
    ...              card.task("left_right_imagery")[1], [1], download=True)  # doctest: +SKIP
    """
    base = root / layout.get("subdir", "")
    named = [s for s in subjects or [] if not str(s).isdigit()]
    if named:
        raise CardError(f"card {card.name!r}: subjects {named}: this layout numbers its subjects (e.g. subjects=1-10)")
    subjects = [int(s) for s in subjects] if subjects else subjects
    wanted = subjects or sorted({s for v in (t.get("splits") or {}).values() for s in parse_ranges(v)})
    if not wanted:
        wanted = parse_ranges(layout.get("subjects", "1"))
    if layout.get("subjects") is not None:  # the subjects the dataset has: nothing else can be fetched or found
        have = set(parse_ranges(layout["subjects"]))
        outside = sorted(set(wanted) - have)
        if outside:
            what = "the subjects given (subjects=)" if subjects else f"task {tname!r}'s splits"
            raise CardError(
                f"card {card.name!r}: {what} ask for subjects {format_ranges(outside)}, which the dataset does "
                "not have "
                f"(its subjects: {layout['subjects']})"
            )
    out: list[FileEntry] = []
    missing: list[str] = []
    for runs, events in card.task_events(tname).groups:
        for subj in wanted:
            for run in sorted(runs):
                p = base / layout["pattern"].format(subject=subj, run=run)
                if not p.exists() and download:
                    try_fetch_eegbci(root, subj, run)
                if not p.exists():
                    missing.append(str(p.relative_to(root)))
                    continue
                out.append(FileEntry(path=p, subject=f"S{subj:03d}", session="", run=f"R{run:02d}", events=events))
    if missing:
        logger.warning(
            "card %s: %d file(s) not found under %s (e.g. %s); continuing with %d",
            card.name,
            len(missing),
            root,
            missing[0],
            len(out),
        )
    if not out:
        raise CardError(
            f"card {card.name!r}: no recording of task {tname!r} under {base}. Expected e.g. "
            f"{base / layout['pattern'].format(subject=wanted[0], run=t['run_groups'][0]['runs'][0])}; "
            "pass data_root= (or set NEUROKIT_DATA) to the folder holding MNE-eegbci-data/"
        )
    out.sort(key=lambda e: (e.subject, e.run))
    return out
