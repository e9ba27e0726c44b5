/*
 * graph/node.c - hash-consed node construction, reference counts, poisoned arrays, and the
 * hand-off of results to the caller or the open scope.
 *
 * Hash-consing: a node is identified by (op, dtypes, weak, shape, params, inputs). Building an
 * identical node returns the existing one, so common subexpressions are one node for free.
 * DATA, INPUT and POISON nodes are unique by identity and never consed.
 */
#include "graph.h"

#include <stdio.h>
#include <string.h>

void fcg_free_node(fc_ctx *ctx, fc_array *a);

size_t fcg_numel(int ndim, const int64_t *shape) {
    size_t n = 1;
    for (int i = 0; i < ndim; i++) n *= (size_t)shape[i];
    return n;
}

static bool is_consed(fcg_op op) {
    return op != FCG_OP_DATA && op != FCG_OP_INPUT && op != FCG_OP_POISON;
}

/* The fixed part of a node's identity, zero-filled so padding hashes deterministically. */
typedef struct cons_key {
    uint16_t op;
    uint8_t dtype, loop_dtype, weak, pad[3];
    int32_t ndim, nin;
    int64_t shape[FC_MAX_DIMS];
    fcg_params p;
} cons_key;

/* The table's hash: the key's words (the shape's up to ndim; the rest are zero) and the
 * inputs' ids. Only buckets depend on it, so it need not be the plan key's hash: the
 * parameters (22 words, mostly zero) are folded by rotations first, then everything is mixed
 * in with multiplies (splitmix64's steps). */
static uint64_t cons_hash(const cons_key *k, fc_array *const *in) {
    const uint64_t m = 0xbf58476d1ce4e5b9ull;
    static const fcg_params none;
    uint64_t w[2], fold = 0;
    memcpy(w, k, sizeof w); /* op, dtypes, weak, ndim, nin */
    if (memcmp(&k->p, &none, sizeof none) != 0) { /* most ops have no parameters */
        uint64_t pw[sizeof k->p / sizeof(uint64_t)];
        memcpy(pw, &k->p, sizeof pw);
        for (size_t i = 0; i < sizeof pw / sizeof *pw; i++)
            fold = ((fold << 19) | (fold >> 45)) ^ pw[i];
    }
    uint64_t h = (w[0] ^ 0x9e3779b97f4a7c15ull) * m;
    h = ((h ^ (h >> 31)) ^ w[1]) * m;
    h = ((h ^ (h >> 31)) ^ fold) * m;
    for (int d = 0; d < k->ndim; d++) h = ((h ^ (h >> 31)) ^ (uint64_t)k->shape[d]) * m;
    for (int i = 0; i < k->nin; i++) h = ((h ^ (h >> 31)) ^ in[i]->id) * m;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    return h ^ (h >> 33);
}

static bool cons_equal(const fc_array *a, const cons_key *k, fc_array *const *in) {
    if (a->op != k->op || a->dtype != k->dtype || a->loop_dtype != k->loop_dtype ||
        a->weak != k->weak || a->ndim != k->ndim || a->nin != k->nin)
        return false;
    if (memcmp(a->shape, k->shape, sizeof a->shape) != 0) return false;
    if (memcmp(&a->p, &k->p, sizeof a->p) != 0) return false;
    for (int i = 0; i < k->nin; i++)
        if (a->in[i] != in[i]) return false;
    return true;
}

static void cons_grow(fc_ctx *ctx) {
    size_t cap = ctx->cons_cap * 2;
    fc_array **b = fcg_calloc(ctx, cap * sizeof *b);
    if (!b) return; /* a fuller table is slower, not wrong */
    for (size_t i = 0; i < ctx->cons_cap; i++) {
        for (fc_array *a = ctx->cons[i], *next; a; a = next) {
            next = a->cons_next;
            size_t j = a->cons_hash & (cap - 1);
            a->cons_next = b[j];
            b[j] = a;
        }
    }
    fcg_free(ctx, ctx->cons, ctx->cons_cap * sizeof *ctx->cons);
    ctx->cons = b;
    ctx->cons_cap = cap;
}

static void cons_unlink(fc_ctx *ctx, fc_array *a) {
    fc_array **pp = &ctx->cons[a->cons_hash & (ctx->cons_cap - 1)];
    while (*pp && *pp != a) pp = &(*pp)->cons_next;
    if (*pp) {
        *pp = a->cons_next;
        ctx->cons_n--;
    }
    a->cons_next = NULL;
}

