"""Augmentation: each transform's effect on a known signal, the seeded driver, mixup in the loss."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from neurokit._utils.errors import ConfigError
from neurokit.data.augment import (
    AugmentConfig,
    Augmenter,
    amplitude_scale,
    channel_dropout,
    frequency_shift,
    gaussian_noise,
    mixup,
    time_shift,
)
from neurokit.training.config import FinetuneConfig
from neurokit.training.losses import supervised_loss

SF = 200.0


def _sine(freq, n_patches=4, channels=1, batch=1):
    t = torch.arange(n_patches * 200) / SF
    x = torch.sin(2 * torch.pi * freq * t).reshape(1, 1, n_patches, 200)
    return x.expand(batch, channels, n_patches, 200).clone(), t


def test_time_shift_moves_an_impulse_across_patches():
    x = torch.zeros(3, 2, 2, 200)
    x[:, :, 0, 190] = 1.0  # sample 190 of the 400-sample signal
    y = time_shift(x, torch.tensor([20, -40, 300]))
    assert y[0, :, 1, 10].tolist() == [1.0, 1.0] and y[0].sum() == 2  # 190 + 20 = 210: patch 1, sample 10
    assert y[1, :, 0, 150].tolist() == [1.0, 1.0] and y[1].sum() == 2
    assert y[2].abs().sum() == 0  # shifted past the end: zero-filled
    assert torch.equal(time_shift(x, torch.zeros(3, dtype=torch.long)), x)


def test_amplitude_scale_and_channel_dropout():
    x, _ = _sine(10, channels=3, batch=2)
    y = amplitude_scale(x, torch.tensor([0.5, 2.0]))
    assert torch.allclose(y[0], 0.5 * x[0]) and torch.allclose(y[1], 2 * x[1])
    drop = torch.tensor([[True, False, False], [False, False, True]])
    z = channel_dropout(x, drop)
    assert z[0, 0].abs().sum() == 0 and z[1, 2].abs().sum() == 0
    assert torch.equal(z[0, 1:], x[0, 1:]) and torch.equal(z[1, :2], x[1, :2])


def test_gaussian_noise_has_the_asked_std():
    g = torch.Generator().manual_seed(0)
    y = gaussian_noise(torch.zeros(2, 8, 10, 200), torch.tensor([0.05, 0.0]), g)
    assert y[0].std().item() == pytest.approx(0.05, rel=0.02) and abs(y[0].mean().item()) < 1e-3
    assert y[1].abs().sum() == 0


def test_frequency_shift_turns_10hz_into_12hz():
    x, t = _sine(10.0)
    y = frequency_shift(x, torch.tensor([2.0]), SF)
    want = torch.sin(2 * torch.pi * 12.0 * t).reshape(1, 1, 4, 200)
    torch.testing.assert_close(y, want, atol=1e-4, rtol=0)
    spec = np.abs(np.fft.rfft(y.reshape(-1).numpy()))
    assert np.fft.rfftfreq(800, 1 / SF)[spec.argmax()] == pytest.approx(12.0)
    torch.testing.assert_close(frequency_shift(x, torch.tensor([0.0]), SF), x, atol=1e-5, rtol=0)


def test_mixup_mixes_signals_and_labels():
    x = torch.stack([torch.full((1, 1, 200), 1.0), torch.full((1, 1, 200), 3.0)])
    lam, perm = torch.tensor([0.25, 1.0]), torch.tensor([1, 0])
    y = mixup(x, lam, perm)
    assert torch.allclose(y[0], torch.full((1, 1, 200), 0.25 * 1 + 0.75 * 3)) and torch.equal(y[1], x[1])
    logits, labels = torch.tensor([0.3, -1.2]), torch.tensor([1, 0])
    # binary: the mixed loss is BCE against the mixed (soft) label
    soft = lam * labels + (1 - lam) * labels[perm]
    assert supervised_loss("binary", logits, labels, mix=(lam, perm)).item() == pytest.approx(
        F.binary_cross_entropy_with_logits(logits, soft.float()).item(), rel=1e-6
    )
    ml = torch.tensor([[2.0, 0.0, -1.0], [0.0, 1.0, 0.0]])
    yy = torch.tensor([0, 2])
    want = (
        lam * F.cross_entropy(ml, yy, reduction="none", label_smoothing=0.1)
        + (1 - lam) * F.cross_entropy(ml, yy[perm], reduction="none", label_smoothing=0.1)
    ).mean()
    assert supervised_loss("multiclass", ml, yy, 0.1, (lam, perm)).item() == pytest.approx(want.item())


def test_augmenter_is_seeded_off_by_default_and_configurable():
    assert FinetuneConfig().augment is None and not AugmentConfig().enabled
    cfg = AugmentConfig.parse("time_shift=0.1, scale=0.2,noise=5,channel_dropout=0.2,freq_shift=1,mixup=0.4,p=1")
    assert cfg.noise == 5.0 and cfg.mixup == 0.4 and cfg.enabled
    assert FinetuneConfig(augment="noise=5").augment["noise"] == 5.0
    x, _ = _sine(10, channels=4, batch=16)
    a, ma = Augmenter(cfg, seed=3)(x)
    b, mb = Augmenter(cfg, seed=3)(x)
    c, _ = Augmenter(cfg, seed=4)(x)
    assert torch.equal(a, b) and torch.equal(ma[0], mb[0]) and torch.equal(ma[1], mb[1])
    assert not torch.equal(a, c) and a.shape == x.shape
    assert ((ma[0] >= 0) & (ma[0] <= 1)).all() and sorted(ma[1].tolist()) == list(range(16))
    # noise is given in µV: 5 µV is 0.05 in CBraMod's 100 µV unit
    n, mix = Augmenter(AugmentConfig(noise=5, p=1), seed=0)(torch.zeros(4, 8, 4, 200))
    assert mix is None and n.std().item() == pytest.approx(0.05, rel=0.02)
    same, _ = Augmenter(AugmentConfig(noise=5, scale=0.5, p=0), seed=0)(x)  # p=0: nothing applied
    assert torch.equal(same, x)
    with pytest.raises(ConfigError, match=r"unknown augmentation \['jitter'\]; allowed: channel_dropout"):
        AugmentConfig.parse("jitter=0.1")
    with pytest.raises(ConfigError, match=r"scale=1.5 must be in \[0, 1\) \(factors U\(1-s, 1\+s\) stay positive\)"):
        AugmentConfig.parse("scale=1.5")
    with pytest.raises(ConfigError, match=r"augmentation \['noise'\] needs a value"):
        AugmentConfig.parse("noise")
