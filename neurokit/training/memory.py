"""How much memory a training run will hold, estimated before it starts.

A transformer's training step keeps, per sample and layer, the activations that backpropagation needs: about
:data:`FLOATS_PER_TOKEN_DIM` float32 values per token and model dimension (layer-norm inputs, Q/K/V,
attention outputs, the feed-forward hidden layer and its activation, residuals, dropout masks) plus the
attention probabilities, kept about :data:`ATTENTION_COPIES` times. The constants were measured on this
project's CPU path (``VmHWM`` of one AdamW step of CBraMod at 1, 2 and 4 layers, batch 8 and 16, 3–64
channels; 5–15 % of the measured peak) and agree with the 11.8 GB resident measured for the 12-layer
pretraining of 128 × 64-channel 4-s windows (issue 20). Parameters cost 16 bytes each with AdamW (weights,
gradients, two moments).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import Sequence

from torch import nn

logger = logging.getLogger("neurokit")

#: float32 values kept for backpropagation per token, model dimension and layer (measured, see the module text)
FLOATS_PER_TOKEN_DIM = 34
#: copies of the attention probabilities kept per layer (softmax output, its dropout mask, the gradient's input)
ATTENTION_COPIES = 3
#: fixed cost of a training process beyond its activations and parameters (the patch embedding, the loss,
#: allocator slack), bytes
BASE_BYTES = 80 * 2**20
#: below this estimate nothing is said
QUIET_BELOW = 4 * 2**30


@dataclass(frozen=True)
class MemoryEstimate:
    """An estimate of a training step's resident memory.

    Attributes
    ----------
    bytes : int
        Activations of one batch + parameters with AdamW state + a fixed cost.
    batch_size : int
    layers : int
    shape_text : str
        What the sample is, e.g. ``"64 channels × 4 patches"``.
    """

    bytes: int
    batch_size: int
    layers: int
    shape_text: str

    @property
    def gib(self) -> float:
        return self.bytes / 2**30

    def text(self, device: str = "cpu") -> str:
        """The estimate in words (``"about 11 GB resident for batch 128 × … on the CPU"``).

        Parameters
        ----------
        device : str
            Where training runs (``"cpu"``, ``"cuda"``…).

        Returns
        -------
        str
        """
        where = "on the CPU" if device == "cpu" else f"on {device}"
        return (
            f"about {self.gib:.0f} GB resident for batch {self.batch_size} × {self.shape_text} × "
            f"{self.layers} layer{'s' if self.layers != 1 else ''} {where}"
        )


def _transformer_parts(model: nn.Module, sample_shape: Sequence[int]):
    """``(layers, tokens, dim, attention elements per sample and layer, shape text)`` of the first CBraMod
    or SiT inside ``model`` (``None`` when there is none)."""
    from neurokit.models.cbramod import CBraModConfig
    from neurokit.models.sit import SiTConfig

    for m in model.modules():
        cfg = getattr(m, "config", None)
        if isinstance(cfg, CBraModConfig) and len(sample_shape) == 3:
            c, n = int(sample_shape[0]), int(sample_shape[1])
            h = cfg.n_heads // 2  # criss-cross: half the heads over channels, half over patches
            attn = h * n * c * c + h * c * n * n
            return cfg.n_layers, c * n, cfg.d_model, attn, f"{c} channels × {n} patches"
        if isinstance(cfg, SiTConfig):
            t = cfg.n_tokens + 1  # + the class token
            return cfg.depth, t, cfg.dim, cfg.heads * t * t, f"{cfg.n_tokens} tokens"
    return None


def estimate_training_memory(model: nn.Module, sample_shape: Sequence[int], batch_size: int) -> MemoryEstimate | None:
    """Estimate the resident memory of one training step of ``model`` on batches of ``batch_size`` samples.

    Parameters
    ----------
    model : nn.Module
        A module holding a CBraMod or a SiT (a fine-tuning model with its head, a pretraining wrapper).
    sample_shape : sequence of int
        One sample's shape: EEG ``(channels, n_patches, 200)``; surface ``(frames, n_patches, vertices)``.
    batch_size : int
        Samples per step and process.

    Returns
    -------
    MemoryEstimate or None
        ``None`` for a model this estimate does not cover (only parameters would be known).

    Notes
    -----
    bytes = batch × layers × 4 × (34 · tokens · dim + 3 · attention elements) + 16 · parameters + 80 MiB
    (constants measured, see :mod:`neurokit.training.memory`).

    Examples
    --------
    >>> from neurokit.models.registry import create_model
    >>> est = estimate_training_memory(create_model("cbramod"), (64, 4, 200), 128)
    >>> est.text()
    'about 11 GB resident for batch 128 × 64 channels × 4 patches × 12 layers on the CPU'
    """
    parts = _transformer_parts(model, sample_shape)
    if parts is None:
        return None
    layers, tokens, dim, attn, text = parts
    per_sample_layer = 4 * (FLOATS_PER_TOKEN_DIM * tokens * dim + ATTENTION_COPIES * attn)
    params = sum(p.numel() for p in model.parameters())
    total = int(batch_size) * layers * per_sample_layer + 16 * params + BASE_BYTES
    return MemoryEstimate(total, int(batch_size), layers, text)


def available_bytes(device: str = "cpu") -> int | None:
    """Memory available to a new allocation: ``MemAvailable`` of ``/proc/meminfo`` on the CPU, the free
    memory of a CUDA device (``None`` when it cannot be told).

    Parameters
    ----------
    device : str
        ``"cpu"`` or a CUDA device (``"cuda"``, ``"cuda:1"``).

    Returns
    -------
    int | None
        Bytes available, or ``None``.

    Examples
    --------
    >>> available_bytes("cpu") > 0
    True
    """
    if device.startswith("cuda"):
        import torch

        try:
            return int(torch.cuda.mem_get_info(torch.device(device))[0])
        except (RuntimeError, AssertionError):
            return None
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return None


def memory_warning(
    model: nn.Module, sample_shape: Sequence[int], batch_size: int, device: str = "cpu", *, available: int | None = None
) -> str | None:
    """A one-line warning when a training step will need a lot of memory, else ``None``.

    It is given when the estimate (:func:`estimate_training_memory`) is at least 4 GB or more than half of the
    memory available (``available``; default :func:`available_bytes`), e.g. ``"about 10 GB resident for batch
    128 × 64 channels × 4 patches × 12 layers on the CPU (21 GB available); lower --batch-size"``.

    Parameters
    ----------
    model : torch.nn.Module
        The model to train.
    sample_shape : sequence of int
        One sample's shape (EEG ``(C, N, P)``: channels, patches, samples per patch).
    batch_size : int
        Samples per training step.
    device : str
        Where training runs (``"cpu"``, ``"cuda"``…), for the message and the memory available.
    available : int | None
        Bytes available; ``None``: :func:`available_bytes` of ``device``.

    Returns
    -------
    str | None
        The warning, or ``None`` (small enough, or a model the estimate does not cover).

    Examples
    --------
    >>> from neurokit.models.registry import create_model
    >>> memory_warning(create_model("cbramod"), (19, 4, 200), 8, available=64 * 2**30) is None
    True
    """
    est = estimate_training_memory(model, sample_shape, batch_size)
    if est is None:
        return None
    avail = available if available is not None else available_bytes(device)
    if est.bytes < QUIET_BELOW and (avail is None or est.bytes < avail / 2):
        return None
    room = f" ({avail / 2**30:.0f} GB available)" if avail else ""
    more = "; give a smaller batch_size=" if avail is None or est.bytes > avail / 2 else ""
    return est.text(device) + room + more
