#!/usr/bin/env bash
# Call 3 (cbf19df + the unsplit fcx_split fast path + an experiment knob, FUSEC_EXP_REDUCE_STEPS,
# not committed): reduce kernels' threads a row (16-byte steps a thread: 4, the default, or 8)
# on the rows they decide; XLA's kernels under Nsight Compute with command buffers off.
set -u
mkdir -p gpu-carry-x && tar xJf gpu-carry/bundle.tar.xz -C gpu-carry-x
export LD_LIBRARY_PATH=$PWD/gpu-carry-x/libs
mkdir -p build && cp -r gpu-carry-x/build/. build/
F=build/tools/fusec
for st in 4 8 16; do
  for p in i13_argmax_rows w06_row_l2norm i13_mean_std_rows w03_sum w13_user_l2norm w11_col_mean_scaled i13_bn_stats; do
    printf 'steps %-2s %-20s ' $st $p; FUSEC_EXP_REDUCE_STEPS=$st $F run bench/fc/$p.fc --backend cuda --bench --runs 15 2>&1 | grep -E "^  time|floor  " | sed -E 's/ +/ /g;s/\(15 runs.*//;s/min.*max [0-9.]+ ms//' | tr '\n' ' '; echo
  done
done
mkdir -p /tmp/o
S="--section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats --metrics dram__bytes_read.sum,dram__bytes_write.sum,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active"
D=bench/results/gpu-2026-11-28-session17
export XLA_FLAGS="--xla_gpu_enable_command_buffer= --xla_gpu_autotune_level=0"
timeout 100 ncu --clock-control none --target-processes all $S python3 $D/ncu_peer.py I13_argmax_rows jax 2 > /tmp/o/ncu-jax-argmax_rows.txt 2>&1
echo "== jax argmax rc=$?"; grep -E "^  [A-Za-z_].*\(|Duration|DRAM Throughput|Registers Per|Block Size|Grid Size|Achieved Occupancy|inst_executed|issue_active" /tmp/o/ncu-jax-argmax_rows.txt | head -40; tail -3 /tmp/o/ncu-jax-argmax_rows.txt
for p in transpose_ew col_softmax adam layernorm_4k laplacian; do
  timeout 60 ncu --clock-control none --target-processes all $S python3 $D/ncu_peer.py I13_$p jax 2 > /tmp/o/ncu-jax-$p.txt 2>&1
  echo "== jax $p rc=$?"; grep -E "^  [A-Za-z_].*\(|Duration|DRAM Throughput|Block Size|Grid Size|inst_executed" /tmp/o/ncu-jax-$p.txt | head -24
done
tar czf $OUT/ncu.tgz -C /tmp o
