#!/usr/bin/env bash
# Call 4 (branch exp4: uncommitted knobs): W9's strips (FUSEC_EXP_STRIPMINB: launch-bound
# minimum blocks, FUSEC_EXP_STRIPV: outputs a thread), row kernels' blocks and steps
# (FUSEC_EXP_ROWBLOCK, FUSEC_EXP_ROWSTEPS, FUSEC_EXP_ROWMINB) on batch-norm statistics and
# layer norm 32k, compute-heavy elementwise steps a thread (FUSEC_EXP_HEAVYSTEPS) on the GELUs
# and W1, references for W11's size (row sums and x + 1 over the same 64 MiB, W11 at 4x the
# rows), Nsight Compute on GELU f16.
set -u
mkdir -p gpu-carry-x && tar xJf gpu-carry/bundle.tar.xz -C gpu-carry-x
export LD_LIBRARY_PATH=$PWD/gpu-carry-x/libs
mkdir -p build && cp -r gpu-carry-x/build/. build/
export FUSEC_CACHE_DIR=$(mktemp -d /tmp/fc-cache-XXXX)
D=bench/results/gpu-2026-11-28-session18
source $D/one.sh
for rep in 1 2; do
  f=bench/fc/w09_box_blur.fc
  one base -- $f; one minb6 FUSEC_EXP_STRIPMINB=6 -- $f; one minb8 FUSEC_EXP_STRIPMINB=8 -- $f
  one v4 FUSEC_EXP_STRIPV=4 -- $f; one v4minb6 FUSEC_EXP_STRIPV=4 FUSEC_EXP_STRIPMINB=6 -- $f
  one v16 FUSEC_EXP_STRIPV=16 -- $f
done
for f in bench/fc/i13_bn_stats.fc bench/fc/i13_layernorm_32k.fc bench/fc/i13_mean_std_rows.fc; do
  for rep in 1 2; do
    one base -- $f; one blk256 FUSEC_EXP_ROWBLOCK=256 -- $f; one steps16 FUSEC_EXP_ROWSTEPS=16 -- $f
    one steps4 FUSEC_EXP_ROWSTEPS=4 -- $f; one minb3 FUSEC_EXP_ROWMINB=3 -- $f
    one blk256minb5 FUSEC_EXP_ROWBLOCK=256 FUSEC_EXP_ROWMINB=5 -- $f
  done
done
for f in bench/fc/i13_gelu_f16.fc bench/fc/i13_gelu_bf16.fc bench/fc/w01_tanh_sin.fc; do
  for rep in 1 2; do
    one s4 -- $f; one s2 FUSEC_EXP_HEAVYSTEPS=2 -- $f; one s3 FUSEC_EXP_HEAVYSTEPS=3 -- $f
    one s6 FUSEC_EXP_HEAVYSTEPS=6 -- $f; one s8 FUSEC_EXP_HEAVYSTEPS=8 -- $f
  done
done
for f in $D/sum64_rows.fc $D/copy64.fc $D/w11_x4.fc bench/fc/w11_col_mean_scaled.fc; do
  one base -- $f; one base -- $f
done
S="--section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats --section ComputeWorkloadAnalysis --section InstructionStats --metrics dram__bytes_read.sum,dram__bytes_write.sum,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active"
timeout 60 ncu --clock-control none $S -k regex:fusec_kernel -c 3 \
    build/tools/fusec run bench/fc/i13_gelu_f16.fc --backend cuda --bench --runs 1 --warmup 0 > $OUT/ncu-gelu_f16.txt 2>&1
grep -E "^  [a-z_]+.*\(|Duration|DRAM Throughput|Registers Per|Grid Size|Achieved Occupancy|Executed Ipc A|inst_executed|issue_active|Issue Slots Busy|SM Busy|Compute \(SM\)" $OUT/ncu-gelu_f16.txt | tail -14
