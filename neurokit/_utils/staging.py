"""Replacing an output whole: a run that replaces an earlier one (``--overwrite``) writes beside it in a
hidden sibling folder and swaps the two only when it has finished, so that a run stopped half-way (Ctrl-C,
a full disk, an error) leaves the earlier one as it was. In a run folder only the earlier run's own entries
are replaced (those its manifest, :data:`MANIFEST`, lists): the user's notes, figures and sub-folders there
stay where they are."""

from __future__ import annotations

import fnmatch
import json
import logging
import os
import shutil
from pathlib import Path

from neurokit._utils.errors import ConfigError, DiskFullError, Interrupted, NeurokitError
from neurokit._utils.locks import main_process

logger = logging.getLogger("neurokit")


#: names of the files a run writes into its folder (fnmatch patterns): logs, reports, checkpoints, configs,
#: summaries. A folder holding any of them, or a sub-folder holding any (the folds of an evaluation scheme,
#: the runs of a comparison), holds a run.
RUN_FILE_PATTERNS = (
    "*.jsonl",  # metrics.jsonl
    "report.json",
    "*summary.json",
    "comparison.json",
    "*.pt",
    "*.safetensors",
    "*config*.json",
    "*config*.yaml",
    "*config*.yml",
    "run.json",
    "run_record*.json",
)


def run_files(out: str | Path) -> list[Path]:
    """The run files in folder ``out`` and in its sub-folders (one level down), sorted; ``[]`` when ``out``
    does not exist or holds none (:data:`RUN_FILE_PATTERNS`; hidden entries such as locks are ignored).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> out = pathlib.Path(tempfile.mkdtemp()); _ = (out / "metrics.jsonl").write_text("{}")
    >>> [p.name for p in run_files(out)]
    ['metrics.jsonl']
    """
    out = Path(out)
    if not out.is_dir():
        return []
    found = []
    for p in out.iterdir():
        if p.name.startswith("."):
            continue
        if p.is_dir():
            found += [q for q in p.iterdir() if q.is_file() and _is_run_file(q.name)]
        elif _is_run_file(p.name):
            found.append(p)
    return sorted(found)


def _is_run_file(name: str) -> bool:
    return any(fnmatch.fnmatch(name, pat) for pat in RUN_FILE_PATTERNS)


def run_kind(out: str | Path) -> str | None:
    """What folder ``out`` holds, by the report its command writes there: ``"pretraining run"``
    (``pretrain_summary.json``), ``"comparison"`` (``comparison.json``), ``"M4oE run"`` (a ``report.json`` of
    head ``m4oe``), ``"fine-tuning run"`` (another ``report.json``, or ``best.pt``); ``None`` when it holds none
    of them (no run, or one stopped before its report: a log or ``last.pt`` only).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> out = pathlib.Path(tempfile.mkdtemp()); _ = (out / "pretrain_summary.json").write_text("{}")
    >>> run_kind(out)
    'pretraining run'
    """
    out = Path(out)
    if (out / "pretrain_summary.json").is_file():
        return "pretraining run"
    if (out / "comparison.json").is_file():
        return "comparison"
    if (out / "report.json").is_file():
        try:
            head = json.loads((out / "report.json").read_text()).get("head")
        except (OSError, ValueError, AttributeError):  # unreadable, not JSON, not an object
            head = None
        return "M4oE run" if head == "m4oe" else "fine-tuning run"
    return "fine-tuning run" if (out / "best.pt").is_file() else None


#: the command that writes each kind of run folder (:func:`run_kind`)
RUN_COMMANDS = {
    "pretraining run": "neuro pretrain",
    "fine-tuning run": "neuro finetune",
    "M4oE run": "neuro finetune with head='m4oe'",
    "comparison": "neuro finetune with compare_scratch=True, seeds= or label_fractions=",
}


#: the run's list of the entries it wrote into its folder (hidden, in the folder): what ``--overwrite``
#: replaces; every other entry of the folder (the user's) is kept
MANIFEST = ".neurokit-run.json"

#: the files neurokit's runs write into a run folder, by their exact names (a folder written before the
#: manifest, and the entries a run writes straight into a folder that held others: these are the run's)
RUN_OUTPUTS = frozenset(
    {
        "last.pt",
        "best.pt",
        "metrics.jsonl",
        "metrics.csv",
        "report.json",
        "predictions.npz",
        "results.csv",
        "run_config.json",
        "pretrain_summary.json",
        "comparison.json",
        "comparison.csv",
        "last.pt.tmp",  # left by a save stopped half-way
        "best.pt.tmp",
        "metrics.jsonl.tmp",
        "metrics.csv.tmp",
    }
)

