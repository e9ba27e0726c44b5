#!/usr/bin/env python3
"""bench/fast_math_diff.py - a program in the exact default and in the fast-math tier, side by side.

Runs `fusec run FILE --output-dir DIR` once per tier (the same seed, so the same random inputs)
and `fusec run FILE --bench --json` once per tier, then prints both median times, the speed-up
and, per output, the largest difference between the tiers (absolute and relative), how many
elements differ and, with --numpy-w8 for bench/fc/w08_mandelbrot.fc, the largest difference of
each tier from NumPy's own W8 (the loop of bench/peers.py, computed here in NumPy).

    python3 bench/fast_math_diff.py --fusec build/tools/fusec bench/fc/w08_mandelbrot.fc --numpy-w8
    python3 bench/fast_math_diff.py --fusec build/tools/fusec bench/fc/w01_tanh_sin.fc \
        --json out.json
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("%s: exit %d\n%s" % (" ".join(cmd), p.returncode, p.stderr[-2000:]))
    return p.stdout


def bench(args, fast):
    cmd = [args.fusec, "run", args.program, "--backend", args.backend, "--bench", "--json",
           "--runs", str(args.runs)] + (["--fast-math"] if fast else []) + args.extra
    for line in reversed(run(cmd).strip().splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    sys.exit("no JSON from %s" % " ".join(cmd))


def outputs(args, fast, directory):
    run([args.fusec, "run", args.program, "--backend", args.backend, "--output-dir", directory]
        + (["--fast-math"] if fast else []) + args.extra)
    return {f[:-4]: np.load(os.path.join(directory, f)) for f in sorted(os.listdir(directory))
            if f.endswith(".npy")}


def numpy_w8(n=2048, steps=100):
    """W8 as NumPy computes it (bench/peers.py's loop): the count of bounded steps."""
    re = np.linspace(-2.0, 0.5, n)
    im = np.linspace(-1.25, 1.25, n)
    c = re[None, :] + im[:, None] * 1j
    z = np.zeros((n, n), np.complex128)
    count = np.zeros((n, n), np.int32)
    for _ in range(steps):
        b = np.abs(z) <= 2
        z = np.where(b, z * z + c, z)
        count += b
    return count


def diff(a, b):
    """Largest absolute and relative difference, elements that differ (NaN meets NaN)."""
    a64 = a.astype(np.complex128 if np.iscomplexobj(a) else np.float64)
    b64 = b.astype(a64.dtype)
    both_nan = np.isnan(a64) & np.isnan(b64)
    same = (a64 == b64) | both_nan
    d = np.where(same, 0, np.abs(a64 - b64))
    rel = np.where(same, 0, d / np.maximum(np.abs(b64), np.finfo(np.float64).tiny))
    return {"max_abs": float(np.nanmax(d)) if d.size else 0.0,
            "max_rel": float(np.nanmax(rel)) if rel.size else 0.0,
            "differ": int((~same).sum()), "elements": int(a.size)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("program", help="a .fc program (bench/fc/w08_mandelbrot.fc)")
    ap.add_argument("--fusec", required=True, help="the fusec CLI binary")
    ap.add_argument("--backend", default="cuda")
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--numpy-w8", action="store_true",
                    help="also compare both tiers with NumPy's W8 (2048 x 2048, 100 steps)")
    ap.add_argument("--json", metavar="FILE", help="also write the figures here")
    ap.add_argument("extra", nargs="*", help="more fusec run options (--set n=...) after --")
    args = ap.parse_args(argv)
    os.environ.pop("FUSEC_FAST_MATH", None)  # the tiers are chosen by --fast-math alone

    res = {"program": args.program, "tiers": {}, "outputs": {}}
    for fast in (False, True):
        tier = "fast" if fast else "exact"
        b = bench(args, fast)
        res["tiers"][tier] = {"median_ms": b.get("median_ms"), "kernels": b.get("kernels"),
                              "fast_math": b.get("fast_math")}
    with tempfile.TemporaryDirectory() as d0, tempfile.TemporaryDirectory() as d1:
        exact, fast = outputs(args, False, d0), outputs(args, True, d1)
    ref = {"n100": numpy_w8()} if args.numpy_w8 else {}
    for name in exact:
        row = {"fast_vs_exact": diff(fast[name], exact[name])}
        if name in ref:
            row["exact_vs_numpy"] = diff(exact[name], ref[name])
            row["fast_vs_numpy"] = diff(fast[name], ref[name])
        res["outputs"][name] = row

    t0, t1 = res["tiers"]["exact"]["median_ms"], res["tiers"]["fast"]["median_ms"]
    print("%s: exact %.4f ms, fast %.4f ms (%.2fx)" % (args.program, t0, t1, t0 / t1))
    for name, row in res["outputs"].items():
        for what, d in row.items():
            print("  %-6s %-15s max |diff| %.6g  max rel %.3g  %d of %d elements differ"
                  % (name, what, d["max_abs"], d["max_rel"], d["differ"], d["elements"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
