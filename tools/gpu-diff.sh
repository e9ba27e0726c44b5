#!/usr/bin/env bash
# tools/gpu-diff.sh [FIRST] [COUNT] [WORKERS] - on the GPU host: the GPU differential test
# (test_gpu_diff's gpu/random_dags_match_the_host_reference) over seeds FIRST..FIRST+COUNT-1
# (defaults 0, 2000), split into WORKERS processes (default: one per CPU core), each given one
# GPU round robin through CUDA_VISIBLE_DEVICES and a contiguous share of the seeds. Within a
# worker the test runs its seeds in child processes, a slice at a time (FUSEC_DIFF_SLICE,
# default 100 here), so a crash costs one seed and the worker goes on (tests/test_gpu_diff.c).
#
# The binary: GPU_DIFF_BIN, else gpu-carry/build/tests/test_gpu_diff with gpu-carry/libs on the
# library path (tools/gpu-carry.sh made gpu-carry/ on the build host), else
# build/tests/test_gpu_diff. Kernels are cached in $FUSEC_CACHE_DIR (default ./gpu-diff/cache,
# shared by the workers and kept between runs on the same host).
# Knobs: GPU_DIFF_LIMIT (seconds the workers may run, 540: then they are stopped and the seeds
# they finished still count), GPU_DIFF_GPUS (the device list, default every GPU nvidia-smi
# lists), FUSEC_DIFF_SLICE, FUSEC_DIFF_SEED_TIMEOUT.
# Writes ./gpu-diff/: a log per worker, failures.txt (every failing seed: crash or mismatch,
# with its reason), failures.fc (each failing program as .fc after a "# seed N: ..." line),
# inputs/seed-N-xK.npy (each failing program's inputs: `fusec run` reproduces it) and
# summary.txt; and, when $OUT is set, $OUT/gpu-diff.tar.gz of all that (not the cache).
# Prints progress every 30 s and a summary: programs, outputs compared, crashes, mismatches,
# failing alike, the seeds covered, time, and how often each tolerance rule was needed.
# Exit status 0 when every seed ran with no crash and no mismatch.
#
# Cost: NVRTC dominates (nine kernels in ten of the random programs are new to the cache; a
# program has two on average, each 0.2-0.5 s of one core), so a 64-core host runs about
# 4,000-9,000 programs a minute (the summary gives the rate). 50,000 programs on a 4-GPU,
# 64-core host, as two device calls of 3-7 minutes each (README.md, "Running on a GPU host"):
#   tools/gpu-diff.sh 0 25000
#   tools/gpu-diff.sh 25000 25000
set -u
cd "$(dirname "$0")/.." || exit 1
first=${1:-0}
count=${2:-2000}
workers=${3:-$(nproc)}
limit=${GPU_DIFF_LIMIT:-540}
dir=$PWD/gpu-diff
export FUSEC_CACHE_DIR=${FUSEC_CACHE_DIR:-$dir/cache}
export FUSEC_DIFF_SLICE=${FUSEC_DIFF_SLICE:-100}
bin=${GPU_DIFF_BIN:-}
if [[ -z $bin && -x gpu-carry/build/tests/test_gpu_diff ]]; then
  bin=gpu-carry/build/tests/test_gpu_diff
  export LD_LIBRARY_PATH=$PWD/gpu-carry/libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
bin=${bin:-build/tests/test_gpu_diff}
if [[ ! -x $bin ]]; then
  echo "gpu-diff: no test binary ($bin): run tools/gpu-carry.sh on the build host first" >&2
  exit 2
fi
if [[ -n ${GPU_DIFF_GPUS:-} ]]; then
  read -r -a gpus <<<"${GPU_DIFF_GPUS//,/ }"
else
  mapfile -t gpus < <(nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null)
