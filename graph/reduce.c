/*
 * graph/reduce.c - reductions: result dtypes (NumPy's), output shapes, keepdims.
 */
#include "graph.h"

#include <string.h>

const fcg_reduction *fcg_reduction_for(fcg_op op, int ord) {
    const fcg_reduction *d = &fcg_ops[op].red;
    return d->by_ord && ord >= 0 && ord <= FC_NORM_INF ? &fcg_norm_reductions[ord] : d;
}

const fcg_reduction *fcg_reduction_of(const fc_array *r) {
    return fcg_reduction_for((fcg_op)r->op, r->p.ord);
}

void fcg_reduce_types(const fcg_reduction *d, fc_dtype t, fc_dtype *loop, fc_dtype *out) {
    fc_dtype inexact = fcg_is_inexact(t) ? t : FC_F64;
    switch (d->result) {
    case FCG_RESULT_SUM:
        *out = *loop = t == FC_BOOL || fcg_is_sint(t) ? FC_I64 : fcg_is_uint(t) ? FC_U64 : t;
        return;
    case FCG_RESULT_SAME: *out = *loop = t; return;
    case FCG_RESULT_BOOL: *out = *loop = FC_BOOL; return;
    case FCG_RESULT_COUNT:
        *loop = FC_BOOL;
        *out = FC_I64;
        return;
    case FCG_RESULT_MEAN: *out = *loop = inexact; return;
    case FCG_RESULT_REAL:
        *loop = inexact;
        *out = fcg_real_dtype(inexact);
        return;
    case FCG_RESULT_INDEX:
        *loop = t;
        *out = FC_I64;
        return;
    case FCG_RESULT_USER: /* graph/user.c sets them from the declaration */
    case FCG_RESULT_UNSET: break;
    }
    *out = *loop = t; /* not a reduction: tests/test_graph.c keeps every REDUCE row set */
}

fc_dtype fcg_reduce_acc_dtype(const fc_array *r) {
    fc_dtype l = (fc_dtype)r->loop_dtype;
    fc_dtype wide = fcg_is_complex(l) ? FC_C128 : fcg_is_float(l) ? FC_F64 : (fc_dtype)r->dtype;
    switch (fcg_reduction_of(r)->acc) {
    case FCG_ACC_EXACT:
    case FCG_ACC_USER: /* the reduce type: the node's loop dtype */
        return l;
    case FCG_ACC_WIDE: return wide;
    case FCG_ACC_WIDE_REAL: return fcg_real_dtype(wide);
    case FCG_ACC_UNSET: break;
    }
    return l;
}

static fc_array *reduce(fcg_op op, fc_array *a, uint32_t mask, bool all_axes_flag,
                        bool keepdims, int ddof, int ord, fc_ctx *ctx) {
    const char *name = fcg_ops[op].pyname;
    char sh[200];
    fc_dtype out, loop;
    fcg_params p;
    memset(&p, 0, sizeof p);
    p.axes = mask;
    p.keepdims = keepdims;
    if (fcg_ops[op].params & FCG_P_DDOF) p.ddof = ddof;
    if (fcg_ops[op].params & FCG_P_ORD) p.ord = (uint8_t)ord;
    if (fcg_ops[op].params & FCG_P_FLAG) p.flag = all_axes_flag;
    const fcg_reduction *desc = fcg_reduction_for(op, p.ord);
    fcg_reduce_types(desc, (fc_dtype)a->dtype, &loop, &out);
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
    if (empty && desc->identity == FCG_ID_NONE)
        return fcg_poison(ctx, FC_ERR_SHAPE,
                          "%s: zero-size reduction of shape %s (%s) has no identity", name,
                          fcg_shape_str(sh, a->ndim, a->shape), fc_dtype_name((fc_dtype)a->dtype));
    return fcg_make(ctx, op, out, loop, false, ndim, shape, 1, &a, &p);
}

/* Whether op takes axis 0 or -1 of a 0-d array, reducing nothing, as NumPy does: its ufunc
 * reductions (sum, prod, max, min, any, all, count_nonzero) and argmax / argmin accept that
 * axis on purpose, while mean, var, std and vector_norm check it against ndim and raise. */
static bool zero_d_axis_ok(fcg_op op) {
    const fcg_reduction *d = &fcg_ops[op].red;
    if (d->by_ord) return false; /* norm */
    switch (d->finish) {
    case FCG_FINISH_NONE: case FCG_FINISH_INDEX: return true;
    case FCG_FINISH_MEAN: case FCG_FINISH_VARIANCE: case FCG_FINISH_STD: case FCG_FINISH_SQRT:
    case FCG_FINISH_USER: case FCG_FINISH_UNSET:
        return false;
    }
    return false;
}

static bool zero_d_axis(fcg_op op, const fc_array *a, int axis) {
    return a->ndim == 0 && (axis == 0 || axis == -1) && zero_d_axis_ok(op);
}

static fc_array *reduce_axes(fcg_op op, fc_array *a, fc_axes axes, bool keepdims, int ddof,
                             int ord) {
    const char *name = fcg_ops[op].pyname;
    fc_array *early;
    fc_ctx *ctx = fcg_begin(name, 1, &a, &early);
    if (!ctx || early) return early;
    if (axes.n == 1 && zero_d_axis(op, a, axes.axis[0]))
        return reduce(op, a, 0, false, keepdims, ddof, ord, ctx);
    uint32_t mask;
    fc_status st = fcg_axes_mask(ctx, name, a->ndim, a->shape, axes, &mask);
    if (st != FC_OK) return fcg_poison_ctx(ctx, st);
    return reduce(op, a, mask, false, keepdims, ddof, ord, ctx);
}

