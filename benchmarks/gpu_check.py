"""One shape of the GPU check (``benchmarks/gpu_check.sh`` runs each shape in its own process with a time limit).

Needs only torch and triton: it imports ``neurokit.kernels`` (torch-only modules) and ``benchmarks/kernels.py``
from the checkout, never the data or model layers (no mne, nibabel, h5py, open_clip). Prints one ``key=value``
line per measurement, so a crash or time-out part-way still leaves the lines before it:

* ``fwd`` / ``fwdbwd``: time of the Triton kernel and of the PyTorch reference on each SDPA backend (math,
  efficient, flash; ``n/a`` with the reason where a backend does not take head_dim 25), the speed ratio, the
  max error of each against the fp32 reference (math backend on the same rounded inputs), peak memory above
  the inputs, and the achieved HBM bandwidth (algorithmic bytes / time) as a fraction of ``--peak-tbs``;
* ``int8``: the INT8 Q/K inference path's time and max error against fp32;
* ``compiled``: registers and spills the driver reports for each kernel this process compiled (the figures
  ``tests/test_kernels_compile.py`` predicts from ptxas without a GPU);
* ``model`` (with ``--model-step``): a whole CBraMod training step (forward, masked MSE, backward, AdamW) and
  an eval forward, per attention backend (``triton`` and ``torch``), in ms and windows/s, under bf16 autocast
  when ``--dtype bf16``.

``--dry-run`` (with ``TRITON_INTERPRET=1``) runs the same code on CPU tensors at the given tiny shape.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout, not an installed copy
sys.path.insert(0, str(Path(__file__).resolve().parent))

from kernels import DTYPES, op_cost, timer  # noqa: E402  (benchmarks/kernels.py)

from neurokit.kernels.criss_cross import criss_cross_attention_reference  # noqa: E402
from neurokit.kernels.triton_criss_cross import criss_cross_attention_triton  # noqa: E402


def emit(**fields) -> None:
    print(" ".join(f"{k}={_fmt(v)}" for k, v in fields.items()), flush=True)


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v).replace(" ", "_")


def _backends():
    """SDPA backends to compare with, as (name, context manager factory)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    return {
        "math": lambda: sdpa_kernel(SDPBackend.MATH),
        "efficient": lambda: sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION),
        "flash": lambda: sdpa_kernel(SDPBackend.FLASH_ATTENTION),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--channels", type=int, required=True)
    ap.add_argument("--patches", type=int, required=True)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--head-dim", type=int, default=25)
    ap.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--peak-tbs", type=float, default=4.8, help="HBM peak in TB/s (H200: 4.8)")
    ap.add_argument("--dry-run", action="store_true", help="CPU tensors under TRITON_INTERPRET=1, one call each")
    ap.add_argument("--compile-only", action="store_true", help="run each kernel variant once (fills Triton's cache)")
    ap.add_argument("--model-step", action="store_true", help="time whole CBraMod training steps per backend")
    ap.add_argument("--layers", type=int, default=12, help="CBraMod layers for --model-step")
    args = ap.parse_args(argv)
    if args.dry_run:
        if os.environ.get("TRITON_INTERPRET") != "1":
            ap.error("--dry-run needs TRITON_INTERPRET=1 in the environment (set before triton is imported)")
        device, iters, warmup, backends = "cpu", 1, 0, ["math"]
    else:
        if not torch.cuda.is_available():
            ap.error("no CUDA device (use --dry-run with TRITON_INTERPRET=1 to rehearse)")
        device, iters, warmup, backends = "cuda", args.iters, 3, list(_backends())
    B, C, N, H, d = args.batch, args.channels, args.patches, args.heads, args.head_dim
    dtype = DTYPES[args.dtype]
    hs = H // 2
    tag = dict(B=B, C=C, N=N, dtype=args.dtype)
    if args.compile_only:
        return _compile_only(B, C, N, H, d, dtype, device, tag)
    if args.model_step:
        return _model_step(B, C, N, args.layers, dtype, device, tag, iters, warmup)
    g = torch.Generator().manual_seed(0)
    qkv32 = torch.randn(B, C, N, 3, H, d, generator=g)
    qkv = qkv32.to(device=device, dtype=dtype).requires_grad_(True)
    q, k, v = qkv.unbind(3)
    dout = torch.randn(B, C, N, H, d, generator=g).to(device=device, dtype=dtype)
    # the oracle: fp32 reference (math backend) on the same rounded inputs
    exact_in = qkv.detach().float().requires_grad_(True)
    qe, ke, ve = exact_in.unbind(3)
    ctx = _backends()["math"] if device == "cuda" else None
    with ctx() if ctx else _null():
        exact = criss_cross_attention_reference(qe, ke, ve, heads_s=hs)
        exact.backward(dout.float())
    exact_grad = exact_in.grad
    cost = op_cost(B, C, N, H, d, qkv.element_size())
    peak_bytes = args.peak_tbs * 1e12

    paths = {"triton": (lambda: criss_cross_attention_triton(q, k, v, heads_s=hs), None)}
    for name in backends:
        paths[f"sdpa_{name}"] = (lambda: criss_cross_attention_reference(q, k, v, heads_s=hs), name)
    times: dict[str, dict[str, float]] = {"fwd": {}, "fwdbwd": {}}
    for name, (fn, backend) in paths.items():
        manager = _backends()[backend] if (backend and device == "cuda") else None
        try:
            with manager() if manager else _null():
                with torch.no_grad():
                    out = fn()
                    err = (out.float() - exact).abs().max().item()
                    t_fwd = timer(fn, device, iters, warmup)

                def fwd_bwd(fn=fn):
                    qkv.grad = None
                    fn().backward(dout)

                fwd_bwd()
                gerr = (qkv.grad.float() - exact_grad).abs().max().item()
                mem = _peak_memory(fwd_bwd, device)
                t_fb = timer(fwd_bwd, device, iters, warmup)
        except (RuntimeError, NotImplementedError) as exc:  # e.g. "No available kernel" for flash at d = 25
            emit(**tag, path=name, status="n/a", reason=str(exc).splitlines()[0][:120])
            continue
        times["fwd"][name], times["fwdbwd"][name] = t_fwd, t_fb
        emit(
            **tag,
            path=name,
            fwd_ms=t_fwd * 1e3,
            fwd_hbm=cost["fwd_bytes"] / t_fwd / peak_bytes,
            fwd_err=err,
            fwdbwd_ms=t_fb * 1e3,
            fwdbwd_hbm=cost["fwdbwd_bytes"] / t_fb / peak_bytes,
            grad_err=gerr,
            peak_mib=mem / 2**20,
            ref_max=exact.abs().max().item(),
        )
    for which, t in times.items():
        if "triton" in t:
            ratios = {f"vs_{n}": t[n] / t["triton"] for n in t if n != "triton"}
            emit(**tag, speedup=which, **ratios)
    with torch.no_grad():
        try:
            int8 = lambda: criss_cross_attention_triton(q, k, v, heads_s=hs, qk_int8=True)  # noqa: E731
            err8 = (int8().float() - exact).abs().max().item()
            t8 = timer(int8, device, iters, warmup)
            emit(
                **tag,
                path="int8qk",
                fwd_ms=t8 * 1e3,
                fwd_err=err8,
                vs_triton=times["fwd"].get("triton", float("nan")) / t8,
                fwd_hbm=cost["fwd_bytes"] / t8 / peak_bytes,
            )
        except RuntimeError as exc:
            emit(**tag, path="int8qk", status="failed", reason=str(exc).splitlines()[0][:120])
    if device == "cuda":
        _report_compiled(tag)
    return 0


