// ---- kernel 0
typedef int idx_t;
template <class T, int N> struct alignas(sizeof(T) * N) fcx_vec { T v[N]; };
struct fcx_params {
    const void *ptr[2];
    long long i[2];
    double f[1];
};
extern "C" __global__ void __launch_bounds__(256) fusec_kernel(const fcx_params p) {
    const idx_t M = (idx_t)p.i[0];
    const idx_t L = (idx_t)p.i[1];
    for (idx_t row = blockIdx.x; row < M; row += gridDim.x) {
        idx_t t_o = row;
        const idx_t o0 = t_o;
        fcx_ct_f32 a0 = fcx_cast_f32(0); bool h0 = false;
        for (idx_t e = threadIdx.x; e < L; e += blockDim.x) {
            idx_t t_r = e;
            const idx_t r1 = t_r;
            const idx_t i = row * L + e;
            const fcx_ct_f32 v0 = fcx_load_f32((const fcx_t_f32 *)p.ptr[0] + i);
            a0 = h0 ? fcx_maximum(a0, v0) : v0; h0 = true;
        }
        {
            __shared__ fcx_ct_f32 s_a[256];
            __shared__ bool s_h[256];
            s_a[threadIdx.x] = a0;
            s_h[threadIdx.x] = h0;
            __syncthreads();
            for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
                if (threadIdx.x < s) {
                    const unsigned o = threadIdx.x + s;
                    if (s_h[o]) { s_a[threadIdx.x] = s_h[threadIdx.x] ? fcx_maximum(s_a[threadIdx.x], s_a[o]) : s_a[o]; s_h[threadIdx.x] = true; }
                }
                __syncthreads();
            }
            a0 = s_a[0];
            h0 = s_h[0];
            __syncthreads();
        }
        const fcx_ct_f32 v1 = fcx_cast_f32(a0);
        fcx_ct_f64 a3 = fcx_cast_f64(0);
        for (idx_t e = threadIdx.x; e < L; e += blockDim.x) {
            idx_t t_r = e;
            const idx_t r1 = t_r;
            const idx_t i = row * L + e;
            const fcx_ct_f32 v2 = fcx_load_f32((const fcx_t_f32 *)p.ptr[0] + i);
            const fcx_ct_f32 v3 = fcx_sub(v2, v1);
            const fcx_ct_f32 v4 = fcx_exp(v3);
            const fcx_ct_f64 v5 = fcx_cast_f64(v4);
            a3 = fcx_add(a3, v5);
        }
        {
            __shared__ fcx_ct_f64 s_a[256];
            s_a[threadIdx.x] = a3;
            __syncthreads();
            for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
                if (threadIdx.x < s) {
                    const unsigned o = threadIdx.x + s;
                    s_a[threadIdx.x] = fcx_add(s_a[threadIdx.x], s_a[o]);
                }
                __syncthreads();
            }
            a3 = s_a[0];
            __syncthreads();
        }
        const fcx_ct_f32 v6 = fcx_cast_f32(a3);
        for (idx_t e = threadIdx.x; e < L; e += blockDim.x) {
            idx_t t_r = e;
            const idx_t r1 = t_r;
            const idx_t i = row * L + e;
            const fcx_ct_f32 v7 = fcx_load_f32((const fcx_t_f32 *)p.ptr[0] + i);
            const fcx_ct_f32 v8 = fcx_sub(v7, v1);
            const fcx_ct_f32 v9 = fcx_exp(v8);
            const fcx_ct_f32 v10 = fcx_div(v9, v6);
            fcx_store_f32((fcx_t_f32 *)p.ptr[1] + i, v10);
        }
        if (threadIdx.x == 0) {
        }
        __syncthreads();
    }
}
