"""``torch.utils.data.Dataset`` over one or more patch stores, and its splits."""

from __future__ import annotations

import logging
import os
import sys
import threading
import weakref
from collections.abc import Sequence as SequenceABC
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import torch

from neurokit._utils.errors import ConfigError
from neurokit.data.splits import check_no_leak, class_count, resolve_splits, store_ids, task_kind
from neurokit.io.headers import short_list
from neurokit.store.shards import open_stores
from neurokit.store.patch_store import PatchStore, StoreMeta

logger = logging.getLogger("neurokit")


class PatchDataset(torch.utils.data.Dataset):
    """Samples of one or more :class:`~neurokit.store.patch_store.PatchStore` files, optionally filtered.

    Parameters
    ----------
    stores : path, PatchStore, or a sequence of them
        A path may be a store file or a shard set's folder (:mod:`neurokit.store.shards`; read as its shards).
    subjects : sequence of str, optional
        Keep only samples whose ``meta/subject`` is listed. When no listed id is in the stores,
        :class:`~neurokit._utils.errors.ConfigError` names them and the stores' subjects (instead of an empty
        dataset); ids missing beside others that are there are named in a warning.
    runs : sequence of str, optional
        Keep only samples whose ``meta/run`` is listed.
    labelled : bool
        Drop samples with label -1.
    samples : sequence or array of int, optional
        Keep only these samples, numbered across the stores in order (store 0's samples first); the
        numbering of :attr:`sample_ids`, which evaluation folds use.

    transform : callable, optional
        Applied to each ``x``.
    batch_dtype : {"float32", "stored"}
        The dtype of ``x``: float32 (default), or ``"stored"``: the stores' own dtype, so a float16 store's
        batches come out as float16 exactly as stored, without a conversion on the host (the training loop then
        casts them to float32 on its device: :class:`~neurokit.training.trainer.Trainer`). Stores of mixed dtypes
        read as float32 (said once in the log). Settable after construction (:attr:`batch_dtype`).

    Items are ``(x, y)``: ``x`` a float32 tensor (float16 under ``batch_dtype="stored"`` from float16 stores) of
    the store's sample shape (EEG ``(C, N, 200)`` in 100 µV), ``y`` an int64 class index or float32 target (0-d
    tensors).

    Raises
    ------
    ValueError
        ``batch_dtype`` other than ``"float32"`` or ``"stored"``.

    Examples
    --------
    >>> ds = PatchDataset("runs/mi.h5", labelled=True)  # doctest: +SKIP
    >>> parts = ds.split()  # the card's train/val/test subjects  # doctest: +SKIP
    >>> x, y = parts["train"][0]  # doctest: +SKIP
    """

    #: set by fine-tuning on its training part when ``label_fraction`` < 1: what the cut kept (for its report)
    label_fraction_info: dict | None = None

    def __init__(
        self,
        stores,
        *,
        subjects: Sequence[str] | None = None,
        runs: Sequence[str] | None = None,
        labelled: bool = False,
        samples: Sequence[int] | np.ndarray | None = None,
        transform: Callable | None = None,
        batch_dtype: str = "float32",
    ) -> None:
        if isinstance(stores, (str, Path, PatchStore)):
            stores = [stores]
        stores = list(stores)
        if all(isinstance(s, PatchStore) for s in stores):
            self.stores: list[PatchStore] = stores
        else:
            self.stores = open_stores(stores)
        self.transform = transform
        if subjects is not None:
            known = self.store_subjects
            subjects = store_ids(subjects, known)
            unknown = sorted({str(x) for x in subjects} - set(known))
            if unknown and len(unknown) < len({str(x) for x in subjects}):  # a part: e.g. a card split over a subset
                logger.warning("subjects %s are in none of the stores; using the others", short_list(unknown, 20))
            elif unknown:
                shown = short_list(known, 20)
                where = ", ".join(str(st.path) for st in self.stores[:3]) + ("…" if len(self.stores) > 3 else "")
                raise ConfigError(
                    f"no sample of subjects {short_list(unknown, 20)} in the store(s); subjects there: {shown} ({where})"
                )
        index = []
        offset = 0
        chosen = None  # samples: one mask over all stores' samples, sliced per store (linear in the stores)
        if samples is not None:
            chosen = np.zeros(sum(len(st) for st in self.stores), dtype=bool)
            picked = np.asarray(samples, dtype=np.int64).reshape(-1)
            chosen[picked[(picked >= 0) & (picked < len(chosen))]] = True  # as np.isin: other numbers match none
        for si, st in enumerate(self.stores):
            keep = np.ones(len(st), dtype=bool)
            if chosen is not None:
                keep &= chosen[offset : offset + len(st)]
            offset += len(st)
            if subjects is not None:
                keep &= np.isin(st.meta["subject"].astype(str), [str(s) for s in subjects])
            if runs is not None:
                keep &= np.isin(st.meta["run"].astype(str), [str(r) for r in runs])
            if labelled:
                keep &= st.labels >= 0 if st.labels.dtype.kind in "iu" else np.isfinite(st.labels)
                _say_nan_targets(st)
            rows = np.flatnonzero(keep)
            index.append(np.stack([np.full(len(rows), si, dtype=np.int64), rows.astype(np.int64)], axis=1))
        # (n, 2) int64 rows of (store, sample): 16 bytes a sample, however many shards
        self.index = np.concatenate(index) if index else np.zeros((0, 2), dtype=np.int64)
        self._x_dtype = np.dtype(np.float32)
        self.batch_dtype = batch_dtype

    @property
    def batch_dtype(self) -> str:
        """``"float32"`` or ``"stored"`` (see the class's parameters); :attr:`x_dtype` is what it resolves to."""
        return self._batch_dtype

    @batch_dtype.setter
    def batch_dtype(self, value: str) -> None:
        if value not in BATCH_DTYPES:
            raise ValueError(f"batch_dtype={value!r}: one of {', '.join(map(repr, BATCH_DTYPES))}")
        self._batch_dtype = value
        self._x_dtype = np.dtype(np.float32)
        if value == "stored":
            kinds = sorted({st.sample_dtype for st in self.stores})
            if len(kinds) == 1:
                self._x_dtype = np.dtype(kinds[0])
            elif kinds:
                logger.info(
                    "stored-dtype batches asked for, but the stores hold %s samples; batches are read as float32",
                    " and ".join(kinds),
                )

    @property
    def x_dtype(self) -> torch.dtype:
        """The dtype of the batches' ``x``: float32, or the stores' own dtype under ``batch_dtype="stored"``."""
        return torch.float16 if self._x_dtype == np.float16 else torch.float32

    @property
    def attrs(self) -> dict:
        """The first store's attributes, untyped (:attr:`info` is the typed form)."""
        return self.stores[0].attrs

    @property
    def info(self) -> StoreMeta:
        """The first store's metadata, typed (:class:`~neurokit.store.patch_store.StoreMeta`); the stores of one
        dataset agree on modality, sample shape and channels (:func:`~neurokit.store.shards.open_stores`)."""
        return self.stores[0].info

    @property
    def sample_shape(self) -> tuple[int, ...]:
        return self.stores[0].sample_shape

    def _gather(self, arrays: list[np.ndarray]) -> np.ndarray:
        """``arrays[store][i]`` for every ``(store, i)`` of the index, vectorised per store."""
        idx = np.asarray(self.index, dtype=np.int64).reshape(-1, 2)
        parts = [np.asarray(a)[idx[idx[:, 0] == si, 1]] for si, a in enumerate(arrays)]
        if len(arrays) == 1:
            return parts[0]
        out = np.empty(len(idx), dtype=np.result_type(*[np.asarray(a).dtype for a in arrays]))
        for si, part in enumerate(parts):
            out[idx[:, 0] == si] = part
        return out

    @property
    def labels(self) -> np.ndarray:
        return self._gather([st.labels for st in self.stores])

    @property
    def sample_ids(self) -> np.ndarray:
        """Number of each selected sample across the stores (the ``samples=`` numbering), int64 ``(n,)``."""
        offsets = np.cumsum([0] + [len(st) for st in self.stores]).astype(np.int64)
        return offsets[self.index[:, 0]] + self.index[:, 1]

    @property
    def store_subjects(self) -> list[str]:
        """Every subject id in the underlying stores, whatever the filters (for error messages)."""
        return sorted({str(s) for st in self.stores for s in st.meta["subject"]})

    def meta(self, column: str) -> np.ndarray:
        """A per-sample meta column (``subject``, ``session``, ``run``, ``onset``…) of the samples kept, in order.

        Parameters
        ----------
        column : str
            A column of the stores' ``meta`` group.

        Returns
        -------
        numpy.ndarray, shape (n,)
        """
        return self._gather([st.meta[column] for st in self.stores])

    def __len__(self) -> int:
        return len(self.index)

    def split(self, splits: dict[str, list[str]] | None = None, *, labelled: bool = True) -> dict[str, "PatchDataset"]:
        """The train / val / test datasets of these samples, checked for leaks.

        Parameters
        ----------
        splits : dict of split name → subject ids, optional
            Explicit subjects; default the split of the store's data card, by subject or by recording (its
            ``split_unit``), or, for a store of one subject the card's split does not cover, its runs (the last two
            for validation and test): :func:`~neurokit.data.splits.resolve_splits`.
        labelled : bool
            Keep only labelled samples in each part.

        Returns
        -------
        dict ``{"train": PatchDataset, "val": PatchDataset, "test": PatchDataset}``.

        Raises
        ------
        ConfigError
            The card defines no splits and none are given, a split has no subject in the store, or the parts
            share subjects (runs) with the training part (:func:`~neurokit.data.splits.check_no_leak`).
        """
        how, kw = resolve_splits(self, splits)
        check_no_leak(self, kw, "run" if how == "run" else "subject")
        return {k: PatchDataset(self.stores, labelled=labelled, **v) for k, v in kw.items()}

    def __getitem__(self, k: int):
        s, i = self.index[k]
        if self._x_dtype == np.float32:
            x = torch.from_numpy(np.asarray(self.stores[s].patches(i), dtype=np.float32))
        else:  # the stored values as they are
            out = np.empty((1, *self.sample_shape), dtype=self._x_dtype)
            x = torch.from_numpy(self.stores[s].read_into(np.asarray([i]), out)[0])
        if self.transform is not None:
            x = self.transform(x)
        return x, torch.as_tensor(self.stores[s].labels[i])

    def will_need(self, indices: Sequence[int] | np.ndarray) -> None:
        """Ask the kernel to bring samples ``indices`` into the page cache, in the stores' read-ahead blocks
        (:attr:`PatchStore.readahead <neurokit.store.patch_store.PatchStore>`, set by :func:`set_readahead`;
        stores without one are left alone). Returns at once: the reads go on in the background.

        Parameters
        ----------
        indices : sequence of int
            Samples of this dataset that will be read soon.
        """
        rows = self.index[np.asarray(indices, dtype=np.int64).reshape(-1)]
        for si in np.unique(rows[:, 0]).tolist():
            st = self.stores[si]
            if st.readahead > 0:
                st.will_need(np.sort(rows[rows[:, 0] == si, 1]))

    def __getitems__(self, indices: Sequence[int]) -> "PatchBatch | list":
        """Items ``indices`` read at once (``torch.utils.data.DataLoader`` calls this for each batch).

        The batch's samples are read store by store in increasing order, each straight into its place in one
        float32 tensor (of the stores' dtype under ``batch_dtype="stored"``) (:meth:`~neurokit.store.patch_store.PatchStore.read_into`). In a DataLoader worker that tensor is
        one of a few shared-memory buffers the worker reuses; with :func:`collate_patches` the main process
        hands the batch on in that buffer (no copy) and gives the buffer back once the batch is let go, instead of
        torch sending each batch in a new shared-memory file (whose page faults cost more than the read). The items equal
        ``[self[k] for k in indices]``, in that order.

        Returns
        -------
        PatchBatch
            The batch ``(x, y)``, as :func:`collate_patches` passes it on; a list of ``(x, y)`` items when a
            ``transform`` is set (applied item by item).
        """
        k = np.asarray(indices, dtype=np.int64).reshape(-1)
        rows = self.index[k]
        x, slot = _batch_tensor((len(k), *self.sample_shape), pooled=self.transform is None, dtype=self.x_dtype)
        xn = x.numpy()
        batch_stores = np.unique(rows[:, 0]).tolist()  # only these are opened (a shard set's others stay closed)
        dtypes = [self.stores[si].labels.dtype for si in batch_stores] or [np.dtype(np.int64)]  # an empty batch
        y = np.empty(len(k), dtype=np.result_type(*dtypes))
        for si in batch_stores:  # store by store, each sample into its place in the batch
            at = np.flatnonzero(rows[:, 0] == si)
            st = self.stores[si]
            st.read_into(rows[at, 1], xn, at)
            y[at] = st.labels[rows[at, 1]]
        yt = torch.from_numpy(np.ascontiguousarray(y))
        if self.transform is not None:
            return [(self.transform(x[j]), yt[j]) for j in range(len(k))]
        return PatchBatch(x, yt, slot)


