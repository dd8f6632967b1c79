"""Benchmark: fused Triton criss-cross attention vs the PyTorch reference at CBraMod shapes.

Reports forward and forward+backward time, achieved GB/s and TFLOP/s for both paths and their ratio
in one run. Bytes and FLOPs are the algorithmic minimum of the op (the same for both paths, so the
ratios are speed ratios):

* bytes, forward: read Q, K, V, write O and the fp32 LSE; backward: read Q, K, V, O, dO, LSE, write
  dQ, dK, dV.
* FLOPs, forward: 4·d·L² per problem (QKᵀ and PV) = 2·D·L·(C+N) per sample (D = H·d, L = C·N tokens);
  backward 2.5× that (QKᵀ recomputed, dP, dV, dQ, dK).

On CUDA it also times the SageAttention-style INT8 Q/K inference option (forward only) and reports its
max error against an fp32 reference. On the CPU only the reference runs (the kernel needs CUDA). Usage::

    python benchmarks/kernels.py                       # B=64, C=19 and 62, N=30, 8 heads of 25, bf16
    python benchmarks/kernels.py --dtype fp32 --channels 19 --batch 8
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from neurokit.kernels.criss_cross import criss_cross_attention_reference

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def kernel_available(device: str) -> tuple[bool, str]:
    interpret = os.environ.get("TRITON_INTERPRET") == "1"
    if device != "cuda" and not interpret:
        return False, "the Triton kernel needs CUDA (reference path only)"
    try:
        from neurokit.kernels import triton_criss_cross
    except ImportError as exc:  # pragma: no cover
        return False, f"triton not importable: {exc}"
    if not triton_criss_cross.AVAILABLE:
        return False, "triton present but cannot run here"
    if device != "cuda":
        return True, "TRITON_INTERPRET=1: kernel emulated on the CPU, timings say nothing about a GPU"
    return True, ""


def timer(fn, device: str, iters: int, warmup: int) -> float:
    """Median seconds per call."""
    for _ in range(warmup):
        fn()
    times = []
    if device == "cuda":
        torch.cuda.synchronize()
        for _ in range(iters):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end) / 1e3)
    else:
        for _ in range(iters):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def op_cost(B, C, N, H, d, elt) -> dict:
    tokens = B * C * N
    tensor = tokens * H * d * elt
    lse = tokens * H * 4
    fwd_flops = 2 * (H * d) * (C * N) * (C + N) * B
    return {
        "fwd_bytes": 4 * tensor + lse,
        "fwdbwd_bytes": (4 * tensor + lse) + (8 * tensor + lse),
        "fwd_flops": fwd_flops,
        "fwdbwd_flops": 3.5 * fwd_flops,
    }


def bench_case(B, C, N, H, d, dtype, device, iters, warmup, run_kernel) -> list[dict]:
    g = torch.Generator().manual_seed(0)
    qkv = torch.randn(B, C, N, 3 * H * d, generator=g).to(device=device, dtype=dtype)
    qkv = qkv.view(B, C, N, 3, H, d).requires_grad_(True)
    q, k, v = qkv.unbind(3)
    dout = torch.randn(B, C, N, H, d, generator=g).to(device=device, dtype=dtype)
    hs = H // 2
    paths = {"torch": lambda: criss_cross_attention_reference(q, k, v, heads_s=hs)}
    if run_kernel:
        from neurokit.kernels.triton_criss_cross import criss_cross_attention_triton

        paths["triton"] = lambda: criss_cross_attention_triton(q, k, v, heads_s=hs)
    cost = op_cost(B, C, N, H, d, qkv.element_size())
    rows = []
    outputs = {}
    for name, fn in paths.items():
        with torch.no_grad():
            outputs[name] = fn().float()
            t_fwd = timer(fn, device, iters, warmup)

        def fwd_bwd(fn=fn):
            qkv.grad = None
            fn().backward(dout)

        t_fb = timer(fwd_bwd, device, iters, warmup)
        rows.append(
            dict(
                path=name,
                C=C,
                N=N,
                fwd_ms=t_fwd * 1e3,
                fwdbwd_ms=t_fb * 1e3,
                fwd_gbs=cost["fwd_bytes"] / t_fwd / 1e9,
                fwdbwd_gbs=cost["fwdbwd_bytes"] / t_fb / 1e9,
                fwd_tflops=cost["fwd_flops"] / t_fwd / 1e12,
                fwdbwd_tflops=cost["fwdbwd_flops"] / t_fb / 1e12,
            )
        )
    if "triton" in outputs:
        err = (outputs["triton"] - outputs["torch"]).abs().max().item()
        rows[-1]["max_abs_err_vs_torch"] = err
        # SageAttention-style INT8 Q/K (inference, forward only): time and error against fp32
        from neurokit.kernels.triton_criss_cross import criss_cross_attention_triton

        with torch.no_grad():
            int8 = lambda: criss_cross_attention_triton(q, k, v, heads_s=hs, qk_int8=True)  # noqa: E731
            t8 = timer(int8, device, iters, warmup)
            q32, k32, v32 = (t.float() for t in (q, k, v))
            exact = criss_cross_attention_reference(q32, k32, v32, heads_s=hs)
            err8 = (int8().float() - exact).abs().max().item()
            err16 = (outputs["triton"] - exact).abs().max().item()
        rows.append(
            dict(
                path="int8qk",
                C=C,
                N=N,
                fwd_ms=t8 * 1e3,
                fwd_gbs=cost["fwd_bytes"] / t8 / 1e9,
                fwd_tflops=cost["fwd_flops"] / t8 / 1e12,
                err_vs_fp32=err8,
                err_plain_vs_fp32=err16,
                ref_max=exact.abs().max().item(),
            )
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--channels", type=int, nargs="+", default=[19, 62])
    ap.add_argument("--patches", type=int, default=30)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--head-dim", type=int, default=25)
    ap.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--iters", type=int, default=None, help="timed calls (default 50 on CUDA, 3 on CPU)")
    args = ap.parse_args(argv)
    device = args.device
    iters = args.iters or (50 if device == "cuda" else 3)
    warmup = 10 if device == "cuda" else 1
    dtype = DTYPES[args.dtype]
    run_kernel, why = kernel_available(device)
    name = torch.cuda.get_device_name(0) if device == "cuda" else "CPU"
    print(
        f"criss-cross attention benchmark on {name}: B={args.batch}, N={args.patches}, "
        f"H={args.heads}×d={args.head_dim}, {args.dtype}, median of {iters}"
    )
    if why:
        print(f"NOTE: {why}")
    head = f"{'path':7} {'C':>4} {'N':>4} {'fwd ms':>9} {'GB/s':>8} {'TFLOP/s':>8} {'f+b ms':>9} {'GB/s':>8} {'TFLOP/s':>8}"
    print(head)
    for C in args.channels:
        rows = bench_case(
            args.batch, C, args.patches, args.heads, args.head_dim, dtype, device, iters, warmup, run_kernel
        )
        for r in rows:
            line = f"{r['path']:7} {r['C']:>4} {r['N']:>4} {r['fwd_ms']:>9.3f} {r['fwd_gbs']:>8.2f} {r['fwd_tflops']:>8.3f} "
            if "fwdbwd_ms" in r:
                line += f"{r['fwdbwd_ms']:>9.3f} {r['fwdbwd_gbs']:>8.2f} {r['fwdbwd_tflops']:>8.3f}"
            else:
                line += f"{'(forward only)':>27}"
            print(line)
        if len(rows) >= 2:
            ref, ker = rows[:2]
            print(
                f"  speedup triton/torch C={C}: forward {ref['fwd_ms'] / ker['fwd_ms']:.2f}×, "
                f"forward+backward {ref['fwdbwd_ms'] / ker['fwdbwd_ms']:.2f}×; "
                f"max |triton − torch| = {ker['max_abs_err_vs_torch']:.2e}"
            )
        if len(rows) == 3:
            r8 = rows[2]
            print(
                f"  INT8 Q/K C={C}: forward {ref['fwd_ms'] / r8['fwd_ms']:.2f}× torch, "
                f"{ker['fwd_ms'] / r8['fwd_ms']:.2f}× triton {args.dtype}; max error vs fp32 "
                f"{r8['err_vs_fp32']:.2e} (triton {args.dtype}: {r8['err_plain_vs_fp32']:.2e}; max |O| {r8['ref_max']:.2f})"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
