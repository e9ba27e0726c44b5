/*
 * graph/ctx.c - the context's core (allocation through its allocator, the cons table, freeing
 * every array), error messages, scopes and array queries. Creating a context with a backend
 * is the API layer's (api/context.c).
 */
#include "graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double fcg_now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Every block the context holds is counted, so fc_memory_stats can show host memory on every
 * backend (and a loop that leaks nodes or values shows it). Atomic: `fusec warm -j N` compiles
 * on several threads through one context's allocator. */
static void host_count(fc_ctx *ctx, size_t add, size_t sub) {
    size_t now = add >= sub ? __atomic_add_fetch(&ctx->host_in_use, add - sub, __ATOMIC_RELAXED)
                            : __atomic_sub_fetch(&ctx->host_in_use, sub - add, __ATOMIC_RELAXED);
    size_t peak = __atomic_load_n(&ctx->host_peak, __ATOMIC_RELAXED);
    while (now > peak && !__atomic_compare_exchange_n(&ctx->host_peak, &peak, now, true,
                                                      __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
}

void *fcg_malloc(fc_ctx *ctx, size_t size) {
    if (!size) size = 1;
    void *p = ctx->alloc.malloc_fn(ctx->alloc.user, size);
    if (p) host_count(ctx, size, 0);
    return p;
}

void *fcg_calloc(fc_ctx *ctx, size_t size) {
    void *p = fcg_malloc(ctx, size);
    if (p) memset(p, 0, size ? size : 1);
    return p;
}

void *fcg_realloc(fc_ctx *ctx, void *ptr, size_t old_size, size_t new_size) {
    if (!ptr) return fcg_malloc(ctx, new_size);
    if (ctx->alloc.realloc_fn) {
        if (!old_size) old_size = 1;
        if (!new_size) new_size = 1;
        void *p = ctx->alloc.realloc_fn(ctx->alloc.user, ptr, old_size, new_size);
        if (p) host_count(ctx, new_size, old_size);
        return p;
    }
    void *p = fcg_malloc(ctx, new_size);
    if (!p) return NULL;
    memcpy(p, ptr, old_size < new_size ? old_size : new_size);
    fcg_free(ctx, ptr, old_size);
    return p;
}

void fcg_free(fc_ctx *ctx, void *ptr, size_t size) {
    if (!ptr) return;
    if (!size) size = 1;
    host_count(ctx, 0, size);
    ctx->alloc.free_fn(ctx->alloc.user, ptr, size);
}

char *fcg_strdup(fc_ctx *ctx, const char *s) {
    size_t n = strlen(s) + 1;
    char *d = fcg_malloc(ctx, n);
    if (d) memcpy(d, s, n);
    return d;
}

void fcg_strfree(fc_ctx *ctx, char *s) {
    if (s) fcg_free(ctx, s, strlen(s) + 1);
}

void fc_free(fc_ctx *ctx, void *ptr) {
    if (ctx && ptr) fcg_strfree(ctx, ptr);
}

/* ---- errors ----------------------------------------------------------------------------- */

const char *fc_strerror(fc_status status) {
    switch (status) {
    case FC_OK: return "ok";
    case FC_ERR_NULL: return "NULL handle or pointer";
    case FC_ERR_INVALID: return "invalid argument";
    case FC_ERR_SHAPE: return "shape mismatch";
    case FC_ERR_AXIS: return "bad axis";
    case FC_ERR_DTYPE: return "unsupported dtype";
    case FC_ERR_INDEX: return "bad index or slice";
    case FC_ERR_NOMEM: return "out of memory";
    case FC_ERR_PARSE: return "malformed .fc program";
    case FC_ERR_BACKEND: return "backend not available";
    case FC_ERR_IO: return "I/O error";
    case FC_ERR_VALUE: return "value error during evaluation";
    case FC_ERR_UNSUPPORTED: return "not supported";
    case FC_ERR_CONTEXT: return "context or scope misuse";
    case FC_ERR_UNBOUND: return "unbound program input or symbol";
    case FC_ERR_COMPILE: return "kernel compilation failed";
    case FC_ERR_NOT_CACHED: return "kernel not in the cache (FUSEC_REQUIRE_CACHED)";
    case FC_ERR_LINALG: return "linear algebra error (singular or not positive definite "
                               "matrix, not a square stack)";
    }
    return "unknown status";
}

fc_status fcg_verror(fc_ctx *ctx, fc_status status, const char *fmt, va_list ap) {
    if (ctx) vsnprintf(ctx->errmsg, sizeof ctx->errmsg, fmt, ap);
    return status;
}

fc_status fcg_error(fc_ctx *ctx, fc_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fcg_verror(ctx, status, fmt, ap);
    va_end(ap);
    return status;
}

const char *fc_errmsg(const fc_ctx *ctx) { return ctx ? ctx->errmsg : "no context"; }

void fc_clear_error(fc_ctx *ctx) {
    if (ctx) ctx->errmsg[0] = '\0';
}

char *fcg_shape_str(char *buf, int ndim, const int64_t *shape) {
    size_t len = 0, cap = 200;
    len += (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < ndim && i < FC_MAX_DIMS && len < cap; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (len < cap) snprintf(buf + len, cap - len, "]");
    return buf;
}

/* ---- contexts --------------------------------------------------------------------------- */

fc_status fcg_ctx_new(const fc_allocator *alloc, fc_ctx **out) {
    *out = NULL;
    fc_ctx *ctx = alloc->malloc_fn(alloc->user, sizeof *ctx);
    if (!ctx) return FC_ERR_NOMEM;
    memset(ctx, 0, sizeof *ctx);
    ctx->alloc = *alloc;
    ctx->cons_cap = 256;
    ctx->cons = fcg_calloc(ctx, ctx->cons_cap * sizeof *ctx->cons);
    if (!ctx->cons) {
        alloc->free_fn(alloc->user, ctx, sizeof *ctx);
        return FC_ERR_NOMEM;
    }
    ctx->oom.ctx = ctx;
    ctx->oom.refs = UINT32_MAX;
    ctx->oom.op = FCG_OP_POISON;
    ctx->oom.status = FC_ERR_NOMEM;
    ctx->oom.errmsg = (char *)"out of memory";
    *out = ctx;
    return FC_OK;
}

static void free_node_storage(fc_ctx *ctx, fc_array *a) {
    if (a->share) ctx->unshare(ctx, a); /* takes the shared value out of a */
    fcg_free(ctx, a->host, a->host_bytes);
    if (a->dev) ctx->free_value(ctx, a);
    fcg_strfree(ctx, a->errmsg);
    if (a->in != a->in_inline) fcg_free(ctx, a->in, (size_t)a->nin * sizeof *a->in);
    fcg_free(ctx, a, sizeof *a);
}

void fcg_ctx_drop_arrays(fc_ctx *ctx) {
    while (ctx->scope) {
        fc_scope *s = ctx->scope;
        ctx->scope = s->parent;
        fcg_free(ctx, s->owned, s->cap * sizeof *s->owned);
        fcg_free(ctx, s, sizeof *s);
    }
    /* Every node dies with the context, whatever its count: no references may outlive it. */
    for (fc_array *a = ctx->all, *next; a; a = next) {
        next = a->all_next;
        free_node_storage(ctx, a);
    }
    ctx->all = NULL;
    ctx->live_nodes = 0;
}

void fcg_ctx_free(fc_ctx *ctx) {
    fcg_free(ctx, ctx->cons, ctx->cons_cap * sizeof *ctx->cons);
    fcg_free(ctx, ctx->key_order, ctx->key_order_cap * sizeof *ctx->key_order);
    fcg_free(ctx, ctx->key_stack, ctx->key_stack_cap * sizeof *ctx->key_stack);
    fcg_free(ctx, ctx->key_words, ctx->key_words_cap * sizeof *ctx->key_words);
    fcg_strfree(ctx, ctx->trace_path);
    fcg_strfree(ctx, ctx->cache_dir);
    fcg_user_free_all(ctx);
    fc_allocator alloc = ctx->alloc;
    alloc.free_fn(alloc.user, ctx, sizeof *ctx);
}

/* Called by node.c when a node's count reaches zero. */
void fcg_free_node(fc_ctx *ctx, fc_array *a);
void fcg_free_node(fc_ctx *ctx, fc_array *a) {
    if (a->all_prev) a->all_prev->all_next = a->all_next;
    else ctx->all = a->all_next;
    if (a->all_next) a->all_next->all_prev = a->all_prev;
    ctx->live_nodes--;
    free_node_storage(ctx, a);
}

/* ---- scopes ----------------------------------------------------------------------------- */

fc_scope *fc_scope_open(fc_ctx *ctx) {
    if (!ctx) return NULL;
    fc_scope *s = fcg_calloc(ctx, sizeof *s);
    if (!s) {
        fcg_error(ctx, FC_ERR_NOMEM, "fc_scope_open: out of memory");
        return NULL;
    }
    s->ctx = ctx;
    s->parent = ctx->scope;
    ctx->scope = s;
    return s;
}

void fc_scope_close(fc_scope *scope) {
    if (!scope) return;
    fc_ctx *ctx = scope->ctx;
    bool open = false;
    for (fc_scope *s = ctx->scope; s; s = s->parent) open |= s == scope;
    if (!open) return; /* closed already (as the inner scope of one closed before) */
    fc_scope *s;
    do {
        s = ctx->scope;
        ctx->scope = s->parent;
        for (size_t i = s->n; i-- > 0;) fcg_release(s->owned[i]);
        fcg_free(ctx, s->owned, s->cap * sizeof *s->owned);
        fcg_free(ctx, s, sizeof *s);
    } while (s != scope);
}

fc_array *fc_keep(fc_array *a) {
    if (a) fcg_retain(a);
    return a;
}

void fc_release(fc_array *a) {
    if (a) fcg_release(a);
}

/* ---- queries ---------------------------------------------------------------------------- */

fc_status fc_array_status(const fc_array *a) { return a ? a->status : FC_ERR_NULL; }
const char *fc_array_errmsg(const fc_array *a) {
    if (!a) return "NULL array";
    return a->errmsg && a->status != FC_OK ? a->errmsg : "";
}
fc_ctx *fc_array_ctx(const fc_array *a) { return a ? a->ctx : NULL; }
fc_dtype fc_array_dtype(const fc_array *a) { return a ? (fc_dtype)a->dtype : FC_BOOL; }
int fc_array_ndim(const fc_array *a) { return a ? a->ndim : 0; }
fc_shape fc_array_shape(const fc_array *a) {
    fc_shape s;
    memset(&s, 0, sizeof s);
    if (a) {
        s.ndim = a->ndim;
        memcpy(s.dim, a->shape, sizeof s.dim);
    }
    return s;
}
int64_t fc_array_size(const fc_array *a) { return a ? (int64_t)fcg_node_numel(a) : 0; }
bool fc_array_is_weak(const fc_array *a) { return a && a->weak; }
