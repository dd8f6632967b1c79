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
    _check_whole_step_lines(text)
    assert not list(tmp_path.glob("gpu_check_store.*")), "the whole-step section's store is removed"


def _check_whole_step_lines(text: str) -> None:
    """The whole-step section (benchmarks/gpu_whole_step.py): a synthetic store written, then one line per
    configuration, the release's step and neurokit's, both fed from the store through PatchDataset."""
    if "whole_step status=skipped" in text:  # no h5py here: the section says so instead of failing
        assert importlib.util.find_spec("h5py") is None, text
        return
    assert re.search(r"^whole_step store=written windows=16 C=3 N=2 ", text, re.M), text
    rows = {}
    for m in re.finditer(r"^whole_step model=(release|neurokit) B=2 C=3 N=2 dtype=bf16 (.*)$", text, re.M):
        rows[m.group(1)] = dict(kv.split("=", 1) for kv in m.group(2).split())
    assert set(rows) == {"release", "neurokit"}, text
    assert rows["neurokit"]["compile"] == "0" and rows["neurokit"]["cudagraphs"] == "0"
    for row in rows.values():
        assert "status" not in row, row
        assert float(row["windows_s"]) > 0 and float(row["step_ms"]) >= float(row["compute_ms"]) > 0
        assert 0 <= float(row["data_wait_frac"]) < 1 and 0 < float(row["peak_frac"]) <= float(row["peak_frac_compute"])
        assert 0 < float(row["loss"]) < 100
    # the same model arithmetic: one FLOP count for both (counted on the plain-PyTorch path)
    assert rows["release"]["gflop_step"] == rows["neurokit"]["gflop_step"]
    assert float(rows["release"]["gflop_step"]) > 0


def test_whole_step_skips_without_h5py(monkeypatch, capsys):
    """Without h5py the whole-step section prints status=skipped with its reason and exits 0."""
    import sys

    monkeypatch.setattr(sys, "path", [str(REPO / "benchmarks"), *sys.path])  # the module adds more: all undone
    import gpu_whole_step

    monkeypatch.setitem(sys.modules, "h5py", None)  # find_spec then reports it missing
    assert gpu_whole_step.main(["--store", "nowhere.h5", "--model", "release", "--batch", "2", "--dry-run"]) == 0
    assert gpu_whole_step.main(["--write-store", "nowhere.h5"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("whole_step model=release B=2 C=19 N=30 dtype=bf16 status=skipped reason=h5py")
    assert out[1].startswith("whole_step status=skipped reason=h5py")
