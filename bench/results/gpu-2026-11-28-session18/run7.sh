#!/usr/bin/env bash
# Call 7 (branch exp7: main 696c6c7 plus knobs that default off): W9's strips at 1 and 2
# outputs a thread (FUSEC_EXP_STRIPV) and with launch bounds of 5-8 blocks
# (FUSEC_EXP_STRIPMINB), each variant with a kernel cache of its own, twice.
set -u
mkdir -p gpu-carry-x && tar xJf gpu-carry/bundle.tar.xz -C gpu-carry-x
export LD_LIBRARY_PATH=$PWD/gpu-carry-x/libs
mkdir -p build && cp -r gpu-carry-x/build/. build/
D=bench/results/gpu-2026-11-28-session18
source $D/one.sh
v() { local label=$1; shift; one "$label" FUSEC_CACHE_DIR=/tmp/fcc-$label "$@"; }
f=bench/fc/w09_box_blur.fc
for rep in 1 2; do
  v v2 -- $f; v v1 FUSEC_EXP_STRIPV=1 -- $f; v v2minb6 FUSEC_EXP_STRIPMINB=6 -- $f
  v v2minb8 FUSEC_EXP_STRIPMINB=8 -- $f; v v1minb8 FUSEC_EXP_STRIPV=1 FUSEC_EXP_STRIPMINB=8 -- $f
  v v4minb6 FUSEC_EXP_STRIPV=4 FUSEC_EXP_STRIPMINB=6 -- $f
done
