/*
 * passes/log.c - FUSEC_LOG: which diagnostics are on, and a readable dump of the graph that a
 * pass hands on.
 *
 * The dump is one node a line, inputs before their users, each named by its position:
 *     %3 = add f32 [4096] (%1, %2)
 *     %1 = const f64 [] 0.10000000000000001 weak
 * with the loop dtype where it differs from the result's, the op's parameters, "weak" for weak
 * scalars and "value" for nodes whose value is known (their inputs are not listed: the pass
 * pipeline treats them as leaves). It shows what the .fc text hides (loop dtypes, weak flags,
 * raw parameters), which is what a pass is debugged by.
 */
#include "passes.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool fcp_log_enabled(const char *what) {
    const char *env = getenv("FUSEC_LOG");
    if (!env || !what || !*what) return false;
    size_t want = strlen(what);
    for (const char *p = env; *p;) {
        while (*p == ' ' || *p == ',') p++;
        const char *end = p;
        while (*end && *end != ',' && *end != ' ') end++;
        size_t len = (size_t)(end - p);
        if ((len == want && strncmp(p, what, len) == 0) || (len == 3 && strncmp(p, "all", 3) == 0))
            return true;
        p = end;
    }
    return false;
}

/* A bounded appender: text past the end of the line buffer is dropped, never overrun. */
typedef struct line {
    char buf[1024];
    size_t len;
} line;

FCG_PRINTF(2, 3) static void put(line *l, const char *fmt, ...) {
    if (l->len >= sizeof l->buf - 1) return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(l->buf + l->len, sizeof l->buf - l->len, fmt, ap);
    va_end(ap);
    if (k > 0) l->len += (size_t)k;
    if (l->len > sizeof l->buf - 1) l->len = sizeof l->buf - 1;
}

static void put_list(line *l, const char *name, int n, const int64_t *v) {
    put(l, " %s=[", name);
    for (int i = 0; i < n; i++) put(l, "%s%" PRId64, i ? ", " : "", v[i]);
    put(l, "]");
}

static void put_const(line *l, const fc_array *a) {
    fc_dtype t = (fc_dtype)a->dtype;
    if (t == FC_BOOL) put(l, " %s", a->p.ival ? "true" : "false");
    else if (t == FC_U64) put(l, " %" PRIu64, (uint64_t)a->p.ival);
    else if (fcg_is_int(t)) put(l, " %" PRId64, a->p.ival);
    else if (fcg_is_complex(t)) put(l, " (%.17g%+.17gj)", a->p.re, a->p.im);
    else put(l, " %.17g", a->p.re);
}

static void put_axes(line *l, uint32_t mask) {
    put(l, " axes=[");
    bool first = true;
    for (int d = 0; d < 32; d++)
        if (mask & (1u << d)) {
            put(l, "%s%d", first ? "" : ", ", d);
            first = false;
        }
    put(l, "]");
}

