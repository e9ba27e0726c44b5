/*
 * graph/hash.c - graph walks and the structural hash.
 *
 * The hash serialises the graph in a canonical order (DFS post-order from the outputs) with
 * nodes named by position, so it depends on structure alone: never on pointers, creation
 * order or input values. It names programs (`fusec hash`) and proves round trips of the .fc
 * format. The plan cache's key (fcg_plan_key, at the end) is a faster walk of the same kind
 * that stops at nodes holding values.
 */
#include "graph.h"

#include <string.h>
#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack: no hidden malloc */
#include <xxhash.h>

fc_status fcg_topo_order(fc_ctx *ctx, fc_array *const *arrays, int n, bool stop_at_values,
                         fc_array ***order_out, size_t *count_out) {
    typedef struct frame {
        fc_array *node;
        int next;
    } frame;
    *order_out = NULL;
    *count_out = 0;
    uint64_t epoch = ++ctx->visit_epoch;
    size_t cap = 64, count = 0, scap = 64, depth = 0;
    fc_array **order = fcg_malloc(ctx, cap * sizeof *order);
    frame *stack = fcg_malloc(ctx, scap * sizeof *stack);
    if (!order || !stack) goto nomem;
    for (int r = 0; r < n; r++) {
        if (arrays[r]->visit == epoch) continue;
        arrays[r]->visit = epoch;
        stack[depth++] = (frame){arrays[r], 0};
        while (depth) {
            frame *f = &stack[depth - 1];
            fc_array *a = f->node;
            bool leaf = stop_at_values && fcg_has_value(a);
            if (!leaf && f->next < a->nin) {
                fc_array *c = a->in[f->next++];
                if (c->visit == epoch) continue;
                c->visit = epoch;
                if (depth == scap) {
                    frame *s = fcg_realloc(ctx, stack, scap * sizeof *s, 2 * scap * sizeof *s);
                    if (!s) goto nomem;
                    stack = s;
                    scap *= 2;
                }
                stack[depth++] = (frame){c, 0};
                continue;
            }
            if (count == cap) {
                fc_array **o = fcg_realloc(ctx, order, cap * sizeof *o, 2 * cap * sizeof *o);
                if (!o) goto nomem;
                order = o;
                cap *= 2;
            }
            a->order = (int64_t)count;
            order[count++] = a;
            depth--;
        }
    }
    fcg_free(ctx, stack, scap * sizeof *stack);
    /* Hand back an exact-size array so the caller frees count pointers. */
    fc_array **exact = fcg_realloc(ctx, order, cap * sizeof *order, count * sizeof *order);
    if (!exact) {
        fcg_free(ctx, order, cap * sizeof *order);
        return fcg_error(ctx, FC_ERR_NOMEM, "graph walk: out of memory");
    }
    *order_out = exact;
    *count_out = count;
    return FC_OK;
nomem:
    fcg_free(ctx, order, cap * sizeof *order);
    fcg_free(ctx, stack, scap * sizeof *stack);
    return fcg_error(ctx, FC_ERR_NOMEM, "graph walk: out of memory");
}

fc_status fcg_topo_order_edges(fc_ctx *ctx, fc_array *const *arrays, int n,
                               bool stop_at_values, fc_array ***order_out, size_t *count_out,
                               fcg_topo_edges *e) {
    memset(e, 0, sizeof *e);
    fc_status st = fcg_topo_order(ctx, arrays, n, stop_at_values, order_out, count_out);
    if (st != FC_OK) return st;
    fc_array **order = *order_out;
    size_t count = *count_out, nedge = 0;
    /* The walk has just numbered its nodes (a->order): read the numbers before anything else
     * walks the graph. */
    for (size_t i = 0; i < count; i++)
        if (!(stop_at_values && fcg_has_value(order[i]))) nedge += (size_t)order[i]->nin;
    e->first = fcg_malloc(ctx, (count + 1) * sizeof *e->first);
    e->pos = fcg_malloc(ctx, (nedge ? nedge : 1) * sizeof *e->pos);
    e->roots = fcg_malloc(ctx, (size_t)(n > 0 ? n : 1) * sizeof *e->roots);
    e->count = count;
    e->nedge = nedge;
    e->n = n;
    if (!e->first || !e->pos || !e->roots) {
        fcg_topo_edges_free(ctx, e);
        fcg_free(ctx, order, count * sizeof *order);
        *order_out = NULL;
        *count_out = 0;
        return fcg_error(ctx, FC_ERR_NOMEM, "graph walk: out of memory");
    }
    size_t k = 0;
    for (size_t i = 0; i < count; i++) {
        const fc_array *a = order[i];
        e->first[i] = (int32_t)k;
        if (stop_at_values && fcg_has_value(a)) continue;
        for (int j = 0; j < a->nin; j++) e->pos[k++] = (int32_t)a->in[j]->order;
    }
    e->first[count] = (int32_t)k;
    for (int r = 0; r < n; r++) e->roots[r] = (int32_t)arrays[r]->order;
    return FC_OK;
}

