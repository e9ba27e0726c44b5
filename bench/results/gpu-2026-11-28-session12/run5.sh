#!/usr/bin/env bash
# Call 5: main at 899cdbc (the linalg fix 4fd385d merged; scans, compaction, gathers and draws
# as committed): the GPU tests, 1200 random programs, issue 11's rows with fusec then CuPy and
# PyTorch in the same call, the normal row without the draws' launch bound (fusec-nodraw),
# then compute-sanitizer (memcheck and racecheck of small scans and a compaction, memcheck of
# the solver tests), last so that nothing runs beside it.
GPU_SKIP="test_shard_diff test_gpu_diff test_composite" GPU_TEST_LIMIT=200 GPU_JOBS=8 tools/gpu-tests.sh gpu-carry build > $OUT/gpu-tests.txt 2>&1
grep -E "NVIDIA|gpu-tests:" $OUT/gpu-tests.txt | head -3
echo "binaries rc=0: $(grep -c 'rc=0' $OUT/gpu-tests.txt), other: $(grep 'rc=' $OUT/gpu-tests.txt | grep -vc 'rc=0')"
grep "rc=" $OUT/gpu-tests.txt | grep -v "rc=0"
grep -E "^test_(linalg|gpu_lib|runtime|fft) " $OUT/gpu-tests.txt
export LD_LIBRARY_PATH=$PWD/gpu-carry/libs
timeout 120 build/tests/test_composite --filter 'composite/*on_the_gpu' 2>&1 | tail -1
GPU_DIFF_LIMIT=90 tools/gpu-diff.sh 0 1200 16 2>&1 | tail -3
timeout 200 python3 bench/fusec_runs.py --fusec build/tools/fusec --json $OUT/fusec.json --only W1,I11 --no-sweep 2>&1 | grep -E "^(W1|I11)"
timeout 240 python3 bench/peers.py --only I11 --no-sweep --no-latency --json $OUT/peers.json 2>&1 | tail -12
for v in nodraw; do printf "%-7s " $v; gpu-carry/variants/fusec-$v run bench/fc/i11_normal.fc --backend cuda --bench 2>&1 | grep -E "median|% of floor" | sed -E 's/ +/ /g; s/\(15 runs.*//; s/\(device-to.*//' | tr '\n' ' '; echo; done
printf "main    "; build/tools/fusec run bench/fc/i11_normal.fc --backend cuda --bench 2>&1 | grep -E "median|% of floor" | sed -E 's/ +/ /g; s/\(15 runs.*//; s/\(device-to.*//' | tr '\n' ' '; echo
for tool in memcheck racecheck; do
  timeout 100 compute-sanitizer --tool $tool build/tools/fusec run bench/micro/scans_small.fc --backend cuda 2>&1 | grep -E "ERROR SUMMARY|error" | head -3
done
timeout 90 compute-sanitizer --tool memcheck build/tests/test_linalg --filter 'gpu_linalg/*' 2>&1 | tail -2
