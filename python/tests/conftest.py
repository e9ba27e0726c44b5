"""Shared helpers: comparisons with NumPy that check values, dtypes and shapes."""
import os

import numpy as np
from hypothesis import HealthCheck, settings

import fusec

# Each evaluation runs fusec's whole pipeline; keep the examples few and the deadline off
# (the first evaluation of a shape on the GPU compiles kernels). FUSEC_HYPOTHESIS_EXAMPLES
# raises the count for a longer run.
settings.register_profile(
    "fusec",
    max_examples=int(os.environ.get("FUSEC_HYPOTHESIS_EXAMPLES", "25")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=os.environ.get("FUSEC_HYPOTHESIS_RANDOM") != "1",
)
settings.load_profile("fusec")

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64", "complex64", "complex128"]
NUMERIC = DTYPES[1:]
FLOATS = ["float32", "float64"]


def tolerance(dtype):
    d = np.dtype(dtype)
    if d.kind in "fc":
        return {2: 2e-3, 4: 2e-5, 8: 1e-11, 16: 1e-11}[d.itemsize if d.kind == "f"
                                                            else d.itemsize // 2]
    return 0


def check(got, want, rtol=None, atol=0.0):
    """got (a fusec array) equals want (NumPy's result): type, dtype, shape and values."""
    assert isinstance(got, fusec.ndarray), f"expected a fusec array, got {type(got)}"
    want = np.asarray(want)
    assert got.dtype == want.dtype, f"dtype {got.dtype} != NumPy's {want.dtype}"
    assert got.shape == want.shape, f"shape {got.shape} != NumPy's {want.shape}"
    g = fusec.asnumpy(got)
    assert g.dtype == want.dtype and g.shape == want.shape
    r = tolerance(want.dtype) if rtol is None else rtol
    if r == 0 and atol == 0:
        np.testing.assert_array_equal(g, want)
    else:
        np.testing.assert_allclose(g, want, rtol=r, atol=atol, equal_nan=True)
