"""One run per output: a lock beside each output (store, shard set, run folder) that a second ``prepare``,
``pretrain`` or ``finetune`` into the same output finds taken, and a sidecar that names the process holding
it. Built on :mod:`filelock` (an OS lock, ``flock``, released by the kernel when its process dies)."""

from __future__ import annotations

import datetime as _dt
import json
import logging
import os
import socket
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from neurokit._utils.errors import NeurokitError

logger = logging.getLogger("neurokit")

#: outputs this process holds (resolved path → depth), so that a pipeline calling another on the same
#: output does not lock itself out
_HELD: dict[str, int] = {}


class OutputLockedError(NeurokitError, RuntimeError):
    """Another running process holds the lock of the output (its pid, host and start time are named)."""


def main_process() -> bool:
    """Whether this is the process that writes outputs: rank 0 of a ``torchrun`` job (``RANK``), or a plain run."""
    return os.environ.get("RANK", "0") == "0"


def lock_paths(out: str | Path) -> tuple[Path, Path]:
    """The lock file and its sidecar (who holds it) of output ``out``: hidden files beside it,
    ``.NAME.lock`` and ``.NAME.lock.json``, so that replacing or removing ``out`` leaves them in place."""
    out = Path(out).expanduser().absolute()
    return out.with_name(f".{out.name}.lock"), out.with_name(f".{out.name}.lock.json")


def _holder() -> dict:
    return {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "started": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]])[:300] if sys.argv else "",
    }


def _read_holder(sidecar: Path) -> dict | None:
    try:
        rec = json.loads(sidecar.read_text())
    except (OSError, ValueError):
        return None
    return rec if isinstance(rec, dict) else None


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` runs on this host (``os.kill(pid, 0)``: a process of another user counts)."""
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True
    return True


def _stale(rec: dict | None) -> bool:
    """A holder record of a process that is gone: same host, pid not running."""
    if not rec:
        return False
    return rec.get("host") == socket.gethostname() and not pid_alive(rec.get("pid", -1))


def _describe(rec: dict | None) -> str:
    if not rec:
        return "another process (it wrote no record of itself)"
    cmd = f": {rec['command']}" if rec.get("command") else ""
    return f"process {rec.get('pid')} on {rec.get('host')}, started {rec.get('started')}{cmd}"


@contextmanager
def output_lock(out: str | Path, what: str = "run", *, enabled: bool | None = None) -> Iterator[Path | None]:
    """Hold the lock of output ``out`` for the ``with`` block; refuse at once when another process holds it.

    Parameters
    ----------
    out : path
        The output (a store file, a shard-set folder, a run folder); it need not exist.
    what : str
        What runs (``"prepare"``, ``"pretrain"``, ``"finetune"``), for the messages.
    enabled : bool, optional
        ``False`` holds nothing; default :func:`main_process` (the ranks other than 0 of a distributed run
        write nothing and take no lock).

    Yields
    ------
    Path or None
        The lock file (``None`` when not ``enabled`` or already held by this process).

    Raises
    ------
    OutputLockedError
        A running process holds the lock; the message names it (pid, host, start time, command line, from
        the sidecar ``.NAME.lock.json``). A lock whose process is gone (not running on this host) is taken
        over with a warning: the OS lock is released when a process dies, and a sidecar or lock file left by
        a killed run is removed.

    Examples
    --------
    >>> import tempfile, os
    >>> out = os.path.join(tempfile.mkdtemp(), "run")
    >>> with output_lock(out, "pretrain") as lock:
    ...     lock.name
    '.run.lock'
    """
    from filelock import FileLock, Timeout

    key = str(Path(out).expanduser().absolute())
    enabled = main_process() if enabled is None else enabled
    if not enabled:
        yield None
        return
    if key in _HELD:  # this process holds it already (a pipeline inside another on the same output)
        _HELD[key] += 1
        try:
            yield None
        finally:
            _HELD[key] -= 1
        return
    lock_file, sidecar = lock_paths(out)
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    lock = None
    for attempt in range(2):
        lock = FileLock(str(lock_file), timeout=0)
        try:
            lock.acquire()
            break
        except Timeout:
            rec = _read_holder(sidecar)
            if attempt == 0 and _stale(rec):  # its process is gone (a child kept the OS lock): take it over
                logger.warning("%s: taking over the lock of %s, which is no longer running", out, _describe(rec))
                lock_file.unlink(missing_ok=True)
                sidecar.unlink(missing_ok=True)
                continue
            raise OutputLockedError(
                f"{out}: in use by another {(rec or {}).get('what') or 'run'} ({_describe(rec)}); wait for it to end or write to another "
                f"output. If that process is gone, remove {lock_file} and {sidecar}"
            ) from None
    assert lock is not None  # the loop above acquired it or raised
    old = _read_holder(sidecar)
    if old and old.get("pid") != os.getpid():
        logger.warning("%s: recovered the lock left by %s, which is no longer running", out, _describe(old))
    tmp = sidecar.with_name(sidecar.name + f".{os.getpid()}")
    try:
        tmp.write_text(json.dumps({**_holder(), "what": what}))
        os.replace(tmp, sidecar)
    except OSError:  # a full disk must not stop a run over its lock's note; the OS lock still holds
        tmp.unlink(missing_ok=True)
    _HELD[key] = 1
    try:
        yield lock_file
    finally:
        del _HELD[key]
        sidecar.unlink(missing_ok=True)
        lock_file.unlink(missing_ok=True)  # while still held, so no other process locks a file now unlinked
        lock.release()
