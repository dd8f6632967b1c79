"""SEED-VIG (Zheng & Lu 2017, "A multimodal approach to estimating vigilance using EEG and forehead EOG", J Neural
Eng 14:026017): a simulated-driving vigilance dataset, 23 experiments of 21 subjects (subjects 4 and 5 twice), each
about two hours, with a continuous vigilance target, PERCLOS (the share of time the eyes are closed, 0–1), every 8 s.

The download lays each experiment out as two MATLAB files of the same name (``1_20151124_noon_2.mat``,
``2_20151106_noon.mat`` …: subject, date, time of day):

- ``Raw_Data/<name>.mat``: a struct ``EEG`` whose first field ``data`` is samples × 17 channels (µV, 200 Hz); other
  fields (``sample_rate``, ``chn``) follow;
- ``perclos_labels/<name>.mat``: a variable ``perclos`` (8-s steps × 1), one PERCLOS value per 8 s of ``data``.

CBraMod's ``preprocessing/preprocessing_seedvig.py`` (github.com/wjq-learning/CBraMod @ b9e9610) reads the first
field of ``EEG`` and ``perclos[:, 0]`` of the same-named label file, reshapes the 1,416,000 × 17 samples to 885 windows
of 8 patches of 200 samples (non-overlapping 8-s windows from the file's start, window ``i`` labelled
``perclos[i]``) and, at loading (``datasets/seedvig_dataset.py``), divides by 100; no filter, resampling, reference
or channel selection.

This reader returns the file's samples as they are, 17 channels in volts at 200 Hz, with one annotation
``seed_vig/perclos=<PERCLOS>`` per 8-s window from ``8i`` s (the value as Python's ``repr`` writes it, read back
exactly); the card's recipe cuts those windows, each with its float target (a regression task), and scales µV / 100.

The channel names are not in the release; they are the dataset's 17 electrodes (6 temporal, 11 posterior) in the
order of its description, the files' column order.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from neurokit._utils.errors import DataFileError
from neurokit.io.matlab import load_mat, mat_array

#: the 17 channels, in the files' column order (the dataset's description; the release names none)
CHANNELS = [
    "FT7", "FT8", "T7", "T8", "TP7", "TP8",  # temporal
    "CP1", "CP2", "P1", "Pz", "P2", "PO3", "POz", "PO4", "O1", "Oz", "O2",  # posterior
]  # fmt: skip
SFREQ = 200.0
#: one PERCLOS step: seconds, samples at 200 Hz (the release's reshape: 8 patches of 200)
WINDOW_S = 8.0
WINDOW_N = 1600
#: the folders of the download: EEG files and label files of the same names
EEG_DIR, LABEL_DIR = "Raw_Data", "perclos_labels"
DESCRIPTION = "seed_vig/perclos"
_NAME = re.compile(r"^(\d+)_(\w+)\.mat$")


def seed_vig_entries(base: Path) -> list:
    """The EEG files ``Raw_Data/<subject>_<date>_<time>.mat`` under ``base`` (sorted by name, as the release sorts
    them), one :class:`~neurokit.io.entry.FileEntry` each: subject ``S01`` (the name's leading number), session the
    rest of the name (``20151124_noon_2``), run the file's stem.

    Parameters
    ----------
    base : Path
        The dataset's folder (the data root joined with the layout's ``subdir``).

    Returns
    -------
    list of FileEntry
        One :class:`~neurokit.io.entry.FileEntry` per recording, naming this reader.

    Raises
    ------
    DataFileError
        One name found twice (the release reads one ``Raw_Data`` folder).

    Examples
    --------
    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> for n in ("Raw_Data/2_20151106_noon.mat", "Raw_Data/10_20151125_noon.mat", "perclos_labels/2_20151106_noon.mat"):
    ...     (d / n).parent.mkdir(exist_ok=True)
    ...     _ = (d / n).write_bytes(b"")
    >>> [(e.subject, e.session, e.run) for e in seed_vig_entries(d)]
    [('S10', '20151125_noon', '10_20151125_noon'), ('S02', '20151106_noon', '2_20151106_noon')]
    """
    from neurokit.io.entry import FileEntry

    found: dict[str, Path] = {}
    for p in sorted(Path(base).rglob("*.mat")):
        if p.parent.name != EEG_DIR or not _NAME.match(p.name):
            continue
        if p.name in found:
            raise DataFileError(f"{p}: a second {p.name} (the first is {found[p.name]}); keep one copy of the dataset")
        found[p.name] = p
    out = []
    for name in sorted(found):  # the release sorts the names as strings: '10_…' before '1_…'
        m = _NAME.match(name)
        assert m is not None  # kept above only when it matches
        p = found[name]
        out.append(FileEntry(path=p, subject=f"S{int(m[1]):02d}", session=m[2], run=p.stem, reader="seed_vig"))
    return out


def label_file(path: str | Path) -> Path:
    """The PERCLOS file of an EEG file: ``<…>/perclos_labels/<name>`` beside its ``Raw_Data`` folder.

    Parameters
    ----------
    path : str or Path
        ``<…>/Raw_Data/<name>.mat``.

    Returns
    -------
    Path
        ``<…>/perclos_labels/<name>.mat`` (not checked to exist).

    Examples
    --------
    >>> label_file("/d/SEED-VIG/Raw_Data/1_20151124_noon_2.mat").as_posix()
    '/d/SEED-VIG/perclos_labels/1_20151124_noon_2.mat'
    """
    path = Path(path)
    return path.parent.parent / LABEL_DIR / path.name


def release_windows(path: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """One experiment's EEG ``(17, n_samples)`` µV, as the file stores it transposed, and its PERCLOS values
    ``(n_windows,)`` float64, one per 8 s of samples.

    Parameters
    ----------
    path : str or Path
        An EEG file ``Raw_Data/<name>.mat``; its labels are read from :func:`label_file`.

    Returns
    -------
    eeg : ndarray, shape (17, n_samples), float64
        µV at 200 Hz.
    perclos : ndarray, shape (n_samples // 1600,), float64
        One PERCLOS value (0-1) per 8-s window.

    Raises
    ------
    DataFileError
        No struct ``EEG`` (or ``perclos`` in the label file, or no label file); ``EEG``'s first field not samples ×
        17 channels; a sample count that is not 1600 × the number of PERCLOS values (naming both counts);
        PERCLOS values that are not finite or outside 0-1 (naming the windows).
    """
    path = Path(path)
    eeg = load_mat(path, ["EEG"])["EEG"]
    if not isinstance(eeg, dict) or not eeg:
        raise DataFileError(f"{path}: variable 'EEG' is not a MATLAB struct with a data field (as SEED-VIG's Raw_Data)")
    # the release takes the struct's FIRST field (its 'data'); a v7.3 file lists fields by name, so 'data' first
    field = "data" if "data" in eeg else next(iter(eeg))
    x = mat_array(eeg[field], ("time", "channel"), source=path, what=f"EEG.{field}", want=("channel", "time"))
    if x.shape[0] != len(CHANNELS):
        raise DataFileError(
            f"{path}: EEG.{field} has shape {x.shape[::-1]}; expected (samples, 17 channels) as SEED-VIG's Raw_Data"
        )
    lab = label_file(path)
    if not lab.is_file():
        raise DataFileError(
            f"{path}: no PERCLOS file {lab}; the download holds {LABEL_DIR}/ beside {EEG_DIR}/ with the same names"
        )
    y = mat_array(load_mat(lab, ["perclos"])["perclos"], ("window",), source=lab, what="variable 'perclos'")
    n = x.shape[1]
    if len(y) == 0 or n != WINDOW_N * len(y):
        raise DataFileError(
            f"{path}: EEG.{field} holds {n} samples ({n / WINDOW_N:g} 8-s windows at 200 Hz) but {lab.name} "
            f"holds {len(y)} PERCLOS values; give the label file of this experiment (one value per 8 s)"
        )
    bad = np.flatnonzero(~np.isfinite(y) | (y < 0) | (y > 1))
    if len(bad):  # PERCLOS is a fraction of time with the eyes closed: a NaN, or percent, would train silently
        shown = ", ".join(f"{int(i)} ({float(y[i]):g})" for i in bad[:5]) + (" …" if len(bad) > 5 else "")
        raise DataFileError(
            f"{lab}: {len(bad)} PERCLOS value(s) outside 0-1 or not finite, at windows {shown}; PERCLOS is a "
            "fraction (0-1): give SEED-VIG's perclos_labels file of this experiment (values in percent: divide by 100)"
        )
    return x, y


def read_seed_vig(path: str | Path):
    """One experiment as an MNE Raw: 17 channels in volts at 200 Hz, one annotation ``seed_vig/perclos=<value>``
    per 8-s window with its PERCLOS value (see the module).

    Parameters
    ----------
    path : str or Path
        An EEG file ``Raw_Data/<name>.mat`` (its PERCLOS file beside the folder).

    Returns
    -------
    mne.io.RawArray
        17 channels in volts at 200 Hz, one annotation ``seed_vig/perclos=<value>`` per 8-s window.

    Raises
    ------
    DataFileError
        As :func:`release_windows`, or an unreadable file.
    """
    from neurokit.io.eeg import raw_from_uv

    x, y = release_windows(path)
    ann = [(i * WINDOW_S, WINDOW_S, f"{DESCRIPTION}={float(v)!r}") for i, v in enumerate(y)]
    return raw_from_uv(x, CHANNELS, SFREQ, str(path), annotations=ann)
