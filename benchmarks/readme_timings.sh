#!/usr/bin/env bash
# Wall time, CPU time (user + system) and peak resident memory of the README's full-size commands, measured
# over their first steps (training) with GNU time; the table in docs/guide/scale.md comes from this script.
# Usage: bash benchmarks/readme_timings.sh OUT   (run from the repository root; ../shared/data must exist)
set -uo pipefail
OUT=${1:?usage: bash benchmarks/readme_timings.sh OUT}
mkdir -p "$OUT"
DATA=$(cd "$(dirname "$0")/../../shared/data" && pwd)
: > "$OUT/times.txt"
t() {  # t NAME COMMAND...: one line "NAME|wall s|user s|system s|peak KiB" in OUT/times.txt
  local name="$1"; shift
  /usr/bin/time -f "$name|%e|%U|%S|%M" -a -o "$OUT/times.txt" "$@" > "$OUT/$name.log" 2>&1
  echo "$name rc=$?"
}
t prepare_mi neuro prepare physionet_mi --task left_right_imagery --data-root "$DATA/eeg" -o "$OUT/mi.h5" --overwrite
t pretrain_12l_2steps neuro pretrain "$OUT/mi.h5" -o "$OUT/pt" --epochs 40 --batch-size 128 --max-steps 2 --no-progress --overwrite
t finetune_12l_1epoch neuro finetune "$OUT/mi.h5" -o "$OUT/ft" --init "$OUT/pt/last.pt" --head all_patch_reps --epochs 1 --no-progress --overwrite
t prepare_fsa5 neuro prepare fsaverage5_rest --task hemisphere --data-root "$DATA/surface/fsaverage5_rest" -o "$OUT/fsa5.h5" --overwrite
t pretrain_sit_1step neuro pretrain "$OUT/fsa5.h5" --model sit --model-size tiny -o "$OUT/sit" --max-steps 1 --no-progress --overwrite
t finetune_sit_1epoch neuro finetune "$OUT/fsa5.h5" --init "$OUT/sit/last.pt" -o "$OUT/sit_ft" --epochs 1 --no-progress --overwrite
column -t -s '|' "$OUT/times.txt"
