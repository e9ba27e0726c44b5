"""Indexing and setitem against NumPy (hypothesis): basic keys (ints, slices with any step,
Ellipsis, None), integer arrays, boolean masks, and x[key] = value."""
import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import fusec
from conftest import check

shapes = hnp.array_shapes(min_dims=1, max_dims=4, min_side=0, max_side=5)


def base(shape, dtype="int32"):
    return (np.arange(int(np.prod(shape))) % 97).astype(dtype).reshape(shape)


@given(st.data(), shapes)
def test_basic_indexing(data, shape):
    a = base(shape)
    key = data.draw(hnp.basic_indices(shape, allow_newaxis=True, allow_ellipsis=True))
    check(fusec.asarray(a)[key], a[key])


@given(st.data(), hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5))
def test_integer_array_indexing(data, shape):
    a = base(shape, "float32")
    key = data.draw(hnp.integer_array_indices(shape, result_shape=hnp.array_shapes(
        min_dims=0, max_dims=2, max_side=3)))
    check(fusec.asarray(a)[key], a[key])
    fkey = tuple(fusec.asarray(k) for k in key)
    check(fusec.asarray(a)[fkey], a[key])


@given(st.data(), hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=5))
def test_boolean_masks(data, shape):
    a = base(shape, "float64")
    ndims = data.draw(st.integers(1, len(shape)))
    mask = data.draw(hnp.arrays(np.bool_, shape[:ndims]))
    x = fusec.asarray(a)
    check(x[fusec.asarray(mask)], a[mask])
    check(x[x > 3], a[a > 3])


@given(st.data(), shapes, st.sampled_from(["int32", "float32", "uint8", "bool"]))
def test_setitem_basic(data, shape, dtype):
    a = base(shape, dtype)
    key = data.draw(hnp.basic_indices(shape, allow_newaxis=True, allow_ellipsis=True))
    sel = a[key]
    value = data.draw(st.sampled_from([
        7, 2.5, True, np.full(np.shape(sel)[-1:], 3, dtype),
        np.arange(int(np.prod(np.shape(sel))), dtype="int64").reshape(np.shape(sel))]))
    x = fusec.asarray(a)
    a = a.copy()
    with np.errstate(all="ignore"):
        a[key] = value
    x[key] = fusec.asarray(value) if isinstance(value, np.ndarray) else value
    check(x, a)


def test_setitem_masks_and_index_arrays():
    a = np.arange(12.0).reshape(3, 4)
    x = fusec.asarray(a)
    a[a > 5] = -1
    x[x > 5] = -1
    check(x, a)
    a[a < 0] = a[a < 0] * 2 - 1
    x[x < 0] = x[x < 0] * 2 - 1
    check(x, a)
    a[[0, 2], 1] = [10, 20]
    x[[0, 2], 1] = fusec.asarray([10.0, 20.0])
    check(x, a)
    a[:, [3, 3]] = 5
    x[:, [3, 3]] = 5
    check(x, a)


def test_index_errors():
    x = fusec.asarray(np.zeros((3, 4)))
    with pytest.raises(IndexError):
        x[3]
    with pytest.raises(IndexError):
        x[0, 0, 0]
    with pytest.raises(IndexError):
        x[1.5]
    with pytest.raises(IndexError):
        x["a"]
    with pytest.raises(ValueError):
        x[::0]
    with pytest.raises(IndexError):
        x[fusec.asarray([True, False])]
    with pytest.raises(IndexError):
        x[2**70]
    with pytest.raises(ValueError):
        x[fusec.asarray([5])].get()  # found on the device, at evaluation
    with pytest.raises(ValueError):
        del x[0]
    with pytest.raises(TypeError):
        x[0] = "a"
