"""Model families by name: how each is built for a store's samples, rebuilt from a checkpoint's
configuration, which sub-module is the backbone fine-tuning starts from, and its default head.

:func:`create_model` and :func:`from_pretrained` are the entry points (as ``timm.create_model``); the
families are listed explicitly in :data:`MODELS` (no registration by import side effects).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Callable, Sequence, cast

import torch.nn as nn

from neurokit._utils.errors import ConfigError
from neurokit.data.pairs import open_stimuli
from neurokit.models.cbramod import CBraMod, CBraModConfig
from neurokit.models.checkpoint import CBRAMOD_RELEASE_FACTS, check_data_facts, data_facts
from neurokit.models.clip import CLIPConfig, SurfaceCLIP
from neurokit.models.config import config_from_dict, model_config_dict
from neurokit.models.docs import fill_doc
from neurokit.models.contracts import InputContract, get_contract
from neurokit.models.eegnet import EEGNet, EEGNetConfig
from neurokit.models.foundation import (
    FOUNDATION_MODELS,
    FoundationBackbone,
    build_foundation,
    load_foundation_weights,
    make_foundation,
    rebuild_foundation,
)
from neurokit.models.pretrained import (
    FAMILY_TITLES,
    cbramod_layers,
    expect_family,
    load_into,
    place,
    read_pretrained,
    unknown_options,
    with_info,
)
from neurokit.models.sit import SiTConfig, sit_config
from neurokit.models.vsmae import VSMAE, VSMAEConfig
from neurokit.models.weights import load_weights

logger = logging.getLogger("neurokit")


#: configuration fields that change a backbone's shape: given with an ``init`` checkpoint they must match it
ARCHITECTURE_KEYS = (
    "n_layers",
    "depth",
    "d_model",
    "dim",
    "n_heads",
    "heads",
    "dim_feedforward",
    "mlp_dim",
    "dim_head",
    "patch_size",
)


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
    create : callable ``(kwargs: dict) -> nn.Module``
        The module from :func:`create_model`'s keyword arguments (no store needed).
    options : tuple of str
        The keyword arguments ``create`` accepts.
    contract : InputContract or None
        What the model expects of its input (rate, window, patch, units, channels, source:
        :data:`~neurokit.models.contracts.CONTRACTS`); ``None`` for neurokit's own families, which take the store as
        it is.
    """

    name: str
    modality: str
    build: Callable[[dict, tuple, dict], nn.Module]
    rebuild: Callable[[dict], nn.Module]
    backbone: Callable[[nn.Module], nn.Module]
    default_head: str = "avgpool"
    title: str = ""
    create: Callable[[dict], nn.Module] | None = None
    options: tuple[str, ...] = ()
    contract: InputContract | None = None


# --------------------------------------------------------------------------- CBraMod
CBRAMOD_OPTIONS = tuple(f.name for f in fields(CBraModConfig))


def make_cbramod(kwargs: dict) -> CBraMod:
    """:class:`CBraMod` from :func:`create_model` options (the :class:`CBraModConfig` fields).

    Parameters
    ----------
    kwargs : dict
        :class:`~neurokit.models.cbramod.CBraModConfig` fields.

    Returns
    -------
    CBraMod

    Raises
    ------
    ConfigError
        An unknown option (the message lists the allowed ones).

    Examples
    --------
    >>> make_cbramod({"n_layers": 1}).config.n_layers
    1
    """
    unknown_options(kwargs, CBRAMOD_OPTIONS, "cbramod")
    return CBraMod(**kwargs)


@fill_doc
def build_cbramod(store_attrs: dict, sample_shape: tuple, kwargs: dict) -> nn.Module:
    """:class:`~neurokit.models.cbramod.CBraMod` for an EEG store's ``(C, N, 200)`` samples (the ``build`` of the
    ``"cbramod"`` family; CBraMod takes any channel and patch count).

    Parameters
    ----------
    %(store_attrs)s
        Not read (CBraMod does not depend on them).
    %(sample_shape)s
    %(create_kwargs)s

    Returns
    -------
    CBraMod

    Raises
    ------
    ValueError
        Samples are not ``(C, N, 200)``.
    ConfigError
        An unknown option.

    Examples
    --------
    >>> build_cbramod({"modality": "eeg"}, (19, 30, 200), {"n_layers": 1}).config.n_layers
    1
    """
    if len(sample_shape) != 3 or sample_shape[-1] != 200:
        raise ValueError(f"CBraMod needs EEG stores of (C, N, 200) samples; this store has {sample_shape}")
    return make_cbramod(kwargs)


@fill_doc
def rebuild_cbramod(cfg: dict) -> nn.Module:
    """:class:`~neurokit.models.cbramod.CBraMod` from a checkpoint's ``model_config`` (the ``"cbramod"`` family's
    ``rebuild``).

    Parameters
    ----------
    %(model_config)s

    Returns
    -------
    CBraMod

    Examples
    --------
    >>> rebuild_cbramod({"n_layers": 1, "dropout": 0.0}).config.dropout
    0.0
    """
    return CBraMod(**cfg)


