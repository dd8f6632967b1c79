"""SEED-V (five emotions, 16 subjects x 3 sessions of 15 film clips, 62-channel Neuroscan ``.cnt``), as the CBraMod
release reads it (github.com/wjq-learning/CBraMod @ b9e9610, ``preprocessing/preprocessing_SEEDV.py``).

The release reads each ``<subject>_<session>_<date>.cnt`` with :func:`mne.io.read_raw_cnt`, drops M1, M2, VEO and
HEO, resamples the whole recording to 200 Hz, band-passes it 0.3-75 Hz (MNE's default FIR, no notch), cuts the 15
trials at its per-session lists of start/end seconds (:data:`TRIALS`), labels them from its per-session lists
(:data:`LABELS`) and tiles each trial into 1-s samples. It splits by TRIAL INDEX within every recording: trials
0-4 train, 5-9 validation, 10-14 test, for every subject alike.

So that a store can carry that split, :func:`seed_v_entries` lists every recording once per trial (``member``
``trial<j>``, run ``t<jj>``) and :func:`read_seed_v` returns one trial: the whole recording is read, trimmed,
resampled and filtered first (as the release does, so the filter sees the whole recording), then the trial is
cut. The processed recording of the last file is kept in memory, so the 15 trials of a file cost one read.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import numpy as np

from neurokit._utils.errors import DataFileError

#: the release's emotion labels 0-4 (SEED-V's order: disgust, fear, sad, neutral, happy)
EMOTIONS = ("disgust", "fear", "sad", "neutral", "happy")
#: channels the release drops before anything else (mastoids and the two EOG derivations)
DROPPED = ("M1", "M2", "VEO", "HEO")
N_EEG = 62
RELEASE_SFREQ = 200.0
L_FREQ, H_FREQ = 0.3, 75.0
#: session -> (start seconds, end seconds) of its 15 trials: the release's lists
TRIALS: dict[str, tuple[tuple[int, ...], tuple[int, ...]]] = {
    "1": (
        (30, 132, 287, 555, 773, 982, 1271, 1628, 1730, 2025, 2227, 2435, 2667, 2932, 3204),
        (102, 228, 524, 742, 920, 1240, 1568, 1697, 1994, 2166, 2401, 2607, 2901, 3172, 3359),
    ),
    "2": (
        (30, 299, 548, 646, 836, 1000, 1091, 1392, 1657, 1809, 1966, 2186, 2333, 2490, 2741),
        (267, 488, 614, 773, 967, 1059, 1331, 1622, 1777, 1908, 2153, 2302, 2428, 2709, 2817),
    ),
    "3": (
        (30, 353, 478, 674, 825, 908, 1200, 1346, 1451, 1711, 2055, 2307, 2457, 2726, 2888),
        (321, 418, 643, 764, 877, 1147, 1284, 1418, 1679, 1996, 2275, 2425, 2664, 2857, 3066),
    ),
}
#: session -> the release's label (index into :data:`EMOTIONS`) of each of its 15 trials
LABELS: dict[str, tuple[int, ...]] = {
    "1": (4, 1, 3, 2, 0, 4, 1, 3, 2, 0, 4, 1, 3, 2, 0),
    "2": (2, 1, 3, 0, 4, 4, 0, 3, 2, 1, 3, 4, 1, 2, 0),
    "3": (2, 1, 3, 0, 4, 4, 0, 3, 2, 1, 3, 4, 1, 2, 0),
}
_NAME = re.compile(r"(\d+)_([123])_.*")


def parse_name(name: str) -> tuple[str, str] | None:
    """(subject, session) from a SEED-V file name ``<subject>_<session>_<date>.cnt``; ``None`` for other names.

    Parameters
    ----------
    name : str
        A file name (no folder).

    Returns
    -------
    tuple of str, or None
        ``(subject, session)``, the session ``"1"``, ``"2"`` or ``"3"``.

    Examples
    --------
    >>> parse_name("1_2_20180804.cnt"), parse_name("readme.txt")
    (('1', '2'), None)
    """
    m = _NAME.fullmatch(Path(name).stem)
    return (m.group(1), m.group(2)) if m and Path(name).suffix.lower() == ".cnt" else None


def seed_v_entries(base: Path) -> list:
    """Every ``<subject>_<session>_<date>.cnt`` under ``base``, once per trial (sorted by subject, session, trial):
    subject ``<subject>``, session ``<session>``, run ``t00`` ... ``t14`` (the trial index, which the card splits
    on), member ``trial<j>`` (the trial :func:`read_seed_v` returns).

    Parameters
    ----------
    base : Path
        The dataset's folder (the data root joined with the layout's ``subdir``).

    Returns
    -------
    list of FileEntry
        One :class:`~neurokit.io.entry.FileEntry` per recording, naming this reader. Fifteen per file, one per trial.

    Examples
    --------
    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp()); _ = (d / "2_1_20180101.cnt").write_bytes(b""); _ = (d / "x.cnt").write_bytes(b"")
    >>> [(e.subject, e.session, e.run, e.member) for e in seed_v_entries(d)][:2]
    [('2', '1', 't00', 'trial0'), ('2', '1', 't01', 'trial1')]
    """
    from neurokit.io.entry import FileEntry

    found = []
    for p in Path(base).rglob("*"):
        ids = parse_name(p.name) if p.is_file() else None
        if ids:
            found.append((int(ids[0]), int(ids[1]), str(p), ids))
    return [
        FileEntry(path=Path(p), subject=s, session=ses, run=f"t{j:02d}", member=f"trial{j}", reader="seed_v")
        for _, _, p, (s, ses) in sorted(found)
        for j in range(15)
    ]


def load_cnt(path: Path):
    """The Neuroscan file as MNE reads it (the release's call: ``data_format='auto'``, 16- or 32-bit counts).

    Parameters
    ----------
    path : Path
        A SEED-V ``.cnt`` file.

    Returns
    -------
    mne.io.Raw
        Loaded, all 66 channels.

    Raises
    ------
    Exception
        Whatever :func:`mne.io.read_raw_cnt` raises on an unreadable file (:func:`read_seed_v` turns it into a
        :class:`DataFileError`).
    """
    import mne

    return mne.io.read_raw_cnt(path, preload=True, verbose="error")


def _one_line(exc: Exception) -> str:
    """A reader's exception as one line: MNE's ``read_raw_cnt`` wraps its error in a multi-line text (a traceback
    excerpt, then ``<Type>Error: <message>``, then a note on ANT Neuro files); keep that last error line."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    errors = [ln for ln in lines if re.match(r"\w+(Error|Exception): ", ln)]
    return errors[-1] if errors else f"{type(exc).__name__}: {' '.join(lines)}"


def _processed(path: Path):
    st = path.stat()
    return _processed_cached(str(path.resolve()), st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=1)
def _processed_cached(path: str, size: int, mtime_ns: int) -> tuple[np.ndarray, list[str]]:
    """The release's signal steps on a whole recording: drop, resample 200 Hz, 0.3-75 Hz; (62, n) µV, names."""
    try:
        raw = load_cnt(Path(path))
    except DataFileError:
        raise
    except Exception as exc:
        raise DataFileError(
            f"{path}: not a readable Neuroscan .cnt ({_one_line(exc)}); download the file again from SEED-V's "
            "EEG_raw folder or move it out of the data root"
        ) from exc
    missing = [c for c in DROPPED if c not in raw.ch_names]
    if missing or len(raw.ch_names) - len(DROPPED) != N_EEG:
        raise DataFileError(
            f"{path}: {len(raw.ch_names)} channels{' without ' + ', '.join(missing) if missing else ''}; a SEED-V "
            f"recording holds {N_EEG} EEG channels plus {', '.join(DROPPED)} (66), which the release drops; use "
            "SEED-V's EEG_raw file as released or move it out of the data root"
        )
    raw.drop_channels(list(DROPPED))
    raw.resample(RELEASE_SFREQ, verbose="error")
    raw.filter(l_freq=L_FREQ, h_freq=H_FREQ, verbose="error")
    return raw.get_data(units="uV"), list(raw.ch_names)


def read_seed_v(path: str | Path, trial: int | str | None = None):
    """One SEED-V trial (``trial`` 0-14, or a member name ``trial<j>``) after the release's steps on the whole
    recording (M1/M2/VEO/HEO dropped, 200 Hz, 0.3-75 Hz), in volts, annotated ``seedv/<emotion>`` over the trial;
    ``trial=None``: the whole processed recording with its 15 trials annotated at their release times.

    Parameters
    ----------
    path : str or Path
        A ``<subject>_<session>_<date>.cnt`` file.
    trial : int, str or None
        The trial, 0-14 or ``"trial<j>"``; ``None`` for the whole recording.

    Returns
    -------
    mne.io.RawArray
        62 EEG channels in volts at 200 Hz (the trial, or the whole recording), annotated ``seedv/<emotion>``.

    Raises
    ------
    DataFileError
        An unreadable file, a name that is not ``<subject>_<session>_<date>.cnt``, another channel count than
        66 (62 EEG + M1, M2, VEO, HEO), or a recording shorter than the release's last trial end.
    """
    from neurokit.io.eeg import raw_from_uv

    path = Path(path)
    ids = parse_name(path.name)
    if ids is None:
        raise DataFileError(f"{path}: not a SEED-V file name '<subject>_<session>_<date>.cnt' (session 1, 2 or 3)")
    session = ids[1]
    data, names = _processed(path)
    starts, ends = TRIALS[session]
    n = int(round(RELEASE_SFREQ))
    if data.shape[1] < ends[-1] * n:
        raise DataFileError(
            f"{path}: {data.shape[1] / n:.1f} s at 200 Hz; session {session}'s last trial ends at {ends[-1]} s; "
            "download the whole file again or move it out of the data root"
        )
    if isinstance(trial, str):
        trial = int(trial.removeprefix("trial"))
    if trial is None:
        ann: list[tuple[float, float, str]] = [
            (float(s), float(e - s), f"seedv/{EMOTIONS[k]}") for s, e, k in zip(starts, ends, LABELS[session])
        ]
        return raw_from_uv(data, names, RELEASE_SFREQ, str(path), annotations=ann)
    if not 0 <= trial < 15:
        raise DataFileError(f"{path}: trial {trial}; SEED-V sessions hold trials 0-14")
    seg = data[:, starts[trial] * n : ends[trial] * n]
    ann = [(0.0, float(seg.shape[1] / RELEASE_SFREQ), f"seedv/{EMOTIONS[LABELS[session][trial]]}")]
    return raw_from_uv(seg, names, RELEASE_SFREQ, f"{path}:trial{trial}", annotations=ann)
