"""Defects from the fresh-user review of the surface path: each test fails on the code before the fix."""

from __future__ import annotations

import shutil
import warnings

import nibabel as nib
import numpy as np
import pytest
from typer.testing import CliRunner

from neurokit._utils.errors import CardError, ConfigError, DataFileError
from neurokit.cli.main import app
from neurokit.store.patch_store import PatchStore
from neurokit.io.surface import read_surface
from neurokit.pipelines.prepare import prepare
from neurokit.preprocessing.surface.prepare import subject_from_name
from neurokit.cards.recipes import SurfaceRecipe
from neurokit.preprocessing.surface.patching import to_template
from neurokit.preprocessing.surface.resample import load_sphere
from neurokit.preprocessing.surface.store import SurfaceRun, write_surface_store

HCP = "hcp_fs_LR32k"
FSA5_LH = "fsaverage5_rest/sub-010188_ses-02_task-rest_acq-AP_run-01.fsa5.lh.first100TR.mgz"
runner = CliRunner()


@pytest.fixture(scope="module")
def sulc_l(surface_root):
    return read_surface(surface_root / HCP / "S1200.sulc_MSMAll.32k_fs_LR.dscalar.nii", "L")


def _gifti_func(path, data, hemi=None):
    meta = {"AnatomicalStructurePrimary": {"L": "CortexLeft", "R": "CortexRight"}[hemi]} if hemi else {}
    arrays = [
        nib.gifti.GiftiDataArray(np.ascontiguousarray(col, np.float32), intent="NIFTI_INTENT_TIME_SERIES", meta=meta)
        for col in data.T
    ]
    nib.save(nib.gifti.GiftiImage(darrays=arrays), str(path))
    return path


# 1. wrong sphere -------------------------------------------------------------------------------------
def test_right_sphere_under_neutral_name_refused_by_metadata(surface_root, sulc_l, tmp_path):
    neutral = tmp_path / "template_sphere.surf.gii"
    shutil.copy(surface_root / HCP / "S1200.R.sphere.32k_fs_LR.surf.gii", neutral)
    with pytest.raises(
        DataFileError, match=r"sphere .*template_sphere.* is hemisphere R \(from its metadata\).*spheres="
    ):
        to_template(sulc_l, neutral)


def test_midthickness_as_sphere_refused(surface_root, tmp_path):
    mid = surface_root / HCP / "S1200.L.midthickness_MSMAll.32k_fs_LR.surf.gii"
    with pytest.raises(DataFileError, match="GeometricType 'Anatomical'.*not a sphere.*spheres="):
        load_sphere(mid)
    img = nib.load(mid)  # the same surface without its GeometricType: caught by the radius spread
    for d in img.darrays:
        d.meta = nib.gifti.GiftiMetaData({"AnatomicalStructurePrimary": "CortexLeft"})
    bare = tmp_path / "mid.L.surf.gii"
    nib.save(img, str(bare))
    with pytest.raises(DataFileError, match=r"mid\.L\.surf\.gii: vertex radii vary by .*not a sphere"):
        load_sphere(bare)
    assert load_sphere(surface_root / HCP / "S1200.L.sphere.32k_fs_LR.surf.gii").hemi == "L"


# 2. plot-surface hemisphere of --surf ------------------------------------------------------------------
def test_plot_surf_of_other_hemisphere_refused(surface_root, tmp_path):
    from neurokit.plotting.surface import plot_surface

    dscalar = surface_root / HCP / "S1200.sulc_MSMAll.32k_fs_LR.dscalar.nii"
    with pytest.raises(DataFileError, match="surf_mesh='.*S1200.L.inflated.*' is hemisphere L, but hemi='R'"):
        plot_surface(
            dscalar,
            tmp_path / "x.png",
            hemi="R",
            surf_mesh=surface_root / HCP / "S1200.L.inflated_MSMAll.32k_fs_LR.surf.gii",
        )
    with pytest.raises(DataFileError, match="no data frames"):
        plot_surface(surface_root / HCP / "S1200.L.sphere.32k_fs_LR.surf.gii", tmp_path / "x.png")
    r = runner.invoke(
        app,
        [
            "plot-surface",
            str(dscalar),
            "--hemi",
            "R",
            "-o",
            str(tmp_path / "x.png"),
            "--surf",
            str(surface_root / HCP / "S1200.L.inflated_MSMAll.32k_fs_LR.surf.gii"),
        ],
    )
    assert r.exit_code != 0 and "ishemisphereL,but--hemiR" in "".join(r.output.split())
    assert not (tmp_path / "x.png").exists()


