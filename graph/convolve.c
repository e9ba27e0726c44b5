/*
 * graph/convolve.c - convolution and correlation: np.convolve, np.correlate,
 * scipy.signal.convolve2d and correlate2d.
 *
 * Every one of them is a correlation with an origin, out[i, j] = sum w[m, n] *
 * ext(x)[i + m - oy, j + n - ox], once the composite has chosen x (swapping the inputs where
 * NumPy and SciPy swap them), w (the other input flipped for a convolution, conjugated for a
 * correlation: a view and an elementwise op, which fuse into whatever stores w), the output's
 * shape and the origin that puts the mode's window where NumPy and SciPy put it:
 *   convolution    full: origin K - 1   same: K / 2        valid: 0
 *   correlation    full: origin K - 1   same: (K - 1) / 2  valid: 0
 * (the full result of either is the same correlation; 'same' takes its window at
 * (K - 1) / 2 for a convolution and K / 2 for correlate2d, so the origins differ for even
 * kernels, as SciPy's documentation warns). That correlation is computed one of two ways:
 *   direct  the STENCIL2D library node: fusec's stencil kernel on the GPU, tiled through
 *           shared memory, boundary handling in its load (codegen/stencil.c)
 *   fft     composed of fusec's FFT ops: the extended input and the flipped weights, zero
 *           padded to a fast size, rfft2 (fft2 for complex), their product, irfft2, a crop.
 *           With a zero fill nothing needs extending (the padding is the fill); otherwise the
 *           extension is a gather of rows and columns (wrap: modulo; symm: reflection;
 *           fill: a where) that fuses into the FFT's input kernel.
 * and `auto` picks by fcg_conv_prefers_fft. Integers compute exactly (direct) unless fft is
 * forced, where they go through f64 and are rounded back, as scipy.signal.convolve does.
 */
#include "graph.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

const char *const fcg_conv_mode_names[3] = {"full", "same", "valid"};
const char *const fcg_conv_boundary_names[3] = {"fill", "wrap", "symm"};
const char *const fcg_conv_method_names[3] = {"auto", "direct", "fft"};

/* np.conj where it changes something: the conjugate of a real array is the array itself,
 * and a node for it would store a copy of the weights before the stencil kernel. */
static fc_array *conj_of(fc_array *x) {
    return fcg_is_complex((fc_dtype)x->dtype) ? fc_conj(x) : x;
}

static bool stencil_dtype(fc_dtype t) {
    return fcg_is_int(t) || t == FC_F32 || t == FC_F64 || fcg_is_complex(t);
}

int64_t fcg_fft_fast_len(int64_t n) {
    if (n <= 1) return 1;
    for (int64_t m = n;; m++) {
        int64_t r = m;
        static const int primes[4] = {2, 3, 5, 7};
        for (int i = 0; i < 4; i++)
            while (r % primes[i] == 0) r /= primes[i];
        if (r == 1) return m;
    }
}

bool fcg_conv_prefers_fft(fc_dtype t, int64_t oh, int64_t ow, int64_t kh, int64_t kw) {
    /* Integers stay exact. Otherwise the FFT path costs about three transforms of the padded
     * size, each some passes over memory and N log2 N flops; the stencil costs kh * kw
     * multiply-adds an output from shared memory. Measured shapes (docs/ARCHITECTURE.md): a
     * 3x3 or 15x15 kernel over 4096^2 is faster direct, 31x31 through the FFT; the rule
     * takes the FFT when the multiply-adds an output exceed 20 log2 of the padded size. */
    if (!fcg_is_inexact(t) || oh <= 0 || ow <= 0 || kh <= 0 || kw <= 0) return false;
    double n = (double)fcg_fft_fast_len(oh + kh - 1) * (double)fcg_fft_fast_len(ow + kw - 1);
    return (double)kh * (double)kw > 20.0 * log2(n > 2 ? n : 2);
}

/* SciPy converts fillvalue to the output's dtype and refuses one that does not survive
 * ("could not cast `fillvalue` directly to the output type"): an imaginary part for a real
 * dtype, a value outside an integer's range (a fraction is truncated). */
