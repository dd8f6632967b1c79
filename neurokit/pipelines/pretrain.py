"""Self-supervised pretraining on patch stores (``neuro pretrain``).

One loop for every model family: the :class:`~neurokit.training.objectives.Objective` registered under
``model`` builds the module and computes the loss. Runs on the CPU or one GPU in one process, and on
several GPUs or nodes under ``torchrun`` (DistributedDataParallel). Checkpoints (``last.pt``, written
every ``ckpt_every`` steps and at the end of each epoch) hold the model configuration and weights,
optimiser, scheduler and RNG state, the data card and the preprocessing recipe; ``resume=True`` picks
up exactly where ``last.pt`` stopped.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, Collection, Sequence

import torch

from neurokit._utils.errors import ConfigError
from neurokit._utils.locks import output_lock
from neurokit._utils.staging import StagedOutput, recover_run_folder, refuse_run_folder, run_files
from neurokit.data.corpus import ScaledDataset, heldout_scales
from neurokit.data.dataset import PatchDataset
from neurokit.data.provenance import data_record, kept_summary, store_names, used_sources, warn_shared_recordings
from neurokit.data.selection import (
    sample_digest,
    Holdout,
    layout_name,
    layout_repeat,
    select_layouts,
    split_heldout,
)
from neurokit.evaluation.masked import heldout_history, masked_verdict
from neurokit.models.checkpoint import load_checkpoint
from neurokit.models.config import model_config_dict
from neurokit.pipelines.outputs import record_run
from neurokit.training import distributed as dist
from neurokit.training.masked_baselines import (
    HeldoutSourceScoring,
    fit_masked_baselines,
    fitted_record,
    heldout_source_scoring,
    heldout_tagged,
)
from neurokit.training.objectives import get_objective, heldout_masked_loss
from neurokit.training.optim import OptimConfig, choose_batch_dtype, seed_everything, unwrap
from neurokit.training.pretrain_resume import check_pretrain_resume, resumed_settings
from neurokit.training.config import PretrainConfig, setting_text
from neurokit.training.trainer import Batch, Trainer

logger = logging.getLogger("neurokit")


#: start CBraMod's reconstruction head at zero (:meth:`~neurokit.models.cbramod.CBraMod.zero_reconstruction_head`):
#: the loss then starts at predict-zero instead of ~7× it (measured in docs/guide/pretraining.md)
ZERO_INIT_HEAD = True

#: settings a resumed run takes from the call, not from the saved run (:func:`pretrain_with_options`): where and how
#: it runs, not what it trains
RUN_LOCAL = ("device", "progress", "num_workers")


def check_pretrain_options(
    cfg: PretrainConfig | None, *, resume: bool = False, overwrite: bool = False, given: Collection[str] = ()
) -> None:
    """Refuse setting combinations a pretraining run would otherwise ignore (those of one model family are refused
    by :class:`PretrainConfig` itself).

    Parameters
    ----------
    cfg : PretrainConfig or None
        The run's settings; ``None`` checks ``resume`` and ``overwrite`` only (before a resumed run's settings are
        read).
    resume, overwrite : bool
        As :func:`pretrain` takes them.
    given : collection of str
        The settings given explicitly, by their names (``PretrainConfig`` fields: ``"split"``…); a setting left at
        its default is not refused.

    Raises
    ------
    ConfigError
        ``resume`` with ``overwrite``; ``split`` given with ``subjects`` (the subjects replace the split).
    """
    if resume and overwrite:
        raise ConfigError("resume=True continues the run in the output folder and overwrite=True replaces it: give one")
    if cfg is not None and cfg.subjects is not None and "split" in set(given):
        raise ConfigError(
            f"{setting_text('split', cfg.split or 'all')} with {setting_text('subjects', cfg.subjects)}: the subjects choose "
            "the samples instead of a split; give one of them"
        )


def pretrain(
    stores: Sequence[str | Path] | str | Path,
    out_dir: str | Path,
    cfg: PretrainConfig | None = None,
    *,
    resume: bool = False,
    overwrite: bool = False,
    say: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Pretrain ``cfg.model`` on the samples of ``stores`` and write checkpoints to ``out_dir``.

    Parameters
    ----------
    stores : path or sequence of paths
        Patch store(s) or shard-set folder(s); stores of different sample layouts train side by side (CBraMod).
    out_dir : str or Path
        The run's folder: ``last.pt``, ``metrics.jsonl``, ``pretrain_summary.json`` (:data:`SUMMARY`), the record.
        Without ``resume`` or ``overwrite``, one holding any run file (``metrics.jsonl``, ``last.pt``, a summary or
        config: :func:`~neurokit._utils.staging.run_files`) is refused, so two runs never mix their logs.
    cfg : PretrainConfig, optional
        The settings (default: ``PretrainConfig()``).
    resume : bool
        Continue from ``out_dir/last.pt`` with the checkpoint's model configuration (the store must have the same
        channels and sample shape, and batch size and seed must match; a longer ``epochs``/``max_steps`` extends
        the run and re-spans the cosine schedule). :func:`resume_config` gives the run's own settings.
    overwrite : bool
        Start again in an ``out_dir`` that already holds a run; the new run is written beside it (``.NAME.new``)
        and replaces it only once finished, so a stopped overwrite leaves the earlier run whole; only the earlier
        run's own files are replaced, the user's other entries in ``out_dir`` stay
        (:class:`~neurokit._utils.staging.StagedOutput`).
    say : callable, optional
        Called (main process only) with one line saying what the run trains on, once the samples are selected.

    Returns
    -------
    dict
        ``checkpoint`` (path of ``last.pt``), ``steps``, ``loss_first`` and ``loss_last`` (mean loss over the first
        and last 10 % of steps), ``samples_per_s``, ``normalize`` (``{"mode"[, "corpus_scales"]}``), ``heldout``
        (what was held out), ``heldout_history`` (per epoch: ``heldout_loss``, ``heldout_zero``, ``heldout_mean``,
        mean squared errors on the held-out windows' masked values:
        :func:`~neurokit.training.objectives.heldout_masked_loss`), ``verdict`` (the last epoch's held-out loss
        against its best baseline, per layout where there are several:
        :func:`~neurokit.evaluation.masked.masked_verdict`; ``None`` when nothing was held out), ``kept`` (windows
        the stores' preparation kept and dropped: :func:`~neurokit.data.provenance.kept_summary`),
        ``pretraining_sources`` (how many source recordings the checkpoint records, path + SHA-256) and ``history``
        (per-step losses). The checkpoint records the same, with the list of sources; the summary all but
        ``history``.

    Raises
    ------
    FileExistsError
        ``out_dir`` holds a run and neither ``resume`` nor ``overwrite`` is given.
    ~neurokit._utils.locks.OutputLockedError
        Another process is pretraining into ``out_dir``.
    ConfigError
        Settings that do not apply to the data or that do not continue the run in ``out_dir``
        (:func:`~neurokit.training.pretrain_resume.check_pretrain_resume`), ``resume`` with ``overwrite``.
    FileNotFoundError
        ``resume`` without ``out_dir/last.pt``.
    """
    cfg = cfg or PretrainConfig()
    check_pretrain_options(cfg, resume=resume, overwrite=overwrite)
    out = Path(out_dir)
    with output_lock(out, "pretrain"):  # a second run into ``out`` is refused while this one holds it
        # an earlier run replaced by ``overwrite`` stays whole until the new one has finished beside it; only its
        # own files are replaced (the user's entries in ``out`` stay)
        recover_run_folder(out)
        stage = StagedOutput(
            out, replace=overwrite and not resume and bool(run_files(out)), run_folder=True, resume=resume
        )
        info = dist.setup(cfg.device)
        try:
            res = _pretrain(stores, stage.work, cfg, info, resume, overwrite, final=out, say=say)
            if info.is_main:
                res["config"] = record_run(
                    stage.work, pretrain_record(cfg, stores, out, resume, overwrite), report=SUMMARY
                )
            stage.commit()
            return res
        except BaseException as exc:
            stage.abandon(exc)  # a staged overwrite: the earlier run is unchanged, said in one line
            raise
        finally:
            dist.cleanup(info)


