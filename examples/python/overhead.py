"""Host overhead of one fused evaluation from Python of a 10-op expression, against CuPy's 10
separate ops (when CuPy is installed), in the same process. The array is small (4096 float32)
so that the time is the host's: building the graph, finding the cached plan, launching. The
same expression as a fusec.fuse function: traced once, then replayed in one C call per call
(no Python op by op), against building it op by op; and cupy.fuse's where CuPy is there."""
import time

import numpy as np

import fusec
from _common import backend, check

N, RUNS = 4096, 2000
xh = np.random.default_rng(6).random(N, dtype=np.float32)


def expr(m, x):  # 10 ops
    y = m.sin(x) * 2.0 + 1.0
    y = m.exp(-y) - x / 3.0
    return m.tanh(y) * m.cos(x) + 0.5


def timed(fn, sync):
    for _ in range(20):
        fn()
    sync()
    t = time.perf_counter()
    for _ in range(RUNS):
        fn()
    sync()
    return (time.perf_counter() - t) / RUNS * 1e6


x = fusec.asarray(xh)
ctx = fusec.current_context()
check("overhead", expr(fusec, x), expr(np, xh))
us = timed(lambda: fusec.eval(expr(fusec, x)), ctx.synchronize)
build = timed(lambda: expr(fusec, x), lambda: None)
print(f"overhead: fusec, one fused evaluation of 10 ops on {N} float32: {us:.1f} us per "
      f"evaluation (building the graph from Python: {build:.1f} us), on the {backend()} "
      "backend")
fused = fusec.fuse(lambda x: expr(fusec, x))
check("overhead (fuse)", fused(x), expr(np, xh))
us_f = timed(lambda: fusec.eval(fused(x)), ctx.synchronize)
replay = timed(lambda: fused(x), lambda: None)
print(f"overhead: fusec.fuse of the same 10 ops: {us_f:.1f} us per evaluation (the replay "
      f"that builds the graph: {replay:.1f} us, {build / replay:.1f}x faster than op by op)")
try:
    import cupy as cp
except ImportError:
    print("overhead: CuPy is not installed: no comparison")
else:
    xc = cp.asarray(xh)
    us_cp = timed(lambda: expr(cp, xc), cp.cuda.Stream.null.synchronize)
    print(f"overhead: CuPy, the same 10 ops one kernel each: {us_cp:.1f} us "
          f"({us_cp / us:.2f}x fusec's)")
    def cupy_expr(x):  # (cupy.fuse names its kernel after the function: not a lambda)
        return expr(cp, x)

    cfused = cp.fuse(cupy_expr)
    us_cf = timed(lambda: cfused(xc), cp.cuda.Stream.null.synchronize)
    print(f"overhead: cupy.fuse of the same 10 ops: {us_cf:.1f} us ({us_cf / us_f:.2f}x "
          "fusec.fuse's)")