static bool fill_value(fc_ctx *ctx, const char *name, fc_dtype t, double *re, double *im) {
    bool ok = true;
    if (fcg_is_complex(t)) {
        if (t == FC_C64) *re = (float)*re, *im = (float)*im;
        return true;
    }
    ok = *im == 0;
    if (ok && fcg_is_int(t)) {
        double v = trunc(*re);
        size_t bits = 8 * fc_dtype_size(t);
        double lo = fcg_is_uint(t) ? 0 : -ldexp(1, (int)bits - 1);
        double hi = fcg_is_uint(t) ? ldexp(1, (int)bits) : ldexp(1, (int)bits - 1);
        ok = isfinite(v) && v >= lo && v < hi;
        *re = v;
    } else if (ok && t == FC_F32) {
        *re = (float)*re;
    }
    if (!ok)
        fcg_error(ctx, FC_ERR_VALUE, "%s: could not cast fillvalue %g%+gj directly to the output "
                  "type %s", name, *re, *im, fc_dtype_name(t));
    return ok;
}

fc_array *fcg_stencil2d(fc_array *x, fc_array *w, int64_t oh, int64_t ow, int64_t oy,
                        int64_t ox, int boundary, double fill_re, double fill_im) {
    const char *name = "stencil2d";
    fc_array *early, *in[2] = {x, w};
    fc_ctx *ctx = fcg_begin(name, 2, in, &early);
    if (!ctx || early) return early;
    char d1[FCG_DESC_MAX], d2[FCG_DESC_MAX];
    fc_dtype t = (fc_dtype)x->dtype;
    if (x->ndim != 2 || w->ndim != 2)
        return fcg_poison(ctx, FC_ERR_SHAPE, "%s: the input and the weights must be 2-d (%s, %s)",
                          name, fcg_desc(d1, x), fcg_desc(d2, w));
    if ((fc_dtype)w->dtype != t || !stencil_dtype(t))
        return fcg_poison(ctx, FC_ERR_DTYPE, "%s: the input and the weights must have one dtype "
                          "of the integers, f32, f64, c64 or c128 (%s, %s)", name,
                          fcg_desc(d1, x), fcg_desc(d2, w));
    if ((unsigned)boundary > FC_CONV_SYMM)
        return fcg_poison(ctx, FC_ERR_VALUE, "%s: invalid boundary %d", name, boundary);
    int64_t k[2] = {w->shape[0], w->shape[1]}, o[2] = {oy, ox}, sz[2] = {oh, ow};
    for (int d = 0; d < 2; d++) {
        if (sz[d] < 0)
            return fcg_poison(ctx, FC_ERR_SHAPE, "%s: negative output extent %lld", name,
                              (long long)sz[d]);
        if (o[d] < 0 || (k[d] > 0 ? o[d] >= k[d] : o[d] != 0))
            return fcg_poison(ctx, FC_ERR_VALUE, "%s: origin %lld outside the weights' extent "
                              "%lld along axis %d", name, (long long)o[d], (long long)k[d], d);
    }
    bool empty_out = oh == 0 || ow == 0 || k[0] == 0 || k[1] == 0;
    if (boundary != FC_CONV_FILL && !empty_out && (x->shape[0] == 0 || x->shape[1] == 0))
        return fcg_poison(ctx, FC_ERR_VALUE, "%s: boundary '%s' needs a non-empty input (%s)",
                          name, fcg_conv_boundary_names[boundary], fcg_desc(d1, x));
    if (!fill_value(ctx, name, t, &fill_re, &fill_im)) return fcg_poison_ctx(ctx, FC_ERR_VALUE);
    fcg_params p;
    memset(&p, 0, sizeof p);
    p.a[0] = oy;
    p.a[1] = ox;
    p.mode = (uint8_t)boundary;
    p.re = fill_re;
    p.im = fill_im;
    return fcg_make(ctx, FCG_OP_STENCIL2D, t, t, false, 2, (int64_t[]){oh, ow}, 2, in, &p);
}

