#!/usr/bin/env python3
"""Generates tests/data/ops_take.txt: NumPy's values of fusec's take (fc_take, np.take) and
take_along_axis (fc_take_along_axis) and integer-array subscripts (fc_index with
FC_ARRAY_IDX entries) in tests/gen_reference.py's format, replayed by tests/test_ops_ref.c
(`o take %A %I AXIS MODE`, `o take_along_axis %A %I AXIS`, AXIS an integer or `none`, MODE
raise, wrap or clip; `o index %A N ENTRY...`, an entry `ia %I` for an index array). Indices
of any integer dtype are taken as int64 values (a u64 above 2^63 is negative), as NumPy does.

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
    take_along_axis_cases(w, x)
    index_array_cases(w)
    searchsorted_cases(w)
    setitem_cases(w)
    w.save()


def setitem_case(w, label, x, subs, v):
    """One x[subs] = v case (fc_setitem) with NumPy's result."""
    ref = x.copy()
    ref[tuple(subs)] = v
    c = w.case(label)
    rx = c.arr(x)
    rv = c.weak(v) if isinstance(v, (int, float)) else c.arr(v)
    c.op("setitem", rx, rv, len(subs), *entries(c, subs))
    c.expect(ref)


def setitem_cases(w):
    """x[...] = v (fc_setitem): a copy of x with the selection replaced, as NumPy's setitem."""
    def case(label, x, subs, v):
        setitem_case(w, "setitem " + label, x, subs, v)

    x = gr.rand("f32", (5, 6, 4))
    case("slice", x, [slice(1, 3)], gr.rand("f32", (2, 6, 4)))
    case("stepped slices, broadcast value", x, [slice(None, None, 2), slice(1, None, 3)], gr.rand("f32", (4,)))
    case("negative step", x, [slice(None), slice(None, None, -2), 1], gr.rand("f32", (3,)))
    case("integers", x, [-1, 2], np.float32(7.5))
    case("python float into ints", gr.rand("i32", (4, 5)), [slice(1, 3), slice(None)], 2.9)
    case("python int", x, [Ellipsis, 0], 3)
    case("newaxis", x, [None, slice(2, 4), 0], gr.rand("f32", (1, 2, 4)))
    case("f64 value into f16", gr.rand("f16", (6,)), [slice(4, 0, -1)], gr.rand("f64", (4,)))
    case("whole array", x, [Ellipsis], gr.rand("f32", (6, 4)))
    case("empty selection", x, [slice(3, 3)], np.float32(1.0))
    case("one-element slice", x, [slice(2, 3), slice(5, 100)], gr.rand("f32", (1, 1, 4)))
    case("huge step", gr.rand("i64", (9,)), [slice(1, None, 2**62)], np.int64(-4))
    for t, name in enumerate(gr.ALL):
        case("dtype %s" % name, gr.rand(name, (4, 3)), [slice(None, None, -1), 1], gr.rand(name, (4,)))
    m = gr.rand("bool", (5, 6, 4))
    case("mask", x, [m], np.float32(-2.0))
    case("mask, python value", gr.rand("c64", (3, 3)), [gr.rand("bool", (3, 3))], 1.5)
    case("leading mask", x, [gr.rand("bool", (5, 6))], np.float32(1))
    case("index array", x, [np.array([0, 1], np.int32)], np.float32(1))
    for label, xx, subs, v, err in [
            ("value does not broadcast", x, [slice(0, 2)], gr.rand("f32", (3,)), "FC_ERR_SHAPE"),
            ("mask of another shape", x, [gr.rand("bool", (5, 4))], np.float32(1), "FC_ERR_INDEX"),
            ("mask with many values", x, [m], gr.rand("f32", (2,)), "FC_ERR_SHAPE"),
            ("integer out of bounds", x, [5], np.float32(1), "FC_ERR_INDEX"),
            ("too many indices", x, [0, 0, 0, 0], np.float32(1), "FC_ERR_INDEX")]:
        c = w.case("setitem " + label)
        rx = c.arr(xx)
        c.op("setitem", rx, c.arr(v), len(subs), *entries(c, subs))
        c.error(err)


