"""The array type: attributes, dtypes, conversions, evaluation points, repr."""
import math
import pickle

import numpy as np
import pytest

import fusec
from conftest import DTYPES, check


@pytest.mark.parametrize("dtype", DTYPES)
def test_round_trip_every_dtype(dtype):
    a = (np.arange(-5, 7).reshape(3, 4) % 3).astype(dtype)
    x = fusec.asarray(a)
    assert x.dtype == a.dtype and x.dtype == np.dtype(dtype) and x.dtype == dtype
    assert (x.shape, x.ndim, x.size) == ((3, 4), 2, 12)
    check(x, a)
    assert repr(x) == repr(a)
    assert str(x) == str(a)


def test_dtype_objects_compare_with_numpy():
    x = fusec.zeros((2,), dtype=fusec.float32)
    assert x.dtype == np.float32 and x.dtype == fusec.float32 and x.dtype == "float32"
    assert fusec.float32 is np.float32
    assert fusec.asarray([1, 2]).dtype == fusec.int64
    assert fusec.asarray([1.5]).dtype == np.float64
    assert fusec.asarray(True).dtype == fusec.bool


def test_asarray_sources():
    check(fusec.asarray([[1, 2], [3, 4]]), np.asarray([[1, 2], [3, 4]]))
    check(fusec.asarray(2.5), np.asarray(2.5))
    check(fusec.asarray(3 + 1j), np.asarray(3 + 1j))
    check(fusec.asarray(np.float32(1.5)), np.asarray(np.float32(1.5)))
    check(fusec.asarray(np.arange(10)[::3]), np.arange(10)[::3])  # not contiguous
    check(fusec.asarray(np.arange(4, dtype=">i4")), np.arange(4, dtype=np.int32))  # swapped
    check(fusec.asarray([1, 2], dtype=fusec.float16), np.asarray([1, 2], np.float16))
    x = fusec.asarray([1.0, 2.0])
    assert fusec.asarray(x) is x
    check(fusec.asarray(x, dtype="int32"), np.asarray([1, 2], np.int32))
    check(fusec.asarray(np.zeros((0, 3))), np.zeros((0, 3)))
    with pytest.raises(TypeError):
        fusec.asarray(["a", "b"])


def test_conversions_evaluate():
    x = fusec.asarray([[1.5, -2.0], [3.0, 4.0]])
    assert float(x[0, 0]) == 1.5 and int(x[1, 1]) == 4 and complex(x[0, 1]) == -2 + 0j
    assert bool(x[0, 0] > 1) is True and bool(x.sum() > 100) is False
    assert x[1, 1].item() == 4.0 and x.tolist() == [[1.5, -2.0], [3.0, 4.0]]
    assert len(x) == 2 and [r.tolist() for r in x] == [[1.5, -2.0], [3.0, 4.0]]
    assert [1, 2, 3][fusec.asarray(2)] == 3
    with pytest.raises(TypeError):
        [1, 2][fusec.asarray(1.0)]
    with pytest.raises(ValueError):
        bool(x > 0)
    with pytest.raises(TypeError):
        len(fusec.asarray(1.0))
    with pytest.raises(TypeError):
        float(x)
    assert f"{x[0, 0]:.2f}" == "1.50"
    np.testing.assert_array_equal(x.get(), np.asarray(x))
    np.testing.assert_array_equal(fusec.asnumpy(x), [[1.5, -2.0], [3.0, 4.0]])
    assert np.asarray(x, dtype=np.float32).dtype == np.float32


def test_attributes_and_methods():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    x = fusec.asarray(a)
    check(x.T, a.T)
    check(x.mT, np.swapaxes(a, -1, -2))
    check(x.reshape(4, 6), a.reshape(4, 6))
    check(x.reshape((-1,)), a.reshape(-1))
    check(x.transpose(1, 0, 2), a.transpose(1, 0, 2))
    check(x.ravel(), a.ravel())
    check(x.astype(np.int16), a.astype(np.int16))
    check(x.sum(axis=(0, 2)), a.sum(axis=(0, 2)))
    check(x.mean(axis=1, keepdims=True), a.mean(axis=1, keepdims=True))
    check(x.max(), a.max())
    check(x.argmax(axis=2), a.argmax(axis=2))
    check(x.std(axis=0, ddof=1), a.std(axis=0, ddof=1), rtol=1e-5)
    check(x.cumsum(axis=1), a.cumsum(axis=1))
    check(x.swapaxes(0, 2), a.swapaxes(0, 2))
    assert x.itemsize == 4 and x.nbytes == 96
    assert x.device is x.context and x.device.backend in ("host", "cuda")
    assert x.__array_namespace__() is fusec
    y = fusec.asarray([3, 1, 2])
    y.sort()
    check(y, np.asarray([1, 2, 3]))
    with pytest.raises(TypeError):
        fusec.ndarray()
    with pytest.raises(TypeError):
        hash(x)


