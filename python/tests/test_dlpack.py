"""DLPack and __cuda_array_interface__: zero-copy exchange with NumPy on the host backend, with
PyTorch and CuPy on the GPU (those tests skip, visibly, where there is none)."""
import gc

import numpy as np
import pytest

import fusec

from conftest import check

GPU = fusec.current_context().backend == "cuda"
DL_CPU, DL_CUDA = 1, 2


def address(a):
    """The data address of a NumPy array."""
    return a.__array_interface__["data"][0]


def random_of(dtype, shape, seed=7):
    rng = np.random.default_rng(seed)
    v = rng.standard_normal(shape) * 10 + 0.5
    if np.dtype(dtype).kind == "c":
        v = v + 1j * rng.standard_normal(shape)
    if np.dtype(dtype).kind == "b":
        v = v > 0.5
    return v.astype(dtype)


DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64", "complex64", "complex128"]


@pytest.mark.skipif(GPU, reason="host backend: NumPy's memory is the context's")
@pytest.mark.parametrize("dtype", DTYPES)
def test_numpy_round_trip_is_zero_copy(dtype):
    x = random_of(dtype, (5, 7))
    f = fusec.from_dlpack(x)
    check(f, x)
    back = np.from_dlpack(f)
    assert address(back) == address(x), "fusec handed back another buffer"
    np.testing.assert_array_equal(back, x)


@pytest.mark.skipif(GPU, reason="host backend")
def test_fusec_values_go_to_numpy_and_stay_valid():
    x = random_of("float32", (64, 33))
    y = fusec.asarray(x) * 3 - 1
    n = np.from_dlpack(y)
    want = x * np.float32(3) - np.float32(1)
    np.testing.assert_array_equal(n, want)
    del y
    gc.collect()
    np.testing.assert_array_equal(n, want)  # the capsule holds the memory, not the array
    v = fusec.asarray(x)
    cap = v.__dlpack__(max_version=(1, 0))
    assert "dltensor_versioned" in repr(cap)
    assert "dltensor" in repr(v.__dlpack__())


@pytest.mark.skipif(GPU, reason="host backend")
@pytest.mark.parametrize("view", ["T", "rows", "flip", "cols"])
def test_strided_numpy_arrays_import_as_views(view):
    x = random_of("float64", (12, 10))
    v = {"T": x.T, "rows": x[::3], "flip": x[::-1, 2:], "cols": x[:, 1::2]}[view]
    check(fusec.from_dlpack(v), v)


@pytest.mark.skipif(GPU, reason="host backend")
def test_devices_and_errors():
    a = fusec.arange(6, dtype=fusec.float32)
    assert a.__dlpack_device__() == (DL_CPU, 0)
    assert not hasattr(a, "__cuda_array_interface__")
    with pytest.raises(BufferError):
        a.__dlpack__(dl_device=(DL_CUDA, 0))
    cap = a.__dlpack__()
    fusec.from_dlpack(cap)
    with pytest.raises(TypeError, match="capsule"):
        fusec.from_dlpack(cap)  # consumed
    with pytest.raises(TypeError):
        fusec.from_dlpack(object())
    assert fusec.from_dlpack(a) is a
    c = fusec.from_dlpack(a, copy=True)
    assert c is not a
    check(c, np.arange(6, dtype=np.float32))


# ---- the GPU: PyTorch and CuPy, same pointer both ways ------------------------------------

def gpu_lib(name):
    if not GPU:
        pytest.skip("no GPU: the CUDA backend is not in use")
    return pytest.importorskip(name)


def test_torch_round_trip_is_zero_copy():
    torch = gpu_lib("torch")
    t = torch.rand(1000, 37, device="cuda", dtype=torch.float32)
    f = fusec.from_dlpack(t)
    check(f * 2, (t * 2).cpu().numpy())
    back = torch.from_dlpack(f)
    assert back.data_ptr() == t.data_ptr(), "not the same memory"
    g = fusec.sin(f) + 1
    tg = torch.from_dlpack(g)
    torch.testing.assert_close(tg, torch.sin(t) + 1, rtol=2e-6, atol=2e-6)
    again = fusec.from_dlpack(tg)
    assert torch.from_dlpack(again).data_ptr() == tg.data_ptr()


def test_cupy_round_trip_is_zero_copy():
    cp = gpu_lib("cupy")
    c = cp.random.random((513, 9), dtype=cp.float64)
    f = fusec.from_dlpack(c)
    check(f + 1, cp.asnumpy(c) + 1)
    back = cp.from_dlpack(f)
    assert back.data.ptr == c.data.ptr
    g = fusec.exp(f)
    viaiface = cp.asarray(g)  # __cuda_array_interface__
    ptr = g.__cuda_array_interface__["data"][0]
    assert viaiface.data.ptr == ptr
    np.testing.assert_allclose(cp.asnumpy(viaiface), np.exp(cp.asnumpy(c)), rtol=1e-14)
