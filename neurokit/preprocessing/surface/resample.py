"""Barycentric resampling between registered spheres, as a cached sparse matrix.

Each target vertex is projected onto the source sphere along its radius; the source triangle the ray
passes through is found and the value is the barycentric mix of its three corners — the scheme of
Connectome Workbench's ``-metric-resample … BARYCENTRIC``, written here with numpy/scipy. The weights form
a ``scipy.sparse.csr_matrix`` of shape ``(n_target, n_source)`` with at most three entries per row,
built once per sphere pair and cached in memory and in :func:`neurokit._utils.cache.cache_dir`.

Masked data (a cortex mask with the medial wall outside it) are resampled with the weights restricted to
the mask and renormalised, so values near the medial wall are not pulled towards 0; the target mask is
where more than half of the weight falls on cortex (Workbench's ``-current-roi`` / ``-valid-roi-out``).
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from neurokit._utils.cache import cache_dir
from neurokit._utils.errors import DataFileError
from neurokit.geometry.icosphere import icosphere

logger = logging.getLogger("neurokit")


@dataclass(frozen=True, eq=False)
class Sphere:
    """A registered sphere: the mesh a surface's data live on, with its vertices on a sphere.

    Attributes
    ----------
    coords : ndarray, shape (n_vertices, 3), float64
        Vertex coordinates (any radius).
    faces : ndarray, shape (n_faces, 3), int64
        Vertex indices of each triangle.
    name : str
        Where it came from (file path or template name), for error messages.
    hemi : {"L", "R"} or None
        The hemisphere the file declares (GIFTI ``AnatomicalStructurePrimary``, else its name); None for
        templates.

    Examples
    --------
    >>> sphere = load_sphere("ico2")
    >>> sphere.n_vertices, sphere.is_template(2)
    (162, True)
    """

    coords: np.ndarray
    faces: np.ndarray
    name: str = "sphere"
    hemi: str | None = None

    @property
    def n_vertices(self) -> int:
        return len(self.coords)

    def mirrored(self) -> "Sphere":
        """The sphere reflected through x = 0 (right hemisphere onto the left template)."""
        c = self.coords.copy()
        c[:, 0] *= -1
        return Sphere(c, self.faces[:, [1, 0, 2]], self.name + " (mirrored x→−x)", self.hemi)

    def is_template(self, order: int = 6, *, atol: float = 1e-5) -> bool:
        """Whether this sphere is the generated (left) ico-``order`` template: same vertex count, and every
        vertex in the template's direction at the same index (any radius; float32 files pass)."""
        if self.n_vertices != 10 * 4**order + 2:
            return False
        return bool(
            np.allclose(_unit(np.asarray(self.coords, np.float64)), _unit(icosphere(order).vertices), atol=atol)
        )

    def digest(self) -> str:
        h = hashlib.sha256()
        h.update(np.ascontiguousarray(self.coords, dtype=np.float64).tobytes())
        h.update(np.ascontiguousarray(self.faces, dtype=np.int64).tobytes())
        return h.hexdigest()[:20]


def load_sphere(sphere, hemi: str | None = None) -> Sphere:
    """A :class:`Sphere` from a file, an ico order, surface data, a nilearn mesh or a pair of arrays.

    ``hemi`` picks the part of a two-part nilearn ``PolyMesh``; the Sphere's ``hemi`` is what the file's
    metadata, its name or the PolyMesh part say, for callers to check against the data.

    Parameters
    ----------
    sphere : str, Path, int, SurfaceData, nilearn mesh, (ndarray, ndarray) or Sphere
        A path (GIFTI ``.surf.gii``, FreeSurfer ``lh.sphere.reg``), an ico order (``6`` or ``"ico6"``), a
        :class:`~neurokit.io.surface.SurfaceData` of kind geometry, a nilearn mesh (``InMemoryMesh``,
        ``FileMesh``, ``PolyMesh``: see :func:`~neurokit.io.surface.read_geometry`), a ``(coords, faces)``
        pair, or a Sphere (returned as it is).
    hemi : {"L", "R"}, optional
        The hemisphere to take from a two-part ``PolyMesh``.

    Returns
    -------
    Sphere
        The sphere.

    Raises
    ------
    DataFileError
        The file or object is not a surface geometry, or not a sphere: its GIFTI ``GeometricType`` is not
        spherical, or its vertex radii vary by more than :data:`MAX_RADIUS_RSD` (a midthickness or inflated
        surface).

    Examples
    --------
    >>> load_sphere(2).coords.shape
    (162, 3)
    """
    if isinstance(sphere, Sphere):
        return sphere
    if isinstance(sphere, (int, np.integer)) or (
        isinstance(sphere, str) and sphere.startswith("ico") and sphere[3:].isdigit()
    ):
        k = int(str(sphere).removeprefix("ico"))
        ico = icosphere(k)
        return Sphere(ico.vertices, ico.faces, ico.name)
    if isinstance(sphere, tuple) and len(sphere) == 2:
        return Sphere(np.asarray(sphere[0], np.float64), np.asarray(sphere[1], np.int64))
    from neurokit.io.surface import read_geometry

    sd = read_geometry(sphere, hemi)
    assert sd.coords is not None and sd.faces is not None  # read_geometry refuses a file without them
    check_spherical(sd.coords, sd.path, sd.geometric_type)
    return Sphere(sd.coords, sd.faces, str(sd.path), sd.hemi)


