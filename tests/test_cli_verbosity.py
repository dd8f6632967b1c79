"""``neuro -v`` shows more and ``neuro --quiet`` less, as MNE's ``verbose`` (issue 36 item 6)."""

from __future__ import annotations

from typer.testing import CliRunner

from neurokit.cli.main import app


def _prepare(tmp_path, eeg_root, *flags):
    args = [*flags, "prepare", "eegmat", "--data-root", str(eeg_root), "-o", str(tmp_path / f"s{len(flags)}{flags}.h5")]
    return CliRunner().invoke(app, args, env={"COLUMNS": "300"})


def test_verbose_says_more_and_quiet_says_less(tmp_path, eeg_root):
    plain = _prepare(tmp_path, eeg_root)
    more = _prepare(tmp_path, eeg_root, "-v")
    less = _prepare(tmp_path, eeg_root, "--quiet")
    assert plain.exit_code == more.exit_code == less.exit_code == 0, (plain.output, more.output, less.output)
    assert "prepare eegmat:" in plain.output  # progress lines by default
    assert "prepare eegmat:" not in less.output and "WARNING" not in less.output  # --quiet: no progress, no warnings
    assert len(more.output) > len(plain.output) > len(less.output)
    assert "INFO" in more.output and "INFO" not in plain.output