#: the pretraining run's report in its folder
SUMMARY = "pretrain_summary.json"


def pretrain_record(cfg: PretrainConfig, stores, out_dir, resume: bool, overwrite: bool) -> dict[str, Any]:
    """The record of a pretraining run (:func:`~neurokit.pipelines.outputs.record_run`): ``settings``, every
    field of ``cfg`` and argument of the call, and ``resume``: a resumed run keeps the checkpoint's settings
    (options given again change them), and must repeat the model, its configuration, ``normalize``,
    ``batch_size``, ``seed``, the data's modality, grid, mesh, channels, sample shape, recipe and subjects
    (:mod:`~neurokit.training.pretrain_resume`)."""
    return {
        "settings": {**asdict(cfg), "stores": stores, "out_dir": out_dir, "resume": resume, "overwrite": overwrite},
        "resume": {
            "checked": [
                "model", "model_kwargs (the model's configuration)", "normalize", "batch_size", "seed",
                "layout_repeats",
                "store modality, grid, mesh, channels, sample shape, recipe", "subjects",
            ],
            "may_change": ["epochs", "max_steps (the schedule spans the new length)", "optim", "device",
                           "num_workers", "ckpt_every", "progress", "read_order (at an epoch's end)"],
        },
    }  # fmt: skip


