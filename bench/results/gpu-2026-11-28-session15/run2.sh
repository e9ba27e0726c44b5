#!/usr/bin/env bash
# Call 2 (after the half-precision rounding, outputs that feed outputs, the GELU op): every GPU
# test binary, 600 random programs, then alone: the f16 / bf16 GELU-chain rows with their peers,
# the Adam-like step (adam.fc: one kernel now) against the copy floor, W1, W10 and the host
# latency of a fused plan.
export LD_LIBRARY_PATH=$PWD/gpu-carry/libs
mkdir -p build && cp -r gpu-carry/build/. build/
R=bench/results/gpu-2026-11-28-session15
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
GPU_SKIP="test_shard_diff test_gpu_diff test_composite" GPU_TEST_LIMIT=150 GPU_JOBS=8 tools/gpu-tests.sh gpu-carry build > $OUT/gpu-tests.txt 2>&1 &
GPU_DIFF_LIMIT=90 tools/gpu-diff.sh 0 600 6 2>&1 | tail -2
wait
grep -E "gpu-tests:" $OUT/gpu-tests.txt | head -3
grep "rc=" $OUT/gpu-tests.txt | grep -v "rc=0" | sort -u
timeout 240 python3 bench/fusec_runs.py --fusec $PWD/build/tools/fusec --json $OUT/fusec-call2.json --only I13_gelu_f16,I13_gelu_bf16,W1,W10 --runs 9 --warmup 2 --no-sweep > /dev/null 2>&1; python3 -c "
import json; w=json.load(open('$OUT/fusec-call2.json'))['workloads']
for k,v in w.items():
    r=v.get('result') or {}; print(k, r.get('median_ms'), 'kernels', r.get('kernels'), 'floor %.1f%%' % (r.get('floor_pct') or 0), v.get('error') or '')"
timeout 60 build/tools/fusec run $R/adam.fc --backend cuda --bench --runs 9 --warmup 2 --json > $OUT/adam.json 2>&1; python3 -c "
import json; r=json.load(open('$OUT/adam.json')); print('adam', {k: r.get(k) for k in ('median_ms','kernels','floor_pct','floor_ms')})" 2>&1 | tail -1
timeout 200 python3 bench/peers.py --only I13_gelu_f16,I13_gelu_bf16 --no-sweep --no-latency --json $OUT/peers-call2.json 2>&1 | tail -5
timeout 60 build/bench/latency --no-child --json $OUT/latency-call2.json bench/fc/w01_tanh_sin.fc 2>&1 | tail -1