def set_readahead(dataset: Any, rows: int, on_read: bool = True) -> int:
    """Have every patch store under ``dataset`` read ahead in aligned blocks of ``rows`` windows
    (:attr:`PatchStore.readahead <neurokit.store.patch_store.PatchStore>`; 0: off): the first window read from a
    block asks the kernel for the whole block in large reads. For a block order
    (:class:`~neurokit.training.optim.EpochSampler` ``order="block"``), whose blocks the reads then stay in.

    Parameters
    ----------
    dataset : torch.utils.data.Dataset
        A :class:`PatchDataset`, or a wrapper of some (``ScaledDataset``, ``Subset``, ``ConcatDataset``: followed
        through their ``ds``, ``dataset`` and ``datasets`` attributes).
    rows : int
        Windows per read-ahead block; 0 turns it off.
    on_read : bool
        Also ask for a block when a window of it is read (``False`` where the sampler asks for the blocks ahead,
        through :meth:`PatchDataset.will_need`: the reading processes then do not ask again).

    Returns
    -------
    int
        The stores set.

    Examples
    --------
    >>> set_readahead(torch.utils.data.TensorDataset(torch.zeros(2)), 64)  # no store under it
    0
    """
    seen: set[int] = set()
    todo, n = [dataset], 0
    while todo:
        d = todo.pop()
        if id(d) in seen:
            continue
        seen.add(id(d))
        if isinstance(d, PatchDataset):
            for st in d.stores:
                st.readahead, st.advise_on_read = int(rows), bool(on_read)
                n += 1
            continue
        for name in ("ds", "dataset"):
            inner = getattr(d, name, None)
            if isinstance(inner, torch.utils.data.Dataset):
                todo.append(inner)
        todo.extend(x for x in getattr(d, "datasets", None) or () if isinstance(x, torch.utils.data.Dataset))
    return n