def resume_config(out_dir: str | Path, **given: Any) -> PretrainConfig:
    """The configuration of the run in ``out_dir/last.pt`` with only the settings in ``given`` changed
    (``optim`` and ``model_kwargs`` entries are merged key by key), so a resume keeps every setting the
    user does not give again (:func:`~neurokit.training.pretrain_resume.resumed_settings`).

    Parameters
    ----------
    out_dir : str or Path
        The run's folder.
    **given
        :class:`PretrainConfig` fields to change.

    Returns
    -------
    PretrainConfig

    Raises
    ------
    FileNotFoundError
        No checkpoint in ``out_dir``.
    ConfigError
        Settings :class:`PretrainConfig` refuses, or saved optimiser settings that cannot be read.
    """
    known = set(PretrainConfig.__dataclass_fields__)
    return PretrainConfig(
        **{k: v for k, v in resumed_settings(Path(out_dir) / "last.pt", **given).items() if k in known}
    )


def pretrain_with_options(
    stores: Sequence[str | Path] | str | Path,
    out_dir: str | Path,
    options: dict[str, Any],
    *,
    given: Collection[str] = (),
    resume: bool = False,
    overwrite: bool = False,
    say: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """:func:`pretrain` with its settings given as a command line gives them: every setting with its value, and the
    names of those given explicitly (``neuro pretrain`` is this call).

    A new run takes ``options``. A resumed run (``resume``) keeps the settings saved in ``out_dir/last.pt`` and
    changes only those in ``given``, the ``optim`` and ``model_kwargs`` entries in ``options`` and the settings of
    :data:`RUN_LOCAL` (:func:`resume_config`).

    Parameters
    ----------
    stores : path or sequence of paths
        Patch store(s) to pretrain on.
    out_dir : str or Path
        The run's folder.
    options : dict
        :class:`PretrainConfig` field → value; ``optim`` and ``model_kwargs`` dicts hold only the entries given.
    given : collection of str
        Names of the settings given explicitly (``PretrainConfig`` fields, e.g. ``"split"``, ``"epochs"``).
    resume, overwrite, say
        As :func:`pretrain` takes them.

    Returns
    -------
    dict
        :func:`pretrain`'s result.

    Raises
    ------
    ConfigError
        Settings :class:`PretrainConfig` or :func:`check_pretrain_options` refuse, or that do not continue the run
        in ``out_dir`` when resuming.
    FileNotFoundError
        ``resume`` without a checkpoint in ``out_dir``.
    """
    check_pretrain_options(None, resume=resume, overwrite=overwrite)
    if resume:  # the run's settings; only what is given again changes
        changes = {k: v for k, v in options.items() if k in set(given) or k in RUN_LOCAL}
        changes.update({k: options[k] for k in ("optim", "model_kwargs") if options.get(k)})
        cfg = resume_config(out_dir, **changes)
    else:
        cfg = PretrainConfig(**options)
    check_pretrain_options(cfg, resume=resume, overwrite=overwrite, given=given)
    return pretrain(stores, out_dir, cfg, resume=resume, overwrite=overwrite, say=say)


def pretrain_or_resume(stores, out_dir: str | Path, cfg: PretrainConfig, *, overwrite: bool = False) -> dict[str, Any]:
    """:func:`pretrain`, picking up a run already in ``out_dir`` when it is the same run (same model, data,
    batch size and seed: then it continues, or returns at once when it is complete); ``overwrite`` starts
    again. A different run there raises :class:`ConfigError` naming the difference."""
    out = Path(out_dir)
    if overwrite or not (out / "last.pt").exists():
        return pretrain(stores, out, cfg, overwrite=overwrite)
    try:
        return pretrain(stores, out, cfg, resume=True)
    except ConfigError as exc:
        raise ConfigError(
            f"{out} holds another pretraining run ({exc}); pass overwrite=True to start it again, or choose another "
            "output folder"
        ) from None


def _pretrain(
    stores,
    out: Path,
    cfg: PretrainConfig,
    info: dist.DistInfo,
    resume: bool,
    overwrite: bool,
    final: Path | None = None,
    say: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Pretrain into ``out`` (``final``: the folder the run ends up in, when ``out`` is a staging sibling)."""
    seed_everything(cfg.seed + info.rank)
    ckpt_path = out / "last.pt"
    if not resume and not overwrite:
        refuse_run_folder(out, "pretraining run")  # a dead run's metrics.jsonl too: two runs never share a log
    selected = select_layouts(
        stores if isinstance(stores, (list, tuple)) else [stores],
        split=cfg.split,
        subjects=cfg.subjects,
        max_windows=cfg.max_windows,
        seed=cfg.seed,
    )
    if len(selected) > 1 and cfg.model != "cbramod":
        raise ConfigError(
            f"model={cfg.model!r}: the stores have {len(selected)} different sample layouts; only cbramod pretrains "
            "on several channel sets (one batch from one layout at a time)"
        )
    parts = []  # per layout: (train, held-out, phrase)
    holdouts: list[Holdout] = []
    objective = get_objective(cfg.model)
    for ds_sel, _ in selected:
        if objective.masked is not None:  # every masked-reconstruction objective is read on held-out data
            h = split_heldout(ds_sel, cfg.val_fraction, cfg.seed, subjects=cfg.heldout_subjects)
        else:
            h = Holdout(ds_sel, None, f"nothing (the {cfg.model} model has no masked reconstruction to score)")
        holdouts.append(h)
        parts.append((h.train, h.held, h.phrase))
    warn_shared_recordings([st for ds_sel, _ in selected for st in ds_sel.stores])
    used = "; ".join(u for _, u in selected)
    held = parts[0][2] if len(parts) == 1 else "; ".join(f"{layout_name(t)}: {h}" for t, _, h in parts)
    ds = parts[0][0]  # the first layout: the model's build, the recorded store attributes
    if info.is_main:
        logger.info("pretraining on %s; held out: %s", used, held)
        if say is not None:
            aside = objective.masked is not None and (cfg.val_fraction > 0 or bool(cfg.heldout_subjects))
            say(f"pretraining on {used}" + (" (the held-out samples below are set aside from it)" if aside else ""))
    sizes = []
    for train, _, _ in parts:
        bs = cfg.batch_size
        if len(train) < bs * info.world_size:
            bs = len(train) // info.world_size
            if bs < 1:
                raise ConfigError(f"{len(train)} samples for {info.world_size} process(es): too few to train on")
            logger.warning(
                "batch size %d is larger than the %d samples of the store(s) (%d process(es)); using %d",
                cfg.batch_size,
                len(train),
                info.world_size,
                bs,
            )
        sizes.append(bs)
    batch_size = min(sizes)
    if info.world_size > 1 and info.is_main:
        line = (
            f"{info.world_size} processes ({'nccl' if info.device.type == 'cuda' else 'gloo'}): global batch {batch_size * info.world_size} "
            f"({batch_size} per process); each process reads its own contiguous part of every epoch's "
            f"{cfg.read_order} order (windows beyond a whole number of batches per process wait for another epoch)"
        )
        logger.info(line)
        if say is not None:
            say(line)
    if ds.stores[0].modality != objective.modality:
        raise ConfigError(f"model {cfg.model!r} trains on {objective.modality} stores; got {ds.stores[0].modality}")
    all_subjects = sorted({str(s) for train, _, _ in parts for s in train.meta("subject")})
    held_digest = sample_digest([h for _, h, _ in parts])
    state = None
    if resume:
        if not ckpt_path.exists():
            raise FileNotFoundError(f"resume=True: no checkpoint at {ckpt_path}")
        state = load_checkpoint(ckpt_path)
        check_pretrain_resume(
            state,
            ds,
            cfg,
            ckpt_path,
            objective,
            subjects=all_subjects,
            world_size=info.world_size,
            heldout_digest=held_digest,
        )
        model = objective.rebuild(state["model_config"])
        model.load_state_dict(state["state_dict"])
    else:
        kw = {**cfg.model_kwargs, **({"input_norm": cfg.normalize} if cfg.normalize != "none" else {})}
        model = objective.build(ds.attrs, ds.sample_shape, kw)
        if cfg.model == "cbramod" and ZERO_INIT_HEAD:
            model.zero_reconstruction_head()
    model.to(info.device)
    scales: dict[str, float] = {}
    trains: list[PatchDataset | ScaledDataset] = []
    vals: list[PatchDataset | ScaledDataset] = []
    for train, val, _ in parts:
        if cfg.normalize == "corpus":  # each corpus of the pool by its own training RMS; the model's scale stays 1
            sc = heldout_scales(train, val, own=cfg.heldout_own_scale)
            scales.update(sc)
            trains.append(ScaledDataset(train, sc))
            vals += [] if val is None else [ScaledDataset(val, sc)]
        else:
            trains.append(train)
            vals += [] if val is None else [val]
    choose_batch_dtype([t for t, _, _ in parts], objective, say=(say or True) if info.is_main else False)
    data: Any
    repeats = [layout_repeat(t, cfg.layout_repeats) for t, _, _ in parts]
    epoch_sets: list[Any] = [t if k == 1 else torch.utils.data.ConcatDataset([t] * k) for t, k in zip(trains, repeats)]
    if objective.pair is not None:
        data = objective.pair(ds, model, dict(cfg.model_kwargs))
    elif len(trains) == 1:
        data = epoch_sets[0]
    else:  # one named dataset per layout: the trainer interleaves their batches (bucketing by channel set)
        names = [layout_name(p[0]) for p in parts]
        data = dict(zip(names, epoch_sets))
        batch_size_of: dict[str, int] | int = dict(zip(names, sizes))
    gen = torch.Generator(device=info.device)

    def loss(module, b: Batch):
        # masks depend on (seed, rank, step) only, so a resumed job draws the same ones; the objective is
        # looked up at each step (tests replace its loss)
        gen.manual_seed(cfg.seed * 1_000_003 + info.rank * 7919 + b.step)
        return objective.loss(module, b.x, gen) if objective.pair is None else objective.loss(module, b.x, gen, b.y)

    validate = None
    if vals and objective.masked is not None:
        # one loader per layout, in order: the pooled figures and each layout's (``heldout_layouts``)
        loader = {
            layout_name(t): torch.utils.data.DataLoader(v, batch_size=batch_size, shuffle=False)
            for (t, _, _), v in zip([p for p in parts if p[1] is not None], vals)
        }
        masked = objective.masked
        fitted = fit_masked_baselines(unwrap(model), trains, seed=cfg.seed, batch_size=batch_size, predict=masked)
        apart = "; ".join(h.apart for h in holdouts if h.held is not None and h.apart)
        source = heldout_source_scoring(parts)
        rescore = None
        if isinstance(source, HeldoutSourceScoring):
            tagged = heldout_tagged(vals, parts, source)  # each item with its hemisphere: its source mesh
            loader = {
                k: torch.utils.data.DataLoader(v, batch_size=batch_size, shuffle=False) for k, v in zip(loader, tagged)
            }
            rescore = source.rescore

        def validate(module):  # the held-out masked loss beside its baselines
            if isinstance(source, HeldoutSourceScoring):
                source.kept = source.seen = 0.0
            res = heldout_masked_loss(
                unwrap(module),
                loader,
                seed=cfg.seed,
                device=info.device,
                baselines=fitted,
                predict=masked,
                rescore=rescore,
            )
            scoring = source.phrase() if isinstance(source, HeldoutSourceScoring) else source
            extra = {"heldout_scoring": scoring, "heldout_apart": apart, "heldout_fitted": fitted_record(fitted)}
            return {**res, **{k: v for k, v in extra.items() if v}}

    normalization = {"mode": cfg.normalize, **({"corpus_scales": scales} if scales else {})}
    every_store = [st for train, _, _ in parts for st in train.stores]
    kept = kept_summary(every_store)
    meta = {
        **data_record(ds),
        "normalize": normalization,
        "heldout": held,
        "kept": kept,
        "pretraining_sources": [src for train, _, _ in parts for src in used_sources(train)],
    }
    if len(parts) > 1:
        meta["stores"] = store_names(every_store)
        meta["subjects"] = all_subjects
        meta["layouts"] = [
            {
                "stores": store_names(t.stores),
                "ch_names": list(t.info.ch_names or []),
                "sample_shape": list(t.sample_shape),
                "windows": len(t),
                "repeats": k,
            }
            for (t, _, _), k in zip(parts, repeats)
        ]
    assert isinstance(cfg.optim, OptimConfig)  # PretrainConfig.__post_init__ made it one
    trainer = Trainer(
        model,
        data,
        loss,
        model_name=cfg.model,
        optim=cfg.optim,
        batch_size=batch_size if len(trains) == 1 or objective.pair is not None else batch_size_of,
        epochs=cfg.epochs,
        max_steps=cfg.max_steps,
        seed=cfg.seed,
        info=info,
        num_workers=cfg.num_workers,
        read_order=cfg.read_order,
        out=out,
        ckpt_every=cfg.ckpt_every,
        log_steps=True,
        checkpoint_extra=lambda: {
            "kind": "pretrain",
            "model": cfg.model,
            "model_config": model_config_dict(unwrap(model)),
            "train_config": asdict(cfg),
            "world_size": info.world_size,
            "heldout_digest": held_digest,
            **meta,
        },
        stage="pretrain",
        progress=cfg.progress,
        validate=validate,
    )
    if state is not None:
        trainer.resume(state)
        if trainer.step == trainer.total:
            logger.warning("%s: the run already completed its %d steps; nothing to do", ckpt_path, trainer.total)
    res = trainer.fit()
    if validate is not None and res.steps_run and trainer.step % max(trainer.per_epoch, 1):  # ended inside an epoch
        rec = {"epoch": round(trainer.step / trainer.per_epoch, 3), "at_step": trainer.step, **validate(model)}
        trainer.records.append(rec)
        trainer.save()  # the checkpoint's history holds it too (and a resumed run keeps it)
        if info.is_main:
            with (out / "metrics.jsonl").open("a") as fh:
                fh.write(json.dumps(rec) + "\n")
    heldout = heldout_history(trainer.records)
    history = res.losses
    k = max(1, len(history) // 10)
    result = {
        "checkpoint": str((final or out) / ckpt_path.name),
        "steps": res.step,
        "steps_run": res.steps_run,
        "loss_first": sum(history[:k]) / k,
        "loss_last": sum(history[-k:]) / k,
        "samples_per_s": res.samples_per_s,
        "batch_size": batch_size,
        "data": used,
        "subjects": all_subjects,
        **({"layouts": meta["layouts"]} if "layouts" in meta else {}),
        "normalize": normalization,
        "heldout": held,
        "holdout": [h.record() for h in holdouts if h.held is not None],
        "heldout_history": heldout,
        "verdict": masked_verdict(heldout[-1], normalize=cfg.normalize) if heldout else None,
        "kept": kept,
        "pretraining_sources": len(meta["pretraining_sources"]),
        "history": history,
    }
    if info.is_main:
        (out / SUMMARY).write_text(json.dumps({k: v for k, v in result.items() if k != "history"}, indent=2))
    return result
