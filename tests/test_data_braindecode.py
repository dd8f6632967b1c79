"""A store handed to braindecode and back (issue 36 item 1): braindecode's EEGClassifier trains on a neurokit store,
and a braindecode windows dataset becomes a store holding the same windows, labels and subjects."""

from __future__ import annotations

import numpy as np
import pytest

from neurokit.data.export import from_braindecode, to_braindecode
from neurokit.store.patch_store import PatchStore, PatchStoreWriter

pytest.importorskip("braindecode")


def _store(path):
    rng = np.random.default_rng(0)
    attrs = dict(modality="eeg", card="t", label_names=["left", "right"], ch_names=["C3", "Cz", "C4"],
                 recipe={"window_s": 2.0, "scale": 1e4}, sfreq=200.0)  # fmt: skip
    with PatchStoreWriter(path, (3, 2, 200), attrs=attrs) as w:
        for s in ("S001", "S002"):
            x = rng.normal(0, 0.2, (8, 3, 2, 200)).astype(np.float32)
            y = np.arange(8) % 2
            x[y == 1, 0] += 0.5  # a class difference in C3
            w.append(x, y, onsets=np.arange(8) * 2.0, subject=s, session="", run="R01")
    return path


def test_braindecode_trains_on_a_store_and_a_store_comes_back(tmp_path):
    import torch
    from braindecode import EEGClassifier
    from braindecode.models import EEGNet

    st = PatchStore(_store(tmp_path / "s.h5"))
    ds = to_braindecode(tmp_path / "s.h5")
    assert len(ds) == 16
    x0, y0, _ = ds[0]
    np.testing.assert_allclose(x0, st.patches(0).reshape(3, 400) / 1e4, rtol=1e-6)  # volts
    assert y0 == int(st.labels[0]) and list(ds.description["subject"])[:2] == ["S001", "S001"]
    torch.manual_seed(0)
    clf = EEGClassifier(EEGNet, module__n_chans=3, module__n_outputs=2, module__n_times=400, max_epochs=1,
                        batch_size=8, train_split=None, verbose=0)  # fmt: skip
    clf.fit(ds, y=None)
    assert clf.predict(ds).shape == (16,)
    back = from_braindecode(ds, tmp_path / "b.h5", label_names=["left", "right"])
    b = PatchStore(back)
    np.testing.assert_allclose(b.patches(slice(None)), st.patches(slice(None)), rtol=1e-5, atol=1e-7)
    assert b.labels.tolist() == st.labels.tolist() and list(b.info.label_names) == ["left", "right"]
    assert b.meta["subject"].astype(str).tolist() == st.meta["subject"].astype(str).tolist()


def test_a_braindecode_dataset_without_subjects_is_one_subject_with_true_onsets(tmp_path, caplog):
    """Review of issue 36: windows without a subject became one 'subject' each, at made-up onsets."""
    from braindecode.datasets import create_from_X_y

    x = np.random.default_rng(1).normal(0, 2e-5, (2, 3, 1200)).astype(np.float32)
    ds = create_from_X_y(x, [0, 1], drop_last_window=True, sfreq=200.0, ch_names=["C3", "Cz", "C4"],
                         window_size_samples=400, window_stride_samples=400)  # fmt: skip
    with caplog.at_level("WARNING", logger="neurokit"):
        st = PatchStore(from_braindecode(ds, tmp_path / "b.h5"))
    assert "name no subject" in caplog.text and set(st.meta["subject"].astype(str)) == {"braindecode"}
    assert st.meta["onset"].tolist() == [0.0, 2.0, 4.0, 0.0, 2.0, 4.0]  # each trial's windows at 0, 2, 4 s
    with pytest.raises(Exception, match="exists"):
        from_braindecode(ds, tmp_path / "b.h5")
    assert from_braindecode(ds, tmp_path / "b.h5", overwrite=True).exists()


def _regression_store(path):
    """A SEED-VIG-like store: float PERCLOS targets, onsets 8 s apart."""
    rng = np.random.default_rng(2)
    attrs = dict(modality="eeg", card="t", label_names=[], ch_names=["C3", "Cz", "C4"],
                 recipe={"window_s": 1.0, "scale": 1e4}, sfreq=200.0)  # fmt: skip
    with PatchStoreWriter(path, (3, 1, 200), attrs=attrs, label_dtype="float32") as w:
        x = rng.normal(0, 0.2, (3, 3, 1, 200)).astype(np.float32)
        w.append(x, np.array([0.154, 0.169, 0.844], np.float32), onsets=np.array([0.0, 8.0, 16.0]), subject="S01",
                 session="", run="R1")  # fmt: skip
    return path


