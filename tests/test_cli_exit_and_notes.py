"""Issue 28 item 5: what a script and a reader are told. ``neuro check-confounds`` exits 1 when its check fires
(``--no-fail`` keeps 0); ``neuro evaluate`` prints the "not a result" note that ``neuro finetune`` prints; the
sigmoid of the binary metrics does not overflow."""

import warnings

import numpy as np
import pytest
from test_evaluation_confounds import _store
from test_pipelines_runs import tiny_store  # noqa: F401  (S001, S002 train, S007 val, S009 test; C3 Cz C4)
from typer.testing import CliRunner

from neurokit.cli.main import app
from neurokit.evaluation.metrics import classification_metrics


def _words(r) -> str:
    return " ".join(r.output.split())


def test_check_confounds_exit_code_when_it_fires(tmp_path):
    planted = _store(tmp_path / "eog.h5", step_uv=20.0)  # fires: p = 0.001, AUROC > 0.7 (test_evaluation_confounds)
    args = ["check-confounds", str(planted), "--split", "all", "--permutations", "199"]  # p = 1/200 < 0.01
    r = CliRunner().invoke(app, [*args, "--json", str(tmp_path / "c.json")])
    assert r.exit_code == 1 and "confound:" in _words(r)
    assert (tmp_path / "c.json").exists()  # the result is written before the exit
    r = CliRunner().invoke(app, [*args, "--no-fail"])
    assert r.exit_code == 0 and "confound:" in _words(r)
    noise = _store(tmp_path / "noise.h5", step_uv=0.0)
    r = CliRunner().invoke(app, ["check-confounds", str(noise), "--split", "all", "--permutations", "99"])
    assert r.exit_code == 0 and "no confound found:" in _words(r)


def test_binary_metrics_sigmoid_does_not_overflow():
    y = np.array([0, 0, 1, 1])
    logits = np.array([-1000.0, -800.0, 900.0, 1000.0])  # np.exp(1000) overflows to inf
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a RuntimeWarning (overflow) fails the test
        met = classification_metrics(y, logits)
    assert met["balanced_accuracy"] == 1.0 and met["auroc"] == 1.0 and met["cohen_kappa"] == 1.0


@pytest.fixture(scope="module")
def tiny_run(tiny_store, tmp_path_factory):  # noqa: F811
    """A 1-layer CBraMod fine-tuned for one epoch on the card's splits of the tiny left/right imagery store."""
    from neurokit.training.config import FinetuneConfig
    from neurokit.pipelines.finetune import finetune

    cfg = FinetuneConfig(
        model_kwargs={"n_layers": 1}, epochs=1, batch_size=16, progress=False, device="cpu", baselines=False
    )
    out = tmp_path_factory.mktemp("notes") / "ft"
    finetune(tiny_store, out, cfg)
    return tiny_store, out / "best.pt"


@pytest.mark.slow
def test_evaluate_prints_the_not_a_result_note(tiny_run, monkeypatch):
    import neurokit.pipelines.evaluate as ev

    store, best = tiny_run
    real = ev.predict

    def one_class(model, ds, batch_size, dev, **kw):  # every window scored alike: the predictions inform nothing
        y, o = real(model, ds, batch_size, dev, **kw)
        return y, np.zeros_like(o) - 3.0

    monkeypatch.setattr(ev, "predict", one_class)
    r = CliRunner().invoke(app, ["evaluate", str(best), str(store), "--device", "cpu"], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    n = ev.evaluate(best, store, device="cpu")["n_samples"]
    assert f"not a result: all {n} test scores are equal: no ranking (AUROC and AUC-PR mean nothing)" in _words(r)
