"""Held-out masked reconstruction beside the predict-zero and predict-mean baselines: hand-worked values, the
per-epoch records of a pretraining run, and the CLI's line."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
import torch.nn as nn
from typer.testing import CliRunner

from neurokit.evaluation.masked import verdict_words
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
    from neurokit.store.patch_store import PatchStoreWriter

    rng = np.random.default_rng(0)
    with PatchStoreWriter(
        path,
        (2, 2, 200),
        attrs=dict(modality="eeg", ch_names=["C3", "C4"], sfreq=200.0, recipe={"reject_uv": 100.0}, n_rejected=8),
    ) as w:
        for i in range(n):  # six subjects: whole subjects are held out
            w.append(rng.normal(size=(1, 2, 2, 200)).astype(np.float32), subject=f"S{i % 6}")
    return path


def _one_channel_store(path, scale=1.0):
    """12 windows of 1 channel × 3 patches, six subjects (a second layout beside :func:`_store`)."""
    from neurokit.store.patch_store import PatchStoreWriter

    rng = np.random.default_rng(1)
    with PatchStoreWriter(path, (1, 3, 200), attrs=dict(modality="eeg", ch_names=["Cz"], sfreq=200.0)) as w:
        for i in range(12):
            w.append(scale * rng.normal(size=(1, 1, 3, 200)).astype(np.float32), subject=f"S{i % 6}")
    return path


def test_pretraining_logs_heldout_beside_baselines_each_epoch(tmp_path):
    from neurokit.training.config import PretrainConfig
    from neurokit.pipelines.pretrain import pretrain

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
    keys = ("epoch", "heldout_loss", "heldout_zero", "heldout_mean", "heldout_spatial", "heldout_temporal", "heldout_n")
    assert [{k: h[k] for k in keys} for h in res["heldout_history"]] == [{k: e[k] for k in keys} for e in epochs]
    # two channels: too few for a spherical spline, and the record says so; whole subjects are held out
    assert epochs[0]["heldout_unavailable"] == {"spline": "fewer than 4 channels with a standard position"}
    assert epochs[0]["heldout_apart"] == "whole subjects"
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
    # what was set aside is said, from the run's own summary (not only "pretraining on … every subject")
    summary = json.loads((tmp_path / "pt" / "pretrain_summary.json").read_text())
    held = next(ln for ln in r.output.splitlines() if ln.startswith("held out (not trained on): "))
    subj = summary["subjects"]
    assert held == f"held out (not trained on): {summary['heldout']}; trained on {len(subj)} subject(s): " + ", ".join(
        subj
    ), held
    rec = json.loads([ln for ln in (tmp_path / "pt" / "metrics.jsonl").read_text().splitlines() if "heldout" in ln][-1])
    z = rec["heldout_zero"]
    assert line.startswith(
        f"held-out masked loss {rec['heldout_loss']:.4g} ({rec['heldout_loss'] / z:.3f}× predict-zero) vs "
        f"predict-zero {z:.4g} · predict-mean {rec['heldout_mean']:.4g} ({rec['heldout_mean'] / z:.3f}×) · "
        f"spatial ridge {rec['heldout_spatial']:.4g} ({rec['heldout_spatial'] / z:.3f}×) · "
        f"temporal ridge {rec['heldout_temporal']:.4g} ({rec['heldout_temporal'] / z:.3f}×) · spherical spline: not "
        "computed (fewer than 4 channels with a standard position) (epoch 1) — held out: whole subjects;"
    )
    # the verdict is the summary's: the best baseline by its ratio to predict-zero, and the model's against it
    verdict = summary["verdict"]
    ratios = {"predict-zero": 1.0, **{n: rec[f"heldout_{k}"] / z for k, n in [("mean", "predict-mean"),
              ("spatial", "spatial ridge"), ("temporal", "temporal ridge")]}}  # fmt: skip
    best = min(ratios, key=ratios.get)
    assert verdict["best_baseline"] == best and verdict["best_baseline_ratio"] == pytest.approx(ratios[best])
    assert verdict["loss_ratio"] == pytest.approx(rec["heldout_loss"] / z)
    assert verdict["beats_best_baseline"] == (rec["heldout_loss"] / z < ratios[best])
    assert line.endswith(f"held out: whole subjects; {verdict_words(verdict)}"), line
    assert f"(best baseline: {best}, {ratios[best]:.3f}× predict-zero; the model {verdict['loss_ratio']:.3f}×)" in line
    bad = CliRunner().invoke(app, ["pretrain", str(store), "-o", str(tmp_path / "x"), "--normalize", "batch"])
    assert bad.exit_code == 2 and "error: --normalize batch; allowed: none, window, channel, corpus" in bad.output


def test_the_verdict_names_the_best_baseline_with_its_ratio():
    """By hand: each baseline is read through its ratio to predict-zero on the values it predicts; the model beats
    the best one, or only the scale, or nothing; a run of several layouts has one verdict per layout."""
    from neurokit.evaluation.masked import BELOW_EVERY, BELOW_SCALE, NOT_BELOW_SCALE, masked_verdict

    h = {"epoch": 2, "heldout_loss": 0.8, "heldout_zero": 1.0, "heldout_mean": 1.2, "heldout_spatial": 0.7,
         "heldout_temporal": 0.9}  # fmt: skip
    v = masked_verdict(h)
    assert (v["best_baseline"], v["best_baseline_ratio"], v["loss_ratio"]) == ("spatial ridge", 0.7, 0.8)
    assert (v["beats_best_baseline"], v["beats_scale"], v["says"], v["epoch"]) == (False, True, BELOW_SCALE, 2)
    # a ridge on only some values (the multi-channel layout of a pool): 1.2 of that part's predict-zero 2.0 = 0.6
    part = {"heldout_loss": 0.5, "heldout_zero": 1.0, "heldout_mean": 1.1, "heldout_spatial": 1.2,
            "heldout_spatial_zero": 2.0}  # fmt: skip
    v = masked_verdict(part)
    assert (v["best_baseline"], v["best_baseline_ratio"], v["beats_best_baseline"]) == ("spatial ridge", 0.6, True)
    assert v["says"] == BELOW_EVERY and "epoch" not in v and "note" not in v
    # no baseline below predict-zero: predict-zero is the best; a loss above it learned no more than the scale
    v = masked_verdict({"heldout_loss": 1.05, "heldout_zero": 1.0, "heldout_mean": 1.1, "heldout_temporal": 1.3})
    assert (v["best_baseline"], v["best_baseline_ratio"], v["beats_scale"], v["says"]) == (
        "predict-zero",
        1.0,
        False,
        NOT_BELOW_SCALE,
    )
    pooled = {**h, "heldout_layouts": {"2ch:a.h5": h, "1ch:b.h5": part}}
    lay = masked_verdict(pooled)["layouts"]
    assert list(lay) == ["2ch:a.h5", "1ch:b.h5"] and lay["1ch:b.h5"] == masked_verdict(part)
    # held-out windows of 4× the training windows' power under corpus normalisation: a note says why
    assert "louder" in masked_verdict({**h, "heldout_zero": 4.0}, normalize="corpus")["note"]
    assert "note" not in masked_verdict({**h, "heldout_zero": 4.0}, normalize="window")


def test_a_run_ending_inside_an_epoch_still_reports_the_heldout_loss(tmp_path):
    from neurokit.training.config import PretrainConfig
    from neurokit.pipelines.pretrain import pretrain

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
    from neurokit.training.config import PretrainConfig
    from neurokit.pipelines.pretrain import pretrain

    two = _store(tmp_path / "two.h5")  # 2 channels, 24 windows of 6 subjects
    _one_channel_store(tmp_path / "one.h5")
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


def test_heldout_figures_per_layout_by_hand():
    """Two layouts, every patch masked: each layout's figures are its own, the pooled ones their weighted mean."""
    a = torch.full((1, 1, 2, 200), 2.0)  # 1 channel: 400 masked values of 2
    b = torch.ones(1, 2, 2, 200)  # 2 channels: 800 masked values of 1
    loaders = {"1ch:a": [(a, None)], "2ch:b": [(b, None)]}
    zero = heldout_masked_loss(_Const(0.0), loaders, mask_ratio=1.0)
    lay = zero["heldout_layouts"]
    assert list(lay) == ["1ch:a", "2ch:b"]
    assert (lay["1ch:a"]["heldout_n"], lay["2ch:b"]["heldout_n"], zero["heldout_n"]) == (400, 800, 1200)
    # a zero model: each layout's loss is its own predict-zero (4 and 1), the pool's (4·400 + 1·800) / 1200 = 2
    assert (lay["1ch:a"]["heldout_loss"], lay["1ch:a"]["heldout_zero"]) == (4.0, 4.0)
    assert (lay["2ch:b"]["heldout_loss"], lay["2ch:b"]["heldout_zero"]) == (1.0, 1.0)
    assert (zero["heldout_loss"], zero["heldout_zero"]) == (2.0, 2.0)
    one = heldout_masked_loss(_Const(1.0), loaders, mask_ratio=1.0)  # (2 − 1)² on a, 0 on b
    assert [one["heldout_layouts"][k]["heldout_loss"] for k in loaders] == [1.0, 0.0]
    assert one["heldout_loss"] == pytest.approx(400 / 1200, rel=1e-12)
    # one loader, or a plain iterable: no per-layout figures, the pooled ones unchanged
    assert "heldout_layouts" not in heldout_masked_loss(_Const(0.0), {"2ch:b": [(b, None)]}, mask_ratio=1.0)
    assert heldout_masked_loss(_Const(0.0), [(a, None), (b, None)], mask_ratio=1.0) == {
        k: v for k, v in zero.items() if k != "heldout_layouts"
    }
    # random masks: one generator runs through the layouts in order, so the pool is the chained loaders' figures
    x = torch.randn(2, 2, 3, 200, generator=torch.Generator().manual_seed(3))
    half = heldout_masked_loss(_Const(0.5), {"a": [(x[:1], None)], "b": [(x[1:], None)]}, seed=2)
    assert {k: v for k, v in half.items() if k != "heldout_layouts"} == heldout_masked_loss(
        _Const(0.5), [(x[:1], None), (x[1:], None)], seed=2
    )


