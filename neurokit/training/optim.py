"""Pieces shared by the pretraining and fine-tuning loops: deterministic resumable sampling,
AdamW with a per-step cosine schedule, loaders."""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

import numpy as np
import torch

from neurokit._utils.errors import ConfigError
from neurokit.data.dataset import collate_patches, set_readahead, will_need_hook

logger = logging.getLogger("neurokit")


#: Orders of :class:`EpochSampler` (``shuffle=True``): every window drawn at random, or contiguous blocks of windows
#: in a random order, mixed through a shuffle buffer
READ_ORDERS = ("random", "block")


class EpochSampler(torch.utils.data.Sampler[int]):
    """Shuffled indices for one epoch, identical on every run with the same seed, sharded across
    ranks, and able to start part-way through (``start_batch``) so a resumed job sees exactly the
    batches it had not seen yet.

    Two shuffled orders (``order``):

    * ``"random"`` (the default): a uniform permutation of every sample (``torch.randperm`` seeded by
      ``seed * 100003 + epoch``); successive samples lie anywhere in the store, so each is its own read.
    * ``"block"``: the samples cut into contiguous blocks of ``block`` (the last one shorter), the blocks put in
      a random order, then shuffled within consecutive groups of ``buffer`` samples (a shuffle buffer of
      ``buffer / block`` blocks, filled, emptied in random order, filled again). A batch mixes windows of about
      ``buffer / block`` blocks, and the store is read that many blocks at a time, so the reads stay within a
      small part of the file (what a disk or a network file system serves well, and what
      :func:`make_loader` reads ahead block by block) while the windows of one recording still spread over
      many batches. Seeded by ``(seed, epoch)`` (the block order) and ``(seed, epoch, rank)`` (the buffer).

    Both orders take every sample once per epoch (over all ranks: all but ``n % world_size``, see ``rank``),
    and ``start_batch`` continues the very order an uninterrupted epoch takes.

    Parameters
    ----------
    n : int
        Samples in the dataset.
    batch_size : int
        Samples per batch (per rank).
    seed : int
        Seed of the shuffle; with ``epoch`` (and for ``"block"`` the rank) it fixes the order.
    epoch : int
        The epoch (0-based) whose order to give.
    shuffle : bool
        Shuffle; ``False``: sample order.
    rank, world_size : int
        This process's rank and the number of processes. The epoch's order (random, or the blocks in their
        random order) is cut into ``world_size`` contiguous, disjoint parts of ``n // world_size`` samples, one per
        rank, so every rank takes the same number of steps; the ``n % world_size`` samples at the end of the
        order are left out of that epoch (other samples each epoch, as the order changes). With ``"block"`` a
        rank takes whole blocks, but for at most one block at each end of its part, which it shares with the
        neighbouring rank (each reading its own windows of it).
    start_batch : int
        Batches of the epoch already seen (skipped).
    drop_last : bool
        Leave out the last incomplete batch of each shard.
    order : {"random", "block"}
        The shuffled order (see above); ignored when ``shuffle=False``.
    block : int
        ``order="block"``: samples per block (64 30-s windows of 19 channels: 29 MB of float32).
    buffer : int
        ``order="block"``: samples in the shuffle buffer (default ``8 * block``); 1 (or 0) is a block shuffle alone
        (each block's windows in their stored order).

    Raises
    ------
    ConfigError
        An unknown ``order``, or ``block`` < 1.

    Examples
    --------
    >>> list(EpochSampler(5, batch_size=2, seed=0, shuffle=False))
    [0, 1, 2, 3]
    >>> list(EpochSampler(5, batch_size=2, seed=0, shuffle=False, start_batch=1, drop_last=False))
    [2, 3, 4]
    >>> s = EpochSampler(10, batch_size=5, seed=0, order="block", block=5, buffer=1)
    >>> sorted(s) == list(range(10)), [sorted(list(s)[:5])[0] % 5, sorted(list(s)[5:])[0] % 5]
    (True, [0, 0])
    """

    def __init__(
        self,
        n: int,
        *,
        batch_size: int,
        seed: int,
        epoch: int = 0,
        shuffle: bool = True,
        rank: int = 0,
        world_size: int = 1,
        start_batch: int = 0,
        drop_last: bool = True,
        order: str = "random",
        block: int = 64,
        buffer: int | None = None,
    ) -> None:
        if order not in READ_ORDERS:
            raise ConfigError(f"order={order!r}; allowed: {', '.join(READ_ORDERS)}")
        if block < 1:
            raise ConfigError(f"block={block}: must be >= 1")
        self.n, self.bs, self.seed, self.epoch = n, batch_size, seed, epoch
        self.shuffle, self.rank, self.world, self.start = shuffle, rank, world_size, start_batch
        self.drop_last = drop_last
        self.order, self.block = order, int(block)
        self.buffer = 8 * self.block if buffer is None else int(buffer)
        self._cache: list[int] | None = None
        self._plan: np.ndarray | None = None  # block order: the rank's positions before the buffer
        #: block order: called with the samples of the next group of blocks as the order enters each group (the
        #: loader's dataset asks the kernel for them ahead: :func:`make_loader`)
        self.will_need: Callable[[np.ndarray], None] | None = None

    def _indices(self) -> list[int]:
        if self._cache is not None:
            return self._cache
        per_rank = self.n // self.world  # equal shards: every rank takes the same number of steps
        lo, hi = self.rank * per_rank, (self.rank + 1) * per_rank
        if self.shuffle and self.order == "block":
            idx = self._block_order(lo, hi)
        elif self.shuffle:
            g = torch.Generator().manual_seed(self.seed * 100003 + self.epoch)
            idx = torch.randperm(self.n, generator=g).tolist()[lo:hi]
        else:
            idx = list(range(lo, hi))
        if self.drop_last:
            idx = idx[: (len(idx) // self.bs) * self.bs]
        self._cache = idx[self.start * self.bs :]
        return self._cache

    def _block_order(self, lo: int, hi: int) -> list[int]:
        """Positions ``lo:hi`` of the epoch's block order, through this rank's shuffle buffer."""
        nb = -(-self.n // self.block)
        blocks = np.random.default_rng([self.seed, self.epoch]).permutation(nb)  # the same on every rank
        seq = (blocks[:, None] * self.block + np.arange(self.block)).reshape(-1)
        seq = seq[seq < self.n][lo:hi]  # the last block is the short one
        self._plan = seq
        return _shuffle_buffer(seq, self.buffer, np.random.default_rng([self.seed, self.epoch, self.rank, 1]))

    def __iter__(self) -> Iterator[int]:
        idx = self._indices()
        if self.will_need is None or self._plan is None:
            return iter(idx)
        return self._ahead(idx, self._plan, self.will_need)

    def _ahead(self, idx: list[int], plan: np.ndarray, hook: Callable[[np.ndarray], None]) -> Iterator[int]:
        """``idx``, calling ``hook`` with the samples of the next group of ``buffer`` positions (the blocks the
        buffer fills with next) as each group starts: they are on their way while this group is read."""
        g = max(self.buffer, self.block, 1)
        off, asked = self.start * self.bs, -1
        for k, i in enumerate(idx):
            grp = (off + k) // g
            if grp > asked:
                ahead = plan[(grp if asked < 0 else grp + 1) * g : (grp + 2) * g]
                if len(ahead):
                    hook(ahead)
                asked = grp
            yield i

    def __len__(self) -> int:
        return len(self._indices())

    def batches_per_epoch(self) -> int:
        """Batches each rank takes in a whole epoch (whatever ``start_batch`` is)."""
        per_rank = self.n // self.world
        return per_rank // self.bs if self.drop_last else math.ceil(per_rank / self.bs)


def _shuffle_buffer(seq: np.ndarray, size: int, rng: np.random.Generator) -> list[int]:
    """``seq`` shuffled within consecutive groups of ``size`` (the last one shorter): a shuffle buffer filled with
    ``size`` items, emptied in random order, filled again. Every item stays within its group, so the items of
    any stretch of the output come from at most two groups. A permutation of ``seq``."""
    if size <= 1 or len(seq) <= 1:
        return seq.tolist()
    keys = np.arange(len(seq)) // size + rng.random(len(seq))  # group number, then a random place within it
    return seq[np.argsort(keys, kind="stable")].tolist()


#: Learning-rate schedules: per-step cosine from ``lr`` to ``min_lr``, or a constant ``lr``.
SCHEDULES = ("cosine", "constant")


@dataclass
class OptimConfig:
    """AdamW + per-step schedule (defaults CBraMod's: lr 5e-4, wd 0.05, clip 1.0, cosine to 1e-5).

    Each pretraining objective has its own defaults (:attr:`~neurokit.training.objectives.Objective.optim`).

    Parameters
    ----------
    lr : float
        Peak learning rate (of a parameter group without its own).
    weight_decay : float
        AdamW's decoupled weight decay (≥ 0).
    min_lr : float
        The learning rate the cosine ends at (``0 ≤ min_lr ≤ lr``; unused by ``"constant"``).
    clip_grad : float
        Global gradient-norm clip; 0: none.
    warmup_steps : int
        Steps of linear warm-up before the schedule.
    schedule : {"cosine", "constant"}
        Per-step cosine from ``lr`` to ``min_lr``, or ``lr`` throughout.

    Raises
    ------
    ConfigError
        An unknown schedule, ``lr ≤ 0``, ``min_lr`` outside ``[0, lr]``, or a negative weight decay or clip.

    Examples
    --------
    >>> OptimConfig(lr=1e-4, min_lr=0.0).schedule
    'cosine'
    """

    lr: float = 5e-4
    weight_decay: float = 0.05
    min_lr: float = 1e-5
    clip_grad: float = 1.0
    warmup_steps: int = 0
    schedule: str = "cosine"

    def __post_init__(self) -> None:
        if self.schedule not in SCHEDULES:
            raise ConfigError(f"schedule={self.schedule!r}; allowed: {', '.join(SCHEDULES)}")
        if self.lr <= 0 or self.min_lr < 0 or (self.schedule == "cosine" and self.min_lr > self.lr):
            raise ConfigError(f"need 0 <= min_lr <= lr and lr > 0 (got lr={self.lr}, min_lr={self.min_lr})")
        if self.weight_decay < 0 or self.clip_grad < 0:
            raise ConfigError(f"weight_decay and clip_grad must be >= 0 (got {self.weight_decay}, {self.clip_grad})")


def head_lr(batch_size: int) -> float:
    """The head's learning rate when none is given: ``1e-3 · √(batch_size / 256)``.

    Source: the CBraMod release, ``finetune_trainer.py`` (``multi_lr``, on by default in ``finetune_main.py``):
    the parameters outside the backbone train at ``0.001*(batch_size/256)**0.5``. An explicit ``lr_head`` wins.

    Parameters
    ----------
    batch_size : int
        Samples per step.

    Returns
    -------
    float
        The learning rate.

    Examples
    --------
    >>> head_lr(64)
    0.0005
    """
    return 1e-3 * math.sqrt(batch_size / 256)


def lr_groups(
    backbone: torch.nn.Module, head: torch.nn.Module, lr_backbone: float, lr_head: float
) -> list[dict[str, Any]]:
    """AdamW parameter groups of a backbone and its head, each at its own learning rate.

    Parameters
    ----------
    backbone, head : nn.Module
        The two parts of a fine-tuning model; the backbone's parameters that do not require a gradient (frozen,
        or fixed beside LoRA adapters) are left out, and a backbone with none left gives no group.
    lr_backbone, lr_head : float
        Their learning rates.

    Returns
    -------
    list of dict
        ``[{"params", "lr": lr_backbone}, {"params", "lr": lr_head}]`` (the head's group alone when the backbone
        has no trainable parameter).

    Examples
    --------
    >>> g = lr_groups(torch.nn.Linear(2, 2), torch.nn.Linear(2, 1), 1e-4, 1e-3)
    >>> [x["lr"] for x in g], [len(x["params"]) for x in g]
    ([0.0001, 0.001], [2, 2])
    """
    groups: list[dict[str, Any]] = [{"params": list(head.parameters()), "lr": lr_head}]
    bb = [p for p in backbone.parameters() if p.requires_grad]
    if bb:
        groups.insert(0, {"params": bb, "lr": lr_backbone})
    return groups


def two_rate_optim(rates: Sequence[float], *, weight_decay: float, min_lr: float, clip_grad: float) -> OptimConfig:
    """The :class:`OptimConfig` of a run whose parameter groups carry their own learning rates (backbone and head):
    its ``lr`` the highest of ``rates``, its cosine floor ``min_lr`` or the lowest rate if that is lower.

    Parameters
    ----------
    rates : sequence of float
        The groups' learning rates.
    weight_decay, min_lr, clip_grad : float
        As :class:`OptimConfig`.

    Returns
    -------
    OptimConfig

    Examples
    --------
    >>> two_rate_optim([1e-4, 5e-4], weight_decay=0.05, min_lr=1e-6, clip_grad=1.0).lr
    0.0005
    """
    return OptimConfig(lr=max(rates), weight_decay=weight_decay, min_lr=min(min_lr, *rates), clip_grad=clip_grad)


def optim_given(optim: dict | None) -> dict:
    """The optimiser fields a user gave (to be set over a model family's or a saved run's), checked.

    ``min_lr`` with the constant schedule is refused (that schedule has no final learning rate); ``min_lr``
    without a schedule asks for the cosine one.

    Parameters
    ----------
    optim : dict or None
        :class:`OptimConfig` field → value, only those given (``None``: none).

    Returns
    -------
    dict
        The same fields, with ``schedule="cosine"`` added where ``min_lr`` came without a schedule.

    Raises
    ------
    ConfigError
        ``min_lr`` with ``schedule="constant"``.

    Examples
    --------
    >>> optim_given({"min_lr": 1e-5})
    {'min_lr': 1e-05, 'schedule': 'cosine'}
    """
    given = dict(optim or {})
    if "min_lr" in given and given.get("schedule") == "constant":
        raise ConfigError(
            f"min_lr={given['min_lr']} with schedule='constant': the constant schedule keeps lr throughout and has "
            "no final learning rate; leave min_lr out or use schedule='cosine'"
        )
    if "min_lr" in given and "schedule" not in given:
        given["schedule"] = "cosine"
    return given


def build_optimizer(param_groups, cfg: OptimConfig, total_steps: int):
    """AdamW over ``param_groups`` (each may carry its own ``lr``) and a LambdaLR that decays every
    group's learning rate by a cosine from its base value to ``min_lr`` over ``total_steps`` steps
    (``schedule="constant"``: keeps it), after ``warmup_steps`` of linear warm-up.

    Parameters
    ----------
    param_groups : iterable of torch.nn.Parameter or of dict
        Parameters, or groups ``{"params": [...], "lr": ...}`` as :class:`torch.optim.AdamW` takes them.
    cfg : OptimConfig
        Learning rate, weight decay, schedule and warm-up.
    total_steps : int
        Optimiser steps of the whole run (the cosine's length).

    Returns
    -------
    optimizer : torch.optim.AdamW
    scheduler : torch.optim.lr_scheduler.LambdaLR
        To step once per optimiser step (:func:`optimizer_step`).

    Examples
    --------
    >>> opt, sched = build_optimizer(torch.nn.Linear(2, 1).parameters(), OptimConfig(), total_steps=10)
    >>> opt.param_groups[0]["lr"]
    0.0005
    """
    opt = torch.optim.AdamW(param_groups, lr=cfg.lr, weight_decay=cfg.weight_decay)
    base = [g.get("lr", cfg.lr) for g in opt.param_groups]
    floor = (lambda b: cfg.min_lr) if cfg.schedule == "cosine" else (lambda b: b)
    lambdas = [_cosine_lambda(b, floor(b), total_steps, cfg.warmup_steps) for b in base]
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambdas)
    return opt, sched


def optimizer_step(loss: torch.Tensor, params, opt, sched, clip_grad: float | None) -> torch.Tensor | None:
    """One update: zero the gradients, back-propagate ``loss``, clip the global gradient norm of ``params`` to
    ``clip_grad`` (when set), step the optimiser and the per-step schedule.

    Parameters
    ----------
    loss : torch.Tensor, shape ()
        The batch's loss.
    params : iterable of torch.nn.Parameter
        The parameters whose gradient norm is clipped.
    opt : torch.optim.Optimizer
        The optimiser (:func:`build_optimizer`).
    sched : torch.optim.lr_scheduler.LRScheduler
        Its per-step schedule.
    clip_grad : float | None
        The largest global gradient norm; 0 or ``None``: no clipping.

    Returns
    -------
    torch.Tensor | None
        The gradient norm before clipping (a 0-d tensor), or ``None`` without clipping.

    Examples
    --------
    >>> lin = torch.nn.Linear(2, 1)
    >>> opt, sched = build_optimizer(lin.parameters(), OptimConfig(), total_steps=10)
    >>> gnorm = optimizer_step(lin(torch.ones(1, 2)).sum(), lin.parameters(), opt, sched, 1.0)
    >>> gnorm.shape
    torch.Size([])
    """
    opt.zero_grad(set_to_none=True)
    loss.backward()
    gnorm = torch.nn.utils.clip_grad_norm_(params, clip_grad) if clip_grad else None
    opt.step()
    sched.step()
    return gnorm


def _cosine_lambda(base_lr: float, min_lr: float, total: int, warmup: int):
    floor = min(min_lr, base_lr) / base_lr
    total = max(total, 1)

    def f(step: int) -> float:
        if warmup and step < warmup:
            return (step + 1) / warmup
        t = min(max(step - warmup, 0) / max(total - warmup, 1), 1.0)
        return floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * t))

    return f


