#!/usr/bin/env python3
"""bench/report.py - writes bench/RESULTS.md's tables from one run of bench/run_all.sh.

Reads fusec.json (bench/fusec_runs.py: `fusec run --bench --json` per workload and the size
sweep), latency.json (bench/latency) and peers.json (bench/peers.py), any of which may be
missing or partial, and writes:

  (i)   per workload: fusec's time, GB/s and % of floor, each peer's time, the best peer, the
        ratio fusec / best peer, the workload's target (bench/README.md) and whether it is met;
  (ii)  the latency figures against their targets and against CuPy's and PyTorch's figures
        from the same run;
  (iii) peak device memory against inputs + outputs;
  (iv)  the size sweep of W1 and W6 (the plot's data) and where fusec stops being
        launch-bound;
  and every failure the run recorded.

The tables go between the markers <!-- report.py: begin --> and <!-- report.py: end --> of the
output file, so hand-written analysis around them survives a re-run; a file without the
markers is created (or, with --force, overwritten) with them.

    python3 bench/report.py --dir RESULTS_DIR [--out bench/RESULTS.md]
"""

import argparse
import json
import math
import os
import statistics
import sys

BEGIN = "<!-- report.py: begin -->"
END = "<!-- report.py: end -->"

ORDER = ["W1", "W2", "W3", "W4", "W5", "W6", "W7", "W8", "W9", "W10", "W11", "W12_matmul",
         "W12_fft", "I11_cumsum", "I11_normal", "I11_compress", "I11_take", "I11_scatter_add",
         "I11_sort", "I11_argsort", "I12_solve", "I12_svd", "I12_cholesky", "I12_rfft",
         "I12_fft2", "I12_spmv", "I12_matmul_bias_relu", "I12_matmul_bias_gelu", "I13_gelu_f16",
         "I13_gelu_bf16", "I13_layernorm_1k", "I13_layernorm_4k", "I13_layernorm_16k",
         "I13_layernorm_32k", "I13_bn_stats", "I13_col_softmax", "I13_argmax_rows", "I13_adam",
         "I13_outer", "I13_transpose_ew", "I13_mean_std_rows", "I13_laplacian"]
PROGRAM = {
    "W1": "`tanh(sin(x) + 0.1*x)`, f32 2^26",
    "W2": "`x**2 + 2*y`, f32 2^26",
    "W3": "`sum(x)`, f32 2^27",
    "W4": "row softmax, f32 8192x8192",
    "W5": "`where(x > 0.5, x, 0.1*x)`, f32 2^26",
    "W6": "row L2 norm, f32 16384x4096",
    "W7": "normalise columns, f32 65536x1024",
    "W8": "Mandelbrot 100 steps, c128 2048x2048",
    "W9": "3x3 box blur, f32 4096x4096",
    "W10": "saxpy `2*x + y`, f32 2^26",
    "W11": "column means of `x * w`, f32 4096x4096",
    "W12_matmul": "matmul f32 4096^3",
    "W12_fft": "FFT round trip, c64 2^24",
    "I11_cumsum": "`cumsum(x)`, f32 2^26",
    "I11_normal": "`standard_normal`, f32 2^26",
    "I11_compress": "`x[x > 0.5]`, f32 2^26 uniform in [0, 1) (timed from the build: the count)",
    "I11_take": "`take(x, i)`, 2^24 random i32 indices, f32 2^26 (floor: a 32-byte sector a gather)",
    "I11_scatter_add": "`scatter_add(zeros(1024), i, 1)`, 2^26 random i32 indices (floor: i once)",
    "I11_sort": "`sort(x)`, f32 2^26 (floor: x read and written once)",
    "I11_argsort": "`argsort(x)`, f32 2^24 (floor: x read once, int64 positions written once)",
    "I13_gelu_f16": "GELU-like `0.5*x*(1 + tanh(0.798*(x + 0.0447*x**3)))`, f16 2^26",
    "I13_gelu_bf16": "the same GELU-like chain, bf16 2^26",
    "I13_layernorm_1k": "layer norm `(x - mean) / sqrt(var + 1e-5) * w + b` over rows, f32 "
                        "65536 x 1024 (floor: x read twice)",
    "I13_layernorm_4k": "the same layer norm, f32 16384 x 4096 (floor: x read twice)",
    "I13_layernorm_16k": "the same layer norm, f32 4096 x 16384 (floor: x read twice)",
    "I13_layernorm_32k": "the same layer norm, f32 2048 x 32768 (floor: x read twice)",
    "I13_bn_stats": "batch-norm statistics `mean(x, (0, 2)), var(x, (0, 2))`, f32 "
                    "[64, 256, 4096]",
    "I13_col_softmax": "softmax over axis 0, f32 8192x8192 (floor: x read twice)",
    "I13_argmax_rows": "`argmax(x, axis=1)`, f32 16384x4096",
    "I13_adam": "Adam-like step, `p, m, v` out (p from the new m, v), f32 2^26",
    "I13_outer": "`a[:, None] * b[None, :]`, f32 8192 + 8192 -> 8192x8192",
    "I13_transpose_ew": "`2 * x.transpose(0, 2, 1) + 1`, f32 [64, 1024, 1024]",
    "I13_mean_std_rows": "`mean(x, 1), std(x, 1)`, f32 1024x65536",
    "I13_laplacian": "5-point Laplacian of the interior, f32 8192x8192",
    "I12_solve": "`linalg.solve(a, b)`, f32 4096, one right-hand side",
    "I12_svd": "`linalg.svd(a)`, f32 1024 (U, S, V^T)",
    "I12_cholesky": "`linalg.cholesky(a)`, f64 8192",
    "I12_rfft": "`rfft(x)`, f32 2^26",
    "I12_fft2": "`fft2(x)`, c64 8192x8192",
    "I12_spmv": "CSR SpMV, 2^24 x 2^24, 2^27 random non-zeros, f32 (floor: the matrix, x, y once)",
    "I12_matmul_bias_relu": "`maximum(a @ b + bias, 0)`, f32 4096^3",
    "I12_matmul_bias_gelu": "`gelu_tanh(a @ b + bias)`, f32 4096^3",
}
PEER_COLS = [("cupy", "CuPy"), ("cupy_fuse", "cupy.fuse"), ("torch", "PyTorch"),
             ("torch_compile", "torch.compile"), ("jax", "JAX/XLA")]
