#!/usr/bin/env bash
# bench/run_i12.sh RESULTS_DIR - issue 12's rows alone on the GPU host, in one go:
#
#   FUSEC_CARRY=DIR bench/run_i12.sh RESULTS_DIR
#
# bench/run_all.sh restricted to them: bench/fusec_runs.py --only I12 --no-sweep,
# bench/peers.py --only I12 --no-sweep --no-latency, bench/libdirect --only I12 (the libraries
# called directly; built on the spot where DIR has no loadable bin/libdirect), bench/i12_summary.py's table, then report.py's tables
# (RESULTS.md) and the plot step, which finds no sweep and says so. RESULTS_DIR gets flat
# files: fusec.json, peers.json, libdirect.json, RESULTS.md, env.txt and run_all.log (all the
# text, the summary table included). A failing step is logged and the next one runs. Some
# 3-4 minutes (torch.compile of the matmul is the longest wait). The knobs of run_all.sh apply
# (BENCH_RUNS, BENCH_WARMUP, FUSEC_BIN, LIBDIRECT_BIN, ...); FUSEC_RUNS_ARGS, PEERS_ARGS and
# LIBDIRECT_ARGS are added to the I12 selections.
set -u
if [[ $# -ne 1 ]]; then
  echo "usage: bench/run_i12.sh RESULTS_DIR" >&2
  exit 2
fi
export BENCH_SKIP=latency${BENCH_SKIP:+,$BENCH_SKIP}
export FUSEC_RUNS_ARGS="--only I12 --no-sweep ${FUSEC_RUNS_ARGS:-}"
export PEERS_ARGS="--only I12 --no-sweep --no-latency ${PEERS_ARGS:-}"
export LIBDIRECT_ARGS="--only I12 ${LIBDIRECT_ARGS:-}"
exec "$(dirname "$0")/run_all.sh" "$1"
