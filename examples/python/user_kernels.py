"""The CuPy material's user kernels, written for fusec: an ElementwiseKernel (y = a*x + b), a
ReductionKernel (the sum of squares) and a RawKernel (saxpy in CUDA C), each checked against
NumPy. Their bodies are CUDA C: on the host backend the kernels are defined and the RawKernel's
module compiled for sm_90 (NVRTC, no GPU needed), and running them is left to the GPU."""
import numpy as np

import fusec
from _common import backend, check

axpb = fusec.ElementwiseKernel("float32 x, float32 a, float32 b", "float32 y",
                               "y = a * x + b;", "axpb")
sum_squares = fusec.ReductionKernel("float32 x", "float32 y", "x * x", "a + b", "y = a", "0",
                                    "sum_squares")
saxpy_src = r'''
extern "C" __global__
void saxpy(const float a, const float* __restrict__ x,
           const float* __restrict__ y, float* __restrict__ out, int n) {
    int i = blockDim.x * blockIdx.x + threadIdx.x;
    if (i < n) out[i] = a * x[i] + y[i];
}
'''

if backend() != "cuda":
    fusec.RawModule(code=saxpy_src, _compile_only=True).compile("sm_90")
    print("user_kernels: defined, and saxpy compiled for sm_90 by NVRTC; running CUDA C needs "
          "the GPU (host backend)")
    raise SystemExit(0)

xh = np.linspace(0, 1, 8, dtype=np.float32)
check("user_kernels (ElementwiseKernel)", axpb(fusec.asarray(xh), np.float32(2.0),
                                               np.float32(1.0)), xh * 2 + 1)
r = np.arange(10, dtype=np.float32)
check("user_kernels (ReductionKernel)", sum_squares(fusec.asarray(r)),
      np.array((r * r).sum(), np.float32))
n = 1 << 20
rng = np.random.default_rng(4)
xs, ys = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
out = fusec.zeros(n, dtype=fusec.float32)
kernel = fusec.RawKernel(saxpy_src, "saxpy")
kernel(((n + 255) // 256,), (256,), (np.float32(3.0), fusec.asarray(xs), fusec.asarray(ys), out,
                                      np.int32(n)))
check("user_kernels (RawKernel)", out, np.float32(3.0) * xs + ys)
print(f"user_kernels: axpb, sum_squares and saxpy ({n} float32) on the {backend()} backend; "
      "match NumPy")