def searchsorted_cases(w):
    """np.searchsorted of sorted arrays (repeats, NaN last) by values of every real dtype."""
    def case(label, a, v, side):
        ref = np.searchsorted(a, v, side=side)
        c = w.case("searchsorted " + label)
        rv = c.weak(v) if isinstance(v, (int, float)) else c.arr(v)
        c.op("searchsorted", c.arr(a), rv, side)
        c.expect(np.asarray(ref, np.int64))

    for t, name in enumerate(gr.ALL):
        if name.startswith("c"):
            continue
        a = np.sort(gr.rand(name, (40,)))
        if name == "bool":
            v = gr.rand(name, (7,))
        else:
            # values from the array itself (ties), between its values and beyond both ends
            v = np.concatenate([a[::7], gr.rand(name, (6,))]).astype(a.dtype)
        for side in ("left", "right"):
            case("%s %s" % (name, side), a, v.reshape(2, -1) if v.size % 2 == 0 else v, side)
    nan = np.array([0.5, 1.0, 1.0, 2.0, np.nan, np.nan], np.float32)
    for side in ("left", "right"):
        case("NaN last %s" % side, nan, np.array([np.nan, 1.0, -np.inf, np.inf, 3.0], np.float32), side)
        case("f64 values into f32 %s" % side, nan, np.array([1.0000001, 0.9999999, 2.0], np.float64), side)
        case("ints into floats %s" % side, nan, np.array([1, 2, 3], np.int16), side)
        case("python float %s" % side, np.arange(10, dtype=np.int32), 4.5, side)
        case("python int %s" % side, np.arange(10, dtype=np.uint8), 4, side)
        case("u64 into i64 %s" % side, np.array([-5, 0, 2**40], np.int64), np.array([2**63, 3], np.uint64), side)
    case("empty array", np.zeros((0,), np.float32), np.array([1.0, -1.0], np.float32), "left")
    case("empty values", np.arange(5.0), np.zeros((0, 3)), "right")
    case("0-d value", np.arange(5.0), np.array(2.0), "left")
    for label, a, v, err in [("2-d array", np.zeros((2, 2)), np.zeros(2), "FC_ERR_SHAPE"),
                             ("complex", np.zeros(3, np.complex64), np.zeros(2, np.complex64), "FC_ERR_UNSUPPORTED")]:
        c = w.case("searchsorted " + label)
        c.op("searchsorted", c.arr(a), c.arr(v), "left")
        c.error(err)


def entries(c, subs):
    """A subscript's entries as test_ops_ref.c's index tokens (an index array as a register)."""
    toks = []
    for e in subs:
        if isinstance(e, np.ndarray):
            toks += ["ia", c.arr(e)]
        elif isinstance(e, slice):
            toks += ["s"] + ["nil" if v is None else v for v in (e.start, e.stop, e.step)]
        elif e is None:
            toks += ["n"]
        elif e is Ellipsis:
            toks += ["e"]
        else:
            toks += ["i", e]
    return toks


def index_array_cases(w):
    """x[...] with integer arrays among the entries: NumPy's advanced indexing."""
    def case(label, x, subs):
        ref = x[tuple(subs)]
        c = w.case("index " + label)
        c.op("index", c.arr(x), len(subs), *entries(c, subs))
        c.expect(ref)

    x = gr.rand("f32", (4, 5, 6))
    i = indices("i32", (3,), -4, 4)
    j = indices("i64", (2, 1), -5, 5)
    k = indices("u8", (3,), 0, 6)
    case("first axis", x, [i])
    case("middle axis", x, [slice(None), i % 5])
    case("two adjacent", x, [slice(None), j, k])
    case("separated: broadcast axes first", x, [j % 4, slice(None), k])
    case("an integer beside an array counts as one", x, [1, slice(None), k])
    case("integer after a slice", x, [slice(None), i % 5, 2])
    case("ellipsis", x, [Ellipsis, -k.astype(np.int16) - 1])
    case("newaxis and slice", x, [i, None, slice(1, 3)])
    case("reversed slice", x, [slice(None, None, -1), j, slice(4, 0, -2)])
    case("0-d index array", x, [np.array(-2, np.int16)])
    case("2-d index array", gr.rand("c64", (7,)), [indices("i8", (3, 4), -7, 7)])
    case("empty index array", x, [np.zeros((0,), np.int64)])
    case("all three", x, [i % 4, j, k])
    for t, name in enumerate(gr.ALL):
        case("dtype %s" % name, gr.rand(name, (3, 4)),
             [slice(None), indices(list(INDEX_DTYPES)[t % 8], (5,), 0, 4)])
    for label, subs, err in [("out of bounds", [np.array([4], np.int32)], "FC_ERR_VALUE"),
                             ("negative out of bounds", [slice(None), np.array([-6], np.int64)], "FC_ERR_VALUE")]:
        c = w.case("index " + label)
        c.op("index", c.arr(x), len(subs), *entries(c, subs))
        c.error(err, at_eval=True)
    case("bool array (a mask: its nonzero coordinates)", x, [np.array([True, False, True, False])])
    for label, subs, err in [("float array", [np.array([1.0])], "FC_ERR_INDEX"),
                             ("no broadcast", [np.zeros(2, np.int32), np.zeros(3, np.int32)], "FC_ERR_SHAPE"),
                             ("integer out of bounds", [np.zeros(2, np.int32), 7], "FC_ERR_INDEX"),
                             ("too many", [0, 0, 0, np.zeros(1, np.int32)], "FC_ERR_INDEX")]:
        c = w.case("index " + label)
        c.op("index", c.arr(x), len(subs), *entries(c, subs))
        c.error(err)


