"""Store read throughput: windows/s and MB/s through the training loader (``PatchDataset`` + ``EpochSampler`` +
``make_loader``) against the raw reads of the same file, measured in the same run, in the page cache or cold.

Two raw reads, over as many windows (bytes) as the loader reads:

* **raw**: numpy from the HDF5 ``patches`` dataset in contiguous blocks of 64 windows (``Dataset.read_direct``
  into one reused buffer: no DataLoader, no tensor, no per-window Python);
* **file**: the store file's bytes read in order, 8 MiB at a time (``os.preadv`` into one buffer): what the disk
  (or the page cache) gives at best, with no HDF5 in the way.

Each loader pass reads ``--max-windows`` windows (default: the whole store) in batches of ``--batch-size``; in the
page cache its clock starts when the first batch arrives (worker start-up is not counted); cold, when the loader is
made (worker start-up counted: the loader starts its reads while the workers start). Raw, file and loader passes are
interleaved, and each figure is the median of ``--repeats`` passes. ``--cold`` drops the store file from the page
cache before every pass (``posix_fadvise(POSIX_FADV_DONTNEED)`` after an ``fsync``: no root needed), so each pass
reads from the disk; without it the file is read once first and every pass reads from the page cache.

A virtual machine's disk is often the host's memory, so "cold" passes run at memory speed on some passes and at
the device's on others. ``--disk MBPS[:IOPS]`` (root; ``disk.py``) puts the whole run on a disk of known speed,
through the kernel's block-IO throttle (cgroup ``blkio``/``io.max``), workers included: ``--disk 400`` a SATA SSD,
``--disk 150:150`` a hard disk (150 MB/s, 150 reads/s), ``--disk 2000:20000`` a cloud NVMe volume. It implies
``--cold``.

``--shuffle`` reads in the training loader's shuffled orders: ``random`` (every window anywhere) and ``block``
(contiguous blocks of ``--block`` windows in a random order, through a shuffle buffer of ``--buffer`` windows;
:class:`~neurokit.training.optim.EpochSampler`); ``--order`` picks one (default: both, the last line ``block``).
For each order it prints how random it is: the mean distance between successive windows (in windows, over the
rank's whole epoch) and the distinct recordings (subject, session, run) in a batch (mean).

Without ``--store`` a synthetic EEG store of ``--channels`` × ``--window-s`` patches × 200 samples (one window
per chunk, as ``prepare`` writes it; recordings of 20 windows) is written to a temporary folder; ``--dtype float16``
writes it in half precision (a writer that takes ``dtype=``), ``--compare-dtypes`` writes both and prints both cold
figures and their ratio. ``--store`` takes a store file or a shard set's folder.

The last line is ``N windows/s (R× raw)`` of the last configuration (the line before it gives its ratio to the
file read).

Usage::

    python benchmarks/loader.py --window-s 30 --channels 19 --workers 2 --shuffle           # page cache
    python benchmarks/loader.py --window-s 30 --channels 19 --workers 2 --shuffle --cold    # from the disk
    python benchmarks/loader.py --table            # 4-s and 30-s windows × 0/1/2 workers × sequential/shuffled
    python benchmarks/loader.py --table --per-sample   # the same through the per-window path (no __getitems__)
    python benchmarks/loader.py --store runs/mi.h5 --workers 2 --shuffle --cold
    python benchmarks/loader.py --workers 2 --shuffle --compare-dtypes     # cold float16 vs float32
    sudo python benchmarks/loader.py --workers 2 --shuffle --disk 150:150 --windows 2000   # on a hard disk's speed
"""

from __future__ import annotations

import argparse
import inspect
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from disk import drop_cache, parse_disk, prime, throttled

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's neurokit, not an installed one

#: windows per synthetic recording (10 min of 30-s windows)
RECORDING = 20


