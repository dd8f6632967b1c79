"""Classical baselines as MOABB runs them (issue 18 items 15-16): the 8–32 Hz band of its motor-imagery
paradigms, pyriemann's CSP (OAS, 6 filters) + LDA (svd), and a surface-fMRI baseline instead of EEG ones."""

import numpy as np
import pytest
from scipy.signal import butter, sosfreqz

from neurokit._utils.errors import ConfigError
from neurokit.data import PatchDataset
from neurokit.evaluation.baselines import MI_BAND, applicable, bandpass, make_estimator, run_baselines
from neurokit.store.patch_store import PatchStoreWriter


def test_the_8_32_hz_band_is_a_4th_order_butterworth_run_forward_and_backward():
    fs, t = 200.0, np.arange(4000) / 200.0
    freqs = np.array([2.0, 4.0, 8.0, 20.0, 32.0, 45.0, 70.0])
    x = np.sin(2 * np.pi * freqs[:, None] * t)[None]  # (1, 7 channels, 20 s)
    y = bandpass(x, fs)
    mid = slice(1000, 3000)  # away from the edges
    gain = np.sqrt((y[0, :, mid] ** 2).mean(axis=1) / (x[0, :, mid] ** 2).mean(axis=1))  # amplitude ratio
    # zero phase, squared magnitude: |H|² of scipy's 4th-order Butterworth band-pass
    _, h = sosfreqz(butter(4, MI_BAND, btype="bandpass", fs=fs, output="sos"), worN=freqs, fs=fs)
    np.testing.assert_allclose(gain, np.abs(h) ** 2, atol=0.01)
    assert gain[2] == pytest.approx(0.5, abs=0.01) and gain[4] == pytest.approx(0.5, abs=0.01)  # −6 dB at 8, 32 Hz
    assert gain[3] == pytest.approx(1.0, abs=0.01) and gain[0] < 0.01 and gain[-1] < 0.01
    np.testing.assert_allclose(y[0, 3, mid], x[0, 3, mid], atol=0.01)  # no phase shift in the band
    with pytest.raises(ConfigError, match=r"baseline band \(8.0, 120.0\): needs 0 < low < high < 100 Hz"):
        make_estimator("csp_lda", "binary", 200.0, band=(8.0, 120.0))


