/*
 * graph/fft.c - the discrete Fourier transform ops (library calls): fc_fft, fc_ifft.
 *
 * np.fft.fft / np.fft.ifft with n = None and norm = "backward" along one axis. The node's
 * input is always complex of the result's dtype: NumPy 2 computes a float16 or float32 input
 * in complex64 and every other real or integer input in complex128, so a real input becomes a
 * CAST node first. The cast then fuses into whatever kernel produces the input, and the
 * library call (cuFFT on the GPU) is a plain complex-to-complex transform.
 *
 * ifft's 1/n is NumPy's too, rounded as NumPy rounds it: in the input's real dtype (f16 for an
 * f16 input, f32 for f32 and c64, f64 otherwise). It depends on the dtype before the cast, so
 * the node keeps it (p.re), and the printer writes the uncast input where the cast is the one
 * fc_ifft would insert.
 */
#include "graph.h"

#include <string.h>

fc_dtype fcg_fft_dtype(fc_dtype t) {
    return t == FC_F16 || t == FC_BF16 || t == FC_F32 || t == FC_C64 ? FC_C64 : FC_C128;
}

double fcg_ifft_scale(fc_dtype t, int64_t n) {
    /* NumPy 2: fct = reciprocal(n, dtype=result_type(a.real.dtype, 1.0)), with n converted to
     * that dtype first; half's reciprocal is computed in float and rounded. bf16 follows its
     * f16 twin (ml_dtypes has no reciprocal loop). */
    switch (t) {
    case FC_F16:
        return fcg_f16_to_f32(fcg_f32_to_f16(1.0f / fcg_f16_to_f32(fcg_f32_to_f16((float)n))));
    case FC_BF16:
        return fcg_bf16_to_f32(fcg_f32_to_bf16(1.0f / fcg_bf16_to_f32(fcg_f32_to_bf16((float)n))));
    case FC_F32:
    case FC_C64: return 1.0f / (float)n;
    default: return 1.0 / (double)n;
    }
}

static fc_array *fft_node(fcg_op op, fc_array *a, int axis) {
    const char *name = fcg_ops[op].pyname;
    fc_array *early;
    fc_ctx *ctx = fcg_begin(name, 1, &a, &early);
    if (!ctx || early) return early;
    char sh[200];
    if (axis < -a->ndim || axis >= a->ndim)
        return fcg_poison(ctx, FC_ERR_AXIS, "%s: axis %d is out of bounds for an array of "
                          "dimension %d (%s %s)", name, axis, a->ndim,
                          fcg_shape_str(sh, a->ndim, a->shape), fc_dtype_name((fc_dtype)a->dtype));
    if (axis < 0) axis += a->ndim;
    if (a->shape[axis] < 1)
        return fcg_poison(ctx, FC_ERR_SHAPE, "%s: invalid number of data points (0) along axis "
                          "%d of %s (%s)", name, axis, fcg_shape_str(sh, a->ndim, a->shape),
                          fc_dtype_name((fc_dtype)a->dtype));
    fc_dtype t = (fc_dtype)a->dtype, r = fcg_fft_dtype(t);
    fcg_params p;
    memset(&p, 0, sizeof p);
    p.axis = axis;
    if (op == FCG_OP_IFFT) p.re = fcg_ifft_scale(t, a->shape[axis]);
    /* The cast is ours alone (no scope takes it); the node holds its own reference. A cast to
     * the array's own dtype is the array itself. */
    fc_scope *saved = ctx->scope;
    ctx->scope = NULL;
    fc_array *x = fc_cast(a, r);
    ctx->scope = saved;
    if (x->status != FC_OK) return fcg_ret(ctx, x);
    /* fcg_make checks the size too: a real input widens to complex. */
    fc_array *node = fcg_make(ctx, op, r, r, false, a->ndim, a->shape, 1, &x, &p);
    fcg_release(x);
    return node;
}

fc_array *fc_fft(fc_array *a, int axis) { return fft_node(FCG_OP_FFT, a, axis); }

fc_array *fc_ifft(fc_array *a, int axis) { return fft_node(FCG_OP_IFFT, a, axis); }

