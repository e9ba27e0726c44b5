#!/usr/bin/env python3
"""Generates tests/data/ops_scan.txt: NumPy's values of fusec's scans (fc_cumsum, fc_cumprod,
fc_cummax, fc_cummin) in tests/gen_reference.py's format, replayed by tests/test_ops_ref.c
(`o cumsum %R AXIS`, AXIS an integer or `none`).

Run with NumPy 2.x and ml_dtypes (CI has neither, so the output is checked in):

    python3 tests/gen_scan.py

The output is deterministic (fixed seed).

The references: cumsum and cumprod are np.cumsum / np.cumprod with NumPy's result dtypes (bool
and signed integers int64, unsigned uint64, floats and complex their own). NumPy accumulates a
float16 or float32 scan in that dtype, rounding every partial sum; fusec accumulates floats in
double (complex in complex128) and rounds each running value once, as its reductions do, so
the reference is NumPy's scan of the values in float64 / complex128, rounded to the result
dtype, within a few units of the result dtype (and of the partial sums' magnitude, where they
cancel). cummax and cummin are np.maximum.accumulate / np.minimum.accumulate, exact.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_reference as gr  # noqa: E402  (the value encoding and random inputs)

gr.rng = np.random.default_rng(20261127)

OPS = ["cumsum", "cumprod", "cummax", "cummin"]


def result_dtype(op, dt):
    if op in ("cummax", "cummin"):
        return dt
    if dt == np.bool_ or dt.kind == "i":
        return np.dtype(np.int64)
    if dt.kind == "u":
        return np.dtype(np.uint64)
    return dt


def reference(op, x, axis):
    """NumPy's value; axis None scans the flattened array (a 0-d array as shape (1,))."""
    if axis is None:
        x = x.reshape(-1)
        axis = 0
    elif x.ndim == 0:
        x = x.reshape(1)
    rt = result_dtype(op, x.dtype)
    if op in ("cummax", "cummin"):
        f = np.maximum if op == "cummax" else np.minimum
        if x.dtype in (gr.BF16, gr.F16):  # ml_dtypes' bfloat16 has no accumulate loop
            return f.accumulate(x.astype(np.float64), axis=axis).astype(rt)
        return f.accumulate(x, axis=axis)
    if x.dtype.kind in "fcV" or x.dtype in (gr.BF16,):
        wide = np.complex128 if x.dtype.kind == "c" else np.float64
        fn = np.cumsum if op == "cumsum" else np.cumprod
        return fn(x.astype(wide), axis=axis).astype(rt)
    return (np.cumsum if op == "cumsum" else np.cumprod)(x.astype(rt), axis=axis)


def tolerance(op, x, ref, axis):
    """A few units of the result dtype, relative, and absolutely the rounding of the partial
    sums where they cancel (float64 sums of n terms against a compensated one)."""
    rt = ref.dtype
    if rt.kind in "biu" or op in ("cummax", "cummin"):
        return 0.0, 0.0
    real = {gr.C64: gr.F32, gr.C128: gr.F64}.get(rt, rt)
    eps = {gr.BF16: 2.0 ** -8, gr.F16: 2.0 ** -11, gr.F32: 2.0 ** -24}.get(real, 2.0 ** -53)
    n = x.size if axis is None else (x.shape[axis] if x.ndim else 1)
    a = np.abs(x.astype(np.complex128)).ravel()
    a = a[np.isfinite(a)]
    mag = float(np.max(a)) if a.size else 0.0
    return 4 * eps, 4 * n * 2.0 ** -53 * mag * max(n, 1) + 1e-300


def main():
    assert np.__version__.startswith("2."), "NumPy 2.x is the reference"
    w = gr.Writer("ops_scan.txt")
    w.GENERATOR = "tests/gen_scan.py"
    shapes = [((7,), 0), ((3, 5), 0), ((3, 5), 1), ((3, 5), -1), ((2, 3, 4), 1), ((2, 3, 4), None),
              ((), None), ((), 0), ((1, 1), 1), ((0, 4), 1), ((4, 0), 0), ((3, 70), 1)]
    for op in OPS:
        for name in gr.ALL:
            for i, (shape, axis) in enumerate(shapes):
                if (i + len(name)) % 3 and shape not in ((7,), (3, 70), ()):
                    continue  # every shape over the dtypes, not every pair
                dom = "near1" if op == "cumprod" else "any"
                x = gr.rand(name, shape, dom)
                ref = reference(op, x, axis)
                c = w.case("%s %s %s axis %s" % (op, name, shape, axis))
                c.op(op, c.arr(x), "none" if axis is None else axis)
                c.expect(ref, *tolerance(op, x, ref, axis))
    # NaN from where it first appears; complex compared lexicographically; -0.0 kept.
    specials = [np.array([1.0, np.nan, 3.0, -np.inf], np.float64),
                np.array([-0.0, 2.0, -1.0], np.float32),
                np.array([1 + 2j, 1 + 3j, 0 + 5j, complex(np.nan, 0), 2], np.complex128),
                np.array([np.inf, 2.0, -np.inf], np.float64)]
    for op in OPS:
        for x in specials:
            ref = reference(op, x, 0)
            c = w.case("%s special %s" % (op, gr.NAME[x.dtype]))
            c.op(op, c.arr(x), 0)
            c.expect(ref, *tolerance(op, x, ref, 0))
    # A scan of a prologue: cumsum(x * x) along a row long enough to be cut into tiles.
    x = gr.rand("f32", (2, 300))
    c = w.case("cumsum of a product")
    rx = c.arr(x)
    c.op("cumsum", c.op("multiply", rx, rx), 1)
    ref = reference("cumsum", x * x, 1)
    c.expect(ref, *tolerance("cumsum", x * x, ref, 1))
    for axis in (2, -3):
        c = w.case("axis %d out of range" % axis)
        c.op("cumsum", c.arr(gr.rand("f64", (3, 4))), axis)
        c.error("FC_ERR_AXIS")
    w.save()


if __name__ == "__main__":
    sys.exit(main())
