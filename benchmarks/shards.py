"""Shard sets of growing size: the cost of writing one, opening it, reading its subjects and one random window.

Writes synthetic shard sets of 250 / 1,000 / 4,000 tiny shards (3 windows of 2 channels each, one recording per
shard, four recordings per subject) through :class:`~neurokit.store.shards.ShardSetWriter` (not ``prepare``), with
the corpus-wide ``subject_files`` attribute ``prepare`` gives a set (one entry per recording). Each phase runs in
a fresh subprocess, which reports its CPU time, wall time and peak resident memory above the interpreter with
neurokit imported (``ru_maxrss``):

* ``write``: every shard, then ``close``;
* ``open``: :class:`~neurokit.data.dataset.PatchDataset` over the folder (what ``neuro pretrain`` opens first);
* ``subjects``: ``open`` plus every window's subject (pretraining's split reads them: every shard is read);
* ``read``: ``open`` plus a random window of 21 random shards (``read ms``, median: its shard is opened by it),
  each followed by another window of the same shard (``again ms``, median).

The ``×`` columns divide each figure by the previous size's: linear growth is 4× from 250 to 1,000 and from 1,000
to 4,000, quadratic 16×.

Usage::

    python benchmarks/shards.py                     # 250, 1000, 4000
    python benchmarks/shards.py --sizes 250 1000    # fewer
    NEUROKIT_SRC=/path/to/other/checkout python benchmarks/shards.py   # another version of neurokit
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: the neurokit measured: this checkout's, or the one whose folder ``$NEUROKIT_SRC`` names (figures before a change)
sys.path.insert(0, os.environ.get("NEUROKIT_SRC") or str(Path(__file__).resolve().parents[1]))

SHAPE = (2, 1, 200)
PER_SHARD = 3
PER_SUBJECT = 4


def _attrs(n: int) -> dict:
    subjects = {}
    for k in range(n):
        subjects.setdefault(f"sub{k // PER_SUBJECT:05d}", []).append(f"sub{k // PER_SUBJECT:05d}/rec{k:06d}.edf")
    return {
        "modality": "eeg",
        "card": "synthetic",
        "card_body": {"name": "synthetic", "tasks": {"rest": {}}},
        "task": "rest",
        "ch_names": ["C3", "C4"],
        "sfreq": 200.0,
        "patch_size": 200,
        "units": "100 uV",
        "recipe": {"window_s": 1.0},
        "subject_files": subjects,
    }


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def child(phase: str, n: int, folder: Path) -> dict:
    """One phase in this (fresh) process: its figures."""
    import numpy as np

    from neurokit.data.dataset import PatchDataset
    from neurokit.store.shards import ShardSetWriter

    base = _rss_mib()
    c0, t0 = time.process_time(), time.perf_counter()
    out: dict = {}
    if phase == "write":
        rng = np.random.default_rng(0)
        w = ShardSetWriter(folder, SHAPE, attrs=_attrs(n))
        for k in range(n):
            x = rng.normal(size=(PER_SHARD, *SHAPE)).astype(np.float32)
            with w.shard(f"/data/rec{k:06d}.edf", sources=[{"path": f"/data/rec{k:06d}.edf"}]) as sw:
                sw.append(x, subject=f"sub{k // PER_SUBJECT:05d}", session="", run="1")
        w.close()
    else:
        ds = PatchDataset(folder)
        out["windows"] = len(ds)
        if phase == "subjects":
            out["subjects"] = len(set(ds.meta("subject")))
        elif phase == "read":
            ds[0]  # the first read of the process (imports, torch's first tensor) is not the set's cost
            first, again = [], []
            for k in np.random.default_rng(1).choice(np.arange(PER_SHARD, len(ds), PER_SHARD), 21, replace=False):
                r0 = time.perf_counter()
                ds[int(k)]  # its shard's first read (the file is opened)
                r1 = time.perf_counter()
                ds[int(k) + 1]  # another window of that shard, now open
                first.append(r1 - r0)
                again.append(time.perf_counter() - r1)
            out["read_ms"], out["again_ms"] = float(np.median(first)) * 1e3, float(np.median(again)) * 1e3
    out.update(cpu_s=time.process_time() - c0, wall_s=time.perf_counter() - t0, peak_mib=max(0.0, _rss_mib() - base))
    return out


def run(phase: str, n: int, folder: Path) -> dict:
    r = subprocess.run(
        [sys.executable, __file__, "--child", phase, str(n), str(folder)],
        capture_output=True,
        text=True,
        check=False,
    )
    if r.returncode:
        raise SystemExit(f"{phase} {n}: failed\n{r.stderr}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[250, 1000, 4000])
    ap.add_argument("--child", nargs=3, metavar=("PHASE", "N", "FOLDER"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child[0], int(args.child[1]), Path(args.child[2]))))
        return
    import neurokit

    print(f"neurokit from {list(neurokit.__path__)[0]}; {os.cpu_count()} CPUs")
    rows = []
    with tempfile.TemporaryDirectory(prefix="nk-shards-") as tmp:
        for n in args.sizes:
            folder = Path(tmp) / f"set{n}"
            fig = {p: run(p, n, folder) for p in ("write", "open", "subjects", "read")}
            rows.append((n, fig))
    head = (
        f"{'shards':>7} | {'write CPU s':>11} {'×':>5} {'MiB':>6} | {'open CPU s':>10} {'×':>5} {'MiB':>6} | "
        f"{'subjects CPU s':>14} {'×':>5} {'MiB':>6} | {'read ms':>7} {'×':>5} {'again ms':>8}"
    )
    print(head)
    print("-" * len(head))
    prev = None
    for n, f in rows:
        print(
            f"{n:>7} | {f['write']['cpu_s']:11.2f} {_ratio(f, prev, 'write')} {f['write']['peak_mib']:6.1f} | "
            f"{f['open']['cpu_s']:10.3f} {_ratio(f, prev, 'open')} {f['open']['peak_mib']:6.1f} | "
            f"{f['subjects']['cpu_s']:14.2f} {_ratio(f, prev, 'subjects')} {f['subjects']['peak_mib']:6.1f} | "
            f"{f['read']['read_ms']:7.2f} {_ratio(f, prev, 'read', 'read_ms')} "
            + (f"{f['read']['again_ms']:8.2f}" if "again_ms" in f["read"] else "")
        )
        prev = f


def _ratio(f: dict, prev: dict | None, phase: str, key: str = "cpu_s") -> str:
    """This size's figure over the previous size's (``-`` for the first)."""
    return f"{f[phase][key] / prev[phase][key]:5.1f}" if prev and prev[phase][key] > 0 else "    -"


if __name__ == "__main__":
    main()
