"""fusec.fuse: a Python function traced once per signature into a fusec program and replayed.

    @fusec.fuse
    def gelu_like(x, y, s):
        return fusec.tanh(x * s) + y ** 2

The first call with a given signature (each argument's dtype and shape for arrays; the kind
for Python floats and complex numbers; the value of Python ints, bools and other objects)
runs the function once on placeholders (fc_placeholder: inputs with no data), which builds
its graph without computing anything. Every later call with that signature replays the graph
on the call's arrays in one C call (fc_replay_run: the traced nodes built again on the new
inputs), without running the Python function; the result is the lazy array that building
the same expression op by op would give, so it evaluates as one fused program (its plan is
cached after the first evaluation) and fuses with what is done with it afterwards.

What a traced function may do: any fusec array code, Python control flow on shapes, dtypes,
ints, bools and other static arguments. What it may not (TypeError at the trace): evaluate a
traced value (bool(x), float(x), printing, NumPy conversion, a boolean mask's count), or
assign into an array it did not make (an argument, a captured array). Arrays it captures from
outside (a closure, a global) are inputs of the replay: their current values are used at
every call. Random draws inside the function are traced once: every replay repeats the same
values (draw them outside and pass them in).
"""
import functools

from . import _dtypes
from . import _fusec as _c
from ._array import ndarray

import numpy as np

_F64, _C128 = _dtypes.F64, _dtypes.C128
_RETRACE = object()


def _static_key(v):
    try:
        hash(v)
    except TypeError:
        raise TypeError(f"fusec.fuse: an argument of type {type(v).__name__} is neither an "
                        "array nor a scalar nor hashable (static arguments are keyed by "
                        "value)") from None
    return (type(v), v)


class _Trace:
    """One signature's traced program: the placeholders, the captured arrays and outputs."""

    __slots__ = ("outputs", "run", "captured", "shapes", "layout", "static")

    def replay(self, dyn):
        captured = self.captured
        if captured:
            for obj, (code, shape) in zip(captured, self.shapes):
                if obj._code != code or obj.shape != shape:
                    return _RETRACE  # a captured array changed its dtype or shape: trace again
            dyn = dyn + captured
        res = self.run(*dyn)
        layout = self.layout
        if layout is None:
            return res[0]
        it = iter(res)
        return layout(next(it) if s is None else s for s in self.static)


