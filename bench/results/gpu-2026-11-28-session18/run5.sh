#!/usr/bin/env bash
# Call 5 (branch exp5: main eaed148 plus knobs that default off): every W row and issue-13 row
# by fusec; codegen knobs again, each variant with a kernel cache of its own this time (W9's
# strip launch bounds and widths, row launch bounds of layer norm, steps a thread of the
# compute-heavy kernels) and W3 at blocks of 512 (launch knob); compute-sanitizer over the
# new launch shapes (sanitize/).
set -u
mkdir -p gpu-carry-x && tar xJf gpu-carry/bundle.tar.xz -C gpu-carry-x
export LD_LIBRARY_PATH=$PWD/gpu-carry-x/libs
mkdir -p build && cp -r gpu-carry-x/build/. build/
D=bench/results/gpu-2026-11-28-session18
export FUSEC_CACHE_DIR=$(mktemp -d /tmp/fc-cache-XXXX)
timeout 150 python3 bench/fusec_runs.py --fusec $PWD/build/tools/fusec --json $OUT/fusec-w.json \
  --only W1,W2,W3,W4,W5,W6,W7,W8,W9,W10,W11,W13_user_l2norm,W13_builtin_l2norm,I13 --runs 15 --warmup 3 --no-sweep > /dev/null 2>&1; echo "fusec_runs rc=$?"
python3 $D/rows.py $OUT/fusec-w.json
source $D/one.sh
v() { local label=$1; shift; one "$label" FUSEC_CACHE_DIR=/tmp/fcc-$label "$@"; }
for rep in 1 2; do
  f=bench/fc/w09_box_blur.fc
  v w9base -- $f; v w9minb6 FUSEC_EXP_STRIPMINB=6 -- $f; v w9minb8 FUSEC_EXP_STRIPMINB=8 -- $f
  v w9v4 FUSEC_EXP_STRIPV=4 -- $f; v w9v4minb8 FUSEC_EXP_STRIPV=4 FUSEC_EXP_STRIPMINB=8 -- $f
  v w9v2 FUSEC_EXP_STRIPV=2 -- $f
  for f in bench/fc/i13_layernorm_32k.fc bench/fc/i13_layernorm_4k.fc; do
    n=$(basename $f .fc); v ${n}base -- $f; v ${n}minb2 FUSEC_EXP_ROWMINB=2 -- $f; v ${n}minb3 FUSEC_EXP_ROWMINB=3 -- $f
  done
  for f in bench/fc/i13_gelu_f16.fc bench/fc/w01_tanh_sin.fc; do
    n=$(basename $f .fc); v ${n}s4 -- $f; v ${n}s1 FUSEC_EXP_HEAVYSTEPS=1 -- $f
    v ${n}s2 FUSEC_EXP_HEAVYSTEPS=2 -- $f; v ${n}s8 FUSEC_EXP_HEAVYSTEPS=8 -- $f
  done
  one w3b256 -- bench/fc/w03_sum.fc; one w3b512 FUSEC_EXP_ROWBLOCK=512 -- bench/fc/w03_sum.fc
done
bash bench/results/gpu-2026-11-28-session16/sanitize.sh build/tools/fusec /tmp/san $D/sanitize 2>&1 | tail -12
tar czf $OUT/san.tgz -C /tmp san 2>/dev/null