def test_pretraining_reports_each_layouts_heldout_figures(tmp_path):
    """A run on two layouts records and prints each layout's held-out loss beside its own predict-zero; a model
    that has not moved from its zero-initialised head predicts 0, so each layout's loss is its predict-zero."""
    from neurokit.cli.train import pretrain_lines
    from neurokit.training.config import PretrainConfig
    from neurokit.pipelines.pretrain import pretrain

    two = _store(tmp_path / "two.h5")
    _one_channel_store(tmp_path / "one.h5", scale=3.0)
    cfg = PretrainConfig(
        model_kwargs={"n_layers": 1},
        epochs=1,
        batch_size=4,
        device="cpu",
        progress=False,
        heldout_subjects=["S0"],
        split=None,
        optim=dict(lr=1e-12, schedule="constant"),  # the head stays at zero
    )
    res = pretrain([two, tmp_path / "one.h5"], tmp_path / "pt", cfg)
    h = res["heldout_history"][-1]
    lay = h["heldout_layouts"]
    assert list(lay) == ["2ch:two.h5", "1ch:one.h5"]
    for v in lay.values():
        assert v["heldout_loss"] == pytest.approx(v["heldout_zero"], rel=1e-6)
    # 4 held-out windows of 2 × 2 patches and 2 of 1 × 3, about half of them masked; the pool weighs them by that
    rec = [json.loads(x) for x in (tmp_path / "pt" / "metrics.jsonl").read_text().splitlines() if "heldout" in x]
    n = [lay[k]["heldout_n"] for k in lay]
    assert sum(n) == rec[-1]["heldout_n"] and all(k % 200 == 0 for k in n)
    assert h["heldout_zero"] == pytest.approx(sum(lay[k]["heldout_zero"] * lay[k]["heldout_n"] for k in lay) / sum(n))
    # the spatial ridge is the 2-channel layout's only; its predict-zero there is that layout's
    assert "heldout_spatial" in lay["2ch:two.h5"] and "heldout_spatial" not in lay["1ch:one.h5"]
    assert h["heldout_spatial_zero"] == pytest.approx(lay["2ch:two.h5"]["heldout_zero"], rel=1e-12)
    assert h["heldout_spatial"] == pytest.approx(lay["2ch:two.h5"]["heldout_spatial"], rel=1e-12)
    summary = json.loads((tmp_path / "pt" / "pretrain_summary.json").read_text())
    assert summary["heldout_history"][-1]["heldout_layouts"] == lay
    assert rec[-1]["heldout_layouts"] == lay
    lines = pretrain_lines(res)
    at = next(i for i, ln in enumerate(lines) if ln.startswith("held-out masked loss"))
    one = lay["1ch:one.h5"]
    # each layout's line ends with its own verdict, the one the summary stores
    v = summary["verdict"]["layouts"]["1ch:one.h5"]
    assert v == res["verdict"]["layouts"]["1ch:one.h5"] and not v["beats_best_baseline"]  # the head stayed at zero
    said = verdict_words(v) if v["beats_scale"] else f"[yellow]{verdict_words(v)}[/]"
    assert lines[at + 2] == (
        f"  1ch:one.h5: held-out masked loss {one['heldout_loss']:.4g} (1.000× predict-zero) vs predict-zero "
        f"{one['heldout_zero']:.4g} · predict-mean {one['heldout_mean']:.4g} "
        f"({one['heldout_mean'] / one['heldout_zero']:.3f}×) · temporal ridge {one['heldout_temporal']:.4g} "
        f"({one['heldout_temporal'] / one['heldout_zero']:.3f}×); {said}"
    )
    assert lines[at + 1].startswith("  2ch:two.h5: held-out masked loss") and len(lines) == at + 3


