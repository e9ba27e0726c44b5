#!/usr/bin/env python3
"""Generates tests/data/ops_convolve.txt: reference values of np.convolve, np.correlate and
scipy.signal.convolve2d / correlate2d (graph/convolve.c), computed by NumPy 2.4 and SciPy
1.17, which tests/test_composite.c replays through the public API (host backend; the CUDA
backend too where there is a GPU).

    python3 tests/gen_convolve.py      (needs numpy, ml_dtypes and scipy)

Deterministic (a fixed seed); the output is checked in (CI has no SciPy). The format is
tests/gen_reference.py's, with these ops (enum values as include/fusec.h numbers them: mode
full 0, same 1, valid 2; boundary fill 0, wrap 1, symm 2; method auto 0, direct 1, fft 2):
  o convolve %A %V MODE METHOD            np.convolve
  o correlate %A %V MODE METHOD           np.correlate
  o convolve2d %A %B MODE BOUNDARY RE IM METHOD     scipy.signal.convolve2d, fillvalue
  o correlate2d %A %B MODE BOUNDARY RE IM METHOD    RE + IM j (hex bits of doubles)
Every case runs under each method (auto, direct, fft): NumPy and SciPy compute directly, so
the reference is the same; the tolerance covers the FFT's rounding (relative to the largest
term, as an FFT's error is) and SciPy's accumulation in the input's dtype.
"""
import os
import sys
import warnings

import numpy as np
import scipy.signal as ss

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_reference  # noqa: E402
from gen_reference import NAME, f64hex  # noqa: E402

warnings.simplefilter("ignore")
rng = np.random.default_rng(20260412)

MODES = ["full", "same", "valid"]
BOUNDS = ["fill", "wrap", "symm"]
METHODS = ["auto", "direct", "fft"]
FLOATS = ["f32", "f64", "c64", "c128"]
INTS = ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"]
DT = {n: dt for n, dt in gen_reference.DTYPES}


def data(name, shape):
    """Random values, never zeros: floats in [-2, 2] away from 0, small integers."""
    dt = DT[name]
    if name == "bool":
        return rng.random(shape) < 0.6
    if dt.kind in "iu":
        lo = 1 if dt.kind == "u" else -5
        v = rng.integers(lo, 6, size=shape)
        v[v == 0] = 1
        return v.astype(dt)
    mag = rng.uniform(0.25, 2.0, size=shape) * rng.choice([-1, 1], size=shape)
    if dt.kind == "c":
        im = rng.uniform(0.25, 2.0, size=shape) * rng.choice([-1, 1], size=shape)
        return (mag + 1j * im).astype(dt)
    return mag.astype(dt)


def tolerance(res, x, w, method):
    """(rtol, atol) for a float result: the largest possible term sum times the dtype's
    epsilon, more for the FFT; integers exact."""
    if res.dtype.kind not in "fc":
        return 0.0, 0.0
    eps = np.finfo(res.dtype).eps
    scale = float(np.abs(x).max(initial=0)) * float(np.abs(w).sum()) + 1e-30
    k = 64 if method == "fft" else 16
    if method == "auto" and w.size >= 64:
        k = 64
    n = np.log2(max(x.size + w.size, 2))
    return float(k * eps), float(k * n * eps * scale)


def emit(w, label, fn, args, x, v, tokens_of):
    """One case: the reference from NumPy / SciPy (or its error), checked under each method."""
    c = w.case(label)
    ra, rb = c.arr(x), c.arr(v)
    try:
        ref = np.asarray(fn(*args))
    except (ValueError, TypeError) as e:
        ref = status_of(str(e))
    for mi, method in enumerate(METHODS):
        c.op(*tokens_of(ra, rb, mi))
        if isinstance(ref, str):
            c.check_error(ref)
        else:
            rtol, atol = tolerance(ref, np.asarray(x), np.asarray(v), method)
            c.check(ref, rtol, atol)
    c.finish()


def status_of(msg):
    if "not available" in msg:
        return "FC_ERR_DTYPE"
    if "valid" in msg and "large" in msg or "2-D" in msg or "deep" in msg or "depth" in msg \
            or "negative dimensions" in msg:
        return "FC_ERR_SHAPE"
    return "FC_ERR_VALUE"


