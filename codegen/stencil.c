/*
 * codegen/stencil.c - the CUDA source of the STENCIL2D kernel (a 2-d correlation with an
 * origin and a boundary: graph/ops.def) for one dtype, kernel extent, origin and boundary.
 *
 * One kernel. A block of 256 threads (32 x 8) computes a tile of 8 ry rows by 32 rx columns
 * of the output: it loads the input rows and columns the tile reads (the tile plus its halo
 * of kh - 1 rows and kw - 1 columns) into shared memory once, each element by one thread in
 * coalesced row-major order, with the boundary applied in the load (a tile wholly inside the
 * input takes a plain load, decided once per tile), and the weights beside it; then each
 * thread computes ry consecutive rows of rx columns 32 apart (conflict-free: a warp reads 32
 * consecutive words of one row). With small kernels the loops are unrolled and each input row
 * a thread reads is read once for all the outputs that use it (sliding rows in registers).
 * Blocks take tiles grid-stride, so any grid covers any size. What is baked in: the dtype,
 * kh, kw, the origin, the boundary, the index width, the tile shape and whether the weights'
 * buffer holds them reversed (a convolution's flipped weights read from their source, with
 * no kernel to flip them first: fcx_stencil.flipped); the extents and the
 * fill value are arguments. A kernel whose tile would not fit 48 KiB of shared memory reads
 * global memory instead, one output a thread (forced direct convolutions with large kernels;
 * method auto sends those to the FFT).
 *
 * The source needs nothing but itself (not the prelude): it is compiled as a raw module
 * through the kernel cache (backend/cuda_stencil.c), and as host C++ by
 * tests/test_codegen_emulated.c.
 */
#include "codegen.h"

#include <stdio.h>
#include <string.h>

#define SMEM_LIMIT (48 * 1024)

void fcx_stencil_plan(fcx_stencil *s, fc_dtype t, int64_t kh, int64_t kw, int64_t oy,
                      int64_t ox, int boundary, int64_t h, int64_t w, int64_t oh, int64_t ow) {
    memset(s, 0, sizeof *s);
    s->dtype = t;
    s->kh = kh;
    s->kw = kw;
    s->oy = oy;
    s->ox = ox;
    s->boundary = boundary;
    /* 32-bit index arithmetic where every extent and product fits with room for the halo */
    const int64_t lim = (int64_t)1 << 30;
    s->wide = h > lim || w > lim || oh > lim || ow > lim || h * w > lim || oh * ow > lim ||
              kh > lim || kw > lim || kh * kw > lim;
    const int64_t es = (int64_t)fc_dtype_size(t);
    static const int shapes[4][2] = {{4, 2}, {2, 2}, {1, 2}, {1, 1}};
    for (int i = 0; i < 4 && !s->tiled && kh <= 4096 && kw <= 4096; i++) {
        int64_t sh = 8 * shapes[i][0] + kh - 1, sw = 32 * shapes[i][1] + kw - 1;
        if ((sh * sw + kh * kw) * es <= SMEM_LIMIT) {
            s->tiled = true;
            s->ry = shapes[i][0];
            s->rx = shapes[i][1];
        }
    }
    if (!s->tiled) s->ry = s->rx = 1;
    s->unrolled = s->tiled && kh * kw <= 81;
}

uint64_t fcx_stencil_tiles(const fcx_stencil *s, int64_t oh, int64_t ow, uint64_t *tiles_x) {
    if (!s->tiled) { /* one output a thread: blocks of 256 consecutive outputs */
        *tiles_x = 1;
        return ((uint64_t)oh * (uint64_t)ow + FCX_STENCIL_THREADS - 1) / FCX_STENCIL_THREADS;
    }
    uint64_t th = 8u * (uint64_t)s->ry, tw = 32u * (uint64_t)s->rx;
    *tiles_x = ((uint64_t)ow + tw - 1) / tw;
    return ((uint64_t)oh + th - 1) / th * *tiles_x;
}

