"""vsMAE: video masked-autoencoder pretraining of the surface vision transformer.

From the surface masked autoencoders of Dahan et al. (metrics-lab/surface-masked-autoencoders) and the
video-MAE recipe (Tong et al., NeurIPS 2022): **tube masking** — one random set of spatial patches is kept,
shared by every frame of a tubelet — with mask ratio 0.75 (0.9 also used). The encoder is a SiT without cls
token applied to the visible tokens only; a light decoder (Linear → 192, learned mask token, fixed sin-cos
positions, 3 pre-norm layers × 3 heads, MLP 768, LayerNorm, Linear → token size) reconstructs every token,
and the loss is the mean squared error over the masked tokens only, against the raw (z-scored) input.

As in the reference ``models/vsmae.py`` (metrics-lab/surface-masked-autoencoders, default
``init_weights: False``): ``enc_to_dec`` is the identity when encoder and decoder widths are equal (SiT-tiny,
192), else a Linear; ``int(N·(1 − ratio))`` spatial patches are kept (truncated, so ratio 0.9 of 320 keeps
31: ``1 − 0.9`` is 0.0999… in floating point); the mask token is drawn from a standard normal.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np
import torch
import torch.nn as nn

from neurokit._utils.errors import ConfigError
from neurokit.models.config import config_from_dict
from neurokit.models.docs import fill_doc
from neurokit.models.sit import (
    DistanceBias,
    SiT,
    SiTConfig,
    Transformer,
    sincos_1d,
    sit_config,
    sphere_code,
    to_tokens,
)


@dataclass
class VSMAEConfig:
    """Pretraining hyperparameters of :class:`VSMAE` (written into every checkpoint).

    Attributes
    ----------
    encoder : SiTConfig
        The SiT's config (its ``pool`` forced to ``"mean"`` — no cls token — and ``n_outputs`` to 0).
    mask_ratio : float
        Share of the spatial patches hidden, in ``(0, 1)`` (0.75); at least one patch must stay visible.
    decoder_dim, decoder_depth, decoder_heads, decoder_dim_head, decoder_mlp_dim : int
        Decoder width, layers, heads, head width and MLP width (192, 3, 3, 64, 768).
    score : {"hidden", "patches"}
        Values the loss is taken over: masked values no visible patch holds (``"hidden"``), or every value
        of the masked patches.
    zero_output : bool
        Start the reconstruction at 0 (zero-initialised output layer).

    Raises
    ------
    ConfigError
        An unknown ``score``, or a ``mask_ratio`` outside ``(0, 1)`` or that keeps no patch.

    Examples
    --------
    >>> VSMAEConfig(mask_ratio=0.9).encoder.pool
    'mean'
    """

    encoder: SiTConfig = field(default_factory=lambda: sit_config("sit_tiny"))
    mask_ratio: float = 0.75
    decoder_dim: int = 192
    decoder_depth: int = 3
    decoder_heads: int = 3
    decoder_dim_head: int = 64
    decoder_mlp_dim: int = 768
    score: str = "hidden"  # "hidden" | "patches"
    zero_output: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.encoder, dict):
            self.encoder = SiTConfig(**self.encoder)
        self.encoder = SiTConfig(**{**self.encoder.to_dict(), "pool": "mean", "n_outputs": 0})
        if self.score not in ("hidden", "patches"):
            raise ConfigError(f"VSMAEConfig.score={self.score!r}; allowed: hidden, patches")
        if not 0.0 < self.mask_ratio < 1.0:
            raise ConfigError(f"mask_ratio must be in (0, 1), got {self.mask_ratio}")
        if n_kept(self.encoder.n_patches, self.mask_ratio) < 1:
            raise ConfigError(
                f"mask_ratio {self.mask_ratio} keeps no patch of {self.encoder.n_patches} "
                f"(int(N·(1 − ratio)) = 0); lower it below {1 - 1 / self.encoder.n_patches:.4g}"
            )

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "VSMAEConfig":
        """Inverse of :meth:`to_dict` (unknown keys raise :class:`ConfigError`)."""
        return config_from_dict(cls, d, "vsMAE")


@dataclass
class MAEOutput:
    """What :meth:`VSMAE.forward` returns.

    Attributes
    ----------
    loss : Tensor
        Scalar MSE on the scored values.
    pred, target : Tensor, shape ``(B, n_tokens, token_dim)``
        Reconstruction and raw (z-scored) input tokens.
    mask : Tensor, shape ``(B, n_tokens)``
        Bool, True where masked.
    scored : Tensor, shape ``(B, n_tokens, token_dim)``
        Bool, the values the loss is taken over (masked values that no visible patch holds, or every masked
        value: :attr:`VSMAEConfig.score`).
    """

    loss: torch.Tensor
    pred: torch.Tensor
    target: torch.Tensor
    mask: torch.Tensor
    scored: torch.Tensor


def n_kept(n_patches: int, ratio: float) -> int:
    """Spatial patches kept by a tube mask: ``int(n_patches·(1 − ratio))``, truncated as in the reference
    (``len_to_keep = int(L * (1 - mask_ratio))``, metrics-lab ``vsMAE.random_masking``).

    Parameters
    ----------
    n_patches : int
        Spatial patches.
    ratio : float
        Mask ratio.

    Returns
    -------
    int

    Examples
    --------
    >>> n_kept(320, 0.75), n_kept(320, 0.9)
    (80, 31)
    """
    return int(n_patches * (1 - ratio))


def tube_mask(batch: int, n_patches: int, n_frames: int, ratio: float, *, generator=None, device=None):
    """Random tube masks: the same spatial patches hidden in every frame.

    Parameters
    ----------
    batch : int
        Samples.
    n_patches : int
        Spatial patches per frame.
    n_frames : int
        Frames (the mask is shared by all of them; not read).
    ratio : float
        Mask ratio.
    generator : torch.Generator, optional
        Random source (default PyTorch's).
    device : torch.device, optional
        Where the masks are made.

    Returns
    -------
    keep : LongTensor, shape (batch, n_keep)
        Kept spatial patch indices, sorted; ``n_keep =`` :func:`n_kept` ``(n_patches, ratio)``.
    masked : BoolTensor, shape (batch, n_patches)
        True for hidden patches.

    Raises
    ------
    ConfigError
        The ratio keeps no patch.

    Examples
    --------
    >>> keep, masked = tube_mask(2, 8, 3, 0.75)
    >>> keep.shape, masked.sum(dim=1).tolist()
    (torch.Size([2, 2]), [6, 6])
    """
    n_keep = n_kept(n_patches, ratio)
    if n_keep < 1:
        raise ConfigError(f"mask ratio {ratio} keeps no patch of {n_patches}")
    noise = torch.rand(batch, n_patches, generator=generator, device=device)
    keep = noise.argsort(dim=1)[:, :n_keep].sort(dim=1).values
    masked = torch.ones(batch, n_patches, dtype=torch.bool, device=device)
    masked.scatter_(1, keep, False)
    return keep, masked


class VSMAE(nn.Module):
    """Masked-autoencoder wrapper around a SiT encoder.

    Parameters
    ----------
    config : VSMAEConfig
        Encoder and decoder hyperparameters; ``config.to_dict()`` rebuilds the module.
    """

    decoder_pos: torch.Tensor  # buffer ``(1, n_tokens, decoder_dim)``: fixed sin-cos positions
    vertex_ids: torch.Tensor  # buffer ``(n_patches, V)``: template vertex of every patch slot

    def __init__(self, config: VSMAEConfig | None = None) -> None:
        super().__init__()
        self.config = c = config or VSMAEConfig()
        enc_cfg = c.encoder
        self.encoder = SiT(enc_cfg)
        # reference: Linear only when the widths differ; mask token ~ N(0, 1) (torch.randn, init_weights False)
        self.enc_to_dec = nn.Linear(enc_cfg.dim, c.decoder_dim) if enc_cfg.dim != c.decoder_dim else nn.Identity()
        self.mask_token = nn.Parameter(torch.randn(1, 1, c.decoder_dim))
        # fixed decoder positions; from the sphere when the encoder's are
        if enc_cfg.pos_embedding == "sphere":
            pos = sphere_code(enc_cfg.n_patches, enc_cfg.vertices_per_patch, c.decoder_dim)
        else:
            pos = sincos_1d(enc_cfg.n_tokens, c.decoder_dim)
        self.register_buffer("decoder_pos", pos[None], persistent=False)
        self.decoder = Transformer(
            c.decoder_dim, c.decoder_depth, c.decoder_heads, c.decoder_dim_head, c.decoder_mlp_dim
        )
        # the decoder's attention knows the sphere when the encoder's does
        self.decoder_bias = (
            DistanceBias(enc_cfg.n_patches, enc_cfg.vertices_per_patch, c.decoder_heads)
            if enc_cfg.attn_bias == "distance"
            else None
        )
        self.to_pixels = nn.Linear(c.decoder_dim, enc_cfg.token_dim)
        if c.zero_output:  # the reconstruction starts at 0: the loss starts at predict-zero
            nn.init.zeros_(self.to_pixels.weight)
            nn.init.zeros_(self.to_pixels.bias)
        self.register_buffer("vertex_ids", patch_vertex_ids(enc_cfg.n_patches, enc_cfg.vertices_per_patch), False)
        self.n_vertices = int(self.vertex_ids.max()) + 1  # read once: a .max() per step would wait for the GPU

    @classmethod
    @fill_doc
    def from_pretrained(cls, source, *, map_location="cpu", allow_partial: bool = False, **config) -> "VSMAE":
        """The whole vsMAE (encoder and decoder) of a ``sit``-family pretraining checkpoint.

        Parameters
        ----------
        source : str or Path
            A neurokit pretraining checkpoint of the ``sit`` family (architecture from its ``model_config``),
            a bare vsMAE state dict (architecture from ``**config``), or Hub weights
            ``hub:ORG/NAME[/FILE][@REVISION]``. Read with ``torch.load(weights_only=True)``.
        %(map_location)s
        %(allow_partial)s
        **config
            :class:`VSMAEConfig` fields over the recorded ones (e.g. ``mask_ratio=0.9``).

        Returns
        -------
        VSMAE
            With ``pretrained_info`` (source, SHA-256, family, kind, tensors loaded/total).

        Raises
        ------
        neurokit.models.pretrained.PretrainedError
            A checkpoint of another family (the message names both), a file that would run code on loading,
            or weights that do not fit.
        ConfigError
            A fine-tuning checkpoint (it holds the encoder only: :meth:`SiT.from_pretrained
            <neurokit.models.sit.SiT.from_pretrained>`), or an unknown config field.

        Examples
        --------
        >>> import neurokit, tempfile, os
        >>> from neurokit.models.checkpoint import save_checkpoint
        >>> m = neurokit.create_model("sit", n_layers=1, n_chans=2, n_patches=20, vertices_per_patch=45)
        >>> p = save_checkpoint(os.path.join(tempfile.mkdtemp(), "last.pt"), {"kind": "pretrain", "model": "sit",
        ...                     "model_config": m.config.to_dict(), "state_dict": m.state_dict()})
        >>> VSMAE.from_pretrained(p).config.encoder.depth
        1
        """
        from neurokit.models.pretrained import load_whole_module

        return load_whole_module(
            lambda recorded: cls(VSMAEConfig.from_dict({**recorded, **config})),
            source,
            family="sit",
            caller="VSMAE.from_pretrained",
            what="vsMAE model",
            lacks="the vsMAE decoder",
            map_location=map_location,
            allow_partial=allow_partial,
        )

    @property
    def encoder_config(self) -> SiTConfig:
        return self.encoder.config

    def _token_index(self, keep: torch.Tensor) -> torch.Tensor:
        cfg = self.encoder.config
        if cfg.temporal == "channels":
            return keep
        frames = torch.arange(cfg.n_chans, device=keep.device) * cfg.n_patches
        return (frames[None, :, None] + keep[:, None, :]).reshape(len(keep), -1)

    def forward(self, x: torch.Tensor, *, generator: torch.Generator | None = None) -> MAEOutput:
        """``x``: ``(B, C, N, V)`` float → :class:`MAEOutput`."""
        enc = self.encoder
        cfg = enc.config
        enc._check(x)
        B = x.shape[0]
        tokens = to_tokens(x, cfg.temporal)  # (B, L, token_dim), raw targets
        keep, masked_patch = tube_mask(
            B, cfg.n_patches, cfg.n_chans, self.config.mask_ratio, generator=generator, device=x.device
        )
        vis = self._token_index(keep)  # (B, L_vis)
        L = tokens.shape[1]
        emb = enc.to_patch_embedding(tokens) + enc.pos_embedding.to(tokens.dtype)[:, :L]
        idx = vis[..., None].expand(-1, -1, emb.shape[-1])
        enc_bias = None if enc.attn_bias is None else enc.attn_bias(vis)
        h = enc.transformer(enc.dropout(torch.gather(emb, 1, idx)), enc_bias)
        d = self.enc_to_dec(h)
        full = self.mask_token.to(d.dtype).expand(B, L, -1).clone()
        full.scatter_(1, vis[..., None].expand(-1, -1, d.shape[-1]), d)
        dec_bias = None if self.decoder_bias is None else self.decoder_bias()
        pred = self.to_pixels(self.decoder(full + self.decoder_pos.to(d.dtype), dec_bias))
        mask = torch.ones(B, L, dtype=torch.bool, device=x.device)
        mask.scatter_(1, vis, False)
        if self.config.score == "hidden":
            hidden = hidden_values(self.vertex_ids, masked_patch, self.n_vertices)  # (B, N, V)
        else:
            hidden = masked_patch[:, :, None].expand(-1, -1, cfg.vertices_per_patch)
        scored = to_tokens(hidden[:, None].expand(-1, cfg.n_chans, -1, -1), cfg.temporal)
        err = (pred - tokens) ** 2
        loss = (err * scored).sum() / scored.sum().clamp(min=1)
        return MAEOutput(loss=loss, pred=pred, target=tokens, mask=mask, scored=scored)

    def patch_view(self, out: MAEOutput) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """``out`` in the sample's layout: ``pred``, ``target`` ``(B, C, N, V)``, the patch mask ``(B, C, N)``
        (float, 1 = masked) and the scored values ``(B, C, N, V)`` (bool)."""
        cfg = self.encoder.config
        C, N, V = cfg.n_chans, cfg.n_patches, cfg.vertices_per_patch
        pred, target, scored = (from_tokens(t, cfg.temporal, C, N, V) for t in (out.pred, out.target, out.scored))
        if cfg.temporal == "channels":
            mask = out.mask[:, None, :].expand(-1, C, -1)
        else:
            mask = out.mask.reshape(len(out.mask), C, N)
        return pred, target, mask.to(pred.dtype), scored


def from_tokens(t: torch.Tensor, temporal: str, C: int, N: int, V: int) -> torch.Tensor:
    """Inverse of :func:`~neurokit.models.sit.to_tokens`: ``(B, L, token_dim)`` → ``(B, C, N, V)``.

    Parameters
    ----------
    t : Tensor, shape ``(B, L, token_dim)``
        Tokens.
    temporal : {"channels", "concat"}
        Their layout.
    C, N, V : int
        Frames, patches, vertices per patch.

    Returns
    -------
    Tensor, shape ``(B, C, N, V)``

    Examples
    --------
    >>> from neurokit.models.sit import to_tokens
    >>> x = torch.randn(2, 3, 4, 5)
    >>> torch.equal(from_tokens(to_tokens(x, "channels"), "channels", 3, 4, 5), x)
    True
    """
    B = t.shape[0]
    if temporal == "channels":
        return t.reshape(B, N, V, C).permute(0, 3, 1, 2)
    return t.reshape(B, C, N, V)


def patch_vertex_ids(n_patches: int, vertices_per_patch: int) -> torch.Tensor:
    """Template vertex of every patch slot (:func:`~neurokit.geometry.patches.patch_table`) when the shape is an
    ico-k grid on ico6, so patches that share a border vertex share its id; otherwise every slot its own id
    (no vertex shared).

    Parameters
    ----------
    n_patches, vertices_per_patch : int
        The patch grid.

    Returns
    -------
    LongTensor, shape ``(n_patches, vertices_per_patch)``

    Examples
    --------
    >>> patch_vertex_ids(2, 3).tolist()  # no ico grid: one id per slot
    [[0, 1, 2], [3, 4, 5]]
    """
    from neurokit.geometry.patches import grid_of, patch_table

    k = grid_of(n_patches, vertices_per_patch)
    if k is None:
        return torch.arange(n_patches * vertices_per_patch).reshape(n_patches, vertices_per_patch)
    return torch.as_tensor(np.array(patch_table(k)), dtype=torch.long)


def hidden_values(vertex_ids: torch.Tensor, masked: torch.Tensor, n_vertices: int | None = None) -> torch.Tensor:
    """Which values of masked patches no visible patch holds.

    Parameters
    ----------
    vertex_ids : LongTensor ``(N, V)``
        Template vertex of each patch slot (:func:`patch_vertex_ids`).
    masked : BoolTensor ``(B, N)``
        True for masked patches.
    n_vertices : int, optional
        ``vertex_ids.max() + 1`` when the caller knows it (read from the ids otherwise).

    Returns
    -------
    BoolTensor ``(B, N, V)``: True where the patch is masked and its vertex is in no visible patch (on ico3
    patches of ico6, the border vertices a masked patch shares with a visible neighbour are False).

    Examples
    --------
    >>> ids = torch.tensor([[0, 1, 2], [2, 3, 4]])  # two patches sharing vertex 2
    >>> hidden_values(ids, torch.tensor([[True, False]])).int().tolist()
    [[[1, 1, 0], [0, 0, 0]]]
    """
    B, N = masked.shape
    ids = vertex_ids.to(masked.device)
    seen = torch.zeros(B, n_vertices or int(ids.max()) + 1, device=masked.device)
    flat = ids.reshape(1, -1).expand(B, -1)
    seen.scatter_add_(1, flat, (~masked)[:, :, None].expand(-1, -1, ids.shape[1]).reshape(B, -1).to(seen.dtype))
    held = seen.gather(1, flat).reshape(B, N, -1) > 0
    return masked[:, :, None] & ~held


@fill_doc
def create_vsmae(name: str = "sit_tiny", mask_ratio: float = 0.75, **encoder_overrides) -> VSMAE:
    """vsMAE around a SiT preset.

    Parameters
    ----------
    %(sit_presets)s
    mask_ratio : float
        Share of the spatial patches hidden (0.75).
    **encoder_overrides
        :class:`~neurokit.models.sit.SiTConfig` fields (``n_chans``, ``n_patches``, ``vertices_per_patch``…).

    Returns
    -------
    VSMAE

    Raises
    ------
    ConfigError
        Unknown preset or field, or a mask ratio out of range.

    Examples
    --------
    >>> m = create_vsmae("tiny", depth=1, n_chans=2, n_patches=20, vertices_per_patch=45)
    >>> m(torch.randn(3, 2, 20, 45)).pred.shape
    torch.Size([3, 20, 90])
    """
    return VSMAE(VSMAEConfig(encoder=sit_config(name, **encoder_overrides), mask_ratio=mask_ratio))
