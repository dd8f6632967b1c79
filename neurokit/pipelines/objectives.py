"""Pretraining objectives, keyed by the model name given to ``neuro pretrain --model``.

An :class:`Objective` builds the module to train from the store's metadata, computes the loss of one
batch, and says which sub-module is the backbone that fine-tuning starts from. Other model families
register their own with :func:`register_objective`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class Objective:
    """How to pretrain one model family.

    Attributes
    ----------
    name : str
    modality : str
        Store modality it trains on (``"eeg"``, ``"surface"``).
    build : callable ``(store_attrs: dict, sample_shape: tuple, model_kwargs: dict) -> nn.Module``
        The module to train, with a ``config`` attribute whose ``to_dict()`` rebuilds it.
    rebuild : callable ``(model_config: dict) -> nn.Module``
        The same module from a checkpoint's ``model_config``.
    loss : callable ``(module, x: Tensor, generator: torch.Generator | None) -> (loss, stats: dict)``
    backbone : callable ``(module) -> nn.Module``
        The encoder fine-tuning starts from; it must offer ``forward_features(x)``.
    default_head : str
        Fine-tuning head used when none is asked for (``"all_patch_reps"`` for CBraMod as in the paper;
        ``"avgpool"`` where flattening every token would make a huge layer).
    optim : dict
        The family's reference pretraining optimiser: fields of
        :class:`~neurokit.pipelines.training.OptimConfig` that differ from its (CBraMod's) defaults; what
        the user sets overrides them.
    """

    name: str
    modality: str
    build: Callable[[dict, tuple, dict], nn.Module]
    rebuild: Callable[[dict], nn.Module]
    loss: Callable[..., tuple[torch.Tensor, dict[str, Any]]]
    backbone: Callable[[nn.Module], nn.Module]
    default_head: str = "avgpool"
    optim: dict[str, Any] = field(default_factory=dict)


OBJECTIVES: dict[str, Objective] = {}


def register_objective(obj: Objective) -> Objective:
    OBJECTIVES[obj.name] = obj
    return obj


def get_objective(name: str) -> Objective:
    _load_plugins()
    if name not in OBJECTIVES:
        raise ValueError(f"unknown model {name!r}; known: {sorted(OBJECTIVES)}")
    return OBJECTIVES[name]


def _load_plugins() -> None:
    """Import the modules whose model families and preparers register themselves on import."""
    import importlib

    for mod in PLUGIN_MODULES:
        importlib.import_module(mod)


#: modules that register objectives (:func:`register_objective`) and preparers when imported
PLUGIN_MODULES = ("neurokit.pipelines.surface",)


# --------------------------------------------------------------------------- CBraMod
def _cbramod_build(store_attrs: dict, sample_shape: tuple, kwargs: dict) -> nn.Module:
    from ..models.cbramod import CBraMod

    if len(sample_shape) != 3 or sample_shape[-1] != 200:
        raise ValueError(f"CBraMod needs EEG stores of (C, N, 200) samples; this store has {sample_shape}")
    return CBraMod(**kwargs)


def _cbramod_rebuild(cfg: dict) -> nn.Module:
    from ..models.cbramod import CBraMod

    return CBraMod(**cfg)


def masked_patch_loss(
    model: nn.Module, x: torch.Tensor, generator: torch.Generator | None = None, mask_ratio: float = 0.5
) -> tuple[torch.Tensor, dict[str, Any]]:
    """CBraMod pretraining loss (§3.3): Bernoulli(``mask_ratio``) patch mask, masked patches replaced by
    the zero mask token, MSE between reconstruction and input on masked patches only.

    ``x``: ``(B, C, N, 200)``; returns a scalar loss and ``{"masked_frac": …}``.
    """
    B, C, N, _ = x.shape
    probs = torch.full((B, C, N), mask_ratio, device=x.device)
    if generator is not None and generator.device == x.device:
        mask = torch.bernoulli(probs, generator=generator)
    else:
        mask = torch.bernoulli(probs)
    if mask.sum() == 0:  # all-visible batch: mask one patch so the loss is defined
        mask.view(-1)[0] = 1
    y = model(x, mask=mask)
    sel = mask.bool()
    loss = F.mse_loss(y[sel], x[sel])
    return loss, {"masked_frac": float(sel.float().mean())}


register_objective(
    Objective(
        name="cbramod",
        modality="eeg",
        build=_cbramod_build,
        rebuild=_cbramod_rebuild,
        loss=masked_patch_loss,
        backbone=lambda m: m,
        default_head="all_patch_reps",
    )
)
