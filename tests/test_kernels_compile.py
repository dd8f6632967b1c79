"""The fused criss-cross kernels compiled for sm_80 and sm_90 with no GPU (Triton's compiler and bundled ptxas).

Two layers:

* static checks of every launch CBraMod makes (pass × dtype × C × N × arch, from the kernel's own planner):
  ``tl.dot`` shapes, explicit precision, tile budgets, grid limits. Instant, no compile.
* compiles of a fixed set of those launches down to PTX and cubin, asserting on the artifacts: ptxas reports
  no register spills, tensor-core instructions are present (``mma.sync`` on sm_80, ``wgmma`` on sm_90 where
  Triton can use it: 2-D dots with M ≥ 64) and no scalar fp32 FMA dot, shared memory within the per-block
  limit. The set is the worst tile of each pass and dtype family on each arch, ~1 min on 2 cores.
  ``NEUROKIT_COMPILE_ALL=1`` also compiles every distinct specialisation (~120 per arch, tens of minutes on 2
  cores; not run in CI).

Each compile uses a fresh temporary Triton cache, so nothing is written outside tmp.
"""

from __future__ import annotations

import importlib.util
import os

import pytest

INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"
pytestmark = [
    pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="triton is not installed"),
    pytest.mark.skipif(INTERPRET, reason="the interpreter has no compiler (Triton kernels are interpreted)"),
]


def _compiler_or_skip():
    """The compile report module, or a skip saying why this Triton cannot compile for a GPU target here."""
    from neurokit.kernels import triton_compile as tc

    try:
        from triton.backends.compiler import GPUTarget
        from triton.backends.nvidia.compiler import get_ptxas

        from triton.compiler import make_backend

        make_backend(GPUTarget("cuda", 80, 32))
        if not os.access(get_ptxas(80).path, os.X_OK):
            pytest.skip(f"ptxas at {get_ptxas(80).path} is not executable: no cubin without a CUDA toolkit")
    except (ImportError, RuntimeError, AttributeError) as exc:
        pytest.skip(f"this Triton cannot compile for a CUDA target without a GPU: {type(exc).__name__}: {exc}")
    return tc


def test_every_cbramod_launch_meets_the_dot_and_grid_rules():
    """The static checks: all 180 (pass, dtype, C, N) launches on both archs."""
    from neurokit.kernels import triton_compile as tc

    specs = list(tc.cbramod_specialisations())
    assert len(specs) == len(tc.KINDS) * 3 * 5 * 3
    for arch in tc.ARCHS:
        for spec in specs:
            m = tc.launch_of(spec, arch).kwargs
            for block in ("BLOCK_C", "BLOCK_N", "BLOCK_D"):
                # tl.dot: M, N, K ≥ 16 and powers of two (K a multiple of 16 for 16-bit MMA, 32 for INT8)
                assert m[block] >= 16 and m[block] & (m[block] - 1) == 0, (spec, arch, m)
            assert m["BLOCK_D"] >= spec.d and m["BLOCK_C"] >= spec.C and m["BLOCK_N"] >= spec.N
            if spec.kind == "fwd_int8":
                assert m["BLOCK_D"] >= 32, (spec, m)
            # fp32 never reaches the dot without an explicit precision (Triton's default would be 1-pass TF32)
            assert m["PREC"] == ("tf32x3" if spec.dtype == "fp32" else "tf32"), (spec, m)
            assert m["num_warps"] in (2, 4, 8)
            if arch >= 90 and m["BLOCK_C"] >= 64:
                assert m["HB_S"] == 1, "sm_90: wgmma needs a 2-D dot (one head per program)"
            which = "bwd" if spec.kind.startswith("bwd") else "fwd"
            budget = tc.tcc.TILE_BUDGET[which] // (2 if spec.dtype == "fp32" else 1)
            for hb, block in ((m["HB_S"], m["BLOCK_C"]), (m["HB_T"], m["BLOCK_N"])):
                assert hb == 1 or hb * block * block <= budget, (spec, arch, m)


def test_grid_over_the_cuda_limit_is_refused():
    import torch

    from neurokit.kernels import triton_criss_cross as tcc

    q = torch.empty(2**26, 19, 30, 8, 25, device="meta", dtype=torch.bfloat16)  # 2²⁶·(30 + 19) programs > 2³¹ − 1
    with pytest.raises(ValueError, match="grid limit"):
        tcc._plan(q, 4, "fwd")
    assert tcc._plan(q[: 2**20], 4, "fwd")[0][0] == 2**20 * 49


