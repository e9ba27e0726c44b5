// ---- kernel 0
typedef int idx_t;
struct fcx_params {
    const void *ptr[2];
    long long i[1];
    double f[1];
};
extern "C" __global__ void __launch_bounds__(256) fusec_kernel(const fcx_params p) {
    const idx_t n = (idx_t)p.i[0];
    for (idx_t i = (idx_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (idx_t)gridDim.x * blockDim.x) {
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
