"""Store read throughput: windows/s and MB/s through ``PatchDataset`` + ``DataLoader`` against the raw read
of the same bytes, measured in the same run.

The raw read is numpy from the HDF5 ``patches`` dataset in contiguous blocks of 64 windows
(``Dataset.read_direct`` into one reused buffer: no DataLoader, no tensor, no per-window Python), over as
many windows as the loader reads. Each loader pass reads ``--max-windows`` windows (default: the whole store)
in batches of ``--batch-size``; its clock starts when the first batch arrives (worker start-up is not
counted). Raw and loader passes are interleaved, and each figure is the median of ``--repeats`` passes.

Without ``--store`` a synthetic EEG store of ``--channels`` × ``--window-s`` patches × 200 samples (float32,
one window per chunk, as ``prepare`` writes it) is written to a temporary folder; ``--store`` takes a store
file or a shard set's folder (opened through :class:`~neurokit.data.dataset.PatchDataset`).

Usage::

    python benchmarks/loader.py --window-s 30 --channels 19 --workers 2 --shuffle   # ends with "N windows/s"
    python benchmarks/loader.py --table            # 4-s and 30-s windows × 0/1/2 workers × sequential/shuffled
    python benchmarks/loader.py --table --per-sample   # the same through the per-window path (no __getitems__)
    python benchmarks/loader.py --store runs/mi.h5 --workers 2 --shuffle
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's neurokit, not an installed one


def make_store(path: Path, n: int, C: int, N: int) -> Path:
    """A synthetic EEG store of ``n`` windows ``(C, N, 200)``, written by neurokit's writer."""
    from neurokit.store.patch_store import PatchStoreWriter

    rng = np.random.default_rng(0)
    with PatchStoreWriter(path, (C, N, 200), attrs={"modality": "eeg"}) as w:
        step = max(1, (64 << 20) // (C * N * 200 * 4))
        for lo in range(0, n, step):
            k = min(step, n - lo)
            w.append(rng.standard_normal((k, C, N, 200), dtype=np.float32), np.arange(k) % 4, subject="1")
    return path


class PerSample(torch.utils.data.Dataset):
    """``ds`` without ``__getitems__``: the DataLoader reads it one window at a time (the path before batching)."""

    def __init__(self, ds) -> None:
        self.ds = ds

    def __len__(self) -> int:
        return len(self.ds)

    def __getitem__(self, k: int):
        return self.ds[k]


def _collate():
    try:
        from neurokit.data.dataset import collate_patches
    except ImportError:  # a tree before batched reads
        return None
    return collate_patches


def loader_rate(ds, shuffle: bool, workers: int, batch_size: int, max_windows: int) -> float:
    """Windows/s of one pass of a DataLoader over ``ds`` (clock from the first batch)."""
    g = torch.Generator().manual_seed(0)
    dl = torch.utils.data.DataLoader(
        ds,
        batch_size=batch_size,
        shuffle=shuffle,
        generator=g,
        num_workers=workers,
        collate_fn=_collate(),
        multiprocessing_context="fork" if workers else None,
    )
    n, t = 0, 0.0
    for i, (x, _) in enumerate(dl):
        if i == 0:
            t = time.perf_counter()
        else:
            n += len(x)
        if (i + 1) * batch_size >= max_windows:
            break
    return n / (time.perf_counter() - t)


def raw_rate(paths: list[Path], n_windows: int, block: int = 64) -> float:
    """Windows/s of reading ``n_windows`` windows from the stores' ``patches`` datasets in contiguous blocks."""
    import h5py

    left, t = n_windows, time.perf_counter()
    for p in paths:
        with h5py.File(p, "r") as f:
            d = f["patches"]
            buf = np.empty((block, *d.shape[1:]), dtype=d.dtype)
            for lo in range(0, d.shape[0], block):
                k = min(block, d.shape[0] - lo, left)
                d.read_direct(buf, np.s_[lo : lo + k], np.s_[0:k])
                left -= k
                if left <= 0:
                    break
        if left <= 0:
            break
    return (n_windows - max(left, 0)) / (time.perf_counter() - t)


def measure(store, configs, a) -> dict:
    """Median windows/s of the raw read and of each ``(shuffle, workers)`` configuration, interleaved."""
    from neurokit.data.dataset import PatchDataset

    ds = PatchDataset(store)
    paths = [Path(st.path) for st in ds.stores]
    n = min(len(ds), a.max_windows or len(ds))
    src = PerSample(ds) if a.per_sample else ds
    rates: dict = {"raw": [], **{c: [] for c in configs}}
    for _ in range(a.repeats):
        rates["raw"].append(raw_rate(paths, n))
        for c in configs:
            rates[c].append(loader_rate(src, c[0], c[1], a.batch_size, n))
    return {
        "med": {k: statistics.median(v) for k, v in rates.items()},
        "all": rates,
        "mb": 4 * int(np.prod(ds.sample_shape)) / 1e6,
        "shape": ds.sample_shape,
        "n": n,
    }


def report(res: dict, label: str) -> None:
    med, mb = res["med"], res["mb"]
    raw = med["raw"]
    print(
        f"{label}: windows {tuple(res['shape'])} ({mb:.3f} MB), {res['n']} per pass, median of {len(res['all']['raw'])}"
    )
    print(f"  raw h5py read, contiguous blocks      {raw:9.0f} windows/s {raw * mb:8.0f} MB/s")
    for c, r in med.items():
        if c == "raw":
            continue
        passes = ", ".join(f"{v:.0f}" for v in res["all"][c])
        print(
            f"  {'shuffled  ' if c[0] else 'sequential'} workers={c[1]}              {r:9.0f} windows/s "
            f"{r * mb:8.0f} MB/s  {r / raw:5.2f}x raw  ({passes})"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--store", type=Path, help="a store file or shard set folder (default: a synthetic store)")
    ap.add_argument("--window-s", type=int, default=30, help="synthetic store: 1-s patches per window")
    ap.add_argument("--channels", type=int, default=19)
    ap.add_argument("--windows", type=int, help="synthetic store: windows (default: about 400 MB)")
    ap.add_argument("--workers", type=int, default=0)
    ap.add_argument("--shuffle", action="store_true")
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--max-windows", type=int, default=0, help="windows per pass (default: all)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--table", action="store_true", help="4-s and 30-s windows x 0/1/2 workers x sequential/shuffled")
    ap.add_argument("--per-sample", action="store_true", help="read window by window (no __getitems__)")
    a = ap.parse_args()
    torch.set_num_threads(1)
    configs = [(s, w) for w in (0, 1, 2) for s in (False, True)] if a.table else [(a.shuffle, a.workers)]
    if a.store is not None:
        res = measure(a.store, configs, a)
        report(res, str(a.store))
        print(f"{res['med'][configs[-1]]:.0f} windows/s")
        return
    with tempfile.TemporaryDirectory() as tmp:
        last = 0.0
        for window_s in (4, 30) if a.table else (a.window_s,):
            per = a.channels * window_s * 200 * 4
            n = a.windows or max(64, (400 << 20) // per)
            store = make_store(Path(tmp) / f"w{window_s}.h5", n, a.channels, window_s)
            res = measure(store, configs, a)
            report(res, f"synthetic store, {window_s}-s windows")
            last = res["med"][configs[-1]]
            store.unlink()
        print(f"{last:.0f} windows/s")


if __name__ == "__main__":
    main()