def _compile_only(B, C, N, H, d, dtype, device, tag) -> int:
    """Every kernel variant CBraMod runs at this shape, once: eval forward, INT8 forward, training forward
    (LSE, dropout) and its backward."""
    qkv = torch.randn(B, C, N, 3, H, d, device=device).to(dtype).requires_grad_(True)
    q, k, v = qkv.unbind(3)
    t0 = time.perf_counter()
    with torch.no_grad():
        criss_cross_attention_triton(q, k, v, heads_s=H // 2)
        criss_cross_attention_triton(q, k, v, heads_s=H // 2, qk_int8=True)
    criss_cross_attention_triton(q, k, v, heads_s=H // 2).sum().backward()
    criss_cross_attention_triton(q, k, v, heads_s=H // 2, dropout_p=0.1).sum().backward()
    if device == "cuda":
        torch.cuda.synchronize()
    emit(**tag, compiled="all", seconds=time.perf_counter() - t0)
    return 0


def _model_step(B, C, N, layers, dtype, device, tag, iters, warmup) -> int:
    """CBraMod (d_model 200, 8 heads) training step and eval forward with each attention backend."""
    from neurokit.models.cbramod import CBraMod

    g = torch.Generator().manual_seed(0)
    x = torch.randn(B, C, N, 200, generator=g).to(device)
    mask = torch.rand(B, C, N, generator=g).lt(0.5).to(device)
    autocast = torch.autocast(device, dtype=dtype) if dtype != torch.float32 else _null()
    times = {}
    for backend in ("triton", "torch"):
        torch.manual_seed(0)
        model = CBraMod(n_layers=layers, attn_backend=backend).to(device)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

        def step(model=model, opt=opt):
            with autocast:
                out = model(x.masked_fill(mask[..., None], 0.0))
                loss = (out.float() - x)[mask].pow(2).mean()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            return loss

        def infer(model=model):
            with torch.no_grad(), autocast:
                return model(x)

        try:
            model.eval()  # the masked loss before training, dropout off: equal for every backend
            with torch.no_grad(), autocast:
                loss0 = float((model(x.masked_fill(mask[..., None], 0.0)).float() - x)[mask].pow(2).mean())
            model.train()
            t_step = timer(step, device, iters, warmup)
            model.eval()
            t_eval = timer(infer, device, iters, warmup)
        except (RuntimeError, NotImplementedError) as exc:
            emit(**tag, model=backend, status="failed", reason=str(exc).splitlines()[0][:120])
            continue
        times[backend] = t_step
        emit(
            **tag,
            model=backend,
            layers=layers,
            step_ms=t_step * 1e3,
            train_windows_s=B / t_step,
            eval_ms=t_eval * 1e3,
            eval_windows_s=B / t_eval,
            eval_loss=loss0,
        )
    if len(times) == 2:
        emit(**tag, model="speedup", step_torch_over_triton=times["torch"] / times["triton"])
    return 0


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _peak_memory(fn, device: str) -> int:
    if device != "cuda":
        return 0
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    fn()
    torch.cuda.synchronize()
    return torch.cuda.max_memory_allocated() - base


def _report_compiled(tag: dict) -> None:
    """Registers and spills of the kernels compiled in this process, as the driver loaded them."""
    from neurokit.kernels import triton_criss_cross as tcc

    for jit in (tcc.forward_kernel, tcc.backward_kernel):
        for cache in getattr(jit, "device_caches", {}).values():
            for kernel in cache[0].values():
                try:
                    kernel._init_handles()
                    meta = kernel.metadata
                    emit(
                        **tag,
                        compiled=jit.__name__,
                        n_regs=kernel.n_regs,
                        n_spills=kernel.n_spills,
                        shared=meta.shared,
                        num_warps=meta.num_warps,
                    )
                except (AttributeError, RuntimeError) as exc:
                    emit(**tag, compiled=jit.__name__, status="unknown", reason=str(exc)[:80])


if __name__ == "__main__":
    t0 = time.perf_counter()
    rc = main()
    print(f"# done in {time.perf_counter() - t0:.1f} s", flush=True)
    raise SystemExit(rc)
