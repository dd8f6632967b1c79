"""Replacing an output whole: a run that replaces an earlier one (``--overwrite``) writes beside it in a
hidden sibling folder and swaps the two only when it has finished, so that a run stopped half-way (Ctrl-C,
a full disk, an error) leaves the earlier one as it was."""

from __future__ import annotations

import fnmatch
import json
import os
import shutil
from pathlib import Path

from neurokit._utils.errors import ConfigError, DiskFullError, Interrupted, NeurokitError
from neurokit._utils.locks import main_process


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
    "M4oE run": "neuro finetune --head m4oe",
    "comparison": "neuro finetune --compare-scratch/--seeds/--label-fractions",
}


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
                "choose another output folder, or pass overwrite=True (CLI: --overwrite) to replace it"
            )
        of = f", of {_a(kind)}" if kind else ""  # none: a run stopped before its report (a log, last.pt)
        raise FileExistsError(
            f"{out} already holds a run ({names}{of}); pass resume=True (CLI: --resume) to continue it, "
            "overwrite=True (CLI: --overwrite) to clear it and start again, or choose another output folder"
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
    main : bool, optional
        Whether this process moves folders (default :func:`~neurokit._utils.locks.main_process`: rank 0 of a
        distributed run; the other ranks only learn :attr:`work`).

    Attributes
    ----------
    work : Path
        Where to write.
    staged : bool
        Whether ``work`` is the sibling (``replace``).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "run"; out.mkdir(); _ = (out / "a.txt").write_text("old")
    >>> st = StagedOutput(out, replace=True); st.work.mkdir(); _ = (st.work / "a.txt").write_text("new")
    >>> _ = st.commit(); (out / "a.txt").read_text()
    'new'
    """

    def __init__(self, out: str | Path, replace: bool, *, main: bool | None = None) -> None:
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
                f"{self.out} {where}: overwrite=True (CLI: --overwrite) moves the earlier output aside and the new "
                "one in its place, which would pull the current folder from under you; run the command from outside "
                "that folder, or choose another output folder"
            )
        self.main = main_process() if main is None else main
        self.work = self.out.with_name(f".{self.out.name}.new") if self.staged else self.out
        if self.staged and self.main:
            shutil.rmtree(self.work, ignore_errors=True)  # left by a run stopped before it could clean up

    def commit(self) -> Path:
        """Put the new output in place of the earlier one; returns ``out``."""
        if not self.staged or not self.main:
            return self.out
        old = self.out.with_name(f".{self.out.name}.old")
        shutil.rmtree(old, ignore_errors=True)
        if self.out.exists():
            os.replace(self.out, old)
        os.replace(self.work, self.out)
        shutil.rmtree(old, ignore_errors=True)
        return self.out

    def discard(self) -> None:
        """Drop the unfinished new output (the earlier one stays as it was)."""
        if self.staged and self.main:
            shutil.rmtree(self.work, ignore_errors=True)

    def abandon(self, exc: BaseException) -> None:
        """After ``exc`` stopped a staged run: drop the unfinished new output and raise the one-line error saying
        the earlier one is unchanged (Ctrl-C → :class:`Interrupted`, a full disk → :class:`DiskFullError`, a
        neurokit error with the sibling's path named as ``out``); other exceptions: return, for the caller to
        re-raise. Nothing happens when the output is not staged."""
        if not self.staged:
            return
        self.discard()
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
