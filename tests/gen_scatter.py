#!/usr/bin/env python3
"""Generates tests/data/ops_scatter.txt: NumPy's values of fusec's scatters (fc_scatter_add /
max / min as np.add.at / maximum.at / minimum.at along an axis), put (np.put), bincount,
histogram and the masks built on them (flatnonzero, nonzero, argwhere, x[mask], x[mask] = v), in tests/gen_reference.py's format, replayed by tests/test_ops_ref.c:

    o scatter_add %A %I %V AXIS MODE      (scatter_max, scatter_min too; AXIS or none; MODE
                                           raise, wrap, clip or drop)
    o put %A %I %V MODE
    o bincount %X %W MINLENGTH            (%W or none)
    o histogram %X BINS LO HI %W          (LO, HI hex doubles or none; %W or none)
    o histogram_bin_edges %X BINS LO HI
    o flatnonzero %X ; o argwhere %X ; o nonzero %X AXIS (the coordinates along AXIS)
    o index %X N ENTRY.. ; o setitem %X %V N ENTRY..  (test_ops_ref.c's entries; `ia %B` a mask)

The host backend runs the updates in NumPy's order, so every value is exact.

Run with NumPy 2.x and ml_dtypes (CI has neither, so the output is checked in):

    python3 tests/gen_scatter.py
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_reference as gr  # noqa: E402  (the value encoding and random inputs)
from gen_take import entries, setitem_case  # noqa: E402  (subscripts as tokens)

gr.rng = np.random.default_rng(20261130)
rng = np.random.default_rng(20261131)

INDEX_DTYPES = {"i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
                "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64}
UFUNC = {"scatter_add": np.add, "scatter_max": np.maximum, "scatter_min": np.minimum}


def indices(name, shape, lo, hi):
    v = rng.integers(lo, hi, size=shape if shape else None, endpoint=False)
    return np.asarray(v).astype(INDEX_DTYPES[name])


def adjusted(ind, n, mode):
    """The positions np.take's modes give (drop: out of range marked -1)."""
    j = np.asarray(ind).astype(np.int64) if np.asarray(ind).dtype != np.uint64 else \
        np.asarray(ind).view(np.int64)
    if mode == "wrap":
        return j % n
    if mode == "clip":
        return np.clip(j, 0, n - 1)
    if mode == "drop":
        return np.where((j >= 0) & (j < n), j, -1)
    return np.where(j < 0, j + n, j)


def scatter_ref(op, x, ind, vals, axis, mode):
    """np.<ufunc>.at on a copy, along `axis` (None: the flattened array), with the mode
    applied to the indices first (ufunc.at itself only raises)."""
    ref = x.copy()
    flat = axis is None
    if flat:
        ref = ref.reshape(-1)
        axis = 0
    axis %= ref.ndim
    n = ref.shape[axis]
    j = adjusted(ind, n, mode)
    upd_shape = ref.shape[:axis] + np.shape(ind) + ref.shape[axis + 1:]
    v = np.broadcast_to(np.asarray(vals).astype(x.dtype, casting="unsafe") if not
                        isinstance(vals, (int, float)) else np.asarray(vals, x.dtype), upd_shape)
    if mode == "drop":  # out-of-range updates go to one extra slot along the axis, cut off
        pad = [(0, 0)] * ref.ndim
        pad[axis] = (0, 1)
        big = np.pad(ref, pad)
        UFUNC[op].at(big, (slice(None),) * axis + (np.where(j < 0, n, j),), v)
        ref = big[(slice(None),) * axis + (slice(0, n),)]
        return ref.reshape(x.shape) if flat else ref
    UFUNC[op].at(ref, (slice(None),) * axis + (j,), v)
    return ref.reshape(x.shape) if flat else ref


