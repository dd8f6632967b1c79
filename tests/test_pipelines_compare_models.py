"""``neuro compare`` (issue 47): several models on one store with the same seeds, label fractions, split and
schedule, beside EEGNet and the classical baseline of best validation score; one row per model; the refusals; the
papers' figures for the compared models taken from the card with their sources."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from neurokit._utils.errors import ConfigError
from neurokit.cli.main import app
from neurokit.cli.reports import comparison_lines, published_lines
from neurokit.evaluation.comparison import best_classical
from neurokit.pipelines.compare_models import compare_models, parse_models
from neurokit.store.patch_store import PatchStoreWriter
from neurokit.training.config import FinetuneConfig

pytestmark = pytest.mark.usefixtures("two_torch_threads")
SPLITS = {"train": ["S001", "S002", "S003"], "val": ["S004"], "test": ["S005", "S006"]}
#: the physionet_mi card's release task, so that the papers' figures for PhysioNet-MI come with the comparison
CARD_TASK = "motor_imagery_release"


def _store(path):
    """6 subjects × 2 classes × 4 windows of 2 channels × 2 patches; class 1 carries a 10-Hz rhythm."""
    from neurokit.cards import load_card

    card = load_card("physionet_mi")
    rng = np.random.default_rng(0)
    t = np.arange(200) / 200.0
    attrs = dict(modality="eeg", card="physionet_mi", task=CARD_TASK, card_body=card.raw, sfreq=200.0,
                 label_names=["left_fist", "right_fist"], ch_names=["C3", "C4"], recipe={"window_s": 2.0})  # fmt: skip
    with PatchStoreWriter(path, (2, 2, 200), attrs=attrs) as w:
        for s in SPLITS["train"] + SPLITS["val"] + SPLITS["test"]:
            y = np.repeat([0, 1], 4)
            x = rng.normal(0, 0.3, (len(y), 2, 2, 200)) + y[:, None, None, None] * np.sin(2 * np.pi * 10 * t)
            w.append(x.astype(np.float32), y, onsets=np.arange(len(y)) * 3.0, subject=s, session="1", run="R01")
    return path


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    d = tmp_path_factory.mktemp("cmpm")
    st = _store(d / "s.h5")
    cfg = FinetuneConfig(epochs=1, batch_size=8, head="avgpool", progress=False, device="cpu", splits=SPLITS)
    res = compare_models(st, d / "cmp", cfg, models="cbramod,eegnet,classical", seeds=2, eegnet_min_epochs=1,
                         model_kwargs={"cbramod": {"n_layers": 1}})  # fmt: skip
    return res, d / "cmp", st


def test_a_row_per_model_and_seed_with_the_same_split_seeds_and_schedule(compared):
    res, out, _ = compared
    assert res["arms"] == ["cbramod", "eegnet"] and res["seeds"] == [0, 1] and res["fractions"] == ["1"]
    assert sorted((r["arm"], r["seed"]) for r in res["runs"]) == [("cbramod", 0), ("cbramod", 1), ("eegnet", 0),
                                                                   ("eegnet", 1)]  # fmt: skip
    reports = {(r["arm"], r["seed"]): json.loads((out / r["arm"] / "frac1" / f"seed{r['seed']}" / "report.json")
                                                 .read_text()) for r in res["runs"]}  # fmt: skip
    # every model: the same split, the same training windows, its seed; one epoch each (EEGNet's minimum lowered)
    assert {json.dumps(rep["splits"], sort_keys=True) for rep in reports.values()} == {
        json.dumps({k: {"subjects": v} for k, v in SPLITS.items()}, sort_keys=True)
    }
    assert {rep["n_samples"]["train"] for rep in reports.values()} == {24}
    assert [rep["model"] for (arm, _), rep in sorted(reports.items())] == ["cbramod", "cbramod", "eegnet", "eegnet"]
    assert {r["epochs"] for r in res["runs"]} == {1}
    # the classical baselines: fitted once, the best chosen on validation AUROC (not on test)
    c = res["classical"]["1"]
    assert c["best"] == best_classical(c["all"], "auroc") and c["chosen_on"] == "validation auroc"
    assert res["baselines"] == {"1": {c["best"]: c["all"][c["best"]]["test"]}}
    assert set(res["differences"]) == {"cbramod − eegnet"} and res["contenders"] == ["cbramod"]
    assert res["verdict"]["cbramod"]["1"]["n"] == 2
    assert json.loads((out / "comparison.json").read_text())["models"] == ["cbramod", "eegnet", "classical"]
    assert (out / "comparison.csv").read_text().splitlines()[0].startswith("arm,fraction,seed")


def test_printed_as_the_quick_start_table_with_the_papers_figures(compared):
    res, _, _ = compared
    text = "\n".join(comparison_lines(res))
    for row in ("CBraMod (random weights)", "EEGNet-8,2", "Δ CBraMod − EEGNet-8,2", "best baseline: ", "chance"):
        assert row in text, row
    assert "does each foundation model beat the best of EEGNet and the baselines?" in text
    # the card's figures for the compared families only (CBraMod; no LaBraM, BIOT or REVE arm here), with sources
    assert list(res["paper"]) == ["CBraMod"] and res["paper"]["CBraMod"]["cohen_kappa"] == 0.5222
    published = "\n".join(published_lines(res, "cohen_kappa"))
    assert "CBraMod: 0.5222" in published and "arXiv 2412.07236), Table 3" in published


def test_the_cli_takes_the_cards_settings_reuses_the_runs_and_prints_the_table(compared):
    _, out, st = compared
    args = ["compare", str(st), "-o", str(out), "--models", "cbramod,eegnet,classical", "--seeds", "2",
            "--epochs", "1", "--eegnet-min-epochs", "1", "--batch-size", "8", "--n-layers", "1", "--head", "avgpool",
            "--device", "cpu", "--train-subjects", "S001,S002,S003", "--val-subjects", "S004",
            "--test-subjects", "S005,S006", "--no-progress"]  # fmt: skip
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    text = " ".join(r.output.split())
    # the release's settings from the card where no option was given (the same values as the Python call's)
    assert "settings from the store's card" in text and "weight_decay 0.05" in text and "epochs 50" not in text
    assert "every model: the same split (by subject), seeds 0, 1, label fractions 1; 1 epochs" in text
    for row in ("CBraMod (random weights)", "EEGNet-8,2", "best baseline: ", "best classical baseline at 100%"):
        assert row in text, row
    assert "published test auroc on this dataset" in text and "CBraMod (Wang et al., ICLR 2025" in text
    rec = json.loads((out / "comparison.json").read_text())
    assert all(r["reused"] for r in rec["runs"]) and len(rec["runs"]) == 4  # the same settings: nothing rerun
    assert rec["config"]["cli"]["command"] == "neuro compare"


def test_refusals():
    with pytest.raises(ConfigError, match="'resnet' is not a model neurokit knows; known: cbramod"):
        parse_models("cbramod,resnet")
    with pytest.raises(ConfigError, match="name at least one model to fine-tune besides 'classical'"):
        parse_models("classical")
    with pytest.raises(ConfigError, match="EEGNet has no pretrained weights"):
        compare_models("x.h5", "o", models="cbramod,eegnet", init={"eegnet": "w.pt"})
    with pytest.raises(ConfigError, match="init names 'labram', not among models=cbramod,eegnet"):
        compare_models("x.h5", "o", models="cbramod,eegnet", init={"labram": "w.pt"})
    r = CliRunner().invoke(app, ["compare", "x.h5", "--init", "weights.pt"])
    assert r.exit_code == 2 and "give MODEL=PATH" in r.output


def test_the_comparison_page_shows_the_input_contracts_as_the_registry_states_them():
    from pathlib import Path

    from neurokit.models.contracts import contract_table

    page = (Path(__file__).resolve().parents[1] / "docs" / "guide" / "compare.md").read_text()
    # the page's table is contract_table() as written (a | inside a cell escaped for Markdown)
    assert contract_table().replace("|x|", "\\|x\\|") in page
