/*
 * graph/fft.c - the discrete Fourier transforms: np.fft's functions, built from one library
 * node (FFTN, cuFFT on the GPU) and views and elementwise ops around it.
 *
 * The node is an unscaled transform over a run of up to three adjacent axes, of one of
 * cuFFT's four kinds: complex forward and inverse, real-to-complex (R2C) and complex-to-real
 * (C2R). Its input is complex of the result's dtype, or real for R2C: NumPy 2 computes a
 * float16 or float32 input in complex64 and every other real or integer input in complex128,
 * so an input of another dtype becomes a CAST node first, which fuses into whatever kernel
 * produces it. So the real transforms are cuFFT's own (half the work and traffic of a complex
 * transform of the same data), a 2-D or 3-D transform is one plan, and nothing is built
 * around the call that a kernel beside it cannot absorb:
 *   - n (crop or zero-pad an axis first) is a view of the input;
 *   - norm's factor (1/sqrt(n) or 1/n, as NumPy computes it: in result_type(a.real, 1.0),
 *     so rounded to f16 for an f16 input, f32 for f32 and c64, f64 otherwise) is a
 *     multiplication after the transform, one per axis as NumPy's loop over axes applies them
 *     (NumPy's pocketfft scales inside; the two differ by a rounding);
 *   - irfft reads n/2 + 1 points and ignores the imaginary parts of the first and, for an
 *     even n, the last, as pocketfft's c2r does (the node's contract; the host reference
 *     builds the Hermitian spectrum, cuFFT's C2R assumes it);
 *   - hfft is irfft of conj(a) with norm's direction swapped, ihfft conj(rfft) likewise.
 * fftn and its kin transform every axis of one adjacent run in one node; axes named twice
 * (NumPy transforms such an axis twice) go one axis at a time, as NumPy's loop does.
 */
#include "graph.h"

#include <math.h>
#include <string.h>

/* The complex dtype an input of dtype t is transformed in (NumPy 2: c64 for f16, bf16, f32 and
 * c64, else c128). */
static fc_dtype fft_dtype(fc_dtype t) {
    return t == FC_F16 || t == FC_BF16 || t == FC_F32 || t == FC_C64 ? FC_C64 : FC_C128;
}

