"""Speed and scale (issue 12): CPU training path, frame-layout surface stores."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import nibabel as nib
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from neurokit.data.dataset import PatchDataset
from neurokit.store.patch_store import PatchStore
from neurokit.io.surface import read_surface
from neurokit.models import CBraMod
from neurokit.models.cbramod import CBraModConfig, CrissCrossLayer, _AddMaskedHalves, _FeedForward, _residual_dropout
from neurokit.models.dropout import dropout_mask, fast_dropout
from neurokit.cards.recipes import SurfaceRecipe
from neurokit.preprocessing.surface.patching import frame_patches, to_template
from neurokit.preprocessing.surface.store import SurfaceRun, write_surface_store

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


@pytest.mark.slow
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


def test_dropout_mask_in_other_dtypes():
    torch.manual_seed(0)
    m = dropout_mask(torch.empty(200_000, dtype=torch.float64), 0.1)
    assert m.dtype == torch.float64 and set(torch.unique(m).tolist()) == {0.0, 1 / 0.9}
    assert abs((m == 0).double().mean().item() - 0.1) < 0.005  # 7 binomial standard deviations


def test_fused_feed_forward_and_residual_dropout_equal_autograd_ops():
    """The CPU training path's hand-written backward equals autograd through the plain ops, masks given."""
    torch.manual_seed(0)
    layer = CrissCrossLayer(CBraModConfig())
    h = torch.randn(2, 5, 3, 200, requires_grad=True)
    x = torch.randn(2, 5, 3, 200, requires_grad=True)
    m1, m2 = dropout_mask(torch.empty(2, 5, 3, 800), 0.3), dropout_mask(torch.empty(2, 5, 3, 200), 0.3)
    assert (m1 == 0).any() and (m2 == 0).any()
    params = [h, x, layer.linear1.weight, layer.linear1.bias, layer.linear2.weight, layer.linear2.bias]

    def grads(fn):
        y = fn()
        out = torch.autograd.grad((y**2).sum(), params)
        return y.detach(), out

    fused = grads(lambda: _residual_dropout(x, _FeedForward.apply(h, *params[2:], m1), m2))
    plain = grads(lambda: x + m2 * layer.linear2(m1 * F.gelu(layer.linear1(h))))
    torch.testing.assert_close(fused[0], plain[0], rtol=0, atol=1e-6)
    for a, b in zip(fused[1], plain[1]):
        assert _rel_err(a, b) < 1e-6  # float rounding (sums taken in another order)
    # the attention residual: halves written in place, one of them a transposed view as in the layer
    ys = torch.randn(2, 3, 5, 100, requires_grad=True)
    yt = torch.randn(2, 5, 3, 100, requires_grad=True)
    for mask in (m2, None):
        y1 = _AddMaskedHalves.apply(x, ys.transpose(1, 2), yt, mask)
        y2 = x + (1 if mask is None else mask) * torch.cat([ys.transpose(1, 2), yt], dim=-1)
        torch.testing.assert_close(y1, y2, rtol=0, atol=1e-6)  # addcmul may fuse the multiply-add
        g1 = torch.autograd.grad((y1**2).sum(), [x, ys, yt])
        g2 = torch.autograd.grad((y2**2).sum(), [x, ys, yt])
        for a, b in zip(g1, g2):
            torch.testing.assert_close(a, b, rtol=0, atol=1e-5)


@pytest.mark.slow
def test_cpu_training_path_equals_module_path_and_fixture(fixtures_root, monkeypatch):
    """Dropout off, training mode, autograd on (the fused CPU path): the released model's outputs on the
    reference fixture, and the module-by-module path's outputs and gradients."""
    fx = torch.load(fixtures_root / "cbramod_reference_fixture.pt", weights_only=True)
    model = CBraMod(dropout=0.0, attn_backend="torch")
    model.load_state_dict(fx["state_dict"])
    c = fx["cases"]["c19_n4_masked"]
    x, mask = c["x"][:2], c["mask"][:2]

    def run():
        model.zero_grad()
        y = model.train()(x, mask=mask)
        (y**2).mean().backward()
        return y.detach(), [p.grad.clone() for p in model.parameters() if p.requires_grad]

    y_fused, g_fused = run()
    assert (y_fused - c["y"][:2]).abs().max().item() <= 1e-4
    monkeypatch.setattr(CrissCrossLayer, "_fused_cpu_step", lambda self, x: False)
    y_plain, g_plain = run()
    torch.testing.assert_close(y_fused, y_plain, rtol=0, atol=1e-6)
    for a, b in zip(g_fused, g_plain):
        assert _rel_err(a, b) < 1e-5


