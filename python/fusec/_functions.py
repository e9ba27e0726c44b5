"""fusec's functions: the Python array API standard (2023.12) under its names, and the NumPy
names fusec has besides. Each maps to fusec's C functions (fusec._fusec, one row per op in
python/src/ops.c); what fusec lacks raises NotImplementedError naming it (see _missing).
"""
import builtins
import math
from collections import namedtuple

import numpy as np

from . import _dtypes
from . import _fusec as _c
from ._array import ndarray
from ._dtypes import code_of

e, inf, nan, pi = math.e, math.inf, math.nan, math.pi
newaxis = None

_PY_SCALARS = (bool, int, float, complex)


def _missing(name, why="fusec has no such op yet"):
    def f(*args, **kwargs):
        raise NotImplementedError(f"fusec.{name}: {why}")

    f.__name__ = name
    f.__doc__ = f"Not available: {why}."
    return f


def _ctx(device):
    if device is None:
        return None
    if isinstance(device, _c.Context):
        return device
    raise ValueError(f"fusec: device must be a fusec.Context, not {device!r}")


# ---- creation ------------------------------------------------------------------------------

def asarray(obj, /, dtype=None, *, device=None, copy=None):
    """An array of obj: a fusec array (itself, or cast to dtype), a NumPy array or scalar, a
    (nested) list or tuple, a Python scalar (bool, int64, float64, complex128 as NumPy's
    defaults), or anything numpy.asarray takes. Data from the host is copied to the device."""
    if isinstance(obj, ndarray):
        if dtype is not None and code_of(dtype) != obj._code:
            if copy is False:
                raise ValueError("asarray: a cast needs a copy (copy=False)")
            return _c.cast(obj, code_of(dtype))
        return _c.reshape(obj, obj.shape) if copy else obj
    if copy is False:
        raise ValueError("asarray: data from the host is always copied (copy=False)")
    code = None if dtype is None else code_of(dtype)
    if code == _dtypes.BF16 and _dtypes._ml is None:
        return _c.cast(asarray(obj, _dtypes.float32, device=device), code)
    a = np.asarray(obj, dtype=None if code is None else _dtypes.DTYPES[code])
    if not a.dtype.isnative:
        a = a.astype(a.dtype.newbyteorder("="))
    if code is None:
        code = code_of(a.dtype)
    if not a.flags.c_contiguous:
        a = a.copy(order="C")  # (np.ascontiguousarray would make a 0-d array 1-d)
    return _c.from_buffer(a.reshape(-1).view(np.uint8), code, a.shape, _ctx(device))


def array(obj, dtype=None, *, copy=True, device=None, **kwargs):
    """numpy.array: asarray that always makes a new array object."""
    return asarray(obj, dtype, device=device, copy=True)


def asnumpy(a, stream=None, order="C", out=None):
    """The value of a as a numpy.ndarray (evaluates). Other objects go through numpy.asarray."""
    if isinstance(a, ndarray):
        return a.get(out=out)
    return np.asarray(a)


def _default_code(value):
    if isinstance(value, (bool, np.bool_)):
        return _dtypes.BOOL
    if isinstance(value, (int, np.integer)):
        return _dtypes.I64
    if isinstance(value, complex):
        return _dtypes.C128
    return _dtypes.F64


def _shape(shape):
    return (shape,) if isinstance(shape, int) else tuple(shape)


def zeros(shape, dtype=None, *, device=None):
    return _c.full(code_of(dtype or _dtypes.float64), _shape(shape), 0, _ctx(device))


def ones(shape, dtype=None, *, device=None):
    return _c.full(code_of(dtype or _dtypes.float64), _shape(shape), 1, _ctx(device))


def empty(shape, dtype=None, *, device=None):
    """numpy.empty: fusec fills it with zeros, so results are reproducible."""
    return zeros(shape, dtype, device=device)


def full(shape, fill_value, dtype=None, *, device=None):
    if isinstance(fill_value, ndarray):
        fill_value = fill_value.item()
    elif isinstance(fill_value, np.generic):
        if dtype is None:
            dtype = fill_value.dtype
        fill_value = fill_value.item()
    code = _default_code(fill_value) if dtype is None else code_of(dtype)
    return _c.full(code, _shape(shape), fill_value, _ctx(device))


