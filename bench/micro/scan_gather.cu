// bench/micro/scan_gather.cu - design probes for issue 11's scan, compaction and gather rows:
// hand-written variants of a decoupled look-back scan, a one-pass selection and a gather,
// beside CUB's device-wide primitives and the copy floor, timed the same way (CUDA events,
// after warm-up, median of 15). Not part of fusec: it measured which structure codegen's scan
// tiles should take (docs/ARCHITECTURE.md, "Scans"). Build on the GPU host:
//   nvcc -O3 -std=c++17 -arch=sm_90 -I/usr/local/cuda/include/cccl bench/micro/scan_gather.cu
#include <cub/cub.cuh>

#include "micro_timing.cuh"

static double g_copy_gbs;
static void report(const char *name, float ms, double bytes) {
    double gbs = bytes / ms / 1e6;
    printf("%-44s %8.4f ms %7.0f GB/s %5.1f%% of copy\n", name, ms, gbs, 100 * gbs / g_copy_gbs);
}

// ---- copy floor ------------------------------------------------------------------------

__global__ void copy4(const float4 *__restrict__ in, float4 *__restrict__ out, long long n4) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4;
         i += (long long)gridDim.x * blockDim.x)
        out[i] = in[i];
}

// ---- decoupled look-back scan: status packed as (flag << 32 | value bits) --------------

