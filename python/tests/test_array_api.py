"""Against array-api-strict, the standard's reference behaviour: type promotion (arrays and
Python scalars), broadcasting, and the result shapes of the shape-changing functions. Where
the standard leaves a case undefined (array-api-strict raises TypeError, e.g. int + float
arrays), fusec follows NumPy; the tests check only what the standard defines."""
import itertools

import array_api_strict as xp
import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import fusec

xp.set_array_api_strict_flags(api_version="2023.12")

NAMES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
         "float32", "float64", "complex64", "complex128"]


def pair(name, shape=(2,)):
    data = np.ones(shape, dtype=name)
    return xp.asarray(data), fusec.asarray(data)


def name_of(dtype):
    return str(dtype).rsplit(".", 1)[-1]  # array-api-strict's dtypes print as its module's


def same_dtype(f, s):
    assert str(f.dtype) == name_of(s.dtype), f"fusec {f.dtype}, array-api-strict {s.dtype}"


@pytest.mark.parametrize("a, b", list(itertools.product(NAMES, NAMES)))
def test_promotion_of_arrays(a, b):
    (sa, fa), (sb, fb) = pair(a), pair(b)
    try:
        want = xp.result_type(sa, sb)
    except TypeError:
        return  # not defined by the standard (mixed kinds)
    assert str(fusec.result_type(fa, fb)) == name_of(want)
    for op in ("__add__", "__mul__", "__eq__", "__lt__", "__and__", "__truediv__"):
        try:
            s = getattr(sa, op)(sb)
        except TypeError:
            continue
        same_dtype(getattr(fa, op)(fb), s)
    sc, fc = pair("bool")
    same_dtype(fusec.where(fc, fa, fb), xp.where(sc, sa, sb))


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("scalar", [1, 0.5, True, 1j, -1])
@pytest.mark.parametrize("op", ["__add__", "__radd__", "__mul__", "__rtruediv__", "__lt__",
                                "__pow__", "__and__", "__floordiv__"])
def test_promotion_with_python_scalars(name, scalar, op):
    sa, fa = pair(name)
    try:
        s = getattr(sa, op)(scalar)
    except (TypeError, ValueError, OverflowError):
        return  # the standard does not define it
    if s is NotImplemented:
        return
    same_dtype(getattr(fa, op)(scalar), s)


@given(hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=4, max_side=3),
       st.booleans())
def test_broadcasting(shapes, break_one):
    ins = list(shapes.input_shapes)
    if break_one and ins[0] and ins[0][-1] == 1:
        ins[0] = ins[0][:-1] + (7,)
    s_arr = [xp.zeros(s) for s in ins]
    f_arr = [fusec.zeros(s) for s in ins]
    try:
        want = (s_arr[0] + s_arr[1] * s_arr[2]).shape
    except ValueError:
        with pytest.raises(ValueError):
            f_arr[0] + f_arr[1] * f_arr[2]
        return
    assert (f_arr[0] + f_arr[1] * f_arr[2]).shape == want
    assert fusec.where(f_arr[0] > 0, f_arr[1], f_arr[2]).shape == \
        xp.where(s_arr[0] > 0, s_arr[1], s_arr[2]).shape
    assert [a.shape for a in fusec.broadcast_arrays(*f_arr)] == \
        [a.shape for a in xp.broadcast_arrays(*s_arr)]


@given(hnp.array_shapes(min_dims=1, max_dims=4, max_side=3), st.data())
def test_reduction_and_manipulation_shapes(shape, data):
    s, f = xp.zeros(shape), fusec.zeros(shape)
    nd = len(shape)
    axis = data.draw(st.one_of(st.none(), st.integers(-nd, nd - 1),
                               st.lists(st.integers(0, nd - 1), unique=True).map(tuple)))
    keepdims = data.draw(st.booleans())
    for name in ("sum", "prod", "mean", "max", "min", "any", "all", "std", "var"):
        if name in ("max", "min") and 0 in shape:
            continue
        assert getattr(fusec, name)(f, axis=axis, keepdims=keepdims).shape == \
            getattr(xp, name)(s, axis=axis, keepdims=keepdims).shape, name
    if not isinstance(axis, tuple):
        if 0 not in shape:
            assert fusec.argmax(f, axis=axis, keepdims=keepdims).shape == \
                xp.argmax(s, axis=axis, keepdims=keepdims).shape
        ax = -1 if axis is None else axis
        assert fusec.sort(f, axis=ax).shape == xp.sort(s, axis=ax).shape
        assert fusec.cumulative_sum(f, axis=ax).shape == xp.cumulative_sum(s, axis=ax).shape
        assert fusec.expand_dims(f, axis=ax).shape == xp.expand_dims(s, axis=ax).shape
        assert fusec.concat([f, f], axis=ax).shape == xp.concat([s, s], axis=ax).shape
        assert fusec.stack([f, f], axis=ax).shape == xp.stack([s, s], axis=ax).shape
        assert fusec.flip(f, axis=ax).shape == xp.flip(s, axis=ax).shape
    perm = tuple(data.draw(st.permutations(range(nd))))
    assert fusec.permute_dims(f, perm).shape == xp.permute_dims(s, perm).shape
    assert fusec.reshape(f, (-1,)).shape == xp.reshape(s, (-1,)).shape
    ones = tuple(i for i, n in enumerate(shape) if n == 1)
    assert fusec.squeeze(f, axis=ones).shape == xp.squeeze(s, axis=ones).shape
    if nd >= 2:
        assert fusec.matrix_transpose(f).shape == xp.matrix_transpose(s).shape


@given(st.sampled_from([((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 1, 3), (5, 3, 2)),
                        ((4, 2, 3), (3, 2)), ((2, 3), (4, 3)), ((0, 3), (3, 2))]))
def test_matmul_and_tensordot_shapes(shapes):
    (s1, f1), (s2, f2) = pair("float64", shapes[0]), pair("float64", shapes[1])
    try:
        want = (s1 @ s2).shape
    except ValueError:
        with pytest.raises(ValueError):
            f1 @ f2
        return
    assert (f1 @ f2).shape == want
    assert fusec.tensordot(f1, f2, axes=1).shape == xp.tensordot(s1, s2, axes=1).shape \
        if shapes[0][-1] == shapes[1][0] else True


def test_namespace_has_the_standard_names():
    names = [n for n in dir(xp) if not n.startswith("_") and n not in (
        "linalg", "fft", "set_array_api_strict_flags", "get_array_api_strict_flags",
        "reset_array_api_strict_flags", "ArrayAPIStrictFlags", "Device", "Array",
        "__array_api_version__", "__version__", "inspect", "__inspect__") and not n[0].isupper()]
    missing = [n for n in names if not hasattr(fusec, n)]
    # What fusec has not bound yet is listed in the README; everything else must be here.
    assert not missing, missing
    info = fusec.__array_namespace_info__()
    assert info.capabilities()["boolean indexing"]
    assert set(info.dtypes()) == set(NAMES)
    assert info.default_dtypes()["real floating"] == fusec.float64