# --------------------------------------------------------------------------- SiT (vsMAE pretraining)
_DECODER_KEYS = {
    "mask_ratio", "decoder_dim", "decoder_depth", "decoder_heads", "decoder_dim_head", "decoder_mlp_dim", "score",
    "zero_output",
}  # fmt: skip
SIT_FIELDS = tuple(f.name for f in fields(SiTConfig))
SIT_OPTIONS = ("size", "n_layers", "recipe", *SIT_FIELDS, *sorted(_DECODER_KEYS))
#: what ``neuro pretrain --model sit`` builds unless told otherwise (``recipe="reference"``: the metrics-lab vsMAE's
#: 1-D index positions, no attention bias, default output init): measured in docs/guide/surface.md
SURFACE_RECIPES: dict[str, dict] = {
    "neurokit": {"pos_embedding": "sphere", "attn_bias": "distance", "zero_output": True, "score": "hidden"},
    "reference": {"pos_embedding": "sincos", "attn_bias": "none", "zero_output": False, "score": "hidden"},
}


def surface_recipe(name: str) -> dict:
    """The SiT/vsMAE settings of recipe ``name`` (:data:`SURFACE_RECIPES`).

    Parameters
    ----------
    name : {"neurokit", "reference"}
        ``"neurokit"``: sphere positions, distance attention bias, zero-initialised output; ``"reference"``:
        the metrics-lab vsMAE's 1-D index positions, no attention bias, default output init.

    Returns
    -------
    dict
        :class:`~neurokit.models.sit.SiTConfig` / :class:`~neurokit.models.vsmae.VSMAEConfig` fields.

    Raises
    ------
    ConfigError
        An unknown recipe (the message names the allowed ones and the CLI flag).

    Examples
    --------
    >>> surface_recipe("reference")["pos_embedding"]
    'sincos'
    """
    if name not in SURFACE_RECIPES:
        raise ConfigError(f"SiT recipe={name!r}: allowed: {', '.join(SURFACE_RECIPES)}")
    return SURFACE_RECIPES[name]


def make_vsmae(kwargs: dict) -> VSMAE:
    """:class:`VSMAE` (the ``"sit"`` family's pretraining module) from :func:`create_model` options.

    ``kwargs``: ``size`` (``tiny``/``small``/``base``, default tiny), ``n_layers`` (alias of ``depth``), any
    :class:`~neurokit.models.sit.SiTConfig` field (``n_chans``, ``n_patches``, ``vertices_per_patch``…) and
    ``mask_ratio`` and the decoder fields of :class:`~neurokit.models.vsmae.VSMAEConfig`.

    Parameters
    ----------
    kwargs : dict
        The options above.

    Returns
    -------
    VSMAE

    Raises
    ------
    ConfigError
        An unknown option or size (the message lists the allowed ones).

    Examples
    --------
    >>> m = make_vsmae({"size": "tiny", "n_layers": 1, "n_chans": 2, "n_patches": 20, "vertices_per_patch": 45})
    >>> m.encoder.config.depth, m.config.mask_ratio
    (1, 0.75)
    """
    kw = dict(kwargs)
    unknown_options(kw, SIT_OPTIONS, "sit")
    if "recipe" in kw:  # the recipe's settings where the options give none
        kw = {**surface_recipe(kw.pop("recipe")), **kw}
    size = kw.pop("size", "tiny")
    if "n_layers" in kw:
        kw["depth"] = kw.pop("n_layers")
    mae = {k: kw.pop(k) for k in list(kw) if k in _DECODER_KEYS}
    return VSMAE(VSMAEConfig(encoder=sit_config(size, **kw), **mae))


@fill_doc
def build_vsmae(store_attrs: dict, sample_shape: tuple, kwargs: dict) -> VSMAE:
    """vsMAE sized for a surface store's samples ``(T, N, V)`` (the ``"sit"`` family's ``build``; recipe
    ``"neurokit"`` unless ``kwargs`` name another).

    Parameters
    ----------
    %(store_attrs)s
    %(sample_shape)s
    kwargs : dict
        ``size`` (``tiny``/``small``/``base``, default tiny), ``recipe``, ``mask_ratio`` and the decoder
        fields of :class:`~neurokit.models.vsmae.VSMAEConfig`, ``n_layers`` (alias of ``depth``) and any
        :class:`~neurokit.models.sit.SiTConfig` field.

    Returns
    -------
    VSMAE

    Raises
    ------
    ConfigError
        The store is not a surface store of ``(T, N, V)`` samples, or an unknown option.

    Examples
    --------
    >>> m = build_vsmae({"modality": "surface"}, (2, 20, 45), {"n_layers": 1})
    >>> m.encoder.config.n_chans, m.encoder.config.pos_embedding
    (2, 'sphere')
    """
    if store_attrs.get("modality") != "surface" or len(sample_shape) != 3:
        raise ConfigError(
            f"SiT pretrains on surface stores of (T, n_patches, V) samples; this store is "
            f"{store_attrs.get('modality')!r} with samples {tuple(sample_shape)}"
        )
    T, N, V = (int(s) for s in sample_shape)
    return make_vsmae({"recipe": "neurokit", **kwargs, "n_chans": T, "n_patches": N, "vertices_per_patch": V})


