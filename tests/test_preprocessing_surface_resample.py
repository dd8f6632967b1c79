"""Barycentric resampling between the registered fs_LR 32k / fsaverage5 spheres and the ico6 template."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial import cKDTree

from neurokit._utils.errors import DataFileError
from neurokit.io.surface import read_surface
from neurokit.geometry.icosphere import icosphere
from neurokit.preprocessing.surface.patching import to_template
from neurokit.preprocessing.surface.resample import default_sphere, load_sphere, resample, resampling_matrix

SULC = "hcp_fs_LR32k/S1200.sulc_MSMAll.32k_fs_LR.dscalar.nii"
FSA5 = "fsaverage5_rest/sub-010188_ses-02_task-rest_acq-AP_run-01.fsa5.{h}h.first100TR.mgz"


def sphere(root, h):
    return root / f"hcp_fs_LR32k/S1200.{h}.sphere.32k_fs_LR.surf.gii"


def _smooth(xyz):
    u = xyz / np.linalg.norm(xyz, axis=1, keepdims=True)
    return np.sin(2 * u[:, 0]) + u[:, 1] * u[:, 2] + 0.5 * u[:, 2] ** 2


def test_smooth_function_round_trip(surface_root):
    src = load_sphere(sphere(surface_root, "L"))
    f = _smooth(src.coords)
    on_ico, valid = resample(f, src, 6)
    assert valid.all()
    truth = _smooth(icosphere(6).vertices)
    assert np.abs(on_ico - truth).max() < 2e-3  # ~2 mm spacing: linear interpolation error
    back, _ = resample(on_ico, 6, src)
    assert np.abs(back - f).max() < 2e-3
    assert np.corrcoef(back, f)[0, 1] > 0.99999


def test_matrix_is_barycentric_and_cached(surface_root, tmp_path_factory):
    import os

    M = resampling_matrix(sphere(surface_root, "R"), 6)
    assert M.shape == (40962, 32492)
    np.testing.assert_allclose(np.asarray(M.sum(1)).ravel(), 1.0, atol=1e-9)
    assert np.diff(M.indptr).max() <= 3 and (M.data >= 0).all()
    cached = list(os.scandir(os.environ["NEUROKIT_CACHE"]))
    assert any(e.name.startswith("resample_") and e.name.endswith(".npz") for e in cached)
    assert resampling_matrix(sphere(surface_root, "R"), 6) is M


@pytest.mark.parametrize("hemi", ["L", "R"])
def test_sulcal_depth_round_trip(surface_root, hemi):
    sd = read_surface(surface_root / SULC, hemi)
    on_ico, ico_mask = resample(sd.data, sphere(surface_root, hemi), 6, mask=sd.mask)
    assert on_ico.shape == (40962, 1)
    assert 0.85 < ico_mask.mean() < 0.95
    back, back_mask = resample(on_ico, 6, sphere(surface_root, hemi), mask=ico_mask)
    cortex = sd.mask & back_mask
    assert cortex.sum() > 0.999 * sd.mask.sum()
    r = np.corrcoef(sd.data[cortex, 0], back[cortex, 0])[0, 1]
    assert r > 0.99, r


def test_right_hemisphere_mirrored_onto_left(surface_root):
    left = read_surface(surface_root / SULC, "L")
    right = read_surface(surface_root / SULC, "R")
    l, lm = to_template(left, sphere(surface_root, "L"))
    r, rm = to_template(right, sphere(surface_root, "R"))
    r_raw, rm_raw = to_template(right, sphere(surface_root, "R"), mirror_right=False)
    both = lm & rm
    assert np.corrcoef(l[both, 0], r[both, 0])[0, 1] > 0.9  # homologous folds line up
    both = lm & rm_raw
    assert np.corrcoef(l[both, 0], r_raw[both, 0])[0, 1] < 0.5


def test_fsaverage5_default_sphere(surface_root):
    sd = read_surface(surface_root / FSA5.format(h="l"))
    data, mask = to_template(sd)  # nilearn's packaged fsaverage5 sphere: no download
    assert data.shape == (40962, 100)
    assert 0.85 < mask.mean() < 0.95
    # template vertices that coincide with a source vertex take its values unchanged
    src = load_sphere(default_sphere("fsaverage5", "L"))
    d, i = cKDTree(src.coords).query(icosphere(6).vertices)
    near = (d < 0.05) & mask & sd.mask[i]
    assert near.sum() > 20
    np.testing.assert_allclose(data[near], sd.data[i[near]], rtol=1e-3, atol=1e-2)


def test_sphere_mismatch(surface_root):
    sd = read_surface(surface_root / FSA5.format(h="l"))
    with pytest.raises(DataFileError, match=r"10242 vertices .*32492") as err:
        to_template(sd, sphere(surface_root, "L"))
    assert FSA5.format(h="l").split("/")[1] in str(err.value)
    left = read_surface(surface_root / SULC, "L")
    with pytest.raises(DataFileError, match="hemisphere L, but sphere .*hemisphere R"):
        to_template(left, sphere(surface_root, "R"))
    with pytest.raises(DataFileError, match="has 32492 vertices but the data have 10242"):
        resample(sd.data, sphere(surface_root, "L"), 6)
    with pytest.raises(DataFileError, match="no packaged registered sphere for mesh 'fs_LR_32k'"):
        to_template(left)
