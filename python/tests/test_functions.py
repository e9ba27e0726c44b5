"""The function families against NumPy: elementwise math, reductions and statistics,
manipulation, searching, sorting, sets, linear algebra, FFT, creation, data types."""
import math

import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import fusec
from conftest import DTYPES, NUMERIC, check

rng = np.random.default_rng(1234)
F = rng.uniform(0.1, 0.9, size=(3, 4))          # inside every unary function's domain
I = rng.integers(-5, 6, size=(3, 4))

UNARY_FLOAT = ["abs", "sign", "sqrt", "cbrt", "square", "exp", "exp2", "expm1", "log", "log2",
               "log10", "log1p", "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh",
               "cosh", "tanh", "arcsinh", "arctanh", "floor", "ceil", "rint", "trunc",
               "isnan", "isinf", "isfinite", "signbit", "negative", "positive", "reciprocal",
               "fabs", "deg2rad", "rad2deg", "sinc", "real", "imag", "conj", "angle"]
ARRAY_API_NAMES = {"acos": "arccos", "asin": "arcsin", "atan": "arctan", "acosh": "arccosh",
                   "asinh": "arcsinh", "atanh": "arctanh", "bitwise_invert": "invert",
                   "pow": "power", "atan2": "arctan2", "bitwise_left_shift": "left_shift",
                   "bitwise_right_shift": "right_shift"}


@pytest.mark.parametrize("name", UNARY_FLOAT)
@pytest.mark.parametrize("dtype", ["float32", "float64", "int16"])
def test_unary_math(name, dtype):
    a = F.astype(dtype) if dtype != "int16" else I.astype(dtype)
    with np.errstate(all="ignore"):
        want = getattr(np, name)(a)
        got = getattr(fusec, name)(fusec.asarray(a))
        check(got, want, rtol=2e-6 if want.dtype.itemsize <= 4 else 1e-13)


@pytest.mark.parametrize("api, np_name", sorted(ARRAY_API_NAMES.items()))
def test_array_api_names(api, np_name):
    assert getattr(fusec, api) is getattr(fusec, np_name)


@pytest.mark.parametrize("name", ["arctan2", "hypot", "logaddexp", "logaddexp2", "copysign",
                                  "nextafter", "fmod", "fmax", "fmin", "maximum", "minimum",
                                  "heaviside", "float_power", "logical_and", "logical_xor"])
def test_binary_math(name):
    a, b = F.astype(np.float32), (F.T @ F)[:1].astype(np.float32) - 0.5
    check(getattr(fusec, name)(fusec.asarray(a), fusec.asarray(b)), getattr(np, name)(a, b),
          rtol=1e-6)


def test_where_clip_round_isclose():
    a = np.linspace(-2, 2, 12).reshape(3, 4)
    x = fusec.asarray(a)
    check(fusec.where(x > 0, x, 0.0), np.where(a > 0, a, 0.0))
    check(fusec.clip(x, -1, 1), np.clip(a, -1, 1))
    check(fusec.clip(x, max=0.5), np.clip(a, None, 0.5))
    check(fusec.round(x * 10, 1), np.round(a * 10, 1))
    check(fusec.isclose(x, x + 1e-9), np.isclose(a, a + 1e-9))
    assert fusec.allclose(x, a) and not fusec.allclose(x, a + 1)
    r = fusec.where(x > 0)
    w = np.where(a > 0)
    assert len(r) == 2 and all(np.array_equal(fusec.asnumpy(p), q) for p, q in zip(r, w))


REDUCTIONS = ["sum", "prod", "mean", "max", "min", "any", "all", "nansum", "nanprod", "nanmean",
              "nanmax", "nanmin", "count_nonzero"]


@given(st.sampled_from(REDUCTIONS), st.sampled_from(["float32", "float64", "int32", "uint8",
                                                     "bool", "complex128"]),
       hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4), st.data())