def will_need_hook(dataset: Any) -> Callable[[np.ndarray], None] | None:
    """A callable ``f(indices)`` that asks for ``dataset``'s samples ``indices`` ahead of their reads
    (:meth:`PatchDataset.will_need`), through wrappers that keep its numbering (``ScaledDataset``'s ``ds``) or map it
    (torch's ``Subset``); ``None`` for any other dataset.

    Parameters
    ----------
    dataset : torch.utils.data.Dataset
        The dataset a loader reads.

    Returns
    -------
    callable or None

    Examples
    --------
    >>> will_need_hook(torch.utils.data.TensorDataset(torch.zeros(2))) is None
    True
    """
    if isinstance(dataset, PatchDataset):
        return dataset.will_need
    if isinstance(dataset, torch.utils.data.Subset):
        inner = will_need_hook(dataset.dataset)
        if inner is None:
            return None
        mapping = np.asarray(dataset.indices, dtype=np.int64)
        return lambda idx: inner(mapping[np.asarray(idx, dtype=np.int64)])
    inner_ds = getattr(dataset, "ds", None)
    if isinstance(inner_ds, torch.utils.data.Dataset) and len(inner_ds) == len(dataset):  # type: ignore[arg-type]
        return will_need_hook(inner_ds)
    return None


#: the values of ``PatchDataset(batch_dtype=...)``
BATCH_DTYPES = ("float32", "stored")