static void put_params(line *l, const fc_array *a) {
    const fcg_params *p = &a->p;
    const fcg_op op = (fcg_op)a->op;
    switch (fcg_ops[op].kind) {
    case FCG_KIND_REDUCE:
        if ((op == FCG_OP_ARGMAX || op == FCG_OP_ARGMIN) && p->flag) put(l, " axes=flat");
        else put_axes(l, p->axes);
        if (p->keepdims) put(l, " keepdims");
        if (op == FCG_OP_VAR || op == FCG_OP_STD) put(l, " ddof=%d", (int)p->ddof);
        if (op == FCG_OP_NORM)
            put(l, " ord=%s", p->ord == FC_NORM_L1 ? "l1" : p->ord == FC_NORM_INF ? "inf" : "l2");
        return;
    default: break;
    }
    const fc_array *x = a->nin ? a->in[0] : NULL;
    switch (op) {
    case FCG_OP_CONST: put_const(l, a); break;
    case FCG_OP_DATA: put(l, " data"); break;
    case FCG_OP_INPUT: put(l, " #%" PRId64, p->ival); break;
    case FCG_OP_POISON:
        put(l, " %s: %s", fc_strerror(a->status), a->errmsg ? a->errmsg : "");
        break;
    case FCG_OP_ARANGE: put(l, " start=%.17g step=%.17g", p->re, p->im); break;
    case FCG_OP_LINSPACE:
        put(l, " start=%.17g stop=%.17g num=%" PRId64 "%s", p->re, p->im, p->count,
            p->flag ? " endpoint" : "");
        break;
    case FCG_OP_EYE: put(l, " k=%" PRId64, p->ival); break;
    case FCG_OP_RANDOM: put(l, " seed=%" PRIu64, (uint64_t)p->ival); break;
    case FCG_OP_PERMUTE: put_list(l, "perm", a->ndim, p->a); break;
    case FCG_OP_SLICE:
        put_list(l, "start", x ? x->ndim : 0, p->a);
        put_list(l, "step", x ? x->ndim : 0, p->b);
        break;
    case FCG_OP_PAD: {
        static const char *const modes[] = {"constant", "edge", "reflect", "symmetric"};
        put_list(l, "before", a->ndim, p->a);
        put_list(l, "after", a->ndim, p->b);
        put(l, " mode=%s", p->mode < 4 ? modes[p->mode] : "?");
        if (p->mode == FC_PAD_CONSTANT) put(l, " value=%.17g", p->re);
        break;
    }
    case FCG_OP_CONCAT:
    case FCG_OP_FFT:
    case FCG_OP_IFFT: put(l, " axis=%d", (int)p->axis); break;
    default: break;
    }
}

static void put_node(line *l, const fc_array *a) {
    char sh[200];
    put(l, "  %%%" PRId64 " = %s %s %s", a->order, fcg_ops[a->op].pyname,
        fc_dtype_name((fc_dtype)a->dtype), fcg_shape_str(sh, a->ndim, a->shape));
    if (fcg_ops[a->op].kind == FCG_KIND_EW || fcg_ops[a->op].kind == FCG_KIND_REDUCE)
        if (a->loop_dtype != a->dtype) put(l, " loop=%s", fc_dtype_name((fc_dtype)a->loop_dtype));
    put_params(l, a);
    if (a->weak) put(l, " weak");
    if (a->host) {
        put(l, " value");
    } else if (a->nin) {
        put(l, " (");
        for (int j = 0; j < a->nin; j++) put(l, "%s%%%" PRId64, j ? ", " : "", a->in[j]->order);
        put(l, ")");
    }
}

void fcp_log_graph(fc_ctx *ctx, const char *heading, fc_array *const *arrays, int n) {
    if (!ctx || !fcp_log_enabled("passes")) return;
    if (!heading) heading = "graph";
    for (int i = 0; i < n; i++)
        if (!arrays || !arrays[i]) {
            fprintf(stderr, "fusec: %s: (no graph: a NULL array)\n", heading);
            return;
        }
    fc_array **order = NULL;
    size_t count = 0;
    if (n > 0) {
        char saved[FCG_ERRMSG_MAX]; /* logging must not change what fc_errmsg says */
        memcpy(saved, ctx->errmsg, sizeof saved);
        fc_status st = fcg_topo_order(ctx, arrays, n, true, &order, &count);
        memcpy(ctx->errmsg, saved, sizeof saved);
        if (st != FC_OK) {
            fprintf(stderr, "fusec: %s: (graph not shown: %s)\n", heading, fc_strerror(st));
            return;
        }
    }
    fprintf(stderr, "fusec: %s: %zu node%s\n", heading, count, count == 1 ? "" : "s");
    line l;
    for (size_t i = 0; i < count; i++) {
        l.len = 0;
        l.buf[0] = '\0';
        put_node(&l, order[i]);
        fprintf(stderr, "%s\n", l.buf);
    }
    for (int i = 0; i < n; i++) fprintf(stderr, "  out %d = %%%" PRId64 "\n", i, arrays[i]->order);
    if (order) fcg_free(ctx, order, count * sizeof *order);
}
