/*
 * ref/host_reduce.c - reductions and matmul of the host reference backend.
 *
 * Reductions walk the input once in row-major order, adding each value into an accumulator
 * array the size of the output (reduced axes get stride 0), so any layout is one pass.
 * Accumulators are wide: integers in 64-bit wrapping arithmetic, floats in double with
 * Neumaier compensation, complex as pairs of those.
 */
#include "host.h"

#include <math.h>
#include <string.h>

typedef fch_wide_val wv;

/* ---- accumulation ----------------------------------------------------------------------- */

static inline void neumaier(double *sum, double *comp, double x) {
    double t = *sum + x;
    if (fabs(*sum) >= fabs(x))
        *comp += (*sum - t) + x;
    else
        *comp += (x - t) + *sum;
    *sum = t;
}

/* The compensated total; once the sum is not finite the compensation is meaningless. */
static inline double neumaier_total(double sum, double comp) {
    return isfinite(sum) ? sum + comp : sum;
}

static inline bool c_has_nan(const wv *x) { return isnan(x->c[0]) || isnan(x->c[1]); }

/* The ufuncs' lexicographic >= and <= (a NaN part makes the real-part test false). */
static inline bool c_ge(const wv *x, const wv *y) {
    return (x->c[0] > y->c[0] && !isnan(x->c[1]) && !isnan(y->c[1])) ||
           (x->c[0] == y->c[0] && x->c[1] >= y->c[1]);
}
static inline bool c_le(const wv *x, const wv *y) {
    return (x->c[0] < y->c[0] && !isnan(x->c[1]) && !isnan(y->c[1])) ||
           (x->c[0] == y->c[0] && x->c[1] <= y->c[1]);
}

/* |x| as a double, of any class. */
static inline double w_abs(fch_wide k, const wv *x) {
    switch (k) {
    case FCH_W_I64: return x->i < 0 ? -(double)x->i : (double)x->i;
    case FCH_W_U64: return (double)x->u;
    case FCH_W_F64: return fabs(x->f);
    default: return hypot(x->c[0], x->c[1]);
    }
}

static inline double w_abs2(fch_wide k, const wv *x) {
    if (k == FCH_W_C128) return x->c[0] * x->c[0] + x->c[1] * x->c[1];
    double v = k == FCH_W_I64 ? (double)x->i : k == FCH_W_U64 ? (double)x->u : x->f;
    return v * v;
}

static inline double w_real(fch_wide k, const wv *x) {
    switch (k) {
    case FCH_W_I64: return (double)x->i;
    case FCH_W_U64: return (double)x->u;
    case FCH_W_F64: return x->f;
    default: return x->c[0];
    }
}

static inline bool w_truth(fch_wide k, const wv *x) {
    switch (k) {
    case FCH_W_I64: return x->i != 0;
    case FCH_W_U64: return x->u != 0;
    case FCH_W_F64: return x->f != 0;
    default: return x->c[0] != 0 || x->c[1] != 0;
    }
}

/* NaN wins; later values win ties (NumPy's max/min of -0.0 and 0.0 give the later one). */
static inline double max_nan(double acc, double v) {
    return isnan(acc) ? acc : (v >= acc || isnan(v)) ? v : acc;
}
static inline double min_nan(double acc, double v) {
    return isnan(acc) ? acc : (v <= acc || isnan(v)) ? v : acc;
}

typedef enum red_pass { PASS_MAIN, PASS_DEVIATION } red_pass;

/* One reduction as its descriptor (graph/graph.h) says: map, then combine; MOMENTS runs as
 * two passes here (the sum for the mean, then the squared deviations from it), which is as
 * exact as the GPU's Welford and Chan merges and simpler. */
typedef struct red_job {
    const fcg_reduction *d;
    red_pass pass;
    fc_dtype in_dtype, loop;
    fch_wide k;  /* class of the loop dtype */
    fch_wide ak; /* class the combine works in: F64 after an ABS / ABS2 map, else k */
} red_job;

