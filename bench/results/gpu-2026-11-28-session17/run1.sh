#!/usr/bin/env bash
# Call 1 (main at session start, 6578673): Nsight Compute on fusec's kernel and on XLA's for
# every issue-13 row where fusec is behind a peer or a target (argmax, transpose, column
# softmax, Adam, layer norm 4k, Laplacian, batch-norm statistics, mean/std), and the start-up
# figure with the programs in two orders (is W1's 0.645 ms the first program of a process?).
set -u
mkdir -p gpu-carry-x && tar xJf gpu-carry/bundle.tar.xz -C gpu-carry-x
export LD_LIBRARY_PATH=$PWD/gpu-carry-x/libs
mkdir -p build && cp -r gpu-carry-x/build/. build/
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
S="--section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats --section MemoryWorkloadAnalysis --metrics dram__bytes_read.sum,dram__bytes_write.sum,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active"
D=bench/results/gpu-2026-11-28-session17
for p in argmax_rows transpose_ew col_softmax adam layernorm_4k laplacian bn_stats mean_std_rows; do
  timeout 60 ncu --clock-control none $S -k regex:fusec_kernel \
    build/tools/fusec run bench/fc/i13_$p.fc --backend cuda --bench --runs 1 --warmup 0 > $OUT/ncu-fusec-$p.txt 2>&1
  echo "== fusec $p"; grep -E "^  [a-z_]+.*\(|Duration|DRAM Throughput|Registers Per|Block Size|Grid Size|Achieved Occupancy|Executed Ipc A|dram__bytes|inst_executed|issue_active|Theoretical Occ|Warp Cycles Per Issued" $OUT/ncu-fusec-$p.txt | head -40
  id=I13_$p
  timeout 120 ncu --clock-control none $S -c 6 python3 $D/ncu_peer.py $id jax 2 > $OUT/ncu-jax-$p.txt 2>&1
  echo "== jax $p"; grep -E "^  [A-Za-z_].*\(|Duration|DRAM Throughput|Registers Per|Block Size|Grid Size|Achieved Occupancy|dram__bytes|inst_executed|issue_active|Warp Cycles Per Issued" $OUT/ncu-jax-$p.txt | head -60
done
export FUSEC_CACHE_DIR=$(mktemp -d /tmp/fc-cache-XXXX)
timeout 60 build/bench/latency --no-overhead bench/fc/w04_softmax.fc bench/fc/w01_tanh_sin.fc bench/fc/w11_col_mean_scaled.fc > $OUT/latency-order1.txt 2>&1
tail -8 $OUT/latency-order1.txt
export FUSEC_CACHE_DIR=$(mktemp -d /tmp/fc-cache-XXXX)
timeout 60 build/bench/latency --no-overhead bench/fc/w11_col_mean_scaled.fc bench/fc/w08_mandelbrot.fc bench/fc/w01_tanh_sin.fc > $OUT/latency-order2.txt 2>&1
tail -8 $OUT/latency-order2.txt