# 3. --skip-bad, channels -----------------------------------------------------------------------------
def test_surface_preparer_skip_bad_and_channels(surface_root, tmp_path):
    bad = tmp_path / "sub-02_broken.lh.mgz"
    bad.write_bytes(b"not an mgh file")
    good = surface_root / FSA5_LH
    with pytest.raises(ConfigError, match=r"\(modality surface\): channels= does not apply to it"):
        prepare("fsaverage5_rest", tmp_path / "c.h5", files=[good], channels="C3,Cz")
    with pytest.raises(DataFileError, match="sub-02_broken"):
        prepare("fsaverage5_rest", tmp_path / "a.h5", files=[good, bad], progress=False)
    rh = surface_root / FSA5_LH.replace(".lh.", ".rh.")
    with pytest.raises(CardError, match="no file of hemisphere R"):
        prepare("fsaverage5_rest", tmp_path / "r.h5", files=[good, bad], hemi="R")
    with pytest.warns(RuntimeWarning, match="skipped .*sub-02_broken"):
        out = prepare(
            "fsaverage5_rest", tmp_path / "b.h5", files=[good, bad, rh], skip_bad=True, hemi="L", progress=False
        )
    st = PatchStore(out)
    assert len(st) == 33 and [s["path"] for s in st.attrs["sources"]] == [str(good)]


# 4. clip_retrieval without boundaries -------------------------------------------------------------------
def test_clip_retrieval_without_boundaries_refused(surface_root, tmp_path):
    with pytest.raises(CardError, match="recording.clips.boundaries.*HCP wiki"):
        prepare(
            "hcp7t_movie",
            tmp_path / "s.h5",
            task="clip_retrieval",
            files=[surface_root / "cifti/sub-MSC01_test.dtseries.nii"],
        )
    assert not (tmp_path / "s.h5").exists()


