#!/usr/bin/env python3
"""bench/i12_summary.py - issue 12's rows side by side: fusec, the library called directly
(bench/libdirect), CuPy, PyTorch and JAX, from one results folder of bench/run_i12.sh.

    python3 bench/i12_summary.py --dir RESULTS_DIR

Reads fusec.json, libdirect.json and peers.json (any may be missing) and prints one Markdown
table. "lib" is the library calls alone; "lib+copy" adds the copy of the input that the
factorisations overwrite (a NumPy function keeps its input: the like-for-like figure, and the
reference of the 2% target where it exists). fusec/lib is fusec's time over that reference
(<= 1.02 meets "within 2% of the library"); fusec/cupy over CuPy's, same run (< 1 is ahead).
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report  # noqa: E402 - bench/report.py: its JSON loader

ROWS = ["I12_solve", "I12_svd", "I12_cholesky", "I12_rfft", "I12_fft2", "I12_spmv",
        "I12_matmul_bias_relu", "I12_matmul_bias_gelu"]


def load(path):
    return report.load(path) or {}


def fms(v):
    return "-" if v is None else ("%.3f" % v if v < 100 else "%.1f" % v)


def ratio(a, b):
    return "-" if a is None or not b else "%.3f" % (a / b)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", required=True, help="the folder of fusec.json, peers.json, "
                                                 "libdirect.json")
    args = ap.parse_args(argv)
    fusec = load(os.path.join(args.dir, "fusec.json")).get("workloads", {})
    lib = load(os.path.join(args.dir, "libdirect.json")).get("rows", {})
    peers = load(os.path.join(args.dir, "peers.json")).get("workloads", {})
    print("| row | fusec ms | lib ms | lib+copy ms | fusec/lib | cupy ms | torch ms | jax ms | "
          "other peers ms | fusec/cupy | fusec GFLOP/s or % floor |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for wid in ROWS:
        f = fusec.get(wid) or {}
        r = f.get("result") or {}
        t = r.get("median_ms") if not f.get("error") else None
        ld = lib.get(wid) or {}
        ref = ld.get("with_input_copy_ms") or ld.get("median_ms")
        p = (peers.get(wid) or {}).get("peers", {})
        cupy = (p.get("cupy") or {}).get("median_ms")
        torch = (p.get("torch") or {}).get("median_ms")
        jax = (p.get("jax") or {}).get("median_ms")
        others = ", ".join("%s %s" % (k, fms(v.get("median_ms"))) for k, v in p.items()
                           if k not in ("cupy", "torch", "jax"))
        if f.get("gflops") and t is not None:
            perf = "%.0f GFLOP/s" % f["gflops"]
        elif r.get("floor_pct") is not None and t is not None:
            perf = "%.0f%% of floor" % r["floor_pct"]
        else:
            perf = "-"
        note = ""
        if f.get("error"):
            note = " (fusec: %s)" % " ".join(str(f["error"]).split())[:80]
        elif wid not in fusec:
            note = " (no fusec row)"
        print("| %s%s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            wid, note, fms(t), fms(ld.get("median_ms")), fms(ld.get("with_input_copy_ms")),
            ratio(t, ref), fms(cupy), fms(torch), fms(jax), others or "-", ratio(t, cupy), perf))
    return 0


if __name__ == "__main__":
    sys.exit(main())
