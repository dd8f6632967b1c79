"""The run folder of a fine-tuning job, handled one way for every head: locked while the job writes it,
refused when it holds another run (unless ``overwrite`` or ``resume``), an overwritten run kept whole until the
new one has finished, and a stop (Ctrl-C, full disk, error) said in one line with what was kept; and the
run's record (:func:`record_run`: ``run_config.json`` and the report's ``config``), written the same way for
every head, model and command."""

from __future__ import annotations

import dataclasses
import json
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Mapping

from neurokit._utils.errors import Interrupted
from neurokit._utils.locks import output_lock
from neurokit._utils.staging import StagedOutput, refuse_run_folder, remove_run, run_files

#: the run record in a run folder (also the ``config`` section of its report)
RUN_CONFIG = "run_config.json"


def json_ready(value: Any) -> Any:
    """``value`` as JSON holds it: paths as strings, tuples and sets as lists, dataclasses as dicts."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = dataclasses.asdict(value)
    if isinstance(value, Mapping):
        return {str(k): json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted(json_ready(v) for v in value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def record_run(folder: str | Path, sections: Mapping[str, Any], *, report: str = "report.json") -> dict[str, Any]:
    """Write the run's record: ``sections`` merged into ``folder/run_config.json`` (top-level keys replaced)
    and the whole record as the ``config`` section of ``folder/report`` when that file exists.

    One record for every run: the pipelines write ``settings`` (every option of the call, given or defaulted)
    and ``resume`` (what a resumed run must repeat and what it may change); the commands add ``cli`` (every
    option of the command line, given or defaulted, and those given).

    Parameters
    ----------
    folder : path
        The run folder.
    sections : mapping
        Top-level entries of the record (made JSON-ready: paths as strings, dataclasses as dicts).
    report : str
        The report file in ``folder`` that gets the ``config`` section (``report.json``; pretraining:
        ``pretrain_summary.json``; a comparison: ``comparison.json``).

    Returns
    -------
    dict
        The record as written (with ``neurokit_version`` and ``recorded_at``, UTC ISO 8601); under
        ``torchrun`` only the process of ``RANK`` 0 writes it.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> rec = record_run(d, {"settings": {"epochs": 2, "out": d}})
    >>> rec["settings"]["epochs"], (d / "run_config.json").exists()
    (2, True)
    """
    from neurokit._utils.version import VERSION

    folder = Path(folder)
    path = folder / RUN_CONFIG
    record = json.loads(path.read_text()) if path.is_file() else {}
    record.update(json_ready(dict(sections)))
    record["neurokit_version"] = VERSION
    record["recorded_at"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    if os.environ.get("RANK", "0") != "0":  # under torchrun the main process writes the record
        return record
    folder.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=2, default=str))
    rp = folder / report
    if rp.is_file():
        rep = json.loads(rp.read_text())
        rep["config"] = record
        rp.write_text(json.dumps(rep, indent=2, default=float))
    return record


def run_in_folder(
    out: str | Path,
    job: Callable[[Path], dict[str, Any]],
    *,
    what: str = "fine-tuning run",
    lock_name: str = "finetune",
    overwrite: bool = False,
    resume: bool = False,
    resumable: bool = True,
    record: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Run ``job(folder)`` for the output folder ``out``; returns what ``job`` returns.

    Parameters
    ----------
    out : path
        The run folder (``best.pt``, ``last.pt``, ``report.json``, ``metrics.jsonl``).
    job : callable ``(folder) -> report``
        Writes the run into ``folder``: ``out`` itself, or (``overwrite`` of an earlier run) the hidden sibling
        that replaces ``out`` once ``job`` has returned (:class:`~neurokit._utils.staging.StagedOutput`).
    what : str
        The run's name in messages (``"fine-tuning run"``, ``"M4oE run"``).
    lock_name : str
        The command named in the lock record (:func:`~neurokit._utils.locks.output_lock`).
    overwrite, resume : bool
        Replace an earlier run in ``out`` (its own files only: the user's other entries stay, named in one
        line) / continue it from its ``last.pt``.
    resumable : bool
        Whether ``job`` writes a ``last.pt`` at each epoch end that ``resume`` continues (an evaluation scheme's
        folder holds one run per fold instead).
    record : mapping, optional
        The run's record (:func:`record_run`: ``settings``, ``resume``), written into ``run_config.json`` and
        the report's ``config`` once ``job`` has returned.

    Raises
    ------
    FileExistsError
        ``out`` holds a run file (:func:`~neurokit._utils.staging.run_files`: ``metrics.jsonl``, ``report.json``,
        checkpoints, configs) and neither ``overwrite`` nor ``resume`` is given.
    FileNotFoundError
        ``resume`` without ``out/last.pt``.
    OutputLockedError
        Another process writes into ``out`` (named).
    Interrupted
        Ctrl-C; the message says what was kept and how to go on.
    DiskFullError
        The disk filled while the new run of an ``overwrite`` was written (the earlier run is unchanged).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "run"
    >>> run_in_folder(out, lambda d: {"folder": d.name})
    {'folder': 'run'}
    """
    out = Path(out)
    with output_lock(out, lock_name):
        stage = StagedOutput(out, replace=False, run_folder=True, resume=resume)
        if resume:
            if not (out / "last.pt").exists():
                raise FileNotFoundError(f"{out / 'last.pt'}: nothing to resume (run without resume=True first)")
        elif run_files(out):  # any run file: a log, report, checkpoint or config of an earlier (maybe dead) run
            if not overwrite:
                refuse_run_folder(out, what)
            # the new run goes beside the earlier one until it has finished; it replaces only the earlier run's files
            stage = StagedOutput(out, replace=True, run_folder=True)
        work = stage.work
        created = not work.exists()
        work.mkdir(parents=True, exist_ok=True)
        try:
            report = job(work)
            if record is not None:
                report["config"] = record_run(work, record)
            stage.commit()
            return report
        except BaseException as exc:
            _stopped(exc, out, work, stage, created, what, resumable)
            raise


def _stopped(
    exc: BaseException, out: Path, work: Path, stage: StagedOutput, created: bool, what: str, resumable: bool
) -> None:
    """Turn a stop into the one-line error that says what was kept (re-raises unchanged otherwise)."""
    if stage.staged:  # the earlier run is whole: drop the unfinished new one and say so
        stage.abandon(exc)
        return
    saved = resumable and (work / "last.pt").exists()
    removed = False
    if created and not saved and not (work / "report.json").exists():
        removed = remove_run(work)  # made by this call, holding no result: leave nothing of the run behind
    if isinstance(exc, KeyboardInterrupt) and not saved:
        raise Interrupted(
            f"interrupted: the {what} saves last.pt at the end of each epoch, and none had ended, so "
            f"nothing was saved{f' ({work} removed)' if removed else ''}; run the same command "
            "again"
        ) from None
    if isinstance(exc, KeyboardInterrupt) and not isinstance(exc, Interrupted):
        raise Interrupted(
            f"interrupted after training: {work / 'last.pt'} holds it; the same command with resume=True scores it"
        ) from None
