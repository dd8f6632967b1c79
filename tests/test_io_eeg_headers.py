"""Corrupt headers (issue 7): plausibility and consistency checks in reading, and a seeded mutation test over
the shared EDF, BDF, BrainVision, GDF and EEGLAB files — every mutant is either a plausible load or a neurokit
error that names the file in a short message."""

import warnings
from pathlib import Path

import numpy as np
import pytest

import neurokit
from neurokit._utils.errors import DataFileError, NeurokitError
from neurokit.cards.recipes import EEGRecipe
from neurokit.io.headers import mne_reads_without_marker_file
from neurokit.preprocessing.eeg.windows import preprocess_raw

FORMATS = "formats"
_SIGNAL_FIELDS = [
    ("label", 16),
    ("transducer", 80),
    ("unit", 8),
    ("pmin", 8),
    ("pmax", 8),
    ("dmin", 8),
    ("dmax", 8),
    ("prefilter", 80),
    ("spr", 8),
    ("reserved", 32),
]
_GLOBAL = {"header_bytes": (184, 8), "reserved": (192, 44), "n_records": (236, 8), "record_s": (244, 8), "ns": (252, 4)}


def _ns(b: bytes) -> int:
    return int(b[252:256].decode().strip())


def _set(b: bytearray, field: str, text: str, signal: int | None = None) -> bytearray:
    if signal is None:
        off, w = _GLOBAL[field]
    else:
        ns, off = _ns(b), 256
        for name, width in _SIGNAL_FIELDS:
            if name == field:
                off, w = off + signal * width, width
                break
            off += ns * width
    b[off : off + w] = text.encode("latin-1")[:w].ljust(w)
    return b


def _get(b: bytes, field: str, signal: int) -> str:
    ns, off = _ns(b), 256
    for name, width in _SIGNAL_FIELDS:
        if name == field:
            return b[off + signal * width : off + (signal + 1) * width].decode("latin-1").strip()
        off += ns * width


@pytest.fixture(scope="module")
def edf_bytes(eeg_root):
    return (eeg_root / FORMATS / "edf/subsecond_starttime.edf").read_bytes()  # EDF+C, 3 EEG + annotations, 512 Hz


def _write(tmp_path, name, b):
    p = tmp_path / name
    p.write_bytes(bytes(b))
    return p


# ------------------------------------------------------------------------------------ named checks, exact text
@pytest.mark.parametrize(
    "value, msg",
    [
        ("0", r"data-record duration is 0.0 s; it must be a positive number"),
        ("-1", r"data-record duration is -1.0 s"),
        ("nan", r"data-record duration is nan s"),
        ("1e15", r"sampling rate 5.12e-13 Hz \(512 samples per 1e\+15-s record\) is outside 1–1e\+06 Hz"),
        ("1e6", r"sampling rate 0.000512 Hz"),
        ("abc", r"header field 'duration of a data record' is 'abc', not a number"),
    ],
)
def test_record_duration_checked(tmp_path, edf_bytes, value, msg):
    p = _write(tmp_path, "dur.edf", _set(bytearray(edf_bytes), "record_s", value))
    with pytest.raises(DataFileError, match=r"dur.edf: " + msg):
        neurokit.read_eeg(p)


def test_header_length_mismatch_says_what(tmp_path, edf_bytes):
    """MNE's bare `assert fid.tell() == header_nbytes` used to reach the user as 'AssertionError: '."""
    p = _write(tmp_path, "hl.edf", _set(bytearray(edf_bytes), "header_bytes", "1536"))
    with pytest.raises(
        DataFileError,
        match=r"hl.edf: header length field says 1536 bytes, but 4 signals need 1280 "
        r"\(256 × \(signals \+ 1\)\)",
    ) as ei:
        neurokit.read_eeg(p)
    assert "AssertionError" not in str(ei.value)


