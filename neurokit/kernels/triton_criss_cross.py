"""Fused Triton criss-cross attention, forward and backward (CBraMod, Wang et al., ICLR 2025, §3.2).

One launch covers both head groups of a criss-cross layer: programs ``0 … B·N·Hs-1`` each solve one
*spatial* problem (one head attending over the C channels of one patch) and the remaining
``B·C·Ht`` programs each solve one *temporal* problem (one head attending over the N patches of one
channel). Q, K and V are read through their strides straight from the fused ``(B, C, N, 3, H, d)``
projection, so no permute, ``contiguous()`` or concatenation is needed, and each head group writes a
disjoint slice of one ``(B, C, N, H, d)`` output.

Sequences are short (C ≤ 256, N ≤ 256 here; CBraMod uses C ≤ 128, N ≤ 64), so a whole sequence fits
one tile: the softmax is computed in one shot (keys padded to a power of two ≥ 16 and masked with −inf,
head dim padded to a power of two ≥ 16 and masked), in base 2 with fp32 accumulation. The forward
saves the log-sum-exp ``LSE`` (natural log, ``(B, C, N, H)`` fp32); the backward recomputes the
probabilities from it, computes ``Δ = rowsum(O·dO)`` in the same program and writes dQ, dK and dV of
its problem without atomics (FlashAttention-2, Dao 2023, in the single-tile case).

Attention-weight dropout runs inside the kernel: a Philox stream (``tl.rand``) keyed by a seed drawn
from torch's default CPU generator and counted by (program, query, key) gives the keep mask; the
backward regenerates the same mask from the same seed, so no mask is stored.

``TRITON_INTERPRET=1`` (set before triton is imported) runs the kernels on CPU tensors through
Triton's interpreter; bf16 is then computed in fp32 because the interpreter has no bf16 arithmetic.
"""
from __future__ import annotations

import math
import os

import torch

try:
    import triton
    import triton.language as tl

    _HAVE_TRITON = True
except ImportError:  # pragma: no cover - triton is a Linux dependency
    _HAVE_TRITON = False

INTERPRET = os.environ.get("TRITON_INTERPRET", "0") == "1"

#: Triton is importable and can run here: on CUDA, or on the CPU through ``TRITON_INTERPRET=1``.
AVAILABLE: bool = _HAVE_TRITON and (INTERPRET or torch.cuda.is_available())

#: Longest sequence (C or N) one program holds in a tile.
MAX_SEQ = 256
#: Largest head dimension supported.
MAX_HEAD_DIM = 256
SUPPORTED_DTYPES = (torch.float32, torch.float16, torch.bfloat16)

_LOG2E = 1.4426950408889634
_LN2 = 0.6931471805599453


