"""Data loading against model consumption: samples/s through the DataLoader from a patch store.

A synthetic EEG store (``--samples`` samples of ``(C, N, 200)``, lzf, one sample per chunk, as ``prepare``
writes) is read through :class:`~neurokit.data.dataset.PatchDataset` and ``torch.utils.data.DataLoader``
(batch 16) sequentially and in random order, with 0 and 2 worker processes and 1 or 2 torch threads in
the main process; beside it, the samples/s of one CBraMod training step (12 layers, B = 16) on the same
shapes. Each figure is the median of ``--repeats`` interleaved passes.

Usage::

    python benchmarks/loader.py [--samples 2000] [--channels 64] [--patches 4]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import torch


def make_store(path: Path, n: int, C: int, N: int) -> Path:
    from neurokit.io.store import PatchStoreWriter

    rng = np.random.default_rng(0)
    with PatchStoreWriter(path, (C, N, 200), attrs={"modality": "eeg"}) as w:
        for lo in range(0, n, 256):
            k = min(256, n - lo)
            w.append(rng.standard_normal((k, C, N, 200), dtype=np.float32), np.zeros(k, dtype=np.int64), subject="1")
    return path


def read_rate(path: Path, shuffle: bool, workers: int, threads: int, max_batches: int) -> float:
    from neurokit.data.dataset import PatchDataset

    torch.set_num_threads(threads)
    ds = PatchDataset(path)
    g = torch.Generator().manual_seed(0)
    dl = torch.utils.data.DataLoader(ds, batch_size=16, shuffle=shuffle, generator=g, num_workers=workers)
    t, n = time.perf_counter(), 0
    for i, (x, _) in enumerate(dl):
        n += len(x)
        if i + 1 >= max_batches:
            break
    return n / (time.perf_counter() - t)


def model_rate(C: int, N: int, layers: int) -> float:
    from neurokit.models import CBraMod
    from neurokit.training.objectives import masked_patch_loss

    torch.set_num_threads(2)
    m = CBraMod(n_layers=layers).train()
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4)
    x = torch.randn(16, C, N, 200)
    g = torch.Generator().manual_seed(0)
    ts = []
    for _ in range(3):
        t = time.perf_counter()
        loss, _ = masked_patch_loss(m, x, g)
        opt.zero_grad()
        loss.backward()
        opt.step()
        ts.append(time.perf_counter() - t)
    return 16 / statistics.median(ts[1:])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=2000)
    ap.add_argument("--channels", type=int, default=64)
    ap.add_argument("--patches", type=int, default=4)
    ap.add_argument("--batches", type=int, default=60)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    configs = [(s, w, t) for s in (False, True) for w, t in ((0, 1), (0, 2), (2, 1), (2, 2))]
    with tempfile.TemporaryDirectory() as tmp:
        store = make_store(Path(tmp) / "s.h5", a.samples, a.channels, a.patches)
        rates = {c: [] for c in configs}
        for _ in range(a.repeats):
            for c in configs:
                rates[c].append(read_rate(store, *c, a.batches))
        med = {c: statistics.median(r) for c, r in rates.items()}
        for (shuffle, w, t), r in med.items():
            print(f"read {'random    ' if shuffle else 'sequential'} workers={w} main threads={t}: {r:8.0f} samples/s")
        for w, t in ((0, 1), (2, 1)):
            print(f"random / sequential (workers={w}, threads={t}): {med[(True, w, t)] / med[(False, w, t)]:.2f}")
        consume = model_rate(a.channels, a.patches, a.layers)
        print(
            f"model consumption (CBraMod {a.layers} layers, train step, B=16, C={a.channels}, N={a.patches}): "
            f"{consume:.1f} samples/s | slowest read / consumption: {min(med.values()) / consume:.0f}x"
        )


if __name__ == "__main__":
    main()
