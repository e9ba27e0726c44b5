#!/usr/bin/env python3
"""bench/fusec_runs.py - times every workload through `fusec run --bench --json`.

Runs each bench/fc/wNN_*.fc program (W1-W13), issue 11's bench/fc/i11_*.fc (a scan, random
draws, a gather by random indices and a scatter into random bins, the indices written to the
temporary directory as .npy), issue 12's library calls bench/fc/i12_*.fc (solve and
cholesky of well-conditioned matrices written as .npy; svd; convolve2d, stencil and FFT),
issue 13's bench/fc/i13_*.fc (half precision; layer norms, batch-norm statistics, column
softmax, argmax, an optimizer step, an outer product, a batched transpose, row statistics, a
Laplacian) and the size sweep of W1 and W6 (bench/fc/sweep/*_n.fc with
--set n=...) through the fusec CLI, one process each, and collects their JSON objects into one
file. A run that fails or times out gives an entry with "error" (its exit code and the tail of its stderr); the others go
on. Each row is timed two ways (`fusec run --bench --back-to-back`): "median_ms", CUDA events
around each call, and "b2b", batches of calls issued back to back over the wall clock with one
wait a batch, the method peers.py uses for jax.jit.

    python3 bench/fusec_runs.py --fusec PATH/fusec --json fusec.json [--runs 15] ...
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))

# id -> (program, extra options). W7's floor counts two reads of d and one write
# (the workload's own definition); every other floor is the CLI's default, inputs read once + outputs written once.
WORKLOADS = [
    ("W1", "w01_tanh_sin.fc", []),
    ("W2", "w02_poly.fc", []),
    ("W3", "w03_sum.fc", []),
    ("W4", "w04_softmax.fc", []),
    ("W5", "w05_leaky_relu.fc", []),
    ("W6", "w06_row_l2norm.fc", []),
    ("W7", "w07_normalize_cols.fc", ["--floor-bytes", str(12 * 65536 * 1024)]),
    ("W8", "w08_mandelbrot.fc", []),
    ("W9", "w09_box_blur.fc", []),
    ("W10", "w10_saxpy.fc", []),
    ("W11", "w11_col_mean_scaled.fc", []),
    ("W12_matmul", "w12_matmul.fc", []),
    ("W12_fft", "w12_fft.fc", []),
    # issue 10: a user ReductionKernel l2norm beside the built-in form of the same reduction
    ("W13_user_l2norm", "w13_user_l2norm.fc", []),
    ("W13_builtin_l2norm", "w13b_builtin_l2norm.fc", []),
    # issue 11: scans and random numbers
    ("I11_cumsum", "i11_cumsum.fc", []),
    ("I11_normal", "i11_normal.fc", []),
    # random indices (take_indices below); floor: indices and output once, one 32-byte sector
    # of x per element gathered (x is 256 MiB, far beyond L2, so each gather costs a sector)
    ("I11_take", "i11_take.fc", ["--input", "i={take_indices}", "--floor-bytes",
                                 str(40 * (1 << 24))]),
    # random bins (scatter_bins below); floor: the indices read once
    ("I11_scatter_add", "i11_scatter_add.fc", ["--input", "i={scatter_bins}", "--floor-bytes",
                                               str(4 * (1 << 26))]),
    # a mask's selection, timed from the build (which evaluates the count); floor: x read once,
    # the selection written once. Its program needs its input's data to build, so it lives in
    # bench/fc-data, outside the programs the tests build without data (an absolute path)
    ("I11_compress", os.path.join(HERE, "fc-data", "i11_compress.fc"), ["--time-build"]),
    # sorts; floor: the keys read once and the result written once
    ("I11_sort", "i11_sort.fc", []),
    ("I11_argsort", "i11_argsort.fc", []),
    # issue 13: half precision at full speed; floor: x read once, y written once (2 + 2 bytes)
    ("I13_gelu_f16", "i13_gelu_f16.fc", []),
    ("I13_gelu_bf16", "i13_gelu_bf16.fc", []),
    # issue 13: reductions and broadcasts of every shape (2^26 f32 elements, 256 MiB, unless
    # said). Layer norm over rows of 1k-32k f32 with a weight and a bias: floor x read twice
    # (the floor for a row chain: "the input read at most twice"), y written once, w
    # and b read once: 12 bytes an element + 8 a column
    *[("I13_layernorm_%s" % k, "i13_layernorm_%s.fc" % k,
       ["--floor-bytes", str(12 * (1 << 26) + 8 * n)])
      for k, n in (("1k", 1024), ("4k", 4096), ("16k", 16384), ("32k", 32768))],
    # batch-norm statistics, mean and var over axes (0, 2) of [64, 256, 4096]: floor the CLI's
    # default, x read once and the two 256-vectors written once
    ("I13_bn_stats", "i13_bn_stats.fc", []),
    # softmax over axis 0 of 8192 x 8192: floor x read twice (a column does not fit on chip:
    # the reductions read it, the normalisation reads it again) and y written once, W7's 12MN
    ("I13_col_softmax", "i13_col_softmax.fc", ["--floor-bytes", str(12 * 8192 * 8192)]),
    # the rest: the CLI's default floor, the inputs read once and the outputs written once.
    # argmax over the rows of 16384 x 4096: x, then 16384 int64
    ("I13_argmax_rows", "i13_argmax_rows.fc", []),
    # Adam-like step: p, g, m, v read, p, m, v written (28 bytes an element)
    ("I13_adam", "i13_adam.fc", []),
    # outer product of two 8192-vectors: 64 KiB read, 256 MiB written
    ("I13_outer", "i13_outer.fc", []),
    # 2 * x.transpose(0, 2, 1) + 1 over [64, 1024, 1024]: x read, y written
    ("I13_transpose_ew", "i13_transpose_ew.fc", []),
    # mean and std of the rows of 1024 x 65536: x read, two 1024-vectors written
    ("I13_mean_std_rows", "i13_mean_std_rows.fc", []),
    # 5-point Laplacian of 8192 x 8192: u read once, the 8190 x 8190 interior written once
    ("I13_laplacian", "i13_laplacian.fc", []),
    # issue 12: library calls (cuSOLVER, cuFFT, cuBLAS). Each floor is the CLI's default, the
    # inputs read once and the outputs written once; solve, svd, cholesky and the matmul are
    # compute-bound, so FLOPS below gives their GFLOP/s as well (bench/libdirect times the
    # bare library calls of the same rows, the 2% target's reference)
    ("I12_solve", "i12_solve.fc", ["--input", "a={solve_a}", "--input", "b={solve_b}"]),
    ("I12_svd", "i12_svd.fc", ["--input", "a={svd_a}"]),
    ("I12_cholesky", "i12_cholesky.fc", ["--input", "a={spd_a}"]),
    ("I12_rfft", "i12_rfft.fc", []),
    ("I12_fft2", "i12_fft2.fc", []),
    ("I12_matmul_bias_relu", "i12_matmul_bias_relu.fc", []),
    ("I12_matmul_bias_gelu", "i12_matmul_bias_gelu.fc", []),
    # issue 12: convolution; floor: x and k read once, the result written once
    ("I12_convolve2d_3x3", "i12_convolve2d_3x3.fc", []),
    ("I12_convolve2d_31x31", "i12_convolve2d_31x31.fc", []),
    # issue 12: a sparse product (spmv_files below); floor: data and indices read once
    # (8 * nnz), indptr once (4 * (n + 1)), x read and y written once (8 * n)
    ("I12_spmv", "i12_spmv.fc", ["--input", "indptr={spmv_indptr}", "--input",
                                 "indices={spmv_indices}", "--input", "data={spmv_data}",
                                 "--floor-bytes",
                                 str(8 * (1 << 27) + 4 * ((1 << 24) + 1) + 8 * (1 << 24))]),
]

# Nominal floating-point operations of the compute-bound rows (the conventional LAPACK / BLAS
# counts; svd's is Golub and Van Loan's for U, S and V of a square matrix, 21 n^3): the entry
# gets "flops" and "gflops" = flops / median time. The same counts are in peers.py and
# bench/libdirect.c.
FLOPS = {
    "I12_solve": 2 * 4096**3 // 3 + 2 * 4096**2,  # getrf + getrs of one right-hand side
    "I12_svd": 21 * 1024**3,
    "I12_cholesky": 8192**3 // 3,
    "I12_matmul_bias_relu": 2 * 4096**3 + 2 * 4096**2,  # the product, the bias, the relu
    "I12_matmul_bias_gelu": 2 * 4096**3 + 2 * 4096**2,  # counted as relu's
}


def take_indices(directory):
    """I11_take's indices: 2^24 random int32 in [0, 2^26) as .npy (NumPy, seed 11)."""
    path = os.path.join(directory, "i11_take_indices.npy")
    if not os.path.exists(path):
        import numpy as np
        np.save(path, np.random.default_rng(11).integers(0, 1 << 26, 1 << 24, dtype=np.int32))
    return path