/* 1 / n for an input of dtype t, as NumPy rounds it. */
static double fft_reciprocal(fc_dtype t, int64_t n) {
    /* NumPy 2: fct = reciprocal(n, dtype=result_type(a.real, 1.0)), with n converted to
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

/* The real dtype of the transform of an input of dtype t (NumPy's result_type(t.real, 1.0)
 * for its scale factors): f32 for f16, bf16, f32 and c64, f64 otherwise. */
static fc_dtype fft_real_dtype(fc_dtype t) { return fft_dtype(t) == FC_C64 ? FC_F32 : FC_F64; }

/* The FFTN node of x over the adjacent axes of `axes`, `axis` the last of them; n: C2R's
 * output points along axis. x is dense-shaped as the transform reads it: complex of the
 * result's dtype, real of its real dtype for R2C (the callers cast). */
static fc_array *transform(fc_ctx *ctx, fc_array *x, fcg_fft_kind kind, uint32_t axes, int axis,
                           int64_t n) {
    fcg_params p;
    memset(&p, 0, sizeof p);
    p.flag = (uint8_t)kind;
    p.axes = axes;
    p.axis = axis;
    fc_dtype t = (fc_dtype)x->dtype;
    int64_t shape[FC_MAX_DIMS];
    memcpy(shape, x->shape, sizeof shape);
    if (kind == FCG_FFT_R2C) {
        t = t == FC_F32 ? FC_C64 : FC_C128;
        shape[axis] = x->shape[axis] / 2 + 1;
    } else if (kind == FCG_FFT_C2R) {
        t = t == FC_C64 ? FC_F32 : FC_F64;
        shape[axis] = n;
    }
    return fcg_make(ctx, FCG_OP_FFTN, t, t, false, x->ndim, shape, 1, &x, &p);
}

/* y times norm's factor for one axis of len points, of a transform whose input had dtype st,
 * in the forward (inverse false) or inverse direction. */
static fc_array *fft_scale(fc_array *y, fc_dtype st, int64_t len, fc_fft_norm norm,
                           bool inverse) {
    bool scaled = inverse ? norm != FC_FFT_FORWARD : norm != FC_FFT_BACKWARD;
    if (!scaled || len < 1) return y;
    /* 1/sqrt(n) (ortho) or 1/n, rounded as NumPy rounds fct */
    double f;
    if (norm != FC_FFT_ORTHO) {
        f = fft_reciprocal(st, len);
    } else if (st == FC_F16 || st == FC_BF16) {
        bool h = st == FC_F16;
        float v = (float)len;
        v = h ? fcg_f16_to_f32(fcg_f32_to_f16(v)) : fcg_bf16_to_f32(fcg_f32_to_bf16(v));
        v = sqrtf(v);
        v = h ? fcg_f16_to_f32(fcg_f32_to_f16(v)) : fcg_bf16_to_f32(fcg_f32_to_bf16(v));
        v = 1.0f / v;
        f = h ? fcg_f16_to_f32(fcg_f32_to_f16(v)) : fcg_bf16_to_f32(fcg_f32_to_bf16(v));
    } else {
        f = fft_real_dtype(st) == FC_F32 ? 1.0f / sqrtf((float)len) : 1.0 / sqrt((double)len);
    }
    return fc_mul(y, fc_full(y->ctx, fft_real_dtype(st), FC_SCALAR, f));
}

/* a cropped or zero-padded at the end of `axis` (normalised) to n points. */
static fc_array *fft_resize(fc_array *a, int axis, int64_t n) {
    int64_t len = a->shape[axis];
    if (n < len) return fcg_slice_axis(a, axis, 0, n, 1);
    if (n == len) return a;
    int64_t w[FC_MAX_DIMS][2];
    memset(w, 0, sizeof w);
    w[axis][1] = n - len;
    return fc_pad(a, a->ndim, (const int64_t(*)[2])w, FC_PAD_CONSTANT, 0.0);
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

static fc_fft_norm fft_swap(fc_fft_norm norm) {
    return norm == FC_FFT_BACKWARD ? FC_FFT_FORWARD
           : norm == FC_FFT_FORWARD ? FC_FFT_BACKWARD
                                    : norm;
}

/* The complex transforms of x over the axes of mask, in runs of adjacent axes of at most
 * FCG_FFTN_MAX_RANK, one node each. */
static fc_array *complex_runs(fc_ctx *ctx, fc_array *x, uint32_t mask, bool inverse) {
    for (int d = 0; d < FC_MAX_DIMS && mask; d++) {
        if (!(mask >> d & 1)) continue;
        uint32_t run = 0;
        int last = d;
        while (last < FC_MAX_DIMS && (mask >> last & 1) && last - d < FCG_FFTN_MAX_RANK)
            run |= 1u << last++;
        x = transform(ctx, x, inverse ? FCG_FFT_C2C_INVERSE : FCG_FFT_C2C_FORWARD, run, last - 1,
                      0);
        mask &= ~run;
        d = last - 1;
    }
    return x;
}

/* The run of R2C / C2R: the real axis r and the adjacent axes of mask (the complex ones) below
 * it, at most FCG_FFTN_MAX_RANK in all (cuFFT halves a multi-dimensional plan's last axis). */
static uint32_t real_run(uint32_t mask, int r) {
    uint32_t run = 1u << r;
    for (int d = r - 1; d >= 0 && d > r - FCG_FFTN_MAX_RANK && (mask >> d & 1); d--) run |= 1u << d;
    return run;
}

/* The n-dimensional transforms: kind 0 fftn, 1 ifftn, 2 rfftn, 3 irfftn, 4 hfft, 5 ihfft (the
 * 1-d members reach here with one axis). ax[0..nax) are the axes (normalised, distinct) and
 * len[] their points (irfftn and hfft: the output's points along the last). The transforms'
 * order is NumPy's: fftn / ifftn from the last axis to the first, rfftn its real axis (the
 * last) first, irfftn and hfft it last; each axis's factor is computed for the dtype of the
 * array NumPy transforms it in (the input's for the first, its complex dtype after). */
static fc_array *transform_axes(fc_ctx *ctx, int kind, fc_array *a, int nax, const int *ax,
                                const int64_t *len, fc_fft_norm norm) {
    fc_dtype t0 = (fc_dtype)a->dtype, ct = fft_dtype(t0);
    int r = ax[nax - 1];
    bool to_real = kind == 3 || kind == 4, from_real = kind == 2 || kind == 5;
    fc_array *x = kind == 4 ? fc_conj(a) : a;
    /* the axes to transform: a transform of one point is the identity (x + 0j for R2C, the
     * real part for C2R), which no library call need make */
    uint32_t mask = 0;
    int64_t real_len = len[nax - 1];
    for (int i = 0; i < nax; i++) {
        x = fft_resize(x, ax[i], to_real && ax[i] == r ? len[i] / 2 + 1 : len[i]);
        if (len[i] > 1 && !((from_real || to_real) && ax[i] == r)) mask |= 1u << ax[i];
    }
    fc_array *y;
    if (from_real && real_len > 1) {
        uint32_t run = real_run(mask, r);
        y = transform(ctx, fc_cast(x, fft_real_dtype(t0)), FCG_FFT_R2C, run, r, 0);
        y = complex_runs(ctx, y, mask & ~run, false);
    } else if (to_real && real_len > 1) {
        uint32_t run = real_run(mask, r);
        y = complex_runs(ctx, fc_cast(x, ct), mask & ~run, true);
        y = transform(ctx, y, FCG_FFT_C2R, run, r, real_len);
    } else {
        y = complex_runs(ctx, fc_cast(x, ct), mask, kind == 1 || to_real);
        if (to_real) y = fc_real(y);
    }
    fc_fft_norm n2 = kind >= 4 ? fft_swap(norm) : norm;
    bool inverse = kind == 1 || to_real;
    for (int i = 0; i < nax; i++) {
        /* the axis NumPy transforms first sees the input's dtype */
        bool first = to_real ? (nax == 1 || i == 0) : i == nax - 1;
        y = fft_scale(y, first ? t0 : ct, len[i], n2, inverse);
    }
    if (kind == 5) y = fc_conj(y);
    /* a real output is result_type(a.real, 1.0) of the last transform's input: f16 stays f16
     * (computed wider) where that input is the caller's */
    if (to_real && nax == 1 && (t0 == FC_F16 || t0 == FC_BF16)) y = fc_cast(y, t0);
    return y;
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
    fc_array *r = transform_axes(ctx, kind, a, 1, &ax, &out_n, norm);
    return fcg_scope_return(ctx, scope, r);
}

/* np.fft.fft / ifft along one axis, n = None, norm = "backward". */
fc_array *fc_fft(fc_array *a, int axis) { return fft_family("fft", 0, a, 0, axis, FC_FFT_BACKWARD); }

fc_array *fc_ifft(fc_array *a, int axis) {
    return fft_family("ifft", 1, a, 0, axis, FC_FFT_BACKWARD);
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
 * lengths (irfftn: 2 (m - 1) for the last). */
static fc_array *fftn_family(const char *name, int kind, fc_array *a, int ns, const int64_t *s,
                             fc_axes axes, fc_fft_norm norm) {
    fc_array *early;
    fc_ctx *ctx = fcg_begin(name, 1, &a, &early);
    if (!ctx || early) return early;
    if (ns < 0 || ns > FC_MAX_DIMS || (ns > 0 && !s))
        return fcg_poison(ctx, ns > 0 && !s ? FC_ERR_NULL : FC_ERR_INVALID,
                          "%s: %d extents in s%s", name, ns, ns > 0 && !s ? ", s NULL" : "");
    if ((unsigned)norm > FC_FFT_FORWARD)
        return fcg_poison(ctx, FC_ERR_VALUE, "%s: invalid norm %d (backward, ortho or forward)",
                          name, (int)norm);
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
    if (kind == 2 && fcg_is_complex((fc_dtype)a->dtype))
        return fcg_poison(ctx, FC_ERR_DTYPE, "%s: the input must be real, not %s", name,
                          fc_dtype_name((fc_dtype)a->dtype));
    if ((kind == 2 || kind == 3) && nax == 0)
        return fcg_poison(ctx, FC_ERR_VALUE, "%s: at least one axis is needed", name);
    int64_t len[FC_MAX_DIMS];
    uint32_t seen = 0;
    bool repeated = false;
    for (int i = 0; i < nax; i++) {
        len[i] = ns ? s[i] : a->shape[ax[i]];
        if (!ns && kind == 3 && i == nax - 1) len[i] = 2 * (a->shape[ax[i]] - 1);
        if (len[i] < 1)
            return fcg_poison(ctx, FC_ERR_VALUE, "%s: invalid number of FFT data points (%lld) "
                              "specified", name, (long long)len[i]);
        repeated |= (seen >> ax[i] & 1) != 0;
        seen |= 1u << ax[i];
    }
    if (nax == 0) return fcg_ret(ctx, fc_keep(a)); /* NumPy: no axis, no transform */
    fc_scope *scope = fc_scope_open(ctx);
    if (!scope) return fcg_poison(ctx, FC_ERR_NOMEM, "%s: out of memory", name);
    fc_array *r = a;
    if (!repeated) {
        r = transform_axes(ctx, kind, a, nax, ax, len, norm);
    } else if (kind == 0 || kind == 1) { /* NumPy's loop, one axis at a time */
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
