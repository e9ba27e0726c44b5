"""fusec.linalg: numpy.linalg and the array API's linalg extension, on cuSOLVER / cuBLAS
(fusec's reference code on the host backend). Errors NumPy raises as LinAlgError (a singular
matrix, one that is not positive definite, a stack that is not square) raise
fusec.linalg.LinAlgError, a subclass of ValueError as NumPy 2's; those found while evaluating
(singularity) raise where the value is first needed.
"""
from collections import namedtuple

import numpy as np

from . import _dtypes
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
    if ord not in _ORDS:
        raise NotImplementedError(f"fusec.linalg.vector_norm: ord={ord!r} (2, 1 and inf)")
    return _c.norm(x, axis, keepdims, _ORDS[ord])


def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    if ord != "fro":
        raise NotImplementedError(f"fusec.linalg.matrix_norm: ord={ord!r} (only 'fro')")
    return _c.norm(x, (-2, -1), keepdims, 0)


def norm(x, ord=None, axis=None, keepdims=False):
    """numpy.linalg.norm for vector norms (ord None, 2, 1, inf) and the Frobenius norm."""
    x = asarray(x)
    if ord == "fro" or (ord is None and (axis is None or isinstance(axis, int))):
        return _c.norm(x, axis, keepdims, 0)
    if isinstance(axis, tuple) and len(axis) == 2:
        raise NotImplementedError(f"fusec.linalg.norm: the matrix norm ord={ord!r}")
    if axis is None and x.ndim != 1:
        raise NotImplementedError(f"fusec.linalg.norm: ord={ord!r} of a matrix")
    return vector_norm(x, axis=axis, keepdims=keepdims, ord=ord)


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


cross = _missing("linalg.cross")
eig = _missing("linalg.eig", "fusec has eigh (Hermitian) only")
eigvals = _missing("linalg.eigvals", "fusec has eigvalsh (Hermitian) only")