fi
((${#gpus[@]} > 0)) || gpus=(0)
mkdir -p "$dir" "$FUSEC_CACHE_DIR"
find "$dir" -mindepth 1 -maxdepth 1 ! -name cache -exec rm -rf {} +
mkdir -p "$dir/inputs"
((workers > count)) && workers=$count
((workers < 1)) && workers=1
per=$(((count + workers - 1) / workers))
echo "gpu-diff: seeds $first..$((first + count - 1)): $workers workers of about $per seeds on" \
  "${#gpus[@]} GPUs (${gpus[*]}), $bin, limit $limit s"
t0=$SECONDS
pids=()
for ((w = 0; w < workers; w++)); do
  lo=$((first + w * per))
  n=$((first + count - lo < per ? first + count - lo : per))
  ((n > 0)) || break
  CUDA_VISIBLE_DEVICES=${gpus[w % ${#gpus[@]}]} FUSEC_DIFF_FIRST=$lo FUSEC_DIFF_DAGS=$n \
    FUSEC_DIFF_REPORT=$dir/report_$w.fc FUSEC_DIFF_INPUTS=$dir/inputs \
    timeout -k 10 "$limit" "$bin" --jobs=1 --filter 'gpu/random_dags_match_the_host_reference' \
    >"$dir/worker_$w.log" 2>&1 &
  pids+=($!)
done

# key=value from a line: kv KEY LINE
kv() { grep -o "\b$1=-\?[0-9]*" <<<"$2" | head -1 | cut -d= -f2; }
# The latest progress line of each worker, added up: programs crashes mismatches.
progress() {
  local p=0 c=0 m=0 f line
  for f in "$dir"/worker_*.log; do
    line=$(grep -h '^gpu-diff: progress ' "$f" | tail -1)
    [[ -z $line ]] && continue
    p=$((p + $(kv programs "$line"))) c=$((c + $(kv crashes "$line"))) m=$((m + $(kv mismatches "$line")))
  done
  echo "$p $c $m"
}
last=$SECONDS
while :; do
  alive=0
  for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=$((alive + 1)); done
  ((alive == 0)) && break
  sleep 2
  if ((SECONDS - last >= 30)); then
    last=$SECONDS
    read -r p c m < <(progress)
    echo "gpu-diff: $((SECONDS - t0)) s: $p of $count programs, $c crashes, $m mismatches ($alive workers running)"
  fi
done
wait

# Totals: each worker's totals line, or, for a worker stopped by the limit, its last progress.
programs=0 compared=0 crashes=0 mismatches=0 alike=0 cut=0 close=0 overflow=0 intpow=0 replay=0
nonfinite_fft=0 pow_phase=0 order=0
covered=()
for ((w = 0; w < ${#pids[@]}; w++)); do
  f=$dir/worker_$w.log
  lo=$((first + w * per))
  line=$(grep -h '^gpu differential: totals ' "$f" | tail -1)
  if [[ -n $line ]]; then
    for k in programs compared crashes mismatches alike close overflow intpow replay nonfinite_fft \
      pow_phase order; do
      declare "$k=$((${!k} + $(kv "$k" "$line")))"
    done
    (($(kv programs "$line") > 0)) && covered+=("$(kv first "$line")..$(kv last "$line")")
  else
    cut=$((cut + 1))
    pl=$(grep -h '^gpu-diff: progress ' "$f" | tail -1)
    if [[ -n $pl ]]; then
      programs=$((programs + $(kv programs "$pl"))) crashes=$((crashes + $(kv crashes "$pl")))
      mismatches=$((mismatches + $(kv mismatches "$pl")))
      v=$(kv compared "$pl")   # the tolerance rules' counts come in totals lines only
      compared=$((compared + ${v:-0}))
      covered+=("$lo..$(kv last "$pl")")
    fi
    echo "gpu-diff: worker $w (seeds from $lo) was stopped at the time limit; see gpu-diff/worker_$w.log"
  fi
done
grep -h 'FAILED seed' "$dir"/worker_*.log | sed 's/^gpu differential: //' | sort -t' ' -k3,3n >"$dir/failures.txt"
cat "$dir"/report_*.fc >"$dir/failures.fc" 2>/dev/null
elapsed=$((SECONDS - t0))
{
  echo "gpu-diff: seeds $first..$((first + count - 1)) asked; covered ${covered[*]:-none}"
  echo "gpu-diff: $programs of $count programs, $compared outputs compared, $crashes crashes," \
    "$mismatches mismatches, $alike failing alike, $elapsed s ($((programs * 60 / (elapsed > 0 ? elapsed : 1)))" \
    "programs a minute), ${#pids[@]} workers on ${#gpus[@]} GPUs" \
    "$( ((cut > 0)) && echo "($cut workers stopped at the time limit)")"
  echo "gpu-diff: tolerance rules needed: $close outputs within rule 2 (not bit-identical)," \
    "$overflow elements by rule 3's overflow clause, $intpow host value errors of integer" \
    "powers (rule 5), $replay programs by replay (rule 6), $nonfinite_fft transforms of" \
    "non-finite operands (rule 7), $pow_phase complex power elements by their modulus" \
    "(rule 8), $order outputs within a sum's order (rule 9)"
  if [[ -s $dir/failures.txt ]]; then
    echo "gpu-diff: failing seeds (gpu-diff/failures.fc has each program):"
    head -50 "$dir/failures.txt"
  fi
} | tee "$dir/summary.txt"
[[ -n ${OUT:-} ]] && tar -czf "$OUT/gpu-diff.tar.gz" -C "$dir" --exclude=./cache .
((programs == count && crashes == 0 && mismatches == 0))
