#!/usr/bin/env bash
# Call 1 (main at session start, d72132f): issue 11's rows on an H200 with CuPy, PyTorch and
# JAX in the same run, the design probes that bound them (bench/micro/normal_bound.cu,
# scan_gather.cu, built on the build host), and Nsight Compute's instruction counts and issue
# rates of fusec's normal and cumsum kernels.
set -u
mkdir -p gpu-carry-x && tar xJf gpu-carry/bundle.tar.xz -C gpu-carry-x
export LD_LIBRARY_PATH=$PWD/gpu-carry-x/libs
mkdir -p build && cp -r gpu-carry-x/build/. build/
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.memory --format=csv,noheader
gpu-carry/micro/normal_bound 2>&1 | tee $OUT/micro-normal.txt
gpu-carry/micro/scan_gather 2>&1 | tee $OUT/micro-scan-gather.txt
timeout 200 python3 bench/fusec_runs.py --fusec $PWD/build/tools/fusec --json $OUT/fusec-i11.json --only W1,I11 --no-sweep 2>&1 | grep -E "^(W1|I11)"
timeout 240 python3 bench/peers.py --json $OUT/peers-i11.json --only I11 --no-sweep --no-latency > $OUT/peers-i11.txt 2>&1; echo "peers rc=$?"
grep -E "I11" $OUT/peers-i11.txt | head -40
for p in i11_cumsum i11_normal; do
  timeout 60 ncu --clock-control none --metrics gpu__time_duration.sum,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__registers_per_thread,launch__grid_size,launch__block_size \
    build/tools/fusec run bench/fc/$p.fc --backend cuda --bench --runs 1 --warmup 0 > $OUT/ncu-$p.txt 2>&1
  grep -E "gpu__time|inst_executed|issue_active|warps_active|dram__|registers|grid_size|block_size" $OUT/ncu-$p.txt | head -12
done