ELEMENTWISE = {"W1", "W2", "W5", "W10"}
NO_FLOOR = {"W8", "W12_matmul", "W12_fft",  # compute- or library-bound: no byte floor
            "I12_solve", "I12_svd", "I12_cholesky", "I12_matmul_bias_relu",
            "I12_matmul_bias_gelu"}
REDUCTIONS = {"W3", "W4", "W6", "W7", "W11"}
# Targets of several conditions, all of which must hold: ("floor", P) is at least P% of the
# floor; (peer, R) is fusec's time at most R times that peer's, from the same run; ("best", R)
# at most R times the best peer's (any column or library form, JAX included); ("kernels", K)
# at most K kernels an evaluation. Met when every condition is measured and holds, missed when
# any measured one fails, else n/a.
TARGETS = {
    # issue 11: scans and random numbers: as fast as CuPy at least, and >= 80% of the floor
    "I11_cumsum": (("floor", 80), ("cupy", 1.0)),
    "I11_normal": (("floor", 80), ("cupy", 1.0)),
    "I11_compress": (("cupy", 1.0),),
    "I11_take": (("floor", 80), ("cupy", 1.0)),
    "I11_scatter_add": (("floor", 80), ("cupy", 1.0)),
    "I11_sort": (("cupy", 1.0),),
    "I11_argsort": (("cupy", 1.0),),
    # issue 13: every row at or ahead of the best of XLA, torch.compile, CuPy and PyTorch in
    # the same run, and: half precision elementwise >= 92% of floor; row reduce-broadcast
    # chains >= 85% of the floor of reading the input twice at most; several reductions over
    # the same non-trailing axes <= 2 kernels and >= 80%; argmax and row reductions >= 85%;
    # other elementwise rows WORKLOADS.md's 92%, the stencil W9's 60%
    "I13_gelu_f16": (("floor", 92), ("best", 1.0)),
    "I13_gelu_bf16": (("floor", 92), ("best", 1.0)),
    **{"I13_layernorm_" + k: (("floor", 85), ("best", 1.0)) for k in ("1k", "4k", "16k", "32k")},
    "I13_bn_stats": (("kernels", 2), ("floor", 80), ("best", 1.0)),
    "I13_col_softmax": (("kernels", 2), ("floor", 80), ("best", 1.0)),
    "I13_argmax_rows": (("floor", 85), ("best", 1.0)),
    "I13_adam": (("floor", 92), ("best", 1.0)),
    "I13_outer": (("floor", 92), ("best", 1.0)),
    "I13_transpose_ew": (("floor", 92), ("best", 1.0)),
    "I13_mean_std_rows": (("floor", 85), ("best", 1.0)),
    "I13_laplacian": (("floor", 60), ("best", 1.0)),
}
MIB = 1 << 20

