"""Crafted weights files are refused before reading, in one line naming the file and the bound, with bounded
memory and time, never a native crash: safetensors headers of huge declared length, a tensor count past the
bound, shapes beyond the file's bytes; torch.save archives with many members, huge declared member sizes, a
pickle past its bound (issue 26 item 1). Pickle payloads that would run code: tests/test_models_registry.py."""

from __future__ import annotations

import io
import json
import os
import struct
import subprocess
import sys
import textwrap
import time
import tracemalloc
import zipfile
import zlib
from pathlib import Path

import pytest
import torch

from neurokit._utils.errors import WeightsError
from neurokit.models import CBraMod
from neurokit.models.checkpoint import load_checkpoint
from neurokit.models.registry import from_pretrained
from neurokit.models.serialization import MAX_TENSORS, check_weights_bounds, safe_load

ROOT = Path(__file__).resolve().parents[1]


def safetensors_bytes(entries: dict, data: bytes = b"", header_len: int | None = None) -> bytes:
    header = json.dumps(entries, separators=(",", ":")).encode()
    return (len(header) if header_len is None else header_len).to_bytes(8, "little") + header + data


def many_tensors_header(n: int, key: bytes = b"data_offsets") -> bytes:
    """A safetensors file of ``n`` one-byte tensors (header written by hand: json.dumps of a million entries
    would itself cost a second and ~1 GB); ``key``: how the offsets key is spelt (JSON escapes read the same)."""
    body = b",".join(b'"t%d":{"dtype":"U8","shape":[1],"%s":[%d,%d]}' % (i, key, i, i + 1) for i in range(n))
    header = b"{" + body + b"}"
    return len(header).to_bytes(8, "little") + header + bytes(n)


def zip_bytes(members: list[tuple[str, bytes]], declared: dict[str, int] | None = None) -> bytes:
    """A stored (uncompressed) zip, as torch.save writes one, whose central directory may declare other
    uncompressed sizes (``declared``: name → size)."""
    declared = declared or {}
    out, central = io.BytesIO(), []
    for name, data in members:
        nm, crc, at = name.encode(), zlib.crc32(data), out.tell()
        size = declared.get(name, len(data))
        out.write(struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, 0, 0, 0, 0, crc, len(data), size, len(nm), 0))
        out.write(nm + data)
        central.append(
            struct.pack(
                "<4s6H3L5H2L", b"PK\x01\x02", 20, 20, 0, 0, 0, 0, crc, len(data), size, len(nm), 0, 0, 0, 0, 0, at
            )
            + nm
        )
    cd_at, cd = out.tell(), b"".join(central)
    out.write(cd)
    out.write(struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, len(members), len(members), len(cd), cd_at, 0))
    return out.getvalue()


def torch_archive(**declared: int) -> bytes:
    """A real torch.save file rewritten member by member, with the declared sizes given."""
    buf = io.BytesIO()
    torch.save({"w": torch.ones(3)}, buf)
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as zf:
        members = [(m.filename, zf.read(m)) for m in zf.infolist()]
    return zip_bytes(members, {f"archive/{k.replace('_', '/')}": v for k, v in declared.items()})


CRAFTED = {
    # name: (file name, bytes, what the one-line refusal names)
    "huge_header_length": (
        "w.safetensors",
        safetensors_bytes({}, b"{}" + bytes(64), header_len=1 << 40),
        r"w\.safetensors: refused, its safetensors header declares 1,099,511,627,776 bytes \(bound 16\.0 MiB\)",
    ),
    "too_many_tensors": (
        "w.safetensors",
        many_tensors_header(MAX_TENSORS + 1),
        r"w\.safetensors: refused, its safetensors header declares 50,001 tensors \(bound 50,000\)",
    ),
    "too_many_tensors_escaped_key": (  # "data\u005foffsets" is "data_offsets" once parsed: counted after parsing
        "w.safetensors",
        many_tensors_header(MAX_TENSORS + 1, key=b"data\\u005foffsets"),
        r"w\.safetensors: refused, its safetensors header declares 50,001 tensors \(bound 50,000\)",
    ),
    "shape_beyond_the_file": (
        "w.safetensors",
        safetensors_bytes({"w": {"dtype": "F32", "shape": [1 << 20, 1 << 20], "data_offsets": [0, 1 << 42]}}, bytes(8)),
        # the library's own words after "SafetensorError:" differ between its releases
        r"w\.safetensors: refused, not a valid safetensors file \(SafetensorError: ",
    ),
    "shape_beyond_its_offsets": (
        "w.safetensors",
        safetensors_bytes({"w": {"dtype": "F32", "shape": [1 << 30], "data_offsets": [0, 8]}}, bytes(8)),
        r"w\.safetensors: refused, not a valid safetensors file \(SafetensorError: ",
    ),
    "many_members": (
        "w.pt",
        zip_bytes([(f"archive/data/{i}", b"") for i in range(MAX_TENSORS + 100)]),
        r"w\.pt: refused, its archive declares 50,100 members \(bound 50,000 tensors\)",
    ),
    "declared_member_count_only": (
        "w.pt",
        torch_archive()[:-22] + struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, 65535, 65535, 1 << 31, 0, 0),
        r"w\.pt: refused, its archive declares 65,535 members",
    ),
    "huge_member_size": (
        "w.pt",
        torch_archive(data_0=0xFFFFFFF0),
        r"w\.pt: refused, its archive declares 4,294,967,\d+ bytes of members \(largest 'archive/data/0': "
        r"4,294,967,280\), past the bound of min\(8\.0 GiB, the file's [\d,]+ bytes\)",
    ),
    "huge_pickle": (
        "w.pt",
        zip_bytes([("archive/data.pkl", bytes(9 << 20)), ("archive/version", b"3\n")]),
        r"w\.pt: refused, its pickle 'archive/data\.pkl' declares 9,437,184 bytes \(bound 8\.0 MiB\)",
    ),
    "not_a_zip_archive": (
        "w.pt",
        b"\x80\x02}q\x00." + bytes(100),
        r"w\.pt: refused, not a zip-format torch\.save file",
    ),
}


