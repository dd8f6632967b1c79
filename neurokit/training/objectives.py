"""Pretraining objectives, keyed by the model name given to ``neuro pretrain --model``.

An :class:`Objective` pairs a model family (:class:`~neurokit.models.registry.ModelSpec`: how the module
is built and which part is the backbone) with the loss of one batch and the family's reference optimiser.
The objectives are listed explicitly in :data:`OBJECTIVES`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import torch
import torch.nn as nn
import torch.nn.functional as F

from neurokit._utils.errors import ConfigError, DataFileError
from neurokit.data.pairs import PairedDataset, open_stimuli, pair_samples
from neurokit.training.masked_baselines import MaskedBaselines
from neurokit.models.clip import CLIPConfig
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
    target = _target(model, x, mask)  # the input as the encoder sees it (after the model's InputNorm, if any)
    loss = F.mse_loss(y[sel], target[sel])
    return loss, {"masked_frac": float(sel.float().mean())}


def _target(model: nn.Module, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    inner = getattr(model, "module", model)  # DDP
    norm = getattr(inner, "normalize_input", None)
    return x if norm is None else norm(x, mask)


def masked_baselines(target: torch.Tensor, mask: torch.Tensor) -> dict[str, torch.Tensor]:
    """Sums of squared errors on the masked patches of two predictors that learn nothing, for a held-out
    masked-reconstruction loss to be read against.

    ``"zero"``: predict 0 (the sum is that of the squared masked targets; divided by the masked values it is
    the masked patches' mean power). ``"mean"``: mean imputation (Little & Rubin, *Statistical Analysis with
    Missing Data*, §3.4): every value of a masked patch is predicted by the mean of the visible patches of
    the same channel of the same window (all their values); 0 where every patch of that channel is masked.

    Parameters
    ----------
    target : Tensor ``(B, C, N, P)``
        What the model reconstructs (the normalised input).
    mask : Tensor ``(B, C, N)``
        1 = masked patch.

    Returns
    -------
    dict ``{"zero": sum, "mean": sum, "n": number of masked values}`` (0-d float64 tensors).

    Examples
    --------
    >>> t = torch.tensor([[[[1.0, 1.0], [3.0, 5.0]]]])  # one channel, two patches of 2 values
    >>> m = torch.tensor([[[0.0, 1.0]]])  # the second patch masked
    >>> {k: float(v) for k, v in masked_baselines(t, m).items()}  # zero: 9 + 25; mean: (3-1)² + (5-1)²
    {'zero': 34.0, 'mean': 20.0, 'n': 2.0}
    """
    t = target.double()
    m = mask.to(t.dtype)
    P = t.shape[-1]
    vis = (1.0 - m).unsqueeze(-1)
    n_vis = vis.sum(dim=(2, 3)) * 1.0  # (B, C) patches × 1: divided by P below
    mean = (t * vis).sum(dim=(2, 3)) / (n_vis * P).clamp_min(1.0)  # (B, C); 0 when nothing is visible
    sel = m.unsqueeze(-1).expand_as(t).bool()
    zero = (t[sel] ** 2).sum()
    pred = mean[:, :, None, None].expand_as(t)
    return {"zero": zero, "mean": ((t - pred)[sel] ** 2).sum(), "n": sel.sum().to(t.dtype)}


@torch.no_grad()
def heldout_masked_loss(
    model: nn.Module,
    loader,
    *,
    mask_ratio: float = 0.5,
    seed: int = 0,
    device: str | torch.device = "cpu",
    baselines: MaskedBaselines | None = None,
) -> dict[str, float]:
    """Masked-patch reconstruction loss (MSE over the masked values, as :func:`masked_patch_loss`) of ``model``
    on held-out batches, beside the predict-zero and predict-mean baselines (:func:`masked_baselines`) and, when
    ``baselines`` is given, the fitted spatial and temporal predictors
    (:class:`~neurokit.training.masked_baselines.MaskedBaselines`) on the same masked patches.

    The masks are drawn from a generator seeded with ``seed`` at each call, so every epoch's figures compare
    the same patches. The model runs in evaluation mode (no dropout) and is put back in training mode after.

    Parameters
    ----------
    model : nn.Module
        A CBraMod-like module: ``model(x, mask=…)`` reconstructs ``(B, C, N, P)``.
    loader : iterable of ``(x, y)`` batches, or a mapping name → such an iterable
        ``x`` ``(B, C, N, P)`` float. A mapping (one loader per sample layout, e.g. channel set) is read in its
        order with one mask generator, so the pooled figures are those of its loaders chained.

    Returns
    -------
    dict ``{"heldout_loss", "heldout_zero", "heldout_mean", "heldout_n"}``: mean squared errors over every
    masked value of the held-out windows, and the number of masked values; with ``baselines`` also
    ``"heldout_spatial"`` and ``"heldout_temporal"`` (over the batches each applies to: the spatial one needs
    two channels or more, the temporal one two patches or more; absent where it applied to none), and, when one
    applied to only some batches, ``"heldout_spatial_zero"``/``"heldout_temporal_zero"``: predict-zero on those.
    With a mapping of two loaders or more, also ``"heldout_layouts"``: name → the same figures over that loader's
    batches alone (the pooled ones are their averages weighted by ``heldout_n``).

    Examples
    --------
    >>> from neurokit.models.cbramod import CBraMod
    >>> m = CBraMod(n_layers=1)
    >>> r = heldout_masked_loss(m, [(torch.randn(4, 2, 3, 200), None)])
    >>> sorted(r)
    ['heldout_loss', 'heldout_mean', 'heldout_n', 'heldout_zero']
    """
    gen = torch.Generator().manual_seed(seed)
    was = model.training
    model.eval()
    groups = dict(loader) if isinstance(loader, Mapping) else {"": loader}
    acc: dict[str, tuple[dict[str, float], dict[str, list[float]]]] = {}
    try:
        for name, part in groups.items():  # one generator through every layout: the pooled figures are the same
            acc[name] = _heldout_sums(model, part, gen, mask_ratio, device, baselines)
    finally:
        model.train(was)
    sums: dict[str, float] = {}
    fitted: dict[str, list[float]] = {}
    for s, f in acc.values():
        for k, v in s.items():
            sums[k] = sums.get(k, 0.0) + v
        for k, part_sums in f.items():
            fitted[k] = [a + b for a, b in zip(fitted.get(k, [0.0, 0.0, 0.0]), part_sums)]
    out = _heldout_result(sums, fitted)
    if len(groups) > 1:
        out["heldout_layouts"] = {name: _heldout_result(*acc[name]) for name in groups}
    return out


def _heldout_sums(model, loader, gen, mask_ratio, device, baselines) -> tuple[dict[str, float], dict[str, list[float]]]:
    """The sums of :func:`heldout_masked_loss` over the batches of ``loader``: the model's and the baselines'
    squared errors and masked values, and per fitted baseline ``[squared errors, values, predict-zero's]``."""
    sums = {"loss": 0.0, "zero": 0.0, "mean": 0.0, "n": 0.0}
    fitted: dict[str, list[float]] = {}  # name → [sum of squared errors, masked values it predicted, zero's]
    for x, *_ in loader:
        x = x.to(device)
        B, C, N, _ = x.shape
        mask = torch.bernoulli(torch.full((B, C, N), mask_ratio), generator=gen).to(device)
        if mask.sum() == 0:
            mask.view(-1)[0] = 1
        y = model(x, mask=mask)
        target = _target(model, x, mask)
        sel = mask.bool()
        sums["loss"] += float(((y[sel].double() - target[sel].double()) ** 2).sum())
        for k, v in masked_baselines(target, mask).items():
            sums[k] += float(v)
        if baselines is not None:
            n_masked = float(sel.sum()) * target.shape[-1]
            zero_here = float((target[sel].double() ** 2).sum())
            for k, v in baselines.masked_sse(target, mask).items():
                acc = fitted.setdefault(k, [0.0, 0.0, 0.0])
                acc[0] += float(v)
                acc[1] += n_masked
                acc[2] += zero_here
    return sums, fitted


def _heldout_result(sums: dict[str, float], fitted: dict[str, list[float]]) -> dict[str, Any]:
    n = max(sums["n"], 1.0)
    return {
        "heldout_loss": sums["loss"] / n,
        "heldout_zero": sums["zero"] / n,
        "heldout_mean": sums["mean"] / n,
        **{f"heldout_{k}": sse / max(cnt, 1.0) for k, (sse, cnt, _) in fitted.items()},
        # predict-zero on the batches a fitted baseline applied to, where that is not all of them
        **{f"heldout_{k}_zero": z / max(cnt, 1.0) for k, (_, cnt, z) in fitted.items() if cnt < sums["n"]},
        "heldout_n": int(sums["n"]),
    }


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
    if not isinstance(cfg, CLIPConfig):
        raise ConfigError(
            f"{type(model).__name__}: pairing with stimuli needs a CLIP model (its config is {type(cfg).__name__})"
        )
    check_encoders(cfg, stimuli)
    pairs = pair_samples(ds, stimuli, cfg.lag_s, segments=kwargs.get("segments") or "all")
    if not len(pairs):
        raise DataFileError(
            "no fMRI sample pairs with a stimulus window (all before the lag, rest, or outside the segments)"
        )
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
    "sit": Objective(
        get_model_spec("sit"), vsmae_loss, optim=dict(lr=3e-4, weight_decay=0.01, schedule="constant", clip_grad=0.0)
    ),
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
