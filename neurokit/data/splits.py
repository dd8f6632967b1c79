"""Train/validation/test splits (by subject from the card, or by run for one subject), the task kind of a
labelled store, and the leak check every split and fold passes before training."""

from __future__ import annotations

import logging
from typing import Sequence

import numpy as np

from neurokit._utils.errors import ConfigError

logger = logging.getLogger("neurokit")


def class_count(labels: np.ndarray, label_names: Sequence[str] = ()) -> int:
    """The number of classes of a store's labels: its class names, else the largest label + 1.

    Parameters
    ----------
    labels : ndarray, shape (n_samples,)
        int64 class indices (-1: unlabelled) or float targets (NaN: unlabelled, left out here).
    label_names : sequence of str
        The store's class names (may be empty).

    Returns
    -------
    int
        ``len(label_names)`` when there are names; else one more than the largest known label (0 when none is).

    Examples
    --------
    >>> class_count(np.array([0, 2, -1])), class_count(np.array([0.5, np.nan])), class_count(np.array([1]), ["a", "b"])
    (3, 1, 2)
    """
    if len(label_names):
        return len(label_names)
    known = labels[~np.isnan(labels)] if labels.dtype.kind == "f" else labels
    return int(known.max()) + 1 if len(known) else 0


def task_kind(labels: np.ndarray, n_classes: int) -> str:
    if labels.dtype.kind == "f":
        return "regression"
    return "binary" if n_classes == 2 else "multiclass"


def resolve_splits(ds_all, override: dict[str, list[str]] | None = None) -> tuple[str, dict[str, dict]]:
    """Split definitions as PatchDataset filters: by subject from the card, or by run for one subject.

    Returns ``(how, {"train": {...}, "val": {...}, "test": {...}})`` where each value holds the keyword
    arguments (``subjects=`` or ``runs=``) for :class:`PatchDataset`.
    """
    subjects = sorted({str(s) for s in ds_all.meta("subject")})
    if override:
        override = {k: store_ids(v, subjects) for k, v in override.items()}  # --train-subjects 1 → sub-01
        _check_disjoint(override)
        return "subject", {k: {"subjects": v} for k, v in override.items()}
    from neurokit.cards import DataCard

    info = ds_all.info
    body = info.card_body
    if len(subjects) == 1:
        runs = sorted({str(r) for r in ds_all.meta("run")})
        card_runs = _card_run_splits(body, info.task, runs)
        if card_runs is not None:  # the card splits recordings (split_unit: run): its split, even for one subject
            return "run", card_runs
        if len(runs) < 3:
            raise ConfigError(f"one subject and {len(runs)} run(s): need >= 3 runs to split train/val/test by run")
        return "run", {"train": {"runs": runs[:-2]}, "val": {"runs": [runs[-2]]}, "test": {"runs": [runs[-1]]}}
    if not body:
        raise ConfigError(
            "the store names no data card to split it by: pass splits={'train': [...], 'val': [...], 'test': [...]} "
            "(CLI: --train-subjects, --val-subjects and --test-subjects)"
        )
    card = DataCard(name=body["name"], raw=body)
    sp = card.splits(info.task)
    unit = card.split_unit(info.task)  # "run": the card's rule splits recordings (as the release's own split)
    have = subjects if unit == "subject" else sorted({str(r) for r in ds_all.meta("run")})
    out = {}
    for k in ("train", "val", "test"):
        chosen = [s for s in sp.get(k, []) if s in set(have)]
        if not chosen:
            raise ConfigError(
                f"split {k!r} of card {card.name!r} has no {unit} in the store (store {unit}s: "
                f"{have[:20]}{' …' if len(have) > 20 else ''}); "
                "pass explicit splits (CLI: --train-subjects/--val-subjects/--test-subjects)"
            )
        out[k] = {"subjects": chosen} if unit == "subject" else {"runs": chosen}
    return unit, out


def _card_run_splits(body: dict | None, task: str | None, runs: list[str]) -> dict[str, dict] | None:
    """The card's split of recordings (``split_unit: run``) as ``runs=`` filters, when every part of it has a
    run in the store; else ``None``."""
    from neurokit.cards import DataCard

    if not body or not ((body.get("tasks") or {}).get(task) or {}).get("splits"):
        return None
    card = DataCard(name=body.get("name", "?"), raw=body)
    if card.split_unit(task) != "run":
        return None
    sp = card.splits(task)
    out = {k: [r for r in sp.get(k, []) if r in set(runs)] for k in ("train", "val", "test")}
    return {k: {"runs": v} for k, v in out.items()} if all(out.values()) else None


