"""Dtypes: NumPy's dtype objects, and fusec's codes for them (fc_dtype's order).

`a.dtype` is a numpy.dtype, so `a.dtype == numpy.float32`, `a.dtype == fusec.float32` and
`a.dtype == "float32"` all hold, and NumPy code that inspects dtypes works unchanged.
`fusec.float32` is numpy.float32 (as `cupy.float32` is). bfloat16 is ml_dtypes' when that
package is installed; otherwise bf16 arrays report the stand-in `fusec.bfloat16` (a
_BFloat16 object) and convert to NumPy as float32.
"""
import numpy as np

try:  # optional: NumPy has no bfloat16 of its own
    import ml_dtypes as _ml

    bfloat16 = np.dtype(_ml.bfloat16)
except ImportError:  # pragma: no cover - depends on the environment
    _ml = None

    class _BFloat16:
        """fusec's bfloat16 where ml_dtypes is not installed (NumPy has none)."""

        name = "bfloat16"
        itemsize = 2
        kind = "f"

        def __repr__(self):
            return "dtype('bfloat16')"

        __str__ = lambda self: "bfloat16"  # noqa: E731

        def __eq__(self, other):
            return other is self or other == "bfloat16"

        def __hash__(self):
            return hash("bfloat16")

    bfloat16 = _BFloat16()

bool_ = np.bool_
int8, int16, int32, int64 = np.int8, np.int16, np.int32, np.int64
uint8, uint16, uint32, uint64 = np.uint8, np.uint16, np.uint32, np.uint64
float16, float32, float64 = np.float16, np.float32, np.float64
complex64, complex128 = np.complex64, np.complex128

# fc_dtype's order: FC_BOOL, FC_I8..FC_I64, FC_U8..FC_U64, FC_F16, FC_BF16, FC_F32, FC_F64,
# FC_C64, FC_C128.
DTYPES = (
    np.dtype(np.bool_),
    np.dtype(np.int8), np.dtype(np.int16), np.dtype(np.int32), np.dtype(np.int64),
    np.dtype(np.uint8), np.dtype(np.uint16), np.dtype(np.uint32), np.dtype(np.uint64),
    np.dtype(np.float16), bfloat16, np.dtype(np.float32), np.dtype(np.float64),
    np.dtype(np.complex64), np.dtype(np.complex128),
)
BOOL, F16, BF16, F32, F64, C64, C128 = 0, 9, 10, 11, 12, 13, 14
I64 = 4
_CODES = {d: i for i, d in enumerate(DTYPES)}


def code_of(dtype):
    """fusec's code of a dtype-like (numpy dtype, scalar type, name, fusec array's dtype)."""
    if dtype is bfloat16 or (isinstance(dtype, str) and dtype == "bfloat16"):
        return BF16
    try:
        d = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"fusec: {dtype!r} is not a dtype") from None
    code = _CODES.get(d)
    if code is None:
        raise TypeError(f"fusec: dtype {d} is not supported (fusec has bool, int8-64, "
                        "uint8-64, float16, bfloat16, float32, float64, complex64, complex128)")
    return code


def numpy_dtype(code):
    """The NumPy dtype an array of this code converts to (bfloat16 as float32 without
    ml_dtypes)."""
    d = DTYPES[code]
    return np.dtype(np.float32) if (code == BF16 and _ml is None) else d


def is_bool(c):
    return c == BOOL


def is_signed(c):
    return 1 <= c <= 4


def is_unsigned(c):
    return 5 <= c <= 8


def is_integer(c):
    return 1 <= c <= 8


def is_float(c):
    return 9 <= c <= 12


def is_complex(c):
    return c >= 13
