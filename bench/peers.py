#!/usr/bin/env python3
"""bench/peers.py - the benchmark workloads W1-W12, I11, I12 and I13 in fusec's peers, side by side.

Runs every workload of bench/fc/ in CuPy, cupy.fuse, PyTorch eager, torch.compile (mode
default) and JAX (jax.jit: XLA) in one process on one GPU, and in the same run measures:

  - the device-to-device copy bandwidth (a large copy, counting bytes read and written);
  - each peer's host dispatch overhead per tiny elementwise op, and per evaluation of a chain
    of 1, 10 and 100 elementwise ops (the figure fusec's bench/latency compares with);
  - CuPy's first call of a new kernel: with an empty kernel cache, and from the warm disk cache,
    each in a new process (CUPY_CACHE_DIR);
  - the size sweep for the plot: W1 and W6 at 2^16, 2^18, ..., 2^28 elements.

Timing: CuPy, cupy.fuse, PyTorch and torch.compile: CUDA events of the peer's own library
around each call, warm-up calls first, then the median (and min, max) of --runs timed calls,
each synchronised. JAX has no events on its stream and dispatches asynchronously, so its column
is timed by back-to-back calls over the wall clock: after the warm-up, --runs batches of B calls
issued back to back, each batch ended by block_until_ready, the time a call = the batch's wall
time / B (B adaptive: about 50 ms of work a batch, 1 to 100 calls; --jax-batch fixes it); the
cell also keeps per_call_sync_ms, the median wall time of single calls each waited for. Inputs
are uniform random numbers in [0, 1) (never zeros), generated once with CuPy and shared with
PyTorch and JAX through DLPack (JAX: jax.dlpack.from_dlpack, else jax.device_put from the host,
once, outside the clock), so every peer computes on the same data; each result is compared with
the first peer's (max_rel_err) to catch a wrong formulation (not I11_normal's random draws:
each peer has its own generator). JAX runs with x64 disabled except inside the cells of the
workloads that need it (W8's complex128, I12_cholesky's float64), where jax.enable_x64 is on
around building, compiling, timing and comparing the cell alone.

JAX is optional: where `import jax` fails or JAX has no GPU backend, its cells are null with
the reason recorded, and the rest runs. XLA's allocator is set not to take most of the GPU up
front (XLA_PYTHON_CLIENT_PREALLOCATE=false, unless set already), so that CuPy and PyTorch keep
theirs.

A peer that fails (not installed, a torch.compile error, out of memory, ...) gives a null time
for its cell with the error printed and recorded; the run goes on. --deadline-s skips what is
left once the time is spent (recorded as skipped, never silently).

Usage:
    python3 bench/peers.py [--json FILE] [--runs 15] [--warmup 3] [--only W1,W6] ...
See --help and bench/README.md.
"""

import argparse
import contextlib
import gc
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback

PEERS = ("cupy", "cupy_fuse", "torch", "torch_compile", "jax")

# ---------------------------------------------------------------------------------------------
# Library loading: each is optional; a missing one makes its cells null.
# ---------------------------------------------------------------------------------------------

cp = None
torch = None
F = None
jax = None
jnp = None
JAX_DEVICE = None
LIB_ERRORS = {}


def load_libraries(want_cupy, want_torch, want_jax=True, jax_cpu=False):
    global cp, torch, F, jax, jnp, JAX_DEVICE
    if want_cupy:
        try:
            import cupy as _cp

            _cp.cuda.runtime.getDeviceCount()
            cp = _cp
        except Exception as e:  # noqa: BLE001 - any failure just disables the peer
            LIB_ERRORS["cupy"] = "cupy unavailable: %s" % one_line(e)
    if want_torch:
        try:
            import torch as _torch
            import torch.nn.functional as _F

            if not _torch.cuda.is_available():
                raise RuntimeError("torch.cuda.is_available() is False")
            torch, F = _torch, _F
            # Full f32 matmul, as CuPy does by default: W12 compares like with like.
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False
        except Exception as e:  # noqa: BLE001
            LIB_ERRORS["torch"] = "torch unavailable: %s" % one_line(e)
    if want_jax:
        try:
            # XLA's client would take 75% of the GPU's memory at its first use and keep it
            # from CuPy and PyTorch: it grows as it needs instead.
            os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
            import jax as _jax
            import jax.numpy as _jnp

            # 32-bit by default (JAX's own default, whatever JAX_ENABLE_X64 says): x64 only
            # inside the cells of the workloads that need it (Workload.x64, jax_x64()).
            _jax.config.update("jax_enable_x64", False)
            if jax_cpu:  # for checking the forms on a machine without a GPU: not a figure
                dev = _jax.devices("cpu")[0]
            else:
                try:
                    dev = _jax.devices("gpu")[0]
                except RuntimeError as e:
                    raise RuntimeError("JAX has no GPU backend (%s; jax %s)"
                                       % (one_line(e), _jax.__version__)) from None
            jax, jnp, JAX_DEVICE = _jax, _jnp, dev
        except Exception as e:  # noqa: BLE001
            LIB_ERRORS["jax"] = "jax unavailable: %s" % one_line(e)


def one_line(e):
    s = "%s: %s" % (type(e).__name__, e)
    s = " ".join(s.split())
    return s if len(s) <= 400 else s[:397] + "..."


def log(*a):
    print(*a, flush=True)


# ---------------------------------------------------------------------------------------------
# Timing
# ---------------------------------------------------------------------------------------------


def sync(lib):
    if lib == "cupy":
        cp.cuda.Device().synchronize()
    elif lib == "torch":
        torch.cuda.synchronize()
    # jax: each cell waits for its own results (block_until_ready)


def sync_any():
    """Waits for the GPU work of whichever array library made the inputs."""
    if cp is not None:
        sync("cupy")
    elif torch is not None:
        sync("torch")


def time_gpu(fn, lib, warmup, runs):
    """Median/min/max milliseconds of fn() by CUDA events of `lib`, plus the first call's wall
    time (which holds any compilation: torch.compile, cupy.fuse, CuPy's kernel cache). Returns
    (stats dict, last output)."""
    t0 = time.perf_counter()
    out = fn()
    sync(lib)
    first_ms = (time.perf_counter() - t0) * 1e3
    for _ in range(max(0, warmup - 1)):
        out = fn()
    sync(lib)
    times = []
    if lib == "cupy":
        start, end = cp.cuda.Event(), cp.cuda.Event()
        for _ in range(runs):
            out = None
            start.record()
            out = fn()
            end.record()
            end.synchronize()
            times.append(cp.cuda.get_elapsed_time(start, end))
    else:
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        for _ in range(runs):
            out = None
            start.record()
            out = fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
    return time_stats(times, first_ms), out


def time_stats(times, first_ms):
    """A cell's figures from its timed runs (ms) and its first call's wall time."""
    return {"median_ms": statistics.median(times), "min_ms": min(times), "max_ms": max(times),
            "runs": len(times), "first_call_ms": first_ms}


# JAX's column: back-to-back calls over the wall clock (see the module's docstring).
JAX_BATCH_MAX = 100        # calls a batch at most
JAX_BATCH_TARGET_MS = 50.0  # wall time a batch aims at (so the per-batch wait is amortised)


