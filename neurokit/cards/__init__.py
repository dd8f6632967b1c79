"""Data cards: one YAML file per dataset with its source, licence, citation, channels, rates,
events → labels, splits and preprocessing recipe.

Cards ship inside the wheel (``neurokit/data_cards``); in a source checkout they are read from the
repository's ``data_cards/`` folder. A path to a user's own ``.yaml`` works wherever a name does.
"""

from __future__ import annotations

import glob
import logging
import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Sequence

from neurokit._utils.errors import CardError, DataFileError
from neurokit.cards.schema import READING, check_card_keys
from neurokit.io.entry import FileEntry

logger = logging.getLogger("neurokit")

REQUIRED = ("name", "modality", "title", "source", "licence", "citation", "layout", "tasks", "preprocessing")


def cards_dir() -> Path:
    """Folder holding the packaged cards."""
    here = Path(__file__).resolve().parent.parent
    for cand in (here / "data_cards", here.parent / "data_cards"):
        if cand.is_dir():
            return cand
    raise CardError(f"no data_cards folder found next to {here}")


def list_cards() -> list[str]:
    """Names of the packaged data cards."""
    return sorted(p.stem for p in cards_dir().glob("*.yaml"))


#: the most subjects one range may name (a typo such as ``1-30000000`` would otherwise fill memory)
MAX_SUBJECTS = 1_000_000


def parse_ranges(spec: str | int | list) -> list[int]:
    """``"1-70"``, ``"1-3,7"``, ``5`` or ``[1, 2]`` → sorted list of ints.

    Raises
    ------
    CardError
        A part that is not a number or ``a-b``, a range that runs backwards (``3-1``), no subject at all (``""``),
        or more than :data:`MAX_SUBJECTS` subjects.
    """
    if isinstance(spec, int):
        return [spec]
    if isinstance(spec, (list, tuple)):
        return sorted({int(s) for s in spec})
    out: set[int] = set()
    for part in str(spec).split(","):
        part = part.strip()
        if not part:
            continue
        m = re.fullmatch(r"([0-9]+)\s*-\s*([0-9]+)", part)
        if m:
            lo, hi = int(m.group(1)), int(m.group(2))
            if hi < lo:
                raise CardError(f"subject range {part!r} runs backwards (did you mean '{hi}-{lo}'?)")
            if hi - lo + 1 + len(out) > MAX_SUBJECTS:
                raise CardError(f"subject range {part!r} names {hi - lo + 1:,} subjects (at most {MAX_SUBJECTS:,})")
            out.update(range(lo, hi + 1))
        elif re.fullmatch(r"[0-9]+", part):
            out.add(int(part))
        else:
            raise CardError(f"cannot parse subject range {part!r} (use e.g. '1-70' or '1,3,5')")
    if not out:
        raise CardError(f"no subject in {str(spec)!r} (use e.g. '1-70' or '1,3,5')")
    return sorted(out)


def format_ranges(numbers) -> str:
    """``[1, 2, 3, 7, 9, 10]`` → ``"1-3,7,9-10"``: the inverse of :func:`parse_ranges`, for messages."""
    nums = sorted({int(n) for n in numbers})
    parts, i = [], 0
    while i < len(nums):
        j = i
        while j + 1 < len(nums) and nums[j + 1] == nums[j] + 1:
            j += 1
        parts.append(str(nums[i]) if i == j else f"{nums[i]}-{nums[j]}")
        i = j + 1
    return ",".join(parts)


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
        """The events of a file of run ``run`` (``None``: its name gives no run): its group's, else the
        task-level events, else ``None`` (the file belongs to no group and the task labels no other file).
        A file whose name gives no run takes the only group of a task that has one (nothing to choose between)."""
        for runs, ev in self.groups:
            if run is not None and run in runs:
                return dict(ev)
        if run is None and len(self.groups) == 1 and self.events is None:
            return dict(self.groups[0][1])
        return None if self.events is None else dict(self.events)

    def of_file(self, path, run: int | None) -> dict[str, int] | None:
        """:meth:`of_run` for a file given by name (``-f``), refusing one that belongs to no group.

        Raises
        ------
        CardError
            The task labels by run groups, has no task-level events, and ``run`` is in none of them (the
            message names the file, its run and the groups' runs).
        """
        ev = self.of_run(run)
        if ev is None and self.groups:
            seen = "no run (none read from its name)" if run is None else f"run {run}"
            groups = "; ".join(f"runs {sorted(r)}" for r, _ in self.groups)
            raise CardError(
                f"{path}: {seen}, which no run group of card {self.card!r} task {self.task!r} names ({groups}); "
                "give files of those runs, another task, or give the task 'events' to label the files of other "
                "runs (a run is the BIDS run- entity, the pattern's 'run' group, or the number ending the file name)"
            )
        return ev


