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
    whose digits match.

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
        Subject numbers or ids to keep (:func:`~neurokit.cards.layouts.common.subjects_only`), picked after the
        task's ``split_rule`` is resolved over every recording; ``None``: all.

    Returns
    -------
    list of FileEntry
        The recordings the reader lists under ``root / layout["subdir"]``, labelled by the task's ``events``.

    Raises
    ------
    CardError
        An unknown reader; a bad split rule; subjects not found; no recording.

    Examples
    --------
    >>> from neurokit.cards.card import load_card
    >>> card = load_card("bonn_epilepsy")
    >>> reader_files(card, Path("~/data").expanduser(), card.raw["layout"], *card.task(None),
    ...              None)  # doctest: +SKIP
    """
    from neurokit.datasets.registry import get_reader

    base = root / layout.get("subdir", "")
    events = card.task_events(tname).events
    out = get_reader(layout["reader"]).entries(base)
    for e in out:
        e.root = base  # folders above the data root carry no label or split
    card.apply_split_rule(tname, out)  # over every recording, before --subjects picks some
    if subjects:
        out = subjects_only(card, out, subjects, base)
    if not out:
        files = (card.raw.get("recording") or {}).get("files")
        expected = f"; its files are laid out as {files}" if files else ""
        raise CardError(
            f"card {card.name!r}: no recording for reader {layout['reader']!r} under {base}{expected}. Give the "
            f"folder holding the dataset with data_root= (or set NEUROKIT_DATA); `neuro cards show {card.name}` gives its "
            "source and layout"
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

    Parameters
    ----------
    card : DataCard
        A card with a ``reader`` layout.
    f : pathlib.Path
        The file named.
    layout : dict
        The card's ``layout`` block (``reader``, ``subdir``).
    te : TaskEvents
        The task's labelling rule (:meth:`~neurokit.cards.card.DataCard.task_events`).
    root : pathlib.Path | None
        The data root; ``None``: the folder the reader names for ``f``.
    listings : dict | None
        A cache, folder → the reader's listing of it, shared by the files of one call.

    Returns
    -------
    list of FileEntry
        The entries of ``f`` (several for an archive), with ``path`` set to ``f``.

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
            for e in listings[base]:
                e.root = base
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
