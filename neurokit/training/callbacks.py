"""What a user adds to the one training loop without wiring it into the loop: loggers and stopping rules.

A callback is any object with some of these methods (each optional), called by
:class:`~neurokit.training.trainer.Trainer` on rank 0:

* ``on_step(trainer, record)`` — after every optimiser step, ``record`` = ``{"step", "epoch", "loss", "lr",
  "grad_norm"}``;
* ``on_epoch(trainer, record)`` — after each epoch's validation, ``record`` = the epoch's entry of
  ``metrics.jsonl`` (``epoch``, ``train_loss``, the validation metrics, ``epoch_time_s``);
* ``on_fit_end(trainer, result)`` — once, with the :class:`~neurokit.training.trainer.TrainResult`.

A callback stops training after the current epoch by setting ``trainer.stop_requested = True``
(:class:`EarlyStopping`). Every run folder gets :class:`CSVLog` (``metrics.csv`` beside ``metrics.jsonl``, for a
spreadsheet or pandas) and, when the ``tensorboard`` package is installed, :class:`TensorBoardLog` (event files in
``OUT/tensorboard``): :func:`default_callbacks`.
"""

from __future__ import annotations

import csv
import json
import logging
import math
from pathlib import Path
from typing import Any

logger = logging.getLogger("neurokit")


def flatten(record: dict, prefix: str = "") -> dict[str, Any]:
    """``{"lr": {"loss": 1}}`` → ``{"lr/loss": 1}``: one column per number (a task's metrics under its name).

    Parameters
    ----------
    record : dict
        A ``metrics.jsonl`` line, possibly nested.
    prefix : str
        Put before every key (the nested keys' path, ``"task/"``).

    Returns
    -------
    dict
        One key per leaf, nested keys joined by ``/``; lists and tuples written as JSON text.

    Examples
    --------
    >>> flatten({"epoch": 1, "lr": {"auroc": 0.5, "n": [1, 2]}})
    {'epoch': 1, 'lr/auroc': 0.5, 'lr/n': '[1, 2]'}
    """
    out: dict[str, Any] = {}
    for k, v in record.items():
        name = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(flatten(v, f"{name}/"))
        elif isinstance(v, (list, tuple)):
            out[name] = json.dumps(v)
        else:
            out[name] = v
    return out


