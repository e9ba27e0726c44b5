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
#include "nodemap.h"
#include "passes.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The words FUSEC_LOG knows: every fcp_log_enabled caller asks for one of these. */
static const char *const log_words[] = {"passes", "fusion", "shard", "timing", "all"};

/* The next word of a FUSEC_LOG list (words separated by commas and / or spaces) at or after
 * *p: its start, with its length in *len; NULL at the end. */
static const char *next_word(const char **p, size_t *len) {
    const char *s = *p;
    while (*s == ' ' || *s == ',') s++;
    if (!*s) return NULL;
    const char *end = s;
    while (*end && *end != ',' && *end != ' ') end++;
    *len = (size_t)(end - s);
    *p = end;
    return s;
}

bool fcp_log_enabled(const char *what) {
    const char *env = getenv("FUSEC_LOG");
    if (!env || !what || !*what) return false;
    size_t want = strlen(what), len;
    for (const char *w; (w = next_word(&env, &len));)
        if ((len == want && strncmp(w, what, len) == 0) || (len == 3 && strncmp(w, "all", 3) == 0))
            return true;
    return false;
}

void fcp_log_check_env(void) {
    /* Once per process: the environment is the user's, and one note about it is enough. */
    static atomic_flag warned = ATOMIC_FLAG_INIT;
    const char *env = getenv("FUSEC_LOG");
    if (!env || !*env) return;
    char bad[256] = "";
    size_t used = 0, len;
    int nbad = 0;
    for (const char *w; (w = next_word(&env, &len));) {
        bool known = false;
        for (size_t i = 0; i < sizeof log_words / sizeof log_words[0]; i++)
            known |= strlen(log_words[i]) == len && strncmp(w, log_words[i], len) == 0;
        if (known) continue;
        int k = snprintf(bad + used, sizeof bad - used, "%s\"%.*s\"", nbad ? ", " : "",
                         (int)(len < 64 ? len : 64), w);
        if (k > 0 && (size_t)k < sizeof bad - used) used += (size_t)k;
        nbad++;
    }
    if (!nbad || atomic_flag_test_and_set(&warned)) return;
    fprintf(stderr, "fusec: warning: FUSEC_LOG: unknown value%s %s (expected passes, fusion, "
                    "shard, timing or all, separated by commas); ignored\n",
            nbad == 1 ? "" : "s", bad);
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

/* The fields of fcg_params that `used` names (ops.def's params column), by field name. */
static void put_fields(line *l, const fc_array *a, uint32_t used) {
    const fcg_params *p = &a->p;
    int nd = a->nin ? a->in[0]->ndim : a->ndim;
    if (used & FCG_P_IVAL) put(l, " ival=%" PRId64, p->ival);
    if (used & FCG_P_RE) put(l, " re=%.17g", p->re);
    if (used & FCG_P_IM) put(l, " im=%.17g", p->im);
    if (used & FCG_P_COUNT) put(l, " count=%" PRId64, p->count);
    if (used & FCG_P_A) put_list(l, "a", nd, p->a);
    if (used & FCG_P_B) put_list(l, "b", nd, p->b);
    if (used & FCG_P_AXES) put_axes(l, p->axes);
    if (used & FCG_P_AXIS) put(l, " axis=%d", (int)p->axis);
    if (used & FCG_P_DDOF) put(l, " ddof=%d", (int)p->ddof);
    if (used & FCG_P_KEEPDIMS) put(l, " keepdims=%d", (int)p->keepdims);
    if (used & FCG_P_ORD) put(l, " ord=%d", (int)p->ord);
    if (used & FCG_P_MODE) put(l, " mode=%d", (int)p->mode);
    if (used & FCG_P_FLAG) put(l, " flag=%d", (int)p->flag);
}

static void put_params(line *l, const fc_array *a) {
    const fcg_params *p = &a->p;
    const fcg_op op = (fcg_op)a->op;
    const uint32_t used = fcg_ops[op].params;
    if (fcg_ops[op].kind == FCG_KIND_REDUCE) { /* the keywords its params column names */
        if ((used & FCG_P_FLAG) && p->flag) put(l, " axes=flat");
        else put_axes(l, p->axes);
        if (p->keepdims) put(l, " keepdims");
        if (used & FCG_P_DDOF) put(l, " ddof=%d", (int)p->ddof);
        if (used & FCG_P_ORD)
            put(l, " ord=%s", p->ord == FC_NORM_L1 ? "l1" : p->ord == FC_NORM_INF ? "inf" : "l2");
        return;
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
    case FCG_OP_RANDOM: /* a uniform draw of stream 0 prints as before draws had kinds */
        if (p->mode == FCG_RANDOM_NORMAL) put(l, " normal");
        if (p->mode == FCG_RANDOM_INTEGERS)
            put(l, " integers low=%" PRId64 " range=%" PRIu64, p->a[0], (uint64_t)p->b[0]);
        put(l, " seed=%" PRIu64, (uint64_t)p->ival);
        if (p->count) put(l, " stream=%" PRIu64, (uint64_t)p->count);
        break;
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
    case FCG_OP_FFTN: {
        static const char *const kinds[] = {"c2c", "c2c_inverse", "r2c", "c2r"};
        put(l, " %s", kinds[p->flag < 4 ? p->flag : 0]);
        put_axes(l, p->axes);
        break;
    }
    case FCG_OP_CONCAT:
    case FCG_OP_SORT:
    case FCG_OP_ARGSORT: put(l, " axis=%d", (int)p->axis); break;
    case FCG_OP_LINALG_SOLVE:
        if (p->flag) put(l, " inv");
        break;
    case FCG_OP_LINALG_QR: put(l, " mode=%s", fcg_qr_mode_names[p->flag < 3 ? p->flag : 0]); break;
    case FCG_OP_LINALG_EIGH:
    case FCG_OP_LINALG_EIGVALSH: put(l, " UPLO=%s", p->flag & 1 ? "U" : "L"); break;
    case FCG_OP_LINALG_SVD: put(l, " full_matrices=%s", p->flag & 1 ? "True" : "False"); break;
    default: put_fields(l, a, used); break; /* an op without a spelling of its own here */
    }
}

/* Nodes are named by their positions in the log's own walk (num). */
static void put_node(line *l, const fcg_nodemap *num, const fc_array *a) {
    char sh[200];
    put(l, "  %%%" PRId64 " = %s %s %s", fcg_nodemap_get(num, a), fcg_node_name(a),
        fc_dtype_name((fc_dtype)a->dtype), fcg_shape_str(sh, a->ndim, a->shape));
    if (fcg_ops[a->op].kind == FCG_KIND_EW || fcg_ops[a->op].kind == FCG_KIND_REDUCE)
        if (a->loop_dtype != a->dtype) put(l, " loop=%s", fc_dtype_name((fc_dtype)a->loop_dtype));
    put_params(l, a);
    if (a->weak) put(l, " weak");
    if (a->host) {
        put(l, " value");
    } else if (a->nin) {
        put(l, " (");
        for (int j = 0; j < a->nin; j++)
            put(l, "%s%%%" PRId64, j ? ", " : "", fcg_nodemap_get(num, a->in[j]));
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
    fcg_nodemap num = {0};
    if (n > 0) {
        char saved[FCG_ERRMSG_MAX]; /* logging must not change what fc_errmsg says */
        memcpy(saved, ctx->errmsg, sizeof saved);
        fc_status st = fcg_topo_order(ctx, arrays, n, true, &order, &count);
        if (st == FC_OK && (st = fcg_nodemap_positions(ctx, order, count, &num)) != FC_OK) {
            fcg_free(ctx, order, count * sizeof *order);
            order = NULL;
        }
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
        put_node(&l, &num, order[i]);
        fprintf(stderr, "%s\n", l.buf);
    }
    for (int i = 0; i < n; i++)
        fprintf(stderr, "  out %d = %%%" PRId64 "\n", i, fcg_nodemap_get(&num, arrays[i]));
    if (order) fcg_free(ctx, order, count * sizeof *order);
    fcg_nodemap_free(&num);
}
