#!/usr/bin/env bash
# Call 3: main at the svd merge (after call 2's fixes): test_sparse and test_linalg (svd's
# GPU tests), test_composite's GPU replays (linalg with the new svd / lstsq / pinv /
# matrix_rank cases, convolution) beside 1200 random programs, then compute-sanitizer on the
# stencil kernel, the R2C / C2R transforms and cuSOLVER's gesvd.
export LD_LIBRARY_PATH=$PWD/gpu-carry/libs
GPU_SKIP="test_shard_diff test_gpu_diff test_composite" GPU_TEST_LIMIT=120 GPU_JOBS=8 tools/gpu-tests.sh gpu-carry build > $OUT/gpu-tests.txt 2>&1
grep -E "NVIDIA|gpu-tests:" $OUT/gpu-tests.txt | head -3
grep -E "^test_(linalg|sparse|fft|gpu_lib) " $OUT/gpu-tests.txt | sort -u
grep "rc=" $OUT/gpu-tests.txt | grep -v "rc=0" | sort -u
export FUSEC_CACHE_DIR=/tmp/fc-composite-cache
for t in linalg_numpy_reference_on_the_gpu convolve_numpy_reference_on_the_gpu numpy_reference_on_the_gpu contract_numpy_reference_on_the_gpu; do
  ( s=$(date +%s); timeout 230 build/tests/test_composite --filter "composite/$t" > $OUT/composite-$t.txt 2>&1; echo "composite/$t rc=$? $(( $(date +%s) - s ))s: $(tail -1 $OUT/composite-$t.txt)" ) &
done
unset FUSEC_CACHE_DIR
GPU_DIFF_LIMIT=90 tools/gpu-diff.sh 0 1200 12 2>&1 | tail -3
wait
timeout 60 compute-sanitizer --tool memcheck build/tests/test_linalg --filter 'gpu_linalg/*' 2>&1 | tail -2
cat > /tmp/conv_small.fc <<'X'
x = input f32 [67, 45]
k = input f32 [3, 3]
w = input f64 [9, 5]
y = signal.convolve2d(x, k, mode="same", boundary="symm")
z = signal.correlate2d(w, w[0:3, 0:2], boundary="wrap", method="direct")
r = fft.irfft2(fft.rfft2(x))
u, s, vh = linalg.svd(w)
out y, z, r, u, s, vh
X
for tool in memcheck racecheck; do
  timeout 60 compute-sanitizer --tool $tool build/tools/fusec run /tmp/conv_small.fc --backend cuda > $OUT/san-$tool.txt 2>&1; echo "rc=$?"; grep -E "SUMMARY|rror" $OUT/san-$tool.txt | head -3
done
