/*
 * backend/mesh.c - the sharded backend: one context over several shards, each an ordinary
 * context of its own (a GPU's, or a simulated shard on the host backend). Prefix fcm_.
 *
 * Arrays of a sharded context keep their global shapes; the graph and the passes never learn
 * of shards. Evaluation lowers the graph into one program per shard:
 *
 *   1. Layouts. Walking the graph inputs first, every node gets a layout: split along an axis,
 *      replicated, or free. Free nodes (sources, host data, and elementwise ops and views over
 *      free nodes only) have no placement of their own: they are built wherever a consumer
 *      wants them, in the layout it wants (a split random array computes each shard's range
 *      on that shard). Other nodes follow their inputs (fusec.h, "Sharded contexts", gives the
 *      rules); a node whose op cannot follow a split gathers that input and runs replicated.
 *   2. Lowering. Each node that is not free is rebuilt on every shard as the same op with its
 *      local shape (the global shape with the split extent replaced by the shard's range), on
 *      the parts of its inputs in the layouts it needs. An input in another layout is
 *      converted: replicated to split is a slice (a view, fused away), split to anything else
 *      an all-gather. A reduction over the split axis becomes a local reduction (keepdims),
 *      an all-reduce and the reduction's finish (divide by the global count, the square root,
 *      the second pass of a variance).
 *   3. The outputs' parts are evaluated on their shards, all queued before any is waited for,
 *      so the devices work at once. Collectives order themselves on each shard's stream.
 *
 * A shard program is an ordinary fusec program, so it fuses, is cached (plan and kernels) and
 * runs as on one device; the same global program gives the same shard programs each time, so
 * every shard replays its cached plan after the first evaluation.
 *
 * A value (a->dev) is a mesh_value: the layout and a reference to each shard's part.
 */
#include "backend.h"
#include "nodemap.h"
#include "passes.h" /* fcp_log_enabled */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FCM_MAX 64
#define LAY_FREE (-2)
#define LAY_REPL FC_REPLICATED

typedef struct mesh_value {
    int axis; /* split axis, or LAY_REPL */
    int n;
    fc_array *part[];
} mesh_value;

typedef struct timing {
    fc_event *start, *end;
} timing;

typedef struct mesh {
    int n;
    fc_ctx *child[FCM_MAX];
    fcn_comm *nccl;     /* NULL: collectives through host memory */
    char comm_why[256]; /* why NCCL is not used */
    bool dead;
    char dead_msg[FCG_ERRMSG_MAX];
    fc_shard_stats stats;
    int force_split; /* -1, or fcm_test_force_split's axis */
    timing *pending; /* event pairs of collectives not yet read */
    size_t npending, cap;
} mesh;

static mesh *mesh_of(const fc_ctx *ctx) { return ctx->be_state; }

static mesh_value *value_of(const fc_array *a) { return (mesh_value *)(uintptr_t)a->dev; }

/* ---- ranges --------------------------------------------------------------------------- */

static int64_t part_start(int64_t e, int n, int r) {
    int64_t b = e / n, x = e % n;
    return b * r + (r < x ? r : x);
}
static int64_t part_len(int64_t e, int n, int r) { return e / n + (r < e % n); }

static void local_shape(const fc_array *a, int lay, int n, int r, int64_t *out) {
    memcpy(out, a->shape, sizeof a->shape);
    if (lay >= 0) out[lay] = part_len(a->shape[lay], n, r);
}

/* Layout of a result no consumer constrains: axis 0 when every shard gets some of it. Tests
 * may force a split along axis (force % ndim) whatever the extents (fcm_test_force_split), so
 * that tiny random programs take the split paths, empty shards included. */
static int default_layout_of(const fc_array *a, int n, int force) {
    if (force >= 0 && a->ndim >= 1) return force % a->ndim;
    return a->ndim >= 1 && a->shape[0] >= n ? 0 : LAY_REPL;
}

static int default_layout(const fc_array *a, const mesh *m) {
    return default_layout_of(a, m->n, m->force_split);
}

/* ---- failure ---------------------------------------------------------------------------- */

static fc_status dead_error(fc_ctx *ctx) {
    return fcg_error(ctx, FC_ERR_BACKEND, "the sharded context is unusable after an earlier "
                     "error: %s", mesh_of(ctx)->dead_msg);
}

/* A shard's device failed: nothing may wait for it again. */
static void kill_mesh(fc_ctx *ctx, const char *msg) {
    mesh *m = mesh_of(ctx);
    if (m->dead) return;
    m->dead = true;
    snprintf(m->dead_msg, sizeof m->dead_msg, "%s", msg);
    fcn_comm_abort(m->nccl);
}

/* Copies shard r's error into ctx; when the shard's context is unusable (its query fails),
 * the whole sharded context dies with it. */
static fc_status shard_error(fc_ctx *ctx, int r, fc_status st) {
    mesh *m = mesh_of(ctx);
    fc_ctx *c = m->child[r];
    fc_status out = fcg_error(ctx, st, "shard %d (device %d): %s", r, fc_ctx_device(c),
                              fc_errmsg(c));
    bool idle;
    if (c->be->query(c, &idle) != FC_OK) {
        /* A fault can surface on another device than the one it happened on (peers mapped
         * for NCCL): name every shard whose context is gone. */
        char msg[FCG_ERRMSG_MAX];
        size_t len = (size_t)snprintf(msg, sizeof msg, "%s", ctx->errmsg);
        for (int q = 0; q < m->n && len < sizeof msg; q++)
            if (q != r && m->child[q]->be->query(m->child[q], &idle) != FC_OK)
                len += (size_t)snprintf(msg + len, sizeof msg - len, "; shard %d (device %d) "
                                        "is unusable too", q, fc_ctx_device(m->child[q]));
        kill_mesh(ctx, msg);
        fcg_error(ctx, st, "%s", msg);
    }
    return out;
}

/* Waits for every shard, polling, so that a failed device is reported (and the NCCL
 * communicators aborted) instead of a wait on a device whose peer will never come. */
static fc_status mesh_sync(fc_ctx *ctx) {
    mesh *m = mesh_of(ctx);
    if (m->dead) return dead_error(ctx);
    bool busy[FCM_MAX];
    int left = m->n;
    for (int r = 0; r < m->n; r++) busy[r] = true;
    while (left) {
        for (int r = 0; r < m->n; r++) {
            if (!busy[r]) continue;
            bool idle;
            fc_status st = m->child[r]->be->query(m->child[r], &idle);
            if (st != FC_OK) return shard_error(ctx, r, st);
            if (idle) busy[r] = false, left--;
        }
        if (left) nanosleep(&(struct timespec){0, 20000}, NULL);
    }
    for (int r = 0; r < m->n; r++) {
        fc_status st = fc_ctx_synchronize(m->child[r]); /* user streams of the shards too */
        if (st != FC_OK) return shard_error(ctx, r, st);
    }
    return FC_OK;
}

/* ---- the lowering's state ------------------------------------------------------------------ */

/* A node's parts in one layout. */
typedef struct mat {
    int lay;
    struct mat *next;
    fc_array *p[];
} mat;

typedef struct lower {
    fc_ctx *ctx;
    mesh *m;
    int n;
    fc_array *const *order; /* the graph, inputs first (NULL outside an evaluation) */
    size_t count;
    fcg_nodemap pos;
    int *lay;   /* per node: its layout (LAY_FREE: built where wanted) */
    int *pref;  /* per free node: the first split it was built in (LAY_FREE: none yet) */
    mat **mats; /* per node: its parts in each layout built so far */
    fc_scope *scope[FCM_MAX];
    bool log;
} lower;

static fc_status lower_open(lower *lw, fc_ctx *ctx) {
    memset(lw, 0, sizeof *lw);
    lw->ctx = ctx;
    lw->m = mesh_of(ctx);
    lw->n = lw->m->n;
    lw->log = fcp_log_enabled("shard");
    for (int r = 0; r < lw->n; r++)
        if (!(lw->scope[r] = fc_scope_open(lw->m->child[r]))) {
            for (int q = 0; q < r; q++) fc_scope_close(lw->scope[q]);
            return fcg_error(ctx, FC_ERR_NOMEM, "out of memory");
        }
    return FC_OK;
}

static void mat_list_free(lower *lw, mat *x) {
    while (x) {
        mat *next = x->next;
        fcg_free(lw->ctx, x, sizeof *x + (size_t)lw->n * sizeof(fc_array *));
        x = next;
    }
}

/* Closes the shards' scopes (releasing every intermediate part; what was kept survives). */
static void lower_close(lower *lw) {
    if (lw->mats) {
        for (size_t i = 0; i < lw->count; i++) mat_list_free(lw, lw->mats[i]);
        fcg_free(lw->ctx, lw->mats, lw->count * sizeof *lw->mats);
    }
    if (lw->lay) fcg_free(lw->ctx, lw->lay, lw->count * sizeof *lw->lay);
    if (lw->pref) fcg_free(lw->ctx, lw->pref, lw->count * sizeof *lw->pref);
    fcg_nodemap_free(&lw->pos);
    for (int r = 0; r < lw->n; r++) fc_scope_close(lw->scope[r]);
}

static mat *mat_new(lower *lw, int lay) {
    mat *x = fcg_calloc(lw->ctx, sizeof *x + (size_t)lw->n * sizeof(fc_array *));
    if (x) x->lay = lay;
    return x;
}

/* Checks that every part was built: a poisoned part's message becomes ctx's. */
static fc_status check_parts(lower *lw, fc_array *const *p, const char *what) {
    for (int r = 0; r < lw->n; r++) {
        fc_status st = fc_array_status(p[r]);
        if (st != FC_OK)
            return fcg_error(lw->ctx, st, "%s on shard %d: %s", what, r, fc_array_errmsg(p[r]));
    }
    return FC_OK;
}

static const char *lay_name(int lay, char *buf) {
    if (lay == LAY_REPL) return "replicated";
    if (lay == LAY_FREE) return "free";
    snprintf(buf, 24, "split(%d)", lay);
    return buf;
}

/* ---- collectives ------------------------------------------------------------------------ */

static void timing_begin(lower *lw, timing *t) {
    t->start = t->end = NULL;
    fc_ctx *c0 = lw->m->child[0];
    if (fc_event_create(c0, &t->start) != FC_OK || fc_event_record(t->start, NULL) != FC_OK) {
        fc_event_destroy(t->start);
        t->start = NULL;
    }
}

static void timing_abort(timing *t) {
    fc_event_destroy(t->start);
    t->start = NULL;
}

/* Keeps the event pair for fc_shard_stats_get; a long run without a read resolves the oldest
 * (long done by then) so the list stays bounded. */
