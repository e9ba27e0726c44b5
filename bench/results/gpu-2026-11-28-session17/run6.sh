#!/usr/bin/env bash
# Call 6 (main b3a6c57: + the stendiet merge, the W11 prefetch reverted): the stencil rows and
# W11 timed; the new kernel families (vector transpose tiles, batched column online sums,
# strips, argmax's combine) under compute-sanitizer and against the host (sanitize.sh).
set -u
mkdir -p gpu-carry-x && tar xJf gpu-carry/bundle.tar.xz -C gpu-carry-x
export LD_LIBRARY_PATH=$PWD/gpu-carry-x/libs
mkdir -p build && cp -r gpu-carry-x/build/. build/
F=build/tools/fusec
D=bench/results/gpu-2026-11-28-session17
for p in i13_laplacian w09_box_blur w11_col_mean_scaled i13_transpose_ew; do
  printf '%-20s ' $p; $F run bench/fc/$p.fc --backend cuda --bench --runs 15 2>&1 | grep -E "^  kernels|^  time|floor  " | sed -E 's/ +/ /g;s/\(15 runs.*//;s/min.*max [0-9.]+ ms//' | tr '\n' ' '; echo
done
S="--section SpeedOfLight --section LaunchStats --section Occupancy --metrics smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active"
for p in i13_laplacian w09_box_blur; do
  timeout 60 ncu --clock-control none $S -k regex:fusec_kernel $F run bench/fc/$p.fc --backend cuda --bench --runs 1 --warmup 0 > $OUT/ncu-$p.txt 2>&1
  grep -E "fusec_kernel \(|Duration|DRAM Throughput|Registers Per|inst_executed|issue_active" $OUT/ncu-$p.txt | tail -6
done
export FUSEC_CACHE_DIR=$(mktemp -d /tmp/fc-cache-XXXX)
bash $D/sanitize.sh $PWD/$F /tmp/san 2>&1 | tee $OUT/sanitize.txt
