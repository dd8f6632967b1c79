"""Which samples a pretraining run learns from and which it holds out: the split of the stores' cards
(:func:`~neurokit.data.splits.resolve_splits`, as fine-tuning reads it), stores grouped by sample layout, and the
held-out windows, subjects or blocks of frames on which the masked loss is read beside its baselines.

Plain arguments throughout (``split``, ``subjects``, ``max_windows``, ``seed``, ``fraction``): the pretraining
pipeline passes its configuration's values.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

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


#: the mean autocorrelation below which two frames count as apart (:func:`correlation_time`): 1/e
CORRELATION_LEVEL = float(np.exp(-1.0))


@dataclass
class Holdout:
    """What :func:`split_heldout` held out: the training and held-out samples and how far apart they are.

    Attributes
    ----------
    train : PatchDataset
        The samples trained on.
    held : PatchDataset or None
        The held-out samples (``None``: nothing held out).
    phrase : str
        What was held out, for the log and the summary (``heldout``).
    apart : str
        How the held-out samples are kept apart from the training ones, for the held-out line: whole subjects,
        whole runs, or a block of frames with its gap and the correlation time it covers.
    unit : str
        ``"subjects"``, ``"runs"``, ``"frame block"``, ``"windows"`` or ``"nothing"``.
    gap_frames, correlation_frames : int or None
        Frame blocks: the fewest frames between a held-out frame and a training frame of the same run, and the
        longest correlation time (:func:`correlation_time`) of a run's training frames.
    """

    train: PatchDataset
    held: PatchDataset | None
    phrase: str
    apart: str = ""
    unit: str = "nothing"
    gap_frames: int | None = None
    correlation_frames: int | None = None

    def record(self) -> dict:
        """The summary's ``holdout`` entry: ``unit``, ``apart`` and, for frame blocks, ``gap_frames`` and
        ``correlation_frames``."""
        out: dict = {"unit": self.unit, "apart": self.apart}
        if self.gap_frames is not None:
            out.update(gap_frames=self.gap_frames, correlation_frames=self.correlation_frames)
        return out


def holdout_split(
    ds: PatchDataset, fraction: float, seed: int = 0, *, subjects: Sequence[str] | None = None
) -> tuple[PatchDataset, PatchDataset | None, str]:
    """:func:`split_heldout` as a tuple ``(train, heldout, phrase)``.

    Parameters
    ----------
    ds : PatchDataset
        The selected pretraining samples.
    fraction : float
        Share held out, in ``[0, 1)`` (0: nothing).
    seed : int
        Seed of the draw.
    subjects : sequence of str, optional
        Hold out exactly these subjects.

    Returns
    -------
    (train, heldout, phrase)

    Raises
    ------
    ConfigError
        As :func:`split_heldout`.

    Examples
    --------
    >>> train, val, how = holdout_split(PatchDataset("pool.h5"), 0.1)  # doctest: +SKIP
    """
    h = split_heldout(ds, fraction, seed, subjects=subjects)
    return h.train, h.held, h.phrase


def split_heldout(
    ds: PatchDataset, fraction: float, seed: int = 0, *, subjects: Sequence[str] | None = None
) -> Holdout:
    """Split the pretraining samples ``ds`` into a training part and a held-out part kept apart from it.

    Per corpus (:func:`~neurokit.data.corpus.corpus_ids`: a store, or one corpus of a pooled store): with at
    least :data:`MIN_HOLDOUT_SUBJECTS` subjects, ``max(1, round(fraction × subjects))`` whole subjects drawn at
    random (seeded) are held out. With fewer: EEG, ``round(fraction × windows)`` of its windows (at least one when
    it has two or more). Surface fMRI, whose frames one TR apart are nearly equal: with two recordings (runs) or
    more, ``max(1, round(fraction × runs))`` whole runs drawn at random (both hemispheres; one run at least stays
    in training); with one, a block of frames at the end of the run, after a gap at least as long as the
    correlation time of the run's training frames (:func:`frame_block_split`). The frames of the gap are neither
    trained on nor scored.

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
    Holdout
        ``held`` is ``None`` when ``fraction`` is 0 or nothing could be held out.

    Raises
    ------
    ConfigError
        ``subjects`` that hold none of the samples, or every one of them.

    Examples
    --------
    >>> h = split_heldout(PatchDataset("fsa5.h5"), 0.1)  # doctest: +SKIP
    >>> h.apart  # doctest: +SKIP
    'a block of frames at the end of each run, gap 6 frames ≥ correlation time 6 frames'
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
        phrase = f"{len(held)} windows (subjects {short_ids(sorted(set(subj[val])))}, as asked)"
        return Holdout(train, held, phrase, "whole subjects (as asked)", "subjects")
    if fraction <= 0 or len(ds) < 2:
        return Holdout(ds, None, "nothing (val_fraction=0)" if fraction <= 0 else "nothing (fewer than 2 windows)")
    rng = np.random.default_rng(seed)
    ids = ds.sample_ids
    corpus = corpus_ids(ds)
    subj = ds.meta("subject").astype(str)
    surface = ds.stores[0].modality == "surface"
    timeline = None
    val = np.zeros(len(ds), dtype=bool)
    drop = np.zeros(len(ds), dtype=bool)  # neither trained on nor held out (the gap before the held-out frames)
    parts, units = [], set()
    gaps: list[int] = []
    taus: list[int] = []
    for c in sorted(set(corpus)):
        rows = np.flatnonzero(corpus == c)
        subs = sorted(set(subj[rows]))
        if len(subs) >= MIN_HOLDOUT_SUBJECTS:
            pick = rng.choice(subs, max(1, round(fraction * len(subs))), replace=False)
            val[rows[np.isin(subj[rows], pick)]] = True
            parts.append(f"{len(pick)} of {len(subs)} subjects of {Path(c).name}: {short_ids(sorted(pick))}")
            units.add("subjects")
        elif surface and len(rows) >= 2:
            timeline = timeline or run_timeline(ds)  # gathered once for every corpus
            runs = sorted(set(timeline[1][rows]))
            if len(runs) >= 2:  # whole recordings: nothing held out is next to a training frame
                k = min(len(runs) - 1, max(1, round(fraction * len(runs))))
                pick = rng.choice(runs, k, replace=False)
                val[rows[np.isin(timeline[1][rows], pick)]] = True
                names = sorted(r.replace("\x00", "/").strip("/") for r in pick)
                parts.append(f"{k} of {len(runs)} runs of {Path(c).name}, whole: {short_ids(names)}")
                units.add("runs")
                continue
            block = frame_block_split(timeline, rows, fraction, frames_of=lambda r: run_frames(ds, r))
            val[block.held] = True
            drop[block.dropped] = True
            parts.append(f"{block.phrase} of {Path(c).name}")
            if block.gap_frames is not None and block.correlation_frames is not None:
                units.add("frame block")
                gaps.append(block.gap_frames)
                taus.append(block.correlation_frames)
        elif len(rows) >= 2:
            k = max(1, round(fraction * len(rows)))
            val[rng.choice(rows, k, replace=False)] = True
            parts.append(f"{k} of {len(rows)} windows of {Path(c).name}")
            units.add("windows")
    if not val.any() or (val | drop).all():
        if surface:
            why = "; ".join(parts) or "every run too short to hold out a block of frames and keep some to train on"
            return Holdout(ds, None, f"nothing ({why})")
        return Holdout(ds, None, "nothing (too few windows)")
    train = PatchDataset(ds.stores, samples=ids[~val & ~drop])
    held = PatchDataset(ds.stores, samples=ids[val])
    unit_words = "tubelets" if surface else "windows"
    apart = {
        "subjects": "whole subjects",
        "runs": "whole runs",
        "windows": "windows drawn at random from the training recordings (not apart in time)",
    }
    words = [apart[u] for u in ("subjects", "runs", "windows") if u in units]
    gap = tau = None
    if gaps:
        gap, tau = min(gaps), max(taus)
        words.append(f"a block of frames at the end of the run, gap {gap} frames ≥ correlation time {tau} frames")
    unit = units.pop() if len(units) == 1 else "mixed"
    return Holdout(train, held, f"{len(held)} {unit_words} ({'; '.join(parts)})", "; ".join(words), unit, gap, tau)