def _shared_tensor(
    storage: torch.UntypedStorage, shape: tuple[int, ...], dtype: torch.dtype = torch.float32
) -> torch.Tensor:
    strides = tuple(int(np.prod(shape[i + 1 :])) for i in range(len(shape)))
    return torch.empty(0, dtype=dtype).set_(storage, 0, shape, strides)


class _SlotPool:
    """A DataLoader worker's batch buffers in shared memory, reused from batch to batch.

    Torch sends a worker's batch to the main process as a new shared-memory file per batch; filling its
    fresh pages costs more than reading the windows (page faults: ≈ 15 ms per 7 MB batch on the 2-core VM,
    against ≈ 1 ms to read it). Here a worker fills one of a few slots that stay mapped in both processes.
    The main process hands the batch on as it lies in the slot, without a copy (:func:`_receive_slot`: a tensor
    over the slot's memory), and hands the slot back through a pipe once nothing refers to that tensor any more
    (checked whenever a batch arrives): the worker writes a slot again only after the consumer has let go of its
    batch, so a batch kept (in a list, on a queue) never changes. A slot's storage handle and the pipe go with
    its batches until the worker has seen that slot handed back once; from then on the main process holds them
    (:data:`_PEERS`, until the worker exits). A slot is taken only when free; when none is (a consumer that
    keeps its batches, a larger batch, a collate that never hands slots back) the batch goes in ordinary
    memory, which torch sends as it sends any batch.
    """

    #: slots per worker: the batch the consumer holds, the one it held before (handed back when the next batch
    #: arrives), torch's ``prefetch_factor`` 2 in flight, and one to spare
    MAX_SLOTS = 5

    def __init__(self, nbytes: int) -> None:
        self.nbytes = nbytes
        self.storages: list[torch.UntypedStorage] = []
        self.free: list[bool] = []
        self.r, self.w = os.pipe()
        os.set_blocking(self.r, False)
        self.token = os.urandom(8)  # names this pool in the main process (:func:`_receive_slot`)
        #: slots handed back at least once: the main process holds their storage (and the pipe) from then on, so
        #: their batches are sent without them
        self.acked: list[bool] = []

    def take(self, nbytes: int) -> int | None:
        if nbytes > self.nbytes:
            return None
        try:
            for i in os.read(self.r, 4096):  # slots the main process has copied out
                self.free[i] = self.acked[i] = True
        except BlockingIOError:
            pass
        for i, ok in enumerate(self.free):
            if ok:
                self.free[i] = False
                return i
        if len(self.storages) >= self.MAX_SLOTS:
            return None
        self.storages.append(torch.UntypedStorage._new_shared(self.nbytes))
        self.free.append(False)
        self.acked.append(False)
        return len(self.storages) - 1


