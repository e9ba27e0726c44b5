// bench/micro/scan_tiles.cu - times one dumped scan kernel (`fusec dump bench/fc/i11_cumsum.fc`,
// the first line dropped, hand-edited variants of it) on the I11_cumsum row, as fusec launches
// it: persistent blocks (SCAN_BLOCKS a multiprocessor), scratch zeroed once (the kernel leaves
// it zeroed). CUDA events, after warm-up, median of 15; checks every output against a
// double-precision prefix on the host. Not part of fusec: it chose codegen's scan tile shape.
//   nvcc -O3 -std=c++17 -arch=sm_90 -DKERNEL='"scan_v0.cu"' -DSCAN_BLOCKS=5 \
//        -o scan_v0 bench/micro/scan_tiles.cu
#include KERNEL
#include <cmath>

#include "micro_timing.cuh"

int main() {
    const long long n = 1ll << 26;
    std::vector<float> hx(n);
    unsigned s = 12345u;
    for (long long i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        hx[i] = (float)((s >> 8) * 0x1p-24 - 0.25); // drifts upward: sums stay away from 0
    }
    float *x, *y, *copy;
    unsigned char *scratch;
    const long long tile = 4096 * 4 / (long long)sizeof(SCAN_ACC);
    const long long ntiles = (n + tile - 1) / tile;
    const size_t scratch_bytes = 16 + (size_t)ntiles * (sizeof(SCAN_ACC) <= 4 ? 8 : 16) + 4096;
    CK(cudaMalloc(&x, n * 4));
    CK(cudaMalloc(&y, n * 4));
    CK(cudaMalloc(&copy, n * 4));
    CK(cudaMalloc(&scratch, scratch_bytes));
    CK(cudaMemset(scratch, 0, scratch_bytes));
    CK(cudaMemcpy(x, hx.data(), n * 4, cudaMemcpyHostToDevice));
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    fcx_params p = {};
    p.ptr[0] = x, p.ptr[1] = y, p.ptr[2] = scratch;
    p.i[0] = n;
#ifdef GRID_TILES /* a block a tile, as CUB launches: blocks that start late find no ticket */
    const int grid = (int)ntiles;
#else
    const int grid = prop.multiProcessorCount * SCAN_BLOCKS;
#endif
    auto run_scan = [&] { fusec_kernel<<<grid, 256>>>(p); };
    auto run_copy = [&] { cudaMemcpyAsync(copy, x, n * 4, cudaMemcpyDeviceToDevice); };
    const double copy_ms = median_ms(run_copy), ms = median_ms(run_scan);
    CK(cudaGetLastError());
    std::vector<float> hy(n);
    CK(cudaMemcpy(hy.data(), y, n * 4, cudaMemcpyDeviceToHost));
    double acc = 0, worst = 0;
    for (long long i = 0; i < n; i++) {
        acc += hx[i];
        const double e = std::fabs(hy[i] - acc) / std::max(std::fabs(acc), 1.0);
        if (!(e <= worst)) worst = e;
    }
    printf("%-12s grid %7d, %d blocks/SM %8.4f ms  %5.1f%% of the copy floor  worst rel err %.2g\n", KERNEL, grid,
           SCAN_BLOCKS, ms, 100 * copy_ms / ms, worst);
    return worst < 1e-6 ? 0 : 1;
}