def scatter_bins(directory):
    """I11_scatter_add's indices: 2^26 random int32 in [0, 1024) as .npy (NumPy, seed 12)."""
    path = os.path.join(directory, "i11_scatter_bins.npy")
    if not os.path.exists(path):
        import numpy as np
        np.save(path, np.random.default_rng(12).integers(0, 1024, 1 << 26, dtype=np.int32))
    return path


def solve_files(directory):
    """I12_solve's A and b as .npy (NumPy, seed 13): A f32 4096 x 4096 uniform in [0, 1) plus
    4096 on the diagonal (strictly diagonally dominant: well conditioned), b f32 4096 uniform
    in [0, 1), the same generator's next draws. Returns both paths."""
    pa = os.path.join(directory, "i12_solve_a.npy")
    pb = os.path.join(directory, "i12_solve_b.npy")
    if not (os.path.exists(pa) and os.path.exists(pb)):
        import numpy as np
        rng = np.random.default_rng(13)
        a = rng.random((4096, 4096), dtype=np.float32)
        a[np.diag_indices(4096)] += np.float32(4096)
        np.save(pa, a)
        np.save(pb, rng.random(4096, dtype=np.float32))
    return pa, pb

def solve_a(directory):
    return solve_files(directory)[0]

def solve_b(directory):
    return solve_files(directory)[1]

