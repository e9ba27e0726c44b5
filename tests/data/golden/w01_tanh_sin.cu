// ---- kernel 0
typedef int idx_t;
template <class T, int N> struct alignas(sizeof(T) * N) fcx_vec { T v[N]; };
struct fcx_params {
    const void *ptr[2];
    long long i[1];
    double f[1];
};
extern "C" __global__ void __launch_bounds__(256) fusec_kernel(const fcx_params p) {
    const idx_t n = (idx_t)p.i[0];
    const idx_t nv = n / 4, s0 = nv * 4;
    for (idx_t q = (idx_t)blockIdx.x * blockDim.x + threadIdx.x; q < nv; q += (idx_t)gridDim.x * blockDim.x) {
        const fcx_vec<fcx_t_f32, 4> l0 = ((const fcx_vec<fcx_t_f32, 4> *)p.ptr[0])[q];
        fcx_vec<fcx_t_f32, 4> w0;
        #pragma unroll
        for (int u = 0; u < 4; u++) {
            const idx_t i = q * 4 + u;
            const fcx_ct_f32 v7 = fcx_load_f32(&l0.v[u]);
            const fcx_ct_f32 v8 = fcx_sin(v7);
            const fcx_ct_f64 v9 = (fcx_ct_f64)p.f[0];
            const fcx_ct_f32 v10 = fcx_cast_f32(v9);
            const fcx_ct_f32 v11 = fcx_mul(v10, v7);
            const fcx_ct_f32 v12 = fcx_add(v8, v11);
            const fcx_ct_f32 v13 = fcx_tanh(v12);
            fcx_store_f32(&w0.v[u], v13);
        }
        ((fcx_vec<fcx_t_f32, 4> *)p.ptr[1])[q] = w0;
    }
    for (idx_t i = s0 + (idx_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (idx_t)gridDim.x * blockDim.x) {
        idx_t t_c = i;
        const idx_t c0 = t_c;
        const fcx_ct_f32 v0 = fcx_load_f32((const fcx_t_f32 *)p.ptr[0] + i);
        const fcx_ct_f32 v1 = fcx_sin(v0);
        const fcx_ct_f64 v2 = (fcx_ct_f64)p.f[0];
        const fcx_ct_f32 v3 = fcx_cast_f32(v2);
        const fcx_ct_f32 v4 = fcx_mul(v3, v0);
        const fcx_ct_f32 v5 = fcx_add(v1, v4);
        const fcx_ct_f32 v6 = fcx_tanh(v5);
        fcx_store_f32((fcx_t_f32 *)p.ptr[1] + i, v6);
    }
}
