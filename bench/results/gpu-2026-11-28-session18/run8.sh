#!/usr/bin/env bash
# Call 8 (the final tree): issue 13's rows and W1-W13 beside every peer in one run
# (bench/run_i13.sh with the W rows added), start-up (bench/latency in session 17's order, by
# default and with FUSEC_GPU_PREALLOCATE=2G; bench/startup's NVRTC phases of W8), W8 in the
# fast-math tier against NumPy, compute-sanitizer memcheck of W9's two-output strips.
set -u
mkdir -p gpu-carry-x && tar xJf gpu-carry/bundle.tar.xz -C gpu-carry-x
export LD_LIBRARY_PATH=$PWD/gpu-carry-x/libs
mkdir -p build && cp -r gpu-carry-x/build/. build/
D=bench/results/gpu-2026-11-28-session18
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
W=W1,W2,W3,W4,W5,W6,W7,W8,W9,W10,W11,W13_user_l2norm,W13_builtin_l2norm,I13
export FUSEC_CACHE_DIR=$(mktemp -d /tmp/fc-cache-XXXX)
FUSEC_RUNS_ARGS="--only $W" PEERS_ARGS="--only $W" FUSEC_CARRY=gpu-carry-x FUSEC_BIN=$PWD/build/tools/fusec \
  timeout 300 bench/run_i13.sh /tmp/i13 > /tmp/run_i13.txt 2>&1; echo "run_i13 rc=$?"
cp /tmp/i13/RESULTS.md $OUT/i13-RESULTS.md 2>/dev/null
sed -n '/^| id | program | kernels/,/^Targets met/p' $OUT/i13-RESULTS.md | cut -d'|' -f2,4-7,12-16
tar czf $OUT/i13.tgz -C /tmp i13 run_i13.txt 2>/dev/null
for pre in 0 2G; do
  export FUSEC_CACHE_DIR=$(mktemp -d /tmp/fc-cache-XXXX)
  FUSEC_GPU_PREALLOCATE=$pre timeout 60 build/bench/latency --json $OUT/latency-pre$pre.json bench/fc/w01_tanh_sin.fc bench/fc/w04_softmax.fc bench/fc/w08_mandelbrot.fc bench/fc/w11_col_mean_scaled.fc > $OUT/latency-pre$pre.txt 2>&1; echo "latency $pre rc=$?"
  grep -A6 "^program" $OUT/latency-pre$pre.txt | head -6
done
timeout 60 build/bench/startup --arch sm_90 --cache-dir $(mktemp -d /tmp/fc-cache-XXXX) --nvrtc-phases 3 bench/fc/w08_mandelbrot.fc 2>&1 | tail -6
timeout 60 python3 bench/fast_math_diff.py --fusec build/tools/fusec bench/fc/w08_mandelbrot.fc --numpy-w8 2>&1 | tail -8
mkdir -p /tmp/s9 && cp $D/sanitize/box_blur.fc /tmp/s9/
timeout 60 bash bench/results/gpu-2026-11-28-session16/sanitize.sh build/tools/fusec /tmp/san8 /tmp/s9 2>&1 | tail -2
