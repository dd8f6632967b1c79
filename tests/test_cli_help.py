"""``neuro … --help`` at 80 columns: every option name shown whole, no line wider than the terminal (issue 20)."""

from __future__ import annotations

import pytest
import typer
from typer.testing import CliRunner

from neurokit.cli.main import app

COMMAND = typer.main.get_command(app)


def _leaves(cmd, path: tuple[str, ...] = ()):
    if hasattr(cmd, "commands"):  # a group (typer may bring its own click)
        for name, sub in cmd.commands.items():
            yield from _leaves(sub, path + (name,))
    else:
        yield path, cmd


LEAVES = list(_leaves(COMMAND))


def test_every_command_is_listed():
    names = {" ".join(p) for p, _ in LEAVES}
    assert {"prepare", "pretrain", "finetune", "evaluate", "quickstart", "cards list"} <= names


@pytest.mark.parametrize("path,cmd", LEAVES, ids=[" ".join(p) for p, _ in LEAVES])
def test_help_fits_80_columns_and_names_every_option(path, cmd):
    res = CliRunner().invoke(app, [*path, "--help"], terminal_width=80, env={"COLUMNS": "80"})
    assert res.exit_code == 0, res.output
    wide = [line for line in res.output.splitlines() if len(line) > 80]
    assert not wide, f"{' '.join(path)} --help has lines over 80 columns: {wide[:3]}"
    for param in cmd.params:
        if param.param_type_name == "option":
            for flag in param.opts + param.secondary_opts:
                assert flag in res.output, f"{' '.join(path)} --help cuts or omits {flag}"
