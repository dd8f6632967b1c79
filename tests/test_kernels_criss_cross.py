"""Fused Triton criss-cross attention against the PyTorch reference.

The kernel tests run on CUDA when present, and always on the CPU through Triton's interpreter: the
interpreter is chosen when triton is imported, and other test files may already have imported it in
this process, so :func:`test_kernels_under_triton_interpreter` re-runs this file in a fresh
``python -m pytest`` subprocess with ``TRITON_INTERPRET=1`` (shapes kept tiny: the interpreter is
~1000× slower than a GPU).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from neurokit.kernels import criss_cross_attention, criss_cross_attention_reference

REPO = Path(__file__).resolve().parents[1]
INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"
CUDA = torch.cuda.is_available() and not INTERPRET
DEVICE = "cpu" if INTERPRET else ("cuda" if CUDA else None)
needs_kernel = pytest.mark.skipif(
    DEVICE is None, reason="no CUDA: the kernel runs in the TRITON_INTERPRET=1 subprocess test"
)
needs_cuda = pytest.mark.skipif(not CUDA, reason="needs a CUDA GPU")
# the number of tests the interpreter subprocess must pass (guards against a silently empty run)
MIN_INTERPRETER_PASSES = 20


def make_qkv(B, C, N, H, d, dtype=torch.float32, device="cpu", seed=0, poison=True):
    """Leaf ``(B, C, N, 3, H, d)`` projection and strided q, k, v views of it.

    With ``poison`` the views lie inside a larger NaN-filled buffer (one more channel, patch and
    three more head-dim columns), so a kernel that reads a padded row, key or column returns NaN.
    """
    g = torch.Generator().manual_seed(seed)
    qkv = torch.randn(B, C, N, 3, H, d, generator=g).to(device=device, dtype=dtype).requires_grad_(True)
    if poison:
        buf = torch.full((B, C + 1, N + 1, 3, H, d + 3), float("nan"), dtype=dtype, device=device)
        buf[:, :C, :N, :, :, :d] = qkv
        view = buf[:, :C, :N, :, :, :d]
    else:
        view = qkv
    q, k, v = view.unbind(3)
    return qkv, (q, k, v)


def run_both(shape, heads_s, dtype=torch.float32, scale=None, seed=0):
    """Kernel output and q/k/v-gradients, and the fp32 reference's, for one random problem."""
    B, C, N, H, d = shape
    leaf, (q, k, v) = make_qkv(B, C, N, H, d, dtype, DEVICE, seed)
    out = criss_cross_attention(q, k, v, heads_s=heads_s, scale=scale, backend="triton")
    g = torch.randn(out.shape, generator=torch.Generator().manual_seed(seed + 1)).to(DEVICE)
    out.backward(g.to(dtype))
    leaf_ref = leaf.detach().float().requires_grad_(True)  # the same (rounded) inputs, in fp32
    qr, kr, vr = leaf_ref.unbind(3)
    ref = criss_cross_attention_reference(qr, kr, vr, heads_s=heads_s, scale=scale)
    ref.backward(g)
    return out, leaf.grad, ref, leaf_ref.grad


def assert_rel(actual, expected, rel, what="output"):
    """Max abs error ≤ rel × max |expected| (and finite)."""
    actual = actual.float()
    assert torch.isfinite(actual).all(), f"{what}: non-finite values, padded data leaked into the result"
    err = (actual - expected).abs().max().item()
    bound = rel * expected.abs().max().item()
    assert err <= bound, f"{what}: max abs error {err:.3e} > {bound:.3e}"
    return err


# -- forward and backward against the reference ------------------------------------------------------

SHAPES = [  # (B, C, N, H, d), heads_s — odd C and N, d = 25 padded to 32, uneven head splits
    ((1, 19, 3, 4, 25), 2),
    ((1, 22, 1, 4, 25), 2),
    ((1, 62, 2, 2, 25), 1),
    ((1, 3, 30, 2, 25), 1),
    ((1, 5, 4, 3, 8), 1),
    ((1, 5, 3, 5, 8), 2),  # 3 temporal heads in a block of 4: one padded head
    ((1, 4, 5, 2, 16), 0),
    ((1, 4, 5, 2, 16), 2),
]


