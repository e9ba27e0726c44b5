/*
 * tests/test_gpu_lib.c - library kernels on the GPU (matmul through cuBLAS, fft / ifft
 * through cuFFT, the contractions built on matmul, the sorts) and the generated kernels whose
 * tiles chain across blocks (scans, compactions) against the host reference backend.
 *
 * Each case builds the same program over the same random data in a host context and a CUDA
 * context, reads both results into buffers poisoned with 0xA5 bytes, and compares them.
 * Skipped, visibly, where there is no GPU.
 *
 * Tolerances by dtype. Matmul: the host accumulates in double and rounds once; cuBLAS
 * accumulates in the compute type (f32 for f16, bf16, f32 and c64; f64 for f64 and c128) in
 * another order and rounds once, so an element matches when |gpu - host| <= 4 ulps of the
 * result dtype relative to |host|, plus 16 K eps(compute type) absolute (K products of
 * operands below 2 in magnitude, two terms each for complex, and a margin of 2).
 * FFT: errors are relative to a line's norm, so |gpu - host| <= 32 eps log2(2n) max|host|.
 * Integer matmuls, mixed-dtype operands and empty inner dimensions have no cuBLAS path: the
 * runtime computes them on the host, and they must match exactly or as floats do.
 */
#include <criterion/criterion.h>

#include "fusec.h"
#include "codegen.h"
#include "graph.h"
#include "test_util.h"
#include "test_values.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool gpu_available(void) { return tu_gpu_available(); }

#define SKIP_WITHOUT_GPU(name)                                                                   \
    do {                                                                                         \
        if (!gpu_available()) {                                                                  \
            fprintf(stderr, "gpu_lib: SKIPPED 1 test (no CUDA device): %s\n", name);             \
            cr_skip_test("no CUDA device: the GPU library test is skipped");                     \
        }                                                                                        \
    } while (0)

/* Both contexts of a test. */
static fc_ctx *hc, *gc;

static void setup(void) { tu_gpu_pair_open(&hc, &gc); }
static void teardown(void) { tu_gpu_pair_close(&hc, &gc); }

TestSuite(gpu_lib, .init = setup, .fini = teardown);

/* ---- data ------------------------------------------------------------------------------- */

static uint64_t rng_state;

/* Uniform in [-2, 2), never 0. */
static double urand(void) {
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    double u = (double)(rng_state >> 11) * 0x1p-53 * 4.0 - 2.0;
    return u == 0.0 ? 0.75 : u;
}

/* Random host data of dtype t (n elements): floats in [-2, 2), integers in [-9, 9] \ {0}. */
static void *random_data(fc_dtype t, size_t n) {
    size_t es = fc_dtype_size(t);
    unsigned char *p = malloc(n * es + 1);
    cr_assert_not_null(p);
    for (size_t i = 0; i < n; i++) {
        double v = urand(), w = urand();
        unsigned char *q = p + i * es;
        switch (t) {
        case FC_F16: { uint16_t h = fcg_f32_to_f16((float)v); memcpy(q, &h, 2); break; }
        case FC_BF16: { uint16_t h = fcg_f32_to_bf16((float)v); memcpy(q, &h, 2); break; }
        case FC_F32: { float f = (float)v; memcpy(q, &f, 4); break; }
        case FC_F64: memcpy(q, &v, 8); break;
        case FC_C64: { float f[2] = {(float)v, (float)w}; memcpy(q, f, 8); break; }
        case FC_C128: { double d[2] = {v, w}; memcpy(q, d, 16); break; }
        default: {
            int64_t k = (int64_t)floor(v * 4.5);
            if (k == 0) k = 1;
            if (fcg_is_uint(t) && k < 0) k = -k;
            if (t == FC_BOOL) k = v > 0;
            memcpy(q, &k, es); /* little-endian: the low bytes */
            break;
        }
        }
    }
    return p;
}

/* The same input in both contexts. */
typedef struct pair {
    fc_array *h, *g;
} pair;

static pair input(fc_dtype t, fc_shape s) {
    void *data = random_data(t, tv_numel(s));
    pair p = {fc_from_host(hc, t, s, data), fc_from_host(gc, t, s, data)};
    free(data);
    cr_assert_eq(fc_array_status(p.h), FC_OK);
    cr_assert_eq(fc_array_status(p.g), FC_OK, "%s", fc_errmsg(gc));
    return p;
}

static unsigned char *read_all(fc_ctx *ctx, fc_array *a, const char *what) {
    size_t n = (size_t)fc_array_size(a), es = fc_dtype_size(fc_array_dtype(a));
    unsigned char *buf = malloc(n * es + 1);
    cr_assert_not_null(buf);
    memset(buf, 0xA5, n * es + 1); /* poisoned: a missed write cannot pass */
    fc_status st = fc_read(a, buf, 0, (int64_t)n);
    cr_assert_eq(st, FC_OK, "%s: %s on the %s backend: %s", what, fc_strerror(st),
                 ctx == gc ? "CUDA" : "host", fc_errmsg(ctx));
    return buf;
}

typedef enum tol_kind { TOL_MATMUL, TOL_FFT } tol_kind;

static double eps_of(fc_dtype t) {
    switch (t) {
    case FC_F16: return 0x1p-11;
    case FC_BF16: return 0x1p-8;
    case FC_F32: case FC_C64: return 0x1p-24;
    default: return 0x1p-53;
    }
}

static double compute_eps(fc_dtype t) { return t == FC_F64 || t == FC_C128 ? 0x1p-53 : 0x1p-24; }

/* Compares the GPU's value of g with the host's of h. `n`: TOL_MATMUL the length of the sums
 * (K, or more for chains), TOL_FFT the transform length. */
static void compare(fc_array *h, fc_array *g, tol_kind kind, int64_t n_fft, const char *what) {
    cr_assert_eq(fc_array_status(h), FC_OK, "%s (host): %s", what, fc_array_errmsg(h));
    cr_assert_eq(fc_array_status(g), FC_OK, "%s (gpu): %s", what, fc_array_errmsg(g));
    fc_dtype t = fc_array_dtype(h);
    cr_assert_eq(fc_array_dtype(g), t, "%s: dtypes differ", what);
    size_t n = (size_t)fc_array_size(h);
    cr_assert_eq((size_t)fc_array_size(g), n);
    unsigned char *hb = read_all(hc, h, what), *gb = read_all(gc, g, what);
    size_t es = fc_dtype_size(t), bad = 0;
    if (!fcg_is_inexact(t)) {
        for (size_t i = 0; i < n; i++) bad += memcmp(gb + i * es, hb + i * es, es) != 0;
        cr_expect_eq(bad, 0, "%s: %zu of %zu integer elements differ", what, bad, n);
    } else {
        int parts = fcg_is_complex(t) ? 2 : 1;
        double big = 0;
        for (size_t i = 0; i < n; i++)
            for (int q = 0; q < parts; q++) big = fmax(big, fabs(tv_value_at(hb, t, i, q)));
        double eps = eps_of(t);
        double rtol = kind == TOL_MATMUL ? 4 * eps : 0;
        double atol = kind == TOL_MATMUL ? 16 * (double)n_fft * compute_eps(t)
                                         : 32 * eps * log2(2.0 * (double)n_fft) * big;
        for (size_t i = 0; i < n; i++)
            for (int q = 0; q < parts; q++) {
                double gv = tv_value_at(gb, t, i, q), hv = tv_value_at(hb, t, i, q);
                if (fabs(gv - hv) <= atol + rtol * fabs(hv)) continue;
                if (!bad)
                    cr_log_error("%s: element %zu%s: gpu %.9g, host %.9g (tolerance %.3g)", what,
                                 i, q ? " (imag)" : "", gv, hv, atol + rtol * fabs(hv));
                bad++;
            }
        cr_expect_eq(bad, 0, "%s: %zu of %zu values differ", what, bad, n * (size_t)parts);
    }
    free(hb);
    free(gb);
}

/* ---- matmul ----------------------------------------------------------------------------- */

typedef struct mm_case {
    fc_shape a, b;
} mm_case;

static const fc_dtype float_dtypes[] = {FC_F16, FC_BF16, FC_F32, FC_F64, FC_C64, FC_C128};
#define NFLOAT ((int)(sizeof float_dtypes / sizeof *float_dtypes))

