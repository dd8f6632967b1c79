"""Run one function over many recordings: in this process, on local worker processes (joblib), or on a
Dask cluster (``dask.distributed``; SLURM/PBS through dask-jobqueue, Kubernetes through dask-kubernetes).

Results come back in the order of the inputs whatever finishes first, so a store's bytes do not depend on
how many workers made it. On a cluster, a worker that dies takes no file with it: the scheduler runs its
tasks again elsewhere (``distributed.scheduler.allowed-failures`` times).
"""

from __future__ import annotations

import os
import warnings
from typing import Callable, Generator, Iterable, Iterator, TypeVar

from neurokit._utils.errors import ConfigError

# A stop (an error or Ctrl-C) cancels the files still queued; joblib's two-line warning about them would
# follow the one-line error. Only that warning, only from joblib.
warnings.filterwarnings(
    "ignore",
    message=r".*tasks which were still being processed by the workers have been cancelled",
    category=UserWarning,
    module=r"joblib\.",
)

T = TypeVar("T")
R = TypeVar("R")

#: environment variable naming a running Dask scheduler (the dask-jobqueue / dask-gateway convention)
SCHEDULER_ENV = "DASK_SCHEDULER_ADDRESS"


def scheduler_address(scheduler: str | None) -> str | None:
    """``scheduler``, else ``$DASK_SCHEDULER_ADDRESS``, else None (work locally)."""
    return scheduler or os.environ.get(SCHEDULER_ENV) or None


def map_ordered(
    fn: Callable[[T], R], items: Iterable[T], *, n_jobs: int = 1, scheduler=None
) -> Generator[R, None, None]:
    """Yield ``fn(item)`` for each item, in input order.

    Parameters
    ----------
    fn : callable
        A module-level function (it is pickled to the workers).
    items : iterable
    n_jobs : int
        Local worker processes (joblib's loky backend); 1 runs in this process, -1 uses every core.
    scheduler : str or distributed.Client, optional
        Dask scheduler address (``tcp://host:8786``) or a client; default ``$DASK_SCHEDULER_ADDRESS``.
        Takes precedence over ``n_jobs``.

    Raises
    ------
    ConfigError
        A scheduler is named but ``dask.distributed`` is not installed or cannot reach it; ``n_jobs`` 0, or
        a negative count beyond the machine's cores. More workers than items are not started.
    """
    if n_jobs == 0:
        raise ConfigError(
            "n_jobs=0: give 1 (this process), a number of worker processes, or -1 (every core; -2 all "
            "but one, as joblib counts)"
        )
    items = list(items)
    if n_jobs < 0:  # joblib's count from the end: -1 every core, -2 all but one
        cores = os.cpu_count() or 1
        if cores + 1 + n_jobs < 1:
            raise ConfigError(f"n_jobs={n_jobs}: this machine has {cores} cores (-1 uses every core)")
    n_jobs = min(n_jobs, len(items)) if n_jobs > 0 else n_jobs  # never more workers than recordings
    address = scheduler if scheduler is not None and not isinstance(scheduler, str) else scheduler_address(scheduler)
    if address is not None:
        yield from _map_dask(AllocatorKept(ParentWatched(fn)), items, address)
    elif n_jobs == 1 or len(items) <= 1:
        for it in items:
            yield fn(it)
    else:
        from joblib import Parallel, delayed

        # a bounded window of files in flight (pre_dispatch), handed back in order as they complete; each worker
        # ends when this process dies (a SIGKILL from a scheduler's time limit or the OOM killer leaves no orphan)
        watched = ParentWatched(fn)
        yield from Parallel(n_jobs=n_jobs, return_as="generator", pre_dispatch="2*n_jobs")(
            delayed(watched)(it) for it in items
        )


#: seconds between a worker's checks that the process which started the work is still alive
WATCH_EVERY_S = 1.0


class ParentWatched:
    """``fn`` run in a worker process that ends itself when the process that started the work dies.

    A joblib (loky) or local Dask worker outlives its parent when the parent is killed with SIGKILL (a scheduler's
    time limit, the out-of-memory killer): re-parented to init, it goes on using CPU. The first call in a worker
    starts a daemon thread that checks every :data:`WATCH_EVERY_S` s that the starting process (its pid, on the
    same host) still exists, and ends the worker (``os._exit``) when it does not. In the starting process itself,
    or on another host (a remote Dask cluster, whose scheduler cleans up), nothing is started.

    Examples
    --------
    >>> ParentWatched(abs)(-3)
    3
    """

    def __init__(self, fn: Callable) -> None:
        import socket

        self.fn = fn
        self.pid = os.getpid()
        self.host = socket.gethostname()

    def __call__(self, item):
        _watch(self.pid, self.host)
        return self.fn(item)


