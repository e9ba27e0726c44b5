#!/usr/bin/env bash
# Call 1: main at 8106d55 (the cuBLASLt epilogue) with session 13's last commits that never ran
# on the GPU (b9a8c4f's slogdet fix, the .fc sparse spellings, 32c0fe2): the GPU tests, the two
# random programs session 13 found (seeds 793, 872), then alone on the GPU: fusec's I12 rows
# that changed (matmul_bias_relu: now one cuBLASLt call; spmv: its first fusec run; svd and
# cholesky: the baseline for the helpers' changes) beside the libraries called directly, and
# the host overhead of a cached plan with a library call (bench/latency's matmul chain).
export LD_LIBRARY_PATH=$PWD/gpu-carry/libs
mkdir -p build && cp -r gpu-carry/build/. build/
GPU_SKIP="test_shard_diff test_gpu_diff test_composite" GPU_TEST_LIMIT=150 GPU_JOBS=8 tools/gpu-tests.sh gpu-carry build > $OUT/gpu-tests.txt 2>&1 &
for s in 793 872; do GPU_DIFF_LIMIT=60 tools/gpu-diff.sh $s 1 1 2>&1 | grep "gpu-diff: 1 of"; done
GPU_DIFF_LIMIT=90 tools/gpu-diff.sh 0 400 6 2>&1 | tail -2
wait
grep -E "NVIDIA|gpu-tests:" $OUT/gpu-tests.txt | head -3
grep -E "^test_(linalg|sparse|fft|gpu_lib) " $OUT/gpu-tests.txt | sort -u
grep "rc=" $OUT/gpu-tests.txt | grep -v "rc=0" | sort -u
timeout 60 build/tests/test_gpu_lib --filter 'gpu_lib/matmul_epilogue*' 2>&1 | tail -3
timeout 200 python3 bench/fusec_runs.py --fusec $PWD/build/tools/fusec --json $OUT/fusec-call1.json --only I12_matmul_bias_relu,I12_spmv,I12_svd,I12_cholesky --runs 7 --warmup 2 --no-sweep > $OUT/fusec-call1.log 2>&1; tail -8 $OUT/fusec-call1.log
timeout 120 build/bench/libdirect --runs 7 --warmup 2 --only copy,I12_matmul_bias_relu,I12_matmul,I12_spmv,I12_svd,I12_cholesky --json $OUT/libdirect-call1.json 2>&1 | tail -9
timeout 60 build/bench/latency --no-child --json $OUT/latency-call1.json bench/fc/w01_tanh_sin.fc 2>&1 | tail -8