def svd_a(directory):
    """I12_svd's A: f32 1024 x 1024 uniform in [0, 1), the very matrix bench/libdirect factors
    (its counter-based hash, default seed 12, stream 3; row-major, the bytes libdirect hands
    gesvd): gesvd's QR iterations depend on the data, so the 2% comparison needs the same
    matrix on both sides (different random matrices of this size were seen 3% apart)."""
    path = os.path.join(directory, "i12_svd_a.npy")
    if not os.path.exists(path):
        import numpy as np

        def mix64(z):
            z = z + np.uint64(0x9e3779b97f4a7c15)
            z = (z ^ (z >> np.uint64(30))) * np.uint64(0xbf58476d1ce4e5b9)
            z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94d049bb133111eb)
            return z ^ (z >> np.uint64(31))

        n, seed, stream = 1024, 12, 3
        with np.errstate(over="ignore"):
            base = mix64(np.array([seed ^ (stream << 56)], dtype=np.uint64))[0]
            z = mix64(base + np.arange(n * n, dtype=np.uint64))
        a = ((z >> np.uint64(11)).astype(np.float64) * 2.0**-53).astype(np.float32)
        np.save(path, a.reshape(n, n))
    return path

def spd_a(directory):
    """I12_cholesky's A: f64 8192 x 8192, (R + R^T) / 2 + 8192 I with R uniform in [0, 1):
    symmetric, strictly diagonally dominant with a positive diagonal, so SPD (NumPy, seed 14;
    512 MiB)."""
    path = os.path.join(directory, "i12_cholesky_a.npy")
    if not os.path.exists(path):
        import numpy as np
        n = 8192
        a = np.random.default_rng(14).random((n, n))
        a += a.T
        a *= 0.5
        a[np.diag_indices(n)] += n
        np.save(path, a)
    return path

