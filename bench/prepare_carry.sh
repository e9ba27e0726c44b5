#!/bin/sh
# bench/prepare_carry.sh [BUILD_DIR] [CARRY_DIR] - on the build host: builds fusec's CLI,
# bench/latency and bench/libdirect (where it can) and puts them, with every library they need
# that the GPU host lacks, into CARRY_DIR (bin/ and libs/) for bench/run_all.sh and run_i12.sh. Defaults: build-gpu-bench, gpu-bench.
# CARRY_DIR must be git-ignored (.git/info/exclude) and named in the device call's carry.
set -eu
cd "$(dirname "$0")/.."
build=${1:-build-gpu-bench}
carry=${2:-gpu-bench}
collect=${COLLECT_LIBS:-tools/collect-libs.sh}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFUSEC_BUILD_TESTS=OFF \
  -DFUSEC_BUILD_EXAMPLES=OFF >/dev/null
cmake --build "$build" -j "${JOBS:-2}" --target fusec_cli bench_latency
# bench/libdirect (issue 12's libraries called directly), where the toolkit has cuSOLVER,
# cuFFT, cuSPARSE and cuBLASLt; else bench/run_i12.sh builds it on the GPU host
bins="$build/tools/fusec $build/bench/latency"
if cmake --build "$build" -j "${JOBS:-2}" --target bench_libdirect >/dev/null 2>&1; then
  bins="$bins $build/bench/libdirect"
else
  echo "prepare_carry.sh: note: no bench_libdirect target here (run_i12.sh builds it there)" >&2
fi
rm -rf "$carry"
mkdir -p "$carry/bin"
# shellcheck disable=SC2086
cp $bins "$carry/bin/"
# shellcheck disable=SC2046
sh "$collect" "$carry/libs" $(for b in $bins; do echo "$carry/bin/${b##*/}"; done)
if git check-ignore -q "$carry/bin/fusec" 2>/dev/null; then :; else
  echo "prepare_carry.sh: note: $carry is not git-ignored; add /$carry/ to .git/info/exclude" >&2
fi
du -sh "$carry"
echo "on the GPU host: FUSEC_CARRY=$carry bench/run_all.sh  (device call: carry [\"$carry\"])"
echo "issue 12's rows alone: FUSEC_CARRY=$carry bench/run_i12.sh RESULTS_DIR"
