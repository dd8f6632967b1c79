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
    masked : callable ``(module, x, generator: torch.Generator) -> MaskedPrediction``, optional
        For masked-reconstruction objectives: one held-out batch's reconstruction, target, mask and scored
        values in the sample's layout, masks drawn from ``generator`` (a CPU generator), so that
        :func:`heldout_masked_loss` reads every such objective the same way.
    """

    model: ModelSpec
    loss: Callable[..., tuple[torch.Tensor, dict[str, Any]]]
    pair: Callable[..., Any] | None = None
    optim: dict[str, Any] = field(default_factory=dict)
    masked: Callable[..., "MaskedPrediction"] | None = None

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

    Parameters
    ----------
    model : torch.nn.Module
        A CBraMod model (possibly DDP-wrapped) called as ``model(x, mask=mask)``.
    x : torch.Tensor, shape (B, C, N, 200)
        A batch of windows: ``C`` channels of ``N`` one-second patches (store units).
    generator : torch.Generator | None
        Draws the masks; used only when on ``x``'s device (else the global generator is).
    mask_ratio : float
        The probability that a patch is masked (one patch is masked when none is drawn).

    Returns
    -------
    loss : torch.Tensor, shape ()
        The mean squared error over the values of the masked patches (the target after the model's input
        normalisation).
    stats : dict
        ``{"masked_frac": share of patches masked}``.

    Examples
    --------
    >>> from neurokit.models.cbramod import CBraMod
    >>> loss, stats = masked_patch_loss(CBraMod(n_layers=1), torch.randn(2, 2, 3, 200), torch.Generator())
    >>> loss.shape, 0 < stats["masked_frac"] <= 1
    (torch.Size([]), True)
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


@dataclass
class MaskedPrediction:
    """One batch of a masked-reconstruction objective, in the sample's layout ``(B, C, N, P)`` (EEG: channels,
    patches, samples; surface: frames, patches, vertices).

    Attributes
    ----------
    pred, target : Tensor ``(B, C, N, P)``
        The reconstruction and what it is scored against (the input as the model sees it).
    mask : Tensor ``(B, C, N)``
        1 = masked patch.
    scored : BoolTensor ``(B, C, N, P)`` or None
        The values the loss is taken over; ``None``: every value of the masked patches. A masked value that a
        visible patch also holds (a border vertex of a surface patch) is not hidden and is left out.
    """

    pred: torch.Tensor
    target: torch.Tensor
    mask: torch.Tensor
    scored: torch.Tensor | None = None

    @property
    def selected(self) -> torch.Tensor:
        """The scored values as a bool tensor ``(B, C, N, P)``."""
        if self.scored is not None:
            return self.scored.bool()
        return self.mask.bool().unsqueeze(-1).expand_as(self.target)


def masked_baselines(
    target: torch.Tensor, mask: torch.Tensor, scored: torch.Tensor | None = None
) -> dict[str, torch.Tensor]:
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
    scored : BoolTensor ``(B, C, N, P)``, optional
        The values to sum over (default: every value of the masked patches; :class:`MaskedPrediction`).

    Returns
    -------
    dict ``{"zero": sum, "mean": sum, "n": number of scored values}`` (0-d float64 tensors).

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
    sel = m.unsqueeze(-1).expand_as(t).bool() if scored is None else scored.bool()
    zero = (t[sel] ** 2).sum()
    pred = mean[:, :, None, None].expand_as(t)
    return {"zero": zero, "mean": ((t - pred)[sel] ** 2).sum(), "n": sel.sum().to(t.dtype)}


def cbramod_masked(
    model: nn.Module, x: torch.Tensor, generator: torch.Generator, mask_ratio: float = 0.5
) -> MaskedPrediction:
    """CBraMod's masked prediction of one batch ``(B, C, N, P)``: a Bernoulli(``mask_ratio``) patch mask drawn
    from ``generator`` on the CPU (one patch masked when none is), the reconstruction and its target (the input
    after the model's input normalisation).

    Parameters
    ----------
    model : torch.nn.Module
        A CBraMod model (possibly DDP-wrapped).
    x : torch.Tensor, shape (B, C, N, P)
        A batch of windows.
    generator : torch.Generator
        A CPU generator the mask is drawn from.
    mask_ratio : float
        The probability that a patch is masked.

    Returns
    -------
    MaskedPrediction
        The reconstruction, its target and the mask (``scored`` ``None``: every value of the masked patches).

    Examples
    --------
    >>> from neurokit.models.cbramod import CBraMod
    >>> mp = cbramod_masked(CBraMod(n_layers=1), torch.randn(2, 2, 3, 200), torch.Generator().manual_seed(0))
    >>> mp.pred.shape, mp.mask.shape
    (torch.Size([2, 2, 3, 200]), torch.Size([2, 2, 3]))
    """
    B, C, N, _ = x.shape
    mask = torch.bernoulli(torch.full((B, C, N), mask_ratio), generator=generator).to(x.device)
    if mask.sum() == 0:
        mask.view(-1)[0] = 1
    y = model(x, mask=mask)
    return MaskedPrediction(pred=y, target=_target(model, x, mask), mask=mask)


def vsmae_masked(model: nn.Module, x: torch.Tensor, generator: torch.Generator) -> MaskedPrediction:
    """A vsMAE's masked prediction of one batch ``(B, T, N, V)``: its own tube masks (drawn from ``generator``),
    the reconstruction and the input in the sample's layout, and the values its loss scores
    (:attr:`VSMAEConfig.score <neurokit.models.vsmae.VSMAEConfig>`).

    Parameters
    ----------
    model : torch.nn.Module
        A :class:`~neurokit.models.vsmae.VSMAE` (possibly DDP-wrapped).
    x : torch.Tensor, shape (B, T, N, V)
        A batch of surface samples: ``T`` frames of ``N`` icosahedral patches of ``V`` vertices.
    generator : torch.Generator
        Draws the tube masks.

    Returns
    -------
    MaskedPrediction
        The reconstruction, target and mask in the sample's layout, and the scored values.

    Examples
    --------
    >>> mp = vsmae_masked(model, x, torch.Generator().manual_seed(0))  # doctest: +SKIP
    """
    inner: Any = getattr(model, "module", model)  # a VSMAE (DDP-wrapped or not)
    out = inner(x, generator=generator)
    pred, target, mask, scored = inner.patch_view(out)
    return MaskedPrediction(pred=pred, target=target, mask=mask, scored=scored)


@torch.no_grad()
def heldout_masked_loss(
    model: nn.Module,
    loader,
    *,
    mask_ratio: float = 0.5,
    seed: int = 0,
    device: str | torch.device = "cpu",
    baselines=None,
    predict: Callable[..., MaskedPrediction] | None = None,
    rescore: Callable[[MaskedPrediction, list], MaskedPrediction] | None = None,
) -> dict[str, Any]:
    """Masked reconstruction loss (mean squared error over the scored values) of ``model`` on held-out
    batches, beside the predict-zero and predict-mean baselines (:func:`masked_baselines`) and, when
    ``baselines`` is given, fitted or averaged predictors on the same values: one function for every
    masked-reconstruction objective (CBraMod's masked patches, a vsMAE's tube masks).

    The masks are drawn from a CPU generator seeded with ``seed`` at each call, so every epoch's figures compare
    the same values. The model runs in evaluation mode (no dropout) and is put back in training mode after.

    Parameters
    ----------
    model : nn.Module
        The model being pretrained.
    loader : iterable of ``(x, y)`` batches, or a mapping name → such an iterable
        ``x`` ``(B, C, N, P)`` float. A mapping (one loader per sample layout, e.g. channel set) is read in its
        order with one mask generator, so the pooled figures are those of its loaders chained.
    mask_ratio : float
        The share of patches masked by the default ``predict`` (CBraMod's Bernoulli mask).
    baselines : object with ``masked_sse(target, mask, scored) -> {name: sum}``, optional
        :class:`~neurokit.training.masked_baselines.MaskedBaselines` (EEG: spatial and temporal ridges) or
        :class:`~neurokit.training.masked_baselines.SurfaceBaselines` (the visible neighbouring patches' mean,
        the nearest visible frame of the same patch).
    predict : callable ``(model, x, generator) -> MaskedPrediction``, optional
        The objective's masked prediction (:attr:`Objective.masked`); default :func:`cbramod_masked` at
        ``mask_ratio``.
    rescore : callable ``(MaskedPrediction, rest) -> MaskedPrediction``, optional
        Changes the values scored of each batch before anything is scored (``rest``: the batch's items after
        ``x``), e.g. a surface store's values hidden at the data's own resolution
        (:class:`~neurokit.training.sphere_baselines.SourceHidden`).

    Returns
    -------
    dict ``{"heldout_loss", "heldout_zero", "heldout_mean", "heldout_n"}``: mean squared errors over every
    scored value of the held-out windows, and the number of scored values; with ``baselines`` also
    ``"heldout_<name>"`` for each of its predictors (over the batches it applies to; absent where it applied to
    none), and, when one applied to only some values, ``"heldout_<name>_zero"``: predict-zero on those.
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
    if predict is None:

        def predict(m, x, g):
            return cbramod_masked(m, x, g, mask_ratio)

    gen = torch.Generator().manual_seed(seed)
    was = model.training
    model.eval()
    groups = dict(loader) if isinstance(loader, Mapping) else {"": loader}
    acc: dict[str, tuple[dict[str, float], dict[str, list[float]]]] = {}
    try:
        for name, part in groups.items():  # one generator through every layout: the pooled figures are the same
            acc[name] = _heldout_sums(model, part, gen, predict, device, baselines, rescore)
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
    if getattr(baselines, "unavailable", None):
        out["heldout_unavailable"] = dict(baselines.unavailable)
    if len(groups) > 1:
        out["heldout_layouts"] = {name: _heldout_result(*acc[name]) for name in groups}
    return out


def _heldout_sums(
    model, loader, gen, predict, device, baselines, rescore=None
) -> tuple[dict[str, float], dict[str, list[float]]]:
    """The sums of :func:`heldout_masked_loss` over the batches of ``loader``: the model's and the baselines'
    squared errors and scored values, and per other baseline ``[squared errors, values, predict-zero's]``."""
    sums = {"loss": 0.0, "zero": 0.0, "mean": 0.0, "n": 0.0}
    fitted: dict[str, list[float]] = {}  # name → [sum of squared errors, values it predicted, zero's]
    for x, *rest in loader:
        mp = predict(model, x.to(device), gen)
        if rescore is not None:
            mp = rescore(mp, rest)
        sel = mp.selected
        target = mp.target
        sums["loss"] += float(((mp.pred[sel].double() - target[sel].double()) ** 2).sum())
        for k, v in masked_baselines(target, mp.mask, sel).items():
            sums[k] += float(v)
        if baselines is not None:
            for k, (sse, n, zero) in baselines.masked_sse(target, mp.mask, sel).items():
                acc = fitted.setdefault(k, [0.0, 0.0, 0.0])
                acc[0] += float(sse)
                acc[1] += float(n)
                acc[2] += float(zero)
    return sums, fitted


def _heldout_result(sums: dict[str, float], fitted: dict[str, list[float]]) -> dict[str, Any]:
    n = max(sums["n"], 1.0)
    return {
        "heldout_loss": sums["loss"] / n,
        "heldout_zero": sums["zero"] / n,
        "heldout_mean": sums["mean"] / n,
        **{f"heldout_{k}": sse / max(cnt, 1.0) for k, (sse, cnt, _) in fitted.items() if cnt > 0},
        # predict-zero on the values a baseline applied to, where that is not all of them
        **{f"heldout_{k}_zero": z / max(cnt, 1.0) for k, (_, cnt, z) in fitted.items() if 0 < cnt < sums["n"]},
        "heldout_n": int(sums["n"]),
    }


def vsmae_loss(module: nn.Module, x: torch.Tensor, generator: torch.Generator | None = None):
    """One batch ``(B, T, N, V)`` → (MSE on masked tokens, ``{"masked_frac": …}``): the ``sit`` objective's loss.

    Parameters
    ----------
    module : torch.nn.Module
        A :class:`~neurokit.models.vsmae.VSMAE` (possibly DDP-wrapped).
    x : torch.Tensor, shape (B, T, N, V)
        A batch of surface samples (frames, patches, vertices).
    generator : torch.Generator | None
        Draws the masks; used only when on ``x``'s device (else the global generator is).

    Returns
    -------
    loss : torch.Tensor, shape ()
        The model's reconstruction loss on masked tokens.
    stats : dict
        ``{"masked_frac": share of tokens masked}``.

    Examples
    --------
    >>> loss, stats = vsmae_loss(model, x)  # doctest: +SKIP
    """
    # a "cuda" generator drives "cuda:0" tensors: compare device types, not full device names
    gen = generator if generator is not None and generator.device.type == x.device.type else None
    out = module(x, generator=gen)
    return out.loss, {"masked_frac": float(out.mask.float().mean())}


def pair_for_training(ds, model: nn.Module, kwargs: dict):
    """The objective's dataset: :class:`PairedDataset` over ``ds`` and ``kwargs["stimuli"]`` at the model's lag.

    Parameters
    ----------
    ds : PatchDataset
        The fMRI samples (:class:`~neurokit.data.dataset.PatchDataset`).
    model : torch.nn.Module
        A CLIP model (possibly DDP-wrapped): its config gives the lag and the stimulus encoders.
    kwargs : dict
        The model's options: ``stimuli`` (stimulus store paths or :class:`~neurokit.stimuli.store.StimulusStore`
        objects, one per run) and ``segments`` (``"all"`` by default).

    Returns
    -------
    PairedDataset
        Items ``(x, (video, audio))``.

    Raises
    ------
    ConfigError
        ``model`` is not a CLIP model; no stimulus store, or stores whose encoders differ from the model's.
    DataFileError
        No fMRI sample pairs with a stimulus window (:func:`~neurokit.data.pairs.pair_samples`).

    Examples
    --------
    >>> paired = pair_for_training(ds, model, {"stimuli": ["run1_stim.h5"]})  # doctest: +SKIP
    """
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
    """One batch: ``x`` ``(B, T, N, V)``, ``y = (video (B, Dv), audio (B, Da))`` → (weighted InfoNCE, per-pair losses).

    Parameters
    ----------
    module : torch.nn.Module
        A CLIP model (possibly DDP-wrapped).
    x : torch.Tensor, shape (B, T, N, V)
        fMRI samples.
    generator : torch.Generator | None
        Unused (the objectives share one signature).
    y : tuple of torch.Tensor
        The samples' frozen stimulus embeddings, ``(video (B, Dv), audio (B, Da))``.

    Returns
    -------
    loss : torch.Tensor, shape ()
        The weighted InfoNCE loss.
    stats : dict
        The per-pair losses.

    Raises
    ------
    ConfigError
        ``y`` is ``None`` (the dataset is not paired with stimuli).

    Examples
    --------
    >>> loss, parts = clip_loss(model, x, y=(video, audio))  # doctest: +SKIP
    """
    if y is None:
        raise ConfigError("the clip objective needs the stimulus embeddings of each sample (a paired dataset)")
    video, audio = (t.to(x.device, non_blocking=True) for t in y)
    out = module(x, video, audio)
    return out.loss, out.losses


#: every pretraining objective, by model name
OBJECTIVES: dict[str, Objective] = {
    "cbramod": Objective(get_model_spec("cbramod"), masked_patch_loss, masked=cbramod_masked),
    # the reference's optimiser (metrics-lab/surface-masked-autoencoders config/SiT/pretraining/smae.yml:
    # AdamW, LR 0.0003, weight_decay 0.01, use_scheduler False; tools/pretraining_fmri.py clips no gradient)
    "sit": Objective(
        get_model_spec("sit"),
        vsmae_loss,
        optim=dict(lr=3e-4, weight_decay=0.01, schedule="constant", clip_grad=0.0),
        masked=vsmae_masked,
    ),
    "clip": Objective(get_model_spec("clip"), clip_loss, pair=pair_for_training),
}


def get_objective(name: str) -> Objective:
    """The :class:`Objective` of model ``name``.

    Parameters
    ----------
    name : str
        A model name of :data:`OBJECTIVES` (``"cbramod"``, ``"sit"``, ``"clip"``).

    Returns
    -------
    Objective
        The model family, its loss, reference optimiser settings and masked prediction.

    Raises
    ------
    ConfigError
        Unknown name (a :class:`ValueError`; the message lists the known ones).

    Examples
    --------
    >>> get_objective("sit").optim["lr"]
    0.0003
    """
    if name not in OBJECTIVES:
        raise ConfigError(f"unknown model {name!r}; known: {', '.join(sorted(OBJECTIVES))}")
    return OBJECTIVES[name]
