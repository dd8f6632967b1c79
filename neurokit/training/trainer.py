"""One training loop for every model family and head: pretraining objectives, supervised fine-tuning and the
multi-task M4oE head all run through :class:`Trainer`.

The trainer owns what every run needs and nothing specific to one job:

* epochs and steps over :class:`~neurokit.training.optim.EpochSampler` (deterministic for a seed, sharded
  across ranks, resumable part-way through an epoch), for one dataset or several task datasets whose
  batches interleave in a seeded shuffled order;
* the optimiser step with gradient clipping and the per-step schedule;
* DistributedDataParallel when launched by ``torchrun`` (:mod:`neurokit.training.distributed`);
* an optional batch augmentation hook;
* a checkpoint (``last.pt``) every ``ckpt_every`` steps and at each epoch end, and resuming from it;
* validation at each epoch end through a callable the caller gives, with selection of the best state by a
  metric it names (training never imports :mod:`neurokit.evaluation` or the pipelines);
* ``metrics.jsonl``, written by rank 0 only;
* Ctrl-C turned into :class:`~neurokit._utils.errors.Interrupted` with a message of what was saved;
* a progress bar labelled with the model's own name
  (:attr:`ModelSpec.title <neurokit.models.registry.ModelSpec>`).

The loss is a callable of the caller: an objective's loss for pretraining, the supervised loss for
fine-tuning, the M4oE multi-task loss.
"""

from __future__ import annotations

import copy
import json
import logging
import math
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

import numpy as np
import torch
import torch.nn as nn

from neurokit._utils.disk import is_disk_full
from neurokit._utils.errors import ConfigError, DiskFullError, Interrupted
from neurokit._utils.progress import TrainProgress
from neurokit.data.dataset import release_worker_buffers
from neurokit.models.checkpoint import rng_state, save_checkpoint, set_rng_state
from neurokit.training import distributed as dist
from neurokit.training.optim import (
    EpochSampler,
    OptimConfig,
    build_optimizer,
    make_loader,
    optimizer_step,
    unwrap,
)

logger = logging.getLogger("neurokit")


@dataclass
class Batch:
    """One training batch as the loss callable sees it.

    Attributes
    ----------
    x : Tensor
        Inputs on the training device, e.g. ``(B, C, N, 200)`` EEG patches or ``(B, T, N, V)`` surface tubelets
        (after the augmentation hook, when one is given).
    y : Tensor or tuple of Tensor or None
        Targets ``(B,)`` moved to the device (a tuple of tensors is moved element by element).
    task : str or None
        The task the batch comes from when the trainer runs over several task datasets.
    step : int
        0-based index of the optimiser step this batch makes (the same on a resumed run).
    epoch : int
        0-based epoch.
    mix : tuple of Tensor or None
        ``(lam (B,), perm (B,))`` from mixup in the augmentation hook: the loss mixes each sample's target
        with its partner's.
    """

    x: torch.Tensor
    y: Any
    task: str | None
    step: int
    epoch: int
    mix: Any = None


@dataclass
class TrainResult:
    """What :meth:`Trainer.fit` returns.

    Attributes
    ----------
    step : int
        Optimiser steps done in total (with those of a resumed run).
    steps_run : int
        Steps done by this call.
    losses : list of float
        Per-step training loss (mean over ranks) of every step done, resumed ones included.
    records : list of dict
        One record per finished epoch: ``epoch`` (1-based), ``train_loss`` (or per task ``{task:
        {"train_loss": …}}``) and what ``validate`` returned.
    best, best_epoch, best_state
        Selection value, its epoch (1-based, -1 when none) and a copy of the model's ``state_dict`` then.
    samples_per_s : float
        Training throughput of this call (all ranks), NaN when no step ran.
    seconds : float
        Wall time of this call.
    """

    step: int
    steps_run: int
    losses: list[float]
    records: list[dict]
    best: float = -math.inf
    best_epoch: int = -1
    best_state: dict | None = None
    samples_per_s: float = float("nan")
    seconds: float = 0.0