#: Largest relative standard deviation of vertex radii accepted for a sphere (1 %).
MAX_RADIUS_RSD = 0.01


def check_spherical(coords: np.ndarray, path, geometric_type: str | None = None) -> None:
    """Refuse a surface that is not a sphere (GIFTI ``GeometricType`` or non-constant radius).

    Parameters
    ----------
    coords : ndarray, shape (n_vertices, 3)
        Vertex coordinates.
    path : str or Path
        The surface's file, for the message.
    geometric_type : str, optional
        The GIFTI ``GeometricType`` the file declares.

    Raises
    ------
    DataFileError
        Names the file, the type or radius spread found, and what to pass instead.

    Examples
    --------
    >>> from neurokit.geometry.icosphere import icosphere
    >>> check_spherical(icosphere(2).vertices, "ico2")
    >>> check_spherical(icosphere(2).vertices, "white.surf.gii", "Anatomical")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    neurokit._utils.errors.DataFileError: white.surf.gii: GeometricType 'Anatomical', expected 'Spherical': ...
    """
    fix = (
        "pass the registered sphere of the data's mesh as spheres= (e.g. S1200.L.sphere.32k_fs_LR.surf.gii, "
        "lh.sphere.reg), not a midthickness, white, pial or inflated surface"
    )
    if geometric_type and not str(geometric_type).lower().startswith("spher"):
        raise DataFileError(f"{path}: GeometricType {geometric_type!r}, expected 'Spherical': not a sphere; {fix}")
    r = np.linalg.norm(np.asarray(coords, np.float64), axis=1)
    rsd = float(r.std() / r.mean()) if r.mean() > 0 else float("inf")
    if not rsd <= MAX_RADIUS_RSD:
        raise DataFileError(
            f"{path}: vertex radii vary by {100 * rsd:.1f} % (relative std; a sphere has ≤ {100 * MAX_RADIUS_RSD:g} %): "
            f"not a sphere; {fix}"
        )


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def barycentric_weights(source: Sphere, target_coords: np.ndarray, *, k: int = 12) -> tuple[np.ndarray, np.ndarray]:
    """Source triangle and barycentric weights for each target point.

    Parameters
    ----------
    source : Sphere
        The sphere the data live on.
    target_coords : ndarray, shape (n_target, 3)
        Points on a sphere registered to ``source`` (any radius; only directions are used).
    k : int
        Candidate triangles tried per point (nearest by centroid direction); points not inside any are
        retried with 8·k candidates, then given the best clipped weights.

    Returns
    -------
    corners : ndarray, shape (n_target, 3), int64
        Source vertex indices.
    weights : ndarray, shape (n_target, 3), float64
        Non-negative, rows sum to 1.

    Examples
    --------
    >>> corners, weights = barycentric_weights(load_sphere(2), load_sphere(1).coords)
    >>> corners.shape, bool(np.allclose(weights.sum(axis=1), 1))
    ((42, 3), True)
    """
    from scipy.spatial import cKDTree

    v = _unit(np.asarray(source.coords, np.float64))
    f = np.asarray(source.faces, np.int64)
    d = _unit(np.asarray(target_coords, np.float64))
    tree = cKDTree(_unit(v[f].mean(axis=1)))

    def solve(points: np.ndarray, kk: int):
        _, cand = tree.query(points, k=min(kk, len(f)))
        cand = cand.reshape(len(points), -1)
        A, B, C = v[f[cand, 0]], v[f[cand, 1]], v[f[cand, 2]]
        p = points[:, None, :]
        # ray from the centre along p meets plane ABC at barycentrics ∝ (p·B×C, p·C×A, p·A×B)
        lam = np.stack(
            [
                np.einsum("nkj,nkj->nk", p.repeat(cand.shape[1], 1), np.cross(B, C)),
                np.einsum("nkj,nkj->nk", p.repeat(cand.shape[1], 1), np.cross(C, A)),
                np.einsum("nkj,nkj->nk", p.repeat(cand.shape[1], 1), np.cross(A, B)),
            ],
            axis=-1,
        )
        lam = lam / lam.sum(-1, keepdims=True)
        score = lam.min(-1)
        best = score.argmax(1)
        rows = np.arange(len(points))
        return cand[rows, best], lam[rows, best], score[rows, best]

    face, lam, score = solve(d, k)
    miss = np.flatnonzero(score < -1e-9)
    if len(miss):
        f2, l2, s2 = solve(d[miss], 8 * k)
        face[miss], lam[miss], score[miss] = f2, l2, s2
        still = int((s2 < -1e-9).sum())
        if still:
            logger.warning("%d target points fell in no triangle of %s; clipped weights used", still, source.name)
    lam = np.clip(lam, 0.0, None)
    lam /= lam.sum(-1, keepdims=True)
    return f[face], lam


