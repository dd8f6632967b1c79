"""Tri-modal CLIP as the SIM release defines it (issue 18 items 8, 9, 12): fixed logit scales, the fMRI
embedding as the mean of projected patch tokens, head dropout 0, the SiT frozen; the earlier choices as options."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from neurokit._utils.errors import ConfigError
from neurokit.models.clip import CLIPConfig, ProjectionHead, SurfaceCLIP, info_nce
from neurokit.models.sit import sit_config


def _clip(**kw) -> SurfaceCLIP:
    enc = sit_config("tiny", n_chans=3, n_patches=4, vertices_per_patch=5, dim=2, heads=1, depth=1)
    return SurfaceCLIP(CLIPConfig(fmri=enc, video_dim=2, audio_dim=2, embed_dim=2, **kw))


# ------------------------------------------------------------------------------- item 8: logit scales
def test_release_logit_scales_are_the_default():
    cfg = CLIPConfig()
    assert cfg.log_scale == (1.0, 0.5, 0.5)  # hparams.yml temperature_video 1.0, temperature_audio 0.5
    assert torch.allclose(
        SurfaceCLIP(CLIPConfig(fmri=sit_config("tiny", depth=1, n_patches=4, vertices_per_patch=5))).log_scale,
        torch.tensor([1.0, 0.5, 0.5]),
    )


def test_info_nce_is_exp_tau_times_cosine_hand_worked():
    # two orthogonal unit vectors paired with themselves: cos = I, logits = exp(τ) I, so each row's
    # cross-entropy is -log(e^{e^τ} / (e^{e^τ} + 1)) = log(1 + exp(-e^τ)), and both directions agree
    a = torch.eye(2)
    assert info_nce(a, a, 1.0).item() == pytest.approx(math.log1p(math.exp(-math.e)), rel=1e-6)  # 0.06390
    assert info_nce(a, a, 0.5).item() == pytest.approx(math.log1p(math.exp(-math.sqrt(math.e))), rel=1e-6)  # 0.17593
    # a non-trivial cosine: b = (cos θ, sin θ) rows; logits = e · cos
    th = 0.3
    b = torch.tensor([[math.cos(th), math.sin(th)], [-math.sin(th), math.cos(th)]])
    z = math.e * torch.tensor([[math.cos(th), math.sin(th)], [-math.sin(th), math.cos(th)]])
    want = 0.5 * (F.cross_entropy(z, torch.arange(2)) + F.cross_entropy(z.T, torch.arange(2)))
    assert info_nce(a, b, 1.0).item() == pytest.approx(want.item(), rel=1e-6)


def test_each_pair_uses_its_own_scale(monkeypatch):
    """fMRI–video at exp(1.0), fMRI–audio and video–audio at exp(0.5), on given unit vectors."""
    m = _clip()
    eye = torch.eye(2)
    monkeypatch.setattr(m, "embed_fmri", lambda x: eye)
    monkeypatch.setattr(m, "embed_video", lambda v: eye)
    monkeypatch.setattr(m, "embed_audio", lambda a: eye)
    out = m(torch.zeros(2, 3, 4, 5), torch.zeros(2, 2), torch.zeros(2, 2))
    fv, fa = math.log1p(math.exp(-math.e)), math.log1p(math.exp(-math.exp(0.5)))
    assert out.losses["fmri_video"] == pytest.approx(fv, rel=1e-6)
    assert out.losses["fmri_audio"] == pytest.approx(fa, rel=1e-6)
    assert out.losses["video_audio"] == pytest.approx(fa, rel=1e-6)  # the release scores it with temperature_audio
    assert out.loss.item() == pytest.approx(0.8 * fv + 0.1 * fa + 0.1 * fa, rel=1e-6)


# ------------------------------------------------------------------------------- item 9: the fMRI embedding
def _identity_head(head: ProjectionHead) -> None:
    """proj = identity, fc = 0: the head's output is LayerNorm(token); in 2-d, LN([x, y]) = sign(x − y)·[1, −1]."""
    with torch.no_grad():
        head.proj.weight.copy_(torch.eye(2))
        head.proj.bias.zero_()
        head.fc.weight.zero_()
        head.fc.bias.zero_()


@pytest.mark.parametrize(
    "pool, want",
    [
        ("mean_after_projection", [1 / 3, -1 / 3]),  # (LN t1 + LN t2 + LN t3) / 3 = ([1,-1] + [-1,1] + [1,-1]) / 3
        ("mean_before_projection", [1.0, -1.0]),  # LN(mean t) = LN([7/3, 2/3])
        ("cls", [-1.0, 1.0]),  # LN(cls) = LN([-4, 4])
    ],
)
def test_fmri_embedding_of_a_hand_made_token_set(monkeypatch, pool, want):
    m = _clip(fmri_pool=pool)
    _identity_head(m.fmri_head)
    tokens = torch.tensor([[[-4.0, 4.0], [2.0, 0.0], [0.0, 1.0], [5.0, 1.0]]])  # cls first, then 3 patch tokens
    monkeypatch.setattr(m.encoder, "forward_features", lambda x: tokens)
    feats = m.fmri_features(torch.zeros(1, 3, 4, 5))
    # LayerNorm's eps (1e-5) scales ±1 by 1/sqrt(1 + 1e-5·4/(x−y)²): within 1e-4 here
    assert feats[0].tolist() == pytest.approx(want, abs=1e-4)
    emb = m.embed_fmri(torch.zeros(1, 3, 4, 5))
    s = 1 / math.sqrt(2)
    assert emb[0].tolist() == pytest.approx([-s, s] if pool == "cls" else [s, -s], abs=1e-5)