def _like(x, dtype, fill):
    return full(x.shape, fill, x.dtype if dtype is None else dtype, device=x.context)


def zeros_like(x, /, *, dtype=None, device=None):
    return _c.zeros_like(x) if dtype is None else _like(x, dtype, 0)


def ones_like(x, /, *, dtype=None, device=None):
    return _c.ones_like(x) if dtype is None else _like(x, dtype, 1)


def empty_like(x, /, *, dtype=None, device=None):
    return zeros_like(x, dtype=dtype)


def full_like(x, /, fill_value, *, dtype=None, device=None):
    return _like(x, dtype, fill_value)


def arange(start, /, stop=None, step=1, *, dtype=None, device=None):
    """numpy.arange: int64 when start, stop and step are all ints, else float64 (values are
    computed from doubles: integers beyond 2**53 are not exact)."""
    if stop is None:
        start, stop = 0, start
    if dtype is None:
        ints = builtins.all(isinstance(v, (int, np.integer)) for v in (start, stop, step))
        dtype = _dtypes.int64 if ints else _dtypes.float64
    if step == 0:
        raise ZeroDivisionError("arange: step must not be zero")
    return _c.arange(code_of(dtype), float(start), float(stop), float(step), _ctx(device))


def linspace(start, stop, /, num=50, *, dtype=None, device=None, endpoint=True):
    if isinstance(start, complex) or isinstance(stop, complex):
        raise NotImplementedError("fusec.linspace: complex bounds")
    return _c.linspace(code_of(dtype or _dtypes.float64), float(start), float(stop), int(num),
                       bool(endpoint), _ctx(device))


def eye(n_rows, n_cols=None, /, *, k=0, dtype=None, device=None):
    return _c.eye(code_of(dtype or _dtypes.float64), int(n_rows),
                  int(n_rows if n_cols is None else n_cols), int(k), _ctx(device))


def identity(n, dtype=None, *, device=None):
    return eye(n, dtype=dtype, device=device)


def meshgrid(*arrays, indexing="xy"):
    if indexing not in ("xy", "ij"):
        raise ValueError("meshgrid: indexing must be 'xy' or 'ij'")
    if not arrays:
        return ()
    return _c.meshgrid(arrays, indexing == "ij")


def tril(x, /, *, k=0):
    return _c.tril(x, k)


def triu(x, /, *, k=0):
    return _c.triu(x, k)


def from_dlpack(x, /, *, device=None, copy=None):
    """An array over another library's memory, without a copy, through DLPack: `x` has
    __dlpack__ (a PyTorch tensor, a CuPy or NumPy array, a fusec array) or is a capsule. The
    producer orders its work before the current context's stream. The memory must be where
    the context computes (device memory of its GPU; host memory on the host backend): else
    BufferError, as the array API specifies. copy=True copies after the import."""
    ctx = _c.current_context()
    if isinstance(x, ndarray) and not copy:
        return x
    if hasattr(x, "__dlpack__"):
        kind, dev = x.__dlpack_device__()
        stream = _c._consumer_stream(ctx, int(kind))
        try:
            cap = x.__dlpack__(stream=stream, max_version=(1, 0))
        except TypeError:  # a producer older than the 2023.12 protocol
            cap = x.__dlpack__(stream=stream)
    else:
        cap = x
    try:
        r = _c._from_dlpack(cap, ctx)
    except (ValueError, NotImplementedError) as e:
        raise BufferError(str(e)) from e
    return asarray(r, copy=True) if copy else r


# ---- elementwise ---------------------------------------------------------------------------