/* Folds v (class job->ak) into acc. */
static fc_status red_combine(const red_job *job, wv *acc, wv *comp, const wv *v) {
    fch_wide k = job->ak;
    switch (job->d->combine) {
    case FCG_COMBINE_ADD:
    case FCG_COMBINE_MOMENTS: /* the main pass sums, for the mean */
        if (k == FCH_W_I64 || k == FCH_W_U64) {
            acc->u += v->u; /* for signed values the same bits as wrapping addition */
        } else if (k == FCH_W_C128) {
            neumaier(&acc->c[0], &comp->c[0], v->c[0]);
            neumaier(&acc->c[1], &comp->c[1], v->c[1]);
        } else {
            neumaier(&acc->f, &comp->f, v->f);
        }
        return FC_OK;
    case FCG_COMBINE_MUL:
        if (k == FCH_W_I64 || k == FCH_W_U64) {
            acc->u *= v->u;
        } else if (k == FCH_W_F64) {
            acc->f *= v->f;
        } else {
            double re = acc->c[0] * v->c[0] - acc->c[1] * v->c[1];
            double im = acc->c[0] * v->c[1] + acc->c[1] * v->c[0];
            acc->c[0] = re;
            acc->c[1] = im;
        }
        return FC_OK;
    case FCG_COMBINE_MAX:
    case FCG_COMBINE_MIN: {
        bool is_max = job->d->combine == FCG_COMBINE_MAX;
        switch (k) {
        case FCH_W_I64:
            if (is_max ? v->i > acc->i : v->i < acc->i) acc->i = v->i;
            break;
        case FCH_W_U64:
            if (is_max ? v->u > acc->u : v->u < acc->u) acc->u = v->u;
            break;
        case FCH_W_F64:
            acc->f = is_max ? max_nan(acc->f, v->f) : min_nan(acc->f, v->f);
            break;
        case FCH_W_C128:
            /* maximum(acc, v): acc stays if it holds NaN or compares >= */
            if (!(c_has_nan(acc) || (is_max ? c_ge(acc, v) : c_le(acc, v)))) *acc = *v;
            break;
        }
        return FC_OK;
    }
    case FCG_COMBINE_OR: acc->i |= w_truth(k, v); return FC_OK;
    case FCG_COMBINE_AND: acc->i &= w_truth(k, v); return FC_OK;
    case FCG_COMBINE_ARGMAX: /* arg_reduce */
    case FCG_COMBINE_ARGMIN:
    case FCG_COMBINE_USER: /* fch_reduce refuses user kernels first */
    case FCG_COMBINE_UNSET: break;
    }
    return FC_ERR_UNSUPPORTED;
}

/* ptrs: input, accumulator, compensation, mean (deviation pass only). */
static fc_status red_run(void *user, char *const *ptrs, const int64_t *strides, int64_t n) {
    const red_job *job = user;
    fch_wide k = job->k;
    wv x[FCH_CHUNK];
    for (int64_t i0 = 0; i0 < n; i0 += FCH_CHUNK) {
        size_t m = (size_t)(n - i0 < FCH_CHUNK ? n - i0 : FCH_CHUNK);
        fch_gather_wide(job->in_dtype, ptrs[0] + i0 * strides[0], strides[0], m, job->loop, x);
        char *accp = ptrs[1] + i0 * strides[1];
        char *compp = ptrs[2] + i0 * strides[2];
        for (size_t i = 0; i < m; i++) {
            wv *acc = (wv *)(accp + (int64_t)i * strides[1]);
            wv *comp = (wv *)(compp + (int64_t)i * strides[2]);
            const wv *v = &x[i];
            if (job->pass == PASS_DEVIATION) {
                const wv *mean = (const wv *)(ptrs[3] + (i0 + (int64_t)i) * strides[3]);
                double d2;
                if (k == FCH_W_C128) {
                    double dr = v->c[0] - mean->c[0], di = v->c[1] - mean->c[1];
                    d2 = dr * dr + di * di;
                } else {
                    double d = w_real(k, v) - mean->f;
                    d2 = d * d;
                }
                neumaier(&acc->f, &comp->f, d2);
                continue;
            }
            wv mapped;
            switch (job->d->map) {
            case FCG_MAP_VALUE: break;
            case FCG_MAP_ABS:
                mapped.f = w_abs(k, v);
                v = &mapped;
                break;
            case FCG_MAP_ABS2:
                mapped.f = w_abs2(k, v);
                v = &mapped;
                break;
            case FCG_MAP_USER:
            case FCG_MAP_UNSET: return FC_ERR_UNSUPPORTED;
            }
            fc_status st = red_combine(job, acc, comp, v);
            if (st != FC_OK) return st;
        }
    }
    return FC_OK;
}

