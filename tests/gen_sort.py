#!/usr/bin/env python3
"""Generates the NumPy reference tables of fusec's sorting (graph/sort.c, graph/sort_ops.c):

  tests/data/sort_numpy.txt  replayed by tests/test_sort.c (the host reference vs NumPy)
  tests/data/ops_sort.txt    a few cases in tests/gen_reference.py's format, replayed by
                             tests/test_ops_ref.c (so its coverage test sees both ops)

Run with NumPy 2.x and ml_dtypes (CI has neither, so the output is checked in):

    python3 tests/gen_sort.py

The output is deterministic (fixed seed).

sort_numpy.txt is a stream of whitespace-separated tokens (line breaks carry no meaning; `#`
starts a comment line). An ARRAY is `DTYPE NDIM D.. V..`, values each element's bits in hex as
in gen_reference.py (bool 0/1, integers as their unsigned bits, floats as their IEEE bits,
complex as two such words). Records:

  sort AXIS ARRAY SORTED ARGSORT
      np.sort(x, axis, kind="stable") and np.argsort(x, axis, kind="stable") (int64) of the
      input x; AXIS an integer (maybe negative) or `none` (the flattened array). Compared bit
      for bit: the bits of equal elements (-0.0 and 0.0, NaNs of either sign and any payload)
      show that the order is stable and the bits kept.
  part KTH AXIS ARRAY SORTED ARGSORT PARTITION ARGPARTITION
      np.partition / np.argpartition(x, KTH, axis) and the stable sort of x: fusec's
      partition is the stable sort, so it must equal SORTED (ARGSORT); NumPy's own results
      are there to check the partition property against (the same kth element).
  unique ARRAY VALUES INDEX INVERSE COUNTS
      np.unique(x, return_index=True, return_inverse=True, return_counts=True) (equal_nan:
      NaNs collapse to one); INVERSE has x's shape, as NumPy 2 gives it for axis=None.
  perm SEED STREAM N ARRAY
      fc_rng_permutation of a generator at (SEED, STREAM), n = N: the stable argsort of the
      int64 draw integers(-2**63, 2**63 - 1) of that stream (include/fusec.h's fc_rng layout,
      gen_reference.py's integer_at). Not NumPy's values: fusec's own, computed here from
      the documented layout.
  shuffle SEED STREAM AXIS ARRAY RESULT
      fc_rng_shuffle: x taken along AXIS by the permutation of that stream.
  choice SEED STREAM N REPLACE NDIM D.. ARRAY
      fc_rng_choice(n, size, replace): without replacement the first prod(size) positions of
      the stream's permutation of n, reshaped; with it integers(0, n, size) (int64).
  err CALL DTYPE NDIM D.. STATUS
      the .fc program `x = input DTYPE [D..]; y = CALL` fails to build with STATUS.

bf16 has no sort of its own in NumPy: it is sorted as its f32 values (exact), which is the
order ml_dtypes' compare gives (NaN last).
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_reference as gr  # noqa: E402  (the value encoding and fusec's random layout)

OUT_DIR = gr.OUT_DIR
rng = np.random.default_rng(20261128)

I64 = np.dtype(np.int64)
UNS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}

# NaNs of both signs, quiet and signalling, with payloads
NAN_BITS = {
    "f16": [0x7E00, 0xFE00, 0x7C01, 0x7E5A, 0xFD00],
    "bf16": [0x7FC0, 0xFFC0, 0x7F81, 0x7FC5, 0xFF81],
    "f32": [0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FC0ABCD, 0xFF800123],
    "f64": [0x7FF8000000000000, 0xFFF8000000000000, 0x7FF0000000000001,
            0x7FF8DEAD0000BEEF, 0xFFF0000000000042],
}
REAL_OF = {"c64": "f32", "c128": "f64"}


def float_pool(name, specials=True):
    """A small set of values of a real float dtype (ties), as its bits: numbers around zero
    (-0.0 and 0.0 both), the smallest subnormals, and with specials +-inf and NaNs."""
    dt = gr.DT[name]
    nums = [-2.5, -1.0, -0.0, 0.0, 0.5, 1.0, 3.0]
    v = np.array(nums, np.float64).astype(dt)
    bits = list(v.view(UNS[dt.itemsize]).astype(np.uint64))
    sub = 1  # the smallest subnormal, both signs
    bits += [sub, sub | (1 << (8 * dt.itemsize - 1))]
    if specials:
        inf = np.array([np.inf, -np.inf], np.float64).astype(dt)
        bits += list(inf.view(UNS[dt.itemsize]).astype(np.uint64))
        bits += NAN_BITS[name]
    return [int(b) for b in bits]


def from_bits(name, bits, shape):
    dt = gr.DT[name]
    u = np.array(bits, np.uint64).astype(UNS[dt.itemsize])
    return u.view(dt).reshape(shape)


def tie_data(name, shape, specials=True):
    """Random values of dtype `name` with many ties: small integer ranges with the dtype's
    extremes now and then; floats drawn from float_pool; complex parts from the same pool,
    so NaN may sit in either part."""
    n = int(np.prod(shape)) if len(shape) else 1
    dt = gr.DT[name]
    if name == "bool":
        return (rng.random(n) < 0.5).reshape(shape)
    if name in gr.INTS:
        info = np.iinfo(dt)
        lo, hi = (-3, 3) if info.min < 0 else (0, 5)
        v = rng.integers(lo, hi, size=n, endpoint=True).astype(object)
        ext = rng.random(n) < 0.08
        picks = rng.integers(0, 2, size=n)
        for i in np.nonzero(ext)[0]:
            v[i] = int(info.min) if picks[i] == 0 else int(info.max)
        return np.array([int(e) for e in v], dtype=object).astype(dt).reshape(shape)
    if name in REAL_OF:
        real = REAL_OF[name]
        pool = float_pool(real, specials)
        # mostly finite parts so that real-part ties are decided by the imaginary part
        re = [pool[k] for k in rng.integers(0, len(pool), size=n)]
        im = [pool[k] for k in rng.integers(0, len(pool), size=n)]
        out = np.empty(n, dt)
        pair = out.view(gr.DT[real]).reshape(n, 2)
        pair[:, 0] = from_bits(real, re, (n,))
        pair[:, 1] = from_bits(real, im, (n,))
        return out.reshape(shape)
    pool = float_pool(name, specials)
    return from_bits(name, [pool[k] for k in rng.integers(0, len(pool), size=n)], shape)


def np_argsort(x, axis):
    if x.dtype == gr.BF16:
        x = x.astype(np.float32)  # exact: the same order
    return np.argsort(x, axis=axis, kind="stable")


def np_sort(x, axis):
    """The stable sort, as the elements of x taken in argsort's order (the bits kept)."""
    idx = np_argsort(x, axis)
    if axis is None:
        s = x.reshape(-1)[idx]
    else:
        s = np.take_along_axis(x, idx, axis=axis)
    if x.dtype != gr.BF16:  # NumPy's own sort agrees bit for bit
        ref = np.sort(x, axis=axis, kind="stable")
        assert np.array_equal(np.ascontiguousarray(ref).view(np.uint8),
                              np.ascontiguousarray(s).view(np.uint8)), (x.dtype, x.shape, axis)
    return s, idx


