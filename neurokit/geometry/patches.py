"""ico6 → ico-k patch tables: which template vertices make up each icosahedral patch.

Each face of ico-k (k = 1…5) is one patch; it holds every ico6 vertex inside that closed spherical triangle,
so vertices on patch edges repeat in neighbouring patches (Dahan et al., "Surface Vision Transformers",
MIDL 2022). Patches are numbered like the ico-k faces (quad-tree: patches ``4p … 4p+3`` are the children of
patch ``p`` of ico-(k−1)).

Inside a patch the vertices are in triangular-lattice order: with the patch's corners ``(a, b, c)`` and
``n = 2^(6−k)``, the vertex at lattice position ``a + i/n·(b−a) + j/n·(c−a)`` (``i, j ≥ 0``, ``i+j ≤ n``)
is put at slot ``j·(n+1) − j·(j−1)/2 + i`` — row ``j`` after row ``j−1``. Every patch has the same layout
relative to its own corners, so slot ``s`` means the same place in every patch.

Patch order versus the metrics-lab CSV: the ico2 patches follow the reference ico-2 *face* order (of
``ico-2.L.surf.gii``). The metrics-lab table ``triangle_indices_ico_6_sub_ico_2.csv`` lists the same 320
vertex sets (one column per patch), but its columns come in a different order (also a quad-tree: each block of
16 of its columns is one of our blocks of 16). Models trained on stores of one order cannot be fed patches in
the other order; :func:`reference_patch_order` gives the permutation (``ours[perm[j]]`` is CSV column ``j``).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from neurokit._utils.errors import ConfigError
from neurokit.geometry.icosphere import child_faces, n_faces, quadtree_faces

TEMPLATE_ORDER = 6


def vertices_per_patch(grid_order: int, template_order: int = TEMPLATE_ORDER) -> int:
    """Number of template vertices in one patch of an ico-k grid, ``(n+1)(n+2)/2`` with ``n = 2^(template−k)``.

    Parameters
    ----------
    grid_order : int
        Order ``k`` of the patch grid (1…5 for the ico6 template).
    template_order : int
        Order of the template sphere (6).

    Returns
    -------
    int
        561, 153, 45, 15, 6 for ico1…ico5 on ico6 (vertices on patch edges count in every patch that has them).

    Examples
    --------
    >>> [vertices_per_patch(k) for k in range(1, 6)]
    [561, 153, 45, 15, 6]
    """
    n = 2 ** (template_order - grid_order)
    return (n + 1) * (n + 2) // 2


def n_patches(grid_order: int) -> int:
    """Number of patches of an ico-k grid, ``20·4^k`` (one per face of ico-k).

    Parameters
    ----------
    grid_order : int
        Order ``k`` of the patch grid.

    Returns
    -------
    int
        Patch count.

    Examples
    --------
    >>> n_patches(2), n_patches(3)
    (320, 1280)
    """
    return n_faces(grid_order)


def _check(grid_order: int, template_order: int) -> None:
    if not 0 <= grid_order < template_order <= 7:
        raise ConfigError(
            f"patch grid ico{grid_order} on template ico{template_order}: need 0 ≤ grid < template ≤ 7 "
            "(the surface ViTs use grid 1…5 on template 6)"
        )


@lru_cache(maxsize=None)
def patch_table(grid_order: int = 2, template_order: int = TEMPLATE_ORDER) -> np.ndarray:
    """Template vertex indices of every patch (cached; computed in well under a second).

    Parameters
    ----------
    grid_order : int
        Order ``k`` of the patch grid (1…5 for the ico6 template).
    template_order : int
        Order of the template sphere (6).

    Returns
    -------
    table : ndarray, shape (20·4^k, vertices_per_patch(k)), int64, read-only
        ``table[p, s]``: template vertex at lattice slot ``s`` of patch ``p`` (see module docstring).

    Raises
    ------
    ConfigError
        Orders out of range.

    Examples
    --------
    >>> patch_table(2).shape
    (320, 153)
    """
    _check(grid_order, template_order)
    n = 2 ** (template_order - grid_order)
    faces = quadtree_faces(grid_order)
    # lattice coordinates (i, j) of each face corner, relative to its ancestor patch; then subdivide them
    lat = np.broadcast_to(np.array([[0, 0], [n, 0], [0, n]]), (len(faces), 3, 2)).copy()
    for _ in range(grid_order, template_order):
        a, b, c = lat[:, 0], lat[:, 1], lat[:, 2]
        lat = child_faces(a, b, c, (a + b) // 2, (b + c) // 2, (c + a) // 2)
    tfaces = quadtree_faces(template_order)
    per = 4 ** (template_order - grid_order)
    patch = np.repeat(np.arange(len(faces)), per * 3)
    i, j = lat[..., 0].ravel(), lat[..., 1].ravel()
    slot = j * (n + 1) - j * (j - 1) // 2 + i
    table = np.full((len(faces), vertices_per_patch(grid_order, template_order)), -1, dtype=np.int64)
    table[patch, slot] = tfaces.ravel()
    assert (table >= 0).all()
    table.setflags(write=False)
    return table


def reference_patch_order(
    reference: np.ndarray, grid_order: int = 2, template_order: int = TEMPLATE_ORDER
) -> np.ndarray:
    """Permutation from an external patch table's order to :func:`patch_table`'s.

    Parameters
    ----------
    reference : ndarray, shape (n_patches, V)
        Template vertex indices per patch in the other order, e.g. the metrics-lab CSV transposed
        (``pd.read_csv(path).to_numpy().T``), in the same (ico6.L) vertex numbering.
    grid_order : int
        Order ``k`` of the patch grid (1…5 for the ico6 template).
    template_order : int
        Order of the template sphere (6).

    Returns
    -------
    perm : ndarray of int64, shape (n_patches,)
        ``patch_table(grid_order)[perm[j]]`` holds the same vertices as ``reference[j]``; reorder our
        patches into the reference order with ``x[..., perm, :]``.

    Raises
    ------
    ConfigError
        A reference patch with no equal vertex set (another numbering, grid or template).

    Examples
    --------
    >>> table = patch_table(1, template_order=3)
    >>> reference_patch_order(table[::-1], grid_order=1, template_order=3)[:4].tolist()
    [79, 78, 77, 76]
    """
    ref = np.asarray(reference)
    ours = {frozenset(row.tolist()): p for p, row in enumerate(patch_table(grid_order, template_order))}
    perm = np.array([ours.get(frozenset(row.tolist()), -1) for row in ref], dtype=np.int64)
    missing = int((perm < 0).sum())
    if missing or len(ref) != len(ours):
        raise ConfigError(
            f"reference patch table {ref.shape}: {missing} of its patches match no ico{template_order}/ico{grid_order} "
            f"patch ({len(ours)} patches expected); check the grid and that it uses the ico{template_order}.L numbering"
        )
    return perm


def patch_grid_name(grid_order: int, template_order: int = TEMPLATE_ORDER) -> str:
    """The name of a patch grid as written into stores, e.g. ``"ico6/ico2"``.

    Parameters
    ----------
    grid_order : int
        Order ``k`` of the patch grid.
    template_order : int
        Order of the template sphere (6).

    Returns
    -------
    str
        ``"ico<template_order>/ico<grid_order>"``; :func:`parse_grid` reads it back.

    Examples
    --------
    >>> patch_grid_name(2)
    'ico6/ico2'
    """
    return f"ico{template_order}/ico{grid_order}"


def parse_grid(grid: str | int) -> tuple[int, int]:
    """Read a patch grid given as ``"ico6/ico2"``, ``"ico2"`` or ``2``.

    Parameters
    ----------
    grid : str or int
        The grid: ``"ico<template>/ico<k>"``, ``"ico<k>"`` or the order ``k`` (on the ico6 template).

    Returns
    -------
    template_order : int
        Order of the template sphere.
    grid_order : int
        Order ``k`` of the patch grid.

    Raises
    ------
    ConfigError
        Anything else, or orders out of range (grid 1…5 below a template of at most 7).

    Examples
    --------
    >>> parse_grid("ico6/ico2"), parse_grid("ico3"), parse_grid(4)
    ((6, 2), (6, 3), (6, 4))
    """
    if isinstance(grid, (int, np.integer)):
        return TEMPLATE_ORDER, int(grid)
    s = str(grid).lower().replace(" ", "")
    parts = s.split("/")
    try:
        orders = [int(p.removeprefix("ico")) for p in parts]
    except ValueError:
        orders = []
    if len(orders) == 1:
        orders = [TEMPLATE_ORDER, orders[0]]
    if len(orders) != 2:
        raise ConfigError(f"patch grid {grid!r}: expected 'ico6/icoK' or 'icoK' with K in 1…5")
    if orders[1] < 1:
        raise ConfigError(
            f"patch grid {grid!r}: ico{orders[1]} is not a patch grid; expected K in 1…5 (ico2: 320 patches)"
        )
    _check(orders[1], orders[0])
    return orders[0], orders[1]


def extract_patches(data: np.ndarray, grid_order: int = 2, template_order: int = TEMPLATE_ORDER) -> np.ndarray:
    """Cut template-sphere data into patches.

    Parameters
    ----------
    data : ndarray, shape (n_template_vertices, ...)
        Data on the ico-``template_order`` sphere (hierarchical numbering), e.g. ``(40962, n_frames)``.
    grid_order : int
        Order ``k`` of the patch grid (1…5 for the ico6 template).
    template_order : int
        Order of the template sphere (6).

    Returns
    -------
    ndarray, shape (n_patches, vertices_per_patch, ...)
        ``data`` gathered through :func:`patch_table`.

    Raises
    ------
    ConfigError
        ``data`` does not have one row per template vertex, or orders out of range.

    Examples
    --------
    >>> import numpy as np
    >>> extract_patches(np.zeros((40962, 3)), grid_order=2).shape
    (320, 153, 3)
    """
    table = patch_table(grid_order, template_order)
    expected = 10 * 4**template_order + 2
    if data.shape[0] != expected:
        raise ConfigError(f"data has {data.shape[0]} vertices; the ico{template_order} template has {expected}")
    return data[table]


def grid_of(n_patches: int, n_vertices_per_patch: int, template_order: int = TEMPLATE_ORDER) -> int | None:
    """The ico-k grid whose patch table has a given shape.

    Parameters
    ----------
    n_patches : int
        Number of patches.
    n_vertices_per_patch : int
        Template vertices per patch.
    template_order : int
        Order of the template sphere (6).

    Returns
    -------
    int or None
        The grid order ``k``, or None when no grid on ico-``template_order`` has that shape (e.g. made-up test
        shapes).

    Examples
    --------
    >>> grid_of(1280, 45), grid_of(320, 153), grid_of(20, 45)
    (3, 2, None)
    """
    for k in range(1, template_order):
        if n_patches == n_faces(k) and n_vertices_per_patch == vertices_per_patch(k, template_order):
            return k
    return None


@lru_cache(maxsize=None)
def patch_centres(grid_order: int, template_order: int = TEMPLATE_ORDER) -> np.ndarray:
    """Where each patch lies on the sphere: unit vectors towards the centroid of its template vertices (cached).

    Used by position codes that know which patches are neighbours.

    Parameters
    ----------
    grid_order : int
        Order ``k`` of the patch grid (1…5 for the ico6 template).
    template_order : int
        Order of the template sphere (6).

    Returns
    -------
    ndarray, shape (n_patches, 3), float64, read-only
        One unit vector per patch.

    Raises
    ------
    ConfigError
        Orders out of range.

    Examples
    --------
    >>> patch_centres(1, template_order=3).shape
    (80, 3)
    """
    from neurokit.geometry.icosphere import icosphere

    c = icosphere(template_order).vertices[patch_table(grid_order, template_order)].mean(axis=1)
    c = c / np.linalg.norm(c, axis=1, keepdims=True)
    c.setflags(write=False)
    return c


@lru_cache(maxsize=None)
def patch_neighbours(grid_order: int, template_order: int = TEMPLATE_ORDER) -> np.ndarray:
    """Which patches touch: they share at least one template vertex (an edge or a corner).

    On ico3 a patch has 12 neighbours (11 next to one of the 12 ico0 corners).

    Parameters
    ----------
    grid_order : int
        Order ``k`` of the patch grid (1…5 for the ico6 template).
    template_order : int
        Order of the template sphere (6).

    Returns
    -------
    ndarray, shape (n_patches, n_patches), bool, read-only
        Symmetric adjacency, the diagonal False (cached).

    Raises
    ------
    ConfigError
        Orders out of range.

    Examples
    --------
    >>> adj = patch_neighbours(3)
    >>> sorted(set(adj.sum(axis=1).tolist()))
    [11, 12]
    """
    from scipy.sparse import csr_matrix

    table = patch_table(grid_order, template_order)
    n = len(table)
    ones = np.ones(table.size, dtype=np.float32)
    inc = csr_matrix((ones, (np.repeat(np.arange(n), table.shape[1]), table.ravel())), shape=(n, table.max() + 1))
    adj = (inc @ inc.T).toarray() > 0
    np.fill_diagonal(adj, False)
    adj.setflags(write=False)
    return adj
