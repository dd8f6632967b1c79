"""Cold reads for the benchmarks: drop a file from the page cache, and emulate a disk of a given speed.

A virtual machine's disk is often served from the host's memory: a "cold" read (the file dropped from the guest's
page cache) then runs at memory speed on some passes and at the device's on others, and no figure is a disk's.
:func:`throttled` makes the disk one of known speed for this process and its children (DataLoader workers
included) through the kernel's block-IO throttle, the way containers are limited: cgroup v1
``blkio.throttle.read_bps_device`` / ``read_iops_device``, or cgroup v2 ``io.max``. Reads issued on the process's
behalf (``read``, ``preadv``, the read-ahead that ``posix_fadvise(WILLNEED)`` starts) are then served at most at
that many bytes and requests per second, so the raw file read, HDF5's read and the training loader meet the same
disk. It needs root (writing to ``/sys/fs/cgroup``); without it the benchmark says so and stops.

Used by ``loader.py --disk`` and ``store_dtype.py``.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

CGROUP = Path("/sys/fs/cgroup")


def drop_cache(paths: list[Path] | Path) -> None:
    """Drop the files' pages from the page cache (clean pages: ``fsync`` first, then ``POSIX_FADV_DONTNEED``; no
    root needed). Pages mapped or being written elsewhere may stay."""
    for p in [paths] if isinstance(paths, (str, Path)) else paths:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def parse_disk(text: str) -> tuple[int, int]:
    """``"MBPS"`` or ``"MBPS:IOPS"`` (e.g. ``400`` or ``150:150``) as (bytes/s, requests/s; 0: no limit)."""
    try:
        mb, _, iops = text.partition(":")
        bps, n = int(float(mb) * 1e6), int(iops or 0)
    except ValueError:
        raise SystemExit(f"--disk {text!r}: expected MB/s, optionally ':IOPS' (e.g. 400 or 150:150)") from None
    if bps <= 0 or n < 0:
        raise SystemExit(f"--disk {text!r}: MB/s must be > 0 and IOPS ≥ 0")
    return bps, n


def block_device(path: Path) -> str:
    """``MAJOR:MINOR`` of the whole disk holding ``path`` (the throttle is set per disk, not per partition)."""
    dev = os.stat(path).st_dev
    name = f"{os.major(dev)}:{os.minor(dev)}"
    sys_dev = Path("/sys/dev/block") / name
    if (sys_dev / "partition").exists():  # a partition: its parent disk
        parent = sys_dev.resolve().parent / "dev"
        if parent.exists():
            name = parent.read_text().strip()
    return name


@contextlib.contextmanager
def throttled(path: Path, bps: int, iops: int = 0) -> Iterator[str]:
    """Run the body (and every process it starts) on a disk limited to ``bps`` bytes/s and ``iops`` reads/s (0: no
    limit) for the disk holding ``path``. Yields a description of the limit. The process goes back to its cgroup
    and the throttle group is removed afterwards.

    Raises
    ------
    SystemExit
        Not root, no block-IO controller, or the device cannot be throttled (a file system not on a block device:
        tmpfs, overlay without a disk).
    """
    dev = block_device(Path(path))
    if os.geteuid() != 0:
        raise SystemExit("--disk: the block-IO throttle needs root (it writes to /sys/fs/cgroup)")
    v1 = CGROUP / "blkio"
    name = f"neurokit-bench-{os.getpid()}"
    if (v1 / "blkio.throttle.read_bps_device").exists():
        group, back = v1 / name, v1
        files = {"blkio.throttle.read_bps_device": f"{dev} {bps}"}
        if iops:
            files["blkio.throttle.read_iops_device"] = f"{dev} {iops}"
    elif (CGROUP / "cgroup.controllers").exists() and "io" in (CGROUP / "cgroup.controllers").read_text().split():
        group, back = CGROUP / name, CGROUP
        files = {"io.max": f"{dev} rbps={bps}" + (f" riops={iops}" if iops else "")}
    else:
        raise SystemExit("--disk: no block-IO controller (cgroup v1 blkio or cgroup v2 io) at /sys/fs/cgroup")
    old = _own_group(back)
    group.mkdir(exist_ok=True)
    try:
        for f, v in files.items():
            try:
                (group / f).write_text(v)
            except OSError as e:
                raise SystemExit(f"--disk: the kernel refused to throttle device {dev} ({f}: {e})") from None
        (group / "cgroup.procs").write_text(str(os.getpid()))
        yield f"disk limited to {bps / 1e6:.0f} MB/s" + (f" and {iops} reads/s" if iops else "") + f" (device {dev})"
    finally:
        with contextlib.suppress(OSError):
            (old / "cgroup.procs").write_text(str(os.getpid()))
        with contextlib.suppress(OSError):
            group.rmdir()  # fails while a child (a worker that has not exited) is still in it: harmless


def _own_group(root: Path) -> Path:
    """This process's cgroup folder under ``root`` (cgroup v1 blkio hierarchy or the v2 unified one)."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        num, ctrls, rel = line.split(":", 2)
        if (root.name == "blkio" and "blkio" in ctrls.split(",")) or (root == CGROUP and num == "0"):
            return root / rel.lstrip("/")
    return root