@fill_doc
def rebuild_vsmae(model_config: dict) -> VSMAE:
    """The vsMAE from a checkpoint's ``model_config`` (:meth:`VSMAEConfig.to_dict
    <neurokit.models.vsmae.VSMAEConfig.to_dict>`; the ``"sit"`` family's ``rebuild``).

    Parameters
    ----------
    %(model_config)s

    Returns
    -------
    VSMAE

    Raises
    ------
    ConfigError
        Unknown keys.

    Examples
    --------
    >>> m = make_vsmae({"n_layers": 1, "n_chans": 2, "n_patches": 20, "vertices_per_patch": 45})
    >>> rebuild_vsmae(m.config.to_dict()).config == m.config
    True
    """
    return VSMAE(VSMAEConfig.from_dict(dict(model_config)))


# --------------------------------------------------------------------------- EEGNet (a compact supervised baseline)
EEGNET_OPTIONS = tuple(f.name for f in fields(EEGNetConfig))


def make_eegnet(kwargs: dict) -> EEGNet:
    """:class:`~neurokit.models.eegnet.EEGNet` from :func:`create_model` options.

    Parameters
    ----------
    kwargs : dict
        :class:`~neurokit.models.eegnet.EEGNetConfig` fields: ``n_chans``, ``n_times``, ``n_outputs``,
        ``dropout``…

    Returns
    -------
    EEGNet

    Raises
    ------
    ConfigError
        An unknown option (the message lists the allowed ones) or sizes out of range.

    Examples
    --------
    >>> make_eegnet({"n_chans": 3, "n_times": 800}).config.F2
    16
    """
    unknown_options(kwargs, EEGNET_OPTIONS, "eegnet")
    return EEGNet(EEGNetConfig(**kwargs))


@fill_doc
def build_eegnet(store_attrs: dict, sample_shape: tuple, kwargs: dict) -> EEGNet:
    """EEGNet (features only: fine-tuning adds the ``flatten`` head, its classifier) for an EEG store's
    ``(C, N, P)`` samples read as ``C`` channels × ``N·P`` samples (the ``"eegnet"`` family's ``build``).

    Parameters
    ----------
    %(store_attrs)s
    %(sample_shape)s
    kwargs : dict
        :class:`~neurokit.models.eegnet.EEGNetConfig` fields other than the sizes, which the samples give.

    Returns
    -------
    EEGNet

    Raises
    ------
    ConfigError
        Not an EEG store of ``(C, N, P)`` samples (EEGNet is an EEG model), or an unknown option.

    Examples
    --------
    >>> build_eegnet({"modality": "eeg"}, (3, 4, 200), {}).config.n_times
    800
    """
    if (store_attrs.get("modality") or "eeg") != "eeg" or len(sample_shape) != 3:
        raise ConfigError(
            f"EEGNet is an EEG model (channels × samples); this store is {store_attrs.get('modality')!r} with "
            f"samples {tuple(sample_shape)}"
        )
    c, n, p = (int(s) for s in sample_shape)
    return make_eegnet({**kwargs, "n_chans": c, "n_times": n * p, "n_outputs": None})


@fill_doc
def rebuild_eegnet(model_config: dict) -> EEGNet:
    """:class:`~neurokit.models.eegnet.EEGNet` from a checkpoint's ``model_config`` (the ``"eegnet"`` family's
    ``rebuild``).

    Parameters
    ----------
    %(model_config)s

    Returns
    -------
    EEGNet

    Raises
    ------
    ConfigError
        Unknown keys or sizes out of range.

    Examples
    --------
    >>> rebuild_eegnet({"n_chans": 3, "n_times": 800}).config.n_chans
    3
    """
    return EEGNet(config_from_dict(EEGNetConfig, dict(model_config), "EEGNet"))


# --------------------------------------------------------------------------- tri-modal CLIP
def encoder_facts(stimuli: Sequence) -> dict:
    """What the model must know of the stimulus encoders (checked again at retrieval, :func:`check_encoders`).

    Parameters
    ----------
    stimuli : sequence of StimulusStore
        Opened stimulus stores (:func:`~neurokit.data.pairs.open_stimuli`); the first one's attributes are read.

    Returns
    -------
    dict
        ``video_encoder`` and ``audio_encoder`` (``name``, ``pretrained``, ``weights_sha256``, ``dim``) and
        ``window_s`` (the stimulus window, seconds).

    Examples
    --------
    >>> encoder_facts(open_stimuli(["stimuli/movie1.h5"]))["window_s"]  # doctest: +SKIP
    3.0
    """
    a = stimuli[0].attrs

    def strip(e) -> dict:
        return {k: e.get(k) for k in ("name", "pretrained", "weights_sha256", "dim")} if isinstance(e, dict) else {}

    return {
        "video_encoder": strip(a.get("video_encoder")),
        "audio_encoder": strip(a.get("audio_encoder")),
        "window_s": float(stimuli[0].window_s),
    }


