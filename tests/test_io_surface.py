"""Surface readers on the real CIFTI-2 / GIFTI / FreeSurfer files in ../shared/data/surface."""

from __future__ import annotations

import nibabel as nib
import numpy as np
import pytest

from neurokit._utils.errors import ConfigError, DataFileError
from neurokit.io.surface import SurfaceData, read_cifti_hemispheres, read_surface

MSC = "cifti/sub-MSC01_test.dtseries.nii"
FSA5_L = "fsaverage5_rest/sub-010188_ses-02_task-rest_acq-AP_run-01.fsa5.lh.first100TR.mgz"
SULC = "hcp_fs_LR32k/S1200.sulc_MSMAll.32k_fs_LR.dscalar.nii"


def test_lazy_export(surface_root):
    import neurokit

    sd = neurokit.read_surface(surface_root / FSA5_L)
    assert isinstance(sd, neurokit.SurfaceData)


def test_cifti_dtseries_both_hemispheres(surface_root):
    path = surface_root / MSC
    hemis = read_cifti_hemispheres(path)
    assert sorted(hemis) == ["L", "R"]
    img = nib.load(path)
    raw = np.asarray(img.dataobj)
    for hemi, n_cortex, offset in (("L", 29696, 0), ("R", 29716, 29696)):
        sd = hemis[hemi]
        assert sd.kind == "series" and sd.tr == 1.0 and sd.mesh == "fs_LR_32k"
        assert sd.data.shape == (32492, 5) and sd.data.dtype == np.float32
        assert int(sd.mask.sum()) == n_cortex
        # the brain-model vertex list puts grayordinate j at vertex vert[j]
        structure = "CIFTI_STRUCTURE_CORTEX_LEFT" if hemi == "L" else "CIFTI_STRUCTURE_CORTEX_RIGHT"
        vert = next(bm.vertex for name, _, bm in img.header.get_axis(1).iter_structures() if name == structure)
        np.testing.assert_array_equal(sd.data[vert[100]], raw[:, offset + 100].astype(np.float32))
        assert np.all(sd.data[~sd.mask] == 0)
        assert np.std(sd.data[sd.mask]) > 0


def test_cifti_needs_hemi(surface_root):
    with pytest.raises(ConfigError, match="hemi='L'"):
        read_surface(surface_root / MSC)


def test_cifti_dscalar_and_dlabel(surface_root):
    sulc = read_surface(surface_root / SULC, "L")
    assert sulc.kind == "scalar" and sulc.n_frames == 1 and sulc.frame_names
    values = sulc.data[sulc.mask, 0]
    assert values.min() < -1 and values.max() > 1 and (values < 0).mean() > 0.3  # sulci and gyri
    lab = read_surface(surface_root / "cifti/test.dlabel.nii", "R")
    assert lab.kind == "label" and len(lab.label_table) > 100
    keys = np.unique(lab.data[lab.mask]).astype(int)
    assert set(keys) <= set(lab.label_table)


def test_cifti_without_cortex(surface_root, tmp_path):
    img = nib.load(surface_root / MSC)
    series, bm = img.header.get_axis(0), img.header.get_axis(1)
    sub = np.flatnonzero(~np.char.startswith(bm.name.astype(str), "CIFTI_STRUCTURE_CORTEX"))
    data = np.asarray(img.dataobj)[:, sub]
    out = tmp_path / "subcortex.dtseries.nii"
    nib.Cifti2Image(data, header=(series, bm[sub])).to_filename(out)
    with pytest.raises(DataFileError, match="no cortical surface") as err:
        read_surface(out, "L")
    assert str(out) in str(err.value) and "CIFTI_STRUCTURE_THALAMUS_LEFT" in str(err.value)


def test_mgz_series(surface_root):
    sd = read_surface(surface_root / FSA5_L)
    assert (sd.hemi, sd.mesh, sd.data.shape, sd.tr) == ("L", "fsaverage5", (10242, 100), 1.0)
    assert 0.85 < sd.mask.mean() < 0.95  # medial wall is constant 0


def test_hemi_contradiction(surface_root):
    with pytest.raises(DataFileError, match="hemisphere L"):
        read_surface(surface_root / FSA5_L, "rh")
    with pytest.raises(ConfigError, match="expected one of"):
        read_surface(surface_root / FSA5_L, "middle")


def test_nan_frames(surface_root, tmp_path):
    img = nib.load(surface_root / FSA5_L)
    data = np.asarray(img.dataobj, dtype=np.float32)
    cortex = np.flatnonzero(data[:, 0, 0, 0] != 0)[:5]
    data[cortex, 0, 0, 7] = np.nan
    out = tmp_path / "lh.nan.mgz"
    nib.MGHImage(data, img.affine, img.header).to_filename(out)
    with pytest.raises(DataFileError, match=r"1 of 100 frames.*frames 7") as err:
        read_surface(out)
    assert str(out) in str(err.value)
    assert read_surface(out, allow_nan=True).n_frames == 100


def test_gifti(surface_root):
    func = read_surface(surface_root / "gifti/task.func.gii", "L")
    assert (func.mesh, func.data.shape, func.kind) == ("fsaverage3", (642, 10), "series")
    sphere = read_surface(surface_root / "hcp_fs_LR32k/S1200.R.sphere.32k_fs_LR.surf.gii")
    assert sphere.kind == "geometry" and sphere.hemi == "R" and sphere.faces.shape == (64980, 3)
    np.testing.assert_allclose(np.linalg.norm(sphere.coords, axis=1), 100, atol=1e-3)


@pytest.mark.parametrize("name,count", [("gifti/label.gii", 71723), ("gifti/rh.shape.curv.gii", 133764)])
def test_gifti_unknown_mesh(surface_root, name, count):
    with pytest.raises(DataFileError, match=f"{count} vertices match no known surface mesh") as err:
        read_surface(surface_root / name)
    assert name.split("/")[1] in str(err.value) and "fs_LR_32k 32492" in str(err.value)
    sd = read_surface(surface_root / name, mesh="custom")
    assert sd.n_vertices == count


def test_freesurfer_curv_and_sphere(surface_root):
    curv = read_surface(surface_root / "freesurfer/lh.curv")
    assert (curv.mesh, curv.data.shape, curv.hemi) == ("fsaverage", (163842, 1), "L")
    sph = read_surface(surface_root / "freesurfer/lh.sphere.reg")
    assert sph.kind == "geometry" and sph.n_vertices == 10242 and sph.mesh == "fsaverage5"
    np.testing.assert_allclose(np.linalg.norm(sph.coords, axis=1), 100, atol=0.5)
    with pytest.raises(DataFileError, match="mesh 'fs_LR_32k' has 32492"):
        read_surface(surface_root / "freesurfer/lh.curv", mesh="fs_LR_32k")


def test_repr(surface_root):
    assert "n_frames=100" in repr(read_surface(surface_root / FSA5_L))
    assert isinstance(read_surface(surface_root / FSA5_L), SurfaceData)
