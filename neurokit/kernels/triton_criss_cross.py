"""Fused Triton criss-cross attention, forward and backward (CBraMod, Wang et al., ICLR 2025, §3.2).

One launch covers both head groups of a criss-cross layer: the first programs solve the ``B·N·Hs``
*spatial* problems (one head attending over the C channels of one patch), the others the ``B·C·Ht``
*temporal* problems (one head attending over the N patches of one channel). Each program takes a block
of heads of its group as one batched ``(heads, L, L)`` tile, so neighbouring heads of the same tokens
are read together. Q, K and V are read through their strides straight from the fused
``(B, C, N, 3, H, d)`` projection, so no permute, ``contiguous()`` or concatenation is needed, and
each head group writes a disjoint slice of one ``(B, C, N, H, d)`` output.

Sequences are short (C ≤ 256, N ≤ 256 here; CBraMod uses C ≤ 128, N ≤ 64), so a whole sequence fits
one tile: the softmax is computed in one shot (keys padded to a power of two ≥ 16 and masked with −inf,
head dim padded to a power of two ≥ 16 and masked), in base 2 with fp32 accumulation. The forward
saves the log-sum-exp ``LSE`` (natural log, ``(B, C, N, H)`` fp32); the backward recomputes the
probabilities from it, computes ``Δ = rowsum(O·dO)`` in the same program and writes dQ, dK and dV of
its problem without atomics (FlashAttention-2, Dao 2023, in the single-tile case).

GPU code generation, checked without a GPU by compiling every CBraMod specialisation for sm_80 and sm_90
(:mod:`neurokit.kernels.triton_compile`, ``tests/test_kernels_compile.py``): fp32 inputs use 3-pass TF32
dots (``input_precision="tf32x3"``: tensor cores, error near fp32's; ``precision="ieee"`` keeps the exact,
scalar-FMA mode), 16-bit inputs their native MMA, INT8 Q·Kᵀ an s8·s8→s32 MMA. Head blocks are sized so that
ptxas does not spill (score elements per program ≤ :data:`TILE_BUDGET`, halved for fp32), and on sm_90
sequences of 64 take one head per program so that Triton can emit ``wgmma`` (it lowers only 2-D dots with
M ≥ 64 to it). Offsets of a problem's first token are int64 (batch × stride can pass 2³¹); the grid is 1-D
(no 65535 limit on y/z), at most 2³¹ − 1 programs.

Attention-weight dropout runs inside the kernel: a Philox stream (``tl.rand``) keyed by a seed drawn
from torch's default CPU generator and counted by (problem, head, query, key) gives the keep mask; the
backward regenerates the same mask from the same seed, so no mask is stored.

``TRITON_INTERPRET=1`` (set before triton is imported) runs the kernels on CPU tensors through
Triton's interpreter; bf16 is then computed in fp32 because the interpreter has no bf16 arithmetic.
"""

from __future__ import annotations

import math
import os
import warnings

import torch

from neurokit.kernels.docs import fill_doc

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
#: Longest sequence ``backend="auto"`` sends to the kernel (beyond it the score tile spills registers).
AUTO_MAX_SEQ = 128
#: Largest head dimension supported.
MAX_HEAD_DIM = 256
SUPPORTED_DTYPES = (torch.float32, torch.float16, torch.bfloat16)

_LOG2E = 1.4426950408889634