def make_loader(dataset, sampler, batch_size: int, num_workers: int = 0, device: torch.device | None = None):
    """A DataLoader that reads each batch at once where the dataset can (``__getitems__``:
    :class:`~neurokit.data.dataset.PatchDataset`, its ``ScaledDataset`` and ``Subset`` wrappers) and passes it on
    uncopied (:func:`~neurokit.data.dataset.collate_patches`); pinned memory when ``device`` is a GPU. Under a block
    order (:class:`EpochSampler` ``order="block"``) the stores read ahead block by block
    (:func:`~neurokit.data.dataset.set_readahead`), so each block comes from the disk in large reads, and the
    sampler asks for the next group of blocks as it enters a group (:meth:`PatchDataset.will_need
    <neurokit.data.dataset.PatchDataset.will_need>`), so the disk reads them while the current ones are used.

    Parameters
    ----------
    dataset : torch.utils.data.Dataset
        The samples (a :class:`~neurokit.data.dataset.PatchDataset` or any map-style dataset).
    sampler : torch.utils.data.Sampler
        The order (:class:`EpochSampler`).
    batch_size : int
        Samples per batch.
    num_workers : int
        Worker processes reading batches; 0: the main process.
    device : torch.device | None
        Where the batches go (pinned host memory for a CUDA device).

    Returns
    -------
    torch.utils.data.DataLoader

    Examples
    --------
    >>> ds = torch.utils.data.TensorDataset(torch.zeros(4, 2), torch.arange(4))
    >>> x, y = next(iter(make_loader(ds, EpochSampler(4, batch_size=4, seed=0), 4)))
    >>> x.shape
    torch.Size([4, 2])
    """
    block = sampler.block if getattr(sampler, "shuffle", False) and getattr(sampler, "order", "") == "block" else 0
    hook = will_need_hook(dataset) if block else None
    set_readahead(dataset, block, on_read=hook is None)  # the sampler asks ahead: the readers need not ask again
    if block:
        sampler.will_need = hook
    return torch.utils.data.DataLoader(
        dataset,
        batch_size=batch_size,
        sampler=sampler,
        num_workers=num_workers,
        collate_fn=collate_patches,
        pin_memory=bool(device is not None and device.type == "cuda"),
        persistent_workers=False,
        drop_last=False,
    )


