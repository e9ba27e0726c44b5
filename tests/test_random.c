/*
 * tests/test_random.c - random generators (include/fusec.h, fc_rng): the documented layout,
 * purity (a value depends on seed, stream and index only), the distributions' statistics,
 * argument errors, and on the GPU the same values as the host at sizes where draws span many
 * Philox blocks, threads and blocks (skipped, visibly, where there is no GPU).
 *
 * The statistical checks are deterministic (fixed seeds) and wide: each compares a moment or a
 * bin count of 2^20 values with its expectation at 6 standard errors, so that a broken layout
 * (repeated words, a lost bit, a wrong scale) fails and a correct generator never does.
 * Philox itself is checked against Random123's known answers in tests/test_prelude.cpp.
 */
#include <criterion/criterion.h>

#include "fusec.h"
#include "graph.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static fc_ctx *ctx;
static void setup(void) { ctx = tu_host_ctx(); }
static void teardown(void) { fc_ctx_destroy(ctx); }
TestSuite(random, .init = setup, .fini = teardown);

#define N (1 << 20)

/* The values of a (converted to double) in a malloc'd buffer. */
static double *values(fc_array *a) {
    fc_array *d = fc_cast(a, FC_F64);
    int64_t n = fc_array_size(d);
    double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    cr_assert_not_null(v);
    for (int64_t i = 0; i < n; i++) v[i] = -12345.0; /* poisoned */
    cr_assert_eq(fc_to_host(d, v, (size_t)n * sizeof *v), FC_OK, "%s", fc_errmsg(ctx));
    return v;
}

static void moments(const double *v, int64_t n, double *mean, double *var) {
    double s = 0, s2 = 0;
    for (int64_t i = 0; i < n; i++) s += v[i];
    *mean = s / (double)n;
    for (int64_t i = 0; i < n; i++) s2 += (v[i] - *mean) * (v[i] - *mean);
    *var = s2 / (double)n;
}

/* |got - want| within 6 standard errors (sd: the statistic's standard deviation). */
static void within(const char *what, double got, double want, double sd) {
    cr_assert(fabs(got - want) <= 6 * sd, "%s: %.6g, expected %.6g (6 standard errors: %.3g)",
              what, got, want, 6 * sd);
}

/* The layout as include/fusec.h states it, from Philox4x32-10 (checked against its known
 * answers in test_prelude): f32 element i is word i % 4 of block i / 4, its top 24 bits. */
Test(random, values_follow_the_documented_layout) {
    fc_rng g = fc_rng_init(0x0123456789abcdefull);
    g.stream = 5;
    fc_array *x = fc_rng_random(ctx, &g, FC_F32, FC_SHAPE(64));
    fc_array *y = fc_rng_random(ctx, &g, FC_F64, FC_SHAPE(64));
    cr_assert_eq(g.stream, 7, "each draw takes one stream");
    float xf[64];
    double yd[64];
    cr_assert_eq(fc_to_host(x, xf, sizeof xf), FC_OK);
    cr_assert_eq(fc_to_host(y, yd, sizeof yd), FC_OK);
    for (uint64_t i = 0; i < 64; i++) {
        uint32_t w[4];
        const uint32_t ctr[4] = {(uint32_t)(i / 4), 0, 5, 0};
        const uint32_t key[2] = {0x89abcdefu, 0x01234567u};
        fcg_philox4x32_10(ctr, key, w);
        cr_assert_eq((double)xf[i], (double)(w[i % 4] >> 8) * 0x1p-24, "f32 element %d", (int)i);
        const uint32_t ctr6[4] = {(uint32_t)(i / 2), 0, 6, 0};
        fcg_philox4x32_10(ctr6, key, w);
        uint64_t bits = w[2 * (i % 2)] | (uint64_t)w[2 * (i % 2) + 1] << 32;
        cr_assert_eq(yd[i], (double)(bits >> 11) * 0x1p-53, "f64 element %d", (int)i);
    }
    /* fc_random_uniform is stream 0 */
    fc_rng z = fc_rng_init(9);
    double a[16], b[16];
    cr_assert_eq(fc_to_host(fc_random_uniform(ctx, FC_F64, FC_SHAPE(16), 9), a, sizeof a), FC_OK);
    cr_assert_eq(fc_to_host(fc_rng_random(ctx, &z, FC_F64, FC_SHAPE(16)), b, sizeof b), FC_OK);
    cr_assert(memcmp(a, b, sizeof a) == 0);
}