fc_array *fcg_node(fc_ctx *ctx, fcg_op op, fc_dtype dtype, fc_dtype loop_dtype, bool weak,
                   int ndim, const int64_t *shape, int nin, fc_array *const *in,
                   const fcg_params *p) {
    cons_key k;
    memset(&k, 0, sizeof k);
    k.op = (uint16_t)op;
    k.dtype = (uint8_t)dtype;
    k.loop_dtype = (uint8_t)loop_dtype;
    k.weak = weak;
    k.ndim = ndim;
    k.nin = nin;
    if (ndim > 0) memcpy(k.shape, shape, (size_t)ndim * sizeof *shape);
    if (p) k.p = *p;

    uint64_t h = 0;
    if (is_consed(op)) {
        h = cons_hash(&k, in);
        for (fc_array *a = ctx->cons[h & (ctx->cons_cap - 1)]; a; a = a->cons_next)
            if (a->cons_hash == h && cons_equal(a, &k, in)) {
                fcg_retain(a);
                return a;
            }
    }

    fc_array *a = fcg_calloc(ctx, sizeof *a);
    if (!a) {
        fcg_error(ctx, FC_ERR_NOMEM, "%s: out of memory", fcg_ops[op].pyname);
        return NULL;
    }
    a->in = a->in_inline;
    if (nin > 3 && !(a->in = fcg_malloc(ctx, (size_t)nin * sizeof *a->in))) {
        fcg_free(ctx, a, sizeof *a);
        fcg_error(ctx, FC_ERR_NOMEM, "%s: out of memory", fcg_ops[op].pyname);
        return NULL;
    }
    a->ctx = ctx;
    a->refs = 1;
    a->op = k.op;
    a->dtype = k.dtype;
    a->loop_dtype = k.loop_dtype;
    a->weak = k.weak;
    a->status = FC_OK;
    a->ndim = ndim;
    memcpy(a->shape, k.shape, sizeof a->shape);
    a->nin = nin;
    for (int i = 0; i < nin; i++) {
        a->in[i] = in[i];
        fcg_retain(in[i]);
    }
    a->p = k.p;
    if (ctx->planning) a->unhashed = true;
    else fcg_node_hashes(a);
    a->id = ctx->next_id++;
    a->all_next = ctx->all;
    if (ctx->all) ctx->all->all_prev = a;
    ctx->all = a;
    ctx->live_nodes++;
    if (is_consed(op)) {
        a->cons_hash = h;
        size_t j = h & (ctx->cons_cap - 1);
        a->cons_next = ctx->cons[j];
        ctx->cons[j] = a;
        if (++ctx->cons_n > ctx->cons_cap - ctx->cons_cap / 4) cons_grow(ctx);
    }
    return a;
}

void fcg_retain(fc_array *a) {
    if (a->refs != UINT32_MAX) a->refs++;
}

void fcg_release(fc_array *a) {
    if (a->refs == UINT32_MAX || --a->refs > 0) return;
    fc_ctx *ctx = a->ctx;
    /* Dead nodes form a stack through cons_next (free once unlinked), so releasing a deep
     * chain needs neither recursion nor memory. */
    if (is_consed((fcg_op)a->op)) cons_unlink(ctx, a);
    a->cons_next = NULL;
    fc_array *stack = a;
    while (stack) {
        fc_array *n = stack;
        stack = n->cons_next;
        for (int i = 0; i < n->nin; i++) {
            fc_array *c = n->in[i];
            if (c->refs == UINT32_MAX || --c->refs > 0) continue;
            if (is_consed((fcg_op)c->op)) cons_unlink(ctx, c);
            c->cons_next = stack;
            stack = c;
        }
        fcg_free_node(ctx, n);
    }
}

fc_array *fcg_ret(fc_ctx *ctx, fc_array *a) {
    if (!a) return &ctx->oom;
    fc_scope *s = ctx->scope;
    if (!s || a->refs == UINT32_MAX) return a;
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 16;
        fc_array **owned = fcg_realloc(ctx, s->owned, s->cap * sizeof *owned, cap * sizeof *owned);
        if (!owned) {
            fcg_release(a);
            fcg_error(ctx, FC_ERR_NOMEM, "scope: out of memory");
            return &ctx->oom;
        }
        s->owned = owned;
        s->cap = cap;
    }
    s->owned[s->n++] = a;
    return a;
}

fc_array *fcg_scope_return(fc_ctx *ctx, fc_scope *scope, fc_array *r) {
    fc_array *kept = fc_keep(r);
    fc_scope_close(scope);
    return fcg_ret(ctx, kept);
}

