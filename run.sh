#!/usr/bin/env bash
# Builds fusec in build/ and runs its main job (on the GPU when there is one, else on the host
# backend): every seed program in examples/, each checked against plain C, the same programs
# in Python (examples/python/, checked against NumPy; where python3 >= 3.11 is there), then .fc
# workloads through the fusec CLI at a modest size. Installs missing build dependencies first
# (Debian; sudo when not root). Exits non-zero if anything fails or does not match.
set -euo pipefail
cd "$(dirname "$0")"
source .ci/deps.sh
fusec_install_deps

jobs=$(fusec_jobs)
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
# The seed programs in the order of the workload list, then any others.
examples=(tanh_sin saxpy poly2 softmax l2norm normalize colmean mandelbrot blur3x3)
for src in examples/*.c; do
  name=$(basename "$src" .c)
  [[ " ${examples[*]} " == *" $name "* ]] || examples+=("$name")
done
echo "run.sh: building fusec in build/ (log: build/run-build.log)"
if ! cmake --build build -j "$jobs" --target fusec_cli "${examples[@]/#/example_}" \
    >build/run-build.log 2>&1; then
  cat build/run-build.log >&2
  echo "run.sh: the build failed" >&2
  exit 1
fi

failed=()
section() { printf '\n== %s\n\n' "$*"; }

section "Seed programs (examples/*.c), each checked against plain C"
for name in "${examples[@]}"; do
  if ! "build/examples/$name"; then failed+=("examples/$name"); fi
  echo
done

section "The seed programs in Python (examples/python/*.py), each checked against NumPy"
# Where python3 >= 3.11 is there: the package is installed into build/python-venv against
# build/libfusec.so (tools/python-env.sh; NumPy installed there through pip when missing).
source tools/python-env.sh
if ! cmake --build build -j "$jobs" --target fusec >>build/run-build.log 2>&1; then
  failed+=("python: libfusec's build")
else
  rc=0
  fusec_python_env || rc=$?
  if [ $rc = 2 ]; then
    echo "(no python3 >= 3.11: skipped)"
  elif [ $rc != 0 ]; then
    failed+=("python: the package's build")
  else
    for py in examples/python/[a-z]*.py; do
      "$venv_py" "$py" || failed+=("$py")
      echo
    done
  fi
fi

section "A .fc workload through the CLI: examples/fc/softmax.fc"
cat examples/fc/softmax.fc
echo
echo "\$ build/tools/fusec print examples/fc/softmax.fc --set n=2048"
build/tools/fusec print examples/fc/softmax.fc --set n=2048 || failed+=("fusec print softmax")
echo
echo "\$ build/tools/fusec run examples/fc/softmax.fc --set n=2048"
build/tools/fusec run examples/fc/softmax.fc --set n=2048 || failed+=("fusec run softmax")

section "The other workloads in examples/fc/, at modest sizes"
# User kernels are CUDA C: with no GPU their program is compiled (NVRTC), not run.
gpu=0
build/tools/fusec run examples/fc/softmax.fc --backend cuda --set n=8 >/dev/null 2>&1 && gpu=1
for fc in examples/fc/*.fc; do
  [ "$fc" = examples/fc/softmax.fc ] && continue
  sets=(--set n=65536)
  case "$fc" in
    *blur3x3.fc) sets=(--set h=512 --set w=512) ;;
    *l2norm.fc | *colmean.fc | *normalize.fc | *user_kernels.fc) sets=(--set n=512) ;;
  esac
  if [ "$fc" = examples/fc/user_kernels.fc ] && [ $gpu = 0 ]; then
    tmpcache=$(mktemp -d)
    echo "\$ build/tools/fusec warm --arch sm_90 --cache-dir TMP $fc ${sets[*]}   (no GPU: compiled, not run)"
    build/tools/fusec warm --arch sm_90 --cache-dir "$tmpcache" "${sets[@]}" "$fc" ||
      failed+=("fusec warm $fc")
    rm -rf "$tmpcache"
    echo
    continue
  fi
  echo "\$ build/tools/fusec run $fc ${sets[*]}"
  build/tools/fusec run "$fc" "${sets[@]}" || failed+=("fusec run $fc")
  echo
done

if [ ${#failed[@]} -ne 0 ]; then
  echo "run.sh: FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "run.sh: all seed programs match plain C; every workload ran."