__device__ __forceinline__ unsigned long long ld_status(const unsigned long long *p) {
    unsigned long long v;
    asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void st_status(unsigned long long *p, unsigned long long v) {
    asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

// SEL: selection mode (out[pos] = x where x > 0.5, counts scanned as unsigned); else cumsum.
template <int TH, int IT, bool SEL>
__global__ void __launch_bounds__(TH) scan_packed(const float *__restrict__ in,
                                                  float *__restrict__ out, long long n,
                                                  unsigned long long *status, unsigned *ticket) {
    typedef typename std::conditional<SEL, unsigned, float>::type A;
    constexpr int TILE = TH * IT, NW = TH / 32;
    __shared__ float s[TILE + TILE / 32];
    __shared__ A s_wex[NW];
    __shared__ A s_prefix;
    __shared__ unsigned s_tile;
    const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
    if (t == 0) s_tile = atomicAdd(ticket, 1u);
    __syncthreads();
    const unsigned tile = s_tile;
    const long long base = (long long)tile * TILE;
    float xv[IT];
    if (base + TILE <= n) {
#pragma unroll
        for (int k = 0; k < IT; k++) xv[k] = in[base + k * TH + t];
    } else {
#pragma unroll
        for (int k = 0; k < IT; k++) {
            long long i = base + k * TH + t;
            xv[k] = i < n ? in[i] : 0.f;
        }
    }
#pragma unroll
    for (int k = 0; k < IT; k++) {
        int j = k * TH + t;
        s[j + (j >> 5)] = xv[k];
    }
    __syncthreads();
    A v[IT];
#pragma unroll
    for (int k = 0; k < IT; k++) {
        int j = t * IT + k;
        xv[k] = s[j + (j >> 5)];
        if constexpr (SEL)
            v[k] = (xv[k] > 0.5f && base + j < n) ? 1u : 0u;
        else
            v[k] = xv[k];
    }
#pragma unroll
    for (int k = 1; k < IT; k++) v[k] += v[k - 1];
    A x = v[IT - 1];
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        A y = __shfl_up_sync(~0u, x, d);
        if (lane >= d) x += y;
    }
    A xe = __shfl_up_sync(~0u, x, 1);
    if (lane == 0) xe = 0;
    if (lane == 31) s_wex[warp] = x;
    __syncthreads();
    if (warp == 0) {
        A w = lane < NW ? s_wex[lane] : 0;
        A wi = w;
#pragma unroll
        for (int d = 1; d < 32; d <<= 1) {
            A y = __shfl_up_sync(~0u, wi, d);
            if (lane >= d) wi += y;
        }
        const A total = __shfl_sync(~0u, wi, NW - 1);
        if (lane < NW) s_wex[lane] = wi - w; /* exact for unsigned; float: bench only */
        auto bits = [](A a) -> unsigned long long {
            if constexpr (SEL) return a; else return __float_as_uint(a);
        };
        auto val = [](unsigned long long s) -> A {
            if constexpr (SEL) return (unsigned)s; else return __uint_as_float((unsigned)s);
        };
        if (lane == 0) st_status(&status[tile], ((tile == 0 ? 2ull : 1ull) << 32) | bits(total));
        A prefix = 0;
        if (tile > 0) {
            long long hi = (long long)tile - 1;
            for (;;) {
                const long long q = hi - lane;
                unsigned long long sw = q >= 0 ? ld_status(&status[q]) : (2ull << 32);
                while (__any_sync(~0u, (sw >> 32) == 0))
                    if ((sw >> 32) == 0) sw = ld_status(&status[q]);
                const unsigned inc = __ballot_sync(~0u, (sw >> 32) == 2);
                const int near = inc ? __ffs(inc) - 1 : 32;
                A y = lane <= near ? val(sw) : (A)0;
#pragma unroll
                for (int d = 16; d; d >>= 1) y += __shfl_xor_sync(~0u, y, d);
                prefix += y;
                if (inc) break;
                hi -= 32;
            }
            if (lane == 0) st_status(&status[tile], (2ull << 32) | bits(prefix + total));
        }
        if (lane == 0) s_prefix = prefix;
    }
    __syncthreads();
    A run = s_prefix + s_wex[warp] + xe;
    if constexpr (SEL) {
#pragma unroll
        for (int k = 0; k < IT; k++) {
            const A c = run + v[k];
            if (c != run + (k ? v[k - 1] : 0)) out[c - 1] = xv[k];
        }
    } else {
#pragma unroll
        for (int k = 0; k < IT; k++) {
            int j = t * IT + k;
            s[j + (j >> 5)] = run + v[k];
        }
        __syncthreads();
        if (base + TILE <= n) {
#pragma unroll
            for (int k = 0; k < IT; k++) {
                int j = k * TH + t;
                out[base + j] = s[j + (j >> 5)];
            }
        } else {
#pragma unroll
            for (int k = 0; k < IT; k++) {
                int j = k * TH + t;
                if (base + j < n) out[base + j] = s[j + (j >> 5)];
            }
        }
    }
}

// Separate flag and value arrays with fences: what accumulators wider than 32 bits need.
template <int TH, int IT>
__global__ void __launch_bounds__(TH) scan_fenced(const float *__restrict__ in,
                                                  float *__restrict__ out, long long n,
                                                  unsigned *flag, float *agg, float *incl,
                                                  unsigned *ticket) {
    constexpr int TILE = TH * IT, NW = TH / 32;
    __shared__ float s[TILE + TILE / 32];
    __shared__ float s_wex[NW];
    __shared__ float s_prefix;
    __shared__ unsigned s_tile;
    const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
    if (t == 0) s_tile = atomicAdd(ticket, 1u);
    __syncthreads();
    const unsigned tile = s_tile;
    const long long base = (long long)tile * TILE;
    float v[IT];
#pragma unroll
    for (int k = 0; k < IT; k++) {
        long long i = base + k * TH + t;
        v[k] = i < n ? in[i] : 0.f;
    }
#pragma unroll
    for (int k = 0; k < IT; k++) {
        int j = k * TH + t;
        s[j + (j >> 5)] = v[k];
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < IT; k++) {
        int j = t * IT + k;
        v[k] = s[j + (j >> 5)];
    }
#pragma unroll
    for (int k = 1; k < IT; k++) v[k] += v[k - 1];
    float x = v[IT - 1];
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        float y = __shfl_up_sync(~0u, x, d);
        if (lane >= d) x += y;
    }
    float xe = __shfl_up_sync(~0u, x, 1);
    if (lane == 0) xe = 0;
    if (lane == 31) s_wex[warp] = x;
    __syncthreads();
    if (warp == 0) {
        float w = lane < NW ? s_wex[lane] : 0, wi = w;
#pragma unroll
        for (int d = 1; d < 32; d <<= 1) {
            float y = __shfl_up_sync(~0u, wi, d);
            if (lane >= d) wi += y;
        }
        const float total = __shfl_sync(~0u, wi, NW - 1);
        if (lane < NW) s_wex[lane] = wi - w;
        if (lane == 0) {
            if (tile == 0) incl[0] = total; else agg[tile] = total;
            __threadfence();
            *(volatile unsigned *)&flag[tile] = tile == 0 ? 2u : 1u;
        }
        float prefix = 0;
        if (tile > 0) {
            long long hi = (long long)tile - 1;
            for (;;) {
                const long long q = hi - lane;
                unsigned f = q >= 0 ? *(volatile unsigned *)&flag[q] : 2u;
                while (__any_sync(~0u, f == 0))
                    if (f == 0) f = *(volatile unsigned *)&flag[q];
                __threadfence();
                const unsigned inc = __ballot_sync(~0u, f == 2);
                const int near = inc ? __ffs(inc) - 1 : 32;
                float y = (lane <= near && q >= 0) ? __ldcg(f == 2 ? &incl[q] : &agg[q]) : 0.f;
#pragma unroll
                for (int d = 16; d; d >>= 1) y += __shfl_xor_sync(~0u, y, d);
                prefix += y;
                if (inc) break;
                hi -= 32;
            }
            if (lane == 0) {
                incl[tile] = prefix + total;
                __threadfence();
                *(volatile unsigned *)&flag[tile] = 2u;
            }
        }
        if (lane == 0) s_prefix = prefix;
    }
    __syncthreads();
    float run = s_prefix + s_wex[warp] + xe;
#pragma unroll
    for (int k = 0; k < IT; k++) {
        int j = t * IT + k;
        s[j + (j >> 5)] = run + v[k];
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < IT; k++) {
        int j = k * TH + t;
        if (base + j < n) out[base + j] = s[j + (j >> 5)];
    }
}

