"""Issue 8: runs that load, resume, evaluate and re-run without silent mistakes (items 1-8, 11-13)."""

import json
import shutil

import h5py
import pytest
import torch
from typer.testing import CliRunner

from neurokit._utils.errors import ConfigError, WeightsError
from neurokit.cli.main import app
from neurokit.models import CBraMod
from neurokit.models.weights import load_weights, resolve_weights_source
from neurokit.training import objectives
from neurokit.training.config import FinetuneConfig
from neurokit.pipelines.finetune import finetune, finetune_or_reuse
from neurokit.pipelines.evaluate import evaluate
from neurokit.training.config import PretrainConfig
from neurokit.pipelines.pretrain import pretrain, pretrain_or_resume

TINY = {"n_layers": 1}


def cli(*args):
    return CliRunner().invoke(app, [str(a) for a in args], env={"COLUMNS": "200"})


@pytest.fixture(scope="module")
def tiny_store(eeg_root, tmp_path_factory):
    """S001, S002 (card train split), S007 (val), S009 (test) of left/right imagery, C3 Cz C4."""
    from neurokit.pipelines.prepare import prepare

    return prepare(
        "physionet_mi",
        tmp_path_factory.mktemp("tiny") / "tiny.h5",
        data_root=eeg_root,
        task="left_right_imagery",
        subjects=[1, 2, 7, 9],
        channels="C3,Cz,C4",
        progress=False,
    )


@pytest.fixture(scope="module")
def fixture_sd(fixtures_root):
    return torch.load(fixtures_root / "cbramod_reference_fixture.pt", weights_only=True)["state_dict"]


# ------------------------------------------------------------------------------------------ item 1
def test_weights_load_strictly_with_a_coverage_report(fixture_sd, tmp_path):
    rep = load_weights(CBraMod(), fixture_sd)
    assert (rep.loaded, rep.total, rep.complete) == (211, 211, True)
    assert rep.line() == "loaded 211/211 backbone tensors from <state dict>"
    # the usual wrappers are remapped: a "state_dict"/"model" entry, module./backbone./model. prefixes
    wrapped = tmp_path / "wrapped.pth"
    torch.save({"epoch": 3, "model": {f"module.backbone.{k}": v for k, v in fixture_sd.items()}}, wrapped)
    m = CBraMod()
    rep = load_weights(m, wrapped)
    assert rep.loaded == 211 and rep.remapped == {"module.backbone.": 211}
    torch.testing.assert_close(
        m.state_dict()["encoder.layers.11.linear2.weight"], fixture_sd["encoder.layers.11.linear2.weight"]
    )
    # an unrelated model's weights are refused, not silently skipped
    other = tmp_path / "resnet.pth"
    torch.save(torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.BatchNorm2d(8)).state_dict(), other)
    with pytest.raises(WeightsError, match=r"resnet.pth: none of its 7 tensors belongs to the backbone \(loaded 0/211"):
        load_weights(CBraMod(), other)
    # a file covering part of the backbone needs the explicit partial option
    part = {k: v for k, v in fixture_sd.items() if not k.startswith("encoder.layers.11.")}
    with pytest.raises(WeightsError, match=r"covers 195/211 backbone tensors .*allow_partial=True"):
        load_weights(CBraMod(), part)
    rep = load_weights(CBraMod(), part, allow_partial=True)
    assert rep.loaded == 195 and len(rep.missing) == 16 and not rep.complete
    # a shape mismatch names the tensor
    bad = dict(fixture_sd, **{"encoder.layers.0.linear1.weight": torch.zeros(800, 100)})
    with pytest.raises(WeightsError, match=r"encoder.layers.0.linear1.weight: file \(800, 100\), model \(800, 200\)"):
        load_weights(CBraMod(), bad)
    assert resolve_weights_source(str(wrapped)) == wrapped
    with pytest.raises(FileNotFoundError, match="no such weights file"):
        resolve_weights_source(tmp_path / "nope.pth")


