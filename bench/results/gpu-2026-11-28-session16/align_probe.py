"""align_probe.py - a contiguous array imported from PyTorch at an address that is not 16-byte
aligned (a slice starting at element 1), then elementwise and row kernels over it: whether
fusec's 16-byte vector accesses meet it (a misaligned-address fault) or not."""
import numpy as np
import torch

import fusec

for dt, n in ((torch.float32, 4099), (torch.float64, 1029), (torch.float16, 8200)):
    base = torch.arange(n + 1, device="cuda", dtype=dt) / 7
    t = base[1:]  # contiguous, its data one element past an aligned start
    ref = t.cpu().numpy().astype(np.float64)
    try:
        x = fusec.from_dlpack(t)
        y = fusec.asnumpy(x * 2 + 1)
        ok = np.allclose(y.astype(np.float64), ref * 2 + 1, rtol=1e-2)
        s = float(fusec.asnumpy(fusec.sum(x)))
        print(dt, "address %% 16 = %d:" % (t.data_ptr() % 16), "elementwise", "ok" if ok else "WRONG",
              "sum %.6g vs %.6g" % (s, ref.sum()))
    except Exception as e:  # noqa: BLE001
        print(dt, "address %% 16 = %d:" % (t.data_ptr() % 16), "FAILED:", type(e).__name__, e)