# Latency targets (the project's workload targets, bench/README.md)
COLD_COMPILE_MS = 60.0
WARM_DISK_MS = 0.3
HOST_OVERHEAD_US = 2.0


def load(path):
    """The JSON object at path, or None (missing or unreadable: the report says so)."""
    if not path or not os.path.exists(path):
        return None
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        print("report.py: cannot read %s: %s" % (path, e), file=sys.stderr)
        return None


def num(v):
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) \
        else None


def fms(v):
    """Milliseconds to 3 significant-ish digits."""
    v = num(v)
    if v is None:
        return "-"
    if v >= 100:
        return "%.0f" % v
    if v >= 10:
        return "%.1f" % v
    if v >= 1:
        return "%.2f" % v
    if v >= 0.1 or v <= 0:
        return "%.3f" % v
    return "%.2g" % v if v < 0.001 else "%.4f" % v


def fus(v):
    v = num(v)
    return "-" if v is None else ("%.1f" % v if v >= 10 else "%.2f" % v)


def fbytes(v):
    v = num(v)
    if v is None:
        return "-"
    for unit, scale in (("GiB", 1 << 30), ("MiB", MIB), ("KiB", 1 << 10)):
        if abs(v) >= scale:
            return "%.2f %s" % (v / scale, unit)
    return "%d B" % v


def fpct(v):
    """A percentage with one decimal: '90%' would hide that 89.7% misses a 90% target."""
    v = num(v)
    return "-" if v is None else "%.1f%%" % v


def esc(s):
    return str(s).replace("|", "\\|").replace("\n", " ")


# ---------------------------------------------------------------------------------------------


class Data:
    def __init__(self, fusec, latency, peers):
        self.fusec = fusec or {}
        self.latency = latency or {}
        self.peers = peers or {}
        self.missing = [name for name, d in (("fusec.json", fusec), ("latency.json", latency),
                                             ("peers.json", peers)) if d is None]

    def fusec_result(self, wid):
        e = self.fusec.get("workloads", {}).get(wid)
        return (e or {}).get("result") or None, (e or {}).get("error")

    def peer_cells(self, wid):
        return self.peers.get("workloads", {}).get(wid, {}).get("peers", {})

    def copy_gbps(self):
        """fusec's copy bandwidth: the median over its runs (each measures its own)."""
        vals = [num((e.get("result") or {}).get("copy_gbps"))
                for e in self.fusec.get("workloads", {}).values()]
        vals = [v for v in vals if v]
        return statistics.median(vals) if vals else None

    def gpu(self):
        for wid in ORDER:
            r, _ = self.fusec_result(wid)
            if r and r.get("device") and r.get("backend") == "cuda":
                return r["device"], r.get("arch")
        dev = self.peers.get("device", {})
        if dev.get("gpu"):
            return dev["gpu"], ("sm_%s" % dev["cc"].replace(".", "")) if dev.get("cc") else None
        if self.latency.get("device"):
            return self.latency["device"], self.latency.get("arch")
        return None, None

    def kernels(self, wid):
        r, _ = self.fusec_result(wid)
        k = num((r or {}).get("kernels"))
        return int(k) if k else None


def best_peer(cells):
    best = None
    for name, c in cells.items():
        t = num(c.get("median_ms"))
        if t is not None and (best is None or t < best[1]):
            best = (name, t)
    return best


