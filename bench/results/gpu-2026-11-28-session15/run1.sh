#!/usr/bin/env bash
# Call 1 (the GELU epilogue): test_gpu_lib (the epilogue test's GELU forms among them) and
# test_linalg, 300 random programs (gelu and gelu_tanh among the ops), memcheck on the
# epilogue test, then alone: fusec's two matmul-epilogue rows beside cuBLASLt called directly,
# and the GELU row's peers.
export LD_LIBRARY_PATH=$PWD/gpu-carry/libs
mkdir -p build && cp -r gpu-carry/build/. build/
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
(build/tests/test_gpu_lib > $OUT/test_gpu_lib.txt 2>&1; echo "test_gpu_lib rc=$?") &
GPU_DIFF_LIMIT=90 tools/gpu-diff.sh 0 300 6 2>&1 | tail -2
wait
tail -2 $OUT/test_gpu_lib.txt
grep -B2 -A6 "FAIL" $OUT/test_gpu_lib.txt | head -40
timeout 150 compute-sanitizer --tool memcheck build/tests/test_gpu_lib --filter 'gpu_lib/matmul_epilogues_match_the_host' 2>&1 | tail -2
timeout 200 python3 bench/fusec_runs.py --fusec $PWD/build/tools/fusec --json $OUT/fusec-call1.json --only I12_matmul_bias_relu,I12_matmul_bias_gelu --runs 7 --warmup 2 --no-sweep > /dev/null 2>&1; python3 -c "
import json; w=json.load(open('$OUT/fusec-call1.json'))['workloads']
for k,v in w.items():
    r=v.get('result') or {}; print(k, r.get('median_ms'), 'kernels', r.get('kernels'), v.get('error') or '')"
timeout 120 build/bench/libdirect --runs 7 --warmup 2 --only I12_matmul_bias_relu,I12_matmul_bias_gelu,I12_matmul,copy --json $OUT/libdirect-call1.json 2>&1 | tail -6
timeout 200 python3 bench/peers.py --only I12_matmul_bias_gelu --no-sweep --no-latency --json $OUT/peers-call1.json 2>&1 | tail -4