/* A value depends on (seed, stream, flat index) only: a slice of a draw is the draw's
 * elements, whatever the shape; another stream or seed gives other values. */
Test(random, draws_are_pure_functions_of_seed_stream_and_index) {
    const int kinds = 3;
    for (int k = 0; k < kinds; k++) {
        fc_rng g = {77, 3};
        fc_rng h = g;
        fc_array *whole, *part;
        if (k == 0) {
            whole = fc_rng_standard_normal(ctx, &g, FC_F32, FC_SHAPE(1000));
            part = fc_rng_standard_normal(ctx, &h, FC_F32, FC_SHAPE(10, 100));
        } else if (k == 1) {
            whole = fc_rng_integers(ctx, &g, -50, 50, FC_I64, FC_SHAPE(1000));
            part = fc_rng_integers(ctx, &h, -50, 50, FC_I64, FC_SHAPE(10, 100));
        } else {
            whole = fc_rng_random(ctx, &g, FC_C64, FC_SHAPE(1000));
            part = fc_rng_random(ctx, &h, FC_C64, FC_SHAPE(10, 100));
        }
        double *w = values(fc_real(whole)), *p = values(fc_real(fc_slice(part, FC_S(3, 4, 1),
                                                                          FC_S(17, 60, 1))));
        for (int i = 0; i < 43; i++)
            cr_assert_eq(p[i], w[300 + 17 + i], "kind %d: element %d of the slice", k, i);
        free(w);
        free(p);
    }
    fc_rng a = {1, 0}, b = {1, 1}, c = {2, 0};
    double *x = values(fc_rng_random(ctx, &a, FC_F64, FC_SHAPE(256)));
    double *y = values(fc_rng_random(ctx, &b, FC_F64, FC_SHAPE(256)));
    double *z = values(fc_rng_random(ctx, &c, FC_F64, FC_SHAPE(256)));
    int same_stream = 0, same_seed = 0;
    for (int i = 0; i < 256; i++) {
        same_stream += x[i] == y[i];
        same_seed += x[i] == z[i];
    }
    cr_assert(same_stream == 0 && same_seed == 0, "%d equal across streams, %d across seeds",
              same_stream, same_seed);
    free(x);
    free(y);
    free(z);
}

Test(random, uniform_values_have_their_moments_and_fill_their_range) {
    for (fc_dtype t = FC_F16; t <= FC_F64; t++) {
        fc_rng g = fc_rng_init(11 + (uint64_t)t);
        double *v = values(fc_rng_random(ctx, &g, t, FC_SHAPE(N)));
        double mean, var, lo = 1, hi = 0;
        moments(v, N, &mean, &var);
        for (int64_t i = 0; i < N; i++) {
            cr_assert(v[i] >= 0 && v[i] < 1, "%s: %g outside [0, 1)", fc_dtype_name(t), v[i]);
            lo = fmin(lo, v[i]);
            hi = fmax(hi, v[i]);
        }
        /* values k 2^-m, k < 2^m (m: the significand's bits): their mean is 1/2 - 2^-(m+1) */
        double step = t == FC_F16 ? 0x1p-11 : t == FC_BF16 ? 0x1p-8 : t == FC_F32 ? 0x1p-24 : 0x1p-53;
        within(fc_dtype_name(t), mean, 0.5 - step / 2, sqrt(1.0 / 12 / N));
        within(fc_dtype_name(t), var, 1.0 / 12, sqrt(1.0 / 180 / N));
        cr_assert(lo < 1e-3 && hi > 1 - 1e-2, "%s: values span only [%g, %g]", fc_dtype_name(t),
                  lo, hi);
        free(v);
    }
    fc_rng g = fc_rng_init(5);
    double *u = values(fc_rng_uniform(ctx, &g, -3.0, 5.0, FC_F32, FC_SHAPE(N)));
    double mean, var;
    moments(u, N, &mean, &var);
    within("uniform(-3, 5)", mean, 1.0, sqrt(64.0 / 12 / N));
    for (int64_t i = 0; i < N; i++) cr_assert(u[i] >= -3 && u[i] <= 5);
    free(u);
}

