"""Row L2 norms, two ways: sqrt(sum(x*x, axis=1)) and fusec.linalg.norm."""
import numpy as np

import fusec
from _common import backend, check

xh = np.random.default_rng(3).standard_normal((1000, 256), dtype=np.float32)
x = fusec.asarray(xh)
want = np.sqrt((xh * xh).sum(axis=1))
check("l2norm", fusec.sqrt((x * x).sum(axis=1)), want)
check("l2norm (linalg.norm)", fusec.linalg.norm(x, axis=1), np.linalg.norm(xh, axis=1))
print(f"l2norm: norms of {xh.shape[0]} rows of {xh.shape[1]} float32, on the {backend()} "
      "backend; matches NumPy")