static void timing_end(lower *lw, timing *t) {
    mesh *m = lw->m;
    if (!t->start) return;
    if (fc_event_create(m->child[0], &t->end) != FC_OK || fc_event_record(t->end, NULL) != FC_OK) {
        fc_event_destroy(t->end);
        fc_event_destroy(t->start);
        return;
    }
    if (m->npending == 256) {
        for (size_t i = 0; i < 128; i++) {
            float ms = 0;
            if (fc_event_synchronize(m->pending[i].end) == FC_OK &&
                fc_event_elapsed_ms(m->pending[i].start, m->pending[i].end, &ms) == FC_OK)
                m->stats.ms += ms;
            fc_event_destroy(m->pending[i].start);
            fc_event_destroy(m->pending[i].end);
        }
        memmove(m->pending, m->pending + 128, 128 * sizeof *m->pending);
        m->npending = 128;
    }
    if (m->npending == m->cap) {
        size_t cap = m->cap ? 2 * m->cap : 16;
        timing *p = fcg_realloc(lw->ctx, m->pending, m->cap * sizeof *p, cap * sizeof *p);
        if (!p) {
            fc_event_destroy(t->end);
            fc_event_destroy(t->start);
            return;
        }
        m->pending = p;
        m->cap = cap;
    }
    m->pending[m->npending++] = *t;
}

/* Evaluates parts[0..n) on their shards (queued; no wait). */
static fc_status eval_parts(lower *lw, fc_array *const *p) {
    for (int r = 0; r < lw->n; r++) {
        fc_status st = fc_eval(lw->m->child[r], &p[r], 1);
        if (st != FC_OK) return shard_error(lw->ctx, r, st);
    }
    return FC_OK;
}

/* A DATA node of shard r with an undefined value: a collective's destination. */
static fc_array *new_buffer(lower *lw, int r, fc_dtype t, int ndim, const int64_t *shape) {
    fc_ctx *c = lw->m->child[r];
    fc_array *a = fcg_node(c, FCG_OP_DATA, t, t, false, ndim, shape, 0, NULL, NULL);
    fc_status st = a ? c->be->alloc_value(c, a) : FC_ERR_NOMEM;
    if (st != FC_OK) {
        shard_error(lw->ctx, r, st);
        if (a) fcg_release(a);
        return NULL;
    }
    return fcg_ret(c, a);
}

static bool parts_on_device(lower *lw, fc_array *const *p) {
    for (int r = 0; r < lw->n; r++)
        if (!p[r]->dev) return false;
    return lw->m->nccl != NULL;
}

/* Every shard gets the parts' values back to back (part 0's elements, then part 1's ...), as
 * a flat array [total] of their dtype in out[r]. */
static fc_status exchange(lower *lw, fc_array *const *p, fc_array **out) {
    mesh *m = lw->m;
    if (m->dead) return dead_error(lw->ctx);
    fc_dtype t = fc_array_dtype(p[0]);
    size_t es = fc_dtype_size(t);
    size_t bytes[FCM_MAX], total = 0;
    fc_status st = eval_parts(lw, p);
    if (st != FC_OK) return st;
    for (int r = 0; r < lw->n; r++) total += bytes[r] = fcg_node_numel(p[r]) * es;
    int64_t flat = (int64_t)(total / es);
    timing tm;
    timing_begin(lw, &tm);
    if (parts_on_device(lw, p) && total) {
        uint64_t send[FCM_MAX], recv[FCM_MAX];
        for (int r = 0; r < lw->n; r++) {
            if (!(out[r] = new_buffer(lw, r, t, 1, &flat))) {
                timing_abort(&tm);
                return FC_ERR_NOMEM;
            }
            send[r] = p[r]->dev;
            recv[r] = out[r]->dev;
        }
        if ((st = fcn_allgather(m->nccl, m->child, send, bytes, recv)) != FC_OK) {
            timing_abort(&tm);
            fcg_error(lw->ctx, st, "%s", fc_errmsg(m->child[0]));
            kill_mesh(lw->ctx, lw->ctx->errmsg);
            return st;
        }
    } else {
        char *buf = fcg_malloc(lw->ctx, total ? total : 1);
        if (!buf) return fcg_error(lw->ctx, FC_ERR_NOMEM, "out of memory for a gather of %zu bytes",
                                   total);
        size_t off = 0;
        for (int r = 0; r < lw->n && st == FC_OK; r++) {
            if ((st = fc_read(p[r], buf + off, 0, (int64_t)(bytes[r] / es))) != FC_OK)
                st = shard_error(lw->ctx, r, st);
            off += bytes[r];
        }
        for (int r = 0; r < lw->n && st == FC_OK; r++)
            out[r] = fc_from_host(m->child[r], t, FC_SHAPE(flat), buf);
        fcg_free(lw->ctx, buf, total ? total : 1);
        if (st == FC_OK) st = check_parts(lw, out, "gather");
        if (st != FC_OK) {
            timing_abort(&tm);
            return st;
        }
    }
    timing_end(lw, &tm);
    return FC_OK;
}

/* Parts split along s -> the whole value on every shard. */
static fc_status gather(lower *lw, fc_array *const *p, int s, const int64_t *gshape, int ndim,
                        fc_array **out) {
    fc_array *flat[FCM_MAX];
    fc_status st = exchange(lw, p, flat);
    if (st != FC_OK) return st;
    lw->m->stats.gathers++;
    lw->m->stats.bytes += fcg_node_numel(flat[0]) * fc_dtype_size(fc_array_dtype(flat[0]));
    bool leading = true; /* only unit extents before s: the parts lie back to back */
    for (int d = 0; d < s; d++) leading &= gshape[d] == 1;
    fc_shape gs = {ndim, {0}};
    memcpy(gs.dim, gshape, (size_t)ndim * sizeof *gshape);
    for (int r = 0; r < lw->n; r++) {
        if (leading) {
            out[r] = fc_reshape(flat[r], gs);
            continue;
        }
        fc_array *pieces[FCM_MAX];
        int64_t off = 0;
        for (int q = 0; q < lw->n; q++) {
            fc_shape ls = fc_array_shape(p[q]);
            int64_t cnt = (int64_t)fcg_node_numel(p[q]);
            fc_idx ix = FC_S(off, off + cnt, 1);
            pieces[q] = fc_reshape(fc_index(flat[r], 1, &ix), ls);
            off += cnt;
        }
        out[r] = fc_concatenate(lw->m->child[r], pieces, lw->n, s);
    }
    return check_parts(lw, out, "gather");
}

/* out[r] = op over shards of p (same shape and dtype everywhere). */
static fc_status allreduce(lower *lw, fc_array *const *p, fcn_redop op, fc_array **out) {
    mesh *m = lw->m;
    if (m->dead) return dead_error(lw->ctx);
    fc_dtype t = fc_array_dtype(p[0]);
    fc_shape sh = fc_array_shape(p[0]);
    size_t count = fcg_node_numel(p[0]);
    /* NaN wins max and min (NumPy); NCCL's max and min need not say so, so a NaN flag goes
     * beside the value, in the same group. */
    bool nan_flag = (op == FCN_MAX || op == FCN_MIN) && fcg_is_float(t);
    fc_array *flag[FCM_MAX], *any[FCM_MAX];
    fc_status st = eval_parts(lw, p);
    if (st != FC_OK) return st;
    m->stats.allreduces++;
    m->stats.bytes += count * fc_dtype_size(t); /* what each shard ends with, either path */
    if (count && fcn_reduce_dtype_ok(t) && parts_on_device(lw, p)) {
        if (nan_flag) {
            for (int r = 0; r < lw->n; r++) flag[r] = fc_cast(fc_isnan(p[r]), FC_U8);
            if ((st = check_parts(lw, flag, "all-reduce")) != FC_OK ||
                (st = eval_parts(lw, flag)) != FC_OK)
                return st;
            if (!parts_on_device(lw, flag)) nan_flag = false, st = FC_ERR_UNSUPPORTED;
        }
        uint64_t send[2][FCM_MAX], recv[2][FCM_MAX];
        for (int r = 0; st == FC_OK && r < lw->n; r++) {
            if (!(out[r] = new_buffer(lw, r, t, sh.ndim, sh.dim)) ||
                (nan_flag && !(any[r] = new_buffer(lw, r, FC_U8, sh.ndim, sh.dim))))
                return FC_ERR_NOMEM;
            send[0][r] = p[r]->dev;
            recv[0][r] = out[r]->dev;
            if (nan_flag) send[1][r] = flag[r]->dev, recv[1][r] = any[r]->dev;
        }
        if (st == FC_OK) {
            fcn_job jobs[2] = {{send[0], recv[0], count, t, op},
                               {send[1], recv[1], count, FC_U8, FCN_MAX}};
            timing tm;
            timing_begin(lw, &tm);
            if ((st = fcn_allreduce(m->nccl, m->child, jobs, nan_flag ? 2 : 1)) != FC_OK) {
                timing_abort(&tm);
                fcg_error(lw->ctx, st, "%s", fc_errmsg(m->child[0]));
                kill_mesh(lw->ctx, lw->ctx->errmsg);
                return st;
            }
            timing_end(lw, &tm);
            if (nan_flag)
                for (int r = 0; r < lw->n; r++)
                    out[r] = fc_where(fc_cast(any[r], FC_BOOL), fc_f64(m->child[r], NAN), out[r]);
            return check_parts(lw, out, "all-reduce");
        }
    }
    /* Through host memory, or a dtype NCCL lacks: gather the partials, stacked on a new
     * leading axis, and reduce that axis with fusec's own op (its NaN and complex rules). */
    fc_array *flat[FCM_MAX];
    if ((st = exchange(lw, p, flat)) != FC_OK) return st;
    fc_shape stacked = {2, {lw->n, (int64_t)count}}; /* [shards, elements]: any rank fits */
    for (int r = 0; r < lw->n; r++) {
        fc_array *s = fc_reshape(flat[r], stacked);
        switch (op) {
        case FCN_SUM: out[r] = fc_sum(s, FC_AXES(0), false); break;
        case FCN_PROD: out[r] = fc_prod(s, FC_AXES(0), false); break;
        case FCN_MAX: out[r] = fc_max(s, FC_AXES(0), false); break;
        case FCN_MIN: out[r] = fc_min(s, FC_AXES(0), false); break;
        }
        out[r] = fc_reshape(fc_cast(out[r], t), sh); /* sum and prod of narrow ints widen */
    }
    return check_parts(lw, out, "all-reduce");
}

/* ---- parts in a layout -------------------------------------------------------------------- */

/* parts (replicated) -> shard r's range along axis k of each. */
static fc_status slice_parts(lower *lw, fc_array *const *p, int k, fc_array **out) {
    for (int r = 0; r < lw->n; r++) {
        fc_idx ix[FC_MAX_DIMS];
        int nd = p[r]->ndim;
        for (int d = 0; d < nd; d++) ix[d] = FC_COLON;
        int64_t e = p[r]->shape[k];
        ix[k] = FC_S(part_start(e, lw->n, r), part_start(e, lw->n, r) + part_len(e, lw->n, r), 1);
        out[r] = fc_index(p[r], nd, ix);
    }
    return check_parts(lw, out, "slice");
}

