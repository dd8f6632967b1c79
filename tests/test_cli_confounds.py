"""``neuro check-confounds``: the verdict on a store without proxy channels, and bad options (exit code 2)."""

from test_evaluation_confounds import _store
from typer.testing import CliRunner

from neurokit.cli.main import app


def test_check_confounds_cli(tmp_path):
    planted = _store(tmp_path / "eog.h5", step_uv=20.0)
    r = CliRunner().invoke(app, ["check-confounds", str(planted), "--split", "all", "--permutations", "99"])
    out = " ".join(r.output.split())
    assert r.exit_code == 0 and "mean(F8 − F7) alone" in out
    assert "p = 0.01 (99 permutations within subjects)" in out  # 1 / (99 + 1): none reached the observed AUROC
    motor = _store(tmp_path / "motor.h5", 20.0, ch_names=["C3", "Cz", "C4"])
    r = CliRunner().invoke(app, ["check-confounds", str(motor), "--split", "all"])
    assert r.exit_code == 0
    assert (
        "eye-movement confound check: not checked: no EOG or frontal channels (Fp1/Fp2, AF7/AF8, F7/F8) in the store"
    ) in " ".join(r.output.split())
    r = CliRunner().invoke(app, ["check-confounds", str(motor), "--split", "tst"])
    assert r.exit_code == 2 and "--split tst: choose train, val, test or all" in r.output
    r = CliRunner().invoke(app, ["check-confounds", str(tmp_path / "none.h5")])
    assert r.exit_code == 2 and "none.h5" in r.output and "Traceback" not in r.output