@pytest.mark.parametrize("case", sorted(CRAFTED))
def test_crafted_weights_are_refused_before_reading(tmp_path, case):
    name, data, message = CRAFTED[case]
    path = tmp_path / name
    path.write_bytes(data)
    for call in (
        lambda: safe_load(path),
        lambda: from_pretrained(path),
        lambda: CBraMod.from_pretrained(str(path)),
        lambda: load_checkpoint(path),
    ):
        tracemalloc.start()
        t0 = time.perf_counter()
        with pytest.raises(WeightsError, match=message) as err:
            call()
        seconds, (_, peak) = time.perf_counter() - t0, tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert "\n" not in str(err.value)
        # an escaped key is counted once parsed: parsing costs ~10 bytes per header byte, within the 16 MiB header bound
        factor = 12 if "escaped" in case else 3
        assert peak < factor * len(data) + (16 << 20), f"{case}: {peak / 2**20:.1f} MiB traced"
        assert seconds < 5, f"{case}: {seconds:.1f} s"


def test_files_within_the_bounds_still_load(tmp_path):
    from safetensors.torch import save_file

    save_file({f"t{i}": torch.full((2,), float(i)) for i in range(300)}, tmp_path / "w.safetensors")
    torch.save({f"t{i}": torch.full((2,), float(i)) for i in range(300)}, tmp_path / "w.pt")
    for name in ("w.safetensors", "w.pt"):
        check_weights_bounds(tmp_path / name)
        assert safe_load(tmp_path / name)["t299"].tolist() == [299.0, 299.0]


SCRIPT = textwrap.dedent(
    """
    import json, resource, sys, time
    from pathlib import Path
    import neurokit, neurokit.models.registry, neurokit.models.pretrained, safetensors.torch, torch
    neurokit.from_pretrained  # every module the loading path imports, mapped before the limit
    vm = int(next(l for l in open("/proc/self/status") if l.startswith("VmSize")).split()[1]) * 1024
    resource.setrlimit(resource.RLIMIT_AS, (vm + (1 << 30), vm + (1 << 30)))  # 1 GiB beyond what is mapped now
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    out = {}
    for p in sorted(Path(sys.argv[1]).iterdir()):
        t0 = time.perf_counter()
        try:
            neurokit.from_pretrained(p)
            out[p.name] = ["loaded", 0]
        except Exception as exc:
            out[p.name] = [f"{type(exc).__name__}: {exc}", round(time.perf_counter() - t0, 3)]
    out["maxrss_mib"] = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) // 1024  # growth past the imports
    print(json.dumps(out))
    """
)


@pytest.mark.slow
def test_crafted_weights_are_refused_under_an_address_space_limit(tmp_path):
    """In a child process limited to 1 GiB beyond its imports: the issue's million tiny tensors (64 MiB) and every
    crafted file above end in a one-line WeightsError, not a MemoryError or a native abort."""
    (tmp_path / "files").mkdir()
    (tmp_path / "files" / "million.safetensors").write_bytes(many_tensors_header(1_000_000))
    for case, (name, data, _) in CRAFTED.items():
        (tmp_path / "files" / f"{case}_{name}").write_bytes(data)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path / "files")], capture_output=True, text=True, env=env, timeout=300
    )
    assert run.returncode == 0, run.stderr[-2000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    # the imports alone take 0.5 GiB here and 1.5 GiB on CI's machine: what the files add is bounded, not the sum
    grown = out.pop("maxrss_mib")
    assert grown < 512, f"{grown} MiB past the imports"
    assert out["million.safetensors"][0].endswith("header declares 67,666,677 bytes (bound 16.0 MiB)")
    for name, (message, seconds) in out.items():
        assert message.startswith("PretrainedError: ") and "refused" in message and "\n" not in message, name
        assert seconds < 20, (name, seconds)  # the old code took 92.8 s on the million-tensor file; load here varies