LossFn = Callable[[nn.Module, Batch], "torch.Tensor | tuple[torch.Tensor, dict[str, Any]]"]


@dataclass
class Trainer:
    """The training loop shared by pretraining, fine-tuning and M4oE.

    Parameters
    ----------
    model : nn.Module
        The module to train, already on ``info.device`` (wrapped in DistributedDataParallel here when
        ``info.world_size > 1``; :attr:`module` is always the plain module).
    data : Dataset or mapping of str to Dataset
        Items ``(x, y)``; a floating ``x`` of another dtype than float32 (a float16 batch as stored:
        ``PatchDataset(batch_dtype="stored")``) is cast to float32 on the device, after its move, so the model
        and the loss always see float32 (half the bytes cross to the device). Several task datasets (``{task: dataset}``) are iterated together: each epoch
        takes every task's batches once, in an order shuffled by ``(seed, epoch)``.
    loss : callable ``(module, Batch) -> loss`` or ``(loss, stats)``
        Called with the (possibly DDP-wrapped) module; ``loss`` is a scalar tensor. ``stats["loss"]``, when
        given, is the number recorded for the step instead of ``loss`` (M4oE records each task's own term).
    model_name : str
        Registry name of the model family (``"cbramod"``, ``"sit"``, ``"clip"``): the progress bar shows
        its title.
    optim : OptimConfig
        Optimiser and schedule; ``clip_grad`` clips the global gradient norm (0: off).
    batch_size : int or mapping of str to int
        Samples per step and process (per task with several datasets).
    epochs : int
    max_steps : int, optional
        Cap on the total optimiser steps (the schedule spans ``min(max_steps, epochs × batches per epoch)``).
    param_groups : list of dict, optional
        AdamW parameter groups (each may carry its own ``lr``); default every parameter that requires a
        gradient.
    seed : int
        Seed of the sampling order (and of the task interleaving).
    info : DistInfo, optional
        From :func:`neurokit.training.distributed.setup`; default one CPU process.
    num_workers : int
        DataLoader worker processes.
    out : Path, optional
        Folder of ``last.pt`` and ``metrics.jsonl``; ``None`` writes nothing.
    ckpt_every : int
        Also write ``last.pt`` every this many steps (it is always written at each epoch end and at the last
        step).
    checkpoint_extra : callable ``() -> dict`` or dict, optional
        Entries added to every checkpoint (kind, model configuration, provenance…).
    validate : callable ``(module) -> dict``, optional
        Run at each epoch end on the plain module; its entries join the epoch record (a dict value under a
        task name merges into that task's entry).
    select : str, optional
        Key of ``validate``'s result whose largest value selects the best state (NaN never beats a finite
        value; the first epoch is kept when every value is NaN).
    augment : callable ``(x) -> (x, mix)`` or mapping of task to such a callable, optional
        Batch augmentation applied on the device batch before the loss (per task with several datasets; a
        task without an entry is not augmented). A hook with a ``generator`` attribute (a
        :class:`torch.Generator`, as :class:`~neurokit.data.augment.Augmenter` has) has that generator's
        state saved with the checkpoint and restored on resume.
    train_mode : callable ``(module) -> None``, optional
        Puts the module in training mode at each epoch start (default ``module.train()``).
    log_steps : bool
        Write one ``metrics.jsonl`` line per step (``step``, ``epoch``, ``loss``, ``lr``, ``grad_norm``);
        epoch records are written whenever ``validate`` is given.
    stage : str
        First word of the progress bar (``"pretrain"``, ``"finetune"``).
    detail : str
        Added after the model's title on the progress bar (e.g. the task kind).
    progress : bool
        Show the progress bar (rank 0 only).
    find_unused_parameters : bool
        Passed to DistributedDataParallel: a step may leave parameters without a gradient (the M4oE head's
        other tasks).
    callbacks : sequence
        Objects with ``on_step`` / ``on_epoch`` / ``on_fit_end`` methods (:mod:`neurokit.training.callbacks`:
        loggers, :class:`~neurokit.training.callbacks.EarlyStopping`), called on rank 0 beside the run folder's
        own (``metrics.csv``, TensorBoard events when installed). One sets ``trainer.stop_requested`` to end
        training after the current epoch.
    read_order : {"random", "block"}
        The training order of each epoch (:class:`~neurokit.training.optim.EpochSampler`'s ``order``): every window
        anywhere, or contiguous blocks through a shuffle buffer (reads that stay within a few blocks of the store).

    Raises
    ------
    ConfigError
        From :meth:`fit`: no full batch to train on, a ``select`` key ``validate`` does not return.
    FloatingPointError
        The loss became NaN or infinite.
    Interrupted
        Ctrl-C; the message says which checkpoint holds which step and how to continue.
    """

    model: nn.Module
    data: Any
    loss: LossFn
    model_name: str
    optim: OptimConfig
    batch_size: int | Mapping[str, int]
    epochs: int
    max_steps: int | None = None
    param_groups: list[dict] | None = None
    seed: int = 0
    info: dist.DistInfo | None = None
    num_workers: int = 0
    out: Path | None = None
    ckpt_every: int = 0
    checkpoint_extra: Callable[[], dict] | dict | None = None
    validate: Callable[[nn.Module], dict] | None = None
    select: str | None = None
    augment: Callable | None = None
    train_mode: Callable[[nn.Module], None] | None = None
    log_steps: bool = False
    stage: str = "train"
    detail: str = ""
    progress: bool = True
    find_unused_parameters: bool = False
    callbacks: Sequence[Any] = ()
    read_order: str = "random"

    def __post_init__(self) -> None:
        self.info = self.info or dist.DistInfo()
        self.module = unwrap(self.model)
        if self.info.enabled and not isinstance(self.model, nn.parallel.DistributedDataParallel):
            dist.align_grad_strides(self.module)
            dev = self.info.device
            self.model = nn.parallel.DistributedDataParallel(
                self.module,
                device_ids=[dev.index] if dev.type == "cuda" else None,
                find_unused_parameters=self.find_unused_parameters,
            )
        self.tasks = list(self.data) if isinstance(self.data, Mapping) else None
        sets = self.data if self.tasks is not None else {None: self.data}
        sizes: Mapping[Any, int] = (
            self.batch_size if isinstance(self.batch_size, Mapping) else {k: self.batch_size for k in sets}
        )
        self._sets, self._bs = dict(sets), {k: int(sizes[k]) for k in sets}
        for k, d in self._sets.items():
            if len(d) < self._bs[k] * self.info.world_size:
                what = f"task {k}: " if k is not None else ""
                raise ConfigError(
                    f"{what}{len(d)} training samples but batch_size={self._bs[k]} × "
                    f"{self.info.world_size} process(es); give a smaller batch_size="
                )
        self._counts = {
            k: EpochSampler(
                len(d), batch_size=self._bs[k], seed=self.seed, world_size=self.info.world_size
            ).batches_per_epoch()
            for k, d in self._sets.items()
        }
        self.per_epoch = sum(self._counts.values())
        self._warn_memory()
        self.total = self.per_epoch * self.epochs
        if self.max_steps:
            self.total = min(self.total, self.max_steps)
        groups = self.param_groups or [{"params": [p for p in self.module.parameters() if p.requires_grad]}]
        self.optimizer, self.scheduler = build_optimizer(groups, self.optim, self.total)
        self._clip = [p for p in self.module.parameters() if p.requires_grad]
        self.step = 0
        self.losses: list[float] = []
        self.records: list[dict] = []
        self.best, self.best_epoch = -math.inf, -1
        self.best_state: dict[str, Any] | None = None
        self._epoch_losses: list[tuple[str | None, float]] = []  # (task, loss) of the epoch under way
        self._saved: int | None = None

    def _warn_memory(self) -> None:
        """Say before the first step when the run will need a lot of memory (:mod:`neurokit.training.memory`)."""
        from neurokit.training.memory import memory_warning

        if not self.dist_info.is_main:
            return
        data = next(iter(self._sets.values()))
        shape = getattr(data, "sample_shape", None)
        if shape is None and len(data):  # a wrapped dataset (corpus scaling, a subset): one sample tells
            x = data[0][0]
            shape = getattr(x, "shape", None)
        if not shape:
            return
        msg = memory_warning(self.module, tuple(shape), max(self._bs.values()), str(self.dist_info.device))
        if msg:
            logger.warning("%s", msg)

    # ------------------------------------------------------------------------------------- title
    @property
    def title(self) -> str:
        """The model family's display name (``"CBraMod"``, ``"SiT"``, ``"CLIP (SiT)"``)."""
        from neurokit.models.registry import get_model_spec

        return get_model_spec(self.model_name).title or self.model_name

    @property
    def dist_info(self) -> dist.DistInfo:
        """The process group facts :attr:`info` holds (``__post_init__`` puts a single-process one in for ``None``)."""
        assert self.info is not None  # set in __post_init__
        return self.info

    @property
    def checkpoint_path(self) -> Path | None:
        return None if self.out is None else Path(self.out) / "last.pt"

    @property
    def epochs_done(self) -> int:
        """Full epochs done so far."""
        return self.step // self.per_epoch if self.per_epoch else 0

    # ------------------------------------------------------------------------------- checkpoints
    def state(self) -> dict[str, Any]:
        """The trainer's part of a checkpoint: ``state_dict``, ``optimizer``, ``scheduler``, ``rng``, ``step``,
        ``epoch`` (full epochs done) and ``history`` (the epoch records when validating, else the per-step
        losses); with validation also ``best``, ``best_epoch``, ``best_state``, ``losses`` and
        ``epoch_losses`` (the losses of the epoch under way)."""
        st: dict[str, Any] = {
            "state_dict": self.module.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            "rng": rng_state(),
            "step": self.step,
            "epoch": self.epochs_done,
        }
        if self.validate is not None:
            st.update(
                history=self.records,
                best=self.best,
                best_epoch=self.best_epoch,
                best_state=self.best_state,
                losses=self.losses,
                epoch_losses=self._epoch_losses,
            )
        else:
            st["history"] = self.losses
        gens = self._augment_generators()
        if gens:
            st["augment_rng"] = {str(k): g.get_state() for k, g in gens.items()}
        return st

    def resume(self, ck: Mapping[str, Any]) -> None:
        """Continue from a checkpoint written by :meth:`save` (model weights, optimiser, schedule, RNG, step,
        history, selection).

        Parameters
        ----------
        ck : mapping
            A checkpoint as loaded (``torch.load`` of ``last.pt``).

        Raises
        ------
        ConfigError
            The checkpoint already did more steps than this run asks for.
        """
        step = int(ck.get("step", 0))
        if step > self.total:
            raise ConfigError(
                f"{self.checkpoint_path or 'checkpoint'}: the run already did {step} steps ({step / max(self.per_epoch, 1):.3g} epochs of "
                f"{self.per_epoch} steps); the settings ask for {self.total} (epochs={self.epochs}, "
                f"max_steps={self.max_steps}). Give a larger epochs= or max_steps= to extend it, or start a new run"
            )
        self.module.load_state_dict(ck["state_dict"])
        self.optimizer.load_state_dict(ck["optimizer"])
        self.scheduler.load_state_dict(ck["scheduler"])
        set_rng_state(ck.get("rng") or {})
        self.step = step
        if self.validate is not None:
            self.records = list(ck.get("history") or [])
            self.losses = list(ck.get("losses") or [])
            self.best, self.best_epoch = float(ck.get("best", -math.inf)), int(ck.get("best_epoch", -1))
            self.best_state = ck.get("best_state")
            self._epoch_losses = [tuple(t) for t in ck.get("epoch_losses") or []]
        else:
            self.losses = list(ck.get("history") or [])
        gens = self._augment_generators()
        for k, s in (ck.get("augment_rng") or {}).items():
            if k in {str(x) for x in gens}:
                next(g for t, g in gens.items() if str(t) == k).set_state(s)
        self._saved = step
        log = self._log_path()
        if log is not None:
            truncate_log(log, step, self.epochs_done)  # what was logged after the checkpoint is done again

    def save(self) -> None:
        """Write ``out/last.pt`` (rank 0 only): :meth:`state` and ``checkpoint_extra``."""
        path = self.checkpoint_path
        if path is not None and self.dist_info.is_main:
            extra = self.checkpoint_extra() if callable(self.checkpoint_extra) else dict(self.checkpoint_extra or {})
            try:
                save_checkpoint(path, {**extra, **self.state()})
            except DiskFullError as exc:
                raise DiskFullError(
                    f"{exc.message.removesuffix('. Free space, then go on')}. {self._go_on()}"
                ) from None
        self._saved = self.step

    def _go_on(self) -> str:
        """How to go on after a full disk, in one sentence."""
        if self._saved is None:
            return "Free space, then run the same command again"
        return f"Free space, then continue from step {self._saved} with the same settings and resume=True"

    def _log(self, log: Path, rec: dict) -> None:
        """Append one line to ``metrics.jsonl``; a full disk becomes a :class:`DiskFullError` saying what is kept."""
        try:
            with log.open("a") as fh:
                fh.write(json.dumps(rec) + "\n")
        except OSError as exc:
            if not is_disk_full(exc):
                raise
            kept = (
                "nothing was saved"
                if self._saved is None
                else f"{self.checkpoint_path} holds step {self._saved} of {self.total}"
            )
            raise DiskFullError(f"{log}: disk full while logging step {self.step}; {kept}. {self._go_on()}") from None

    # ------------------------------------------------------------------------------------- batches
    def _augment_generators(self) -> dict:
        if self.augment is None:
            return {}
        hooks = self.augment if isinstance(self.augment, Mapping) else {None: self.augment}
        return {k: g for k, h in hooks.items() if isinstance(g := getattr(h, "generator", None), torch.Generator)}

    def _augment(self, x: torch.Tensor, task: str | None):
        if self.augment is None:
            return x, None
        if isinstance(self.augment, Mapping):
            hook = self.augment.get(task)
            return (x, None) if hook is None else hook(x)
        return self.augment(x)

    def _sampler(self, key, epoch: int, start: int) -> EpochSampler:
        return EpochSampler(
            len(self._sets[key]),
            batch_size=self._bs[key],
            seed=self.seed,
            epoch=epoch,
            rank=self.dist_info.rank,
            world_size=self.dist_info.world_size,
            start_batch=start,
            order=self.read_order,
        )

    def _loader(self, key, sampler):
        return make_loader(self._sets[key], sampler, self._bs[key], self.num_workers, self.dist_info.device)

    def batches(self, epoch: int, start: int = 0) -> Iterator[tuple[str | None, Any, Any]]:
        """``(task, x, y)`` of epoch ``epoch`` from its ``start``-th step on (``task`` is ``None`` for one dataset).

        Parameters
        ----------
        epoch : int
            The epoch (0-based), which fixes the order.
        start : int
            Steps of the epoch already done (a resumed run).

        Yields
        ------
        tuple of (str | None, torch.Tensor, torch.Tensor)
            The task, the batch and its labels.
        """
        if self.tasks is None:
            for x, y in self._iter(None, epoch, start, start > 0):
                yield None, x, y
            return
        order = self.task_order(epoch)
        done = {n: order[:start].count(n) for n in self.tasks}
        iters = {n: self._iter(n, epoch, done[n], start > 0) for n in self.tasks}
        for n in order[start:]:
            x, y = next(iters[n])
            yield n, x, y

    def _iter(self, key, epoch: int, start: int, resumed: bool):
        """A loader iterator from batch ``start`` of the epoch. Starting a loader draws its base seed from the
        global RNG; a run that continues part-way through an epoch did that draw before its checkpoint, so
        here the draw leaves the RNG as it was (the resumed run then draws what the uninterrupted one drew)."""
        loader = self._loader(key, self._sampler(key, epoch, start))
        if not resumed:
            return iter(loader)
        state = torch.get_rng_state()
        it = iter(loader)
        torch.set_rng_state(state)
        return it

    def task_order(self, epoch: int) -> list[str]:
        """Which task each step of ``epoch`` takes its batch from: every task's batches once, shuffled by
        ``(seed, epoch)``.

        Parameters
        ----------
        epoch : int
            The epoch (0-based).

        Returns
        -------
        list of str
            One task name per step.

        Raises
        ------
        ValueError
            The trainer has one dataset, not named tasks.
        """
        if self.tasks is None:
            raise ValueError("task_order: this trainer has one dataset, not named tasks")
        order = [n for n in self.tasks for _ in range(self._counts[n])]
        g = torch.Generator().manual_seed(self.seed * 7919 + epoch)
        return [order[i] for i in torch.randperm(len(order), generator=g).tolist()]

    # ------------------------------------------------------------------------------------ the loop
    def _log_path(self) -> Path | None:
        return Path(self.out) / "metrics.jsonl" if self.out is not None and self.dist_info.is_main else None

    def _to_device(self, y):
        dev = self.dist_info.device
        if isinstance(y, torch.Tensor):
            return y.to(dev, non_blocking=True)
        if isinstance(y, (tuple, list)):
            return type(y)(self._to_device(t) for t in y)
        return y

    def fit(self) -> TrainResult:
        """Train from :attr:`step` (0, or where :meth:`resume` left) to the total step count.

        Returns
        -------
        TrainResult

        Raises
        ------
        Interrupted
            On Ctrl-C (a folder ``out`` this call created and that holds no checkpoint is removed).
        FloatingPointError
            A non-finite loss.
        ConfigError
            ``select`` is not among ``validate``'s results.
        """
        info, log = self.dist_info, self._log_path()
        out = None if self.out is None else Path(self.out)
        created = out is not None and not out.exists()
        if log is not None and out is not None:
            out.mkdir(parents=True, exist_ok=True)
        first, n_seen = self.step, 0
        self.stop_requested = False
        from neurokit.training.callbacks import default_callbacks

        # on rank 0 only: the user's callbacks and the run folder's loggers
        cbs = (list(self.callbacks) + (default_callbacks(out) if log is not None else [])) if info.is_main else []
        self._callbacks = cbs
        self._epoch_t0 = time.perf_counter()
        desc = f"{self.stage} {self.title}" + (f" ({self.detail})" if self.detail else "")
        bar = TrainProgress(self.total, start=self.step, description=desc, enabled=self.progress and info.is_main)
        t0 = time.perf_counter()
        try:
            while self.step < self.total:
                epoch, start = divmod(self.step, self.per_epoch)
                self._epoch_t0 = time.perf_counter()
                (self.train_mode or (lambda m: m.train()))(self.model)
                for task, x, y in self.batches(epoch, start):
                    x = x.to(info.device, non_blocking=True)
                    if x.is_floating_point() and x.dtype != torch.float32:
                        x = x.float()  # a float16 batch as stored (batch_dtype="stored"), cast on the device
                    y = self._to_device(y)
                    x, mix = self._augment(x, task)
                    out_ = self.loss(self.model, Batch(x=x, y=y, task=task, step=self.step, epoch=epoch, mix=mix))
                    loss, stats = out_ if isinstance(out_, tuple) else (out_, {})
                    gnorm = optimizer_step(loss, self._clip, self.optimizer, self.scheduler, self.optim.clip_grad)
                    self.step += 1
                    n_seen += x.shape[0] * info.world_size
                    lv = float(dist.all_reduce_mean(loss.detach(), info))
                    rec_v = float(stats["loss"]) if "loss" in stats else lv
                    self.losses.append(lv)
                    self._epoch_losses.append((task, rec_v))
                    lr = self.scheduler.get_last_lr()[0]
                    step_rec = {
                        "step": self.step,
                        "epoch": epoch,
                        "loss": lv,
                        "lr": lr,
                        "grad_norm": None if gnorm is None else float(gnorm),
                    }
                    if log is not None and self.log_steps:
                        self._log(log, step_rec)
                    for cb in cbs:
                        if hasattr(cb, "on_step"):
                            cb.on_step(self, step_rec)
                    bar.update(epoch=epoch + 1, loss=lv, lr=lr)
                    if not torch.isfinite(loss):
                        raise FloatingPointError(
                            f"loss became {lv} at step {self.step}; lower the learning rate or check the store"
                        )
                    epoch_end = self.step % self.per_epoch == 0
                    if epoch_end:
                        self._end_epoch(epoch, log)
                    if epoch_end or self.step == self.total or (self.ckpt_every and self.step % self.ckpt_every == 0):
                        self.save()
                    if self.step >= self.total or epoch_end and self.stop_requested:
                        break
                if self.stop_requested:  # a callback's stopping rule (EarlyStopping): the epoch's checkpoint holds it
                    logger.info(
                        "training stopped by a callback after epoch %d (step %d of %d)",
                        epoch + 1,
                        self.step,
                        self.total,
                    )
                    break
        except BaseException as exc:
            bar.close()
            if info.is_main and self._saved is None and created and out is not None and out.exists():
                shutil.rmtree(out)  # made by this call and holding no checkpoint: leave no half-made folder
            if isinstance(exc, KeyboardInterrupt) and not isinstance(exc, Interrupted):
                raise Interrupted(self.interrupt_message()) from None
            worker = _worker_error(exc)
            if worker is not None:
                raise worker from None
            raise
        bar.close()
        release_worker_buffers()  # the loaders' workers have exited: their batch buffers are given back now
        elapsed = time.perf_counter() - t0
        result = TrainResult(
            step=self.step,
            steps_run=self.step - first,
            losses=list(self.losses),
            records=list(self.records),
            best=self.best,
            best_epoch=self.best_epoch,
            best_state=self.best_state,
            samples_per_s=n_seen / elapsed if n_seen and elapsed > 0 else float("nan"),
            seconds=elapsed,
        )
        for cb in cbs:
            if hasattr(cb, "on_fit_end"):
                cb.on_fit_end(self, result)
        return result

    def interrupt_message(self) -> str:
        """What an interruption now leaves behind, in one line."""
        if self._saved is None:
            return (
                f"interrupted at step {self.step + 1} before the first checkpoint: nothing saved; run the command again"
            )
        return (
            f"interrupted at step {self.step + 1}: {self.checkpoint_path} holds step {self._saved} of {self.total}; "
            "continue with the same settings and resume=True"
        )

    def _end_epoch(self, epoch: int, log: Path | None) -> None:
        done = self._epoch_losses
        self._epoch_losses = []
        if self.validate is None:
            return
        rec: dict[str, Any] = {"epoch": epoch + 1}
        if self.tasks is None:
            rec["train_loss"] = float(np.mean([v for _, v in done])) if done else float("nan")
        else:
            for n in self.tasks:
                vals = [v for t, v in done if t == n]
                rec[n] = {"train_loss": float(np.mean(vals)) if vals else float("nan")}
        for k, v in self.validate(self.module).items():
            rec[k] = {**rec[k], **v} if isinstance(v, dict) and isinstance(rec.get(k), dict) else v
        self.records.append(rec)  # the history reports keep: no clock in it (a resumed run's equals a whole one's)
        epoch_time = time.perf_counter() - self._epoch_t0  # this epoch's training and validation
        logged = {**rec, "epoch_time_s": round(epoch_time, 3)}  # the logs people open say how long it took
        logger.info(
            "epoch %d: %s (%.1f s)",
            epoch + 1,
            ", ".join(f"{k} {v:.4g}" for k, v in rec.items() if isinstance(v, float) and k != "epoch"),
            epoch_time,
        )
        if log is not None:
            self._log(log, logged)
        for cb in getattr(self, "_callbacks", []):
            if hasattr(cb, "on_epoch"):
                cb.on_epoch(self, logged)
        if self.select is not None:
            if self.select not in rec:
                raise ConfigError(f"selection metric {self.select!r} is not among the validation results {sorted(rec)}")
            v = float(rec[self.select])
            if np.isfinite(v) and v > self.best or self.best_state is None:
                self.best, self.best_epoch = v, epoch + 1
                self.best_state = copy.deepcopy(self.module.state_dict())

    def load_best(self) -> None:
        """Load the selected state into the module (nothing when no epoch was selected)."""
        if self.best_state is not None:
            self.module.load_state_dict(self.best_state)


