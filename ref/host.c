/*
 * ref/host.c - the host reference backend: evaluates a graph on the CPU as NumPy would.
 *
 * fch_eval collects the nodes the requested arrays need (stopping at nodes that already hold a
 * value), orders them so inputs come first, and computes each once. A value is a base pointer
 * plus byte strides into a buffer: views (reshape of contiguous data, transpose, slice,
 * broadcast) only rewrite strides, and elementwise ops read broadcast inputs through stride 0,
 * so nothing is copied that NumPy would not copy. Buffers are counted per owner and freed as
 * soon as the last value living in them has no consumer left in this evaluation.
 *
 * Where C leaves a conversion undefined (a NaN or out-of-range float cast to an integer) the
 * result is defined here as fch_f64_to_i64 says: NaN -> 0, saturate to int64, then wrap.
 */
#include "host.h"

#include <math.h>
#include <string.h>

typedef struct slot {
    fc_array *node;
    uint32_t uses;     /* consumers still to run in this evaluation, plus one per request */
    int32_t owner;     /* slot whose buffer holds this value; -1: the node's own host data */
    uint32_t buf_refs; /* live values in this slot's own buffer */
    char *data;        /* this slot's own buffer (contiguous, node dtype), or NULL */
    size_t bytes;
    char *base;        /* element [0, ..., 0] of this value */
    int64_t strides[FC_MAX_DIMS];
} slot;

typedef struct evaluator {
    fc_ctx *ctx;
    slot *slots;
    size_t n, cap;
    uint32_t *table; /* open addressing, node -> slot index + 1 (0: empty) */
    size_t tcap;
} evaluator;

/* Grows an array to hold ncap elements (malloc + copy: no reliance on realloc(NULL)). */
static void *grow(fc_ctx *ctx, void *old, size_t old_bytes, size_t new_bytes) {
    void *p = fcg_malloc(ctx, new_bytes);
    if (!p) return NULL;
    if (old) {
        memcpy(p, old, old_bytes);
        fcg_free(ctx, old, old_bytes);
    }
    return p;
}

static void free_if(fc_ctx *ctx, void *p, size_t bytes) {
    if (p) fcg_free(ctx, p, bytes);
}

/* ---- node -> slot map ------------------------------------------------------------------- */

static size_t ptr_hash(const void *p, size_t cap) {
    uint64_t h = fcg_mix64((uint64_t)(uintptr_t)p);
    return (size_t)h & (cap - 1);
}

static int64_t find_slot(const evaluator *ev, const fc_array *a) {
    if (!ev->tcap) return -1;
    for (size_t i = ptr_hash(a, ev->tcap);; i = (i + 1) & (ev->tcap - 1)) {
        uint32_t v = ev->table[i];
        if (!v) return -1;
        if (ev->slots[v - 1].node == a) return v - 1;
    }
}

static void table_put(evaluator *ev, const fc_array *a, size_t idx) {
    size_t i = ptr_hash(a, ev->tcap);
    while (ev->table[i]) i = (i + 1) & (ev->tcap - 1);
    ev->table[i] = (uint32_t)(idx + 1);
}

static fc_status add_slot(evaluator *ev, fc_array *a) {
    if (ev->n == ev->cap) {
        size_t ncap = ev->cap ? ev->cap * 2 : 16;
        slot *ns = grow(ev->ctx, ev->slots, ev->cap * sizeof(slot), ncap * sizeof(slot));
        if (!ns) return FC_ERR_NOMEM;
        ev->slots = ns;
        ev->cap = ncap;
    }
    if ((ev->n + 1) * 2 > ev->tcap) {
        size_t ncap = ev->tcap ? ev->tcap * 2 : 64;
        uint32_t *nt = fcg_calloc(ev->ctx, ncap * sizeof(uint32_t));
        if (!nt) return FC_ERR_NOMEM;
        free_if(ev->ctx, ev->table, ev->tcap * sizeof(uint32_t));
        ev->table = nt;
        ev->tcap = ncap;
        for (size_t i = 0; i < ev->n; i++) table_put(ev, ev->slots[i].node, i);
    }
    slot *s = &ev->slots[ev->n];
    memset(s, 0, sizeof *s);
    s->node = a;
    s->owner = -1;
    table_put(ev, a, ev->n);
    ev->n++;
    return FC_OK;
}

static bool is_leaf(const fc_array *a) { return a->host != NULL; }

/* Depth-first, inputs before their consumers: slots end up in evaluation order. */
static fc_status collect(evaluator *ev, fc_array *const *arrays, int n) {
    fc_ctx *ctx = ev->ctx;
    typedef struct frame {
        fc_array *a;
        int next;
    } frame;
    frame *stack = NULL;
    size_t depth = 0, scap = 0;
    fc_status st = FC_OK;
    for (int r = 0; r < n && st == FC_OK; r++) {
        if (find_slot(ev, arrays[r]) >= 0) continue;
        if (depth == scap) {
            size_t ncap = scap ? scap * 2 : 64;
            frame *ns = grow(ctx, stack, scap * sizeof(frame), ncap * sizeof(frame));
            if (!ns) { st = FC_ERR_NOMEM; break; }
            stack = ns;
            scap = ncap;
        }
        stack[depth++] = (frame){arrays[r], 0};
        while (depth && st == FC_OK) {
            frame *f = &stack[depth - 1];
            fc_array *a = f->a;
            if (f->next == 0 && !is_leaf(a)) {
                if (a->op == FCG_OP_POISON) {
                    st = fcg_error(ctx, a->status, "%s", a->errmsg ? a->errmsg : "poisoned array");
                    break;
                }
                if (a->op == FCG_OP_INPUT) {
                    st = fcg_error(ctx, FC_ERR_UNBOUND, "program input %lld has no data",
                                   (long long)a->p.ival);
                    break;
                }
                if (a->op == FCG_OP_DATA && fcg_node_numel(a) != 0) {
                    st = fcg_error(ctx, FC_ERR_INVALID, "host: a data array holds no data");
                    break;
                }
            }
            if (!is_leaf(a) && f->next < a->nin) {
                fc_array *c = a->in[f->next++];
                if (find_slot(ev, c) >= 0) continue;
                if (depth == scap) {
                    size_t ncap = scap * 2;
                    frame *ns = grow(ctx, stack, scap * sizeof(frame), ncap * sizeof(frame));
                    if (!ns) { st = FC_ERR_NOMEM; break; }
                    stack = ns;
                    scap = ncap;
                }
                stack[depth++] = (frame){c, 0};
                continue;
            }
            depth--;
            if (add_slot(ev, a) != FC_OK) st = FC_ERR_NOMEM;
        }
    }
    free_if(ctx, stack, scap * sizeof(frame));
    if (st == FC_ERR_NOMEM) fcg_error(ctx, st, "host: out of memory while ordering the graph");
    return st;
}

