"""Replacing an output whole: a run that replaces an earlier one (``--overwrite``) writes beside it in a
hidden sibling folder and swaps the two only when it has finished, so that a run stopped half-way (Ctrl-C,
a full disk, an error) leaves the earlier one as it was."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from neurokit._utils.errors import DiskFullError, Interrupted, NeurokitError
from neurokit._utils.locks import main_process


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
