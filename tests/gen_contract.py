#!/usr/bin/env python3
"""Generates tests/data/ops_contract.txt: reference values of fusec's contractions
(graph/contract.c: dot, vdot, inner, outer, tensordot, einsum, kron, linalg.matrix_power)
computed by NumPy 2.4, which tests/test_composite.c replays through the public API on the
host backend (and on the GPU where there is one).

    python3 tests/gen_contract.py

Deterministic (a fixed seed); the output is checked in (CI has no NumPy).

The file format is tests/gen_reference.py's (its docstring), with these ops:
  o dot|vdot|inner|outer|kron %A %B
  o tensordot %A %B AXES                 np.tensordot(a, b, AXES)
  o tensordot_axes %A %B N A.. B..       np.tensordot(a, b, ([A..], [B..]))
  o einsum =SUBSCRIPTS N %R..            np.einsum(SUBSCRIPTS, *operands); the subscripts
                                         follow '=' (no spaces; empty for a 0-d operand)
  o matrix_power %A N                    np.linalg.matrix_power(a, N)
  err STATUS                             NumPy raises; the message must name the function

Tolerances: a float result is a sum of products, which NumPy and fusec round in different
orders (NumPy's f16 matmul rounds its running sum to f16 at every step, fusec accumulates
wide), so each case allows eps * (terms + 2) of the largest sum of |products| of an output
element, plus a few eps relative. bf16 has no NumPy loops: its cases are computed in f32 from
the bf16 values and rounded to bf16.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_reference  # noqa: E402
from gen_reference import ALL, BF16, DT, F32, rand  # noqa: E402


class Weak:
    """A Python scalar operand (a weak scalar in fusec, an array to np.asarray)."""

    def __init__(self, v):
        self.v = v


class Writer(gen_reference.Writer):
    GENERATOR = "tests/gen_contract.py"

    def __init__(self):
        super().__init__("ops_contract.txt")


EPS = {np.dtype(np.float16): 2.0 ** -10, BF16: 2.0 ** -7, np.dtype(np.float32): 2.0 ** -23,
       np.dtype(np.float64): 2.0 ** -52, np.dtype(np.complex64): 2.0 ** -23,
       np.dtype(np.complex128): 2.0 ** -52}


def np_value(x):
    return x.v if isinstance(x, Weak) else x


def reference(fn, args):
    """NumPy's result of fn(*args), and its (rtol, atol)."""
    vals = [np_value(a) for a in args]
    arrays = [v for v in vals if isinstance(v, np.ndarray)]
    bf16 = any(v.dtype == BF16 for v in arrays)
    if bf16:
        assert all(v.dtype == BF16 for v in arrays), "bf16 cases take bf16 operands only"
        ref = np.asarray(fn(*[v.astype(F32) for v in vals])).astype(BF16)
    else:
        ref = np.asarray(fn(*vals))
    if ref.dtype not in EPS or ref.size == 0:
        return ref, 0.0, 0.0
    mags = [np.abs(np.asarray(v)).astype(np.float64) for v in vals]
    ones = [np.ones_like(m) for m in mags]
    mag = np.max(np.abs(np.asarray(fn(*mags))), initial=0.0)
    terms = np.max(np.asarray(fn(*ones)), initial=1.0)
    eps = EPS[ref.dtype]
    return ref, 4 * eps, eps * (terms + 2) * mag


def emit(w, name, op, args, fn, *params, status=None, registers_last=False):
    """A case: the operands as registers, the op with its parameters, NumPy's value or error."""
    c = w.case(name)
    regs = [c.weak(a.v) if isinstance(a, Weak) else c.arr(a) for a in args]
    if registers_last:
        c.op(op, *params, *regs)
    else:
        c.op(op, *regs, *params)
    if status is not None:
        try:
            fn(*[np_value(a) for a in args])
        except (ValueError, IndexError, np.linalg.LinAlgError):
            c.error(status)
            return
        raise AssertionError("%s: NumPy does not raise" % name)
    ref, rtol, atol = reference(fn, args)
    c.expect(ref, rtol, atol)