/* ---- the np.fft family, composed of the two transforms ---------------------------------- *
 *
 * n (crop or zero-pad an axis first), norm, the real transforms, the n-dimensional ones, the
 * frequencies and the shifts, as NumPy 2's numpy/fft defines them, built from fc_fft /
 * fc_ifft and views and elementwise ops, so that the pre- and post-processing fuse with the
 * kernels around the library call. The real transforms use the complex one: rfft is fft's
 * first n/2 + 1 outputs, irfft is the real part of ifft of the Hermitian spectrum the input
 * stands for (a[0..n/2] then conj(a[(n-1)/2..1])), which ignores the imaginary parts of a[0]
 * and, for an even n, a[n/2], as pocketfft's c2r does. Scale factors are NumPy's:
 * 1/sqrt(n) or 1/n rounded to the transform's real dtype, applied as a multiplication after
 * the transform (NumPy's pocketfft applies it inside; the two differ by a rounding). */

/* a cropped or zero-padded at the end of `axis` (normalised) to n points. */
static fc_array *fft_resize(fc_array *a, int axis, int64_t n) {
    int64_t len = a->shape[axis];
    if (n < len) return fcg_slice_axis(a, axis, 0, n, 1);
    if (n == len) return fc_reshape(a, fc_array_shape(a)); /* a itself, as a new reference */
    int64_t w[FC_MAX_DIMS][2];
    memset(w, 0, sizeof w);
    w[axis][1] = n - len;
    return fc_pad(a, a->ndim, (const int64_t(*)[2])w, FC_PAD_CONSTANT, 0.0);
}

/* The real dtype of the transform of an input of dtype t (NumPy's result_type(t.real, 1.0)
 * for its scale factors): f32 for f16, bf16, f32 and c64, f64 otherwise. */
static fc_dtype fft_real_dtype(fc_dtype t) { return fcg_fft_dtype(t) == FC_C64 ? FC_F32 : FC_F64; }

/* 1/sqrt(n) (ortho) or 1/n (the scaled direction of forward / backward) for an input of dtype
 * t, as NumPy computes fct: in result_type(t.real, 1.0), so rounded to f16 for an f16 input
 * (sqrt and reciprocal each; bf16 follows its f16 twin, as fcg_ifft_scale), f32 for f32 and
 * c64, f64 otherwise. */
static double fft_factor(fc_dtype t, int64_t n, bool root) {
    if (!root) return fcg_ifft_scale(t, n);
    if (t == FC_F16 || t == FC_BF16) {
        bool h = t == FC_F16;
        float v = (float)n;
        v = h ? fcg_f16_to_f32(fcg_f32_to_f16(v)) : fcg_bf16_to_f32(fcg_f32_to_bf16(v));
        v = sqrtf(v);
        v = h ? fcg_f16_to_f32(fcg_f32_to_f16(v)) : fcg_bf16_to_f32(fcg_f32_to_bf16(v));
        v = 1.0f / v;
        return h ? fcg_f16_to_f32(fcg_f32_to_f16(v)) : fcg_bf16_to_f32(fcg_f32_to_bf16(v));
    }
    if (fft_real_dtype(t) == FC_F32) return 1.0f / sqrtf((float)n);
    return 1.0 / sqrt((double)n);
}

static fc_array *fft_bad(fc_ctx *ctx, const char *name, const fc_array *a, int axis, int64_t n,
                         fc_fft_norm norm, int *ax) {
    char sh[200];
    if ((unsigned)norm > FC_FFT_FORWARD)
        return fcg_poison(ctx, FC_ERR_VALUE, "%s: invalid norm %d (backward, ortho or forward)",
                          name, (int)norm);
    if (axis < -a->ndim || axis >= a->ndim)
        return fcg_poison(ctx, FC_ERR_AXIS, "%s: axis %d is out of bounds for an array of "
                          "dimension %d (%s %s)", name, axis, a->ndim,
                          fcg_shape_str(sh, a->ndim, a->shape), fc_dtype_name((fc_dtype)a->dtype));
    *ax = axis < 0 ? axis + a->ndim : axis;
    if (n < 0)
        return fcg_poison(ctx, FC_ERR_VALUE, "%s: invalid number of FFT data points (%lld) "
                          "specified", name, (long long)n);
    return NULL;
}

/* fft or ifft of `a` resized to n (0: its length) along axis ax, normalised by norm with the
 * factor NumPy computes for an input of dtype st (irfft's is its caller's input, not the
 * spectrum it built). An unscaled inverse is conj(fft(conj(x))): the conjugations fuse into
 * the kernels on either side of the call, and the one scaling is NumPy's single
 * multiplication by its factor. */
