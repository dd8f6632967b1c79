"""Readers for clinical EEG corpora that do not come as one EDF per recording.

Each reader returns an :class:`mne.io.RawArray` (data in volts, channel names in 10-05 form where the
electrode has one) with annotations that carry the labels, so the rest of the path (recipe →
:func:`~neurokit.preprocessing.eeg.windows.preprocess_raw` → windows → store) is the one every EEG card uses.
Labels are annotation descriptions ``"<kind>/<value>"`` (``set/S``, ``group/alcoholic``,
``stimulus/S1 obj``, ``state/rest``) spanning the labelled stretch; a card's task maps them to classes.

A card points at a reader with ``layout: {kind: reader, reader: NAME, subdir: ...}``;
:data:`~neurokit.datasets.registry.DATASETS` maps ``NAME`` to the functions listing the recordings
(:class:`~neurokit.io.entry.FileEntry` rows) and reading one.
"""

from __future__ import annotations

import gzip
import re
import zipfile
from pathlib import Path

import numpy as np

from neurokit._utils.errors import DataFileError
from neurokit.io.eeg import raw_from_uv

#: Bonn sampling rate (Andrzejak et al. 2001)
BONN_SFREQ = 173.61
BONN_SETS = {"Z": "A", "O": "B", "N": "C", "F": "D", "S": "E"}  # file letter → set name in the paper


# ------------------------------------------------------------------------------------------ Bonn
def read_bonn(path: str | Path, member: str | None = None):
    """One Bonn segment (Andrzejak et al. 2001): ASCII, one sample per line, 4097 samples at 173.61 Hz
    (23.6 s), in µV, one channel named ``EEG``.

    ``path`` is a ``.txt`` file, or one of the set ZIPs (``Z.zip`` … ``S.zip``) with ``member`` naming the
    text file inside. The segment is labelled by one annotation ``set/<letter>`` spanning it (letter
    Z/O/N/F/S = sets A–E).

    Parameters
    ----------
    path : str or Path
        A segment's ``.txt`` file, or a set's ZIP archive.
    member : str or None
        The text file inside the ZIP (``None`` for a ``.txt`` path).

    Returns
    -------
    mne.io.RawArray
        One channel ``EEG`` in volts at 173.61 Hz, annotated ``set/<letter>`` over its whole length.

    Raises
    ------
    DataFileError
        Unreadable text, not one number per line, fewer than 2 samples, or an unknown set letter.
    """
    path = Path(path)
    src = f"{path}:{member}" if member else str(path)
    try:
        if member:
            with zipfile.ZipFile(path) as z, z.open(member) as fh:
                text = fh.read().decode("ascii")
        else:
            text = path.read_text("ascii")
        x = np.array(text.split(), dtype=np.float64)
    except (OSError, KeyError, ValueError, UnicodeDecodeError, zipfile.BadZipFile) as exc:
        raise DataFileError(f"{src}: not a Bonn segment (ASCII, one sample per line): {exc}") from exc
    if x.size < 2:
        raise DataFileError(f"{src}: {x.size} sample(s); a Bonn segment holds 4097")
    letter = Path(member or path).stem[:1].upper()
    if letter not in BONN_SETS:
        raise DataFileError(f"{src}: the file name does not start with a set letter {sorted(BONN_SETS)}")
    return raw_from_uv(x[None], ["EEG"], BONN_SFREQ, src, annotations=[(0.0, x.size / BONN_SFREQ, f"set/{letter}")])


