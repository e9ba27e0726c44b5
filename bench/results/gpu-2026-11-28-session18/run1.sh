#!/usr/bin/env bash
# Call 1 (branch gridexp, an uncommitted experiment knob): grid shapes of elementwise and tile
# kernels (FUSEC_EXP_EWGRID: 0 = a 16-byte vector a thread, N = N resident grids;
# FUSEC_EXP_EWBLOCK: threads a block; FUSEC_EXP_TILEGRID: 0 = a block a tile) and a register
# cap of row kernels (FUSEC_EXP_ROWMINB: __launch_bounds__ minimum blocks), each variant run
# twice in alternation, fusec run --bench --back-to-back, 30 runs.
set -u
mkdir -p gpu-carry-x && tar xJf gpu-carry/bundle.tar.xz -C gpu-carry-x
export LD_LIBRARY_PATH=$PWD/gpu-carry-x/libs
mkdir -p build && cp -r gpu-carry-x/build/. build/
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
export FUSEC_CACHE_DIR=$(mktemp -d /tmp/fc-cache-XXXX)
source bench/results/gpu-2026-11-28-session18/one.sh
EW="bench/fc/w01_tanh_sin.fc bench/fc/w02_poly.fc bench/fc/w05_leaky_relu.fc bench/fc/w10_saxpy.fc bench/fc/i13_gelu_f16.fc bench/fc/i13_gelu_bf16.fc bench/fc/i13_adam.fc bench/fc/i13_outer.fc"
for f in $EW; do
  for rep in 1 2; do
    one base -- $f
    one full FUSEC_EXP_EWGRID=0 -- $f
    one waves4 FUSEC_EXP_EWGRID=4 -- $f
    one b128full FUSEC_EXP_EWBLOCK=128 FUSEC_EXP_EWGRID=0 -- $f
    one b128 FUSEC_EXP_EWBLOCK=128 -- $f
  done
done
for rep in 1 2; do
  one base -- bench/fc/i13_transpose_ew.fc
  one tilefull FUSEC_EXP_TILEGRID=0 -- bench/fc/i13_transpose_ew.fc
  one tile2 FUSEC_EXP_TILEGRID=2 -- bench/fc/i13_transpose_ew.fc
done
for f in bench/fc/i13_bn_stats.fc bench/fc/i13_layernorm_4k.fc bench/fc/i13_layernorm_32k.fc bench/fc/i13_mean_std_rows.fc bench/fc/i13_col_softmax.fc; do
  for rep in 1 2; do
    one base -- $f
    one minb2 FUSEC_EXP_ROWMINB=2 -- $f
    one minb3 FUSEC_EXP_ROWMINB=3 -- $f
  done
done