def test_reductions(name, dtype, shape, data):
    a = (rng.integers(0, 4, size=shape) * 0.75).astype(dtype)
    axis = data.draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1),
                               st.lists(st.integers(0, len(shape) - 1), unique=True,
                                        max_size=len(shape)).map(tuple)))
    keepdims = data.draw(st.booleans())
    if name in ("max", "min", "nanmax", "nanmin") and dtype.startswith("complex"):
        return
    want = getattr(np, name)(a, axis=axis, keepdims=keepdims)
    check(getattr(fusec, name)(fusec.asarray(a), axis=axis, keepdims=keepdims), want,
          rtol=1e-5 if "32" in dtype or dtype in ("uint8", "bool", "int32") and name in (
              "mean", "nanmean") else None)


@pytest.mark.parametrize("name", ["var", "std"])
@pytest.mark.parametrize("axis, correction", [(None, 0), (0, 1), ((0, 2), 0), (-1, 1)])
def test_var_std(name, axis, correction):
    a = rng.normal(size=(3, 4, 5))
    want = getattr(np, name)(a, axis=axis, ddof=correction)
    check(getattr(fusec, name)(fusec.asarray(a), axis=axis, correction=correction), want,
          rtol=1e-12)


def test_arg_and_cumulative():
    a = rng.integers(0, 5, size=(4, 5)).astype(np.float32)
    x = fusec.asarray(a)
    for axis in (None, 0, 1, -1):
        check(fusec.argmax(x, axis=axis), np.argmax(a, axis=axis))
        check(fusec.argmin(x, axis=axis, keepdims=True), np.argmin(a, axis=axis,
                                                                   keepdims=True))
        check(fusec.cumsum(x, axis=axis), np.cumsum(a, axis=axis))
    check(fusec.cumulative_sum(x, axis=1, include_initial=True),
          np.concatenate([np.zeros((4, 1), np.float32), np.cumsum(a, axis=1)], axis=1))
    check(fusec.cumulative_prod(x[0]), np.cumprod(a[0]))
    check(fusec.diff(x, axis=1), np.diff(a, axis=1))
    check(fusec.diff(x, axis=0, n=2), np.diff(a, axis=0, n=2))


def test_manipulation():
    a = np.arange(24).reshape(2, 3, 4)
    x = fusec.asarray(a)
    check(fusec.reshape(x, (4, -1)), a.reshape(4, -1))
    check(fusec.permute_dims(x, (2, 0, 1)), np.transpose(a, (2, 0, 1)))
    check(fusec.moveaxis(x, 0, -1), np.moveaxis(a, 0, -1))
    check(fusec.moveaxis(x, (0, 1), (2, 0)), np.moveaxis(a, (0, 1), (2, 0)))
    check(fusec.expand_dims(x, axis=1), np.expand_dims(a, 1))
    check(fusec.expand_dims(x, axis=(0, -1)), np.expand_dims(a, (0, -1)))
    check(fusec.squeeze(fusec.expand_dims(x, axis=0), axis=0), a)
    check(fusec.flip(x, axis=(0, 2)), np.flip(a, (0, 2)))
    check(fusec.flip(x), np.flip(a))
    check(fusec.roll(x, 2, axis=2), np.roll(a, 2, axis=2))
    check(fusec.roll(x, -5), np.roll(a, -5))
    check(fusec.roll(x, (1, 2), axis=(0, 1)), np.roll(a, (1, 2), axis=(0, 1)))
    check(fusec.tile(x, (2, 1, 1)), np.tile(a, (2, 1, 1)))
    check(fusec.repeat(x, 2, axis=1), np.repeat(a, 2, axis=1))
    check(fusec.concat([x, x], axis=2), np.concatenate([a, a], axis=2))
    check(fusec.concat([x, x], axis=None), np.concatenate([a, a], axis=None))
    check(fusec.stack([x, x + 1], axis=1), np.stack([a, a + 1], axis=1))
    check(fusec.broadcast_to(x[0, 0], (3, 4)), np.broadcast_to(a[0, 0], (3, 4)))
    b1, b2 = fusec.broadcast_arrays(x, fusec.asarray([1, 2, 3, 4]))
    check(b2, np.broadcast_to([1, 2, 3, 4], a.shape))
    assert [u.shape for u in fusec.unstack(x, axis=1)] == [(2, 4)] * 3
    check(fusec.unstack(x, axis=1)[2], a[:, 2])
    check(fusec.tril(x[0], k=1), np.tril(a[0], 1))
    check(fusec.triu(x[0]), np.triu(a[0]))
    check(fusec.diagonal(x[0]), np.diagonal(a[0]))
    check(fusec.trace(x[0]), np.trace(a[0]))
    check(fusec.vstack([x[0], x[1]]), np.vstack([a[0], a[1]]))
    check(fusec.hstack([x[0, 0], x[1, 0]]), np.hstack([a[0, 0], a[1, 0]]))


