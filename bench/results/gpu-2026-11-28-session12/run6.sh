#!/usr/bin/env bash
# Call 6: main at f8ed3f4 (the draws' launch bound taken out again): the tests whose kernels it
# touches (test_random, test_runtime), the cuSOLVER and contraction reference cases on the GPU
# (test_composite), test_linalg, and W1 / I11_normal with fusec.
export LD_LIBRARY_PATH=$PWD/gpu-carry/libs
rm -rf build && mkdir -p build && cp -r gpu-carry/build/. build/
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for t in test_random test_runtime test_linalg; do printf "%-14s " $t; timeout 120 build/tests/$t 2>&1 | tail -1; done
timeout 150 build/tests/test_composite --filter 'composite/@(linalg|contract)*' 2>&1 | grep -E "FAIL|Synthesis" | tail -4
timeout 100 python3 bench/fusec_runs.py --fusec build/tools/fusec --json $OUT/fusec.json --only W1,I11_normal --no-sweep 2>&1 | grep -E "^(W1|I11)"