def _rel_err(a: torch.Tensor, b: torch.Tensor) -> float:
    """Largest difference relative to the largest magnitude (per-element relative errors blow up near 0)."""
    return float((a - b).abs().max() / b.abs().max())


def test_cpu_training_path_leaves_a_forced_triton_backend_alone():
    model = CBraMod(n_layers=1, attn_backend="triton")
    layer, x = model.encoder.layers[0], torch.zeros(1, 2, 2, 200)
    assert not layer._fused_cpu_step(x)  # the Triton kernel (TRITON_INTERPRET runs) is not bypassed
    model.set_attn_backend("torch")
    assert layer._fused_cpu_step(x)
    with torch.no_grad():
        assert not layer._fused_cpu_step(x)


def test_training_step_equals_the_release_structure():
    """``benchmarks/eeg_pipeline.py``'s baseline (two nn.MultiheadAttention, the release's patch embedding)
    gives CBraMod's masked-patch loss and gradients, dropout off: the speed comparison is like for like."""
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "eeg_pipeline.py"
    spec = importlib.util.spec_from_file_location("_eeg_pipeline_bench", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    d_loss, d_grad = bench.check_same_training_step(n_layers=2, C=7, N=3)
    assert d_loss < 1e-6 and d_grad < 1e-4
    assert bench.check_same_outputs(n_layers=2) < 1e-4


def test_preprocessing_floor_parts_are_timed_on_the_same_files(eeg_root):
    """``eeg_pipeline.py --only floor``: each part timed on EEGMMIDB S001's 3 imagery runs, the FFT part at the
    lengths MNE's plan gives them, the write of the store's own windows (one range per recording)."""
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "eeg_pipeline.py"
    spec = importlib.util.spec_from_file_location("_eeg_pipeline_floor", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    t = bench.bench_floor(eeg_root, [1], repeats=1)
    assert set(t) == {"read", "ffts", "write", "sha256", "prepare"} and min(t.values()) > 0
    assert t["prepare"] > t["read"] and t["prepare"] > t["ffts"]

    class Store:  # two recordings of 3 and 4 windows
        attrs = {"sources": [{"n_windows": 3}, {"n_windows": 4}]}

    assert bench._source_ranges(Store()) == [(0, 3), (3, 7)]


# surface stores: every frame once -----------------------------------------------------------------------
@pytest.fixture(scope="module")
def spheres(surface_root):
    return {h: surface_root / f"hcp_fs_LR32k/S1200.{h}.sphere.32k_fs_LR.surf.gii" for h in "LR"}


@pytest.mark.slow
def test_frame_layout_store_reads_the_tubelets(surface_root, spheres, tmp_path):
    """Stride-1 tubelets from a real CIFTI run: each frame stored once, processed 2 frames at a time, and
    every sample read back equals the tubelet cut from the whole run z-scored in float64."""
    rec = SurfaceRecipe(grid="ico6/ico2", tubelet=3, stride=1)
    out = write_surface_store(
        tmp_path / "s.h5", [SurfaceRun(surface_root / MSC, "MSC01")], rec, spheres=spheres, chunk=2
    )
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
        out = write_surface_store(
            tmp_path / "s.h5",
            [SurfaceRun(bad, "2"), SurfaceRun(surface_root / MSC, "1")],
            rec,
            spheres=spheres,
            skip_bad=True,
        )
    st = PatchStore(out)
    assert len(st) == 2 and set(st.meta["subject"]) == {"1"} and len(st.attrs["sources"]) == 1
    import h5py

    with h5py.File(out) as f:
        assert f["frames"].shape[0] == 10 and f["sample_start"][:].tolist() == [0, 5]


# prepare on workers, shard sets -------------------------------------------------------------------------
LR = dict(task="left_right_imagery", channels="sensorimotor", progress=False)


def _same_samples(a, b):
    import h5py

    with h5py.File(a) as fa, h5py.File(b) as fb:
        np.testing.assert_array_equal(fa["patches"][:], fb["patches"][:])
        np.testing.assert_array_equal(fa["labels"][:], fb["labels"][:])


@pytest.mark.slow
def test_prepare_on_two_workers_writes_the_same_bytes(lr_store, eeg_root, tmp_path):
    from neurokit.pipelines.prepare import prepare

    out = prepare("physionet_mi", tmp_path / "w2.h5", data_root=eeg_root, subjects=[1, 2], n_jobs=2, **LR)
    assert out.read_bytes() == lr_store.read_bytes()


def test_shard_set_resume_read_and_merge(lr_store, eeg_root, tmp_path):
    from neurokit._utils.errors import StoreError
    from neurokit.store.shards import merge_shard_sets, read_index
    from neurokit.pipelines.prepare import prepare

    a = prepare("physionet_mi", tmp_path / "a", data_root=eeg_root, subjects=[1], shards=True, **LR)
    idx = read_index(a)
    assert idx["complete"] and len(idx["shards"]) == 3  # one shard per recording (runs 4, 8, 12)
    # a run stopped after its first recording: the index lists one shard and is not complete
    (a / idx["shards"][2]["file"]).unlink()
    (a / idx["shards"][1]["file"]).unlink()
    (a / "index.json").write_text(json.dumps({**idx, "complete": False, "shards": idx["shards"][:1]}))
    with pytest.raises(StoreError, match="unfinished shard set .* resume=True"):
        PatchDataset(a)
    with pytest.raises(FileExistsError, match="resume=True"):
        prepare("physionet_mi", a, data_root=eeg_root, subjects=[1], shards=True, **LR)
    prepare("physionet_mi", a, data_root=eeg_root, subjects=[1], shards=True, resume=True, **LR)
    assert [s["key"] for s in read_index(a)["shards"]] == [s["key"] for s in idx["shards"]]
    b = prepare("physionet_mi", tmp_path / "b", data_root=eeg_root, subjects=[2], shards=True, **LR)
    merged = merge_shard_sets([a, b], tmp_path / "ab")
    ds, ref = PatchDataset(merged), PatchDataset(lr_store)
    assert len(ds) == len(ref) and ds.index.dtype == np.int64 and ds.index.shape == (len(ref), 2)
    np.testing.assert_array_equal(ds.labels, ref.labels)
    for k in (0, len(ds) // 2, len(ds) - 1):
        assert torch.equal(ds[k][0], ref[k][0])
    other = prepare(
        "physionet_mi",
        tmp_path / "c",
        data_root=eeg_root,
        subjects=[3],
        shards=True,
        task="left_right_imagery",
        channels=["C3", "Cz", "C4"],
        progress=False,
    )
    with pytest.raises(StoreError, match="differs from .* in ch_names, recipe"):
        merge_shard_sets([a, other], tmp_path / "ac")


@pytest.mark.slow
def test_prepare_on_a_dask_cluster_survives_a_killed_worker(lr_store, eeg_root, tmp_path, monkeypatch):
    """Two worker processes on loopback; the worker that runs the third recording's task dies in it (os._exit,
    once: a marker file records the kill, so the task's rerun elsewhere goes through): its file is redone
    elsewhere and the store equals the local one byte for byte."""
    distributed = pytest.importorskip("distributed")
    import time

    import neurokit._utils.parallel as parallel
    from neurokit.pipelines.prepare import prepare

    marker, k = tmp_path / "killed", 2
    real_map = parallel.map_ordered

    def map_with_a_kill(fn, items, **kw):
        def die_once_at_k(job):  # pickled by value (a closure), so the workers need not import this file
            import os

            i, item = job
            if i == k:
                try:
                    fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
                except FileExistsError:
                    pass  # the rerun of the killed task
                else:
                    os.write(fd, f"{distributed.get_worker().address} {os.getpid()}".encode())
                    os.close(fd)
                    os._exit(1)  # the worker process dies in the middle of its task
            return fn(item)

        return real_map(die_once_at_k, list(enumerate(items)), **kw)

    monkeypatch.setattr(parallel, "map_ordered", map_with_a_kill)
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        before = set(client.scheduler_info()["workers"])
        out = prepare(
            "physionet_mi",
            tmp_path / "dask.h5",
            data_root=eeg_root,
            subjects=[1, 2],
            scheduler=cluster.scheduler_address,
            **LR,
        )
        victim = marker.read_text().split()[0]  # the kill happened, in the k-th recording's task
        assert victim in before
        deadline = time.monotonic() + 30  # the scheduler drops the dead worker (it already has: the task was rerun)
        while victim in client.scheduler_info()["workers"] and time.monotonic() < deadline:
            time.sleep(0.1)
        assert victim not in client.scheduler_info()["workers"]
    assert out.read_bytes() == lr_store.read_bytes()
