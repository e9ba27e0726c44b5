#!/usr/bin/env bash
# Call 4 (after the last change to GPU code: slogdet's NaN guard in the graph): every GPU test
# binary, test_runtime under FUSEC_CUDA_GRAPHS=0, 600 random programs, then alone: the host
# overhead of a cached plan with a library call and fusec's I12 rows beside the libraries
# called directly (the peers ran in call 3 on the same tree but for this guard, which no I12
# row uses).
export LD_LIBRARY_PATH=$PWD/gpu-carry/libs
mkdir -p build && cp -r gpu-carry/build/. build/
GPU_SKIP="test_shard_diff test_gpu_diff test_composite" GPU_TEST_LIMIT=150 GPU_JOBS=8 tools/gpu-tests.sh gpu-carry build > $OUT/gpu-tests.txt 2>&1 &
GPU_DIFF_LIMIT=90 tools/gpu-diff.sh 0 600 6 2>&1 | tail -2
wait
grep -E "NVIDIA|gpu-tests:" $OUT/gpu-tests.txt | head -3
grep -E "^test_(linalg|sparse|fft|gpu_lib|runtime|cli_run) " $OUT/gpu-tests.txt | sort -u
grep "rc=" $OUT/gpu-tests.txt | grep -v "rc=0" | sort -u
FUSEC_CUDA_GRAPHS=0 timeout 100 build/tests/test_runtime > $OUT/runtime-nographs.txt 2>&1; echo "graphs off rc=$?: $(tail -1 $OUT/runtime-nographs.txt)"
timeout 60 build/bench/latency --no-child --json $OUT/latency-call4.json bench/fc/w01_tanh_sin.fc 2>&1 | tail -3
timeout 240 python3 bench/fusec_runs.py --fusec $PWD/build/tools/fusec --json $OUT/fusec-call4.json --only I12 --runs 7 --warmup 2 --no-sweep > $OUT/fusec-call4.log 2>&1; grep -E "^I12" $OUT/fusec-call4.log
timeout 120 build/bench/libdirect --runs 7 --warmup 2 --only I12,copy --json $OUT/libdirect-call4.json 2>&1 | tail -10
