#!/usr/bin/env bash
# Call 3 (after the C interop, the Python package's second part and its DLPack binding):
# the GPU tests of the interop and library paths (test_gpu_interop under memcheck too), 200
# random programs, the Python suite on the CUDA backend (pytest + hypothesis, DLPack round
# trips with PyTorch and CuPy), the Python seed programs (overhead.py against CuPy), then
# issue 13's rows with every peer, JAX/XLA included (bench/run_i13.sh).
export LD_LIBRARY_PATH=$PWD/gpu-carry/libs
mkdir -p build && cp -r gpu-carry/build/. build/
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
GPU_SKIP="test_gpu_diff" GPU_TEST_LIMIT=150 GPU_JOBS=8 tools/gpu-tests.sh gpu-carry build > $OUT/gpu-tests.txt 2>&1 &
GPU_DIFF_LIMIT=90 tools/gpu-diff.sh 0 200 6 2>&1 | tail -2
wait
grep -E "gpu-tests:" $OUT/gpu-tests.txt | head -3
grep -E "^test_gpu_interop|^test_gpu_lib" $OUT/gpu-tests.txt | sort -u | head
grep "rc=" $OUT/gpu-tests.txt | grep -v "rc=0" | sort -u
timeout 120 compute-sanitizer --tool memcheck build/tests/test_gpu_interop 2>&1 | tail -2
export PYTHONPATH=$PWD/gpu-carry/pylib:$PWD/python
timeout 240 python3 -m pytest -q -p no:cacheprovider python/tests > $OUT/pytest.txt 2>&1; echo "pytest rc=$?"
tail -4 $OUT/pytest.txt; grep -E "^FAILED|Error" $OUT/pytest.txt | head -12
for py in examples/python/[a-z]*.py; do timeout 60 python3 $py > $OUT/py-$(basename $py .py).txt 2>&1 || echo "FAILED $py"; done
tail -6 $OUT/py-overhead.txt
FUSEC_CARRY=gpu-carry FUSEC_BIN=$PWD/build/tools/fusec timeout 280 bench/run_i13.sh $OUT/i13 > $OUT/run_i13.txt 2>&1; echo "run_i13 rc=$?"
grep -A30 "I13" $OUT/i13/RESULTS.md 2>/dev/null | head -40
