#!/usr/bin/env python3
"""bench/plot.py - GB/s against problem size for W1 and W6: fusec and each peer.

Draws, from fusec.json (bench/fusec_runs.py) and peers.json (bench/peers.py), one panel per
workload: GB/s (bytes that must move / median time) against the number of elements on a log2
axis (2^16 ... 2^28), a line per implementation, and the device copy bandwidth as a dashed
horizontal line. Where matplotlib is missing it prints the same data as text and exits 0, so a
benchmark run never fails on the plot.

    python3 bench/plot.py --dir RESULTS_DIR [--out RESULTS_DIR/sweep.png]
"""

import argparse
import json
import math
import os
import statistics
import sys

STYLE = {  # name -> (label, colour, marker)
    "fusec": ("fusec", "#d62728", "o"),
    "cupy": ("CuPy", "#1f77b4", "s"),
    "cupy_fuse": ("cupy.fuse", "#17becf", "D"),
    "torch": ("PyTorch eager", "#ff7f0e", "^"),
    "torch_compile": ("torch.compile", "#2ca02c", "v"),
    "jax": ("JAX (jax.jit)", "#9467bd", "P"),
}


def load(path):
    if not path or not os.path.exists(path):
        return {}
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        print("plot.py: cannot read %s: %s" % (path, e), file=sys.stderr)
        return {}


def num(v):
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) \
        else None


def series(fusec, peers, wid):
    """{name: [(elements, gbps)]}, points without a figure left out."""
    out = {}
    rows = fusec.get("sweep", {}).get(wid, [])
    pts = [(r["elements"], num((r.get("result") or {}).get("gbps"))) for r in rows]
    pts = [(e, g) for e, g in pts if g]
    if pts:
        out["fusec"] = pts
    ps = peers.get("sweep", {}).get(wid) or {}
    for name, vals in ps.get("peers", {}).items():
        pts = [(e, num((v or {}).get("gbps"))) for e, v in zip(ps.get("elements", []), vals)]
        pts = [(e, g) for e, g in pts if g]
        if pts:
            out[name] = pts
    return out


def copy_bandwidth(fusec, peers):
    vals = [num((e.get("result") or {}).get("copy_gbps"))
            for e in fusec.get("workloads", {}).values()]
    vals = [v for v in vals if v]
    if vals:
        return statistics.median(vals), "copy bandwidth (fusec's runs)"
    v = num(peers.get("copy", {}).get("gbps"))
    return (v, "copy bandwidth (peers' run)") if v else (None, None)


def print_text(data, copy):
    for wid, s in data.items():
        print("%s GB/s by elements%s" % (wid, "; copy %.0f GB/s" % copy if copy else ""))
        sizes = sorted({e for pts in s.values() for e, _ in pts})
        names = list(s)
        print("  %-8s " % "2^k" + " ".join("%14s" % n for n in names))
        for e in sizes:
            row = []
            for n in names:
                g = dict(s[n]).get(e)
                row.append("%14s" % ("-" if g is None else "%.0f" % g))
            print("  2^%-6d " % int(math.log2(e)) + " ".join(row))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", help="results directory holding fusec.json and peers.json")
    ap.add_argument("--fusec", help="fusec.json (default DIR/fusec.json)")
    ap.add_argument("--peers", help="peers.json (default DIR/peers.json)")
    ap.add_argument("--out", help="the PNG to write (default DIR/sweep.png)")
    args = ap.parse_args(argv)
    d = args.dir or "."
    fusec = load(args.fusec or os.path.join(d, "fusec.json"))
    peers = load(args.peers or os.path.join(d, "peers.json"))
    out = args.out or os.path.join(d, "sweep.png")
    data = {wid: series(fusec, peers, wid) for wid in ("W1", "W6")}
    data = {k: v for k, v in data.items() if v}
    if not data:
        print("plot.py: no sweep data in the inputs; nothing to draw", file=sys.stderr)
        return 0
    copy, copy_label = copy_bandwidth(fusec, peers)
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception as e:  # noqa: BLE001 - no matplotlib: the data as text instead
        print("plot.py: matplotlib unavailable (%s); the data instead:" % e)
        print_text(data, copy)
        return 0

    titles = {"W1": "W1  tanh(sin(x) + 0.1*x), f32", "W6": "W6  row L2 norm, f32, rows of 4096"}
    fig, axes = plt.subplots(1, len(data), figsize=(6.4 * len(data), 4.8), squeeze=False)
    for ax, (wid, s) in zip(axes[0], data.items()):
        for name, pts in s.items():
            label, colour, marker = STYLE.get(name, (name, None, "x"))
            xs = [math.log2(e) for e, _ in pts]
            ax.plot(xs, [g for _, g in pts], marker=marker, color=colour, label=label,
                    linewidth=2.2 if name == "fusec" else 1.3)
        if copy:
            ax.axhline(copy, color="black", linestyle="--", linewidth=1, label=copy_label)
        ax.set_title(titles.get(wid, wid))
        ax.set_xlabel("elements (log2)")
        ax.set_ylabel("GB/s (bytes that must move / median time)")
        sizes = sorted({int(math.log2(e)) for pts in s.values() for e, _ in pts})
        ax.set_xticks(sizes)
        ax.set_xticklabels(["$2^{%d}$" % k for k in sizes])
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print("plot.py: wrote %s" % out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