def choose_batch_dtype(trains: Sequence[Any], objective: Any, say: bool | Callable[[str], None] = True) -> str:
    """Have training sets read only from float16 stores hand their batches over as stored
    (``PatchDataset(batch_dtype="stored")``: half the bytes to copy and to move, no conversion on the host; the
    :class:`~neurokit.training.trainer.Trainer` casts them to float32 on the device), unless a step on the host
    needs float32: an objective that pairs the windows with other data (CLIP), or a modality other than EEG
    (surface stores' host-side interpolators). A corpus scale (``normalize="corpus"``) keeps float16
    (:class:`~neurokit.data.corpus.ScaledDataset`). Said in one log line.

    Parameters
    ----------
    trains : sequence of PatchDataset
        The training sets (their ``batch_dtype`` is set to ``"stored"`` when chosen).
    objective : Objective
        The pretraining objective (:func:`~neurokit.training.objectives.get_objective`): its ``pair`` and
        ``modality``.
    say : bool or callable
        Log the choice (rank 0); a callable also gets the line (a command's console).

    Returns
    -------
    str
        ``"stored"`` or ``"float32"``.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> choose_batch_dtype([], SimpleNamespace(pair=None, modality="eeg"), say=False)  # no float16 store
    'float32'
    """
    kinds = {st.sample_dtype for t in trains for st in t.stores}
    if kinds != {"float16"}:
        return "float32"
    why = None
    if objective.pair is not None:
        why = "the objective pairs the windows with other data on the host"
    elif objective.modality != "eeg":
        why = f"{objective.modality} windows are read by host-side steps"
    if why is None:
        for t in trains:
            t.batch_dtype = "stored"
    line = (
        f"float16 store(s): batches converted to float32 on the host ({why})"
        if why is not None
        else "float16 store(s): training batches go to the device as stored, in float16, and are cast to float32 there"
    )
    if say:
        logger.info("%s", line)
    if callable(say):
        say(line)
    return "stored" if why is None else "float32"


def unwrap(model: torch.nn.Module) -> torch.nn.Module:
    """The model inside a DistributedDataParallel or DataParallel wrapper (``model.module``), else ``model``.

    Parameters
    ----------
    model : torch.nn.Module
        A model, wrapped or not.

    Returns
    -------
    torch.nn.Module

    Examples
    --------
    >>> lin = torch.nn.Linear(2, 1)
    >>> unwrap(torch.nn.DataParallel(lin)) is lin, unwrap(lin) is lin
    (True, True)
    """
    inner = getattr(model, "module", None)  # DistributedDataParallel / DataParallel wrap the model as .module
    return inner if isinstance(inner, torch.nn.Module) else model


def seed_everything(seed: int) -> None:
    """Seed Python's, NumPy's and PyTorch's global random number generators.

    Parameters
    ----------
    seed : int
        The seed (NumPy takes it modulo 2**32).

    Examples
    --------
    >>> seed_everything(0); a = torch.rand(1)
    >>> seed_everything(0); bool(torch.rand(1) == a)
    True
    """
    import random

    random.seed(seed)
    np.random.seed(seed % (2**32))
    torch.manual_seed(seed)
