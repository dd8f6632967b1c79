"""What every layout shares: a file's path as the layout's rules read it, and ``--subjects`` picking recordings."""

from __future__ import annotations

import logging
import re
from pathlib import Path

from neurokit._utils.errors import CardError
from neurokit.cards.ranges import format_ranges
from neurokit.io.entry import FileEntry

logger = logging.getLogger("neurokit")


def relative(path: Path, root: Path | None) -> Path:
    """``path`` under ``root`` when it lies there (resolved), else its file name: what a layout's rules read.

    Parameters
    ----------
    path : pathlib.Path
        A recording's file.
    root : pathlib.Path | None
        The data root; ``None``: none given.

    Returns
    -------
    pathlib.Path
        The path relative to ``root``, or the bare file name when ``path`` lies outside ``root``.

    Examples
    --------
    >>> relative(Path("/data/eeg/S001/S001R04.edf"), Path("/data/eeg")).as_posix()
    'S001/S001R04.edf'
    >>> relative(Path("/elsewhere/rec.edf"), Path("/data/eeg")).as_posix()
    'rec.edf'
    """
    if root is not None:
        p, r = Path(path).expanduser().resolve(), root.resolve()
        if p.is_relative_to(r):
            return p.relative_to(r)
    return Path(Path(path).name)


def subjects_only(card, out: list[FileEntry], subjects, where, how: str = "") -> list[FileEntry]:
    """The entries of the subject numbers ``subjects`` (the first number in their ids: ``sub-01`` → 1, a file
    stem ``S001R10`` → 1, not 110); a number no entry has raises :class:`CardError` naming it and the subjects
    there are.

    Parameters
    ----------
    card : DataCard
        The card, for messages.
    out : list of FileEntry
        The recordings the layout lists.
    subjects : sequence of int or str
        Subject numbers (matched to the first number of each id) or ids as the layout names them (matched
        exactly). A number shared by several ids (TUH) picks them all, with a warning.
    where : str | pathlib.Path
        The folder listed, for messages.
    how : str
        How subject ids are made, appended to the message.

    Returns
    -------
    list of FileEntry
        The entries of those subjects, in the order of ``out``.

    Raises
    ------
    CardError
        A number or id no entry has (the message lists the subjects there are).

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> from neurokit.io.entry import FileEntry
    >>> es = [FileEntry(path=Path(f"sub-0{i}.edf"), subject=f"sub-0{i}") for i in (1, 2, 3)]
    >>> [e.subject for e in subjects_only(SimpleNamespace(name="demo"), es, [1, "sub-03"], "/data")]
    ['sub-01', 'sub-03']
    """

    def number(e):
        m = re.search(r"[0-9]+", e.subject)
        return int(m.group(0)) if m else -1

    named = {str(s) for s in subjects if not str(s).isdigit()}  # ids as the layout names them: matched exactly
    keep = {int(s) for s in subjects if str(s).isdigit()}
    have = {e.subject for e in out}
    missing = sorted(keep - {number(e) for e in out})
    unknown = sorted(named - have)
    if missing or unknown:
        ids = sorted(have)
        shown = ", ".join(ids[:20]) + (f", … ({len(ids)} in all)" if len(ids) > 20 else "")
        asked = ", ".join(([format_ranges(missing)] if missing else []) + unknown)
        raise CardError(
            f"card {card.name!r}: no recording of subjects {asked} under {where}{how}; subjects there: "
            f"{shown or 'none'}"
        )
    by_number: dict[int, set[str]] = {}
    for e in out:
        if number(e) in keep:
            by_number.setdefault(number(e), set()).add(e.subject)
    several = {n: sorted(v) for n, v in by_number.items() if len(v) > 1}
    if several:  # TUH ids (aaaaaab1, aaaaaac1) share numbers: say which ids a number picked
        n, v = next(iter(sorted(several.items())))
        logger.warning(
            "card %s: subject number %d picks %d subject ids (%s%s); give ids to pick one (subjects=%s)",
            card.name,
            n,
            len(v),
            ", ".join(v[:6]),
            " …" if len(v) > 6 else "",
            v[0],
        )
    return [e for e in out if e.subject in named or number(e) in keep]