@needs_kernel
@pytest.mark.parametrize("shape,heads_s", SHAPES, ids=[f"{s}-hs{h}" for s, h in SHAPES])
def test_fp32_forward_backward_match_reference(shape, heads_s):
    out, grad, ref, grad_ref = run_both(shape, heads_s)
    assert out.shape == shape and out.dtype == torch.float32
    assert_rel(out, ref, 1e-5)
    for i, name in enumerate("qkv"):
        assert_rel(grad[:, :, :, i], grad_ref[:, :, :, i], 1e-5, what=f"d{name}")


@needs_kernel
def test_custom_scale():
    out, grad, ref, grad_ref = run_both((1, 6, 4, 2, 25), 1, scale=0.37)
    assert_rel(out, ref, 1e-5)
    assert_rel(grad, grad_ref, 1e-5)


@needs_kernel
@pytest.mark.parametrize("dtype,rel", [(torch.float16, 3e-3), (torch.bfloat16, 2.5e-2)], ids=["fp16", "bf16"])
def test_half_precision_forward_backward(dtype, rel):
    out, grad, ref, grad_ref = run_both((1, 7, 5, 2, 25), 1, dtype=dtype)
    assert out.dtype == dtype and grad.dtype == dtype
    assert_rel(out, ref, rel)
    assert_rel(grad, grad_ref, 2 * rel)


# -- in-kernel dropout -------------------------------------------------------------------------------


def _one_hot_values(B, C, N, H, heads_s, d, device):
    """V whose rows are one-hot in the sequence position, so that O = dropped-out P (first L columns)."""
    v = torch.zeros(B, C, N, H, d, device=device)
    c = torch.arange(C, device=device)
    n = torch.arange(N, device=device)
    v[:, c, :, :heads_s, c] = 1.0
    v[:, :, n, heads_s:, n] = 1.0
    return v


def _explicit(q, k, v, heads_s, keep_s, keep_t, p):
    """Criss-cross attention with given keep masks, in plain PyTorch (for the dropout backward)."""
    scale = 1 / math.sqrt(q.shape[-1])
    qs, ks, vs = (t[:, :, :, :heads_s].permute(0, 2, 3, 1, 4) for t in (q, k, v))
    ps = torch.softmax(qs @ ks.transpose(-1, -2) * scale, -1) * keep_s / (1 - p)
    qt, kt, vt = (t[:, :, :, heads_s:].permute(0, 1, 3, 2, 4) for t in (q, k, v))
    pt = torch.softmax(qt @ kt.transpose(-1, -2) * scale, -1) * keep_t / (1 - p)
    return torch.cat([(ps @ vs).permute(0, 3, 1, 2, 4), (pt @ vt).permute(0, 1, 3, 2, 4)], dim=3)


@needs_kernel
def test_dropout_mask_scaling_determinism_and_backward():
    B, C, N, H, hs, d, p = 1, 5, 7, 2, 1, 16, 0.5
    g = torch.Generator().manual_seed(3)
    q = torch.randn(B, C, N, H, d, generator=g).to(DEVICE).requires_grad_(True)
    k = torch.randn(B, C, N, H, d, generator=g).to(DEVICE).requires_grad_(True)
    v = _one_hot_values(B, C, N, H, hs, d, DEVICE).requires_grad_(True)
    torch.manual_seed(11)
    out = criss_cross_attention(q, k, v, heads_s=hs, dropout_p=p, backend="triton")
    torch.manual_seed(11)
    again = criss_cross_attention(q, k, v, heads_s=hs, dropout_p=p, backend="triton")
    other = criss_cross_attention(q, k, v, heads_s=hs, dropout_p=p, backend="triton")
    assert torch.equal(out, again), "same torch seed must give the same mask"
    assert not torch.equal(out, other), "a new seed must give a new mask"
    # O row = P · keep / (1 - p) because V rows are one-hot
    p_s = out[:, :, :, :hs].permute(0, 2, 3, 1, 4)[..., :C].detach()  # (B, N, hs, C, C)
    p_t = out[:, :, :, hs:].permute(0, 1, 3, 2, 4)[..., :N].detach()  # (B, C, ht, N, N)
    keep_s, keep_t = (p_s != 0).float(), (p_t != 0).float()
    dropped = 1 - torch.cat([keep_s.flatten(), keep_t.flatten()]).mean().item()
    assert 0.4 < dropped < 0.6, f"dropped fraction {dropped:.3f} for p = {p}"
    expected = _explicit(q, k, v, hs, keep_s, keep_t, p)
    assert_rel(out, expected.detach(), 1e-5)
    grad = torch.randn(out.shape, generator=g).to(DEVICE)
    dq, dk, dv = torch.autograd.grad(out, (q, k, v), grad)
    eq, ek, ev = torch.autograd.grad(expected, (q, k, v), grad)
    assert_rel(dq, eq, 1e-5)
    assert_rel(dk, ek, 1e-5)
    assert_rel(dv, ev, 1e-5)


