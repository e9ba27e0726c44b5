"""x**2 + 2*y over float32 vectors (Python scalars stay weak: the result is float32)."""
import numpy as np

import fusec
from _common import backend, check

rng = np.random.default_rng(1)
xh, yh = rng.random(100_000, dtype=np.float32), rng.random(100_000, dtype=np.float32)
x, y = fusec.asarray(xh), fusec.asarray(yh)
z = x**2 + 2 * y
check("poly2", z, xh**2 + 2 * yh)
print(f"poly2: x**2 + 2*y over {xh.size} float32 -> {z.dtype}, on the {backend()} backend; "
      "matches NumPy")
