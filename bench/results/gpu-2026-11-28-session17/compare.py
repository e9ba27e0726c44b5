"""compare.py HOST_DIR CUDA_DIR - every .npy output of a `fusec run --output-dir` on the host
backend against the CUDA backend's: exact for integers and bools, relative 1e-5 (f32) / 1e-12
(f64) for floats, NaN matching NaN. Prints one line."""
import os
import sys

import numpy as np

h, c = sys.argv[1], sys.argv[2]
worst, bad, names = 0.0, [], sorted(f for f in os.listdir(h) if f.endswith('.npy'))
for f in names:
    a = np.load(os.path.join(h, f))
    if not os.path.exists(os.path.join(c, f)):
        bad.append(f + ' missing')
        continue
    b = np.load(os.path.join(c, f))
    if a.shape != b.shape or a.dtype != b.dtype:
        bad.append('%s %s%s vs %s%s' % (f, a.dtype, a.shape, b.dtype, b.shape))
    elif a.dtype.kind in 'fc':
        tol = 1e-12 if a.dtype.itemsize >= 8 and a.dtype.kind == 'f' else 1e-5
        d = np.abs(a.astype(np.complex128) - b) / np.maximum(np.abs(a.astype(np.complex128)), 1e-30)
        d = np.where(np.isnan(a) & np.isnan(b), 0, d)
        worst = max(worst, float(np.nanmax(d)) if d.size else 0.0)
        if d.size and not (np.nanmax(d) <= tol) or (np.isnan(a) != np.isnan(b)).any():
            bad.append('%s rel %.3g' % (f, float(np.nanmax(d))))
    elif not np.array_equal(a, b):
        bad.append('%s %d differ' % (f, int((a != b).sum())))
print('%d outputs, worst rel %.2g: %s' % (len(names), worst, 'MISMATCH ' + '; '.join(bad) if bad else 'match'))