if _HAVE_TRITON:

    @triton.jit
    def _offsets(b, outer, head, s_b, s_c, s_n, s_h, SPATIAL: tl.constexpr):
        """Base offset of one problem's sequence in a ``(B, C, N, H, …)`` tensor, and the stride
        between consecutive sequence positions (channels if spatial, patches if temporal)."""
        if SPATIAL:
            base = b * s_b + outer * s_n + head * s_h
            step = s_c
        else:
            base = b * s_b + outer * s_c + head * s_h
            step = s_n
        return base, step

    @triton.jit
    def _load_tile(ptr, base, step, s_d, rows, cols, L, D, UPCAST: tl.constexpr):
        mask = (rows[:, None] < L) & (cols[None, :] < D)
        x = tl.load(ptr + base + rows[:, None] * step + cols[None, :] * s_d, mask=mask, other=0.0)
        if UPCAST:
            x = x.to(tl.float32)
        return x

    @triton.jit
    def _keep_mask(seed, pid, rows, BLOCK_L: tl.constexpr, dropout_p):
        """Philox keep mask of one problem, ``(BLOCK_L, BLOCK_L)``; identical in forward and backward."""
        offs = pid.to(tl.int64) * (BLOCK_L * BLOCK_L) + rows[:, None] * BLOCK_L + rows[None, :]
        return tl.rand(seed, offs) >= dropout_p

    @triton.jit
    def _decode(pid, n_spatial, C, N, HS, HT):
        """Program id → (batch, outer index, absolute head); spatial programs come first, with the head
        index fastest so that neighbouring programs read neighbouring heads of the same tokens."""
        if pid < n_spatial:
            head = pid % HS
            rest = pid // HS
            outer = rest % N
            b = rest // N
        else:
            t = pid - n_spatial
            head = HS + t % HT
            rest = t // HT
            outer = rest % C
            b = rest // C
        return b.to(tl.int64), outer.to(tl.int64), head.to(tl.int64)

    @triton.jit
    def _fwd_problem(
        Q, K, V, O, LSE, pid, b, outer, head, L, D,
        sqb, sqc, sqn, sqh, sqd, skb, skc, skn, skh, skd, svb, svc, svn, svh, svd,
        sob, soc, son, soh, sod, slb, slc, sln, slh,
        qk_scale, seed, dropout_p,
        SPATIAL: tl.constexpr, BLOCK_L: tl.constexpr, BLOCK_D: tl.constexpr,
        HAS_DROPOUT: tl.constexpr, UPCAST: tl.constexpr, PREC: tl.constexpr,
    ):
        rows = tl.arange(0, BLOCK_L)
        cols = tl.arange(0, BLOCK_D)
        qb, qs = _offsets(b, outer, head, sqb, sqc, sqn, sqh, SPATIAL)
        kb, ks = _offsets(b, outer, head, skb, skc, skn, skh, SPATIAL)
        vb, vs = _offsets(b, outer, head, svb, svc, svn, svh, SPATIAL)
        q = _load_tile(Q, qb, qs, sqd, rows, cols, L, D, UPCAST)
        k = _load_tile(K, kb, ks, skd, rows, cols, L, D, UPCAST)
        v = _load_tile(V, vb, vs, svd, rows, cols, L, D, UPCAST)
        # scores in base 2: s = (q·k) · scale · log2(e); padded keys → −inf
        s = tl.dot(q, tl.trans(k), input_precision=PREC) * qk_scale
        s = tl.where((rows < L)[None, :], s, float("-inf"))
        m = tl.max(s, 1)
        p = tl.exp2(s - m[:, None])
        l = tl.sum(p, 1)
        if HAS_DROPOUT:
            keep = _keep_mask(seed, pid, rows, BLOCK_L, dropout_p)
            p = tl.where(keep, p / (1.0 - dropout_p), 0.0)
        o = tl.dot(p.to(v.dtype), v, input_precision=PREC) / l[:, None]
        ob, os_ = _offsets(b, outer, head, sob, soc, son, soh, SPATIAL)
        omask = (rows[:, None] < L) & (cols[None, :] < D)
        tl.store(O + ob + rows[:, None] * os_ + cols[None, :] * sod, o.to(O.dtype.element_ty), mask=omask)
        lb, ls = _offsets(b, outer, head, slb, slc, sln, slh, SPATIAL)
        tl.store(LSE + lb + rows * ls, (m + tl.log2(l)) * 0.6931471805599453, mask=rows < L)

    @triton.jit
    def _cc_fwd_kernel(
        Q, K, V, O, LSE,
        sqb, sqc, sqn, sqh, sqd, skb, skc, skn, skh, skd, svb, svc, svn, svh, svd,
        sob, soc, son, soh, sod, slb, slc, sln, slh,
        C, N, HS, HT, D, n_spatial, qk_scale, seed, dropout_p,
        BLOCK_C: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
        HAS_DROPOUT: tl.constexpr, UPCAST: tl.constexpr, PREC: tl.constexpr,
    ):
        pid = tl.program_id(0)
        b, outer, head = _decode(pid, n_spatial, C, N, HS, HT)
        if pid < n_spatial:
            _fwd_problem(
                Q, K, V, O, LSE, pid, b, outer, head, C, D,
                sqb, sqc, sqn, sqh, sqd, skb, skc, skn, skh, skd, svb, svc, svn, svh, svd,
                sob, soc, son, soh, sod, slb, slc, sln, slh, qk_scale, seed, dropout_p,
                True, BLOCK_C, BLOCK_D, HAS_DROPOUT, UPCAST, PREC,
            )
        else:
            _fwd_problem(
                Q, K, V, O, LSE, pid, b, outer, head, N, D,
                sqb, sqc, sqn, sqh, sqd, skb, skc, skn, skh, skd, svb, svc, svn, svh, svd,
                sob, soc, son, soh, sod, slb, slc, sln, slh, qk_scale, seed, dropout_p,
                False, BLOCK_N, BLOCK_D, HAS_DROPOUT, UPCAST, PREC,
            )

    @triton.jit
    def _bwd_problem(
        Q, K, V, O, DO, LSE, DQ, DK, DV, pid, b, outer, head, L, D,
        sqb, sqc, sqn, sqh, sqd, skb, skc, skn, skh, skd, svb, svc, svn, svh, svd,
        sob, soc, son, soh, sod, sdb, sdc, sdn, sdh, sdd, slb, slc, sln, slh,
        sgb, sgc, sgn, sgh, sgd,
        sm_scale, seed, dropout_p,
        SPATIAL: tl.constexpr, BLOCK_L: tl.constexpr, BLOCK_D: tl.constexpr,
        HAS_DROPOUT: tl.constexpr, UPCAST: tl.constexpr, PREC: tl.constexpr,
    ):
        rows = tl.arange(0, BLOCK_L)
        cols = tl.arange(0, BLOCK_D)
        row_ok = rows < L
        qb, qs = _offsets(b, outer, head, sqb, sqc, sqn, sqh, SPATIAL)
        kb, ks = _offsets(b, outer, head, skb, skc, skn, skh, SPATIAL)
        vb, vs = _offsets(b, outer, head, svb, svc, svn, svh, SPATIAL)
        ob, os_ = _offsets(b, outer, head, sob, soc, son, soh, SPATIAL)
        db, ds_ = _offsets(b, outer, head, sdb, sdc, sdn, sdh, SPATIAL)
        lb, ls = _offsets(b, outer, head, slb, slc, sln, slh, SPATIAL)
        q = _load_tile(Q, qb, qs, sqd, rows, cols, L, D, UPCAST)
        k = _load_tile(K, kb, ks, skd, rows, cols, L, D, UPCAST)
        v = _load_tile(V, vb, vs, svd, rows, cols, L, D, UPCAST)
        o = _load_tile(O, ob, os_, sod, rows, cols, L, D, True)
        do = _load_tile(DO, db, ds_, sdd, rows, cols, L, D, UPCAST)
        lse2 = tl.load(LSE + lb + rows * ls, mask=row_ok, other=0.0) * 1.4426950408889634
        # recompute the probabilities from the saved LSE (padded rows and keys → 0)
        s = tl.dot(q, tl.trans(k), input_precision=PREC) * (sm_scale * 1.4426950408889634)
        p = tl.exp2(s - lse2[:, None])
        p = tl.where(row_ok[:, None] & row_ok[None, :], p, 0.0)
        delta = tl.sum(o * do.to(tl.float32), 1)  # Δ = rowsum(O·dO) = rowsum(P·dP)
        dp = tl.dot(do, tl.trans(v), input_precision=PREC)
        if HAS_DROPOUT:
            keep = _keep_mask(seed, pid, rows, BLOCK_L, dropout_p)
            inv = 1.0 / (1.0 - dropout_p)
            pd = tl.where(keep, p * inv, 0.0)
            dp = tl.where(keep, dp * inv, 0.0)
        else:
            pd = p
        dv = tl.dot(tl.trans(pd).to(do.dtype), do, input_precision=PREC)
        ds = p * (dp - delta[:, None]) * sm_scale
        dq = tl.dot(ds.to(k.dtype), k, input_precision=PREC)
        dk = tl.dot(tl.trans(ds).to(q.dtype), q, input_precision=PREC)
        gmask = row_ok[:, None] & (cols[None, :] < D)
        gb, gs = _offsets(b, outer, head, sgb, sgc, sgn, sgh, SPATIAL)
        goff = gb + rows[:, None] * gs + cols[None, :] * sgd
        tl.store(DQ + goff, dq.to(DQ.dtype.element_ty), mask=gmask)
        tl.store(DK + goff, dk.to(DK.dtype.element_ty), mask=gmask)
        tl.store(DV + goff, dv.to(DV.dtype.element_ty), mask=gmask)

    @triton.jit
    def _cc_bwd_kernel(
        Q, K, V, O, DO, LSE, DQ, DK, DV,
        sqb, sqc, sqn, sqh, sqd, skb, skc, skn, skh, skd, svb, svc, svn, svh, svd,
        sob, soc, son, soh, sod, sdb, sdc, sdn, sdh, sdd, slb, slc, sln, slh,
        sgb, sgc, sgn, sgh, sgd,
        C, N, HS, HT, D, n_spatial, sm_scale, seed, dropout_p,
        BLOCK_C: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
        HAS_DROPOUT: tl.constexpr, UPCAST: tl.constexpr, PREC: tl.constexpr,
    ):
        pid = tl.program_id(0)
        b, outer, head = _decode(pid, n_spatial, C, N, HS, HT)
        if pid < n_spatial:
            _bwd_problem(
                Q, K, V, O, DO, LSE, DQ, DK, DV, pid, b, outer, head, C, D,
                sqb, sqc, sqn, sqh, sqd, skb, skc, skn, skh, skd, svb, svc, svn, svh, svd,
                sob, soc, son, soh, sod, sdb, sdc, sdn, sdh, sdd, slb, slc, sln, slh,
                sgb, sgc, sgn, sgh, sgd, sm_scale, seed, dropout_p,
                True, BLOCK_C, BLOCK_D, HAS_DROPOUT, UPCAST, PREC,
            )
        else:
            _bwd_problem(
                Q, K, V, O, DO, LSE, DQ, DK, DV, pid, b, outer, head, N, D,
                sqb, sqc, sqn, sqh, sqd, skb, skc, skn, skh, skd, svb, svc, svn, svh, svd,
                sob, soc, son, soh, sod, sdb, sdc, sdn, sdh, sdd, slb, slc, sln, slh,
                sgb, sgc, sgn, sgh, sgd, sm_scale, seed, dropout_p,
                False, BLOCK_N, BLOCK_D, HAS_DROPOUT, UPCAST, PREC,
            )