fc_array *fc_stencil2d(fc_array *x, fc_array *w) {
    if (!x || !w || x->ndim != 2 || w->ndim != 2)
        return fcg_stencil2d(x, w, 0, 0, 0, 0, FC_CONV_FILL, 0, 0); /* its errors */
    int64_t kh = w->shape[0], kw = w->shape[1];
    return fcg_stencil2d(x, w, x->shape[0] + kh - 1, x->shape[1] + kw - 1, kh ? kh - 1 : 0,
                         kw ? kw - 1 : 0, FC_CONV_FILL, 0, 0);
}

/* ---- the FFT method ---------------------------------------------------------------------- */

/* The rows (axis 0) or columns (axis 1) r0 .. r0 + n - 1 of x extended past its edges by
 * the boundary: a slice where they lie inside, else a gather (fill: clipped, the mask of the
 * rows inside returned through *inside for the caller's where). */
static fc_array *extend_axis(fc_ctx *ctx, fc_array *x, int axis, int64_t r0, int64_t n,
                             int boundary, fc_array **inside) {
    int64_t len = x->shape[axis];
    *inside = NULL;
    if (r0 >= 0 && r0 + n <= len) return fcg_slice_axis(x, axis, r0, r0 + n, 1);
    fc_array *r = fc_arange(ctx, FC_I64, (double)r0, (double)(r0 + n), 1.0);
    fc_array *len_a = fc_i64(ctx, len);
    fc_array *idx = r;
    fc_take_mode mode = FC_TAKE_CLIP;
    if (boundary == FC_CONV_WRAP) {
        mode = FC_TAKE_WRAP;
    } else if (boundary == FC_CONV_SYMM) {
        fc_array *q = fc_mod(r, fc_i64(ctx, 2 * len)); /* Python's modulo: 0 <= q < 2 len */
        idx = fc_where(fc_less(q, len_a), q, fc_sub(fc_i64(ctx, 2 * len - 1), q));
    } else {
        *inside = fc_logical_and(fc_greater_equal(r, fc_i64(ctx, 0)), fc_less(r, len_a));
        if (axis == 0) *inside = fc_expand_dims(*inside, 1);
    }
    return fc_take(x, idx, axis, mode);
}

/* The correlation of x with w at origin (oy, ox), shape [oh, ow], through the FFT, in dtype
 * t (an inexact one; the caller casts integers). Called inside the caller's scope. */
static fc_array *fft_correlate(fc_ctx *ctx, fc_array *x, fc_array *w, int64_t oh, int64_t ow,
                               int64_t oy, int64_t ox, int boundary, double fre, double fim) {
    const int64_t k[2] = {w->shape[0], w->shape[1]}, o[2] = {oy, ox}, sz[2] = {oh, ow};
    /* With a zero fill the FFT's own zero padding is the boundary: x as it is, row 0 at
     * row 0. Otherwise x extended over exactly the rows and columns the output reads. */
    bool zero_fill = boundary == FC_CONV_FILL && fre == 0 && fim == 0;
    fc_array *xe = x;
    int64_t r0[2] = {0, 0}, e[2] = {x->shape[0], x->shape[1]};
    if (!zero_fill) {
        fc_array *inside[2];
        for (int d = 0; d < 2; d++) {
            r0[d] = -o[d];
            e[d] = sz[d] + k[d] - 1;
            xe = extend_axis(ctx, xe, d, r0[d], e[d], boundary, &inside[d]);
        }
        if (inside[0] || inside[1]) {
            fc_array *mask = !inside[0] ? inside[1] : !inside[1] ? inside[0]
                                                               : fc_logical_and(inside[0], inside[1]);
            fc_array *fill = fcg_is_complex((fc_dtype)x->dtype) ? fc_c128(ctx, fre, fim)
                                                                : fc_f64(ctx, fre);
            xe = fc_where(mask, xe, fill);
        }
    }
    /* Linear correlation L[p] = sum w[m] xe[p - (K - 1) + m]; output i is L[s0 + i]. A
     * circular one of length n equals L there when n >= s0 + oh and n >= len(L) - s0. */
    int64_t s0[2], n[2];
    for (int d = 0; d < 2; d++) {
        s0[d] = k[d] - 1 - o[d] - r0[d];
        int64_t need = s0[d] + sz[d], tail = e[d] + k[d] - 1 - s0[d];
        n[d] = fcg_fft_fast_len(need > tail ? need : tail);
    }
    fc_array *wf = fc_flip(w, FC_ALL);
    fc_axes axes = FC_AXES(0, 1);
    fc_array *y;
    if (fcg_is_complex((fc_dtype)x->dtype)) {
        fc_array *prod = fc_mul(fc_fftn(xe, 2, n, axes, FC_FFT_BACKWARD),
                                fc_fftn(wf, 2, n, axes, FC_FFT_BACKWARD));
        y = fc_ifftn(prod, 2, n, axes, FC_FFT_BACKWARD);
    } else {
        fc_array *prod = fc_mul(fc_rfftn(xe, 2, n, axes, FC_FFT_BACKWARD),
                                fc_rfftn(wf, 2, n, axes, FC_FFT_BACKWARD));
        y = fc_irfftn(prod, 2, n, axes, FC_FFT_BACKWARD);
    }
    y = fcg_slice_axis(y, 0, s0[0], s0[0] + oh, 1);
    return fcg_slice_axis(y, 1, s0[1], s0[1] + ow, 1);
}

