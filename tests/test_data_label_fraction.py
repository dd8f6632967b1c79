"""Label-fraction subsets: stratified by class, seeded, whole subjects kept together when enough subjects hold
every class (else windows stratified by class and subject), and disjoint from the validation and test splits."""

import numpy as np
import pytest

from neurokit._utils.errors import ConfigError
from neurokit.data.splits import label_fraction_subset


def _pool(n_subjects=10, per_class=5):
    """``n_subjects`` subjects, each with ``per_class`` windows of class 0 and of class 1."""
    subjects = np.repeat([f"S{i:03d}" for i in range(n_subjects)], 2 * per_class)
    labels = np.tile(np.repeat([0, 1], per_class), n_subjects)
    return labels, subjects


def test_whole_subjects_when_enough_subjects_hold_every_class():
    labels, subjects = _pool()
    keep, info = label_fraction_subset(labels, subjects, 0.2, seed=3)
    # quota round(0.2 · 50) = 10 windows per class; each subject brings 5 of each: two whole subjects
    assert info["mode"] == "subjects" and info["n_train"] == 20 and info["class_counts"] == {"0": 10, "1": 10}
    assert len(info["subjects"]) == 2
    kept = set(subjects[keep])
    for s in kept:  # every window of a kept subject is kept, none of the others
        assert (np.isin(np.flatnonzero(subjects == s), keep)).all()
    assert set(subjects[np.setdiff1d(np.arange(len(labels)), keep)]).isdisjoint(kept)
    # seeded: same seed, same subset; another seed, (here) other subjects
    assert np.array_equal(keep, label_fraction_subset(labels, subjects, 0.2, seed=3)[0])
    others = {tuple(label_fraction_subset(labels, subjects, 0.2, seed=s)[1]["subjects"]) for s in range(6)}
    assert len(others) > 1


def test_windows_stratified_by_class_and_subject_when_too_few_subjects():
    labels, subjects = _pool()
    # 0.05 · 10 subjects < 1 subject per class: windows; quota round(0.05 · 50) = 2 (rounded half to even) per class
    keep, info = label_fraction_subset(labels, subjects, 0.05, seed=0)
    assert info["mode"] == "windows" and info["class_counts"] == {"0": 2, "1": 2} and info["n_train"] == 4
    # each class's windows come from distinct subjects (proportional shares of 0.2 windows, largest remainders)
    for c in (0, 1):
        ks = keep[labels[keep] == c]
        assert len(set(subjects[ks])) == len(ks)
    # a split by run (by_subject=False) draws windows whatever the subject count
    assert label_fraction_subset(labels, subjects, 0.2, seed=0, by_subject=False)[1]["mode"] == "windows"
    # imbalanced classes: each class keeps its own share, and at least one window
    lab = np.array([0] * 90 + [1] * 10)
    _, inf = label_fraction_subset(lab, np.array(["a"] * 100), 0.05, seed=1)
    assert inf["class_counts"] == {"0": 4, "1": 1}  # round(4.5) = 4, max(1, round(0.5)) = 1


def test_fraction_one_keeps_everything_and_bad_fractions_are_refused():
    labels, subjects = _pool(3, 2)
    keep, info = label_fraction_subset(labels, subjects, 1.0, seed=0)
    assert info["mode"] == "all" and list(keep) == list(range(len(labels)))
    for bad in (0.0, -0.1, 1.5):
        with pytest.raises(ConfigError, match=r"label_fraction=.*must be in \(0, 1\]"):
            label_fraction_subset(labels, subjects, bad)


def test_a_finetune_subset_stays_inside_the_training_split(planted_store, tmp_path):
    """Through fine-tuning: the subset's windows are training-split windows, none of validation or test."""
    from neurokit.data import PatchDataset
    from neurokit.training.config import FinetuneConfig
    from neurokit.pipelines.finetune import finetune

    cfg = FinetuneConfig(
        model_kwargs={"n_layers": 1},
        epochs=1,
        batch_size=8,
        head="avgpool",
        progress=False,
        device="cpu",
        splits=SPLITS,
        label_fraction=0.2,
        strategy="frozen",
        baselines=False,
        seed=1,
    )
    rep = finetune(planted_store, tmp_path / "r", cfg)
    lf = rep["label_fraction"]
    train_ids = rep["splits"]["train"]["samples"]
    ds = PatchDataset(planted_store, labelled=True)
    subj = ds.meta("subject").astype(str)
    assert lf["n_train_full"] == 100 and len(train_ids) == lf["n_train"] == rep["n_samples"]["train"] == 20
    assert set(subj[train_ids]) <= set(SPLITS["train"]) and set(subj[train_ids]) == set(lf["subjects"])
    assert lf["mode"] == "subjects" and rep["class_counts_train"] == lf["class_counts"] == {"0": 10, "1": 10}


SPLITS = {"train": ["S001", "S002", "S003", "S004", "S005"], "val": ["S006"], "test": ["S007", "S008"]}


@pytest.fixture(scope="module")
def planted_store(tmp_path_factory):
    """8 subjects × 20 windows (2 channels × 2 patches); class 1 carries a 10 Hz rhythm."""
    from neurokit.store.patch_store import PatchStoreWriter

    path = tmp_path_factory.mktemp("lf") / "s.h5"
    rng = np.random.default_rng(0)
    t = np.arange(200) / 200.0
    attrs = dict(
        modality="eeg",
        card="synthetic",
        label_names=["a", "b"],
        ch_names=["C3", "C4"],
        recipe={"window_s": 2.0},
        sfreq=200.0,
    )
    with PatchStoreWriter(path, (2, 2, 200), attrs=attrs) as w:
        for s in range(1, 9):
            y = np.array([0, 1] * 10)
            x = rng.normal(0, 0.3, (20, 2, 2, 200)) + y[:, None, None, None] * np.sin(2 * np.pi * 10 * t)
            w.append(x.astype(np.float32), y, onsets=np.arange(20) * 3.0, subject=f"S{s:03d}", session="1", run="R01")
    return path
