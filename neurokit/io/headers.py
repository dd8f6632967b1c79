"""Plausibility and consistency checks on EEG file headers, run before MNE reads the samples.

MNE trusts a header: a record duration of 0 becomes 1 s, a file longer or shorter than the header says is
read to its end, a physical range of NaN gives NaN gains. These checks read the fixed-width EDF/BDF header
(EDF: Kemp et al. 1992; EDF+: Kemp & Olivan 2003; BDF: BioSemi's 24-bit variant) and the BrainVision
``.vhdr`` (Brain Products' "BrainVision Core Data Format 1.0") and either raise :class:`DataFileError` naming
the file and the field, or return what the reader must know (uncalibrated channels, unit-less channels,
data-record onsets of EDF+ files) together with warnings to pass on.
"""

from __future__ import annotations

import configparser
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import importlib.metadata

import numpy as np
from packaging.version import Version

from neurokit._utils.errors import DataFileError

#: A sampling rate outside these bounds (Hz) is a damaged header, not a recording.
SFREQ_BOUNDS = (1.0, 1e6)
#: ``|amplitude|`` (volts) above which an EEG channel cannot hold scalp or intracranial EEG.
MAX_EEG_VOLTS = 1.0
#: Voltage units (as spelt in EDF/BDF headers) → factor to volts.
VOLT_UNITS = {"V": 1.0, "mV": 1e-3, "uV": 1e-6, "µV": 1e-6, "μV": 1e-6, "nV": 1e-9}
_ANNOT_LABELS = ("EDF Annotations", "BDF Annotations")


def short_list(items, n: int = 6) -> str:
    """``['a', 'b', …]`` with at most ``n`` items and the count of the rest: messages stay short.

    Parameters
    ----------
    items : iterable
        What to list (each shown by ``repr``).
    n : int
        Items shown.

    Returns
    -------
    str

    Examples
    --------
    >>> short_list(["Fp1", "Fp2", "F3"], n=2)
    "['Fp1', 'Fp2', … (+1 more)]"
    """
    items = list(items)
    head = ", ".join(repr(i) for i in items[:n])
    more = f", … (+{len(items) - n:,} more)" if len(items) > n else ""
    return f"[{head}{more}]"


def unit_scale(unit: str) -> float | None:
    """Factor from ``unit`` to volts (``"uV"`` → 1e-6), or ``None`` for a blank or non-voltage unit.

    Parameters
    ----------
    unit : str
        A physical dimension as a header writes it (``"uV"``, ``"µV"``, ``"mV"``, ``"microvolt"`` …).

    Returns
    -------
    float or None

    Examples
    --------
    >>> unit_scale("uV"), unit_scale("mV"), unit_scale("degC")
    (1e-06, 0.001, None)
    """
    u = unit.strip()
    if u in VOLT_UNITS:
        return VOLT_UNITS[u]
    low = {k.lower(): v for k, v in VOLT_UNITS.items()}
    return low.get(u.lower().replace("micro", "u").replace("milli", "m").replace("volt", "v"))


@dataclass
class EDFHeader:
    """The fields of an EDF/EDF+/BDF/BDF+ header that decide how samples are read (one entry per signal).

    Attributes
    ----------
    path : Path
    bdf : bool
        A BDF file (24-bit samples) rather than EDF (16-bit).
    plus : str
        ``""``, ``"C"`` (EDF+C/BDF+C, continuous) or ``"D"`` (discontinuous).
    header_bytes : int
    n_records : int
        Data records the header announces (``-1``: unknown, the data's size tells).
    record_s : float
        Seconds per data record.
    labels, units : list of str
        Per signal, as written.
    pmin, pmax, dmin, dmax : ndarray, shape (n_signals,)
        Physical and digital ranges.
    spr : ndarray of int, shape (n_signals,)
        Samples per data record.
    annot : list of int
        Indices of the EDF+/BDF+ annotation signals.
    """

    path: Path
    bdf: bool
    plus: str  # "", "C" (continuous) or "D" (discontinuous)
    header_bytes: int
    n_records: int
    record_s: float
    labels: list[str]
    units: list[str]
    pmin: np.ndarray
    pmax: np.ndarray
    dmin: np.ndarray
    dmax: np.ndarray
    spr: np.ndarray  # samples per data record
    annot: list[int] = field(default_factory=list)  # indices of annotation signals

    @property
    def bytes_per_sample(self) -> int:
        return 3 if self.bdf else 2

    @property
    def record_bytes(self) -> int:
        return int(self.spr.sum()) * self.bytes_per_sample


