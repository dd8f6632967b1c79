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
from .checkpoint import check_channels, load_checkpoint, rng_state, save_checkpoint, set_rng_state
from .objectives import get_objective
from .training import EpochSampler, OptimConfig, build_optimizer, make_loader, seed_everything, unwrap

logger = logging.getLogger("neurokit")


@dataclass
class PretrainConfig:
    """Pretraining settings (defaults: CBraMod's, except the epoch count).

    ``max_steps`` caps the total number of optimiser steps (the cosine schedule spans
    ``min(max_steps, epochs × batches per epoch)``). ``optim``: an :class:`OptimConfig`, or a dict of the
    fields to set; the fields not set take the model family's reference values
    (:attr:`Objective.optim <neurokit.pipelines.objectives.Objective>`: ``sit`` AdamW 3e-4, weight decay
    0.01, constant learning rate, no clipping; ``cbramod`` the :class:`OptimConfig` defaults). Setting
    ``min_lr`` without ``schedule`` asks for the cosine schedule.

    Raises
    ------
    ConfigError
        Out-of-range values; ValueError for an unknown ``model``.
    """

    model: str = "cbramod"
    model_kwargs: dict[str, Any] = field(default_factory=dict)
    epochs: int = 40
    max_steps: int | None = None
    batch_size: int = 128
    optim: OptimConfig | dict | None = None
    seed: int = 0
    num_workers: int = 0
    device: str = "auto"
    ckpt_every: int = 0
    subjects: list[str] | None = None
    progress: bool = True

    def __post_init__(self) -> None:
        if self.epochs < 1 or self.batch_size < 1:
            raise ConfigError(f"epochs and batch_size must be >= 1 (got {self.epochs}, {self.batch_size})")
        if self.max_steps is not None and self.max_steps < 1:
            raise ConfigError(f"max_steps must be >= 1 when given (got {self.max_steps})")
        if self.num_workers < 0:
            raise ConfigError(f"num_workers must be >= 0 (got {self.num_workers})")
        if not isinstance(self.optim, OptimConfig):
            given = dict(self.optim or {})
            if "min_lr" in given and "schedule" not in given:
                given["schedule"] = "cosine"
            try:
                self.optim = OptimConfig(**{**get_objective(self.model).optim, **given})
            except TypeError as exc:
                raise ConfigError(f"optim: {exc}") from exc


def pretrain(stores: Sequence[str | Path] | str | Path, out_dir: str | Path, cfg: PretrainConfig | None = None,
             *, resume: bool = False, overwrite: bool = False) -> dict[str, Any]:
    """Pretrain ``cfg.model`` on the samples of ``stores`` and write checkpoints to ``out_dir``.

    ``resume``: continue from ``out_dir/last.pt`` with the checkpoint's model configuration (the store
    must have the same channels and sample shape, and batch size and seed must match; a longer
    ``epochs``/``max_steps`` extends the run and re-spans the cosine schedule). ``overwrite``: start again in an ``out_dir`` that
    already holds a run. Without either, an ``out_dir`` holding ``last.pt`` raises
    :class:`FileExistsError`, so two runs never mix their logs.

    Returns
    -------
    dict with ``checkpoint`` (path of ``last.pt``), ``steps``, ``loss_first`` and ``loss_last`` (mean
    loss over the first and last 10 % of steps), ``samples_per_s`` and ``history`` (per-step losses).
    """
    cfg = cfg or PretrainConfig()
    out = Path(out_dir)
    info = dist.setup(cfg.device)
    try:
        return _pretrain(stores, out, cfg, info, resume, overwrite)
    finally:
        dist.cleanup(info)


