"""The keys a data card may hold, at every level, so that a misspelt key is refused instead of ignored.

A card is YAML; what neurokit reads from it is listed here. The ``preprocessing`` block is checked by its recipe
(:class:`~neurokit.cards.recipes.EEGRecipe` / :class:`~neurokit.cards.recipes.SurfaceRecipe`), and the
values of ``channel_sets``, ``tasks`` and a task's ``events`` are names the card chooses; every other mapping
has a fixed set of keys.
"""

from __future__ import annotations

import difflib
from typing import Any

from neurokit._utils.errors import CardError

#: top-level keys (``preprocessing`` keys are the recipe's fields)
TOP = (
    "name",
    "modality",
    "title",
    "source",
    "licence",
    "citation",
    "data_use",
    "recording",
    "modalities",
    "layout",
    "tasks",
    "events",
    "preprocessing",
    "channel_sets",
    "reading",
)
#: ``layout:`` keys, for every layout kind (``mne_eegbci``, ``folder``, ``bids``, ``reader``)
LAYOUT = (
    "kind",
    "subdir",
    "pattern",
    "reader",
    "subjects",
    "subject_format",
    "entities",
    "task",
    "run_format",
    "subject_pattern",
)
#: keys of one task under ``tasks:``
TASK = (
    "description",
    "classes",
    "events",
    "run_groups",
    "splits",
    "split_rule",
    "split_unit",
    "counts",
    "kind",
    "metrics",
    "finetune",
    "paper",
    "preprocessing",
    "frame_blocks",
    "label_by_hemi",
    "label_column",
)
#: keys of one of a task's ``run_groups``
RUN_GROUP = ("runs", "events")
#: a task's ``splits:``
SPLITS = ("train", "val", "test")
#: ``reading:`` options of the EEG reader
READING = ("encoding", "units", "override_units", "eeg_only", "normalize_names", "allow_truncated")
#: ``recording:`` — what the recordings are (documentation, shown by ``neuro cards show``)
RECORDING = (
    "channels",
    "sfreq",
    "units",
    "reference",
    "line_freq",
    "band",
    "paradigm",
    "subjects",
    "n_subjects",
    "runs",
    "files",
    "sets",
    "mesh",
    "hemispheres",
    "tr_s",
    "n_frames",
    "stimuli",
    "clips",
    "hemodynamic_lag_s",
    "confounds",
    "notes",
)
#: ``label_by_hemi:`` keys
HEMIS = ("L", "R")


def _refuse(where: str, path: str, key: Any, allowed: tuple[str, ...]) -> None:
    close = difflib.get_close_matches(str(key), allowed, n=1, cutoff=0.6)
    hint = f"did you mean {close[0]!r}? " if close else ""
    at = f"under {path!r}" if path else "at the top level"
    raise CardError(f"{where}: unknown key {key!r} {at}; {hint}allowed: {', '.join(allowed)}")


def _check(block: Any, allowed: tuple[str, ...], where: str, path: str) -> None:
    if block is None:
        return
    if not isinstance(block, dict):
        raise CardError(
            f"{where}: {path or 'the card'} must be a mapping of keys to values (got {type(block).__name__})"
        )
    for key in block:
        if key not in allowed:
            _refuse(where, path, key, allowed)


def check_card_keys(raw: dict, where: str) -> None:
    """Refuse a card holding a key neurokit does not read, naming the file, the key, its place and the closest
    valid key.

    Parameters
    ----------
    raw : dict
        The card as parsed from YAML.
    where : str
        The card's file (or name), for the message.

    Raises
    ------
    CardError
        ``"card.yaml: unknown key 'readings' at the top level; did you mean 'reading'? allowed: …"``.

    Examples
    --------
    >>> check_card_keys({"name": "x", "readings": {"units": "mV"}}, "my.yaml")
    Traceback (most recent call last):
    ...
    neurokit._utils.errors.CardError: my.yaml: unknown key 'readings' at the top level; did you mean 'reading'? allowed: name, modality, title, source, licence, citation, data_use, recording, modalities, layout, tasks, events, preprocessing, channel_sets, reading
    """
    _check(raw, TOP, where, "")
    _check(raw.get("layout"), LAYOUT, where, "layout")
    _check(raw.get("reading"), READING, where, "reading")
    _check(raw.get("recording"), RECORDING, where, "recording")
    tasks = raw.get("tasks") or {}
    if not isinstance(tasks, dict):
        raise CardError(f"{where}: tasks must be a mapping of task names to tasks")
    for name, task in tasks.items():
        _check(task, TASK, where, f"tasks.{name}")
        task = task or {}
        _check(task.get("splits"), SPLITS, where, f"tasks.{name}.splits")
        _check(task.get("label_by_hemi"), HEMIS, where, f"tasks.{name}.label_by_hemi")
        for i, group in enumerate(task.get("run_groups") or []):
            _check(group, RUN_GROUP, where, f"tasks.{name}.run_groups[{i}]")
    _check_preprocessing(raw, tasks, where)


def _check_preprocessing(raw: dict, tasks: dict, where: str) -> None:
    """Every ``preprocessing`` block's keys (the card's and each task's, used or not) against the recipe fields of
    the card's modality: a typo in a task nobody prepares yet is refused too."""
    from dataclasses import fields

    from neurokit.cards.recipes import EEGRecipe, SurfaceRecipe

    recipe = {"eeg": EEGRecipe, "surface": SurfaceRecipe}.get(str(raw.get("modality", "eeg")))
    if recipe is None:
        return
    allowed = tuple(f.name for f in fields(recipe)) + (("spheres",) if recipe is SurfaceRecipe else ())
    _check(raw.get("preprocessing"), allowed, where, "preprocessing")
    for name, task in tasks.items():
        if isinstance(task, dict):
            _check(task.get("preprocessing"), allowed, where, f"tasks.{name}.preprocessing")
