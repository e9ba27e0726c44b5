/*
 * graph/substitute.c - placeholders and replays: a traced program built again on new inputs
 * (fc_placeholder, fc_replay_*; what fusec.fuse in Python is made of).
 *
 * A trace builds the graph of a function once on placeholders (program input nodes that are
 * never shared with another node). A replay copies that graph node for node with the
 * placeholders replaced by the call's arrays: each copy is fcg_node with the original's op,
 * dtypes, shape and parameters and the copies of its inputs. Nothing is inferred again: a
 * substitute has the same dtype, weakness and shape as what it replaces, so every node keeps
 * what its constructor decided, and the copies are what building the same expression on the
 * new inputs gives (the same nodes, hash-consed with any that exist).
 */
#include "graph.h"
#include "nodemap.h"

#include <string.h>

fc_array *fc_placeholder(fc_ctx *ctx, fc_dtype dtype, fc_shape shape, bool weak) {
    if (!ctx) return NULL;
    if ((unsigned)dtype >= FC_DTYPE_COUNT)
        return fcg_poison(ctx, FC_ERR_DTYPE, "placeholder: invalid dtype %d", (int)dtype);
    if (shape.ndim < 0 || shape.ndim > FC_MAX_DIMS)
        return fcg_poison(ctx, FC_ERR_SHAPE, "placeholder: %d dimensions (0 to %d)", shape.ndim,
                          FC_MAX_DIMS);
    if (weak && (shape.ndim != 0 || (dtype != FC_BOOL && dtype != FC_I64 && dtype != FC_F64 &&
                                     dtype != FC_C128)))
        return fcg_poison(ctx, FC_ERR_INVALID, "placeholder: a weak scalar is 0-d bool, i64, "
                          "f64 or c128, not %s with %d dimensions", fc_dtype_name(dtype),
                          shape.ndim);
    fcg_params p;
    memset(&p, 0, sizeof p);
    p.ival = -1; /* not a .fc program's input: no position */
    return fcg_make(ctx, FCG_OP_INPUT, dtype, dtype, weak, shape.ndim, shape.dim, 0, NULL, &p);
}

static bool same_kind(const fc_array *a, const fc_array *b) {
    if (a->dtype != b->dtype || a->weak != b->weak || a->ndim != b->ndim) return false;
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d]) return false;
    return true;
}

static fc_status check(fc_ctx *ctx, const char *what, int i, const fc_array *a) {
    if (!a) return fcg_error(ctx, FC_ERR_NULL, "replay: %s %d is NULL", what, i);
    if (a->ctx != ctx)
        return fcg_error(ctx, FC_ERR_CONTEXT, "replay: %s %d belongs to another context", what,
                         i);
    if (a->status != FC_OK) return fcg_error(ctx, a->status, "%s", a->errmsg);
    return FC_OK;
}

/* A replay is the traced graph's nodes that depend on an input, in topological order, each
 * with where its operands come from: slot j < m is input j, slot m + k is step k's result, and
 * an operand that depends on no input is the traced node itself (shared). */
typedef struct step {
    fc_array *node;  /* the traced node (a reference) */
    int32_t *src;    /* per operand: a slot, or -1 (node->in[i] itself) */
} step;

struct fc_replay {
    fc_ctx *ctx;
    int m, n, nsteps;
    fc_array **inputs;  /* m traced inputs (references) */
    step *steps;
    int32_t *src_all;   /* every step's src, one block */
    size_t nsrc;
    int32_t *out;       /* per output: a slot, or -1 */
    fc_array **outputs; /* n traced outputs (references) */
    fc_array **made;    /* scratch: m + nsteps */
};

