#!/usr/bin/env bash
# Call 2 (branch gridexp + the hardware f64 -> f16 rounding): elementwise grids of K resident
# grids' worth (FUSEC_EXP_EWGRID=K; 0 = a 16-byte vector a thread), each variant twice.
set -u
mkdir -p gpu-carry-x && tar xJf gpu-carry/bundle.tar.xz -C gpu-carry-x
export LD_LIBRARY_PATH=$PWD/gpu-carry-x/libs
mkdir -p build && cp -r gpu-carry-x/build/. build/
export FUSEC_CACHE_DIR=$(mktemp -d /tmp/fc-cache-XXXX)
source bench/results/gpu-2026-11-28-session18/one.sh
for f in bench/fc/w01_tanh_sin.fc bench/fc/w02_poly.fc bench/fc/w05_leaky_relu.fc bench/fc/w10_saxpy.fc bench/fc/i13_gelu_f16.fc bench/fc/i13_gelu_bf16.fc bench/fc/i13_adam.fc bench/fc/i13_outer.fc bench/fc/w08_mandelbrot.fc bench/fc/w07_normalize_cols.fc; do
  for rep in 1 2; do
    one base -- $f
    one K8 FUSEC_EXP_EWGRID=8 -- $f
    one K16 FUSEC_EXP_EWGRID=16 -- $f
    one K32 FUSEC_EXP_EWGRID=32 -- $f
    one full FUSEC_EXP_EWGRID=0 -- $f
  done
done