class CSVLog:
    """``metrics.csv`` beside ``metrics.jsonl``: every line of it as a row (steps and epochs, one column per number,
    nested metrics as ``task/metric``), rewritten from the JSON lines at each epoch end and at the end of training,
    so a resumed run's file holds what its ``metrics.jsonl`` holds.

    Parameters
    ----------
    out : Path
        The run folder.
    """

    def __init__(self, out: Path) -> None:
        self.out = Path(out)

    def write(self) -> Path | None:
        """(Re)write ``metrics.csv`` from ``metrics.jsonl``; ``None`` when there is no log yet."""
        log = self.out / "metrics.jsonl"
        if not log.exists():
            return None
        rows = [flatten(json.loads(line)) for line in log.read_text().splitlines() if line.strip()]
        cols: list[str] = []
        for r in rows:
            cols += [c for c in r if c not in cols]
        first = [c for c in ("step", "epoch") if c in cols]
        cols = first + [c for c in cols if c not in first]
        path = self.out / "metrics.csv"
        tmp = path.with_suffix(".csv.tmp")
        with tmp.open("w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=cols)
            w.writeheader()
            w.writerows(rows)
        tmp.replace(path)
        return path

    def on_epoch(self, trainer, record: dict) -> None:
        """Rewrite ``metrics.csv`` after an epoch.

        Parameters
        ----------
        trainer : Trainer
            The :class:`~neurokit.training.trainer.Trainer` calling it.
        record : dict
            The epoch's record (already in ``metrics.jsonl``).
        """
        self.write()

    def on_fit_end(self, trainer, result) -> None:
        """Rewrite ``metrics.csv`` at the end of training.

        Parameters
        ----------
        trainer : Trainer
            The :class:`~neurokit.training.trainer.Trainer` calling it.
        result : TrainResult
            The run's result.
        """
        self.write()


class TensorBoardLog:
    """TensorBoard event files in ``OUT/tensorboard``: the step loss, learning rate and gradient norm, and every
    number of the epoch records (``train_loss``, validation metrics, ``epoch_time_s``), through
    :class:`torch.utils.tensorboard.SummaryWriter` (needs the ``tensorboard`` package).

    Parameters
    ----------
    out : pathlib.Path
        The run folder; the event files go to ``out / "tensorboard"``.

    Raises
    ------
    ImportError
        ``tensorboard`` is not installed (:func:`default_callbacks` then leaves this logger out).

    Examples
    --------
    >>> from neurokit.training.trainer import Trainer
    >>> trainer = Trainer(model, objective, out=Path("runs/x"), callbacks=[TensorBoardLog(Path("runs/x"))])  # doctest: +SKIP
    """

    def __init__(self, out: Path) -> None:
        from torch.utils.tensorboard import SummaryWriter

        self.writer = SummaryWriter(log_dir=str(Path(out) / "tensorboard"))

    def _scalars(self, record: dict, step: int, skip: tuple[str, ...]) -> None:
        for k, v in flatten(record).items():
            if k not in skip and isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
                self.writer.add_scalar(k, v, step)

    def on_step(self, trainer, record: dict) -> None:
        """Write the step's numbers (loss, learning rate, gradient norm) at its step.

        Parameters
        ----------
        trainer : Trainer
            The :class:`~neurokit.training.trainer.Trainer` calling it.
        record : dict
            ``{"step", "epoch", "loss", "lr", "grad_norm"}``.
        """
        self._scalars(record, int(record["step"]), ("step", "epoch"))

    def on_epoch(self, trainer, record: dict) -> None:
        """Write every number of the epoch record under ``epoch/``, at its epoch.

        Parameters
        ----------
        trainer : Trainer
            The :class:`~neurokit.training.trainer.Trainer` calling it.
        record : dict
            The epoch's record.
        """
        self._scalars({f"epoch/{k}": v for k, v in record.items()}, int(record["epoch"]), ("epoch/epoch",))
        self.writer.flush()

    def on_fit_end(self, trainer, result) -> None:
        """Close the event file.

        Parameters
        ----------
        trainer : Trainer
            The :class:`~neurokit.training.trainer.Trainer` calling it.
        result : TrainResult
            The run's result.
        """
        self.writer.close()


class EarlyStopping:
    """Stop after an epoch whose ``metric`` (a key of the epoch record, e.g. the selection metric ``val_auroc``) has
    not improved on the best by more than ``min_delta`` for ``patience`` epochs (larger is better; ``mode="min"``
    for a loss).

    Parameters
    ----------
    metric : str
        A key of the epoch record (nested keys joined by ``/``, :func:`flatten`).
    patience : int
        Epochs without improvement before stopping.
    min_delta : float
        The least change that counts as an improvement, in the metric's unit.
    mode : {"max", "min"}
        Whether larger (``"max"``) or smaller values are better.

    Raises
    ------
    ValueError
        ``mode`` is neither; (at the first epoch) ``metric`` is not in the epoch record.

    Examples
    --------
    >>> class T:
    ...     stop_requested = False
    >>> t, stop = T(), EarlyStopping("val", patience=2)
    >>> for v in (0.5, 0.6, 0.6, 0.59):
    ...     stop.on_epoch(t, {"val": v})
    >>> t.stop_requested, stop.best
    (True, 0.6)
    """

    def __init__(self, metric: str, patience: int = 5, min_delta: float = 0.0, mode: str = "max") -> None:
        if mode not in ("max", "min"):
            raise ValueError(f"mode={mode!r}: 'max' or 'min'")
        self.metric, self.patience, self.min_delta, self.mode = metric, int(patience), float(min_delta), mode
        self.best: float | None = None
        self.bad = 0

    def on_epoch(self, trainer, record: dict) -> None:
        """Count an epoch without improvement, and set ``trainer.stop_requested`` after ``patience`` of them.

        Parameters
        ----------
        trainer : Trainer
            The :class:`~neurokit.training.trainer.Trainer` calling it.
        record : dict
            The epoch's record (non-finite values are ignored).

        Raises
        ------
        ValueError
            The record has no ``metric``.
        """
        flat = flatten(record)
        if self.metric not in flat:  # a misspelt metric would never stop anything: said at the first epoch
            raise ValueError(
                f"EarlyStopping: no {self.metric!r} in the epoch record; its numbers are "
                f"{', '.join(k for k, v in flat.items() if isinstance(v, (int, float)))}"
            )
        v = float(flat[self.metric])
        if not math.isfinite(v):
            return
        better = self.best is None or (
            v > self.best + self.min_delta if self.mode == "max" else v < self.best - self.min_delta
        )
        if better:
            self.best, self.bad = v, 0
            return
        self.bad += 1
        if self.bad >= self.patience:
            logger.info(
                "early stopping: %s has not improved for %d epochs (best %.4g)", self.metric, self.bad, self.best
            )
            trainer.stop_requested = True


def default_callbacks(out: Path | None) -> list:
    """The loggers every run folder gets: :class:`CSVLog`, and :class:`TensorBoardLog` when ``tensorboard`` is
    installed; ``[]`` without a folder.

    Parameters
    ----------
    out : pathlib.Path | None
        The run folder; ``None``: a run that writes nothing.

    Returns
    -------
    list
        The callbacks, to pass to :class:`~neurokit.training.trainer.Trainer`.

    Examples
    --------
    >>> default_callbacks(None)
    []
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     type(default_callbacks(Path(d))[0]).__name__
    'CSVLog'
    """
    if out is None:
        return []
    cbs: list = [CSVLog(Path(out))]
    try:
        cbs.append(TensorBoardLog(Path(out)))
    except ImportError:
        pass
    return cbs
