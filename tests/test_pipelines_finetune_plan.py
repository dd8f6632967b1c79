"""Issue 43 item 3: a fine-tuning request is checked, takes its card's settings and chooses its pipeline in the
layer the Python API goes through (:func:`neurokit.pipelines.finetune_plan.plan_finetune`), in parameter names; the
CLI only translates them into its flags."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from neurokit._utils.errors import ConfigError
from neurokit.cards import load_card
from neurokit.pipelines.finetune_plan import plan_finetune
from neurokit.store.patch_store import PatchStoreWriter


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """A Bonn seizure store whose card task gives the release's fine-tuning settings (epochs 7, dropout 0.2)."""
    card = load_card("bonn_epilepsy")
    body = copy.deepcopy(card.raw)
    body["tasks"]["seizure"]["finetune"] = {"epochs": 7, "dropout": 0.2}
    path = tmp_path_factory.mktemp("plan") / "bonn.h5"
    attrs = dict(modality="eeg", card="bonn_epilepsy", card_body=body, task="seizure", sfreq=200.0)
    attrs.update(label_names=card.classes("seizure"), ch_names=["EEG"])
    with PatchStoreWriter(path, (1, 1, 200), attrs=attrs) as w:
        for s in ("seg001", "seg002", "seg061", "seg081"):
            x = np.random.default_rng(0).normal(0, 0.3, (4, 1, 1, 200)).astype(np.float32)
            w.append(x, np.array([0, 1] * 2), subject=s, run=[f"{s}_{i}" for i in range(4)])
    return path


def test_the_card_settings_apply_where_none_is_set(store, tmp_path):
    plan = plan_finetune([store], tmp_path / "a")
    assert plan.pipeline == "finetune" and plan.card_settings == {"epochs": 7, "dropout": 0.2}
    assert (plan.cfg.epochs, plan.cfg.dropout) == (7, 0.2)
    plan = plan_finetune([store], tmp_path / "a", epochs=3)  # given in Python: the card does not change it
    assert plan.cfg.epochs == 3 and plan.card_settings == {"dropout": 0.2}
    plan = plan_finetune([store], tmp_path / "a", epochs=50, given={"epochs"})  # the default, said explicitly
    assert plan.cfg.epochs == 50


def test_the_pipeline_is_chosen_by_the_request(store, tmp_path):
    assert plan_finetune([store], tmp_path / "a", scheme="loso").call["scheme"] == "loso"
    plan = plan_finetune([store], tmp_path / "a", init="w.pt", seeds=2, strategy="full,lora")
    assert plan.pipeline == "compare" and plan.call["strategies"] == ["full", "lora"] and plan.call["seeds"] == 2
    plan = plan_finetune([store], tmp_path / "a", head="m4oe", task=["bonn_epilepsy:seizure"])
    assert plan.pipeline == "m4oe" and plan.call["tasks"] == ["bonn_epilepsy:seizure"] and plan.card_settings == {}


@pytest.mark.parametrize(
    "kw, message",
    [
        ({"folds": 3}, "folds=3: only the kfold-subject and within-session schemes have a fold count"),
        ({"task": ["bonn_epilepsy:seizure"]}, "task='bonn_epilepsy:seizure': names the tasks of the multi-task head"),
        ({"m4oe_preset": "paper"}, "m4oe_preset='paper': sizes the M4oE experts, so it needs head='m4oe'"),
        ({"strategy": "full,lora"}, "strategy='full,lora': several strategies are compared with compare_scratch=True"),
        ({"compare_scratch": True}, "compare_scratch=True compares fine-tuning from init weights"),
        ({"seeds": 2, "resume": True}, "resume=True: a comparison (seeds=2) resumes by itself"),
        ({"frozen": True, "lr_backbone": 1e-3}, "lr_backbone=0.001: frozen=True keeps the backbone's weights fixed"),
        ({"label_smoothing": 0.2}, "label_smoothing=0.2: it smooths multi-class targets"),
        ({"head": "m4oe", "task": ["x:y"], "scheme": "loso"}, "scheme='loso': head='m4oe' trains and scores"),
    ],
)
def test_refusals_name_the_parameter(store, tmp_path, kw, message):
    with pytest.raises(ConfigError) as exc:
        plan_finetune([store], tmp_path / "a", **kw)
    assert message in str(exc.value) and "--" not in str(exc.value)


def test_a_head_given_in_python_is_not_replaced_by_the_cards(tmp_path):
    """Review of issue 43: ``plan_finetune(head='avgpool')`` took the card's head silently (the CLI kept it)."""
    card = load_card("bonn_epilepsy")
    body = copy.deepcopy(card.raw)
    body["tasks"]["seizure"]["finetune"] = {"head": "all_patch_reps"}
    path = tmp_path / "h.h5"
    attrs = dict(modality="eeg", card="bonn_epilepsy", card_body=body, task="seizure", sfreq=200.0)
    attrs.update(label_names=card.classes("seizure"), ch_names=["EEG"])
    with PatchStoreWriter(path, (1, 1, 200), attrs=attrs) as w:
        for s in ("seg001", "seg002", "seg061", "seg081"):
            x = np.random.default_rng(0).normal(0, 0.3, (4, 1, 1, 200)).astype(np.float32)
            w.append(x, np.array([0, 1] * 2), subject=s, run=[f"{s}_{i}" for i in range(4)])
    assert plan_finetune([path], tmp_path / "a").cfg.head == "all_patch_reps"
    plan = plan_finetune([path], tmp_path / "a", head="avgpool")
    assert plan.cfg.head == "avgpool" and "head" not in plan.card_settings


def test_a_label_fraction_outside_0_1_is_refused_when_planned(store, tmp_path):
    with pytest.raises(ConfigError, match=r"label_fractions=2\.0: each must be in \(0, 1\]"):
        plan_finetune([store], tmp_path / "a", init="w.pt", label_fractions=[2.0])