def gen_2d(w):
    shapes = [((7, 9), (3, 3)), ((6, 5), (2, 2)), ((5, 8), (4, 5)), ((4, 6), (1, 1)),
              ((1, 1), (1, 1)), ((1, 7), (1, 3)), ((3, 4), (5, 6)), ((2, 3), (4, 6)),
              ((3, 3), (4, 2)), ((9, 4), (2, 4)), ((6, 7), (6, 1))]
    for corr, fname in ((False, "convolve2d"), (True, "correlate2d")):
        f = ss.correlate2d if corr else ss.convolve2d
        for si, (sa, sk) in enumerate(shapes):
            # every dtype on the first shapes, then a float and an integer dtype in turn
            for t in FLOATS + INTS[:1] if si < 2 else (FLOATS[si % 4], INTS[si % len(INTS)]):
                x, k = data(t, sa), data(t, sk)
                for mode in MODES:
                    for b in BOUNDS:
                        fills = [0.0] if b != "fill" else [0.0, -1.5 if t not in INTS else -2.0]
                        if b == "fill" and t in ("c64", "c128"):
                            fills.append(0.5 - 1.25j)
                        for fv in fills:
                            label = "%s %s %s %s %s %s fill=%s" % (fname, t, sa, sk, mode, b, fv)
                            emit(w, label, lambda x=x, k=k, mode=mode, b=b, fv=fv:
                                 f(x, k, mode=mode, boundary=b, fillvalue=fv), (),
                                 x, k, lambda ra, rb, mi, mode=mode, b=b, fv=fv:
                                 (fname, ra, rb, MODES.index(mode), BOUNDS.index(b),
                                  f64hex(complex(fv).real), f64hex(complex(fv).imag), mi))
    # dtype promotion: SciPy's result type of mixed inputs
    for ta, tb in (("i8", "u8"), ("f32", "i64"), ("f32", "c64"), ("f64", "c64"), ("i32", "f32"),
                   ("u64", "i64"), ("f32", "f64"), ("u16", "i8")):
        x, k = data(ta, (5, 6)), data(tb, (3, 2))
        for corr, fname in ((False, "convolve2d"), (True, "correlate2d")):
            f = ss.correlate2d if corr else ss.convolve2d
            emit(w, "%s promote %s %s" % (fname, ta, tb), lambda x=x, k=k: f(x, k, mode="same",
                 boundary="symm"), (), x, k,
                 lambda ra, rb, mi, fname=fname: (fname, ra, rb, 1, 2, f64hex(0.0), f64hex(0.0),
                                                  mi))
    # a large kernel (auto takes the FFT), every boundary
    for t in ("f32", "c64"):
        x, k = data(t, (20, 17)), data(t, (11, 12))
        for mode in MODES:
            for b in BOUNDS:
                emit(w, "convolve2d large %s %s %s" % (t, mode, b),
                     lambda x=x, k=k, mode=mode, b=b: ss.convolve2d(x, k, mode=mode, boundary=b,
                                                                    fillvalue=0.75), (), x, k,
                     lambda ra, rb, mi, mode=mode, b=b: ("convolve2d", ra, rb, MODES.index(mode),
                                                         BOUNDS.index(b), f64hex(0.75),
                                                         f64hex(0.0), mi))
    # empty inputs (SciPy's results), errors
    special = [
        ((0, 3), (2, 2), "full", "fill", 1.0), ((0, 3), (2, 2), "same", "fill", 1.0),
        ((3, 4), (0, 2), "full", "fill", 0.0), ((3, 4), (0, 2), "same", "fill", 0.0),
        ((3, 4), (0, 2), "valid", "fill", 0.0), ((0, 0), (0, 0), "valid", "fill", 0.0),
        ((3, 4), (2, 0), "same", "wrap", 0.0), ((0, 0), (0, 0), "full", "fill", 0.0),
        ((0, 3), (2, 2), "valid", "fill", 0.0), ((3, 3), (4, 2), "valid", "fill", 0.0),
    ]
    for sa, sk, mode, b, fv in special:
        x, k = data("f64", sa), data("f64", sk)
        emit(w, "convolve2d empty %s %s %s %s" % (sa, sk, mode, b),
             lambda x=x, k=k, mode=mode, b=b, fv=fv: ss.convolve2d(x, k, mode=mode, boundary=b,
                                                                   fillvalue=fv), (), x, k,
             lambda ra, rb, mi, mode=mode, b=b, fv=fv: ("convolve2d", ra, rb, MODES.index(mode),
                                                        BOUNDS.index(b), f64hex(fv),
                                                        f64hex(0.0), mi))
    errors = [  # (dtype a, shape a, dtype b, shape b, fill re, im, expected status)
        ("bool", (3, 3), "bool", (2, 2), 0.0, 0.0, "FC_ERR_DTYPE"),
        ("f16", (3, 3), "f16", (2, 2), 0.0, 0.0, "FC_ERR_DTYPE"),
        ("f64", (3,), "f64", (2, 2), 0.0, 0.0, "FC_ERR_SHAPE"),
        ("f64", (2, 2, 2), "f64", (2, 2), 0.0, 0.0, "FC_ERR_SHAPE"),
        ("f32", (3, 3), "f32", (2, 2), 1.0, 2.0, "FC_ERR_VALUE"),
        ("i8", (3, 3), "i8", (2, 2), 300.0, 0.0, "FC_ERR_VALUE"),
        ("u8", (3, 3), "u8", (2, 2), -1.0, 0.0, "FC_ERR_VALUE"),
    ]
    for ta, sa, tb, sb, re, im, status in errors:
        for fname in ("convolve2d", "correlate2d"):
            c = w.case("%s error %s%s %s%s fill=%g%+gj" % (fname, ta, sa, tb, sb, re, im))
            ra, rb = c.arr(data(ta, sa)), c.arr(data(tb, sb))
            c.op(fname, ra, rb, 0, 0, f64hex(re), f64hex(im), 0)
            c.error(status)
    for mode, b, method in ((7, 0, 0), (0, 5, 0), (0, 0, 9), (-1, 0, 0)):
        c = w.case("convolve2d bad enum %d %d %d" % (mode, b, method))
        ra, rb = c.arr(data("f64", (3, 3))), c.arr(data("f64", (2, 2)))
        c.op("convolve2d", ra, rb, mode, b, f64hex(0.0), f64hex(0.0), method)
        c.error("FC_ERR_VALUE")
    # wrap / symm of an empty in1 (SciPy crashes): a clear error
    for b in (1, 2):
        c = w.case("convolve2d empty in1 boundary %d" % b)
        ra, rb = c.arr(data("f64", (0, 3))), c.arr(data("f64", (2, 2)))
        c.op("convolve2d", ra, rb, 0, b, f64hex(0.0), f64hex(0.0), 0)
        c.error("FC_ERR_VALUE")


