"""Amplitude normalisation of a backbone's input, recorded with the model so that fine-tuning and evaluation of a
model pretrained with it see the same scale.

Pooled EEG corpora differ in amplitude by orders of magnitude (intracranial Bonn recordings against scalp
EEGMMIDB), so a masked-reconstruction loss pooled over them is dominated by the largest. The modes:

``"none"``
    the input as stored (units of 100 µV).
``"window"``
    each sample ``x`` ``(C, N, P)`` divided by its root mean square over all its values.
``"channel"``
    each channel of each sample divided by its RMS over its ``N × P`` values.
``"corpus"``
    every sample divided by one number per corpus: the RMS of the corpus's training windows, computed once
    (:func:`fit_input_norm` for a downstream store; pretraining on a pooled store scales each corpus of the pool
    by its own, see :mod:`neurokit.data.corpus`).

An RMS below :data:`EPS` (a flat window or channel) divides by :data:`EPS` instead, so zeros stay zeros.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

from neurokit._utils.errors import ConfigError

#: the normalisation modes, in the order the CLI lists them
NORMALIZE_MODES = ("none", "window", "channel", "corpus")
#: smallest RMS divided by (units of the input: 100 µV, so 1e-6 is 0.1 nV)
EPS = 1e-6


def check_mode(mode: str, where: str = "normalize") -> str:
    """``mode`` if it is one of :data:`NORMALIZE_MODES`.

    Parameters
    ----------
    mode : str
        The normalisation asked for.
    where : str
        The option's name, for the message (``"normalize"``, ``"CBraMod input_norm"``).

    Returns
    -------
    str
        ``mode``.

    Raises
    ------
    ConfigError
        Another value (the message names ``where`` and lists the modes).

    Examples
    --------
    >>> check_mode("window")
    'window'
    """
    if mode not in NORMALIZE_MODES:
        raise ConfigError(f"{where}={mode!r}; allowed: {', '.join(NORMALIZE_MODES)}")
    return mode


class InputNorm(nn.Module):
    """Divide ``(B, C, N, P)`` input by its RMS per sample (``"window"``), per channel of each sample
    (``"channel"``), by a fixed corpus scale (``"corpus"``, the buffer ``scale``) or not at all (``"none"``).

    Parameters
    ----------
    mode : {"none", "window", "channel", "corpus"}
    scale : float
        ``"corpus"`` only: the divisor (RMS of the corpus's training windows); saved in the state dict as
        ``scale`` so a fine-tuned checkpoint keeps the scale of its store. Other modes hold no buffer, so
        state dicts of models without normalisation (the released CBraMod weights) load unchanged.

    Raises
    ------
    ConfigError
        An unknown ``mode``.

    Examples
    --------
    >>> x = torch.tensor([[[[3.0, -3.0]], [[1.0, 1.0]]]])  # (1, 2, 1, 2)
    >>> InputNorm("channel")(x)[0, :, 0].tolist()
    [[1.0, -1.0], [1.0, 1.0]]
    >>> round(float(InputNorm("window")(x)[0, 0, 0, 0]), 4)  # 3 / sqrt((9 + 9 + 1 + 1) / 4)
    1.3416
    """

    scale: torch.Tensor  # the buffer registered in "corpus" mode

    def __init__(self, mode: str = "none", scale: float = 1.0) -> None:
        super().__init__()
        self.mode = check_mode(mode)
        if mode == "corpus":
            self.register_buffer("scale", torch.tensor(float(scale)))

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """``x`` ``(B, C, N, P)`` normalised. ``mask`` ``(B, C, N)`` (1 = masked patch, masked-patch pretraining):
        the ``"window"`` and ``"channel"`` RMS is taken over the visible patches only, so the divisor tells nothing
        of the masked ones (over all values it would give away their power); a channel with no visible patch is
        divided by its window's visible RMS, a window with none by 1."""
        if self.mode == "none":
            return x
        if self.mode == "corpus":
            return x / self.scale.clamp_min(EPS).to(x.dtype)
        dims = (1, 2, 3) if self.mode == "window" else (2, 3)
        if mask is None:
            rms = x.pow(2).mean(dim=dims, keepdim=True).sqrt()
            return x / rms.clamp_min(EPS)
        vis = (1.0 - mask.to(x.dtype)).unsqueeze(-1)
        P = x.shape[-1]

        def visible_rms(d):
            n = (vis.sum(dim=d, keepdim=True) * P).clamp_min(1.0)
            return ((x.pow(2) * vis).sum(dim=d, keepdim=True) / n).sqrt(), vis.sum(dim=d, keepdim=True) > 0

        rms, any_vis = visible_rms((1, 2, 3))
        rms = torch.where(any_vis, rms, torch.ones_like(rms))
        if self.mode == "channel":
            ch, ch_vis = visible_rms((2, 3))
            rms = torch.where(ch_vis, ch, rms)
        return x / rms.clamp_min(EPS)

    def extra_repr(self) -> str:
        return f"mode={self.mode!r}" + (f", scale={float(self.scale):.4g}" if self.mode == "corpus" else "")


def rms_of(dataset, max_windows: int = 4096, seed: int = 0) -> float:
    """Root mean square of every value of ``dataset``'s samples, over at most ``max_windows`` samples drawn
    without replacement (seeded) when it holds more.

    Parameters
    ----------
    dataset : sequence of (x, y)
        Items whose ``x`` (Tensor or array, any shape) are read; ``y`` is ignored.
    max_windows : int
        At most this many samples are read.
    seed : int
        Seed of the draw.

    Returns
    -------
    float
        In the samples' unit (100 µV for EEG stores).

    Raises
    ------
    ConfigError
        An empty dataset.

    Examples
    --------
    >>> rms_of([(torch.full((1, 1, 4), 2.0), 0)])
    2.0
    """
    n = len(dataset)
    if n == 0:
        raise ConfigError("corpus normalisation: no window to compute the corpus RMS from")
    idx = (
        np.arange(n) if n <= max_windows else np.sort(np.random.default_rng(seed).choice(n, max_windows, replace=False))
    )
    s, k = 0.0, 0
    for i in idx:
        x = dataset[int(i)][0]
        x = x.double() if isinstance(x, torch.Tensor) else torch.as_tensor(np.asarray(x, dtype=np.float64))
        s += float(x.pow(2).sum())
        k += x.numel()
    return float(np.sqrt(s / max(k, 1)))


def input_norm_of(module: nn.Module) -> InputNorm | None:
    """The :class:`InputNorm` of ``module``, or ``None``.

    Parameters
    ----------
    module : nn.Module
        A backbone, a fine-tuning model holding one, or a DDP wrapper.

    Returns
    -------
    InputNorm or None
        The first one among ``module.modules()``.

    Examples
    --------
    >>> from neurokit.models.cbramod import CBraMod
    >>> input_norm_of(CBraMod(n_layers=1, input_norm="window")).mode
    'window'
    >>> input_norm_of(CBraMod(n_layers=1)) is None
    True
    """
    for m in module.modules():
        if isinstance(m, InputNorm):
            return m
    return None


def fit_input_norm(module: nn.Module, train, max_windows: int = 4096) -> dict[str, Any]:
    """Set the ``"corpus"`` scale of ``module``'s :class:`InputNorm` to the RMS of ``train`` (the downstream
    store's training windows: the normalisation a pretrained model recorded, applied to a new corpus).

    Parameters
    ----------
    module : nn.Module
        The backbone or the whole fine-tuning model.
    train : Dataset
        Items ``(x, y)``; only the ``x`` are read (:func:`rms_of`).
    max_windows : int
        At most this many windows are read.

    Returns
    -------
    dict ``{"mode": …}`` plus ``"scale"`` (float, units of the input) in ``"corpus"`` mode; ``{"mode": "none"}``
    when the module has no normalisation.

    Examples
    --------
    >>> from neurokit.models.cbramod import CBraMod
    >>> m = CBraMod(n_layers=1, input_norm="corpus")
    >>> fit_input_norm(m, [(torch.full((1, 1, 200), 3.0), 0)])
    {'mode': 'corpus', 'scale': 3.0}
    """
    norm = input_norm_of(module)
    if norm is None:
        return {"mode": "none"}
    if norm.mode != "corpus":
        return {"mode": norm.mode}
    scale = rms_of(train, max_windows=max_windows)
    with torch.no_grad():
        norm.scale.fill_(scale)
    return {"mode": "corpus", "scale": scale}
