#!/usr/bin/env bash
# Call 2 (2f8bad3..: argmax's combine, the warp-count second stage, element-pointer vector
# loads, FUSEC_LOG=timing): the reduce rows those touch timed; Nsight Compute on the transpose
# (fusec) and on XLA's kernels of every row behind (call 1's JAX profiles were not returned);
# the phases of a new process's first evaluation from a warm disk cache (FUSEC_LOG=timing).
set -u
mkdir -p gpu-carry-x && tar xJf gpu-carry/bundle.tar.xz -C gpu-carry-x
export LD_LIBRARY_PATH=$PWD/gpu-carry-x/libs
mkdir -p build && cp -r gpu-carry-x/build/. build/
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
F=build/tools/fusec
for p in i13_argmax_rows w06_row_l2norm w04_softmax i13_layernorm_4k i13_mean_std_rows i13_bn_stats; do
  printf '%-20s ' $p; $F run bench/fc/$p.fc --backend cuda --bench --runs 15 2>&1 | grep -E "^  time|floor  " | sed -E 's/ +/ /g' | tr '\n' ' '; echo
done
build/tests/test_runtime --filter 'gpu/fusec_log_timing*' 2>&1 | tail -1
mkdir -p /tmp/o
S="--section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats --section MemoryWorkloadAnalysis --metrics dram__bytes_read.sum,dram__bytes_write.sum,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active"
D=bench/results/gpu-2026-11-28-session17
timeout 60 ncu --clock-control none $S -k regex:fusec_kernel $F run bench/fc/i13_transpose_ew.fc --backend cuda --bench --runs 1 --warmup 0 > /tmp/o/ncu-fusec-transpose_ew.txt 2>&1
timeout 60 ncu --clock-control none $S -k regex:fusec_kernel $F run bench/fc/i13_argmax_rows.fc --backend cuda --bench --runs 1 --warmup 0 > /tmp/o/ncu-fusec-argmax2.txt 2>&1
for p in argmax_rows transpose_ew col_softmax adam layernorm_4k laplacian; do
  timeout 100 ncu --clock-control none $S -c 8 python3 $D/ncu_peer.py I13_$p jax 2 > /tmp/o/ncu-jax-$p.txt 2>&1
  echo "== jax $p rc=$?"; grep -E "^  [A-Za-z_].*\(|Duration|DRAM Throughput|Registers Per|Block Size|Grid Size|Achieved Occupancy|dram__bytes|inst_executed|issue_active" /tmp/o/ncu-jax-$p.txt | head -40
  tail -3 /tmp/o/ncu-jax-$p.txt
done
echo "== fusec argmax again / transpose"; grep -E "^  [a-z_]+.*\(|Duration|DRAM Throughput|inst_executed|issue_active|Registers Per|Achieved Occ" /tmp/o/ncu-fusec-argmax2.txt /tmp/o/ncu-fusec-transpose_ew.txt | tail -20
export FUSEC_CACHE_DIR=$(mktemp -d /tmp/fc-cache-XXXX)
for p in w01_tanh_sin w04_softmax w08_mandelbrot w11_col_mean_scaled w03_sum; do
  $F run bench/fc/$p.fc --backend cuda > /dev/null 2>&1
  echo "== $p (new process, warm disk)"; FUSEC_LOG=timing $F run bench/fc/$p.fc --backend cuda 2>&1 | grep "fusec timing" | head -4
done
tar czf $OUT/ncu.tgz -C /tmp o