# One name per C op, and the array API's names for NumPy's where they differ.
for _name in (
    "negative abs sign sqrt cbrt square reciprocal exp exp2 expm1 log log2 log10 log1p sin cos "
    "tan arcsin arccos arctan sinh cosh tanh arcsinh arccosh arctanh floor ceil rint trunc "
    "isnan isinf isfinite signbit logical_not invert real imag conj angle positive fabs "
    "deg2rad rad2deg sinc add subtract multiply divide floor_divide remainder power arctan2 "
    "maximum minimum fmax fmin hypot logaddexp logaddexp2 copysign nextafter fmod heaviside "
    "float_power less less_equal greater greater_equal equal not_equal logical_and logical_or "
    "logical_xor bitwise_and bitwise_or bitwise_xor left_shift right_shift matmul dot vdot "
    "inner outer kron"
).split():
    globals()[_name] = getattr(_c, _name)

acos, acosh, asin, asinh, atan, atan2, atanh = (
    arccos, arccosh, arcsin, arcsinh, arctan, arctan2, arctanh)  # noqa: F821
bitwise_invert = bitwise_not = invert  # noqa: F821
bitwise_left_shift, bitwise_right_shift = left_shift, right_shift  # noqa: F821
pow = power  # noqa: F821
true_divide = divide  # noqa: F821
mod = remainder  # noqa: F821
absolute = abs  # noqa: F821
conjugate = conj  # noqa: F821
degrees, radians = rad2deg, deg2rad  # noqa: F821


def clip(x, /, min=None, max=None):
    """numpy.clip / the array API's clip: a bound of None is no bound."""
    if min is None and max is None:
        return asarray(x)
    if min is None:
        return minimum(x, max)  # noqa: F821
    if max is None:
        return maximum(x, min)  # noqa: F821
    return _c.clip(x, min, max)


def round(x, /, decimals=0):
    return _c.round(x, decimals)


around = round


def where(condition, x=None, y=None, /):
    """where(condition, x, y): x where condition, else y; where(condition): nonzero."""
    if x is None and y is None:
        return nonzero(condition)
    return _c.where(condition, x, y)


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    return _c.isclose(a, b, float(rtol), float(atol), bool(equal_nan))


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    return bool(all(isclose(a, b, rtol, atol, equal_nan)))


def astype(x, dtype, /, *, copy=True, device=None):
    return _c.cast(x, code_of(dtype))


# ---- reductions and statistics -------------------------------------------------------------

def _with_dtype(x, dtype):
    return x if dtype is None else _c.cast(x, code_of(dtype))


def sum(x, /, *, axis=None, dtype=None, keepdims=False):
    return _c.sum(_with_dtype(x, dtype), axis, keepdims)


def prod(x, /, *, axis=None, dtype=None, keepdims=False):
    return _c.prod(_with_dtype(x, dtype), axis, keepdims)


def _reduction(cname):
    fn = getattr(_c, cname)

    def reduce(x, /, *, axis=None, keepdims=False):
        return fn(x, axis, keepdims)

    reduce.__name__ = cname
    reduce.__doc__ = f"numpy.{cname}(x, axis=None, keepdims=False)"
    return reduce


for _name in ("mean max min any all nansum nanprod nanmean nanmax nanmin count_nonzero "
              "logsumexp argmax argmin nanargmax nanargmin").split():
    globals()[_name] = _reduction(_name)
amax, amin = max, min  # noqa: F821


def _ddof(correction, ddof):
    c = ddof if ddof is not None else correction
    if c != int(c):
        raise NotImplementedError("fusec var/std: a non-integer correction")
    return int(c)


def var(x, /, *, axis=None, correction=0.0, keepdims=False, ddof=None):
    return _c.var(x, axis, keepdims, _ddof(correction, ddof))


def std(x, /, *, axis=None, correction=0.0, keepdims=False, ddof=None):
    return _c.std(x, axis, keepdims, _ddof(correction, ddof))


def _cumulative(cname, x, axis, dtype, include_initial, ident):
    x = _with_dtype(asarray(x), dtype)
    if axis is None:
        if x.ndim > 1:
            raise ValueError(f"cumulative_{cname[3:]}: axis is required for arrays of more "
                             "than one dimension")
        axis = 0
    r = getattr(_c, cname)(x, axis)
    if include_initial:
        shape = list(r.shape)
        shape[axis] = 1
        r = concat([full(tuple(shape), ident, r.dtype, device=r.context), r], axis=axis)
    return r


