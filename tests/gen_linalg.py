#!/usr/bin/env python3
"""Generates tests/data/ops_linalg.txt: reference values of fusec's dense linear algebra
(graph/linalg.c: np.linalg.solve, inv, det, slogdet, cholesky, and matrix_power's negative
powers) computed by NumPy 2.4, which tests/test_composite.c replays through the public API on
the host backend (and on the GPU where there is one).

    python3 tests/gen_linalg.py

Deterministic (a fixed seed); the output is checked in (CI has no NumPy).

The file format is tests/gen_reference.py's (its docstring), with these ops:
  o solve %A %B                      np.linalg.solve(a, b)
  o inv|det %A                       np.linalg.inv(a), np.linalg.det(a)
  o slogdet 2 %A                     np.linalg.slogdet(a): two registers, sign and logabsdet
  o cholesky %A UPPER                np.linalg.cholesky(a, upper=bool(UPPER))
  o matrix_power %A N                np.linalg.matrix_power(a, N)
  err STATUS                         NumPy raises at the call (LinAlgError: FC_ERR_LINALG,
                                     ValueError: FC_ERR_SHAPE, TypeError: FC_ERR_DTYPE)
  evalerr STATUS                     fusec builds it; evaluating it fails (a singular or
                                     non-positive-definite matrix, found by the factorisation)

Inputs are well conditioned (random matrices plus n times the identity, Hermitian positive
definite ones A A^H + n I), so NumPy's LAPACK in the input's precision and fusec's
factorisations (the host's in double, cuSOLVER's in the input's precision) agree within a
small multiple of the precision: rtol and atol are 64 n eps cond(a) (times the result's
largest magnitude for atol). Singular inputs are exactly singular in every precision (a repeated row,
a zero column), so that every factorisation meets an exactly zero pivot.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_reference  # noqa: E402
from gen_reference import DT, rng  # noqa: E402


class Writer(gen_reference.Writer):
    GENERATOR = "tests/gen_linalg.py"

    def __init__(self):
        super().__init__("ops_linalg.txt")


EPS = {np.dtype(np.float32): 2.0 ** -23, np.dtype(np.float64): 2.0 ** -52,
       np.dtype(np.complex64): 2.0 ** -23, np.dtype(np.complex128): 2.0 ** -52}
FLOATS = ["f32", "f64", "c64", "c128"]


def rmat(name, shape, lo=-2.0, hi=2.0):
    """Random values of dtype `name` (integers: small), of the given shape."""
    dt = DT[name]
    if dt.kind == "c":
        v = rng.uniform(lo, hi, shape) + 1j * rng.uniform(lo, hi, shape)
    elif dt.kind == "f":
        v = rng.uniform(lo, hi, shape)
    elif dt.kind == "b":
        v = rng.random(shape) < 0.5
    else:
        v = rng.integers(-4, 5, shape)
    return np.asarray(v).astype(dt)


def well(name, shape):
    """A stack of well-conditioned square matrices: random, plus n times the identity."""
    n = shape[-1]
    m = rmat(name, shape)
    return (m + (n + 1) * np.eye(n, dtype=m.dtype)).astype(DT[name])


def spd(name, shape):
    """A stack of Hermitian positive definite matrices, A A^H + n I."""
    n = shape[-1]
    a = rmat(name, shape)
    m = a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)
    return m.astype(DT[name])


def condition(a):
    """The largest condition number of a's (square, non-empty) matrices; 1 where singular
    (their results are exact: zeros and infinities) or not square."""
    if a.ndim < 2 or a.shape[-1] != a.shape[-2] or a.size == 0:
        return 1.0
    with np.errstate(all="ignore"):
        c = np.linalg.cond(a.astype(np.complex128))
    c = np.asarray(c)[np.isfinite(c)]
    return float(np.max(c, initial=1.0))


def tolerance(ref, n, cond=1.0):
    if ref.dtype not in EPS or ref.size == 0:
        return 0.0, 0.0
    eps = EPS[ref.dtype] * 64 * max(n, 1) * max(cond, 1.0)
    mag = float(np.max(np.abs(ref[np.isfinite(ref)]), initial=0.0))
    return eps, eps * max(mag, 1.0)


def shp(*arrays):
    return " ".join("x".join(map(str, a.shape)) or "0d" for a in arrays)


def emit(w, op, arrays, fn, params=(), status=None, at_eval=False, n=None):
    """A case: the operands, the op, NumPy's value(s) or its error."""
    c = w.case("%s %s %s" % (op, shp(*arrays), " ".join(str(a.dtype) for a in arrays)))
    regs = [c.arr(a) for a in arrays]
    multi = op == "slogdet"
    c.op(op, *(["2"] if multi else []), *regs, *params)
    if status is not None:
        try:
            fn(*arrays)
        except (ValueError, TypeError, np.linalg.LinAlgError):
            c.error(status, at_eval)
            return
        raise AssertionError("%s: NumPy does not raise" % op)
    ref = fn(*arrays)
    core = n if n is not None else arrays[0].shape[-1]
    cond = condition(arrays[0])
    if multi:
        sign, logdet = ref  # registers len(arrays) and len(arrays) + 1, the last one first
        c.check(logdet, *tolerance(np.asarray(logdet), core, cond))
        c.op("pick", "%%%d" % len(arrays))
        c.expect(sign, *tolerance(np.asarray(sign), core, cond))
        return
    ref = np.asarray(ref)
    c.expect(ref, *tolerance(ref, core, cond))