def correlation_time(frames: np.ndarray, level: float = CORRELATION_LEVEL) -> int:
    """The correlation time of a run's frames, in frames: the first lag at which the autocorrelation, averaged over
    the vertices (columns) that vary, falls below ``level`` (1/e).

    Each column's autocorrelation at lag ``L`` is ``Σ_t y_t·y_(t+L) / Σ_t y_t²`` with ``y`` the column minus its
    mean over the frames (the biased estimator, as for a periodogram); columns constant over the frames are left
    out.

    Parameters
    ----------
    frames : ndarray, shape (n_frames, n_vertices)
        Consecutive frames of one run, in time order.
    level : float
        The autocorrelation that counts as apart.

    Returns
    -------
    int
        The lag in frames; ``n_frames`` when the mean autocorrelation stays above ``level`` at every lag measured
        (a run too short to tell).

    Examples
    --------
    >>> t = np.arange(200.0)[:, None]
    >>> correlation_time(np.sin(2 * np.pi * t / 40) + np.zeros((1, 3)))  # a 40-frame cycle: cos(2πL/40) < 1/e at 8
    8
    """
    y = np.asarray(frames, dtype=np.float64)
    y = y - y.mean(axis=0)
    power = (y**2).sum(axis=0)
    live = power > 1e-12 * max(float(power.max(initial=0.0)), 1e-300)
    y, power = y[:, live], power[live]
    n = len(y)
    if not live.any():
        return n
    for lag in range(1, n):
        if float(np.mean((y[:-lag] * y[lag:]).sum(axis=0) / power)) < level:
            return lag
    return n