/* Parts in layout `from` -> parts in layout `to` (both split or replicated). */
static fc_status convert(lower *lw, fc_array *const *p, int from, int to, const fc_array *g,
                         fc_array **out) {
    if (from == to) {
        memcpy(out, p, (size_t)lw->n * sizeof *out);
        return FC_OK;
    }
    if (lw->log) {
        char a[24], b[24];
        fprintf(stderr, "fusec shard: %s %s %s -> %s%s\n", fcg_node_name(g),
                fcg_shape_str((char[200]){0}, g->ndim, g->shape), lay_name(from, a),
                lay_name(to, b), from >= 0 ? " (all-gather)" : "");
    }
    if (from == LAY_REPL) return slice_parts(lw, p, to, out);
    fc_array *whole[FCM_MAX];
    fc_status st = gather(lw, p, from, g->shape, g->ndim, whole);
    if (st != FC_OK) return st;
    if (to == LAY_REPL) {
        memcpy(out, whole, (size_t)lw->n * sizeof *out);
        return FC_OK;
    }
    return slice_parts(lw, whole, to, out);
}

/* Host data -> its parts in layout lay (each shard gets only its range). */
static fc_status host_parts(lower *lw, const fc_array *a, int lay, fc_array **out) {
    fc_dtype t = (fc_dtype)a->dtype;
    for (int r = 0; r < lw->n; r++) {
        fc_shape ls = {a->ndim, {0}};
        local_shape(a, lay, lw->n, r, ls.dim);
        if (lay < 0) {
            out[r] = fc_from_host(lw->m->child[r], t, ls, a->host);
            continue;
        }
        size_t es = fc_dtype_size(t), inner = es, outer = 1;
        for (int d = lay + 1; d < a->ndim; d++) inner *= (size_t)a->shape[d];
        for (int d = 0; d < lay; d++) outer *= (size_t)a->shape[d];
        size_t len = (size_t)ls.dim[lay], start = (size_t)part_start(a->shape[lay], lw->n, r);
        size_t bytes = outer * len * inner;
        char *buf = fcg_malloc(lw->ctx, bytes ? bytes : 1);
        if (!buf) return fcg_error(lw->ctx, FC_ERR_NOMEM, "out of memory");
        for (size_t o = 0; o < outer; o++)
            memcpy(buf + o * len * inner,
                   (const char *)a->host + (o * (size_t)a->shape[lay] + start) * inner, len * inner);
        out[r] = fc_from_host(lw->m->child[r], t, ls, buf);
        fcg_free(lw->ctx, buf, bytes ? bytes : 1);
    }
    return check_parts(lw, out, "upload");
}

/* The node's op on shard r's input parts, with its local shape. */
static fc_array *rebuild(lower *lw, const fc_array *g, int lay, int r, fc_array *const *in) {
    fc_ctx *c = lw->m->child[r];
    int64_t ls[FC_MAX_DIMS];
    local_shape(g, lay, lw->n, r, ls);
    fc_array *a = fcg_node(c, (fcg_op)g->op, (fc_dtype)g->dtype, (fc_dtype)g->loop_dtype,
                           g->weak, g->ndim, ls, g->nin, in, &g->p);
    return fcg_ret(c, a);
}

/* A node's inputs while it is built: the layout each is read in and its parts there. */
typedef struct node_inputs {
    int nin;
    int *req;
    mat **m;
    fc_array **row; /* scratch: one shard's input parts */
} node_inputs;

static fc_status inputs_open(lower *lw, int nin, node_inputs *in) {
    size_t n = (size_t)(nin ? nin : 1);
    in->nin = nin;
    in->req = fcg_calloc(lw->ctx, n * sizeof *in->req);
    in->m = fcg_calloc(lw->ctx, n * sizeof *in->m);
    in->row = fcg_calloc(lw->ctx, n * sizeof *in->row);
    if (in->req && in->m && in->row) return FC_OK;
    fcg_free(lw->ctx, in->req, n * sizeof *in->req);
    fcg_free(lw->ctx, in->m, n * sizeof *in->m);
    fcg_free(lw->ctx, in->row, n * sizeof *in->row);
    in->req = NULL, in->m = NULL, in->row = NULL;
    return fcg_error(lw->ctx, FC_ERR_NOMEM, "out of memory");
}

static void inputs_close(lower *lw, node_inputs *in) {
    size_t n = (size_t)(in->nin ? in->nin : 1);
    if (in->m)
        for (int j = 0; j < in->nin; j++) mat_list_free(lw, in->m[j]);
    if (in->req) fcg_free(lw->ctx, in->req, n * sizeof *in->req);
    if (in->m) fcg_free(lw->ctx, in->m, n * sizeof *in->m);
    if (in->row) fcg_free(lw->ctx, in->row, n * sizeof *in->row);
}

static fc_status parts_of(lower *lw, fc_array *a, int lay, fc_array **out);

/* Every input of g in its layout in->req[j]. */
static fc_status inputs_fetch(lower *lw, fc_array *g, node_inputs *in) {
    for (int j = 0; j < g->nin; j++) {
        if (!(in->m[j] = mat_new(lw, in->req[j])))
            return fcg_error(lw->ctx, FC_ERR_NOMEM, "out of memory");
        fc_status st = parts_of(lw, g->in[j], in->req[j], in->m[j]->p);
        if (st != FC_OK) return st;
    }
    return FC_OK;
}

static fc_status build_local(lower *lw, const fc_array *g, int lay, node_inputs *in,
                             fc_array **out) {
    for (int r = 0; r < lw->n; r++) {
        for (int j = 0; j < g->nin; j++) in->row[j] = in->m[j]->p[r];
        out[r] = rebuild(lw, g, lay, r, in->row);
    }
    return check_parts(lw, out, fcg_node_name(g));
}

/* Product of a shape's extents before axis k. */
static int64_t prefix(const int64_t *shape, int k) {
    int64_t p = 1;
    for (int d = 0; d < k; d++) p *= shape[d];
    return p;
}

/* For a reshape between shapes `from` and `to`: the axis of `to` that carries axis s of `from`
 * unchanged (the same extent at the same element offset), or -1. */
static int carried_axis(int nfrom, const int64_t *from, int s, int nto, const int64_t *to) {
    int64_t want = prefix(from, s), n = prefix(from, nfrom);
    if (n == 0) return -1;
    for (int k = 0; k < nto; k++)
        if (to[k] == from[s] && prefix(to, k) == want) return k;
    return -1;
}
static int reshape_axis_out(const fc_array *g, int s) {
    return carried_axis(g->in[0]->ndim, g->in[0]->shape, s, g->ndim, g->shape);
}
static int reshape_axis_in(const fc_array *g, int k) {
    return carried_axis(g->ndim, g->shape, k, g->in[0]->ndim, g->in[0]->shape);
}

/* Whether a view-like op leaves axis k alone (so a split along it passes through). */
static bool keeps_axis(const fc_array *g, int k) {
    switch ((fcg_op)g->op) {
    case FCG_OP_SLICE:
        return g->p.a[k] == 0 && g->p.b[k] == 1 && g->shape[k] == g->in[0]->shape[k];
    case FCG_OP_PAD: return g->p.a[k] == 0 && g->p.b[k] == 0;
    case FCG_OP_FFTN: return !(g->p.axes >> k & 1);
    case FCG_OP_CONCAT:
    case FCG_OP_SORT:
    case FCG_OP_ARGSORT:
    case FCG_OP_CUMSUM:
    case FCG_OP_CUMPROD:
    case FCG_OP_CUMMAX:
    case FCG_OP_CUMMIN: return g->p.axis != k;
    default: return false;
    }
}

/* The layout input j of elementwise-like node g (broadcasting) needs for g split along k. */
static int ew_input_layout(const fc_array *g, int j, int k) {
    const fc_array *x = g->in[j];
    int s = k - (g->ndim - x->ndim);
    if (s < 0 || (x->shape[s] != g->shape[k])) return LAY_REPL; /* broadcast along k */
    return s;
}

/* Whether node g can be computed in layout lay from its inputs in layouts req[] with no
 * collective (req filled); false: compute it replicated, then slice. */
static bool plan_inputs(const fc_array *g, int lay, int *req) {
    fcg_kind kind = fcg_ops[g->op].kind;
    if (lay == LAY_REPL) {
        for (int j = 0; j < g->nin; j++) req[j] = LAY_REPL;
        return true;
    }
    if (g->nin == 0) return false; /* a source: made whole, then sliced */
    switch ((fcg_op)g->op) {
    case FCG_OP_BROADCAST:
        req[0] = ew_input_layout(g, 0, lay);
        return true;
    case FCG_OP_PERMUTE:
        req[0] = (int)g->p.a[lay];
        return true;
    case FCG_OP_RESHAPE:
        return (req[0] = reshape_axis_in(g, lay)) >= 0;
    case FCG_OP_SLICE:
    case FCG_OP_PAD:
    case FCG_OP_CONCAT:
    case FCG_OP_FFTN:
    case FCG_OP_SORT:
    case FCG_OP_ARGSORT:
    case FCG_OP_CUMSUM: /* scans: local where split along another axis, else gathered */
    case FCG_OP_CUMPROD:
    case FCG_OP_CUMMAX:
    case FCG_OP_CUMMIN:
        for (int j = 0; j < g->nin; j++) req[j] = lay;
        return keeps_axis(g, lay);
    case FCG_OP_MATMUL: {
        const fc_array *a = g->in[0], *b = g->in[1];
        int nd = g->ndim;
        if (a->ndim < 2 || b->ndim < 2) return false;
        if (lay == nd - 2) req[0] = a->ndim - 2, req[1] = LAY_REPL;
        else if (lay == nd - 1) req[0] = LAY_REPL, req[1] = b->ndim - 1;
        else
            for (int j = 0; j < 2; j++) {
                const fc_array *x = g->in[j];
                int s = lay - (nd - x->ndim);
                req[j] = s < 0 || x->shape[s] != g->shape[lay] ? LAY_REPL : s;
            }
        return true;
    }
    default: break;
    }
    if (kind == FCG_KIND_EW) {
        for (int j = 0; j < g->nin; j++) req[j] = ew_input_layout(g, j, lay);
        return true;
    }
    return false; /* reductions and matmul products are placed by decide() */
}

static int node_pos(lower *lw, const fc_array *a) {
    return lw->order ? (int)fcg_nodemap_get(&lw->pos, a) : -1;
}


