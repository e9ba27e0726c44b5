#!/bin/sh
# The cumsum tile kernel variants of calls 2 and 3, built on the build host into gpu-carry/micro:
# v0 is `fusec dump bench/fc/i11_cumsum.fc` (first line dropped); v1 issues the next tile's
# loads before the current tile's stores; v2 is v1 at 4 blocks a multiprocessor; v3 v0 at 6;
# v4 v0 with FCX_SCAN_PAD one element every 16 (not 32); v5 v4 at 6. v0g: v0, a block a tile.
set -eu
cd "$(dirname "$0")/../../.."
w=/tmp/scan-variants; mkdir -p $w gpu-carry/micro
build/tools/fusec dump bench/fc/i11_cumsum.fc | sed 1d > $w/scan_v0.cu
python3 bench/results/gpu-2026-11-28-session16/scan_variants.py $w
b() { nvcc -O3 -std=c++17 -arch=sm_90 -I$w -DKERNEL="\"scan_$1.cu\"" -DSCAN_ACC=double \
      -DSCAN_BLOCKS=$2 $3 -diag-suppress 177,550 -o gpu-carry/micro/scan_$4 bench/micro/scan_tiles.cu; }
b v0 5 "" v0; b v0 5 -DGRID_TILES v0g; b v1 5 "" v1; b v2 4 "" v2; b v3 6 "" v3; b v4 5 "" v4; b v5 6 "" v5