@dataclass
class DataCard:
    """A parsed data card (see ``data_cards/*.yaml``)."""

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
        """Task ``name`` (or the only/first one when ``None``)."""
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

        Raises
        ------
        CardError
            An event label that is not one of the task's classes (naming the group).
        """
        tname, t = self.task(task)
        classes = list(t.get("classes") or [])

        def events_of(mapping, what):
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
        one split) or ``"run"`` (a ``split_rule`` that splits some subject's recordings, as the release's)."""
        return str(self.task(task)[1].get("split_unit") or "subject")

    def apply_split_rule(self, task: str | None, entries: Sequence[FileEntry]) -> None:
        """Resolve the task's ``split_rule`` (:mod:`neurokit.cards.split_rules`) over ``entries`` (every recording
        the layout lists) into the card's ``splits`` and ``split_unit``, which the store records; nothing without
        a rule.

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

    def classes(self, task: str | None = None) -> list[str]:
        return list(self.task(task)[1].get("classes") or [])

    def splits(self, task: str | None = None) -> dict[str, list[str]]:
        """Split name → subject ids as stored in patch stores (e.g. ``"S001"``)."""
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
        (written in any case; put into 10-05 form, e.g. ``"c3,cz,c4"`` → ``["C3", "Cz", "C4"]``)."""
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
        ``encoding`` (of EDF/BDF annotations) and ``units`` (of channels whose unit is blank or unknown;
        one unit or label → unit)."""
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

        Raises
        ------
        CardError
            No data root, or no recording found under it.
        """
        root = resolve_data_root(data_root)
        layout = self.raw.get("layout") or {}
        kind = layout.get("kind")
        tname, t = self.task(task)
        if kind == "mne_eegbci":
            return self._eegbci_files(root, layout, tname, t, subjects, download)
        if kind == "bids":
            return self._bids_files(root, layout, tname, t, subjects)
        if kind == "folder":
            return self._folder_files(root, layout, tname, t, subjects)
        if kind == "reader":
            return self._reader_files(root, layout, tname, t, subjects)
        raise CardError(f"card {self.name!r}: unknown layout kind {kind!r} (known: mne_eegbci, folder, bids, reader)")

    def explicit_files(
        self, files: Sequence[str | Path], task: str | None = None, data_root: str | Path | None = None
    ) -> list[FileEntry]:
        """The recordings of files given by name (``neuro prepare -f``), with the subject, run and labels the
        card's layout gives the same files under ``--data-root``: one labelling rule (:meth:`task_events`) for
        every way in. Subject and run come from the layout: a BIDS layout's entities (read through
        ``events.tsv`` / ``channels.tsv``), an ``mne_eegbci`` layout's pattern, a folder layout's
        ``subject_pattern`` over the path under ``data_root`` (else the file name). Later parts of split FIF
        recordings are read through their first part (:func:`~neurokit.io.eeg.drop_split_parts`).

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
                    f"{f}: no such file" + (" (a folder: give it as --data-root)" if Path(f).is_dir() else "")
                )
        tname, _ = self.task(task)
        te = self.task_events(tname)
        layout = self.raw.get("layout") or {}
        kind = layout.get("kind")
        paths, _ = drop_split_parts(files)  # later parts of split FIF recordings: read through the first
        root = Path(data_root).expanduser() if data_root else None
        if kind == "bids":
            return self._bids_explicit(paths, layout, tname, root)
        pattern = layout.get("subject_pattern")
        out = []
        for f in paths:
            listed = self._reader_explicit(f, layout, te) if kind == "reader" else []
            if listed:  # the recordings the dataset reader finds in this file (an archive's members)
                out += listed
                continue
            rel = _relative(f, root)
            ids = _eegbci_ids(rel, layout["pattern"]) if kind == "mne_eegbci" and layout.get("pattern") else None
            if ids is not None:
                e = FileEntry(path=f, subject=f"S{ids[0]:03d}", run=f"R{ids[1]:02d}", events=te.of_file(f, ids[1]))
            else:
                subject = subject_of(rel, pattern, where=self.path or self.name)
                e = FileEntry(path=f, subject=subject, run=f.stem, events=te.of_file(f, run_of(rel, pattern)))
            out.append(e)
        if kind == "reader":
            self.apply_split_rule(tname, out)
        return out

    def _reader_explicit(self, f: Path, layout, te: TaskEvents) -> list[FileEntry]:
        """:meth:`explicit_files` of a ``reader`` card: the entries its dataset reader lists beside ``f`` that are
        ``f`` (an archive gives each member), labelled by the task's ``events`` as under the layout; ``[]`` when
        the reader lists no such file."""
        from neurokit.io.clinical import get_reader

        want = Path(f).expanduser().resolve()
        found = [e for e in get_reader(layout["reader"]).entries(want.parent) if Path(e.path).resolve() == want]
        for e in found:
            e.path, e.events = Path(f), te.events
        return found

    def _bids_explicit(self, paths, layout, tname, root: Path | None) -> list[FileEntry]:
        """:meth:`explicit_files` of a BIDS card: each file's entities from its name, its dataset folder the
        card's (``root`` / ``subdir``) or the nearest folder above it with a ``dataset_description.json``."""
        from neurokit.io.bids import BIDSRecording, dataset_root, entities_from_name

        out = []
        for f in paths:
            ent = entities_from_name(f)
            if not ent.get("subject"):
                raise CardError(f"{f}: no BIDS sub- entity in its name; card {self.name!r} reads a BIDS dataset")
            base = root / layout.get("subdir", "") if root is not None else dataset_root(f)
            rec = BIDSRecording(
                path=f, subject=ent["subject"], session=ent.get("session"), task=ent.get("task"), run=ent.get("run")
            )
            out += self._bids_entries([rec], base, layout, tname, explicit=True)
        return out

    def subject_rule(self) -> str:
        """The rule giving a folder layout's subject ids, in words (``neuro cards show``, store attributes):
        the card's ``layout.subject_pattern`` or :data:`SUBJECT_PATTERN`."""
        pat = (self.raw.get("layout") or {}).get("subject_pattern")
        return f"subject_pattern {pat!r}" if pat else SUBJECT_RULE

    def _folder_files(self, root, layout, tname, t, subjects) -> list[FileEntry]:
        """Recordings of a ``layout: {kind: folder, pattern, subject_pattern}`` card: the files the globs find
        (later parts of split FIF recordings left out: :func:`~neurokit.io.eeg.fif_split_first`), each with the
        subject :func:`subject_of` gives and the run :func:`run_of` reads from its name. A task's ``events``
        label every file; its ``run_groups`` label the files of their runs (and leave the others out)."""
        from neurokit.io.eeg import drop_split_parts

        pats = layout.get("pattern", "**/*")
        pats = [pats] if isinstance(pats, str) else list(pats)
        paths = sorted({Path(p) for pat in pats for p in glob.glob(str(root / pat), recursive=True)})
        paths = [p for p in paths if p.is_file()]
        if not paths:
            raise CardError(f"card {self.name!r}: no file matches {pats} under {root}")
        paths, later = drop_split_parts(paths)
        if later:
            logger.info(
                "card %s: %d later part(s) of split FIF recordings are read through their first part",
                self.name,
                len(later),
            )
        pattern = layout.get("subject_pattern")
        # stable subject ids from the relative path: sorted listing, never listing order of the OS
        out = [
            FileEntry(
                path=p, subject=subject_of(p.relative_to(root), pattern, where=self.path or self.name), run=p.stem
            )
            for p in paths
        ]
        if subjects:
            out = self._subjects_only(out, subjects, root, f" (subject ids by {self.subject_rule()})")
        return self._label_folder(out, root, tname, t, pattern)

    def _subjects_only(self, out: list[FileEntry], subjects, where, how: str = "") -> list[FileEntry]:
        """The entries of the subject numbers ``subjects`` (the first number in their ids: ``sub-01`` → 1, a file
        stem ``S001R10`` → 1, not 110); a number no entry has raises :class:`CardError` naming it and the subjects
        there are."""

        def number(e):
            m = re.search(r"[0-9]+", e.subject)
            return int(m.group(0)) if m else -1

        keep = {int(s) for s in subjects}
        missing = sorted(keep - {number(e) for e in out})
        if missing:
            ids = sorted({e.subject for e in out})
            shown = ", ".join(ids[:20]) + (f", … ({len(ids)} in all)" if len(ids) > 20 else "")
            raise CardError(
                f"card {self.name!r}: no recording of subjects {format_ranges(missing)} under {where}{how}; subjects "
                f"there: {shown or 'none'}"
            )
        return [e for e in out if number(e) in keep]

    def _label_folder(self, out, root, tname, t, pattern) -> list[FileEntry]:
        """Events of a folder layout's files by the task's rule (:meth:`task_events`: a file's run picks its run
        group, the task's ``events`` label the others); files the rule labels not are left out (see
        :meth:`_folder_files`)."""
        te = self.task_events(tname)
        if not te.labels:
            return out
        runs = {e.path: run_of(e.path.relative_to(root), pattern) for e in out}
        labelled = []
        for e in out:
            ev = te.of_run(runs[e.path])
            if ev is not None:
                e.events = ev
                labelled.append(e)
        if not labelled:
            found = sorted({r for r in runs.values() if r is not None})
            asked = te.runs()
            raise CardError(
                f"card {self.name!r} task {tname!r}: its run_groups ask for runs {asked}, but no file under {root} "
                f"has such a run (runs read from the file names: {found or 'none'}; a run is the BIDS run- entity, "
                "the pattern's 'run' group, or the number ending the file name, e.g. Subject02_1.edf: run 1). "
                "Fix the runs, or give the task 'events' to label every file"
            )
        if len(labelled) < len(out):
            logger.warning(
                "card %s task %s: %d of %d files belong to no run group and are left out",
                self.name,
                tname,
                len(out) - len(labelled),
                len(out),
            )
        return labelled

    def _reader_files(self, root, layout, tname, t, subjects) -> list[FileEntry]:
        """Recordings listed by a dataset reader (``neurokit.io.clinical``), labelled by the task's
        ``events`` (annotation description → class name); ``subjects`` (numbers) keeps the subject ids
        whose digits match."""
        from neurokit.io.clinical import get_reader

        base = root / layout.get("subdir", "")
        events = self.task_events(tname).events
        out = get_reader(layout["reader"]).entries(base)
        self.apply_split_rule(tname, out)  # over every recording, before --subjects picks some
        if subjects:
            out = self._subjects_only(out, subjects, base)
        if not out:
            raise CardError(
                f"card {self.name!r}: no recording for reader {layout['reader']!r} under {base}; "
                "pass --data-root (or set NEUROKIT_DATA) to the folder holding it"
            )
        for e in out:
            e.events = events
        return out

    def _eegbci_files(self, root, layout, tname, t, subjects, download) -> list[FileEntry]:
        base = root / layout.get("subdir", "")
        wanted = subjects or sorted({s for v in (t.get("splits") or {}).values() for s in parse_ranges(v)})
        if not wanted:
            wanted = parse_ranges(layout.get("subjects", "1"))
        if layout.get("subjects") is not None:  # the subjects the dataset has: nothing else can be fetched or found
            have = set(parse_ranges(layout["subjects"]))
            outside = sorted(set(wanted) - have)
            if outside:
                what = "--subjects" if subjects else f"task {tname!r}'s splits"
                raise CardError(
                    f"card {self.name!r}: {what} ask for subjects {format_ranges(outside)}, which the dataset does "
                    "not have "
                    f"(its subjects: {layout['subjects']})"
                )
        out: list[FileEntry] = []
        missing: list[str] = []
        for runs, events in self.task_events(tname).groups:
            for subj in wanted:
                for run in sorted(runs):
                    p = base / layout["pattern"].format(subject=subj, run=run)
                    if not p.exists() and download:
                        _try_fetch_eegbci(root, subj, run)
                    if not p.exists():
                        missing.append(str(p.relative_to(root)))
                        continue
                    out.append(FileEntry(path=p, subject=f"S{subj:03d}", session="", run=f"R{run:02d}", events=events))
        if missing:
            logger.warning(
                "card %s: %d file(s) not found under %s (e.g. %s); continuing with %d",
                self.name,
                len(missing),
                root,
                missing[0],
                len(out),
            )
        if not out:
            raise CardError(
                f"card {self.name!r}: no recording of task {tname!r} under {base}. Expected e.g. "
                f"{base / layout['pattern'].format(subject=wanted[0], run=t['run_groups'][0]['runs'][0])}; "
                "pass --data-root (or set NEUROKIT_DATA) to the folder holding MNE-eegbci-data/"
            )
        out.sort(key=lambda e: (e.subject, e.run))
        return out

    def bids_root(self, data_root: str | Path | None) -> Path:
        """The BIDS dataset folder of a ``layout: {kind: bids}`` card: ``data_root`` / ``layout.subdir``."""
        return resolve_data_root(data_root) / (self.raw.get("layout") or {}).get("subdir", "")

    def store_subject(self, label: str) -> str:
        """Store id of a BIDS subject label: the card's ``subject_format`` applied to a numeric label
        (``"001"`` → ``"S001"``, the ids its splits use), ``"sub-<label>"`` otherwise or without a format."""
        fmt = (self.raw.get("layout") or {}).get("subject_format", "S{:03d}")
        return fmt.format(int(label)) if fmt and label.isdigit() else f"sub-{label}"

    def _bids_files(self, root, layout, tname, t, subjects) -> list[FileEntry]:
        """Recordings of a BIDS dataset (``layout: {kind: bids, task: BIDS task label, subdir, subject_format,
        run_format}``). Labels come from ``events.tsv`` ``trial_type`` through the task's ``run_groups``
        (BIDS runs) or ``events`` mapping, or from a ``participants.tsv`` column (task ``label_column``)."""
        from neurokit.io.bids import find_recordings

        base = root / layout.get("subdir", "")
        wanted = subjects or sorted({s for v in (t.get("splits") or {}).values() for s in parse_ranges(v)}) or None
        labels = None if wanted is None else [str(s) for s in wanted]
        recs = find_recordings(base, layout.get("task"), subjects=None)
        if labels is not None:  # BIDS labels may be zero-padded: match by number
            nums = {int(x) for x in labels}
            there = sorted({r.subject for r in recs})
            recs = [r for r in recs if (int(r.subject) if r.subject.isdigit() else None) in nums or r.subject in labels]
            found = {int(r.subject) if r.subject.isdigit() else r.subject for r in recs}
            missing = sorted(n for n in nums if n not in found and str(n) not in found)
            if not recs or subjects and missing:
                raise CardError(
                    f"card {self.name!r}: no BIDS recording of subjects {missing or labels} under {base} "
                    f"(subjects there: {', '.join(there[:20])}{'…' if len(there) > 20 else ''})"
                )

        out = self._bids_entries(recs, base, layout, tname)
        if not out:
            raise CardError(
                f"card {self.name!r} task {tname!r}: no BIDS recording under {base} belongs to its run groups"
            )
        return out

    def _bids_entries(self, recs, base, layout, tname, explicit: bool = False) -> list[FileEntry]:
        """The :class:`FileEntry` of each BIDS recording of ``recs``, labelled by the task's rule
        (:meth:`task_events` over the BIDS run) or its ``participants.tsv`` column (``label_column``). A
        recording the rule labels not is left out with a warning, or, ``explicit`` (named by ``-f``), refused."""
        from neurokit.io.bids import read_participants

        t = self.task(tname)[1]
        classes = list(t.get("classes") or [])
        te = self.task_events(tname)
        column = t.get("label_column")
        participants = read_participants(base) if column else {}
        run_fmt = layout.get("run_format")
        out, left = [], 0
        for r in recs:
            run = (
                "" if r.run is None else (run_fmt.format(int(r.run)) if run_fmt and r.run.isdigit() else f"run-{r.run}")
            )
            e = FileEntry(
                path=r.path, subject=self.store_subject(r.subject), session=r.session or "", run=run, reader="bids"
            )
            if column:
                value = participants.get(r.subject, {}).get(column)
                if value is None:
                    raise CardError(f"{base / 'participants.tsv'}: no {column!r} value for sub-{r.subject}")
                if value not in classes:
                    raise CardError(
                        f"card {self.name!r} task {tname!r}: sub-{r.subject}'s {column}={value!r} not in classes "
                        f"{classes}"
                    )
                e.label = classes.index(value)
            elif te.labels:
                n = int(r.run) if r.run and r.run.isdigit() else None
                ev = te.of_file(r.path, n) if explicit else te.of_run(n)
                if ev is None:
                    left += 1  # a run no group asks for
                    continue
                e.events = ev
            out.append(e)
        if left and out:
            logger.warning(
                "card %s task %s: %d of %d BIDS recordings belong to no run group and are left out",
                self.name,
                tname,
                left,
                len(recs),
            )
        return out

    def summary(self) -> dict[str, Any]:
        return dict(self.raw)