/* Normal: mean, variance, and the fraction beyond 1, 2 and 3 sigma. */
Test(random, normal_values_have_their_moments_and_tails) {
    static const double tail[3] = {0.31731050786291415, 0.04550026389635842,
                                   0.0026997960632601866};
    for (fc_dtype t = FC_F16; t <= FC_F64; t++) {
        fc_rng g = fc_rng_init(21 + (uint64_t)t);
        double *v = values(fc_rng_standard_normal(ctx, &g, t, FC_SHAPE(N)));
        double mean, var;
        moments(v, N, &mean, &var);
        within(fc_dtype_name(t), mean, 0, sqrt(1.0 / N));
        within(fc_dtype_name(t), var, 1, sqrt(2.0 / N) + (t <= FC_BF16 ? 0.01 : 0));
        for (int k = 1; k <= 3; k++) {
            int64_t beyond = 0;
            for (int64_t i = 0; i < N; i++) beyond += fabs(v[i]) > k;
            within("tail", (double)beyond / N, tail[k - 1],
                   sqrt(tail[k - 1] * (1 - tail[k - 1]) / N) + (t <= FC_BF16 ? 0.01 : 0));
        }
        free(v);
    }
    fc_rng g = fc_rng_init(8);
    double *v = values(fc_rng_normal(ctx, &g, 10.0, 0.5, FC_F64, FC_SHAPE(N)));
    double mean, var;
    moments(v, N, &mean, &var);
    within("normal(10, 0.5)", mean, 10, 0.5 / sqrt(N));
    within("normal(10, 0.5) variance", var, 0.25, 0.25 * sqrt(2.0 / N));
    free(v);
}

/* Box-Muller in long double from element i's words (a for u1, b for u2), the reference for
 * graph/normal32.h's float one. The quarter turns come off b exactly, so that a zero of cos or
 * sin is an exact zero here too. */
static long double normal_reference(uint32_t a, uint32_t b, bool odd) {
    const long double pi = 3.141592653589793238462643383279502884L;
    long double u1 = ((long double)a + 1) * 0x1p-32L;
    uint32_t j = (b + 0x20000000u) >> 30;
    long double phi = 2 * pi * (long double)(int32_t)(b - (j << 30)) * 0x1p-32L;
    long double s = sinl(phi), c = cosl(phi);
    unsigned h = j + (odd ? 0 : 1); /* cos theta = sin(theta + a quarter turn) */
    long double v = (h & 1) ? c : s;
    return sqrtl(-2 * logl(u1)) * ((h & 2) ? -v : v);
}

/* |y - x| in ulps of x's binade as a float (x nonzero, normal as a float). */
static double ulps_from(float y, long double x) {
    int e;
    frexpl(x, &e);
    return (double)(fabsl((long double)y - x) / ldexpl(1, e - 24));
}

/* The float normal of 16- and 32-bit dtypes is within 2 ulps of Box-Muller computed exactly
 * from the same words: at the extreme words (u1 = 2^-32, the 6.66 sigma tail, to u1 = 1; u2 at
 * and beside the quarter turns and the eighth turns where the reduction switches) and for
 * 2^21 elements of a real stream. u1 = 1 gives 0. */