@fill_doc
def build_clip(store_attrs: dict, sample_shape: tuple, kwargs: dict) -> SurfaceCLIP:
    """:class:`SurfaceCLIP` for a surface store's ``(T, N, V)`` samples and the stimulus stores in
    ``kwargs["stimuli"]`` (the ``"clip"`` family's ``build``).

    Parameters
    ----------
    %(store_attrs)s
    %(sample_shape)s
    kwargs : dict
        ``stimuli`` (paths, required), ``segments`` (data choice, not stored in the config), ``size`` (SiT
        preset, default tiny), ``n_layers``, any :class:`~neurokit.models.sit.SiTConfig` field (``dim``,
        ``heads``, ``pool``…), and :class:`~neurokit.models.clip.CLIPConfig` fields (``embed_dim``,
        ``dropout``, ``lag_s``, ``weights``, ``log_scale``).

    Returns
    -------
    SurfaceCLIP
        With ``video_dim``, ``audio_dim`` and ``stimulus`` taken from the stimulus stores.

    Raises
    ------
    ConfigError
        Not a surface store of ``(T, N, V)`` samples, or an unknown option.

    Examples
    --------
    >>> build_clip({"modality": "surface"}, (3, 320, 153), {"stimuli": ["movie.h5"]})  # doctest: +SKIP
    """
    if store_attrs.get("modality") != "surface" or len(sample_shape) != 3:
        raise ConfigError(
            f"the clip model trains on surface stores of (T, n_patches, V) samples; this store is "
            f"{store_attrs.get('modality')!r} with samples {tuple(sample_shape)}"
        )
    kw = dict(kwargs)
    stimuli = open_stimuli(kw.pop("stimuli", None))
    kw.pop("segments", None)
    T, N, V = (int(s) for s in sample_shape)
    return make_clip(
        {
            **kw,
            "n_chans": T,
            "n_patches": N,
            "vertices_per_patch": V,
            "video_dim": stimuli[0].video.shape[1],
            "audio_dim": stimuli[0].audio.shape[1],
            "stimulus": encoder_facts(stimuli),
        }
    )


CLIP_KEYS = (
    "video_dim",
    "audio_dim",
    "embed_dim",
    "dropout",
    "lag_s",
    "weights",
    "log_scale",
    "stimulus",
    "fmri_pool",
    "train_fmri_encoder",
    "fmri_init",
)
CLIP_OPTIONS = ("size", "n_layers", *SIT_FIELDS, *CLIP_KEYS)


def make_clip(kwargs: dict) -> SurfaceCLIP:
    """:class:`SurfaceCLIP` from :func:`create_model` options (no stimulus store needed).

    ``kwargs``: ``size`` (SiT preset, default tiny), ``n_layers``, any :class:`~neurokit.models.sit.SiTConfig`
    field (default input: the paper's ``n_chans=3``, ``n_patches=1280``, ``vertices_per_patch=45``), and the
    :class:`~neurokit.models.clip.CLIPConfig` fields ``video_dim``, ``audio_dim`` (default 768), ``embed_dim``,
    ``dropout`` (of the projection heads), ``lag_s``, ``weights``, ``log_scale``, ``stimulus``, ``fmri_pool``,
    ``train_fmri_encoder`` and ``fmri_init``: a checkpoint (``neuro pretrain --model sit``, a SiT, or a clip
    run) whose SiT encoder starts the fMRI encoder — its architecture fields are taken unless given here (the
    release starts its frozen SiT from vsMAE weights, ``init_weights: ssl_svmae``).

    Parameters
    ----------
    kwargs : dict
        The options above.

    Returns
    -------
    SurfaceCLIP

    Raises
    ------
    ConfigError
        An unknown option or size.

    Examples
    --------
    >>> make_clip({"n_layers": 1, "n_patches": 20, "video_dim": 8}).config.fmri.n_chans
    3
    """
    kw = dict(kwargs)
    unknown_options(kw, CLIP_OPTIONS, "clip")
    size = kw.pop("size", "tiny")
    if "n_layers" in kw:
        kw["depth"] = kw.pop("n_layers")
    ckw = {k: kw.pop(k) for k in list(kw) if k in CLIP_KEYS}
    init = ckw.get("fmri_init")
    pre = None
    if init:
        from neurokit.models.sit import SiT

        pre = SiT.from_pretrained(init)
        recorded = {k: v for k, v in pre.config.to_dict().items() if k != "n_outputs"}
        enc = SiTConfig(**{**recorded, **kw})
        ckw["fmri_init"] = str(init)
    else:
        enc = sit_config(size, **{"n_chans": 3, "n_patches": 1280, "vertices_per_patch": 45, **kw})
    model = SurfaceCLIP(CLIPConfig(fmri=enc, **ckw))
    if pre is not None:
        state = {k: v for k, v in pre.state_dict().items() if not k.startswith("head.")}
        missing, _ = model.encoder.load_encoder_state(state)
        if [k for k in missing if k != "cls_token"]:
            raise ConfigError(f"fmri_init {init}: its SiT encoder lacks {missing} of the clip model's SiT")
    return model


@fill_doc
def rebuild_clip(model_config: dict) -> SurfaceCLIP:
    """:class:`SurfaceCLIP` from a checkpoint's ``model_config`` (:meth:`CLIPConfig.from_dict
    <neurokit.models.clip.CLIPConfig.from_dict>`: older records get their legacy defaults; the ``"clip"``
    family's ``rebuild``).

    Parameters
    ----------
    %(model_config)s

    Returns
    -------
    SurfaceCLIP

    Raises
    ------
    ConfigError
        Unknown keys or values out of range.

    Examples
    --------
    >>> m = make_clip({"n_layers": 1, "n_patches": 20, "video_dim": 8})
    >>> rebuild_clip(m.config.to_dict()).config.video_dim
    8
    """
    return SurfaceCLIP(CLIPConfig.from_dict(dict(model_config)))


