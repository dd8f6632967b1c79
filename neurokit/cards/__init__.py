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
from typing import Any

from neurokit._utils.errors import CardError
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


def parse_ranges(spec: str | int | list) -> list[int]:
    """``"1-70"``, ``"1-3,7"``, ``5`` or ``[1, 2]`` → sorted list of ints."""
    if isinstance(spec, int):
        return [spec]
    if isinstance(spec, (list, tuple)):
        return sorted({int(s) for s in spec})
    out: set[int] = set()
    for part in str(spec).split(","):
        part = part.strip()
        if not part:
            continue
        m = re.fullmatch(r"(\d+)\s*-\s*(\d+)", part)
        if m:
            out.update(range(int(m.group(1)), int(m.group(2)) + 1))
        elif part.isdigit():
            out.add(int(part))
        else:
            raise CardError(f"cannot parse subject range {part!r} (use e.g. '1-70' or '1,3,5')")
    return sorted(out)




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

    def classes(self, task: str | None = None) -> list[str]:
        return list(self.task(task)[1].get("classes") or [])

    def splits(self, task: str | None = None) -> dict[str, list[str]]:
        """Split name → subject ids as stored in patch stores (e.g. ``"S001"``)."""
        _, t = self.task(task)
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
                raise CardError(f"card {self.name!r} has no channel set {name!r} and it is no 10-05 label; "
                                f"sets: {sorted(sets)} (or give labels 'C3,Cz,C4')")
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

    def recipe(self):
        """The card's preprocessing recipe: an :class:`~neurokit.cards.recipes.EEGRecipe` for an EEG card, a
        :class:`~neurokit.cards.recipes.SurfaceRecipe` for a surface card (its ``spheres`` are read by
        :meth:`spheres`).

        Raises
        ------
        CardError
            A modality without a recipe, or a ``preprocessing`` block with unknown keys or bad values
            (naming the card file).
        """
        from neurokit.cards.recipes import EEGRecipe, SurfaceRecipe

        pre = dict(self.raw.get("preprocessing") or {})
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
            raise CardError(f"{self.path or self.name}: preprocessing.spheres must map L/R to sphere files, got {sph!r}")
        return {str(k): str(v) for k, v in sph.items()}

    def recording(self) -> dict[str, Any]:
        """The card's ``recording`` block (mesh, TR, clips… of surface cards); ``{}`` when absent."""
        return dict(self.raw.get("recording") or {})

    def files(
        self,
        data_root: str | Path | None,
        task: str | None = None,
        subjects: list[int] | None = None,
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
            pats = layout.get("pattern", "**/*")
            pats = [pats] if isinstance(pats, str) else list(pats)
            paths = sorted({Path(p) for pat in pats for p in glob.glob(str(root / pat), recursive=True)})
            paths = [p for p in paths if p.is_file()]
            if not paths:
                raise CardError(f"card {self.name!r}: no file matches {pats} under {root}")
            # stable subject ids from the relative path: sorted listing, never listing order of the OS
            return [FileEntry(path=p, subject=p.relative_to(root).parts[0] if len(p.relative_to(root).parts) > 1 else p.stem, run=p.stem) for p in paths]
        if kind == "reader":
            return self._reader_files(root, layout, tname, t, subjects)
        raise CardError(f"card {self.name!r}: unknown layout kind {kind!r} (known: mne_eegbci, folder, bids, reader)")

    def _reader_files(self, root, layout, tname, t, subjects) -> list[FileEntry]:
        """Recordings listed by a dataset reader (``neurokit.io.clinical``), labelled by the task's
        ``events`` (annotation description → class name); ``subjects`` (numbers) keeps the subject ids
        whose digits match."""
        from neurokit.io.clinical import get_reader

        base = root / layout.get("subdir", "")
        classes = list(t.get("classes") or [])
        ev = t.get("events") or {}
        bad = sorted({v for v in ev.values() if v not in classes})
        if bad:
            raise CardError(f"card {self.name!r} task {tname!r}: event labels {bad} not in classes {classes}")
        events = {d: classes.index(v) for d, v in ev.items()} or None
        out = get_reader(layout["reader"]).entries(base)
        if subjects:
            keep = set(int(s) for s in subjects)
            out = [e for e in out if int(re.sub(r"\D", "", e.subject) or -1) in keep]
        if not out:
            raise CardError(f"card {self.name!r}: no recording for reader {layout['reader']!r} under {base}; "
                            "pass --data-root (or set NEUROKIT_DATA) to the folder holding it")
        for e in out:
            e.events = events
        return out

    def _eegbci_files(self, root, layout, tname, t, subjects, download) -> list[FileEntry]:
        classes = list(t.get("classes") or [])
        base = root / layout.get("subdir", "")
        wanted = subjects or sorted({s for v in (t.get("splits") or {}).values() for s in parse_ranges(v)})
        if not wanted:
            wanted = parse_ranges(layout.get("subjects", "1"))
        out: list[FileEntry] = []
        missing: list[str] = []
        for group in t.get("run_groups") or []:
            ev_names = group.get("events") or {}
            try:
                events = {str(desc): classes.index(label) for desc, label in ev_names.items()}
            except ValueError as exc:
                raise CardError(f"card {self.name!r} task {tname!r}: event label not in classes {classes}") from exc
            for subj in wanted:
                for run in group["runs"]:
                    p = base / layout["pattern"].format(subject=subj, run=run)
                    if not p.exists() and download:
                        _try_fetch_eegbci(root, subj, run)
                    if not p.exists():
                        missing.append(str(p.relative_to(root)))
                        continue
                    out.append(FileEntry(path=p, subject=f"S{subj:03d}", session="", run=f"R{run:02d}", events=events))
        if missing:
            logger.warning("card %s: %d file(s) not found under %s (e.g. %s); continuing with %d", self.name, len(missing), root, missing[0], len(out))
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
        from neurokit.io.bids import find_recordings, read_participants

        base = root / layout.get("subdir", "")
        classes = list(t.get("classes") or [])
        wanted = subjects or sorted({s for v in (t.get("splits") or {}).values() for s in parse_ranges(v)}) or None
        labels = None if wanted is None else [str(s) for s in wanted]
        recs = find_recordings(base, layout.get("task"), subjects=None)
        if labels is not None:  # BIDS labels may be zero-padded: match by number
            nums = {int(x) for x in labels}
            recs = [r for r in recs if (int(r.subject) if r.subject.isdigit() else None) in nums or r.subject in labels]
            if not recs:
                raise CardError(f"card {self.name!r}: no BIDS recording of subjects {labels} under {base}")

        def bad_label(what):
            return CardError(f"card {self.name!r} task {tname!r}: {what} not in classes {classes}")

        groups = []  # (runs or None, events)
        for g in t.get("run_groups") or []:
            try:
                groups.append(({int(r) for r in g["runs"]}, {d: classes.index(lbl) for d, lbl in g["events"].items()}))
            except ValueError as exc:
                raise bad_label(f"an event label of runs {g['runs']}") from exc
        if t.get("events"):
            try:
                groups.append((None, {d: classes.index(lbl) for d, lbl in t["events"].items()}))
            except ValueError as exc:
                raise bad_label("an event label") from exc
        column = t.get("label_column")
        participants = read_participants(base) if column else {}
        run_fmt = layout.get("run_format")
        out = []
        for r in recs:
            run = "" if r.run is None else (run_fmt.format(int(r.run)) if run_fmt and r.run.isdigit() else f"run-{r.run}")
            e = FileEntry(path=r.path, subject=self.store_subject(r.subject), session=r.session or "", run=run, reader="bids")
            if column:
                value = participants.get(r.subject, {}).get(column)
                if value is None:
                    raise CardError(f"{base / 'participants.tsv'}: no {column!r} value for sub-{r.subject}")
                if value not in classes:
                    raise bad_label(f"sub-{r.subject}'s {column}={value!r}")
                e.label = classes.index(value)
            elif groups:
                ev = next((ev for runs, ev in groups if runs is None or (r.run or "").isdigit() and int(r.run) in runs), None)
                if ev is None:
                    continue  # a run no group asks for
                e.events = ev
            out.append(e)
        if not out:
            raise CardError(f"card {self.name!r} task {tname!r}: no BIDS recording under {base} belongs to its run groups")
        return out

    def summary(self) -> dict[str, Any]:
        return dict(self.raw)


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


def bids_card(root: str | Path, task: str, *, events: list[str] | None = None, label_column: str | None = None) -> DataCard:
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
        raise CardError(f"{root}: recordings of task {task!r} give different PowerLineFrequency values {sorted(line, key=str)}")
    tdef: dict[str, Any] = {"description": f"BIDS task {task!r}"}
    if label_column:
        parts = read_participants(root)
        vals = sorted({row.get(label_column, "n/a") for row in parts.values()} - {"n/a", ""})
        if not vals:
            raise CardError(f"{root}/participants.tsv: no column {label_column!r} with values (columns: "
                            f"{sorted({c for row in parts.values() for c in row})})")
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
        "name": name, "modality": "eeg", "title": desc.get("Name", root.name), "source": str(root),
        "licence": desc.get("License", "unknown"), "citation": desc.get("ReferencesAndLinks") or desc.get("HowToAcknowledge") or [],
        "layout": {"kind": "bids", "task": task, "subject_format": None},
        "tasks": {task: tdef}, "preprocessing": recipe,
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
        raise CardError(f"{p}: missing required field(s) {missing}")
    check_card_keys(raw, str(p))
    return DataCard(name=raw["name"], raw=raw, path=p)