def test_finetune_init_refuses_unrelated_and_records_coverage(fixture_sd, tiny_store, tmp_path):
    other = tmp_path / "other.pth"
    torch.save(torch.nn.Linear(4, 2).state_dict(), other)
    r = cli(
        "finetune",
        tiny_store,
        "-o",
        tmp_path / "bad",
        "--init",
        other,
        "--epochs",
        "1",
        "--no-progress",
        "--device",
        "cpu",
    )
    assert r.exit_code == 2 and "none of its 2 tensors belongs to the backbone (loaded 0/211" in r.output
    assert not (tmp_path / "bad").exists()
    one = tmp_path / "one_layer.pth"  # the released key layout, first layer only: a 1-layer backbone
    torch.save({k: v for k, v in fixture_sd.items() if not k.startswith("encoder.layers.") or ".layers.0." in k}, one)
    rep = finetune(
        tiny_store, tmp_path / "ft", FinetuneConfig(epochs=1, batch_size=16, head="avgpool", progress=False), init=one
    )
    w = json.loads((tmp_path / "ft" / "report.json").read_text())["init_weights"]
    assert (w["loaded"], w["total"], w["complete"]) == (35, 35, True) == (rep["init_weights"]["loaded"], 35, True)


# ------------------------------------------------------------------------------------------ item 2
@pytest.fixture(scope="module")
def tuned(tiny_store, tmp_path_factory):
    out = tmp_path_factory.mktemp("tuned")
    cfg = FinetuneConfig(
        model_kwargs=TINY,
        epochs=1,
        batch_size=16,
        head="avgpool",
        progress=False,
        splits={"train": ["S001"], "val": ["S002"], "test": ["S007"]},
    )
    return out, finetune(tiny_store, out, cfg)


def test_evaluate_scores_the_checkpoints_splits(tuned, tiny_store):
    out, rep = tuned
    ev = evaluate(out / "best.pt", tiny_store, device="cpu")  # the card's test split would be S009
    assert ev["subjects"] == ["S007"] and ev["n_samples"] == rep["n_samples"]["test"]
    assert ev["auroc"] == pytest.approx(rep["test"]["auroc"], abs=1e-9)
    with pytest.raises(ConfigError, match=r"trained or selected on subjects S001, S002, which the chosen samples"):
        evaluate(out / "best.pt", tiny_store, split=None, device="cpu")
    with pytest.raises(ConfigError, match=r"subjects S001, which .*allow_seen=True"):
        evaluate(out / "best.pt", tiny_store, subjects=["S001"], device="cpu")
    ev = evaluate(out / "best.pt", tiny_store, subjects=["S001", "S009"], allow_seen=True, device="cpu")
    assert ev["seen"] == ["S001"] and ev["subjects"] == ["S001", "S009"]
    r = cli("evaluate", out / "best.pt", tiny_store, "--subjects", "1", "--device", "cpu")
    assert r.exit_code == 2 and "--allow-seen" in r.output and "allow_seen" not in r.output
    r = cli("evaluate", out / "best.pt", tiny_store, "--subjects", "9", "--device", "cpu")
    assert r.exit_code == 0 and "subjects S009 metrics" in r.output and "test metrics" not in r.output


# -------------------------------------------------------------------------------------- items 3-5, 7
def _small(**kw):
    return PretrainConfig(**{"model_kwargs": TINY, "epochs": 1, "batch_size": 8, "progress": False, **kw})


def test_pretrain_uses_the_train_split_by_default(tiny_store, tmp_path):
    res = pretrain(tiny_store, tmp_path / "a", _small(max_steps=1))
    assert res["subjects"] == ["S001", "S002"] and "train split" in res["data"]
    res = pretrain(tiny_store, tmp_path / "b", _small(max_steps=1, split="all"))
    assert res["subjects"] == ["S001", "S002", "S007", "S009"]