def test_pickle_and_copy():
    import copy

    x = fusec.asarray([1.0, 2.0])
    check(pickle.loads(pickle.dumps(x)), np.asarray([1.0, 2.0]))
    c = copy.copy(x)
    c[0] = 5
    check(x, np.asarray([1.0, 2.0]))
    check(c, np.asarray([5.0, 2.0]))


def test_eval_keeps_values_and_setitem_rebinds():
    x = fusec.arange(5, dtype=fusec.float32)
    y = x * 2
    fusec.eval(y, x)
    alias = x
    x[1:3] = 7
    check(alias, np.asarray([0, 7, 7, 3, 4], np.float32))
    check(y, np.arange(5, dtype=np.float32) * 2)  # computed before: unchanged


def test_numpy_interop():
    a = np.arange(3.0)
    x = fusec.asarray([1.0, 2.0, 3.0])
    r = a + x
    assert isinstance(r, fusec.ndarray)
    check(r, a + np.asarray([1.0, 2.0, 3.0]))
    check(np.sin(x), np.sin(np.asarray([1.0, 2.0, 3.0])))
    check(np.multiply(a, x), a * np.asarray([1.0, 2.0, 3.0]))


def test_context_manager():
    with fusec.Context(backend="host") as c:
        x = fusec.ones((3,))
        assert x.context is c and fusec.current_context() is c
        check(x + 1, np.full(3, 2.0))
    assert fusec.current_context() is not c
    y = fusec.ones((3,))
    with pytest.raises(ValueError):
        (x + y).get()
    with pytest.raises(ValueError):
        fusec.Context(backend="tpu")


def test_context_fast_math(monkeypatch):
    monkeypatch.delenv("FUSEC_FAST_MATH", raising=False)
    assert fusec.Context(backend="host", fast_math=True).fast_math is True
    assert fusec.Context(backend="host", fast_math=False).fast_math is False
    assert fusec.Context(backend="host").fast_math is False
    monkeypatch.setenv("FUSEC_FAST_MATH", "1")
    assert fusec.Context(backend="host").fast_math is True
    assert fusec.Context(backend="host", fast_math=False).fast_math is False
    with fusec.Context(backend="host", fast_math=True):   # the host backend stays exact
        check(fusec.abs(fusec.asarray(np.asarray([3 + 4j]))) <= 5, np.asarray([True]))


def test_special_values_print_as_numpy():
    a = np.asarray([np.nan, np.inf, -0.0, 1e-300, math.pi], np.float64)
    assert repr(fusec.asarray(a)) == repr(a)


def _f16_boundaries():
    """f64 values at every f16 rounding boundary: each finite f16 value, the midpoints between
    neighbours (ties to even), one f64 step either side of them, the overflow threshold, the
    subnormal range's edges, their negatives, infinities and NaN."""
    h = np.arange(0, 0x7C00, dtype=np.uint16).view(np.float16).astype(np.float64)
    mid = (h[:-1] + h[1:]) / 2  # exact in f64
    top = np.array([65504.0, 65519.0, 65520.0, np.nextafter(65520.0, 0), 65536.0, 1e300,
                    2.0 ** -25, np.nextafter(2.0 ** -25, 1), 2.0 ** -26, 2.0 ** -1074, np.inf])
    v = np.concatenate([h, mid, np.nextafter(mid, np.inf), np.nextafter(mid, -np.inf), top])
    return np.concatenate([v, -v, [np.nan]])


def test_f64_to_f16_rounds_once_at_every_boundary():
    # A value computed in double rounds to f16 once, as NumPy's astype does (on the GPU one
    # conversion instruction; double rounding through f32 would differ at the midpoints).
    a = _f16_boundaries()
    got = np.asarray(fusec.asarray(a).astype(fusec.float16))
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got.view(np.uint16), a.astype(np.float16).view(np.uint16))


@pytest.mark.parametrize("c", [1 + 2.0 ** -11, float(np.nextafter(1 + 2.0 ** -11, 2)), 65519.0,
                               65520.0, 2.0 ** -25, 3 * 2.0 ** -25, 0.1, -1e-8])
def test_weak_float_constants_round_to_f16_once(c):
    # An f16 array times a Python float: the constant becomes f16 first (NEP 50), in each GPU
    # thread's prologue.
    x = np.ones(4099, np.float16)
    got = np.asarray(fusec.asarray(x) * c)
    want = x * c
    assert got.dtype == want.dtype == np.float16
    np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))
