"""User kernels, raw modules, streams and events. The host backend builds kernel calls (dtypes
and shapes checked) but runs no CUDA C; the GPU tests skip without a GPU (FUSEC_BACKEND=cuda
or a GPU context runs them)."""
import numpy as np
import pytest

import fusec

ON_GPU = fusec.current_context().backend == "cuda"
gpu = pytest.mark.skipif(not ON_GPU, reason="needs a GPU: user kernels are CUDA C, which the "
                         "host backend does not run")

AXPB = fusec.ElementwiseKernel("T x, T y, float64 a", "T z", "z = a * x + y", "axpb")
L2 = fusec.ReductionKernel("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm")
RAW = r'''
extern "C" __global__ void scale(float *x, float s, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] * s;
}
'''


def test_kernel_calls_build_lazily_with_dtypes_and_shapes():
    x = fusec.ones((3, 4), "float32")
    z = AXPB(x, fusec.ones(4, "float32"), 2.0)
    assert isinstance(z, fusec.ndarray) and z.shape == (3, 4) and z.dtype == np.float32
    r = L2(x, axis=1)
    assert r.shape == (3,) and r.dtype == np.float32
    assert L2(x, axis=1, keepdims=True).shape == (3, 1) and L2(x).shape == ()
    with pytest.raises(TypeError):  # the placeholder T bound to two dtypes
        AXPB(x, fusec.ones(4, "float64"), 2.0)
    with pytest.raises(ValueError):  # shapes that do not broadcast
        AXPB(x, fusec.ones(5, "float32"), 2.0)
    with pytest.raises(TypeError, match="takes 3 inputs"):
        AXPB(x)
    with pytest.raises(ValueError):  # a malformed declaration
        fusec.ElementwiseKernel("float32", "float32 y", "y = 1", "bad")


@pytest.mark.skipif(ON_GPU, reason="the host backend's refusal")
def test_host_refuses_to_run_cuda_c():
    x = fusec.ones(4, "float32")
    with pytest.raises(NotImplementedError, match="CUDA backend"):
        fusec.asnumpy(AXPB(x, x, 1.0))
    with pytest.raises(NotImplementedError, match="CUDA backend"):
        fusec.RawModule(code=RAW)


def test_raw_module_compiles_without_a_gpu():
    m = fusec.RawModule(code=RAW, _compile_only=True)
    try:
        m.compile("sm_90")
    except RuntimeError as e:  # no NVRTC on this machine
        pytest.skip(f"NVRTC is not available: {e}")
    bad = fusec.RawModule(code="extern \"C\" __global__ void f( {", _compile_only=True)
    with pytest.raises(RuntimeError):
        bad.compile("sm_90")


@gpu
def test_elementwise_and_reduction_values():
    a, b = np.arange(12.0).reshape(3, 4), np.arange(4.0)
    z = AXPB(fusec.asarray(a), fusec.asarray(b), 3.0)
    np.testing.assert_allclose(fusec.asnumpy(z + 1), 3 * a + b + 1)
    np.testing.assert_allclose(fusec.asnumpy(L2(fusec.asarray(a), axis=0)),
                               np.sqrt((a * a).sum(0)))
    out = fusec.zeros((3, 4))
    AXPB(fusec.asarray(a), fusec.asarray(b), 1.0, out)
    np.testing.assert_allclose(fusec.asnumpy(out), a + b)


@gpu
def test_raw_kernel_launch_writes_its_arguments():
    k = fusec.RawKernel(RAW, "scale")
    x = fusec.asarray(np.arange(100, dtype=np.float32))
    before = x
    k((1,), (128,), (x, np.float32(2.0), 100))
    assert before is x
    np.testing.assert_allclose(fusec.asnumpy(x), np.arange(100) * 2)
    m = fusec.RawModule(code=RAW)
    m.get_function("scale")((1,), (128,), (x, np.float32(0.5), 100))
    np.testing.assert_allclose(fusec.asnumpy(x), np.arange(100))


def test_streams_and_events():
    s = fusec.Stream()
    x = fusec.asarray(np.arange(6.0))
    start = s.record()
    with s:
        y = x * 2 + 1
        fusec.eval(y)
        v = fusec.asnumpy(y.sum())
    end = s.record()
    s.synchronize()
    end.synchronize()
    assert v == 36.0 and start.done and s.done
    ms = fusec.get_elapsed_time(start, end)
    assert ms >= 0 and start.elapsed_time(end) == ms
    other = fusec.Stream()
    other.wait_event(end)
    with other:
        np.testing.assert_array_equal(fusec.asnumpy(y - 1), np.arange(6.0) * 2)
    fusec.Stream.null.synchronize()
    ev = fusec.Event()
    with pytest.raises(ValueError):  # never recorded
        fusec.get_elapsed_time(ev, end)
    assert "Stream" in repr(s)
