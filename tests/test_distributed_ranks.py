"""Two CPU processes under torch.distributed (gloo), as torchrun starts them: the Trainer's ranks read disjoint
windows that together are the one-process epoch's, in both read orders; under the block order each rank reads its
own shard; a rank resumed part-way through an epoch reads the rest of its part."""

from __future__ import annotations

import json

import numpy as np
import torch
import torch.distributed as tdist

from neurokit.data.dataset import PatchDataset
from neurokit.store.patch_store import PatchStoreWriter
from neurokit.training.distributed import DistInfo
from neurokit.training.optim import OptimConfig
from neurokit.training.trainer import Trainer

SHAPE = (2, 1, 200)
N_SHARD = 24  # windows per shard; 2 shards, batch 4, 2 ranks: 6 batches per rank and epoch


def _write(folder):
    paths = []
    for s in range(2):
        x = np.zeros((N_SHARD, *SHAPE), dtype=np.float32)
        x[:, 0, 0, 0] = np.arange(s * N_SHARD, (s + 1) * N_SHARD)  # the window's number across the shards
        p = folder / f"shard{s}.h5"
        with PatchStoreWriter(p, SHAPE, attrs={"modality": "eeg"}) as w:
            w.append(x, np.zeros(N_SHARD, dtype=np.int64), subject=str(s))
        paths.append(p)
    return paths


def _seen(paths, info: DistInfo, order: str) -> dict:
    """The window numbers of each batch of epochs 0 and 1, and of epoch 1 resumed after 2 steps."""
    trainer = Trainer(
        torch.nn.Linear(1, 1),
        PatchDataset(paths),
        loss=lambda m, b: torch.zeros(()),
        model_name="cbramod",
        optim=OptimConfig(),
        batch_size=4,
        epochs=2,
        seed=7,
        info=info,
        progress=False,
        read_order=order,
    )

    def ids(epoch, start=0):
        return [x[:, 0, 0, 0].long().tolist() for _, x, _ in trainer.batches(epoch, start)]

    return {"0": ids(0), "1": ids(1), "1@2": ids(1, 2)}


def _rank(rank: int, folder: str, paths: list) -> None:
    tdist.init_process_group("gloo", init_method=f"file://{folder}/rendezvous", rank=rank, world_size=2)
    try:
        info = DistInfo(rank=rank, world_size=2)
        out = {order: _seen(paths, info, order) for order in ("random", "block")}
        with open(f"{folder}/rank{rank}.json", "w") as f:
            json.dump(out, f)
    finally:
        tdist.destroy_process_group()


def test_two_gloo_ranks_read_disjoint_windows_that_make_up_the_epoch(tmp_path):
    paths = _write(tmp_path)
    # one process, the same seed (first: the forked ranks then find every module it imports already loaded)
    one = {order: _seen(paths, DistInfo(), order) for order in ("random", "block")}
    torch.multiprocessing.start_processes(_rank, args=(str(tmp_path), paths), nprocs=2, join=True, start_method="fork")
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]
    for order in ("random", "block"):
        for epoch in ("0", "1"):
            per_rank = [sum(r[order][epoch], []) for r in ranks]
            assert [len(b) for b in ranks[0][order][epoch]] == [4] * 6 == [len(b) for b in ranks[1][order][epoch]]
            both = per_rank[0] + per_rank[1]
            assert len(set(both)) == len(both) == 48, (order, epoch)  # no window twice
            assert set(both) == set(sum(one[order][epoch], [])) == set(range(48))  # the one-process epoch's windows
            if order == "block":  # blocks of 64 hold the whole store: each rank's contiguous part is one shard
                s0, s1 = ({i // N_SHARD for i in p} for p in per_rank)
                assert len(s0) == len(s1) == 1 and s0 != s1
        assert ranks[0][order]["0"] != ranks[0][order]["1"]  # each epoch its own order
        for r in ranks:
            assert r[order]["1@2"] == r[order]["1"][2:]  # resumed: the rest of the rank's epoch, in order