def _block(n: int) -> int:
    return max(16, 1 << max(0, n - 1).bit_length())


def _launch_config(q: torch.Tensor, C: int, N: int, d: int) -> dict:
    block_c, block_n, block_d = _block(C), _block(N), _block(d)
    widest = max(block_c, block_n)
    # bf16 has no interpreter arithmetic; fp32 must not silently drop to TF32 on tensor cores
    upcast = q.dtype == torch.float32 or (INTERPRET and q.dtype == torch.bfloat16)
    return dict(
        BLOCK_C=block_c,
        BLOCK_N=block_n,
        BLOCK_D=block_d,
        UPCAST=upcast,
        PREC="ieee" if upcast else "tf32",
        num_warps=8 if widest >= 128 else (4 if widest >= 64 else 2),
    )


def _check(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, heads_s: int, dropout_p: float) -> None:
    if not _HAVE_TRITON:
        raise RuntimeError("triton is not installed; use backend='torch'")
    if q.dim() != 5 or k.shape != q.shape or v.shape != q.shape:
        raise ValueError(f"q, k, v must share one (B, C, N, H, d) shape; got {q.shape}, {k.shape}, {v.shape}")
    if not (q.dtype == k.dtype == v.dtype) or q.dtype not in SUPPORTED_DTYPES:
        raise TypeError(f"q, k, v must share one dtype among {SUPPORTED_DTYPES}; got {q.dtype}, {k.dtype}, {v.dtype}")
    devices = {q.device, k.device, v.device}
    if len(devices) != 1:
        raise ValueError(f"q, k, v on different devices: {devices}")
    if INTERPRET:
        if q.is_cuda:
            raise ValueError("TRITON_INTERPRET=1 runs the kernel on CPU tensors; got CUDA tensors")
    elif not q.is_cuda:
        raise ValueError("the Triton criss-cross kernel needs CUDA tensors (or TRITON_INTERPRET=1 on the CPU)")
    B, C, N, H, d = q.shape
    if not 0 <= heads_s <= H:
        raise ValueError(f"heads_s={heads_s} outside [0, H={H}]")
    if max(C, N) > MAX_SEQ or d > MAX_HEAD_DIM:
        raise ValueError(f"C={C}, N={N}, d={d}: the kernel holds sequences ≤ {MAX_SEQ} and head dims ≤ {MAX_HEAD_DIM}")
    if not 0.0 <= dropout_p < 1.0:
        raise ValueError(f"dropout_p={dropout_p} outside [0, 1)")


