"""The M4oE report's ablation contribution on hand-made predictions, the focal loss's class frequencies,
and `neuro plot-contributions` drawing routing shares beside the ablation."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from neurokit.evaluation.contributions import ablation_contributions
from neurokit.training.losses import class_frequencies


class _DS:
    def meta(self, column):
        return np.array([f"{column}{i}" for i in range(4)])


def _report_entry():
    y = np.array([0, 1, 0, 1])
    full = np.array([-2.0, 2.0, -2.0, 2.0])  # one logit: all right
    # without eeg: every logit 0 (chance); without ecg: unchanged
    ab = {
        "loss_increase": np.array([[0.5, 0.0], [0.7, 0.0], [0.3, 0.0], [0.5, 0.0]]),
        "outputs": {"eeg": np.zeros(4), "ecg": full.copy()},
    }
    return ablation_contributions(ab, ["eeg", "ecg"], _DS(), {"eeg": [0, 1], "ecg": [2]}, "binary", y, full), y, full


def test_ablation_contributions_hand_worked():
    r, _, _ = _report_entry()
    assert r["modalities"] == ["eeg", "ecg"]
    assert r["mean_loss_increase"] == {"eeg": pytest.approx(0.5), "ecg": 0.0}
    assert r["share"] == {"eeg": pytest.approx(1.0), "ecg": 0.0}
    assert r["score_change"]["eeg"]["balanced_accuracy"] == pytest.approx(0.5)  # 1.0 → 0.5 (all logits 0 → class 0)
    assert r["score_change"]["eeg"]["auroc"] == pytest.approx(0.5)  # 1.0 → 0.5 (ties)
    assert r["score_change"]["ecg"]["balanced_accuracy"] == 0.0
    assert r["per_sample"][1] == {"subject": "subject1", "run": "run1", "eeg": 0.7, "ecg": 0.0}
    one = ablation_contributions(
        {"loss_increase": np.zeros((4, 2)), "outputs": {}},
        ["eeg", "ecg"],
        _DS(),
        {"eeg": [0]},
        "binary",
        np.zeros(4),
        np.zeros(4),
    )
    assert one == {"modalities": ["eeg"], "note": "one modality: nothing to ablate"}
    # a NaN (modality absent or alone in the sample) is left out of the mean and written as null
    ab = {"loss_increase": np.array([[1.0, np.nan], [0.0, 2.0]]), "outputs": {"eeg": np.zeros(2), "ecg": np.zeros(2)}}
    r = ablation_contributions(
        ab, ["eeg", "ecg"], _DS(), {"eeg": [0], "ecg": [1]}, "binary", np.array([0, 1]), np.zeros(2)
    )
    assert r["mean_loss_increase"] == {"eeg": 0.5, "ecg": 2.0} and r["per_sample"][0]["ecg"] is None
    assert r["share"] == {"eeg": pytest.approx(0.2), "ecg": pytest.approx(0.8)}


def test_class_frequencies_for_focal_alpha():
    assert class_frequencies(np.array([1, 1, 1, 0, -1]), 2) == [0.25, 0.75]  # unlabelled (-1) left out
    assert class_frequencies(np.array([2, 2]), 3) == [0.0, 0.0, 1.0]


def _png_size(path):
    head = path.read_bytes()[:24]
    assert head[:4] == b"\x89PNG"
    return struct.unpack(">II", head[16:24])


def test_plot_contributions_shows_routing_and_ablation(tmp_path):
    from neurokit.plotting import plot_contributions

    entry, _, _ = _report_entry()
    mc = {
        "modalities": ["eeg", "ecg"],
        "mean": {"eeg": 0.7, "ecg": 0.3},
        "per_sample": [{"subject": "s", "run": "r", "eeg": 0.7, "ecg": 0.3}],
    }
    routing_only = plot_contributions({"tasks": {"t": {"modality_contributions": mc}}}, tmp_path / "a.png")
    both = plot_contributions(
        {"tasks": {"t": {"modality_contributions": mc, "ablation_contributions": entry}}}, tmp_path / "b.png"
    )
    w1, h1 = _png_size(routing_only)
    w2, h2 = _png_size(both)
    assert h1 == h2 and w2 == 2 * w1  # a second panel of the same size: the ablation