def time_jax(fn, warmup, runs, batch=0):
    """Median/min/max milliseconds a call of fn() (a jax.jit function of placed inputs) from
    --runs batches of `batch` back-to-back calls, each batch waited for at its end
    (block_until_ready), over the wall clock; batch 0 picks it from the single calls' time.
    Also the first call's wall time (jit tracing and XLA's compile) and per_call_sync_ms, the
    median of single calls each waited for (launch and wait latency included; a third as
    many as --runs, at least 3)."""
    t0 = time.perf_counter()
    out = jax.block_until_ready(fn())
    first_ms = (time.perf_counter() - t0) * 1e3
    for _ in range(max(0, warmup - 1)):
        out = fn()
    jax.block_until_ready(out)
    single = []
    for _ in range(max(3, runs // 3)):  # enough for the batch size and the figure
        out = None
        t0 = time.perf_counter()
        out = jax.block_until_ready(fn())
        single.append((time.perf_counter() - t0) * 1e3)
    per_call = statistics.median(single)
    if batch <= 0:
        batch = int(max(1, min(JAX_BATCH_MAX, JAX_BATCH_TARGET_MS / max(per_call, 1e-3))))
    times = []
    for _ in range(runs):
        out = None
        t0 = time.perf_counter()
        for _ in range(batch):
            out = fn()
        jax.block_until_ready(out)
        times.append((time.perf_counter() - t0) * 1e3 / batch)
    stats = time_stats(times, first_ms)
    stats.update({"timing": "back-to-back wall clock", "batch": batch,
                  "per_call_sync_ms": per_call})
    return stats, out


@contextlib.contextmanager
def jax_x64():
    """JAX's 64-bit types on inside the block only: jax.enable_x64(True) (a configuration
    context in current JAX), else jax.experimental.enable_x64() (older JAX)."""
    state = getattr(jax, "enable_x64", None)
    if state is not None:
        with state(True):
            yield
        return
    from jax.experimental import enable_x64

    with enable_x64():
        yield


def free_memory():
    gc.collect()
    if cp is not None:
        try:
            cp.cuda.Device().synchronize()
            cp.get_default_memory_pool().free_all_blocks()
            cp.get_default_pinned_memory_pool().free_all_blocks()
        except Exception:  # noqa: BLE001 - best effort after an error
            pass
    if torch is not None:
        try:
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
        except Exception:  # noqa: BLE001
            pass


# ---------------------------------------------------------------------------------------------
# Inputs: generated with CuPy when it is there (and shared with PyTorch by DLPack), else torch.
# ---------------------------------------------------------------------------------------------


def rand(shape, dtype="float32"):
    """Uniform [0, 1) in the given real or complex dtype, as a CuPy array if CuPy is usable,
    else a torch tensor."""
    if isinstance(shape, int):
        shape = (shape,)
    if cp is None and torch is None and jax is not None:
        # JAX alone (--no-cupy --no-torch): NumPy's draws, placed on JAX's device by each JAX
        # cell (under x64 where the workload has it, so an f64 input stays f64)
        return host_rand(shape, dtype)
    if cp is not None:
        if dtype in ("complex64", "complex128"):
            real = "float32" if dtype == "complex64" else "float64"
            a = cp.random.random(shape, dtype=real) + 1j * cp.random.random(shape, dtype=real)
            return a.astype(dtype)
        if dtype == "float16":  # cupy.random draws f32 and f64 only
            return cp.random.random(shape, dtype="float32").astype(dtype)
        return cp.random.random(shape, dtype=dtype)
    tdt = getattr(torch, dtype)
    return torch.rand(shape, device="cuda", dtype=tdt)


def host_rand(shape, dtype="float32"):
    """Uniform [0, 1) as a NumPy array (bf16 through ml_dtypes, which JAX brings)."""
    import numpy as np

    rng = np.random.default_rng(1)
    if dtype in ("complex64", "complex128"):
        real = "float32" if dtype == "complex64" else "float64"
        return (rng.random(shape, dtype=real) + 1j * rng.random(shape, dtype=real)).astype(dtype)
    if dtype in ("float16", "bfloat16"):
        return rng.random(shape, dtype="float32").astype(jnp.bfloat16 if dtype == "bfloat16"
                                                         else dtype)
    return rng.random(shape, dtype=dtype)


def is_jax(a):
    return jax is not None and isinstance(a, jax.Array)


def to_numpy(a):
    """A host copy of a CuPy, PyTorch or JAX array (or a NumPy one)."""
    import numpy as np

    if cp is not None and isinstance(a, cp.ndarray):
        return cp.asnumpy(a)
    if torch is not None and isinstance(a, torch.Tensor):
        t = a.detach().contiguous().cpu()
        if t.dtype == torch.bfloat16:  # NumPy has no bf16: its bits, as ml_dtypes' bfloat16
            return t.view(torch.int16).numpy().view(jnp.bfloat16)
        return t.numpy()
    return np.asarray(a)


def to_jax(a):
    """The array on JAX's device, once, outside any clock: through DLPack where JAX can take
    the buffer as it is (the same GPU), else copied there from the host (jax.device_put)."""
    if a is None or jax is None:
        return None
    if is_jax(a):
        return a
    # Not a NumPy array: it has __dlpack__ too, and JAX would take it as a host (CPU) array,
    # so that the cell ran on the CPU (--no-cupy --no-torch, whose inputs are NumPy's).
    on_host = type(a).__module__ == "numpy"
    if JAX_DEVICE.platform == "gpu" and hasattr(a, "__dlpack__") and not on_host:
        try:
            return jax.block_until_ready(jax.dlpack.from_dlpack(a))
        except Exception:  # noqa: BLE001 - a dtype or layout DLPack does not carry: copy
            pass
    return jax.block_until_ready(jax.device_put(to_numpy(a), JAX_DEVICE))


def to_cupy(a):
    if a is None or cp is None:
        return None
    if isinstance(a, cp.ndarray):
        return a
    if torch is not None and isinstance(a, torch.Tensor):
        a = a.contiguous()
        if a.dtype == torch.bool:
            a = a.to(torch.uint8)
        return cp.from_dlpack(a)
    if is_jax(a):
        try:
            return cp.from_dlpack(a)
        except Exception:  # noqa: BLE001 - e.g. bool or a JAX on another device: via the host
            return cp.asarray(to_numpy(a))
    return cp.asarray(a)


def to_torch(a):
    if a is None or torch is None:
        return None
    if isinstance(a, torch.Tensor):
        return a
    if is_jax(a):
        try:
            return torch.from_dlpack(a)
        except Exception:  # noqa: BLE001
            return torch.from_numpy(to_numpy(a)).cuda()
    return torch.from_dlpack(a)


def rel_err(out, ref):
    """max |out - ref| / max |ref| (in f64), or None if it cannot be computed; shape and dtype
    mismatches are reported as strings. Several outputs (a tuple): the largest of their
    errors, each output against its own reference."""
    if out is None or ref is None:
        return None
    if isinstance(out, (tuple, list)) or isinstance(ref, (tuple, list)):
        if not (isinstance(out, (tuple, list)) and isinstance(ref, (tuple, list))) or \
                len(out) != len(ref):
            return "outputs: %s != %s" % (len(out) if isinstance(out, (tuple, list)) else 1,
                                          len(ref) if isinstance(ref, (tuple, list)) else 1)
        errs = [rel_err(o, r) for o, r in zip(out, ref)]
        for e in errs:
            if isinstance(e, str):
                return e
        errs = [e for e in errs if e is not None]
        return max(errs) if errs else None
    out, ref = widen_bf16(out), widen_bf16(ref)
    try:
        if cp is None and torch is None:  # JAX alone: on the host
            import numpy as np

            a, r = to_numpy(out), to_numpy(ref)
            if a.shape != r.shape:
                return "shape %s != %s" % (a.shape, r.shape)
            a = a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)
            r = r.astype(np.complex128 if r.dtype.kind == "c" else np.float64)
            den = float(np.max(np.abs(r))) if r.size else 0.0
            num = float(np.max(np.abs(a - r))) if r.size else 0.0
        elif cp is not None:
            a, r = to_cupy(out), to_cupy(ref)
            if a.shape != r.shape:
                return "shape %s != %s" % (a.shape, r.shape)
            a = a.astype(cp.complex128 if a.dtype.kind == "c" else cp.float64)
            r = r.astype(cp.complex128 if r.dtype.kind == "c" else cp.float64)
            den = float(cp.max(cp.abs(r)))
            num = float(cp.max(cp.abs(a - r)))
        else:
            a, r = to_torch(out), to_torch(ref)
            if tuple(a.shape) != tuple(r.shape):
                return "shape %s != %s" % (tuple(a.shape), tuple(r.shape))
            cdt = torch.complex128 if (a.is_complex() or r.is_complex()) else torch.float64
            a, r = a.to(cdt), r.to(cdt)
            den = float(r.abs().max())
            num = float((a - r).abs().max())
        return num / den if den > 0 else num
    except Exception as e:  # noqa: BLE001
        return "compare failed: %s" % one_line(e)


def widen_bf16(a):
    """bf16 as f32 for the comparison (CuPy has no bf16 for DLPack to hand it)."""
    try:
        if torch is not None and isinstance(a, torch.Tensor) and a.dtype == torch.bfloat16:
            return a.float()
        if is_jax(a) and a.dtype == jnp.bfloat16:
            return a.astype(jnp.float32)
    except Exception:  # noqa: BLE001 - the comparison reports what fails
        pass
    return a


def dtype_name(out):
    if out is None:
        return None
    if isinstance(out, (tuple, list)):
        return ", ".join(str(dtype_name(o)) for o in out)
    try:
        return str(out.dtype).replace("torch.", "")
    except Exception:  # noqa: BLE001
        return None


# ---------------------------------------------------------------------------------------------
# The workloads. Each returns a dict of peer name -> zero-argument callable (built lazily, so a
# missing library or an unsupported form is an error of that cell alone), its inputs, and the
# floor bytes of each workload (None for compute- or library-bound ones).
# ---------------------------------------------------------------------------------------------


class Workload:
    def __init__(self, wid, desc, make, compare=True, flops=None, x64=False, post=None):
        self.id = wid
        self.desc = desc
        # the nominal floating-point operations at --scale 1, for GFLOP/s (compute-bound rows)
        self.flops = flops
        # make(scale) -> (inputs dict, {peer: builder}, floor bytes or None); builder() -> the
        # zero-argument callable that is timed.
        self.make = make
        # False where the peers' results cannot agree (random draws from different
        # generators): no reference, no max_rel_err.
        self.compare = compare
        # True where JAX needs its 64-bit types (complex128, float64): on for its cell alone.
        self.x64 = x64
        # {peer: f(out) -> the value compared}: a form whose result is another encoding of
        # the same figures (torch.batch_norm_stats' inverse std), converted outside the clock.
        self.post = post or {}


def fuse(name, fn):
    """cupy.fuse with an explicit kernel name: a lambda's own name, "<lambda>", is no C
    identifier and NVRTC rejects the kernel."""
    return cp.fuse(kernel_name=name)(fn)


def jax_form(f, *arrays):
    """The JAX cell's builder: jax.jit(f) over the arrays placed on JAX's device once (to_jax,
    outside the clock; built inside the cell, so under jax_x64() where the workload needs it).
    f's static parts (shapes, axes, constants) are Python values closed over."""
    def build():
        xs = [to_jax(a) for a in arrays]
        g = jax.jit(f)
        return lambda: g(*xs)
    return build


HIGHEST = "highest"  # jnp.matmul's precision: full f32 products, no TF32, as CuPy's


def torch_compile(fn, static=False):
    """torch.compile in its default mode; static=True pins the shapes (dynamic=False), so that
    the sweep compiles a kernel per size, as the workload table's single-size compile does."""
    return torch.compile(fn, dynamic=False) if static else torch.compile(fn)


def w1_impls(x, static=False):
    def cupy_fn():
        return lambda: cp.tanh(cp.sin(x) + 0.1 * x)

    def fuse_fn():
        f = fuse("fc_bench_w1", lambda a: cp.tanh(cp.sin(a) + 0.1 * a))
        return lambda: f(x)

    def t(a):
        return torch.tanh(torch.sin(a) + 0.1 * a)

    def torch_fn():
        tx = to_torch(x)
        return lambda: t(tx)

    def compile_fn():
        tx, f = to_torch(x), torch_compile(t, static)
        return lambda: f(tx)

    return {"cupy": cupy_fn, "cupy_fuse": fuse_fn, "torch": torch_fn, "torch_compile": compile_fn,
            "jax": jax_form(lambda a: jnp.tanh(jnp.sin(a) + 0.1 * a), x)}


def w6_impls(x, static=False):
    def cupy_fn():
        return lambda: cp.sqrt(cp.sum(x * x, axis=1))

    def fuse_fn():
        f = fuse("fc_bench_w6", lambda a: cp.sqrt(cp.sum(a * a, axis=1)))
        return lambda: f(x)

    def t(a):
        return torch.sqrt(torch.sum(a * a, dim=1))

    def torch_fn():
        tx = to_torch(x)
        return lambda: t(tx)

    def compile_fn():
        tx, f = to_torch(x), torch_compile(t, static)
        return lambda: f(tx)

    def torch_op():
        tx = to_torch(x)
        return lambda: torch.linalg.vector_norm(tx, dim=1)

    def cupy_op():
        return lambda: cp.linalg.norm(x, axis=1)

    return {
        "cupy": cupy_fn,
        "cupy_fuse": fuse_fn,
        "torch": torch_fn,
        "torch_compile": compile_fn,
        "jax": jax_form(lambda a: jnp.sqrt(jnp.sum(a * a, axis=1)), x),
        "cupy_op": cupy_op,
        "torch_op": torch_op,
    }


def make_w1(scale):
    n = max(1, (1 << 26) // scale)
    x = rand(n)
    return {"x": x}, w1_impls(x), 8 * n


def make_i13_gelu(dtype):
    """Issue 13's half-precision rows: a GELU-like tanh chain over a 16-bit vector. CuPy and
    PyTorch eager round every op to the dtype, as fusec (NumPy) does; torch.compile computes
    the chain in f32 and rounds once, so it differs from the others in the last bits."""
    def make(scale):
        n = max(1, (1 << 26) // scale)
        if dtype == "float16" or torch is None:
            x = rand(n, dtype)
        else:  # CuPy has no bf16: torch's
            x = torch.rand(n, device="cuda", dtype=torch.bfloat16)

        def g(m, a):
            return 0.5 * a * (1 + m.tanh(0.7978845608 * (a + 0.044715 * a * a * a)))

        def cupy_fn():
            return lambda: g(cp, x)

        def fuse_fn():
            f = fuse("fc_bench_i13_gelu", lambda a: g(cp, a))
            return lambda: f(x)

        def torch_fn():
            tx = to_torch(x)
            return lambda: g(torch, tx)

        def compile_fn():
            tx, f = to_torch(x), torch_compile(lambda a: g(torch, a))
            return lambda: f(tx)

        impls = {"torch": torch_fn, "torch_compile": compile_fn}
        if dtype == "float16":
            impls = {"cupy": cupy_fn, "cupy_fuse": fuse_fn, **impls}
        # XLA, like torch.compile, may compute the chain in f32 and round once
        impls["jax"] = jax_form(lambda a: g(jnp, a), x)
        return {"x": x}, impls, 4 * n
    return make


def make_w2(scale):
    n = max(1, (1 << 26) // scale)
    x, y = rand(n), rand(n)

    def t(a, b):
        return a**2 + 2 * b

    def compile_fn():
        f = torch_compile(t)
        tx, ty = to_torch(x), to_torch(y)
        return lambda: f(tx, ty)

    def torch_fn():
        tx, ty = to_torch(x), to_torch(y)
        return lambda: t(tx, ty)

    def fuse_fn():
        f = fuse("fc_bench_w2", lambda a, b: a**2 + 2 * b)
        return lambda: f(x, y)

    return (
        {"x": x, "y": y},
        {
            "cupy": lambda: (lambda: x**2 + 2 * y),
            "cupy_fuse": fuse_fn,
            "torch": torch_fn,
            "torch_compile": compile_fn,
            "jax": jax_form(lambda a, b: a**2 + 2 * b, x, y),
        },
        12 * n,
    )


def make_w3(scale):
    n = max(1, (1 << 27) // scale)
    x = rand(n)

    def fuse_fn():
        f = fuse("fc_bench_w3", lambda a: cp.sum(a))
        return lambda: f(x)

    def torch_fn():
        tx = to_torch(x)
        return lambda: torch.sum(tx)

    def compile_fn():
        tx, f = to_torch(x), torch_compile(lambda a: torch.sum(a))
        return lambda: f(tx)

    return (
        {"x": x},
        {
            "cupy": lambda: (lambda: cp.sum(x)),
            "cupy_fuse": fuse_fn,
            "torch": torch_fn,
            "torch_compile": compile_fn,
            "jax": jax_form(lambda a: jnp.sum(a), x),
        },
        4 * n,
    )


def softmax_of(m, a, axis):
    """exp(a - max(a)) / its sum along axis, in the NumPy-like module m (CuPy, jax.numpy) or
    in torch (m is torch)."""
    if torch is not None and m is torch:
        e = torch.exp(a - a.amax(dim=axis, keepdim=True))
        return e / e.sum(dim=axis, keepdim=True)
    e = m.exp(a - a.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def make_w4(scale):
    rows = max(1, 8192 // scale)
    x = rand((rows, 8192))

    def c(a):
        return softmax_of(cp, a, 1)

    def t(a):
        return softmax_of(torch, a, 1)

    def j(a):
        return softmax_of(jnp, a, 1)

    def torch_fn():
        tx = to_torch(x)
        return lambda: t(tx)

    def compile_fn():
        tx, f = to_torch(x), torch_compile(t)
        return lambda: f(tx)

    def torch_op():
        tx = to_torch(x)
        return lambda: torch.softmax(tx, dim=1)

    return (
        {"x": x},
        {"cupy": lambda: (lambda: c(x)), "torch": torch_fn, "torch_compile": compile_fn,
         "jax": jax_form(j, x), "torch_op": torch_op},
        8 * rows * 8192,
    )


def make_w5(scale):
    n = max(1, (1 << 26) // scale)
    x = rand(n)

    def t(a):
        return torch.where(a > 0.5, a, 0.1 * a)

    def torch_fn():
        tx = to_torch(x)
        return lambda: t(tx)

    def compile_fn():
        tx, f = to_torch(x), torch_compile(t)
        return lambda: f(tx)

    def fuse_fn():
        f = fuse("fc_bench_w5", lambda a: cp.where(a > 0.5, a, 0.1 * a))
        return lambda: f(x)

    return (
        {"x": x},
        {
            "cupy": lambda: (lambda: cp.where(x > 0.5, x, 0.1 * x)),
            "cupy_fuse": fuse_fn,
            "torch": torch_fn,
            "torch_compile": compile_fn,
            "jax": jax_form(lambda a: jnp.where(a > 0.5, a, 0.1 * a), x),
        },
        8 * n,
    )


def make_w6(scale):
    rows = max(1, 16384 // scale)
    x = rand((rows, 4096))
    return {"x": x}, w6_impls(x), 4 * rows * 4096 + 4 * rows


def make_w7(scale):
    rows = max(2, 65536 // scale)
    d = rand((rows, 1024))

    def t(a):
        return (a - a.mean(dim=0)) / a.std(dim=0, correction=0)

    def torch_fn():
        td = to_torch(d)
        return lambda: t(td)

    def compile_fn():
        td, f = to_torch(d), torch_compile(t)
        return lambda: f(td)

    return (
        {"d": d},
        {
            "cupy": lambda: (lambda: (d - d.mean(axis=0)) / d.std(axis=0)),
            "torch": torch_fn,
            "torch_compile": compile_fn,
            "jax": jax_form(lambda a: (a - a.mean(axis=0)) / a.std(axis=0), d),
        },
        12 * rows * 1024,
    )


def make_w8(scale):
    side = max(16, 2048 // int(math.sqrt(scale)))
    steps = 100
    if cp is not None:
        re = cp.linspace(-2.0, 0.5, side)
        im = cp.linspace(-1.25, 1.25, side)
        c = re[None, :] + im[:, None] * 1j
    elif torch is None:  # JAX alone: NumPy's grid, placed in the JAX cell (x64 on there)
        import numpy as np

        c = np.linspace(-2.0, 0.5, side)[None, :] + np.linspace(-1.25, 1.25, side)[:, None] * 1j
    else:
        re = torch.linspace(-2.0, 0.5, side, dtype=torch.float64, device="cuda")
        im = torch.linspace(-1.25, 1.25, side, dtype=torch.float64, device="cuda")
        c = torch.complex(re[None, :].expand(side, side), im[:, None].expand(side, side))

    def mandelbrot(m, cc):
        """The steps in the array module m (CuPy, torch, jax.numpy: eager in the first two,
        traced once under jax.jit, 100 unrolled steps in one XLA computation)."""
        z = m.zeros_like(cc)
        n = m.zeros_like(cc, dtype=m.int32)
        for _ in range(steps):
            b = m.abs(z) <= 2
            z = m.where(b, z * z + cc, z)
            n = n + b
        return n

    def torch_fn():
        tc = to_torch(c)
        return lambda: mandelbrot(torch, tc)

    def no_compile():
        raise NotImplementedError("skipped: complex128 is outside Inductor's code generation "
                                  "(graph breaks, 100 unrolled steps)")

    # JAX: complex128 with x64 on (Workload.x64)
    return ({"c": c}, {"cupy": lambda: (lambda: mandelbrot(cp, c)), "torch": torch_fn,
                       "torch_compile": no_compile,
                       "jax": jax_form(lambda cc: mandelbrot(jnp, cc), c)}, None)


def make_w9(scale):
    side = max(16, 4096 // int(math.sqrt(scale)))
    x = rand((side, side))

    def cupy_fn():
        # The table's CuPy figure: cupyx.scipy.signal.convolve2d with a symmetric boundary.
        from cupyx.scipy import signal

        k = cp.full((3, 3), 1.0 / 9.0, dtype=cp.float32)
        return lambda: signal.convolve2d(x, k, mode="same", boundary="symm")

    def cupy_expr():
        # The .fc program's own form: pad, nine shifted slices, / 9 (eager: every + a kernel).
        def run():
            p = cp.pad(x, 1, mode="symmetric")
            s = (p[:-2, :-2] + p[:-2, 1:-1] + p[:-2, 2:] + p[1:-1, :-2] + p[1:-1, 1:-1]
                 + p[1:-1, 2:] + p[2:, :-2] + p[2:, 1:-1] + p[2:, 2:])
            return s / 9

        return run

    def torch_fn():
        # A symmetric pad of width 1 repeats the edge: 'replicate' is the same boundary.
        tx = to_torch(x)
        w = torch.full((1, 1, 3, 3), 1.0 / 9.0, dtype=tx.dtype, device=tx.device)
        return lambda: F.conv2d(F.pad(tx[None, None], (1, 1, 1, 1), mode="replicate"), w)[0, 0]

    def t(a):
        p = F.pad(a[None, None], (1, 1, 1, 1), mode="replicate")[0, 0]
        s = (p[:-2, :-2] + p[:-2, 1:-1] + p[:-2, 2:] + p[1:-1, :-2] + p[1:-1, 1:-1]
             + p[1:-1, 2:] + p[2:, :-2] + p[2:, 1:-1] + p[2:, 2:])
        return s / 9

    def compile_fn():
        tx, f = to_torch(x), torch_compile(t)
        return lambda: f(tx)

    def j(a):  # the .fc program's form: a symmetric pad, nine shifted slices, / 9
        p = jnp.pad(a, 1, mode="symmetric")
        s = (p[:-2, :-2] + p[:-2, 1:-1] + p[:-2, 2:] + p[1:-1, :-2] + p[1:-1, 1:-1]
             + p[1:-1, 2:] + p[2:, :-2] + p[2:, 1:-1] + p[2:, 2:])
        return s / 9

    return (
        {"x": x},
        {"cupy": cupy_fn, "torch": torch_fn, "torch_compile": compile_fn,
         "jax": jax_form(j, x), "cupy_expr": cupy_expr},
        8 * side * side,
    )


def make_w10(scale):
    n = max(1, (1 << 26) // scale)
    x, y = rand(n), rand(n)

    def t(a, b):
        return 2 * a + b

    def torch_fn():
        tx, ty = to_torch(x), to_torch(y)
        return lambda: t(tx, ty)

    def compile_fn():
        tx, ty, f = to_torch(x), to_torch(y), torch_compile(t)
        return lambda: f(tx, ty)

    def fuse_fn():
        f = fuse("fc_bench_w10", lambda a, b: 2 * a + b)
        return lambda: f(x, y)

    return (
        {"x": x, "y": y},
        {
            "cupy": lambda: (lambda: 2 * x + y),
            "cupy_fuse": fuse_fn,
            "torch": torch_fn,
            "torch_compile": compile_fn,
            "jax": jax_form(lambda a, b: 2 * a + b, x, y),
        },
        12 * n,
    )


def make_w11(scale):
    rows = max(1, 4096 // scale)
    x, w = rand((rows, 4096)), rand(4096)

    def t(a, b):
        return (a * b[None, :]).mean(dim=0)

    def torch_fn():
        tx, tw = to_torch(x), to_torch(w)
        return lambda: t(tx, tw)

    def compile_fn():
        tx, tw, f = to_torch(x), to_torch(w), torch_compile(t)
        return lambda: f(tx, tw)

    def fuse_fn():
        # cupy.fuse has sum but no mean: sum, then the scale in the post-map.
        inv = 1.0 / rows
        f = fuse("fc_bench_w11", lambda a, b: cp.sum(a * b, axis=0) * inv)
        return lambda: f(x, w)

    return (
        {"x": x, "w": w},
        {
            "cupy": lambda: (lambda: (x * w[None, :]).mean(axis=0)),
            "cupy_fuse": fuse_fn,
            "torch": torch_fn,
            "torch_compile": compile_fn,
            "jax": jax_form(lambda a, b: (a * b[None, :]).mean(axis=0), x, w),
        },
        4 * rows * 4096 + 4 * 4096 + 4 * 4096,
    )


def make_w12_matmul(scale):
    n = max(64, 4096 // int(round(scale ** (1 / 3))))
    a, b = rand((n, n)), rand((n, n))

    def torch_fn():
        ta, tb = to_torch(a), to_torch(b)
        return lambda: torch.matmul(ta, tb)

    return ({"a": a, "b": b}, {"cupy": lambda: (lambda: cp.matmul(a, b)), "torch": torch_fn,
                               "jax": jax_form(lambda u, v: jnp.matmul(u, v, precision=HIGHEST),
                                               a, b)},
            None)


def make_w12_fft(scale):
    n = max(1024, (1 << 24) // scale)
    x = rand(n, "complex64")

    def torch_fn():
        tx = to_torch(x)
        return lambda: torch.fft.ifft(torch.fft.fft(tx))

    return ({"x": x}, {"cupy": lambda: (lambda: cp.fft.ifft(cp.fft.fft(x))), "torch": torch_fn,
                       "jax": jax_form(lambda a: jnp.fft.ifft(jnp.fft.fft(a)), x)},
            None)


def make_i11_cumsum(scale):
    n = max(1, (1 << 26) // scale)
    x = rand(n)

    def torch_fn():
        tx = to_torch(x)
        return lambda: torch.cumsum(tx, 0)

    def compile_fn():
        tx, f = to_torch(x), torch_compile(lambda a: torch.cumsum(a, 0))
        return lambda: f(tx)

    # No cupy.fuse: it has no scan.
    return (
        {"x": x},
        {"cupy": lambda: (lambda: cp.cumsum(x)), "torch": torch_fn, "torch_compile": compile_fn,
         "jax": jax_form(lambda a: jnp.cumsum(a), x)},
        8 * n,
    )


def make_i11_normal(scale):
    n = max(1, (1 << 26) // scale)

    def cupy_fn():
        rs = cp.random.RandomState(7)  # made once, outside the timed call
        return lambda: rs.standard_normal(n, dtype=cp.float32)

    def torch_fn():
        return lambda: torch.randn(n, dtype=torch.float32, device="cuda")

    def jax_fn():
        # jax.random's threefry draws from a key made once, outside the clock
        key = jax.device_put(getattr(jax.random, "key", jax.random.PRNGKey)(7), JAX_DEVICE)
        f = jax.jit(lambda k: jax.random.normal(k, (n,), dtype=jnp.float32))
        return lambda: f(key)

    # No inputs; the floor is the output written once. No cupy.fuse, no torch.compile.
    return {}, {"cupy": cupy_fn, "torch": torch_fn, "jax": jax_fn}, 4 * n


def make_i11_compress(scale):
    n = max(1, (1 << 26) // scale)
    x = rand(n)
    # floor: x read once, the selection (its size known only after the count) written once
    m = int((x > 0.5).sum())

    def torch_fn():
        tx = to_torch(x)
        return lambda: tx[tx > 0.5]

    def jax_fn():
        raise NotImplementedError("skipped: a result whose shape depends on the data is "
                                  "outside jax.jit")

    # torch.compile breaks its graph at a data-dependent shape: no compiled form
    return {"x": x}, {"cupy": lambda: (lambda: x[x > 0.5]), "torch": torch_fn,
                      "jax": jax_fn}, 4 * n + 4 * m


def make_i11_take(scale):
    n = max(1, (1 << 26) // scale)
    m = max(1, (1 << 24) // scale)
    x = rand(n)
    if cp is not None:
        i = cp.random.RandomState(11).randint(0, n, m, dtype=cp.int32)
    elif torch is not None:
        i = torch.randint(0, n, (m,), device="cuda", dtype=torch.int32)
    else:
        import numpy as np

        i = np.random.default_rng(11).integers(0, n, m, dtype=np.int32)

    # torch gathers by int64 indices: converted once, outside the timed call
    def torch_fn():
        tx, ti = to_torch(x), to_torch(i).long()
        return lambda: torch.take(tx, ti)

    def compile_fn():
        tx, ti, f = to_torch(x), to_torch(i).long(), torch_compile(lambda a, b: a[b])
        return lambda: f(tx, ti)

    # floor: indices and output once, one 32-byte sector of x per element gathered
    # jnp.take's default mode fills out-of-range indices (there are none here)
    return ({"x": x, "i": i},
            {"cupy": lambda: (lambda: cp.take(x, i)), "torch": torch_fn,
             "torch_compile": compile_fn, "jax": jax_form(lambda a, b: jnp.take(a, b), x, i)},
            40 * m)


def make_i11_scatter_add(scale):
    n = max(1, (1 << 26) // scale)
    if cp is not None:
        i = cp.random.RandomState(12).randint(0, 1024, n, dtype=cp.int32)
    elif torch is not None:
        i = torch.randint(0, 1024, (n,), device="cuda", dtype=torch.int32)
    else:
        import numpy as np

        i = np.random.default_rng(12).integers(0, 1024, n, dtype=np.int32)

    # np.add.at(zeros, i, 1): cupyx.scatter_add (atomics); torch's index_add_ by int64 indices
    # (converted once, outside the timed call)
    def cupy_fn():
        import cupyx
        return lambda: (lambda z: (cupyx.scatter_add(z, i, 1), z)[1])(cp.zeros(1024, cp.int64))

    def torch_fn():
        ti = to_torch(i).long()
        ones = torch.ones(n, device="cuda", dtype=torch.int64)
        return lambda: torch.zeros(1024, device="cuda", dtype=torch.int64).index_add_(0, ti, ones)

    def compile_fn():
        ti = to_torch(i).long()
        f = torch_compile(lambda t: torch.zeros(1024, device="cuda", dtype=torch.int64)
                          .index_add_(0, t, torch.ones_like(t)))
        return lambda: f(ti)

    # JAX: the counts in int32 (x64 is off; no count comes near 2^31), np.add.at's form
    def j(b):
        return jnp.zeros(1024, dtype=jnp.int32).at[b].add(1)

    # floor: the indices once
    return ({"i": i}, {"cupy": cupy_fn, "torch": torch_fn, "torch_compile": compile_fn,
                       "jax": jax_form(j, i)}, 4 * n)


def make_i11_sort(scale):
    n = max(1, (1 << 26) // scale)
    x = rand(n)

    def torch_fn():
        tx = to_torch(x)
        return lambda: torch.sort(tx, stable=True)[0]

    # floor: the keys read once and the result written once
    return {"x": x}, {"cupy": lambda: (lambda: cp.sort(x)), "torch": torch_fn,
                      "jax": jax_form(lambda a: jnp.sort(a), x)}, 8 * n


def make_i11_argsort(scale):
    n = max(1, (1 << 24) // scale)
    x = rand(n)

    def torch_fn():
        tx = to_torch(x)
        return lambda: torch.argsort(tx, stable=True)

    # floor: the keys read once and the int64 positions written once (JAX's are int32: x64
    # is off)
    return {"x": x}, {"cupy": lambda: (lambda: cp.argsort(x)), "torch": torch_fn,
                      "jax": jax_form(lambda a: jnp.argsort(a, stable=True), x)}, 12 * n


# ---- issue 12: library calls (cuSOLVER, cuFFT, cuSPARSE, cuBLAS) ---------------------------
# GFLOP/s for the compute-bound ones from Workload.flops (the nominal counts of
# bench/fusec_runs.py's FLOPS and bench/libdirect.c); no byte floor for those. torch.compile
# only where it can change something (the matmul's epilogue): the others are one library call.


def cube_side(n, scale):
    """A matrix side n divided for --scale as the matmul of W12 is (a cube root), at least 64."""
    return max(64, n // int(round(scale ** (1 / 3))))


def eye_like(n, a):
    """n x n identity in a's library and dtype."""
    if cp is not None and isinstance(a, cp.ndarray):
        return cp.eye(n, dtype=a.dtype)
    if is_jax(a) or not (torch is not None and isinstance(a, torch.Tensor)):
        import numpy as np

        return np.eye(n, dtype=a.dtype)
    return torch.eye(n, dtype=a.dtype, device="cuda")


def make_i12_solve(scale):
    n = cube_side(4096, scale)
    # uniform [0, 1) plus n on the diagonal: strictly diagonally dominant, well conditioned;
    # one right-hand side as a vector (NumPy 2: a 1-d b), as the .fc program has it
    a = rand((n, n))
    a = a + n * eye_like(n, a)
    b = rand(n)

    def torch_fn():
        ta, tb = to_torch(a), to_torch(b)
        return lambda: torch.linalg.solve(ta, tb)

    return ({"a": a, "b": b}, {"cupy": lambda: (lambda: cp.linalg.solve(a, b)),
                               "torch": torch_fn,
                               "jax": jax_form(lambda u, v: jnp.linalg.solve(u, v), a, b)},
            None)


def make_i12_svd(scale):
    n = cube_side(1024, scale)
    a = rand((n, n))

    # U, S and V^T all computed (full_matrices, NumPy's default: the same for a square a); the
    # singular values alone are returned, and compared (U and V are unique only up to signs)
    def torch_fn():
        ta = to_torch(a)
        return lambda: torch.linalg.svd(ta)[1]

    def torch_gesvd():
        # torch's default CUDA driver is gesvdj (Jacobi) with a gesvd fallback; this is gesvd,
        # what CuPy and bench/libdirect call
        ta = to_torch(a)
        return lambda: torch.linalg.svd(ta, driver="gesvd")[1]

    # JAX: U, S and V^T computed (jnp.linalg.svd's defaults), S returned
    return ({"a": a}, {"cupy": lambda: (lambda: cp.linalg.svd(a)[1]), "torch": torch_fn,
                       "jax": jax_form(lambda u: jnp.linalg.svd(u)[1], a),
                       "torch_gesvd": torch_gesvd}, None)


def make_i12_cholesky(scale):
    n = cube_side(8192, scale)
    r = rand((n, n), "float64")
    # symmetric, strictly diagonally dominant, positive diagonal: SPD
    a = (r + r.T) * 0.5 + n * eye_like(n, r)
    r = None

    def torch_fn():
        ta = to_torch(a)
        return lambda: torch.linalg.cholesky(ta)

    # JAX: f64 (Workload.x64)
    return ({"a": a}, {"cupy": lambda: (lambda: cp.linalg.cholesky(a)), "torch": torch_fn,
                       "jax": jax_form(lambda u: jnp.linalg.cholesky(u), a)},
            None)


def make_i12_rfft(scale):
    n = max(1024, (1 << 26) // scale)
    x = rand(n)

    def torch_fn():
        tx = to_torch(x)
        return lambda: torch.fft.rfft(tx)

    # floor: x read once, the n // 2 + 1 c64 values written once
    return ({"x": x}, {"cupy": lambda: (lambda: cp.fft.rfft(x)), "torch": torch_fn,
                       "jax": jax_form(lambda a: jnp.fft.rfft(a), x)},
            4 * n + 8 * (n // 2 + 1))


def make_i12_fft2(scale):
    side = max(64, 8192 // int(math.sqrt(scale)))
    x = rand((side, side), "complex64")

    def torch_fn():
        tx = to_torch(x)
        return lambda: torch.fft.fft2(tx)

    # floor: x read once, the spectrum written once
    return ({"x": x}, {"cupy": lambda: (lambda: cp.fft.fft2(x)), "torch": torch_fn,
                       "jax": jax_form(lambda a: jnp.fft.fft2(a), x)},
            16 * side * side)


def make_i12_matmul_bias_relu(scale):
    n = cube_side(4096, scale)
    a, b, bias = rand((n, n)), rand((n, n)), rand(n)

    # CuPy eager: the product, then a kernel for + bias and one for the maximum
    def cupy_fn():
        return lambda: cp.maximum(a @ b + bias, 0)

    def torch_fn():
        ta, tb, tbias = to_torch(a), to_torch(b), to_torch(bias)
        return lambda: torch.relu(torch.addmm(tbias, ta, tb))

    def compile_fn():
        ta, tb, tbias = to_torch(a), to_torch(b), to_torch(bias)
        f = torch_compile(lambda x, y, z: torch.relu(x @ y + z))
        return lambda: f(ta, tb, tbias)

    def j(x, y, z):
        return jax.nn.relu(jnp.matmul(x, y, precision=HIGHEST) + z)

    return ({"a": a, "b": b, "bias": bias},
            {"cupy": cupy_fn, "torch": torch_fn, "torch_compile": compile_fn,
             "jax": jax_form(j, a, b, bias)}, None)


def make_i12_matmul_bias_gelu(scale):
    n = cube_side(4096, scale)
    a, b, bias = rand((n, n)), rand((n, n)), rand(n)
    k = math.sqrt(2.0 / math.pi)

    # CuPy eager: the product, the sum, then GELU's tanh form spelled out (CuPy has no gelu)
    def cupy_fn():
        def f():
            x = a @ b + bias
            return 0.5 * x * (1 + cp.tanh(k * (x + 0.044715 * x * x * x)))
        return f

    def torch_fn():
        ta, tb, tbias = to_torch(a), to_torch(b), to_torch(bias)
        gelu = torch.nn.functional.gelu
        return lambda: gelu(torch.addmm(tbias, ta, tb), approximate="tanh")

    def compile_fn():
        ta, tb, tbias = to_torch(a), to_torch(b), to_torch(bias)
        gelu = torch.nn.functional.gelu
        f = torch_compile(lambda x, y, z: gelu(x @ y + z, approximate="tanh"))
        return lambda: f(ta, tb, tbias)

    def j(x, y, z):
        return jax.nn.gelu(jnp.matmul(x, y, precision=HIGHEST) + z, approximate=True)

    return ({"a": a, "b": b, "bias": bias},
            {"cupy": cupy_fn, "torch": torch_fn, "torch_compile": compile_fn,
             "jax": jax_form(j, a, b, bias)}, None)


def make_i12_spmv(scale):
    """y = A @ x, A a random n x n CSR (n = 2^24) of 8n non-zeros: each non-zero's row and
    column uniform and independent (about 8 a row, Poisson), sorted by row then column,
    f32 values uniform in [0, 1), int32 row offsets and column indices; x f32 uniform."""
    n = max(1024, (1 << 24) // scale)
    nnz = 8 * n
    if cp is not None:
        rs = cp.random.RandomState(15)
        key = rs.randint(0, n, nnz, dtype=cp.int64) * n + rs.randint(0, n, nnz, dtype=cp.int64)
        key.sort()
        rows = (key // n).astype(cp.int32)
        cols = (key % n).astype(cp.int32)
        key = None
        indptr = cp.zeros(n + 1, dtype=cp.int32)
        indptr[1:] = cp.cumsum(cp.bincount(rows, minlength=n)).astype(cp.int32)
    elif torch is None:  # JAX alone: NumPy's (placed by the JAX cell)
        import numpy as np

        rs = np.random.default_rng(15)
        key = np.sort(rs.integers(0, n, nnz) * n + rs.integers(0, n, nnz))
        rows = (key // n).astype(np.int32)
        cols = (key % n).astype(np.int32)
        key = None
        indptr = np.zeros(n + 1, dtype=np.int32)
        indptr[1:] = np.cumsum(np.bincount(rows, minlength=n))
    else:
        g = torch.Generator(device="cuda").manual_seed(15)
        key = (torch.randint(0, n, (nnz,), device="cuda", generator=g) * n
               + torch.randint(0, n, (nnz,), device="cuda", generator=g))
        key = torch.sort(key)[0]
        rows = (key // n).to(torch.int32)
        cols = (key % n).to(torch.int32)
        key = None
        indptr = torch.zeros(n + 1, dtype=torch.int32, device="cuda")
        indptr[1:] = torch.cumsum(torch.bincount(rows, minlength=n), 0).to(torch.int32)
    rows = None
    vals, x = rand(nnz), rand(n)

    def cupy_fn():
        from cupyx.scipy import sparse

        m = sparse.csr_matrix((vals, cols, indptr), shape=(n, n))
        return lambda: m @ x

    def torch_fn():
        m = torch.sparse_csr_tensor(to_torch(indptr), to_torch(cols), to_torch(vals),
                                    size=(n, n))
        tx = to_torch(x)
        return lambda: torch.mv(m, tx)

    def jax_fn():
        # jax.experimental.sparse's BCSR (its GPU product is cuSPARSE's where JAX has it)
        from jax.experimental import sparse as jsparse

        m = jsparse.BCSR((to_jax(vals), to_jax(cols), to_jax(indptr)), shape=(n, n))
        xj = to_jax(x)
        f = jax.jit(lambda mm, v: mm @ v)
        return lambda: f(m, xj)

    # floor: values and column indices once, row offsets once, x once (its random gathers hit
    # the L2 mostly: x is 64 MiB), y written once
    return ({"vals": vals, "cols": cols, "indptr": indptr, "x": x},
            {"cupy": cupy_fn, "torch": torch_fn, "jax": jax_fn}, 8 * nnz + 4 * (n + 1) + 8 * n)


def make_i12_convolve2d(kside):
    def make(scale):
        side = max(64, 4096 // int(math.sqrt(scale)))
        x, k = rand((side, side)), rand((kside, kside))

        def cupy_fn():
            from cupyx.scipy import signal

            return lambda: signal.convolve2d(x, k, mode="same",
                                             boundary="symm" if kside == 3 else "fill")

        def torch_fn():
            # conv2d correlates: the kernel flipped; 'same' of an odd kernel pads k // 2 a side,
            # with the edge repeated for symm (a symmetric pad of 1 is 'replicate')
            tx, tk = to_torch(x), to_torch(k)
            w = torch.flip(tk, (0, 1))[None, None]
            p = kside // 2
            if kside == 3:
                return lambda: F.conv2d(F.pad(tx[None, None], (p, p, p, p), mode="replicate"),
                                        w)[0, 0]
            return lambda: F.conv2d(tx[None, None], w, padding=p)[0, 0]

        def j(a, w):
            # jax.scipy.signal.convolve2d has the 'fill' boundary only: 3x3 'symm' is a
            # symmetric pad of 1, then 'valid'; full f32 products (no TF32)
            from jax.scipy import signal as jsignal

            if kside == 3:
                return jsignal.convolve2d(jnp.pad(a, 1, mode="symmetric"), w, mode="valid",
                                          precision=HIGHEST)
            return jsignal.convolve2d(a, w, mode="same", precision=HIGHEST)

        # floor: x and k read once, the result written once
        return ({"x": x, "k": k}, {"cupy": cupy_fn, "torch": torch_fn, "jax": jax_form(j, x, k)},
                4 * (2 * side * side + kside * kside))

    return make


# ---- issue 13: reductions and broadcasts of every shape, next to XLA ------------------------
# Each row's program is bench/fc/i13_*.fc; the floor bytes are bench/fusec_runs.py's (the
# comment at each). Results of several outputs are tuples, compared output by output.


def forms(args, cupy_f=None, fuse_f=None, fuse_name=None, torch_f=None, jax_f=None, extra=None):
    """The usual cells of a workload: CuPy eager cupy_f(*args); cupy.fuse of fuse_f; PyTorch
    eager torch_f on the same arrays (DLPack) and torch.compile of it; JAX jax.jit of jax_f;
    then `extra`, a dict of more builders (library forms, cupy.fuse of views)."""
    impls = {}
    if cupy_f is not None:
        impls["cupy"] = lambda: (lambda: cupy_f(*args))
    if fuse_f is not None:
        def fuse_fn():
            f = fuse(fuse_name, fuse_f)
            return lambda: f(*args)
        impls["cupy_fuse"] = fuse_fn
    if torch_f is not None:
        def torch_fn():
            ts = [to_torch(a) for a in args]
            return lambda: torch_f(*ts)

        def compile_fn():
            ts = [to_torch(a) for a in args]
            f = torch_compile(torch_f)
            return lambda: f(*ts)
        impls["torch"] = torch_fn
        impls["torch_compile"] = compile_fn
    if jax_f is not None:
        impls["jax"] = jax_form(jax_f, *args)
    impls.update(extra or {})
    return impls


def make_i13_layernorm(length):
    """Layer norm over rows of `length` f32 (2^26 elements in all), with a weight and a bias
    over the row, eps 1e-5: (x - mean) / sqrt(var + eps) * w + b, the variance biased."""
    def make(scale):
        rows = max(1, (1 << 26) // length // scale)
        x, w, b = rand((rows, length)), rand(length), rand(length)

        def c(a, u, v):  # CuPy and jax.numpy
            m = cp if cp is not None and isinstance(a, cp.ndarray) else jnp
            mu = a.mean(axis=1, keepdims=True)
            return (a - mu) / m.sqrt(a.var(axis=1, keepdims=True) + 1e-5) * u + v

        def t(a, u, v):
            mu = a.mean(dim=1, keepdim=True)
            return (a - mu) / torch.sqrt(a.var(dim=1, keepdim=True, correction=0) + 1e-5) * u + v

        def torch_op():
            ts = [to_torch(a) for a in (x, w, b)]
            return lambda: F.layer_norm(ts[0], (length,), ts[1], ts[2], eps=1e-5)

        # floor: x read twice (issue 13's floor for a row chain: the input read at most
        # twice), y written once, w and b read once
        return ({"x": x, "w": w, "b": b},
                forms((x, w, b), cupy_f=c, torch_f=t, jax_f=c, extra={"torch_op": torch_op}),
                12 * rows * length + 8 * length)
    return make


def make_i13_bn_stats(scale):
    """Batch-norm statistics: the mean and the biased variance of each channel of an f32
    [N, C, L] = [64, 256, 4096] array over axes (0, 2)."""
    length = max(16, 4096 // scale)
    x = rand((64, 256, length))

    def t(a):
        return a.mean(dim=(0, 2)), a.var(dim=(0, 2), correction=0)

    def torch_op():
        # torch's batch_norm's own statistics kernel (training mode): the mean and the inverse
        # standard deviation; compared as the variance (Workload.post)
        tx = to_torch(x)
        return lambda: torch.batch_norm_stats(tx, 1e-5)

    def torch_var_mean():
        tx = to_torch(x)

        def f():
            v, m = torch.var_mean(tx, dim=(0, 2), correction=0)
            return m, v
        return f

    # floor: x read once, the two C-vectors written once
    return ({"x": x},
            forms((x,), cupy_f=lambda a: (a.mean(axis=(0, 2)), a.var(axis=(0, 2))), torch_f=t,
                  jax_f=lambda a: (a.mean(axis=(0, 2)), a.var(axis=(0, 2))),
                  extra={"torch_op": torch_op, "torch_var_mean": torch_var_mean}),
            4 * 64 * 256 * length + 8 * 256)


def bn_stats_as_var(out):
    """torch.batch_norm_stats' (mean, 1 / sqrt(var + eps)) as (mean, var)."""
    mean, invstd = out
    return mean, 1.0 / (invstd.double() ** 2) - 1e-5


def make_i13_col_softmax(scale):
    """Softmax over axis 0 of an f32 8192 x 8192 matrix."""
    rows = max(2, 8192 // scale)
    x = rand((rows, 8192))

    def torch_op():
        tx = to_torch(x)
        return lambda: torch.softmax(tx, dim=0)

    # floor: x read twice (a column does not fit on chip: the reductions, then the
    # normalisation), y written once (W7's floor)
    return ({"x": x}, forms((x,), cupy_f=lambda a: softmax_of(cp, a, 0),
                            torch_f=lambda a: softmax_of(torch, a, 0),
                            jax_f=lambda a: softmax_of(jnp, a, 0),
                            extra={"torch_op": torch_op}),
            12 * rows * 8192)


def make_i13_argmax_rows(scale):
    """The index of each row's maximum, f32 16384 x 4096."""
    rows = max(1, 16384 // scale)
    x = rand((rows, 4096))
    # floor: x read once, the int64 indices written once (JAX's are int32: x64 is off)
    return ({"x": x},
            forms((x,), cupy_f=lambda a: cp.argmax(a, axis=1),
                  torch_f=lambda a: torch.argmax(a, dim=1),
                  jax_f=lambda a: jnp.argmax(a, axis=1)),
            4 * rows * 4096 + 8 * rows)


def adam_step(m, p, g, mo, v):
    """The I13_adam step in the array module m: (p, m, v) new, p from the new m and v."""
    m1 = 0.9 * mo + 0.1 * g
    v1 = 0.999 * v + 0.001 * (g * g)
    return p - 0.001 * m1 / (m.sqrt(v1) + 1e-8), m1, v1


def make_i13_adam(scale):
    """An Adam-like step over 2^26 f32 parameters: three outputs, p computed from m and v."""
    n = max(1, (1 << 26) // scale)
    p, g, mo, v = rand(n), rand(n), rand(n), rand(n)
    # floor: p, g, m and v read once, the new p, m and v written once
    return ({"p": p, "g": g, "m": mo, "v": v},
            forms((p, g, mo, v), cupy_f=lambda a, b, c, d: adam_step(cp, a, b, c, d),
                  fuse_f=lambda a, b, c, d: adam_step(cp, a, b, c, d),
                  fuse_name="fc_bench_i13_adam",
                  torch_f=lambda a, b, c, d: adam_step(torch, a, b, c, d),
                  jax_f=lambda a, b, c, d: adam_step(jnp, a, b, c, d)),
            28 * n)


def make_i13_outer(scale):
    """a[:, None] * b[None, :] of two f32 8192-vectors: 256 MiB written."""
    n = max(16, 8192 // int(math.sqrt(scale)))
    a, b = rand(n), rand(n)

    def fuse_fn():  # cupy.fuse takes no subscripts: the two broadcast views are its arguments
        f = fuse("fc_bench_i13_outer", lambda u, w: u * w)
        u, w = a[:, None], b[None, :]
        return lambda: f(u, w)

    # floor: a and b read once, the n x n product written once
    return ({"a": a, "b": b},
            forms((a, b), cupy_f=lambda u, w: u[:, None] * w[None, :],
                  torch_f=lambda u, w: u[:, None] * w[None, :],
                  jax_f=lambda u, w: u[:, None] * w[None, :], extra={"cupy_fuse": fuse_fn}),
            4 * n * n + 8 * n)


def make_i13_transpose_ew(scale):
    """2 * x.transpose(0, 2, 1) + 1 of an f32 [64, 1024, 1024] array. Every peer's result is
    C-contiguous, as fusec's and XLA's are: CuPy and PyTorch eager (and Inductor, which follows
    eager's strides) would otherwise give the input's own layout and skip the transpose, so
    their forms end in ascontiguousarray / contiguous(), a no-op where the result already is."""
    batch = max(1, 64 // scale)
    side = 1024 if scale <= 64 else max(16, 1024 // int(math.sqrt(scale // 64)))
    x = rand((batch, side, side))

    def fuse_fn():
        f = fuse("fc_bench_i13_transpose", lambda a: 2 * a + 1)
        xt = x.transpose(0, 2, 1)
        return lambda: cp.ascontiguousarray(f(xt))

    # floor: x read once, y written once
    return ({"x": x},
            forms((x,), cupy_f=lambda a: cp.ascontiguousarray(2 * a.transpose(0, 2, 1) + 1),
                  torch_f=lambda a: (2 * a.transpose(1, 2) + 1).contiguous(),
                  jax_f=lambda a: 2 * jnp.transpose(a, (0, 2, 1)) + 1,
                  extra={"cupy_fuse": fuse_fn}),
            8 * batch * side * side)


def make_i13_mean_std_rows(scale):
    """The mean and the (biased) standard deviation of each row of f32 1024 x 65536."""
    rows = max(1, 1024 // scale)
    x = rand((rows, 65536))

    def torch_op():
        tx = to_torch(x)

        def f():
            sd, mu = torch.std_mean(tx, dim=1, correction=0)
            return mu, sd
        return f

    # floor: x read once, the two row vectors written once
    return ({"x": x},
            forms((x,), cupy_f=lambda a: (a.mean(axis=1), a.std(axis=1)),
                  torch_f=lambda a: (a.mean(dim=1), a.std(dim=1, correction=0)),
                  jax_f=lambda a: (a.mean(axis=1), a.std(axis=1)),
                  extra={"torch_op": torch_op}),
            4 * rows * 65536 + 8 * rows)


def laplacian(u):
    """The 5-point Laplacian of u's interior from shifted slices (any array module)."""
    return u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4 * u[1:-1, 1:-1]


def make_i13_laplacian(scale):
    """The 5-point Laplacian of an f32 8192 x 8192 grid's interior (8190 x 8190 out)."""
    side = max(16, 8192 // int(math.sqrt(scale)))
    u = rand((side, side))

    def fuse_fn():  # the five shifted views are cupy.fuse's arguments
        f = fuse("fc_bench_i13_laplacian", lambda n, s, w, e, c: n + s + w + e - 4 * c)
        views = (u[:-2, 1:-1], u[2:, 1:-1], u[1:-1, :-2], u[1:-1, 2:], u[1:-1, 1:-1])
        return lambda: f(*views)

    def torch_op():
        # cuDNN: conv2d with the 5-point kernel (symmetric, so correlation = convolution)
        tu = to_torch(u)
        k = torch.tensor([[0.0, 1.0, 0.0], [1.0, -4.0, 1.0], [0.0, 1.0, 0.0]],
                         dtype=tu.dtype, device=tu.device)[None, None]
        return lambda: F.conv2d(tu[None, None], k)[0, 0]

    # floor: u read once, the interior's Laplacian written once
    return ({"u": u},
            forms((u,), cupy_f=laplacian, torch_f=laplacian, jax_f=laplacian,
                  extra={"cupy_fuse": fuse_fn, "torch_op": torch_op}),
            4 * side * side + 4 * (side - 2) * (side - 2))


WORKLOADS = [
    Workload("W1", "tanh(sin(x) + 0.1*x), f32 2^26", make_w1),
    Workload("W2", "x**2 + 2*y, f32 2^26", make_w2),
    Workload("W3", "sum(x), f32 2^27", make_w3),
    Workload("W4", "row softmax, f32 8192x8192", make_w4),
    Workload("W5", "where(x > 0.5, x, 0.1*x), f32 2^26", make_w5),
    Workload("W6", "sqrt(sum(x*x, axis=1)), f32 16384x4096", make_w6),
    Workload("W7", "(d - mean(d,0)) / std(d,0), f32 65536x1024", make_w7),
    Workload("W8", "Mandelbrot 100 steps, c128 2048x2048", make_w8, x64=True),
    Workload("W9", "3x3 box blur, symmetric boundary, f32 4096x4096", make_w9),
    Workload("W10", "2*x + y, f32 2^26", make_w10),
    Workload("W11", "mean(x * w[None,:], axis=0), f32 4096x4096", make_w11),
    Workload("W12_matmul", "matmul f32 4096^3", make_w12_matmul),
    Workload("W12_fft", "fft + ifft round trip, c64 2^24", make_w12_fft),
    # issue 11: scans and random numbers
    Workload("I11_cumsum", "cumsum(x), f32 2^26", make_i11_cumsum),
    Workload("I11_normal", "standard normal draws, f32 2^26", make_i11_normal, compare=False),
    Workload("I11_compress", "x[x > 0.5] of f32 2^26", make_i11_compress),
    Workload("I11_take", "take of 2^24 random indices from f32 2^26", make_i11_take),
    Workload("I11_scatter_add", "scatter_add of ones at 2^26 random i32 indices into 1024 i64",
             make_i11_scatter_add),
    Workload("I11_sort", "sort of f32 2^26", make_i11_sort),
    Workload("I11_argsort", "argsort of f32 2^24", make_i11_argsort),
    # issue 13: half precision
    Workload("I13_gelu_f16", "GELU-like tanh chain, f16 2^26", make_i13_gelu("float16")),
    Workload("I13_gelu_bf16", "GELU-like tanh chain, bf16 2^26", make_i13_gelu("bfloat16")),
    # issue 13: reductions and broadcasts of every shape
    Workload("I13_layernorm_1k", "layer norm, rows of 1024 f32, 65536 rows",
             make_i13_layernorm(1024)),
    Workload("I13_layernorm_4k", "layer norm, rows of 4096 f32, 16384 rows",
             make_i13_layernorm(4096)),
    Workload("I13_layernorm_16k", "layer norm, rows of 16384 f32, 4096 rows",
             make_i13_layernorm(16384)),
    Workload("I13_layernorm_32k", "layer norm, rows of 32768 f32, 2048 rows",
             make_i13_layernorm(32768)),
    Workload("I13_bn_stats", "mean and var over axes (0, 2), f32 [64, 256, 4096]",
             make_i13_bn_stats, post={"torch_op": bn_stats_as_var}),
    Workload("I13_col_softmax", "softmax over axis 0, f32 8192x8192", make_i13_col_softmax),
    Workload("I13_argmax_rows", "argmax(x, axis=1), f32 16384x4096", make_i13_argmax_rows),
    Workload("I13_adam", "Adam-like step, p, m, v out, f32 2^26", make_i13_adam),
    Workload("I13_outer", "a[:, None] * b[None, :], f32 8192 x 8192 out", make_i13_outer),
    Workload("I13_transpose_ew", "2 * x.transpose(0, 2, 1) + 1, f32 [64, 1024, 1024]",
             make_i13_transpose_ew),
    Workload("I13_mean_std_rows", "mean and std of rows, f32 1024x65536",
             make_i13_mean_std_rows),
    Workload("I13_laplacian", "5-point Laplacian, f32 8192x8192", make_i13_laplacian),
    # issue 12: library calls
    Workload("I12_solve", "linalg.solve, f32 4096 x 4096, one right-hand side",
             make_i12_solve, flops=2 * 4096**3 // 3 + 2 * 4096**2),
    Workload("I12_svd", "linalg.svd (U, S, V^T), f32 1024 x 1024", make_i12_svd,
             flops=21 * 1024**3),
    Workload("I12_cholesky", "linalg.cholesky, f64 8192 x 8192", make_i12_cholesky,
             flops=8192**3 // 3, x64=True),
    Workload("I12_rfft", "rfft, f32 2^26", make_i12_rfft),
    Workload("I12_fft2", "fft2, c64 8192 x 8192", make_i12_fft2),
    Workload("I12_matmul_bias_relu", "relu(a @ b + bias), f32 4096^3",
             make_i12_matmul_bias_relu, flops=2 * 4096**3 + 2 * 4096**2),
    Workload("I12_matmul_bias_gelu", "gelu_tanh(a @ b + bias), f32 4096^3",
             make_i12_matmul_bias_gelu, flops=2 * 4096**3 + 2 * 4096**2),
    Workload("I12_spmv", "CSR SpMV, 2^24 x 2^24, 2^27 random non-zeros, f32, int32 indices",
             make_i12_spmv, flops=2 * (1 << 27)),
    # issue 12: convolution (the stencil kernel; the FFT)
    Workload("I12_convolve2d_3x3", "convolve2d 3x3 same symm, f32 4096x4096",
             make_i12_convolve2d(3)),
    Workload("I12_convolve2d_31x31", "convolve2d 31x31 same fill, f32 4096x4096",
             make_i12_convolve2d(31)),
]

LIB_OF = {"cupy": "cupy", "cupy_fuse": "cupy", "cupy_op": "cupy", "cupy_expr": "cupy",
          "torch": "torch", "torch_compile": "torch", "torch_op": "torch", "torch_gesvd": "torch",
          "torch_var_mean": "torch", "jax": "jax"}


class Run:
    """The state of one benchmark run: options, deadline, errors."""

    def __init__(self, args):
        self.args = args
        self.t0 = time.time()
        self.errors = []

    def out_of_time(self):
        d = self.args.deadline_s
        return d > 0 and time.time() - self.t0 > d

    def error(self, where, msg):
        line = "%s: %s" % (where, msg)
        self.errors.append(line)
        log("  ERROR " + line)


def run_cell(run, where, peer, builder, warmup, runs, ref, x64=False, post=None):
    """Times one (workload, peer) cell. Never raises: failures give a cell with a null time.
    x64: JAX's 64-bit types on for this cell (a JAX cell only); post: applied to the result
    before the comparison, outside the clock. Returns the cell and the (post-applied) result."""
    cell = {"median_ms": None, "min_ms": None, "max_ms": None, "error": None}
    lib = LIB_OF.get(peer, peer)
    if (lib == "cupy" and cp is None) or (lib == "torch" and torch is None) or \
            (lib == "jax" and jax is None):
        cell["error"] = LIB_ERRORS.get(lib, "%s unavailable" % lib)
        cell["skipped"] = True
        return cell, None
    if run.out_of_time():
        cell["error"] = "skipped: --deadline-s reached"
        cell["skipped"] = True
        run.error(where, cell["error"])
        return cell, None
    out = None
    try:
        with (jax_x64() if lib == "jax" and x64 else contextlib.nullcontext()):
            fn = builder()
            if lib == "jax":
                stats, out = time_jax(fn, warmup, runs, run.args.jax_batch)
            else:
                stats, out = time_gpu(fn, lib, warmup, runs)
            cell.update(stats)
            if peer in ("torch_compile", "jax"):
                # The first call traced and compiled: torch.compile's, XLA's compile time.
                cell["compile_s"] = stats["first_call_ms"] / 1e3
            if post is not None:
                out = post(out)
            cell["dtype"] = dtype_name(out)
            if ref is not None:
                cell["max_rel_err"] = rel_err(out, ref)
    except NotImplementedError as e:
        cell["error"] = str(e)
        cell["skipped"] = True
        log("  %s: %s" % (where, e))
    except Exception as e:  # noqa: BLE001 - one cell's failure must not end the run
        cell["error"] = one_line(e)
        run.error(where, cell["error"])
        if run.args.verbose:
            traceback.print_exc()
        out = None
        if peer == "torch_compile" and torch is not None:
            try:
                torch._dynamo.reset()
            except Exception:  # noqa: BLE001
                pass
        free_memory()
    return cell, out


def fmt_ms(v):
    return "-" if v is None else ("%.3f" % v if v < 100 else "%.1f" % v)


def bench_workloads(run, res):
    args = run.args
    want = set(args.only.split(",")) if args.only else None
    peers_wanted = set(args.peers.split(",")) if args.peers else None
    if cp is None and torch is None and jax is None:
        run.error("workloads", "skipped: neither CuPy, PyTorch nor JAX can run")
        return
    for w in WORKLOADS:
        if want and w.id not in want and w.id.split("_")[0] not in want:
            continue
        log("%s  %s" % (w.id, w.desc))
        entry = {"desc": w.desc, "floor_bytes": None, "peers": {}}
        res["workloads"][w.id] = entry
        if run.out_of_time():
            run.error(w.id, "skipped: --deadline-s reached")
            entry["error"] = "skipped: --deadline-s reached"
            continue
        try:
            inputs, impls, floor_bytes = w.make(args.scale)
            sync_any()
        except Exception as e:  # noqa: BLE001
            entry["error"] = "inputs: " + one_line(e)
            run.error(w.id, entry["error"])
            free_memory()
            continue
        entry["floor_bytes"] = floor_bytes
        if w.flops and args.scale == 1:
            entry["flops"] = w.flops
        entry["input_bytes"] = sum(int(getattr(a, "nbytes", 0)) for a in inputs.values())
        ref = None
        for peer, builder in impls.items():
            if peers_wanted and peer not in peers_wanted and not (
                    peer not in PEERS and LIB_OF[peer] in {LIB_OF[p] for p in peers_wanted}):
                continue  # an extra form (cupy_op, torch_op, ...) comes with its library
            cell, out = run_cell(run, "%s/%s" % (w.id, peer), peer, builder, args.warmup,
                                 args.runs, ref, x64=w.x64, post=w.post.get(peer))
            if cell["median_ms"] is not None and floor_bytes:
                cell["gbps"] = floor_bytes / (cell["median_ms"] * 1e-3) / 1e9
            if cell["median_ms"] is not None and entry.get("flops"):
                cell["gflops"] = entry["flops"] / (cell["median_ms"] * 1e-3) / 1e9
            entry["peers"][peer] = cell
            if ref is None and out is not None and w.compare:
                ref = out  # the first peer that ran is the reference for the others
            elif isinstance(cell.get("max_rel_err"), float) and cell["max_rel_err"] > 1e-3:
                log("  WARNING %s/%s differs from the reference: max_rel_err %.3g"
                    % (w.id, peer, cell["max_rel_err"]))
            elif isinstance(cell.get("max_rel_err"), str):
                log("  WARNING %s/%s: %s" % (w.id, peer, cell["max_rel_err"]))
            out = None
            extra = ""
            if "compile_s" in cell:
                extra = "  (compile %.1f s)" % cell["compile_s"]
            if "per_call_sync_ms" in cell:
                extra += "  (back to back x%d; one call waited for: %s ms)" % (
                    cell["batch"], fmt_ms(cell["per_call_sync_ms"]))
            err = cell.get("max_rel_err")
            if isinstance(err, float):
                extra += "  err %.1e" % err
            if cell["median_ms"] is not None:
                log("  %-14s %9s ms  min %s  max %s%s  %s%s" % (
                    peer, fmt_ms(cell["median_ms"]), fmt_ms(cell["min_ms"]),
                    fmt_ms(cell["max_ms"]),
                    "  %.0f GB/s" % cell["gbps"] if "gbps" in cell else
                    "  %.0f GFLOP/s" % cell["gflops"] if "gflops" in cell else "",
                    cell.get("dtype"),
                    extra))
        ref = None
        inputs = impls = None
        free_memory()


# ---------------------------------------------------------------------------------------------
# Copy bandwidth, dispatch overhead, CuPy's first call
# ---------------------------------------------------------------------------------------------


def bench_copy(run, res):
    nbytes = run.args.copy_mib << 20
    res["copy"] = {"bytes_moved": 2 * nbytes, "buffer_bytes": nbytes}
    best = None
    for lib in ("cupy", "torch"):
        if (lib == "cupy" and cp is None) or (lib == "torch" and torch is None):
            continue
        try:
            n = nbytes // 4
            if lib == "cupy":
                src = cp.random.random(n, dtype=cp.float32)
                dst = cp.empty_like(src)

                def fn():  # cudaMemcpyAsync device to device, as torch's copy_ is
                    dst.data.copy_from_device_async(src.data, nbytes)
                    return dst
            else:
                src = torch.rand(n, device="cuda")
                dst = torch.empty_like(src)

                def fn():
                    return dst.copy_(src)

            stats, _ = time_gpu(fn, lib, run.args.warmup, max(run.args.runs, 15))
            gbps = 2 * nbytes / (stats["median_ms"] * 1e-3) / 1e9
            res["copy"][lib] = dict(stats, gbps=gbps)
            log("copy (%s): %.3f ms for %d MiB, %.0f GB/s (read + write)"
                % (lib, stats["median_ms"], nbytes >> 20, gbps))
            best = gbps if best is None else max(best, gbps)
        except Exception as e:  # noqa: BLE001
            run.error("copy/" + lib, one_line(e))
        src = dst = None
        free_memory()
    res["copy"]["gbps"] = best


def chain_fn(lib, k, a):
    """A chain of k elementwise ops: alternately * 1.0001 and + 0.5 (the same chain as
    bench/latency.c builds in fusec)."""
    def run():
        y = a
        for i in range(k):
            y = y * 1.0001 if i % 2 == 0 else y + 0.5
        return y

    return run


def bench_dispatch(run, res):
    """Wall time per evaluation of a chain of k tiny elementwise ops, many iterations,
    synchronised at the end: for k = 1 that is the host dispatch overhead per op."""
    res["dispatch"] = {}
    iters = run.args.dispatch_iters
    for lib in ("cupy", "torch"):
        if (lib == "cupy" and cp is None) or (lib == "torch" and torch is None):
            continue
        if run.out_of_time():
            run.error("dispatch/" + lib, "skipped: --deadline-s reached")
            continue
        rows = {}
        try:
            if lib == "cupy":
                a = cp.random.random(1, dtype=cp.float32) + 0.5
            else:
                a = torch.rand(1, device="cuda") + 0.5
            for k in (1, 10, 100):
                fn = chain_fn(lib, k, a)
                n = max(200, iters // k)
                for _ in range(min(n, 500)):
                    fn()
                sync(lib)
                reps = []
                for _ in range(3):
                    t0 = time.perf_counter()
                    for _ in range(n):
                        fn()
                    sync(lib)
                    reps.append((time.perf_counter() - t0) / n * 1e6)
                per_eval = statistics.median(reps)
                rows[str(k)] = {"per_eval_us": per_eval, "per_op_us": per_eval / k,
                                "iters": n, "reps_us": reps}
                log("dispatch (%s): chain of %3d ops: %.2f us per evaluation, %.2f us per op"
                    % (lib, k, per_eval, per_eval / k))
            res["dispatch"][lib] = {"per_op_us": rows["1"]["per_eval_us"], "chains": rows}
        except Exception as e:  # noqa: BLE001
            run.error("dispatch/" + lib, one_line(e))
            if rows:
                res["dispatch"][lib] = {"per_op_us": rows.get("1", {}).get("per_eval_us"),
                                        "chains": rows}
        free_memory()


FIRST_CALL_CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
import cupy as cp
x = cp.random.random(1 << 20, dtype=cp.float32) + 0.5
y = x * 2            # CUDA context, memory pool and a stock kernel, before the clock
cp.cuda.Device().synchronize()
t1 = time.perf_counter()
k = cp.ElementwiseKernel('float32 x', 'float32 y',
                         'y = tanh(sin(x) + %sf * x)' % sys.argv[1], 'fc_bench_first_call')
t2 = time.perf_counter(); z = k(x); cp.cuda.Device().synchronize(); t3 = time.perf_counter()
z = k(x); cp.cuda.Device().synchronize(); t4 = time.perf_counter()
print(json.dumps({"import_and_init_ms": (t1 - t0) * 1e3, "first_ms": (t3 - t2) * 1e3,
                  "second_ms": (t4 - t3) * 1e3}))
"""


def bench_first_call(run, res):
    """CuPy's first call of a kernel it has never seen: in a new process with an empty
    CUPY_CACHE_DIR (compiles), then in new processes with that cache warm (loads the cubin)."""
    res["first_call"] = {}
    if cp is None:
        res["first_call"]["error"] = LIB_ERRORS.get("cupy", "cupy unavailable")
        return
    if run.out_of_time():
        run.error("first_call", "skipped: --deadline-s reached")
        return
    cache = tempfile.mkdtemp(prefix="peers-cupy-cache-")
    env = dict(os.environ, CUPY_CACHE_DIR=cache)
    # A constant of this run: no cache anywhere holds this kernel.
    const = "%.9f" % (0.1 + (os.getpid() % 100000) * 1e-9)
    runs = []
    try:
        for i in range(1 + run.args.first_call_warm_reps):
            p = subprocess.run([sys.executable, "-c", FIRST_CALL_CHILD, const], env=env,
                               capture_output=True, text=True, timeout=300)
            if p.returncode != 0:
                raise RuntimeError("child exited %d: %s" % (p.returncode,
                                                            p.stderr.strip()[-400:]))
            runs.append(json.loads(p.stdout.strip().splitlines()[-1]))
        cold, warm = runs[0], runs[1:]
        fc = res["first_call"]
        fc["cupy_cold_ms"] = cold["first_ms"]
        fc["cupy_cold_second_ms"] = cold["second_ms"]
        fc["cupy_warm_disk_ms"] = statistics.median(r["first_ms"] for r in warm) if warm \
            else None
        fc["cupy_warm_disk_runs_ms"] = [r["first_ms"] for r in warm]
        fc["cupy_in_process_ms"] = statistics.median(r["second_ms"] for r in runs)
        fc["cupy_import_and_init_ms"] = cold["import_and_init_ms"]
        log("cupy first call of a new kernel: %.1f ms with an empty cache, %s ms from the warm "
            "disk cache (new process), %.3f ms for the second call"
            % (fc["cupy_cold_ms"], fmt_ms(fc["cupy_warm_disk_ms"]), fc["cupy_in_process_ms"]))
    except Exception as e:  # noqa: BLE001
        res["first_call"]["error"] = one_line(e)
        run.error("first_call", one_line(e))
    finally:
        shutil.rmtree(cache, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# The size sweep: W1 and W6 at 2^16 ... 2^28 elements, every peer.
# ---------------------------------------------------------------------------------------------


def bench_sweep(run, res):
    args = run.args
    exps = list(range(args.sweep_min, args.sweep_max + 1, args.sweep_step))
    res["sweep"] = {}
    if cp is None and torch is None and jax is None:
        run.error("sweep", "skipped: neither CuPy, PyTorch nor JAX can run")
        return
    peers_wanted = set(args.peers.split(",")) if args.peers else set(PEERS)
    for wid in ("W1", "W6"):
        sw = {"elements": [2**e for e in exps], "bytes": [], "peers": {p: [] for p in PEERS
                                                                        if p in peers_wanted}}
        res["sweep"][wid] = sw
        for e in exps:
            n = 2**e
            cells = {}
            try:
                if run.out_of_time():
                    raise TimeoutError("skipped: --deadline-s reached")
                if wid == "W1":
                    x = rand(n)
                    impls, nbytes = w1_impls(x, True), 8 * n
                else:
                    rows = max(1, n // 4096)
                    x = rand((rows, 4096))
                    impls, nbytes = w6_impls(x, True), 4 * rows * 4096 + 4 * rows
                if args.sweep_compile == "off":
                    impls.pop("torch_compile", None)
            except Exception as ex:  # noqa: BLE001
                run.error("sweep/%s/2^%d" % (wid, e), one_line(ex))
                impls, nbytes = {}, None
            sw["bytes"].append(nbytes)
            for peer in sw["peers"]:
                if peer not in impls:
                    sw["peers"][peer].append(None)
                    continue
                cell, _ = run_cell(run, "sweep/%s/2^%d/%s" % (wid, e, peer), peer,
                                   impls[peer], args.warmup, args.sweep_runs, None)
                t = cell["median_ms"]
                sw["peers"][peer].append(
                    None if t is None else {"median_ms": t, "gbps": nbytes / (t * 1e-3) / 1e9})
                cells[peer] = t
            log("sweep %s 2^%d: %s" % (wid, e, "  ".join(
                "%s %s ms" % (p, fmt_ms(t)) for p, t in cells.items())))
            x = impls = None
            free_memory()


# ---------------------------------------------------------------------------------------------


def device_info():
    info = {"host": platform.node(), "python": platform.python_version()}
    if cp is not None:
        try:
            props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
            name = props["name"]
            info["gpu"] = name.decode() if isinstance(name, bytes) else str(name)
            info["cc"] = "%d.%d" % (props["major"], props["minor"])
            info["sm_count"] = props["multiProcessorCount"]
            info["total_memory"] = props["totalGlobalMem"]
            info["cupy"] = cp.__version__
            info["cuda_runtime"] = cp.cuda.runtime.runtimeGetVersion()
        except Exception as e:  # noqa: BLE001
            info["cupy_info_error"] = one_line(e)
    if torch is not None:
        info["torch"] = torch.__version__
        try:
            info.setdefault("gpu", torch.cuda.get_device_name())
            info["torch_cuda"] = torch.version.cuda
        except Exception as e:  # noqa: BLE001
            info["torch_info_error"] = one_line(e)
    if jax is not None:
        info["jax"] = jax.__version__
        try:
            import jaxlib

            info["jaxlib"] = jaxlib.__version__
        except Exception:  # noqa: BLE001
            pass
        info["jax_device"] = "%s (%s)" % (getattr(JAX_DEVICE, "device_kind", JAX_DEVICE),
                                          JAX_DEVICE.platform)
    return info


def print_table(res):
    log("")
    log("%-11s %9s %9s %9s %9s %9s  %-22s %7s %8s" % ("workload", "cupy", "fuse", "torch",
                                                     "compile", "jax", "other", "best",
                                                     "floor%"))
    copy = res.get("copy", {}).get("gbps")
    for wid, e in res["workloads"].items():
        p = e["peers"]
        vals = [p.get(c, {}).get("median_ms") if c in p else None for c in PEERS]
        others = ["%s %s" % (k, fmt_ms(v.get("median_ms"))) for k, v in p.items()
                  if k not in PEERS]
        times = [v.get("median_ms") for v in p.values() if v.get("median_ms") is not None]
        best = min(times) if times else None
        floor = ""
        if best and e.get("floor_bytes") and copy:
            floor = "%.0f%%" % (100 * e["floor_bytes"] / (copy * 1e9) / (best * 1e-3))
        log("%-11s %9s %9s %9s %9s %9s  %-22s %7s %8s" % (
            wid, *[fmt_ms(v) for v in vals], ", ".join(others)[:22], fmt_ms(best), floor))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", metavar="FILE", help="write every figure as JSON to FILE")
    ap.add_argument("--runs", type=int, default=15, help="timed runs per cell (default 15)")
    ap.add_argument("--warmup", type=int, default=3, help="warm-up calls per cell (default 3)")
    ap.add_argument("--only", help="comma-separated workload ids (W1,...,W11,W12_matmul,"
                                   "W12_fft,I11_cumsum,I11_normal,I11_compress,I11_take,I11_scatter_add,I11_sort,I11_argsort,"
                                   "I12_solve,I12_svd,I12_cholesky,I12_rfft,I12_fft2,"
                                   "I12_matmul_bias_relu,I12_spmv,I13_gelu_f16,I13_gelu_bf16,"
                                   "I13_layernorm_1k,...; W12, I11, I12 and I13 select all "
                                   "theirs)")
    ap.add_argument("--peers", help="comma-separated peers (%s; default all)" % ",".join(PEERS))
    ap.add_argument("--scale", type=int, default=1,
                    help="divide every workload's size by this (quick checks; default 1)")
    ap.add_argument("--no-workloads", action="store_true", help="skip the workload table")
    ap.add_argument("--no-sweep", action="store_true", help="skip the size sweep")
    ap.add_argument("--no-latency", action="store_true",
                    help="skip dispatch overhead and CuPy's first-call measurement")
    ap.add_argument("--no-copy", action="store_true", help="skip the copy bandwidth")
    ap.add_argument("--sweep-min", type=int, default=16, help="smallest size, log2 (16)")
    ap.add_argument("--sweep-max", type=int, default=28, help="largest size, log2 (28)")
    ap.add_argument("--sweep-step", type=int, default=2, help="log2 step (2)")
    ap.add_argument("--sweep-runs", type=int, default=None,
                    help="timed runs per sweep cell (default: --runs)")
    ap.add_argument("--sweep-compile", choices=("static", "off"), default="static",
                    help="torch.compile in the sweep: a static-shape compile per size "
                         "(default) or off")
    ap.add_argument("--copy-mib", type=int, default=1024,
                    help="buffer size of the copy-bandwidth test in MiB (default 1024)")
    ap.add_argument("--dispatch-iters", type=int, default=20000,
                    help="iterations of the 1-op dispatch loop (k ops: iters/k, at least 200)")
    ap.add_argument("--first-call-warm-reps", type=int, default=3,
                    help="new processes timed from CuPy's warm disk cache (default 3)")
    ap.add_argument("--deadline-s", type=float, default=0,
                    help="skip what is left after this many seconds (0: no limit)")
    ap.add_argument("--no-cupy", action="store_true", help="run without CuPy")
    ap.add_argument("--no-torch", action="store_true", help="run without PyTorch")
    ap.add_argument("--no-jax", action="store_true", help="run without JAX")
    ap.add_argument("--jax-batch", type=int, default=0,
                    help="JAX: calls a back-to-back batch (default 0: about 50 ms of work, "
                         "1 to 100)")
    ap.add_argument("--jax-cpu", action="store_true",
                    help="JAX on its CPU backend: only to check the JAX forms where there is "
                         "no GPU (with --no-cupy --no-torch and a --scale); not a benchmark")
    ap.add_argument("-v", "--verbose", action="store_true", help="tracebacks of failures")
    args = ap.parse_args(argv)
    if args.runs < 1 or args.warmup < 1 or args.scale < 1:
        ap.error("--runs, --warmup and --scale must be at least 1")
    if args.sweep_runs is None:
        args.sweep_runs = args.runs

    run = Run(args)
    load_libraries(not args.no_cupy, not args.no_torch, not args.no_jax, args.jax_cpu)
    for lib, msg in LIB_ERRORS.items():
        run.error(lib, msg)
    if torch is not None:
        # The sweep compiles one function at several static shapes; the default limit of 8
        # recompilations per function would stop it half way.
        for name in ("recompile_limit", "cache_size_limit", "accumulated_recompile_limit",
                     "accumulated_cache_size_limit"):
            if hasattr(torch._dynamo.config, name):
                try:
                    setattr(torch._dynamo.config, name, 256)
                except Exception:  # noqa: BLE001
                    pass

    res = {
        "tool": "bench/peers.py",
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "device": device_info() if (cp is not None or torch is not None or jax is not None)
        else {},
        "settings": {k: v for k, v in vars(args).items() if k != "json"},
        "workloads": {},
        "errors": run.errors,
    }
    log("peers.py on %s (cupy %s, torch %s, jax %s)" % (res["device"].get("gpu", "no GPU"),
                                                         res["device"].get("cupy", "-"),
                                                         res["device"].get("torch", "-"),
                                                         res["device"].get("jax", "-")))
    if cp is not None:
        cp.random.seed(1)
    if torch is not None:
        torch.manual_seed(1)

    def write():
        res["elapsed_s"] = time.time() - run.t0
        if args.json:
            tmp = args.json + ".tmp"
            with open(tmp, "w") as f:
                json.dump(res, f, indent=1, default=str)
            os.replace(tmp, args.json)

    steps = []
    if not args.no_copy:
        steps.append(bench_copy)
    if not args.no_workloads:
        steps.append(bench_workloads)
    if not args.no_latency:
        steps += [bench_dispatch, bench_first_call]
    if not args.no_sweep:
        steps.append(bench_sweep)
    for step in steps:
        try:
            step(run, res)
        except Exception as e:  # noqa: BLE001 - a bug in one step must not lose the others
            run.error(step.__name__, one_line(e))
            traceback.print_exc()
            free_memory()
        write()  # after every step: a killed run still leaves what it measured
    if res["workloads"]:
        print_table(res)
    log("\n%d errors; %.0f s in all%s" % (len(run.errors), time.time() - run.t0,
                                           "; JSON: " + args.json if args.json else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