def supports(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, heads_s: int, dropout_p: float = 0.0) -> bool:
    """Whether :func:`criss_cross_attention_triton` accepts these inputs (used by ``backend="auto"``)."""
    try:
        _check(q, k, v, heads_s, dropout_p)
    except (RuntimeError, ValueError, TypeError):
        return False
    return AVAILABLE


def _strides5(t: torch.Tensor) -> tuple[int, ...]:
    return tuple(t.stride())


class _CrissCrossFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, heads_s: int, dropout_p: float, scale: float):
        B, C, N, H, d = q.shape
        o = torch.empty((B, C, N, H, d), dtype=q.dtype, device=q.device)
        lse = torch.empty((B, C, N, H), dtype=torch.float32, device=q.device)
        n_spatial = B * N * heads_s
        n_temporal = B * C * (H - heads_s)
        # one seed per call, drawn from torch's CPU generator: reproducible under torch.manual_seed
        seed = int(torch.randint(0, 2**31 - 1, (1,)).item()) if dropout_p > 0 else 0
        cfg = _launch_config(q, C, N, d)
        grid = (n_spatial + n_temporal,)
        if grid[0] > 0:
            _cc_fwd_kernel[grid](
                q, k, v, o, lse,
                *_strides5(q), *_strides5(k), *_strides5(v), *_strides5(o), *lse.stride(),
                C, N, heads_s, H - heads_s, d, n_spatial, scale * _LOG2E, seed, float(dropout_p),
                HAS_DROPOUT=dropout_p > 0, **cfg,
            )
        ctx.save_for_backward(q, k, v, o, lse)
        ctx.heads_s, ctx.dropout_p, ctx.scale, ctx.seed = heads_s, dropout_p, scale, seed
        return o

    @staticmethod
    def backward(ctx, do):
        q, k, v, o, lse = ctx.saved_tensors
        heads_s, dropout_p, scale, seed = ctx.heads_s, ctx.dropout_p, ctx.scale, ctx.seed
        B, C, N, H, d = q.shape
        dq = torch.empty((B, C, N, H, d), dtype=q.dtype, device=q.device)
        dk = torch.empty_like(dq)
        dv = torch.empty_like(dq)
        n_spatial = B * N * heads_s
        grid = (n_spatial + B * C * (H - heads_s),)
        if grid[0] > 0:
            _cc_bwd_kernel[grid](
                q, k, v, o, do, lse, dq, dk, dv,
                *_strides5(q), *_strides5(k), *_strides5(v), *_strides5(o), *_strides5(do), *lse.stride(),
                *_strides5(dq),
                C, N, heads_s, H - heads_s, d, n_spatial, scale, seed, float(dropout_p),
                HAS_DROPOUT=dropout_p > 0, **_launch_config(q, C, N, d),
            )
        return dq, dk, dv, None, None, None