def _build(source: Sphere, target: Sphere):
    import scipy.sparse as sp

    corners, w = barycentric_weights(source, target.coords)
    n = target.n_vertices
    return sp.csr_matrix((w.ravel(), (np.repeat(np.arange(n), 3), corners.ravel())), shape=(n, source.n_vertices))


#: Version of the weights' algorithm; part of every cache key, so a change never reuses stale matrices.
ALGORITHM_VERSION = 2

_MATRICES: dict[tuple, object] = {}


def _cached_matrix(src_key: str, tgt_key: str, source: Sphere, target: Sphere):

    key = (src_key, tgt_key, source.n_vertices, target.n_vertices, ALGORITHM_VERSION)
    if key not in _MATRICES:
        _MATRICES[key] = _load_or_build(src_key, tgt_key, source, target)
    return _MATRICES[key]


def _load_or_build(src_key: str, tgt_key: str, source: Sphere, target: Sphere):
    import scipy.sparse as sp

    shape = (target.n_vertices, source.n_vertices)
    path = cache_dir() / f"resample_v{ALGORITHM_VERSION}_{src_key}_{shape[1]}_{tgt_key}_{shape[0]}.npz"
    if path.exists():
        try:
            m = sp.load_npz(path).tocsr()
            if m.shape == shape:
                return m
            logger.warning("%s: cached matrix has shape %s, expected %s; rebuilding it", path, m.shape, shape)
        except Exception:  # noqa: BLE001 - a damaged cache file is rebuilt
            logger.warning("%s: unreadable cached matrix; rebuilding it", path)
        path.unlink(missing_ok=True)
    m = _build(source, target)
    tmp = path.with_name(path.name + ".tmp.npz")
    sp.save_npz(tmp, m)
    tmp.replace(path)
    return m


def resampling_matrix(source, target=6):
    """Sparse barycentric resampling matrix from ``source`` sphere to ``target`` sphere (cached).

    Parameters
    ----------
    source, target : str, Path, int, Sphere or mesh
        Anything :func:`load_sphere` takes; ``target`` defaults to the ico6 template.

    Returns
    -------
    scipy.sparse.csr_matrix, shape (n_target_vertices, n_source_vertices), float64
        ``target_data = M @ source_data``; rows sum to 1.

    Raises
    ------
    DataFileError
        As :func:`load_sphere`.

    Examples
    --------
    >>> resampling_matrix("ico2", "ico1").shape  # doctest: +SKIP
    (42, 162)
    """
    s, t = load_sphere(source), load_sphere(target)
    return _cached_matrix(s.digest(), t.digest(), s, t)


