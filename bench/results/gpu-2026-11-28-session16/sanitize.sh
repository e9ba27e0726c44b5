#!/usr/bin/env bash
# sanitize.sh FUSEC OUTDIR [PROGRAMS] - each small program of sanitize/ or of the directory
# PROGRAMS (the shapes of a session's new kernels: odd extents, tiles with partial edges) on
# the CUDA backend under compute-sanitizer's memcheck and racecheck, and its outputs against
# the host backend's (compare.py).
set -u
fusec=$1; out=$2; here=$(dirname "$0")
mkdir -p "$out"
for f in "${3:-$here/sanitize}"/*.fc; do
  n=$(basename "$f" .fc)
  "$fusec" run "$f" --backend host --seed 3 --output-dir "$out/host-$n" > /dev/null 2>&1 || echo "$n: host run failed"
  timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 "$fusec" run "$f" --backend cuda --seed 3 \
    --output-dir "$out/cuda-$n" > "$out/memcheck-$n.txt" 2>&1; mc=$?
  timeout 120 compute-sanitizer --tool racecheck --error-exitcode 9 "$fusec" run "$f" --backend cuda --seed 3 \
    > "$out/racecheck-$n.txt" 2>&1; rc=$?
  printf '%-16s memcheck rc=%d (%s)  racecheck rc=%d (%s)  %s\n' "$n" $mc \
    "$(grep -E 'ERROR SUMMARY' "$out/memcheck-$n.txt" | tail -1 | sed 's/=* *//')" $rc \
    "$(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$out/racecheck-$n.txt" | tail -1 | sed 's/=* *//')" \
    "$(python3 "$here/compare.py" "$out/host-$n" "$out/cuda-$n")"
done
