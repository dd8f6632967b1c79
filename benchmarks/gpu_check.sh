#!/usr/bin/env bash
# GPU check of the fused criss-cross attention kernels, made for one short GPU loan (< 5 min in all).
#
#   bash benchmarks/gpu_check.sh             # on a CUDA machine: writes benchmarks/gpu_check.txt (and $OUT/ if set)
#   bash benchmarks/gpu_check.sh --dry-run   # here, no GPU: the same steps under TRITON_INTERPRET=1, tiny shapes
#   bash benchmarks/gpu_check.sh --out FILE  # write the results elsewhere
#   bash benchmarks/gpu_check.sh --whole-step-only   # only the whole-step section (store-fed training steps)
#
# Needs only torch and triton (no install, no network, no mne/nibabel/open_clip): it runs from the checkout
# through PYTHONPATH and checks first that the kernel modules import nothing else. Every shape runs in its own
# process under `timeout`, so a crash or a hang costs that shape only; steps are skipped once the 5-minute
# budget is near. Per CBraMod shape (B 64/128, C 19/22/64, N 4/30, d_model 200 = 8 heads × 25): forward and
# forward+backward time of the kernel against the reference on SDPA's math/efficient/flash backends, max error
# against fp32, peak memory, HBM bandwidth as a fraction of the H200's 4.8 TB/s, INT8 error and speed, and the
# registers/spills the driver reports (benchmarks/gpu_check.py documents the fields). Last, the whole-step section
# (benchmarks/gpu_whole_step.py): the release's CBraMod training step against neurokit's, both fed from a synthetic
# patch store through PatchDataset and a DataLoader, B 64/128/256, 19 × 30 × 200 windows, bf16 autocast; it needs
# h5py (skipped with status=skipped otherwise); GPU_CHECK_COMPILE=1 / GPU_CHECK_CUDAGRAPHS=1 add neurokit's step
# under torch.compile / CUDA graphs (both: reduce-overhead), GPU_CHECK_WORKERS the DataLoader workers (8),
# GPU_CHECK_PEAK_TFLOPS the bf16 peak (989), GPU_CHECK_WHOLE_STEP_BATCHES the batch sizes ("64 128 256").
# Exit status: 0 if every step passed, 1 otherwise (the file still holds every figure that was measured).
set -uo pipefail
cd "$(dirname "$0")/.."
DRY=0
ONLY_WHOLE=0
RESULT=benchmarks/gpu_check.txt
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) DRY=1; RESULT=benchmarks/gpu_check.dry-run.txt ;;
    --out) RESULT=$2; shift ;;
    --whole-step-only) ONLY_WHOLE=1 ;;
    *) echo "usage: $0 [--dry-run] [--whole-step-only] [--out FILE]" >&2; exit 2 ;;
  esac
  shift
done
BUDGET=${GPU_CHECK_BUDGET_S:-280}   # seconds; later steps are skipped when the budget is spent
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
TRITON_CACHE_DIR=$(mktemp -d "${TMPDIR:-/tmp}/gpu_check_triton.XXXXXX")  # shared by the shape processes
export TRITON_CACHE_DIR
STORE_DIR=$(mktemp -d "${TMPDIR:-/tmp}/gpu_check_store.XXXXXX")   # the whole-step section's synthetic store
trap 'rm -rf "$TRITON_CACHE_DIR" "$STORE_DIR"' EXIT
mkdir -p "$(dirname "$RESULT")"
: > "$RESULT"
status=0
log() { echo "$@" | tee -a "$RESULT"; }
step() {  # step <seconds> <command…>: run with a time limit if the budget allows; log output and status
  local limit=$1; shift
  if [ $((SECONDS + 5)) -ge "$BUDGET" ]; then log "## skipped (budget of ${BUDGET}s spent): $*"; status=1; return 1; fi
  if [ $((SECONDS + limit)) -gt "$BUDGET" ]; then limit=$((BUDGET - SECONDS)); fi
  log "## $* (limit ${limit}s)"
  local t0=$SECONDS
  timeout -k 5 "$limit" "$@" 2>&1 | tee -a "$RESULT"
  local rc=${PIPESTATUS[0]}
  log "## rc=$rc after $((SECONDS - t0))s"
  [ "$rc" -eq 0 ] || status=1
  return "$rc"
}

