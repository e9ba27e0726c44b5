/*
 * ref/host_fft.c - the discrete Fourier transform of the host reference backend.
 *
 * The FFTN node (graph/fft.c builds every np.fft function from it): every line along a
 * transformed axis is gathered into double-precision complex values and transformed in
 * place, and the result is rounded once to the output's dtype. A power-of-two length is an iterative radix-2 transform; any other length
 * goes through Bluestein's algorithm (a chirp turns it into a circular convolution of
 * power-of-two length), so every length costs O(n log n) and keeps the radix-2 accuracy:
 * errors of a few ulps of double times log2(n), relative to the line's norm. Twiddles and
 * chirps are computed in long double from an exactly reduced argument, so they are correctly
 * rounded doubles for all practical lengths.
 *
 * Short lines of any other length (up to FFT_DIRECT_MAX) are a direct DFT in long double
 * instead: exact where the result is (fft of ones gives n and zeros, as NumPy's does).
 *
 * The inverse is conj(fft(conj(x))), unscaled: NumPy's factor is a multiplication after the
 * node (graph/fft.c).
 */
#include "host.h"

#include <math.h>
#include <string.h>

static const long double fft_pi = 3.141592653589793238462643383279502884L;

typedef fch_wide_val cval; /* the .c[0] / .c[1] pair */

#define FFT_DIRECT_MAX 128

/* What every line along the axis shares: one length's tables and scratch. */
typedef struct fft_plan {
    fc_ctx *ctx;
    int64_t n;     /* the transform's length */
    int64_t m;     /* the radix-2 length: n itself, or Bluestein's power of two >= 2n - 1 */
    int log2m;
    cval *tw;      /* m / 2 twiddles exp(-2 pi i j / m) */
    cval *chirp;   /* Bluestein: n values exp(-pi i k^2 / n) */
    cval *kernel;  /* Bluestein: the radix-2 transform of the conjugate chirp, circular, m */
    cval *work;    /* m values of scratch */
    long double *roots; /* direct DFT: n pairs exp(-2 pi i j / n) */
    size_t tw_bytes, chirp_bytes, kernel_bytes, work_bytes, roots_bytes;
} fft_plan;

