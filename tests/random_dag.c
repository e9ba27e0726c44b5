/*
 * tests/random_dag.c - random array programs through the public API (see random_dag.h).
 */
#include "random_dag.h"

#include <string.h>

/* ---- the elementwise ops of ops.def ----------------------------------------------------- */

/* The op table expanded once more: every EW op with a public constructor fc_<cname>, with its
 * arity. A function pointer of any type converts to void (*)(void) and back. */
typedef void (*rd_fn)(void);
typedef struct rd_ew {
    const char *name;
    int nin;
    rd_fn fn;
} rd_ew;

#define RD_KIND_EW(c, n) {#c, n, (rd_fn)fc_##c},
#define RD_KIND_EWX(c, n)
#define RD_KIND_SPECIAL(c, n)
#define RD_KIND_SOURCE(c, n)
#define RD_KIND_REDUCE(c, n)
#define RD_KIND_VIEW(c, n)
#define RD_KIND_LIB(c, n)
#define RD_KIND_USER(c, n)
#define RD_KIND_SCAN(c, n)
#define RD_KIND_GATHER(c, n)
#define RD_KIND_SCATTER(c, n)
static const rd_ew rd_ew_ops[] = {
#define FCG_OP(E, c, py, nin, kind, rule, infix, params, red) RD_KIND_##kind(c, nin)
#include "ops.def"
#undef FCG_OP
};
#undef RD_KIND_EW
#undef RD_KIND_EWX
#undef RD_KIND_SPECIAL
#undef RD_KIND_SOURCE
#undef RD_KIND_REDUCE
#undef RD_KIND_VIEW
#undef RD_KIND_LIB
#undef RD_KIND_USER
#undef RD_KIND_SCAN
#undef RD_KIND_GATHER
#undef RD_KIND_SCATTER
#define RD_N_EW ((int)(sizeof rd_ew_ops / sizeof rd_ew_ops[0]))

/* ---- the generator's state -------------------------------------------------------------- */

#define RD_POOL_MAX 128

typedef struct rd {
    fc_ctx *ctx;
    const rdag_options *o;
    uint64_t state;
    fc_array *pool[RD_POOL_MAX]; /* usable arrays, owned by the generator's scope */
    int npool;
    int ninputs;                 /* pool[0..ninputs) are the fc_from_host inputs */
    bool zero;                   /* this program has a zero extent (rdag.zero) */
    bool nomem;
} rd;