class Fused:
    """A function fused by fusec.fuse: call it as the function (see fusec.fuse)."""

    def __init__(self, fn, kernel_name=None):
        functools.update_wrapper(self, fn)
        self._fn = fn
        self.kernel_name = kernel_name or getattr(fn, "__name__", "fused")
        self._traces = {}

    def __repr__(self):
        return f"<fusec.fuse {self.kernel_name} ({len(self._traces)} traced signatures)>"

    def clear_cache(self):
        """Forgets every traced signature (the next call of each traces again)."""
        self._traces.clear()

    def _signature(self, args, kwargs):
        """(key, dynamic values, the arguments with NumPy data made fusec arrays)."""
        key, dyn = [], []
        items = list(args)
        if kwargs:
            names = sorted(kwargs)
            items += [kwargs[n] for n in names]
            key.append(tuple(names))
        for i, v in enumerate(items):
            t = type(v)
            if t is float or t is complex:
                key.append(t)
                dyn.append(v)
                continue
            if t is int or t is bool:
                key.append((t, v))
                continue
            if isinstance(v, ndarray):
                key.append((v._code, v.shape, v.context))
                dyn.append(v)
                continue
            if isinstance(v, (np.ndarray, np.generic)):
                v = items[i] = _asarray(v)
                key.append((v._code, v.shape, v.context))
                dyn.append(v)
                continue
            key.append(_static_key(v))
        return tuple(key), dyn, items

    def __call__(self, *args, **kwargs):
        if _c._tracing():  # called inside another trace: its ops join that trace
            return self._fn(*args, **kwargs)
        fast = None if kwargs else _c._signature(args)
        if fast is not None:
            key, dyn = fast
            items = args
        else:
            key, dyn, items = self._signature(args, kwargs)
            dyn = tuple(dyn)
        tr = self._traces.get(key)
        if tr is not None:
            if tr.layout is None and not tr.captured:  # the common case, kept short
                return tr.run(*dyn)[0]
            r = tr.replay(dyn)
            if r is not _RETRACE:
                return r
        tr = self._trace(items, len(args), kwargs)
        if tr.outputs is None:
            return tr.static
        self._traces[key] = tr
        return tr.replay(dyn)

    def _trace(self, items, nargs, kwargs):
        ctx = next((v.context for v in items if isinstance(v, ndarray)), None)
        if ctx is None:
            ctx = _c.current_context()
        holders, traced = [], []
        for v in items:
            t = type(v)
            if t is float or t is complex:
                p = _c.placeholder(_F64 if t is float else _C128, (), True, ctx)
            elif isinstance(v, ndarray):
                if v.context is not ctx:
                    raise ValueError("fusec.fuse: arrays of different contexts")
                p = _c.placeholder(v._code, v.shape, False, ctx)
            else:
                traced.append(v)
                continue
            holders.append(p)
            traced.append(p)
        targs = traced[:nargs]
        tkw = dict(zip(sorted(kwargs), traced[nargs:])) if kwargs else {}
        _c._trace_begin()
        try:
            out = self._fn(*targs, **tkw)
        finally:
            made, read = _c._trace_end()
        tr = _Trace()
        mine = {id(p) for p in holders}
        tr.captured = tuple(o for i, o in read.items() if i not in made and i not in mine)
        tr.shapes = tuple((o._code, o.shape) for o in tr.captured)
        if isinstance(out, ndarray):
            tr.outputs, tr.layout, tr.static = (out,), None, None
        elif isinstance(out, (tuple, list)) and any(isinstance(o, ndarray) for o in out):
            tr.outputs = tuple(o for o in out if isinstance(o, ndarray))
            tr.static = tuple(None if isinstance(o, ndarray) else o for o in out)
            tr.layout = type(out) if type(out) in (tuple, list) else tuple
        else:  # no array out: nothing to replay; the value is returned as it is
            tr.outputs, tr.layout, tr.static = None, None, out
            return tr
        froms = tuple(holders) + tuple(_c._alias(o) for o in tr.captured)
        tr.run = _c.replay(tr.outputs, froms).run
        return tr


def _asarray(v):
    from ._functions import asarray

    return asarray(v)


def fuse(*args, **kwargs):
    """fusec.fuse(fn) or @fusec.fuse(kernel_name=...): fn traced once per signature and
    replayed (cupy.fuse's decorator).

    The signature of a call: for each argument, a fusec array's dtype, shape and context (a
    NumPy array or scalar is converted with fusec.asarray first); the kind of a Python float
    or complex (its value is an argument of the replay, a weak scalar as in NumPy 2); the value
    of a Python int or bool, and of any other (hashable) object, such as an axis or a flag,
    which the function may branch on. Keyword arguments count as positional ones, by name.

    The first call of a signature runs fn on placeholders: inputs with no data, so it builds
    fn's graph and computes nothing. Later calls replay that graph on their arguments in one
    C call (no Python op by op), returning the same lazy arrays that building the expression
    again would: evaluated when needed, as one fused program, from a cached plan.

    fn returns an array, or a tuple or list of them (other items are returned as traced).
    Raises TypeError at the trace when fn evaluates a traced value (bool(x) in an `if`,
    float(x), printing, NumPy conversion, boolean masks) or assigns into an array it did not
    make. Arrays fn captures (closures, globals) are read at every call; random draws inside
    fn repeat their traced values. `kernel_name` names the fused function in repr only
    (fusec names kernels by structure).
    """
    if len(args) == 1 and callable(args[0]) and not kwargs:
        return Fused(args[0])
    if args:
        raise TypeError("fusec.fuse: use @fusec.fuse or @fusec.fuse(kernel_name=...)")
    unknown = set(kwargs) - {"kernel_name"}
    if unknown:
        raise TypeError(f"fusec.fuse: unknown keyword {sorted(unknown)[0]!r}")
    return lambda fn: Fused(fn, kwargs.get("kernel_name"))
