#!/usr/bin/env bash
# Call 2: fusec's cumsum tile kernel as dumped (v0) and hand-edited variants, timed by
# bench/micro/scan_tiles.cu (built on the build host): v0g a block a tile (CUB's grid), v1 the
# next tile's loads issued before the current tile's stores, v2 v1 at 4 blocks a
# multiprocessor (no spills), v3 v0 at 6 blocks.
nvidia-smi --query-gpu=name --format=csv,noheader
for v in v0 v0g v1 v2 v3; do gpu-carry/micro/scan_$v; done 2>&1 | tee $OUT/scan-variants.txt