/* The correlation of x with w (both of dtype t, 2-d) at origin (oy, ox), shape [oh, ow],
 * by the method asked or chosen. Called inside the caller's scope. */
static fc_array *correlate_core(fc_ctx *ctx, fc_array *x, fc_array *w, int64_t oh, int64_t ow,
                                int64_t oy, int64_t ox, int boundary, double fre, double fim,
                                fc_conv_method method) {
    fc_dtype t = (fc_dtype)x->dtype;
    int64_t kh = w->shape[0], kw = w->shape[1];
    bool fft = method == FC_CONV_FFT ||
               (method == FC_CONV_AUTO && fcg_conv_prefers_fft(t, oh, ow, kh, kw));
    /* Nothing to transform (or an input a boundary cannot extend): the node says what an
     * empty sum or an empty input gives, or why it cannot. */
    if (!fft || oh == 0 || ow == 0 || kh == 0 || kw == 0 || x->shape[0] == 0 ||
        x->shape[1] == 0)
        return fcg_stencil2d(x, w, oh, ow, oy, ox, boundary, fre, fim);
    if (fcg_is_inexact(t)) return fft_correlate(ctx, x, w, oh, ow, oy, ox, boundary, fre, fim);
    fc_array *y = fft_correlate(ctx, fc_cast(x, FC_F64), fc_cast(w, FC_F64), oh, ow, oy, ox,
                                boundary, fre, fim);
    return fc_cast(fc_rint(y), t);
}

/* ---- argument checks --------------------------------------------------------------------- */

static fc_array *bad_enums(fc_ctx *ctx, const char *name, fc_conv_mode mode, int boundary,
                           fc_conv_method method) {
    if ((unsigned)mode > FC_CONV_VALID)
        return fcg_poison(ctx, FC_ERR_VALUE, "%s: mode must be one of 'valid', 'same', or "
                          "'full' (got %d)", name, (int)mode);
    if ((unsigned)boundary > FC_CONV_SYMM)
        return fcg_poison(ctx, FC_ERR_VALUE, "%s: boundary must be one of 'fill', 'wrap' or "
                          "'symm' (got %d)", name, boundary);
    if ((unsigned)method > FC_CONV_FFT)
        return fcg_poison(ctx, FC_ERR_VALUE, "%s: method must be one of 'auto', 'direct' or "
                          "'fft' (got %d)", name, (int)method);
    return NULL;
}

/* ---- scipy.signal.convolve2d / correlate2d ------------------------------------------------ */

