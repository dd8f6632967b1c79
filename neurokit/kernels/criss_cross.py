"""Criss-cross attention on a ``(channels × patches)`` token grid (CBraMod, Wang et al., ICLR 2025, §3.2).

Heads ``0 … heads_s-1`` attend along channels for each patch (spatial); the remaining heads attend
along patches for each channel (temporal). This module holds the exact PyTorch reference path
(``scaled_dot_product_attention`` on the two reshaped views) and the dispatcher that picks a fused Triton
kernel on CUDA when one is available.
"""

from __future__ import annotations

import os
import warnings

import torch
import torch.nn.functional as F

from neurokit.kernels.docs import fill_doc

BACKENDS = ("auto", "torch", "triton")


def _resolve_backend(
    backend: str, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, heads_s: int, dropout_p: float
) -> str:
    if backend not in BACKENDS:
        raise ValueError(f"backend={backend!r}; allowed: {BACKENDS}")
    env = os.environ.get("NEUROKIT_ATTENTION_BACKEND")
    if backend == "auto" and env:
        if env not in BACKENDS:
            raise ValueError(f"NEUROKIT_ATTENTION_BACKEND={env!r}; allowed: {BACKENDS}")
        backend = env
    if backend == "auto":
        if not q.is_cuda:
            return "torch"
        try:
            from neurokit.kernels import triton_criss_cross
        except ImportError as exc:  # triton missing or broken: the reference path, said once
            _warn_once(f"triton is not importable ({exc})")
            return "torch"
        # shapes, dtypes or devices the kernel does not take fall back to the reference, said once per reason
        reason = triton_criss_cross.unsupported_reason(q, k, v, heads_s, dropout_p)
        if reason is not None:
            _warn_once(reason)
            return "torch"
        return "triton"
    return backend


#: Reasons ``backend="auto"`` fell back to the PyTorch path on CUDA, already warned about in this process.
_fallbacks_warned: set[str] = set()


def _warn_once(reason: str) -> None:
    if reason not in _fallbacks_warned:
        _fallbacks_warned.add(reason)
        warnings.warn(
            f"criss-cross attention: backend='auto' uses the PyTorch path on CUDA: {reason}",
            RuntimeWarning,
            stacklevel=4,
        )


@fill_doc
def criss_cross_attention_reference(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    heads_s: int,
    dropout_p: float = 0.0,
    scale: float | None = None,
) -> torch.Tensor:
    """Reference criss-cross attention in plain PyTorch (``scaled_dot_product_attention`` on two reshaped views).

    Parameters
    ----------
    %(qkv)s
    %(heads_s)s
    %(dropout_p)s
    %(scale)s

    Returns
    -------
    Tensor, shape ``(B, C, N, H, d)``
        The attention output of every head, same dtype as ``q``.

    Examples
    --------
    >>> q = torch.randn(2, 3, 4, 8, 5)  # 3 channels, 4 patches, 8 heads of width 5
    >>> criss_cross_attention_reference(q, q, q, heads_s=4).shape
    torch.Size([2, 3, 4, 8, 5])
    """
    B, C, N, H, d = q.shape
    out = q.new_empty(B, C, N, H, d)
    if heads_s > 0:
        # spatial: one sequence of length C per (batch, patch, head)
        qs, ks, vs = (t[:, :, :, :heads_s].permute(0, 2, 3, 1, 4) for t in (q, k, v))  # (B, N, hs, C, d)
        os_ = grouped_sdpa(qs, ks, vs, dropout_p=dropout_p, scale=scale)
        out[:, :, :, :heads_s] = os_.permute(0, 3, 1, 2, 4)
    if heads_s < H:
        # temporal: one sequence of length N per (batch, channel, head)
        qt, kt, vt = (t[:, :, :, heads_s:].permute(0, 1, 3, 2, 4) for t in (q, k, v))  # (B, C, ht, N, d)
        ot = grouped_sdpa(qt, kt, vt, dropout_p=dropout_p, scale=scale)
        out[:, :, :, heads_s:] = ot.permute(0, 1, 3, 2, 4)
    return out


