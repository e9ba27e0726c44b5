#!/usr/bin/env bash
# Fourth call, after the review's mend (c6cdfa6: a GPU test renamed, generators, docs): the GPU
# tests again, then W1 and the sort rows with fusec.
GPU_SKIP="test_gpu_diff test_codegen test_codegen_emulated test_cache_damage test_composite test_shard_diff test_sort" \
  GPU_TEST_LIMIT=200 GPU_JOBS=8 tools/gpu-tests.sh gpu-carry build > $OUT/gpu-tests.txt 2>&1
grep -E "NVIDIA|^test_gpu|^test_runtime|^test_fft|^test_shard |gpu-tests:" $OUT/gpu-tests.txt
grep -c "rc=0" $OUT/gpu-tests.txt; grep "rc=" $OUT/gpu-tests.txt | grep -vc "rc=0"
export LD_LIBRARY_PATH=$PWD/gpu-carry/libs
timeout 120 python3 bench/fusec_runs.py --fusec build/tools/fusec --json $OUT/fusec.json --only W1,I11_sort,I11_argsort --no-sweep 2>&1 | grep -E "^(W1|I11)"