/* The storage type, accumulator type and multiply-add of dtype t. */
static void types_of(fc_dtype t, const char **store, const char **acc) {
    switch (t) {
    case FC_I8: *store = "signed char"; break;
    case FC_I16: *store = "short"; break;
    case FC_I32: *store = "int"; break;
    case FC_I64: *store = "long long"; break;
    case FC_U8: *store = "unsigned char"; break;
    case FC_U16: *store = "unsigned short"; break;
    case FC_U32: *store = "unsigned int"; break;
    case FC_U64: *store = "unsigned long long"; break;
    case FC_F32: *store = "float"; break;
    case FC_C64: *store = "fcv_c64"; break;
    case FC_C128: *store = "fcv_c128"; break;
    default: *store = "double"; break;
    }
    /* integers: modular sums in unsigned words as wide as the result needs (SciPy's loops
     * wrap in the dtype; a sum modulo 2^32 or 2^64 wraps the same way) */
    if (fcg_is_int(t)) *acc = fc_dtype_size(t) == 8 ? "unsigned long long" : "unsigned int";
    else *acc = *store;
}

static void emit_prologue(fcg_sb *b, const fcx_stencil *s, const char *store, const char *acc) {
    fcg_sb_printf(b, "/* fusec stencil2d: %s, kernel %lldx%lld, origin (%lld, %lld), boundary "
                  "%s, %s tiles of %dx%d, %s indices */\n",
                  fc_dtype_name(s->dtype), (long long)s->kh, (long long)s->kw,
                  (long long)s->oy, (long long)s->ox, fcg_conv_boundary_names[s->boundary],
                  s->tiled ? "shared" : "no", s->tiled ? 8 * s->ry : 1,
                  s->tiled ? 32 * s->rx : FCX_STENCIL_THREADS, s->wide ? "64-bit" : "32-bit");
    fcg_sb_puts(b, "#ifndef __CUDACC_RTC__\n#ifndef __device__\n#define __device__\n#endif\n"
                   "#endif\n"
                   "#ifndef FCV_TYPES\n#define FCV_TYPES\n"
                   "struct alignas(8) fcv_c64 { float re, im; };\n"
                   "struct alignas(16) fcv_c128 { double re, im; };\n"
                   "__device__ static inline fcv_c64 fcv_fma(fcv_c64 acc, fcv_c64 w, fcv_c64 x) {\n"
                   "    acc.re += w.re * x.re - w.im * x.im;\n"
                   "    acc.im += w.re * x.im + w.im * x.re;\n"
                   "    return acc;\n}\n"
                   "__device__ static inline fcv_c128 fcv_fma(fcv_c128 acc, fcv_c128 w, fcv_c128 x) {\n"
                   "    acc.re += w.re * x.re - w.im * x.im;\n"
                   "    acc.im += w.re * x.im + w.im * x.re;\n"
                   "    return acc;\n}\n"
                   "#endif\n");
    fcg_sb_printf(b, "namespace fcv_%s_%lld_%lld_%lld_%lld_%d_%d_%d_%d {\n",
                  fc_dtype_name(s->dtype), (long long)s->kh, (long long)s->kw, (long long)s->oy,
                  (long long)s->ox, s->boundary, (int)s->wide, s->ry, s->rx);
    fcg_sb_printf(b, "typedef %s T;\ntypedef %s A;\ntypedef %s I;\n", store, acc,
                  s->wide ? "long long" : "int");
    fcg_sb_printf(b, "enum : long long { KH = %lldLL, KW = %lldLL, OY = %lldLL, OX = %lldLL };\n",
                  (long long)s->kh, (long long)s->kw, (long long)s->oy, (long long)s->ox);
    /* where weight e lies: reversed when the buffer is the source of the weights' flip */
    fcg_sb_printf(b, "__device__ static inline long long wix_(long long e) { return %s; }\n",
                  s->flipped ? "KH * KW - 1 - e" : "e");
    if (fcg_is_complex(s->dtype)) {
        fcg_sb_puts(b, "__device__ static inline A fma_(A acc, T w, T x) { return fcv_fma(acc, w, x); }\n"
                       "__device__ static inline T fill_of(double re, double im) { T v; v.re = re; v.im = im; return v; }\n"
                       "__device__ static inline A zero_() { A v; v.re = 0; v.im = 0; return v; }\n");
    } else if (fcg_is_int(s->dtype)) {
        fcg_sb_puts(b, "__device__ static inline A fma_(A acc, T w, T x) { return acc + (A)w * (A)x; }\n"
                       "__device__ static inline T fill_of(double re, double) {\n"
                       "    return re < 0 ? (T)(long long)re : (T)(unsigned long long)re;\n}\n"
                       "__device__ static inline A zero_() { return 0; }\n");
    } else {
        fcg_sb_puts(b, "__device__ static inline A fma_(A acc, T w, T x) { return acc + w * x; }\n"
                       "__device__ static inline T fill_of(double re, double) { return (T)re; }\n"
                       "__device__ static inline A zero_() { return 0; }\n");
    }
    /* Where index i of an axis of length n reads: -1 for the fill. Reached only for an
     * index outside [0, n); wrap and symm only with n > 0 (graph/convolve.c refuses an
     * empty input for them). */
    fcg_sb_puts(b, "__device__ static inline I bound_(I i, I n) {\n"
                   "    if (i >= 0 && i < n) return i;\n");
    switch (s->boundary) {
    case FC_CONV_WRAP: fcg_sb_puts(b, "    i %= n;\n    return i < 0 ? i + n : i;\n"); break;
    case FC_CONV_SYMM:
        fcg_sb_puts(b, "    const I p = 2 * n;\n    i %= p;\n    if (i < 0) i += p;\n"
                       "    return i < n ? i : p - 1 - i;\n");
        break;
    default: fcg_sb_puts(b, "    return -1;\n"); break;
    }
    fcg_sb_puts(b, "}\n"
                   "__device__ static inline T load_(const T *x, I r, I c, I h, I w, T fill) {\n"
                   "    r = bound_(r, h);\n    c = bound_(c, w);\n"
                   "    return r < 0 || c < 0 ? fill : x[r * w + c];\n}\n");
}

