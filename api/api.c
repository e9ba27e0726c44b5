/*
 * api/api.c - the public calls for devices, memory, streams, events and transfers. Each
 * checks its arguments, keeps the records every backend shares (the context's lists of
 * streams and events, an event's wall-clock stamp, the host memory figures) and dispatches
 * through the context's backend table (backend/backend.h); none asks which backend it is.
 */
#include "api.h"

#include <string.h>

/* ---- devices -------------------------------------------------------------------------- */

fc_status fc_device_count(int *count) {
    if (!count) return FC_ERR_NULL;
    return fcr_device_count(count);
}

fc_status fc_device_get_info(int ordinal, fc_device_info *out) {
    if (!out) return FC_ERR_NULL;
    memset(out, 0, sizeof *out);
    return fcr_device_info(ordinal, out);
}

int fc_ctx_device(const fc_ctx *ctx) { return ctx ? ctx->be->device(ctx) : -1; }

fc_array *fc_copy_to(fc_array *a, fc_ctx *dst) {
    if (!a || !dst) return dst ? fcg_poison(dst, FC_ERR_NULL, "copy_to: array is NULL") : NULL;
    fc_ctx *src = a->ctx;
    if (a->status != FC_OK) return fcg_poison(dst, a->status, "copy_to: %s", a->errmsg);
    fc_status st = fc_eval(src, &a, 1);
    if (st != FC_OK) return fcg_poison(dst, st, "copy_to: %s", fc_errmsg(src));
    fc_shape sh = fc_array_shape(a);
    if (src->be == dst->be && a->dev) {
        /* Backend to backend, where the backend can (the same GPU, or peers). */
        fc_array *out = fcg_node(dst, FCG_OP_DATA, (fc_dtype)a->dtype, (fc_dtype)a->dtype, false,
                                 sh.ndim, sh.dim, 0, NULL, NULL);
        if (!out) return fcg_ret(dst, NULL);
        st = dst->be->copy_from(dst, out, src, a);
        if (st == FC_OK) return fcg_ret(dst, out);
        fcg_release(out);
        if (st != FC_ERR_UNSUPPORTED) return fcg_poison_ctx(dst, st);
    }
    /* Through the host: the source's value comes down once and is then shared. */
    if ((!a->host || (a->dev && src->be->host_copy_volatile)) &&
        (st = src->be->download(src, a)) != FC_OK)
        return fcg_poison(dst, st, "copy_to: %s", fc_errmsg(src));
    return fc_from_host(dst, (fc_dtype)a->dtype, sh, a->host);
}

/* ---- memory ---------------------------------------------------------------------------- */

fc_status fc_memory_stats_get(fc_ctx *ctx, fc_memory_stats *out) {
    if (!ctx || !out) return FC_ERR_NULL;
    memset(out, 0, sizeof *out);
    fca_interop_drain(ctx); /* exports given back return their memory first */
    ctx->be->memory_stats(ctx, out);
    out->host_in_use = ctx->host_in_use;
    out->host_peak = ctx->host_peak;
    return FC_OK;
}

void fc_memory_reset_peak(fc_ctx *ctx) {
    if (!ctx) return;
    ctx->host_peak = ctx->host_in_use;
    ctx->be->memory_reset_peak(ctx);
}

fc_status fc_memory_trim(fc_ctx *ctx) {
    if (!ctx) return FC_ERR_NULL;
    return ctx->be->memory_trim(ctx);
}

fc_status fc_device_copy_bandwidth(fc_ctx *ctx, size_t bytes, int runs, double *gbps) {
    if (!ctx || !gbps) return FC_ERR_NULL;
    *gbps = 0;
    if (bytes == 0 || runs < 1)
        return fcg_error(ctx, FC_ERR_INVALID, "copy bandwidth: %zu bytes, %d runs", bytes, runs);
    return ctx->be->copy_bandwidth(ctx, bytes, runs, gbps);
}

void *fc_host_alloc(fc_ctx *ctx, size_t bytes) {
    if (!ctx) return NULL;
    return ctx->be->host_alloc(ctx, bytes);
}

void fc_host_free(fc_ctx *ctx, void *ptr) {
    if (!ctx || !ptr) return;
    ctx->be->host_free(ctx, ptr);
}

/* ---- streams and events ------------------------------------------------------------------ */

static fc_status check_stream(fc_ctx *ctx, const fc_stream *s) {
    if (s && s->ctx != ctx)
        return fcg_error(ctx, FC_ERR_CONTEXT, "the stream belongs to another context");
    return FC_OK;
}

