"""fusec.linalg: numpy.linalg and the array API's linalg extension, on cuSOLVER / cuBLAS
(fusec's reference code on the host backend). Errors NumPy raises as LinAlgError (a singular
matrix, one that is not positive definite, a stack that is not square) raise
fusec.linalg.LinAlgError, a subclass of ValueError as NumPy 2's; those found while evaluating
(singularity) raise where the value is first needed.
"""
from collections import namedtuple

import numpy as np

from . import _dtypes
from . import _functions as _f
from . import _fusec as _c
from ._functions import (_missing, asarray, diagonal as _diagonal, matmul,  # noqa: F401
                         matrix_transpose, outer, tensordot, trace as _trace, vecdot)

LinAlgError = _c.LinAlgError

SlogdetResult = namedtuple("SlogdetResult", "sign logabsdet")
EighResult = namedtuple("EighResult", "eigenvalues eigenvectors")
QRResult = namedtuple("QRResult", "Q R")
SVDResult = namedtuple("SVDResult", "U S Vh")

_UPLO = {"L": False, "U": True}


def inv(x, /):
    return _c.linalg_inv(x)


def det(x, /):
    return _c.linalg_det(x)


def slogdet(x, /):
    return SlogdetResult(*_c.linalg_slogdet(x))


def solve(x1, x2, /):
    return _c.linalg_solve(x1, x2)


def cholesky(x, /, *, upper=False):
    return _c.linalg_cholesky(x, bool(upper))


def eigh(x, /, UPLO="L"):
    return EighResult(*_c.linalg_eigh(x, _UPLO[UPLO]))


def eigvalsh(x, /, UPLO="L"):
    return _c.linalg_eigvalsh(x, _UPLO[UPLO])


def qr(x, /, mode="reduced"):
    modes = {"reduced": 0, "complete": 1, "r": 2}
    if mode not in modes:
        raise ValueError(f"qr: unknown mode {mode!r}")
    r = _c.linalg_qr(x, modes[mode])
    return r if mode == "r" else QRResult(*r)


def svd(x, /, full_matrices=True, compute_uv=True, hermitian=False):
    if hermitian:
        raise NotImplementedError("fusec.linalg.svd: hermitian=True (eigh is its "
                                  "factorisation)")
    if not compute_uv:
        return svdvals(x)
    return SVDResult(*_c.linalg_svd(x, bool(full_matrices)))


def svdvals(x, /):
    return _c.linalg_svdvals(x)


def matrix_power(x, n, /):
    return _c.matrix_power(x, int(n))


_ORDS = {2: 0, None: 0, 1: 1, float("inf"): 2}


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    """The array API's vector_norm: ord 2, 1 and inf in one fused reduction (fc_norm); -inf,
    0 (the count of non-zeros) and any other p as NumPy defines them."""
    x = asarray(x)
    if ord in _ORDS:
        return _c.norm(x, axis, keepdims, _ORDS[ord])
    a = _f.abs(x)
    if ord == float("-inf"):
        return _f.min(a, axis=axis, keepdims=keepdims)
    if ord == 0:
        return _f.astype(_f.sum(_f.astype(a != 0, a.dtype), axis=axis, keepdims=keepdims),
                         a.dtype)
    p = float(ord)
    return _f.sum(a ** p, axis=axis, keepdims=keepdims) ** (1.0 / p)


def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    """The array API's matrix_norm over the last two axes: 'fro' (fc_norm), 'nuc', 2 and -2
    (the singular values' sum, largest and smallest), 1, -1, inf and -inf (the largest or
    smallest absolute column or row sum), as numpy.linalg.norm computes them."""
    x = asarray(x)
    if ord == "fro":
        return _c.norm(x, (-2, -1), keepdims, 0)
    if ord in ("nuc", 2, -2):
        s = svdvals(x)
        r = (_f.sum(s, axis=-1) if ord == "nuc" else
             _f.max(s, axis=-1) if ord == 2 else _f.min(s, axis=-1))
    elif ord in (1, -1, float("inf"), float("-inf")):
        sums = _f.sum(_f.abs(x), axis=-2 if ord in (1, -1) else -1)
        r = _f.max(sums, axis=-1) if ord > 0 else _f.min(sums, axis=-1)
    else:
        raise ValueError(f"fusec.linalg.matrix_norm: invalid ord {ord!r}")
    return _f.expand_dims(_f.expand_dims(r, axis=-1), axis=-1) if keepdims else r


