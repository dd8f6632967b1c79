"""Reading cortical-surface data (CIFTI-2, GIFTI, FreeSurfer) into one typed result, :class:`SurfaceData`.

Formats (all through nibabel; no Connectome Workbench):

- CIFTI-2 dense files ``.dtseries.nii`` / ``.dscalar.nii`` / ``.dlabel.nii``: the brain-model axis is
  parsed and the cortex of one hemisphere (``CIFTI_STRUCTURE_CORTEX_LEFT`` / ``_RIGHT``) is put back on its
  full vertex array (fs_LR 32k: 32,492 vertices); vertices not in the file (the medial wall) are 0 and
  ``mask`` is False there. Subcortical structures are ignored.
- GIFTI ``.func.gii`` / ``.shape.gii`` / ``.label.gii`` (one data array per frame, or one 2-D array) and
  ``.surf.gii`` (geometry: ``coords``/``faces`` filled, no frames).
- FreeSurfer ``.mgh`` / ``.mgz`` surface overlays (``(n_vertices, 1, 1, n_frames)``), curvature-type files
  (``lh.curv``, ``lh.sulc``, ``lh.thickness``) and triangle surfaces (``lh.sphere``, ``lh.sphere.reg``, …),
  told apart by their magic numbers.

The mesh is named from the vertex count (:data:`KNOWN_MESHES`) unless given; data whose count matches no
known mesh are refused, so a file from an unexpected mesh cannot slip through to resampling.

Parcellated files (CIFTI ``.ptseries.nii``, ``.pscalar.nii``, ``.pconn.nii``, …, and plain-text tables of
parcel time series) hold one value per parcel, not per vertex; they are refused with a message naming the
dense files to use instead.

Headers are checked against the file before anything is allocated: the data size a header promises
against the bytes the file holds (CIFTI, MGH/MGZ, FreeSurfer curvature), CIFTI brain models against the
data (vertex counts, vertex indices), triangle indices against the vertex count, and the repetition time
(finite, 0 < TR ≤ :data:`MAX_TR` s). Damaged files raise :class:`~neurokit._utils.errors.DataFileError` naming
the file and the field.
"""

from __future__ import annotations

import logging
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import numpy as np

from neurokit._utils.errors import ConfigError, DataFileError

logger = logging.getLogger("neurokit")

#: Mesh name → vertices per hemisphere. fs_LR 164k and fsaverage share a count; the name picked from
#: a count alone is the first listed here (:data:`_DEFAULT_BY_COUNT`).
KNOWN_MESHES: dict[str, int] = {
    "fs_LR_32k": 32492,
    "fs_LR_59k": 59292,  # HCP 7T at 1.6 mm
    "fsaverage": 163842,
    "fsaverage6": 40962,
    "fsaverage5": 10242,
    "fsaverage4": 2562,
    "fsaverage3": 642,
    "fs_LR_164k": 163842,
    **{f"ico{k}": 10 * 4**k + 2 for k in range(1, 7)},
}
_DEFAULT_BY_COUNT: dict[int, str] = {}
for _name, _n in KNOWN_MESHES.items():
    _DEFAULT_BY_COUNT.setdefault(_n, _name)

_CORTEX = {"L": "CIFTI_STRUCTURE_CORTEX_LEFT", "R": "CIFTI_STRUCTURE_CORTEX_RIGHT"}
_HEMI_ALIASES = {
    "l": "L",
    "lh": "L",
    "left": "L",
    "cortexleft": "L",
    "r": "R",
    "rh": "R",
    "right": "R",
    "cortexright": "R",
}
_FS_GEOMETRY_MAGIC = b"\xff\xff\xfe"
_FS_CURV_MAGIC = b"\xff\xff\xff"

#: Largest repetition time accepted, in seconds (no fMRI sequence comes near it; larger values are damage).
MAX_TR = 100.0
#: Largest vertex count accepted for one hemisphere (fsaverage/fs_LR 164k is 163,842; native meshes ~300k).
MAX_VERTICES = 5_000_000

#: Registered spheres to pass for meshes neurokit does not package (named in error messages).
SPHERE_HINTS = {
    "fs_LR_32k": "S1200.{h}.sphere.32k_fs_LR.surf.gii (HCP S1200 group average) or {h}.sphere.32k_fs_LR.surf.gii "
    "(HCP Pipelines global/templates/standard_mesh_atlases)",
    "fs_LR_59k": "{h}.sphere.59k_fs_LR.surf.gii (HCP Pipelines global/templates/standard_mesh_atlases) or the "
    "subject's MNINonLinear/fsaverage_LR59k/<subject>.{h}.sphere.59k_fs_LR.surf.gii (HCP 7T, 1.6 mm)",
    "fs_LR_164k": "fsaverage.{h}_LR.spherical_std.164k_fs_LR.surf.gii (HCP Pipelines standard_mesh_atlases)",
}

#: CIFTI-2 file kinds that hold parcels (or dense connectomes) rather than dense vertex data.
_CIFTI_OTHER = {
    ".ptseries.": "parcellated time series",
    ".pscalar.": "parcellated scalar maps",
    ".plabel.": "parcellated labels",
    ".pconn.": "parcel-to-parcel connectivity",
    ".pconnseries.": "parcellated connectivity series",
    ".pconnscalar.": "parcellated connectivity maps",
    ".pdconn.": "parcel-to-dense connectivity",
    ".dpconn.": "dense-to-parcel connectivity",
    ".dconn.": "dense connectivity matrix",
    ".dfan.": "dense fibre orientations",
    ".fiberTEMP.": "fibre data",
}
_TEXT_SUFFIXES = (".txt", ".csv", ".tsv", ".1d", ".dat")
_DENSE_INSTEAD = (
    "neurokit reads vertex-wise (dense) surface data: CIFTI-2 .dtseries.nii / .dscalar.nii / .dlabel.nii, "
    "GIFTI .func.gii / .shape.gii / .label.gii, FreeSurfer .mgh/.mgz or curvature files; give the dense "
    "file the parcels were computed from (HCP: *_Atlas_MSMAll*.dtseries.nii)"
)