def check_encoders(cfg: CLIPConfig, stimuli: Sequence) -> None:
    """The stimulus stores must come from the encoders the model was trained with (same weights and width).

    Parameters
    ----------
    cfg : CLIPConfig
        The model's config (its ``stimulus`` record; an empty record checks nothing).
    stimuli : sequence of StimulusStore
        The opened stimulus stores.

    Raises
    ------
    ConfigError
        A store's video or audio embeddings come from other encoder weights or have another width.

    Examples
    --------
    >>> check_encoders(CLIPConfig(), [])  # no store: nothing to check
    """
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
    return cast(nn.Module, getattr(m, "module", m).encoder)  # vsMAE's and CLIP's encoder submodule


def _create(spec: ModelSpec, kwargs: dict) -> nn.Module:
    """``spec.create(kwargs)``; a family registered without ``create`` is only sized from a store."""
    if spec.create is None:
        raise ConfigError(
            f"model {spec.name!r} is sized from a store's samples only (neuro pretrain / finetune); "
            "it cannot be made by create_model or from a bare state dict"
        )
    return spec.create(kwargs)


#: every model family, by name
MODELS: dict[str, ModelSpec] = {
    "cbramod": ModelSpec(
        "cbramod",
        "eeg",
        build_cbramod,
        rebuild_cbramod,
        lambda m: m,
        "all_patch_reps",
        FAMILY_TITLES["cbramod"],
        make_cbramod,
        CBRAMOD_OPTIONS,
    ),
    "sit": ModelSpec(
        "sit", "surface", build_vsmae, rebuild_vsmae, _encoder, "avgpool", FAMILY_TITLES["sit"], make_vsmae, SIT_OPTIONS
    ),
    "clip": ModelSpec(
        "clip", "surface", build_clip, rebuild_clip, _encoder, "avgpool", FAMILY_TITLES["clip"], make_clip, CLIP_OPTIONS
    ),
    # supervised only (no pretraining objective): the compact network a comparison trains beside the pretrained one
    "eegnet": ModelSpec(
        "eegnet",
        "eeg",
        build_eegnet,
        rebuild_eegnet,
        lambda m: m,
        "flatten",
        FAMILY_TITLES["eegnet"],
        make_eegnet,
        EEGNET_OPTIONS,
    ),
}


def _foundation_spec(name: str) -> ModelSpec:
    """The registry entry of a braindecode foundation model (:mod:`neurokit.models.foundation`)."""
    from neurokit.models.foundation import DATA_OPTIONS

    def build(attrs: dict, shape: tuple, kw: dict) -> nn.Module:
        return build_foundation(name, attrs, shape, kw)

    def create(kw: dict) -> nn.Module:
        return make_foundation(name, kw)

    return ModelSpec(
        name,
        "eeg",
        build,
        rebuild_foundation,
        lambda m: m,
        "avgpool",
        FAMILY_TITLES[name],
        create,
        DATA_OPTIONS,  # and braindecode's arguments, checked when the module is built (braindecode_options)
        get_contract(name),
    )


# the foundation models braindecode implements, each behind its input contract (neurokit.models.contracts)
MODELS.update({name: _foundation_spec(name) for name in FOUNDATION_MODELS})


def _adapted(module: nn.Module) -> dict:
    """``{"input_adaptation": …}`` for a foundation backbone (what was resampled, scaled, mapped, dropped), else {}."""
    if isinstance(module, FoundationBackbone):
        return {"input_adaptation": module.adaptation.to_dict()}
    return {}


@fill_doc
def get_model_spec(name: str) -> ModelSpec:
    """The :class:`ModelSpec` of a model family.

    Parameters
    ----------
    %(model_name)s

    Returns
    -------
    ModelSpec

    Raises
    ------
    ConfigError
        Unknown name (the message lists the known ones).

    Examples
    --------
    >>> get_model_spec("cbramod").default_head
    'all_patch_reps'
    """
    if name not in MODELS:
        raise ConfigError(f"unknown model {name!r}; known: {', '.join(sorted(MODELS))}")
    return MODELS[name]


def list_models() -> list[str]:
    """Names of the model families, sorted.

    Returns
    -------
    list of str
        The keys of :data:`MODELS`.

    Examples
    --------
    >>> list_models()
    ['biot', 'cbramod', 'clip', 'codebrain', 'eegnet', 'eegpt', 'labram', 'luna', 'reve', 'sit']
    """
    return sorted(MODELS)