/* The tiled kernel: the tile and its halo through shared memory. */
static void emit_tiled(fcg_sb *b, const fcx_stencil *s) {
    const int th = 8 * s->ry, tw = 32 * s->rx;
    fcg_sb_printf(b, "enum : int { RY = %d, RX = %d, TH = %d, TW = %d, SH = TH + (int)KH - 1, "
                  "SW = TW + (int)KW - 1 };\n", s->ry, s->rx, th, tw);
    fcg_sb_puts(b, "__device__ static inline void run(const T *x, const T *wt, T *out, I h, I w, I oh,\n"
                   "                                 I ow, long long tiles_x, long long tiles, T fill) {\n"
                   "    __shared__ T tile[SH * SW];\n"
                   "    __shared__ T ws[KH * KW];\n"
                   "    const int tid = (int)threadIdx.x, tx = tid % 32, ty = tid / 32;\n"
                   "    for (int e = tid; e < (int)(KH * KW); e += 256) ws[e] = wt[wix_(e)];\n"
                   "    for (long long t = blockIdx.x; t < tiles; t += gridDim.x) {\n"
                   "        const I y0 = (I)(t / tiles_x) * TH, x0 = (I)(t % tiles_x) * TW;\n"
                   "        const I r0 = y0 - (I)OY, c0 = x0 - (I)OX;\n"
                   "        __syncthreads(); /* the last tile's readers are done (and ws is loaded) */\n"
                   "        if (r0 >= 0 && c0 >= 0 && r0 + SH <= h && c0 + SW <= w) {\n"
                   "            for (int e = tid; e < SH * SW; e += 256) {\n"
                   "                const int r = e / SW, c = e - r * SW;\n"
                   "                tile[e] = x[(r0 + r) * w + c0 + c];\n"
                   "            }\n"
                   "        } else {\n"
                   "            for (int e = tid; e < SH * SW; e += 256) {\n"
                   "                const int r = e / SW, c = e - r * SW;\n"
                   "                tile[e] = load_(x, r0 + r, c0 + c, h, w, fill);\n"
                   "            }\n"
                   "        }\n"
                   "        __syncthreads();\n"
                   "        A acc[RY][RX];\n"
                   "        for (int r = 0; r < RY; r++)\n"
                   "            for (int c = 0; c < RX; c++) acc[r][c] = zero_();\n");
    if (s->unrolled) {
        /* Sliding rows: input row ty * RY + mi serves output rows ty * RY + r with weight
         * row mi - r; each is read from shared memory once. Every bound is a constant, so
         * the branches fold away. */
        fcg_sb_puts(b, "#pragma unroll\n"
                       "        for (int mi = 0; mi < RY + (int)KH - 1; mi++)\n"
                       "#pragma unroll\n"
                       "            for (int n = 0; n < (int)KW; n++)\n"
                       "#pragma unroll\n"
                       "                for (int c = 0; c < RX; c++) {\n"
                       "                    const T v = tile[(ty * RY + mi) * SW + tx + 32 * c + n];\n"
                       "#pragma unroll\n"
                       "                    for (int r = 0; r < RY; r++) {\n"
                       "                        const int m = mi - r;\n"
                       "                        if (m >= 0 && m < (int)KH) acc[r][c] = fma_(acc[r][c], ws[m * (int)KW + n], v);\n"
                       "                    }\n"
                       "                }\n");
    } else {
        fcg_sb_puts(b, "        for (int r = 0; r < RY; r++)\n"
                       "            for (int m = 0; m < (int)KH; m++)\n"
                       "                for (int n = 0; n < (int)KW; n++) {\n"
                       "                    const T wv = ws[m * (int)KW + n];\n"
                       "                    for (int c = 0; c < RX; c++)\n"
                       "                        acc[r][c] = fma_(acc[r][c], wv, tile[(ty * RY + r + m) * SW + tx + 32 * c + n]);\n"
                       "                }\n");
    }
    fcg_sb_puts(b, "        for (int r = 0; r < RY; r++)\n"
                   "            for (int c = 0; c < RX; c++) {\n"
                   "                const I i = y0 + ty * RY + r, j = x0 + tx + 32 * c;\n"
                   "                if (i < oh && j < ow) out[i * ow + j] = (T)acc[r][c];\n"
                   "            }\n"
                   "    }\n"
                   "}\n");
}

