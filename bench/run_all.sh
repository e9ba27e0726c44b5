#!/usr/bin/env bash
# bench/run_all.sh - the whole benchmark of issue 5 on the GPU host, in one go.
#
#   FUSEC_CARRY=DIR bench/run_all.sh [RESULTS_DIR]
#
# Run from anywhere inside the repository copy on the GPU host. DIR (default gpu-bench) holds
# the carried binaries bin/fusec and bin/latency and their libraries libs/, as
# bench/prepare_carry.sh makes them on the build host. Writes into RESULTS_DIR (default $OUT if
# set, else ./bench-results), seven flat files, so the device tool brings them all back:
#   fusec.json    `fusec run --bench --json` of every workload and of the W1/W6 size sweep
#   latency.json  bench/latency: cold compile, warm disk cache, cache hits, host overhead
#   peers.json    bench/peers.py: CuPy, cupy.fuse, PyTorch, torch.compile, JAX (jax.jit);
#                 copy bandwidth, dispatch overhead, CuPy's first call, the sweep
#   libdirect.json  bench/libdirect: issue 12's rows with the libraries called directly (its
#                 table with fusec's and the peers' times, bench/i12_summary.py, in the log)
#   RESULTS.md    bench/report.py's tables (copy the block into bench/RESULTS.md)
#   sweep.png     bench/plot.py's plot (text in run_all.log if matplotlib is missing)
#   env.txt       nvidia-smi, versions, the commit
#   run_all.log   everything printed
# A step that fails is logged and the next one runs; the exit status is that of the last
# failure (0 if none). Knobs (environment): BENCH_RUNS (15), BENCH_WARMUP (3), BENCH_SKIP
# (comma list of fusec,latency,peers,libdirect,report), FUSEC_RUNS_ARGS, LATENCY_ARGS,
# PEERS_ARGS, LIBDIRECT_ARGS (extra arguments), PEERS_DEADLINE_S (360: peers.py skips what is
# left after it), FUSEC_BIN, LATENCY_BIN and LIBDIRECT_BIN (instead of DIR/bin/...). A
# libdirect that is missing or cannot load is built from bench/libdirect.c with the GPU host's
# toolkit ($CUDA_HOME, default /usr/local/cuda). bench/run_i12.sh runs issue 12's rows alone,
# bench/run_i13.sh issue 13's.
set -u
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD
RESULTS=${1:-${OUT:-$ROOT/bench-results}}
mkdir -p "$RESULTS" || exit 1
RESULTS=$(cd "$RESULTS" && pwd)
exec > >(tee -a "$RESULTS/run_all.log") 2>&1

