"""Recipes as the published reference code has them (issue 7, items 11–14): CBraMod's AUC-PR, frozen
fine-tuning, SiT positions with a cls token, the vsMAE details and its pretraining optimiser."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn as nn

from neurokit._utils.errors import ConfigError
from neurokit.models.sit import create_sit, sincos_1d
from neurokit.models.vsmae import VSMAEConfig, VSMAE, create_vsmae, n_kept, tube_mask
from neurokit.evaluation.metrics import classification_metrics
from neurokit.training.config import PretrainConfig
from neurokit.training.optim import OptimConfig, build_optimizer


# ----------------------------------------------------------------------------------------- item 11
def test_auc_pr_is_trapezoid_under_pr_curve_not_average_precision():
    # scores ranked 0.9 (pos), 0.8 (neg), 0.7 (pos), 0.1 (neg); sklearn's PR curve (recall, precision):
    # (0, 1), (0.5, 1), (0.5, 0.5), (1, 2/3) → trapezoid area 0.5 + 0 + 0.5·(0.5 + 2/3)/2 = 19/24;
    # average precision = 0.5·1 + 0.5·2/3 = 5/6
    y = np.array([1, 0, 1, 0])
    logits = np.log(np.array([0.9, 0.8, 0.7, 0.1]) / (1 - np.array([0.9, 0.8, 0.7, 0.1])))
    m = classification_metrics(y, logits)
    assert m["auc_pr"] == pytest.approx(19 / 24)
    assert m["average_precision"] == pytest.approx(5 / 6)


def test_auc_pr_matches_the_released_evaluator_on_random_scores():
    from sklearn.metrics import auc, precision_recall_curve

    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 500)
    logits = rng.normal(size=500) + 0.8 * y
    prob = 1 / (1 + np.exp(-logits))
    precision, recall, _ = precision_recall_curve(y, prob, pos_label=1)  # finetune_evaluator.py, binary
    m = classification_metrics(y, logits)
    assert m["auc_pr"] == pytest.approx(auc(recall, precision), abs=1e-12)
    assert abs(m["auc_pr"] - m["average_precision"]) > 1e-4  # two different numbers, each under its own name


# ----------------------------------------------------------------------------------------- item 14
@pytest.mark.slow
def test_frozen_finetune_keeps_backbone_dropout_on_and_weights_fixed(lr_store, tmp_path, monkeypatch):
    """The release calls model.train() on the whole model with the backbone's requires_grad off."""
    from neurokit.pipelines import finetune as ft
    from neurokit.training.config import FinetuneConfig

    seen, real_forward = [], ft.FinetuneModel.forward

    def spy(self, x):
        if torch.is_grad_enabled():  # training steps (validation runs under no_grad)
            seen.append((self.backbone.training, self.head.training))
        return real_forward(self, x)

    monkeypatch.setattr(ft.FinetuneModel, "forward", spy)
    torch.manual_seed(0)
    cfg = FinetuneConfig(
        model_kwargs={"n_layers": 1},
        epochs=1,
        batch_size=30,
        frozen=True,
        head="avgpool",
        progress=False,
        device="cpu",
        splits={"train": ["S001"], "val": ["S002"], "test": ["S002"]},
    )
    captured = {}
    real_build = ft.build_backbone

    def build(*a, **k):
        bb, info = real_build(*a, **k)
        captured["before"] = {n: p.detach().clone() for n, p in bb.named_parameters()}
        captured["bb"] = bb
        return bb, info

    monkeypatch.setattr(ft, "build_backbone", build)
    ft.finetune(lr_store, tmp_path / "ft", cfg)
    assert len(seen) == 1 and seen[0] == (True, True)  # 45 samples // 30: one step, backbone in train mode
    bb = captured["bb"]
    assert any(isinstance(m, nn.Dropout) and m.p == 0.1 for m in bb.modules())
    for n, p in bb.named_parameters():
        assert torch.equal(p.detach(), captured["before"][n]), n


