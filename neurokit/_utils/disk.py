"""Full disks: telling them from other write errors, checking free space before a large write, and the
one-line message that says what is kept and how to go on."""

from __future__ import annotations

import errno
import shutil
from pathlib import Path

from neurokit._utils.errors import DiskFullError

#: space left free under every write neurokit checks in advance (HDF5 metadata, chunk caches, the index)
RESERVE_BYTES = 4 << 20

#: phrases with which libraries report a full disk without an ``errno`` (PyTorch's zip writer, HDF5)
_FULL_WORDS = ("No space left on device", "Disk quota exceeded", "errno = 28,", "errno = 122,")


def is_disk_full(exc: BaseException) -> bool:
    """Whether ``exc`` (or an exception it was raised from) says the disk or the user's quota is full:
    ``OSError`` with ``ENOSPC``/``EDQUOT``, or a library error whose text says so (PyTorch's
    ``PytorchStreamWriter failed writing file … file write failed`` carries no errno).

    Examples
    --------
    >>> is_disk_full(OSError(28, "No space left on device")), is_disk_full(ValueError("x"))
    (True, False)
    """
    seen = set()
    e: BaseException | None = exc  # then its causes and contexts
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        if isinstance(e, (OSError, RuntimeError)) and any(w in str(e) for w in _FULL_WORDS):
            return True
        e = e.__cause__ or e.__context__
    return False


def check_free_space(folder: str | Path, need_bytes: int, *, what: str | Path) -> None:
    """Raise :class:`~neurokit._utils.errors.DiskFullError` when the file system of ``folder`` has less than
    ``need_bytes`` + :data:`RESERVE_BYTES` free, before anything is written (HDF5 cannot always recover from a
    write that fails half-way). A folder whose free space cannot be read passes.

    Parameters
    ----------
    folder : path
        Where the file is written (its nearest existing parent is measured).
    need_bytes : int
        Bytes about to be written.
    what : str or path
        The file, for the message.

    Examples
    --------
    >>> check_free_space(".", 0, what="x.h5")  # nothing to write: passes unless the disk is already full
    """
    p = Path(folder)
    while not p.exists() and p != p.parent:
        p = p.parent
    try:
        free = shutil.disk_usage(p).free
    except OSError:
        return
    if free < need_bytes + RESERVE_BYTES:
        raise DiskFullError(
            f"{what}: disk full ({free / 2**20:.1f} MiB free on {p}, {need_bytes / 2**20:.1f} MiB "
            f"to write plus {RESERVE_BYTES >> 20} MiB kept free)"
        )