def split_counts(ds_all) -> dict[str, int] | None:
    """Samples per split of the store's card task (``{"train": n, "val": n, "test": n}``), by the card's subjects
    (or recordings, ``split_unit: run``); ``None`` when the store's card gives no splits.

    Parameters
    ----------
    ds_all : PatchDataset
        The whole store (or shard set).

    Examples
    --------
    >>> split_counts(PatchDataset("tuab.h5"))  # doctest: +SKIP
    {'train': 297103, 'val': 75407, 'test': 36945}
    """
    from neurokit.cards import DataCard

    body = ds_all.info.card_body
    task = (body.get("tasks") or {}).get(ds_all.info.task) if body else None
    if not task or not task.get("splits"):
        return None
    card = DataCard(name=body.get("name", "?"), raw=body)
    sp = card.splits(ds_all.info.task)
    col = ds_all.meta("subject" if card.split_unit(ds_all.info.task) == "subject" else "run").astype(str)
    return {k: int(np.isin(col, [str(x) for x in sp.get(k, [])]).sum()) for k in ("train", "val", "test")}


def _check_disjoint(splits: dict[str, list[str]]) -> None:
    train = set(splits.get("train", []))
    for k in ("val", "test"):
        both = sorted(train & set(splits.get(k, [])))
        if both:
            raise ConfigError(f"subjects {both} are in both 'train' and {k!r}: the {k} score would leak training data")
    both = sorted(set(splits.get("val", [])) & set(splits.get("test", [])))
    if both:
        logger.warning("subjects %s are in both 'val' and 'test': model selection sees the test subjects", both)


def check_training_classes(labels: np.ndarray, label_names, split_kw: dict) -> None:
    """Refuse a classification training split that holds one class only: no classifier (network or baseline)
    can learn from it. Regression targets (float) pass.

    Parameters
    ----------
    labels : int array ``(n,)``
        Class indices of the training split.
    label_names : sequence of str
        The store's class names, for the message.
    split_kw : dict
        The training split's selection (``{"subjects": [...]}`` or ``{"runs": [...]}``), for the message.

    Raises
    ------
    ConfigError
        One class, named with its sample count, the split and the option that chooses another.

    Examples
    --------
    >>> check_training_classes(np.array([0, 0]), ["rest", "task"], {"subjects": ["S1"]})
    Traceback (most recent call last):
    ...
    neurokit._utils.errors.ConfigError: split 'train' holds one class only ('rest', 2 samples of subjects S1): a classifier cannot learn from it; choose training subjects (runs) that hold every class with splits={'train': [...], ...} (CLI: --train-subjects)
    """
    labels = np.asarray(labels)
    if labels.dtype.kind not in "iu" or len(np.unique(labels)) >= 2:
        return
    names = list(label_names or [])
    c = int(labels[0])
    one = names[c] if c < len(names) else f"class {c}"
    where = "; ".join(f"{k} {', '.join(map(str, v))}" for k, v in split_kw.items())
    raise ConfigError(
        f"split 'train' holds one class only ({one!r}, {len(labels)} samples of {where}): a classifier cannot "
        "learn from it; choose training subjects (runs) that hold every class with splits={'train': [...], ...} "
        "(CLI: --train-subjects)"
    )


