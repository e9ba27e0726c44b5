"""Softmax over the rows of a float32 matrix: max, exp, sum and divide, fused."""
import numpy as np

import fusec
from _common import backend, check

xh = np.random.default_rng(2).standard_normal((512, 1024), dtype=np.float32)
x = fusec.asarray(xh)
e = fusec.exp(x - x.max(axis=1, keepdims=True))
y = e / e.sum(axis=1, keepdims=True)
eh = np.exp(xh - xh.max(axis=1, keepdims=True))
check("softmax", y, eh / eh.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)
check("softmax rows sum to 1", y.sum(axis=1), np.ones(512, np.float32), rtol=1e-5)
print(f"softmax: {xh.shape} float32 rows, on the {backend()} backend; matches NumPy")
