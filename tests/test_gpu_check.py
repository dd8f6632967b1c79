"""``bash benchmarks/gpu_check.sh --dry-run``: the GPU check rehearsed on the CPU under Triton's interpreter."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="triton is not installed")
@pytest.mark.skipif(shutil.which("bash") is None or shutil.which("timeout") is None, reason="needs bash and timeout")
def test_gpu_check_dry_run_writes_every_figure(tmp_path):
    out = tmp_path / "gpu_check.txt"
    env = dict(os.environ, GPU_CHECK_SHAPES="1 3 2", GPU_CHECK_FP32_SHAPES="", TMPDIR=str(tmp_path))
    env.pop("TRITON_INTERPRET", None)  # the script sets it itself
    proc = subprocess.run(
        ["bash", "benchmarks/gpu_check.sh", "--dry-run", "--out", str(out)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    text = out.read_text()
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "interpret True" in text and "status=0" in text
    rows = {m.group(1): m.group(0) for m in re.finditer(r"^B=1 C=3 N=2 dtype=bf16 path=(\w+) .*$", text, re.M)}
    assert set(rows) == {"triton", "sdpa_math", "int8qk"}, text
    # the kernel's error against the fp32 reference is a bf16 rounding error, not a wrong result
    err = float(re.search(r"fwd_err=(\S+)", rows["triton"]).group(1))
    ref = float(re.search(r"ref_max=(\S+)", rows["triton"]).group(1))
    assert 0 < err < 2.5e-2 * ref
    grad_err = float(re.search(r"grad_err=(\S+)", rows["triton"]).group(1))
    assert 0 < grad_err < 0.1
    assert re.search(r"speedup=fwdbwd vs_sdpa_math=\S+", text)
    # a whole CBraMod training step (forward, loss, backward, AdamW) timed per attention backend
    steps = dict(re.findall(r"^B=2 C=3 N=2 dtype=bf16 model=(triton|torch) .*eval_loss=(\S+)$", text, re.M))
    assert set(steps) == {"triton", "torch"}, text
    # the masked loss before training, dropout off: the two backends agree to bf16 rounding (the training-mode
    # first losses differed by their dropout masks alone, 6.68 vs 6.87)
    assert abs(float(steps["triton"]) - float(steps["torch"])) < 0.02 * float(steps["torch"]), steps
    assert re.search(r"model=speedup step_torch_over_triton=\S+", text)
    assert not list(tmp_path.glob("gpu_check_triton.*")), "the Triton cache of the run is removed"
