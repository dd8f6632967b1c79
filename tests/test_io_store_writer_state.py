"""Patch store writer and reader errors found by the type check (issue 20 item 3)."""

import h5py
import numpy as np
import pytest

from neurokit._utils.errors import StoreError
from neurokit.store.patch_store import PatchStore, PatchStoreWriter


def _frames_store(path):
    # 2 frames per sample, 2 patches of 3 vertices over a 6-vertex template
    w = PatchStoreWriter(path, (2, 2, 3), attrs={"modality": "surface"}, patch_index=np.arange(6).reshape(2, 3))
    w.append_frames(np.arange(24, dtype=np.float32).reshape(4, 6))
    w.append_samples(np.array([0, 2]), np.array([0, 1]), subject="s1", session="1", run="1")
    return w.close()


def test_frames_store_reads_back(tmp_path):
    st = PatchStore(_frames_store(tmp_path / "f.h5"))
    assert len(st) == 2 and st.sample_shape == (2, 2, 3)
    np.testing.assert_array_equal(st.patches([1])[0, 0], [[12, 13, 14], [15, 16, 17]])


def test_frames_store_without_frames_per_sample_is_refused_by_name(tmp_path):
    path = _frames_store(tmp_path / "f.h5")
    with h5py.File(path, "a") as f:
        del f.attrs["frames_per_sample"]
    with pytest.raises(StoreError, match="f.h5: a frames-layout store without its 'frames_per_sample'"):
        PatchStore(path)  # was: TypeError from int(None)


def test_set_attrs_after_close_says_the_writer_is_closed(tmp_path):
    w = PatchStoreWriter(tmp_path / "s.h5", (1, 1, 4))
    w.append(np.zeros((1, 1, 1, 4), np.float32), np.array([0]), subject="s1", session="1", run="1")
    w.close()
    with pytest.raises(StoreError, match=r"s\.h5: the store writer is closed"):
        w.set_attrs(note="late")  # was: AttributeError on None
    assert PatchStore(tmp_path / "s.h5").attrs.get("note") is None