def take_along_axis_cases(w, x):
    def case(label, a, ind, axis):
        ref = np.take_along_axis(a, ind, axis=axis)
        c = w.case(label)
        c.op("take_along_axis", c.arr(a), c.arr(ind), "none" if axis is None else axis)
        c.expect(ref)

    # Every dtype; index arrays that broadcast on the other axes, or match them.
    for t, name in enumerate(gr.ALL):
        a = gr.rand(name, (3, 5))
        iname = list(INDEX_DTYPES)[t % 4]
        case("take_along_axis %s axis 1 by %s" % (name, iname), a,
             indices(iname, (3, 4) if t % 2 else (1, 7), -5, 5), 1)
        case("take_along_axis %s axis 0 by %s" % (name, iname), a,
             indices(iname, (2, 5) if t % 3 else (4, 1), -3, 3), 0)
    a = gr.rand("f64", (2, 3, 4))
    for axis in (0, 1, 2, -1, -3):
        shape = [1, 3, 1]
        shape[axis] = 5
        case("take_along_axis 3-d axis %d" % axis, a, indices("i64", tuple(shape), -a.shape[axis], a.shape[axis]), axis)
    case("take_along_axis flattened", a, indices("i32", (9,), -24, 24), None)
    case("take_along_axis broadcast array", gr.rand("f32", (1, 6)), indices("i8", (4, 2), -6, 6), 1)
    case("take_along_axis unsigned", a, np.array([[[3]], [[0]]], np.uint64), 2)
    case("take_along_axis argsort pairing", x, np.argsort(x, axis=1), 1)
    case("take_along_axis argmax", x, np.expand_dims(np.argmax(x, axis=0), 0), 0)
    case("take_along_axis empty indices", x, np.zeros((4, 0), np.int64), 1)
    case("take_along_axis empty array", np.zeros((0, 3), np.float32), np.zeros((0, 2), np.int32), 1)
    case("take_along_axis 1-d", gr.rand("c64", (6,)), indices("i16", (10,), -6, 6), 0)
    for bad in ([[6]], [[-7]]):
        c = w.case("take_along_axis out of bounds %s" % bad)
        c.op("take_along_axis", c.arr(x), c.arr(np.array(bad, np.int64)), 1)
        c.error("FC_ERR_VALUE", at_eval=True)
    errors = [("bool indices", x, np.array([[True]]), 1, "FC_ERR_DTYPE"),
              ("float indices", x, np.array([[1.0]]), 1, "FC_ERR_DTYPE"),
              ("axis count", x, np.array([1, 2], np.int32), 1, "FC_ERR_SHAPE"),
              ("no broadcast", x, np.zeros((3, 2), np.int32), 1, "FC_ERR_SHAPE"),
              ("none needs 1-d", x, np.zeros((2, 2), np.int32), None, "FC_ERR_SHAPE"),
              ("axis out of range", x, np.zeros((1, 1), np.int32), 2, "FC_ERR_AXIS"),
              ("empty axis", np.zeros((3, 0), np.float32), np.zeros((3, 1), np.int32), 1, "FC_ERR_VALUE")]
    for label, a, ind, axis, err in errors:
        c = w.case("take_along_axis " + label)
        c.op("take_along_axis", c.arr(a), c.arr(ind), "none" if axis is None else axis)
        c.error(err)


if __name__ == "__main__":
    sys.exit(main())
