"""Operators against NumPy (hypothesis): every dtype pair, broadcasting, Python scalars (weak,
as NumPy 2), reflected and in-place forms, and the errors NumPy raises."""
import operator

import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import fusec
from conftest import DTYPES, check

BINARY = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
    "//": operator.floordiv, "%": operator.mod, "**": operator.pow, "<": operator.lt,
    "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq,
    "!=": operator.ne, "&": operator.and_, "|": operator.or_, "^": operator.xor,
    "<<": operator.lshift, ">>": operator.rshift,
}
INPLACE = {"+": operator.iadd, "-": operator.isub, "*": operator.imul, "/": operator.itruediv,
           "//": operator.ifloordiv, "%": operator.imod, "&": operator.iand,
           "|": operator.ior, "^": operator.ixor}


def values(seed, shape, dtype, op=None, rhs=False):
    """Small, exactly representable values; no zero divisors, no negative integer powers and
    shifts within the width, where NumPy's result is itself undefined or an error."""
    rng = np.random.default_rng(seed)
    d = np.dtype(dtype)
    lo = 0 if d.kind in "ub" else -9
    v = rng.integers(lo, 10, size=shape)
    if d.kind in "fc":
        v = v + rng.integers(0, 4, size=shape) / 4
    if d.kind == "c":
        v = v + 1j * rng.integers(-4, 4, size=shape) / 2
    if rhs and op in ("/", "//", "%") and d.kind in "iu":
        v = np.where(v == 0, 3, v)
    if rhs and op == "**":
        v = np.abs(v) % 4
    if rhs and op in ("<<", ">>"):
        v = np.abs(v) % 7
    return np.asarray(v).astype(d)


def compare(op, a, b):
    """fusec's op on the same operands gives NumPy's result, or NumPy's error type."""
    fa = fusec.asarray(a) if isinstance(a, np.ndarray) else a
    fb = fusec.asarray(b) if isinstance(b, np.ndarray) else b
    with np.errstate(all="ignore"):
        try:
            want = BINARY[op](a, b)
        except (TypeError, ValueError, OverflowError) as e:
            kind = TypeError if isinstance(e, TypeError) else type(e)
            with pytest.raises(kind):
                BINARY[op](fa, fb).get()
            return
    rtol = None
    if op in ("**", "/") and np.asarray(want).dtype.kind in "fc":
        rtol = 2e-3 if np.asarray(want).dtype.itemsize <= 4 else 1e-12
    if np.asarray(want).dtype == np.float16:
        rtol = 2e-3
    check(BINARY[op](fa, fb), want, rtol=rtol, atol=1e-6 if op == "**" else 0)


@given(st.sampled_from(sorted(BINARY)), st.sampled_from(DTYPES), st.sampled_from(DTYPES),
       hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=4),
       st.integers(0, 2**32 - 1))
def test_binary_operators(op, da, db, shapes, seed):
    sa, sb = shapes.input_shapes
    a, b = values(seed, sa, da), values(seed + 1, sb, db, op, rhs=True)
    compare(op, a, b)


@given(st.sampled_from(sorted(BINARY)), st.sampled_from(DTYPES),
       st.sampled_from([0, 1, 3, -2, 1000, 2**40, 0.5, -2.25, 1e10, True, False, 2j, 1 - 1j]),
       st.booleans(), st.integers(0, 2**32 - 1))
def test_python_scalars_are_weak(op, dtype, scalar, reflected, seed):
    a = values(seed, (2, 3), dtype)
    if op == "**" and not reflected and isinstance(scalar, int) and scalar < 0:
        scalar = 2
    if op in ("<<", ">>") and isinstance(scalar, int) and not isinstance(scalar, bool):
        scalar = abs(scalar) % 7
    if op in ("/", "//", "%") and not reflected and scalar == 0:
        scalar = 3
    if reflected:
        if op in ("/", "//", "%", "**"):
            a = np.where(a == 0, np.ones_like(a), a)
        compare(op, scalar, a)
    else:
        compare(op, a, scalar)


@given(st.sampled_from(sorted(INPLACE)), st.sampled_from(DTYPES), st.sampled_from(DTYPES),
       st.integers(0, 2**32 - 1))
def test_inplace_keeps_dtype_and_object(op, da, db, seed):
    a, b = values(seed, (3, 4), da), values(seed + 1, (4,), db, op, rhs=True)
    x = fusec.asarray(a)
    alias = x
    with np.errstate(all="ignore"):
        try:
            want = INPLACE[op](a.copy(), b)
        except TypeError:
            with pytest.raises(TypeError):
                INPLACE[op](x, fusec.asarray(b))
            return
    x = INPLACE[op](x, fusec.asarray(b))
    assert x is alias
    check(x, want, rtol=2e-3 if want.dtype == np.float16 else None)


def test_inplace_cannot_grow():
    x = fusec.zeros((3,))
    with pytest.raises(ValueError):
        x += fusec.zeros((2, 3))


@pytest.mark.parametrize("dtype", DTYPES)
def test_unary_operators(dtype):
    a = values(7, (3, 4), dtype)
    x = fusec.asarray(a)
    for fn in (operator.neg, operator.pos, abs, operator.invert):
        try:
            want = fn(a)
        except TypeError:
            with pytest.raises(TypeError):
                fn(x)
            continue
        check(fn(x), want)


@given(st.sampled_from(["float32", "float64", "int32", "complex64", "bool"]),
       st.sampled_from([((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)),
                        ((5, 2, 3), (3, 2)), ((1, 2, 3), (4, 3, 2)), ((2,), (3,))]),
       st.integers(0, 2**32 - 1))
def test_matmul(dtype, shapes, seed):
    a, b = values(seed, shapes[0], dtype), values(seed + 1, shapes[1], dtype)
    try:
        want = a @ b
    except ValueError:
        with pytest.raises(ValueError):
            fusec.asarray(a) @ fusec.asarray(b)
        return
    check(fusec.asarray(a) @ fusec.asarray(b), want, rtol=1e-5 if "32" in dtype else None)
    check(a @ fusec.asarray(b), want, rtol=1e-5 if "32" in dtype else None)


def test_divmod_and_overflow():
    a = np.asarray([7, -7, 5], np.int16)
    q, r = divmod(fusec.asarray(a), 3)
    check(q, a // 3)
    check(r, a % 3)
    with pytest.raises(OverflowError):
        fusec.asarray(np.zeros(2, np.uint8)) + 300
    with pytest.raises(OverflowError):
        fusec.asarray(np.zeros(2, np.int8)) * -1000
    with pytest.raises(TypeError):
        fusec.asarray([1.0]) + "x"
    assert (fusec.asarray([1.0]) == "x") is False