def grouped_sdpa(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, dropout_p: float = 0.0, scale: float | None = None
) -> torch.Tensor:
    """``scaled_dot_product_attention`` over the second-to-last axis of ``(*G, h, L, d)`` tensors, flattened to
    the 4-D ``(prod(G), h, L, d)`` that SDPA's fused kernels need.

    On inputs of more than 4 dimensions every SDPA backend but the math one refuses ("All fused kernels requires
    query, key and value to be 4 dimensional"), which cost 9× in the forward pass on the CPU (B 32, C 64, N 4,
    4 heads, d 25; found on the first GPU run, ``benchmarks/README.md``). On CUDA the head dimension is
    zero-padded to a multiple of 8 so that the flash and memory-efficient kernels take CBraMod's d = 25: zeros
    add nothing to ``q·k`` and the padded output columns are dropped (the scale stays ``1/sqrt(d)`` of the
    unpadded d).

    Parameters
    ----------
    q, k, v : Tensor, shape ``(*G, h, L, d)``
        Queries, keys, values; any leading group axes ``G`` and strides (views are copied once by the reshape).
    dropout_p : float
        Dropout probability on the attention weights.
    scale : float, optional
        Softmax scale; default ``1/sqrt(d)``.

    Returns
    -------
    Tensor, shape ``(*G, h, L, d)``
        Same dtype as ``q``.

    Examples
    --------
    >>> q = torch.randn(2, 3, 4, 5, 25)
    >>> grouped_sdpa(q, q, q).shape
    torch.Size([2, 3, 4, 5, 25])
    """
    lead, (L, d) = q.shape[:-2], q.shape[-2:]
    q4, k4, v4 = (t.reshape(-1, t.shape[-3], L, d) for t in (q, k, v))
    if scale is None:
        scale = d**-0.5
    pad = (-d) % 8 if q.is_cuda else 0
    if pad:
        q4, k4, v4 = (F.pad(t, (0, pad)) for t in (q4, k4, v4))
    o = F.scaled_dot_product_attention(q4, k4, v4, dropout_p=dropout_p, scale=scale)
    if pad:
        o = o[..., :d]
    return o.reshape(*lead, L, d)


@fill_doc
def criss_cross_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    heads_s: int,
    dropout_p: float = 0.0,
    scale: float | None = None,
    backend: str = "auto",
) -> torch.Tensor:
    """Criss-cross attention: the fused Triton kernel on CUDA, the PyTorch reference elsewhere.

    Same arguments and result as :func:`criss_cross_attention_reference`, plus the backend choice.
    Attention-weight dropout (``dropout_p > 0``) runs inside the Triton kernel (Philox mask regenerated
    in the backward); its random stream differs from PyTorch's, so outputs match the reference only in
    distribution. With ``dropout_p == 0`` both paths agree to fp32 rounding.

    Parameters
    ----------
    %(qkv)s
    %(heads_s)s
    %(dropout_p)s
    %(scale)s
    backend : {"auto", "torch", "triton"}
        ``"auto"``: Triton on CUDA when it is importable and takes the inputs (fp32/fp16/bf16, C, N ≤ 128),
        else PyTorch (a fallback on CUDA is warned about once per reason); the environment variable
        ``NEUROKIT_ATTENTION_BACKEND`` overrides it. ``"torch"``: the reference. ``"triton"``: the kernel,
        which raises if it cannot run (CPU tensors need ``TRITON_INTERPRET=1``).

    Returns
    -------
    Tensor, shape ``(B, C, N, H, d)``
        Same dtype as ``q``.

    Raises
    ------
    ValueError
        An unknown ``backend`` (or ``NEUROKIT_ATTENTION_BACKEND``); with ``backend="triton"``, the errors of
        :func:`~neurokit.kernels.triton_criss_cross.criss_cross_attention_triton` (which also raises
        ``RuntimeError`` without Triton and ``TypeError`` for unsupported dtypes).

    Examples
    --------
    >>> q = torch.randn(1, 3, 4, 2, 8)
    >>> out = criss_cross_attention(q, q, q, heads_s=1, backend="torch")
    >>> torch.equal(out, criss_cross_attention_reference(q, q, q, heads_s=1))
    True
    """
    chosen = _resolve_backend(backend, q, k, v, heads_s, dropout_p)
    if chosen == "triton":
        from neurokit.kernels.triton_criss_cross import criss_cross_attention_triton

        return criss_cross_attention_triton(q, k, v, heads_s=heads_s, dropout_p=dropout_p, scale=scale)
    return criss_cross_attention_reference(q, k, v, heads_s=heads_s, dropout_p=dropout_p, scale=scale)
