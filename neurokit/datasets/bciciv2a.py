"""BCI Competition IV dataset 2a (Graz; BNCI Horizon 2020 "001-2014"): four-class motor imagery, 9 subjects, two
sessions each, as the MATLAB files ``A01T.mat`` … ``A09E.mat`` (``T`` the training session, ``E`` the evaluation
session, whose true labels the BNCI files carry).

Each file holds one variable ``data``: a 1 × N cell of structs, one per run, with fields ``X`` (samples × 25
channels, µV, 250 Hz: 22 EEG then 3 EOG), ``trial`` (each trial's start as a sample index), ``y`` (its class 1–4:
left hand, right hand, feet, tongue), ``fs``, ``classes``, ``artifacts`` …. The first runs of a session are EOG
calibration runs without trials (empty ``y``): three in most files, one in ``A04T``.

As CBraMod's ``preprocessing/preprocessing_bciciv2a.py`` (github.com/wjq-learning/CBraMod @ b9e9610) prepares a
trial — steps that this reader does (why not the card's recipe: below):

1. runs with an empty ``y`` are skipped;
2. the trial's segment runs from its ``trial`` value, used as a 0-based index, to the next trial's (the last trial:
   to the run's end), of the first 22 columns (the EEG);
3. from each sample the mean over the 22 channels is subtracted (a common average reference);
4. a 5th-order Butterworth band-pass 0.3–40 Hz (``scipy.signal.butter``) is applied with ``scipy.signal.lfilter``
   along time: causal, not zero-phase, its state starting at zero at the trial's start;
5. seconds 2–6 of the trial (the cue at 2 s and the 4 s of imagery after it) are what the release keeps.

This reader returns the filtered first 6 s of every trial laid end to end (trial ``k`` of the file at ``6k`` s),
22 channels in volts at 250 Hz, with an annotation ``bciciv2a/<y>`` from ``6k + 2`` s lasting 4 s. The card's recipe
then cuts those 4-s windows, resamples each alone to 800 samples (:func:`scipy.signal.resample`) and scales µV / 100,
with no filter of its own. Steps 3–4 only look at a trial's first 6 s, so keeping just those equals the release.

Steps 3–4 stay here rather than in the recipe (``reference: average`` and a causal filter restarting at each
trial) because they would not give the same numbers there: the b/a form of this band-pass (order 10, lower edge
at 0.0012 of the sampling rate) is ill-conditioned, so a one-ulp change of its input moves its output by ~2e-5 of the
output's size, and a recipe step works on volts where the release filters µV. Nearly every stored float32 value
would change.

Sources: Brunner C, Leeb R, Müller-Putz GR, Schlögl A, Pfurtscheller G. BCI Competition 2008 – Graz data set A
(bbci.de/competition/iv/desc_2a.pdf); the MATLAB files at bnci-horizon-2020.eu/database/data-sets (001-2014).
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np

from neurokit._utils.errors import DataFileError
from neurokit.io.matlab import load_mat, mat_array, mat_field

#: the 22 EEG channels, in the files' column order (desc_2a.pdf, Figure 3)
CHANNELS = [
    "Fz", "FC3", "FC1", "FCz", "FC2", "FC4", "C5", "C3", "C1", "Cz", "C2",
    "C4", "C6", "CP3", "CP1", "CPz", "CP2", "CP4", "P1", "Pz", "P2", "POz",
]  # fmt: skip
SFREQ = 250.0
#: the release's band-pass: Butterworth order, band (Hz)
ORDER, BAND = 5, (0.3, 40.0)
#: the part of a trial (s after its start) that the release keeps, and how much of the trial its filter sees for it
KEEP_S, TRIAL_S = (2.0, 6.0), 6.0
CLASSES = {1: "left_hand", 2: "right_hand", 3: "feet", 4: "tongue"}
_NAME = re.compile(r"^A(0[1-9])([TE])\.mat$")


def bciciv2a_entries(base: Path) -> list:
    """The files ``A01T.mat`` … ``A09E.mat`` under ``base`` (with its subfolders; sorted by name), one
    :class:`~neurokit.io.entry.FileEntry` each: subject ``A01``, session ``T`` or ``E``, run the stem (``A01T``).

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
        One name found twice (the release reads one folder).

    Examples
    --------
    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> for n in ("A02E.mat", "A01T.mat", "B01T.mat"):
    ...     _ = (d / n).write_bytes(b"")
    >>> [(e.subject, e.session, e.run) for e in bciciv2a_entries(d)]
    [('A01', 'T', 'A01T'), ('A02', 'E', 'A02E')]
    """
    from neurokit.io.entry import FileEntry, named_files

    return [
        FileEntry(path=p, subject=f"A{m[1]}", session=m[2], run=p.stem, reader="bciciv2a")
        for p, m in named_files(base, "*.mat", _NAME)
    ]


def release_trials(path: str | Path, nonfinite: list | None = None) -> tuple[np.ndarray, list[int]]:
    """The release's steps 1–4 on every trial of one file: ``(n_trials, 22, 1500)`` µV (the first 6 s, filtered)
    and the labels 1–4, in the file's order.

    Parameters
    ----------
    path : str or Path
        One session file ``A0<s>T.mat`` or ``A0<s>E.mat``.
    nonfinite : list, optional
        Where to append ``(index, run, trial, channels)`` for each trial holding NaN/inf samples (``index`` its
        position in the output, ``run``/``trial`` 1-based, ``channels`` the EEG channels concerned); its output
        holds NaN then.

    Returns
    -------
    trials : ndarray, shape (n_trials, 22, 1500), float64
        Each trial's first 6 s at 250 Hz in µV, average-referenced and band-passed as the release does.
    labels : list of int
        The trials' classes 1-4 (:data:`CLASSES`), in the file's order.

    Raises
    ------
    DataFileError
        No variable ``data``; a run without ``X``/``trial``/``y`` or with fewer than 22 columns; trial and label
        lists of different lengths; a label outside 1–4; a trial that starts outside its run or whose run ends less
        than 6 s after its start (the trial list does not match the recording).
    """
    from scipy.signal import butter, lfilter

    path = Path(path)
    runs = load_mat(path, ["data"])["data"]
    if isinstance(runs, dict):  # a 1 x 1 cell reads as the struct itself
        runs = [runs]
    if not isinstance(runs, list):
        raise DataFileError(f"{path}: variable 'data' is not a cell of run structs ({type(runs).__name__})")
    b, a = butter(ORDER, [BAND[0] / (SFREQ / 2), BAND[1] / (SFREQ / 2)], btype="band")
    n_keep = int(round(TRIAL_S * SFREQ))
    out: list[np.ndarray] = []
    labels: list[int] = []
    for j, run in enumerate(runs):
        what = f"data{{{j + 1}}}"
        y = mat_array(mat_field(run, "y", source=path, what=what), ("trial",), source=path, what=f"{what}.y")
        if y.size == 0:  # an EOG calibration run
            continue
        x = mat_array(mat_field(run, "X", source=path, what=what), ("time", "channel"), source=path, what=f"{what}.X")
        starts = mat_array(
            mat_field(run, "trial", source=path, what=what), ("trial",), source=path, what=f"{what}.trial"
        )
        n = x.shape[0]
        if x.shape[1] < len(CHANNELS):
            raise DataFileError(f"{path}: {what}.X has {x.shape[1]} columns; expected 22 EEG (then 3 EOG)")
        if len(starts) != len(y):
            raise DataFileError(f"{path}: {what} lists {len(starts)} trial starts but {len(y)} labels")
        bad = sorted(set(y.tolist()) - set(CLASSES))
        if bad:
            raise DataFileError(f"{path}: {what}.y holds {bad[0]:g}; expected labels 1-4")
        ends = list(starts[1:].astype(int)) + [n]
        for i, (s, e, lab) in enumerate(zip(starts.astype(int), ends, y.astype(int))):
            if not 0 <= s < n:
                raise DataFileError(
                    f"{path}: {what} trial {i + 1} starts at sample {s} but the run has {n} samples: the trial "
                    "list does not match the recording"
                )
            if min(e, n) - s < n_keep:
                raise DataFileError(
                    f"{path}: {what} trial {i + 1} (sample {s}) has {min(e, n) - s} samples before the next trial "
                    f"or the run's end; the release's window needs {n_keep} (6 s)"
                )
            seg = x[s : s + n_keep, : len(CHANNELS)].T
            if nonfinite is not None and not np.isfinite(seg).all():
                chans = [CHANNELS[c] for c in np.flatnonzero(~np.isfinite(seg).all(axis=1))]
                nonfinite.append((len(out), j + 1, i + 1, chans))
            seg = seg - seg.mean(axis=0, keepdims=True)
            out.append(lfilter(b, a, seg, axis=-1))
            labels.append(int(lab))
    if not out:
        raise DataFileError(f"{path}: no run with trials (every run's y is empty)")
    return np.stack(out), labels


def read_bciciv2a(path: str | Path):
    """One session file (``A01T.mat`` …) as the release filters it (see the module): its trials' first 6 s laid end
    to end, 22 EEG channels in volts at 250 Hz, each annotated ``bciciv2a/<1-4>`` from 2 s to 6 s of the trial.

    Parameters
    ----------
    path : str or Path
        One session file ``A0<s>T.mat`` or ``A0<s>E.mat``.

    Returns
    -------
    mne.io.RawArray
        22 EEG channels (:data:`CHANNELS`) in volts at 250 Hz, ``6 × n_trials`` s long, with one annotation
        ``bciciv2a/<1-4>`` per trial (onset ``6k + 2`` s, 4 s).

    Examples
    --------
    >>> raw = read_bciciv2a("BCICIV2a/A01T.mat")  # doctest: +SKIP
    >>> raw.info["sfreq"], len(raw.ch_names)  # doctest: +SKIP
    (250.0, 22)

    Raises
    ------
    DataFileError
        As :func:`release_trials`, or an unreadable file.
    """
    from neurokit.io.eeg import raw_from_uv

    from neurokit.io.notes import raw_notes, set_raw_notes

    bad: list = []
    trials, labels = release_trials(path, nonfinite=bad)
    left_out = {k for k, *_ in bad}
    if bad and len(left_out) == len(labels):
        chans = sorted({c for *_, cs in bad for c in cs})
        raise DataFileError(
            f"{path}: every trial holds NaN/inf samples (in {', '.join(chans[:8])}): a dead channel? Leave it out "
            "with channels= (the channels to keep), or leave the file out with skip_bad=True"
        )
    for _, run, trial, chans in bad:  # one bad trial costs that trial, not the session
        warnings.warn(
            f"{path}: data{{{run}}} trial {trial} holds NaN/inf samples in {', '.join(chans)}; that trial is left out "
            f"(its 6 s are zeros with no label), the session's other {len(labels) - len(bad)} trials are kept",
            RuntimeWarning,
            stacklevel=2,
        )
    if left_out:
        trials = trials.copy()
        trials[sorted(left_out)] = 0.0
    data = np.concatenate(list(trials), axis=1)
    ann = [
        (k * TRIAL_S + KEEP_S[0], KEEP_S[1] - KEEP_S[0], f"bciciv2a/{y}")
        for k, y in enumerate(labels)
        if k not in left_out
    ]
    raw = raw_from_uv(data, CHANNELS, SFREQ, str(path), annotations=ann)
    if bad:  # counted in the store: the recording's source entry records it
        left = [f"data{{{run}}} trial {trial} ({', '.join(chans)})" for _, run, trial, chans in bad]
        set_raw_notes(raw, applied={**raw_notes(raw).applied, "trials_left_out_nonfinite": left})
    return raw
