"""Ahead-of-time compile of the fused criss-cross kernels for a GPU target, with no GPU present.

Triton's compiler runs on any Linux machine: the frontend, LLVM and the bundled ``ptxas`` need no device.
This module builds the exact launch arguments :mod:`neurokit.kernels.triton_criss_cross` would pass
(through its own planner, with CPU tensors standing in for CUDA ones: only shapes, strides, dtypes and
16-byte alignment matter), specialises the kernel as the JIT would at that launch, and compiles it for
``sm_80`` / ``sm_90`` down to PTX and cubin. The report gives what the artifacts show: registers and
spills (``ptxas -v``), shared memory, and the tensor-core instructions in the PTX (``mma.sync`` on
sm_80, ``wgmma.mma_async`` on sm_90) against scalar ``fma.rn.f32``.

Used by ``tests/test_kernels_compile.py`` (CI) and ``benchmarks/gpu_check.sh`` (to compare with what a
real GPU reports). Not for use under ``TRITON_INTERPRET=1`` (the interpreter has no compiler).
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import os
import re
import tempfile
import time
from collections.abc import Iterator

import torch

from neurokit.kernels import triton_criss_cross as tcc
from neurokit.kernels.docs import fill_doc

#: CBraMod's attention geometry: d_model 200, 8 heads of 25 (head dim padded to 32), 4 spatial heads.
CBRAMOD_HEADS, CBRAMOD_HEAD_DIM, CBRAMOD_HEADS_S = 8, 25, 4
#: Channel and patch counts CBraMod meets (pretraining 19×30; downstream 1–64 channels, 1–30 patches).
CBRAMOD_CHANNELS = (1, 19, 22, 62, 64)
CBRAMOD_PATCHES = (1, 4, 30)
DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
#: Passes CBraMod launches: training forward (dropout, saves LSE), its backward, eval forward, INT8 eval.
KINDS = ("fwd_train", "bwd_train", "fwd_eval", "fwd_int8")
ARCHS = (80, 90)
#: Shared memory per block an sm_80 / sm_90 kernel may use (A100: 163 KiB, H100/H200: 227 KiB).
SMEM_LIMIT = {80: 163 * 1024, 90: 227 * 1024}


@dataclasses.dataclass(frozen=True)
class Specialisation:
    """One kernel launch of CBraMod: pass, dtype and the sequence lengths (batch size does not specialise).

    Attributes
    ----------
    kind : str
        The pass, one of :data:`KINDS`: ``"fwd_train"``, ``"bwd_train"``, ``"fwd_eval"``, ``"fwd_int8"``.
    dtype : str
        A key of :data:`DTYPES`: ``"fp32"``, ``"fp16"``, ``"bf16"``.
    C, N : int
        Channels and patches (the spatial and temporal sequence lengths).
    H, d, heads_s : int
        Heads, head width and spatial heads (CBraMod's 8, 25 and 4 by default).

    Examples
    --------
    >>> Specialisation("fwd_eval", "bf16", C=19, N=30).H
    8
    """

    kind: str
    dtype: str
    C: int
    N: int
    H: int = CBRAMOD_HEADS
    d: int = CBRAMOD_HEAD_DIM
    heads_s: int = CBRAMOD_HEADS_S


@dataclasses.dataclass
class Launch:
    """What ``_launch`` hands the kernel: the JIT function, positional arguments and keyword meta.

    Attributes
    ----------
    kernel : triton.JITFunction
        The forward or backward kernel.
    args : tuple
        Positional arguments: tensors (CPU stand-ins), strides, sizes and scalars.
    kwargs : dict
        Compile-time flags and the planned block sizes (``HB_S``, ``BLOCK_C``…, ``num_warps``).
    """

    kernel: object
    args: tuple
    kwargs: dict

    def key(self) -> tuple:
        """Triton's own cache key of this launch: the kernel, the JIT's specialisation of every argument
        (dtypes, constexprs, integers == 1 or divisible by 16, 16-byte aligned pointers) and the options."""
        from triton.backends.compiler import GPUTarget
        from triton.compiler import make_backend
        from triton.runtime.jit import create_function_from_signature

        jit = self.kernel
        backend = make_backend(GPUTarget("cuda", 80, 32))
        binder = create_function_from_signature(jit.signature, jit.params, backend)  # type: ignore[attr-defined]
        _, spec, options = binder(*self.args, **self.kwargs)
        return (jit.__name__, str(spec), str(options))  # type: ignore[attr-defined]


@dataclasses.dataclass
class CompileReport:
    """What the compiled artifacts of one specialisation show.

    Attributes
    ----------
    name : str
        The kernel's name.
    arch : int
        Target compute capability (80, 90).
    meta : dict
        Block sizes and precision the planner chose.
    n_regs, spill_stores, spill_loads, stack_bytes : int
        Registers per thread, bytes spilled to and reloaded from local memory, stack frame bytes (``ptxas -v``).
    shared_bytes : int
        Shared memory per block, in bytes.
    num_warps : int
        Warps per program.
    mma_sync, wgmma, fma_f32 : int
        Counts of tensor-core (``mma.sync``, ``wgmma.mma_async``) and scalar ``fma.rn.f32`` instructions in the PTX.
    seconds : float
        Compile time.
    ptxas_log, ptx : str
        The ``ptxas -v`` log and the PTX text (not shown in the repr).
    """

    name: str
    arch: int
    meta: dict
    n_regs: int
    spill_stores: int
    spill_loads: int
    stack_bytes: int
    shared_bytes: int
    num_warps: int
    mma_sync: int
    wgmma: int
    fma_f32: int
    seconds: float
    ptxas_log: str = dataclasses.field(repr=False, default="")
    ptx: str = dataclasses.field(repr=False, default="")

    def line(self) -> str:
        m = self.meta
        blocks = f"HB {m['HB_S']}/{m['HB_T']} L {m['BLOCK_C']}/{m['BLOCK_N']} D {m['BLOCK_D']} {m.get('PREC', '')}"
        return (
            f"sm_{self.arch} {self.name:28} {blocks:34} warps {self.num_warps} regs {self.n_regs:3} "
            f"spill st/ld {self.spill_stores}/{self.spill_loads} B smem {self.shared_bytes // 1024} KiB "
            f"mma.sync {self.mma_sync} wgmma {self.wgmma} fma {self.fma_f32} ({self.seconds:.1f} s)"
        )


def cbramod_specialisations() -> Iterator[Specialisation]:
    """Every (pass, dtype, C, N) CBraMod launches the kernel with.

    Returns
    -------
    iterator of Specialisation
        :data:`KINDS` × :data:`DTYPES` × :data:`CBRAMOD_CHANNELS` × :data:`CBRAMOD_PATCHES`, in that nesting.

    Examples
    --------
    >>> len(list(cbramod_specialisations()))
    180
    """
    for kind in KINDS:
        for dtype in DTYPES:
            for C in CBRAMOD_CHANNELS:
                for N in CBRAMOD_PATCHES:
                    yield Specialisation(kind, dtype, C, N)


class _Recorder:
    """Stands in for a JIT kernel in ``_launch``: records the launch instead of running it."""

    def __init__(self, kernel) -> None:
        self.kernel = kernel
        self.launches: list[Launch] = []

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            self.launches.append(Launch(self.kernel, args, kwargs))

        return launch


@fill_doc
def launch_of(spec: Specialisation, arch: int, batch: int = 2) -> Launch:
    """The kernel launch ``triton_criss_cross`` makes for ``spec`` on an ``sm_<arch>`` GPU, recorded instead of run
    (CPU stand-in tensors, never read).

    Parameters
    ----------
    %(spec)s
    %(arch)s
    batch : int
        Batch size of the stand-in tensors (it does not change what is compiled).

    Returns
    -------
    Launch

    Raises
    ------
    AttributeError
        Triton is not installed (the module has no kernels to record).

    Examples
    --------
    >>> launch_of(Specialisation("fwd_eval", "fp16", 19, 30), 90).kwargs["QK_INT8"]  # doctest: +SKIP
    False
    """
    B, C, N, H, d = batch, spec.C, spec.N, spec.H, spec.d
    dt = DTYPES[spec.dtype]
    qkv = torch.empty(B, C, N, 3, H, d, dtype=dt)  # the fused projection CBraMod reads q, k, v from
    q, k, v = qkv.unbind(3)
    o = torch.empty(B, C, N, H, d, dtype=dt)
    lse = torch.empty(B, C, N, H, dtype=torch.float32)
    train = spec.kind.endswith("train")
    p = 0.1 if train else 0.0
    if spec.kind == "bwd_train":
        rec = _Recorder(tcc.backward_kernel)
        do, dq = torch.empty_like(o), torch.empty_like(o)
        tcc.launch_pass(
            rec,
            q,
            spec.heads_s,
            "bwd",
            (q, k, v, o, do, lse, dq, dq, dq),
            (q, k, v, o, do, lse, dq),
            (0.2, 1, p),
            arch=arch,
            HAS_DROPOUT=True,
        )
    else:
        rec = _Recorder(tcc.forward_kernel)
        int8 = spec.kind == "fwd_int8"
        tcc.launch_pass(
            rec,
            q,
            spec.heads_s,
            "fwd",
            (q, k, v, o, lse),
            (q, k, v, o, lse),
            (0.3, 1, p),
            qk_int8=int8,
            arch=arch,
            HAS_DROPOUT=train,
            QK_INT8=int8,
            STORE_LSE=train,
        )
    (launch,) = rec.launches
    return launch


def distinct_launches(specs, arch: int) -> dict[tuple, tuple[Launch, list[Specialisation]]]:
    """Group specialisations by what Triton would compile for ``sm_<arch>`` (see :meth:`Launch.key`).

    Parameters
    ----------
    specs : iterable of Specialisation
        E.g. :func:`cbramod_specialisations`.
    arch : int
        Compute capability of the target GPU (80 or 90).

    Returns
    -------
    dict
        Triton's cache key → ``(launch, the specialisations that share it)``: one compile per entry.

    Examples
    --------
    >>> groups = distinct_launches(cbramod_specialisations(), 80)  # doctest: +SKIP
    >>> sum(len(specs) for _, specs in groups.values())  # doctest: +SKIP
    180
    """
    groups: dict[tuple, tuple[Launch, list[Specialisation]]] = {}
    for spec in specs:
        launch = launch_of(spec, arch)
        groups.setdefault(launch.key(), (launch, []))[1].append(spec)
    return groups


_PTXAS = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_REGS = re.compile(r"Used (\d+) registers")


def compile_launch(launch: Launch, arch: int) -> CompileReport:
    """Compile one launch for ``sm_<arch>`` to PTX and cubin here (no GPU) and read its artifacts.

    A fresh cache directory per call makes ptxas run every time (its ``-v`` log is the only source of spill
    counts without a device); nothing is cached outside it.

    Parameters
    ----------
    launch : Launch
        From :func:`launch_of`.
    arch : int
        Compute capability of the target GPU (80 or 90).

    Returns
    -------
    CompileReport

    Raises
    ------
    triton.compiler.errors.CompilationError, RuntimeError
        Whatever Triton raises when the kernel does not compile (``RuntimeError`` from ptxas).

    Examples
    --------
    >>> spec = Specialisation("fwd_eval", "bf16", 19, 30)
    >>> print(compile_launch(launch_of(spec, 90), 90).line())  # doctest: +SKIP
    sm_90 _cc_fwd_kernel ...
    """
    import triton
    from triton import knobs
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource, make_backend
    from triton.runtime.jit import create_function_from_signature

    jit = launch.kernel
    target = GPUTarget("cuda", arch, 32)
    backend = make_backend(target)
    binder = create_function_from_signature(jit.signature, jit.params, backend)  # type: ignore[attr-defined]
    bound, spec, opts = binder(*launch.args, **launch.kwargs)
    options, signature, constexprs, attrs = jit._pack_args(backend, launch.kwargs, bound, spec, opts)  # type: ignore[attr-defined]
    log = io.StringIO()
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="neurokit-triton-") as cache:
        env_before = os.environ.get("TRITON_CACHE_DIR")
        os.environ["TRITON_CACHE_DIR"] = cache
        try:
            with knobs.nvidia.scope(), contextlib.redirect_stdout(log):
                knobs.nvidia.dump_ptxas_log = True
                kernel = triton.compile(
                    ASTSource(jit, signature, constexprs, attrs), target=target, options=options.__dict__
                )
        finally:
            if env_before is None:
                os.environ.pop("TRITON_CACHE_DIR", None)
            else:
                os.environ["TRITON_CACHE_DIR"] = env_before
    seconds = time.perf_counter() - t0
    text = log.getvalue()
    spills = _PTXAS.search(text)
    regs = _REGS.search(text)
    if spills is None or regs is None:
        raise RuntimeError(f"no ptxas -v figures in the compile log of {jit.__name__}:\n{text[-2000:]}")  # type: ignore[attr-defined]
    ptx = kernel.asm["ptx"]
    meta = {k: v for k, v in launch.kwargs.items()}
    return CompileReport(
        name=_describe(launch),
        arch=arch,
        meta=meta,
        n_regs=int(regs.group(1)),
        spill_stores=int(spills.group(2)),
        spill_loads=int(spills.group(3)),
        stack_bytes=int(spills.group(1)),
        shared_bytes=int(kernel.metadata.shared),
        num_warps=int(kernel.metadata.num_warps),
        mma_sync=len(re.findall(r"\bmma\.sync\.", ptx)),
        wgmma=len(re.findall(r"\bwgmma\.mma_async\.", ptx)),
        fma_f32=len(re.findall(r"\bfma\.rn\.f32\b", ptx)),
        seconds=seconds,
        ptxas_log=text,
        ptx=ptx,
    )


def _describe(launch: Launch) -> str:
    kw = launch.kwargs
    name = "bwd" if "bwd" in launch.kernel.__name__ else ("fwd_int8" if kw.get("QK_INT8") else "fwd")  # type: ignore[attr-defined]
    dtype = next(a.dtype for a in launch.args if isinstance(a, torch.Tensor))
    flags = ("+drop" if kw.get("HAS_DROPOUT") else "") + ("+lse" if kw.get("STORE_LSE") else "")
    return f"{name}{flags} {str(dtype).removeprefix('torch.')}"