def test_layout_repeats_give_a_layout_more_steps_per_epoch(tmp_path):
    """``layout_repeats`` goes through one layout's training windows k times an epoch; the held-out part and the
    fitted baselines stay those of a single pass."""
    from neurokit._utils.errors import ConfigError
    from neurokit.training.config import PretrainConfig
    from neurokit.pipelines.pretrain import pretrain

    two = _store(tmp_path / "two.h5")  # 20 training windows of 2 channels once S0 is held out
    _one_channel_store(tmp_path / "one.h5")
    seen = []
    import neurokit.training.objectives as obj

    real = obj.OBJECTIVES["cbramod"].loss
    obj.OBJECTIVES["cbramod"].loss = lambda m, x, g: (seen.append(tuple(x.shape[1:])), real(m, x, g))[1]
    kw = dict(model_kwargs={"n_layers": 1}, epochs=1, batch_size=4, device="cpu", progress=False, split=None)
    try:
        res = pretrain(
            [two, tmp_path / "one.h5"],
            tmp_path / "pt",
            PretrainConfig(**kw, heldout_subjects=["S0"], layout_repeats={"two.h5": 3}),
        )
    finally:
        obj.OBJECTIVES["cbramod"].loss = real
    # 3 × 20 two-channel windows and 10 one-channel ones in batches of 4: 15 + 2 steps
    assert sorted(seen) == [(1, 3, 200)] * 2 + [(2, 2, 200)] * 15 and res["steps"] == 17
    assert [(lay["windows"], lay["repeats"]) for lay in res["layouts"]] == [(20, 3), (10, 1)]
    assert res["heldout"].startswith("2ch:two.h5: 4 windows")
    with pytest.raises(ConfigError, match=r"layout_repeats\['two.h5'\]=0: must be an integer >= 1"):
        PretrainConfig(**kw, layout_repeats={"two.h5": 0})


