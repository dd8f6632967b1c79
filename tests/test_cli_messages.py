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


@pytest.mark.parametrize("command", [["evaluate", "best.pt", "store.h5"], ["baseline", "store.h5"],
                                     ["retrieve", "last.pt", "--fmri", "f.h5", "--stimuli", "s.h5"]])
def test_json_to_a_folder_is_refused_before_any_work(command, tmp_path):
    r = CliRunner().invoke(app, [*command, "--json", str(tmp_path)])
    assert r.exit_code == 2, r.output
    assert r.output.strip() == f"error: --json {tmp_path}: is a folder; give the path of a .json file to write"
