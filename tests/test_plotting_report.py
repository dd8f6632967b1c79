"""Report figures: the numbers drawn (confusion matrix, ROC/PR areas, per-fold and per-subject scores)
on known predictions, the PNG files, and `neuro plot-report`."""

import json

import matplotlib.image as mpimg
import numpy as np
import pytest
from sklearn.metrics import average_precision_score, roc_auc_score

from neurokit.plotting.report import confusion, curves, per_fold_scores, per_subject_scores, plot_report, report_data


@pytest.fixture
def scheme_run(tmp_path):
    """A hand-made two-fold binary run: fold 1 tests S001 (2 of 4 right), fold 2 tests S002 (4 of 4)."""
    run = tmp_path / "run"
    folds = {
        "fold-01-S001": ([0, 0, 1, 1], [-1.0, 0.5, 2.0, -0.2], "S001", 0.75),
        "fold-02-S002": ([0, 1, 1, 0], [-2.0, 1.0, 3.0, -1.0], "S002", 1.0),
    }
    rep = {
        "scheme": "loso",
        "kind": "binary",
        "label_names": ["left_fist", "right_fist"],
        "card": "physionet_mi",
        "task": "left_right_imagery",
        "selection_metric": "auroc",
        "folds": [],
    }
    for name, (y, s, subj, auc) in folds.items():
        d = run / name
        d.mkdir(parents=True)
        np.savez(
            d / "predictions.npz",
            y=np.array(y),
            scores=np.array(s),
            subject=np.array([subj] * 4),
            session=np.array([""] * 4),
        )
        (d / "metrics.jsonl").write_text(
            "".join(
                json.dumps({"epoch": e, "train_loss": 0.7 - 0.1 * e, "val_auroc": 0.5 + 0.1 * e}) + "\n"
                for e in (1, 2, 3)
            )
        )
        rep["folds"].append(
            {
                "fold": name,
                "subject": subj,
                "session": "all",
                "score": auc,
                "score_metric": "roc_auc",
                "test": {"auroc": auc},
            }
        )
    (run / "report.json").write_text(json.dumps(rep))
    return run


def test_numbers_drawn(scheme_run):
    d = report_data(scheme_run)
    assert d.folds == ["fold-01-S001", "fold-02-S002"] and len(d.y) == 8
    np.testing.assert_array_equal(confusion(d), [[3, 1], [1, 3]])  # rows true, columns predicted
    roc = {c["name"]: c["area"] for c in curves(d, "roc")}
    assert roc["fold-01-S001"] == pytest.approx(0.75) and roc["fold-02-S002"] == pytest.approx(1.0)
    assert roc["pooled"] == pytest.approx(roc_auc_score(d.y, d.scores))
    pr = {c["name"]: c["area"] for c in curves(d, "pr")}
    assert pr["pooled"] == pytest.approx(average_precision_score(d.y, d.scores))
    assert per_subject_scores(d) == {"S001": 0.5, "S002": 1.0}
    assert per_fold_scores(d) == ("roc_auc", {"fold-01-S001": 0.75, "fold-02-S002": 1.0})
    assert [r["train_loss"] for r in d.curves["fold-02-S002"]] == pytest.approx([0.6, 0.5, 0.4])


def test_plot_report_writes_pngs_and_cli(scheme_run, tmp_path):
    from typer.testing import CliRunner

    from neurokit.cli.main import app

    files = plot_report(scheme_run, tmp_path / "figs")
    assert set(files) == {"confusion_matrix", "roc", "pr", "scores", "training_curves"}
    for name, p in files.items():
        img = mpimg.imread(p)
        assert img.shape[0] > 300 and img.shape[1] > 400, name
        assert img[..., :3].std() > 0.05, name  # not a blank canvas
    r = CliRunner().invoke(app, ["plot-report", str(scheme_run / "report.json"), "-o", str(tmp_path / "cli")])
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in (tmp_path / "cli").iterdir()) == [
        "confusion_matrix.png",
        "pr.png",
        "roc.png",
        "scores.png",
        "training_curves.png",
    ]
    r = CliRunner().invoke(app, ["plot-report", str(tmp_path / "nothing"), "-o", str(tmp_path / "x")])
    assert r.exit_code == 2 and "no such report" in " ".join(r.output.split())