def gen_solve(w):
    for name in FLOATS + ["i32", "bool"]:
        a = well(name, (4, 4)) if name != "bool" else np.eye(4, dtype=bool) | np.tri(4, k=-1, dtype=bool)
        emit(w, "solve", [a, rmat(name, (4, 3))], np.linalg.solve)
        emit(w, "solve", [a, rmat(name, (4,))], np.linalg.solve)
    for name in FLOATS:
        # batches: a's against b's (broadcast), a vector b against a stack of a
        emit(w, "solve", [well(name, (2, 3, 5, 5)), rmat(name, (3, 5, 2))], np.linalg.solve)
        emit(w, "solve", [well(name, (3, 4, 4)), rmat(name, (4,))], np.linalg.solve)
        emit(w, "solve", [well(name, (1, 3, 3)), rmat(name, (2, 1, 3, 1))], np.linalg.solve)
        emit(w, "solve", [well(name, (3, 3)), rmat(name, (2, 3, 4))], np.linalg.solve)
    # mixed precisions: single only when both are
    emit(w, "solve", [well("f32", (3, 3)), rmat("f64", (3, 2))], np.linalg.solve)
    emit(w, "solve", [well("f32", (3, 3)), rmat("c64", (3,))], np.linalg.solve)
    emit(w, "solve", [well("i64", (3, 3)), rmat("f32", (3,))], np.linalg.solve)
    # sizes 1 and 0
    emit(w, "solve", [well("f64", (1, 1)), rmat("f64", (1, 1))], np.linalg.solve)
    emit(w, "solve", [well("f64", (0, 0)), rmat("f64", (0, 2))], np.linalg.solve)
    emit(w, "solve", [well("f64", (2, 3, 3)), rmat("f64", (2, 3, 0))], np.linalg.solve)
    # a pivoting case (a zero on the diagonal)
    emit(w, "solve", [np.array([[0.0, 2.0, 1.0], [1.0, 1.0, 0.0], [3.0, 0.0, 1.0]]),
                      rmat("f64", (3,))], np.linalg.solve)
    # errors
    sing = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])
    for name in FLOATS:
        emit(w, "solve", [sing.astype(DT[name]), rmat(name, (3,))], np.linalg.solve,
             status="FC_ERR_LINALG", at_eval=True)
    batch = np.stack([well("f64", (3, 3)), sing, well("f64", (3, 3))])
    emit(w, "solve", [batch, rmat("f64", (3, 3, 1))], np.linalg.solve, status="FC_ERR_LINALG",
         at_eval=True)
    emit(w, "solve", [rmat("f64", (3, 4)), rmat("f64", (3,))], np.linalg.solve,
         status="FC_ERR_LINALG")
    emit(w, "solve", [rmat("f64", (3,)), rmat("f64", (3,))], np.linalg.solve,
         status="FC_ERR_LINALG")
    emit(w, "solve", [well("f64", (3, 3)), rmat("f64", (4,))], np.linalg.solve,
         status="FC_ERR_SHAPE")
    emit(w, "solve", [well("f64", (3, 3)), rmat("f64", (4, 2))], np.linalg.solve,
         status="FC_ERR_SHAPE")
    emit(w, "solve", [well("f64", (2, 3, 3)), rmat("f64", (3, 3, 1))], np.linalg.solve,
         status="FC_ERR_SHAPE")
    emit(w, "solve", [well("f16", (3, 3)), rmat("f16", (3,))], np.linalg.solve,
         status="FC_ERR_DTYPE")


def gen_inv(w):
    for name in FLOATS + ["i16"]:
        emit(w, "inv", [well(name, (4, 4))], np.linalg.inv)
        emit(w, "inv", [well(name, (2, 2, 3, 3))], np.linalg.inv)
    emit(w, "inv", [well("f32", (1, 1))], np.linalg.inv)
    emit(w, "inv", [well("f32", (3, 0, 0))], np.linalg.inv)
    emit(w, "inv", [np.array([[0.0, 1.0], [1.0, 0.0]])], np.linalg.inv)
    sing = np.array([[1.0, 0.0, 2.0], [3.0, 0.0, 1.0], [5.0, 0.0, 4.0]])
    for name in ["f32", "c128"]:
        emit(w, "inv", [sing.astype(DT[name])], np.linalg.inv, status="FC_ERR_LINALG",
             at_eval=True)
    emit(w, "inv", [rmat("f64", (2, 3))], np.linalg.inv, status="FC_ERR_LINALG")
    emit(w, "inv", [rmat("f64", (3,))], np.linalg.inv, status="FC_ERR_LINALG")
    emit(w, "inv", [well("f16", (2, 2))], np.linalg.inv, status="FC_ERR_DTYPE")
    # matrix_power's negative powers are powers of the inverse
    for n in [-1, -2, -3, -5]:
        emit(w, "matrix_power", [well("f64", (3, 3)) / 4], lambda x: np.linalg.matrix_power(x, n),
             params=[n])
    emit(w, "matrix_power", [well("c64", (2, 2, 2)) / 3],
         lambda x: np.linalg.matrix_power(x, -2), params=[-2])
    emit(w, "matrix_power", [well("i8", (2, 2))], lambda x: np.linalg.matrix_power(x, -1),
         params=[-1])


