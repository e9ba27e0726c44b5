#!/usr/bin/env bash
# Builds and installs the Python package (python/) against build/libfusec.so into the virtual
# environment build/python-venv (tools/python-env.sh: it reuses the system's NumPy and test
# tools, and pip installs what is missing there, never into the user's Python), then runs its
# tests with pytest (hypothesis against NumPy, array-api-strict's promotion and shapes). Run by
# ./test.sh after ctest.
# Needs python3 >= 3.11 and build/libfusec.so (cmake --build build --target fusec).
# Extra arguments go to pytest (tools/python-tests.sh -k indexing).
set -euo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-python3}

source tools/python-env.sh
rc=0
fusec_python_env pytest:pytest hypothesis:hypothesis array_api_strict:array-api-strict || rc=$?
if [ $rc = 2 ]; then
  echo "python-tests: $py is missing or older than 3.11: the Python package is not tested" >&2
  exit 0
elif [ $rc != 0 ]; then
  exit 1
fi
# From outside python/, so that the installed package is the one imported. -rs lists each
# skipped test with its reason (the GPU-only tests on a machine without one).
cd build
"$venv_py" -m pytest -q -rs -p no:cacheprovider --rootdir=../python ../python/tests "$@"
