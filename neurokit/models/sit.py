"""SiT: the surface vision transformer (Dahan et al., "Surface Vision Transformers", MIDL 2022, arXiv 2203.16414).

Input ``(B, C, N, V)``: ``C`` channels or frames, ``N`` icosahedral patches, ``V`` ico6 vertices per patch
(ico2: 320 × 153, ico3: 1280 × 45). Tokens are formed in one of two ways:

- ``temporal="channels"`` (default): N tokens of ``V·C`` features (``b c n v → b n (v c)``);
- ``temporal="concat"``: frame-major ``C·N`` tokens of ``V`` features (the "moving image" variant).

Each token goes through Linear(→ D) and gets its position (a fixed 1-D sin-cos code over the token index
0…n_tokens−1, or learned); with ``pool="cls"`` a cls token, which has no position, is prepended afterwards
(as the metrics-lab vsMAE encoders do, ``no_class_token_emb=True``), so the positions of a SiT with and
without cls token are the same and pretrained encoder weights load into either. A pre-norm transformer
(``dim_head`` 64, MLP 4·D) follows.
Presets: tiny D=192 / 3 heads, small 384 / 6, base 768 / 12, depth 12.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from typing import cast

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from neurokit._utils.errors import ConfigError
from neurokit.models.docs import fill_doc


@dataclass
class SiTConfig:
    """Architecture hyperparameters of :class:`SiT` (written into every checkpoint).

    Attributes
    ----------
    n_chans : int
        C: channels or frames per sample.
    n_patches : int
        N: icosahedral patches (ico2: 320, ico3: 1280).
    vertices_per_patch : int
        V: ico6 vertices per patch (ico2: 153, ico3: 45).
    n_outputs : int
        Head size; 0: no head, :meth:`SiT.forward` returns the pooled features.
    dim, depth, heads, dim_head : int
        Token width, layers, attention heads and head width (SiT-tiny: 192, 12, 3, 64).
    mlp_ratio : float
        MLP width over ``dim`` (4).
    dropout, emb_dropout : float
        Dropout in the transformer and after the embedding.
    pos_embedding : {"sincos", "learned", "sphere"}
        Position code: fixed 1-D sin-cos over the token index, learned, or from the patch centres on the
        sphere (:func:`sphere_code`; needs ``temporal="channels"``).
    temporal : {"channels", "concat"}
        Tokens: one per patch with ``V·C`` features, or frame-major ``C·N`` tokens of ``V`` features.
    pool : {"cls", "mean"}
        Pooled feature: the cls token, or the mean token.
    attn_bias : {"none", "distance"}
        :class:`DistanceBias` on the attention (needs ``temporal="channels"``).

    Raises
    ------
    ConfigError
        An unknown choice, a size below 1, or ``"sphere"`` / ``"distance"`` with ``temporal="concat"``.

    Examples
    --------
    >>> cfg = SiTConfig(n_chans=3, n_patches=320, vertices_per_patch=153)
    >>> cfg.n_tokens, cfg.token_dim
    (320, 459)
    """

    n_chans: int = 1
    n_patches: int = 320
    vertices_per_patch: int = 153
    n_outputs: int = 0
    dim: int = 192
    depth: int = 12
    heads: int = 3
    dim_head: int = 64
    mlp_ratio: float = 4.0
    dropout: float = 0.0
    emb_dropout: float = 0.0
    pos_embedding: str = "sincos"  # "sincos" | "learned" | "sphere"
    temporal: str = "channels"  # "channels" | "concat"
    pool: str = "cls"  # "cls" | "mean"
    attn_bias: str = "none"  # "none" | "distance"

    def __post_init__(self) -> None:
        for name, allowed in (
            ("pos_embedding", ("sincos", "learned", "sphere")),
            ("temporal", ("channels", "concat")),
            ("pool", ("cls", "mean")),
            ("attn_bias", ("none", "distance")),
        ):
            if getattr(self, name) not in allowed:
                raise ConfigError(f"SiTConfig.{name}={getattr(self, name)!r}; allowed: {', '.join(allowed)}")
        for name in ("n_chans", "n_patches", "vertices_per_patch", "dim", "depth", "heads", "dim_head"):
            if int(getattr(self, name)) < 1:
                raise ConfigError(f"SiTConfig.{name} must be ≥ 1, got {getattr(self, name)}")
        if self.attn_bias == "distance" and self.temporal != "channels":
            raise ConfigError(
                f"SiTConfig.attn_bias='distance' biases attention between patches, one token a patch: it needs "
                f"temporal='channels' (got {self.temporal!r})"
            )
        if self.pos_embedding == "sphere" and self.temporal != "channels":
            raise ConfigError(
                "SiTConfig.pos_embedding='sphere' codes where each patch lies, one token a patch: it needs "
                f"temporal='channels' (got {self.temporal!r}); use 'sincos' or 'learned' with 'concat'"
            )

    @property
    def n_tokens(self) -> int:
        return self.n_patches * (self.n_chans if self.temporal == "concat" else 1)

    @property
    def token_dim(self) -> int:
        return self.vertices_per_patch * (1 if self.temporal == "concat" else self.n_chans)

    def to_dict(self) -> dict:
        return asdict(self)


#: Size presets (Dahan et al. 2022, Table 1).
SIT_PRESETS: dict[str, dict] = {
    "sit_tiny": dict(dim=192, heads=3, depth=12),
    "sit_small": dict(dim=384, heads=6, depth=12),
    "sit_base": dict(dim=768, heads=12, depth=12),
}


@fill_doc
def sit_config(name: str = "sit_tiny", **overrides) -> SiTConfig:
    """Config of a size preset, with field overrides.

    Parameters
    ----------
    %(sit_presets)s
    **overrides
        :class:`SiTConfig` fields.

    Returns
    -------
    SiTConfig

    Raises
    ------
    ConfigError
        Unknown preset or field.

    Examples
    --------
    >>> sit_config("small", n_chans=3).dim
    384
    """
    key = name if name.startswith("sit_") else f"sit_{name}"
    if key not in SIT_PRESETS:
        short = ", ".join(k.removeprefix("sit_") for k in SIT_PRESETS)
        raise ConfigError(f"unknown SiT size={name!r}: expected one of {short}")
    try:
        return SiTConfig(**{**SIT_PRESETS[key], **overrides})
    except TypeError as exc:
        raise ConfigError(f"SiT config: {exc}") from exc


def sincos_1d(n: int, dim: int) -> torch.Tensor:
    """Fixed 1-D sine-cosine position code (Vaswani et al. 2017, §3.5).

    Parameters
    ----------
    n : int
        Positions.
    dim : int
        Code width (an odd last column stays 0).

    Returns
    -------
    Tensor, shape ``(n, dim)``
        float32; even columns sines, odd columns cosines.

    Examples
    --------
    >>> sincos_1d(4, 6)[0].tolist()
    [0.0, 1.0, 0.0, 1.0, 0.0, 1.0]
    """
    pos = torch.arange(n, dtype=torch.float64)[:, None]
    half = dim // 2
    freq = torch.exp(-math.log(10000.0) * torch.arange(half, dtype=torch.float64) / max(half, 1))
    ang = pos * freq[None]
    pe = torch.zeros(n, dim, dtype=torch.float64)
    pe[:, 0 : 2 * half : 2] = torch.sin(ang)
    pe[:, 1 : 2 * half : 2] = torch.cos(ang)
    return pe.float()


def sphere_code(n_patches: int, vertices_per_patch: int, dim: int) -> torch.Tensor:
    """Fixed position code from where each patch lies on the sphere.

    Sines and cosines of each coordinate of the patch centre (:func:`~neurokit.geometry.patches.patch_centres`,
    unit sphere) at ``dim // 6`` angular frequencies spaced geometrically from 1 to ``2π / spacing`` (the mean
    distance between neighbouring patch centres), the remaining dimensions 0. The dot product of two codes is
    a sum of cosines of the coordinate differences, largest between neighbours, so attention can find a
    patch's neighbours from the code alone (a 1-D code over the patch index only knows the quad-tree's order).

    Parameters
    ----------
    n_patches, vertices_per_patch : int
        The patch grid; shapes that are no ico-k patch grid on ico6 (made-up test shapes) fall back to
        :func:`sincos_1d`.
    dim : int
        Code width.

    Returns
    -------
    Tensor, shape ``(n_patches, dim)``
        float32.

    Examples
    --------
    >>> sphere_code(320, 153, 12).shape
    torch.Size([320, 12])
    """
    from neurokit.geometry.patches import grid_of, patch_centres

    k = grid_of(n_patches, vertices_per_patch)
    f = dim // 6
    if k is None or f < 1:
        return sincos_1d(n_patches, dim)
    c = torch.as_tensor(np.array(patch_centres(k)), dtype=torch.float64)  # (N, 3)
    spacing = math.sqrt(4 * math.pi / n_patches)
    freq = torch.logspace(0.0, math.log10(2 * math.pi / spacing), f, dtype=torch.float64)
    ang = c[:, :, None] * freq[None, None, :]  # (N, 3, f)
    pe = torch.zeros(n_patches, dim, dtype=torch.float64)
    pe[:, : 6 * f] = torch.cat([torch.sin(ang), torch.cos(ang)], dim=-1).reshape(n_patches, 6 * f)
    return pe.float()


class Attention(nn.Module):
    """Pre-norm multi-head self-attention: ``LayerNorm → QKV → SDPA → Linear → Dropout``.

    ``forward(x, bias=None)``: ``(B, L, dim)`` → ``(B, L, dim)``; ``bias`` an additive attention bias
    ``(B or 1, heads, L, L)``.

    Parameters
    ----------
    dim : int
        Token width.
    heads : int
        Attention heads.
    dim_head : int
        Width of each head.
    dropout : float
        Dropout on the attention weights (training only) and on the output.

    Examples
    --------
    >>> Attention(16, heads=2, dim_head=8, dropout=0.0)(torch.randn(2, 5, 16)).shape
    torch.Size([2, 5, 16])
    """

    def __init__(self, dim: int, heads: int, dim_head: int, dropout: float) -> None:
        super().__init__()
        inner = heads * dim_head
        self.heads = heads
        self.norm = nn.LayerNorm(dim)
        self.to_qkv = nn.Linear(dim, 3 * inner, bias=False)
        self.to_out = nn.Sequential(nn.Linear(inner, dim), nn.Dropout(dropout))
        self.dropout = dropout

    def forward(self, x: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
        B, L, _ = x.shape
        q, k, v = self.to_qkv(self.norm(x)).reshape(B, L, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        if bias is not None:
            bias = bias.to(q.dtype)
        o = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, dropout_p=self.dropout if self.training else 0.0)
        return self.to_out(o.transpose(1, 2).reshape(B, L, -1))


class FeedForward(nn.Module):
    """Pre-norm MLP block: ``LayerNorm → Linear(dim → hidden) → GELU → Dropout → Linear(hidden → dim) → Dropout``.

    Parameters
    ----------
    dim : int
        Token width.
    hidden : int
        Hidden width.
    dropout : float
        Dropout probability.

    Examples
    --------
    >>> FeedForward(16, 32, 0.0)(torch.randn(2, 5, 16)).shape
    torch.Size([2, 5, 16])
    """

    def __init__(self, dim: int, hidden: int, dropout: float) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.LayerNorm(dim),
            nn.Linear(dim, hidden),
            nn.GELU(),
            nn.Dropout(dropout),
            nn.Linear(hidden, dim),
            nn.Dropout(dropout),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class Transformer(nn.Module):
    """Pre-norm transformer: ``depth`` × (x + Attn(LN x); x + MLP(LN x)), then LayerNorm.

    ``forward(x, bias=None)``: ``(B, L, dim)`` → ``(B, L, dim)``.

    Parameters
    ----------
    dim : int
        Token width.
    depth : int
        Layers.
    heads, dim_head : int
        Attention heads and their width.
    mlp_dim : int
        Hidden width of the MLPs.
    dropout : float
        Dropout probability.

    Examples
    --------
    >>> Transformer(16, depth=2, heads=2, dim_head=8, mlp_dim=32)(torch.randn(2, 5, 16)).shape
    torch.Size([2, 5, 16])
    """

    def __init__(self, dim: int, depth: int, heads: int, dim_head: int, mlp_dim: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.layers = nn.ModuleList(
            nn.ModuleList([Attention(dim, heads, dim_head, dropout), FeedForward(dim, mlp_dim, dropout)])
            for _ in range(depth)
        )
        self.norm = nn.LayerNorm(dim)

    def forward(self, x: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
        """``x`` ``(B, L, dim)``; ``bias``: an additive attention bias ``(B or 1, heads, L, L)``, optional."""
        for layer in self.layers:
            attn, ff = cast(nn.ModuleList, layer)  # each layer: [Attention, FeedForward]
            x = x + attn(x, bias)
            x = x + ff(x)
        return self.norm(x)


class DistanceBias(nn.Module):
    """Attention bias from where patches lie on the sphere: ``−exp(a_h) · |c_i − c_j|² / s²`` between the tokens
    of patches ``i`` and ``j`` for head ``h`` (``c``: patch centres on the unit sphere,
    :func:`~neurokit.geometry.patches.patch_centres`; ``s``: the mean spacing of neighbouring centres). The
    learned widths ``a_h`` start spread over the heads, from 1 to 1/64 per squared spacing, so some heads start
    local (a patch's ring of neighbours) and others wide; a patch grid's signal is smooth, and per-frame z-scored
    data average to 0 over the whole sphere, so attention that starts uniform has nothing to learn from.
    Shapes that are no ico-k grid (made-up test shapes) get no bias.

    Parameters
    ----------
    n_patches, vertices_per_patch : int
        The patch grid (ico-k on ico6, :func:`~neurokit.geometry.patches.grid_of`).
    heads : int
    """

    centres: torch.Tensor

    def __init__(self, n_patches: int, vertices_per_patch: int, heads: int) -> None:
        super().__init__()
        from neurokit.geometry.patches import grid_of, patch_centres

        k = grid_of(n_patches, vertices_per_patch)
        spacing = math.sqrt(4 * math.pi / n_patches)
        c = np.array(patch_centres(k)) / spacing if k is not None else np.zeros((n_patches, 3))
        self.register_buffer("centres", torch.as_tensor(c, dtype=torch.float32), persistent=False)
        self.active = k is not None
        self.log_width = nn.Parameter(torch.linspace(0.0, -math.log(64.0), heads))

    def forward(self, index: torch.Tensor | None = None, *, extra: int = 0) -> torch.Tensor | None:
        """The bias ``(B or 1, heads, L, L)`` between the patches ``index`` ``(B, L)`` (default all, in order);
        ``extra`` leading tokens with no position (a cls token) get 0 to and from every token."""
        if not self.active:
            return None
        c = self.centres if index is None else self.centres[index]  # (L, 3) or (B, L, 3)
        if c.ndim == 2:
            c = c[None]
        d2 = torch.cdist(c, c).pow(2)  # (B, L, L)
        bias = -self.log_width.exp()[None, :, None, None] * d2[:, None]
        if extra:
            bias = F.pad(bias, (extra, 0, extra, 0))
        return bias


def to_tokens(x: torch.Tensor, temporal: str) -> torch.Tensor:
    """Surface samples as tokens: ``(B, C, N, V)`` → ``(B, N, V·C)`` (``"channels"``) or ``(B, C·N, V)``
    frame-major (``"concat"``).

    Parameters
    ----------
    x : Tensor, shape ``(B, C, N, V)``
        Batch, frames, patches, vertices per patch.
    temporal : {"channels", "concat"}
        The token layout (:attr:`SiTConfig.temporal`).

    Returns
    -------
    Tensor
        The tokens (inverse: :func:`~neurokit.models.vsmae.from_tokens`).

    Examples
    --------
    >>> x = torch.zeros(2, 3, 4, 5)
    >>> to_tokens(x, "channels").shape, to_tokens(x, "concat").shape
    (torch.Size([2, 4, 15]), torch.Size([2, 12, 5]))
    """
    B, C, N, V = x.shape
    if temporal == "channels":
        return x.permute(0, 2, 3, 1).reshape(B, N, V * C)
    return x.reshape(B, C * N, V)


class SiT(nn.Module):
    """Surface vision transformer. See the module docstring for shapes.

    Parameters
    ----------
    config : SiTConfig, optional
    **kwargs
        Config fields (braindecode vocabulary: ``n_chans``, ``n_outputs``), used when ``config`` is None.
    """

    def __init__(self, config: SiTConfig | None = None, **kwargs) -> None:
        super().__init__()
        cfg = config if config is not None else SiTConfig(**kwargs)
        if config is not None and kwargs:
            cfg = replace(config, **kwargs)
        self.config = cfg
        D = cfg.dim
        self.to_patch_embedding = nn.Linear(cfg.token_dim, D)
        n_pos = cfg.n_tokens  # patch tokens only: the cls token gets no position
        if cfg.pos_embedding == "learned":
            self.pos_embedding = nn.Parameter(torch.randn(1, n_pos, D) * 0.02)
        elif cfg.pos_embedding == "sphere":
            code = sphere_code(cfg.n_patches, cfg.vertices_per_patch, D)
            self.register_buffer("pos_embedding", code[None], persistent=False)
        else:
            self.register_buffer("pos_embedding", sincos_1d(n_pos, D)[None], persistent=False)
        self.cls_token = nn.Parameter(torch.randn(1, 1, D) * 0.02) if cfg.pool == "cls" else None
        self.dropout = nn.Dropout(cfg.emb_dropout)
        self.transformer = Transformer(D, cfg.depth, cfg.heads, cfg.dim_head, int(cfg.mlp_ratio * D), cfg.dropout)
        self.attn_bias = (
            DistanceBias(cfg.n_patches, cfg.vertices_per_patch, cfg.heads) if cfg.attn_bias == "distance" else None
        )
        self.head = nn.Linear(D, cfg.n_outputs) if cfg.n_outputs else nn.Identity()

    def _check(self, x: torch.Tensor) -> None:
        c = self.config
        if x.ndim != 4 or tuple(x.shape[1:]) != (c.n_chans, c.n_patches, c.vertices_per_patch):
            raise ConfigError(
                f"SiT expects input (B, {c.n_chans}, {c.n_patches}, {c.vertices_per_patch}) = (B, C, N, V); "
                f"got {tuple(x.shape)}"
            )

    def forward_features(self, x: torch.Tensor) -> torch.Tensor:
        """``(B, C, N, V)`` → token features ``(B, [1 +] n_tokens, D)`` (cls first when ``pool="cls"``)."""
        self._check(x)
        t = self.to_patch_embedding(to_tokens(x, self.config.temporal))
        t = t + self.pos_embedding.to(t.dtype)
        if self.cls_token is not None:
            t = torch.cat([self.cls_token.to(t.dtype).expand(len(t), -1, -1), t], dim=1)
        bias = None if self.attn_bias is None else self.attn_bias(extra=0 if self.cls_token is None else 1)
        return self.transformer(self.dropout(t), bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``(B, C, N, V)`` → ``(B, n_outputs)`` (or pooled ``(B, D)`` features without a head)."""
        h = self.forward_features(x)
        pooled = h[:, 0] if self.config.pool == "cls" else h.mean(dim=1)
        return self.head(pooled)

    @classmethod
    @fill_doc
    def from_pretrained(cls, source, *, map_location="cpu", allow_partial: bool = False, **config) -> "SiT":
        """The SiT encoder of a neurokit checkpoint, with its weights.

        Parameters
        ----------
        source : str or Path
            A pretraining checkpoint of the ``sit`` (vsMAE) or ``clip`` family (its ``encoder.*`` tensors,
            architecture from the recorded ``model_config``), a fine-tuning checkpoint of either (its
            fine-tuned backbone, the head left out), a bare SiT state dict (architecture from ``**config``),
            or Hub weights ``hub:ORG/NAME[/FILE][@REVISION]``. Read with ``torch.load(weights_only=True)``.
        %(map_location)s
        %(allow_partial)s
        **config
            :class:`SiTConfig` fields over the recorded ones (e.g. ``dropout=0.1``). ``n_outputs=k`` adds a
            new ``Linear(dim, k)`` head (initialised, not loaded) to the pretrained encoder.

        Returns
        -------
        SiT
            With ``pretrained_info`` (source, SHA-256, family, kind, tensors loaded/total).

        Raises
        ------
        neurokit.models.pretrained.PretrainedError
            A checkpoint of another family (e.g. CBraMod; the message names both), a file that would run
            code on loading, or weights that do not fit.
        ConfigError
            Unknown config field.

        Examples
        --------
        >>> import neurokit, tempfile, os
        >>> from neurokit.models.checkpoint import save_checkpoint
        >>> m = neurokit.create_model("sit", n_layers=1, n_chans=2, n_patches=20, vertices_per_patch=45)
        >>> p = save_checkpoint(os.path.join(tempfile.mkdtemp(), "last.pt"), {"kind": "pretrain", "model": "sit",
        ...                     "model_config": m.config.to_dict(), "state_dict": m.state_dict()})
        >>> SiT.from_pretrained(p, n_outputs=2).config.n_outputs
        2
        """
        from neurokit.models.config import config_from_dict
        from neurokit.models.pretrained import (
            expect_family,
            load_into,
            place,
            read_pretrained,
            sub_state,
            with_info,
        )

        pf = read_pretrained(source, map_location=map_location)
        family = expect_family(pf, ["sit", "clip"], "SiT.from_pretrained")
        config = dict(config)
        n_outputs = None
        if pf.family is None:  # a bare SiT state dict (or a vsMAE's, whose encoder.* are taken)
            cfg = config
            state = (
                sub_state(pf.state_dict, "encoder.")
                if any(k.startswith("encoder.") for k in pf.state_dict)
                else pf.state_dict
            )
        else:
            n_outputs = config.pop("n_outputs", None)
            recorded = pf.model_config.get("encoder" if family == "sit" else "fmri") or {}
            cfg = {**recorded, **config}
            state = sub_state(pf.state_dict, "encoder.") if pf.whole_module else pf.backbone_state()
        model = cls(config_from_dict(SiTConfig, cfg, "SiT"))
        report = load_into(model, state, allow_partial=allow_partial, name=pf.source, what="SiT encoder")
        if n_outputs is not None and n_outputs != model.config.n_outputs:
            model.config = replace(model.config, n_outputs=int(n_outputs))
            model.head = nn.Linear(model.config.dim, int(n_outputs)) if n_outputs else nn.Identity()
        return place(with_info(model, pf, report, family), map_location)

    def load_encoder_state(self, state: dict[str, torch.Tensor]) -> tuple[list[str], list[str]]:
        """Load pretrained encoder weights (e.g. a :class:`~neurokit.models.vsmae.VSMAE`'s ``encoder.*``),
        keeping this model's head, cls token and learned positions where the state has none.

        Patch positions are the same with and without a cls token (0…n_tokens−1), so every position of a
        vsMAE encoder (sin-cos or learned) is kept. Learned positions saved by an older SiT that gave the cls
        token a position (``n_tokens + 1`` rows, cls first) load with that first row dropped.

        Returns
        -------
        missing, unexpected : list of str
            Keys of this model the state lacks, and keys of the state this model lacks.

        Raises
        ------
        ConfigError
            A tensor of the state has another shape than this model's (listed in the message).
        """
        if any(k.startswith("encoder.") for k in state):
            state = {k.removeprefix("encoder."): v for k, v in state.items() if k.startswith("encoder.")}
        own = self.state_dict()
        pos = state.get("pos_embedding")
        if (
            pos is not None
            and "pos_embedding" in own
            and pos.ndim == 3
            and pos.shape[1] == own["pos_embedding"].shape[1] + 1
        ):
            state = {**state, "pos_embedding": pos[:, 1:]}
        bad = [
            f"{k}: {tuple(v.shape)} vs {tuple(own[k].shape)}"
            for k, v in state.items()
            if k in own and own[k].shape != v.shape
        ]
        if bad:
            raise ConfigError("pretrained encoder does not fit this SiT (state vs model): " + "; ".join(bad))
        result = self.load_state_dict(state, strict=False)
        return list(result.missing_keys), list(result.unexpected_keys)


@fill_doc
def create_sit(name: str = "sit_tiny", **overrides) -> SiT:
    """A SiT from a preset name with config overrides.

    Parameters
    ----------
    %(sit_presets)s
    **overrides
        :class:`SiTConfig` fields (``n_chans``, ``n_patches``, ``vertices_per_patch``, ``n_outputs``…).

    Returns
    -------
    SiT

    Raises
    ------
    ConfigError
        Unknown preset or field.

    Examples
    --------
    >>> m = create_sit("tiny", depth=1, n_chans=3, n_patches=20, vertices_per_patch=45, n_outputs=2)
    >>> m(torch.randn(4, 3, 20, 45)).shape
    torch.Size([4, 2])
    """
    return SiT(sit_config(name, **overrides))