static void shape_text(char *buf, size_t size, fc_shape s) {
    size_t len = (size_t)snprintf(buf, size, "[");
    for (int d = 0; d < s.ndim && len < size; d++)
        len += (size_t)snprintf(buf + len, size - len, d ? ", %lld" : "%lld", (long long)s.dim[d]);
    if (len < size) snprintf(buf + len, size - len, "]");
}

Test(gpu_lib, matmul_every_float_dtype_and_shape) {
    SKIP_WITHOUT_GPU("matmul_every_float_dtype_and_shape");
    static const mm_case cases[] = {
        {FC_SHAPE(37), FC_SHAPE(37)},               /* 1-D . 1-D */
        {FC_SHAPE(5, 7), FC_SHAPE(7)},              /* 2-D @ 1-D */
        {FC_SHAPE(7), FC_SHAPE(7, 3)},              /* 1-D @ 2-D */
        {FC_SHAPE(1, 1), FC_SHAPE(1, 1)},
        {FC_SHAPE(33, 17), FC_SHAPE(17, 29)},       /* odd sizes */
        {FC_SHAPE(129, 65), FC_SHAPE(65, 3)},
        {FC_SHAPE(3, 4, 5), FC_SHAPE(3, 5, 6)},     /* batched */
        {FC_SHAPE(2, 1, 4, 5), FC_SHAPE(3, 5, 6)},  /* broadcast batch dims */
        {FC_SHAPE(4, 5), FC_SHAPE(2, 3, 5, 6)},     /* one A for every B */
        {FC_SHAPE(2, 3, 4, 5), FC_SHAPE(5, 6)},     /* one B for every A: one GEMM */
        {FC_SHAPE(3, 1, 4, 5), FC_SHAPE(1, 2, 5, 6)}, /* both broadcast: a loop */
        {FC_SHAPE(2, 1, 3, 1, 4, 5), FC_SHAPE(2, 2, 1, 3, 5, 2)},
        {FC_SHAPE(6, 4, 5), FC_SHAPE(5)},           /* batched @ 1-D */
        {FC_SHAPE(5), FC_SHAPE(6, 5, 4)},           /* 1-D @ batched */
        {FC_SHAPE(96, 200), FC_SHAPE(200, 72)},
    };
    rng_state = 1;
    char what[256], sa[64], sb[64];
    for (int di = 0; di < NFLOAT; di++)
        for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
            fc_dtype t = float_dtypes[di];
            fc_scope *s1 = fc_scope_open(hc), *s2 = fc_scope_open(gc);
            pair a = input(t, cases[c].a), b = input(t, cases[c].b);
            shape_text(sa, sizeof sa, cases[c].a);
            shape_text(sb, sizeof sb, cases[c].b);
            snprintf(what, sizeof what, "matmul %s @ %s %s", sa, sb, fc_dtype_name(t));
            int64_t k = cases[c].a.dim[cases[c].a.ndim - 1];
            compare(fc_matmul(a.h, b.h), fc_matmul(a.g, b.g), TOL_MATMUL, k, what);
            fc_scope_close(s2);
            fc_scope_close(s1);
        }
}

Test(gpu_lib, matmul_fused_neighbours_views_and_aliases) {
    SKIP_WITHOUT_GPU("matmul_fused_neighbours_views_and_aliases");
    rng_state = 2;
    fc_scope *s1 = fc_scope_open(hc), *s2 = fc_scope_open(gc);
    for (int di = 0; di < NFLOAT; di++) {
        fc_dtype t = float_dtypes[di];
        char what[128];
        pair a = input(t, FC_SHAPE(24, 40)), b = input(t, FC_SHAPE(24, 16));
        /* a transposed (materialised) operand, and an epilogue fused after the library call
         * (1-Lipschitz: tanh for real dtypes; complex tanh can amplify a difference, so * 2) */
        bool cplx = fcg_is_complex(t);
        snprintf(what, sizeof what, "%s(a.T @ b) %s", cplx ? "2 *" : "tanh", fc_dtype_name(t));
        fc_array *mh = fc_matmul(fc_transpose(a.h), b.h), *mg = fc_matmul(fc_transpose(a.g), b.g);
        compare(cplx ? fc_mul(mh, fc_f64(hc, 2.0)) : fc_tanh(mh),
                cplx ? fc_mul(mg, fc_f64(gc, 2.0)) : fc_tanh(mg), TOL_MATMUL, 48, what);
        /* the same buffer on both sides */
        pair x = input(t, FC_SHAPE(19, 19));
        snprintf(what, sizeof what, "x @ x %s", fc_dtype_name(t));
        compare(fc_matmul(x.h, x.h), fc_matmul(x.g, x.g), TOL_MATMUL, 19, what);
        /* a chain: (x @ x) @ x (not f16 / bf16: an intermediate may round to another
         * neighbour there, which the second product amplifies beyond a sum's tolerance) */
        if (t == FC_F16 || t == FC_BF16) continue;
        snprintf(what, sizeof what, "(x @ x) @ x %s", fc_dtype_name(t));
        compare(fc_matmul(fc_matmul(x.h, x.h), x.h), fc_matmul(fc_matmul(x.g, x.g), x.g),
                TOL_MATMUL, 19 * 19 * 4, what);
    }
    fc_scope_close(s2);
    fc_scope_close(s1);
}

static void swap_last_dims(fc_shape *s) {
    int64_t e = s->dim[s->ndim - 1];
    s->dim[s->ndim - 1] = s->dim[s->ndim - 2];
    s->dim[s->ndim - 2] = e;
}

/* swapaxes(x, -1, -2): what a matmul reads with cuBLAS's transpose flag. */
static fc_array *swap_last(fc_array *x) {
    fc_shape s = fc_array_shape(x);
    fc_axes perm;
    memset(&perm, 0, sizeof perm);
    perm.n = s.ndim;
    for (int d = 0; d < s.ndim; d++) perm.axis[d] = d;
    perm.axis[s.ndim - 2] = s.ndim - 1;
    perm.axis[s.ndim - 1] = s.ndim - 2;
    return fc_permute(x, perm);
}

/* Transposed operands (x.T, swapaxes of a stack) are read through cuBLAS's transpose flags,
 * not copied: every float dtype, batched, broadcast and shared operands, either side or both,
 * stored sources (a value) and computed ones (exp(x), stored by fusion for the call). */
Test(gpu_lib, matmul_transposed_operands) {
    SKIP_WITHOUT_GPU("matmul_transposed_operands");
    static const mm_case cases[] = { /* the logical shapes of A and B */
        {FC_SHAPE(33, 17), FC_SHAPE(17, 29)},
        {FC_SHAPE(1, 1), FC_SHAPE(1, 5)},
        {FC_SHAPE(3, 4, 5), FC_SHAPE(3, 5, 6)},
        {FC_SHAPE(2, 1, 4, 5), FC_SHAPE(3, 5, 6)},
        {FC_SHAPE(2, 3, 4, 5), FC_SHAPE(5, 6)},  /* one B for every A */
        {FC_SHAPE(4, 5), FC_SHAPE(2, 3, 5, 6)},  /* one A for every B */
        {FC_SHAPE(96, 200), FC_SHAPE(200, 72)},
    };
    rng_state = 4;
    char what[256], sa[64], sb[64];
    for (int di = 0; di < NFLOAT; di++)
        for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
            for (int how = 1; how < 8; how++) { /* bit 0: A transposed, 1: B, 2: computed */
                fc_dtype t = float_dtypes[di];
                bool ta = how & 1, tb = how & 2, computed = how & 4;
                if (!ta && !tb) continue;
                fc_scope *s1 = fc_scope_open(hc), *s2 = fc_scope_open(gc);
                fc_shape as = cases[c].a, bs = cases[c].b;
                if (ta) swap_last_dims(&as);
                if (tb) swap_last_dims(&bs);
                pair a = input(t, as), b = input(t, bs);
                if (computed) {
                    a.h = fc_negative(a.h), a.g = fc_negative(a.g);
                    b.h = fc_negative(b.h), b.g = fc_negative(b.g);
                }
                if (ta) a.h = swap_last(a.h), a.g = swap_last(a.g);
                if (tb) b.h = swap_last(b.h), b.g = swap_last(b.g);
                shape_text(sa, sizeof sa, cases[c].a);
                shape_text(sb, sizeof sb, cases[c].b);
                snprintf(what, sizeof what, "matmul %s%s @ %s%s %s%s", sa,
                         ta ? " (stored .T)" : "", sb, tb ? " (stored .T)" : "",
                         fc_dtype_name(t), computed ? ", computed" : "");
                int64_t k = cases[c].a.dim[cases[c].a.ndim - 1];
                compare(fc_matmul(a.h, b.h), fc_matmul(a.g, b.g), TOL_MATMUL, k, what);
                fc_scope_close(s2);
                fc_scope_close(s1);
            }
}

