"""Memory the allocator keeps for the next recording.

Preparing a store reads, filters and windows one recording after another; each needs the same few tens of
megabytes of arrays, freed at its end. glibc's allocator returns freed memory at the top of its heap to the
system at once (beyond a small pad), so the next recording takes the same pages back one page fault at a
time: on EEGMMIDB S001–S003 (9 runs of 64 channels) about 35,000 faults per pass, a fifth of ``prepare``'s
CPU time in a virtual machine (``benchmarks/README.md``). Keeping a pad of freed memory at the heap's top
(glibc's ``M_TOP_PAD``, as ``MALLOC_TOP_PAD_`` in the environment would) lets the next recording reuse it.
"""

from __future__ import annotations

import ctypes
import os
import sys

#: glibc's mallopt parameter number for the heap-top pad (malloc.h: M_TOP_PAD)
_M_TOP_PAD = -2

#: the pad ``prepare`` asks for: a 64-channel recording of a few minutes and its resampled copy
HEAP_TOP_PAD_BYTES = 64 << 20

_done = False


def keep_heap_top(nbytes: int = HEAP_TOP_PAD_BYTES) -> bool:
    """Ask glibc to keep ``nbytes`` of freed memory at the top of the heap instead of returning it to the
    system (``mallopt(M_TOP_PAD, nbytes)``), once per process. Nothing is done elsewhere than Linux with
    glibc, or when the user set ``MALLOC_TOP_PAD_`` themselves. Returns whether the pad was set (now or by an
    earlier call)."""
    global _done
    if _done:
        return True
    if not sys.platform.startswith("linux") or "MALLOC_TOP_PAD_" in os.environ:
        return False
    try:
        libc = ctypes.CDLL(None)
        if not hasattr(libc, "gnu_get_libc_version"):  # glibc only (musl's mallopt ignores the parameter)
            return False
        _done = bool(libc.mallopt(_M_TOP_PAD, int(nbytes)))
    except (OSError, AttributeError):
        return False
    return _done