static uint64_t rd_next(rd *r) {
    uint64_t z = (r->state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
/* The side stream of a seed (one value): what it decides leaves the main stream alone. */
static uint64_t rd_side(uint64_t seed) {
    rd s;
    s.state = seed ^ 0x7a65726f2d657874ULL; /* "zero-ext" */
    return rd_next(&s);
}
/* Uniform in [0, n); n >= 1. */
static int rd_below(rd *r, int n) { return (int)(rd_next(r) % (uint64_t)n); }
static int rd_range(rd *r, int lo, int hi) { return lo + rd_below(r, hi - lo + 1); }
static bool rd_chance(rd *r, int percent) { return rd_below(r, 100) < percent; }
/* A value in [0, 1). */
static double rd_unit(rd *r) { return (double)(rd_next(r) >> 11) * 0x1p-53; }

static bool is_int(fc_dtype t) { return t >= FC_I8 && t <= FC_U64; }
static bool is_uint(fc_dtype t) { return t >= FC_U8 && t <= FC_U64; }
static bool is_complex(fc_dtype t) { return t == FC_C64 || t == FC_C128; }
static bool is_inexact(fc_dtype t) { return t >= FC_F16; }

static fc_dtype rd_dtype(rd *r) { return (fc_dtype)rd_below(r, FC_DTYPE_COUNT); }

static int64_t numel(const fc_shape *s) {
    int64_t n = 1;
    for (int d = 0; d < s->ndim; d++) n *= s->dim[d];
    return n;
}

/* NumPy broadcasting: axes align on the right; equal or 1. */
static bool broadcastable(const fc_shape *a, const fc_shape *b) {
    for (int k = 1; k <= a->ndim && k <= b->ndim; k++) {
        int64_t x = a->dim[a->ndim - k], y = b->dim[b->ndim - k];
        if (x != y && x != 1 && y != 1) return false;
    }
    return true;
}

/* ---- pool ------------------------------------------------------------------------------- */

/* Takes a new result: discards it (returns NULL) when it is poisoned or too big. A result
 * poisoned by out-of-memory stops the whole build. */
static fc_array *rd_accept(rd *r, fc_array *a) {
    fc_status st = fc_array_status(a);
    if (st == FC_ERR_NOMEM) r->nomem = true;
    if (st != FC_OK) return NULL;
    if (fc_array_size(a) > r->o->max_elements) return NULL;
    return a;
}

static void rd_push(rd *r, fc_array *a) {
    if (r->npool < RD_POOL_MAX) {
        r->pool[r->npool++] = a;
        return;
    }
    /* Full: replace a random non-input entry (keeps the pool's size bounded). */
    r->pool[r->ninputs + rd_below(r, RD_POOL_MAX - r->ninputs)] = a;
}

/* An operand: half the time one of the latest arrays (so chains grow deep), else any. */
static fc_array *rd_pick(rd *r) {
    if (rd_chance(r, 50)) {
        int recent = r->npool < 6 ? r->npool : 6;
        return r->pool[r->npool - 1 - rd_below(r, recent)];
    }
    return r->pool[rd_below(r, r->npool)];
}

/* ---- data ------------------------------------------------------------------------------- */

/* A random non-zero float of magnitude in [1/8, 4). */
static double rd_float(rd *r) {
    double m = 0.125 + rd_unit(r) * 3.875;
    return rd_chance(r, 50) ? -m : m;
}

/* IEEE binary16 / bfloat16 bits of a non-zero value of magnitude in [1/4, 4), built
 * directly (exponent and mantissa), so no conversion routine is needed. */
static uint16_t rd_f16_bits(rd *r) {
    uint16_t e = (uint16_t)rd_range(r, 13, 16), m = (uint16_t)rd_below(r, 1024);
    return (uint16_t)((rd_chance(r, 50) ? 0x8000u : 0u) | (unsigned)(e << 10) | m);
}
static uint16_t rd_bf16_bits(rd *r) {
    uint16_t e = (uint16_t)rd_range(r, 125, 128), m = (uint16_t)rd_below(r, 128);
    return (uint16_t)((rd_chance(r, 50) ? 0x8000u : 0u) | (unsigned)(e << 7) | m);
}

/* A non-zero integer: mostly small, sometimes any bit pattern (wrap-around paths). */
static int64_t rd_int(rd *r, fc_dtype t) {
    size_t bits = 8 * fc_dtype_size(t);
    if (rd_chance(r, 15)) {
        uint64_t v = rd_next(r);
        if (bits < 64) v &= (1ull << bits) - 1;
        if (v == 0) v = 1;
        if (!is_uint(t) && bits < 64 && (v >> (bits - 1))) v |= ~((1ull << bits) - 1);
        return (int64_t)v;
    }
    int64_t v = rd_range(r, 1, 9);
    return is_uint(t) || rd_chance(r, 50) ? v : -v;
}

static void rd_fill(rd *r, fc_dtype t, void *buf, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        switch (t) {
        case FC_BOOL: ((uint8_t *)buf)[i] = (uint8_t)rd_below(r, 2); break;
        case FC_I8: case FC_U8: ((int8_t *)buf)[i] = (int8_t)rd_int(r, t); break;
        case FC_I16: case FC_U16: ((int16_t *)buf)[i] = (int16_t)rd_int(r, t); break;
        case FC_I32: case FC_U32: ((int32_t *)buf)[i] = (int32_t)rd_int(r, t); break;
        case FC_I64: case FC_U64: ((int64_t *)buf)[i] = rd_int(r, t); break;
        case FC_F16: ((uint16_t *)buf)[i] = rd_f16_bits(r); break;
        case FC_BF16: ((uint16_t *)buf)[i] = rd_bf16_bits(r); break;
        case FC_F32: ((float *)buf)[i] = (float)rd_float(r); break;
        case FC_F64: ((double *)buf)[i] = rd_float(r); break;
        case FC_C64:
            ((float *)buf)[2 * i] = (float)rd_float(r);
            ((float *)buf)[2 * i + 1] = (float)rd_float(r);
            break;
        case FC_C128:
            ((double *)buf)[2 * i] = rd_float(r);
            ((double *)buf)[2 * i + 1] = rd_float(r);
            break;
        default: break;
        }
    }
}

/* Input shapes derive from one base shape (a suffix of it, some extents set to 1) so that
 * inputs broadcast together; a few are unrelated. */
static fc_shape rd_input_shape(rd *r, const fc_shape *base) {
    fc_shape s;
    memset(&s, 0, sizeof s);
    if (rd_chance(r, 15)) {
        s.ndim = rd_range(r, 0, 4);
        for (int d = 0; d < s.ndim; d++) s.dim[d] = rd_range(r, 1, r->o->max_extent);
        return s;
    }
    s.ndim = rd_range(r, 0, base->ndim);
    for (int d = 0; d < s.ndim; d++) {
        s.dim[d] = base->dim[base->ndim - s.ndim + d];
        if (rd_chance(r, 25)) s.dim[d] = 1;
    }
    return s;
}

/* full: the base shape itself (the first input of a program with a zero extent, so that
 * one input surely has it). */
static fc_array *rd_input(rd *r, const fc_shape *base, bool full) {
    fc_dtype t = rd_dtype(r);
    fc_shape s = full ? *base : rd_input_shape(r, base);
    /* Extents are at most max_extent (<= 16) and rank at most 4: at most 65536 elements. */
    static unsigned char buf[65536 * 16];
    int64_t n = numel(&s);
    if (n * (int64_t)fc_dtype_size(t) > (int64_t)sizeof buf) return NULL;
    rd_fill(r, t, buf, n);
    return rd_accept(r, fc_from_host(r->ctx, t, s, buf));
}

/* ---- scalars ---------------------------------------------------------------------------- */

static fc_array *rd_weak_scalar(rd *r) {
    switch (rd_below(r, 4)) {
    case 0: return fc_f64(r->ctx, rd_float(r));
    case 1: return fc_i64(r->ctx, rd_chance(r, 50) ? rd_range(r, 1, 5) : -rd_range(r, 1, 5));
    case 2: return fc_c128(r->ctx, rd_float(r), rd_float(r));
    default: return fc_bool(r->ctx, rd_chance(r, 50));
    }
}

/* A strongly typed 0-d scalar of a random dtype, with an integral value so that it is exact
 * in every dtype. */
static fc_array *rd_strong_scalar(rd *r) {
    fc_dtype t = rd_dtype(r);
    double v = rd_range(r, 1, 5);
    if (!is_uint(t) && t != FC_BOOL && rd_chance(r, 50)) v = -v;
    return fc_scalar(r->ctx, t, v);
}

/* ---- operands --------------------------------------------------------------------------- */

/* A second operand that broadcasts with a. */
static fc_array *rd_partner(rd *r, fc_array *a) {
    int c = rd_below(r, 100);
    if (c < 55) {
        fc_shape sa = fc_array_shape(a);
        int cand[RD_POOL_MAX], nc = 0;
        for (int i = 0; i < r->npool; i++) {
            fc_shape sb = fc_array_shape(r->pool[i]);
            if (broadcastable(&sa, &sb)) cand[nc++] = i;
        }
        if (nc) {
            /* Prefer recent ones too. */
            int j = rd_chance(r, 50) ? nc - 1 - rd_below(r, nc < 4 ? nc : 4) : rd_below(r, nc);
            return r->pool[cand[j]];
        }
    }
    if (c < 80) return rd_weak_scalar(r);
    if (c < 88) return rd_strong_scalar(r);
    if (c < 94 && r->o->reductions && fc_array_ndim(a) > 0) /* keepdims: broadcasts back */
        return fc_max(a, FC_AXES(rd_below(r, fc_array_ndim(a))), true);
    return a;
}

/* ---- elementwise ------------------------------------------------------------------------ */

static const rd_ew *rd_ew_of_arity(rd *r, int nin) {
    int cand[RD_N_EW], nc = 0;
    for (int i = 0; i < RD_N_EW; i++)
        if (rd_ew_ops[i].nin == nin) cand[nc++] = i;
    return nc ? &rd_ew_ops[cand[rd_below(r, nc)]] : NULL;
}

/* Whether x must not be computed under gpu_safe: integer reciprocal (1 / 0 is unspecified). */
static bool rd_unsafe_unary(const rd *r, const rd_ew *op, fc_array *a) {
    if (!r->o->gpu_safe) return false;
    fc_dtype t = fc_array_dtype(a);
    return strcmp(op->name, "reciprocal") == 0 && (is_int(t) || t == FC_BOOL);
}

/* x with its NaNs replaced by 0 under gpu_safe, for ops that read a sign bit (signbit,
 * copysign's second operand): the sign of a NaN that arithmetic makes is the hardware's
 * choice (negative on x86, positive on NVIDIA GPUs). Weak scalars are never NaN. */
static fc_array *rd_nan_free(const rd *r, fc_array *x) {
    fc_dtype t = fc_array_dtype(x);
    if (!r->o->gpu_safe || !is_inexact(t) || is_complex(t) || fc_array_is_weak(x)) return x;
    return fc_where(fc_isnan(x), fc_f64(r->ctx, 0.0), x);
}

static fc_array *rd_unary(rd *r) {
    const rd_ew *op = rd_ew_of_arity(r, 1);
    fc_array *a = rd_pick(r);
    if (rd_unsafe_unary(r, op, a)) return NULL;
    if (strcmp(op->name, "signbit") == 0) a = rd_nan_free(r, a);
    return ((fc_array * (*)(fc_array *)) op->fn)(a);
}

static fc_array *rd_binary(rd *r) {
    const rd_ew *op = rd_ew_of_arity(r, 2);
    fc_array *a = rd_pick(r), *b = rd_partner(r, a);
    if (rd_chance(r, 30)) { /* either side may be the scalar or the smaller one */
        fc_array *t = a;
        a = b;
        b = t;
    }
    if (strcmp(op->name, "copysign") == 0) b = rd_nan_free(r, b);
    fc_array *(*fn)(fc_array *, fc_array *) = (fc_array * (*)(fc_array *, fc_array *)) op->fn;
    fc_array *y = fn(a, b);
    /* An integer power of a negative exponent fails at evaluation: use a small one. */
    if (r->o->gpu_safe && strcmp(op->name, "pow") == 0 && fc_array_status(y) == FC_OK &&
        (is_int(fc_array_dtype(y)) || fc_array_dtype(y) == FC_BOOL))
        y = fn(a, fc_i64(r->ctx, rd_range(r, 0, 3)));
    return y;
}

static fc_array *rd_ternary(rd *r) {
    const rd_ew *op = rd_ew_of_arity(r, 3);
    fc_array *a = rd_pick(r);
    fc_array *b = rd_partner(r, a), *c = rd_partner(r, a);
    fc_array *(*fn)(fc_array *, fc_array *, fc_array *) =
        (fc_array * (*)(fc_array *, fc_array *, fc_array *)) op->fn;
    if (strcmp(op->name, "where") == 0) {
        /* The condition: an array taken as bool, often a comparison. */
        fc_array *cond = rd_chance(r, 50) ? fc_greater(a, rd_partner(r, a)) : a;
        return fn(cond, b, c);
    }
    return fn(a, b, c);
}

/* x made safe to convert to an integer dtype: finite and within the target's range. */
static fc_array *rd_int_safe(rd *r, fc_array *x, fc_dtype to) {
    fc_dtype t = fc_array_dtype(x);
    if (!is_inexact(t) || !is_int(to)) return x;
    if (is_complex(t)) x = fc_real(x);
    fc_array *lo = fc_f64(r->ctx, is_uint(to) ? 0.0 : -100.0), *hi = fc_f64(r->ctx, 100.0);
    return fc_where(fc_isfinite(x), fc_clip(x, lo, hi), fc_f64(r->ctx, 0.0));
}

static fc_array *rd_cast(rd *r) {
    fc_array *a = rd_pick(r);
    fc_dtype to = rd_dtype(r);
    if (r->o->gpu_safe) a = rd_int_safe(r, a, to);
    return fc_cast(a, to);
}

/* ---- reductions ------------------------------------------------------------------------- */

static fc_axes rd_axes(rd *r, int nd) {
    fc_axes ax;
    memset(&ax, 0, sizeof ax);
    if (nd == 0 || rd_chance(r, 20)) {
        ax.n = rd_chance(r, 80) ? -1 : 0;
        return ax;
    }
    for (int d = 0; d < nd; d++)
        if (rd_chance(r, 50)) ax.axis[ax.n++] = rd_chance(r, 30) ? d - nd : d;
    if (ax.n == 0) ax.axis[ax.n++] = rd_below(r, nd);
    return ax;
}

/* A scan along a random axis (or of the flattened array). Its choices come from h, not from
 * the generator's stream, so that programs without one stay what they were before scans. */
static fc_array *rd_scan(rd *r, uint64_t h) {
    fc_array *a = rd_pick(r);
    int nd = fc_array_ndim(a);
    int axis = nd == 0 || (h >> 8) % 5 == 0 ? FC_AXIS_NONE
                                              : (int)((h >> 12) % (uint64_t)(2 * nd)) - nd;
    switch ((h >> 4) % 4) {
    case 0: return fc_cumsum(a, axis);
    case 1: return fc_cumprod(a, axis);
    case 2: return fc_cummax(a, axis);
    default: return fc_cummin(a, axis);
    }
}

static fc_array *rd_reduce(rd *r) {
    uint64_t h = rd_side(r->state ^ 0x7363616e73ULL); /* "scans" */
    if (h % 12 == 0) return rd_scan(r, h);
    fc_array *a = rd_pick(r);
    fc_axes ax = rd_axes(r, fc_array_ndim(a));
    bool keep = rd_chance(r, 40);
    switch (rd_below(r, 10)) {
    case 0: return fc_sum(a, ax, keep);
    case 1: return fc_prod(a, ax, keep);
    case 2: return fc_mean(a, ax, keep);
    case 3: return fc_max(a, ax, keep);
    case 4: return fc_min(a, ax, keep);
    case 5: return fc_any(a, ax, keep);
    case 6: return fc_all(a, ax, keep);
    case 7: return fc_var(a, ax, keep, rd_range(r, 0, 2));
    case 8: return fc_std(a, ax, keep, rd_range(r, 0, 2));
    default: return fc_norm(a, ax, keep, (fc_norm_ord)rd_below(r, 3));
    }
}

static fc_array *rd_arg(rd *r) {
    fc_array *a = rd_pick(r);
    int nd = fc_array_ndim(a);
    int axis = nd == 0 || rd_chance(r, 25) ? FC_AXIS_NONE : rd_range(r, -nd, nd - 1);
    bool keep = rd_chance(r, 40);
    return rd_chance(r, 50) ? fc_argmax(a, axis, keep) : fc_argmin(a, axis, keep);
}

/* ---- views ------------------------------------------------------------------------------ */

static fc_array *rd_reshape(rd *r, fc_array *a) {
    fc_shape s = fc_array_shape(a), t;
    int64_t n = numel(&s);
    memset(&t, 0, sizeof t);
    if (n == 0) { /* a zero-size shape of rank 1-3: a 0 somewhere, or a -1 that infers it */
        t.ndim = rd_range(r, 1, 3);
        for (int d = 0; d < t.ndim; d++) t.dim[d] = rd_range(r, 1, 3);
        t.dim[rd_below(r, t.ndim)] = rd_chance(r, 30) ? -1 : 0;
        return fc_reshape(a, t);
    }
    t.ndim = n == 1 ? rd_range(r, 0, 4) : rd_range(r, 1, 4);
    int64_t left = n;
    for (int d = 0; d + 1 < t.ndim; d++) {
        /* A random divisor of what is left (1 included: unit axes). */
        int64_t divs[64];
        int nd = 0;
        for (int64_t k = 1; k <= left && nd < 64; k++)
            if (left % k == 0) divs[nd++] = k;
        t.dim[d] = divs[rd_below(r, nd)];
        left /= t.dim[d];
    }
    if (t.ndim) t.dim[t.ndim - 1] = left;
    if (t.ndim && rd_chance(r, 30)) t.dim[rd_below(r, t.ndim)] = -1;
    return fc_reshape(a, t);
}

static fc_array *rd_permute(rd *r, fc_array *a) {
    int nd = fc_array_ndim(a);
    fc_axes p;
    memset(&p, 0, sizeof p);
    p.n = nd;
    for (int d = 0; d < nd; d++) p.axis[d] = d;
    for (int d = nd - 1; d > 0; d--) { /* Fisher-Yates */
        int j = rd_below(r, d + 1), t = p.axis[d];
        p.axis[d] = p.axis[j];
        p.axis[j] = t;
    }
    return fc_permute(a, p);
}

/* A slice bound: omitted, or anywhere from one before the start to one past the end. */
static int64_t rd_bound(rd *r, int64_t n) {
    if (rd_chance(r, 35)) return FC_NIL;
    return rd_range(r, (int)(-n - 1), (int)(n + 1));
}

static fc_array *rd_index(rd *r, fc_array *a) {
    fc_shape s = fc_array_shape(a);
    fc_idx idx[2 * FC_MAX_DIMS + 2];
    int n = 0;
    int consume = rd_range(r, 0, s.ndim);
    bool ellipsis = rd_chance(r, 20);
    int epos = ellipsis ? rd_range(r, 0, consume) : consume;
    for (int i = 0; i <= consume; i++) {
        if (ellipsis && i == epos) idx[n++] = FC_ELLIPSIS;
        if (rd_chance(r, 12)) idx[n++] = FC_NEWAXIS;
        if (i == consume) break;
        /* The axis this entry indexes: before the Ellipsis from the front, after it from
         * the back. */
        int axis = i < epos ? i : s.ndim - (consume - i);
        int64_t len = s.dim[axis];
        int c = rd_below(r, 100);
        if (c < 20 && len > 0) {
            idx[n++] = FC_AT(rd_range(r, (int)-len, (int)len - 1));
        } else if (c < 35) {
            idx[n++] = FC_COLON;
        } else {
            static const int steps[] = {1, 1, 2, 3, -1, -1, -2, -3};
            int64_t step = rd_chance(r, 20) ? FC_NIL : steps[rd_below(r, 8)];
            idx[n++] = FC_S(rd_bound(r, len), rd_bound(r, len), step);
        }
    }
    return fc_index(a, n, idx);
}

static fc_array *rd_squeeze(rd *r, fc_array *a) {
    fc_shape s = fc_array_shape(a);
    fc_axes ax;
    memset(&ax, 0, sizeof ax);
    for (int d = 0; d < s.ndim; d++)
        if (s.dim[d] == 1 && rd_chance(r, 60)) ax.axis[ax.n++] = d;
    if (ax.n == 0) ax.n = -1;
    return fc_squeeze(a, ax);
}

static fc_array *rd_broadcast_to(rd *r, fc_array *a) {
    fc_shape s = fc_array_shape(a), t;
    memset(&t, 0, sizeof t);
    int lead = rd_range(r, 0, s.ndim >= 4 ? 0 : 2);
    for (int d = 0; d < lead; d++) t.dim[t.ndim++] = rd_range(r, 1, 3);
    for (int d = 0; d < s.ndim; d++)
        t.dim[t.ndim++] = s.dim[d] == 1 ? rd_range(r, 1, 4) : s.dim[d];
    return fc_broadcast_to(a, t);
}

static fc_array *rd_pad(rd *r, fc_array *a) {
    fc_shape s = fc_array_shape(a);
    if (s.ndim == 0) return NULL;
    fc_pad_mode mode = (fc_pad_mode)rd_below(r, 4);
    int64_t w[FC_MAX_DIMS][2];
    int n = rd_chance(r, 30) ? 1 : s.ndim;
    for (int d = 0; d < n; d++)
        for (int k = 0; k < 2; k++) {
            int64_t most = 2;
            for (int e = 0; e < s.ndim; e++) { /* n == 1: the widths apply to every axis */
                if (n != 1 && e != d) continue;
                int64_t len = s.dim[e];
                int64_t lim = mode == FC_PAD_REFLECT ? len - 1 : mode == FC_PAD_SYMMETRIC ? len : 2;
                if (mode == FC_PAD_EDGE && len == 0) lim = 0;
                if (lim < most) most = lim;
            }
            w[d][k] = most > 0 ? rd_range(r, 0, (int)most) : 0;
        }
    fc_dtype t = fc_array_dtype(a);
    double value = is_inexact(t) ? rd_float(r) : (double)rd_range(r, 1, 3);
    return fc_pad(a, n, (const int64_t(*)[2])w, mode, value);
}

/* Pieces for concatenate along `axis` (same shape except there) or for stack (same shape). */
static int rd_pieces(rd *r, fc_array *a, int axis, fc_array **out) {
    fc_shape sa = fc_array_shape(a);
    int n = 1, want = rd_range(r, 2, 3);
    out[0] = a;
    for (int i = 0; i < r->npool && n < want; i++) {
        fc_array *b = r->pool[rd_below(r, r->npool)];
        fc_shape sb = fc_array_shape(b);
        if (sb.ndim != sa.ndim) continue;
        bool ok = true;
        for (int d = 0; d < sa.ndim; d++) ok &= d == axis || sa.dim[d] == sb.dim[d];
        if (ok) out[n++] = b;
    }
    while (n < want) {
        if (axis >= 0 && rd_chance(r, 50) && sa.dim[axis] > 1) {
            /* A slice of a along the axis. */
            fc_idx idx[FC_MAX_DIMS];
            for (int d = 0; d < sa.ndim; d++) idx[d] = FC_COLON;
            idx[axis] = FC_S(rd_range(r, 1, (int)sa.dim[axis] - 1), FC_NIL, FC_NIL);
            out[n++] = fc_index(a, sa.ndim, idx);
        } else {
            out[n++] = rd_chance(r, 50) ? fc_flip(a, FC_ALL) : a;
        }
    }
    return n;
}

static fc_array *rd_concat(rd *r, fc_array *a) {
    int nd = fc_array_ndim(a);
    if (nd == 0) return NULL;
    int axis = rd_below(r, nd);
    fc_array *p[3];
    int n = rd_pieces(r, a, axis, p);
    return fc_concatenate(r->ctx, p, n, rd_chance(r, 30) ? axis - nd : axis);
}

static fc_array *rd_stack(rd *r, fc_array *a) {
    int nd = fc_array_ndim(a);
    if (nd >= 4) return NULL;
    fc_array *p[3];
    int n = rd_pieces(r, a, -1, p);
    return fc_stack(r->ctx, p, n, rd_range(r, -nd - 1, nd));
}

/* take of a pool array by an integer one along a random axis (or the flattened array), in a
 * random mode; raise mode indexes with the indices modulo the extent, which NumPy accepts. One
 * in four is a take_along_axis, its indices laid along the axis and in [-n, n); one in four a
 * subscript with an index array (in [-n, n)) and maybe an integer; one in eight a
 * searchsorted of the integers (or them cast to the array's dtype) in the array's running
 * maximum, which is sorted as NumPy sorts (NaN last); one in eight a setitem of a stepped slice
 * by its own reverse.
 * Choices come from h, not from the generator's stream (as rd_scan's). */
static fc_array *rd_take(rd *r, uint64_t h) {
    fc_array *a = rd_pick(r), *ind = NULL;
    for (int i = 0; i < r->npool && !ind; i++) { /* the first integer array from a place h picks */
        fc_array *c = r->pool[((h >> 20) + (uint64_t)i) % (uint64_t)r->npool];
        if (is_int(fc_array_dtype(c)) && !fc_array_is_weak(c)) ind = c;
    }
    if (!ind) return NULL;
    int nd = fc_array_ndim(a);
    int axis = nd == 0 || (h >> 8) % 4 == 0 ? FC_AXIS_NONE
                                              : (int)((h >> 12) % (uint64_t)(2 * nd)) - nd;
    fc_take_mode mode = (fc_take_mode)((h >> 16) % 3);
    if ((h >> 28) % 4 == 0) { /* take_along_axis: the indices laid along the axis, in [-n, n) */
        fc_shape s = fc_array_shape(a);
        int64_t n = axis == FC_AXIS_NONE ? numel(&s) : s.dim[axis < 0 ? axis + nd : axis];
        if (n == 0) return NULL;
        fc_array *flat = fc_reshape(fc_cast(ind, FC_I64), FC_SHAPE(-1));
        int64_t m = fc_array_size(flat);
        fc_shape along = {axis == FC_AXIS_NONE ? 1 : nd, {0}};
        for (int d = 0; d < along.ndim; d++)
            along.dim[d] = axis == FC_AXIS_NONE || d == (axis < 0 ? axis + nd : axis) ? m : 1;
        fc_array *pos = fc_sub(fc_mod(flat, fc_i64(r->ctx, 2 * n)), fc_i64(r->ctx, n));
        return fc_take_along_axis(a, fc_reshape(pos, along), axis);
    }
    if ((h >> 28) % 8 == 6 && nd > 0) { /* setitem: a stepped slice of one axis (and maybe an
                                          integer on another) replaced by itself reversed */
        fc_shape s = fc_array_shape(a);
        int at = (int)((h >> 32) % (uint64_t)nd), other = (int)((h >> 36) % (uint64_t)nd);
        fc_idx e[FC_MAX_DIMS];
        for (int d = 0; d < nd; d++) e[d] = FC_COLON;
        int64_t step = (int64_t)((h >> 40) % 3) + 1;
        e[at] = FC_S((int64_t)((h >> 44) % 3) - 1, FC_NIL, (h >> 46) % 2 ? step : -step);
        if (other != at && s.dim[other] > 0) e[other] = FC_AT((int64_t)(h >> 48) % s.dim[other]);
        fc_array *sel = fc_index(a, nd, e);
        return fc_setitem(a, nd, e, fc_flip(sel, FC_ALL));
    }
    if ((h >> 28) % 8 == 2) { /* searchsorted in a running maximum (sorted, NaN last) */
        fc_dtype t = fc_array_dtype(a);
        if (t == FC_C64 || t == FC_C128) return NULL;
        fc_array *sorted = fc_cummax(fc_reshape(a, FC_SHAPE(-1)), 0);
        return fc_searchsorted(sorted, (h >> 32) % 2 ? ind : fc_cast(ind, t),
                               (h >> 33) % 2 ? FC_SIDE_RIGHT : FC_SIDE_LEFT);
    }
    if ((h >> 28) % 4 == 1 && nd > 0) { /* a subscript: the array at one axis, an integer at
                                            another (both count as index arrays, as NumPy) */
        fc_shape s = fc_array_shape(a);
        int at = (int)((h >> 32) % (uint64_t)nd), other = (int)((h >> 36) % (uint64_t)nd);
        if (s.dim[at] == 0) return NULL;
        fc_idx e[FC_MAX_DIMS];
        for (int d = 0; d < nd; d++) e[d] = FC_COLON;
        e[at] = FC_ARRAY_IDX(fc_sub(fc_mod(fc_cast(ind, FC_I64), fc_i64(r->ctx, 2 * s.dim[at])),
                                    fc_i64(r->ctx, s.dim[at])));
        if (other != at && s.dim[other] > 0) e[other] = FC_AT((int64_t)(h >> 40) % s.dim[other]);
        return fc_index(a, nd, e);
    }
    if (mode == FC_TAKE_RAISE) {
        fc_shape s = fc_array_shape(a);
        int64_t n = axis == FC_AXIS_NONE ? numel(&s) : s.dim[axis < 0 ? axis + nd : axis];
        if (n == 0) return NULL;
        ind = fc_mod(ind, fc_i64(r->ctx, n));
    }
    return fc_take(a, ind, axis, mode);
}

/* A scatter into a pool array along a random axis (or the flattened array) by an integer one,
 * each combine and mode (raise: the indices modulo the extent), the values a take of the array
 * itself by the same indices (so they have the updates' shape and dtype). One in four a put
 * (repeated indices: the last write wins), one in eight a histogram of a real array over
 * [-1, 1], one in eight a mask of the integer array (where it is a multiple of 3) selecting
 * from it, its argwhere, or a masked assignment of as many values, one in eight a few
 * counters that many updates add into (bincount's shape). Choices come from h. */
static fc_array *rd_scatter(rd *r, uint64_t h) {
    fc_array *a = rd_pick(r), *ind = NULL;
    for (int i = 0; i < r->npool && !ind; i++) {
        fc_array *c = r->pool[((h >> 20) + (uint64_t)i) % (uint64_t)r->npool];
        if (is_int(fc_array_dtype(c)) && !fc_array_is_weak(c)) ind = c;
    }
    if (!ind) return NULL;
    fc_dtype t = fc_array_dtype(a);
    bool cplx = t == FC_C64 || t == FC_C128;
    if ((h >> 30) % 8 == 6) { /* masks: ind[mask], argwhere(mask), ind[mask] = (2 * ind)[mask] */
        fc_array *mask = fc_equal(fc_mod(ind, fc_i64(r->ctx, 3)), fc_i64(r->ctx, 0));
        fc_idx e[1] = {FC_ARRAY_IDX(mask)};
        switch ((h >> 40) % 3) {
        case 0: return fc_index(ind, 1, e);
        case 1: return fc_argwhere(mask);
        default: return fc_setitem(ind, 1, e, fc_index(fc_mul(ind, fc_i64(r->ctx, 2)), 1, e));
        }
    }
    if ((h >> 30) % 8 == 7) { /* bincount's shape: a few counters, many updates (on chip) */
        int64_t k = (int64_t)((h >> 44) % 8) + 1;
        fc_array *vals = fc_take(fc_reshape(a, FC_SHAPE(-1)), ind, FC_AXIS_NONE, FC_TAKE_WRAP);
        return fc_scatter_add(fc_zeros(r->ctx, t, FC_SHAPE(k)), fc_mod(ind, fc_i64(r->ctx, k)),
                              vals, 0, FC_TAKE_RAISE);
    }
    if ((h >> 30) % 8 == 5) {
        if (cplx || t == FC_BOOL) return NULL;
        return fc_histogram(a, (int64_t)(h >> 40) % 7 + 1, -1.0, 1.0, NULL);
    }
    fc_shape s = fc_array_shape(a);
    int nd = fc_array_ndim(a);
    int axis = nd == 0 || (h >> 8) % 4 == 0 ? FC_AXIS_NONE
                                              : (int)((h >> 12) % (uint64_t)(2 * nd)) - nd;
    int64_t n = axis == FC_AXIS_NONE ? numel(&s) : s.dim[axis < 0 ? axis + nd : axis];
    if (n == 0) return NULL;
    fc_take_mode mode = (fc_take_mode)((h >> 16) % 4);
    if (mode == FC_TAKE_RAISE) ind = fc_mod(ind, fc_i64(r->ctx, n));
    fc_array *vals = fc_take(a, ind, axis, FC_TAKE_WRAP);
    if ((h >> 30) % 4 == 3)
        return fc_put(a, ind, fc_reshape(vals, FC_SHAPE(-1)), mode == FC_TAKE_DROP ? FC_TAKE_CLIP : mode);
    switch (cplx ? 0 : (h >> 24) % 3) {
    case 0: return fc_scatter_add(a, ind, vals, axis, mode);
    case 1: return fc_scatter_max(a, ind, vals, axis, mode);
    default: return fc_scatter_min(a, ind, vals, axis, mode);
    }
}

/* A sort of a pool array (graph/sort.c and graph/sort_ops.c), along a random axis (negative
 * ones too) or of the flattened array: sort, argsort, partition or argpartition at a random
 * kth, unique (one of its four results), or a random permutation (a pool array shuffled
 * along an axis, a permutation of n, a choice of n or of the array's rows, with and without
 * replacement). Under gpu_safe, results that a difference in the last bit between backends
 * could reorder are not made: the positions (argsort, argpartition) of computed floats,
 * where exact ties decide the order (sort's values are continuous in its input, positions are
 * not), sorts of computed complex arrays (lexicographic: real parts tied on one backend may
 * be an ulp apart on another), and unique of anything but a program input (its size is its
 * number of distinct values). Choices come from h, not from the generator's stream (as
 * rd_take's). */
static fc_array *rd_sort(rd *r, uint64_t h) {
    fc_array *a = rd_pick(r);
    fc_shape s = fc_array_shape(a);
    int nd = s.ndim;
    fc_dtype t = fc_array_dtype(a);
    int axis = nd == 0 || (h >> 8) % 5 == 0 ? FC_AXIS_NONE
                                              : (int)((h >> 12) % (uint64_t)(2 * nd)) - nd;
    int64_t n = axis == FC_AXIS_NONE ? numel(&s) : s.dim[axis < 0 ? axis + nd : axis];
    bool input = false;
    for (int i = 0; i < r->ninputs; i++) input |= r->pool[i] == a;
    bool exact = input || !is_inexact(t) || !r->o->gpu_safe; /* ties are ties everywhere */
    bool continuous = exact || !is_complex(t);
    fc_rng g = {h >> 24, (h >> 16) % 4};
    switch ((h >> 4) % 12) {
    case 0: case 1: case 2: return continuous ? fc_sort(a, axis) : NULL;
    case 3: case 4: return exact ? fc_argsort(a, axis) : NULL;
    case 5: {
        int64_t kth = n > 0 ? (int64_t)((h >> 20) % (uint64_t)(2 * n)) - n : 0;
        if ((h >> 18) % 2) return exact ? fc_argpartition(a, kth, axis) : NULL;
        return continuous ? fc_partition(a, kth, axis) : NULL;
    }
    case 6: {
        if (!input && r->o->gpu_safe) return NULL;
        fc_array *res[4] = {NULL, NULL, NULL, NULL};
        int k = (int)((h >> 20) % 4);
        if (fc_unique(a, k == 0 ? &res[0] : NULL, k == 1 ? &res[1] : NULL,
                      k == 2 ? &res[2] : NULL, k == 3 ? &res[3] : NULL) != FC_OK)
            return NULL;
        return res[k];
    }
    case 7: case 8: return nd > 0 ? fc_rng_shuffle(r->ctx, &g, a, axis == FC_AXIS_NONE ? 0 : axis)
                                  : NULL;
    case 9: return fc_rng_permutation(r->ctx, &g, (int64_t)((h >> 20) % 12));
    default: {
        bool replace = (h >> 20) % 2;
        int64_t pop = nd > 0 && (h >> 21) % 2 ? s.dim[0] : (int64_t)((h >> 22) % 9) + 1;
        int64_t k = pop > 0 ? (int64_t)((h >> 26) % (uint64_t)pop) + replace : 0;
        fc_shape size = (h >> 30) % 3 ? FC_SHAPE(k) : FC_SHAPE(1, k);
        if (nd > 0 && (h >> 21) % 2) return fc_rng_choice_array(r->ctx, &g, a, size, replace);
        return fc_rng_choice(r->ctx, &g, pop, size, replace);
    }
    }
}

static fc_array *rd_view(rd *r) {
    uint64_t h = rd_side(r->state ^ 0x74616b65ULL); /* "take" */
    if (h % 10 == 0) return rd_take(r, h);
    uint64_t hs = rd_side(r->state ^ 0x73636174ULL); /* "scat" */
    if (hs % 16 == 0) return rd_scatter(r, hs);
    uint64_t hq = rd_side(r->state ^ 0x736f7274ULL); /* "sort" */
    if (hq % 12 == 0) return rd_sort(r, hq);
    fc_array *a = rd_pick(r);
    int nd = fc_array_ndim(a);
    switch (rd_below(r, 12)) {
    case 0: return rd_reshape(r, a);
    case 1: return fc_transpose(a);
    case 2: return rd_permute(r, a);
    case 3: case 4: return rd_index(r, a);
    case 5: return fc_expand_dims(a, rd_range(r, -nd - 1, nd));
    case 6: return rd_squeeze(r, a);
    case 7: {
        fc_axes ax = rd_axes(r, nd);
        if (ax.n == 0) ax.n = -1;
        return fc_flip(a, ax);
    }
    case 8: return rd_broadcast_to(r, a);
    case 9: return rd_pad(r, a);
    case 10: return rd_concat(r, a);
    default: return rd_stack(r, a);
    }
}

/* ---- composites (graph/composite.c) ----------------------------------------------------- */

/* One composite function over pool arrays. Results that its own dtype or shape rules reject
 * are poisoned and discarded like any op's. Under gpu_safe, integers are not rounded to
 * negative decimals (the rounded value may leave the dtype's range, and the cast back is
 * unspecified there). */
static fc_array *rd_composite(rd *r) {
    fc_array *a = rd_pick(r);
    fc_shape s = fc_array_shape(a);
    int nd = s.ndim;
    int axis = nd == 0 || rd_chance(r, 25) ? FC_AXIS_NONE : rd_range(r, -nd, nd - 1);
    bool keep = rd_chance(r, 40);
    switch (rd_below(r, 16)) {
    case 0: {
        int64_t reps[3];
        int n = rd_range(r, 1, 3);
        for (int i = 0; i < n; i++) reps[i] = rd_range(r, 1, 3);
        return fc_tile(a, n, reps);
    }
    case 1: return fc_repeat(a, rd_range(r, 0, 3), axis);
    case 2:
        if (nd >= 2 && rd_chance(r, 30))
            return fc_roll_axes(a, 2, (const int64_t[]){rd_range(r, -5, 5), rd_range(r, -5, 5)},
                                (const int[]){rd_below(r, nd), rd_below(r, nd)});
        return fc_roll(a, rd_range(r, -7, 7), axis);
    case 3: {
        if (nd == 0) return NULL;
        int d = rd_below(r, nd);
        fc_array *out[4];
        if (rd_chance(r, 50)) { /* equal sections: a divisor of the extent */
            int64_t len = s.dim[d], k = len > 0 ? rd_range(r, 1, (int)(len < 4 ? len : 4)) : 1;
            while (len % k) k--;
            if (fc_split(a, k, d, out) != FC_OK) return NULL;
            return out[rd_below(r, (int)k)];
        }
        int64_t idx[3];
        int n = rd_range(r, 0, 3);
        for (int i = 0; i < n; i++) idx[i] = rd_range(r, (int)-s.dim[d] - 1, (int)s.dim[d] + 1);
        if (fc_split_at(a, n, idx, d, out) != FC_OK) return NULL;
        return out[rd_below(r, n + 1)];
    }
    case 4: {
        int k = rd_range(r, -2, 2);
        return rd_chance(r, 50) ? fc_tril(a, k) : fc_triu(a, k);
    }
    case 5:
        if (nd == 1 || nd == 2) return fc_diag(a, rd_range(r, -2, 2));
        if (nd < 2) return NULL;
        return fc_diagonal(a, rd_range(r, -2, 2), rd_below(r, nd), rd_below(r, nd));
    case 6: return nd >= 2 ? fc_trace(a, rd_range(r, -1, 1), 0, -1) : NULL;
    case 7: {
        fc_axes ax = rd_axes(r, nd);
        switch (rd_below(r, 6)) {
        case 0: return fc_nansum(a, ax, keep);
        case 1: return fc_nanprod(a, ax, keep);
        case 2: return fc_nanmean(a, ax, keep);
        case 3: return fc_nanmax(a, ax, keep);
        case 4: return fc_nanmin(a, ax, keep);
        default: return fc_count_nonzero(a, ax, keep);
        }
    }
    case 8: return rd_chance(r, 50) ? fc_nanargmax(a, axis, keep) : fc_nanargmin(a, axis, keep);
    case 9: return fc_logsumexp(a, rd_axes(r, nd), keep);
    case 10: {
        fc_array *b = rd_partner(r, a);
        double rtol = rd_chance(r, 50) ? 1e-5 : 0.5, atol = rd_chance(r, 50) ? 1e-8 : 0.25;
        return rd_chance(r, 80) ? fc_isclose(a, b, rtol, atol, rd_chance(r, 50))
                                : fc_allclose(a, b, rtol, atol, rd_chance(r, 50));
    }
    case 11: {
        int dec = rd_range(r, -2, 3);
        if (r->o->gpu_safe && is_int(fc_array_dtype(a)) && dec < 0) dec = -dec;
        return fc_round(a, dec);
    }
    case 12: {
        double big = 1e3, small = -1e3;
        return fc_nan_to_num(a, rd_float(r), rd_chance(r, 50) ? &big : NULL,
                             rd_chance(r, 50) ? &small : NULL);
    }
    case 13: {
        fc_array *b = rd_partner(r, a);
        return rd_chance(r, 50) ? fc_heaviside(a, b) : fc_float_power(a, b);
    }
    case 14: {
        fc_array *(*const fns[])(fc_array *) = {fc_deg2rad, fc_rad2deg, fc_sinc, fc_positive,
                                                fc_fabs};
        return fns[rd_below(r, 5)](a);
    }
    default: {
        fc_array *in[2] = {a, rd_pick(r)}, *out[2];
        if (fc_meshgrid(r->ctx, in, 2, rd_chance(r, 50), out) != FC_OK) return NULL;
        return out[rd_below(r, 2)];
    }
    }
}

/* ---- sources and library calls ---------------------------------------------------------- */

static fc_array *rd_source(rd *r) {
    static const fc_dtype real[] = {FC_I8, FC_I16, FC_I32, FC_I64, FC_U8, FC_U16, FC_U32,
                                    FC_U64, FC_F16, FC_BF16, FC_F32, FC_F64};
    static const fc_dtype flt[] = {FC_F16, FC_BF16, FC_F32, FC_F64, FC_C64, FC_C128};
    fc_shape s;
    memset(&s, 0, sizeof s);
    s.ndim = rd_range(r, 0, 3);
    for (int d = 0; d < s.ndim; d++) s.dim[d] = rd_range(r, 1, r->o->max_extent);
    /* In a program with a zero extent, sources may be empty too (full, random_uniform of a
     * zero extent; arange and linspace of no element; eye with no row or no column). */
    int lo = r->zero && rd_chance(r, 25) ? 0 : 1;
    if (lo == 0 && s.ndim) s.dim[rd_below(r, s.ndim)] = 0;
    switch (rd_below(r, 5)) {
    case 0: {
        fc_dtype t = rd_dtype(r);
        return fc_full(r->ctx, t, s, t == FC_BOOL || is_uint(t) ? rd_range(r, 1, 3) : -rd_range(r, 1, 3));
    }
    case 1: {
        int start = rd_range(r, -4, 4), len = rd_range(r, lo, r->o->max_extent + 1);
        int step = rd_chance(r, 50) ? 1 : -2;
        fc_dtype t = real[rd_below(r, 12)];
        if (is_uint(t)) start = 10, step = 1;
        return fc_arange(r->ctx, t, start, start + step * len, step);
    }
    case 2:
        return fc_linspace(r->ctx, flt[rd_below(r, 4)], rd_float(r), rd_float(r),
                           rd_range(r, lo, r->o->max_extent + 2), rd_chance(r, 50));
    case 3:
        return fc_eye(r->ctx, real[rd_below(r, 12)], rd_range(r, lo, 4), rd_range(r, 1, 4),
                      rd_range(r, -2, 2));
    default: {
        /* A draw: the kind, stream and bounds come from the seed's bits, so that the sequence
         * of choices (and every other seed's program) stays as it was before draws had kinds. */
        fc_dtype t = flt[rd_below(r, 6)];
        uint64_t seed = rd_next(r);
        fc_rng rng = {seed, (seed >> 2) % 3};
        if (seed % 4 == 2) return fc_rng_standard_normal(r->ctx, &rng, t, s);
        if (seed % 4 == 3) {
            static const fc_dtype ints[] = {FC_I8, FC_U8, FC_I16, FC_U16, FC_I32, FC_U32, FC_I64, FC_U64};
            fc_dtype it = ints[(seed >> 8) % 8];
            int bits = 8 * (int)fc_dtype_size(it);
            bool sgn = !is_uint(it);
            int64_t low = sgn ? -3 : 0, high = low + 1 + (int64_t)((seed >> 20) % 50);
            if ((seed >> 16) & 1) { /* the dtype's whole range (int64's: all but its largest) */
                low = sgn ? (bits == 64 ? INT64_MIN : -(INT64_C(1) << (bits - 1))) : 0;
                high = bits == 64 ? INT64_MAX : sgn ? INT64_C(1) << (bits - 1) : INT64_C(1) << bits;
            }
            return fc_rng_integers(r->ctx, &rng, low, high, it, s);
        }
        return fc_rng_random(r->ctx, &rng, t, s);
    }
    }
}

static fc_array *rd_matmul(rd *r) {
    fc_array *a = rd_pick(r);
    int nd = fc_array_ndim(a);
    if (nd < 1 || nd > 2) return NULL;
    /* a @ a.T (always conformable), or a @ b for a pool array whose rows match. */
    fc_shape sa = fc_array_shape(a);
    for (int i = 0; i < r->npool; i++) {
        fc_array *b = r->pool[rd_below(r, r->npool)];
        fc_shape sb = fc_array_shape(b);
        if (sb.ndim >= 1 && sb.ndim <= 2 && sb.dim[0] == sa.dim[sa.ndim - 1] && rd_chance(r, 50))
            return fc_matmul(a, b);
    }
    return fc_matmul(a, nd == 2 ? fc_transpose(a) : a);
}

/* A contraction (graph/contract.c): einsum over one or two pool arrays with random
 * subscripts (a letter repeated in an operand takes a diagonal of equal extents; one shared
 * with the other operand pairs axes of equal extent or of extent 1, which broadcasts; a
 * random subset of the letters in a random order is the output, or none: the implicit one),
 * or now and then dot, tensordot, outer or kron, whose refusals are discarded like any. */
static fc_array *rd_contract(rd *r) {
    fc_array *in[2] = {rd_pick(r), rd_pick(r)};
    switch (rd_below(r, 8)) {
    case 0: return fc_dot(in[0], in[1]);
    case 1: return fc_tensordot(in[0], in[1], rd_range(r, 0, 2));
    case 2: return rd_chance(r, 50) ? fc_outer(in[0], in[1]) : fc_kron(in[0], in[1]);
    default: break;
    }
    int nops = rd_range(r, 1, 2), nlet = 0;
    int64_t ext[2 * FC_MAX_DIMS];
    char subs[3 * FC_MAX_DIMS + 8], *p = subs;
    for (int k = 0; k < nops; k++) {
        fc_shape s = fc_array_shape(in[k]);
        int64_t own[2 * FC_MAX_DIMS]; /* this operand's extent of each letter; -1: not its */
        for (int l = 0; l < 2 * FC_MAX_DIMS; l++) own[l] = -1;
        if (k) *p++ = ',';
        for (int d = 0; d < s.ndim; d++) {
            int64_t e = s.dim[d];
            int l = rd_below(r, nlet + 1);
            bool ok = l < nlet &&
                      (own[l] >= 0 ? own[l] == e : ext[l] == e || ext[l] == 1 || e == 1);
            if (!ok) l = nlet++;
            if (!ok || ext[l] == 1) ext[l] = e;
            own[l] = e;
            *p++ = (char)('a' + l);
        }
    }
    if (rd_chance(r, 70)) {
        int order[2 * FC_MAX_DIMS], n = 0;
        for (int l = 0; l < nlet; l++)
            if (rd_chance(r, 50) && n < FC_MAX_DIMS) order[n++] = l;
        for (int i = n - 1; i > 0; i--) { /* Fisher-Yates */
            int j = rd_below(r, i + 1), t = order[i];
            order[i] = order[j], order[j] = t;
        }
        *p++ = '-', *p++ = '>';
        for (int i = 0; i < n; i++) *p++ = (char)('a' + order[i]);
    }
    *p = '\0';
    return fc_einsum(r->ctx, subs, in, nops);
}

/* fft or ifft along a random axis (a library call, like matmul; a real input is cast to
 * complex first, and an empty axis is refused, as NumPy refuses it); or a member of the
 * np.fft family (graph/fft.c's composites: n, norm, the real and n-dimensional transforms,
 * the shifts), whose refusals (a complex rfft, too few points) are discarded like any. */
static fc_array *rd_fft(rd *r) {
    fc_array *a = rd_pick(r);
    int nd = fc_array_ndim(a);
    if (nd == 0) return NULL;
    int axis = rd_range(r, -nd, nd - 1);
    int kind = rd_below(r, 4);
    if (kind < 2) return kind ? fc_fft(a, axis) : fc_ifft(a, axis);
    fc_fft_norm norm = (fc_fft_norm)rd_below(r, 3);
    int64_t n = rd_chance(r, 50) ? 0 : rd_range(r, 1, 9);
    bool real = !fcg_is_complex(fc_array_dtype(a));
    if (kind == 2) {
        switch (rd_below(r, 6)) {
        case 0: return fc_fft_n(a, n, axis, norm);
        case 1: return fc_ifft_n(a, n, axis, norm);
        case 2: return real ? fc_rfft(a, n, axis, norm) : fc_hfft(a, n, axis, norm);
        case 3: return fc_irfft(a, n, axis, norm);
        case 4: return fc_hfft(a, n, axis, norm);
        default: return real ? fc_ihfft(a, n, axis, norm) : fc_ifft_n(a, n, axis, norm);
        }
    }
    fc_axes axes = nd >= 2 && rd_chance(r, 50) ? FC_AXES(0, -1) : FC_AXES(axis);
    switch (rd_below(r, 6)) {
    case 0: return fc_fftn(a, 0, NULL, axes, norm);
    case 1: return fc_ifftn(a, 0, NULL, axes, norm);
    case 2: return real ? fc_rfftn(a, 0, NULL, axes, norm) : fc_fftn(a, 0, NULL, FC_ALL, norm);
    case 3: return fc_irfftn(a, 0, NULL, axes, norm);
    case 4: return fc_fftshift(a, axes);
    default: return fc_ifftshift(a, FC_ALL);
    }
}

/* A sparse product (graph/sparse.c): a random COO matrix (duplicates likely, empty rows,
 * int32 or int64 indices, perhaps no values) times a pool array made a vector or a matrix of
 * a value dtype, through fc_sparse_matmul (a COO matrix is sorted into CSR first) or after
 * the lazy conversions (transpose twice, to COO and back). Nothing is evaluated to build it. */
static fc_array *rd_sparse(rd *r) {
    fc_array *x = rd_pick(r);
    int nd = fc_array_ndim(x);
    fc_dtype t = fc_array_dtype(x);
    if (fc_array_is_weak(x)) return NULL;
    t = t == FC_C64 || t == FC_C128 || t == FC_F32 || t == FC_F64 ? t
        : t == FC_F16 || t == FC_BF16 ? FC_F32 : FC_F64;
    if (nd != 1 && nd != 2) x = fc_reshape(x, FC_SHAPE(fc_array_size(x)));
    x = fc_cast(x, t);
    int64_t n = fc_array_shape(x).dim[0], m = 1 + rd_below(r, 5);
    int64_t nnz = n ? rd_below(r, 9) : 0;
    fc_dtype it = rd_chance(r, 50) ? FC_I32 : FC_I64;
    fc_rng g = fc_rng_init(rd_next(r));
    fc_array *row = nnz ? fc_rng_integers(r->ctx, &g, 0, m, it, FC_SHAPE(nnz))
                        : fc_zeros(r->ctx, it, FC_SHAPE(0));
    fc_array *col = nnz ? fc_rng_integers(r->ctx, &g, 0, n, it, FC_SHAPE(nnz))
                        : fc_zeros(r->ctx, it, FC_SHAPE(0));
    fc_sparse a = fc_sparse_coo(fc_rng_standard_normal(r->ctx, &g, t, FC_SHAPE(nnz)), row, col,
                                m, n);
    if (rd_chance(r, 50))
        a = fc_sparse_transpose(fc_sparse_tocoo(fc_sparse_transpose(a)));
    return fc_sparse_matmul(a, x);
}

/* Convolution (graph/convolve.c): a 2-d pool array convolved or correlated with a corner of
 * itself (at most 3 x 3, so valid mode always fits) in a random mode and boundary, direct or
 * auto (the FFT only for inexact dtypes: the host's transform and cuFFT round differently,
 * which an integer result would not forgive); a 1-d one with its first two or three
 * elements (np.convolve / np.correlate). Refusals (bool or f16 for convolve2d) are discarded
 * like any. */
static fc_array *rd_convolve(rd *r) {
    fc_array *x = rd_pick(r);
    int nd = fc_array_ndim(x);
    if (fc_array_is_weak(x) || nd < 1 || nd > 2) return NULL;
    fc_shape sh = fc_array_shape(x);
    bool inexact = fcg_is_inexact(fc_array_dtype(x));
    fc_conv_mode mode = (fc_conv_mode)rd_below(r, 3);
    fc_conv_method method = inexact && rd_chance(r, 30) ? FC_CONV_FFT
                            : rd_chance(r, 50) ? FC_CONV_DIRECT : FC_CONV_AUTO;
    bool corr = rd_chance(r, 50);
    if (nd == 1) {
        if (sh.dim[0] < 1) return NULL;
        fc_array *v = fcg_slice_axis(x, 0, 0, sh.dim[0] < 3 ? sh.dim[0] : rd_range(r, 2, 3), 1);
        return corr ? fc_correlate(x, v, mode, method) : fc_convolve(x, v, mode, method);
    }
    fc_array *w = fcg_slice_axis(x, 0, 0, sh.dim[0] < 3 ? sh.dim[0] : rd_range(r, 1, 3), 1);
    w = fcg_slice_axis(w, 1, 0, sh.dim[1] < 3 ? sh.dim[1] : rd_range(r, 1, 3), 1);
    fc_conv_boundary b = sh.dim[0] && sh.dim[1] ? (fc_conv_boundary)rd_below(r, 3) : FC_CONV_FILL;
    double fill = rd_chance(r, 50) ? 0.0 : 2.0;
    return corr ? fc_correlate2d(x, w, mode, b, fill, 0, method)
                : fc_convolve2d(x, w, mode, b, fill, 0, method);
}

/* y y^T + (2n + 1) I of the bounded y (last axis n, dtype t): diagonally dominant. */
static fc_array *rd_dominant(rd *r, fc_array *y, fc_dtype t, int64_t n) {
    return fc_add(fc_mul(fc_expand_dims(y, -1), fc_expand_dims(y, -2)),
                  fc_mul(fc_eye(r->ctx, t, n, n, 0), fc_f64(r->ctx, (double)(2 * n + 1))));
}

/* Dense linear algebra (graph/linalg.c) where the result is well defined on any input: a
 * pool array x with a last axis of n (1 to 5) gives the bounded values y = x / (1 + |x|) (in
 * the dtype np.linalg computes x in), and M = y y^T + (2n + 1) I (outer products over the
 * last axis, a stack of them for a stack x): its diagonal dominates every row and column, so
 * M is well conditioned and, read through its lower triangle, positive definite. Then
 * solve(M, y as a vector or a column), inv, det, slogdet's sign or logabsdet, cholesky
 * (lower or upper), or what qr, eigh and svd give that is unique (below). A non-finite x makes
 * NaNs, which both backends carry alike through the factorisations with pivots. */
static fc_array *rd_linalg(rd *r) {
    fc_array *x = rd_pick(r);
    int nd = fc_array_ndim(x);
    fc_dtype t = fc_array_dtype(x);
    if (nd == 0 || nd > 4 || fc_array_is_weak(x)) return NULL;
    int64_t n = fc_array_shape(x).dim[nd - 1];
    if (n < 1) return NULL;
    t = t == FC_C64 || t == FC_C128 || t == FC_F32 || t == FC_F64 ? t
        : t == FC_F16 || t == FC_BF16 ? FC_F32 : FC_F64;
    fc_array *xc = fc_cast(x, t);
    fc_array *y = fc_div(xc, fc_add(fc_abs(xc), fc_f64(r->ctx, 1.0)));
    fc_array *m = rd_dominant(r, y, t, n);
    switch (rd_below(r, 12)) {
    case 10:
    case 11: { /* svd and what is built on it: the singular values, U diag(S) Vh (M itself,
                * whatever the vectors' signs), pinv (M's inverse), matrix_rank (n) or lstsq's
                * x (the solution); no NaN: svd refuses one (as NumPy) */
        fc_array *mf = fc_nan_to_num(m, 0.0, NULL, NULL), *u = NULL, *s = NULL, *vh = NULL;
        switch (rd_below(r, 5)) {
        case 0: return fc_linalg_svdvals(mf);
        case 1:
            fc_linalg_svd(mf, rd_chance(r, 50), true, &u, &s, &vh); /* square: full is reduced */
            return fc_matmul(fc_mul(u, fc_expand_dims(s, -2)), vh);
        case 2: return fc_linalg_pinv(mf, NULL, rd_chance(r, 30));
        case 3: return fc_linalg_matrix_rank(mf, NULL, NULL, false);
        default: { /* one matrix: the stack's blocks one above the other (a tall matrix) */
            fc_array *sol = NULL, *a = fc_reshape(mf, FC_SHAPE(-1, n));
            fc_linalg_lstsq(a, fc_ones(r->ctx, t, FC_SHAPE(fc_array_shape(a).dim[0])), NULL, &sol,
                            NULL, NULL, NULL);
            return sol;
        }
        }
    }
    case 6:
    case 8: /* qr: its factors' signs are LAPACK's choice, so what is compared is a product
             * that does not depend on them (M itself from Q R, or R^H R == M^H M); no NaN:
             * where one lands in a blocked factorisation is the library's business */
    case 5:
    case 7:
    case 9: { /* eigh: the eigenvalues, or V diag(w) V^H (the Hermitian matrix of M's lower
               * or upper triangle: unique where V's columns are not) */
        fc_array *mf = fc_nan_to_num(m, 0.0, NULL, NULL);
        fc_axes sw = {.n = fc_array_ndim(mf)};
        for (int d = 0; d < sw.n; d++) sw.axis[d] = d;
        sw.axis[sw.n - 1] = sw.n - 2;
        sw.axis[sw.n - 2] = sw.n - 1;
        fc_array *p = NULL, *q = NULL;
        if (rd_chance(r, 50)) {
            bool upper = rd_chance(r, 50);
            if (rd_chance(r, 50)) return fc_linalg_eigvalsh(mf, upper);
            fc_linalg_eigh(mf, upper, &p, &q);
            if (rd_chance(r, 30)) return p;
            return fc_matmul(fc_mul(q, fc_expand_dims(p, -2)), fc_conj(fc_permute(q, sw)));
        }
        int mode = rd_below(r, 3);
        fc_linalg_qr(mf, (fc_qr_mode)mode, &p, &q);
        if (mode != FC_QR_R && rd_chance(r, 50)) return fc_matmul(p, q);
        return fc_matmul(fc_conj(fc_permute(q, sw)), q);
    }
    case 0: /* a 1-d y is a vector (NumPy 2's rule), or a column; a stack: columns */
        return fc_linalg_solve(m, nd == 1 && rd_chance(r, 50) ? y : fc_expand_dims(y, -1));
    case 1: return fc_linalg_inv(m);
    case 2: return fc_linalg_det(m);
    case 3: {
        fc_array *parts[2] = {NULL, NULL};
        bool logdet = rd_chance(r, 50);
        fc_linalg_slogdet(m, logdet ? NULL : &parts[0], logdet ? &parts[1] : NULL);
        return parts[logdet];
    }
    default: { /* no NaN (a NaN diagonal is not positive: an error, NumPy's, on either side):
                * M of y's numbers, NaNs zeroed, positive definite */
        fc_array *m0 = rd_dominant(r, fc_nan_to_num(y, 0.0, NULL, NULL), t, n);
        return fc_linalg_cholesky(m0, rd_chance(r, 50));
    }
    }
}

/* ---- the build -------------------------------------------------------------------------- */

void rdag_default_options(rdag_options *o) {
    memset(o, 0, sizeof *o);
    o->min_steps = 4;
    o->max_steps = 24;
    o->max_inputs = 4;
    o->max_outputs = 3;
    o->max_extent = 5;
    o->max_elements = 4096;
    o->sources = true;
    o->views = true;
    o->reductions = true;
    o->matmul = true;
    o->gpu_safe = true;
    o->composites = true;
    o->fft = true;
    o->zero_percent = 12;
}

static fc_array *rd_step(rd *r) {
    const rdag_options *o = r->o;
    int c = rd_below(r, 100);
    if (c < 22) return rd_unary(r);
    if (c < 44) return rd_binary(r);
    if (c < 50) return rd_ternary(r);
    if (c < 56) return rd_cast(r);
    if (c < 66) return o->reductions ? rd_reduce(r) : NULL;
    if (c < 69) return o->reductions ? rd_arg(r) : NULL;
    if (c < 87) return o->views ? rd_view(r) : NULL;
    if (c < 93) return o->composites ? rd_composite(r) : NULL;
    if (c < 97) return o->sources ? rd_source(r) : NULL;
    if (c < 99) {
        if (!o->matmul) return NULL;
        int k = rd_below(r, 4); /* linalg has 14 functions to draw from */
        if (k == 0 && rd_chance(r, 30)) return rd_sparse(r);
        return k == 0 ? (rd_chance(r, 50) ? rd_matmul(r) : rd_contract(r)) : rd_linalg(r);
    }
    if (o->fft && rd_chance(r, 25)) return rd_convolve(r);
    return o->fft ? rd_fft(r) : o->matmul ? rd_matmul(r) : NULL;
}

void rdag_free(rdag *d) {
    if (!d) return;
    for (int i = 0; i < d->nout; i++) fc_release(d->out[i]);
    for (int i = 0; i < d->nin; i++) fc_release(d->in[i]);
    d->nout = d->nin = 0;
}

fc_status rdag_build(fc_ctx *context, uint64_t seed, const rdag_options *opt, rdag *out) {
    if (!out) return FC_ERR_NULL;
    memset(out, 0, sizeof *out);
    if (!context) return FC_ERR_NULL;
    rdag_options defaults;
    rdag_default_options(&defaults);
    const rdag_options *o = opt ? opt : &defaults;
    if (o->min_steps < 1 || o->max_steps < o->min_steps || o->max_inputs < 1 ||
        o->max_inputs > RDAG_MAX_INPUTS || o->max_outputs < 1 ||
        o->max_outputs > RDAG_MAX_OUTPUTS || o->max_extent < 1 || o->max_extent > 16 ||
        o->max_elements < 1 || o->zero_percent < 0 || o->zero_percent > 100)
        return FC_ERR_INVALID;
    out->ctx = context;
    out->seed = seed;
    rd r;
    memset(&r, 0, sizeof r);
    r.ctx = context;
    r.o = o;
    r.state = seed * 0x2545f4914f6cdd1dULL ^ 0x5851f42d4c957f2dULL;
    fc_scope *scope = fc_scope_open(context);
    if (!scope) return FC_ERR_NOMEM;

    fc_shape base;
    memset(&base, 0, sizeof base);
    base.ndim = rd_range(&r, 0, 4);
    for (int d = 0; d < base.ndim; d++) base.dim[d] = rd_range(&r, 1, o->max_extent);
    /* A zero extent: decided by a stream of its own, so that a program without one is the
     * same program whatever zero_percent says. One axis of the base shape becomes 0
     * (a 0-d base becomes [0]); the first input takes the base shape whole, the others a
     * suffix as usual (an extent set to 1 there still broadcasts against 0). */
    uint64_t side = rd_side(seed);
    r.zero = (int)(side % 100) < o->zero_percent;
    if (r.zero) {
        if (base.ndim == 0) base.ndim = 1;
        base.dim[(side >> 32) % (uint64_t)base.ndim] = 0;
    }
    out->zero = r.zero;
    int nin = rd_range(&r, 1, o->max_inputs);
    for (int i = 0; i < nin && !r.nomem; i++) {
        fc_array *a = rd_input(&r, &base, r.zero && i == 0);
        if (a) r.pool[r.npool++] = a;
    }
    r.ninputs = r.npool;
    if (r.npool == 0 && !r.nomem) { /* every input was refused: impossible, but be safe */
        fc_scope_close(scope);
        return FC_ERR_INVALID;
    }

    int steps = rd_range(&r, o->min_steps, o->max_steps);
    for (int tries = 0; out->nsteps < steps && tries < 20 * steps && !r.nomem; tries++) {
        fc_array *y = rd_step(&r);
        if (y && fc_array_status(y) == FC_ERR_NOMEM) r.nomem = true;
        if (!y || !rd_accept(&r, y)) {
            out->ndiscarded++;
            continue;
        }
        rd_push(&r, y);
        out->nsteps++;
    }
    if (r.nomem) {
        fc_scope_close(scope);
        return FC_ERR_NOMEM;
    }
    /* Outputs: the latest computed array, then others among the computed ones. */
    int cand[RD_POOL_MAX], nc = 0;
    for (int i = r.ninputs; i < r.npool; i++)
        if (!fc_array_is_weak(r.pool[i])) cand[nc++] = i;
    if (nc == 0) { /* nothing computed (only possible with tiny step counts) */
        fc_scope_close(scope);
        return FC_ERR_INVALID;
    }
    int nout = rd_range(&r, 1, nc < o->max_outputs ? nc : o->max_outputs);
    for (int k = 0; k < nout; k++) {
        int pick = k == 0 ? nc - 1 : rd_below(&r, nc);
        fc_array *y = r.pool[cand[pick]];
        bool dup = false;
        for (int j = 0; j < out->nout; j++) dup |= out->out[j] == y;
        if (!dup) out->out[out->nout++] = fc_keep(y);
    }
    for (int i = 0; i < r.ninputs; i++) out->in[out->nin++] = fc_keep(r.pool[i]);
    fc_scope_close(scope);
    fc_clear_error(context);
    for (int i = 0; i < out->nout; i++)
        if (fc_array_status(out->out[i]) != FC_OK) { /* fc_keep ran out of memory */
            rdag_free(out);
            return FC_ERR_NOMEM;
        }
    return FC_OK;
}

char *rdag_print(const rdag *d) {
    char *text = NULL;
    if (!d || !d->ctx || d->nout == 0) return NULL;
    if (fc_program_print(d->ctx, d->out, d->nout, NULL, &text) != FC_OK) return NULL;
    return text;
}
