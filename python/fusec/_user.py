"""User kernels (cupy.ElementwiseKernel, ReductionKernel, RawKernel, RawModule) and streams
and events (cupy.cuda.Stream, Event, get_elapsed_time), over fusec's C API.

ElementwiseKernel and ReductionKernel calls are nodes of the lazy graph like any op: they fuse
with the ops around them, and their CUDA C is part of the kernel's cache key. Their bodies are
CUDA C, so they run on the GPU: on the host backend a call builds its node (dtypes and shapes
are checked, as on the GPU) and evaluating it raises NotImplementedError. RawModule compiles
with NVRTC and launches on the GPU only (NotImplementedError on the host backend);
RawModule.compile(arch) compiles into the kernel cache with no GPU.
"""
import numpy as np

from . import _dtypes
from . import _fusec as _c
from ._array import ndarray


def _ctx_of(args):
    for a in args:
        if isinstance(a, ndarray):
            return a.context
    return _c.current_context()


class _PerContext:
    """A definition made once per context on first use (kernels belong to a context)."""

    def _handle(self, ctx):
        h = self._handles.get(ctx)
        if h is None:
            h = self._handles[ctx] = self._define(ctx)
        return h


def _inputs(args):
    """NumPy arrays as fusec arrays; other arguments as they are (scalars become weak)."""
    from ._functions import asarray

    return tuple(asarray(a) if isinstance(a, (np.ndarray, np.generic, list)) else a
                 for a in args)


def _rebind(out, value):
    """An output array given by the caller takes the result's value (fusec's arrays are
    values: the object is rebound, as a[...] = v does)."""
    if not isinstance(out, ndarray):
        raise TypeError("fusec: an output argument must be a fusec array")
    if out.shape != value.shape or out.dtype != value.dtype:
        raise ValueError(f"fusec: output of shape {out.shape} and dtype {out.dtype} given "
                         f"for a result of {value.shape} {value.dtype}")
    out[...] = value
    return out


def _count(params):
    return len([p for p in params.split(",") if p.strip()])


class ElementwiseKernel(_PerContext):
    """cupy.ElementwiseKernel(in_params, out_params, operation, name='kernel', ...).

    `in_params` / `out_params` are "TYPE NAME" lists ("float32 x, T y, raw T z"); `operation`
    is CUDA C assigning every output (`i` is the element's index). Call it with the inputs,
    then optionally the outputs: kernel(x, y) returns the output (a tuple for several); given
    outputs take the result's value (fusec's arrays are values) and are returned. A call is
    lazy and fuses with the ops around it. Options of CuPy's that fusec decides itself
    (reduce_dims, loop_prep, after_loop) are accepted and ignored; `preamble` is not
    supported (define helpers inside `operation`)."""

    def __init__(self, in_params, out_params, operation, name="kernel", reduce_dims=True,
                 preamble="", no_return=False, return_tuple=False, **kwargs):
        if preamble:
            raise NotImplementedError("fusec.ElementwiseKernel: preamble (fc_elementwise_kernel "
                                      "takes the operation only)")
        self.in_params, self.out_params = in_params, out_params
        self.operation, self.name = operation, name
        self.nin, self.nout = _count(in_params), _count(out_params)
        self.no_return, self.return_tuple = no_return, return_tuple
        self._handles = {}
        self._handle(_c.current_context())  # parse errors now, as CuPy raises them

    def _define(self, ctx):
        return _c.elementwise_kernel(ctx, self.in_params, self.out_params, self.operation,
                                     self.name)

    def __call__(self, *args, size=None, block_size=None, stream=None):
        if len(args) not in (self.nin, self.nin + self.nout):
            raise TypeError(f"{self.name}: takes {self.nin} inputs (and optionally "
                            f"{self.nout} outputs), {len(args)} given")
        ins = _inputs(args[:self.nin])
        res = _c.kernel_call(self._handle(_ctx_of(ins)), ins, self.nout)
        if len(args) > self.nin:
            res = tuple(_rebind(o, r) for o, r in zip(args[self.nin:], res))
        if self.no_return:
            return None
        return res if (self.return_tuple or self.nout > 1) else res[0]


class ReductionKernel(_PerContext):
    """cupy.ReductionKernel(in_params, out_params, map_expr, reduce_expr, post_map_expr,
    identity, name='reduce_kernel', reduce_type=None, ...): kernel(*inputs, axis=None,
    keepdims=False) reduces over `axis` (None: every axis). Lazy and fused, as
    ElementwiseKernel."""

    def __init__(self, in_params, out_params, map_expr, reduce_expr, post_map_expr, identity,
                 name="reduce_kernel", reduce_type=None, reduce_dims=True, preamble="",
                 **kwargs):
        if preamble:
            raise NotImplementedError("fusec.ReductionKernel: preamble")
        self.args = (in_params, out_params, map_expr, reduce_expr, post_map_expr,
                     str(identity), name, reduce_type)
        self.name, self.nin = name, _count(in_params)
        self._handles = {}
        self._handle(_c.current_context())

    def _define(self, ctx):
        return _c.reduction_kernel(ctx, *self.args)

    def __call__(self, *args, out=None, axis=None, keepdims=False, stream=None):
        if len(args) != self.nin:
            raise TypeError(f"{self.name}: takes {self.nin} inputs, {len(args)} given")
        ins = _inputs(args)
        r = _c.kernel_reduce(self._handle(_ctx_of(ins)), ins, axis, bool(keepdims))
        return r if out is None else _rebind(out, r)


