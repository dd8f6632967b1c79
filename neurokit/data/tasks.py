"""The tasks and modalities of a multi-task (M4oE) run: ``CARD:TASK`` specs, channel groups per store, and the
store prepared for each task."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

from neurokit._utils.errors import ConfigError
from neurokit.store.patch_store import PatchStore


def parse_tasks(specs: Sequence[str]) -> list[tuple[str, str]]:
    """The tasks of a multi-task run, each ``CARD:TASK``, as ``(card, task)`` pairs.

    Parameters
    ----------
    specs : sequence of str
        ``["bonn_epilepsy:seizure", ...]``.

    Returns
    -------
    list of (str, str)
        ``[("bonn_epilepsy", "seizure"), ...]``.

    Raises
    ------
    ConfigError
        A spec that is not ``CARD:TASK``, a task named twice, or none.

    Examples
    --------
    >>> parse_tasks(["bonn_epilepsy:seizure"])
    [('bonn_epilepsy', 'seizure')]
    """
    out: list[tuple[str, str]] = []
    for s in specs:
        if s.count(":") != 1 or not all(s.split(":")):
            raise ConfigError(f"task={s!r}: give CARD:TASK (e.g. bonn_epilepsy:seizure)")
        ct = tuple(s.split(":"))
        if ct in out:
            raise ConfigError(f"task={s!r} is named twice; give each task once")
        out.append(ct)  # type: ignore[arg-type]
    if not out:
        raise ConfigError("head='m4oe' needs at least one task='CARD:TASK'")
    return out


def parse_modalities(specs: Sequence[str] | None) -> dict[str, list[str] | None] | None:
    """The modalities of a multi-task run: name → its channels.

    Parameters
    ----------
    specs : sequence of str, optional
        ``["eeg=Fp1,Fp2", "ecg=ECG", "eog"]``: ``NAME=CH,CH``, or a bare name that keeps the card's channels for it.

    Returns
    -------
    dict or None
        ``{"eeg": ["Fp1", "Fp2"], "ecg": ["ECG"], "eog": None}``; ``None`` without ``specs`` (each card's own).

    Raises
    ------
    ConfigError
        An empty name, or a modality named twice.

    Examples
    --------
    >>> parse_modalities(["eeg=Fp1,Fp2", "eog"])
    {'eeg': ['Fp1', 'Fp2'], 'eog': None}
    """
    if not specs:
        return None
    out: dict[str, list[str] | None] = {}
    for s in specs:
        name, _, chans = s.partition("=")
        name = name.strip()
        if not name or name in out:
            raise ConfigError(f"modality={s!r}: {'empty name' if not name else 'modality named twice'}")
        out[name] = [c.strip() for c in chans.split(",") if c.strip()] if chans else None
    return out


def task_layout(name: str, store: PatchStore, requested: dict[str, list[str] | None] | None) -> dict[str, list[int]]:
    """Modality → channel indices of ``store`` for task ``name``.

    Parameters
    ----------
    name : str
        The task, ``CARD:TASK`` (for messages).
    store : PatchStore
        The task's store.
    requested : dict, optional
        :func:`parse_modalities`'s result; ``None``: the card's ``modalities`` (all channels as ``eeg`` when the
        card names none).

    Returns
    -------
    dict
        Modality → indices of its channels in the store.

    Raises
    ------
    ConfigError
        A requested modality the store's card does not define or whose channels the store lacks, or two
        modalities sharing a channel (the message names the task, the store and the modality).
    """
    ch = list(store.info.ch_names or [])
    card_mods = store.info.card_body.get("modalities") or {"eeg": None}
    if requested:
        wanted = {}
        for m, chans in requested.items():
            if chans is None:
                if m not in card_mods:
                    raise ConfigError(
                        f"task {name}: store {store.path} (card {store.info.card}) has no modality "
                        f"{m!r} (its card defines {sorted(card_mods)}); give modality='{m}=CH,CH'"
                    )
                chans = card_mods[m]
            wanted[m] = chans
    else:
        wanted = dict(card_mods)
    out: dict[str, list[int]] = {}
    for m, chans in wanted.items():
        chans = ch if chans is None else list(chans)
        missing = [c for c in chans if c not in ch]
        if missing:
            raise ConfigError(
                f"task {name}: store {store.path} lacks the channels {missing} of modality {m!r} "
                f"(modality='{m}=CH,CH'); its channels: {ch[:8]}{'…' if len(ch) > 8 else ''}"
            )
        out[m] = [ch.index(c) for c in chans]
    seen: dict[int, str] = {}
    for m, idx in out.items():
        for i in idx:
            if i in seen:
                raise ConfigError(
                    f"task {name}: modalities {seen[i]!r} and {m!r} overlap on channel {ch[i]!r} "
                    f"in store {store.path} (modality='NAME=CH,CH'); a channel belongs to one modality"
                )
            seen[i] = m
    return out


def match_stores(tasks: list[tuple[str, str]], stores: Sequence[str | Path]) -> dict[str, PatchStore]:
    """Task ``card:task`` → the given store prepared for it.

    Parameters
    ----------
    tasks : list of (str, str)
        :func:`parse_tasks`'s result.
    stores : sequence of paths
        Labelled patch stores, one per task.

    Returns
    -------
    dict
        ``"card:task"`` → its :class:`~neurokit.store.patch_store.PatchStore`.

    Raises
    ------
    ConfigError
        No store of the card, or stores of the card that hold other tasks' labels (or no label).
    """
    opened = [PatchStore(s) for s in stores]
    out = {}
    for card, task in tasks:
        name = f"{card}:{task}"
        same_card = [s for s in opened if s.info.card == card]
        hit = [s for s in same_card if s.info.task == task]
        if not hit:
            if same_card:
                held = ", ".join(f"{s.path} (task {s.info.task!r})" for s in same_card)
                raise ConfigError(
                    f"task={name!r}: no store holds labels of task {task!r}: {held}; prepare one with "
                    f"`neuro prepare {card}` and task={task!r}"
                )
            raise ConfigError(
                f"task={name!r}: none of the stores {[str(s.path) for s in opened]} was prepared from card {card!r}"
            )
        st = hit[0]
        lab = st.labels
        if not (lab >= 0).any() if lab.dtype.kind in "iu" else not np.isfinite(lab).any():
            raise ConfigError(f"task={name!r}: store {st.path} has none of the task's labels (all unlabelled)")
        out[name] = st
    return out