def norm(x, ord=None, axis=None, keepdims=False):
    """numpy.linalg.norm: vector norms over one axis (or the whole array, flattened, for ord
    None), matrix norms over two axes (axis a pair, or a 2-d x with axis None)."""
    x = asarray(x)
    if isinstance(axis, int):
        axis = (axis,)
    if axis is None:
        if ord is None:
            return _c.norm(x, None, keepdims, 0)
        axis = tuple(range(x.ndim))
    axis = tuple(a % x.ndim if x.ndim else a for a in axis)
    if len(axis) == 1:
        if ord == "fro" or ord == "nuc":
            raise ValueError(f"fusec.linalg.norm: invalid norm order {ord!r} for vectors")
        return vector_norm(x, axis=axis, keepdims=keepdims, ord=2 if ord is None else ord)
    if len(axis) != 2:
        raise ValueError("fusec.linalg.norm: improper number of dimensions to norm")
    m = _f.moveaxis(x, axis, (-2, -1))
    r = matrix_norm(m, ord="fro" if ord is None else ord, keepdims=keepdims)
    return _f.moveaxis(r, (-2, -1), axis) if keepdims else r


def cross(x1, x2, /, *, axis=-1):
    """The array API's linalg.cross of 3-vectors along `axis` (broadcast over the others)."""
    a, b = _f.moveaxis(asarray(x1), axis, -1), _f.moveaxis(asarray(x2), axis, -1)
    if a.shape[-1] != 3 or b.shape[-1] != 3:
        raise ValueError(f"fusec.linalg.cross: axis {axis} must have size 3, not "
                         f"{a.shape[-1]} and {b.shape[-1]}")
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    c = _f.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)
    return _f.moveaxis(c, -1, axis)


_NOVALUE = object()

LstsqResult = namedtuple("LstsqResult", "x residuals rank s")


def _eps_rcond(x):
    x = asarray(x)
    real = {13: 11, 14: 12}.get(x._code, x._code if x._code in (11, 12) else 12)
    return max(x.shape[-2:]) * float(np.finfo(_dtypes.DTYPES[real]).eps)


def pinv(x, /, rcond=None, hermitian=False, *, rtol=_NOVALUE):
    """numpy.linalg.pinv (and the array API's pinv(x, rtol=None)): singular values at most
    rcond * the largest count as zero. rcond None is NumPy's 1e-15; rtol (NumPy 2, the array
    API) replaces it, None meaning max(M, N) * eps of x's precision. Computed in double
    precision, as NumPy does."""
    if rtol is not _NOVALUE:
        rcond = _eps_rcond(x) if rtol is None else rtol
    return _c.linalg_pinv(x, None if rcond is None else float(rcond), bool(hermitian))


def matrix_rank(A, tol=None, hermitian=False, *, rtol=None):
    """numpy.linalg.matrix_rank: the number of singular values above tol (absolute), else
    rtol * the largest (rtol None: max(M, N) * eps of A's precision); int64 of A's batch
    shape. An A of fewer than 2 dimensions: 1 if any element is non-zero, else 0."""
    return _c.linalg_matrix_rank(A, None if tol is None else float(tol),
                                 None if rtol is None else float(rtol), bool(hermitian))


def lstsq(a, b, rcond=None):
    """numpy.linalg.lstsq (NumPy 2's rcond default, eps * max(M, N)): (x, residuals, rank,
    s). rank is a 0-d int32 array (NumPy gives a Python int: int(rank)); residuals are
    computed where NumPy gives them (rank == N < M), else empty."""
    return LstsqResult(*_c.linalg_lstsq(a, b, None if rcond is None else float(rcond)))


def diagonal(x, /, *, offset=0):
    return _diagonal(x, offset, -2, -1)


def trace(x, /, *, offset=0, dtype=None):
    return _trace(x, offset, -2, -1, dtype)


eig = _missing("linalg.eig", "fusec has eigh (Hermitian) only")
eigvals = _missing("linalg.eigvals", "fusec has eigvalsh (Hermitian) only")