def einsum(w, subs, *args, status=None):
    emit(w, "einsum %s" % subs, "einsum", args, lambda *v: np.einsum(subs, *v),
         "=" + subs, len(args), status=status, registers_last=True)


def shapes_name(args):
    return " ".join("x".join(map(str, np.shape(np_value(a)))) or "0d" for a in args)


# ---- dot, vdot, inner, outer, kron ----------------------------------------------------------

PAIR_FNS = {"dot": np.dot, "vdot": np.vdot, "inner": np.inner, "outer": np.outer,
            "kron": np.kron}


def pair(w, op, a, b, status=None):
    name = "%s %s %s" % (op, shapes_name([a, b]),
                         " ".join(str(np_value(x).dtype) if hasattr(np_value(x), "dtype")
                                  else type(x.v).__name__ for x in (a, b)))
    emit(w, name, op, [a, b], PAIR_FNS[op], status=status)


def gen_pairs(w):
    # every dtype, and the shapes each function treats differently
    for name in ALL:
        for op in ["dot", "vdot", "inner", "outer", "kron"]:
            shapes = {"dot": [(3, 4), (4, 5)], "vdot": [(3, 4), (12,)],
                      "inner": [(2, 3), (4, 3)], "outer": [(3,), (2, 2)],
                      "kron": [(2, 3), (3, 2)]}[op]
            pair(w, op, rand(name, shapes[0], "small"), rand(name, shapes[1], "small"))
    # integers that wrap: NumPy's integer loops accumulate in the dtype
    for name in ["i8", "u8", "i16", "u64", "i64"]:
        pair(w, "dot", rand(name, (3, 7)), rand(name, (7, 2)))
        pair(w, "vdot", rand(name, (9,)), rand(name, (9,)))
    shapes = {
        "dot": [[(4,), (4,)], [(3, 4), (4,)], [(4,), (4, 5)], [(2, 3, 4), (4, 5)],
                [(2, 3, 4), (5, 4, 6)], [(3, 4), (2, 4, 5)], [(), (3, 4)], [(3,), ()], [(), ()],
                [(0, 4), (4, 5)], [(3, 0), (0, 5)], [(1, 1), (1, 1)], [(2, 1, 3), (3,)],
                [(1,), (1, 0)]],
        "vdot": [[(4,), (4,)], [(2, 3), (3, 2)], [(), ()], [(0,), (0, 3)], [(1, 1, 1), (1,)]],
        "inner": [[(4,), (4,)], [(2, 3), (3,)], [(2, 2, 3), (4, 3)], [(), (2, 3)], [(3,), ()],
                  [(2, 0), (3, 0)], [(0, 3), (3,)]],
        "outer": [[(3,), (4,)], [(2, 2), (3,)], [(), (3,)], [(), ()], [(0,), (3,)]],
        "kron": [[(2,), (3,)], [(2, 2), (3,)], [(2, 1, 3), (1, 2, 2)], [(), (2, 3)],
                 [(3,), ()], [(0, 2), (2, 3)], [(1, 2, 2, 1), (2, 1, 1, 2)]],
    }
    for op, cases in shapes.items():
        for sa, sb in cases:
            for name in ["f64", "c64", "i32"]:
                pair(w, op, rand(name, sa), rand(name, sb))
    # mixed dtypes promote as np.result_type; Python scalars are int64 / float64 arrays
    mixed = [("i8", "f32"), ("u8", "i8"), ("f16", "i8"), ("c64", "f64"), ("bool", "i32"),
             ("u16", "f16"), ("bool", "c128")]
    for x, y in mixed:
        for op in ["dot", "vdot", "inner", "outer", "kron"]:
            pair(w, op, rand(x, (2, 3), "small"), rand(y, (2, 3) if op != "dot" else (3, 2),
                                                       "small") if op not in ("inner",)
                 else rand(y, (4, 3), "small"))
    for v in [2.5, 3, True, 1 - 2j]:
        for op in ["dot", "inner", "outer", "kron"]:
            pair(w, op, Weak(v), rand("f32", (2, 3)))
            pair(w, op, rand("i8", (3,), "small"), Weak(v))
    # NumPy's errors
    pair(w, "dot", rand("f32", (3, 4)), rand("f32", (5, 6)), status="FC_ERR_SHAPE")
    pair(w, "dot", rand("f32", (4,)), rand("f32", (5,)), status="FC_ERR_SHAPE")
    pair(w, "dot", rand("f32", (2, 3, 4)), rand("f32", (2, 3, 4)), status="FC_ERR_SHAPE")
    pair(w, "inner", rand("f32", (2, 3)), rand("f32", (2, 4)), status="FC_ERR_SHAPE")
    pair(w, "vdot", rand("f32", (3,)), rand("f32", (4,)), status="FC_ERR_SHAPE")


