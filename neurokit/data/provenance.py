"""What a store or a pretraining run was made from, by content: the source recordings (path + SHA-256) and the
windows kept, and the check that no test recording was in a model's pretraining data.

A store's ``sources`` attribute holds one entry per recording read: ``path``, ``sha256`` (of the file; an archive's
recordings share it and are told apart by ``member``) and, since this module, the ``subject``, ``session`` and ``run``
the recording was written under. Recordings compare by content: ``(sha256, member)``, whatever their path.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from neurokit.store.shards import read_index, store_corpus

logger = logging.getLogger("neurokit")

_KEEP = ("path", "sha256", "member", "subject", "session", "run")


def _key(src: dict) -> tuple[str, str]:
    return str(src.get("sha256") or ""), str(src.get("member") or "")


def _compact(src: dict, **extra) -> dict:
    return {**{k: src[k] for k in _KEEP if src.get(k) not in (None, "")}, **extra}


def used_sources(ds) -> list[dict]:
    """The source recordings of the samples of ``ds`` (a :class:`~neurokit.data.dataset.PatchDataset` or a subset
    of one): each store's ``sources`` entries whose ``subject`` (and ``session``/``run`` when recorded) is among
    the samples', deduplicated by content. Entries recorded without a subject (stores written before subjects
    were recorded) are all kept: which samples they gave cannot be told, so they count as used.

    Parameters
    ----------
    ds : PatchDataset
        The samples (a :class:`~neurokit.data.dataset.PatchDataset`, or a subset of one).

    Returns
    -------
    list of dict
        ``{"path", "sha256"[, "member", "subject", "session", "run"]}`` per recording, in store order.

    Examples
    --------
    >>> used_sources(PatchDataset("bonn.h5", subjects=["A"]))[0]["sha256"][:8]  # doctest: +SKIP
    '1b2c3d4e'
    """
    idx = np.asarray(ds.index).reshape(-1, 2)
    out: list[dict] = []
    seen: set = set()
    for si, st in enumerate(ds.stores):
        rows = idx[idx[:, 0] == si, 1]
        if not len(rows):
            continue
        cols = {c: st.meta[c].astype(str)[rows] for c in ("subject", "session", "run") if c in st.meta}
        units = set(zip(*(cols[c] for c in ("subject", "session", "run") if c in cols)))
        subjects = set(cols.get("subject", ()))
        for src in st.info.sources:
            if not isinstance(src, dict) or not src.get("sha256"):
                continue
            if src.get("subject") not in (None, ""):
                if str(src["subject"]) not in subjects:
                    continue
                if (
                    "session" in src
                    and "run" in src
                    and len(cols) == 3
                    and (str(src["subject"]), str(src["session"]), str(src["run"])) not in units
                ):
                    continue
            k = _key(src) + (str(src.get("path")),)
            if k not in seen:
                seen.add(k)
                out.append(_compact(src))
    return out


def pretraining_overlap(pretrained_on: Sequence[dict] | None, test_ds) -> list[dict] | None:
    """The recordings of ``test_ds`` (the test split) that were in a model's pretraining data, by content.

    Parameters
    ----------
    pretrained_on : list of dict or None
        The ``pretraining_sources`` a pretraining checkpoint records (``path``, ``sha256``[, ``member``]);
        ``None``: the model records none (from scratch, released weights): nothing to check.
    test_ds : PatchDataset
        The test samples.

    Returns
    -------
    ``None`` when nothing could be checked; else the list (empty: checked, no overlap) of
    ``{"path", "sha256"[, "member"], "pretrained_as"}`` for each test recording whose SHA-256 (and archive member)
    matches a pretraining source; ``pretrained_as`` is the path the pretraining recorded.

    Examples
    --------
    >>> pretraining_overlap([{"path": "/d/S1.edf", "sha256": "ab"}], test_ds)  # doctest: +SKIP
    [{'path': '/data/S1.edf', 'sha256': 'ab', 'subject': 'S1', 'pretrained_as': '/d/S1.edf'}]
    """
    if pretrained_on is None:
        return None
    pre: dict[tuple[str, str], str] = {}
    for s in pretrained_on:
        if isinstance(s, dict) and s.get("sha256"):
            pre.setdefault(_key(s), str(s.get("path")))
    out = []
    for src in used_sources(test_ds):
        hit = pre.get(_key(src))
        if hit is not None:
            out.append(_compact(src, pretrained_as=hit))
    return out


def check_split_recordings(
    parts: dict[str, Any], *, allow: bool = False, where: str = "", test: str = "test"
) -> dict[str, Any]:
    """The store's own splits checked against each other by content: a recording (SHA-256 and archive member)
    in two splits, e.g. a copy filed under another subject, beside :func:`pretraining_overlap`.

    Parameters
    ----------
    parts : dict
        Split name → :class:`~neurokit.data.dataset.PatchDataset` (``"train"``, ``"val"``, ``"test"``).
    allow : bool
        Score anyway a test split that holds a training or validation recording (CLI
        ``--allow-duplicate-recordings``); the result says so.
    where : str
        The run or checkpoint, for messages.
    test : str
        The name of the scored split.

    Returns
    -------
    dict
        ``{"checked": n recordings compared, "shared": [{"sha256", "member", "splits": {split: path}}], "allowed":
        bool}``; ``shared`` is empty when no recording is in two splits. Shared recordings that do not involve the
        test split are logged as a warning.

    Raises
    ------
    ConfigError
        The test split holds a recording of the training or validation split (naming both files), without ``allow``.

    Examples
    --------
    >>> check_split_recordings({"train": train_ds, "test": test_ds})  # doctest: +SKIP
    {'checked': 12, 'shared': [], 'allowed': False}
    """
    from neurokit._utils.errors import ConfigError

    # content → split → the recordings (path, subject, session, run) of that content it holds
    where_in: dict[tuple[str, str], dict[str, set[tuple[str, ...]]]] = {}
    for name, ds in parts.items():
        if ds is None:
            continue
        for src in used_sources(ds):
            ident = tuple(str(src.get(c) or "") for c in ("path", "subject", "session", "run"))
            where_in.setdefault(_key(src), {}).setdefault(name, set()).add(ident)
    shared: list[dict[str, Any]] = []
    for k, splits in where_in.items():
        idents = set().union(*splits.values())
        # one recording cut into several splits (by run blocks, or a split given twice) is the leak check's
        # business (neurokit.data.splits); here: the same content under two recordings, e.g. a copy
        if len(splits) < 2 or len(idents) < 2:
            continue
        anchor = sorted(splits.get(test) or next(iter(splits.values())))[0]  # the test split's recording

        paths = {
            n: anchor[0] if anchor in ids else (sorted(i for i in ids if i != anchor) or sorted(ids))[0][0]
            for n, ids in splits.items()
        }
        shared.append({"sha256": k[0], **({"member": k[1]} if k[1] else {}), "splits": paths})
    leak = [s for s in shared if test in s["splits"]]
    if leak and not allow:
        first = leak[0]["splits"]
        other = next(k for k in first if k != test)
        raise ConfigError(
            f"{where}: the {test} split holds {len(leak)} recording(s) that the {other} split holds too (same "
            f"SHA-256), e.g. {first[test]} and {first[other]}; its score would measure memory, not generalisation. "
            "Leave the copy out of the store (neuro prepare refuses it unless allow_duplicate_recordings=True), or "
            "score anyway with allow_duplicate_recordings=True (the report says so)"
        )
    for s in shared:
        if s not in leak or allow:
            logger.warning(
                "%s: one recording (SHA-256 %s…) is in splits %s: %s",
                where,
                s["sha256"][:12],
                ", ".join(s["splits"]),
                ", ".join(dict.fromkeys(s["splits"].values())),
            )
    return {"checked": len(where_in), "shared": shared, "allowed": bool(allow and leak)}


def warn_overlap(overlap: list[dict] | None, where: str) -> None:
    """Log a warning naming the test recordings that were in the pretraining data (nothing when none).

    Parameters
    ----------
    overlap : list of dict | None
        The result of :func:`pretraining_overlap` (``None`` or empty: nothing is logged).
    where : str
        The run or checkpoint, for the message.

    Examples
    --------
    >>> warn_overlap([], "runs/ft")
    >>> warn_overlap([{"path": "/data/S1.edf", "sha256": "ab"}], "runs/ft")  # logs a warning naming S1.edf
    """
    if overlap:
        names = ", ".join(Path(o["path"]).name + (f"[{o['member']}]" if o.get("member") else "") for o in overlap[:10])
        more = f" and {len(overlap) - 10} more" if len(overlap) > 10 else ""
        logger.warning(
            "%s: %d test recording(s) were in the model's pretraining data (same SHA-256): %s%s; "
            "the test score may be optimistic",
            where,
            len(overlap),
            names,
            more,
        )


def warn_shared_recordings(stores: Iterable) -> list[str]:
    """Warn when two of the pretraining ``stores`` were made from the same recording (by SHA-256 of the source
    file, each store's ``sources``): what one store holds out, the other may train on.

    Parameters
    ----------
    stores : iterable of PatchStore
        The opened stores of a run (a shard set's shards count as one store, named by its folder).

    Returns
    -------
    list of str
        The warnings logged, one per recording found in two stores (none: an empty list).
    """
    first: dict[str, str] = {}
    said = []
    for st in stores:
        for src in st.info.sources:
            sha = src.get("sha256") if isinstance(src, dict) else None
            if not sha:
                continue
            name = store_corpus(st)  # a shard set's shards are one store
            where = first.setdefault(sha, name)
            if where != name:
                said.append(
                    f"{Path(str(src.get('path', '?'))).name} is in both {where} and {name}: what one store holds "
                    "out may be trained on through the other; pretrain on one of them"
                )
    said = list(dict.fromkeys(said))
    for w in said:
        logger.warning("%s", w)
    return said


def store_names(stores: Iterable) -> list[str]:
    """The stores a run read, for its record: each store's path, a shard set once by its folder.

    Parameters
    ----------
    stores : iterable of PatchStore
        Opened stores, shards of a set included.

    Returns
    -------
    list of str
        Paths in the order first met, without repeats.
    """
    return list(dict.fromkeys(store_corpus(st) for st in stores))


#: the store attributes a model's checkpoint records of the data it was trained on
RECORDED_ATTRS = ("modality", "ch_names", "sfreq", "units", "task", "label_names", "grid", "mesh", "tr", "hemisphere")


def data_record(ds) -> dict[str, Any]:
    """What a checkpoint records of the data a model was trained on, so that a resumed run, fine-tuning and
    evaluation can check they read data of the same kind.

    Parameters
    ----------
    ds : PatchDataset
        The training samples (:class:`~neurokit.data.dataset.PatchDataset`).

    Returns
    -------
    dict
        ``card`` and ``card_body`` (the store's data card), ``recipe`` (its preprocessing), ``store_attrs`` (the
        store attributes of :data:`RECORDED_ATTRS` it has), ``stores`` (:func:`store_names`), ``subjects`` (sorted)
        and ``sample_shape``.
    """
    a = ds.attrs
    return {
        "card": a.get("card"),
        "card_body": a.get("card_body"),
        "recipe": a.get("recipe"),
        "store_attrs": {k: a.get(k) for k in RECORDED_ATTRS if k in a},
        "stores": store_names(ds.stores),
        "subjects": sorted({str(s) for s in ds.meta("subject")}),
        "sample_shape": list(ds.sample_shape),
    }


def kept_summary(stores: Iterable) -> dict[str, Any]:
    """How many windows the preparation of ``stores`` (:class:`~neurokit.store.patch_store.PatchStore`\\ s) kept and why
    it dropped the others, from what the stores record.

    Parameters
    ----------
    stores : iterable of PatchStore
        Opened stores (a shard set's shards: the set's index adds the recordings whose windows were all rejected).

    Returns
    -------
    dict
        ``kept`` (windows in the stores), ``rejected`` (dropped by amplitude), ``kept_fraction``
        (``kept / (kept + rejected)``, ``None`` when nothing was cut), ``reject_uv`` (the recipe's threshold in
        µV, ``None`` when off; a list when the stores differ), ``reasons`` ({reason phrase: count}),
        ``recordings_dropped`` (recordings shorter than the recipe's ``min_duration_s``), ``recordings_skipped``
        (recordings ``skip_bad`` passed over) and ``files_with_rejections``. A pooled store reports what its source stores recorded (its ``pooled_from``
        attribute).

    Examples
    --------
    >>> kept_summary([PatchStore("mi.h5")])  # doctest: +SKIP
    {'kept': 42, 'rejected': 813, 'kept_fraction': 0.049, 'reject_uv': 100.0, ...}
    """
    kept = rej = dropped = files = 0
    skipped: set[str] = set()
    thresholds = set()
    stores = list(stores)
    # a shard set's recordings whose windows were all rejected have no shard: its index lists them
    for set_path in dict.fromkeys(p for p in (getattr(st, "set_path", None) for st in stores) if p is not None):
        idx = read_index(set_path)
        for r in idx.get("rejected", []):
            rej += int(r.get("n_rejected") or 0)
            files += int(r.get("n_rejected") or 0) > 0
        skipped.update(str(f) for f in idx.get("skipped") or [])
    for st in stores:
        pooled = st.attrs.get("pooled_from")
        if pooled:
            for p in pooled:
                kept += int(p.get("kept") or 0)
                rej += int(p.get("rejected") or 0)
                if p.get("reject_uv") is not None:
                    thresholds.add(float(p["reject_uv"]))
            continue
        info = st.info
        kept += len(st)
        rej += int(info.n_rejected or 0)
        dropped += len(info.dropped)
        skipped.update(str(f) for f in info.skipped)
        files += sum(1 for s in info.sources if isinstance(s, dict) and int(s.get("n_rejected") or 0) > 0)
        r = (info.recipe or {}).get("reject_uv")
        if r is not None:
            thresholds.add(float(r))
    thr = max(thresholds) if len(thresholds) == 1 else (sorted(thresholds) if thresholds else None)
    reasons = {}
    if rej:
        t = f"{thr:g}" if isinstance(thr, float) else "/".join(f"{v:g}" for v in thr) if thr else "?"
        reasons[f"a sample's |amplitude| above reject_uv = {t} µV"] = rej
    return {
        "kept": kept,
        "rejected": rej,
        "kept_fraction": kept / (kept + rej) if kept + rej else None,
        "reject_uv": thr,
        "reasons": reasons,
        "recordings_dropped": dropped,
        "recordings_skipped": len(skipped),
        "files_with_rejections": files,
    }


def kept_line(summary: dict) -> str:
    """One line for the CLI: ``"kept 42 of 855 windows (4.9 %); dropped 813: a sample's |amplitude| above …"``.

    Parameters
    ----------
    summary : dict
        The result of :func:`kept_summary`.

    Returns
    -------
    str
        The line (``"no window was cut"`` when the stores hold nothing and rejected nothing).

    Examples
    --------
    >>> kept_line({"kept": 90, "rejected": 10, "reasons": {"above 100 µV": 10}, "files_with_rejections": 2})
    'kept 90 of 100 windows (90.0 %); dropped 10 (above 100 µV) in 2 recording(s)'
    """
    k, r = summary["kept"], summary["rejected"]
    if not k + r:
        return "no window was cut"
    line = f"kept {k} of {k + r} windows ({100.0 * k / (k + r):.1f} %)"
    if r:
        line += "; dropped " + "; ".join(f"{n} ({why})" for why, n in summary["reasons"].items())
        if summary.get("files_with_rejections"):
            line += f" in {summary['files_with_rejections']} recording(s)"
    elif summary.get("reject_uv") is None:
        line += "; no amplitude rejection (reject_uv off)"
    else:
        line += (
            f"; none above reject_uv = {summary['reject_uv']:g} µV"
            if isinstance(summary["reject_uv"], float)
            else "; none above reject_uv"
        )
    if summary.get("recordings_dropped"):
        line += (
            f"; {summary['recordings_dropped']} recording(s) left out by the recipe's rules (shorter than min_duration_s,"
            " or without a channel under missing_channels: skip; listed in the store's dropped attribute)"
        )
    if summary.get("recordings_skipped"):
        line += (
            f"; {summary['recordings_skipped']} recording(s) skipped as bad files (skip_bad; listed in the store's "
            "skipped attribute)"
        )
    return line


def unlabelled_line(ds) -> str | None:
    """One line for the CLI when a store of a labelled task (its card's task has classes) holds no labelled
    window, or only some: ``None`` when every window is labelled, or when the task labels none (no classes).

    Parameters
    ----------
    ds : PatchDataset
        The samples (a :class:`~neurokit.data.dataset.PatchDataset`, or a subset of one).

    Returns
    -------
    str | None
        The line, or ``None``.

    Examples
    --------
    >>> unlabelled_line(PatchDataset("mi.h5"))  # doctest: +SKIP
    "none of the 45 windows is labelled, though task 'lr' has classes ['rest', 'task'] (all -1)"
    """
    names = list(ds.info.label_names or [])
    if not names:
        return None
    labels = np.concatenate([np.asarray(st.labels) for st in ds.stores]) if ds.stores else np.zeros(0)
    if labels.dtype.kind not in "iu" or not len(labels):
        return None
    n_un = int((labels < 0).sum())
    if not n_un:
        return None
    task = ds.info.task
    if n_un == len(labels):
        return f"none of the {len(labels)} windows is labelled, though task {task!r} has classes {names} (all -1)"
    return f"{n_un} of {len(labels)} windows are unlabelled (-1) under task {task!r}"


def split_line(ds) -> str | None:
    """The samples per split of a store's card task in one line, beside the counts the dataset's release published
    (the task's ``counts``, per dataset version), or ``None`` when the card gives no splits.

    Parameters
    ----------
    ds : PatchDataset
        The samples (a :class:`~neurokit.data.dataset.PatchDataset`, or a subset of one).

    Returns
    -------
    str | None
        ``"train n · val n · test n"``, with the published counts and a note on empty splits; ``None`` when the
        store's card gives no splits (or cannot be read).

    Examples
    --------
    >>> split_line(PatchDataset("tuab.h5"))  # doctest: +SKIP
    'train 297,103 · val 75,407 · test 36,945 (published, v3.0.1: train 297,103 · val 75,407 · test 36,945)'
    """
    from neurokit.data.splits import split_counts

    try:
        counts = split_counts(ds)
    except Exception:  # a card body another version wrote: no line rather than no store
        return None
    if counts is None:
        return None

    def fmt(c: dict) -> str:
        return " · ".join(f"{k} {int(c[k]):,}" for k in ("train", "val", "test") if k in c)

    line = fmt(counts)
    task = ((ds.info.card_body or {}).get("tasks") or {}).get(ds.info.task) or {}
    published = task.get("counts") or {}
    if published:
        line += " (published by the release, " + "; ".join(f"{v}: {fmt(c)}" for v, c in published.items()) + ")"
    empty = [k for k in ("train", "val", "test") if not counts.get(k)]
    if empty:  # e.g. a part of the dataset: fine-tuning will need splits of its own
        line += (
            f"; {' and '.join(empty)} empty: the card's split names recordings this store lacks (fine-tune with "
            "splits= of your own, or prepare the whole dataset)"
        )
    return line