/* ---- values ----------------------------------------------------------------------------- */

static size_t node_bytes(const fc_array *a) {
    return fcg_node_numel(a) * fc_dtype_size((fc_dtype)a->dtype);
}

/* Gives slot s a fresh contiguous buffer of its node's size. */
static fc_status own_buffer(evaluator *ev, size_t idx) {
    slot *s = &ev->slots[idx];
    const fc_array *a = s->node;
    s->bytes = node_bytes(a);
    s->data = fcg_malloc(ev->ctx, s->bytes); /* non-NULL even when empty */
    if (!s->data)
        return fcg_error(ev->ctx, FC_ERR_NOMEM, "%s: out of memory for %zu bytes",
                         fcg_ops[a->op].pyname, s->bytes);
    s->owner = (int32_t)idx;
    s->buf_refs = 1;
    s->base = s->data;
    fch_contig_strides(a->ndim, a->shape, fc_dtype_size((fc_dtype)a->dtype), s->strides);
    return FC_OK;
}

/* Makes slot s a view into the buffer holding slot `from`. */
static void share_buffer(evaluator *ev, slot *s, const slot *from) {
    s->owner = from->owner;
    if (s->owner >= 0) ev->slots[s->owner].buf_refs++;
}

static void drop_buffer_ref(evaluator *ev, int32_t owner) {
    if (owner < 0) return;
    slot *o = &ev->slots[owner];
    if (--o->buf_refs == 0 && o->data) {
        fcg_free(ev->ctx, o->data, o->bytes);
        o->data = NULL;
    }
}

static void release_use(evaluator *ev, slot *s) {
    if (--s->uses == 0) {
        drop_buffer_ref(ev, s->owner);
        s->owner = -1;
    }
}

static const slot *input_slot(const evaluator *ev, const fc_array *a, int i) {
    return &ev->slots[find_slot(ev, a->in[i])];
}

/* Whether the value is laid out row-major without gaps (extent-1 dims are free). */
static bool is_contiguous(const slot *s) {
    const fc_array *a = s->node;
    int64_t expect = (int64_t)fc_dtype_size((fc_dtype)a->dtype);
    for (int d = a->ndim - 1; d >= 0; d--) {
        if (a->shape[d] == 1) continue;
        if (s->strides[d] != expect) return false;
        expect *= a->shape[d];
    }
    return true;
}

/* ---- sources ---------------------------------------------------------------------------- */

static fch_wide_val const_value(const fc_array *a, fch_wide *k) {
    fch_wide_val v;
    memset(&v, 0, sizeof v);
    fc_dtype t = (fc_dtype)a->dtype;
    if (fcg_is_complex(t)) {
        *k = FCH_W_C128;
        v.c[0] = a->p.re;
        v.c[1] = a->p.im;
    } else if (fcg_is_float(t)) {
        *k = FCH_W_F64;
        v.f = a->p.re;
    } else if (fcg_is_uint(t)) {
        *k = FCH_W_U64;
        v.u = (uint64_t)a->p.ival;
    } else {
        *k = FCH_W_I64;
        v.i = a->p.ival;
    }
    return v;
}

/* Every element of the (contiguous) buffer set to one value. */
static void fill_value(char *dst, size_t n, fc_dtype t, fch_wide k, const fch_wide_val *v) {
    size_t es = fc_dtype_size(t);
    if (!n) return;
    fch_write_wide(k, v, 1, t, dst, (int64_t)es);
    for (size_t i = 1; i < n; i++) memcpy(dst + i * es, dst, es);
}

/* np.arange: the first two elements are start and start + step cast to the dtype, the rest
 * first + i * (second - first) in the dtype's own arithmetic (NumPy's fill functions). */