fc_scope *fcg_multi_begin(const char *name, int nin, fc_array *const *in, int n,
                          fc_array **const *outs, fc_status *status, fc_array **early) {
    for (int i = 0; i < nin; i++)
        if (!in[i]) {
            *status = FC_ERR_NULL;
            return NULL;
        }
    fc_ctx *ctx = in[0]->ctx;
    fc_scope *s = fc_scope_open(ctx);
    if (s) {
        fcg_begin(name, nin, in, early);
        return s;
    }
    fc_array *p = fcg_poison(ctx, FC_ERR_NOMEM, "%s: out of memory", name);
    bool given = false;
    for (int i = 0; i < n; i++) {
        if (!outs[i]) continue;
        if (given) fcg_retain(p); /* one reference for each output */
        *outs[i] = given ? fcg_ret(ctx, p) : p;
        given = true;
    }
    *status = p->status;
    return NULL;
}

fc_status fcg_multi_return(fc_ctx *ctx, fc_scope *s, int n, fc_array **const *outs,
                           fc_array *const *res, fc_array *poison) {
    fc_array *kept[FCG_MULTI_MAX] = {NULL};
    for (int i = 0; i < n && i < FCG_MULTI_MAX; i++)
        if (outs[i]) kept[i] = fc_keep(poison ? poison : res[i]);
    fc_scope_close(s);
    fc_status st = poison ? poison->status : FC_OK;
    for (int i = 0; i < n && i < FCG_MULTI_MAX; i++) {
        if (!outs[i]) continue;
        *outs[i] = fcg_ret(ctx, kept[i] ? kept[i] : &ctx->oom);
        if (st == FC_OK) st = (*outs[i])->status;
    }
    return st;
}

bool fcg_shape_too_large(int ndim, const int64_t *shape, fc_dtype dtype) {
    uint64_t bytes = (uint64_t)fc_dtype_size(dtype);
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0) return true;
        if (shape[i] == 0) continue; /* as NumPy: zero extents do not hide the others' product */
        if (__builtin_mul_overflow(bytes, (uint64_t)shape[i], &bytes) || bytes > FCG_MAX_BYTES)
            return true;
    }
    return false;
}

fc_array *fcg_make(fc_ctx *ctx, fcg_op op, fc_dtype dtype, fc_dtype loop_dtype, bool weak,
                   int ndim, const int64_t *shape, int nin, fc_array *const *in,
                   const fcg_params *p) {
    /* Every op's result passes here: an extent computed past int64 or an element count that
     * no index can address is an error, never a wrapped shape. */
    if (fcg_shape_too_large(ndim, shape, dtype)) {
        char sh[200];
        return fcg_poison(ctx, FC_ERR_SHAPE, "%s: the result, %s of %s, is too large (more than "
                          "2^62 bytes)", fcg_ops[op].pyname, fcg_shape_str(sh, ndim, shape),
                          fc_dtype_name(dtype));
    }
    return fcg_ret(ctx, fcg_node(ctx, op, dtype, loop_dtype, weak, ndim, shape, nin, in, p));
}

fc_array *fcg_poison(fc_ctx *ctx, fc_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fcg_verror(ctx, status, fmt, ap);
    va_end(ap);
    fc_array *a = fcg_node(ctx, FCG_OP_POISON, FC_BOOL, FC_BOOL, false, 0, NULL, 0, NULL, NULL);
    if (!a) return &ctx->oom;
    a->status = status;
    /* fcg_node may have overwritten the message only on failure, which returned above. */
    if (!(a->errmsg = fcg_strdup(ctx, ctx->errmsg))) {
        fcg_release(a);
        return &ctx->oom;
    }
    return fcg_ret(ctx, a);
}

static fc_ctx *begin(const char *opname, int n, fc_array *const *in, fc_array **early,
                     bool wide_ok) {
    *early = NULL;
    fc_ctx *ctx = NULL;
    for (int i = 0; i < n && !ctx; i++)
        if (in[i]) ctx = in[i]->ctx;
    if (!ctx) return NULL;
    for (int i = 0; i < n; i++) {
        if (!in[i]) {
            *early = fcg_poison(ctx, FC_ERR_NULL, "%s: argument %d is NULL", opname, i + 1);
            return ctx;
        }
        if (in[i]->ctx != ctx) {
            *early = fcg_poison(ctx, FC_ERR_CONTEXT,
                                "%s: arguments belong to different contexts", opname);
            return ctx;
        }
    }
    for (int i = 0; i < n; i++)
        if (in[i]->status != FC_OK) {
            fcg_retain(in[i]);
            *early = fcg_ret(ctx, in[i]);
            return ctx;
        }
    /* A Python integer outside int64 and uint64 has no dtype (NumPy holds it in an object
     * array): only an elementwise op can convert it, to its loop (graph/dtype.c). */
    fcg_pyint v;
    char s[FCG_PYINT_STR];
    for (int i = 0; i < n && !wide_ok; i++)
        if (fcg_pyint_is_wide(in[i]) && fcg_pyint_of(in[i], &v)) {
            *early = fcg_poison(ctx, FC_ERR_INVALID, "%s: Python integer %s is outside int64 and "
                                "uint64: no dtype holds it", opname, fcg_pyint_str(v, s));
            return ctx;
        }
    return ctx;
}

