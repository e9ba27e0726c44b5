#!/usr/bin/env bash
# Call 7 (main after the rowdiet and ewmlp merges: the last change to GPU code): every carried
# GPU test binary and example (tools/gpu-tests.sh), 600 random programs against the host
# (tools/gpu-diff.sh), the Python suite on the CUDA backend, sanitize.sh on every new kernel
# family, and the rows the last two merges touch, timed.
set -u
here=bench/results/gpu-2026-11-28-session17
mkdir -p gpu-carry-x && tar xJf gpu-carry/bundle.tar.xz -C gpu-carry-x
cp gpu-carry-x/_fusec.abi3.so python/fusec/
export LD_LIBRARY_PATH=$PWD/gpu-carry-x/libs
mkdir -p build && cp -r gpu-carry-x/build/. build/
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
F=build/tools/fusec
for p in i13_layernorm_1k i13_layernorm_4k i13_layernorm_16k i13_layernorm_32k i13_mean_std_rows w04_softmax w06_row_l2norm i13_adam w01_tanh_sin w02_poly w05_leaky_relu w10_saxpy i13_gelu_f16 i13_gelu_bf16; do
  printf '%-20s ' $p; $F run bench/fc/$p.fc --backend cuda --bench --runs 15 2>&1 | grep -E "^  time|floor  " | sed -E 's/ +/ /g;s/\(15 runs.*//;s/min.*max [0-9.]+ ms//' | tr '\n' ' '; echo
done
GPU_SKIP="test_shard_diff test_gpu_diff test_composite" GPU_TEST_LIMIT=150 GPU_JOBS=8 tools/gpu-tests.sh gpu-carry-x build > $OUT/gpu-tests.txt 2>&1 &
sleep 5
GPU_DIFF_LIMIT=100 tools/gpu-diff.sh 0 600 6 2>&1 | tail -2
wait
grep -E "gpu-tests:" $OUT/gpu-tests.txt | head -3
grep "rc=" $OUT/gpu-tests.txt | grep -v "rc=0" | sort -u
export FUSEC_CACHE_DIR=$(mktemp -d /tmp/fc-cache-XXXX)
bash $here/sanitize.sh $PWD/$F /tmp/san 2>&1 | tee $OUT/sanitize.txt | grep -E "^(adam|gelu|layernorm|mean_std)"
export PYTHONPATH=$PWD/gpu-carry-x/pylib:$PWD/python
timeout 200 python3 -m pytest -q -p no:cacheprovider python/tests > $OUT/pytest.txt 2>&1; echo "pytest rc=$?"
tail -2 $OUT/pytest.txt; grep -E "^FAILED" $OUT/pytest.txt | head -8
