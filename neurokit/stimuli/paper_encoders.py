"""The tri-modal CLIP paper's stimulus encoders through Hugging Face ``transformers`` (extra ``paper-encoders``).

The SIM release (metrics-lab/sim, ``processing/step_2_extract_embeddings_*.py``) embeds each 3-s movie clip with

- **VideoMAE-B** fine-tuned on Kinetics-400 (mmaction2 ``vit-base-p16_videomae-k400-pre_16x4x1_kinetics-400``; in
  ``transformers``: ``MCG-NJU/videomae-base-finetuned-kinetics``): 16 frames of the clip, the output of the
  backbone's ``fc_norm`` (LayerNorm of the mean patch token), 768-d — :class:`VideoMAEEncoder`;
- **wav2vec 2.0 base, 960 h** (torchaudio ``WAV2VEC2_ASR_BASE_960H``; in ``transformers``:
  ``facebook/wav2vec2-base-960h``): the raw 16-kHz waveform (the torchaudio bundle does not normalise it), the
  last transformer layer's output averaged over time, 768-d — :class:`Wav2Vec2Encoder`.

neurokit's default towers stay the open_clip ones (:mod:`neurokit.stimuli.encoders`); these let a user who has
the paper's weights reproduce its inputs. Names for ``neuro embed-stimuli``: ``--video-encoder videomae`` and
``--audio-encoder wav2vec2`` with ``--video-pretrained``/``--audio-pretrained`` a local model folder (or a Hub
id, which needs a network once); ``videomae-tiny``/``wav2vec2-tiny`` are small random configurations for tests.
Every encoder is frozen (eval mode, no gradient) and reports ``weights_sha256``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from neurokit._utils.errors import ConfigError
from neurokit.stimuli.encoders import state_sha256

#: ImageNet statistics (0-1 scale) of VideoMAE's test pipeline (mmaction2: mean 123.675/116.28/103.53, std 58.395/57.12/57.375)
IMAGENET_MEAN, IMAGENET_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
VIDEOMAE, WAV2VEC2 = "videomae", "wav2vec2"
PAPER_VIDEO = (VIDEOMAE, VIDEOMAE + "-tiny")
PAPER_AUDIO = (WAV2VEC2, WAV2VEC2 + "-tiny")


def _transformers():
    try:
        import transformers
    except ImportError as exc:  # pragma: no cover - the extra is installed in CI
        raise ConfigError("the paper's encoders need transformers: pip install 'neurokit-fm[paper-encoders]'") from exc
    return transformers


def tiny_videomae_config():
    """A 1-layer, 32-wide VideoMAE configuration on 4 frames of 32 × 32 pixels (random init, for tests; no download).

    Returns
    -------
    transformers.VideoMAEConfig
        With mean pooling (``fc_norm``) on, as the release's model.

    Raises
    ------
    ConfigError
        ``transformers`` is not installed (extra ``paper-encoders``).

    Examples
    --------
    >>> cfg = tiny_videomae_config()
    >>> cfg.num_frames, cfg.image_size, cfg.hidden_size
    (4, 32, 32)
    """
    return _transformers().VideoMAEConfig(
        image_size=32,
        patch_size=16,
        num_frames=4,
        tubelet_size=2,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        use_mean_pooling=True,
        num_labels=2,
    )


def tiny_wav2vec2_config():
    """A 1-layer, 32-wide wav2vec 2.0 configuration with the base model's 7-layer feature encoder (20 ms frames).

    Returns
    -------
    transformers.Wav2Vec2Config
        For random initialisation in tests (no download).

    Raises
    ------
    ConfigError
        ``transformers`` is not installed (extra ``paper-encoders``).

    Examples
    --------
    >>> tiny_wav2vec2_config().hidden_size
    32
    """
    return _transformers().Wav2Vec2Config(
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        conv_dim=(16,) * 7,
        num_conv_pos_embeddings=16,
        num_conv_pos_embedding_groups=2,
    )


def _load(cls, pretrained, option: str, what: str):
    try:
        return cls.from_pretrained(
            str(Path(str(pretrained)).expanduser()) if Path(str(pretrained)).expanduser().exists() else str(pretrained)
        )
    except Exception as exc:  # network and format errors come from several libraries
        raise ConfigError(
            f"{option}={pretrained!r}: the {what} weights could not be loaded ({type(exc).__name__}: {exc}). Give a local "
            f"folder holding config.json and the weights (download it where a network exists, e.g. "
            f"`huggingface-cli download {'MCG-NJU/videomae-base-finetuned-kinetics' if what == 'VideoMAE' else 'facebook/wav2vec2-base-960h'}`)"
        ) from exc


def clip_frame_indices(n_available: int, n_frames: int) -> np.ndarray:
    """``n_frames`` indices spread evenly over ``n_available`` decoded frames, first and last included.

    Indices repeat when fewer frames are available than wanted.

    Parameters
    ----------
    n_available : int
        Frames decoded for the clip window.
    n_frames : int
        Frames the video model takes.

    Returns
    -------
    ndarray, shape (n_frames,), int
        Indices into the decoded frames, non-decreasing.

    Raises
    ------
    ValueError
        No frame available.

    Examples
    --------
    >>> clip_frame_indices(9, 4).tolist(), clip_frame_indices(2, 4).tolist()
    ([0, 3, 5, 8], [0, 0, 1, 1])
    """
    if n_available < 1:
        raise ValueError("a clip window holds no decoded frame")
    return np.round(np.linspace(0, n_available - 1, n_frames)).astype(int)


class _FrozenHF(nn.Module):
    tower: Any  # set by each subclass: a transformers model, whose submodules are called by name
    _dim: int  # its output width
    mean: torch.Tensor  # buffers (VideoMAE): the input normalisation
    std: torch.Tensor

    def _freeze(self) -> None:
        for p in self.parameters():
            p.requires_grad_(False)
        self.eval()
        self.weights_sha256 = state_sha256(self.tower)

    def train(self, mode: bool = True):  # frozen: always in eval mode
        return super().train(False)

    @property
    def dim(self) -> int:
        return int(self._dim)


class VideoMAEEncoder(_FrozenHF):
    """Frozen VideoMAE (``VideoMAEForVideoClassification``'s backbone and ``fc_norm``):
    clips ``(B, T, H, W, 3)`` uint8 → ``(B, hidden_size)`` float32, the release's ``fc_norm`` activations.

    Parameters
    ----------
    pretrained : str or path, optional
        A local model folder or a Hub id (``MCG-NJU/videomae-base-finetuned-kinetics`` is the release's model).
    config : transformers.VideoMAEConfig, optional
        Random initialisation from this configuration (seeded by ``seed``) instead of ``pretrained``.
    seed : int
        Seed of the random initialisation from ``config``.
    name : str
        Recorded in the stimulus store.

    Raises
    ------
    ConfigError
        Neither or both of ``pretrained`` and ``config``; weights that cannot be loaded (the message names
        ``--video-pretrained``); a model without mean pooling (no ``fc_norm``).

    Examples
    --------
    >>> enc = VideoMAEEncoder(config=tiny_videomae_config())
    >>> enc(torch.zeros(2, 7, 40, 48, 3, dtype=torch.uint8)).shape
    torch.Size([2, 32])
    """

    clip_input = True

    def __init__(
        self, pretrained: str | Path | None = None, *, config=None, seed: int = 0, name: str = VIDEOMAE
    ) -> None:
        super().__init__()
        tf = _transformers()
        if (pretrained is None) == (config is None):
            raise ConfigError(
                "video encoder 'videomae': give the weights (video_pretrained=FOLDER) "
                "(videomae-tiny: a random test configuration)"
            )
        if config is not None:
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(seed)
                self.tower = tf.VideoMAEForVideoClassification(config)
        else:
            self.tower = _load(tf.VideoMAEForVideoClassification, pretrained, "video_pretrained", "VideoMAE")
        if getattr(self.tower, "fc_norm", None) is None:
            raise ConfigError(
                f"video_pretrained={pretrained!r}: a VideoMAE without mean pooling (use_mean_pooling); "
                "the release's embedding is the fc_norm of the mean token"
            )
        c = self.tower.config
        self.n_frames, self.image_size = int(c.num_frames), int(c.image_size)
        self._dim = int(c.hidden_size)
        self.info = {
            "name": name,
            "pretrained": None if pretrained is None else str(pretrained),
            "image_size": (self.image_size, self.image_size),
            "n_frames": self.n_frames,
        }
        self.register_buffer("mean", torch.tensor(IMAGENET_MEAN).view(1, 1, 3, 1, 1), persistent=False)
        self.register_buffer("std", torch.tensor(IMAGENET_STD).view(1, 1, 3, 1, 1), persistent=False)
        self._freeze()

    def resize(self, frames: torch.Tensor) -> torch.Tensor:
        """``(..., H, W, 3)`` uint8 → ``(..., S, S, 3)`` uint8: shorter side to S, centre crop (VideoMAE's test
        pipeline: Resize(-1, S), CenterCrop(S))."""
        lead, (h, w) = frames.shape[:-3], frames.shape[-3:-1]
        x = frames.reshape(-1, h, w, 3).permute(0, 3, 1, 2).float()
        s = self.image_size
        nh, nw = (s, max(s, round(w * s / h))) if h <= w else (max(s, round(h * s / w)), s)
        x = F.interpolate(x, size=(nh, nw), mode="bilinear", antialias=True, align_corners=False)
        top, left = (nh - s) // 2, (nw - s) // 2
        x = x[:, :, top : top + s, left : left + s]
        return x.round().clamp(0, 255).to(torch.uint8).permute(0, 2, 3, 1).reshape(*lead, s, s, 3)

    def forward(self, clips: torch.Tensor) -> torch.Tensor:
        """``(B, T, H, W, 3)`` uint8, any ``T`` ≥ 1 (``n_frames`` taken evenly, :func:`clip_frame_indices`)."""
        if clips.ndim != 5 or clips.shape[-1] != 3:
            raise ValueError(f"VideoMAE takes clips (B, T, H, W, 3); got {tuple(clips.shape)}")
        idx = torch.from_numpy(clip_frame_indices(clips.shape[1], self.n_frames))
        x = self.resize(clips[:, idx]) if clips.shape[2:4] != (self.image_size, self.image_size) else clips[:, idx]
        x = (x.permute(0, 1, 4, 2, 3).float() / 255.0 - self.mean) / self.std  # (B, T, 3, S, S)
        h = self.tower.videomae(pixel_values=x).last_hidden_state
        return self.tower.fc_norm(h.mean(dim=1))


class Wav2Vec2Encoder(_FrozenHF):
    """Frozen wav2vec 2.0 (``Wav2Vec2Model``): waveform windows ``(B, n_samples)`` at 16 kHz → ``(B, hidden_size)``
    float32, the last layer's output averaged over time (the release's ``features[-1].mean``).

    Parameters
    ----------
    pretrained : str or path, optional
        A local model folder or a Hub id (``facebook/wav2vec2-base-960h`` is the release's model).
    config : transformers.Wav2Vec2Config, optional
        Random initialisation from this configuration (seeded by ``seed``) instead of ``pretrained``.
    seed : int
        Seed of the random initialisation from ``config``.
    name : str
        Recorded in the stimulus store.

    Raises
    ------
    ConfigError
        Neither or both of ``pretrained`` and ``config``; weights that cannot be loaded.

    Examples
    --------
    >>> enc = Wav2Vec2Encoder(config=tiny_wav2vec2_config())
    >>> enc.encode(np.zeros((2, 16_000), np.float32)).shape
    torch.Size([2, 32])
    """

    def __init__(
        self, pretrained: str | Path | None = None, *, config=None, seed: int = 1, name: str = WAV2VEC2
    ) -> None:
        super().__init__()
        tf = _transformers()
        if (pretrained is None) == (config is None):
            raise ConfigError(
                "audio encoder 'wav2vec2': give the weights (audio_pretrained=FOLDER) "
                "(wav2vec2-tiny: a random test configuration)"
            )
        if config is not None:
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(seed)
                self.tower = tf.Wav2Vec2Model(config)
        else:
            self.tower = _load(tf.Wav2Vec2Model, pretrained, "audio_pretrained", "wav2vec2")
        self._dim = int(self.tower.config.hidden_size)
        self.info = {"name": name, "pretrained": None if pretrained is None else str(pretrained)}
        self.input_note = "raw 16-kHz waveform (not normalised); last layer, mean over time"
        self._freeze()

    def forward(self, audio: torch.Tensor) -> torch.Tensor:
        return self.tower(input_values=audio.float()).last_hidden_state.mean(dim=1)

    def encode(self, audio: np.ndarray) -> torch.Tensor:
        """``(B, n_samples)`` float waveforms at 16 kHz, not normalised (as the torchaudio bundle) → ``(B, D)``."""
        return self(torch.as_tensor(np.atleast_2d(np.asarray(audio, np.float32))))


def paper_video_encoder(name: str, pretrained=None, *, seed: int = 0) -> VideoMAEEncoder:
    """The paper's video encoder by name: ``videomae`` (weights from ``pretrained``) or ``videomae-tiny``.

    Parameters
    ----------
    name : str
        ``"videomae"`` or ``"videomae-tiny"`` (random, :func:`tiny_videomae_config`).
    pretrained : str or Path, optional
        A local model folder or a Hub id; required for ``"videomae"``, refused for ``"videomae-tiny"``.
    seed : int
        Seed of the random initialisation (``-tiny``).

    Returns
    -------
    VideoMAEEncoder
        Frozen.

    Raises
    ------
    ConfigError
        Weights given for a ``-tiny`` encoder, none given for ``"videomae"``, or weights that cannot be loaded.

    Examples
    --------
    >>> paper_video_encoder("videomae-tiny").dim
    32
    """
    if name.endswith("-tiny"):
        if pretrained:
            raise ConfigError(f"encoder {name!r} is random-init only; drop video_pretrained=")
        return VideoMAEEncoder(config=tiny_videomae_config(), seed=seed, name=name)
    return VideoMAEEncoder(pretrained, seed=seed, name=name)


def paper_audio_encoder(name: str, pretrained=None, *, seed: int = 1) -> Wav2Vec2Encoder:
    """The paper's audio encoder by name: ``wav2vec2`` (weights from ``pretrained``) or ``wav2vec2-tiny``.

    Parameters
    ----------
    name : str
        ``"wav2vec2"`` or ``"wav2vec2-tiny"`` (random, :func:`tiny_wav2vec2_config`).
    pretrained : str or Path, optional
        A local model folder or a Hub id; required for ``"wav2vec2"``, refused for ``"wav2vec2-tiny"``.
    seed : int
        Seed of the random initialisation (``-tiny``).

    Returns
    -------
    Wav2Vec2Encoder
        Frozen.

    Raises
    ------
    ConfigError
        Weights given for a ``-tiny`` encoder, none given for ``"wav2vec2"``, or weights that cannot be loaded.

    Examples
    --------
    >>> paper_audio_encoder("wav2vec2-tiny").dim
    32
    """
    if name.endswith("-tiny"):
        if pretrained:
            raise ConfigError(f"encoder {name!r} is random-init only; drop audio_pretrained=")
        return Wav2Vec2Encoder(config=tiny_wav2vec2_config(), seed=seed, name=name)
    return Wav2Vec2Encoder(pretrained, seed=seed, name=name)
