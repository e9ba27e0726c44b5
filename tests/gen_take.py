#!/usr/bin/env python3
"""Generates tests/data/ops_take.txt: NumPy's values of fusec's take (fc_take, np.take) in
tests/gen_reference.py's format, replayed by tests/test_ops_ref.c
(`o take %A %I AXIS MODE`, AXIS an integer or `none`, MODE raise, wrap or clip). Indices of
any integer dtype are taken as int64 values (a u64 above 2^63 is negative), as NumPy does.

Run with NumPy 2.x and ml_dtypes (CI has neither, so the output is checked in):

    python3 tests/gen_take.py

The output is deterministic (fixed seed). Every value is an exact copy: no tolerance.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_reference as gr  # noqa: E402  (the value encoding and random inputs)

gr.rng = np.random.default_rng(20261128)
rng = np.random.default_rng(20261129)

INDEX_DTYPES = {"i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
                "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64}


def indices(name, shape, lo, hi):
    v = rng.integers(lo, hi, size=shape if shape else None, endpoint=False)
    return np.asarray(v).astype(INDEX_DTYPES[name])


def main():
    assert np.__version__.startswith("2."), "NumPy 2.x is the reference"
    w = gr.Writer("ops_take.txt")
    w.GENERATOR = "tests/gen_take.py"

    def case(label, x, ind, axis, mode):
        ref = np.take(x, ind, axis=axis, mode=mode)
        c = w.case(label)
        c.op("take", c.arr(x), c.arr(ind), "none" if axis is None else axis, mode)
        c.expect(ref)

    # Every dtype of the taken array, along each axis and the flattened array, each mode.
    shapes = [((7,), 0), ((3, 5), 0), ((3, 5), 1), ((3, 5), -1), ((2, 3, 4), 1),
              ((2, 3, 4), None), ((), None)]
    for t, name in enumerate(gr.ALL):
        for s, (shape, axis) in enumerate(shapes):
            if (t + s) % 2 and shape not in ((7,), ()):
                continue
            x = gr.rand(name, shape)
            n = x.size if axis is None else x.shape[axis]
            for mode in ("raise", "wrap", "clip"):
                iname = list(INDEX_DTYPES)[(t + s) % 4]  # signed kinds: negatives included
                lo, hi = (-n, n) if mode == "raise" else (-3 * n, 3 * n)
                ind = indices(iname, (4,) if (t + s) % 3 else (2, 3), lo, hi)
                case("take %s%s axis %s %s by %s" % (name, shape, axis, mode, iname), x, ind, axis, mode)
    # Index dtypes: unsigned ones (above 2^63 for u64: out of range, not negative), bool, 0-d,
    # empty and 3-d index arrays.
    x = gr.rand("f64", (4, 6))
    for iname in INDEX_DTYPES:
        lo = 0 if iname.startswith("u") else -6
        case("index dtype %s" % iname, x, indices(iname, (5,), lo, 6), 1, "raise")
    # u64 indices above 2^63 are the int64 values of their bits, as NumPy casts them (np.take
    # itself loops for each multiple of n in wrap mode there: the reference is the modulo).
    big = np.array([2**63 + 5, 7, 2**64 - 1], np.uint64)
    c = w.case("u64 above 2^63 wrap")
    c.op("take", c.arr(x), c.arr(big), 1, "wrap")
    c.expect(np.take(x, big.view(np.int64) % x.shape[1], axis=1))
    case("u64 above 2^63 clip", x, big, 1, "clip")
    case("bool indices", x, np.array([True, False, True]), 0, "raise")
    case("0-d index", x, np.array(-2, np.int32), 1, "raise")
    case("empty indices", x, np.zeros((0,), np.int64), 0, "raise")
    case("3-d indices", x, indices("i16", (2, 2, 3), -4, 4), 0, "raise")
    case("empty array, empty indices", np.zeros((3, 0), np.float32), np.zeros((0,), np.int32), 1, "raise")
    case("zero-size other axis", np.zeros((0, 5), np.float32), np.array([1, -1], np.int8), 1, "raise")
    # Errors: out of bounds (at evaluation), an empty axis, a float index array, a bad axis.
    for bad in ([0, 6], [-7], [2**31]):
        c = w.case("out of bounds %s" % bad)
        c.op("take", c.arr(x), c.arr(np.array(bad, np.int64)), 1, "raise")
        c.error("FC_ERR_VALUE", at_eval=True)
    c = w.case("u64 above 2^63 raise")
    c.op("take", c.arr(x), c.arr(big), 1, "raise")
    c.error("FC_ERR_VALUE", at_eval=True)
    c = w.case("empty axis")
    c.op("take", c.arr(np.zeros((3, 0), np.float32)), c.arr(np.array([0], np.int32)), 1, "wrap")
    c.error("FC_ERR_VALUE")
    c = w.case("float indices")
    c.op("take", c.arr(x), c.arr(np.array([1.0, 2.0])), 0, "raise")
    c.error("FC_ERR_DTYPE")
    c = w.case("axis out of range")
    c.op("take", c.arr(x), c.arr(np.array([1], np.int32)), 2, "raise")
    c.error("FC_ERR_AXIS")
    # A gather of an expression by an expression, and one feeding a reduction.
    c = w.case("take of expressions")
    rx, ri = c.arr(x), c.arr(np.array([3, 0, -1, 1], np.int32))
    c.op("take", c.op("multiply", rx, rx), c.op("negative", ri), 0, "wrap")
    c.expect(np.take(x * x, -np.array([3, 0, -1, 1], np.int32), axis=0, mode="wrap"))
    w.save()


if __name__ == "__main__":
    sys.exit(main())