def main():
    assert np.__version__.startswith("2."), "NumPy 2.x is the reference"
    w = gr.Writer("ops_scatter.txt")
    w.GENERATOR = "tests/gen_scatter.py"

    def case(label, op, x, ind, vals, axis, mode):
        ref = scatter_ref(op, x, ind, vals, axis, mode)
        c = w.case(label)
        rv = c.weak(vals) if isinstance(vals, (int, float)) else c.arr(vals)
        rx, ri = c.arr(x), c.arr(ind)
        c.op(op, rx, ri, rv, "none" if axis is None else axis, mode)
        c.expect(ref)

    # Every dtype, each combine, along each axis and the flattened array, repeated indices.
    shapes = [((7,), 0), ((3, 5), 0), ((3, 5), 1), ((3, 5), -1), ((2, 3, 4), 1),
              ((2, 3, 4), None)]
    for t, name in enumerate(gr.ALL):
        for s, (shape, axis) in enumerate(shapes):
            for o, op in enumerate(UFUNC):
                if (t + s + o) % 2 and shape != (7,):
                    continue
                if op != "scatter_add" and name in gr.COMPLEX:
                    continue
                x = gr.rand(name, shape)
                n = x.size if axis is None else x.shape[axis]
                mode = ("raise", "wrap", "clip", "drop")[(t + s + o) % 4]
                iname = list(INDEX_DTYPES)[(t + s) % 4]
                lo, hi = (-n, n) if mode == "raise" else (-2 * n, 2 * n)
                ind = indices(iname, (6,) if (t + s) % 3 else (2, 3), lo, hi)
                ushape = (x.reshape(-1) if axis is None else x).shape
                ax = 0 if axis is None else axis % x.ndim
                ushape = ushape[:ax] + ind.shape + ushape[ax + 1:]
                vals = gr.rand(name, ushape[1:] if (t + o) % 3 == 0 and len(ushape) > 1 else ushape)
                case("%s %s%s axis %s %s by %s" % (op, name, shape, axis, mode, iname), op, x, ind,
                     vals, axis, mode)
    # Values of another dtype (same_kind), weak scalars, NaN meeting max, 0-d and empty indices.
    x = gr.rand("f32", (4, 5))
    case("f64 values into f32", "scatter_add", x, np.array([0, 3, 3, 1], np.int32),
         gr.rand("f64", (4, 4)), 1, "raise")
    case("i8 values into i64", "scatter_add", gr.rand("i64", (6,)), np.array([1, 1, 5], np.int64),
         gr.rand("i8", (3,)), 0, "raise")
    case("python int into u8", "scatter_add", gr.rand("u8", (5,)), np.array([0, 4, 0], np.int16), 200,
         0, "raise")
    case("python float into f16", "scatter_max", gr.rand("f16", (5,)), np.array([2, 2], np.int8),
         0.25, 0, "raise")
    xn = gr.rand("f64", (6,))
    case("NaN meets max", "scatter_max", xn, np.array([1, 1, 4], np.int32),
         np.array([np.nan, 2.0, -np.inf]), 0, "raise")
    case("NaN meets min", "scatter_min", xn, np.array([3, 3], np.int32), np.array([1.0, np.nan]), 0,
         "raise")
    case("bool add is or", "scatter_add", np.zeros(5, bool), np.array([1, 3, 1], np.int32),
         np.array([True, False, True]), 0, "raise")
    case("0-d index", "scatter_add", x, np.array(-2, np.int32), gr.rand("f32", (4,)), 1, "raise")
    case("empty indices", "scatter_add", x, np.zeros((0,), np.int64), np.float32(1), 0, "raise")
    case("u64 indices", "scatter_add", x, np.array([2**63 + 2, 1], np.uint64), np.float32(1), 1,
         "wrap")
    case("3-d indices", "scatter_min", x, indices("i16", (2, 2, 3), -4, 4), gr.rand("f32", (5,)), 0,
         "raise")
    case("empty axis, drop", "scatter_add", np.zeros((3, 0), np.float32), np.array([0, 2], np.int32),
         np.float32(1), 1, "drop")
    # Errors.
    for bad in ([0, 5], [-6]):
        c = w.case("out of bounds %s" % bad)
        c.op("scatter_add", c.arr(x), c.arr(np.array(bad, np.int64)), c.weak(1.0), 1, "raise")
        c.error("FC_ERR_VALUE", at_eval=True)
    c = w.case("f64 into i32 is not same_kind")
    c.op("scatter_add", c.arr(gr.rand("i32", (4,))), c.arr(np.array([1], np.int32)),
         c.arr(np.array([1.5])), 0, "raise")
    c.error("FC_ERR_DTYPE")
    c = w.case("python float into ints")
    c.op("scatter_add", c.arr(gr.rand("i32", (4,))), c.arr(np.array([1], np.int32)), c.weak(1.5), 0,
         "raise")
    c.error("FC_ERR_DTYPE")
    c = w.case("i64 into u32 is not same_kind")
    c.op("scatter_add", c.arr(gr.rand("u32", (4,))), c.arr(np.array([1], np.int32)),
         c.arr(np.array([1], np.int64)), 0, "raise")
    c.error("FC_ERR_DTYPE")
    c = w.case("python int out of range")
    c.op("scatter_add", c.arr(gr.rand("u8", (4,))), c.arr(np.array([1], np.int32)), c.weak(-1), 0,
         "raise")
    c.error("FC_ERR_VALUE")
    c = w.case("float indices")
    c.op("scatter_add", c.arr(x), c.arr(np.array([1.0])), c.weak(1.0), 0, "raise")
    c.error("FC_ERR_DTYPE")
    c = w.case("values do not broadcast")
    c.op("scatter_add", c.arr(x), c.arr(np.array([1, 2], np.int32)), c.arr(gr.rand("f32", (3,))), 0,
         "raise")
    c.error("FC_ERR_SHAPE")
    c = w.case("complex max")
    c.op("scatter_max", c.arr(gr.rand("c64", (4,))), c.arr(np.array([1], np.int32)),
         c.arr(gr.rand("c64", (1,))), 0, "raise")
    c.error("FC_ERR_UNSUPPORTED")
    c = w.case("empty axis, raise")
    c.op("scatter_add", c.arr(np.zeros((3, 0), np.float32)), c.arr(np.array([0], np.int32)),
         c.weak(1.0), 1, "wrap")
    c.error("FC_ERR_VALUE")
    put_cases(w)
    bincount_cases(w)
    histogram_cases(w)
    mask_cases(w)
    put_along_axis_cases(w)
    w.save()