def test_more_data_than_announced_is_not_called_truncated(tmp_path, edf_bytes):
    b = bytearray(edf_bytes)
    p = _write(tmp_path, "more.edf", _set(b, "n_records", "3"))  # the file holds 5
    with pytest.warns(
        RuntimeWarning, match=r"more.edf: the file holds 5 data records, 2 more than its header announces \(3\)"
    ) as rec:
        raw = neurokit.read_eeg(p)
    assert raw.n_times == 5 * 512
    assert not any("announces more data records than the file holds" in str(w.message) for w in rec)
    with pytest.warns(RuntimeWarning, match=r"more.edf: 7 bytes after the last whole data record are ignored"):
        neurokit.read_eeg(_write(tmp_path, "more.edf", edf_bytes + b"\0" * 7))
    with pytest.raises(
        DataFileError,
        match=r"few.edf: truncated file: the header announces more data records than the "
        r"file holds \(9 announced, 5 present",
    ):
        neurokit.read_eeg(_write(tmp_path, "few.edf", _set(bytearray(edf_bytes), "n_records", "9")))


def test_physical_range_checks(tmp_path, edf_bytes):
    b = _set(bytearray(edf_bytes), "pmin", "-1e8", 0)
    b = _set(b, "pmax", "1e8", 0)
    unit = _get(edf_bytes, "unit", 0)
    with pytest.warns(RuntimeWarning, match=r"big.edf: channel 'Fp1': physical range ±100 V is implausible for EEG"):
        neurokit.read_eeg(_write(tmp_path, "big.edf", b))
    assert unit == "uV"
    b = _set(bytearray(edf_bytes), "pmax", "nan", 1)
    with pytest.warns(RuntimeWarning, match=r"nanrange.edf: channels \['F7'\] are uncalibrated"):
        raw = neurokit.read_eeg(_write(tmp_path, "nanrange.edf", b))
    assert raw.info["bads"] == ["F7"]


def test_annotation_signal_checks(tmp_path, edf_bytes):
    ns = _ns(edf_bytes)
    b = _set(bytearray(edf_bytes), "label", "EEG Fz", ns - 1)  # the annotation signal relabelled
    with pytest.raises(
        DataFileError,
        match=r"relab.edf: signal 4 \('EEG Fz'\) holds EDF\+ annotations .* but is not "
        r"labelled 'EDF Annotations'",
    ):
        neurokit.read_eeg(_write(tmp_path, "relab.edf", b))
    b = _set(bytearray(edf_bytes), "spr", "-1", ns - 1)
    with pytest.raises(
        DataFileError, match=r"spr.edf: samples per data record below 1 for signals \['EDF Annotations'\]"
    ):
        neurokit.read_eeg(_write(tmp_path, "spr.edf", b))


def test_duplicated_record_refused(tmp_path, edf_bytes):
    hb = 256 * (_ns(edf_bytes) + 1)
    spr = [int(_get(edf_bytes, "spr", i)) for i in range(_ns(edf_bytes))]
    rb = sum(spr) * 2
    body = edf_bytes[hb:]
    dup = body[: 3 * rb] + body[2 * rb : 3 * rb] + body[3 * rb :]  # record 3 written twice
    b = _set(bytearray(edf_bytes[:hb]), "n_records", "6")
    with pytest.raises(
        DataFileError,
        match=r"dup.edf: data record 4 starts at 2 s, before record 3 ends \(3 s\): a "
        r"repeated or out-of-order record",
    ):
        neurokit.read_eeg(_write(tmp_path, "dup.edf", bytes(b) + dup))


