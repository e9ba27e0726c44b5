# final validation, one H100: GPU tests (heavy diff/codegen binaries skipped: the diff run follows),
# sanitizers over the sort tests beside them, then the benchmarks and a differential run.
export LD_LIBRARY_PATH=$PWD/gpu-carry/libs NCCL_NVLS_ENABLE=0
B=gpu-carry/build
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
( for tool in memcheck racecheck; do
    timeout -k 5 200 $cs --tool $tool --target-processes all --print-limit 20 $B/tests/test_gpu_lib --jobs=1 --filter 'gpu_lib/sort*' > $OUT/sanitize-$tool-sort.log 2>&1
    echo "$tool test_gpu_lib sort: rc=$? $(grep -E '^========= ERROR SUMMARY' $OUT/sanitize-$tool-sort.log | awk '{s+=$4} END {print s+0}') errors"
  done > $OUT/sanitize-sort.txt ) &
GPU_SKIP="test_gpu_diff test_codegen test_codegen_emulated test_cache_damage test_composite test_shard_diff test_sort" GPU_TEST_LIMIT=150 GPU_JOBS=8 tools/gpu-tests.sh gpu-carry build > $OUT/gpu-tests.txt 2>&1
tail -28 $OUT/gpu-tests.txt
wait
cat $OUT/sanitize-sort.txt
timeout 100 python3 bench/fusec_runs.py --fusec $B/tools/fusec --json $OUT/fusec.json --only I11_sort,I11_argsort,I11_cumsum,W1 --no-sweep 2>&1 | tail -6
timeout 100 python3 bench/peers.py --only I11_sort,I11_argsort --no-sweep --no-latency --json $OUT/peers.json 2>&1 | tail -6
GPU_DIFF_LIMIT=150 tools/gpu-diff.sh 0 2400 16 > $OUT/diff.txt 2>&1; tail -3 $OUT/diff.txt; cp gpu-diff/failures.fc $OUT/ 2>/dev/null; true
