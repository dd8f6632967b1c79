"""Frozen stimulus encoders built from open_clip parts.

- **Video**: an open_clip image tower applied to every frame (resized to the tower's input size,
  normalised with the tower's mean/std); a window's embedding is the mean over its frames.
- **Audio**: AST-style (Gong et al., "AST: Audio Spectrogram Transformer", Interspeech 2021): a 128-bin
  log-mel spectrogram (25 ms Hann window, 10 ms hop, 16 kHz; normalised with AST's AudioSet statistics)
  is read as a one-channel image by an open_clip vision transformer (the channel repeated to RGB, as AST
  does when it starts from image weights), resized to the tower's input size.

Encoder names are open_clip model names (``open_clip.list_models()``, e.g. ``"ViT-B-32"``) or ``"tiny"``: a
randomly initialised 2-layer, 64-wide open_clip vision transformer (seeded, for tests and the simulation).
``pretrained`` is an open_clip tag (``open_clip.list_pretrained_tags_by_model(name)``; needs a network the
first time, then open_clip's cache) or a local weights file; None gives random initialisation.
Every encoder is frozen (``requires_grad=False``, eval mode) and reports ``weights_sha256``.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from neurokit._utils.errors import ConfigError
from neurokit.stimuli.media import AUDIO_RATE

#: AST's AudioSet log-mel statistics (Gong et al. 2021, their ``norm_mean``/``norm_std``)
AST_MEAN, AST_STD = -4.2677393, 4.5689974
N_MELS = 128
TINY = "tiny"


def _tiny_tower(image_size, seed: int) -> nn.Module:
    from open_clip.model import CLIPVisionCfg, _build_vision_tower

    cfg = CLIPVisionCfg(layers=2, width=64, head_width=32, patch_size=8, image_size=image_size, mlp_ratio=2.0)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return _build_vision_tower(embed_dim=64, vision_cfg=cfg)


def state_sha256(module: nn.Module) -> str:
    """SHA-256 over a module's ``state_dict``: the identity of its weights.

    Keys are taken in sorted order; each tensor contributes its name, dtype, shape and bytes.

    Parameters
    ----------
    module : torch.nn.Module
        Any module.

    Returns
    -------
    str
        64 hexadecimal digits; equal for modules with equal weights, whatever device they are on.

    Examples
    --------
    >>> import torch
    >>> torch.manual_seed(0)  # doctest: +ELLIPSIS
    <torch._C.Generator object at ...>
    >>> a = torch.nn.Linear(2, 2)
    >>> b = torch.nn.Linear(2, 2)
    >>> _ = b.load_state_dict(a.state_dict())
    >>> state_sha256(a) == state_sha256(b), len(state_sha256(a))
    (True, 64)
    """
    h = hashlib.sha256()
    for k, v in sorted(module.state_dict().items()):
        t = v.detach().cpu().contiguous()
        h.update(f"{k}|{t.dtype}|{tuple(t.shape)}|".encode())
        h.update(t.numpy().tobytes() if t.dtype != torch.bfloat16 else t.float().numpy().tobytes())
    return h.hexdigest()


def open_clip_tower(
    name: str,
    pretrained: str | Path | None = None,
    *,
    option: str = "video_pretrained",
    name_option: str = "video encoder",
    seed: int = 0,
    tiny_size=32,
):
    """The image tower of open_clip model ``name`` with its preprocessing facts.

    Parameters
    ----------
    name : str
        An open_clip model name (``open_clip.list_models()``, e.g. ``"ViT-B-32"``) or ``"tiny"``: a seeded,
        randomly initialised 2-layer, 64-wide vision transformer (for tests and the simulation).
    pretrained : str or Path, optional
        An open_clip tag of ``name`` (``open_clip.list_pretrained_tags_by_model(name)``; needs a network the first
        time) or a local weights file; None gives random initialisation.
    option : str
        How the caller names ``pretrained`` in error messages.
    name_option : str
        How the caller names ``name`` in error messages.
    seed : int
        Seed of the ``"tiny"`` tower's initialisation.
    tiny_size : int or (int, int)
        Input size (height, width) in pixels of the ``"tiny"`` tower.

    Returns
    -------
    tower : nn.Module
        ``(B, 3, H, W)`` float → ``(B, D)``.
    info : dict
        ``name``, ``pretrained`` (tag, file path or None), ``image_size`` (H, W), ``mean``, ``std``.

    Raises
    ------
    ConfigError
        A name open_clip does not know (said as ``name_option``, e.g. ``"video encoder"``), an unknown tag, or
        weights that cannot be fetched (no network): the message names the parameter ``option`` (e.g.
        ``"video_pretrained"``) and how to pass a local file instead.

    Examples
    --------
    >>> tower, info = open_clip_tower("tiny")
    >>> info["image_size"], tower(torch.zeros(1, 3, 32, 32)).shape
    ((32, 32), torch.Size([1, 64]))
    """
    import open_clip

    if name == TINY:
        if pretrained:
            raise ConfigError(f"encoder 'tiny' is random-init only; drop {option}= or choose an open_clip model")
        tower = _tiny_tower(tiny_size, seed)
        size = tuple(tiny_size) if isinstance(tiny_size, (tuple, list)) else (tiny_size, tiny_size)
        return tower, {
            "name": TINY,
            "pretrained": None,
            "image_size": size,
            "mean": list(open_clip.OPENAI_DATASET_MEAN),
            "std": list(open_clip.OPENAI_DATASET_STD),
        }
    known = open_clip.list_models()
    if name not in known:
        close = [m for m in known if m.lower().startswith(name.lower()[:5])][:8]
        raise ConfigError(
            f"{name_option} {name!r}: open_clip does not know this model; choose one of open_clip.list_models() "
            f"(e.g. {', '.join(close or known[:8])}) or 'tiny' (random init, for tests)"
        )
    source = pretrained
    if pretrained is not None and not Path(str(pretrained)).expanduser().exists():
        tags = open_clip.list_pretrained_tags_by_model(name)
        if str(pretrained) not in tags:
            raise ConfigError(
                f"{option}={pretrained!r}: neither a local weights file nor an open_clip tag of {name}; "
                f"tags: {', '.join(tags) or 'none'}"
            )
    elif pretrained is not None:
        source = str(Path(str(pretrained)).expanduser())
    try:
        model = open_clip.create_model(name, pretrained=source)
    except Exception as exc:  # network errors come from several libraries (huggingface_hub, urllib, requests)
        raise ConfigError(
            f"{option}={pretrained!r}: the weights of {name} could not be loaded ({type(exc).__name__}: {exc}). "
            "Without a network, download them where one exists (open_clip caches them under ~/.cache) and pass "
            f"the local file: {option}='/path/to/open_clip_model.safetensors'"
        ) from exc
    cfg = getattr(model.visual, "preprocess_cfg", {}) or {}
    size = model.visual.image_size if hasattr(model.visual, "image_size") else (224, 224)
    size = tuple(size) if isinstance(size, (tuple, list)) else (int(size), int(size))
    return model.visual, {
        "name": name,
        "pretrained": None if pretrained is None else str(pretrained),
        "image_size": size,
        "mean": list(cfg.get("mean", open_clip.OPENAI_DATASET_MEAN)),
        "std": list(cfg.get("std", open_clip.OPENAI_DATASET_STD)),
    }


class _Frozen(nn.Module):
    tower: nn.Module  # set by each subclass: the open_clip tower
    _dim: int  # its output width
    mean: torch.Tensor  # buffers: the tower's input normalisation
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


class FrameEncoder(_Frozen):
    """Frozen open_clip image tower for video frames: ``(B, H, W, 3)`` uint8 → ``(B, D)`` float32.

    Frames are scaled to [0, 1], resized to the tower's input size and normalised with its mean and standard
    deviation. The module stays in eval mode with ``requires_grad=False``.

    Parameters
    ----------
    name : str
        An open_clip model name or ``"tiny"`` (see :func:`open_clip_tower`).
    pretrained : str or Path, optional
        An open_clip tag or a local weights file; None gives random initialisation.
    seed : int
        Seed of the ``"tiny"`` tower.

    Attributes
    ----------
    info : dict
        What :func:`open_clip_tower` reports (name, pretrained, image_size, mean, std).
    weights_sha256 : str
        :func:`state_sha256` of the tower.
    dim : int
        Output width ``D``.

    Raises
    ------
    ConfigError
        As :func:`open_clip_tower`.

    Examples
    --------
    >>> enc = FrameEncoder("tiny")
    >>> enc(torch.zeros(2, 48, 64, 3, dtype=torch.uint8)).shape, enc.dim
    (torch.Size([2, 64]), 64)
    """

    def __init__(self, name: str = "ViT-B-32", pretrained: str | Path | None = None, *, seed: int = 0) -> None:
        super().__init__()
        self.tower, self.info = open_clip_tower(
            name, pretrained, option="video_pretrained", name_option="video encoder", seed=seed, tiny_size=32
        )
        self.register_buffer("mean", torch.tensor(self.info["mean"]).view(1, 3, 1, 1), persistent=False)
        self.register_buffer("std", torch.tensor(self.info["std"]).view(1, 3, 1, 1), persistent=False)
        with torch.no_grad():
            self._dim = self.tower(torch.zeros(1, 3, *self.info["image_size"])).shape[-1]
        self._freeze()

    def preprocess(self, frames: torch.Tensor) -> torch.Tensor:
        x = frames.permute(0, 3, 1, 2).float() / 255.0
        x = F.interpolate(x, size=self.info["image_size"], mode="bilinear", antialias=True, align_corners=False)
        return (x - self.mean) / self.std

    def forward(self, frames: torch.Tensor) -> torch.Tensor:
        return self.tower(self.preprocess(frames))


def log_mel(audio: np.ndarray, rate: int = AUDIO_RATE, n_mels: int = N_MELS) -> np.ndarray:
    """Log-mel spectrograms with AST's Kaldi-fbank settings, computed with :func:`torch.stft`.

    25 ms Hann window, 10 ms hop, 512-point FFT, HTK mel scale from 20 Hz to ``rate / 2``, natural log of
    power + 1e-6.

    Parameters
    ----------
    audio : ndarray, shape (n_samples,) or (B, n_samples)
        Mono waveform(s) at ``rate`` Hz.
    rate : int
        Sampling rate, in Hz (16,000).
    n_mels : int
        Number of mel bands.

    Returns
    -------
    ndarray, shape (n_frames, n_mels) or (B, n_frames, n_mels), float32
        One row per 10-ms frame; ``n_frames = 1 + (n_samples − 512) // 160`` at 16 kHz.

    Examples
    --------
    >>> import numpy as np
    >>> log_mel(np.zeros(16000)).shape, log_mel(np.zeros((2, 16000))).shape
    ((97, 128), (2, 97, 128))
    """
    x = torch.as_tensor(np.asarray(audio, dtype=np.float32))
    win, hop, nfft = int(0.025 * rate), int(0.010 * rate), 512
    z = torch.stft(
        x, n_fft=nfft, hop_length=hop, win_length=win, window=torch.hann_window(win), center=False, return_complex=True
    )
    power = z.abs() ** 2  # (..., n_freqs, n_frames)
    fb = torch.from_numpy(mel_filterbank(rate, nfft, n_mels)).float()
    return torch.log(fb @ power + 1e-6).transpose(-1, -2).numpy()


def mel_filterbank(rate: int, nfft: int, n_mels: int, fmin: float = 20.0, fmax: float | None = None) -> np.ndarray:
    """Triangular HTK mel filters (mel = 2595·log10(1 + f/700)), equally spaced on the mel scale.

    Parameters
    ----------
    rate : int
        Sampling rate, in Hz.
    nfft : int
        FFT length, in samples.
    n_mels : int
        Number of filters.
    fmin : float
        Lowest edge, in Hz.
    fmax : float, optional
        Highest edge, in Hz; default ``rate / 2``.

    Returns
    -------
    ndarray, shape (n_mels, nfft // 2 + 1)
        Filter weights over the FFT bins, peak 1.

    Examples
    --------
    >>> fb = mel_filterbank(16000, 512, 128)
    >>> fb.shape, float(fb.max()) <= 1.0
    ((128, 257), True)
    """
    fmax = fmax or rate / 2
    mel = lambda f: 2595.0 * np.log10(1.0 + np.asarray(f) / 700.0)  # noqa: E731
    hz = lambda m: 700.0 * (10.0 ** (np.asarray(m) / 2595.0) - 1.0)  # noqa: E731
    edges = hz(np.linspace(mel(fmin), mel(fmax), n_mels + 2))
    freqs = np.linspace(0, rate / 2, nfft // 2 + 1)
    lo, mid, hi = edges[:-2, None], edges[1:-1, None], edges[2:, None]
    up = (freqs[None] - lo) / (mid - lo)
    down = (hi - freqs[None]) / (hi - mid)
    return np.clip(np.minimum(up, down), 0.0, None)


class SpectrogramEncoder(_Frozen):
    """Frozen AST-style audio encoder: waveform windows ``(B, n_samples)`` at 16 kHz → ``(B, D)`` float32.

    Each window becomes a 128-band log-mel image (normalised with AST's AudioSet statistics, frequency up and
    time across, repeated to three channels), resized to the tower's input size and read by an open_clip vision
    tower. Call :meth:`encode` on waveforms, or the module itself on the images of :meth:`spectrograms`.

    Parameters
    ----------
    name : str
        An open_clip model name or ``"tiny"`` (see :func:`open_clip_tower`).
    pretrained : str or Path, optional
        An open_clip tag or a local weights file; None gives random initialisation.
    seed : int
        Seed of the ``"tiny"`` tower.

    Attributes
    ----------
    info : dict
        What :func:`open_clip_tower` reports (name, pretrained, image_size, mean, std).
    weights_sha256 : str
        :func:`state_sha256` of the tower.
    dim : int
        Output width ``D``.

    Raises
    ------
    ConfigError
        As :func:`open_clip_tower`.

    Examples
    --------
    >>> import numpy as np
    >>> enc = SpectrogramEncoder("tiny")
    >>> enc.encode(np.zeros((2, 48000), dtype=np.float32)).shape
    torch.Size([2, 64])
    """

    def __init__(self, name: str = "ViT-B-32", pretrained: str | Path | None = None, *, seed: int = 1) -> None:
        super().__init__()
        self.tower, self.info = open_clip_tower(
            name, pretrained, option="audio_pretrained", name_option="audio encoder", seed=seed, tiny_size=(64, 96)
        )
        with torch.no_grad():
            self._dim = self.tower(torch.zeros(1, 3, *self.info["image_size"])).shape[-1]
        self._freeze()

    def spectrograms(self, audio: np.ndarray) -> torch.Tensor:
        """Waveforms ``(B, n_samples)`` at 16 kHz → normalised log-mel images ``(B, 3, H, W)`` at the tower's input size."""
        mel = log_mel(np.atleast_2d(audio))  # (B, frames, mels)
        x = torch.from_numpy((mel - AST_MEAN) / (2 * AST_STD)).float()
        x = x.transpose(1, 2).unsqueeze(1)  # (B, 1, mels, frames): frequency up, time across, as in AST
        x = F.interpolate(x, size=self.info["image_size"], mode="bilinear", align_corners=False)
        return x.expand(-1, 3, -1, -1)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.tower(images)

    def encode(self, audio: np.ndarray) -> torch.Tensor:
        return self(self.spectrograms(audio))
