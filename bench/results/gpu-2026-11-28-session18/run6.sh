#!/usr/bin/env bash
# Call 6 (branch cand: main with planfast, colvec, nvrtcfast and the preallocation option):
# W7, W11 and issue 13's rows by fusec (column vectors), W11 at 4x, start-up (bench/latency
# by default and with FUSEC_GPU_PREALLOCATE=2G; bench/plan_time; bench/startup's NVRTC
# phases), the preallocation test, compute-sanitizer over the column-vector kernels.
set -u
mkdir -p gpu-carry-x && tar xJf gpu-carry/bundle.tar.xz -C gpu-carry-x
export LD_LIBRARY_PATH=$PWD/gpu-carry-x/libs
mkdir -p build && cp -r gpu-carry-x/build/. build/
D=bench/results/gpu-2026-11-28-session18
export FUSEC_CACHE_DIR=$(mktemp -d /tmp/fc-cache-XXXX)
timeout 100 python3 bench/fusec_runs.py --fusec $PWD/build/tools/fusec --json $OUT/fusec-w.json \
  --only W7,W11,I13 --runs 15 --warmup 3 --no-sweep > /dev/null 2>&1; echo "fusec_runs rc=$?"
python3 $D/rows.py $OUT/fusec-w.json
source $D/one.sh
one w11x4 -- $D/w11_x4.fc; one w11 -- bench/fc/w11_col_mean_scaled.fc; one w11 -- bench/fc/w11_col_mean_scaled.fc
build/tests/test_runtime --filter 'gpu/preallocate*' 2>&1 | tail -1
for pre in 0 2G; do
  export FUSEC_CACHE_DIR=$(mktemp -d /tmp/fc-cache-XXXX)
  FUSEC_GPU_PREALLOCATE=$pre timeout 90 build/bench/latency --no-overhead bench/fc/w08_mandelbrot.fc bench/fc/w01_tanh_sin.fc bench/fc/w04_softmax.fc bench/fc/w11_col_mean_scaled.fc > $OUT/latency-pre$pre.txt 2>&1
  echo "== latency FUSEC_GPU_PREALLOCATE=$pre"; grep -A7 "^program" $OUT/latency-pre$pre.txt | head -9
done
timeout 60 build/bench/plan_time --reps 300 bench/fc/w08_mandelbrot.fc bench/fc/w04_softmax.fc 2>&1 | tail -4
C=$(mktemp -d /tmp/fc-cache-XXXX)
timeout 90 build/bench/startup --arch sm_90 --cache-dir $C --nvrtc-phases 3 bench/fc/w08_mandelbrot.fc bench/fc/w01_tanh_sin.fc 2>&1 | tail -8
bash bench/results/gpu-2026-11-28-session16/sanitize.sh build/tools/fusec /tmp/san6 $D/sanitize 2>&1 | grep col_vectors
