"""A small EDF/EDF+/BDF/BDF+ writer for tests: every header field under the test's control (units, ranges,
discontinuous data records, annotation encodings), so that each kind of edge case can be built anew."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def write_edf(
    path,
    data,
    sfreq,
    labels,
    *,
    units="uV",
    record_s=1.0,
    onsets=None,
    bdf=False,
    annotations=(),
    phys=None,
    encoding="utf8",
    plus="C",
):
    """Write ``data`` ``(n_channels, n_samples)`` (in ``units``) as EDF(+)/BDF(+).

    ``onsets``: start time (s) of each data record (EDF+D/BDF+D when they leave gaps); ``annotations``:
    ``(onset_s, text)`` pairs, written into the first record's annotation signal; ``phys``: per-channel
    ``(physical min, physical max)`` (default ± the channel's peak × 1.25, or ±1 for a flat channel);
    ``units``: one string or one per channel (``""`` = blank).
    """
    path = Path(path)
    data = np.asarray(data, float)
    n_ch, n = data.shape
    spr = int(round(sfreq * record_s))
    n_rec = n // spr
    onsets = np.arange(n_rec) * record_s if onsets is None else np.asarray(onsets, float)
    bps = 3 if bdf else 2
    dmin, dmax = (-(2**23), 2**23 - 1) if bdf else (-32768, 32767)
    units = [units] * n_ch if isinstance(units, str) else list(units)
    if phys is None:
        peak = np.abs(data).max(axis=1) * 1.25
        phys = [(-p, p) if p > 0 else (-1.0, 1.0) for p in peak]
    # annotation signal: one TAL per record ("+onset\x14\x14\x00"), the events in record 0
    tals = []
    for r in range(n_rec):
        t = f"+{onsets[r]:g}\x14\x14\x00".encode()
        if r == 0:
            for o, text in annotations:
                t += f"+{o:g}\x14".encode() + text.encode(encoding) + b"\x14\x00"
        tals.append(t)
    ann_bytes = max(len(t) for t in tals) + 8
    ann_spr = -(-ann_bytes // bps)
    ann_label = "BDF Annotations" if bdf else "EDF Annotations"
    all_labels = list(labels) + ([ann_label] if plus else [])
    ns = len(all_labels)

    def f(v, w):
        s = v if isinstance(v, str) else f"{v:g}"
        return s.encode("latin-1")[:w].ljust(w)

    head = (b"\xffBIOSEMI" if bdf else f("0", 8)) + f("X X X X", 80) + f("Startdate 01-JAN-2020 X X X", 80)
    head += f("01.01.20", 8) + f("00.00.00", 8) + f(str(256 * (ns + 1)), 8)
    head += f(f"{'BDF' if bdf else 'EDF'}+{plus}" if plus else ("24BIT" if bdf else ""), 44)
    head += f(str(n_rec), 8) + f(f"{record_s:g}", 8) + f(str(ns), 4)
    pm = [p for p in phys] + ([(-1.0, 1.0)] if plus else [])
    sp = [spr] * n_ch + ([ann_spr] if plus else [])
    head += b"".join(f(lab, 16) for lab in all_labels) + b"".join(f("", 80) for _ in all_labels)
    head += b"".join(f(u, 8) for u in units + ([""] if plus else []))
    head += b"".join(f(f"{a:.6g}", 8) for a, _ in pm) + b"".join(f(f"{b:.6g}", 8) for _, b in pm)
    head += b"".join(f(str(dmin), 8) for _ in all_labels) + b"".join(f(str(dmax), 8) for _ in all_labels)
    head += b"".join(f("", 80) for _ in all_labels) + b"".join(f(str(s), 8) for s in sp)
    head += b"".join(f("", 32) for _ in all_labels)
    assert len(head) == 256 * (ns + 1)
    digital = []
    for x, (a, b) in zip(data, phys):
        g = (dmax - dmin) / (b - a) if b != a else 0.0
        digital.append(np.clip(np.round((x[: n_rec * spr] - a) * g + dmin), dmin, dmax).astype(np.int64))
    body = bytearray()
    for r in range(n_rec):
        for d in digital:
            seg = d[r * spr : (r + 1) * spr]
            body += (seg.astype("<i4").view(np.uint8).reshape(-1, 4)[:, :bps]).tobytes()
        if plus:
            body += tals[r].ljust(ann_spr * bps, b"\x00")
    path.write_bytes(head + bytes(body))
    return path