static fc_status red_init(const red_job *job, wv *acc, size_t nout) {
    wv init;
    memset(&init, 0, sizeof init);
    fch_wide k = job->ak;
    switch (job->d->identity) {
    case FCG_ID_ZERO:
    case FCG_ID_FALSE: break;
    case FCG_ID_TRUE: init.i = 1; break;
    case FCG_ID_ONE:
        if (k == FCH_W_F64) init.f = 1;
        else if (k == FCH_W_C128) init.c[0] = 1;
        else init.u = 1;
        break;
    case FCG_ID_NONE: /* never empty (graph/reduce.c): the running extreme starts beyond all */
        if (job->d->combine == FCG_COMBINE_MAX) {
            if (k == FCH_W_I64) init.i = INT64_MIN;
            else if (k == FCH_W_U64) init.u = 0;
            else if (k == FCH_W_F64) init.f = -INFINITY;
            else init.c[0] = init.c[1] = -INFINITY;
        } else if (job->d->combine == FCG_COMBINE_MIN) {
            if (k == FCH_W_I64) init.i = INT64_MAX;
            else if (k == FCH_W_U64) init.u = UINT64_MAX;
            else if (k == FCH_W_F64) init.f = INFINITY;
            else init.c[0] = init.c[1] = INFINITY;
        } else {
            return FC_ERR_UNSUPPORTED;
        }
        break;
    case FCG_ID_USER:
    case FCG_ID_UNSET: return FC_ERR_UNSUPPORTED;
    }
    for (size_t i = 0; i < nout; i++) acc[i] = init;
    return FC_OK;
}

/* ---- argmax / argmin -------------------------------------------------------------------- */

typedef struct arg_state {
    bool is_max;
    fc_dtype in_dtype, loop;
    fch_wide k;
    int64_t pos;   /* index of the next value */
    int64_t best_i;
    wv best;
    bool done;     /* a NaN was found: it wins */
} arg_state;

static bool arg_is_nan(fch_wide k, const wv *x) {
    return (k == FCH_W_F64 && isnan(x->f)) || (k == FCH_W_C128 && c_has_nan(x));
}

/* Whether x replaces the best so far (strictly better, or NaN). */
static bool arg_better(const arg_state *st, const wv *x) {
    const wv *b = &st->best;
    switch (st->k) {
    case FCH_W_I64: return st->is_max ? x->i > b->i : x->i < b->i;
    case FCH_W_U64: return st->is_max ? x->u > b->u : x->u < b->u;
    case FCH_W_F64: return st->is_max ? !(x->f <= b->f) : !(x->f >= b->f);
    default:
        if (c_has_nan(x)) return true;
        if (st->is_max)
            return x->c[0] > b->c[0] || (x->c[0] == b->c[0] && x->c[1] > b->c[1]);
        return x->c[0] < b->c[0] || (x->c[0] == b->c[0] && x->c[1] < b->c[1]);
    }
}

static fc_status arg_run(void *user, char *const *ptrs, const int64_t *strides, int64_t n) {
    arg_state *st = user;
    wv x[FCH_CHUNK];
    for (int64_t i0 = 0; i0 < n && !st->done; i0 += FCH_CHUNK) {
        size_t m = (size_t)(n - i0 < FCH_CHUNK ? n - i0 : FCH_CHUNK);
        fch_gather_wide(st->in_dtype, ptrs[0] + i0 * strides[0], strides[0], m, st->loop, x);
        for (size_t i = 0; i < m; i++) {
            int64_t pos = st->pos + i0 + (int64_t)i;
            if (pos == 0 || arg_better(st, &x[i])) {
                st->best = x[i];
                st->best_i = pos;
                if (arg_is_nan(st->k, &x[i])) {
                    st->done = true;
                    break;
                }
            }
        }
    }
    st->pos += n;
    return FC_OK;
}