def gen_det(w):
    for name in FLOATS + ["i64", "u8", "bool"]:
        for shape in [(3, 3), (2, 4, 4), (1, 1), (5, 5)]:
            a = rmat(name, shape)
            emit(w, "det", [a], np.linalg.det)
            emit(w, "slogdet", [a], np.linalg.slogdet)
    for name in FLOATS:
        # exactly singular: det 0, slogdet (0, -inf); in a batch with regular ones
        sing = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]]).astype(DT[name])
        emit(w, "det", [sing], np.linalg.det)
        emit(w, "slogdet", [sing], np.linalg.slogdet)
        batch = np.stack([rmat(name, (3, 3)), sing, np.zeros((3, 3), DT[name])])
        emit(w, "slogdet", [batch], np.linalg.slogdet)
        emit(w, "det", [batch], np.linalg.det)
    # 0 x 0 matrices: det 1, slogdet (1, 0); empty batches
    emit(w, "det", [rmat("f64", (0, 0))], np.linalg.det)
    emit(w, "slogdet", [rmat("c64", (2, 0, 0))], np.linalg.slogdet)
    emit(w, "det", [rmat("f32", (0, 3, 3))], np.linalg.det)
    # permutations: the sign of the pivoting
    emit(w, "det", [np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])], np.linalg.det)
    emit(w, "det", [np.array([[0.0, 1.0], [1.0, 0.0]], dtype=np.float32)], np.linalg.det)
    # large determinants: slogdet keeps what det overflows
    big = well("f64", (40, 40)) * 1e10
    emit(w, "slogdet", [big], np.linalg.slogdet)
    emit(w, "det", [rmat("f64", (3, 4))], np.linalg.det, status="FC_ERR_LINALG")
    emit(w, "slogdet", [rmat("f64", (4,))], np.linalg.slogdet, status="FC_ERR_LINALG")
    emit(w, "det", [rmat("f16", (2, 2))], np.linalg.det, status="FC_ERR_DTYPE")


def gen_cholesky(w):
    for name in FLOATS + ["i32"]:
        a = spd(name, (4, 4)) if name != "i32" else np.array([[4, 2], [2, 3]], dtype=np.int32)
        emit(w, "cholesky", [a], np.linalg.cholesky, params=[0])
        emit(w, "cholesky", [a], lambda x: np.linalg.cholesky(x, upper=True), params=[1])
        emit(w, "cholesky", [spd(name, (2, 3, 3)) if name != "i32" else a[None]],
             np.linalg.cholesky, params=[0])
    # only the lower triangle is read
    a = spd("f64", (4, 4))
    a[0, 3] = 1e6
    emit(w, "cholesky", [a], np.linalg.cholesky, params=[0])
    emit(w, "cholesky", [spd("c128", (1, 1))], np.linalg.cholesky, params=[0])
    emit(w, "cholesky", [rmat("f32", (2, 0, 0))], np.linalg.cholesky, params=[0])
    notpd = np.array([[1.0, 2.0], [2.0, 1.0]])
    for name in FLOATS:
        emit(w, "cholesky", [notpd.astype(DT[name])], np.linalg.cholesky, params=[0],
             status="FC_ERR_LINALG", at_eval=True)
    batch = np.stack([spd("f64", (2, 2)), notpd])
    emit(w, "cholesky", [batch], np.linalg.cholesky, params=[0], status="FC_ERR_LINALG",
         at_eval=True)
    emit(w, "cholesky", [-np.eye(3)], np.linalg.cholesky, params=[0], status="FC_ERR_LINALG",
         at_eval=True)
    emit(w, "cholesky", [rmat("f64", (2, 3))], np.linalg.cholesky, params=[0],
         status="FC_ERR_LINALG")
    emit(w, "cholesky", [rmat("f16", (2, 2))], np.linalg.cholesky, params=[0],
         status="FC_ERR_DTYPE")


def main():
    assert np.__version__.startswith("2."), "NumPy 2.x is the reference"
    w = Writer()
    gen_solve(w)
    gen_inv(w)
    gen_det(w)
    gen_cholesky(w)
    w.save()


if __name__ == "__main__":
    sys.exit(main())
