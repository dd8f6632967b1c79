"""One recording a data card points to (path, subject, session, run, events, archive member, reader)."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger("neurokit")


@dataclass
class FileEntry:
    """One recording a card points to.

    Attributes
    ----------
    path : Path
        The file (an archive for ``member``).
    subject : str
        The store's subject id.
    session, run : str
        Session and run labels (``""`` when none).
    events : dict of str to int or None
        Annotation description → class index of the card's task.
    member : str
        The recording inside an archive (Bonn's set ZIPs) or a file (a SEED-V trial); ``""`` for the whole file.
    reader : str
        ``""``: :func:`~neurokit.io.eeg.read_eeg`; ``"bids"``: :func:`~neurokit.io.bids.read_bids_eeg`; otherwise
        a key of :data:`neurokit.datasets.registry.DATASETS`.
    label : int or None
        A class for every window of the recording (a subject-level label, from ``participants.tsv``).
    """

    path: Path
    subject: str
    session: str = ""
    run: str = ""
    events: dict[str, int] | None = None  # annotation description → class index
    member: str = ""  # file inside an archive (Bonn set ZIPs)
    reader: str = ""  # "": neurokit.io.eeg.read_eeg; "bids": neurokit.io.bids.read_bids_eeg (sidecars); else a
    #                   dataset reader in neurokit.datasets.registry.DATASETS (Bonn, SMNI, EEGMAT)
    label: int | None = None  # subject-level class of every window (a participants.tsv column)
    root: Path | None = None  # the folder the listing started from (the data root): only the path below it may carry
    #                           meaning (labels or splits from folder names), never the folders above it

    def relative_parts(self) -> tuple[str, ...]:
        """The parts of :attr:`path` below :attr:`root` (all of them without a root or outside it): the folder names
        a label or split may be read from.

        Returns
        -------
        tuple of str

        Examples
        --------
        >>> FileEntry(Path("/d/abnormal/tuab/eval/normal/a.edf"), "a", root=Path("/d/abnormal/tuab")).relative_parts()
        ('eval', 'normal', 'a.edf')
        """
        p = Path(self.path)
        if self.root is not None:
            try:
                return p.resolve().relative_to(Path(self.root).resolve()).parts
            except ValueError:
                pass
        return p.parts


def named_files(base: Path, glob: str, name: re.Pattern) -> list[tuple[Path, re.Match]]:
    """The files under ``base`` (with its subfolders) matching ``glob`` whose names match ``name``, sorted by name,
    each with its match: the recordings of a dataset whose file names carry its subjects and sessions.

    Parameters
    ----------
    base : Path
        The dataset's folder.
    glob : str
        A pattern for :meth:`Path.rglob` (``"*.mat"``).
    name : re.Pattern
        Matched against each file's name (not its folder).

    Returns
    -------
    list of (Path, re.Match)

    Raises
    ------
    DataFileError
        One name found twice (a dataset's release reads one folder), naming both files.

    Examples
    --------
    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> for n in ("A02E.mat", "A01T.mat", "B01T.mat"):
    ...     _ = (d / n).write_bytes(b"")
    >>> [(p.name, m[1]) for p, m in named_files(d, "*.mat", re.compile(r"^A(0[1-9])[TE]\\.mat$"))]
    [('A01T.mat', '01'), ('A02E.mat', '02')]
    """
    from neurokit._utils.errors import DataFileError

    found: dict[str, tuple[Path, re.Match]] = {}
    for p in sorted(Path(base).rglob(glob)):
        m = name.match(p.name)
        if m is None:
            continue
        if p.name in found:
            raise DataFileError(
                f"{p}: a second {p.name} (the first is {found[p.name][0]}); keep one copy of the dataset"
            )
        found[p.name] = (p, m)
    return [found[n] for n in sorted(found)]