def spmv_files(directory, n=1 << 24, nnz=1 << 27):
    """I12_spmv's CSR matrix as .npy (NumPy, seed 15): n x n with nnz stored values, each at a
    random (row, column), so about nnz / n a row; column indices sorted within each row
    (duplicates possible, as CSR allows); indptr, indices int32, data f32 uniform in [0, 1).
    Returns the paths of indptr, indices and data."""
    tag = "" if (n, nnz) == (1 << 24, 1 << 27) else "_%d_%d" % (n, nnz)
    paths = [os.path.join(directory, "i12_spmv_%s%s.npy" % (part, tag))
             for part in ("indptr", "indices", "data")]
    if not all(os.path.exists(p) for p in paths):
        import numpy as np
        rng = np.random.default_rng(15)
        key = rng.integers(0, n, nnz, dtype=np.int64)  # the rows, then row * n + column
        key *= n
        key += rng.integers(0, n, nnz, dtype=np.int64)
        key.sort()
        indptr = np.zeros(n + 1, dtype=np.int32)
        np.cumsum(np.bincount(key // n, minlength=n), out=indptr[1:])
        np.save(paths[0], indptr)
        del indptr
        key %= n
        np.save(paths[1], key.astype(np.int32))
        del key
        np.save(paths[2], rng.random(nnz, dtype=np.float32))
    return paths

def spmv_indptr(directory):
    return spmv_files(directory)[0]

def spmv_indices(directory):
    return spmv_files(directory)[1]

def spmv_data(directory):
    return spmv_files(directory)[2]


INPUT_FILES = {"{take_indices}": take_indices, "{scatter_bins}": scatter_bins,
               "{solve_a}": solve_a, "{solve_b}": solve_b, "{spd_a}": spd_a, "{svd_a}": svd_a,
               "{spmv_indptr}": spmv_indptr, "{spmv_indices}": spmv_indices,
               "{spmv_data}": spmv_data}

# Sweep programs: id -> (program, elements -> value of n)
SWEEP = [
    ("W1", "sweep/w01_tanh_sin_n.fc", lambda e: e),
    ("W6", "sweep/w06_row_l2norm_n.fc", lambda e: max(1, e // 4096)),
]


def log(*a):
    print(*a, flush=True)


def run_one(cmd, timeout):
    """Runs one CLI command; returns (parsed JSON object or None, error string or None, secs)."""
    t0 = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, "timed out after %d s" % timeout, time.time() - t0
    except OSError as e:
        return None, "cannot run %s: %s" % (cmd[0], e), time.time() - t0
    secs = time.time() - t0
    obj = None
    # --json prints one object; take the last line that parses, so stray lines do no harm.
    for line in reversed(p.stdout.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                obj = json.loads(line)
                break
            except ValueError:
                continue
    if p.returncode != 0 or obj is None:
        tail = " ".join((p.stderr or "").strip().split())[-600:]
        return obj, "exit %d: %s" % (p.returncode, tail or "(no output)"), secs
    return obj, None, secs


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fusec", required=True, help="the fusec CLI binary")
    ap.add_argument("--json", required=True, metavar="FILE", help="where to write the results")
    ap.add_argument("--fc-dir", default=os.path.join(HERE, "fc"), help="the .fc programs")
    ap.add_argument("--backend", default="cuda", help="--backend of fusec run (default cuda)")
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--only", help="comma-separated workload ids (W12 selects both W12 rows)")
    ap.add_argument("--timeout", type=int, default=180, help="seconds per run (default 180)")
    ap.add_argument("--timeout-w12", type=int, default=60,
                    help="seconds per W12 run (default 60: it is library-bound, or falls back)")
    ap.add_argument("--no-sweep", action="store_true")
    ap.add_argument("--sweep-min", type=int, default=16)
    ap.add_argument("--sweep-max", type=int, default=28)
    ap.add_argument("--sweep-step", type=int, default=2)
    ap.add_argument("--cache-dir", help="--cache-dir of fusec run (default: $FUSEC_CACHE_DIR)")
    ap.add_argument("--no-back-to-back", action="store_true",
                    help="leave out --back-to-back (the second timing, JAX's method)")
    ap.add_argument("--batch", type=int, default=0,
                    help="--batch of --back-to-back (default 0: about 50 ms of work)")
    args = ap.parse_args(argv)

    common = ["--backend", args.backend, "--bench", "--json", "--runs", str(args.runs),
              "--warmup", str(args.warmup)]
    if args.cache_dir:
        common += ["--cache-dir", args.cache_dir]
    # Two timings of every row: median_ms, CUDA events around each call (the one the tables
    # used so far), and "b2b", calls back to back over the wall clock, one wait a batch (how
    # peers.py times jax.jit, so that the two compare by the same method)
    if not args.no_back_to_back:
        common += ["--back-to-back", "--batch", str(args.batch)]
    want = set(args.only.split(",")) if args.only else None
    res = {"tool": "bench/fusec_runs.py", "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
           "fusec": args.fusec, "settings": {k: v for k, v in vars(args).items()},
           "workloads": {}, "sweep": {}, "errors": []}
    t_start = time.time()

    def write():
        res["elapsed_s"] = time.time() - t_start
        tmp = args.json + ".tmp"
        with open(tmp, "w") as f:
            json.dump(res, f, indent=1)
        os.replace(tmp, args.json)

    for wid, prog, extra in WORKLOADS:
        if want and wid not in want and wid.split("_")[0] not in want:
            continue
        path = os.path.join(args.fc_dir, prog)
        made = True
        for key, maker in INPUT_FILES.items():
            if not any(key in a for a in extra):
                continue
            try:
                where = maker(tempfile.gettempdir())
            except Exception as e:  # no NumPy: the row reports why
                res["workloads"][wid] = {"id": wid, "result": None, "error": "inputs: %s" % e}
                res["errors"].append("%s: inputs: %s" % (wid, e))
                made = False
                break
            extra = [a.replace(key, where) for a in extra]
        if not made:
            continue
        cmd = [args.fusec, "run", path] + common + extra
        timeout = args.timeout_w12 if wid.startswith("W12") else args.timeout
        obj, err, secs = run_one(cmd, timeout)
        entry = {"id": wid, "command": " ".join(cmd), "wall_s": secs, "result": obj, "error": err}
        if wid in FLOPS:
            entry["flops"] = FLOPS[wid]
            if obj and obj.get("median_ms"):
                entry["gflops"] = FLOPS[wid] / (obj["median_ms"] * 1e-3) / 1e9
        res["workloads"][wid] = entry
        if err:
            res["errors"].append("%s: %s" % (wid, err))
            log("%-11s ERROR %s" % (wid, err))
        else:
            log("%-11s %9.3f ms  %7.0f GB/s  %5s%% of floor  (%d kernel(s), peak %s B, io %s B)"
                % (wid, obj.get("median_ms") or 0, obj.get("gbps") or 0,
                   "%.0f" % obj["floor_pct"] if obj.get("floor_pct") is not None else "-",
                   obj.get("kernels") or 0, obj.get("peak_bytes"), obj.get("io_bytes"))
                + ("  %.0f GFLOP/s" % entry["gflops"] if "gflops" in entry else ""))
        write()

    if not args.no_sweep:
        exps = list(range(args.sweep_min, args.sweep_max + 1, args.sweep_step))
        for wid, prog, nval in SWEEP:
            rows = []
            res["sweep"][wid] = rows
            path = os.path.join(args.fc_dir, prog)
            for e in exps:
                elements = 2**e
                cmd = [args.fusec, "run", path, "--set", "n=%d" % nval(elements)] + common
                obj, err, secs = run_one(cmd, args.timeout)
                rows.append({"elements": elements, "result": obj, "error": err})
                if err:
                    res["errors"].append("sweep %s 2^%d: %s" % (wid, e, err))
                    log("sweep %s 2^%d ERROR %s" % (wid, e, err))
                else:
                    log("sweep %s 2^%-2d %9.4f ms  %7.0f GB/s" % (
                        wid, e, obj.get("median_ms") or 0, obj.get("gbps") or 0))
            write()
    write()
    log("%d errors; %.0f s" % (len(res["errors"]), time.time() - t_start))
    return 0


if __name__ == "__main__":
    sys.exit(main())