def criss_cross_attention_triton(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    heads_s: int,
    dropout_p: float = 0.0,
    scale: float | None = None,
) -> torch.Tensor:
    """Fused criss-cross attention (CBraMod, Wang et al., ICLR 2025): one Triton launch forward, one
    backward, differentiable in q, k and v.

    Parameters
    ----------
    q, k, v : Tensor, shape ``(B, C, N, H, d)``, dtype float32, float16 or bfloat16
        Any strides (views from ``qkv.view(B, C, N, 3, H, d).unbind(3)`` are read in place). CUDA
        tensors, or CPU tensors when ``TRITON_INTERPRET=1``. ``C, N ≤ 256``, ``d ≤ 256``.
    heads_s : int
        Heads ``0 … heads_s-1`` attend over the C channels of each patch; heads ``heads_s … H-1`` over
        the N patches of each channel.
    dropout_p : float
        Attention-weight dropout in ``[0, 1)``, applied in-kernel (Philox); the backward regenerates the
        same mask. The random stream differs from PyTorch's, so only the distribution matches the
        reference path.
    scale : float, optional
        Softmax scale, default ``1/sqrt(d)``.

    Returns
    -------
    Tensor ``(B, C, N, H, d)`` (contiguous), dtype of ``q``; accumulation is fp32 throughout.

    Raises
    ------
    RuntimeError if triton is missing; TypeError for unsupported or mixed dtypes; ValueError for
    mismatched shapes/devices, CPU tensors without ``TRITON_INTERPRET=1``, sizes beyond the limits,
    ``heads_s`` outside ``[0, H]`` or ``dropout_p`` outside ``[0, 1)``.
    """
    _check(q, k, v, heads_s, dropout_p)
    d = q.shape[-1]
    scale = 1.0 / math.sqrt(d) if scale is None else float(scale)
    return _CrissCrossFunction.apply(q, k, v, int(heads_s), float(dropout_p), scale)
