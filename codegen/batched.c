/*
 * codegen/batched.c - the CUDA source of batched dense linear algebra's helper kernels
 * (codegen.h's fcx_batched_source), which backend/cuda_batched.c launches around cuBLAS's and
 * cuSOLVER's batched routines for stacks of small matrices:
 *   fcb_ptrs    the array of per-matrix device pointers those routines take (base + i *
 *               stride), made on the device: no upload of a host array and no wait for one;
 *   fcb_move*   one strided element move over a whole stack: dst[b, i, j] = src[b, i, j]
 *               for count matrices rows x cols, each side with its own strides between rows,
 *               columns and matrices, so that one launch transposes every matrix into
 *               column-major order (or back), gathers every LU diagonal, widens the pivots,
 *               or scatters eigenvalues into a packed output. The element's top word may be
 *               XORed with a mask: conjugation of a complex element flips its imaginary sign
 *               bit, exact for every value (NaN and -0 included). src NULL writes zeros;
 *   fcb_nonfinite*  marks (in the infos syevjBatched wrote) each matrix with an eigenvalue
 *               that is not finite, so that the stack goes to the loop, which decides what
 *               such a matrix gives, as it does without the batched path.
 * Elements move as words of their size (4, 8 or 16 bytes: one kernel each), whatever they
 * hold. A thread takes an element at a time, grid-stride over the stack in dst's order (j
 * fastest), so any grid covers any stack and a dst with unit column stride is written in
 * coalesced runs; the matrices are small (the batched paths take n <= 64), so a transpose's
 * strided reads stay within a few lines of cache per matrix. Every index is 64-bit. The
 * source has no parameters (one module for every dtype and size) and needs nothing but
 * itself, so tests/test_codegen_emulated.c compiles it as host C++ too.
 */
#include "codegen.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

static const char batched_source[] =
    "/* fusec batched linear algebra helpers (codegen/batched.c) */\n"
    "#ifndef __CUDACC_RTC__\n#ifndef __device__\n#define __device__\n#endif\n#endif\n"
    "namespace fcb {\n"
    "struct alignas(16) w16 { unsigned long long lo, hi; };\n"
    "__device__ static inline unsigned int flip(unsigned int v, unsigned long long m) {\n"
    "    return v ^ (unsigned int)m;\n"
    "}\n"
    "__device__ static inline unsigned long long flip(unsigned long long v,\n"
    "                                                 unsigned long long m) {\n"
    "    return v ^ m;\n"
    "}\n"
    "__device__ static inline w16 flip(w16 v, unsigned long long m) {\n"
    "    v.hi ^= m;\n"
    "    return v;\n"
    "}\n"
    /* count matrices rows x cols: element (i, j) of matrix b is src[b * sm + i * sr + j * sc]
     * and dst[b * dm + i * dr + j * dc] (in words) */
    "template <class W>\n"
    "__device__ static inline void move(const W *__restrict__ src, W *__restrict__ dst,\n"
    "                                   long long count, long long rows, long long cols,\n"
    "                                   long long sr, long long sc, long long sm,\n"
    "                                   long long dr, long long dc, long long dm,\n"
    "                                   unsigned long long mask) {\n"
    "    const long long total = count * rows * cols;\n"
    "    const long long step = (long long)gridDim.x * (long long)blockDim.x;\n"
    "    for (long long e = (long long)blockIdx.x * (long long)blockDim.x +\n"
    "                       (long long)threadIdx.x;\n"
    "         e < total; e += step) {\n"
    "        const long long t = e / cols, j = e - t * cols;\n"
    "        const long long b = t / rows, i = t - b * rows;\n"
    "        const W v = src ? flip(src[b * sm + i * sr + j * sc], mask) : W();\n"
    "        dst[b * dm + i * dr + j * dc] = v;\n"
    "    }\n"
    "}\n"
    /* count matrices' n real eigenvalues at w (words W): info[b] = mark for a matrix with
     * one that is not finite (every exponent bit set) whose info is 0; a thread a matrix */
    "template <class W>\n"
    "__device__ static inline void nonfinite(int *__restrict__ info, const W *__restrict__ w,\n"
    "                                        long long n, long long count, int mark,\n"
    "                                        W exponent) {\n"
    "    const long long step = (long long)gridDim.x * (long long)blockDim.x;\n"
    "    for (long long b = (long long)blockIdx.x * (long long)blockDim.x +\n"
    "                       (long long)threadIdx.x;\n"
    "         b < count; b += step) {\n"
    "        bool bad = false;\n"
    "        for (long long j = 0; j < n; j++)\n"
    "            bad = bad || (w[b * n + j] & exponent) == exponent;\n"
    "        if (bad && info[b] == 0) info[b] = mark;\n"
    "    }\n"
    "}\n"
    "} /* namespace fcb */\n"
    "extern \"C\" __global__ void __launch_bounds__(256)\n"
    "fcb_ptrs(unsigned long long *dst, unsigned long long base, long long stride,\n"
    "         long long count) {\n"
    "    const long long step = (long long)gridDim.x * (long long)blockDim.x;\n"
    "    for (long long i = (long long)blockIdx.x * (long long)blockDim.x +\n"
    "                       (long long)threadIdx.x;\n"
    "         i < count; i += step)\n"
    "        dst[i] = base + (unsigned long long)(i * stride);\n"
    "}\n"
    "#define FCB_ENTRY(name, W)                                                            \\\n"
    "    extern \"C\" __global__ void __launch_bounds__(256)                                \\\n"
    "    name(const void *src, void *dst, long long count, long long rows, long long cols,  \\\n"
    "         long long sr, long long sc, long long sm, long long dr, long long dc,          \\\n"
    "         long long dm, unsigned long long mask) {                                      \\\n"
    "        fcb::move<W>((const W *)src, (W *)dst, count, rows, cols, sr, sc, sm, dr, dc,   \\\n"
    "                     dm, mask);                                                         \\\n"
    "    }\n"
    "FCB_ENTRY(fcb_move4, unsigned int)\n"
    "FCB_ENTRY(fcb_move8, unsigned long long)\n"
    "FCB_ENTRY(fcb_move16, fcb::w16)\n"
    "extern \"C\" __global__ void __launch_bounds__(256)\n"
    "fcb_nonfinite4(int *info, const void *w, long long n, long long count, int mark) {\n"
    "    fcb::nonfinite<unsigned int>(info, (const unsigned int *)w, n, count, mark,\n"
    "                                 0x7f800000u);\n"
    "}\n"
    "extern \"C\" __global__ void __launch_bounds__(256)\n"
    "fcb_nonfinite8(int *info, const void *w, long long n, long long count, int mark) {\n"
    "    fcb::nonfinite<unsigned long long>(info, (const unsigned long long *)w, n, count, mark,\n"
    "                                       0x7ff0000000000000ull);\n"
    "}\n";