def test_specialisations_dedupe_to_what_triton_compiles():
    """Grouping by Triton's own cache key: C = 19 and 22 share kernels (same blocks, same stride alignment)."""
    from neurokit.kernels import triton_compile as tc

    specs = [tc.Specialisation("fwd_eval", "bf16", C, N) for C in (19, 22) for N in (4, 30)]
    groups = tc.distinct_launches(specs, 90)
    assert sorted(len(members) for _, members in groups.values()) == [2, 2]


#: (pass, dtype, C, N, arch): the largest tiles of each pass on each arch, every dtype family at least once.
COMPILED = [
    ("fwd_train", "bf16", 64, 30, 80),  # spilled 2188 B with the former 16384-element forward budget
    ("fwd_eval", "bf16", 64, 30, 90),  # two heads per program (3-D dots) gave no wgmma
    ("bwd_train", "bf16", 64, 30, 90),
    ("fwd_eval", "fp32", 64, 4, 90),
    ("fwd_int8", "fp16", 22, 4, 80),
    ("bwd_train", "fp32", 19, 30, 80),
]
#: Spill bytes allowed (stores, loads), by (pass, dtype, arch); 0 elsewhere. The fp32 backward on sm_80 holds
#: tf32x3 high/low splits of five operand tiles: at L ≤ 32 ptxas spills a few dozen bytes; at L = 64 (C 62/64)
#: ptxas 12.9 falls back to 32 registers and spills ~20 KB (one head per program and 8 warps already).
SPILL_BOUND = {("bwd_train", "fp32", 80): 128}
#: At L = 64 (one head per program, 8 warps): the fp32 training forward on sm_80 spills 84 B (the 64×64 fp32
#: score tile with its Philox dropout state; 12 B without dropout), the 16-bit backward 32–56 B, the fp32 backward
#: 140 B on sm_90; on sm_80 it is the outlier.
SPILL_BOUND_L64 = {
    ("bwd_train", "fp32", 80): 32 * 1024,
    ("bwd_train", "fp32", 90): 256,
    ("fwd_train", "fp32", 80): 128,
    ("fwd_eval", "fp32", 80): 32,
    ("bwd_train", "bf16", 80): 64,
    ("bwd_train", "fp16", 80): 64,
}


@pytest.mark.slow
@pytest.mark.parametrize("kind,dtype,C,N,arch", COMPILED, ids=[f"{k}-{d}-C{c}N{n}-sm{a}" for k, d, c, n, a in COMPILED])
def test_compiled_kernel_has_no_spills_and_uses_tensor_cores(kind, dtype, C, N, arch):
    tc = _compiler_or_skip()
    report = tc.compile_launch(tc.launch_of(tc.Specialisation(kind, dtype, C, N), arch), arch)
    _assert_report(tc, report, kind, dtype, C)


def _assert_report(tc, report, kind, dtype, C):
    print(report.line())
    bounds = SPILL_BOUND_L64 if C > 32 else SPILL_BOUND
    bound = bounds.get((kind, dtype, report.arch), 0)
    assert max(report.spill_stores, report.spill_loads) <= bound, f"spills over {bound} B: {report.line()}"
    assert report.n_regs <= 255
    assert report.shared_bytes <= tc.SMEM_LIMIT[report.arch], report.line()
    assert report.mma_sync + report.wgmma > 0, f"no tensor-core MMA: {report.line()}"
    # an ieee fp32 dot lowers to thousands of fma.rn.f32 (5120 in the 64×30 forward); elementwise math a few dozen
    assert report.fma_f32 <= 256, f"scalar fp32 FMA dots: {report.line()}"
    if report.arch >= 90 and C >= 33:  # BLOCK_C = 64: one head per program, 2-D dots Triton lowers to wgmma
        assert report.wgmma > 0, report.line()
    if report.arch < 90:
        assert report.wgmma == 0
    if kind == "fwd_int8":
        assert ".s8.s8.s32" in report.ptx, "INT8 QKᵀ must be an s8·s8 → s32 MMA"


@pytest.mark.skipif(os.environ.get("NEUROKIT_COMPILE_ALL") != "1", reason="set NEUROKIT_COMPILE_ALL=1 (~30 min)")
@pytest.mark.parametrize("arch", [80, 90])
def test_every_distinct_specialisation_compiles_clean(arch):
    tc = _compiler_or_skip()
    failures = []
    for launch, members in tc.distinct_launches(tc.cbramod_specialisations(), arch).values():
        spec = members[0]
        report = tc.compile_launch(launch, arch)
        try:
            _assert_report(tc, report, spec.kind, spec.dtype, max(s.C for s in members))
        except AssertionError as exc:
            failures.append(f"{[(s.C, s.N) for s in members]}: {exc}")
    assert not failures, "\n".join(failures)