@fill_doc
def build_backbone(
    init: str | Path | None,
    *,
    model: str,
    model_kwargs: dict | None = None,
    store_attrs: dict,
    sample_shape: Sequence[int],
    allow_partial: bool = False,
    allow_mismatch: Sequence[str] = (),
    store_name: str | Path | None = None,
    init_sha256: str | None = None,
) -> tuple[nn.Module, dict]:
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
    %(store_attrs)s
    %(sample_shape)s
    %(allow_partial)s
    allow_mismatch : sequence of str
        Facts of the data (:data:`~neurokit.models.checkpoint.DATA_FACTS`: ``sfreq``, ``patch``, ``units``) in
        which the store may differ from the checkpoint's pretraining data; any other difference is refused
        (:func:`~neurokit.models.checkpoint.check_data_facts`). A bare CBraMod state dict counts as pretrained
        on :data:`~neurokit.models.checkpoint.CBRAMOD_RELEASE_FACTS` (200 Hz, 200-sample patches, 100 µV).
    store_name : str or Path, optional
        The store, for messages.
    init_sha256 : str, optional
        The SHA-256 the weights file must have (a local file or Hub weights): another file is refused
        (:class:`~neurokit.models.hub.HubError`). CLI: ``--init-sha256``.

    Returns
    -------
    (backbone, info) : the module offering ``forward_features`` and a dict with ``init``, ``model``,
    ``model_config``, ``weights`` (coverage and provenance), ``weights_line``, ``pretrain_recipe`` and
    ``data_mismatch`` (the differences ``allow_mismatch`` accepted: name → [checkpoint's, store's]);
    ``pretraining_sources`` (the recordings a neurokit pretraining checkpoint records having seen, path + SHA-256;
    ``None`` when it records none).

    Raises
    ------
    ConfigError
        ``init`` is a fine-tuned checkpoint, a checkpoint of another modality than the store's (a CBraMod
        checkpoint for a surface store), or ``model_kwargs`` change the checkpoint's architecture
        (:data:`ARCHITECTURE_KEYS`).
    WeightsError
        The weights do not fit the model (missing tensors without ``allow_partial``, shape mismatches).
    """
    model_kwargs = dict(model_kwargs or {})
    objective = get_model_spec(model)
    info: dict[str, Any] = {"init": str(init) if init else None}
    if init is None:
        module = objective.build(store_attrs, tuple(sample_shape), dict(model_kwargs))
        return objective.backbone(module), {**info, "model_config": model_config_dict(module), **_adapted(module)}
    pf = read_pretrained(init, sha256=init_sha256)  # hub:ORG/NAME[@REV] or a path, weights_only=True; pinned hash
    weights_info = pf.info  # name, revision, commit, sha256
    info["weights"] = weights_info
    if model in FOUNDATION_MODELS and pf.family in (None, model) and pf.whole_module:
        # braindecode-layout weights (a bare state dict) for the model named: built for the store, loaded strictly
        module = objective.build(
            store_attrs, tuple(sample_shape), {**pf.model_config.get("kwargs", {}), **model_kwargs}
        )
        assert isinstance(module, FoundationBackbone)
        report, extra = load_foundation_weights(module, pf.state_dict, allow_partial=allow_partial, name=str(init))
        (logger.info if report.complete else logger.warning)("%s", report.line())
        info.update(
            model=model,
            model_config=model_config_dict(module),
            weights={**report.to_dict(), **extra, **weights_info},
            weights_line=report.line(),
            pretrain_recipe=None,
            pretraining_sources=None,
            data_mismatch={},
            **_adapted(module),
        )
        return module, info
    if not pf.whole_module:
        raise ConfigError(f"{init}: is a fine-tuned checkpoint; start from a pretrain checkpoint or a state_dict")
    model_name = pf.family or "cbramod"  # a bare state dict: CBraMod's release
    if model_name != model:
        objective = get_model_spec(model_name)
    store_modality = store_attrs.get("modality") or "eeg"
    if objective.modality != store_modality:
        raise ConfigError(
            f"{init}: is a {objective.title or model_name} checkpoint, pretrained on {objective.modality} "
            f"stores; the store to fine-tune holds {store_modality} samples {tuple(sample_shape)}. "
            f"Start from a checkpoint pretrained on {store_modality} stores, or train from scratch (without init=)"
        )
    ck_attrs = pf.checkpoint.get("store_attrs")
    trained = (
        data_facts(ck_attrs, pf.checkpoint.get("sample_shape"))
        if ck_attrs
        else dict(CBRAMOD_RELEASE_FACTS)
        if model_name == "cbramod" and pf.family is None and cbramod_layers(pf.state_dict) is not None
        else {}
    )
    info["data_mismatch"] = check_data_facts(
        trained,
        data_facts(store_attrs, sample_shape),
        checkpoint=init,
        store=store_name or "the store",
        allow=allow_mismatch,
    )
    mcfg = dict(pf.model_config)
    if pf.family is None and model_name == "cbramod" and "n_layers" not in mcfg:
        # a bare state dict: its layer count is read from its keys; one with no CBraMod layer at all is not said to
        # have 12 (load_weights below says first that none of its tensors belongs to the backbone)
        layers = cbramod_layers(pf.state_dict)
        if layers is not None:
            mcfg["n_layers"] = layers
    shape_keys = [k for k in ARCHITECTURE_KEYS if k in model_kwargs and k in mcfg and model_kwargs[k] != mcfg[k]]
    if shape_keys:
        k = shape_keys[0]
        raise ConfigError(
            f"{init}: the checkpoint's backbone has {k}={mcfg[k]}; {k}={model_kwargs[k]} sizes a backbone trained "
            "from scratch. Drop it to fine-tune the checkpoint, or drop init= to train a new one"
        )
    mcfg.update(model_kwargs)
    module = objective.rebuild(mcfg)
    report = load_weights(module, pf.state_dict, allow_partial=allow_partial, name=str(init))
    (logger.info if report.complete else logger.warning)("%s", report.line())
    pre_ch = (pf.checkpoint.get("store_attrs") or {}).get("ch_names")
    now_ch = store_attrs.get("ch_names")
    # a run over several stores records every layout's channels: the store may match any of them
    sets = [list(lay.get("ch_names") or []) for lay in pf.checkpoint.get("layouts") or []] or [list(pre_ch or [])]
    if len(sets) > 1:
        pre_ch = sorted({c for chs in sets for c in chs})
    if pre_ch and now_ch and list(now_ch) not in sets and list(pre_ch) != ["any"]:  # any: a pooled store
        logger.warning(
            "%s was pretrained on %d channels, the store has %d (%d in common); the backbone is "
            "montage-independent, fine-tuning adapts it",
            init,
            len(pre_ch),
            len(now_ch),
            len(set(pre_ch) & set(now_ch)),
        )
    # coverage (loaded/total, missing, unexpected) and where the file came from (name, revision, commit, SHA-256)
    info.update(
        model=model_name,
        model_config=model_config_dict(module),
        weights={**report.to_dict(), **weights_info},
        weights_line=report.line(),
        pretrain_recipe=pf.checkpoint.get("recipe"),
        pretraining_sources=pf.checkpoint.get("pretraining_sources"),
    )
    return objective.backbone(module), info


@fill_doc
def create_model(
    name: str,
    *,
    pretrained: str | Path | None = None,
    allow_partial: bool = False,
    map_location: Any = "cpu",
    **kwargs: Any,
) -> nn.Module:
    """A model family's module by name, optionally with pretrained weights (as ``timm.create_model``).

    Parameters
    ----------
    name : str
        The family (:func:`list_models`): ``"cbramod"`` (:class:`~neurokit.models.cbramod.CBraMod`), ``"sit"``
        (:class:`~neurokit.models.vsmae.VSMAE`, the masked autoencoder around a SiT encoder that the family
        pretrains; its encoder is ``model.encoder``) or ``"clip"`` (:class:`~neurokit.models.clip.SurfaceCLIP`).
    pretrained : str or Path, optional
        Weights to load: a neurokit pretraining checkpoint, a bare state dict (e.g. CBraMod's released
        ``pretrained_weights.pth``), or Hub weights ``hub:ORG/NAME[/FILE][@REVISION]``. Read with
        ``torch.load(weights_only=True)`` and loaded through :func:`~neurokit.models.weights.load_weights`
        (strict: every tensor of the module, no extra tensor, same shapes). Without ``**kwargs`` the
        architecture a checkpoint records (``model_config``) is used; with them, the module is built from
        ``kwargs`` and the weights must fit it.
    %(allow_partial)s
    %(map_location)s
    **kwargs
        The family's options (:attr:`ModelSpec.options`): CBraMod the :class:`~neurokit.models.cbramod.CBraModConfig`
        fields (``n_layers``, ``d_model``…); ``sit`` ``size`` (``tiny``/``small``/``base``), ``n_layers``,
        the :class:`~neurokit.models.sit.SiTConfig` fields (``n_chans``, ``n_patches``, ``vertices_per_patch``…),
        ``mask_ratio`` and the decoder fields; ``clip`` ``size``, ``n_layers``, the SiT fields and the
        :class:`~neurokit.models.clip.CLIPConfig` fields (``video_dim``, ``audio_dim``, ``embed_dim``…).

    Returns
    -------
    nn.Module
        The family's module, with a ``config`` whose ``to_dict()`` rebuilds it; with ``pretrained``, also
        ``pretrained_info`` (source, SHA-256, Hub commit, tensors loaded/total, missing, unexpected).

    Raises
    ------
    ConfigError
        Unknown family (the message lists the known ones) or option (lists the allowed ones); ``pretrained``
        is a fine-tuning checkpoint (use :func:`from_pretrained` for its backbone).
    neurokit.models.pretrained.PretrainedError
        ``pretrained`` is of another family, would run code on loading, or does not fit the module.
    FileNotFoundError, neurokit.models.hub.HubError
        No such file; Hub weights not resolvable.

    Examples
    --------
    >>> import neurokit
    >>> m = neurokit.create_model("cbramod", n_layers=2)
    >>> m.config.n_layers
    2
    >>> v = neurokit.create_model("sit", size="tiny", n_layers=1, n_chans=3, n_patches=20, vertices_per_patch=45)
    >>> type(v).__name__, v.encoder.config.dim
    ('VSMAE', 192)
    """
    spec = get_model_spec(name)
    if pretrained is None:
        return place(_create(spec, dict(kwargs)), map_location)
    pf = read_pretrained(pretrained, map_location=map_location)
    if name in FOUNDATION_MODELS and pf.family in (None, name) and pf.whole_module:
        # braindecode-layout weights: the module from kwargs (or the recorded config), loaded strictly
        fm = _create(spec, dict(kwargs)) if kwargs or not pf.model_config else spec.rebuild(dict(pf.model_config))
        assert isinstance(fm, FoundationBackbone)
        report, _ = load_foundation_weights(fm, pf.state_dict, allow_partial=allow_partial, name=pf.source)
        (logger.info if report.complete else logger.warning)("%s", report.line())
        return place(with_info(fm, pf, report, name), map_location)
    family = expect_family(pf, [name], f"create_model({name!r})")
    if not pf.whole_module:
        raise ConfigError(
            f"{pretrained}: is a fine-tuned checkpoint (kind {pf.kind!r}); create_model loads pretraining "
            "checkpoints and state dicts: neurokit.from_pretrained(path) gives its backbone, "
            "neurokit.models.heads.load_finetuned(path) the whole fine-tuned model"
        )
    if kwargs or not pf.model_config:
        kw = dict(kwargs)
        if family == "cbramod" and pf.family is None and "n_layers" not in kw:
            kw["n_layers"] = cbramod_layers(pf.state_dict) or 12
        module = _create(spec, kw)
    else:
        module = spec.rebuild(dict(pf.model_config))
    report = load_into(module, pf.state_dict, allow_partial=allow_partial, name=pf.source, what=f"{spec.title} model")
    (logger.info if report.complete else logger.warning)("%s", report.line())
    return place(with_info(module, pf, report, family), map_location)


@fill_doc
def from_pretrained(
    source: str | Path,
    *,
    model: str | None = None,
    map_location: Any = "cpu",
    allow_partial: bool = False,
    **config: Any,
) -> nn.Module:
    """A model rebuilt from a weights file, its family and architecture taken from the file.

    Parameters
    ----------
    source : str or Path
        One of

        - a neurokit **pretraining checkpoint** (``neuro pretrain``'s ``last.pt``; it records ``model`` and
          ``model_config``): returns the family's whole module (``cbramod`` → :class:`~neurokit.models.cbramod.CBraMod`,
          ``sit`` → :class:`~neurokit.models.vsmae.VSMAE`, ``clip`` → :class:`~neurokit.models.clip.SurfaceCLIP`);
        - a neurokit **fine-tuning checkpoint** (``neuro finetune``'s ``best.pt``, or a multitask one): returns
          the **fine-tuned backbone** only (:class:`CBraMod` or the :class:`~neurokit.models.sit.SiT` encoder,
          as :attr:`ModelSpec.backbone`), the task head left out; the whole fine-tuned model (backbone + head)
          is :func:`neurokit.models.heads.load_finetuned`;
        - a **bare state dict** (CBraMod's released ``pretrained_weights.pth``): a CBraMod (layer count read
          from the tensor names), or the family ``model`` built from ``**config`` as by :func:`create_model`.

        A local path or Hub weights ``hub:ORG/NAME[/FILE][@REVISION]``; read with ``torch.load(weights_only=True)``.
    model : str, optional
        The family expected (:func:`list_models`); a file of another family is refused. Default: any.
    %(map_location)s
    %(allow_partial)s
    **config
        Fields of the recorded ``model_config`` to override (e.g. ``attn_backend="torch"``, ``dropout=0.0``);
        for a bare state dict, :func:`create_model` options.

    Returns
    -------
    nn.Module
        In training mode as built (call ``.eval()`` for inference), with ``pretrained_info`` (source,
        SHA-256, Hub commit, ``model``, ``kind``, tensors loaded/total, missing, unexpected).

    Raises
    ------
    ConfigError
        Unknown ``model``; a bare state dict of a family other than CBraMod without its ``**config``.
    neurokit.models.pretrained.PretrainedError
        The file is of another family than ``model`` (the message names both), would run code on loading,
        or does not fit the rebuilt module (missing, unexpected or reshaped tensors).
    FileNotFoundError, neurokit.models.hub.HubError
        No such file; Hub weights not resolvable.

    Examples
    --------
    >>> import neurokit, tempfile, os
    >>> from neurokit.models.checkpoint import save_checkpoint
    >>> m = neurokit.create_model("cbramod", n_layers=1)
    >>> p = save_checkpoint(os.path.join(tempfile.mkdtemp(), "last.pt"), {"kind": "pretrain", "model": "cbramod",
    ...                     "model_config": m.config.to_dict(), "state_dict": m.state_dict()})
    >>> neurokit.from_pretrained(p, model="cbramod").config.n_layers
    1
    """
    if model is not None:
        get_model_spec(model)
    pf = read_pretrained(source, map_location=map_location)
    if model in FOUNDATION_MODELS and pf.family in (None, model) and pf.whole_module:
        # braindecode-layout weights: built from **config (the data and braindecode's sizes), loaded strictly
        return create_model(model, pretrained=source, allow_partial=allow_partial, map_location=map_location, **config)
    if pf.family is None:
        family = model or "cbramod"
        spec = get_model_spec(family)
        if family != "cbramod" and not config:
            raise ConfigError(
                f"{source}: a bare state dict records no configuration; give the {spec.title} "
                f"architecture: from_pretrained(..., model={family!r}, size=..., n_chans=..., ...)"
            )
        kw = dict(config)
        if family == "cbramod" and "n_layers" not in kw:
            kw["n_layers"] = cbramod_layers(pf.state_dict) or 12
        module = _create(spec, kw)
    else:
        family = expect_family(pf, [model] if model else [pf.family], "from_pretrained(model=...)")
        spec = get_model_spec(family)
        module = spec.rebuild({**pf.model_config, **config})
    what = f"{spec.title} model"
    if not pf.whole_module:
        module, what = spec.backbone(module), f"{spec.title} backbone"
    report = load_into(module, pf.backbone_state(), allow_partial=allow_partial, name=pf.source, what=what)
    (logger.info if report.complete else logger.warning)("%s", report.line())
    return place(with_info(module, pf, report, family), map_location)
