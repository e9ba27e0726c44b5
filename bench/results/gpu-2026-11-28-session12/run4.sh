#!/usr/bin/env bash
# Call 4: main after the linalg merge (b0 below) and the warp-chunk scan tiles: the GPU tests
# (test_linalg and test_composite's cuSOLVER cases first run here), 1200 random programs of the
# differential test, the scan / compaction / take rows with the tile kernels' launch bound
# (fusec-lb5: at most 48 registers, 5 blocks a multiprocessor; fusec-nolb: none), then
# compute-sanitizer's memcheck of the solver tests (last: nothing runs beside it).
GPU_SKIP="test_shard_diff test_gpu_diff" GPU_TEST_LIMIT=200 GPU_JOBS=8 tools/gpu-tests.sh gpu-carry build > $OUT/gpu-tests.txt 2>&1
grep -E "NVIDIA|^test_|^example|gpu-tests:" $OUT/gpu-tests.txt | grep -v "rc=0" | head -20
echo "binaries rc=0: $(grep -c 'rc=0' $OUT/gpu-tests.txt), other: $(grep 'rc=' $OUT/gpu-tests.txt | grep -vc 'rc=0')"
grep -E "^test_(linalg|gpu_lib|composite|runtime) " $OUT/gpu-tests.txt
GPU_DIFF_LIMIT=90 tools/gpu-diff.sh 0 1200 16 2>&1 | tail -3
export LD_LIBRARY_PATH=$PWD/gpu-carry/libs
python3 -c "import numpy as np; np.save('/tmp/take_i.npy', np.random.default_rng(11).integers(0, 1 << 26, 1 << 24, dtype=np.int32))"
bench() { v=$1; p=$2; shift 2; printf "%-5s %-14s " $v $(basename $p .fc); gpu-carry/variants/fusec-$v run $p "$@" --backend cuda --bench 2>&1 | grep -E "median|% of floor" | sed -E 's/ +/ /g; s/\(15 runs.*//; s/\(device-to.*//' | tr '\n' ' '; echo; }
for v in lb5 nolb; do
  for p in bench/fc/i11_cumsum.fc bench/micro/cummax_f32.fc bench/micro/cumsum_f64.fc bench/micro/cumsum_i32.fc; do bench $v $p; done
  bench $v bench/fc-data/i11_compress.fc --time-build
done
bench lb5 bench/fc/i11_take.fc --input i=/tmp/take_i.npy --floor-bytes 671088640
timeout 100 compute-sanitizer --tool memcheck build/tests/test_linalg --filter 'gpu_linalg/*' 2>&1 | tail -3
