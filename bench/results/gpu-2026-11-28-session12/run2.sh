#!/usr/bin/env bash
# Call 2: the new scan tiles (registers, one-word status, warp-0 look-back) and the compaction
# kernel: their GPU tests, then the scan and compaction rows with three tile sizes (fusec
# binaries built with FCX_SCAN_TILE 2048, 4096 and 8192), then compute-sanitizer's memcheck of
# the new tests (last: nothing runs beside it).
export LD_LIBRARY_PATH=$PWD/gpu-carry/libs
rm -rf build && mkdir -p build && cp -r gpu-carry/build/. build/
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 240 build/tests/test_gpu_lib --filter 'gpu_lib/@(scans|compactions)*' 2>&1 | tail -4
timeout 100 build/tests/test_runtime --filter 'gpu/*' 2>&1 | tail -1
for v in 4096 2048 8192; do
  f=gpu-carry/variants/fusec-t$v
  for p in bench/fc/i11_cumsum.fc bench/micro/cumsum_f64.fc bench/micro/cummax_f32.fc bench/micro/cumsum_i32.fc; do
    printf "t%-5s %-28s " $v $(basename $p); $f run $p --backend cuda --bench 2>&1 | grep -E "median|% of floor" | tr '\n' ' '; echo
  done
  printf "t%-5s %-28s " $v i11_compress.fc; $f run bench/fc-data/i11_compress.fc --backend cuda --bench --time-build 2>&1 | grep -E "median|% of floor" | tr '\n' ' '; echo
done
timeout 120 compute-sanitizer --tool memcheck build/tests/test_gpu_lib --filter 'gpu_lib/compactions*' 2>&1 | tail -3
