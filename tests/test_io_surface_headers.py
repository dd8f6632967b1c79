"""Seeded header mutations of the shared CIFTI, GIFTI and FreeSurfer files (issue 7, "Corrupt headers").

Every mutated copy must either load plausibly — the same vertex count, mesh and frame count as the
original, a TR that is None or in (0, 100] s, finite values on cortex, triangles indexing existing vertices —
or raise a neurokit error that names the file. Any other exception (IndexError, MemoryError, ValueError from
numpy …) fails the test. Targeted cases name the faults found by trying neurokit (vertex counts and indices
that disagree with the data, dims promising more data than the file holds, TR 0/−1/NaN, a lowered curvature
vertex count); seeded random byte flips in the headers cover the rest.
"""

from __future__ import annotations

import gzip
import re
import struct
import warnings

import numpy as np
import pytest

from neurokit._utils.errors import NeurokitError
from neurokit.io.surface import read_surface

#: base name → (shared file, hemisphere to read, file name to write the mutant under)
BASES = {
    "dtseries": ("cifti/sub-MSC01_test.dtseries.nii", "L", "m.dtseries.nii"),
    "small": ("cifti/sub-MSC01_test.dtseries.nii", "L", "m.dtseries.nii"),  # cropped in ``small_cifti``
    "func": ("gifti/task.func.gii", None, "m.func.gii"),
    "sphere": ("hcp_fs_LR32k/S1200.L.sphere.32k_fs_LR.surf.gii", None, "m.L.sphere.surf.gii"),
    "curv": ("freesurfer/lh.curv", None, "lh.m.curv"),
    "fs_surf": ("freesurfer/lh.sphere.reg", None, "lh.m.sphere.reg"),
    "mgh": ("fsaverage5_rest/sub-010188_ses-02_task-rest_acq-AP_run-01.fsa5.lh.first100TR.mgz", None, "m.lh.mgh"),
}


_SMALL: dict[str, bytes] = {}


def _raw(surface_root, base: str) -> bytes:
    if base == "small":
        return _SMALL["bytes"]
    data = (surface_root / BASES[base][0]).read_bytes()
    return gzip.decompress(data) if base == "mgh" else data  # MGH mutants are written uncompressed


@pytest.fixture(scope="module", autouse=True)
def small_cifti(surface_root, tmp_path_factory):
    """The first 300 left and 300 right cortex grayordinates of the shared dtseries, all 5 frames."""
    import nibabel as nib

    img = nib.load(surface_root / BASES["dtseries"][0])
    ax0, bm = img.header.get_axis(0), img.header.get_axis(1)
    keep = np.r_[0:300, 29696:29996]
    p = tmp_path_factory.mktemp("small") / "small.dtseries.nii"
    nib.Cifti2Image(np.asarray(img.dataobj)[:, keep], header=(ax0, bm[keep])).to_filename(p)
    _SMALL["bytes"], _SMALL["path"] = p.read_bytes(), p


def swap(old: bytes, new: bytes, *, count: int = 1):
    """Replace the first ``count`` occurrences of ``old`` by ``new``."""
    return lambda b: b.replace(old, new, count)


def xml(pattern: bytes, new: bytes):
    """Regex-replace the first match in a CIFTI's XML, keeping the NIfTI extension's size: the length change
    is taken from (or given to) the NUL padding after ``</CIFTI>``, so only the value changes."""

    def f(b: bytes) -> bytes:
        out, n = re.subn(pattern, new, b, count=1)
        assert n == 1, pattern
        delta = len(out) - len(b)
        end = out.index(b"</CIFTI>") + len(b"</CIFTI>")
        end += out[end : end + 1] == b"\n"
        if delta > 0:
            assert out[end : end + delta] == b"\0" * delta, "not enough padding"
            return out[:end] + out[end + delta :]
        return out[:end] + b"\0" * -delta + out[end:]

    return f


def put(offset: int, fmt: str, value):
    return lambda b: b[:offset] + struct.pack(fmt, value) + b[offset + struct.calcsize(fmt) :]


def cut(n: int):
    return lambda b: b[:n] if n > 0 else b[:n]


def append(extra: bytes):
    return lambda b: b + extra