# GPU_CHECK_SHAPES / GPU_CHECK_FP32_SHAPES ("B C N;B C N", empty for none) and GPU_CHECK_MODEL_SHAPES
# ("B C N dtype;…", whole CBraMod training steps) override the shape lists
split_shapes() { local IFS=';'; read -r -a "$1" <<< "$2"; }
if [ "$DRY" = 1 ]; then
  export TRITON_INTERPRET=1 CUDA_VISIBLE_DEVICES=""
  SHAPES=("1 3 2" "1 2 3"); FP32_SHAPES=("1 3 2"); COMPILE_SETS=(); MODE=(--dry-run); SHAPE_LIMIT=90
  MODEL_SHAPES=("2 3 2 bf16"); MODEL_LAYERS=1
  WS_BATCHES=(2); WS_WINDOWS=16; WS_LIMIT=60; WS_COMPILE_LIMIT=120
  WS_ARGS=(--channels 3 --patches 2 --layers 1 --steps 2 --warmup 1 --num-workers "${GPU_CHECK_WORKERS:-1}")
else
  SHAPES=(); for B in 64 128; do for C in 19 22 64; do for N in 4 30; do SHAPES+=("$B $C $N"); done; done; done
  FP32_SHAPES=("64 19 30" "64 22 4" "64 64 30")
  COMPILE_SETS=("19 4" "19 30" "64 4" "64 30")   # C = 19 and 22 compile to the same kernels
  MODE=(); SHAPE_LIMIT=40
  MODEL_SHAPES=("64 19 30 bf16" "64 22 4 bf16" "64 64 4 fp32"); MODEL_LAYERS=12   # whole CBraMod steps (19×30: TUEG)
  WS_BATCHES=(64 128 256); WS_WINDOWS=4096; WS_LIMIT=75; WS_COMPILE_LIMIT=200   # 4096 windows: 1.7 GiB
  WS_ARGS=(--channels 19 --patches 30 --layers 12 --steps 20 --warmup 5 --num-workers "${GPU_CHECK_WORKERS:-8}")
fi
WS_ARGS+=(--dtype bf16 --peak-tflops "${GPU_CHECK_PEAK_TFLOPS:-989}")
if [ -n "${GPU_CHECK_WHOLE_STEP_BATCHES+set}" ]; then read -r -a WS_BATCHES <<< "$GPU_CHECK_WHOLE_STEP_BATCHES"; fi
WS_VARIANTS=("")   # neurokit's step: eager, then the options asked for
if [ "${GPU_CHECK_COMPILE:-0}" = 1 ]; then WS_VARIANTS+=("--compile"); fi
if [ "${GPU_CHECK_CUDAGRAPHS:-0}" = 1 ]; then WS_VARIANTS+=("--cudagraphs"); fi
if [ "${GPU_CHECK_COMPILE:-0}" = 1 ] && [ "${GPU_CHECK_CUDAGRAPHS:-0}" = 1 ]; then WS_VARIANTS+=("--compile --cudagraphs"); fi
if [ -n "${GPU_CHECK_SHAPES+set}" ]; then split_shapes SHAPES "$GPU_CHECK_SHAPES"; fi
if [ -n "${GPU_CHECK_FP32_SHAPES+set}" ]; then split_shapes FP32_SHAPES "$GPU_CHECK_FP32_SHAPES"; fi
if [ -n "${GPU_CHECK_MODEL_SHAPES+set}" ]; then split_shapes MODEL_SHAPES "$GPU_CHECK_MODEL_SHAPES"; fi
if [ "$ONLY_WHOLE" = 1 ]; then SHAPES=(); FP32_SHAPES=(); COMPILE_SETS=(); MODEL_SHAPES=(); fi

log "# gpu_check $(date -u +%FT%TZ) $(git rev-parse --short HEAD 2>/dev/null || echo no-git) dry_run=$DRY"
if [ "$DRY" = 0 ]; then
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.memory --format=csv,noheader 2>&1 | tee -a "$RESULT"
fi
# the kernel modules must import with torch and triton only
step 60 python - <<'PY' || { log "# cannot import the kernels: stop"; exit 1; }
import sys, torch, triton
import neurokit.kernels.triton_criss_cross as tcc
heavy = sorted(m for m in ("mne", "nibabel", "open_clip", "h5py", "scipy", "typer", "safetensors") if m in sys.modules)
assert not heavy, f"the kernel modules pulled in {heavy}"
print("torch", torch.__version__, "cuda", torch.version.cuda, "triton", triton.__version__,
      "cuda_available", torch.cuda.is_available(), "interpret", tcc.INTERPRET, "kernel_runs_here", tcc.AVAILABLE)