/* A free node's parts in layout lay, built where they are wanted. */
static fc_status build_free(lower *lw, fc_array *a, int lay, fc_array **out) {
    if (a->host && !a->dev) return host_parts(lw, a, lay, out);
    node_inputs in;
    fc_status st = inputs_open(lw, a->nin, &in);
    if (st != FC_OK) return st;
    if (plan_inputs(a, lay, in.req)) {
        if ((st = inputs_fetch(lw, a, &in)) == FC_OK) st = build_local(lw, a, lay, &in, out);
        inputs_close(lw, &in);
        return st;
    }
    inputs_close(lw, &in);
    /* Made whole on every shard, then sliced: a source computes only its slice (the slice
     * fuses into whatever reads it), with the values of the whole array. */
    fc_array *whole[FCM_MAX];
    if ((st = parts_of(lw, a, LAY_REPL, whole)) != FC_OK) return st;
    return slice_parts(lw, whole, lay, out);
}

/* Finds or builds a's parts in layout lay (memoised per node and layout). */
static fc_status parts_of(lower *lw, fc_array *a, int lay, fc_array **out) {
    int i = node_pos(lw, a);
    if (i < 0)
        return fcg_error(lw->ctx, FC_ERR_BACKEND, "sharded: %s is not in the program (fusec bug)",
                         fcg_node_name(a));
    mat **list = &lw->mats[i];
    for (mat *x = *list; x; x = x->next)
        if (x->lay == lay) {
            memcpy(out, x->p, (size_t)lw->n * sizeof *out);
            return FC_OK;
        }
    fc_status st;
    mesh_value *v = a->dev ? value_of(a) : NULL;
    int have = v ? v->axis : lw->lay[i];
    if (v) {
        st = convert(lw, v->part, v->axis, lay, a, out);
    } else if (have == LAY_FREE) {
        st = build_free(lw, a, lay, out);
        if (lay >= 0 && lw->pref[i] == LAY_FREE) lw->pref[i] = lay;
    } else {
        /* decided nodes are built in order; their own layout is the first entry */
        mat *own = NULL;
        for (mat *x = *list; x; x = x->next)
            if (x->lay == have) own = x;
        if (!own) return fcg_error(lw->ctx, FC_ERR_BACKEND, "sharded: %s used before it was "
                                   "built (fusec bug)", fcg_node_name(a));
        st = convert(lw, own->p, have, lay, a, out);
    }
    if (st != FC_OK) return st;
    mat *x = mat_new(lw, lay);
    if (!x) return fcg_error(lw->ctx, FC_ERR_NOMEM, "out of memory");
    memcpy(x->p, out, (size_t)lw->n * sizeof *out);
    x->next = *list;
    *list = x;
    return FC_OK;
}

/* ---- layouts ------------------------------------------------------------------------------- */

static int layout_of(lower *lw, const fc_array *a) {
    if (a->dev) return value_of(a)->axis;
    if (a->host) return LAY_FREE;
    return lw->lay[node_pos(lw, a)];
}

/* Elementwise-like: the first input split along an axis the result keeps; else a free input
 * already built split (a reduction took it so: softmax's exp(x - max) follows x); else the
 * largest free input that splits by default; else replicated (all inputs free: free). */
static int follow_inputs(lower *lw, const fc_array *g) {
    bool all_free = true;
    int best = LAY_REPL;
    size_t best_size = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int j = 0; j < g->nin; j++) {
            const fc_array *x = g->in[j];
            int l = layout_of(lw, x), i = node_pos(lw, x);
            all_free &= l == LAY_FREE;
            if (l == LAY_FREE && pass == 1) {
                l = lw->pref[i];
                int d = default_layout(x, lw->m);
                if (l == LAY_FREE && d >= 0 && fcg_node_numel(x) > best_size) {
                    int k = d + g->ndim - x->ndim;
                    if (k >= 0 && k < g->ndim && x->shape[d] == g->shape[k])
                        best = k, best_size = fcg_node_numel(x);
                }
            }
            if (l >= 0 && (pass == 1 || layout_of(lw, x) != LAY_FREE)) {
                int k = l + (g->ndim - x->ndim);
                if (k >= 0 && k < g->ndim && x->shape[l] == g->shape[k]) return k;
            }
        }
    if (all_free) return LAY_FREE;
    return best;
}

/* A free input's layout where its reader must place it: the split it was built in already,
 * else the default. */
static int settle(lower *lw, const fc_array *x) {
    int l = layout_of(lw, x);
    if (l != LAY_FREE) return l;
    int i = node_pos(lw, x);
    return lw->pref[i] != LAY_FREE ? lw->pref[i] : default_layout(x, lw->m);
}

/* Decides node g's layout from its inputs'. *collective: a reduction or matmul that finishes
 * with an all-reduce. req: what it reads its inputs in. */
static fc_status decide(lower *lw, const fc_array *g, int *lay, int *req, bool *collective) {
    fcg_kind kind = fcg_ops[g->op].kind;
    *collective = false;
    if (kind == FCG_KIND_USER || g->op == FCG_OP_USER_REDUCE || g->op == FCG_OP_INPUT)
        return fcg_error(lw->ctx, FC_ERR_UNSUPPORTED, "a sharded context cannot evaluate %s: "
                         "run it on a shard's own context (fc_ctx_shard, fc_gather)",
                         g->op == FCG_OP_INPUT ? "a program input placeholder"
                                               : "a user kernel");
    if (kind == FCG_KIND_SOURCE) {
        *lay = LAY_FREE;
        return FC_OK;
    }
    if (kind == FCG_KIND_GATHER) { /* any element may be read: every shard holds it all */
        *lay = LAY_REPL;
        req[0] = req[1] = LAY_REPL;
        return FC_OK;
    }
    if (kind == FCG_KIND_SCATTER) { /* any element may be written: every shard holds it all */
        *lay = LAY_REPL;
        req[0] = req[1] = req[2] = LAY_REPL;
        return FC_OK;
    }
    /* a compaction (its places depend on every element before), dense linear algebra (each
     * matrix whole), a sparse product (any row may name any column) and a stencil (each output
     * reads a window, across any split): every shard computes it all from whole inputs */
    if (g->op == FCG_OP_COMPRESS || fcg_op_is_linalg(g->op) || g->op == FCG_OP_CSR_MATMUL ||
        g->op == FCG_OP_STENCIL2D) {
        *lay = LAY_REPL;
        for (int j = 0; j < g->nin; j++) req[j] = LAY_REPL;
        return FC_OK;
    }
    if (g->op == FCG_OP_MATMUL) {
        const fc_array *a = g->in[0], *b = g->in[1];
        int nd = g->ndim;
        int la = layout_of(lw, a), lb = layout_of(lw, b);
        if (a->ndim < 2 || b->ndim < 2) {
            *lay = LAY_REPL;
        } else {
            /* free operands: a by rows, b replicated (data parallel), unless b is split by
             * columns already */
            if (la == LAY_FREE) la = lb == b->ndim - 1 ? LAY_REPL
                                    : a->shape[a->ndim - 2] >= lw->n ? a->ndim - 2 : LAY_REPL;
            if (lb == LAY_FREE) lb = LAY_REPL;
            int ba = la >= 0 && la < a->ndim - 2 ? la + (nd - a->ndim) : -1;
            int bb = lb >= 0 && lb < b->ndim - 2 ? lb + (nd - b->ndim) : -1;
            if (la == a->ndim - 1 && lb == b->ndim - 2) {
                *lay = LAY_REPL; /* the contracted axis: partial products, all-reduced */
                *collective = true;
                req[0] = la, req[1] = lb;
                return FC_OK;
            }
            if (la == a->ndim - 2) *lay = nd - 2;
            else if (lb == b->ndim - 1) *lay = nd - 1;
            else if (ba >= 0 && a->shape[la] == g->shape[ba]) *lay = ba;
            else if (bb >= 0 && b->shape[lb] == g->shape[bb]) *lay = bb;
            else *lay = LAY_REPL;
        }
        if (!plan_inputs(g, *lay, req)) *lay = LAY_REPL, plan_inputs(g, LAY_REPL, req);
        return FC_OK;
    }
    if (kind == FCG_KIND_REDUCE) {
        const fc_array *x = g->in[0];
        int s = settle(lw, x);
        req[0] = s;
        if (s < 0) {
            *lay = LAY_REPL;
        } else if (!(g->p.axes >> s & 1)) {
            int k = s;
            if (!g->p.keepdims)
                for (int d = 0; d < s; d++) k -= (int)(g->p.axes >> d & 1);
            *lay = k;
        } else {
            *lay = LAY_REPL;
            const fcg_reduction *d = fcg_reduction_of(g);
            bool empty_shard = x->shape[s] < lw->n;
            if (d->combine == FCG_COMBINE_ARGMAX || d->combine == FCG_COMBINE_ARGMIN ||
                (d->identity == FCG_ID_NONE && empty_shard))
                req[0] = LAY_REPL; /* gathered: the index, or a shard with nothing to reduce */
            else
                *collective = true;
        }
        return FC_OK;
    }
    /* elementwise ops and views */
    int l;
    switch ((fcg_op)g->op) {
    case FCG_OP_PERMUTE:
        l = layout_of(lw, g->in[0]);
        if (l == LAY_FREE || l == LAY_REPL) *lay = l;
        else
            for (int k = 0; k < g->ndim; k++)
                if (g->p.a[k] == l) *lay = k;
        break;
    case FCG_OP_RESHAPE:
        l = layout_of(lw, g->in[0]);
        *lay = l >= 0 ? reshape_axis_out(g, l) /* LAY_REPL when the split moves */ : l;
        break;
    case FCG_OP_SLICE:
    case FCG_OP_PAD:
    case FCG_OP_FFTN:
    case FCG_OP_SORT:
    case FCG_OP_ARGSORT:
    case FCG_OP_CUMSUM:
    case FCG_OP_CUMPROD:
    case FCG_OP_CUMMAX:
    case FCG_OP_CUMMIN:
        l = layout_of(lw, g->in[0]);
        *lay = l >= 0 && !keeps_axis(g, l) ? LAY_REPL : l;
        break;
    case FCG_OP_CONCAT: {
        bool all_free = true;
        *lay = LAY_REPL;
        for (int j = 0; j < g->nin; j++) {
            l = layout_of(lw, g->in[j]);
            all_free &= l == LAY_FREE;
            if (l >= 0 && l != g->p.axis) {
                *lay = l;
                break;
            }
        }
        if (all_free) *lay = LAY_FREE;
        break;
    }
    default: /* elementwise, broadcast */
        *lay = follow_inputs(lw, g);
        break;
    }
    if (*lay != LAY_FREE && !plan_inputs(g, *lay, req)) {
        *lay = LAY_REPL;
        plan_inputs(g, LAY_REPL, req);
    }
    return FC_OK;
}

