"""Soft MoE against a loop evaluation of the paper's equations, the CMI term on a hand-worked case,
planted modality contributions, focal loss."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from neurokit._utils.errors import ConfigError
from neurokit.models.m4oe import M4oE, M4oEConfig, conditional_mutual_information, focal_loss
from neurokit.models.moe import SoftMoE


def _loop_soft_moe(layer: SoftMoE, x: torch.Tensor, mask=None):
    """Puigcerver et al. 2023, Algorithm 1, one scalar at a time."""
    B, m, D = x.shape
    n, p = layer.n_experts, layer.slots
    phi = layer.phi.detach().double()
    x = x.double()
    scale = float(layer.scale.detach())
    out = torch.zeros(B, p, m, D, dtype=torch.float64) if layer.per_slot_combine else torch.zeros(B, m, D, dtype=torch.float64)
    for b in range(B):
        real = [i for i in range(m) if mask is None or bool(mask[b, i])]
        logit = {}
        for i in real:
            xn = x[b, i] / x[b, i].norm()
            for e in range(n):
                for s in range(p):
                    ph = phi[:, e, s] / phi[:, e, s].norm()
                    logit[i, e, s] = scale * float(xn @ ph)
        ys = {}
        for e in range(n):
            for s in range(p):
                z = sum(math.exp(logit[i, e, s]) for i in real)
                slot = sum(math.exp(logit[i, e, s]) / z * x[b, i] for i in real)
                if layer.slot_embed is not None:
                    slot = slot + layer.slot_embed[s].detach().double()
                ex = layer.experts
                h = torch.nn.functional.gelu(slot @ ex.w1[e].detach().double() + ex.b1[e, 0].detach().double())
                ys[e, s] = h @ ex.w2[e].detach().double() + ex.b2[e, 0].detach().double()
        for i in real:
            if layer.per_slot_combine:
                for s in range(p):
                    z = sum(math.exp(logit[i, e, s]) for e in range(n))
                    out[b, s, i] = sum(math.exp(logit[i, e, s]) / z * ys[e, s] for e in range(n))
            else:
                z = sum(math.exp(v) for (ii, _, _), v in logit.items() if ii == i)
                out[b, i] = sum(math.exp(logit[i, e, s]) / z * ys[e, s] for e in range(n) for s in range(p))
    return out


@pytest.mark.parametrize("per_slot", [False, True])
def test_soft_moe_matches_loop_reference(per_slot):
    torch.manual_seed(0)
    layer = SoftMoE(6, n_experts=3, slots=2, hidden=5, per_slot_combine=per_slot, slot_embed=per_slot)
    with torch.no_grad():
        layer.scale.fill_(1.7)
        if per_slot:
            layer.slot_embed.normal_()
    x = torch.randn(2, 5, 6)
    mask = torch.tensor([[True] * 5, [True, False, True, True, False]])
    for mk in (None, mask):
        y = layer(x, mk).double()
        ref = _loop_soft_moe(layer, x, mk)
        if mk is not None:  # masked tokens output 0 and feed no slot
            keep = mk[:, None, :] if per_slot else mk
            y = y * keep[..., None]
        torch.testing.assert_close(y, ref, rtol=1e-5, atol=1e-5)
    r = layer.last_routing
    torch.testing.assert_close(r["dispatch"].sum(1), torch.ones(2, 3, 2))  # softmax over tokens
    combine_sum = r["combine"].sum(2) if per_slot else r["combine"].sum((2, 3))
    assert torch.allclose(combine_sum[0], torch.ones_like(combine_sum[0]))
    assert float(r["dispatch"][1, 1].abs().sum()) == 0.0  # masked token: no dispatch weight


def test_cmi_hand_worked():
    # p(m,e|t1) = [[.5, 0], [0, .5]] (I = log 2); p(m,e|t2) = [[.4, .1], [.2, .3]]; p(t) = (.75, .25)
    # task 2: .4 log(.4/.3) + .1 log(.1/.2) + .2 log(.2/.3) + .3 log(.3/.2) = 0.0863046
    joint = torch.tensor([[[1.5, 0.4], [0.0, 0.1]], [[0.0, 0.2], [1.5, 0.3]]], dtype=torch.float64)
    want = 0.75 * math.log(2) + 0.25 * (0.4 * math.log(4 / 3) + 0.1 * math.log(0.5) + 0.2 * math.log(2 / 3) + 0.3 * math.log(1.5))
    assert float(conditional_mutual_information(joint)) == pytest.approx(want, abs=1e-12)
    assert want == pytest.approx(0.5414362, abs=1e-6)


def test_cmi_term_from_routing_weights_and_loss():
    """Routing worked by hand: tokens 0, 1 of modality 0 and token 2 of modality 1, 2 experts, 2 tasks.
    Task 0 sends modality 0 to expert 0 and modality 1 to expert 1: I = H(2/3, 1/3) = 0.636514;
    task 1 spreads every token evenly: I = 0. p(t) = 1/2 each → I(M;E|T) = 0.318257."""
    cfg = M4oEConfig(in_dim=4, modalities=["a", "b"], tasks=[dict(name="t0", kind="binary"), dict(name="t1", kind="binary")],
                     preset="small", n_heads=2, alpha=0.5)
    model = M4oE(cfg)
    combine = torch.zeros(1, 3, 2, 2)
    combine[0, 0, 0, 0] = combine[0, 1, 0, 0] = combine[0, 2, 1, 0] = 1.0
    combine[0, :, :, 1] = 0.5
    model.last = {"combine": combine, "dispatch": torch.full((1, 3, 2, 2), 1 / 3),
                  "owner": torch.tensor([0, 0, 1]), "mask": torch.ones(1, 3, dtype=torch.bool)}
    h = -(2 / 3) * math.log(2 / 3) - (1 / 3) * math.log(1 / 3)
    assert float(model.cmi()) == pytest.approx(0.5 * h, abs=1e-6)
    assert 0.5 * h == pytest.approx(0.318257, abs=1e-6)
    out = {"t0": torch.tensor([0.3]), "t1": torch.tensor([-1.0])}
    y = {"t0": torch.tensor([1]), "t1": torch.tensor([0])}
    loss, parts = model.loss(out, y)
    bce = -math.log(1 / (1 + math.exp(-0.3))) - math.log(1 - 1 / (1 + math.exp(1.0)))
    assert float(loss) == pytest.approx(bce - 0.5 * 0.5 * h, abs=1e-6)
    assert parts["cmi"] == pytest.approx(0.5 * h, abs=1e-6)
    np.testing.assert_allclose(model.contributions().numpy(), [[[2 / 3, 1 / 3], [2 / 3, 1 / 3]]], atol=1e-6)


def test_focal_loss_values():
    logit = torch.tensor([2.0, -1.0])
    y = torch.tensor([1, 1])
    p = torch.sigmoid(logit)
    want = float((-(1 - p) ** 2 * torch.log(p)).mean())
    assert float(focal_loss(logit, y, 2.0)) == pytest.approx(want, rel=1e-6)
    logits = torch.tensor([[1.0, 0.0, -1.0]])
    ce = float(torch.nn.functional.cross_entropy(logits, torch.tensor([0])))
    assert float(focal_loss(logits, torch.tensor([0]), 0.0)) == pytest.approx(ce, rel=1e-6)


def test_config_errors_and_presets():
    paper = M4oEConfig(in_dim=200, modalities=["eeg"], tasks=[dict(name="a", kind="binary")])
    assert (paper.msoe_experts, paper.mtoe_experts, paper.fusion_experts) == (32, 128, 16)
    with pytest.raises(ConfigError, match="tasks must be given once"):
        M4oEConfig(in_dim=8, modalities=["eeg"], tasks=[dict(name="a", kind="binary")] * 2, preset="small")
    with pytest.raises(ConfigError, match="preset"):
        M4oEConfig(in_dim=8, modalities=["eeg"], tasks=[dict(name="a", kind="binary")], preset="huge")
    m = M4oE(M4oEConfig(in_dim=8, modalities=["eeg", "ecg"], tasks=[dict(name="a", kind="multiclass", n_outputs=3)], preset="small"))
    with pytest.raises(ConfigError, match="eog"):
        m({"eog": torch.randn(2, 3, 8)})
    # a missing modality is masked: no routing mass, outputs finite
    out = m({"eeg": torch.randn(2, 3, 8), "ecg": torch.randn(2, 2, 8)}, present={"ecg": torch.tensor([True, False])})
    assert out["a"].shape == (2, 3) and torch.isfinite(out["a"]).all()
    c = m.contributions()
    assert float(c[1, 0, 1]) == 0.0 and float(c[1, 0, 0]) == pytest.approx(1.0)


def _planted(n, g, D=16, m=8):
    u = torch.nn.functional.normalize(torch.randn(D, generator=torch.Generator().manual_seed(5)), dim=0)
    ya, yb = torch.randint(0, 2, (n,), generator=g), torch.randint(0, 2, (n,), generator=g)
    x1 = torch.randn(n, m, D, generator=g) + (2 * ya - 1)[:, None, None] * u  # task A lives in modality 1 only
    x2 = torch.randn(n, m, D, generator=g) + (2 * yb - 1)[:, None, None] * u  # task B in modality 2, same direction
    return x1, x2, ya, yb


@pytest.mark.slow
def test_planted_modality_contributions():
    """Task A depends only on modality 1 and task B only on modality 2: after training, the routing shares
    of the MToE single expert's task slots follow that (≥ 0.8), and both tasks beat chance clearly."""
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    tr, te = _planted(512, g), _planted(256, g)
    cfg = M4oEConfig(in_dim=16, modalities=["m1", "m2"], tasks=[dict(name="A", kind="binary"), dict(name="B", kind="binary")],
                     preset="small", mtoe_experts=1, alpha=0.0)
    model = M4oE(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    for _ in range(3):
        perm = torch.randperm(512)
        for i in range(0, 512, 64):
            idx = perm[i : i + 64]
            out = model({"m1": tr[0][idx], "m2": tr[1][idx]})
            loss, _ = model.loss(out, {"A": tr[2][idx], "B": tr[3][idx]})
            opt.zero_grad()
            loss.backward()
            opt.step()
    model.eval()
    with torch.no_grad():
        out = model({"m1": te[0], "m2": te[1]})
        share = model.contributions().mean(0)  # (task, modality)
    acc_a = float(((out["A"] > 0).long() == te[2]).float().mean())
    acc_b = float(((out["B"] > 0).long() == te[3]).float().mean())
    print(f"planted shares: A←m1 {share[0, 0]:.3f}, B←m2 {share[1, 1]:.3f}; accuracy A {acc_a:.3f}, B {acc_b:.3f}")
    assert share[0, 0] >= 0.8 and share[1, 1] >= 0.8
    assert acc_a >= 0.85 and acc_b >= 0.85
