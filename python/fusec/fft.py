"""fusec.fft: numpy.fft (NumPy 2's names, dtypes and defaults) on cuFFT, each transform one
plan; the cropping, padding and scaling fuse with the kernels around it."""
from . import _dtypes
from . import _fusec as _c
from ._functions import arange, asarray, concat

_NORMS = {None: 0, "backward": 0, "ortho": 1, "forward": 2}


def _norm(norm):
    if norm not in _NORMS:
        raise ValueError(f"fft: unknown norm {norm!r} (backward, ortho, forward)")
    return _NORMS[norm]


def _one(cname):
    fn = getattr(_c, cname)

    def transform(x, /, *, n=None, axis=-1, norm="backward"):
        if n is not None and n < 1:
            raise ValueError(f"{cname}: invalid number of data points ({n}) specified")
        return fn(x, 0 if n is None else int(n), int(axis), _norm(norm))

    transform.__name__ = cname
    transform.__doc__ = f"numpy.fft.{cname}(x, n=None, axis=-1, norm='backward')"
    return transform


def _many(cname, default_axes=None):
    fn = getattr(_c, cname)

    def transform(x, /, *, s=None, axes=default_axes, norm="backward"):
        return fn(x, s, axes, _norm(norm))

    transform.__name__ = cname
    return transform


fft, ifft, rfft, irfft, hfft, ihfft = map(_one, ("fft", "ifft", "rfft", "irfft", "hfft",
                                                 "ihfft"))
fftn, ifftn, rfftn, irfftn = map(_many, ("fftn", "ifftn", "rfftn", "irfftn"))
fft2, ifft2, rfft2, irfft2 = (_many(n, (-2, -1)) for n in ("fftn", "ifftn", "rfftn", "irfftn"))
for _f, _n in ((fft2, "fft2"), (ifft2, "ifft2"), (rfft2, "rfft2"), (irfft2, "irfft2")):
    _f.__name__ = _n


def fftshift(x, /, *, axes=None):
    return _c.fftshift(x, axes)


def ifftshift(x, /, *, axes=None):
    return _c.ifftshift(x, axes)


def fftfreq(n, /, *, d=1.0, dtype=None, device=None):
    """The sample frequencies: [0, 1, ..., (n-1)//2, -(n//2), ..., -1] / (n d), float64."""
    if n < 1 or d == 0:
        raise ValueError("fftfreq: n >= 1 and d != 0")
    k = concat([arange(0, (n - 1) // 2 + 1, device=device),
                arange(-(n // 2), 0, device=device)])
    r = k / (n * d)
    return r if dtype is None else r.astype(dtype)


def rfftfreq(n, /, *, d=1.0, dtype=None, device=None):
    if n < 1 or d == 0:
        raise ValueError("rfftfreq: n >= 1 and d != 0")
    r = arange(0, n // 2 + 1, dtype=_dtypes.float64, device=device) / (n * d)
    return r if dtype is None else r.astype(dtype)


del _f, _n