def _field(raw: bytes, what: str, path, kind=float):
    text = raw.decode("latin-1").strip()
    try:
        v = kind(text)
    except ValueError:
        raise DataFileError(f"{path}: header field '{what}' is {text[:20]!r}, not a number") from None
    return v


def read_edf_header(path: str | Path) -> EDFHeader:
    """Parse and check the fixed part of an EDF/BDF header.

    Parameters
    ----------
    path : str or Path
        An EDF, EDF+, BDF or BDF+ file.

    Returns
    -------
    EDFHeader

    Raises
    ------
    DataFileError
        A numeric field is not a number, the signal count or header length disagree, or the file is
        shorter than its header.
    """
    path = Path(path)
    size = path.stat().st_size
    with open(path, "rb") as fh:
        head = fh.read(256)
        if len(head) < 256:
            raise DataFileError(f"{path}: {size} bytes, shorter than the 256-byte EDF/BDF header")
        bdf = head[:8] == b"\xffBIOSEMI"
        reserved = head[192:236].decode("latin-1").strip()
        plus = reserved[4] if reserved[:4] in ("EDF+", "BDF+") and len(reserved) > 4 else ""
        try:
            header_bytes = _field(head[184:192], "number of bytes in header", path, int)
            n_records = _field(head[236:244], "number of data records", path, int)
            record_s = _field(head[244:252], "duration of a data record", path, float)
            ns = _field(head[252:256], "number of signals", path, int)
        except DataFileError:
            if not bdf and head[:8].strip(b" ") != b"0":  # not even the version field: another kind of file
                raise DataFileError(
                    f"{path}: not an EDF/BDF file (an EDF file starts with '0' and seven spaces, a BDF file with "
                    f"0xFF and 'BIOSEMI'; this one starts with {head[:8]!r}). Check that the file is a recording and "
                    "not a renamed text, archive or other file"
                ) from None
            raise
        if not 1 <= ns <= 9999:
            raise DataFileError(f"{path}: header says {ns} signals; an EDF/BDF file holds 1 to 9999")
        if header_bytes != 256 * (ns + 1):
            raise DataFileError(
                f"{path}: header length field says {header_bytes} bytes, but {ns} signals need "
                f"{256 * (ns + 1)} (256 × (signals + 1)): a damaged header"
            )
        if size < header_bytes:
            raise DataFileError(f"{path}: {size} bytes, shorter than its {header_bytes}-byte header")
        rest = fh.read(header_bytes - 256)

    def col(offset, width):
        return [rest[ns * offset + i * width : ns * offset + (i + 1) * width] for i in range(ns)]

    labels = [b.decode("latin-1").strip() for b in col(0, 16)]
    units = [b.decode("latin-1").strip() for b in col(16 + 80, 8)]
    nums = {}
    for name, off in (
        ("physical minimum", 104),
        ("physical maximum", 112),
        ("digital minimum", 120),
        ("digital maximum", 128),
        ("samples per data record", 216),
    ):
        kind = int if name == "samples per data record" else float
        vals = []
        for i, b in enumerate(col(off, 8)):
            try:
                vals.append(_field(b, name, path, kind))
            except DataFileError:
                raise DataFileError(
                    f"{path}: signal {i + 1} ({labels[i]!r}): {name} is {b.decode('latin-1').strip()[:20]!r}, "
                    "not a number"
                ) from None
        nums[name] = np.asarray(vals, dtype=float)
    annot = [i for i, lab in enumerate(labels) if lab in _ANNOT_LABELS]
    return EDFHeader(
        path,
        bdf,
        plus,
        header_bytes,
        n_records,
        record_s,
        labels,
        units,
        nums["physical minimum"],
        nums["physical maximum"],
        nums["digital minimum"],
        nums["digital maximum"],
        nums["samples per data record"].astype(np.int64),
        annot,
    )


