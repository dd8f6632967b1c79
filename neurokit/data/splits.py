"""Train/validation/test splits, the task kind of a labelled store, and the leak check every split and fold passes
before training.

A split is defined in the data card (``cards/``: fixed subject lists or ranges, recording ids with
``split_unit: run``, or a ``split_rule`` resolved when the store is prepared) and resolved for a store in one
function, :func:`resolve_splits`, which every consumer calls.
"""

from __future__ import annotations

import logging
from typing import Sequence

import numpy as np

from neurokit._utils.errors import CardError, ConfigError
from neurokit.cards import DataCard

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
    """The kind of a labelled store's task: ``"regression"`` (float targets), ``"binary"`` or ``"multiclass"``.

    Parameters
    ----------
    labels : array ``(n,)``
        Class indices (int) or regression targets (float).
    n_classes : int
        The store's class count.

    Returns
    -------
    str

    Examples
    --------
    >>> task_kind(np.array([0, 1, 1]), 2), task_kind(np.array([0, 2]), 3), task_kind(np.array([0.5]), 0)
    ('binary', 'multiclass', 'regression')
    """
    if labels.dtype.kind == "f":
        return "regression"
    return "binary" if n_classes == 2 else "multiclass"


#: the parts of a split, in order
SPLITS = ("train", "val", "test")
#: what a card's split may list (``split_unit``): subjects, or recordings (the store's ``run`` ids: a recording, a
#: trial index, a file of a ``sorted_files`` rule)
SPLIT_UNITS = ("subject", "run")


def store_card(ds_all) -> DataCard | None:
    """The data card a store (or the stores of a dataset) records, built once from its ``card_body``.

    Parameters
    ----------
    ds_all : PatchDataset
        The store(s); their first store's card is read.

    Returns
    -------
    DataCard or None
        ``None`` when the store records no card.

    Examples
    --------
    >>> store_card(PatchDataset("bcic2020_3.h5")).split_unit("imagined_speech")  # doctest: +SKIP
    'run'
    """
    body = ds_all.info.card_body
    if not body:
        return None
    return DataCard(name=str(body.get("name", "?")), raw=body)


def card_splits(card: DataCard | None, task: str | None) -> tuple[str, dict[str, list[str]]]:
    """What a card's ``task`` declares: ``(unit, {split: ids})`` with ids as the store names them.

    ``unit`` is ``"subject"`` (subject ids) or ``"run"`` (recording ids: the card's ``split_unit: run``, a trial
    index the reader gives as the run, or a ``split_rule`` resolved by recording when the store was prepared:
    :mod:`neurokit.cards.split_rules`).

    Parameters
    ----------
    card : DataCard or None
        The card (:func:`store_card`).
    task : str or None
        The card's task (``None``: its first task).

    Returns
    -------
    (str, dict)
        ``("subject", {})`` when there is no card, the task is not the card's, or it declares no splits.

    Raises
    ------
    CardError
        A ``split_unit`` other than ``subject`` or ``run``.

    Examples
    --------
    >>> from neurokit.cards import load_card
    >>> card_splits(load_card("bcic2020_3"), "imagined_speech")
    ('run', {'train': ['train'], 'val': ['val'], 'test': ['test']})
    >>> unit, sp = card_splits(load_card("bciciv2a"), None)
    >>> unit, sp["val"]
    ('subject', ['A06', 'A07'])
    """
    if card is None or not card.tasks or (task is not None and task not in card.tasks):
        return "subject", {}
    if not card.task(task)[1].get("splits"):
        return "subject", {}
    unit = card.split_unit(task)
    if unit not in SPLIT_UNITS:
        raise CardError(f"card {card.name!r}: split_unit {unit!r}; give one of {', '.join(SPLIT_UNITS)}")
    return unit, card.splits(task)


