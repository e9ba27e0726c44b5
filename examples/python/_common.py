"""What the Python seed programs share: the NumPy check, which exits non-zero on a mismatch."""
import sys

import numpy as np

import fusec


def check(name, got, want, rtol=1e-5, atol=1e-6):
    """got (a fusec array) matches want (NumPy's result): dtype, shape and values."""
    g = fusec.asnumpy(got)
    if g.dtype != want.dtype or g.shape != want.shape or not np.allclose(
            g, want, rtol=rtol, atol=atol, equal_nan=True):
        bad = np.argwhere(~np.isclose(g, want, rtol=rtol, atol=atol)) if g.shape == want.shape \
            else []
        print(f"{name}: MISMATCH: got {g.dtype}{g.shape}, NumPy {want.dtype}{want.shape}"
              + (f"; first differing index {tuple(bad[0])}: {g[tuple(bad[0])]} vs "
                 f"{want[tuple(bad[0])]}" if len(bad) else ""), file=sys.stderr)
        sys.exit(1)


def backend():
    return fusec.current_context().backend
