#!/usr/bin/env bash
# Call 4: main after the slogdet fix: the two random programs call 3 found (seeds 793, 872),
# test_linalg's GPU tests, then issue 12's rows in one run: fusec, CuPy, PyTorch and the
# libraries called directly (bench/run_i12.sh; 7 timed runs each, to fit the budget left).
export LD_LIBRARY_PATH=$PWD/gpu-carry/libs
mkdir -p build && cp -r gpu-carry/build/. build/
for s in 793 872; do GPU_DIFF_LIMIT=60 tools/gpu-diff.sh $s 1 1 2>&1 | grep "gpu-diff: 1 of"; done
timeout 40 build/tests/test_linalg --filter 'gpu_linalg/*' 2>&1 | tail -1
BENCH_RUNS=7 BENCH_WARMUP=2 PEERS_DEADLINE_S=110 FUSEC_CARRY=gpu-carry FUSEC_BIN=$PWD/build/tools/fusec LIBDIRECT_BIN=$PWD/build/bench/libdirect timeout 230 bench/run_i12.sh $OUT > /dev/null 2>&1
tail -32 $OUT/run_all.log
