#!/usr/bin/env bash
# Call 9: align_probe.py: arrays imported at addresses that are not 16-byte aligned.
set -u
mkdir -p gpu-carry-x && tar xJf gpu-carry/bundle.tar.xz -C gpu-carry-x
cp gpu-carry-x/_fusec.abi3.so python/fusec/
export LD_LIBRARY_PATH=$PWD/gpu-carry-x/libs PYTHONPATH=$PWD/gpu-carry-x/pylib:$PWD/python
timeout 60 python3 bench/results/gpu-2026-11-28-session16/align_probe.py 2>&1 | tail -8
