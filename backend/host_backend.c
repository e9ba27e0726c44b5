/*
 * backend/host_backend.c - the host reference backend behind the backend interface.
 *
 * Work runs at once, on the calling thread (ref/host.c evaluates). Values live in a->host,
 * so transfers are copies; streams are orderless tokens and events read the wall clock (which
 * api/api.c stamps at every record), so a program that times itself runs unchanged here.
 * Its memory is host memory: in_use and peak are the context's own allocator figures.
 */
#include "backend.h"
#include "host.h"

#include <string.h>

static void host_destroy(fc_ctx *ctx) { (void)ctx; }

static int host_device(const fc_ctx *ctx) {
    (void)ctx;
    return -1;
}

static fc_status host_eval(fc_ctx *ctx, fc_array *const *arrays, int n, fc_stream *stream) {
    (void)stream; /* everything is done when this returns: every order holds */
    return fch_eval(ctx, arrays, n);
}

static fc_status host_download(fc_ctx *ctx, fc_array *a) {
    if (a->host) return FC_OK;
    return fcg_error(ctx, FC_ERR_BACKEND, "read: the array holds no value (fusec bug)");
}

static void host_free_value(fc_ctx *ctx, fc_array *a) {
    (void)ctx;
    (void)a; /* a->host is freed with the node; nothing else is held */
}

static fc_status host_write(fc_ctx *ctx, fc_array *a, const void *src, size_t offset,
                            size_t bytes, fc_stream *stream) {
    (void)ctx, (void)stream;
    memcpy((char *)a->host + offset, src, bytes);
    return FC_OK;
}

static fc_status host_read_async(fc_ctx *ctx, fc_array *a, void *dst, size_t offset,
                                 size_t bytes, fc_stream *stream) {
    (void)ctx, (void)stream;
    memcpy(dst, (const char *)a->host + offset, bytes);
    return FC_OK;
}

static fc_status host_copy_from(fc_ctx *ctx, fc_array *dst, fc_ctx *src_ctx,
                                const fc_array *src) {
    (void)ctx, (void)dst, (void)src_ctx, (void)src;
    return FC_ERR_UNSUPPORTED; /* the caller's path through the host is this backend's own */
}

static fc_status host_alloc_value(fc_ctx *ctx, fc_array *a) {
    size_t bytes = fcg_node_numel(a) * fc_dtype_size((fc_dtype)a->dtype);
    if (!(a->host = fcg_malloc(ctx, bytes ? bytes : 1)))
        return fcg_error(ctx, FC_ERR_NOMEM, "out of memory for a buffer of %zu bytes", bytes);
    a->host_bytes = bytes ? bytes : 1;
    return FC_OK;
}

static fc_status host_query(fc_ctx *ctx, bool *idle) {
    (void)ctx;
    *idle = true; /* work is done when its call returns */
    return FC_OK;
}

static fc_status host_stream_create(fc_ctx *ctx, fc_stream *s) {
    (void)ctx;
    s->cu = NULL;
    return FC_OK;
}

static void host_stream_destroy(fc_ctx *ctx, fc_stream *s) { (void)ctx, (void)s; }

static fc_status host_stream_sync(fc_ctx *ctx, fc_stream *s) {
    (void)ctx, (void)s;
    return FC_OK;
}

static fc_status host_sync(fc_ctx *ctx) {
    (void)ctx;
    return FC_OK;
}

static fc_status host_event_create(fc_ctx *ctx, fc_event *e) {
    (void)ctx;
    e->cu = NULL;
    return FC_OK;
}

static void host_event_destroy(fc_ctx *ctx, fc_event *e) { (void)ctx, (void)e; }

static fc_status host_event_record(fc_ctx *ctx, fc_event *e, fc_stream *s) {
    (void)ctx, (void)e, (void)s; /* api.c stamps e->host_ms */
    return FC_OK;
}

static fc_status host_stream_wait_event(fc_ctx *ctx, fc_stream *s, fc_event *e) {
    (void)ctx, (void)s, (void)e;
    return FC_OK;
}

static fc_status host_event_sync(fc_ctx *ctx, fc_event *e) {
    (void)ctx, (void)e;
    return FC_OK;
}

static fc_status host_event_elapsed(fc_ctx *ctx, fc_event *start, fc_event *end, float *ms) {
    (void)ctx;
    *ms = (float)(end->host_ms - start->host_ms);
    return FC_OK;
}

static void host_memory_stats(fc_ctx *ctx, fc_memory_stats *out) {
    out->in_use = ctx->host_in_use;
    out->peak = ctx->host_peak;
}

static void host_memory_reset_peak(fc_ctx *ctx) { (void)ctx; /* api.c resets host_peak */ }

static fc_status host_memory_trim(fc_ctx *ctx) {
    (void)ctx;
    return FC_OK;
}

/* The size rides in front of the block so host_free can hand it to the allocator. */
static void *host_host_alloc(fc_ctx *ctx, size_t bytes) {
    if (bytes > SIZE_MAX - 16) return NULL;
    size_t *p = fcg_malloc(ctx, bytes + 16);
    if (!p) return NULL;
    p[0] = bytes + 16;
    return (char *)p + 16;
}

