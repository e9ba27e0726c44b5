#!/usr/bin/env bash
# Call 8 (after the last change to GPU code: outputs_at_coords; the tree of this call's commit): every carried GPU
# test binary and example (tools/gpu-tests.sh), 600 random programs against the host
# (tools/gpu-diff.sh), the Python suite and examples on the CUDA backend, and the new kernels'
# small shapes under memcheck and racecheck (sanitize.sh).
set -u
here=bench/results/gpu-2026-11-28-session16
mkdir -p gpu-carry-x && tar xJf gpu-carry/bundle.tar.xz -C gpu-carry-x
cp gpu-carry-x/_fusec.abi3.so python/fusec/
export LD_LIBRARY_PATH=$PWD/gpu-carry-x/libs
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
GPU_SKIP="test_shard_diff test_gpu_diff test_composite" GPU_TEST_LIMIT=150 GPU_JOBS=8 tools/gpu-tests.sh gpu-carry-x build > $OUT/gpu-tests.txt 2>&1 &
sleep 5
GPU_DIFF_LIMIT=100 tools/gpu-diff.sh 0 600 6 2>&1 | tail -2
wait
grep -E "gpu-tests:" $OUT/gpu-tests.txt | head -3
grep "rc=" $OUT/gpu-tests.txt | grep -v "rc=0" | sort -u
export FUSEC_CACHE_DIR=$(mktemp -d /tmp/fc-cache-XXXX)
bash $here/sanitize.sh $PWD/build/tools/fusec /tmp/san 2>&1 | tee $OUT/sanitize.txt
export PYTHONPATH=$PWD/gpu-carry-x/pylib:$PWD/python
timeout 200 python3 -m pytest -q -p no:cacheprovider python/tests > $OUT/pytest.txt 2>&1; echo "pytest rc=$?"
tail -2 $OUT/pytest.txt; grep -E "^FAILED" $OUT/pytest.txt | head -8
for py in examples/python/[a-z]*.py; do timeout 60 python3 $py > /tmp/py-$(basename $py .py).txt 2>&1 || echo "FAILED $py"; done
grep -h "overhead" /tmp/py-overhead.txt
# the rows whose kernels outputs_at_coords generates (their source is unchanged: a check)
for p in w09_box_blur i13_transpose_ew i13_laplacian; do
  printf '%-18s ' $p; build/tools/fusec run bench/fc/$p.fc --backend cuda --bench --runs 15 2>&1 | grep -E "median|floor " | tr '\n' ' ' | sed -E 's/ +/ /g; s/\(15 runs[^)]*\)//; s/copy bandwidth.*floor/floor/'; echo
done