/* ---- reductions over the split axis -------------------------------------------------------- */

static fc_array *abs2(fc_array *v) {
    if (fcg_is_complex(fc_array_dtype(v)))
        return fc_add(fc_square(fc_real(v)), fc_square(fc_imag(v)));
    return fc_square(v);
}

/* g reduces over split axis s of x (parts xp): local partials (keepdims), all-reduce, finish. */
static fc_status reduce_across(lower *lw, const fc_array *g, fc_array *const *xp, fc_array **out) {
    const fcg_reduction *d = fcg_reduction_of(g);
    const fc_array *x = g->in[0];
    fc_dtype loop = (fc_dtype)g->loop_dtype, acc = fcg_reduce_acc_dtype(g);
    fc_axes ax = {0, {0}};
    double count = 1;
    for (int k = 0; k < x->ndim; k++)
        if (g->p.axes >> k & 1) ax.axis[ax.n++] = k, count *= (double)x->shape[k];
    fc_array *part[FCM_MAX], *tot[FCM_MAX], *res[FCM_MAX];
    fc_status st;
    for (int r = 0; r < lw->n; r++) {
        fc_array *v = fc_cast(xp[r], loop), *mapped = v;
        if (d->map == FCG_MAP_ABS) mapped = fc_abs(v);
        else if (d->map == FCG_MAP_ABS2) mapped = abs2(v);
        switch (d->combine) {
        case FCG_COMBINE_ADD:
        case FCG_COMBINE_MOMENTS: part[r] = fc_sum(fc_cast(mapped, acc), ax, true); break;
        case FCG_COMBINE_MUL: part[r] = fc_prod(fc_cast(mapped, acc), ax, true); break;
        case FCG_COMBINE_MAX: part[r] = fc_max(fc_cast(mapped, acc), ax, true); break;
        case FCG_COMBINE_MIN: part[r] = fc_min(fc_cast(mapped, acc), ax, true); break;
        case FCG_COMBINE_OR: part[r] = fc_cast(fc_any(v, ax, true), FC_U8); break;
        case FCG_COMBINE_AND: part[r] = fc_cast(fc_all(v, ax, true), FC_U8); break;
        case FCG_COMBINE_ARGMAX:
        case FCG_COMBINE_ARGMIN:
        case FCG_COMBINE_USER:
        case FCG_COMBINE_UNSET:
            return fcg_error(lw->ctx, FC_ERR_BACKEND, "sharded: %s over a split axis (fusec bug)",
                             fcg_node_name(g));
        }
    }
    if ((st = check_parts(lw, part, fcg_node_name(g))) != FC_OK) return st;
    static const fcn_redop redop[] = {
        [FCG_COMBINE_ADD] = FCN_SUM, [FCG_COMBINE_MOMENTS] = FCN_SUM, [FCG_COMBINE_MUL] = FCN_PROD,
        [FCG_COMBINE_MAX] = FCN_MAX, [FCG_COMBINE_MIN] = FCN_MIN, [FCG_COMBINE_OR] = FCN_MAX,
        [FCG_COMBINE_AND] = FCN_MIN};
    if ((st = allreduce(lw, part, redop[d->combine], tot)) != FC_OK) return st;
    if (d->combine == FCG_COMBINE_MOMENTS) {
        /* Second pass around the global mean: exact where one-pass sums of squares are not. */
        for (int r = 0; r < lw->n; r++) {
            fc_ctx *c = lw->m->child[r];
            fc_array *mean = fc_div(tot[r], fc_f64(c, count));
            fc_array *dev = fc_sub(fc_cast(fc_cast(xp[r], loop), acc), mean);
            part[r] = fc_sum(abs2(dev), ax, true);
        }
        if ((st = check_parts(lw, part, fcg_node_name(g))) != FC_OK) return st;
        if ((st = allreduce(lw, part, FCN_SUM, tot)) != FC_OK) return st;
    }
    for (int r = 0; r < lw->n; r++) {
        fc_ctx *c = lw->m->child[r];
        fc_array *v = tot[r];
        switch (d->finish) {
        case FCG_FINISH_NONE: break;
        case FCG_FINISH_MEAN: v = fc_div(v, fc_f64(c, count)); break;
        case FCG_FINISH_VARIANCE:
        case FCG_FINISH_STD: {
            double dof = count - g->p.ddof;
            v = fc_div(v, fc_f64(c, dof > 0 ? dof : 0));
            if (d->finish == FCG_FINISH_STD) v = fc_sqrt(v);
            break;
        }
        case FCG_FINISH_SQRT: v = fc_sqrt(v); break;
        case FCG_FINISH_INDEX:
        case FCG_FINISH_USER:
        case FCG_FINISH_UNSET:
            return fcg_error(lw->ctx, FC_ERR_BACKEND, "sharded: %s finish (fusec bug)",
                             fcg_node_name(g));
        }
        v = fc_cast(v, (fc_dtype)g->dtype);
        if (!g->p.keepdims) {
            fc_shape s = {g->ndim, {0}};
            memcpy(s.dim, g->shape, sizeof g->shape);
            v = fc_reshape(v, s);
        }
        res[r] = v;
    }
    if ((st = check_parts(lw, res, fcg_node_name(g))) != FC_OK) return st;
    memcpy(out, res, (size_t)lw->n * sizeof *out);
    return FC_OK;
}

/* ---- evaluation -------------------------------------------------------------------------------- */

static fc_status build_node(lower *lw, size_t i) {
    fc_array *g = lw->order[i];
    int lay = LAY_REPL;
    bool collective;
    node_inputs in;
    fc_status st = inputs_open(lw, g->nin, &in);
    if (st != FC_OK) return st;
    if ((st = decide(lw, g, &lay, in.req, &collective)) != FC_OK || lay == LAY_FREE) {
        lw->lay[i] = lay;
        inputs_close(lw, &in);
        return st;
    }
    lw->lay[i] = lay;
    if (lw->log) {
        char b[24];
        fprintf(stderr, "fusec shard: %s %s -> %s%s\n", fcg_node_name(g),
                fcg_shape_str((char[200]){0}, g->ndim, g->shape), lay_name(lay, b),
                collective ? " (all-reduce)" : "");
    }
    mat *own = mat_new(lw, lay);
    if (!own) st = fcg_error(lw->ctx, FC_ERR_NOMEM, "out of memory");
    if (st == FC_OK) st = inputs_fetch(lw, g, &in);
    if (st == FC_OK) {
        if (collective && g->op == FCG_OP_MATMUL) {
            fc_array *prod[FCM_MAX];
            if ((st = build_local(lw, g, LAY_REPL, &in, prod)) == FC_OK)
                st = allreduce(lw, prod, FCN_SUM, own->p);
        } else if (collective) {
            st = reduce_across(lw, g, in.m[0]->p, own->p);
        } else {
            st = build_local(lw, g, lay, &in, own->p);
        }
    }
    inputs_close(lw, &in);
    if (st != FC_OK) {
        mat_list_free(lw, own);
        return st;
    }
    own->next = lw->mats[i];
    lw->mats[i] = own;
    return FC_OK;
}

static mesh_value *value_new(fc_ctx *ctx, int n, int axis) {
    mesh_value *v = fcg_calloc(ctx, sizeof *v + (size_t)n * sizeof(fc_array *));
    if (v) v->n = n, v->axis = axis;
    return v;
}

static void value_free(fc_ctx *ctx, mesh_value *v) {
    for (int r = 0; r < v->n; r++)
        if (v->part[r]) fcg_release(v->part[r]);
    fcg_free(ctx, v, sizeof *v + (size_t)v->n * sizeof(fc_array *));
}

/* a takes v (parts already retained) as its value. */
static void value_attach(fc_array *a, mesh_value *v) {
    a->dev = (uint64_t)(uintptr_t)v;
    a->dev_bytes = fcg_node_numel(a) * fc_dtype_size((fc_dtype)a->dtype);
    if (!a->dev_bytes) a->dev_bytes = 1;
    a->dev_stream = 0;
    a->dev_reader = 0;
}

/* Evaluates parts p on their shards and makes a value of them (their references retained). */
static fc_status value_from_parts(lower *lw, fc_array *const *p, int axis, mesh_value **out) {
    fc_status st = eval_parts(lw, p);
    if (st != FC_OK) return st;
    mesh_value *v = value_new(lw->ctx, lw->n, axis);
    if (!v) return fcg_error(lw->ctx, FC_ERR_NOMEM, "out of memory");
    for (int r = 0; r < lw->n; r++) fcg_retain(v->part[r] = p[r]);
    *out = v;
    return FC_OK;
}

static fc_status mesh_eval(fc_ctx *ctx, fc_array *const *arrays, int n, fc_stream *stream) {
    (void)stream; /* each shard runs on its own context's stream */
    mesh *m = mesh_of(ctx);
    if (m->dead) return dead_error(ctx);
    fc_array **order = NULL;
    size_t count = 0;
    fc_status st = fcg_topo_order(ctx, arrays, n, true, &order, &count);
    if (st != FC_OK) return st;
    lower lw;
    if ((st = lower_open(&lw, ctx)) != FC_OK) {
        fcg_free(ctx, order, count * sizeof *order);
        return st;
    }
    lw.order = order;
    lw.count = count;
    mesh_value **vals = fcg_calloc(ctx, (size_t)n * sizeof *vals);
    if (!vals || !(lw.lay = fcg_calloc(ctx, count * sizeof *lw.lay)) ||
        !(lw.pref = fcg_malloc(ctx, count * sizeof *lw.pref)) ||
        !(lw.mats = fcg_calloc(ctx, count * sizeof *lw.mats)))
        st = fcg_error(ctx, FC_ERR_NOMEM, "out of memory");
    for (size_t i = 0; lw.pref && i < count; i++) lw.pref[i] = LAY_FREE;
    if (st == FC_OK) st = fcg_nodemap_positions(ctx, order, count, &lw.pos);
    for (size_t i = 0; i < count && st == FC_OK; i++) {
        fc_array *a = order[i];
        if (fcg_has_value(a)) lw.lay[i] = layout_of(&lw, a);
        else st = build_node(&lw, i);
    }
    /* Every output's parts first, then their evaluation, shard by shard, so that all devices
     * have their work queued before the first is waited for. */
    for (int j = 0; j < n && st == FC_OK; j++) {
        fc_array *a = arrays[j];
        int l = lw.lay[node_pos(&lw, a)];
        if (l == LAY_FREE) l = default_layout(a, m);
        if (!(vals[j] = value_new(ctx, m->n, l))) {
            st = fcg_error(ctx, FC_ERR_NOMEM, "out of memory");
            break;
        }
        if ((st = parts_of(&lw, a, l, vals[j]->part)) == FC_OK)
            for (int r = 0; r < m->n; r++) fcg_retain(vals[j]->part[r]);
        else memset(vals[j]->part, 0, (size_t)m->n * sizeof *vals[j]->part); /* none retained */
    }
    if (st == FC_OK) {
        fc_array *list[64], **lp = list;
        if (n > 64 && !(lp = fcg_malloc(ctx, (size_t)n * sizeof *lp)))
            st = fcg_error(ctx, FC_ERR_NOMEM, "out of memory");
        for (int r = 0; r < m->n && st == FC_OK; r++) {
            for (int j = 0; j < n; j++) lp[j] = vals[j]->part[r];
            fc_status e = fc_eval(m->child[r], lp, n);
            if (e != FC_OK) st = shard_error(ctx, r, e);
        }
        if (lp != list) fcg_free(ctx, lp, (size_t)n * sizeof *lp);
    }
    for (int j = 0; j < n && vals; j++) {
        if (!vals[j]) continue;
        if (st == FC_OK) value_attach(arrays[j], vals[j]);
        else value_free(ctx, vals[j]);
    }
    if (vals) fcg_free(ctx, vals, (size_t)n * sizeof *vals);
    lower_close(&lw);
    fcg_free(ctx, order, count * sizeof *order);
    return st;
}