def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False):
    return _cumulative("cumsum", x, axis, dtype, include_initial, 0)


def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial=False):
    return _cumulative("cumprod", x, axis, dtype, include_initial, 1)


def cumsum(a, axis=None, dtype=None):
    """numpy.cumsum: axis None scans the flattened array."""
    return _c.cumsum(_with_dtype(a, dtype), axis)


def cumprod(a, axis=None, dtype=None):
    return _c.cumprod(_with_dtype(a, dtype), axis)


def diff(x, /, *, axis=-1, n=1, prepend=None, append=None):
    x = asarray(x)
    if prepend is not None or append is not None:
        parts = [p for p in (prepend, x, append) if p is not None]
        x = concat([broadcast_to(asarray(p), _edge_shape(x, axis))
                    if not isinstance(p, ndarray) or p.ndim == 0 else p for p in parts],
                   axis=axis)
    for _ in range(n):
        ax = axis % x.ndim
        head = (slice(None),) * ax
        x = x[head + (slice(1, None),)] - x[head + (slice(None, -1),)]
    return x


def _edge_shape(x, axis):
    s = list(x.shape)
    s[axis] = 1
    return tuple(s)


# ---- searching, sorting, sets -------------------------------------------------------------

def nonzero(x, /):
    return _c.nonzero(x)


def argwhere(a):
    return _c.argwhere(a)


def flatnonzero(a):
    return _c.flatnonzero(a)


def searchsorted(x1, x2, /, *, side="left", sorter=None):
    if sorter is not None:
        raise NotImplementedError("fusec.searchsorted: sorter")
    if side not in ("left", "right"):
        raise ValueError("searchsorted: side must be 'left' or 'right'")
    return _c.searchsorted(x1, x2, side == "right")


def sort(x, /, *, axis=-1, descending=False, stable=True, kind=None):
    """Stable, NumPy's order (NaN last); descending keeps equal elements in their order."""
    if not descending:
        return _c.sort(x, axis)
    return take_along_axis(x, argsort(x, axis=axis, descending=True), axis=axis)


def argsort(x, /, *, axis=-1, descending=False, stable=True, kind=None):
    if not descending:
        return _c.argsort(x, axis)
    x = asarray(x)
    if axis is None:
        x, axis = reshape(x, (-1,)), 0
    n = x.shape[axis]
    # Descending and stable: sort the reversed array ascending, reverse that order, and map
    # positions back (n - 1 - i), so equal elements keep their original order.
    return (n - 1) - flip(_c.argsort(flip(x, axis=axis), axis), axis=axis)


UniqueAllResult = namedtuple("UniqueAllResult", "values indices inverse_indices counts")
UniqueCountsResult = namedtuple("UniqueCountsResult", "values counts")
UniqueInverseResult = namedtuple("UniqueInverseResult", "values inverse_indices")


def unique_all(x, /):
    return UniqueAllResult(*_c.unique(x))


def unique_counts(x, /):
    v, _, _, c = _c.unique(x)
    return UniqueCountsResult(v, c)


def unique_inverse(x, /):
    v, _, inv, _ = _c.unique(x)
    return UniqueInverseResult(v, inv)


def unique_values(x, /):
    return _c.unique(x)[0]


def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None,
           *, equal_nan=True):
    if axis is not None:
        raise NotImplementedError("fusec.unique: axis")
    v, i, inv, c = _c.unique(ar)
    extra = [r for r, want in ((i, return_index), (inv, return_inverse), (c, return_counts))
             if want]
    return (v, *extra) if extra else v


def isin(x1, x2, /, *, invert=False):
    """Whether each element of x1 is in x2: a binary search in x2's sorted distinct values."""
    x1 = asarray(x1)
    u = unique_values(reshape(asarray(x2), (-1,)))
    if u.size == 0:
        r = zeros(x1.shape, _dtypes.bool_, device=x1.context)
    else:
        i = _c.searchsorted(u, x1, False)
        r = take(u, _c.minimum(i, u.size - 1)) == x1
    return _c.logical_not(r) if invert else r


