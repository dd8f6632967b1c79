"""EpochSampler's read orders: the block order (contiguous blocks in a random order through a shuffle buffer) takes
every window once per epoch, is fixed by (seed, epoch), resumes exactly, gives ranks disjoint parts of whole
blocks; the random order is the one it always was; block reads ask the kernel for whole blocks."""

from __future__ import annotations

import os
import time

import numpy as np
import pytest
import torch

from neurokit._utils.errors import ConfigError
from neurokit.data.dataset import PatchDataset, set_readahead
import neurokit.store.patch_store as store_mod
from neurokit.store.patch_store import PatchStore, PatchStoreWriter
from neurokit.training.optim import EpochSampler, make_loader


def _block(n, **kw):
    kw = {"batch_size": 8, "seed": 5, "order": "block", "block": 16, "buffer": 64, "drop_last": False, **kw}
    return list(EpochSampler(n, **kw))


def test_block_order_takes_every_window_once_and_is_fixed_by_seed_and_epoch():
    n = 1000  # not a multiple of the block: the last block is short
    a = _block(n)
    assert sorted(a) == list(range(n))
    assert a == _block(n) and a != _block(n, epoch=1) and a != _block(n, seed=6)
    assert sorted(_block(n, epoch=1)) == list(range(n))
    # successive windows come from blocks anywhere in the file: as far apart as in the random order on average
    gap_block = np.abs(np.diff(a)).mean()
    gap_random = np.abs(np.diff(list(EpochSampler(n, batch_size=8, seed=5)))).mean()
    assert gap_random / 2 < gap_block < 2 * gap_random

    # but any 64 successive windows lie in at most 9 blocks (two fillings of the buffer of 4, one cut by the short
    # block), where they touch about 40 of the 63 blocks in the random order: the reads stay in a small part of the file
    def spans(order):
        return [len({i // 16 for i in order[k : k + 64]}) for k in range(0, n - 64, 8)]

    assert max(spans(a)) <= 9 and np.mean(spans(list(EpochSampler(n, batch_size=8, seed=5)))) > 30
    # a batch of 8 draws from the buffer of 4 blocks: mostly from several blocks
    blocks_per_batch = [len({i // 16 for i in a[b : b + 8]}) for b in range(0, n - 8, 8)]
    assert 2.5 < np.mean(blocks_per_batch) < 4.5
    # without a buffer it is a block shuffle: each block's windows come out together, in their stored order
    plain = np.asarray(_block(n, buffer=0))
    groups = np.split(plain, np.flatnonzero(np.diff(plain // 16)) + 1)
    assert len(groups) == 63 and all(g.tolist() == list(range(g[0], min(g[0] + 16, n))) for g in groups)


def test_block_order_resumes_with_the_tail_of_the_uninterrupted_epoch():
    full = _block(500, drop_last=True, epoch=3)
    assert len(full) == 496  # 62 whole batches
    for start in (1, 7, 61):
        assert _block(500, drop_last=True, epoch=3, start_batch=start) == full[start * 8 :]
    assert len(EpochSampler(500, batch_size=8, seed=5, order="block", start_batch=7)) == 496 - 56


@pytest.mark.parametrize("order", ["random", "block"])
def test_ranks_take_disjoint_parts_that_cover_all_but_the_remainder(order):
    n, world = 1003, 3
    parts = [list(EpochSampler(n, batch_size=4, seed=1, order=order, block=16, rank=r, world_size=world,
                               drop_last=False)) for r in range(world)]  # fmt: skip
    assert [len(p) for p in parts] == [334] * 3  # n // world each: 1 window (n % world) sits out this epoch
    seen = [i for p in parts for i in p]
    assert len(set(seen)) == len(seen) == 1002
    if order == "block":
        # each rank reads whole blocks but for at most one shared block at each end of its part
        own = [{i // 16 for i in p} for p in parts]
        assert all(len(b) <= 334 // 16 + 2 for b in own)
        assert sum(len(own[r] & own[r + 1]) for r in range(world - 1)) <= 2
        # the ranks' parts are cut from one block order, so together they equal the one-process epoch's windows
        one = _block(n, batch_size=4, seed=1, buffer=0)
        assert set(seen) == set(one[:1002])


def test_the_random_order_is_unchanged_and_orders_are_checked():
    g = torch.Generator().manual_seed(3 * 100003 + 2)
    assert list(EpochSampler(10, batch_size=5, seed=3, epoch=2)) == torch.randperm(10, generator=g).tolist()
    assert list(EpochSampler(6, batch_size=2, seed=0, order="block", shuffle=False)) == list(range(6))
    with pytest.raises(ConfigError, match="order='shuffled'"):
        EpochSampler(10, batch_size=2, seed=0, order="shuffled")


def test_block_order_reads_ahead_each_block_once_through_the_loader(tmp_path, monkeypatch):
    shape = (2, 2, 200)
    x = np.random.default_rng(0).standard_normal((40, *shape), dtype=np.float32)
    x[:, 0, 0, 0] = np.arange(40)
    with PatchStoreWriter(tmp_path / "s.h5", shape, attrs={"modality": "eeg"}) as w:
        w.append(x, np.zeros(40, dtype=np.int64), subject="1")
    ds = PatchDataset(tmp_path / "s.h5")
    calls = []
    real = os.posix_fadvise

    def spy(fd, offset, length, advice):
        if advice == os.POSIX_FADV_WILLNEED:
            calls.append((offset, length))
        return real(fd, offset, length, advice)

    monkeypatch.setattr(os, "posix_fadvise", spy)
    monkeypatch.setattr(store_mod, "_advice_piece", lambda fd: 8000)  # a block of 8 chunks of 3200 bytes: 4 requests
    sampler = EpochSampler(40, batch_size=4, seed=2, order="block", block=8, buffer=16)
    got = torch.cat([xb for xb, _ in make_loader(ds, sampler, 4)])
    assert got[:, 0, 0, 0].long().tolist() == list(sampler)  # the windows of the order, in it
    np.testing.assert_array_equal(got.numpy(), x[list(sampler)])
    for _ in range(200):  # the sampler's requests go through a background thread
        if len(calls) >= 20:
            break
        time.sleep(0.01)
    # each block of 8 windows asked for once, as one range of its 8 chunks, in pieces of at most 8000 bytes
    st: PatchStore = ds.stores[0]
    d = st._patches_dataset()
    starts = [int(d.id.get_chunk_info_by_coord((8 * b, 0, 0, 0)).byte_offset) for b in range(5)]
    assert sorted(calls) == sorted((a + k, min(8000, 25600 - k)) for a in starts for k in range(0, 25600, 8000))
    assert st.advise_on_read is False  # the sampler asked ahead: the reads themselves did not ask again
    # the random order turns it off again
    make_loader(ds, EpochSampler(40, batch_size=4, seed=2), 4)
    assert st.readahead == 0 and set_readahead(ds, 8) == 1 and st.readahead == 8


def test_the_block_order_asks_for_the_next_group_of_blocks_as_it_enters_a_group():
    s = EpochSampler(100, batch_size=5, seed=3, order="block", block=10, buffer=20, drop_last=False)
    asked, seen_at = [], []
    s.will_need = lambda idx: (asked.append(sorted(np.asarray(idx).tolist())), seen_at.append(len(got)))
    got: list[int] = []
    for i in s:
        got.append(i)
    # at the start: the first two groups of 20 (two blocks each); then one group ahead at each group's start
    assert seen_at == [0, 20, 40, 60] and [len(a) for a in asked] == [40, 20, 20, 20]
    assert sorted(sum(asked, [])) == list(range(100))
    for k, a in enumerate(asked[1:], start=1):  # what is asked at position 20k is read from position 20(k+1) on
        assert set(got[20 * (k + 1) : 20 * (k + 2)]) == set(a)
    assert set(got[:40]) == set(asked[0])
    # resumed at batch 9 (position 45, in the third group): that group and the next are asked for first
    r = EpochSampler(100, batch_size=5, seed=3, order="block", block=10, buffer=20, drop_last=False, start_batch=9)
    first = []
    r.will_need = lambda idx: first.append(sorted(np.asarray(idx).tolist()))
    assert list(r) == got[45:] and first[0] == sorted(got[40:80]) and len(first) == 2


def test_read_ahead_requests_are_as_large_as_the_device_reads_whole(tmp_path, monkeypatch):
    # the kernel reads at most max(read_ahead_kb, max_sectors_kb) per POSIX_FADV_WILLNEED: the pieces are that size
    f = tmp_path / "x.bin"
    f.write_bytes(b"\0" * 10)
    fd = os.open(f, os.O_RDONLY)
    try:
        monkeypatch.setattr(store_mod, "_PIECE", {})
        dev = os.fstat(fd).st_dev
        q = f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}/queue"
        if not os.path.exists(q):
            q = f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}/../queue"
        try:
            kb = max(int(open(f"{q}/read_ahead_kb").read()), int(open(f"{q}/max_sectors_kb").read()))
            want = min(max(kb << 10, 128 << 10), 32 << 20)
        except (OSError, ValueError):  # no block device under the temporary folder (tmpfs, overlay)
            want = store_mod.WILL_NEED_PIECE
        assert store_mod._advice_piece(fd) == want
    finally:
        os.close(fd)
    assert store_mod._advice_piece(-1) == store_mod.WILL_NEED_PIECE  # a closed descriptor: the default
