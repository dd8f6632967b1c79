"""float16 against float32 stores: the pretraining curve (held-out masked loss per epoch, over seeds) and the read
speed with the store out of the page cache (cold) and in it (warm).

Prepares (or reuses) the same EEGMMIDB data under ``--out`` twice, ``dtype="float32"`` and ``dtype="float16"``:

- for pretraining, left/right imagery of S001-S010 on the 21 sensorimotor channels (450 windows of 21 × 4 × 200);
  a 2-layer CBraMod pretrains on S001-S008 for ``--epochs`` epochs (batch 32, CPU, one thread) per seed and
  dtype, holding out S009-S010, and the held-out masked loss of each epoch is printed per dtype as the mean and
  the spread (standard deviation, min-max) over the seeds, with |difference of the means| beside the spread;
- for reading, the 4-class imagery of S001-S010 on all 64 channels (``--read-card-task``; 64 × 4 × 200 windows,
  about 100 MB in float32): each pass first drops the file from the page cache
  (``os.posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED)``, no root needed; pages of a file being written or
  mapped elsewhere may stay), then reads every window: raw h5py (blocks of ``--block`` windows in file order, the
  dtype as stored) and through :class:`~neurokit.data.dataset.PatchDataset` batched reads (``__getitems__``,
  batches of ``--batch`` windows returned as float32, in file order and shuffled; and shuffled with
  ``batch_dtype="stored"``: a float16 store's batches as float16, as stored, with no conversion on the host, as
  pretraining reads them when it casts on the device). The median over ``--passes``
  passes is printed as windows/s, with the float16/float32 ratio (also the median of the per-pass ratios: the two
  dtypes of a pass run back to back). Warm passes (the file just read) follow. ``--read-windows N`` reads stores of
  N windows instead (the prepared windows repeated: passes of seconds, less at the mercy of a loaded machine).

Run it with ``nice -n 5`` on a shared machine. Figures: benchmarks/README.md ("Half-precision stores").

Usage::

    nice -n 5 python benchmarks/store_dtype.py --data-root ../shared/data/eeg --out /tmp/sd [--epochs 4] \\
        [--seeds 0,1,2] [--passes 3] [--read-windows 5000] [--no-pretrain] [--no-read]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np
import torch
from disk import drop_cache

HELD_OUT = ["S009", "S010"]
DTYPES = ("float32", "float16")


def prepare_pair(data_root: Path, out: Path, stem: str, **kw) -> dict[str, Path]:
    """The same data prepared in both dtypes (reused when already there)."""
    from neurokit.pipelines.prepare import prepare_or_reuse

    paths = {}
    for dt in DTYPES:
        t0 = time.perf_counter()
        p, note = prepare_or_reuse(
            "physionet_mi", out / f"{stem}_{dt}.h5", data_root=data_root, progress=False, dtype=dt, **kw
        )
        print(f"{note} ({time.perf_counter() - t0:.1f} s, {p.stat().st_size / 1e6:.1f} MB)", flush=True)
        paths[dt] = p
    return paths


def tiled(paths: dict[str, Path], out: Path, n: int) -> dict[str, Path]:
    """Stores of ``n`` windows in both dtypes: the float32 store's windows repeated in order (the same EEG, a file
    large enough that a pass lasts seconds, so a loaded machine's scheduling jitter averages out)."""
    from neurokit.store.patch_store import PatchStore, PatchStoreWriter

    src = PatchStore(paths["float32"])
    made = {}
    for dt in DTYPES:
        p = out / f"tiled{n}_{dt}.h5"
        if not p.exists():
            with PatchStoreWriter(p, src.sample_shape, dtype=dt, overwrite=True) as w:
                for lo in range(0, n, 256):
                    rows = np.arange(lo, min(n, lo + 256)) % len(src)
                    w.append(src.patches(rows), subject=src.meta["subject"][rows].astype(str).tolist())
        made[dt] = p
        print(f"{p}: {n} windows, {p.stat().st_size / 1e6:.0f} MB", flush=True)
    src.close()
    return made


