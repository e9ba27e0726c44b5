#!/usr/bin/env bash
# Second call: the in-place update test after its allocation assertion was corrected; racecheck
# of the sort test that covers every pass kernel; the take / scatter_add rows with the tree of
# 549acfa (session 10's last, gpu-carry/old-fusec) beside this session's, and an ncu profile of
# this session's take kernel.
export LD_LIBRARY_PATH=$PWD/gpu-carry/libs NCCL_NVLS_ENABLE=0
rm -rf build && mkdir -p build && cp -r gpu-carry/build/. build/
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
( timeout -k 5 200 $cs --tool racecheck --print-limit 20 build/tests/test_gpu_lib --jobs=1 \
    --filter 'gpu_lib/sort_and_argsort*' > $OUT/racecheck-sort.log 2>&1
  echo "racecheck test_gpu_lib gpu_lib/sort_and_argsort*: rc=$? $(grep -E '^========= ERROR SUMMARY' $OUT/racecheck-sort.log | awk '{s+=$4} END {print s+0}') errors" ) > $OUT/racecheck.txt &
build/tests/test_runtime --filter 'gpu/*' --jobs=4 2>&1 | tail -3
wait
cat $OUT/racecheck.txt
for f in gpu-carry/old-fusec build/tools/fusec; do
  echo "== $f"
  timeout 100 python3 bench/fusec_runs.py --fusec $f --json $OUT/f-$(basename $f).json --only I11_take,I11_scatter_add,W1 --no-sweep 2>&1 | grep -E "I11|W1"
done
timeout 60 ncu --section SpeedOfLight --launch-count 2 build/tools/fusec run bench/fc/i11_take.fc --input i=/tmp/i11_take_indices.npy --backend cuda > $OUT/ncu-take.txt 2>&1
grep -E "Duration|DRAM Throughput|Memory Throughput|fcx_|Block Limit|==PROF==" $OUT/ncu-take.txt | head -20
true
