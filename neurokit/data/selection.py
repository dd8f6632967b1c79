"""Which samples a pretraining run learns from and which it holds out: the split of the stores' cards
(:func:`~neurokit.data.splits.resolve_splits`, as fine-tuning reads it), stores grouped by sample layout, and the
held-out windows, subjects or blocks of frames on which the masked loss is read beside its baselines.

Plain arguments throughout (``split``, ``subjects``, ``max_windows``, ``seed``, ``fraction``): the pretraining
pipeline passes its configuration's values.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Sequence

import numpy as np

from neurokit._utils.errors import ConfigError
from neurokit.data.corpus import corpus_ids
from neurokit.data.dataset import PatchDataset
from neurokit.data.splits import card_splits, resolve_splits, store_card
from neurokit.io.headers import short_list
from neurokit.store.shards import open_stores, store_corpus

#: a corpus with at least this many subjects holds out whole subjects; one with fewer, a share of its windows
MIN_HOLDOUT_SUBJECTS = 5
#: the values a pretraining ``split`` takes (``None`` and ``"all"``: every sample)
PRETRAIN_SPLITS = (None, "all", "train", "val", "test")


def short_ids(ids: Sequence[str]) -> str:
    """Ids in a short phrase: all of up to 8, else the first three, the last and the count.

    Parameters
    ----------
    ids : sequence of str
        Subject (or recording) ids.

    Returns
    -------
    str

    Examples
    --------
    >>> short_ids(["S1", "S2"])
    'S1, S2'
    >>> short_ids([f"S{i}" for i in range(1, 11)])
    'S1, S2, S3, …, S10 (10)'
    """
    ids = list(ids)
    return ", ".join(ids) if len(ids) <= 8 else f"{', '.join(ids[:3])}, …, {ids[-1]} ({len(ids)})"


def select_layouts(
    stores: Sequence,
    *,
    split: str | None = "train",
    subjects: Sequence[str] | None = None,
    max_windows: int | None = None,
    seed: int = 0,
) -> list[tuple[PatchDataset, str]]:
    """:func:`select_pretrain_data` for each group of ``stores`` that share a sample layout (modality, sample shape
    and channel names), in the order of their first store.

    Pretraining keeps every recording's channels, so stores of different montages train side by side, one layout
    per batch, instead of being cut into single channels.

    Parameters
    ----------
    stores : sequence of str, Path or PatchStore
        Store files or shard-set folders.
    split : {"train", "val", "test", "all"} or None
        The split of each store's card to select (:func:`select_pretrain_data`).
    subjects : sequence of str, optional
        These subjects instead of a split.
    max_windows : int, optional
        At most this many samples of each layout, drawn at random (seeded by ``seed``).
    seed : int
        Seed of that draw.

    Returns
    -------
    list of (PatchDataset, str)
        Each layout's selected samples and a phrase saying which (for the log and the CLI).

    Raises
    ------
    ConfigError
        As :func:`select_pretrain_data`.

    Examples
    --------
    >>> [phrase for _, phrase in select_layouts(["bonn.h5", "mi_21ch.h5"])]  # doctest: +SKIP
    ['500 samples of the train split (…)', '270 samples of the train split (…)']
    """
    groups: dict[tuple, list] = {}
    for s in stores:
        # a store file, or a shard-set folder (its shards share one layout), opened once here: its shards are
        # read when first used, each once (select_pretrain_data takes them as opened)
        opened = open_stores([s])
        st = opened[0]
        key = (st.modality, tuple(st.sample_shape), tuple(st.info.ch_names or ()))
        groups.setdefault(key, []).extend(opened)
    out = []
    for g in groups.values():
        ds, phrase = select_pretrain_data(g, split=split, subjects=subjects)
        if max_windows is not None and len(ds) > max_windows:
            pick = np.sort(np.random.default_rng(seed).choice(len(ds), max_windows, replace=False))
            ds = PatchDataset(ds.stores, samples=ds.sample_ids[pick])
            phrase = f"{max_windows} drawn at random of {phrase}"
        out.append((ds, phrase))
    return out


def select_pretrain_data(
    stores: Sequence, *, split: str | None = "train", subjects: Sequence[str] | None = None
) -> tuple[PatchDataset, str]:
    """The samples a pretraining run learns from, and a phrase saying which (for the log and the CLI).

    ``subjects`` when given; else the ``split`` part of the split fine-tuning uses
    (:func:`~neurokit.data.splits.resolve_splits`: the card's subjects, or its recordings for ``split_unit: run``,
    or a one-subject store's runs), so the validation and test data stay unseen; a store that holds only part of
    its card's split (more than one subject) gives the part it has. Every sample when ``split`` is ``"all"`` or
    ``None``, or the card's task defines neither splits nor classes.

    Parameters
    ----------
    stores : sequence of str, Path or PatchStore
        Stores of one sample layout.
    split : {"train", "val", "test", "all"} or None
        Which part of the card's split.
    subjects : sequence of str, optional
        These subjects instead of a split.

    Returns
    -------
    (PatchDataset, str)

    Raises
    ------
    ConfigError
        An unknown ``split``; no sample of ``subjects``; a split that cannot be resolved or holds none of the
        store's samples.

    Examples
    --------
    >>> ds, phrase = select_pretrain_data(["bcic2020_3.h5"])  # doctest: +SKIP
    >>> phrase  # doctest: +SKIP
    "4500 samples of the train split (runs train; the others stay unseen; split='all' to use every recording)"
    """
    if split not in PRETRAIN_SPLITS:
        raise ConfigError(f"split={split!r}; allowed: train, val, test, all")
    ds_all = PatchDataset(stores)
    subj = sorted({str(s) for s in ds_all.meta("subject")})
    if subjects is not None:
        ds = PatchDataset(ds_all.stores, subjects=list(subjects))
        if len(ds) == 0:
            raise ConfigError(
                f"no sample of subjects {short_list(subjects, 20)} in the store(s); subjects there: "
                f"{short_list(ds.store_subjects, 20)}"
            )
        return ds, f"{len(ds)} samples of subjects {short_ids(sorted({str(s) for s in ds.meta('subject')}))} (as asked)"
    card = store_card(ds_all)
    task = (card.tasks.get(str(ds_all.info.task)) if card is not None else None) or {}
    if split in (None, "all") or not (task.get("splits") or task.get("classes")):
        why = "split='all'" if split in (None, "all") else "the store's card task defines no splits"
        return ds_all, f"{len(ds_all)} samples of every subject ({short_ids(subj)}; {why})"
    # one subject: fine-tuning splits it by run when the card's split does not cover it, so pretraining must too;
    # several: the card's split as far as the store holds it (a store of the training subjects only pretrains)
    try:
        how, parts = resolve_splits(ds_all, complete=len(subj) == 1)
    except ConfigError as exc:
        raise ConfigError(f"{exc} (or pretrain on every sample: split='all')") from None
    ids = next(iter(parts[split].values())) if parts else []
    if not ids:
        unit, declared = card_splits(card, ds_all.info.task)
        have = subj if unit == "subject" else sorted({str(r) for r in ds_all.meta("run")})
        raise ConfigError(
            f"none of the store's {unit}s ({short_ids(have)}) is in the card's {split!r} split "
            f"({short_ids(declared.get(split, [])) or 'empty'}); choose subjects, or every subject with split='all'"
        )
    ds = PatchDataset(ds_all.stores, **parts[split])
    return ds, (
        f"{len(ds)} samples of the {split} split ({how}s {short_ids(ids)}; the others stay unseen; "
        f"split='all' to use every {'subject' if how == 'subject' else 'recording'})"
    )


def holdout_split(
    ds: PatchDataset, fraction: float, seed: int = 0, *, subjects: Sequence[str] | None = None
) -> tuple[PatchDataset, PatchDataset | None, str]:
    """Split the pretraining samples ``ds`` into a training part and a held-out part.

    Per corpus (:func:`~neurokit.data.corpus.corpus_ids`: a store, or one corpus of a pooled store): with at
    least :data:`MIN_HOLDOUT_SUBJECTS` subjects, ``max(1, round(fraction × subjects))`` whole subjects drawn at
    random (seeded) are held out. With fewer: EEG, ``round(fraction × windows)`` of its windows (at least one when
    it has two or more); surface fMRI, whose frames one TR apart are nearly equal, a whole block of frames at the
    end of every run (:func:`frame_block_split`: the last ``max(1, round(fraction × tubelets))`` tubelet onsets of
    the run, both hemispheres, and no training tubelet overlapping them).

    Parameters
    ----------
    ds : PatchDataset
        The selected pretraining samples.
    fraction : float
        Share held out, in ``[0, 1)`` (0: nothing).
    seed : int
        Seed of the draw.
    subjects : sequence of str, optional
        Hold out exactly these subjects (of every corpus) instead; ``fraction`` is then unused.

    Returns
    -------
    (train, heldout, phrase)
        ``heldout`` is ``None`` when ``fraction`` is 0 or nothing could be held out; the phrase says what was held
        out (for the log and the summary).

    Raises
    ------
    ConfigError
        ``subjects`` that hold none of the samples, or every one of them.

    Examples
    --------
    >>> train, val, how = holdout_split(PatchDataset("pool.h5"), 0.1)  # doctest: +SKIP
    >>> how  # doctest: +SKIP
    '465 windows (6 of 60 subjects of pooled.h5#bonn_epilepsy: A003, A011, A020, A034, A041, A057; 1 of 6 subjects of pooled.h5#physionet_mi: S004)'
    """
    if subjects is not None:
        subj = ds.meta("subject").astype(str)
        val = np.isin(subj, list(subjects))
        if not val.any() or val.all():
            raise ConfigError(
                f"heldout_subjects={','.join(subjects)}: {'none' if not val.any() else 'all'} of the selected "
                f"samples belong to them (selected subjects: {short_ids(sorted(set(subj)))})"
            )
        ids = ds.sample_ids
        train, held = PatchDataset(ds.stores, samples=ids[~val]), PatchDataset(ds.stores, samples=ids[val])
        return train, held, f"{len(held)} windows (subjects {short_ids(sorted(set(subj[val])))}, as asked)"
    if fraction <= 0 or len(ds) < 2:
        return ds, None, "nothing (val_fraction=0)" if fraction <= 0 else "nothing (fewer than 2 windows)"
    rng = np.random.default_rng(seed)
    ids = ds.sample_ids
    corpus = corpus_ids(ds)
    subj = ds.meta("subject").astype(str)
    surface = ds.stores[0].modality == "surface"
    timeline = None
    val = np.zeros(len(ds), dtype=bool)
    drop = np.zeros(len(ds), dtype=bool)  # neither trained on nor held out (overlapping the held-out frames)
    parts = []
    for c in sorted(set(corpus)):
        rows = np.flatnonzero(corpus == c)
        subs = sorted(set(subj[rows]))
        if len(subs) >= MIN_HOLDOUT_SUBJECTS:
            pick = rng.choice(subs, max(1, round(fraction * len(subs))), replace=False)
            val[rows[np.isin(subj[rows], pick)]] = True
            parts.append(f"{len(pick)} of {len(subs)} subjects of {Path(c).name}: {short_ids(sorted(pick))}")
        elif surface and len(rows) >= 2:
            timeline = timeline or run_timeline(ds)  # gathered once for every corpus
            held_rows, gap_rows, phrase = frame_block_split(timeline, rows, fraction)
            val[held_rows] = True
            drop[gap_rows] = True
            parts.append(f"{phrase} of {Path(c).name}")
        elif len(rows) >= 2:
            k = max(1, round(fraction * len(rows)))
            val[rng.choice(rows, k, replace=False)] = True
            parts.append(f"{k} of {len(rows)} windows of {Path(c).name}")
    if not val.any() or (val | drop).all():
        if surface:
            return ds, None, "nothing (every run too short to hold out a block of frames and keep some to train on)"
        return ds, None, "nothing (too few windows)"
    train = PatchDataset(ds.stores, samples=ids[~val & ~drop])
    held = PatchDataset(ds.stores, samples=ids[val])
    unit = "tubelets" if surface else "windows"
    return train, held, f"{len(held)} {unit} ({'; '.join(parts)})"


def run_timeline(ds: PatchDataset) -> tuple[np.ndarray, np.ndarray, float]:
    """What :func:`frame_block_split` reads of the surface samples of ``ds``, gathered once.

    Parameters
    ----------
    ds : PatchDataset
        Surface samples (tubelets).

    Returns
    -------
    (onset, run, span)
        Each sample's onset ``(n,)`` (s); its run ``(n,)`` (subject, session and run joined; the frame blocks a
        card cuts one recording into, runs ``<run>b<k>``, count as their recording); the seconds a tubelet covers
        (TR × frames).

    Examples
    --------
    >>> onset, run, span = run_timeline(PatchDataset("fsa5.h5"))  # doctest: +SKIP
    """
    onset = ds.meta("onset").astype(float)
    have = set.intersection(*(set(st.meta.keys()) for st in ds.stores))
    keys = [ds.meta(k).astype(str) if k in have else np.full(len(ds), "") for k in ("subject", "session", "run")]
    task = (ds.info.card_body.get("tasks") or {}).get(ds.info.task) or {}
    if task.get("frame_blocks"):  # the card cut each recording into blocks, runs "<run>b<k>": one timeline again
        keys[2] = np.asarray([re.sub(r"b\d+$", "", r) for r in keys[2]])
    run = np.char.add(np.char.add(np.char.add(keys[0], "\x00"), np.char.add(keys[1], "\x00")), keys[2])
    span = float(ds.info.tr or 1.0) * int(ds.sample_shape[0])
    return onset, run, span


def frame_block_split(
    timeline: tuple[np.ndarray, np.ndarray, float], rows: np.ndarray, fraction: float
) -> tuple[np.ndarray, np.ndarray, str]:
    """Hold out a whole block of frames at the end of every run of the surface samples ``rows``.

    Per run (subject, session, run; the frame blocks a card cuts one recording into, runs ``<run>b<k>``, count as
    their recording): the last ``max(1, round(fraction × onsets))`` distinct tubelet onsets of the run (every
    hemisphere's tubelets at those onsets) are held out; training tubelets whose frames reach into the held-out
    block (overlapping tubelets, ``stride`` < tubelet) are dropped from training, so no frame is in both. A run
    that would keep no training tubelet stays whole in training. Interleaved frames would not be held out: frames
    one TR apart are nearly equal.

    Parameters
    ----------
    timeline : (onset, run, span)
        :func:`run_timeline` of the dataset.
    rows : int array
        Rows of the dataset to split (one corpus).
    fraction : float
        Share of each run's tubelet onsets held out.

    Returns
    -------
    (held_rows, dropped_rows, phrase)
        Rows of the dataset, and words for the log, e.g.
        ``"frames from 54 s to the end of 1 run(s): 2 of 20 tubelet onsets, every hemisphere, whole blocks"``.

    Examples
    --------
    >>> onset = np.arange(10.0); run = np.array(["r"] * 10)
    >>> held, dropped, phrase = frame_block_split((onset, run, 2.0), np.arange(10), 0.2)
    >>> held.tolist(), dropped.tolist()
    ([8, 9], [7])
    """
    onset, run, span = timeline
    held, gap = [], []
    firsts, n_on, k_on = [], [], []
    _, first_at, which = np.unique(run[rows], return_index=True, return_inverse=True)
    order = np.argsort(which, kind="stable")
    groups = np.split(rows[order], np.cumsum(np.bincount(which))[:-1])  # the rows of each run, in row order
    for g in np.argsort(first_at):  # runs in order of first appearance
        rr = groups[g]
        on = np.unique(onset[rr])
        k = max(1, round(fraction * len(on)))
        if k >= len(on):  # a run of one onset stays in training
            continue
        first = on[-k]
        overlap = (onset[rr] < first) & (onset[rr] + span > first + 1e-9)
        if not (onset[rr] + span <= first + 1e-9).any():  # nothing would be left to train on: keep the run whole
            continue
        held += rr[onset[rr] >= first].tolist()
        gap += rr[overlap].tolist()
        firsts.append(first)
        n_on.append(len(on))
        k_on.append(k)
    if not held:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), "nothing (runs of one tubelet onset)"
    if len(set(firsts)) == 1:
        where = f"frames from {firsts[0]:g} s to the end of {len(firsts)} run(s)"
    else:
        where = f"the last frames of each of {len(firsts)} runs (from {min(firsts):g}–{max(firsts):g} s)"
    phrase = f"{where}: {sum(k_on)} of {sum(n_on)} tubelet onsets, every hemisphere, whole blocks" + (
        f", {len(gap)} overlapping training tubelets left out" if gap else ""
    )
    return np.asarray(held, dtype=np.int64), np.asarray(gap, dtype=np.int64), phrase


def layout_repeat(ds: PatchDataset, repeats: dict[str, int] | None) -> int:
    """How many times an epoch goes through the windows of ``ds``.

    Parameters
    ----------
    ds : PatchDataset
        One layout's samples.
    repeats : dict of str → int, optional
        Store file name (or path; a shard set by its folder) → count; 1 when none of the stores of ``ds`` is named.

    Returns
    -------
    int

    Raises
    ------
    ConfigError
        Two of its stores named with different counts.

    Examples
    --------
    >>> layout_repeat(PatchDataset("mi.h5"), {"mi.h5": 3})  # doctest: +SKIP
    3
    """
    paths = {store_corpus(st) for st in ds.stores}  # a shard set by its folder
    names = paths | {Path(p).name for p in paths}
    found = {k for n, k in (repeats or {}).items() if n in names}
    if len(found) > 1:
        raise ConfigError(f"layout_repeats: stores of one layout ({layout_name(ds)}) named with counts {sorted(found)}")
    return found.pop() if found else 1


def layout_name(ds: PatchDataset) -> str:
    """How a layout of a multi-layout run is named (its batches' ``task``): channel count and first store.

    Parameters
    ----------
    ds : PatchDataset
        One layout's samples.

    Returns
    -------
    str

    Examples
    --------
    >>> layout_name(PatchDataset("mi_21ch.h5"))  # doctest: +SKIP
    '21ch:mi_21ch.h5'
    """
    return f"{ds.sample_shape[0]}ch:{Path(store_corpus(ds.stores[0])).name}"


class Chained:
    """Batches of several loaders, one after the other, each time it is iterated (the held-out windows of every
    layout).

    Parameters
    ----------
    loaders : sequence of iterables
        The loaders, in order.

    Examples
    --------
    >>> list(Chained([[1, 2], [3]]))
    [1, 2, 3]
    """

    def __init__(self, loaders: Sequence) -> None:
        self.loaders = list(loaders)

    def __iter__(self):
        for loader in self.loaders:
            yield from loader
