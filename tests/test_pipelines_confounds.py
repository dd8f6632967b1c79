"""The eye-movement confound on real EEGMMIDB data (issue 17): the check fires on the 64-channel left/right
imagery store, EOG removal by ICA lowers the F8 − F7 AUROC, and fine-tuning and the CLI report it.

Six imagery runs (S001-S006, run 4: 90 windows of 4 s, all 64 channels) keep the ICA preparation short."""

import copy
import json

import pytest
from typer.testing import CliRunner

from neurokit.cards import DataCard, load_card
from neurokit.cli.main import app
from neurokit.evaluation.confounds import check_confounds
from neurokit.store.patch_store import PatchStore
from neurokit.pipelines.prepare import prepare

RUNS = [f"MNE-eegbci-data/files/eegmmidb/1.0.0/S{s:03d}/S{s:03d}R04.edf" for s in range(1, 7)]


def _card(**preprocessing):
    card = load_card("physionet_mi")
    raw = copy.deepcopy(card.raw)
    raw["preprocessing"].update(preprocessing)
    return DataCard(name=card.name, raw=raw)


@pytest.fixture(scope="module")
def stores(eeg_root, tmp_path_factory):
    out = tmp_path_factory.mktemp("confounds")
    files = [eeg_root / f for f in RUNS]
    plain = prepare("physionet_mi", out / "plain.h5", task="left_right_imagery", files=files, progress=False)
    ica = prepare(_card(eog_removal="ica"), out / "ica.h5", task="left_right_imagery", files=files, progress=False)
    return plain, ica


@pytest.mark.slow
def test_check_fires_on_eegmmidb_and_ica_lowers_it(stores):
    plain, ica = stores
    before = check_confounds(plain, split="all")
    assert before.checked and before.fired and before.n_windows == 90 and before.n_subjects == 6
    assert before.single_feature == "mean(F8 − F7)"
    # measured: 0.854 from F8 − F7, classifier 0.73, p = 0.002 (the same windows as the 10-subject store)
    assert before.single_auroc > 0.8 and before.p_value < 0.01
    after = check_confounds(ica, split="all")
    # measured after ICA: see the card; the drop is at least 0.15
    assert after.single_auroc < before.single_auroc - 0.15, (before.single_auroc, after.single_auroc)
    # provenance: what ICA did to each file
    sources = PatchStore(ica).info.sources
    assert len(sources) == 6
    for s in sources:
        done = s["applied"]["eog_removal"]
        assert done["method"] == "ica" and done["eog_channels"] == ["F8-F7", "Fp1", "Fp2"]
        assert done["components_removed"] and done["random_state"] == 97
    assert "eog_removal" not in PatchStore(plain).info.sources[0]["applied"]
    assert PatchStore(ica).info.recipe["eog_removal"] == "ica" and "eog_removal" not in PatchStore(plain).info.recipe
    assert PatchStore(ica).info.ch_names == PatchStore(plain).info.ch_names  # 64 EEG channels, no proxy left


@pytest.mark.slow
def test_cli_and_finetune_report_it(stores, tmp_path, capsys):
    from neurokit.training.config import FinetuneConfig
    from neurokit.pipelines.finetune import finetune

    plain, _ = stores
    r = CliRunner().invoke(app, ["check-confounds", str(plain), "--split", "all", "--json", str(tmp_path / "c.json")])
    assert r.exit_code == 1, r.output  # the check fires: exit 1 (--no-fail keeps 0)
    res = json.loads((tmp_path / "c.json").read_text())
    assert res["fired"] and f"AUROC {res['single_auroc']:.2f} from F8 − F7" in " ".join(r.output.split())
    assert "confound:" in r.output and "p = 0.00" in r.output
    subj = sorted({s for s in PatchStore(plain).meta["subject"].astype(str)})
    cfg = FinetuneConfig(
        model_kwargs={"n_layers": 1},
        epochs=1,
        batch_size=16,
        head="avgpool",
        progress=False,
        device="cpu",
        baselines=False,
        splits={"train": subj[:5], "val": subj[5:], "test": subj[5:]},
    )
    rep = finetune(plain, tmp_path / "ft", cfg)
    conf = rep["confounds"]
    # measured on S001-S005 run 4: AUROC 0.84 from F8 − F7, classifier 0.75, p = 0.002 (4 subjects: p = 0.02)
    assert conf["fired"] and conf["split"] == "train" and conf["n_windows"] == 75 and conf["n_subjects"] == 5
    assert conf["single_auroc"] == pytest.approx(check_confounds(plain, splits=cfg.splits).single_auroc)
    assert json.loads((tmp_path / "ft" / "report.json").read_text())["confounds"] == conf
    from neurokit.cli.reports import print_report

    capsys.readouterr()
    print_report(rep, tmp_path / "ft")
    printed = " ".join(capsys.readouterr().out.split())
    assert (
        "eye-movement confound: labels are decodable from eye-movement channels: "
        f"AUROC {conf['single_auroc']:.2f} from F8 − F7"
    ) in printed
    off = finetune(plain, tmp_path / "ft_off", FinetuneConfig(**{**cfg.__dict__, "confound_check": False}))
    assert "confounds" not in off
