#!/usr/bin/env bash
# Call 10 (the final tree): W8's cold compile by phase (FUSEC_LOG=timing, three new processes
# on empty caches) and bench/latency in session 17's order again, to see where call 8's 86 ms
# went.
set -u
mkdir -p gpu-carry-x && tar xJf gpu-carry/bundle.tar.xz -C gpu-carry-x
export LD_LIBRARY_PATH=$PWD/gpu-carry-x/libs
mkdir -p build && cp -r gpu-carry-x/build/. build/
for i in 1 2 3; do
  FUSEC_LOG=timing timeout 30 build/tools/fusec run bench/fc/w08_mandelbrot.fc --backend cuda --cache-dir $(mktemp -d /tmp/fc-cache-XXXX) 2>&1 | grep -iE "timing|compile|nvrtc|plan|load|run " | head -8
  echo --
done
export FUSEC_CACHE_DIR=$(mktemp -d /tmp/fc-cache-XXXX)
timeout 60 build/bench/latency --no-overhead bench/fc/w01_tanh_sin.fc bench/fc/w04_softmax.fc bench/fc/w08_mandelbrot.fc bench/fc/w11_col_mean_scaled.fc 2>&1 | grep -A5 "^program"
