#!/usr/bin/env bash
# Call 5 (main 10c67f7: the trdiet and coldiet merges): the rows they touch, timed; XLA's
# kernels under Nsight Compute now that the JAX cells run on the GPU (peers.py's fix).
set -u
mkdir -p gpu-carry-x && tar xJf gpu-carry/bundle.tar.xz -C gpu-carry-x
export LD_LIBRARY_PATH=$PWD/gpu-carry-x/libs
mkdir -p build && cp -r gpu-carry-x/build/. build/
F=build/tools/fusec
D=bench/results/gpu-2026-11-28-session17
for p in i13_transpose_ew i13_col_softmax i13_bn_stats w11_col_mean_scaled w07_normalize_cols i13_argmax_rows w04_softmax; do
  printf '%-20s ' $p; $F run bench/fc/$p.fc --backend cuda --bench --runs 15 2>&1 | grep -E "^  kernels|^  time|floor  " | sed -E 's/ +/ /g;s/\(15 runs.*//;s/min.*max [0-9.]+ ms//' | tr '\n' ' '; echo
done
mkdir -p /tmp/o
S="--section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats --metrics dram__bytes_read.sum,dram__bytes_write.sum,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active"
for p in transpose_ew col_softmax; do
  timeout 60 ncu --clock-control none $S -k regex:fusec_kernel $F run bench/fc/i13_$p.fc --backend cuda --bench --runs 1 --warmup 0 > /tmp/o/ncu-fusec-$p.txt 2>&1
done
for p in argmax_rows transpose_ew col_softmax adam layernorm_4k laplacian; do
  timeout 70 ncu --clock-control none $S -c 6 python3 $D/ncu_peer.py I13_$p jax 2 > /tmp/o/ncu-jax-$p.txt 2>&1
  echo "== jax $p rc=$?"; grep -E "^  [A-Za-z_].*\(|Duration|DRAM Throughput|Block Size|Grid Size|inst_executed|Registers Per|issue_active" /tmp/o/ncu-jax-$p.txt | head -24; grep "jax device" /tmp/o/ncu-jax-$p.txt
done
tar czf $OUT/ncu.tgz -C /tmp o