static fc_status arg_reduce(const fc_array *a, const fcg_reduction *desc, const char *in,
                            const int64_t *in_strides, char *out) {
    const fc_array *x = a->in[0];
    arg_state st0 = {.is_max = desc->combine == FCG_COMBINE_ARGMAX, .in_dtype = (fc_dtype)x->dtype,
                     .loop = (fc_dtype)a->loop_dtype};
    st0.k = fch_wide_of(st0.loop);
    int64_t *o = (int64_t *)(void *)out;
    if (a->p.flag || x->ndim == 0) {
        arg_state st = st0;
        char *base = (char *)in;
        fc_status s = fch_iterate(x->ndim, x->shape, 1, &base,
                                  (const int64_t(*)[FC_MAX_DIMS])in_strides, arg_run, &st);
        if (s != FC_OK) return s;
        int64_t r = st.best_i;
        memcpy(out, &r, sizeof r);
        return FC_OK;
    }
    int axis = 0;
    while (axis < x->ndim && !(a->p.axes & (1u << axis))) axis++;
    if (axis == x->ndim) return FC_ERR_UNSUPPORTED;
    /* one run along the axis per output element, outputs in row-major order of the rest */
    int64_t kept_shape[FC_MAX_DIMS], kept_str[FC_MAX_DIMS];
    int nk = 0;
    size_t nout = 1;
    for (int d = 0; d < x->ndim; d++) {
        if (d == axis) continue;
        kept_shape[nk] = x->shape[d];
        kept_str[nk++] = in_strides[d];
        nout *= (size_t)x->shape[d];
    }
    int64_t idx[FC_MAX_DIMS] = {0};
    for (size_t oi = 0; oi < nout; oi++) {
        const char *p = in;
        for (int d = 0; d < nk; d++) p += idx[d] * kept_str[d];
        arg_state st = st0;
        char *base = (char *)p;
        int64_t stride = in_strides[axis];
        (void)arg_run(&st, &base, &stride, x->shape[axis]);
        int64_t r = st.best_i;
        memcpy(o + oi, &r, sizeof r);
        for (int d = nk - 1; d >= 0; d--) {
            if (++idx[d] < kept_shape[d]) break;
            idx[d] = 0;
        }
    }
    return FC_OK;
}

/* ---- reductions ------------------------------------------------------------------------- */

static fc_status red_finish(const fc_array *a, const red_job *job, wv *acc, const wv *comp,
                            size_t nout, int64_t count, char *out) {
    fch_wide k = job->ak;
    fc_dtype d = (fc_dtype)a->dtype;
    size_t dsize = fc_dtype_size(d);
    bool summed = job->d->combine == FCG_COMBINE_ADD || job->d->combine == FCG_COMBINE_MOMENTS;
    for (size_t i = 0; i < nout; i++) {
        wv v = acc[i];
        fch_wide outk = k;
        if (summed && k == FCH_W_F64) {
            v.f = neumaier_total(acc[i].f, comp[i].f);
        } else if (summed && k == FCH_W_C128) {
            v.c[0] = neumaier_total(acc[i].c[0], comp[i].c[0]);
            v.c[1] = neumaier_total(acc[i].c[1], comp[i].c[1]);
        }
        switch (job->d->finish) {
        case FCG_FINISH_NONE: break;
        case FCG_FINISH_MEAN:
            if (k == FCH_W_C128) {
                /* NumPy divides by the count as a complex (Smith's algorithm, ratio 0): an
                 * infinite part makes the other NaN (inf * 0), as np.mean gives. */
                double re = v.c[0], im = v.c[1];
                v.c[0] = (re + im * 0.0) / (double)count;
                v.c[1] = (im - re * 0.0) / (double)count;
            } else {
                v.f /= (double)count;
                outk = FCH_W_F64;
            }
            break;
        case FCG_FINISH_VARIANCE:
        case FCG_FINISH_STD: {
            /* acc holds the squared deviations (the second pass). NumPy divides by
             * max(count - ddof, 0): 0/0 is NaN, x/0 is inf */
            int64_t div = count - a->p.ddof;
            v.f /= (double)(div > 0 ? div : 0);
            if (job->d->finish == FCG_FINISH_STD) v.f = sqrt(v.f);
            outk = FCH_W_F64;
            break;
        }
        case FCG_FINISH_SQRT:
            v.f = sqrt(v.f);
            outk = FCH_W_F64;
            break;
        case FCG_FINISH_INDEX: /* arg_reduce */
        case FCG_FINISH_USER:
        case FCG_FINISH_UNSET: return FC_ERR_UNSUPPORTED;
        }
        fch_write_wide(outk, &v, 1, d, out + i * dsize, (int64_t)dsize);
    }
    return FC_OK;
}