def test_regression_targets_and_onsets_survive_the_round_trip(tmp_path):
    """Issue 44 item 1: PERCLOS targets 0.154, 0.169, 0.844 came back as 0, 0, 0 (int64), onsets as 0."""
    st = PatchStore(_regression_store(tmp_path / "r.h5"))
    ds = to_braindecode(tmp_path / "r.h5")
    assert [float(ds[i][1]) for i in range(3)] == pytest.approx([0.154, 0.169, 0.844], abs=1e-6)
    b = PatchStore(from_braindecode(ds, tmp_path / "back.h5"))
    assert b.labels.dtype == np.float32 and b.labels.tolist() == pytest.approx([0.154, 0.169, 0.844], abs=1e-6)
    assert b.meta["onset"].tolist() == [0.0, 8.0, 16.0]
    np.testing.assert_allclose(b.patches(slice(None)), st.patches(slice(None)), rtol=1e-5, atol=1e-7)
    assert list(b.info.label_names) == []


def test_channels_realigned_by_name_across_a_concatenation(tmp_path):
    """Two braindecode datasets with their channels in different orders: the second one's C4 was stored as C3."""
    from braindecode.datasets import BaseConcatDataset, create_from_X_y

    rng = np.random.default_rng(3)
    xa = rng.normal(0, 2e-5, (1, 3, 400)).astype(np.float32)
    xb = xa[:, [2, 1, 0]] * 2  # the same signal, channels C4, Cz, C3, doubled
    a = create_from_X_y(xa, [0], drop_last_window=True, sfreq=200.0, ch_names=["C3", "Cz", "C4"],
                        window_size_samples=400, window_stride_samples=400)  # fmt: skip
    b = create_from_X_y(xb, [1], drop_last_window=True, sfreq=200.0, ch_names=["C4", "Cz", "C3"],
                        window_size_samples=400, window_stride_samples=400)  # fmt: skip
    st = PatchStore(from_braindecode(BaseConcatDataset([a, b]), tmp_path / "c.h5", label_names=["l", "r"]))
    assert list(st.info.ch_names) == ["C3", "Cz", "C4"]
    p = st.patches(slice(None))
    np.testing.assert_allclose(p[1], 2 * p[0], rtol=1e-5)  # C3 of the second dataset is its C3
    c = create_from_X_y(xa, [0], drop_last_window=True, sfreq=200.0, ch_names=["C3", "Cz", "Pz"],
                        window_size_samples=400, window_stride_samples=400)  # fmt: skip
    with pytest.raises(Exception, match=r"dataset 1 has other channels .*missing \['C4'\], extra \['Pz'\]"):
        from_braindecode(BaseConcatDataset([a, c]), tmp_path / "d.h5")
    assert not (tmp_path / "d.h5").exists()


def test_string_targets_become_classes_or_are_refused_in_one_line(tmp_path):
    from braindecode.datasets import create_from_X_y

    x = np.random.default_rng(4).normal(0, 2e-5, (3, 3, 400)).astype(np.float32)
    ds = create_from_X_y(x, ["right", "left", "right"], drop_last_window=True, sfreq=200.0,
                         ch_names=["C3", "Cz", "C4"], window_size_samples=400, window_stride_samples=400)  # fmt: skip
    st = PatchStore(from_braindecode(ds, tmp_path / "s.h5"))
    assert list(st.info.label_names) == ["left", "right"] and st.labels.tolist() == [1, 0, 1]
    with pytest.raises(Exception, match=r"targets \['right'\] are not in label_names \['left', 'up'\]"):
        from_braindecode(ds, tmp_path / "t.h5", label_names=["left", "up"])


def test_a_class_target_without_a_name_is_refused_before_writing(tmp_path):
    """Review of issue 44: targets 0, 1, 2 with label_names ['l', 'r'] wrote a store PatchStore then refused."""
    from braindecode.datasets import create_from_X_y

    x = np.random.default_rng(5).normal(0, 2e-5, (3, 3, 400)).astype(np.float32)
    ds = create_from_X_y(x, [0, 1, 2], drop_last_window=True, sfreq=200.0, ch_names=["C3", "Cz", "C4"],
                         window_size_samples=400, window_stride_samples=400)  # fmt: skip
    with pytest.raises(Exception, match=r"class target 2 has no name in label_names \['l', 'r'\]"):
        from_braindecode(ds, tmp_path / "x.h5", label_names=["l", "r"])
    assert not (tmp_path / "x.h5").exists()