#: The default subject rule of folder layouts (a card's ``layout.subject_pattern`` or ``neuro prepare
#: --subject-pattern`` replaces it): a BIDS ``sub-<label>`` entity anywhere in the path relative to the data
#: root gives ``sub-<label>``; otherwise the file name up to its first ``_`` or ``.`` (``Subject02_1.edf`` and
#: ``Subject02_2.edf`` → ``Subject02``; TUEG ``aaaaaaab_s001_t000.edf`` → ``aaaaaaab``, the patient).
SUBJECT_PATTERN = r"(?P<subject>[^/_.]+)[^/]*$"
SUBJECT_RULE = (
    "the BIDS sub- entity of the path, else the file name up to its first '_' or '.' "
    f"(subject_pattern {SUBJECT_PATTERN!r})"
)
_BIDS_SUB = re.compile(r"(?:^|[/_])sub-(?P<subject>[A-Za-z0-9]+)")
_BIDS_RUN = re.compile(r"(?:^|[/_])run-(?P<run>\d+)")


def subject_of(rel_path: str | Path, pattern: str | None = None, *, where: str | Path = "card") -> str:
    """The subject id of a file of a folder layout, from its path relative to the data root.

    Parameters
    ----------
    rel_path : str | Path
        The file's path under the data root (matched with ``/`` separators).
    pattern : str, optional
        A regular expression searched in ``rel_path``: the subject is its group ``subject``, else its first group,
        else the whole match (``"^(?P<subject>[^/]+)/"``: the first folder). ``None``: the default rule
        (:data:`SUBJECT_RULE`): a BIDS ``sub-`` entity, else :data:`SUBJECT_PATTERN` over the file name.
    where : str | Path
        The card, for messages.

    Returns
    -------
    str
        The subject id.

    Raises
    ------
    CardError
        ``pattern`` is not a valid regular expression, or does not match ``rel_path``.

    Examples
    --------
    >>> subject_of("Subject02_1.edf"), subject_of("Subject02_2.edf")
    ('Subject02', 'Subject02')
    >>> subject_of("sub-07/eeg/sub-07_task-rest_eeg.edf")
    'sub-07'
    >>> subject_of("S001/S001R04.edf", r"^(?P<subject>[^/]+)/")
    'S001'
    """
    rel = Path(rel_path).as_posix()
    if pattern is None:
        m = _BIDS_SUB.search(rel)
        if m:
            return f"sub-{m['subject']}"
        pattern = SUBJECT_PATTERN
    try:
        rx = re.compile(pattern)
    except re.error as exc:
        raise CardError(f"{where}: subject_pattern {pattern!r} is not a valid regular expression ({exc})") from None
    m = rx.search(rel)
    if m is None:
        raise CardError(
            f"{where}: subject_pattern {pattern!r} does not match the file {rel!r}; give a pattern "
            "that matches every file (its group 'subject' is the subject id)"
        )
    subj = m["subject"] if "subject" in rx.groupindex else m.group(1) if rx.groups else m.group(0)
    if not subj:
        raise CardError(f"{where}: subject_pattern {pattern!r} gives an empty subject id for {rel!r}")
    return subj


