"""Where a card's recordings lie: one module per layout kind (``layout: {kind: ...}``), each listing the recordings
of a task under the data root as :class:`~neurokit.io.entry.FileEntry` rows with their subjects, runs and labels.

======================  ==============================================================================
``mne_eegbci``          :mod:`neurokit.cards.layouts.eegbci` — PhysioNet EEGMMIDB as MNE lays it out
``folder``              :mod:`neurokit.cards.layouts.folder` — globs, subjects and runs from paths
``bids``                :mod:`neurokit.cards.layouts.bids` — a BIDS dataset through mne-bids
``reader``              :mod:`neurokit.cards.layouts.reader` — a dataset reader of :mod:`neurokit.datasets`
======================  ==============================================================================

A dataset family whose files need their own reading (label files beside EDFs, text segments, archives) gets a
reader module in :mod:`neurokit.datasets` (:mod:`neurokit.datasets.tuh`, :mod:`neurokit.datasets.chbmit`, …) and a card with
``layout: {kind: reader, reader: NAME}``, the name an entry of :data:`neurokit.datasets.registry.DATASETS`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from neurokit._utils.errors import CardError


@dataclass(frozen=True)
class Layout:
    """A layout kind: ``files(card, root, layout, task_name, task, subjects, download)`` lists its recordings.

    Attributes
    ----------
    files : callable
        ``files(card, root, layout, task_name, task, subjects, download) -> list of FileEntry``: the recordings
        of a card's task under the data root ``root`` (``layout``: the card's ``layout`` block, ``task``: the
        task's block, ``subjects``: numbers or ids to keep or ``None``, ``download``: fetch missing files where
        the kind can).

    Examples
    --------
    >>> sorted(LAYOUTS)
    ['bids', 'folder', 'mne_eegbci', 'reader']
    """

    files: Callable[..., list]


def _eegbci(card, root, layout, tname, t, subjects, download):
    from neurokit.cards.layouts.eegbci import eegbci_files

    return eegbci_files(card, root, layout, tname, t, subjects, download)


def _folder(card, root, layout, tname, t, subjects, download):
    from neurokit.cards.layouts.folder import folder_files

    return folder_files(card, root, layout, tname, t, subjects)


def _bids(card, root, layout, tname, t, subjects, download):
    from neurokit.cards.layouts.bids import bids_files

    return bids_files(card, root, layout, tname, t, subjects)


def _reader(card, root, layout, tname, t, subjects, download):
    from neurokit.cards.layouts.reader import reader_files

    return reader_files(card, root, layout, tname, t, subjects)


#: layout kind → how its recordings are listed
LAYOUTS: dict[str, Layout] = {
    "mne_eegbci": Layout(_eegbci),
    "folder": Layout(_folder),
    "bids": Layout(_bids),
    "reader": Layout(_reader),
}


def layout_of(card) -> Layout:
    """The :class:`Layout` of ``card``'s ``layout.kind``.

    Parameters
    ----------
    card : DataCard
        The card whose ``layout`` block names the kind.

    Returns
    -------
    Layout
        The kind's entry of :data:`LAYOUTS`.

    Raises
    ------
    CardError
        An unknown kind, naming the card and the known kinds.

    Examples
    --------
    >>> from neurokit.cards.card import load_card
    >>> layout_of(load_card("physionet_mi")) is LAYOUTS["mne_eegbci"]
    True
    """
    kind = (card.raw.get("layout") or {}).get("kind")
    if kind not in LAYOUTS:
        raise CardError(f"card {card.name!r}: unknown layout kind {kind!r} (known: {', '.join(LAYOUTS)})")
    return LAYOUTS[kind]
