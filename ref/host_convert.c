/*
 * ref/host_convert.c - dtype conversions (NumPy's cast rules) and strided iteration for the
 * host reference backend.
 */
#include "host.h"

#include <math.h>
#include <string.h>

/* Loads and stores through memcpy: strided data carries no alignment promise. */
#define LOAD(T, p) ({ T v_; memcpy(&v_, (p), sizeof(T)); v_; })
#define STORE(T, p, v) do { T v_ = (T)(v); memcpy((p), &v_, sizeof(T)); } while (0)
/* Element i of the run at p with the byte stride `stride` in scope. Signed: a stride is
 * negative for a flipped view, and `p + i * stride` with i a size_t is a wrapping unsigned
 * offset, undefined pointer arithmetic (clang's UBSan in fuzz/ reports it, gcc's does not). */
#define AT(p, i) ((p) + (int64_t)(i) * stride)

fch_kind fch_kind_of(fc_dtype t) {
    switch (t) {
    case FC_BOOL: return FCH_K_BOOL;
    case FC_I8: case FC_I16: case FC_I32: case FC_I64: return FCH_K_I64;
    case FC_U8: case FC_U16: case FC_U32: case FC_U64: return FCH_K_U64;
    case FC_F16: case FC_BF16: case FC_F32: return FCH_K_F32;
    case FC_F64: return FCH_K_F64;
    case FC_C64: return FCH_K_C64;
    default: return FCH_K_C128;
    }
}

size_t fch_kind_size(fch_kind k) {
    static const size_t sizes[] = {1, 8, 8, 4, 8, 8, 16};
    return sizes[k];
}

fch_wide fch_wide_of(fc_dtype t) {
    if (fcg_is_uint(t)) return FCH_W_U64;
    if (fcg_is_complex(t)) return FCH_W_C128;
    if (fcg_is_float(t)) return FCH_W_F64;
    return FCH_W_I64;
}

fch_wide fch_wide_of_kind(fch_kind k) {
    switch (k) {
    case FCH_K_BOOL: case FCH_K_I64: return FCH_W_I64;
    case FCH_K_U64: return FCH_W_U64;
    case FCH_K_F32: case FCH_K_F64: return FCH_W_F64;
    default: return FCH_W_C128;
    }
}

uint16_t fch_f64_to_f16(double d) {
    uint64_t b;
    memcpy(&b, &d, sizeof b);
    uint16_t sign = (uint16_t)((b >> 48) & 0x8000);
    uint64_t mag = b & 0x7fffffffffffffffULL;
    if (mag >= 0x7ff0000000000000ULL) /* inf, or NaN (quiet, payload dropped) */
        return (uint16_t)(sign | (mag == 0x7ff0000000000000ULL ? 0x7c00 : 0x7e00));
    int e = (int)(mag >> 52) - 1023;
    if (e > 15) return (uint16_t)(sign | 0x7c00);
    if (e < -25) return sign; /* below half the smallest subnormal */
    uint64_t mant = (mag & ((1ULL << 52) - 1)) | (1ULL << 52);
    int shift = e >= -14 ? 42 : 42 + (-14 - e); /* bits dropped from the 53-bit significand */
    uint64_t kept = mant >> shift, rem = mant & ((1ULL << shift) - 1), half = 1ULL << (shift - 1);
    kept += (uint64_t)((rem > half) | ((rem == half) & (unsigned)kept & 1u)); /* to even, no branch */
    if (e < -14) return (uint16_t)(sign | kept); /* subnormal; a carry makes the smallest normal */
    /* kept holds the implicit bit, so a carry out of the significand bumps the exponent */
    uint32_t h = ((uint32_t)(e + 14) << 10) + (uint32_t)kept;
    return (uint16_t)(sign | (h >= 0x7c00 ? 0x7c00 : h));
}

int64_t fch_f64_to_i64(double d) {
    if (isnan(d)) return 0;
    if (d >= 0x1p63) return INT64_MAX;
    if (d <= -0x1p63) return INT64_MIN;
    return (int64_t)d;
}

uint64_t fch_f64_to_u64(double d) {
    if (d >= 0x1p64) return UINT64_MAX;
    if (d >= 0x1p63) return (uint64_t)d;
    return (uint64_t)fch_f64_to_i64(d);
}