__global__ void count_gt(const float4 *__restrict__ in, long long n4, unsigned long long *cnt) {
    unsigned c = 0;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4;
         i += (long long)gridDim.x * blockDim.x) {
        float4 v = in[i];
        c += (v.x > 0.5f) + (v.y > 0.5f) + (v.z > 0.5f) + (v.w > 0.5f);
    }
    c = __reduce_add_sync(~0u, c);
    if ((threadIdx.x & 31) == 0) atomicAdd(cnt, (unsigned long long)c);
}

// ---- gathers ---------------------------------------------------------------------------

__global__ void gather1(const float *__restrict__ x, const int *__restrict__ idx,
                        float *__restrict__ out, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[idx[i]];
}
template <bool HINT>
__global__ void gather4(const float *__restrict__ x, const int4 *__restrict__ idx,
                        float4 *__restrict__ out, long long n4) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i >= n4) return;
    int4 j = HINT ? __ldcs(&idx[i]) : idx[i];
    float4 r;
    r.x = __ldg(&x[j.x]);
    r.y = __ldg(&x[j.y]);
    r.z = __ldg(&x[j.z]);
    r.w = __ldg(&x[j.w]);
    if (HINT) __stcs(&out[i], r); else out[i] = r;
}
__global__ void gather8(const float *__restrict__ x, const int4 *__restrict__ idx,
                        float4 *__restrict__ out, long long n8) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i >= n8) return;
    int4 a = __ldcs(&idx[2 * i]), b = __ldcs(&idx[2 * i + 1]);
    float4 r, s;
    r.x = __ldg(&x[a.x]); r.y = __ldg(&x[a.y]); r.z = __ldg(&x[a.z]); r.w = __ldg(&x[a.w]);
    s.x = __ldg(&x[b.x]); s.y = __ldg(&x[b.y]); s.z = __ldg(&x[b.z]); s.w = __ldg(&x[b.w]);
    __stcs(&out[2 * i], r);
    __stcs(&out[2 * i + 1], s);
}

struct Gt {
    __device__ bool operator()(float v) const { return v > 0.5f; }
};

