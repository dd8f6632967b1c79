"""A minimal writer of Neuroscan 4.x continuous ``.cnt`` files for tests, written from the format as MNE reads it
(``mne/io/cnt/cnt.py`` and ``_utils.py``, MNE 1.13), so that :func:`mne.io.read_raw_cnt` gives back exactly the
channel names, sampling rate, data and events written. MNE itself cannot write ``.cnt``.

Layout (little-endian throughout):

* ``SETUP``, 900 bytes. The fields MNE reads, at their offsets: 0 revision text (not read; ``Version 3.0``),
  21 patient id (char[20], an integer if all digits), 121 patient name (char[20]), 143 sex and 144 handedness
  (one character each), 205 session label (char[20]), 225 date ``mm/dd/yy`` (char[10]) and 235 time
  ``hh:mm:ss`` (char[12]), 370 number of channels (uint16), 376 sampling rate (uint16: whole Hz only),
  438/439 low-/high-pass toggles (int8; 0 here, so ``info['lowpass']`` is Nyquist), 864 number of samples
  (int32), 869/875 low/high cut-off (float32), 886 event table position (int32), 890 continuous seconds
  (float32), 894 channel offset (int32: bytes per multiplexed block; ``n_bytes`` here, which MNE turns into one
  sample per channel per block). Everything else is zero.
* ``ELECTLOC``, 75 bytes per channel from offset 900: 0 label (char[10]), 14 bad flag (uint8), 19/23 x/y
  position (float32; MNE fits them to a sphere, so they must not all be zero or its normalisation divides by
  zero), 47 baseline (int16, subtracted from the counts), 59 sensitivity and 71 calibration (float32). MNE
  scales a count ``c`` to volts as ``(c - baseline) * calibration * sensitivity * 1e-6 / 204.8``; here the
  sensitivity is 204.8, so ``calibration`` is the µV per count (both rounded to float32 as stored).
* the data from ``900 + 75 * n_channels``: int16 or int32 counts, multiplexed sample by sample
  (``c[0, 0], c[1, 0], ..., c[n-1, 0], c[0, 1], ...``).
* the event table at the position in ``SETUP`` (right after the data): the 9-byte ``TEEG`` header
  (uint8 type 2, int32 size of the events in bytes, int32 offset 0), then one 19-byte ``EVENT2`` per event
  (uint16 StimType, uint8 KeyBoard, uint8 KeyPad_Accept, int32 Offset, int16 Type, int16 Code, float32 Latency,
  three chars). MNE needs the ``TEEG`` header even when there are no events.

What MNE needs that is odd:

* ``data_format='auto'`` (what the SEED-V release calls) infers 2 or 4 bytes per sample from the number of
  samples at 864 and the event table position at 886, so both must be exact (the event table must exist).
* An event's ``Offset`` is a byte position in the file, and MNE subtracts one sample from it
  (``(Offset - 900 - 75 n) // (n * n_bytes) - 1``): the offset of sample ``k + 1`` is written for an event at
  sample ``k`` so that its annotation onset is ``k / sfreq``, its description the ``StimType`` as text.
* With ``header='auto'`` (its default) MNE also reads byte 4 of each ``ELECTLOC`` as an old-format bad flag;
  that byte is the 5th character of the label, so a label of five or more characters comes back in
  ``info['bads']``. Labels here should be at most four characters (SEED-V's are).
* The date and time must parse as ``%m/%d/%y %H:%M:%S`` or MNE warns and leaves ``meas_date`` unset.
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

SETUP_SIZE = 900
ELECTLOC_SIZE = 75
_LIMITS = {"int16": (2, "<i2", -(2**15), 2**15 - 1), "int32": (4, "<i4", -(2**31), 2**31 - 1)}
#: default µV per count: 16-bit at 0.1 µV (±3.2 mV), 32-bit at 1 nV
RESOLUTION_UV = {"int16": 0.1, "int32": 0.001}


def volts_per_count(calibration_uv: float) -> float:
    """The scale MNE applies to a count (``calibration * sensitivity * 1e-6 / 204.8`` of the stored float32s)."""
    return float(np.float32(calibration_uv)) * float(np.float32(204.8)) * 1e-6 / 204.8


def _put(buf: bytearray, offset: int, fmt: str, *values) -> None:
    struct.pack_into("<" + fmt, buf, offset, *values)


def _text(buf: bytearray, offset: int, size: int, text: str) -> None:
    raw = text.encode("ascii")[:size]
    buf[offset : offset + len(raw)] = raw


def write_cnt(
    path,
    data_uv,
    sfreq: int,
    ch_names,
    *,
    data_format: str = "int32",
    resolution_uv: float | None = None,
    baselines=None,
    events=(),
    date: str = "08/04/18",
    time: str = "10:00:00",
    bads=(),
) -> np.ndarray:
    """Write ``data_uv`` ``(n_channels, n_samples)`` in µV as a Neuroscan continuous ``.cnt``.

    ``data_format``: ``"int16"`` or ``"int32"`` counts; ``resolution_uv``: µV per count (the channel
    calibration; default :data:`RESOLUTION_UV`); ``baselines``: per-channel int16 baseline added to the counts
    (MNE subtracts it); ``events``: ``(sample, stim_type)`` pairs; ``bads``: labels flagged bad.

    Returns what :func:`mne.io.read_raw_cnt` should read back, in volts ``(n_channels, n_samples)``: the data
    rounded to whole counts. Raises ``ValueError`` for counts out of the format's range, a rate that is not a
    whole number of Hz, or a label longer than ten characters.
    """
    path = Path(path)
    nbytes, dtype, lo, hi = _LIMITS[data_format]
    data_uv = np.atleast_2d(np.asarray(data_uv, float))
    n_ch, n = data_uv.shape
    ch_names = list(ch_names)
    if len(ch_names) != n_ch:
        raise ValueError(f"{len(ch_names)} names for {n_ch} channels")
    if any(len(c.encode("ascii")) > 10 for c in ch_names):
        raise ValueError("ELECTLOC labels hold at most 10 characters")
    if float(sfreq) != int(sfreq) or not 0 < int(sfreq) < 2**16:
        raise ValueError(f"sampling rate {sfreq}: the SETUP field is a uint16 of whole Hz")
    res = RESOLUTION_UV[data_format] if resolution_uv is None else float(resolution_uv)
    scale_uv = volts_per_count(res) * 1e6
    base = np.zeros(n_ch, np.int64) if baselines is None else np.asarray(baselines, np.int64)
    counts = np.rint(data_uv / scale_uv).astype(np.int64) + base[:, None]
    if counts.size and (counts.min() < lo or counts.max() > hi):
        raise ValueError(f"data out of {data_format} range at {res} µV per count")

    setup = bytearray(SETUP_SIZE)
    _text(setup, 0, 12, "Version 3.0")
    _text(setup, 121, 20, "test")
    _text(setup, 143, 1, "U")
    _text(setup, 144, 1, "U")
    _text(setup, 225, 10, date)
    _text(setup, 235, 12, time)
    _put(setup, 370, "H", n_ch)
    _put(setup, 376, "H", int(sfreq))
    _put(setup, 864, "i", n)
    data_pos = SETUP_SIZE + ELECTLOC_SIZE * n_ch
    event_pos = data_pos + n * n_ch * nbytes
    _put(setup, 886, "i", event_pos)
    _put(setup, 890, "f", 1.0)
    _put(setup, 894, "i", nbytes)

    elect = bytearray(ELECTLOC_SIZE * n_ch)
    angles = 2 * np.pi * np.arange(n_ch) / max(n_ch, 1)
    radii = 0.3 + 0.6 * (np.arange(n_ch) % 3) / 2
    for i, name in enumerate(ch_names):
        o = ELECTLOC_SIZE * i
        _text(elect, o, 10, name)
        elect[o + 14] = 1 if name in bads else 0
        _put(elect, o + 19, "ff", radii[i] * np.cos(angles[i]), radii[i] * np.sin(angles[i]))
        _put(elect, o + 47, "h", int(base[i]))
        _put(elect, o + 59, "f", 204.8)
        _put(elect, o + 71, "f", res)

    table = bytearray()
    for sample, stim in events:
        offset = data_pos + (int(sample) + 1) * n_ch * nbytes
        table += struct.pack("<HBBihhfccc", int(stim), 0, 0, offset, 0, 0, 0.0, b"\0", b"\0", b"\0")
    teeg = struct.pack("<Bii", 2, len(table), 0)

    with open(path, "wb") as f:
        f.write(setup)
        f.write(elect)
        f.write(np.ascontiguousarray(counts.T).astype(dtype).tobytes())
        f.write(teeg)
        f.write(table)
    return (counts - base[:, None]) * volts_per_count(res)