assert tcc.AVAILABLE, "the kernel cannot run here (no CUDA and no TRITON_INTERPRET=1)"
PY

# compile every kernel variant first, in parallel (Triton compiles on the CPU cores; later processes hit the cache)
if [ ${#COMPILE_SETS[@]} -gt 0 ]; then
  log "## compile warm-up: ${#COMPILE_SETS[*]} shapes × bf16/fp32 in parallel (limit 120s)"
  t0=$SECONDS; pids=()
  for cn in "${COMPILE_SETS[@]}"; do
    for dt in bf16 fp32; do
      set -- $cn
      timeout -k 5 120 python benchmarks/gpu_check.py --compile-only --batch 2 --channels "$1" --patches "$2" \
        --dtype "$dt" > "$TRITON_CACHE_DIR/compile.$1.$2.$dt.log" 2>&1 & pids+=($!)
    done
  done
  for p in "${pids[@]}"; do wait "$p" || status=1; done
  cat "$TRITON_CACHE_DIR"/compile.*.log | grep -v '^#' | tee -a "$RESULT"
  log "## compile warm-up done after $((SECONDS - t0))s"
fi

for shape in "${SHAPES[@]+"${SHAPES[@]}"}"; do
  set -- $shape
  step "$SHAPE_LIMIT" python benchmarks/gpu_check.py "${MODE[@]}" --batch "$1" --channels "$2" --patches "$3" --dtype bf16
done
for shape in "${FP32_SHAPES[@]+"${FP32_SHAPES[@]}"}"; do
  set -- $shape
  step "$SHAPE_LIMIT" python benchmarks/gpu_check.py "${MODE[@]}" --batch "$1" --channels "$2" --patches "$3" --dtype fp32
done
# the CUDA tests of the kernel (fixture, CBraMod shapes), if pytest is installed and time is left
if [ "$ONLY_WHOLE" = 1 ]; then
  log "## CUDA tests skipped (--whole-step-only)"
elif [ "$DRY" = 0 ] && python -c "import pytest" 2>/dev/null; then
  if [ -z "${NEUROKIT_SHARED:-}" ] && [ ! -d ../shared ] && [ -d shared ]; then export NEUROKIT_SHARED="$PWD/shared"; fi
  step 90 python -m pytest tests/test_kernels_criss_cross.py -q -x -p no:cacheprovider -rfEs \
    -k "cuda_cbramod_shapes or fixture_all_cases or training_step"
else
  log "## CUDA tests skipped (dry run or no pytest)"
fi

# whole CBraMod training steps per attention backend (last: the budget may skip them)
for shape in "${MODEL_SHAPES[@]+"${MODEL_SHAPES[@]}"}"; do
  set -- $shape
  step "$((SHAPE_LIMIT + 20))" python benchmarks/gpu_check.py "${MODE[@]}" --model-step --layers "$MODEL_LAYERS" \
    --batch "$1" --channels "$2" --patches "$3" --dtype "$4"
done

# whole training steps fed from a patch store: the release's against neurokit's (h5py needed for the store)
if python -c "import h5py" 2>/dev/null; then
  WS_STORE="$STORE_DIR/whole_step.h5"
  if step 120 python benchmarks/gpu_whole_step.py --write-store "$WS_STORE" --windows "$WS_WINDOWS" "${WS_ARGS[@]}"; then
    for B in "${WS_BATCHES[@]}"; do
      step "$WS_LIMIT" python benchmarks/gpu_whole_step.py "${MODE[@]}" --store "$WS_STORE" --model release \
        --batch "$B" "${WS_ARGS[@]}"
      for variant in "${WS_VARIANTS[@]}"; do
        limit=$WS_LIMIT; case "$variant" in *--compile*) limit=$WS_COMPILE_LIMIT ;; esac
        # shellcheck disable=SC2086  # the variant's flags split on purpose
        step "$limit" python benchmarks/gpu_whole_step.py "${MODE[@]}" --store "$WS_STORE" --model neurokit \
          --batch "$B" "${WS_ARGS[@]}" $variant
      done
    done
  fi
  rm -f "$WS_STORE"
else
  log "whole_step status=skipped reason=h5py_is_not_installed_(the_patch_store_needs_it)"
fi

log "# gpu_check done after ${SECONDS}s: status=$status, results in $RESULT"
if [ -n "${OUT:-}" ] && [ -d "${OUT}" ]; then cp "$RESULT" "$OUT/"; fi
exit "$status"