def test_pretrain_lines_say_when_held_out_subjects_are_louder():
    """Under corpus normalisation training windows have unit power; held-out ones of 4.2 get a note saying why their
    loss is on another scale than the training loss, and none when they are of the training windows' power."""
    from neurokit.cli.train import pretrain_lines
    from neurokit.evaluation.masked import masked_verdict

    def res(zero):
        h = {"epoch": 1, "heldout_loss": 0.9 * zero, "heldout_zero": zero, "heldout_mean": 1.3 * zero}
        verdict = masked_verdict(h, normalize="corpus")  # what the run's summary stores
        return {"normalize": {"mode": "corpus"}, "heldout_history": [h], "heldout": "2 windows (as asked)",
                "verdict": verdict}  # fmt: skip

    loud = pretrain_lines(res(4.249))
    assert loud[-1].startswith("note: the held-out windows have 4.25× the power of the training windows") and (
        "louder than the training subjects" in loud[-1]
    )
    assert not any(ln.startswith("note:") for ln in pretrain_lines(res(1.1)))
    assert "quieter" in pretrain_lines(res(0.3))[-1]


def _scaled_store(path, scale, subject):
    from neurokit.store.patch_store import PatchStoreWriter

    rng = np.random.default_rng(2)
    with PatchStoreWriter(path, (2, 2, 200), attrs=dict(modality="eeg", ch_names=["C3", "C4"], sfreq=200.0)) as w:
        for _ in range(6):
            w.append(scale * rng.normal(size=(1, 2, 2, 200)).astype(np.float32), subject=subject)
    return path