# ---- tensordot ------------------------------------------------------------------------------

def tensordot(w, a, b, axes, status=None):
    name = "tensordot %s %s" % (shapes_name([a, b]), axes)
    if isinstance(axes, int):
        emit(w, name, "tensordot", [a, b], lambda x, y: np.tensordot(x, y, axes), axes,
             status=status)
    else:
        emit(w, name, "tensordot_axes", [a, b], lambda x, y: np.tensordot(x, y, axes),
             len(axes[0]), *axes[0], *axes[1], status=status)


def gen_tensordot(w):
    for name in ALL:
        tensordot(w, rand(name, (2, 3, 4), "small"), rand(name, (3, 4, 5), "small"), 2)
    cases = [((2, 3, 4), (3, 4, 5), 2), ((3, 4), (4, 5), 1), ((2, 3), (3, 2), 0),
             ((2, 3), (4,), -1), ((2, 3), (2, 3), 2), ((), (), 0), ((3,), (3,), 1),
             ((2, 0), (0, 3), 1), ((2, 3, 4), (3, 4), 2),
             ((3, 4, 5), (4, 3, 2), ([1, 0], [0, 1])), ((3, 4, 5), (5, 4), ([-1, 1], [0, 1])),
             ((2, 3), (3, 2), ([], [])), ((4, 2, 3), (3, 5, 4), ([0, 2], [2, 0])),
             ((2, 3, 4), (2, 3, 4), ([0, 1, 2], [0, 1, 2])),
             ((2, 3, 4), (4, 3, 2), ([2, 1, 0], [0, 1, 2]))]
    for sa, sb, axes in cases:
        for name in ["f64", "c128", "i16"]:
            tensordot(w, rand(name, sa), rand(name, sb), axes)
    tensordot(w, rand("f32", (2, 3)), rand("u8", (3, 4), "small"), 1)
    tensordot(w, Weak(2.0), rand("f16", (2,)), 0)
    # NumPy's errors
    tensordot(w, rand("f32", (2, 3)), rand("f32", (4, 2)), 1, status="FC_ERR_SHAPE")
    tensordot(w, rand("f32", (2, 3)), rand("f32", (3, 2)), 3, status="FC_ERR_AXIS")
    tensordot(w, rand("f32", (2, 3)), rand("f32", (3, 2)), ([2], [0]), status="FC_ERR_AXIS")
    tensordot(w, rand("f32", (2, 2)), rand("f32", (2, 2)), ([0, 0], [0, 1]),
              status="FC_ERR_AXIS")
    tensordot(w, rand("f32", (2, 3)), rand("f32", (2, 3)), ([1, 0], [0, 1]),
              status="FC_ERR_SHAPE")


# ---- einsum ---------------------------------------------------------------------------------