def resample(
    data: np.ndarray,
    source,
    target=6,
    *,
    mask: np.ndarray | None = None,
    threshold: float = 0.5,
) -> tuple[np.ndarray, np.ndarray]:
    """Resample vertex data from one registered sphere to another.

    Parameters
    ----------
    data : ndarray, shape (n_source_vertices,) or (n_source_vertices, n_frames)
        Vertex data on ``source``.
    source, target : str, Path, int, Sphere or mesh
        Spheres (see :func:`load_sphere`); ``source`` must have as many vertices as ``data`` has rows;
        ``target`` defaults to the ico6 template.
    mask : ndarray of bool, shape (n_source_vertices,), optional
        Valid (cortex) vertices; the weights are restricted to it and renormalised.
    threshold : float
        A target vertex is valid when more than this fraction of its weight falls on ``mask``.

    Returns
    -------
    out : ndarray, shape (n_target_vertices[, n_frames]), float32
        0 outside ``out_mask``.
    out_mask : ndarray of bool, shape (n_target_vertices,)
        Valid (cortex) target vertices.

    Raises
    ------
    DataFileError
        The sphere's vertex count differs from the data's (expected vs found in the message).

    Examples
    --------
    >>> out, out_mask = resample(np.ones(162), "ico2", "ico1")  # doctest: +SKIP
    >>> out.shape, bool(out_mask.all())  # doctest: +SKIP
    ((42,), True)
    """
    s = load_sphere(source)
    data = np.asarray(data)
    if data.shape[0] != s.n_vertices:
        raise DataFileError(
            f"sphere {s.name} has {s.n_vertices} vertices but the data have {data.shape[0]}: the sphere does "
            "not match the data's mesh"
        )
    M = resampling_matrix(s, target)
    # float32 end to end: three weights per target vertex, summing to 1, lose nothing worth a float64 copy
    flat = np.ascontiguousarray(data.reshape(data.shape[0], -1), dtype=np.float32)
    M = M.astype(np.float32)
    if mask is None:
        out = M @ flat
        out_mask = np.ones(M.shape[0], dtype=bool)
    else:
        mask = np.asarray(mask, dtype=bool)
        if mask.shape != (s.n_vertices,):
            raise DataFileError(f"mask has shape {mask.shape}, expected ({s.n_vertices},) for sphere {s.name}")
        # drop the weights of source vertices outside the mask (in the sparse matrix, not by copying data)
        Mm = M.multiply(mask.astype(np.float32)[None, :]).tocsr()
        frac = np.asarray(Mm.sum(axis=1)).ravel()
        out = Mm @ flat
        out_mask = frac > threshold
        out[out_mask] /= frac[out_mask, None]
        out[~out_mask] = 0.0
    out = out.astype(np.float32).reshape((M.shape[0],) + data.shape[1:])
    return out, out_mask


def default_sphere(mesh: str, hemi: str | None):
    """The registered sphere of ``mesh`` packaged with a dependency.

    ``fsaverage5`` spheres ship with nilearn; ico-k spheres are generated.

    Parameters
    ----------
    mesh : str
        The data's mesh (``"ico6"``, ``"fsaverage5"``, ``"fs_LR_32k"``…).
    hemi : {"L", "R"} or None
        Hemisphere of the data.

    Returns
    -------
    Path or int
        The sphere file, or the ico order.

    Raises
    ------
    DataFileError
        No packaged sphere for ``mesh`` (the message says to pass ``sphere=``, and for fs_LR 32k which HCP
        sphere files fit), or fsaverage5 without a hemisphere.

    Examples
    --------
    >>> default_sphere("ico6", None)
    6
    >>> default_sphere("fsaverage5", "L").name
    'sphere_left.gii.gz'
    """
    if mesh.startswith("ico") and mesh[3:].isdigit():
        return int(mesh[3:])
    hint = (
        (
            " If the data are already on the ico6 template (40,962 vertices, e.g. metrics-lab ico-6 files), "
            "pass mesh='ico6' and no resampling is done."
        )
        if mesh == "fsaverage6"
        else ""
    )
    if mesh == "fsaverage5":
        if hemi not in ("L", "R"):
            raise DataFileError("fsaverage5 data without a hemisphere: pass hemi='L' or 'R'")
        from nilearn.datasets import fetch_surf_fsaverage

        fs = fetch_surf_fsaverage("fsaverage5")  # packaged with nilearn: no download
        return Path(fs["sphere_left" if hemi == "L" else "sphere_right"])
    raise DataFileError(
        f"no packaged registered sphere for mesh {mesh!r}: pass spheres= (the {hemi or ''} sphere of that "
        f"mesh; {sphere_hint(mesh, hemi)})." + hint
    )


def sphere_hint(mesh: str, hemi: str | None) -> str:
    """Which registered sphere file a mesh needs, for error messages.

    Parameters
    ----------
    mesh : str
        The data's mesh (``"fs_LR_32k"``, ``"fs_LR_59k"``…).
    hemi : {"L", "R"} or None
        Hemisphere of the data (``<L|R>`` in the text when None).

    Returns
    -------
    str
        The file names to look for (fs_LR 32k's for a mesh with no hint of its own).

    Examples
    --------
    >>> sphere_hint("fs_LR_32k", "L")[:44]
    'fs_LR_32k: S1200.L.sphere.32k_fs_LR.surf.gii'
    """
    from neurokit.io.surface import SPHERE_HINTS

    h = hemi or "<L|R>"
    if mesh in SPHERE_HINTS:
        return f"{mesh}: " + SPHERE_HINTS[mesh].format(h=h)
    return f"the {h} sphere of mesh {mesh}; for fs_LR 32k: " + SPHERE_HINTS["fs_LR_32k"].format(h=h)
