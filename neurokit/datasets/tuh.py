"""The TUH EEG corpora CBraMod is judged on: TUAB (abnormal EEG, v3.0.1) and TUEV (EEG events, v2.0.0/2.0.1).

Both ship EDF files read through MNE (:func:`~neurokit.io.read_eeg`; TUH's ``EEG FP1-REF`` … ``EEG T3-REF`` labels
read as the 10-05 ``Fp1`` … ``T7``). What labels them is the dataset's own:

* **TUAB** — the folder: ``edf/{train,eval}/{abnormal,normal}/01_tcp_ar/<patient>_s<session>_t<token>.edf``. The
  recording is annotated ``tuab/abnormal`` or ``tuab/normal`` over its whole length.
* **TUEV** — a ``.rec`` text file beside each EDF (``edf/{train,eval}/<patient>/<patient>_<n>.edf`` and ``.rec``),
  one row per event and channel: ``channel,start_s,end_s,label`` with labels 1–6 (spsw, gped, pled, eyem, artf,
  bckg). Each row becomes an annotation ``tuev/<label>``; its onset is the first 200-Hz sample at or after
  ``start_s`` (the index CBraMod's ``preprocessing_tuev.py`` takes on its 200-Hz time axis).

The patient (the file name up to its first ``_``) is the subject, as the release's splits use it. Source: the TUH EEG
corpus (Obeid & Picone 2016, isip.piconepress.com), layouts as the release's ``preprocessing_tuab.py`` /
``preprocessing_tuev.py`` (github.com/wjq-learning/CBraMod @ b9e9610) read them.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np

from neurokit._utils.errors import DataFileError

#: TUEV's event labels, 1-6 in its .rec files
TUEV_LABELS = {1: "spsw", 2: "gped", 3: "pled", 4: "eyem", 5: "artf", 6: "bckg"}
#: the rate on whose samples the release places TUEV's event starts
TUEV_GRID_HZ = 200.0
#: the sampling rates of TUH EEG recordings (the TUAB and TUEG cards' ``recording.sfreq``)
TUH_RATES = (250.0, 256.0, 400.0, 512.0)


def _split_and_class(path: Path, classes: tuple[str, ...]) -> tuple[str, str]:
    """TUH's ``train``/``eval`` folder nearest the file and the class folder below it (``edf/train/abnormal/…``):
    folders above the dataset (a parent folder named ``abnormal`` or ``eval``) carry no meaning."""
    parts = [p.lower() for p in Path(path).parts[:-1]]
    at = max((i for i, p in enumerate(parts) if p in ("train", "eval")), default=-1)
    if at < 0:
        return "", ""
    cls = next((c for c in parts[at + 1 :] if c in classes), "")
    return parts[at], cls


def _check_rate(path, sf: float, corpus: str) -> None:
    if not any(abs(sf - r) < 1e-6 for r in TUH_RATES):
        warnings.warn(
            f"{path}: {sf:g} Hz, a rate TUH's recordings never have ({', '.join(f'{r:g}' for r in TUH_RATES)} Hz): "
            f"is this file from {corpus}? The card reads it as {corpus}",
            RuntimeWarning,
            stacklevel=3,
        )


def _entry(path: Path, reader: str):
    from neurokit.io.entry import FileEntry

    stem = path.stem
    patient = stem.split("_")[0]
    session = next((p for p in stem.split("_")[1:] if p.startswith("s") and p[1:].isdigit()), "")
    return FileEntry(path=path, subject=patient, session=session, run=stem, reader=reader)


# ------------------------------------------------------------------------------------------------ TUAB
def tuab_entries(base: Path) -> list:
    """Every TUAB EDF under ``base`` that lies under a ``train`` or ``eval`` folder and an ``abnormal`` or ``normal``
    folder (sorted by path).

    Parameters
    ----------
    base : Path
        The dataset's folder (the data root joined with the layout's ``subdir``).

    Returns
    -------
    list of FileEntry
        One :class:`~neurokit.io.entry.FileEntry` per recording, naming this reader. Subject the patient (the name up to its first ``_``).
    """
    out = []
    for p in sorted(Path(base).rglob("*.edf")):
        part, cls = _split_and_class(p.relative_to(base), ("abnormal", "normal"))
        if part and cls:
            out.append(_entry(p, "tuab"))
    return out


def read_tuab(path: str | Path, **reading):
    """One TUAB recording (EDF) annotated ``tuab/abnormal`` or ``tuab/normal`` over its whole length, by the folder
    it lies in.

    Parameters
    ----------
    path : str or Path
        An EDF under ``…/{train,eval}/{abnormal,normal}/``.

    Returns
    -------
    mne.io.RawArray
        As :func:`~neurokit.io.eeg.read_eeg` reads it (10-05 names, volts), annotated over its whole length.

    Raises
    ------
    DataFileError
        A file under neither an ``abnormal`` nor a ``normal`` folder; any reading fault of the EDF.
    """
    import mne

    from neurokit.io.eeg import read_eeg

    path = Path(path)
    _, cls = _split_and_class(path, ("abnormal", "normal"))
    if not cls:
        raise DataFileError(f"{path}: a TUAB recording lies under an 'abnormal' or 'normal' folder; this one does not")
    raw = read_eeg(path, **reading)
    _check_rate(path, float(raw.info["sfreq"]), "TUAB")
    raw.set_annotations(mne.Annotations([0.0], [raw.n_times / raw.info["sfreq"]], [f"tuab/{cls}"]))
    return raw


# ------------------------------------------------------------------------------------------------ TUEV
def read_rec(path: str | Path) -> np.ndarray:
    """A TUEV ``.rec`` label file as an ``(n_events, 4)`` float array of ``channel, start_s, end_s, label``.

    Parameters
    ----------
    path : str or Path
        A ``.rec`` file (comma-separated, four numbers a row).

    Returns
    -------
    ndarray, shape (n_events, 4), float64
        ``channel, start_s, end_s, label`` per row.

    Raises
    ------
    DataFileError
        A missing file, a row that is not four numbers, an end before its start, or a label outside 1–6 (naming the
        file and the line).
    """
    path = Path(path)
    if not path.is_file():
        raise DataFileError(f"{path}: no such label file (TUEV keeps each recording's events in a .rec beside it)")
    rows = []
    for k, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        if not line.strip():
            continue
        try:
            vals = [float(v) for v in line.split(",")]
        except ValueError:
            vals = []
        if len(vals) != 4:
            raise DataFileError(f"{path}:{k}: {line.strip()!r} is not 'channel,start_s,end_s,label'")
        if not vals[2] > vals[1] >= 0 or int(vals[3]) not in TUEV_LABELS or vals[3] != int(vals[3]):
            raise DataFileError(
                f"{path}:{k}: {line.strip()!r}: needs 0 <= start < end and a label in 1-6 ({TUEV_LABELS})"
            )
        rows.append(vals)
    return np.asarray(rows, dtype=np.float64).reshape(-1, 4)


def tuev_entries(base: Path) -> list:
    """Every TUEV EDF under ``base`` that lies under a ``train`` or ``eval`` folder (sorted by path); its ``.rec`` is
    read with it.

    Parameters
    ----------
    base : Path
        The dataset's folder (the data root joined with the layout's ``subdir``).

    Returns
    -------
    list of FileEntry
        One :class:`~neurokit.io.entry.FileEntry` per recording, naming this reader. Subject the patient (the name up to its first ``_``).
    """
    out = []
    for p in sorted(Path(base).rglob("*.edf")):
        part, _ = _split_and_class(p.relative_to(base), ())
        if part:
            out.append(_entry(p, "tuev"))
    return out


def read_tuev(path: str | Path, **reading):
    """One TUEV recording (EDF) with an annotation ``tuev/<label>`` per row of its ``.rec`` file: onset the first
    200-Hz sample at or after the row's start, duration the row's length.

    Parameters
    ----------
    path : str or Path
        An EDF with its ``.rec`` beside it.

    Returns
    -------
    mne.io.RawArray
        As :func:`~neurokit.io.eeg.read_eeg` reads it (10-05 names, volts), one annotation per ``.rec`` row.

    Raises
    ------
    DataFileError
        No ``.rec`` beside the EDF, a bad row (:func:`read_rec`), or an event that starts after the recording ends
        (the label file does not match its recording).
    """
    import mne

    from neurokit.io.eeg import read_eeg

    path = Path(path)
    rec = path.with_suffix(".rec")
    events = read_rec(rec)
    raw = read_eeg(path, **reading)
    _check_rate(path, float(raw.info["sfreq"]), "TUEV")
    dur = raw.n_times / raw.info["sfreq"]
    late = events[events[:, 1] >= dur]
    if len(late):
        raise DataFileError(
            f"{rec}: {len(late)} event(s) start at or after the end of {path.name} ({dur:.2f} s), e.g. at "
            f"{late[0, 1]:g} s: the label file does not match its recording"
        )
    grid = TUEV_GRID_HZ
    onsets = [math.ceil(s * grid - 1e-6) / grid for s in events[:, 1]]
    raw.set_annotations(
        mne.Annotations(onsets, list(events[:, 2] - events[:, 1]), [f"tuev/{int(v)}" for v in events[:, 3]])
    )
    return raw