def bonn_entries(base: Path):
    """The Bonn segments under ``base``: each member ``<letter><NNN>.txt`` of the set ZIPs ``Z.zip`` … ``S.zip`` and
    each loose ``.txt`` segment (sorted by name); subject ``seg<NNN>`` (the segment number: the set has no subject
    ids), run the upper-cased stem (``Z001``).

    Parameters
    ----------
    base : Path
        The dataset's folder (the data root joined with the layout's ``subdir``).

    Returns
    -------
    list of FileEntry
        One :class:`~neurokit.io.entry.FileEntry` per recording, naming this reader.
    """
    from neurokit.io.entry import FileEntry

    out = []
    for z in sorted(base.glob("*.zip")):
        if z.stem.upper() not in BONN_SETS:
            continue
        with zipfile.ZipFile(z) as zf:
            for m in sorted(zf.namelist()):
                stem = Path(m).stem
                if not re.fullmatch(r"[A-Za-z]\d{3}", stem):
                    continue
                # no subject ids exist: the segment number is the split key (see the card)
                out.append(
                    FileEntry(path=z, subject=f"seg{int(stem[1:]):03d}", run=stem.upper(), member=m, reader="bonn")
                )
    for t in sorted(base.glob("*.[tT][xX][tT]")):
        if re.fullmatch(r"[ZONFSzonfs]\d{3}", t.stem):
            out.append(FileEntry(path=t, subject=f"seg{int(t.stem[1:]):03d}", run=t.stem.upper(), reader="bonn"))
    return out


# ------------------------------------------------------------------------------------------ SMNI
_SMNI_HEADER = re.compile(r"#\s*(S1 obj|S2 match|S2 nomatch)\s*,?\s*trial\s*(\d+)", re.I)
_SMNI_NON_EEG = {"X", "Y", "nd"}


def read_smni(path: str | Path):
    """One SMNI/UCI alcoholism trial file (``co2a0000364.rd.000.gz``, gzipped text): 64 channels × 256
    samples (1 s at 256 Hz, 3.906 ms), lines ``trial channel sample value`` in µV.

    Channels X, Y (eye movements) and nd are not EEG electrodes and are left out. The trial carries two annotations
    spanning it: ``group/alcoholic`` or ``group/control`` (from the subject code ``co2a`` / ``co2c``)
    and ``stimulus/S1 obj`` | ``stimulus/S2 match`` | ``stimulus/S2 nomatch`` (from the header).

    Parameters
    ----------
    path : str or Path
        A gzipped trial file ``<subject>.rd.<trial>.gz``.

    Returns
    -------
    mne.io.RawArray
        The 61 EEG channels in volts at 256 Hz (1 s), annotated ``group/…`` and ``stimulus/…`` over the trial.

    Raises
    ------
    DataFileError
        Not gzip, no stimulus header line, or channels with unequal sample counts.
    """
    path = Path(path)
    try:
        with gzip.open(path, "rt") as fh:
            lines = fh.read().splitlines()
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise DataFileError(f"{path}: not a gzipped SMNI trial file: {exc}") from exc
    stim = next((m.group(1) for m in map(_SMNI_HEADER.match, lines[:6]) if m), None)
    if stim is None:
        raise DataFileError(f"{path}: no '# S1 obj / S2 match / S2 nomatch, trial N' header line")
    chans: dict[str, list[float]] = {}
    try:
        for ln in lines:
            if not ln or ln.startswith("#"):
                continue
            _, ch, _, v = ln.split()
            chans.setdefault(ch, []).append(float(v))
    except ValueError as exc:
        raise DataFileError(f"{path}: bad data line ({exc}); expected 'trial channel sample value'") from exc
    lens = {len(v) for v in chans.values()}
    if len(lens) != 1:
        raise DataFileError(f"{path}: channels hold different sample counts {sorted(lens)}")
    code = path.name[:4].lower()
    group = {"co2a": "alcoholic", "co3a": "alcoholic", "co2c": "control", "co3c": "control"}.get(code)
    if group is None:
        raise DataFileError(f"{path}: subject code {code!r} is neither alcoholic (co2a/co3a) nor control (co2c/co3c)")
    names = [c for c in chans if c not in _SMNI_NON_EEG]  # EEG electrodes only
    n = lens.pop()
    dur = n / 256.0
    return raw_from_uv(
        np.array([chans[c] for c in names]),
        names,
        256.0,
        str(path),
        annotations=[(0.0, dur, f"group/{group}"), (0.0, dur, f"stimulus/{stim}")],
    )


