#!/usr/bin/env bash
# Sourced by tools/python-tests.sh and run.sh: makes build/python-venv, a virtual environment
# that sees the system's site-packages (NumPy and the test tools already installed are reused;
# pip installs what is missing into the venv, never into the user's Python), and installs the
# fusec package (python/) into it against build/libfusec.so. Sets $venv_py to its python.
# Arguments: the modules needed, as module:pip-name pairs. Needs python3 >= 3.11 ($PYTHON).
# Returns 2 when python3 is missing or older than 3.11, 1 when a step failed (log printed).
fusec_python_env() {
  local py=${PYTHON:-python3} venv=build/python-venv missing=() mod
  if ! "$py" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    return 2
  fi
  if [ ! -x "$venv/bin/python" ]; then
    "$py" -m venv --system-site-packages "$venv" || return 1
  fi
  venv_py=$PWD/$venv/bin/python
  for mod in numpy:numpy setuptools:setuptools wheel:wheel "$@"; do
    "$venv_py" -c "import ${mod%%:*}" 2>/dev/null || missing+=("${mod#*:}")
  done
  if [ ${#missing[@]} -ne 0 ]; then
    echo "python-env: installing ${missing[*]} into $venv (pip)"
    "$venv_py" -m pip install -q --disable-pip-version-check "${missing[@]}" || return 1
  fi
  # The extension is built in python/build (setuptools skips what is up to date) and the
  # package installed into the venv without a wheel round trip.
  if ! (cd python && FUSEC_WERROR=1 FUSEC_BUILD_DIR="$OLDPWD/build" "$venv_py" -m pip install \
        --no-build-isolation --no-deps --disable-pip-version-check -q . ) \
        >build/python-install.log 2>&1; then
    cat build/python-install.log >&2
    echo "python-env: building the Python package failed" >&2
    return 1
  fi
}
