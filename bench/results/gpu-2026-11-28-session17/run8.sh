#!/usr/bin/env bash
# Call 8 (main after the last change to GPU code: the tile coordinate's name fixed, the element-
# wise step groups reverted): the failed GPU test again and the runtime's GPU tests, 150 random
# programs against the host, issue 13's rows with every peer (bench/run_i13.sh), W1-W12 by
# fusec, start-up (bench/latency), then the Python suite on the CUDA backend (slowest tests).
set -u
mkdir -p gpu-carry-x && tar xJf gpu-carry/bundle.tar.xz -C gpu-carry-x
cp gpu-carry-x/_fusec.abi3.so python/fusec/
export LD_LIBRARY_PATH=$PWD/gpu-carry-x/libs
mkdir -p build && cp -r gpu-carry-x/build/. build/
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
build/tests/test_gpu_interop 2>&1 | tail -1
build/tests/test_runtime 2>&1 | tail -1
GPU_DIFF_LIMIT=60 tools/gpu-diff.sh 0 150 6 2>&1 | tail -2 | head -1
export FUSEC_CACHE_DIR=$(mktemp -d /tmp/fc-cache-XXXX)
timeout 100 python3 bench/fusec_runs.py --fusec $PWD/build/tools/fusec --json $OUT/fusec-w.json \
  --only W1,W2,W3,W4,W5,W6,W7,W8,W9,W10,W11,W12_fft,W12_matmul --runs 15 --warmup 3 --no-sweep > /dev/null 2>&1; echo "fusec_runs rc=$?"
python3 - $OUT/fusec-w.json <<'PY'
import json, sys
w = json.load(open(sys.argv[1]))['workloads']
for k, v in w.items():
    r = v.get('result') or {}
    b = r.get('b2b') or {}
    print('%-12s %8.4f ms  b2b %8s  kernels %s  floor %5.1f%%  %s' % (k, r.get('median_ms') or 0,
          '%.4f' % b['median_ms'] if b.get('median_ms') else '-', r.get('kernels'),
          r.get('floor_pct') or 0, v.get('error') or ''))
PY
FUSEC_CARRY=gpu-carry-x FUSEC_BIN=$PWD/build/tools/fusec timeout 300 bench/run_i13.sh /tmp/i13 > /tmp/run_i13.txt 2>&1; echo "run_i13 rc=$?"
cp /tmp/i13/RESULTS.md $OUT/i13-RESULTS.md 2>/dev/null
sed -n '/^| id | program | kernels/,/^Targets met/p' $OUT/i13-RESULTS.md | cut -d'|' -f2,4-7,12-16
tar czf $OUT/i13.tgz -C /tmp i13 run_i13.txt 2>/dev/null
export FUSEC_CACHE_DIR=$(mktemp -d /tmp/fc-cache-XXXX)
timeout 60 build/bench/latency --json $OUT/latency.json bench/fc/w01_tanh_sin.fc bench/fc/w04_softmax.fc bench/fc/w08_mandelbrot.fc bench/fc/w11_col_mean_scaled.fc > $OUT/latency.txt 2>&1; echo "latency rc=$?"
grep -A6 "^program" $OUT/latency.txt
export PYTHONPATH=$PWD/gpu-carry-x/pylib:$PWD/python
export FUSEC_CACHE_DIR=$(mktemp -d /tmp/fc-cache-XXXX)
timeout 170 python3 -m pytest -q -p no:cacheprovider --durations=12 python/tests > $OUT/pytest.txt 2>&1; echo "pytest rc=$?"
tail -16 $OUT/pytest.txt; grep -E "^FAILED" $OUT/pytest.txt | head -8
