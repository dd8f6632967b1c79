"""The CLI prints card text and error messages verbatim: square brackets are not taken as rich markup."""
from __future__ import annotations

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