fc_array *fcg_reduce(fcg_op op, fc_array *a, fc_axes axes, bool keepdims, int ddof, int ord) {
    uint32_t params = fcg_ops[op].params;
    if (a && fcg_ops[op].kind != FCG_KIND_REDUCE)
        return fcg_poison(a->ctx, FC_ERR_INVALID, "%s is not a reduction", fcg_ops[op].pyname);
    if (a && (params & FCG_P_FLAG)) /* one axis or the flattened array: fc_argmax's form */
        return fcg_poison(a->ctx, FC_ERR_INVALID, "%s takes one axis", fcg_ops[op].pyname);
    if (a && (params & FCG_P_DDOF) && ddof < 0)
        return fcg_poison(a->ctx, FC_ERR_INVALID, "%s: ddof %d is negative", fcg_ops[op].pyname,
                          ddof);
    if (a && (params & FCG_P_ORD) && (ord < 0 || ord > FC_NORM_INF))
        return fcg_poison(a->ctx, FC_ERR_INVALID, "%s: unknown order %d", fcg_ops[op].pyname, ord);
    return reduce_axes(op, a, axes, keepdims, ddof, ord);
}

fc_array *fc_sum(fc_array *a, fc_axes axes, bool keepdims) {
    return fcg_reduce(FCG_OP_SUM, a, axes, keepdims, 0, 0);
}
fc_array *fc_prod(fc_array *a, fc_axes axes, bool keepdims) {
    return fcg_reduce(FCG_OP_PROD, a, axes, keepdims, 0, 0);
}
fc_array *fc_mean(fc_array *a, fc_axes axes, bool keepdims) {
    return fcg_reduce(FCG_OP_MEAN, a, axes, keepdims, 0, 0);
}
fc_array *fc_max(fc_array *a, fc_axes axes, bool keepdims) {
    return fcg_reduce(FCG_OP_MAX, a, axes, keepdims, 0, 0);
}
fc_array *fc_min(fc_array *a, fc_axes axes, bool keepdims) {
    return fcg_reduce(FCG_OP_MIN, a, axes, keepdims, 0, 0);
}
fc_array *fc_any(fc_array *a, fc_axes axes, bool keepdims) {
    return fcg_reduce(FCG_OP_ANY, a, axes, keepdims, 0, 0);
}
fc_array *fc_all(fc_array *a, fc_axes axes, bool keepdims) {
    return fcg_reduce(FCG_OP_ALL, a, axes, keepdims, 0, 0);
}
fc_array *fc_count_nonzero(fc_array *a, fc_axes axes, bool keepdims) {
    return fcg_reduce(FCG_OP_COUNT_NONZERO, a, axes, keepdims, 0, 0);
}
fc_array *fc_var(fc_array *a, fc_axes axes, bool keepdims, int ddof) {
    return fcg_reduce(FCG_OP_VAR, a, axes, keepdims, ddof, 0);
}
fc_array *fc_std(fc_array *a, fc_axes axes, bool keepdims, int ddof) {
    return fcg_reduce(FCG_OP_STD, a, axes, keepdims, ddof, 0);
}
fc_array *fc_norm(fc_array *a, fc_axes axes, bool keepdims, fc_norm_ord ord) {
    return fcg_reduce(FCG_OP_NORM, a, axes, keepdims, 0, (int)ord);
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
    if (zero_d_axis(op, a, axis)) return reduce(op, a, 0, false, keepdims, 0, 0, ctx);
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

/* ---- scans ------------------------------------------------------------------------------- */

/* An inclusive scan along one axis; FC_AXIS_NONE scans the flattened array, and a 0-d array
 * is scanned as one element of shape (1,), as NumPy does for either axis. */
static fc_array *scan(fcg_op op, fc_array *a, int axis) {
    const char *name = fcg_ops[op].pyname;
    fc_array *early;
    fc_ctx *ctx = fcg_begin(name, 1, &a, &early);
    if (!ctx || early) return early;
    if (axis == FC_AXIS_NONE || (a->ndim == 0 && (axis == 0 || axis == -1))) {
        if (a->ndim != 1) {
            int64_t n = 1;
            for (int d = 0; d < a->ndim; d++) n *= a->shape[d]; /* a's size: no overflow */
            fc_scope *s = fc_scope_open(ctx);
            if (!s) return fcg_poison(ctx, FC_ERR_NOMEM, "%s: out of memory", name);
            fc_array *r = fc_keep(scan(op, fc_reshape(a, FC_SHAPE(n)), 0));
            fc_scope_close(s);
            return fcg_ret(ctx, r ? r : &ctx->oom);
        }
        axis = 0;
    }
    uint32_t mask;
    fc_status st = fcg_axes_mask(ctx, name, a->ndim, a->shape, FC_AXES(axis), &mask);
    if (st != FC_OK) return fcg_poison_ctx(ctx, st);
    fcg_params p;
    memset(&p, 0, sizeof p);
    for (int d = 0; d < a->ndim; d++)
        if (mask & (1u << d)) p.axis = d;
    fc_dtype out, loop;
    fcg_reduce_types(&fcg_ops[op].red, (fc_dtype)a->dtype, &loop, &out);
    return fcg_make(ctx, op, out, loop, false, a->ndim, a->shape, 1, &a, &p);
}

fc_array *fc_cumsum(fc_array *a, int axis) { return scan(FCG_OP_CUMSUM, a, axis); }
fc_array *fc_cumprod(fc_array *a, int axis) { return scan(FCG_OP_CUMPROD, a, axis); }
fc_array *fc_cummax(fc_array *a, int axis) { return scan(FCG_OP_CUMMAX, a, axis); }
fc_array *fc_cummin(fc_array *a, int axis) { return scan(FCG_OP_CUMMIN, a, axis); }
