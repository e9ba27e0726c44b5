#!/usr/bin/env python3
"""Generates the NumPy reference tables of fusec's FFTs (fc_fft, fc_ifft):

  tests/data/fft_numpy.txt   replayed by tests/test_fft.c (the host reference vs NumPy)
  tests/data/ops_fft.txt     a few cases in tests/gen_reference.py's format, replayed by
                             tests/test_ops_ref.c (so its coverage test sees both ops)

Run with NumPy 2.x and ml_dtypes (CI has neither, so the output is checked in):

    python3 tests/gen_fft.py

The output is deterministic (fixed seed).

fft_numpy.txt: one case a line, whitespace-separated tokens:
  OP AXIS DTYPE NDIM D.. V..  RDTYPE NDIM D.. V..  RTOL ATOL
OP is fft or ifft; AXIS as passed (may be negative); the input's dtype, shape and values, then
NumPy's result (np.fft.fft / np.fft.ifft(x, axis=AXIS)): its dtype, shape and values. Values
are each element's bits in hex, as in gen_reference.py. A line
  err OP AXIS DTYPE NDIM D.. STATUS
says building the op on an array of that dtype and shape fails with STATUS.

Tolerance: NumPy computes complex64 results in float32 and fusec's host reference in double,
so they differ by NumPy's rounding. An FFT's error is relative to the line's norm, not to
each element, so the bound is an absolute one: ATOL = 16 eps log2(2n) max|result| (every
element of a line is bounded by its norm, and max|result| is at least the norm of the largest
line's input over sqrt(n) times sqrt(n)), plus RTOL = 16 eps relative.

ifft scales by NumPy's fct = reciprocal(n, dtype=result_type(x.real.dtype, 1.0)): 1 / n
rounded to f16 for an f16 input, f32 for f32 and c64. bf16 (which has no reciprocal loop in
ml_dtypes) follows its f16 twin: 1 / n rounded to bf16.
"""
import math
import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_reference as gr  # noqa: E402  (the value encoding and random inputs)

OUT_DIR = gr.OUT_DIR
rng = np.random.default_rng(20250117)

EPS = {gr.C64: 2.0 ** -24, gr.C128: 2.0 ** -53}


def rand(name, shape):
    """Random values of dtype `name`, never zero (gen_reference's generator, our seed)."""
    gr.rng = rng
    return gr.rand(name, shape)


def numpy_fft(op, x, axis):
    if not gr.is_bf16(x):
        return (np.fft.fft if op == "fft" else np.fft.ifft)(x, axis=axis)
    # bf16 has no reciprocal loop in ml_dtypes; it follows its f16 twin, whose ifft NumPy
    # scales by reciprocal(n, dtype=float16): 1 / n rounded to the input's dtype.
    xf = x.astype(np.float32)
    if op == "fft":
        return np.fft.fft(xf, axis=axis)
    n = x.shape[axis]
    fct = np.float32(1.0) / np.float32(np.array(n, dtype=np.float32).astype(gr.BF16))
    fct = np.float32(np.array(fct).astype(gr.BF16))
    return (np.fft.ifft(xf, axis=axis, norm="forward") * fct).astype(np.complex64)


def tol(ref, n):
    eps = EPS[ref.dtype]
    big = float(np.max(np.abs(ref))) if ref.size else 0.0
    return 16 * eps, 16 * eps * math.log2(2 * n) * big + 1e-300


def arr_tokens(a):
    return [gr.NAME[a.dtype]] + gr.shape_tokens(a.shape) + gr.hexbits(a)


lines = []


def case(op, x, axis):
    ref = numpy_fft(op, x, axis)
    n = x.shape[axis]
    rtol, atol = tol(ref, n)
    lines.append(" ".join([op, str(axis)] + arr_tokens(x) + arr_tokens(ref) +
                          [repr(rtol), repr(atol)]))


def error(op, name, shape, axis, status):
    lines.append(" ".join(["err", op, str(axis), name] + gr.shape_tokens(shape) + [status]))


