"""Icospheres with hierarchical vertex numbering, as used by the surface vision transformers.

An ico-k sphere is the regular icosahedron subdivided k times: every edge is split at its midpoint and the
midpoint pushed out to the sphere (radius 100 mm) before the next level is made. The numbering is
hierarchical: the first ``10·4^j + 2`` vertices of ico-k are the ico-j grid (the first 12 the
icosahedron), and faces are in quad-tree order: faces ``4f … 4f+3`` of ico-(j+1) are the four children of
face ``f`` of ico-j. A face of ico-k is therefore a patch of the ico6 template (see
:mod:`neurokit.geometry.patches`).

Orientation and numbering reproduce the reference template of Dahan et al., "Surface Vision
Transformers" (MIDL 2022): the first 12 vertices of ``ico-6.L.surf.gii`` from the metrics-lab tutorial
templates are the golden-ratio icosahedron :data:`ICOSAHEDRON_VERTICES` below, and its ico-1 faces fix the
order of the 20 base faces (:data:`ICOSAHEDRON_FACES`). Subdividing with the rule of :func:`subdivide`
reproduces that ico6 mesh vertex for vertex (numerically, to float32 precision); the test suite checks it
against the reference file. Nothing here reads that file at run time.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from neurokit._utils.errors import ConfigError

#: Radius of the template spheres, in mm (FreeSurfer and HCP spheres use 100 as well).
RADIUS = 100.0

_PHI = (1.0 + 5.0**0.5) / 2.0
_A = RADIUS * _PHI / (1.0 + _PHI**2) ** 0.5  # 85.0650808…
_B = RADIUS / (1.0 + _PHI**2) ** 0.5  # 52.5731112…

#: The 12 icosahedron vertices, in the order and orientation of the first 12 vertices of the reference
#: ``ico-6.L.surf.gii`` (metrics-lab templates): cyclic permutations of (±φ, ±1, 0), scaled to radius 100.
ICOSAHEDRON_VERTICES = np.array(
    [
        [-_A, _B, 0.0],
        [_A, _B, 0.0],
        [_A, -_B, 0.0],
        [-_A, -_B, 0.0],
        [-_B, 0.0, _A],
        [-_B, 0.0, -_A],
        [_B, 0.0, -_A],
        [_B, 0.0, _A],
        [0.0, _A, _B],
        [0.0, -_A, _B],
        [0.0, -_A, -_B],
        [0.0, _A, -_B],
    ]
)

#: The 20 icosahedron faces ``(a, b, c)`` in the order that yields the reference ico-1…ico-6 numbering
#: (read off the quad-tree of the reference ``ico-1.L.surf.gii``: parent of faces 4p…4p+3).
ICOSAHEDRON_FACES = np.array(
    [
        [4, 8, 7],
        [4, 7, 9],
        [5, 6, 11],
        [5, 10, 6],
        [0, 4, 3],
        [0, 3, 5],
        [2, 7, 1],
        [2, 1, 6],
        [8, 0, 11],
        [8, 11, 1],
        [9, 10, 3],
        [9, 2, 10],
        [8, 4, 0],
        [11, 0, 5],
        [4, 9, 3],
        [5, 3, 10],
        [7, 8, 1],
        [6, 1, 11],
        [7, 2, 9],
        [6, 10, 2],
    ],
    dtype=np.int64,
)

MAX_ORDER = 7


def n_vertices(order: int) -> int:
    """Number of vertices of an ico-``order`` sphere, ``10·4^order + 2``.

    Parameters
    ----------
    order : int
        Icosphere order (0 is the icosahedron, 6 the ico6 template).

    Returns
    -------
    int
        Vertex count.

    Examples
    --------
    >>> n_vertices(0), n_vertices(6)
    (12, 40962)
    """
    return 10 * 4**order + 2


def n_faces(order: int) -> int:
    """Number of faces of an ico-``order`` sphere, ``20·4^order``.

    Parameters
    ----------
    order : int
        Icosphere order (0 is the icosahedron, 6 the ico6 template).

    Returns
    -------
    int
        Face count; on a patch grid of order ``order``, the number of patches.

    Examples
    --------
    >>> n_faces(0), n_faces(2), n_faces(6)
    (20, 320, 81920)
    """
    return 20 * 4**order


def subdivide(vertices: np.ndarray, faces: np.ndarray, radius: float = RADIUS) -> tuple[np.ndarray, np.ndarray]:
    """One level of midpoint subdivision, the midpoints projected onto the sphere.

    Parameters
    ----------
    vertices : ndarray, shape (n_vertices, 3), float64
        Vertex coordinates, in mm.
    faces : ndarray, shape (n_faces, 3), int64
        In quad-tree (internal) corner order ``(a, b, c)``.
    radius : float
        Sphere radius (mm) the new midpoints are projected onto.

    Returns
    -------
    vertices : ndarray, shape (n_vertices + n_edges, 3)
        Old vertices first, then one midpoint per edge, numbered in the order the edges are first met
        walking the faces in order and, within a face, the edges ``ab, bc, ca``.
    faces : ndarray, shape (4·n_faces, 3)
        For face ``(a, b, c)`` the children ``(ab, bc, ca), (c, ca, bc), (b, bc, ab), (a, ab, ca)``.

    Examples
    --------
    >>> v, f = subdivide(ICOSAHEDRON_VERTICES, ICOSAHEDRON_FACES)
    >>> v.shape, f.shape
    ((42, 3), (80, 3))
    """
    a, b, c = faces[:, 0], faces[:, 1], faces[:, 2]
    edges = np.stack([np.stack([a, b], 1), np.stack([b, c], 1), np.stack([c, a], 1)], 1).reshape(-1, 2)
    key = np.sort(edges, axis=1)
    nv = len(vertices)
    uniq, first, inverse = np.unique(key[:, 0] * nv + key[:, 1], return_index=True, return_inverse=True)
    rank = np.empty(len(uniq), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(uniq))
    mid_id = (nv + rank[inverse]).reshape(-1, 3)
    ordered = key[np.sort(first)]
    mids = vertices[ordered[:, 0]] + vertices[ordered[:, 1]]
    mids *= radius / np.linalg.norm(mids, axis=1, keepdims=True)
    children = child_faces(a, b, c, mid_id[:, 0], mid_id[:, 1], mid_id[:, 2])
    return np.concatenate([vertices, mids]), children


def child_faces(a, b, c, ab, bc, ca) -> np.ndarray:
    """The four children of faces ``(a, b, c)`` whose edge midpoints are ``ab, bc, ca``.

    Children come in the reference quad-tree order: the centre ``(ab, bc, ca)``, then the corners at ``c``,
    ``b`` and ``a``.

    Parameters
    ----------
    a, b, c : ndarray, shape (n, ...)
        The corners of ``n`` faces (vertex indices, or any per-corner values such as lattice coordinates).
    ab, bc, ca : ndarray, shape (n, ...)
        The midpoints of the edges ``ab``, ``bc`` and ``ca``, same shape as the corners.

    Returns
    -------
    ndarray, shape (4·n, 3, ...)
        The children of face ``f`` at rows ``4f … 4f+3``.

    Examples
    --------
    >>> import numpy as np
    >>> child_faces(*[np.array([k]) for k in range(6)]).tolist()
    [[3, 4, 5], [2, 5, 4], [1, 4, 3], [0, 3, 5]]
    """
    out = np.stack(
        [np.stack([ab, bc, ca], 1), np.stack([c, ca, bc], 1), np.stack([b, bc, ab], 1), np.stack([a, ab, ca], 1)],
        axis=1,
    )
    return out.reshape(-1, *out.shape[2:])


@dataclass(frozen=True)
class Icosphere:
    """One ico-k sphere (see :func:`icosphere`).

    Attributes
    ----------
    order : int
        The order ``k``.
    vertices : ndarray, shape (10·4^k+2, 3), float64
        Vertex coordinates in mm, on the sphere of radius 100; hierarchical numbering (ico-j grid first).
    faces : ndarray, shape (20·4^k, 3), int64
        Quad-tree order, wound counter-clockwise seen from outside (outward normals).
    """

    order: int
    vertices: np.ndarray
    faces: np.ndarray

    @property
    def name(self) -> str:
        return f"ico{self.order}"


@lru_cache(maxsize=None)
def _quadtree(order: int) -> tuple[np.ndarray, np.ndarray]:
    if order == 0:
        v, f = ICOSAHEDRON_VERTICES.copy(), ICOSAHEDRON_FACES.copy()
    else:
        v, f = subdivide(*_quadtree(order - 1))
    v.setflags(write=False)  # cached: shared by every caller
    f.setflags(write=False)
    return v, f


def quadtree_faces(order: int) -> np.ndarray:
    """Faces of ico-``order`` in the internal corner order ``(a, b, c)`` that :func:`subdivide` uses.

    Unlike :attr:`Icosphere.faces`, the corners are not re-wound for outward normals, so the lattice position of
    a corner inside its parent face is known.

    Parameters
    ----------
    order : int
        Icosphere order, 0…7.

    Returns
    -------
    faces : ndarray, shape (20·4^order, 3), int64, read-only
        Vertex indices of each face, in quad-tree order.

    Raises
    ------
    ConfigError
        ``order`` is not an integer in 0…7.

    Examples
    --------
    >>> quadtree_faces(1).shape
    (80, 3)
    """
    _check_order(order)
    return _quadtree(order)[1]


def _check_order(order: int) -> None:
    if not isinstance(order, (int, np.integer)) or not 0 <= order <= MAX_ORDER:
        raise ConfigError(f"icosphere order must be an integer in 0…{MAX_ORDER}, got {order!r}")


@lru_cache(maxsize=None)
def icosphere(order: int = 6) -> Icosphere:
    """The ico-``order`` template sphere (cached).

    Parameters
    ----------
    order : int
        0 (icosahedron) … 7; ico6 (40,962 vertices, 81,920 faces) is the surface ViT template.

    Returns
    -------
    Icosphere
        Vertices hierarchical (ico-j grid first), faces in quad-tree order with outward normals.

    Raises
    ------
    ConfigError
        ``order`` outside 0…7.

    Examples
    --------
    >>> ico = icosphere(2)
    >>> ico.name, ico.vertices.shape, ico.faces.shape
    ('ico2', (162, 3), (320, 3))
    """
    _check_order(order)
    v, f = _quadtree(order)
    out = f.copy()
    # orient each face so its normal points away from the centre
    n = np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]])
    flip = np.einsum("ij,ij->i", n, v[f].mean(1)) < 0
    out[flip] = out[flip][:, [1, 0, 2]]
    out.setflags(write=False)
    return Icosphere(int(order), v, out)


def order_from_n_vertices(n: int) -> int | None:
    """The icosphere order whose sphere has ``n`` vertices.

    Parameters
    ----------
    n : int
        Number of vertices (e.g. the length of a surface data array).

    Returns
    -------
    int or None
        The order ``k`` with ``10·4^k + 2 == n`` (``k`` ≤ 7), or None when no icosphere has ``n`` vertices.

    Examples
    --------
    >>> order_from_n_vertices(40962), order_from_n_vertices(32492)
    (6, None)
    """
    for k in range(MAX_ORDER + 1):
        if n_vertices(k) == n:
            return k
    return None


def match_vertices(coords: np.ndarray, order: int = 6, *, tol: float = 1e-3) -> np.ndarray:
    """Permutation taking another ico-``order`` mesh's vertex numbering to this package's.

    Parameters
    ----------
    coords : ndarray, shape (10·4^order+2, 3)
        Vertex coordinates of the other mesh, on a sphere of any radius, same orientation.
    order : int
        Icosphere order of the mesh, 0…7 (6 for the ico6 template).
    tol : float
        Largest allowed distance (mm, at radius 100) between matched vertices.

    Returns
    -------
    perm : ndarray, shape (n_vertices,), int64
        ``perm[i]`` is the template index of the other mesh's vertex ``i``; data ``x`` in the other
        numbering become ``y = np.empty_like(x); y[perm] = x`` in template numbering.

    Raises
    ------
    ConfigError
        Wrong vertex count, or vertices that do not coincide (another orientation or not an icosphere).

    Examples
    --------
    >>> import numpy as np
    >>> v = icosphere(1).vertices
    >>> shuffle = np.random.default_rng(0).permutation(len(v))
    >>> bool((match_vertices(v[shuffle] / 100, order=1) == shuffle).all())
    True
    """
    from scipy.spatial import cKDTree

    ico = icosphere(order)
    coords = np.asarray(coords, dtype=np.float64)
    if coords.shape != ico.vertices.shape:
        raise ConfigError(f"mesh has {coords.shape[0]} vertices; ico{order} has {len(ico.vertices)}")
    unit = coords * (RADIUS / np.linalg.norm(coords, axis=1, keepdims=True))
    dist, perm = cKDTree(ico.vertices).query(unit)
    if dist.max() > tol or len(np.unique(perm)) != len(perm):
        raise ConfigError(
            f"mesh vertices do not coincide with ico{order} (largest distance {dist.max():.3g} mm at "
            f"radius 100, tolerance {tol}): not an icosphere of the template's orientation"
        )
    return perm.astype(np.int64)