# -- SageAttention-style INT8 Q/K (inference) ---------------------------------------------------------


@needs_kernel
@pytest.mark.parametrize("k_offset", [0.0, 4.0], ids=["plain", "offset-keys"])
def test_int8_qk_inference_error_against_fp32(k_offset):
    from neurokit.kernels.triton_criss_cross import criss_cross_attention_triton

    g = torch.Generator().manual_seed(5)
    qkv = torch.randn(1, 19, 4, 3, 4, 25, generator=g)
    # a shared offset on K (as in real activations) would eat the INT8 range without K smoothing
    qkv[:, :, :, 1] += k_offset * torch.randn(4, 25, generator=g)
    q, k, v = qkv.to(DEVICE).unbind(3)
    with torch.no_grad():
        out = criss_cross_attention_triton(q, k, v, heads_s=2, qk_int8=True)
    ref = criss_cross_attention_reference(q, k, v, heads_s=2)
    err = assert_rel(out, ref, 2.5e-2)
    assert err > 0  # it is quantised: an exact match would mean the INT8 path did not run
    with pytest.raises(ValueError):
        criss_cross_attention_triton(q.requires_grad_(), k, v, heads_s=2, qk_int8=True)
    # a head dim of 16 still runs (the INT8 dot pads it to 32)
    q, k, v = qkv[..., :16].to(DEVICE).unbind(3)
    with torch.no_grad():
        out = criss_cross_attention_triton(q, k, v, heads_s=2, qk_int8=True)
    assert_rel(out, criss_cross_attention_reference(q, k, v, heads_s=2), 2.5e-2)


# -- dispatcher ---------------------------------------------------------------------------------------


@needs_kernel
def test_dispatcher_forces_triton_and_rejects_unsupported():
    _, (q, k, v) = make_qkv(1, 3, 2, 2, 8, device=DEVICE)
    out = criss_cross_attention(q, k, v, heads_s=1, backend="triton")
    assert type(out.grad_fn).__name__.startswith("_CrissCrossFunction")
    with pytest.raises(TypeError):
        criss_cross_attention(q.double(), k.double(), v.double(), heads_s=1, backend="triton")
    with pytest.raises(ValueError):
        criss_cross_attention(q, k, v, heads_s=3, backend="triton")
    with pytest.raises(ValueError):
        criss_cross_attention(q, k, v, heads_s=1, dropout_p=1.0, backend="triton")
    big = torch.zeros(1, 257, 1, 2, 8, device=DEVICE)
    with pytest.raises(ValueError):
        criss_cross_attention(big, big, big, heads_s=1, backend="triton")


def test_auto_backend_uses_reference_on_cpu():
    _, (q, k, v) = make_qkv(1, 3, 2, 2, 8)
    out = criss_cross_attention(q, k, v, heads_s=1)
    ref = criss_cross_attention_reference(q, k, v, heads_s=1)
    assert torch.equal(out, ref)
    with pytest.raises(ValueError):
        criss_cross_attention(q, k, v, heads_s=1, backend="cuda")


def test_batched_tile_compile_failure_falls_back_to_one_head_per_program(monkeypatch):
    from neurokit.kernels import triton_criss_cross as tcc

    monkeypatch.setattr(tcc, "_heads_cap", None)
    monkeypatch.setattr(tcc, "_warned", set())
    seen = []

    class FailsOnBatchedTiles:  # stands in for a kernel whose 3-D dots do not compile here
        def __getitem__(self, grid):
            def launch(*args, **meta):
                seen.append((grid, meta["HB_S"], meta["HB_T"], args[-3:]))
                if meta["HB_S"] > 1 or meta["HB_T"] > 1:
                    raise RuntimeError("PassManager::run failed")  # an MLIR lowering failure

            return launch

    q = torch.zeros(2, 19, 3, 8, 25)
    with pytest.warns(RuntimeWarning, match="one head per program"):
        tcc._launch(FailsOnBatchedTiles(), q, 4, "fwd", (), (q,), (0.5, 0, 0.0))
    assert [(g, hs, ht) for g, hs, ht, _ in seen] == [((2 * 3 + 2 * 19,), 4, 4), ((2 * 3 * 4 + 2 * 19 * 4,), 1, 1)]
    assert seen[-1][3] == (0.5, 0, 0.0)
    assert tcc._plan(q, 4, "bwd")[2]["HB_S"] == 1  # the cap sticks for later launches