Test(random, float_normals_are_within_two_ulps_of_box_muller) {
    static const uint32_t wa[] = {0,          1,          2,          3,          255,
                                  256,        0x7fffff,   0x800000,   0xffffff,   0x1000000,
                                  0x7fffffff, 0x80000000, 0xaaaaaaa9, 0xaaaaaaaa, 0xaaaaaaab,
                                  0xb504f333, 0xffffff00, 0xfffffffd, 0xfffffffe, 0xffffffff};
    static const uint32_t wb[] = {0,          1,          2,          63,         64,
                                  0xffffff,   0x1000000,  0x1fffffff, 0x20000000, 0x20000001,
                                  0x3fffffff, 0x40000000, 0x5fffffff, 0x60000000, 0x7fffffff,
                                  0x80000000, 0x9fffffff, 0xa0000000, 0xbfffffff, 0xc0000000,
                                  0xdfffffff, 0xe0000000, 0xfffffffe, 0xffffffff};
    double worst = 0;
    for (size_t i = 0; i < sizeof wa / sizeof wa[0]; i++)
        for (size_t k = 0; k < sizeof wb / sizeof wb[0]; k++)
            for (int odd = 0; odd < 2; odd++) {
                float y = fcg_normal32(wa[i], wb[k], odd);
                long double x = normal_reference(wa[i], wb[k], odd);
                if (x == 0) {
                    cr_assert_eq(y, 0.0f, "words %08x %08x (%s): %a, not 0", wa[i], wb[k],
                                 odd ? "sin" : "cos", y);
                    continue;
                }
                double d = ulps_from(y, x);
                cr_assert(d <= 2, "words %08x %08x (%s): %.9g, %.3f ulps from %.12Lg", wa[i],
                          wb[k], odd ? "sin" : "cos", y, d, x);
                worst = fmax(worst, d);
            }
    cr_assert_float_eq(fcg_normal32(0, 0, 0), 6.66043, 1e-5, "the largest value, at u1 = 2^-32");
    for (uint64_t i = 0; i < (1u << 21); i++) {
        uint32_t w[4];
        fcg_random_block(0xfeedfacecafebeefull, 3, i >> 2, w);
        int k = (int)(i & 2);
        long double x = normal_reference(w[k], w[k + 1], i & 1);
        float y = (float)fcg_random_normal_at(FC_F32, 0xfeedfacecafebeefull, 3, i);
        double d = x == 0 ? (y == 0 ? 0 : 1e9) : ulps_from(y, x);
        cr_assert(d <= 2, "element %llu: %.9g, %.3f ulps from %.12Lg", (unsigned long long)i, y,
                  d, x);
        worst = fmax(worst, d);
    }
    cr_log_info("float normals: at most %.3f ulps from Box-Muller in long double", worst);
}

/* Integers: in range, each value about equally often (small ranges), and the extremes of a
 * dtype's whole range reached. */
Test(random, integers_are_uniform_over_their_range) {
    static const fc_dtype ints[] = {FC_I8, FC_U8, FC_I16, FC_U16, FC_I32, FC_U32, FC_I64, FC_U64};
    for (size_t k = 0; k < sizeof ints / sizeof ints[0]; k++) {
        fc_dtype t = ints[k];
        fc_rng g = fc_rng_init(31 + k);
        int64_t lo = fcg_is_sint(t) ? -7 : 2, span = 10;
        fc_array *x = fc_rng_integers(ctx, &g, lo, lo + span, t, FC_SHAPE(N));
        cr_assert_eq(fc_array_dtype(x), t);
        double *v = values(x);
        int64_t count[10] = {0};
        for (int64_t i = 0; i < N; i++) {
            cr_assert(v[i] >= lo && v[i] < lo + span && v[i] == floor(v[i]), "%s: %g",
                      fc_dtype_name(t), v[i]);
            count[(int)(v[i] - (double)lo)]++;
        }
        for (int b = 0; b < 10; b++)
            within(fc_dtype_name(t), (double)count[b], N / 10.0, sqrt(N * 0.1 * 0.9));
        free(v);
    }
    /* whole ranges: i8 reaches -128 and 127; i64's top and bottom eighths both occur */
    fc_rng g = fc_rng_init(3);
    double *v = values(fc_rng_integers(ctx, &g, -128, 128, FC_I8, FC_SHAPE(1 << 16)));
    double lo = 0, hi = 0;
    for (int i = 0; i < 1 << 16; i++) {
        lo = fmin(lo, v[i]);
        hi = fmax(hi, v[i]);
    }
    cr_assert(lo == -128 && hi == 127, "i8 over its whole range: [%g, %g]", lo, hi);
    free(v);
    int64_t w[4096];
    cr_assert_eq(fc_to_host(fc_rng_integers(ctx, &g, INT64_MIN, INT64_MAX, FC_I64, FC_SHAPE(4096)),
                            w, sizeof w),
                 FC_OK);
    int top = 0, bottom = 0;
    for (int i = 0; i < 4096; i++) {
        top += w[i] > INT64_MAX / 4 * 3;
        bottom += w[i] < INT64_MIN / 4 * 3;
    }
    cr_assert(top > 300 && bottom > 300, "i64 over its whole range: %d high, %d low", top, bottom);
}

