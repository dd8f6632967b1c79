"""Mumtaz 2016: resting EEG of patients with major depressive disorder (MDD) and healthy controls (figshare "MDD
Patients and Healthy Controls EEG Data").

One folder of EDF files, one per subject and condition: ``H S1 EC.edf`` (healthy subject 1, eyes closed), ``H S1
EO.edf`` (eyes open), ``H S1 TASK.edf`` (P300 task), ``MDD S1 EC.edf`` …; 19 scalp channels ``EEG Fp1-LE`` …
``EEG Pz-LE`` (linked ears) beside ``EEG A2-A1`` and, in some files, ``EEG 23A-23R`` / ``EEG 24A-24R``, at 256 Hz.
The published folder also holds two copies of one recording under figshare ids, ``6921143_H S15 EO.edf`` and
``6921959_H S15 EO.edf``.

As CBraMod's ``preprocessing/preprocessing_mumtaz.py`` (github.com/wjq-learning/CBraMod @ b9e9610) reads it: the
TASK files are left out; a file is MDD (class 1) when ``MDD`` is in its name, healthy (0) otherwise. Each recording
is annotated ``mumtaz/MDD`` or ``mumtaz/H`` over its whole length. The subject is the group and subject number
(``H S1``, ``MDD S12``; a figshare-id prefix is not part of it), the run the file's stem (``H S1 EC``), unique in
the folder, which the release's split (by sorted file name) needs.

Source: Mumtaz W, Xia L, Yasin MAM, Ali SSA, Malik AS. A wavelet-based technique to predict treatment outcome for
major depressive disorder. PLoS ONE 12(2):e0171409, 2017; data at figshare (doi:10.6084/m9.figshare.4244171).
"""

from __future__ import annotations

import re
from pathlib import Path

from neurokit._utils.errors import DataFileError

#: a file's group and subject number: ``MDD S12``, ``H S1`` (anywhere in its name, e.g. after a figshare id)
_SUBJECT = re.compile(r"(?:^|[\s_])(MDD|H)\s+S\s*(\d+)(?=\s|$)")


def _group(name: str) -> str:
    """``MDD`` when ``MDD`` is in the file name (the release's test), else ``H``."""
    return "MDD" if "MDD" in name else "H"


def mumtaz_entries(base: Path) -> list:
    """The recordings of the Mumtaz 2016 folder ``base``: every ``.edf`` file under it whose name does not hold
    ``TASK`` (sorted by path), one :class:`~neurokit.io.entry.FileEntry` each (subject ``H S1``, run the stem).

    Parameters
    ----------
    base : Path
        The folder holding the EDF files (searched with its subfolders).

    Returns
    -------
    list of FileEntry
        With ``reader="mumtaz"``.

    Raises
    ------
    DataFileError
        Two files of one name (the release's split goes by file name); a name without a group and subject
        (``H S1``, ``MDD S1``); a name holding ``MDD`` elsewhere than at its start (the card's split rule groups
        files by how their names start, the release by ``MDD`` anywhere in them).

    Examples
    --------
    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> for n in ("H S1 EC.edf", "H S1 TASK.edf", "6921143_H S15 EO.edf", "MDD S2 EO.edf"):
    ...     _ = (d / n).write_bytes(b"")
    >>> [(e.subject, e.run) for e in mumtaz_entries(d)]
    [('H S15', '6921143_H S15 EO'), ('H S1', 'H S1 EC'), ('MDD S2', 'MDD S2 EO')]
    """
    from neurokit.io.entry import FileEntry

    base = Path(base)
    files = sorted(p for p in base.rglob("*") if p.suffix.lower() == ".edf" and p.is_file() and "TASK" not in p.name)
    seen: dict[str, Path] = {}
    out = []
    for p in files:
        if p.name in seen:
            raise DataFileError(
                f"{p}: a second file named {p.name!r} (also {seen[p.name]}); the split goes by file name, so each "
                "name must occur once: keep one folder of the download"
            )
        seen[p.name] = p
        m = _SUBJECT.search(p.stem)
        if m is None:
            raise DataFileError(
                f"{p}: not a Mumtaz 2016 file name ('H S1 EC.edf', 'MDD S1 EO.edf': group, subject, condition)"
            )
        if _group(p.name) == "MDD" and not p.name.startswith("MDD"):
            raise DataFileError(
                f"{p}: 'MDD' inside the name but not at its start; the card's split rule groups files by how "
                "their names start (MDD files start with 'MDD'), rename the file"
            )
        out.append(FileEntry(path=p, subject=f"{m.group(1)} S{int(m.group(2))}", run=p.stem, reader="mumtaz"))
    return out


def read_mumtaz(path: str | Path, **reading):
    """One Mumtaz 2016 recording (EDF, volts, 10-05 names: ``EEG Fp1-LE`` reads as ``Fp1``) annotated
    ``mumtaz/MDD`` when ``MDD`` is in its file name, else ``mumtaz/H``, over its whole length.

    Parameters
    ----------
    path : str | Path
        The EDF file.

    Returns
    -------
    mne.io.Raw
        Unloaded; the other channels (``EEG A2-A1``, ``EEG 23A-23R``) keep their labels.

    Raises
    ------
    DataFileError
        A TASK file (the release leaves them out), a file that is not EDF, or any reading fault of the EDF.
    """
    import mne

    from neurokit.io.eeg import read_eeg

    path = Path(path)
    if "TASK" in path.name:
        raise DataFileError(f"{path}: a TASK recording; the Mumtaz card (as the release) reads EC and EO files only")
    if path.suffix.lower() != ".edf":
        raise DataFileError(f"{path}: the Mumtaz 2016 recordings are EDF files (.edf)")
    raw = read_eeg(path, **reading)
    raw.set_annotations(mne.Annotations([0.0], [raw.n_times / raw.info["sfreq"]], [f"mumtaz/{_group(path.name)}"]))
    return raw