/* A stream of fusec's own, or a wrapper of the caller's CUstream `cu` (external). */
static fc_status stream_make(fc_ctx *ctx, bool external, void *cu, fc_stream **out) {
    const char *what = external ? "stream_wrap" : "stream_create";
    if (!ctx || !out) return FC_ERR_NULL;
    *out = NULL;
    fc_stream *s = fcg_calloc(ctx, sizeof *s);
    if (!s) return fcg_error(ctx, FC_ERR_NOMEM, "%s: out of memory", what);
    s->ctx = ctx;
    s->id = ++ctx->next_stream_id;
    s->external = external;
    fc_status st = external ? ctx->be->stream_wrap(ctx, s, cu) : ctx->be->stream_create(ctx, s);
    if (st != FC_OK) {
        fcg_free(ctx, s, sizeof *s);
        return st;
    }
    s->next = ctx->streams;
    if (ctx->streams) ctx->streams->prev = s;
    ctx->streams = s;
    *out = s;
    return FC_OK;
}

fc_status fc_stream_create(fc_ctx *ctx, fc_stream **out) {
    return stream_make(ctx, false, NULL, out);
}

fc_status fc_stream_wrap(fc_ctx *ctx, void *cu_stream, fc_stream **out) {
    return stream_make(ctx, true, cu_stream, out);
}

fc_status fc_stream_get_handle(fc_ctx *ctx, const fc_stream *stream, void **cu_stream) {
    if (cu_stream) *cu_stream = NULL;
    if (!ctx || !cu_stream) return FC_ERR_NULL;
    fc_status st = check_stream(ctx, stream);
    if (st != FC_OK) return st;
    return ctx->be->stream_handle(ctx, stream, cu_stream);
}

fc_status fc_stream_wait_array(fc_stream *stream, fc_array *a) {
    if (!a) return FC_ERR_NULL;
    fc_ctx *ctx = a->ctx;
    fc_status st = check_stream(ctx, stream);
    if (st == FC_OK) st = fca_eval_on(ctx, &a, 1, stream); /* (a poisoned a says so) */
    if (st != FC_OK) return st;
    return ctx->be->stream_wait_value(ctx, stream, a);
}

void fc_stream_destroy(fc_stream *s) {
    if (!s) return;
    fc_ctx *ctx = s->ctx;
    ctx->be->stream_destroy(ctx, s);
    if (s->prev) s->prev->next = s->next;
    else ctx->streams = s->next;
    if (s->next) s->next->prev = s->prev;
    fcg_free(ctx, s, sizeof *s);
}

fc_status fc_stream_synchronize(fc_ctx *ctx, fc_stream *s) {
    if (!ctx) return FC_ERR_NULL;
    fc_status st = check_stream(ctx, s);
    if (st != FC_OK) return st;
    return ctx->be->stream_sync(ctx, s);
}

fc_status fc_ctx_synchronize(fc_ctx *ctx) {
    if (!ctx) return FC_ERR_NULL;
    return ctx->be->sync(ctx);
}

fc_status fc_event_create(fc_ctx *ctx, fc_event **out) {
    if (!ctx || !out) return FC_ERR_NULL;
    *out = NULL;
    fc_event *e = fcg_calloc(ctx, sizeof *e);
    if (!e) return fcg_error(ctx, FC_ERR_NOMEM, "event_create: out of memory");
    e->ctx = ctx;
    fc_status st = ctx->be->event_create(ctx, e);
    if (st != FC_OK) {
        fcg_free(ctx, e, sizeof *e);
        return st;
    }
    e->next = ctx->events;
    if (ctx->events) ctx->events->prev = e;
    ctx->events = e;
    *out = e;
    return FC_OK;
}

void fc_event_destroy(fc_event *e) {
    if (!e) return;
    fc_ctx *ctx = e->ctx;
    ctx->be->event_destroy(ctx, e);
    if (e->prev) e->prev->next = e->next;
    else ctx->events = e->next;
    if (e->next) e->next->prev = e->prev;
    fcg_free(ctx, e, sizeof *e);
}

fc_status fc_event_record(fc_event *e, fc_stream *s) {
    if (!e) return FC_ERR_NULL;
    fc_status st = check_stream(e->ctx, s);
    if (st != FC_OK) return st;
    if ((st = e->ctx->be->event_record(e->ctx, e, s)) != FC_OK) return st;
    e->host_ms = fcg_now_s() * 1e3;
    e->recorded = true;
    return FC_OK;
}