@dataclass
class SurfaceData:
    """Data of one hemisphere on one surface mesh.

    Attributes
    ----------
    data : ndarray, shape (n_vertices, n_frames), float32
        Time series (``kind="series"``), maps (``"scalar"``) or integer label keys (``"label"``); 0 outside
        ``mask``. Geometry files have ``n_frames = 0``.
    hemi : {"L", "R"} or None
        None only when neither the file nor its name says.
    mesh : str
        Mesh name (a key of :data:`KNOWN_MESHES`, or the one given to :func:`read_surface`).
    mask : ndarray, shape (n_vertices,), bool
        Cortex mask: True where the file has cortical data (CIFTI brain models; elsewhere vertices that
        are not 0 in every frame, or all vertices for single maps).
    tr : float or None
        Repetition time in seconds (series only).
    kind : {"series", "scalar", "label", "geometry"}
    path : Path
        Source file.
    frame_names : list of str
        Map names (CIFTI dscalar/dlabel, GIFTI array names); empty when the file has none.
    label_tables : list of dict of int to str
        One label table (key → name) per map of a label file, in map order (CIFTI-2 allows a different table
        for every map; GIFTI has one table, repeated); empty for other kinds.
    coords, faces : ndarray or None
        ``(n_vertices, 3)`` float64 mm and ``(n_faces, 3)`` int64 for geometry files.
    geometric_type : str or None
        GIFTI ``GeometricType`` of a geometry file (``Spherical``, ``Inflated``, ``Anatomical`` …) when given.
    """

    data: np.ndarray
    hemi: str | None
    mesh: str
    mask: np.ndarray
    tr: float | None = None
    kind: str = "series"
    path: Path | None = None
    frame_names: list[str] = field(default_factory=list)
    label_tables: list[dict[int, str]] = field(default_factory=list)
    coords: np.ndarray | None = None
    faces: np.ndarray | None = None
    geometric_type: str | None = None

    @property
    def label_table(self) -> dict[int, str]:
        """The first map's label table (the only one of single-map files); ``label_tables[i]`` for map ``i``."""
        return self.label_tables[0] if self.label_tables else {}

    @property
    def n_vertices(self) -> int:
        return int(self.data.shape[0])

    @property
    def n_frames(self) -> int:
        return int(self.data.shape[1])

    def __repr__(self) -> str:
        tr = f", tr={self.tr:g} s" if self.tr and np.isfinite(self.tr) else ""
        return (
            f"SurfaceData(hemi={self.hemi!r}, mesh={self.mesh!r}, n_vertices={self.n_vertices}, "
            f"n_frames={self.n_frames}, kind={self.kind!r}{tr}, cortex={int(self.mask.sum())})"
        )


def normalize_hemi(hemi: str) -> str:
    """``"lh"``, ``"left"``, ``"L"``, ``"CortexLeft"`` … → ``"L"`` (``"R"`` likewise).

    Parameters
    ----------
    hemi : str
        A hemisphere's name in any accepted spelling.

    Returns
    -------
    str
        ``"L"`` or ``"R"``.

    Examples
    --------
    >>> normalize_hemi("lh"), normalize_hemi("CortexRight")
    ('L', 'R')

    Raises
    ------
    ConfigError
        Anything else; the message lists the accepted spellings.
    """
    key = str(hemi).strip().lower().replace("_", "")
    if key not in _HEMI_ALIASES:
        raise ConfigError(f"hemisphere {hemi!r}: expected one of 'L', 'R', 'lh', 'rh', 'left', 'right'")
    return _HEMI_ALIASES[key]


def hemi_from_name(path: str | Path) -> str | None:
    """Hemisphere named in a file name (``lh.``, ``.L.``, ``hemi-R``, ``_left``), or None.

    Parameters
    ----------
    path : str or Path
        A file name or path (only the name is read).

    Returns
    -------
    str or None
        ``"L"``, ``"R"`` or ``None``.

    Examples
    --------
    >>> hemi_from_name("lh.thickness.mgh"), hemi_from_name("sub-01_hemi-R_bold.func.gii"), hemi_from_name("x.nii")
    ('L', 'R', None)
    """
    name = Path(path).name
    m = re.search(r"hemi-([LR])", name)
    if m:
        return m.group(1)
    for tok in re.split(r"[._\-]", name):
        if tok in ("lh", "L", "left", "Left", "LEFT"):
            return "L"
        if tok in ("rh", "R", "right", "Right", "RIGHT"):
            return "R"
    return None


def _mesh_for(n: int, mesh: str | None, path: Path, *, strict: bool = True) -> str:
    if mesh is not None:
        expected = KNOWN_MESHES.get(mesh)
        if expected is not None and expected != n:
            raise DataFileError(f"{path}: {n} vertices, but mesh {mesh!r} has {expected}")
        return mesh
    m = re.search(r"(?<![a-z])ico-?(\d)(?!\d)", Path(path).name.lower())
    if m and KNOWN_MESHES.get(f"ico{m.group(1)}") == n:  # metrics-lab ico-6.L.surf.gii: an icosphere, not fsaverage6
        return f"ico{m.group(1)}"
    if n in _DEFAULT_BY_COUNT:
        return _DEFAULT_BY_COUNT[n]
    if not strict:
        return f"mesh{n}"
    known = ", ".join(f"{k} {v}" for k, v in KNOWN_MESHES.items())
    raise DataFileError(
        f"{path}: {n} vertices match no known surface mesh (known: {known}); if the data are on a mesh of your "
        "own, name it and give its registered spheres: mesh=<name> with sphere(s) (CLI: --mesh NAME "
        "--sphere-l L_SPHERE --sphere-r R_SPHERE)"
    )


def _check_finite(data: np.ndarray, mask: np.ndarray, path: Path) -> None:
    bad = ~np.isfinite(data[mask]).all(axis=0)
    if bad.any():
        frames = np.flatnonzero(bad)
        shown = ", ".join(map(str, frames[:10])) + (" …" if len(frames) > 10 else "")
        n_bad = int((~np.isfinite(data[mask])).sum())
        raise DataFileError(
            f"{path}: {len(frames)} of {data.shape[1]} frames hold NaN/inf on cortex ({n_bad} values; "
            f"frames {shown}); fix the file, read it anyway with allow_nan=True (Python), or leave it out (CLI: neuro prepare --skip-bad)"
        )


def _nan_medial_wall(sd: SurfaceData) -> None:
    """Vertices NaN/inf in every frame are medial wall (FreeSurfer/HCP exports): out of the mask, set to 0."""
    never = ~np.isfinite(sd.data).any(axis=1) & sd.mask
    if never.any() and not never.all():
        sd.mask = sd.mask & ~never
        sd.data[never] = 0.0
        logger.info(
            "%s: %d vertices are NaN/inf in every frame; taken as medial wall (outside the cortex mask)",
            sd.path,
            int(never.sum()),
        )


