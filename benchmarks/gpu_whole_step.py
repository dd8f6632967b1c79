"""One whole-training-step configuration of the GPU check, fed from a patch store (``gpu_check.sh`` runs each
configuration in its own process under ``timeout``).

Two models, both read from the same patch store through :class:`neurokit.data.dataset.PatchDataset` and a torch
``DataLoader`` (shuffled, ``--num-workers`` workers, pinned memory on CUDA), both under the same autocast:

* ``--model release``: the release's structure (wjq-learning/CBraMod: two ``nn.MultiheadAttention`` on permuted
  copies per layer, ``nn.Dropout``, the release's patch embedding; ``benchmarks/eeg_pipeline.py``'s
  :func:`release_structure`) and the release's step: a ``long`` Bernoulli mask, ``y[mask == 1]`` against
  ``x[mask == 1]``, AdamW (lr 5e-4, wd 0.05), gradient clip 1.0, cosine schedule, ``loss.cpu()`` every step;
* ``--model neurokit``: :class:`neurokit.models.CBraMod` and the step as ``neurokit.training.Trainer`` runs a
  CBraMod pretraining (``non_blocking`` copy, :func:`~neurokit.training.objectives.masked_patch_loss` with a
  device generator seeded per step, :func:`~neurokit.training.optim.optimizer_step` with clip 1.0 and the
  cosine schedule of :func:`~neurokit.training.optim.build_optimizer`, ``float(loss)`` every step); optionally
  under ``torch.compile`` (``--compile``) and CUDA graphs (``--cudagraphs``: forward and backward captured with
  ``torch.cuda.make_graphed_callables``, or ``mode="reduce-overhead"`` together with ``--compile``).

Prints one ``whole_step`` line of ``key=value`` fields:

* ``windows_s``: windows per second over the timed steps, end to end (data, copy, step, the per-step sync);
* ``step_ms`` / ``compute_ms``: wall time per step, and the same less the time blocked in the loader's
  ``next()``; ``data_wait_frac``: that blocked time / the total (0: the GPU never waited on data);
* ``gflop_step``: model FLOPs of one step (forward + backward, counted by ``torch.utils.flop_counter`` on the
  model's plain-PyTorch path at a small batch and scaled: the same figure for both models, not the zero blocks
  of the fused projection); ``peak_frac`` / ``peak_frac_compute``: FLOPs per second over ``--peak-tflops``
  (default 989, H100/H200 dense bf16), end to end and without the data wait;
* ``peak_mem_gib``, ``loss`` (the last step's), ``status=failed reason=…`` when the step cannot run.

``--write-store PATH`` writes the synthetic store first (``--windows`` windows of ``--channels × --patches ×
200``). ``--dry-run`` runs on the CPU at whatever tiny shape is given. Without h5py (PatchStore needs it) every
call prints ``status=skipped reason=…`` and exits 0.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout, not an installed copy
sys.path.insert(0, str(Path(__file__).resolve().parent))

PATCH = 200  # samples per patch (1 s at 200 Hz)
DTYPES = {"bf16": "bfloat16", "fp32": "float32"}  # torch is imported after the store is written (no torch there)


def emit(**fields) -> None:
    print("whole_step " + " ".join(f"{k}={_fmt(v)}" for k, v in fields.items()), flush=True)


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v).replace(" ", "_")


def write_store(path: Path, windows: int, C: int, N: int, block: int = 256) -> None:
    """A synthetic EEG store of ``windows`` windows ``(C, N, 200)`` in 100 µV units: one random block written
    again and again, rolled (the bytes read per window are what matter here, not their values)."""
    import numpy as np

    from neurokit.store.patch_store import PatchStoreWriter

    rng = np.random.default_rng(0)
    base = rng.standard_normal((min(block, windows), C, N, PATCH), dtype=np.float32) * np.float32(0.3)
    attrs = dict(modality="eeg", card="gpu_check", ch_names=[f"E{i}" for i in range(C)], sfreq=200.0)
    attrs["label_names"] = ["none"]
    t0 = time.perf_counter()
    with PatchStoreWriter(path, (C, N, PATCH), attrs=attrs, overwrite=True) as w:
        done = 0
        while done < windows:
            k = min(len(base), windows - done)
            x = np.roll(base[:k], done % 7, axis=-1)
            w.append(x, np.zeros(k, dtype=np.int64), onsets=np.arange(done, done + k) * 30.0,
                     subject=f"S{done // 512:03d}", session="", run="R01")  # fmt: skip
            done += k
    seconds = time.perf_counter() - t0
    gib = windows * C * N * PATCH * 4 / 2**30
    emit(store="written", windows=windows, C=C, N=N, gib=gib, seconds=seconds, gib_s=gib / max(seconds, 1e-9))


def model_flops_per_window(C: int, N: int, layers: int, device: str, autocast, b: int = 2) -> float:
    """FLOPs of one masked-patch training step (forward + backward) per window: CBraMod on its plain-PyTorch
    attention path (the model's arithmetic; the release's structure computes the same), counted at batch ``b``."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from neurokit.models import CBraMod
    from neurokit.training.objectives import masked_patch_loss

    torch.manual_seed(0)
    twin = CBraMod(n_layers=layers, attn_backend="torch").to(device).train()
    x = torch.randn(b, C, N, PATCH, device=device)
    with FlopCounterMode(display=False) as counter:
        with autocast():
            loss, _ = masked_patch_loss(twin, x)
        loss.backward()
    return counter.get_total_flops() / b


