"""Tri-modal CLIP: surface fMRI – video – audio (the ICLR 2025 HCP 7T paper, arXiv 2501.16471; metrics-lab/sim).

- fMRI encoder: a :class:`~neurokit.models.sit.SiT` over a surface tubelet ``(B, T, N, V)``, the ``T`` frames
  read as channels (paper: SiT-tiny, ico3 patches 1280 × 45, T = 3), pooled to ``(B, D)``.
- Video and audio: embeddings of frozen towers, computed once (:mod:`neurokit.stimuli`), ``(B, D_video)``
  and ``(B, D_audio)``; the towers are not part of this module, so nothing trains them.
- One :class:`ProjectionHead` per modality → 384-d, L2-normalised. The fMRI embedding is the release's
  ``avg_fmri: post_proj``: every patch token is projected and the projections are averaged (the cls token is
  added to the sequence and discarded, ``use_class_token_fmri_encoder: True``).
- Loss: symmetric InfoNCE (:func:`info_nce`) for the pairs fMRI–video, fMRI–audio and video–audio, logits =
  cosine × exp(τ) with a fixed τ per pair (a buffer, so DDP needs no ``find_unused_parameters``): τ = 1.0
  for fMRI–video and 0.5 for fMRI–audio and video–audio (the release's ``temperature_video`` /
  ``temperature_audio``, read as ``exp(τ)`` by its ``clip-openai`` loss), weighted 0.8 / 0.1 / 0.1 (the
  release's weights).
- As in the released config (``config/CLIP-fmri-video-audio/hparams.yml``: ``fmri_encoder_trainable: False``,
  ``clip.dropout: 0.0``) the SiT is frozen and the heads have no dropout; only the three heads train.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import cast

import torch
import torch.nn as nn
import torch.nn.functional as F

from neurokit._utils.errors import ConfigError
from neurokit.models.config import config_from_dict
from neurokit.models.docs import fill_doc
from neurokit.models.sit import SiT, SiTConfig, sit_config

PAIRS = ("fmri_video", "fmri_audio", "video_audio")

#: the release's fixed logit scales, as τ of exp(τ): fMRI–video 1.0, fMRI–audio 0.5, video–audio 0.5
#: (metrics-lab/sim config/CLIP-fmri-video-audio/hparams.yml ``temperature_video``/``temperature_audio``;
#: models/clip.py scores the video–audio pair with ``temperature_audio``)
RELEASE_LOG_SCALE = (1.0, 0.5, 0.5)

#: how the fMRI tokens become one vector (:attr:`CLIPConfig.fmri_pool`)
FMRI_POOLS = ("mean_after_projection", "mean_before_projection", "cls")

#: what checkpoints written before these fields existed were trained with (read by :meth:`CLIPConfig.from_dict`)
LEGACY_DEFAULTS = {"fmri_pool": "cls", "train_fmri_encoder": True}


@dataclass
class CLIPConfig:
    """Hyperparameters of :class:`SurfaceCLIP` (written into every checkpoint).

    Attributes
    ----------
    fmri : SiTConfig
        The fMRI encoder's config (``n_outputs`` forced to 0; default SiT-tiny over 3 frames of 1280 ico3
        patches × 45 vertices).
    video_dim, audio_dim : int
        Sizes of the frozen towers' embeddings (768).
    embed_dim : int
        Width of the shared space (384).
    dropout : float
        Dropout in the projection heads, in ``[0, 1)`` (release: 0.0).
    lag_s : float
        Hemodynamic lag in seconds: fMRI frames ``[t, t+1, t+2]`` pair with the stimulus window starting at
        ``t − lag_s`` (6 s).
    weights : tuple of 3 float
        Loss weight per pair of :data:`PAIRS` (0.8, 0.1, 0.1).
    log_scale : tuple of 3 float
        Fixed τ per pair (logit scale exp(τ)); default :data:`RELEASE_LOG_SCALE` = (1.0, 0.5, 0.5);
        ``(log(1/0.07),) * 3``, CLIP's initial temperature, was neurokit's earlier choice.
    stimulus : dict
        The encoders (name, weights SHA-256, dim) the stimulus embeddings came from, checked at retrieval.
    fmri_pool : {"mean_after_projection", "mean_before_projection", "cls"}
        How the SiT's tokens become the fMRI embedding:

        - ``"mean_after_projection"`` (default; the release's ``avg_fmri: post_proj``): each patch token goes
          through the fMRI head and the projections are averaged; the cls token (when the SiT has one) is
          dropped first;
        - ``"mean_before_projection"`` (the release's ``prior_proj``): patch tokens averaged, then projected;
        - ``"cls"``: the cls token alone is projected. neurokit's earlier choice, kept for checkpoints trained
          with it and for SiTs fine-tuned on their cls token; it is not the paper's.
    train_fmri_encoder : bool
        False (default, the released config's ``fmri_encoder_trainable: False``) freezes the SiT (no gradient,
        eval mode), so CLIP learns the three heads on a fixed encoder — load one from a vsMAE run
        (``fmri_init``) for it to carry information. True trains the SiT with the heads: neurokit's earlier
        choice, useful when no pretrained encoder exists (e.g. from scratch on simulated data), not the
        paper's recipe.
    fmri_init : str or None
        Path of a checkpoint whose SiT encoder initialises the fMRI encoder (a ``neuro pretrain --model sit``
        run, as the release's ``init_weights: ssl_svmae``); recorded, read at build time only.

    Raises
    ------
    ConfigError
        Not one weight and one scale per pair, negative weights or lag, an unknown ``fmri_pool`` (or ``"cls"``
        with a SiT without cls token), ``dropout`` outside ``[0, 1)`` or a size below 1.

    Examples
    --------
    >>> CLIPConfig(video_dim=8).to_dict()["weights"]
    [0.8, 0.1, 0.1]
    """

    fmri: SiTConfig = field(
        default_factory=lambda: sit_config("tiny", n_chans=3, n_patches=1280, vertices_per_patch=45)
    )
    video_dim: int = 768
    audio_dim: int = 768
    embed_dim: int = 384
    dropout: float = 0.0
    lag_s: float = 6.0
    weights: tuple[float, float, float] = (0.8, 0.1, 0.1)
    log_scale: tuple[float, float, float] = RELEASE_LOG_SCALE
    stimulus: dict = field(default_factory=dict)
    fmri_pool: str = "mean_after_projection"
    train_fmri_encoder: bool = False
    fmri_init: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.fmri, dict):
            self.fmri = SiTConfig(**self.fmri)
        self.fmri = SiTConfig(**{**self.fmri.to_dict(), "n_outputs": 0})
        weights, log_scale = tuple(float(w) for w in self.weights), tuple(float(s) for s in self.log_scale)
        if len(weights) != 3 or len(log_scale) != 3:
            raise ConfigError(f"weights and log_scale need one value per pair {PAIRS}")
        self.weights, self.log_scale = weights, log_scale
        if any(w < 0 for w in self.weights) or sum(self.weights) <= 0:
            raise ConfigError(f"loss weights must be >= 0 with a positive sum, got {self.weights}")
        if self.lag_s < 0:
            raise ConfigError(f"lag_s must be >= 0 s, got {self.lag_s}")
        if self.fmri_pool not in FMRI_POOLS:
            raise ConfigError(f"fmri_pool={self.fmri_pool!r}; allowed: {', '.join(FMRI_POOLS)}")
        if self.fmri_pool == "cls" and self.fmri.pool != "cls":
            raise ConfigError("fmri_pool='cls' needs a SiT with a cls token (pool='cls')")
        if not 0.0 <= float(self.dropout) < 1.0:
            raise ConfigError(f"dropout must be in [0, 1), got {self.dropout}")
        for k in ("video_dim", "audio_dim", "embed_dim"):
            if int(getattr(self, k)) < 1:
                raise ConfigError(f"{k} must be >= 1, got {getattr(self, k)}")

    def to_dict(self) -> dict:
        d = asdict(self)
        d["weights"], d["log_scale"] = list(self.weights), list(self.log_scale)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "CLIPConfig":
        """The config recorded in a checkpoint. A record written before ``fmri_pool`` and
        ``train_fmri_encoder`` existed gets :data:`LEGACY_DEFAULTS` (cls-token embedding, trained SiT), the
        settings its weights were trained with, not today's defaults."""
        d = dict(d)
        if "log_scale" in d or "weights" in d:  # a recorded config, not a partial one
            for k, v in LEGACY_DEFAULTS.items():
                d.setdefault(k, v)
        return config_from_dict(cls, d, "CLIP")


class ProjectionHead(nn.Module):
    """``Linear(in→D) → GELU → Linear(D→D) → dropout → + residual (the first projection) → LayerNorm``;
    ``(B, in_dim)`` → ``(B, D)``.

    Parameters
    ----------
    in_dim : int
        Width of the input embedding.
    dim : int
        Width of the shared space ``D`` (384).
    dropout : float
        Dropout before the residual sum.

    Examples
    --------
    >>> ProjectionHead(8, dim=4)(torch.randn(2, 8)).shape
    torch.Size([2, 4])
    """

    def __init__(self, in_dim: int, dim: int = 384, dropout: float = 0.0) -> None:
        super().__init__()
        self.proj = nn.Linear(in_dim, dim)
        self.fc = nn.Linear(dim, dim)
        self.dropout = nn.Dropout(dropout)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        p = self.proj(x)
        return self.norm(self.dropout(self.fc(F.gelu(p))) + p)


def info_nce(a: torch.Tensor, b: torch.Tensor, log_scale: float | torch.Tensor) -> torch.Tensor:
    """Symmetric InfoNCE (CLIP, Radford et al. 2021): rows ``i`` of ``a`` and ``b`` are positives, every other
    row a negative; ``logits = exp(log_scale) · a bᵀ``; mean of the two cross-entropies (a→b and b→a).

    Parameters
    ----------
    a, b : Tensor, shape ``(B, D)``
        L2-normalised embeddings of the two modalities, row ``i`` of each from the same sample.
    log_scale : float or Tensor
        τ of the logit scale ``exp(τ)``.

    Returns
    -------
    Tensor
        Scalar loss (nats).

    Examples
    --------
    >>> z = torch.eye(3)
    >>> bool(info_nce(z, z, 5.0) < info_nce(z, z.flip(0), 5.0))
    True
    """
    logits = torch.exp(torch.as_tensor(log_scale, dtype=a.dtype, device=a.device)) * a @ b.T
    target = torch.arange(len(a), device=a.device)
    return 0.5 * (F.cross_entropy(logits, target) + F.cross_entropy(logits.T, target))


@dataclass
class CLIPOutput:
    """What :meth:`SurfaceCLIP.forward` returns.

    Attributes
    ----------
    loss : Tensor
        Scalar: the weighted sum of the pairs' InfoNCE losses.
    losses : dict
        Pair name (:data:`PAIRS`) → its loss (detached float).
    fmri, video, audio : Tensor, shape ``(B, embed_dim)``
        The L2-normalised embeddings.
    """

    loss: torch.Tensor
    losses: dict
    fmri: torch.Tensor
    video: torch.Tensor
    audio: torch.Tensor


class SurfaceCLIP(nn.Module):
    """fMRI encoder + three projection heads (see the module docstring).

    ``forward(x, video, audio)``: ``x`` fMRI tubelets ``(B, T, N, V)`` (z-scored), ``video`` ``(B, video_dim)``
    and ``audio`` ``(B, audio_dim)`` frozen-tower embeddings → :class:`CLIPOutput`.

    Parameters
    ----------
    config : CLIPConfig, optional
        Default :class:`CLIPConfig` ``()`` (the paper's sizes).

    Examples
    --------
    >>> from neurokit.models.sit import sit_config
    >>> fmri = sit_config("tiny", depth=1, n_chans=2, n_patches=20, vertices_per_patch=45)
    >>> m = SurfaceCLIP(CLIPConfig(fmri=fmri, video_dim=8, audio_dim=4, embed_dim=16))
    >>> out = m(torch.randn(3, 2, 20, 45), torch.randn(3, 8), torch.randn(3, 4))
    >>> out.fmri.shape, sorted(out.losses)
    (torch.Size([3, 16]), ['fmri_audio', 'fmri_video', 'video_audio'])
    """

    log_scale: torch.Tensor  # buffers, ``(3,)``: the pairs' log temperatures and loss weights
    weights: torch.Tensor

    def __init__(self, config: CLIPConfig | None = None) -> None:
        super().__init__()
        self.config = cfg = config or CLIPConfig()
        self.encoder = SiT(cfg.fmri)
        self.fmri_head = ProjectionHead(cfg.fmri.dim, cfg.embed_dim, cfg.dropout)
        self.video_head = ProjectionHead(cfg.video_dim, cfg.embed_dim, cfg.dropout)
        self.audio_head = ProjectionHead(cfg.audio_dim, cfg.embed_dim, cfg.dropout)
        self.register_buffer("log_scale", torch.tensor(cfg.log_scale, dtype=torch.float32))
        self.register_buffer("weights", torch.tensor(cfg.weights, dtype=torch.float32))
        if not cfg.train_fmri_encoder:
            self.encoder.requires_grad_(False)
            self.encoder.eval()

    def train(self, mode: bool = True) -> "SurfaceCLIP":
        """As :meth:`torch.nn.Module.train`; a frozen SiT (``train_fmri_encoder=False``) stays in eval mode."""
        super().train(mode)
        if not self.config.train_fmri_encoder:
            self.encoder.eval()
        return self

    @classmethod
    @fill_doc
    def from_pretrained(cls, source, *, map_location="cpu", allow_partial: bool = False, **config) -> "SurfaceCLIP":
        """The tri-modal CLIP of a ``clip``-family pretraining checkpoint.

        Parameters
        ----------
        source : str or Path
            A neurokit pretraining checkpoint of the ``clip`` family (architecture from its ``model_config``),
            a bare SurfaceCLIP state dict (architecture from ``**config``), or Hub weights
            ``hub:ORG/NAME[/FILE][@REVISION]``. Read with ``torch.load(weights_only=True)``.
        %(map_location)s
        %(allow_partial)s
        **config
            :class:`CLIPConfig` fields over the recorded ones (e.g. ``dropout=0.0``).

        Returns
        -------
        SurfaceCLIP
            With ``pretrained_info`` (source, SHA-256, family, kind, tensors loaded/total).

        Raises
        ------
        neurokit.models.pretrained.PretrainedError
            A checkpoint of another family (the message names both), a file that would run code on loading,
            or weights that do not fit.
        ConfigError
            A fine-tuning checkpoint (its SiT encoder: :meth:`SiT.from_pretrained
            <neurokit.models.sit.SiT.from_pretrained>`), or an unknown config field.

        Examples
        --------
        >>> import neurokit, tempfile, os
        >>> from neurokit.models.checkpoint import save_checkpoint
        >>> m = neurokit.create_model("clip", n_layers=1, n_patches=20, video_dim=8, audio_dim=4)
        >>> p = save_checkpoint(os.path.join(tempfile.mkdtemp(), "last.pt"), {"kind": "pretrain", "model": "clip",
        ...                     "model_config": m.config.to_dict(), "state_dict": m.state_dict()})
        >>> SurfaceCLIP.from_pretrained(p).config.video_dim
        8
        """
        from neurokit.models.pretrained import load_whole_module

        return load_whole_module(
            lambda recorded: cls(CLIPConfig.from_dict({**recorded, **config})),
            source,
            family="clip",
            caller="SurfaceCLIP.from_pretrained",
            what="CLIP model",
            lacks="the CLIP projection heads",
            map_location=map_location,
            allow_partial=allow_partial,
        )

    def embed_fmri(self, x: torch.Tensor) -> torch.Tensor:
        """``(B, T, N, V)`` tubelets → ``(B, embed_dim)`` unit vectors, pooled as :attr:`CLIPConfig.fmri_pool`
        says (default: the mean of the projected patch tokens, cls token discarded)."""
        return F.normalize(self.fmri_features(x), dim=-1)

    def fmri_features(self, x: torch.Tensor) -> torch.Tensor:
        """``(B, T, N, V)`` → the fMRI head's output ``(B, embed_dim)`` before L2 normalisation.

        ``"mean_after_projection"``: ``mean_n head(h_n)`` over the patch tokens ``h_n`` of
        :meth:`SiT.forward_features <neurokit.models.sit.SiT.forward_features>` (cls token dropped), as the
        release's ``CLIPfMRIVideoAudio.forward`` with ``avg: post_proj``. The head is not linear (GELU,
        LayerNorm), so this differs from projecting the mean token (``"mean_before_projection"``).
        """
        h = self.encoder.forward_features(x)
        if self.config.fmri_pool == "cls":
            return self.fmri_head(h[:, 0])
        if self.config.fmri.pool == "cls":
            h = h[:, 1:]  # the cls token takes part in attention, then is discarded
        if self.config.fmri_pool == "mean_before_projection":
            return self.fmri_head(h.mean(dim=1))
        return self.fmri_head(h).mean(dim=1)

    def embed_video(self, v: torch.Tensor) -> torch.Tensor:
        """``(B, video_dim)`` frozen-tower embeddings → ``(B, embed_dim)`` unit vectors."""
        return F.normalize(self.video_head(v), dim=-1)

    def embed_audio(self, a: torch.Tensor) -> torch.Tensor:
        """``(B, audio_dim)`` frozen-tower embeddings → ``(B, embed_dim)`` unit vectors."""
        return F.normalize(self.audio_head(a), dim=-1)

    def forward(self, x: torch.Tensor, video: torch.Tensor, audio: torch.Tensor) -> CLIPOutput:
        zf, zv, za = self.embed_fmri(x), self.embed_video(video), self.embed_audio(audio)
        parts = (
            info_nce(zf, zv, self.log_scale[0]),
            info_nce(zf, za, self.log_scale[1]),
            info_nce(zv, za, self.log_scale[2]),
        )
        loss = cast(torch.Tensor, sum(w * p for w, p in zip(self.weights, parts)))  # sum of 0 and tensors
        return CLIPOutput(loss, {k: float(p.detach()) for k, p in zip(PAIRS, parts)}, zf, zv, za)
