"""Batched reads of patch stores (PatchStore.read_into, PatchDataset.__getitems__, collate_patches): the same
windows and labels as the per-window path, stores of other chunkings and filters, DataLoader workers."""

from __future__ import annotations

import h5py
import numpy as np
import pytest
import torch

import neurokit.data.dataset as dataset_mod
import neurokit.store.patch_store as store_mod
from neurokit._utils.errors import StoreError
from neurokit.data.corpus import ScaledDataset, corpus_ids
from neurokit.data.dataset import PatchBatch, PatchDataset, collate_patches
from neurokit.store.patch_store import PatchStore, PatchStoreWriter
from neurokit.training.optim import EpochSampler, make_loader

SHAPE = (3, 2, 200)


def _write(path, n, *, first=0, compression=None, labels_float=False):
    """A store of ``n`` windows; window ``i`` holds ``first + i`` at [0, 0, 0] and seeded noise elsewhere."""
    rng = np.random.default_rng(first)
    x = rng.standard_normal((n, *SHAPE), dtype=np.float32)
    x[:, 0, 0, 0] = np.arange(first, first + n)
    y = (np.arange(n) % 3).astype(np.float32 if labels_float else np.int64)
    with PatchStoreWriter(
        path, SHAPE, attrs={"modality": "eeg"}, compression=compression, label_dtype=y.dtype.name
    ) as w:
        w.append(x, y, subject=[f"s{i % 2}" for i in range(n)])
    return x, y


def _rechunk(path, chunks, compression=None):
    """Rewrite ``/patches`` with another chunking (as a store written by an older writer or another tool)."""
    with h5py.File(path, "r+") as f:
        data = f["patches"][:]
        del f["patches"]
        f.create_dataset("patches", data=data, chunks=chunks, compression=compression)


def _ids(x: torch.Tensor) -> list[int]:
    return [int(v) for v in x[:, 0, 0, 0].tolist()]


def test_read_into_equals_the_stored_windows_for_every_chunking(tmp_path):
    x, _ = _write(tmp_path / "new.h5", 23)
    rows = np.array([17, 3, 3, 22, 0, 4, 5, 6, -1])  # any order, repeats, consecutive runs, a negative row
    want = x[rows]
    stores = {"new": PatchStore(tmp_path / "new.h5")}
    for name, chunks, comp in (("lzf", (1, *SHAPE), "lzf"), ("four", (4, *SHAPE), None), ("flat", None, None)):
        _write(tmp_path / f"{name}.h5", 23, compression=comp)
        if name != "lzf":
            _rechunk(tmp_path / f"{name}.h5", chunks)
        stores[name] = PatchStore(tmp_path / f"{name}.h5")
    for name, st in stores.items():
        np.testing.assert_array_equal(st.patches(rows), want, err_msg=name)
        np.testing.assert_array_equal(st.patches(int(rows[0])), want[0], err_msg=name)
        np.testing.assert_array_equal(st.patches(slice(2, 6)), x[2:6], err_msg=name)
        out = np.full((12, *SHAPE), -7, dtype=np.float32)
        st.read_into(np.array([9, 1]), out, np.array([5, 11]))
        np.testing.assert_array_equal(out[[5, 11]], x[[9, 1]], err_msg=name)
        assert (out[[0, 4, 6]] == -7).all()  # nothing else written
        st.close()
    assert stores["new"]._direct and not stores["lzf"]._direct and not stores["four"]._direct
    with pytest.raises(IndexError, match="sample 23 outside"):
        stores["new"].patches([1, 23])
    with pytest.raises(ValueError, match="C-contiguous float32"):
        stores["new"].read_into(np.array([0]), np.zeros((1, *SHAPE)))