def arr_tokens(a):
    a = np.asarray(a)
    return [gr.NAME[a.dtype]] + gr.shape_tokens(a.shape) + gr.hexbits(a)


def axis_token(axis):
    return "none" if axis is None else str(axis)


lines = []


def sort_case(x, axis):
    s, idx = np_sort(x, axis)
    lines.append(" ".join(["sort", axis_token(axis)] + arr_tokens(x) + arr_tokens(s) +
                          arr_tokens(idx.astype(I64))))


def part_case(x, kth, axis):
    s, idx = np_sort(x, axis)
    xp = x.astype(np.float32) if x.dtype == gr.BF16 else x
    p = np.partition(xp, kth, axis=axis)
    ap = np.argpartition(xp, kth, axis=axis)
    if x.dtype == gr.BF16:
        p = p.astype(gr.BF16)
    lines.append(" ".join(["part", str(kth), axis_token(axis)] + arr_tokens(x) + arr_tokens(s) +
                          arr_tokens(idx.astype(I64)) + arr_tokens(p) +
                          arr_tokens(ap.astype(I64))))


def unique_case(x):
    xu = x.astype(np.float32) if x.dtype == gr.BF16 else x
    v, i, inv, c = np.unique(xu, return_index=True, return_inverse=True, return_counts=True)
    if x.dtype == gr.BF16:
        v = x.reshape(-1)[i]  # the bits of each value's first occurrence, as NumPy keeps
    assert inv.shape == x.shape, (inv.shape, x.shape)
    lines.append(" ".join(["unique"] + arr_tokens(x) + arr_tokens(v) + arr_tokens(i.astype(I64)) +
                          arr_tokens(inv.astype(I64)) + arr_tokens(c.astype(I64))))


