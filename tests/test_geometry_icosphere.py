"""Generated icospheres and patch tables against the metrics-lab reference templates."""

from __future__ import annotations

import nibabel as nib
import numpy as np
import pytest
from scipy.spatial import cKDTree

from neurokit._utils.errors import ConfigError
from neurokit.geometry.icosphere import icosphere, match_vertices, n_vertices
from neurokit.geometry.patches import parse_grid, patch_table, vertices_per_patch


@pytest.fixture(scope="module")
def ref6(surface_root):
    v, f = nib.load(surface_root / "metrics-lab_ico/ico-6.L.surf.gii").agg_data()
    return v.astype(np.float64), f.astype(np.int64)


def test_ico6_matches_reference(ref6):
    v, f = ref6
    ico = icosphere(6)
    assert ico.vertices.shape == (40962, 3) and ico.faces.shape == (81920, 3)
    dist, idx = cKDTree(ico.vertices).query(v)
    assert dist.max() <= 1e-3  # at radius 100
    assert len(np.unique(idx)) == 40962
    # the numbering reproduces the reference's exactly, not only up to order
    np.testing.assert_array_equal(idx, np.arange(40962))
    assert set(map(tuple, np.sort(ico.faces, 1))) == set(map(tuple, np.sort(f, 1)))


def test_faces_point_outwards():
    ico = icosphere(4)
    a, b, c = (ico.vertices[ico.faces[:, i]] for i in range(3))
    assert (np.einsum("ij,ij->i", np.cross(b - a, c - a), a + b + c) > 0).all()


@pytest.mark.parametrize("k", [1, 2, 3, 4, 5])
def test_hierarchical_numbering(surface_root, k):
    ico6 = icosphere(6)
    n = n_vertices(k)
    np.testing.assert_allclose(ico6.vertices[:n], icosphere(k).vertices, atol=1e-9)
    ref = nib.load(surface_root / f"metrics-lab_ico/ico-{k}.L.surf.gii").agg_data()[0]
    dist, idx = cKDTree(ico6.vertices[:n]).query(ref)
    assert dist.max() <= 1e-3 and len(np.unique(idx)) == n


@pytest.mark.parametrize("k,n_patch,v", [(1, 80, 561), (2, 320, 153), (3, 1280, 45), (4, 5120, 15), (5, 20480, 6)])
def test_patch_table_shapes(k, n_patch, v):
    t = patch_table(k)
    assert t.shape == (n_patch, v) == (20 * 4**k, vertices_per_patch(k))
    assert all(len(np.unique(row)) == v for row in t[:: max(1, n_patch // 50)])
    assert np.array_equal(np.unique(t), np.arange(40962))
    # lattice corners (slots 0, n, last) are the ico-k grid vertices
    m = 2 ** (6 - k)
    assert (t[:, [0, m, -1]] < n_vertices(k)).all()


def test_ico2_table_matches_reference_csv(surface_root, ref6):
    import pandas as pd

    ref = pd.read_csv(surface_root / "metrics-lab_ico/triangle_indices_ico_6_sub_ico_2.csv").to_numpy().T
    assert ref.shape == (320, 153)
    # vertices matched by position (the numbering turns out to be the identity)
    perm = match_vertices(ref6[0])
    ours = {frozenset(row.tolist()): p for p, row in enumerate(patch_table(2))}
    mapped = [ours.get(frozenset(perm[row].tolist()), -1) for row in ref]
    assert min(mapped) >= 0, f"{sum(m < 0 for m in mapped)} reference patches have no equal generated patch"
    assert sorted(mapped) == list(range(320))
    # both orders are quad-trees of the icosahedron: each reference block of 16 is one of our blocks
    assert all(len({m // 16 for m in mapped[b : b + 16]}) == 1 for b in range(0, 320, 16))


def test_quadtree_patch_order():
    t2, t3 = patch_table(2), patch_table(3)
    for p in range(0, 320, 7):
        children = set(t3[4 * p : 4 * p + 4].ravel())
        assert children == set(t2[p])


def test_reference_numbering_through_permutation(surface_root):
    v = nib.load(surface_root / "metrics-lab_ico/ico-6.R.surf.gii").agg_data()[0]
    perm = match_vertices(v)  # the right template is numbered differently
    assert (perm != np.arange(len(perm))).mean() > 0.9
    x_ref = v[:, 2].astype(np.float64)  # a map in the reference numbering: height z
    y = np.empty_like(x_ref)
    y[perm] = x_ref
    np.testing.assert_allclose(y, icosphere(6).vertices[:, 2], atol=1e-3)


def test_bad_orders():
    with pytest.raises(ConfigError, match="0…7"):
        icosphere(9)
    with pytest.raises(ConfigError, match="ico6/icoK"):
        parse_grid("hex2")
    assert parse_grid("ico6/ico3") == (6, 3) and parse_grid("ico2") == (6, 2)
    with pytest.raises(ConfigError, match="vertices"):
        match_vertices(np.zeros((10, 3)))
