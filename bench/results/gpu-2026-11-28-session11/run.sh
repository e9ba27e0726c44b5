#!/usr/bin/env bash
# Session 11's GPU run, one device call: the GPU tests (heavy differential binaries skipped:
# the diff run follows), compute-sanitizer over the new runtime paths and sort kernels beside
# them, then every
# I11 row beside CuPy and PyTorch in one run (issue 11's must-show), the host overhead of a
# cached plan with a library call (bench/latency), and a differential run.
export LD_LIBRARY_PATH=$PWD/gpu-carry/libs NCCL_NVLS_ENABLE=0
B=gpu-carry/build
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
S=$(mktemp -d) # the sanitizers' logs, brought back as one archive (the tool returns 8 files)
sanitize() { # tool, name, binary, filter, seconds
  timeout -k 5 $5 $cs --tool $1 --print-limit 20 $B/tests/$3 --jobs=1 --filter "$4" > $S/san-$1-$2.log 2>&1
  echo "$1 $3 $4: rc=$? $(grep -E '^========= ERROR SUMMARY' $S/san-$1-$2.log | awk '{s+=$4} END {print s+0}') errors"
}
( sanitize memcheck runtime test_runtime 'gpu/@(assign*|a_failed*|library_plans*)' 90
  sanitize memcheck sort test_gpu_lib 'gpu_lib/sort_@(and_argsort*|passes*)' 90
  sanitize racecheck sort test_gpu_lib 'gpu_lib/sort_@(and_argsort*|passes*)' 120 ) > $S/sanitize.txt &
GPU_SKIP="test_gpu_diff test_codegen test_codegen_emulated test_cache_damage test_composite test_shard_diff test_sort" \
  GPU_TEST_LIMIT=200 GPU_JOBS=8 tools/gpu-tests.sh gpu-carry build > $OUT/gpu-tests.txt 2>&1
tail -30 $OUT/gpu-tests.txt
build/tests/test_composite --filter 'composite/contract_numpy_reference_on_the_gpu' 2>&1 | tail -1
wait
cat $S/sanitize.txt
tar -czf $OUT/sanitize.tar.gz -C $S .
B=build
timeout 200 python3 bench/fusec_runs.py --fusec $B/tools/fusec --json $OUT/fusec.json --only W1,I11 --no-sweep 2>&1 | tail -12
timeout 200 python3 bench/peers.py --only I11 --no-sweep --no-latency --json $OUT/peers.json 2>&1 | tail -12
timeout 60 $B/bench/latency --no-child --json $OUT/latency.json 2>&1 | tail -14
GPU_DIFF_LIMIT=70 tools/gpu-diff.sh 0 1200 16 > $OUT/diff.txt 2>&1; tail -3 $OUT/diff.txt
true
