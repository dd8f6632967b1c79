"""Pieces shared by the pretraining and fine-tuning loops: deterministic resumable sampling,
AdamW with a per-step cosine schedule, loaders."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterator

import numpy as np
import torch

from neurokit._utils.errors import ConfigError
from neurokit.data.dataset import collate_patches


class EpochSampler(torch.utils.data.Sampler[int]):
    """Shuffled indices for one epoch, identical on every run with the same seed, sharded across
    ranks, and able to start part-way through (``start_batch``) so a resumed job sees exactly the
    batches it had not seen yet."""

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
    ) -> None:
        self.n, self.bs, self.seed, self.epoch = n, batch_size, seed, epoch
        self.shuffle, self.rank, self.world, self.start = shuffle, rank, world_size, start_batch
        self.drop_last = drop_last

    def _indices(self) -> list[int]:
        if self.shuffle:
            g = torch.Generator().manual_seed(self.seed * 100003 + self.epoch)
            idx = torch.randperm(self.n, generator=g).tolist()
        else:
            idx = list(range(self.n))
        per_rank = self.n // self.world  # equal shards: every rank takes the same number of steps
        idx = idx[self.rank * per_rank : (self.rank + 1) * per_rank]
        if self.drop_last:
            idx = idx[: (len(idx) // self.bs) * self.bs]
        return idx[self.start * self.bs :]

    def __iter__(self) -> Iterator[int]:
        return iter(self._indices())

    def __len__(self) -> int:
        return len(self._indices())

    def batches_per_epoch(self) -> int:
        per_rank = self.n // self.world
        return per_rank // self.bs if self.drop_last else math.ceil(per_rank / self.bs)


#: Learning-rate schedules: per-step cosine from ``lr`` to ``min_lr``, or a constant ``lr``.
SCHEDULES = ("cosine", "constant")


@dataclass
class OptimConfig:
    """AdamW + per-step schedule (defaults CBraMod's: lr 5e-4, wd 0.05, clip 1.0, cosine to 1e-5).

    ``schedule``: ``"cosine"`` (to ``min_lr``) or ``"constant"`` (``lr`` throughout; ``min_lr`` unused).
    ``clip_grad``: gradient-norm clip, 0 = none. Each pretraining objective has its own defaults
    (:attr:`~neurokit.training.objectives.Objective.optim`).
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
    (``schedule="constant"``: keeps it), after ``warmup_steps`` of linear warm-up."""
    opt = torch.optim.AdamW(param_groups, lr=cfg.lr, weight_decay=cfg.weight_decay)
    base = [g.get("lr", cfg.lr) for g in opt.param_groups]
    floor = (lambda b: cfg.min_lr) if cfg.schedule == "cosine" else (lambda b: b)
    lambdas = [_cosine_lambda(b, floor(b), total_steps, cfg.warmup_steps) for b in base]
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambdas)
    return opt, sched


def optimizer_step(loss: torch.Tensor, params, opt, sched, clip_grad: float | None) -> torch.Tensor | None:
    """One update: zero the gradients, back-propagate ``loss``, clip the global gradient norm of ``params`` to
    ``clip_grad`` (when set), step the optimiser and the per-step schedule.

    Returns
    -------
    The gradient norm before clipping (a 0-d tensor), or ``None`` without clipping.
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
    uncopied (:func:`~neurokit.data.dataset.collate_patches`); pinned memory when ``device`` is a GPU."""
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


def unwrap(model: torch.nn.Module) -> torch.nn.Module:
    inner = getattr(model, "module", None)  # DistributedDataParallel / DataParallel wrap the model as .module
    return inner if isinstance(inner, torch.nn.Module) else model


def seed_everything(seed: int) -> None:
    import random

    random.seed(seed)
    np.random.seed(seed % (2**32))
    torch.manual_seed(seed)