# NIfTI-2 header: datatype int16 at 12, dim int64[8] at 16, vox_offset int64 at 168 (little-endian)
# MGH header (big-endian): version, width (vertices), height, depth, frames, type at 0…20
# FreeSurfer curv: magic, vertex count, face count, values per vertex (big-endian int32 at 3, 7, 11)
# FreeSurfer surface: magic, two text lines, vertex count, face count (big-endian int32)
SURF_L = rb'(CORTEX_LEFT" SurfaceNumberOfVertices=")32492"'
TARGETED = [
    # (id, base, mutation, must be refused); "small": a 600-grayordinate crop of the shared dtseries (fast)
    ("cifti-nvertices-smaller-than-indices", "dtseries", xml(SURF_L, rb'\g<1>20000"'), True),
    ("cifti-nvertices-negative", "small", xml(SURF_L, rb'\g<1>-5"'), True),
    ("cifti-nvertices-zero", "small", xml(SURF_L, rb'\g<1>0"'), True),
    ("cifti-nvertices-huge", "small", xml(SURF_L, rb'\g<1>9000000000"'), True),
    ("cifti-vertex-index-out-of-range", "small", xml(rb"<VertexIndices>0 ", b"<VertexIndices>99999 "), True),
    ("cifti-vertex-index-negative", "small", xml(rb"<VertexIndices>0 ", b"<VertexIndices>-7 "), True),
    ("cifti-vertex-index-repeated", "small", xml(rb"<VertexIndices>0 1 ", b"<VertexIndices>0 0 "), True),
    ("cifti-vertex-index-missing", "small", xml(rb"<VertexIndices>0 1 ", b"<VertexIndices>1 "), True),
    ("cifti-index-count-short", "small", xml(rb'IndexCount="300"', b'IndexCount="299"'), True),
    ("cifti-index-offset-shifted", "small", xml(rb'IndexOffset="300"', b'IndexOffset="301"'), True),
    ("cifti-series-points", "small", xml(rb'NumberOfSeriesPoints="5"', b'NumberOfSeriesPoints="6"'), True),
    ("cifti-dims-more-grayordinates", "small", put(16 + 6 * 8, "<q", 6000), True),
    ("cifti-dims-fewer-grayordinates", "small", put(16 + 6 * 8, "<q", 500), True),
    ("cifti-dims-7GiB-of-frames", "dtseries", put(16 + 5 * 8, "<q", 30_000), True),
    ("cifti-dims-negative", "small", put(16 + 5 * 8, "<q", -5), True),
    ("cifti-datatype-float64", "small", put(12, "<h", 64), True),
    ("cifti-vox-offset-beyond-file", "small", put(168, "<q", 10**9), True),
    ("cifti-truncated", "small", cut(-100), True),
    ("cifti-tr-zero", "small", xml(rb'SeriesStep="[^"]*"', b'SeriesStep="0"'), True),
    ("cifti-tr-negative", "small", xml(rb'SeriesStep="[^"]*"', b'SeriesStep="-1"'), True),
    ("cifti-tr-nan", "dtseries", xml(rb'SeriesStep="[^"]*"', b'SeriesStep="nan"'), True),
    ("cifti-tr-1e15", "small", xml(rb'SeriesStep="[^"]*"', b'SeriesStep="1e15"'), True),
    ("cifti-tr-unit", "small", xml(rb'SeriesUnit="SECOND"', b'SeriesUnit="HERTZ"'), True),
    ("cifti-xml-cut", "small", xml(rb"</Matrix>", b"</Matrxx>"), True),
    ("gifti-tr-negative", "func", swap(b"<Value>0.000000</Value>", b"<Value>-1.000000</Value>", count=10), True),
    ("gifti-tr-nan", "func", swap(b"<Value>0.000000</Value>", b"<Value>NaN</Value>", count=10), True),
    ("gifti-tr-inf", "func", swap(b"<Value>0.000000</Value>", b"<Value>inf</Value>", count=10), True),
    ("gifti-tr-garbage", "func", swap(b"<Value>0.000000</Value>", b"<Value>1,5</Value>", count=10), True),
    ("gifti-dim-larger", "func", swap(b'Dim0="642"', b'Dim0="6420000"'), True),
    ("gifti-dim-smaller", "func", swap(b'Dim0="642"', b'Dim0="64"'), True),
    ("gifti-dim-negative", "func", swap(b'Dim0="642"', b'Dim0="-642"'), True),
    ("gifti-datatype", "func", swap(b"NIFTI_TYPE_FLOAT32", b"NIFTI_TYPE_FLOAT64"), True),
    ("gifti-truncated", "func", cut(20000), True),
    ("gifti-surf-fewer-vertices", "sphere", swap(b'Dim0="32492"', b'Dim0="30000"'), True),
    ("gifti-surf-dims-swapped", "sphere", swap(b'Dim1="3"', b'Dim1="4"'), True),
    ("curv-fewer-vertices", "curv", put(3, ">i", 40962), True),  # would read as an fsaverage6 map
    ("curv-one-vertex-fewer", "curv", put(3, ">i", 163841), True),
    ("curv-more-vertices", "curv", put(3, ">i", 200000), True),
    ("curv-negative-vertices", "curv", put(3, ">i", -1), True),
    ("curv-values-per-vertex", "curv", put(11, ">i", 3), True),
    ("curv-truncated", "curv", cut(-4), True),
    ("curv-extra-bytes", "curv", append(b"\0" * 400), True),
    ("fs-surf-truncated", "fs_surf", cut(-5000), True),
    ("mgh-fewer-vertices", "mgh", put(4, ">i", 2562), True),  # would read as an fsaverage4 series
    ("mgh-more-frames", "mgh", put(16, ">i", 10**6), True),
    ("mgh-zero-width", "mgh", put(4, ">i", 0), True),
    ("mgh-truncated", "mgh", cut(-40000), True),
    ("mgh-tr-negative", "mgh", lambda b: b[:-20] + struct.pack(">f", -1000.0) + b[-16:], True),
]


