"""A 3x3 box blur of an image's interior: nine shifted slices summed, fused into one kernel."""
import numpy as np

import fusec
from _common import backend, check

H, W = 480, 640
img = np.random.default_rng(5).random((H, W), dtype=np.float32)
x = fusec.asarray(img)
acc = fusec.zeros((H - 2, W - 2), dtype=fusec.float32)
want = np.zeros((H - 2, W - 2), np.float32)
for di in range(3):
    for dj in range(3):
        acc = acc + x[di:di + H - 2, dj:dj + W - 2]
        want += img[di:di + H - 2, dj:dj + W - 2]
check("blur3x3", acc / 9, want / 9)
print(f"blur3x3: {H} x {W} float32 image, on the {backend()} backend; matches NumPy")
