"""Speed and scale (issue 12): CPU training path, frame-layout surface stores."""
from __future__ import annotations

import nibabel as nib
import numpy as np
import pytest
import torch

from neurokit.data.dataset import PatchDataset
from neurokit.data.store import PatchStore
from neurokit.io.surface import read_surface
from neurokit.models import CBraMod
from neurokit.models.cbramod import CrissCrossLayer
from neurokit.models.dropout import fast_dropout
from neurokit.surface.patching import SurfaceRecipe, frame_patches, to_template
from neurokit.surface.store import SurfaceRun, write_surface_store

MSC = "cifti/sub-MSC01_test.dtseries.nii"


# CBraMod on the CPU -------------------------------------------------------------------------------------
def test_fast_dropout_rate_scale_gradient_and_seed():
    x = torch.ones(1_000_000, requires_grad=True)
    torch.manual_seed(3)
    y = fast_dropout(x, 0.25)
    kept = (y > 0).float().mean().item()
    assert abs(kept - 0.75) < 0.003  # 7 binomial standard deviations
    u = torch.unique(y)
    assert len(u) == 2 and u[0] == 0 and abs(u[1].item() - 4 / 3) < 1e-6
    y.sum().backward()
    assert torch.equal(x.grad, y.detach())  # d(mask·x/(1-p))/dx = mask/(1-p)
    torch.manual_seed(3)
    assert torch.equal(fast_dropout(x.detach(), 0.25), y.detach())  # reproducible under torch.manual_seed
    assert fast_dropout(x, 0.25, training=False) is x


def test_per_group_projection_equals_fused_projection(monkeypatch):
    """The CPU path (one projection per head group) gives the fused block-diagonal path's outputs and
    gradients (dropout off, training mode)."""
    torch.manual_seed(0)
    model = CBraMod(n_layers=2, dropout=0.0).train()
    x = torch.randn(2, 7, 3, 200)

    def run():
        model.zero_grad()
        y = model(x)
        (y**2).mean().backward()
        return y.detach(), [p.grad.clone() for p in model.parameters() if p.requires_grad]

    y_cpu, g_cpu = run()
    monkeypatch.setattr(CrissCrossLayer, "_fused_path", lambda self, h: True)
    y_fused, g_fused = run()
    torch.testing.assert_close(y_cpu, y_fused, atol=2e-5, rtol=1e-4)
    for a, b in zip(g_cpu, g_fused):
        torch.testing.assert_close(a, b, atol=2e-5, rtol=1e-3)


# surface stores: every frame once -----------------------------------------------------------------------
@pytest.fixture(scope="module")
def spheres(surface_root):
    return {h: surface_root / f"hcp_fs_LR32k/S1200.{h}.sphere.32k_fs_LR.surf.gii" for h in "LR"}


def test_frame_layout_store_reads_the_tubelets(surface_root, spheres, tmp_path):
    """Stride-1 tubelets from a real CIFTI run: each frame stored once, processed 2 frames at a time, and
    every sample read back equals the tubelet cut from the whole run z-scored in float64."""
    rec = SurfaceRecipe(grid="ico6/ico2", tubelet=3, stride=1)
    out = write_surface_store(tmp_path / "s.h5", [SurfaceRun(surface_root / MSC, "MSC01")], rec, spheres=spheres,
                              chunk=2)
    st = PatchStore(out)
    assert len(st) == 6 and st.sample_shape == (3, 320, 153)
    import h5py

    with h5py.File(out) as f:
        assert f["frames"].shape == (10, 40962)  # 5 frames × 2 hemispheres, once each
        assert "patches" not in f
    for k, hemi in enumerate("LR"):
        sd = read_surface(surface_root / MSC, hemi)
        data, mask = to_template(sd, spheres[hemi])
        cx = data[mask].astype(np.float64)
        z = np.zeros(data.shape)
        z[mask] = (cx - cx.mean(0)) / cx.std(0)
        x = frame_patches(z.astype(np.float32), 2)
        for j in range(3):
            np.testing.assert_allclose(st.patches(3 * k + j), x[j : j + 3], atol=2e-5)
    np.testing.assert_allclose(st.meta["onset"][:3], np.arange(3) * st.attrs["tr"])
    xb, _ = PatchDataset(out)[4]
    assert tuple(xb.shape) == (3, 320, 153)
    np.testing.assert_array_equal(st.patches(np.array([1, 4]))[1], xb.numpy())


def test_failing_hemisphere_leaves_nothing_of_its_run(surface_root, spheres, tmp_path):
    """A run whose right hemisphere fails after the left one was written: with skip_bad the store keeps
    only the good run's frames and samples."""
    img = nib.load(surface_root / MSC)
    data = np.asarray(img.dataobj, dtype=np.float32).copy()
    data[2, 29696 + 100] = np.nan  # a NaN on right cortex, frame 2
    bad = tmp_path / "sub-2_bad.dtseries.nii"
    nib.save(nib.Cifti2Image(data, header=img.header), str(bad))
    rec = SurfaceRecipe(grid="ico6/ico2", tubelet=5)
    with pytest.warns(RuntimeWarning, match=r"skipped .*sub-2_bad\.dtseries\.nii.*frames 2\)"):
        out = write_surface_store(tmp_path / "s.h5", [SurfaceRun(bad, "2"), SurfaceRun(surface_root / MSC, "1")], rec,
                                  spheres=spheres, skip_bad=True)
    st = PatchStore(out)
    assert len(st) == 2 and set(st.meta["subject"]) == {"1"} and len(st.attrs["sources"]) == 1
    import h5py

    with h5py.File(out) as f:
        assert f["frames"].shape[0] == 10 and f["sample_start"][:].tolist() == [0, 5]