def put_along_axis_cases(w):
    def case(label, x, ind, v, axis):
        ref = x.copy()
        np.put_along_axis(ref, ind, v, axis)
        c = w.case("put_along_axis " + label)
        rx, ri = c.arr(x), c.arr(ind)
        rv = c.weak(v) if isinstance(v, (int, float)) else c.arr(v)
        c.op("put_along_axis", rx, ri, rv, "none" if axis is None else axis)
        c.expect(ref)

    x = gr.rand("f32", (4, 6))
    case("rows", x, indices("i32", (4, 2), -6, 6), gr.rand("f32", (4, 2)), 1)
    case("columns, broadcast values", x, indices("i64", (3, 6), 0, 4), gr.rand("f32", (1, 6)), 0)
    case("argmax's place", x, np.argmax(x, axis=1)[:, None], 0.0, 1)
    case("repeats: the last write wins", x, np.array([[1, 1, 1]] * 4, np.int16),
         gr.rand("f32", (4, 3)), 1)
    case("broadcast indices", gr.rand("i16", (3, 5)), np.array([[0, 4]], np.int8),
         gr.rand("i16", (3, 2)), 1)
    case("flattened", x, np.array([23, 0, -1], np.int32), gr.rand("f32", (3,)), None)
    c = w.case("put_along_axis out of bounds")
    c.op("put_along_axis", c.arr(x), c.arr(np.array([[6]] * 4, np.int32)), c.weak(1.0), 1)
    c.error("FC_ERR_VALUE", at_eval=True)
    c = w.case("put_along_axis ranks differ")
    c.op("put_along_axis", c.arr(x), c.arr(np.array([1], np.int32)), c.weak(1.0), 1)
    c.error("FC_ERR_SHAPE")


