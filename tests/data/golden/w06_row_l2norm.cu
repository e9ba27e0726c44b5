// ---- kernel 0
typedef int idx_t;
template <class T, int N> struct alignas(sizeof(T) * N) fcx_vec { T v[N]; };
struct fcx_params {
    const void *ptr[3];
    long long i[3];
    double f[1];
};
extern "C" __global__ void __launch_bounds__(512) fusec_kernel(const fcx_params p) {
    __shared__ fcx_t_c128 fcx_xchw[(8 * FCX_WARP + 15) / 16]; /* 16-byte aligned */
    unsigned char *const fcx_xch = (unsigned char *)fcx_xchw;
    const idx_t M = (idx_t)p.i[0];
    const idx_t L = (idx_t)p.i[1];
    const int lane = (int)(threadIdx.x % FCX_WARP), wid = (int)(threadIdx.x / FCX_WARP), nw = (int)(blockDim.x / FCX_WARP);
    __shared__ bool fcx_last;
    idx_t S, CH; /* pieces per row and their length: from the shape alone */
    fcx_split((long long)M, (long long)L, (long long)M * 8, false, &S, &CH);
    for (idx_t w = blockIdx.x; w < M * S; w += gridDim.x) {
        const idx_t row = w / S, sp = w - row * S;
        const idx_t eb = sp * CH, ee = eb + CH < L ? eb + CH : L;
        idx_t t_o = row;
        const idx_t o0 = t_o;
        const idx_t base = row * L;
        fcx_ct_f64 a1 = fcx_cast_f64(0);
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
                        const fcx_ct_f32 v1 = fcx_mul(v0, v0);
                        const fcx_ct_f64 v2 = fcx_cast_f64(v1);
                        a1 = fcx_add(a1, v2);
                    }
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
                    const fcx_ct_f32 v1 = fcx_mul(v0, v0);
                    const fcx_ct_f64 v2 = fcx_cast_f64(v1);
                    a1 = fcx_add(a1, v2);
                }
            }
            const idx_t es = eb + nv * 4;
            for (idx_t e = es + threadIdx.x; e < ee; e += blockDim.x) {
                idx_t t_r = e;
                const idx_t r1 = t_r;
                const idx_t i = base + e;
                const fcx_ct_f32 v3 = fcx_load_f32((const fcx_t_f32 *)p.ptr[0] + i);
                const fcx_ct_f32 v4 = fcx_mul(v3, v3);
                const fcx_ct_f64 v5 = fcx_cast_f64(v4);
                a1 = fcx_add(a1, v5);
            }
        }
        { /* block reduction: warps by shuffles, then the warps' results */
            fcx_ct_f64 *const sa1 = (fcx_ct_f64 *)(fcx_xch + 0 * FCX_WARP);
            for (int d = FCX_WARP / 2; d > 0; d >>= 1) {
                {
                    const fcx_ct_f64 b_a1 = fcx_shfl_down(a1, d);
                    a1 = fcx_add(a1, b_a1);
                }
            }
            if (lane == 0) {
                sa1[wid] = a1;
            }
            __syncthreads();
            if (lane < nw) {
                a1 = sa1[lane];
            } else {
                a1 = fcx_cast_f64(0);
            }
            int d_top = 1;
            while (d_top < nw) d_top <<= 1;
            for (int d = d_top / 2; d > 0; d >>= 1) {
                {
                    const fcx_ct_f64 b_a1 = fcx_shfl_down(a1, d);
                    a1 = fcx_add(a1, b_a1);
                }
            }
            a1 = fcx_shfl_idx(a1, 0);
            __syncthreads();
        }
        if (S > 1) { /* a piece of a split row: the last block combines the partials */
            unsigned char *const fcx_sc = (unsigned char *)p.ptr[2];
            unsigned *const fcx_cnt = (unsigned *)fcx_sc;
            size_t fcx_so = fcx_align16((size_t)(M) * 4);
            fcx_ct_f64 *const ga1 = (fcx_ct_f64 *)(fcx_sc + fcx_so);
            if (threadIdx.x == 0) {
                ga1[row * S + sp] = a1;
            }
            fcx_fence();
            __syncthreads();
            if (threadIdx.x == 0) fcx_last = fcx_atomic_add(&fcx_cnt[row], 1u) == (unsigned)(S - 1);
            __syncthreads();
            if (!fcx_last) continue;
            fcx_fence();
            a1 = fcx_cast_f64(0);
            for (idx_t sj = threadIdx.x; sj < S; sj += blockDim.x) {
                {
                    const fcx_ct_f64 b_a1 = fcx_ldcg(&ga1[row * S + sj]);
                    a1 = fcx_add(a1, b_a1);
                }
            }
            { /* block reduction: warps by shuffles, then the warps' results */
                fcx_ct_f64 *const sa1 = (fcx_ct_f64 *)(fcx_xch + 0 * FCX_WARP);
                for (int d = FCX_WARP / 2; d > 0; d >>= 1) {
                    {
                        const fcx_ct_f64 b_a1 = fcx_shfl_down(a1, d);
                        a1 = fcx_add(a1, b_a1);
                    }
                }
                if (lane == 0) {
                    sa1[wid] = a1;
                }
                __syncthreads();
                if (lane < nw) {
                    a1 = sa1[lane];
                } else {
                    a1 = fcx_cast_f64(0);
                }
                int d_top = 1;
                while (d_top < nw) d_top <<= 1;
                for (int d = d_top / 2; d > 0; d >>= 1) {
                    {
                        const fcx_ct_f64 b_a1 = fcx_shfl_down(a1, d);
                        a1 = fcx_add(a1, b_a1);
                    }
                }
                a1 = fcx_shfl_idx(a1, 0);
                __syncthreads();
            }
            if (threadIdx.x == 0) fcx_cnt[row] = 0; /* the scratch is zero again */
        }
        const fcx_ct_f32 v6 = fcx_cast_f32(a1);
        if (threadIdx.x == 0) {
            idx_t t_q0_ = row;
            const idx_t q0_0 = t_q0_;
            const fcx_ct_f32 v7 = fcx_sqrt(v6);
            fcx_store_f32((fcx_t_f32 *)p.ptr[1] + row, v7);
        }
    }
}