fc_status fch_reduce(fc_ctx *ctx, const fc_array *a, const char *in, const int64_t *in_strides,
                     char *out) {
    const fcg_reduction *desc = fcg_reduction_of(a);
    if (desc->combine == FCG_COMBINE_USER) {
        const fcg_user_kernel *k = fcg_user_find(ctx, (uint64_t)a->p.ival);
        return fcg_error(ctx, FC_ERR_UNSUPPORTED, "%s: user kernels need the CUDA backend (the "
                         "host backend does not run CUDA C)", k ? k->name : "reduction kernel");
    }
    if (desc->combine == FCG_COMBINE_ARGMAX || desc->combine == FCG_COMBINE_ARGMIN)
        return arg_reduce(a, desc, in, in_strides, out);
    const fc_array *x = a->in[0];
    red_job job = {.d = desc, .pass = PASS_MAIN, .in_dtype = (fc_dtype)x->dtype,
                   .loop = (fc_dtype)a->loop_dtype};
    job.k = fch_wide_of(job.loop);
    job.ak = desc->map == FCG_MAP_VALUE ? job.k : FCH_W_F64;
    bool mean_pass = desc->combine == FCG_COMBINE_MOMENTS;
    size_t nout = fcg_node_numel(a);
    int64_t count = 1;
    int64_t strides[FCH_MAX_OPS][FC_MAX_DIMS];
    /* accumulator strides: kept dims row-major, reduced dims 0 */
    int64_t s = (int64_t)sizeof(wv);
    for (int d = x->ndim - 1; d >= 0; d--) {
        strides[0][d] = in_strides[d];
        if (a->p.axes & (1u << d)) {
            strides[1][d] = 0;
            count *= x->shape[d];
        } else {
            strides[1][d] = s;
            s *= x->shape[d];
        }
        strides[2][d] = strides[3][d] = strides[1][d];
    }
    size_t bytes = (nout ? nout : 1) * sizeof(wv);
    wv *acc = fcg_malloc(ctx, bytes);
    wv *comp = fcg_calloc(ctx, bytes);
    wv *mean = mean_pass ? fcg_malloc(ctx, bytes) : NULL;
    fc_status st = FC_OK;
    if (!acc || !comp || (mean_pass && !mean)) {
        st = fcg_error(ctx, FC_ERR_NOMEM, "%s: out of memory for the accumulators",
                       fcg_ops[a->op].pyname);
        goto done;
    }
    st = red_init(&job, acc, nout);
    if (st != FC_OK) goto unsupported;
    char *bases[FCH_MAX_OPS] = {(char *)in, (char *)acc, (char *)comp, (char *)mean};
    st = fch_iterate(x->ndim, x->shape, 3, bases, (const int64_t(*)[FC_MAX_DIMS])strides, red_run,
                     &job);
    if (st == FC_OK && mean_pass) {
        for (size_t i = 0; i < nout; i++) {
            if (job.k == FCH_W_C128) {
                mean[i].c[0] = neumaier_total(acc[i].c[0], comp[i].c[0]) / (double)count;
                mean[i].c[1] = neumaier_total(acc[i].c[1], comp[i].c[1]) / (double)count;
            } else {
                mean[i].f = neumaier_total(acc[i].f, comp[i].f) / (double)count;
            }
        }
        memset(acc, 0, bytes);
        memset(comp, 0, bytes);
        job.pass = PASS_DEVIATION;
        st = fch_iterate(x->ndim, x->shape, 4, bases, (const int64_t(*)[FC_MAX_DIMS])strides,
                         red_run, &job);
        job.ak = FCH_W_F64; /* the squared deviations are real */
    }
    if (st == FC_OK) st = red_finish(a, &job, acc, comp, nout, count, out);
unsupported:
    if (st != FC_OK && st != FC_ERR_NOMEM)
        st = fcg_error(ctx, st, "%s: not supported on the host for %s", fcg_ops[a->op].pyname,
                       fc_dtype_name((fc_dtype)a->loop_dtype));
done:
    if (acc) fcg_free(ctx, acc, bytes);
    if (comp) fcg_free(ctx, comp, bytes);
    if (mean) fcg_free(ctx, mean, bytes);
    return st;
}