def _two_class_trials(n=40, seed=0):
    """4 channels, 2-s trials at 200 Hz: class 1 carries a 12 Hz rhythm on channel 0, class 0 on channel 2."""
    rng = np.random.default_rng(seed)
    t = np.arange(400) / 200.0
    y = np.tile([0, 1], n // 2)
    x = rng.normal(0, 1.0, (n, 4, 400))
    amp = rng.uniform(2.0, 3.0, n)
    x[y == 1, 0] += amp[y == 1, None] * np.sin(2 * np.pi * 12 * t)
    x[y == 0, 2] += amp[y == 0, None] * np.sin(2 * np.pi * 12 * t)
    return x, y


def test_csp_lda_is_moabb_pipeline_and_matches_a_hand_made_csp_lda():
    from scipy.linalg import eigh
    from sklearn.covariance import oas
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
    from sklearn.metrics import roc_auc_score

    x, y = _two_class_trials()
    xtr, ytr, xte, yte = x[:30], y[:30], x[30:], y[30:]
    est = make_estimator("csp_lda", "binary", 200.0, band=None).fit(xtr, ytr)
    csp = est.named_steps["csp"]
    assert csp.nfilter == 6 and est.named_steps["covariances"].estimator == "oas"
    assert est.named_steps["lineardiscriminantanalysis"].solver == "svd"
    # by hand: OAS covariance per trial, class means, eigh(C1, C0 + C1), log-variance of the filtered trials, LDA
    cov = lambda a: np.stack([oas(trial.T, assume_centered=False)[0] for trial in a])  # noqa: E731
    ctr = cov(xtr)
    c0, c1 = ctr[ytr == 0].mean(0), ctr[ytr == 1].mean(0)
    ev, w = eigh(c1, c0 + c1)
    w = w[:, np.argsort(np.abs(ev - 0.5))[::-1]]  # 4 channels: all 4 filters (nfilter 6 keeps at most 4)
    feats = lambda c: np.log(np.einsum("ci,ncd,di->ni", w, c, w))  # noqa: E731
    lda = LinearDiscriminantAnalysis(solver="svd").fit(feats(ctr), ytr)
    hand = lda.decision_function(feats(cov(xte)))
    np.testing.assert_allclose(est.decision_function(xte), hand, rtol=1e-6, atol=1e-6)
    assert roc_auc_score(yte, hand) == 1.0  # the planted rhythm separates the classes


def test_spatial_baselines_band_pass_first_and_band_none_keeps_the_store_band():
    names = [n for n, _ in make_estimator("riemann_lr", "binary", 200.0).steps]
    assert names[:2] == ["functiontransformer", "covariances"]
    ft = make_estimator("csp_lda", "binary", 200.0).steps[0][1]
    assert ft.func is bandpass and ft.kw_args == {"sfreq": 200.0, "band": (8.0, 32.0)}
    assert [n for n, _ in make_estimator("csp_lda", "binary", 200.0, band=None).steps][0] == "covariances"
    # a 3 Hz rhythm (outside the band) no longer separates the classes once filtered; a 12 Hz one does
    rng = np.random.default_rng(1)
    t = np.arange(400) / 200.0
    y = np.tile([0, 1], 30)
    x = rng.normal(0, 1.0, (60, 4, 400))
    x[y == 1, 0] += 3 * np.sin(2 * np.pi * 3 * t)
    from sklearn.metrics import roc_auc_score

    wide = make_estimator("csp_lda", "binary", 200.0, band=None).fit(x[:40], y[:40])
    band = make_estimator("csp_lda", "binary", 200.0).fit(x[:40], y[:40])
    assert roc_auc_score(y[40:], wide.decision_function(x[40:])) == 1.0
    assert roc_auc_score(y[40:], band.decision_function(x[40:])) < 0.8


def _surface(path, units):
    """10 samples per (subject, run) unit of 6 tubelets × 2 frames × 5 vertices; class 1 raises tubelet 0's mean by 1."""
    rng = np.random.default_rng(0)
    attrs = dict(modality="surface", card="synthetic-fmri", label_names=["rest", "task"], sfreq=1.0)
    with PatchStoreWriter(path, (6, 2, 5), attrs=attrs) as w:
        for subj, run in units:
            y = np.tile([0, 1], 5)
            x = rng.normal(0, 0.3, (10, 6, 2, 5))
            x[y == 1, 0] += 1.0
            w.append(x.astype(np.float32), y, onsets=np.arange(10) * 2.0, subject=subj, session="", run=run)
    return path


@pytest.fixture()
def surface_store(tmp_path):
    return _surface(tmp_path / "surf.h5", [(f"S{s:03d}", "R01") for s in range(1, 5)])


def test_a_surface_store_gets_the_patch_mean_baseline_not_the_eeg_ones(surface_store):
    parts = {
        "train": PatchDataset(surface_store, labelled=True, subjects=["S001", "S002", "S003"]),
        "test": PatchDataset(surface_store, labelled=True, subjects=["S004"]),
    }
    assert applicable(6, "binary", "surface") == ["patchmean_lr"]
    res = run_baselines(parts, "binary", sfreq=1.0)
    assert list(res) == ["patchmean_lr"] and res["patchmean_lr"]["test"]["auroc"] == 1.0
    with pytest.raises(ConfigError, match="baselines csp_lda are EEG methods; this store holds surface samples"):
        run_baselines(parts, "binary", sfreq=1.0, methods=["csp_lda"])


def test_cli_baseline_band_option_and_surface_store(tmp_path):
    import json

    from typer.testing import CliRunner

    from neurokit.cli.main import app

    surface_store = _surface(tmp_path / "one.h5", [("S001", f"R0{r}") for r in range(1, 5)])  # split by run
    r = CliRunner().invoke(
        app, ["baseline", str(surface_store), "--json", str(tmp_path / "b.json")], env={"COLUMNS": "200"}
    )
    assert r.exit_code == 0, r.output
    res = json.loads((tmp_path / "b.json").read_text())
    assert list(res["baselines"]) == ["patchmean_lr"] and res["band"] == [8.0, 32.0] and "patchmean_lr" in r.output
    r = CliRunner().invoke(app, ["baseline", str(surface_store), "--band", "8"], env={"COLUMNS": "200"})
    assert r.exit_code == 2 and "--band '8': give LOW,HIGH in Hz" in r.output
    r = CliRunner().invoke(
        app,
        ["baseline", str(surface_store), "--band", "none", "--json", str(tmp_path / "n.json")],
        env={"COLUMNS": "200"},
    )
    assert r.exit_code == 0 and json.loads((tmp_path / "n.json").read_text())["band"] is None


@pytest.mark.slow
def test_cli_baseline_method_eegnet(tmp_path):
    """``neuro baseline --method eegnet`` trains EEGNet on the same split beside the classical baselines; on a surface
    store it says it does not apply."""
    import json

    from typer.testing import CliRunner

    from neurokit.cli.main import app

    rng = np.random.default_rng(0)
    t = np.arange(200) / 200.0
    path = tmp_path / "eeg.h5"
    attrs = dict(modality="eeg", card="synthetic", label_names=["rest", "rhythm"], ch_names=["C3", "C4"], sfreq=200.0)
    with PatchStoreWriter(path, (2, 1, 200), attrs=attrs) as w:
        for s in ("S001", "S002", "S003", "S004"):
            y = np.tile([0, 1], 6)
            x = rng.normal(0, 0.3, (12, 2, 1, 200)) + y[:, None, None, None] * np.sin(2 * np.pi * 10 * t)
            w.append(x.astype(np.float32), y, onsets=np.arange(12) * 2.0, subject=s, session="1", run="R01")
    split = ["--train-subjects", "S001,S002", "--val-subjects", "S003", "--test-subjects", "S004"]
    args = ["baseline", str(path), "--method", "bandpower_lr", "--method", "eegnet", "--epochs", "2", *split]
    args += ["--eegnet-out", str(tmp_path / "run"), "--device", "cpu", "--json", str(tmp_path / "b.json")]
    r = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    res = json.loads((tmp_path / "b.json").read_text())
    assert list(res["baselines"]) == ["bandpower_lr", "eegnet"] and "eegnet" in r.output
    eeg = res["baselines"]["eegnet"]
    rep = json.loads((tmp_path / "run" / "report.json").read_text())
    assert eeg["test"] == rep["test"] and eeg["best_epoch"] == rep["best_epoch"] in (1, 2)
    assert (rep["model"], rep["head"], rep["splits"]["test"]) == ("eegnet", "flatten", {"subjects": ["S004"]})
    assert rep["trainable_params"]["all"] == 1104 + 16 * 2 + (16 * 6 + 1)  # 200 samples: T_out = ⌊(⌊201/4⌋+1)/8⌋ = 6
    # a second run into the same folder is refused, naming its files, and leaves the run whole; --overwrite replaces it
    before = (tmp_path / "run" / "best.pt").read_bytes()
    r = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert r.exit_code != 0 and "already holds a run" in r.output and "best.pt" in r.output, r.output
    assert (tmp_path / "run" / "best.pt").read_bytes() == before
    (tmp_path / "run" / "notes.txt").write_text("mine")  # the user's: --overwrite keeps it, replacing the run
    r = CliRunner().invoke(app, [*args, "--overwrite"], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    assert (tmp_path / "run" / "notes.txt").read_text() == "mine" and (tmp_path / "run" / "best.pt").exists()
    assert "kept 1 file that is not this run's: notes.txt" in " ".join(r.output.split())
    surface = _surface(tmp_path / "surf.h5", [("S001", f"R0{r}") for r in range(1, 5)])
    r = CliRunner().invoke(app, ["baseline", str(surface), "--method", "eegnet"], env={"COLUMNS": "200"})
    assert r.exit_code == 0 and "n/a: EEG only" in r.output, r.output


def test_metrics_of_a_degenerate_split_warn_nothing():
    """A test split without a predicted class, or near-constant regression outputs: the values are computed (or
    NaN, which mark_undefined says in words), without scikit-learn's or scipy's warnings on the console."""
    import warnings

    from neurokit.evaluation.metrics import classification_metrics, regression_metrics

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m = classification_metrics(np.array([0, 0, 1, 1]), np.eye(3)[[0, 2, 1, 1]] * 5)  # predicts class 2, absent
        assert m["balanced_accuracy"] == 0.75
        y = np.array([0.1, 0.2, 0.3, 0.4])
        r = regression_metrics(y, np.full(4, 0.5))  # constant: r undefined
        assert np.isnan(r["pearson_r"]) and r["rmse"] == pytest.approx(np.sqrt(np.mean((y - 0.5) ** 2)))
        r = regression_metrics(y, np.array([0.5, 0.5, 0.5, 0.5 * (1 + 1e-14)]))  # nearly constant (scipy warns)
        assert r["rmse"] > 0