def verdict_all(conds, pct, t, cells, kernels=None):
    """The verdict of TARGETS' conditions: (target text, 'met' / 'missed' / 'n/a', detail).
    kernels: fusec's kernels an evaluation (for a ("kernels", K) condition)."""
    labels = dict(PEER_COLS)
    texts, held, details = [], [], []
    for kind, bound in conds:
        if kind == "floor":
            texts.append(">= %g%% of floor" % bound)
            if pct is not None:
                held.append(pct >= bound)
            continue
        if kind == "kernels":
            texts.append("<= %d kernels" % bound)
            if kernels is not None:
                held.append(kernels <= bound)
                if kernels > bound:
                    details.append("%d kernels" % kernels)
            continue
        if kind == "best":
            b = best_peer(cells)
            label = "best peer"
            c = b[1] if b else None
            texts.append("<= %.1fx %s" % (bound, label))
            if b:
                label = "best (%s)" % labels.get(b[0], b[0])
        else:
            label = labels.get(kind, kind)
            texts.append("<= %.1fx %s" % (bound, label))
            c = num(cells.get(kind, {}).get("median_ms"))
        if t is not None and c is not None and c > 0:
            held.append(t <= bound * c)
            # Three decimals where two would round a miss (or a hit) onto the bound itself.
            q = t / c
            details.append(("%.3fx %s" if abs(q - bound) < 0.005 else "%.2fx %s") % (q, label))
    ok = "missed" if False in held else "met" if len(held) == len(conds) else "n/a"
    return " and ".join(texts), ok, ", ".join(details)


def verdict(wid, r, cells):
    """(target text, 'met' / 'missed' / 'n/a', detail)."""
    pct = num((r or {}).get("floor_pct"))
    t = num((r or {}).get("median_ms"))
    if wid in TARGETS:
        k = num((r or {}).get("kernels"))
        return verdict_all(TARGETS[wid], pct, t, cells, int(k) if k is not None else None)
    if wid in ELEMENTWISE or wid in REDUCTIONS or wid == "W9":
        need = 90 if wid in ELEMENTWISE else 85 if wid in REDUCTIONS else 60
        text = ">= %d%% of floor" % need
        if pct is None:
            return text, "n/a", ""
        return text, "met" if pct >= need else "missed", ""
    if wid == "W8":
        c = num(cells.get("cupy", {}).get("median_ms"))
        text = ">= 100x CuPy"
        if t is None or c is None:
            return text, "n/a", ""
        speed = c / t
        return text, "met" if speed >= 100 else "missed", "%.0fx" % speed
    if wid.startswith("W12"):
        b = best_peer(cells)
        text = "<= 1.02x library"
        if t is None or b is None:
            return text, "n/a", ""
        return text, "met" if t <= 1.02 * b[1] else "missed", ""
    if wid.startswith("I12"):
        # the library called directly is bench/libdirect's run: bench/i12_summary.py
        return "<= 1.02x library (i12_summary.py)", "n/a", ""
    return "-", "n/a", ""


def table_workloads(d, out):
    out.append("### (i) Workloads\n")
    out.append("Times in ms: median of the timed runs. Each column's method: 'fusec', CuPy, "
               "cupy.fuse, PyTorch and torch.compile: CUDA events around each call; JAX/XLA: "
               "back-to-back jax.jit calls over the wall clock (a batch of calls, then "
               "block_until_ready; the time a call = the batch's / its size); 'fusec b2b': "
               "fusec timed as JAX is (`fusec run --bench --back-to-back`: batches of "
               "evaluations issued back to back, one wait a batch), where the run has it; "
               "'fusec / best' uses the 'fusec' column. GB/s and % of floor are "
               "fusec's (floor = bytes that must move / the copy bandwidth its own run "
               "measured). Ratio = fusec / best peer (below 1: fusec is faster); the best peer "
               "is the fastest of every column and library form, JAX included. Peers: "
               "bench/peers.py, same GPU; 'other' are library forms of the same computation "
               "(torch_op: torch.softmax / torch.linalg.vector_norm / F.layer_norm / "
               "torch.batch_norm_stats / torch.std_mean / conv2d; cupy_op: cupy.linalg.norm; "
               "cupy_expr: W9 as the .fc program writes it, in CuPy eager). A target of several "
               "conditions (I11, I13) is met only when all of them hold.\n")
    head = ["id", "program", "kernels", "fusec", "GB/s", "% floor"] + \
        [label for _, label in PEER_COLS] + ["other", "best peer", "fusec / best", "target",
                                             "fusec b2b", "met"]
    out.append("| " + " | ".join(head) + " |")
    out.append("|" + "---|" * len(head))
    met = missed = 0
    rows = []
    for wid in ORDER:
        r, err = d.fusec_result(wid)
        cells = d.peer_cells(wid)
        if r is None and not cells and err is None:
            continue
        t = num((r or {}).get("median_ms"))
        fus_cell = fms(t) if t is not None else ("error" if err else "-")
        peer_vals = []
        for key, _ in PEER_COLS:
            c = cells.get(key)
            if c is None:
                peer_vals.append("-")
            elif num(c.get("median_ms")) is not None:
                peer_vals.append(fms(c["median_ms"]))
            else:
                peer_vals.append("skip" if c.get("skipped") else "error")
        others = ", ".join("%s %s" % (k, fms(v.get("median_ms"))) for k, v in cells.items()
                           if k not in dict(PEER_COLS) and num(v.get("median_ms")) is not None)
        b = best_peer(cells)
        ratio = "%.2f" % (t / b[1]) if (t is not None and b) else "-"
        target, ok, detail = verdict(wid, r, cells)
        if ok == "met":
            met += 1
        elif ok == "missed":
            missed += 1
        rows.append(wid)
        bound = wid in NO_FLOOR
        b2b = num(((r or {}).get("b2b") or {}).get("median_ms"))
        out.append("| " + " | ".join([
            wid, PROGRAM.get(wid, ""), str(d.kernels(wid) or "-"), fus_cell,
            "%.0f" % r["gbps"] if num((r or {}).get("gbps")) and not bound else "-",
            "n/a" if bound else fpct((r or {}).get("floor_pct")), *peer_vals, others or "-",
            "%s %s" % (b[0], fms(b[1])) if b else "-", ratio, target,
            fms(b2b) if b2b is not None else "-",
            ok + (" (%s)" % detail if detail else "")]) + " |")
    out.append("")
    out.append("Targets met: %d, missed: %d, not measured: %d (of %d rows).\n"
               % (met, missed, len(rows) - met - missed, len(rows)))
    errs = [(wid, d.fusec_result(wid)[1]) for wid in ORDER if d.fusec_result(wid)[1]]
    if errs:
        out.append("fusec runs that failed:\n")
        for wid, e in errs:
            out.append("- %s: %s" % (wid, esc(e)))
        out.append("")


