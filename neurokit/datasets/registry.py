"""The dataset readers a data card can name (``layout: {kind: reader, reader: NAME}``), as one explicit table.

Each entry pairs the function that lists a dataset's recordings (folder → :class:`~neurokit.io.entry.FileEntry`
rows) with the one that reads a recording into an :class:`mne.io.Raw` in volts, and says which folder a file
given by name (``-f``) is listed from. Every reader is imported here by name, so a reader's callers are visible
to grep, an IDE and a dead-code check (as ``braindecode.datasets`` or MNE's ``datasets/config.py`` do).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from neurokit._utils.errors import CardError
from neurokit.datasets import bcic2020, bciciv2a, chbmit, classic, faced, isruc, mumtaz, seedv, seedvig, shumi, tuh


@dataclass(frozen=True)
class DatasetReader:
    """How a card with ``layout.kind: reader`` lists and reads its recordings.

    Parameters
    ----------
    entries : callable
        ``entries(folder: Path) -> list[FileEntry]``: the dataset's recordings under ``folder``, each naming its
        reader (and archive member or trial, where one file holds several).
    read : callable
        ``read(path)`` or ``read(path, member)`` → :class:`mne.io.Raw` in volts with labelled annotations.
    base_of : callable
        A file given by name (``-f``) → the folder its listing starts from (the file's own folder, or the dataset
        folder above it whose layout labels it: TUAB's ``train/abnormal``, a CHB-MIT case's summary).
    reads_edf : bool
        Its recordings are EDF files read through :func:`~neurokit.io.eeg.read_eeg`, so the card's and the user's
        reading options (``units``, ``override_units``, ``encoding``…) are passed on.
    """

    entries: Callable[[Path], list]
    read: Callable[..., object]
    base_of: Callable[[Path], Path] = lambda p: Path(p).parent
    reads_edf: bool = False  # its files are EDFs read by read_eeg: the card's reading options apply to them

    def read_entry(self, entry, **reading):
        """Read one :class:`~neurokit.io.entry.FileEntry` (its archive member or trial when it names one);
        ``reading``: :func:`~neurokit.io.eeg.read_eeg`'s options (units, encoding…), for a reader of EDF files."""
        member = getattr(entry, "member", "")
        opts = reading if self.reads_edf else {}
        return self.read(entry.path, member, **opts) if member else self.read(entry.path, **opts)


def folder_above(*names: str, up: int = 0) -> Callable[[Path], Path]:
    """``base_of`` of a dataset whose labels lie in folders: the folder above the nearest ancestor of a file named
    one of ``names`` (case-insensitive; TUH's ``train``/``eval``), else ``up`` folders above the file's own.

    Parameters
    ----------
    *names : str
        Folder names that mark the dataset's split or label level.
    up : int
        Levels above the file's folder when no ancestor has one of ``names``.

    Returns
    -------
    callable
        ``Path → Path``.

    Examples
    --------
    >>> folder_above("train", "eval")(Path("/d/tuab/train/normal/a.edf"))
    PosixPath('/d/tuab')
    >>> folder_above(up=1)(Path("/d/chb_mit/chb01/chb01_03.edf"))
    PosixPath('/d/chb_mit')
    """

    def base(p: Path) -> Path:
        for a in Path(p).parents:
            if a.name.lower() in names:
                return a.parent
        return list(Path(p).parents)[min(up, len(Path(p).parents) - 1)]

    return base


DATASETS: dict[str, DatasetReader] = {
    "bonn": DatasetReader(classic.bonn_entries, classic.read_bonn),
    "smni": DatasetReader(classic.smni_entries, classic.read_smni),
    "eegmat": DatasetReader(classic.eegmat_entries, classic.read_eegmat, reads_edf=True),
    # the datasets CBraMod is judged on (github.com/wjq-learning/CBraMod), one module per dataset family
    "tuab": DatasetReader(tuh.tuab_entries, tuh.read_tuab, folder_above("train", "eval"), reads_edf=True),
    "tuev": DatasetReader(tuh.tuev_entries, tuh.read_tuev, folder_above("train", "eval"), reads_edf=True),
    "chb_mit": DatasetReader(
        chbmit.chb_mit_entries, chbmit.read_chb_mit, folder_above(up=1), reads_edf=True
    ),  # chbNN/chbNN_MM.edf
    "isruc": DatasetReader(isruc.isruc_entries, isruc.read_isruc, folder_above(up=1), reads_edf=True),  # N/N.rec
    "mumtaz": DatasetReader(mumtaz.mumtaz_entries, mumtaz.read_mumtaz, reads_edf=True),
    "bciciv2a": DatasetReader(bciciv2a.bciciv2a_entries, bciciv2a.read_bciciv2a),
    "faced": DatasetReader(faced.faced_entries, faced.read_faced),
    "seed_v": DatasetReader(seedv.seed_v_entries, seedv.read_seed_v),
    "shu_mi": DatasetReader(shumi.shu_mi_entries, shumi.read_shu_mi),
    "seed_vig": DatasetReader(seedvig.seed_vig_entries, seedvig.read_seed_vig, folder_above(up=1)),  # labels beside
    "bcic2020_3": DatasetReader(
        bcic2020.bcic2020_3_entries,
        bcic2020.read_bcic2020_3,
        folder_above("training set", "validation set", "test set"),
    ),
}


def get_reader(name: str) -> DatasetReader:
    """The reader a card names.

    Parameters
    ----------
    name : str
        A key of :data:`DATASETS` (``"tuab"``, ``"chb_mit"``, …).

    Returns
    -------
    DatasetReader

    Raises
    ------
    CardError
        An unknown name, listing the known ones.

    Examples
    --------
    >>> get_reader("tuab").base_of(Path("/d/tuab/eval/abnormal/x.edf"))
    PosixPath('/d/tuab')
    """
    if name not in DATASETS:
        raise CardError(f"unknown reader {name!r}; known: {sorted(DATASETS)}")
    return DATASETS[name]