/* What cuBLAS does not take still matches: integer and bool matmuls (simplify makes them a
 * reduction), mixed float operands (cast to the loop dtype first), K = 0 (the host). */
Test(gpu_lib, matmul_beyond_cublas) {
    SKIP_WITHOUT_GPU("matmul_beyond_cublas");
    rng_state = 3;
    fc_scope *s1 = fc_scope_open(hc), *s2 = fc_scope_open(gc);
    static const fc_dtype ints[] = {FC_I32, FC_I8, FC_U16, FC_I64, FC_BOOL};
    for (size_t i = 0; i < sizeof ints / sizeof *ints; i++) {
        pair a = input(ints[i], FC_SHAPE(2, 5, 6)), b = input(ints[i], FC_SHAPE(6, 7));
        compare(fc_matmul(a.h, b.h), fc_matmul(a.g, b.g), TOL_MATMUL, 6,
                fc_dtype_name(ints[i]));
    }
    pair f = input(FC_F32, FC_SHAPE(4, 6)), d = input(FC_F64, FC_SHAPE(6, 3));
    compare(fc_matmul(f.h, d.h), fc_matmul(f.g, d.g), TOL_MATMUL, 6, "f32 @ f64");
    pair k0a = input(FC_F32, FC_SHAPE(3, 0)), k0b = input(FC_F32, FC_SHAPE(0, 4));
    compare(fc_matmul(k0a.h, k0b.h), fc_matmul(k0a.g, k0b.g), TOL_MATMUL, 0, "K = 0");
    pair e1 = input(FC_F32, FC_SHAPE(0, 5)), e2 = input(FC_F32, FC_SHAPE(5, 4));
    compare(fc_matmul(e1.h, e2.h), fc_matmul(e1.g, e2.g), TOL_MATMUL, 0, "M = 0");
    fc_scope_close(s2);
    fc_scope_close(s1);
}

/* ---- matmul epilogues (passes/epilogue.c, backend/cuda_blaslt.c) ---------------------- */

typedef enum epi_form {
    EPI_BIAS_RELU,
    EPI_BIAS_ROW,
    EPI_RELU,
    EPI_BIAS_FIRST,
    EPI_BIAS_GELU,
    EPI_GELU,
    EPI_FORMS
} epi_form;

/* The chain of `form` over product m and bias: what the fusion pass hands to cuBLASLt. */
static fc_array *epilogue_of(fc_ctx *ctx, epi_form form, fc_array *m, fc_array *bias) {
    switch (form) {
    case EPI_BIAS_RELU: return fc_maximum(fc_add(m, bias), fc_i64(ctx, 0));
    case EPI_BIAS_ROW: return fc_add(m, bias);
    case EPI_RELU: return fc_maximum(m, fc_i64(ctx, 0));
    case EPI_BIAS_GELU: return fc_gelu_tanh(fc_add(m, bias));
    case EPI_GELU: return fc_gelu_tanh(m);
    default: return fc_maximum(fc_f64(ctx, 0.0), fc_add(bias, m));
    }
}

/* relu(a @ b + bias) and its relatives as one cuBLASLt call with its epilogue: every form the
 * fusion pass absorbs (cuBLASLt's GELU must be the tanh form: the exact one differs from it by
 * up to 5e-4, far outside the tolerance), odd and large sizes, stored transposes of either operand, a [1, N]
 * bias; evaluated three times with the same cached plan and then with a new bias and a new A
 * (the bias pointer is set at each call). */
Test(gpu_lib, matmul_epilogues_match_the_host) {
    SKIP_WITHOUT_GPU("matmul_epilogues_match_the_host");
    static const struct {
        int64_t m, k, n;
    } sizes[] = {{1, 1, 1}, {37, 19, 53}, {64, 32, 48}, {257, 129, 511}, {512, 768, 384}};
    rng_state = 11;
    char what[200];
    for (size_t c = 0; c < sizeof sizes / sizeof *sizes; c++)
        for (int form = EPI_BIAS_RELU; form < EPI_FORMS; form++)
            for (int how = 0; how < 4; how++) { /* bit 0: A stored transposed, bit 1: B */
                int64_t m = sizes[c].m, k = sizes[c].k, n = sizes[c].n;
                bool ta = how & 1, tb = how & 2;
                fc_scope *s1 = fc_scope_open(hc), *s2 = fc_scope_open(gc);
                pair a = input(FC_F32, ta ? FC_SHAPE(k, m) : FC_SHAPE(m, k));
                pair b = input(FC_F32, tb ? FC_SHAPE(n, k) : FC_SHAPE(k, n));
                pair bias = input(FC_F32, form == EPI_BIAS_ROW ? FC_SHAPE(1, n) : FC_SHAPE(n));
                if (ta) a.h = fc_transpose(a.h), a.g = fc_transpose(a.g);
                if (tb) b.h = fc_transpose(b.h), b.g = fc_transpose(b.g);
                for (int rep = 0; rep < 4; rep++) {
                    if (rep == 3) { /* new buffers for the cached plan */
                        bias = input(FC_F32, fc_array_shape(bias.h));
                        a = input(FC_F32, fc_array_shape(a.h));
                    }
                    snprintf(what, sizeof what, "epilogue form %d, %lldx%lldx%lld%s%s, run %d",
                             form, (long long)m, (long long)k, (long long)n,
                             ta ? ", A stored .T" : "", tb ? ", B stored .T" : "", rep);
                    fc_array *yh = epilogue_of(hc, (epi_form)form, fc_matmul(a.h, b.h), bias.h);
                    fc_array *yg = epilogue_of(gc, (epi_form)form, fc_matmul(a.g, b.g), bias.g);
                    compare(yh, yg, TOL_MATMUL, k + 2, what);
                }
                fc_scope_close(s2);
                fc_scope_close(s1);
            }
}

/* NaN and infinity through the epilogue: NumPy's maximum propagates a NaN (maximum(NaN, 0)
 * is NaN), and so must the fused relu; an infinite bias stays infinite, a -inf one becomes 0
 * under relu. Rows of A with a NaN make NaN rows of the product. */
Test(gpu_lib, matmul_epilogue_nan_and_inf) {
    SKIP_WITHOUT_GPU("matmul_epilogue_nan_and_inf");
    rng_state = 12;
    const int64_t m = 40, k = 24, n = 36;
    float *ad = random_data(FC_F32, (size_t)(m * k)), *bd = random_data(FC_F32, (size_t)(n));
    for (int64_t i = 0; i < m; i += 7) ad[i * k + (i % k)] = NAN;
    bd[3] = INFINITY;
    bd[5] = -INFINITY;
    bd[8] = NAN;
    fc_scope *s1 = fc_scope_open(hc), *s2 = fc_scope_open(gc);
    pair b = input(FC_F32, FC_SHAPE(k, n));
    pair a = {fc_from_host(hc, FC_F32, FC_SHAPE(m, k), ad),
              fc_from_host(gc, FC_F32, FC_SHAPE(m, k), ad)};
    pair bias = {fc_from_host(hc, FC_F32, FC_SHAPE(n), bd),
                 fc_from_host(gc, FC_F32, FC_SHAPE(n), bd)};
    double atol = 16 * (double)(k + 2) * 0x1p-24, rtol = 4 * 0x1p-24;
    for (int form = EPI_BIAS_RELU; form <= EPI_RELU; form++) {
        bool row = form == EPI_BIAS_ROW;
        fc_array *yh = epilogue_of(hc, (epi_form)form, fc_matmul(a.h, b.h),
                                   row ? fc_reshape(bias.h, FC_SHAPE(1, n)) : bias.h);
        fc_array *yg = epilogue_of(gc, (epi_form)form, fc_matmul(a.g, b.g),
                                   row ? fc_reshape(bias.g, FC_SHAPE(1, n)) : bias.g);
        unsigned char *hb = read_all(hc, yh, "epilogue nan");
        unsigned char *gb = read_all(gc, yg, "epilogue nan");
        size_t bad = 0;
        for (int64_t i = 0; i < m * n; i++) {
            double hv = tv_value_at(hb, FC_F32, (size_t)i, 0);
            double gv = tv_value_at(gb, FC_F32, (size_t)i, 0);
            bool ok = isnan(hv)   ? isnan(gv)
                      : isinf(hv) ? gv == hv
                                  : !isnan(gv) && fabs(gv - hv) <= atol + rtol * fabs(hv);
            if (!ok && !bad)
                cr_log_error("epilogue form %d: element [%lld, %lld]: gpu %.9g, host %.9g", form,
                             (long long)(i / n), (long long)(i % n), gv, hv);
            bad += !ok;
        }
        cr_expect_eq(bad, 0, "epilogue form %d with NaN / inf: %zu of %lld values differ", form,
                     bad, (long long)(m * n));
        free(hb);
        free(gb);
    }
    fc_scope_close(s2);
    fc_scope_close(s1);
    free(ad);
    free(bd);
}

