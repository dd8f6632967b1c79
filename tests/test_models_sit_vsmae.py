"""SiT and vsMAE: shapes, tube masking, and pretraining/fine-tuning through the pipelines on real stores."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from neurokit._utils.errors import ConfigError
from neurokit.models.sit import SIT_PRESETS, create_sit, sincos_1d, sit_config
from neurokit.models.vsmae import VSMAE, VSMAEConfig, create_vsmae, tube_mask
from neurokit.cards.recipes import SurfaceRecipe
from neurokit.preprocessing.surface.store import SurfaceRun, write_surface_store

FSA5 = "fsaverage5_rest/sub-010188_ses-02_task-rest_acq-AP_run-01.fsa5.{h}h.first100TR.mgz"
MSC = "cifti/sub-MSC01_test.dtseries.nii"
SMALL = {"depth": 1, "decoder_depth": 1}


pytestmark = pytest.mark.usefixtures("two_torch_threads")


@pytest.fixture(scope="module")
def fsa5_store(surface_root, tmp_path_factory):
    """Labelled: hemisphere (L 0, R 1); three 33-frame segments of the run as runs a/b/c."""
    runs = [
        SurfaceRun(surface_root / FSA5.format(h=h), "010188", "02", seg, label=int(h == "r"), frames=(lo, lo + 33))
        for h in "lr"
        for seg, lo in (("a", 0), ("b", 33), ("c", 66))
    ]
    out = tmp_path_factory.mktemp("stores") / "fsa5_ico2.h5"
    return write_surface_store(out, runs, SurfaceRecipe(grid="ico2", tubelet=3), label_names=["left", "right"])


@pytest.fixture(scope="module")
def cifti_store(surface_root, tmp_path_factory):
    spheres = {h: surface_root / f"hcp_fs_LR32k/S1200.{h}.sphere.32k_fs_LR.surf.gii" for h in "LR"}
    out = tmp_path_factory.mktemp("stores") / "msc_ico2.h5"
    return write_surface_store(
        out,
        [SurfaceRun(surface_root / MSC, "MSC01", "test", "1")],
        SurfaceRecipe(grid="ico2", tubelet=1),
        spheres=spheres,
    )


def n_params(m):
    return sum(p.numel() for p in m.parameters())


@pytest.mark.slow
def test_presets_and_shapes():
    assert {k: (v["dim"], v["heads"]) for k, v in SIT_PRESETS.items()} == {
        "sit_tiny": (192, 3),
        "sit_small": (384, 6),
        "sit_base": (768, 12),
    }
    m = create_sit("tiny", n_chans=3, n_patches=320, vertices_per_patch=153, n_outputs=5)
    # tiny on ico2 with 3 frames: 12 × (4·192² attention + 8·192² MLP) + embedding 459·192 ≈ 5.4 M
    assert 5.3e6 < n_params(m) < 5.5e6
    assert m(torch.randn(2, 3, 320, 153)).shape == (2, 5)
    assert m.forward_features(torch.randn(2, 3, 320, 153)).shape == (2, 321, 192)
    concat = create_sit("tiny", n_chans=3, n_patches=80, vertices_per_patch=561, temporal="concat", depth=1)
    assert concat.forward_features(torch.randn(1, 3, 80, 561)).shape == (1, 241, 192)
    with pytest.raises(ConfigError, match=r"\(B, 3, 320, 153\)"):
        m(torch.randn(2, 3, 320, 45))
    with pytest.raises(ConfigError, match="allowed: channels, concat"):
        sit_config("tiny", temporal="stacked")
    with pytest.raises(ConfigError, match="unknown SiT size=.*tiny, small, base"):
        sit_config("huge")


def test_sincos_positions():
    pe = sincos_1d(50, 16)
    assert torch.allclose(pe[:, 0], torch.sin(torch.arange(50.0)), atol=1e-6)
    assert torch.allclose(pe[:, 1], torch.cos(torch.arange(50.0)), atol=1e-6)


def test_tube_mask_shared_across_frames():
    keep, masked = tube_mask(4, 320, 3, 0.75, generator=torch.Generator().manual_seed(0))
    assert keep.shape == (4, 80) and masked.sum(1).tolist() == [240] * 4
    m = create_vsmae("tiny", n_chans=3, n_patches=80, vertices_per_patch=15, depth=1, temporal="concat")
    out = m(torch.randn(2, 3, 80, 15), generator=torch.Generator().manual_seed(1))
    per_frame = out.mask.reshape(2, 3, 80)
    assert torch.equal(per_frame[:, 0], per_frame[:, 1]) and torch.equal(per_frame[:, 0], per_frame[:, 2])
    assert abs(out.mask.float().mean().item() - 0.75) < 1e-6


def test_vsmae_loss_only_on_masked_tokens():
    torch.manual_seed(0)
    m = create_vsmae("tiny", n_chans=2, n_patches=80, vertices_per_patch=15, depth=1)
    x = torch.randn(2, 2, 80, 15)
    out = m(x, generator=torch.Generator().manual_seed(3))
    err = ((out.pred - out.target) ** 2).mean(-1)
    assert torch.isclose(out.loss, err[out.mask].mean())
    assert not torch.isclose(out.loss, err[~out.mask].mean())
    state = m.state_dict()
    assert not any(k.startswith("encoder.cls_token") for k in state)  # encoder has no cls token
    sit = create_sit("tiny", n_chans=2, n_patches=80, vertices_per_patch=15, depth=1, n_outputs=2)
    missing, unexpected = sit.load_encoder_state(state)
    assert sorted(missing) == ["cls_token", "head.bias", "head.weight"] and unexpected == []
    assert torch.equal(sit.to_patch_embedding.weight, m.encoder.to_patch_embedding.weight)
    assert VSMAE(VSMAEConfig.from_dict(m.config.to_dict())).config == m.config


def _falls(history, first=3, last=5, factor=0.9):
    return np.mean(history[-last:]) < factor * np.mean(history[:first])


@pytest.mark.slow
def test_pretrain_sit_fsaverage5_with_resume(fsa5_store, tmp_path):
    from neurokit.training.config import PretrainConfig
    from neurokit.pipelines.pretrain import pretrain

    cfg = PretrainConfig(
        model="sit",
        model_kwargs=SMALL,
        epochs=50,
        max_steps=14,
        batch_size=4,
        optim=dict(lr=1e-3, min_lr=1e-4),
        progress=False,
        device="cpu",
    )
    res = pretrain([fsa5_store], tmp_path, cfg)
    assert res["steps"] == 14
    h = res["history"]
    assert _falls(h), h
    ck = torch.load(res["checkpoint"], map_location="cpu", weights_only=True)
    assert ck["model"] == "sit" and ck["model_config"]["encoder"]["n_patches"] == 320
    assert ck["store_attrs"]["grid"] == "ico6/ico2" and ck["store_attrs"]["tr"] == 1.0
    cfg.max_steps = 16
    more = pretrain([fsa5_store], tmp_path, cfg, resume=True)
    assert more["steps"] == 16 and more["history"][:14] == h


@pytest.mark.slow
def test_pretrain_sit_cifti(cifti_store, tmp_path):
    from neurokit.training.config import PretrainConfig
    from neurokit.pipelines.pretrain import pretrain

    cfg = PretrainConfig(
        model="sit",
        model_kwargs={**SMALL, "mask_ratio": 0.75},
        epochs=50,
        max_steps=12,
        batch_size=2,
        optim=dict(lr=1e-3, min_lr=1e-4),
        progress=False,
        device="cpu",
    )
    res = pretrain([cifti_store], tmp_path, cfg)
    # the output starts at 0 (the loss at predict-zero), so what it learned is read on the held-out frame (the last
    # of each hemisphere), now after a gap of the correlation time (frame 3): trained on frames 0-2 only, after 12
    # steps 0.927 against predict-zero 0.950 (0.976×; it was 0.92× with frame 3 trained on, next to the held-out one)
    h = res["heldout_history"][-1]
    assert h["heldout_loss"] < 0.985 * h["heldout_zero"], h
    assert "gap" in h["heldout_apart"] and "source vertices are unknown" in h["heldout_scoring"]


@pytest.mark.slow
def test_finetune_sit_hemisphere(fsa5_store, tmp_path):
    from neurokit.training.config import FinetuneConfig
    from neurokit.pipelines.finetune import finetune
    from neurokit.training.config import PretrainConfig
    from neurokit.pipelines.pretrain import pretrain

    pt = pretrain(
        [fsa5_store],
        tmp_path / "pt",
        PretrainConfig(
            model="sit", model_kwargs=SMALL, epochs=1, max_steps=2, batch_size=4, progress=False, device="cpu"
        ),
    )
    rep = finetune(
        [fsa5_store],
        tmp_path / "ft",
        FinetuneConfig(model="sit", head="avgpool", epochs=1, batch_size=11, progress=False, device="cpu"),
        init=pt["checkpoint"],
    )
    assert rep["kind"] == "binary" and rep["split_by"] == "run"
    assert rep["n_samples"] == {"train": 22, "val": 22, "test": 22}  # 11 tubelets × 2 hemispheres per run
    assert 0.0 <= rep["test"]["balanced_accuracy"] <= 1.0 and (tmp_path / "ft" / "best.pt").exists()
    with pytest.raises(ConfigError, match="surface stores"):
        from neurokit.models.registry import build_vsmae

        build_vsmae({"modality": "eeg"}, (19, 30, 200), {})


@pytest.mark.slow
def test_finetune_sit_regression_from_scratch(surface_root, tmp_path):
    from neurokit.training.config import FinetuneConfig
    from neurokit.pipelines.finetune import finetune

    # target: the segment's start time (s) — a float label per run, split by run
    runs = [
        SurfaceRun(surface_root / FSA5.format(h="l"), "010188", "02", seg, label=float(lo), frames=(lo, lo + 6))
        for seg, lo in (("a", 0), ("b", 40), ("c", 80))
    ]
    store = write_surface_store(tmp_path / "reg.h5", runs, SurfaceRecipe(grid="ico2", tubelet=3), label_dtype="float32")
    rep = finetune(
        [store],
        tmp_path / "ft",
        FinetuneConfig(model="sit", model_kwargs={"n_layers": 1}, epochs=1, batch_size=4, progress=False, device="cpu"),
    )
    assert rep["kind"] == "regression" and rep["n_samples"] == {"train": 2, "val": 2, "test": 2}
    # trained on run a (target 0 s) and scored on run c (target 80 s): the error is about the gap
    assert 40 < rep["test"]["rmse"] < 120
