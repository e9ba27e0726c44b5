"""fusec.fuse: traced once per signature, replayed; values, dtypes and shapes as the same code
run op by op (and as NumPy), and the errors a trace raises."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

import fusec
from conftest import check


def poly(x, y, s):
    return fusec.tanh(x * s) + y ** 2 - fusec.sin(x) / 3.0


def np_poly(x, y, s):
    return np.tanh(x * s) + y ** 2 - np.sin(x) / 3.0


def counted(fn):
    calls = []

    def wrapper(*a, **k):
        calls.append(1)
        return fn(*a, **k)

    return wrapper, calls


@given(st.sampled_from(["float32", "float64"]), st.floats(-3, 3), st.integers(1, 9))
def test_replay_matches_numpy(dtype, s, n):
    rng = np.random.default_rng(n)
    xh, yh = rng.random((n, 3)).astype(dtype), rng.random(3).astype(dtype)
    f = fusec.fuse(poly)
    for k in range(3):  # the trace, then replays with new data and a new scalar
        x, y = fusec.asarray(xh + k), fusec.asarray(yh - k)
        got = f(x, y, s + k)
        check(got, np_poly(xh + k, yh - k, np.asarray(s + k, dtype)[()]), atol=1e-6)
        # the replay is the graph op by op would build: the same values, bit for bit
        np.testing.assert_array_equal(fusec.asnumpy(got), fusec.asnumpy(poly(x, y, s + k)))


def test_traced_once_per_signature():
    body, calls = counted(poly)
    f = fusec.fuse(body)
    x, y = fusec.ones((4,), "float32"), fusec.ones((4,), "float32")
    for s in (0.5, 1.5, 2.5):
        f(x, y, s)
    assert len(calls) == 1  # floats are arguments of the replay
    f(fusec.ones((5,), "float32"), fusec.ones((5,), "float32"), 0.5)  # a new shape
    f(fusec.ones((4,), "float64"), y, 0.5)  # a new dtype
    f(x, y, 2)  # an int is static: keyed by value
    f(x, y, 3)
    assert len(calls) == 5
    assert "5 traced signatures" in repr(f)


def test_weak_scalars_stay_weak():
    f = fusec.fuse(lambda x, s: x * s)
    x = fusec.ones((3,), "float16")
    check(f(x, 0.1), np.ones(3, np.float16) * 0.1)
    check(f(x, 2.5), np.ones(3, np.float16) * 2.5)
    check(f(x, 1 + 2j), np.ones(3, np.float16) * (1 + 2j))


def test_static_arguments_and_control_flow():
    @fusec.fuse
    def f(x, axis, square, mode="sum"):
        if square:
            x = x * x
        return x.sum(axis=axis) if mode == "sum" else x.max(axis=axis)

    a = np.arange(12.0).reshape(3, 4)
    x = fusec.asarray(a)
    check(f(x, 0, True), (a * a).sum(axis=0))
    check(f(x, 1, False), a.sum(axis=1))
    check(f(x, 1, False, mode="max"), a.max(axis=1))
    check(f(x, None, True), (a * a).sum())


def test_several_outputs_and_structure():
    @fusec.fuse
    def f(x):
        return x + 1, "label", [x.mean(), x * 2]

    a = np.arange(6.0)
    for k in range(2):
        r = f(fusec.asarray(a + k))
        check(r[0], a + k + 1)
        assert r[1] == "label"

    @fusec.fuse
    def g(x):
        return [x, -x]

    r = g(fusec.asarray(a))
    assert isinstance(r, list)
    check(r[0], a)
    check(r[1], -a)


def test_numpy_arguments_and_outputs_without_arrays():
    f = fusec.fuse(lambda x, y: x @ y)
    a, b = np.arange(6.0).reshape(2, 3), np.arange(3.0)
    check(f(a, b), a @ b)
    check(f(a + 1, b), (a + 1) @ b)
    assert fusec.fuse(lambda x: None)(fusec.ones(2)) is None


def test_captured_arrays_are_read_at_each_call():
    w = fusec.asarray(np.arange(4.0))
    f = fusec.fuse(lambda x: x * w + w.T)
    x = fusec.ones(4)
    check(f(x), np.arange(4.0) * 2)
    w += 10  # w's object now holds a new value: the replay reads it
    check(f(x), np.arange(4.0) * 2 + 20)
    w2 = w
    w2[...] = fusec.zeros(4)
    check(f(x), np.zeros(4))


def test_result_is_lazy_and_fuses_further():
    f = fusec.fuse(lambda x: fusec.exp(x) - 1)
    a = np.linspace(-1, 1, 7)
    y = f(fusec.asarray(a)) * 2  # more ops on the replayed result
    check(y, (np.exp(a) - 1) * 2)


def test_nested_fused_functions_inline():
    inner = fusec.fuse(lambda x: x + 1)
    outer = fusec.fuse(lambda x: inner(x) * 2)
    a = np.arange(3.0)
    check(outer(fusec.asarray(a)), (a + 1) * 2)
    check(outer(fusec.asarray(a)), (a + 1) * 2)


def test_evaluating_a_traced_value_is_refused():
    @fusec.fuse
    def f(x):
        if (x > 0).any():
            return x
        return -x

    with pytest.raises(TypeError, match="evaluates a traced value"):
        f(fusec.ones(3))
    for bad in (lambda x: float(x.sum()), lambda x: repr(x), lambda x: np.asarray(x),
                lambda x: x[x > 0], lambda x: fusec.eval(x)):
        with pytest.raises(TypeError, match="evaluates a traced value"):
            fusec.fuse(bad)(fusec.ones(3))
    # the failed trace left nothing behind: ordinary code evaluates again
    assert float(fusec.ones(3).sum()) == 3.0


def test_side_effects_are_refused():
    def assign(x):
        x[0] = 5
        return x

    def inplace(x):
        x += 1
        return x

    for fn in (assign, inplace):
        with pytest.raises(TypeError, match="did not make"):
            fusec.fuse(fn)(fusec.zeros(3))

    def local(x):  # assigning into an array the function made is fine
        y = x * 1
        y[0] = 5
        y += 1
        return y

    check(fusec.fuse(local)(fusec.zeros(3)), np.array([6.0, 1.0, 1.0]))


def test_construction_errors_raise_at_the_trace():
    f = fusec.fuse(lambda x, y: x + y)
    with pytest.raises(ValueError):
        f(fusec.ones(3), fusec.ones(4))
    with pytest.raises(TypeError, match="neither an array"):
        f(fusec.ones(3), {})
    other = fusec.Context(backend="host")
    with other:
        y = fusec.ones(3)
    with pytest.raises(ValueError, match="different contexts"):
        f(fusec.ones(3), y)
    assert "0 traced" in repr(f)  # a failed trace is not kept


def test_decorator_forms():
    @fusec.fuse(kernel_name="scaled")
    def f(x):
        return x * 3

    assert f.__name__ == "f" and "scaled" in repr(f)
    check(f(fusec.ones(2, "int32")), np.full(2, 3, np.int32))
    with pytest.raises(TypeError):
        fusec.fuse(1, 2)
    with pytest.raises(TypeError, match="unknown keyword"):
        fusec.fuse(bogus=1)
    f.clear_cache()
    assert "0 traced" in repr(f)
