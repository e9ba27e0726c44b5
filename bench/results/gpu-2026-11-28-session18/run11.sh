#!/usr/bin/env bash
# Call 11 (the final code, f3d4662): W12 (matmul, FFT) by fusec, which calls 8-10 left out.
set -u
mkdir -p gpu-carry-x && tar xJf gpu-carry/bundle.tar.xz -C gpu-carry-x
export LD_LIBRARY_PATH=$PWD/gpu-carry-x/libs
mkdir -p build && cp -r gpu-carry-x/build/. build/
export FUSEC_CACHE_DIR=$(mktemp -d /tmp/fc-cache-XXXX)
timeout 100 python3 bench/fusec_runs.py --fusec $PWD/build/tools/fusec --json $OUT/fusec-w12.json \
  --only W12 --runs 15 --warmup 3 --no-sweep > /dev/null 2>&1; echo "fusec_runs rc=$?"
python3 bench/results/gpu-2026-11-28-session18/rows.py $OUT/fusec-w12.json
