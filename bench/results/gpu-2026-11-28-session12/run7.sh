#!/usr/bin/env bash
# Call 7: main with qr / eigh / eigvalsh merged (676ec11): the solver tests on the GPU, the
# cuSOLVER reference cases, 600 random programs (they now draw qr and eigh), memcheck of the
# new GPU test.
export LD_LIBRARY_PATH=$PWD/gpu-carry/libs
rm -rf build && mkdir -p build && cp -r gpu-carry/build/. build/
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 60 build/tests/test_linalg 2>&1 | grep -vE "^\[----\]   $" | grep -E "FAIL|ERR|Assert|Synthesis" | head -12
timeout 40 build/tests/test_composite --filter 'composite/linalg*' 2>&1 | tail -1
GPU_DIFF_LIMIT=45 tools/gpu-diff.sh 0 600 16 2>&1 | tail -2
timeout 40 compute-sanitizer --tool memcheck build/tests/test_linalg --filter 'gpu_linalg/qr*' 2>&1 | tail -2