/* ---- scans ------------------------------------------------------------------------------ */

/* Inclusive scans: each line along p.axis is folded in order by the reduction's combine (sums
 * with Neumaier compensation in double), every running value written as it stands. */
fc_status fch_scan(fc_ctx *ctx, const fc_array *a, const char *in, const int64_t *in_strides,
                   char *out) {
    const fcg_reduction *desc = fcg_reduction_of(a);
    const fc_array *x = a->in[0];
    red_job job = {.d = desc, .pass = PASS_MAIN, .in_dtype = (fc_dtype)x->dtype,
                   .loop = (fc_dtype)a->loop_dtype};
    job.k = job.ak = fch_wide_of(job.loop);
    const int nd = a->ndim, axis = a->p.axis;
    const size_t dsize = fc_dtype_size((fc_dtype)a->dtype);
    if (fcg_node_numel(a) == 0) return FC_OK;
    int64_t out_strides[FC_MAX_DIMS];
    fch_contig_strides(nd, a->shape, (int64_t)dsize, out_strides);
    const int64_t len = a->shape[axis];
    int64_t pos[FC_MAX_DIMS] = {0};
    for (;;) {
        const char *ip = in;
        char *op = out;
        for (int d = 0; d < nd; d++) {
            ip += pos[d] * in_strides[d];
            op += pos[d] * out_strides[d];
        }
        wv acc, comp;
        memset(&comp, 0, sizeof comp);
        fc_status st = red_init(&job, &acc, 1);
        for (int64_t l0 = 0; st == FC_OK && l0 < len; l0 += FCH_CHUNK) {
            wv v[FCH_CHUNK];
            size_t m = (size_t)(len - l0 < FCH_CHUNK ? len - l0 : FCH_CHUNK);
            fch_gather_wide(job.in_dtype, ip + l0 * in_strides[axis], in_strides[axis], m,
                            job.loop, v);
            for (size_t i = 0; st == FC_OK && i < m; i++) {
                st = red_combine(&job, &acc, &comp, &v[i]);
                if (st == FC_OK)
                    st = red_finish(a, &job, &acc, &comp, 1, 1,
                                    op + (l0 + (int64_t)i) * out_strides[axis]);
            }
        }
        if (st != FC_OK)
            return fcg_error(ctx, st, "%s: not supported on the host for %s",
                             fcg_ops[a->op].pyname, fc_dtype_name(job.loop));
        if (!fch_next_line(nd, a->shape, axis, pos)) return FC_OK;
    }
}

/* ---- matmul ----------------------------------------------------------------------------- */

typedef struct widen_job {
    fc_dtype s, l;
} widen_job;

static fc_status widen_run(void *user, char *const *ptrs, const int64_t *strides, int64_t n) {
    const widen_job *job = user;
    for (int64_t i = 0; i < n; i += FCH_CHUNK) {
        size_t m = (size_t)(n - i < FCH_CHUNK ? n - i : FCH_CHUNK);
        fch_gather_wide(job->s, ptrs[0] + i * strides[0], strides[0], m, job->l,
                        ptrs[1] + i * strides[1]);
    }
    return FC_OK;
}

/* The operand converted to the loop dtype, as contiguous wide values. */
static wv *widen(fc_ctx *ctx, const fc_array *x, const char *base, const int64_t *strides,
                 fc_dtype loop, size_t *bytes) {
    size_t n = fcg_node_numel(x);
    *bytes = (n ? n : 1) * sizeof(wv);
    wv *w = fcg_malloc(ctx, *bytes);
    if (!w) return NULL;
    int64_t st[2][FC_MAX_DIMS];
    memcpy(st[0], strides, sizeof(int64_t) * (size_t)x->ndim);
    fch_contig_strides(x->ndim, x->shape, sizeof(wv), st[1]);
    char *bases[2] = {(char *)base, (char *)w};
    widen_job job = {(fc_dtype)x->dtype, loop};
    (void)fch_iterate(x->ndim, x->shape, 2, bases, (const int64_t(*)[FC_MAX_DIMS])st, widen_run,
                      &job);
    return w;
}