def test_shuffled_batches_equal_the_per_window_path_bitwise(tmp_path):
    xa, ya = _write(tmp_path / "a.h5", 21)
    xb, yb = _write(tmp_path / "b.h5", 14, first=100)
    _rechunk(tmp_path / "b.h5", (4, *SHAPE), "lzf")  # two stores, one of an older layout
    ds = PatchDataset([tmp_path / "a.h5", tmp_path / "b.h5"], subjects=["s0", "s1"])
    sampler = EpochSampler(len(ds), batch_size=8, seed=3, drop_last=False)
    got = list(make_loader(ds, sampler, 8))  # __getitems__ + collate_patches
    per = [torch.utils.data.default_collate([ds[k] for k in b]) for b in np.array_split(list(sampler), [8, 16, 24, 32])]
    assert len(got) == len(per) == 5
    for (x, y), (x0, y0) in zip(got, per):
        assert x.dtype == x0.dtype == torch.float32 and y.dtype == y0.dtype == torch.int64
        assert torch.equal(x, x0) and torch.equal(y, y0)
    order = [int(k) for k in sampler]
    assert sum((_ids(x) for x, _ in got), []) == [(list(range(21)) + list(range(100, 114)))[k] for k in order]
    # the default collate of a PatchBatch stacks the same values
    b = ds.__getitems__(order[:5])
    assert isinstance(b, PatchBatch) and len(b) == 5
    x1, y1 = torch.utils.data.default_collate(b)
    x2, y2 = collate_patches(b)
    assert (
        torch.equal(x1, x2)
        and torch.equal(y1, y2)
        and _ids(x2) == [(list(range(21)) + list(range(100, 114)))[k] for k in order[:5]]
    )


def test_scaled_dataset_batches_equal_its_items_bitwise(tmp_path):
    _write(tmp_path / "a.h5", 10)
    _write(tmp_path / "b.h5", 6, first=50)
    ds = PatchDataset([tmp_path / "a.h5", tmp_path / "b.h5"])
    scales = {c: s for c, s in zip(sorted(set(corpus_ids(ds))), (0.37, 2.9))}
    sd = ScaledDataset(ds, scales)
    idx = [15, 2, 9, 10, 0, 3]
    x, y = collate_patches(sd.__getitems__(idx))
    x0, y0 = torch.utils.data.default_collate([sd[k] for k in idx])
    assert torch.equal(x, x0) and torch.equal(y, y0)
    assert not torch.equal(x, collate_patches(ds.__getitems__(idx))[0])  # it did scale
    sub = torch.utils.data.Subset(sd, [4, 11, 7])  # torch's Subset passes __getitems__ through
    xs, _ = collate_patches(sub.__getitems__([2, 0]))
    assert torch.equal(xs, torch.stack([sd[7][0], sd[4][0]]))


def test_two_forked_workers_return_every_window_once_per_epoch(tmp_path):
    x, y = _write(tmp_path / "s.h5", 50)
    ds = PatchDataset(tmp_path / "s.h5")
    ds[0]  # the parent holds the file open when the workers fork: each opens its own
    for epoch in range(2):
        sampler = EpochSampler(len(ds), batch_size=3, seed=1, epoch=epoch, drop_last=False)
        dl = torch.utils.data.DataLoader(
            ds,
            batch_size=3,
            sampler=sampler,
            num_workers=2,
            collate_fn=collate_patches,
            multiprocessing_context="fork",
        )
        held = list(dl)  # every batch kept to the end: a worker's reused buffer must not change one
        seen = sum((_ids(xb) for xb, _ in held), [])
        assert seen == [int(k) for k in sampler]  # the sampler's order, each window once
        assert sorted(seen) == list(range(50))
        np.testing.assert_array_equal(torch.cat([xb for xb, _ in held]).numpy(), x[seen])
        assert torch.cat([yb for _, yb in held]).tolist() == y[seen].tolist()
        # 17 batches came through at most 4 reused shared buffers per worker, not one new buffer each
        peers = list(dataset_mod._PEERS.values())[-2:]
        assert len(held) == 17 and all(1 <= len(p.storages) <= dataset_mod._SlotPool.MAX_SLOTS for p in peers)
    assert len(dataset_mod._PEERS) <= 3  # the first epoch's exited workers were forgotten
    del dl  # the loop is over and its workers gone: their buffers are given back without waiting for another loader
    assert dataset_mod.release_worker_buffers() >= 1 and dataset_mod._PEERS == {}