static fc_array *fft_1d(fc_array *a, int64_t n, int ax, fc_fft_norm norm, bool inverse,
                        fc_dtype st) {
    int64_t len = n ? n : a->shape[ax];
    fc_array *x = n ? fft_resize(a, ax, n) : a;
    bool scaled = inverse ? norm != FC_FFT_FORWARD : norm != FC_FFT_BACKWARD;
    if (inverse && norm == FC_FFT_BACKWARD && st == (fc_dtype)a->dtype) return fc_ifft(x, ax);
    fc_array *y = inverse ? fc_conj(fc_fft(fc_conj(x), ax)) : fc_fft(x, ax);
    if (!scaled || len < 1) return y;
    return fc_mul(y, fc_full(a->ctx, fft_real_dtype(st), FC_SCALAR,
                             fft_factor(st, len, norm == FC_FFT_ORTHO)));
}

static fc_fft_norm fft_swap(fc_fft_norm norm) {
    return norm == FC_FFT_BACKWARD ? FC_FFT_FORWARD
           : norm == FC_FFT_FORWARD ? FC_FFT_BACKWARD
                                    : norm;
}

/* One of the 1-d members: kind 0 fft, 1 ifft, 2 rfft, 3 irfft, 4 hfft, 5 ihfft. */
static fc_array *fft_family(const char *name, int kind, fc_array *a, int64_t n, int axis,
                            fc_fft_norm norm) {
    fc_array *early;
    fc_ctx *ctx = fcg_begin(name, 1, &a, &early);
    if (!ctx || early) return early;
    int ax = 0;
    if ((early = fft_bad(ctx, name, a, axis, n, norm, &ax))) return early;
    bool cplx = fcg_is_complex((fc_dtype)a->dtype);
    if ((kind == 2 || kind == 5) && cplx)
        return fcg_poison(ctx, FC_ERR_DTYPE, "%s: the input must be real, not %s", name,
                          fc_dtype_name((fc_dtype)a->dtype));
    int64_t m = a->shape[ax];
    /* irfft / hfft: n output points from n/2 + 1 inputs, 2 (m - 1) by default */
    int64_t out_n = (kind == 3 || kind == 4) ? (n ? n : 2 * (m - 1)) : (n ? n : m);
    if (out_n < 1)
        return fcg_poison(ctx, FC_ERR_VALUE, "%s: invalid number of FFT data points (%lld) "
                          "specified", name, (long long)out_n);
    fc_scope *scope = fc_scope_open(ctx);
    if (!scope) return fcg_poison(ctx, FC_ERR_NOMEM, "%s: out of memory", name);
    fc_array *r;
    switch (kind) {
    case 0: r = fft_1d(a, n, ax, norm, false, (fc_dtype)a->dtype); break;
    case 1: r = fft_1d(a, n, ax, norm, true, (fc_dtype)a->dtype); break;
    case 2: case 5: { /* rfft: the first n/2 + 1 outputs; ihfft: conj(rfft), norm swapped */
        fc_array *f = fft_1d(a, n, ax, kind == 5 ? fft_swap(norm) : norm, false,
                             (fc_dtype)a->dtype);
        r = fcg_slice_axis(f, ax, 0, out_n / 2 + 1, 1);
        if (kind == 5) r = fc_conj(r);
        break;
    }
    default: { /* irfft, hfft (irfft of conj(a), norm swapped) */
        fc_dtype ct = fcg_fft_dtype((fc_dtype)a->dtype);
        fc_array *h = fft_resize(fc_cast(kind == 4 ? fc_conj(a) : a, ct), ax, out_n / 2 + 1);
        int64_t back = (out_n - 1) / 2; /* a[back], ..., a[1], conjugated */
        fc_array *full = h;
        if (back > 0) {
            fc_array *parts[2] = {h, fc_conj(fcg_slice_axis(h, ax, back, 0, -1))};
            full = fc_concatenate(ctx, parts, 2, ax);
        }
        r = fc_real(fft_1d(full, 0, ax, kind == 4 ? fft_swap(norm) : norm, true,
                           (fc_dtype)a->dtype));
        /* NumPy's real output is result_type(a.real, 1.0): f16 stays f16 (computed wider) */
        fc_dtype t = (fc_dtype)a->dtype;
        if (t == FC_F16 || t == FC_BF16) r = fc_cast(r, t);
        break;
    }
    }
    return fcg_scope_return(ctx, scope, r);
}

