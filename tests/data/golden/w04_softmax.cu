// ---- kernel 0
typedef int idx_t;
template <class T, int N> struct alignas(sizeof(T) * N) fcx_vec { T v[N]; };
struct fcx_params {
    const void *ptr[2];
    long long i[2];
    double f[1];
};
extern "C" __global__ void __launch_bounds__(512) fusec_kernel(const fcx_params p) {
    __shared__ fcx_t_c128 fcx_xchw[(8 * FCX_WARP + 15) / 16]; /* 16-byte aligned */
    unsigned char *const fcx_xch = (unsigned char *)fcx_xchw;
    const idx_t M = (idx_t)p.i[0];
    const idx_t L = (idx_t)p.i[1];
    const int lane = (int)(threadIdx.x % FCX_WARP), wid = (int)(threadIdx.x / FCX_WARP), nw = (int)(blockDim.x / FCX_WARP);
    FCX_DSMEM(fcx_dsm); /* rows and values kept on chip */
    size_t fcx_co = 0;
    unsigned char *const fcx_s0 = fcx_dsm + fcx_co;
    fcx_co += fcx_align16((size_t)L * 4);
    fcx_t_f32 *const c2 = (fcx_t_f32 *)fcx_s0;
    fcx_t_f32 *const c5 = (fcx_t_f32 *)fcx_s0;
    const bool rc = fcx_dsmem_size() >= fcx_co;
    for (idx_t row = blockIdx.x; row < M; row += gridDim.x) {
        const idx_t eb = 0, ee = L;
        idx_t t_o = row;
        const idx_t o0 = t_o;
        const idx_t base = row * L;
        fcx_ct_f32 a0 = fcx_cast_f32(0);
        bool h0 = false;
        {
            const idx_t nv = (base + eb) % 4 == 0 ? (ee - eb) / 4 : 0;
            idx_t c = threadIdx.x;
            for (; c + (idx_t)(3 * blockDim.x) < nv; c += (idx_t)(4 * blockDim.x)) {
                fcx_vec<fcx_t_f32, 4> lg0[4];
                #pragma unroll
                for (int gi = 0; gi < 4; gi++) {
                    const idx_t e0 = eb + (c + (idx_t)(gi * blockDim.x)) * 4;
                    lg0[gi] = *(const fcx_vec<fcx_t_f32, 4> *)((const fcx_t_f32 *)p.ptr[0] + (base + e0));
                }
                #pragma unroll
                for (int gi = 0; gi < 4; gi++) {
                    const idx_t e0 = eb + (c + (idx_t)(gi * blockDim.x)) * 4;
                    const fcx_vec<fcx_t_f32, 4> l0 = lg0[gi];
                    #pragma unroll
                    for (int u = 0; u < 4; u++) {
                        const idx_t e = e0 + u;
                        idx_t t_r = e;
                        const idx_t r1 = t_r;
                        const fcx_ct_f32 v0 = fcx_load_f32(&l0.v[u]);
                        a0 = h0 ? fcx_maximum(a0, v0) : v0; h0 = true;
                    }
                    if (rc) *(fcx_vec<fcx_t_f32, 4> *)(c5 + e0) = l0;
                }
            }
            for (; c < nv; c += blockDim.x) {
                const idx_t e0 = eb + c * 4;
                const fcx_vec<fcx_t_f32, 4> l0 = *(const fcx_vec<fcx_t_f32, 4> *)((const fcx_t_f32 *)p.ptr[0] + (base + e0));
                #pragma unroll
                for (int u = 0; u < 4; u++) {
                    const idx_t e = e0 + u;
                    idx_t t_r = e;
                    const idx_t r1 = t_r;
                    const fcx_ct_f32 v0 = fcx_load_f32(&l0.v[u]);
                    a0 = h0 ? fcx_maximum(a0, v0) : v0; h0 = true;
                }
                if (rc) *(fcx_vec<fcx_t_f32, 4> *)(c5 + e0) = l0;
            }
            const idx_t es = eb + nv * 4;
            for (idx_t e = es + threadIdx.x; e < ee; e += blockDim.x) {
                idx_t t_r = e;
                const idx_t r1 = t_r;
                const idx_t i = base + e;
                const fcx_ct_f32 v1 = fcx_load_f32((const fcx_t_f32 *)p.ptr[0] + i);
                a0 = h0 ? fcx_maximum(a0, v1) : v1; h0 = true;
                if (rc) fcx_store_f32(&c5[e], v1);
            }
        }
        { /* block reduction: warps by shuffles, then the warps' results */
            fcx_ct_f32 *const sa0 = (fcx_ct_f32 *)(fcx_xch + 0 * FCX_WARP);
            bool *const sh0 = (bool *)(fcx_xch + 4 * FCX_WARP);
            for (int d = FCX_WARP / 2; d > 0; d >>= 1) {
                {
                    const fcx_ct_f32 b_a0 = fcx_shfl_down(a0, d);
                    const bool b_h0 = fcx_shfl_down(h0, d);
                    if (b_h0) { a0 = h0 ? fcx_maximum(a0, b_a0) : b_a0; h0 = true; }
                }
            }
            if (lane == 0) {
                sa0[wid] = a0;
                sh0[wid] = h0;
            }
            __syncthreads();
            if (lane < nw) {
                a0 = sa0[lane];
                h0 = sh0[lane];
            } else {
                a0 = fcx_cast_f32(0);
                h0 = false;
            }
            int d_top = 1;
            while (d_top < nw) d_top <<= 1;
            for (int d = d_top / 2; d > 0; d >>= 1) {
                {
                    const fcx_ct_f32 b_a0 = fcx_shfl_down(a0, d);
                    const bool b_h0 = fcx_shfl_down(h0, d);
                    if (b_h0) { a0 = h0 ? fcx_maximum(a0, b_a0) : b_a0; h0 = true; }
                }
            }
            a0 = fcx_shfl_idx(a0, 0);
            h0 = fcx_shfl_idx(h0, 0);
            __syncthreads();
        }
        const fcx_ct_f32 v2 = fcx_cast_f32(a0);
        fcx_ct_f64 a3 = fcx_cast_f64(0);
        {
            const idx_t nv = (base + eb) % 4 == 0 ? (ee - eb) / 4 : 0;
            idx_t c = threadIdx.x;
            #pragma unroll 4
            for (; c < nv; c += blockDim.x) {
                const idx_t e0 = eb + c * 4;
                const fcx_vec<fcx_t_f32, 4> l0 = rc ? *(const fcx_vec<fcx_t_f32, 4> *)(c5 + (e0)) : *(const fcx_vec<fcx_t_f32, 4> *)((const fcx_t_f32 *)p.ptr[0] + (base + e0));
                fcx_vec<fcx_t_f32, 4> wc2;
                #pragma unroll
                for (int u = 0; u < 4; u++) {
                    const idx_t e = e0 + u;
                    idx_t t_r = e;
                    const idx_t r1 = t_r;
                    const fcx_ct_f32 v3 = fcx_load_f32(&l0.v[u]);
                    const fcx_ct_f32 v4 = fcx_sub(v3, v2);
                    const fcx_ct_f32 v5 = fcx_exp(v4);
                    const fcx_ct_f64 v6 = fcx_cast_f64(v5);
                    a3 = fcx_add(a3, v6);
                    fcx_store_f32(&wc2.v[u], v5);
                }
                if (rc) *(fcx_vec<fcx_t_f32, 4> *)(c2 + e0) = wc2;
            }
            const idx_t es = eb + nv * 4;
            for (idx_t e = es + threadIdx.x; e < ee; e += blockDim.x) {
                idx_t t_r = e;
                const idx_t r1 = t_r;
                const idx_t i = base + e;
                const fcx_ct_f32 v7 = rc ? fcx_load_f32(&c5[e]) : fcx_load_f32((const fcx_t_f32 *)p.ptr[0] + i);
                const fcx_ct_f32 v8 = fcx_sub(v7, v2);
                const fcx_ct_f32 v9 = fcx_exp(v8);
                const fcx_ct_f64 v10 = fcx_cast_f64(v9);
                a3 = fcx_add(a3, v10);
                if (rc) fcx_store_f32(&c2[e], v9);
            }
        }
        { /* block reduction: warps by shuffles, then the warps' results */
            fcx_ct_f64 *const sa3 = (fcx_ct_f64 *)(fcx_xch + 0 * FCX_WARP);
            for (int d = FCX_WARP / 2; d > 0; d >>= 1) {
                {
                    const fcx_ct_f64 b_a3 = fcx_shfl_down(a3, d);
                    a3 = fcx_add(a3, b_a3);
                }
            }
            if (lane == 0) {
                sa3[wid] = a3;
            }
            __syncthreads();
            if (lane < nw) {
                a3 = sa3[lane];
            } else {
                a3 = fcx_cast_f64(0);
            }
            int d_top = 1;
            while (d_top < nw) d_top <<= 1;
            for (int d = d_top / 2; d > 0; d >>= 1) {
                {
                    const fcx_ct_f64 b_a3 = fcx_shfl_down(a3, d);
                    a3 = fcx_add(a3, b_a3);
                }
            }
            a3 = fcx_shfl_idx(a3, 0);
            __syncthreads();
        }
        const fcx_ct_f32 v11 = fcx_cast_f32(a3);
        {
            const idx_t nv = (base + eb) % 4 == 0 ? (ee - eb) / 4 : 0;
            idx_t c = threadIdx.x;
            #pragma unroll 4
            for (; c < nv; c += blockDim.x) {
                const idx_t e0 = eb + c * 4;
                fcx_vec<fcx_t_f32, 4> l0;
                if (!rc) l0 = *(const fcx_vec<fcx_t_f32, 4> *)((const fcx_t_f32 *)p.ptr[0] + (base + e0));
                fcx_vec<fcx_t_f32, 4> cv2;
                if (rc) cv2 = *(const fcx_vec<fcx_t_f32, 4> *)(c2 + e0);
                fcx_vec<fcx_t_f32, 4> w0;
                #pragma unroll
                for (int u = 0; u < 4; u++) {
                    const idx_t e = e0 + u;
                    idx_t t_r = e;
                    const idx_t r1 = t_r;
                    fcx_ct_f32 v12;
                    if (rc) v12 = fcx_load_f32(&cv2.v[u]);
                    else {
                        const fcx_ct_f32 v13 = fcx_load_f32(&l0.v[u]);
                        const fcx_ct_f32 v14 = fcx_sub(v13, v2);
                        const fcx_ct_f32 v15 = fcx_exp(v14);
                        v12 = v15;
                    }
                    const fcx_ct_f32 v16 = fcx_div_recip(v12, v11, fcx_recip_wide(v11));
                    fcx_store_f32(&w0.v[u], v16);
                }
                *(fcx_vec<fcx_t_f32, 4> *)((fcx_t_f32 *)p.ptr[1] + (base + e0)) = w0;
            }
            const idx_t es = eb + nv * 4;
            for (idx_t e = es + threadIdx.x; e < ee; e += blockDim.x) {
                idx_t t_r = e;
                const idx_t r1 = t_r;
                const idx_t i = base + e;
                fcx_ct_f32 v17;
                if (rc) v17 = fcx_load_f32(&c2[e]);
                else {
                    const fcx_ct_f32 v18 = rc ? fcx_load_f32(&c5[e]) : fcx_load_f32((const fcx_t_f32 *)p.ptr[0] + i);
                    const fcx_ct_f32 v19 = fcx_sub(v18, v2);
                    const fcx_ct_f32 v20 = fcx_exp(v19);
                    v17 = v20;
                }
                const fcx_ct_f32 v21 = fcx_div_recip(v17, v11, fcx_recip_wide(v11));
                fcx_store_f32((fcx_t_f32 *)p.ptr[1] + i, v21);
            }
        }
        if (threadIdx.x == 0) {
        }
        if (rc) __syncthreads();
    }
}
