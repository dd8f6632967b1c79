"""``--overwrite`` replaces only what the earlier run wrote (the entries its manifest lists, or for a folder
from before the manifest the files runs write): the user's notes, configs, figures and sub-folders in the run
folder stay byte-identical, one line names them, and an overwrite stopped half-way still keeps the earlier run."""

import json
import os

import pytest
from test_pipelines_runs import tiny_store  # noqa: F401  (S001, S002 train, S007 val, S009 test; C3 Cz C4)
from typer.testing import CliRunner

from neurokit._utils.errors import Interrupted
from neurokit._utils.staging import MANIFEST, StagedOutput, claim_entries, own_entries, remove_run
from neurokit.cli.main import app

FINETUNE = ["--n-layers", "1", "--batch-size", "16", "--no-progress", "--device", "cpu", "--no-baselines"]


def cli(*args):
    return CliRunner().invoke(app, [str(a) for a in args], env={"COLUMNS": "250"})


def one_line(r) -> str:
    return " ".join(r.output.split())


def _add_user_files(out):
    """A note, a config of the user's own (its name looks like a run's config) and a sub-folder of figures."""
    (out / "notes.txt").write_text("lr 1e-4 looked better\n")
    (out / "my_config.yaml").write_text("lr: 0.0001\n")
    (out / "figs").mkdir()
    (out / "figs" / "loss.png").write_bytes(b"\x89PNG not really")
    (out / "figs" / "deep").mkdir()
    (out / "figs" / "deep" / "x.csv").write_text("1,2\n")
    return _tree(out, ("notes.txt", "my_config.yaml", "figs"))


def _tree(out, names):
    """Every file under the entries ``names`` of ``out``: relative path → bytes."""
    found = {}
    for name in names:
        p = out / name
        for q in [p] if p.is_file() else sorted(p.rglob("*")):
            if q.is_file():
                found[str(q.relative_to(out))] = q.read_bytes()
    return found


def _steps(out):
    return [d["step"] for d in map(json.loads, (out / "metrics.jsonl").read_text().splitlines()) if "loss" in d]