def test_a_non_finite_window_of_a_large_store_is_named_when_read(tmp_path, monkeypatch):
    x, _ = _write(tmp_path / "s.h5", 8)
    with h5py.File(tmp_path / "s.h5", "r+") as f:
        f["patches"][5, 1, 1, 7] = np.nan
    monkeypatch.setattr(store_mod, "FINITE_SCAN_VALUES", 0)  # too large to scan when opened
    ds = PatchDataset(tmp_path / "s.h5")
    x0, _ = collate_patches(ds.__getitems__([0, 1, 2]))
    np.testing.assert_array_equal(x0.numpy(), x[:3])
    with pytest.raises(StoreError, match=r"sample\(s\) 5 hold NaN"):
        ds.__getitems__([1, 5, 2])


def test_a_transform_and_float_labels_take_the_item_path(tmp_path):
    x, y = _write(tmp_path / "s.h5", 9, labels_float=True)
    ds = PatchDataset(tmp_path / "s.h5", transform=lambda t: t * 2)
    items = ds.__getitems__([4, 1])
    assert isinstance(items, list)
    xb, yb = collate_patches(items)
    np.testing.assert_array_equal(xb.numpy(), 2 * x[[4, 1]])
    assert yb.dtype == torch.float32 and yb.tolist() == y[[4, 1]].tolist()


def test_a_worker_under_the_default_collate_returns_the_windows(tmp_path):
    x, y = _write(tmp_path / "s.h5", 30)
    ds = PatchDataset(tmp_path / "s.h5")
    dl = torch.utils.data.DataLoader(ds, batch_size=3, num_workers=1, multiprocessing_context="fork")
    got = list(dl)  # 10 batches: the worker's buffers are never handed back, later batches use ordinary memory
    np.testing.assert_array_equal(torch.cat([xb for xb, _ in got]).numpy(), x)
    assert torch.cat([yb for _, yb in got]).tolist() == y.tolist()


def test_worker_batches_reach_the_loop_uncopied_and_a_kept_one_never_changes(tmp_path):
    x, _ = _write(tmp_path / "s.h5", 60)
    ds = PatchDataset(tmp_path / "s.h5")
    sampler = EpochSampler(60, batch_size=3, seed=4, drop_last=False)
    order = list(sampler)
    kept, in_slot = [], 0
    for b, (xb, _) in enumerate(make_loader(ds, sampler, 3, num_workers=2)):
        np.testing.assert_array_equal(xb.numpy(), x[order[3 * b : 3 * b + 3]])
        slots = {st.data_ptr() for p in dataset_mod._PEERS.values() for st in p.storages.values()}
        in_slot += xb.untyped_storage().data_ptr() in slots  # the worker's buffer itself, not a copy of it
        if b % 5 == 0:
            kept.append((b, xb))  # held while later batches come: its buffer is not handed back meanwhile
    for b, xb in kept:
        np.testing.assert_array_equal(xb.numpy(), x[order[3 * b : 3 * b + 3]])
    # 20 batches: all but those a worker sent while every one of its buffers was held came in a buffer
    assert 12 <= in_slot <= 20
    assert all(len(p.storages) <= dataset_mod._SlotPool.MAX_SLOTS for p in dataset_mod._PEERS.values())


def test_batches_read_in_the_process_reuse_let_go_buffers_and_a_kept_one_never_changes(tmp_path):
    x, _ = _write(tmp_path / "s.h5", 40)
    ds = PatchDataset(tmp_path / "s.h5")
    sampler = EpochSampler(40, batch_size=4, seed=6, drop_last=False)
    order = list(sampler)
    ptrs, kept = [], []
    for b, (xb, _) in enumerate(make_loader(ds, sampler, 4)):
        np.testing.assert_array_equal(xb.numpy(), x[order[4 * b : 4 * b + 4]])
        ptrs.append(xb.untyped_storage().data_ptr())
        if b == 2:
            kept.append(xb[1:])  # a view kept: its buffer is not lent again
    np.testing.assert_array_equal(kept[0].numpy(), x[order[9:12]])
    assert len(ptrs) == 10 and len(set(ptrs)) <= dataset_mod._LocalPool.MAX  # a few buffers, lent again and again
    assert ptrs[2] not in ptrs[3:]
