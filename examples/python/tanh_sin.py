"""y = tanh(sin(x) + 0.1 x) over 2^20 float32 values: one fused kernel, timed."""
import time

import numpy as np

import fusec
from _common import backend, check

n = 1 << 20
xh = np.random.default_rng(42).random(n, dtype=np.float32)
x = fusec.asarray(xh)
fusec.eval(fusec.tanh(fusec.sin(x) + 0.1 * x))  # compile (or load from the cache) once
times = []
for _ in range(5):
    t = time.perf_counter()
    y = fusec.tanh(fusec.sin(x) + 0.1 * x)
    fusec.eval(y)
    fusec.current_context().synchronize()
    times.append(time.perf_counter() - t)
check("tanh_sin", y, np.tanh(np.sin(xh) + np.float32(0.1) * xh))
print(f"tanh_sin: {n} float32, median {sorted(times)[2] * 1e3:.3f} ms per evaluation, "
      f"on the {backend()} backend; matches NumPy")