def err_case(call, name, shape, status):
    lines.append(" ".join(["err", call, name] + gr.shape_tokens(shape) + [status]))


# ---- fusec's random permutations (include/fusec.h, fc_rng_permutation) ---------------------

INT64_MIN = -(1 << 63)
KEY_RANGE = (1 << 64) - 1  # integers(-2**63, 2**63 - 1): every int64 but the largest


def perm_ref(seed, stream, n):
    keys = np.array([gr.integer_at(True, INT64_MIN, KEY_RANGE, seed, stream, i) for i in range(n)],
                    I64)
    return np.argsort(keys, kind="stable").astype(I64)


def perm_case(seed, stream, n):
    lines.append(" ".join(["perm", str(seed), str(stream), str(n)] +
                          arr_tokens(perm_ref(seed, stream, n))))


def shuffle_case(seed, stream, x, axis):
    p = perm_ref(seed, stream, x.shape[axis])
    lines.append(" ".join(["shuffle", str(seed), str(stream), str(axis)] + arr_tokens(x) +
                          arr_tokens(np.take(x, p, axis=axis))))


def choice_case(seed, stream, n, size, replace):
    k = int(np.prod(size)) if len(size) else 1
    if replace:
        r = np.array([gr.integer_at(True, 0, n, seed, stream, i) for i in range(k)], I64)
    else:
        r = perm_ref(seed, stream, n)[:k]
    lines.append(" ".join(["choice", str(seed), str(stream), str(n), "1" if replace else "0"] +
                          gr.shape_tokens(size) + arr_tokens(r.reshape(size))))


# ---- the table ---------------------------------------------------------------------------

