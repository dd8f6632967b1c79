"""Batches of a float16 store as stored (issue 45 item 4): ``PatchDataset(batch_dtype="stored")`` hands float16
batches over without a host conversion, the trainer casts them to float32 on the device, and pretraining picks
that path for a float16 store unless a host-side step needs float32."""

from __future__ import annotations

import copy
import logging

import h5py
import numpy as np
import pytest
import torch

from neurokit.data.corpus import ScaledDataset
from neurokit.data.dataset import PatchDataset, _SlotPool
from neurokit.store.patch_store import PatchStore, PatchStoreWriter

SHAPE = (3, 2, 200)


def _write(path, n=24, dtype="float16", seed=0):
    x = (np.random.default_rng(seed).standard_normal((n, *SHAPE)) * 3).astype(np.float32)
    with PatchStoreWriter(path, SHAPE, dtype=dtype) as w:
        w.append(x, np.arange(n) % 2, subject=[f"S{i % 3}" for i in range(n)])
    return path


def _stored(path) -> np.ndarray:
    with h5py.File(path) as f:
        return f["patches"][:]


def test_stored_batches_are_the_float16_values_exactly_and_float32_stays(tmp_path):
    p = _write(tmp_path / "h.h5")
    raw = _stored(p)
    assert raw.dtype == np.float16
    ds = PatchDataset(p, batch_dtype="stored")
    assert ds.x_dtype == torch.float16
    k = [7, 2, 11, 2, 23]
    b = ds.__getitems__(k)
    assert b.x.dtype == torch.float16 and b.x.shape == (5, *SHAPE)
    np.testing.assert_array_equal(b.x.numpy(), raw[k])  # bit for bit: no conversion in between
    np.testing.assert_array_equal(b.y.numpy(), np.array(k) % 2)
    x1, y1 = ds[11]
    assert x1.dtype == torch.float16 and int(y1) == 1
    np.testing.assert_array_equal(x1.numpy(), raw[11])
    # the default path: float32, equal to the float16 values widened
    d32 = PatchDataset(p)
    assert d32.batch_dtype == "float32" and d32.x_dtype == torch.float32
    b32 = d32.__getitems__(k)
    assert b32.x.dtype == torch.float32
    np.testing.assert_array_equal(b32.x.numpy(), raw[k].astype(np.float32))
    assert d32[11][0].dtype == torch.float32
    # read_into: float16 out only from a float16 store, scattered places left alone elsewhere
    out = np.full((4, *SHAPE), 9.0, dtype=np.float16)
    PatchStore(p).read_into(np.array([5, 0]), out, at=np.array([3, 1]))
    np.testing.assert_array_equal(out[[3, 1]], raw[[5, 0]])
    assert (out[[0, 2]] == 9).all()
    p32 = _write(tmp_path / "f.h5", dtype="float32")
    with pytest.raises(ValueError, match="from a float32 store"):
        PatchStore(p32).read_into(np.array([0]), np.empty((1, *SHAPE), dtype=np.float16))
    # a float32 store under "stored" reads float32; a bad value is refused
    assert PatchDataset(p32, batch_dtype="stored").__getitems__([0, 1]).x.dtype == torch.float32
    with pytest.raises(ValueError, match="batch_dtype='float64'"):
        PatchDataset(p, batch_dtype="float64")


def test_mixed_dtypes_fall_back_to_float32_with_one_line(tmp_path, caplog):
    a, b = _write(tmp_path / "a.h5"), _write(tmp_path / "b.h5", dtype="float32", seed=1)
    with caplog.at_level(logging.INFO, logger="neurokit"):
        ds = PatchDataset([a, b], batch_dtype="stored")
    said = [r.getMessage() for r in caplog.records if "stored-dtype batches" in r.getMessage()]
    assert said == [
        "stored-dtype batches asked for, but the stores hold float16 and float32 samples; batches are read as float32"
    ]
    batch = ds.__getitems__([0, 30, 5])
    assert batch.x.dtype == torch.float32
    np.testing.assert_array_equal(batch.x[0].numpy(), _stored(a)[0].astype(np.float32))
    np.testing.assert_array_equal(batch.x[1].numpy(), _stored(b)[6])


