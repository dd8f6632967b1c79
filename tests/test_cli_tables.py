"""The CLI's result tables fit 80 columns: short metric headers with a legend, long names folded, never cut
(issue 20 item 4)."""

from __future__ import annotations

from rich.console import Console

from neurokit.cli.common import metric_legend, short_metric
from neurokit.cli.reports import COMPARE, comparison_table, print_scheme_report

REP = {
    "model_title": "CBraMod",
    "test": {"balanced_accuracy": 0.956, "cohen_kappa": 0.87, "auroc": 0.996},
    "baselines": {
        "bandpower_lr": {"test": {"balanced_accuracy": 0.992, "cohen_kappa": 0.98, "auroc": 1.0}},
        "riemann_lr": {"error": "one class in the training split"},
    },
    "chance": {"balanced_accuracy": 0.5, "cohen_kappa": 0.0, "auroc": 0.5},
}


def render(renderable) -> str:
    con = Console(width=80, record=True, file=open("/dev/null", "w"))
    con.print(renderable)
    return con.export_text()


def test_short_headers_and_legend():
    assert [short_metric(m) for m in COMPARE] == ["bal.acc", "kappa", "AUROC", "R²"]
    assert metric_legend(COMPARE) == "bal.acc = balanced accuracy; kappa = cohen kappa; R² = r2"


def test_comparison_table_fits_80_columns_without_cutting_names():
    task = "physionet_mi:left_right_imagery_sensorimotor_channels (S009-S010)"
    text = render(comparison_table("test split: model vs classical baselines vs chance", {task: REP}))
    lines = text.splitlines()
    assert max(map(len, lines)) <= 80
    assert "…" not in text
    for word in (
        "bal.acc",
        "kappa",
        "AUROC",
        "band power + LR",
        "chance",
        "0.956",
        "1.000",
        "bal.acc = balanced accuracy",
    ):
        assert word in text
    assert "physionet_mi" in text and "sensorimotor" in "".join(lines).replace(" ", "").replace("│", "")


def test_scheme_table_fits_80_columns(monkeypatch):
    from neurokit.cli import reports

    fold = {
        "fold": "S001",
        "subject": "S001",
        "session": "0",
        "score_metric": "roc_auc",
        "score": 0.61,
        "test": {
            "balanced_accuracy": 0.55,
            "cohen_kappa": 0.1,
            "f1_weighted": 0.5,
            "auroc": 0.61,
            "auc_pr": 0.6,
            "average_precision": 0.6,
        },
    }
    rep = {
        "scheme": "loso",
        "folds": [fold, {**fold, "fold": "S002", "subject": "S002"}],
        "mean": {"score": 0.61, **fold["test"]},
        "std": {"score": 0.0, **{k: 0.0 for k in fold["test"]}},
    }
    con = Console(width=80, record=True, file=open("/dev/null", "w"))
    monkeypatch.setattr(reports, "console", con)
    print_scheme_report(rep)
    text = con.export_text()
    assert max(map(len, text.splitlines())) <= 80 and "…" not in text
    assert "ROC AUC" in text and "± std" in text and "0.610" in text


def test_degenerate_summary_counts_seeds_per_arm_and_fraction():
    from neurokit.cli.reports import degenerate_summary

    runs = [
        {"arm": a, "fraction": f, "seed": s, "degenerate": "all 90 test samples predicted 'left'" if bad else None}
        for a, f, s, bad in [
            ("pretrained", "0.02", 0, True),
            ("pretrained", "0.02", 1, True),
            ("scratch", "0.02", 0, True),
            ("scratch", "1", 0, False),
            ("pretrained", "1", 1, False),
        ]
    ]
    line = degenerate_summary({"runs": runs, "seeds": [0, 1]})
    assert line == (
        "one predicted class for every test window in pretrained at 2% (2 of 2 seeds); scratch at 2% "
        "(1 of 2 seeds): balanced accuracy and kappa are not results there; AUROC still ranks"
    )
    assert degenerate_summary({"runs": runs[3:], "seeds": [0, 1]}) is None
