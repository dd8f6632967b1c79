"""The data card (:class:`DataCard`): one YAML file per dataset with its source, licence, citation, channels, rates,
events → labels, splits and preprocessing recipe; its tasks' labelling rule (:class:`TaskEvents`) and loading
(:func:`load_card`). Where recordings lie is each layout kind's (:mod:`neurokit.cards.layouts`).

Cards ship inside the wheel (``neurokit/data_cards``); in a source checkout they are read from the
repository's ``data_cards/`` folder. A path to a user's own ``.yaml`` works wherever a name does.
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from neurokit._utils.errors import CardError, DataFileError
from neurokit.cards.ranges import MAX_SUBJECTS, format_ranges, parse_ranges  # noqa: F401  (re-exported)
from neurokit.cards.schema import READING, check_card_keys
from neurokit.io.entry import FileEntry

logger = logging.getLogger("neurokit")

REQUIRED = ("name", "modality", "title", "source", "licence", "citation", "layout", "tasks", "preprocessing")


def cards_dir() -> Path:
    """Folder holding the packaged data cards.

    Returns
    -------
    pathlib.Path
        ``neurokit/data_cards`` inside an installed wheel, else the repository's ``data_cards/`` folder.

    Raises
    ------
    CardError
        Neither folder exists.

    Examples
    --------
    >>> cards_dir().name
    'data_cards'
    """
    here = Path(__file__).resolve().parent.parent
    for cand in (here / "data_cards", here.parent / "data_cards"):
        if cand.is_dir():
            return cand
    raise CardError(f"no data_cards folder found next to {here}")


def list_cards() -> list[str]:
    """Names of the packaged data cards.

    Returns
    -------
    list of str
        The card names (file stems of :func:`cards_dir`'s ``*.yaml``), sorted; each one loads with
        :func:`load_card`.

    Raises
    ------
    CardError
        No packaged card folder (:func:`cards_dir`).

    Examples
    --------
    >>> "physionet_mi" in list_cards()
    True
    """
    return sorted(p.stem for p in cards_dir().glob("*.yaml"))


@dataclass(frozen=True)
class TaskEvents:
    """How a card's task labels a recording, the one rule for every way files come in (a card's layout under
    ``--data-root``, ``--bids``, explicit ``-f`` files): a file's run picks its ``run_groups`` entry; the task's
    ``events`` label every file when there are no groups, and, beside groups, the files of runs no group names.

    Attributes
    ----------
    card, task : str
        Names, for messages.
    groups : tuple of (frozenset of int, dict)
        Each run group's runs and its events (annotation description → class index).
    events : dict | None
        The task-level events (description → class index); ``None`` when the task has none.

    Examples
    --------
    >>> te = load_card("physionet_mi").task_events("motor_imagery_4class")
    >>> te.of_run(4), te.of_run(6), te.of_run(1)
    ({'T1': 0, 'T2': 1}, {'T1': 2, 'T2': 3}, None)
    """

    card: str
    task: str
    groups: tuple[tuple[frozenset[int], dict[str, int]], ...] = ()
    events: dict[str, int] | None = None

    @property
    def labels(self) -> bool:
        """Whether the task labels windows by events at all."""
        return bool(self.groups) or self.events is not None

    def runs(self) -> list[int]:
        """The runs the run groups name, sorted."""
        return sorted({r for runs, _ in self.groups for r in runs})

    def of_run(self, run: int | None) -> dict[str, int] | None:
        """The events of a file of run ``run`` (``None``: the layout names no run for it, which counts as run 0): its
        group's, else the task-level events, else ``None`` (the file belongs to no group and the task labels no
        other file). A run is never guessed: a group naming run 8 does not take a file of no run.

        Parameters
        ----------
        run : int | None
            The file's run number.

        Returns
        -------
        dict of str to int | None
            Annotation description → class index, a copy.
        """
        run = 0 if run is None else run
        for runs, ev in self.groups:
            if run in runs:
                return dict(ev)
        return None if self.events is None else dict(self.events)

    def of_file(self, path, run: int | None) -> dict[str, int] | None:
        """:meth:`of_run` for a file given by name (``-f``), refusing one that belongs to no group.

        Parameters
        ----------
        path : str | pathlib.Path
            The file, for the message.
        run : int | None
            Its run number (:func:`~neurokit.cards.layouts.folder.run_of`).

        Returns
        -------
        dict of str to int | None
            Annotation description → class index; ``None`` when the task labels no events.

        Raises
        ------
        CardError
            The task labels by run groups, has no task-level events, and ``run`` is in none of them (the
            message names the file, its run and the groups' runs).
        """
        ev = self.of_run(run)
        if ev is None and self.groups:
            seen = (
                "no run (neither a BIDS run- entity nor the layout's 'run' group names one)"
                if run is None
                else f"run {run}"
            )
            groups = "; ".join(f"runs {sorted(r)}" for r, _ in self.groups)
            raise CardError(
                f"{path}: {seen}, which no run group of card {self.card!r} task {self.task!r} names ({groups}); "
                "give files of those runs, another task, or give the task 'events' to label the files of other "
                "runs (a run is the BIDS run- entity, the 'run' group of the layout's pattern or subject_pattern; a "
                "number ending a file name is not read as a run)"
            )
        return ev


@dataclass
class DataCard:
    """A parsed data card (see ``data_cards/*.yaml``): a dataset's source, channels, tasks, splits and recipe.

    Made by :func:`load_card` (a packaged card or a card file) or :func:`bids_card` (a BIDS dataset); the methods
    read the card's blocks (tasks and their labels, splits, channel sets, recipe, recordings on disk).

    Attributes
    ----------
    name : str
        The card's name (its ``name`` field, e.g. ``"physionet_mi"``).
    raw : dict
        The card's YAML mapping as read (a task's ``splits`` are replaced by the resolved lists when a split rule
        is applied, see :meth:`apply_split_rule`).
    path : pathlib.Path | None
        The card file; ``None`` for a card made on the fly (:func:`bids_card`).
    extra : dict
        Working state kept beside the card (the whole recording listing of a split rule).

    Examples
    --------
    >>> card = load_card("physionet_mi")
    >>> card.modality, card.split_unit(), card.splits()["val"][:2]
    ('eeg', 'subject', ['S071', 'S072'])
    """

    name: str
    raw: dict[str, Any]
    path: Path | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def modality(self) -> str:
        return self.raw["modality"]

    @property
    def tasks(self) -> dict[str, dict]:
        return self.raw.get("tasks") or {}

    def task(self, name: str | None) -> tuple[str, dict]:
        """Task ``name`` (or the only/first one when ``None``).

        Parameters
        ----------
        name : str | None
            A task of the card's ``tasks``; ``None``: the first one.

        Returns
        -------
        name : str
            The task's name.
        definition : dict
            Its block of the card (``classes``, ``events``, ``splits``…).

        Raises
        ------
        CardError
            The card defines no task, or none named ``name`` (the message lists them).
        """
        if not self.tasks:
            raise CardError(f"card {self.name!r} defines no task")
        if name is None:
            name = next(iter(self.tasks))
        if name not in self.tasks:
            raise CardError(f"card {self.name!r} has no task {name!r}; tasks: {sorted(self.tasks)}")
        return name, self.tasks[name]

    def task_events(self, task: str | None = None) -> TaskEvents:
        """The labelling rule of ``task`` (:class:`TaskEvents`): its ``run_groups`` and task-level ``events``
        with class names turned into indices.

        A ``kind: regression`` task has no classes: its events name the annotations ``"<event>=<number>"`` (a
        dataset reader's) whose numbers label their windows
        (:func:`~neurokit.preprocessing.eeg.windows.annotation_targets`), each mapped to 0 here.

        Parameters
        ----------
        task : str | None
            A task of the card; ``None``: the first one.

        Returns
        -------
        TaskEvents

        Raises
        ------
        CardError
            An event label that is not one of the task's classes (naming the group).
        """
        tname, t = self.task(task)
        classes = list(t.get("classes") or [])

        def events_of(mapping, what):
            if t.get("kind") == "regression":  # no classes: the windows take their annotations' targets (float)
                return {str(d): 0 for d in mapping or {}}
            try:
                return {str(d): classes.index(lbl) for d, lbl in (mapping or {}).items()}
            except ValueError:
                raise CardError(
                    f"card {self.name!r} task {tname!r}: an event label of {what} is not in classes {classes}"
                ) from None

        groups = tuple(
            (frozenset(int(r) for r in g["runs"]), events_of(g.get("events"), f"runs {g['runs']}"))
            for g in t.get("run_groups") or []
        )
        events = events_of(t["events"], "events") if t.get("events") else None
        return TaskEvents(card=self.name, task=tname, groups=groups, events=events)

    def split_unit(self, task: str | None = None) -> str:
        """What the task's splits list: ``"subject"`` (fixed lists, or a ``split_rule`` that keeps every subject in
        one split) or ``"run"`` (a ``split_rule`` that splits some subject's recordings, as the release's).

        Parameters
        ----------
        task : str | None
            A task of the card; ``None``: the first one.

        Returns
        -------
        str
            ``"subject"`` or ``"run"``.
        """
        return str(self.task(task)[1].get("split_unit") or "subject")

    def apply_split_rule(self, task: str | None, entries: Sequence[FileEntry]) -> None:
        """Resolve the task's ``split_rule`` (:mod:`neurokit.cards.split_rules`) over ``entries`` (every recording
        the layout lists) into the card's ``splits`` and ``split_unit``, which the store records; nothing without
        a rule.

        Parameters
        ----------
        task : str | None
            A task of the card; ``None``: the first one.
        entries : sequence of FileEntry
            Every recording the layout lists (before subjects are picked).

        Raises
        ------
        CardError
            A bad rule, or a recording the rule cannot place.
        """
        from neurokit.cards.split_rules import resolve_split_rule

        tname, t = self.task(task)
        rule = t.get("split_rule")
        if not rule or not entries:
            return
        unit, lists = resolve_split_rule(entries, rule, where=str(self.path or self.name))
        tasks = {**self.tasks, tname: {**t, "splits": lists, "split_unit": unit}}
        self.raw = {**self.raw, "tasks": tasks}
        self.extra["split_entries"] = list(entries)  # the whole listing, for a rule over the recordings kept

    def resolve_split_over_kept(self, task: str | None, left_out: set[str]) -> bool:
        """Resolve again a ``split_rule`` with ``kept_only: true`` over the recordings of the whole listing that
        gave windows (those whose paths are not in ``left_out``: dropped by the recipe, skipped as bad), as a
        release that lists its processed files does (TUEV: a patient whose every file was skipped does not count
        in the 80 % cut).

        Parameters
        ----------
        task : str | None
            A task of the card; ``None``: the first one.
        left_out : set of str
            Paths (as strings) of the listed recordings that gave no window.

        Returns
        -------
        bool
            Whether the splits were resolved again (only for a ``kept_only`` rule, after :meth:`apply_split_rule`,
            with recordings left out).
        """
        tname, t = self.task(task)
        rule = t.get("split_rule") or {}
        listing = self.extra.get("split_entries")
        if not (isinstance(rule, dict) and rule.get("kept_only")) or not listing or not left_out:
            return False
        kept = [e for e in listing if str(e.path) not in left_out]
        self.raw = {
            **self.raw,
            "tasks": {**self.tasks, tname: {k: v for k, v in t.items() if k not in ("splits", "split_unit")}},
        }
        self.apply_split_rule(tname, kept)
        return True

    def classes(self, task: str | None = None) -> list[str]:
        """The class names of ``task`` (index order of the labels); ``[]`` for a task without classes.

        Parameters
        ----------
        task : str | None
            A task of the card; ``None``: the first one.

        Returns
        -------
        list of str
        """
        return list(self.task(task)[1].get("classes") or [])

    def splits(self, task: str | None = None) -> dict[str, list[str]]:
        """Split name → subject ids as stored in patch stores (e.g. ``"S001"``).

        Parameters
        ----------
        task : str | None
            The task whose ``splits`` to read; ``None``: the card's first task.

        Returns
        -------
        dict of str to list of str
            ``{"train": [...], "val": [...], "test": [...]}`` (the splits the task gives). Numeric ranges
            (``"1-70"``) are formatted by the layout's ``subject_format`` (``"S{:03d}"`` by default); for a split
            resolved from a ``split_rule`` (:meth:`split_unit` ``"run"``) the ids are recording ids.

        Raises
        ------
        CardError
            No such task; a malformed range.
        """
        _, t = self.task(task)
        if t.get("split_unit"):  # resolved from the task's split_rule when the store was prepared: ids as stored
            return {k: [str(s) for s in v] for k, v in (t.get("splits") or {}).items()}
        fmt = self.raw.get("layout", {}).get("subject_format", "S{:03d}")
        out = {}
        for k, v in (t.get("splits") or {}).items():
            if isinstance(v, (list, tuple)) and any(not str(s).isdigit() for s in v):
                out[k] = [str(s) for s in v]  # explicit subject ids (e.g. SMNI codes)
            else:
                out[k] = [fmt.format(s) for s in parse_ranges(v)]
        return out

    def channel_set(self, name: str) -> list[str]:
        """A named channel subset from the card's ``channel_sets``, or a comma-separated list of labels
        (written in any case; put into 10-05 form, e.g. ``"c3,cz,c4"`` → ``["C3", "Cz", "C4"]``).

        Parameters
        ----------
        name : str
            A key of the card's ``channel_sets``, or channel labels separated by commas.

        Returns
        -------
        list of str
            The channel names.

        Raises
        ------
        CardError
            A single name that is neither a set of the card nor a 10-05 label.
        """
        from neurokit.geometry.channels import normalize_ch_name

        sets = self.raw.get("channel_sets") or {}
        if name in sets:
            return list(sets[name])
        labels = [c.strip() for c in name.split(",") if c.strip()]
        out = []
        for lab in labels:
            new, ok = normalize_ch_name(lab)
            if not ok and len(labels) == 1:
                raise CardError(
                    f"card {self.name!r} has no channel set {name!r} and it is no 10-05 label; "
                    f"sets: {sorted(sets)} (or give labels 'C3,Cz,C4')"
                )
            out.append(new if ok else lab)
        return out

    def read_options(self) -> dict[str, Any]:
        """Options for :func:`~neurokit.io.read_eeg` from the card's optional ``reading`` block:
        ``encoding`` (of EDF/BDF annotations), ``units`` (of channels whose unit is blank or unknown;
        one unit or label → unit), ``eeg_only`` (``false``: keep channels not typed EEG), ``normalize_names``
        (``false``: keep the file's own labels) and ``allow_truncated`` (read the records a truncated file holds)."""
        opts = dict(self.raw.get("reading") or {})
        unknown = sorted(set(opts) - set(READING))
        if unknown:
            raise CardError(f"{self.path or self.name}: unknown reading keys {unknown}; allowed: {list(READING)}")
        return opts

    def recipe(self, task: str | None = None):
        """The card's preprocessing recipe: an :class:`~neurokit.cards.recipes.EEGRecipe` for an EEG card, a
        :class:`~neurokit.cards.recipes.SurfaceRecipe` for a surface card (its ``spheres`` are read by
        :meth:`spheres`). A task's own ``preprocessing`` block, when ``task`` names one that gives it, replaces the
        card's fields it names (e.g. a task equal to a release's script beside the card's default recipe).

        Parameters
        ----------
        task : str | None
            A task whose own ``preprocessing`` block applies; ``None``: the card's recipe alone.

        Returns
        -------
        EEGRecipe | SurfaceRecipe

        Raises
        ------
        CardError
            A modality without a recipe, or a ``preprocessing`` block with unknown keys or bad values
            (naming the card file).
        """
        from neurokit.cards.recipes import EEGRecipe, SurfaceRecipe

        pre = dict(self.raw.get("preprocessing") or {})
        if task is not None and self.tasks:
            own = self.task(task)[1].get("preprocessing") or {}
            if not isinstance(own, dict):
                raise CardError(
                    f"{self.path or self.name}: tasks.{task}.preprocessing must be a mapping of recipe fields"
                )
            pre.update(own)
        try:
            if self.modality == "eeg":
                return EEGRecipe.from_dict(pre)
            if self.modality == "surface":
                pre.pop("spheres", None)
                return SurfaceRecipe.from_dict(pre)
        except (ValueError, TypeError) as exc:
            raise CardError(f"{self.path or self.name}: preprocessing block: {exc}") from exc
        raise CardError(f"card {self.name!r} is a {self.modality} card; recipes exist for eeg and surface cards")

    def spheres(self) -> dict[str, str]:
        """Surface cards: the registered spheres of the data's mesh, ``{"L": path, "R": path}`` as the card's
        ``preprocessing.spheres`` gives them (relative to the data root); ``{}`` when it gives none.

        Raises
        ------
        CardError
            ``spheres`` is not a mapping of hemisphere to path.
        """
        sph = (self.raw.get("preprocessing") or {}).get("spheres") or {}
        if not isinstance(sph, dict):
            raise CardError(
                f"{self.path or self.name}: preprocessing.spheres must map L/R to sphere files, got {sph!r}"
            )
        return {str(k): str(v) for k, v in sph.items()}

    def recording(self) -> dict[str, Any]:
        """The card's ``recording`` block (mesh, TR, clips… of surface cards); ``{}`` when absent."""
        return dict(self.raw.get("recording") or {})

    def files(
        self,
        data_root: str | Path | None,
        task: str | None = None,
        subjects: Sequence[int] | None = None,
        download: bool = True,
    ) -> list[FileEntry]:
        """Recordings of ``task`` under ``data_root`` (or ``$NEUROKIT_DATA``).

        For the ``mne_eegbci`` layout, missing files are fetched with :func:`mne.datasets.eegbci.load_data`
        when ``download`` is true and a network is reachable; subjects whose files stay missing are
        skipped with a warning.

        Parameters
        ----------
        data_root : str | pathlib.Path | None
            The folder the card's layout is read under (:func:`resolve_data_root`).
        task : str | None
            A task of the card; ``None``: the first one.
        subjects : sequence of int or str | None
            Subject numbers or ids to keep; ``None``: every subject (or those of the task's splits).
        download : bool
            Fetch missing files where the layout can (``mne_eegbci``).

        Returns
        -------
        list of FileEntry
            The task's recordings with their subjects, runs and labels.

        Raises
        ------
        CardError
            No data root, or no recording found under it.
        """
        from neurokit.cards.layouts import layout_of

        root = resolve_data_root(data_root)
        layout = self.raw.get("layout") or {}
        tname, t = self.task(task)
        return layout_of(self).files(self, root, layout, tname, t, subjects, download)

    def explicit_files(
        self, files: Sequence[str | Path], task: str | None = None, data_root: str | Path | None = None
    ) -> list[FileEntry]:
        """The recordings of files given by name (``neuro prepare -f``), with the subject, run and labels the
        card's layout gives the same files under ``--data-root``: one labelling rule (:meth:`task_events`) for
        every way in. Subject and run come from the layout: a BIDS layout's entities (read through
        ``events.tsv`` / ``channels.tsv``), an ``mne_eegbci`` layout's pattern, a folder layout's
        ``subject_pattern`` over the path under ``data_root`` (else the file name). Later parts of split FIF
        recordings are read through their first part (:func:`~neurokit.io.eeg.drop_split_parts`).

        Parameters
        ----------
        files : sequence of str or pathlib.Path
            The recordings.
        task : str | None
            A task of the card; ``None``: the first one.
        data_root : str | pathlib.Path | None
            The folder the layout's rules read paths under; ``None``: each file's name (or its BIDS dataset).

        Returns
        -------
        list of FileEntry

        Raises
        ------
        CardError
            A file whose run no run group names while the task has no task-level ``events`` (naming the file,
            its run and the groups' runs); a BIDS ``label_column`` task without its ``participants.tsv``.
        DataFileError
            A file that does not exist; a later part of a split FIF recording without its first part.
        """
        from neurokit.io.eeg import drop_split_parts

        for f in files:  # a missing file is said as such, before its name is read for a subject or a run
            if not Path(f).expanduser().is_file():
                raise DataFileError(
                    f"{f}: no such file" + (" (a folder: give it as data_root=)" if Path(f).is_dir() else "")
                )
        tname, _ = self.task(task)
        te = self.task_events(tname)
        layout = self.raw.get("layout") or {}
        kind = layout.get("kind")
        paths, _ = drop_split_parts(files)  # later parts of split FIF recordings: read through the first
        root = Path(data_root).expanduser() if data_root else None
        from neurokit.cards.layouts.bids import bids_explicit
        from neurokit.cards.layouts.common import relative
        from neurokit.cards.layouts.eegbci import eegbci_ids
        from neurokit.cards.layouts.folder import run_of, subject_of
        from neurokit.cards.layouts.reader import reader_explicit

        if kind == "bids":
            return bids_explicit(self, paths, layout, tname, root)
        pattern = layout.get("subject_pattern")
        out = []
        listings: dict = {}  # a reader's listing of a dataset folder, made once for all the files given
        for f in paths:
            listed = reader_explicit(self, f, layout, te, root, listings) if kind == "reader" else []
            if listed:  # the recordings the dataset reader finds in this file (an archive's members)
                out += listed
                continue
            rel = relative(f, root)
            ids = eegbci_ids(rel, layout["pattern"]) if kind == "mne_eegbci" and layout.get("pattern") else None
            if ids is not None:
                e = FileEntry(path=f, subject=f"S{ids[0]:03d}", run=f"R{ids[1]:02d}", events=te.of_file(f, ids[1]))
            else:
                subject = subject_of(rel, pattern, where=self.path or self.name)
                e = FileEntry(path=f, subject=subject, run=f.stem, events=te.of_file(f, run_of(rel, pattern)))
            out.append(e)
        if kind == "reader":
            self.apply_split_rule(tname, out)
        return out

    def bids_root(self, data_root: str | Path | None) -> Path:
        """The BIDS dataset folder of a ``layout: {kind: bids}`` card: ``data_root`` / ``layout.subdir``.

        Parameters
        ----------
        data_root : str | pathlib.Path | None
            The data root (:func:`resolve_data_root`).

        Returns
        -------
        pathlib.Path
        """
        return resolve_data_root(data_root) / (self.raw.get("layout") or {}).get("subdir", "")

    def store_subject(self, label: str) -> str:
        """Store id of a BIDS subject label: the card's ``subject_format`` applied to a numeric label
        (``"001"`` → ``"S001"``, the ids its splits use), ``"sub-<label>"`` otherwise or without a format.

        Parameters
        ----------
        label : str
            The BIDS ``sub-`` label (without ``sub-``).

        Returns
        -------
        str
        """
        fmt = (self.raw.get("layout") or {}).get("subject_format", "S{:03d}")
        return fmt.format(int(label)) if fmt and label.isdigit() else f"sub-{label}"

    def subject_rule(self) -> str:
        """The rule giving a folder layout's subject ids, in words (``neuro cards show``, store attributes):
        the card's ``layout.subject_pattern`` or the default rule (:data:`~neurokit.cards.layouts.folder.SUBJECT_RULE`)."""
        from neurokit.cards.layouts.folder import subject_rule

        return subject_rule(self)

    def summary(self) -> dict[str, Any]:
        return dict(self.raw)


def resolve_data_root(data_root: str | Path | None) -> Path:
    """The folder under which a card's recordings lie: ``data_root``, else ``$NEUROKIT_DATA``.

    Parameters
    ----------
    data_root : str | pathlib.Path | None
        The folder the user gave; ``None``: the ``NEUROKIT_DATA`` environment variable.

    Returns
    -------
    pathlib.Path
        The folder, ``~`` expanded.

    Raises
    ------
    CardError
        Neither is given, or the path is not a folder.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     resolve_data_root(d).is_dir()
    True
    """
    root = data_root or os.environ.get("NEUROKIT_DATA")
    if not root:
        raise CardError("no data root: pass data_root=PATH or set NEUROKIT_DATA")
    root = Path(root).expanduser()
    if not root.is_dir():
        raise CardError(f"data root {root} is not a folder")
    return root


def bids_card(
    root: str | Path, task: str, *, events: list[str] | None = None, label_column: str | None = None
) -> DataCard:
    """A data card made on the fly for a BIDS EEG dataset (``neuro prepare --bids ROOT --task TASK``).

    Labels: the ``trial_type`` values of the task's ``events.tsv`` files (all, or those in ``events``),
    each its own class in sorted order; or, with ``label_column``, the values of that
    ``participants.tsv`` column, one class per value, every window of a subject taking its value.
    Recipe: CBraMod's defaults (:class:`~neurokit.cards.recipes.EEGRecipe`) with the notch at the
    recordings' ``PowerLineFrequency``. Store subject ids are ``sub-<label>``.

    Parameters
    ----------
    root : str | pathlib.Path
        The BIDS dataset folder (holding ``dataset_description.json``).
    task : str
        The BIDS ``task-`` entity of the recordings to use; it is also the card's task name.
    events : list of str | None
        The ``trial_type`` values that become classes; ``None``: every value found.
    label_column : str | None
        A ``participants.tsv`` column labelling each subject (instead of events).

    Returns
    -------
    DataCard
        A card with a ``bids`` layout, one task and no fixed splits (``path`` is ``None``).

    Raises
    ------
    CardError
        Not a BIDS dataset, no recording of ``task``, no events / participants column to label with, recordings
        with different power-line frequencies.

    Examples
    --------
    >>> card = bids_card("~/data/ds004362", "imagery")  # doctest: +SKIP
    >>> card.classes()  # doctest: +SKIP
    ['left', 'right']
    """
    from neurokit.cards.recipes import EEGRecipe
    from neurokit.io.bids import (
        check_bids_root,
        find_recordings,
        read_line_freq,
        read_participants,
        trial_types,
    )

    root = check_bids_root(root)
    import json

    desc = json.loads((root / "dataset_description.json").read_text())
    recs = find_recordings(root, task)
    line = {read_line_freq(r.path) for r in recs}
    if len(line) > 1:
        raise CardError(
            f"{root}: recordings of task {task!r} give different PowerLineFrequency values {sorted(line, key=str)}"
        )
    tdef: dict[str, Any] = {"description": f"BIDS task {task!r}"}
    if label_column:
        parts = read_participants(root)
        vals = sorted({row.get(label_column, "n/a") for row in parts.values()} - {"n/a", ""})
        if not vals:
            raise CardError(
                f"{root}/participants.tsv: no column {label_column!r} with values (columns: "
                f"{sorted({c for row in parts.values() for c in row})})"
            )
        tdef.update(classes=vals, label_column=label_column)
    else:
        found = sorted({tt for r in recs for tt in trial_types(r.path)})
        chosen = list(events) if events else found
        unknown = sorted(set(chosen) - set(found))
        if unknown:
            raise CardError(f"{root}: trial type(s) {unknown} are in no events.tsv of task {task!r} (found: {found})")
        if chosen:
            tdef.update(classes=chosen, events={c: c for c in chosen})
    recipe = EEGRecipe(line_freq=line.pop() if line else None).to_dict()
    name = re.sub(r"[^A-Za-z0-9_]+", "_", str(desc.get("Name") or root.name)).strip("_").lower() or "bids"
    raw = {
        "name": name,
        "modality": "eeg",
        "title": desc.get("Name", root.name),
        "source": str(root),
        "licence": desc.get("License", "unknown"),
        "citation": desc.get("ReferencesAndLinks") or desc.get("HowToAcknowledge") or [],
        "layout": {"kind": "bids", "task": task, "subject_format": None},
        "tasks": {task: tdef},
        "preprocessing": recipe,
    }
    return DataCard(name=name, raw=raw)


def load_card(name_or_path: str | Path) -> DataCard:
    """Load a packaged card by name (``"physionet_mi"``) or a card file by path.

    Parameters
    ----------
    name_or_path : str | pathlib.Path
        A packaged card's name (:func:`list_cards`), or the path of a ``.yaml``/``.yml`` card file.

    Returns
    -------
    DataCard
        The parsed card, its keys checked.

    Raises
    ------
    CardError
        Unknown name, unreadable YAML, a required field missing, or a key neurokit does not read at any level
        (:func:`~neurokit.cards.schema.check_card_keys`: the message names the file, the key and the closest
        valid one).

    Examples
    --------
    >>> card = load_card("physionet_mi")
    >>> card.name, card.classes("left_right_imagery")
    ('physionet_mi', ['left_fist', 'right_fist'])
    """
    import yaml

    p = Path(name_or_path)
    if not (p.suffix in (".yaml", ".yml") and p.exists()):
        p = cards_dir() / f"{name_or_path}.yaml"
        if not p.exists():
            import difflib

            norm = str(name_or_path).lower().replace("-", "_")
            near = [c for c in list_cards() if c == norm or c.replace("_", "") == norm.replace("_", "")]
            near = near or difflib.get_close_matches(norm, list_cards(), n=1, cutoff=0.6)
            hint = f"did you mean {near[0]!r}? " if near else ""
            raise CardError(f"no data card {name_or_path!r}; {hint}known cards: {', '.join(list_cards())}")
    try:
        raw = yaml.safe_load(p.read_text())
    except yaml.YAMLError as exc:
        raise CardError(f"{p}: invalid YAML ({exc})") from exc
    if not isinstance(raw, dict):
        raise CardError(f"{p}: a card must be a YAML mapping")
    missing = [k for k in REQUIRED if k not in raw]
    if missing:
        import difflib

        typos = {
            k: difflib.get_close_matches(k, [str(x) for x in raw if x not in REQUIRED], n=1, cutoff=0.6)
            for k in missing
        }
        hint = "; ".join(f"is {c[0]!r} a misspelling of {k!r}?" for k, c in typos.items() if c)
        raise CardError(f"{p}: missing required field(s) {missing}" + (f" ({hint})" if hint else ""))
    check_card_keys(raw, str(p))
    return DataCard(name=raw["name"], raw=raw, path=p)
