"""CBraMod: criss-cross brain foundation model for EEG (Wang et al., ICLR 2025, arXiv 2412.07236).

Input ``(B, C, N, 200)``: C channels, N one-second patches of 200 samples at 200 Hz, in units of 100 µV.
Parameter names follow the released ``pretrained_weights.pth`` so that its state_dict loads as is.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, fields

import torch
import torch.nn as nn
import torch.nn.functional as F

from neurokit._utils.errors import ConfigError
from neurokit.kernels.criss_cross import criss_cross_attention, grouped_sdpa
from neurokit.models.docs import fill_doc
from neurokit.models.dropout import FastDropout, dropout_mask, fast_dropout
from neurokit.models.input_norm import InputNorm, check_mode


@dataclass
class CBraModConfig:
    """Architecture hyperparameters of :class:`CBraMod` (paper defaults: 4,924,000 parameters), written into
    every checkpoint.

    Attributes
    ----------
    patch_size : int
        Samples per patch (200: one second at 200 Hz; the patch embedding is defined for 200 only).
    d_model : int
        Feature width of every token (200).
    n_layers : int
        Criss-cross transformer layers (12).
    n_heads : int
        Attention heads, half spatial and half temporal (8).
    dim_feedforward : int
        Hidden width of each layer's feed-forward block (800).
    dropout : float
        Dropout probability, in ``[0, 1)`` (0.1).
    attn_backend : {"auto", "torch", "triton"}
        Criss-cross attention implementation (:func:`~neurokit.kernels.criss_cross.criss_cross_attention`).
    input_norm : {"none", "window", "channel", "corpus"}
        Amplitude normalisation of the input (:class:`~neurokit.models.input_norm.InputNorm`).

    Raises
    ------
    ConfigError
        A size below 1, ``dropout`` outside ``[0, 1)``, ``d_model`` not divisible by ``n_heads`` or an unknown
        ``input_norm``.

    Examples
    --------
    >>> CBraModConfig(n_layers=2).to_dict()["n_layers"]
    2
    """

    patch_size: int = 200
    d_model: int = 200
    n_layers: int = 12
    n_heads: int = 8
    dim_feedforward: int = 800
    dropout: float = 0.1
    attn_backend: str = "auto"  # "auto" | "torch" | "triton"
    input_norm: str = "none"  # "none" | "window" | "channel" | "corpus" (neurokit.models.input_norm)

    def __post_init__(self) -> None:
        check_mode(self.input_norm, "CBraMod input_norm")
        for name in ("n_layers", "n_heads", "dim_feedforward"):
            if int(getattr(self, name)) < 1:
                raise ConfigError(f"CBraMod {name}={getattr(self, name)}: must be >= 1")
        if not 0.0 <= float(self.dropout) < 1.0:
            raise ConfigError(f"CBraMod dropout={self.dropout}: must be in [0, 1)")
        if self.d_model % self.n_heads:
            raise ConfigError(f"CBraMod d_model={self.d_model} is not divisible by n_heads={self.n_heads}")

    def to_dict(self) -> dict:
        return asdict(self)


class PatchEmbedding(nn.Module):
    """Time-domain conv branch + spectral branch + asymmetric conditional positional encoding (§3.1).

    ``forward(x, mask=None)`` maps patches ``(B, C, N, 200)`` (units of 100 µV) to tokens ``(B, C, N, 200)``;
    ``mask`` ``(B, C, N)`` (1 = masked) replaces the masked patches by ``mask_encoding`` (zeros) first.

    Parameters
    ----------
    patch_size : int
        Samples per patch; must be 200.
    d_model : int
        Token width; must be 200 (25 conv channels × 8 steps).
    dropout : float
        Dropout after the spectral projection.

    Raises
    ------
    ValueError
        ``patch_size`` or ``d_model`` is not 200.

    Examples
    --------
    >>> PatchEmbedding()(torch.zeros(2, 3, 4, 200)).shape
    torch.Size([2, 3, 4, 200])
    """

    def __init__(self, patch_size: int = 200, d_model: int = 200, dropout: float = 0.1) -> None:
        super().__init__()
        if patch_size != 200 or d_model != 200:
            # the conv branch yields 25 channels × 8 steps = 200 features for 200-sample patches
            raise ValueError("CBraMod's patch embedding is defined for patch_size=200 and d_model=200")
        self.d_model = d_model
        self.positional_encoding = nn.Sequential(
            nn.Conv2d(d_model, d_model, kernel_size=(19, 7), stride=(1, 1), padding=(9, 3), groups=d_model)
        )
        self.mask_encoding = nn.Parameter(torch.zeros(patch_size), requires_grad=False)
        self.proj_in = nn.Sequential(
            nn.Conv2d(1, 25, kernel_size=(1, 49), stride=(1, 25), padding=(0, 24)),
            nn.GroupNorm(5, 25),
            nn.GELU(),
            nn.Conv2d(25, 25, kernel_size=(1, 3), stride=(1, 1), padding=(0, 1)),
            nn.GroupNorm(5, 25),
            nn.GELU(),
            nn.Conv2d(25, 25, kernel_size=(1, 3), stride=(1, 1), padding=(0, 1)),
            nn.GroupNorm(5, 25),
            nn.GELU(),
        )
        self.spectral_proj = nn.Sequential(nn.Linear(patch_size // 2 + 1, d_model), FastDropout(dropout))

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        B, C, N, P = x.shape
        if mask is not None:
            x = torch.where(mask.bool().unsqueeze(-1), self.mask_encoding.to(x.dtype), x)
        flat = x.reshape(B, 1, C * N, P)
        t = self.proj_in(flat)  # (B, 25, C·N, 8)
        t = t.permute(0, 2, 1, 3).reshape(B, C, N, self.d_model)
        spec = torch.fft.rfft(flat.reshape(B * C * N, P).float(), dim=-1, norm="forward").abs()
        s = self.spectral_proj(spec.to(x.dtype).reshape(B, C, N, P // 2 + 1))
        h = t + s
        pos = self.positional_encoding(h.permute(0, 3, 1, 2)).permute(0, 2, 3, 1)
        return h + pos


class HalfAttention(nn.Module):
    """Projection weights of one head group, named like ``nn.MultiheadAttention``'s (so that the released state
    dict loads as is): ``in_proj_weight`` ``(3·dim, dim)``, ``in_proj_bias`` ``(3·dim,)`` and ``out_proj``.

    Parameters
    ----------
    dim : int
        Width of the group's features (half of ``d_model``).

    Examples
    --------
    >>> HalfAttention(100).in_proj_weight.shape
    torch.Size([300, 100])
    """

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.in_proj_weight = nn.Parameter(torch.empty(3 * dim, dim))
        self.in_proj_bias = nn.Parameter(torch.zeros(3 * dim))
        self.out_proj = nn.Linear(dim, dim)
        nn.init.xavier_uniform_(self.in_proj_weight)
        nn.init.zeros_(self.out_proj.bias)


class CrissCrossLayer(nn.Module):
    """Pre-norm criss-cross transformer layer (§3.2): half the features attend over channels, half
    over patches; then a GELU feed-forward block. ``(B, C, N, d_model)`` → same shape.

    Parameters
    ----------
    cfg : CBraModConfig
        Widths, heads, dropout and attention backend.

    Raises
    ------
    ValueError
        ``d_model`` and ``n_heads`` do not split evenly into two head groups.

    Examples
    --------
    >>> layer = CrissCrossLayer(CBraModConfig(n_layers=1)).eval()
    >>> layer(torch.randn(1, 3, 4, 200)).shape
    torch.Size([1, 3, 4, 200])
    """

    def __init__(self, cfg: CBraModConfig) -> None:
        super().__init__()
        d, h = cfg.d_model, cfg.n_heads
        if d % 2 or h % 2 or (d // 2) % (h // 2):
            raise ValueError(f"d_model={d} and n_heads={h} must split evenly into two head groups")
        self.cfg = cfg
        self.self_attn_s = HalfAttention(d // 2)
        self.self_attn_t = HalfAttention(d // 2)
        self.linear1 = nn.Linear(d, cfg.dim_feedforward)
        self.dropout = FastDropout(cfg.dropout)
        self.linear2 = nn.Linear(cfg.dim_feedforward, d)
        self.norm1 = nn.LayerNorm(d, eps=1e-5)
        self.norm2 = nn.LayerNorm(d, eps=1e-5)
        self.dropout1 = FastDropout(cfg.dropout)
        self.dropout2 = FastDropout(cfg.dropout)

    def _qkv_weight(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Block-diagonal fused projection ``(3·d, d)`` whose output rows read as ``(3, H, head_dim)``:
        heads ``0…H/2-1`` from the spatial half of the features, the rest from the temporal half."""
        s, t = self.self_attn_s, self.self_attn_t
        half = s.in_proj_weight.shape[1]
        ws = s.in_proj_weight.view(3, half, half)
        wt = t.in_proj_weight.view(3, half, half)
        zeros = ws.new_zeros(3, half, half)
        w = torch.cat([torch.cat([ws, zeros], dim=2), torch.cat([zeros, wt], dim=2)], dim=1)  # (3, d, d)
        b = torch.cat([s.in_proj_bias.view(3, half), t.in_proj_bias.view(3, half)], dim=1)
        return w.reshape(6 * half, 2 * half), b.reshape(6 * half)

    def _fused_path(self, h: torch.Tensor) -> bool:
        """The fused-projection path feeds the Triton kernel (CUDA, or ``backend="triton"``); the CPU takes the
        per-group path, which projects each half of the features with its own weights (half the FLOPs)."""
        backend = self.cfg.attn_backend
        if backend == "auto":
            backend = os.environ.get("NEUROKIT_ATTENTION_BACKEND") or "auto"
        return backend == "triton" or (h.is_cuda and backend != "torch")

    def attention(self, h: torch.Tensor) -> torch.Tensor:
        if self._fused_path(h):
            return self._attention_fused(h)
        return torch.cat(self._attention_halves(h), dim=-1)

    def _attention_halves(self, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Spatial and temporal attention outputs, each ``(B, C, N, d/2)``, on the per-group path."""
        B, C, N, D = h.shape
        half, H2 = D // 2, self.cfg.n_heads // 2
        hd = half // H2
        p = self.cfg.dropout if self.training else 0.0
        s, t = self.self_attn_s, self.self_attn_t
        if torch.is_grad_enabled():  # training: projections and products laid out to need no copies
            xs, xt = _SplitHalves.apply(h)  # tokens in (B, N, C) and in (B, C, N) order
            os_ = s.out_proj(_heads_attention(xs, s.in_proj_weight, s.in_proj_bias, B * N, C, H2, p))
            ot = t.out_proj(_heads_attention(xt, t.in_proj_weight, t.in_proj_bias, B * C, N, H2, p))
            return os_.view(B, N, C, half).transpose(1, 2), ot.view(B, C, N, half)
        hs, ht = h.split(half, dim=-1)
        # spatial heads: one sequence of C channels per (batch, patch, head)
        qkv = F.linear(hs.transpose(1, 2), s.in_proj_weight, s.in_proj_bias)  # (B, N, C, 3·half)
        q, k, v = qkv.view(B, N, C, 3, H2, hd).permute(3, 0, 1, 4, 2, 5).unbind(0)
        o = _attend(q, k, v, p)  # (B, N, H2, C, hd)
        os_ = s.out_proj(o.transpose(2, 3).reshape(B, N, C, half)).transpose(1, 2)  # (B, C, N, half)
        # temporal heads: one sequence of N patches per (batch, channel, head)
        qkv = F.linear(ht, t.in_proj_weight, t.in_proj_bias)  # (B, C, N, 3·half)
        q, k, v = qkv.view(B, C, N, 3, H2, hd).permute(3, 0, 1, 4, 2, 5).unbind(0)
        o = _attend(q, k, v, p)  # (B, C, H2, N, hd)
        return os_, t.out_proj(o.transpose(2, 3).reshape(B, C, N, half))

    def _attention_fused(self, h: torch.Tensor) -> torch.Tensor:
        B, C, N, D = h.shape
        H = self.cfg.n_heads
        hd = D // H
        w, b = self._qkv_weight()
        qkv = F.linear(h, w, b).view(B, C, N, 3, H, hd)
        q, k, v = qkv.unbind(dim=3)
        p = self.cfg.dropout if self.training else 0.0
        o = criss_cross_attention(q, k, v, heads_s=H // 2, dropout_p=p, backend=self.cfg.attn_backend)
        o = o.reshape(B, C, N, D)
        half = D // 2
        os_ = self.self_attn_s.out_proj(o[..., :half])
        ot = self.self_attn_t.out_proj(o[..., half:])
        return torch.cat([os_, ot], dim=-1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self._fused_cpu_step(x):
            x = x + self.dropout1(self.attention(self.norm1(x)))
            x = x + self.dropout2(self.linear2(self.dropout(F.gelu(self.linear1(self.norm2(x))))))
            return x
        # CPU training: the same function with fewer full-size temporaries (masks applied in place, the
        # residual add fused with its dropout, the feed-forward block's backward written out)
        p = self.cfg.dropout if self.training else 0.0
        a_s, a_t = self._attention_halves(self.norm1(x))
        x = _AddMaskedHalves.apply(x, a_s, a_t, dropout_mask(x, p) if p else None)
        h = self.norm2(x)
        m = dropout_mask(h.new_empty(h.shape[:-1] + (self.linear1.out_features,)), p) if p else None
        l1, l2 = self.linear1, self.linear2
        y = _FeedForward.apply(h, l1.weight, l1.bias, l2.weight, l2.bias, m)
        return _residual_dropout(x, y, dropout_mask(y, p) if p else None)

    def _fused_cpu_step(self, x: torch.Tensor) -> bool:
        """Whether :class:`_FeedForward` and :class:`_AddMaskedHalves` replace the module-by-module path:
        CPU tensors with autograd on, the per-group attention (not the Triton kernel), outside
        ``torch.compile`` and autocast."""
        return (
            x.device.type == "cpu"
            and torch.is_grad_enabled()
            and not self._fused_path(x)
            and not torch.compiler.is_compiling()
            and not torch.is_autocast_enabled("cpu")
            and type(self.linear1) is nn.Linear
            and type(self.linear2) is nn.Linear
        )  # not LoRA-wrapped


class _FeedForward(torch.autograd.Function):
    """``linear2(mask · gelu(linear1(h)))`` with its backward written out, so that the ``(…, 800)``
    activations are formed once: the mask multiplies the GELU output in place, the gradient is masked and
    passed through GELU's derivative in place. Same operations, in the same order, as autograd's."""

    @staticmethod
    def forward(ctx, h, w1, b1, w2, b2, mask):
        a = F.linear(h, w1, b1)
        d = F.gelu(a)
        if mask is not None:
            d.mul_(mask)
        ctx.save_for_backward(h, w1, w2, a, d, mask)
        return F.linear(d, w2, b2)

    @staticmethod
    def backward(ctx, gy):
        h, w1, w2, a, d, mask = ctx.saved_tensors
        need = ctx.needs_input_grad
        gy = gy.reshape(-1, gy.shape[-1])
        gd = gy @ w2
        gw2 = gy.t() @ d.reshape(gd.shape) if need[3] else None
        gb2 = gy.sum(0) if need[4] else None
        if mask is not None:
            gd.mul_(mask.reshape(gd.shape))
        torch.ops.aten.gelu_backward.grad_input(gd, a.reshape(gd.shape), approximate="none", grad_input=gd)
        gh = (gd @ w1).view(h.shape) if need[0] else None
        gw1 = gd.t() @ h.reshape(-1, h.shape[-1]) if need[1] else None
        gb1 = gd.sum(0) if need[2] else None
        return gh, gw1, gb1, gw2, gb2, None


class _AddMasked(torch.autograd.Function):
    """``x + mask · y`` in one pass (``addcmul``); gradients ``g`` and ``mask · g``."""

    @staticmethod
    def forward(ctx, x, y, mask):
        ctx.save_for_backward(mask)
        return torch.addcmul(x, y, mask)

    @staticmethod
    def backward(ctx, g):
        (mask,) = ctx.saved_tensors
        return g, g * mask, None


class _AddMaskedHalves(torch.autograd.Function):
    """``x + mask · cat(ys, yt)`` written straight into the two halves of the result (no concatenated copy);
    ``mask`` may be None (no dropout)."""

    @staticmethod
    def forward(ctx, x, ys, yt, mask):
        half = ys.shape[-1]
        out = torch.empty_like(x)
        for sl, y in ((slice(None, half), ys), (slice(half, None), yt)):
            if mask is None:
                torch.add(x[..., sl], y, out=out[..., sl])
            else:
                torch.addcmul(x[..., sl], y, mask[..., sl], out=out[..., sl])
        ctx.save_for_backward(mask)
        ctx.half = half
        return out

    @staticmethod
    def backward(ctx, g):
        (mask,) = ctx.saved_tensors
        h = ctx.half
        if mask is None:
            return g, g[..., :h], g[..., h:], None
        return g, g[..., :h] * mask[..., :h], g[..., h:] * mask[..., h:], None


def _residual_dropout(x: torch.Tensor, y: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """``x + mask · y`` in one pass (``x + y`` without a mask)."""
    return x + y if mask is None else _AddMasked.apply(x, y, mask)


class _SplitHalves(torch.autograd.Function):
    """``h`` ``(B, C, N, d)`` → the first half of the features as ``(B·N·C, d/2)`` rows in (batch, patch,
    channel) order (one copy: the spatial sequences) and the second half as ``(B·C·N, d/2)`` rows of ``h``
    (a strided view: the temporal sequences). The backward writes both gradients straight into one
    ``(B, C, N, d)`` tensor (autograd's split would zero-fill or concatenate strided pieces)."""

    @staticmethod
    def forward(ctx, h):
        B, C, N, D = h.shape
        half = D // 2
        ctx.shape = h.shape
        xs = h[..., :half].transpose(1, 2).reshape(B * N * C, half)
        xt = h[..., half:].reshape(B * C * N, half)
        return xs, xt

    @staticmethod
    def backward(ctx, gs, gt):
        B, C, N, D = ctx.shape
        half = D // 2
        g = gs.new_empty(B, C, N, D)
        g[..., :half].copy_(gs.reshape(B, N, C, half).transpose(1, 2))
        g[..., half:].copy_(gt.reshape(B, C, N, half))
        return g


def _heads_attention(
    x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, G: int, L: int, heads: int, dropout_p: float
) -> torch.Tensor:
    """Multi-head self-attention of ``G`` sequences of length ``L`` before the output projection:
    ``x`` ``(G·L, d)`` (rows may be strided) with ``nn.MultiheadAttention``'s ``in_proj`` weight ``w``
    ``(3·d, d)`` and bias ``b``; returns ``(G·L, d)``, heads concatenated as in ``nn.MultiheadAttention``.

    The projection is computed transposed, ``(3·d, G·L)``, with its rows reordered to ``(q/k/v, head dim,
    head)``: then every head's Q, K and V of every sequence is a strided matrix that ``bmm`` reads in place
    (one batch of ``heads·G`` products, no copies), and the transposed product is the faster one in MKL for
    these shapes. Same function as ``nn.MultiheadAttention`` (attention-weight dropout ``dropout_p`` through
    :func:`~neurokit.models.dropout.fast_dropout`); sums are taken in another order (float rounding)."""
    d = x.shape[-1]
    hd = d // heads
    wp = w.view(3, heads, hd, d).transpose(1, 2).reshape(3 * d, d)
    bp = b.view(3, heads, hd).transpose(1, 2).reshape(3 * d, 1)
    q, k, v = torch.addmm(bp, wp, x.t()).view(3, hd, heads * G, L).unbind(0)  # each (hd, heads·G, L)
    scores = torch.baddbmm(
        x.new_empty(heads * G, L, L), q.permute(1, 2, 0), k.permute(1, 0, 2), beta=0.0, alpha=hd**-0.5
    )
    weights = fast_dropout(torch.softmax(scores, dim=-1), dropout_p)
    o = torch.bmm(weights, v.permute(1, 2, 0))  # (heads·G, L, hd)
    return o.view(heads, G * L, hd).transpose(0, 1).reshape(G * L, d)


def _attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, dropout_p: float) -> torch.Tensor:
    """Softmax attention over the second-to-last axis, ``(..., L, d)`` → ``(..., L, d)``; with dropout the
    weights go through :func:`~neurokit.models.dropout.fast_dropout` (what SDPA's CPU path does with
    ``torch.bernoulli``, at a third of the cost)."""
    if dropout_p == 0.0:  # in 4-D, where SDPA's fused kernels apply (on 5-D inputs: its math path, 9× slower)
        return grouped_sdpa(q, k, v)
    w = torch.softmax(torch.matmul(q * (q.shape[-1] ** -0.5), k.transpose(-2, -1)), dim=-1)
    return torch.matmul(fast_dropout(w, dropout_p), v)


class _Encoder(nn.Module):
    def __init__(self, cfg: CBraModConfig) -> None:
        super().__init__()
        self.layers = nn.ModuleList(CrissCrossLayer(cfg) for _ in range(cfg.n_layers))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return x


class CBraMod(nn.Module):
    """CBraMod backbone with its reconstruction head.

    Parameters
    ----------
    patch_size, d_model, n_layers, n_heads, dim_feedforward, dropout
        Architecture; defaults are the paper's (200, 200, 12, 8, 800, 0.1).
    attn_backend : {"auto", "torch", "triton"}
        Criss-cross attention implementation: ``"auto"`` runs the fused Triton kernel on CUDA when
        available and the PyTorch reference elsewhere.
    input_norm : {"none", "window", "channel", "corpus"}
        Amplitude normalisation applied to ``x`` before the patch embedding
        (:class:`~neurokit.models.input_norm.InputNorm`; a neurokit addition, ``"none"`` is the paper's model).

    Notes
    -----

    Forward pass::

        x : Tensor ``(B, C, N, 200)``, float, units of 100 µV (µV / 100), 200 Hz.
        mask : Tensor ``(B, C, N)``, optional; 1 = masked patch (replaced by ``mask_encoding``, zeros).
        Returns ``(B, C, N, 200)``: ``proj_out`` of the encoder features (raw-patch reconstruction when
        pretrained; the features themselves after :meth:`drop_reconstruction_head`).

    ``load_state_dict`` accepts the released ``pretrained_weights.pth`` as is.
    """

    def __init__(
        self,
        patch_size: int = 200,
        d_model: int = 200,
        n_layers: int = 12,
        n_heads: int = 8,
        dim_feedforward: int = 800,
        dropout: float = 0.1,
        attn_backend: str = "auto",
        input_norm: str = "none",
    ) -> None:
        super().__init__()
        self.config = CBraModConfig(
            patch_size, d_model, n_layers, n_heads, dim_feedforward, dropout, attn_backend, input_norm
        )
        self.patch_embedding = PatchEmbedding(patch_size, d_model, dropout)
        self.encoder = _Encoder(self.config)
        self.proj_out: nn.Module = nn.Sequential(nn.Linear(d_model, patch_size))
        self.apply(_init_weights)
        if input_norm != "none":  # no module (and no state-dict key) for the paper's model
            self.input_norm = InputNorm(input_norm)

    @classmethod
    @fill_doc
    def from_pretrained(
        cls,
        name: str = "hub:weighting666/CBraMod",
        *,
        revision: str | None = None,
        sha256: str | None = None,
        cache_dir: str | None = None,
        offline: bool | None = None,
        allow_partial: bool = False,
        map_location="cpu",
        **config,
    ) -> "CBraMod":
        """A CBraMod with released or neurokit-trained weights, by Hub name or path (:mod:`neurokit.models.hub`).

        Parameters
        ----------
        name : str
            ``hub:ORG/NAME[/FILE][@REVISION]`` (default: the authors' release ``weighting666/CBraMod``),
            ``ORG/NAME``, or a local file: a released state dict, a neurokit pretraining checkpoint of the
            ``cbramod`` family (its recorded ``model_config`` gives the architecture) or a fine-tuning
            checkpoint (its fine-tuned backbone; the head is left out).
        %(hub_options)s
        %(allow_partial)s
        %(map_location)s
        **config
            Architecture (:class:`CBraModConfig`), over the checkpoint's; a state dict's layer count is read
            from its tensor names when ``n_layers`` is not given (the release is the paper's configuration).

        Returns
        -------
        CBraMod
            With ``pretrained_info``: the name, revision, resolved commit, SHA-256 and key coverage.

        Raises
        ------
        neurokit.models.hub.HubError
            Unknown name, not cached while offline, hash mismatch. Files that do not cover the model, of
            another model family, or that would run code on loading (read with ``weights_only=True``) raise
            :class:`~neurokit.models.pretrained.PretrainedError`, both a ``HubError`` and a ``WeightsError``.

        Examples
        --------
        >>> m = CBraMod.from_pretrained("hub:weighting666/CBraMod")  # doctest: +SKIP
        >>> m.pretrained_info["loaded"] == m.pretrained_info["total"]  # doctest: +SKIP
        True
        """
        from neurokit.models.pretrained import (
            cbramod_layers,
            expect_family,
            load_into,
            place,
            read_pretrained,
            unknown_options,
            with_info,
        )

        unknown_options(config, [f.name for f in fields(CBraModConfig)], "CBraMod")
        pf = read_pretrained(
            name, map_location=map_location, revision=revision, sha256=sha256, cache_dir=cache_dir, offline=offline
        )
        expect_family(pf, ["cbramod"], "CBraMod.from_pretrained")
        cfg = {**pf.model_config, **config}
        if not pf.model_config and "n_layers" not in cfg:
            cfg["n_layers"] = cbramod_layers(pf.state_dict) or 12
        model = cls(**cfg)
        report = load_into(model, pf.backbone_state(), allow_partial=allow_partial, name=pf.info.get("name", pf.source))
        return place(with_info(model, pf, report, "cbramod"), map_location)

    @classmethod
    def from_config(cls, cfg: CBraModConfig | dict) -> "CBraMod":
        d = cfg if isinstance(cfg, dict) else cfg.to_dict()
        return cls(**d)

    def set_attn_backend(self, backend: str) -> None:
        """Switch every layer to ``"auto"``, ``"torch"`` or ``"triton"`` attention."""
        if backend not in ("auto", "torch", "triton"):
            raise ValueError(f"backend={backend!r}; allowed: 'auto', 'torch', 'triton'")
        self.config.attn_backend = backend

    def normalize_input(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """``x`` as the encoder sees it: through the model's :class:`InputNorm` (the reconstruction target); with
        ``mask``, a per-window or per-channel RMS is taken over the visible patches only (no leak of the masked ones)."""
        norm = getattr(self, "input_norm", None)
        return x if norm is None else norm(x, mask)

    def forward_features(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        return self.encoder(self.patch_embedding(self.normalize_input(x, mask), mask))

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        if x.dim() != 4 or x.shape[-1] != self.config.patch_size:
            raise ValueError(
                f"CBraMod expects (batch, channels, n_patches, {self.config.patch_size}); got {tuple(x.shape)}"
            )
        return self.proj_out(self.forward_features(x, mask))

    def zero_reconstruction_head(self) -> None:
        """Set ``proj_out``'s weight and bias to zero, so the reconstruction starts at 0 (a masked-reconstruction
        loss at initialisation then equals predicting zero, the masked patches' power, instead of several times it:
        the release's Kaiming-normal init gives outputs of about twice the encoder features' variance).

        Raises
        ------
        TypeError
            ``proj_out`` is no longer the linear reconstruction head (after :meth:`drop_reconstruction_head`).

        Examples
        --------
        >>> m = CBraMod(n_layers=1)
        >>> m.zero_reconstruction_head()
        >>> float(m(torch.randn(1, 2, 3, 200)).detach().abs().max())
        0.0
        """
        head = self.proj_out[0] if isinstance(self.proj_out, nn.Sequential) else self.proj_out
        if not isinstance(head, nn.Linear):
            raise TypeError(
                f"zero_reconstruction_head: proj_out is {type(self.proj_out).__name__}, not the linear head"
            )
        with torch.no_grad():
            head.weight.zero_()
            if head.bias is not None:
                head.bias.zero_()

    def drop_reconstruction_head(self) -> None:
        """Replace ``proj_out`` by identity, as for fine-tuning."""
        self.proj_out = nn.Identity()


def _init_weights(m: nn.Module) -> None:
    # The release initialises every Linear Kaiming-normal (fan_out, relu); biases keep their defaults.
    if isinstance(m, nn.Linear):
        nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
