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

from .._errors import CardError

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
class FileEntry:
    """One recording a card points to."""

    path: Path
    subject: str
    session: str = ""
    run: str = ""
    events: dict[str, int] | None = None  # annotation description → class index


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
        return {k: [fmt.format(s) for s in parse_ranges(v)] for k, v in (t.get("splits") or {}).items()}

    def channel_set(self, name: str) -> list[str]:
        """A named channel subset from the card's ``channel_sets``, or a comma-separated list of labels
        (written in any case; put into 10-05 form, e.g. ``"c3,cz,c4"`` → ``["C3", "Cz", "C4"]``)."""
        from ..io.eeg import normalize_ch_name

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
        unknown = sorted(set(opts) - {"encoding", "units"})
        if unknown:
            raise CardError(f"{self.path or self.name}: unknown reading keys {unknown}; allowed: ['encoding', 'units']")
        return opts

    def recipe(self):
        from ..preprocessing.eeg import EEGRecipe

        if self.modality != "eeg":
            raise CardError(f"card {self.name!r} is a {self.modality} card, not EEG")
        try:
            return EEGRecipe.from_dict(self.raw.get("preprocessing"))
        except (ValueError, TypeError) as exc:
            raise CardError(f"{self.path or self.name}: preprocessing block: {exc}") from exc

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
        if kind == "folder":
            pats = layout.get("pattern", "**/*")
            pats = [pats] if isinstance(pats, str) else list(pats)
            paths = sorted({Path(p) for pat in pats for p in glob.glob(str(root / pat), recursive=True)})
            paths = [p for p in paths if p.is_file()]
            if not paths:
                raise CardError(f"card {self.name!r}: no file matches {pats} under {root}")
            # stable subject ids from the relative path: sorted listing, never listing order of the OS
            return [FileEntry(path=p, subject=p.relative_to(root).parts[0] if len(p.relative_to(root).parts) > 1 else p.stem, run=p.stem) for p in paths]
        raise CardError(f"card {self.name!r}: unknown layout kind {kind!r} (known: mne_eegbci, folder)")

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


def load_card(name_or_path: str | Path) -> DataCard:
    """Load a packaged card by name (``"physionet_mi"``) or a card file by path.

    Raises
    ------
    CardError
        Unknown name, unreadable YAML, or a required field missing.
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
    return DataCard(name=raw["name"], raw=raw, path=p)