static void eval_arange(const fc_array *a, char *dst) {
    fc_dtype t = (fc_dtype)a->dtype;
    size_t n = fcg_node_numel(a), es = fc_dtype_size(t);
    double start = a->p.re, second = a->p.re + a->p.im;
    fch_wide_val w[2];
    w[0].f = start;
    w[1].f = second;
    char two[32];
    fch_write_wide(FCH_W_F64, w, 2, t, two, (int64_t)es);
    memcpy(dst, two, es * (n < 2 ? n : 2));
    if (n <= 2) return;
    switch (t) {
    case FC_F64: {
        double s, d;
        memcpy(&s, two, 8);
        memcpy(&d, two + 8, 8);
        d -= s;
        for (size_t i = 2; i < n; i++) {
            double v = s + (double)i * d;
            memcpy(dst + i * 8, &v, 8);
        }
        return;
    }
    case FC_F32: case FC_F16: case FC_BF16: {
        float s, d, v;
        fch_wide_val r[2];
        fch_read_wide(t, two, (int64_t)es, 2, r);
        s = (float)r[0].f;
        d = (float)r[1].f - s;
        for (size_t i = 2; i < n; i++) {
            v = s + (float)i * d;
            fch_wide_val x = {.f = v};
            fch_write_wide(FCH_W_F64, &x, 1, t, dst + i * es, (int64_t)es);
        }
        return;
    }
    case FC_C64: case FC_C128: {
        fch_wide_val r[2];
        fch_read_wide(t, two, (int64_t)es, 2, r);
        for (size_t i = 2; i < n; i++) {
            fch_wide_val x;
            if (t == FC_C64) {
                float sr = (float)r[0].c[0], si = (float)r[0].c[1];
                float dr = (float)r[1].c[0] - sr, di = (float)r[1].c[1] - si;
                x.c[0] = sr + (float)i * dr;
                x.c[1] = si + (float)i * di;
            } else {
                x.c[0] = r[0].c[0] + (double)i * (r[1].c[0] - r[0].c[0]);
                x.c[1] = r[0].c[1] + (double)i * (r[1].c[1] - r[0].c[1]);
            }
            fch_write_wide(FCH_W_C128, &x, 1, t, dst + i * es, (int64_t)es);
        }
        return;
    }
    default: {
        /* integers and bool: first + i * delta in wrapping 64-bit arithmetic, then the
         * dtype's width (delta itself wrapped to the dtype, which modular arithmetic
         * makes equivalent) */
        fch_wide_val r[2];
        fch_read_wide(t, two, (int64_t)es, 2, r);
        uint64_t s = r[0].u, d = r[1].u - r[0].u;
        for (size_t i = 2; i < n; i++) {
            fch_wide_val x = {.u = s + (uint64_t)i * d};
            fch_write_wide(fcg_is_uint(t) ? FCH_W_U64 : FCH_W_I64, &x, 1, t, dst + i * es,
                           (int64_t)es);
        }
        return;
    }
    }
}

/* np.linspace, step by step as NumPy 2 computes it (in f64, then cast; floor for integers). */
static void eval_linspace(const fc_array *a, char *dst) {
    fc_dtype t = (fc_dtype)a->dtype;
    int64_t num = a->p.count;
    bool endpoint = a->p.flag != 0;
    double start = a->p.re, stop = a->p.im;
    int64_t div = endpoint ? num - 1 : num;
    double delta = stop - start;
    double step = div > 0 ? delta / (double)div : NAN;
    size_t es = fc_dtype_size(t);
    for (int64_t i = 0; i < num; i++) {
        double y = (double)i;
        if (div > 0) {
            if (step == 0)
                y = y / (double)div * delta;
            else
                y = y * step;
        } else {
            y = y * delta;
        }
        y += start;
        if (endpoint && num > 1 && i == num - 1) y = stop;
        if (fcg_is_int(t)) y = floor(y);
        fch_wide_val x = {.f = y};
        fch_write_wide(FCH_W_F64, &x, 1, t, dst + (size_t)i * es, (int64_t)es);
    }
}

static void eval_eye(const fc_array *a, char *dst) {
    fc_dtype t = (fc_dtype)a->dtype;
    size_t es = fc_dtype_size(t);
    int64_t rows = a->shape[0], cols = a->shape[1], k = a->p.ival;
    memset(dst, 0, node_bytes(a)); /* zero is all-zero bits in every dtype */
    fch_wide_val one = {.i = 1};
    for (int64_t i = 0; i < rows; i++) {
        int64_t j = i + k;
        if (j >= 0 && j < cols) fch_write_wide(FCH_W_I64, &one, 1, t, dst + (size_t)(i * cols + j) * es, 0);
    }
}

static void eval_random(const fc_array *a, char *dst) {
    fc_dtype t = (fc_dtype)a->dtype, rt = fcg_real_dtype(t);
    size_t n = fcg_node_numel(a), es = fc_dtype_size(t);
    uint64_t seed = (uint64_t)a->p.ival, stream = (uint64_t)a->p.count;
    for (size_t i = 0; i < n; i++) {
        fch_wide_val x;
        fch_wide k;
        if (a->p.mode == FCG_RANDOM_INTEGERS) {
            x.u = fcg_random_integer_at(es == 8, (uint64_t)a->p.a[0], (uint64_t)a->p.b[0], seed,
                                        stream, i);
            k = fcg_is_sint(t) ? FCH_W_I64 : FCH_W_U64;
        } else if (fcg_is_complex(t)) {
            for (int q = 0; q < 2; q++)
                x.c[q] = a->p.mode == FCG_RANDOM_NORMAL
                             ? fcg_random_normal_at(rt, seed, stream, 2 * (uint64_t)i + q)
                             : fcg_random_uniform_at(rt, seed, stream, 2 * (uint64_t)i + q);
            k = FCH_W_C128;
        } else {
            x.f = a->p.mode == FCG_RANDOM_NORMAL ? fcg_random_normal_at(rt, seed, stream, i)
                                                 : fcg_random_uniform_at(rt, seed, stream, i);
            k = FCH_W_F64;
        }
        fch_write_wide(k, &x, 1, t, dst + i * es, (int64_t)es);
    }
}

/* ---- elementwise ------------------------------------------------------------------------ */

typedef struct ew_job {
    fcg_op op;
    int nin;
    fc_dtype in_dtype[3], gather_dtype[3], loop, out;
    fch_kind out_kind;
} ew_job;

static fc_status ew_run(void *user, char *const *ptrs, const int64_t *strides, int64_t n) {
    const ew_job *job = user;
    fch_wide_val kin[3][FCH_CHUNK], kout[FCH_CHUNK];
    const void *in[3] = {kin[0], kin[1], kin[2]};
    for (int64_t i = 0; i < n; i += FCH_CHUNK) {
        size_t m = (size_t)(n - i < FCH_CHUNK ? n - i : FCH_CHUNK);
        for (int j = 0; j < job->nin; j++)
            fch_gather(job->in_dtype[j], ptrs[j] + i * strides[j], strides[j], m,
                       job->gather_dtype[j], kin[j]);
        fc_status s = fch_ew_apply(job->op, job->loop, m, in, kout);
        if (s != FC_OK) return s;
        int o = job->nin;
        fch_store(job->out_kind, kout, m, job->out, ptrs[o] + i * strides[o], strides[o]);
    }
    return FC_OK;
}