needs_triton = pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="triton is not installed")


class _FailingKernel:
    """Stands in for a JIT kernel whose batched-head launches raise ``exc`` (one-head launches succeed)."""

    def __init__(self, exc):
        self.exc, self.calls = exc, []

    def __getitem__(self, grid):
        def launch(*args, **meta):
            self.calls.append((meta["HB_S"], meta["HB_T"]))
            if meta["HB_S"] > 1 or meta["HB_T"] > 1:
                raise self.exc

        return launch


@needs_triton
@pytest.mark.parametrize(
    "exc",
    [
        RuntimeError("CUDA error: an illegal memory access was encountered"),
        torch.cuda.OutOfMemoryError("CUDA out of memory"),
        ValueError("pointer argument cannot be accessed from Triton"),
        KeyboardInterrupt(),
    ],
    ids=["cuda-fault", "oom", "bad-argument", "interrupt"],
)
def test_fallback_does_not_swallow_errors_other_than_compile_failures(monkeypatch, exc):
    from neurokit.kernels import triton_criss_cross as tcc

    monkeypatch.setattr(tcc, "_heads_cap", None)
    kernel = _FailingKernel(exc)
    q = torch.zeros(2, 19, 3, 8, 25)
    with pytest.raises(type(exc)):
        tcc._launch(kernel, q, 4, "fwd", (), (q,), (0.5, 0, 0.0))
    assert kernel.calls == [(4, 4)], "no retry after a non-compile error"
    assert tcc._heads_cap is None


@needs_triton
def test_fallback_on_compile_failure_warns_once_with_the_reason(monkeypatch):
    from triton.runtime.errors import OutOfResources

    from neurokit.kernels import triton_criss_cross as tcc

    monkeypatch.setattr(tcc, "_heads_cap", None)
    monkeypatch.setattr(tcc, "_warned", set())
    kernel = _FailingKernel(OutOfResources(300000, 232448, "shared memory"))
    q = torch.zeros(2, 19, 3, 8, 25)
    with pytest.warns(RuntimeWarning, match=r"OutOfResources: .*shared memory.*one head per program") as rec:
        tcc._launch(kernel, q, 4, "fwd", (), (q,), (0.5, 0, 0.0))
    assert len(rec) == 1
    monkeypatch.setattr(tcc, "_heads_cap", None)  # a second failing launch: falls back again, no new warning
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tcc._launch(kernel, q, 4, "fwd", (), (q,), (0.5, 0, 0.0))
    assert kernel.calls == [(4, 4), (1, 1), (4, 4), (1, 1)]


@needs_triton
def test_plan_precision_and_sm90_head_blocking():
    """fp32 dots get an explicit precision (tf32x3 unless asked for the exact ieee mode); on sm_90 sequences of
    64 take one head per program (2-D dots, wgmma); register budgets shrink the head blocks of big tiles."""
    from neurokit.kernels import triton_criss_cross as tcc

    q32 = torch.empty(2, 64, 30, 8, 25)
    q16 = q32.to(torch.bfloat16)
    assert tcc._plan(q32, 4, "fwd")[2]["PREC"] == "tf32x3"
    assert tcc._plan(q32, 4, "fwd", precision="ieee")[2]["PREC"] == "ieee"
    assert tcc._plan(q16, 4, "fwd", precision="ieee")[2]["PREC"] == "tf32"  # 16-bit dots: native MMA
    with pytest.raises(ValueError, match="precision"):
        tcc._plan(q32, 4, "fwd", precision="fp64")

    def hb(q, which, arch):
        meta = tcc._plan(q, 4, which, arch=arch)[2]
        return meta["HB_S"], meta["HB_T"]

    assert hb(q16, "fwd", 80) == (2, 4)  # 2·64² and 4·32² score elements fit the forward budget
    assert hb(q16, "fwd", 90) == (1, 4)
    assert hb(q16, "bwd", 80) == (1, 2)
    assert hb(q32, "bwd", 90) == (1, 1)
    assert tcc._plan(q32, 4, "bwd", arch=80)[2]["num_warps"] == 8