def gen_table():
    # Lengths: powers of two, primes (Bluestein), composites, 1.
    lengths = [1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 15, 16, 17, 31, 32, 33, 60, 64, 97, 100,
               127, 128, 210, 243, 256, 257, 509, 512, 1000, 1024, 1031]
    for n in lengths:
        for name in ["c128", "c64"]:
            for op in ["fft", "ifft"]:
                if n <= 300 or (name, op) in (("c128", "fft"), ("c64", "ifft")):
                    case(op, rand(name, (n,)), -1)
    # Real, integer and bool inputs: the result dtype follows NumPy 2 (c64 for f16/bf16/f32).
    for name in gr.ALL:
        for n in [1, 5, 8, 12]:
            for op in ["fft", "ifft"]:
                case(op, rand(name, (n,)), 0)
    # Axes of 2-D and 3-D arrays, negative axes, unit extents around the axis.
    shapes = [((6, 7), 0), ((6, 7), 1), ((6, 7), -2), ((3, 5, 4), 0), ((3, 5, 4), 1),
              ((3, 5, 4), 2), ((3, 5, 4), -1), ((1, 9), 0), ((1, 9), 1), ((4, 1, 3), 1),
              ((2, 3, 16), 1), ((16, 2, 3), 0), ((2, 2, 2, 11), 3), ((2, 13, 2, 2), 1)]
    for shape, axis in shapes:
        for name in ["c128", "c64", "f32", "i16"]:
            for op in ["fft", "ifft"]:
                case(op, rand(name, shape), axis)
    # Empty arrays along another axis: an empty complex result.
    for op in ["fft", "ifft"]:
        case(op, np.zeros((0, 4), np.complex128), 1)
        case(op, np.zeros((3, 0, 5), np.float32), 2)
    # Errors: axis out of range, 0-d arrays, an empty axis.
    for op in ["fft", "ifft"]:
        error(op, "c128", (4,), 1, "FC_ERR_AXIS")
        error(op, "c64", (4, 3), -3, "FC_ERR_AXIS")
        error(op, "f64", (), 0, "FC_ERR_AXIS")
        error(op, "f64", (), -1, "FC_ERR_AXIS")
        error(op, "c128", (3, 0), 1, "FC_ERR_VALUE")
        error(op, "f32", (0,), 0, "FC_ERR_VALUE")
    gr.write_table("fft_numpy.txt", lines, "tests/gen_fft.py")


class Writer(gr.Writer):
    def save(self):
        path = os.path.join(OUT_DIR, self.name)
        with open(path, "w") as f:
            f.write("# generated by tests/gen_fft.py; do not edit\n")
            for line in self.lines:
                f.write(line + "\n")
        print("%s: %d cases, %d bytes" % (self.name, len(self.lines), os.path.getsize(path)))


def gen_ops():
    """A few cases through test_ops_ref.c's replayer: `o fft %R AXIS`, `o ifft %R AXIS`."""
    w = Writer("ops_fft.txt")
    for name, shape, axis in [("c128", (8,), 0), ("c64", (7,), -1), ("f64", (3, 5), 1),
                              ("f32", (4, 6), 0), ("i32", (2, 3, 4), 1), ("bf16", (5,), 0)]:
        x = rand(name, shape)
        for op in ["fft", "ifft"]:
            c = w.case("%s %s %s axis %d" % (op, name, shape, axis))
            ref = numpy_fft(op, x, axis)
            c.op(op, c.arr(x), axis)
            c.expect(ref, *tol(ref, shape[axis]))
    # The round trip ifft(fft(x)) gives x back (as complex).
    x = rand("c128", (4, 9))
    c = w.case("round trip")
    rx = c.arr(x)
    c.op("ifft", c.op("fft", rx, 1), 1)
    c.expect(x, *tol(x, 9))
    c = w.case("axis out of range")
    c.op("fft", c.arr(rand("c64", (3,))), 1)
    c.error("FC_ERR_AXIS")
    w.save()


# ---- the np.fft family (fft_family.txt) ---------------------------------------------------

FAMILY_EPS = {np.dtype(np.float16): 2.0 ** -11, np.dtype(np.complex64): 2.0 ** -24,
              np.dtype(np.float32): 2.0 ** -24,
              np.dtype(np.complex128): 2.0 ** -53, np.dtype(np.float64): 2.0 ** -53}


def family_case(lines, frng, call, name, shape, n):
    """One line: CALL (the .fc call of input x, no spaces), the input, NumPy's result, rtol
    and atol (tol()'s bound for n points in all)."""
    gr.rng = frng
    x = gr.rand(name, shape) if name != "none" else None
    ref = np.asarray(eval(re.sub(r"\bx\b", "X", call),
                          {"np": np, "X": x, **{f: getattr(np.fft, f) for f in FAMILY}}))
    eps = FAMILY_EPS.get(ref.dtype, 0.0)  # shifts of integers: exact
    big = float(np.max(np.abs(ref))) if ref.size else 0.0
    rtol, atol = 16 * eps, 16 * eps * math.log2(2 * max(n, 1)) * big + 1e-300
    head = [call] + (arr_tokens(x) if x is not None else ["none"])
    lines.append(" ".join(head + arr_tokens(ref) + [repr(rtol), repr(atol)]))


FAMILY = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fftn", "ifftn", "rfftn", "irfftn",
          "fft2", "ifft2", "rfft2", "irfft2", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]