static fc_array *conv2d(const char *name, bool corr, fc_array *in1, fc_array *in2,
                        fc_conv_mode mode, fc_conv_boundary boundary, double fre, double fim,
                        fc_conv_method method) {
    fc_array *early, *in[2] = {in1, in2};
    fc_ctx *ctx = fcg_begin(name, 2, in, &early);
    if (!ctx || early) return early;
    char d1[FCG_DESC_MAX], d2[FCG_DESC_MAX];
    if ((early = bad_enums(ctx, name, mode, (int)boundary, method))) return early;
    if (in1->ndim != 2 || in2->ndim != 2)
        return fcg_poison(ctx, FC_ERR_SHAPE, "%s: inputs must both be 2-D arrays (%s, %s)", name,
                          fcg_desc(d1, in1), fcg_desc(d2, in2));
    fc_dtype t;
    fc_status st = fc_promote_types((fc_dtype)in1->dtype, (fc_dtype)in2->dtype, &t);
    if (st != FC_OK || !stencil_dtype(t))
        return fcg_poison(ctx, FC_ERR_DTYPE, "%s: not available for %s (%s, %s): SciPy computes "
                          "the integers, f32, f64, c64 and c128", name,
                          st == FC_OK ? fc_dtype_name(t) : "these dtypes", fcg_desc(d1, in1),
                          fcg_desc(d2, in2));
    if (!fill_value(ctx, name, t, &fre, &fim)) return fcg_poison_ctx(ctx, FC_ERR_VALUE);
    /* SciPy's _inputs_swap_needed: in valid mode the larger input slides over the smaller. */
    bool swap = false;
    if (mode == FC_CONV_VALID) {
        bool ok1 = in1->shape[0] >= in2->shape[0] && in1->shape[1] >= in2->shape[1];
        bool ok2 = in2->shape[0] >= in1->shape[0] && in2->shape[1] >= in1->shape[1];
        if (!ok1 && !ok2)
            return fcg_poison(ctx, FC_ERR_SHAPE, "%s: for 'valid' mode, one must be at least as "
                              "large as the other in every dimension (%s, %s)", name,
                              fcg_desc(d1, in1), fcg_desc(d2, in2));
        swap = !ok1;
    }
    fc_array *a = swap ? in2 : in1, *b = swap ? in1 : in2;
    int64_t sz[2], org[2];
    for (int d = 0; d < 2; d++) {
        int64_t h = a->shape[d], k = b->shape[d];
        sz[d] = mode == FC_CONV_FULL ? h + k - 1 : mode == FC_CONV_SAME ? h : h - k + 1;
        org[d] = mode == FC_CONV_FULL ? k - 1 : mode == FC_CONV_VALID ? 0
                 : corr ? (k - 1) / 2 : k / 2;
        if (k == 0) org[d] = 0; /* an empty sum: zeros wherever the window is */
        if (sz[d] < 0)
            return fcg_poison(ctx, FC_ERR_SHAPE, "%s: negative dimensions are not allowed (%s "
                              "mode of %s and %s)", name, fcg_conv_mode_names[mode],
                              fcg_desc(d1, in1), fcg_desc(d2, in2));
    }
    /* SciPy reads outside an empty in1 here (it crashes): refused, naming the function */
    if (boundary != FC_CONV_FILL && (a->shape[0] == 0 || a->shape[1] == 0) && sz[0] && sz[1] &&
        b->shape[0] && b->shape[1])
        return fcg_poison(ctx, FC_ERR_VALUE, "%s: boundary '%s' needs a non-empty in1 (%s)",
                          name, fcg_conv_boundary_names[boundary], fcg_desc(d1, a));
    fc_scope *scope = fc_scope_open(ctx);
    if (!scope) return fcg_poison(ctx, FC_ERR_NOMEM, "%s: out of memory", name);
    fc_array *x = fc_cast(a, t);
    fc_array *w = corr ? conj_of(fc_cast(b, t)) : fc_flip(fc_cast(b, t), FC_ALL);
    fc_array *r = correlate_core(ctx, x, w, sz[0], sz[1], org[0], org[1], (int)boundary, fre,
                                 fim, method);
    if (corr && swap) r = fc_flip(r, FC_ALL);
    return fcg_scope_return(ctx, scope, r);
}

fc_array *fc_convolve2d(fc_array *in1, fc_array *in2, fc_conv_mode mode,
                        fc_conv_boundary boundary, double fill_re, double fill_im,
                        fc_conv_method method) {
    return conv2d("convolve2d", false, in1, in2, mode, boundary, fill_re, fill_im, method);
}

fc_array *fc_correlate2d(fc_array *in1, fc_array *in2, fc_conv_mode mode,
                         fc_conv_boundary boundary, double fill_re, double fill_im,
                         fc_conv_method method) {
    return conv2d("correlate2d", true, in1, in2, mode, boundary, fill_re, fill_im, method);
}