def test_resume_refuses_another_recipe_or_units(tiny_store, tmp_path):
    pretrain(tiny_store, tmp_path / "pt", _small(max_steps=1))
    other = tmp_path / "other.h5"
    shutil.copy(tiny_store, other)
    with h5py.File(other, "a") as f:
        rec = json.loads(f.attrs["recipe"][5:])
        f.attrs["recipe"] = "json:" + json.dumps({**rec, "h_freq": 40.0, "scale": 1e6})
    with pytest.raises(
        ConfigError,
        match=rf"the data differ in recipe.h_freq, recipe.scale \(recipe.h_freq: "
        rf"{rec['h_freq']} → 40.0; recipe.scale: 10000.0 → 1000000.0\)",
    ):
        pretrain(other, tmp_path / "pt", _small(max_steps=2), resume=True)


def test_store_reused_only_when_it_matches(tiny_store, eeg_root, tmp_path):
    from neurokit.pipelines.prepare import prepare_or_reuse, store_differences

    kw = dict(data_root=eeg_root, task="left_right_imagery", subjects=[1, 2, 7, 9])
    assert store_differences(tiny_store, "physionet_mi", channels="C3,Cz,C4", **kw) == {}
    diff = store_differences(tiny_store, "physionet_mi", channels="sensorimotor", **kw)
    assert {"recipe.channels", "ch_names"} <= set(diff)
    assert set(store_differences(tiny_store, "physionet_mi", channels="C3,Cz,C4", **{**kw, "subjects": [1]})) == {
        "subjects"
    }
    copy = tmp_path / "qs.h5"
    shutil.copy(tiny_store, copy)
    path, note = prepare_or_reuse("physionet_mi", copy, channels="C3,Cz,C4", progress=False, **kw)
    assert note.startswith("reusing")
    path, note = prepare_or_reuse("physionet_mi", copy, channels="C4,Cz", progress=False, **{**kw, "subjects": [1]})
    assert "differs in" in note and "ch_names" in note
    from neurokit.store.patch_store import PatchStore

    assert PatchStore(path).attrs["ch_names"] == ["C4", "Cz"]


