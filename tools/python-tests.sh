#!/usr/bin/env bash
# Builds and installs the Python package (python/) against build/libfusec.so, then runs its
# tests with pytest (hypothesis against NumPy, array-api-strict's promotion and shapes). Run by
# ./test.sh after ctest; installs what the tests need from PyPI (pip) when it is missing.
# Needs python3 >= 3.11 and build/libfusec.so (cmake --build build --target fusec).
# Extra arguments go to pytest (tools/python-tests.sh -k indexing).
set -euo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-python3}

if ! "$py" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "python-tests: $py is missing or older than 3.11: the Python package is not tested" >&2
  exit 0
fi
missing=()
for mod in numpy:numpy pytest:pytest hypothesis:hypothesis array_api_strict:array-api-strict \
           wheel:wheel setuptools:setuptools; do
  "$py" -c "import ${mod%%:*}" 2>/dev/null || missing+=("${mod#*:}")
done
if [ ${#missing[@]} -ne 0 ]; then
  echo "python-tests: installing ${missing[*]} (pip)"
  "$py" -m pip install -q --disable-pip-version-check "${missing[@]}"
fi

echo "python-tests: building and installing python/ (log: build/python-install.log)"
if ! FUSEC_WERROR=1 FUSEC_BUILD_DIR="$PWD/build" "$py" -m pip install --no-build-isolation \
    --no-deps --force-reinstall --disable-pip-version-check ./python \
    >build/python-install.log 2>&1; then
  cat build/python-install.log >&2
  echo "python-tests: building the Python package failed" >&2
  exit 1
fi
# From outside python/, so that the installed package is the one imported.
cd build
"$py" -m pytest -q -p no:cacheprovider --rootdir=../python ../python/tests "$@"