def test_cls_token_is_added_then_discarded():
    """The default SiT has a cls token (it takes part in attention) that the embedding leaves out: changing
    the cls token's value changes the patch tokens, and the embedding is the mean over exactly N projections."""
    torch.manual_seed(0)
    m = _clip()
    assert m.encoder.cls_token is not None and m.config.fmri_pool == "mean_after_projection"
    x = torch.randn(2, 3, 4, 5)
    h = m.encoder.forward_features(x)
    assert h.shape[1] == 1 + 4
    want = F.normalize(m.fmri_head(h[:, 1:]).mean(1), dim=-1)
    assert torch.allclose(m.embed_fmri(x), want, atol=1e-6)
    with pytest.raises(ConfigError, match="cls token"):
        CLIPConfig(fmri=sit_config("tiny", depth=1, pool="mean"), fmri_pool="cls")
    with pytest.raises(ConfigError, match="fmri_pool"):
        CLIPConfig(fmri_pool="max")


# ------------------------------------------------------------------------------- item 12: dropout 0, frozen SiT
def test_frozen_sit_and_no_head_dropout_by_default():
    m = _clip()
    assert m.config.dropout == 0.0 and m.fmri_head.dropout.p == 0.0 and ProjectionHead(4).dropout.p == 0.0
    assert m.config.train_fmri_encoder is False
    assert not any(p.requires_grad for p in m.encoder.parameters())
    m.train()
    assert not m.encoder.training and m.fmri_head.training  # a frozen SiT stays in eval mode
    heads = sum(p.numel() for n, p in m.named_parameters() if not n.startswith("encoder."))
    assert sum(p.numel() for p in m.parameters() if p.requires_grad) == heads
    t = _clip(train_fmri_encoder=True)
    t.train()
    assert t.encoder.training and all(p.requires_grad for p in t.encoder.parameters())


def test_trainer_steps_leave_the_frozen_sit_unchanged():
    from neurokit.training.optim import OptimConfig, build_optimizer

    torch.manual_seed(0)
    m = _clip()
    before = {k: v.clone() for k, v in m.encoder.state_dict().items()}
    head0 = m.fmri_head.proj.weight.clone()
    # every parameter handed to AdamW (with weight decay): the frozen ones get no gradient, so no step moves them
    opt, _ = build_optimizer([{"params": list(m.parameters())}], OptimConfig(lr=1e-2, weight_decay=0.05), 3)
    for _ in range(3):
        out = m(torch.randn(4, 3, 4, 5), torch.randn(4, 2), torch.randn(4, 2))
        opt.zero_grad()
        out.loss.backward()
        opt.step()
    assert all(torch.equal(before[k], v) for k, v in m.encoder.state_dict().items())
    assert not torch.equal(head0, m.fmri_head.proj.weight)


def test_checkpoints_from_before_keep_their_settings():
    """A config recorded before fmri_pool/train_fmri_encoder existed was trained on the cls token with the SiT
    trained: read back, it keeps those (not today's defaults); a new record round-trips the new defaults."""
    old = CLIPConfig(log_scale=(math.log(1 / 0.07),) * 3, dropout=0.1).to_dict()
    for k in ("fmri_pool", "train_fmri_encoder", "fmri_init"):
        old.pop(k)
    cfg = CLIPConfig.from_dict(old)
    assert (cfg.fmri_pool, cfg.train_fmri_encoder, cfg.dropout) == ("cls", True, 0.1)
    assert cfg.log_scale == pytest.approx((math.log(1 / 0.07),) * 3)
    new = CLIPConfig.from_dict(CLIPConfig().to_dict())
    assert (new.fmri_pool, new.train_fmri_encoder, new.log_scale) == ("mean_after_projection", False, (1.0, 0.5, 0.5))


def test_fmri_init_loads_a_vsmae_encoder(tmp_path):
    """``fmri_init`` starts the (frozen) SiT from a ``neuro pretrain --model sit`` checkpoint, as the release
    starts it from vsMAE weights; the architecture is the checkpoint's."""
    import neurokit
    from neurokit.models.checkpoint import save_checkpoint
    from neurokit.models.registry import make_clip

    torch.manual_seed(1)
    mae = neurokit.create_model("sit", n_layers=1, n_chans=3, n_patches=20, vertices_per_patch=6, dim=32, heads=2)
    p = save_checkpoint(
        tmp_path / "last.pt",
        {"kind": "pretrain", "model": "sit", "model_config": mae.config.to_dict(), "state_dict": mae.state_dict()},
    )
    m = make_clip({"fmri_init": str(p), "video_dim": 4, "audio_dim": 4, "embed_dim": 8})
    assert (m.config.fmri.dim, m.config.fmri.depth, m.config.fmri.n_patches) == (32, 1, 20)
    assert m.config.fmri_init == str(p)
    got = m.encoder.state_dict()
    for k, v in mae.encoder.state_dict().items():
        if k != "cls_token" and k in got:
            assert torch.equal(got[k], v), k
    assert not any(q.requires_grad for q in m.encoder.parameters())
    x = torch.randn(2, 3, 20, 6)
    assert np.isfinite(m.embed_fmri(x).detach().numpy()).all()