class _LocalPool:
    """Batch buffers of a process that reads its own batches (no DataLoader worker), reused once let go.

    A batch of 128 30-s windows (58 MB) is above the size glibc serves from its heap: each ``torch.empty`` of it
    would map fresh pages and fault them in (≈ 2 ms per MB on the 2-core VM, more than reading the windows). Here a
    batch is lent as a tensor of its own over one of a few buffers, and the buffer is lent again once nothing refers
    to that tensor (or a view of it): a batch kept never changes, it only makes the next one take other memory.
    """

    #: buffers kept: the batch in use, the one before it, and one to spare
    MAX = 3

    def __init__(self) -> None:
        self.buffers: list[tuple[torch.Tensor, Any]] = []  # (buffer, weak reference to the array lent over it)
        self.lock = threading.Lock()

    def lend(self, shape: tuple[int, ...], dtype: torch.dtype = torch.float32) -> torch.Tensor:
        n = int(np.prod(shape))
        with self.lock:
            for k, (buf, ref) in enumerate(self.buffers):
                if buf.dtype == dtype and buf.numel() >= n and (ref is None or ref() is None):
                    return self._over(k, buf, n, shape)
            if len(self.buffers) < self.MAX:
                self.buffers.append((torch.empty(n, dtype=dtype), None))
                return self._over(len(self.buffers) - 1, self.buffers[-1][0], n, shape)
            small = [k for k, (buf, ref) in enumerate(self.buffers) if ref is None or ref() is None]
            if small:  # a free buffer too small for this batch (or of another dtype): replaced by one that fits
                k = small[0]
                self.buffers[k] = (torch.empty(n, dtype=dtype), None)
                return self._over(k, self.buffers[k][0], n, shape)
        return torch.empty(shape, dtype=dtype)

    def _over(self, k: int, buf: torch.Tensor, n: int, shape: tuple[int, ...]) -> torch.Tensor:
        arr = buf.numpy()[:n].reshape(shape)  # holds the buffer; the tensor below holds it
        self.buffers[k] = (buf, weakref.ref(arr))
        return torch.from_numpy(arr)


