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
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Collection, Sequence

import numpy as np
import torch

from neurokit._utils.errors import ConfigError
from neurokit._utils.locks import output_lock
from neurokit._utils.staging import StagedOutput, recover_run_folder, refuse_run_folder, run_files
from neurokit.data.corpus import ScaledDataset, heldout_scales
from neurokit.data.dataset import PatchDataset
from neurokit.data.provenance import kept_summary, used_sources
from neurokit.data.selection import (
    Chained,
    holdout_split,
    layout_name,
    layout_repeat,
    select_layouts,
    short_ids,
)
from neurokit.store.shards import store_corpus
from neurokit.models.checkpoint import (
    check_channels,
    check_resume_data,
    load_checkpoint,
)
from neurokit.models.config import model_config_dict
from neurokit.models.input_norm import check_mode
from neurokit.models.registry import surface_recipe
from neurokit.pipelines.outputs import record_run
from neurokit.training import distributed as dist
from neurokit.training.masked_baselines import MaskedBaselines, SurfaceBaselines
from neurokit.training.objectives import get_objective, heldout_masked_loss
from neurokit.training.optim import OptimConfig, seed_everything, unwrap
from neurokit.training.trainer import Batch, Trainer

logger = logging.getLogger("neurokit")


#: the default of ``PretrainConfig.normalize`` for CBraMod, chosen by the measurements in docs/guide/pretraining.md
DEFAULT_NORMALIZE = "corpus"
#: start CBraMod's reconstruction head at zero (:meth:`~neurokit.models.cbramod.CBraMod.zero_reconstruction_head`):
#: the loss then starts at predict-zero instead of ~7× it (measured in docs/guide/pretraining.md)
ZERO_INIT_HEAD = True

#: ``model_kwargs`` entries that only some model families take: key → (CLI flag, families)
FAMILY_OPTIONS: dict[str, tuple[str, tuple[str, ...]]] = {
    "size": ("--model-size", ("sit", "clip")),
    "mask_ratio": ("--mask-ratio", ("sit",)),
    "recipe": ("--recipe", ("sit",)),
    "stimuli": ("--stimuli", ("clip",)),
    "lag_s": ("--lag", ("clip",)),
    "segments": ("--segments", ("clip",)),
    "fmri_init": ("--fmri-init", ("clip",)),
    "train_fmri_encoder": ("--train-fmri-encoder", ("clip",)),
}