def check_no_leak(ds, split_kw: dict[str, dict], unit: str = "subject") -> None:
    """Refuse a split whose test (or validation) set shares data with its training set.

    ``unit`` is what may not be shared: ``"subject"``, ``"session"`` (subject + session), ``"run"``
    (subject + session + run) or ``"window"`` (the same sample, or windows of one run overlapping in
    time, by ``onset`` and the recipe's ``window_s``). Shared validation/test units only warn (model
    selection then sees the test data).

    Raises
    ------
    ConfigError
        Naming the shared units and the splits.
    """
    if unit not in ("subject", "session", "run", "window"):
        raise ConfigError(f"unit={unit!r}; allowed: subject, session, run, window")
    parts = {k: type(ds)(ds.stores, labelled=True, **kw) for k, kw in split_kw.items()}
    cols = {k: sample_columns(d) for k, d in parts.items()}

    def keys(c, depth):
        fields = [c["subject"].astype(str).tolist(), c["session"].astype(str).tolist(), c["run"].astype(str).tolist()][
            :depth
        ]
        return set(zip(*fields))

    def shared(a: str, b: str, unit: str) -> list:
        if a not in cols or b not in cols:
            return []
        depth = {"subject": 1, "session": 2, "run": 3, "window": 3}[unit]
        if unit != "window":
            return sorted(keys(cols[a], depth) & keys(cols[b], depth))
        both = sorted(set(cols[a]["id"]) & set(cols[b]["id"]))
        if both:
            return [f"sample {i}" for i in both[:5]]
        win = ds.info.window_s
        out = []
        for key in keys(cols[a], 3) & keys(cols[b], 3):  # windows of one run closer than a window length overlap
            on = [
                np.sort(
                    cols[x]["onset"][
                        (cols[x]["subject"] == key[0]) & (cols[x]["session"] == key[1]) & (cols[x]["run"] == key[2])
                    ]
                )
                for x in (a, b)
            ]
            pos = np.searchsorted(on[0], on[1])
            near = [abs(on[1][j] - on[0][p]) for j, p0 in enumerate(pos) for p in (p0 - 1, p0) if 0 <= p < len(on[0])]
            if near and min(near) < win - 1e-9:
                out.append(key)
        return sorted(out)

    what = {"subject": "subjects", "session": "(subject, session) pairs", "run": "runs", "window": "windows"}
    # validation comes from the training pool in the within-subject schemes: there it only has to
    # hold other windows; across subjects (and runs) it holds other units, as the test set does
    val_unit = unit if unit in ("subject", "run") else "window"
    for k, u in (("test", unit), ("val", val_unit)):
        both = shared("train", k, u)
        if both:
            names = [b[0] if isinstance(b, tuple) and len(b) == 1 else b for b in both]
            raise ConfigError(
                f"{what[u]} {names[:8]} are in both 'train' and {k!r}: the {k} score would leak training data"
            )
    both = shared("val", "test", unit)
    if both:
        logger.warning("%s %s are in both 'val' and 'test': model selection sees the test data", what[unit], both[:8])


def sample_columns(ds) -> dict[str, np.ndarray]:
    """Per-sample columns of ``ds``: ``id``, ``subject``, ``session``, ``run``, ``onset`` (s) and ``label``."""
    return {
        "id": ds.sample_ids,
        "subject": ds.meta("subject").astype(str),
        "session": ds.meta("session").astype(str),
        "run": ds.meta("run").astype(str),
        "onset": ds.meta("onset").astype(float),
        "label": ds.labels,
    }


