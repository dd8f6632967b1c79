"""Self-supervised pretraining on patch stores (``neuro pretrain``).

One loop for every model family: the :class:`~neurokit.pipelines.objectives.Objective` registered under
``model`` builds the module and computes the loss. Runs on the CPU or one GPU in one process, and on
several GPUs or nodes under ``torchrun`` (DistributedDataParallel). Checkpoints (``last.pt``, written
every ``ckpt_every`` steps and at the end of each epoch) hold the model configuration and weights,
optimiser, scheduler and RNG state, the data card and the preprocessing recipe; ``resume=True`` picks
up exactly where ``last.pt`` stopped.
"""
from __future__ import annotations

import json
import logging
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

import torch

from .._errors import ConfigError
from ..data.dataset import PatchDataset
from . import distributed as dist
from ._progress import TrainProgress
from .checkpoint import load_checkpoint, rng_state, save_checkpoint, set_rng_state
from .objectives import get_objective
from .training import EpochSampler, OptimConfig, build_optimizer, make_loader, seed_everything, unwrap

logger = logging.getLogger("neurokit")


@dataclass
class PretrainConfig:
    """Pretraining settings (defaults: CBraMod's, except the epoch count).

    ``max_steps`` caps the total number of optimiser steps (the cosine schedule spans
    ``min(max_steps, epochs × batches per epoch)``).
    """

    model: str = "cbramod"
    model_kwargs: dict[str, Any] = field(default_factory=dict)
    epochs: int = 40
    max_steps: int | None = None
    batch_size: int = 128
    optim: OptimConfig = field(default_factory=OptimConfig)
    seed: int = 0
    num_workers: int = 0
    device: str = "auto"
    ckpt_every: int = 0
    subjects: list[str] | None = None
    progress: bool = True

    def __post_init__(self) -> None:
        if self.epochs < 1 or self.batch_size < 1:
            raise ConfigError(f"epochs and batch_size must be >= 1 (got {self.epochs}, {self.batch_size})")
        if isinstance(self.optim, dict):
            self.optim = OptimConfig(**self.optim)


def pretrain(stores: Sequence[str | Path] | str | Path, out_dir: str | Path, cfg: PretrainConfig | None = None,
             *, resume: bool = False) -> dict[str, Any]:
    """Pretrain ``cfg.model`` on the samples of ``stores`` and write checkpoints to ``out_dir``.

    Returns
    -------
    dict with ``checkpoint`` (path of ``last.pt``), ``steps``, ``loss_first`` and ``loss_last`` (mean
    loss over the first and last 10 % of steps), ``samples_per_s`` and ``history`` (per-step losses).
    """
    cfg = cfg or PretrainConfig()
    out = Path(out_dir)
    info = dist.setup(cfg.device)
    try:
        return _pretrain(stores, out, cfg, info, resume)
    finally:
        dist.cleanup(info)


