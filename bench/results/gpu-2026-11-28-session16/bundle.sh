#!/bin/sh
# bench/results/gpu-2026-11-28-session16/bundle.sh - on the build host: the GPU host's carry as
# one compressed file, gpu-carry/bundle.tar.xz (the test binaries, CLI, bench programs, their
# libraries, the Python extension and the Python test tools for the GPU host's CPython 3.12
# come to ~60 MB, over the device tool's 64 MiB with the tree; compressed, ~15 MB).
set -eu
cd "$(dirname "$0")/../../.."
stage=/tmp/fusec-stage
rm -rf "$stage" gpu-carry
sh tools/gpu-carry.sh build "$stage" >/dev/null
cp build/bench/libdirect "$stage/build/bench/"
for t in test_prelude test_graph test_fusion test_codegen_emulated test_fc test_cli test_simplify \
         test_fc_user test_ops_ref test_promotion test_weak_scalars test_npy test_fc_methods \
         test_hash test_shapes test_fc_docs test_fc_sparse test_env test_cache_damage \
         test_codegen test_interop; do
  rm -f "$stage/build/tests/$t"
done
rm -f "$stage"/build/tests/test_header_*
(cd python && FUSEC_BUILD_DIR=../build python3 setup.py -q build_ext --inplace >/dev/null 2>&1)
cp python/fusec/_fusec.abi3.so "$stage/"
pip install -q --target "$stage/pylib" --no-deps pytest array-api-strict iniconfig packaging \
  pluggy attrs sortedcontainers >/dev/null 2>&1
rm -rf /tmp/fusec-h312 && pip download -q hypothesis --python-version 3.12 --only-binary=:all: \
  --no-deps -d /tmp/fusec-h312 >/dev/null 2>&1
(cd "$stage/pylib" && python3 -m zipfile -e /tmp/fusec-h312/*.whl .)
find "$stage/pylib" -name __pycache__ -prune -exec rm -rf {} +
mkdir -p gpu-carry
tar cJf gpu-carry/bundle.tar.xz -C "$stage" .
du -h gpu-carry/bundle.tar.xz