@dataclass
class PretrainConfig:
    """Pretraining settings (defaults: CBraMod's, except the epoch count).

    ``max_steps`` caps the total number of optimiser steps (the cosine schedule spans
    ``min(max_steps, epochs × batches per epoch)``). ``split``: which split of the store's data card to
    train on (``"train"``, the default, keeps the validation and test subjects unseen; ``"all"`` or
    ``None`` uses every subject; stores whose card defines no splits always use every subject);
    ``subjects`` overrides it. ``ckpt_every``: also write ``last.pt`` every this many steps. ``optim``: an
    :class:`OptimConfig`, or a dict of the fields to set; the fields not set take the model family's reference values
    (:attr:`Objective.optim <neurokit.training.objectives.Objective>`: ``sit`` AdamW 3e-4, weight decay
    0.01, constant learning rate, no clipping; ``cbramod`` the :class:`OptimConfig` defaults). Setting
    ``min_lr`` without ``schedule`` asks for the cosine schedule.

    ``normalize`` (CBraMod): amplitude normalisation of the input, ``"none"``, ``"window"``, ``"channel"`` or
    ``"corpus"`` (:mod:`neurokit.models.input_norm`; default :data:`DEFAULT_NORMALIZE`); recorded in the model's
    configuration, so fine-tuning and evaluation of a model started from the checkpoint normalise the same way (``"corpus"``: by the RMS of the
    downstream store's training windows). ``val_fraction``: the share of the selected windows held out to log,
    at each epoch, the masked reconstruction loss beside the predict-zero and predict-mean baselines (whole
    subjects of each corpus when it has at least :data:`~neurokit.data.selection.MIN_HOLDOUT_SUBJECTS`, else a
    seeded share of its windows; 0: none). ``heldout_subjects``: hold out exactly these subjects instead (they must be among the selected
    ones; ``val_fraction`` is then unused), e.g. the card's validation and test subjects with ``split="all"``.
    ``max_windows``: at most this many of the selected windows of each sample layout (drawn at random, seeded),
    before the held-out ones are set apart. Stores of different layouts (channel sets, patch counts) train side by
    side, one layout per batch (:func:`~neurokit.data.selection.select_layouts`). ``layout_repeats``: store file
    name (or path) → how many times each epoch goes through the training windows of that store's layout (default once), so a small multi-channel
    layout pooled with a large single-channel one gets enough steps (the quick start's EEGMMIDB store:
    docs/guide/pretraining.md).

    Raises
    ------
    ConfigError
        Out-of-range values, an unknown ``model`` or ``normalize``, ``normalize`` for another family than
        CBraMod, a ``model_kwargs`` entry of another family
        (:data:`FAMILY_OPTIONS`: ``size`` for SiT/CLIP, ``mask_ratio`` for SiT, ``stimuli``/``lag_s``/``segments``
        for CLIP), ``min_lr`` with the constant schedule.
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
    split: str | None = "train"
    progress: bool = True
    normalize: str | None = None  # None: DEFAULT_NORMALIZE for cbramod, "none" for the other families
    val_fraction: float = 0.1
    heldout_subjects: list[str] | None = None
    max_windows: int | None = None
    layout_repeats: dict[str, int] | None = None
    heldout_own_scale: bool = False

    def __post_init__(self) -> None:
        if self.epochs < 1 or self.batch_size < 1:
            bad = "epochs" if self.epochs < 1 else "batch_size"
            raise ConfigError(f"{bad}={getattr(self, bad)}: must be >= 1")
        if self.max_steps is not None and self.max_steps < 1:
            raise ConfigError(f"max_steps={self.max_steps}: must be >= 1 when given")
        if self.num_workers < 0:
            raise ConfigError(f"num_workers must be >= 0 (got {self.num_workers})")
        get_objective(self.model)  # ConfigError naming the known families
        for key, (flag, families) in FAMILY_OPTIONS.items():
            if key in (self.model_kwargs or {}) and self.model not in families:
                raise ConfigError(
                    f"{flag}: an option of the {'/'.join(families)} model(s); --model {self.model} has no such setting"
                )
        if "recipe" in (self.model_kwargs or {}):
            surface_recipe(self.model_kwargs["recipe"])  # refused before anything is written
        if not isinstance(self.optim, OptimConfig):
            given = optim_given(self.optim)
            try:
                self.optim = OptimConfig(**{**get_objective(self.model).optim, **given})
            except TypeError as exc:
                raise ConfigError(f"optim: {exc}") from exc
        if self.split not in (None, "all", "train", "val", "test"):
            raise ConfigError(f"split={self.split!r}; allowed: train, val, test, all")
        if self.max_windows is not None and self.max_windows < 2:
            raise ConfigError(f"max_windows={self.max_windows}: must be >= 2 when given")
        if self.ckpt_every < 0:
            raise ConfigError(f"ckpt_every must be >= 0 (got {self.ckpt_every})")
        if self.normalize is None:
            self.normalize = DEFAULT_NORMALIZE if self.model == "cbramod" else "none"
        check_mode(self.normalize, "normalize")
        if self.model != "cbramod" and self.normalize != "none":
            raise ConfigError(
                f"--normalize {self.normalize}: amplitude normalisation is for --model cbramod (EEG); "
                f"--model {self.model} takes --normalize none"
            )
        if self.heldout_own_scale and self.normalize != "corpus":
            raise ConfigError(
                f"--heldout-own-scale: held-out stores are scaled only under --normalize corpus (--model cbramod); "
                f"this run normalises with {self.normalize!r}"
            )
        if not 0.0 <= self.val_fraction < 1.0:
            raise ConfigError(f"--val-fraction {self.val_fraction}: must be in [0, 1)")
        for name, k in (self.layout_repeats or {}).items():
            if not isinstance(k, int) or k < 1:
                raise ConfigError(f"layout_repeats[{name!r}]={k!r}: must be an integer >= 1")


def optim_given(optim: dict | None) -> dict:
    """The optimiser fields the user gave, checked: ``min_lr`` with the constant schedule is refused (it has no
    final learning rate), ``min_lr`` without a schedule asks for the cosine one.

    Raises
    ------
    ConfigError
        ``min_lr`` with ``schedule="constant"``.
    """
    given = dict(optim or {})
    if "min_lr" in given and given.get("schedule") == "constant":
        raise ConfigError(
            "--min-lr: the constant schedule keeps --lr throughout and has no final learning rate; drop --min-lr "
            "or use --schedule cosine"
        )
    if "min_lr" in given and "schedule" not in given:
        given["schedule"] = "cosine"
    return given


def check_pretrain_options(
    cfg: PretrainConfig | None, *, resume: bool = False, overwrite: bool = False, given: Collection[str] = ()
) -> None:
    """Refuse option combinations a pretraining run would otherwise ignore (those of one family are refused
    by :class:`PretrainConfig` itself).

    ``cfg``: ``None`` checks the flags only (before a resumed run's configuration is read). ``given``: the CLI
    flags the user gave explicitly (``"--split"``…).

    Raises
    ------
    ConfigError
        ``resume`` with ``overwrite``; ``--split`` with ``subjects`` (the subjects replace the split).
    """
    if resume and overwrite:
        raise ConfigError("--resume continues the run in OUT and --overwrite replaces it: give one of them")
    if cfg is not None and cfg.subjects is not None and "--split" in set(given):
        raise ConfigError("--split: --subjects chooses the samples instead of a split; give one of them")


def pretrain(
    stores: Sequence[str | Path] | str | Path,
    out_dir: str | Path,
    cfg: PretrainConfig | None = None,
    *,
    resume: bool = False,
    overwrite: bool = False,
) -> dict[str, Any]:
    """Pretrain ``cfg.model`` on the samples of ``stores`` and write checkpoints to ``out_dir``.

    ``resume``: continue from ``out_dir/last.pt`` with the checkpoint's model configuration (the store
    must have the same channels and sample shape, and batch size and seed must match; a longer
    ``epochs``/``max_steps`` extends the run and re-spans the cosine schedule). ``overwrite``: start again in an ``out_dir`` that
    already holds a run; the new run is written beside it (``.NAME.new``) and replaces it only once finished,
    so a stopped overwrite leaves the earlier run whole; only the earlier run's own files are replaced, the
    user's other entries in ``out_dir`` stay (:class:`~neurokit._utils.staging.StagedOutput`). Without either, an ``out_dir`` holding any run file
    (``metrics.jsonl``, ``last.pt``, a summary or config: :func:`~neurokit._utils.staging.run_files`)
    raises :class:`FileExistsError`, so two runs never mix their logs; a second process pretraining into
    ``out_dir`` meanwhile is refused (:class:`~neurokit._utils.locks.OutputLockedError`, naming this one).

    Returns
    -------
    dict with ``checkpoint`` (path of ``last.pt``), ``steps``, ``loss_first`` and ``loss_last`` (mean
    loss over the first and last 10 % of steps), ``samples_per_s``, ``normalize`` (``{"mode"[, "corpus_scales"]}``),
    ``heldout`` (what was held out), ``heldout_history`` (per epoch: ``heldout_loss``, ``heldout_zero``,
    ``heldout_mean``, mean squared errors on the held-out windows' masked values:
    :func:`~neurokit.training.objectives.heldout_masked_loss`), ``kept`` (windows the stores' preparation kept and
    dropped: :func:`~neurokit.data.provenance.kept_summary`), ``pretraining_sources`` (how many source recordings the
    checkpoint records, path + SHA-256) and ``history`` (per-step losses). The checkpoint records the same, with the
    list of sources.
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
            res = _pretrain(stores, stage.work, cfg, info, resume, overwrite, final=out)
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
    (options given again change them), and must repeat the model, its configuration, ``--normalize``,
    ``batch_size``, ``seed``, the data's modality, grid, mesh, channels, sample shape, recipe and subjects."""
    return {
        "settings": {**asdict(cfg), "stores": stores, "out_dir": out_dir, "resume": resume, "overwrite": overwrite},
        "resume": {
            "checked": [
                "model", "model_kwargs (the model's configuration)", "normalize", "batch_size", "seed",
                "layout_repeats",
                "store modality, grid, mesh, channels, sample shape, recipe", "subjects",
            ],
            "may_change": ["epochs", "max_steps (the schedule spans the new length)", "optim", "device",
                           "num_workers", "ckpt_every", "progress"],
        },
    }  # fmt: skip