if _HAVE_TRITON:

    @triton.jit
    def _seq_base(b, outer, s_b, s_c, s_n, SPATIAL: tl.constexpr):
        """Offset of one problem's first token in a ``(B, C, N, …)`` tensor and the stride between its
        sequence positions (channels if spatial, patches if temporal)."""
        if SPATIAL:
            base = b * s_b + outer * s_n
            step = s_c
        else:
            base = b * s_b + outer * s_c
            step = s_n
        return base, step

    @triton.jit
    def _load_heads(ptr, base, step, s_h, s_d, heads, rows, cols, mask, UPCAST: tl.constexpr):
        """``(HB, BLOCK_L, BLOCK_D)`` tile: a block of heads × sequence × head dim, zero-padded."""
        offs = base + heads[:, None, None] * s_h + rows[None, :, None] * step + cols[None, None, :] * s_d
        x = tl.load(ptr + offs, mask=mask, other=0.0)
        if UPCAST:
            x = x.to(tl.float32)
        return x

    @triton.jit
    def _keep_mask(seed, problem, rows, BLOCK_L: tl.constexpr, dropout_p):
        """Philox keep mask ``(HB, BLOCK_L, BLOCK_L)`` keyed by the global problem id of each head, so
        forward and backward (whatever their head blocking) draw the same mask."""
        offs = (
            problem.to(tl.int64)[:, None, None] * (BLOCK_L * BLOCK_L)
            + rows[None, :, None] * BLOCK_L
            + rows[None, None, :]
        )
        return tl.rand(seed, offs) >= dropout_p

    @triton.jit
    def _decode(pid, n_spatial, B, C, N, H, HS, GS, GT, HB_S: tl.constexpr, HB_T: tl.constexpr):
        """Program id → (batch, outer index, first head, heads in block, global id of problem 0 head 0).

        Spatial programs come first; the head block index runs fastest so that neighbouring programs
        read neighbouring heads of the same tokens."""
        if pid < n_spatial:
            g = pid % GS
            rest = pid // GS
            outer = rest % N
            b = rest // N
            h0 = g * HB_S
            nh = HS - h0
            problem0 = (b * N + outer) * H
        else:
            t = pid - n_spatial
            g = t % GT
            rest = t // GT
            outer = rest % C
            b = rest // C
            h0 = HS + g * HB_T
            nh = H - h0
            problem0 = B * N * H + (b * C + outer) * H
        return b.to(tl.int64), outer.to(tl.int64), h0, nh, problem0

    @triton.jit
    def _bdot(a, b, PREC: tl.constexpr):
        """Batched ``(HB, M, K) @ (HB, K, N)`` with fp32 accumulation; a plain 2-D dot when HB = 1."""
        if a.shape[0] == 1:
            c = tl.dot(
                tl.reshape(a, (a.shape[1], a.shape[2])), tl.reshape(b, (b.shape[1], b.shape[2])), input_precision=PREC
            )
            c = tl.reshape(c, (1, a.shape[1], b.shape[2]))
        else:
            c = tl.dot(a, b, input_precision=PREC)
        return c

    @triton.jit
    def _bdot_int8(a, b):
        """Batched INT8 ``(HB, M, K) @ (HB, K, N)`` with an explicit INT32 accumulator (``mma …s8.s8.s32``),
        returned in fp32 (exact while |sum| < 2²⁴: K ≤ 256 products of |codes| ≤ 127 stay below 2²²)."""
        if a.shape[0] == 1:
            c = tl.dot(
                tl.reshape(a, (a.shape[1], a.shape[2])), tl.reshape(b, (b.shape[1], b.shape[2])), out_dtype=tl.int32
            )
            c = tl.reshape(c, (1, a.shape[1], b.shape[2]))
        else:
            c = tl.dot(a, b, out_dtype=tl.int32)
        return c.to(tl.float32)

    @triton.jit
    def _problem_qkv(
        Q,
        K,
        V,
        b,
        outer,
        h0,
        nh,
        L,
        D,
        sqb,
        sqc,
        sqn,
        sqh,
        sqd,
        skb,
        skc,
        skn,
        skh,
        skd,
        svb,
        svc,
        svn,
        svh,
        svd,
        SPATIAL: tl.constexpr,
        HB: tl.constexpr,
        BLOCK_L: tl.constexpr,
        BLOCK_D: tl.constexpr,
        UPCAST: tl.constexpr,
    ):
        """Index vectors, validity masks and the Q, K, V tiles of one program's block of heads."""
        hl = tl.arange(0, HB)
        rows = tl.arange(0, BLOCK_L)
        cols = tl.arange(0, BLOCK_D)
        heads = h0 + hl
        h_ok = hl < nh
        r_ok = rows < L
        mask = h_ok[:, None, None] & r_ok[None, :, None] & (cols < D)[None, None, :]
        qb, qs = _seq_base(b, outer, sqb, sqc, sqn, SPATIAL)
        kb, ks = _seq_base(b, outer, skb, skc, skn, SPATIAL)
        vb, vs = _seq_base(b, outer, svb, svc, svn, SPATIAL)
        q = _load_heads(Q, qb, qs, sqh, sqd, heads, rows, cols, mask, UPCAST)
        k = _load_heads(K, kb, ks, skh, skd, heads, rows, cols, mask, UPCAST)
        v = _load_heads(V, vb, vs, svh, svd, heads, rows, cols, mask, UPCAST)
        return q, k, v, heads, rows, cols, h_ok, r_ok, mask

    @triton.jit
    def _quantize_int8(x, scale):
        """Symmetric INT8 codes of ``x / scale[:, None, None]`` (round half away from zero)."""
        y = x / scale[:, None, None]
        y = tl.where(y >= 0, tl.floor(y + 0.5), -tl.floor(-y + 0.5))
        return y.to(tl.int8)

    @triton.jit
    def _int8_scores(q, k, mask, L, qk_scale):
        """SageAttention-style scores (Zhang et al., ICLR 2025) in base 2: K smoothed by its mean over
        the L tokens (exact under softmax: it shifts every score of a query by the same amount), Q and
        K quantised to INT8 with one scale per head block (the softmax scale folded into Q's),
        INT8·INT8 → INT32 dot, dequantised in fp32."""
        qf = q.to(tl.float32)
        kf = k.to(tl.float32)
        k_mean = tl.sum(kf, 1) / L
        kf = tl.where(mask, kf - k_mean[:, None, :], 0.0)
        sq = tl.max(tl.max(tl.abs(qf), 2), 1) / 127.0
        sk = tl.max(tl.max(tl.abs(kf), 2), 1) / 127.0
        sq = tl.where(sq > 0, sq, 1.0)
        sk = tl.where(sk > 0, sk, 1.0)
        qi = _quantize_int8(qf, sq)
        ki = _quantize_int8(kf, sk)
        s = _bdot_int8(qi, tl.permute(ki, (0, 2, 1)))
        return s * (sq * sk * qk_scale)[:, None, None]

    @triton.jit
    def _fwd_problem(
        Q,
        K,
        V,
        O,
        LSE,
        b,
        outer,
        h0,
        nh,
        problem0,
        L,
        D,
        sqb,
        sqc,
        sqn,
        sqh,
        sqd,
        skb,
        skc,
        skn,
        skh,
        skd,
        svb,
        svc,
        svn,
        svh,
        svd,
        sob,
        soc,
        son,
        soh,
        sod,
        slb,
        slc,
        sln,
        slh,
        qk_scale,
        seed,
        dropout_p,
        SPATIAL: tl.constexpr,
        HB: tl.constexpr,
        BLOCK_L: tl.constexpr,
        BLOCK_D: tl.constexpr,
        HAS_DROPOUT: tl.constexpr,
        UPCAST: tl.constexpr,
        PREC: tl.constexpr,
        QK_INT8: tl.constexpr,
        STORE_LSE: tl.constexpr,
    ):
        q, k, v, heads, rows, cols, h_ok, r_ok, mask = _problem_qkv(
            Q,
            K,
            V,
            b,
            outer,
            h0,
            nh,
            L,
            D,
            sqb,
            sqc,
            sqn,
            sqh,
            sqd,
            skb,
            skc,
            skn,
            skh,
            skd,
            svb,
            svc,
            svn,
            svh,
            svd,
            SPATIAL,
            HB,
            BLOCK_L,
            BLOCK_D,
            UPCAST,
        )
        # scores in base 2, s = (q·k)·scale·log2(e); padded keys → −inf; one-shot softmax per row
        if QK_INT8:
            s = _int8_scores(q, k, mask, L, qk_scale)
        else:
            s = _bdot(q, tl.permute(k, (0, 2, 1)), PREC) * qk_scale
        s = tl.where(r_ok[None, None, :], s, float("-inf"))
        m = tl.max(s, 2)
        p = tl.exp2(s - m[:, :, None])
        l = tl.sum(p, 2)
        if HAS_DROPOUT:
            keep = _keep_mask(seed, problem0 + heads, rows, BLOCK_L, dropout_p)
            p = tl.where(keep, p / (1.0 - dropout_p), 0.0)
        o = _bdot(p.to(v.dtype), v, PREC) / l[:, :, None]
        ob, os_ = _seq_base(b, outer, sob, soc, son, SPATIAL)
        o_offs = ob + heads[:, None, None] * soh + rows[None, :, None] * os_ + cols[None, None, :] * sod
        tl.store(O + o_offs, o.to(O.dtype.element_ty), mask=mask)
        if STORE_LSE:  # only when a backward will need it
            lb, ls = _seq_base(b, outer, slb, slc, sln, SPATIAL)
            lse = (m + tl.log2(l)) * 0.6931471805599453  # natural-log LSE
            tl.store(LSE + lb + heads[:, None] * slh + rows[None, :] * ls, lse, mask=h_ok[:, None] & r_ok[None, :])

    # sizes and the seed change with every shape and call: no specialisation on them (strides keep it)
    _NO_SPECIALIZE = ["B", "C", "N", "H", "HS", "D", "GS", "GT", "n_spatial", "seed"]

    @triton.jit(do_not_specialize=_NO_SPECIALIZE)
    def _cc_fwd_kernel(
        Q,
        K,
        V,
        O,
        LSE,
        sqb,
        sqc,
        sqn,
        sqh,
        sqd,
        skb,
        skc,
        skn,
        skh,
        skd,
        svb,
        svc,
        svn,
        svh,
        svd,
        sob,
        soc,
        son,
        soh,
        sod,
        slb,
        slc,
        sln,
        slh,
        B,
        C,
        N,
        H,
        HS,
        D,
        GS,
        GT,
        n_spatial,
        qk_scale,
        seed,
        dropout_p,
        HB_S: tl.constexpr,
        HB_T: tl.constexpr,
        BLOCK_C: tl.constexpr,
        BLOCK_N: tl.constexpr,
        BLOCK_D: tl.constexpr,
        HAS_DROPOUT: tl.constexpr,
        UPCAST: tl.constexpr,
        PREC: tl.constexpr,
        QK_INT8: tl.constexpr,
        STORE_LSE: tl.constexpr,
    ):
        pid = tl.program_id(0)
        b, outer, h0, nh, problem0 = _decode(pid, n_spatial, B, C, N, H, HS, GS, GT, HB_S, HB_T)
        if pid < n_spatial:
            _fwd_problem(
                Q,
                K,
                V,
                O,
                LSE,
                b,
                outer,
                h0,
                nh,
                problem0,
                C,
                D,
                sqb,
                sqc,
                sqn,
                sqh,
                sqd,
                skb,
                skc,
                skn,
                skh,
                skd,
                svb,
                svc,
                svn,
                svh,
                svd,
                sob,
                soc,
                son,
                soh,
                sod,
                slb,
                slc,
                sln,
                slh,
                qk_scale,
                seed,
                dropout_p,
                True,
                HB_S,
                BLOCK_C,
                BLOCK_D,
                HAS_DROPOUT,
                UPCAST,
                PREC,
                QK_INT8,
                STORE_LSE,
            )
        else:
            _fwd_problem(
                Q,
                K,
                V,
                O,
                LSE,
                b,
                outer,
                h0,
                nh,
                problem0,
                N,
                D,
                sqb,
                sqc,
                sqn,
                sqh,
                sqd,
                skb,
                skc,
                skn,
                skh,
                skd,
                svb,
                svc,
                svn,
                svh,
                svd,
                sob,
                soc,
                son,
                soh,
                sod,
                slb,
                slc,
                sln,
                slh,
                qk_scale,
                seed,
                dropout_p,
                False,
                HB_T,
                BLOCK_N,
                BLOCK_D,
                HAS_DROPOUT,
                UPCAST,
                PREC,
                QK_INT8,
                STORE_LSE,
            )

    @triton.jit
    def _bwd_problem(
        Q,
        K,
        V,
        O,
        DO,
        LSE,
        DQ,
        DK,
        DV,
        b,
        outer,
        h0,
        nh,
        problem0,
        L,
        D,
        sqb,
        sqc,
        sqn,
        sqh,
        sqd,
        skb,
        skc,
        skn,
        skh,
        skd,
        svb,
        svc,
        svn,
        svh,
        svd,
        sob,
        soc,
        son,
        soh,
        sod,
        sdb,
        sdc,
        sdn,
        sdh,
        sdd,
        slb,
        slc,
        sln,
        slh,
        sgb,
        sgc,
        sgn,
        sgh,
        sgd,
        sm_scale,
        seed,
        dropout_p,
        SPATIAL: tl.constexpr,
        HB: tl.constexpr,
        BLOCK_L: tl.constexpr,
        BLOCK_D: tl.constexpr,
        HAS_DROPOUT: tl.constexpr,
        UPCAST: tl.constexpr,
        PREC: tl.constexpr,
    ):
        q, k, v, heads, rows, cols, h_ok, r_ok, mask = _problem_qkv(
            Q,
            K,
            V,
            b,
            outer,
            h0,
            nh,
            L,
            D,
            sqb,
            sqc,
            sqn,
            sqh,
            sqd,
            skb,
            skc,
            skn,
            skh,
            skd,
            svb,
            svc,
            svn,
            svh,
            svd,
            SPATIAL,
            HB,
            BLOCK_L,
            BLOCK_D,
            UPCAST,
        )
        ob, os_ = _seq_base(b, outer, sob, soc, son, SPATIAL)
        db, ds_ = _seq_base(b, outer, sdb, sdc, sdn, SPATIAL)
        lb, ls = _seq_base(b, outer, slb, slc, sln, SPATIAL)
        o = _load_heads(O, ob, os_, soh, sod, heads, rows, cols, mask, True)
        do = _load_heads(DO, db, ds_, sdh, sdd, heads, rows, cols, mask, UPCAST)
        lse_mask = h_ok[:, None] & r_ok[None, :]
        lse2 = tl.load(LSE + lb + heads[:, None] * slh + rows[None, :] * ls, mask=lse_mask, other=0.0)
        lse2 = lse2 * 1.4426950408889634
        # probabilities recomputed from the saved LSE; padded heads, rows and keys → 0
        s = _bdot(q, tl.permute(k, (0, 2, 1)), PREC) * (sm_scale * 1.4426950408889634)
        p = tl.exp2(s - lse2[:, :, None])
        p = tl.where(lse_mask[:, :, None] & r_ok[None, None, :], p, 0.0)
        delta = tl.sum(o * do.to(tl.float32), 2)  # Δ = rowsum(O·dO) = rowsum(P·dP)
        dp = _bdot(do, tl.permute(v, (0, 2, 1)), PREC)
        if HAS_DROPOUT:
            keep = _keep_mask(seed, problem0 + heads, rows, BLOCK_L, dropout_p)
            inv = 1.0 / (1.0 - dropout_p)
            pd = tl.where(keep, p * inv, 0.0)
            dp = tl.where(keep, dp * inv, 0.0)
        else:
            pd = p
        dv = _bdot(tl.permute(pd, (0, 2, 1)).to(do.dtype), do, PREC)
        ds = p * (dp - delta[:, :, None]) * sm_scale
        dq = _bdot(ds.to(k.dtype), k, PREC)
        dk = _bdot(tl.permute(ds, (0, 2, 1)).to(q.dtype), q, PREC)
        gb, gs = _seq_base(b, outer, sgb, sgc, sgn, SPATIAL)
        g_offs = gb + heads[:, None, None] * sgh + rows[None, :, None] * gs + cols[None, None, :] * sgd
        tl.store(DQ + g_offs, dq.to(DQ.dtype.element_ty), mask=mask)
        tl.store(DK + g_offs, dk.to(DK.dtype.element_ty), mask=mask)
        tl.store(DV + g_offs, dv.to(DV.dtype.element_ty), mask=mask)

    @triton.jit(do_not_specialize=_NO_SPECIALIZE)
    def _cc_bwd_kernel(
        Q,
        K,
        V,
        O,
        DO,
        LSE,
        DQ,
        DK,
        DV,
        sqb,
        sqc,
        sqn,
        sqh,
        sqd,
        skb,
        skc,
        skn,
        skh,
        skd,
        svb,
        svc,
        svn,
        svh,
        svd,
        sob,
        soc,
        son,
        soh,
        sod,
        sdb,
        sdc,
        sdn,
        sdh,
        sdd,
        slb,
        slc,
        sln,
        slh,
        sgb,
        sgc,
        sgn,
        sgh,
        sgd,
        B,
        C,
        N,
        H,
        HS,
        D,
        GS,
        GT,
        n_spatial,
        sm_scale,
        seed,
        dropout_p,
        HB_S: tl.constexpr,
        HB_T: tl.constexpr,
        BLOCK_C: tl.constexpr,
        BLOCK_N: tl.constexpr,
        BLOCK_D: tl.constexpr,
        HAS_DROPOUT: tl.constexpr,
        UPCAST: tl.constexpr,
        PREC: tl.constexpr,
    ):
        pid = tl.program_id(0)
        b, outer, h0, nh, problem0 = _decode(pid, n_spatial, B, C, N, H, HS, GS, GT, HB_S, HB_T)
        if pid < n_spatial:
            _bwd_problem(
                Q,
                K,
                V,
                O,
                DO,
                LSE,
                DQ,
                DK,
                DV,
                b,
                outer,
                h0,
                nh,
                problem0,
                C,
                D,
                sqb,
                sqc,
                sqn,
                sqh,
                sqd,
                skb,
                skc,
                skn,
                skh,
                skd,
                svb,
                svc,
                svn,
                svh,
                svd,
                sob,
                soc,
                son,
                soh,
                sod,
                sdb,
                sdc,
                sdn,
                sdh,
                sdd,
                slb,
                slc,
                sln,
                slh,
                sgb,
                sgc,
                sgn,
                sgh,
                sgd,
                sm_scale,
                seed,
                dropout_p,
                True,
                HB_S,
                BLOCK_C,
                BLOCK_D,
                HAS_DROPOUT,
                UPCAST,
                PREC,
            )
        else:
            _bwd_problem(
                Q,
                K,
                V,
                O,
                DO,
                LSE,
                DQ,
                DK,
                DV,
                b,
                outer,
                h0,
                nh,
                problem0,
                N,
                D,
                sqb,
                sqc,
                sqn,
                sqh,
                sqd,
                skb,
                skc,
                skn,
                skh,
                skd,
                svb,
                svc,
                svn,
                svh,
                svd,
                sob,
                soc,
                son,
                soh,
                sod,
                sdb,
                sdc,
                sdn,
                sdh,
                sdd,
                slb,
                slc,
                sln,
                slh,
                sgb,
                sgc,
                sgn,
                sgh,
                sgd,
                sm_scale,
                seed,
                dropout_p,
                False,
                HB_T,
                BLOCK_N,
                BLOCK_D,
                HAS_DROPOUT,
                UPCAST,
                PREC,
            )