def mask_cases(w):
    """flatnonzero, nonzero, argwhere, x[mask] (fc_index with a boolean array) and
    x[mask] = values (fc_setitem)."""
    for t, name in enumerate(gr.ALL):
        x = gr.rand(name, (3, 4), zeros=True)
        if name not in ("bool",):
            x.reshape(-1)[::3] = 0
        c = w.case("flatnonzero %s" % name)
        c.op("flatnonzero", c.arr(x))
        c.expect(np.flatnonzero(x))
        c = w.case("argwhere %s" % name)
        c.op("argwhere", c.arr(x))
        c.expect(np.argwhere(x))
        for d in range(2):
            c = w.case("nonzero %s axis %d" % (name, d))
            c.op("nonzero", c.arr(x), d)
            c.expect(np.nonzero(x)[d])
    z = np.array([0.0, np.nan, -0.0, 1e-300, np.inf])
    c = w.case("flatnonzero NaN and signed zeros")
    c.op("flatnonzero", c.arr(z))
    c.expect(np.flatnonzero(z))
    for label, x in [("all zero", np.zeros((2, 3), np.int32)), ("empty", np.zeros((0, 3), np.float32)),
                     ("3-d", gr.rand("bool", (2, 3, 4)))]:
        c = w.case("argwhere " + label)
        c.op("argwhere", c.arr(x))
        c.expect(np.argwhere(x))
    c = w.case("argwhere 0-d")
    c.op("argwhere", c.arr(np.array(2.5)))
    c.expect(np.argwhere(np.array(2.5)))

    def index(label, x, subs):
        c = w.case("mask index " + label)
        rx = c.arr(x)
        c.op("index", rx, len(subs), *entries(c, subs))
        c.expect(x[tuple(subs)])

    x = gr.rand("f32", (4, 5, 3))
    m3 = gr.rand("f32", (4, 5, 3)) > 0
    m2 = gr.rand("f32", (4, 5)) > 0
    m1 = np.array([True, False, True, True, False])
    index("full mask", x, [m3])
    index("leading mask", x, [m2])
    index("mask after a slice", x, [slice(1, 3), m1])
    index("mask after an ellipsis", x, [Ellipsis, np.array([False, True, True])])
    index("mask and an integer", x, [2, m1])
    index("mask and an index array", x, [np.array([0, 3, 1], np.int32), m1])
    index("empty selection", x, [np.zeros((4, 5), bool)])
    index("i64 by mask", gr.rand("i64", (6,)), [np.array([1, 0, 0, 1, 1, 0], bool)])
    for label, subs, err in [("mask too long", [np.ones(6, bool)], "FC_ERR_INDEX"),
                             ("mask too short", [slice(None), np.ones(4, bool)], "FC_ERR_INDEX")]:
        c = w.case("mask index " + label)
        rx = c.arr(x)
        c.op("index", rx, len(subs), *entries(c, subs))
        c.error(err)

    def setitem(label, x, m, v):
        ref = x.copy()
        ref[m] = v
        c = w.case("mask setitem " + label)
        rx = c.arr(x)
        rv = c.weak(v) if isinstance(v, (int, float)) else c.arr(v)
        c.op("setitem", rx, rv, 1, "ia", c.arr(m))
        c.expect(ref)

    y = gr.rand("f64", (5, 6))
    my = gr.rand("f64", (5, 6)) > 0
    setitem("values per element", y, my, gr.rand("f64", (int(my.sum()),)))
    setitem("f32 values into i16", gr.rand("i16", (7,)), np.array([1, 0, 1, 1, 0, 0, 1], bool),
            gr.rand("f32", (4,)))
    setitem("one value", y, my, 2.5)
    setitem("nothing selected", y, np.zeros((5, 6), bool), gr.rand("f64", (0,)))
    def setitem_arrays(label, x, subs, v):
        setitem_case(w, "array setitem " + label, x, subs, v)

    z = gr.rand("f32", (5, 6, 4))
    setitem_arrays("one array", z, [np.array([4, 0, -1], np.int32)], gr.rand("f32", (3, 6, 4)))
    setitem_arrays("repeats: the last write wins", z, [np.array([1, 3, 1, 1], np.int64)],
                   gr.rand("f32", (4, 1, 4)))
    setitem_arrays("array and slice", z, [slice(1, None, 2), np.array([5, 0], np.int16)], 9.5)
    setitem_arrays("two arrays", z, [np.array([[0], [2]], np.int8), slice(None), np.array([3, 1, 3])],
                   gr.rand("f32", (2, 3, 6)))
    setitem_arrays("leading mask, rows of values", z, [gr.rand("f32", (5, 6)) > 0],
                   gr.rand("f32", (4,)))
    setitem_arrays("u8 array into ints", gr.rand("i64", (9,)), [np.array([8, 2, 8], np.uint8)],
                   np.array([1, 2, 3], np.int64))
    setitem_arrays("empty array index", z, [np.zeros((0,), np.int32)], 1.0)
    c = w.case("array setitem value does not broadcast")
    c.op("setitem", c.arr(z), c.arr(gr.rand("f32", (5,))), 1, "ia", c.arr(np.array([1, 2], np.int32)))
    c.error("FC_ERR_SHAPE")
    c = w.case("array setitem out of bounds")
    c.op("setitem", c.arr(z), c.weak(1.0), 1, "ia", c.arr(np.array([1, 5], np.int32)))
    c.error("FC_ERR_VALUE", at_eval=True)
    c = w.case("mask setitem wrong count")
    c.op("setitem", c.arr(y), c.arr(gr.rand("f64", (3,))), 1, "ia", c.arr(my))
    c.error("FC_ERR_SHAPE")


