#!/usr/bin/env bash
# Call 1: main at 94f317d (not yet on a GPU: the sharded layout of compactions and linalg ops,
# the complex_of change, the multi-result helpers): the GPU tests and 1200 random programs;
# then probes of issue 12's library rows as fusec builds them today (rfft, irfft, fft2,
# matmul + bias + relu, solve) beside CuPy and PyTorch.
GPU_SKIP="test_shard_diff test_gpu_diff test_composite" GPU_TEST_LIMIT=200 GPU_JOBS=8 tools/gpu-tests.sh gpu-carry build > $OUT/gpu-tests.txt 2>&1
grep -E "NVIDIA|gpu-tests:" $OUT/gpu-tests.txt | head -3
echo "binaries rc=0: $(grep -c 'rc=0' $OUT/gpu-tests.txt), other: $(grep 'rc=' $OUT/gpu-tests.txt | grep -vc 'rc=0')"
grep "rc=" $OUT/gpu-tests.txt | grep -v "rc=0"
grep -E "^test_(linalg|gpu_lib|runtime|fft|shard) " $OUT/gpu-tests.txt
export LD_LIBRARY_PATH=$PWD/gpu-carry/libs
timeout 120 build/tests/test_composite --filter 'composite/*on_the_gpu' 2>&1 | tail -1
GPU_DIFF_LIMIT=90 tools/gpu-diff.sh 0 1200 16 2>&1 | tail -3
P=bench/results/gpu-2026-11-28-session13/probe
for f in rfft irfft fft2 mbr solve; do
  printf "%-6s " $f; build/tools/fusec run $P/$f.fc --backend cuda --bench 2>&1 | grep -E "kernels|median|% of floor" | sed -E 's/ +/ /g; s/\(15 runs.*//; s/\(device-to.*//' | tr '\n' ' '; echo
done
timeout 200 python3 $P/peers.py 2>&1 | tail -8