@dataclass
class HeaderReport:
    """What the header checks found, for :func:`~neurokit.io.read_eeg` to act on.

    Attributes
    ----------
    warnings : list of str
        Faults that the reading repairs or tolerates, one sentence each.
    uncalibrated : list of str
        Labels whose physical or digital range has equal ends (read as bad channels).
    unknown_units : dict of str to str
        Label → unit as written, for units that are neither a voltage nor a known other dimension.
    unit_scales : dict of str to float
        Label → volts per unit, for voltage units MNE would misread.
    plus : str
        EDF+/BDF+ continuity flag: ``"C"``, ``"D"`` or ``""``.
    record_onsets : ndarray or None
        EDF+/BDF+: each data record's start (s, from the first).
    record_s : float or None
        Seconds per data record.
    onset_tol : float
        Slack (s) allowed between a record's time-stamp and the previous record's end (:func:`onset_tolerance`).
    rates : dict of str to float
        EDF/BDF: label → sampling rate (Hz).
    """

    warnings: list[str] = field(default_factory=list)
    uncalibrated: list[str] = field(default_factory=list)  # labels as in the file
    unknown_units: dict[str, str] = field(default_factory=dict)  # label → unit as written ('' = blank)
    unit_scales: dict[str, float] = field(default_factory=dict)  # label → volts per unit MNE would misread
    plus: str = ""  # EDF+/BDF+ continuity flag as written: "C", "D" or ""
    record_onsets: np.ndarray | None = None  # EDF+/BDF+: start of each data record (s, from the first)
    record_s: float | None = None
    onset_tol: float = 0.0  # slack allowed between a record's time-stamp and the previous record's end
    rates: dict[str, float] = field(default_factory=dict)  # EDF/BDF: label → sampling rate (Hz) of each signal

    def eeg_rates(self) -> dict[float, list[str]]:
        """EDF/BDF: rate (Hz) → labels of the signals at it that name a 10-05 EEG electrode, slowest first."""
        out: dict[float, list[str]] = {}
        for lab, r in sorted(self.rates.items(), key=lambda kv: kv[1]):
            if _looks_eeg(lab):
                out.setdefault(r, []).append(lab)
        return out

    def eeg_rate_only(self) -> tuple[list[str], list[str]] | None:
        """Mixed-rate EDF/BDF whose 10-05 EEG channels share one rate below the file's highest: ``(labels at
        that rate, labels left out)``, so the EEG is read at its own rate instead of MNE's resampling of every
        signal to the highest rate; ``None`` otherwise (one rate, or EEG at several rates)."""
        eeg = self.eeg_rates()
        if len(eeg) != 1 or len(set(self.rates.values())) < 2:
            return None
        r = next(iter(eeg))
        if r >= max(self.rates.values()):
            return None
        keep = [lab for lab, v in self.rates.items() if v == r]
        return keep, [lab for lab in self.rates if lab not in keep]