def test_searching_sorting_sets():
    a = np.asarray([[3, 1, 2, 3], [0, 5, 5, 1]], np.int32)
    x = fusec.asarray(a)
    for axis in (0, 1, -1):
        check(fusec.sort(x, axis=axis), np.sort(a, axis=axis, kind="stable"))
        check(fusec.argsort(x, axis=axis), np.argsort(a, axis=axis, kind="stable"))
        check(fusec.sort(x, axis=axis, descending=True), -np.sort(-a, axis=axis, kind="stable"))
    check(fusec.argsort(x[0], descending=True), np.asarray([0, 3, 2, 1]))
    nz = fusec.nonzero(x)
    for got, want in zip(nz, np.nonzero(a)):
        check(got, want)
    s = np.asarray([1.0, 2.0, 2.0, 4.0])
    check(fusec.searchsorted(fusec.asarray(s), fusec.asarray([2.0, 3.0, 9.0])),
          np.searchsorted(s, [2.0, 3.0, 9.0]))
    check(fusec.searchsorted(fusec.asarray(s), fusec.asarray([2.0]), side="right"),
          np.searchsorted(s, [2.0], side="right"))
    v, i, inv, c = fusec.unique_all(x)
    wv, wi, winv, wc = np.unique(a, return_index=True, return_inverse=True, return_counts=True)
    for got, want in ((v, wv), (i, wi), (inv, winv), (c, wc)):
        check(got, want)
    check(fusec.unique_values(x), np.unique(a))
    check(fusec.unique_counts(x).counts, wc)
    check(fusec.unique_inverse(x).inverse_indices, winv)
    check(fusec.count_nonzero(x, axis=1), np.count_nonzero(a, axis=1))
    check(fusec.take(x, fusec.asarray([2, 0]), axis=1), np.take(a, [2, 0], axis=1))
    check(fusec.take(x, [7, -1]), np.take(a, [7, -1]))
    check(fusec.take_along_axis(x, fusec.argsort(x, axis=1), axis=1),
          np.take_along_axis(a, np.argsort(a, axis=1, kind="stable"), axis=1))
    check(fusec.argwhere(x), np.argwhere(a))
    check(fusec.isin(x, fusec.asarray([5, 3, 7])), np.isin(a, [5, 3, 7]))
    check(fusec.isin(x, [1], invert=True), np.isin(a, [1], invert=True))
    check(fusec.isin(x, fusec.zeros((0,), dtype="int32")), np.isin(a, []))


