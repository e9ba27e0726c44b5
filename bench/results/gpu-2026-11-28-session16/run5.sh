#!/usr/bin/env bash
# Call 5: after call 4's fixes (a buffer's taps as direct loads again; column online sums with
# their batch's rows prefetched to L2): the rows they touch, W8 in the fast-math tier, and
# CuPy's W8 in the same call (the tier's 100x target).
set -u
mkdir -p gpu-carry-x && tar xJf gpu-carry/bundle.tar.xz -C gpu-carry-x
export LD_LIBRARY_PATH=$PWD/gpu-carry-x/libs
mkdir -p build && cp -r gpu-carry-x/build/. build/
export FUSEC_CACHE_DIR=$(mktemp -d /tmp/fc-cache-XXXX)
nvidia-smi --query-gpu=name --format=csv,noheader
f=$PWD/build/tools/fusec
for p in i13_col_softmax i13_laplacian w09_box_blur w11_col_mean_scaled i13_bn_stats; do
  extra=""; [ $p = i13_col_softmax ] && extra="--floor-bytes $((12 * 8192 * 8192))"
  printf '%-22s ' $p; $f run bench/fc/$p.fc --backend cuda --bench --runs 15 $extra 2>&1 | grep -E "median|floor" | tr '\n' ' ' | sed -E 's/ +/ /g'; echo
done
printf '%-22s ' "w08 fast"; FUSEC_FAST_MATH=1 $f run bench/fc/w08_mandelbrot.fc --backend cuda --bench --runs 15 2>&1 | grep -E "median" | sed -E 's/ +/ /g'
printf '%-22s ' "w08 exact"; $f run bench/fc/w08_mandelbrot.fc --backend cuda --bench --runs 15 2>&1 | grep -E "median" | sed -E 's/ +/ /g'
timeout 200 python3 bench/peers.py --json $OUT/peers-w8.json --only W8 --no-sweep --no-latency > $OUT/peers-w8.txt 2>&1; echo "peers rc=$?"
grep -E "^W8 |cupy|jax " $OUT/peers-w8.txt | head -12