void fc_replay_destroy(fc_replay *r) {
    if (!r) return;
    fc_ctx *ctx = r->ctx;
    for (int i = 0; i < r->m && r->inputs; i++) fcg_release(r->inputs[i]);
    for (int i = 0; i < r->n && r->outputs; i++) fcg_release(r->outputs[i]);
    for (int k = 0; k < r->nsteps && r->steps; k++) fcg_release(r->steps[k].node);
    fcg_free(ctx, r->inputs, sizeof *r->inputs * (size_t)(r->m ? r->m : 1));
    fcg_free(ctx, r->outputs, sizeof *r->outputs * (size_t)r->n);
    fcg_free(ctx, r->steps, sizeof *r->steps * (size_t)(r->nsteps ? r->nsteps : 1));
    fcg_free(ctx, r->src_all, sizeof *r->src_all * (r->nsrc ? r->nsrc : 1));
    fcg_free(ctx, r->out, sizeof *r->out * (size_t)r->n);
    fcg_free(ctx, r->made, sizeof *r->made * (size_t)(r->m + r->nsteps ? r->m + r->nsteps : 1));
    fcg_free(ctx, r, sizeof *r);
}

fc_status fc_replay_create(fc_array *const *outputs, int n, fc_array *const *inputs, int m,
                           fc_replay **out) {
    if (!out) return FC_ERR_NULL;
    *out = NULL;
    if (!outputs || n < 1 || m < 0 || (m > 0 && !inputs) || !outputs[0]) return FC_ERR_NULL;
    fc_ctx *ctx = outputs[0]->ctx;
    fc_status st = FC_OK;
    for (int i = 0; i < n && st == FC_OK; i++) st = check(ctx, "output", i, outputs[i]);
    for (int i = 0; i < m && st == FC_OK; i++) st = check(ctx, "input", i, inputs[i]);
    if (st != FC_OK) return st;

    fc_array **order = NULL;
    size_t count = 0;
    fcg_nodemap slot;
    memset(&slot, 0, sizeof slot);
    fc_replay *r = fcg_calloc(ctx, sizeof *r);
    if (!r) return fcg_error(ctx, FC_ERR_NOMEM, "replay: out of memory");
    r->ctx = ctx;
    if ((st = fcg_topo_order(ctx, outputs, n, true, &order, &count)) != FC_OK ||
        (st = fcg_nodemap_init(ctx, &slot, count + (size_t)m)) != FC_OK)
        goto fail;
    for (int i = 0; i < m && st == FC_OK; i++)
        if (fcg_nodemap_get(&slot, inputs[i]) < 0) st = fcg_nodemap_put(&slot, inputs[i], i);
    /* Which nodes depend on an input: those become steps, numbered in order. */
    size_t nsrc = 0;
    int nsteps = 0;
    for (size_t k = 0; k < count && st == FC_OK; k++) {
        fc_array *a = order[k];
        if (fcg_nodemap_get(&slot, a) >= 0 || a->nin == 0 || fcg_has_value(a)) continue;
        bool dep = false;
        for (int i = 0; i < a->nin && !dep; i++) dep = fcg_nodemap_get(&slot, a->in[i]) >= 0;
        if (!dep) continue;
        st = fcg_nodemap_put(&slot, a, m + nsteps);
        nsteps++;
        nsrc += (size_t)a->nin;
    }
    if (st != FC_OK) goto fail;
    r->m = m;
    r->n = n;
    r->inputs = fcg_malloc(ctx, sizeof *r->inputs * (size_t)(m ? m : 1));
    r->outputs = fcg_malloc(ctx, sizeof *r->outputs * (size_t)n);
    r->steps = fcg_calloc(ctx, sizeof *r->steps * (size_t)(nsteps ? nsteps : 1));
    r->src_all = fcg_malloc(ctx, sizeof *r->src_all * (nsrc ? nsrc : 1));
    r->out = fcg_malloc(ctx, sizeof *r->out * (size_t)n);
    r->made = fcg_malloc(ctx, sizeof *r->made * (size_t)(m + nsteps ? m + nsteps : 1));
    r->nsrc = nsrc;
    if (!r->inputs || !r->outputs || !r->steps || !r->src_all || !r->out || !r->made) {
        st = fcg_error(ctx, FC_ERR_NOMEM, "replay: out of memory");
        goto fail;
    }
    for (int i = 0; i < m; i++) fcg_retain(r->inputs[i] = inputs[i]);
    for (int i = 0; i < n; i++) {
        fcg_retain(r->outputs[i] = outputs[i]);
        r->out[i] = (int32_t)fcg_nodemap_get(&slot, outputs[i]);
    }
    size_t used = 0;
    for (size_t k = 0; k < count; k++) {
        fc_array *a = order[k];
        int64_t s = fcg_nodemap_get(&slot, a);
        if (s < m) continue;
        step *p = &r->steps[s - m];
        fcg_retain(p->node = a);
        r->nsteps++;
        p->src = r->src_all + used;
        for (int i = 0; i < a->nin; i++) p->src[i] = (int32_t)fcg_nodemap_get(&slot, a->in[i]);
        used += (size_t)a->nin;
    }
    fcg_nodemap_free(&slot);
    fcg_free(ctx, order, count * sizeof *order);
    *out = r;
    return FC_OK;
fail:
    fcg_nodemap_free(&slot);
    if (order) fcg_free(ctx, order, count * sizeof *order);
    fc_replay_destroy(r);
    return st;
}

