"""fusec.random: NumPy's Generator API (default_rng) and CuPy's module-level functions (seed,
rand, randn, random, uniform, normal, randint, ...) over fusec's counter-based generator.

Values are fusec's, not NumPy's: each draw is Philox4x32-10 of (seed, stream, index), a pure
function of the seed and the number of draws before it, the same on the GPU and on the host
backend, in any fusion and from one fusec version to the next (fusec.h documents the layout).
NumPy's PCG64 gives other numbers for the same seed, as CuPy's generators do. A draw is lazy
like any op and fuses into the kernels that read it. As in CuPy, a draw of size=None is a 0-d
array, not a Python scalar.
"""
import os

import numpy as np

from . import _dtypes
from . import _fusec as _c
from ._array import ndarray
from ._dtypes import code_of


def _size(size):
    if size is None:
        return ()
    return (int(size),) if isinstance(size, (int, np.integer)) else tuple(int(s) for s in size)


def _fresh_seed():
    return int.from_bytes(os.urandom(8), "little")


class Generator:
    """numpy.random.Generator's methods on fusec's Philox streams: each draw takes the next
    stream of the seed (see the module's docstring). Arrays are made in the current context."""

    def __init__(self, seed=None):
        if isinstance(seed, Generator):
            seed = seed._seed
        if seed is None:
            seed = _fresh_seed()
        seed = int(seed)
        if seed < 0:
            raise ValueError("fusec.random: a seed must be non-negative")
        self._seed, self._stream = seed & (2**64 - 1), 0

    def __repr__(self):
        return f"fusec.random.Generator(seed={self._seed}, stream={self._stream})"

    def _draw(self, kind, *params, ctx=None):
        ctx = ctx or _c.current_context()
        r, self._stream = _c.rng(kind, self._seed, self._stream, ctx, *params)
        return r

    def random(self, size=None, dtype=np.float64, out=None):
        """Uniform in [0, 1) of a float (or complex) dtype."""
        return _out(out, self._draw("random", code_of(dtype), _size(size)))

    def uniform(self, low=0.0, high=1.0, size=None, dtype=np.float64):
        """Uniform in [low, high): low + (high - low) u, computed in float64."""
        return self._draw("uniform", float(low), float(high), code_of(dtype), _size(size))

    def standard_normal(self, size=None, dtype=np.float64, out=None):
        return _out(out, self._draw("standard_normal", code_of(dtype), _size(size)))

    def normal(self, loc=0.0, scale=1.0, size=None, dtype=np.float64):
        if scale < 0:
            raise ValueError("scale < 0")
        return self._draw("normal", float(loc), float(scale), code_of(dtype), _size(size))

    def integers(self, low, high=None, size=None, dtype=np.int64, endpoint=False):
        """Integers in [low, high) ([low, high] with endpoint); high None: [0, low)."""
        if high is None:
            low, high = 0, low
        low, high = int(low), int(high) + (1 if endpoint else 0)
        if low >= high:
            raise ValueError("low >= high" if not endpoint else "low > high")
        return self._draw("integers", low, high, code_of(dtype), _size(size))

    def exponential(self, scale=1.0, size=None, dtype=np.float64):
        if scale < 0:
            raise ValueError("scale < 0")
        return self._draw("exponential", float(scale), code_of(dtype), _size(size))

    def binomial(self, n, p, size=None):
        """Binomial trials for n == 1 (Bernoulli, int64 as NumPy's); other n are not yet."""
        if n != 1:
            raise NotImplementedError("fusec.random: binomial with n != 1 (fusec draws "
                                      "Bernoulli trials only)")
        if not 0 <= p <= 1:
            raise ValueError("p < 0, p > 1 or p is NaN")
        return self._draw("bernoulli", float(p), _size(size)).astype(np.int64)

    def permutation(self, x, axis=0):
        """An int: a permutation of arange(x) (int64). An array: its slices along axis in a
        random order (a new array)."""
        if isinstance(x, (int, np.integer)):
            return self._draw("permutation", int(x))
        x = _as_array(x)
        return self._draw("shuffle", x, axis, ctx=x.context)

    def shuffle(self, x, axis=0):
        """In place, as NumPy's: x (a fusec array) becomes its slices along axis in a random
        order (the object is rebound to the new value, as x[...] = v does)."""
        if not isinstance(x, ndarray):
            raise TypeError("fusec.random: shuffle takes a fusec array")
        x[...] = self._draw("shuffle", x, axis, ctx=x.context)

    def choice(self, a, size=None, replace=True, p=None, axis=0, shuffle=True):
        """Samples of arange(a) (an int) or of a's rows (an array), with or without
        replacement; p (weights) and axis != 0 are not yet."""
        if p is not None:
            raise NotImplementedError("fusec.random: choice with probabilities p")
        if axis != 0:
            raise NotImplementedError("fusec.random: choice along an axis other than 0")
        if isinstance(a, (int, np.integer)):
            return self._draw("choice", int(a), _size(size), bool(replace))
        a = _as_array(a)
        return self._draw("choice_array", a, _size(size), bool(replace), ctx=a.context)


def _as_array(x):
    from ._functions import asarray

    return asarray(x)


def _out(out, r):
    if out is None:
        return r
    out[...] = r
    return out


def default_rng(seed=None):
    """numpy.random.default_rng(seed): a Generator at its first stream (fusec's values)."""
    return seed if isinstance(seed, Generator) else Generator(seed)


# ---- CuPy's module-level functions, over one module-level generator ---------------------------

_global = Generator()


def seed(seed=None):
    """Reseeds the module-level generator (None: fresh entropy)."""
    global _global
    _global = Generator(seed)


def get_random_state():
    """The module-level Generator (fusec's; CuPy returns its RandomState)."""
    return _global


def rand(*size, dtype=float):
    return _global.random(size, dtype=dtype)


def randn(*size, dtype=float):
    return _global.standard_normal(size, dtype=dtype)


def random(size=None, dtype=float):
    return _global.random(size, dtype=dtype)


random_sample = ranf = sample = random


def uniform(low=0.0, high=1.0, size=None, dtype=float):
    return _global.uniform(low, high, size, dtype=dtype)


def normal(loc=0.0, scale=1.0, size=None, dtype=float):
    return _global.normal(loc, scale, size, dtype=dtype)


def standard_normal(size=None, dtype=float):
    return _global.standard_normal(size, dtype=dtype)


def exponential(scale=1.0, size=None, dtype=float):
    return _global.exponential(scale, size, dtype=dtype)


def randint(low, high=None, size=None, dtype=int):
    """Integers in [low, high) (high None: [0, low)), int64 by default."""
    return _global.integers(low, high, size, dtype=dtype)


def permutation(a):
    return _global.permutation(a)


def shuffle(a):
    _global.shuffle(a)


def choice(a, size=None, replace=True, p=None):
    return _global.choice(a, size, replace, p)


__all__ = ["Generator", "default_rng", "seed", "get_random_state", "rand", "randn", "random",
           "random_sample", "ranf", "sample", "uniform", "normal", "standard_normal",
           "exponential", "randint", "permutation", "shuffle", "choice"]
del _dtypes