/* ---- wide values ------------------------------------------------------------------------ */

typedef fch_wide_val wide_val;

void fch_read_wide(fc_dtype t, const char *src, int64_t stride, size_t n, void *wide) {
    wide_val *w = wide;
    size_t i;
    switch (t) {
    case FC_BOOL: for (i = 0; i < n; i++) w[i].i = *AT(src, i) != 0; break;
    case FC_I8: for (i = 0; i < n; i++) w[i].i = LOAD(int8_t, AT(src, i)); break;
    case FC_I16: for (i = 0; i < n; i++) w[i].i = LOAD(int16_t, AT(src, i)); break;
    case FC_I32: for (i = 0; i < n; i++) w[i].i = LOAD(int32_t, AT(src, i)); break;
    case FC_I64: for (i = 0; i < n; i++) w[i].i = LOAD(int64_t, AT(src, i)); break;
    case FC_U8: for (i = 0; i < n; i++) w[i].u = LOAD(uint8_t, AT(src, i)); break;
    case FC_U16: for (i = 0; i < n; i++) w[i].u = LOAD(uint16_t, AT(src, i)); break;
    case FC_U32: for (i = 0; i < n; i++) w[i].u = LOAD(uint32_t, AT(src, i)); break;
    case FC_U64: for (i = 0; i < n; i++) w[i].u = LOAD(uint64_t, AT(src, i)); break;
    case FC_F16:
        for (i = 0; i < n; i++) w[i].f = fcg_f16_to_f32(LOAD(uint16_t, AT(src, i)));
        break;
    case FC_BF16:
        for (i = 0; i < n; i++) w[i].f = fcg_bf16_to_f32(LOAD(uint16_t, AT(src, i)));
        break;
    case FC_F32: for (i = 0; i < n; i++) w[i].f = LOAD(float, AT(src, i)); break;
    case FC_F64: for (i = 0; i < n; i++) w[i].f = LOAD(double, AT(src, i)); break;
    case FC_C64:
        for (i = 0; i < n; i++) {
            w[i].c[0] = LOAD(float, AT(src, i));
            w[i].c[1] = LOAD(float, AT(src, i) + 4);
        }
        break;
    default:
        for (i = 0; i < n; i++) {
            w[i].c[0] = LOAD(double, AT(src, i));
            w[i].c[1] = LOAD(double, AT(src, i) + 8);
        }
        break;
    }
}

static inline double wide_f64(fch_wide k, const wide_val *v) {
    switch (k) {
    case FCH_W_I64: return (double)v->i;
    case FCH_W_U64: return (double)v->u;
    case FCH_W_F64: return v->f;
    default: return v->c[0]; /* complex -> real drops the imaginary part, as NumPy */
    }
}

/* Direct int -> float rounding: going through double could round twice. */
static inline float wide_f32(fch_wide k, const wide_val *v) {
    switch (k) {
    case FCH_W_I64: return (float)v->i;
    case FCH_W_U64: return (float)v->u;
    case FCH_W_F64: return (float)v->f;
    default: return (float)v->c[0];
    }
}

static inline double wide_imag(fch_wide k, const wide_val *v) {
    return k == FCH_W_C128 ? v->c[1] : 0.0;
}

static inline bool wide_truth(fch_wide k, const wide_val *v) {
    switch (k) {
    case FCH_W_I64: return v->i != 0;
    case FCH_W_U64: return v->u != 0;
    case FCH_W_F64: return v->f != 0;
    default: return v->c[0] != 0 || v->c[1] != 0;
    }
}

/* Integer bits before truncation to the target width. */
static inline uint64_t wide_bits(fch_wide k, const wide_val *v, bool to_u64) {
    switch (k) {
    case FCH_W_I64: return (uint64_t)v->i;
    case FCH_W_U64: return v->u;
    case FCH_W_F64: return to_u64 ? fch_f64_to_u64(v->f) : (uint64_t)fch_f64_to_i64(v->f);
    default: return to_u64 ? fch_f64_to_u64(v->c[0]) : (uint64_t)fch_f64_to_i64(v->c[0]);
    }
}

/* Runs BODY with the class as the constant K_, so the wide_* helpers fold to one case and the
 * loop in BODY carries no switch. */
