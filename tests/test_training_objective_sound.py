"""The masked-reconstruction objective is sound: no mask leak, a tiny batch overfits, every layer learns, and the
information-using baselines compute what they say. Each check is a helper run twice: on the real model (it passes)
and on a planted fault (it must catch it), so none of these tests can pass by construction."""

import pytest
import torch

from neurokit.models.cbramod import CBraMod
from neurokit.training.masked_baselines import EDGE, MaskedBaselines
from neurokit.training.objectives import heldout_masked_loss, masked_patch_loss


def _model(seed: int = 0, **kw) -> CBraMod:
    torch.manual_seed(seed)
    m = CBraMod(n_layers=2, dropout=0.0, attn_backend="torch", **kw)
    m.zero_reconstruction_head()  # as neuro pretrain starts it
    return m


class _LeakyEmbedding(torch.nn.Module):
    """Planted fault: the patch embedding ignores the mask, so the model sees the masked patches."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, x, mask=None):
        return self.inner(x, None)


def _leaky(m: CBraMod) -> CBraMod:
    m.patch_embedding = _LeakyEmbedding(m.patch_embedding)
    return m


def _frozen(m: CBraMod) -> CBraMod:
    """Planted fault: the first layer's output is detached (a frozen layer: it and the embedding get no gradient)."""
    m.encoder.layers[0].register_forward_hook(lambda mod, inp, out: out.detach())
    return m


def mask_leak(model: torch.nn.Module) -> float:
    """Largest change of the whole output when only the masked patches' input values change."""
    g = torch.Generator().manual_seed(1)
    x = torch.randn(3, 4, 5, 200, generator=g)
    mask = torch.bernoulli(torch.full((3, 4, 5), 0.5), generator=g)
    x2 = torch.where(mask.bool().unsqueeze(-1), 10 * torch.randn(x.shape, generator=g), x)
    with torch.no_grad():
        for p in model.proj_out.parameters():  # a non-zero head, so the output shows what the encoder saw
            p.normal_(0, 0.1, generator=g)
        model.eval()
        return float((model(x, mask=mask) - model(x2, mask=mask)).abs().max())


def _norm_over_all_values(m: CBraMod) -> CBraMod:
    """Planted fault (the behaviour before this fix): the window RMS is taken over every value, masked ones too, so
    it gives away the masked patches' power."""
    norm = m.input_norm
    m.input_norm.forward = lambda x, mask=None: type(norm).forward(norm, x)  # type: ignore[method-assign]
    return m


@pytest.mark.parametrize(
    "norm, fault, leaks",
    [
        ("none", None, False),
        ("none", _leaky, True),
        ("window", None, False),
        ("channel", None, False),
        ("window", _norm_over_all_values, True),
    ],
)
def test_changing_masked_inputs_leaves_the_output_unchanged(norm, fault, leaks):
    m = _model(input_norm=norm)
    if fault is not None:
        m = fault(m)
    leak = mask_leak(m)
    assert (leak > 1e-3) == leaks, leak
    if not leaks:
        assert leak == 0.0


def overfit_ratio(model: torch.nn.Module, steps: int = 60) -> float:
    """Masked loss on 8 fixed windows (fixed masks) after ``steps`` Adam steps, over the loss at the start."""
    g = torch.Generator().manual_seed(2)
    x = torch.randn(8, 2, 3, 200, generator=g)
    mask = torch.bernoulli(torch.full((8, 2, 3), 0.5), generator=g)
    mask[:, 0, 0] = 1  # every window has a masked patch
    sel = mask.bool()
    model.train()
    opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=2e-3)
    first = None
    for _ in range(steps):
        loss = torch.nn.functional.mse_loss(model(x, mask=mask)[sel], x[sel])
        first = float(loss.detach()) if first is None else first
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        return float(torch.nn.functional.mse_loss(model(x, mask=mask)[sel], x[sel])) / first


def _frozen_head(m: CBraMod) -> CBraMod:
    """Planted fault: the (zero-initialised) reconstruction head is frozen: the output stays 0."""
    for p in m.proj_out.parameters():
        p.requires_grad_(False)
    return m


@pytest.mark.slow  # 60 Adam steps of a 2-layer model: a few seconds
@pytest.mark.parametrize("fault, overfits", [(None, True), (_frozen_head, False)])
def test_a_tiny_batch_overfits_to_near_zero_masked_loss(fault, overfits):
    m = _model()
    if fault is not None:
        m = fault(m)
    r = overfit_ratio(m)
    assert (r < 0.05) == overfits, r