def gen_1d(w):
    pairs = [(5, 3), (5, 2), (3, 5), (2, 5), (4, 4), (1, 3), (3, 1), (1, 1), (9, 6), (6, 9)]
    dtypes = ["f32", "f64", "c64", "c128", "i8", "u8", "i64", "bool", "f16"]
    for corr, fname in ((False, "convolve"), (True, "correlate")):
        f = np.correlate if corr else np.convolve
        for pi, (m, n) in enumerate(pairs):
            for t in dtypes if pi < 5 else dtypes[pi % len(dtypes):pi % len(dtypes) + 2]:
                a, v = data(t, (m,)), data(t, (n,))
                for mode in MODES:
                    emit(w, "%s %s %d %d %s" % (fname, t, m, n, mode),
                         lambda a=a, v=v, mode=mode: f(a, v, mode), (), a, v,
                         lambda ra, rb, mi, mode=mode: (fname, ra, rb, MODES.index(mode), mi))
    # promotion, 0-d, a long signal with a long filter (auto takes the FFT)
    for ta, tb in (("i8", "u8"), ("f32", "i64"), ("f16", "f32"), ("bool", "i8"), ("f32", "c128")):
        a, v = data(ta, (7,)), data(tb, (4,))
        for fname, f in (("convolve", np.convolve), ("correlate", np.correlate)):
            emit(w, "%s promote %s %s" % (fname, ta, tb), lambda a=a, v=v, f=f: f(a, v, "same"),
                 (), a, v, lambda ra, rb, mi, fname=fname: (fname, ra, rb, 1, mi))
    a0, v = np.asarray(data("f64", ()), dtype=np.float64), data("f64", (3,))
    for fname, f in (("convolve", np.convolve), ("correlate", np.correlate)):
        emit(w, "%s 0-d" % fname, lambda a0=a0, v=v, f=f: f(a0, v, "full"), (), a0, v,
             lambda ra, rb, mi, fname=fname: (fname, ra, rb, 0, mi))
    for t in ("f32", "c128"):
        a, v = data(t, (200,)), data(t, (90,))
        for mode in MODES:
            emit(w, "convolve long %s %s" % (t, mode), lambda a=a, v=v, mode=mode:
                 np.convolve(a, v, mode), (), a, v,
                 lambda ra, rb, mi, mode=mode: ("convolve", ra, rb, MODES.index(mode), mi))
            emit(w, "correlate long %s %s" % (t, mode), lambda a=a, v=v, mode=mode:
                 np.correlate(v, a, mode), (), v, a,
                 lambda ra, rb, mi, mode=mode: ("correlate", ra, rb, MODES.index(mode), mi))
    # errors: empty inputs, too deep, bad mode
    for fname, f in (("convolve", np.convolve), ("correlate", np.correlate)):
        for sa, sb in (((0,), (3,)), ((3,), (0,)), ((2, 2), (3,))):
            a, v = data("f64", sa), data("f64", sb)
            emit(w, "%s error %s %s" % (fname, sa, sb), lambda a=a, v=v, f=f: f(a, v, "full"),
                 (), a, v, lambda ra, rb, mi, fname=fname: (fname, ra, rb, 0, mi))
        c = w.case("%s bad mode" % fname)
        ra, rb = c.arr(data("f64", (3,))), c.arr(data("f64", (2,)))
        c.op(fname, ra, rb, 4, 0)
        c.error("FC_ERR_VALUE")


def main():
    w = gen_reference.Writer("ops_convolve.txt")
    w.GENERATOR = "tests/gen_convolve.py"
    gen_2d(w)
    gen_1d(w)
    w.save()


if __name__ == "__main__":
    main()