def test_slot_pool_takes_float16_batches_at_their_bytes(tmp_path):
    from neurokit.data import dataset as dsmod
    from neurokit.training.optim import EpochSampler, make_loader

    shape = (4, *SHAPE)
    n16 = int(np.prod(shape)) * 2
    pool = _SlotPool(n16)
    assert pool.take(n16) == 0 and pool.take(n16 * 2) is None  # a float32 batch of that shape does not fit
    # through a worker: float16 batches in slots of float16 bytes, received as float16 over the slot's memory
    p = _write(tmp_path / "h.h5", n=40)
    raw = _stored(p)
    ds = PatchDataset(p, batch_dtype="stored")
    sampler = EpochSampler(40, batch_size=4, seed=3, drop_last=False)
    order = list(sampler)
    in_slot = 0
    for b, (xb, yb) in enumerate(make_loader(ds, sampler, 4, num_workers=1)):
        assert xb.dtype == torch.float16 and yb.tolist() == [k % 2 for k in order[4 * b : 4 * b + 4]]
        np.testing.assert_array_equal(xb.numpy(), raw[order[4 * b : 4 * b + 4]])
        slots = {st.data_ptr(): st.nbytes() for q in dsmod._PEERS.values() for st in q.storages.values()}
        if xb.untyped_storage().data_ptr() in slots:
            in_slot += 1
            assert slots[xb.untyped_storage().data_ptr()] == n16  # a slot of the float16 batch's bytes
    assert in_slot >= 8  # 10 batches, nearly all in a slot
    # the process's own reused buffers: one per dtype, a float16 batch never lent over float32 memory
    a = dsmod._LOCAL.lend(shape, torch.float16)
    c = dsmod._LOCAL.lend(shape)
    assert a.dtype == torch.float16 and c.dtype == torch.float32 and a.numel() == c.numel()


def test_scaled_dataset_keeps_a_stored_batch_in_float16(tmp_path):
    p = _write(tmp_path / "h.h5")
    base = PatchDataset(p)
    stored = PatchDataset(p, batch_dtype="stored")
    scales = {c: 1.7 for c in np.unique([str(s) for s in base.meta("subject")])}
    try:
        a, b = ScaledDataset(base, scales), ScaledDataset(stored, scales)
    except Exception:  # a store without corpus columns: its corpus is the store
        from neurokit.data.corpus import corpus_ids

        scales = {c: 1.7 for c in set(corpus_ids(base))}
        a, b = ScaledDataset(base, scales), ScaledDataset(stored, scales)
    ba, bb = a.__getitems__([4, 9]), b.__getitems__([4, 9])
    # the stored batch stays float16 for the device: the float32 path's values, rounded once to float16
    assert bb.x.dtype == torch.float16 and ba.x.dtype == torch.float32
    torch.testing.assert_close(bb.x, ba.x.half(), rtol=0, atol=0)
    assert not torch.equal(bb.x.float(), ba.x)  # (so the rounding is there: 1.7 is no power of two)
    torch.testing.assert_close(b[4][0], a[4][0].half(), rtol=0, atol=0)
    torch.testing.assert_close(bb.x[0], b[4][0], rtol=0, atol=0)  # batch and item alike
    assert float((bb.x.float() - ba.x).abs().max()) <= float(ba.x.abs().max()) * 2**-11  # half a float16 ulp


def test_a_scaled_stored_batch_beyond_float16_comes_out_in_float32_never_inf(tmp_path):
    from neurokit.data.corpus import corpus_ids

    x = np.ones((6, *SHAPE), dtype=np.float32)
    x[2, 1, 0, 5] = -30000.0  # stored exactly in float16; divided by 0.25 it would be -120000: beyond ±65504
    with PatchStoreWriter(tmp_path / "big.h5", SHAPE, dtype="float16") as w:
        w.append(x, np.zeros(6, dtype=np.int64), subject="S0")
    base, stored = PatchDataset(tmp_path / "big.h5"), PatchDataset(tmp_path / "big.h5", batch_dtype="stored")
    scales = {c: 0.25 for c in set(corpus_ids(base))}
    a, b = ScaledDataset(base, scales), ScaledDataset(stored, scales)
    ok = b.__getitems__([0, 1])  # no large value: float16, as stored
    assert ok.x.dtype == torch.float16 and float(ok.x.max()) == 4.0
    big = b.__getitems__([1, 2])
    assert big.x.dtype == torch.float32 and torch.isfinite(big.x).all()
    torch.testing.assert_close(big.x, a.__getitems__([1, 2]).x, rtol=0, atol=0)
    assert float(big.x[1, 1, 0, 5]) == -120000.0
    item = b[2][0]
    assert item.dtype == torch.float32 and float(item[1, 0, 5]) == -120000.0
    assert b[1][0].dtype == torch.float16
    # the batch holds each sample's item value (float16-rounded where it fits), in float32 throughout
    for j, k in enumerate([1, 2]):
        torch.testing.assert_close(big.x[j], b[k][0].float(), rtol=0, atol=0)
    # items through a transform (a list, not one batch tensor) share one dtype too, so a collate never narrows
    # the float32 one back to float16 (where it would be inf)
    t = ScaledDataset(PatchDataset(tmp_path / "big.h5", batch_dtype="stored", transform=lambda v: v), scales)
    got = t.__getitems__([1, 2])
    assert {x.dtype for x, _ in got} == {torch.float32}
    assert torch.isfinite(torch.utils.data.default_collate(got)[0]).all()


