"""SHU motor imagery (Shanghai University; Ma et al. 2022, "A large EEG dataset for studying cross-session
variability in motor imagery brain-computer interface", Sci Data 9:531): left- versus right-hand imagery,
25 subjects with 5 sessions each, one MATLAB file per session ``sub-001_ses-01_task_motorimagery_eeg.mat`` ….

Each file holds the variables ``data`` (trials × 32 channels × samples: 4-s trials at 250 Hz, 1000 samples, µV)
and ``labels`` (1 × trials: 1 left hand, 2 right hand).

CBraMod's ``preprocessing/preprocessing_shu.py`` (github.com/wjq-learning/CBraMod @ b9e9610) reads those two
variables, resamples each whole trial to 800 samples (:func:`scipy.signal.resample` along time), takes ``labels - 1``
and, at loading (``datasets/shu_dataset.py``), divides by 100; no filter, reference or channel selection.

This reader returns the trials laid end to end (trial ``k`` from ``4k`` s), 32 channels in volts at 250 Hz, each
annotated ``shu_mi/<label>`` over its 4 s; the card's recipe cuts those windows and resamples each alone to
800 samples, which is the release's per-trial resampling.

The channel names are not in the release; they are the dataset's 32-electrode cap as its description lists it
(old 10-20 names T3/T4/T5/T6, read as T7/T8/P7/P8; A1/A2 the ear electrodes), in the files' channel order.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from neurokit._utils.errors import DataFileError
from neurokit.io.matlab import read_mat

#: the 32 channels, in the files' order (the dataset's electrode list; the release names none)
CHANNELS = [
    "Fp1", "Fp2", "Fz", "F3", "F4", "F7", "F8", "FC1", "FC2", "FC5", "FC6", "Cz", "C3", "C4", "T3", "T4",
    "A1", "A2", "CP1", "CP2", "CP5", "CP6", "Pz", "P3", "P4", "T5", "T6", "PO3", "PO4", "Oz", "O1", "O2",
]  # fmt: skip
SFREQ = 250.0
#: one trial: seconds, samples at 250 Hz
TRIAL_S = 4.0
TRIAL_N = 1000
LABELS = {1: "left_hand", 2: "right_hand"}
_NAME = re.compile(r"^sub-(\d{3})_ses-(\d{2})_task_motorimagery_eeg\.mat$")


def shu_mi_entries(base: Path) -> list:
    """The files ``sub-NNN_ses-NN_task_motorimagery_eeg.mat`` under ``base`` (with its subfolders; sorted by
    name, as the release sorts them), one :class:`~neurokit.io.entry.FileEntry` each: subject ``sub-001``,
    session ``ses-01``, run the file's stem.

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
    >>> for n in ("sub-002_ses-01_task_motorimagery_eeg.mat", "sub-001_ses-05_task_motorimagery_eeg.mat", "x.mat"):
    ...     _ = (d / n).write_bytes(b"")
    >>> [(e.subject, e.session) for e in shu_mi_entries(d)]
    [('sub-001', 'ses-05'), ('sub-002', 'ses-01')]
    """
    from neurokit.io.entry import FileEntry, named_files

    return [
        FileEntry(path=p, subject=f"sub-{m[1]}", session=f"ses-{m[2]}", run=p.stem, reader="shu_mi")
        for p, m in named_files(base, "*.mat", _NAME)
    ]


def release_trials(path: str | Path) -> tuple[np.ndarray, list[int]]:
    """One session file's trials ``(n_trials, 32, 1000)`` µV and labels 1–2, in the file's order.

    Parameters
    ----------
    path : str or Path
        A session file ``sub-NNN_ses-NN_task_motorimagery_eeg.mat``.

    Returns
    -------
    trials : ndarray, shape (n_trials, 32, 1000), float64
        µV at 250 Hz.
    labels : list of int
        1 or 2 per trial.

    Raises
    ------
    DataFileError
        No variable ``data`` or ``labels``; ``data`` not of 3 axes, or not 32 channels × 1000 samples; a trial
        count that differs from the number of labels; a label other than 1 or 2.
    """
    path = Path(path)
    v = read_mat(path, {"data": ("trial", "channel", "time"), "labels": ("trial",)})
    x, y = v["data"], v["labels"]
    n, c, t = x.shape
    if c != len(CHANNELS) or t != TRIAL_N:
        raise DataFileError(
            f"{path}: variable 'data' has shape {x.shape}; expected (trials, 32 channels, 1000 samples: 4 s at 250 Hz)"
        )
    if n != len(y):
        raise DataFileError(f"{path}: variable 'data' holds {n} trials but 'labels' holds {len(y)} labels")
    bad = sorted(set(y.tolist()) - set(LABELS))
    if bad:
        raise DataFileError(f"{path}: variable 'labels' holds {bad[0]:g}; expected 1 (left hand) or 2 (right hand)")
    if n == 0:
        raise DataFileError(f"{path}: no trials (variable 'data' is empty)")
    return x, [int(v) for v in y]


def read_shu_mi(path: str | Path):
    """One session file as an MNE Raw: its trials laid end to end, 32 channels in volts at 250 Hz, each trial
    annotated ``shu_mi/<1|2>`` over its 4 s (see the module).

    Parameters
    ----------
    path : str or Path
        A session file ``sub-NNN_ses-NN_task_motorimagery_eeg.mat``.

    Returns
    -------
    mne.io.RawArray
        32 channels in volts at 250 Hz, ``4 × n_trials`` s, one annotation ``shu_mi/<1|2>`` per trial.

    Raises
    ------
    DataFileError
        As :func:`release_trials`, or an unreadable file.
    """
    from neurokit.io.eeg import raw_from_uv

    trials, labels = release_trials(path)
    data = np.concatenate(list(trials), axis=1)
    ann = [(k * TRIAL_S, TRIAL_S, f"shu_mi/{y}") for k, y in enumerate(labels)]
    return raw_from_uv(data, CHANNELS, SFREQ, str(path), annotations=ann)
