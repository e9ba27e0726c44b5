#!/usr/bin/env bash
# Call 1: the design probes (bench/micro/scan_gather.cu, built on the build host) beside the
# fusec rows they concern, on the tree at the session's start (d4b3a44), and Nsight Compute's
# view of fusec's cumsum, take and normal kernels.
export LD_LIBRARY_PATH=$PWD/gpu-carry/libs
rm -rf build && mkdir -p build && cp -r gpu-carry/build/. build/
nvidia-smi --query-gpu=name,driver_version,clocks.max.memory --format=csv,noheader
gpu-carry/micro/scan_gather 2>&1 | tee $OUT/micro.txt
timeout 150 python3 bench/fusec_runs.py --fusec build/tools/fusec --json $OUT/fusec.json --only W1,I11_cumsum,I11_take,I11_compress,I11_normal --no-sweep 2>&1 | grep -E "^(W1|I11)"
for p in i11_cumsum i11_normal; do
  timeout 60 ncu --clock-control none --section SpeedOfLight --section WarpStateStats --section Occupancy --section LaunchStats \
    build/tools/fusec run bench/fc/$p.fc --backend cuda --bench --runs 1 --warmup 0 > $OUT/ncu-$p.txt 2>&1
  grep -E "Duration|Throughput|Registers|Achieved Occupancy|Theoretical Occupancy|Stall|Block Limit|Grid Size|Shared Memory Config" $OUT/ncu-$p.txt | head -40
done
