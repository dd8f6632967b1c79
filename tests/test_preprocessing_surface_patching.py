"""Patch tensors, tubelets, z-scoring and surface patch stores from the real fsaverage5 and CIFTI runs."""

from __future__ import annotations

import numpy as np
import pytest

from neurokit._utils.errors import ConfigError, DataFileError
from neurokit.data.dataset import PatchDataset
from neurokit.store.patch_store import PatchStore
from neurokit._utils.hashing import file_sha256
from neurokit.io.surface import read_surface
from neurokit.geometry.patches import patch_table
from neurokit.cards.recipes import SurfaceRecipe
from neurokit.preprocessing.surface.patching import frame_patches, surface_samples, tubelets, zscore_frames
from neurokit.preprocessing.surface.store import SurfaceRun, write_surface_store

FSA5 = "fsaverage5_rest/sub-010188_ses-02_task-rest_acq-AP_run-01.fsa5.{h}h.first100TR.mgz"
MSC = "cifti/sub-MSC01_test.dtseries.nii"


def test_zscore_frames():
    rng = np.random.default_rng(0)
    x = rng.normal(3.0, 2.0, size=(500, 4))
    mask = np.arange(500) % 5 != 0
    z = zscore_frames(x, mask)
    np.testing.assert_allclose(z[mask].mean(0), 0, atol=1e-6)
    np.testing.assert_allclose(z[mask].std(0), 1, atol=1e-5)
    assert np.all(z[~mask] == 0)
    x[:, 2] = 7.0
    with pytest.raises(DataFileError, match=r"frames \[2\] are constant"):
        zscore_frames(x, mask, source="run.mgz")


def test_tubelets():
    x = np.arange(10)[:, None, None] * np.ones((10, 4, 6))
    t, starts = tubelets(x, 3)
    assert t.shape == (3, 3, 4, 6) and starts.tolist() == [0, 3, 6]
    assert t[1, :, 0, 0].tolist() == [3, 4, 5]
    t, starts = tubelets(x, 4, stride=2)
    assert starts.tolist() == [0, 2, 4, 6] and t[-1, -1, 0, 0] == 9
    assert tubelets(x, 11)[0].shape == (0, 11, 4, 6)


def test_recipe_validation():
    assert SurfaceRecipe(grid="ico3").grid == "ico6/ico3"
    with pytest.raises(ConfigError, match="tubelet"):
        SurfaceRecipe(tubelet=0)
    with pytest.raises(ConfigError):
        SurfaceRecipe(grid="ico7")


def test_fsaverage5_samples(surface_root):
    sd = read_surface(surface_root / FSA5.format(h="l"))
    x, onsets, mask = surface_samples(sd, SurfaceRecipe(grid="ico3", tubelet=3))
    assert x.shape == (33, 3, 1280, 45) and x.dtype == np.float32
    np.testing.assert_allclose(onsets[:3], [0.0, 3.0, 6.0])
    # per-frame z-scores over the template cortex: every frame has mean 0, sd 1 on the mask's patches
    flat = x[0, 1]
    inside = mask[patch_table(3)]
    assert abs(flat[inside].mean()) < 0.05 and abs(flat[inside].std() - 1) < 0.05
    assert np.all(flat[~inside] == 0)
    # consecutive fMRI frames are strongly correlated (real data, not noise)
    assert np.corrcoef(x[0, 0][inside], x[0, 1][inside])[0, 1] > 0.5


def test_frame_patches_layout(surface_root):
    sd = read_surface(surface_root / MSC, "L")
    from neurokit.preprocessing.surface.patching import to_template

    data, mask = to_template(sd, surface_root / "hcp_fs_LR32k/S1200.L.sphere.32k_fs_LR.surf.gii")
    x = frame_patches(data, 2)
    assert x.shape == (5, 320, 153)
    t = patch_table(2)
    np.testing.assert_array_equal(x[4, 17], data[t[17], 4])


def test_surface_store_from_fsaverage5(surface_root, tmp_path):
    runs = [SurfaceRun(surface_root / FSA5.format(h=h), subject="010188", session="02", run="01") for h in "lr"]
    out = write_surface_store(tmp_path / "fsa5.h5", runs, SurfaceRecipe(grid="ico3", tubelet=3), card="fsaverage5_rest")
    st = PatchStore(out)
    assert st.modality == "surface" and len(st) == 66 and st.sample_shape == (3, 1280, 45)
    a = st.attrs
    assert (a["tr"], a["grid"], a["mesh"], a["hemispheres"], a["card"]) == (
        1.0,
        "ico6/ico3",
        "fsaverage5",
        ["L", "R"],
        "fsaverage5_rest",
    )
    assert a["sources"][0]["sha256"] == file_sha256(runs[0].path)
    assert a["recipe"]["tubelet"] == 3 and a["vertices_per_patch"] == 45
    assert st.meta["hemi"].tolist() == ["L"] * 33 + ["R"] * 33
    np.testing.assert_allclose(st.meta["onset"][33:36], [0, 3, 6])
    ds = PatchDataset(out)
    x, y = ds[40]
    assert tuple(x.shape) == (3, 1280, 45) and int(y) == -1
    with pytest.raises(FileExistsError):
        write_surface_store(tmp_path / "fsa5.h5", runs)


def test_surface_store_from_cifti(surface_root, tmp_path):
    spheres = {h: surface_root / f"hcp_fs_LR32k/S1200.{h}.sphere.32k_fs_LR.surf.gii" for h in "LR"}
    out = write_surface_store(
        tmp_path / "msc.h5",
        [SurfaceRun(surface_root / MSC, "MSC01", "test", "1", label=1.5)],
        SurfaceRecipe(grid="ico2", tubelet=1),
        spheres=spheres,
        label_dtype="float32",
    )
    st = PatchStore(out)
    assert len(st) == 10 and st.sample_shape == (1, 320, 153) and st.attrs["mesh"] == "fs_LR_32k"
    assert np.all(st.labels == 1.5)
    with pytest.raises(DataFileError, match="fewer than one tubelet of 8"):
        write_surface_store(
            tmp_path / "short.h5", [SurfaceRun(surface_root / MSC, hemi="L")], SurfaceRecipe(tubelet=8), spheres=spheres
        )
    assert not (tmp_path / "short.h5").exists() and not (tmp_path / "short.h5.partial").exists()