def test_resume_checkpoints_every_n_steps_without_duplicate_log_lines(tiny_store, tmp_path, monkeypatch):
    cfg = _small(max_steps=5, ckpt_every=2)
    obj = objectives.OBJECTIVES["cbramod"]
    real, calls = obj.loss, []

    def dying(*a, **k):
        calls.append(1)
        if len(calls) == 4:
            raise KeyboardInterrupt
        return real(*a, **k)

    monkeypatch.setattr(obj, "loss", dying)
    with pytest.raises(KeyboardInterrupt, match=r"interrupted at step 4: .*last.pt holds step 2 of 5"):
        pretrain(tiny_store, tmp_path, cfg)
    monkeypatch.setattr(obj, "loss", real)
    res = pretrain(tiny_store, tmp_path, cfg, resume=True)
    recs = [json.loads(l) for l in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    steps = [r["step"] for r in recs if "step" in r]  # and one held-out record at the end (test_training_heldout)
    assert res["steps"] == 5 and res["steps_run"] == 3 and steps == [1, 2, 3, 4, 5]
    assert [r["at_step"] for r in recs if "heldout_loss" in r] == [5]


def test_resume_with_fewer_steps_fails_and_warns_only_on_changes(tiny_store, tmp_path):
    out = tmp_path / "pt"
    args = [
        "pretrain",
        tiny_store,
        "-o",
        out,
        "--n-layers",
        "1",
        "--batch-size",
        "8",
        "--epochs",
        "1",
        "--max-steps",
        "2",
        "--no-progress",
        "--device",
        "cpu",
        "--checkpoint-every",
        "1",
    ]
    assert cli(*args).exit_code == 0
    r = cli("pretrain", tiny_store, "-o", out, "--resume", "--no-progress")
    assert r.exit_code == 0 and "nothing left to run" in r.output and "changed" not in r.output, r.output
    r = cli("pretrain", tiny_store, "-o", out, "--resume", "--max-steps", "1", "--no-progress")
    assert r.exit_code == 2 and "already did 2 steps" in r.output and "samples/s" not in r.output
    r = cli("pretrain", tiny_store, "-o", out, "--resume", "--max-steps", "3", "--no-progress")
    assert r.exit_code == 0 and "max_steps changed from 2 to 3" in r.output and "epochs changed" not in r.output


# ------------------------------------------------------------------------------------------ item 6
def test_ctrl_c_says_what_was_saved_and_leaves_no_empty_folder(tiny_store, eeg_root, tmp_path, monkeypatch):
    obj = objectives.OBJECTIVES["cbramod"]
    real = obj.loss
    calls = []

    def stop_at(n):
        def loss(*a, **k):
            calls.append(1)
            if len(calls) == n:
                raise KeyboardInterrupt
            return real(*a, **k)

        return loss

    base = ["--n-layers", "1", "--batch-size", "8", "--max-steps", "4", "--no-progress", "--device", "cpu"]
    monkeypatch.setattr(obj, "loss", stop_at(1))
    r = cli("pretrain", tiny_store, "-o", tmp_path / "pt", *base)
    assert r.exit_code == 130 and "before the first checkpoint: nothing saved" in r.output
    assert len(r.output.strip().splitlines()) == 2 and "Traceback" not in r.output  # "pretraining on …" + one line
    assert not (tmp_path / "pt").exists()
    calls.clear()
    monkeypatch.setattr(obj, "loss", stop_at(3))
    r = cli("pretrain", tiny_store, "-o", tmp_path / "pt", "--checkpoint-every", "2", *base)
    assert r.exit_code == 130 and "holds step 2 of 4" in r.output and "--resume" in r.output
    monkeypatch.setattr(obj, "loss", real)

    import neurokit.pipelines.finetune as ft

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(ft, "predict", interrupted)
    r = cli(
        "finetune",
        tiny_store,
        "-o",
        tmp_path / "runs" / "ft",
        "--n-layers",
        "1",
        "--epochs",
        "1",
        "--no-progress",
        "--device",
        "cpu",
        "--head",
        "avgpool",
    )
    assert r.exit_code == 130 and "nothing was saved" in r.output and not (tmp_path / "runs" / "ft").exists()

    import neurokit.io.eeg as io_eeg

    monkeypatch.setattr(io_eeg, "read_eeg", interrupted)
    r = cli(
        "prepare",
        "physionet_mi",
        "--task",
        "left_right_imagery",
        "--data-root",
        eeg_root,
        "-o",
        tmp_path / "new" / "mi.h5",
        "--subjects",
        "1",
    )
    assert r.exit_code == 130 and "no store written" in r.output and not (tmp_path / "new").exists()


# ------------------------------------------------------------------------------------------ item 8
def test_rerun_reuses_matching_stages_only(tiny_store, tmp_path):
    cfg = _small(max_steps=2)
    first = pretrain_or_resume([tiny_store], tmp_path / "pt", cfg)
    again = pretrain_or_resume([tiny_store], tmp_path / "pt", cfg)
    assert again["steps_run"] == 0 and again["steps"] == first["steps"] == 2
    with pytest.raises(ConfigError, match="holds another pretraining run .*--overwrite|overwrite=True"):
        pretrain_or_resume([tiny_store], tmp_path / "pt", _small(max_steps=2, seed=1))
    fcfg = FinetuneConfig(epochs=1, batch_size=16, head="avgpool", progress=False)
    rep, reused = finetune_or_reuse([tiny_store], tmp_path / "ft", fcfg, init=first["checkpoint"])
    rep2, reused2 = finetune_or_reuse([tiny_store], tmp_path / "ft", fcfg, init=first["checkpoint"])
    assert (reused, reused2) == (False, True) and rep2["test"] == rep["test"]
    with pytest.raises(FileExistsError, match="differs in epochs"):
        finetune_or_reuse(
            [tiny_store], tmp_path / "ft", FinetuneConfig(**{**fcfg.__dict__, "epochs": 2}), init=first["checkpoint"]
        )
    pretrain_or_resume([tiny_store], tmp_path / "pt", _small(max_steps=3))  # the init file changes
    with pytest.raises(FileExistsError, match="differs in init"):
        finetune_or_reuse([tiny_store], tmp_path / "ft", fcfg, init=first["checkpoint"])


# ----------------------------------------------------------------------------------------- item 11
def test_cli_speaks_cli(tiny_store, surface_root, tmp_path):
    r = cli("cards", "show", "physionet_mi")
    assert "classes: [left_fist, right_fist]" in r.output
    r = CliRunner().invoke(app, ["cards", "list"], env={"COLUMNS": "70"})
    assert "fsaverage5_rest" in r.output and "left_right_imagery" in r.output and "hcp7t_movie" in r.output
    r = cli("finetune", tiny_store, "--frozen", "False")
    assert r.exit_code == 2 and "--frozen is an on/off flag" in r.output and "--no-frozen to turn it off" in r.output
    r = cli("plot-surface", surface_root / "cifti" / "test.dscalar.nii", "-o", tmp_path / "x.png")
    assert r.exit_code == 2 and "--hemi L or --hemi R" in r.output and "hemi='L'" not in r.output
    unlabelled = tmp_path / "u.h5"
    shutil.copy(tiny_store, unlabelled)
    with h5py.File(unlabelled, "a") as f:
        f["labels"][:] = -1
    r = cli("finetune", unlabelled, "-o", tmp_path / "ft")
    assert (
        r.exit_code == 2
        and "PosixPath" not in r.output
        and f"{unlabelled}: no labelled samples" in r.output.replace("\n", "")
    )


def test_cli_error_for_missing_subjects_names_them(tuned, tiny_store):
    out, _ = tuned
    r = cli("evaluate", out / "best.pt", tiny_store, "--subjects", "99", "--device", "cpu")
    assert (
        r.exit_code == 2
        and "no sample of subjects ['S099'] in the store(s); subjects there: ['S001', 'S002', 'S007', 'S009']"
        in r.output
    )


# item 12 (the hemisphere task of fsaverage5_rest) and item 13's eegmat run: tests/test_readme.py runs them as
# the README writes them


# ----------------------------------------------------------------------------------------- item 13
def test_eeg_folder_card_reads_listed_formats(eeg_root):
    from neurokit.cards import load_card

    found = {p.path.name.split(".", 1)[1] for p in load_card("eeg_folder").files(eeg_root / "formats")}
    assert {"edf", "bdf", "gdf", "vhdr", "set"} <= found and any(f.endswith("fif") for f in found)


def test_init_weights_pinned_by_sha256_from_the_cli(tiny_store, tmp_path):
    """Issue 36 item 8: the CLI pins a weights file's SHA-256 (before, only the Python API could)."""
    from neurokit._utils.hashing import file_sha256

    torch.manual_seed(0)
    torch.save(CBraMod(n_layers=1).state_dict(), tmp_path / "w.pth")
    common = ["finetune", tiny_store, "--init", tmp_path / "w.pth", "--epochs", "1", "--batch-size", "16",
              "--no-progress", "--no-baselines"]  # fmt: skip
    r = cli(*common, "-o", tmp_path / "a", "--init-sha256", "0" * 64)
    assert r.exit_code != 0 and "differs from the expected 0000000000" in " ".join(r.output.split())
    r = cli(*common, "-o", tmp_path / "b", "--init-sha256", file_sha256(tmp_path / "w.pth"))
    assert r.exit_code == 0, r.output


def test_init_sha256_needs_init_and_a_sha256(tiny_store, tmp_path):
    r = cli("finetune", tiny_store, "-o", tmp_path / "a", "--init-sha256", "0" * 64, "--epochs", "1")
    assert r.exit_code == 2 and "pins the weights file of --init PATH" in " ".join(r.output.split())
    torch.save(CBraMod(n_layers=1).state_dict(), tmp_path / "w.pth")
    r = cli("finetune", tiny_store, "-o", tmp_path / "b", "--init", tmp_path / "w.pth", "--init-sha256", "xyz")
    assert r.exit_code == 2 and "give the 64 hexadecimal digits of a SHA-256" in " ".join(r.output.split())


def test_a_from_scratch_run_says_so_and_its_verdict_names_the_best_baseline(tiny_store, tmp_path):
    """Issue 44 item 10: ``neuro finetune`` without ``--init`` never said it trained from random weights, and printed
    AUROC beside balanced accuracy without saying whether the model or a baseline wins. The verdict is computed
    beside the baselines and kept in the report; the CLI prints what the report says."""
    import json

    r = cli("finetune", tiny_store, "-o", tmp_path / "ft", "--epochs", "1", "--n-layers", "1", "--batch-size", "8",
            "--no-progress")  # fmt: skip
    assert r.exit_code == 0, r.output
    said = " ".join(r.output.split())
    assert "init: none — the backbone starts from random weights (a from-scratch run)" in said
    assert "pretraining overlap" not in said  # nothing to check without initial weights
    rep = json.loads((tmp_path / "ft" / "report.json").read_text())
    v = rep["verdict"]
    assert v["metric"] == "auroc" and v["model"] == pytest.approx(rep["test"]["auroc"])
    scored = {k: b["test"]["auroc"] for k, b in rep["baselines"].items() if isinstance(b.get("test"), dict)}
    assert v["best_value"] == pytest.approx(max(scored.values())) and v["chance"] == 0.5
    assert v["beats_best"] == (v["model"] > v["best_value"])
    side = "above" if v["beats_best"] else "below"
    assert f"verdict on test AUROC: CBraMod {v['model']:.3f}, {side} the best classical baseline ({v['best']}: " in said


def test_pretrain_reads_in_the_order_asked(tiny_store, tmp_path, monkeypatch):
    import neurokit.training.trainer as trainer_mod
    from neurokit.training.optim import EpochSampler

    orders = []

    class Spy(EpochSampler):
        def __init__(self, *a, **kw):
            super().__init__(*a, **kw)
            orders.append(self.order)

    monkeypatch.setattr(trainer_mod, "EpochSampler", Spy)
    res = pretrain(tiny_store, tmp_path / "pt", _small(max_steps=1, read_order="block", val_fraction=0))
    assert res["steps"] == 1 and "block" in orders and "random" not in orders[1:]
    with pytest.raises(ConfigError, match="read_order='sorted'; allowed: random, block"):
        _small(read_order="sorted")


def test_a_resume_with_another_number_of_processes_is_refused(tiny_store, tmp_path):
    # a step reads one batch per process: the checkpoint's position means other windows with another world size
    import torch

    from neurokit.models.checkpoint import load_checkpoint

    res = pretrain(tiny_store, tmp_path / "pt", _small(max_steps=1, val_fraction=0))
    ckpt = tmp_path / "pt" / "last.pt"
    state = load_checkpoint(ckpt)
    assert res["steps"] == 1 and state["world_size"] == 1
    state["world_size"] = 2
    torch.save(state, ckpt)
    with pytest.raises(ConfigError, match=r"last.pt: written by a run of 2 process\(es\); this one has 1"):
        pretrain(tiny_store, tmp_path / "pt", _small(max_steps=2, val_fraction=0), resume=True)


def test_a_resume_that_would_hold_out_other_samples_is_refused(tiny_store, tmp_path):
    # a resumed run with another hold-out would score samples it trained on as held out
    pretrain(tiny_store, tmp_path / "pt", _small(max_steps=1, val_fraction=0.2))
    with pytest.raises(ConfigError, match="the held-out samples differ from the run's"):
        pretrain(tiny_store, tmp_path / "pt", _small(max_steps=2, val_fraction=0.4), resume=True)
    res = pretrain(tiny_store, tmp_path / "pt", _small(max_steps=2, val_fraction=0.2), resume=True)
    assert res["steps"] == 2
