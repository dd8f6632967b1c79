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


def drop_cache(paths: list[Path] | Path, settle_s: float = 5.0) -> None:
    """Drop the files' pages from the page cache (clean pages: ``fsync`` first, then ``POSIX_FADV_DONTNEED``; no
    root needed), again until none is left: read-ahead a loader asked for may still be arriving after its pass
    (on a slow disk, for seconds), and would make the next pass partly warm. Pages are probed at 256 places of each
    file (``preadv`` with ``RWF_NOWAIT``, which refuses to wait for the disk); up to ``settle_s`` seconds. Pages
    mapped or being written elsewhere may stay."""
    import time

    files = [paths] if isinstance(paths, (str, Path)) else list(paths)
    end = time.monotonic() + settle_s
    while True:
        for p in files:
            fd = os.open(p, os.O_RDONLY)
            try:
                os.fsync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
        if not any(_resident(p) for p in files) or time.monotonic() > end:
            return
        time.sleep(0.2)


def _resident(path: Path, probes: int = 256) -> bool:
    """Whether any of ``probes`` evenly spaced pages of ``path`` is in the page cache."""
    flag = getattr(os, "RWF_NOWAIT", None)
    if flag is None:
        return False
    size = os.path.getsize(path)
    buf = bytearray(1)
    fd = os.open(path, os.O_RDONLY)
    try:
        for k in range(probes):
            try:
                if os.preadv(fd, [buf], size * k // probes, flag) > 0:
                    return True
            except (BlockingIOError, OSError):
                pass
    finally:
        os.close(fd)
    return False


def parse_disk(text: str) -> tuple[int, int]:
    """``"MBPS"`` or ``"MBPS:IOPS"`` (e.g. ``400`` or ``150:150``) as (bytes/s, requests/s; 0: no limit)."""
    try:
        mb, _, iops = text.partition(":")
        bps, n = int(float(mb) * 1e6), int(iops or 0)
    except (ValueError, OverflowError):
        raise SystemExit(f"--disk {text!r}: expected MB/s, optionally ':IOPS' (e.g. 400 or 150:150)") from None
    if bps <= 0 or n < 0:
        raise SystemExit(f"--disk {text!r}: MB/s must be > 0 and IOPS ≥ 0")
    return bps, n


def block_device(path: Path) -> str:
    """``MAJOR:MINOR`` of the whole disk holding ``path`` (the throttle is set per disk, not per partition)."""
    try:
        dev = os.stat(path).st_dev
    except OSError as e:
        raise SystemExit(f"--disk: {path}: {e.strerror}") from None
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
    primer = Path(path if Path(path).is_dir() else Path(path).parent) / f".neurokit-bench-primer-{os.getpid()}"
    try:
        group.mkdir(exist_ok=True)
        try:
            with open(primer, "wb") as fh:  # read before each pass (prime): the throttle's allowance after idling
                fh.write(os.urandom(1 << 20) * PRIMER_MB)
                fh.flush()
                os.fsync(fh.fileno())
            _PRIMER[:] = [primer]
        except OSError:  # a read-only folder: passes start unprimed
            _PRIMER[:] = []
        for f, v in files.items():
            try:
                (group / f).write_text(v)
            except OSError as e:
                raise SystemExit(f"--disk: the kernel refused to throttle device {dev} ({f}: {e})") from None
        (group / "cgroup.procs").write_text(str(os.getpid()))
        yield f"disk limited to {bps / 1e6:.0f} MB/s" + (f" and {iops} reads/s" if iops else "") + f" (device {dev})"
    finally:
        _leave(group, old)
        with contextlib.suppress(OSError):
            primer.unlink()
        _PRIMER[:] = []


def _leave(group: Path, old: Path, wait_s: float = 5.0) -> None:
    """Move this process and whatever is left in ``group`` (DataLoader workers of an interrupted run) back to
    ``old``, then remove ``group``; retried for ``wait_s`` seconds while a process is still leaving it."""
    import time

    end = time.monotonic() + wait_s
    while True:
        try:
            pids = (group / "cgroup.procs").read_text().split() if group.exists() else []
        except OSError:
            pids = []
        for pid in [str(os.getpid()), *pids]:
            with contextlib.suppress(OSError):
                (old / "cgroup.procs").write_text(pid)
        try:
            if group.exists():
                group.rmdir()
            return
        except OSError:
            if time.monotonic() > end:
                print(f"--disk: could not remove {group} (remove it with rmdir)")
                return
            time.sleep(0.1)


#: MB read from a scratch file before each throttled pass (:func:`prime`)
PRIMER_MB = 64
#: the scratch file of the throttle in force (empty outside :func:`throttled`)
_PRIMER: list[Path] = []


def prime() -> None:
    """Under :func:`throttled`: read :data:`PRIMER_MB` MB of a scratch file from the disk, so the pass that follows
    meets the throttle in its steady state. After an idle spell (dropping the cache, a pass's set-up) the kernel's
    throttle lets the first tenths of a second through at more than its rate, which made a short pass read up to
    1.5× the limit; nothing outside :func:`throttled`."""
    if not _PRIMER:
        return
    drop_cache(_PRIMER, settle_s=0.0)
    with open(_PRIMER[0], "rb", buffering=0) as f:
        while f.read(8 << 20):
            pass


def _own_group(root: Path) -> Path:
    """This process's cgroup folder under ``root`` (cgroup v1 blkio hierarchy or the v2 unified one)."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        num, ctrls, rel = line.split(":", 2)
        if (root.name == "blkio" and "blkio" in ctrls.split(",")) or (root == CGROUP and num == "0"):
            return root / rel.lstrip("/")
    return root