static void host_host_free(fc_ctx *ctx, void *ptr) {
    size_t *p = (size_t *)((char *)ptr - 16);
    fcg_free(ctx, p, p[0]);
}

static fc_status host_copy_bandwidth(fc_ctx *ctx, size_t bytes, int runs, double *gbps) {
    (void)bytes, (void)runs, (void)gbps;
    return fcg_error(ctx, FC_ERR_BACKEND, "copy bandwidth: the host backend has no device");
}

/* Interop: a value is host memory, and work is done when its call returns, so there is
 * nothing to order or wait for. */
static fc_status host_export_value(fc_ctx *ctx, fc_array *a, fc_stream *s, void **ptr,
                                   void **stream) {
    (void)ctx, (void)s;
    *ptr = a->host;
    *stream = NULL;
    return FC_OK;
}

static fc_status host_import_value(fc_ctx *ctx, fc_array *a, void *ptr, fc_stream *s) {
    (void)s;
    size_t bytes = fcg_node_numel(a) * fc_dtype_size((fc_dtype)a->dtype);
    a->host = ptr; /* its owner frees it, never fcg_free: api/interop.c takes it back first */
    a->host_bytes = bytes ? bytes : 1;
    (void)ctx;
    return FC_OK;
}

static void host_take_value(fc_ctx *ctx, fc_array *a, fcb_value *v) {
    (void)ctx;
    memset(v, 0, sizeof *v);
    v->host = a->host, v->host_bytes = a->host_bytes;
    a->host = NULL, a->host_bytes = 0;
}

static void host_drop_value(fc_ctx *ctx, fcb_value *v, bool external) {
    if (!external) fcg_free(ctx, v->host, v->host_bytes);
}

static fc_status host_stream_wrap(fc_ctx *ctx, fc_stream *s, void *cu) {
    (void)ctx;
    s->cu = cu; /* a token: work on it runs at once, as on any host stream */
    return FC_OK;
}

static fc_status host_stream_handle(fc_ctx *ctx, const fc_stream *s, void **cu) {
    (void)s;
    *cu = NULL;
    return fcg_error(ctx, FC_ERR_BACKEND, "stream_handle: the host backend has no CUDA streams");
}

static fc_status host_stream_wait_value(fc_ctx *ctx, fc_stream *s, fc_array *a) {
    (void)ctx, (void)s, (void)a;
    return FC_OK;
}

/* Raw modules are CUDA C: the host backend has no device to run them on. */
static const char *host_arch(const fc_ctx *ctx) {
    (void)ctx;
    return NULL;
}
static fc_status host_module_load(fc_ctx *ctx, const void *cubin, size_t size, void **module) {
    (void)cubin;
    (void)size;
    *module = NULL;
    return fcg_error(ctx, FC_ERR_UNSUPPORTED, "raw modules need the CUDA backend (the host "
                     "backend does not run CUDA C)");
}
static void host_module_unload(fc_ctx *ctx, void *module) {
    (void)ctx;
    (void)module;
}
static fc_status host_raw_launch(fc_ctx *ctx, void *module, const char *name,
                                 const unsigned grid[3], const unsigned block[3],
                                 size_t shared_bytes, fc_stream *stream, int nargs,
                                 const fcb_raw_arg *args) {
    (void)module;
    (void)grid;
    (void)block;
    (void)shared_bytes;
    (void)stream;
    (void)nargs;
    (void)args;
    return fcg_error(ctx, FC_ERR_UNSUPPORTED, "raw kernel '%s' needs the CUDA backend (the host "
                     "backend does not run CUDA C)", name);
}

const fcb_backend fch_backend = {
    .name = "host",
    .kind = FC_BACKEND_HOST,
    .destroy = host_destroy,
    .device = host_device,
    .eval = host_eval,
    .download = host_download,
    .free_value = host_free_value,
    .write = host_write,
    .read_async = host_read_async,
    .copy_from = host_copy_from,
    .alloc_value = host_alloc_value,
    .query = host_query,
    .stream_create = host_stream_create,
    .stream_destroy = host_stream_destroy,
    .stream_sync = host_stream_sync,
    .sync = host_sync,
    .event_create = host_event_create,
    .event_destroy = host_event_destroy,
    .event_record = host_event_record,
    .stream_wait_event = host_stream_wait_event,
    .event_sync = host_event_sync,
    .event_elapsed = host_event_elapsed,
    .memory_stats = host_memory_stats,
    .memory_reset_peak = host_memory_reset_peak,
    .memory_trim = host_memory_trim,
    .host_alloc = host_host_alloc,
    .host_free = host_host_free,
    .copy_bandwidth = host_copy_bandwidth,
    .arch = host_arch,
    .module_load = host_module_load,
    .module_unload = host_module_unload,
    .raw_launch = host_raw_launch,
    .export_value = host_export_value,
    .import_value = host_import_value,
    .take_value = host_take_value,
    .drop_value = host_drop_value,
    .stream_wrap = host_stream_wrap,
    .stream_handle = host_stream_handle,
    .stream_wait_value = host_stream_wait_value,
};
