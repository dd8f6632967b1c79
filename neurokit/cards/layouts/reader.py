"""The ``reader`` layout (``layout: {kind: reader, reader: NAME, subdir}``): recordings listed and read by a dataset
reader of :data:`neurokit.datasets.registry.DATASETS` (one module per dataset family: Bonn, SMNI, EEGMAT, TUH, CHB-MIT,
ISRUC, Mumtaz), labelled by the task's ``events``; a task's ``split_rule`` is resolved over all of them."""

from __future__ import annotations

import copy
from pathlib import Path

from neurokit._utils.errors import CardError
from neurokit.cards.layouts.common import subjects_only
from neurokit.io.entry import FileEntry


def reader_files(card, root, layout, tname, t, subjects) -> list[FileEntry]:
    """Recordings listed by a dataset reader (``neurokit.datasets.classic``), labelled by the task's
    ``events`` (annotation description → class name); ``subjects`` (numbers) keeps the subject ids
    whose digits match."""
    from neurokit.datasets.registry import get_reader

    base = root / layout.get("subdir", "")
    events = card.task_events(tname).events
    out = get_reader(layout["reader"]).entries(base)
    card.apply_split_rule(tname, out)  # over every recording, before --subjects picks some
    if subjects:
        out = subjects_only(card, out, subjects, base)
    if not out:
        raise CardError(
            f"card {card.name!r}: no recording for reader {layout['reader']!r} under {base}; "
            "pass data_root= (or set NEUROKIT_DATA) to the folder holding it"
        )
    for e in out:
        e.events = events
    return out


def reader_explicit(
    card, f: Path, layout, te, root: Path | None = None, listings: dict | None = None
) -> list[FileEntry]:
    """:meth:`explicit_files` of a ``reader`` card: the entries its dataset reader lists for ``f`` (an archive gives
    each member) where the dataset lays it out — under ``root`` (``--data-root``) when ``f`` lies there, else from
    the folder the reader names for it (its own folder, or the dataset folder above whose layout labels it: a TUAB
    file's ``train/abnormal`` folders, a CHB-MIT case's summary), labelled by the task's ``events`` as under the
    layout.

    Raises
    ------
    CardError
        The reader finds ``f`` from no folder above it (its label lies in the layout: give that folder).
    """
    from neurokit.datasets.registry import get_reader

    reader = get_reader(layout["reader"])
    want = Path(f).expanduser().resolve()
    bases = [Path(root).expanduser().resolve() / layout.get("subdir", "")] if root is not None else []
    bases = [b for b in bases if want.is_relative_to(b)] + [reader.base_of(want)]
    listings = (
        {} if listings is None else listings
    )  # folder → its listing: several -f files of one dataset list it once
    for base in dict.fromkeys(bases):
        if base not in listings:
            listings[base] = reader.entries(base)
        found = [copy.copy(e) for e in listings[base] if Path(e.path).resolve() == want]
        if found:
            for e in found:
                e.path, e.events = Path(f), te.events
            return found
    raise CardError(
        f"{f}: the reader of card {card.name!r} ({layout['reader']}) does not find this file where the dataset lays it "
        "out (its labels come from that layout: folders, label files, summaries); give the dataset's folder as "
        "data_root= instead of files="
    )
