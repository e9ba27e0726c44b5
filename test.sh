#!/usr/bin/env bash
# Builds fusec in build/ with warnings as errors and runs the whole test suite (ctest), then
# the Python package's tests (tools/python-tests.sh: pytest, where python3 >= 3.11 is present).
# Installs the build dependencies first if any is missing (Debian; sudo when not root; the
# Python test tools through pip).
set -euo pipefail
cd "$(dirname "$0")"
source .ci/deps.sh
fusec_install_deps

jobs=$(fusec_jobs)
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFUSEC_WERROR=ON \
  -DFUSEC_BUILD_TESTS=ON -DFUSEC_BUILD_EXAMPLES=ON
cmake --build build -j "$jobs"
(cd build && ctest --output-on-failure -j "$jobs")
tools/python-tests.sh
