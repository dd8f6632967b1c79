"""EEGNet-8,2: braindecode's parameter counts for two shapes, its layers' facts, the registered family with its
flatten classifier, and that it learns a planted class-dependent band-power difference (and not shuffled labels)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from neurokit._utils.errors import ConfigError
from neurokit.models.eegnet import EEGNet, EEGNetConfig, eegnet_dropout
from neurokit.models.heads import FinetuneModel, Head
from neurokit.models.registry import build_backbone, create_model, get_model_spec

pytestmark = pytest.mark.usefixtures("two_torch_threads")


def n_params(m: torch.nn.Module) -> int:
    return sum(p.numel() for p in m.parameters())


def braindecode_count(C: int, T: int, K: int) -> int:
    """braindecode ``EEGNet(n_chans=C, n_times=T, n_outputs=K)`` with its defaults (F1=8, D=2, F2=16, kernel 64,
    separable kernel 16, pools 4 and 8, final conv classifier), counted by hand from braindecode/models/eegnet.py:

    conv_temporal 8·64 (no bias) + bnorm_temporal 2·8 + conv_spatial 16·C (groups 8, no bias) + bnorm_1 2·16
    + conv_separable_depth 16·16 (groups 16, no bias) + conv_separable_point 16·16 (no bias) + bnorm_2 2·16
    + conv_classifier K·(16·T_out + 1), T_out = ⌊(⌊(T + 1) / 4⌋ + 1) / 8⌋ (the "same" paddings 32 and 8 of the
    even kernels each add one sample) = 1104 + 16·C + K·(16·T_out + 1).
    """
    t_out = ((T + 1) // 4 + 1) // 8
    return 512 + 16 + 16 * C + 32 + 256 + 256 + 32 + K * (16 * t_out + 1)


@pytest.mark.parametrize(
    "C, T, sfreq, K, expected, t_out",
    [
        (22, 1000, 250.0, 4, 3444, 31),  # BCIC-IV-2a: 4 s at 250 Hz, 4 classes: 1104 + 352 + 4·(16·31 + 1)
        (64, 800, 200.0, 2, 2930, 25),  # EEGMMIDB 64 channels, 4 s at 200 Hz, 2 classes: 1104 + 1024 + 2·401
    ],
)
def test_parameter_count_equals_braindecode(C, T, sfreq, K, expected, t_out):
    assert braindecode_count(C, T, K) == expected  # the formula, against the figures worked out by hand
    m = EEGNet(n_chans=C, n_times=T, n_outputs=K)  # the kernel is 64 samples whatever the rate (sfreq unused)
    assert m.config.feature_times() == t_out and n_params(m) == expected
    assert m.forward_features(torch.zeros(2, C, T)).shape == (2, t_out, 16) and m(torch.zeros(2, C, T)).shape == (2, K)
    # the registered family sized from a store's (C, N, 200) patches + the flatten head is the same network
    bb, info = build_backbone(
        None, model="eegnet", store_attrs={"modality": "eeg", "sfreq": sfreq}, sample_shape=(C, T // 200, 200)
    )
    if T % 200 == 0:
        whole = FinetuneModel(bb, Head("flatten", (t_out, 16), K), squeeze=False)
        assert n_params(whole) == expected and info["model_config"]["n_times"] == T


def test_layers_follow_braindecode():
    m = EEGNet(n_chans=3, n_times=400)
    assert m.classifier is None and n_params(m) == 1104 + 16 * 3
    for bn in (m.bn_temporal, m.bn_spatial, m.bn_separable):
        assert (bn.momentum, bn.eps, bn.affine) == (0.01, 1e-3, True)
    assert all(c.bias is None for c in (m.conv_temporal, m.conv_spatial, m.conv_depthwise, m.conv_pointwise))
    assert m.conv_temporal.padding == (0, 32) and m.conv_depthwise.padding == (0, 8) and m.conv_spatial.groups == 8
    assert m.drop1.p == m.drop2.p == 0.25 and (eegnet_dropout("subject"), eegnet_dropout("run")) == (0.25, 0.5)
    # max-norm 1 on every spatial filter, enforced whatever the stored weight
    with torch.no_grad():
        m.conv_spatial.parametrizations.weight.original.mul_(50.0)
    norms = m.conv_spatial.weight.detach().flatten(1).norm(dim=1)
    assert float(norms.max()) == pytest.approx(1.0, abs=1e-5)
    # patches (B, C, N, P) are read as the continuous signal (B, C, N·P)
    x = torch.randn(2, 3, 2, 200)
    m.eval()
    assert torch.equal(m.forward_features(x), m.forward_features(x.flatten(2)))
    with pytest.raises(ConfigError, match="3 channels × 400 samples"):
        m.forward_features(torch.zeros(1, 4, 400))
    with pytest.raises(ConfigError, match="too short"):
        EEGNetConfig(n_chans=2, n_times=20)


def test_registered_family():
    spec = get_model_spec("eegnet")
    assert (spec.modality, spec.default_head, spec.title) == ("eeg", "flatten", "EEGNet")
    m = create_model("eegnet", n_chans=2, n_times=800, n_outputs=3, dropout=0.5)
    assert m.drop1.p == 0.5 and spec.rebuild(m.config.to_dict()).config == m.config
    with pytest.raises(ConfigError, match="unknown eegnet option"):
        create_model("eegnet", n_layers=2)
    with pytest.raises(ConfigError, match="EEGNet is an EEG model"):
        build_backbone(None, model="eegnet", store_attrs={"modality": "surface"}, sample_shape=(3, 20, 45))


def _band_power_data(n: int, seed: int, shuffle: bool = False):
    """3 channels × 200 samples (1 s at 200 Hz) of unit noise; class 1 adds a 10 Hz rhythm (amplitude 1) on
    channels 0 and 1 with a random phase per trial (a band-power difference, no fixed waveform)."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 2
    t = np.arange(200) / 200.0
    x = rng.normal(0, 1, (n, 3, 200))
    phase = rng.uniform(0, 2 * np.pi, n)
    x[:, :2] += y[:, None, None] * np.sin(2 * np.pi * 10 * t[None, None] + phase[:, None, None])
    if shuffle:
        y = rng.permutation(y)
    return torch.tensor(x, dtype=torch.float32), torch.tensor(y)


def _fit_and_score(shuffle: bool) -> float:
    from sklearn.metrics import balanced_accuracy_score

    torch.manual_seed(0)
    xtr, ytr = _band_power_data(96, 0, shuffle)
    xte, yte = _band_power_data(200, 1)
    m = EEGNet(n_chans=3, n_times=200, n_outputs=2)
    opt = torch.optim.Adam(m.parameters(), lr=1e-2)
    g = torch.Generator().manual_seed(0)
    for _ in range(10):
        m.train()
        for idx in torch.randperm(len(ytr), generator=g).split(32):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(m(xtr[idx]), ytr[idx]).backward()
            opt.step()
    m.eval()
    with torch.no_grad():
        pred = m(xte).argmax(1).numpy()
    return float(balanced_accuracy_score(yte.numpy(), pred))


@pytest.fixture
def one_torch_thread():
    """One torch thread: on a shared 2-core machine, two threads of these small convolutions contend (10× slower)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.mark.slow
def test_learns_planted_band_power_and_not_shuffled_labels(one_torch_thread):
    assert _fit_and_score(shuffle=False) >= 0.9
    # shuffled training labels: chance (0.5) on the test set, within ±3.5 binomial s.d. of 200 test trials
    assert abs(_fit_and_score(shuffle=True) - 0.5) <= 0.125