class RawModule:
    """cupy.RawModule(code=None, *, path=None, options=(), name_expressions=None, ...): CUDA
    C++ compiled by NVRTC (through fusec's kernel cache) for the current context's GPU.
    get_function(name) gives a RawKernel. On the host backend making one raises
    NotImplementedError (the host does not run CUDA C); compile(arch) needs no GPU."""

    def __init__(self, code=None, *, path=None, options=(), backend="nvrtc",
                 translate_cucomplex=False, enable_cooperative_groups=False,
                 name_expressions=None, jitify=False, _compile_only=False):
        if (code is None) == (path is None):
            raise TypeError("RawModule: give one of code and path")
        if code is None:
            with open(path) as f:
                code = f.read()
        if backend != "nvrtc" or jitify:
            raise NotImplementedError("fusec.RawModule: NVRTC only (no nvcc backend, no jitify)")
        self.code, self.options = code, tuple(options)
        self.name_expressions = tuple(name_expressions or ())
        self._ctx = _c.current_context()
        self._h = None if _compile_only else _c.module_create(
            self._ctx, code, self.options, self.name_expressions)

    def compile(self, arch):
        """Compiles the module for `arch` ("sm_90") into the kernel cache; no GPU needed."""
        _c.module_create(self._ctx, self.code, self.options, self.name_expressions, arch)

    def get_function(self, name):
        return RawKernel._of(self, name)


class RawKernel:
    """cupy.RawKernel(code, name, options=(), ...): kernel((grid), (block), args,
    shared_mem=0) launches `name`. Arguments: fusec arrays (each passed as a pointer to a
    copy of its value that the kernel may write: the array object takes the written value
    afterwards, as in CuPy's in-place launches), NumPy scalars (their dtype), Python bool /
    int / float / complex (bool, int64, float64, complex128, as CuPy passes them)."""

    def __init__(self, code, name, options=(), backend="nvrtc", translate_cucomplex=False,
                 enable_cooperative_groups=False, jitify=False):
        self._module = RawModule(code, options=options, backend=backend, jitify=jitify)
        self.name = name

    @classmethod
    def _of(cls, module, name):
        k = cls.__new__(cls)
        k._module, k.name = module, name
        return k

    def __call__(self, grid, block, args, *, shared_mem=0, stream=None):
        def dims(d):
            d = (d,) if isinstance(d, int) else tuple(d)
            return tuple(d) + (1,) * (3 - len(d))

        packed = tuple(a if isinstance(a, ndarray) else
                       (_dtypes.code_of(a.dtype), a.item()) if isinstance(a, np.generic) else a
                       for a in args)
        arrays = [a for a in args if isinstance(a, ndarray)]
        with (stream if stream is not None else _NoStream()):
            outs = _c.module_launch(self._module._h, self.name, dims(grid), dims(block),
                                    int(shared_mem), packed)
        for a, v in zip(arrays, outs):
            a[...] = v


class _NoStream:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


# ---- streams and events ---------------------------------------------------------------------

class Stream:
    """cupy.cuda.Stream: an ordered queue of work on a context (the current one).

    `with stream:` makes it current: evaluations inside the block (fusec.eval, conversions to
    NumPy, raw kernel launches) are queued on it; work of other streams is waited for through
    events where it is read. Stream.null is each context's default stream. On the host backend
    work runs at once (streams exist so that code runs unchanged)."""

    def __init__(self, null=False, non_blocking=False, ptds=False, *, device=None):
        self.context = device or _c.current_context()
        self._h = None if null else _c.stream_create(self.context)
        self._prev = []

    def __repr__(self):
        return f"<fusec.Stream {'null' if self._h is None else hex(id(self._h))}>"

    def synchronize(self):
        """Waits for the stream's work; raises the first asynchronous error."""
        _c.stream_synchronize(self.context, self._h)

    def record(self, event=None):
        """Records an event (a new one when None) after the work queued so far; returns it."""
        event = event or Event(device=self.context)
        event.record(self)
        return event

    def wait_event(self, event):
        """Makes later work on this stream wait for `event`."""
        _c.stream_wait_event(self._h, event._h)

    def use(self):
        """Makes this stream current (until another is used; `with` restores the old one)."""
        _c._set_stream(self._h)
        return self

    def __enter__(self):
        self._prev.append(_c._set_stream(self._h))
        return self

    def __exit__(self, *exc):
        _c._set_stream(self._prev.pop())
        return False

    @property
    def done(self):
        self.synchronize()
        return True



class Event:
    """cupy.cuda.Event: a point in a stream's work, for waits and timing (milliseconds of the
    GPU's clock; the wall clock on the host backend)."""

    def __init__(self, block=False, disable_timing=False, interprocess=False, *, device=None):
        self.context = device or _c.current_context()
        self._h = _c.event_create(self.context)

    def record(self, stream=None):
        _c.event_record(self._h, stream._h if stream is not None else None)

    def synchronize(self):
        _c.event_synchronize(self._h)

    def elapsed_time(self, end):
        """Milliseconds from this event to `end` (both recorded; waits for them)."""
        return get_elapsed_time(self, end)

    @property
    def done(self):
        self.synchronize()
        return True


def get_elapsed_time(start_event, end_event):
    """cupy.cuda.get_elapsed_time: milliseconds between two recorded events."""
    return _c.event_elapsed(start_event._h, end_event._h)


class _NullStream:
    def __get__(self, obj, cls):
        return cls(null=True)


Stream.null = _NullStream()