# 5. truncated CIFTI ------------------------------------------------------------------------------------
def test_truncated_cifti_names_file(surface_root, tmp_path):
    src = surface_root / "cifti/sub-MSC01_test.dtseries.nii"
    cut = tmp_path / "cut.dtseries.nii"
    cut.write_bytes(src.read_bytes()[: src.stat().st_size // 2])
    with pytest.raises(DataFileError, match=r"cut\.dtseries\.nii: truncated file"):
        read_surface(cut, "L")


# 6. TR -------------------------------------------------------------------------------------------------
def test_tr_checked_and_unknown_tr_recorded_as_nan(surface_root, tmp_path):
    good = surface_root / FSA5_LH
    img = nib.load(good)
    rec = SurfaceRecipe(grid="ico6/ico3", tubelet=3)
    with pytest.warns(RuntimeWarning, match=r"first100TR\.mgz: TR 1 s in the file, but the data card says 2 s"):
        write_surface_store(tmp_path / "a.h5", [SurfaceRun(good, "1")], rec, expected_tr=2.0)
    no_tr = tmp_path / "sub-1.lh.mgz"  # a fresh header: TR 0 (unknown)
    nib.save(nib.MGHImage(np.asarray(img.dataobj)[..., :6], img.affine), str(no_tr))
    with pytest.warns(RuntimeWarning, match="tr is NaN and sample onsets are in frames"):
        out = write_surface_store(tmp_path / "b.h5", [SurfaceRun(no_tr, "1")], rec)
    st = PatchStore(out)
    assert np.isnan(st.attrs["tr"]) and st.attrs["onset_unit"] == "frames"
    np.testing.assert_array_equal(st.meta["onset"], [0, 3])
    one = tmp_path / "map.lh.mgz"
    nib.save(nib.MGHImage(np.asarray(img.dataobj)[..., 0], img.affine), str(one))
    with pytest.warns(RuntimeWarning, match="scalar file .* not a time series"):
        write_surface_store(tmp_path / "c.h5", [SurfaceRun(one, "1")], SurfaceRecipe(grid="ico6/ico3", tubelet=1))


# 7. data already on ico6 -------------------------------------------------------------------------------
def test_ico6_data_explicit_mesh_skips_resampling(surface_root, tmp_path):
    assert read_surface(surface_root / "metrics-lab_ico/ico-6.L.surf.gii").mesh == "ico6"
    assert read_surface(surface_root / "metrics-lab_ico/ico-5.L.surf.gii").mesh == "ico5"
    rng = np.random.default_rng(0)
    x = rng.standard_normal((40962, 3)).astype(np.float32)
    f = _gifti_func(tmp_path / "sub-7.L.func.gii", x, "L")
    with pytest.raises(
        DataFileError, match=r"sub-7\.L\.func\.gii: no packaged registered sphere for mesh 'fsaverage6'.*mesh='ico6'"
    ):
        to_template(read_surface(f))
    sd = read_surface(f, mesh="ico6")
    out, mask = to_template(sd)
    np.testing.assert_array_equal(out, x)
    assert mask.all()
    fr = _gifti_func(tmp_path / "sub-7.R.func.gii", x, "R")
    # right data on ico6 are numbered like ico-6.R, the x-mirror of the template: mirrored, they are on it
    out_r, _ = to_template(read_surface(fr, mesh="ico6"))
    np.testing.assert_array_equal(out_r, x)
    store = tmp_path / "ico6.h5"
    r = runner.invoke(
        app, ["prepare", "fsaverage5_rest", "-f", str(f), "-o", str(store), "--mesh", "ico6", "--hemi", "L"]
    )
    assert r.exit_code == 0, r.output
    st = PatchStore(store)
    assert len(st) == 1 and st.attrs["mesh"] == "ico6" and set(st.meta["subject"]) == {"7"}
    r = runner.invoke(app, ["prepare", "eeg_folder", "-o", str(tmp_path / "e.h5"), "--mesh", "ico6"])
    assert r.exit_code != 0 and "(modalityeeg):--meshdoesnotapplytoit" in "".join(r.output.split())


# 8. medial wall NaN ------------------------------------------------------------------------------------
def test_nan_medial_wall_excluded_but_nan_on_cortex_refused(surface_root, tmp_path):
    img = nib.load(surface_root / FSA5_LH)
    arr = np.asarray(img.dataobj, dtype=np.float32)[..., :4].copy()
    arr[:50] = np.nan
    p = tmp_path / "wall.lh.mgz"
    nib.save(nib.MGHImage(arr, img.affine), str(p))
    sd = read_surface(p)
    assert not sd.mask[:50].any() and np.isfinite(sd.data).all()
    arr[100, 0, 0, 2] = np.nan  # one frame only: still refused
    nib.save(nib.MGHImage(arr, img.affine), str(p))
    with pytest.raises(DataFileError, match="1 of 4 frames hold NaN/inf on cortex"):
        read_surface(p)


# 10. cache ---------------------------------------------------------------------------------------------
def test_cache_shape_checked_and_cache_var_pointing_at_file(tmp_path, monkeypatch):
    import scipy.sparse as sp

    import importlib

    rs = importlib.import_module("neurokit.preprocessing.surface.resample")

    monkeypatch.setenv("NEUROKIT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(rs, "_MATRICES", {})
    M = rs.resampling_matrix(2, 3)
    (path,) = (tmp_path / "cache").glob("resample_v*_162_*_642.npz")
    sp.save_npz(path, sp.csr_matrix((5, 5)))  # a stale file under the same name
    monkeypatch.setattr(rs, "_MATRICES", {})
    M2 = rs.resampling_matrix(2, 3)
    assert M2.shape == M.shape == (642, 162) and (M2 != M).nnz == 0
    f = tmp_path / "afile"
    f.write_text("x")
    monkeypatch.setenv("NEUROKIT_CACHE", str(f))
    monkeypatch.setattr(rs, "_MATRICES", {})
    with pytest.raises(ConfigError, match="NEUROKIT_CACHE=.*afile: is a file"):
        rs.resampling_matrix(1, 2)


# 13. minor ---------------------------------------------------------------------------------------------
def test_minor_review_items(surface_root, tmp_path):
    from neurokit.models.sit import sit_config
    from neurokit.geometry.patches import parse_grid

    with pytest.raises(ConfigError, match="K in 1…5"):
        parse_grid("ico0")
    with pytest.raises(ConfigError, match="unknown SiT size='huge': expected one of tiny, small, base"):
        sit_config("huge", n_chans=3, n_patches=320, vertices_per_patch=153)
    assert subject_from_name("100610.lh.mgz") == "100610"
    assert subject_from_name("S01.L.dscalar.nii") == "S01"
    assert read_surface(surface_root / "cifti/test.dlabel.nii", "L").frame_names == []
    lying = tmp_path / "sphere.L.surf.gii"
    shutil.copy(surface_root / HCP / "S1200.R.sphere.32k_fs_LR.surf.gii", lying)
    with pytest.warns(RuntimeWarning, match="name says hemisphere L but .* CortexRight"):
        assert read_surface(lying).hemi == "R"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        read_surface(surface_root / HCP / "S1200.L.sphere.32k_fs_LR.surf.gii")


# 12. ico2 patch order vs the metrics-lab CSV --------------------------------------------------------------
def test_reference_patch_order_helper(surface_root):
    import pandas as pd

    from neurokit.geometry.patches import patch_table, reference_patch_order

    ref = pd.read_csv(surface_root / "metrics-lab_ico/triangle_indices_ico_6_sub_ico_2.csv").to_numpy().T
    perm = reference_patch_order(ref)
    assert sorted(perm.tolist()) == list(range(320)) and (perm != np.arange(320)).any()
    assert all(set(patch_table(2)[perm[j]].tolist()) == set(ref[j].tolist()) for j in (0, 17, 319))
    with pytest.raises(ConfigError, match="match no ico6/ico2 patch"):
        reference_patch_order(ref[:, ::-1] + 1)


# 11. label colours --------------------------------------------------------------------------------------
def test_dlabel_colours_from_label_table(surface_root):
    from neurokit.plotting.surface import _label_colors

    path = surface_root / "cifti/test.dlabel.nii"
    cmap = _label_colors(path)
    table = nib.load(path).header.get_axis(0).label[0]
    assert cmap.N == max(table) + 1
    np.testing.assert_allclose(cmap(5), table[5][1], atol=1e-6)