/* Byte strides of input `in` read as if broadcast to the output shape (dims align right). */
static void broadcast_strides(const fc_array *out, const fc_array *in, const int64_t *in_str,
                              int64_t *str) {
    int off = out->ndim - in->ndim;
    for (int d = 0; d < out->ndim; d++) {
        int id = d - off;
        if (id < 0 || in->shape[id] == 1)
            str[d] = 0;
        else
            str[d] = in_str[id];
    }
}

static fc_status eval_ew(evaluator *ev, size_t idx) {
    slot *s = &ev->slots[idx];
    fc_array *a = s->node;
    fc_status st = own_buffer(ev, idx);
    if (st != FC_OK) return st;
    if (a->op == FCG_OP_CAST) {
        const slot *x = input_slot(ev, a, 0);
        fch_copy(a->ndim, a->shape, (fc_dtype)a->in[0]->dtype, x->base, x->strides,
                 (fc_dtype)a->dtype, s->base, s->strides);
        return FC_OK;
    }
    ew_job job = {.op = (fcg_op)a->op, .nin = a->nin, .loop = (fc_dtype)a->loop_dtype,
                  .out = (fc_dtype)a->dtype};
    job.out_kind = fch_ew_out_kind(job.op, job.loop);
    int64_t strides[FCH_MAX_OPS][FC_MAX_DIMS];
    char *bases[FCH_MAX_OPS];
    for (int j = 0; j < a->nin; j++) {
        const slot *x = input_slot(ev, a, j);
        job.in_dtype[j] = (fc_dtype)a->in[j]->dtype;
        job.gather_dtype[j] = (job.op == FCG_OP_WHERE && j == 0) ? FC_BOOL : job.loop;
        broadcast_strides(a, a->in[j], x->strides, strides[j]);
        bases[j] = x->base;
    }
    memcpy(strides[a->nin], s->strides, sizeof s->strides);
    bases[a->nin] = s->base;
    int nops = a->nin + 1;
    /* NumPy's fast path for a float power with a scalar exponent: x**2 is x*x, x**1 is x,
     * x**-1 is 1/x (not pow), and the simplify pass relies on that being exact. */
    if (job.op == FCG_OP_POW && a->in[1]->ndim == 0 && (job.loop == FC_F32 || job.loop == FC_F64)) {
        double e = 0;
        const slot *xe = input_slot(ev, a, 1);
        fch_copy(0, NULL, (fc_dtype)a->in[1]->dtype, xe->base, xe->strides, FC_F64, (char *)&e,
                 strides[0]);
        if (e == 2 || e == 1) { /* x * x, or x * 1 (NaN signs kept) */
            job.op = FCG_OP_MUL;
            if (e == 2) {
                bases[1] = bases[0];
                memcpy(strides[1], strides[0], sizeof strides[0]);
                job.in_dtype[1] = job.in_dtype[0];
            }
        } else if (e == -1) { /* 1 / x: the output pointer moves down to operand 1 */
            job.op = FCG_OP_RECIPROCAL;
            job.nin = 1;
            bases[1] = bases[2];
            memcpy(strides[1], strides[2], sizeof strides[2]);
            nops = 2;
        }
    }
    st = fch_iterate(a->ndim, a->shape, nops, bases, (const int64_t(*)[FC_MAX_DIMS])strides,
                     ew_run, &job);
    if (st == FC_ERR_VALUE)
        return fcg_error(ev->ctx, st, "%s: integers to negative integer powers are not allowed",
                         fcg_ops[a->op].pyname);
    if (st != FC_OK)
        return fcg_error(ev->ctx, st, "%s: not supported on the host for loop dtype %s",
                         fcg_ops[a->op].pyname, fc_dtype_name(job.loop));
    return FC_OK;
}

/* ---- views ------------------------------------------------------------------------------ */

static fc_status eval_view(evaluator *ev, size_t idx) {
    slot *s = &ev->slots[idx];
    fc_array *a = s->node;
    const slot *x = input_slot(ev, a, 0);
    const fc_array *in = a->in[0];
    switch (a->op) {
    case FCG_OP_RESHAPE:
        if (!is_contiguous(x)) {
            /* copy to row-major order first; the flat order is what reshape keeps */
            fc_status st = own_buffer(ev, idx);
            if (st != FC_OK) return st;
            int64_t cstr[FC_MAX_DIMS];
            fch_contig_strides(in->ndim, in->shape, fc_dtype_size((fc_dtype)in->dtype), cstr);
            fch_copy(in->ndim, in->shape, (fc_dtype)in->dtype, x->base, x->strides,
                     (fc_dtype)a->dtype, s->base, cstr);
            return FC_OK;
        }
        share_buffer(ev, s, x);
        s->base = x->base;
        fch_contig_strides(a->ndim, a->shape, fc_dtype_size((fc_dtype)a->dtype), s->strides);
        return FC_OK;
    case FCG_OP_PERMUTE:
        share_buffer(ev, s, x);
        s->base = x->base;
        for (int d = 0; d < a->ndim; d++) s->strides[d] = x->strides[a->p.a[d]];
        return FC_OK;
    case FCG_OP_SLICE: {
        share_buffer(ev, s, x);
        s->base = x->base;
        bool empty = fcg_node_numel(a) == 0;
        for (int d = 0; d < a->ndim; d++) {
            if (!empty) s->base += a->p.a[d] * x->strides[d];
            s->strides[d] = x->strides[d] * a->p.b[d];
        }
        return FC_OK;
    }
    case FCG_OP_BROADCAST:
        share_buffer(ev, s, x);
        s->base = x->base;
        broadcast_strides(a, in, x->strides, s->strides);
        return FC_OK;
    default:
        return fcg_error(ev->ctx, FC_ERR_UNSUPPORTED, "%s: not a view the host knows",
                         fcg_ops[a->op].pyname);
    }
}