/* ---- transfers ------------------------------------------------------------------------------ */

/* Fills a->host from the parts, afresh each time (a part may have been written since). */
static fc_status mesh_download(fc_ctx *ctx, fc_array *a) {
    mesh *m = mesh_of(ctx);
    mesh_value *v = value_of(a);
    fc_status st = mesh_sync(ctx);
    if (st != FC_OK) return st;
    fc_dtype t = (fc_dtype)a->dtype;
    size_t es = fc_dtype_size(t), bytes = fcg_node_numel(a) * es;
    char *host = a->host ? a->host : fcg_malloc(ctx, bytes ? bytes : 1);
    if (!host) return fcg_error(ctx, FC_ERR_NOMEM, "read: out of memory for %zu bytes", bytes);
    if (v->axis < 0) {
        if ((st = fc_read(v->part[0], host, 0, (int64_t)fcg_node_numel(a))) != FC_OK)
            st = shard_error(ctx, 0, st);
    } else {
        int k = v->axis;
        size_t inner = es, outer = 1;
        for (int d = k + 1; d < a->ndim; d++) inner *= (size_t)a->shape[d];
        for (int d = 0; d < k; d++) outer *= (size_t)a->shape[d];
        for (int r = 0; r < m->n && st == FC_OK; r++) {
            size_t len = (size_t)part_len(a->shape[k], m->n, r);
            size_t start = (size_t)part_start(a->shape[k], m->n, r), pb = outer * len * inner;
            if (!pb) continue;
            char *tmp = outer == 1 ? host + start * inner : fcg_malloc(ctx, pb);
            if (!tmp) {
                st = fcg_error(ctx, FC_ERR_NOMEM, "read: out of memory");
                break;
            }
            if ((st = fc_read(v->part[r], tmp, 0, (int64_t)(pb / es))) != FC_OK)
                st = shard_error(ctx, r, st);
            if (outer != 1) {
                for (size_t o = 0; o < outer && st == FC_OK; o++)
                    memcpy(host + (o * (size_t)a->shape[k] + start) * inner, tmp + o * len * inner,
                           len * inner);
                fcg_free(ctx, tmp, pb);
            }
        }
    }
    if (st != FC_OK) {
        if (host != a->host) fcg_free(ctx, host, bytes ? bytes : 1);
        return st;
    }
    a->host = host;
    a->host_bytes = bytes ? bytes : 1;
    return FC_OK;
}

static void mesh_free_value(fc_ctx *ctx, fc_array *a) {
    if (!a->dev) return;
    value_free(ctx, value_of(a));
    a->dev = 0;
    a->dev_bytes = 0;
}

/* A write goes into the host copy, then each shard's part is written from it. */
static fc_status mesh_write(fc_ctx *ctx, fc_array *a, const void *src, size_t offset,
                            size_t bytes, fc_stream *stream) {
    (void)stream;
    fc_status st = mesh_download(ctx, a);
    if (st != FC_OK) return st;
    memcpy((char *)a->host + offset, src, bytes);
    mesh *m = mesh_of(ctx);
    mesh_value *v = value_of(a);
    fc_dtype t = (fc_dtype)a->dtype;
    size_t es = fc_dtype_size(t);
    if (v->axis < 0) {
        for (int r = 0; r < m->n; r++)
            if ((st = fc_write(v->part[r], src, (int64_t)(offset / es), (int64_t)(bytes / es),
                               NULL)) != FC_OK)
                return shard_error(ctx, r, st);
        return FC_OK;
    }
    lower lw;
    if ((st = lower_open(&lw, ctx)) != FC_OK) return st;
    fc_array *p[FCM_MAX];
    if ((st = host_parts(&lw, a, v->axis, p)) == FC_OK)
        for (int r = 0; r < m->n && st == FC_OK; r++) {
            size_t pb = fcg_node_numel(p[r]) * es;
            if (pb && (st = fc_eval(m->child[r], &p[r], 1)) == FC_OK)
                st = fc_write(v->part[r], p[r]->host, 0, (int64_t)(pb / es), NULL);
            if (st != FC_OK) st = shard_error(ctx, r, st);
        }
    lower_close(&lw);
    return st;
}

/* A range of the value, read from the parts that hold it (done when this returns). A split
 * along an axis with only unit extents before it lies in the parts back to back; any other
 * split goes through a whole download. */
static fc_status mesh_read_async(fc_ctx *ctx, fc_array *a, void *dst, size_t offset, size_t bytes,
                                 fc_stream *stream) {
    (void)stream;
    mesh *m = mesh_of(ctx);
    mesh_value *v = value_of(a);
    size_t es = fc_dtype_size((fc_dtype)a->dtype);
    bool leading = true;
    for (int d = 0; d < v->axis; d++) leading &= a->shape[d] == 1;
    fc_status st = mesh_sync(ctx);
    if (st != FC_OK) return st;
    if (!leading) {
        if ((st = mesh_download(ctx, a)) == FC_OK) memcpy(dst, (const char *)a->host + offset, bytes);
        return st;
    }
    if (v->axis < 0) {
        st = fc_read(v->part[0], dst, (int64_t)(offset / es), (int64_t)(bytes / es));
        return st == FC_OK ? st : shard_error(ctx, 0, st);
    }
    size_t inner = es;
    for (int d = v->axis + 1; d < a->ndim; d++) inner *= (size_t)a->shape[d];
    size_t end = offset + bytes;
    for (int r = 0; r < m->n; r++) {
        size_t lo = (size_t)part_start(a->shape[v->axis], m->n, r) * inner;
        size_t hi = lo + (size_t)part_len(a->shape[v->axis], m->n, r) * inner;
        size_t from = offset > lo ? offset : lo, to = end < hi ? end : hi;
        if (from >= to) continue;
        st = fc_read(v->part[r], (char *)dst + (from - offset), (int64_t)((from - lo) / es),
                     (int64_t)((to - from) / es));
        if (st != FC_OK) return shard_error(ctx, r, st);
    }
    return FC_OK;
}

static fc_status mesh_copy_from(fc_ctx *ctx, fc_array *dst, fc_ctx *src_ctx, const fc_array *src) {
    (void)ctx, (void)dst, (void)src_ctx, (void)src;
    return FC_ERR_UNSUPPORTED; /* through the host */
}

static fc_status mesh_alloc_value(fc_ctx *ctx, fc_array *a) {
    return fcg_error(ctx, FC_ERR_UNSUPPORTED, "a sharded array %s cannot be allocated unlaid",
                     fcg_node_name(a));
}

static fc_status mesh_query(fc_ctx *ctx, bool *idle) {
    mesh *m = mesh_of(ctx);
    *idle = true;
    if (m->dead) return dead_error(ctx);
    for (int r = 0; r < m->n; r++) {
        bool one;
        fc_status st = m->child[r]->be->query(m->child[r], &one);
        if (st != FC_OK) return shard_error(ctx, r, st);
        *idle &= one;
    }
    return FC_OK;
}

/* ---- streams and events: a sharded stream is every shard's own; an event one per shard ---- */

static fc_status mesh_stream_create(fc_ctx *ctx, fc_stream *s) {
    (void)ctx;
    s->cu = NULL;
    return FC_OK;
}
static void mesh_stream_destroy(fc_ctx *ctx, fc_stream *s) { (void)ctx, (void)s; }
static fc_status mesh_stream_sync(fc_ctx *ctx, fc_stream *s) {
    (void)s;
    return mesh_sync(ctx);
}

static fc_status mesh_event_create(fc_ctx *ctx, fc_event *e) {
    mesh *m = mesh_of(ctx);
    fc_event **ev = fcg_calloc(ctx, (size_t)m->n * sizeof *ev);
    if (!ev) return fcg_error(ctx, FC_ERR_NOMEM, "event_create: out of memory");
    for (int r = 0; r < m->n; r++) {
        fc_status st = fc_event_create(m->child[r], &ev[r]);
        if (st != FC_OK) {
            for (int q = 0; q < r; q++) fc_event_destroy(ev[q]);
            fcg_free(ctx, ev, (size_t)m->n * sizeof *ev);
            return shard_error(ctx, r, st);
        }
    }
    e->cu = ev;
    return FC_OK;
}
static void mesh_event_destroy(fc_ctx *ctx, fc_event *e) {
    mesh *m = mesh_of(ctx);
    fc_event **ev = e->cu;
    if (!ev) return;
    for (int r = 0; r < m->n; r++) fc_event_destroy(ev[r]);
    fcg_free(ctx, ev, (size_t)m->n * sizeof *ev);
}
static fc_status mesh_event_record(fc_ctx *ctx, fc_event *e, fc_stream *s) {
    (void)s;
    mesh *m = mesh_of(ctx);
    if (m->dead) return dead_error(ctx);
    fc_event **ev = e->cu;
    for (int r = 0; r < m->n; r++) {
        fc_status st = fc_event_record(ev[r], NULL);
        if (st != FC_OK) return shard_error(ctx, r, st);
    }
    return FC_OK;
}
static fc_status mesh_stream_wait_event(fc_ctx *ctx, fc_stream *s, fc_event *e) {
    (void)ctx, (void)s, (void)e;
    return FC_OK; /* every shard works on its own stream: orders already hold */
}
static fc_status mesh_event_sync(fc_ctx *ctx, fc_event *e) {
    (void)e;
    return mesh_sync(ctx); /* polled: a failed shard cannot leave the others waiting */
}
/* The longest of the shards' times between the two events. */
static fc_status mesh_event_elapsed(fc_ctx *ctx, fc_event *a, fc_event *b, float *ms) {
    mesh *m = mesh_of(ctx);
    fc_event **ea = a->cu, **eb = b->cu;
    *ms = 0;
    fc_status st = mesh_sync(ctx);
    for (int r = 0; r < m->n && st == FC_OK; r++) {
        float one;
        if ((st = fc_event_elapsed_ms(ea[r], eb[r], &one)) != FC_OK) return shard_error(ctx, r, st);
        if (one > *ms) *ms = one;
    }
    return st;
}

