"""What every layout shares: a file's path as the layout's rules read it, and ``--subjects`` picking recordings."""

from __future__ import annotations

import re
from pathlib import Path

from neurokit._utils.errors import CardError
from neurokit.cards.ranges import format_ranges
from neurokit.io.entry import FileEntry


def relative(path: Path, root: Path | None) -> Path:
    """``path`` under ``root`` when it lies there (resolved), else its file name: what a layout's rules read."""
    if root is not None:
        p, r = Path(path).expanduser().resolve(), root.resolve()
        if p.is_relative_to(r):
            return p.relative_to(r)
    return Path(Path(path).name)


def subjects_only(card, out: list[FileEntry], subjects, where, how: str = "") -> list[FileEntry]:
    """The entries of the subject numbers ``subjects`` (the first number in their ids: ``sub-01`` → 1, a file
    stem ``S001R10`` → 1, not 110); a number no entry has raises :class:`CardError` naming it and the subjects
    there are."""

    def number(e):
        m = re.search(r"[0-9]+", e.subject)
        return int(m.group(0)) if m else -1

    keep = {int(s) for s in subjects}
    missing = sorted(keep - {number(e) for e in out})
    if missing:
        ids = sorted({e.subject for e in out})
        shown = ", ".join(ids[:20]) + (f", … ({len(ids)} in all)" if len(ids) > 20 else "")
        raise CardError(
            f"card {card.name!r}: no recording of subjects {format_ranges(missing)} under {where}{how}; subjects "
            f"there: {shown or 'none'}"
        )
    return [e for e in out if number(e) in keep]