def resume_config(out_dir: str | Path, **given: Any) -> PretrainConfig:
    """The configuration of the run in ``out_dir/last.pt`` with only the options in ``given`` changed
    (``optim`` and ``model_kwargs`` entries are merged key by key), so a resume keeps every setting the
    user does not give again.

    Raises
    ------
    FileNotFoundError
        No checkpoint in ``out_dir``.
    """
    path = Path(out_dir) / "last.pt"
    if not path.exists():
        raise FileNotFoundError(f"--resume: no checkpoint at {path}")
    ck = load_checkpoint(path)
    old = dict(ck.get("train_config") or {})
    # runs from before these settings: the input as stored, nothing held out
    old.setdefault("normalize", (ck.get("model_config") or {}).get("input_norm", "none"))
    old.setdefault("val_fraction", 0.0)
    if "model_kwargs" in given:
        given["model_kwargs"] = {**(old.get("model_kwargs") or {}), **given["model_kwargs"]}
    # the run's optimiser (a whole OptimConfig, min_lr included whatever its schedule), with what is given again
    g_optim = optim_given(given.pop("optim", None))
    if old.get("optim") or g_optim:
        try:
            given["optim"] = OptimConfig(**{**dict(old.get("optim") or {}), **g_optim})
        except TypeError as exc:
            raise ConfigError(f"{path}: its optimiser settings cannot be read ({exc}); start a new run") from None
    known = set(PretrainConfig.__dataclass_fields__)
    return PretrainConfig(**{k: v for k, v in {**old, **given}.items() if k in known})


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
            f"{out} holds another pretraining run ({exc}); pass overwrite=True (CLI: --overwrite) "
            "to start it again, or choose another output folder"
        ) from None