def put_cases(w):
    def case(label, x, ind, v, mode):
        ref = x.copy()
        np.put(ref, ind, v, mode=mode)
        c = w.case("put " + label)
        rx, ri = c.arr(x), c.arr(ind)
        rv = c.weak(v) if isinstance(v, (int, float)) else c.arr(v)
        c.op("put", rx, ri, rv, mode)
        c.expect(ref)

    for t, name in enumerate(gr.ALL):
        x = gr.rand(name, (3, 4))
        mode = ("raise", "wrap", "clip")[t % 3]
        lo, hi = (-12, 12) if mode == "raise" else (-30, 30)
        ind = indices(list(INDEX_DTYPES)[t % 4], (7,), lo, hi)
        case("%s %s" % (name, mode), x, ind, gr.rand(name, (7,)), mode)
    x = gr.rand("f32", (10,))
    case("repeated indices: the last write wins", x, np.array([3, 1, 3, 3, 1, 7], np.int32),
         gr.rand("f32", (6,)), "raise")
    case("fewer values repeat", x, np.array([0, 2, 4, 6, 8], np.int64), gr.rand("f32", (2,)), "raise")
    case("more values than indices", x, np.array([9, 0], np.int64), gr.rand("f32", (5,)), "raise")
    case("2-d indices and values", gr.rand("i16", (2, 5)), indices("i8", (2, 3), -10, 10),
         gr.rand("i16", (3, 2)), "raise")
    case("f64 values into i32 (unsafe, as NumPy)", gr.rand("i32", (6,)), np.array([1, 4], np.int32),
         np.array([2.75, -3.5]), "raise")
    case("python int", x, np.array([5], np.int32), 3, "wrap")
    case("empty indices", x, np.zeros((0,), np.int32), gr.rand("f32", (0,)), "raise")
    c = w.case("put out of bounds")
    c.op("put", c.arr(x), c.arr(np.array([10], np.int32)), c.weak(1.0), "raise")
    c.error("FC_ERR_VALUE", at_eval=True)
    c = w.case("put from no values")
    c.op("put", c.arr(x), c.arr(np.array([1], np.int32)), c.arr(np.zeros((0,), np.float32)), "raise")
    c.error("FC_ERR_VALUE")