def pretrain_curve(store: Path, out: Path, epochs: int, seed: int) -> list[float]:
    """Held-out masked loss after each epoch of one pretraining run."""
    from neurokit.pipelines.pretrain import pretrain
    from neurokit.training.config import PretrainConfig

    cfg = PretrainConfig(
        model_kwargs={"n_layers": 2},
        epochs=epochs,
        batch_size=32,
        optim={"lr": 1e-3},
        seed=seed,
        split=None,
        heldout_subjects=HELD_OUT,
        progress=False,
        device="cpu",
    )
    res = pretrain([store], out, cfg, overwrite=True)
    return [float(h["heldout_loss"]) for h in res["heldout_history"]]


def pretraining(paths: dict[str, Path], out: Path, epochs: int, seeds: list[int]) -> dict:
    curves: dict[str, list[list[float]]] = {dt: [] for dt in DTYPES}
    for seed in seeds:
        for dt in DTYPES:
            t0, c0 = time.perf_counter(), time.process_time()
            c = pretrain_curve(paths[dt], out / f"pt_{dt}_s{seed}", epochs, seed)
            curves[dt].append(c)
            print(
                f"{dt} seed {seed}: held-out loss per epoch {', '.join(f'{v:.4f}' for v in c)} "
                f"({time.perf_counter() - t0:.0f} s wall, {time.process_time() - c0:.0f} s CPU)",
                flush=True,
            )
    n = min(len(c) for cs in curves.values() for c in cs)
    arr = {dt: np.array([c[:n] for c in curves[dt]]) for dt in DTYPES}
    print("\n| epoch | float32 mean ± sd (min–max) | float16 mean ± sd (min–max) | abs(Δ mean) | larger sd |")
    print("|---|---|---|---|---|")
    rows = []
    for e in range(n):
        m = {dt: float(arr[dt][:, e].mean()) for dt in DTYPES}
        sd = {dt: float(arr[dt][:, e].std(ddof=1)) if len(seeds) > 1 else 0.0 for dt in DTYPES}
        lo = {dt: float(arr[dt][:, e].min()) for dt in DTYPES}
        hi = {dt: float(arr[dt][:, e].max()) for dt in DTYPES}
        d = abs(m["float16"] - m["float32"])
        rows.append({"epoch": e + 1, "mean": m, "sd": sd, "min": lo, "max": hi, "abs_diff": d})
        cells = " | ".join(f"{m[dt]:.4f} ± {sd[dt]:.4f} ({lo[dt]:.4f}–{hi[dt]:.4f})" for dt in DTYPES)
        print(f"| {e + 1} | {cells} | {d:.4f} | {max(sd.values()):.4f} |")
    worst = max(rows, key=lambda r: r["abs_diff"] / max(max(r["sd"].values()), 1e-12))
    print(
        f"\nmax abs(Δ mean) {max(r['abs_diff'] for r in rows):.4f}; largest seed sd {max(max(r['sd'].values()) for r in rows):.4f}; "
        f"worst epoch {worst['epoch']}: abs(Δ) {worst['abs_diff']:.4f} = "
        f"{worst['abs_diff'] / max(max(worst['sd'].values()), 1e-12):.2f} × its larger sd",
        flush=True,
    )
    return {"curves": curves, "rows": rows}


def raw_read(path: Path, block: int) -> int:
    import h5py

    with h5py.File(path, "r") as f:
        d = f["patches"]
        n = d.shape[0]
        buf = np.empty((block, *d.shape[1:]), dtype=d.dtype)
        for lo in range(0, n, block):
            k = min(block, n - lo)
            d.read_direct(buf, np.s_[lo : lo + k], np.s_[0:k])
    return n


