#!/usr/bin/env bash
# Call 4 (5 commits on: reduce kernels at eight steps a thread, fcx_split's fast path, the
# context's one-time costs at creation): what XLA compiles for the rows where it is ahead
# (Nsight Compute profiles no kernel of a JAX process here, calls 2-3: its optimised HLO and
# PTX, dumped by XLA); a new process's first evaluation by phase; bench/latency.
set -u
mkdir -p gpu-carry-x && tar xJf gpu-carry/bundle.tar.xz -C gpu-carry-x
export LD_LIBRARY_PATH=$PWD/gpu-carry-x/libs
mkdir -p build && cp -r gpu-carry-x/build/. build/
F=build/tools/fusec
D=bench/results/gpu-2026-11-28-session17
for p in i13_argmax_rows w06_row_l2norm w03_sum; do
  printf '%-20s ' $p; $F run bench/fc/$p.fc --backend cuda --bench --runs 15 2>&1 | grep -E "^  time|floor  " | sed -E 's/ +/ /g;s/\(15 runs.*//;s/min.*max [0-9.]+ ms//' | tr '\n' ' '; echo
done
export FUSEC_CACHE_DIR=$(mktemp -d /tmp/fc-cache-XXXX)
for p in w01_tanh_sin w04_softmax w08_mandelbrot w11_col_mean_scaled; do
  $F run bench/fc/$p.fc --backend cuda > /dev/null 2>&1
  echo "== $p (new process, warm disk)"; FUSEC_LOG=timing $F run bench/fc/$p.fc --backend cuda 2>&1 | grep "fusec timing" | head -4
done
export FUSEC_CACHE_DIR=$(mktemp -d /tmp/fc-cache-XXXX)
timeout 100 build/bench/latency --no-overhead bench/fc/w01_tanh_sin.fc bench/fc/w04_softmax.fc bench/fc/w08_mandelbrot.fc bench/fc/w11_col_mean_scaled.fc > /tmp/lat.txt 2>&1; tail -7 /tmp/lat.txt
mkdir -p /tmp/xla
for p in argmax_rows transpose_ew col_softmax adam layernorm_4k laplacian; do
  XLA_FLAGS="--xla_dump_to=/tmp/xla/$p --xla_dump_hlo_as_text" timeout 60 python3 $D/ncu_peer.py I13_$p jax 2 2>&1 | tail -1
done
find /tmp/xla -type f | head -20; find /tmp/xla -name "*.ptx" | wc -l; du -sh /tmp/xla
cd /tmp && find xla -type f \( -name "*after_optimizations.txt" -o -name "*.ptx" \) | tar czf $OUT/xla.tgz -T -
cp /tmp/lat.txt $OUT/
