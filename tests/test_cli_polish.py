"""User-facing faults of the ``neuro`` command found in review, one test per item: the baseline methods listed whole,
a run's findings printed once, ``--augment`` ranges by the option given, ``neuro prepare --no-progress``, run folders
that are files or the folder one stands in, the kind of run a folder holds, the benchmark's missing data root, and
``--model`` help from the registry."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import typer.main
import typer
from test_evaluation_confounds import _store
from typer.testing import CliRunner

from neurokit.cli.main import app

REPO = Path(__file__).resolve().parents[1]
SPLIT = ["--train-subjects", "1-4", "--val-subjects", "5", "--test-subjects", "6"]
SMALL = ["--n-layers", "1", "--epochs", "1", "--batch-size", "16", "--no-progress", "--device", "cpu"]


def _neuro(*args: str):
    return CliRunner().invoke(app, [str(a) for a in args], env={"COLUMNS": "200"})


def _flat(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture(scope="module")
def eog_store(tmp_path_factory):
    """Six subjects of 1-s windows whose labels step F8 − F7 (the eye-movement confound fires on it)."""
    return _store(tmp_path_factory.mktemp("polish") / "eog.h5", step_uv=20.0)


@pytest.fixture(scope="module")
def eog_run(eog_store, tmp_path_factory):
    """``neuro finetune`` of one epoch on :func:`eog_store`: its result and its run folder."""
    out = tmp_path_factory.mktemp("polish_ft") / "ft"
    r = _neuro("finetune", eog_store, "-o", out, "--head", "avgpool", "--no-baselines", *SPLIT, *SMALL)
    return r, out


# ------------------------------------------------------------------------------------------ item 1
def test_baseline_unknown_method_lists_every_method_in_one_line(eog_store):
    r = _neuro("baseline", eog_store, "--method", "foo", *SPLIT)
    assert r.exit_code == 2, r.output
    assert r.output.strip() == (
        "error: --method foo: unknown baseline; allowed: csp_lda, riemann_lr, bandpower_lr, patchmean_lr, eegnet"
    )


# ------------------------------------------------------------------------------------------ item 2
@pytest.mark.slow
def test_finetune_prints_the_confound_warning_once(eog_run):
    r, out = eog_run
    assert r.exit_code == 0, r.output
    assert json.loads((out / "report.json").read_text())["confounds"]["fired"]
    assert _flat(r.output).count("decodable") == 1, r.output
    assert "eye-movement confound: labels are decodable from eye-movement channels: AUROC" in _flat(r.output)


# ------------------------------------------------------------------------------------------ item 3
@pytest.mark.parametrize(
    "spec, message",
    [
        ("p=2", "augment p=2 must be in [0, 1] (the probability that each transform is applied to a sample)"),
        ("noise=5,p=1.5", "augment p=1.5 must be in [0, 1] (the probability that each transform is applied"),
        ("channel_dropout=1", "augment channel_dropout=1 must be in [0, 1) (the probability that a channel is zeroed)"),
        ("scale=-0.1", "augment scale=-0.1 must be in [0, 1) (factors U(1-s, 1+s) stay positive)"),
        ("noise=-5", "augment noise=-5 must be a number >= 0"),
    ],
)
def test_augment_out_of_range_names_the_option_given_and_its_range(eog_store, tmp_path, spec, message):
    r = _neuro("finetune", eog_store, "-o", tmp_path / "ft", "--augment", spec, *SPLIT, *SMALL)
    assert r.exit_code == 2, r.output
    assert r.output.startswith(f"error: {message}"), r.output
    given = {part.split("=")[0] for part in spec.split(",")}
    assert [name for name in ("channel_dropout", "p", "scale") if name not in given and f"{name}=" in r.output] == []
    assert not (tmp_path / "ft").exists()


# ------------------------------------------------------------------------------------------ item 4
def test_prepare_takes_no_progress_as_pretrain_and_finetune_do(eeg_root, tmp_path):
    cmd = typer.main.get_command(app)
    flags = {
        name: [(p.opts, p.secondary_opts) for p in cmd.commands[name].params if p.name == "progress"]
        for name in ("prepare", "pretrain", "finetune")
    }
    assert flags["prepare"] == flags["pretrain"] == flags["finetune"] == [(["--progress"], ["--no-progress"])]
    args = ["prepare", "physionet_mi", "-o", tmp_path / "s.h5", "--data-root", eeg_root, "--task", "left_right_imagery"]
    r = _neuro(*args, "--subjects", "1", "--channels", "C3,Cz,C4", "--no-progress")
    assert r.exit_code == 0, r.output
    assert not [line for line in r.output.splitlines() if line.startswith("prepare physionet_mi:")], r.output
    assert f"wrote {tmp_path / 's.h5'}: 45 samples of shape (3, 4, 200)" in r.output


# ------------------------------------------------------------------------------------------ item 5
@pytest.mark.parametrize("command", ["pretrain", "finetune"])
def test_a_file_given_as_the_run_folder_is_refused_in_one_line(eog_store, tmp_path, command):
    f = tmp_path / "notes.txt"
    f.write_text("mine")
    r = _neuro(command, eog_store, "-o", f, *SPLIT if command == "finetune" else [], *SMALL)
    assert r.exit_code == 2, r.output
    assert r.output.splitlines()[-1] == f"error: {f} is a file, not a run folder; choose another output folder"
    assert f.read_text() == "mine" and sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


@pytest.mark.parametrize("out, where", [(".", "is the folder you are in"), ("..", "holds the folder you are in")])
def test_overwrite_of_the_folder_one_stands_in_is_refused(eog_store, tmp_path, monkeypatch, out, where):
    run = tmp_path / "run"
    (run / "sub").mkdir(parents=True)
    (run / "metrics.jsonl").write_text('{"step": 1, "loss": 1.0}\n')
    (run / "pretrain_summary.json").write_text("{}")
    monkeypatch.chdir(run if out == "." else run / "sub")
    r = _neuro("pretrain", eog_store, "-o", out, "--overwrite", *SMALL)
    assert r.exit_code == 2, r.output
    line = r.output.splitlines()[-1]
    assert line.startswith(f"error: {out} {where}") and "empty name" not in line, r.output
    assert line.endswith(
        "--overwrite moves the earlier output aside and the new one in its place, which would pull the current "
        "folder from under you; run the command from outside that folder, or choose another output folder"
    )
    assert sorted(p.name for p in run.iterdir()) == ["metrics.jsonl", "pretrain_summary.json", "sub"]
    assert (run / "metrics.jsonl").read_text() == '{"step": 1, "loss": 1.0}\n'


# ------------------------------------------------------------------------------------------ item 6
@pytest.mark.slow
def test_a_folder_of_another_kind_of_run_is_named_by_its_kind(eog_store, eog_run, tmp_path):
    _, ft = eog_run
    before = sorted(p.name for p in ft.iterdir())
    r = _neuro("pretrain", eog_store, "-o", ft, *SMALL)
    assert r.exit_code == 2, r.output
    line = r.output.splitlines()[-1]
    assert f"error: {ft} already holds a run (best.pt, " in line, line
    assert line.endswith(
        ": a fine-tuning run, from neuro finetune), not a pretraining run; choose another output folder, or pass "
        "--overwrite to replace it"
    )
    assert "--resume" not in line and sorted(p.name for p in ft.iterdir()) == before
    m4oe = tmp_path / "m4oe"
    m4oe.mkdir()
    (m4oe / "report.json").write_text(json.dumps({"head": "m4oe", "tasks": {}}))
    line = _neuro("pretrain", eog_store, "-o", m4oe, *SMALL).output.splitlines()[-1]
    assert "(report.json: an M4oE run, from neuro finetune with --head m4oe), not a pretraining run;" in line, line
    pre = tmp_path / "pre"
    pre.mkdir()
    (pre / "pretrain_summary.json").write_text("{}")
    line = _neuro("finetune", eog_store, "-o", pre, *SPLIT, *SMALL).output.splitlines()[-1]
    assert "(pretrain_summary.json: a pretraining run, from neuro pretrain), not a fine-tuning run;" in line, line
    line = _neuro("pretrain", eog_store, "-o", pre, *SMALL).output.splitlines()[-1]  # the same kind, no last.pt
    assert "(pretrain_summary.json, of a pretraining run); pass --overwrite to clear it" in line, line
    assert "--resume" not in line  # nothing to resume without a checkpoint
    (pre / "last.pt").write_bytes(b"")  # with one, --resume is offered
    line = _neuro("pretrain", eog_store, "-o", pre, *SMALL).output.splitlines()[-1]
    assert "pass --resume to continue it, --overwrite" in line, line


# ------------------------------------------------------------------------------------------ item 7
def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_eeg_pipeline_benchmark_without_a_data_root_is_an_argparse_error(tmp_path, monkeypatch, capsys):
    # the script where no ../shared lies beside its repository: the default --data-root does not exist
    copy = tmp_path / "repo" / "benchmarks" / "eeg_pipeline.py"
    copy.parent.mkdir(parents=True)
    shutil.copy(REPO / "benchmarks" / "eeg_pipeline.py", copy)
    bench = _load(copy, "_eeg_pipeline_copy")
    monkeypatch.setattr(sys, "argv", ["eeg_pipeline.py", "--device", "cpu"])
    with pytest.raises(SystemExit) as exc:
        bench.main()
    assert exc.value.code == 2
    err = capsys.readouterr().err.splitlines()[-1]
    assert err == (
        f"eeg_pipeline.py: error: --data-root {tmp_path / 'shared/data/eeg'}: no such folder; give the folder holding "
        "MNE-eegbci-data/ (e.g. --data-root ../shared/data/eeg), or --only pretrain layer (no recordings needed)"
    )


@pytest.mark.parametrize("script", ["eeg_memory", "pretraining_value"])
def test_the_other_eeg_benchmarks_refuse_a_missing_data_root(tmp_path, monkeypatch, capsys, script):
    bench = _load(REPO / "benchmarks" / f"{script}.py", f"_{script}_bench")
    argv = ["--data-root", str(tmp_path / "none")] + (["--out", str(tmp_path / "o")] if script != "eeg_memory" else [])
    monkeypatch.setattr(sys, "argv", [f"{script}.py", *argv])
    with pytest.raises(SystemExit) as exc:
        bench.main() if script == "eeg_memory" else bench.parse_args(argv)
    assert exc.value.code == 2
    assert f"error: --data-root {tmp_path / 'none'}: no such folder; give the folder holding" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


# ------------------------------------------------------------------------------------------ item 8
def test_model_help_lists_the_registrys_families(monkeypatch):
    pre = _flat(_neuro("pretrain", "--help").output)
    assert "Model family: cbramod (EEG), sit (surface fMRI) or clip (surface fMRI, needs --stimuli)." in pre
    ft = _flat(_neuro("finetune", "--help").output)
    assert (
        "Model family of a from-scratch backbone: cbramod (EEG), sit (surface fMRI), clip (surface fMRI), "
        "eegnet (EEG), labram (EEG), eegpt (EEG), reve (EEG), biot (EEG), luna (EEG) or codebrain (EEG)."
    ) in ft
    # generated from the registry: a family added there is listed where the option accepts it
    from neurokit.models import registry

    monkeypatch.setitem(registry.MODELS, "toy", registry.MODELS["eegnet"])
    assert "luna (EEG), codebrain (EEG) or toy (EEG)." in _flat(_neuro("finetune", "--help").output)
    assert "toy" not in _flat(_neuro("pretrain", "--help").output)  # no pretraining objective
    # the registry (and torch) is imported for the help only, not by every command
    code = "import sys, neurokit.cli.main; print('torch' in sys.modules)"
    res = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert res.stdout.strip() == "False", res.stderr


# ------------------------------------------------------------------ neuro prepare's output and its remedies
@pytest.fixture
def edf_case(shared, tmp_path):
    """The shared plain card and one of its EDF cases copied into ``tmp_path``, and a truncated copy."""
    edges = shared / "cases" / "edges"
    good = tmp_path / "rec.edf"
    shutil.copy(edges / "blank_units.edf", good)
    data = good.read_bytes()
    bad = tmp_path / "cut.edf"
    bad.write_bytes(data[: len(data) - (len(data) - 256 * 4) // 2])  # header kept, half the data records gone
    return edges / "plain_card.yaml", good, bad


@pytest.mark.parametrize("name", ["notes.txt", "mine.h5"])
def test_prepare_never_replaces_a_file_that_is_not_a_store(edf_case, tmp_path, name):
    """A user's file at the output path, even with --overwrite: refused in one line, the file untouched (before,
    --overwrite replaced it with a store and the refusal without it called it a store)."""
    card, good, _ = edf_case
    mine = tmp_path / name
    mine.write_text("my own notes\n")
    for extra in ([], ["--overwrite"]):
        r = _neuro("prepare", card, "--task", "lr", "-f", good, "-o", mine, "--units", "uV", "--no-progress", *extra)
        assert r.exit_code == 2, r.output
        line = r.output.strip().splitlines()[-1]
        assert line == (
            f"error: {mine}: exists and is not a neurokit patch store; it is not replaced (not even with "
            "--overwrite): choose another output path, or move the file away yourself"
        ), r.output
        assert mine.read_text() == "my own notes\n"
    # a store of neurokit's is still replaced with --overwrite
    store = tmp_path / "s.h5"
    for extra in ([], ["--overwrite"]):
        r = _neuro("prepare", card, "--task", "lr", "-f", good, "-o", store, "--units", "uV", "--no-progress", *extra)
        assert r.exit_code == 0, r.output


def test_a_truncated_file_is_read_with_allow_truncated_from_the_cli(edf_case, tmp_path):
    """The refusal of a truncated file names the CLI's remedies, and --allow-truncated reads the part there."""
    card, _, bad = edf_case
    r = _neuro("prepare", card, "--task", "lr", "-f", bad, "-o", tmp_path / "a.h5", "--units", "uV", "--no-progress")
    assert r.exit_code == 2 and "truncated file" in r.output, r.output
    assert "with --allow-truncated" in _flat(r.output) and "--skip-bad" in r.output
    r = _neuro(
        "prepare", card, "--task", "lr", "-f", bad, "-o", tmp_path / "b.h5", "--units", "uV", "--no-progress",
        "--allow-truncated",
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    from neurokit.store.patch_store import PatchStore

    st = PatchStore(tmp_path / "b.h5")
    assert len(st) > 0 and st.sample_shape[0] == 3


def _prepare_mi_s001(eeg_root, out, *extra):
    """``neuro prepare physionet_mi`` (left/right imagery) of subject 1 into ``out``, with ``extra`` options."""
    return _neuro("prepare", "physionet_mi", "--task", "left_right_imagery", "--subjects", "1",
                  "--data-root", eeg_root, "-o", out, "--no-progress", *extra)  # fmt: skip


S001R04 = "MNE-eegbci-data/files/eegmmidb/1.0.0/S001/S001R04.edf"


def test_prepare_with_zero_jobs_names_the_option(tmp_path, eeg_root):
    res = _prepare_mi_s001(eeg_root, tmp_path / "s.h5", "-j", "0")
    assert res.exit_code == 2, res.output
    assert "--n-jobs 0: give 1 (this process)" in _flat(res.output)
    assert "Parallel has no meaning" not in res.output
    assert not (tmp_path / "s.h5").exists()


def test_subjects_options_of_every_command_refuse_empty_and_backwards_values():
    from neurokit.cli.common import parse_splits, parse_subjects

    assert parse_subjects(None) is None
    assert parse_subjects(" 1 - 3 ,7") == ["S001", "S002", "S003", "S007"]
    assert parse_subjects("1,,2") == ["S001", "S002"]
    assert parse_subjects("sub-01, sub-02") == ["sub-01", "sub-02"]
    for bad in ("", " , ", "3-1", "1-30000000"):
        with pytest.raises(typer.Exit) as exc:
            parse_subjects(bad)
        assert exc.value.exit_code == 2
    with pytest.raises(typer.Exit):  # an empty split is not "the card's splits"
        parse_splits("", "", "")


@pytest.mark.parametrize(("flag", "value"), [("--crop-start", "-5"), ("--crop-end", "nan"), ("--min-duration", "inf")])
def test_crops_and_durations_are_seconds_zero_or_more(tmp_path, eeg_root, flag, value):
    """Negative crops were taken silently; nan/inf failed inside a file's processing, blamed on the file."""
    res = _prepare_mi_s001(eeg_root, tmp_path / "s.h5", f"{flag}={value}")
    assert res.exit_code == 2, res.output
    assert f"{flag} {float(value)!r}: give a number of seconds, 0 or more" in _flat(res.output)
    assert not (tmp_path / "s.h5").exists()


def test_worker_counts_are_bounded(monkeypatch):
    from neurokit._utils import parallel
    from neurokit._utils.errors import ConfigError

    with pytest.raises(ConfigError, match=r"n_jobs=-1000: this machine has \d+ cores"):
        list(parallel.map_ordered(abs, [1, 2], n_jobs=-1000))
    started = []

    class Parallel:  # joblib's, recording how many workers it would start
        def __init__(self, n_jobs, **kwargs):
            started.append(n_jobs)

        def __call__(self, tasks):
            return [f(*a, **k) for f, a, k in tasks]

    import joblib

    monkeypatch.setattr(joblib, "Parallel", Parallel)
    assert list(parallel.map_ordered(abs, [-1, -2, -3], n_jobs=99999)) == [1, 2, 3]
    assert started == [3]  # three recordings: three workers, not 99,999


def test_prepare_refuses_subjects_beside_explicit_files(tmp_path, eeg_root):
    """--subjects 2 with -f S001R04.edf wrote subject 1's windows without a word."""
    res = _neuro("prepare", "physionet_mi", "--task", "left_right_imagery", "-f", eeg_root / S001R04,
                 "--subjects", "2", "-o", tmp_path / "s.h5", "--no-progress")  # fmt: skip
    assert res.exit_code == 2 and "with -f the files given (1) are the selection" in _flat(res.output)
    assert not (tmp_path / "s.h5").exists()


def test_every_window_rejected_says_why(tmp_path, eeg_root):
    """reject_uv 100 µV rejects all 4 windows of S001R04 (EEGMMIDB's unfiltered amplitudes): the reason is named,
    not only 'no samples were written'."""
    res = _neuro("prepare", "eeg_folder", "-f", eeg_root / S001R04, "--min-duration", "0", "--crop-start", "0",
                 "--crop-end", "0", "-o", tmp_path / "s.h5", "--no-progress")  # fmt: skip
    assert res.exit_code == 2, res.output
    assert "every window of the 1 recording(s) read was rejected (4 above the recipe's reject_uv (100 µV))" in _flat(
        res.output
    )
    assert not (tmp_path / "s.h5").exists() and not list(tmp_path.iterdir())