def run_of(rel_path: str | Path, pattern: str | None = None) -> int | None:
    """The run number of a folder layout's file: the group ``run`` of ``pattern`` (a card's
    ``layout.subject_pattern``) when it has one, else a BIDS ``run-`` entity, else the number ending the file
    name (``Subject02_1.edf`` → 1, ``S001R04.edf`` → 4); ``None`` when there is none.

    Examples
    --------
    >>> run_of("Subject02_2.edf"), run_of("sub-01_task-x_run-03_eeg.edf"), run_of("rec.edf")
    (2, 3, None)
    """
    rel = Path(rel_path).as_posix()
    if pattern:
        m = re.search(pattern, rel)
        if m and "run" in m.re.groupindex and m["run"] is not None:
            return int(m["run"]) if m["run"].isdigit() else None
    m = _BIDS_RUN.search(rel)
    if m:
        return int(m["run"])
    stem = Path(rel).name.split(".")[0]
    m = re.search(r"(\d+)$", stem)
    return int(m.group(1)) if m else None


def _relative(path: Path, root: Path | None) -> Path:
    """``path`` under ``root`` when it lies there (resolved), else its file name: what a layout's rules read."""
    if root is not None:
        p, r = Path(path).expanduser().resolve(), root.resolve()
        if p.is_relative_to(r):
            return p.relative_to(r)
    return Path(Path(path).name)


