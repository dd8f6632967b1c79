"""Every card task that carries a fine-tuning protocol (the CBraMod release's datasets, issues 34 and 37): its kind
agrees with its classes, its metrics are ones neurokit computes for that kind, the paper's figures name those
metrics and lie where the metric can, and its ``finetune`` block builds the settings ``neuro finetune`` runs with
(the release's finetune_main.py defaults: 50 epochs, batch 64, lr 1e-4, weight decay 0.05, clip 1, dropout 0.1)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import yaml

from neurokit.evaluation.metrics import score
from neurokit.evaluation.protocol import card_protocol
from neurokit.training.config import FinetuneConfig

CARDS = Path(__file__).resolve().parents[1] / "data_cards"
#: the twelve downstream datasets of the paper (and BCIC-IV-2a of its appendix), by card and task
RELEASE_TASKS = {
    ("tuab", "abnormal"): "binary",
    ("tuev", "events"): "multiclass",
    ("chb_mit", "seizure"): "binary",
    ("isruc", "sleep_stages"): "multiclass",
    ("mumtaz", "mdd"): "binary",
    ("physionet_mi", "motor_imagery_release"): "multiclass",
    ("eegmat", "arithmetic_release"): "binary",
    ("bciciv2a", "motor_imagery"): "multiclass",
    ("shu_mi", "motor_imagery"): "binary",
    ("bcic2020_3", "imagined_speech"): "multiclass",
    ("faced", "emotion"): "multiclass",
    ("seed_v", "emotion"): "multiclass",
    ("seed_vig", "vigilance"): "regression",
}


def _body(name: str) -> dict:
    return yaml.safe_load((CARDS / f"{name}.yaml").read_text())


def _computed(kind: str) -> set[str]:
    rng = np.random.default_rng(0)
    if kind == "regression":
        return set(score(kind, rng.standard_normal(40), rng.standard_normal(40)))
    k = 2 if kind == "binary" else 4
    out = rng.standard_normal(40) if kind == "binary" else rng.standard_normal((40, k))
    return set(score(kind, np.arange(40) % k, out))


def test_every_release_task_has_a_protocol():
    found = {
        (p.stem, t)
        for p in CARDS.glob("*.yaml")
        for t, v in (yaml.safe_load(p.read_text()).get("tasks") or {}).items()
        if v and v.get("kind")
    }
    assert found == set(RELEASE_TASKS)


@pytest.mark.parametrize(("card", "task"), sorted(RELEASE_TASKS))
def test_release_task_protocol(card, task):
    body = _body(card)
    proto = card_protocol(body, task)
    kind = RELEASE_TASKS[card, task]
    assert proto.kind == kind
    classes = body["tasks"][task].get("classes") or []
    assert len(classes) == {"binary": 2, "multiclass": max(3, len(classes)), "regression": 0}[kind]
    assert proto.metrics and set(proto.metrics) <= _computed(kind)
    for model, figures in proto.paper.items():
        assert set(figures) <= set(proto.metrics), (model, figures)
        for metric, v in figures.items():
            assert v >= 0 if metric == "rmse" else -1 <= v <= 1, (metric, v)
    cfg = dataclasses.replace(FinetuneConfig(), **proto.finetune)
    assert (cfg.epochs, cfg.batch_size, cfg.lr_backbone, cfg.weight_decay, cfg.clip_grad, cfg.dropout) == (
        50, 64, 1e-4, 0.05, 1.0, 0.1,
    )  # fmt: skip
    # the release's classifiers: all_patch_reps, except ISRUC's sequence model (avgpool over its epochs here)
    assert cfg.head == ("avgpool" if card == "isruc" else "all_patch_reps")
    # label smoothing is the classifiers' (the release's regression trains with plain MSE)
    assert ("label_smoothing" in proto.finetune) == (kind != "regression")
    assert kind == "regression" or cfg.label_smoothing == 0.1