static bool is_pow2(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

/* exp(-i theta) rounded once to double pairs. */
static cval expi_neg(long double theta) {
    cval v;
    v.c[0] = (double)cosl(theta);
    v.c[1] = (double)-sinl(theta);
    return v;
}

/* In place, forward (exp(-2 pi i jk / m)), length p->m, in natural order. */
static void radix2(const fft_plan *p, cval *x) {
    int64_t m = p->m;
    /* bit-reversal permutation */
    for (int64_t i = 1, j = 0; i < m; i++) {
        int64_t bit = m >> 1;
        for (; j & bit; bit >>= 1) j ^= bit;
        j |= bit;
        if (i < j) {
            cval t = x[i];
            x[i] = x[j];
            x[j] = t;
        }
    }
    for (int64_t len = 2; len <= m; len <<= 1) {
        int64_t half = len >> 1, step = m / len;
        for (int64_t s = 0; s < m; s += len)
            for (int64_t k = 0; k < half; k++) {
                const cval *w = &p->tw[k * step];
                cval *a = &x[s + k], *b = &x[s + k + half];
                double br = b->c[0] * w->c[0] - b->c[1] * w->c[1];
                double bi = b->c[0] * w->c[1] + b->c[1] * w->c[0];
                b->c[0] = a->c[0] - br;
                b->c[1] = a->c[1] - bi;
                a->c[0] += br;
                a->c[1] += bi;
            }
    }
}

static void plan_free(fft_plan *p) {
    if (p->tw) fcg_free(p->ctx, p->tw, p->tw_bytes);
    if (p->chirp) fcg_free(p->ctx, p->chirp, p->chirp_bytes);
    if (p->kernel) fcg_free(p->ctx, p->kernel, p->kernel_bytes);
    if (p->work) fcg_free(p->ctx, p->work, p->work_bytes);
    if (p->roots) fcg_free(p->ctx, p->roots, p->roots_bytes);
}

static fc_status plan_init(fft_plan *p, fc_ctx *ctx, int64_t n) {
    memset(p, 0, sizeof *p);
    p->ctx = ctx;
    p->n = n;
    p->m = 1;
    if (!is_pow2(n) && n <= FFT_DIRECT_MAX) {
        p->roots_bytes = (size_t)n * 2 * sizeof(long double);
        p->work_bytes = (size_t)n * sizeof(cval);
        p->roots = fcg_malloc(ctx, p->roots_bytes);
        p->work = fcg_malloc(ctx, p->work_bytes);
        if (!p->roots || !p->work) goto nomem;
        for (int64_t j = 0; j < n; j++) {
            long double th = 2 * fft_pi * (long double)j / (long double)n;
            p->roots[2 * j] = cosl(th);
            p->roots[2 * j + 1] = -sinl(th);
        }
        return FC_OK;
    }
    if (is_pow2(n)) {
        p->m = n;
    } else {
        while (p->m < 2 * n - 1) {
            if (p->m > INT64_MAX / 4) return fcg_error(ctx, FC_ERR_NOMEM, "fft: length %lld is "
                                                       "too large", (long long)n);
            p->m <<= 1;
        }
    }
    while ((int64_t)1 << p->log2m < p->m) p->log2m++;
    size_t m = (size_t)p->m, half = m > 1 ? m / 2 : 1;
    if (m > SIZE_MAX / (3 * sizeof(cval))) return fcg_error(ctx, FC_ERR_NOMEM, "fft: length "
                                                            "%lld is too large", (long long)n);
    p->tw_bytes = half * sizeof(cval);
    p->work_bytes = m * sizeof(cval);
    p->tw = fcg_malloc(ctx, p->tw_bytes);
    p->work = fcg_malloc(ctx, p->work_bytes);
    if (!p->tw || !p->work) goto nomem;
    for (size_t j = 0; j < m / 2; j++)
        p->tw[j] = expi_neg(2 * fft_pi * (long double)j / (long double)m);
    if (p->m == n) return FC_OK;

    /* Bluestein: jk = (j^2 + k^2 - (k - j)^2) / 2, so with w_k = exp(-pi i k^2 / n)
     * X_k = w_k * sum_j (x_j w_j) conj(w_{k-j}): a convolution with the conjugate chirp. */
    p->chirp_bytes = (size_t)n * sizeof(cval);
    p->kernel_bytes = m * sizeof(cval);
    p->chirp = fcg_malloc(ctx, p->chirp_bytes);
    p->kernel = fcg_calloc(ctx, p->kernel_bytes);
    if (!p->chirp || !p->kernel) goto nomem;
    /* k^2 mod 2n, kept exact by adding 2k - 1 each step: the angle stays below 2 pi */
    int64_t t = 0;
    for (int64_t k = 0; k < n; k++) {
        if (k) {
            t += 2 * k - 1;
            t %= 2 * n;
        }
        p->chirp[k] = expi_neg(fft_pi * (long double)t / (long double)n);
    }
    for (int64_t k = 0; k < n; k++) {
        cval c = p->chirp[k];
        c.c[1] = -c.c[1];
        p->kernel[k] = c;
        if (k) p->kernel[p->m - k] = c;
    }
    radix2(p, p->kernel);
    return FC_OK;
nomem:
    plan_free(p);
    return fcg_error(ctx, FC_ERR_NOMEM, "fft: out of memory (length %lld)", (long long)n);
}

/* The forward transform of x (n values) in place. */
static void transform(const fft_plan *p, cval *x) {
    if (p->roots) {
        int64_t n = p->n;
        for (int64_t k = 0; k < n; k++) {
            long double re = 0, im = 0;
            for (int64_t j = 0, r = 0; j < n; j++, r = r + k < n ? r + k : r + k - n) {
                long double c = p->roots[2 * r], s = p->roots[2 * r + 1];
                re += x[j].c[0] * c - x[j].c[1] * s;
                im += x[j].c[0] * s + x[j].c[1] * c;
            }
            p->work[k].c[0] = (double)re;
            p->work[k].c[1] = (double)im;
        }
        memcpy(x, p->work, (size_t)n * sizeof *x);
        return;
    }
    if (p->m == p->n) {
        radix2(p, x);
        return;
    }
    int64_t n = p->n, m = p->m;
    cval *a = p->work;
    for (int64_t j = 0; j < n; j++) {
        const cval *w = &p->chirp[j];
        a[j].c[0] = x[j].c[0] * w->c[0] - x[j].c[1] * w->c[1];
        a[j].c[1] = x[j].c[0] * w->c[1] + x[j].c[1] * w->c[0];
    }
    for (int64_t j = n; j < m; j++) a[j].c[0] = a[j].c[1] = 0.0;
    radix2(p, a);
    /* pointwise product, then the inverse as conj(fft(conj(.))) / m */
    for (int64_t j = 0; j < m; j++) {
        const cval *b = &p->kernel[j];
        double re = a[j].c[0] * b->c[0] - a[j].c[1] * b->c[1];
        double im = a[j].c[0] * b->c[1] + a[j].c[1] * b->c[0];
        a[j].c[0] = re;
        a[j].c[1] = -im;
    }
    radix2(p, a);
    double inv_m = 1.0 / (double)m; /* exact: m is a power of two */
    for (int64_t k = 0; k < n; k++) {
        double re = a[k].c[0] * inv_m, im = -a[k].c[1] * inv_m;
        const cval *w = &p->chirp[k];
        x[k].c[0] = re * w->c[0] - im * w->c[1];
        x[k].c[1] = re * w->c[1] + im * w->c[0];
    }
}

/* Wide values of any class as complex doubles, in place. */
static void to_complex(fch_wide k, cval *x, int64_t n) {
    if (k == FCH_W_C128) return;
    for (int64_t i = 0; i < n; i++) {
        double re = k == FCH_W_I64 ? (double)x[i].i : k == FCH_W_U64 ? (double)x[i].u : x[i].f;
        x[i].c[0] = re;
        x[i].c[1] = 0.0;
    }
}

/* Every line of the dense complex array w (shape, ndim) along axis d, transformed in place
 * (inverse: unscaled, conj(fft(conj(x)))). line: room for shape[d] values. */
static fc_status transform_lines(fc_ctx *ctx, cval *w, int ndim, const int64_t *shape, int d,
                                 bool inverse, cval *line) {
    int64_t n = shape[d], inner = 1, outer = 1;
    for (int k = 0; k < d; k++) outer *= shape[k];
    for (int k = d + 1; k < ndim; k++) inner *= shape[k];
    fft_plan p;
    fc_status st = plan_init(&p, ctx, n);
    if (st != FC_OK) return st;
    double sign = inverse ? -1.0 : 1.0;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            cval *base = w + o * n * inner + i;
            for (int64_t k = 0; k < n; k++) {
                line[k].c[0] = base[k * inner].c[0];
                line[k].c[1] = sign * base[k * inner].c[1];
            }
            transform(&p, line);
            for (int64_t k = 0; k < n; k++) {
                base[k * inner].c[0] = line[k].c[0];
                base[k * inner].c[1] = sign * line[k].c[1];
            }
        }
    plan_free(&p);
    return FC_OK;
}

