"""An unknown encoding name is an option error (ConfigError naming the option), not a damaged file."""

from __future__ import annotations

import numpy as np
import pytest
from typer.testing import CliRunner

import neurokit
from edf_build import write_edf
from neurokit._utils.errors import ConfigError
from neurokit.cli.main import app


def _file(tmp_path):
    t = np.arange(2000) / 200
    f = tmp_path / "enc.edf"
    write_edf(
        f,
        np.tile(20 * np.sin(2 * np.pi * 10 * t), (3, 1)),
        200,
        ["C3", "Cz", "C4"],
        annotations=[(2.0, "T1"), (5.0, "T2")],
    )
    return f


def test_unknown_encoding_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="encoding='klingon' is not a text encoding"):
        neurokit.read_eeg(_file(tmp_path), encoding="klingon")


def test_cli_unknown_encoding_names_the_option(tmp_path, shared):
    f = _file(tmp_path)
    r = CliRunner().invoke(
        app,
        [
            "prepare",
            str(shared / "cases" / "edges" / "plain_card.yaml"),
            "--task",
            "lr",
            "-f",
            str(f),
            "--encoding",
            "klingon",
            "--skip-bad",
            "-o",
            str(tmp_path / "o.h5"),
        ],
    )
    assert r.exit_code != 0 and "not a text encoding" in r.output and "truncated" not in r.output
    assert not (tmp_path / "o.h5").exists()
