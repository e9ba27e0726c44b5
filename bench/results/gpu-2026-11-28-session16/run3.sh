#!/usr/bin/env bash
# Call 3: the cumsum tile kernel's shared-memory padding for 8-byte accumulators: v4 is v0
# with one element of padding every 16 (not 32; an f64 run read at a stride of 8 elements
# took two wavefronts a half-warp more), v5 v4 at 6 blocks a multiprocessor.
nvidia-smi --query-gpu=name --format=csv,noheader
for v in v0 v4 v5 v0 v4; do gpu-carry/micro/scan_$v; done 2>&1 | tee $OUT/scan-variants-pad.txt