fc_status fc_replay_run(fc_replay *r, fc_array *const *inputs, fc_array **results) {
    if (!r || !results || (r->m > 0 && !inputs)) return FC_ERR_NULL;
    fc_ctx *ctx = r->ctx;
    for (int i = 0; i < r->n; i++) results[i] = NULL;
    fc_status st = FC_OK;
    for (int i = 0; i < r->m && st == FC_OK; i++)
        if ((st = check(ctx, "input", i, inputs[i])) == FC_OK &&
            !same_kind(r->inputs[i], inputs[i])) {
            const fc_array *f = r->inputs[i], *t = inputs[i];
            char fs[200], ts[200];
            fcg_shape_str(fs, f->ndim, f->shape);
            fcg_shape_str(ts, t->ndim, t->shape);
            st = fcg_error(ctx, f->dtype != t->dtype ? FC_ERR_DTYPE : FC_ERR_SHAPE,
                           "replay: input %d was traced as %s%s %s, given %s%s %s", i,
                           f->weak ? "weak " : "", fc_dtype_name((fc_dtype)f->dtype), fs,
                           t->weak ? "weak " : "", fc_dtype_name((fc_dtype)t->dtype), ts);
        }
    if (st != FC_OK) return st;
    fc_array **made = r->made;
    for (int i = 0; i < r->m; i++) made[i] = inputs[i]; /* borrowed */
    int k = 0;
    for (; k < r->nsteps; k++) {
        const step *p = &r->steps[k];
        const fc_array *a = p->node;
        fc_array *small[8], **in = a->nin <= 8 ? small : fcg_malloc(ctx, sizeof *in *
                                                                     (size_t)a->nin);
        if (!in) {
            st = fcg_error(ctx, FC_ERR_NOMEM, "replay: out of memory");
            break;
        }
        for (int i = 0; i < a->nin; i++) in[i] = p->src[i] < 0 ? a->in[i] : made[p->src[i]];
        made[r->m + k] = fcg_node(ctx, (fcg_op)a->op, (fc_dtype)a->dtype,
                                  (fc_dtype)a->loop_dtype, a->weak, a->ndim, a->shape, a->nin,
                                  in, &a->p);
        if (in != small) fcg_free(ctx, in, sizeof *in * (size_t)a->nin);
        if (!made[r->m + k]) {
            st = FC_ERR_NOMEM; /* fcg_node set the message */
            break;
        }
    }
    if (st == FC_OK)
        for (int i = 0; i < r->n; i++) {
            fc_array *a = r->out[i] < 0 ? r->outputs[i] : made[r->out[i]];
            fcg_retain(a);
            results[i] = fcg_ret(ctx, a);
        }
    for (int j = 0; j < k; j++) fcg_release(made[r->m + j]);
    return st;
}
