"""Evaluation schemes: fold construction, the leak check on every scheme, per-fold reports with mean ± std
and MOABB's result columns, evaluate on a scheme run, the CLI."""

import re
import csv
import json

import numpy as np
import pytest

from neurokit._utils.errors import ConfigError
from neurokit.data import PatchDataset
from neurokit.store.patch_store import PatchStoreWriter
from neurokit.training.config import FinetuneConfig
from neurokit.pipelines.finetune import finetune
from neurokit.evaluation.schemes import SCHEMES, LEAK_UNIT, make_folds, summarize
from neurokit.data.splits import check_no_leak

TINY = dict(model_kwargs={"n_layers": 1}, epochs=1, batch_size=8, head="avgpool", progress=False, device="cpu")


@pytest.fixture(scope="module")
def sessions_store(tmp_path_factory):
    """4 subjects × 2 sessions × 2 runs × 6 one-second windows (2 channels), class 1 = a 20 Hz rhythm."""
    path = tmp_path_factory.mktemp("sess") / "s.h5"
    rng = np.random.default_rng(0)
    t = np.arange(200) / 200.0
    attrs = dict(
        modality="eeg",
        card="synthetic",
        label_names=["a", "b"],
        ch_names=["C3", "C4"],
        recipe={"window_s": 1.0},
        sfreq=200.0,
    )
    with PatchStoreWriter(path, (2, 1, 200), attrs=attrs) as w:
        for s in range(1, 5):
            for sess in ("1", "2"):
                for run in ("R01", "R02"):
                    y = np.array([0, 1] * 3)
                    x = rng.normal(0, 0.3, (6, 2, 1, 200)) + (y[:, None, None, None] * np.sin(2 * np.pi * 20 * t))
                    w.append(
                        x.astype(np.float32), y, onsets=np.arange(6) * 2.0, subject=f"S{s:03d}", session=sess, run=run
                    )
    return path


def _ids(fold, k):
    return set(fold.splits[k]["samples"])


def test_folds_of_every_scheme(sessions_store):
    ds = PatchDataset(sessions_store, labelled=True)
    subj = ds.meta("subject").astype(str)
    sess = ds.meta("session").astype(str)
    loso = make_folds(ds, "loso")
    assert [f.subject for f in loso] == ["S001", "S002", "S003", "S004"]
    # test = one subject; validation = the next subject (a fifth of the 3 others, at least one); train = the rest
    assert set(subj[sorted(_ids(loso[0], "test"))]) == {"S001"} and set(subj[sorted(_ids(loso[0], "val"))]) == {"S002"}
    assert set(subj[sorted(_ids(loso[3], "val"))]) == {"S001"} and len(_ids(loso[0], "train")) == 48
    # every sample is tested exactly once across the folds of each scheme
    for scheme, k, n in (("loso", 5, 4), ("kfold-subject", 2, 2), ("cross-session", 5, 8), ("within-session", 2, 16)):
        folds = make_folds(ds, scheme, n_folds=k)
        assert len(folds) == n, scheme
        tested = np.concatenate([f.splits["test"]["samples"] for f in folds])
        assert sorted(tested) == list(range(len(ds))), scheme
        for f in folds:
            check_no_leak(ds, f.splits, LEAK_UNIT[scheme])
            assert not (_ids(f, "train") | _ids(f, "val")) & _ids(f, "test")
    cs = make_folds(ds, "cross-session")[0]
    assert set(sess[sorted(_ids(cs, "test"))]) == {"1"} and set(sess[sorted(_ids(cs, "train"))]) == {"2"}
    ws = make_folds(ds, "within-session", n_folds=2)[0]
    test_y = ds.labels[sorted(_ids(ws, "test"))]
    assert len(test_y) == 6 and list(np.bincount(test_y)) == [3, 3]  # stratified
    assert list(np.bincount(ds.labels[sorted(_ids(ws, "val"))])) == [1, 1] and len(_ids(ws, "train")) == 4
    with pytest.raises(ConfigError, match="scheme='leave-one-out'; allowed: card, loso"):
        make_folds(ds, "leave-one-out")
    one = PatchDataset(sessions_store, labelled=True, subjects=["S001", "S002"])
    with pytest.raises(ConfigError, match=r"scheme 'loso' needs >= 3 subjects .*\['S001', 'S002'\]"):
        make_folds(one, "loso")
    with pytest.raises(ConfigError, match="has 12 trials, too few for 10 folds"):
        make_folds(ds, "within-session", n_folds=10)