def test_a_pretraining_step_from_stored_float16_equals_the_float32_path(tmp_path):
    from neurokit.training.objectives import get_objective
    from neurokit.training.optim import OptimConfig
    from neurokit.training.trainer import Trainer

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a tiny model: more threads only wait on each other
    try:
        runs = _two_runs(tmp_path, get_objective("cbramod"), OptimConfig, Trainer)
    finally:
        torch.set_num_threads(threads)
    assert len(runs["stored"]) == 3 and np.isfinite(runs["stored"]).all()
    np.testing.assert_allclose(runs["stored"], runs["float32"], rtol=1e-6, atol=0)


def _two_runs(tmp_path, ob, OptimConfig, Trainer) -> dict:
    p = _write(tmp_path / "h.h5")
    torch.manual_seed(0)
    base = ob.build(PatchDataset(p).attrs, SHAPE, {"n_layers": 1})
    runs = {}
    for mode in ("float32", "stored"):
        ds = PatchDataset(p, batch_dtype=mode)
        seen = []

        def loss(m, b, seen=seen):
            seen.append(b.x.dtype)
            return ob.loss(m, b.x, torch.Generator().manual_seed(b.step))[0]

        t = Trainer(
            copy.deepcopy(base),
            ds,
            loss,
            model_name="cbramod",
            optim=OptimConfig(lr=1e-3),
            batch_size=8,
            epochs=1,
            progress=False,
        )
        torch.manual_seed(1)  # dropout draws from the global generator: both runs draw alike
        res = t.fit()
        assert seen == [torch.float32] * 3  # the model always sees float32
        runs[mode] = res.losses
    return runs


def test_pretraining_picks_stored_for_float16_unless_a_host_step_needs_float32(tmp_path, caplog):
    from types import SimpleNamespace

    from neurokit.training.objectives import get_objective
    from neurokit.training.optim import choose_batch_dtype

    ob = get_objective("cbramod")
    h, f = PatchDataset(_write(tmp_path / "h.h5")), PatchDataset(_write(tmp_path / "f.h5", dtype="float32"))
    with caplog.at_level(logging.INFO, logger="neurokit"):
        assert choose_batch_dtype([h], ob) == "stored"
    assert h.batch_dtype == "stored" and h.__getitems__([0]).x.dtype == torch.float16
    assert sum("are cast to float32 there" in r.getMessage() for r in caplog.records) == 1
    assert choose_batch_dtype([f], ob) == "float32" and f.batch_dtype == "float32"
    assert choose_batch_dtype([h, f], ob) == "float32"  # a float32 store among them: float32 batches
    caplog.clear()
    h2 = PatchDataset(tmp_path / "h.h5")
    with caplog.at_level(logging.INFO, logger="neurokit"):
        # an objective pairing windows with stimuli on the host (CLIP) needs float32 there
        assert choose_batch_dtype([h2], SimpleNamespace(pair=object(), modality="eeg")) == "float32"
    assert h2.batch_dtype == "float32"
    assert any("pairs the windows with other data on the host" in r.getMessage() for r in caplog.records)


def test_float16_finiteness_through_its_bits():
    from neurokit.store.patch_store import _finite

    x = np.array([0.0, -0.0, 1.5, -65504.0, 65504.0, 6e-8, np.inf, -np.inf, np.nan], dtype=np.float16)
    np.testing.assert_array_equal(_finite(x), np.isfinite(x))
    np.testing.assert_array_equal(_finite(x.astype(np.float32)), np.isfinite(x))
    every = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)  # every float16 bit pattern
    np.testing.assert_array_equal(_finite(every), np.isfinite(every))