@needs_kernel
@pytest.mark.parametrize("arch,dtype", [(90, torch.float32), (80, torch.bfloat16)], ids=["sm90-fp32", "sm80-bf16"])
def test_cbramod_heads_on_the_planned_tiles_of_each_arch(monkeypatch, arch, dtype):
    """Eight heads of 25 over 33 channels (BLOCK_C 64: one head per program on sm_90, two heads per program on
    sm_80 in bf16) and 2 patches (four temporal heads in one block), forward and backward, against the reference."""
    from neurokit.kernels import triton_criss_cross as tcc

    monkeypatch.setattr(tcc, "_target_arch", lambda q: arch)
    rel = 1e-5 if dtype == torch.float32 else 2.5e-2
    out, grad, ref, grad_ref = run_both((1, 33, 2, 8, 25), 4, dtype=dtype)
    assert_rel(out, ref, rel)
    assert_rel(grad, grad_ref, 2 * rel)


@needs_kernel
def test_exact_precision_mode_matches_reference():
    from neurokit.kernels.triton_criss_cross import criss_cross_attention_triton

    _, (q, k, v) = make_qkv(1, 5, 3, 2, 25, device=DEVICE)
    out = criss_cross_attention_triton(q, k, v, heads_s=1, precision="ieee")
    assert_rel(out, criss_cross_attention_reference(q, k, v, heads_s=1), 1e-5)
    with pytest.raises(ValueError, match="precision"):
        criss_cross_attention_triton(q, k, v, heads_s=1, precision="bf16")


@needs_triton
def test_auto_backend_on_cuda_says_once_why_it_falls_back(monkeypatch):
    """On CUDA, ``backend="auto"`` takes the PyTorch path for inputs the kernel does not take, with one
    warning per reason (not silently, and not once per layer call)."""
    from neurokit.kernels import criss_cross as cc

    class CudaLooking(torch.Tensor):  # only the dispatcher's ``is_cuda`` check sees a GPU tensor
        @property
        def is_cuda(self):
            return True

    monkeypatch.setattr(cc, "_fallbacks_warned", set())
    q = torch.zeros(1, 3, 2, 2, 8, dtype=torch.float64).as_subclass(CudaLooking)
    with pytest.warns(RuntimeWarning, match="PyTorch path on CUDA: q, k, v must share one dtype"):
        assert cc._resolve_backend("auto", q, q, q, 1, 0.0) == "torch"
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cc._resolve_backend("auto", q, q, q, 1, 0.0) == "torch"  # same reason: no second warning


@pytest.mark.skipif(INTERPRET or torch.cuda.is_available(), reason="checks the error without CUDA or interpreter")
def test_forced_triton_on_cpu_without_interpreter_raises():
    _, (q, k, v) = make_qkv(1, 3, 2, 2, 8)
    with pytest.raises((ValueError, RuntimeError)):
        criss_cross_attention(q, k, v, heads_s=1, backend="triton")


# -- CBraMod fixture on the kernel path -------------------------------------------------------------


def _cbramod_on_kernel(fixtures_root, monkeypatch, triton_layers):
    """CBraMod with the released weights; the listed layers use the kernel, the others the reference.
    Returns the model and a list that records each kernel call."""
    from neurokit.kernels import triton_criss_cross
    from neurokit.models.cbramod import CBraMod

    fx = torch.load(fixtures_root / "cbramod_reference_fixture.pt", map_location="cpu", weights_only=True)
    model = CBraMod(attn_backend="torch")
    model.load_state_dict(fx["state_dict"])
    model.eval().to(DEVICE)
    for i, layer in enumerate(model.encoder.layers):
        if triton_layers is None or i in triton_layers:
            layer.cfg = dataclasses.replace(layer.cfg, attn_backend="triton")
    calls = []
    real = triton_criss_cross.criss_cross_attention_triton

    def counting(*args, **kwargs):
        calls.append(args[0].shape)
        return real(*args, **kwargs)

    monkeypatch.setattr(triton_criss_cross, "criss_cross_attention_triton", counting)
    return model, fx["cases"], calls


