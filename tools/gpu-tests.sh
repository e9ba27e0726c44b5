#!/usr/bin/env bash
# tools/gpu-tests.sh [CARRY_DIR] [BUILD_DIR] - on the GPU host, from the repository root: every
# carried test binary and example (tools/gpu-carry.sh made CARRY_DIR on the build host), each
# run directly (a CTest file holds the build host's paths). Logs go to ./gpu-logs, one file a
# binary, and into $OUT/gpu-logs.tar.gz when $OUT is set (the device tool brings back only a
# few files); the last lines printed are a table: binary, exit status, its summary line.
# Knobs: GPU_TESTS (space-separated names to run, default all), GPU_SKIP (names not to run),
# GPU_JOBS (Criterion workers, 16), GPU_TEST_LIMIT (seconds per binary, 300),
# FUSEC_NCCL_LIBRARY (found when unset: the toolkit's, else the NCCL Python wheel's),
# FUSEC_DIFF_DAGS / FUSEC_DIFF_FIRST (test_gpu_diff's program count, 200 here so that the
# binary fits its time limit beside its 2^31-element test; tools/gpu-diff.sh runs thousands).
# Exit status: 0 when every binary passed.
set -u
cd "$(dirname "$0")/.." || exit 1
carry=${1:-gpu-carry}
build=${2:-build}
logs=$PWD/gpu-logs
mkdir -p "$logs"
# The binaries name $build/tools/fusec and write scratch files under $build: rebuild it here.
rm -rf "$build"
mkdir -p "$build"
cp -r "$carry/build/." "$build/"
export LD_LIBRARY_PATH=$PWD/$carry/libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# Sharded contexts use NCCL: NVLink multicast stays off on shared hosts (it can take the
# host's GPUs out of service), and the library is found where the host keeps it.
export NCCL_NVLS_ENABLE=0
if [ -z "${FUSEC_NCCL_LIBRARY:-}" ] && ! ldconfig -p 2>/dev/null | grep -q libnccl.so.2; then
  for f in /usr/local/cuda/lib64/libnccl.so.2 \
           $(python3 -c 'import nvidia.nccl, os; print(os.path.join(nvidia.nccl.__path__[0], "lib", "libnccl.so.2"))' 2>/dev/null); do
    if [ -e "$f" ]; then export FUSEC_NCCL_LIBRARY=$f; break; fi
  done
fi
echo "NCCL: ${FUSEC_NCCL_LIBRARY:-libnccl.so.2 on the library path}"
jobs=${GPU_JOBS:-16}
export FUSEC_DIFF_DAGS=${FUSEC_DIFF_DAGS:-200}
limit=${GPU_TEST_LIMIT:-300}   # seconds a binary may run (exit 124 when it is stopped)

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -2
status=0
summary=()
run_one() { # name, command...
  local name=$1 rc line
  shift
  local t0=$SECONDS
  timeout -k 10 "$limit" "$@" >"$logs/$name.log" 2>&1
  rc=$?
  # Criterion's closing line, else an example's last line.
  line=$(grep -E '^\[====\] Synthesis' "$logs/$name.log" | tail -1)
  [[ -z $line ]] && line=$(tail -1 "$logs/$name.log")
  summary+=("$(printf '%-28s rc=%-3s %4ss  %s' "$name" "$rc" $((SECONDS - t0)) "$line")")
  echo "${summary[-1]}"   # as it goes: a call cut short still shows how far it got
  if [[ $rc -ne 0 ]]; then status=1; fi
  [[ -n ${OUT:-} ]] && tar -czf "$OUT/gpu-logs.tar.gz" -C "$logs" .
}
want() {
  [[ " ${GPU_SKIP:-} " == *" $1 "* ]] && return 1
  [[ -z ${GPU_TESTS:-} || " $GPU_TESTS " == *" $1 "* ]]
}

for t in "$build"/tests/test_*; do
  name=${t##*/}
  want "$name" || continue
  run_one "$name" "$t" --jobs="$jobs"
done
for e in "$build"/examples/*; do
  name=example_${e##*/}
  want "$name" || continue
  run_one "$name" "$e"
done
echo "---- summary"
printf '%s\n' "${summary[@]}" | tee "$logs/summary.txt"
[[ -n ${OUT:-} ]] && tar -czf "$OUT/gpu-logs.tar.gz" -C "$logs" .
echo "gpu-tests: $( ((status == 0)) && echo 'all passed' || echo 'FAILURES (see logs)')"
exit $status