def table_latency(d, out):
    out.append("### (ii) Latency\n")
    lat = d.latency
    progs = [p for p in lat.get("programs", []) if not p.get("error")]
    fc = d.peers.get("first_call", {})
    disp = d.peers.get("dispatch", {})

    unknown = sorted({p.get("id") for p in progs if not d.kernels(p.get("id"))})

    def per_kernel(p, key):
        v = num(p.get(key))
        k = d.kernels(p.get("id")) or 1  # unknown (its fusec run failed): taken as 1
        return None if v is None else v / k

    cold = [(p["id"], per_kernel(p, "cold_extra_ms")) for p in progs]
    cold = [(i, v) for i, v in cold if v is not None]
    warm = [(p["id"], per_kernel(p, "warm_disk_extra_ms")) for p in progs]
    warm = [(i, v) for i, v in warm if v is not None]
    hit = [num(p.get("hit_extra_ms")) for p in progs]
    hit = [v for v in hit if v is not None]

    def summary(pairs):
        if not pairs:
            return "-", None
        vals = [v for _, v in pairs]
        worst = max(pairs, key=lambda p: p[1])
        return ("median %s, worst %s (%s)" % (fms(statistics.median(vals)), fms(worst[1]),
                                              worst[0]), worst[1])

    def ok(worst, limit):
        return "n/a" if worst is None else ("met" if worst <= limit else "missed")

    out.append("| figure | fusec | target | met | CuPy (same run) | PyTorch (same run) |")
    out.append("|---|---|---|---|---|---|")
    s, worst = summary(cold)
    out.append("| cold compile per fused kernel (first evaluation with an empty cache, less the "
               "run; ms) | %s | <= %g ms | %s | %s (new ElementwiseKernel, empty cache) | - |"
               % (s, COLD_COMPILE_MS, ok(worst, COLD_COMPILE_MS), fms(fc.get("cupy_cold_ms"))))
    s, worst = summary(warm)
    out.append("| first call of a kernel in a new process from the warm disk cache (less the run; "
               "ms) | %s | <= %g ms | %s | %s | - |"
               % (s, WARM_DISK_MS, ok(worst, WARM_DISK_MS), fms(fc.get("cupy_warm_disk_ms"))))
    out.append("| in-process cache hit: build + evaluate again, less the GPU time (ms) | %s | - "
               "| - | %s (second call of the kernel, run included) | - |"
               % ("median %s, worst %s" % (fms(statistics.median(hit)), fms(max(hit)))
                  if hit else "-", fms(fc.get("cupy_in_process_ms"))))
    chains = {}
    for c in lat.get("overhead", []):
        chains[(c.get("nodes"), bool(c.get("cuda_graphs")))] = c
    for k in (1, 10, 100):
        on, off = chains.get((k, True), {}), chains.get((k, False), {})
        cup = (disp.get("cupy", {}).get("chains", {}).get(str(k)) or {}).get("per_eval_us")
        tor = (disp.get("torch", {}).get("chains", {}).get(str(k)) or {}).get("per_eval_us")
        out.append("| host time per evaluation of a cached program of %d elementwise node%s, tiny "
                   "array (us; CUDA graphs on / off) | %s / %s | <= %g us + 1 launch | see note "
                   "| %s (%d op%s) | %s |"
                   % (k, "s" if k > 1 else "", fus(on.get("per_eval_us")),
                      fus(off.get("per_eval_us")), HOST_OVERHEAD_US, fus(cup), k,
                      "s" if k > 1 else "", fus(tor)))
    out.append("")
    if unknown:
        out.append("Per-kernel figures divide by the kernels fusec run reported; for %s that "
                   "count is missing and 1 was used.\n" % ", ".join(unknown))
    out.append("Note: fusec evaluates each chain as one kernel launch; CuPy and PyTorch launch one "
               "kernel per op, so their figure grows with the chain. The 2 us target excludes the "
               "launch itself, which this run does not time separately: compare the 1-node "
               "figure with CuPy's per-op dispatch (%s us) and PyTorch's (%s us), and the growth "
               "from 1 to 100 nodes (graph building and hashing, fusec's own cost).\n"
               % (fus(disp.get("cupy", {}).get("per_op_us")),
                  fus(disp.get("torch", {}).get("per_op_us"))))
    if lat.get("programs"):
        out.append("Per program (ms; extra = the figure less the program's own run; kernels from "
                   "fusec run):\n")
        out.append("| id | kernels | GPU time | cold first | cold extra | new process, warm disk "
                   "| its extra | hit | hit extra | host submit (us) | error |")
        out.append("|---|---|---|---|---|---|---|---|---|---|---|")
        for p in lat["programs"]:
            out.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                p.get("id"), d.kernels(p.get("id")) or "-", fms(p.get("gpu_ms")),
                fms(p.get("cold_first_ms")), fms(p.get("cold_extra_ms")),
                fms(p.get("warm_disk_first_ms")), fms(p.get("warm_disk_extra_ms")),
                fms(p.get("hit_ms")), fms(p.get("hit_extra_ms")), fus(p.get("hit_submit_us")),
                esc(p.get("error") or p.get("warm_disk_error") or "")))
        out.append("")
    if lat.get("nvrtc_ms_per_kernel") is None and lat:
        out.append("NVRTC's own share of the cold figures is not separated (the public API does "
                   "not expose it).\n")