def test_a_heldout_store_without_training_windows_is_scaled_by_the_training_windows(tmp_path, caplog):
    """Issue 33 item 4: a second store held out whole is divided by the training corpora's RMS (a statistic of
    training data), not by its own; its own only when asked, and said either way."""
    from neurokit.data.corpus import heldout_scales
    from neurokit.data.dataset import PatchDataset

    a = _scaled_store(tmp_path / "a.h5", 1.0, "S1")
    b = _scaled_store(tmp_path / "b.h5", 3.0, "S2")
    c = _scaled_store(tmp_path / "c.h5", 10.0, "S3")
    train = PatchDataset([a, c])
    every = np.concatenate([np.ravel(train[i][0].numpy()) for i in range(len(train))]).astype(np.float64)
    pooled = float(np.sqrt(np.mean(every**2)))  # by hand: the RMS of every training value
    held = PatchDataset(b)
    with caplog.at_level("WARNING", logger="neurokit"):
        sc = heldout_scales(train, held)
    assert sc[str(b)] == pytest.approx(pooled, rel=1e-6)
    assert sc[str(a)] == pytest.approx(np.sqrt(np.mean(np.concatenate([np.ravel(train[i][0]) for i in range(6)]) ** 2)))
    assert "no training window: scaled by the training windows' RMS" in caplog.text
    own = heldout_scales(train, held, own=True)
    assert own[str(b)] == pytest.approx(3.0 * sc[str(a)], rel=1e-6)  # b is a's values × 3
    # through neuro pretrain's pipeline: the held-out store's scale in the summary is the training windows'
    from neurokit.training.config import PretrainConfig
    from neurokit.pipelines.pretrain import pretrain

    cfg = PretrainConfig(
        model_kwargs={"n_layers": 1}, max_steps=1, batch_size=4, device="cpu", progress=False, split="all",
        heldout_subjects=["S2"],
    )  # fmt: skip
    res = pretrain([a, b], tmp_path / "pt", cfg)
    assert res["normalize"]["corpus_scales"][str(b)] == pytest.approx(res["normalize"]["corpus_scales"][str(a)])