def _fs_surf_counts(b: bytes) -> int:
    """Offset of the vertex count in a FreeSurfer triangle file (after the two text lines)."""
    return b.index(b"\n\n", 3) + 2


TARGETED += [
    ("fs-surf-fewer-vertices", "fs_surf", lambda b: put(_fs_surf_counts(b), ">i", 40962)(b), True),
    ("fs-surf-more-faces", "fs_surf", lambda b: put(_fs_surf_counts(b) + 4, ">i", 10**8)(b), True),
]

#: header bytes open to random flips per base (CIFTI: NIfTI-2 header + the XML before the vertex lists)
HEADER_SPAN = {
    "small": (0, 1400),
    "func": (0, 1200),
    "sphere": (0, 1500),
    "curv": (0, 15),
    "fs_surf": (0, 60),
    "mgh": (0, 30),
}
RANDOM = [(base, seed) for base in HEADER_SPAN for seed in range(3)]


@pytest.fixture(scope="module")
def originals(surface_root):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = {k: read_surface(surface_root / f, h) for k, (f, h, _) in BASES.items() if k not in ("mgh", "small")}
        out["small"] = read_surface(_SMALL["path"], "L")
    return out


def _outcome(path, hemi, base_sd):
    """'error' (a neurokit error naming the file) or 'load' (plausible); anything else raises."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sd = read_surface(path, hemi)
    except NeurokitError as exc:
        msg = str(exc)
        assert str(path) in msg, msg
        assert len(msg) < 1500, msg[:300]
        return "error"
    assert (sd.n_vertices, sd.mesh, sd.n_frames) == (base_sd.n_vertices, base_sd.mesh, base_sd.n_frames)
    assert sd.tr is None or 0 < sd.tr <= 100, sd.tr
    if sd.kind == "geometry":
        assert np.isfinite(sd.coords).all() and 0 <= sd.faces.min() and sd.faces.max() < sd.n_vertices
    elif sd.kind != "label":
        assert np.isfinite(sd.data[sd.mask]).all()
    return "load"


@pytest.fixture(scope="module")
def mgh_original(surface_root, tmp_path_factory):
    p = tmp_path_factory.mktemp("mgh") / "orig.lh.mgh"
    p.write_bytes(_raw(surface_root, "mgh"))
    return read_surface(p)


def _write(tmp_path, base, data: bytes):
    p = tmp_path / BASES[base][2]
    p.write_bytes(data)
    return p


@pytest.mark.parametrize("case", TARGETED, ids=[c[0] for c in TARGETED])
def test_targeted_header_damage(case, surface_root, tmp_path, originals, mgh_original):
    name, base, mutate, refused = case
    raw = _raw(surface_root, base)
    mutated = mutate(raw)
    assert mutated != raw, "the mutation changed nothing"
    p = _write(tmp_path, base, mutated)
    got = _outcome(p, BASES[base][1], originals.get(base) or mgh_original)
    if refused:
        assert got == "error", f"{name}: loaded although damaged"


@pytest.mark.parametrize("base,seed", RANDOM)
def test_random_header_flips(base, seed, surface_root, tmp_path, originals, mgh_original):
    raw = bytearray(_raw(surface_root, base))
    rng = np.random.default_rng(1000 * seed + sum(map(ord, base)))
    lo, hi = HEADER_SPAN[base]
    for pos in rng.choice(np.arange(lo, min(hi, len(raw))), size=3, replace=False):
        raw[pos] ^= int(rng.integers(1, 256))
    _outcome(_write(tmp_path, base, bytes(raw)), BASES[base][1], originals.get(base) or mgh_original)