/* Source index along one padded axis, or -1 for the constant. */
static int64_t pad_source(fc_pad_mode mode, int64_t o, int64_t before, int64_t n) {
    int64_t i = o - before;
    if (i >= 0 && i < n) return i;
    if (n == 0) return -1;
    switch (mode) {
    case FC_PAD_EDGE:
        return i < 0 ? 0 : n - 1;
    case FC_PAD_REFLECT: {
        if (n == 1) return 0;
        int64_t period = 2 * (n - 1), m = ((i % period) + period) % period;
        return m < n ? m : period - m;
    }
    case FC_PAD_SYMMETRIC: {
        int64_t period = 2 * n, m = ((i % period) + period) % period;
        return m < n ? m : period - 1 - m;
    }
    default:
        return -1;
    }
}

static fc_status eval_pad(evaluator *ev, size_t idx) {
    slot *s = &ev->slots[idx];
    fc_array *a = s->node;
    const slot *x = input_slot(ev, a, 0);
    const fc_array *in = a->in[0];
    fc_status st = own_buffer(ev, idx);
    if (st != FC_OK) return st;
    size_t n = fcg_node_numel(a);
    if (!n) return FC_OK;
    /* per axis: output index -> byte offset into the input (negative for reversed views),
     * or INT64_MIN for the constant */
    size_t total = 0;
    for (int d = 0; d < a->ndim; d++) total += (size_t)a->shape[d];
    size_t tbytes = (total ? total : 1) * sizeof(int64_t);
    int64_t *tab = fcg_malloc(ev->ctx, tbytes);
    if (!tab) return fcg_error(ev->ctx, FC_ERR_NOMEM, "pad: out of memory");
    int64_t *map[FC_MAX_DIMS];
    size_t off = 0;
    for (int d = 0; d < a->ndim; d++) {
        map[d] = tab + off;
        for (int64_t o = 0; o < a->shape[d]; o++) {
            int64_t src = pad_source((fc_pad_mode)a->p.mode, o, a->p.a[d], in->shape[d]);
            map[d][o] = src < 0 ? INT64_MIN : src * x->strides[d];
        }
        off += (size_t)a->shape[d];
    }
    fc_dtype t = (fc_dtype)a->dtype, it = (fc_dtype)in->dtype;
    size_t es = fc_dtype_size(t);
    char cval[16];
    fch_wide_val c = {.f = a->p.re};
    fch_write_wide(FCH_W_F64, &c, 1, t, cval, (int64_t)es);
    int64_t pos[FC_MAX_DIMS] = {0};
    char *o = s->base;
    for (size_t i = 0; i < n; i++, o += es) {
        int64_t src = 0;
        bool constant = false;
        for (int d = 0; d < a->ndim; d++) {
            int64_t m = map[d][pos[d]];
            if (m == INT64_MIN) {
                constant = true;
                break;
            }
            src += m;
        }
        if (constant)
            memcpy(o, cval, es);
        else if (it == t)
            memcpy(o, x->base + src, es);
        else
            fch_copy(0, NULL, it, x->base + src, NULL, t, o, NULL);
        for (int d = a->ndim - 1; d >= 0; d--) {
            if (++pos[d] < a->shape[d]) break;
            pos[d] = 0;
        }
    }
    fcg_free(ev->ctx, tab, tbytes);
    return FC_OK;
}

static fc_status eval_concat(evaluator *ev, size_t idx) {
    slot *s = &ev->slots[idx];
    fc_array *a = s->node;
    fc_status st = own_buffer(ev, idx);
    if (st != FC_OK) return st;
    int axis = a->p.axis;
    int64_t at = 0;
    for (int j = 0; j < a->nin; j++) {
        const slot *x = input_slot(ev, a, j);
        const fc_array *in = a->in[j];
        if (fcg_node_numel(in))
            fch_copy(in->ndim, in->shape, (fc_dtype)in->dtype, x->base, x->strides,
                     (fc_dtype)a->dtype, s->base + at * s->strides[axis], s->strides);
        at += in->shape[axis];
    }
    return FC_OK;
}

/* ---- gathers ----------------------------------------------------------------------------- */

/* Byte offset of row-major position `flat` of the dims [lo, hi) of shape, by strides. */
static int64_t strided_offset(int64_t flat, const int64_t *shape, const int64_t *strides, int lo,
                              int hi) {
    int64_t off = 0;
    for (int d = hi - 1; d >= lo; d--) {
        if (shape[d] == 0) return 0;
        off += flat % shape[d] * strides[d];
        flat /= shape[d];
    }
    return off;
}

/* The position the index at src (of node a's in[1]) names along an axis of extent n, adjusted
 * by a's mode (np.take's rules; FC_TAKE_DROP sets *skip when out of range). An index is the
 * int64 value of its bits: a u64 above 2^63 is negative, as in NumPy. */
static fc_status index_at(evaluator *ev, const fc_array *a, const char *src, int64_t n,
                          int64_t *pos, bool *skip) {
    const fc_dtype it = (fc_dtype)a->in[1]->dtype;
    fch_wide_val w;
    fch_gather_wide(it, src, 0, 1, it, &w);
    int64_t v = fch_wide_of(it) == FCH_W_U64 ? (int64_t)w.u : w.i;
    *skip = false;
    switch ((fc_take_mode)a->p.mode) {
    case FC_TAKE_RAISE:
        if (v < 0 && v >= -n) v += n;
        if (v < 0 || v >= n)
            return fcg_error(ev->ctx, FC_ERR_VALUE, "%s: index %lld is out of bounds for axis %d "
                             "with size %lld", fcg_ops[a->op].pyname, (long long)v,
                             (int)a->p.axis, (long long)n);
        break;
    case FC_TAKE_WRAP: v = (v % n + n) % n; break;
    case FC_TAKE_CLIP: v = v >= n ? n - 1 : v < 0 ? 0 : v; break;
    case FC_TAKE_DROP: *skip = v < 0 || v >= n; break;
    }
    *pos = v;
    return FC_OK;
}

