"""Held-out masked reconstruction beside the predict-zero and predict-mean baselines: hand-worked values, the
per-epoch records of a pretraining run, and the CLI's line."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
import torch.nn as nn
from typer.testing import CliRunner

from neurokit.training.objectives import heldout_masked_loss, masked_baselines

pytestmark = pytest.mark.usefixtures("two_torch_threads")


def _batch():
    # 1 window, 2 channels, 3 patches of 2 values
    t = torch.tensor([[[[1.0, 3.0], [2.0, 2.0], [5.0, -1.0]], [[0.0, 4.0], [6.0, 6.0], [-2.0, 0.0]]]])
    m = torch.tensor(
        [
            [
                [0.0, 1.0, 1.0],  # channel 0: patches 1, 2 masked, patch 0 visible (mean 2)
                [1.0, 1.0, 1.0],
            ]
        ]
    )  # channel 1: all masked -> mean prediction 0
    return t, m


def test_baselines_by_hand():
    t, m = _batch()
    b = masked_baselines(t, m)
    masked = [2, 2, 5, -1, 0, 4, 6, 6, -2, 0]
    assert float(b["n"]) == 10
    assert float(b["zero"]) == sum(v * v for v in masked)  # 126: predict-zero = sum of squared masked targets
    # channel 0 predicted by 2 (mean of its visible patch 0), channel 1 by 0 (nothing visible)
    assert float(b["mean"]) == (0 + 0 + 9 + 9) + (0 + 16 + 36 + 36 + 4 + 0)


class _Const(nn.Module):
    """Reconstructs every patch as ``value``."""

    def __init__(self, value: float) -> None:
        super().__init__()
        self.value = value
        self.w = nn.Parameter(torch.zeros(1))

    def forward(self, x, mask=None):
        return torch.full_like(x, self.value)


def test_heldout_loss_of_a_zero_model_equals_predict_zero():
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(6, 2, 4, 200, generator=gen) * 3 + 1
    batches = [(x[:3], None), (x[3:], None)]
    r = heldout_masked_loss(_Const(0.0), batches, seed=5)
    assert r["heldout_loss"] == pytest.approx(r["heldout_zero"], rel=1e-12)
    # the masks are drawn again from the same seed: the same masked values every call
    assert heldout_masked_loss(_Const(0.0), batches, seed=5) == r
    # predict-zero is the mean power of the masked values: here about 3² + 1² = 10
    assert 8 < r["heldout_zero"] < 12
    # predicting the true mean (1) of every value: close to the variance 9, and to predict-mean
    r1 = heldout_masked_loss(_Const(1.0), batches, seed=5)
    assert r1["heldout_loss"] == pytest.approx(9.0, rel=0.1)
    assert r["heldout_mean"] == pytest.approx(r1["heldout_loss"], rel=0.05)
    # half the patches masked on average
    assert r["heldout_n"] % 200 == 0 and 0.3 < r["heldout_n"] / x.numel() < 0.7


def _store(path, n=24):
    from neurokit.io.store import PatchStoreWriter

    rng = np.random.default_rng(0)
    with PatchStoreWriter(
        path,
        (2, 2, 200),
        attrs=dict(modality="eeg", ch_names=["C3", "C4"], sfreq=200.0, recipe={"reject_uv": 100.0}, n_rejected=8),
    ) as w:
        for i in range(n):  # six subjects: whole subjects are held out
            w.append(rng.normal(size=(1, 2, 2, 200)).astype(np.float32), subject=f"S{i % 6}")
    return path


def test_pretraining_logs_heldout_beside_baselines_each_epoch(tmp_path):
    from neurokit.pipelines.pretrain import PretrainConfig, pretrain

    store = _store(tmp_path / "s.h5")
    cfg = PretrainConfig(
        model_kwargs={"n_layers": 1}, epochs=2, batch_size=8, device="cpu", progress=False, val_fraction=0.2
    )
    res = pretrain(store, tmp_path / "pt", cfg)
    assert res["heldout"].startswith("4 windows (1 of 6 subjects")  # round(0.2 × 6) = 1 subject of 4 windows
    assert len(res["subjects"]) == 5
    epochs = [
        json.loads(line)
        for line in (tmp_path / "pt" / "metrics.jsonl").read_text().splitlines()
        if '"heldout_loss"' in line
    ]
    assert [e["epoch"] for e in epochs] == [1, 2]
    keys = ("epoch", "heldout_loss", "heldout_zero", "heldout_mean", "heldout_spatial", "heldout_temporal")
    assert res["heldout_history"] == [{k: e[k] for k in keys} for e in epochs]
    # independent noise: neither the other channel nor the neighbouring patch tells anything
    assert epochs[0]["heldout_spatial"] == pytest.approx(epochs[0]["heldout_zero"], rel=0.1)
    assert epochs[0]["heldout_temporal"] == pytest.approx(epochs[0]["heldout_zero"], rel=0.2)  # 20 windows fit it
    # the baselines depend on the held-out windows and the seeded masks only: the same each epoch
    assert epochs[0]["heldout_zero"] == epochs[1]["heldout_zero"]
    assert epochs[0]["heldout_zero"] == pytest.approx(1.0, rel=0.25)  # unit-variance noise
    assert res["kept"]["kept"] == 24 and res["kept"]["rejected"] == 8 and res["kept"]["kept_fraction"] == 0.75
    summary = json.loads((tmp_path / "pt" / "pretrain_summary.json").read_text())
    assert summary["heldout_history"] == res["heldout_history"]
    # the default normalisation: the corpus (here the one store) by the RMS of its training windows
    from neurokit.data.dataset import PatchDataset
    from neurokit.models.input_norm import rms_of

    train = PatchDataset(store, subjects=res["subjects"])
    assert summary["normalize"] == {"mode": "corpus", "corpus_scales": {str(store): pytest.approx(rms_of(train))}}


def test_cli_prints_the_heldout_line(tmp_path):
    from neurokit.cli.main import app

    store = _store(tmp_path / "s.h5")
    r = CliRunner().invoke(
        app,
        [
            "pretrain",
            str(store),
            "-o",
            str(tmp_path / "pt"),
            "--n-layers",
            "1",
            "--epochs",
            "1",
            "--batch-size",
            "8",
            "--device",
            "cpu",
            "--no-progress",
            "--normalize",
            "window",
        ],
    )
    assert r.exit_code == 0, r.output
    assert "input normalisation: window" in r.output
    assert (
        "data: kept 24 of 32 windows (75.0 %); dropped 8 (a sample's |amplitude| above reject_uv = 100 µV)" in r.output
    )
    line = next(ln for ln in r.output.splitlines() if ln.startswith("held-out masked loss"))
    rec = json.loads([ln for ln in (tmp_path / "pt" / "metrics.jsonl").read_text().splitlines() if "heldout" in ln][-1])
    z = rec["heldout_zero"]
    assert line.startswith(
        f"held-out masked loss {rec['heldout_loss']:.4g} ({rec['heldout_loss'] / z:.3f}× predict-zero) vs "
        f"predict-zero {z:.4g} · predict-mean {rec['heldout_mean']:.4g} ({rec['heldout_mean'] / z:.3f}×) · "
        f"spatial ridge {rec['heldout_spatial']:.4g} ({rec['heldout_spatial'] / z:.3f}×) · "
        f"temporal ridge {rec['heldout_temporal']:.4g} ({rec['heldout_temporal'] / z:.3f}×) (epoch 1);"
    )
    bad = CliRunner().invoke(app, ["pretrain", str(store), "-o", str(tmp_path / "x"), "--normalize", "batch"])
    assert bad.exit_code == 2 and "error: --normalize batch; allowed: none, window, channel, corpus" in bad.output


def test_a_run_ending_inside_an_epoch_still_reports_the_heldout_loss(tmp_path):
    from neurokit.pipelines.pretrain import PretrainConfig, pretrain

    store = _store(tmp_path / "s.h5")  # 20 training windows, batch 8: 2 steps an epoch; 3 steps end in epoch 2
    res = pretrain(
        store,
        tmp_path / "pt",
        PretrainConfig(
            model_kwargs={"n_layers": 1},
            epochs=5,
            max_steps=3,
            batch_size=8,
            device="cpu",
            progress=False,
            val_fraction=0.2,
        ),
    )
    assert [h["epoch"] for h in res["heldout_history"]] == [1, 1.5]
    last = json.loads((tmp_path / "pt" / "metrics.jsonl").read_text().splitlines()[-1])
    assert last["at_step"] == 3 and last["heldout_loss"] == res["heldout_history"][-1]["heldout_loss"]


def test_pretraining_keeps_each_stores_channels_and_holds_out_subjects_as_asked(tmp_path):
    """Two stores of different channel sets train side by side (one layout per batch), never cut into single
    channels; --heldout-subjects holds out exactly the subjects named."""
    from neurokit.io.store import PatchStoreWriter
    from neurokit.pipelines.pretrain import PretrainConfig, pretrain

    two = _store(tmp_path / "two.h5")  # 2 channels, 24 windows of 6 subjects
    rng = np.random.default_rng(1)
    with PatchStoreWriter(
        tmp_path / "one.h5", (1, 3, 200), attrs=dict(modality="eeg", ch_names=["Cz"], sfreq=200.0)
    ) as w:
        for i in range(12):
            w.append(rng.normal(size=(1, 1, 3, 200)).astype(np.float32), subject=f"S{i % 6}")
    seen = []
    import neurokit.training.objectives as obj

    real = obj.OBJECTIVES["cbramod"].loss
    obj.OBJECTIVES["cbramod"].loss = lambda m, x, g: (seen.append(tuple(x.shape[1:])), real(m, x, g))[1]
    try:
        cfg = PretrainConfig(
            model_kwargs={"n_layers": 1},
            epochs=1,
            batch_size=4,
            device="cpu",
            progress=False,
            heldout_subjects=["S0"],
            split=None,
        )
        res = pretrain([two, tmp_path / "one.h5"], tmp_path / "pt", cfg)
    finally:
        obj.OBJECTIVES["cbramod"].loss = real
    # 20 + 10 training windows in batches of 4: 5 of (2, 2, 200), 2 of (1, 3, 200), interleaved
    assert sorted(seen) == [(1, 3, 200)] * 2 + [(2, 2, 200)] * 5 and len(set(seen[:5])) == 2
    assert [lay["sample_shape"] for lay in res["layouts"]] == [[2, 2, 200], [1, 3, 200]]
    assert [lay["windows"] for lay in res["layouts"]] == [20, 10]
    assert res["heldout"] == (
        "2ch:two.h5: 4 windows (subjects S0, as asked); 1ch:one.h5: 2 windows (subjects S0, as asked)"
    )
    h = res["heldout_history"][-1]
    assert {"heldout_spatial", "heldout_temporal"} <= set(h)
    # the spatial ridge applies to the 2-channel layout only: its predict-zero is that layout's, not the pool's
    assert "heldout_spatial_zero" in h and "heldout_temporal_zero" not in h
    assert h["heldout_spatial_zero"] != h["heldout_zero"]
    assert h["heldout_spatial"] == pytest.approx(h["heldout_spatial_zero"], rel=0.2)  # independent noise