# ----------------------------------------------------------------------------------------- item 12
@pytest.mark.parametrize("pos", ["sincos", "learned"])
def test_sit_cls_token_has_no_position_and_loads_every_vsmae_position(pos):
    torch.manual_seed(0)
    mae = create_vsmae("tiny", n_chans=2, n_patches=20, vertices_per_patch=15, depth=1, pos_embedding=pos)
    if pos == "learned":
        with torch.no_grad():
            mae.encoder.pos_embedding.normal_()
    sit = create_sit("tiny", n_chans=2, n_patches=20, vertices_per_patch=15, depth=1, n_outputs=3, pos_embedding=pos)
    assert sit.pos_embedding.shape == (1, 20, 192)  # patches 0…N−1 only
    missing, unexpected = sit.load_encoder_state(mae.state_dict())
    assert sorted(missing) == ["cls_token", "head.bias", "head.weight"] and unexpected == []
    assert torch.equal(sit.pos_embedding, mae.encoder.pos_embedding)
    if pos == "sincos":
        assert torch.equal(sit.pos_embedding[0], sincos_1d(20, 192))
    # what enters the transformer: cls token as is, patch i + position i
    with torch.no_grad():
        sit.to_patch_embedding.weight.zero_()
        sit.to_patch_embedding.bias.zero_()
    got = {}
    sit.transformer.register_forward_pre_hook(lambda m, a: got.setdefault("x", a[0].detach()))
    sit.eval()
    sit(torch.randn(1, 2, 20, 15))
    assert torch.equal(got["x"][0, 0], sit.cls_token[0, 0].detach())
    assert torch.equal(got["x"][0, 1:], sit.pos_embedding[0])


def test_sit_loads_learned_positions_saved_with_a_cls_row():
    sit = create_sit("tiny", n_chans=1, n_patches=20, vertices_per_patch=15, depth=1, pos_embedding="learned")
    old = {k: v.clone() for k, v in sit.state_dict().items()}
    old["pos_embedding"] = torch.randn(1, 21, 192)
    sit.load_encoder_state(old)
    assert torch.equal(sit.pos_embedding, old["pos_embedding"][:, 1:])


# ----------------------------------------------------------------------------------------- item 13
def test_vsmae_matches_reference_details():
    torch.manual_seed(0)
    m = create_vsmae("tiny", n_chans=3, n_patches=320, vertices_per_patch=15, depth=1)
    assert isinstance(m.enc_to_dec, nn.Identity)  # encoder 192 = decoder 192
    wide = VSMAE(VSMAEConfig(encoder=create_sit("small", n_patches=80, vertices_per_patch=15, depth=1).config))
    assert isinstance(wide.enc_to_dec, nn.Linear) and wide.enc_to_dec.weight.shape == (192, 384)
    # mask token ~ N(0, 1) (reference: torch.randn(decoder_dim)), not std 0.02
    assert 0.85 < float(m.mask_token.detach().std()) < 1.15 and m.mask_token.shape == (1, 1, 192)
    # kept patches = int(N·(1 − ratio)), truncated as in the reference
    assert [n_kept(320, 0.75), n_kept(320, 0.9), n_kept(1280, 0.9), n_kept(80, 0.75)] == [80, 31, 127, 20]
    keep, masked = tube_mask(2, 320, 3, 0.9, generator=torch.Generator().manual_seed(0))
    assert keep.shape == (2, 31) and masked.sum(1).tolist() == [289, 289]
    with pytest.raises(ConfigError, match="keeps no patch"):
        VSMAEConfig(encoder=create_sit("tiny", n_patches=4, vertices_per_patch=15).config, mask_ratio=0.8)


def test_sit_pretraining_defaults_to_the_reference_optimiser():
    ref = OptimConfig(lr=3e-4, weight_decay=0.01, clip_grad=0.0, schedule="constant")
    assert PretrainConfig(model="sit").optim == ref
    assert PretrainConfig(model="cbramod").optim == OptimConfig()  # CBraMod's: 5e-4, 0.05, cosine, clip 1
    given = PretrainConfig(model="sit", optim={"lr": 1e-3}).optim
    assert (given.lr, given.weight_decay, given.schedule) == (1e-3, 0.01, "constant")
    assert PretrainConfig(model="sit", optim={"min_lr": 1e-5}).optim.schedule == "cosine"
    opt, sched = build_optimizer([{"params": [nn.Parameter(torch.zeros(1))]}], ref, total_steps=10)
    lrs = []
    for _ in range(10):
        opt.step()
        sched.step()
        lrs.append(sched.get_last_lr()[0])
    assert lrs == [3e-4] * 10
    with pytest.raises(ConfigError, match="schedule='step'"):
        OptimConfig(schedule="step")
