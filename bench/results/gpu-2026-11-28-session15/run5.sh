#!/usr/bin/env bash
# Call 5: issue 12's rows in one run, with CuPy, PyTorch, torch.compile, JAX and the libraries
# called directly (bench/run_i12.sh), on the tree of call 4.
set -u
mkdir -p gpu-carry-x && tar xJf gpu-carry/bundle.tar.xz -C gpu-carry-x
export LD_LIBRARY_PATH=$PWD/gpu-carry-x/libs
mkdir -p build && cp -r gpu-carry-x/build/. build/
# memcheck's one error in call 4 on test_gpu_interop: which call
timeout 100 compute-sanitizer --tool memcheck build/tests/test_gpu_interop 2>&1 | grep -E "=========" | grep -v "^=========     " | head -8
FUSEC_CARRY=gpu-carry-x FUSEC_BIN=$PWD/build/tools/fusec LIBDIRECT_BIN=$PWD/build/bench/libdirect BENCH_RUNS=7 BENCH_WARMUP=2 timeout 330 bench/run_i12.sh /tmp/i12 > /tmp/run_i12.txt 2>&1; echo "run_i12 rc=$?"
cp /tmp/i12/RESULTS.md $OUT/i12-RESULTS.md 2>/dev/null
tar czf $OUT/i12.tgz -C /tmp i12 run_i12.txt 2>/dev/null
grep -A14 "fusec / library" /tmp/run_i12.txt | head -20
sed -n '/^| id | program | kernels/,/^Targets met/p' $OUT/i12-RESULTS.md | cut -d'|' -f2,4-7,12-16
