"""The ``reader`` layout (``layout: {kind: reader, reader: NAME, subdir}``): recordings listed and read by a dataset
reader of :data:`neurokit.io.clinical.DATASETS` (one module per dataset family: Bonn, SMNI, EEGMAT, TUH, CHB-MIT,
ISRUC, Mumtaz), labelled by the task's ``events``; a task's ``split_rule`` is resolved over all of them."""

from __future__ import annotations

from pathlib import Path

from neurokit._utils.errors import CardError
from neurokit.cards.layouts.common import subjects_only
from neurokit.io.entry import FileEntry


def reader_files(card, root, layout, tname, t, subjects) -> list[FileEntry]:
    """Recordings listed by a dataset reader (``neurokit.io.clinical``), labelled by the task's
    ``events`` (annotation description → class name); ``subjects`` (numbers) keeps the subject ids
    whose digits match."""
    from neurokit.io.clinical import get_reader

    base = root / layout.get("subdir", "")
    events = card.task_events(tname).events
    out = get_reader(layout["reader"]).entries(base)
    card.apply_split_rule(tname, out)  # over every recording, before --subjects picks some
    if subjects:
        out = subjects_only(card, out, subjects, base)
    if not out:
        raise CardError(
            f"card {card.name!r}: no recording for reader {layout['reader']!r} under {base}; "
            "pass --data-root (or set NEUROKIT_DATA) to the folder holding it"
        )
    for e in out:
        e.events = events
    return out


def reader_explicit(card, f: Path, layout, te) -> list[FileEntry]:
    """:meth:`explicit_files` of a ``reader`` card: the entries its dataset reader lists beside ``f`` that are
    ``f`` (an archive gives each member), labelled by the task's ``events`` as under the layout; ``[]`` when
    the reader lists no such file."""
    from neurokit.io.clinical import get_reader

    want = Path(f).expanduser().resolve()
    found = [e for e in get_reader(layout["reader"]).entries(want.parent) if Path(e.path).resolve() == want]
    for e in found:
        e.path, e.events = Path(f), te.events
    return found
