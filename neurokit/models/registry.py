"""Model families by name: how each is built for a store's samples, rebuilt from a checkpoint's
configuration, which sub-module is the backbone fine-tuning starts from, and its default head.

:func:`create_model` and :func:`from_pretrained` are the entry points (as ``timm.create_model``); the
families are listed explicitly in :data:`MODELS` (no registration by import side effects).
"""
from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import torch.nn as nn

from neurokit._utils.errors import ConfigError
from neurokit.data.pairs import open_stimuli
from neurokit.models.cbramod import CBraMod
from neurokit.models.checkpoint import load_checkpoint
from neurokit.models.clip import CLIPConfig, SurfaceCLIP
from neurokit.models.hub import fetch_weights
from neurokit.models.sit import sit_config
from neurokit.models.vsmae import VSMAE, VSMAEConfig
from neurokit.models.weights import load_weights

logger = logging.getLogger("neurokit")


@dataclass(frozen=True)
class ModelSpec:
    """One model family.

    Attributes
    ----------
    name : str
        The name given to ``neuro pretrain --model`` / :func:`create_model`.
    modality : str
        Store modality its inputs come from (``"eeg"``, ``"surface"``).
    build : callable ``(store_attrs: dict, sample_shape: tuple, model_kwargs: dict) -> nn.Module``
        The module sized for a store's samples, with a ``config`` whose ``to_dict()`` rebuilds it.
    rebuild : callable ``(model_config: dict) -> nn.Module``
        The same module from a checkpoint's ``model_config``.
    backbone : callable ``(module) -> nn.Module``
        The encoder fine-tuning starts from; it offers ``forward_features(x)``.
    default_head : str
        Fine-tuning head when none is asked for (``"all_patch_reps"`` for CBraMod as in the paper;
        ``"avgpool"`` where flattening every token would make a huge layer).
    title : str
        The family's name as printed in progress bars, tables and reports.
    """

    name: str
    modality: str
    build: Callable[[dict, tuple, dict], nn.Module]
    rebuild: Callable[[dict], nn.Module]
    backbone: Callable[[nn.Module], nn.Module]
    default_head: str = "avgpool"
    title: str = ""


# --------------------------------------------------------------------------- CBraMod
def build_cbramod(store_attrs: dict, sample_shape: tuple, kwargs: dict) -> nn.Module:
    if len(sample_shape) != 3 or sample_shape[-1] != 200:
        raise ValueError(f"CBraMod needs EEG stores of (C, N, 200) samples; this store has {sample_shape}")
    return CBraMod(**kwargs)


def rebuild_cbramod(cfg: dict) -> nn.Module:
    return CBraMod(**cfg)



# --------------------------------------------------------------------------- SiT (vsMAE pretraining)
_DECODER_KEYS = {"mask_ratio", "decoder_dim", "decoder_depth", "decoder_heads", "decoder_dim_head", "decoder_mlp_dim"}


def build_vsmae(store_attrs: dict, sample_shape: tuple, kwargs: dict) -> VSMAE:
    """vsMAE sized for a surface store's samples ``(T, N, V)``.

    ``kwargs``: ``size`` (``tiny``/``small``/``base``, default tiny), ``mask_ratio`` and the decoder
    fields of :class:`~neurokit.models.vsmae.VSMAEConfig`, ``n_layers`` (alias of ``depth``) and any
    :class:`~neurokit.models.sit.SiTConfig` field.

    Raises
    ------
    ConfigError
        The store is not a surface store of ``(T, N, V)`` samples, or an unknown option.
    """
    if store_attrs.get("modality") != "surface" or len(sample_shape) != 3:
        raise ConfigError(
            f"SiT pretrains on surface stores of (T, n_patches, V) samples; this store is "
            f"{store_attrs.get('modality')!r} with samples {tuple(sample_shape)}"
        )
    kw = dict(kwargs)
    size = kw.pop("size", "tiny")
    if "n_layers" in kw:
        kw["depth"] = kw.pop("n_layers")
    mae = {k: kw.pop(k) for k in list(kw) if k in _DECODER_KEYS}
    T, N, V = (int(s) for s in sample_shape)
    enc = sit_config(size, n_chans=T, n_patches=N, vertices_per_patch=V, **kw)
    return VSMAE(VSMAEConfig(encoder=enc, **mae))