def test_linear_algebra():
    a = rng.normal(size=(2, 3, 4))
    b = rng.normal(size=(4, 5))
    x, y = fusec.asarray(a), fusec.asarray(b)
    check(fusec.matmul(x, y), a @ b, rtol=1e-12)
    check(fusec.tensordot(x, y, axes=1), np.tensordot(a, b, axes=1), rtol=1e-12)
    check(fusec.tensordot(x, x, axes=([1, 2], [1, 2])),
          np.tensordot(a, a, axes=([1, 2], [1, 2])), rtol=1e-12)
    check(fusec.vecdot(x, x), np.sum(a * a, axis=-1), rtol=1e-12)
    check(fusec.vecdot(fusec.asarray([[1, 2]], dtype="int32"), fusec.asarray([3, 4],
                                                                             dtype="int32")),
          np.asarray([11], np.int32))
    check(fusec.matrix_transpose(x), np.swapaxes(a, -1, -2))
    check(fusec.einsum("bij,jk->bik", x, y), np.einsum("bij,jk->bik", a, b), rtol=1e-12)
    check(fusec.outer(y[0], y[1]), np.outer(b[0], b[1]))
    check(fusec.dot(y[0], y[1]), np.dot(b[0], b[1]), rtol=1e-12)
    m = rng.normal(size=(3, 3)) + 3 * np.eye(3)
    f = fusec.asarray(m)
    la = fusec.linalg
    check(la.inv(f), np.linalg.inv(m), rtol=1e-10)
    check(la.det(f), np.linalg.det(m), rtol=1e-10)
    check(la.solve(f, fusec.asarray([1.0, 2.0, 3.0])), np.linalg.solve(m, [1.0, 2.0, 3.0]),
          rtol=1e-10)
    sign, logdet = la.slogdet(f)
    check(logdet, np.linalg.slogdet(m).logabsdet, rtol=1e-10)
    spd = m @ m.T
    check(la.cholesky(fusec.asarray(spd)), np.linalg.cholesky(spd), rtol=1e-10)
    check(la.eigvalsh(fusec.asarray(spd)), np.linalg.eigvalsh(spd), rtol=1e-10)
    w, v = la.eigh(fusec.asarray(spd))
    np.testing.assert_allclose(fusec.asnumpy(v @ (w[None, :] * v.T) if False else
                                             v * w[None, :] @ v.T), spd, rtol=1e-10)
    q, r = la.qr(f)
    np.testing.assert_allclose(fusec.asnumpy(q @ r), m, rtol=1e-10, atol=1e-12)
    u, s, vh = la.svd(f, full_matrices=False)
    check(s, np.linalg.svd(m, compute_uv=False), rtol=1e-10)
    check(la.svdvals(f), np.linalg.svd(m, compute_uv=False), rtol=1e-10)
    check(la.matrix_power(f, 3), np.linalg.matrix_power(m, 3), rtol=1e-10)
    check(la.vector_norm(x, axis=-1), np.linalg.norm(a, axis=-1), rtol=1e-12)
    check(la.vector_norm(x, ord=1, axis=(0, 1)), np.sum(np.abs(a), axis=(0, 1)), rtol=1e-12)
    check(la.matrix_norm(f), np.linalg.norm(m, "fro"), rtol=1e-12)
    check(la.norm(y[0]), np.linalg.norm(b[0]), rtol=1e-12)
    with pytest.raises(la.LinAlgError):
        la.inv(fusec.zeros((2, 2))).get()
    with pytest.raises(la.LinAlgError):
        la.inv(fusec.zeros((2, 3)))
    assert issubclass(la.LinAlgError, ValueError)
    with pytest.raises(NotImplementedError, match="eig"):
        la.eig(f)


def test_fft():
    a = rng.normal(size=(4, 6))
    x = fusec.asarray(a)
    ff = fusec.fft
    for norm in ("backward", "ortho", "forward"):
        check(ff.fft(x, norm=norm), np.fft.fft(a, norm=norm), rtol=1e-12, atol=1e-12)
        check(ff.ifft(x, n=8, axis=0, norm=norm), np.fft.ifft(a, n=8, axis=0, norm=norm),
              rtol=1e-12, atol=1e-12)
        check(ff.rfft(x, norm=norm), np.fft.rfft(a, norm=norm), rtol=1e-12, atol=1e-12)
    check(ff.irfft(ff.rfft(x)), np.fft.irfft(np.fft.rfft(a)), rtol=1e-12, atol=1e-12)
    check(ff.fft2(x), np.fft.fft2(a), rtol=1e-12, atol=1e-12)
    check(ff.fftn(x, s=(4, 4), axes=(0, 1)), np.fft.fftn(a, s=(4, 4), axes=(0, 1)), rtol=1e-12,
          atol=1e-12)
    check(ff.rfftn(x), np.fft.rfftn(a), rtol=1e-12, atol=1e-12)
    check(ff.fftshift(x), np.fft.fftshift(a))
    check(ff.ifftshift(x, axes=(1,)), np.fft.ifftshift(a, axes=(1,)))
    for n in (1, 4, 7):
        check(ff.fftfreq(n, d=0.5), np.fft.fftfreq(n, d=0.5), rtol=1e-15)
        check(ff.rfftfreq(n), np.fft.rfftfreq(n), rtol=1e-15)
    check(ff.fft(fusec.asarray(a.astype(np.float32))), np.fft.fft(a.astype(np.float32)),
          rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [None] + DTYPES)
