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
from typing import Iterable

import torch

#: samples of each neighbouring patch the temporal predictor reads (at 200 Hz: 0.1 s)
EDGE = 20
#: ridge penalty, relative to the mean diagonal of the Gram matrix (plus features / rows: more where data are few)
RIDGE = 1e-3


def _ridge(gram: torch.Tensor, cross: torch.Tensor, rows: int, lam: float = RIDGE) -> torch.Tensor:
    """``(G + λ'·mean(diag G)·I)⁻¹ · cross`` in float64, ``λ' = λ + features / rows``: ridge weights from normal
    equations accumulated over ``rows`` rows (the added shrinkage keeps a fit on a few windows from overfitting)."""
    d = gram.shape[0]
    pen = (lam + d / max(rows, 1)) * float(gram.diagonal().mean().clamp_min(1e-12))
    return torch.linalg.solve(gram + pen * torch.eye(d, dtype=gram.dtype), cross)


def spatial_features(t: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``t`` ``(B, C, N, P)`` with masked patches set to 0, as rows ``(B·N·P, C)`` (one row per instant)."""
    vis = (1.0 - mask.to(t.dtype)).unsqueeze(-1)
    return (t * vis).permute(0, 2, 3, 1).reshape(-1, t.shape[1])


def temporal_features(t: torch.Tensor, mask: torch.Tensor, edge: int = EDGE) -> torch.Tensor:
    """Rows ``(B·C·N, 2·edge)``: the last ``edge`` samples of each patch's previous patch and the first ``edge``
    of its next one, 0 where that neighbour is masked or outside the window."""
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

    @classmethod
    @torch.no_grad()
    def fit(
        cls, targets: Iterable[torch.Tensor], *, mask_ratio: float = 0.5, seed: int = 0, lam: float = RIDGE
    ) -> "MaskedBaselines":
        """Fit both predictors on ``targets``: batches ``(B, C, N, P)`` of training windows as the model
        reconstructs them (normalised), each with a Bernoulli(``mask_ratio``) patch mask drawn from a generator
        seeded with ``seed``.

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
        was fitted on; more than one patch); only their values at masked patches are meant to be read."""
        t = t.detach().to("cpu", torch.float64)
        mask = mask.detach().to("cpu", torch.float64)
        B, C, N, P = t.shape
        out = {}
        w = self.spatial.get(C)
        if w is not None:
            out["spatial"] = (spatial_features(t, mask) @ w.T).reshape(B, N, P, C).permute(0, 3, 1, 2)
        if self.temporal is not None and N > 1 and self.temporal.shape[1] == P:
            out["temporal"] = (temporal_features(t, mask) @ self.temporal).reshape(B, C, N, P)
        return out

    def masked_sse(self, t: torch.Tensor, mask: torch.Tensor) -> dict[str, torch.Tensor]:
        """Sum of squared errors on the masked values of ``t`` of each applicable predictor (0-d float64)."""
        t64 = t.detach().to("cpu", torch.float64)
        sel = mask.detach().to("cpu").bool().unsqueeze(-1).expand_as(t64)
        return {k: ((p - t64)[sel] ** 2).sum() for k, p in self.predict(t, mask).items()}