def table_memory(d, out):
    out.append("### (iii) Peak device memory\n")
    out.append("Peak of the pool's in-use bytes during the timed runs (fusec run --bench) "
               "against the inputs plus outputs; target: at most 1 MiB more (reduction "
               "scratch), since fused intermediates are never materialised.\n")
    out.append("| id | peak | inputs + outputs | extra | target | met |")
    out.append("|---|---|---|---|---|---|")
    for wid in ORDER:
        r, err = d.fusec_result(wid)
        if r is None:
            if err:
                out.append("| %s | - | - | - | <= +1 MiB | n/a |" % wid)
            continue
        peak, io = num(r.get("peak_bytes")), num(r.get("io_bytes"))
        extra = peak - io if peak is not None and io is not None else None
        ok = "n/a" if extra is None else ("met" if extra <= MIB else "missed")
        out.append("| %s | %s | %s | %s | <= +1 MiB | %s |" % (
            wid, fbytes(peak), fbytes(io), fbytes(extra), ok))
    out.append("")


def sweep_series(d, wid):
    """{name: [(elements, ms, gbps) or None]} for fusec and each peer."""
    series = {}
    rows = d.fusec.get("sweep", {}).get(wid, [])
    if rows:
        series["fusec"] = [
            (r["elements"], num((r.get("result") or {}).get("median_ms")),
             num((r.get("result") or {}).get("gbps"))) for r in rows]
    ps = d.peers.get("sweep", {}).get(wid)
    if ps:
        for name, vals in ps.get("peers", {}).items():
            series[name] = [(e, num((v or {}).get("median_ms")), num((v or {}).get("gbps")))
                            for e, v in zip(ps.get("elements", []), vals)]
    return series