def resolve_splits(
    ds_all, override: dict[str, list[str]] | None = None, *, complete: bool = True
) -> tuple[str, dict[str, dict]]:
    """The train / validation / test parts of a store: the one place a split is resolved.

    In order: ``override`` (subjects, by subject); else the split the store's card declares for its task, by
    subject or by recording (:func:`card_splits`), kept to the ids the store holds; else, for a store of one
    subject, its runs (the last two for validation and test). Fine-tuning, the baselines, evaluation, the
    evaluation schemes, the confound check, multi-task training, pretraining's selection and the samples per split
    that ``prepare`` prints all take their split from here.

    Parameters
    ----------
    ds_all : PatchDataset
        The whole store (or shard set, or stores of one card task).
    override : dict of split name → subject ids, optional
        Explicit subjects (``{"train": [...], "val": [...], "test": [...]}``); numbers become the store's ids
        (:func:`store_ids`).
    complete : bool
        ``True``: every part must hold data (the card's split, else the one-subject split by run), or a
        ``ConfigError`` says what is missing. ``False``: the card's split as far as the store holds it, with
        parts that may be empty, and no split by run (``{}`` when the card declares none).

    Returns
    -------
    (how, parts)
        ``how`` is ``"subject"`` or ``"run"``; ``parts`` maps ``"train"``, ``"val"`` and ``"test"`` to the keyword
        arguments that select them in :class:`~neurokit.data.dataset.PatchDataset` (``{"subjects": [...]}`` or
        ``{"runs": [...]}``).

    Raises
    ------
    ConfigError
        (``complete``) A part with no subject (recording) in the store; no card split and more than one subject;
        one subject and fewer than 3 runs; ``override`` subjects in both training and validation or test.
    CardError
        A card ``split_unit`` other than ``subject`` or ``run``.

    Examples
    --------
    >>> resolve_splits(PatchDataset("bcic2020_3.h5"))  # doctest: +SKIP
    ('run', {'train': {'runs': ['train']}, 'val': {'runs': ['val']}, 'test': {'runs': ['test']}})
    >>> resolve_splits(PatchDataset("mi.h5"), {"train": ["1", "2"], "val": ["3"], "test": ["4"]})  # doctest: +SKIP
    ('subject', {'train': {'subjects': ['S001', 'S002']}, 'val': {'subjects': ['S003']}, 'test': {'subjects': ['S004']}})
    """
    subjects = sorted({str(s) for s in ds_all.meta("subject")})
    if override:
        override = {k: store_ids(v, subjects) for k, v in override.items()}  # subject 1 → sub-01
        _check_disjoint(override)
        return "subject", {k: {"subjects": v} for k, v in override.items()}
    card = store_card(ds_all)
    unit, declared = card_splits(card, ds_all.info.task)
    key = "subjects" if unit == "subject" else "runs"
    have = set(subjects) if unit == "subject" else {str(r) for r in ds_all.meta("run")}
    parts = {k: [x for x in declared.get(k, []) if x in have] for k in SPLITS}
    if not complete:
        return unit, ({k: {key: v} for k, v in parts.items()} if declared else {})
    if declared and all(parts.values()):
        return unit, {k: {key: v} for k, v in parts.items()}
    if len(subjects) == 1:  # one subject: its runs, when the card's split does not cover it
        runs = sorted({str(r) for r in ds_all.meta("run")})
        if len(runs) < 3:
            raise ConfigError(f"one subject and {len(runs)} run(s): need >= 3 runs to split train/val/test by run")
        return "run", {"train": {"runs": runs[:-2]}, "val": {"runs": [runs[-2]]}, "test": {"runs": [runs[-1]]}}
    explicit = "pass splits={'train': [...], 'val': [...], 'test': [...]}"
    if card is None:
        raise ConfigError(f"the store names no data card to split it by: {explicit}")
    if not declared:
        raise ConfigError(f"task {ds_all.info.task!r} of card {card.name!r} declares no splits: {explicit}")
    k = next(k for k in SPLITS if not parts[k])
    ids = sorted(have)
    raise ConfigError(
        f"split {k!r} of card {card.name!r} has no {unit} in the store (store {unit}s: "
        f"{ids[:20]}{' …' if len(ids) > 20 else ''}); {explicit}"
    )