#: the reused batch buffers of this process's own reads (a forked worker's copy is never lent: workers use slots)
_LOCAL = _LocalPool()

#: this worker process's slot pool (keyed by process id: a pool is never used across a fork)
_POOL: dict[int, _SlotPool] = {}


def _batch_tensor(
    shape: tuple[int, ...], pooled: bool = True, dtype: torch.dtype = torch.float32
) -> tuple[torch.Tensor, tuple | None]:
    """An uninitialised tensor of ``dtype`` and its slot: in a DataLoader worker, a free slot of the worker's
    :class:`_SlotPool` when ``pooled`` (a float16 batch takes half a float32 batch's bytes of a slot); else
    ordinary memory."""
    if torch.utils.data.get_worker_info() is None:
        return (_LOCAL.lend(shape, dtype) if pooled else torch.empty(shape, dtype=dtype)), None
    nbytes = int(np.prod(shape)) * torch.empty(0, dtype=dtype).element_size()
    # the pool's pipe and poll are POSIX; Linux is where it is tested (other platforms: torch's own transfer)
    if pooled and sys.platform.startswith("linux") and hasattr(torch.UntypedStorage, "_new_shared"):
        pool = _POOL.get(os.getpid())
        if pool is None:
            _POOL.clear()  # a pool inherited through a fork belongs to the parent
            pool = _POOL[os.getpid()] = _SlotPool(nbytes)
        i = pool.take(nbytes)
        if i is not None:
            return _shared_tensor(pool.storages[i], shape, dtype), (pool, i)
    # no free slot (or a collate that never hands slots back): ordinary memory, sent as torch sends any batch
    return torch.empty(shape, dtype=dtype), None


class _Peer:
    """Main process: a worker's pool, as received: the write end of its pipe, its slots' storages, and the slots
    whose batch the consumer may still hold (a weak reference to the array under that batch's tensor)."""

    __slots__ = ("fd", "storages", "lent")

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.storages: dict[int, torch.UntypedStorage] = {}
        self.lent: dict[int, weakref.ref] = {}


#: the workers' pools this process has received batches from, by token; a pool is forgotten (its storages
#: unmapped) once its worker has exited (its pipe has no reader)
_PEERS: dict[bytes, _Peer] = {}
#: batches are received by the main thread, or by each DataLoader's pin-memory thread
_PEERS_LOCK = threading.Lock()


def _hand_back_released() -> None:
    """Hand back (under :data:`_PEERS_LOCK`) every lent slot whose batch nothing refers to any more."""
    for token, peer in list(_PEERS.items()):
        done = [i for i, ref in peer.lent.items() if ref() is None]
        if not done:
            continue
        for i in done:
            del peer.lent[i]
        try:
            os.write(peer.fd, bytes(done))
        except OSError:  # the worker has exited: nobody to hand it back to
            os.close(_PEERS.pop(token).fd)


def _forget_exited() -> None:
    import select

    poll = select.poll()
    for peer in list(_PEERS.values()):
        poll.register(peer.fd, 0)  # a pipe whose reader is gone reports POLLERR
    gone = {fd for fd, ev in poll.poll(0) if ev & (select.POLLERR | select.POLLHUP | select.POLLNVAL)}
    for token in [t for t, peer in list(_PEERS.items()) if peer.fd in gone]:
        os.close(_PEERS.pop(token).fd)


