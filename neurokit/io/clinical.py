"""Readers for clinical EEG corpora that do not come as one EDF per recording.

Each reader returns an :class:`mne.io.RawArray` (data in volts, channel names in 10-05 form where the
electrode has one) with annotations that carry the labels, so the rest of the path (recipe →
:func:`~neurokit.preprocessing.eeg.windows.preprocess_raw` → windows → store) is the one every EEG card uses.
Labels are annotation descriptions ``"<kind>/<value>"`` (``set/S``, ``group/alcoholic``,
``stimulus/S1 obj``, ``state/rest``) spanning the labelled stretch; a card's task maps them to classes.

A card points at a reader with ``layout: {kind: reader, reader: NAME, subdir: ...}``; :data:`DATASETS`
maps ``NAME`` to the functions listing the recordings (:class:`~neurokit.io.entry.FileEntry` rows) and
reading one.
"""

from __future__ import annotations

import gzip
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from neurokit._utils.errors import CardError, DataFileError
from neurokit.geometry.channels import ChannelRenames, normalize_ch_name
from neurokit.io.notes import set_raw_notes

#: Bonn sampling rate (Andrzejak et al. 2001)
BONN_SFREQ = 173.61
BONN_SETS = {"Z": "A", "O": "B", "N": "C", "F": "D", "S": "E"}  # file letter → set name in the paper


def raw_from_uv(
    data_uv: np.ndarray,
    ch_names: list[str],
    sfreq: float,
    source: str,
    types=None,
    annotations: Sequence[tuple[float, float, str]] = (),
):
    """An :class:`mne.io.RawArray` in volts from ``(n_channels, n_times)`` µV, with 10-05 channel names where the
    labels have them and the labelled annotations ``(onset_s, duration_s, description)``; the dataset readers'
    common last step.

    Raises
    ------
    DataFileError
        NaN/inf samples (naming ``source``).
    """
    import mne

    renames = ChannelRenames()
    names = []
    for ch in ch_names:
        new, ok = normalize_ch_name(ch)
        if not ok:
            renames.nonstandard.append(ch)
            new = ch
        if new != ch:
            renames.renamed[ch] = new
        names.append(new)
    data = np.asarray(data_uv, dtype=np.float64) * 1e-6
    if not np.isfinite(data).all():
        raise DataFileError(f"{source}: non-finite samples (NaN/inf)")
    info = mne.create_info(names, sfreq, types or "eeg", verbose="error")
    raw = mne.io.RawArray(data, info, verbose="error")
    if annotations:
        on, du, de = zip(*annotations)
        raw.set_annotations(mne.Annotations(list(on), list(du), list(de)))
    if any(ok for ok in (n not in renames.nonstandard for n in ch_names)):
        from neurokit.geometry.channels import montage_1005

        raw.set_montage(montage_1005(), on_missing="ignore", verbose="error")
    set_raw_notes(raw, renames=renames, source=source)
    return raw


