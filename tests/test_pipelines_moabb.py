"""MOABB interoperability (issue 18 item 14, issue 20 item 2a): neurokit's schemes give MOABB's splits and
rows on MOABB's offline FakeDataset, MOABB's own evaluations benchmark neurokit's scikit-learn estimator, and
the head learning rate follows the CBraMod release (item 17)."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

from neurokit.training.estimator import FoundationClassifier
from neurokit.training.config import FinetuneConfig
from neurokit.training.optim import head_lr

TINY = dict(model_kwargs={"n_layers": 1}, epochs=1, batch_size=8, scale=0.01, seed=0, sfreq=200.0)


def test_head_lr_follows_the_cbramod_release_unless_given():
    # finetune_trainer.py of the release: 'lr': 0.001*(batch_size/256)**0.5 for every parameter outside the backbone
    assert FinetuneConfig().lr_head == pytest.approx(5e-4)  # batch 64
    assert FinetuneConfig(batch_size=256).lr_head == pytest.approx(1e-3)
    assert FinetuneConfig(batch_size=16).lr_head == pytest.approx(2.5e-4)
    assert FinetuneConfig(batch_size=16, lr_head=3e-3).lr_head == 3e-3  # an explicit value wins
    assert head_lr(100) == pytest.approx(1e-3 * np.sqrt(100 / 256))


def _trials(n=16, seed=0):
    """(n, 3, 400) volts-scale trials, 2 s at 200 Hz; class 1 carries a 10 Hz rhythm on channel 0."""
    rng = np.random.default_rng(seed)
    y = np.tile(["left", "right"], n // 2)
    x = rng.normal(0, 1e-5, (n, 3, 400))
    x[y == "right", 0] += 3e-5 * np.sin(2 * np.pi * 10 * np.arange(400) / 200.0)
    return x, y


def test_estimator_is_a_scikit_learn_classifier():
    from sklearn.base import clone

    x, y = _trials()
    with pytest.raises(ValueError, match=r"carries no sampling rate: give FoundationClassifier\(sfreq=\.\.\.\)"):
        FoundationClassifier(model_kwargs={"n_layers": 1}, epochs=1).fit(*_trials())  # a rate is never assumed
    clf = FoundationClassifier(model_kwargs={"n_layers": 1}, epochs=2, batch_size=8, head="avgpool", sfreq=200.0)
    twin = clone(clf)
    assert twin.get_params() == clf.get_params() and twin is not clf
    assert twin.set_params(epochs=3).epochs == 3 and clf.epochs == 2
    with pytest.raises(ValueError, match="not fitted yet"):
        clf.predict(x)
    clf.fit(x, y)
    assert list(clf.classes_) == ["left", "right"] and clf.sample_shape_ == (3, 2, 200)
    p = clf.predict_proba(x)
    assert p.shape == (16, 2) and np.allclose(p.sum(1), 1.0)
    np.testing.assert_allclose(p[:, 1], 1 / (1 + np.exp(-clf.decision_function(x))), rtol=1e-5)
    assert set(clf.predict(x)) <= {"left", "right"} and clf.transform(x).shape == (16, 200)
    # same seed, same model: the fit is reproducible; clone() gives an unfitted copy
    np.testing.assert_allclose(clone(clf).fit(x, y).predict_proba(x), p, rtol=1e-5, atol=1e-6)
    assert not hasattr(clone(clf), "model_")
    # 100 Hz input is resampled to 200 Hz: 2 s → two patches again
    half = x[..., ::2]
    assert FoundationClassifier(**{**TINY, "scale": 1e4, "sfreq": 100.0}).fit(half, y).sample_shape_ == (3, 2, 200)
    with pytest.raises(ValueError, match="shorter than one 200-sample patch"):
        FoundationClassifier(**TINY).fit(x[..., :150], y)
    with pytest.raises(ValueError, match="one class"):
        FoundationClassifier(**TINY).fit(x, ["left"] * 16)
    with pytest.raises(ValueError, match=r"X has 2 features, but FoundationClassifier is expecting 3 features"):
        FoundationClassifier(**TINY).fit(x, y).predict(x[:, :2])


@pytest.mark.parametrize(
    "check",
    [
        "check_no_attributes_set_in_init",
        "check_parameters_default_constructible",
        "check_get_params_invariance",
        "check_set_params",
        "check_estimator_repr",
    ],
)
def test_estimator_passes_scikit_learn_s_parameter_checks(check):
    # the checks that fit on 2-D tabular data do not apply to (n, channels, times) trials
    from sklearn.utils import estimator_checks

    getattr(estimator_checks, check)("FoundationClassifier", FoundationClassifier())


#: scikit-learn checks that cannot apply to a foundation model fine-tuned for one epoch on scikit-learn's toy tables
#: (two-column tables read as one-channel trials at 2 Hz), and why
NOT_APPLICABLE = {
    "check_classifiers_train": "asks for 83 % accuracy on Gaussian blobs after the estimator's one epoch (tiny here)",
    "check_methods_subset_invariance": "float32 batched arithmetic: a sample's features differ by ~2e-7 (relative) "
    "with the batch they are computed in, above the check's rtol of 1e-7",
}


def _sklearn_estimator():
    # scikit-learn's tables have a few columns: at 2 Hz, 4 samples are 2 s → two 200-sample patches at 200 Hz
    return FoundationClassifier(sfreq=2.0, model_kwargs={"n_layers": 1}, epochs=1, batch_size=8, head="avgpool")


def test_scikit_learn_s_estimator_checks():
    """Issue 36 item 3: every check scikit-learn 1.9 runs on the estimator passes, but those listed as not applicable
    (with why); its inputs are validated as scikit-learn's are."""
    import warnings

    from sklearn.utils.estimator_checks import check_estimator

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(_sklearn_estimator(), on_fail=None)
    status: dict[str, set] = {}
    for r in results:
        status.setdefault(r["check_name"], set()).add(r["status"])
    failed = sorted(k for k, v in status.items() if "failed" in v)
    assert failed == sorted(NOT_APPLICABLE), failed
    assert sum(v == {"passed"} for v in status.values()) >= 40  # scikit-learn's checks do run (not 1 of ~60)
    tags = _sklearn_estimator().__sklearn_tags__()
    assert tags.input_tags.three_d_array and tags.input_tags.two_d_array and not tags.input_tags.allow_nan


