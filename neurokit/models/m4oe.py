"""M4oE: multi-modal multi-task mixture-of-experts heads (Tang et al., "Dynamic Modeling of Patients,
Modalities and Tasks via Multi-modal Multi-task Mixture of Experts", ICLR 2025, openreview NJxCpMt0sf;
release tangzhengxu2001/m4oe, ``models/models_m4oe.py`` and ``main.py``).

Tokens of each modality (e.g. the CBraMod features of the EEG channels and of the ECG channel), after a
projection, a LayerNorm and a learnable modality embedding, go **in parallel** (release
``forward_features``: ``blocks1..4`` and ``blocks`` both read the backbone tokens) through

1. **MSoE** — one stack of transformer blocks per modality whose MLPs are Soft-MoE layers
   (:class:`~neurokit.models.moe.SoftMoEBlock`; paper: 2 blocks, 32 experts × 1 slot);
2. **MToE** — one Soft-MoE layer over the concatenated tokens of every modality with one slot per task in
   every expert (slot ``p`` serves task ``p``) and a learnable task embedding added to slot ``p``'s input
   (paper: 128 experts). The combine weights are one softmax over experts × slots and the combine keeps
   the slot axis (release ``SoftMoELayerWrapperMET``), so the tasks compete for each token's mass;
3. **fusion** — per task, the task's MToE tokens (mean over tokens) and the mean MSoE token of each
   modality go through two ViT blocks whose MLPs are Soft-MoE layers (paper: 16 experts), shared across
   tasks (release ``blocks5``); a LayerNorm and a linear head per task read the first token.

Loss: ``Σ_tasks L_task − α · I(M; E | T)`` (:func:`conditional_mutual_information`), with ``p(m, e, t)``
from the MToE router logits by one softmax over tokens × experts × slots per sample, as the release's
``MutualInformationLoss`` builds its joint, so ``p(t)``, ``p(m|t)`` and ``p(e|m,t)`` can all move.
Classification tasks use the release's focal loss, γ = 2 with class weights α = 1 − class frequency
(:func:`focal_loss`).

**neurokit's own additions (not the paper's, not the release's)**, on by default because without them
the contributions do not follow the data (measured on planted data: each task living in one modality,
the paper's routing leaves the share of the right modality near its token share):

- ``modality_gate``: task ``p``'s MToE slots first choose modalities, then tokens: the dispatch weight of
  token ``m`` of modality ``k`` is ``s[b, p, k] · softmax over k's tokens``, with ``s[b, p, :]`` a softmax
  over the sample's present modalities of ``⟨q_p, mean token of k⟩ + c[p, k]`` (``q``, ``c`` start at 0:
  uniform over the modalities). Each slot still takes a convex mixture of the tokens, and the routing
  share of modality ``k`` is exactly ``s[b, p, k]``.
  Why the paper's routing cannot do it alone: (i) the fusion reads each modality's MSoE summary
  directly, so a task is solved without its MToE slots choosing anything; (ii) with more slots than
  tokens the slots' mixtures can be unmixed downstream, so no slot needs to concentrate; (iii) with the
  router scale at 1 the cosine logits lie in [−1, 1], so one token can weigh at most e² times another;
  (iv) maximising I(M;E|T) raises H(M|T), pushing p(m|t) towards the uniform, not towards the modality
  that carries the task.
- ``routing_alignment`` (weight, default 1): the gate is trained to agree with the ablation contribution:
  after each training forward, the head is run again (no gradient) with each modality masked in turn;
  the increase of each sample's task loss, kept where positive and normalised over the modalities, is
  the target of a cross-entropy on ``s``, each sample weighted by its total increase (a sample whose loss
  no masking moves says nothing about which modality matters; skipped where no ablation raises the loss).
  It lives in :meth:`M4oE.loss` (training mode), so a plain PyTorch loop over ``model.loss`` gets it, as
  the fine-tuning pipeline does.
- ``gate_scale`` (default 8): the gate's logits ``⟨q_p, ·⟩ + c[p, k]`` are multiplied by it, so that an
  optimiser step of size ~lr moves the gate as fast as the rest of the head (at scale 1, AdamW at 3e-3
  left the gate near uniform after a few dozen steps: routing shares 0.47-0.55 on a planted set where the
  ablation put > 0.9 on the right modality).

Options that give neurokit's earlier, non-release behaviour (off): ``msoe_feeds_mtoe`` (MToE reads
the MSoE outputs), ``per_slot_combine`` (combine softmax over experts per slot), ``share_weighted_fusion``
(fusion tokens scaled by routing shares), ``focal_gamma=None`` (plain cross-entropy / BCE).

A modality absent from a sample is masked: its tokens feed no slot and its mean token is left out of
the fusion. Modality contributions (:meth:`M4oE.contributions`) come by two measures:
``contributions("routing")`` (the default), the share of MToE dispatch mass that a task's slots draw from each
modality's tokens, and ``contributions("ablation", targets)``, the share of the task loss's increase when each
modality is masked (:meth:`M4oE.ablation`). **Routing mass is not causal importance**: a slot may read a
modality heavily and still ignore what it reads; the ablation measures what masking a modality does.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Mapping, cast

import torch
import torch.nn as nn
import torch.nn.functional as F

from neurokit._utils.errors import ConfigError
from neurokit.models.moe import SoftMoE, SoftMoEBlock

#: expert counts and depths of the paper / release (``preset="paper"``) and a size that trains on 2 CPU cores
PRESETS: dict[str, dict[str, Any]] = {
    "paper": dict(
        msoe_depth=2, msoe_experts=32, mtoe_experts=128, fusion_depth=2, fusion_experts=16, n_heads=8, mlp_ratio=4.0
    ),
    "small": dict(
        msoe_depth=1, msoe_experts=4, mtoe_experts=8, fusion_depth=2, fusion_experts=4, n_heads=4, mlp_ratio=2.0
    ),
}
TASK_KINDS = ("binary", "multiclass", "regression")


@dataclass
class TaskSpec:
    """One prediction task of an M4oE head.

    Attributes
    ----------
    name : str
        The task's name (the key of its logits).
    kind : {"binary", "multiclass", "regression"}
        :data:`TASK_KINDS`.
    n_outputs : int
        Logits; forced to 1 for binary and regression tasks.
    class_frequencies : list of float or None
        One per class, summing to 1 (the training split's): the focal loss weights α = 1 − frequency;
        ``None``: each batch's own frequencies.

    Raises
    ------
    ConfigError
        An unknown ``kind``, or ``class_frequencies`` that do not fit the task's classes.

    Examples
    --------
    >>> TaskSpec("stage", "multiclass", n_outputs=5).n_outputs, TaskSpec("apnea", "binary", n_outputs=3).n_outputs
    (5, 1)
    """

    name: str
    kind: str
    n_outputs: int = 1
    class_frequencies: list[float] | None = None

    def __post_init__(self) -> None:
        if self.kind not in TASK_KINDS:
            raise ConfigError(f"task {self.name!r}: kind={self.kind!r}; allowed: {TASK_KINDS}")
        if self.kind != "multiclass":
            self.n_outputs = 1
        if self.class_frequencies is not None:
            k = 2 if self.kind == "binary" else self.n_outputs
            if self.kind == "regression" or len(self.class_frequencies) != k:
                raise ConfigError(
                    f"task {self.name!r}: class_frequencies={self.class_frequencies} does not fit a "
                    f"{self.kind} task with {k} classes"
                )


@dataclass
class M4oEConfig:
    """Sizes and options of an :class:`M4oE` head.

    ``share_weighted_fusion`` scales each modality's fusion token by the task's routing share of that
    modality. It is off because it is in neither the paper nor the release, and it did not make the
    shares follow the data (planted set: 0.38 on the right modality whose token share is 0.22): the
    fusion's linear maps undo a scaling. ``msoe_feeds_mtoe`` (MToE reads the MSoE outputs, in series)
    and ``per_slot_combine`` (each slot gets a whole token's mass) are off for the same first reason.

    Attributes
    ----------
    in_dim : int
        Width of the backbone's tokens.
    modalities : list of str
        The modalities' names, once each.
    tasks : list of dict
        :class:`TaskSpec` fields of each task (names given once each).
    dim : int or None
        Width inside the head (default ``in_dim``); a multiple of ``n_heads``.
    preset : {"paper", "small"}
        Fills the sizes not given (``"paper"``: MSoE 2 blocks × 32 experts, MToE 128 experts, fusion 2 blocks
        × 16 experts, 8 heads, MLP ratio 4 — release ``main.py``/``models_m4oe.py``; ``"small"``: 1 × 4, 8,
        2 × 4, 4 heads, ratio 2).
    msoe_depth, msoe_experts, mtoe_experts, fusion_depth, fusion_experts, n_heads : int or None
        Sizes (``None``: the preset's).
    mlp_ratio : float or None
        Expert MLP width over ``dim`` (``None``: the preset's).
    alpha : float
        Weight ≥ 0 of the ``−α · I(M; E | T)`` term of the loss (0.1).
    focal_gamma : float or None
        Focal loss γ (release: 2); ``None``: plain cross-entropy / BCE (a neurokit option).
    dropout : float
        Dropout in the head.
    modality_gate : bool
        neurokit's modality gate of the MToE slots (see the module docstring).
    routing_alignment : float
        Weight ≥ 0 of the loss that trains the gate on the ablation contributions (needs ``modality_gate``).
    gate_scale : float
        Logit scale > 0 of the modality gate (8).
    msoe_feeds_mtoe, per_slot_combine, share_weighted_fusion : bool
        neurokit's earlier, non-release head (off).
    extra : dict
        Free-form entries recorded with the config.

    Raises
    ------
    ConfigError
        Unknown preset, no modality or a modality named twice, tasks not given once each, ``dim`` not a
        multiple of ``n_heads``, or an option out of range.

    Examples
    --------
    >>> cfg = M4oEConfig(in_dim=16, modalities=["eeg", "ecg"], tasks=[{"name": "t", "kind": "binary"}], preset="small")
    >>> cfg.dim, cfg.mtoe_experts
    (16, 8)
    """

    in_dim: int
    modalities: list[str]
    tasks: list[dict]
    dim: int | None = None
    preset: str = "paper"
    msoe_depth: int | None = None
    msoe_experts: int | None = None
    mtoe_experts: int | None = None
    fusion_depth: int | None = None
    fusion_experts: int | None = None
    n_heads: int | None = None
    mlp_ratio: float | None = None
    alpha: float = 0.1
    focal_gamma: float | None = 2.0
    dropout: float = 0.0
    modality_gate: bool = True
    routing_alignment: float = 1.0
    gate_scale: float = 8.0
    msoe_feeds_mtoe: bool = False
    per_slot_combine: bool = False
    share_weighted_fusion: bool = False
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
        # the preset has every size, so none is left None here
        assert self.dim is not None and self.n_heads is not None
        if self.dim % self.n_heads:
            raise ConfigError(f"dim={self.dim} is not a multiple of n_heads={self.n_heads}")
        if self.alpha < 0:
            raise ConfigError(
                f"alpha={self.alpha}: must be >= 0 (the weight of the -alpha * I(M;E|T) term; a negative "
                "value would penalise the mutual information the head is meant to gain)"
            )
        if self.focal_gamma is not None and self.focal_gamma < 0:
            raise ConfigError(f"focal_gamma={self.focal_gamma}: must be >= 0 (release: 2; None for cross-entropy)")
        if self.gate_scale <= 0:
            raise ConfigError(f"gate_scale={self.gate_scale}: must be > 0 (the modality gate's logit scale)")
        if self.routing_alignment < 0:
            raise ConfigError(f"routing_alignment={self.routing_alignment}: must be >= 0")
        if self.routing_alignment > 0 and not self.modality_gate:
            raise ConfigError(
                "routing_alignment trains the modality gate; with modality_gate=False set routing_alignment=0"
            )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def conditional_mutual_information(joint: torch.Tensor, eps: float = 1e-12) -> torch.Tensor:
    """``I(M; E | T) = Σ_t p(t) Σ_{m,e} p(m,e|t) log[p(m,e|t) / (p(m|t) p(e|t))]`` in nats (M4oE paper's
    formula; its sign: the loss subtracts ``α · I``).

    Parameters
    ----------
    joint : Tensor ``(n_modalities, n_experts, n_tasks)``
        Non-negative masses ``p(m, e, t)`` (normalised here; any positive total works).

    Returns
    -------
    Tensor, scalar, differentiable. Terms with ``p(m,e|t) = 0`` count 0 (``0 log 0 = 0``); tasks with no
    mass are skipped.

    Examples
    --------
    >>> joint = torch.tensor([[[1.0], [0.0]], [[0.0], [1.0]]])  # modality m → expert m
    >>> round(float(conditional_mutual_information(joint)), 4)  # log 2
    0.6931
    """
    p = joint / joint.sum().clamp_min(eps)
    p_t = p.sum(dim=(0, 1))  # (T,)
    p_me_t = p / p_t.clamp_min(eps)
    p_m_t = p_me_t.sum(dim=1, keepdim=True)
    p_e_t = p_me_t.sum(dim=0, keepdim=True)
    ratio = p_me_t / (p_m_t * p_e_t).clamp_min(eps)
    terms = torch.where(p_me_t > 0, p_me_t * torch.log(ratio.clamp_min(eps)), torch.zeros_like(p_me_t))
    return (p_t * terms.sum(dim=(0, 1))).sum()


def class_weights_from_frequencies(freq: torch.Tensor | list[float]) -> torch.Tensor:
    """Focal-loss class weights of the M4oE release (``main.py``: ``1 - class_dis / sum(class_dis)``).

    Parameters
    ----------
    freq : ``(K,)`` class counts or frequencies (normalised here)

    Returns
    -------
    Tensor ``(K,)`` float: ``1 − freq / Σ freq``.

    Examples
    --------
    >>> class_weights_from_frequencies([3, 1]).tolist()
    [0.25, 0.75]
    """
    f = torch.as_tensor(freq, dtype=torch.float32)
    return 1.0 - f / f.sum().clamp_min(1e-12)


def focal_loss(
    logits: torch.Tensor,
    target: torch.Tensor,
    gamma: float = 2.0,
    alpha: torch.Tensor | None = None,
    reduction: str = "mean",
) -> torch.Tensor:
    """Focal loss (Lin et al. 2017) as the M4oE release writes it (``main.py`` ``FocalLoss``):
    ``−α_y (1 − p_y)^γ log p_y``, averaged over the batch (``reduction="none"``: per sample ``(B,)``).

    Parameters
    ----------
    logits : ``(B,)`` one logit (binary, ``target`` in {0, 1}) or ``(B, K)`` (``target`` class indices)
    gamma : focusing parameter (release: 2; 0 with ``alpha=None`` gives cross-entropy)
    alpha : ``(K,)`` class weights (K = 2 for one binary logit: weights of class 0 and 1), e.g.
        :func:`class_weights_from_frequencies`; ``None``: 1 for every class

    Examples
    --------
    >>> round(float(focal_loss(torch.tensor([0.0]), torch.tensor([1]), 2.0, torch.tensor([0.3, 0.7]))), 4)  # 0.7·0.25·log 2
    0.1213
    """
    if logits.ndim == 1:
        logp = torch.where(target.bool(), F.logsigmoid(logits), F.logsigmoid(-logits))
    else:
        logp = torch.log_softmax(logits, dim=-1).gather(1, target.long()[:, None])[:, 0]
    loss = -(1 - logp.exp()).pow(gamma) * logp
    if alpha is not None:
        loss = loss * alpha.to(loss)[target.long()]
    return loss if reduction == "none" else loss.mean()


class M4oE(nn.Module):
    """The M4oE head over per-modality token sets.

    Parameters
    ----------
    config : M4oEConfig

    Notes
    -----

    Forward pass::

        tokens : mapping modality name → Tensor ``(B, m_k, in_dim)``
            Every modality of the config, or a subset (the others count as absent for every sample).
        present : mapping modality name → bool Tensor ``(B,)``, optional
            Per-sample presence (missing tests); default all present.

    Returns a dict task name → logits ``(B,)`` (binary, regression) or ``(B, K)`` (multiclass). The
    MToE routing of the call is kept in ``self.last`` (``dispatch``/``combine``/``logits``
    ``(B, M, E, T)``, the token → modality index ``(M,)``, the token mask ``(B, M)``, the modality gate
    ``(B, T, K)`` or ``None``) for :meth:`contributions` and :meth:`cmi`.

    Raises
    ------
    ConfigError
        A token set names a modality the head was not built for, or its width is not ``in_dim``; a
        sample with no modality present.

    Examples
    --------
    >>> cfg = M4oEConfig(in_dim=8, modalities=["eeg", "ecg"], tasks=[dict(name="a", kind="binary")], preset="small")
    >>> head = M4oE(cfg)
    >>> head({"eeg": torch.randn(2, 6, 8), "ecg": torch.randn(2, 1, 8)})["a"].shape
    torch.Size([2])
    >>> head.contributions().shape  # (samples, tasks, modalities)
    torch.Size([2, 1, 2])
    """

    def __init__(self, config: M4oEConfig) -> None:
        super().__init__()
        c = self.config = config
        # M4oEConfig.__post_init__ filled every size from the preset
        assert (
            c.dim is not None
            and c.n_heads is not None
            and c.mlp_ratio is not None
            and c.msoe_depth is not None
            and c.msoe_experts is not None
            and c.mtoe_experts is not None
            and c.fusion_depth is not None
            and c.fusion_experts is not None
        )
        self.tasks = [TaskSpec(**t) for t in c.tasks]
        self.modalities = list(c.modalities)
        d = self.dim = c.dim
        hid = int(c.mlp_ratio * d)
        self.proj = nn.Identity() if c.in_dim == d else nn.Linear(c.in_dim, d)
        self.in_norm = nn.LayerNorm(d)
        # modality embeddings (neurokit's: one backbone encodes every modality, so its tokens look alike
        # across modalities), as large as the normalised tokens so routing can tell modalities apart
        self.modality_embed = nn.Parameter(torch.randn(len(self.modalities), d))
        self.msoe = nn.ModuleDict(
            {
                m: nn.ModuleList(
                    [SoftMoEBlock(d, c.n_heads, c.msoe_experts, 1, hid, c.dropout) for _ in range(c.msoe_depth)]
                )
                for m in self.modalities
            }
        )
        T, K = len(self.tasks), len(self.modalities)
        self.mtoe_norm = nn.LayerNorm(d)
        self.mtoe = SoftMoE(
            d, c.mtoe_experts, T, hid, keep_slot_axis=True, per_slot_combine=c.per_slot_combine, slot_embed=True
        )
        if c.modality_gate:
            self.gate_query = nn.Parameter(torch.zeros(T, d))
            self.gate_bias = nn.Parameter(torch.zeros(T, K))
        self.fusion = nn.ModuleList(
            [SoftMoEBlock(d, c.n_heads, c.fusion_experts, 1, hid, c.dropout) for _ in range(c.fusion_depth)]
        )
        self.out_norm = nn.LayerNorm(d)
        self.heads = nn.ModuleDict({t.name: nn.Linear(d, t.n_outputs) for t in self.tasks})
        self.last: dict[str, Any] = {}

    @property
    def task_names(self) -> list[str]:
        return [t.name for t in self.tasks]

    def forward(
        self, tokens: Mapping[str, torch.Tensor], present: Mapping[str, torch.Tensor] | None = None
    ) -> dict[str, torch.Tensor]:
        unknown = [m for m in tokens if m not in self.modalities]
        if unknown:
            raise ConfigError(f"modalities {unknown} are not among the head's {self.modalities}")
        if not tokens:
            raise ConfigError("no modality tokens given")
        c = self.config
        B = next(iter(tokens.values())).shape[0]
        dev = next(iter(tokens.values())).device
        seqs, masks, owner, means, mean_mask = [], [], [], [], []
        for k, m in enumerate(self.modalities):
            if m not in tokens:
                means.append(torch.zeros(B, self.dim, device=dev))
                mean_mask.append(torch.zeros(B, dtype=torch.bool, device=dev))
                continue
            x = tokens[m]
            if x.ndim != 3 or x.shape[-1] != c.in_dim:
                raise ConfigError(f"modality {m!r}: tokens of shape {tuple(x.shape)}, expected (B, m, {c.in_dim})")
            h0 = self.in_norm(self.proj(x)) + self.modality_embed[k]
            pres = (
                torch.ones(B, dtype=torch.bool, device=dev)
                if present is None or m not in present
                else present[m].bool()
            )
            # an absent modality still runs through its stack (on an unmasked view) so the shapes stay
            # static; its tokens are then masked out everywhere downstream
            h = h0
            for blk in cast(nn.ModuleList, self.msoe[m]):
                h = blk(h)
            seqs.append(h if c.msoe_feeds_mtoe else h0)  # release: MToE reads the backbone tokens
            masks.append(pres[:, None].expand(B, h.shape[1]))
            owner.append(torch.full((h.shape[1],), k, dtype=torch.long, device=dev))
            means.append(h.mean(dim=1) * pres[:, None])
            mean_mask.append(pres)
        x = self.mtoe_norm(torch.cat(seqs, dim=1))
        mask = torch.cat(masks, dim=1)
        if not mask.any(dim=1).all():
            raise ConfigError("a sample has no modality present; at least one is needed")
        own = torch.cat(owner)
        gate = self._gate(x, mask, own) if c.modality_gate else None
        dispatch = None
        if gate is not None:
            logits = self.mtoe.router_logits(x, mask)
            dispatch = self._gated_dispatch(logits, gate, own, mask)
        y = self.mtoe(x, mask, dispatch=dispatch)  # (B, T, M, D)
        w = mask[:, None, :, None].float()
        task_tok = (y * w).sum(dim=2) / w.sum(dim=2)  # (B, T, D): what task p's slots read, nothing else
        T, K = len(self.tasks), len(self.modalities)
        r = self.mtoe.last_routing
        self.last = {
            "dispatch": r["dispatch"],
            "combine": r["combine"],
            "logits": r["logits"],
            "owner": own,
            "mask": mask,
            "gate": gate,
            "inputs": (dict(tokens), None if present is None else dict(present)),
        }
        mods = torch.stack(means, dim=1)[:, None].expand(B, T, K, -1)  # (B, T, K, D)
        seq = torch.cat([task_tok[:, :, None], mods], dim=2)  # (B, T, 1 + K, D)
        if c.share_weighted_fusion:
            wts = torch.cat([torch.ones(B, T, 1, device=dev), self.contributions()], dim=2)
            seq = seq * wts[..., None]
        fmask = torch.cat([torch.ones(B, 1, dtype=torch.bool, device=dev), torch.stack(mean_mask, 1)], dim=1)
        z = seq.reshape(B * T, 1 + K, -1)
        fmask = fmask.repeat_interleave(T, dim=0)
        for blk in self.fusion:  # shared across tasks (release blocks5)
            z = blk(z, fmask)
        z = self.out_norm(z[:, 0]).reshape(B, T, -1)
        out = {}
        for p, t in enumerate(self.tasks):
            o = self.heads[t.name](z[:, p])
            out[t.name] = o.squeeze(-1) if t.n_outputs == 1 else o
        return out

    # ------------------------------------------------------------------ neurokit's modality gate
    def _gate(self, x: torch.Tensor, mask: torch.Tensor, owner: torch.Tensor) -> torch.Tensor:
        """``s`` ``(B, T, K)``: per task a softmax over the sample's present modalities of
        ``⟨q_p, mean normalised token of k⟩ + c[p, k]`` (absent modalities 0). The summaries are
        detached: the gate learns to route, not to reshape the tokens."""
        onehot = F.one_hot(owner, len(self.modalities)).to(x.dtype)  # (M, K)
        wm = mask.to(x.dtype)[:, :, None] * onehot  # (B, M, K)
        n = wm.sum(dim=1)  # (B, K)
        summ = torch.einsum("bmk,bmd->bkd", wm, x.detach()) / n.clamp_min(1)[..., None]
        g = self.config.gate_scale * (torch.einsum("td,bkd->btk", self.gate_query, summ) + self.gate_bias)
        g = g.masked_fill((n == 0)[:, None, :], float("-inf"))
        return torch.softmax(g, dim=-1)

    def _gated_dispatch(
        self, logits: torch.Tensor, gate: torch.Tensor, owner: torch.Tensor, mask: torch.Tensor
    ) -> torch.Tensor:
        """Dispatch ``(B, M, E, T)``: ``gate[b, t, k(m)]`` × softmax of the router logits over modality
        ``k(m)``'s tokens. Sums to 1 over the real tokens for every slot."""
        parts = []
        for k in range(len(self.modalities)):
            sel = owner == k
            if not bool(sel.any()):
                continue
            lk = logits[:, sel].masked_fill(~mask[:, sel, None, None], -1e4)  # absent: uniform, then × gate 0
            dk = torch.softmax(lk, dim=1) * mask[:, sel, None, None]
            parts.append(dk * gate[:, :, k][:, None, None, :])
        return torch.cat(parts, dim=1)  # tokens are grouped by modality, in order

    # ------------------------------------------------------------------ routing read-outs
    def _by_modality(self, w: torch.Tensor) -> torch.Tensor:
        """Sum ``(B, M, E, T)`` routing weights over each modality's tokens → ``(B, K, E, T)``."""
        owner = self.last["owner"]
        onehot = F.one_hot(owner, len(self.modalities)).to(w.dtype)  # (M, K)
        return torch.einsum("bmet,mk->bket", w, onehot)

    def contributions(
        self,
        measure: str = "routing",
        targets: Mapping[str, torch.Tensor] | None = None,
        label_smoothing: float = 0.0,
    ) -> torch.Tensor:
        """Modality contributions of the last forward, ``(B, n_tasks, n_modalities)``, by one of two measures.

        Parameters
        ----------
        measure : ``"routing"`` (default) or ``"ablation"``
            ``"routing"``: the **routing share**. Entry ``[b, p, k]`` is the share of the dispatch mass of task
            ``p``'s MToE slots (summed over experts) that comes from modality ``k``'s tokens for sample ``b``
            (with ``modality_gate``: exactly the gate ``s[b, p, k]``); rows sum to 1. What the head reads, not
            what it needs: routing mass is not causal importance.
            ``"ablation"``: the **ablation share**, what the head needs. The increase of each sample's task
            loss when modality ``k`` is masked (:meth:`ablation`), kept where positive and normalised over the
            modalities; rows sum to 1, NaN where no masking raises the loss (or the task has no target).
            Runs the head ``K`` more times without gradient.
        targets : mapping task name → ``(B,)`` targets
            Needed by ``"ablation"`` (the loss is the task's :meth:`task_loss`).
        label_smoothing : float
            Of the ablation's task losses.

        Returns
        -------
        torch.Tensor
            ``(B, n_tasks, n_modalities)``, float.

        Raises
        ------
        ConfigError
            Another ``measure``, or ``"ablation"`` without ``targets``.

        Examples
        --------
        >>> cfg = M4oEConfig(in_dim=8, modalities=["a", "b"], tasks=[dict(name="t", kind="binary")], preset="small")
        >>> head = M4oE(cfg)
        >>> _ = head({"a": torch.randn(4, 2, 8), "b": torch.randn(4, 3, 8)})
        >>> head.contributions().sum(-1).allclose(torch.ones(4, 1))  # routing shares
        True
        >>> head.contributions("ablation", {"t": torch.tensor([0, 1, 1, 0])}).shape
        torch.Size([4, 1, 2])
        """
        if measure == "ablation":
            if targets is None:
                raise ConfigError("contributions('ablation') needs targets: task name -> (B,) targets")
            abl = self.ablation(targets, label_smoothing)
            B = self.last["mask"].shape[0]
            out = torch.full((B, len(self.tasks), len(self.modalities)), float("nan"), device=self.last["mask"].device)
            for n, d in abl.items():
                pos = torch.nan_to_num(d, nan=0.0).clamp_min(0)
                tot = pos.sum(dim=1, keepdim=True)
                out[:, self.task_names.index(n)] = torch.where(tot > 0, pos / tot.clamp_min(1e-12), float("nan"))
            return out
        if measure != "routing":
            raise ConfigError(f"contributions(measure={measure!r}): 'routing' (routing share) or 'ablation'")
        d = self._by_modality(self.last["dispatch"])  # (B, K, E, T)
        share = d.sum(dim=2)  # (B, K, T)
        return (share / share.sum(dim=1, keepdim=True)).permute(0, 2, 1)

    def routing_joint(self) -> torch.Tensor:
        """``p(m, e, t)`` of the last forward as un-normalised masses ``(K, E, T)``.

        As the release's ``MutualInformationLoss``: per sample, one softmax of the MToE router logits over
        tokens × experts × slots (masked tokens 0); then summed over each modality's tokens and over the
        samples. ``p(t)``, ``p(m|t)`` and ``p(e|m,t)`` all follow the logits.
        """
        lg = self.last["logits"]
        B = lg.shape[0]
        j = torch.softmax(lg.reshape(B, -1), dim=-1).reshape(lg.shape)
        return self._by_modality(torch.nan_to_num(j, nan=0.0)).sum(dim=0)

    def cmi(self) -> torch.Tensor:
        """``I(M; E | T)`` of the last forward (nats), differentiable."""
        return conditional_mutual_information(self.routing_joint())

    # ------------------------------------------------------------------ losses
    def task_loss(
        self,
        name: str,
        logits: torch.Tensor,
        target: torch.Tensor,
        label_smoothing: float = 0.0,
        reduction: str = "mean",
    ) -> torch.Tensor:
        """One task's loss (``reduction="none"``: per sample ``(B,)``).

        Classes: focal loss with γ = ``focal_gamma`` and α = 1 − class frequency (the task's
        ``class_frequencies``, else the batch's; release ``main.py``), or with ``focal_gamma=None``
        cross-entropy / BCE (``label_smoothing`` applies there only). Regression: squared error.
        """
        spec = next(t for t in self.tasks if t.name == name)
        g = self.config.focal_gamma
        if spec.kind == "regression":
            return F.mse_loss(logits, target.float(), reduction=reduction)
        if g is not None:
            k = 2 if spec.kind == "binary" else spec.n_outputs
            freq = (
                torch.as_tensor(spec.class_frequencies)
                if spec.class_frequencies is not None
                else torch.bincount(target.long().cpu(), minlength=k).float()
            )
            return focal_loss(logits, target, g, class_weights_from_frequencies(freq).to(logits.device), reduction)
        if spec.kind == "binary":
            return F.binary_cross_entropy_with_logits(logits, target.float(), reduction=reduction)
        return F.cross_entropy(logits, target.long(), label_smoothing=label_smoothing, reduction=reduction)

    @torch.no_grad()
    def ablation(
        self,
        targets: Mapping[str, torch.Tensor],
        label_smoothing: float = 0.0,
        outputs: Mapping[str, torch.Tensor] | None = None,
        return_outputs: bool = False,
    ):
        """Ablation contribution of the last forward's inputs: task → ``(B, K)`` increase of each sample's
        task loss when modality ``k``'s tokens are masked (``present[k] = False``), NaN where ``k`` is
        absent or the only modality present. Runs the head ``K`` more times without gradient; leaves
        ``self.last`` as it was. Measures what the head does without a modality (not the routing).
        ``outputs``: the last forward's outputs, if at hand (saves one forward). ``return_outputs``: also
        return modality → the outputs (task → logits) of the forward without it (the full forward's where
        it could not be dropped), for score changes over a dataset.

        Examples
        --------
        >>> cfg = M4oEConfig(in_dim=8, modalities=["a", "b"], tasks=[dict(name="t", kind="binary")], preset="small")
        >>> head = M4oE(cfg)
        >>> _ = head({"a": torch.randn(4, 2, 8), "b": torch.randn(4, 3, 8)})
        >>> head.ablation({"t": torch.tensor([0, 1, 1, 0])})["t"].shape  # (samples, modalities)
        torch.Size([4, 2])
        """
        last = self.last
        tokens, present = last["inputs"]
        B = next(iter(tokens.values())).shape[0]
        dev = next(iter(tokens.values())).device
        pres = {
            m: (
                present[m].bool()
                if present is not None and m in present
                else torch.ones(B, dtype=torch.bool, device=dev)
            )
            for m in tokens
        }
        full = outputs if outputs is not None else self.forward(tokens, present)
        base = {n: self.task_loss(n, full[n], y, label_smoothing, "none") for n, y in targets.items()}
        out = {n: torch.full((B, len(self.modalities)), float("nan"), device=dev) for n in targets}
        dropped: dict[str, dict[str, torch.Tensor]] = {}
        for k, m in enumerate(self.modalities):
            if m not in tokens:
                continue
            others = torch.zeros(B, dtype=torch.bool, device=dev)
            for mm, pm in pres.items():
                if mm != m:
                    others |= pm
            ok = pres[m] & others
            if not bool(ok.any()):
                continue
            drop = {mm: (pm & ~ok if mm == m else pm) for mm, pm in pres.items()}
            o = self.forward(tokens, drop)
            dropped[m] = o
            for n, y in targets.items():
                d = self.task_loss(n, o[n], y, label_smoothing, "none") - base[n]
                out[n][:, k] = torch.where(ok, d, torch.full_like(d, float("nan")))
        self.last = last
        return (out, dropped) if return_outputs else out

    def alignment_loss(
        self,
        targets: Mapping[str, torch.Tensor],
        label_smoothing: float = 0.0,
        outputs: Mapping[str, torch.Tensor] | None = None,
    ) -> torch.Tensor:
        """neurokit's routing alignment (not the paper's): cross-entropy of the modality gate of the last
        forward against the ablation targets ``relu(Δloss) / Σ relu(Δloss)`` per sample and task
        (:meth:`ablation`), averaged over the samples with a positive ``Σ``; 0 without a gate or with one
        modality."""
        gate = self.last.get("gate")
        if gate is None or len(self.modalities) < 2:
            return torch.zeros(())
        abl = self.ablation(targets, label_smoothing, outputs)
        terms = []
        for n, d in abl.items():
            p = self.task_names.index(n)
            pos = torch.nan_to_num(d, nan=0.0).clamp_min(0)
            tot = pos.sum(dim=1, keepdim=True)
            keep = tot[:, 0] > 0
            if not bool(keep.any()):
                continue
            tgt = pos[keep] / tot[keep]
            ce = -(tgt * torch.log(gate[keep, p].clamp_min(1e-8))).sum(dim=1)
            wt = tot[keep, 0] / tot[keep, 0].sum()  # samples where masking changes the loss more weigh more
            terms.append((ce * wt).sum())
        return torch.stack(terms).sum() if terms else gate.sum() * 0.0

    def loss(
        self, outputs: Mapping[str, torch.Tensor], targets: Mapping[str, torch.Tensor], label_smoothing: float = 0.0
    ) -> tuple[torch.Tensor, dict[str, float]]:
        """``Σ_tasks L_task − α · I(M;E|T)`` (+ ``routing_alignment ·`` :meth:`alignment_loss` in training
        mode) for the tasks in ``targets`` (task name → ``(B,)`` targets; a task not listed has no label
        in this batch). Call right after the forward that made ``outputs``. Returns the loss and its
        parts (``routing_alignment`` among them when it was added).

        The routing alignment that makes the routing shares (:meth:`contributions`) follow the data is part
        of this loss: a plain training loop over ``model.loss`` in training mode (``model.train()``, the
        default) gets it, with no pipeline. It runs the head once more per modality (no gradient) each
        call; ``M4oEConfig(routing_alignment=0)`` turns it off, ``modality_gate=False, routing_alignment=0``
        gives the paper's routing alone (shares near the token shares). Give each task's
        ``class_frequencies`` for the release's focal-loss weights (else each batch's are used).
        """
        parts = {n: self.task_loss(n, outputs[n], y, label_smoothing) for n, y in targets.items()}
        total = sum(parts.values())
        cmi = self.cmi()
        total = total - self.config.alpha * cmi
        extra = {}
        if self.training and self.config.routing_alignment > 0 and self.last.get("gate") is not None:
            al = self.alignment_loss(targets, label_smoothing, {n: o.detach() for n, o in outputs.items()})
            total = total + self.config.routing_alignment * al
            extra["routing_alignment"] = float(al.detach())
        return total, {
            **{f"loss_{k}": float(v.detach()) for k, v in parts.items()},
            "cmi": float(cmi.detach()),
            **extra,
        }
