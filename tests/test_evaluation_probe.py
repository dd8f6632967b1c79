import numpy as np
import pytest

from neurokit.evaluation.probe import fit_linear_probe


def _data():
    rng = np.random.default_rng(0)
    y = np.arange(40) % 2
    x = rng.normal(size=(40, 3)) + 3.0 * y[:, None]
    return x[:30], y[:30], x[30:], y[30:]


def test_probe_empty_cs_is_a_clear_error():
    # before: best stayed None and unpacking it raised "TypeError: cannot unpack non-iterable NoneType"
    with pytest.raises(ValueError, match="Cs is empty"):
        fit_linear_probe(*_data(), "binary", Cs=[])


def test_probe_one_c_separates_shifted_classes():
    xt, yt, xv, yv = _data()
    probe = fit_linear_probe(xt, yt, xv, yv, "binary", Cs=[1.0])
    assert probe.C == 1.0
    assert [r["C"] for r in probe.records] == [1.0]
    assert probe.val_best > 0.9  # classes 3 σ apart on every feature
    assert (probe.best, probe.best_epoch) == (probe.val_best, 0)  # what fine-tuning's report reads