def check_edf(path: str | Path, *, allow_truncated: bool = False) -> HeaderReport:
    """Check an EDF/BDF file's header against itself and against the file's size.

    Checks: numeric fields; samples per record ≥ 1; record duration and sampling rates finite and within
    :data:`SFREQ_BOUNDS`; the data size a whole number of records and equal to what the header announces;
    physical and digital ranges (equal ends = uncalibrated); voltage units; for EDF+/BDF+ the annotation
    signal and the time-stamp of every data record (repeated or overlapping records are refused).

    Parameters
    ----------
    path : str or Path
        An EDF, EDF+, BDF or BDF+ file.
    allow_truncated : bool
        Read a file holding fewer data records than its header announces (the records present, with a warning)
        instead of refusing it.

    Returns
    -------
    HeaderReport

    Raises
    ------
    DataFileError
        Damage that would give wrong samples or wrong times.
    """
    path = Path(path)
    h = read_edf_header(path)
    rep = HeaderReport(record_s=h.record_s, plus=h.plus)
    sig = [i for i in range(len(h.labels)) if i not in h.annot]
    bad_spr = [h.labels[i] or f"#{i + 1}" for i in range(len(h.labels)) if h.spr[i] < 1]
    if bad_spr:
        raise DataFileError(
            f"{path}: samples per data record below 1 for signals {short_list(bad_spr)}: a damaged header"
        )
    if not sig:
        return rep  # annotation-only file: read_eeg says so
    if not (math.isfinite(h.record_s) and h.record_s > 0):
        raise DataFileError(
            f"{path}: data-record duration is {h.record_s!r} s; it must be a positive number of seconds"
        )
    sfreqs = h.spr[sig] / h.record_s
    labels = [h.labels[i] for i in sig]
    if len(set(labels)) == len(labels):  # duplicate labels: MNE renames them, so no reading by label
        rep.rates = {lab: float(f) for lab, f in zip(labels, sfreqs)}
    top = float(sfreqs.max())
    if not SFREQ_BOUNDS[0] <= top <= SFREQ_BOUNDS[1]:
        raise DataFileError(
            f"{path}: sampling rate {top:.4g} Hz ({int(h.spr[sig].max())} samples per {h.record_s:g}-s record) "
            f"is outside {SFREQ_BOUNDS[0]:g}–{SFREQ_BOUNDS[1]:g} Hz: a damaged header"
        )
    size = path.stat().st_size
    data_bytes = size - h.header_bytes
    n_file, extra = divmod(data_bytes, h.record_bytes)
    if h.n_records < -1 or h.n_records == 0 and n_file:
        raise DataFileError(f"{path}: header says {h.n_records} data records; the file holds {n_file}")
    announced = n_file if h.n_records == -1 else h.n_records
    if n_file < announced:
        if not allow_truncated:
            raise DataFileError(
                f"{path}: truncated file: the header announces more data records than the file holds "
                f"({announced} announced, {n_file} present; an interrupted recording or a partial copy). Copy "
                "the file again, read the part that is there with allow_truncated=True, or leave the file out with skip_bad=True."
            )
        rep.warnings.append(
            f"truncated file: reading only the data records present ({n_file} of {announced} announced)"
        )
    elif n_file > announced:
        rep.warnings.append(
            f"the file holds {n_file} data records, {n_file - announced} more than its header "
            f"announces ({announced}); all {n_file} are read"
        )
    if extra:
        rep.warnings.append(f"{extra} bytes after the last whole data record are ignored (an incomplete record)")
    if n_file == 0:
        raise DataFileError(f"{path}: the file holds no complete data record (truncated file?)")

    finite = np.isfinite(h.pmin) & np.isfinite(h.pmax) & np.isfinite(h.dmin) & np.isfinite(h.dmax)
    uncal = [i for i in sig if not finite[i] or h.pmin[i] == h.pmax[i] or h.dmin[i] >= h.dmax[i]]
    rep.uncalibrated = [h.labels[i] for i in uncal]
    for i in sig:
        if i in uncal:
            continue
        scale = unit_scale(h.units[i])
        if scale is None:
            rep.unknown_units[h.labels[i]] = h.units[i]
            continue
        if scale != _mne_scale(h.units[i]):  # e.g. "nV" or "uv", which MNE reads as volts
            rep.unit_scales[h.labels[i]] = scale
        peak = max(abs(h.pmin[i]), abs(h.pmax[i])) * scale
        if peak > MAX_EEG_VOLTS and _looks_eeg(h.labels[i]):
            rep.warnings.append(
                f"channel {h.labels[i]!r}: physical range ±{peak:.3g} V is implausible for EEG (check the "
                "header's physical minimum/maximum and unit)"
            )
    if h.plus:
        rep.record_onsets = _record_onsets(h, n_file)
        rep.onset_tol = onset_tolerance(h)
    return rep


def _mne_scale(unit: str) -> float:
    """The factor MNE's EDF/BDF reader applies for ``unit`` (µV and mV spellings; anything else as V)."""
    return 1e-6 if unit in ("\u03bcV", "\u00b5V", "\x83\xcaV", "uV") else 1e-3 if unit == "mV" else 1.0


def _looks_eeg(label: str) -> bool:
    from neurokit.geometry.channels import normalize_ch_name

    return normalize_ch_name(label)[1]


_TAL = re.compile(rb"^([+-]\d+(?:\.\d*)?)\x14")


def _record_onsets(h: EDFHeader, n_records: int) -> np.ndarray:
    """Time-keeping annotation (EDF+ §2.2.4) of every data record, relative to the first record."""
    path = h.path
    if not h.annot:
        sus = _hidden_annotation_signal(h)
        if sus is not None:
            raise DataFileError(
                f"{path}: signal {sus + 1} ({h.labels[sus]!r}) holds EDF+ annotations (time-stamped text) but is "
                "not labelled 'EDF Annotations': its events would be lost and the signal read as a channel; "
                "relabel it in the header"
            )
        raise DataFileError(
            f"{path}: an EDF+/BDF+ file without an 'EDF Annotations' signal (the standard "
            "requires one to time each data record); a damaged header"
        )
    bps = h.bytes_per_sample
    a = h.annot[0]
    off = int(h.spr[:a].sum()) * bps
    n = int(h.spr[a]) * bps
    mm = np.memmap(path, dtype=np.uint8, mode="r", offset=h.header_bytes, shape=(n_records, h.record_bytes))
    block = np.asarray(mm[:, off : off + n])
    del mm
    onsets = np.empty(n_records)
    for r in range(n_records):
        m = _TAL.match(block[r].tobytes())
        if m is None:
            raise DataFileError(
                f"{path}: data record {r + 1} has no time-keeping annotation ('+onset'), which "
                "EDF+ requires; a damaged file"
            )
        onsets[r] = float(m.group(1))
    onsets -= onsets[0]
    tol = onset_tolerance(h)
    step = np.diff(onsets)
    bad = np.flatnonzero(step < h.record_s - tol)
    if len(bad):
        r = int(bad[0]) + 1
        raise DataFileError(
            f"{path}: data record {r + 1} starts at {onsets[r]:g} s, before record {r} ends "
            f"({onsets[r - 1] + h.record_s:g} s): a repeated or out-of-order record ({len(bad)} such); "
            "its samples would shift all later data against the events"
        )
    return onsets


