"""Every card task that carries a fine-tuning protocol (the CBraMod release's datasets, issues 34 and 37): its kind
agrees with its classes, its metrics are ones neurokit computes for that kind, the paper's figures name those
metrics and lie where the metric can, and its ``finetune`` block builds the settings ``neuro finetune`` runs with
(the release's finetune_main.py defaults: 50 epochs, batch 64, lr 1e-4, weight decay 0.05, clip 1, dropout 0.1)."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import numpy as np
import pytest
import yaml

from neurokit.evaluation.metrics import score
from neurokit._utils.errors import CardError
from neurokit.evaluation.protocol import card_protocol, figures_for, paper_figures
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


def test_every_published_figure_names_its_paper_and_table():
    """Issue 47, item 4: each figure a card prints beside a run names where it comes from (a paper and its table)."""
    n, models = 0, set()
    for p in sorted(CARDS.glob("*.yaml")):
        for task, t in (yaml.safe_load(p.read_text()).get("tasks") or {}).items():
            for model, figures in ((t or {}).get("paper") or {}).items():
                source = figures.get("source")
                assert isinstance(source, str) and re.search(r", Table \d+", source), (p.stem, task, model, source)
                assert re.search(r"(ICLR|NeurIPS) 20\d\d|arXiv \d{4}\.\d{5}", source), (p.stem, model, source)
                n += len(figures) - 1
                models.add(model)
            if t and t.get("paper"):
                proto = card_protocol(yaml.safe_load(p.read_text()), task)
                assert set(proto.paper_sources) == set(proto.paper)
    assert n == 166  # the figures entered from the CBraMod, LaBraM, EEGPT, REVE and LUNA papers' tables
    assert {"CBraMod", "LaBraM-Base", "LaBraM-Huge", "BIOT", "EEGPT", "REVE-Base", "LUNA-Base"} <= models


def test_published_figures_as_the_papers_give_them():
    tuab = card_protocol(_body("tuab"), "abnormal")
    # the TUAB spread the issue cites: REVE 0.8315, CBraMod 0.8289, LaBraM-Huge 0.8258 balanced accuracy
    assert [tuab.paper[m]["balanced_accuracy"] for m in ("REVE-Base", "CBraMod", "LaBraM-Huge")] == [
        0.8315, 0.8289, 0.8258,
    ]  # fmt: skip
    assert tuab.paper_sources["LaBraM-Huge"].startswith("LaBraM (Jiang et al., ICLR 2024, arXiv 2405.18765), Table 1")
    assert tuab.paper["LUNA-Huge"] == {"balanced_accuracy": 0.8157, "auc_pr": 0.9029, "auroc": 0.8957}
    mi = paper_figures(_body("physionet_mi"), "motor_imagery_release")
    assert mi["paper"]["LaBraM-Base"] == {"balanced_accuracy": 0.6173, "cohen_kappa": 0.4912, "f1_weighted": 0.6177}
    assert "Table 3 (fine-tuned by CBraMod's authors" in mi["paper_sources"]["LaBraM-Base"]
    picked = figures_for(mi, ["cbramod", "labram", "eegnet", "classical"])
    assert list(picked["paper"]) == ["CBraMod", "LaBraM-Base"] and set(picked["paper_sources"]) == set(picked["paper"])
    assert list(figures_for(paper_figures(_body("tuev"), "events"), ["labram"])["paper"]) == [
        "LaBraM-Base", "LaBraM-Large", "LaBraM-Huge",
    ]  # fmt: skip
    assert figures_for(mi, ["eegnet"]) == {}


def test_a_figure_without_a_source_is_refused():
    body = {"name": "x", "tasks": {"t": {"kind": "binary", "paper": {"SomeModel": {"auroc": 0.9}}}}}
    with pytest.raises(CardError, match="paper figures of 'SomeModel' need a source"):
        card_protocol(body, "t")
    body["tasks"]["t"]["paper"]["SomeModel"]["source"] = "Some paper (ICLR 2025), Table 1"
    assert card_protocol(body, "t").paper_sources == {"SomeModel": "Some paper (ICLR 2025), Table 1"}