#define FOR_CLASS(k, BODY)                                                                       \
    do {                                                                                         \
        switch (k) {                                                                             \
        case FCH_W_I64: { const fch_wide K_ = FCH_W_I64; BODY; break; }                          \
        case FCH_W_U64: { const fch_wide K_ = FCH_W_U64; BODY; break; }                          \
        case FCH_W_F64: { const fch_wide K_ = FCH_W_F64; BODY; break; }                          \
        default: { const fch_wide K_ = FCH_W_C128; BODY; break; }                                \
        }                                                                                        \
    } while (0)

void fch_write_wide(fch_wide k, const void *wide, size_t n, fc_dtype t, char *dst,
                    int64_t stride) {
    const wide_val *w = wide;
    size_t i;
    switch (t) {
    case FC_BOOL:
        FOR_CLASS(k, for (i = 0; i < n; i++) *AT(dst, i) = (char)wide_truth(K_, &w[i]));
        break;
    case FC_I8: case FC_U8:
        FOR_CLASS(k, for (i = 0; i < n; i++)
                         STORE(uint8_t, AT(dst, i), wide_bits(K_, &w[i], false)));
        break;
    case FC_I16: case FC_U16:
        FOR_CLASS(k, for (i = 0; i < n; i++)
                         STORE(uint16_t, AT(dst, i), wide_bits(K_, &w[i], false)));
        break;
    case FC_I32: case FC_U32:
        FOR_CLASS(k, for (i = 0; i < n; i++)
                         STORE(uint32_t, AT(dst, i), wide_bits(K_, &w[i], false)));
        break;
    case FC_I64:
        FOR_CLASS(k, for (i = 0; i < n; i++)
                         STORE(uint64_t, AT(dst, i), wide_bits(K_, &w[i], false)));
        break;
    case FC_U64:
        FOR_CLASS(k, for (i = 0; i < n; i++)
                         STORE(uint64_t, AT(dst, i), wide_bits(K_, &w[i], true)));
        break;
    case FC_F16:
        FOR_CLASS(k, for (i = 0; i < n; i++)
                         STORE(uint16_t, AT(dst, i), fch_f64_to_f16(wide_f64(K_, &w[i]))));
        break;
    case FC_BF16: /* ml_dtypes rounds to f32 first */
        FOR_CLASS(k, for (i = 0; i < n; i++)
                         STORE(uint16_t, AT(dst, i), fcg_f32_to_bf16(wide_f32(K_, &w[i]))));
        break;
    case FC_F32:
        FOR_CLASS(k, for (i = 0; i < n; i++) STORE(float, AT(dst, i), wide_f32(K_, &w[i])));
        break;
    case FC_F64:
        FOR_CLASS(k, for (i = 0; i < n; i++) STORE(double, AT(dst, i), wide_f64(K_, &w[i])));
        break;
    case FC_C64:
        FOR_CLASS(k, for (i = 0; i < n; i++) {
            STORE(float, AT(dst, i), wide_f32(K_, &w[i]));
            STORE(float, AT(dst, i) + 4, (float)wide_imag(K_, &w[i]));
        });
        break;
    default:
        FOR_CLASS(k, for (i = 0; i < n; i++) {
            STORE(double, AT(dst, i), wide_f64(K_, &w[i]));
            STORE(double, AT(dst, i) + 8, wide_imag(K_, &w[i]));
        });
        break;
    }
}