def split_counts(ds_all) -> dict[str, int] | None:
    """Samples per split of the store's card task, as :func:`resolve_splits` reads the card (by subject, or by
    recording for ``split_unit: run``); a part the store lacks counts 0.

    Parameters
    ----------
    ds_all : PatchDataset
        The whole store (or shard set).

    Returns
    -------
    dict or None
        ``{"train": n, "val": n, "test": n}``; ``None`` when the store's card declares no splits.

    Raises
    ------
    CardError
        A card ``split_unit`` other than ``subject`` or ``run``.

    Examples
    --------
    >>> split_counts(PatchDataset("tuab.h5"))  # doctest: +SKIP
    {'train': 297103, 'val': 75407, 'test': 36945}
    """
    how, parts = resolve_splits(ds_all, complete=False)
    if not parts:
        return None
    col = ds_all.meta("subject" if how == "subject" else "run").astype(str)
    return {k: int(np.isin(col, next(iter(kw.values()))).sum()) for k, kw in parts.items()}


def _check_disjoint(splits: dict[str, list[str]]) -> None:
    train = set(splits.get("train", []))
    for k in ("val", "test"):
        both = sorted(train & set(splits.get(k, [])))
        if both:
            raise ConfigError(f"subjects {both} are in both 'train' and {k!r}: the {k} score would leak training data")
    # subjects shared by val and test are warned once, by check_no_leak, before training


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
    neurokit._utils.errors.ConfigError: split 'train' holds one class only ('rest', 2 samples of subjects S1): a classifier cannot learn from it; choose training subjects (runs) that hold every class with splits={'train': [...], ...}
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
        "learn from it; choose training subjects (runs) that hold every class with splits={'train': [...], ...}"
    )


def check_no_leak(ds, split_kw: dict[str, dict], unit: str = "subject") -> None:
    """Refuse a split whose test (or validation) set shares data with its training set.

    ``unit`` is what may not be shared: ``"subject"``, ``"session"`` (subject + session), ``"run"``
    (subject + session + run) or ``"window"`` (the same sample, or windows of one run overlapping in
    time, by ``onset`` and the recipe's ``window_s``). Shared validation/test units only warn (model
    selection then sees the test data).

    Parameters
    ----------
    ds : PatchDataset
        The whole labelled dataset the parts are drawn from.
    split_kw : dict of split name → dict
        Each part's selection (``{"subjects": [...]}``, ``{"runs": [...]}`` or ``{"samples": [...]}``), as
        :func:`resolve_splits` or an evaluation scheme's fold gives it.
    unit : {"subject", "session", "run", "window"}
        What the parts may not share.

    Raises
    ------
    ConfigError
        An unknown ``unit``; units shared by the training part and the test or validation part, named with the
        splits.

    Examples
    --------
    >>> check_no_leak(PatchDataset("mi.h5"), {"train": {"subjects": ["S001"]}, "test": {"subjects": ["S001"]}})  # doctest: +SKIP
    Traceback (most recent call last):
    ...
    neurokit._utils.errors.ConfigError: subjects ['S001'] are in both 'train' and 'test': the test score would leak training data
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
        names = [b[0] if isinstance(b, tuple) and len(b) == 1 else b for b in both]
        logger.warning("%s %s are in both 'val' and 'test': model selection sees the test data", what[unit], names[:8])


def sample_columns(ds) -> dict[str, np.ndarray]:
    """Per-sample columns of ``ds``: ``id``, ``subject``, ``session``, ``run``, ``onset`` (s) and ``label``.

    Parameters
    ----------
    ds : PatchDataset
        The samples.

    Returns
    -------
    dict of str → array ``(n,)``

    Examples
    --------
    >>> sorted(sample_columns(PatchDataset("mi.h5")))  # doctest: +SKIP
    ['id', 'label', 'onset', 'run', 'session', 'subject']
    """
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
        raise ConfigError(f"label_fraction={fraction}: must be in (0, 1] (label_fraction=, e.g. 0.02,0.1,1)")
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

    Parameters
    ----------
    subjects : sequence of str
        Subjects as given (ids or numbers).
    known : sequence of str
        The store's subject ids.

    Returns
    -------
    list of str
        ``subjects`` in the store's ids, in order.

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
