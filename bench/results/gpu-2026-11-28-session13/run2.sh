#!/usr/bin/env bash
# Call 2: main at eb29015 (FFTN: cuFFT's R2C / C2R and 2-D plans; sparse matrices on
# cuSPARSE; convolution's stencil kernel), none of it run on a GPU before: the GPU tests
# (test_sparse's and test_composite's GPU suites among them), 1200 random programs (they draw
# FFTN, sparse products and convolutions), the probes of call 1 again, then compute-sanitizer
# on the new kernels and library paths.
GPU_SKIP="test_shard_diff test_gpu_diff" GPU_TEST_LIMIT=240 GPU_JOBS=8 tools/gpu-tests.sh gpu-carry build > $OUT/gpu-tests.txt 2>&1
grep -E "NVIDIA|gpu-tests:" $OUT/gpu-tests.txt | head -3
echo "binaries rc=0: $(grep -c 'rc=0' $OUT/gpu-tests.txt), other: $(grep 'rc=' $OUT/gpu-tests.txt | grep -vc 'rc=0')"
grep "rc=" $OUT/gpu-tests.txt | grep -v "rc=0"
grep -E "^test_(linalg|gpu_lib|fft|sparse|composite) " $OUT/gpu-tests.txt
export LD_LIBRARY_PATH=$PWD/gpu-carry/libs
GPU_DIFF_LIMIT=90 tools/gpu-diff.sh 0 1200 16 2>&1 | tail -3
P=bench/results/gpu-2026-11-28-session13/probe
for f in rfft irfft fft2; do
  printf "%-6s " $f; build/tools/fusec run $P/$f.fc --backend cuda --bench 2>&1 | grep -E "kernels|median|% of floor" | sed -E 's/ +/ /g; s/\(15 runs.*//; s/\(device-to.*//' | tr '\n' ' '; echo
done
for f in bench/fc/i12_convolve2d_3x3.fc bench/fc/i12_convolve2d_31x31.fc; do
  printf "%-28s " ${f##*/}; build/tools/fusec run $f --backend cuda --bench 2>&1 | grep -E "kernels|median|% of floor" | sed -E 's/ +/ /g; s/\(15 runs.*//; s/\(device-to.*//' | tr '\n' ' '; echo
done
timeout 120 compute-sanitizer --tool memcheck build/tests/test_sparse --filter 'gpu_sparse/*' 2>&1 | tail -2
timeout 120 compute-sanitizer --tool memcheck build/tests/test_fft 2>&1 | tail -2
cat > /tmp/conv_small.fc <<'X'
x = input f32 [67, 45]
k = input f32 [3, 3]
w = input f64 [9, 5]
y = signal.convolve2d(x, k, mode="same", boundary="symm")
z = signal.correlate2d(w, w[0:3, 0:2], boundary="wrap", method="direct")
r = fft.irfft2(fft.rfft2(x))
out y, z, r
X
for tool in memcheck racecheck; do
  timeout 100 compute-sanitizer --tool $tool build/tools/fusec run /tmp/conv_small.fc --backend cuda 2>&1 | grep -E "ERROR SUMMARY|RACECHECK SUMMARY|rror" | head -3
done
