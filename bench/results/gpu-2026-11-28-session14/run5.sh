#!/usr/bin/env bash
# Call 5 (after the last change to GPU code: convolutions read their flipped weights in
# place): every GPU test binary (test_gpu_lib's new direct_convolutions_match_the_host among
# them), 600 random programs, memcheck on the stencil kernels' reversed reads, then alone: the
# host overhead of a cached plan with a library call, fusec's I12 rows beside the libraries
# called directly, and the peers of the two convolution rows (call 3's peer file did not come
# back).
export LD_LIBRARY_PATH=$PWD/gpu-carry/libs
mkdir -p build && cp -r gpu-carry/build/. build/
GPU_SKIP="test_shard_diff test_gpu_diff test_composite" GPU_TEST_LIMIT=150 GPU_JOBS=8 tools/gpu-tests.sh gpu-carry build > $OUT/gpu-tests.txt 2>&1 &
GPU_DIFF_LIMIT=90 tools/gpu-diff.sh 0 600 6 2>&1 | tail -2
wait
grep -E "NVIDIA|gpu-tests:" $OUT/gpu-tests.txt | head -3
grep -E "^test_(linalg|sparse|fft|gpu_lib|runtime|cli_run) " $OUT/gpu-tests.txt | sort -u
grep "rc=" $OUT/gpu-tests.txt | grep -v "rc=0" | sort -u
timeout 120 compute-sanitizer --tool memcheck build/tests/test_gpu_lib --filter 'gpu_lib/direct_convolutions_match_the_host' 2>&1 | tail -2
timeout 60 build/bench/latency --no-child --json $OUT/latency-call5.json bench/fc/w01_tanh_sin.fc 2>&1 | tail -1
timeout 240 python3 bench/fusec_runs.py --fusec $PWD/build/tools/fusec --json $OUT/fusec-call5.json --only I12 --runs 7 --warmup 2 --no-sweep > /dev/null 2>&1; python3 -c "
import json; w=json.load(open('$OUT/fusec-call5.json'))['workloads']
for k,v in w.items():
    r=v.get('result') or {}; print(k, r.get('median_ms'), 'kernels', r.get('kernels'), 'floor %.1f%%' % (r.get('floor_pct') or 0), v.get('error') or '')"
timeout 120 build/bench/libdirect --runs 7 --warmup 2 --only I12,copy --json $OUT/libdirect-call5.json 2>&1 | tail -10
timeout 150 python3 bench/peers.py --only I12_convolve2d_3x3,I12_convolve2d_31x31 --no-sweep --no-latency --json $OUT/peers-call5.json 2>&1 | tail -4