/* ---- memory and the rest ------------------------------------------------------------------ */

static void mesh_memory_stats(fc_ctx *ctx, fc_memory_stats *out) {
    mesh *m = mesh_of(ctx);
    for (int r = 0; r < m->n; r++) {
        fc_memory_stats s;
        if (fc_memory_stats_get(m->child[r], &s) != FC_OK) continue;
        out->in_use += s.in_use;
        out->peak += s.peak; /* the sum of the shards' peaks: each shard's own bound */
        out->cached += s.cached;
        out->limit += s.limit;
        out->pinned_in_use += s.pinned_in_use;
        out->pinned_cached += s.pinned_cached;
        out->allocations += s.allocations;
        out->reused += s.reused;
        out->library += s.library;
    }
}
static void mesh_memory_reset_peak(fc_ctx *ctx) {
    mesh *m = mesh_of(ctx);
    for (int r = 0; r < m->n; r++) fc_memory_reset_peak(m->child[r]);
}
static fc_status mesh_memory_trim(fc_ctx *ctx) {
    mesh *m = mesh_of(ctx);
    for (int r = 0; r < m->n; r++) {
        fc_status st = fc_memory_trim(m->child[r]);
        if (st != FC_OK) return shard_error(ctx, r, st);
    }
    return FC_OK;
}
static void *mesh_host_alloc(fc_ctx *ctx, size_t bytes) {
    return fc_host_alloc(mesh_of(ctx)->child[0], bytes);
}
static void mesh_host_free(fc_ctx *ctx, void *p) { fc_host_free(mesh_of(ctx)->child[0], p); }
static fc_status mesh_copy_bandwidth(fc_ctx *ctx, size_t bytes, int runs, double *gbps) {
    fc_status st = fc_device_copy_bandwidth(mesh_of(ctx)->child[0], bytes, runs, gbps);
    return st == FC_OK ? st : shard_error(ctx, 0, st);
}
static fc_status mesh_sync_all(fc_ctx *ctx) { return mesh_sync(ctx); }
static int mesh_device(const fc_ctx *ctx) { return fc_ctx_device(mesh_of(ctx)->child[0]); }
static const char *mesh_arch(const fc_ctx *ctx) {
    (void)ctx;
    return NULL; /* raw modules run on a shard's own context */
}
static fc_status mesh_module_load(fc_ctx *ctx, const void *cubin, size_t size, void **module) {
    (void)cubin, (void)size, (void)module;
    return fcg_error(ctx, FC_ERR_UNSUPPORTED, "raw modules do not run on a sharded context: "
                     "load them on a shard's own context (fc_ctx_shard)");
}
static void mesh_module_unload(fc_ctx *ctx, void *module) { (void)ctx, (void)module; }
static fc_status mesh_raw_launch(fc_ctx *ctx, void *module, const char *name,
                                 const unsigned grid[3], const unsigned block[3],
                                 size_t shared_bytes, fc_stream *stream, int nargs,
                                 const fcb_raw_arg *args) {
    (void)module, (void)name, (void)grid, (void)block, (void)shared_bytes, (void)stream,
        (void)nargs, (void)args;
    return fcg_error(ctx, FC_ERR_UNSUPPORTED, "raw kernels do not run on a sharded context");
}

/* Interop shares one buffer of one device: a sharded array has one per shard (share a part:
 * fc_shard_part, or a shard's context). */
static fc_status mesh_no_interop(fc_ctx *ctx, const char *what) {
    return fcg_error(ctx, FC_ERR_UNSUPPORTED, "%s: a sharded context's arrays live on several "
                     "shards; share a shard's part (fc_shard_part) or use a shard's context "
                     "(fc_ctx_shard)", what);
}
static fc_status mesh_export_value(fc_ctx *ctx, fc_array *a, fc_stream *s, void **ptr,
                                   void **stream) {
    (void)a, (void)s, (void)ptr, (void)stream;
    return mesh_no_interop(ctx, "export");
}
static fc_status mesh_import_value(fc_ctx *ctx, fc_array *a, void *ptr, fc_stream *s) {
    (void)a, (void)ptr, (void)s;
    return mesh_no_interop(ctx, "import");
}
static void mesh_take_value(fc_ctx *ctx, fc_array *a, fcb_value *v) {
    (void)ctx, (void)a;
    memset(v, 0, sizeof *v); /* never shared: nothing to take */
}
static void mesh_drop_value(fc_ctx *ctx, fcb_value *v, bool external) {
    (void)ctx, (void)v, (void)external;
}
static fc_status mesh_stream_wrap(fc_ctx *ctx, fc_stream *s, void *cu) {
    (void)s, (void)cu;
    return mesh_no_interop(ctx, "stream_wrap");
}
static fc_status mesh_stream_handle(fc_ctx *ctx, const fc_stream *s, void **cu) {
    (void)s;
    *cu = NULL;
    return mesh_no_interop(ctx, "stream_handle");
}
static fc_status mesh_stream_wait_value(fc_ctx *ctx, fc_stream *s, fc_array *a) {
    (void)s, (void)a;
    return mesh_no_interop(ctx, "stream_wait_array");
}

static void mesh_destroy(fc_ctx *ctx) {
    mesh *m = mesh_of(ctx);
    if (!m) return;
    for (size_t i = 0; i < m->npending; i++) {
        fc_event_destroy(m->pending[i].start);
        fc_event_destroy(m->pending[i].end);
    }
    if (m->pending) fcg_free(ctx, m->pending, m->cap * sizeof *m->pending);
    if (m->dead) fcn_comm_abort(m->nccl);
    else
        for (int r = 0; r < m->n; r++) fc_ctx_synchronize(m->child[r]);
    fcn_comm_destroy(m->nccl);
    for (int r = 0; r < m->n; r++) fc_ctx_destroy(m->child[r]);
    fcg_free(ctx, m, sizeof *m);
    ctx->be_state = NULL;
}

static const fcb_backend fcm_backend_cuda, fcm_backend_host;

#define MESH_TABLE(kind_)                                                                      \
    {                                                                                          \
        .name = "sharded", .kind = (kind_), .host_copy_volatile = true,                        \
        .destroy = mesh_destroy, .device = mesh_device,                                        \
        .eval = mesh_eval, .download = mesh_download, .free_value = mesh_free_value,           \
        .write = mesh_write, .read_async = mesh_read_async, .copy_from = mesh_copy_from,       \
        .alloc_value = mesh_alloc_value, .query = mesh_query,                                  \
        .stream_create = mesh_stream_create, .stream_destroy = mesh_stream_destroy,            \
        .stream_sync = mesh_stream_sync, .sync = mesh_sync_all,                                \
        .event_create = mesh_event_create, .event_destroy = mesh_event_destroy,                \
        .event_record = mesh_event_record, .stream_wait_event = mesh_stream_wait_event,        \
        .event_sync = mesh_event_sync, .event_elapsed = mesh_event_elapsed,                    \
        .memory_stats = mesh_memory_stats, .memory_reset_peak = mesh_memory_reset_peak,        \
        .memory_trim = mesh_memory_trim, .host_alloc = mesh_host_alloc,                        \
        .host_free = mesh_host_free, .copy_bandwidth = mesh_copy_bandwidth,                    \
        .arch = mesh_arch, .module_load = mesh_module_load,                                    \
        .module_unload = mesh_module_unload, .raw_launch = mesh_raw_launch,                    \
        .export_value = mesh_export_value, .import_value = mesh_import_value,                  \
        .take_value = mesh_take_value, .drop_value = mesh_drop_value,                          \
        .stream_wrap = mesh_stream_wrap, .stream_handle = mesh_stream_handle,                  \
        .stream_wait_value = mesh_stream_wait_value,                                           \
    }

/* fc_ctx_backend of a sharded context names its shards' backend. */
static const fcb_backend fcm_backend_cuda = MESH_TABLE(FC_BACKEND_CUDA);
static const fcb_backend fcm_backend_host = MESH_TABLE(FC_BACKEND_HOST);

static bool is_mesh(const fc_ctx *ctx) {
    return ctx && (ctx->be == &fcm_backend_cuda || ctx->be == &fcm_backend_host);
}

fc_status fcm_open(fc_ctx *ctx, const fc_ctx_options *opts) {
    int n = opts->shards;
    bool cuda = opts->backend != FC_BACKEND_HOST;
    int ndev = 0;
    if (cuda) fcr_device_count(&ndev);
    if (cuda && ndev == 0) {
        if (opts->backend == FC_BACKEND_CUDA || n == FC_SHARDS_ALL)
            return fcg_error(ctx, FC_ERR_BACKEND, "sharded context: no CUDA device");
        cuda = false; /* AUTO: simulated shards on the host */
    }
    if (n == FC_SHARDS_ALL) n = ndev;
    if (n < 2 || n > FCM_MAX)
        return fcg_error(ctx, FC_ERR_INVALID, "sharded context: %d shards (2 to %d; "
                         "FC_SHARDS_ALL found %d devices)", n, FCM_MAX, ndev);
    mesh *m = fcg_calloc(ctx, sizeof *m);
    if (!m) return fcg_error(ctx, FC_ERR_NOMEM, "out of memory");
    m->n = n;
    m->force_split = -1;
    fc_ctx_options co = *opts;
    co.shards = 0;
    co.devices = NULL;
    co.backend = cuda ? FC_BACKEND_CUDA : FC_BACKEND_HOST;
    fc_status st = FC_OK;
    for (int r = 0; r < n && st == FC_OK; r++) {
        co.device = cuda ? (opts->devices ? opts->devices[r] : r) : 0;
        if (cuda && (co.device < 0 || co.device >= ndev)) {
            st = fcg_error(ctx, FC_ERR_INVALID, "sharded context: shard %d's device %d does not "
                           "exist (%d devices)", r, co.device, ndev);
            break;
        }
        if ((st = fc_ctx_create(&m->child[r], &co)) != FC_OK)
            fcg_error(ctx, st, "sharded context: shard %d (device %d) could not be made", r,
                      co.device);
    }
    const char *env = getenv("FUSEC_SHARD_COMM");
    if (st == FC_OK && cuda) {
        if (env && strcmp(env, "host") == 0)
            snprintf(m->comm_why, sizeof m->comm_why, "FUSEC_SHARD_COMM=host");
        else
            m->nccl = fcn_comm_create(m->child, n, m->comm_why, sizeof m->comm_why);
    } else if (st == FC_OK) {
        snprintf(m->comm_why, sizeof m->comm_why, "host backend");
    }
    if (st != FC_OK) {
        for (int r = 0; r < n; r++) fc_ctx_destroy(m->child[r]);
        fcg_free(ctx, m, sizeof *m);
        return st;
    }
    m->stats.nccl = m->nccl != NULL;
    if (fcp_log_enabled("shard"))
        fprintf(stderr, "fusec shard: %d shards on %s; collectives %s%s%s\n", n,
                cuda ? "CUDA" : "the host backend", m->nccl ? "on NCCL" : "through host memory",
                m->nccl ? "" : ": ", m->nccl ? "" : m->comm_why);
    ctx->be = cuda ? &fcm_backend_cuda : &fcm_backend_host;
    ctx->be_state = m;
    ctx->device = fc_ctx_device(m->child[0]);
    return FC_OK;
}