def launch_bound_note(points):
    """Where fusec stops being launch-bound: the last size whose time is within 2x of the
    smallest size's (the fixed cost dominates), and the first size reaching half its best
    GB/s."""
    pts = [(e, t, g) for e, t, g in points if t is not None and g is not None]
    if len(pts) < 2:
        return None
    t0 = pts[0][1]
    flat = [e for e, t, _ in pts if t <= 2 * t0]
    peak = max(g for _, _, g in pts)
    half = next((e for e, _, g in pts if g >= 0.5 * peak), None)
    return ("fusec's time stays within 2x of its 2^%d time (%s ms) up to 2^%d elements: "
            "launch-bound there; it reaches half its best GB/s (best %.0f) at 2^%d."
            % (int(math.log2(pts[0][0])), fms(t0), int(math.log2(max(flat))), peak,
               int(math.log2(half))))


def table_sweep(d, out, plot_path):
    if not d.fusec.get("sweep") and not d.peers.get("sweep"):
        return
    out.append("### (iv) Size sweep\n")
    if plot_path:
        out.append("![GB/s against problem size, W1 and W6](%s)\n" % plot_path)
    for wid in ("W1", "W6"):
        series = sweep_series(d, wid)
        if not series:
            continue
        names = list(series)
        sizes = sorted({e for s in series.values() for e, _, _ in s})
        out.append("%s, GB/s (time in ms):\n" % wid)
        out.append("| elements | " + " | ".join(names) + " |")
        out.append("|---|" + "---|" * len(names))
        for e in sizes:
            cells = []
            for n in names:
                pt = next((p for p in series[n] if p[0] == e), None)
                if pt is None or pt[2] is None:
                    cells.append("-")
                else:
                    cells.append("%.0f (%s)" % (pt[2], fms(pt[1])))
            out.append("| 2^%d | %s |" % (int(math.log2(e)), " | ".join(cells)))
        out.append("")
        if "fusec" in series:
            note = launch_bound_note(series["fusec"])
            if note:
                out.append(note + "\n")


def errors_section(d, out):
    errs = []
    for name, src in (("fusec", d.fusec), ("peers", d.peers)):
        for e in src.get("errors", []) or []:
            errs.append("%s: %s" % (name, e))
    for p in d.latency.get("programs", []) or []:
        if p.get("error"):
            errs.append("latency %s: %s" % (p.get("id"), p["error"]))
        elif p.get("warm_disk_error"):
            errs.append("latency %s (new process): %s" % (p.get("id"), p["warm_disk_error"]))
    for c in d.latency.get("overhead", []) or []:
        if c.get("error"):
            errs.append("latency chain %s: %s" % (c.get("nodes"), c["error"]))
    if d.latency.get("error"):
        errs.append("latency: %s" % d.latency["error"])
    if d.missing:
        errs.insert(0, "missing input: " + ", ".join(d.missing))
    if not errs:
        return
    out.append("### Failures and skipped cells recorded by the run\n")
    for e in errs:
        e = esc(e)
        out.append("- " + (e if len(e) < 400 else e[:397] + "..."))
    out.append("")


def table_user_kernels(d, out):
    """W13: a user ReductionKernel l2norm against the built-in sqrt(sum(x*x, 1)), same run."""
    u, ue = d.fusec_result("W13_user_l2norm")
    b, be = d.fusec_result("W13_builtin_l2norm")
    if not u and not b and not ue and not be:
        return
    out.append("### (i b) User kernels\n")
    out.append("The CuPy material's l2norm as a `ReductionKernel` (map `x * x`, reduce `a + b`, "
               "post-map `y = sqrt(a)`) over the rows of a 16384x4096 f32 array, beside the "
               "built-in `sqrt(sum(x*x, axis=1))` (bench/fc/w13*.fc). Target: within 10%.\n")
    out.append("| program | kernels | ms | GB/s | % floor |")
    out.append("|---|---|---|---|---|")
    for name, r, err, wid in (("user l2norm", u, ue, "W13_user_l2norm"),
                              ("built-in sqrt(sum(x*x, 1))", b, be, "W13_builtin_l2norm")):
        if not r:
            out.append("| %s | - | error: %s | - | - |" % (name, esc(err or "missing")))
            continue
        out.append("| %s | %s | %s | %s | %s |" % (name, d.kernels(wid) or "-",
                                                fms(r.get("median_ms")),
                                                "%.0f" % num(r.get("gbps")) if num(r.get("gbps")) else "-",
                                                fpct(r.get("floor_pct"))))
    tu = num((u or {}).get("median_ms"))
    tb = num((b or {}).get("median_ms"))
    if tu and tb:
        out.append("\nuser / built-in: **%.3f** (target <= 1.10: %s)\n"
                   % (tu / tb, "met" if tu <= 1.10 * tb else "missed"))
    else:
        out.append("")