/* ---- direct convolutions (codegen/stencil.c, backend/cuda_stencil.c) -------------------- */

/* convolve2d and correlate2d by the stencil kernel against the host: every mode and boundary,
 * real and complex dtypes and an integer one, kernels that unroll (3x3, 3x4, 1x5, 5x1), one
 * that does not (12x12) and one too big for a tile's shared memory (2x1200: global reads);
 * a convolution's weights are read reversed from their own buffer (fcx_stencil.flipped), a
 * real correlation's as they are, a complex one's from a stored conjugate; and np.convolve. */
Test(gpu_lib, direct_convolutions_match_the_host) {
    SKIP_WITHOUT_GPU("direct_convolutions_match_the_host");
    static const struct {
        fc_dtype t;
        int64_t h, w, kh, kw;
    } cases[] = {
        {FC_F32, 67, 45, 3, 3},  {FC_F32, 40, 70, 3, 4}, {FC_F64, 33, 29, 1, 5},
        {FC_F64, 33, 29, 5, 1},  {FC_C64, 21, 30, 3, 3}, {FC_C128, 17, 19, 4, 2},
        {FC_I32, 30, 41, 3, 3},  {FC_F32, 50, 60, 12, 12}, {FC_F64, 6, 1300, 2, 1200},
    };
    rng_state = 21;
    char what[200];
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
        for (int mode = FC_CONV_FULL; mode <= FC_CONV_VALID; mode++)
            for (int bd = FC_CONV_FILL; bd <= FC_CONV_SYMM; bd++)
                for (int corr = 0; corr < 2; corr++) {
                    fc_dtype t = cases[c].t;
                    if (mode == FC_CONV_VALID && bd != FC_CONV_FILL) continue; /* no boundary */
                    fc_scope *s1 = fc_scope_open(hc), *s2 = fc_scope_open(gc);
                    pair x = input(t, FC_SHAPE(cases[c].h, cases[c].w));
                    pair k = input(t, FC_SHAPE(cases[c].kh, cases[c].kw));
                    double fill = fcg_is_inexact(t) ? 0.75 : 3.0;
                    fc_array *(*f)(fc_array *, fc_array *, fc_conv_mode, fc_conv_boundary,
                                   double, double, fc_conv_method) =
                        corr ? fc_correlate2d : fc_convolve2d;
                    snprintf(what, sizeof what, "%s %s %lldx%lld * %lldx%lld, mode %d, "
                             "boundary %d", corr ? "correlate2d" : "convolve2d",
                             fc_dtype_name(t), (long long)cases[c].h, (long long)cases[c].w,
                             (long long)cases[c].kh, (long long)cases[c].kw, mode, bd);
                    compare(f(x.h, k.h, (fc_conv_mode)mode, (fc_conv_boundary)bd, fill, 0,
                              FC_CONV_DIRECT),
                            f(x.g, k.g, (fc_conv_mode)mode, (fc_conv_boundary)bd, fill, 0,
                              FC_CONV_DIRECT),
                            TOL_MATMUL, cases[c].kh * cases[c].kw + 1, what);
                    fc_scope_close(s2);
                    fc_scope_close(s1);
                }
    fc_scope *s1 = fc_scope_open(hc), *s2 = fc_scope_open(gc);
    pair a = input(FC_F32, FC_SHAPE(1000)), v = input(FC_F32, FC_SHAPE(7));
    for (int mode = FC_CONV_FULL; mode <= FC_CONV_VALID; mode++) {
        snprintf(what, sizeof what, "np.convolve f32 1000 * 7, mode %d", mode);
        compare(fc_convolve(a.h, v.h, (fc_conv_mode)mode, FC_CONV_DIRECT),
                fc_convolve(a.g, v.g, (fc_conv_mode)mode, FC_CONV_DIRECT), TOL_MATMUL, 8, what);
    }
    fc_scope_close(s2);
    fc_scope_close(s1);
}

/* ---- contractions (graph/contract.c) ---------------------------------------------------- */

typedef struct einsum_case {
    const char *subs;
    int n;
    fc_shape s[3];
    int64_t k; /* the terms of a sum, for the tolerance (chains: their product, doubled) */
} einsum_case;

/* einsum, dot, tensordot, kron and matrix_power: their GEMMs through cuBLAS (transposed
 * layouts through its flags, merged groups through stored copies), their fused multiplies and
 * sums, and integer products (computed on the host by the CUDA backend) match the host. */
