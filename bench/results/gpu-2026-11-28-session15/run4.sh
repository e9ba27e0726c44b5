#!/usr/bin/env bash
# Call 4 (after the last change to GPU code): every GPU test binary, 600 random programs, the
# Python suite and seed programs on the CUDA backend, then alone: issue 13's rows with every
# peer (bench/run_i13.sh) and W1-W12 (fusec alone). The carry is bundle.sh's one file.
set -u
mkdir -p gpu-carry-x && tar xJf gpu-carry/bundle.tar.xz -C gpu-carry-x
cp gpu-carry-x/_fusec.abi3.so python/fusec/
export LD_LIBRARY_PATH=$PWD/gpu-carry-x/libs
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
GPU_SKIP="test_shard_diff test_gpu_diff test_composite" GPU_TEST_LIMIT=150 GPU_JOBS=8 tools/gpu-tests.sh gpu-carry-x build > $OUT/gpu-tests.txt 2>&1 &
sleep 5
GPU_DIFF_LIMIT=90 tools/gpu-diff.sh 0 600 6 2>&1 | tail -2
wait
grep -E "gpu-tests:" $OUT/gpu-tests.txt | head -3
grep "rc=" $OUT/gpu-tests.txt | grep -v "rc=0" | sort -u
timeout 100 compute-sanitizer --tool memcheck build/tests/test_gpu_interop 2>&1 | tail -1
export PYTHONPATH=$PWD/gpu-carry-x/pylib:$PWD/python
timeout 200 python3 -m pytest -q -p no:cacheprovider python/tests > $OUT/pytest.txt 2>&1; echo "pytest rc=$?"
tail -2 $OUT/pytest.txt; grep -E "^FAILED" $OUT/pytest.txt | head -8
for py in examples/python/[a-z]*.py; do timeout 60 python3 $py > /tmp/py-$(basename $py .py).txt 2>&1 || echo "FAILED $py"; done
grep -h "overhead" /tmp/py-overhead.txt
FUSEC_CARRY=gpu-carry-x FUSEC_BIN=$PWD/build/tools/fusec timeout 240 bench/run_i13.sh /tmp/i13 > /tmp/run_i13.txt 2>&1; echo "run_i13 rc=$?"
cp /tmp/i13/RESULTS.md $OUT/i13-RESULTS.md 2>/dev/null
sed -n '/^| id | program | kernels/,/^Targets met/p' $OUT/i13-RESULTS.md | cut -d'|' -f2,4-7,12-16
tar czf $OUT/i13.tgz -C /tmp i13 run_i13.txt $(cd /tmp && ls py-*.txt) 2>/dev/null
timeout 150 python3 bench/fusec_runs.py --fusec $PWD/build/tools/fusec --json $OUT/fusec-w.json --only W1,W2,W3,W4,W5,W6,W7,W8,W9,W10,W11,W12 --runs 9 --warmup 2 --no-sweep > /dev/null 2>&1; python3 -c "
import json; w=json.load(open('$OUT/fusec-w.json'))['workloads']
for k,v in w.items():
    r=v.get('result') or {}; print(k, r.get('median_ms'), 'kernels', r.get('kernels'), 'floor %.1f%%' % (r.get('floor_pct') or 0), v.get('error') or '')"
