"""One run record for every head and command (issue 26 item 2): ``OUT/run_config.json`` and the report's
``config`` section hold every option of the command line, given or defaulted (read from the typer command's
own parameters, so an option added without a record fails here), every setting of the pipeline call, and
what ``--resume`` checks."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from neurokit.cards import load_card
from neurokit.cli.main import app
from neurokit.store.patch_store import PatchStoreWriter
from neurokit.training.config import RESUME_MAY_CHANGE, FinetuneConfig
from neurokit.pipelines.outputs import json_ready

pytestmark = [pytest.mark.usefixtures("two_torch_threads"), pytest.mark.slow]  # tiny end-to-end runs, 5-25 s each
TINY = ["--epochs", "1", "--batch-size", "8", "--n-layers", "1", "--no-progress", "--device", "cpu"]


def command(name: str):
    return typer.main.get_command(app).commands[name]  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """Bonn seizure windows (1 channel, 1 patch) of four segments; class 1 carries a 10 Hz rhythm."""
    card, rng = load_card("bonn_epilepsy"), np.random.default_rng(3)
    path = tmp_path_factory.mktemp("record") / "bonn.h5"
    attrs = dict(modality="eeg", card="bonn_epilepsy", card_body=card.raw, task="seizure", sfreq=200.0)
    with PatchStoreWriter(
        path, (1, 1, 200), attrs={**attrs, "label_names": card.classes("seizure"), "ch_names": ["EEG"]}
    ) as w:
        wave = 1.5 * np.sin(2 * np.pi * 10 * np.arange(200) / 200.0)
        for seg in ("seg001", "seg002", "seg061", "seg081"):
            y = np.tile([0, 1], 4)
            x = rng.normal(0, 0.3, (8, 1, 1, 200)) + y[:, None, None, None] * wave
            w.append(x.astype(np.float32), y, subject=seg, run=[f"{seg}_{i}" for i in range(8)])
    return path


def check_record(out, name: str, given: dict[str, object], report: str = "report.json") -> dict:
    """The record in ``out`` names every option of ``neuro NAME`` with the value it took."""
    record = json.loads((out / "run_config.json").read_text())
    assert json.loads((out / report).read_text())["config"] == record
    cli = record["cli"]
    params = {p.name: p for p in command(name).params}
    assert cli["command"] == f"neuro {name}" and set(cli["options"]) == set(params), set(params) ^ set(cli["options"])
    for pname, prm in params.items():
        want = given.get(pname, prm.default)
        want = [] if want is None and getattr(prm, "multiple", False) else want  # typer's value of an unused list
        assert cli["options"][pname] == json_ready(want), (pname, cli["options"][pname], want)
    flags = {str(params[p].opts[0]) for p in given if params[p].opts[0].startswith("-")}
    assert set(cli["given"]) == flags
    return record


@pytest.mark.parametrize(
    "head, extra, values",
    [
        ("avgpool", ["--augment", "noise=5,p=0.5"], {"augment": "noise=5,p=0.5"}),
        (
            "all_patch_reps",
            ["--scheme", "kfold-subject", "--folds", "2", "--lr-head", "0.002"],
            {"scheme": "kfold-subject", "folds": 2, "lr_head": 0.002},
        ),
        (
            "m4oe",
            ["--task", "bonn_epilepsy:seizure", "--augment", "noise=5,p=0.5", "--alpha", "0.2"],
            {"task": ["bonn_epilepsy:seizure"], "augment": "noise=5,p=0.5", "alpha": 0.2},
        ),
    ],
)
def test_every_finetune_option_of_every_head_is_recorded(store, tmp_path, head, extra, values):
    out = tmp_path / head
    r = CliRunner().invoke(app, ["finetune", str(store), "-o", str(out), "--head", head, *TINY, *extra])
    assert r.exit_code == 0, r.output
    given = {"stores": [store], "out": out, "head": head, "epochs": 1, "batch_size": 8, "n_layers": 1}
    given |= {"progress": False, "device": "cpu", **values}
    record = check_record(out, "finetune", given)
    settings = record["settings"]
    assert set(f.name for f in dataclasses.fields(FinetuneConfig)) <= set(settings)
    assert settings["epochs"] == 1 and settings["model_kwargs"] == {"n_layers": 1} and settings["seed"] == 0
    if "augment" in values:
        assert settings["augment"]["noise"] == 5.0 and settings["augment"]["p"] == 0.5
    if head == "m4oe":
        assert settings["head"] == "m4oe" and settings["alpha"] == 0.2 and settings["tasks"] == values["task"]
        assert settings["preset"] == "small" and settings["focal_gamma"] == 2.0
        assert "head: alpha" in record["resume"]["checked"]
    else:
        assert settings["scheme"] == values.get("scheme", "card") and settings["head"] == head
    assert record["resume"]["may_change"] == list(RESUME_MAY_CHANGE) and "lr_head" in record["resume"]["checked"]
    assert record["resume"]["resumable"] is (values.get("scheme", "card") == "card")


def test_pretraining_records_its_options(store, tmp_path):
    out = tmp_path / "pre"
    r = CliRunner().invoke(app, ["pretrain", str(store), "-o", str(out), "--split", "all", "--max-steps", "1", *TINY])
    assert r.exit_code == 0, r.output
    given = {"stores": [store], "out": out, "split": "all", "max_steps": 1, "epochs": 1, "batch_size": 8}
    record = check_record(
        out, "pretrain", given | {"n_layers": 1, "progress": False, "device": "cpu"}, report="pretrain_summary.json"
    )
    assert record["settings"]["max_steps"] == 1 and record["settings"]["model_kwargs"] == {"n_layers": 1}
    assert "seed" in record["resume"]["checked"][4] and "epochs" in record["resume"]["may_change"]