/* ---- the public calls ------------------------------------------------------------------------- */

int fcm_shards(const fc_ctx *ctx) { return is_mesh(ctx) ? mesh_of(ctx)->n : 1; }

void fcm_test_force_split(fc_ctx *ctx, int axis) {
    if (is_mesh(ctx)) mesh_of(ctx)->force_split = axis < 0 ? -1 : axis;
}

fc_ctx *fcm_shard_ctx(const fc_ctx *ctx, int i) {
    if (!is_mesh(ctx) || i < 0 || i >= mesh_of(ctx)->n) return NULL;
    return mesh_of(ctx)->child[i];
}

/* Evaluates a and makes sure it holds a laid-out value (host data gets the default layout). */
static fc_status laid_out(fc_array *a, const char *what) {
    fc_ctx *ctx = a->ctx;
    if (!is_mesh(ctx))
        return fcg_error(ctx, FC_ERR_CONTEXT, "%s: the array's context is not sharded", what);
    if (a->status != FC_OK) return fcg_error(ctx, a->status, "%s", a->errmsg);
    if (mesh_of(ctx)->dead) return dead_error(ctx);
    fc_status st = fc_eval(ctx, &a, 1);
    if (st != FC_OK || a->dev) return st;
    lower lw;
    if ((st = lower_open(&lw, ctx)) != FC_OK) return st;
    fc_array *p[FCM_MAX];
    mesh_value *v = NULL;
    int l = default_layout(a, lw.m);
    if ((st = host_parts(&lw, a, l, p)) == FC_OK && (st = value_from_parts(&lw, p, l, &v)) == FC_OK)
        value_attach(a, v);
    lower_close(&lw);
    return st;
}

/* FC_REPLICATED is -1, so negative axes do not count from the end here: only 0 .. ndim-1. */
static bool axis_ok(int ndim, int axis) {
    return axis == FC_REPLICATED || (axis >= 0 && axis < ndim);
}

/* A new DATA array of ctx with a's dtype and shape holding value v. */
static fc_array *data_with(fc_ctx *ctx, fc_dtype t, int ndim, const int64_t *shape, mesh_value *v) {
    fc_array *out = fcg_node(ctx, FCG_OP_DATA, t, t, false, ndim, shape, 0, NULL, NULL);
    if (!out) {
        value_free(ctx, v);
        return fcg_ret(ctx, NULL);
    }
    value_attach(out, v);
    return fcg_ret(ctx, out);
}

fc_array *fcm_reshard(fc_array *a, int axis) {
    fc_ctx *ctx = a->ctx;
    fc_status st = laid_out(a, "reshard");
    if (st != FC_OK) return fcg_poison_ctx(ctx, st);
    int to = axis;
    if (!axis_ok(a->ndim, axis))
        return fcg_poison(ctx, FC_ERR_AXIS, "reshard: axis %d is neither FC_REPLICATED nor an axis "
                          "of %d dimensions (0 to %d)", axis, a->ndim, a->ndim - 1);
    mesh_value *v = value_of(a);
    if (v->axis == to) {
        fcg_retain(a);
        return fcg_ret(ctx, a);
    }
    lower lw;
    if ((st = lower_open(&lw, ctx)) != FC_OK) return fcg_poison_ctx(ctx, st);
    fc_array *p[FCM_MAX];
    mesh_value *nv = NULL;
    if ((st = convert(&lw, v->part, v->axis, to, a, p)) == FC_OK)
        st = value_from_parts(&lw, p, to, &nv);
    lower_close(&lw);
    if (st != FC_OK) return fcg_poison_ctx(ctx, st);
    return data_with(ctx, (fc_dtype)a->dtype, a->ndim, a->shape, nv);
}

fc_status fcm_sharding(fc_array *a, int *axis) {
    fc_status st = laid_out(a, "sharding");
    if (st == FC_OK) *axis = value_of(a)->axis;
    return st;
}

fc_array *fcm_from_shards(fc_ctx *ctx, fc_array *const *parts, int axis) {
    mesh *m = mesh_of(ctx);
    if (m->dead) return fcg_poison_ctx(ctx, dead_error(ctx));
    const fc_array *p0 = parts[0];
    for (int r = 0; r < m->n; r++) {
        const fc_array *p = parts[r];
        if (!p) return fcg_poison(ctx, FC_ERR_NULL, "from_shards: part %d is NULL", r);
        if (p->ctx != m->child[r])
            return fcg_poison(ctx, FC_ERR_CONTEXT, "from_shards: part %d is not an array of "
                              "shard %d's context", r, r);
        if (p->status != FC_OK)
            return fcg_poison(ctx, p->status, "from_shards: part %d: %s", r, p->errmsg);
        if (p->dtype != p0->dtype || p->ndim != p0->ndim)
            return fcg_poison(ctx, p->dtype != p0->dtype ? FC_ERR_DTYPE : FC_ERR_SHAPE,
                              "from_shards: part %d is %s with %d dimensions, part 0 %s with %d",
                              r, fc_dtype_name((fc_dtype)p->dtype), p->ndim,
                              fc_dtype_name((fc_dtype)p0->dtype), p0->ndim);
    }
    int k = axis;
    if (!axis_ok(p0->ndim, axis))
        return fcg_poison(ctx, FC_ERR_AXIS, "from_shards: axis %d is neither FC_REPLICATED nor "
                          "an axis of %d dimensions (0 to %d)", axis, p0->ndim, p0->ndim - 1);
    int64_t shape[FC_MAX_DIMS];
    memcpy(shape, p0->shape, sizeof shape);
    if (k >= 0) {
        int64_t e = 0;
        for (int r = 0; r < m->n; r++) e += parts[r]->shape[k];
        shape[k] = e;
    }
    for (int r = 0; r < m->n; r++)
        for (int d = 0; d < p0->ndim; d++) {
            int64_t want = d == k ? part_len(shape[k], m->n, r) : shape[d];
            if (parts[r]->shape[d] != want) {
                char s1[200], s2[200];
                return fcg_poison(ctx, FC_ERR_SHAPE, "from_shards: part %d has shape %s; the "
                                  "layout wants %s along axis %d of %s", r,
                                  fcg_shape_str(s1, parts[r]->ndim, parts[r]->shape),
                                  d == k ? "its range" : "the same extent", d,
                                  fcg_shape_str(s2, p0->ndim, shape));
            }
        }
    lower lw;
    fc_status st = lower_open(&lw, ctx);
    if (st != FC_OK) return fcg_poison_ctx(ctx, st);
    mesh_value *v = NULL;
    st = value_from_parts(&lw, parts, k, &v);
    lower_close(&lw);
    if (st != FC_OK) return fcg_poison_ctx(ctx, st);
    return data_with(ctx, (fc_dtype)p0->dtype, p0->ndim, shape, v);
}

/* The prologue of fcm_part and fcm_gather: a laid out, shard i in range; NULL to go on,
 * else the poison to return. A replicated value's answer is a copy of replica i (a write must
 * not make the replicas differ): *done. */
static fc_array *to_shard(fc_array *a, int i, const char *what, bool *done) {
    fc_ctx *ctx = a->ctx;
    *done = true;
    fc_status st = laid_out(a, what);
    if (st != FC_OK) return fcg_poison_ctx(ctx, st);
    mesh *m = mesh_of(ctx);
    if (i < 0 || i >= m->n)
        return fcg_poison(ctx, FC_ERR_INDEX, "%s: shard %d of %d", what, i, m->n);
    mesh_value *v = value_of(a);
    if (v->axis == LAY_REPL) return fc_copy_to(v->part[i], m->child[i]);
    *done = false;
    return NULL;
}

fc_array *fcm_part(fc_array *a, int i) {
    bool done;
    fc_array *r = to_shard(a, i, "shard_part", &done);
    if (done) return r;
    mesh_value *v = value_of(a);
    fc_ctx *c = mesh_of(a->ctx)->child[i];
    fcg_retain(v->part[i]);
    return fcg_ret(c, v->part[i]);
}

fc_array *fcm_gather(fc_array *a, int i) {
    bool done;
    fc_array *r = to_shard(a, i, "gather", &done);
    if (done) return r;
    fc_ctx *ctx = a->ctx;
    mesh *m = mesh_of(ctx);
    mesh_value *v = value_of(a);
    fc_status st;
    lower lw;
    if ((st = lower_open(&lw, ctx)) != FC_OK) return fcg_poison_ctx(ctx, st);
    fc_array *whole[FCM_MAX], *out = NULL;
    if ((st = gather(&lw, v->part, v->axis, a->shape, a->ndim, whole)) == FC_OK &&
        (st = fc_eval(m->child[i], &whole[i], 1)) == FC_OK)
        out = fc_keep(whole[i]);
    else if (st == FC_OK)
        st = shard_error(ctx, i, st);
    lower_close(&lw);
    if (st != FC_OK) return fcg_poison_ctx(ctx, st);
    /* fc_keep gave an unowned reference: hand it to the caller's scope in shard i */
    return fcg_ret(m->child[i], out);
}

fc_status fcm_stats(fc_ctx *ctx, fc_shard_stats *out, bool reset) {
    memset(out, 0, sizeof *out);
    if (!is_mesh(ctx)) return FC_OK;
    mesh *m = mesh_of(ctx);
    fc_status st = FC_OK;
    for (size_t i = 0; i < m->npending; i++) {
        float ms = 0;
        if (st == FC_OK && (st = fc_event_synchronize(m->pending[i].end)) == FC_OK &&
            fc_event_elapsed_ms(m->pending[i].start, m->pending[i].end, &ms) == FC_OK)
            m->stats.ms += ms;
        fc_event_destroy(m->pending[i].start);
        fc_event_destroy(m->pending[i].end);
    }
    m->npending = 0;
    if (st != FC_OK) return shard_error(ctx, 0, st);
    *out = m->stats;
    out->nccl = m->nccl != NULL;
    if (reset) memset(&m->stats, 0, sizeof m->stats);
    return FC_OK;
}