def run_frames(ds: PatchDataset, rows: np.ndarray) -> list[np.ndarray]:
    """The frames of the surface samples ``rows`` of ``ds`` (one run), one array per hemisphere, in time order and
    each frame once: what :func:`correlation_time` reads.

    Parameters
    ----------
    ds : PatchDataset
        Surface samples (tubelets ``(T, N, V)``).
    rows : int array
        Rows of ``ds``, all of one run.

    Returns
    -------
    list of ndarray, shape (n_frames, n_values)
        Per hemisphere (``hemi``; one when the store has none), the patch values of every frame the samples cover.

    Examples
    --------
    >>> [f.shape for f in run_frames(PatchDataset("fsa5.h5"), np.arange(16))]  # doctest: +SKIP
    [(48, 57600)]
    """
    rows = np.asarray(rows, dtype=np.int64)
    onset = ds.meta("onset").astype(float)[rows]
    hemi = ds.meta("hemi").astype(str)[rows] if "hemi" in ds.stores[0].meta.keys() else np.full(len(rows), "")
    tr = float(ds.info.tr or 1.0)
    if not np.isfinite(tr) or tr <= 0:
        tr = 1.0
    out = []
    for h in sorted(set(hemi)):
        frames: dict[int, np.ndarray] = {}
        for r, o in zip(rows[hemi == h], onset[hemi == h]):
            x = np.asarray(ds[int(r)][0], dtype=np.float32)
            for j in range(len(x)):
                frames.setdefault(int(round(o / tr)) + j, x[j].reshape(-1))
        out.append(np.stack([frames[k] for k in sorted(frames)]))
    return out


def run_timeline(ds: PatchDataset) -> tuple[np.ndarray, np.ndarray, float, float]:
    """What :func:`frame_block_split` reads of the surface samples of ``ds``, gathered once.

    Parameters
    ----------
    ds : PatchDataset
        Surface samples (tubelets).

    Returns
    -------
    (onset, run, span, tr)
        Each sample's onset ``(n,)`` (s); its run ``(n,)`` (subject, session and run joined; the frame blocks a
        card cuts one recording into, runs ``<run>b<k>``, count as their recording); the seconds a tubelet covers
        (TR × frames); the TR (s; 1 when the store states none).

    Examples
    --------
    >>> onset, run, span, tr = run_timeline(PatchDataset("fsa5.h5"))  # doctest: +SKIP
    """
    onset = ds.meta("onset").astype(float)
    have = set.intersection(*(set(st.meta.keys()) for st in ds.stores))
    keys = [ds.meta(k).astype(str) if k in have else np.full(len(ds), "") for k in ("subject", "session", "run")]
    task = (ds.info.card_body.get("tasks") or {}).get(ds.info.task) or {}
    if task.get("frame_blocks"):  # the card cut each recording into blocks, runs "<run>b<k>": one timeline again
        keys[2] = np.asarray([re.sub(r"b\d+$", "", r) for r in keys[2]])
    run = np.char.add(np.char.add(np.char.add(keys[0], "\x00"), np.char.add(keys[1], "\x00")), keys[2])
    tr = float(ds.info.tr or 1.0)
    if not np.isfinite(tr) or tr <= 0:
        tr = 1.0
    return onset, run, tr * int(ds.sample_shape[0]), tr


@dataclass
class FrameBlock:
    """What :func:`frame_block_split` held out.

    Attributes
    ----------
    held, dropped : int array
        Rows held out, and rows neither trained on nor held out (the gap).
    phrase : str
        Words for the log.
    gap_frames, correlation_frames : int or None
        The fewest frames between a held-out frame and a training frame of a run, and the longest correlation
        time of a run's training frames (``None`` when nothing was held out).
    """

    held: np.ndarray
    dropped: np.ndarray
    phrase: str
    gap_frames: int | None = None
    correlation_frames: int | None = None


