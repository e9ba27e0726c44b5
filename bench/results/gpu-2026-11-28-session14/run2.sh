#!/usr/bin/env bash
# Call 2: main after the merges of linalg-perf (one-pass triangle copy for cholesky and qr,
# svd without transposes), libplan (library calls captured into the plans' CUDA graphs, owned
# and counted workspaces) and the sparse check memo: the GPU tests (test_runtime again with
# graphs off), 400 random programs, compute-sanitizer on the triangle kernel and the graph
# tests, then alone: the host overhead of a cached plan with a library call, and the I12 rows
# that changed beside the libraries called directly.
export LD_LIBRARY_PATH=$PWD/gpu-carry/libs
mkdir -p build && cp -r gpu-carry/build/. build/
GPU_SKIP="test_shard_diff test_gpu_diff test_composite" GPU_TEST_LIMIT=150 GPU_JOBS=8 tools/gpu-tests.sh gpu-carry build > $OUT/gpu-tests.txt 2>&1 &
GPU_DIFF_LIMIT=90 tools/gpu-diff.sh 0 400 6 2>&1 | tail -2
wait
grep -E "NVIDIA|gpu-tests:" $OUT/gpu-tests.txt | head -3
grep -E "^test_(linalg|sparse|fft|gpu_lib|runtime|cli_run) " $OUT/gpu-tests.txt | sort -u
grep "rc=" $OUT/gpu-tests.txt | grep -v "rc=0" | sort -u
FUSEC_CUDA_GRAPHS=0 timeout 100 build/tests/test_runtime > $OUT/runtime-nographs.txt 2>&1; echo "graphs off rc=$?: $(tail -1 $OUT/runtime-nographs.txt)"
timeout 60 build/tests/test_runtime --filter 'gpu/library*' --verbose 2>&1 | grep -E "FAIL|PASS|Assert|graph" | head -20
timeout 100 compute-sanitizer --tool memcheck build/tests/test_linalg --filter 'gpu_linalg/cholesky_triangle_copy' 2>&1 | tail -2
timeout 100 compute-sanitizer --tool memcheck build/tests/test_runtime --filter 'gpu/library_plans_replay*' 2>&1 | tail -2
timeout 60 build/bench/latency --no-child --json $OUT/latency-call2.json bench/fc/w01_tanh_sin.fc 2>&1 | tail -9
timeout 200 python3 bench/fusec_runs.py --fusec $PWD/build/tools/fusec --json $OUT/fusec-call2.json --only I12_matmul_bias_relu,I12_spmv,I12_svd,I12_cholesky --runs 7 --warmup 2 --no-sweep > $OUT/fusec-call2.log 2>&1; tail -6 $OUT/fusec-call2.log
timeout 120 build/bench/libdirect --runs 7 --warmup 2 --only copy,I12_matmul_bias_relu,I12_spmv,I12_svd,I12_cholesky --json $OUT/libdirect-call2.json 2>&1 | tail -6