def bincount_cases(w):
    def case(label, x, weights, minlength):
        ref = np.bincount(x, weights=weights, minlength=minlength)
        c = w.case("bincount " + label)
        rx = c.arr(x)
        rw = c.arr(weights) if weights is not None else "none"
        c.op("bincount", rx, rw, minlength)
        c.expect(ref)

    for t, name in enumerate(["bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32"]):
        x = rng.integers(0, 9, size=40).astype(gr.DT[name]) if name != "bool" else \
            rng.random(40) < 0.3
        case("%s" % name, x, None, 0)
        case("%s minlength 12" % name, x, None, 12)
        wname = ("f64", "f32", "i32", "f16", "u8", "bf16", "i64", "bool")[t]
        case("%s weights %s" % (name, wname), x, gr.rand(wname, (40,)), 3)
    case("empty", np.zeros((0,), np.int32), None, 0)
    case("empty, minlength", np.zeros((0,), np.int64), None, 4)
    case("empty with weights", np.zeros((0,), np.int64), np.zeros((0,), np.float32), 2)
    case("one value", np.array([1000], np.int32), None, 0)
    for label, x, err in [("negative", np.array([1, -1, 2], np.int32), "FC_ERR_VALUE"),
                          ("2-d", np.zeros((2, 2), np.int32), "FC_ERR_SHAPE"),
                          ("floats", np.array([1.0]), "FC_ERR_DTYPE"),
                          ("u64", np.array([1], np.uint64), "FC_ERR_DTYPE")]:
        c = w.case("bincount " + label)
        c.op("bincount", c.arr(x), "none", 0)
        c.error(err)
    c = w.case("bincount weights of another length")
    c.op("bincount", c.arr(np.array([1, 2], np.int32)), c.arr(np.ones(3)), 0)
    c.error("FC_ERR_SHAPE")
    c = w.case("bincount negative minlength")
    c.op("bincount", c.arr(np.array([1, 2], np.int32)), "none", -1)
    c.error("FC_ERR_VALUE")


def hexd(v):
    return "none" if v is None else gr.f64hex(float(v))


def histogram_cases(w):
    def case(label, x, bins, rng_, weights=None):
        ref, edges = np.histogram(x, bins=bins, range=rng_, weights=weights)
        lo, hi = rng_ if rng_ is not None else (None, None)
        c = w.case("histogram " + label)
        rx = c.arr(x)
        rw = c.arr(weights) if weights is not None else "none"
        c.op("histogram", rx, bins, hexd(lo), hexd(hi), rw)
        c.expect(ref)
        c = w.case("histogram_bin_edges " + label)
        c.op("histogram_bin_edges", c.arr(x), bins, hexd(lo), hexd(hi))
        c.expect(edges)

    for t, name in enumerate(["f16", "bf16", "f32", "f64", "i8", "i32", "u16", "i64"]):
        x = gr.rand(name, (50,), "wide")
        case("%s range" % name, x, 7, (-6.5, 8.25))
        case("%s 1 bin" % name, x, 1, (-3.0, 3.0))
        if name not in ("f16", "bf16", "f32"):  # autodetected ranges: edges as NumPy's in f64
            case("%s autodetected range" % name, x, 5, None)
        wname = ("f64", "f32", "i32", "f16", "i64", "f64", "u8", "f32")[t]
        case("%s weights %s" % (name, wname), x, 4, (-5.0, 5.0), gr.rand(wname, (50,), "wide"))
    # values on the edges: NumPy's corrections; NaN and infinities are left out
    x = np.array([0.0, 0.1, 0.2, 0.3, 0.7, 1.0, 1.0 + 1e-16, np.nan, np.inf, -np.inf, 0.30000000000000004])
    case("edges", x, 10, (0.0, 1.0))
    case("edges f32", x.astype(np.float32), 10, (0.0, 1.0))
    x3 = np.arange(0, 1, 0.1, dtype=np.float32).reshape(2, 5)
    case("2-d input", x3, 3, (0.05, 0.95))
    case("equal range widens", np.array([2.0, 2.0, 1.5]), 4, (2.0, 2.0))
    case("empty input", np.zeros((0,), np.float32), 3, None)
    for label, args, err in [("0 bins", (0, 0.0, 1.0), "FC_ERR_VALUE"),
                             ("lo above hi", (3, 1.0, 0.0), "FC_ERR_VALUE"),
                             ("infinite range", (3, 0.0, float("inf")), "FC_ERR_VALUE")]:
        c = w.case("histogram " + label)
        c.op("histogram", c.arr(np.ones(3)), args[0], hexd(args[1]), hexd(args[2]), "none")
        c.error(err)
    c = w.case("histogram of complex")
    c.op("histogram", c.arr(np.ones(3, np.complex64)), 3, hexd(0), hexd(1), "none")
    c.error("FC_ERR_DTYPE")


if __name__ == "__main__":
    main()