def _pretrain(
    stores,
    out: Path,
    cfg: PretrainConfig,
    info: dist.DistInfo,
    resume: bool,
    overwrite: bool,
    final: Path | None = None,
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
            f"--model {cfg.model}: the stores have {len(selected)} different sample layouts; only cbramod pretrains "
            "on several channel sets (one batch from one layout at a time)"
        )
    parts = []  # per layout: (train, held-out, phrase)
    objective = get_objective(cfg.model)
    for ds_sel, _ in selected:
        if objective.masked is not None:  # every masked-reconstruction objective is read on held-out data
            parts.append(holdout_split(ds_sel, cfg.val_fraction, cfg.seed, subjects=cfg.heldout_subjects))
        else:
            parts.append((ds_sel, None, f"nothing (--model {cfg.model} has no masked reconstruction to score)"))
    warn_shared_recordings([st for ds_sel, _ in selected for st in ds_sel.stores])
    used = "; ".join(u for _, u in selected)
    held = parts[0][2] if len(parts) == 1 else "; ".join(f"{layout_name(t)}: {h}" for t, _, h in parts)
    ds = parts[0][0]  # the first layout: the model's build, the recorded store attributes
    if info.is_main:
        logger.info("pretraining on %s; held out: %s", used, held)
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
    if ds.stores[0].modality != objective.modality:
        raise ConfigError(f"model {cfg.model!r} trains on {objective.modality} stores; got {ds.stores[0].modality}")
    all_subjects = sorted({str(s) for train, _, _ in parts for s in train.meta("subject")})
    state = None
    if resume:
        if not ckpt_path.exists():
            raise FileNotFoundError(f"--resume: no checkpoint at {ckpt_path}")
        state = load_checkpoint(ckpt_path)
        _check_resume(state, ds, cfg, ckpt_path, objective, subjects=all_subjects)
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
        fitted = fit_masked_baselines(unwrap(model), trains, seed=cfg.seed, batch_size=batch_size)
        masked = objective.masked

        def validate(module):  # the held-out masked loss beside its baselines
            return heldout_masked_loss(
                unwrap(module), loader, seed=cfg.seed, device=info.device, baselines=fitted, predict=masked
            )

    normalization = {"mode": cfg.normalize, **({"corpus_scales": scales} if scales else {})}
    every_store = [st for train, _, _ in parts for st in train.stores]
    kept = kept_summary(every_store)
    meta = {
        **_provenance(ds, cfg),
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
        out=out,
        ckpt_every=cfg.ckpt_every,
        log_steps=True,
        checkpoint_extra=lambda: {
            "kind": "pretrain",
            "model": cfg.model,
            "model_config": model_config_dict(unwrap(model)),
            "train_config": asdict(cfg),
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
    heldout = [{k: r[k] for k in HELDOUT_KEYS if k in r} for r in trainer.records if "heldout_loss" in r]
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
        "heldout_history": heldout,
        "kept": kept,
        "pretraining_sources": len(meta["pretraining_sources"]),
        "history": history,
    }
    if info.is_main:
        (out / SUMMARY).write_text(json.dumps({k: v for k, v in result.items() if k != "history"}, indent=2))
    return result


#: what each entry of a run's ``heldout_history`` keeps of the held-out evaluation (the model's loss, four baselines)
HELDOUT_KEYS = (
    "epoch",
    "heldout_loss",
    "heldout_zero",
    "heldout_mean",
    "heldout_spatial",
    "heldout_temporal",
    "heldout_spatial_zero",
    "heldout_temporal_zero",
    "heldout_neighbours",
    "heldout_frame",
    "heldout_neighbours_zero",
    "heldout_frame_zero",
    "heldout_n",
    "heldout_layouts",
)
#: at most this many training windows fit the spatial and temporal baselines
BASELINE_WINDOWS = 256


#: the baselines of :func:`heldout_line`, in its order: key suffix → name
BASELINE_NAMES = {
    "zero": "predict-zero",
    "mean": "predict-mean",
    "spatial": "spatial ridge",
    "temporal": "temporal ridge",
    "neighbours": "neighbouring patches' mean",
    "frame": "nearest visible frame",
}


def heldout_line(h: dict[str, Any]) -> str:
    """One entry of ``heldout_history`` in words: the held-out masked loss and each baseline, with their ratios to
    predict-zero (a fitted baseline that applied to only some layouts, to predict-zero on those: ``heldout_K_zero``).

    Examples
    --------
    >>> heldout_line({"epoch": 3, "heldout_loss": 0.8, "heldout_zero": 1.0, "heldout_mean": 1.6, "heldout_spatial": 0.75})
    'held-out masked loss 0.8 (0.800× predict-zero) vs predict-zero 1 · predict-mean 1.6 (1.600×) · spatial ridge 0.75 (0.750×) (epoch 3)'
    """
    zero = h["heldout_zero"]

    def ratio(k: str) -> str:
        own = h.get(f"heldout_{k}_zero")  # a baseline that covers only some values: its ratio is to their power
        if own is None:
            return f" ({h['heldout_' + k] / zero:.3f}×)"
        return f" ({h['heldout_' + k] / own:.3f}× the predict-zero {own:.4g} of the values it covers)"

    parts = [
        f"{name} {h['heldout_' + k]:.4g}" + ("" if k == "zero" else ratio(k))
        for k, name in BASELINE_NAMES.items()
        if h.get("heldout_" + k) is not None
    ]
    return (
        f"held-out masked loss {h['heldout_loss']:.4g} ({h['heldout_loss'] / zero:.3f}× predict-zero) vs "
        + " · ".join(parts)
        + (f" (epoch {h['epoch']})" if "epoch" in h else "")
    )


def heldout_lines(h: dict[str, Any]) -> list[str]:
    """:func:`heldout_line` of the pooled figures, then, when the run had several layouts (``heldout_layouts``), one
    line per layout (its name, then its own loss beside its own predict-zero and baselines).

    Examples
    --------
    >>> h = {"epoch": 1, "heldout_loss": 0.9, "heldout_zero": 1.0, "heldout_mean": 1.2,
    ...      "heldout_layouts": {"1ch:a.h5": {"heldout_loss": 1.0, "heldout_zero": 1.0, "heldout_mean": 1.1},
    ...                          "21ch:b.h5": {"heldout_loss": 0.6, "heldout_zero": 1.0, "heldout_mean": 1.5}}}
    >>> print("\\n".join(heldout_lines(h)))
    held-out masked loss 0.9 (0.900× predict-zero) vs predict-zero 1 · predict-mean 1.2 (1.200×) (epoch 1)
      1ch:a.h5: held-out masked loss 1 (1.000× predict-zero) vs predict-zero 1 · predict-mean 1.1 (1.100×)
      21ch:b.h5: held-out masked loss 0.6 (0.600× predict-zero) vs predict-zero 1 · predict-mean 1.5 (1.500×)
    """
    return [heldout_line(h)] + [f"  {name}: {heldout_line(v)}" for name, v in (h.get("heldout_layouts") or {}).items()]


@torch.no_grad()
def fit_masked_baselines(
    model, trains: Sequence, *, seed: int = 0, batch_size: int = 32
) -> MaskedBaselines | SurfaceBaselines | None:
    """The baselines a held-out masked loss is read against beside predict-zero and predict-mean.

    EEG: the spatial and temporal ridges (:class:`~neurokit.training.masked_baselines.MaskedBaselines`) fitted on
    at most :data:`BASELINE_WINDOWS` windows of each training dataset of ``trains`` (one per layout; drawn at
    random, seeded), normalised as ``model`` reconstructs them (:meth:`~neurokit.models.cbramod.CBraMod.normalize_input`).
    Surface: the visible neighbouring patches' mean and the nearest visible frame
    (:class:`~neurokit.training.masked_baselines.SurfaceBaselines`; nothing to fit), ``None`` for samples on no
    icosahedral patch grid."""
    first = getattr(trains[0], "ds", trains[0]) if trains else None  # a ScaledDataset's own dataset
    if first is not None and first.stores[0].modality == "surface":
        return SurfaceBaselines.for_shape(first.sample_shape)
    rng = np.random.default_rng(seed)
    loaders = []
    for train in trains:
        pick = np.sort(rng.choice(len(train), min(len(train), BASELINE_WINDOWS), replace=False))
        sub = torch.utils.data.Subset(train, pick.tolist())
        loaders.append(torch.utils.data.DataLoader(sub, batch_size=batch_size, shuffle=False))
    norm = getattr(model, "normalize_input", lambda x: x)
    dev = next(model.parameters()).device
    return MaskedBaselines.fit((norm(x.to(dev)) for x, *_ in Chained(loaders)), seed=seed + 1)


def _check_resume(
    state: dict, ds: PatchDataset, cfg: PretrainConfig, path: Path, objective, subjects: list[str] | None = None
) -> None:
    """A resumed job must train the same model on data of the same layout."""
    from neurokit._utils.errors import ChannelMismatchError

    if state.get("model") != cfg.model:
        raise ConfigError(f"{path}: checkpoint trains {state.get('model')!r}, not {cfg.model!r}")
    was = (state.get("model_config") or {}).get("input_norm", "none") if cfg.model == "cbramod" else "none"
    if was != cfg.normalize:
        raise ConfigError(
            f"{path}: the run normalises its input with --normalize {was}, not {cfg.normalize}; "
            "resume with the same --normalize or start a new run"
        )
    conflicts = {}
    if cfg.model_kwargs:  # the options given must describe the checkpoint's model
        kw = {**cfg.model_kwargs, **({"input_norm": cfg.normalize} if cfg.model == "cbramod" else {})}
        given = _flat(objective.build(ds.attrs, ds.sample_shape, kw).config.to_dict())
        was = _flat(state["model_config"])
        conflicts = {k: (was.get(k), v) for k, v in given.items() if was.get(k) != v}
    if conflicts:
        shown = "; ".join(f"{k}: {a!r} in the checkpoint, {b!r} given" for k, (a, b) in conflicts.items())
        flags = [f for key, (f, _) in FAMILY_OPTIONS.items() if key in (cfg.model_kwargs or {})]
        raise ConfigError(
            f"{path}: resume keeps the checkpoint's model; the options given ({', '.join(flags) or 'model options'}) "
            f"make another: {shown}. Drop them or start a new run"
        )
    old = state.get("train_config") or {}
    for k in ("batch_size", "seed", "layout_repeats"):
        if k in old and old[k] != getattr(cfg, k):
            raise ConfigError(
                f"{path}: resume needs the run's {k}={old[k]!r} (given {getattr(cfg, k)!r}); "
                "the sampling order depends on it"
            )
    for k in ("epochs", "max_steps"):
        if k in old and old[k] != getattr(cfg, k):
            logger.warning(
                "%s: %s changed from %r to %r: the cosine schedule now spans the new length",
                path,
                k,
                old[k],
                getattr(cfg, k),
            )
    old_attrs = state.get("store_attrs") or {}
    for k in ("modality", "grid", "mesh"):
        if k in old_attrs and old_attrs[k] != ds.info.get(k):
            raise ConfigError(
                f"{path}: the checkpoint was trained on {k}={old_attrs[k]!r}; the store has {ds.info.get(k)!r}"
            )
    check_channels(old_attrs.get("ch_names"), ds.info.ch_names, store=ds.stores[0].path, checkpoint=path)
    if list(state.get("sample_shape", ds.sample_shape)) != list(ds.sample_shape):
        raise ChannelMismatchError(
            f"{path}: sample shape {state['sample_shape']} differs from the store's {list(ds.sample_shape)}"
        )
    check_resume_data(state, ds.attrs, what=f"{path}: resume on {ds.stores[0].path}")  # refused without a recipe
    now = subjects if subjects is not None else sorted({str(s) for s in ds.meta("subject")})
    if state.get("subjects") is not None and list(state["subjects"]) != now:
        raise ConfigError(
            f"{path}: the run trained on subjects {short_ids(state['subjects'])}; the store and options "
            f"now select {short_ids(now)}. Resume with the same store, --split and --subjects"
        )


def warn_shared_recordings(stores) -> list[str]:
    """Warn when two of the pretraining ``stores`` were made from the same recording (by SHA-256 of the source
    file, each store's ``sources``): what one store holds out, the other may train on. Returns the warnings."""
    first: dict[str, str] = {}
    said = []
    for st in stores:
        for src in st.info.sources:
            sha = src.get("sha256") if isinstance(src, dict) else None
            if not sha:
                continue
            name = store_corpus(st)  # a shard set's shards are one store
            where = first.setdefault(sha, name)
            if where != name:
                said.append(
                    f"{Path(str(src.get('path', '?'))).name} is in both {where} and {name}: what one store holds "
                    "out may be trained on through the other; pretrain on one of them"
                )
    said = list(dict.fromkeys(said))
    for w in said:
        logger.warning("%s", w)
    return said


def store_names(stores) -> list[str]:
    """The stores a run read, for its record: each store's path, a shard set once by its folder."""
    return list(dict.fromkeys(store_corpus(st) for st in stores))


def _flat(d: dict, prefix: str = "") -> dict[str, Any]:
    """Nested configuration dicts as ``{"encoder.depth": 12, …}`` (what differs is named key by key)."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def _provenance(ds: PatchDataset, cfg: PretrainConfig) -> dict[str, Any]:
    a = ds.attrs
    return {
        "card": a.get("card"),
        "card_body": a.get("card_body"),
        "recipe": a.get("recipe"),
        "store_attrs": {
            k: a.get(k)
            for k in (
                "modality",
                "ch_names",
                "sfreq",
                "units",
                "task",
                "label_names",
                "grid",
                "mesh",
                "tr",
                "hemisphere",
            )
            if k in a
        },
        "stores": store_names(ds.stores),
        "subjects": sorted({str(s) for s in ds.meta("subject")}),
        "sample_shape": list(ds.sample_shape),
    }
