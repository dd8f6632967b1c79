#!/usr/bin/env bash
# GPU check of the fused criss-cross attention kernel, one short run (every step time-limited, < 5 min):
# install the project, run the CUDA tests of tests/test_kernels_criss_cross.py (kernel vs reference in fp32/bf16
# forward+backward, dropout, INT8, CBraMod fixture on the Triton and torch paths), then
# benchmarks/kernels.py at CBraMod shapes in bf16.
# Everything goes to $OUT/gpu_check.txt when $OUT is set, else benchmarks/gpu_check.txt (and stdout).
# Exit status: non-zero if the tests or the benchmark failed.
set -uo pipefail
cd "$(dirname "$0")/.."
if [ -n "${OUT:-}" ]; then mkdir -p "$OUT"; RESULT="$OUT/gpu_check.txt"; else RESULT="benchmarks/gpu_check.txt"; fi
: > "$RESULT"
log() { echo "$@" | tee -a "$RESULT"; }
step() {  # step <seconds> <command…>: run with a time limit, log output and status
  local limit=$1; shift
  log "## $* (limit ${limit}s)"
  local t0=$SECONDS
  timeout "$limit" "$@" 2>&1 | tee -a "$RESULT"
  local rc=${PIPESTATUS[0]}
  log "## rc=$rc after $((SECONDS - t0))s"
  return "$rc"
}

log "# gpu_check $(date -u +%FT%TZ) $(git rev-parse --short HEAD 2>/dev/null || echo no-git)"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | tee -a "$RESULT"

# An offline machine cannot fetch build requirements: fail fast (no retries), use the installed
# hatchling without build isolation when there is one, and fall back to PYTHONPATH as a last resort.
PIP="pip install -q --retries 0 --timeout 10"
if python -c "import hatchling" 2>/dev/null; then PIP="$PIP --no-build-isolation"; fi
if ! step 60 $PIP -e ".[test]"; then
  step 45 $PIP --no-deps -e . || export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
fi
step 30 python -c "import torch, triton, neurokit; print('torch', torch.__version__, 'cuda', torch.version.cuda, \
'triton', triton.__version__, 'neurokit', neurokit.__file__); assert torch.cuda.is_available(), 'no CUDA'"
status=$?

# tests find ../shared (fixtures); a copy holding shared/ inside the checkout is used when that is absent
if [ -z "${NEUROKIT_SHARED:-}" ] && [ ! -d ../shared ] && [ -d shared ]; then export NEUROKIT_SHARED="$PWD/shared"; fi
log "shared data: ${NEUROKIT_SHARED:-../shared}"

# The CUDA tests (the interpreter run is CPU-only and covered by CI). Each new kernel variant costs a
# Triton compile of seconds, so the tests run as concurrent shards, one pytest process each.
step 200 python - <<'PY' || status=1
import subprocess, sys
shards = [
    "cuda_cbramod_shapes and fp32",
    "cuda_cbramod_shapes and bf16",
    "fixture or training_step",
    "dropout_mask or int8 or half_precision",
    "fp32_forward_backward or custom_scale or dispatcher or falls_back",
]
base = [sys.executable, "-m", "pytest", "tests/test_kernels_criss_cross.py", "-q", "-rfEs", "-p", "no:cacheprovider", "--durations=3"]
procs = [subprocess.Popen(base + ["-k", k], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for k in shards]
failed = 0
for k, p in zip(shards, procs):
    out, _ = p.communicate()
    print(f"=== shard -k {k!r}: rc={p.returncode}\n{out}", flush=True)
    failed |= p.returncode != 0
sys.exit(1 if failed else 0)
PY
step 90 python benchmarks/kernels.py --dtype bf16 || status=1

log "# gpu_check done: status=$status, results in $RESULT"
exit "$status"