#: the sub-folders a run writes (fnmatch patterns): its figures (``--plots``) and an evaluation scheme's folds;
#: one is the run's when it holds only run outputs and figures
RUN_FOLDERS = ("plots", "fold-*", "tensorboard")
_FIGURES = ("*.png", "events.out.tfevents.*")  # figures, and TensorBoard's event files


def is_run_output(path: str | Path) -> bool:
    """Whether ``path`` is an entry neurokit's runs write into a run folder: a file of :data:`RUN_OUTPUTS`, or a
    sub-folder of :data:`RUN_FOLDERS` holding only such files and figures (the entry the manifest would list)."""
    p = Path(path)
    if p.is_dir():
        return any(fnmatch.fnmatch(p.name, pat) for pat in RUN_FOLDERS) and all(
            q.is_file() and (q.name in RUN_OUTPUTS or any(fnmatch.fnmatch(q.name, f) for f in _FIGURES))
            for q in p.iterdir()
        )
    return p.name in RUN_OUTPUTS


def _read_manifest(folder: Path) -> set[str] | None:
    try:
        names = json.loads((folder / MANIFEST).read_text())["entries"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return {n for n in names if isinstance(n, str)} if isinstance(names, list) else None


def _write_manifest(folder: Path, names) -> None:
    """Record ``names`` as the run's entries of ``folder``; a manifest that cannot be written leaves the
    rule of :func:`is_run_output` to a later ``--overwrite``."""
    try:
        (folder / MANIFEST).write_text(json.dumps({"entries": sorted(set(names) - {MANIFEST})}, indent=1) + "\n")
    except OSError:
        pass


def own_entries(folder: str | Path) -> set[str]:
    """The names of the entries of run folder ``folder`` that are the run's: those its manifest
    (:data:`MANIFEST`) lists, or for a folder without one those of :func:`is_run_output`; ``set()`` when
    ``folder`` does not exist. The manifest itself counts as the run's.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> out = pathlib.Path(tempfile.mkdtemp())
    >>> for name in ("last.pt", "notes.txt", "my_config.yaml"): _ = (out / name).write_text("")
    >>> sorted(own_entries(out))
    ['last.pt']
    """
    folder = Path(folder)
    if not folder.is_dir():
        return set()
    names = _read_manifest(folder)
    present = {p.name for p in folder.iterdir()}
    if names is None:
        names = {n for n in present if is_run_output(folder / n)}
    return (names | {MANIFEST}) & present


def claim_entries(folder: str | Path, names) -> None:
    """Add ``names`` (entries written into run folder ``folder`` after its run, such as ``plots``) to the
    run's manifest, so that ``--overwrite`` replaces them with the run's other files. Only the main process
    of a distributed run writes."""
    folder = Path(folder)
    if main_process() and folder.is_dir():
        _write_manifest(folder, own_entries(folder) | {n for n in names if (folder / n).exists()})


def kept_line(folder: str | Path, kept, renamed=None) -> str:
    """The one line saying which entries of ``folder`` a replaced run left in place (folders end in ``/``)."""
    folder, renamed = Path(folder), dict(renamed or {})
    back = {v: k for k, v in renamed.items()}
    shown = []
    for n in sorted(kept):
        name = n + ("/" if (folder / n).is_dir() else "")
        shown.append(f"{back[n]} (as {name}: the new run wrote its own {back[n]})" if n in back else name)
    more = f" and {len(shown) - 8} more" if len(shown) > 8 else ""
    what = "1 file that is" if len(shown) == 1 else f"{len(shown)} files that are"
    return f"{folder}: kept {what} not this run's: {', '.join(shown[:8])}{more}"


def _free_name(folder: Path, name: str, taken: set[str]) -> str:
    """A name beside ``name`` that neither ``folder`` nor ``taken`` holds: ``NAME.kept``, ``NAME.kept2``…"""
    k, cand = 1, f"{name}.kept"
    while cand in taken or (folder / cand).exists():
        k += 1
        cand = f"{name}.kept{k}"
    return cand


def _old_sibling(out: Path) -> Path:
    out = Path(os.path.abspath(out))  # ``.`` and ``..`` named by the folder they are (links are not followed)
    return out.with_name(f".{out.name}.old")


def recover_run_folder(out: str | Path) -> None:
    """Finish what a replacement of run folder ``out`` stopped half-way (a killed process) left: the earlier
    run back in place when ``out`` is missing, or the user's entries still in the sibling ``.NAME.old`` moved
    back into ``out``; then the sibling is removed. Only the main process moves files."""
    out = Path(out)
    old = _old_sibling(out)
    if not main_process() or not old.is_dir():
        return
    if not out.exists():  # stopped between the two renames: the earlier run was not replaced
        os.replace(old, out)
        return
    own, taken = own_entries(old), {p.name for p in out.iterdir()}
    for p in sorted(old.iterdir()):
        if p.name not in own:
            name = p.name if p.name not in taken else _free_name(out, p.name, taken)
            os.replace(p, out / name)
            taken.add(name)
    shutil.rmtree(old, ignore_errors=True)


def remove_run(folder: str | Path) -> bool:
    """Remove the run's own entries of ``folder`` (:func:`own_entries`), and ``folder`` itself when nothing
    else is left; returns whether ``folder`` is gone."""
    folder = Path(folder)
    for name in own_entries(folder):
        p = folder / name
        shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink(missing_ok=True)
    try:
        folder.rmdir()
    except OSError:
        return not folder.exists()
    return True


def refuse_run_folder(out: str | Path, what: str = "run") -> None:
    """Refuse a fresh run (a ``what``: ``"pretraining run"``…) into ``out`` when it holds the files of another
    (:func:`run_files`), so two runs never mix their logs: the message names the files, the kind of run they are
    (:func:`run_kind`) and the ways on (``--overwrite``; ``--resume`` where the run is of the same kind).

    Raises
    ------
    FileExistsError
        ``out`` holds run files.
    """
    found = run_files(out)
    if found:
        names = ", ".join(str(p.relative_to(out)) for p in found[:6]) + (
            f" and {len(found) - 6} more" if len(found) > 6 else ""
        )
        kind = run_kind(out)
        if kind is not None and what != "run" and kind != what:  # another command's run: nothing to resume
            raise FileExistsError(
                f"{out} already holds a run ({names}: {_a(kind)}, from {RUN_COMMANDS[kind]}), not {_a(what)}; "
                "choose another output folder, or pass overwrite=True to replace it"
            )
        of = f", of {_a(kind)}" if kind else ""  # none: a run stopped before its report (a log, last.pt)
        # resuming needs a checkpoint: offered only where there is one
        again = "pass resume=True to continue it, " if (Path(out) / "last.pt").is_file() else "pass "
        raise FileExistsError(
            f"{out} already holds a run ({names}{of}); {again}overwrite=True to clear it and "
            "start again, or choose another output folder"
        )


def _a(name: str) -> str:
    """``name`` with its article: ``"a fine-tuning run"``, ``"an M4oE run"``."""
    return f"{'an' if name[:1] in 'aeiouM' else 'a'} {name}"


class StagedOutput:
    """The folder a run writes to: ``out`` itself, or (``replace=True``) the sibling ``.NAME.new`` that
    :meth:`commit` swaps in for ``out`` (the earlier output goes to ``.NAME.old``, then is removed).

    Parameters
    ----------
    out : path
        The output folder.
    replace : bool
        ``out`` holds an earlier output that the new one replaces.
    run_folder : bool
        ``out`` is a run folder: :meth:`commit` replaces only the earlier run's own entries
        (:func:`own_entries`) and keeps the others where they are (the user's notes, figures, sub-folders; one
        line names them, :attr:`kept`), and records the new run's entries in its manifest (:data:`MANIFEST`).
        Otherwise the whole folder is replaced (a shard set).
    resume : bool
        (``run_folder``) The run continues the one in ``out``: its entries stay the run's.
    main : bool, optional
        Whether this process moves folders (default :func:`~neurokit._utils.locks.main_process`: rank 0 of a
        distributed run; the other ranks only learn :attr:`work`).

    Attributes
    ----------
    work : Path
        Where to write.
    staged : bool
        Whether ``work`` is the sibling (``replace``).
    kept : list of str
        (``run_folder``, after :meth:`commit`) The entries of ``out`` that are not the run's, left in place.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "run"; out.mkdir(); _ = (out / "a.txt").write_text("old")
    >>> st = StagedOutput(out, replace=True); st.work.mkdir(); _ = (st.work / "a.txt").write_text("new")
    >>> _ = st.commit(); (out / "a.txt").read_text()
    'new'
    """

    def __init__(
        self,
        out: str | Path,
        replace: bool,
        *,
        run_folder: bool = False,
        resume: bool = False,
        main: bool | None = None,
    ) -> None:
        self.out = Path(out)
        self.staged = bool(replace)
        if self.out.exists() and not self.out.is_dir():
            raise NotADirectoryError(f"{self.out} is a file, not a run folder; choose another output folder")
        here = Path.cwd().resolve() if self.staged else None
        if here is not None and (self.out.resolve() == here or self.out.resolve() in here.parents):
            where = (
                "is the folder you are in" if self.out.resolve() == here else f"holds the folder you are in ({here})"
            )
            raise ConfigError(
                f"{self.out} {where}: overwrite=True moves the earlier output aside and the new "
                "one in its place, which would pull the current folder from under you; run the command from outside "
                "that folder, or choose another output folder"
            )
        self.run_folder = run_folder
        self.main = main_process() if main is None else main
        self.work = self.out.with_name(f".{self.out.name}.new") if self.staged else self.out
        self.kept: list[str] = []
        self.swapped = False
        if run_folder and self.main:
            recover_run_folder(self.out)
        if self.staged and self.main:
            shutil.rmtree(self.work, ignore_errors=True)  # left by a run stopped before it could clean up
        # a run written straight into ``out``: what is there now is not the run's, but for the run it resumes
        self._mine = own_entries(self.out) if run_folder and resume else set()
        self._before = {p.name for p in self.out.iterdir()} if run_folder and self.out.is_dir() else set()

    def commit(self) -> Path:
        """Put the new output in place of the earlier one; returns ``out``."""
        if not self.main:
            return self.out
        if not self.staged:
            if self.run_folder and self.out.is_dir():
                new = {p.name for p in self.out.iterdir() if p.name not in self._before and is_run_output(p)}
                _write_manifest(self.out, (self._mine & {p.name for p in self.out.iterdir()}) | new)
            return self.out
        old = _old_sibling(self.out)
        if not self.run_folder:
            shutil.rmtree(old, ignore_errors=True)
            if self.out.exists():
                os.replace(self.out, old)
            os.replace(self.work, self.out)
            shutil.rmtree(old, ignore_errors=True)
            return self.out
        recover_run_folder(self.out)
        new = {p.name for p in self.work.iterdir()}
        _write_manifest(self.work, new)  # everything in the sibling is the new run's
        own = own_entries(self.out)
        kept = sorted(p.name for p in self.out.iterdir() if p.name not in own) if self.out.is_dir() else []
        renamed = {}
        for name in [n for n in kept if n in new]:  # the new run writes its own of that name: the user's moves aside
            renamed[name] = _free_name(self.out, name, new | set(kept))
            os.replace(self.out / name, self.out / renamed[name])
        kept = sorted(renamed.get(n, n) for n in kept)
        if self.out.exists():
            os.replace(self.out, old)
        os.replace(self.work, self.out)
        self.swapped = True
        for name in kept:  # the user's entries back beside the new run
            os.replace(old / name, self.out / name)
        shutil.rmtree(old, ignore_errors=True)  # the earlier run's own entries only, now
        self.kept = kept
        if kept:
            logger.warning(kept_line(self.out, kept, renamed))
        return self.out

    def discard(self) -> None:
        """Drop the unfinished new output (the earlier one stays as it was)."""
        if self.staged and self.main:
            shutil.rmtree(self.work, ignore_errors=True)
            if self.run_folder:
                recover_run_folder(self.out)  # a commit stopped half-way: the user's entries back in place

    def abandon(self, exc: BaseException) -> None:
        """After ``exc`` stopped a staged run: drop the unfinished new output and raise the one-line error saying
        the earlier one is unchanged (Ctrl-C → :class:`Interrupted`, a full disk → :class:`DiskFullError`, a
        neurokit error with the sibling's path named as ``out``); other exceptions: return, for the caller to
        re-raise. Nothing happens when the output is not staged."""
        if not self.staged:
            return
        self.discard()
        if self.swapped:  # stopped after the new run was in place: it is the run in ``out`` now
            return
        kept = f"the earlier run in {self.out} is unchanged (the new one was discarded)"
        if isinstance(exc, KeyboardInterrupt):
            raise Interrupted(f"interrupted: {kept}; run the same command again") from None
        if isinstance(exc, DiskFullError):
            raise DiskFullError(
                f"{self.out}: disk full while writing the new run; {kept}. Free space, then run the same command again"
            ) from None
        if isinstance(exc, NeurokitError):
            raise type(exc)(f"{self.where(str(exc))}; {kept}") from None

    def where(self, text: str) -> str:
        """``text`` with the sibling's path named as ``out`` (messages of code that wrote into :attr:`work`)."""
        return text.replace(str(self.work), str(self.out)) if self.staged else text
