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
"""
from __future__ import annotations

import logging
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .._errors import ConfigError, DataFileError

logger = logging.getLogger("neurokit")

#: Mesh name → vertices per hemisphere. fs_LR 164k and fsaverage share a count; the name picked from
#: a count alone is the first listed here (:data:`_DEFAULT_BY_COUNT`).
KNOWN_MESHES: dict[str, int] = {
    "fs_LR_32k": 32492,
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
_HEMI_ALIASES = {"l": "L", "lh": "L", "left": "L", "cortexleft": "L", "r": "R", "rh": "R", "right": "R", "cortexright": "R"}
_FS_GEOMETRY_MAGIC = b"\xff\xff\xfe"
_FS_CURV_MAGIC = b"\xff\xff\xff"


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
    label_table : dict of int to str
        Label key → name (label files only).
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
    label_table: dict[int, str] = field(default_factory=dict)
    coords: np.ndarray | None = None
    faces: np.ndarray | None = None
    geometric_type: str | None = None

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
    """Hemisphere named in a file name (``lh.``, ``.L.``, ``hemi-R``, ``_left``), or None."""
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
        f"{path}: {n} vertices match no known surface mesh (known: {known}); pass mesh=<name> (CLI: --mesh) "
        "if the data are on a mesh of your own"
    )


def _check_finite(data: np.ndarray, mask: np.ndarray, path: Path) -> None:
    bad = ~np.isfinite(data[mask]).all(axis=0)
    if bad.any():
        frames = np.flatnonzero(bad)
        shown = ", ".join(map(str, frames[:10])) + (" …" if len(frames) > 10 else "")
        n_bad = int((~np.isfinite(data[mask])).sum())
        raise DataFileError(
            f"{path}: {len(frames)} of {data.shape[1]} frames hold NaN/inf on cortex ({n_bad} values; "
            f"frames {shown}); fix the file or pass allow_nan=True to read it anyway"
        )


def _nan_medial_wall(sd: SurfaceData) -> None:
    """Vertices NaN/inf in every frame are medial wall (FreeSurfer/HCP exports): out of the mask, set to 0."""
    never = ~np.isfinite(sd.data).any(axis=1) & sd.mask
    if never.any() and not never.all():
        sd.mask = sd.mask & ~never
        sd.data[never] = 0.0
        logger.info("%s: %d vertices are NaN/inf in every frame; taken as medial wall (outside the cortex mask)",
                    sd.path, int(never.sum()))


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
        CIFTI-2 (``.dtseries.nii``, ``.dscalar.nii``, ``.dlabel.nii``), GIFTI (``.gii``), FreeSurfer
        (``.mgh``, ``.mgz``, curvature or triangle surface files).
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
    if name.endswith(".nii") and any(s in name for s in (".dtseries.", ".dscalar.", ".dlabel.")):
        out = _read_cifti(path, want, mesh)
    elif name.endswith(".gii") or name.endswith(".gii.gz"):
        out = _read_gifti(path, want, mesh)
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


def _resolve_hemi(found: str | None, want: str | None, path: Path) -> str | None:
    if found is not None and want is not None and found != want:
        raise DataFileError(f"{path}: the file is hemisphere {found}, but hemi={want!r} was asked for")
    return want or found


def read_cifti_hemispheres(path: str | Path, **kwargs) -> dict[str, SurfaceData]:
    """Both cortical hemispheres of a CIFTI-2 file: ``{"L": SurfaceData, "R": SurfaceData}`` (those present).

    ``kwargs``: ``mesh`` and ``allow_nan`` as in :func:`read_surface`.

    Raises
    ------
    DataFileError
        The file holds no cortex at all.
    """
    return dict(iter_cifti_hemispheres(path, **kwargs))


def iter_cifti_hemispheres(path: str | Path, **kwargs):
    """Yield ``(hemi, SurfaceData)`` for each cortical hemisphere of a CIFTI-2 file, reading one hemisphere's
    data per step (the header is parsed once), so a caller that drops each before the next holds one
    hemisphere at a time. Arguments and errors as :func:`read_cifti_hemispheres`."""
    import nibabel as nib

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file")
    img = nib.load(path)  # header parsed once for both hemispheres
    structures = _cifti_structures(img, path)
    hemis = [h for h, s in _CORTEX.items() if s in structures]
    if not hemis:
        raise DataFileError(f"{path}: no cortical surface in this CIFTI file (structures: {', '.join(structures)})")
    for h in hemis:
        sd = _read_cifti(path, h, kwargs.get("mesh"), img=img)
        _nan_medial_wall(sd)
        if not kwargs.get("allow_nan", False):
            _check_finite(sd.data, sd.mask, path)
        yield h, sd
        del sd  # before the next hemisphere is read


def _cifti_structures(img, path: Path) -> list[str]:
    try:
        bm = img.header.get_axis(1)
        return [name for name, _, _ in bm.iter_structures()]
    except Exception as exc:  # noqa: BLE001 - nibabel raises many kinds on malformed headers
        raise DataFileError(f"{path}: not a dense CIFTI-2 file with a brain-model axis ({exc})") from exc


def _read_cifti(path: Path, want: str | None, mesh: str | None, img=None) -> SurfaceData:
    import nibabel as nib
    from nibabel import cifti2

    try:
        img = img if img is not None else nib.load(path)
        ax0 = img.header.get_axis(0)
        bm = img.header.get_axis(1)
    except Exception as exc:  # noqa: BLE001
        raise DataFileError(f"{path}: cannot read as CIFTI-2 ({exc})") from exc
    if not isinstance(bm, cifti2.BrainModelAxis):
        raise DataFileError(f"{path}: the second axis is {type(bm).__name__}, expected brain models (dense file)")
    structures = {name: (slc, b) for name, slc, b in bm.iter_structures()}
    present = [h for h, s in _CORTEX.items() if s in structures]
    if not present:
        raise DataFileError(
            f"{path}: no cortical surface in this CIFTI file (expected {_CORTEX['L']} or {_CORTEX['R']}; "
            f"found {', '.join(structures) or 'nothing'})"
        )
    if want is None:
        if len(present) > 1:
            raise ConfigError(f"{path}: holds both hemispheres; pass hemi='L' or hemi='R' (or use read_cifti_hemispheres)")
        want = present[0]
    if want not in present:
        raise DataFileError(f"{path}: no {_CORTEX[want]} in this CIFTI file (found {', '.join(structures)})")
    slc, sub = structures[_CORTEX[want]]
    n_vert = int(sub.nvertices[_CORTEX[want]])
    vert = np.asarray(sub.vertex, dtype=np.int64)
    try:
        block = np.asarray(img.dataobj[:, slc], dtype=np.float32)  # (n_frames, n_cortex)
    except (ValueError, OSError, EOFError) as exc:
        size = path.stat().st_size
        raise DataFileError(
            f"{path}: truncated file: the header promises {tuple(img.shape)} values but the file holds only "
            f"{size} bytes ({exc}); copy or download it again"
        ) from exc
    data = np.zeros((n_vert, block.shape[0]), dtype=np.float32)
    data[vert] = block.T
    mask = np.zeros(n_vert, dtype=bool)
    mask[vert] = True
    kind, tr, names, table = "scalar", None, [], {}
    if isinstance(ax0, cifti2.SeriesAxis):
        kind = "series"
        scale = {"SECOND": 1.0}.get(str(ax0.unit).upper())
        if scale is None:
            raise DataFileError(f"{path}: series axis in {ax0.unit}, expected SECOND")
        tr = float(ax0.step) * scale
    elif isinstance(ax0, cifti2.LabelAxis):
        kind = "label"
        names = [str(n) for n in ax0.name if n not in (None, "", "None")]
        table = {int(k): str(v[0]) for k, v in ax0.label[0].items()}
    elif isinstance(ax0, cifti2.ScalarAxis):
        names = [str(n) for n in ax0.name]
    return SurfaceData(
        data=data,
        hemi=want,
        mesh=_mesh_for(n_vert, mesh, path),
        mask=mask,
        tr=tr,
        kind=kind,
        path=path,
        frame_names=names,
        label_table=table,
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
    except Exception as exc:  # noqa: BLE001
        raise DataFileError(f"{path}: cannot read as GIFTI ({exc})") from exc
    if not img.darrays:
        raise DataFileError(f"{path}: GIFTI file without data arrays")
    intents = [intent_codes.niistring[d.intent] for d in img.darrays]
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
            RuntimeWarning, stacklevel=3,
        )
    hemi = _resolve_hemi(found or named, want, path)
    if "NIFTI_INTENT_POINTSET" in intents:
        coords = np.asarray(img.darrays[intents.index("NIFTI_INTENT_POINTSET")].data, dtype=np.float64)
        faces = None
        if "NIFTI_INTENT_TRIANGLE" in intents:
            faces = np.asarray(img.darrays[intents.index("NIFTI_INTENT_TRIANGLE")].data, dtype=np.int64)
        n = len(coords)
        return SurfaceData(
            data=np.zeros((n, 0), np.float32), hemi=hemi, mesh=_mesh_for(n, mesh, path, strict=False),
            mask=np.ones(n, bool), kind="geometry", path=path, coords=coords, faces=faces,
            geometric_type=meta.get("GeometricType") or None,
        )
    arrays = [np.asarray(d.data) for d in img.darrays]
    if len(arrays) == 1 and arrays[0].ndim == 2 and arrays[0].shape[1] > 1:
        data = arrays[0].astype(np.float32)
    else:
        shapes = {a.shape[0] for a in arrays}
        if len(shapes) != 1:
            raise DataFileError(f"{path}: data arrays of different lengths {sorted(shapes)}")
        data = np.stack([a.reshape(a.shape[0], -1)[:, 0] for a in arrays], axis=1).astype(np.float32)
    kind = "label" if intents[0] == "NIFTI_INTENT_LABEL" else "series" if intents[0] == "NIFTI_INTENT_TIME_SERIES" else "scalar"
    tr = None
    step = meta.get("TimeStep")
    if kind == "series" and step not in (None, ""):
        try:
            tr = float(step)
        except ValueError:
            tr = None
        if tr is not None:
            # GIFTI writers disagree on the unit; no fMRI TR exceeds 20 s, so larger values are ms
            tr = tr / 1000.0 if tr > 20 else tr
            tr = tr or None
    table = {}
    if kind == "label" and img.labeltable is not None:
        table = {int(lb.key): str(lb.label) for lb in img.labeltable.labels}
    names = [d.meta.get("Name", "") for d in img.darrays]
    n = data.shape[0]
    return SurfaceData(
        data=data, hemi=hemi, mesh=_mesh_for(n, mesh, path),
        mask=_mask_from_data(data) if kind == "series" else np.ones(n, bool), tr=tr, kind=kind, path=path,
        frame_names=[s for s in names if s] if any(names) else [], label_table=table,
    )


def _read_mgh(path: Path, want: str | None, mesh: str | None) -> SurfaceData:
    import nibabel as nib

    try:
        img = nib.load(path)
        arr = np.asarray(img.dataobj, dtype=np.float32)
    except Exception as exc:  # noqa: BLE001
        raise DataFileError(f"{path}: cannot read as FreeSurfer MGH ({exc})") from exc
    if arr.ndim < 1 or (arr.ndim > 1 and np.prod(arr.shape[1:3]) != 1):
        raise DataFileError(f"{path}: MGH volume of shape {arr.shape}, expected a surface overlay (n_vertices, 1, 1[, n_frames])")
    data = arr.reshape(arr.shape[0], -1)
    tr_ms = float(img.header["tr"])
    kind = "series" if data.shape[1] > 1 else "scalar"
    return SurfaceData(
        data=data, hemi=_resolve_hemi(hemi_from_name(path), want, path), mesh=_mesh_for(data.shape[0], mesh, path),
        mask=_mask_from_data(data), tr=tr_ms / 1000.0 if (tr_ms > 0 and kind == "series") else None, kind=kind, path=path,
    )


def _read_freesurfer(path: Path, want: str | None, mesh: str | None) -> SurfaceData:
    from nibabel.freesurfer import read_geometry, read_morph_data

    with open(path, "rb") as fh:
        magic = fh.read(3)
    hemi = _resolve_hemi(hemi_from_name(path), want, path)
    try:
        if magic == _FS_GEOMETRY_MAGIC:
            coords, faces = read_geometry(str(path))
            n = len(coords)
            return SurfaceData(
                data=np.zeros((n, 0), np.float32), hemi=hemi, mesh=_mesh_for(n, mesh, path, strict=False),
                mask=np.ones(n, bool), kind="geometry", path=path,
                coords=np.asarray(coords, np.float64), faces=np.asarray(faces, np.int64),
            )
        if magic == _FS_CURV_MAGIC:
            vals = np.asarray(read_morph_data(str(path)), dtype=np.float32)[:, None]
            return SurfaceData(
                data=vals, hemi=hemi, mesh=_mesh_for(len(vals), mesh, path), mask=np.ones(len(vals), bool),
                kind="scalar", path=path, frame_names=[path.name],
            )
    except DataFileError:
        raise
    except Exception as exc:  # noqa: BLE001
        raise DataFileError(f"{path}: cannot read as FreeSurfer surface file ({exc})") from exc
    raise DataFileError(
        f"{path}: unknown surface format (expected CIFTI-2 .dtseries/.dscalar/.dlabel.nii, GIFTI .gii, "
        "FreeSurfer .mgh/.mgz, curvature or triangle surface files)"
    )
