"""The PyTorch criss-cross path hands SDPA 4-D tensors, so its fused kernels (CPU flash, CUDA flash and
memory-efficient) can take it: on the 5-D views it used before, SDPA fell back to its math backend on every
device (found on the first GPU run, 2026-12-04: efficient and flash "n/a"; 9× slower forward on the CPU)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

import neurokit.kernels.criss_cross as cc
import neurokit.models.cbramod as cbramod_module
from neurokit.kernels import criss_cross_attention_reference
from neurokit.models.cbramod import CBraMod


def _spy(monkeypatch, module):
    seen = []
    real = F.scaled_dot_product_attention

    def sdpa(q, k, v, *a, **kw):
        seen.append(q.dim())
        return real(q, k, v, *a, **kw)

    monkeypatch.setattr(module.F, "scaled_dot_product_attention", sdpa)
    return seen


def _explicit(q, k, v, heads_s):
    """Softmax attention written out with einsum: spatial heads over C, temporal heads over N."""
    d = q.shape[-1]
    s = torch.einsum("bcnhd,bknhd->bnhck", q[..., :heads_s, :], k[..., :heads_s, :]) * d**-0.5
    o_s = torch.einsum("bnhck,bknhd->bcnhd", s.softmax(-1), v[..., :heads_s, :])
    t = torch.einsum("bcnhd,bcmhd->bchnm", q[..., heads_s:, :], k[..., heads_s:, :]) * d**-0.5
    o_t = torch.einsum("bchnm,bcmhd->bcnhd", t.softmax(-1), v[..., heads_s:, :])
    return torch.cat([o_s, o_t], dim=3)


def test_reference_calls_sdpa_in_4d_and_matches_explicit_softmax(monkeypatch):
    seen = _spy(monkeypatch, cc)
    g = torch.Generator().manual_seed(0)
    qkv = torch.randn(3, 19, 4, 3, 8, 25, generator=g, dtype=torch.float64)  # CBraMod: 8 heads × 25
    q, k, v = qkv.unbind(3)  # strided views of a fused projection
    out = criss_cross_attention_reference(q, k, v, heads_s=4)
    assert seen == [4, 4]
    assert out.shape == (3, 19, 4, 8, 25)
    torch.testing.assert_close(out, _explicit(q, k, v, 4), rtol=0, atol=1e-12)
    # one head group only, and the gradient flows through the flattened views
    qkv.requires_grad_(True)
    q, k, v = qkv.unbind(3)
    criss_cross_attention_reference(q, k, v, heads_s=8).square().sum().backward()
    assert qkv.grad is not None and qkv.grad.abs().sum() > 0


def test_cbramod_eval_forward_calls_sdpa_in_4d(monkeypatch):
    seen = _spy(monkeypatch, cbramod_module)
    torch.manual_seed(0)
    model = CBraMod(n_layers=2, attn_backend="torch").eval()
    x = torch.randn(2, 5, 3, 200)
    with torch.no_grad():
        y = model(x)
    assert seen and set(seen) == {4}, seen
    assert y.shape == (2, 5, 3, 200) and torch.isfinite(y).all()
