"""Pretraining objectives, keyed by the model name given to ``neuro pretrain --model``.

An :class:`Objective` pairs a model family (:class:`~neurokit.models.registry.ModelSpec`: how the module
is built and which part is the backbone) with the loss of one batch and the family's reference optimiser.
The objectives are listed explicitly in :data:`OBJECTIVES`.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
import torch.nn as nn
import torch.nn.functional as F

from neurokit._utils.errors import ConfigError, DataFileError
from neurokit.data.pairs import PairedDataset, open_stimuli, pair_samples
from neurokit.models.registry import ModelSpec, check_encoders, get_model_spec

logger = logging.getLogger("neurokit")


@dataclass
class Objective:
    """How to pretrain one model family.

    Attributes
    ----------
    model : ModelSpec
        The family (build, rebuild, backbone, default head, modality).
    loss : callable ``(module, x: Tensor, generator: torch.Generator | None) -> (loss, stats: dict)``
    pair : callable ``(dataset, module, model_kwargs) -> Dataset``, optional
        For objectives that learn from paired data (``clip``: fMRI with stimulus embeddings): wraps the
        store's dataset so items are ``(x, y)``; ``loss`` is then called as ``loss(module, x, generator, y)``.
    optim : dict
        The family's reference pretraining optimiser: fields of
        :class:`~neurokit.training.optim.OptimConfig` that differ from its (CBraMod's) defaults; what
        the user sets overrides them.
    """

    model: ModelSpec
    loss: Callable[..., tuple[torch.Tensor, dict[str, Any]]]
    pair: Callable[..., Any] | None = None
    optim: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.model.name

    @property
    def modality(self) -> str:
        return self.model.modality

    @property
    def build(self):
        return self.model.build

    @property
    def rebuild(self):
        return self.model.rebuild

    @property
    def backbone(self):
        return self.model.backbone

    @property
    def default_head(self) -> str:
        return self.model.default_head


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


def vsmae_loss(module: nn.Module, x: torch.Tensor, generator: torch.Generator | None = None):
    """One batch ``(B, T, N, V)`` → (MSE on masked tokens, ``{"masked_frac": …}``)."""
    # a "cuda" generator drives "cuda:0" tensors: compare device types, not full device names
    gen = generator if generator is not None and generator.device.type == x.device.type else None
    out = module(x, generator=gen)
    return out.loss, {"masked_frac": float(out.mask.float().mean())}

def pair_for_training(ds, model: nn.Module, kwargs: dict):
    """The objective's dataset: :class:`PairedDataset` over ``ds`` and ``kwargs["stimuli"]`` at the model's lag."""
    stimuli = open_stimuli(kwargs.get("stimuli"))
    cfg = getattr(model, "module", model).config
    check_encoders(cfg, stimuli)
    pairs = pair_samples(ds, stimuli, cfg.lag_s, segments=kwargs.get("segments") or "all")
    if not len(pairs):
        raise DataFileError("no fMRI sample pairs with a stimulus window (all before the lag, rest, or outside the segments)")
    logger.info("clip: %d of %d fMRI samples paired with stimulus windows (lag %g s)", len(pairs), len(ds), cfg.lag_s)
    return PairedDataset(ds, stimuli, pairs)


def clip_loss(module: nn.Module, x: torch.Tensor, generator=None, y=None):
    """One batch: ``x`` ``(B, T, N, V)``, ``y = (video (B, Dv), audio (B, Da))`` → (weighted InfoNCE, per-pair losses)."""
    if y is None:
        raise ConfigError("the clip objective needs the stimulus embeddings of each sample (a paired dataset)")
    video, audio = (t.to(x.device, non_blocking=True) for t in y)
    out = module(x, video, audio)
    return out.loss, out.losses



#: every pretraining objective, by model name
OBJECTIVES: dict[str, Objective] = {
    "cbramod": Objective(get_model_spec("cbramod"), masked_patch_loss),
    # the reference's optimiser (metrics-lab/surface-masked-autoencoders config/SiT/pretraining/smae.yml:
    # AdamW, LR 0.0003, weight_decay 0.01, use_scheduler False; tools/pretraining_fmri.py clips no gradient)
    "sit": Objective(get_model_spec("sit"), vsmae_loss, optim=dict(lr=3e-4, weight_decay=0.01, schedule="constant", clip_grad=0.0)),
    "clip": Objective(get_model_spec("clip"), clip_loss, pair=pair_for_training),
}


def get_objective(name: str) -> Objective:
    """The :class:`Objective` of model ``name``.

    Raises
    ------
    ValueError
        Unknown name (a :class:`~neurokit.ConfigError`; the message lists the known ones).
    """
    if name not in OBJECTIVES:
        raise ConfigError(f"unknown model {name!r}; known: {', '.join(sorted(OBJECTIVES))}")
    return OBJECTIVES[name]
