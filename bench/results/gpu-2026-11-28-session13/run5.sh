#!/usr/bin/env bash
# Call 5: slogdet's NaN check looks at A itself where getrf reports a zero pivot: the two
# random programs calls 3 and 4 found (seeds 793, 872) and test_linalg's GPU tests.
export LD_LIBRARY_PATH=$PWD/gpu-carry/libs
mkdir -p build && cp -r gpu-carry/build/. build/
for s in 793 872; do GPU_DIFF_LIMIT=60 tools/gpu-diff.sh $s 1 1 2>&1 | grep "gpu-diff: 1 of"; done
timeout 40 build/tests/test_linalg --filter 'gpu_linalg/*' 2>&1 | tail -1