def params_without_gradient(model: torch.nn.Module) -> list[str]:
    """Trainable parameters whose gradient is missing or zero after two optimiser steps of the pretraining loss
    (two: with the head at zero the encoder's first gradient is zero; one step makes the head non-zero)."""
    g = torch.Generator().manual_seed(3)
    x = torch.randn(4, 3, 4, 200, generator=g)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)
    model.train()
    for step in range(2):
        opt.zero_grad()
        loss, _ = masked_patch_loss(model, x, g)
        loss.backward()
        if step == 0:
            opt.step()
    return [n for n, p in model.named_parameters() if p.requires_grad and (p.grad is None or not p.grad.any())]


@pytest.mark.parametrize("fault", [None, _frozen])
def test_every_layer_gets_a_gradient(fault):
    m = _model()
    if fault is None:
        assert params_without_gradient(m) == []
        assert not any(p.requires_grad for p in [m.patch_embedding.mask_encoding])  # the fixed zero mask token
    else:
        missing = params_without_gradient(fault(m))
        assert any(n.startswith("encoder.layers.0.") for n in missing)
        assert any(n.startswith("patch_embedding.") for n in missing)
        assert not any(n.startswith("encoder.layers.1.") for n in missing)


def test_the_head_starts_at_zero_so_the_loss_starts_at_predict_zero():
    m = _model()
    x = torch.randn(4, 3, 4, 200)
    r = heldout_masked_loss(m, [(x, None)], seed=0)
    assert r["heldout_loss"] == pytest.approx(r["heldout_zero"], rel=1e-12)
    k = CBraMod(n_layers=2, attn_backend="torch")  # the release's init: several times predict-zero
    assert heldout_masked_loss(k, [(x, None)], seed=0)["heldout_loss"] > 2 * r["heldout_zero"]


def test_spatial_and_temporal_baselines_on_a_hand_made_example():
    # two channels, three patches of 40 samples; the middle patch of channel 1 is masked
    P = 2 * EDGE
    t = torch.zeros(1, 2, 3, P, dtype=torch.float64)
    t[0, 0] = 1.0  # channel 0: all ones
    t[0, 1, 0] = 2.0
    t[0, 1, 1] = 3.0  # the masked patch
    t[0, 1, 2] = 4.0
    mask = torch.zeros(1, 2, 3)
    mask[0, 1, 1] = 1
    w_t = torch.zeros(2 * EDGE, P, dtype=torch.float64)
    w_t[EDGE - 1] = 0.5  # half the previous patch's last sample
    w_t[EDGE] = 0.5  # plus half the next patch's first sample
    b = MaskedBaselines(spatial={2: torch.tensor([[0.0, 0.0], [2.0, 0.0]], dtype=torch.float64)}, temporal=w_t)
    sse = b.masked_sse(t, mask)
    assert sse["spatial"][0] == pytest.approx(P * (3.0 - 2.0 * 1.0) ** 2)  # 2 × channel 0 = 2 against 3
    assert sse["temporal"][0] == pytest.approx(0.0)  # (2 + 4) / 2 = 3
    # a masked channel counts as 0: masking channel 0's middle patch too leaves 2 × 0 against 3 (and 0 against 1)
    both = mask.clone()
    both[0, 0, 1] = 1
    assert b.masked_sse(t, both)["spatial"][0] == pytest.approx(P * (3.0 - 0.0) ** 2 + P * 1.0**2)
    # a masked neighbour counts as 0: masking the next patch too leaves 0.5 × 2 = 1 against 3
    mask[0, 1, 2] = 1
    assert b.masked_sse(t, mask)["temporal"][0] == pytest.approx(P * (3 - 1) ** 2 + P * 4**2)


def test_the_fitted_spatial_ridge_reads_a_channel_from_its_copy():
    g = torch.Generator().manual_seed(4)
    t = torch.randn(96, 3, 4, 200, generator=g)
    t[:, 2] = 2 * t[:, 0]  # channel 2 is twice channel 0; channel 1 is independent
    b = MaskedBaselines.fit([t], seed=0)
    w = b.spatial[3]
    assert float(w[2, 0]) == pytest.approx(2.0, abs=0.01)
    assert float(w[0, 2]) == pytest.approx(0.5, abs=0.01)
    assert abs(float(w[1, 0])) < 0.02 and float(w[1, 1]) == 0.0
    # on held-out windows of the same structure the spatial ridge beats predict-zero where a copy is visible
    x = torch.randn(8, 3, 4, 200, generator=g)
    x[:, 2] = 2 * x[:, 0]
    r = heldout_masked_loss(_model(), [(x, None)], seed=0, baselines=b)
    assert r["heldout_spatial"] < 0.7 * r["heldout_zero"]
    assert r["heldout_temporal"] == pytest.approx(r["heldout_zero"], rel=0.1)  # white noise: nothing to read
    one = heldout_masked_loss(_model(), [(x[:, :1], None)], seed=0, baselines=b)
    assert "heldout_spatial" not in one and "heldout_temporal" in one  # one channel: no spatial predictor
