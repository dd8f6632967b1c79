"""The eye-movement confound check (neurokit.evaluation.confounds): synthetic stores with a planted
horizontal-EOG step (fires) and pure noise (does not), the proxies and features by hand, and the refusals."""

import json

import numpy as np
import pytest

from neurokit.evaluation.confounds import (
    ALPHA,
    MIN_AUROC,
    check_confounds,
    check_features,
    oriented_auroc,
    proxy_features,
    proxy_signals,
)
from neurokit.store.patch_store import PatchStoreWriter

CH = ["Fp1", "Fp2", "F7", "F8", "C3", "C4"]


def _store(
    path, step_uv: float, n_classes: int = 2, ch_names=CH, n_subjects: int = 6, per_subject: int = 16, seed: int = 0
):
    """1-s windows of white noise (10 µV) per channel; class c adds a DC step of (c − mean class)·step_uv to F8
    and the opposite to F7 (gaze to one side: the horizontal-EOG pattern). Store units are 100 µV."""
    rng = np.random.default_rng(seed)
    attrs = dict(
        modality="eeg",
        card="synthetic",
        label_names=[f"c{k}" for k in range(n_classes)],
        ch_names=list(ch_names),
        recipe={"window_s": 1.0},
        sfreq=200.0,
    )
    with PatchStoreWriter(path, (len(ch_names), 1, 200), attrs=attrs) as w:
        for s in range(n_subjects):
            y = np.arange(per_subject) % n_classes
            x = rng.normal(0, 0.1, (per_subject, len(ch_names), 1, 200))
            x += rng.normal(0, 0.2, (per_subject, len(ch_names), 1, 1))  # a drift per window and channel
            if "F8" in ch_names:
                shift = (y - (n_classes - 1) / 2) * step_uv / 100.0
                x[:, ch_names.index("F8")] += shift[:, None, None]
                x[:, ch_names.index("F7")] -= shift[:, None, None]
            w.append(x.astype(np.float32), y, onsets=np.arange(per_subject) * 2.0, subject=f"S{s + 1:03d}")
    return path


def test_proxies_and_features_by_hand():
    names = [n for n, _ in proxy_signals(["C3", "F8", "Fp2", "F7", "Fp1"])]
    assert names == ["Fp1", "Fp2", "F7", "F8", "F8 − F7", "(Fp1 + Fp2)/2"]
    assert [n for n, _ in proxy_signals(["HEOG", "VEOG", "Fp1"])] == ["HEOG", "VEOG"]  # real EOG first
    assert proxy_signals(["C3", "Cz", "C4"]) == []
    # F8 = [1, 3, 1, 3], F7 = [0, 0, 2, 2] µV·100: F8 − F7 = [1, 3, −1, 1], mean 1, variance 2
    x = np.array([[[0.0, 0, 2, 2], [1, 3, 1, 3]]])
    f, fn = proxy_features(x, [p for p in proxy_signals(["F7", "F8"]) if p[0] == "F8 − F7"])
    assert fn == ["mean(F8 − F7)", "logvar(F8 − F7)"]
    np.testing.assert_allclose(f[0], [1.0, np.log(2.0)], rtol=1e-9)
    # oriented AUROC: perfectly reversed scores give 1; 3 of 4 pairs ordered give 0.75
    assert oriented_auroc(np.array([0, 0, 1, 1]), np.array([3.0, 2, 1, 0])) == 1.0
    assert oriented_auroc(np.array([0, 0, 1, 1]), np.array([0.0, 2, 1, 3])) == 0.75


def test_planted_horizontal_step_fires(tmp_path):
    res = check_confounds(_store(tmp_path / "eog.h5", step_uv=20.0), split="all")
    assert res.checked and res.fired
    assert res.p_value == pytest.approx(1 / 1000)  # no permutation reached the observed AUROC
    assert res.auroc > 0.7 and res.single_feature == "mean(F8 − F7)" and res.single_auroc > 0.75
    assert res.single_aurocs["mean(Fp1)"] < 0.65  # Fp1 carries no step
    assert res.n_windows == 96 and res.n_subjects == 6 and res.cv == "GroupKFold(5) by subject"
    assert res.message.startswith(
        f"labels are decodable from eye-movement channels: AUROC {res.single_auroc:.2f} from F8 − F7"
    )
    assert "the model may use eye movements; remedy: remove EOG artefacts" in res.message
    json.dumps(res.to_dict())  # goes into report.json


def test_pure_noise_does_not_fire(tmp_path):
    res = check_confounds(_store(tmp_path / "noise.h5", step_uv=0.0), split="all")
    assert res.checked and not res.fired
    assert res.p_value > 0.1 and abs(res.auroc - 0.5) < 0.15  # measured: see the assertion message
    assert res.message.startswith("no sign that the labels are decodable from eye-movement channels")


def test_multiclass_one_vs_rest(tmp_path):
    res = check_confounds(_store(tmp_path / "three.h5", step_uv=20.0, n_classes=3, per_subject=18), split="all")
    assert (
        res.kind == "multiclass" and res.fired and res.auroc > 0.7
    )  # measured 0.763 (the middle class is not one side)
    noise = check_confounds(_store(tmp_path / "three0.h5", step_uv=0.0, n_classes=3, per_subject=18), split="all")
    assert not noise.fired


def test_rule_needs_both_p_and_auroc():
    """A small but consistent effect over many windows: significant, yet under the AUROC bar, so not fired."""
    rng = np.random.default_rng(1)
    y = np.tile([0, 1], 600)
    groups = np.repeat(np.arange(6), 200)
    feat = rng.normal(0, 1, (1200, 1)) + 0.2 * y[:, None]  # AUROC of about 0.56
    res = check_features(feat, y, groups, ["mean(F8 − F7)"])
    assert res.p_value < ALPHA and res.auroc < MIN_AUROC and not res.fired


def test_classifier_is_sklearns_ridge_classifier():
    from sklearn.linear_model import RidgeClassifier
    from sklearn.preprocessing import StandardScaler

    from neurokit.evaluation.confounds import ridge_scores

    rng = np.random.default_rng(3)
    x, y = rng.normal(size=(40, 4)), rng.integers(0, 2, 40)
    sc = StandardScaler().fit(x[:30])
    ref = RidgeClassifier(alpha=1.0).fit(sc.transform(x[:30]), y[:30]).decision_function(sc.transform(x[30:]))
    ours = ridge_scores(x[:30], np.where(y[:30] == 1, 1.0, -1.0)[:, None], x[30:], 1.0)[:, 0]
    np.testing.assert_allclose(ours, ref, rtol=1e-9, atol=1e-12)


def test_no_proxy_channel_is_not_checked(tmp_path):
    res = check_confounds(_store(tmp_path / "motor.h5", 20.0, ch_names=["C3", "Cz", "C4"]), split="all")
    assert not res.checked and not res.fired
    assert res.message == "not checked: no EOG or frontal channels (Fp1/Fp2, AF7/AF8, F7/F8) in the store"


def test_bad_split_is_refused(tmp_path):
    from neurokit._utils.errors import ConfigError

    with pytest.raises(ConfigError, match="split='tran': choose train, val, test or all"):
        check_confounds(_store(tmp_path / "x.h5", 0.0), split="tran")
