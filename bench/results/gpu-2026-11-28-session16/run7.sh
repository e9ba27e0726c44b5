#!/usr/bin/env bash
# Call 7 (the tree of call 6): issue 13's rows with every peer (bench/run_i13.sh: CuPy, PyTorch,
# torch.compile, JAX), W1-W12 and issue 11's rows timed by fusec (per call and back to back),
# W8 in the fast-math tier, and start-up in new processes (bench/latency).
set -u
mkdir -p gpu-carry-x && tar xJf gpu-carry/bundle.tar.xz -C gpu-carry-x
export LD_LIBRARY_PATH=$PWD/gpu-carry-x/libs
mkdir -p build && cp -r gpu-carry-x/build/. build/
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
FUSEC_CARRY=gpu-carry-x FUSEC_BIN=$PWD/build/tools/fusec timeout 280 bench/run_i13.sh /tmp/i13 > /tmp/run_i13.txt 2>&1; echo "run_i13 rc=$?"
cp /tmp/i13/RESULTS.md $OUT/i13-RESULTS.md 2>/dev/null
sed -n '/^| id | program | kernels/,/^Targets met/p' $OUT/i13-RESULTS.md | cut -d'|' -f2,4-7,12-16
tar czf $OUT/i13.tgz -C /tmp i13 run_i13.txt 2>/dev/null
export FUSEC_CACHE_DIR=$(mktemp -d /tmp/fc-cache-XXXX)
timeout 170 python3 bench/fusec_runs.py --fusec $PWD/build/tools/fusec --json $OUT/fusec-w-i11.json \
  --only W1,W2,W3,W4,W5,W6,W7,W8,W9,W10,W11,W12_fft,W12_matmul,I11 --runs 9 --warmup 2 --no-sweep > /dev/null 2>&1; echo "fusec_runs rc=$?"
python3 - $OUT/fusec-w-i11.json <<'PY'
import json, sys
w = json.load(open(sys.argv[1]))['workloads']
for k, v in w.items():
    r = v.get('result') or {}
    b = r.get('b2b') or {}
    print('%-16s %8.4f ms  b2b %8s  kernels %s  floor %5.1f%%  %s' % (k, r.get('median_ms') or 0,
          '%.4f' % b['median_ms'] if b.get('median_ms') else '-', r.get('kernels'),
          r.get('floor_pct') or 0, v.get('error') or ''))
PY
printf 'W8 fast-math: '; FUSEC_FAST_MATH=1 build/tools/fusec run bench/fc/w08_mandelbrot.fc --backend cuda --bench --runs 15 2>&1 | grep median | sed -E 's/ +/ /g'
timeout 70 build/bench/latency --json $OUT/latency.json bench/fc/w01_tanh_sin.fc bench/fc/w04_softmax.fc bench/fc/w08_mandelbrot.fc bench/fc/w11_col_mean_scaled.fc > $OUT/latency.txt 2>&1; echo "latency rc=$?"
tail -25 $OUT/latency.txt
