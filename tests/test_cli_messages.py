"""The CLI prints card text and error messages verbatim: square brackets are not taken as rich markup."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from neurokit.cli.main import app

runner = CliRunner()


def test_cards_show_keeps_bracketed_lists():
    r = runner.invoke(app, ["cards", "show", "physionet_mi"])
    assert r.exit_code == 0, r.output
    assert "classes: [left_fist, right_fist, both_fists, both_feet]" in r.output


def test_error_message_keeps_brackets(tmp_path):
    d = tmp_path / "[sub01]"
    d.mkdir()
    missing = d / "missing.yaml"
    r = runner.invoke(app, ["cards", "show", str(missing)])
    assert r.exit_code != 0
    assert "[sub01]" in r.output


@pytest.mark.parametrize(
    "command",
    [
        ["evaluate", "best.pt", "store.h5"],
        ["baseline", "store.h5"],
        ["retrieve", "last.pt", "--fmri", "f.h5", "--stimuli", "s.h5"],
    ],
)
def test_json_to_a_folder_is_refused_before_any_work(command, tmp_path):
    r = CliRunner().invoke(app, [*command, "--json", str(tmp_path)])
    assert r.exit_code == 2, r.output
    assert r.output.strip() == f"error: --json {tmp_path}: is a folder; give the path of a .json file to write"


@pytest.mark.parametrize(
    "kind, y, out, names, want",
    [
        (
            "binary",
            [0, 1, 1, 0],
            [-1.0, -2.0, -0.5, -3.0],
            ["left_fist", "right_fist"],
            "all 4 test samples predicted 'left_fist'",
        ),
        (
            "multiclass",
            [0, 1, 2],
            [[0, 5, 1], [0, 4, 1], [1, 3, 0]],
            ["a", "b", "c"],
            "all 3 test samples predicted 'b'",
        ),
        ("binary", [0, 1], [0.3, 0.3], None, "all 2 test scores are equal"),
        ("binary", [1, 1, 1], [2.0, -1.0, 0.5], None, "one class in the 3 test samples"),
        ("regression", [0.1, 0.5], [0.2, 0.2], None, "all 2 test predictions are equal"),
        ("binary", [0, 1, 1, 0], [-1.0, 2.0, 0.5, 1.0], None, None),
    ],
)
def test_degenerate_predictions_are_named(kind, y, out, names, want):
    import numpy as np

    from neurokit.evaluation.metrics import degenerate_predictions

    got = degenerate_predictions(kind, np.array(y), np.array(out), names)
    assert (got is None) if want is None else got.startswith(want), got