/* values[mask] (COMPRESS): the values where the 1-D bool mask holds, in order; the mask's
 * count is the result's length (graph/mask.c evaluated it), checked here. */
static fc_status eval_compress(evaluator *ev, const fc_array *a, const slot *mask,
                               const slot *values, const slot *out) {
    const size_t es = fc_dtype_size((fc_dtype)a->dtype);
    const int64_t n = a->in[0]->shape[0], count = a->shape[0];
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!*(const bool *)(mask->base + i * mask->strides[0])) continue;
        if (k == count) break;
        memcpy(out->base + (size_t)k * es, values->base + i * values->strides[0], es);
        k++;
    }
    if (k != count)
        return fcg_error(ev->ctx, FC_ERR_INVALID, "compress: the mask selects other than its "
                         "%lld counted elements", (long long)count);
    return FC_OK;
}

/* take: out[o, j.., c] = x[o, index(j..), c], the index adjusted by the mode (np.take's rules). */
static fc_status eval_take(evaluator *ev, size_t idx) {
    slot *s = &ev->slots[idx];
    const fc_array *a = s->node, *xa = a->in[0], *ia = a->in[1];
    fc_status st = own_buffer(ev, idx);
    if (st != FC_OK) return st;
    const slot *x = input_slot(ev, a, 0), *ix = input_slot(ev, a, 1);
    const int ax = a->p.axis;
    int64_t O = 1, C = 1, J = (int64_t)fcg_node_numel(ia), n = xa->shape[ax];
    for (int d = 0; d < ax; d++) O *= xa->shape[d];
    for (int d = ax + 1; d < xa->ndim; d++) C *= xa->shape[d];
    const size_t es = fc_dtype_size((fc_dtype)a->dtype);
    char *out = s->base;
    for (int64_t j = 0; j < J; j++) {
        int64_t v;
        bool skip; /* never: fc_take refuses drop */
        st = index_at(ev, a, ix->base + strided_offset(j, ia->shape, ix->strides, 0, ia->ndim), n,
                      &v, &skip);
        if (st != FC_OK) return st;
        for (int64_t o = 0; o < O; o++) {
            const char *src = x->base + strided_offset(o, xa->shape, x->strides, 0, ax) +
                              v * x->strides[ax];
            char *dst = out + ((o * J + j) * C) * (int64_t)es;
            for (int64_t c = 0; c < C; c++)
                memcpy(dst + c * (int64_t)es,
                       src + strided_offset(c, xa->shape, x->strides, ax + 1, xa->ndim), es);
        }
    }
    return FC_OK;
}

/* a < b in NumPy's sort order (NaN after every number), values of one wide class */
static bool sort_less(fch_wide w, const fch_wide_val *a, const fch_wide_val *b) {
    switch (w) {
    case FCH_W_I64: return a->i < b->i;
    case FCH_W_U64: return a->u < b->u;
    default: return a->f < b->f || (isnan(b->f) && !isnan(a->f));
    }
}

/* searchsorted: a binary search of the sorted 1-d in[0] for each element of in[1], both read
 * as the loop dtype's values. */
static fc_status eval_searchsorted(evaluator *ev, size_t idx) {
    slot *s = &ev->slots[idx];
    const fc_array *a = s->node, *sa = a->in[0], *va = a->in[1];
    fc_status st = own_buffer(ev, idx);
    if (st != FC_OK) return st;
    const slot *x = input_slot(ev, a, 0), *y = input_slot(ev, a, 1);
    const fc_dtype l = (fc_dtype)a->loop_dtype;
    const fch_wide w = fch_wide_of(l);
    const bool right = a->p.mode == FC_SIDE_RIGHT;
    const int64_t n = sa->shape[0], J = (int64_t)fcg_node_numel(a);
    int64_t *out = (int64_t *)s->base;
    for (int64_t j = 0; j < J; j++) {
        fch_wide_val vv, av;
        fch_gather_wide((fc_dtype)va->dtype,
                        y->base + strided_offset(j, va->shape, y->strides, 0, va->ndim), 0, 1, l,
                        &vv);
        int64_t lo = 0, hi = n;
        while (lo < hi) {
            int64_t mid = lo + (hi - lo) / 2;
            fch_gather_wide((fc_dtype)sa->dtype, x->base + mid * x->strides[0], 0, 1, l, &av);
            bool after = right ? !sort_less(w, &vv, &av) : sort_less(w, &av, &vv);
            if (after) lo = mid + 1;
            else hi = mid;
        }
        out[j] = lo;
    }
    return FC_OK;
}

/* ---- scatters ---------------------------------------------------------------------------- */

/* np.add.at / maximum.at / minimum.at as NumPy runs them: a copy of in[0], then each update in
 * row-major order of the updates, out[o, index(j..), c] = op(out[...], value[o, j.., c]), the
 * index adjusted by the mode (FC_TAKE_DROP: skipped when out of range). */