def test_creation(dtype):
    kw = {} if dtype is None else {"dtype": dtype}
    check(fusec.zeros((2, 3), **kw), np.zeros((2, 3), **kw))
    check(fusec.ones(4, **kw), np.ones(4, **kw))
    check(fusec.empty((0, 2), **kw), np.empty((0, 2), **kw))
    check(fusec.full((2, 2), 1, **kw), np.full((2, 2), 1, **kw))
    check(fusec.eye(3, 4, k=1, **kw), np.eye(3, 4, k=1, **kw))
    x = fusec.asarray(np.arange(6).reshape(2, 3))
    check(fusec.zeros_like(x, **kw), np.zeros_like(np.arange(6).reshape(2, 3), **kw))
    check(fusec.full_like(x, 1, **kw), np.full_like(np.arange(6).reshape(2, 3), 1, **kw))
    if dtype not in ("bool", "uint8", "uint16", "uint32", "uint64"):
        check(fusec.arange(-3, 9, 2, **kw), np.arange(-3, 9, 2, **kw), rtol=1e-3)


def test_creation_values():
    check(fusec.full((3,), 2**62, dtype="int64"), np.full((3,), 2**62, np.int64))
    check(fusec.full((2,), 1.5 - 2j), np.full((2,), 1.5 - 2j))
    check(fusec.full((2,), True), np.full((2,), True))
    check(fusec.arange(5), np.arange(5))
    check(fusec.arange(0.5, 3), np.arange(0.5, 3))
    check(fusec.arange(10, 0, -3), np.arange(10, 0, -3))
    check(fusec.linspace(0, 1, 5), np.linspace(0, 1, 5), rtol=1e-15)
    check(fusec.linspace(0, 1, 4, endpoint=False, dtype="float32"),
          np.linspace(0, 1, 4, endpoint=False, dtype=np.float32))
    gx, gy = fusec.meshgrid(fusec.arange(3), fusec.arange(2))
    wx, wy = np.meshgrid(np.arange(3), np.arange(2))
    check(gx, wx)
    check(gy, wy)
    check(fusec.identity(2), np.identity(2))
    with pytest.raises(ZeroDivisionError):
        fusec.arange(0, 3, 0)


def test_data_type_functions():
    for a in NUMERIC + ["bool"]:
        for b in NUMERIC + ["bool"]:
            assert fusec.result_type(a, b) == np.result_type(a, b), (a, b)
            assert fusec.can_cast(a, b) == np.can_cast(a, b), (a, b)
    x = fusec.asarray(np.zeros(2, np.float32))
    assert fusec.result_type(x, 1.0) == np.float32
    assert fusec.result_type(x, 1j) == np.complex64
    assert fusec.result_type(fusec.int8, 1) == np.int8
    assert fusec.finfo(fusec.float32).eps == np.finfo(np.float32).eps
    assert fusec.finfo(x).bits == 32
    assert fusec.iinfo(fusec.int16).max == 32767
    assert fusec.isdtype(fusec.float32, "real floating")
    assert fusec.isdtype(fusec.uint8, ("integral", "bool"))
    assert not fusec.isdtype(fusec.complex64, "real floating")
    assert fusec.isdtype(fusec.int64, fusec.int64)
    check(fusec.astype(x, fusec.int8), np.zeros(2, np.int8))
    assert fusec.e == math.e and fusec.pi == math.pi and math.isnan(fusec.nan)
    assert fusec.inf == math.inf and fusec.newaxis is None