Test(gpu_lib, contractions_match_the_host) {
    SKIP_WITHOUT_GPU("contractions_match_the_host");
    static const einsum_case cases[] = {
        {"ij,jk->ik", 2, {FC_SHAPE(33, 17), FC_SHAPE(17, 29)}, 17},
        {"ij,kj->ik", 2, {FC_SHAPE(33, 17), FC_SHAPE(29, 17)}, 17},
        {"ji,jk->ik", 2, {FC_SHAPE(17, 33), FC_SHAPE(17, 29)}, 17},
        {"ji,kj->ik", 2, {FC_SHAPE(17, 33), FC_SHAPE(29, 17)}, 17},
        {"bij,bkj->bik", 2, {FC_SHAPE(4, 9, 17), FC_SHAPE(4, 11, 17)}, 17},
        {"bij,jk->bik", 2, {FC_SHAPE(4, 9, 17), FC_SHAPE(17, 5)}, 17},
        {"ijk,jkl->il", 2, {FC_SHAPE(6, 5, 7), FC_SHAPE(5, 7, 3)}, 35},
        {"ijk,ljk->li", 2, {FC_SHAPE(6, 5, 7), FC_SHAPE(3, 5, 7)}, 35},
        {"...ij,...jk->...ik", 2, {FC_SHAPE(2, 1, 5, 6), FC_SHAPE(3, 6, 4)}, 6},
        {"bij,bij->b", 2, {FC_SHAPE(3, 5, 7), FC_SHAPE(3, 5, 7)}, 35},
        {"i,j->ij", 2, {FC_SHAPE(7), FC_SHAPE(5)}, 1},
        {"ii->i", 1, {FC_SHAPE(9, 9)}, 1},
        {"ij->", 1, {FC_SHAPE(9, 13)}, 117},
        {"i,ij,j->", 3, {FC_SHAPE(13), FC_SHAPE(13, 7), FC_SHAPE(7)}, 182},
        {"ij,jk,kl->il", 3, {FC_SHAPE(5, 8), FC_SHAPE(8, 3), FC_SHAPE(3, 9)}, 48},
        {"bn,anm,bm->ba", 3, {FC_SHAPE(2, 6), FC_SHAPE(3, 6, 5), FC_SHAPE(2, 5)}, 60},
    };
    rng_state = 5;
    char what[256];
    for (int di = 0; di < NFLOAT; di++) {
        fc_dtype t = float_dtypes[di];
        bool narrow = t == FC_F16 || t == FC_BF16;
        for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
            /* a chain's intermediate may round to another f16 / bf16 neighbour, which the next
             * product amplifies beyond a sum's tolerance (as matmul's chains above) */
            if (narrow && cases[c].n > 2) continue;
            fc_scope *s1 = fc_scope_open(hc), *s2 = fc_scope_open(gc);
            fc_array *oh[3], *og[3];
            for (int i = 0; i < cases[c].n; i++) {
                pair x = input(t, cases[c].s[i]);
                oh[i] = x.h, og[i] = x.g;
            }
            snprintf(what, sizeof what, "einsum(\"%s\") %s", cases[c].subs, fc_dtype_name(t));
            compare(fc_einsum(hc, cases[c].subs, oh, cases[c].n),
                    fc_einsum(gc, cases[c].subs, og, cases[c].n), TOL_MATMUL, cases[c].k, what);
            fc_scope_close(s2);
            fc_scope_close(s1);
        }
        fc_scope *s1 = fc_scope_open(hc), *s2 = fc_scope_open(gc);
        pair a = input(t, FC_SHAPE(3, 8, 6)), b = input(t, FC_SHAPE(8, 6, 5));
        snprintf(what, sizeof what, "dot %s", fc_dtype_name(t));
        compare(fc_dot(a.h, b.h), fc_dot(a.g, b.g), TOL_MATMUL, 6, what);
        snprintf(what, sizeof what, "tensordot axes ([2, 1], [1, 0]) %s", fc_dtype_name(t));
        const int pa[2] = {2, 1}, pb[2] = {1, 0};
        compare(fc_tensordot_axes(a.h, b.h, 2, pa, pb), fc_tensordot_axes(a.g, b.g, 2, pa, pb),
                TOL_MATMUL, 48, what);
        snprintf(what, sizeof what, "vdot %s", fc_dtype_name(t));
        compare(fc_vdot(a.h, a.h), fc_vdot(a.g, a.g), TOL_MATMUL, 144, what);
        pair m = input(t, FC_SHAPE(4, 5)), n = input(t, FC_SHAPE(3, 2));
        snprintf(what, sizeof what, "kron %s", fc_dtype_name(t));
        compare(fc_kron(m.h, n.h), fc_kron(m.g, n.g), TOL_MATMUL, 1, what);
        if (!narrow) {
            pair q = input(t, FC_SHAPE(2, 6, 6));
            snprintf(what, sizeof what, "matrix_power 5 %s", fc_dtype_name(t));
            compare(fc_mul(fc_matrix_power(q.h, 5), fc_f64(hc, 1.0 / 4096)),
                    fc_mul(fc_matrix_power(q.g, 5), fc_f64(gc, 1.0 / 4096)), TOL_MATMUL,
                    6 * 6 * 6 * 6 * 4, what);
        }
        fc_scope_close(s2);
        fc_scope_close(s1);
    }
    /* integers and bool: cast to the promoted dtype, multiplied on the host, exactly */
    static const fc_dtype exact[] = {FC_I8, FC_I32, FC_U16, FC_I64, FC_BOOL};
    for (size_t i = 0; i < sizeof exact / sizeof *exact; i++) {
        fc_scope *s1 = fc_scope_open(hc), *s2 = fc_scope_open(gc);
        pair a = input(exact[i], FC_SHAPE(2, 5, 6)), b = input(exact[i], FC_SHAPE(7, 6));
        snprintf(what, sizeof what, "einsum(\"bij,kj->bik\") %s", fc_dtype_name(exact[i]));
        compare(fc_einsum(hc, "bij,kj->bik", (fc_array *[]){a.h, b.h}, 2),
                fc_einsum(gc, "bij,kj->bik", (fc_array *[]){a.g, b.g}, 2), TOL_MATMUL, 6, what);
        pair f = input(FC_F32, FC_SHAPE(6));
        snprintf(what, sizeof what, "dot %s . f32", fc_dtype_name(exact[i]));
        compare(fc_dot(a.h, f.h), fc_dot(a.g, f.g), TOL_MATMUL, 6, what);
        fc_scope_close(s2);
        fc_scope_close(s1);
    }
}

/* ---- fft -------------------------------------------------------------------------------- */

Test(gpu_lib, fft_lengths_dtypes_and_directions) {
    SKIP_WITHOUT_GPU("fft_lengths_dtypes_and_directions");
    static const int64_t lengths[] = {1, 2, 3, 7, 16, 17, 100, 128, 1000, 1024, 4096, 4099,
                                      65536};
    static const fc_dtype dtypes[] = {FC_C64, FC_C128, FC_F32, FC_F64, FC_F16, FC_I32};
    rng_state = 4;
    char what[128];
    for (size_t di = 0; di < sizeof dtypes / sizeof *dtypes; di++)
        for (size_t li = 0; li < sizeof lengths / sizeof *lengths; li++) {
            fc_dtype t = dtypes[di];
            int64_t n = lengths[li];
            if (n > 4099 && t != FC_C64 && t != FC_C128) continue;
            fc_scope *s1 = fc_scope_open(hc), *s2 = fc_scope_open(gc);
            pair x = input(t, FC_SHAPE(3, n));
            for (int inv = 0; inv < 2; inv++) {
                snprintf(what, sizeof what, "%s of %s [3, %lld]", inv ? "ifft" : "fft",
                         fc_dtype_name(t), (long long)n);
                compare(inv ? fc_ifft(x.h, 1) : fc_fft(x.h, 1),
                        inv ? fc_ifft(x.g, 1) : fc_fft(x.g, 1), TOL_FFT, n, what);
            }
            fc_scope_close(s2);
            fc_scope_close(s1);
        }
}

Test(gpu_lib, fft_axes_and_layouts) {
    SKIP_WITHOUT_GPU("fft_axes_and_layouts");
    /* inner axes: a loop over the outer extent (outer <= inner) or over the inner one */
    static const struct {
        fc_shape s;
        int axis;
    } cases[] = {
        {FC_SHAPE(64, 33), 0}, {FC_SHAPE(64, 33), 1}, {FC_SHAPE(5, 12, 9), 0},
        {FC_SHAPE(5, 12, 9), 1}, {FC_SHAPE(5, 12, 9), 2}, {FC_SHAPE(300, 4, 2), 1},
        {FC_SHAPE(2, 4, 300), 1}, {FC_SHAPE(7, 1, 5), 1}, {FC_SHAPE(1, 31), 0},
        {FC_SHAPE(2, 3, 5, 8), -3},
    };
    rng_state = 5;
    char what[128], sh[64];
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
        for (int ti = 0; ti < 2; ti++) {
            fc_dtype t = ti ? FC_C128 : FC_C64;
            fc_scope *s1 = fc_scope_open(hc), *s2 = fc_scope_open(gc);
            pair x = input(t, cases[c].s);
            int axis = cases[c].axis, ax = axis < 0 ? axis + cases[c].s.ndim : axis;
            shape_text(sh, sizeof sh, cases[c].s);
            for (int inv = 0; inv < 2; inv++) {
                snprintf(what, sizeof what, "%s of %s %s axis %d", inv ? "ifft" : "fft",
                         fc_dtype_name(t), sh, axis);
                compare(inv ? fc_ifft(x.h, axis) : fc_fft(x.h, axis),
                        inv ? fc_ifft(x.g, axis) : fc_fft(x.g, axis), TOL_FFT,
                        cases[c].s.dim[ax], what);
            }
            fc_scope_close(s2);
            fc_scope_close(s1);
        }
}

/* The np.fft family (graph/fft.c's composites of the library transforms) on the GPU against
 * the host: every member, every norm, cropped and padded axes, real, f16 and complex inputs. */