def label_fraction_subset(
    labels: np.ndarray, subjects: np.ndarray, fraction: float, seed: int = 0, *, by_subject: bool = True
) -> tuple[np.ndarray, dict]:
    """The training samples a run keeps when it learns from ``fraction`` of its training labels.

    Stratified by class and seeded. Whole subjects are kept together (``mode="subjects"``) when the split is
    by subject (``by_subject``) and every class is held by at least ``1 / fraction`` training subjects, so that
    whole subjects can come near the fraction of each class; subjects are then taken in a seeded random order
    while some class they hold is short of ``max(1, round(fraction · n_c))`` windows. Otherwise
    (``mode="windows"``) each class's quota is shared among its subjects in proportion to their windows
    (largest remainders, ties broken at random) and drawn at random within each (class, subject) group.
    Every class keeps at least one window. A regression target counts as one class.

    Parameters
    ----------
    labels : array ``(n,)``
        Class indices (int) or regression targets (float) of the training split.
    subjects : array ``(n,)`` of str
        Subject of each training sample.
    fraction : float
        In ``(0, 1]``; 1 keeps everything.
    seed : int
        The run's seed: the same seed gives the same subset.
    by_subject : bool
        Whether the run's split is by subject (a split by run or a within-subject fold draws windows).

    Returns
    -------
    (keep, info) : int array of positions into ``labels`` (sorted), and a dict with ``fraction``, ``mode``
        (``"all"``, ``"subjects"`` or ``"windows"``), ``n_train_full``, ``n_train``, ``class_counts``
        (kept windows per class), ``subjects`` (the subjects kept) and ``n_subjects_full``.

    Raises
    ------
    ConfigError
        ``fraction`` outside ``(0, 1]``.

    Examples
    --------
    >>> keep, info = label_fraction_subset(np.array([0, 0, 1, 1]), np.array(["a", "b", "a", "b"]), 0.5, 0,
    ...                                    by_subject=False)
    >>> len(keep), info["class_counts"]
    (2, {'0': 1, '1': 1})
    """
    if not 0 < fraction <= 1:
        raise ConfigError(f"label_fraction={fraction}: must be in (0, 1] (CLI: --label-fractions, e.g. 0.02,0.1,1)")
    labels = np.asarray(labels)
    subjects = np.asarray(subjects).astype(str)
    n = len(labels)
    cls = labels.astype(np.int64) if labels.dtype.kind in "iu" else np.zeros(n, dtype=np.int64)
    classes = np.unique(cls)
    all_subjects = np.unique(subjects)
    if fraction >= 1:
        keep = np.arange(n)
        mode = "all"
    else:
        rng = np.random.default_rng(seed)
        quota = {c: max(1, int(round(fraction * int((cls == c).sum())))) for c in classes}
        holders = {c: np.unique(subjects[cls == c]) for c in classes}
        if by_subject and all(len(holders[c]) * fraction >= 1 for c in classes):
            mode = "subjects"
            got = dict.fromkeys(classes, 0)
            chosen = []
            for s in rng.permutation(all_subjects):
                held = {c: int(((subjects == s) & (cls == c)).sum()) for c in classes}
                if any(held[c] and got[c] < quota[c] for c in classes):
                    chosen.append(s)
                    for c in classes:
                        got[c] += held[c]
                if all(got[c] >= quota[c] for c in classes):
                    break
            keep = np.flatnonzero(np.isin(subjects, chosen))
        else:
            mode = "windows"
            parts = []
            for c in classes:
                subj_c = holders[c]
                sizes = np.array([int(((subjects == s) & (cls == c)).sum()) for s in subj_c])
                share = quota[c] * sizes / sizes.sum()
                take = np.floor(share).astype(int)
                rest = quota[c] - take.sum()
                if rest > 0:  # largest remainders, ties at random
                    order = np.lexsort((rng.random(len(subj_c)), -(share - take)))
                    take[order[:rest]] += 1
                for s, k in zip(subj_c, np.minimum(take, sizes)):
                    if k:
                        pos = np.flatnonzero((subjects == s) & (cls == c))
                        parts.append(rng.choice(pos, size=k, replace=False))
            keep = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
    keep = np.sort(keep.astype(np.int64))
    info = {
        "fraction": float(fraction),
        "mode": mode,
        "n_train_full": int(n),
        "n_train": int(len(keep)),
        "class_counts": {str(c): int((cls[keep] == c).sum()) for c in classes},
        "subjects": sorted(np.unique(subjects[keep]).tolist()),
        "n_subjects_full": int(len(all_subjects)),
    }
    return keep, info


def store_ids(subjects: Sequence[str], known: Sequence[str]) -> list[str]:
    """Subjects as a store names them: an id the store has stays; a number it has not (``"1"``, or the CLI's ``S001``
    for ``--train-subjects 1``) becomes the one store id with that first number (BIDS ``sub-01``, ``001``), when
    exactly one has it; anything else stays (and is said unknown by the caller).

    Examples
    --------
    >>> store_ids(["S001", "S002", "sub-03"], ["sub-01", "sub-02", "sub-03"])
    ['sub-01', 'sub-02', 'sub-03']
    >>> store_ids(["S001"], ["S001", "sub-01"])
    ['S001']
    """
    import re

    have = {str(k) for k in known}
    by_number: dict[int, list[str]] = {}
    for k in sorted(have):
        m = re.search(r"[0-9]+", k)
        if m:
            by_number.setdefault(int(m.group(0)), []).append(k)
    out = []
    for s in map(str, subjects):
        m = re.fullmatch(r"S?([0-9]+)", s)  # a number as typed, or as the CLI writes it (S001); ids stay ids
        if s in have or m is None or len(by_number.get(int(m.group(1)), [])) != 1:
            out.append(s)
        else:
            out.append(by_number[int(m.group(1))][0])
    return out