CARRY=${FUSEC_CARRY:-gpu-bench}
case $CARRY in /*) ;; *) CARRY=$ROOT/$CARRY ;; esac
FUSEC=${FUSEC_BIN:-$CARRY/bin/fusec}
LATENCY=${LATENCY_BIN:-$CARRY/bin/latency}
LIBDIRECT=${LIBDIRECT_BIN:-$CARRY/bin/libdirect}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
RUNS=${BENCH_RUNS:-15}
WARMUP=${BENCH_WARMUP:-3}
SKIP=",${BENCH_SKIP:-},"
PY=${PYTHON:-python3}
export LD_LIBRARY_PATH=$CARRY/libs:$CUDA_HOME/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PYTHONUNBUFFERED=1
# XLA (JAX, in peers.py and the version probe below) would take 75% of the GPU's memory at its
# first use; it grows as it needs instead
export XLA_PYTHON_CLIENT_PREALLOCATE=${XLA_PYTHON_CLIENT_PREALLOCATE:-false}
# The CLI runs share one kernel cache in a fresh directory (each workload's first process
# compiles; its warm-up runs absorb that). bench/latency makes its own empty one.
FUSEC_CACHE_DIR=$(mktemp -d /tmp/fusec-bench-cache-XXXXXX) || exit 1
export FUSEC_CACHE_DIR
trap 'rm -rf "$FUSEC_CACHE_DIR"' EXIT

status=0
step() { printf '\n==== %s  (%s)\n' "$1" "$(date +%H:%M:%S)"; }
failed() { echo "run_all.sh: $1 failed (exit $2)"; status=$2; }
skip() { [[ $SKIP == *",$1,"* ]]; }

step "environment"
{
  date -Is
  echo "commit: $(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)"
  echo "carry: $CARRY"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem \
    --format=csv 2>&1
  nvidia-smi 2>&1 | head -20
  $PY -c 'import sys; print("python", sys.version.split()[0])' 2>&1
  $PY -c 'import cupy; print("cupy", cupy.__version__)' 2>&1 | tail -1
  $PY -c 'import torch; print("torch", torch.__version__, torch.version.cuda)' 2>&1 | tail -1
  $PY -c 'import jax; print("jax", jax.__version__, jax.devices())' 2>&1 | tail -1
  for b in "$FUSEC" "$LATENCY"; do
    echo "ldd $b:"; ldd "$b" 2>&1 | grep -E 'not found|fusec|lmdb|xxhash|nvrtc' || true
  done
} > "$RESULTS/env.txt" 2>&1
cat "$RESULTS/env.txt"

if ! skip fusec; then
  step "fusec run --bench: every workload and the W1/W6 size sweep"
  if [[ -x $FUSEC ]]; then
    # shellcheck disable=SC2086
    $PY bench/fusec_runs.py --fusec "$FUSEC" --json "$RESULTS/fusec.json" --runs "$RUNS" \
      --warmup "$WARMUP" ${FUSEC_RUNS_ARGS:-} || failed fusec_runs.py $?
  else
    failed "fusec ($FUSEC not found: set FUSEC_CARRY)" 127
  fi
fi

if ! skip latency; then
  step "bench/latency: cold compile, warm disk cache, cache hits, host overhead"
  if [[ -x $LATENCY ]]; then
    progs=()
    for f in bench/fc/w[0-9][0-9]_*.fc; do
      case $(basename "$f") in w12_*) continue ;; esac # library calls: not fused kernels
      progs+=("$f")
    done
    # shellcheck disable=SC2086
    timeout 900 "$LATENCY" --json "$RESULTS/latency.json" ${LATENCY_ARGS:-} "${progs[@]}" ||
      failed latency $?
  else
    failed "latency ($LATENCY not found: set FUSEC_CARRY)" 127
  fi
fi

if ! skip peers; then
  step "bench/peers.py: CuPy, cupy.fuse, PyTorch eager, torch.compile, JAX"
  # shellcheck disable=SC2086
  timeout 900 $PY bench/peers.py --json "$RESULTS/peers.json" --runs "$RUNS" --warmup "$WARMUP" \
    --deadline-s "${PEERS_DEADLINE_S:-360}" ${PEERS_ARGS:-} || failed peers.py $?
fi

if ! skip libdirect; then
  step "bench/libdirect: issue 12's rows with the libraries called directly"
  if ! { [[ -x $LIBDIRECT ]] && ! ldd "$LIBDIRECT" 2>&1 | grep -q 'not found'; }; then
    echo "run_all.sh: no loadable $LIBDIRECT; building bench/libdirect.c with $CUDA_HOME"
    LIBDIRECT=$(mktemp /tmp/libdirect-XXXXXX)
    ${CC:-cc} -std=c11 -O2 -Wall -Wextra -isystem "$CUDA_HOME/include" bench/libdirect.c \
      -o "$LIBDIRECT" -L"$CUDA_HOME/lib64" -lcudart -lcusolver -lcufft -lcusparse -lcublasLt ||
      failed "building libdirect" $?
  fi
  # shellcheck disable=SC2086
  timeout 300 "$LIBDIRECT" --json "$RESULTS/libdirect.json" --runs "$RUNS" --warmup "$WARMUP" \
    ${LIBDIRECT_ARGS:-} || failed libdirect $?
  $PY bench/i12_summary.py --dir "$RESULTS" || failed i12_summary.py $?
fi

if ! skip report; then
  step "report and plot"
  $PY bench/report.py --dir "$RESULTS" --out "$RESULTS/RESULTS.md" --force ||
    failed report.py $?
  $PY bench/plot.py --dir "$RESULTS" --out "$RESULTS/sweep.png" || failed plot.py $?
fi

step "done"
ls -l "$RESULTS"
exit "$status"
