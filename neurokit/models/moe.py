"""Soft mixture of experts (Puigcerver, Riquelme, Mustafa, Houlsby: "From Sparse to Soft Mixtures of
Experts", ICLR 2024, arXiv 2308.00951, §2 and Algorithm 1).

Every expert ``i`` owns ``p`` slots. A routing tensor Φ ``(D, n_experts, slots)`` scores each token
against each slot; tokens and Φ are L2-normalised along ``D`` and the logits multiplied by a learnable
scale (§2.3, "normalization"), initialised at 1 as in vmoe (``vmoe/projects/soft_moe/router.py``,
``scale_init=ones``) and the M4oE release (``models_m4oe.py``, ``torch.ones(1)``). Dispatch weights are a
softmax over the tokens (each slot takes a convex mixture of the tokens); combine weights are a softmax
over every expert×slot (each token takes a convex mixture of the slot outputs). Every slot is filled, no
token is dropped and no load-balancing loss is needed.
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def _l2(x: torch.Tensor, dim: int) -> torch.Tensor:
    return F.normalize(x, dim=dim, eps=1e-6)


class Experts(nn.Module):
    """``n_experts`` independent two-layer MLPs (D → hidden → D, GELU), evaluated batched.

    Input ``(B, n_experts, S, D)``, output the same shape: expert ``i`` sees only ``x[:, i]``.

    Parameters
    ----------
    dim : int
        Token width ``D``.
    n_experts : int
        Number of experts.
    hidden : int
        Hidden width of each MLP.

    Examples
    --------
    >>> Experts(8, n_experts=3, hidden=16)(torch.randn(2, 3, 1, 8)).shape
    torch.Size([2, 3, 1, 8])
    """

    def __init__(self, dim: int, n_experts: int, hidden: int) -> None:
        super().__init__()
        self.w1 = nn.Parameter(torch.empty(n_experts, dim, hidden))
        self.b1 = nn.Parameter(torch.zeros(n_experts, 1, hidden))
        self.w2 = nn.Parameter(torch.empty(n_experts, hidden, dim))
        self.b2 = nn.Parameter(torch.zeros(n_experts, 1, dim))
        for w in (self.w1, self.w2):
            nn.init.normal_(w, std=1.0 / math.sqrt(w.shape[1]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.gelu(torch.einsum("bnsd,ndh->bnsh", x, self.w1) + self.b1)
        return torch.einsum("bnsh,nhd->bnsd", h, self.w2) + self.b2


class SoftMoE(nn.Module):
    """One Soft-MoE layer.

    Parameters
    ----------
    dim : int
        Token width ``D``.
    n_experts : int
        Number of experts.
    slots : int
        Slots per expert.
    hidden : int, optional
        Expert MLP width (default ``4 * dim``).
    keep_slot_axis : bool
        ``False`` (Soft MoE): output ``(B, m, D)``, each token summing every expert×slot output.
        ``True`` (M4oE's task-aware MToE, release ``SoftMoELayerWrapperMET``: einsum ``bnpd,bmnp->bmpd``):
        the sum runs over the experts only and the slot axis is kept: output ``(B, slots, m, D)``,
        ``output[:, p]`` being the tokens as seen through slot ``p`` of every expert. The combine weights
        stay one softmax over experts×slots, so the slots compete for each token's mass.
    per_slot_combine : bool
        Not the paper's nor the release's (a neurokit option, off): the combine weights are a softmax over
        the experts for each slot separately (each slot gets a whole token's mass, so slots do not
        compete). Implies ``keep_slot_axis``. Kept only to reproduce neurokit runs made before the
        release was matched.
    slot_embed : bool
        Add a learnable embedding per slot index to the slot inputs (M4oE's task embeddings).
    scale_init : float
        Initial value of the learnable logit scale (1, as vmoe and the release).

    Notes
    -----

    Forward pass::

        x : Tensor ``(B, m, D)`` float
        mask : bool Tensor ``(B, m)``, optional
            ``True`` for real tokens. Masked tokens get no dispatch weight (they feed no slot) and output 0.
            Each sample needs at least one real token.

    Returns ``y`` (shape above). After each call ``self.last_routing`` holds ``{"logits", "dispatch",
    "combine"}``, each ``(B, m, n_experts, slots)``: dispatch sums to 1 over ``m`` (real tokens) for
    every (sample, expert, slot); combine sums to 1 over experts×slots (over experts per slot with
    ``per_slot_combine``) for every token.

    Source: Puigcerver et al. 2023, Algorithm 1; vmoe ``SoftRouter``.

    Examples
    --------
    >>> layer = SoftMoE(8, n_experts=4, slots=2)
    >>> layer(torch.randn(3, 5, 8)).shape
    torch.Size([3, 5, 8])
    >>> float(layer.scale.detach())
    1.0
    """

    def __init__(
        self,
        dim: int,
        n_experts: int,
        slots: int = 1,
        hidden: int | None = None,
        *,
        keep_slot_axis: bool = False,
        per_slot_combine: bool = False,
        slot_embed: bool = False,
        scale_init: float = 1.0,
    ) -> None:
        super().__init__()
        self.dim, self.n_experts, self.slots = dim, n_experts, slots
        self.per_slot_combine = per_slot_combine
        self.keep_slot_axis = keep_slot_axis or per_slot_combine
        self.phi = nn.Parameter(torch.randn(dim, n_experts, slots) / math.sqrt(dim))  # LeCun normal
        self.scale = nn.Parameter(torch.full((), float(scale_init)))
        self.experts = Experts(dim, n_experts, hidden or 4 * dim)
        self.slot_embed = nn.Parameter(torch.zeros(slots, dim)) if slot_embed else None
        self.last_routing: dict[str, torch.Tensor] = {}

    def router_logits(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """``scale · ⟨x/‖x‖, φ/‖φ‖⟩`` ``(B, m, n_experts, slots)``; masked tokens ``-inf``."""
        logits = torch.einsum("bmd,dnp->bmnp", _l2(x, -1), _l2(self.phi, 0)) * self.scale
        if mask is not None:
            logits = logits.masked_fill(~mask[:, :, None, None], float("-inf"))
        return logits

    def forward(
        self, x: torch.Tensor, mask: torch.Tensor | None = None, dispatch: torch.Tensor | None = None
    ) -> torch.Tensor:
        """``dispatch`` ``(B, m, n_experts, slots)``, optional: dispatch weights to use instead of the
        softmax over tokens (each slot's column must sum to 1 over the real tokens)."""
        B, m, D = x.shape
        logits = self.router_logits(x, mask)
        if dispatch is None:
            dispatch = torch.softmax(logits, dim=1)
        if self.per_slot_combine:
            combine = torch.softmax(logits, dim=2)
        else:
            combine = torch.softmax(logits.reshape(B, m, -1), dim=-1).reshape(logits.shape)
        if mask is not None:
            combine = combine.masked_fill(~mask[:, :, None, None], 0.0)
        slots_in = torch.einsum("bmnp,bmd->bnpd", dispatch, x)
        if self.slot_embed is not None:
            slots_in = slots_in + self.slot_embed
        slots_out = self.experts(slots_in)
        self.last_routing = {"logits": logits, "dispatch": dispatch, "combine": combine}
        if self.keep_slot_axis:
            return torch.einsum("bmnp,bnpd->bpmd", combine, slots_out)
        return torch.einsum("bmnp,bnpd->bmd", combine, slots_out)


class SoftMoEBlock(nn.Module):
    """Pre-norm transformer (ViT) block whose MLP is a :class:`SoftMoE` layer:
    ``x + attn(LN(x))`` then ``x + moe(LN(x))``.

    ``forward(x, mask=None)``: ``(B, m, D) → (B, m, D)``; ``mask`` ``(B, m)`` bool, ``True`` for real tokens
    (padded ones are neither attended to nor dispatched).

    Parameters
    ----------
    dim : int
        Token width ``D``.
    n_heads : int
        Attention heads (``dim`` must be a multiple).
    n_experts : int
        Experts of the Soft-MoE layer.
    slots : int
        Slots per expert.
    hidden : int, optional
        Expert MLP width (default ``4 * dim``).
    dropout : float
        Attention dropout.

    Examples
    --------
    >>> SoftMoEBlock(8, n_heads=2, n_experts=4)(torch.randn(2, 3, 8)).shape
    torch.Size([2, 3, 8])
    """

    def __init__(
        self, dim: int, n_heads: int, n_experts: int, slots: int = 1, hidden: int | None = None, dropout: float = 0.0
    ) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, n_heads, dropout=dropout, batch_first=True)
        self.norm2 = nn.LayerNorm(dim)
        self.moe = SoftMoE(dim, n_experts, slots, hidden)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        h = self.norm1(x)
        pad = None if mask is None else ~mask
        x = x + self.attn(h, h, h, key_padding_mask=pad, need_weights=False)[0]
        return x + self.moe(self.norm2(x), mask)