def gen_einsum(w):
    r = rand
    forms = [
        ("ij,jk->ik", [(3, 4), (4, 5)]), ("ij,jk", [(3, 4), (4, 5)]),
        ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]), ("ij->ji", [(3, 4)]), ("ji", [(3, 4)]),
        ("ii->", [(4, 4)]), ("ii", [(4, 4)]), ("ii->i", [(4, 4)]), ("ij->", [(3, 4)]),
        ("ij->i", [(3, 4)]), ("ij->j", [(3, 4)]), ("i,j->ij", [(3,), (4,)]),
        ("i,j", [(3,), (4,)]), ("i,ij,j->", [(3,), (3, 4), (4,)]),
        ("ij,kj->ik", [(3, 4), (5, 4)]), ("ji,jk->ik", [(4, 3), (4, 5)]),
        ("ji,kj->ik", [(4, 3), (5, 4)]), ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),
        ("...ii->...i", [(2, 3, 3)]), ("i...->...", [(3, 2, 4)]),
        ("...,...->...", [(2, 1), (3,)]), ("ijk,jil->kl", [(2, 3, 4), (3, 2, 5)]),
        ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
        ("ab,bc,cd,de->ae", [(2, 3), (3, 4), (4, 2), (2, 3)]),
        ("i,i,i->", [(4,), (4,), (4,)]), ("i,i,i->i", [(4,), (4,), (4,)]),
        ("iji->j", [(3, 2, 3)]), ("ij,ij->ij", [(3, 4), (3, 4)]), ("ij,ij->i", [(3, 4), (3, 4)]),
        ("ij,ij->", [(3, 4), (3, 4)]), ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
        (",->", [(), ()]), ("i,->i", [(3,), ()]), ("", [()]), ("i->", [(0,)]),
        ("ij,jk", [(2, 0), (0, 3)]), ("ij,jk->ik", [(0, 2), (2, 3)]),
        ("ijk,ikl->ijl", [(2, 3, 4), (2, 4, 5)]), ("Ab,bC->AC", [(2, 3), (3, 4)]),
        ("Ab,bC", [(2, 3), (3, 4)]), ("i,i->", [(1,), (3,)]), ("ij,jk->ik", [(1, 4), (4, 1)]),
        ("ij,k->i", [(3, 4), (5,)]), ("ij,k", [(3, 4), (5,)]),
        ("bij,jk->bik", [(2, 3, 4), (4, 5)]), ("ij,bjk->bik", [(3, 4), (2, 4, 5)]),
        ("bik,bkj->bij", [(1, 2, 3), (4, 3, 2)]), ("ijkl,lkmn->ijmn", [(2, 2, 3, 2), (2, 3, 2, 2)]),
        ("ij,jk,ki->", [(2, 3), (3, 4), (4, 2)]), ("i,j,k->ijk", [(2,), (3,), (4,)]),
        ("...i,...i->...", [(2, 3, 4), (3, 4)]), ("i...,i...->...", [(3, 2), (3, 1)]),
        ("...", [(2, 3)]), ("a...b,b...->...a", [(2, 3, 4), (4, 3)]),
        ("iij->ij", [(3, 3, 2)]), ("ijij->ij", [(2, 3, 2, 3)]), ("ii,i->i", [(3, 3), (3,)]),
        ("ij,jk,kl,lm,mn->in", [(2, 3), (3, 2), (2, 3), (3, 2), (2, 2)]),
        ("abc,cd,bde->ae", [(2, 3, 4), (4, 2), (3, 2, 3)]),
    ]
    for subs, shapes in forms:
        for name in ["f64", "c64", "i32"]:
            einsum(w, subs, *[r(name, s) for s in shapes])
    for name in ALL:
        for subs, shapes in [("ij,jk->ik", [(3, 4), (4, 2)]), ("ii->i", [(3, 3)]),
                             ("i,i->", [(5,)] * 2), ("ij->", [(2, 3)]),
                             ("bij,bkj->bik", [(2, 3, 4), (2, 2, 4)]),
                             ("i,ij,j->", [(3,), (3, 2), (2,)])]:
            einsum(w, subs, *[r(name, s, "small") for s in shapes])
    # integers that wrap
    einsum(w, "ij,jk->ik", r("i8", (3, 6)), r("i8", (6, 2)))
    einsum(w, "i,i->", r("u8", (7,)), r("u8", (7,)))
    # mixed dtypes promote; Python scalars are int64 / float64 arrays
    einsum(w, "ij,jk->ik", r("i8", (2, 3), "small"), r("f32", (3, 2)))
    einsum(w, "i,i->i", r("u8", (3,), "small"), r("i8", (3,), "small"))
    einsum(w, "ij,j->i", r("f16", (2, 3)), r("c64", (3,)))
    einsum(w, "i,ij,j->", r("bool", (3,)), r("i16", (3, 2), "small"), r("f32", (2,)))
    einsum(w, ",i->i", Weak(2.5), r("f32", (3,)))
    einsum(w, "i,->i", r("i8", (3,), "small"), Weak(3))
    # NumPy's errors
    a, b = r("f32", (3, 4)), r("f32", (4, 5))
    einsum(w, "ij,jk->ik", a, status="FC_ERR_VALUE")
    einsum(w, "ij,jk->ik", a, b, b, status="FC_ERR_VALUE")
    einsum(w, "ij,jk,kl->il", a, b, status="FC_ERR_VALUE")
    einsum(w, "i2,jk->ik", a, b, status="FC_ERR_VALUE")
    einsum(w, "i.j,jk->ik", a, b, status="FC_ERR_VALUE")
    einsum(w, "ij,jk->ii", a, b, status="FC_ERR_VALUE")
    einsum(w, "ij,jk->iz", a, b, status="FC_ERR_VALUE")
    einsum(w, "ij,jk-ik", a, b, status="FC_ERR_VALUE")
    einsum(w, "ij,jk>ik", a, b, status="FC_ERR_VALUE")
    einsum(w, "ij,jk->i.k", a, b, status="FC_ERR_VALUE")
    einsum(w, "......", a, status="FC_ERR_VALUE")
    einsum(w, "ijk,jk->ik", a, b, status="FC_ERR_SHAPE")
    einsum(w, "i,jk->ik", a, b, status="FC_ERR_SHAPE")
    einsum(w, "ij,jk->ik", a, r("f32", (5, 4)), status="FC_ERR_SHAPE")
    einsum(w, "ii", a, status="FC_ERR_SHAPE")
    einsum(w, "...i,...i->i", r("f32", (2, 3)), r("f32", (2, 3)), status="FC_ERR_SHAPE")
    einsum(w, "...,...->...", r("f32", (2,)), r("f32", (3,)), status="FC_ERR_SHAPE")
    einsum(w, "...->", r("f32", (2, 3)), status="FC_ERR_SHAPE")


