#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/) with clang, ASan and UBSan in build-fuzz/ and runs each
# for SECONDS (default 60), one after another:
#
#     tools/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]     # e.g. tools/fuzz.sh 600
#
# Targets: fuzz_fc fuzz_npy fuzz_cache_value fuzz_cache_import (default: all). Each starts from
# its seed corpus (fuzz/corpus/TARGET, read only) and the inputs earlier runs kept
# (build-fuzz/corpus/TARGET, where new ones go). Prints a line per target: executions, corpus
# size, coverage, findings; a finding (crash, sanitizer report, leak, timeout past 25 s, out
# of memory past 2 GB, a broken promise the target checks) is saved under
# build-fuzz/findings/TARGET/ and the log's end is shown (build-fuzz/logs/TARGET.log has it
# all). Inputs slower than 10 s are saved there too (slow-unit-*) and said, but are not
# findings. Exits 1 if any target found something, 2 on a build or usage error.
#
# Reproduce a finding: build-fuzz/fuzz/TARGET FILE (runs that one input, with the report).
# Environment: FUZZ_SEED (libFuzzer's -seed; default 1, so a run is repeatable up to timing),
# FUZZ_ARGS (more libFuzzer flags), FUSEC_JOBS (build jobs; default: the CPUs).
set -euo pipefail
cd "$(dirname "$0")/.."

all=(fuzz_fc fuzz_npy fuzz_cache_value fuzz_cache_import)
secs=60
if [ $# -gt 0 ] && [[ $1 =~ ^[0-9]+$ ]]; then
  secs=$1
  shift
fi
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=("${all[@]}")
for t in "${targets[@]}"; do
  case " ${all[*]} " in *" $t "*) continue ;; esac
  echo "fuzz: unknown target '$t' (one of: ${all[*]})" >&2
  echo "usage: tools/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]" >&2
  exit 2
done
if ! command -v clang >/dev/null 2>&1; then
  echo "fuzz: needs clang and libFuzzer (Debian: apt-get install clang libclang-rt-14-dev)" >&2
  exit 2
fi

jobs=${FUSEC_JOBS:-$(nproc 2>/dev/null || echo 2)}
build="build-fuzz"
start=$(date +%s)
cmake -S . -B "$build" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DFUSEC_FUZZ=ON -DFUSEC_BUILD_TESTS=OFF -DFUSEC_BUILD_EXAMPLES=OFF -DFUSEC_BUILD_BENCH=OFF \
  >"$build.configure.log" 2>&1 || { cat "$build.configure.log" >&2; exit 2; }
mv "$build.configure.log" "$build/configure.log"
cmake --build "$build" -j "$jobs" --target "${targets[@]}" >"$build/build.log" 2>&1 ||
  { tail -n 60 "$build/build.log" >&2; echo "fuzz: build failed ($build/build.log)" >&2; exit 2; }
echo "fuzz: built ${targets[*]} in $(($(date +%s) - start)) s; $secs s per target"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
failed=0
npass=0
nfail=0
for t in "${targets[@]}"; do
  corpus=$build/corpus/$t
  findings=$build/findings/$t
  log=$build/logs/$t.log
  mkdir -p "$corpus" "$findings" "$build/logs"
  before=$(find "$findings" -type f ! -name 'slow-unit-*' | wc -l)
  touch "$log.started"
  dict=()
  [ -f "fuzz/${t#fuzz_}.dict" ] && dict=(-dict="fuzz/${t#fuzz_}.dict")
  rc=0
  # shellcheck disable=SC2086 # FUZZ_ARGS is a list of flags
  "$build/fuzz/$t" -max_total_time="$secs" -timeout=25 -rss_limit_mb=2048 \
    -seed="${FUZZ_SEED:-1}" -print_final_stats=1 -artifact_prefix="$findings/" \
    "${dict[@]}" ${FUZZ_ARGS:-} "$corpus" "fuzz/corpus/$t" >"$log" 2>&1 || rc=$?
  execs=$(grep -a '^stat::number_of_executed_units:' "$log" | tail -n 1 | tr -dc '0-9' || true)
  done_line=$(grep -a -E '^#[0-9]+.*(DONE|INITED)' "$log" | tail -n 1 || true)
  cov=$(sed -E -n 's/.* cov: ([0-9]+).*/\1/p' <<<"$done_line")
  corp=$(sed -E -n 's/.* corp: ([0-9]+\/[0-9]+[a-zA-Z]*).*/\1/p' <<<"$done_line")
  new=$(($(find "$findings" -type f ! -name 'slow-unit-*' | wc -l) - before))
  slow=$(find "$findings" -type f -name 'slow-unit-*' -newer "$log.started" | wc -l)
  extra=""
  [ "$slow" -gt 0 ] && extra=" (and $slow inputs slower than 10 s, saved as slow-unit-*)"
  echo "fuzz: $t: ${execs:-?} executions, corpus ${corp:-?} (inputs/bytes), coverage ${cov:-?}," \
       "findings $new$extra"
  grep -a '^fuzz_[a-z_]*: stats:' "$log" | tail -n 1 | sed 's/^/fuzz:   /' || true
  if [ "$new" -gt 0 ] || [ "$rc" -ne 0 ]; then
    failed=1
    nfail=$((nfail + 1))
    echo "fuzz: $t failed (exit $rc); its log, $log, ends:" >&2
    tail -n 40 "$log" >&2
    find "$findings" -type f ! -name 'slow-unit-*' -newer "$log.started" |
      sed "s|^|fuzz: saved |" >&2
  else
    npass=$((npass + 1))
  fi
done
echo "fuzz: done in $(($(date +%s) - start)) s, build included"
echo "fuzz: $npass passed, $nfail failed"
exit "$failed"