void fch_gather(fc_dtype s, const char *src, int64_t stride, size_t n, fc_dtype l, void *out) {
    if (stride == 0 && n > 1) {
        /* a broadcast value (weak scalars, size-1 dims): convert once, then repeat it */
        size_t ks = fch_kind_size(fch_kind_of(l));
        fch_gather(s, src, 0, 1, l, out);
        for (size_t i = 1; i < n; i++) memcpy((char *)out + i * ks, out, ks);
        return;
    }
    wide_val w[FCH_CHUNK];
    char tmp[FCH_CHUNK * 16];
    if (s != l) {
        /* cast to the loop dtype's storage first: that is the value the loop sees */
        fch_read_wide(s, src, stride, n, w);
        size_t lsize = fc_dtype_size(l);
        fch_write_wide(fch_wide_of(s), w, n, l, tmp, (int64_t)lsize);
        src = tmp;
        stride = (int64_t)lsize;
    }
    size_t i;
    switch (l) {
    case FC_BOOL: {
        uint8_t *o = out;
        for (i = 0; i < n; i++) o[i] = *AT(src, i) != 0;
        break;
    }
    case FC_I8: case FC_I16: case FC_I32: case FC_I64:
    case FC_U8: case FC_U16: case FC_U32: case FC_U64:
        /* wide_val.i / .u is exactly int64_t / uint64_t, but the kind buffer is packed */
        fch_read_wide(l, src, stride, n, w);
        for (i = 0; i < n; i++) ((uint64_t *)out)[i] = w[i].u;
        break;
    case FC_F16: {
        float *o = out;
        for (i = 0; i < n; i++) o[i] = fcg_f16_to_f32(LOAD(uint16_t, AT(src, i)));
        break;
    }
    case FC_BF16: {
        float *o = out;
        for (i = 0; i < n; i++) o[i] = fcg_bf16_to_f32(LOAD(uint16_t, AT(src, i)));
        break;
    }
    case FC_F32: {
        float *o = out;
        for (i = 0; i < n; i++) o[i] = LOAD(float, AT(src, i));
        break;
    }
    case FC_F64: {
        double *o = out;
        for (i = 0; i < n; i++) o[i] = LOAD(double, AT(src, i));
        break;
    }
    case FC_C64: {
        float *o = out;
        for (i = 0; i < n; i++) {
            o[2 * i] = LOAD(float, AT(src, i));
            o[2 * i + 1] = LOAD(float, AT(src, i) + 4);
        }
        break;
    }
    default: {
        double *o = out;
        for (i = 0; i < n; i++) {
            o[2 * i] = LOAD(double, AT(src, i));
            o[2 * i + 1] = LOAD(double, AT(src, i) + 8);
        }
        break;
    }
    }
}

void fch_gather_wide(fc_dtype s, const char *src, int64_t stride, size_t n, fc_dtype l,
                     void *wide) {
    if (s == l) {
        fch_read_wide(s, src, stride, n, wide);
        return;
    }
    char tmp[FCH_CHUNK * 16];
    size_t lsize = fc_dtype_size(l);
    fch_read_wide(s, src, stride, n, wide);
    fch_write_wide(fch_wide_of(s), wide, n, l, tmp, (int64_t)lsize);
    fch_read_wide(l, tmp, (int64_t)lsize, n, wide);
}

void fch_store(fch_kind k, const void *buf, size_t n, fc_dtype d, char *dst, int64_t stride) {
    size_t i;
    /* the common case: the kind is the dtype's own C type */
    if (d == FC_F32 && k == FCH_K_F32) {
        for (i = 0; i < n; i++) STORE(float, AT(dst, i), ((const float *)buf)[i]);
        return;
    }
    if (d == FC_F64 && k == FCH_K_F64) {
        for (i = 0; i < n; i++) STORE(double, AT(dst, i), ((const double *)buf)[i]);
        return;
    }
    if (d == FC_BOOL && k == FCH_K_BOOL) {
        for (i = 0; i < n; i++) *AT(dst, i) = (char)((const uint8_t *)buf)[i];
        return;
    }
    wide_val w[FCH_CHUNK];
    switch (k) {
    case FCH_K_BOOL:
        for (i = 0; i < n; i++) w[i].i = ((const uint8_t *)buf)[i];
        break;
    case FCH_K_I64:
    case FCH_K_U64:
        for (i = 0; i < n; i++) w[i].u = ((const uint64_t *)buf)[i];
        break;
    case FCH_K_F32:
        for (i = 0; i < n; i++) w[i].f = ((const float *)buf)[i];
        break;
    case FCH_K_F64:
        for (i = 0; i < n; i++) w[i].f = ((const double *)buf)[i];
        break;
    case FCH_K_C64:
        for (i = 0; i < n; i++) {
            w[i].c[0] = ((const float *)buf)[2 * i];
            w[i].c[1] = ((const float *)buf)[2 * i + 1];
        }
        break;
    default:
        for (i = 0; i < n; i++) {
            w[i].c[0] = ((const double *)buf)[2 * i];
            w[i].c[1] = ((const double *)buf)[2 * i + 1];
        }
        break;
    }
    fch_write_wide(fch_wide_of_kind(k), w, n, d, dst, stride);
}

