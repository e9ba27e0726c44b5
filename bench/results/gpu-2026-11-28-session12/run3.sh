#!/usr/bin/env bash
# Call 3: launch shapes of the scan tiles and of gathers, as fusec binaries built with
# other constants (call 2's tile variants had not been relinked: they were one binary):
#   v0     FCX_SCAN_GRID 16 (tiles' grid capped at 16 resident grids), FCX_SCAN_TILE 4096
#   v1     FCX_SCAN_GRID 1 (persistent tile blocks), gathers' elementwise grid x16
#   v2     FCX_SCAN_GRID 2, gathers' grid uncapped (a thread an element)
#   t2048, t8192: v0 with FCX_SCAN_TILE 2048 / 8192
# then Nsight Compute's warp states of v0's cumsum.
export LD_LIBRARY_PATH=$PWD/gpu-carry/libs
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c "import numpy as np; np.save('/tmp/take_i.npy', np.random.default_rng(11).integers(0, 1 << 26, 1 << 24, dtype=np.int32))"
bench() { v=$1; p=$2; shift 2; printf "%-6s %-14s " $v $(basename $p .fc); gpu-carry/variants/fusec-$v run $p "$@" --backend cuda --bench 2>&1 | grep -E "median|% of floor" | sed -E 's/ +/ /g; s/\(15 runs.*//; s/\(device-to.*//' | tr '\n' ' '; echo; }
for v in v0 v1 v2 t2048 t8192; do
  for p in bench/fc/i11_cumsum.fc bench/micro/cummax_f32.fc bench/micro/cumsum_f64.fc; do bench $v $p; done
  bench $v bench/fc-data/i11_compress.fc --time-build
done
for v in v0 v1 v2; do bench $v bench/fc/i11_take.fc --input i=/tmp/take_i.npy --floor-bytes 671088640; done
timeout 90 ncu --clock-control none --section SpeedOfLight --section WarpStateStats --section Occupancy --section LaunchStats \
  gpu-carry/variants/fusec-v0 run bench/fc/i11_cumsum.fc --backend cuda --bench --runs 1 --warmup 0 > $OUT/ncu-cumsum.txt 2>&1
grep -E "Duration|DRAM Throughput|Registers|Achieved Occupancy|Theoretical Occupancy|Block Limit (Reg|Shared)|Grid Size|Stall|cycles being stalled" $OUT/ncu-cumsum.txt | head -30
