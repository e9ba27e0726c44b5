#!/usr/bin/env bash
# Call 9 (main b2f99f8, the final tree): every carried GPU test binary and example
# (tools/gpu-tests.sh), after the last two GPU-code commits that call 8 checked only in part.
set -u
mkdir -p gpu-carry-x && tar xJf gpu-carry/bundle.tar.xz -C gpu-carry-x
export LD_LIBRARY_PATH=$PWD/gpu-carry-x/libs
mkdir -p build && cp -r gpu-carry-x/build/. build/
GPU_SKIP="test_shard_diff test_gpu_diff test_composite" GPU_TEST_LIMIT=150 GPU_JOBS=8 timeout 200 tools/gpu-tests.sh gpu-carry-x build > $OUT/gpu-tests.txt 2>&1; echo "gpu-tests rc=$?"
grep -E "gpu-tests:" $OUT/gpu-tests.txt | head -3
grep "rc=" $OUT/gpu-tests.txt | grep -v "rc=0" | sort -u
