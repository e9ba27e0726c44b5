#!/usr/bin/env bash
# Call 3 (the last change to GPU code is in this tree): main after the merge of the batched
# linear algebra, with kept intermediates and the graph tests' context: every GPU test
# binary, test_runtime again under FUSEC_CUDA_GRAPHS=0, 800 random programs, compute-sanitizer
# on the batched helper kernels, then alone on the GPU: the host overhead of a cached plan with
# a library call (bench/latency) and issue 12's rows in one run beside CuPy, PyTorch and the
# libraries called directly (bench/run_i12.sh, 7 timed runs after 2 warm-ups).
export LD_LIBRARY_PATH=$PWD/gpu-carry/libs
mkdir -p build && cp -r gpu-carry/build/. build/
GPU_SKIP="test_shard_diff test_gpu_diff test_composite" GPU_TEST_LIMIT=150 GPU_JOBS=8 tools/gpu-tests.sh gpu-carry build > $OUT/gpu-tests.txt 2>&1 &
GPU_DIFF_LIMIT=90 tools/gpu-diff.sh 0 800 6 2>&1 | tail -2
wait
grep -E "NVIDIA|gpu-tests:" $OUT/gpu-tests.txt | head -3
grep -E "^test_(linalg|sparse|fft|gpu_lib|runtime|cli_run) " $OUT/gpu-tests.txt | sort -u
grep "rc=" $OUT/gpu-tests.txt | grep -v "rc=0" | sort -u
FUSEC_CUDA_GRAPHS=0 timeout 100 build/tests/test_runtime > $OUT/runtime-nographs.txt 2>&1; echo "graphs off rc=$?: $(tail -1 $OUT/runtime-nographs.txt)"
timeout 120 compute-sanitizer --tool memcheck build/tests/test_linalg --filter 'gpu_linalg/batched_against_the_host' 2>&1 | tail -2
timeout 60 build/bench/latency --no-child --json $OUT/latency-call3.json bench/fc/w01_tanh_sin.fc 2>&1 | tail -3
BENCH_RUNS=7 BENCH_WARMUP=2 PEERS_DEADLINE_S=110 FUSEC_CARRY=gpu-carry FUSEC_BIN=$PWD/build/tools/fusec LIBDIRECT_BIN=$PWD/build/bench/libdirect timeout 270 bench/run_i12.sh $OUT > /dev/null 2>&1
tail -22 $OUT/run_all.log