fc_array *fc_fft_n(fc_array *a, int64_t n, int axis, fc_fft_norm norm) {
    return fft_family("fft", 0, a, n, axis, norm);
}
fc_array *fc_ifft_n(fc_array *a, int64_t n, int axis, fc_fft_norm norm) {
    return fft_family("ifft", 1, a, n, axis, norm);
}
fc_array *fc_rfft(fc_array *a, int64_t n, int axis, fc_fft_norm norm) {
    return fft_family("rfft", 2, a, n, axis, norm);
}
fc_array *fc_irfft(fc_array *a, int64_t n, int axis, fc_fft_norm norm) {
    return fft_family("irfft", 3, a, n, axis, norm);
}
fc_array *fc_hfft(fc_array *a, int64_t n, int axis, fc_fft_norm norm) {
    return fft_family("hfft", 4, a, n, axis, norm);
}
fc_array *fc_ihfft(fc_array *a, int64_t n, int axis, fc_fft_norm norm) {
    return fft_family("ihfft", 5, a, n, axis, norm);
}

/* fftn and its kin: kind 0 fftn, 1 ifftn, 2 rfftn, 3 irfftn. NumPy's _cook_nd_args: axes
 * FC_ALL means the last len(s) axes (every axis when s is NULL); s NULL means the axes'
 * lengths (irfftn: 2 (m - 1) for the last). The complex transforms run from the last axis
 * to the first; rfftn does its real axis (the last) first, irfftn last. */
static fc_array *fftn_family(const char *name, int kind, fc_array *a, int ns, const int64_t *s,
                             fc_axes axes, fc_fft_norm norm) {
    fc_array *early;
    fc_ctx *ctx = fcg_begin(name, 1, &a, &early);
    if (!ctx || early) return early;
    if (ns < 0 || ns > FC_MAX_DIMS || (ns > 0 && !s))
        return fcg_poison(ctx, ns > 0 && !s ? FC_ERR_NULL : FC_ERR_INVALID,
                          "%s: %d extents in s%s", name, ns, ns > 0 && !s ? ", s NULL" : "");
    int ax[FC_MAX_DIMS], nax;
    if (axes.n < 0) {
        nax = ns ? ns : a->ndim;
        if (nax > a->ndim)
            return fcg_poison(ctx, FC_ERR_VALUE, "%s: s has %d extents for an array of "
                              "dimension %d", name, ns, a->ndim);
        for (int i = 0; i < nax; i++) ax[i] = a->ndim - nax + i;
    } else {
        nax = axes.n;
        if (nax > FC_MAX_DIMS || (ns && ns != nax))
            return fcg_poison(ctx, FC_ERR_VALUE, "%s: s and axes have different lengths "
                              "(%d and %d)", name, ns, nax);
        for (int i = 0; i < nax; i++) {
            if (axes.axis[i] < -a->ndim || axes.axis[i] >= a->ndim)
                return fcg_poison(ctx, FC_ERR_AXIS, "%s: axis %d is out of bounds for an array "
                                  "of dimension %d", name, axes.axis[i], a->ndim);
            ax[i] = axes.axis[i] < 0 ? axes.axis[i] + a->ndim : axes.axis[i];
        }
    }
    if ((kind == 2 || kind == 3) && nax == 0)
        return fcg_poison(ctx, FC_ERR_VALUE, "%s: at least one axis is needed", name);
    int64_t len[FC_MAX_DIMS];
    for (int i = 0; i < nax; i++) {
        len[i] = ns ? s[i] : a->shape[ax[i]];
        if (!ns && kind == 3 && i == nax - 1) len[i] = 2 * (a->shape[ax[i]] - 1);
        if (len[i] < 1)
            return fcg_poison(ctx, FC_ERR_VALUE, "%s: invalid number of FFT data points (%lld) "
                              "specified", name, (long long)len[i]);
    }
    fc_scope *scope = fc_scope_open(ctx);
    if (!scope) return fcg_poison(ctx, FC_ERR_NOMEM, "%s: out of memory", name);
    fc_array *r = a;
    if (kind == 0 || kind == 1) {
        for (int i = nax - 1; i >= 0; i--) r = fft_family(name, kind, r, len[i], ax[i], norm);
    } else if (kind == 2) {
        r = fft_family(name, 2, r, len[nax - 1], ax[nax - 1], norm);
        for (int i = nax - 2; i >= 0; i--) r = fft_family(name, 0, r, len[i], ax[i], norm);
    } else {
        for (int i = 0; i < nax - 1; i++) r = fft_family(name, 1, r, len[i], ax[i], norm);
        r = fft_family(name, 3, r, len[nax - 1], ax[nax - 1], norm);
    }
    return fcg_scope_return(ctx, scope, r);
}