def gen_family():
    """tests/data/fft_family.txt, replayed by tests/test_fft.c (fft_family_matches_numpy):
    each line's call is evaluated as the .fc program `x = input DTYPE [SHAPE]; y = CALL`.
      CALL DTYPE NDIM D.. V..  RDTYPE NDIM D.. V..  RTOL ATOL   (DTYPE "none": no input)
      err CALL DTYPE NDIM D.. STATUS                            (building it fails)"""
    frng = np.random.default_rng(20261127)
    lines = []
    norms = ['', ',norm="ortho"', ',norm="forward"', ',norm="backward"']
    for name in ["c128", "c64", "f64", "f32", "i16", "f16"]:
        real = name[0] != "c"
        for k, norm in enumerate(norms):
            shape = (4, 6) if k % 2 else (5, 7)
            for call, n in [("fft(x%s)", 7), ("ifft(x,axis=0%s)", 5), ("fft(x,n=9%s)", 9),
                            ("ifft(x,n=4,axis=-2%s)", 4), ("fft(x,n=3,axis=1%s)", 3),
                            ("fftn(x%s)", 35), ("ifftn(x,s=[3,8]%s)", 24),
                            ("fft2(x,axes=[1,0]%s)", 35), ("ifft2(x,s=[6,2]%s)", 12),
                            ("irfft(x%s)", 12), ("irfft(x,n=7,axis=0%s)", 7),
                            ("irfft(x,n=2%s)", 2), ("hfft(x%s)", 12), ("hfft(x,n=5,axis=0%s)", 5),
                            ("irfftn(x%s)", 60), ("irfft2(x,s=[4,5]%s)", 20),
                            ("irfftn(x,axes=[0]%s)", 8)]:
                family_case(lines, frng, call % norm, name, shape, n)
            if real:
                for call, n in [("rfft(x%s)", 7), ("rfft(x,n=10,axis=0%s)", 10),
                                ("rfft(x,n=1%s)", 1), ("ihfft(x%s)", 7),
                                ("ihfft(x,n=4,axis=0%s)", 4), ("rfftn(x%s)", 35),
                                ("rfft2(x,s=[3,6]%s)", 18), ("rfftn(x,axes=[1,0]%s)", 35)]:
                    family_case(lines, frng, call % norm, name, shape, n)
    # 1-d, 3-d and unit extents; an empty axis elsewhere
    for name, shape, call, n in [("c128", (1,), "fft(x,n=1)", 1), ("f64", (1,), "irfft(x,n=1)", 1),
                                 ("c64", (2, 3, 4), "fftn(x,axes=[0,2])", 8),
                                 ("f64", (2, 3, 4), "rfftn(x)", 24),
                                 ("c128", (2, 3, 4), "irfftn(x,s=[2,4],axes=[2,1])", 8),
                                 ("f32", (0, 4), "rfft(x)", 4), ("c64", (3, 0), "fft(x,axis=0)", 3),
                                 ("f64", (8,), "hfft(x)", 14), ("c128", (8,), "ihfft(x.real)", 8)]:
        family_case(lines, frng, call, name, shape, n)
    # frequencies and shifts (exact)
    for call in ["fftfreq(1)", "fftfreq(8)", "fftfreq(7,d=0.25)", "fftfreq(10,-3.5)",
                 "rfftfreq(1)", "rfftfreq(8)", "rfftfreq(9,d=0.1)"]:
        family_case(lines, frng, call, "none", (), 1)
    for name, shape, call in [("f64", (5, 6), "fftshift(x)"), ("i32", (5, 6), "ifftshift(x)"),
                              ("c64", (3, 4, 5), "fftshift(x,axes=[0,2])"),
                              ("f32", (7,), "ifftshift(x,axes=0)"), ("u8", (0, 3), "fftshift(x)")]:
        family_case(lines, frng, call, name, shape, 1)
    errs = [("rfft(x)", "c128", (4,), "FC_ERR_DTYPE"), ("ihfft(x)", "c64", (4,), "FC_ERR_DTYPE"),
            ("irfft(x)", "c128", (1,), "FC_ERR_VALUE"), ("fft(x,axis=2)", "f64", (3, 4), "FC_ERR_AXIS"),
            ("fftn(x,s=[2,2,2])", "c128", (3, 4), "FC_ERR_VALUE"),
            ("fftn(x,s=[2],axes=[0,1])", "c128", (3, 4), "FC_ERR_VALUE"),
            ("rfftn(x,axes=[])", "f64", (3, 4), "FC_ERR_VALUE"),
            ("fftshift(x,axes=3)", "f64", (3, 4), "FC_ERR_AXIS")]
    for call, name, shape, status in errs:
        lines.append(" ".join(["err", call, name] + gr.shape_tokens(shape) + [status]))
    gr.write_table("fft_family.txt", lines, "tests/gen_fft.py")


def main():
    assert np.__version__.startswith("2."), "NumPy 2.x is the reference"
    os.makedirs(OUT_DIR, exist_ok=True)
    gen_table()
    gen_ops()
    gen_family()


if __name__ == "__main__":
    sys.exit(main())
