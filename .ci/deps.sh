# Sourced by run.sh, test.sh and .ci/run: the Debian packages fusec builds and tests with (and
# those the fuzz targets add, for .ci/run), and a function that installs whichever of the
# first are missing (apt-get runs only then).
FUSEC_DEPS=(cmake make gcc g++ libc6-dev pkg-config liblmdb-dev libxxhash-dev libcriterion-dev
  libdlpack-dev)
# What .ci/run needs besides, for the libFuzzer targets (tools/fuzz.sh): clang and libFuzzer's
# runtime. Apart, so that ./test.sh and ./run.sh neither need nor install clang.
FUSEC_FUZZ_DEPS=(clang libclang-rt-14-dev)

fusec_sudo() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

fusec_install_deps() {
  if ! command -v dpkg-query >/dev/null 2>&1; then
    echo "fusec: not a Debian system; make sure these (or their equivalents) are installed:" \
         "${FUSEC_DEPS[*]}" >&2
    return 0
  fi
  local missing=() pkg
  for pkg in "${FUSEC_DEPS[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'ok installed' || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "fusec: installing ${missing[*]}"
  fusec_sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q
  fusec_sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
    "${missing[@]}"
}

fusec_jobs() {
  nproc 2>/dev/null || echo 2
}