def read_surface(
    path: str | Path,
    hemi: str | None = None,
    *,
    mesh: str | None = None,
    allow_nan: bool = False,
    verbose: bool | None = None,
) -> SurfaceData:
    """Read one hemisphere of surface data.

    Parameters
    ----------
    path : str | Path
        CIFTI-2 (``.dtseries.nii``, ``.dscalar.nii``, ``.dlabel.nii``), GIFTI (``.gii``, ``.gii.gz``,
        ``.gii.bz2``: frames from its time-series, shape, statistic or float arrays only; label, vector and
        other arrays are ignored with a warning, a mesh in the same file is kept in ``coords``/``faces``),
        FreeSurfer (``.mgh``, ``.mgz`` with any footer of tags, ``.annot`` read as a label map, curvature or
        triangle surface files). A FreeSurfer ``.label`` file, text tables and EEG recordings are refused,
        naming what they are.
    hemi : {"L", "R"} (or "lh", "left", …), optional
        Which hemisphere. Required for CIFTI files holding both; otherwise checked against the file's
        metadata or name when given, inferred from them when not.
    mesh : str, optional
        Mesh name; default: inferred from the vertex count (:data:`KNOWN_MESHES`).
    allow_nan : bool
        Accept frames with NaN/inf values on cortex (default: raise).
    verbose : bool, optional
        Log what was read at INFO level.

    Returns
    -------
    SurfaceData
        ``data`` ``(n_vertices, n_frames)`` float32 on the full hemisphere mesh.

    Raises
    ------
    FileNotFoundError
        No such file.
    DataFileError
        Unreadable or unsupported file; a CIFTI without cortex for ``hemi``; a vertex count that matches no
        known mesh (or not ``mesh``); NaN/inf frames; a hemisphere that contradicts ``hemi``.
    ConfigError
        ``hemi`` misspelt, or missing for a CIFTI file with both hemispheres.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file")
    want = normalize_hemi(hemi) if hemi is not None else None
    name = path.name.lower()
    _refuse_eeg(path)
    if name.endswith(".label"):
        _refuse_fs_label(path)
    _refuse_not_dense(path)
    if name.endswith(".nii") and any(s in name for s in (".dtseries.", ".dscalar.", ".dlabel.")):
        out = _read_cifti(path, want, mesh)
    elif name.endswith((".gii", ".gii.gz", ".gii.bz2")):
        out = _read_gifti(path, want, mesh)
    elif name.endswith(".annot"):
        out = _read_annot(path, want, mesh)
    elif name.endswith((".mgh", ".mgz")):
        out = _read_mgh(path, want, mesh)
    else:
        out = _read_freesurfer(path, want, mesh)
    if out.kind != "label" and out.n_frames:
        _nan_medial_wall(out)
        if not allow_nan:
            _check_finite(out.data, out.mask, path)
    if verbose:
        logger.info("read %s: %r", path, out)
    return out


def read_geometry(surface, hemi: str | None = None) -> SurfaceData:
    """A surface geometry (vertices and triangles) from a file or a nilearn mesh object.

    Parameters
    ----------
    surface : path, SurfaceData, or nilearn mesh
        A ``.surf.gii`` / FreeSurfer triangle file (as :func:`read_surface`); a :class:`SurfaceData` of kind
        ``"geometry"``; a nilearn ``InMemoryMesh`` / ``SurfaceMesh`` (no hemisphere), ``FileMesh`` (read from
        its file, metadata included) or ``PolyMesh`` (its ``left``/``right`` part: the part of ``hemi``, or its
        only part; the part's name is its hemisphere).
    hemi : {"L", "R"}, optional
        Which part of a two-part ``PolyMesh`` to take. A ``PolyMesh`` without that part gives its other part,
        marked with its hemisphere, so callers refuse it as they refuse a file of the wrong hemisphere.

    Returns
    -------
    SurfaceData
        ``kind="geometry"``: ``coords`` ``(n_vertices, 3)`` float64, ``faces`` ``(n_faces, 3)`` int64, ``hemi``.

    Raises
    ------
    DataFileError
        Not a geometry (a data file, or an object without vertices and triangles); damaged triangles.
    ConfigError
        A two-part ``PolyMesh`` without ``hemi``.
    """
    if isinstance(surface, SurfaceData):
        sd = surface
    elif isinstance(surface, (str, Path)):
        sd = read_surface(surface)
    else:
        sd = _mesh_object(surface, normalize_hemi(hemi) if hemi else None)
    if sd.coords is None or sd.faces is None:  # a mesh with data arrays (a GIFTI of both) is a geometry too
        raise DataFileError(
            f"{sd.path}: not a surface geometry file (kind {sd.kind!r}); a surface needs vertices and faces"
        )
    return sd


def _mesh_object(mesh, hemi: str | None) -> SurfaceData:
    parts = getattr(mesh, "parts", None)
    if isinstance(parts, dict):  # nilearn PolyMesh: {"left": mesh, "right": mesh}
        named = {normalize_hemi(k): v for k, v in parts.items() if v is not None}
        if not named:
            raise DataFileError(f"nilearn {type(mesh).__name__} without any part")
        if hemi is None and len(named) > 1:
            raise ConfigError(f"nilearn {type(mesh).__name__} with parts {sorted(parts)}: pass hemi='L' or hemi='R'")
        h = hemi if hemi in named else next(iter(named))
        sd = _mesh_object(named[h], None)
        sd.hemi = h
        sd.path = Path(f"nilearn {type(mesh).__name__} part {'left' if h == 'L' else 'right'}")
        return sd
    file_path = getattr(mesh, "file_path", None)
    if file_path is not None:  # nilearn FileMesh: the file, with its metadata
        return read_surface(file_path)
    coords, faces = getattr(mesh, "coordinates", None), getattr(mesh, "faces", None)
    if coords is None or faces is None:
        raise DataFileError(
            f"a {type(mesh).__name__} is not a surface: give a path to a .surf.gii / FreeSurfer surface file or a "
            "nilearn mesh (InMemoryMesh, FileMesh, PolyMesh)"
        )
    coords, faces = np.asarray(coords, np.float64), np.asarray(faces, np.int64)
    name = Path(f"nilearn {type(mesh).__name__} ({len(coords)} vertices)")
    _check_geometry(coords, faces, name)
    n = len(coords)
    return SurfaceData(
        data=np.zeros((n, 0), np.float32),
        hemi=None,
        mesh=_mesh_for(n, None, name, strict=False),
        mask=np.ones(n, bool),
        kind="geometry",
        path=name,
        coords=coords,
        faces=faces,
    )


def _resolve_hemi(found: str | None, want: str | None, path: Path) -> str | None:
    if found is not None and want is not None and found != want:
        raise DataFileError(f"{path}: the file is hemisphere {found}, but hemi={want!r} was asked for")
    return want or found


def read_cifti_hemispheres(path: str | Path, **kwargs) -> dict[str, SurfaceData]:
    """Both cortical hemispheres of a CIFTI-2 file: ``{"L": SurfaceData, "R": SurfaceData}`` (those present).

    ``kwargs``: ``mesh`` and ``allow_nan`` as in :func:`read_surface`.

    Parameters
    ----------
    path : str or Path
        A dense CIFTI-2 file (``.dtseries.nii``, ``.dscalar.nii``, ``.dlabel.nii``).
    **kwargs
        ``mesh`` (str) and ``allow_nan`` (bool), as in :func:`read_surface`.

    Returns
    -------
    dict of str to SurfaceData
        ``data`` ``(n_vertices, n_frames)`` float32 per hemisphere on its full mesh.

    Raises
    ------
    DataFileError
        The file holds no cortex at all.
    """
    return dict(iter_cifti_hemispheres(path, **kwargs))


def iter_cifti_hemispheres(path: str | Path, **kwargs):
    """Yield ``(hemi, SurfaceData)`` for each cortical hemisphere of a CIFTI-2 file, reading one hemisphere's
    data per step (the header is parsed once), so a caller that drops each before the next holds one
    hemisphere at a time. Arguments and errors as :func:`read_cifti_hemispheres`.

    Parameters
    ----------
    path : str or Path
        A dense CIFTI-2 file.
    **kwargs
        ``mesh`` (str) and ``allow_nan`` (bool), as in :func:`read_surface`.

    Yields
    ------
    hemi : str
        ``"L"`` or ``"R"``.
    data : SurfaceData
        That hemisphere, ``(n_vertices, n_frames)`` float32.

    Raises
    ------
    FileNotFoundError
        No such file.
    DataFileError
        No cortex in the file, or as :func:`read_surface`.
    """

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file")
    _refuse_not_dense(path)
    img = _load_cifti(path)
    parsed = _parse_cifti(img, path)  # header parsed once for both hemispheres
    structures = list(parsed[2])
    hemis = [h for h, s in _CORTEX.items() if s in structures]
    if not hemis:
        raise DataFileError(f"{path}: no cortical surface in this CIFTI file (structures: {', '.join(structures)})")
    for h in hemis:
        sd = _read_cifti(path, h, kwargs.get("mesh"), img=img, parsed=parsed)
        _nan_medial_wall(sd)
        if not kwargs.get("allow_nan", False):
            _check_finite(sd.data, sd.mask, path)
        yield h, sd
        del sd  # before the next hemisphere is read


def _short(exc: BaseException, n: int = 200) -> str:
    msg = f"{type(exc).__name__}: {exc}"
    return msg if len(msg) <= n else msg[:n] + " …"


def _refuse_not_dense(path: Path) -> None:
    """Parcellated CIFTI, dense connectomes and plain-text tables: say what they are and what to give instead."""
    name = path.name.lower()
    for suffix, what in _CIFTI_OTHER.items():
        if suffix.lower() in name and name.endswith((".nii", ".nii.gz")):
            parcels = (
                "parcellated: one value per parcel, not per vertex"
                if suffix.startswith(".p") or "parcel" in what
                else "not a vertex-wise data file"
            )
            raise DataFileError(f"{path}: a CIFTI-2 {what} file ({suffix.strip('.')}), {parcels}; {_DENSE_INSTEAD}")
    if name.endswith(_TEXT_SUFFIXES) or _looks_like_text(path):
        rows, cols = _text_shape(path)
        shape = f" ({rows} rows × {cols} columns)" if rows else ""
        if rows in _TWO_HEMI_ROWS:
            raise DataFileError(
                f"{path}: a plain-text table{shape}, one row per vertex of {_TWO_HEMI_ROWS[rows]}: per-vertex data, not "
                "parcellated, but neurokit reads surface data from CIFTI-2, GIFTI or FreeSurfer files, not text; save "
                "the rows as a CIFTI-2 .dtseries.nii, or each hemisphere's rows as a GIFTI (.func.gii) on that mesh"
            )
        if rows in _DEFAULT_BY_COUNT:
            raise DataFileError(
                f"{path}: a plain-text table{shape}, one row per vertex of {_DEFAULT_BY_COUNT[rows]}: neurokit reads "
                "surface data from CIFTI-2, GIFTI or FreeSurfer files, not text; save the columns as a GIFTI "
                "(.func.gii / .shape.gii, e.g. with nibabel) on that mesh"
            )
        raise DataFileError(
            f"{path}: a plain-text table{shape}, not a surface file: parcellated time series "
            f"or parcel/label lists hold one value per parcel, not per vertex; {_DENSE_INSTEAD}"
        )


#: Suffixes of EEG recordings (MNE's readers), refused by :func:`read_surface` by name
_EEG_SUFFIXES = (".edf", ".bdf", ".gdf", ".vhdr", ".vmrk", ".set", ".fdt", ".fif", ".fif.gz", ".cnt", ".rec")


def _refuse_eeg(path: Path) -> None:
    """An EEG recording given as surface data (by its suffix, or an EDF/BDF header under any name)."""
    name = path.name.lower()
    with open(path, "rb") as fh:
        head = fh.read(256)
    edf = False
    if len(head) == 256 and head[:8] in (b"0       ", b"\xffBIOSEMI"):  # the EDF/BDF version field
        try:
            ns, nbytes = int(head[252:256]), int(head[184:192])
            edf = ns > 0 and nbytes == 256 * (ns + 1)
        except ValueError:
            edf = False
    if edf or name.endswith(_EEG_SUFFIXES):
        what = "an EDF/BDF EEG recording" if edf else f"an EEG recording ({name.rsplit('.', 1)[-1]})"
        raise DataFileError(
            f"{path}: {what}, not cortical-surface data; read it with neurokit.read_eeg, or prepare "
            "it with an EEG card (neuro prepare eeg_folder --data-root …)"
        )


def _refuse_fs_label(path: Path) -> None:
    """A FreeSurfer ``.label`` file: the vertices of one region, not a value per vertex."""
    try:
        with open(path, "r", errors="replace") as fh:
            first, count = fh.readline(), fh.readline().strip()
    except OSError:
        return
    if first.startswith("#") or count.isdigit():
        n = f" ({int(count):,} vertices)" if count.isdigit() else ""
        raise DataFileError(
            f"{path}: a FreeSurfer label file: the vertex list of one region{n}, not a value per vertex. Make a mask "
            "from it (nibabel.freesurfer.read_label) or give the parcellation it comes from (.annot, .label.gii, "
            ".dlabel.nii)"
        )


def _read_annot(path: Path, want: str | None, mesh: str | None) -> SurfaceData:
    """A FreeSurfer annotation (``lh.aparc.annot``): one parcel key per vertex and its colour table, read by
    :func:`nibabel.freesurfer.read_annot` as a label map (keys: the table's indices, -1: no parcel)."""
    from nibabel.freesurfer import read_annot

    try:
        labels, _, names = read_annot(str(path))
    except (MemoryError, Exception) as exc:  # noqa: BLE001
        raise DataFileError(f"{path}: cannot read as a FreeSurfer annotation (.annot) ({_short(exc)})") from exc
    labels = np.asarray(labels)
    n = len(labels)
    table = {i: (nm.decode() if isinstance(nm, bytes) else str(nm)) for i, nm in enumerate(names)}
    if (labels < 0).any():
        table[-1] = "unknown"
    return SurfaceData(
        data=labels.astype(np.float32)[:, None],
        hemi=_resolve_hemi(hemi_from_name(path), want, path),
        mesh=_mesh_for(n, mesh, path),
        mask=labels >= 0,
        kind="label",
        path=path,
        frame_names=[path.name],
        label_tables=[table],
    )


#: Row counts of per-vertex tables that hold more than one hemisphere: both hemispheres of a known mesh (fs_LR
#: 32k: 2 × 32,492 = 64,984), HCP fs_LR 32k cortex without the medial wall (29,696 + 29,716) and all 91,282
#: grayordinates (cortex + subcortical voxels)
_TWO_HEMI_ROWS = {
    **{2 * n: f"both hemispheres of {m} (2 × {n:,})" for n, m in _DEFAULT_BY_COUNT.items()},
    59412: "the fs_LR 32k cortex of both hemispheres without the medial wall (HCP grayordinates)",
    91282: "the 91,282 HCP grayordinates (fs_LR 32k cortex + subcortical voxels)",
}


def _looks_like_text(path: Path) -> bool:
    with open(path, "rb") as fh:
        head = fh.read(4096)
    if not head or b"\0" in head or head.lstrip().startswith(b"<"):  # binary formats, or GIFTI XML
        return False
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 3:  # not merely a character cut at the end of the block
            return False
        text = head[: exc.start].decode("utf-8")
    return all(c.isprintable() or c.isspace() for c in text)


def _text_shape(path: Path) -> tuple[int, int]:
    """Rows (non-empty, not ``#`` comments) and columns of the first row of a text table; (0, 0) if unreadable."""
    try:
        with open(path, "r", errors="replace") as fh:
            first = next((ln for ln in fh if ln.strip() and not ln.lstrip().startswith("#")), "")
            rows = (1 + sum(1 for ln in fh if ln.strip() and not ln.lstrip().startswith("#"))) if first else 0
        cols = len(re.split(r"[\s,;]+", first.strip())) if first else 0
        return rows, cols
    except OSError:
        return 0, 0


def _load_cifti(path: Path):
    import nibabel as nib

    try:
        return nib.load(path)
    except Exception as exc:  # noqa: BLE001 - nibabel raises many kinds on malformed headers
        raise DataFileError(f"{path}: cannot read as CIFTI-2 ({_short(exc)})") from exc


def _brain_models(img, path: Path):
    """The brain-model axis of a dense CIFTI-2 file (parcellated files refused with what to use instead)."""
    from nibabel import cifti2

    try:
        bm = img.header.get_axis(1)
    except Exception as exc:  # noqa: BLE001
        raise DataFileError(f"{path}: not a dense CIFTI-2 file with a brain-model axis ({_short(exc)})") from exc
    if isinstance(bm, cifti2.ParcelsAxis):
        raise DataFileError(
            f"{path}: a parcellated CIFTI-2 file (its columns are {len(bm)} parcels, not vertices); {_DENSE_INSTEAD}"
        )
    if not isinstance(bm, cifti2.BrainModelAxis):
        raise DataFileError(f"{path}: the second axis is {type(bm).__name__}, expected brain models (dense file)")
    return bm


def _structure_slices(bm, path: Path) -> dict[str, slice]:
    """Brain structure → its (contiguous) columns, from the brain-model names (faster than iter_structures,
    which builds a sub-axis per structure)."""
    names = np.asarray(bm.name).astype(str)
    if not len(names):
        return {}
    starts = np.flatnonzero(np.r_[True, names[1:] != names[:-1]])
    stops = np.r_[starts[1:], len(names)]
    out: dict[str, slice] = {}
    for a, b in zip(starts, stops):
        if names[a] in out:
            raise DataFileError(f"{path}: brain structure {names[a]} in more than one block: a damaged header")
        out[names[a]] = slice(int(a), int(b))
    return out


def _parse_cifti(img, path: Path):
    """``(row axis, brain-model axis, {structure: columns})`` of a dense CIFTI-2 file, checked against the data."""
    try:
        ax0 = img.header.get_axis(0)
    except Exception as exc:  # noqa: BLE001
        raise DataFileError(f"{path}: cannot read as CIFTI-2 ({_short(exc)})") from exc
    bm = _brain_models(img, path)
    _check_cifti_layout(img, ax0, bm, path)
    return ax0, bm, _structure_slices(bm, path)


def _check_cifti_layout(img, ax0, bm, path: Path) -> None:
    """Header against data before any read: axis lengths vs the data dims, and those dims vs the file's bytes."""
    proxy = img.dataobj
    shape = tuple(int(d) for d in proxy.shape)
    if len(shape) != 2 or min(shape) < 1:
        raise DataFileError(
            f"{path}: data dims {shape} in the NIfTI-2 header, expected (maps or frames, grayordinates)"
        )
    if (len(ax0), len(bm)) != shape:
        raise DataFileError(
            f"{path}: the CIFTI header maps {len(ax0)} × {len(bm)} (rows × grayordinates) but the data dims are "
            f"{shape[0]} × {shape[1]}: a damaged header"
        )
    need = int(proxy.offset) + shape[0] * shape[1] * np.dtype(proxy.dtype).itemsize
    size = path.stat().st_size
    if need > size:
        raise DataFileError(
            f"{path}: truncated file or damaged header: the header promises {shape[0]} × {shape[1]} "
            f"{np.dtype(proxy.dtype).name} values ({need:,} bytes with the header) but the file holds {size:,} bytes; "
            "copy or download it again"
        )


def _check_cortex(name: str, slc: slice, bm, path: Path) -> tuple[int, np.ndarray]:
    """A cortex brain model's vertex count and indices, checked against each other and the data."""
    n_vert = int(bm.nvertices.get(name, -1))
    vert = np.asarray(bm.vertex[slc], dtype=np.int64)
    n_cols = slc.stop - slc.start
    if not 0 < n_vert <= MAX_VERTICES:
        raise DataFileError(
            f"{path}: {name} has SurfaceNumberOfVertices {n_vert}, expected 1…{MAX_VERTICES:,}: a damaged header"
        )
    if len(vert) != n_cols:
        raise DataFileError(
            f"{path}: {name} lists {len(vert)} vertex indices for {n_cols} data columns: a damaged header"
        )
    if len(vert) and (vert.min() < 0 or vert.max() >= n_vert):
        raise DataFileError(
            f"{path}: {name} has vertex indices {int(vert.min())}…{int(vert.max())} outside its "
            f"SurfaceNumberOfVertices {n_vert} (0…{n_vert - 1}): a damaged header"
        )
    if len(np.unique(vert)) != len(vert):
        raise DataFileError(
            f"{path}: {name} lists {len(vert) - len(np.unique(vert))} vertex indices twice: a damaged header"
        )
    return n_vert, vert


def check_tr(tr: float, path, field: str) -> float:
    """A repetition time in seconds, refused unless finite and 0 < TR ≤ :data:`MAX_TR`.

    Parameters
    ----------
    tr : float
        The value read (s).
    path : str or Path
        The file, named in the message.
    field : str
        The header field it was read from, named in the message.

    Returns
    -------
    float
        ``tr`` as a float.

    Examples
    --------
    >>> check_tr(0.72, "a.dtseries.nii", "SeriesStep")
    0.72

    Raises
    ------
    DataFileError
        Names the file, the header field and the value.
    """
    tr = float(tr)
    if not (np.isfinite(tr) and 0 < tr <= MAX_TR):
        raise DataFileError(
            f"{path}: {field} gives a TR of {tr:g} s, expected a finite value in (0, {MAX_TR:g}] s: "
            "a damaged header; fix the file's TR"
        )
    return tr


def _read_cifti(path: Path, want: str | None, mesh: str | None, img=None, parsed=None) -> SurfaceData:
    from nibabel import cifti2

    img = img if img is not None else _load_cifti(path)
    ax0, bm, structures = parsed if parsed is not None else _parse_cifti(img, path)
    present = [h for h, s in _CORTEX.items() if s in structures]
    if not present:
        raise DataFileError(
            f"{path}: no cortical surface in this CIFTI file (expected {_CORTEX['L']} or {_CORTEX['R']}; "
            f"found {', '.join(structures) or 'nothing'})"
        )
    if want is None:
        if len(present) > 1:
            raise ConfigError(
                f"{path}: holds both hemispheres; pass hemi='L' or hemi='R' (or use read_cifti_hemispheres)"
            )
        want = present[0]
    if want not in present:
        raise DataFileError(f"{path}: no {_CORTEX[want]} in this CIFTI file (found {', '.join(structures)})")
    slc = structures[_CORTEX[want]]
    n_vert, vert = _check_cortex(_CORTEX[want], slc, bm, path)
    kind, tr, names, tables = "scalar", None, [], []
    if isinstance(ax0, cifti2.SeriesAxis):
        kind = "series"
        scale = {"SECOND": 1.0}.get(str(ax0.unit).upper())
        if scale is None:
            raise DataFileError(f"{path}: series axis in {ax0.unit}, expected SECOND")
        tr = check_tr(float(ax0.step) * scale, path, "the series axis (SeriesStep)")
    elif isinstance(ax0, cifti2.LabelAxis):
        kind = "label"
        names = [str(n) for n in ax0.name]
        names = names if any(n not in ("", "None") for n in names) else []
        # one table per map: CIFTI-2 lets every map of a dlabel file have its own
        tables = [{int(k): str(v[0]) for k, v in lab.items()} for lab in ax0.label]
    elif isinstance(ax0, cifti2.ScalarAxis):
        names = [str(n) for n in ax0.name]
    mesh_name = _mesh_for(n_vert, mesh, path)
    try:
        block = np.asarray(img.dataobj[:, slc], dtype=np.float32)  # (n_frames, n_cortex)
    except (MemoryError, Exception) as exc:  # noqa: BLE001 - sizes were checked; anything left is damage
        raise DataFileError(f"{path}: cannot read the CIFTI data ({_short(exc)}); copy or download it again") from exc
    data = np.zeros((n_vert, block.shape[0]), dtype=np.float32)
    data[vert] = block.T
    mask = np.zeros(n_vert, dtype=bool)
    mask[vert] = True
    return SurfaceData(
        data=data,
        hemi=want,
        mesh=mesh_name,
        mask=mask,
        tr=tr,
        kind=kind,
        path=path,
        frame_names=names,
        label_tables=tables,
    )


def _mask_from_data(data: np.ndarray) -> np.ndarray:
    if data.shape[1] < 2:
        return np.ones(data.shape[0], dtype=bool)
    return ~(data == 0).all(axis=1)


def _read_gifti(path: Path, want: str | None, mesh: str | None) -> SurfaceData:
    import nibabel as nib
    from nibabel.nifti1 import intent_codes

    try:
        img = nib.load(path)
    except (MemoryError, Exception) as exc:  # noqa: BLE001 - damaged XML, dims the data do not fill, …
        raise DataFileError(f"{path}: cannot read as GIFTI ({_short(exc)})") from exc
    if not isinstance(img, nib.gifti.GiftiImage):
        raise DataFileError(f"{path}: not a GIFTI file (nibabel reads it as {type(img).__name__})")
    if not img.darrays:
        raise DataFileError(f"{path}: GIFTI file without data arrays")
    for i, d in enumerate(img.darrays):
        dims = tuple(int(x) for x in d.dims)
        if not dims or min(dims) < 1 or np.shape(d.data) != dims:
            raise DataFileError(
                f"{path}: data array {i} has Dim {dims} but holds an array of shape {np.shape(d.data)}: "
                "a damaged header"
            )
    intents = [str(intent_codes.niistring[d.intent]) for d in img.darrays]
    meta = {}
    for d in [img, *img.darrays]:
        meta.update({k: v for k, v in d.meta.items()})
    found = None
    if "AnatomicalStructurePrimary" in meta:
        try:
            found = normalize_hemi(meta["AnatomicalStructurePrimary"])
        except ConfigError:
            found = None
    named = hemi_from_name(path)
    if found and named and found != named:
        warnings.warn(
            f"{path}: the file name says hemisphere {named} but its AnatomicalStructurePrimary metadata says "
            f"{meta['AnatomicalStructurePrimary']} ({found}); using the metadata ({found}). Rename the file if "
            "the metadata are right, or fix the metadata",
            RuntimeWarning,
            stacklevel=3,
        )
    hemi = _resolve_hemi(found or named, want, path)
    role = [_gifti_role(intent, d) for intent, d in zip(intents, img.darrays)]
    coords = faces = None
    if "NIFTI_INTENT_POINTSET" in intents:
        coords = np.asarray(img.darrays[intents.index("NIFTI_INTENT_POINTSET")].data, dtype=np.float64)
        if "NIFTI_INTENT_TRIANGLE" in intents:
            faces = np.asarray(img.darrays[intents.index("NIFTI_INTENT_TRIANGLE")].data, dtype=np.int64)
        _check_geometry(coords, faces, path)
    take = "data" if "data" in role else "label" if "label" in role else None
    if take is None and coords is not None:
        n = len(coords)
        return SurfaceData(
            data=np.zeros((n, 0), np.float32),
            hemi=hemi,
            mesh=_mesh_for(n, mesh, path, strict=False),
            mask=np.ones(n, bool),
            kind="geometry",
            path=path,
            coords=coords,
            faces=faces,
            geometric_type=meta.get("GeometricType") or None,
        )
    if take is None:
        raise DataFileError(
            f"{path}: GIFTI file without a data array of a time-series, shape, statistic or label "
            f"intent (its arrays: {_intent_list(intents, range(len(intents)))}); nothing to read as "
            "frames"
        )
    chosen = [i for i, r in enumerate(role) if r == take]
    left = [i for i in range(len(role)) if i not in chosen and role[i] != "geometry"]
    if left:  # a label array is no frame, a vector's first column no value per vertex
        warnings.warn(
            f"{path}: data arrays {_intent_list(intents, left)} are not {take} arrays and are ignored; "
            f"the {len(chosen)} {'frames' if take == 'data' else 'label maps'} come from "
            f"{_intent_list(intents, chosen)}",
            RuntimeWarning,
            stacklevel=3,
        )
    arrays = [np.asarray(img.darrays[i].data) for i in chosen]
    if any(a.ndim == 0 or a.size == 0 for a in arrays):
        raise DataFileError(f"{path}: GIFTI data array without values (dims {[a.shape for a in arrays]})")
    if len(arrays) == 1 and arrays[0].ndim == 2 and arrays[0].shape[1] > 1:
        data = arrays[0].astype(np.float32)
    else:
        shapes = {a.shape[0] for a in arrays}
        if len(shapes) != 1:
            raise DataFileError(f"{path}: data arrays of different lengths {sorted(shapes)}")
        wide = [i for i, a in zip(chosen, arrays) if a.ndim > 1 and a.shape[1] > 1]
        if wide:
            raise DataFileError(
                f"{path}: data arrays {_intent_list(intents, wide)} hold several columns beside "
                "other arrays; save one array per frame, or one (n_vertices, n_frames) array"
            )
        data = np.stack([a.reshape(a.shape[0]) for a in arrays], axis=1).astype(np.float32)
    if coords is not None and len(coords) != data.shape[0]:
        raise DataFileError(f"{path}: {len(coords):,} vertices in its mesh but {data.shape[0]:,} values per data array")
    picked = [intents[i] for i in chosen]
    kind = "label" if take == "label" else "series" if "NIFTI_INTENT_TIME_SERIES" in picked else "scalar"
    tr = _gifti_tr(meta.get("TimeStep"), path) if kind == "series" else None
    tables = []
    if kind == "label" and img.labeltable is not None:
        tables = [{int(lb.key): str(lb.label) for lb in img.labeltable.labels}] * data.shape[1]  # one table in GIFTI
    names = [img.darrays[i].meta.get("Name", "") for i in chosen]
    n = data.shape[0]
    return SurfaceData(
        data=data,
        hemi=hemi,
        mesh=_mesh_for(n, mesh, path),
        mask=_mask_from_data(data) if kind == "series" else np.ones(n, bool),
        tr=tr,
        kind=kind,
        path=path,
        frame_names=[s for s in names if s] if any(names) else [],
        label_tables=tables,
        coords=coords,
        faces=faces,
    )


#: GIFTI intents whose arrays hold one value per vertex and frame (nibabel's agg_data joins TIME_SERIES arrays
#: into a vertex × time array; SHAPE holds curvature, thickness…; the statistic intents 2-24 and ESTIMATE hold
#: maps); NIFTI_INTENT_NONE counts only with float data, as no writer stores an integer map without a label intent
_GIFTI_DATA_INTENTS = {"NIFTI_INTENT_TIME_SERIES", "NIFTI_INTENT_SHAPE", "NIFTI_INTENT_ESTIMATE"}
_GIFTI_GEOMETRY_INTENTS = {"NIFTI_INTENT_POINTSET", "NIFTI_INTENT_TRIANGLE"}


def _gifti_role(intent: str, darray) -> str:
    """``"data"``, ``"label"``, ``"geometry"`` or ``"other"`` (vectors, matrices, node indices, RGB…)."""
    from nibabel.nifti1 import intent_codes

    if intent in _GIFTI_GEOMETRY_INTENTS:
        return "geometry"
    if intent == "NIFTI_INTENT_LABEL":
        return "label"
    if intent in _GIFTI_DATA_INTENTS or 2 <= cast(int, intent_codes.code[intent]) <= 24:  # statistics: t, z, p…
        return "data"
    if intent == "NIFTI_INTENT_NONE" and np.issubdtype(np.asarray(darray.data).dtype, np.floating):
        return "data"
    return "other"


def _intent_list(intents: list[str], idx) -> str:
    """``#0 NIFTI_INTENT_TIME_SERIES, #7 NIFTI_INTENT_LABEL`` (at most six, then a count)."""
    idx = list(idx)
    head = ", ".join(f"#{i} {intents[i]}" for i in idx[:6])
    return head + (f", … (+{len(idx) - 6} more)" if len(idx) > 6 else "")


def _gifti_tr(step, path: Path) -> float | None:
    """GIFTI ``TimeStep``: seconds, or milliseconds when above 20 (writers disagree on the unit; no fMRI TR
    exceeds 20 s). Missing, or exactly 0 (what writers put when they do not know it, e.g. nibabel's
    ``task.func.gii``): None, with a warning for 0. Negative, NaN, inf or absurd values are refused."""
    if step in (None, ""):
        return None
    try:
        tr = float(step)
    except ValueError as exc:
        raise DataFileError(f"{path}: TimeStep {str(step)[:40]!r} is not a number: a damaged header") from exc
    if tr == 0:
        warnings.warn(
            f"{path}: TimeStep 0: the file does not state its TR (onsets will be counted in frames)",
            RuntimeWarning,
            stacklevel=4,
        )
        return None
    if np.isfinite(tr) and tr > 20:
        tr = tr / 1000.0
    return check_tr(tr, path, f"TimeStep {step}")


def _check_geometry(coords: np.ndarray, faces: np.ndarray | None, path: Path) -> None:
    """Vertices finite, ``(n, 3)``; triangles ``(m, 3)`` indexing existing vertices."""
    if coords.ndim != 2 or coords.shape[1] != 3 or not len(coords):
        raise DataFileError(f"{path}: vertex coordinates of shape {coords.shape}, expected (n_vertices, 3)")
    if not len(coords) <= MAX_VERTICES:
        raise DataFileError(f"{path}: {len(coords):,} vertices, more than {MAX_VERTICES:,}: a damaged header")
    if not np.isfinite(coords).all():
        raise DataFileError(
            f"{path}: {int((~np.isfinite(coords)).any(axis=1).sum())} vertices with NaN/inf coordinates"
        )
    if faces is None:
        return
    if faces.ndim != 2 or faces.shape[1] != 3 or not len(faces):
        raise DataFileError(f"{path}: triangles of shape {faces.shape}, expected (n_faces, 3)")
    if faces.min() < 0 or faces.max() >= len(coords):
        raise DataFileError(
            f"{path}: triangles index vertices {int(faces.min())}…{int(faces.max())} but the file has {len(coords)} "
            "vertices: a damaged header (vertex or face count) or truncated file"
        )


def _read_mgh(path: Path, want: str | None, mesh: str | None) -> SurfaceData:
    import nibabel as nib

    try:
        img = nib.load(path)
    except Exception as exc:  # noqa: BLE001
        raise DataFileError(f"{path}: cannot read as FreeSurfer MGH ({_short(exc)})") from exc
    if not isinstance(img, nib.MGHImage):
        raise DataFileError(f"{path}: not a FreeSurfer MGH file (nibabel reads it as {type(img).__name__})")
    shape = tuple(int(d) for d in img.shape)
    if not shape or min(shape) < 1 or (len(shape) > 1 and np.prod(shape[1:3]) != 1):
        raise DataFileError(
            f"{path}: MGH volume of shape {shape}, expected a surface overlay (n_vertices, 1, 1[, n_frames])"
        )
    _check_mgh_size(img, shape, path)
    try:
        arr = np.asarray(img.dataobj, dtype=np.float32)
    except (MemoryError, Exception) as exc:  # noqa: BLE001
        raise DataFileError(f"{path}: cannot read the MGH data ({_short(exc)}); copy or download it again") from exc
    data = arr.reshape(arr.shape[0], -1)
    kind = "series" if data.shape[1] > 1 else "scalar"
    tr_ms = float(img.header["tr"])
    # FreeSurfer writes TR 0 when it does not know it; anything else must be a plausible TR
    tr = (
        check_tr(tr_ms / 1000.0, path, f"the MGH header's tr ({tr_ms:g} ms)")
        if kind == "series" and tr_ms != 0
        else None
    )
    if kind == "series" and tr_ms == 0:
        warnings.warn(
            f"{path}: TR 0 in the MGH header: the file does not state its TR (onsets will be counted in frames)",
            RuntimeWarning,
            stacklevel=3,
        )
    return SurfaceData(
        data=data,
        hemi=_resolve_hemi(hemi_from_name(path), want, path),
        mesh=_mesh_for(data.shape[0], mesh, path),
        mask=_mask_from_data(data),
        tr=tr,
        kind=kind,
        path=path,
    )


#: Bytes after an MGH file's data taken as a footer without looking: the optional scan parameters (TR, flip
#: angle, TE, TI, FoV) and a few tags (command lines, …). A longer tail is walked tag by tag
#: (:func:`_mgh_footer_problem`): per-frame tags of a long run take megabytes.
_MGH_MAX_FOOTER = 65536


def _check_mgh_size(img, shape: tuple, path: Path) -> None:
    """The bytes an MGH header promises against the file (``.mgz``: the gzip trailer's uncompressed size)."""
    proxy = img.dataobj
    need = int(proxy.offset) + int(np.prod(shape, dtype=np.int64)) * np.dtype(proxy.dtype).itemsize
    size = path.stat().st_size
    exact = True
    if path.name.lower().endswith(".mgz"):
        with open(path, "rb") as fh:
            fh.seek(-4, 2)
            isize = int.from_bytes(fh.read(4), "little")  # uncompressed size mod 2**32 (RFC 1952)
        exact = need < 2**32
        held = isize if exact else 1032 * size  # deflate never compresses beyond ~1032:1
    else:
        held = size
    if need > held:
        raise DataFileError(
            f"{path}: truncated file or damaged header: the header promises {' × '.join(map(str, shape))} values "
            f"({need:,} bytes) but the file holds {held:,}; copy or download it again"
        )
    if exact and held - need > _MGH_MAX_FOOTER:
        problem = _mgh_footer_problem(path, need, held)
        if problem:
            raise DataFileError(
                f"{path}: the file holds {held - need:,} bytes more than its header's {' × '.join(map(str, shape))} "
                f"values, and they are no MGH footer ({problem}): a damaged header (a lowered vertex or frame count "
                "would read the data as another mesh)"
            )


#: FreeSurfer tag ids (utils/tags.h) are small numbers (TAG_CMDLINE 3, TAG_MRI_FRAME 42, …); a larger id is data
_MGH_MAX_TAG = 1000
_MGH_OLD_XFORM_TAG = 30  # TAG_OLD_MGH_XFORM: its length is a 4-byte int; every other tag's an 8-byte int


def _mgh_footer_problem(path: Path, need: int, held: int) -> str | None:
    """Walk an MGH footer, as FreeSurfer writes it after the data (``load_mgh.m``, ``utils/tags.c``): the optional
    scan parameters (TR, flip angle, TE, TI: 4 big-endian float32, then FoV), then tags, each a big-endian int32
    id, a length (int64; int32 for the old transform tag) and that many bytes, to the end of the file. ``None``
    when the tags end exactly at the file's end; else what is wrong (bytes that are no footer: more data than
    the header says). Large footers are normal: per-frame tags of long runs take megabytes."""
    import gzip

    opener = gzip.open if path.name.lower().endswith(".mgz") else open
    with opener(path, "rb") as fh:
        fh.seek(need)
        pos = need + min(20, held - need)  # the scan parameters (nibabel reads them as the footer)
        fh.seek(pos)
        n_tags = 0
        while pos < held:
            head = fh.read(4)
            if len(head) < 4:
                return f"{held - pos} stray byte(s) at offset {pos:,}"
            tag = int.from_bytes(head, "big", signed=True)
            width = 4 if tag == _MGH_OLD_XFORM_TAG else 8
            raw = fh.read(width)
            if not 0 < tag <= _MGH_MAX_TAG or len(raw) < width:
                return f"tag id {tag} at offset {pos:,} after {n_tags} tag(s)"
            length = int.from_bytes(raw, "big", signed=True)
            pos += 4 + width
            if length < 0 or pos + length > held:
                return f"tag {tag} at offset {pos - 4 - width:,} claims {length:,} bytes, past the end of the file"
            fh.seek(length, 1)
            pos += length
            n_tags += 1
    return None


def _read_freesurfer(path: Path, want: str | None, mesh: str | None) -> SurfaceData:
    from nibabel.freesurfer import read_geometry, read_morph_data

    with open(path, "rb") as fh:
        magic = fh.read(3)
    hemi = _resolve_hemi(hemi_from_name(path), want, path)
    try:
        if magic == _FS_GEOMETRY_MAGIC:
            coords, faces = read_geometry(str(path))
            coords, faces = np.asarray(coords, np.float64), np.asarray(faces, np.int64)
            _check_geometry(coords, faces, path)
            n = len(coords)
            return SurfaceData(
                data=np.zeros((n, 0), np.float32),
                hemi=hemi,
                mesh=_mesh_for(n, mesh, path, strict=False),
                mask=np.ones(n, bool),
                kind="geometry",
                path=path,
                coords=coords,
                faces=faces,
            )
        if magic == _FS_CURV_MAGIC:
            _check_curv_size(path)
            vals = np.asarray(read_morph_data(str(path)), dtype=np.float32)[:, None]
            return SurfaceData(
                data=vals,
                hemi=hemi,
                mesh=_mesh_for(len(vals), mesh, path),
                mask=np.ones(len(vals), bool),
                kind="scalar",
                path=path,
                frame_names=[path.name],
            )
    except DataFileError:
        raise
    except (MemoryError, Exception) as exc:  # noqa: BLE001
        raise DataFileError(f"{path}: cannot read as FreeSurfer surface file ({_short(exc)})") from exc
    raise DataFileError(
        f"{path}: unknown surface format (expected CIFTI-2 .dtseries/.dscalar/.dlabel.nii, GIFTI .gii, "
        "FreeSurfer .mgh/.mgz, curvature or triangle surface files)"
    )


def _check_curv_size(path: Path) -> None:
    """A FreeSurfer "new" curvature file is a 15-byte header (magic, vertex count, face count, values per
    vertex, big-endian int32) and one float32 per vertex, nothing else: the count must fill the file exactly,
    so a lowered count is not read as a smaller mesh."""
    size = path.stat().st_size
    with open(path, "rb") as fh:
        head = fh.read(15)
    if len(head) < 15:
        raise DataFileError(f"{path}: {size} bytes, shorter than a FreeSurfer curvature header (15 bytes)")
    n_vert, _, per_vertex = (int.from_bytes(head[i : i + 4], "big", signed=True) for i in (3, 7, 11))
    if per_vertex != 1:
        raise DataFileError(
            f"{path}: {per_vertex} values per vertex in the curvature header, expected 1: a damaged header"
        )
    if not 0 < n_vert <= MAX_VERTICES or 15 + 4 * n_vert != size:
        held = (size - 15) / 4
        held_s = f"{int(held):,}" if held == int(held) else f"{held:,.2f}"
        raise DataFileError(
            f"{path}: the header says {n_vert:,} vertices but the file holds {held_s} values "
            f"({size:,} bytes): a damaged header or truncated file"
        )