def test_inputs_are_validated_as_scikit_learn_does():
    x, y = _trials()
    bad = x.copy()
    bad[3, 1, 10] = np.nan
    with pytest.raises(ValueError, match=r"X holds NaN or infinity in 1 of 16 trials"):
        FoundationClassifier(**TINY).fit(bad, y)
    with pytest.raises(ValueError, match="Unknown label type: continuous"):
        FoundationClassifier(**TINY).fit(x, np.linspace(0, 1, 16))
    for bad_kw in ({"sfreq": 0}, {"sfreq": -200.0}, {"epochs": 0}, {"batch_size": 0}):
        with pytest.raises(ValueError, match=f"{next(iter(bad_kw))}="):
            FoundationClassifier(**{**TINY, **bad_kw}).fit(x, y)
    clf = FoundationClassifier(**{**TINY, "head": "avgpool"}).fit(x, y)
    with pytest.raises(ValueError, match="X has 2 features, but FoundationClassifier is expecting 3 features"):
        clf.predict(x[:, :2])  # another channel count than fitted, whatever the head


def test_estimator_reads_mne_epochs_and_frozen_features_are_the_backbone_s():
    import mne

    x, y = _trials()
    info = mne.create_info(["C3", "Cz", "C4"], 200.0, "eeg")
    epochs = mne.EpochsArray(
        x, info, events=np.c_[np.arange(16) * 500, np.zeros(16, int), (y == "right") + 1], verbose="error"
    )
    clf = FoundationClassifier(model_kwargs={"n_layers": 1}, epochs=1, batch_size=8, frozen=True).fit(epochs)
    assert list(clf.classes_) == [1, 2] and clf.ch_names_ == ["C3", "Cz", "C4"]
    # Epochs are volts: the same trials as an array with the default scale give the same outputs
    np.testing.assert_allclose(clf.decision_function(epochs), clf.decision_function(x), rtol=1e-5, atol=1e-6)
    # frozen: the backbone is the one built from the seed, untouched by training
    import torch

    from neurokit.models.registry import build_backbone

    torch.manual_seed(0)
    fresh, _ = build_backbone(
        None, model="cbramod", model_kwargs={"n_layers": 1}, store_attrs={"modality": "eeg"}, sample_shape=(3, 2, 200)
    )
    fresh.eval()
    with torch.no_grad():
        want = fresh.forward_features(torch.from_numpy((x * 1e4).reshape(16, 3, 2, 200)).float()).flatten(1, -2).mean(1)
    np.testing.assert_allclose(clf.transform(epochs), want.numpy(), rtol=1e-4, atol=1e-5)