def test_short_messages():
    from neurokit.io.headers import short_list

    s = short_list([f"ch{i}" for i in range(99_999_999 // 1000)])
    assert s.endswith("… (+99,993 more)]") and len(s) < 100


@pytest.fixture()
def bv(eeg_root, tmp_path):
    """A writable copy of the shared BrainVision recording: (vhdr path, header text)."""
    src = eeg_root / FORMATS / "brainvision"
    for f in src.iterdir():
        (tmp_path / f.name).write_bytes(f.read_bytes())
    return tmp_path / "bv_dig_test.vhdr", (src / "bv_dig_test.vhdr").read_text(encoding="utf-8")


def test_brainvision_checks(bv):
    vhdr, text = bv
    vhdr.write_text(text.replace("MarkerFile=bv_dig_test.vmrk\n", ""), encoding="utf-8")
    if mne_reads_without_marker_file():
        with pytest.warns(
            RuntimeWarning,
            match=r"bv_dig_test.vhdr: the header names no MarkerFile, so no marker \(event\) is "
            r"read; bv_dig_test.vmrk lies beside it",
        ):
            neurokit.read_eeg(vhdr)
    else:  # MNE before 1.13 cannot read such a header: one line naming the file, the line to add and the upgrade
        with pytest.raises(DataFileError, match=r"bv_dig_test.vhdr: the header names no MarkerFile, which MNE .* "
                           r"cannot read .*add 'MarkerFile=bv_dig_test.vmrk', or upgrade MNE"):  # fmt: skip
            neurokit.read_eeg(vhdr)
    vhdr.write_text(text.replace("Ch1=Fp1,,0.1,µV", "Ch1=Fp1,,1,µV"), encoding="utf-8")
    with pytest.raises(DataFileError, match=r"resolution of channels \['Fp1'\] in \[Channel Infos\] disagrees"):
        neurokit.read_eeg(vhdr)
    vhdr.write_text(text.replace("SamplingInterval=200", "SamplingInterval=100"), encoding="utf-8")
    with pytest.raises(
        DataFileError, match=r"SamplingInterval=100 µs \(10000 Hz\) disagrees with the header's amplifier setup"
    ):
        neurokit.read_eeg(vhdr)
    vhdr.write_text(text.replace("NumberOfChannels=67", "NumberOfChannels=99999999"), encoding="utf-8")
    with pytest.raises(DataFileError, match=r"NumberOfChannels=99999999 but the header lists 67 channel entries") as ei:
        neurokit.read_eeg(vhdr)
    assert len(str(ei.value)) < 300
    vhdr.write_text(text, encoding="utf-8")
    eeg = vhdr.with_suffix(".eeg")
    eeg.write_bytes(eeg.read_bytes()[:-1])
    with pytest.raises(
        DataFileError,
        match=r"bv_dig_test.vhdr: truncated file: bv_dig_test.eeg is 1 bytes short of a whole "
        r"sample frame \(67 channels × 2 bytes, INT_16\)",
    ):
        neurokit.read_eeg(vhdr)
    with pytest.warns(RuntimeWarning, match=r"1 bytes short of a whole sample frame .*; it is dropped"):
        raw = neurokit.read_eeg(vhdr, allow_truncated=True)
    assert raw.n_times == 4999


# ------------------------------------------------------------------------------------------ mutation test
def _edf_mutants(name: str, b: bytes, rng) -> list[tuple[str, bytes]]:
    ns = _ns(b)
    hb = 256 * (ns + 1)
    last = ns - 1
    n_rec = int(b[236:244].decode().strip())
    out = []
    for v in ("0", "-1", "nan", "1e15", "1e-3", "1e6", "x", "-0.5"):
        out.append((f"record_s={v}", _set(bytearray(b), "record_s", v)))
    for v in ("0", "-1", "-7", "1", str(n_rec + 1), str(n_rec - 1), "99999999", "2.5"):
        out.append((f"n_records={v}", _set(bytearray(b), "n_records", v)))
    for v in ("0", "-1", "9999", str(ns + 1), str(ns - 1), "a"):
        out.append((f"ns={v}", _set(bytearray(b), "ns", v)))
    for v in ("0", "256", "99999999", str(hb + 256)):
        out.append((f"header_bytes={v}", _set(bytearray(b), "header_bytes", v)))
    for v in ("EDF+D", "BDF+D", "EDF+C", ""):
        out.append((f"reserved={v}", _set(bytearray(b), "reserved", v)))
    for sig in (0, last):
        for field, vals in (
            ("spr", ("-1", "0", "1", "99999999", "nan")),
            ("pmin", ("nan", "-1e8", "inf", "0")),
            ("pmax", ("nan", "1e8", "-inf")),
            ("dmin", ("32767", "0", "nan")),
            ("dmax", ("-32768", "x")),
            ("unit", ("", "mmHg", "V", "kV")),
            ("label", ("EEG Fz", "EDF Annotations", "T3")),
        ):
            for v in vals:
                out.append((f"signal{sig}.{field}={v}", _set(bytearray(b), field, v, sig)))
    body = b[hb:]
    out += [
        ("cut 1 byte", b[:-1]),
        ("cut half", b[: hb + len(body) // 2]),
        ("cut to header", b[:hb]),
        ("cut in header", b[: hb // 2]),
        ("plus 1 byte", b + b"\0"),
        ("plus body", b + body),
        ("zeros body", b[:hb] + bytes(len(body))),
    ]
    for k in range(8):  # random digits and signs in the header's numeric area
        m = bytearray(b)
        for pos in rng.integers(184, hb, size=3):
            m[pos] = rng.choice(list(b"0123456789-+.e "))
        out.append((f"random header bytes #{k}", m))
    return [(f"{name}: {what}", bytes(m)) for what, m in out]


def _bv_mutants(text: str) -> list[tuple[str, dict]]:
    rep = [
        ("SamplingInterval=200", v)
        for v in (
            "SamplingInterval=0",
            "SamplingInterval=-200",
            "SamplingInterval=nan",
            "SamplingInterval=1e-9",
            "SamplingInterval=abc",
            "SamplingInterval=400",
        )
    ]
    rep += [
        ("NumberOfChannels=67", v) for v in ("NumberOfChannels=0", "NumberOfChannels=66", "NumberOfChannels=99999999")
    ]
    rep += [
        ("BinaryFormat=INT_16", v) for v in ("BinaryFormat=IEEE_FLOAT_32", "BinaryFormat=INT_32", "BinaryFormat=FOO")
    ]
    rep += [
        ("MarkerFile=bv_dig_test.vmrk\n", ""),
        ("MarkerFile=bv_dig_test.vmrk", "MarkerFile=gone.vmrk"),
        ("DataFile=bv_dig_test.eeg", "DataFile=gone.eeg"),
        ("DataOrientation=MULTIPLEXED", "DataOrientation=VECTORIZED"),
        ("Ch1=Fp1,,0.1,µV", "Ch1=Fp1,,1,µV"),
        ("Ch1=Fp1,,0.1,µV", "Ch1=Fp1,,0,µV"),
        ("Ch1=Fp1,,0.1,µV", "Ch1=Fp1,,nan,µV"),
        ("Ch2=Fp2,,0.1,µV", "Ch2=Fp1,,0.1,µV"),
        ("[Channel Infos]", "[Channel Inf]"),
    ]
    out = [(f"vhdr {a!r} -> {v!r}", {"vhdr": text.replace(a, v)}) for a, v in rep]
    out += [(f"eeg {what}", {"eeg": what}) for what in ("cut 1 byte", "cut half", "plus 3 bytes", "empty")]
    out += [("vmrk garbage", {"vmrk": "garbage\n"}), ("vmrk beyond end", {"vmrk": "Mk3=Stimulus,S  1,999999,1,0\n"})]
    return out


def _check_outcome(path: Path, what: str) -> str:
    """A neurokit error naming the file (short), or a load whose rate, samples and times are plausible (or
    warned about, naming the file)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            raw = neurokit.read_eeg(path, preload=True)
            raw = preprocess_raw(raw, EEGRecipe(l_freq=None, h_freq=None, line_freq=None, window_s=1.0, min_sfreq=1.0))
        except (NeurokitError, FileNotFoundError) as exc:
            msg = str(exc)
            assert path.name in msg, f"{what}: error does not name the file: {msg[:300]}"
            assert len(msg) < 800, f"{what}: error of {len(msg)} characters"
            return "error"
    warned = [str(w.message) for w in caught if path.name in str(w.message)]
    sf = raw.info["sfreq"]
    assert sf == 200.0 and raw.n_times > 0, what
    assert np.isfinite(raw._data).all(), what
    if np.abs(raw._data).max() > 1.0:
        assert any("implausible" in w for w in warned), (
            f"{what}: {np.abs(raw._data).max():.3g} V loaded without a warning"
        )
    dur = raw.n_times / sf
    on = raw.annotations.onset - (raw.first_time if raw.annotations.orig_time is None else 0)
    assert np.all((on >= -1e-6) & (on <= dur + 1e-6)), f"{what}: annotation outside the data"
    return "warned load" if warned else "load"


def test_seeded_mutants_load_plausibly_or_fail_clearly(eeg_root, tmp_path):
    rng = np.random.default_rng(20261130)
    outcomes = {}
    cases = []
    for rel in ("edf/subsecond_starttime.edf", "bdf/test_bdf_stim_channel.bdf"):
        src = eeg_root / FORMATS / rel
        cases += [(src.suffix, w, m) for w, m in _edf_mutants(src.name, src.read_bytes(), rng)]
    for i, (suffix, what, data) in enumerate(cases):
        p = tmp_path / f"mut{i:03d}{suffix}"
        p.write_bytes(data)
        outcomes[what] = _check_outcome(p, what)
        p.unlink()
    # BrainVision: header, data and marker files
    src = eeg_root / FORMATS / "brainvision"
    text = (src / "bv_dig_test.vhdr").read_text(encoding="utf-8")
    eeg = (src / "bv_dig_test.eeg").read_bytes()
    vmrk = (src / "bv_dig_test.vmrk").read_text(encoding="utf-8")
    for i, (what, change) in enumerate(_bv_mutants(text)):
        d = tmp_path / f"bv{i:02d}"
        d.mkdir()
        (d / "bv_dig_test.vhdr").write_text(change.get("vhdr", text), encoding="utf-8")
        e = {
            "cut 1 byte": eeg[:-1],
            "cut half": eeg[: len(eeg) // 2],
            "plus 3 bytes": eeg + b"\0\0\0",
            "empty": b"",
        }.get(change.get("eeg"), eeg)
        (d / "bv_dig_test.eeg").write_bytes(e)
        (d / "bv_dig_test.vmrk").write_text(vmrk + change["vmrk"] if "vmrk" in change else vmrk, encoding="utf-8")
        outcomes[what] = _check_outcome(d / "bv_dig_test.vhdr", what)
    # GDF and EEGLAB: seeded byte flips in the GDF header, cut EEGLAB data files
    gdf = (eeg_root / FORMATS / "gdf/test_1ch.gdf").read_bytes()
    for k in range(8):
        m = bytearray(gdf)
        for pos in rng.integers(0, 256 * 2, size=4):
            m[pos] = int(rng.integers(0, 256))
        p = tmp_path / f"g{k}.gdf"
        p.write_bytes(bytes(m))
        outcomes[f"gdf flip #{k}"] = _check_outcome(p, f"gdf flip #{k}")
    st = eeg_root / FORMATS / "eeglab"
    for what, cut in (("fdt cut 1 byte", -1), ("fdt cut half", None)):
        d = tmp_path / what.replace(" ", "_")
        d.mkdir()
        (d / "test_raw.set").write_bytes((st / "test_raw.set").read_bytes())
        fdt = (st / "test_raw.fdt").read_bytes()
        (d / "test_raw.fdt").write_bytes(fdt[:cut] if cut else fdt[: len(fdt) // 2])
        outcomes[what] = _check_outcome(d / "test_raw.set", what)
    n = len(outcomes)
    assert n > 150
    # the damage this test was written for ends in errors, not in loads
    for what in (
        "subsecond_starttime.edf: record_s=1e15",
        "subsecond_starttime.edf: record_s=nan",
        "subsecond_starttime.edf: signal3.label=EEG Fz",
        "subsecond_starttime.edf: signal3.spr=-1",
        "vhdr 'SamplingInterval=200' -> 'SamplingInterval=0'",
        "eeg cut 1 byte",
        "fdt cut 1 byte",
    ):
        assert outcomes[what] == "error", what
    assert outcomes["vhdr 'MarkerFile=bv_dig_test.vmrk\\n' -> ''"] == (
        "warned load" if mne_reads_without_marker_file() else "error"
    )
    assert outcomes["subsecond_starttime.edf: signal0.pmax=1e8"] == "warned load"


@pytest.mark.parametrize("head", [b"this is a plain text file, renamed. " * 10, bytes(range(256)) * 2])
def test_a_file_that_is_not_edf_says_so(tmp_path, head):
    """A text or binary file renamed .edf: 'not an EDF/BDF file' and what it starts with, not a header field."""
    p = tmp_path / "notes.edf"
    p.write_bytes(head)
    with pytest.raises(DataFileError, match=r"notes.edf: not an EDF/BDF file \(an EDF file starts with '0' and seven"):
        neurokit.read_eeg(p)


def test_a_txt_file_is_not_read_as_fnirs(tmp_path):
    """MNE's read_raw takes .txt for BOXY optical data and fails in an assertion; neurokit says what it is."""
    p = tmp_path / "recording.txt"
    p.write_text("Fp1,Fp2\n1,2\n")
    with pytest.raises(DataFileError, match=r"recording.txt: a .txt file is not an EEG recording neurokit reads"):
        neurokit.read_eeg(p)
