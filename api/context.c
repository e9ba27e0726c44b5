/*
 * api/context.c - creating and destroying contexts: the default allocator, the environment
 * (FUSEC_BACKEND, FUSEC_FAST_MATH, FUSEC_LOG, FUSEC_TRACE) and the choice of backend. The graph
 * layer owns the context's core (graph/ctx.c); this layer attaches a backend to it and takes it
 * down again.
 */
#include "api.h"
#include "passes.h" /* fcp_log_check_env: FUSEC_LOG is checked where contexts start */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the default allocator -------------------------------------------------------------- */

static void *libc_malloc(void *user, size_t size) {
    (void)user;
    return malloc(size);
}
static void *libc_realloc(void *user, void *ptr, size_t old_size, size_t new_size) {
    (void)user;
    (void)old_size;
    return realloc(ptr, new_size);
}
static void libc_free(void *user, void *ptr, size_t size) {
    (void)user;
    (void)size;
    free(ptr);
}

/* ---- contexts --------------------------------------------------------------------------- */

/* FUSEC_BACKEND overrides AUTO only (a program that names its backend gets it). Unset or ""
 * is no override. Any value but host, cuda and auto is an error, said on stderr since no
 * context survives to carry it: a typo must not quietly run on another backend than meant. */
static fc_status backend_from_env(fc_backend asked, fc_backend *out) {
    *out = asked;
    const char *env = getenv("FUSEC_BACKEND");
    if (asked != FC_BACKEND_AUTO || !env || !*env || strcmp(env, "auto") == 0) return FC_OK;
    if (strcmp(env, "cuda") == 0) *out = FC_BACKEND_CUDA;
    else if (strcmp(env, "host") == 0) *out = FC_BACKEND_HOST;
    else {
        fprintf(stderr, "fusec: FUSEC_BACKEND: unknown value \"%.64s\" (expected host, cuda or "
                        "auto)\n", env);
        return FC_ERR_INVALID;
    }
    return FC_OK;
}

/* The fast-math tier: the option when it says on (1) or off (-1), else FUSEC_FAST_MATH
 * (1 on; 0, unset or "" off). Any other value is an error said on stderr, as FUSEC_BACKEND's:
 * a typo must not quietly run another tier than meant. */
static fc_status fast_math_from_env(int asked, bool *out) {
    *out = asked > 0;
    if (asked < -1 || asked > 1) {
        fprintf(stderr, "fusec: fc_ctx_options.fast_math is %d (expected -1, 0 or 1)\n", asked);
        return FC_ERR_INVALID;
    }
    const char *env = getenv("FUSEC_FAST_MATH");
    if (asked != 0 || !env || !*env || strcmp(env, "0") == 0) return FC_OK;
    if (strcmp(env, "1") != 0) {
        fprintf(stderr, "fusec: FUSEC_FAST_MATH: unknown value \"%.64s\" (expected 0 or 1)\n",
                env);
        return FC_ERR_INVALID;
    }
    *out = true;
    return FC_OK;
}

/* The graph frees a dying array's backend value through this hook (it cannot see the table). */
static void free_backend_value(fc_ctx *ctx, fc_array *a) { ctx->be->free_value(ctx, a); }

fc_status fc_ctx_create(fc_ctx **out, const fc_ctx_options *opts) {
    if (!out) return FC_ERR_NULL;
    *out = NULL;
    fc_allocator alloc = {libc_malloc, libc_realloc, libc_free, NULL};
    if (opts && opts->allocator) {
        alloc = *opts->allocator;
        if (!alloc.malloc_fn || !alloc.free_fn) return FC_ERR_INVALID;
    }
    fc_backend b;
    fc_status env_st = backend_from_env(opts ? opts->backend : FC_BACKEND_AUTO, &b);
    if (env_st != FC_OK) return env_st;
    bool fast_math;
    if ((env_st = fast_math_from_env(opts ? opts->fast_math : 0, &fast_math)) != FC_OK)
        return env_st;
    fcp_log_check_env();
    fc_ctx *ctx;
    fc_status st = fcg_ctx_new(&alloc, &ctx);
    if (st != FC_OK) return st;
    ctx->be = &fch_backend;
    ctx->free_value = free_backend_value;
    ctx->device = opts ? opts->device : 0;
    ctx->memory_limit = opts ? opts->memory_limit : 0;
    ctx->preallocate = opts ? opts->preallocate : 0;
    ctx->cuda_graphs = opts ? opts->cuda_graphs : 0;
    ctx->fast_math = fast_math;
    if (opts && opts->cache_dir && !(ctx->cache_dir = fcg_strdup(ctx, opts->cache_dir))) {
        fc_ctx_destroy(ctx);
        return FC_ERR_NOMEM;
    }
    if (opts && (opts->shards > 1 || opts->shards == FC_SHARDS_ALL)) {
        fc_ctx_options mo = *opts;
        mo.backend = b;
        mo.fast_math = fast_math ? 1 : -1; /* the shards run the tier resolved here */
        if ((st = fcm_open(ctx, &mo)) != FC_OK) { /* sets ctx->be on success */
            if (ctx->errmsg[0]) fprintf(stderr, "fusec: %s\n", ctx->errmsg);
            fc_ctx_destroy(ctx);
            return st;
        }
    } else if (opts && opts->shards < 0) {
        fprintf(stderr, "fusec: fc_ctx_options.shards is %d (0 or 1: one device; N > 1; "
                "FC_SHARDS_ALL)\n", opts->shards);
        fc_ctx_destroy(ctx);
        return FC_ERR_INVALID;
    } else if (b != FC_BACKEND_HOST) {
        st = fcr_open(ctx, ctx->device); /* sets ctx->be on success */
        if (st != FC_OK && (b == FC_BACKEND_CUDA || st == FC_ERR_NOMEM)) {
            /* Asked for the GPU and cannot have it: say why on stderr, since no context
             * survives to carry the message. */
            if (st != FC_ERR_NOMEM) fprintf(stderr, "fusec: %s\n", ctx->errmsg);
            fc_ctx_destroy(ctx);
            return st;
        }
        ctx->errmsg[0] = '\0'; /* AUTO: the host backend it is */
    }
    const char *trace = getenv("FUSEC_TRACE");
    if (trace && *trace && fc_set_trace(ctx, trace) != FC_OK) {
        fc_ctx_destroy(ctx);
        return FC_ERR_NOMEM;
    }
    *out = ctx;
    return FC_OK;
}

void fc_ctx_destroy(fc_ctx *ctx) {
    if (!ctx) return;
    fcg_ctx_drop_arrays(ctx); /* values first: the backend frees them while it still exists */
    fca_modules_destroy(ctx);
    while (ctx->events) fc_event_destroy(ctx->events);
    while (ctx->streams) fc_stream_destroy(ctx->streams);
    /* Memory exported and not yet given back keeps the backend (its device memory, the CUDA
     * context) until the last release, which finishes this. */
    if (fca_interop_close(ctx)) fca_ctx_finish(ctx);
}

fc_backend fc_ctx_backend(const fc_ctx *ctx) { return ctx ? ctx->be->kind : FC_BACKEND_HOST; }

int fc_ctx_fast_math(const fc_ctx *ctx) { return ctx && ctx->fast_math; }
