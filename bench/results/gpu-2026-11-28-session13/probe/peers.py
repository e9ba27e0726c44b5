"""probe: CuPy / PyTorch times of the same ops (CUDA events, median of 15 after 3 warm-ups)."""
import statistics, sys
import cupy as cp
import torch

def t(fn, runs=15, warm=3):
    for _ in range(warm): fn()
    cp.cuda.Device().synchronize()
    out = []
    for _ in range(runs):
        s, e = cp.cuda.Event(), cp.cuda.Event()
        s.record(); fn(); e.record(); e.synchronize()
        out.append(cp.cuda.get_elapsed_time(s, e))
    return statistics.median(out)

rng = cp.random.default_rng(1)
x = rng.random(1 << 26, dtype=cp.float32)
h = cp.fft.rfft(x)
z = (rng.random((8192, 8192), dtype=cp.float32) + 1j * rng.random((8192, 8192), dtype=cp.float32)).astype(cp.complex64)
a = rng.random((4096, 4096), dtype=cp.float32); b = rng.random((4096, 4096), dtype=cp.float32)
bias = rng.random(4096, dtype=cp.float32); v = rng.random(4096, dtype=cp.float32)
tx, th, tz, ta, tb, tbias, tv = (torch.from_dlpack(q) for q in (x, h, z, a, b, bias, v))
rows = [
    ("rfft", lambda: cp.fft.rfft(x), lambda: torch.fft.rfft(tx)),
    ("irfft", lambda: cp.fft.irfft(h), lambda: torch.fft.irfft(th)),
    ("fft2", lambda: cp.fft.fft2(z), lambda: torch.fft.fft2(tz)),
    ("mbr", lambda: cp.maximum(a @ b + bias, 0), lambda: torch.relu(torch.addmm(tbias, ta, tb))),
    ("solve", lambda: cp.linalg.solve(a, v), lambda: torch.linalg.solve(ta, tv)),
    ("copy", lambda: x.copy(), lambda: tx.clone()),
]
for name, c, p in rows:
    print(f"probe {name}: cupy {t(c):.3f} ms torch {t(p):.3f} ms", flush=True)