def release_worker_buffers() -> int:
    """Main process: unmap the reused batch buffers of DataLoader workers that have exited (:class:`_SlotPool`).

    They are otherwise kept until a later loader's first batch arrives (at most 4 batches per worker). The
    :class:`~neurokit.training.trainer.Trainer` calls this when a run ends; call it after a loop of your own over
    a ``DataLoader(..., collate_fn=collate_patches, num_workers>0)`` to give the shared memory back at once.

    Returns
    -------
    int
        The workers whose buffers were released.

    Examples
    --------
    >>> release_worker_buffers()
    0
    """
    with _PEERS_LOCK:
        n = len(_PEERS)
        _hand_back_released()
        _forget_exited()
        return n - len(_PEERS)


def _receive_slot(
    storage: torch.UntypedStorage | None,
    token: bytes,
    free_fd: Any,
    slot: int,
    shape: tuple,
    y: np.ndarray,
    dtype: torch.dtype = torch.float32,
) -> list:
    """Main process: a batch sent in a worker's slot, as ``[x, y]`` with ``x`` over the slot's memory (no copy);
    the slot is lent until nothing refers to ``x`` (or a view of it), then handed back when a later batch arrives
    (:class:`_SlotPool`). ``storage`` and ``free_fd`` come until the worker has seen the slot handed back once
    (then they are kept here). A slot never handed back only makes the worker use ordinary memory."""
    fd = None
    if free_fd is not None:
        try:
            fd = free_fd.detach()
        except OSError:  # the worker has exited
            fd = None
    with _PEERS_LOCK:
        _hand_back_released()
        peer = _PEERS.get(token)
        if fd is not None and peer is None:
            _forget_exited()
            peer = _PEERS[token] = _Peer(fd)
        elif fd is not None:
            os.close(fd)
        if storage is None:
            if peer is None or slot not in peer.storages:
                raise RuntimeError("a DataLoader worker's batch names a shared buffer this process no longer holds")
            storage = peer.storages[slot]
        elif peer is not None:
            peer.storages[slot] = storage
        # a tensor of its own over the slot's memory: its storage holds this array (which holds the slot's
        # storage), so the array dies exactly when the last tensor viewing the batch does
        arr = _shared_tensor(storage, shape, dtype).numpy()
        x = torch.from_numpy(arr)
        if peer is not None:
            peer.lent[slot] = weakref.ref(arr)
    return [x, torch.from_numpy(y)]


class _SlotBatch:
    """What a worker sends for a batch in a slot: pickled as the slot's storage (torch's shared-memory handle),
    the pipe that frees it, and the labels; unpickled in the main process as ``[x, y]`` (:func:`_receive_slot`)."""

    def __init__(self, batch: "PatchBatch") -> None:
        self.batch = batch

    def __reduce__(self):
        from multiprocessing.reduction import DupFd

        b = self.batch
        pool, i = b.slot
        fd = None if any(pool.acked) else DupFd(pool.w)
        storage = None if pool.acked[i] else pool.storages[i]
        return (_receive_slot, (storage, pool.token, fd, i, tuple(b.x.shape), b.y.numpy(), b.x.dtype))


class PatchBatch(SequenceABC):
    """A batch read at once (:meth:`PatchDataset.__getitems__`): ``x`` ``(B, *sample_shape)`` float32 (or the
    stores' float16 under ``batch_dtype="stored"``) and ``y``
    ``(B,)``. As a sequence its items are ``(x[j], y[j])``, so ``torch.utils.data.default_collate`` stacks it
    like items read one by one; :func:`collate_patches` returns ``[x, y]`` without that copy.

    Attributes
    ----------
    x : torch.Tensor
        The samples.
    y : torch.Tensor
        Their labels.
    """

    __slots__ = ("x", "y", "slot")

    def __init__(self, x: torch.Tensor, y: torch.Tensor, slot: tuple | None = None) -> None:
        self.x, self.y, self.slot = x, y, slot

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, j):  # type: ignore[override]
        if isinstance(j, slice):
            return [(self.x[i], self.y[i]) for i in range(*j.indices(len(self)))]
        return self.x[j], self.y[j]

    def float32(self) -> "PatchBatch":
        """This batch with ``x`` in float32: itself when it is already, else a float32 copy (for a host-side step
        that computes in float32, such as a corpus scale), whose reading process takes its buffer back at once (use
        the copy, not this batch, afterwards).

        Returns
        -------
        PatchBatch

        Examples
        --------
        >>> PatchBatch(torch.ones(2, 3, dtype=torch.float16), torch.zeros(2)).float32().x.dtype
        torch.float32
        """
        if self.x.dtype == torch.float32:
            return self
        x = self.x.float()
        if self.slot is not None:  # this worker's slot: nothing refers to its float16 batch any more
            pool, i = self.slot
            pool.free[i] = True
        return PatchBatch(x, self.y)