/* The untiled kernel: one output a thread, the input and weights read from global memory. */
static void emit_global(fcg_sb *b) {
    fcg_sb_puts(b, "__device__ static inline void run(const T *x, const T *wt, T *out, I h, I w, I oh,\n"
                   "                                 I ow, long long, long long tiles, T fill) {\n"
                   "    for (long long t = (long long)blockIdx.x * 256 + threadIdx.x; t < tiles * 256;\n"
                   "         t += (long long)gridDim.x * 256) {\n"
                   "        const I i = (I)(t / ow), j = (I)(t % ow);\n"
                   "        if (i >= oh) continue;\n"
                   "        A acc = zero_();\n"
                   "        for (I m = 0; m < (I)KH; m++)\n"
                   "            for (I n = 0; n < (I)KW; n++)\n"
                   "                acc = fma_(acc, wt[wix_(m * (I)KW + n)], load_(x, i + m - (I)OY, j + n - (I)OX, h, w, fill));\n"
                   "        out[i * ow + j] = (T)acc;\n"
                   "    }\n"
                   "}\n");
}

fc_status fcx_stencil_source(fc_ctx *ctx, const fcx_stencil *s, const char *name, char **out) {
    *out = NULL;
    const char *store, *acc;
    types_of(s->dtype, &store, &acc);
    fcg_sb b = {ctx, NULL, 0, 0, false};
    emit_prologue(&b, s, store, acc);
    if (s->tiled) emit_tiled(&b, s);
    else emit_global(&b);
    fcg_sb_puts(&b, "} /* namespace */\n");
    /* The entry point: extents as 64-bit arguments, narrowed once; the fill converted to T. */
    fcg_sb_printf(&b, "extern \"C\" __global__ void __launch_bounds__(256) %s(const void *x, "
                  "const void *w, void *out, long long h, long long wd, long long oh, long long ow, "
                  "long long tiles_x, long long tiles, double fill_re, double fill_im) {\n"
                  "    using namespace fcv_%s_%lld_%lld_%lld_%lld_%d_%d_%d_%d;\n"
                  "    run((const T *)x, (const T *)w, (T *)out, (I)h, (I)wd, (I)oh, (I)ow, tiles_x, "
                  "tiles, fill_of(fill_re, fill_im));\n}\n",
                  name, fc_dtype_name(s->dtype), (long long)s->kh, (long long)s->kw,
                  (long long)s->oy, (long long)s->ox, s->boundary, (int)s->wide, s->ry, s->rx);
    *out = fcg_sb_finish(&b);
    if (!*out) return fcg_error(ctx, FC_ERR_NOMEM, "stencil2d: out of memory");
    return FC_OK;
}
