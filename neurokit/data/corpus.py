"""Corpora inside a dataset, and scaling each by its own RMS (pretraining's ``normalize="corpus"``).

A corpus is one store (a shard set's folder counts as one store), or, in a pooled store (``neurokit.pipelines.quickstart.pool_single_channel``, attribute
``pooled_from``), one of the stores it pooled: its samples' subject ids are ``"<store stem>:<subject>"``.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import torch

from neurokit._utils.errors import ConfigError
from neurokit.store.patch_store import FLOAT16_MAX
from neurokit.store.shards import ShardStore, store_corpus

logger = logging.getLogger("neurokit")


def corpus_ids(ds) -> np.ndarray:
    """The corpus of each sample of ``ds`` (a :class:`~neurokit.data.dataset.PatchDataset`), ``(n,)`` strings:
    the store's path; a shard set's folder for each of its shards (a set is one corpus, as the single store of
    the same recordings is: :func:`~neurokit.store.shards.store_corpus`); for a pooled store
    ``"<path>#<origin store stem>"``.

    Parameters
    ----------
    ds : PatchDataset
        The samples (:class:`~neurokit.data.dataset.PatchDataset`, or a dataset with its ``index`` and ``stores``).

    Returns
    -------
    numpy.ndarray of str, shape (n,)
        The corpus of each sample, in sample order.

    Examples
    --------
    >>> corpus_ids(PatchDataset("pool.h5"))[:2]  # doctest: +SKIP
    array(['pool.h5#bonn_epilepsy_seizure', 'pool.h5#physionet_mi_left_right_imagery'], dtype='<U…')
    """
    idx = np.asarray(ds.index).reshape(-1, 2)
    if not len(idx):
        return np.zeros(0, dtype=str)
    # one name per store, looked up by each sample's store: O(samples + stores), however many shards
    names = np.asarray([store_corpus(st) for st in ds.stores], dtype=object)
    out = names[idx[:, 0]]
    for si, st in enumerate(ds.stores):
        if isinstance(st, ShardStore) or not st.attrs.get("pooled_from"):  # a shard is never a pooled store
            continue
        rows = idx[:, 0] == si
        if rows.any():
            subj = st.meta["subject"].astype(str)[idx[rows, 1]]
            out[rows] = [f"{st.path}#{s.split(':', 1)[0]}" for s in subj]
    return out.astype(str)


def corpus_scales(ds, max_windows: int = 4096, seed: int = 0) -> dict[str, float]:
    """RMS of every value of each corpus's samples in ``ds`` (the training windows): corpus → RMS, in the
    store's unit (100 µV for EEG). At most ``max_windows`` windows of a corpus are read (drawn at random, seeded),
    so the cost is bounded whatever the corpus's size (a shard set is one corpus: :func:`corpus_ids`).

    Parameters
    ----------
    ds : PatchDataset
        The samples (:class:`~neurokit.data.dataset.PatchDataset`, or a dataset with its ``index`` and ``stores``).
    max_windows : int
        The most windows read per corpus.
    seed : int
        Seed of the draw of windows (a corpus with more than ``max_windows``).

    Returns
    -------
    dict of str to float
        Corpus (:func:`corpus_ids`) → RMS, in the store's unit.

    Raises
    ------
    ConfigError
        A corpus whose windows are all zero (nothing to scale by).

    Examples
    --------
    >>> corpus_scales(PatchDataset("pool.h5"))  # doctest: +SKIP
    {'pool.h5#bonn_epilepsy_seizure': 1.73, 'pool.h5#physionet_mi_left_right_imagery': 0.12}
    """
    ids = corpus_ids(ds)
    rng = np.random.default_rng(seed)
    out = {}
    for c in sorted(set(ids)):
        rows = np.flatnonzero(ids == c)
        if len(rows) > max_windows:
            rows = np.sort(rng.choice(rows, max_windows, replace=False))
        s = k = 0.0
        for r in rows:
            x = np.asarray(ds[int(r)][0], dtype=np.float64)
            s += float((x * x).sum())
            k += x.size
        rms = float(np.sqrt(s / max(k, 1.0)))
        if not rms > 0:
            raise ConfigError(
                f"normalize=corpus: the windows of {c} are all zero; nothing to scale them by (check the store's "
                "recordings, or train with normalize='none')"
            )
        out[c] = rms
    return out


def heldout_scales(train, heldout=None, *, own: bool = False) -> dict[str, float]:
    """The divisor of every corpus of the training windows ``train`` and the held-out windows ``heldout``, from
    training data only: each training corpus's RMS (:func:`corpus_scales`); a held-out corpus with no training
    window (a second store held out whole) takes the pooled RMS of the training windows (every training corpus's
    RMS weighted by its windows), said in the log, since its own RMS is a statistic of held-out data.

    Parameters
    ----------
    own : bool
        Scale such a held-out corpus by its own RMS instead (said in the log).

    Returns
    -------
    dict corpus → divisor.

    Examples
    --------
    >>> heldout_scales(PatchDataset("a.h5"), PatchDataset("b.h5"))  # doctest: +SKIP
    {'a.h5': 1.73, 'b.h5': 1.73}
    """
    scales = corpus_scales(train)
    if heldout is None:
        return scales
    ids = corpus_ids(train)
    missing = sorted(set(corpus_ids(heldout)) - set(scales))
    if not missing:
        return scales
    if own:
        theirs = corpus_scales(heldout)
        for c in missing:
            logger.warning(
                "held-out corpus %s has no training window: scaled by its own RMS %.4g, as asked", c, theirs[c]
            )
            scales[c] = theirs[c]
        return scales
    n = {c: int((ids == c).sum()) for c in scales}
    pooled = float(np.sqrt(sum(n[c] * scales[c] ** 2 for c in scales) / max(sum(n.values()), 1)))
    for c in missing:
        logger.warning(
            "held-out corpus %s has no training window: scaled by the training windows' RMS %.4g (not its own, a "
            "statistic of held-out data; heldout_own_scale=True to use its own)",
            c,
            pooled,
        )
        scales[c] = pooled
    return scales


class ScaledDataset(torch.utils.data.Dataset):
    """``ds`` with each sample's ``x`` divided by its corpus's scale (``scales``: corpus → divisor, as
    :func:`corpus_scales` gives), in float32; samples read as stored from a float16 store
    (``PatchDataset(batch_dtype="stored")``) stay float16 (the float32 quotient rounded once), so their batches go to
    the device in half precision; a batch with a quotient beyond float16's range (a corpus scale below 1 and a value
    near ±65504) comes out in float32 instead, never as inf.

    Parameters
    ----------
    ds : PatchDataset
        The samples (:class:`~neurokit.data.dataset.PatchDataset`, or a dataset with its ``index`` and ``stores``).
    scales : dict of str to float
        Corpus → divisor (:func:`corpus_scales`, :func:`heldout_scales`), in the store's unit.

    Raises
    ------
    ConfigError
        A corpus of ``ds`` without a scale.

    Examples
    --------
    >>> sd = ScaledDataset(ds, corpus_scales(ds))  # doctest: +SKIP
    >>> float(sd[0][0].pow(2).mean().sqrt())  # about 1 for a typical window  # doctest: +SKIP
    """

    def __init__(self, ds, scales: dict[str, float]) -> None:
        self.ds = ds
        ids = corpus_ids(ds)
        missing = sorted(set(ids) - set(scales))
        if missing:
            raise ConfigError(f"normalize=corpus: no scale for corpus {missing[0]}")
        self.divisor = np.asarray([scales[c] for c in ids], dtype=np.float64)

    def __len__(self) -> int:
        return len(self.ds)

    def __getitem__(self, k: int) -> tuple[Any, Any]:
        x, y = self.ds[k]
        return _scaled(x, float(self.divisor[k])), y

    def __getitems__(self, indices) -> Any:
        """Items ``indices`` at once: the wrapped dataset's batch read (its ``__getitems__``, else item by item),
        each sample divided by its corpus's scale; equal to ``[self[k] for k in indices]`` (in value: a float16
        batch holding a sample beyond float16's range comes out in float32 throughout)."""
        from neurokit.data.dataset import PatchBatch

        get = getattr(self.ds, "__getitems__", None)
        batch = get(indices) if get is not None else [self.ds[k] for k in indices]
        div = self.divisor[np.asarray(indices, dtype=np.int64).reshape(-1)]
        if isinstance(batch, PatchBatch) and batch.x.dtype == torch.float16:
            fits = _fits_float16(batch.x, div)
            if fits.all():
                # a batch as stored (batch_dtype="stored") stays float16 for the device: each sample divided in
                # place, computed in float32 and rounded once to float16 (``__getitem__``'s value)
                for j, d in enumerate(div.tolist()):
                    batch.x[j].div_(float(d))
                return batch
            # a sample would leave float16's range: the batch goes in float32, each sample with the value its item
            # has (the quotient rounded to float16 where it fits, the float32 quotient where it does not)
            batch = batch.float32()
            for j, d in enumerate(div.tolist()):
                q = batch.x[j] / float(d)
                batch.x[j] = q.half().float() if fits[j] else q
            return batch
        if isinstance(batch, PatchBatch):  # in place, in float32 as x / float(d) computes it
            batch.x.div_(torch.from_numpy(div).to(batch.x.dtype).view(-1, *[1] * (batch.x.dim() - 1)))
            return batch
        items = [(_scaled(x, float(d)), y) for (x, y), d in zip(batch, div.tolist())]
        if len({x.dtype for x, _ in items}) > 1:  # float16 items beside a float32 one: one dtype for the batch
            items = [(x.float(), y) for x, y in items]
        return items


def _scaled(x: torch.Tensor, d: float) -> torch.Tensor:
    """``x / d`` computed in float32; a float16 ``x`` (a sample as stored) rounded back to float16 once, unless a
    value of the quotient lies beyond float16's range (then float32, as the float32 path gives it)."""
    y = x.float() / d
    if x.dtype == torch.float16 and _fits_float16(x[None], np.asarray([d]))[0]:
        return y.half()
    return y


def _fits_float16(x: torch.Tensor, div: np.ndarray) -> np.ndarray:
    """Bool ``(B,)``: whether every value of ``x[j] / div[j]`` (``x`` float16 ``(B, ...)``) stays within float16's
    range (:data:`~neurokit.store.patch_store.FLOAT16_MAX`). Only samples divided by less than 1 can leave it; their
    largest magnitude comes from ``torch.aminmax`` (no copy of the sample)."""
    div = np.asarray(div, dtype=np.float64)
    fits = np.ones(len(div), dtype=bool)
    for j in np.flatnonzero(div < 1.0).tolist():
        lo, hi = torch.aminmax(x[j])
        fits[j] = max(-float(lo), float(hi)) / float(div[j]) <= FLOAT16_MAX
    return fits