Test(gpu_lib, fft_family_matches_the_host) {
    SKIP_WITHOUT_GPU("fft_family_matches_the_host");
    rng_state = 7;
    static const fc_dtype dts[] = {FC_F32, FC_F64, FC_C64, FC_C128, FC_F16, FC_I32};
    for (size_t di = 0; di < sizeof dts / sizeof *dts; di++)
        for (int norm = 0; norm < 3; norm++) {
            fc_scope *s1 = fc_scope_open(hc), *s2 = fc_scope_open(gc);
            fc_dtype t = dts[di];
            fc_fft_norm nm = (fc_fft_norm)norm;
            bool real = !fcg_is_complex(t);
            pair x = input(t, FC_SHAPE(24, 130));
            char what[160];
#define FAMILY(expr_h, expr_g, len, name)                                                        \
    do {                                                                                         \
        snprintf(what, sizeof what, "%s of %s, norm %d", name, fc_dtype_name(t), norm);          \
        compare(expr_h, expr_g, TOL_FFT, len, what);                                             \
    } while (0)
            FAMILY(fc_fft_n(x.h, 200, 1, nm), fc_fft_n(x.g, 200, 1, nm), 200, "fft n=200");
            FAMILY(fc_ifft_n(x.h, 17, 0, nm), fc_ifft_n(x.g, 17, 0, nm), 17, "ifft n=17 axis 0");
            FAMILY(fc_irfft(x.h, 0, 1, nm), fc_irfft(x.g, 0, 1, nm), 258, "irfft");
            FAMILY(fc_hfft(x.h, 33, 0, nm), fc_hfft(x.g, 33, 0, nm), 33, "hfft n=33 axis 0");
            FAMILY(fc_fftn(x.h, 0, NULL, FC_ALL, nm), fc_fftn(x.g, 0, NULL, FC_ALL, nm), 24 * 130,
                   "fftn");
            FAMILY(fc_irfftn(x.h, 2, (const int64_t[]){20, 64}, FC_ALL, nm),
                   fc_irfftn(x.g, 2, (const int64_t[]){20, 64}, FC_ALL, nm), 20 * 64,
                   "irfftn s=[20, 64]");
            if (real) {
                FAMILY(fc_rfft(x.h, 0, 1, nm), fc_rfft(x.g, 0, 1, nm), 130, "rfft");
                FAMILY(fc_ihfft(x.h, 9, 0, nm), fc_ihfft(x.g, 9, 0, nm), 9, "ihfft n=9 axis 0");
                FAMILY(fc_rfftn(x.h, 0, NULL, FC_AXES(1, 0), nm),
                       fc_rfftn(x.g, 0, NULL, FC_AXES(1, 0), nm), 24 * 130, "rfftn axes [1, 0]");
            }
#undef FAMILY
            fc_scope_close(s2);
            fc_scope_close(s1);
        }
    fc_scope *s1 = fc_scope_open(hc), *s2 = fc_scope_open(gc);
    pair z = input(FC_C64, FC_SHAPE(6, 7));
    compare(fc_fftshift(z.h, FC_ALL), fc_fftshift(z.g, FC_ALL), TOL_MATMUL, 0, "fftshift");
    compare(fc_ifftshift(z.h, FC_AXES(1)), fc_ifftshift(z.g, FC_AXES(1)), TOL_MATMUL, 0,
            "ifftshift axis 1");
    compare(fc_fftfreq(hc, 9, 0.5), fc_fftfreq(gc, 9, 0.5), TOL_MATMUL, 0, "fftfreq");
    compare(fc_rfftfreq(hc, 10, 2.0), fc_rfftfreq(gc, 10, 2.0), TOL_MATMUL, 0, "rfftfreq");
    fc_scope_close(s2);
    fc_scope_close(s1);
}

Test(gpu_lib, fft_round_trip_and_fused_neighbours) {
    SKIP_WITHOUT_GPU("fft_round_trip_and_fused_neighbours");
    rng_state = 6;
    fc_scope *s1 = fc_scope_open(hc), *s2 = fc_scope_open(gc);
    for (int ti = 0; ti < 2; ti++) {
        fc_dtype t = ti ? FC_C128 : FC_C64;
        int64_t n = 1 << 16;
        pair x = input(t, FC_SHAPE(n));
        /* the W12 program: ifft(fft(x)) is x again, on the GPU */
        fc_array *g = fc_ifft(fc_fft(x.g, 0), 0);
        compare(x.h, g, TOL_FFT, n,
                t == FC_C64 ? "ifft(fft(x)) c64 vs x" : "ifft(fft(x)) c128 vs x");
        /* an elementwise prologue and epilogue around the library calls */
        compare(fc_abs(fc_fft(fc_sin(x.h), 0)), fc_abs(fc_fft(fc_sin(x.g), 0)), TOL_FFT, n,
                "abs(fft(sin(x)))");
    }
    /* the input is left as it was: cuFFT runs out of place */
    pair y = input(FC_C64, FC_SHAPE(8, 1000));
    fc_array *fy = fc_fft(y.g, 1);
    cr_assert_eq(fc_eval(gc, &fy, 1), FC_OK, "%s", fc_errmsg(gc));
    compare(fc_mul(y.h, fc_f64(hc, 1.0)), fc_mul(y.g, fc_f64(gc, 1.0)), TOL_MATMUL, 0,
            "the fft's input after the fft");
    fc_scope_close(s2);
    fc_scope_close(s1);
}

/* ---- sort and argsort --------------------------------------------------------------------- */

/* Data that tests the order: many ties, and for floats -0.0 beside 0.0, infinities and NaNs of
 * both signs and several payloads; integers over a small range and over the whole width. */
static void *sort_data(fc_dtype t, size_t n) {
    unsigned char *p = random_data(t, n);
    size_t es = fc_dtype_size(t);
    for (size_t i = 0; i < n; i++) {
        double u = urand(); /* [-2, 2) */
        int pick = (int)((u + 2.0) * 4.0); /* 0..15 */
        unsigned char *q = p + i * es;
        if (!fcg_is_inexact(t)) {
            if (pick < 4) { /* anything of the width */
                rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
                uint64_t bits = rng_state;
                memcpy(q, &bits, es);
                if (t == FC_BOOL) *q &= 1;
            }
            continue;
        }
        static const double special[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, -NAN, 1.5, -2.0};
        int parts = fcg_is_complex(t) ? 2 : 1;
        size_t ps = es / (size_t)parts;
        for (int k = 0; k < parts; k++) {
            if (pick >= 8 && (k == 0 || pick >= 12)) continue; /* keep the random value */
            double v = special[(pick + 3 * k) % 8];
            unsigned char *r = q + (size_t)k * ps;
            if (ps == 2) {
                uint16_t h = t == FC_BF16 ? fcg_f32_to_bf16((float)v) : fcg_f32_to_f16((float)v);
                if (isnan(v)) h |= (uint16_t)(i & 3); /* payloads */
                memcpy(r, &h, 2);
            } else if (ps == 4) {
                float f = (float)v;
                uint32_t b;
                memcpy(&b, &f, 4);
                if (isnan(v)) b |= (uint32_t)(i & 7);
                memcpy(r, &b, 4);
            } else {
                uint64_t b;
                memcpy(&b, &v, 8);
                if (isnan(v)) b |= (uint64_t)(i & 7);
                memcpy(r, &b, 8);
            }
        }
    }
    return p;
}

/* sort and argsort of `data` (freed here) on both backends agree bit for bit. */
static void sort_case_of(fc_dtype t, fc_shape s, int axis, void *data) {
    fc_scope *s1 = fc_scope_open(hc), *s2 = fc_scope_open(gc);
    fc_array *xh = fc_from_host(hc, t, s, data), *xg = fc_from_host(gc, t, s, data);
    free(data);
    char sh[96], what[200];
    shape_text(sh, sizeof sh, s);
    for (int arg = 0; arg < 2; arg++) {
        fc_array *h = arg ? fc_argsort(xh, axis) : fc_sort(xh, axis);
        fc_array *g = arg ? fc_argsort(xg, axis) : fc_sort(xg, axis);
        snprintf(what, sizeof what, "%s of %s %s axis %d", arg ? "argsort" : "sort",
                 fc_dtype_name(t), sh, axis);
        cr_assert_eq(fc_array_status(h), FC_OK, "%s (host): %s", what, fc_array_errmsg(h));
        cr_assert_eq(fc_array_status(g), FC_OK, "%s (gpu): %s", what, fc_array_errmsg(g));
        size_t n = (size_t)fc_array_size(h), es = fc_dtype_size(fc_array_dtype(h));
        unsigned char *bh = read_all(hc, h, what), *bg = read_all(gc, g, what);
        size_t bad = n;
        for (size_t i = 0; i < n && bad == n; i++)
            if (memcmp(bh + i * es, bg + i * es, es) != 0) bad = i;
        cr_expect(bad == n, "%s: element %zu of %zu differs from the host's", what, bad, n);
        free(bh);
        free(bg);
    }
    fc_scope_close(s2);
    fc_scope_close(s1);
}

