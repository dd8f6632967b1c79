"""BCI Competition 2020 track 3, imagined speech (Korea University; five words imagined: "hello", "help me",
"stop", "thank you", "yes"; 15 subjects, 64-channel EEG at 256 Hz), as the competition publishes it: three folders
``Training set``, ``Validation set`` and ``Test set``, each with one MATLAB file per subject ``Data_Sample01.mat`` …
``Data_Sample15.mat``, and the test labels in the answer sheet ``Track3_Answer Sheet_Test.xlsx``.

The files (as CBraMod's ``preprocessing/preprocessing_speech.py``, github.com/wjq-learning/CBraMod @ b9e9610, reads
them):

- ``Training set/Data_SampleNN.mat`` (MATLAB v5): a struct ``epo_train`` whose field ``x`` holds the trials as
  samples × 64 channels × trials (µV; 300 trials a subject) and ``y`` the labels one-hot, 5 classes × trials;
- ``Validation set/Data_SampleNN.mat`` (v5): the same in ``epo_validation`` (50 trials a subject);
- ``Test set/Data_SampleNN.mat`` (MATLAB v7.3, HDF5): ``epo_test`` with ``x`` only (50 trials); the labels 1–5 are in
  the answer sheet's first sheet, rows 4–53 (trials 1–50), the ``NN``-th subject in column C, E, G, … (column
  index ``2·NN``, 0-based).

The release's steps per file: the last 768 samples of every trial (3 s at 256 Hz), resampled to 600 samples
(:func:`scipy.signal.resample` along time, each trial alone), reshaped to 64 channels × 3 patches × 200; labels the
``argmax`` of ``y`` (0–4) or the sheet's value − 1; µV / 100 at loading (``datasets/speech_dataset.py``). No
filter, notch, reference or channel selection. Its split is the folders: training, validation and test sets.

This reader returns one file's trials, their last 768 samples each, laid end to end (trial ``k`` from ``3k`` s),
64 channels in volts at 256 Hz, each annotated ``bcic2020_3/<1-5>`` (the class number: row of ``y`` + 1, or the
sheet's value) over its 3 s; the card's recipe cuts those windows and resamples each alone to 600 samples, which is
the release's per-trial resampling. The answer sheet is looked for beside the test file and in the folder above
(the release keeps it beside the three folders).

The channel names are not in the release; they are the dataset's 64-electrode cap in the files' channel order (the
``clab`` field of its structs).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from neurokit._utils.errors import DataFileError
from neurokit.io.matlab import load_mat, mat_array, mat_field

#: the 64 channels, in the files' order (the structs' ``clab``; the release names none)
CHANNELS = [
    "Fp1", "Fp2", "F7", "F3", "Fz", "F4", "F8", "FC5", "FC1", "FC2", "FC6", "T7", "C3", "Cz", "C4", "T8",
    "TP9", "CP5", "CP1", "CP2", "CP6", "TP10", "P7", "P3", "Pz", "P4", "P8", "PO9", "O1", "Oz", "O2", "PO10",
    "AF7", "AF3", "AF4", "AF8", "F5", "F1", "F2", "F6", "FT9", "FT7", "FC3", "FC4", "FT8", "FT10", "C5", "C1",
    "C2", "C6", "TP7", "CP3", "CPz", "CP4", "TP8", "P5", "P1", "P2", "P6", "PO7", "PO3", "POz", "PO4", "PO8",
]  # fmt: skip
SFREQ = 256.0
#: what the release keeps of a trial: its last 768 samples (3 s at 256 Hz)
KEEP_N = 768
TRIAL_S = KEEP_N / SFREQ
#: class number (a row of ``y`` + 1, the answer sheet's value) → name, in the dataset's order
CLASSES = {1: "hello", 2: "help_me", 3: "stop", 4: "thank_you", 5: "yes"}
#: split folder (its first word) → the split's name and the variable its files hold
SPLITS = {"training": ("train", "epo_train"), "validation": ("val", "epo_validation"), "test": ("test", "epo_test")}
#: the answer sheet's first trial row (1-based, as Excel numbers rows)
SHEET_FIRST_ROW = 4
_FOLDER = re.compile(r"^(training|validation|test)[ _]set$", re.IGNORECASE)
_NAME = re.compile(r"^Data_Sample(\d{2})\.mat$", re.IGNORECASE)
_SHEET = re.compile(r"^track3[ _]answer[ _]sheet[ _]test\.xlsx$", re.IGNORECASE)


def bcic2020_3_entries(base: Path) -> list:
    """The files ``Data_SampleNN.mat`` of the folders ``Training set``, ``Validation set`` and ``Test set`` under
    ``base`` (``base`` itself may be one), one :class:`~neurokit.io.entry.FileEntry` each: subject
    ``Data_SampleNN``, run ``train``, ``val`` or ``test`` (the split its folder gives it, which the card splits on).

    Parameters
    ----------
    base : Path
        The dataset's folder (the release's ``mat`` folder) or one above it.

    Returns
    -------
    list of FileEntry
        Sorted by split (train, val, test), then by name.

    Raises
    ------
    DataFileError
        One split folder found twice, or one name twice in a split folder (keep one copy of the dataset).

    Examples
    --------
    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> for n in ("Training set/Data_Sample02.mat", "Test set/Data_Sample01.mat", "Test set/x.mat"):
    ...     (d / n).parent.mkdir(exist_ok=True)
    ...     _ = (d / n).write_bytes(b"")
    >>> [(e.subject, e.run) for e in bcic2020_3_entries(d)]
    [('Data_Sample02', 'train'), ('Data_Sample01', 'test')]
    """
    from neurokit.io.entry import FileEntry, named_files

    base = Path(base)
    folders: dict[str, Path] = {}
    for d in [base, *sorted(base.rglob("*"))]:
        m = _FOLDER.match(d.name)
        if m is None or not d.is_dir():
            continue
        split = SPLITS[m[1].lower()][0]
        if split in folders:
            raise DataFileError(
                f"{d}: a second {split} folder (the first is {folders[split]}); keep one copy of the dataset"
            )
        folders[split] = d
    out = []
    for split in ("train", "val", "test"):
        if split in folders:
            out += [
                FileEntry(path=p, subject=f"Data_Sample{m[1]}", run=split, reader="bcic2020_3")
                for p, m in named_files(folders[split], "*.mat", _NAME)
            ]
    return out


def _split_of(path: Path) -> tuple[str, str]:
    """``(split, variable)`` of a file from its split folder (the nearest one above it)."""
    for a in path.parents:
        m = _FOLDER.match(a.name)
        if m:
            return SPLITS[m[1].lower()]
    raise DataFileError(
        f"{path}: in no 'Training set', 'Validation set' or 'Test set' folder; keep the dataset's folders (they give "
        "the split and the variable)"
    )


def _xlsx_cells(path: Path) -> dict[tuple[int, int], str]:
    """The cells of the first sheet of an ``.xlsx`` workbook: ``(row, column)`` (1-based) → text (a number as
    written in the file). Read with the standard library (an ``.xlsx`` is a zip of XML)."""
    import posixpath
    import xml.etree.ElementTree as ET
    import zipfile

    try:
        with zipfile.ZipFile(path) as z:
            names = set(z.namelist())
            book = ET.fromstring(z.read("xl/workbook.xml"))
            first = book.find("{*}sheets/{*}sheet")
            if first is None:
                raise ValueError("the workbook lists no sheet")
            rid = next(v for k, v in first.attrib.items() if k.endswith("}id"))
            rels = ET.fromstring(z.read("xl/_rels/workbook.xml.rels"))
            target = next(r.get("Target", "") for r in rels if r.get("Id") == rid)
            sheet = target.lstrip("/") if target.startswith("/") else posixpath.normpath(f"xl/{target}")
            shared = []
            if "xl/sharedStrings.xml" in names:
                for si in ET.fromstring(z.read("xl/sharedStrings.xml")).findall("{*}si"):
                    shared.append("".join(t.text or "" for t in si.iter() if t.tag.endswith("}t")))
            cells: dict[tuple[int, int], str] = {}
            for c in ET.fromstring(z.read(sheet)).iter():
                if not c.tag.endswith("}c") or not c.get("r"):
                    continue
                m = re.fullmatch(r"([A-Z]+)(\d+)", c.get("r", ""))
                if m is None:
                    continue
                col = 0
                for ch in m[1]:
                    col = col * 26 + ord(ch) - 64
                kind, v = c.get("t", "n"), c.find("{*}v")
                if kind == "inlineStr":
                    text = "".join(t.text or "" for t in c.iter() if t.tag.endswith("}t"))
                elif v is None or v.text is None:
                    continue
                else:
                    text = shared[int(v.text)] if kind == "s" else v.text
                cells[(int(m[2]), col)] = text.strip()
            return cells
    except (OSError, KeyError, ValueError, IndexError, StopIteration, zipfile.BadZipFile, ET.ParseError) as exc:
        why = " ".join(str(exc).split()) or type(exc).__name__
        raise DataFileError(
            f"{path}: not a readable .xlsx workbook ({why}); keep the competition's answer sheet"
        ) from None


def _column_name(col: int) -> str:
    name = ""
    while col:
        col, r = divmod(col - 1, 26)
        name = chr(65 + r) + name
    return name


def answer_sheet(path: str | Path) -> Path:
    """The answer sheet ``Track3_Answer Sheet_Test.xlsx`` of a test file: beside it, or in the folder above its
    ``Test set`` folder (where the release keeps it).

    Parameters
    ----------
    path : str or Path
        A test file, ``Test set/Data_SampleNN.mat``.

    Returns
    -------
    Path
        The sheet (its name matched case-insensitively, spaces or underscores).

    Raises
    ------
    DataFileError
        No answer sheet in either place.

    Examples
    --------
    >>> answer_sheet("mat/Test set/Data_Sample01.mat")  # doctest: +SKIP
    PosixPath('mat/Track3_Answer Sheet_Test.xlsx')
    """
    path = Path(path)
    for d in (path.parent, path.parent.parent):
        found = sorted(p for p in d.glob("*.xlsx") if _SHEET.match(p.name))
        if found:
            return found[0]
    raise DataFileError(
        f"{path}: no answer sheet 'Track3_Answer Sheet_Test.xlsx' beside it or in {path.parent.parent} (the test "
        "labels are in it); put the competition's answer sheet there"
    )


def sheet_labels(sheet: str | Path, subject: int, n_trials: int) -> list[int]:
    """The labels 1–5 of subject ``subject``'s ``n_trials`` test trials in the answer sheet: column index
    ``2·subject`` (0-based: C for subject 1, E for 2, …), rows 4 to ``3 + n_trials``.

    Parameters
    ----------
    sheet : str or Path
        The answer sheet (``.xlsx``).
    subject : int
        The subject's number (``NN`` of ``Data_SampleNN.mat``), 1–15.
    n_trials : int
        The trials of the subject's test file.

    Returns
    -------
    list of int
        One label 1–5 per trial, in the file's order.

    Raises
    ------
    DataFileError
        An unreadable workbook; a missing cell (fewer labels than trials) or a value other than 1–5.

    Examples
    --------
    >>> sheet_labels("Track3_Answer Sheet_Test.xlsx", 1, 50)[:3]  # doctest: +SKIP
    [3, 1, 5]
    """
    sheet = Path(sheet)
    cells = _xlsx_cells(sheet)
    col = 2 * subject + 1  # 1-based
    out = []
    for k in range(n_trials):
        row = SHEET_FIRST_ROW + k
        ref = f"{_column_name(col)}{row}"
        text = cells.get((row, col), "")
        if not text:
            raise DataFileError(
                f"{sheet}: cell {ref} (subject {subject}, trial {k + 1}) is empty but the test file holds {n_trials} "
                "trials: the answer sheet does not match the recordings; use the competition's answer sheet"
            )
        try:
            value = float(text)
        except ValueError:
            value = float("nan")
        if value not in CLASSES:
            raise DataFileError(f"{sheet}: cell {ref} (subject {subject}, trial {k + 1}) holds {text!r}; expected 1-5")
        out.append(int(value))
    return out


def release_trials(path: str | Path) -> tuple[np.ndarray, list[int]]:
    """One file's trials as the release keeps them, ``(n_trials, 64, 768)`` µV (the last 768 samples of each), and
    their class numbers 1–5, in the file's order.

    Parameters
    ----------
    path : str or Path
        ``Data_SampleNN.mat`` inside ``Training set``, ``Validation set`` or ``Test set`` (the folder names the
        variable: ``epo_train``, ``epo_validation``, ``epo_test``).

    Returns
    -------
    trials : ndarray, shape (n_trials, 64, 768)
        µV, 256 Hz.
    labels : list of int
        1–5 (see :data:`CLASSES`).

    Raises
    ------
    DataFileError
        No such variable or field; ``x`` not samples × 64 channels × trials, or trials under 768 samples; ``y`` not
        one-hot over 5 classes, or labelling another number of trials than ``x`` holds; for a test file, the
        answer sheet missing or not matching (:func:`sheet_labels`).

    Examples
    --------
    >>> x, y = release_trials("Training set/Data_Sample01.mat")  # doctest: +SKIP
    >>> x.shape, y[:3]  # doctest: +SKIP
    ((300, 64, 768), [1, 4, 2])
    """
    path = Path(path)
    split, var = _split_of(path)
    epo = load_mat(path, [var])[var]
    x = mat_array(
        mat_field(epo, "x", source=path, what=f"variable {var!r}"),
        ("time", "channel", "trial"),
        source=path,
        what=f"{var}.x",
        want=("trial", "channel", "time"),
    )
    n, c, t = x.shape
    if c != len(CHANNELS):
        raise DataFileError(
            f"{path}: {var}.x has {c} channels; expected 64 (samples x 64 channels x trials); download the file again, or move it out of the data root"
        )
    if t < KEEP_N:
        raise DataFileError(
            f"{path}: {var}.x holds trials of {t} samples; the release keeps the last {KEEP_N} (3 s at 256 Hz);"
            " download the file again, or move it out of the data root"
        )
    if n == 0:
        raise DataFileError(
            f"{path}: no trials ({var}.x is empty); download the file again, or move it out of the data root"
        )
    if split == "test":
        m = _NAME.match(path.name)
        labels = sheet_labels(answer_sheet(path), int(m[1]) if m else 0, n)
    else:
        y = mat_array(
            mat_field(epo, "y", source=path, what=f"variable {var!r}"), ("class", "trial"), source=path, what=f"{var}.y"
        )
        if y.shape[1] != n:
            raise DataFileError(
                f"{path}: {var}.y labels {y.shape[1]} trials but {var}.x holds {n}: the trial list does not match "
                "the recording; download the file again, or move it out of the data root"
            )
        if y.shape[0] != len(CLASSES) or not (np.isin(y, (0, 1)).all() and (y.sum(axis=0) == 1).all()):
            raise DataFileError(
                f"{path}: {var}.y has shape {y.shape}; expected one-hot labels, 5 classes x trials; download the file again, or move it out of the data root"
            )
        labels = [int(k) + 1 for k in np.argmax(y, axis=0)]
    return x[:, :, t - KEEP_N :], labels


def read_bcic2020_3(path: str | Path):
    """One file (``Data_SampleNN.mat`` of a split folder) as an MNE Raw: the last 3 s of its trials laid end to
    end, 64 channels in volts at 256 Hz, each trial annotated ``bcic2020_3/<1-5>`` over its 3 s (see the module).

    Parameters
    ----------
    path : str or Path
        The file, inside its split folder.

    Returns
    -------
    mne.io.RawArray
        ``(64, 768 · n_trials)`` samples.

    Raises
    ------
    DataFileError
        As :func:`release_trials`, or an unreadable file.

    Examples
    --------
    >>> raw = read_bcic2020_3("Validation set/Data_Sample01.mat")  # doctest: +SKIP
    >>> raw.n_times, raw.annotations.description[0]  # doctest: +SKIP
    (38400, 'bcic2020_3/2')
    """
    from neurokit.io.eeg import raw_from_uv

    trials, labels = release_trials(path)
    data = np.concatenate(list(trials), axis=1)
    ann = [(k * TRIAL_S, TRIAL_S, f"bcic2020_3/{y}") for k, y in enumerate(labels)]
    return raw_from_uv(data, CHANNELS, SFREQ, str(path), annotations=ann)
