#!/usr/bin/env bash
# Call 4 (main with the fastmath, colred, stencil, startup and tile merges, 6eb8a0c-ish; the
# tree is this call's commit): the new kernels' small shapes under memcheck and racecheck and
# against the host backend (sanitize.sh), W1-W11 and issue 13's rows timed by fusec (CUDA events
# per call and back to back), W8 in both math tiers beside NumPy (bench/fast_math_diff.py).
set -u
here=bench/results/gpu-2026-11-28-session16
mkdir -p gpu-carry-x && tar xJf gpu-carry/bundle.tar.xz -C gpu-carry-x
export LD_LIBRARY_PATH=$PWD/gpu-carry-x/libs
mkdir -p build && cp -r gpu-carry-x/build/. build/
export FUSEC_CACHE_DIR=$(mktemp -d /tmp/fc-cache-XXXX)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
git log --oneline -1 | cat
bash $here/sanitize.sh $PWD/build/tools/fusec /tmp/san 2>&1 | tee $OUT/sanitize.txt
timeout 300 python3 bench/fusec_runs.py --fusec $PWD/build/tools/fusec --json $OUT/fusec-w-i13.json \
  --only W1,W2,W3,W4,W5,W6,W7,W8,W9,W10,W11,I13 --runs 9 --warmup 2 --no-sweep > $OUT/fusec-w-i13.txt 2>&1; echo "fusec_runs rc=$?"
python3 - $OUT/fusec-w-i13.json <<'PY'
import json, sys
w = json.load(open(sys.argv[1]))['workloads']
for k, v in w.items():
    r = v.get('result') or {}
    b = r.get('b2b') or {}
    print('%-20s %8.4f ms  b2b %8s  kernels %s  floor %5.1f%%  %s' % (k, r.get('median_ms') or 0,
          '%.4f' % b['median_ms'] if b.get('median_ms') else '-', r.get('kernels'),
          r.get('floor_pct') or 0, v.get('error') or ''))
PY
timeout 150 python3 bench/fast_math_diff.py --fusec $PWD/build/tools/fusec --backend cuda --numpy-w8 \
  --json $OUT/fast-w8.json bench/fc/w08_mandelbrot.fc 2>&1 | tail -12
timeout 60 python3 bench/fast_math_diff.py --fusec $PWD/build/tools/fusec --backend cuda bench/fc/w01_tanh_sin.fc 2>&1 | tail -6
