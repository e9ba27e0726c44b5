// ---- kernel 0
typedef int idx_t;
template <class T, int N> struct alignas(sizeof(T) * N) fcx_vec { T v[N]; };
struct fcx_params {
    const void *ptr[2];
    long long i[43];
    double f[1];
};
extern "C" __global__ void __launch_bounds__(256) fusec_kernel(const fcx_params p) {
    const idx_t n = (idx_t)p.i[0] * (idx_t)p.i[1];
    { /* shifted slices: tiles through shared memory when the taps allow (above) */
        const idx_t tt_a0 = (idx_t)p.i[3], tt_b0 = (idx_t)p.i[5];
        const idx_t tt_a1 = (idx_t)p.i[11], tt_b1 = (idx_t)p.i[13];
        const idx_t tt_a2 = (idx_t)p.i[15], tt_b2 = (idx_t)p.i[17];
        const idx_t tt_a3 = (idx_t)p.i[19], tt_b3 = (idx_t)p.i[21];
        const idx_t tt_a4 = (idx_t)p.i[23], tt_b4 = (idx_t)p.i[25];
        const idx_t tt_a5 = (idx_t)p.i[27], tt_b5 = (idx_t)p.i[29];
        const idx_t tt_a6 = (idx_t)p.i[31], tt_b6 = (idx_t)p.i[33];
        const idx_t tt_a7 = (idx_t)p.i[35], tt_b7 = (idx_t)p.i[37];
        const idx_t tt_a8 = (idx_t)p.i[39], tt_b8 = (idx_t)p.i[41];
        idx_t tt_ma = tt_a0, tt_xa = tt_a0, tt_mb = tt_b0, tt_xb = tt_b0;
        bool tt_ok = true;
        tt_ok = tt_ok && (idx_t)p.i[2] == 1;
        tt_ok = tt_ok && (idx_t)p.i[4] == 1;
        tt_ma = tt_a1 < tt_ma ? tt_a1 : tt_ma; tt_xa = tt_a1 > tt_xa ? tt_a1 : tt_xa;
        tt_mb = tt_b1 < tt_mb ? tt_b1 : tt_mb; tt_xb = tt_b1 > tt_xb ? tt_b1 : tt_xb;
        tt_ok = tt_ok && (idx_t)p.i[10] == 1;
        tt_ok = tt_ok && (idx_t)p.i[12] == 1;
        tt_ma = tt_a2 < tt_ma ? tt_a2 : tt_ma; tt_xa = tt_a2 > tt_xa ? tt_a2 : tt_xa;
        tt_mb = tt_b2 < tt_mb ? tt_b2 : tt_mb; tt_xb = tt_b2 > tt_xb ? tt_b2 : tt_xb;
        tt_ok = tt_ok && (idx_t)p.i[14] == 1;
        tt_ok = tt_ok && (idx_t)p.i[16] == 1;
        tt_ma = tt_a3 < tt_ma ? tt_a3 : tt_ma; tt_xa = tt_a3 > tt_xa ? tt_a3 : tt_xa;
        tt_mb = tt_b3 < tt_mb ? tt_b3 : tt_mb; tt_xb = tt_b3 > tt_xb ? tt_b3 : tt_xb;
        tt_ok = tt_ok && (idx_t)p.i[18] == 1;
        tt_ok = tt_ok && (idx_t)p.i[20] == 1;
        tt_ma = tt_a4 < tt_ma ? tt_a4 : tt_ma; tt_xa = tt_a4 > tt_xa ? tt_a4 : tt_xa;
        tt_mb = tt_b4 < tt_mb ? tt_b4 : tt_mb; tt_xb = tt_b4 > tt_xb ? tt_b4 : tt_xb;
        tt_ok = tt_ok && (idx_t)p.i[22] == 1;
        tt_ok = tt_ok && (idx_t)p.i[24] == 1;
        tt_ma = tt_a5 < tt_ma ? tt_a5 : tt_ma; tt_xa = tt_a5 > tt_xa ? tt_a5 : tt_xa;
        tt_mb = tt_b5 < tt_mb ? tt_b5 : tt_mb; tt_xb = tt_b5 > tt_xb ? tt_b5 : tt_xb;
        tt_ok = tt_ok && (idx_t)p.i[26] == 1;
        tt_ok = tt_ok && (idx_t)p.i[28] == 1;
        tt_ma = tt_a6 < tt_ma ? tt_a6 : tt_ma; tt_xa = tt_a6 > tt_xa ? tt_a6 : tt_xa;
        tt_mb = tt_b6 < tt_mb ? tt_b6 : tt_mb; tt_xb = tt_b6 > tt_xb ? tt_b6 : tt_xb;
        tt_ok = tt_ok && (idx_t)p.i[30] == 1;
        tt_ok = tt_ok && (idx_t)p.i[32] == 1;
        tt_ma = tt_a7 < tt_ma ? tt_a7 : tt_ma; tt_xa = tt_a7 > tt_xa ? tt_a7 : tt_xa;
        tt_mb = tt_b7 < tt_mb ? tt_b7 : tt_mb; tt_xb = tt_b7 > tt_xb ? tt_b7 : tt_xb;
        tt_ok = tt_ok && (idx_t)p.i[34] == 1;
        tt_ok = tt_ok && (idx_t)p.i[36] == 1;
        tt_ma = tt_a8 < tt_ma ? tt_a8 : tt_ma; tt_xa = tt_a8 > tt_xa ? tt_a8 : tt_xa;
        tt_mb = tt_b8 < tt_mb ? tt_b8 : tt_mb; tt_xb = tt_b8 > tt_xb ? tt_b8 : tt_xb;
        tt_ok = tt_ok && (idx_t)p.i[38] == 1;
        tt_ok = tt_ok && (idx_t)p.i[40] == 1;
        if (tt_ok && tt_xa - tt_ma <= 4 && tt_xb - tt_mb <= 4 && (idx_t)p.i[0] >= FCX_TILE_MIN_EXTENT && (idx_t)p.i[1] >= FCX_TILE_MIN_EXTENT) {
            __shared__ fcx_ct_f32 tt_tile[36 * 36];
            FCX_STENCIL_TILED();
            const idx_t tt_tr = ((idx_t)p.i[0] + 31) / 32, tt_tc = ((idx_t)p.i[1] + 31) / 32;
            const idx_t tt_nt = tt_tr * tt_tc;
            const int tt_o0 = (int)((tt_a0 - tt_ma) * 36 + (tt_b0 - tt_mb));
            const int tt_o1 = (int)((tt_a1 - tt_ma) * 36 + (tt_b1 - tt_mb));
            const int tt_o2 = (int)((tt_a2 - tt_ma) * 36 + (tt_b2 - tt_mb));
            const int tt_o3 = (int)((tt_a3 - tt_ma) * 36 + (tt_b3 - tt_mb));
            const int tt_o4 = (int)((tt_a4 - tt_ma) * 36 + (tt_b4 - tt_mb));
            const int tt_o5 = (int)((tt_a5 - tt_ma) * 36 + (tt_b5 - tt_mb));
            const int tt_o6 = (int)((tt_a6 - tt_ma) * 36 + (tt_b6 - tt_mb));
            const int tt_o7 = (int)((tt_a7 - tt_ma) * 36 + (tt_b7 - tt_mb));
            const int tt_o8 = (int)((tt_a8 - tt_ma) * 36 + (tt_b8 - tt_mb));
            for (idx_t tt_t = (idx_t)blockIdx.x; tt_t < tt_nt; tt_t += (idx_t)gridDim.x) {
                const idx_t tt_r0 = tt_t / tt_tc % tt_tr * 32, tt_q0 = tt_t % tt_tc * 32;
                const int tt_nr = (int)((idx_t)p.i[0] - tt_r0 < 32 ? (idx_t)p.i[0] - tt_r0 : 32) + (int)(tt_xa - tt_ma);
                const int tt_nc = (int)((idx_t)p.i[1] - tt_q0 < 32 ? (idx_t)p.i[1] - tt_q0 : 32) + (int)(tt_xb - tt_mb);
                __syncthreads(); /* the last tile's readers are done */
                for (int tt_e = (int)threadIdx.x; tt_e < 1296; tt_e += (int)blockDim.x) {
                    const int tt_sr = tt_e / 36, tt_sc = tt_e - tt_sr * 36;
                    if (tt_sr < tt_nr && tt_sc < tt_nc) {
                        idx_t j38 = (idx_t)(tt_r0 + tt_ma + tt_sr) - (idx_t)p.i[7];
                        j38 = j38 < 0 ? -j38 - 1 : j38 >= (idx_t)p.i[6] ? 2 * (idx_t)p.i[6] - 1 - j38 : j38;
                        idx_t j39 = (idx_t)(tt_q0 + tt_mb + tt_sc) - (idx_t)p.i[9];
                        j39 = j39 < 0 ? -j39 - 1 : j39 >= (idx_t)p.i[8] ? 2 * (idx_t)p.i[8] - 1 - j39 : j39;
                        const fcx_ct_f32 v40 = fcx_load_f32((const fcx_t_f32 *)p.ptr[0] + ((idx_t)(j38)) * (idx_t)p.i[8] + (j39));
                        tt_tile[tt_e] = v40;
                    }
                }
                __syncthreads();
                for (int tt_e = (int)threadIdx.x; tt_e < 1024; tt_e += (int)blockDim.x) {
                    const int tt_er = tt_e / 32, tt_ec = tt_e - tt_er * 32;
                    const idx_t c0 = tt_r0 + tt_er, c1 = tt_q0 + tt_ec;
                    if (c0 >= (idx_t)p.i[0] || c1 >= (idx_t)p.i[1]) continue;
                    const fcx_ct_f32 *const tt_at = tt_tile + (tt_er * 36 + tt_ec);
                    const idx_t i = (c0) * (idx_t)p.i[1] + c1;
                    const fcx_ct_f32 v41 = tt_at[tt_o0];
                    const fcx_ct_f32 v42 = tt_at[tt_o1];
                    const fcx_ct_f32 v43 = fcx_add(v41, v42);
                    const fcx_ct_f32 v44 = tt_at[tt_o2];
                    const fcx_ct_f32 v45 = fcx_add(v43, v44);
                    const fcx_ct_f32 v46 = tt_at[tt_o3];
                    const fcx_ct_f32 v47 = fcx_add(v45, v46);
                    const fcx_ct_f32 v48 = tt_at[tt_o4];
                    const fcx_ct_f32 v49 = fcx_add(v47, v48);
                    const fcx_ct_f32 v50 = tt_at[tt_o5];
                    const fcx_ct_f32 v51 = fcx_add(v49, v50);
                    const fcx_ct_f32 v52 = tt_at[tt_o6];
                    const fcx_ct_f32 v53 = fcx_add(v51, v52);
                    const fcx_ct_f32 v54 = tt_at[tt_o7];
                    const fcx_ct_f32 v55 = fcx_add(v53, v54);
                    const fcx_ct_f32 v56 = tt_at[tt_o8];
                    const fcx_ct_f32 v57 = fcx_add(v55, v56);
                    const fcx_ct_i64 v58 = (fcx_ct_i64)p.i[42];
                    const fcx_ct_f32 v59 = fcx_cast_f32(v58);
                    const fcx_ct_f32 v60 = fcx_div(v57, v59);
                    fcx_store_f32((fcx_t_f32 *)p.ptr[1] + i, v60);
                }
            }
            return;
        }
    }
    const idx_t s0 = 0;
    for (idx_t i = s0 + (idx_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (idx_t)gridDim.x * blockDim.x) {
        idx_t t_c = i;
        const idx_t c1 = t_c % (idx_t)p.i[1]; t_c /= (idx_t)p.i[1];
        const idx_t c0 = t_c;
        idx_t j0 = (idx_t)((idx_t)p.i[3] + (idx_t)(c0) * (idx_t)p.i[2]) - (idx_t)p.i[7];
        j0 = j0 < 0 ? -j0 - 1 : j0 >= (idx_t)p.i[6] ? 2 * (idx_t)p.i[6] - 1 - j0 : j0;
        idx_t j1 = (idx_t)((idx_t)p.i[5] + (idx_t)(c1) * (idx_t)p.i[4]) - (idx_t)p.i[9];
        j1 = j1 < 0 ? -j1 - 1 : j1 >= (idx_t)p.i[8] ? 2 * (idx_t)p.i[8] - 1 - j1 : j1;
        const fcx_ct_f32 v2 = fcx_load_f32((const fcx_t_f32 *)p.ptr[0] + ((idx_t)(j0)) * (idx_t)p.i[8] + (j1));
        idx_t j3 = (idx_t)((idx_t)p.i[11] + (idx_t)(c0) * (idx_t)p.i[10]) - (idx_t)p.i[7];
        j3 = j3 < 0 ? -j3 - 1 : j3 >= (idx_t)p.i[6] ? 2 * (idx_t)p.i[6] - 1 - j3 : j3;
        idx_t j4 = (idx_t)((idx_t)p.i[13] + (idx_t)(c1) * (idx_t)p.i[12]) - (idx_t)p.i[9];
        j4 = j4 < 0 ? -j4 - 1 : j4 >= (idx_t)p.i[8] ? 2 * (idx_t)p.i[8] - 1 - j4 : j4;
        const fcx_ct_f32 v5 = fcx_load_f32((const fcx_t_f32 *)p.ptr[0] + ((idx_t)(j3)) * (idx_t)p.i[8] + (j4));
        const fcx_ct_f32 v6 = fcx_add(v2, v5);
        idx_t j7 = (idx_t)((idx_t)p.i[15] + (idx_t)(c0) * (idx_t)p.i[14]) - (idx_t)p.i[7];
        j7 = j7 < 0 ? -j7 - 1 : j7 >= (idx_t)p.i[6] ? 2 * (idx_t)p.i[6] - 1 - j7 : j7;
        idx_t j8 = (idx_t)((idx_t)p.i[17] + (idx_t)(c1) * (idx_t)p.i[16]) - (idx_t)p.i[9];
        j8 = j8 < 0 ? -j8 - 1 : j8 >= (idx_t)p.i[8] ? 2 * (idx_t)p.i[8] - 1 - j8 : j8;
        const fcx_ct_f32 v9 = fcx_load_f32((const fcx_t_f32 *)p.ptr[0] + ((idx_t)(j7)) * (idx_t)p.i[8] + (j8));
        const fcx_ct_f32 v10 = fcx_add(v6, v9);
        idx_t j11 = (idx_t)((idx_t)p.i[19] + (idx_t)(c0) * (idx_t)p.i[18]) - (idx_t)p.i[7];
        j11 = j11 < 0 ? -j11 - 1 : j11 >= (idx_t)p.i[6] ? 2 * (idx_t)p.i[6] - 1 - j11 : j11;
        idx_t j12 = (idx_t)((idx_t)p.i[21] + (idx_t)(c1) * (idx_t)p.i[20]) - (idx_t)p.i[9];
        j12 = j12 < 0 ? -j12 - 1 : j12 >= (idx_t)p.i[8] ? 2 * (idx_t)p.i[8] - 1 - j12 : j12;
        const fcx_ct_f32 v13 = fcx_load_f32((const fcx_t_f32 *)p.ptr[0] + ((idx_t)(j11)) * (idx_t)p.i[8] + (j12));
        const fcx_ct_f32 v14 = fcx_add(v10, v13);
        idx_t j15 = (idx_t)((idx_t)p.i[23] + (idx_t)(c0) * (idx_t)p.i[22]) - (idx_t)p.i[7];
        j15 = j15 < 0 ? -j15 - 1 : j15 >= (idx_t)p.i[6] ? 2 * (idx_t)p.i[6] - 1 - j15 : j15;
        idx_t j16 = (idx_t)((idx_t)p.i[25] + (idx_t)(c1) * (idx_t)p.i[24]) - (idx_t)p.i[9];
        j16 = j16 < 0 ? -j16 - 1 : j16 >= (idx_t)p.i[8] ? 2 * (idx_t)p.i[8] - 1 - j16 : j16;
        const fcx_ct_f32 v17 = fcx_load_f32((const fcx_t_f32 *)p.ptr[0] + ((idx_t)(j15)) * (idx_t)p.i[8] + (j16));
        const fcx_ct_f32 v18 = fcx_add(v14, v17);
        idx_t j19 = (idx_t)((idx_t)p.i[27] + (idx_t)(c0) * (idx_t)p.i[26]) - (idx_t)p.i[7];
        j19 = j19 < 0 ? -j19 - 1 : j19 >= (idx_t)p.i[6] ? 2 * (idx_t)p.i[6] - 1 - j19 : j19;
        idx_t j20 = (idx_t)((idx_t)p.i[29] + (idx_t)(c1) * (idx_t)p.i[28]) - (idx_t)p.i[9];
        j20 = j20 < 0 ? -j20 - 1 : j20 >= (idx_t)p.i[8] ? 2 * (idx_t)p.i[8] - 1 - j20 : j20;
        const fcx_ct_f32 v21 = fcx_load_f32((const fcx_t_f32 *)p.ptr[0] + ((idx_t)(j19)) * (idx_t)p.i[8] + (j20));
        const fcx_ct_f32 v22 = fcx_add(v18, v21);
        idx_t j23 = (idx_t)((idx_t)p.i[31] + (idx_t)(c0) * (idx_t)p.i[30]) - (idx_t)p.i[7];
        j23 = j23 < 0 ? -j23 - 1 : j23 >= (idx_t)p.i[6] ? 2 * (idx_t)p.i[6] - 1 - j23 : j23;
        idx_t j24 = (idx_t)((idx_t)p.i[33] + (idx_t)(c1) * (idx_t)p.i[32]) - (idx_t)p.i[9];
        j24 = j24 < 0 ? -j24 - 1 : j24 >= (idx_t)p.i[8] ? 2 * (idx_t)p.i[8] - 1 - j24 : j24;
        const fcx_ct_f32 v25 = fcx_load_f32((const fcx_t_f32 *)p.ptr[0] + ((idx_t)(j23)) * (idx_t)p.i[8] + (j24));
        const fcx_ct_f32 v26 = fcx_add(v22, v25);
        idx_t j27 = (idx_t)((idx_t)p.i[35] + (idx_t)(c0) * (idx_t)p.i[34]) - (idx_t)p.i[7];
        j27 = j27 < 0 ? -j27 - 1 : j27 >= (idx_t)p.i[6] ? 2 * (idx_t)p.i[6] - 1 - j27 : j27;
        idx_t j28 = (idx_t)((idx_t)p.i[37] + (idx_t)(c1) * (idx_t)p.i[36]) - (idx_t)p.i[9];
        j28 = j28 < 0 ? -j28 - 1 : j28 >= (idx_t)p.i[8] ? 2 * (idx_t)p.i[8] - 1 - j28 : j28;
        const fcx_ct_f32 v29 = fcx_load_f32((const fcx_t_f32 *)p.ptr[0] + ((idx_t)(j27)) * (idx_t)p.i[8] + (j28));
        const fcx_ct_f32 v30 = fcx_add(v26, v29);
        idx_t j31 = (idx_t)((idx_t)p.i[39] + (idx_t)(c0) * (idx_t)p.i[38]) - (idx_t)p.i[7];
        j31 = j31 < 0 ? -j31 - 1 : j31 >= (idx_t)p.i[6] ? 2 * (idx_t)p.i[6] - 1 - j31 : j31;
        idx_t j32 = (idx_t)((idx_t)p.i[41] + (idx_t)(c1) * (idx_t)p.i[40]) - (idx_t)p.i[9];
        j32 = j32 < 0 ? -j32 - 1 : j32 >= (idx_t)p.i[8] ? 2 * (idx_t)p.i[8] - 1 - j32 : j32;
        const fcx_ct_f32 v33 = fcx_load_f32((const fcx_t_f32 *)p.ptr[0] + ((idx_t)(j31)) * (idx_t)p.i[8] + (j32));
        const fcx_ct_f32 v34 = fcx_add(v30, v33);
        const fcx_ct_i64 v35 = (fcx_ct_i64)p.i[42];
        const fcx_ct_f32 v36 = fcx_cast_f32(v35);
        const fcx_ct_f32 v37 = fcx_div(v34, v36);
        fcx_store_f32((fcx_t_f32 *)p.ptr[1] + i, v37);
    }
}
