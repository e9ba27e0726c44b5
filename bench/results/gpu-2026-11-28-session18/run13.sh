#!/usr/bin/env bash
# Call 13 (the final code): XLA's W3 reduction kernels under Nsight Compute (call 12's capture
# limit took autotuning kernels instead).
set -u
S="--section SpeedOfLight --section LaunchStats --section Occupancy --metrics dram__bytes_read.sum,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active"
timeout 90 ncu --clock-control none $S -k regex:reduce -c 4 python3 bench/results/gpu-2026-11-28-session17/ncu_peer.py W3 jax 3 > $OUT/ncu-jax-W3.txt 2>&1
grep -E "^  [A-Za-z_].*\(|Duration|DRAM Throughput|Registers Per|Block Size|Grid Size|Achieved Occupancy|inst_executed|issue_active" $OUT/ncu-jax-W3.txt | head -40