def smni_entries(base: Path):
    """Every SMNI trial file ``*.rd.*.gz`` under ``base`` (sorted by path); subject the code before the first dot
    (``co2a0000364``), run the name without ``.gz``.

    Parameters
    ----------
    base : Path
        The dataset's folder (the data root joined with the layout's ``subdir``).

    Returns
    -------
    list of FileEntry
        One :class:`~neurokit.io.entry.FileEntry` per recording, naming this reader.
    """
    from neurokit.io.entry import FileEntry

    out = []
    for p in sorted(base.glob("**/*.rd.*.gz")):
        subj = p.name.split(".")[0]  # co2a0000364
        out.append(FileEntry(path=p, subject=subj, run=p.name.removesuffix(".gz"), reader="smni"))
    return out


# ----------------------------------------------------------------------------- EEG during arithmetic
def read_eegmat(path: str | Path, **reading):
    """One EEGMAT EDF (Zyma et al. 2019): 19 EEG channels (10-20, linked-ear reference), the A2-A1
    derivation and one ECG channel at 500 Hz. ``SubjectNN_1.edf`` is the last 180 s of rest,
    ``SubjectNN_2.edf`` the first 60 s of mental arithmetic; the whole file is annotated
    ``state/rest`` or ``state/arithmetic``. The ECG channel (typed ``ecg``) is named ``ECG``.

    Parameters
    ----------
    path : str or Path
        ``SubjectNN_1.edf`` (rest) or ``SubjectNN_2.edf`` (arithmetic).

    Returns
    -------
    mne.io.RawArray
        The EEG channels and ``ECG`` in volts at 500 Hz, annotated ``state/rest`` or ``state/arithmetic`` over
        the whole recording.

    Raises
    ------
    DataFileError
        A file name of another form, or not exactly one ECG channel.
    """
    from neurokit.io.eeg import read_eeg

    path = Path(path)
    m = re.fullmatch(r"Subject(\d+)_([12])", path.stem)
    if not m:
        raise DataFileError(f"{path}: not an EEGMAT file name (SubjectNN_1.edf rest, SubjectNN_2.edf arithmetic)")
    raw = read_eeg(path, **{**reading, "eeg_only": False})
    ecg = [c for c, t in zip(raw.ch_names, raw.get_channel_types()) if t == "ecg"]
    if len(ecg) != 1:
        raise DataFileError(f"{path}: expected one ECG channel, found {ecg}")
    raw.rename_channels({ecg[0]: "ECG"})
    raw.pick([c for c, t in zip(raw.ch_names, raw.get_channel_types()) if t in ("eeg", "ecg")])
    state = "rest" if m.group(2) == "1" else "arithmetic"
    import mne

    raw.set_annotations(mne.Annotations([0.0], [raw.n_times / raw.info["sfreq"]], [f"state/{state}"]))
    return raw


def eegmat_entries(base: Path):
    """Every ``SubjectNN_1.edf`` / ``SubjectNN_2.edf`` under ``base`` (sorted by path); subject ``S0NN``, run the stem.

    Parameters
    ----------
    base : Path
        The dataset's folder (the data root joined with the layout's ``subdir``).

    Returns
    -------
    list of FileEntry
        One :class:`~neurokit.io.entry.FileEntry` per recording, naming this reader.
    """
    from neurokit.io.entry import FileEntry

    out = []
    for p in sorted(base.glob("**/Subject*_[12].edf")):
        subj = re.fullmatch(r"Subject(\d+)_[12]", p.stem)
        if subj:
            out.append(FileEntry(path=p, subject=f"S{int(subj.group(1)):03d}", run=p.stem, reader="eegmat"))
    return out