def _block(n: int) -> int:
    return max(16, 1 << max(0, n - 1).bit_length())


def _pow2_at_least(n: int) -> int:
    return 1 << max(0, n - 1).bit_length()


#: Most score-tile elements (heads × keys × queries, fp32) one program holds, forward and backward. Sized
#: by the ahead-of-time compile (``tests/test_kernels_compile.py``): beyond these ptxas spills registers
#: (the backward keeps P, dP and dS plus five (heads × L × d) tiles live; dropout adds the Philox state).
TILE_BUDGET = {"fwd": 8192, "bwd": 2048}
#: ``input_precision`` of the fp32 dots per ``precision`` option: "auto" is 3-pass TF32 (tensor cores, error
#: near fp32's); "ieee" the exact fp32 FMA path (slow: no tensor cores); "tf32" one pass (≈1e-3 error).
PRECISIONS = ("auto", "ieee", "tf32x3", "tf32")


def _target_arch(q: torch.Tensor) -> int | None:
    """Compute capability ``10·major + minor`` of q's GPU (None on the CPU / interpreter)."""
    if not q.is_cuda:
        return None
    major, minor = torch.cuda.get_device_capability(q.device)
    return 10 * major + minor


def _plan(
    q: torch.Tensor,
    heads_s: int,
    which: str,
    qk_int8: bool = False,
    precision: str = "auto",
    arch: int | None = None,
) -> tuple[tuple[int], dict, dict]:
    """Grid, runtime arguments and compile-time parameters of one pass.

    Each program takes one (batch, patch) spatial or (batch, channel) temporal sequence and a block of
    ``HB`` heads of that group (a power of two ≥ the group's head count unless the score tiles would
    exceed the register budget), as a batched ``(HB, L, L)`` tile. ``NEUROKIT_CC_MAX_HEADS_PER_PROGRAM``
    caps HB (1 gives plain 2-D dots, one head per program). On sm_90 (``arch`` ≥ 90) sequences of 64 or
    more take one head per program: Triton lowers only 2-D dots with M ≥ 64 to ``wgmma``; batched 3-D
    dots stay on ``mma.sync``.
    """
    if precision not in PRECISIONS:
        raise ValueError(f"precision={precision!r}; allowed: {PRECISIONS}")
    B, C, N, H, d = q.shape
    block_c, block_n, block_d = _block(C), _block(N), _block(d)
    if qk_int8:
        block_d = max(block_d, 32)  # INT8 tensor-core dots need K ≥ 32
    heads_t = H - heads_s
    # fp32 operands take twice the registers, and tf32x3 splits each into a high and a low part
    fp32 = q.dtype == torch.float32
    budget = TILE_BUDGET[which] // (2 if fp32 else 1)
    most = _heads_cap or _pow2_at_least(int(os.environ.get("NEUROKIT_CC_MAX_HEADS_PER_PROGRAM", "64")))

    def heads_per_program(heads: int, block: int) -> int:
        if arch is not None and arch >= 90 and block >= 64:
            return 1
        return min(_pow2_at_least(max(heads, 1)), max(1, budget // (block * block)), most)

    hb_s, hb_t = heads_per_program(heads_s, block_c), heads_per_program(heads_t, block_n)
    gs, gt = -(-heads_s // hb_s), -(-heads_t // hb_t)
    n_spatial = B * N * gs
    grid = (n_spatial + B * C * gt,)
    if grid[0] >= 2**31:
        raise ValueError(f"{grid[0]} programs: over the CUDA grid limit (2³¹ − 1) for shape {tuple(q.shape)}")
    tile = max(hb_s * block_c * block_c if heads_s else 0, hb_t * block_n * block_n if heads_t else 0)
    num_warps = 2
    weight = (2 if which == "bwd" else 1) * (4 if fp32 else 1)  # live registers per score element (relative)
    while num_warps < 8 and num_warps * 1024 < tile * weight:
        num_warps *= 2
    # bf16 has no interpreter arithmetic; fp32 inputs stay fp32 in registers (tf32x3 / ieee dots)
    upcast = q.dtype == torch.float32 or (INTERPRET and q.dtype == torch.bfloat16)
    if q.dtype == torch.float32:
        prec = "tf32x3" if precision == "auto" else precision
    else:
        prec = "tf32"  # ignored by 16-bit dots (native bf16/fp16 MMA, fp32 accumulation)
    runtime = dict(B=B, C=C, N=N, H=H, HS=heads_s, D=d, GS=gs, GT=gt, n_spatial=n_spatial)
    meta = dict(
        HB_S=hb_s,
        HB_T=hb_t,
        BLOCK_C=block_c,
        BLOCK_N=block_n,
        BLOCK_D=block_d,
        UPCAST=upcast,
        PREC=prec,
        num_warps=num_warps,
    )
    return grid, runtime, meta


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


@fill_doc
def unsupported_reason(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, heads_s: int, dropout_p: float = 0.0
) -> str | None:
    """Why ``backend="auto"`` would not run the kernel on these inputs (None when it would).

    Parameters
    ----------
    %(qkv)s
    %(heads_s)s
    %(dropout_p)s

    Returns
    -------
    str or None
        The error :func:`criss_cross_attention_triton` would raise, Triton unable to run here (no CUDA device
        and ``TRITON_INTERPRET`` not 1), or C, N over :data:`AUTO_MAX_SEQ`; ``None`` when the kernel runs.

    Examples
    --------
    >>> q = torch.randn(1, 3, 4, 2, 8)
    >>> unsupported_reason(q, q, q, heads_s=3) is not None  # 3 spatial heads of 2
    True
    """
    try:
        _check(q, k, v, heads_s, dropout_p)
    except (RuntimeError, ValueError, TypeError) as exc:  # the errors _check raises, nothing else
        return str(exc)
    if not AVAILABLE:
        return "triton cannot run here (no CUDA device and TRITON_INTERPRET is not 1)"
    if max(q.shape[1], q.shape[2]) > AUTO_MAX_SEQ:
        return f"C={q.shape[1]}, N={q.shape[2]}: over {AUTO_MAX_SEQ}, where the score tile would spill registers"
    return None


@fill_doc
def supports(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, heads_s: int, dropout_p: float = 0.0) -> bool:
    """Whether ``backend="auto"`` runs the kernel: Triton can run here, it accepts these inputs, and
    C, N ≤ :data:`AUTO_MAX_SEQ` (see :func:`unsupported_reason`).

    Parameters
    ----------
    %(qkv)s
    %(heads_s)s
    %(dropout_p)s

    Returns
    -------
    bool

    Examples
    --------
    >>> q = torch.randn(1, 3, 4, 2, 8)
    >>> supports(q, q, q, heads_s=3)
    False
    """
    return unsupported_reason(q, k, v, heads_s, dropout_p) is None


#: Set to 1 after a batched (3-D) dot failed to compile on this machine: one head per program from then on.
_heads_cap: int | None = None
#: Fallback reasons already warned about (one warning per reason and process).
_warned: set[str] = set()


def _compile_failure(exc: BaseException) -> bool:
    """Whether ``exc`` says the kernel did not compile or does not fit the device (the cases a smaller,
    one-head-per-program tile can cure): Triton's frontend errors, ptxas errors, too much shared memory
    or too many registers, and MLIR pass failures. Anything else (bad arguments, CUDA faults, out of
    memory, interrupts) is re-raised by the caller."""
    from triton.compiler.errors import CompilationError
    from triton.runtime.errors import OutOfResources, PTXASError

    if isinstance(exc, (CompilationError, OutOfResources, PTXASError)):
        return True
    return isinstance(exc, RuntimeError) and str(exc).startswith("PassManager::run failed")


def _launch(
    kernel,
    q,
    heads_s: int,
    which: str,
    pointers: tuple,
    strided: tuple,
    scalars: tuple,
    qk_int8=False,
    precision: str = "auto",
    arch: int | None = None,
    **flags,
):
    """Plan and launch one pass: ``kernel[grid](*pointers, *strides of strided, *sizes, *scalars)``.

    ``arch`` (compute capability, e.g. 90) defaults to q's GPU. If the batched-head variant fails to
    compile or does not fit (see :func:`_compile_failure`), warn once with the reason and fall back to
    one head per program (plain 2-D dots); other errors propagate.
    """
    arch = _target_arch(q) if arch is None else arch
    grid, rt, meta = _plan(q, heads_s, which, qk_int8, precision, arch)
    if grid[0] == 0:
        return

    def go(rt, meta):
        strides = [x for t in strided for x in t.stride()]
        sizes = (rt["B"], rt["C"], rt["N"], rt["H"], rt["HS"], rt["D"], rt["GS"], rt["GT"], rt["n_spatial"])
        kernel[grid](*pointers, *strides, *sizes, *scalars, **flags, **meta)

    try:
        go(rt, meta)
    except Exception as exc:  # compile errors surface at the first launch; only those are handled
        if (meta["HB_S"] == 1 and meta["HB_T"] == 1) or not _compile_failure(exc):
            raise
        reason = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        if reason not in _warned:
            _warned.add(reason)
            warnings.warn(
                f"criss-cross kernel: batched-head tiles (HB {meta['HB_S']}/{meta['HB_T']}) failed to compile "
                f"({reason}); using one head per program from now on",
                RuntimeWarning,
                stacklevel=3,
            )
        global _heads_cap
        _heads_cap = 1
        grid, rt, meta = _plan(q, heads_s, which, qk_int8, precision, arch)
        go(rt, meta)


def _forward(
    q, k, v, heads_s: int, dropout_p: float, scale: float, store_lse: bool, qk_int8: bool = False, precision="auto"
):
    """Launch the forward kernel; returns ``(O, LSE or None, dropout seed)``."""
    B, C, N, H, d = q.shape
    o = torch.empty((B, C, N, H, d), dtype=q.dtype, device=q.device)
    lse = torch.empty((B, C, N, H) if store_lse else (1, 1, 1, 1), dtype=torch.float32, device=q.device)
    # one seed per call, drawn from torch's CPU generator: reproducible under torch.manual_seed
    seed = int(torch.randint(0, 2**31 - 1, (1,)).item()) if dropout_p > 0 else 0
    _launch(
        _cc_fwd_kernel,
        q,
        heads_s,
        "fwd",
        (q, k, v, o, lse),
        (q, k, v, o, lse),
        (scale * _LOG2E, seed, float(dropout_p)),
        qk_int8=qk_int8,
        precision=precision,
        HAS_DROPOUT=dropout_p > 0,
        QK_INT8=qk_int8,
        STORE_LSE=store_lse,
    )
    return o, (lse if store_lse else None), seed


#: The plan-and-launch step, public for the ahead-of-time compile report (:mod:`neurokit.kernels.triton_compile`),
#: which hands it a recorder in place of the JIT kernel.
launch_pass = _launch
if _HAVE_TRITON:
    forward_kernel = _cc_fwd_kernel
    backward_kernel = _cc_bwd_kernel


class _CrissCrossFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, heads_s: int, dropout_p: float, scale: float, precision: str):
        needs_grad = any(ctx.needs_input_grad[:3])
        o, lse, seed = _forward(q, k, v, heads_s, dropout_p, scale, store_lse=needs_grad, precision=precision)
        if needs_grad:
            ctx.save_for_backward(q, k, v, o, lse)
        ctx.heads_s, ctx.dropout_p, ctx.scale, ctx.seed, ctx.precision = heads_s, dropout_p, scale, seed, precision
        return o

    @staticmethod
    def backward(ctx, do):
        q, k, v, o, lse = ctx.saved_tensors
        dq = torch.empty(q.shape, dtype=q.dtype, device=q.device)
        dk = torch.empty_like(dq)
        dv = torch.empty_like(dq)
        # dq, dk, dv share one layout: the kernel takes dq's strides for all three
        _launch(
            _cc_bwd_kernel,
            q,
            ctx.heads_s,
            "bwd",
            (q, k, v, o, do, lse, dq, dk, dv),
            (q, k, v, o, do, lse, dq),
            (ctx.scale, ctx.seed, float(ctx.dropout_p)),
            precision=ctx.precision,
            HAS_DROPOUT=ctx.dropout_p > 0,
        )
        return dq, dk, dv, None, None, None, None


def criss_cross_attention_triton(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    heads_s: int,
    dropout_p: float = 0.0,
    scale: float | None = None,
    qk_int8: bool = False,
    precision: str | None = None,
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
    qk_int8 : bool
        Inference option after SageAttention (Zhang et al., ICLR 2025): K smoothed by its mean over the
        sequence, Q and K quantised to INT8 (one scale per head and sequence, softmax scale folded in),
        INT8 QKᵀ with INT32 accumulation, P·V in the input dtype with fp32 accumulation. Forward only
        (raises ValueError with dropout or when gradients are required); error against fp32 is
        reported by ``benchmarks/kernels.py`` and bounded in the tests.
    precision : {"auto", "ieee", "tf32x3", "tf32"}, optional
        Dots of fp32 inputs (16-bit inputs always use their native tensor-core MMA with fp32
        accumulation). ``"auto"`` (default; the environment variable ``NEUROKIT_CC_PRECISION`` overrides
        it) is ``"tf32x3"``: three TF32 tensor-core passes, error near fp32's (≤ 1e-5 relative in the
        tests). ``"ieee"`` is the exact fp32 mode (scalar FMA, no tensor cores: slow); ``"tf32"`` one
        pass (≈1e-3 relative error).

    Returns
    -------
    Tensor ``(B, C, N, H, d)`` (contiguous), dtype of ``q``; accumulation is fp32 throughout.

    Raises
    ------
    RuntimeError
        Triton is not installed.
    TypeError
        Unsupported or mixed dtypes.
    ValueError
        Mismatched shapes or devices, CPU tensors without ``TRITON_INTERPRET=1``, sizes beyond the limits,
        ``heads_s`` outside ``[0, H]``, ``dropout_p`` outside ``[0, 1)``, an unknown ``precision``, or
        ``qk_int8`` with dropout or gradients.

    Examples
    --------
    >>> q = torch.randn(1, 19, 30, 8, 25, device="cuda", dtype=torch.bfloat16)  # doctest: +SKIP
    >>> criss_cross_attention_triton(q, q, q, heads_s=4).shape  # doctest: +SKIP
    torch.Size([1, 19, 30, 8, 25])
    """
    _check(q, k, v, heads_s, dropout_p)
    precision = precision or os.environ.get("NEUROKIT_CC_PRECISION", "auto")
    if precision not in PRECISIONS:
        raise ValueError(f"precision={precision!r} (argument or NEUROKIT_CC_PRECISION); allowed: {PRECISIONS}")
    d = q.shape[-1]
    scale = 1.0 / math.sqrt(d) if scale is None else float(scale)
    if qk_int8:
        if dropout_p > 0 or (torch.is_grad_enabled() and (q.requires_grad or k.requires_grad or v.requires_grad)):
            raise ValueError("qk_int8=True is for inference: no dropout, no gradients (use torch.no_grad())")
        return _forward(q, k, v, int(heads_s), 0.0, scale, store_lse=False, qk_int8=True, precision=precision)[0]
    return _CrissCrossFunction.apply(q, k, v, int(heads_s), float(dropout_p), scale, precision)