def _eegbci_ids(rel: Path, pattern: str) -> tuple[int, int] | None:
    """``(subject, run)`` numbers of a file of an ``mne_eegbci`` layout, read through the layout's ``pattern``
    (``"S{subject:03d}/S{subject:03d}R{run:02d}.edf"``) matched at the end of its path, or of its name alone;
    ``None`` when neither matches."""
    import string

    def regex(pat: str) -> str:
        parts: list[str] = []
        for literal, field_name, _spec, _conv in string.Formatter().parse(pat):
            parts.append(re.escape(literal))
            if field_name in ("subject", "run"):
                seen = any(f"(?P<{field_name}>" in x for x in parts)
                parts.append(f"(?P={field_name})" if seen else f"(?P<{field_name}>\\d+)")
            elif field_name is not None:
                parts.append(".*?")
        return "".join(parts)

    for pat in dict.fromkeys((pattern, pattern.rsplit("/", 1)[-1])):
        try:
            m = re.search(f"(?:^|/){regex(pat)}$", rel.as_posix(), flags=re.I)
        except (re.error, ValueError):
            continue
        if m and "subject" in m.re.groupindex and "run" in m.re.groupindex:
            return int(m["subject"]), int(m["run"])
    return None


@lru_cache(maxsize=1)
def _online() -> bool:
    """Whether PhysioNet is reachable (checked once per process; never in CI or with NEUROKIT_OFFLINE)."""
    if os.environ.get("NEUROKIT_OFFLINE") or os.environ.get("CI"):
        return False
    import socket

    try:
        socket.create_connection(("physionet.org", 443), timeout=3).close()
        return True
    except OSError:
        return False


