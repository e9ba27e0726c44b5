#!/usr/bin/env bash
# Call 3 (the grid policy and the f64 -> f16 instruction, uncommitted): every W row and issue
# 13 row by fusec alone (bench/fusec_runs.py), Nsight Compute on the kernels furthest from
# their targets (W11, batch-norm statistics, W9, layer norm 32k), the new f16 rounding tests
# on the GPU, 120 random programs against the host.
set -u
mkdir -p gpu-carry-x && tar xJf gpu-carry/bundle.tar.xz -C gpu-carry-x
cp gpu-carry-x/_fusec.abi3.so python/fusec/
export LD_LIBRARY_PATH=$PWD/gpu-carry-x/libs
D=bench/results/gpu-2026-11-28-session18
mkdir -p build && cp -r gpu-carry-x/build/. build/
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
export FUSEC_CACHE_DIR=$(mktemp -d /tmp/fc-cache-XXXX)
timeout 150 python3 bench/fusec_runs.py --fusec $PWD/build/tools/fusec --json $OUT/fusec-w.json \
  --only W1,W2,W3,W4,W5,W6,W7,W8,W9,W10,W11,W13_user_l2norm,W13_builtin_l2norm,I13 --runs 15 --warmup 3 --no-sweep > /dev/null 2>&1; echo "fusec_runs rc=$?"
python3 $D/rows.py $OUT/fusec-w.json
S="--section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats --section MemoryWorkloadAnalysis --section SourceCounters --metrics dram__bytes_read.sum,dram__bytes_write.sum,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active"
for p in w11_col_mean_scaled i13_bn_stats w09_box_blur i13_layernorm_32k; do
  timeout 60 ncu --clock-control none $S -k regex:fusec_kernel \
    build/tools/fusec run bench/fc/$p.fc --backend cuda --bench --runs 1 --warmup 0 > $OUT/ncu-fusec-$p.txt 2>&1
  echo "== fusec $p"; grep -E "^  [a-z_]+.*\(|Duration|DRAM Throughput|Registers Per|Block Size|Grid Size|Achieved Occupancy|Executed Ipc A|dram__bytes|inst_executed|issue_active|Theoretical Occ|Warp Cycles Per Issued|L2 Hit|L1/TEX Hit|Stall" $OUT/ncu-fusec-$p.txt | head -40
done
export PYTHONPATH=$PWD/gpu-carry-x/pylib:$PWD/python
timeout 100 python3 -m pytest -q -p no:cacheprovider python/tests/test_array.py 2>&1 | tail -3
GPU_DIFF_LIMIT=60 tools/gpu-diff.sh 0 120 6 2>&1 | tail -2 | head -1
