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
