// ---- kernel 0
typedef int idx_t;
template <class T, int N> struct alignas(sizeof(T) * N) fcx_vec { T v[N]; };
struct fcx_params {
    const void *ptr[2];
    long long i[3];
    double f[1];
};
extern "C" __global__ void __launch_bounds__(256) fusec_kernel(const fcx_params p) {
    const idx_t M = (idx_t)p.i[0];
    const idx_t L = (idx_t)p.i[1];
    for (idx_t row = blockIdx.x; row < M; row += gridDim.x) {
        idx_t t_o = row;
        const idx_t o0 = t_o;
        fcx_ct_f64 a1 = fcx_cast_f64(0);
        for (idx_t e = threadIdx.x; e < L; e += blockDim.x) {
            idx_t t_r = e;
            const idx_t r1 = t_r;
            const idx_t i = row * L + e;
            const fcx_ct_f32 v0 = fcx_load_f32((const fcx_t_f32 *)p.ptr[0] + i);
            const fcx_ct_f32 v1 = fcx_mul(v0, v0);
            const fcx_ct_f64 v2 = fcx_cast_f64(v1);
            a1 = fcx_add(a1, v2);
        }
        {
            __shared__ fcx_ct_f64 s_a[256];
            s_a[threadIdx.x] = a1;
            __syncthreads();
            for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
                if (threadIdx.x < s) {
                    const unsigned o = threadIdx.x + s;
                    s_a[threadIdx.x] = fcx_add(s_a[threadIdx.x], s_a[o]);
                }
                __syncthreads();
            }
            a1 = s_a[0];
            __syncthreads();
        }
        const fcx_ct_f32 v3 = fcx_cast_f32(a1);
        if (threadIdx.x == 0) {
            idx_t t_q0_ = row;
            const idx_t q0_0 = t_q0_;
            const fcx_ct_f32 v4 = fcx_sqrt(v3);
            fcx_store_f32((fcx_t_f32 *)p.ptr[1] + row, v4);
        }
        __syncthreads();
    }
}