static void sort_case(fc_dtype t, fc_shape s, int axis) {
    sort_case_of(t, s, axis, sort_data(t, tv_numel(s)));
}

/* n elements of dtype t (an integer or real float type) in a pattern: 0 all equal, 1 sorted,
 * 2 sorted backwards. */
static void *sort_pattern(fc_dtype t, size_t n, int pattern) {
    size_t es = fc_dtype_size(t);
    unsigned char *p = malloc(n * es + 1);
    cr_assert_not_null(p);
    for (size_t i = 0; i < n; i++) {
        double v = pattern == 0 ? 3.0 : pattern == 1 ? (double)i - (double)(n / 2)
                                                     : (double)(n / 2) - (double)i;
        unsigned char *q = p + i * es;
        if (t == FC_F32) {
            float f = (float)v;
            memcpy(q, &f, 4);
        } else if (t == FC_F64) {
            memcpy(q, &v, 8);
        } else {
            int64_t k = (int64_t)v;
            memcpy(q, &k, es); /* little-endian: the low bytes */
        }
    }
    return p;
}

Test(gpu_lib, sort_and_argsort_match_the_host) {
    SKIP_WITHOUT_GPU("sort_and_argsort_match_the_host");
    rng_state = 11;
    for (int t = 0; t < FC_DTYPE_COUNT; t++) {
        fc_dtype d = (fc_dtype)t;
        sort_case(d, FC_SHAPE(1000), -1);       /* one block */
        sort_case(d, FC_SHAPE(3, 5000), 1);     /* passes over the array, rows regrouped */
        sort_case(d, FC_SHAPE(70001), 0);       /* passes over one long row */
        sort_case(d, FC_SHAPE(5, 7, 33), 1);    /* an inner axis */
        sort_case(d, FC_SHAPE(300, 17), 0);     /* many short rows, an outer axis */
        sort_case(d, FC_SHAPE(1), 0);
        sort_case(d, FC_SHAPE(4, 0), -1);
        sort_case(d, FC_SHAPE(0, 4), 1);
    }
    sort_case(FC_F32, FC_SHAPE(1 << 20), 0);
    sort_case(FC_I64, FC_SHAPE(1 << 20), 0);
    sort_case(FC_F32, FC_SHAPE(300, 3000), 1);  /* 300 rows: two row passes */
    sort_case(FC_F64, FC_SHAPE(2, 4096), -1);   /* past an 8-byte tile */
    sort_case(FC_F32, FC_SHAPE(2, 4096), -1);   /* exactly a 4-byte tile */
    sort_case(FC_F32, FC_SHAPE(2, 4097), -1);
    sort_case(FC_C128, FC_SHAPE(4, 1025), -1);  /* past a 16-byte tile */
    sort_case(FC_F32, FC_SHAPE(6, 5), FC_AXIS_NONE);
}

/* The passes over the whole array: rows of one pass tile and one element more, for each
 * element size; enough tiles that the look-back walks past many a tile still running; keys all
 * equal, sorted and sorted backwards. */
Test(gpu_lib, sort_passes_tiles_and_patterns) {
    SKIP_WITHOUT_GPU("sort_passes_tiles_and_patterns");
    rng_state = 13;
    static const fc_dtype sizes[] = {FC_U8, FC_I16, FC_F32, FC_F64, FC_C128};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        fc_dtype t = sizes[i];
        for (int idx = 0; idx < 2; idx++) { /* sort of one row: keys only; else indices too */
            int64_t tile = 256 * (int64_t)fcx_sort_pass_items(t, idx);
            sort_case(t, FC_SHAPE(tile), 0);
            sort_case(t, FC_SHAPE(tile + 1), 0);
            sort_case(t, FC_SHAPE(3, tile + 1), 1);
        }
    }
    sort_case(FC_F32, FC_SHAPE((1 << 22) + 3), 0);
    sort_case(FC_F64, FC_SHAPE(5, 300001), -1);
    static const fc_dtype patterned[] = {FC_F32, FC_I64, FC_I32, FC_F64};
    for (size_t i = 0; i < sizeof patterned / sizeof *patterned; i++)
        for (int pattern = 0; pattern < 3; pattern++) {
            fc_dtype t = patterned[i];
            size_t n = ((size_t)1 << 20) + 7;
            sort_case_of(t, FC_SHAPE((int64_t)n), 0, sort_pattern(t, n, pattern));
            sort_case_of(t, FC_SHAPE(4, (int64_t)n / 4), 1, sort_pattern(t, n / 4 * 4, pattern));
        }
}

/* More than 2^30 elements: the passes run in portions (a look-back count has 30 bits), each
 * starting where the last left off. Checked without the host sort: the result is in order
 * and holds as many of each value as the input. */
Test(gpu_lib, sort_of_more_than_2_30_elements) {
    SKIP_WITHOUT_GPU("sort_of_more_than_2_30_elements");
    const size_t n = ((size_t)1 << 30) + 4097;
    uint16_t *data = malloc(n * 2);
    uint64_t *count = calloc(65536, sizeof *count);
    cr_assert(data && count);
    uint64_t r = 14;
    for (size_t i = 0; i < n; i++) {
        r = r * 6364136223846793005ULL + 1442695040888963407ULL;
        data[i] = (uint16_t)(r >> 48 < (1ull << 14) ? 1000 : r >> 48); /* one value common */
        count[data[i]]++;
    }
    fc_scope *sc = fc_scope_open(gc);
    fc_array *x = fc_from_host(gc, FC_U16, FC_SHAPE((int64_t)n), data);
    fc_array *y = fc_sort(x, 0);
    cr_assert_eq(fc_array_status(y), FC_OK, "%s", fc_array_errmsg(y));
    cr_assert_eq(fc_read(y, data, 0, (int64_t)n), FC_OK, "%s", fc_errmsg(gc));
    size_t bad = n;
    for (size_t i = 0; i < n && bad == n; i++)
        if ((i > 0 && data[i] < data[i - 1]) || count[data[i]]-- == 0) bad = i;
    cr_expect(bad == n, "sort of %zu u16: element %zu out of order or not in the input", n, bad);
    fc_scope_close(sc);
    free(count);
    free(data);
}

/* A sort inside a program: its input computed by a fused kernel, its result read by one. */
Test(gpu_lib, sort_between_fused_kernels) {
    SKIP_WITHOUT_GPU("sort_between_fused_kernels");
    rng_state = 12;
    fc_scope *s1 = fc_scope_open(hc), *s2 = fc_scope_open(gc);
    pair x = input(FC_F32, FC_SHAPE(64, 9000));
    fc_array *h = fc_mul(fc_sort(fc_sin(x.h), 1), fc_scalar(hc, FC_F32, 2.0));
    fc_array *g = fc_mul(fc_sort(fc_sin(x.g), 1), fc_scalar(gc, FC_F32, 2.0));
    compare(h, g, TOL_MATMUL, 1, "2 * sort(sin(x))");
    fc_array *ih = fc_take_along_axis(x.h, fc_argsort(x.h, 0), 0);
    fc_array *ig = fc_take_along_axis(x.g, fc_argsort(x.g, 0), 0);
    compare(ih, ig, TOL_MATMUL, 1, "take_along_axis(x, argsort(x, 0), 0)");
    fc_scope_close(s2);
    fc_scope_close(s1);
}

/* ---- scans and compactions (generated kernels whose tiles chain across blocks) ------------ */

/* A scan of x (both contexts) along axis: integers and running max / min bit for bit; sums
 * and products within the rounding of the result dtype plus the f64 accumulator's (the GPU
 * adds in a tree, the host in order), relative to the running sum of magnitudes. */