void fcg_topo_edges_free(fc_ctx *ctx, fcg_topo_edges *e) {
    fcg_free(ctx, e->first, (e->count + 1) * sizeof *e->first);
    fcg_free(ctx, e->pos, (e->nedge ? e->nedge : 1) * sizeof *e->pos);
    fcg_free(ctx, e->roots, (size_t)(e->n > 0 ? e->n : 1) * sizeof *e->roots);
    memset(e, 0, sizeof *e);
}

/* The hashed record of one node; zero-filled so padding is deterministic. */
typedef struct hash_record {
    uint16_t op;
    uint8_t dtype, loop_dtype, weak, pad[3];
    int32_t ndim, nin;
    int64_t shape[FC_MAX_DIMS];
    fcg_params p;
} hash_record;

fc_status fc_graph_hash(fc_array *const *arrays, int n, fc_hash *out) {
    if (!arrays || !out || n < 1) return FC_ERR_NULL;
    fc_ctx *ctx = NULL;
    for (int i = 0; i < n && !ctx; i++)
        if (arrays[i]) ctx = arrays[i]->ctx;
    if (!ctx) return FC_ERR_NULL;
    /* Checked by hand: a hash is a query and makes no poisoned arrays. */
    for (int i = 0; i < n; i++) {
        if (!arrays[i]) return fcg_error(ctx, FC_ERR_NULL, "graph_hash: array %d is NULL", i);
        if (arrays[i]->ctx != ctx)
            return fcg_error(ctx, FC_ERR_CONTEXT, "graph_hash: array %d belongs to another context", i);
        if (arrays[i]->status != FC_OK)
            return fcg_error(ctx, arrays[i]->status, "%s", arrays[i]->errmsg);
    }
    fc_array **order;
    size_t count;
    fc_status st = fcg_topo_order(ctx, arrays, n, false, &order, &count);
    if (st != FC_OK) return st;
    XXH3_state_t state;
    XXH3_128bits_reset(&state);
    const uint32_t version = 1; /* bump on any change to what is hashed */
    XXH3_128bits_update(&state, &version, sizeof version);
    for (size_t i = 0; i < count; i++) {
        const fc_array *a = order[i];
        hash_record r;
        memset(&r, 0, sizeof r);
        /* Inputs are leaves by position, dtype and shape: data and placeholders alike. */
        bool leaf = a->op == FCG_OP_DATA || a->op == FCG_OP_INPUT;
        r.op = leaf ? FCG_OP_INPUT : a->op;
        r.dtype = a->dtype;
        r.loop_dtype = a->loop_dtype;
        r.weak = a->weak;
        r.ndim = a->ndim;
        r.nin = a->nin;
        memcpy(r.shape, a->shape, sizeof r.shape);
        if (!leaf) r.p = a->p;
        XXH3_128bits_update(&state, &r, sizeof r);
        for (int k = 0; k < a->nin; k++) {
            int64_t idx = a->in[k]->order;
            XXH3_128bits_update(&state, &idx, sizeof idx);
        }
    }
    int64_t outs = n;
    XXH3_128bits_update(&state, &outs, sizeof outs);
    for (int k = 0; k < n; k++) XXH3_128bits_update(&state, &arrays[k]->order, sizeof(int64_t));
    XXH128_hash_t h = XXH3_128bits_digest(&state);
    fcg_free(ctx, order, count * sizeof *order);
    out->lo = h.low64;
    out->hi = h.high64;
    return FC_OK;
}

/* ---- the plan cache's key -------------------------------------------------------------- */

/* Each node's share of a key is computed once, when the node is made (nodes are immutable):
 * the walk at evaluation time then touches 8 bytes and the input positions per node. */
void fcg_node_hashes(fc_array *a) {
    struct {
        uint16_t op;
        uint8_t dtype, loop_dtype, weak, pad[3];
        int32_t ndim, nin;
        int64_t shape[FC_MAX_DIMS];
    } r;
    memset(&r, 0, sizeof r);
    r.dtype = a->dtype;
    r.weak = a->weak;
    r.ndim = a->ndim;
    memcpy(r.shape, a->shape, sizeof r.shape);
    a->shape_hash = XXH3_64bits(&r, sizeof r);
    r.op = a->op;
    r.loop_dtype = a->loop_dtype;
    r.nin = a->nin;
    uint64_t h = XXH3_64bits(&r, sizeof r);
    /* A scalar's value is a kernel argument, not structure: it stays out of the key unless
     * passes may specialise on it. */
    if (a->op == FCG_OP_CONST && !fcg_const_keyed(a)) {
        const uint64_t generic = 0x5ca1a7u;
        a->local_hash = XXH3_64bits_withSeed(&generic, sizeof generic, h);
    } else {
        a->local_hash = XXH3_64bits_withSeed(&a->p, sizeof a->p, h);
    }
    a->unhashed = false;
}

