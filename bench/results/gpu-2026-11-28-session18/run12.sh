#!/usr/bin/env bash
# Call 12 (the final code, f3d4662): Nsight Compute on fusec's and XLA's kernels of W3 and W4,
# the two rows where XLA is ahead (1.02x, 1.04x in call 8).
set -u
mkdir -p gpu-carry-x && tar xJf gpu-carry/bundle.tar.xz -C gpu-carry-x
export LD_LIBRARY_PATH=$PWD/gpu-carry-x/libs
mkdir -p build && cp -r gpu-carry-x/build/. build/
S="--section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats --metrics dram__bytes_read.sum,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active"
P=bench/results/gpu-2026-11-28-session17/ncu_peer.py
for w in w03_sum:W3 w04_softmax:W4; do
  f=${w%%:*}; id=${w##*:}
  timeout 60 ncu --clock-control none $S -k regex:fusec_kernel -c 4 build/tools/fusec run bench/fc/$f.fc --backend cuda --bench --runs 1 --warmup 0 > $OUT/ncu-fusec-$id.txt 2>&1
  echo "== fusec $id"; grep -E "^  [a-z_]+.*\(|Duration|DRAM Throughput|Registers Per|Block Size|Grid Size|Achieved Occupancy|inst_executed|issue_active" $OUT/ncu-fusec-$id.txt | tail -10
  timeout 90 ncu --clock-control none $S -c 6 python3 $P $id jax 2 > $OUT/ncu-jax-$id.txt 2>&1
  echo "== jax $id"; grep -E "^  [A-Za-z_].*\(|Duration|DRAM Throughput|Registers Per|Block Size|Grid Size|Achieved Occupancy|inst_executed|issue_active" $OUT/ncu-jax-$id.txt | tail -24
done
