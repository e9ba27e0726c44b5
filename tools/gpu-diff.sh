#!/usr/bin/env bash
# tools/gpu-diff.sh [FIRST] [COUNT] [WORKERS] [CHUNK] - on the GPU host, after tools/gpu-tests.sh
# (or tools/gpu-carry.sh's build/ copied into place): the GPU differential test
# (build/tests/test_gpu_diff) over seeds FIRST..FIRST+COUNT-1, split over WORKERS processes
# (default 16) that each run their share in chunks of CHUNK seeds (default 25), so a chunk that
# crashes or hangs costs only its own seeds and a run cut short still reports the chunks done.
# Needs LD_LIBRARY_PATH to reach the carried libraries. Writes ./gpu-diff/ (a log and a report
# of mismatching programs, as .fc, per chunk) and, when $OUT is set, $OUT/gpu-diff.tar.gz.
# Knobs: GPU_DIFF_CHUNK_LIMIT (seconds a chunk may run, 240).
# Prints one line per failed chunk and a total: programs, outputs compared, mismatching.
set -u
cd "$(dirname "$0")/.." || exit 1
first=${1:-0}
count=${2:-2000}
workers=${3:-16}
chunk=${4:-25}
limit=${GPU_DIFF_CHUNK_LIMIT:-240}
dir=$PWD/gpu-diff
rm -rf "$dir"
mkdir -p "$dir"
per=$(((count + workers - 1) / workers))

worker() { # lo hi
  local s=$1 hi=$2 n rc
  while ((s < hi)); do
    n=$((hi - s < chunk ? hi - s : chunk))
    FUSEC_DIFF_FIRST=$s FUSEC_DIFF_DAGS=$n FUSEC_DIFF_REPORT=$dir/report_$s.fc \
      timeout -k 10 "$limit" build/tests/test_gpu_diff --jobs=1 >"$dir/chunk_$s.log" 2>&1
    rc=$?
    echo "$s $n $rc" >>"$dir/chunks.txt"
    s=$((s + n))
  done
}
for ((w = 0; w < workers; w++)); do
  lo=$((first + w * per))
  hi=$((lo + per))
  ((hi > first + count)) && hi=$((first + count))
  ((lo < hi)) && worker "$lo" "$hi" &
done
wait

programs=0 compared=0 mismatching=0 bad=0
while read -r s n rc; do
  line=$(grep -h '^gpu differential:' "$dir/chunk_$s.log" | tail -1)
  if [[ -n $line ]]; then
    read -r p c m < <(sed -E 's/.*: ([0-9]+) programs, ([0-9]+) outputs compared, ([0-9]+) mismatching.*/\1 \2 \3/' <<<"$line")
    programs=$((programs + p)) compared=$((compared + c)) mismatching=$((mismatching + m))
  fi
  if [[ -z $line ]]; then   # no total line: the chunk crashed or ran out of time
    bad=$((bad + 1))
    echo "chunk seeds $s..$((s + n - 1)): exit $rc ($( [[ $rc -eq 124 ]] && echo 'time limit' || echo 'failed or crashed')); see gpu-diff/chunk_$s.log"
  fi
done < <(sort -n "$dir/chunks.txt")
cat "$dir"/report_*.fc > "$dir/mismatches.fc" 2>/dev/null
[[ -n ${OUT:-} ]] && tar -czf "$OUT/gpu-diff.tar.gz" -C "$dir" .
echo "gpu-diff: seeds $first..$((first + count - 1)): $programs programs, $compared outputs compared, $mismatching mismatching, $bad chunks failed"
((bad == 0 && mismatching == 0))