def gen_table():
    # Every dtype: 1-d (0, 1, short and longer rows), 2-d and 3-d along every axis (negative
    # ones too) and over the flattened array, empty arrays, unit extents.
    for name in gr.ALL:
        for n in [0, 1, 2, 7, 33]:
            sort_case(tie_data(name, (n,)), -1 if n % 2 else 0)
        sort_case(tie_data(name, ()), None)  # 0-d: the flattened [1]
        sort_case(tie_data(name, (5,)), None)
        x = tie_data(name, (3, 4))
        for axis in [0, 1, -1, -2, None]:
            sort_case(x, axis)
        x = tie_data(name, (2, 3, 4))
        for axis in [0, 1, -1, None]:
            sort_case(x, axis)
        x = tie_data(name, (2, 2, 3))
        for axis in [2, -2, -3]:
            sort_case(x, axis)
        for shape, axis in [((3, 0), 0), ((3, 0), 1), ((0, 4), 0), ((0, 4), -1), ((3, 0), None),
                            ((2, 1, 3), 1), ((1, 5), 0), ((2, 0, 3), 2)]:
            sort_case(tie_data(name, shape), axis)
        # many short rows, contiguous and strided
        sort_case(tie_data(name, (30, 2)), 1)
        sort_case(tie_data(name, (3, 20)), 0)
    sort_case(tie_data("f32", (100,)), 0)
    sort_case(tie_data("c128", (50,)), 0)
    # Special values alone: rows of NaNs (every payload), signed zeros, infinities
    for name in gr.FLOATS:
        bits = NAN_BITS[name] * 3
        nan = from_bits(name, bits, (len(bits),))
        sort_case(rng.permutation(nan), 0)
        pool = float_pool(name)
        for axis in [0, 1]:
            sort_case(from_bits(name, [pool[k] for k in rng.integers(0, len(pool), 48)], (6, 8)),
                      axis)
    for name in gr.COMPLEX:
        real = REAL_OF[name]
        nan = NAN_BITS[real][0]
        one = int(np.array([1.0]).astype(gr.DT[real]).view(UNS[gr.DT[real].itemsize])[0])
        vals = [(one, one), (one, nan), (nan, one), (nan, nan), (0, one), (one, 0),
                (nan, 0), (0, nan)]
        n = 40
        out = np.empty(n, gr.DT[name])
        pair = out.view(gr.DT[real]).reshape(n, 2)
        picks = rng.integers(0, len(vals), n)
        pair[:, 0] = from_bits(real, [vals[k][0] for k in picks], (n,))
        pair[:, 1] = from_bits(real, [vals[k][1] for k in picks], (n,))
        sort_case(out, 0)
    # Rows longer than 4096 (a long row is not one tile on the GPU): 1-byte values, so the
    # table stays small; test_sort.c checks longer rows of every dtype by their properties.
    sort_case(tie_data("i8", (10000,)), 0)
    sort_case(tie_data("bool", (4100, 1)), 0)

    # partition / argpartition: every dtype, kth at both ends and inside, negative kth
    for name in gr.ALL:
        x = tie_data(name, (7,))
        for kth in [0, 3, -1]:
            part_case(x, kth, 0)
        x = tie_data(name, (3, 4))
        part_case(x, 2, 1)
        part_case(x, -3, 0)
        part_case(x, 11, None)
    part_case(tie_data("i16", (9,)), 8, 0)
    part_case(tie_data("f64", (9,)), -9, -1)
    part_case(tie_data("f64", (0, 3)), 1, 1)  # empty: no kth check, as NumPy
    part_case(tie_data("f32", (3, 5, 2)), 3, 1)

    # unique: every dtype, 1-d and n-d (inverse in x's shape), 0-d, empty, NaNs collapsing
    for name in gr.ALL:
        for shape in [(0,), (1,), (12,), (3, 4), (2, 2, 3)]:
            unique_case(tie_data(name, shape))
        unique_case(tie_data(name, ()))
    for name in gr.FLOATS:
        bits = NAN_BITS[name] + float_pool(name, False)[:3]
        unique_case(from_bits(name, [bits[k] for k in rng.integers(0, len(bits), 20)], (20,)))
    for name in gr.COMPLEX:
        unique_case(tie_data(name, (40,)))
    unique_case(tie_data("i16", (300,)))

    # random permutations and choices
    for seed, stream, n in [(0, 0, 0), (0, 0, 1), (1, 0, 10), (1, 1, 10), (42, 3, 100),
                            (2**64 - 1, 2**63 + 5, 37), (7, 0, 300)]:
        perm_case(seed, stream, n)
    shuffle_case(5, 0, tie_data("f32", (6, 3)), 0)
    shuffle_case(5, 1, tie_data("i32", (4, 7)), 1)
    shuffle_case(9, 2, tie_data("c64", (2, 3, 5)), -1)
    for seed, stream, n, size, replace in [(3, 0, 10, (4,), False), (3, 0, 10, (10,), False),
                                           (3, 0, 10, (2, 3), True), (8, 4, 1000, (5,), False),
                                           (8, 4, 1000, (), True), (8, 5, 7, (0,), False),
                                           (1, 1, 5, (3, 3), True)]:
        choice_case(seed, stream, n, size, replace)

    # errors (as NumPy raises them): axes out of range (AxisError), a 0-d array along an
    # axis (argsort and argpartition take a 0-d array as shape [1], as NumPy does), kth out
    # of range (ValueError), an unknown kind
    errs = [("sort(x,axis=1)", "f32", (4,), "FC_ERR_AXIS"),
            ("sort(x,axis=-2)", "f32", (4,), "FC_ERR_AXIS"),
            ("argsort(x,axis=2)", "i32", (3, 4), "FC_ERR_AXIS"),
            ("argsort(x,axis=-3)", "c128", (3, 4), "FC_ERR_AXIS"),
            ("sort(x)", "f64", (), "FC_ERR_AXIS"),
            ("argsort(x,axis=1)", "u8", (), "FC_ERR_AXIS"),  # a 0-d argsort is 1-d
            ("sort(x,kind=\"bogo\")", "f32", (4,), "FC_ERR_VALUE"),
            ("partition(x,4)", "f32", (4,), "FC_ERR_VALUE"),
            ("partition(x,-5)", "f32", (4,), "FC_ERR_VALUE"),
            ("argpartition(x,3,axis=0)", "i64", (3, 4), "FC_ERR_VALUE"),
            ("argpartition(x,0,axis=2)", "i64", (3, 4), "FC_ERR_AXIS"),
            ("partition(x,0)", "f64", (), "FC_ERR_AXIS"),
            ("partition(x,1,kind=\"stable\")", "f32", (4,), "FC_ERR_VALUE")]
    funcs = {"sort": np.sort, "argsort": np.argsort, "partition": np.partition,
             "argpartition": np.argpartition}
    for call, name, shape, status in errs:
        try:  # NumPy raises the same (AxisError for FC_ERR_AXIS, another ValueError else)
            eval(call, {**funcs, "x": np.zeros(shape, np.float64)})
            raise AssertionError("NumPy accepts " + call)
        except np.exceptions.AxisError:
            assert status == "FC_ERR_AXIS", call
        except ValueError:
            assert status == "FC_ERR_VALUE", call
        err_case(call, name, shape, status)
    gr.write_table("sort_numpy.txt", lines, "tests/gen_sort.py")


