"""``benchmarks/pretrain_curve.py``: the figures it reads from a held-out record, where the model crosses the best
baseline (measured or extrapolated in log-steps) and the CPU time fitted to /proc samples, checked by hand."""

import math
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def curve(monkeypatch):
    monkeypatch.setattr(sys, "path", [str(REPO / "benchmarks"), *sys.path])
    import pretrain_curve

    return pretrain_curve


def row(budget, model, best, cpu_per_step=0.5):
    return {"budget": budget, "cpu_min": budget * cpu_per_step, "model": (model, 0.0), "ridge": (best, 0.0),
            "best": "ridge"}  # fmt: skip


def test_ratios_read_every_baseline_on_its_own_values(curve):
    h = {"heldout_loss": 0.8, "heldout_zero": 2.0, "heldout_mean": 2.2, "heldout_spatial": 0.6,
         "heldout_spatial_zero": 1.5, "heldout_n": 10}  # fmt: skip
    r = curve.ratios(h)
    assert r == pytest.approx({"model": 0.4, "mean": 1.1, "spatial": 0.4})


def test_crossing_measured_between_budgets(curve):
    # model 0.9 → 0.5 between 10 and 40 steps, best baseline 0.7: the gaps 0.2 and -0.2 meet half-way in log-steps
    c = curve.crossing([row(10, 0.9, 0.7), row(40, 0.5, 0.7)])
    assert c["crossed"] and c["steps"] == pytest.approx(20.0)
    assert c["cpu_min"] == pytest.approx(10.0)


def test_crossing_extrapolated_in_log_steps(curve):
    # the model falls 0.1 per doubling; 0.3 above the baseline at 32 steps: three more doublings, 256 steps
    rows = [row(8, 0.8, 0.4), row(16, 0.7, 0.4), row(32, 0.6, 0.4)]
    rows[-1]["ridge"] = (0.3, 0.0)
    c = curve.crossing(rows)
    assert not c["crossed"] and c["gap_at_last"] == pytest.approx(0.3)
    assert c["fit"]["per_doubling"] == pytest.approx(-0.1)
    assert c["fit"]["steps"] == pytest.approx(256.0)
    assert c["last_interval"]["steps"] == pytest.approx(256.0)
    assert c["fit"]["cpu_min"] == pytest.approx(128.0)
    flat = curve.crossing([row(8, 0.8, 0.4), row(16, 0.8, 0.4)])
    assert "steps" not in flat["fit"] and "no crossing in sight" in flat["says"]


def test_cpu_fitted_to_proc_samples(curve, tmp_path):
    run = tmp_path / "run"
    lines = [f"{t} 7 {ticks} {step} {run}" for t, ticks, step in [(0, 300, 10), (15, 500, 20), (30, 650, 20),
                                                                     (45, 700, 30), (60, 9, 0)]]  # fmt: skip
    lines.append(f"60 8 99999 40 {tmp_path / 'other'}")
    (tmp_path / "s.txt").write_text("\n".join(lines))
    at0, per_step = curve.sampled_cpu(tmp_path / "s.txt", run)
    # the first sample of each step (10: 3 s, 20: 5 s, 30: 7 s): 0.2 s per step from 1 s
    assert per_step == pytest.approx(0.2) and at0 == pytest.approx(1.0)
    assert curve.sampled_cpu(None, run) is None
    assert not math.isnan(per_step)