// ---- main ------------------------------------------------------------------------------

template <int TH, int IT, bool SEL>
static float time_packed(const float *in, float *out, long long n, unsigned long long *status,
                         unsigned *ticket) {
    const long long tiles = (n + TH * IT - 1) / (TH * IT);
    return median_ms([&] {
        cudaMemsetAsync(status, 0, tiles * 8);
        cudaMemsetAsync(ticket, 0, 4);
        scan_packed<TH, IT, SEL><<<(unsigned)tiles, TH>>>(in, out, n, status, ticket);
    });
}
template <int TH, int IT>
static float time_fenced(const float *in, float *out, long long n, unsigned *flag, float *agg,
                         float *incl, unsigned *ticket) {
    const long long tiles = (n + TH * IT - 1) / (TH * IT);
    return median_ms([&] {
        cudaMemsetAsync(flag, 0, tiles * 4);
        cudaMemsetAsync(ticket, 0, 4);
        scan_fenced<TH, IT><<<(unsigned)tiles, TH>>>(in, out, n, flag, agg, incl, ticket);
    });
}

int main() {
    const long long n = 1ll << 26;
    const size_t bytes = n * 4;
    float *x, *y;
    CK(cudaMalloc(&x, bytes));
    CK(cudaMalloc(&y, bytes));
    std::vector<float> h(n);
    srand(11);
    for (long long i = 0; i < n; i++) h[i] = (float)rand() / ((float)RAND_MAX + 1.f);
    CK(cudaMemcpy(x, h.data(), bytes, cudaMemcpyHostToDevice));
    unsigned long long *status, *cnt;
    unsigned *ticket, *flag;
    float *agg, *incl;
    CK(cudaMalloc(&status, (n / 256 + 64) * 8));
    CK(cudaMalloc(&flag, (n / 256 + 64) * 4));
    CK(cudaMalloc(&agg, (n / 256 + 64) * 4));
    CK(cudaMalloc(&incl, (n / 256 + 64) * 4));
    CK(cudaMalloc(&ticket, 4));
    CK(cudaMalloc(&cnt, 8));

    float ms = median_ms([&] { cudaMemcpyAsync(y, x, bytes, cudaMemcpyDeviceToDevice); });
    g_copy_gbs = 2.0 * bytes / ms / 1e6;
    report("cudaMemcpy D2D (the floor's bandwidth)", ms, 2.0 * bytes);
    report("copy kernel float4", median_ms([&] { copy4<<<132 * 16, 256>>>((const float4 *)x, (float4 *)y, n / 4); }), 2.0 * bytes);

    // CUB inclusive sum
    size_t tmp_bytes = 0;
    cub::DeviceScan::InclusiveSum(nullptr, tmp_bytes, x, y, (int)n);
    void *tmp;
    CK(cudaMalloc(&tmp, tmp_bytes + 1024));
    report("cub::DeviceScan::InclusiveSum", median_ms([&] { cub::DeviceScan::InclusiveSum(tmp, tmp_bytes, x, y, (int)n); }), 2.0 * bytes);
    std::vector<float> ref(n);
    CK(cudaMemcpy(ref.data(), y, bytes, cudaMemcpyDeviceToHost));

    auto check = [&](const char *name) {
        std::vector<float> got(n);
        CK(cudaMemcpy(got.data(), y, bytes, cudaMemcpyDeviceToHost));
        double worst = 0;
        for (long long i = 0; i < n; i += 997) worst = std::max(worst, (double)fabsf(got[i] - ref[i]) / (fabs(ref[i]) + 1));
        worst = std::max(worst, (double)fabsf(got[n - 1] - ref[n - 1]) / (fabs(ref[n - 1]) + 1));
        if (worst > 1e-4) printf("  %s: WRONG, relative error %g\n", name, worst);
    };
#define PACKED(TH, IT)                                                                          \
    report("scan packed TH=" #TH " IT=" #IT, time_packed<TH, IT, false>(x, y, n, status, ticket), 2.0 * bytes); \
    check("packed " #TH " " #IT);
    PACKED(128, 8) PACKED(128, 16) PACKED(256, 8) PACKED(256, 16) PACKED(256, 24) PACKED(512, 8) PACKED(512, 16)
#define FENCED(TH, IT)                                                                          \
    report("scan fenced TH=" #TH " IT=" #IT, time_fenced<TH, IT>(x, y, n, flag, agg, incl, ticket), 2.0 * bytes); \
    check("fenced " #TH " " #IT);
    FENCED(256, 8) FENCED(256, 16) FENCED(128, 16)

    // selection x[x > 0.5]: count, then one pass; beside CUB's DeviceSelect::If
    CK(cudaMemset(cnt, 0, 8));
    count_gt<<<132 * 8, 256>>>((const float4 *)x, n / 4, cnt);
    unsigned long long hc;
    CK(cudaMemcpy(&hc, cnt, 8, cudaMemcpyDeviceToHost));
    const double sel_bytes = (double)bytes + 4.0 * hc;
    report("count x > 0.5 (reduce)", median_ms([&] { cudaMemsetAsync(cnt, 0, 8); count_gt<<<132 * 8, 256>>>((const float4 *)x, n / 4, cnt); }), (double)bytes);
#define SELECT(TH, IT)                                                                          \
    report("select packed TH=" #TH " IT=" #IT, time_packed<TH, IT, true>(x, y, n, status, ticket), sel_bytes);
    SELECT(256, 8) SELECT(256, 16) SELECT(128, 16)
    {
        std::vector<float> got(hc);
        CK(cudaMemcpy(got.data(), y, hc * 4, cudaMemcpyDeviceToHost));
        long long j = 0, bad = 0;
        for (long long i = 0; i < n; i++)
            if (h[i] > 0.5f) bad += got[j++] != h[i];
        printf("  select check: %lld selected, %lld wrong\n", j, bad);
    }
    size_t st_bytes = 0;
    int *nsel;
    CK(cudaMalloc(&nsel, 4));
    cub::DeviceSelect::If(nullptr, st_bytes, x, y, nsel, (int)n, Gt());
    void *stmp;
    CK(cudaMalloc(&stmp, st_bytes + 1024));
    report("cub::DeviceSelect::If", median_ms([&] { cub::DeviceSelect::If(stmp, st_bytes, x, y, nsel, (int)n, Gt()); }), sel_bytes);

    // gathers: 2^24 random indices into 2^26
    const long long m = 1ll << 24;
    std::vector<int> hi(m);
    for (long long i = 0; i < m; i++) hi[i] = (int)(((unsigned)rand() * 2654435761u ^ (unsigned)rand()) & (n - 1));
    int *idx;
    CK(cudaMalloc(&idx, m * 4));
    CK(cudaMemcpy(idx, hi.data(), m * 4, cudaMemcpyHostToDevice));
    const double g_bytes = 40.0 * m; /* index 4 + out 4 + a 32-byte sector */
    report("gather 1/thread", median_ms([&] { gather1<<<(unsigned)(m / 256), 256>>>(x, idx, y, m); }), g_bytes);
    report("gather 4/thread", median_ms([&] { gather4<false><<<(unsigned)(m / 4 / 256), 256>>>(x, (const int4 *)idx, (float4 *)y, m / 4); }), g_bytes);
    report("gather 4/thread, streaming hints", median_ms([&] { gather4<true><<<(unsigned)(m / 4 / 256), 256>>>(x, (const int4 *)idx, (float4 *)y, m / 4); }), g_bytes);
    report("gather 8/thread, streaming hints", median_ms([&] { gather8<<<(unsigned)(m / 8 / 256), 256>>>(x, (const int4 *)idx, (float4 *)y, m / 8); }), g_bytes);
    {
        std::vector<float> got(m);
        CK(cudaMemcpy(got.data(), y, m * 4, cudaMemcpyDeviceToHost));
        long long bad = 0;
        for (long long i = 0; i < m; i++) bad += got[i] != h[hi[i]];
        printf("  gather check: %lld wrong\n", bad);
    }
    return 0;
}
