"""Resuming a pretraining run: the settings saved in its ``last.pt`` with what is given again, and the checks
that the resumed run trains the same model on data of the same kind, in the same order.

A resumed run keeps every setting of the checkpoint that is not given again; it must repeat the model family and
configuration, the input normalisation, ``batch_size``, ``seed`` and ``layout_repeats`` (the sampling order
depends on them), the data's modality, grid, mesh, channels, sample shape and recipe, and the subjects trained
on. A longer ``epochs`` or ``max_steps`` extends it (the cosine schedule then spans the new length).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from neurokit._utils.errors import ChannelMismatchError, ConfigError
from neurokit.io.headers import short_list
from neurokit.models.checkpoint import check_channels, check_resume_data, load_checkpoint
from neurokit.training.optim import OptimConfig, optim_given

logger = logging.getLogger("neurokit")

#: the run settings a resumed run must repeat: the sampling order depends on them
REPEATED = ("batch_size", "seed", "layout_repeats")
#: the run settings a resumed run may change, said in a warning (the cosine schedule spans the new length)
EXTENDED = ("epochs", "max_steps")


def _setting(name: str, value: Any) -> str:
    """``name=value`` as a message names a setting (a list as its items joined by commas)."""
    if isinstance(value, (list, tuple)):
        value = ",".join(str(v) for v in value)
    return f"{name}={value!r}"


def _flat(d: dict, prefix: str = "") -> dict[str, Any]:
    """Nested configuration dicts as ``{"encoder.depth": 12, …}`` (what differs is named key by key)."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def resumed_settings(path: str | Path, **given: Any) -> dict[str, Any]:
    """The settings of the pretraining run whose checkpoint is ``path``, with those in ``given`` changed.

    ``optim`` and ``model_kwargs`` entries are merged key by key, so a resume keeps every setting the user does not
    give again. Runs saved before ``normalize`` and ``val_fraction`` existed take the input as stored and held
    nothing out.

    Parameters
    ----------
    path : str or Path
        The run's ``last.pt``.
    **given
        ``PretrainConfig`` fields to change; ``optim`` a dict of :class:`~neurokit.training.optim.OptimConfig`
        fields, ``model_kwargs`` a dict of model options.

    Returns
    -------
    dict
        Field → value: the saved ``train_config`` with ``given`` over it; ``optim`` an
        :class:`~neurokit.training.optim.OptimConfig` (the run's whole optimiser, ``min_lr`` included whatever its
        schedule) when the run or ``given`` has one.

    Raises
    ------
    FileNotFoundError
        No checkpoint at ``path``.
    ConfigError
        The saved optimiser settings cannot be read, or ``min_lr`` given with the constant schedule.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"resume=True: no checkpoint at {path}")
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
    return {**old, **given}


def check_pretrain_resume(
    state: dict[str, Any],
    ds,
    cfg,
    path: str | Path,
    objective,
    subjects: list[str] | None = None,
    *,
    world_size: int = 1,
    heldout_digest: str | None = None,
) -> None:
    """Refuse to resume the pretraining run of checkpoint ``state`` with another model or on other data.

    Parameters
    ----------
    state : dict
        The loaded checkpoint (:func:`~neurokit.models.checkpoint.load_checkpoint`).
    ds : PatchDataset
        The (first layout's) training samples of the resumed run.
    cfg : PretrainConfig
        The resumed run's settings.
    path : str or Path
        The checkpoint's path, for the messages.
    objective : Objective
        The model family's pretraining objective (:func:`~neurokit.training.objectives.get_objective`), which
        builds the model the options given describe.
    subjects : list of str, optional
        The subjects the resumed run trains on (default: those of ``ds``).
    world_size : int
        The resumed run's number of processes (a step reads one batch per process).
    heldout_digest : str, optional
        :func:`~neurokit.data.selection.sample_digest` of the resumed run's held-out samples.

    Raises
    ------
    ConfigError
        Another model family, normalisation, model configuration (an entry of ``cfg.model_kwargs`` that makes
        another model), ``batch_size``, ``seed`` or ``layout_repeats``; another modality, grid or mesh; other
        subjects; a checkpoint that records no recipe, or another card or recipe
        (:func:`~neurokit.models.checkpoint.check_resume_data`); other held-out samples; another number of
        processes.
    ChannelMismatchError
        Other channels or another sample shape.
    """
    if state.get("model") != cfg.model:
        raise ConfigError(f"{path}: checkpoint trains {state.get('model')!r}, not {cfg.model!r}")
    was = (state.get("model_config") or {}).get("input_norm", "none") if cfg.model == "cbramod" else "none"
    if was != cfg.normalize:
        raise ConfigError(
            f"{path}: the run normalises its input with normalize={was!r}, not {cfg.normalize!r}; "
            f"resume with normalize={was!r} or start a new run"
        )
    conflicts = {}
    if cfg.model_kwargs:  # the options given must describe the checkpoint's model
        kw = {**cfg.model_kwargs, **({"input_norm": cfg.normalize} if cfg.model == "cbramod" else {})}
        given = _flat(objective.build(ds.attrs, ds.sample_shape, kw).config.to_dict())
        was_cfg = _flat(state["model_config"])
        conflicts = {k: (was_cfg.get(k), v) for k, v in given.items() if was_cfg.get(k) != v}
    if conflicts:
        shown = "; ".join(f"{k}: {a!r} in the checkpoint, {b!r} given" for k, (a, b) in conflicts.items())
        options = ", ".join(_setting(k, v) for k, v in cfg.model_kwargs.items())
        raise ConfigError(
            f"{path}: resume keeps the checkpoint's model; the options given ({options}) make another: {shown}. "
            "Drop them or start a new run"
        )
    old = state.get("train_config") or {}
    for k in REPEATED:
        if k in old and old[k] != getattr(cfg, k):
            raise ConfigError(
                f"{path}: resume needs the run's {k}={old[k]!r} (given {getattr(cfg, k)!r}); "
                "the sampling order depends on it"
            )
    for k in EXTENDED:
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
            f"{path}: the run trained on subjects {short_list(state['subjects'], 8)}; the stores and settings "
            f"now select {short_list(now, 8)}. Resume with the same stores, split and subjects"
        )
    if state.get("heldout_digest") not in (None, heldout_digest):
        raise ConfigError(
            f"{path}: the held-out samples differ from the run's (other val_fraction=, heldout_subjects=, "
            "split= or stores): a resumed run would score samples it trained on as held out. Resume with the "
            "run's hold-out settings, or start a new run"
        )
    was_world = int(state.get("world_size") or 1)
    if was_world != world_size:  # the position in the epoch counts steps of world_size batches
        raise ConfigError(
            f"{path}: written by a run of {was_world} process(es); this one has {world_size}. A step "
            f"reads one batch per process, so the position in the epoch means other windows here: resume with "
            f"{was_world} process(es) (as many torchrun processes as before), or start a new run"
        )
