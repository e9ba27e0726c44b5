"""Mandelbrot: 100 steps of z = z*z + c where |z| <= 2, counted per point (a lazy graph of
100 steps, evaluated once)."""
import numpy as np

import fusec
from _common import backend, check

W, H, STEPS = 81, 37, 100
re = fusec.linspace(-2.0, 0.5, W)
im = fusec.linspace(-1.125, 1.125, H)
c = re[None, :] + im[:, None] * 1j
z = fusec.zeros_like(c)
count = fusec.zeros((H, W), dtype=fusec.int32)
for _ in range(STEPS):
    bounded = fusec.abs(z) <= 2.0
    z = fusec.where(bounded, z * z + c, z)
    count = count + bounded

ch = np.linspace(-2.0, 0.5, W)[None, :] + np.linspace(-1.125, 1.125, H)[:, None] * 1j
zh = np.zeros_like(ch)
want = np.zeros((H, W), np.int32)
for _ in range(STEPS):
    b = np.abs(zh) <= 2.0
    zh = np.where(b, zh * zh + ch, zh)
    want += b
check("mandelbrot", count, want, rtol=0, atol=0)
print(f"mandelbrot: {W} x {H} complex128 grid, {STEPS} steps, on the {backend()} backend; "
      "matches NumPy")
for row in fusec.asnumpy(count)[::2]:
    print("  " + "".join("#" if n == STEPS else " .:-=+*%"[min(n // 5, 7)] for n in row))
