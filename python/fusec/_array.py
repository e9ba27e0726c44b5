"""fusec.ndarray: the array type.

The operators, indexing, setitem and shape / ndim / size / T / mT are C (fusec._fusec._Array);
this class adds what evaluates (repr, __array__, float(), bool(), len-dependent iteration) and
the NumPy-named methods, which call the functions of fusec._functions.

Laziness is invisible: operations build fusec's graph and return at once; a value is computed
when Python needs it (repr / str, numpy.asarray / __array__ / get() / fusec.asnumpy, float(),
int(), complex(), bool() - so `if (x > 0).any():` evaluates -, item(), tolist(), iteration,
a boolean mask's count) or when fusec.eval(*arrays) asks.
"""
import numpy as np

from . import _dtypes
from . import _fusec


class ndarray(_fusec._Array):
    """An n-dimensional array of fusec: NumPy's operators, dtypes and indexing, evaluated
    lazily on the GPU (or on the host backend where there is none).

    Arrays are values: `a[k] = v` and `a += b` rebind `a` to the new value (every name bound
    to this object sees it, as in NumPy), but an array sliced from `a` earlier keeps the old
    value; a fusec slice is not a view that aliases memory.
    """

    __slots__ = ("_exports",)  # __cuda_array_interface__'s holds (interop.c)
    # NumPy defers to this type's reflected operators (ndarray + fusec array -> fusec).
    __array_priority__ = 100.0

    # ---- attributes --------------------------------------------------------------------
    @property
    def dtype(self):
        """The element type, a numpy.dtype (bfloat16: ml_dtypes' or fusec's stand-in)."""
        return _dtypes.DTYPES[self._code]

    @property
    def device(self):
        """The fusec.Context the array lives in (its `backend` says 'cuda' or 'host')."""
        return self.context

    @property
    def itemsize(self):
        return _dtypes.DTYPES[self._code].itemsize

    @property
    def nbytes(self):
        return self.size * self.itemsize

    @property
    def real(self):
        return _f.real(self)

    @property
    def imag(self):
        return _f.imag(self)

    def to_device(self, device, /, *, stream=None):
        """This array's value in `device`, a fusec.Context (fusec's devices are contexts: a GPU,
        or the host backend): itself where it already lives there, else a copy."""
        if device is self.context or device is None:
            return self
        if not isinstance(device, _fusec.Context):
            raise TypeError(f"fusec: to_device takes a fusec.Context, not {type(device).__name__}")
        return _fusec._copy_to(self, device)

    def __array_namespace__(self, /, *, api_version=None):
        if api_version not in (None, "2023.12", "2024.12"):
            raise ValueError(f"fusec: unsupported array API version {api_version!r}")
        import fusec

        return fusec

    # ---- evaluation points ---------------------------------------------------------------
    def __array__(self, dtype=None, copy=None):
        if copy is False:
            raise ValueError("fusec: converting to NumPy always copies (the value lives on "
                             "the device)")
        src = self
        if self._code == _dtypes.BF16 and _dtypes._ml is None:
            src = _f.astype(self, _dtypes.float32)
        out = np.empty(src.shape, dtype=_dtypes.DTYPES[src._code])
        _fusec.to_buffer(src, out.reshape(-1).view(np.uint8) if out.size else out)
        if dtype is not None and out.dtype != np.dtype(dtype):
            out = out.astype(dtype)
        return out

    def get(self, stream=None, order="C", out=None):
        """The value as a numpy.ndarray (CuPy's ndarray.get)."""
        a = self.__array__()
        if out is not None:
            out[...] = a
            return out
        return a

    def item(self, *args):
        return self.__array__().item(*args)

    def tolist(self):
        return self.__array__().tolist()

    def __repr__(self):
        return repr(self.__array__())

    def __str__(self):
        return str(self.__array__())

    def __format__(self, spec):
        return format(self.__array__()[()] if self.ndim == 0 else self.__array__(), spec)

    def __bool__(self):
        return bool(self.__array__())

    def __float__(self):
        return float(self._scalar("float"))

    def __int__(self):
        return int(self._scalar("int"))

    def __complex__(self):
        return complex(self._scalar("complex"))

    def __index__(self):
        if not _dtypes.is_integer(self._code) and self._code != _dtypes.BOOL:
            raise TypeError("only integer arrays can be used as an index")
        return int(self._scalar("index"))

    def _scalar(self, what):
        if self.size != 1:
            raise TypeError(f"only arrays of one element can be converted to Python {what}s "
                            f"(this one has shape {self.shape})")
        return self.__array__().reshape(())[()]

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.shape[0]))

    def copy(self, order="C"):
        """A new array object with the same value (cheap: values are immutable)."""
        return _f.reshape(self, self.shape)

    __copy__ = copy

    def __deepcopy__(self, memo):
        return self.copy()

    def __reduce__(self):
        return (_f.asarray, (self.__array__(),))

    # ---- NumPy interop -------------------------------------------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        """numpy.sin(a), numpy.add(a, b), ndarray + a: run fusec's op of the ufunc's name."""
        fn = getattr(_f, ufunc.__name__, None)
        if method != "__call__" or kwargs or fn is None:
            return NotImplemented
        return fn(*inputs)

    def __array_function__(self, func, types, args, kwargs):
        """numpy.f(a, ...) for a fusec array: fusec's f of the same name, with NumPy's
        positional arguments given as fusec's function takes them (np.sum(a, 0) is
        fusec.sum(a, axis=0)); out= is not supported (NotImplemented)."""
        module = getattr(func, "__module__", "") or ""
        ns = _f
        if module.startswith("numpy.linalg"):
            from . import linalg as ns
        elif module.startswith("numpy.fft"):
            from . import fft as ns
        fn = getattr(ns, func.__name__, None)
        if fn is None or kwargs.get("out") is not None:
            return NotImplemented
        call = _dispatch(func, fn)
        return call(args, kwargs) if call else fn(*args, **kwargs)

    def __divmod__(self, other):
        return (self // other, self % other)

    def __rdivmod__(self, other):
        return (other // self, other % self)

    # ---- interop: DLPack and __cuda_array_interface__ (zero-copy) ---------------------------
    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule of this array's value, without a copy (the array API's protocol).
        `stream`: the consumer's CUDA stream as an integer (None or 1 the legacy default, 2 the
        per-thread one, -1 no ordering); the consumer's work on it is ordered after the work
        that writes the value. `max_version` (1, 0) or later gives the versioned capsule."""
        if copy:
            return _fusec._dlpack(_f.asarray(self, copy=True), stream, _versioned(max_version))
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            raise BufferError("fusec: __dlpack__ to device %r: the array is on %r and "
                              "copy=False or None does not move it"
                              % (tuple(dl_device), self.__dlpack_device__()))
        return _fusec._dlpack(self, stream, _versioned(max_version))

    def __dlpack_device__(self):
        """(device type, device id): (2, ordinal) on the CUDA backend, (1, 0) on the host."""
        return _fusec._dlpack_device(self)

    @property
    def __cuda_array_interface__(self):
        """CuPy / Numba's interface, version 3, over this array's device memory (CUDA backend
        only; AttributeError elsewhere). The memory stays valid while this object lives."""
        holder, iface = _fusec._export(self)
        try:
            self._exports.append(holder)
        except AttributeError:
            self._exports = [holder]
        return iface

    # ---- methods (NumPy's names) ------------------------------------------------------------
    def astype(self, dtype, copy=True):
        return _f.astype(self, dtype)

    def reshape(self, *shape, order="C"):
        if order != "C":
            raise NotImplementedError("fusec: reshape order='F'")
        if len(shape) == 1 and not isinstance(shape[0], int):
            shape = shape[0]
        return _f.reshape(self, shape)

    def transpose(self, *axes):
        if len(axes) == 1 and (axes[0] is None or not isinstance(axes[0], int)):
            axes = axes[0]
        return _f.transpose(self, axes if axes else None)

    def ravel(self, order="C"):
        return _f.reshape(self, (-1,))

    flatten = ravel

    def squeeze(self, axis=None):
        return _f.squeeze(self, axis)

    def swapaxes(self, a, b):
        return _f.swapaxes(self, a, b)

    def sum(self, axis=None, dtype=None, out=None, keepdims=False):
        return _f.sum(self, axis=axis, dtype=dtype, keepdims=keepdims)

    def prod(self, axis=None, dtype=None, out=None, keepdims=False):
        return _f.prod(self, axis=axis, dtype=dtype, keepdims=keepdims)

    def mean(self, axis=None, dtype=None, out=None, keepdims=False):
        return _f.mean(self, axis=axis, keepdims=keepdims)

    def max(self, axis=None, out=None, keepdims=False):
        return _f.max(self, axis=axis, keepdims=keepdims)

    def min(self, axis=None, out=None, keepdims=False):
        return _f.min(self, axis=axis, keepdims=keepdims)

    def any(self, axis=None, out=None, keepdims=False):
        return _f.any(self, axis=axis, keepdims=keepdims)

    def all(self, axis=None, out=None, keepdims=False):
        return _f.all(self, axis=axis, keepdims=keepdims)

    def var(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
        return _f.var(self, axis=axis, correction=ddof, keepdims=keepdims)

    def std(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
        return _f.std(self, axis=axis, correction=ddof, keepdims=keepdims)

    def argmax(self, axis=None, out=None, keepdims=False):
        return _f.argmax(self, axis=axis, keepdims=keepdims)

    def argmin(self, axis=None, out=None, keepdims=False):
        return _f.argmin(self, axis=axis, keepdims=keepdims)

    def cumsum(self, axis=None, dtype=None, out=None):
        return _f.cumsum(self, axis=axis, dtype=dtype)

    def cumprod(self, axis=None, dtype=None, out=None):
        return _f.cumprod(self, axis=axis, dtype=dtype)

    def sort(self, axis=-1):
        """In place, as NumPy's: the array becomes its sorted value."""
        self[...] = _f.sort(self, axis=axis)

    def argsort(self, axis=-1):
        return _f.argsort(self, axis=axis)

    def nonzero(self):
        return _f.nonzero(self)

    def clip(self, min=None, max=None):
        return _f.clip(self, min, max)

    def round(self, decimals=0):
        return _f.round(self, decimals)

    def conj(self):
        return _f.conj(self)

    conjugate = conj

    def dot(self, b):
        return _f.dot(self, b)

    def diagonal(self, offset=0, axis1=0, axis2=1):
        return _f.diagonal(self, offset, axis1, axis2)

    def trace(self, offset=0, axis1=0, axis2=1):
        return _f.trace(self, offset, axis1, axis2)

    def repeat(self, repeats, axis=None):
        return _f.repeat(self, repeats, axis=axis)

    def take(self, indices, axis=None):
        return _f.take(self, indices, axis=axis)

    def fill(self, value):
        self[...] = value