def take(x, indices, /, *, axis=None, mode="raise"):
    modes = {"raise": 0, "wrap": 1, "clip": 2}
    if mode not in modes:
        raise ValueError("take: mode must be 'raise', 'wrap' or 'clip'")
    return _c.take(x, indices, axis, modes[mode])


def take_along_axis(x, indices, /, *, axis=-1):
    return _c.take_along_axis(x, indices, axis)


# ---- manipulation --------------------------------------------------------------------------

def reshape(x, /, shape, *, copy=None):
    return _c.reshape(x, _shape(shape))


def broadcast_to(x, /, shape):
    return _c.broadcast_to(x, _shape(shape))


def broadcast_arrays(*arrays):
    arrays = [asarray(a) for a in arrays]
    shape = np.broadcast_shapes(*(a.shape for a in arrays))
    return [broadcast_to(a, shape) for a in arrays]


def broadcast_shapes(*shapes):
    return np.broadcast_shapes(*shapes)


def concat(arrays, /, *, axis=0):
    if axis is None:
        arrays, axis = [reshape(asarray(a), (-1,)) for a in arrays], 0
    return _c.concatenate(arrays, axis)


def concatenate(arrays, axis=0, dtype=None):
    return _with_dtype(concat(arrays, axis=axis), dtype)


def stack(arrays, /, *, axis=0):
    return _c.stack(arrays, axis)


def vstack(tup):
    return concat([a if a.ndim >= 2 else reshape(a, (1, -1))
                   for a in map(asarray, tup)], axis=0)


def hstack(tup):
    arrs = [asarray(a) for a in tup]
    return concat(arrs, axis=0 if arrs and arrs[0].ndim == 1 else 1)


def expand_dims(x, /, axis=0):
    if isinstance(axis, tuple):
        for a in sorted(ax % (asarray(x).ndim + len(axis)) for ax in axis):
            x = _c.expand_dims(x, a)
        return x
    return _c.expand_dims(x, axis)


def squeeze(x, /, axis=None):
    return _c.squeeze(x, axis)


def flip(x, /, *, axis=None):
    return _c.flip(x, axis)


def permute_dims(x, /, axes):
    return _c.permute_dims(x, tuple(axes))


def transpose(a, axes=None):
    return _c.transpose(a) if axes is None else _c.permute_dims(a, tuple(axes))


def matrix_transpose(x, /):
    return asarray(x).mT


def swapaxes(a, axis1, axis2):
    a = asarray(a)
    p = list(range(a.ndim))
    p[axis1], p[axis2] = p[axis2], p[axis1]
    return _c.permute_dims(a, tuple(p))