def _worker_error(exc: BaseException) -> BaseException | None:
    """A neurokit error raised in a DataLoader worker, as its own one-line message: PyTorch re-raises it in
    the main process with the worker's whole traceback as its text (``Caught StoreError in DataLoader worker
    process 0. Original Traceback …``). ``None`` for any other exception."""
    from neurokit._utils.errors import NeurokitError

    text = str(exc)
    if not isinstance(exc, NeurokitError) or "in DataLoader worker process" not in text:
        return None
    prefix = f"{type(exc).__module__}.{type(exc).__qualname__}: "
    last = [ln for ln in text.splitlines() if ln.startswith(prefix)]
    if not last:
        return None
    try:
        return type(exc)(last[-1][len(prefix) :])
    except TypeError:  # an error class that takes other arguments
        return None


def truncate_log(log: Path, step: int, epochs: int | None = None) -> None:
    """Drop the lines of ``metrics.jsonl`` logged after a checkpoint of ``step`` steps and ``epochs`` full epochs
    (written before an interruption, they are done again on resume): step lines after ``step``, epoch
    records after ``epochs``.

    Parameters
    ----------
    log : pathlib.Path
        The run's ``metrics.jsonl`` (rewritten in place, atomically; nothing when it does not exist).
    step : int
        The checkpoint's optimiser steps: step lines after it are dropped.
    epochs : int | None
        The checkpoint's complete epochs: epoch records after it are dropped; ``None``: keep every epoch record.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     log = Path(d) / "metrics.jsonl"
    ...     _ = log.write_text("".join(json.dumps(r) + chr(10) for r in ({"step": 1}, {"step": 2}, {"epoch": 1})))
    ...     truncate_log(log, 1, 0)
    ...     log.read_text().splitlines()
    ['{"step": 1}']
    """
    if not log.exists():
        return
    lines = [l for l in log.read_text().splitlines() if l.strip()]

    def keep(rec: dict) -> bool:
        if "step" in rec:
            return rec["step"] <= step
        return epochs is None or rec.get("epoch", 0) <= epochs

    kept = [l for l in lines if keep(json.loads(l))]
    if len(kept) != len(lines):
        tmp = log.with_name(log.name + ".tmp")
        tmp.write_text("".join(l + "\n" for l in kept))
        os.replace(tmp, log)