fc_ctx *fcg_begin(const char *opname, int n, fc_array *const *in, fc_array **early) {
    return begin(opname, n, in, early, false);
}

fc_ctx *fcg_begin_ew(const char *opname, int n, fc_array *const *in, fc_array **early) {
    return begin(opname, n, in, early, true);
}

fc_array *fcg_poison_ctx(fc_ctx *ctx, fc_status status) {
    char msg[FCG_ERRMSG_MAX];
    memcpy(msg, ctx->errmsg, sizeof msg);
    msg[sizeof msg - 1] = '\0';
    return fcg_poison(ctx, status, "%s", msg);
}

/* a becomes a DATA leaf: its inputs are released (each freed when this was its last user)
 * and its parameters cleared. The caller has taken it out of the cons table. */
static void become_data(fc_ctx *ctx, fc_array *a) {
    fc_array *small[3], **in = small;
    int nin = a->nin;
    if (nin > 3) in = a->in; /* still owned by a until freed below */
    else memcpy(small, a->in, (size_t)nin * sizeof *small);
    a->nin = 0;
    a->op = FCG_OP_DATA;
    a->loop_dtype = a->dtype;
    memset(&a->p, 0, sizeof a->p);
    fcg_node_hashes(a);
    for (int i = 0; i < nin; i++) fcg_release(in[i]);
    if (in != small) fcg_free(ctx, in, (size_t)nin * sizeof *in);
    a->in = a->in_inline;
}

/* A write replaced a's value: a becomes a DATA node, and it and every live node computed from
 * it leave the cons table,
 * so building the same expression again makes a new node (which sees the new data), while
 * nodes already evaluated keep their values. Inputs are always older than their users, so
 * one pass from the oldest node decides who depends on a. */
fc_status fcg_detach(fc_ctx *ctx, fc_array *a) {
    size_t n = ctx->live_nodes, k = 0;
    fc_array **all = fcg_malloc(ctx, (n ? n : 1) * sizeof *all);
    if (!all) return fcg_error(ctx, FC_ERR_NOMEM, "write: out of memory");
    for (fc_array *x = ctx->all; x && k < n; x = x->all_next) all[k++] = x;
    uint64_t epoch = ++ctx->visit_epoch; /* visit == epoch: depends on a */
    a->visit = epoch;
    for (size_t i = k; i-- > 0;) {
        fc_array *x = all[i];
        for (int j = 0; j < x->nin && x->visit != epoch; j++)
            if (x->in[j]->visit == epoch) x->visit = epoch;
        if (x->visit == epoch && is_consed((fcg_op)x->op)) cons_unlink(ctx, x);
    }
    if (is_consed((fcg_op)a->op)) cons_unlink(ctx, a);
    fcg_free(ctx, all, (n ? n : 1) * sizeof *all);
    /* From now on a is data: whatever it was computed from (a broadcast constant, an
     * expression) no longer describes its value, so passes must not look through it. */
    become_data(ctx, a);
    return FC_OK;
}

void fcg_dying_nodes(fc_array *const *arrays, int n, fc_array *const *order, size_t count,
                     uint32_t *dropped, uint8_t *dies) {
    enum { LIVES, DIES, ARRAY };
    memset(dropped, 0, count * sizeof *dropped);
    memset(dies, LIVES, count);
    for (int r = 0; r < n; r++) dies[arrays[r]->order] = ARRAY;
    /* Users come after their inputs in the walk: backwards, a node's references from dying
     * users are all counted before the node is decided. */
    for (size_t i = count; i-- > 0;) {
        const fc_array *a = order[i];
        /* A shared value (imported or exported memory) never dies here: no result may be
         * written over memory that code outside fusec reads or owns. */
        if (dies[i] != ARRAY)
            dies[i] = a->refs != UINT32_MAX && dropped[i] == a->refs && !a->share;
        bool leaf = fcg_has_value(a) || a->op == FCG_OP_DATA || a->op == FCG_OP_INPUT;
        if (dies[i] != LIVES && !leaf)
            for (int k = 0; k < a->nin; k++) dropped[a->in[k]->order]++;
    }
    for (int r = 0; r < n; r++) dies[arrays[r]->order] = LIVES;
}

void fcg_cut_history(fc_ctx *ctx, fc_array *a) {
    if (a->nin == 0 || a->status != FC_OK || a->refs == UINT32_MAX || !fcg_has_value(a))
        return;
    /* Out of the cons table first: the node's identity was its inputs, which go now. */
    if (is_consed((fcg_op)a->op)) cons_unlink(ctx, a);
    become_data(ctx, a);
}