# ------------------------------------------------------------------------------------------ Bonn
def read_bonn(path: str | Path, member: str | None = None):
    """One Bonn segment (Andrzejak et al. 2001): ASCII, one sample per line, 4097 samples at 173.61 Hz
    (23.6 s), in µV, one channel named ``EEG``.

    ``path`` is a ``.txt`` file, or one of the set ZIPs (``Z.zip`` … ``S.zip``) with ``member`` naming the
    text file inside. The segment is labelled by one annotation ``set/<letter>`` spanning it (letter
    Z/O/N/F/S = sets A–E).

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


def _bonn_entries(base: Path):
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


def _smni_entries(base: Path):
    from neurokit.io.entry import FileEntry

    out = []
    for p in sorted(base.glob("**/*.rd.*.gz")):
        subj = p.name.split(".")[0]  # co2a0000364
        out.append(FileEntry(path=p, subject=subj, run=p.name.removesuffix(".gz"), reader="smni"))
    return out


# ----------------------------------------------------------------------------- EEG during arithmetic
def read_eegmat(path: str | Path):
    """One EEGMAT EDF (Zyma et al. 2019): 19 EEG channels (10-20, linked-ear reference), the A2-A1
    derivation and one ECG channel at 500 Hz. ``SubjectNN_1.edf`` is the last 180 s of rest,
    ``SubjectNN_2.edf`` the first 60 s of mental arithmetic; the whole file is annotated
    ``state/rest`` or ``state/arithmetic``. The ECG channel (typed ``ecg``) is named ``ECG``.
    """
    from neurokit.io.eeg import read_eeg

    path = Path(path)
    m = re.fullmatch(r"Subject(\d+)_([12])", path.stem)
    if not m:
        raise DataFileError(f"{path}: not an EEGMAT file name (SubjectNN_1.edf rest, SubjectNN_2.edf arithmetic)")
    raw = read_eeg(path, eeg_only=False)
    ecg = [c for c, t in zip(raw.ch_names, raw.get_channel_types()) if t == "ecg"]
    if len(ecg) != 1:
        raise DataFileError(f"{path}: expected one ECG channel, found {ecg}")
    raw.rename_channels({ecg[0]: "ECG"})
    raw.pick([c for c, t in zip(raw.ch_names, raw.get_channel_types()) if t in ("eeg", "ecg")])
    state = "rest" if m.group(2) == "1" else "arithmetic"
    import mne

    raw.set_annotations(mne.Annotations([0.0], [raw.n_times / raw.info["sfreq"]], [f"state/{state}"]))
    return raw


def _eegmat_entries(base: Path):
    from neurokit.io.entry import FileEntry

    out = []
    for p in sorted(base.glob("**/Subject*_[12].edf")):
        subj = re.fullmatch(r"Subject(\d+)_[12]", p.stem)
        if subj:
            out.append(FileEntry(path=p, subject=f"S{int(subj.group(1)):03d}", run=p.stem, reader="eegmat"))
    return out


@dataclass(frozen=True)
class DatasetReader:
    """How a card with ``layout.kind: reader`` lists and reads its recordings."""

    entries: Callable[[Path], list]  # folder → FileEntry rows (reader, member set)
    read: Callable[..., object]  # FileEntry → mne Raw
    # a file given by name (-f) → the folder its listing starts from (the file's own folder, or the dataset folder
    # above it whose layout labels it: TUAB's train/abnormal, a CHB-MIT case's summary)
    base_of: Callable[[Path], Path] = lambda p: Path(p).parent


def _above(*names: str, up: int = 0) -> Callable[[Path], Path]:
    """``base_of`` of a dataset whose labels lie in folders: the folder above the nearest ancestor of a file named one
    of ``names`` (TUH's ``train``/``eval``), else ``up`` folders above the file's own."""

    def base(p: Path) -> Path:
        for a in Path(p).parents:
            if a.name.lower() in names:
                return a.parent
        return list(Path(p).parents)[min(up, len(Path(p).parents) - 1)]

    return base


def _elsewhere(module: str, name: str, base_of: Callable[[Path], Path] | None = None) -> DatasetReader:
    """A reader whose functions ``<name>_entries(base)`` and ``read_<name>(path)`` live in ``neurokit.io.<module>``
    (imported when first used)."""
    import importlib

    def entries(base):
        return getattr(importlib.import_module(f"neurokit.io.{module}"), f"{name}_entries")(base)

    def read(e):
        fn = getattr(importlib.import_module(f"neurokit.io.{module}"), f"read_{name}")
        return fn(e.path, e.member) if getattr(e, "member", "") else fn(e.path)  # a member: one part of the file

    return DatasetReader(entries, read, base_of or (lambda p: Path(p).parent))


DATASETS: dict[str, DatasetReader] = {
    "bonn": DatasetReader(_bonn_entries, lambda e: read_bonn(e.path, e.member or None)),
    "smni": DatasetReader(_smni_entries, lambda e: read_smni(e.path)),
    "eegmat": DatasetReader(_eegmat_entries, lambda e: read_eegmat(e.path)),
    # the datasets CBraMod is judged on (github.com/wjq-learning/CBraMod), one module per dataset family
    "tuab": _elsewhere("tuh", "tuab", _above("train", "eval")),
    "tuev": _elsewhere("tuh", "tuev", _above("train", "eval")),
    "chb_mit": _elsewhere("chbmit", "chb_mit", _above(up=1)),  # chbNN/chbNN_MM.edf: the folder of the cases
    "isruc": _elsewhere("isruc", "isruc", _above(up=1)),  # N/N.rec: the folder of the subjects
    "mumtaz": _elsewhere("mumtaz", "mumtaz"),
    # part 2 (issue 37): MATLAB, Neuroscan and pickle datasets
    "bciciv2a": _elsewhere("bciciv2a", "bciciv2a"),
    "faced": _elsewhere("faced", "faced"),
    "seed_v": _elsewhere("seedv", "seed_v"),
    "shu_mi": _elsewhere("shumi", "shu_mi"),
    "seed_vig": _elsewhere("seedvig", "seed_vig", _above(up=1)),  # Raw_Data/X.mat: labels in perclos_labels/
    "bcic2020_3": _elsewhere("bcic2020", "bcic2020_3", _above("training set", "validation set", "test set")),
}


def get_reader(name: str) -> DatasetReader:
    if name not in DATASETS:
        raise CardError(f"unknown reader {name!r}; known: {sorted(DATASETS)}")
    return DATASETS[name]


def read_entry(entry):
    """Read one :class:`~neurokit.io.entry.FileEntry`: through its dataset reader when it names one,
    otherwise :func:`~neurokit.io.eeg.read_eeg`."""
    from neurokit.io.eeg import read_eeg

    if getattr(entry, "reader", ""):
        return get_reader(entry.reader).read(entry)
    return read_eeg(entry.path)