/* ---- strided iteration ------------------------------------------------------------------ */

void fch_contig_strides(int ndim, const int64_t *shape, size_t elsize, int64_t *strides) {
    int64_t s = (int64_t)elsize;
    for (int d = ndim - 1; d >= 0; d--) {
        strides[d] = s;
        s *= shape[d] > 0 ? shape[d] : 1;
    }
}

bool fch_next_line(int ndim, const int64_t *shape, int d, int64_t *idx) {
    for (int k = ndim - 1; k >= 0; k--) {
        if (k == d) continue;
        if (++idx[k] < shape[k]) return true;
        idx[k] = 0;
    }
    return false;
}

fc_status fch_iterate(int ndim, const int64_t *shape, int nops, char *const *bases,
                      const int64_t (*strides)[FC_MAX_DIMS], fch_run_fn fn, void *user) {
    int64_t sh[FC_MAX_DIMS];
    int64_t st[FCH_MAX_OPS][FC_MAX_DIMS];
    int nd = 0;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] == 0) return FC_OK;
        if (shape[d] == 1) continue;
        bool merge = nd > 0;
        for (int k = 0; k < nops && merge; k++)
            merge = st[k][nd - 1] == strides[k][d] * shape[d];
        if (merge) {
            sh[nd - 1] *= shape[d];
            for (int k = 0; k < nops; k++) st[k][nd - 1] = strides[k][d];
        } else {
            sh[nd] = shape[d];
            for (int k = 0; k < nops; k++) st[k][nd] = strides[k][d];
            nd++;
        }
    }
    char *p[FCH_MAX_OPS];
    int64_t inner[FCH_MAX_OPS];
    for (int k = 0; k < nops; k++) {
        p[k] = bases[k];
        inner[k] = nd > 0 ? st[k][nd - 1] : 0;
    }
    if (nd == 0) return fn(user, p, inner, 1);
    int64_t idx[FC_MAX_DIMS] = {0};
    for (;;) {
        fc_status s = fn(user, p, inner, sh[nd - 1]);
        if (s != FC_OK) return s;
        int d = nd - 2;
        for (; d >= 0; d--) {
            for (int k = 0; k < nops; k++) p[k] += st[k][d];
            if (++idx[d] < sh[d]) break;
            for (int k = 0; k < nops; k++) p[k] -= st[k][d] * sh[d];
            idx[d] = 0;
        }
        if (d < 0) return FC_OK;
    }
}

typedef struct copy_job {
    fc_dtype s, d;
    size_t ssize;
} copy_job;

static fc_status copy_run(void *user, char *const *ptrs, const int64_t *strides, int64_t n) {
    const copy_job *job = user;
    const char *src = ptrs[0];
    char *dst = ptrs[1];
    if (job->s == job->d) {
        if (strides[0] == (int64_t)job->ssize && strides[1] == (int64_t)job->ssize) {
            memcpy(dst, src, (size_t)n * job->ssize);
        } else {
            for (int64_t i = 0; i < n; i++)
                memcpy(dst + i * strides[1], src + i * strides[0], job->ssize);
        }
        return FC_OK;
    }
    wide_val w[FCH_CHUNK];
    for (int64_t i = 0; i < n; i += FCH_CHUNK) {
        size_t m = (size_t)(n - i < FCH_CHUNK ? n - i : FCH_CHUNK);
        fch_read_wide(job->s, src + i * strides[0], strides[0], m, w);
        fch_write_wide(fch_wide_of(job->s), w, m, job->d, dst + i * strides[1], strides[1]);
    }
    return FC_OK;
}

void fch_copy(int ndim, const int64_t *shape, fc_dtype s, const char *src, const int64_t *sstr,
              fc_dtype d, char *dst, const int64_t *dstr) {
    copy_job job = {s, d, fc_dtype_size(s)};
    int64_t strides[2][FC_MAX_DIMS];
    for (int i = 0; i < ndim; i++) {
        strides[0][i] = sstr[i];
        strides[1][i] = dstr[i];
    }
    char *bases[2] = {(char *)src, dst};
    (void)fch_iterate(ndim, shape, 2, bases, (const int64_t(*)[FC_MAX_DIMS])strides, copy_run,
                      &job);
}
