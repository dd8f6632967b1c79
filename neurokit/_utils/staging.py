"""Replacing an output whole: a run that replaces an earlier one (``--overwrite``) writes beside it in a
hidden sibling folder and swaps the two only when it has finished, so that a run stopped half-way (Ctrl-C,
a full disk, an error) leaves the earlier one as it was."""

from __future__ import annotations

import fnmatch
import os
import shutil
from pathlib import Path

from neurokit._utils.errors import DiskFullError, Interrupted, NeurokitError
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


def refuse_run_folder(out: str | Path, what: str = "run") -> None:
    """Refuse a fresh run into ``out`` when it holds the files of another (:func:`run_files`), so two runs never
    mix their logs: the message names the files and the two ways on (``--overwrite``, ``--resume``).

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
        raise FileExistsError(
            f"{out} already holds a run ({names}, of a {what}); pass resume=True (CLI: --resume) to continue it, "
            "overwrite=True (CLI: --overwrite) to clear it and start again, or choose another output folder"
        )


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
