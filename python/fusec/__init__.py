"""fusec: NumPy-style arrays on a fusing JIT compiler for NVIDIA GPUs.

    import fusec as fc
    x = fc.asarray(numpy_array)            # to the device (the host backend without a GPU)
    y = fc.tanh(fc.sin(x) + 0.1 * x)       # lazy: builds fusec's graph
    print(y[:5])                           # evaluates: one fused kernel, compiled and cached

Operations are lazy and fuse; values are computed when Python needs them (repr, float(),
bool(), numpy.asarray(a), a.get(), fusec.asnumpy(a)) or when fusec.eval(*arrays) asks.
Python scalars are weak, as in NumPy 2 (float32 array * 0.1 stays float32). Namespaces:
fusec.linalg, fusec.fft, fusec.random. fusec.fuse traces a function once per signature and
replays it; ElementwiseKernel, ReductionKernel, RawKernel and RawModule take CUDA C; Stream and
Event order and time work. The array API standard (2023.12) is here under its names:
`x.__array_namespace__()` is this module.
"""
from . import _fusec
from ._fusec import AxisError, Context, current_context, eval  # noqa: F401
from ._dtypes import (bfloat16, bool_, complex64, complex128, float16, float32,  # noqa: F401
                      float64, int8, int16, int32, int64, uint8, uint16, uint32, uint64)
from ._array import ndarray
from ._functions import *  # noqa: F401,F403
from ._functions import (__array_namespace_info__, abs, all, any, asarray, max,  # noqa: F401
                         min, pow, round, sum)
from . import _functions
from ._fuse import fuse  # noqa: F401
from ._user import (ElementwiseKernel, Event, RawKernel, RawModule,  # noqa: F401
                    ReductionKernel, Stream, get_elapsed_time)

bool = bool_  # the array API's name; builtins.bool stays reachable through `builtins`

__version__ = "0.1.0"
__array_api_version__ = "2023.12"

_fusec._set_hooks(ndarray, _functions.asarray)

from . import fft, linalg, random  # noqa: E402,F401

__all__ = [n for n in dir(_functions) if not n.startswith("_")] + [
    "ndarray", "Context", "current_context", "eval", "fuse", "ElementwiseKernel",
    "ReductionKernel", "RawKernel", "RawModule", "Stream", "Event", "get_elapsed_time",
    "AxisError", "fft", "linalg", "random", "bool", "bool_", "bfloat16", "int8", "int16",
    "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "float32", "float64",
    "complex64", "complex128"]
