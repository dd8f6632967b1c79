"""Issue 28 item 4: one run per run folder. A fresh run into a folder that holds any run file (a dead run's
``metrics.jsonl``, a report, a checkpoint, a config) is refused unless ``--overwrite`` (which replaces them, keeping the user's other files) or
``--resume``, so two runs never share a log."""

import json

import pytest
from test_pipelines_runs import tiny_store  # noqa: F401  (S001, S002 train, S007 val, S009 test; C3 Cz C4)
from typer.testing import CliRunner

from neurokit._utils.staging import run_files
from neurokit.cli.main import app
from neurokit.training.config import FinetuneConfig
from neurokit.pipelines.finetune import finetune
from neurokit.training.config import PretrainConfig
from neurokit.pipelines.pretrain import pretrain

#: the log of a dead run: eight pretraining steps, no checkpoint
STALE = "".join(json.dumps({"step": s, "epoch": 0, "loss": 9.0, "stale": True}) + "\n" for s in range(1, 9))


def _dead_run(folder, name="metrics.jsonl"):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(STALE)
    return folder


def test_run_files_lists_logs_reports_checkpoints_configs(tmp_path):
    out = tmp_path / "run"
    assert run_files(out) == []  # no folder yet
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    (out / ".run.lock").write_text("")
    assert run_files(out) == []  # a user's own file is not a run
    for name in ("metrics.jsonl", "report.json", "best.pt", "config.json", "pretrain_summary.json"):
        (out / name).write_text("{}")
    (out / "fold0").mkdir()
    (out / "fold0" / "last.pt").write_text("")
    assert [str(p.relative_to(out)) for p in run_files(out)] == [
        "best.pt",
        "config.json",
        "fold0/last.pt",
        "metrics.jsonl",
        "pretrain_summary.json",
        "report.json",
    ]


def test_pretrain_refuses_a_dead_runs_log_and_overwrite_clears_it(tiny_store, tmp_path):  # noqa: F811
    out = _dead_run(tmp_path / "pre")
    cfg = PretrainConfig(model_kwargs={"n_layers": 1}, epochs=1, max_steps=2, batch_size=16, progress=False, seed=0)
    # no last.pt: nothing to resume, so --resume is not offered (issue 35 item 8)
    with pytest.raises(FileExistsError, match=r"already holds a run \(metrics\.jsonl\); pass overwrite=True") as e:
        pretrain(tiny_store, out, cfg)
    assert "--resume" not in str(e.value)
    assert (out / "metrics.jsonl").read_text() == STALE  # refused: nothing appended, nothing lost
    r = CliRunner().invoke(
        app, ["pretrain", str(tiny_store), "-o", str(out), "--n-layers", "1", "--max-steps", "2", "--no-progress"]
    )
    assert r.exit_code != 0 and "metrics.jsonl" in r.output and "--overwrite" in r.output
    assert (out / "metrics.jsonl").read_text() == STALE
    pretrain(tiny_store, out, cfg, overwrite=True)
    lines = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert not any(d.get("stale") for d in lines)
    assert [d["step"] for d in lines if "loss" in d and "step" in d][:2] == [1, 2]


@pytest.mark.parametrize("name", ["metrics.jsonl", "report.json", "config.json"])
def test_finetune_refuses_a_folder_holding_any_run_file(tiny_store, tmp_path, name):  # noqa: F811
    out = _dead_run(tmp_path / "ft", name)
    cfg = FinetuneConfig(model_kwargs={"n_layers": 1}, epochs=1, batch_size=16, progress=False, device="cpu")
    with pytest.raises(FileExistsError, match=rf"already holds a run \({name}.*overwrite=True") as e:
        finetune(tiny_store, out, cfg)
    assert "resume" not in str(e.value)
    assert (out / name).read_text() == STALE
