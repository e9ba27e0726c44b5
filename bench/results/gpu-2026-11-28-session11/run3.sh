#!/usr/bin/env bash
# Third call: issue 11's must-show rows alone on the GPU (the first call's take, scatter_add
# and compress rows ran beside a compute-sanitizer process its timeout had left running):
# every I11 row and W1 with fusec, then CuPy and PyTorch, in one call.
export LD_LIBRARY_PATH=$PWD/gpu-carry/libs
rm -rf build && mkdir -p build && cp -r gpu-carry/build/. build/
nvidia-smi --query-gpu=name,driver_version,clocks.max.memory --format=csv,noheader
nvidia-smi --query-compute-apps=pid,name --format=csv,noheader
timeout 200 python3 bench/fusec_runs.py --fusec build/tools/fusec --json $OUT/fusec.json --only W1,I11 --no-sweep 2>&1 | grep -E "^(W1|I11)"
timeout 200 python3 bench/peers.py --only I11 --no-sweep --no-latency --json $OUT/peers.json 2>&1 | tail -11