/* The byte offset of the line through idx (its entry along the line's axis is 0) in an
 * array of byte strides str. */
static int64_t line_offset(int ndim, const int64_t *idx, const int64_t *str) {
    int64_t off = 0;
    for (int k = 0; k < ndim; k++) off += idx[k] * str[k];
    return off;
}

/* An FFTN node (graph/fft.c says what each kind computes), in double-precision complex
 * scratch of the transformed shape: the input's lines along the real axis (R2C: transformed,
 * n/2 + 1 kept) or along its last axis come in, the complex axes transform in place, and the
 * lines go out (C2R: each line's Hermitian spectrum transformed, its real part kept). */
fc_status fch_fft(fc_ctx *ctx, const fc_array *a, const char *in, const int64_t *in_strides,
                  char *out) {
    const fc_array *x = a->in[0];
    fcg_fft_kind kind = (fcg_fft_kind)a->p.flag;
    int r = a->p.axis, nd = a->ndim;
    fc_dtype src = (fc_dtype)x->dtype, dst = (fc_dtype)a->dtype;
    if (a->op != FCG_OP_FFTN || kind > FCG_FFT_C2R || r < 0 || r >= nd ||
        !(a->p.axes >> r & 1) || (a->p.axes >> nd) != 0)
        return fcg_error(ctx, FC_ERR_UNSUPPORTED, "%s: bad node (kind %d, axes %#x, axis %d; "
                         "fusec bug)", fcg_ops[a->op].pyname, (int)kind, a->p.axes, r);
    if (fcg_node_numel(a) == 0) return FC_OK;
    /* the scratch's shape: complex of the output's, or C2R's input's */
    const int64_t *ws = kind == FCG_FFT_C2R ? x->shape : a->shape;
    int64_t total = fcg_numel(nd, ws), longest = a->shape[r] > x->shape[r] ? a->shape[r]
                                                                          : x->shape[r];
    for (int k = 0; k < nd; k++) longest = ws[k] > longest ? ws[k] : longest;
    size_t w_bytes = (size_t)total * sizeof(cval), line_bytes = (size_t)longest * sizeof(cval);
    cval *w = fcg_malloc(ctx, w_bytes), *line = fcg_malloc(ctx, line_bytes);
    fc_status st = FC_OK;
    if (!w || !line) {
        st = fcg_error(ctx, FC_ERR_NOMEM, "%s: out of memory", fcg_ops[a->op].pyname);
        goto done;
    }
    int64_t wstr[FC_MAX_DIMS], ostr[FC_MAX_DIMS], idx[FC_MAX_DIMS] = {0};
    fch_contig_strides(nd, ws, sizeof(cval), wstr);
    fch_contig_strides(nd, a->shape, fc_dtype_size(dst), ostr);
    /* in: lines along r (R2C transforms each as it comes) or along the last axis */
    int ld = kind == FCG_FFT_R2C ? r : nd - 1;
    int64_t n_in = x->shape[ld];
    fch_wide wk = fch_wide_of(src);
    fft_plan p;
    if (kind == FCG_FFT_R2C && (st = plan_init(&p, ctx, n_in)) != FC_OK) goto done;
    do {
        fch_read_wide(src, in + line_offset(nd, idx, in_strides), in_strides[ld], (size_t)n_in,
                      line);
        to_complex(wk, line, n_in);
        if (kind == FCG_FFT_R2C) transform(&p, line);
        cval *dstw = (cval *)((char *)w + line_offset(nd, idx, wstr));
        int64_t step = wstr[ld] / (int64_t)sizeof(cval);
        for (int64_t k = 0; k < ws[ld]; k++) dstw[k * step] = line[k];
    } while (fch_next_line(nd, x->shape, ld, idx));
    if (kind == FCG_FFT_R2C) plan_free(&p);
    /* the complex axes */
    bool inverse = kind == FCG_FFT_C2C_INVERSE || kind == FCG_FFT_C2R;
    for (int d = 0; d < nd && st == FC_OK; d++)
        if ((a->p.axes >> d & 1) && (d != r || kind == FCG_FFT_C2C_FORWARD ||
                                     kind == FCG_FFT_C2C_INVERSE))
            st = transform_lines(ctx, w, nd, ws, d, inverse, line);
    if (st != FC_OK) goto done;
    memset(idx, 0, sizeof idx);
    if (kind != FCG_FFT_C2R) {
        do {
            const cval *srcw = (const cval *)((char *)w + line_offset(nd, idx, wstr));
            int64_t step = wstr[nd - 1] / (int64_t)sizeof(cval);
            for (int64_t k = 0; k < ws[nd - 1]; k++) line[k] = srcw[k * step];
            fch_write_wide(FCH_W_C128, line, (size_t)ws[nd - 1], dst,
                           out + line_offset(nd, idx, ostr), ostr[nd - 1]);
        } while (fch_next_line(nd, ws, nd - 1, idx));
        goto done;
    }
    /* C2R along r: a[0..m) and the mirror conj(a[n - k]) for k > m - 1; the imaginary parts
     * of a[0] and, for an even n, a[n/2] count for nothing (their share of a real line) */
    int64_t n = a->shape[r], m = x->shape[r];
    if ((st = plan_init(&p, ctx, n)) != FC_OK) goto done;
    do {
        const cval *srcw = (const cval *)((char *)w + line_offset(nd, idx, wstr));
        int64_t step = wstr[r] / (int64_t)sizeof(cval);
        for (int64_t k = 0; k < n; k++) {
            int64_t j = k < m ? k : n - k;
            cval v = srcw[j * step]; /* j < m: n - k <= n - m < m for k >= m */
            if (k == 0 || 2 * k == n) v.c[1] = 0.0;
            else if (k >= m) v.c[1] = -v.c[1];
            /* inverse, unscaled: conj(fft(conj(line))) */
            line[k].c[0] = v.c[0];
            line[k].c[1] = -v.c[1];
        }
        transform(&p, line); /* the real part, .f: conj changes none of it */
        fch_write_wide(FCH_W_F64, line, (size_t)n, dst, out + line_offset(nd, idx, ostr),
                       ostr[r]);
    } while (fch_next_line(nd, x->shape, r, idx));
    plan_free(&p);
done:
    if (w) fcg_free(ctx, w, w_bytes);
    if (line) fcg_free(ctx, line, line_bytes);
    return st;
}