def _pretrain(stores, out: Path, cfg: PretrainConfig, info: dist.DistInfo, resume: bool, overwrite: bool) -> dict[str, Any]:
    seed_everything(cfg.seed + info.rank)
    ckpt_path = out / "last.pt"
    if ckpt_path.exists() and not resume:
        if not overwrite:
            raise FileExistsError(
                f"{out} already holds a run ({ckpt_path.name}); pass resume=True (CLI: --resume) to continue it "
                "or overwrite=True (--overwrite) to start again"
            )
        if info.is_main:
            (out / "metrics.jsonl").unlink(missing_ok=True)
    ds = PatchDataset(stores if isinstance(stores, (list, tuple)) else [stores], subjects=cfg.subjects)
    if cfg.subjects is not None and len(ds) == 0:
        raise ConfigError(f"no sample of subjects {cfg.subjects} in the store(s); subjects there: {ds.store_subjects}")
    if len(ds) < cfg.batch_size * info.world_size:
        raise ConfigError(
            f"{len(ds)} samples in the store(s) but batch_size={cfg.batch_size} × {info.world_size} process(es); "
            "lower --batch-size"
        )
    objective = get_objective(cfg.model)
    if ds.stores[0].modality != objective.modality:
        raise ConfigError(f"model {cfg.model!r} trains on {objective.modality} stores; got {ds.stores[0].modality}")
    state = None
    if resume:
        if not ckpt_path.exists():
            raise FileNotFoundError(f"--resume: no checkpoint at {ckpt_path}")
        state = load_checkpoint(ckpt_path)
        _check_resume(state, ds, cfg, ckpt_path, objective)
        model = objective.rebuild(state["model_config"])
        model.load_state_dict(state["state_dict"])
    else:
        model = objective.build(ds.attrs, ds.sample_shape, dict(cfg.model_kwargs))
    model.to(info.device)
    if info.enabled:
        model = torch.nn.parallel.DistributedDataParallel(
            model, device_ids=[info.device.index] if info.device.type == "cuda" else None
        )
    data = ds if objective.pair is None else objective.pair(ds, unwrap(model), dict(cfg.model_kwargs))
    if len(data) < cfg.batch_size * info.world_size:
        raise ConfigError(f"{len(data)} training pairs but batch_size={cfg.batch_size} × {info.world_size} process(es); "
                          "lower --batch-size")
    probe = EpochSampler(len(data), batch_size=cfg.batch_size, seed=cfg.seed, world_size=info.world_size)
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
            sampler = EpochSampler(len(data), batch_size=cfg.batch_size, seed=cfg.seed, epoch=epoch,
                                   rank=info.rank, world_size=info.world_size, start_batch=start)
            for x, y in make_loader(data, sampler, cfg.batch_size, cfg.num_workers, info.device):
                x = x.to(info.device, non_blocking=True)
                # masks depend on (seed, rank, step) only, so a resumed job draws the same ones
                gen.manual_seed(cfg.seed * 1_000_003 + info.rank * 7919 + step)
                loss, stats = objective.loss(model, x, gen) if objective.pair is None else objective.loss(model, x, gen, y)
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


def _check_resume(state: dict, ds: PatchDataset, cfg: PretrainConfig, path: Path, objective) -> None:
    """A resumed job must train the same model on data of the same layout."""
    from .._errors import ChannelMismatchError

    if state.get("model") != cfg.model:
        raise ConfigError(f"{path}: checkpoint trains {state.get('model')!r}, not {cfg.model!r}")
    conflicts = {}
    if cfg.model_kwargs:  # the options given must describe the checkpoint's model
        given = objective.build(ds.attrs, ds.sample_shape, dict(cfg.model_kwargs)).config.to_dict()
        conflicts = {k: (state["model_config"].get(k), v) for k, v in given.items() if state["model_config"].get(k) != v}
    if conflicts:
        raise ConfigError(f"{path}: resume keeps the checkpoint's model; these options differ from it "
                          f"(checkpoint, given): {conflicts}. Drop them or start a new run")
    old = state.get("train_config") or {}
    for k in ("batch_size", "seed"):
        if k in old and old[k] != getattr(cfg, k):
            raise ConfigError(f"{path}: resume needs the run's {k}={old[k]!r} (given {getattr(cfg, k)!r}); "
                              "the sampling order depends on it")
    for k in ("epochs", "max_steps"):
        if k in old and old[k] != getattr(cfg, k):
            logger.warning("%s: %s changed from %r to %r: the cosine schedule now spans the new length",
                           path, k, old[k], getattr(cfg, k))
    old_attrs = state.get("store_attrs") or {}
    for k in ("modality", "grid", "mesh"):
        if k in old_attrs and old_attrs[k] != ds.attrs.get(k):
            raise ConfigError(f"{path}: the checkpoint was trained on {k}={old_attrs[k]!r}; the store has {ds.attrs.get(k)!r}")
    check_channels(old_attrs.get("ch_names"), ds.attrs.get("ch_names"), store=ds.stores[0].path, checkpoint=path)
    if list(state.get("sample_shape", ds.sample_shape)) != list(ds.sample_shape):
        raise ChannelMismatchError(f"{path}: sample shape {state['sample_shape']} differs from the store's {list(ds.sample_shape)}")


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
