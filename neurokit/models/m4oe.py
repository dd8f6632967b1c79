"""M4oE: multi-modal multi-task mixture-of-experts heads (Tang et al., "Dynamic Modeling of Patients,
Modalities and Tasks via Multi-modal Multi-task Mixture of Experts", ICLR 2025, openreview NJxCpMt0sf).

Tokens of each modality (e.g. the CBraMod features of the EEG channels and of the ECG channel) go through

1. **MSoE** — one stack of transformer blocks per modality whose MLPs are Soft-MoE layers
   (:class:`~neurokit.models.moe.SoftMoEBlock`; paper: 32 experts × 1 slot);
2. **MToE** — one Soft-MoE layer over the concatenated tokens of every modality with one slot per task in
   every expert (slot ``p`` serves task ``p``) and a learnable task embedding added to slot ``p``'s input;
   the combine keeps the slot axis, so each task gets its own view of the tokens (paper: 128 experts);
3. **fusion** — per task, the task's MToE token (mean over tokens, plus a task embedding) and the mean
   MSoE token of each modality go through a small Soft-MoE layer (paper: 16 experts); a linear head per
   task reads the first token. With ``share_weighted_fusion`` (default; a neurokit choice, off gives
   the paper's plain fusion) each modality's mean token enters task ``p``'s fusion scaled by task
   ``p``'s routing share of that modality, so what the fusion reads of a modality passes through the
   MToE routing that the contributions report.

Routing shares follow what a task depends on only when the routing has to choose: with one MToE expert
(one slot per task) a task that depends on one modality draws ≥ 0.8 of its routing mass from it (the
planted test); with many experts each task has many slots, each a different mixture of the modalities,
and a task can decode its modality from mixed slots, so its shares can stay near the token proportions.

Loss: ``Σ_tasks L_task − α · I(M; E | T)`` (:func:`conditional_mutual_information`, computed as written in
the paper from the MToE routing weights). A modality absent from a sample is masked: its tokens feed
no slot and its mean token is left out of the fusion.

Modality contributions (:meth:`M4oE.contributions`) are the share of MToE dispatch mass that a task's
slots draw from each modality's tokens. **Routing mass is not causal importance**: a slot may read a
modality heavily and still ignore what it reads, and a small share can carry the decisive signal.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Mapping

import torch
import torch.nn as nn
import torch.nn.functional as F

from neurokit._utils.errors import ConfigError
from neurokit.models.moe import SoftMoE, SoftMoEBlock

#: expert counts of the paper (defaults of ``preset="paper"``) and a size that trains on 2 CPU cores
PRESETS: dict[str, dict[str, Any]] = {
    "paper": dict(msoe_depth=2, msoe_experts=32, mtoe_experts=128, fusion_experts=16, n_heads=8, mlp_ratio=4.0),
    "small": dict(msoe_depth=1, msoe_experts=4, mtoe_experts=8, fusion_experts=4, n_heads=4, mlp_ratio=2.0),
}
TASK_KINDS = ("binary", "multiclass", "regression")


@dataclass
class TaskSpec:
    """One prediction task of an M4oE head: ``kind`` in :data:`TASK_KINDS`, ``n_outputs`` logits
    (1 for binary and regression)."""

    name: str
    kind: str
    n_outputs: int = 1

    def __post_init__(self) -> None:
        if self.kind not in TASK_KINDS:
            raise ConfigError(f"task {self.name!r}: kind={self.kind!r}; allowed: {TASK_KINDS}")
        if self.kind != "multiclass":
            self.n_outputs = 1


@dataclass
class M4oEConfig:
    """Sizes of an :class:`M4oE` head. ``preset`` fills the expert counts and depths not given
    (``"paper"``: 32 MSoE experts, 128 MToE experts, 16 fusion experts; ``"small"``: 4/8/4)."""

    in_dim: int
    modalities: list[str]
    tasks: list[dict]
    dim: int | None = None
    preset: str = "paper"
    msoe_depth: int | None = None
    msoe_experts: int | None = None
    mtoe_experts: int | None = None
    fusion_experts: int | None = None
    n_heads: int | None = None
    mlp_ratio: float | None = None
    alpha: float = 0.1
    focal_gamma: float | None = None
    dropout: float = 0.0
    share_weighted_fusion: bool = True
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.preset not in PRESETS:
            raise ConfigError(f"preset={self.preset!r}; allowed: {sorted(PRESETS)}")
        for k, v in PRESETS[self.preset].items():
            if getattr(self, k) is None:
                setattr(self, k, v)
        if self.dim is None:
            self.dim = self.in_dim
        if not self.modalities:
            raise ConfigError("an M4oE head needs at least one modality")
        if len(set(self.modalities)) != len(self.modalities):
            raise ConfigError(f"modalities named twice: {self.modalities}")
        names = [t["name"] for t in self.tasks]
        if not names or len(set(names)) != len(names):
            raise ConfigError(f"tasks must be given once each (got {names})")
        if self.dim % self.n_heads:
            raise ConfigError(f"dim={self.dim} is not a multiple of n_heads={self.n_heads}")
        if self.alpha < 0:
            raise ConfigError(f"alpha={self.alpha}: must be >= 0 (the weight of the -alpha * I(M;E|T) term; a negative "
                              "value would penalise the mutual information the head is meant to gain)")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def conditional_mutual_information(joint: torch.Tensor, eps: float = 1e-12) -> torch.Tensor:
    """``I(M; E | T) = Σ_t p(t) Σ_{m,e} p(m,e|t) log[p(m,e|t) / (p(m|t) p(e|t))]`` in nats.

    Parameters
    ----------
    joint : Tensor ``(n_modalities, n_experts, n_tasks)``
        Non-negative masses ``p(m, e, t)`` (normalised here; any positive total works).

    Terms with ``p(m,e|t) = 0`` count 0 (``0 log 0 = 0``); tasks with no mass are skipped.
    """
    p = joint / joint.sum().clamp_min(eps)
    p_t = p.sum(dim=(0, 1))  # (T,)
    p_me_t = p / p_t.clamp_min(eps)
    p_m_t = p_me_t.sum(dim=1, keepdim=True)
    p_e_t = p_me_t.sum(dim=0, keepdim=True)
    ratio = p_me_t / (p_m_t * p_e_t).clamp_min(eps)
    terms = torch.where(p_me_t > 0, p_me_t * torch.log(ratio.clamp_min(eps)), torch.zeros_like(p_me_t))
    return (p_t * terms.sum(dim=(0, 1))).sum()


def focal_loss(logits: torch.Tensor, target: torch.Tensor, gamma: float = 2.0) -> torch.Tensor:
    """Focal loss (Lin et al. 2017), mean over the batch: ``−(1 − p_y)^γ log p_y``.

    ``logits`` ``(B,)`` with ``target`` in {0, 1} (binary, one logit) or ``(B, K)`` with class indices.
    ``gamma = 0`` gives cross-entropy. M4oE's release uses γ = 2.
    """
    if logits.ndim == 1:
        logp1 = F.logsigmoid(logits)
        logp0 = F.logsigmoid(-logits)
        logp = torch.where(target.bool(), logp1, logp0)
    else:
        logp = torch.log_softmax(logits, dim=-1).gather(1, target.long()[:, None])[:, 0]
    return (-(1 - logp.exp()).pow(gamma) * logp).mean()


class M4oE(nn.Module):
    """The M4oE head over per-modality token sets.

    Parameters
    ----------
    config : M4oEConfig

    Forward
    -------
    tokens : mapping modality name → Tensor ``(B, m_k, in_dim)``
        Every modality of the config, or a subset (the others count as absent for every sample).
    present : mapping modality name → bool Tensor ``(B,)``, optional
        Per-sample presence (missing tests); default all present.

    Returns a dict task name → logits ``(B,)`` (binary, regression) or ``(B, K)`` (multiclass). The
    MToE routing of the call is kept in ``self.last`` (``dispatch``/``combine`` ``(B, M, E, T)``, the
    token → modality index ``(M,)`` and the token mask ``(B, M)``) for :meth:`contributions` and
    :meth:`cmi`.

    Raises
    ------
    ConfigError
        A token set names a modality the head was not built for, or its width is not ``in_dim``.
    """

    def __init__(self, config: M4oEConfig) -> None:
        super().__init__()
        c = self.config = config
        self.tasks = [TaskSpec(**t) for t in c.tasks]
        self.modalities = list(c.modalities)
        d = c.dim
        hid = int(c.mlp_ratio * d)
        self.proj = nn.Identity() if c.in_dim == d else nn.Linear(c.in_dim, d)
        self.in_norm = nn.LayerNorm(d)
        # modality embeddings as large as the normalised tokens, so that routing can tell modalities
        # apart from the start (tokens of a shared backbone look alike across modalities)
        self.modality_embed = nn.Parameter(torch.randn(len(self.modalities), d))
        self.msoe = nn.ModuleDict({
            m: nn.ModuleList([SoftMoEBlock(d, c.n_heads, c.msoe_experts, 1, hid, c.dropout) for _ in range(c.msoe_depth)])
            for m in self.modalities
        })
        T = len(self.tasks)
        self.mtoe_norm = nn.LayerNorm(d)
        self.mtoe = SoftMoE(d, c.mtoe_experts, T, hid, per_slot_combine=True, slot_embed=True)
        self.task_embed = nn.Parameter(torch.zeros(T, d))
        nn.init.normal_(self.task_embed, std=0.02)
        self.fusion_norm = nn.LayerNorm(d)
        self.fusion = SoftMoE(d, c.fusion_experts, 1, hid)
        self.out_norm = nn.LayerNorm(d)
        self.heads = nn.ModuleDict({t.name: nn.Linear(d, t.n_outputs) for t in self.tasks})
        self.last: dict[str, torch.Tensor] = {}

    @property
    def task_names(self) -> list[str]:
        return [t.name for t in self.tasks]

    def forward(self, tokens: Mapping[str, torch.Tensor],
                present: Mapping[str, torch.Tensor] | None = None) -> dict[str, torch.Tensor]:
        unknown = [m for m in tokens if m not in self.modalities]
        if unknown:
            raise ConfigError(f"modalities {unknown} are not among the head's {self.modalities}")
        if not tokens:
            raise ConfigError("no modality tokens given")
        B = next(iter(tokens.values())).shape[0]
        dev = next(iter(tokens.values())).device
        seqs, masks, owner, means, mean_mask = [], [], [], [], []
        for k, m in enumerate(self.modalities):
            if m not in tokens:
                means.append(torch.zeros(B, self.config.dim, device=dev))
                mean_mask.append(torch.zeros(B, dtype=torch.bool, device=dev))
                continue
            x = tokens[m]
            if x.ndim != 3 or x.shape[-1] != self.config.in_dim:
                raise ConfigError(f"modality {m!r}: tokens of shape {tuple(x.shape)}, expected (B, m, {self.config.in_dim})")
            h = self.in_norm(self.proj(x)) + self.modality_embed[k]
            pres = torch.ones(B, dtype=torch.bool, device=dev) if present is None or m not in present else present[m].bool()
            tok_mask = pres[:, None].expand(B, h.shape[1])
            # an absent modality still runs through its stack (on an unmasked view) so the shapes stay
            # static; its tokens are then masked out everywhere downstream
            for blk in self.msoe[m]:
                h = blk(h)
            seqs.append(h)
            masks.append(tok_mask)
            owner.append(torch.full((h.shape[1],), k, dtype=torch.long, device=dev))
            means.append(h.mean(dim=1) * pres[:, None])
            mean_mask.append(pres)
        x = torch.cat(seqs, dim=1)
        mask = torch.cat(masks, dim=1)
        if not mask.any(dim=1).all():
            raise ConfigError("a sample has no modality present; at least one is needed")
        y = self.mtoe(self.mtoe_norm(x), mask)  # (B, T, M, D)
        w = mask[:, None, :, None].float()
        task_tok = (y * w).sum(dim=2) / w.sum(dim=2)  # (B, T, D): what task p's slots read, nothing else
        T = len(self.tasks)
        first = task_tok + self.task_embed
        mods = torch.stack(means, dim=1)[:, None].expand(B, T, len(self.modalities), -1)  # (B, T, K, D)
        r = self.mtoe.last_routing
        self.last = {"dispatch": r["dispatch"], "combine": r["combine"], "owner": torch.cat(owner), "mask": mask}
        seq = self.fusion_norm(torch.cat([first[:, :, None], mods], dim=2))
        if self.config.share_weighted_fusion:  # after the norm, which would undo the scaling
            w = torch.cat([torch.ones(B, T, 1, device=dev), self.contributions()], dim=2)
            seq = seq * w[..., None]
        fmask = torch.cat([torch.ones(B, 1, dtype=torch.bool, device=dev), torch.stack(mean_mask, 1)], dim=1)
        z = self.fusion(seq.reshape(B * T, *seq.shape[2:]), fmask.repeat_interleave(T, dim=0))
        z = self.out_norm(first + z[:, 0].reshape(B, T, -1))
        out = {}
        for p, t in enumerate(self.tasks):
            o = self.heads[t.name](z[:, p])
            out[t.name] = o.squeeze(-1) if t.n_outputs == 1 else o
        return out

    # ------------------------------------------------------------------ routing read-outs
    def _by_modality(self, w: torch.Tensor) -> torch.Tensor:
        """Sum ``(B, M, E, T)`` routing weights over each modality's tokens → ``(B, K, E, T)``."""
        owner = self.last["owner"]
        onehot = F.one_hot(owner, len(self.modalities)).to(w.dtype)  # (M, K)
        return torch.einsum("bmet,mk->bket", w, onehot)

    def contributions(self) -> torch.Tensor:
        """Modality contributions of the last forward: ``(B, n_tasks, n_modalities)``, rows sum to 1.

        Entry ``[b, p, k]`` is the share of the dispatch mass of task ``p``'s MToE slots (summed over
        experts) that comes from modality ``k``'s tokens for sample ``b``. Not causal importance.
        """
        d = self._by_modality(self.last["dispatch"])  # (B, K, E, T)
        share = d.sum(dim=2)  # (B, K, T)
        return (share / share.sum(dim=1, keepdim=True)).permute(0, 2, 1)

    def routing_joint(self) -> torch.Tensor:
        """``p(m, e, t)`` of the last forward as un-normalised masses ``(K, E, T)``: the MToE combine
        weight that modality ``m``'s tokens give expert ``e`` in task ``t``'s slot, summed over tokens
        and samples (each real token spreads mass 1 over the experts for each task)."""
        return self._by_modality(self.last["combine"]).sum(dim=0)

    def cmi(self) -> torch.Tensor:
        """``I(M; E | T)`` of the last forward (nats), differentiable."""
        return conditional_mutual_information(self.routing_joint())

    def task_loss(self, name: str, logits: torch.Tensor, target: torch.Tensor, label_smoothing: float = 0.0) -> torch.Tensor:
        """One task's loss: focal (γ = ``focal_gamma``) or cross-entropy / BCE for classes; MSE for
        regression."""
        kind = next(t.kind for t in self.tasks if t.name == name)
        g = self.config.focal_gamma
        if kind == "regression":
            return F.mse_loss(logits, target.float())
        if g is not None:
            return focal_loss(logits, target, g)
        if kind == "binary":
            return F.binary_cross_entropy_with_logits(logits, target.float())
        return F.cross_entropy(logits, target.long(), label_smoothing=label_smoothing)

    def loss(self, outputs: Mapping[str, torch.Tensor], targets: Mapping[str, torch.Tensor],
             label_smoothing: float = 0.0) -> tuple[torch.Tensor, dict[str, float]]:
        """``Σ_tasks L_task − α · I(M;E|T)`` for the tasks in ``targets`` (task name → ``(B,)``
        targets; a task not listed has no label in this batch). Returns the loss and its parts."""
        parts = {n: self.task_loss(n, outputs[n], y, label_smoothing) for n, y in targets.items()}
        total = sum(parts.values())
        cmi = self.cmi()
        total = total - self.config.alpha * cmi
        return total, {**{f"loss_{k}": float(v.detach()) for k, v in parts.items()}, "cmi": float(cmi.detach())}