const char *const fcx_batched_functions[FCX_BATCHED_COUNT] = {
    "fcb_ptrs", "fcb_move4", "fcb_move8", "fcb_move16", "fcb_nonfinite4", "fcb_nonfinite8"};

int fcx_batched_move(size_t es) {
    return es == 4 ? FCX_BATCHED_MOVE4 : es == 8 ? FCX_BATCHED_MOVE4 + 1
                                       : es == 16 ? FCX_BATCHED_MOVE4 + 2 : -1;
}

fc_status fcx_batched_source(fc_ctx *ctx, char **out) {
    *out = fcg_strdup(ctx, batched_source);
    return *out ? FC_OK : fcg_error(ctx, FC_ERR_NOMEM, "batched linear algebra: out of memory");
}

fcx_batched_mode fcx_batched_mode_env(void) {
    const char *e = getenv("FUSEC_LINALG_BATCHED");
    if (!e) return FCX_BATCHED_AUTO;
    if (strcmp(e, "0") == 0) return FCX_BATCHED_OFF;
    return strcmp(e, "all") == 0 ? FCX_BATCHED_ALL : FCX_BATCHED_AUTO;
}

bool fcx_batched_takes(const fc_array *a, fcx_batched_mode mode) {
    bool eig = a->op == FCG_OP_LINALG_EIGH || a->op == FCG_OP_LINALG_EIGVALSH;
    if (mode == FCX_BATCHED_OFF || a->nin < 1 ||
        (!eig && a->op != FCG_OP_LINALG_SOLVE && a->op != FCG_OP_LINALG_SLOGDET &&
         a->op != FCG_OP_LINALG_CHOLESKY))
        return false;
    const fc_array *x = a->in[0];
    fc_dtype t = (fc_dtype)x->dtype;
    if (x->ndim < 2 || (t != FC_F32 && t != FC_F64 && t != FC_C64 && t != FC_C128)) return false;
    int nb = x->ndim - 2;
    int64_t n = x->shape[nb], batch = 1;
    for (int d = 0; d < nb; d++) batch *= x->shape[d];
    /* the routines' int extents: order, batch, right-hand sides */
    int64_t k = a->op == FCG_OP_LINALG_SOLVE ? a->shape[a->ndim - 1] : 0;
    int64_t limit = eig ? FCX_BATCHED_SYEVJ_MAX_N : INT_MAX;
    if (n < 1 || n > limit || batch < 1 || batch > INT_MAX || k > INT_MAX) return false;
    int64_t max_n = eig ? FCX_BATCHED_SYEVJ_MAX_N : FCX_BATCHED_MAX_N;
    return mode == FCX_BATCHED_ALL || (batch >= 2 && n <= max_n);
}
