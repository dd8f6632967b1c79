"""Split rules a card may give instead of fixed subject lists (a task's ``split_rule``), resolved over the recordings
the layout lists when a store is prepared.

The CBraMod release splits several datasets by a rule over the files it finds, not by a fixed list: TUAB sorts the
subjects of each class folder of ``train/`` and keeps the first 80 % for training, the rest for validation, and tests
on ``eval/``; TUEV does the same without class folders; Mumtaz sorts the file names of each group and cuts them at
fixed positions. The rule gives every recording a split; :func:`resolve_split_rule` turns that into the lists the
store's card records (``splits``), by subject when every subject falls in one split, else by recording
(``split_unit: run``, with a warning naming the subjects the rule puts in two splits, as the release does).

Rules (``split_rule: {rule: NAME, ...}``):

``sorted_subjects``
    ``test``: the folder name marking test recordings (``eval``); ``groups``: folder names whose subjects are
    sorted and cut apart (``[abnormal, normal]``; none: all together); ``fraction``: the share of each group's
    sorted subjects that trains (``0.8``), the others validate: ``subjects[:int(n * fraction)]``; ``kept_only``:
    ``true`` counts only the recordings that gave windows (the release's TUEV script lists its processed files, so a
    patient whose every file was skipped is not in its 80 % cut; TUAB lists the raw folders).
``sorted_files``
    ``groups``: file-name prefix → ``[train_end, val_end]`` positions in that group's sorted file names
    (``{MDD: [42, 52], H: [40, 48]}``: ``[:42]`` train, ``[42:52]`` validation, the rest test). A file takes the
    first group whose prefix starts its name.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Sequence

from neurokit._utils.errors import CardError

logger = logging.getLogger("neurokit")

SPLITS = ("train", "val", "test")
RULES = ("sorted_subjects", "sorted_files")


def _parts(e) -> tuple[str, ...]:
    """The folder names of a recording below the data root (a folder above it, e.g. ``~/data/eval/``, means nothing)."""
    rel = getattr(e, "relative_parts", None)
    return rel() if rel is not None else Path(e.path).parts


def _sorted_subjects(entries, rule: dict, where: str) -> list[str]:
    test = str(rule.get("test", "eval"))
    groups = [str(g) for g in rule.get("groups") or []]
    fraction = float(rule.get("fraction", 0.8))
    if not 0 < fraction <= 1:
        raise CardError(f"{where}: split_rule fraction={fraction}: give a share in (0, 1]")

    def group_of(e) -> str:
        parts = _parts(e)
        for g in groups:
            if g in parts:
                return g
        if groups:
            raise CardError(f"{e.path}: in none of the split rule's group folders {groups} ({where})")
        return ""

    out = [""] * len(entries)
    pool: dict[str, set[str]] = {}
    for i, e in enumerate(entries):
        if test in _parts(e):
            out[i] = "test"
        else:
            pool.setdefault(group_of(e), set()).add(e.subject)
    train: set[tuple[str, str]] = set()
    for g, subs in pool.items():
        ordered = sorted(subs)
        train |= {(g, s) for s in ordered[: int(len(ordered) * fraction)]}
    for i, e in enumerate(entries):
        if not out[i]:
            out[i] = "train" if (group_of(e), e.subject) in train else "val"
    return out


def _sorted_files(entries, rule: dict, where: str) -> list[str]:
    groups = rule.get("groups") or {}
    if not isinstance(groups, dict) or not groups:
        raise CardError(f"{where}: split_rule sorted_files needs groups: {{name prefix: [train_end, val_end]}}")
    cuts = {}
    for g, c in groups.items():
        if not (isinstance(c, (list, tuple)) and len(c) == 2 and all(isinstance(x, int) for x in c) and c[0] <= c[1]):
            raise CardError(f"{where}: split_rule group {g!r}: give [train_end, val_end] positions, got {c!r}")
        cuts[str(g)] = c
    by: dict[str, list[int]] = {}
    for i, e in enumerate(entries):
        name = Path(e.path).name
        g = next((p for p in cuts if name.startswith(p)), None)
        if g is None:
            raise CardError(f"{e.path}: its name starts with none of the split rule's groups {list(cuts)} ({where})")
        by.setdefault(g, []).append(i)
    out = [""] * len(entries)
    for g, idx in by.items():
        idx = sorted(idx, key=lambda i: Path(entries[i].path).name)  # the release sorts file names as strings
        a, b = cuts[g]
        for k, i in enumerate(idx):
            out[i] = "train" if k < a else "val" if k < b else "test"
    return out


def assign_splits(entries: Sequence[Any], rule: dict, where: str = "card") -> list[str]:
    """The split (``"train"``, ``"val"``, ``"test"``) of each recording of ``entries`` by ``rule``.

    Parameters
    ----------
    entries : sequence of FileEntry
        Every recording the card's layout lists (the rule is applied to all of them, before ``--subjects``
        picks some, so a subset keeps the splits of the whole).
    rule : dict
        The task's ``split_rule`` (``{"rule": "sorted_subjects", "test": "eval", "groups": [...], "fraction": 0.8}``
        or ``{"rule": "sorted_files", "groups": {...}}``).
    where : str
        The card, for messages.

    Raises
    ------
    CardError
        An unknown rule or bad parameters; a recording in none of the rule's groups.

    Examples
    --------
    >>> from neurokit.io.entry import FileEntry
    >>> es = [FileEntry(path=Path(f"train/{s}_t0.edf"), subject=s) for s in "abcde"]
    >>> assign_splits(es + [FileEntry(path=Path("eval/f_t0.edf"), subject="f")], {"rule": "sorted_subjects"})
    ['train', 'train', 'train', 'train', 'val', 'test']
    """
    name = rule.get("rule") if isinstance(rule, dict) else None
    if name == "sorted_subjects":
        return _sorted_subjects(entries, rule, where)
    if name == "sorted_files":
        return _sorted_files(entries, rule, where)
    raise CardError(f"{where}: split_rule {rule!r}: give rule: one of {', '.join(RULES)}")


def resolve_split_rule(entries: Sequence[Any], rule: dict, where: str = "card") -> tuple[str, dict[str, list[str]]]:
    """``(unit, {split: ids})``: the splits of :func:`assign_splits` as subject lists (``unit`` ``"subject"``)
    when every subject falls in one split, else as recording lists (``"run"``: the entries' ``run`` ids, which
    must then be unique), with a warning naming the subjects in two splits.

    Parameters
    ----------
    entries : sequence of FileEntry
        Every recording the card's layout lists.
    rule : dict
        The task's ``split_rule`` (see :func:`assign_splits`).
    where : str
        The card, for messages.

    Returns
    -------
    unit : str
        ``"subject"`` or ``"run"``: what the lists hold (the card's ``split_unit``).
    splits : dict of str to list of str
        ``{"train": ids, "val": ids, "test": ids}``, each sorted.

    Raises
    ------
    CardError
        A bad rule (:func:`assign_splits`); recordings shared between splits whose ``run`` ids are not unique (the
        split cannot be stored).

    Examples
    --------
    >>> from neurokit.io.entry import FileEntry
    >>> es = [FileEntry(path=Path(f"train/{s}_t0.edf"), subject=s, run=f"{s}_t0") for s in "abcde"]
    >>> unit, splits = resolve_split_rule(es, {"rule": "sorted_subjects"})
    >>> unit, splits["val"]
    ('subject', ['e'])
    """
    splits = assign_splits(entries, rule, where)
    of_subject: dict[str, set[str]] = {}
    for e, s in zip(entries, splits):
        of_subject.setdefault(e.subject, set()).add(s)
    shared = sorted(s for s, v in of_subject.items() if len(v) > 1)
    if not shared:
        out = {k: sorted({e.subject for e, s in zip(entries, splits) if s == k}) for k in SPLITS}
        return "subject", out
    runs = [e.run for e in entries]
    if len(set(runs)) < len(runs):
        raise CardError(
            f"{where}: the split rule puts subjects {shared[:5]} in two splits and the recordings' run ids are not "
            "unique, so the split cannot be stored by recording"
        )
    logger.warning(
        "%s: the split rule puts %d subject(s) in two splits (%s%s), as the release's own split does: splits are "
        "by recording, and those subjects' scores are not of unseen subjects",
        where,
        len(shared),
        ", ".join(shared[:5]),
        " …" if len(shared) > 5 else "",
    )
    return "run", {k: sorted(e.run for e, s in zip(entries, splits) if s == k) for k in SPLITS}