def _try_fetch_eegbci(root: Path, subject: int, run: int) -> None:
    if not _online():
        return
    try:
        import mne

        mne.datasets.eegbci.load_data(subject, [run], path=str(root), update_path=False, verbose="error")
    except Exception as exc:  # network errors: keep going with what is on disk
        logger.warning("could not fetch EEGMMIDB S%03d R%02d: %s", subject, run, exc)


def resolve_data_root(data_root: str | Path | None) -> Path:
    root = data_root or os.environ.get("NEUROKIT_DATA")
    if not root:
        raise CardError("no data root: pass --data-root PATH or set NEUROKIT_DATA")
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

    Raises
    ------
    CardError
        Not a BIDS dataset, no recording of ``task``, no events / participants column to label with.
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

    Raises
    ------
    CardError
        Unknown name, unreadable YAML, a required field missing, or a key neurokit does not read at any level
        (:func:`~neurokit.cards.schema.check_card_keys`: the message names the file, the key and the closest
        valid one).
    """
    import yaml

    p = Path(name_or_path)
    if not (p.suffix in (".yaml", ".yml") and p.exists()):
        p = cards_dir() / f"{name_or_path}.yaml"
        if not p.exists():
            raise CardError(f"no data card {name_or_path!r}; known cards: {', '.join(list_cards())}")
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