def rebuild_vsmae(model_config: dict) -> VSMAE:
    """The module from a checkpoint's ``model_config`` (:meth:`VSMAEConfig.to_dict`)."""
    return VSMAE(VSMAEConfig.from_dict(dict(model_config)))



# --------------------------------------------------------------------------- tri-modal CLIP
def encoder_facts(stimuli: Sequence) -> dict:
    """What the model must know of the stimulus encoders (checked again at retrieval)."""
    a = stimuli[0].attrs
    strip = lambda e: {k: e.get(k) for k in ("name", "pretrained", "weights_sha256", "dim")} if isinstance(e, dict) else {}  # noqa: E731
    return {"video_encoder": strip(a.get("video_encoder")), "audio_encoder": strip(a.get("audio_encoder")),
            "window_s": float(stimuli[0].window_s)}


def build_clip(store_attrs: dict, sample_shape: tuple, kwargs: dict) -> SurfaceCLIP:
    """:class:`SurfaceCLIP` for a surface store's ``(T, N, V)`` samples and the stimulus stores in
    ``kwargs["stimuli"]``.

    ``kwargs``: ``stimuli`` (paths, required), ``segments`` (data choice, not stored in the config),
    ``size`` (SiT preset, default tiny), ``n_layers``, any :class:`~neurokit.models.sit.SiTConfig` field
    (``dim``, ``heads``, ``pool``…), and :class:`~neurokit.models.clip.CLIPConfig` fields (``embed_dim``,
    ``dropout``, ``lag_s``, ``weights``, ``log_scale``).
    """
    if store_attrs.get("modality") != "surface" or len(sample_shape) != 3:
        raise ConfigError(
            f"the clip model trains on surface stores of (T, n_patches, V) samples; this store is "
            f"{store_attrs.get('modality')!r} with samples {tuple(sample_shape)}"
        )
    kw = dict(kwargs)
    stimuli = open_stimuli(kw.pop("stimuli", None))
    kw.pop("segments", None)
    size = kw.pop("size", "tiny")
    if "n_layers" in kw:
        kw["depth"] = kw.pop("n_layers")
    clip_keys = {"embed_dim", "dropout", "lag_s", "weights", "log_scale"}
    ckw = {k: kw.pop(k) for k in list(kw) if k in clip_keys}
    T, N, V = (int(s) for s in sample_shape)
    enc = sit_config(size, n_chans=T, n_patches=N, vertices_per_patch=V, **kw)
    return SurfaceCLIP(CLIPConfig(fmri=enc, video_dim=stimuli[0].video.shape[1], audio_dim=stimuli[0].audio.shape[1],
                                  stimulus=encoder_facts(stimuli), **ckw))


def rebuild_clip(model_config: dict) -> SurfaceCLIP:
    return SurfaceCLIP(CLIPConfig.from_dict(dict(model_config)))


def check_encoders(cfg: CLIPConfig, stimuli: Sequence) -> None:
    """The stimulus stores must come from the encoders the model was trained with."""
    want = cfg.stimulus or {}
    for st in stimuli:
        got = encoder_facts([st])
        for k in ("video_encoder", "audio_encoder"):
            w, g = (want.get(k) or {}), got[k]
            if w and (w.get("weights_sha256") != g.get("weights_sha256") or w.get("dim") != g.get("dim")):
                raise ConfigError(
                    f"{st.path}: its {k.split('_')[0]} embeddings come from {g.get('name')} (weights "
                    f"{str(g.get('weights_sha256'))[:12]}…), but the model was trained on {w.get('name')} "
                    f"({str(w.get('weights_sha256'))[:12]}…); embed the movie with the same encoder and weights"
                )



def _encoder(m: nn.Module) -> nn.Module:
    return getattr(m, "module", m).encoder


#: every model family, by name
MODELS: dict[str, ModelSpec] = {
    "cbramod": ModelSpec("cbramod", "eeg", build_cbramod, rebuild_cbramod, lambda m: m, "all_patch_reps", "CBraMod"),
    "sit": ModelSpec("sit", "surface", build_vsmae, rebuild_vsmae, _encoder, "avgpool", "SiT"),
    "clip": ModelSpec("clip", "surface", build_clip, rebuild_clip, _encoder, "avgpool", "CLIP (SiT)"),
}