_DISPATCH = {}


def _dispatch(func, fn):
    """How a NumPy function's call maps onto fusec's fn: NumPy's positional arguments go to
    fn's positional parameters where fn has one at that place, else by NumPy's name as
    keywords; absent ones are left out (fn's defaults). None where NumPy's signature is not
    introspectable (the call is passed as it is)."""
    key = (func, fn)
    if key not in _DISPATCH:
        import inspect

        try:
            npsig, fsig = inspect.signature(func), inspect.signature(fn)
        except (TypeError, ValueError):
            _DISPATCH[key] = None
            return None
        P = inspect.Parameter
        names = list(npsig.parameters)
        npos = [p for p in fsig.parameters.values()
                if p.kind in (P.POSITIONAL_ONLY, P.POSITIONAL_OR_KEYWORD)]
        star = any(p.kind is P.VAR_POSITIONAL for p in fsig.parameters.values())

        def call(args, kwargs):
            bound = npsig.bind(*args, **kwargs).arguments
            pos, kw = [], {}
            for i, name in enumerate(names):
                if name not in bound:
                    continue
                v, p = bound[name], npsig.parameters[name]
                if p.kind is P.VAR_POSITIONAL:
                    pos.extend(v)
                elif name == "out" or (i > 0 and v is p.default):
                    continue  # NumPy's default given explicitly: fn's own default
                elif name not in kwargs and (len(pos) < len(npos) or star) and len(pos) == i:
                    pos.append(v)
                else:
                    kw[name] = v
            return fn(*pos, **kw)

        _DISPATCH[key] = call
    return _DISPATCH[key]


def _versioned(max_version):
    return max_version is not None and tuple(max_version) >= (1, 0)


from . import _functions as _f  # noqa: E402  (the functions module imports this one)