def test_estimator_starts_from_init_weights(tmp_path):
    import torch

    from neurokit.models.cbramod import CBraMod

    torch.manual_seed(3)
    released = CBraMod(n_layers=1).state_dict()  # a state dict in the release's layout
    torch.save(released, tmp_path / "w.pth")
    x, y = _trials()
    clf = FoundationClassifier(init=str(tmp_path / "w.pth"), epochs=1, batch_size=8, frozen=True, sfreq=200.0).fit(x, y)
    own = clf.model_.backbone.state_dict()
    shared = [k for k in own if k in released]
    assert len(shared) == len(own) and len(shared) > 30  # the whole backbone comes from the file
    for k in shared:  # frozen: every backbone tensor is the file's after training
        assert torch.equal(own[k].cpu(), released[k]), k
    assert clf.init_info_["weights"]["loaded"] == clf.init_info_["weights"]["total"]


def test_estimator_fine_tunes_sit_on_surface_samples():
    rng = np.random.default_rng(0)
    x = rng.normal(0, 1, (8, 3, 20, 15)).astype(np.float32)  # (n, frames, patches, vertices per patch)
    y = np.tile([0, 1], 4)
    clf = FoundationClassifier(model="sit", model_kwargs={"n_layers": 1}, epochs=1, batch_size=4).fit(x, y)
    assert clf.model_.head.kind == "avgpool" and clf.predict_proba(x).shape == (8, 2)


# ----------------------------------------------------------------------------------------- MOABB itself
@pytest.fixture(scope="module")
def fake(tmp_path_factory):
    """MOABB's offline FakeDataset: 3 subjects × 2 sessions × 20 left/right-hand trials of 3 channels."""
    moabb_datasets = pytest.importorskip("moabb.datasets.fake")
    from moabb.paradigms import LeftRightImagery

    root = tmp_path_factory.mktemp("moabb")
    mp = pytest.MonkeyPatch()
    mp.setenv("MNE_DATA", str(root / "mne_data"))
    mp.setenv("MOABB_RESULTS", str(root / "results"))
    ds = moabb_datasets.FakeDataset(
        event_list=("left_hand", "right_hand"), n_sessions=2, n_runs=1, n_subjects=3, n_events=20, duration=60, seed=1
    )
    paradigm = LeftRightImagery(resample=200)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        X, y, meta = paradigm.get_data(ds, subjects=[1, 2, 3])
    yield {"ds": ds, "paradigm": paradigm, "X": X, "y": y, "meta": meta, "root": root}
    mp.undo()


def _store(fake, path):
    """The FakeDataset trials as a neurokit store, in MOABB's order: (3 channels, 3 patches, 200) each."""
    from sklearn.preprocessing import LabelEncoder

    from neurokit.store.patch_store import PatchStoreWriter

    X, meta = fake["X"], fake["meta"]
    y = LabelEncoder().fit_transform(fake["y"])
    attrs = dict(
        modality="eeg",
        card="FakeDataset",
        label_names=["left_hand", "right_hand"],
        ch_names=["C3", "Cz", "C4"],
        recipe={"window_s": 3.0},
        sfreq=200.0,
    )
    keys = list(zip(meta.subject.astype(str), meta.session.astype(str), meta.run.astype(str)))
    with PatchStoreWriter(path, (3, 3, 200), attrs=attrs) as w:
        start = 0
        for (subj, sess, run), grp in itertools.groupby(keys):
            n = len(list(grp))
            w.append(
                X[start : start + n, :, :600].reshape(n, 3, 3, 200),
                y[start : start + n],
                onsets=np.arange(n) * 10.0,
                subject=subj,
                session=sess,
                run=run,
            )
            start += n
    return path