def _graph_wrappers():
    """The two modules around a model captured by ``torch.cuda.make_graphed_callables``."""
    import torch.nn as nn

    class _Positional(nn.Module):
        """``model(x, mask)`` with both positional: what ``make_graphed_callables`` captures."""

        def __init__(self, model: nn.Module) -> None:
            super().__init__()
            self.module = model

        def forward(self, x, mask):
            return self.module(x, mask=mask)

    class _Graphed(nn.Module):
        """The graphed forward under the model's calling convention; ``module`` is the plain model (what
        :func:`~neurokit.training.objectives.masked_patch_loss` looks up for its target)."""

        def __init__(self, graphed: nn.Module, model: nn.Module) -> None:
            super().__init__()
            self.graphed, self.module = graphed, model

        def forward(self, x, mask=None):
            return self.graphed(x, mask)

    return _Positional, _Graphed


def build_step(args, device: str, autocast):
    """``(step(x_cpu, i) -> loss float, note)`` for ``args.model``."""
    import torch
    import torch.nn.functional as F

    from neurokit.models import CBraMod

    torch.manual_seed(0)
    ours = CBraMod(n_layers=args.layers)
    note = ""
    if args.model == "release":
        from eeg_pipeline import release_structure  # noqa: PLC0415  (benchmarks/eeg_pipeline.py)

        model = release_structure(ours).to(device).train()
        opt = torch.optim.AdamW(model.parameters(), lr=5e-4, weight_decay=0.05)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=10_000, eta_min=1e-5)

        def step(x, i):
            x = x.to(device)
            B, C, N, _ = x.shape
            mask = torch.zeros((B, C, N), dtype=torch.long, device=device).bernoulli_(0.5)
            with autocast():
                y = model(x, mask=mask)
                loss = F.mse_loss(y[mask == 1], x[mask == 1])
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            return float(loss.detach().cpu())

        return step, note

    from neurokit.training.objectives import masked_patch_loss
    from neurokit.training.optim import OptimConfig, build_optimizer, optimizer_step

    model = ours.to(device).train()
    params = [p for p in model.parameters() if p.requires_grad]
    cfg = OptimConfig()  # CBraMod's: lr 5e-4, wd 0.05, clip 1.0, cosine to 1e-5
    opt, sched = build_optimizer(params, cfg, total_steps=10_000)
    fwd = model
    if args.compile:
        fwd = torch.compile(model, mode="reduce-overhead" if args.cudagraphs else None)
    elif args.cudagraphs:
        _Positional, _Graphed = _graph_wrappers()
        B, C, N = args.batch, args.channels, args.patches
        xs = torch.randn(B, C, N, PATCH, device=device)
        ms = torch.bernoulli(torch.full((B, C, N), 0.5, device=device))
        with autocast():
            graphed = torch.cuda.make_graphed_callables(_Positional(model), (xs, ms))
        fwd = _Graphed(graphed, model)
        # the Triton kernel draws its dropout seed on the host: a captured graph replays one seed
        note = "attn_dropout_seed_fixed_in_graph"
    gen = torch.Generator(device=device)

    def step(x, i):
        x = x.to(device, non_blocking=True)
        gen.manual_seed(i)  # the pretraining pipeline seeds (seed, rank, step)
        with autocast():
            loss, _ = masked_patch_loss(fwd, x, gen)
        optimizer_step(loss, params, opt, sched, cfg.clip_grad)
        return float(loss.detach())

    return step, note


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write-store", type=Path, help="write the synthetic store here and exit")
    ap.add_argument("--windows", type=int, default=4096, help="windows in the written store")
    ap.add_argument("--store", type=Path, help="patch store to train from")
    ap.add_argument("--model", choices=["release", "neurokit"], default="neurokit")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--channels", type=int, default=19)
    ap.add_argument("--patches", type=int, default=30)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--dtype", choices=sorted(DTYPES), default="bf16", help="autocast dtype (fp32: none)")
    ap.add_argument("--steps", type=int, default=20, help="timed steps")
    ap.add_argument("--warmup", type=int, default=5, help="untimed steps first (compilation, graph capture)")
    ap.add_argument("--num-workers", type=int, default=8, help="DataLoader workers")
    ap.add_argument("--compile", action="store_true", help="neurokit: torch.compile the model")
    ap.add_argument("--cudagraphs", action="store_true", help="neurokit: CUDA graphs (with --compile: reduce-overhead)")
    ap.add_argument("--peak-tflops", type=float, default=989.0, help="dense bf16 peak, TFLOP/s (H100/H200 SXM: 989)")
    ap.add_argument("--dry-run", action="store_true", help="on the CPU (tiny shapes)")
    args = ap.parse_args(argv)
    tag = dict(model=args.model, B=args.batch, C=args.channels, N=args.patches, dtype=args.dtype)
    if args.model == "neurokit":
        tag.update(compile=int(args.compile), cudagraphs=int(args.cudagraphs))
    if importlib.util.find_spec("h5py") is None:
        emit(
            **({} if args.write_store else tag), status="skipped", reason="h5py is not installed (patch stores need it)"
        )
        return 0
    if args.write_store:
        write_store(args.write_store, args.windows, args.channels, args.patches)
        return 0
    if args.store is None:
        ap.error("--store (or --write-store) is required")
    import torch

    if args.dry_run:
        device = "cpu"
    elif not torch.cuda.is_available():
        ap.error("no CUDA device (use --dry-run to rehearse on the CPU)")
    else:
        device = "cuda"
    if args.cudagraphs and device != "cuda":
        emit(**tag, status="skipped", reason="CUDA graphs need a CUDA device")
        return 0
    if args.model == "release" and (args.compile or args.cudagraphs):
        ap.error("--compile / --cudagraphs apply to --model neurokit (the release runs as released)")
    dtype = getattr(torch, DTYPES[args.dtype])
    cache = not (args.cudagraphs and not args.compile)  # make_graphed_callables needs autocast's cache off

    def autocast():
        if dtype == torch.float32:
            return contextlib.nullcontext()
        return torch.autocast(device, dtype=dtype, cache_enabled=cache)

    from neurokit.data.dataset import PatchDataset

    ds = PatchDataset(args.store)
    if tuple(ds.sample_shape) != (args.channels, args.patches, PATCH) or len(ds) < args.batch:
        ap.error(f"{args.store}: {len(ds)} windows of {ds.sample_shape}, need ≥ {args.batch} of "
                 f"{(args.channels, args.patches, PATCH)}")  # fmt: skip
    loader = torch.utils.data.DataLoader(
        ds,
        batch_size=args.batch,
        shuffle=True,
        num_workers=args.num_workers,
        pin_memory=device == "cuda",
        drop_last=True,
        persistent_workers=args.num_workers > 0,  # epochs restart without new workers (the store is small)
    )

    def windows():
        while True:
            for x, _ in loader:
                yield x

    try:
        flops = model_flops_per_window(args.channels, args.patches, args.layers, device, autocast) * args.batch
        step, note = build_step(args, device, autocast)
        it = windows()
        loss = float("nan")
        for i in range(args.warmup):
            loss = step(next(it), i)
        if device == "cuda":
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        wait = 0.0
        t0 = time.perf_counter()
        for i in range(args.warmup, args.warmup + args.steps):
            t = time.perf_counter()
            x = next(it)
            wait += time.perf_counter() - t
            loss = step(x, i)
        if device == "cuda":
            torch.cuda.synchronize()
        total = time.perf_counter() - t0
    except (RuntimeError, NotImplementedError, AssertionError, torch.cuda.OutOfMemoryError) as exc:
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:160]
        emit(**tag, status="failed", reason=reason)
        return 1
    per_step = total / args.steps
    compute = (total - wait) / args.steps
    peak = args.peak_tflops * 1e12
    fields = dict(
        layers=args.layers,
        workers=args.num_workers,
        steps=args.steps,
        windows_s=args.batch / per_step,
        step_ms=per_step * 1e3,
        compute_ms=compute * 1e3,
        data_wait_frac=wait / total,
        gflop_step=flops / 1e9,
        peak_frac=flops / per_step / peak,
        peak_frac_compute=flops / compute / peak if compute > 0 else float("nan"),
        peak_mem_gib=torch.cuda.max_memory_allocated() / 2**30 if device == "cuda" else 0.0,
        loss=loss,
    )
    if not math.isfinite(loss):
        fields["status"] = "nonfinite_loss"
    emit(**tag, **fields, **({"note": note} if note else {}))
    return 0 if math.isfinite(loss) else 1


if __name__ == "__main__":
    t0 = time.perf_counter()
    rc = main()
    print(f"# done in {time.perf_counter() - t0:.1f} s", flush=True)
    raise SystemExit(rc)