def _pretrain(stores, out: Path, cfg: PretrainConfig, info: dist.DistInfo, resume: bool) -> dict[str, Any]:
    seed_everything(cfg.seed + info.rank)
    ds = PatchDataset(stores if isinstance(stores, (list, tuple)) else [stores], subjects=cfg.subjects)
    if len(ds) < cfg.batch_size * info.world_size:
        raise ConfigError(
            f"{len(ds)} samples in the store(s) but batch_size={cfg.batch_size} × {info.world_size} process(es); "
            "lower --batch-size"
        )
    objective = get_objective(cfg.model)
    if ds.stores[0].modality != objective.modality:
        raise ConfigError(f"model {cfg.model!r} trains on {objective.modality} stores; got {ds.stores[0].modality}")
    ckpt_path = out / "last.pt"
    state = None
    if resume:
        if not ckpt_path.exists():
            raise FileNotFoundError(f"--resume: no checkpoint at {ckpt_path}")
        state = load_checkpoint(ckpt_path)
        model = objective.rebuild(state["model_config"])
        model.load_state_dict(state["state_dict"])
    else:
        model = objective.build(ds.attrs, ds.sample_shape, dict(cfg.model_kwargs))
    model.to(info.device)
    if info.enabled:
        model = torch.nn.parallel.DistributedDataParallel(
            model, device_ids=[info.device.index] if info.device.type == "cuda" else None
        )
    probe = EpochSampler(len(ds), batch_size=cfg.batch_size, seed=cfg.seed, world_size=info.world_size)
    per_epoch = probe.batches_per_epoch()
    total = per_epoch * cfg.epochs
    if cfg.max_steps:
        total = min(total, cfg.max_steps)
    params = [p for p in model.parameters() if p.requires_grad]
    opt, sched = build_optimizer([{"params": params}], cfg.optim, total)
    step = 0
    history: list[float] = []
    if state is not None:
        opt.load_state_dict(state["optimizer"])
        sched.load_state_dict(state["scheduler"])
        step = int(state["step"])
        history = list(state.get("history", []))
        set_rng_state(state.get("rng", {}))
    gen = torch.Generator(device=info.device)
    meta = _provenance(ds, cfg)
    bar = TrainProgress(total, start=step, description=f"pretrain {cfg.model}", enabled=cfg.progress and info.is_main)
    n_seen = 0
    t0 = time.perf_counter()
    log = (out / "metrics.jsonl") if info.is_main else None
    if log is not None:
        out.mkdir(parents=True, exist_ok=True)
    model.train()
    try:
        while step < total:
            epoch, start = divmod(step, per_epoch)
            sampler = EpochSampler(len(ds), batch_size=cfg.batch_size, seed=cfg.seed, epoch=epoch,
                                   rank=info.rank, world_size=info.world_size, start_batch=start)
            for x, _ in make_loader(ds, sampler, cfg.batch_size, cfg.num_workers, info.device):
                x = x.to(info.device, non_blocking=True)
                # masks depend on (seed, rank, step) only, so a resumed job draws the same ones
                gen.manual_seed(cfg.seed * 1_000_003 + info.rank * 7919 + step)
                loss, stats = objective.loss(model, x, gen)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                gnorm = torch.nn.utils.clip_grad_norm_(params, cfg.optim.clip_grad) if cfg.optim.clip_grad else None
                opt.step()
                sched.step()
                step += 1
                n_seen += x.shape[0] * info.world_size
                lv = float(dist.all_reduce_mean(loss.detach(), info))
                history.append(lv)
                if log is not None:
                    with log.open("a") as fh:
                        fh.write(json.dumps({"step": step, "epoch": epoch, "loss": lv, "lr": sched.get_last_lr()[0],
                                             "grad_norm": None if gnorm is None else float(gnorm)}) + "\n")
                bar.update(loss=lv, lr=sched.get_last_lr()[0])
                if not torch.isfinite(loss):
                    raise FloatingPointError(f"loss became {lv} at step {step}; lower --lr or check the store")
                if (cfg.ckpt_every and step % cfg.ckpt_every == 0) or step % per_epoch == 0 or step == total:
                    _save(ckpt_path, model, opt, sched, step, history, cfg, meta, info)
                if step >= total:
                    break
    finally:
        bar.close()
    elapsed = time.perf_counter() - t0
    k = max(1, len(history) // 10)
    result = {
        "checkpoint": str(ckpt_path),
        "steps": step,
        "loss_first": sum(history[:k]) / k,
        "loss_last": sum(history[-k:]) / k,
        "samples_per_s": n_seen / elapsed if elapsed > 0 else float("nan"),
        "history": history,
    }
    if info.is_main:
        (out / "pretrain_summary.json").write_text(json.dumps({k: v for k, v in result.items() if k != "history"}, indent=2))
    return result


def _provenance(ds: PatchDataset, cfg: PretrainConfig) -> dict[str, Any]:
    a = ds.attrs
    return {
        "card": a.get("card"),
        "card_body": a.get("card_body"),
        "recipe": a.get("recipe"),
        "store_attrs": {k: a.get(k) for k in ("modality", "ch_names", "sfreq", "units", "task", "label_names",
                                                "grid", "mesh", "tr", "hemisphere") if k in a},
        "stores": [str(s.path) for s in ds.stores],
        "sample_shape": list(ds.sample_shape),
    }


def _save(path, model, opt, sched, step, history, cfg, meta, info) -> None:
    if not info.is_main:
        return
    m = unwrap(model)
    save_checkpoint(
        path,
        {
            "kind": "pretrain",
            "model": cfg.model,
            "model_config": m.config.to_dict(),
            "state_dict": m.state_dict(),
            "optimizer": opt.state_dict(),
            "scheduler": sched.state_dict(),
            "step": step,
            "history": history,
            "train_config": asdict(cfg),
            "rng": rng_state(),
            **meta,
        },
    )