def test_missing_functions_say_so():
    with pytest.raises(NotImplementedError, match="eig"):
        fusec.linalg.eig(fusec.eye(3))


@pytest.mark.parametrize("ord", [None, 2, 1, -1, np.inf, -np.inf, 0, 3, 0.5])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_vector_norms(ord, dtype):
    x = np.random.default_rng(5).standard_normal((3, 4, 5)).astype(dtype)
    x[0, 1, 2] = 0
    o = 2 if ord is None else ord
    with np.errstate(divide="ignore"):  # NumPy's 1 / |0| for the negative orders
        want = np.linalg.vector_norm(x, axis=1, ord=o)
    check(fusec.linalg.vector_norm(fusec.asarray(x), axis=1, ord=o), want,
          rtol=1e-4 if dtype == "float32" else 1e-10)


@pytest.mark.parametrize("ord", ["fro", "nuc", 2, -2, 1, -1, np.inf, -np.inf])
def test_matrix_norms(ord):
    x = np.random.default_rng(6).standard_normal((3, 4, 5))
    a = fusec.asarray(x)
    check(fusec.linalg.matrix_norm(a, ord=ord), np.linalg.matrix_norm(x, ord=ord), rtol=1e-10)
    check(fusec.linalg.norm(a, ord=ord, axis=(2, 0), keepdims=True),
          np.linalg.norm(x, ord=ord, axis=(2, 0), keepdims=True), rtol=1e-10)
    check(fusec.linalg.norm(a[0], ord=ord), np.linalg.norm(x[0], ord=ord), rtol=1e-10)
    with pytest.raises(ValueError):
        fusec.linalg.matrix_norm(a, ord=3)


def test_cross():
    rng = np.random.default_rng(7)
    u, v = rng.standard_normal((4, 3)), rng.standard_normal(3)
    check(fusec.linalg.cross(fusec.asarray(u), fusec.asarray(v)), np.cross(u, v), rtol=1e-12)
    check(fusec.cross(fusec.asarray(u.T), fusec.asarray(u[::-1].T), axis=0),
          np.cross(u.T, u[::-1].T, axis=0), rtol=1e-12)
    with pytest.raises(ValueError, match="size 3"):
        fusec.linalg.cross(fusec.zeros((2, 2)), fusec.zeros((2, 2)))


def test_to_device_copies_between_contexts():
    x = np.arange(12, dtype=np.float32).reshape(3, 4) * 0.5
    a = fusec.asarray(x)
    assert a.to_device(a.device) is a
    with fusec.Context(backend="host") as other:
        b = a.to_device(other)
        assert b.device is other and b is not a
    check(b + 1, x + 1)
    with pytest.raises(TypeError):
        a.to_device("gpu")


# ---- pad, nan_to_num, gelu, pinv / lstsq / matrix_rank, NumPy's positional arguments --------

