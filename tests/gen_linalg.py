#!/usr/bin/env python3
"""Generates tests/data/ops_linalg.txt: reference values of fusec's dense linear algebra
(graph/linalg.c: np.linalg.solve, inv, det, slogdet, cholesky, matrix_power's negative powers,
qr, eigh, eigvalsh, svd, svdvals, lstsq, pinv and matrix_rank) computed by NumPy 2.4, which
tests/test_composite.c replays through the public API on the host backend (and on the GPU
where there is one).

    python3 tests/gen_linalg.py

Deterministic (a fixed seed); the output is checked in (CI has no NumPy).

The file format is tests/gen_reference.py's (its docstring), with these ops:
  o solve %A %B                      np.linalg.solve(a, b)
  o inv|det %A                       np.linalg.inv(a), np.linalg.det(a)
  o slogdet 2 %A                     np.linalg.slogdet(a): two registers, sign and logabsdet
  o cholesky %A UPPER                np.linalg.cholesky(a, upper=bool(UPPER))
  o matrix_power %A N                np.linalg.matrix_power(a, N)
  o qr 2 %A MODE, o qr_r %A          np.linalg.qr(a, mode): Q, R (MODE 0 reduced, 1 complete)
                                     or R alone (mode "r")
  o eigh 2 %A UPPER, o eigvalsh %A UPPER   np.linalg.eigh / eigvalsh(a, UPLO="U" if UPPER)
  o svd 3 %A FULL, o svdvals %A      np.linalg.svd(a, full_matrices=bool(FULL)): U, S, Vh;
                                     np.linalg.svdvals(a)
  o lstsq 4 %A %B RCOND              np.linalg.lstsq(a, b, rcond): x, residuals, rank, s
  o pinv %A RCOND HERMITIAN          np.linalg.pinv(a, rcond, hermitian)
  o matrix_rank %A TOL RTOL HERMITIAN    np.linalg.matrix_rank(a, tol, hermitian, rtol=rtol)
                                     (RCOND, TOL, RTOL: "none" or a double's hex bits)
  o absolute|adjoint %K, o matmul|mul %A %B, o expand_dims %K AXIS,
  o slice_axis %K AXIS START STOP, o tril %K K, o pick %K
                                     what the factorisations' checks compute from fusec's
                                     own factors (see gen_qr_eigh's comment)
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


# ---- factorisations whose factors are unique only up to signs and phases ------------------
#
# qr, eigh and svd give each column of Q, V or U (with the matching row of R or Vh) only up to
# a sign or phase, and a repeated value's vectors only up to a basis. So their cases check
# what is unique, through ops of the runner (tests/test_composite.c) applied to fusec's own
# results: the values themselves (R's |.|, eigenvalues, singular values), the product of the
# factors against the input (U diag(S) Vh == a, Q R == a, V diag(w) V^H == the Hermitian
# matrix read), their orthonormality (Q^H Q == I, ...), and |.| of the vectors that are unique
# up to phase (columns of isolated eigenvalues and singular values), against NumPy's |.|.
# A wrong factor fails one of them: a product can only match with the right vectors in the
# right order and phase, and a basis is checked for being one.


def multi(c, name, n, *args):
    """An op with n results (the runner's `o NAME N ...`): their registers."""
    first = int(c.op(name, n, *args)[1:])
    c.nreg += n - 1
    return ["%%%d" % (first + i) for i in range(n)]


def result_type(*arrays):
    """np.linalg's result dtype (_commonType's result_t)."""
    cplx = any(a.dtype.kind == "c" for a in arrays)
    single = all(a.dtype in (np.dtype(np.float32), np.dtype(np.complex64)) for a in arrays)
    if cplx:
        return np.dtype(np.complex64 if single else np.complex128)
    return np.dtype(np.float32 if single else np.float64)


def real_of(dt):
    return np.dtype(np.float32 if dt in (np.dtype(np.float32), np.dtype(np.complex64)) else np.float64)


def eps_of(dt):
    return EPS[np.dtype(dt)] if np.dtype(dt) in EPS else EPS[real_of(dt)]


def sing(a):
    """a's singular values in double (NumPy's, [..., k])."""
    return np.linalg.svd(a.astype(np.complex128), compute_uv=False)


def check_pick(c, reg, value, rtol=0.0, atol=0.0):
    c.op("pick", reg)
    c.check(value, rtol, atol)


def isolated(vals):
    """The smallest gap between two values of a matrix of vals [..., k], over the stack:
    vectors are unique up to phase, and perturbed by eps * scale / gap, where it is large."""
    v = np.sort(np.asarray(vals, dtype=np.float64).reshape(-1, vals.shape[-1]), axis=-1)
    if v.shape[-1] < 2:
        return np.inf
    return float(np.min(np.diff(v, axis=-1), initial=np.inf))


def check_orthonormal(c, reg, size, dt, batch, tol, rows=False):
    """reg^H reg == I (columns) or reg reg^H == I (rows) of order `size`."""
    adj = c.op("adjoint", reg)
    c.op("matmul", reg, adj) if rows else c.op("matmul", adj, reg)
    c.check(np.broadcast_to(np.eye(size, dtype=dt), batch + (size, size)), 0.0, tol)


def emit_svd(w, a, full):
    c = w.case("svd %s %s full=%d" % (shp(a), a.dtype, full))
    ra = c.arr(a)
    U, S, VH = multi(c, "svd", 3, ra, int(full))
    u, s, vh = np.linalg.svd(a, full_matrices=full)
    m, n = a.shape[-2:]
    k, big, batch = min(m, n), max(m, n, 1), a.shape[:-2]
    t = u.dtype
    tol = 64 * big * eps_of(t)
    smax = float(np.max(s, initial=0.0))
    check_pick(c, S, s, tol, tol * smax)
    if k == 0:  # empty: zeros and NumPy's identities, exactly
        check_pick(c, U, u)
        check_pick(c, VH, vh)
        c.finish()
        return
    # U[..., :k] diag(S) Vh[:k] == a
    us = c.op("mul", c.op("slice_axis", U, -1, 0, k), c.op("expand_dims", S, -2))
    c.op("matmul", us, c.op("slice_axis", VH, -2, 0, k))
    c.check(a.astype(t), 0.0, tol * smax)
    check_orthonormal(c, U, u.shape[-1], t, batch, tol)
    check_orthonormal(c, VH, vh.shape[-2], t, batch, tol, rows=True)
    # |U|'s columns and |Vh|'s rows of isolated non-zero singular values, against NumPy's
    sd = sing(a)
    gap = isolated(np.concatenate([sd, np.zeros(sd.shape[:-1] + (1,))], axis=-1))
    if smax > 0 and gap > 1e-2 * smax:
        vtol = tol * smax / gap
        c.op("slice_axis", c.op("absolute", U), -1, 0, k)
        c.check(np.abs(u[..., :k]), 0.0, vtol)
        c.op("slice_axis", c.op("absolute", VH), -2, 0, k)
        c.check(np.abs(vh[..., :k, :]), 0.0, vtol)
    c.finish()


def emit_svdvals(w, a):
    c = w.case("svdvals %s %s" % (shp(a), a.dtype))
    c.op("svdvals", c.arr(a))
    s = np.linalg.svd(a, compute_uv=False)
    tol = 64 * max(a.shape[-2:] + (1,)) * eps_of(s.dtype)
    c.expect(s, tol, tol * float(np.max(s, initial=0.0)))


def emit_qr(w, a, mode):
    c = w.case("qr %s %s %s" % (shp(a), a.dtype, mode))
    ra = c.arr(a)
    m, n = a.shape[-2:]
    k, big, batch = min(m, n), max(m, n, 1), a.shape[:-2]
    sd = sing(a)
    smax = float(np.max(sd, initial=0.0))
    smin = float(np.min(sd, initial=smax))
    cond = smax / smin if smin > 0 else np.inf
    if mode == "r":
        r = np.linalg.qr(a, mode="r")
        R = c.op("qr_r", ra)
        Q = None
    else:
        q, r = np.linalg.qr(a, mode=mode)
        Q, R = multi(c, "qr", 2, ra, 1 if mode == "complete" else 0)
    t = r.dtype
    tol = 64 * big * eps_of(t)
    c.op("tril", R, -1)  # zeros below the diagonal, exactly
    c.check(np.zeros_like(r))
    if np.isfinite(cond) and k > 0:  # full rank: R unique up to its rows' phases
        c.op("absolute", R)
        c.check(np.abs(r), 0.0, tol * cond * max(smax, 1.0))
    if Q is not None:
        c.op("matmul", Q, R)
        c.check(a.astype(t), 0.0, tol * max(smax, 1.0))
        check_orthonormal(c, Q, q.shape[-1], t, batch, tol)
        if np.isfinite(cond) and k > 0:
            c.op("slice_axis", c.op("absolute", Q), -1, 0, k)
            c.check(np.abs(q[..., :k]), 0.0, tol * cond)
    c.finish()


def hermitian_of(a, upper):
    """The Hermitian matrix LAPACK reads from a's lower (or upper) triangle."""
    tri = np.triu(a) if upper else np.tril(a)
    d = np.real(np.diagonal(a, axis1=-2, axis2=-1))
    h = tri + np.conj(np.swapaxes(tri, -1, -2))
    idx = np.arange(a.shape[-1])
    h[..., idx, idx] = d
    return h


def emit_eigh(w, a, upper):
    c = w.case("eigh %s %s UPLO=%s" % (shp(a), a.dtype, "U" if upper else "L"))
    ra = c.arr(a)
    W, V = multi(c, "eigh", 2, ra, int(upper))
    wv, vv = np.linalg.eigh(a, UPLO="U" if upper else "L")
    n, batch, t = a.shape[-1], a.shape[:-2], vv.dtype
    tol = 64 * max(n, 1) * eps_of(t)
    hmax = float(np.max(np.abs(wv), initial=0.0))
    check_pick(c, W, wv, tol, tol * hmax)
    if n > 0:
        c.op("matmul", c.op("mul", V, c.op("expand_dims", W, -2)), c.op("adjoint", V))
        c.check(hermitian_of(a, upper).astype(t), 0.0, tol * max(hmax, 1.0))
        check_orthonormal(c, V, n, t, batch, tol)
        gap = isolated(np.asarray(wv, dtype=np.float64))
        if hmax > 0 and gap > 1e-2 * hmax:
            c.op("absolute", V)
            c.check(np.abs(vv), 0.0, tol * hmax / gap)
    c.finish()


def emit_eigvalsh(w, a, upper):
    c = w.case("eigvalsh %s %s UPLO=%s" % (shp(a), a.dtype, "U" if upper else "L"))
    c.op("eigvalsh", c.arr(a), int(upper))
    wv = np.linalg.eigvalsh(a, UPLO="U" if upper else "L")
    tol = 64 * max(a.shape[-1], 1) * eps_of(wv.dtype)
    c.expect(wv, tol, tol * float(np.max(np.abs(wv), initial=0.0)))


def opt(v):
    return "none" if v is None else gen_reference.f64hex(v)


def assert_margin(s, cutoff, what):
    """No singular value of s near the rank cutoff (per matrix), so that rounding in any SVD
    (NumPy's LAPACK in double, fusec's Jacobi or cuSOLVER) makes the same rank decision: a
    factor 30 from a cutoff at rounding level, 1.2 from a coarse one (its singular values
    are exact within 1e-6, single precision's input rounding times their condition)."""
    s = np.asarray(s, dtype=np.float64)
    cut = np.asarray(cutoff, dtype=np.float64)
    f = 30.0 if np.all(cut <= 1e-4 * np.max(s, initial=0.0)) else 1.2
    near = (s > cut / f) & (s < cut * f)
    assert not near.any(), "%s: singular values %s near the cutoff %s" % (what, s, cut)


def kept_cond(s, cutoff):
    """The condition number of the part of a that the rank decision keeps."""
    s = np.asarray(s, dtype=np.float64)
    kept = s[s > cutoff]
    return float(kept.max() / kept.min()) if kept.size else 1.0


def emit_lstsq(w, a, b, rcond=None, status=None):
    c = w.case("lstsq %s %s %s rcond=%s" % (shp(a, b), a.dtype, b.dtype, rcond))
    ra, rb = c.arr(a), c.arr(b)
    regs = multi(c, "lstsq", 4, ra, rb, opt(rcond))
    if status is not None:
        try:
            np.linalg.lstsq(a, b, rcond=rcond)
        except (ValueError, TypeError, np.linalg.LinAlgError):
            c.error(status)
            return
        raise AssertionError("lstsq: NumPy does not raise")
    x, res, rank, s = np.linalg.lstsq(a, b, rcond=rcond)
    m, n = a.shape
    sd = sing(a)
    rc = np.finfo(np.float64).eps * max(m, n) if rcond is None else rcond
    smax = float(np.max(sd, initial=0.0))
    assert_margin(sd, rc * smax, "lstsq")
    t = x.dtype
    tol = 64 * max(m, n, 1) * eps_of(t)
    cond = kept_cond(sd, rc * smax)
    bmax = float(np.max(np.abs(b), initial=0.0))
    check_pick(c, regs[0], x, tol * cond, tol * cond * max(float(np.max(np.abs(x), initial=0.0)), 1.0))
    check_pick(c, regs[1], res, tol * cond, tol * cond * max(bmax, 1.0) ** 2 * max(m, 1))
    check_pick(c, regs[2], np.int32(rank))
    check_pick(c, regs[3], s, tol, tol * smax)
    c.finish()


def emit_pinv(w, a, rcond=None, hermitian=False, status=None):
    c = w.case("pinv %s %s rcond=%s hermitian=%d" % (shp(a), a.dtype, rcond, hermitian))
    c.op("pinv", c.arr(a), opt(rcond), int(hermitian))
    kw = {} if rcond is None else {"rcond": rcond}
    if status is not None:
        try:
            np.linalg.pinv(a, hermitian=hermitian, **kw)
        except (ValueError, TypeError, np.linalg.LinAlgError):
            c.error(status)
            return
        raise AssertionError("pinv: NumPy does not raise")
    ref = np.linalg.pinv(a, hermitian=hermitian, **kw)
    sd = np.abs(np.linalg.eigvalsh(a.astype(np.complex128))) if hermitian and a.size else sing(a)
    rc = 1e-15 if rcond is None else rcond
    smax = np.max(sd, axis=-1, keepdims=True, initial=0.0) if sd.size else 0.0
    assert_margin(sd, rc * smax, "pinv")
    cond = kept_cond(sd, rc * float(np.max(smax, initial=0.0)))
    tol = 64 * max(a.shape[-2:] + (1,)) * eps_of(ref.dtype) * cond
    c.expect(ref, tol, tol * max(float(np.max(np.abs(ref), initial=0.0)), 1.0))


def emit_matrix_rank(w, a, tol=None, rtol=None, hermitian=False, status=None):
    c = w.case("matrix_rank %s %s tol=%s rtol=%s hermitian=%d" % (shp(a), a.dtype, tol, rtol,
                                                                 hermitian))
    c.op("matrix_rank", c.arr(a), opt(tol), opt(rtol), int(hermitian))
    if status is not None:
        try:
            np.linalg.matrix_rank(a, tol=tol, rtol=rtol, hermitian=hermitian)
        except (ValueError, TypeError, np.linalg.LinAlgError):
            c.error(status)
            return
        raise AssertionError("matrix_rank: NumPy does not raise")
    ref = np.linalg.matrix_rank(a, tol=tol, rtol=rtol, hermitian=hermitian)
    if a.ndim >= 2 and a.size:
        sd = (np.abs(np.linalg.eigvalsh(a.astype(np.complex128))) if hermitian else sing(a))
        rt = real_of(result_type(a))
        smax = np.max(sd, axis=-1, keepdims=True)
        cut = (tol if tol is not None else
               smax * (rtol if rtol is not None else max(a.shape[-2:]) * np.finfo(rt).eps))
        assert_margin(sd, cut, "matrix_rank")
    c.expect(np.asarray(ref, dtype=np.int64))


def deficient(name, shape, rank):
    """A stack of matrices of rank `rank` that every SVD finds exactly: the columns from rank
    on zero for a tall matrix, the rows for a wide one (fusec's Jacobi works on A^H then), so
    that the zero singular values are exact zeros and not rounding noise."""
    a = rmat(name, shape)
    m, n = shape[-2:]
    if m >= n:
        a[..., :, rank:] = 0
    else:
        a[..., rank:, :] = 0
    return a


def low_rank(name, shape, rank):
    """Integer matrices, products of [m, rank] and [rank, n] ones: exactly of that rank in
    every precision, their zero singular values rounding noise (so an explicit tolerance)."""
    m, n = shape[-2:]
    x = rng.integers(-3, 4, shape[:-2] + (m, rank)).astype(np.float64)
    y = rng.integers(-3, 4, shape[:-2] + (rank, n)).astype(np.float64)
    v = x @ y
    if DT[name].kind == "c":
        v = v + 1j * (x @ np.roll(y, 1, axis=-1))  # still rank <= rank: x times a matrix
    return v.astype(DT[name])


def spectrum(name, m, n, svals):
    """A random m x n matrix with the singular values svals: Q1 diag(svals) Q2^H of random
    orthonormal factors (QR's)."""
    q1 = np.linalg.qr(rmat("c128" if DT[name].kind == "c" else "f64", (m, m)))[0]
    q2 = np.linalg.qr(rmat("c128" if DT[name].kind == "c" else "f64", (n, n)))[0]
    d = np.zeros((m, n))
    d[np.arange(len(svals)), np.arange(len(svals))] = svals
    return (q1 @ d @ np.conj(q2.T)).astype(DT[name])


def gen_svd(w):
    shapes = [(4, 4), (5, 3), (3, 5), (2, 3, 4, 2), (1, 1), (6, 1), (1, 6), (3, 2, 2)]
    for name in FLOATS:
        for shape in shapes:
            a = rmat(name, shape)
            for full in (True, False):
                emit_svd(w, a, full)
            emit_svdvals(w, a)
        for shape, r in [((6, 4), 2), ((3, 6), 1), ((2, 5, 5), 3)]:
            a = deficient(name, shape, r)
            emit_svd(w, a, True)
            emit_svd(w, a, False)
            emit_svdvals(w, a)
        emit_svd(w, np.zeros((3, 2), DT[name]), True)  # all zero: U, Vh any orthonormal
    for name in ["i32", "bool"]:
        emit_svd(w, rmat(name, (4, 3)), False)
        emit_svdvals(w, rmat(name, (3, 4)))
    for shape in [(0, 3), (3, 0), (2, 0, 0), (0, 3, 3), (2, 0, 4)]:
        for full in (True, False):
            emit_svd(w, rmat("f64", shape), full)
        emit_svdvals(w, rmat("c64", shape))
    c = w.case("svd vector")
    multi(c, "svd", 3, c.arr(rmat("f64", (3,))), 1)
    c.error("FC_ERR_LINALG")
    c = w.case("svdvals f16")
    c.op("svdvals", c.arr(rmat("f16", (2, 2))))
    c.error("FC_ERR_DTYPE")


def gen_qr_eigh(w):
    for name in FLOATS:
        for shape in [(4, 4), (5, 3), (3, 5), (2, 3, 3, 2), (1, 1), (6, 1)]:
            a = rmat(name, shape)
            for mode in ("reduced", "complete", "r"):
                emit_qr(w, a, mode)
        for shape in [(4, 4), (2, 3, 3), (1, 1), (6, 6)]:
            a = rmat(name, shape)
            for upper in (False, True):
                emit_eigh(w, a, upper)
                emit_eigvalsh(w, a, upper)
        # a repeated eigenvalue: V is any basis of its space (checked by the products)
        emit_eigh(w, np.diag(np.array([2.0, 2.0, -1.0])).astype(DT[name]), False)
        emit_qr(w, deficient(name, (5, 3), 2), "complete")  # Q R == a still; R's zero row
    emit_qr(w, rmat("i16", (3, 2)), "reduced")
    emit_eigh(w, rmat("i32", (3, 3)), False)
    for shape in [(0, 3), (3, 0), (2, 0, 0)]:
        for mode in ("reduced", "complete", "r"):
            emit_qr(w, rmat("c128", shape), mode)
    emit_eigh(w, rmat("f32", (2, 0, 0)), False)
    emit_eigvalsh(w, rmat("c64", (0, 0)), True)


def gen_lstsq(w):
    for name in FLOATS:
        emit_lstsq(w, rmat(name, (6, 3)), rmat(name, (6,)))
        emit_lstsq(w, rmat(name, (6, 3)), rmat(name, (6, 2)))
        emit_lstsq(w, rmat(name, (4, 4)), rmat(name, (4, 3)))
        emit_lstsq(w, rmat(name, (3, 5)), rmat(name, (3,)))
        emit_lstsq(w, rmat(name, (1, 1)), rmat(name, (1, 1)))
        # rank deficient: the minimum-norm solution, no residuals (rank < N)
        emit_lstsq(w, deficient(name, (6, 4), 2), rmat(name, (6, 2)))
        emit_lstsq(w, deficient(name, (3, 5), 2), rmat(name, (3,)))
        emit_lstsq(w, low_rank(name, (6, 4), 2), rmat(name, (6, 2)), rcond=1e-6)
        emit_lstsq(w, spectrum(name, 5, 3, [4.0, 2.0, 0.5]), rmat(name, (5, 2)), rcond=0.4)
    emit_lstsq(w, rmat("f32", (5, 2)), rmat("f64", (5,)))  # double: f32 with f64
    emit_lstsq(w, rmat("i32", (4, 2)), rmat("i32", (4, 1)))
    emit_lstsq(w, rmat("f64", (5, 3)), rmat("c64", (5,)))
    emit_lstsq(w, rmat("f64", (5, 3)), rmat("f64", (5, 2)), rcond=-1.0)  # gelsd: eps
    # empty: x zeros; rank 0 == N for N == 0 (residuals |b|^2); no right-hand sides
    emit_lstsq(w, rmat("f64", (0, 3)), rmat("f64", (0,)))
    emit_lstsq(w, rmat("f64", (3, 0)), rmat("f64", (3,)))
    emit_lstsq(w, rmat("c128", (3, 0)), rmat("c128", (3, 2)))
    emit_lstsq(w, rmat("f64", (4, 2)), rmat("f64", (4, 0)))
    emit_lstsq(w, np.zeros((4, 2)), rmat("f64", (4, 2)))  # rank 0
    # errors: NumPy's LinAlgError for a stack, a 3-d b, rows that differ; TypeError for f16
    emit_lstsq(w, rmat("f64", (2, 4, 3)), rmat("f64", (2, 4, 1)), status="FC_ERR_LINALG")
    emit_lstsq(w, rmat("f64", (4, 3)), rmat("f64", (2, 4, 1)), status="FC_ERR_LINALG")
    emit_lstsq(w, rmat("f64", (4, 3)), rmat("f64", (5,)), status="FC_ERR_LINALG")
    emit_lstsq(w, rmat("f64", (4,)), rmat("f64", (4,)), status="FC_ERR_LINALG")
    emit_lstsq(w, rmat("f16", (4, 3)), rmat("f16", (4,)), status="FC_ERR_DTYPE")


def gen_pinv_rank(w):
    for name in FLOATS:
        for shape in [(4, 4), (5, 3), (3, 5), (2, 3, 4, 2), (1, 1)]:
            emit_pinv(w, rmat(name, shape))
            emit_matrix_rank(w, rmat(name, shape))
        a = deficient(name, (2, 6, 4), 2)
        emit_pinv(w, a)
        emit_matrix_rank(w, a)
        emit_pinv(w, deficient(name, (3, 5), 1))
        emit_matrix_rank(w, deficient(name, (3, 5), 1))
        lr = low_rank(name, (2, 5, 4), 2)
        emit_pinv(w, lr, rcond=1e-8)
        emit_matrix_rank(w, lr, rtol=1e-8)
        emit_matrix_rank(w, lr, tol=1e-6)
        if name in ("f32", "c64"):  # the default tolerance is single precision's
            emit_matrix_rank(w, lr)
        h = rmat(name, (3, 3))
        h = (h + np.conj(h.T)) / 2
        emit_pinv(w, h, hermitian=True)
        emit_matrix_rank(w, h, hermitian=True)
        emit_matrix_rank(w, np.zeros((3, 4), DT[name]))
    emit_pinv(w, spectrum("f64", 4, 3, [5.0, 1.0, 0.1]), rcond=0.1)  # cuts the smallest
    emit_pinv(w, rmat("i64", (3, 2)))
    emit_matrix_rank(w, rmat("i8", (3, 3)))
    # fewer than 2 dimensions: any non-zero element gives 1
    emit_matrix_rank(w, np.array([0.0, 2.0, 0.0]))
    emit_matrix_rank(w, np.zeros(3, np.float32))
    emit_matrix_rank(w, np.array(5, dtype=np.int32))
    # empty: NumPy's pinv of an empty matrix is empty, of a's own dtype
    emit_pinv(w, rmat("f32", (0, 3)))
    emit_pinv(w, rmat("i32", (2, 3, 0)))
    emit_matrix_rank(w, rmat("f64", (3, 0)))
    emit_matrix_rank(w, rmat("c64", (2, 0, 4)))
    emit_pinv(w, rmat("f64", (3,)), status="FC_ERR_LINALG")
    emit_pinv(w, rmat("f64", (3, 4)), hermitian=True, status="FC_ERR_LINALG")
    emit_pinv(w, rmat("f16", (2, 2)), status="FC_ERR_DTYPE")
    emit_matrix_rank(w, rmat("f64", (3, 3)), tol=1.0, rtol=0.1, status="FC_ERR_VALUE")
    emit_matrix_rank(w, rmat("f16", (2, 2)), status="FC_ERR_DTYPE")


def main():
    assert np.__version__.startswith("2."), "NumPy 2.x is the reference"
    w = Writer()
    gen_solve(w)
    gen_inv(w)
    gen_det(w)
    gen_cholesky(w)
    gen_qr_eigh(w)
    gen_svd(w)
    gen_lstsq(w)
    gen_pinv_rank(w)
    w.save()


if __name__ == "__main__":
    sys.exit(main())