class AllocatorKept:
    """``fn`` run on a Dask worker with neurokit's allocator setting (:func:`~neurokit._utils.memory.keep_heap_top`)
    asserted there, as in a local worker.

    A Dask nanny starts its workers with ``MALLOC_TRIM_THRESHOLD_`` set (its ``distributed.nanny.pre-spawn-environ``
    configuration; a local cluster's nanny sets it in the starting process too), and
    :func:`~neurokit._utils.memory.keep_heap_top` stands back when that variable is set (taken for a user's own
    tuning), so each recording on a Dask worker took its pages back from the system one fault at a time. The first
    call in a worker process drops the allocator variables whose value is the nanny's (a value of the user's own,
    any other, is kept) and sets the heap-top pad; the variable only gave glibc its start-up setting, which
    ``mallopt`` overrides.

    Examples
    --------
    >>> AllocatorKept(abs)(-3)
    3
    """

    def __init__(self, fn: Callable) -> None:
        self.fn = fn
        self.pid = os.getpid()

    def __call__(self, item):
        if os.getpid() != self.pid:
            allocator_on_worker()
        return self.fn(item)


def nanny_environ() -> dict[str, str]:
    """The environment a Dask nanny gives the workers it starts (``distributed.nanny.pre-spawn-environ`` and
    ``environ``), as strings; empty without dask."""
    try:
        import dask.config
        import distributed  # noqa: F401  (its defaults join dask's configuration when imported)
    except ImportError:
        return {}
    out: dict[str, str] = {}
    for key in ("distributed.nanny.pre-spawn-environ", "distributed.nanny.environ"):
        for k, v in (dask.config.get(key, default=None) or {}).items():
            out[str(k)] = str(v)
    return out


_ALLOCATOR_SET: set[int] = set()


def allocator_on_worker() -> bool:
    """In a Dask worker: drop the allocator variables its nanny set (those holding the nanny's value), then
    :func:`~neurokit._utils.memory.keep_heap_top`; once per process. Returns whether the heap-top pad is set."""
    from neurokit._utils.memory import ALLOCATOR_ENV, keep_heap_top

    if os.getpid() in _ALLOCATOR_SET:
        return True
    nanny = nanny_environ()
    for k in ALLOCATOR_ENV:
        if k in os.environ and os.environ[k] == nanny.get(k):
            del os.environ[k]  # glibc read it at start-up; mallopt below sets what neurokit asks for
    done = keep_heap_top()
    if done:
        _ALLOCATOR_SET.add(os.getpid())
    return done


_WATCHING: set[int] = set()


def _alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie, dead but not yet reaped by its parent, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, owned by someone else
        return True
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:  # no /proc (not Linux): kill(0) said it exists
        return True


def _watch(pid: int, host: str) -> None:
    import socket
    import threading
    import time

    if pid == os.getpid() or pid in _WATCHING or host != socket.gethostname():
        return
    _WATCHING.add(pid)

    def check() -> None:
        while True:
            time.sleep(WATCH_EVERY_S)
            if not _alive(pid):
                os._exit(1)

    threading.Thread(target=check, name="neurokit-parent-watch", daemon=True).start()


def _map_dask(fn, items, address) -> Iterator:
    try:
        from distributed import Client
    except ImportError as exc:
        raise ConfigError(
            "scheduler= / DASK_SCHEDULER_ADDRESS needs dask.distributed: pip install 'neurokit-fm[dask]'"
        ) from exc
    own = isinstance(address, str)
    try:
        client = Client(address, timeout="30s") if own else address
    except OSError as exc:
        raise ConfigError(f"cannot reach the Dask scheduler at {address} ({exc})") from exc
    try:
        # pure=False: every file is one task even when two calls look alike; keys are listed in input order
        futures = client.map(fn, items, pure=False)
        for fut in futures:
            yield fut.result()
            fut.release()  # let the cluster drop the result once it is written
    finally:
        if own:
            client.close()
