"""Dropout whose CPU mask costs a third of ``torch.nn.Dropout``'s.

On the CPU ``torch.nn.functional.dropout`` draws one Bernoulli sample per element; in a CBraMod training
step that is about 40 % of the time (measured: ``benchmarks/eeg_pipeline.py``). Here the keep mask comes
from 32-bit integers cut from 64-bit draws of the same generator (``Tensor.random_``) compared with
``p · 2³²``: the same keep probability (to 2⁻³², finer than ``torch.rand``'s 2⁻²⁴), reproducible under
``torch.manual_seed``, but a different random stream from ``nn.Dropout``'s. On other devices, in eval mode,
or for ``p = 0`` it is plain :func:`torch.nn.functional.dropout`.
"""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F


def _scaled_mask(x: torch.Tensor, p: float) -> torch.Tensor:
    """``1/(1-p)`` where kept, 0 where dropped; shape and dtype of ``x``."""
    n = x.numel()
    bits = torch.empty((n + 1) // 2, dtype=torch.int64, device=x.device).random_(-(2**63), 2**63 - 1)
    threshold = round(p * 2**32) - 2**31  # int32 draws below it are dropped: P = p
    keep = bits.view(torch.int32)[:n].view(x.shape) >= threshold
    return torch.where(keep, torch.tensor(1.0 / (1.0 - p), dtype=x.dtype), torch.tensor(0.0, dtype=x.dtype))


class _Mask(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(mask)
        return x * mask

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        (mask,) = ctx.saved_tensors
        return grad * mask, None


def fast_dropout(x: torch.Tensor, p: float, training: bool = True) -> torch.Tensor:
    """Inverted dropout: zero each element with probability ``p``, scale the rest by ``1/(1-p)``.

    Same contract as :func:`torch.nn.functional.dropout` (any shape, float dtypes); the faster mask is used on
    CPU tensors only.
    """
    if not training or p == 0.0:
        return x
    if x.device.type != "cpu" or p >= 1.0:
        return F.dropout(x, p, True)
    return _Mask.apply(x, _scaled_mask(x, p))


class FastDropout(nn.Dropout):
    """:class:`torch.nn.Dropout` drawing its CPU masks through :func:`fast_dropout` (no parameters, so
    state dicts are unchanged)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return fast_dropout(x, self.p, self.training)
