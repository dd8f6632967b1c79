"""Clinical readers and cards, classical baselines, and `neuro finetune --head m4oe` end to end on small
stores (train, resume, evaluate, plot) with the bad-input errors of issue 9."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from neurokit.cards import load_card
from neurokit.cli.main import app
from neurokit.store.patch_store import PatchStoreWriter
from neurokit.datasets.classic import read_bonn, read_eegmat, read_smni

runner = CliRunner()


def test_bonn_reader_and_card(eeg_root):
    raw = read_bonn(eeg_root / "bonn" / "S.zip", "S001.txt")
    assert raw.ch_names == ["EEG"] and raw.info["sfreq"] == pytest.approx(173.61)
    assert raw.n_times == 4097  # the published segments hold 4097 samples
    assert list(raw.annotations.description) == ["set/S"]
    # first samples of S001.txt are 100, 124, 153 µV
    np.testing.assert_allclose(raw.get_data()[0, :3], [100e-6, 124e-6, 153e-6])
    card = load_card("bonn_epilepsy")
    files = card.files(eeg_root, "seizure")
    assert len(files) == 500 and {f.subject for f in files} == {f"seg{i:03d}" for i in range(1, 101)}
    assert files[0].events == {"set/Z": 0, "set/O": 0, "set/N": 0, "set/F": 0, "set/S": 1}


def test_smni_and_eegmat_readers(eeg_root):
    raw = read_smni(eeg_root / "smni_uci_alcoholism" / "SMNI_CMI_TRAIN" / "co2a0000364" / "co2a0000364.rd.000.gz")
    assert raw.info["sfreq"] == 256.0 and raw.n_times == 256 and len(raw.ch_names) == 61
    assert "Fp1" in raw.ch_names and "X" not in raw.ch_names and "nd" not in raw.ch_names
    assert raw.get_data()[raw.ch_names.index("Fp1"), 0] == pytest.approx(-8.921e-6)
    assert sorted(raw.annotations.description) == ["group/alcoholic", "stimulus/S1 obj"]
    assert len(load_card("smni_alcoholism").files(eeg_root, "alcoholism")) == 40
    r = read_eegmat(eeg_root / "eegmat" / "1.0.0" / "Subject02_2.edf")
    assert r.ch_names[-1] == "ECG" and r.get_channel_types()[-1] == "ecg" and "T7" in r.ch_names
    assert list(r.annotations.description) == ["state/arithmetic"]


def test_prepare_bonn_tiles_segments(eeg_root, tmp_path):
    from neurokit.store.patch_store import PatchStore
    from neurokit.pipelines.prepare import prepare

    path = prepare("bonn_epilepsy", tmp_path / "b.h5", data_root=eeg_root, task="seizure", subjects=[1], progress=False)
    st = PatchStore(path)
    # segment 1 of each of the five sets: 23.6 s → five 4-s windows each
    assert st.sample_shape == (1, 4, 200) and len(st) == 25
    assert (st.labels == 1).sum() == 5 and set(st.meta["run"]) == {"Z001", "O001", "N001", "F001", "S001"}
    assert st.attrs["sources"][0]["member"].endswith(".txt")


def _store(path, card, task, ch, subjects, n_per, rng, classes=2, ecg=False):
    """Labelled store: class 1 has a 10 Hz rhythm of larger amplitude on the 'EEG' channels, and, with
    ``ecg``, class 1 also has a faster heart beat on the ECG channel."""
    body = load_card(card).raw
    t = np.arange(200) / 200.0
    with PatchStoreWriter(
        path,
        (len(ch), 1, 200),
        attrs=dict(
            modality="eeg",
            card=card,
            card_body=body,
            task=task,
            label_names=load_card(card).classes(task),
            ch_names=ch,
            sfreq=200.0,
        ),
    ) as w:
        for s in subjects:
            y = rng.integers(0, classes, n_per)
            x = rng.normal(0, 0.3, (n_per, len(ch), 1, 200)).astype(np.float32)
            x += (y[:, None, None, None] * 1.5 * np.sin(2 * np.pi * 10 * t)).astype(np.float32)
            w.append(x, y, subject=s, run=[f"{s}_{i}" for i in range(n_per)])
    return path


@pytest.fixture(scope="session")
def small_stores(tmp_path_factory):
    rng = np.random.default_rng(0)
    d = tmp_path_factory.mktemp("m4oe")
    bonn = _store(d / "bonn.h5", "bonn_epilepsy", "seizure", ["EEG"], ["seg001", "seg002", "seg061", "seg081"], 8, rng)
    mat = _store(
        d / "mat.h5",
        "eegmat",
        "arithmetic",
        load_card("eegmat").raw["preprocessing"]["channels"],
        ["S002", "S003", "S004"],
        8,
        rng,
    )
    other = _store(
        d / "bonn5.h5", "bonn_epilepsy", "healthy_vs_epileptic", ["EEG"], ["seg001", "seg061", "seg081"], 4, rng
    )
    return {"bonn": bonn, "mat": mat, "other": other, "dir": d}


def test_baseline_cli_takes_subject_splits(small_stores, tmp_path):
    """A store the card's splits do not fit: the error's advice (--train/--val/--test-subjects) works for
    `neuro baseline` too (the review found the option missing)."""
    res = runner.invoke(
        app,
        [
            "baseline",
            str(small_stores["mat"]),
            "--train-subjects",
            "S002",
            "--val-subjects",
            "S003",
            "--test-subjects",
            "S004",
            "--json",
            str(tmp_path / "b.json"),
        ],
    )
    assert res.exit_code == 0, res.output
    out = json.loads((tmp_path / "b.json").read_text())
    assert out["n_samples"] == {"train": 8, "val": 8, "test": 8}  # one subject of 8 trials in each split
    res = runner.invoke(app, ["baseline", str(small_stores["mat"]), "--train-subjects", "S002"])
    assert res.exit_code == 2 and "give all three of --train-subjects, --val-subjects and --test-subjects" in res.output


def test_baseline_cli(small_stores, tmp_path):
    res = runner.invoke(app, ["baseline", str(small_stores["mat"]), "--json", str(tmp_path / "b.json")])
    assert res.exit_code == 0, res.output
    out = json.loads((tmp_path / "b.json").read_text())
    assert set(out["baselines"]) == {"csp_lda", "riemann_lr", "bandpower_lr"}
    assert out["baselines"]["bandpower_lr"]["test"]["balanced_accuracy"] == 1.0  # amplitude at 10 Hz separates
    assert out["chance"] == {"balanced_accuracy": 0.5, "cohen_kappa": 0.0, "auroc": 0.5}
    res = runner.invoke(app, ["baseline", str(small_stores["bonn"]), "--method", "csp_lda"])
    assert res.exit_code == 2 and "needs >= 2 channels" in res.output


@pytest.mark.slow
def test_m4oe_two_tasks_train_resume_evaluate_plot(small_stores, tmp_path):
    out = tmp_path / "run"
    common = [
        str(small_stores["bonn"]),
        str(small_stores["mat"]),
        "--head",
        "m4oe",
        "--task",
        "bonn_epilepsy:seizure",
        "--task",
        "eegmat:arithmetic",
        "-o",
        str(out),
        "--n-layers",
        "1",
        "--batch-size",
        "8",
        "--no-progress",
        "--lr-backbone",
        "1e-3",
        "--lr-head",
        "3e-3",
    ]
    res = runner.invoke(app, ["finetune", *common, "--epochs", "1"])
    assert res.exit_code == 0, res.output
    assert "CBraMod+M4oE" in res.output and "band power + LR" in res.output and "chance" in res.output
    res = runner.invoke(app, ["finetune", *common, "--epochs", "2", "--resume"])
    assert res.exit_code == 0, res.output
    rep = json.loads((out / "report.json").read_text())
    assert [h["epoch"] for h in rep["history"]] == [1, 2]
    mat = rep["tasks"]["eegmat:arithmetic"]
    assert mat["modalities"] == load_card("eegmat").raw["modalities"]  # 19 EEG channels and the ECG
    assert "degenerate" in mat  # one predicted class is named per task (None when the predictions inform)
    mc = mat["modality_contributions"]
    assert set(mc["mean"]) == {"eeg", "ecg"} and sum(mc["mean"].values()) == pytest.approx(1.0, abs=1e-5)
    assert len(mc["per_sample"]) == mat["n_samples"]["test"]
    ab = mat["ablation_contributions"]  # routing is not causality: the ablation stands beside it
    assert ab["modalities"] == ["eeg", "ecg"] and len(ab["per_sample"]) == mat["n_samples"]["test"]
    assert set(ab["score_change"]) == {"eeg", "ecg"} and "balanced_accuracy" in ab["score_change"]["eeg"]
    assert sum(ab["share"].values()) == pytest.approx(1.0) or sum(ab["share"].values()) == 0.0
    inc = [s["eeg"] for s in ab["per_sample"]]
    assert ab["mean_loss_increase"]["eeg"] == pytest.approx(float(np.mean(inc)), abs=1e-4)
    # focal loss alpha = 1 - class frequency of each task's training split (release main.py)
    from neurokit.data.dataset import PatchDataset
    from neurokit.store.patch_store import PatchStore

    spec = {t["name"]: t for t in rep["head_config"]["tasks"]}
    assert rep["head_config"]["focal_gamma"] == 2.0
    train = PatchDataset([PatchStore(small_stores["mat"])], labelled=True, **mat["splits"]["train"])
    want = np.bincount(train.labels, minlength=2) / len(train)
    np.testing.assert_allclose(spec["eegmat:arithmetic"]["class_frequencies"], want)
    bonn = rep["tasks"]["bonn_epilepsy:seizure"]
    assert bonn["ablation_contributions"] == {"modalities": ["eeg"], "note": "one modality: nothing to ablate"}
    assert bonn["modality_contributions"]["mean"] == {"eeg": pytest.approx(1.0)}
    assert bonn["baselines"]["bandpower_lr"]["test"]["balanced_accuracy"] == 1.0
    res = runner.invoke(
        app,
        [
            "evaluate",
            str(out / "best.pt"),
            str(small_stores["bonn"]),
            str(small_stores["mat"]),
            "--json",
            str(tmp_path / "e.json"),
        ],
    )
    assert res.exit_code == 0, res.output
    ev = json.loads((tmp_path / "e.json").read_text())
    assert ev["tasks"]["bonn_epilepsy:seizure"]["balanced_accuracy"] == pytest.approx(bonn["test"]["balanced_accuracy"])
    assert ev["tasks"]["eegmat:arithmetic"]["ablation_contributions"]["mean_loss_increase"]["ecg"] == pytest.approx(
        ab["mean_loss_increase"]["ecg"], abs=1e-4
    )
    # a checkpoint of the earlier head (its fusion had a LayerNorm and a task embedding) is refused in one line
    from neurokit.models.checkpoint import load_checkpoint, save_checkpoint

    ck = load_checkpoint(out / "best.pt")
    ck["state_dict"]["head.task_embed"] = ck["state_dict"]["head.gate_query"].clone()
    save_checkpoint(tmp_path / "old.pt", ck)
    res = runner.invoke(app, ["evaluate", str(tmp_path / "old.pt"), str(small_stores["bonn"])])
    assert res.exit_code == 2 and "earlier head" in " ".join(res.output.split()) and "Traceback" not in res.output
    res = runner.invoke(app, ["plot-contributions", str(out / "report.json"), "-o", str(tmp_path / "c.png")])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "c.png").read_bytes()[:4] == b"\x89PNG"
    res = runner.invoke(app, ["finetune", *common, "--epochs", "2", "--resume"])
    assert res.exit_code == 2 and "--epochs 3 or more" in " ".join(res.output.split())


@pytest.mark.parametrize(
    "extra,msg",
    [
        (["--task", "bonn_epilepsy:seizure", "--task", "bonn_epilepsy:seizure"], "named twice"),
        (["--task", "bonn_epilepsy:five_sets"], "no store holds labels of task 'five_sets'"),
        (
            ["--task", "eegmat:arithmetic", "--modality", "eeg=Fp1,Fp2", "--modality", "ecg=Fp2,ECG"],
            "overlap on channel 'Fp2'",
        ),
        (["--task", "bonn_epilepsy:seizure", "--modality", "ecg"], "has no modality 'ecg'"),
        (["--task", "bonn_epilepsy:seizure", "--modality", "eeg=C3"], "lacks the channels ['C3']"),
    ],
)
def test_m4oe_bad_input(small_stores, tmp_path, extra, msg):
    res = runner.invoke(
        app,
        [
            "finetune",
            str(small_stores["bonn"]),
            str(small_stores["mat"]),
            str(small_stores["other"]),
            "--head",
            "m4oe",
            "-o",
            str(tmp_path / "x"),
            *extra,
        ],
    )
    assert res.exit_code == 2, res.output
    line = " ".join(res.output.split())
    assert msg in line and "Traceback" not in res.output
    assert "--task" in line or "--modality" in line
    assert not (tmp_path / "x" / "report.json").exists()


def test_quickstart_pools_training_recordings_only(small_stores, tmp_path):
    from neurokit.store.patch_store import PatchStore
    from neurokit.pipelines.quickstart import pool_single_channel

    mat = PatchStore(small_stores["mat"])  # 20 channels, subjects S002 (train), S003, S004
    bonn = PatchStore(small_stores["bonn"])  # 1 channel, seg001/seg002 train
    # the small stores hold 1-patch windows: pool them as (1, 1, 200)
    out = pool_single_channel([(mat, ["S002"]), (bonn, ["seg001", "seg002"])], tmp_path / "p.h5", n_patches=1)
    st = PatchStore(out)
    assert st.sample_shape == (1, 1, 200) and len(st) == 8 * 20 + 16
    assert set(st.meta["subject"]) == {"mat:S002", "bonn:seg001", "bonn:seg002"}
    i = list(st.meta["subject"]).index("bonn:seg001")
    np.testing.assert_array_equal(st.patches(i), bonn.patches(0))


@pytest.mark.slow
def test_m4oe_overwrite_interrupted_keeps_the_earlier_run_and_is_locked(small_stores, tmp_path, monkeypatch):
    """The M4oE head's run folder is handled as every fine-tuning run's (issue 19 items 2-3): Ctrl-C during
    ``--overwrite`` leaves the earlier run byte-identical, and a held output is refused naming the process."""
    from neurokit._utils.locks import output_lock
    from neurokit.training import trainer as tr

    out = tmp_path / "run"
    common = [
        str(small_stores["bonn"]),
        str(small_stores["mat"]),
        "--head",
        "m4oe",
        "--task",
        "bonn_epilepsy:seizure",
        "--task",
        "eegmat:arithmetic",
        "-o",
        str(out),
        "--n-layers",
        "1",
        "--batch-size",
        "8",
        "--no-progress",
        "--epochs",
        "1",
        "--no-baselines",
    ]
    assert runner.invoke(app, ["finetune", *common]).exit_code == 0
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    assert {"metrics.jsonl", "report.json", "best.pt", "last.pt"} <= set(before)
    monkeypatch.setattr(tr, "optimizer_step", lambda *a, **k: (_ for _ in ()).throw(KeyboardInterrupt()))
    res = runner.invoke(app, ["finetune", *common, "--overwrite"])
    assert res.exit_code == 130 and f"the earlier run in {out} is unchanged" in " ".join(res.output.split())
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]
    monkeypatch.undo()
    import os

    with output_lock(out, "finetune"):  # held by this process: another process's run is refused
        import subprocess
        import sys

        r = subprocess.run(
            [sys.executable, "-m", "neurokit", "finetune", *common, "--overwrite"],
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert r.returncode == 2 and f"in use by another finetune (process {os.getpid()}" in " ".join(
        (r.stdout + r.stderr).split()
    )


def test_label_smoothing_is_refused_with_the_m4oe_focal_loss():
    """The M4oE head's default loss is the release's focal loss, which does not smooth labels: an explicit
    --label-smoothing would be ignored, so it is refused in one line."""
    from neurokit._utils.errors import ConfigError
    from neurokit.training.config import FinetuneConfig
    from neurokit.pipelines.finetune_config import check_finetune_options

    with pytest.raises(ConfigError, match="label_smoothing=0.2: the M4oE head trains with the release's focal loss"):
        check_finetune_options(FinetuneConfig(label_smoothing=0.2), head="m4oe", given={"label_smoothing"})
    check_finetune_options(FinetuneConfig(), head="m4oe", given=set())  # the default: nothing said
