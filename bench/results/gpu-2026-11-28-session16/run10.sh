#!/usr/bin/env bash
# Call 10 (the final tree: unaligned compact imports as views): align_probe.py again, every
# carried GPU test and example (test_gpu_interop's unaligned_compact_imports among them),
# 300 random programs, the Python suite on the CUDA backend.
set -u
mkdir -p gpu-carry-x && tar xJf gpu-carry/bundle.tar.xz -C gpu-carry-x
cp gpu-carry-x/_fusec.abi3.so python/fusec/
export LD_LIBRARY_PATH=$PWD/gpu-carry-x/libs
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
PYTHONPATH=$PWD/gpu-carry-x/pylib:$PWD/python timeout 60 python3 bench/results/gpu-2026-11-28-session16/align_probe.py 2>&1 | tail -4
GPU_SKIP="test_shard_diff test_gpu_diff test_composite" GPU_TEST_LIMIT=150 GPU_JOBS=8 tools/gpu-tests.sh gpu-carry-x build > $OUT/gpu-tests.txt 2>&1 &
sleep 5
GPU_DIFF_LIMIT=60 tools/gpu-diff.sh 0 300 6 2>&1 | tail -2
wait
grep -E "gpu-tests:" $OUT/gpu-tests.txt | head -3
grep "rc=" $OUT/gpu-tests.txt | grep -v "rc=0" | sort -u
grep -E "^test_gpu_interop" $OUT/gpu-tests.txt | head -2
export PYTHONPATH=$PWD/gpu-carry-x/pylib:$PWD/python
timeout 150 python3 -m pytest -q -x -p no:cacheprovider python/tests > $OUT/pytest.txt 2>&1; echo "pytest rc=$?"
tail -1 $OUT/pytest.txt