@pytest.fixture
def exact_fp32_cuda():
    """TF32 off for cuDNN convolutions and matmuls: the fixture tolerance (1e-4) needs fp32 math."""
    prev = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    yield
    torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = prev


def _fixture_error(model, case):
    x = case["x"].to(DEVICE)
    mask = case.get("mask")
    with torch.no_grad():
        y = model(x, None if mask is None else mask.to(DEVICE))
    return (y.cpu() - case["y"]).abs().max().item()


@needs_kernel
@pytest.mark.parametrize(
    "case,layers",
    # all 12 layers on the kernel for the smallest case; the interpreter is too slow for more, so the
    # masked and long-sequence cases run the kernel in two layers (first and last) and the reference
    # elsewhere — still end to end against the fixture. On CUDA every case runs all layers.
    [("c22_n3", None), ("c19_n4_masked", (0, 11)), ("c6_n30", (0, 11))],
)
def test_cbramod_fixture_on_kernel_path(fixtures_root, monkeypatch, exact_fp32_cuda, case, layers):
    model, cases, calls = _cbramod_on_kernel(fixtures_root, monkeypatch, None if CUDA else layers)
    err = _fixture_error(model, cases[case])
    assert len(calls) == (12 if (CUDA or layers is None) else len(layers))
    assert err <= 1e-4, f"{case}: max abs error {err:.3e}"


@needs_cuda
def test_cbramod_fixture_all_cases_triton_and_torch_on_cuda(fixtures_root, monkeypatch, exact_fp32_cuda):
    model, cases, calls = _cbramod_on_kernel(fixtures_root, monkeypatch, None)
    for name, case in cases.items():
        assert _fixture_error(model, case) <= 1e-4, name
    assert len(calls) == 12 * len(cases)
    model.set_attn_backend("torch")
    for layer in model.encoder.layers:
        layer.cfg = model.config
    for name, case in cases.items():
        assert _fixture_error(model, case) <= 1e-4, name
    assert len(calls) == 12 * len(cases)  # the torch path did not call the kernel


# -- CUDA at CBraMod shapes ---------------------------------------------------------------------------


@needs_cuda
@pytest.mark.parametrize("C", [19, 62, 128])
@pytest.mark.parametrize("dtype,rel", [(torch.float32, 1e-5), (torch.bfloat16, 2.5e-2)], ids=["fp32", "bf16"])
def test_cuda_cbramod_shapes(C, dtype, rel):
    N = 64 if C == 128 else 30
    out, grad, ref, grad_ref = run_both((4, C, N, 8, 25), 4, dtype=dtype)
    assert_rel(out, ref, rel)
    assert_rel(grad, grad_ref, 2 * rel)


@needs_cuda
def test_cbramod_training_step_on_kernel_with_dropout():
    from neurokit.models.cbramod import CBraMod

    torch.manual_seed(0)
    model = CBraMod(n_layers=2, attn_backend="triton").cuda().train()
    x = torch.randn(2, 19, 4, 200, device="cuda") * 0.5
    model(x).pow(2).mean().backward()
    grads = [p.grad for p in model.parameters() if p.requires_grad]
    assert all(g is not None and torch.isfinite(g).all() for g in grads)


# -- the interpreter run ------------------------------------------------------------------------------


@pytest.mark.skipif(INTERPRET, reason="this is the interpreter run")
@pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="triton is not installed")
@pytest.mark.slow
def test_kernels_under_triton_interpreter():
    """This file again in fresh processes with ``TRITON_INTERPRET=1``: two shards run side by side (the
    interpreter is single-threaded), the CBraMod fixture tests in one and everything else in the other."""
    env = dict(os.environ, TRITON_INTERPRET="1", CUDA_VISIBLE_DEVICES="")
    env.pop("NEUROKIT_ATTENTION_BACKEND", None)
    shards = ["fixture_on_kernel_path", "not fixture_on_kernel_path"]
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "pytest", str(Path(__file__)), "-q", "-p", "no:cacheprovider", "-rfEs", "-k", shard],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for shard in shards
    ]
    passed = 0
    for shard, proc in zip(shards, procs):
        out, _ = proc.communicate(timeout=900)
        assert proc.returncode == 0, f"shard -k {shard!r}:\n{out[-6000:]}"
        found = re.search(r"(\d+) passed", out)
        passed += int(found.group(1)) if found else 0
    assert passed >= MIN_INTERPRETER_PASSES, f"only {passed} interpreter tests passed"