fc_status fc_stream_wait_event(fc_stream *s, fc_event *e) {
    if (!e) return FC_ERR_NULL;
    fc_status st = check_stream(e->ctx, s);
    if (st != FC_OK) return st;
    if (!e->recorded) return fcg_error(e->ctx, FC_ERR_INVALID, "stream_wait_event: the event was never recorded");
    return e->ctx->be->stream_wait_event(e->ctx, s, e);
}

fc_status fc_event_synchronize(fc_event *e) {
    if (!e) return FC_ERR_NULL;
    if (!e->recorded) return fcg_error(e->ctx, FC_ERR_INVALID, "event_synchronize: the event was never recorded");
    return e->ctx->be->event_sync(e->ctx, e);
}

fc_status fc_event_elapsed_ms(fc_event *start, fc_event *end, float *ms) {
    if (!start || !end || !ms) return FC_ERR_NULL;
    fc_ctx *ctx = start->ctx;
    if (end->ctx != ctx) return fcg_error(ctx, FC_ERR_CONTEXT, "event_elapsed_ms: events of two contexts");
    if (!start->recorded || !end->recorded)
        return fcg_error(ctx, FC_ERR_INVALID, "event_elapsed_ms: an event was never recorded");
    return ctx->be->event_elapsed(ctx, start, end, ms);
}

fc_status fc_eval_on(fc_ctx *ctx, fc_array *const *arrays, int n, fc_stream *stream) {
    if (!ctx) return FC_ERR_NULL;
    fc_status st = check_stream(ctx, stream);
    if (st != FC_OK) return st;
    return fca_eval_on(ctx, arrays, n, stream);
}

/* ---- transfers ----------------------------------------------------------------------------- */

static fc_status check_range(fc_array *a, const char *what, int64_t offset, int64_t count,
                             const void *buf) {
    fc_ctx *ctx = a->ctx;
    if (a->status != FC_OK) return fcg_error(ctx, a->status, "%s", a->errmsg);
    int64_t size = (int64_t)fcg_node_numel(a);
    if (offset < 0 || count < 0 || offset > size || count > size - offset)
        return fcg_error(ctx, FC_ERR_INDEX, "%s: %lld elements from %lld are out of range for an "
                         "array of %lld", what, (long long)count, (long long)offset, (long long)size);
    if (count > 0 && !buf) return fcg_error(ctx, FC_ERR_NULL, "%s: the buffer is NULL", what);
    return FC_OK;
}

fc_status fc_write(fc_array *a, const void *src, int64_t offset, int64_t count, fc_stream *stream) {
    if (!a) return FC_ERR_NULL;
    fc_ctx *ctx = a->ctx;
    fc_status st = check_range(a, "write", offset, count, src);
    if (st == FC_OK) st = check_stream(ctx, stream);
    if (st != FC_OK) return st;
    if (a->weak)
        return fcg_error(ctx, FC_ERR_INVALID, "write: a weak scalar is a constant of the graph");
    if (fca_read_only(a))
        return fcg_error(ctx, FC_ERR_INVALID, "write: the array's memory was imported read-only");
    /* The array needs a value of its own to write into: evaluate it (fc_empty, fc_zeros, an
     * expression) on that stream. */
    if (!fcg_has_value(a) && (st = fca_eval_on(ctx, &a, 1, stream)) != FC_OK) return st;
    if ((st = fcg_detach(ctx, a)) != FC_OK) return st;
    a->checked_kind = 0; /* the entries a check passed may change */
    size_t es = fc_dtype_size((fc_dtype)a->dtype);
    if (count == 0) return FC_OK;
    if (a->dev) return ctx->be->write(ctx, a, src, (size_t)offset * es, (size_t)count * es, stream);
    memcpy((char *)a->host + (size_t)offset * es, src, (size_t)count * es); /* a host value */
    return FC_OK;
}

fc_status fc_read_async(fc_array *a, void *dst, int64_t offset, int64_t count, fc_stream *stream) {
    if (!a) return FC_ERR_NULL;
    fc_ctx *ctx = a->ctx;
    fc_status st = check_range(a, "read_async", offset, count, dst);
    if (st == FC_OK) st = check_stream(ctx, stream);
    if (st == FC_OK) st = fca_eval_on(ctx, &a, 1, stream);
    if (st != FC_OK) return st;
    size_t es = fc_dtype_size((fc_dtype)a->dtype);
    if (count == 0) return FC_OK;
    if (a->host && !(a->dev && ctx->be->host_copy_volatile)) {
        memcpy(dst, (const char *)a->host + (size_t)offset * es, (size_t)count * es);
        return FC_OK;
    }
    return ctx->be->read_async(ctx, a, dst, (size_t)offset * es, (size_t)count * es, stream);
}
