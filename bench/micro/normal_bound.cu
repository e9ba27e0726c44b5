// bench/micro/normal_bound.cu - what bounds issue 11's normal(2^26) f32 row: the time of each
// stage of a draw on its own, beside the copy floor, timed the same way as scan_gather.cu
// (CUDA events, after warm-up, median of 15). Not part of fusec. Build on the build host:
//   nvcc -O3 -std=c++17 -arch=sm_90 -o normal_bound bench/micro/normal_bound.cu
// Kernels (each writes n f32, 4 a thread per step, grid-stride, 16-byte stores):
//   fill          a constant: the write floor a draw cannot beat
//   philox        Philox4x32-10's four words as they are (the generator fusec must use)
//   exact normal  fusec's draw: graph/normal32.h on Philox words, the same bits as the host
//   fast normal   Box-Muller on the hardware approximations (__logf, __sincosf, sqrtf), as
//                 cuRAND and PyTorch do: what an approximate tier could reach
#include "../../graph/normal32.h"
#include "micro_timing.cuh"

// Philox4x32-10 of (counter = block, stream 0, key = seed): the include/fusec.h layout
__device__ __forceinline__ void philox(unsigned long long block, unsigned long long seed,
                                       unsigned w[4]) {
    unsigned c0 = (unsigned)block, c1 = (unsigned)(block >> 32), c2 = 0, c3 = 0;
    unsigned k0 = (unsigned)seed, k1 = (unsigned)(seed >> 32);
#pragma unroll
    for (int r = 0; r < 10; r++) {
        if (r) {
            k0 += 0x9E3779B9u;
            k1 += 0xBB67AE85u;
        }
        const unsigned long long p0 = (unsigned long long)0xD2511F53u * c0;
        const unsigned long long p1 = (unsigned long long)0xCD9E8D57u * c2;
        c0 = (unsigned)(p1 >> 32) ^ c1 ^ k0;
        c1 = (unsigned)p1;
        c2 = (unsigned)(p0 >> 32) ^ c3 ^ k1;
        c3 = (unsigned)p0;
    }
    w[0] = c0, w[1] = c1, w[2] = c2, w[3] = c3;
}

enum { FILL, PHILOX, EXACT, FAST };

template <int KIND> __global__ void __launch_bounds__(256) draw(float4 *out, long long nv,
                                                                unsigned long long seed) {
    for (long long q = blockIdx.x * (long long)blockDim.x + threadIdx.x; q < nv;
         q += (long long)gridDim.x * blockDim.x) {
        float4 v;
        if (KIND == FILL) {
            v = make_float4(1.f, 2.f, 3.f, 4.f);
        } else {
            unsigned w[4];
            philox((unsigned long long)q, seed, w);
            if (KIND == PHILOX) {
                v = make_float4(__uint_as_float(w[0]), __uint_as_float(w[1]),
                                __uint_as_float(w[2]), __uint_as_float(w[3]));
            } else if (KIND == EXACT) {
                v = make_float4(fcg_normal32(w[0], w[1], 0), fcg_normal32(w[0], w[1], 1),
                                fcg_normal32(w[2], w[3], 0), fcg_normal32(w[2], w[3], 1));
            } else {
                float r[4];
                for (int h = 0; h < 2; h++) {
                    const float u1 = ((float)w[2 * h] + 1.0f) * 0x1p-32f;
                    const float u2 = (float)w[2 * h + 1] * 0x1p-32f;
                    const float m = sqrtf(-2.0f * __logf(u1));
                    float s, c;
                    __sincosf(6.2831853f * u2, &s, &c);
                    r[2 * h] = m * c, r[2 * h + 1] = m * s;
                }
                v = make_float4(r[0], r[1], r[2], r[3]);
            }
        }
        out[q] = v;
    }
}

int main() {
    const long long n = 1ll << 26;
    float4 *a, *b;
    CK(cudaMalloc(&a, n * 4));
    CK(cudaMalloc(&b, n * 4));
    CK(cudaMemset(a, 1, n * 4));
    const double copy_ms = median_ms([&] { cudaMemcpyAsync(b, a, n * 4, cudaMemcpyDeviceToDevice); });
    const double copy_gbs = 2.0 * n * 4 / copy_ms / 1e6;
    const double floor_ms = n * 4 / copy_gbs / 1e6; // the write alone at the copy's rate
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    printf("%s: copy %.0f GB/s; the floor of writing 2^26 f32: %.4f ms\n", prop.name, copy_gbs,
           floor_ms);
    const int grid = prop.multiProcessorCount * 8;
    const char *names[] = {"fill (the write floor)", "philox words", "exact normal (fusec)",
                           "fast normal (__logf, __sincosf)"};
    for (int k = 0; k < 4; k++) {
        auto go = [&] {
            switch (k) {
            case FILL: draw<FILL><<<grid, 256>>>(a, n / 4, 7); break;
            case PHILOX: draw<PHILOX><<<grid, 256>>>(a, n / 4, 7); break;
            case EXACT: draw<EXACT><<<grid, 256>>>(a, n / 4, 7); break;
            default: draw<FAST><<<grid, 256>>>(a, n / 4, 7); break;
            }
        };
        const double ms = median_ms(go);
        CK(cudaGetLastError());
        printf("%-36s %8.4f ms  %5.1f%% of the floor\n", names[k], ms, 100 * floor_ms / ms);
    }
    return 0;
}
