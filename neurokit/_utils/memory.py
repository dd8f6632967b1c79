"""Memory the allocator keeps for the next recording.

Preparing a store reads, filters and windows one recording after another; each needs the same few tens of
megabytes of arrays, freed at its end. glibc's allocator returns freed memory at the top of its heap to the
system at once (beyond a small pad), so the next recording takes the same pages back one page fault at a
time: on EEGMMIDB S001–S003 (9 runs of 64 channels) about 27,000 faults per pass, a fifth of ``prepare``'s
CPU time in a virtual machine (``benchmarks/README.md``). Keeping a pad of freed memory at the heap's top
(glibc's ``M_TOP_PAD``) lets the next recording reuse it. Setting any such parameter turns glibc's own
adjustment of the size above which blocks are mapped one by one (``M_MMAP_THRESHOLD``, 128 KiB rising with
use to 32 MiB) off, which left at 128 KiB made every later tensor of a training loop in the same process
fault its pages anew (4× the faults of a CBraMod step): the threshold is set to 32 MiB, where glibc's
adjustment would end.
"""

from __future__ import annotations

import ctypes
import os
import sys

#: glibc's mallopt parameter numbers (malloc.h): the heap-top pad and the size mapped one block at a time
_M_TOP_PAD = -2
_M_MMAP_THRESHOLD = -3

#: where glibc's dynamic mmap threshold stops rising on 64-bit systems (DEFAULT_MMAP_THRESHOLD_MAX)
MMAP_THRESHOLD_BYTES = 32 << 20

#: environment variables by which a user tunes glibc's allocator: then neurokit leaves it alone
ALLOCATOR_ENV = ("MALLOC_TOP_PAD_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "GLIBC_TUNABLES")

#: the pad ``prepare`` asks for: a 64-channel recording of a few minutes and its resampled copy
HEAP_TOP_PAD_BYTES = 64 << 20

_done = False


def keep_heap_top(nbytes: int = HEAP_TOP_PAD_BYTES) -> bool:
    """Ask glibc to keep ``nbytes`` of freed memory at the top of the heap instead of returning it to the
    system (``mallopt(M_TOP_PAD, nbytes)``), with blocks up to :data:`MMAP_THRESHOLD_BYTES` taken from the
    heap (``M_MMAP_THRESHOLD``), once per process. Nothing is done elsewhere than Linux with glibc, or when
    the user tunes the allocator themselves (``MALLOC_TOP_PAD_``, ``MALLOC_MMAP_THRESHOLD_``,
    ``MALLOC_TRIM_THRESHOLD_``, ``GLIBC_TUNABLES``). Returns whether it was set (now or by an earlier call)."""
    global _done
    if _done:
        return True
    if not sys.platform.startswith("linux") or any(k in os.environ for k in ALLOCATOR_ENV):
        return False
    try:
        libc = ctypes.CDLL(None)
        if not hasattr(libc, "gnu_get_libc_version"):  # glibc only (musl's mallopt ignores the parameter)
            return False
        _done = bool(libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)) and bool(
            libc.mallopt(_M_TOP_PAD, int(nbytes))
        )
    except (OSError, AttributeError):
        return False
    return _done