def frame_block_split(
    timeline: tuple[np.ndarray, np.ndarray, float, float],
    rows: np.ndarray,
    fraction: float,
    *,
    frames_of: Callable[[np.ndarray], list[np.ndarray]],
) -> FrameBlock:
    """Hold out a whole block of frames at the end of every run of the surface samples ``rows``, after a gap at
    least as long as the correlation time of the run's training frames.

    Per run (subject, session, run; the frame blocks a card cuts one recording into, runs ``<run>b<k>``, count as
    their recording): the last ``max(1, round(fraction × onsets))`` distinct tubelet onsets of the run (every
    hemisphere's tubelets at those onsets) are held out. The training tubelets are those that end at least
    ``gap`` frames before the first held-out frame, ``gap`` the correlation time (:func:`correlation_time`, the
    largest of the run's hemispheres) of those training frames themselves: measured on every frame before the
    block, then again on the frames left after the gap until the gap covers it. The tubelets in between are
    neither trained on nor scored. A run whose correlation time leaves no training tubelet stays whole in training.

    Parameters
    ----------
    timeline : (onset, run, span, tr)
        :func:`run_timeline` of the dataset.
    rows : int array
        Rows of the dataset to split (one corpus).
    fraction : float
        Share of each run's tubelet onsets held out.
    frames_of : callable ``rows -> list of (n_frames, n_values) arrays``
        The frames of the samples ``rows`` (one run), per hemisphere, in time order (:func:`run_frames`).

    Returns
    -------
    FrameBlock

    Examples
    --------
    >>> onset = np.arange(20.0); run = np.array(["r"] * 20)
    >>> walk = lambda r: [np.sin(np.arange(len(r))[:, None] / 2.0) + np.zeros((1, 2))]  # correlation time 3 frames
    >>> b = frame_block_split((onset, run, 1.0, 1.0), np.arange(20), 0.1, frames_of=walk)
    >>> b.held.tolist(), b.dropped.tolist(), b.gap_frames, b.correlation_frames
    ([18, 19], [15, 16, 17], 3, 3)
    """
    onset, run, span, tr = timeline
    held, gap_rows = [], []
    firsts, n_on, k_on, gaps, taus, whole = [], [], [], [], [], []
    _, first_at, which = np.unique(run[rows], return_index=True, return_inverse=True)
    order = np.argsort(which, kind="stable")
    groups = np.split(rows[order], np.cumsum(np.bincount(which))[:-1])  # the rows of each run, in row order
    eps = 1e-6 * tr
    for g in np.argsort(first_at):  # runs in order of first appearance
        rr = groups[g]
        on = np.unique(onset[rr])
        k = max(1, round(fraction * len(on)))
        if k >= len(on):  # a run of one onset stays in training
            continue
        first = on[-k]
        gap, tau, train = 0, 0, rr[:0]
        for _ in range(32):  # the gap grows until it covers the correlation time of the frames left to train on
            train = rr[onset[rr] + span <= first - gap * tr + eps]
            if not len(train):
                break
            tau = max(correlation_time(f) for f in frames_of(train))
            if tau <= gap:
                break
            gap = tau
        if not len(train):  # nothing would be left to train on: keep the run whole
            whole.append(tau)
            continue
        actual = int(round((first - (onset[train] + span).max()) / tr))
        held += rr[onset[rr] >= first].tolist()
        gap_rows += rr[(onset[rr] < first) & ~np.isin(rr, train)].tolist()
        firsts.append(first)
        n_on.append(len(on))
        k_on.append(k)
        gaps.append(actual)
        taus.append(tau)
    if not held:
        why = "runs of one tubelet onset"
        if whole:
            why = f"correlation time ≥ {max(whole)} frames leaves no training frames before a gapped block"
        return FrameBlock(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), f"nothing ({why})")
    if len(set(firsts)) == 1:
        where = f"frames from {firsts[0]:g} s to the end of {len(firsts)} run(s)"
    else:
        where = f"the last frames of each of {len(firsts)} runs (from {min(firsts):g}–{max(firsts):g} s)"
    phrase = (
        f"{where}: {sum(k_on)} of {sum(n_on)} tubelet onsets, every hemisphere, whole blocks, after a gap of "
        f"{min(gaps)} frames ≥ the correlation time of the training frames ({max(taus)} frames: mean "
        f"autocorrelation below 1/e); {len(gap_rows)} tubelets in the gap neither trained on nor scored"
    )
    return FrameBlock(
        np.asarray(held, dtype=np.int64), np.asarray(gap_rows, dtype=np.int64), phrase, min(gaps), max(taus)
    )


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