def get_model_spec(name: str) -> ModelSpec:
    """The :class:`ModelSpec` of ``name``.

    Raises
    ------
    ConfigError
        Unknown name (the message lists the known ones).
    """
    if name not in MODELS:
        raise ConfigError(f"unknown model {name!r}; known: {', '.join(sorted(MODELS))}")
    return MODELS[name]


def list_models() -> list[str]:
    """Names of the model families, sorted."""
    return sorted(MODELS)


def build_backbone(init: str | Path | None, *, model: str, model_kwargs: dict | None = None, store_attrs: dict,
                   sample_shape: Sequence[int], allow_partial: bool = False) -> tuple[nn.Module, dict]:
    """The backbone fine-tuning starts from: a new ``model`` sized for the store's samples (``init=None``), or
    the module of a pretraining checkpoint, a released state dict or a Hub name (``hub:ORG/NAME[@REV]``).

    Parameters
    ----------
    init : path or str or None
        Weights to start from; the checkpoint's own model family wins over ``model``.
    model : str
        Model family (:data:`MODELS`) when ``init`` names none.
    model_kwargs : dict, optional
        Configuration fields that override the checkpoint's (or size the new model).
    store_attrs : dict
        The store's metadata (``ch_names`` are compared with the pretraining's).
    sample_shape : sequence of int
        One sample's shape, e.g. ``(C, N, 200)``.
    allow_partial : bool
        Accept weights that cover only part of the backbone.

    Returns
    -------
    (backbone, info) : the module offering ``forward_features`` and a dict with ``init``, ``model``,
    ``model_config``, ``weights`` (coverage and provenance), ``weights_line`` and ``pretrain_recipe``.

    Raises
    ------
    ConfigError
        ``init`` is a fine-tuned checkpoint.
    WeightsError
        The weights do not fit the model (missing tensors without ``allow_partial``, shape mismatches).
    """
    model_kwargs = dict(model_kwargs or {})
    objective = get_model_spec(model)
    info: dict[str, Any] = {"init": str(init) if init else None}
    if init is None:
        module = objective.build(store_attrs, tuple(sample_shape), dict(model_kwargs))
        return objective.backbone(module), {**info, "model_config": module.config.to_dict()}
    path, weights_info = fetch_weights(str(init))  # hub:ORG/NAME[@REV] or a path; name, revision, commit, sha256
    info["weights"] = weights_info
    ck = load_checkpoint(path)
    if ck.get("kind") == "finetune":
        raise ConfigError(f"{init}: is a fine-tuned checkpoint; start from a pretrain checkpoint or a state_dict")
    model_name = ck.get("model", model)
    if model_name != model:
        objective = get_model_spec(model_name)
    mcfg = dict(ck.get("model_config") or {})
    if ck.get("format") == "state_dict" and model_name == "cbramod" and "n_layers" not in mcfg:
        mcfg["n_layers"] = cbramod_layers(ck["state_dict"]) or 12
    mcfg.update(model_kwargs)
    module = objective.rebuild(mcfg)
    report = load_weights(module, ck["state_dict"], allow_partial=allow_partial, name=str(init))
    (logger.info if report.complete else logger.warning)("%s", report.line())
    pre_ch = (ck.get("store_attrs") or {}).get("ch_names")
    now_ch = store_attrs.get("ch_names")
    if pre_ch and now_ch and list(pre_ch) != list(now_ch):
        logger.warning("%s was pretrained on %d channels, the store has %d (%d in common); the backbone is "
                       "montage-independent, fine-tuning adapts it", init, len(pre_ch), len(now_ch),
                       len(set(pre_ch) & set(now_ch)))
    # coverage (loaded/total, missing, unexpected) and where the file came from (name, revision, commit, SHA-256)
    info.update(model=model_name, model_config=module.config.to_dict(), weights={**report.to_dict(), **weights_info},
                weights_line=report.line(), pretrain_recipe=ck.get("recipe"))
    return objective.backbone(module), info


def cbramod_layers(sd: dict) -> int | None:
    """Layer count of a CBraMod state dict (``encoder.layers.{i}.…``; wrapper prefixes allowed)."""
    idx = [int(m.group(1)) for k in sd for m in [re.search(r"encoder\.layers\.(\d+)\.", k)] if m]
    return max(idx) + 1 if idx else None