fc_array *fc_fftn(fc_array *a, int ns, const int64_t *s, fc_axes axes, fc_fft_norm norm) {
    return fftn_family("fftn", 0, a, ns, s, axes, norm);
}
fc_array *fc_ifftn(fc_array *a, int ns, const int64_t *s, fc_axes axes, fc_fft_norm norm) {
    return fftn_family("ifftn", 1, a, ns, s, axes, norm);
}
fc_array *fc_rfftn(fc_array *a, int ns, const int64_t *s, fc_axes axes, fc_fft_norm norm) {
    return fftn_family("rfftn", 2, a, ns, s, axes, norm);
}
fc_array *fc_irfftn(fc_array *a, int ns, const int64_t *s, fc_axes axes, fc_fft_norm norm) {
    return fftn_family("irfftn", 3, a, ns, s, axes, norm);
}

/* np.fft.fftfreq / rfftfreq: integers times 1 / (n d), in f64. */
static fc_array *freq(fc_ctx *ctx, const char *name, int64_t n, double d, bool half) {
    if (!ctx) return NULL;
    if (n < 1 || !(d == d) || d == 0 || n > ((int64_t)1 << 48))
        return fcg_poison(ctx, FC_ERR_VALUE, "%s: n must be 1 to 2^48 and d a nonzero number "
                          "(n %lld, d %g)", name, (long long)n, d);
    fc_scope *scope = fc_scope_open(ctx);
    if (!scope) return fcg_poison(ctx, FC_ERR_NOMEM, "%s: out of memory", name);
    double val = 1.0 / ((double)n * d);
    int64_t pos = half ? n / 2 + 1 : (n - 1) / 2 + 1;
    fc_array *k = fc_arange(ctx, FC_I64, 0, (double)pos, 1);
    if (!half && n / 2 > 0) {
        fc_array *parts[2] = {k, fc_arange(ctx, FC_I64, -(double)(n / 2), 0, 1)};
        k = fc_concatenate(ctx, parts, 2, 0);
    }
    fc_array *r = fc_mul(fc_cast(k, FC_F64), fc_full(ctx, FC_F64, FC_SCALAR, val));
    return fcg_scope_return(ctx, scope, r);
}

fc_array *fc_fftfreq(fc_ctx *ctx, int64_t n, double d) {
    return freq(ctx, "fftfreq", n, d, false);
}
fc_array *fc_rfftfreq(fc_ctx *ctx, int64_t n, double d) {
    return freq(ctx, "rfftfreq", n, d, true);
}

/* np.fft.fftshift / ifftshift: a roll by n // 2 (ifftshift: -(n // 2)) along each axis (every
 * axis for FC_ALL). */
static fc_array *shift(const char *name, fc_array *a, fc_axes axes, bool inverse) {
    fc_array *early;
    fc_ctx *ctx = fcg_begin(name, 1, &a, &early);
    if (!ctx || early) return early;
    int n = axes.n < 0 ? a->ndim : axes.n, ax[FC_MAX_DIMS];
    int64_t by[FC_MAX_DIMS];
    if (n > FC_MAX_DIMS)
        return fcg_poison(ctx, FC_ERR_INVALID, "%s: %d axes", name, n);
    for (int i = 0; i < n; i++) {
        int v = axes.n < 0 ? i : axes.axis[i];
        if (v < -a->ndim || v >= a->ndim)
            return fcg_poison(ctx, FC_ERR_AXIS, "%s: axis %d is out of bounds for an array of "
                              "dimension %d", name, v, a->ndim);
        ax[i] = v < 0 ? v + a->ndim : v;
        by[i] = inverse ? -(a->shape[ax[i]] / 2) : a->shape[ax[i]] / 2;
    }
    return fc_roll_axes(a, n, by, ax);
}

fc_array *fc_fftshift(fc_array *a, fc_axes axes) { return shift("fftshift", a, axes, false); }
fc_array *fc_ifftshift(fc_array *a, fc_axes axes) { return shift("ifftshift", a, axes, true); }
