#!/bin/sh
# tools/gpu-carry.sh [BUILD_DIR] [CARRY_DIR] - on the build host: packs a built tree's test
# binaries, examples, CLI and bench programs (debug info stripped) and the libraries the GPU
# host lacks into CARRY_DIR, for tools/gpu-tests.sh on the GPU host. Defaults: build, gpu-carry.
#
# The binaries keep the absolute paths they were built with (FUSEC_BINARY_DIR names the CLI
# and scratch files), so gpu-tests.sh recreates BUILD_DIR from CARRY_DIR/build there; build
# in a checkout at the same path as the GPU host's copy (the device tool uses the same root).
# CARRY_DIR must be git-ignored (.git/info/exclude) and named in the device call's carry.
set -eu
cd "$(dirname "$0")/.."
build=${1:-build}
carry=${2:-gpu-carry}
rm -rf "$carry"
mkdir -p "$carry/build/tests" "$carry/build/tools" "$carry/build/examples" "$carry/build/bench"
for f in "$build"/tests/test_*; do
  case $f in *.cpp | *.so | *.out | *.err | *.fc) continue ;; esac
  [ -f "$f" ] && [ -x "$f" ] && cp "$f" "$carry/build/tests/"
done
for f in "$build"/examples/*; do
  [ -f "$f" ] && [ -x "$f" ] && cp "$f" "$carry/build/examples/"
done
cp "$build/tools/fusec" "$carry/build/tools/"
for f in latency capi loop shard startup plan_time; do
  [ -x "$build/bench/$f" ] && cp "$build/bench/$f" "$carry/build/bench/"
done
find "$carry/build" -type f -exec strip --strip-debug {} +
sh tools/collect-libs.sh "$carry/libs" "$carry"/build/tests/* "$carry"/build/examples/* \
  "$carry"/build/tools/fusec "$carry"/build/bench/*
# The GPU host's own C++ runtime is newer; an older one first on LD_LIBRARY_PATH would break
# the Python peers (torch) that bench/run_all.sh runs with the same path.
rm -f "$carry"/libs/libstdc++.so* "$carry"/libs/libgcc_s.so*
if ! git check-ignore -q "$carry/libs" 2>/dev/null; then
  echo "gpu-carry.sh: note: $carry is not git-ignored; add /$carry/ to .git/info/exclude" >&2
fi
du -sh "$carry"
echo "on the GPU host: tools/gpu-tests.sh $carry $build   (device call: carry [\"$carry\"])"