def crop600(X):
    return X[..., :600]


def _csp_lda():
    from pyriemann.estimation import Covariances
    from pyriemann.spatialfilters import CSP
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer

    return make_pipeline(FunctionTransformer(crop600), Covariances("oas"), CSP(nfilter=6), LinearDiscriminantAnalysis())


def _moabb(fake, evaluation, pipelines, name, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ev = evaluation(
            paradigm=fake["paradigm"],
            datasets=[fake["ds"]],
            overwrite=True,
            random_state=0,
            hdf5_path=str(fake["root"] / name),
            **kw,
        )
        return ev.process(pipelines)


def _neurokit_rows(store, scheme):
    """neurokit's folds of ``scheme`` on the store, CSP+LDA fitted on each fold's training + validation samples,
    scored into MOABB rows by neurokit's row functions."""
    from neurokit.data import PatchDataset
    from neurokit.evaluation.schemes import average_folds, fold_rows, make_folds

    ds = PatchDataset(store, labelled=True)
    x = np.concatenate([st.patches(np.arange(len(st))) for st in ds.stores]).reshape(len(ds), 3, 600).astype(np.float64)
    subj, sess = ds.meta("subject").astype(str), ds.meta("session").astype(str)
    folds = make_folds(ds, scheme, n_folds=5, seed=0)
    rows = []
    for f in folds:
        tr = np.sort(np.r_[f.splits["train"]["samples"], f.splits["val"]["samples"]]).astype(int)
        te = np.asarray(f.splits["test"]["samples"], dtype=int)
        est = _csp_lda().fit(x[tr], ds.labels[tr])
        rows += fold_rows(
            scheme,
            "binary",
            ds.labels[te],
            est.decision_function(x[te]),
            subj[te],
            sess[te],
            n_train=len(tr),
            fit_seconds=0.0,
            fold=f.name,
            pipeline="csp",
        )
    return folds, (average_folds(rows) if scheme == "within-session" else rows)


def _compare_rows(ours, theirs):
    def key(r):
        return str(r["subject"]), str(r["session"])

    theirs = {key(r): r for r in theirs.to_dict("records")}
    ours = {key(r): r for r in ours}
    assert sorted(ours) == sorted(theirs) and len(ours) == 6  # 3 subjects × 2 sessions
    for k, r in ours.items():
        t = theirs[k]
        assert (r["samples"], r["samples_test"], r["n_classes"]) == (t["samples"], t["samples_test"], t["n_classes"]), k
        assert r["score"] == pytest.approx(t["score"], abs=1e-6), k  # MOABB keeps scores as float32


@pytest.mark.slow
def test_within_session_splits_and_rows_are_moabb_s(fake, tmp_path):
    from moabb.evaluations import WithinSessionEvaluation
    from moabb.evaluations.splitters import WithinSessionSplitter

    store = _store(fake, tmp_path / "fake.h5")
    folds, ours = _neurokit_rows(store, "within-session")
    # the same 30 test sets (6 subject-sessions × 5 stratified folds, seed 0) as MOABB's splitter
    y = fake["y"]
    theirs = {
        frozenset(te.tolist())
        for _, te in WithinSessionSplitter(n_folds=5, shuffle=True, random_state=0).split(y, fake["meta"])
    }
    assert {frozenset(f.splits["test"]["samples"]) for f in folds} == theirs and len(theirs) == 30
    res = _moabb(fake, WithinSessionEvaluation, {"csp": _csp_lda()}, "ws")
    assert {"score", "time", "samples", "samples_test", "n_classes", "subject", "session"} <= set(res.columns)
    _compare_rows(ours, res)
    assert {r["samples"] for r in ours} == {20} and {r["samples_test"] for r in ours} == {4}  # session total; 20/5


@pytest.mark.slow
def test_cross_subject_splits_and_rows_are_moabb_s(fake, tmp_path):
    from moabb.evaluations import CrossSubjectEvaluation

    store = _store(fake, tmp_path / "fake.h5")
    folds, ours = _neurokit_rows(store, "loso")
    assert [f.subject for f in folds] == ["1", "2", "3"]
    res = _moabb(fake, CrossSubjectEvaluation, {"csp": _csp_lda()}, "cs")
    _compare_rows(ours, res)
    assert {r["samples"] for r in ours} == {80} and {r["samples_test"] for r in ours} == {20}  # 2 subjects; 1 session


@pytest.mark.slow
def test_moabb_evaluations_benchmark_the_neurokit_estimator(fake):
    from moabb.evaluations import CrossSubjectEvaluation, WithinSessionEvaluation
    from sklearn.pipeline import make_pipeline

    pipe = {"cbramod": make_pipeline(FoundationClassifier(**TINY)), "csp": _csp_lda()}
    res = _moabb(fake, WithinSessionEvaluation, pipe, "est-ws")
    ours = res[res.pipeline == "cbramod"]
    assert len(ours) == 6 and set(ours.subject.astype(str)) == {"1", "2", "3"}
    assert ours.score.between(0, 1).all() and (ours.samples_test == 4).all() and (ours.n_classes == 2).all()
    assert (ours.time > 0).all() and len(res[res.pipeline == "csp"]) == 6
    # trials as MNE Epochs (volts, the estimator's default scale)
    res = _moabb(
        fake,
        CrossSubjectEvaluation,
        {"cbramod": make_pipeline(FoundationClassifier(**{**TINY, "scale": 1e4}))},
        "est-cs",
        return_epochs=True,
    )
    assert len(res) == 6 and res.score.between(0, 1).all() and (res.samples == 80).all()


@pytest.mark.slow
def test_moabb_trials_at_another_rate_reach_the_model_resampled(tmp_path_factory):
    """Issue 36 item 2: MOABB passes arrays without a rate; at 160 Hz the estimator (given the paradigm's rate) gives
    the model each trial resampled to 200 Hz, every patch kept (3 s → 3 patches), equal to MNE's resampling."""
    import mne

    moabb_datasets = pytest.importorskip("moabb.datasets.fake")
    from moabb.evaluations import WithinSessionEvaluation
    from moabb.paradigms import LeftRightImagery
    from sklearn.pipeline import make_pipeline

    root = tmp_path_factory.mktemp("moabb160")
    mp = pytest.MonkeyPatch()
    mp.setenv("MNE_DATA", str(root / "mne_data"))
    mp.setenv("MOABB_RESULTS", str(root / "results"))
    seen: list[np.ndarray] = []
    raw_seen: list[np.ndarray] = []

    class Spy(FoundationClassifier):
        def _samples(self, X, reset=False):
            raw_seen.append(np.asarray(X))
            out = super()._samples(X, reset=reset)
            seen.append(out[0])
            return out

    try:
        ds = moabb_datasets.FakeDataset(event_list=("left_hand", "right_hand"), n_sessions=1, n_runs=1, n_subjects=1,
                                        n_events=20, duration=60, seed=1, sfreq=160)  # fmt: skip
        paradigm = LeftRightImagery(resample=160)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            X, _, _ = paradigm.get_data(ds, subjects=[1])
            ev = WithinSessionEvaluation(paradigm=paradigm, datasets=[ds], overwrite=True, suffix="r160",
                                         hdf5_path=str(root / "results"))  # fmt: skip
            res = ev.process({"cbramod": make_pipeline(Spy(**{**TINY, "scale": 1e4, "sfreq": paradigm.resample}))})
    finally:
        mp.undo()
    n_in = X.shape[-1]
    assert n_in == 481 or n_in == 480  # 3 s at 160 Hz (MOABB's interval, its end sample included or not)
    assert len(res) == 1 and seen and all(s.shape[1:] == (3, 3, 200) for s in seen)  # 600 samples at 200 Hz
    want = mne.filter.resample(raw_seen[0], up=200.0, down=160.0, axis=-1, verbose="error")[..., :600] * 1e4
    np.testing.assert_allclose(seen[0].reshape(len(want), 3, 600), want, rtol=1e-5, atol=1e-6)