def dataset_read(path: Path, batch: int, shuffle: bool, batch_dtype: str = "float32") -> int:
    from neurokit.data.dataset import PatchDataset

    ds = PatchDataset(path, batch_dtype=batch_dtype)
    order = np.random.default_rng(0).permutation(len(ds)) if shuffle else np.arange(len(ds))
    want = ds.x_dtype
    for lo in range(0, len(ds), batch):
        b = ds.__getitems__(order[lo : lo + batch])
        assert b.x.dtype == want
    for st in ds.stores:
        st.close()
    return len(ds)


def reading(paths: dict[str, Path], passes: int, block: int, batch: int) -> dict:
    ways = {
        "raw h5py, file order": lambda p: raw_read(p, block),
        "PatchDataset batches, file order": lambda p: dataset_read(p, batch, False),
        "PatchDataset batches, shuffled": lambda p: dataset_read(p, batch, True),
        "PatchDataset batches, shuffled, batch_dtype='stored'": lambda p: dataset_read(p, batch, True, "stored"),
    }
    rates: dict = {}
    for fn in ways.values():
        for dt in DTYPES:
            fn(paths[dt])  # warm-up (imports, the store's open-time scan)
    for cold in (True, False):
        for _ in range(passes):  # the dtypes interleaved, pass by pass: both see the machine's load alike
            for name, fn in ways.items():
                for dt in DTYPES:
                    if cold:
                        drop_cache(paths[dt])
                    t0 = time.perf_counter()
                    n = fn(paths[dt])
                    rates.setdefault(("cold" if cold else "warm", name, dt), []).append(n / (time.perf_counter() - t0))
    res = {k: statistics.median(v) for k, v in rates.items()}
    print("\nwindows/s of each pass:")
    for k, v in rates.items():
        print(f"  {' / '.join(k)}: {', '.join(f'{r:,.0f}' for r in v)}")
    print(
        f"\n| read ({passes} passes, median) | float32 windows/s | float16 windows/s | float16/float32 "
        "| per-pass ratios: median (min–max) |"
    )
    print("|---|---|---|---|---|")
    for cold in ("cold", "warm"):
        for name in ways:
            a, b = res[(cold, name, "float32")], res[(cold, name, "float16")]
            # the two dtypes of one pass ran back to back: their ratio is less at the mercy of the machine's load
            r = [y / x for x, y in zip(rates[(cold, name, "float32")], rates[(cold, name, "float16")])]
            print(
                f"| {cold}: {name} | {a:,.0f} | {b:,.0f} | {b / a:.2f}× "
                f"| {statistics.median(r):.2f}× ({min(r):.2f}–{max(r):.2f}) |"
            )
    return {" / ".join(k): v for k, v in res.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-root", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--block", type=int, default=64, help="windows per raw h5py read")
    ap.add_argument("--batch", type=int, default=64, help="windows per PatchDataset batch")
    ap.add_argument("--read-subjects", default="1-10")
    ap.add_argument(
        "--read-windows", type=int, default=0, help="read stores of this many windows (the prepared ones tiled)"
    )
    ap.add_argument("--no-pretrain", action="store_true")
    ap.add_argument("--no-read", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(1)
    from neurokit.cards.ranges import parse_subject_selection

    args.out.mkdir(parents=True, exist_ok=True)
    result: dict = {}
    if not args.no_pretrain:
        paths = prepare_pair(
            args.data_root,
            args.out,
            "lr21",
            task="left_right_imagery",
            channels="sensorimotor",
            subjects=list(range(1, 11)),
        )
        result["pretraining"] = pretraining(paths, args.out, args.epochs, [int(s) for s in args.seeds.split(",")])
    if not args.no_read:
        paths = prepare_pair(
            args.data_root,
            args.out,
            "mi64",
            task="motor_imagery_4class",
            subjects=parse_subject_selection(args.read_subjects),
        )
        if args.read_windows:
            paths = tiled(paths, args.out, args.read_windows)
        result["reading"] = reading(paths, args.passes, args.block, args.batch)
    (args.out / "store_dtype.json").write_text(json.dumps(result, indent=1, default=str))


if __name__ == "__main__":
    main()