def collate_patches(batch: Any) -> Any:
    """``collate_fn`` of a DataLoader over patch datasets: a :class:`PatchBatch` becomes ``[x, y]`` as it was read
    (no stacking copy); anything else (items read one by one) goes to ``torch.utils.data.default_collate``.

    Parameters
    ----------
    batch : PatchBatch or list of (x, y)
        What the DataLoader read for one batch: a :class:`PatchBatch` from a dataset's ``__getitems__``, or the
        items one by one.

    Returns
    -------
    list of [x, y]
        ``x`` of shape ``(B, *sample shape)`` (float32) and ``y`` of shape ``(B,)``.

    Examples
    --------
    >>> collate_patches([(torch.zeros(2), torch.tensor(0)), (torch.ones(2), torch.tensor(1))])[0].shape
    torch.Size([2, 2])
    >>> dl = torch.utils.data.DataLoader(ds, batch_size=16, collate_fn=collate_patches)  # doctest: +SKIP
    >>> x, y = next(iter(dl))  # doctest: +SKIP
    """
    if isinstance(batch, PatchBatch):
        if batch.slot is not None and torch.utils.data.get_worker_info() is not None:
            return _SlotBatch(batch)  # reaches the main process as [x, y]
        return [batch.x, batch.y]
    return torch.utils.data.default_collate(batch)


#: the files whose NaN targets were said to be left out (once per file as it is on disk)
_NAN_TARGETS_SAID: set = set()


def _say_nan_targets(st: PatchStore) -> None:
    """One line per store file whose float targets hold NaN (the unlabelled mark of a regression store): how many
    samples that leaves out of its labelled samples."""
    if st.labels.dtype.kind != "f" or st.identity in _NAN_TARGETS_SAID:
        return
    n = int(np.isnan(st.labels).sum())
    if n:
        _NAN_TARGETS_SAID.add(st.identity)
        logger.warning("%s: %d of %d target(s) are NaN: those samples are unlabelled and left out", st.path, n, len(st))


def open_labelled(store) -> tuple[PatchDataset, list[str], int, str]:
    """The labelled samples of ``store`` (path(s)) with class names, class count and task kind.

    Parameters
    ----------
    store : str | pathlib.Path | sequence of str or pathlib.Path
        A labelled patch store (``.h5`` file or shard-set folder) written by ``neuro prepare``, or several stores
        of one task read as one.

    Returns
    -------
    dataset : PatchDataset
        Every labelled sample (``labelled=True``).
    label_names : list of str
        The class names the store records (empty for a regression).
    n_classes : int
        The number of classes (from the names, else from the largest label).
    kind : {"binary", "multiclass", "regression"}
        The task's kind (:func:`~neurokit.data.splits.task_kind`).

    Raises
    ------
    ConfigError
        The store holds no labelled sample.
    FileNotFoundError
        No store at a path given.

    Examples
    --------
    >>> ds, names, n_classes, kind = open_labelled("lr.h5")  # doctest: +SKIP
    >>> names, kind  # doctest: +SKIP
    (['left_fist', 'right_fist'], 'binary')
    """
    stores = list(store) if isinstance(store, (list, tuple)) else [store]
    ds_all = PatchDataset(stores, labelled=True)
    if len(ds_all) == 0:
        raise ConfigError(
            f"{', '.join(map(str, stores))}: no labelled samples (prepare the store with a labelled task)"
        )
    label_names = list(ds_all.info.label_names)
    labels = ds_all.stores[0].labels
    n_classes = class_count(labels, label_names)
    return ds_all, label_names, n_classes, task_kind(labels, n_classes)