def test_leak_check_covers_every_unit(sessions_store):
    ds = PatchDataset(sessions_store, labelled=True)
    ids = ds.sample_ids
    subj, sess = ds.meta("subject").astype(str), ds.meta("session").astype(str)
    s1 = ids[subj == "S001"]
    with pytest.raises(ConfigError, match=r"subjects \['S001'\] are in both 'train' and 'test'"):
        check_no_leak(ds, {"train": {"samples": s1[:10].tolist()}, "test": {"samples": s1[10:].tolist()}}, "subject")
    a, b = ids[(subj == "S001") & (sess == "1")], ids[(subj == "S001") & (sess == "2")]
    check_no_leak(ds, {"train": {"samples": a.tolist()}, "test": {"samples": b.tolist()}}, "session")
    with pytest.raises(
        ConfigError, match=r"\(subject, session\) pairs \[\('S001', '1'\)\] are in both 'train' and 'test'"
    ):
        check_no_leak(ds, {"train": {"samples": a[:5].tolist()}, "test": {"samples": a[5:].tolist()}}, "session")
    # validation drawn from the training sessions is fine, as long as it holds other windows
    check_no_leak(
        ds,
        {"train": {"samples": a[:5].tolist()}, "val": {"samples": a[5:].tolist()}, "test": {"samples": b.tolist()}},
        "session",
    )
    with pytest.raises(ConfigError, match=r"windows \['sample 4'\] are in both 'train' and 'val'"):
        check_no_leak(
            ds,
            {"train": {"samples": a[:5].tolist()}, "val": {"samples": a[4:].tolist()}, "test": {"samples": b.tolist()}},
            "session",
        )
    with pytest.raises(ConfigError, match=r"windows \['sample 3'\] are in both 'train' and 'test'"):
        check_no_leak(ds, {"train": {"samples": [1, 2, 3]}, "test": {"samples": [3, 4]}}, "window")


def test_leak_check_finds_overlapping_windows(tmp_path):
    """Sliding windows with a 0.5-s hop overlap: one in train and its neighbour in test share samples."""
    with PatchStoreWriter(tmp_path / "o.h5", (1, 1, 200), attrs={"recipe": {"window_s": 1.0}}) as w:
        w.append(
            np.zeros((4, 1, 1, 200), np.float32),
            np.array([0, 1, 0, 1]),
            onsets=np.array([0, 0.5, 1.0, 1.5]),
            subject="S001",
            session="",
            run="R01",
        )
    ds = PatchDataset(tmp_path / "o.h5", labelled=True)
    with pytest.raises(ConfigError, match=r"windows \[\('S001', '', 'R01'\)\] are in both 'train' and 'test'"):
        check_no_leak(ds, {"train": {"samples": [0, 2]}, "test": {"samples": [1, 3]}}, "window")
    check_no_leak(ds, {"train": {"samples": [0]}, "test": {"samples": [2, 3]}}, "window")  # 1 s apart: fine


