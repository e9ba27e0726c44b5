/*
 * tests/test_values.h - reading array values back for comparisons, shared by the tests that
 * compare a backend with the host reference (test_gpu_diff, test_gpu_lib, test_shard,
 * test_shard_diff): one element of any float dtype as a double (and back), the element
 * count of a shape, the GPU's float tolerances, and the comparison of a whole output against
 * the reference's.
 * Header-only (static inline).
 */
#ifndef FUSEC_TESTS_TEST_VALUES_H
#define FUSEC_TESTS_TEST_VALUES_H

#include <fusec.h>

#include "graph.h" /* fcg_f16_to_f32, fcg_bf16_to_f32 */

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Element i of a buffer of dtype t (a float or complex dtype) as a double; part 1: the
 * imaginary part of a complex element. 0 for other dtypes. */
static inline double tv_value_at(const unsigned char *p, fc_dtype t, size_t i, int part) {
    switch (t) {
    case FC_F16: { uint16_t h; memcpy(&h, p + 2 * i, 2); return fcg_f16_to_f32(h); }
    case FC_BF16: { uint16_t h; memcpy(&h, p + 2 * i, 2); return fcg_bf16_to_f32(h); }
    case FC_F32: { float f; memcpy(&f, p + 4 * i, 4); return f; }
    case FC_F64: { double d; memcpy(&d, p + 8 * i, 8); return d; }
    case FC_C64: { float f; memcpy(&f, p + 8 * i + 4 * (size_t)part, 4); return f; }
    case FC_C128: { double d; memcpy(&d, p + 16 * i + 8 * (size_t)part, 8); return d; }
    default: return 0;
    }
}

/* Sets element i (part 1: the imaginary part of a complex element) of a buffer of float or
 * complex dtype t to x, rounded to t; other dtypes are left as they are. */
static inline void tv_set_value_at(unsigned char *p, fc_dtype t, size_t i, int part, double x) {
    switch (t) {
    case FC_F16: { uint16_t h = fcg_f32_to_f16((float)x); memcpy(p + 2 * i, &h, 2); break; }
    case FC_BF16: { uint16_t h = fcg_f32_to_bf16((float)x); memcpy(p + 2 * i, &h, 2); break; }
    case FC_F32: { float f = (float)x; memcpy(p + 4 * i, &f, 4); break; }
    case FC_F64: memcpy(p + 8 * i, &x, 8); break;
    case FC_C64: { float f = (float)x; memcpy(p + 8 * i + 4 * (size_t)part, &f, 4); break; }
    case FC_C128: memcpy(p + 16 * i + 8 * (size_t)part, &x, 8); break;
    default: break;
    }
}

static inline size_t tv_numel(fc_shape s) {
    size_t n = 1;
    for (int d = 0; d < s.ndim; d++) n *= (size_t)s.dim[d];
    return n;
}

/* The relative tolerance of a GPU result of dtype t against the host reference: CUDA's math
 * functions round differently from glibc's and the GPU sums in another order, and later ops
 * carry that (test_gpu_diff.c's rule 2 says why each value). */
static inline double tv_gpu_rtol(fc_dtype t) {
    switch (t) {
    case FC_F16: return 2e-2;
    case FC_BF16: return 1e-1;
    case FC_F32: case FC_C64: return 1e-4;
    default: return 1e-9;
    }
}

/* The loosest tolerance rtol_of gives any float dtype among the results and loop dtypes of the
 * program computing outs (before they are evaluated): an f64 output of a program with f16
 * inside it is only as close as f16 allows. */
static inline double tv_program_rtol(fc_ctx *ctx, fc_array *const *outs, int n,
                                     double (*rtol_of)(fc_dtype)) {
    fc_array **ord;
    size_t count;
    double r = rtol_of(FC_F64);
    if (fcg_topo_order(ctx, outs, n, false, &ord, &count) != FC_OK) return 1e-1;
    for (size_t i = 0; i < count; i++) {
        fc_dtype t = (fc_dtype)ord[i]->dtype;
        if (fcg_is_inexact(t) && rtol_of(t) > r) r = rtol_of(t);
        t = (fc_dtype)ord[i]->loop_dtype;
        if (fcg_is_inexact(t) && rtol_of(t) > r) r = rtol_of(t);
    }
    fcg_free(ctx, ord, count * sizeof *ord);
    return r;
}

/* The number of elements of got (n of dtype t) that do not match ref: integers and bool
 * bit for bit; floats when |got - ref| <= rtol * (|ref| + scale) or <= atol, scale being
 * scale_factor times the largest finite |ref| of the array (cancellation to near zero); NaN
 * must meet NaN and inf the same inf. The first mismatch is described in why, naming got as
 * `label`. */
static inline size_t tv_compare(const unsigned char *got, const unsigned char *ref, fc_dtype t,
                                size_t n, double rtol, double scale_factor, double atol,
                                const char *label, char *why, size_t why_size) {
    size_t es = fc_dtype_size(t), bad = 0;
    if (!fcg_is_inexact(t)) {
        for (size_t i = 0; i < n; i++)
            if (memcmp(got + i * es, ref + i * es, es) != 0) {
                if (!bad) snprintf(why, why_size, "element %zu differs (integer/bool)", i);
                bad++;
            }
        return bad;
    }
    int parts = fcg_is_complex(t) ? 2 : 1;
    double scale = 0;
    for (size_t i = 0; i < n; i++)
        for (int q = 0; q < parts; q++) {
            double h = fabs(tv_value_at(ref, t, i, q));
            if (isfinite(h) && h > scale) scale = h;
        }
    scale *= scale_factor;
    for (size_t i = 0; i < n; i++)
        for (int q = 0; q < parts; q++) {
            double g = tv_value_at(got, t, i, q), h = tv_value_at(ref, t, i, q);
            bool ok;
            if (isnan(h) || isnan(g)) ok = isnan(h) && isnan(g);
            else if (isinf(h) || isinf(g)) ok = g == h;
            else ok = fabs(g - h) <= rtol * (fabs(h) + scale) || fabs(g - h) <= atol;
            if (!ok) {
                if (!bad) snprintf(why, why_size, "element %zu%s: %s %.17g, host %.17g", i,
                                   q ? " (imag)" : "", label, g, h);
                bad++;
            }
        }
    return bad;
}

#endif /* FUSEC_TESTS_TEST_VALUES_H */
