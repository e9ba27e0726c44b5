#!/usr/bin/env bash
# tools/gpu-sanitize.sh [CARRY_DIR] [BUILD_DIR] - on the GPU host, from the repository root:
# compute-sanitizer over every example and the GPU tests of the carried build
# (tools/gpu-carry.sh), one line per run as it goes: tool, run, exit status, seconds and the
# errors the sanitizer counted (summed over the processes it followed: Criterion runs each test
# in a child). Tests that fault on purpose are left out (a deliberate illegal address is what
# they test): test_runtime's dead context, test_gpu_user's faulting raw kernel, test_shard's
# fault suite. On one device (CUDA_VISIBLE_DEVICES=0 unless set), so sharded tests run their
# shards on GPU 0 with host-staged collectives: the sanitizer checks fusec's kernels, not NCCL's.
# Knobs: SANITIZE_TOOLS ("memcheck racecheck"), SANITIZE_LIMIT (seconds a run, 300),
# SANITIZE_ONLY (space-separated run names). Logs: ./gpu-sanitize/, and $OUT/gpu-sanitize.tar.gz.
# Exit status: 0 when every run exited 0 and reported 0 errors.
set -u
cd "$(dirname "$0")/.." || exit 1
carry=${1:-gpu-carry}
build=${2:-build}
logs=$PWD/gpu-sanitize
mkdir -p "$logs"
if [ ! -x "$build/tests/test_runtime" ]; then
  rm -rf "$build" && mkdir -p "$build" && cp -r "$carry/build/." "$build/"
fi
export LD_LIBRARY_PATH=$PWD/$carry/libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0} NCCL_NVLS_ENABLE=0
export FUSEC_CACHE_DIR=${FUSEC_CACHE_DIR:-$logs/cache}
limit=${SANITIZE_LIMIT:-300}
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
"$cs" --version | tail -1

# name | environment | sanitizer flags | command (relative to the build dir). test_gpu_user
# launches a kernel name its module lacks on purpose (the error it checks is fusec's message),
# which the sanitizer would count as a CUDA API error: API errors are not reported there.
runs=(
  "test_runtime|||tests/test_runtime --jobs=1 --filter */!(*dead*)"
  "test_gpu_lib|||tests/test_gpu_lib --jobs=1"
  "test_gpu_user||--report-api-errors no|tests/test_gpu_user --jobs=1 --filter */!(*fault*)"
  "test_raw|||tests/test_raw --jobs=1"
  "test_user_kernels|||tests/test_user_kernels --jobs=1"
  "test_shard|||tests/test_shard --jobs=1 --filter shard_gpu/*"
  "test_shard_diff|FUSEC_SHARD_DIFF_DAGS=40||tests/test_shard_diff --jobs=1 --filter shard_diff/gpu*"
  "test_gpu_diff|FUSEC_DIFF_DAGS=150||tests/test_gpu_diff --jobs=1"
)
for e in "$build"/examples/*; do runs+=("example_${e##*/}|||examples/${e##*/}"); done

status=0
for tool in ${SANITIZE_TOOLS:-memcheck racecheck}; do
  for r in "${runs[@]}"; do
    IFS='|' read -r name envs flags cmd <<<"$r"
    if [ -n "${SANITIZE_ONLY:-}" ] && [[ " $SANITIZE_ONLY " != *" $name "* ]]; then continue; fi
    log=$logs/$tool-$name.log
    t0=$SECONDS
    # shellcheck disable=SC2086 # the command's words split here on purpose
    (set -f; cd "$build" && env $envs timeout -k 10 "$limit" "$cs" --tool "$tool" --target-processes all \
       --print-limit 20 $flags $cmd) >"$log" 2>&1
    rc=$?
    errors=$(grep -E '^========= ERROR SUMMARY: [0-9]+ error' "$log" |
             awk '{s += $4} END {print s + 0}')
    printf '%-10s %-26s rc=%-3s %4ss  errors: %s\n' "$tool" "$name" "$rc" $((SECONDS - t0)) "$errors" |
      tee -a "$logs/summary.txt"
    if [ "$rc" -ne 0 ] || [ "$errors" -ne 0 ]; then status=1; fi
    [ -n "${OUT:-}" ] && tar -czf "$OUT/gpu-sanitize.tar.gz" -C "$logs" --exclude cache .
  done
done
echo "gpu-sanitize: $( ((status == 0)) && echo 'no errors' || echo 'ERRORS or failures (see logs)')"
exit $status