def moveaxis(x, source, destination, /):
    x = asarray(x)
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    if len(src) != len(dst):
        raise ValueError("moveaxis: source and destination differ in length")
    src = [s % x.ndim if -x.ndim <= s < x.ndim else _axis_error(s, x.ndim) for s in src]
    dst = [d % x.ndim if -x.ndim <= d < x.ndim else _axis_error(d, x.ndim) for d in dst]
    order = [n for n in range(x.ndim) if n not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return _c.permute_dims(x, tuple(order))


def _axis_error(axis, ndim):
    raise _c.AxisError(f"axis {axis} is out of bounds for array of dimension {ndim}")


def ravel(a, order="C"):
    return reshape(a, (-1,))


def roll(x, /, shift, *, axis=None):
    return _c.roll(x, shift, axis)


def tile(x, repetitions, /):
    return _c.tile(x, _shape(repetitions))


def repeat(x, repeats, /, *, axis=None):
    if not isinstance(repeats, (int, np.integer)):
        raise NotImplementedError("fusec.repeat: an array of repeats (one count only)")
    return _c.repeat(x, int(repeats), axis)


def unstack(x, /, *, axis=0):
    x = asarray(x)
    axis = axis % x.ndim if x.ndim else _axis_error(axis, 0)
    head = (slice(None),) * axis
    return tuple(x[head + (i,)] for i in range(x.shape[axis]))


def diagonal(a, offset=0, axis1=0, axis2=1):
    return _c.diagonal(a, offset, axis1, axis2)


def trace(a, offset=0, axis1=0, axis2=1, dtype=None):
    return _with_dtype(_c.trace(a, offset, axis1, axis2), dtype)


def diag(v, k=0):
    return _c.diag(v, k)


# ---- linear algebra ------------------------------------------------------------------------

def tensordot(x1, x2, /, *, axes=2):
    if isinstance(axes, int):
        if axes < 0:
            raise ValueError("tensordot: axes must be non-negative")
        n1 = asarray(x1).ndim
        return _c.tensordot(x1, x2, tuple(range(n1 - axes, n1)), tuple(range(axes)))
    a, b = axes
    a = (a,) if isinstance(a, int) else tuple(a)
    b = (b,) if isinstance(b, int) else tuple(b)
    return _c.tensordot(x1, x2, a, b)


def vecdot(x1, x2, /, *, axis=-1):
    """sum(conj(x1) * x2, axis), in the operands' promoted dtype."""
    x1, x2 = asarray(x1), asarray(x2)
    n = builtins.max(x1.ndim, x2.ndim)
    if not -n <= axis < 0 and not 0 <= axis < n:
        _axis_error(axis, n)
    ax = axis - n if axis >= 0 else axis
    if x1.shape[ax:][:1] != x2.shape[ax:][:1]:
        raise ValueError(f"vecdot: the contracted extents differ ({x1.shape}, {x2.shape})")
    r = _c.sum(_c.multiply(_c.conj(x1), x2), ax, False)
    code = _c.promote_types(x1._code, x2._code)
    return r if r._code == code else _c.cast(r, code)


def einsum(subscripts, *operands, **kwargs):
    if kwargs:
        raise NotImplementedError(f"fusec.einsum: {', '.join(kwargs)}")
    return _c.einsum(subscripts, *operands)


# ---- data types ----------------------------------------------------------------------------

def _dtype_of(x):
    if isinstance(x, ndarray):
        return x.dtype
    return _dtypes.DTYPES[code_of(x)]


def result_type(*arrays_and_dtypes):
    """NumPy 2's promotion (NEP 50): Python scalars are weak."""
    if not arrays_and_dtypes:
        raise ValueError("result_type: at least one array or dtype is required")
    strong = [_dtype_of(a) for a in arrays_and_dtypes if not isinstance(a, _PY_SCALARS)]
    weak = [a for a in arrays_and_dtypes if isinstance(a, _PY_SCALARS)]
    if not strong:
        return np.result_type(*weak)
    code = code_of(strong[0])
    for d in strong[1:]:
        code = _c.promote_types(code, code_of(d))
    if code == _dtypes.BF16:
        return _dtypes.DTYPES[code]
    return np.result_type(_dtypes.DTYPES[code], *weak)


def can_cast(from_, to, /, casting="safe"):
    src = from_.dtype if isinstance(from_, ndarray) else from_
    if _dtypes.BF16 in (code_of(src), code_of(to)):
        a, b = code_of(src), code_of(to)
        return a == b or _c.promote_types(a, b) == b
    return bool(np.can_cast(_dtypes.DTYPES[code_of(src)], _dtypes.DTYPES[code_of(to)],
                            casting=casting))


def finfo(type, /):
    t = type.dtype if isinstance(type, ndarray) else type
    return np.finfo(np.float32 if code_of(t) == _dtypes.BF16 else _dtypes.DTYPES[code_of(t)])


def iinfo(type, /):
    t = type.dtype if isinstance(type, ndarray) else type
    return np.iinfo(_dtypes.DTYPES[code_of(t)])


_KINDS = {
    "bool": _dtypes.is_bool,
    "signed integer": _dtypes.is_signed,
    "unsigned integer": _dtypes.is_unsigned,
    "integral": _dtypes.is_integer,
    "real floating": _dtypes.is_float,
    "complex floating": _dtypes.is_complex,
    "numeric": lambda c: c != _dtypes.BOOL,
}


def isdtype(dtype, kind):
    c = code_of(dtype)
    if isinstance(kind, tuple):
        return builtins.any(isdtype(dtype, k) for k in kind)
    if isinstance(kind, str):
        if kind not in _KINDS:
            raise ValueError(f"isdtype: unknown kind {kind!r}")
        return _KINDS[kind](c)
    return c == code_of(kind)


class _Info:
    """The array API's inspection object (fusec.__array_namespace_info__())."""

    def capabilities(self):
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 8}

    def default_device(self):
        return _c.current_context()

    def devices(self):
        return [_c.current_context()]

    def default_dtypes(self, *, device=None):
        return {"real floating": _dtypes.DTYPES[_dtypes.F64],
                "complex floating": _dtypes.DTYPES[_dtypes.C128],
                "integral": _dtypes.DTYPES[_dtypes.I64], "indexing": _dtypes.DTYPES[_dtypes.I64]}

    def dtypes(self, *, device=None, kind=None):
        out = {}
        for code, d in enumerate(_dtypes.DTYPES):
            if code in (_dtypes.F16, _dtypes.BF16):
                continue
            if kind is None or isdtype(d, kind):
                out[str(d)] = d
        return out


