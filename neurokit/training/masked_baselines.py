"""Predictors of masked EEG patches that use information, fitted on the training windows, for the held-out
masked-reconstruction loss of pretraining to be read against.

Predict-zero and predict-mean (:func:`neurokit.training.objectives.masked_baselines`) learn nothing but the
signal's scale. The two predictors here are what a linear model gets from the visible patches:

``spatial``
    every value of a masked patch predicted by a ridge regression (Hoerl & Kennard, *Technometrics* 12, 1970)
    from the values of the other channels at the same instant, each channel entering as its value when its
    patch is visible and 0 when masked. One weight per (channel, other channel), fitted on the training windows
    with masks drawn as in pretraining: the interpolation of a masked electrode from the visible ones (a
    spatial filter; needs two channels or more).
``temporal``
    every value of a masked patch predicted by a ridge regression from the last :data:`EDGE` samples of the
    same channel's previous patch and the first :data:`EDGE` of its next patch (each 0 when that patch is
    masked or absent): what continuity across the patch borders tells.

Both are fitted per channel count (a pooled corpus of several channel sets fits one spatial filter per count).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

import numpy as np
import torch

from neurokit.training.sphere_baselines import (
    KERNEL_NEIGHBOURS,
    RIDGE_FRAMES,
    SourceHidden,
    SphereInterpolators,
    SplineInterpolation,
    electrode_positions,
    template_geometry,
    to_vertices,
)

#: samples of each neighbouring patch the temporal predictor reads (at 200 Hz: 0.1 s)
EDGE = 20
#: ridge penalty, relative to the mean diagonal of the Gram matrix (plus features / rows: more where data are few)
RIDGE = 1e-3
#: at most this many training windows of each layout fit the spatial and temporal predictors
BASELINE_WINDOWS = 256
#: at most this many training tubelets, masked by the model's own masks, choose the surface kernel's width and ridge
#: penalty (:func:`fit_sphere_interpolators`)
TUNE_TUBELETS = 4


def _ridge(gram: torch.Tensor, cross: torch.Tensor, rows: int, lam: float = RIDGE) -> torch.Tensor:
    """``(G + λ'·mean(diag G)·I)⁻¹ · cross`` in float64, ``λ' = λ + features / rows``: ridge weights from normal
    equations accumulated over ``rows`` rows (the added shrinkage keeps a fit on a few windows from overfitting)."""
    d = gram.shape[0]
    pen = (lam + d / max(rows, 1)) * float(gram.diagonal().mean().clamp_min(1e-12))
    return torch.linalg.solve(gram + pen * torch.eye(d, dtype=gram.dtype), cross)


def spatial_features(t: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``t`` ``(B, C, N, P)`` with masked patches set to 0, as rows ``(B·N·P, C)`` (one row per instant).

    Parameters
    ----------
    t : torch.Tensor, shape (B, C, N, P)
        Windows: ``C`` channels of ``N`` patches of ``P`` samples.
    mask : torch.Tensor, shape (B, C, N)
        1 (or ``True``) where a patch is masked.

    Returns
    -------
    torch.Tensor, shape (B * N * P, C)
        The visible values of every channel at each instant (0 for masked patches), dtype of ``t``.

    Examples
    --------
    >>> t = torch.ones(1, 2, 3, 4)
    >>> spatial_features(t, torch.tensor([[[1, 0, 0], [0, 0, 0]]])).shape
    torch.Size([12, 2])
    """
    vis = (1.0 - mask.to(t.dtype)).unsqueeze(-1)
    return (t * vis).permute(0, 2, 3, 1).reshape(-1, t.shape[1])


def temporal_features(t: torch.Tensor, mask: torch.Tensor, edge: int = EDGE) -> torch.Tensor:
    """Rows ``(B·C·N, 2·edge)``: the last ``edge`` samples of each patch's previous patch and the first ``edge``
    of its next one, 0 where that neighbour is masked or outside the window.

    Parameters
    ----------
    t : torch.Tensor, shape (B, C, N, P)
        Windows: ``C`` channels of ``N`` patches of ``P`` samples (``P ≥ edge``).
    mask : torch.Tensor, shape (B, C, N)
        1 (or ``True``) where a patch is masked.
    edge : int
        Samples read from each neighbouring patch (:data:`EDGE`).

    Returns
    -------
    torch.Tensor, shape (B * C * N, 2 * edge)
        ``[previous patch's tail, next patch's head]`` per patch, dtype of ``t``.

    Examples
    --------
    >>> t = torch.arange(12.0).reshape(1, 1, 3, 4)
    >>> temporal_features(t, torch.zeros(1, 1, 3), edge=1).tolist()
    [[0.0, 4.0], [3.0, 8.0], [7.0, 0.0]]
    """
    vis = (1.0 - mask.to(t.dtype)).unsqueeze(-1)
    v = t * vis
    prev = torch.zeros_like(v[..., -edge:])
    nxt = torch.zeros_like(v[..., :edge])
    prev[:, :, 1:] = v[:, :, :-1, -edge:]
    nxt[:, :, :-1] = v[:, :, 1:, :edge]
    return torch.cat([prev, nxt], dim=-1).reshape(-1, 2 * edge)


@dataclass
class MaskedBaselines:
    """The fitted ``spatial`` and ``temporal`` predictors (see the module docstring).

    Attributes
    ----------
    spatial : dict
        Channel count ``C`` → weights ``(C, C)`` (zero diagonal): ``pred[c] = Σ_j W[c, j] · visible x[j]``.
    temporal : Tensor or None
        ``(2·EDGE, P)``: a masked patch ``= [prev tail, next head] @ W``; ``None`` for windows of one patch.
    splines : dict
        Channel count ``C`` → the spherical-spline interpolation of that layout's channels
        (:class:`~neurokit.training.sphere_baselines.SplineInterpolation`; not fitted).
    unavailable : dict
        Baseline name → why it is not computed (``"spline"``: channels with no standard position).

    Examples
    --------
    >>> t = torch.randn(8, 3, 4, 200)
    >>> t[:, 1] = t[:, 0]  # channel 1 repeats channel 0
    >>> b = MaskedBaselines.fit([t], seed=0)
    >>> round(float(b.spatial[3][1, 0]), 1)  # channel 1 read from channel 0
    1.0
    """

    spatial: dict[int, torch.Tensor] = field(default_factory=dict)
    temporal: torch.Tensor | None = None
    splines: dict[int, SplineInterpolation] = field(default_factory=dict)
    unavailable: dict[str, str] = field(default_factory=dict)

    def describe(self) -> dict[str, Any]:
        """What was chosen on the training data, for the summary: here, the channels each spline reads."""
        return {f"spline_{C}ch_placed": int(s.placed.sum()) for C, s in self.splines.items()}

    @classmethod
    @torch.no_grad()
    def fit(
        cls, targets: Iterable[torch.Tensor], *, mask_ratio: float = 0.5, seed: int = 0, lam: float = RIDGE
    ) -> "MaskedBaselines":
        """Fit both predictors on ``targets``: batches ``(B, C, N, P)`` of training windows as the model
        reconstructs them (normalised), each with a Bernoulli(``mask_ratio``) patch mask drawn from a generator
        seeded with ``seed``.

        Parameters
        ----------
        targets : iterable of torch.Tensor, shape (B, C, N, P)
            Batches of training windows (any device; read in float64 on the CPU).
        mask_ratio : float
            The probability that a patch is masked.
        seed : int
            Seed of the masks.
        lam : float
            Ridge penalty, relative to the Gram matrix's mean diagonal (:data:`RIDGE`).

        Returns
        -------
        MaskedBaselines

        Raises
        ------
        ValueError
            No batch, or patches shorter than ``2 × EDGE`` samples.
        """
        gen = torch.Generator().manual_seed(seed)
        sg: dict[int, list[torch.Tensor]] = {}  # C → [X'X, X'Y]
        tg: list[torch.Tensor] | None = None
        rows: dict[object, int] = {}  # C or "temporal" → rows accumulated
        seen = False
        for t in targets:
            t = t.detach().to("cpu", torch.float64)
            B, C, N, P = t.shape
            if P < 2 * EDGE:
                raise ValueError(f"masked baselines: patches of {P} samples; need at least {2 * EDGE}")
            seen = True
            mask = torch.bernoulli(torch.full((B, C, N), mask_ratio, dtype=torch.float64), generator=gen)
            if C > 1:
                x = spatial_features(t, mask)
                y = t.permute(0, 2, 3, 1).reshape(-1, C)
                acc = sg.setdefault(C, [torch.zeros(C, C, dtype=t.dtype), torch.zeros(C, C, dtype=t.dtype)])
                acc[0] += x.T @ x
                acc[1] += x.T @ y
                rows[C] = rows.get(C, 0) + x.shape[0]
            if N > 1:
                x = temporal_features(t, mask)
                y = t.reshape(-1, P)
                if tg is None:
                    tg = [torch.zeros(x.shape[1], x.shape[1], dtype=t.dtype), torch.zeros(x.shape[1], P, dtype=t.dtype)]
                tg[0] += x.T @ x
                tg[1] += x.T @ y
                rows["temporal"] = rows.get("temporal", 0) + x.shape[0]
        if not seen:
            raise ValueError("masked baselines: no training window to fit them on")
        spatial = {}
        for C, (g, h) in sg.items():
            w = torch.zeros(C, C, dtype=torch.float64)
            for c in range(C):
                o = [j for j in range(C) if j != c]
                w[c, o] = _ridge(g[o][:, o], h[o, c], rows[C], lam)
            spatial[C] = w
        return cls(spatial=spatial, temporal=None if tg is None else _ridge(tg[0], tg[1], rows["temporal"], lam))

    @torch.no_grad()
    def predict(self, t: torch.Tensor, mask: torch.Tensor) -> dict[str, torch.Tensor]:
        """Predictions ``(B, C, N, P)`` (float64) of each predictor that applies to ``t`` (a channel count it
        was fitted on; more than one patch); only their values at masked patches are meant to be read.

        Parameters
        ----------
        t : torch.Tensor, shape (B, C, N, P)
            Windows.
        mask : torch.Tensor, shape (B, C, N)
            1 where a patch is masked.

        Returns
        -------
        dict of str to torch.Tensor
            ``"spatial"`` and/or ``"temporal"`` → predictions ``(B, C, N, P)``.
        """
        t = t.detach().to("cpu", torch.float64)
        mask = mask.detach().to("cpu", torch.float64)
        B, C, N, P = t.shape
        out = {}
        w = self.spatial.get(C)
        if w is not None:
            out["spatial"] = (spatial_features(t, mask) @ w.T).reshape(B, N, P, C).permute(0, 3, 1, 2)
        if self.temporal is not None and N > 1 and self.temporal.shape[1] == P:
            out["temporal"] = (temporal_features(t, mask) @ self.temporal).reshape(B, C, N, P)
        spline = self.splines.get(C)
        if spline is not None:
            out["spline"] = spline.predict(t, mask)
        return out

    def masked_sse(
        self, t: torch.Tensor, mask: torch.Tensor, scored: torch.Tensor | None = None
    ) -> dict[str, tuple[float, float, float]]:
        """Per applicable predictor: (sum of squared errors, number of values, predict-zero's sum of squares) on
        the scored values of ``t`` (default: every value of the masked patches).

        Parameters
        ----------
        t : torch.Tensor, shape (B, C, N, P)
            Windows.
        mask : torch.Tensor, shape (B, C, N)
            1 where a patch is masked.
        scored : torch.Tensor | None, shape (B, C, N, P)
            The values to score; ``None``: every value of the masked patches.

        Returns
        -------
        dict of str to tuple of (float, float, float)
            As :func:`masked_sse_of`.
        """
        return masked_sse_of(t, mask, scored, self.predict(t, mask))


def masked_sse_of(t, mask, scored, preds: dict[str, torch.Tensor]) -> dict[str, tuple[float, float, float]]:
    """Per prediction of ``preds`` (name → ``(B, C, N, P)``, NaN where the predictor does not apply): the sum of
    squared errors, the number of values and predict-zero's sum of squares, on the scored values of ``t``
    (``scored``, or every value of the masked patches of ``mask`` when ``None``); predictions that apply to no
    scored value are left out.

    Parameters
    ----------
    t : torch.Tensor, shape (B, C, N, P)
        The true (normalised) windows.
    mask : torch.Tensor, shape (B, C, N)
        1 where a patch is masked.
    scored : torch.Tensor | None, shape (B, C, N, P)
        ``True`` at the values to score; ``None``: every value of the masked patches.
    preds : dict of str to torch.Tensor
        Predictor name → predictions shaped as ``t``.

    Returns
    -------
    dict of str to tuple of (float, float, float)
        Name → (sum of squared errors, number of values scored, sum of squares of ``t`` there).

    Examples
    --------
    >>> t = torch.ones(1, 1, 2, 2)
    >>> masked_sse_of(t, torch.tensor([[[1.0, 0.0]]]), None, {"zero": torch.zeros_like(t)})
    {'zero': (2.0, 2.0, 2.0)}
    """
    t64 = t.detach().to("cpu", torch.float64)
    if scored is None:
        sel = mask.detach().to("cpu").bool().unsqueeze(-1).expand_as(t64)
    else:
        sel = scored.detach().to("cpu").bool()
    out = {}
    for k, p in preds.items():
        here = sel & ~torch.isnan(p)
        if here.any():
            out[k] = (float(((p - t64)[here] ** 2).sum()), float(here.sum()), float((t64[here] ** 2).sum()))
    return out


@dataclass
class SurfaceBaselines:
    """Predictors of masked surface patches from what the same sample shows, for samples ``(B, T, N, V)``
    (frames, icosahedral patches, vertices per patch):

    ``neighbours``
        every value of a masked patch in frame ``t`` predicted by the mean of every value of the visible patches
        that share a vertex with it (:func:`~neurokit.geometry.patches.patch_neighbours`) in the same frame:
        what spatial smoothness of the cortical signal gives (EEG's counterpart is the spatial ridge). Applies to
        the patches with a visible neighbour.
    ``frame``
        every value of a masked patch predicted by the same vertex in the nearest frame of the sample where that
        patch is visible (the earlier one at a tie): what the slow haemodynamics give. Applies only where a frame
        of the same patch is visible, so never under tube masking (every frame of a patch hidden together).

    Neither is fitted; both use only the sample's visible values.

    Parameters
    ----------
    neighbours : BoolTensor ``(N, N)``
        Patch adjacency (no self-loops).
    interpolators : SphereInterpolators, optional
        The Gaussian-kernel interpolation from the nearest visible vertices and the ridge from the visible
        vertices (:class:`~neurokit.training.sphere_baselines.SphereInterpolators`: ``kernel`` and ``ridge``),
        chosen and fitted on training tubelets.
    unavailable : dict
        Baseline name → why it is not computed.

    Examples
    --------
    >>> adj = torch.tensor([[False, True], [True, False]])
    >>> t = torch.tensor([[[[1.0, 3.0], [5.0, 7.0]]]])  # one frame, two patches of 2 vertices
    >>> b = SurfaceBaselines(adj)
    >>> b.predict(t, torch.tensor([[[1.0, 0.0]]]))["neighbours"][0, 0, 0].tolist()  # patch 0 from patch 1's mean
    [6.0, 6.0]
    """

    neighbours: torch.Tensor
    interpolators: SphereInterpolators | None = None
    unavailable: dict[str, str] = field(default_factory=dict)

    def describe(self) -> dict[str, Any]:
        """What was chosen on the training data, for the summary: the kernel's width (in vertex spacings) and the
        ridge's penalty and training frames."""
        ip = self.interpolators
        if ip is None:
            return {}
        out: dict[str, Any] = {"kernel_neighbours": KERNEL_NEIGHBOURS, "kernel_width_spacings": ip.width / ip.spacing}
        if ip.frames is not None:
            out.update(ridge_penalty=ip.penalty, ridge_frames=len(ip.frames))
        return out

    @classmethod
    def for_shape(cls, sample_shape) -> "SurfaceBaselines | None":
        """The baselines for samples of ``sample_shape`` ``(T, N, V)`` on an ico-k patch grid, else ``None``.

        Parameters
        ----------
        sample_shape : sequence of int
            ``(T, N, V)``: frames, patches, vertices per patch.

        Returns
        -------
        SurfaceBaselines | None
        """
        from neurokit.geometry.patches import grid_of, patch_neighbours

        k = grid_of(int(sample_shape[1]), int(sample_shape[2]))
        if k is None:
            return None
        return cls(torch.as_tensor(np.array(patch_neighbours(k))))

    @torch.no_grad()
    def predict(self, t: torch.Tensor, mask: torch.Tensor) -> dict[str, torch.Tensor]:
        """Predictions ``(B, T, N, V)`` (float64; NaN where a predictor does not apply) of both predictors.

        Parameters
        ----------
        t : torch.Tensor, shape (B, T, N, V)
            Surface samples.
        mask : torch.Tensor, shape (B, T, N)
            1 where a patch is masked.

        Returns
        -------
        dict of str to torch.Tensor
            ``{"neighbours": ..., "frame": ...}``.
        """
        t = t.detach().to("cpu", torch.float64)
        vis = 1.0 - mask.detach().to("cpu", torch.float64)  # (B, T, N)
        adj = self.neighbours.to(torch.float64)
        means = t.mean(-1)  # (B, T, N)
        num = (means * vis) @ adj.T
        den = vis @ adj.T
        nb = torch.where(den > 0, num / den.clamp_min(1.0), torch.nan)[..., None].expand_as(t)
        T = t.shape[1]
        frame = torch.full_like(t, torch.nan)
        for f in range(T):  # nearest visible frame of the same patch, earlier first at a tie
            for d in sorted(range(-T + 1, T), key=lambda d: (abs(d), d)):
                g = f + d
                if d == 0 or not 0 <= g < T:
                    continue
                fill = torch.isnan(frame[:, f]) & (vis[:, g] > 0)[..., None]
                frame[:, f] = torch.where(fill, t[:, g], frame[:, f])
        out = {"neighbours": nb, "frame": frame}
        if self.interpolators is not None:
            out.update(self.interpolators.predict(t, mask))
        return out

    def masked_sse(
        self, t: torch.Tensor, mask: torch.Tensor, scored: torch.Tensor | None = None
    ) -> dict[str, tuple[float, float, float]]:
        """As :meth:`MaskedBaselines.masked_sse`, for surface samples.

        Parameters
        ----------
        t : torch.Tensor, shape (B, T, N, V)
            Surface samples.
        mask : torch.Tensor, shape (B, T, N)
            1 where a patch is masked.
        scored : torch.Tensor | None, shape (B, T, N, V)
            The values to score; ``None``: every value of the masked patches.

        Returns
        -------
        dict of str to tuple of (float, float, float)
            As :func:`masked_sse_of`.
        """
        return masked_sse_of(t, mask, scored, self.predict(t, mask))


@torch.no_grad()
def fit_masked_baselines(
    model: torch.nn.Module,
    trains: Sequence,
    *,
    seed: int = 0,
    batch_size: int = 32,
    predict: Callable[..., Any] | None = None,
) -> MaskedBaselines | SurfaceBaselines | None:
    """The baselines a held-out masked loss is read against beside predict-zero and predict-mean.

    EEG: the spatial and temporal ridges (:class:`MaskedBaselines`) fitted on at most :data:`BASELINE_WINDOWS`
    windows of each training dataset of ``trains`` (drawn at random, seeded), normalised as ``model`` reconstructs
    them (its ``normalize_input``, e.g. :meth:`~neurokit.models.cbramod.CBraMod.normalize_input`, where it has
    one), and the spherical-spline interpolation of each layout's channels at their standard positions (where
    fewer than 4 have one: ``unavailable["spline"]`` says so). Surface: the visible neighbouring patches' mean and
    the nearest visible frame (:class:`SurfaceBaselines`; nothing to fit), and with ``predict`` the Gaussian-kernel
    interpolation and the ridge from visible vertices
    (:class:`~neurokit.training.sphere_baselines.SphereInterpolators`), their width and penalty chosen on
    training tubelets with the model's own masks (:func:`fit_sphere_interpolators`).

    Parameters
    ----------
    model : nn.Module
        The model being pretrained (unwrapped from DistributedDataParallel); its device is the fit's.
    trains : sequence of datasets
        The training datasets, one per sample layout: :class:`~neurokit.data.dataset.PatchDataset` or a
        ``ScaledDataset`` over one, whose items start with ``x`` ``(C, N, P)`` (EEG) or ``(T, N, V)`` (surface).
    seed : int
        Seeds the draw of the windows and the fit's patch masks (``seed + 1``).
    batch_size : int
        Windows per batch read.
    predict : callable ``(model, x, generator) -> MaskedPrediction``, optional
        The objective's masked prediction (surface: the model's masks for choosing the kernel's width and the
        ridge's penalty; without it neither is built).

    Returns
    -------
    MaskedBaselines, SurfaceBaselines or None
        ``None`` for surface samples on no icosahedral patch grid.

    Raises
    ------
    ValueError
        EEG patches shorter than ``2 × EDGE`` samples (:meth:`MaskedBaselines.fit`).
    """
    first = getattr(trains[0], "ds", trains[0]) if trains else None  # a ScaledDataset's own dataset
    if first is not None and first.stores[0].modality == "surface":
        base = SurfaceBaselines.for_shape(first.sample_shape)
        if base is not None and predict is not None:
            base.interpolators = fit_sphere_interpolators(model, trains[0], predict, seed=seed)
        return base
    rng = np.random.default_rng(seed)
    loaders = []
    for train in trains:
        pick = np.sort(rng.choice(len(train), min(len(train), BASELINE_WINDOWS), replace=False))
        sub = torch.utils.data.Subset(train, pick.tolist())
        loaders.append(torch.utils.data.DataLoader(sub, batch_size=batch_size, shuffle=False))
    norm = getattr(model, "normalize_input", lambda x: x)
    dev = next(model.parameters()).device
    batches = (x for loader in loaders for x, *_ in loader)  # every layout's windows, one loader after the other
    fitted = MaskedBaselines.fit((norm(x.to(dev)) for x in batches), seed=seed + 1)
    counts: dict[int, set] = {}
    for train in trains:
        names = tuple(getattr(train, "ds", train).info.ch_names or ())
        counts.setdefault(len(names), set()).add(names)
    unplaced: list[str] = []
    for C, sets in counts.items():
        if C < 2 or len(sets) != 1:  # one spline per channel count: layouts of one count with other names get none
            continue
        pos, missing = electrode_positions(next(iter(sets)))
        if (~np.isnan(pos).any(axis=1)).sum() >= 4:
            fitted.splines[C] = SplineInterpolation(pos)
        else:
            unplaced += [m for m in missing if m not in unplaced]
    if not fitted.splines:
        said = ", ".join(unplaced[:6]) + (f", … ({len(unplaced)})" if len(unplaced) > 6 else "")
        fitted.unavailable["spline"] = (
            f"no standard 10-05 position for the channels ({said})"
            if unplaced
            else "fewer than 4 channels with a standard position"
        )
    return fitted


@torch.no_grad()
def fit_sphere_interpolators(model: torch.nn.Module, train, predict: Callable[..., Any], *, seed: int = 0):
    """The surface ``kernel`` and ``ridge`` baselines, chosen and fitted on training tubelets.

    At most :data:`~neurokit.training.sphere_baselines.RIDGE_FRAMES` training frames (whole tubelets drawn at
    random, seeded, in dataset order) are read as the model reconstructs them (its ``normalize_input`` where it
    has one). The last quarter of them (at most :data:`TUNE_TUBELETS`) are masked by the model's own masks (``predict``,
    generator seeded ``seed + 1``): the kernel's width and the ridge's penalty of lowest squared error on their
    scored values are chosen, the ridge fitted for that on the other tubelets' frames; the final ridge is fitted
    on every frame read.

    Parameters
    ----------
    model : nn.Module
        The model being pretrained.
    train : dataset
        Training surface samples ``(T, N, V)``.
    predict : callable ``(model, x, generator) -> MaskedPrediction``
        The objective's masked prediction.
    seed : int
        Seeds the draw and the masks.

    Returns
    -------
    SphereInterpolators or None
        ``None`` on no icosahedral patch grid.
    """
    T, N, V = (int(v) for v in getattr(train, "ds", train).sample_shape)
    geo = template_geometry(N, V)
    if geo is None or len(train) == 0:
        return None
    ids, coords = geo
    nv = len(coords)
    rng = np.random.default_rng(seed)
    pick = np.sort(rng.choice(len(train), min(len(train), max(2, RIDGE_FRAMES // T)), replace=False))
    norm = getattr(model, "normalize_input", lambda x: x)
    dev = next(model.parameters()).device
    x = torch.stack([train[int(i)][0] for i in pick])
    frames = to_vertices(norm(x.to(dev)).detach().cpu().double().numpy(), ids, nv).astype(np.float32)  # (n, T, nv)
    n_tune = max(1, min(len(pick) // 4, TUNE_TUBELETS))
    fit_frames = frames[:-n_tune].reshape(-1, nv) if len(pick) > n_tune else None
    was = model.training
    model.eval()
    try:
        mp = predict(model, x[-n_tune:].to(dev), torch.Generator().manual_seed(seed + 1))
    finally:
        model.train(was)
    target, mask, sel = (v.detach().cpu() for v in (mp.target, mp.mask, mp.selected))
    tune = [(target[i].double().numpy(), mask[i].bool().numpy(), sel[i].numpy()) for i in range(len(target))]
    return SphereInterpolators.fit(ids, coords, frames.reshape(-1, nv), tune, fit_frames=fit_frames)


def fitted_record(fitted) -> dict[str, Any]:
    """What the baselines chose on the training data (:meth:`SurfaceBaselines.describe`,
    :meth:`MaskedBaselines.describe`), for the held-out record's ``heldout_fitted``; ``{}`` for none.

    Parameters
    ----------
    fitted : MaskedBaselines, SurfaceBaselines or None
        :func:`fit_masked_baselines`' result.

    Returns
    -------
    dict

    Examples
    --------
    >>> fitted_record(None)
    {}
    """
    return fitted.describe() if fitted is not None and hasattr(fitted, "describe") else {}


class _Tagged(torch.utils.data.Dataset):
    """Items of ``ds`` with one more entry: the sample's hemisphere, as an index into ``hemis``."""

    def __init__(self, ds, codes: np.ndarray) -> None:
        self.ds = ds
        self.codes = codes

    def __len__(self) -> int:
        return len(self.ds)

    def __getitem__(self, k: int):
        x, y, *_ = self.ds[k]
        return x, y, int(self.codes[k])


@dataclass
class HeldoutSourceScoring:
    """The held-out surface values scored: those hidden at the data's own resolution
    (:class:`~neurokit.training.sphere_baselines.SourceHidden`), each sample by its hemisphere's source mesh.

    Attributes
    ----------
    source : SourceHidden
        The source vertices of the store's template values.
    hemis : list of str
        The hemispheres, in the order of the codes the held-out items carry (:meth:`tagged`).
    """

    source: SourceHidden
    hemis: list[str]

    @property
    def kept(self) -> float:
        return self.source.kept

    @kept.setter
    def kept(self, v: float) -> None:
        self.source.kept = v

    @property
    def seen(self) -> float:
        return self.source.seen

    @seen.setter
    def seen(self, v: float) -> None:
        self.source.seen = v

    def phrase(self) -> str:
        """Words for the held-out line (:meth:`SourceHidden.phrase`)."""
        return self.source.phrase()

    def tagged(self, val, held) -> torch.utils.data.Dataset:
        """``val`` (held-out dataset) whose items end with the sample's hemisphere code (``held``: its
        :class:`~neurokit.data.dataset.PatchDataset`, for the meta)."""
        have = "hemi" in held.stores[0].meta.keys()
        hemi = held.meta("hemi").astype(str) if have else np.full(len(held), "")
        return _Tagged(val, np.asarray([self.hemis.index(h) for h in hemi]))

    def rescore(self, mp, rest: list):
        """``mp`` with ``scored`` narrowed to the values hidden at the source resolution (``rest[-1]``: the
        batch's hemisphere codes)."""
        codes = rest[-1].tolist()
        mp.scored = self.source.restrict(mp.selected, mp.mask, [self.hemis[c] for c in codes])
        return mp


def heldout_source_scoring(parts: Sequence) -> HeldoutSourceScoring | str | None:
    """How the held-out surface values are scored: on those hidden at the data's own resolution where the store's
    source mesh is known, else words saying why not; ``None`` for EEG.

    Parameters
    ----------
    parts : sequence of (train, held, phrase)
        The pretraining layouts; only those with held-out samples count.

    Returns
    -------
    HeldoutSourceScoring, str or None
    """
    held = [p[1] for p in parts if p[1] is not None]
    if not held or held[0].stores[0].modality != "surface":
        return None
    ds = held[0]
    geo = template_geometry(*(int(v) for v in ds.sample_shape[1:]))
    if geo is None:
        return "hidden template values (no icosahedral patch grid: source vertices unknown)"
    have = "hemi" in ds.stores[0].meta.keys()
    hemis = sorted({str(h) for d in held for h in (d.meta("hemi").astype(str) if have else [""])})
    src = SourceHidden.for_store(dict(ds.stores[0].attrs), geo[0], hemis)
    if isinstance(src, str):
        return f"hidden template values ({src})"
    return HeldoutSourceScoring(src, hemis)


def heldout_tagged(vals: Sequence, parts: Sequence, scoring: HeldoutSourceScoring) -> list:
    """The held-out datasets ``vals`` with each item's hemisphere code (:meth:`HeldoutSourceScoring.tagged`).

    Parameters
    ----------
    vals : sequence of datasets
        The held-out datasets, one per layout with held-out samples.
    parts : sequence of (train, held, phrase)
        The pretraining layouts.
    scoring : HeldoutSourceScoring
        The scoring whose hemisphere codes the items carry.

    Returns
    -------
    list of datasets
    """
    held = [p[1] for p in parts if p[1] is not None]
    return [scoring.tagged(v, h) for v, h in zip(vals, held)]