fc_status fch_matmul(fc_ctx *ctx, const fc_array *a, const char *const *in,
                     const int64_t (*in_strides)[FC_MAX_DIMS], char *out) {
    const fc_array *A = a->in[0], *B = a->in[1];
    fc_dtype loop = (fc_dtype)a->loop_dtype, d = (fc_dtype)a->dtype;
    fch_wide k = fch_wide_of(loop);
    /* 1-D operands: a row vector on the left, a column vector on the right */
    int64_t n = A->ndim >= 2 ? A->shape[A->ndim - 2] : 1;
    int64_t kk = A->shape[A->ndim - 1];
    int64_t m = B->ndim >= 2 ? B->shape[B->ndim - 1] : 1;
    int abatch = A->ndim >= 2 ? A->ndim - 2 : 0, bbatch = B->ndim >= 2 ? B->ndim - 2 : 0;
    int nb = abatch > bbatch ? abatch : bbatch;
    int64_t bshape[FC_MAX_DIMS], astr[FC_MAX_DIMS], bstr[FC_MAX_DIMS];
    /* batch strides (in matrices) of each operand, broadcast dims 0 */
    int64_t amat = 1, bmat = 1;
    for (int i = nb - 1; i >= 0; i--) {
        int ia = i - (nb - abatch), ib = i - (nb - bbatch);
        int64_t ea = ia >= 0 ? A->shape[ia] : 1, eb = ib >= 0 ? B->shape[ib] : 1;
        bshape[i] = ea > eb ? ea : eb;
        astr[i] = ea == 1 ? 0 : amat;
        bstr[i] = eb == 1 ? 0 : bmat;
        amat *= ea;
        bmat *= eb;
    }
    size_t abytes = 0, bbytes = 0, rbytes = (size_t)(m ? m : 1) * sizeof(wv);
    wv *wa = widen(ctx, A, in[0], in_strides[0], loop, &abytes);
    wv *wb = wa ? widen(ctx, B, in[1], in_strides[1], loop, &bbytes) : NULL;
    wv *row = wb ? fcg_malloc(ctx, rbytes) : NULL;
    if (!row) {
        if (wa) fcg_free(ctx, wa, abytes);
        if (wb) fcg_free(ctx, wb, bbytes);
        return fcg_error(ctx, FC_ERR_NOMEM, "matmul: out of memory");
    }
    size_t dsize = fc_dtype_size(d);
    int64_t nbatch = 1;
    for (int i = 0; i < nb; i++) nbatch *= bshape[i];
    int64_t idx[FC_MAX_DIMS] = {0};
    char *o = out;
    for (int64_t bi = 0; bi < nbatch; bi++) {
        int64_t ao = 0, bo = 0;
        for (int i = 0; i < nb; i++) {
            ao += idx[i] * astr[i];
            bo += idx[i] * bstr[i];
        }
        const wv *ma = wa + ao * n * kk, *mb = wb + bo * kk * m;
        for (int64_t i = 0; i < n; i++) {
            memset(row, 0, (size_t)m * sizeof(wv));
            for (int64_t p = 0; p < kk; p++) {
                const wv *x = &ma[i * kk + p];
                const wv *y = &mb[p * m];
                switch (k) {
                case FCH_W_I64:
                case FCH_W_U64: /* wraps as the narrow dtype would */
                    for (int64_t j = 0; j < m; j++) row[j].u += x->u * y[j].u;
                    break;
                case FCH_W_F64:
                    for (int64_t j = 0; j < m; j++) row[j].f += x->f * y[j].f;
                    break;
                default:
                    for (int64_t j = 0; j < m; j++) {
                        row[j].c[0] += x->c[0] * y[j].c[0] - x->c[1] * y[j].c[1];
                        row[j].c[1] += x->c[0] * y[j].c[1] + x->c[1] * y[j].c[0];
                    }
                    break;
                }
            }
            fch_write_wide(k, row, (size_t)m, d, o, (int64_t)dsize);
            o += (size_t)m * dsize;
        }
        for (int i = nb - 1; i >= 0; i--) {
            if (++idx[i] < bshape[i]) break;
            idx[i] = 0;
        }
    }
    fcg_free(ctx, wa, abytes);
    fcg_free(ctx, wb, bbytes);
    fcg_free(ctx, row, rbytes);
    return FC_OK;
}