def test_pretrain_overwrite_keeps_the_users_files_and_names_them(tiny_store, tmp_path):  # noqa: F811
    out = tmp_path / "pre"
    common = ["pretrain", tiny_store, "-o", out, *"--n-layers 1 --epochs 1 --batch-size 16 --no-progress".split()]
    r = cli(*common, "--max-steps", "3")
    assert r.exit_code == 0, r.output
    assert _steps(out) == [1, 2, 3]
    assert json.loads((out / MANIFEST).read_text())["entries"] == [
        "last.pt",
        "metrics.csv",
        "metrics.jsonl",
        "pretrain_summary.json",
        "run_config.json",
    ]
    mine = _add_user_files(out)
    first = (out / "last.pt").read_bytes()
    r = cli(*common, "--max-steps", "1", "--seed", "1", "--overwrite")
    assert r.exit_code == 0, r.output
    assert _tree(out, ("notes.txt", "my_config.yaml", "figs")) == mine  # byte-identical, the sub-folder whole
    assert _steps(out) == [1]  # the new run's log only
    assert (out / "last.pt").read_bytes() != first
    assert json.loads((out / "run_config.json").read_text())["settings"]["seed"] == 1
    assert f"{out}: kept 3 files that are not this run's: figs/, my_config.yaml, notes.txt" in one_line(r)
    assert sorted(p.name for p in out.iterdir()) == [
        MANIFEST,
        "figs",
        "last.pt",
        "metrics.csv",
        "metrics.jsonl",
        "my_config.yaml",
        "notes.txt",
        "pretrain_summary.json",
        "run_config.json",
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pre"]  # no sibling left


def test_finetune_overwrite_keeps_the_users_files_and_replaces_the_runs_plots(tiny_store, tmp_path):  # noqa: F811
    out = tmp_path / "ft"
    r = cli("finetune", tiny_store, "-o", out, "--epochs", "1", "--plots", *FINETUNE)
    assert r.exit_code == 0, r.output
    listed = set(json.loads((out / MANIFEST).read_text())["entries"])  # every entry the run and --plots wrote
    assert listed == {p.name for p in out.iterdir()} - {MANIFEST}
    assert {"best.pt", "last.pt", "metrics.jsonl", "report.json", "predictions.npz", "plots"} <= listed
    mine = _add_user_files(out)
    r = cli("finetune", tiny_store, "-o", out, "--epochs", "2", "--overwrite", *FINETUNE)
    assert r.exit_code == 0, r.output
    assert _tree(out, ("notes.txt", "my_config.yaml", "figs")) == mine
    rep = json.loads((out / "report.json").read_text())
    assert len(rep["history"]) == 2 and rep["config"]["settings"]["epochs"] == 2  # the new run's report
    epochs = {d["epoch"] for d in map(json.loads, (out / "metrics.jsonl").read_text().splitlines()) if "epoch" in d}
    assert epochs == {1, 2}
    assert not (out / "plots").exists()  # the earlier run's figures went with it (this run drew none)
    assert f"{out}: kept 3 files that are not this run's: figs/, my_config.yaml, notes.txt" in one_line(r)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ft"]


def test_interrupted_overwrite_keeps_the_earlier_run_and_the_users_files(tiny_store, tmp_path, monkeypatch):  # noqa: F811
    from neurokit.training.config import PretrainConfig
    from neurokit.pipelines.pretrain import pretrain
    from neurokit.training import trainer as tr

    out = tmp_path / "pre"
    cfg = PretrainConfig(model_kwargs={"n_layers": 1}, epochs=1, max_steps=2, batch_size=16, progress=False)
    pretrain(tiny_store, out, cfg)
    _add_user_files(out)
    before = _tree(out, [p.name for p in out.iterdir()])
    monkeypatch.setattr(tr, "optimizer_step", lambda *a, **k: (_ for _ in ()).throw(KeyboardInterrupt()))
    with pytest.raises(Interrupted, match="the earlier run in .* is unchanged"):
        pretrain(tiny_store, out, cfg, overwrite=True)
    assert _tree(out, [p.name for p in out.iterdir()]) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pre"]


# ------------------------------------------------------------------------------ the swap itself, without training
def _run(folder, names, text="old"):
    folder.mkdir(parents=True, exist_ok=True)
    for n in names:
        (folder / n).write_text(text)


def test_a_folder_from_before_the_manifest_keeps_what_runs_do_not_write(tmp_path):
    out = tmp_path / "run"
    _run(out, ["last.pt", "metrics.jsonl", "report.json", "run_config.json", "config.yaml", "notes.txt"])
    _run(out / "fold-01-S001", ["best.pt", "report.json"])
    _run(out / "plots", ["roc.png"])
    _run(out / "fold-02-mine", ["report.json", "mine.txt"])  # a fold folder holding a file no run writes
    assert sorted(own_entries(out)) == [
        "fold-01-S001",
        "last.pt",
        "metrics.jsonl",
        "plots",
        "report.json",
        "run_config.json",
    ]
    st = StagedOutput(out, replace=True, run_folder=True)
    _run(st.work, ["last.pt", "metrics.jsonl"], "new")
    st.commit()
    assert sorted(p.name for p in out.iterdir()) == [
        MANIFEST, "config.yaml", "fold-02-mine", "last.pt", "metrics.jsonl", "notes.txt"
    ]  # fmt: skip
    assert (out / "last.pt").read_text() == "new" and (out / "config.yaml").read_text() == "old"
    assert st.kept == ["config.yaml", "fold-02-mine", "notes.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]


def test_a_users_file_of_a_name_the_new_run_writes_is_kept_beside_it(tmp_path, caplog):
    out = tmp_path / "run"
    _run(out, ["last.pt", "results.csv"])
    (out / MANIFEST).write_text(json.dumps({"entries": ["last.pt"]}))  # results.csv is the user's
    st = StagedOutput(out, replace=True, run_folder=True)
    _run(st.work, ["last.pt", "results.csv"], "new")
    with caplog.at_level("WARNING", logger="neurokit"):
        st.commit()
    assert (out / "results.csv").read_text() == "new" and (out / "results.csv.kept").read_text() == "old"
    assert f"{out}: kept 1 file that is not this run's: results.csv (as results.csv.kept" in caplog.text


def test_a_commit_stopped_half_way_puts_the_users_entries_back(tmp_path, monkeypatch):
    out = tmp_path / "run"
    _run(out, ["last.pt", "a.txt", "b.txt"])
    st = StagedOutput(out, replace=True, run_folder=True)
    _run(st.work, ["last.pt"], "new")
    real, calls = os.replace, []

    def stop_on_the_second_user_entry(src, dst):
        calls.append(src)
        if str(src).endswith(".run.old/b.txt"):
            raise KeyboardInterrupt
        return real(src, dst)

    monkeypatch.setattr(os, "replace", stop_on_the_second_user_entry)
    with pytest.raises(KeyboardInterrupt):
        st.commit()
    monkeypatch.undo()
    assert (tmp_path / ".run.old" / "b.txt").exists()  # stopped with b.txt still beside
    st.abandon(KeyboardInterrupt())  # what the pipelines do on a stop: the new run is in place, nothing raised
    assert sorted(p.name for p in out.iterdir()) == [MANIFEST, "a.txt", "b.txt", "last.pt"]
    assert (out / "b.txt").read_text() == "old" and (out / "last.pt").read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]


def test_a_run_into_a_folder_of_the_users_claims_only_what_it_wrote(tmp_path):
    out = tmp_path / "mine"
    _run(out, ["notes.txt", "report.json.bak"])
    st = StagedOutput(out, replace=False, run_folder=True)  # no run there: written straight into it
    _run(out, ["last.pt", "metrics.jsonl", "scratch.txt"], "new")  # scratch.txt: a user's file written meanwhile
    st.commit()
    assert sorted(own_entries(out)) == [MANIFEST, "last.pt", "metrics.jsonl"]
    (out / "plots").mkdir()
    claim_entries(out, ["plots"])
    assert sorted(own_entries(out)) == [MANIFEST, "last.pt", "metrics.jsonl", "plots"]
    assert remove_run(out) is False  # the user's files keep the folder
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt", "report.json.bak", "scratch.txt"]
