"""A labelled EEG store as MNE Epochs (for braindecode, MOABB pipelines and MNE decoders; issue 20 item 2b)."""

import numpy as np
import pytest

from neurokit._utils.errors import ConfigError, StoreError
from neurokit.data.export import to_epochs
from neurokit.store.patch_store import PatchStoreWriter


def _store(path, modality="eeg"):
    attrs = dict(
        modality=modality,
        card="synthetic",
        label_names=["a", "b"],
        ch_names=["C3", "Cz", "C4"],
        recipe={"window_s": 2.0, "scale": 10000.0},
        sfreq=200.0,
        units="100 uV",
    )
    with PatchStoreWriter(path, (3, 2, 200), attrs=attrs) as w:
        for s in ("S001", "S002"):
            x = np.arange(4 * 3 * 2 * 200, dtype=np.float32).reshape(4, 3, 2, 200) / 1000.0
            w.append(x, np.array([0, 1, 1, 0]), onsets=np.arange(4) * 2.0, subject=s, session="1", run="R01")
    return path


def test_store_windows_become_volt_epochs_with_metadata(tmp_path):
    ep = to_epochs(_store(tmp_path / "s.h5"), subjects=["S002"])
    x = ep.get_data()
    assert x.shape == (4, 3, 400) and ep.info["sfreq"] == 200.0 and ep.ch_names == ["C3", "Cz", "C4"]
    # stored value v (units of 100 µV) → v / 1e4 V; patches joined in time order
    assert x[0, 0, 0] == 0.0 and x[0, 0, 200] == pytest.approx(0.2 / 1e4) and x[1, 2, 399] == pytest.approx(2.399 / 1e4)
    assert ep.metadata.columns.tolist() == ["subject", "session", "run", "onset", "target"]
    assert ep.metadata.target.tolist() == [0, 1, 1, 0] and set(ep.metadata.subject) == {"S002"}
    assert ep.event_id == {"a": 1, "b": 2} and ep.events[:, 2].tolist() == [1, 2, 2, 1]
    assert ep.get_montage() is not None  # 10-05 names: positions set


def test_the_estimator_reads_exported_epochs_as_the_store_samples(tmp_path):
    from neurokit.training.estimator import FoundationClassifier

    ep = to_epochs(_store(tmp_path / "s.h5"))
    clf = FoundationClassifier(model_kwargs={"n_layers": 1}, epochs=1, batch_size=4).fit(ep, ep.metadata.target)
    assert clf.sample_shape_ == (3, 2, 200)
    from neurokit.store.patch_store import PatchStore

    stored = PatchStore(tmp_path / "s.h5").patches(np.arange(8)).reshape(8, 3, 400)  # units of 100 µV
    from_epochs = clf.decision_function(ep)
    np.testing.assert_allclose(clf.set_params(scale=1.0).decision_function(stored), from_epochs, rtol=1e-5, atol=1e-6)


def test_non_eeg_and_empty_selections_are_refused(tmp_path):
    with pytest.raises(StoreError, match="holds surface samples; only EEG stores become MNE Epochs"):
        to_epochs(_store(tmp_path / "f.h5", modality="surface"))
    with pytest.raises(
        ConfigError,
        match=r"no sample of subjects \['S009'\] in the store\(s\); subjects there: "
        r"\['S001', 'S002'\]",
    ):  # PatchDataset names the unknown and the known ids
        to_epochs(_store(tmp_path / "e.h5"), subjects=["S009"])