static fc_status eval_scatter(evaluator *ev, size_t idx) {
    slot *s = &ev->slots[idx];
    const fc_array *a = s->node, *xa = a->in[0], *ia = a->in[1], *va = a->in[2];
    fc_status st = own_buffer(ev, idx);
    if (st != FC_OK) return st;
    const slot *x = input_slot(ev, a, 0), *ix = input_slot(ev, a, 1), *vx = input_slot(ev, a, 2);
    const fc_dtype t = (fc_dtype)a->dtype;
    fch_copy(a->ndim, a->shape, (fc_dtype)xa->dtype, x->base, x->strides, t, s->base, s->strides);
    const int ax = a->p.axis;
    int64_t O = 1, C = 1, J = (int64_t)fcg_node_numel(ia), n = a->shape[ax];
    for (int d = 0; d < ax; d++) O *= a->shape[d];
    for (int d = ax + 1; d < a->ndim; d++) C *= a->shape[d];
    const fcg_op op = a->op == FCG_OP_SCATTER_ADD   ? FCG_OP_ADD
                      : a->op == FCG_OP_SCATTER_MAX ? FCG_OP_MAXIMUM
                                                    : FCG_OP_MINIMUM;
    const fch_kind kind = fch_kind_of(t);
    const size_t es = fc_dtype_size(t);
    for (int64_t o = 0; o < O; o++)
        for (int64_t j = 0; j < J; j++) {
            int64_t v;
            bool skip;
            st = index_at(ev, a, ix->base + strided_offset(j, ia->shape, ix->strides, 0, ia->ndim),
                          n, &v, &skip);
            if (st != FC_OK) return st;
            if (skip) continue;
            /* the updates' position (o, j, c) and the output's (o, v, c), row-major */
            int64_t upd = (o * J + j) * C, dst = (o * n + v) * C;
            for (int64_t c = 0; c < C; c++) {
                fch_wide_val cur[1], val[1], res[1];
                char *p = s->base + (dst + c) * (int64_t)es;
                fch_gather(t, p, 0, 1, t, cur);
                fch_gather(t, vx->base + strided_offset(upd + c, va->shape, vx->strides, 0, va->ndim),
                           0, 1, t, val);
                const void *in[3] = {cur, val, NULL}; /* fch_ew_apply reads three */
                if ((st = fch_ew_apply(op, t, 1, in, res)) != FC_OK)
                    return fcg_error(ev->ctx, st, "%s: not supported on the host for %s",
                                     fcg_ops[a->op].pyname, fc_dtype_name(t));
                fch_store(kind, res, 1, t, p, (int64_t)es);
            }
        }
    return FC_OK;
}

/* ---- one node --------------------------------------------------------------------------- */

static fc_status eval_node(evaluator *ev, size_t idx) {
    slot *s = &ev->slots[idx];
    fc_array *a = s->node;
    fc_status st;
    switch (fcg_ops[a->op].kind) {
    case FCG_KIND_SOURCE:
        st = own_buffer(ev, idx);
        if (st != FC_OK) return st;
        switch (a->op) {
        case FCG_OP_CONST: {
            fch_wide k;
            fch_wide_val v = const_value(a, &k);
            fill_value(s->base, fcg_node_numel(a), (fc_dtype)a->dtype, k, &v);
            return FC_OK;
        }
        case FCG_OP_DATA: return FC_OK; /* an empty array without a buffer */
        case FCG_OP_ARANGE: eval_arange(a, s->base); return FC_OK;
        case FCG_OP_LINSPACE: eval_linspace(a, s->base); return FC_OK;
        case FCG_OP_EYE: eval_eye(a, s->base); return FC_OK;
        case FCG_OP_RANDOM:
            if (a->p.mode == FCG_RANDOM_INTEGERS ? !fcg_is_int((fc_dtype)a->dtype)
                                                 : !fcg_is_inexact((fc_dtype)a->dtype))
                return fcg_error(ev->ctx, FC_ERR_DTYPE, "random: dtype %s does not fit the draw",
                                 fc_dtype_name((fc_dtype)a->dtype));
            eval_random(a, s->base);
            return FC_OK;
        default:
            break;
        }
        break;
    case FCG_KIND_EW:
        return eval_ew(ev, idx);
    case FCG_KIND_REDUCE: {
        st = own_buffer(ev, idx);
        if (st != FC_OK) return st;
        const slot *x = input_slot(ev, a, 0);
        return fch_reduce(ev->ctx, a, x->base, x->strides, s->base);
    }
    case FCG_KIND_VIEW:
        if (a->op == FCG_OP_PAD) return eval_pad(ev, idx);
        if (a->op == FCG_OP_CONCAT) return eval_concat(ev, idx);
        return eval_view(ev, idx);
    case FCG_KIND_LIB:
        if (a->op == FCG_OP_MATMUL) {
            st = own_buffer(ev, idx);
            if (st != FC_OK) return st;
            const slot *x = input_slot(ev, a, 0), *y = input_slot(ev, a, 1);
            const char *in[2] = {x->base, y->base};
            int64_t str[2][FC_MAX_DIMS];
            memcpy(str[0], x->strides, sizeof str[0]);
            memcpy(str[1], y->strides, sizeof str[1]);
            return fch_matmul(ev->ctx, a, in, (const int64_t(*)[FC_MAX_DIMS])str, s->base);
        }
        if (a->op == FCG_OP_FFTN) {
            st = own_buffer(ev, idx);
            if (st != FC_OK) return st;
            const slot *x = input_slot(ev, a, 0);
            return fch_fft(ev->ctx, a, x->base, x->strides, s->base);
        }
        if (a->op == FCG_OP_SORT || a->op == FCG_OP_ARGSORT) {
            st = own_buffer(ev, idx);
            if (st != FC_OK) return st;
            const slot *x = input_slot(ev, a, 0);
            return fch_sort(ev->ctx, a, x->base, x->strides, s->base);
        }
        if (fcg_op_is_linalg(a->op) || a->op == FCG_OP_CSR_MATMUL || a->op == FCG_OP_STENCIL2D) {
            st = own_buffer(ev, idx);
            if (st != FC_OK) return st;
            const char *in[4] = {NULL, NULL, NULL, NULL};
            int64_t str[4][FC_MAX_DIMS];
            for (int j = 0; j < a->nin && j < 4; j++) {
                const slot *x = input_slot(ev, a, j);
                in[j] = x->base;
                memcpy(str[j], x->strides, sizeof str[j]);
            }
            const int64_t(*cstr)[FC_MAX_DIMS] = (const int64_t(*)[FC_MAX_DIMS])str;
            if (a->op == FCG_OP_CSR_MATMUL) return fch_csr_matmul(ev->ctx, a, in, cstr, s->base);
            if (a->op == FCG_OP_STENCIL2D) return fch_stencil2d(ev->ctx, a, in, cstr, s->base);
            return fch_linalg(ev->ctx, a, in, cstr, s->base);
        }
        break;
    case FCG_KIND_GATHER:
        return a->op == FCG_OP_SEARCHSORTED ? eval_searchsorted(ev, idx) : eval_take(ev, idx);
    case FCG_KIND_SCATTER: return eval_scatter(ev, idx);
    case FCG_KIND_SCAN: {
        st = own_buffer(ev, idx);
        if (st != FC_OK) return st;
        const slot *x = input_slot(ev, a, 0);
        if (a->op == FCG_OP_COMPRESS) return eval_compress(ev, a, x, input_slot(ev, a, 1), s);
        return fch_scan(ev->ctx, a, x->base, x->strides, s->base);
    }
    case FCG_KIND_USER: {
        const fcg_user_kernel *k = fcg_user_find(ev->ctx, (uint64_t)a->p.ival);
        return fcg_error(ev->ctx, FC_ERR_UNSUPPORTED, "%s: user kernels need the CUDA backend "
                         "(the host backend does not run CUDA C)", k ? k->name : "kernel");
    }
    case FCG_KIND_SPECIAL: /* poison: never evaluated */
        break;
    }
    return fcg_error(ev->ctx, FC_ERR_UNSUPPORTED, "%s: the host backend cannot evaluate it",
                     fcg_ops[a->op].pyname);
}