@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "symmetric"])
@pytest.mark.parametrize("width", [1, (1, 2), ((0, 1), (2, 1))])
def test_pad(mode, width):
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    kw = {"constant_values": 7} if mode == "constant" else {}
    check(fusec.pad(fusec.asarray(a), width, mode, **kw), np.pad(a, width, mode, **kw))
    with pytest.raises(NotImplementedError):
        fusec.pad(fusec.asarray(a), 1, "wrap")


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "int32"])
def test_nan_to_num(dtype):
    a = np.array([np.nan, np.inf, -np.inf, 1.5], dtype=np.float64)
    if dtype.startswith("complex"):
        a = a.astype(np.complex128)
        a.imag = [1.0, -np.inf, np.nan, np.inf]
    a = a.astype(dtype) if dtype != "int32" else np.arange(4, dtype=dtype)
    check(fusec.nan_to_num(fusec.asarray(a)), np.nan_to_num(a))
    check(fusec.nan_to_num(fusec.asarray(a), nan=-1.0, posinf=9.0, neginf=-9.0),
          np.nan_to_num(a, nan=-1.0, posinf=9.0, neginf=-9.0))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gelu(dtype):
    from math import erf, sqrt, tanh, pi

    x = np.linspace(-6, 6, 41).astype(dtype)
    exact = np.array([v * 0.5 * (1 + erf(v / sqrt(2))) for v in x.astype(float)]).astype(dtype)
    approx = np.array([0.5 * v * (1 + tanh(sqrt(2 / pi) * (v + 0.044715 * v ** 3)))
                       for v in x.astype(float)]).astype(dtype)
    check(fusec.gelu(fusec.asarray(x)), exact, atol=1e-6)
    check(fusec.gelu(fusec.asarray(x), approximate="tanh"), approx, atol=1e-6)
    with pytest.raises(ValueError):
        fusec.gelu(fusec.asarray(x), approximate="erf")


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex128"])
def test_pinv_matrix_rank_lstsq(dtype):
    rng = np.random.default_rng(4)
    a = rng.random((2, 5, 3)).astype(dtype)
    a[1, :, 2] = a[1, :, 0]  # rank 2
    la = fusec.linalg
    check(la.pinv(fusec.asarray(a)), np.linalg.pinv(a), rtol=1e-4 if dtype == "float32" else 1e-9)
    check(la.pinv(fusec.asarray(a), rtol=None), np.linalg.pinv(a, rtol=None),
          rtol=1e-4 if dtype == "float32" else 1e-9)
    check(la.matrix_rank(fusec.asarray(a)), np.linalg.matrix_rank(a))
    check(la.matrix_rank(fusec.asarray(a), tol=0.5), np.linalg.matrix_rank(a, tol=0.5))
    m, b = a[0], rng.random(5).astype(dtype)
    got, want = la.lstsq(fusec.asarray(m), fusec.asarray(b)), np.linalg.lstsq(m, b)
    tol = 1e-4 if dtype == "float32" else 1e-9
    check(got.x, want[0], rtol=tol, atol=tol)
    check(got.residuals, want[1], rtol=tol, atol=tol)
    assert int(got.rank) == want[2]
    check(got.s, want[3], rtol=tol)
    with pytest.raises(fusec.linalg.LinAlgError):
        la.lstsq(fusec.asarray(a), fusec.asarray(b))


def test_numpy_functions_with_positional_arguments():
    a = np.arange(24.0).reshape(2, 3, 4)
    x = fusec.asarray(a)
    for got, want in [
        (np.sum(x, 0), np.sum(a, 0)), (np.mean(x, 1), np.mean(a, 1)),
        (np.max(x, 2, None, True), np.max(a, 2, None, True)), (np.std(x, 0), np.std(a, 0)),
        (np.var(x, None, None, None, 1), np.var(a, None, None, None, 1)),
        (np.argmax(x, 1), np.argmax(a, 1)), (np.cumsum(x, 2), np.cumsum(a, 2)),
        (np.transpose(x, (2, 0, 1)), np.transpose(a, (2, 0, 1))),
        (np.reshape(x, (4, 6)), np.reshape(a, (4, 6))),
        (np.concatenate([x, x], 1), np.concatenate([a, a], 1)),
        (np.clip(x, 3, 9), np.clip(a, 3, 9)), (np.where(x > 5, x, -1), np.where(a > 5, a, -1)),
        (np.take(x, [0, 2], 2), np.take(a, [0, 2], 2)), (np.round(x / 7, 2), np.round(a / 7, 2)),
        (np.linalg.norm(x[0]), np.linalg.norm(a[0])), (np.fft.rfft(x, 6), np.fft.rfft(a, 6)),
        (np.stack([x[0], x[1]], 1), np.stack([a[0], a[1]], 1)),
    ]:
        check(got, want, rtol=1e-12, atol=1e-12)
