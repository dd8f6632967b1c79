"""Train/validation/test splits (by subject from the card, or by run for one subject), the task kind of a
labelled store, and the leak check every split and fold passes before training."""
from __future__ import annotations

import logging

import numpy as np

from neurokit._utils.errors import ConfigError

logger = logging.getLogger("neurokit")



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
        _check_disjoint(override)
        return "subject", {k: {"subjects": v} for k, v in override.items()}
    if len(subjects) == 1:
        runs = sorted({str(r) for r in ds_all.meta("run")})
        if len(runs) < 3:
            raise ConfigError(f"one subject and {len(runs)} run(s): need >= 3 runs to split train/val/test by run")
        return "run", {"train": {"runs": runs[:-2]}, "val": {"runs": [runs[-2]]}, "test": {"runs": [runs[-1]]}}
    from neurokit.cards import DataCard

    info = ds_all.info
    body = info.card_body
    if not body:
        raise ConfigError("the store names no data card: pass splits={'train': [...], 'val': [...], 'test': [...]}")
    card = DataCard(name=body["name"], raw=body)
    sp = card.splits(info.task)
    out = {}
    for k in ("train", "val", "test"):
        chosen = [s for s in sp.get(k, []) if s in subjects]
        if not chosen:
            raise ConfigError(
                f"split {k!r} of card {card.name!r} has no subject in the store (store subjects: {subjects}); "
                "pass explicit splits (CLI: --train-subjects/--val-subjects/--test-subjects)"
            )
        out[k] = {"subjects": chosen}
    return "subject", out


def _check_disjoint(splits: dict[str, list[str]]) -> None:
    train = set(splits.get("train", []))
    for k in ("val", "test"):
        both = sorted(train & set(splits.get(k, [])))
        if both:
            raise ConfigError(f"subjects {both} are in both 'train' and {k!r}: the {k} score would leak training data")
    both = sorted(set(splits.get("val", [])) & set(splits.get("test", [])))
    if both:
        logger.warning("subjects %s are in both 'val' and 'test': model selection sees the test subjects", both)


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
        fields = [c["subject"].astype(str).tolist(), c["session"].astype(str).tolist(), c["run"].astype(str).tolist()][:depth]
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
            on = [np.sort(cols[x]["onset"][(cols[x]["subject"] == key[0]) & (cols[x]["session"] == key[1])
                                           & (cols[x]["run"] == key[2])]) for x in (a, b)]
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
            raise ConfigError(f"{what[u]} {names[:8]} are in both 'train' and {k!r}: the {k} score would leak training data")
    both = shared("val", "test", unit)
    if both:
        logger.warning("%s %s are in both 'val' and 'test': model selection sees the test data", what[unit], both[:8])


def sample_columns(ds) -> dict[str, np.ndarray]:
    """Per-sample columns of ``ds``: ``id``, ``subject``, ``session``, ``run``, ``onset`` (s) and ``label``."""
    return {"id": ds.sample_ids, "subject": ds.meta("subject").astype(str), "session": ds.meta("session").astype(str),
            "run": ds.meta("run").astype(str), "onset": ds.meta("onset").astype(float), "label": ds.labels}