Test(random, exponential_and_bernoulli) {
    fc_rng g = fc_rng_init(41);
    double *v = values(fc_rng_exponential(ctx, &g, 2.0, FC_F32, FC_SHAPE(N)));
    double mean, var;
    moments(v, N, &mean, &var);
    within("exponential(2) mean", mean, 2, 2 / sqrt(N));
    for (int64_t i = 0; i < N; i++) cr_assert(v[i] >= 0 && isfinite(v[i]));
    free(v);
    fc_array *b = fc_rng_bernoulli(ctx, &g, 0.3, FC_SHAPE(N));
    cr_assert_eq(fc_array_dtype(b), FC_BOOL);
    v = values(b);
    moments(v, N, &mean, &var);
    within("bernoulli(0.3)", mean, 0.3, sqrt(0.21 / N));
    free(v);
    uint8_t none[64], all[64];
    cr_assert_eq(fc_to_host(fc_rng_bernoulli(ctx, &g, 0.0, FC_SHAPE(64)), none, 64), FC_OK);
    cr_assert_eq(fc_to_host(fc_rng_bernoulli(ctx, &g, 1.0, FC_SHAPE(64)), all, 64), FC_OK);
    for (int i = 0; i < 64; i++) cr_assert(none[i] == 0 && all[i] == 1);
}

Test(random, bad_arguments_are_errors) {
    fc_rng g = fc_rng_init(1);
    struct {
        fc_array *a;
        fc_status want;
    } cases[] = {
        {fc_rng_integers(ctx, &g, 5, 5, FC_I32, FC_SHAPE(4)), FC_ERR_VALUE},
        {fc_rng_integers(ctx, &g, 0, 300, FC_U8, FC_SHAPE(4)), FC_ERR_VALUE},
        {fc_rng_integers(ctx, &g, -1, 3, FC_U16, FC_SHAPE(4)), FC_ERR_VALUE},
        {fc_rng_integers(ctx, &g, 0, 3, FC_F32, FC_SHAPE(4)), FC_ERR_DTYPE},
        {fc_rng_random(ctx, &g, FC_I32, FC_SHAPE(4)), FC_ERR_DTYPE},
        {fc_rng_standard_normal(ctx, &g, FC_BOOL, FC_SHAPE(4)), FC_ERR_DTYPE},
        {fc_rng_normal(ctx, &g, 0, -1, FC_F32, FC_SHAPE(4)), FC_ERR_VALUE},
        {fc_rng_normal(ctx, &g, NAN, 1, FC_F32, FC_SHAPE(4)), FC_ERR_VALUE},
        {fc_rng_normal(ctx, &g, 0, 1, FC_C64, FC_SHAPE(4)), FC_ERR_DTYPE},
        {fc_rng_uniform(ctx, &g, 0, INFINITY, FC_F64, FC_SHAPE(4)), FC_ERR_VALUE},
        {fc_rng_exponential(ctx, &g, -2, FC_F64, FC_SHAPE(4)), FC_ERR_VALUE},
        {fc_rng_bernoulli(ctx, &g, 1.5, FC_SHAPE(4)), FC_ERR_VALUE},
        {fc_rng_random(ctx, NULL, FC_F32, FC_SHAPE(4)), FC_ERR_NULL},
        {fc_rng_random(ctx, &g, FC_F32, FC_SHAPE(-1)), FC_ERR_SHAPE},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cr_assert_eq(fc_array_status(cases[i].a), cases[i].want, "case %zu: %s, want %s", i,
                     fc_strerror(fc_array_status(cases[i].a)), fc_strerror(cases[i].want));
        cr_assert_gt(strlen(fc_array_errmsg(cases[i].a)), 10, "case %zu: no message", i);
    }
    cr_assert_null(fc_rng_random(NULL, &g, FC_F32, FC_SHAPE(4)));
    /* the largest integer bounds a dtype allows are fine */
    cr_assert_eq(fc_array_status(fc_rng_integers(ctx, &g, 0, 256, FC_U8, FC_SHAPE(4))), FC_OK);
    cr_assert_eq(fc_array_status(fc_rng_integers(ctx, &g, INT64_MIN, INT64_MAX, FC_I64,
                                                 FC_SHAPE(4))), FC_OK);
}