/* ---- np.convolve / np.correlate ----------------------------------------------------------- */

/* np.convolve(a, v) (corr false) or np.correlate(a, v), as a correlation of 1-row arrays.
 * NumPy computes bool as the OR of ANDs and f16 in f32 (its dot loops): here through i64 and
 * f32, converted back. */
static fc_array *conv1d(const char *name, bool corr, fc_array *a, fc_array *v,
                        fc_conv_mode mode, fc_conv_method method) {
    fc_array *early, *in[2] = {a, v};
    fc_ctx *ctx = fcg_begin(name, 2, in, &early);
    if (!ctx || early) return early;
    char d1[FCG_DESC_MAX], d2[FCG_DESC_MAX];
    if ((early = bad_enums(ctx, name, mode, FC_CONV_FILL, method))) return early;
    for (int i = 0; i < 2; i++) {
        if (in[i]->ndim > 1 || (corr && in[i]->ndim == 0))
            return fcg_poison(ctx, FC_ERR_SHAPE, "%s: object %s for desired array (%s, %s): "
                              "1-d arrays only", name,
                              in[i]->ndim ? "too deep" : "of too small depth", fcg_desc(d1, a),
                              fcg_desc(d2, v));
        if (in[i]->ndim == 1 && in[i]->shape[0] == 0)
            return fcg_poison(ctx, FC_ERR_VALUE, "%s: %s cannot be empty", name,
                              corr ? (i ? "second array argument" : "first array argument")
                                   : (i ? "v" : "a"));
    }
    fc_dtype t;
    fc_status st = fc_promote_types((fc_dtype)a->dtype, (fc_dtype)v->dtype, &t);
    if (st != FC_OK)
        return fcg_poison(ctx, st, "%s: no common dtype for %s and %s", name, fcg_desc(d1, a),
                          fcg_desc(d2, v));
    fc_dtype ct = t == FC_BOOL ? FC_I64 : t == FC_F16 || t == FC_BF16 ? FC_F32 : t;
    int64_t m = a->ndim ? a->shape[0] : 1, n = v->ndim ? v->shape[0] : 1;
    /* The longer input slides. np.convolve swaps them (a convolution commutes); np.correlate
     * computes correlate(v, a) and reverses and conjugates it, which is c[k] again. */
    bool swap = n > m;
    fc_scope *scope = fc_scope_open(ctx);
    if (!scope) return fcg_poison(ctx, FC_ERR_NOMEM, "%s: out of memory", name);
    fc_array *x = fc_reshape(fc_cast(swap ? v : a, ct), FC_SHAPE(1, swap ? n : m));
    fc_array *k = fc_reshape(fc_cast(swap ? a : v, ct), FC_SHAPE(1, swap ? m : n));
    int64_t lx = swap ? n : m, lk = swap ? m : n;
    k = corr ? conj_of(k) : fc_flip(k, FC_ALL);
    /* NumPy's 'same' window starts at (lk - 1) / 2 of the full result for both. */
    int64_t len = mode == FC_CONV_FULL ? lx + lk - 1 : mode == FC_CONV_SAME ? lx : lx - lk + 1;
    int64_t org = mode == FC_CONV_FULL ? lk - 1 : mode == FC_CONV_SAME ? lk / 2 : 0;
    fc_array *r = correlate_core(ctx, x, k, 1, len, 0, org, FC_CONV_FILL, 0, 0, method);
    r = fc_reshape(r, FC_SHAPE(len));
    if (corr && swap) r = conj_of(fc_flip(r, FC_ALL));
    if (ct != t) r = t == FC_BOOL ? fc_not_equal(r, fc_i64(ctx, 0)) : fc_cast(r, t);
    return fcg_scope_return(ctx, scope, r);
}

fc_array *fc_convolve(fc_array *a, fc_array *v, fc_conv_mode mode, fc_conv_method method) {
    return conv1d("convolve", false, a, v, mode, method);
}

fc_array *fc_correlate(fc_array *a, fc_array *v, fc_conv_mode mode, fc_conv_method method) {
    return conv1d("correlate", true, a, v, mode, method);
}