class Writer(gr.Writer):
    GENERATOR = "tests/gen_sort.py"


def gen_ops():
    """A few cases through test_ops_ref.c's replayer: `o sort %R AXIS`, `o argsort %R AXIS`
    (AXIS an integer or none)."""
    w = Writer("ops_sort.txt")
    for name, shape, axis in [("f64", (9,), 0), ("f32", (3, 5), 1), ("i32", (4, 3), 0),
                              ("c64", (6,), -1), ("bf16", (2, 3, 2), None), ("u8", (0, 3), 1),
                              ("bool", (7,), 0), ("f16", (2, 4), -2)]:
        x = tie_data(name, shape)
        s, idx = np_sort(x, axis)
        for op, ref in [("sort", s), ("argsort", idx.astype(I64))]:
            c = w.case("%s %s %s axis %s" % (op, name, shape, axis))
            c.op(op, c.arr(x), axis_token(axis))
            c.expect(ref)
    c = w.case("sort axis out of range")
    c.op("sort", c.arr(tie_data("f32", (3,))), 1)
    c.error("FC_ERR_AXIS")
    w.save()


def main():
    assert np.__version__.startswith("2."), "NumPy 2.x is the reference"
    os.makedirs(OUT_DIR, exist_ok=True)
    gen_table()
    gen_ops()


if __name__ == "__main__":
    sys.exit(main())
