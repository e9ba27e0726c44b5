#!/usr/bin/env bash
# Call 9 (the final tree): every carried GPU test binary and example (tools/gpu-tests.sh),
# 150 random programs against the host, the Python suite on the CUDA backend.
set -u
mkdir -p gpu-carry-x && tar xJf gpu-carry/bundle.tar.xz -C gpu-carry-x
cp gpu-carry-x/_fusec.abi3.so python/fusec/
export LD_LIBRARY_PATH=$PWD/gpu-carry-x/libs
mkdir -p build && cp -r gpu-carry-x/build/. build/
GPU_SKIP="test_shard_diff test_gpu_diff test_composite" GPU_TEST_LIMIT=150 GPU_JOBS=8 timeout 220 tools/gpu-tests.sh gpu-carry-x build > $OUT/gpu-tests.txt 2>&1; echo "gpu-tests rc=$?"
grep -E "gpu-tests:" $OUT/gpu-tests.txt | head -3
grep "rc=" $OUT/gpu-tests.txt | grep -v "rc=0" | sort -u | head
grep -E "Synthesis" $OUT/gpu-tests.txt | head -30
GPU_DIFF_LIMIT=60 timeout 80 tools/gpu-diff.sh 0 150 6 2>&1 | tail -2 | head -1
export PYTHONPATH=$PWD/gpu-carry-x/pylib:$PWD/python
export FUSEC_CACHE_DIR=$(mktemp -d /tmp/fc-cache-XXXX)
timeout 170 python3 -m pytest -q -p no:cacheprovider python/tests > $OUT/pytest.txt 2>&1; echo "pytest rc=$?"
tail -3 $OUT/pytest.txt; grep -E "^FAILED" $OUT/pytest.txt | head -8