/* ---- on the GPU ----------------------------------------------------------------------------- */

/* Every draw kind and dtype at 3 * 2^20 + 5 elements (blocks, threads and a ragged tail), in
 * the GPU's fused kernels, against the host: bit for bit, but for f64 normals (and c128's),
 * within 8 ulps (CUDA's log, sin and cos against glibc's). */
Test(random, gpu_draws_match_the_host) {
    fc_ctx *hc, *gc;
    tu_gpu_pair_open(&hc, &gc);
    if (!gc) {
        fprintf(stderr, "random: SKIPPED 1 test (no CUDA device): gpu_draws_match_the_host\n");
        cr_skip_test("no CUDA device");
    }
    const int64_t n = 3 * (1 << 20) + 5;
    static const fc_dtype ts[] = {FC_F16, FC_BF16, FC_F32, FC_F64, FC_C64, FC_C128,
                                  FC_I8,  FC_U16,  FC_I32, FC_U32, FC_I64, FC_U64};
    for (int kind = 0; kind < 3; kind++)
        for (size_t k = 0; k < sizeof ts / sizeof ts[0]; k++) {
            fc_dtype t = ts[k];
            bool integer = !fcg_is_inexact(t);
            if ((kind == 2) != integer) continue;
            fc_array *out[2];
            for (int side = 0; side < 2; side++) {
                fc_ctx *c = side ? gc : hc;
                fc_rng g = {1000 + k, (uint64_t)kind};
                fc_array *d = kind == 0   ? fc_rng_random(c, &g, t, FC_SHAPE(n))
                              : kind == 1 ? fc_rng_standard_normal(c, &g, t, FC_SHAPE(n))
                                          : fc_rng_integers(c, &g, fcg_is_sint(t) ? -3 : 2,
                                                            fcg_is_sint(t) ? 100 : 9, t, FC_SHAPE(n));
                /* a consumer, so the draw is fused into another op's kernel */
                out[side] = fc_mul(d, fc_i64(c, 1));
            }
            size_t bytes = (size_t)n * fc_dtype_size(t);
            unsigned char *h = malloc(bytes), *gv = malloc(bytes);
            cr_assert(h && gv);
            memset(gv, 0xA5, bytes);
            cr_assert_eq(fc_to_host(out[0], h, bytes), FC_OK, "%s", fc_errmsg(hc));
            cr_assert_eq(fc_to_host(out[1], gv, bytes), FC_OK, "%s", fc_errmsg(gc));
            if (kind != 1 || fcg_real_dtype(t) != FC_F64) {
                cr_assert(memcmp(h, gv, bytes) == 0, "kind %d, %s: GPU values differ", kind,
                          fc_dtype_name(t));
            } else {
                /* log, sin / cos (2 ulps each in CUDA) and the product, not rounded away */
                double ulp = 0x1p-52, ulps = 8;
                fc_array *hd = fc_from_host(hc, t, FC_SHAPE(n), h), *gd = fc_from_host(hc, t, FC_SHAPE(n), gv);
                for (int part = 0; part < (fcg_is_complex(t) ? 2 : 1); part++) {
                    double *a = values(part ? fc_imag(hd) : fc_real(hd));
                    double *b = values(part ? fc_imag(gd) : fc_real(gd));
                    int64_t bad = 0;
                    for (int64_t i = 0; i < n; i++)
                        bad += !(fabs(a[i] - b[i]) <= ulps * ulp * fmax(fabs(a[i]), 1e-3));
                    cr_assert_eq(bad, 0, "normal %s: %lld values beyond %g ulps", fc_dtype_name(t),
                                 (long long)bad, ulps);
                    free(a);
                    free(b);
                }
            }
            free(h);
            free(gv);
        }
    tu_gpu_pair_close(&hc, &gc);
}