bool fcg_const_keyed(const fc_array *c) {
    fc_dtype t = (fc_dtype)c->dtype;
    if (t == FC_BOOL) return true;
    if (fcg_is_int(t)) {
        if (t == FC_U64 && c->p.ival < 0) return false; /* above INT64_MAX */
        return c->p.ival >= -4 && c->p.ival <= 4;
    }
    if (fcg_is_complex(t) && c->p.im != 0) return false; /* NaN fails the next test too */
    double r = c->p.re;
    return r >= -4 && r <= 4 && r == (double)(int64_t)r;
}

static bool grow(fc_ctx *ctx, void **buf, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return true;
    size_t nc = *cap ? *cap : 64;
    while (nc < need) nc *= 2;
    void *b = fcg_realloc(ctx, *buf, *cap * elem, nc * elem);
    if (!b) return false;
    *buf = b;
    *cap = nc;
    return true;
}

fc_status fcg_plan_key(fc_ctx *ctx, fc_array *const *arrays, int n, fc_hash *out,
                       fc_array *const **order_out, size_t *count_out) {
    uint64_t epoch = ++ctx->visit_epoch;
    size_t count = 0, depth = 0, words = 0;
    /* Words: per node its 64-bit hash (two words) and its inputs' positions; a leaf (a node
     * holding a value, or an input) is its shape alone, marked. */
    for (int r = 0; r < n; r++) {
        fc_array *root = arrays[r];
        if (root->visit == epoch) continue;
        root->visit = epoch;
        if (!grow(ctx, (void **)&ctx->key_stack, &ctx->key_stack_cap, depth + 1,
                  sizeof *ctx->key_stack))
            goto nomem;
        ctx->key_stack[depth++] = (struct fcg_key_frame){root, 0};
        while (depth) {
            struct fcg_key_frame *f = &ctx->key_stack[depth - 1];
            fc_array *a = f->node;
            bool leaf = fcg_has_value(a) || a->op == FCG_OP_DATA || a->op == FCG_OP_INPUT;
            if (!leaf && f->next < a->nin) {
                fc_array *c = a->in[f->next++];
                if (c->visit == epoch) continue;
                c->visit = epoch;
                if (!grow(ctx, (void **)&ctx->key_stack, &ctx->key_stack_cap, depth + 1,
                          sizeof *ctx->key_stack))
                    goto nomem;
                ctx->key_stack[depth++] = (struct fcg_key_frame){c, 0};
                continue;
            }
            size_t nw = 3 + (leaf ? 0 : (size_t)a->nin);
            if (!grow(ctx, (void **)&ctx->key_order, &ctx->key_order_cap, count + 1,
                      sizeof *ctx->key_order) ||
                !grow(ctx, (void **)&ctx->key_words, &ctx->key_words_cap, words + nw,
                      sizeof *ctx->key_words))
                goto nomem;
            if (a->unhashed) fcg_node_hashes(a);
            uint64_t h = leaf ? a->shape_hash : a->local_hash;
            uint32_t *w = ctx->key_words + words;
            w[0] = (uint32_t)h;
            w[1] = (uint32_t)(h >> 32);
            w[2] = leaf ? 0xffffffffu : (uint32_t)a->nin;
            for (int k = 0; k < a->nin && !leaf; k++) w[3 + k] = (uint32_t)a->in[k]->order;
            words += nw;
            a->order = (int64_t)count;
            ctx->key_order[count++] = a;
            depth--;
        }
    }
    if (!grow(ctx, (void **)&ctx->key_words, &ctx->key_words_cap, words + (size_t)n + 2,
              sizeof *ctx->key_words))
        goto nomem;
    ctx->key_words[words++] = (uint32_t)n;
    for (int r = 0; r < n; r++) ctx->key_words[words++] = (uint32_t)arrays[r]->order;
    /* The fast-math tier plans other kernels: a word of its own, present only when it is on,
     * so the exact tier's keys are what they were before the tier existed. */
    if (ctx->fast_math) ctx->key_words[words++] = 0xfa57u;
    XXH128_hash_t h = XXH3_128bits(ctx->key_words, words * sizeof *ctx->key_words);
    out->lo = h.low64;
    out->hi = h.high64;
    *order_out = ctx->key_order;
    *count_out = count;
    return FC_OK;
nomem:
    return fcg_error(ctx, FC_ERR_NOMEM, "eval: out of memory");
}