static void scan_case(int kind, fc_dtype t, fc_shape s, int axis) {
    static const char *const names[] = {"cumsum", "cumprod", "cummax", "cummin"};
    fc_array *(*const fns[])(fc_array *, int) = {fc_cumsum, fc_cumprod, fc_cummax, fc_cummin};
    fc_scope *s1 = fc_scope_open(hc), *s2 = fc_scope_open(gc);
    pair x = input(t, s);
    char sh[96], what[200];
    shape_text(sh, sizeof sh, s);
    snprintf(what, sizeof what, "%s of %s %s axis %d", names[kind], fc_dtype_name(t), sh, axis);
    fc_array *h = fns[kind](x.h, axis), *g = fns[kind](x.g, axis);
    cr_assert_eq(fc_array_status(h), FC_OK, "%s (host): %s", what, fc_array_errmsg(h));
    cr_assert_eq(fc_array_status(g), FC_OK, "%s (gpu): %s", what, fc_array_errmsg(g));
    fc_dtype rt = fc_array_dtype(h);
    size_t n = (size_t)fc_array_size(h), es = fc_dtype_size(rt), bad = 0;
    unsigned char *hb = read_all(hc, h, what), *gb = read_all(gc, g, what);
    if (!fcg_is_inexact(rt) || kind >= 2) {
        for (size_t i = 0; i < n; i++) bad += memcmp(gb + i * es, hb + i * es, es) != 0;
        cr_expect_eq(bad, 0, "%s: %zu of %zu elements differ", what, bad, n);
    } else {
        /* the running sums (products: values) of magnitudes bound the accumulator's error */
        fc_array *mag = kind == 0 ? fc_cumsum(fc_cast(fc_abs(x.h), FC_F64), axis)
                                  : fc_abs(fc_cast(h, fcg_is_complex(rt) ? FC_C128 : FC_F64));
        unsigned char *mb = read_all(hc, mag, what);
        int parts = fcg_is_complex(rt) ? 2 : 1;
        double len = (double)(s.ndim ? s.dim[axis < 0 ? s.ndim - 1 : axis] : 1);
        for (size_t i = 0; i < n; i++)
            for (int q = 0; q < parts; q++) {
                double gv = tv_value_at(gb, rt, i, q), hv = tv_value_at(hb, rt, i, q);
                double m = tv_value_at(mb, FC_F64, i, 0);
                double tol = 2 * eps_of(rt) * fabs(hv) + 4 * len * 0x1p-53 * m;
                if (gv == hv || fabs(gv - hv) <= tol) continue;
                if (!bad)
                    cr_log_error("%s: element %zu%s: gpu %.17g, host %.17g (tolerance %.3g)",
                                 what, i, q ? " (imag)" : "", gv, hv, tol);
                bad++;
            }
        cr_expect_eq(bad, 0, "%s: %zu of %zu values differ", what, bad, n * (size_t)parts);
        free(mb);
    }
    free(hb);
    free(gb);
    fc_scope_close(s2);
    fc_scope_close(s1);
}

/* Every scan of every dtype along rows that one tile holds, that chain a few tiles (the tile
 * is fcx_scan_tile elements: one more, exact multiples) and that chain thousands (the
 * look-back walks past tiles still running), and along a strided axis (a thread per line). */
Test(gpu_lib, scans_match_the_host) {
    SKIP_WITHOUT_GPU("scans_match_the_host");
    rng_state = 21;
    for (int t = 0; t < FC_DTYPE_COUNT; t++) {
        fc_dtype d = (fc_dtype)t;
        for (int kind = 0; kind < 4; kind++) {
            if (kind == 1) { /* products: short rows, before they overflow */
                scan_case(kind, d, FC_SHAPE(100), 0);
                scan_case(kind, d, FC_SHAPE(3, 70), 1);
                continue;
            }
            scan_case(kind, d, FC_SHAPE(1), 0);
            scan_case(kind, d, FC_SHAPE(63), 0);
            scan_case(kind, d, FC_SHAPE(3, 4097), 1);
            scan_case(kind, d, FC_SHAPE(5000, 3), 0);
            scan_case(kind, d, FC_SHAPE(0, 5), 1);
        }
    }
    const fc_dtype wide[] = {FC_F32, FC_F64, FC_I32, FC_I64, FC_C128, FC_BOOL, FC_U8};
    for (size_t i = 0; i < sizeof wide / sizeof *wide; i++) {
        fc_dtype d = wide[i];
        /* sums accumulate in 8 bytes (f64, i64, u64), complex ones in 16 */
        int64_t tile = fcx_scan_tile(&fcx_default_tuning, d == FC_C128 ? 16 : 8);
        scan_case(0, d, FC_SHAPE(2, tile), 1);
        scan_case(0, d, FC_SHAPE(2, 3 * tile + 1), 1);
        scan_case(0, d, FC_SHAPE((1 << 22) + 3), 0);
        scan_case(2, d, FC_SHAPE((1 << 21) + 5), 0);
    }
    scan_case(0, FC_F32, FC_SHAPE(16, 300000), 1);
}

/* x[mask] of a mask of x's shape (one compaction kernel) and flatnonzero, bit for bit: masks
 * of every density, over one tile and thousands, every dtype of x. */
static void compress_case(fc_dtype t, fc_shape s, double keep) {
    fc_scope *s1 = fc_scope_open(hc), *s2 = fc_scope_open(gc);
    pair x = input(t, s);
    size_t n = tv_numel(s);
    bool *m = malloc(n + 1);
    cr_assert_not_null(m);
    for (size_t i = 0; i < n; i++) m[i] = (urand() + 2) / 4 < keep;
    fc_array *mh = fc_from_host(hc, FC_BOOL, s, m), *mg = fc_from_host(gc, FC_BOOL, s, m);
    free(m);
    char sh[96], what[200];
    shape_text(sh, sizeof sh, s);
    fc_idx eh[1] = {FC_ARRAY_IDX(mh)}, eg[1] = {FC_ARRAY_IDX(mg)};
    for (int form = 0; form < 3; form++) {
        fc_array *h = form == 0 ? fc_index(x.h, 1, eh)
                      : form == 1 ? fc_flatnonzero(mh)
                                  : fc_index(fc_mul(x.h, x.h), 1, eh);
        fc_array *g = form == 0 ? fc_index(x.g, 1, eg)
                      : form == 1 ? fc_flatnonzero(mg)
                                  : fc_index(fc_mul(x.g, x.g), 1, eg);
        snprintf(what, sizeof what, "%s of %s %s, %.3g kept",
                 form == 0 ? "x[mask]" : form == 1 ? "flatnonzero(mask)" : "(x * x)[mask]",
                 fc_dtype_name(t), sh, keep);
        cr_assert_eq(fc_array_status(h), FC_OK, "%s (host): %s", what, fc_array_errmsg(h));
        cr_assert_eq(fc_array_status(g), FC_OK, "%s (gpu): %s", what, fc_array_errmsg(g));
        cr_assert_eq(fc_array_size(g), fc_array_size(h), "%s: sizes differ", what);
        size_t k = (size_t)fc_array_size(h), es = fc_dtype_size(fc_array_dtype(h)), bad = k;
        unsigned char *hb = read_all(hc, h, what), *gb = read_all(gc, g, what);
        for (size_t i = 0; i < k && bad == k; i++)
            if (memcmp(hb + i * es, gb + i * es, es) != 0) bad = i;
        cr_expect(bad == k, "%s: element %zu of %zu differs from the host's", what, bad, k);
        free(hb);
        free(gb);
    }
    fc_scope_close(s2);
    fc_scope_close(s1);
}

Test(gpu_lib, compactions_match_the_host) {
    SKIP_WITHOUT_GPU("compactions_match_the_host");
    rng_state = 23;
    for (int t = 0; t < FC_DTYPE_COUNT; t++) {
        compress_case((fc_dtype)t, FC_SHAPE(1000), 0.5);
        compress_case((fc_dtype)t, FC_SHAPE(7, 3001), 0.3);
    }
    compress_case(FC_F32, FC_SHAPE((1 << 22) + 5), 0.5);
    compress_case(FC_F32, FC_SHAPE(2048, 2049), 0.01);
    compress_case(FC_F64, FC_SHAPE((1 << 21) + 1), 0.999);
    compress_case(FC_C128, FC_SHAPE(1 << 20), 1.0);
    compress_case(FC_I8, FC_SHAPE(1 << 20), 0.0); /* nothing selected: an empty result */
    compress_case(FC_F32, FC_SHAPE(1), 1.0);
}