@pytest.mark.slow
def test_loso_run_reports_folds_mean_std_and_moabb_rows(sessions_store, tmp_path):
    from neurokit.evaluation.schemes import evaluate_scheme

    rep = finetune(sessions_store, tmp_path / "loso", FinetuneConfig(**TINY), scheme="loso")
    assert rep["scheme"] == "loso" and [f["subject"] for f in rep["folds"]] == ["S001", "S002", "S003", "S004"]
    aurocs = [f["test"]["auroc"] for f in rep["folds"]]
    assert rep["mean"]["auroc"] == pytest.approx(np.mean(aurocs)) and rep["std"]["auroc"] == pytest.approx(
        np.std(aurocs)
    )
    assert [f["score"] for f in rep["folds"]] == aurocs and rep["folds"][0]["score_metric"] == "roc_auc"
    assert rep["folds"][0]["n_samples"] == {"train": 48, "val": 24, "test": 24}
    rows = list(csv.DictReader((tmp_path / "loso" / "results.csv").open()))
    assert list(rows[0])[:5] == ["dataset", "subject", "session", "score", "time"]
    # MOABB's rows: each held-out subject scored per session; samples = what was fitted on (train 48 + val 24)
    assert [(r["subject"], r["session"]) for r in rows] == [(f"S00{s}", k) for s in range(1, 5) for k in "12"]
    assert rows[0]["dataset"] == "synthetic" and rows[0]["evaluation"] == "CrossSubject" and rows[0]["samples"] == "72"
    assert rows[0]["samples_test"] == "12" and rows[0]["n_classes"] == "2"
    assert (
        rows[0]["n_sessions"] == "2"
        and rows[0]["channels"] == "2"
        and 0 < float(rows[0]["time"]) <= rep["folds"][0]["seconds"]
    )
    assert float(rows[4]["fold_score"]) == pytest.approx(aurocs[2])
    pred = np.load(tmp_path / "loso" / rep["folds"][2]["fold"] / "predictions.npz")
    from sklearn.metrics import roc_auc_score

    in_sess = pred["session"] == "2"
    assert float(rows[5]["score"]) == pytest.approx(roc_auc_score(pred["y"][in_sess], pred["scores"][in_sess]))
    row_scores = [float(r["score"]) for r in rows]
    assert rep["results_score"]["n_rows"] == 8 and rep["results_score"]["mean"] == pytest.approx(np.nanmean(row_scores))
    fold = rep["folds"][1]["fold"]
    assert (tmp_path / "loso" / fold / "best.pt").exists() and (tmp_path / "loso" / fold / "predictions.npz").exists()
    # evaluate scores each fold's checkpoint on its own test subject and reproduces the numbers
    ev = evaluate_scheme(tmp_path / "loso", sessions_store, device="cpu")
    for a, b in zip(ev["folds"], rep["folds"]):
        assert a["test"]["auroc"] == pytest.approx(b["test"]["auroc"], abs=1e-9)
    assert ev["mean"]["auroc"] == pytest.approx(rep["mean"]["auroc"])
    assert summarize([{"test": {"m": 1.0}, "score": 0.5}, {"test": {"m": float("nan")}, "score": 1.0}]) == {
        "mean": {"m": 1.0, "score": 0.75},
        "std": {"m": 0.0, "score": 0.25},
    }


@pytest.mark.slow
def test_cli_within_session_on_real_data(lr_store, tmp_path):
    from typer.testing import CliRunner

    from neurokit.cli.main import app

    args = [
        "finetune",
        str(lr_store),
        "-o",
        str(tmp_path / "ws"),
        "--scheme",
        "within-session",
        "--folds",
        "2",
        "--n-layers",
        "1",
        "--epochs",
        "1",
        "--batch-size",
        "16",
        "--head",
        "avgpool",
        "--no-progress",
        "--device",
        "cpu",
        "--augment",
        "noise=5,time_shift=0.05,mixup=0.2",
        "--plots",
    ]
    r = CliRunner().invoke(app, args, env={"COLUMNS": "250"})
    assert r.exit_code == 0, r.output
    rep = json.loads((tmp_path / "ws" / "report.json").read_text())
    assert [(f["subject"], f["session"]) for f in rep["folds"]] == [("S001", "all")] * 2 + [("S002", "all")] * 2
    assert sum(f["n_samples"]["test"] for f in rep["folds"]) == 90  # every window of S001-S002 tested once
    assert re.search(rf"mean\b.*{rep['mean']['score']:.3f}", r.output) and re.search(
        rf"± std\b.*{rep['std']['score']:.3f}", r.output
    )
    from neurokit.models.checkpoint import load_checkpoint

    aug = load_checkpoint(tmp_path / "ws" / rep["folds"][0]["fold"] / "best.pt")["finetune_config"]["augment"]
    assert aug["noise"] == 5.0 and aug["mixup"] == 0.2 and aug["time_shift"] == 0.05 and aug["scale"] == 0.0
    assert sorted(p.name for p in (tmp_path / "ws" / "plots").iterdir()) == [
        "confusion_matrix.png",
        "pr.png",
        "roc.png",
        "scores.png",
        "training_curves.png",
    ]
    r = CliRunner().invoke(
        app, ["evaluate", str(tmp_path / "ws"), str(lr_store), "--device", "cpu"], env={"COLUMNS": "250"}
    )
    assert r.exit_code == 0, r.output
    assert re.search(rf"mean\b.*{rep['mean']['score']:.3f}", r.output) and re.search(
        rf"± std\b.*{rep['std']['score']:.3f}", r.output
    )
    r = CliRunner().invoke(app, [*args[:4], "--scheme", "loso", "--overwrite"], env={"COLUMNS": "250"})
    assert r.exit_code == 2 and "needs >= 3 subjects" in " ".join(r.output.split())
    assert set(SCHEMES) == {"card", "loso", "kfold-subject", "cross-session", "within-session"}
