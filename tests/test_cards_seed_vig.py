"""The SEED-VIG card (issue 37): ``neuro prepare seed_vig --data-root ROOT`` on a small corpus in the dataset's layout
(``Raw_Data/<name>.mat`` with a struct ``EEG`` whose first field ``data`` is samples x 17, ``perclos_labels/<name>.mat``
with ``perclos`` steps x 1) equals CBraMod's ``preprocessing_seedvig.py`` computed here with scipy in the release's
order: the same 8-s windows per file with the same float PERCLOS targets, the release's split by sorted file position,
values within 1e-3 of the signal's RMS. ``neuro finetune`` on the store is a regression (MSE; Pearson r, R², RMSE)
reported beside the training-mean and band-power ridge baselines; bad files give one line."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.io
from scipy.signal import welch
from typer.testing import CliRunner

from neurokit.cli.main import app
from neurokit.store.patch_store import PatchStore
from tests.release_corpus import close, signals, store_windows

pytestmark = pytest.mark.slow

#: the 23 published experiments (subject_date_time), in the download's Raw_Data and perclos_labels folders
NAMES = [
    "1_20151124_noon_2", "2_20151106_noon", "3_20151024_noon", "4_20151105_noon", "4_20151107_noon",
    "5_20141108_noon", "5_20151012_night", "6_20151121_noon", "7_20151015_night", "8_20151022_noon",
    "9_20151017_night", "10_20151125_noon", "11_20151024_night", "12_20150928_noon", "13_20150929_noon",
    "14_20151014_night", "15_20151126_night", "16_20151128_night", "17_20150925_noon", "18_20150926_noon",
    "19_20151114_noon", "20_20151129_night", "21_20151016_noon",
]  # fmt: skip


def _write(root, name: str, n_windows: int, seed: int, n_labels=None):
    """One experiment: Raw_Data/<name>.mat (struct EEG: data samples x 17 µV at 200 Hz, sample_rate) and
    perclos_labels/<name>.mat (perclos: steps x 1, PERCLOS in [0, 1])."""
    x = signals(17, 200.0, 8.0 * n_windows, seed, line=50.0) * 1e6
    y = np.random.default_rng(seed).uniform(0.0, 1.0, size=(n_labels or n_windows, 1))
    for d in ("Raw_Data", "perclos_labels"):
        (root / d).mkdir(parents=True, exist_ok=True)
    scipy.io.savemat(root / "Raw_Data" / f"{name}.mat", {"EEG": {"data": x.T, "sample_rate": 200.0}})
    scipy.io.savemat(root / "perclos_labels" / f"{name}.mat", {"perclos": y})
    return root / "Raw_Data" / f"{name}.mat"


def _release(root, name: str):
    """preprocessing_seedvig.py's steps on one experiment: the first field of EEG, perclos[:, 0], windows
    (n, 8, 200, 17) -> (n, 17, 8, 200) of the samples in order; µV / 100 (the loader)."""
    eeg = scipy.io.loadmat(root / "Raw_Data" / f"{name}.mat")["EEG"][0][0][0]
    labels = scipy.io.loadmat(root / "perclos_labels" / f"{name}.mat")["perclos"][:, 0]
    n = len(labels)
    out = eeg.reshape(n, 8, 200, 17).transpose(0, 3, 1, 2) / 100.0
    return out.reshape(n, 17, 1600), labels


def _prepare(root, out):
    return CliRunner().invoke(app, ["prepare", "seed_vig", "--data-root", str(root), "-o", str(out)])


def _log_band_power(x: np.ndarray) -> np.ndarray:
    """Log Welch power (1-s Hann segments at 200 Hz) in δ θ α β γ per channel, band by band."""
    f, p = welch(x, fs=200.0, nperseg=200, axis=-1)
    bands = ((1, 4), (4, 8), (8, 13), (13, 30), (30, 45))
    return np.concatenate([np.log(p[..., (f >= a) & (f < b)].mean(axis=-1) + 1e-12) for a, b in bands], axis=1)


def test_seed_vig_equals_the_release_and_finetunes_as_a_regression(tmp_path):
    root = tmp_path / "SEED-VIG" / "mat"
    for i, name in enumerate(NAMES):
        _write(root, name, 2 + i % 2, 100 + i)
    r = _prepare(tmp_path / "SEED-VIG", tmp_path / "s.h5")
    assert r.exit_code == 0, r.output
    st = PatchStore(tmp_path / "s.h5")
    assert st.sample_shape == (17, 8, 200) and st.labels.dtype == np.float32
    assert list(st.info.ch_names[:6]) == ["FT7", "FT8", "T7", "T8", "TP7", "TP8"] and not st.info.label_names
    worst = 0.0
    for name in NAMES:
        want, labs = _release(root, name)
        got = store_windows(st, name)
        worst = max(worst, close(got, want))
        sel = st.meta["run"].astype(str) == name
        order = np.argsort(st.meta["onset"][sel], kind="stable")
        np.testing.assert_array_equal(st.labels[sel][order], labs.astype(np.float32))
        assert set(st.meta["subject"][sel].astype(str)) == {f"S{int(name.split('_')[0]):02d}"}
    assert worst < 1e-3
    # the release's split: Raw_Data's names sorted as strings, [:15] train, [15:19] val, [19:23] test
    files = sorted(f"{n}.mat" for n in NAMES)
    release = {"train": files[:15], "val": files[15:19], "test": files[19:23]}
    subj = st.meta["subject"].astype(str)
    n = {}
    for k, fs in release.items():
        ids = sorted({f"S{int(f.split('_')[0]):02d}" for f in fs})
        assert st.info.card_body["tasks"]["vigilance"]["splits"][k] == ids
        n[k] = sum(len(_release(root, f[:-4])[1]) for f in fs)
        assert int(np.isin(subj, ids).sum()) == n[k]
    assert st.info.card_body["tasks"]["vigilance"]["splits"]["val"] == ["S04", "S05"]
    assert f"train {n['train']} · val {n['val']} · test {n['test']}" in " ".join(r.output.split())
    card = st.info.card_body["tasks"]["vigilance"]
    assert card["kind"] == "regression" and card["paper"]["CBraMod"]["r2"] == 0.3365  # CBraMod paper, Table 11
    assert card["finetune"]["epochs"] == 50 and card["finetune"]["lr"] == 1.0e-4

    y = st.labels.astype(np.float64)
    x = np.asarray(st.patches(np.arange(len(y)))).reshape(len(y), 17, 1600).astype(np.float64)
    st.close()
    # the card's settings but tiny: 1 epoch, 1 layer, and the pooled head (the release's all_patch_reps head over
    # 17 x 8 x 200 features is a 43.5-M-parameter layer: minutes here, the same code path otherwise)
    args = ["finetune", str(tmp_path / "s.h5"), "-o", str(tmp_path / "ft"), "--epochs", "1", "--batch-size", "8",
            "--n-layers", "1", "--head", "avgpool", "--no-progress"]  # fmt: skip
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    out = " ".join(r.output.split())
    assert "task vigilance (regression)" in out and "on validation r2" in out
    assert "lr_backbone 0.0001, weight_decay 0.05, dropout 0.1, clip_grad 1.0" in out
    assert "paper: CBraMod [1]" in out and "0.3365" in out and "[1] CBraMod (Wang et al., ICLR 2025" in out
    assert "paper: LaBraM-Base [2]" in out and "0.2432" in out
    rep = json.loads((tmp_path / "ft" / "report.json").read_text())
    assert rep["kind"] == "regression" and set(rep["test"]) == {"pearson_r", "r2", "rmse"}
    assert set(rep["baselines"]) == {"train_mean", "bandpower_lr"}
    for title in ("training mean", "band power + ridge", "RMSE", "R²"):
        assert title in out
    # the baselines computed here: the training split's mean, and ridge (alpha 1) on standardised log band power
    part = {k: np.isin(subj, card["splits"][k]) for k in ("train", "test")}
    yt, ytr = y[part["test"]], y[part["train"]]
    mean = rep["baselines"]["train_mean"]["test"]
    r2 = 1 - ((yt - ytr.mean()) ** 2).sum() / ((yt - yt.mean()) ** 2).sum()
    assert mean["r2"] == pytest.approx(r2, abs=1e-9) and r2 < 0
    assert mean["rmse"] == pytest.approx(np.sqrt(((yt - ytr.mean()) ** 2).mean()), abs=1e-9)
    from sklearn.linear_model import Ridge
    from sklearn.preprocessing import StandardScaler

    feats = _log_band_power(x)
    sc = StandardScaler().fit(feats[part["train"]])
    pred = Ridge(alpha=1.0).fit(sc.transform(feats[part["train"]]), ytr).predict(sc.transform(feats[part["test"]]))
    ridge = rep["baselines"]["bandpower_lr"]["test"]
    assert ridge["rmse"] == pytest.approx(np.sqrt(((yt - pred) ** 2).mean()), rel=1e-6)
    assert ridge["pearson_r"] == pytest.approx(np.corrcoef(yt, pred)[0, 1], rel=1e-6)


def test_bad_files_give_one_line(tmp_path):
    a = tmp_path / "a" / "mat"
    _write(a, "1_20151124_noon_2", 2, 1)
    scipy.io.savemat(a / "Raw_Data" / "1_20151124_noon_2.mat", {"eeg": np.zeros((3200, 17))})
    r = _prepare(tmp_path / "a", tmp_path / "x.h5")
    assert r.exit_code != 0
    assert "1_20151124_noon_2.mat: no variable 'EEG' (it holds: eeg)" in " ".join(r.output.split())
    b = tmp_path / "b" / "mat"
    _write(b, "2_20151106_noon", 2, 2)
    scipy.io.savemat(b / "perclos_labels" / "2_20151106_noon.mat", {"labels": np.zeros((2, 1))})
    r = _prepare(tmp_path / "b", tmp_path / "y.h5")
    assert r.exit_code != 0
    assert "perclos_labels/2_20151106_noon.mat: no variable 'perclos' (it holds: labels)" in " ".join(r.output.split())
    c = tmp_path / "c" / "mat"
    _write(c, "3_20151024_noon", 3, 3, n_labels=4)
    r = _prepare(tmp_path / "c", tmp_path / "z.h5")
    assert r.exit_code != 0
    msg = " ".join(r.output.split())
    assert (
        "3_20151024_noon.mat: EEG.data holds 4800 samples (3 8-s windows at 200 Hz) but 3_20151024_noon.mat holds "
        "4 PERCLOS values" in msg
    )
    # PERCLOS that is not a fraction: a NaN, or values in percent
    for name, bad in (("d", [0.2, np.nan]), ("e", [20.0, 35.0])):
        d = tmp_path / name / "mat"
        _write(d, "4_20151105_noon", 2, 4)
        scipy.io.savemat(d / "perclos_labels" / "4_20151105_noon.mat", {"perclos": np.array(bad)[:, None]})
        r = _prepare(tmp_path / name, tmp_path / f"{name}.h5")
        assert r.exit_code != 0
        msg = " ".join(r.output.split())
        assert "perclos_labels/4_20151105_noon.mat:" in msg and "PERCLOS value(s) outside 0-1 or not finite" in msg
        assert not (tmp_path / f"{name}.h5").exists()
