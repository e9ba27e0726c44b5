#!/usr/bin/env bash
# bench/run_i13.sh RESULTS_DIR - issue 13's rows alone on the GPU host, in one go:
#
#   FUSEC_CARRY=DIR bench/run_i13.sh RESULTS_DIR
#
# bench/run_all.sh restricted to them: bench/fusec_runs.py --only I13 --no-sweep (the
# programs bench/fc/i13_*.fc), bench/peers.py --only I13 --no-sweep --no-latency (CuPy,
# cupy.fuse, PyTorch eager, torch.compile and JAX's jax.jit, with the copy bandwidth), then
# report.py's tables (RESULTS.md, the I13 rows beside every peer, the best peer JAX included,
# each target's verdict) and the plot step, which finds no sweep and says so. No latency and
# no libdirect. RESULTS_DIR gets flat files: fusec.json, peers.json, RESULTS.md, env.txt and
# run_all.log. A failing step is logged and the next one runs. Add the W rows to the same run
# with FUSEC_RUNS_ARGS / PEERS_ARGS="--only W1,...,I13" (the last --only wins), or run
# bench/run_all.sh for everything. The knobs of run_all.sh apply (BENCH_RUNS, BENCH_WARMUP,
# FUSEC_BIN, PEERS_DEADLINE_S, ...); FUSEC_RUNS_ARGS and PEERS_ARGS are added after the I13
# selections.
set -u
if [[ $# -ne 1 ]]; then
  echo "usage: bench/run_i13.sh RESULTS_DIR" >&2
  exit 2
fi
export BENCH_SKIP=latency,libdirect${BENCH_SKIP:+,$BENCH_SKIP}
export FUSEC_RUNS_ARGS="--only I13 --no-sweep ${FUSEC_RUNS_ARGS:-}"
export PEERS_ARGS="--only I13 --no-sweep --no-latency ${PEERS_ARGS:-}"
exec "$(dirname "$0")/run_all.sh" "$1"
