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


def test_quiet_silences_python_warnings(monkeypatch):
    """--quiet: no warning of Python's warnings module either (MNE's, scikit-learn's, neurokit's own)."""
    import warnings

    from neurokit.cli import common

    monkeypatch.setitem(common.VERBOSITY, "quiet", True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        common.setup_logging(False)
        warnings.warn("a run's warning", RuntimeWarning, stacklevel=1)
    assert caught == []
    monkeypatch.setitem(common.VERBOSITY, "quiet", False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        common.setup_logging(False)
        warnings.warn("a run's warning", RuntimeWarning, stacklevel=1)
    assert [str(w.message) for w in caught] == ["a run's warning"]