def render(d, plot_path):
    out = []
    gpu, arch = d.gpu()
    copy = d.copy_gbps()
    pcopy = num(d.peers.get("copy", {}).get("gbps"))
    date = d.fusec.get("date") or d.peers.get("date") or d.latency.get("date") or "unknown date"
    runs = d.fusec.get("settings", {}).get("runs") or d.peers.get("settings", {}).get("runs")
    warm = d.fusec.get("settings", {}).get("warmup") or \
        d.peers.get("settings", {}).get("warmup")
    out.append("Run of %s on **%s**%s. Device-to-device copy bandwidth (bytes read + written): "
               "**%s GB/s** in fusec's runs (median), %s GB/s in the peers' run. Each time is "
               "the median of %s timed runs after %s warm-ups, CUDA events (JAX: back-to-back "
               "calls over the wall clock). Peers: CuPy %s, PyTorch %s, JAX %s.\n"
               % (date, gpu or "unknown GPU", " (%s)" % arch if arch else "",
                  "%.0f" % copy if copy else "-", "%.0f" % pcopy if pcopy else "-",
                  runs or "?", warm or "?", d.peers.get("device", {}).get("cupy", "-"),
                  d.peers.get("device", {}).get("torch", "-"),
                  d.peers.get("device", {}).get("jax", "-")))
    table_workloads(d, out)
    table_user_kernels(d, out)
    table_latency(d, out)
    table_memory(d, out)
    table_sweep(d, out, plot_path)
    errors_section(d, out)
    return "\n".join(out).rstrip() + "\n"


def write_report(path, body, force):
    block = BEGIN + "\n" + body + END + "\n"
    if os.path.exists(path) and not force:
        with open(path) as f:
            old = f.read()
        i, j = old.find(BEGIN), old.find(END)
        if i >= 0 and j > i:
            new = old[:i] + block + old[j + len(END):].lstrip("\n")
            with open(path, "w") as f:
                f.write(new)
            return "updated the generated part of"
        if old.strip():
            raise SystemExit("report.py: %s exists without the %s / %s markers; add them where "
                             "the tables go, or pass --force to overwrite" % (path, BEGIN, END))
    with open(path, "w") as f:
        f.write("# fusec benchmark results\n\n" + block +
                "\n<!-- Analysis: write below (kept when report.py runs again). -->\n")
    return "wrote"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", help="a results directory holding fusec.json, latency.json and "
                                  "peers.json")
    ap.add_argument("--fusec", help="fusec.json (default DIR/fusec.json)")
    ap.add_argument("--latency", help="latency.json (default DIR/latency.json)")
    ap.add_argument("--peers", help="peers.json (default DIR/peers.json)")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                  "RESULTS.md"),
                    help="the Markdown file to write (default bench/RESULTS.md); '-' prints")
    ap.add_argument("--plot", default="sweep.png",
                    help="the plot's path as RESULTS.md links it ('' for none)")
    ap.add_argument("--force", action="store_true",
                    help="overwrite an existing file that has no markers")
    args = ap.parse_args(argv)

    def pick(explicit, name):
        if explicit:
            return explicit
        return os.path.join(args.dir, name) if args.dir else None

    d = Data(load(pick(args.fusec, "fusec.json")), load(pick(args.latency, "latency.json")),
             load(pick(args.peers, "peers.json")))
    if len(d.missing) == 3:
        print("report.py: no input JSON found (give --dir or the files)", file=sys.stderr)
        return 1
    body = render(d, args.plot)
    if args.out == "-":
        sys.stdout.write(body)
        return 0
    what = write_report(args.out, body, args.force)
    print("report.py: %s %s" % (what, args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