def writer_takes_dtype() -> bool:
    """Whether this checkout's ``PatchStoreWriter`` takes ``dtype=`` (half-precision stores)."""
    from neurokit.store.patch_store import PatchStoreWriter

    return "dtype" in inspect.signature(PatchStoreWriter).parameters


def make_store(path: Path, n: int, C: int, N: int, dtype: str = "float32") -> Path:
    """A synthetic EEG store of ``n`` windows ``(C, N, 200)``, written by neurokit's writer (``dtype=`` passed only
    when it is not float32, so a writer without it still writes the float32 store), then flushed to disk."""
    from neurokit.store.patch_store import PatchStoreWriter

    kw = {} if dtype == "float32" else {"dtype": dtype}
    if kw and not writer_takes_dtype():
        raise SystemExit(
            f"--dtype {dtype}: this checkout's PatchStoreWriter takes no dtype= (no half-precision stores)"
        )
    rng = np.random.default_rng(0)
    with PatchStoreWriter(path, (C, N, 200), attrs={"modality": "eeg"}, **kw) as w:
        step = RECORDING * max(1, (64 << 20) // (C * N * 200 * 4 * RECORDING))
        for lo in range(0, n, step):
            k = min(step, n - lo)
            runs = [str((lo + i) // RECORDING) for i in range(k)]
            w.append(rng.standard_normal((k, C, N, 200), dtype=np.float32), np.arange(k) % 4, subject="1", run=runs)
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)  # dirty pages stay in the page cache whatever posix_fadvise says
    finally:
        os.close(fd)
    return path


class PerSample(torch.utils.data.Dataset):
    """``ds`` without ``__getitems__``: the DataLoader reads it one window at a time (the path before batching)."""

    def __init__(self, ds) -> None:
        self.ds = ds

    def __len__(self) -> int:
        return len(self.ds)

    def __getitem__(self, k: int):
        return self.ds[k]


def takes_order() -> bool:
    """Whether this checkout's ``EpochSampler`` has read orders (``order=``)."""
    from neurokit.training.optim import EpochSampler

    return "order" in inspect.signature(EpochSampler).parameters


def sampler(n: int, order: str | None, a, rank: int = 0, world: int = 1):
    """The training loader's sampler for one epoch: sequential (``order`` None), ``random`` or ``block``."""
    from neurokit.training.optim import EpochSampler

    kw = {} if order in (None, "random") or not takes_order() else {"order": order, "block": a.block}
    if kw and a.buffer is not None:
        kw["buffer"] = a.buffer
    return EpochSampler(
        n, batch_size=a.batch_size, seed=0, shuffle=order is not None, rank=rank, world_size=world, **kw
    )


def randomness(ds, order: str | None, a) -> tuple[float, float]:
    """Mean distance between successive windows of the order (in windows) and mean distinct recordings a batch."""
    idx = np.asarray(list(sampler(len(ds), order, a)), dtype=np.int64)
    rec = np.unique(np.stack([ds.meta(c).astype(str) for c in ("subject", "session", "run")], axis=1), axis=0,
                    return_inverse=True)[1].reshape(-1)  # fmt: skip
    nb = len(idx) // a.batch_size
    per_batch = [len(np.unique(rec[idx[b * a.batch_size : (b + 1) * a.batch_size]])) for b in range(nb)]
    return float(np.abs(np.diff(idx)).mean()), float(np.mean(per_batch))


def loader_rate(ds, order: str | None, workers: int, a, max_windows: int) -> tuple[float, float]:
    """Windows/s of one pass of the training loader over ``ds`` and windows per CPU-second of its processes (main
    and workers). In the page cache both count from the first batch on (worker start-up and the first batch are not
    counted); cold (``a.cold``), the wall clock starts before the loader does, worker start-up included, since the
    loader asks the disk for its first blocks while its workers start (from the first batch, those reads would be
    left out of the time and the rate would pass the disk's)."""
    from neurokit.training.optim import make_loader

    dl = make_loader(ds, sampler(len(ds), order, a), a.batch_size, workers)
    n, t, c = 0, time.perf_counter(), 0.0
    last = min(len(dl), -(-max_windows // a.batch_size)) - 1  # the clocks stop here, before the workers exit
    it = iter(dl)
    pids = [w.pid for w in getattr(it, "_workers", [])]
    for i, (x, _) in enumerate(it):
        if i == 0 and not a.cold:
            t, c = time.perf_counter(), cpu_seconds(pids)
        elif i == 0:
            c, n = cpu_seconds(pids), len(x)
        else:
            n += len(x)
        if i >= last:
            break
    wall, cpu = time.perf_counter() - t, cpu_seconds(pids) - c
    getattr(it, "_shutdown_workers", lambda: None)()
    return n / wall, n / max(cpu, 1e-9)


def cpu_seconds(pids: list[int] = []) -> float:  # noqa: B006 (read only)
    """CPU seconds (user + system) of this process and of the running processes ``pids`` (``/proc``)."""
    t = os.times()
    total = t.user + t.system
    tick = os.sysconf("SC_CLK_TCK")
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime
        except (OSError, IndexError, ValueError):
            pass
    return total


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


def file_rate(paths: list[Path], n_windows: int, window_bytes: int, piece: int = 8 << 20) -> float:
    """Windows/s of reading the store files' bytes in order (``n_windows × window_bytes`` of them, or the whole
    files when smaller), ``piece`` bytes a call."""
    buf = bytearray(piece)
    mv = memoryview(buf)
    want = n_windows * window_bytes
    left, t = want, time.perf_counter()
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        try:
            off = 0
            while left > 0:
                k = os.preadv(fd, [mv[: min(piece, left)]], off)
                if k <= 0:
                    break
                off, left = off + k, left - k
        finally:
            os.close(fd)
        if left <= 0:
            break
    return (want - max(left, 0)) / window_bytes / (time.perf_counter() - t)


def measure(store, configs, a) -> dict:
    """Median windows/s of the raw reads and of each ``(order, workers)`` configuration, interleaved."""
    from neurokit.data.dataset import PatchDataset

    ds = PatchDataset(store)
    paths = [Path(st.path) for st in ds.stores]
    n = min(len(ds), a.max_windows or len(ds))
    src = PerSample(ds) if a.per_sample else ds
    itemsize = _itemsize(paths[0])
    wbytes = itemsize * int(np.prod(ds.sample_shape))
    rates: dict = {"raw": [], "file": [], **{c: [] for c in configs}}
    cpu: dict = {k: [] for k in rates}  # windows per CPU-second (all processes of the pass)
    if not a.cold:
        file_rate(paths, len(ds), wbytes)  # into the page cache
    for _ in range(a.repeats):
        for key in rates:
            if a.cold:
                drop_cache(paths)
                prime()  # a throttled disk (--disk) in its steady state when the pass starts
            c0 = cpu_seconds()
            if key == "raw":
                rates[key].append(raw_rate(paths, n))
            elif key == "file":
                rates[key].append(file_rate(paths, n, wbytes))
            else:
                wall, per_cpu = loader_rate(src, key[0], key[1], a, n)
                rates[key].append(wall)
                cpu[key].append(per_cpu)
                continue
            cpu[key].append(n / max(cpu_seconds() - c0, 1e-9))
    rand = {c[0]: randomness(ds, c[0], a) for c in configs if c[0] is not None}
    return {
        "med": {k: statistics.median(v) for k, v in rates.items()},
        "cpu": {k: statistics.median(v) for k, v in cpu.items()},
        "all": rates,
        "mb": wbytes / 1e6,
        "dtype": f"float{8 * itemsize}",
        "shape": ds.sample_shape,
        "n": n,
        "random": rand,
    }


def _itemsize(path: Path) -> int:
    import h5py

    with h5py.File(path, "r") as f:
        return int(f["patches"].dtype.itemsize) if "patches" in f else 4


def report(res: dict, label: str, cold: bool) -> None:
    med, mb = res["med"], res["mb"]
    raw, fil = med["raw"], med["file"]
    where = "cold (page cache dropped before each pass)" if cold else "page cache"
    print(
        f"{label}, {where}: windows {tuple(res['shape'])} {res['dtype']} ({mb:.3f} MB), {res['n']} per pass, "
        f"median of {len(res['all']['raw'])}; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    cpu = res.get("cpu") or {}
    print(f"  raw h5py read, contiguous blocks       {raw:9.0f} windows/s {raw * mb:8.0f} MB/s")
    print(f"  file read in order, 8 MiB pieces       {fil:9.0f} windows/s {fil * mb:8.0f} MB/s  {fil / raw:5.2f}x raw")
    if cpu and not cold:
        per = ", ".join(f"{_name(k)} {v:.0f}" for k, v in cpu.items())
        print(f"  windows per CPU-second (main process and workers, from the first batch): {per}")
    for c, r in med.items():
        if c in ("raw", "file"):
            continue
        passes = ", ".join(f"{v:.0f}" for v in res["all"][c])
        name = "sequential" if c[0] is None else f"{c[0]:<10}"
        print(
            f"  {name} workers={c[1]}               {r:9.0f} windows/s "
            f"{r * mb:8.0f} MB/s  {r / raw:5.2f}x raw {r / fil:5.2f}x file  ({passes})"
        )
    ws = sorted({c[1] for c in med if not isinstance(c, str)})
    if len(ws) > 1:
        for o in dict.fromkeys(c[0] for c in med if not isinstance(c, str)):
            hi, lo = (o, ws[-1]), (o, ws[0])
            extra = f", per CPU-second {cpu[hi] / cpu[lo]:.2f}×" if cpu and not cold else ""
            print(f"  {o or 'sequential'}: workers={ws[-1]} / workers={ws[0]} = {med[hi] / med[lo]:.2f}×{extra}")
    for order, (dist, recs) in res["random"].items():
        print(f"  {order} order: successive windows {dist:.0f} windows apart on average, {recs:.1f} recordings a batch")


def _name(key) -> str:
    return key if isinstance(key, str) else f"{key[0] or 'sequential'} workers={key[1]}"


def final_line(res: dict, config) -> str:
    """Two lines: the last configuration against the file read, then ``N windows/s (R× raw)``."""
    r = res["med"][config]
    return (
        f"{_name(config)}: {r / res['med']['file']:.2f}× the file read\n"
        f"{r:.0f} windows/s ({r / res['med']['raw']:.2f}× raw)"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--store", type=Path, help="a store file or shard set folder (default: a synthetic store)")
    ap.add_argument("--window-s", type=int, default=30, help="synthetic store: 1-s patches per window")
    ap.add_argument("--channels", type=int, default=19)
    ap.add_argument("--windows", type=int, help="synthetic store: windows (default: about 400 MB of float32)")
    ap.add_argument("--dtype", choices=("float32", "float16"), default="float32", help="synthetic store's values")
    ap.add_argument("--compare-dtypes", action="store_true", help="cold float32 and float16 stores, and their ratio")
    ap.add_argument("--workers", type=int, nargs="+", default=[0], help="worker counts (several: each measured)")
    ap.add_argument("--shuffle", action="store_true")
    ap.add_argument("--order", choices=("random", "block", "both"), default="both", help="shuffled order(s)")
    ap.add_argument("--block", type=int, default=64, help="block order: windows per block")
    ap.add_argument("--buffer", type=int, default=None, help="block order: shuffle buffer (default 8 blocks)")
    ap.add_argument("--cold", action="store_true", help="drop the store from the page cache before every pass")
    ap.add_argument(
        "--disk",
        metavar="MBPS[:IOPS]",
        help="cold reads from a disk of this speed (the kernel's block-IO throttle, root only; implies --cold)",
    )
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--max-windows", type=int, default=0, help="windows per pass (default: all)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--table", action="store_true", help="4-s and 30-s windows x 0/1/2 workers x sequential/shuffled")
    ap.add_argument("--per-sample", action="store_true", help="read window by window (no __getitems__)")
    a = ap.parse_args()
    torch.set_num_threads(1)
    if a.disk:
        a.cold = True
        bps, iops = parse_disk(a.disk)
        where = a.store if a.store is not None else Path(tempfile.gettempdir())
        with throttled(where, bps, iops) as said:
            print(said)
            run(a)
    else:
        run(a)


def run(a) -> None:
    """Every measurement the arguments ask for, its report and the final line."""
    orders = ["random", "block"] if a.order == "both" else [a.order]
    if not takes_order():
        orders = ["random"]  # a tree before read orders
    shuffled = orders if a.shuffle or a.table else []
    if a.table:
        configs = [(o, w) for w in (0, 1, 2) for o in (None, *shuffled)]
    else:
        configs = [(o, w) for w in a.workers for o in (shuffled or [None])]
    if a.compare_dtypes:
        compare_dtypes(configs, a)
        return
    if a.store is not None:
        res = measure(a.store, configs, a)
        report(res, str(a.store), a.cold)
        print(final_line(res, configs[-1]))
        return
    with tempfile.TemporaryDirectory() as tmp:
        line = ""
        for window_s in (4, 30) if a.table else (a.window_s,):
            store = make_store(Path(tmp) / f"w{window_s}.h5", _windows(a, window_s), a.channels, window_s, a.dtype)
            res = measure(store, configs, a)
            report(res, f"synthetic store, {window_s}-s windows", a.cold)
            line = final_line(res, configs[-1])
            store.unlink()
        print(line)


def _windows(a, window_s: int) -> int:
    return a.windows or max(64, (400 << 20) // (a.channels * window_s * 200 * 4))


def compare_dtypes(configs, a) -> None:
    """Cold reads of the same synthetic windows stored as float32 and as float16, passes of the two interleaved,
    and the ratio of their rates."""
    import argparse as _argparse

    if not writer_takes_dtype():
        raise SystemExit(
            "--compare-dtypes: this checkout's PatchStoreWriter takes no dtype= (half-precision stores are not "
            "in this tree)"
        )
    a.cold = True
    one = _argparse.Namespace(**{**vars(a), "repeats": 1})
    dtypes = ("float32", "float16")
    with tempfile.TemporaryDirectory() as tmp:
        n = _windows(a, a.window_s)
        stores = {dt: make_store(Path(tmp) / f"{dt}.h5", n, a.channels, a.window_s, dt) for dt in dtypes}
        runs: dict = {dt: [] for dt in dtypes}
        for _ in range(a.repeats):
            for dt in dtypes:
                runs[dt].append(measure(stores[dt], configs, one))
        res = {}
        for dt in dtypes:
            r = dict(runs[dt][0])
            r["all"] = {k: [v for run in runs[dt] for v in run["all"][k]] for k in r["all"]}
            r["med"] = {k: statistics.median(v) for k, v in r["all"].items()}
            res[dt] = r
            report(r, f"synthetic store, {a.window_s}-s windows", True)
        c = configs[-1]
        r32, r16 = res["float32"]["med"][c], res["float16"]["med"][c]
        f32, f16 = res["float32"]["med"]["file"], res["float16"]["med"]["file"]
        print(
            f"float16 / float32, cold, {c[0] or 'sequential'} workers={c[1]}: {r16:.0f} / {r32:.0f} windows/s = "
            f"{r16 / r32:.2f}× (file read {f16 / f32:.2f}×)"
        )
        print(final_line(res["float16"], c))


if __name__ == "__main__":
    from neurokit._utils.errors import NeurokitError

    try:
        main()
    except NeurokitError as e:  # a store that is not there or not a store: its message, not a traceback
        raise SystemExit(f"error: {e}") from None