# ---- matrix_power ---------------------------------------------------------------------------

def matrix_power(w, a, n, status=None):
    emit(w, "matrix_power %s %s %d" % (shapes_name([a]), a.dtype, n), "matrix_power", [a],
         lambda x: np.linalg.matrix_power(x, n), n, status=status)


def gen_matrix_power(w):
    for n in [0, 1, 2, 3, 4, 5, 7]:
        matrix_power(w, rand("f64", (3, 3), "unit"), n)
        matrix_power(w, rand("c128", (2, 2, 2), "unit"), n)
    for name in ALL:
        if name != "bf16":  # NumPy's eye has no bf16
            matrix_power(w, rand(name, (3, 3), "unit"), 3)
    matrix_power(w, rand("i8", (3, 3)), 6)  # wraps
    matrix_power(w, rand("f32", (2, 0, 0)), 2)
    matrix_power(w, rand("f32", (1, 1)), 5)
    matrix_power(w, rand("f32", (3,)), 2, status="FC_ERR_SHAPE")
    matrix_power(w, rand("f32", (2, 3)), 2, status="FC_ERR_SHAPE")


def main():
    assert np.__version__.startswith("2."), "NumPy 2.x is the reference"
    w = Writer()
    gen_pairs(w)
    gen_tensordot(w)
    gen_einsum(w)
    gen_matrix_power(w)
    w.save()


if __name__ == "__main__":
    sys.exit(main())