/* ---- the entry point -------------------------------------------------------------------- */

typedef struct result {
    fc_array *a;
    char *data;
    size_t bytes;
} result;

fc_status fch_eval(fc_ctx *ctx, fc_array *const *arrays, int n) {
    if (n <= 0) return FC_OK;
    evaluator ev = {.ctx = ctx};
    result *res = NULL;
    size_t nres = 0, res_bytes = (size_t)n * sizeof(result);
    fc_status st = collect(&ev, arrays, n);
    if (st != FC_OK) goto cleanup;

    for (size_t i = 0; i < ev.n; i++) {
        fc_array *a = ev.slots[i].node;
        if (is_leaf(a)) continue;
        for (int j = 0; j < a->nin; j++) ev.slots[find_slot(&ev, a->in[j])].uses++;
    }
    for (int r = 0; r < n; r++) ev.slots[find_slot(&ev, arrays[r])].uses++;

    for (size_t i = 0; i < ev.n && st == FC_OK; i++) {
        slot *s = &ev.slots[i];
        fc_array *a = s->node;
        if (is_leaf(a)) {
            s->owner = -1;
            s->base = a->host;
            fch_contig_strides(a->ndim, a->shape, fc_dtype_size((fc_dtype)a->dtype), s->strides);
            continue;
        }
        st = eval_node(&ev, i);
        if (st != FC_OK) break;
        for (int j = 0; j < a->nin; j++) release_use(&ev, &ev.slots[find_slot(&ev, a->in[j])]);
    }
    if (st != FC_OK) goto cleanup;

    /* Hand each requested value over as contiguous host data: a buffer nothing else lives
     * in is taken as it is, anything else is copied. Nothing is attached until every
     * buffer exists, so a failure leaves no array with a value. */
    res = fcg_malloc(ctx, res_bytes);
    if (!res) {
        st = fcg_error(ctx, FC_ERR_NOMEM, "host: out of memory");
        goto cleanup;
    }
    for (int r = 0; r < n; r++) {
        fc_array *a = arrays[r];
        if (is_leaf(a)) continue;
        bool seen = false;
        for (size_t q = 0; q < nres; q++) seen = seen || res[q].a == a;
        if (seen) continue;
        int64_t i = find_slot(&ev, a);
        slot *s = &ev.slots[i];
        result out = {a, NULL, 0};
        slot *o = s->owner >= 0 ? &ev.slots[s->owner] : NULL;
        if (o && o->buf_refs == 1 && o->data == s->base && o->bytes == node_bytes(a) &&
            is_contiguous(s)) {
            /* the value is the whole of a buffer nothing else uses (its own, or the buffer
             * under a reshape): take it */
            out.data = o->data;
            out.bytes = o->bytes;
            o->data = NULL;
        } else {
            out.bytes = node_bytes(a);
            out.data = fcg_malloc(ctx, out.bytes);
            if (!out.data) {
                st = fcg_error(ctx, FC_ERR_NOMEM, "host: out of memory for a result");
                goto cleanup;
            }
            int64_t cstr[FC_MAX_DIMS];
            fch_contig_strides(a->ndim, a->shape, fc_dtype_size((fc_dtype)a->dtype), cstr);
            if (node_bytes(a))
                fch_copy(a->ndim, a->shape, (fc_dtype)a->dtype, s->base, s->strides,
                         (fc_dtype)a->dtype, out.data, cstr);
        }
        res[nres++] = out;
    }
    for (size_t q = 0; q < nres; q++) {
        res[q].a->host = res[q].data;
        res[q].a->host_bytes = res[q].bytes;
        res[q].data = NULL;
    }

cleanup:
    if (res) {
        for (size_t q = 0; q < nres; q++)
            if (res[q].data) fcg_free(ctx, res[q].data, res[q].bytes);
        fcg_free(ctx, res, res_bytes);
    }
    for (size_t i = 0; i < ev.n; i++)
        free_if(ctx, ev.slots[i].data, ev.slots[i].bytes);
    free_if(ctx, ev.slots, ev.cap * sizeof(slot));
    free_if(ctx, ev.table, ev.tcap * sizeof(uint32_t));
    return st;
}