def onset_tolerance(h: EDFHeader) -> float:
    """Slack (s) between a data record's time-stamp and the end of the previous record: half a sample at
    the fastest rate, at least 2 ms (writers round time-stamps to the millisecond), under half a record.

    Parameters
    ----------
    h : EDFHeader
        The file's header.

    Returns
    -------
    float
        Seconds.
    """
    rate = float((h.spr[[i for i in range(len(h.labels)) if i not in h.annot]] / h.record_s).max())
    return min(max(0.5 / rate, 2e-3), 0.5 * h.record_s)


def _hidden_annotation_signal(h: EDFHeader) -> int | None:
    """Index of a signal whose first record holds TAL text although it is not labelled as annotations."""
    bps = h.bytes_per_sample
    with open(h.path, "rb") as fh:
        fh.seek(h.header_bytes)
        rec = fh.read(h.record_bytes)
    starts = np.concatenate([[0], np.cumsum(h.spr)]) * bps
    for i in range(len(h.labels)):
        chunk = rec[starts[i] : starts[i + 1]]
        if re.match(rb"^[+-]\d+(\.\d*)?\x14\x14", chunk):
            return i
    return None


# ----------------------------------------------------------------------------------------------- BrainVision
def mne_reads_without_marker_file() -> bool:
    """Whether the installed MNE reads a BrainVision header with no ``MarkerFile`` line (MNE 1.13 and later).

    Returns
    -------
    bool
    """
    return Version(importlib.metadata.version("mne")) >= Version("1.13")


_BV_BYTES = {"INT_16": 2, "UINT_16": 2, "INT_32": 4, "IEEE_FLOAT_32": 4}


class _CaseConfigParser(configparser.ConfigParser):
    """A ConfigParser that keeps the case of keys (BrainVision's ``Ch1=Fp1,,0.1,µV`` keys are read as written)."""

    def optionxform(self, optionstr: str) -> str:
        return optionstr