def __array_namespace_info__():
    return _Info()


# ---- padding, NaN replacement, GELU --------------------------------------------------------

_PAD_MODES = {"constant": 0, "edge": 1, "reflect": 2, "symmetric": 3}


def pad(array, pad_width, mode="constant", *, constant_values=0, reflect_type="even"):
    """numpy.pad for modes constant (one constant_values scalar), edge, reflect and symmetric
    (widths of at most one reflection: reflect at most the axis length - 1, symmetric at most
    the axis length). pad_width: an int, a (before, after) pair, or one pair per axis."""
    if mode not in _PAD_MODES:
        raise NotImplementedError(f"fusec.pad: mode {mode!r} (constant, edge, reflect, "
                                  "symmetric)")
    if reflect_type != "even":
        raise NotImplementedError("fusec.pad: reflect_type='odd'")
    if isinstance(constant_values, (tuple, list)):
        raise NotImplementedError("fusec.pad: constant_values per axis (one scalar only)")
    w = np.asarray(pad_width, dtype=np.int64)
    if w.ndim == 0:
        w = np.array([[w, w]])
    elif w.ndim == 1:
        w = np.array([[w[0], w[-1]]]) if w.size in (1, 2) else w
    if w.ndim != 2 or w.shape[1] != 2 or (w < 0).any():
        raise ValueError("pad: pad_width must be non-negative (before, after) pairs")
    return _c.pad(array, tuple(map(tuple, w.tolist())), _PAD_MODES[mode],
                  float(constant_values))


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """numpy.nan_to_num: NaN, +inf and -inf replaced (posinf / neginf None: the dtype's
    largest / most negative finite value); integers and bool unchanged. Always a new value
    (copy=False cannot alias: fusec's arrays are values)."""
    return _c.nan_to_num(x, float(nan), None if posinf is None else float(posinf),
                         None if neginf is None else float(neginf))


def gelu(x, /, approximate="none"):
    """GELU, x Phi(x), as torch.nn.functional.gelu (NumPy has none): approximate='none' the
    exact 0.5 x erfc(-x / sqrt 2), 'tanh' the tanh form. Floats keep their dtype; integers
    and bool compute in float64 (float16 for 8-bit), as NumPy's float functions do."""
    if approximate == "none":
        return _c.gelu(x)
    if approximate == "tanh":
        return _c.gelu_tanh(x)
    raise ValueError(f"gelu: approximate must be 'none' or 'tanh', not {approximate!r}")


# ---- what fusec does not have yet ----------------------------------------------------------



def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """numpy.cross of 3-vectors (fusec.linalg.cross's; 2-vectors are not taken)."""
    from . import linalg

    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = moveaxis(asarray(a), axisa, -1), moveaxis(asarray(b), axisb, -1)
    return moveaxis(linalg.cross(a, b, axis=-1), -1, axisc)
