"""EEGNet (Lawhern et al. 2018): the compact convolutional network BCI papers train as their deep baseline.

EEGNet-8,2 with braindecode's defaults (``braindecode.models.EEGNet``, formerly ``EEGNetv4``; checked against
braindecode's ``braindecode/models/eegnet.py``, commit eb3ddee of 2026-08): a temporal convolution of ``F1`` = 8
kernels of 64 samples (no bias, "same" padding of 32 on each side), batch norm, a depthwise spatial convolution
over all channels (``D`` = 2 filters per temporal kernel, no bias, each filter's weight renormed to an L2 norm of
at most 1 at every forward), batch norm, ELU, average pooling 4, dropout, a separable convolution (depthwise
temporal kernel 16 with padding 8, then a pointwise 1×1 to ``F2`` = 16 maps, no bias), batch norm, ELU, average
pooling 8, dropout. Batch norms use momentum 0.01 and eps 1e-3 with affine weights. braindecode's classifier is a
convolution spanning the whole remaining map (``F2 × 1 × T_out``, with bias): a linear layer over the flattened
features, which neurokit's ``flatten`` head is (:class:`~neurokit.models.heads.Head`); :class:`EEGNet` with
``n_outputs`` holds it too, for use on its own. Weights start Glorot-uniform (biases 0, batch-norm weights 1).

The input is the store's windows as one continuous signal: patches ``(B, C, N, P)`` are joined to
``(B, C, N·P)``; a series ``(B, C, T)`` is taken as it is.

The paper's dropout is 0.5 within subjects and 0.25 across subjects; braindecode's default is 0.25
(:data:`DROPOUT_ACROSS_SUBJECTS`, :data:`DROPOUT_WITHIN_SUBJECT`; :func:`eegnet_dropout`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils import parametrize

from neurokit._utils.errors import ConfigError

#: dropout of EEGNet's two dropout layers when training and test subjects differ (paper; braindecode's default)
DROPOUT_ACROSS_SUBJECTS = 0.25
#: dropout when the split is within one subject (paper, for the small within-subject training sets)
DROPOUT_WITHIN_SUBJECT = 0.5


def eegnet_dropout(split_by: str) -> float:
    """The paper's dropout for a split: ``"run"`` (one subject's runs) → 0.5, anything else (by subject) → 0.25.

    Parameters
    ----------
    split_by : str
        The split unit of the data card (``"subject"``, ``"run"``, …).

    Returns
    -------
    float
        :data:`DROPOUT_WITHIN_SUBJECT` or :data:`DROPOUT_ACROSS_SUBJECTS`.

    Examples
    --------
    >>> eegnet_dropout("subject"), eegnet_dropout("run")
    (0.25, 0.5)
    """
    return DROPOUT_WITHIN_SUBJECT if split_by == "run" else DROPOUT_ACROSS_SUBJECTS


@dataclass
class EEGNetConfig:
    """EEGNet's sizes (defaults: EEGNet-8,2 as braindecode builds it).

    Attributes
    ----------
    n_chans, n_times : int
        Channels and samples of one input window.
    n_outputs : int or None
        Classes of the built-in classifier; ``None``: features only (neurokit's fine-tuning adds the head).
    F1, D, F2 : int
        Temporal kernels, spatial filters per kernel, pointwise maps (``F2=None``: ``F1·D``).
    kernel_length, depthwise_kernel_length : int
        Samples of the temporal and of the separable depthwise kernels (64, 16).
    pool1, pool2 : int
        Average-pooling widths (4, 8).
    dropout : float
        Dropout probability of both dropout layers.
    max_norm : float
        Largest L2 norm of each spatial filter.
    bn_momentum, bn_eps : float
        Batch-norm momentum (PyTorch convention) and epsilon.
    """

    n_chans: int = 22
    n_times: int = 1000
    n_outputs: int | None = None
    F1: int = 8
    D: int = 2
    F2: int | None = None
    kernel_length: int = 64
    depthwise_kernel_length: int = 16
    pool1: int = 4
    pool2: int = 8
    dropout: float = DROPOUT_ACROSS_SUBJECTS
    max_norm: float = 1.0
    bn_momentum: float = 0.01
    bn_eps: float = 1e-3

    def __post_init__(self) -> None:
        if self.F2 is None:
            self.F2 = self.F1 * self.D
        if min(self.n_chans, self.n_times, self.F1, self.D, self.F2) < 1:
            raise ConfigError(f"EEGNet sizes must be >= 1: {self.to_dict()}")
        if not 0 <= self.dropout < 1:
            raise ConfigError(f"EEGNet dropout={self.dropout}: must be in [0, 1)")
        if self.n_outputs is not None and self.n_outputs < 1:
            raise ConfigError(f"EEGNet n_outputs={self.n_outputs}: must be >= 1 (or None for features only)")
        if self.feature_times() < 1:
            raise ConfigError(
                f"EEGNet: {self.n_times} samples are too short for pooling {self.pool1} × {self.pool2} "
                f"(at least {self.pool1 * self.pool2} needed)"
            )

    def feature_times(self) -> int:
        """Time steps left after both poolings: ``⌊(⌊(T + 2⌊k/2⌋ − k + 1) / p1⌋ + 2⌊k2/2⌋ − k2 + 1) / p2⌋``."""
        k, k2 = self.kernel_length, self.depthwise_kernel_length
        t = (self.n_times + 2 * (k // 2) - k + 1) // self.pool1
        return (t + 2 * (k2 // 2) - k2 + 1) // self.pool2

    def to_dict(self) -> dict:
        return asdict(self)


class _MaxNorm(nn.Module):
    """Renorm each output filter (dim 0) of a weight to an L2 norm of at most ``max_norm``."""

    def __init__(self, max_norm: float) -> None:
        super().__init__()
        self.max_norm = float(max_norm)

    def forward(self, w: torch.Tensor) -> torch.Tensor:
        return w.renorm(p=2, dim=0, maxnorm=self.max_norm)


class EEGNet(nn.Module):
    """EEGNet-8,2 (Lawhern et al. 2018, J. Neural Eng. 15 056013), layer for layer as braindecode's ``EEGNet``.

    Parameters
    ----------
    config : EEGNetConfig, optional
    **kwargs
        :class:`EEGNetConfig` fields (instead of ``config``).

    Input ``(B, C, N, P)`` patches in µV / 100 (joined to ``(B, C, N·P)``) or ``(B, C, T)``, float32, with
    ``C = n_chans`` and ``N·P = n_times``. :meth:`forward_features` → ``(B, T_out, F2)``; :meth:`forward` →
    ``(B, n_outputs)`` logits (needs ``n_outputs``).

    Parameter count (braindecode's with ``n_outputs`` classes): ``F1·k + 2F1 + F1·D·C + 2F1·D + F1·D·k2 +
    F1·D·F2 + 2F2 + n_outputs·(F2·T_out + 1)``; EEGNet-8,2: ``1104 + 16·C + n_outputs·(16·T_out + 1)``.

    Raises
    ------
    ConfigError
        Sizes out of range; an input of another channel or sample count than the config's.

    Examples
    --------
    >>> m = EEGNet(n_chans=22, n_times=1000, n_outputs=4)
    >>> sum(p.numel() for p in m.parameters()), tuple(m(torch.zeros(2, 22, 1000)).shape)
    (3444, (2, 4))
    """

    def __init__(self, config: EEGNetConfig | None = None, **kwargs) -> None:
        super().__init__()
        cfg = config or EEGNetConfig(**kwargs)
        self.config = cfg
        f1, f12, f2 = cfg.F1, cfg.F1 * cfg.D, int(cfg.F2 or cfg.F1 * cfg.D)

        def bn(n: int) -> nn.BatchNorm2d:
            return nn.BatchNorm2d(n, eps=cfg.bn_eps, momentum=cfg.bn_momentum, affine=True)

        self.conv_temporal = nn.Conv2d(1, f1, (1, cfg.kernel_length), padding=(0, cfg.kernel_length // 2), bias=False)
        self.bn_temporal = bn(f1)
        self.conv_spatial = nn.Conv2d(f1, f12, (cfg.n_chans, 1), groups=f1, bias=False)
        self.bn_spatial = bn(f12)
        self.pool1 = nn.AvgPool2d((1, cfg.pool1))
        self.drop1 = nn.Dropout(cfg.dropout)
        k2 = cfg.depthwise_kernel_length
        self.conv_depthwise = nn.Conv2d(f12, f12, (1, k2), padding=(0, k2 // 2), groups=f12, bias=False)
        self.conv_pointwise = nn.Conv2d(f12, f2, (1, 1), bias=False)
        self.bn_separable = bn(f2)
        self.pool2 = nn.AvgPool2d((1, cfg.pool2))
        self.drop2 = nn.Dropout(cfg.dropout)
        self.classifier = nn.Linear(f2 * cfg.feature_times(), cfg.n_outputs) if cfg.n_outputs else None
        for m in self.modules():  # Glorot-uniform weights, zero biases, batch-norm weights 1 (braindecode's init)
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                nn.init.xavier_uniform_(m.weight)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
        parametrize.register_parametrization(self.conv_spatial, "weight", _MaxNorm(cfg.max_norm))

    def _series(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() == 4:
            x = x.flatten(2)  # (B, C, N, P) → (B, C, N·P): the windows as one continuous signal
        if x.dim() != 3 or x.shape[1] != self.config.n_chans or x.shape[2] != self.config.n_times:
            raise ConfigError(
                f"EEGNet built for {self.config.n_chans} channels × {self.config.n_times} samples; "
                f"got input {tuple(x.shape)}"
            )
        return x

    def forward_features(self, x: torch.Tensor) -> torch.Tensor:
        """``(B, C, N, P)`` or ``(B, C, T)`` → features ``(B, T_out, F2)`` (after the second dropout)."""
        h = self._series(x).unsqueeze(1)  # (B, 1, C, T)
        h = self.bn_temporal(self.conv_temporal(h))
        h = self.drop1(self.pool1(F.elu(self.bn_spatial(self.conv_spatial(h)))))  # (B, F1·D, 1, T/4)
        h = self.bn_separable(self.conv_pointwise(self.conv_depthwise(h)))
        h = self.drop2(self.pool2(F.elu(h)))  # (B, F2, 1, T_out)
        return h.squeeze(2).transpose(1, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits ``(B, n_outputs)``: the classifier over the flattened ``(F2, T_out)`` features."""
        if self.classifier is None:
            raise ConfigError("EEGNet built without n_outputs has no classifier: use forward_features or a head")
        return self.classifier(self.forward_features(x).transpose(1, 2).flatten(1))