def check_brainvision(path: str | Path, *, allow_truncated: bool = False) -> HeaderReport:
    """Check a BrainVision ``.vhdr`` against its data and marker files.

    Checks: sampling interval finite and within :data:`SFREQ_BOUNDS`; channel count against the channel
    entries; binary format known; the ``.eeg`` size a whole number of sample frames (a file a few bytes
    short loses a frame silently in MNE); a ``MarkerFile`` named (else no marker is read) and present;
    channel resolutions and the sampling interval against the amplifier-setup table that BrainVision
    Recorder writes into the header's comment.

    Parameters
    ----------
    path : str or Path
        The ``.vhdr`` header.
    allow_truncated : bool
        Accept a data file with a partial last sample frame (dropped, with a warning).

    Returns
    -------
    HeaderReport

    Raises
    ------
    DataFileError
        Damage that would give wrong samples or wrong times.
    """
    path = Path(path)
    text = path.read_bytes().decode("utf-8", errors="replace")
    head, _, comment = text.partition("[Comment]")
    cp = _CaseConfigParser(interpolation=None, strict=False)
    try:
        cp.read_string(head.split("\n", 1)[1] if "\n" in head else "")
    except configparser.Error as exc:
        raise DataFileError(f"{path}: unreadable BrainVision header ({type(exc).__name__}: {str(exc)[:200]})") from exc
    rep = HeaderReport()
    common = cp["Common Infos"] if cp.has_section("Common Infos") else {}
    try:
        interval = float(common.get("SamplingInterval", "nan"))
        n_ch = int(common.get("NumberOfChannels", "-1"))
    except ValueError:
        raise DataFileError(f"{path}: SamplingInterval or NumberOfChannels is not a number") from None
    sfreq = 1e6 / interval if interval and math.isfinite(interval) else float("nan")
    if not (math.isfinite(sfreq) and SFREQ_BOUNDS[0] <= sfreq <= SFREQ_BOUNDS[1]):
        raise DataFileError(
            f"{path}: SamplingInterval={common.get('SamplingInterval')!r} µs gives a sampling "
            f"rate outside {SFREQ_BOUNDS[0]:g}–{SFREQ_BOUNDS[1]:g} Hz: a damaged header"
        )
    chans = dict(cp["Channel Infos"]) if cp.has_section("Channel Infos") else {}
    if n_ch < 1 or n_ch != len(chans):
        raise DataFileError(f"{path}: NumberOfChannels={n_ch} but the header lists {len(chans)} channel entries")
    res = {}
    for k, v in chans.items():
        parts = v.split(",")
        try:
            r = float(parts[2]) if len(parts) > 2 and parts[2].strip() else 1.0
        except ValueError:
            raise DataFileError(f"{path}: channel {k} resolution {parts[2][:20]!r} is not a number") from None
        if not math.isfinite(r) or r == 0:
            rep.uncalibrated.append(parts[0])
        res[parts[0]] = r
    fmt = cp.get("Binary Infos", "BinaryFormat", fallback="INT_16").strip().upper()
    if common.get("DataFormat", "BINARY").strip().upper() == "BINARY":
        if fmt not in _BV_BYTES:
            raise DataFileError(f"{path}: BinaryFormat={fmt!r}; known: {sorted(_BV_BYTES)}")
        data = path.parent / common.get("DataFile", "").strip()
        if not data.is_file():
            raise DataFileError(f"{path}: DataFile {common.get('DataFile', '')!r} not found beside the header")
        frame = n_ch * _BV_BYTES[fmt]
        short = (-data.stat().st_size) % frame
        if short:
            msg = (
                f"{data.name} is {short} bytes short of a whole sample frame ({n_ch} channels × "
                f"{_BV_BYTES[fmt]} bytes, {fmt}): the last frame is incomplete"
            )
            if not allow_truncated:
                raise DataFileError(
                    f"{path}: truncated file: {msg}. Copy the file again, or read the frames that are "
                    "there with allow_truncated=True, or leave the file out with skip_bad=True"
                )
            rep.warnings.append(msg + "; it is dropped")
    marker = common.get("MarkerFile", "").strip()
    if not marker:
        beside = sorted(p.name for p in path.parent.glob(path.stem + ".vmrk"))
        add = f"; {beside[0]} lies beside it: add 'MarkerFile={beside[0]}'" if beside else ""
        if not mne_reads_without_marker_file():
            raise DataFileError(
                f"{path}: the header names no MarkerFile, which MNE {importlib.metadata.version('mne')} cannot read (MNE 1.13 reads it "
                f"without markers){add or ': add a MarkerFile= line to its [Common Infos]'}, or upgrade MNE"
            )
        rep.warnings.append("the header names no MarkerFile, so no marker (event) is read" + add)
    elif not (path.parent / marker).is_file():
        raise DataFileError(f"{path}: MarkerFile {marker!r} not found beside the header")
    # BrainVision Recorder repeats rate and resolutions in the comment: disagreement = an edited header
    if "Vision Recorder" not in head:
        return rep  # other writers may leave an older comment behind
    m = re.search(r"Sampling Rate \[Hz\]:\s*([\d.]+)", comment)
    if m and abs(float(m.group(1)) - sfreq) > 1e-6 * sfreq:
        raise DataFileError(
            f"{path}: SamplingInterval={interval:g} µs ({sfreq:g} Hz) disagrees with the header's "
            f"amplifier setup ({m.group(1)} Hz)"
        )
    table = dict(re.findall(r"^\d+\s+(\S+)\s+\d+\s+([-\d.eE+]+)\s*\S*V\b", comment, flags=re.M))
    off = [n for n, r in res.items() if n in table and _num(table[n]) not in (None, r)]
    if off:
        raise DataFileError(
            f"{path}: resolution of channels {short_list(off)} in [Channel Infos] disagrees "
            "with the header's amplifier-setup table: an edited header (amplitudes would be wrong)"
        )
    return rep


def _num(s: str) -> float | None:
    try:
        return float(s)
    except ValueError:
        return None
