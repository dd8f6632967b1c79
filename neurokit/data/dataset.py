"""``torch.utils.data.Dataset`` over one or more patch stores, and its splits."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import torch

from neurokit._utils.errors import ConfigError
from neurokit.data.splits import check_no_leak, resolve_splits, store_ids, task_kind
from neurokit.io.headers import short_list
from neurokit.io.shards import open_stores
from neurokit.io.store import PatchStore, StoreMeta

logger = logging.getLogger("neurokit")


class PatchDataset(torch.utils.data.Dataset):
    """Samples of one or more :class:`~neurokit.io.store.PatchStore` files, optionally filtered.

    Parameters
    ----------
    stores : path, PatchStore, or a sequence of them
        A path may be a store file or a shard set's folder (:mod:`neurokit.io.shards`; read as its shards).
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

    Items are ``(x, y)``: ``x`` a float32 tensor of the store's sample shape (EEG ``(C, N, 200)`` in
    100 µV), ``y`` an int64 class index or float32 target (0-d tensors).

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
        for si, st in enumerate(self.stores):
            keep = np.ones(len(st), dtype=bool)
            if samples is not None:
                keep &= np.isin(np.arange(offset, offset + len(st)), np.asarray(samples, dtype=np.int64))
            offset += len(st)
            if subjects is not None:
                keep &= np.isin(st.meta["subject"].astype(str), [str(s) for s in subjects])
            if runs is not None:
                keep &= np.isin(st.meta["run"].astype(str), [str(r) for r in runs])
            if labelled:
                keep &= st.labels >= 0 if st.labels.dtype.kind in "iu" else np.isfinite(st.labels)
            rows = np.flatnonzero(keep)
            index.append(np.stack([np.full(len(rows), si, dtype=np.int64), rows.astype(np.int64)], axis=1))
        # (n, 2) int64 rows of (store, sample): 16 bytes a sample, however many shards
        self.index = np.concatenate(index) if index else np.zeros((0, 2), dtype=np.int64)

    @property
    def attrs(self) -> dict:
        """The first store's attributes, untyped (:attr:`info` is the typed form)."""
        return self.stores[0].attrs

    @property
    def info(self) -> StoreMeta:
        """The first store's metadata, typed (:class:`~neurokit.io.store.StoreMeta`); the stores of one
        dataset agree on modality, sample shape and channels (:func:`~neurokit.io.shards.open_stores`)."""
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
        return self._gather([st.meta[column] for st in self.stores])

    def __len__(self) -> int:
        return len(self.index)

    def split(self, splits: dict[str, list[str]] | None = None, *, labelled: bool = True) -> dict[str, "PatchDataset"]:
        """The train / val / test datasets of these samples, checked for leaks.

        Parameters
        ----------
        splits : dict of split name → subject ids, optional
            Explicit subjects; default the store's data card splits by subject, or, for a store of one
            subject, its runs (the last two runs for validation and test).
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
        x = torch.from_numpy(np.asarray(self.stores[s].patches(i), dtype=np.float32))
        if self.transform is not None:
            x = self.transform(x)
        return x, torch.as_tensor(self.stores[s].labels[i])


def open_labelled(store) -> tuple[PatchDataset, list[str], int, str]:
    """The labelled samples of ``store`` (path(s)) with class names, class count and task kind.

    Returns
    -------
    ``(dataset, label_names, n_classes, kind)``, ``kind`` one of ``"binary"``, ``"multiclass"``, ``"regression"``.

    Raises
    ------
    ConfigError
        The store holds no labelled sample.
    """
    stores = list(store) if isinstance(store, (list, tuple)) else [store]
    ds_all = PatchDataset(stores, labelled=True)
    if len(ds_all) == 0:
        raise ConfigError(
            f"{', '.join(map(str, stores))}: no labelled samples (prepare the store with a labelled task)"
        )
    label_names = list(ds_all.info.label_names)
    labels = ds_all.stores[0].labels
    n_classes = len(label_names) or int(labels.max()) + 1
    return ds_all, label_names, n_classes, task_kind(labels, n_classes)
