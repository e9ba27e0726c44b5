#!/usr/bin/env bash
# Call 6: racecheck (shared-memory hazards) of the kernels this session changed or added, on
# the tree of call 5: the stencil kernel with reversed weights (direct convolutions), the
# batched linear algebra's helper kernels and the triangle copy.
export LD_LIBRARY_PATH=$PWD/gpu-carry/libs
mkdir -p build && cp -r gpu-carry/build/. build/
timeout 100 compute-sanitizer --tool racecheck build/tests/test_gpu_lib --filter 'gpu_lib/direct_convolutions_match_the_host' 2>&1 | tail -2
timeout 80 compute-sanitizer --tool racecheck build/tests/test_linalg --filter 'gpu_linalg/batched_against_the_host' 2>&1 | tail -2
