"""braindecode as the reference by output (issue 36 item 1): the same weights in braindecode's EEGNet / CBraMod and
in neurokit's give the same outputs and the same gradients after one step, at two input shapes each."""

from __future__ import annotations

import pytest
import torch

from neurokit.models.eegnet import EEGNet
from neurokit.models.interop import load_braindecode_cbramod, map_braindecode_eegnet

bd = pytest.importorskip("braindecode.models")


def _randomise(model: torch.nn.Module, seed: int) -> None:
    """Every parameter and batch-norm statistic away from its initial value (running stats would hide a swap)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, t in model.state_dict().items():
            if t.dtype.is_floating_point:
                if "running_var" in name:
                    t.copy_(torch.rand(t.shape, generator=g) + 0.5)
                else:
                    t.copy_(torch.randn(t.shape, generator=g) * 0.2)


@pytest.mark.parametrize("C,T,K", [(8, 400, 3), (22, 1000, 4)])
def test_eegnet_equals_braindecode_forward_and_gradients(C, T, K):
    ref = bd.EEGNet(n_chans=C, n_outputs=K, n_times=T, drop_prob=0.0)
    _randomise(ref, C)
    own = EEGNet(n_chans=C, n_times=T, n_outputs=K, dropout=0.0)
    own.load_state_dict(map_braindecode_eegnet(ref.state_dict()))
    x = torch.randn(5, C, T, generator=torch.Generator().manual_seed(1))
    y = torch.arange(5) % K
    ref.eval(), own.eval()
    with torch.no_grad():
        torch.testing.assert_close(own(x), ref(x), atol=1e-5, rtol=1e-5)
    ref.train(), own.train()  # batch statistics, as in a training step
    torch.nn.functional.cross_entropy(ref(x), y).backward()
    torch.nn.functional.cross_entropy(own(x), y).backward()
    got = {k: p.grad for k, p in own.named_parameters()}
    want = map_braindecode_eegnet({k: p.grad for k, p in ref.named_parameters()})
    assert set(got) == set(want)
    for k in got:
        torch.testing.assert_close(got[k], want[k], atol=1e-5, rtol=1e-4, msg=k)


@pytest.mark.parametrize("C,T,layers", [(4, 400, 2), (19, 1000, 1)])
def test_cbramod_equals_braindecode_forward_and_gradients(C, T, layers):
    torch.manual_seed(C)
    ref = bd.CBraMod(n_outputs=2, n_chans=C, n_times=T, n_layer=layers, drop_prob=0.0)
    model, head = load_braindecode_cbramod(ref.state_dict(), attn_backend="torch", dropout=0.0)
    x = torch.randn(3, C, T, generator=torch.Generator().manual_seed(2))
    patches = x.reshape(3, C, T // 200, 200)
    ref.eval(), model.eval()
    with torch.no_grad():
        feats = model(patches)
        torch.testing.assert_close(feats, ref(x, return_features=True)["features"], atol=1e-4, rtol=1e-4)
        torch.testing.assert_close(feats.flatten(1) @ head["weight"].T + head["bias"], ref(x), atol=1e-4, rtol=1e-4)
    # one training step's gradients of every backbone tensor, through the same classifier
    w = head["weight"].clone().requires_grad_(True)
    y = torch.tensor([0, 1, 1])
    torch.nn.functional.cross_entropy(ref(x), y).backward()
    logits = model(patches).flatten(1) @ w.T + head["bias"]
    torch.nn.functional.cross_entropy(logits, y).backward()
    ref_grads = {k: p.grad for k, p in ref.named_parameters()}
    from neurokit.models.interop import map_braindecode_cbramod

    want, want_head = map_braindecode_cbramod({k: g for k, g in ref_grads.items() if g is not None})
    for k, p in model.named_parameters():
        if k in want:
            torch.testing.assert_close(p.grad, want[k], atol=1e-4, rtol=1e-3, msg=k)
    torch.testing.assert_close(w.grad, want_head["weight"], atol=1e-4, rtol=1e-3)
    assert len(want) >= 30  # the backbone's tensors were compared, not a few
