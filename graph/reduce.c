/*
 * graph/reduce.c - reductions: result dtypes (NumPy's), output shapes, keepdims.
 */
#include "graph.h"

#include <string.h>

/* Result and accumulation-input dtypes, as NumPy 2 chooses them. */
static void reduce_types(fcg_op op, fc_dtype t, fc_dtype *out, fc_dtype *loop) {
    switch (op) {
    case FCG_OP_SUM:
    case FCG_OP_PROD:
        if (t == FC_BOOL || fcg_is_sint(t)) *out = FC_I64;
        else if (fcg_is_uint(t)) *out = FC_U64;
        else *out = t;
        *loop = *out;
        return;
    case FCG_OP_MEAN:
        *out = *loop = fcg_is_inexact(t) ? t : FC_F64;
        return;
    case FCG_OP_ANY:
    case FCG_OP_ALL:
        *out = *loop = FC_BOOL;
        return;
    case FCG_OP_VAR:
    case FCG_OP_STD:
    case FCG_OP_NORM:
        *loop = fcg_is_inexact(t) ? t : FC_F64;
        *out = fcg_real_dtype(*loop);
        return;
    case FCG_OP_ARGMAX:
    case FCG_OP_ARGMIN:
        *out = FC_I64;
        *loop = t;
        return;
    default: /* max, min */
        *out = *loop = t;
        return;
    }
}

static fc_array *reduce(fcg_op op, fc_array *a, uint32_t mask, bool all_axes_flag,
                        bool keepdims, int ddof, int ord, fc_ctx *ctx) {
    const char *name = fcg_ops[op].pyname;
    char sh[200];
    fc_dtype out, loop;
    reduce_types(op, (fc_dtype)a->dtype, &out, &loop);
    bool empty = false;
    int ndim = 0;
    int64_t shape[FC_MAX_DIMS];
    for (int d = 0; d < a->ndim; d++) {
        if (mask & (1u << d)) {
            empty |= a->shape[d] == 0;
            if (keepdims) shape[ndim++] = 1;
        } else {
            shape[ndim++] = a->shape[d];
        }
    }
    if (empty && (op == FCG_OP_MAX || op == FCG_OP_MIN || op == FCG_OP_ARGMAX ||
                  op == FCG_OP_ARGMIN || (op == FCG_OP_NORM && ord == FC_NORM_INF)))
        return fcg_poison(ctx, FC_ERR_SHAPE,
                          "%s: zero-size reduction of shape %s (%s) has no identity", name,
                          fcg_shape_str(sh, a->ndim, a->shape), fc_dtype_name((fc_dtype)a->dtype));
    fcg_params p;
    memset(&p, 0, sizeof p);
    p.axes = mask;
    p.keepdims = keepdims;
    p.ddof = ddof;
    p.ord = (uint8_t)ord;
    p.flag = all_axes_flag;
    return fcg_make(ctx, op, out, loop, false, ndim, shape, 1, &a, &p);
}

static fc_array *reduce_axes(fcg_op op, fc_array *a, fc_axes axes, bool keepdims, int ddof,
                             int ord) {
    const char *name = fcg_ops[op].pyname;
    fc_array *early;
    fc_ctx *ctx = fcg_begin(name, 1, &a, &early);
    if (!ctx || early) return early;
    uint32_t mask;
    fc_status st = fcg_axes_mask(ctx, name, a->ndim, a->shape, axes, &mask);
    if (st != FC_OK) return fcg_poison_ctx(ctx, st);
    return reduce(op, a, mask, false, keepdims, ddof, ord, ctx);
}

fc_array *fc_sum(fc_array *a, fc_axes axes, bool keepdims) {
    return reduce_axes(FCG_OP_SUM, a, axes, keepdims, 0, 0);
}
fc_array *fc_prod(fc_array *a, fc_axes axes, bool keepdims) {
    return reduce_axes(FCG_OP_PROD, a, axes, keepdims, 0, 0);
}
fc_array *fc_mean(fc_array *a, fc_axes axes, bool keepdims) {
    return reduce_axes(FCG_OP_MEAN, a, axes, keepdims, 0, 0);
}
fc_array *fc_max(fc_array *a, fc_axes axes, bool keepdims) {
    return reduce_axes(FCG_OP_MAX, a, axes, keepdims, 0, 0);
}
fc_array *fc_min(fc_array *a, fc_axes axes, bool keepdims) {
    return reduce_axes(FCG_OP_MIN, a, axes, keepdims, 0, 0);
}
fc_array *fc_any(fc_array *a, fc_axes axes, bool keepdims) {
    return reduce_axes(FCG_OP_ANY, a, axes, keepdims, 0, 0);
}
fc_array *fc_all(fc_array *a, fc_axes axes, bool keepdims) {
    return reduce_axes(FCG_OP_ALL, a, axes, keepdims, 0, 0);
}

static fc_array *moment(fcg_op op, fc_array *a, fc_axes axes, bool keepdims, int ddof) {
    if (a && ddof < 0)
        return fcg_poison(a->ctx, FC_ERR_INVALID, "%s: ddof %d is negative", fcg_ops[op].pyname,
                          ddof);
    return reduce_axes(op, a, axes, keepdims, ddof, 0);
}
fc_array *fc_var(fc_array *a, fc_axes axes, bool keepdims, int ddof) {
    return moment(FCG_OP_VAR, a, axes, keepdims, ddof);
}
fc_array *fc_std(fc_array *a, fc_axes axes, bool keepdims, int ddof) {
    return moment(FCG_OP_STD, a, axes, keepdims, ddof);
}

fc_array *fc_norm(fc_array *a, fc_axes axes, bool keepdims, fc_norm_ord ord) {
    if (a && (unsigned)ord > FC_NORM_INF)
        return fcg_poison(a->ctx, FC_ERR_INVALID, "norm: unknown order %d", (int)ord);
    return reduce_axes(FCG_OP_NORM, a, axes, keepdims, 0, (int)ord);
}

static fc_array *arg_reduce(fcg_op op, fc_array *a, int axis, bool keepdims) {
    const char *name = fcg_ops[op].pyname;
    fc_array *early;
    fc_ctx *ctx = fcg_begin(name, 1, &a, &early);
    if (!ctx || early) return early;
    if (axis == FC_AXIS_NONE) {
        uint32_t all = a->ndim ? (uint32_t)((1ull << a->ndim) - 1) : 0;
        return reduce(op, a, all, true, keepdims, 0, 0, ctx);
    }
    uint32_t mask;
    fc_status st = fcg_axes_mask(ctx, name, a->ndim, a->shape, FC_AXES(axis), &mask);
    if (st != FC_OK) return fcg_poison_ctx(ctx, st);
    return reduce(op, a, mask, false, keepdims, 0, 0, ctx);
}
fc_array *fc_argmax(fc_array *a, int axis, bool keepdims) {
    return arg_reduce(FCG_OP_ARGMAX, a, axis, keepdims);
}
fc_array *fc_argmin(fc_array *a, int axis, bool keepdims) {
    return arg_reduce(FCG_OP_ARGMIN, a, axis, keepdims);
}
