"""Column normalisation: (x - mean(x, axis=0)) / std(x, axis=0)."""
import numpy as np

import fusec
from _common import backend, check

xh = np.random.default_rng(4).standard_normal((2000, 64)) * 3 + 1
x = fusec.asarray(xh)
y = (x - x.mean(axis=0)) / x.std(axis=0)
check("normalize", y, (xh - xh.mean(axis=0)) / xh.std(axis=0), rtol=1e-10, atol=1e-12)
check("normalize: unit variance", y.std(axis=0), np.ones(64), rtol=1e-10)
print(f"normalize: {xh.shape} float64 columns, on the {backend()} backend; matches NumPy")
