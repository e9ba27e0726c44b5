/*
 * api/eval.c - evaluation entry points: validate, then hand the arrays that lack a value to
 * the context's backend.
 */
#include "api.h"

#include <string.h>

fc_status fc_eval(fc_ctx *ctx, fc_array *const *arrays, int n) {
    if (!ctx) return FC_ERR_NULL;
    return fca_eval_on(ctx, arrays, n, NULL);
}

fc_status fca_eval_on(fc_ctx *ctx, fc_array *const *arrays, int n, fc_stream *stream) {
    fca_interop_drain(ctx); /* memory of exports given back returns to the pool first */
    if (n < 0) return fcg_error(ctx, FC_ERR_INVALID, "eval: negative count %d", n);
    if (n > 0 && !arrays) return fcg_error(ctx, FC_ERR_NULL, "eval: arrays is NULL");
    int pending = 0;
    for (int i = 0; i < n; i++) {
        const fc_array *a = arrays[i];
        if (!a) return fcg_error(ctx, FC_ERR_NULL, "eval: array %d is NULL", i);
        if (a->ctx != ctx)
            return fcg_error(ctx, FC_ERR_CONTEXT, "eval: array %d belongs to another context", i);
        if (a->status != FC_OK) return fcg_error(ctx, a->status, "%s", a->errmsg);
        fcg_pyint v;
        char s[FCG_PYINT_STR];
        if (fcg_pyint_is_wide(a) && fcg_pyint_of(a, &v)) /* no dtype holds it (graph/pyint.c) */
            return fcg_error(ctx, FC_ERR_INVALID, "eval: array %d is the Python integer %s, "
                             "outside int64 and uint64: no dtype holds it", i, fcg_pyint_str(v, s));
        pending += !fcg_has_value(a);
    }
    if (!pending) return FC_OK;
    if (ctx->trace_path) fcf_trace_eval(ctx, arrays, n);
    /* The backend sees each array that needs a value once. */
    fc_array *small[16], **todo = small;
    if (pending > 16 && !(todo = fcg_malloc(ctx, (size_t)pending * sizeof *todo)))
        return fcg_error(ctx, FC_ERR_NOMEM, "eval: out of memory");
    int m = 0;
    for (int i = 0; i < n; i++) {
        bool dup = fcg_has_value(arrays[i]);
        for (int j = 0; j < m && !dup; j++) dup = todo[j] == arrays[i];
        if (!dup) todo[m++] = arrays[i];
    }
    fc_status st = ctx->be->eval(ctx, todo, m, stream);
    /* A value is a leaf: what it was computed from may go now (queued GPU work keeps its
     * inputs' memory through stream-ordered frees). */
    if (st == FC_OK)
        for (int i = 0; i < m; i++) fcg_cut_history(ctx, todo[i]);
    if (todo != small) fcg_free(ctx, todo, (size_t)pending * sizeof *todo);
    return st;
}

fc_status fc_assign(fc_ctx *ctx, fc_array **state, fc_array *const *updates, int n) {
    if (!ctx) return FC_ERR_NULL;
    if (n < 0) return fcg_error(ctx, FC_ERR_INVALID, "assign: negative count %d", n);
    if (n > 0 && (!state || !updates))
        return fcg_error(ctx, FC_ERR_NULL, "assign: state or updates is NULL");
    for (int i = 0; i < n; i++) {
        if (!state[i] || !updates[i])
            return fcg_error(ctx, FC_ERR_NULL, "assign: state[%d] or updates[%d] is NULL", i, i);
        if (updates[i]->ctx != ctx)
            return fcg_error(ctx, FC_ERR_CONTEXT, "assign: updates[%d] belongs to another context",
                             i);
    }
    /* The old values go first: one that only the updates read dies with their evaluation. */
    for (int i = 0; i < n; i++) {
        fc_release(state[i]);
        state[i] = updates[i];
    }
    return fc_eval(ctx, updates, n);
}

fc_status fc_read(fc_array *a, void *dst, int64_t offset, int64_t count) {
    if (!a) return FC_ERR_NULL;
    fc_ctx *ctx = a->ctx;
    if (a->status != FC_OK) return fcg_error(ctx, a->status, "%s", a->errmsg);
    int64_t size = (int64_t)fcg_node_numel(a);
    if (offset < 0 || count < 0 || offset > size || count > size - offset)
        return fcg_error(ctx, FC_ERR_INDEX, "read: %lld elements from %lld are out of range for "
                         "an array of %lld", (long long)count, (long long)offset, (long long)size);
    if (count > 0 && !dst) return fcg_error(ctx, FC_ERR_NULL, "read: dst is NULL");
    fc_status st = fc_eval(ctx, &a, 1);
    if (st != FC_OK) return st;
    size_t es = fc_dtype_size((fc_dtype)a->dtype);
    if (a->dev && ctx->be->host_copy_volatile) /* read now, not from a host copy */
        return count > 0 ? ctx->be->read_async(ctx, a, dst, (size_t)offset * es,
                                               (size_t)count * es, NULL)
                         : FC_OK;
    if (!a->host && (st = ctx->be->download(ctx, a)) != FC_OK) return st;
    if (count > 0) memcpy(dst, (const char *)a->host + (size_t)offset * es, (size_t)count * es);
    return FC_OK;
}

fc_status fc_to_host(fc_array *a, void *dst, size_t bytes) {
    if (!a) return FC_ERR_NULL;
    size_t need = fcg_node_numel(a) * fc_dtype_size((fc_dtype)a->dtype);
    if (a->status == FC_OK && bytes < need)
        return fcg_error(a->ctx, FC_ERR_INVALID, "to_host: buffer of %zu bytes is too small for "
                         "%zu", bytes, need);
    return fc_read(a, dst, 0, (int64_t)fcg_node_numel(a));
}
