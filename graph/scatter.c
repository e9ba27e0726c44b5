/*
 * graph/scatter.c - scatters (np.add.at, np.maximum.at, np.minimum.at) and what is built on
 * them: put and put_along_axis (last write wins), bincount, histogram.
 *
 * A scatter node is in[0] with in[2]'s values combined in at the positions along p.axis that
 * in[1] holds. The planner gives it two kernels of its own (passes/fuse.c): an elementwise copy
 * of in[0] into the result's buffer, then one thread per update doing an atomic
 * read-modify-write there. Everything else here is a composition of existing ops around one
 * scatter node.
 */
#include "graph.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* NumPy's kinds, in the order "same_kind" casting may go up: b < u < i < f < c. */
static int kind_rank(fc_dtype t) {
    return t == FC_BOOL ? 0 : fcg_is_uint(t) ? 1 : fcg_is_sint(t) ? 2 : fcg_is_float(t) ? 3 : 4;
}

/* np.can_cast(from, to, "same_kind"): safe, or within a kind, or up the kinds, except signed
 * to unsigned. A weak scalar counts by its kind alone. */
static bool same_kind(const fc_array *v, fc_dtype to) {
    fc_dtype from = (fc_dtype)v->dtype;
    if (!v->weak && fcg_can_cast_safe(from, to)) return true;
    int a = kind_rank(from), b = kind_rank(to);
    if (v->weak && from == FC_BOOL) return true;
    return a < b || (a == b) || (v->weak && a == 2 && b == 1);
}

static fc_array *scatter(const char *name, fcg_op op, fc_array *a, fc_array *indices,
                         fc_array *values, int axis, fc_take_mode mode) {
    fc_array *early;
    fc_ctx *ctx = fcg_begin(name, 3, (fc_array *[]){a, indices, values}, &early);
    if (!ctx || early) return early;
    char sa[200], sv[200];
    const fc_dtype t = (fc_dtype)a->dtype, vt = (fc_dtype)values->dtype;
    if ((unsigned)mode > FC_TAKE_DROP)
        return fcg_poison(ctx, FC_ERR_INVALID, "%s: unknown mode %d", name, (int)mode);
    fc_dtype it = (fc_dtype)indices->dtype;
    if (!(fcg_is_sint(it) || fcg_is_uint(it)) || indices->weak)
        return fcg_poison(ctx, FC_ERR_DTYPE, "%s: indices must be an integer array, not %s%s",
                          name, indices->weak ? "a Python scalar of " : "", fc_dtype_name(it));
    if (op != FCG_OP_SCATTER_ADD && fcg_is_complex(t))
        return fcg_poison(ctx, FC_ERR_UNSUPPORTED, "%s: complex arrays (%s) are not supported",
                          name, fc_dtype_name(t));
    if (!same_kind(values, t))
        return fcg_poison(ctx, FC_ERR_DTYPE, "%s: cannot cast the values from %s%s to %s with "
                          "NumPy's \"same_kind\" rule", name,
                          values->weak ? "a Python scalar of " : "", fc_dtype_name(vt),
                          fc_dtype_name(t));
    fcg_pyint pv;
    if (values->weak && (fcg_is_sint(t) || fcg_is_uint(t)) && fcg_pyint_of(values, &pv) &&
        !fcg_pyint_fits(pv, t))
        return fcg_poison(ctx, FC_ERR_VALUE, "%s: the Python integer is out of bounds for %s",
                          name, fc_dtype_name(t));
    if (axis == FC_AXIS_NONE) {
        int64_t n = (int64_t)fcg_node_numel(a);
        fc_shape sh = {a->ndim, {0}};
        memcpy(sh.dim, a->shape, (size_t)a->ndim * sizeof *a->shape);
        fc_scope *s = fc_scope_open(ctx);
        if (!s) return fcg_poison(ctx, FC_ERR_NOMEM, "%s: out of memory", name);
        fc_array *flat = fc_reshape(a, FC_SHAPE(n));
        fc_array *r = op == FCG_OP_SCATTER_ADD   ? fc_scatter_add(flat, indices, values, 0, mode)
                      : op == FCG_OP_SCATTER_MAX ? fc_scatter_max(flat, indices, values, 0, mode)
                                                 : fc_scatter_min(flat, indices, values, 0, mode);
        r = fc_keep(fc_reshape(r, sh));
        fc_scope_close(s);
        return fcg_ret(ctx, r ? r : &ctx->oom);
    }
    uint32_t mask;
    fc_status st = fcg_axes_mask(ctx, name, a->ndim, a->shape, FC_AXES(axis), &mask);
    if (st != FC_OK) return fcg_poison_ctx(ctx, st);
    int ax = 0;
    while (!(mask & (1u << ax))) ax++;
    int nd = a->ndim - 1 + indices->ndim;
    if (nd > FC_MAX_DIMS)
        return fcg_poison(ctx, FC_ERR_SHAPE, "%s: the updates would have %d axes (at most %d)",
                          name, nd, FC_MAX_DIMS);
    fc_shape ushape = {nd, {0}};
    int k = 0;
    for (int d = 0; d < ax; d++) ushape.dim[k++] = a->shape[d];
    for (int d = 0; d < indices->ndim; d++) ushape.dim[k++] = indices->shape[d];
    for (int d = ax + 1; d < a->ndim; d++) ushape.dim[k++] = a->shape[d];
    if (a->shape[ax] == 0 && fcg_node_numel(indices) > 0 && mode != FC_TAKE_DROP)
        return fcg_poison(ctx, FC_ERR_VALUE, "%s: cannot scatter %lld updates into the empty axis "
                          "%d of shape %s", name, (long long)fcg_node_numel(indices), ax,
                          fcg_shape_str(sa, a->ndim, a->shape));
    /* the values: broadcast to the updates' shape, in a's dtype */
    for (int d = 0; d < values->ndim; d++) {
        int u = nd - values->ndim + d;
        if (u < 0 || (values->shape[d] != 1 && values->shape[d] != ushape.dim[u]))
            return fcg_poison(ctx, FC_ERR_SHAPE, "%s: values of shape %s cannot be broadcast to "
                              "the updates' shape %s", name,
                              fcg_shape_str(sv, values->ndim, values->shape),
                              fcg_shape_str(sa, nd, ushape.dim));
    }
    fc_scope *s = fc_scope_open(ctx);
    if (!s) return fcg_poison(ctx, FC_ERR_NOMEM, "%s: out of memory", name);
    fc_array *v = fc_broadcast_to(fc_cast(values, t), ushape);
    fc_array *r = NULL;
    if (fc_array_status(v) == FC_OK) {
        fcg_params p;
        memset(&p, 0, sizeof p);
        p.axis = ax;
        p.mode = (uint8_t)mode;
        r = fc_keep(fcg_make(ctx, op, t, t, false, a->ndim, a->shape, 3,
                             (fc_array *[]){a, indices, v}, &p));
    } else {
        r = fc_keep(v);
    }
    fc_scope_close(s);
    return fcg_ret(ctx, r ? r : &ctx->oom);
}

fc_array *fc_scatter_add(fc_array *a, fc_array *indices, fc_array *values, int axis,
                         fc_take_mode mode) {
    return scatter("scatter_add", FCG_OP_SCATTER_ADD, a, indices, values, axis, mode);
}
fc_array *fc_scatter_max(fc_array *a, fc_array *indices, fc_array *values, int axis,
                         fc_take_mode mode) {
    return scatter("scatter_max", FCG_OP_SCATTER_MAX, a, indices, values, axis, mode);
}
fc_array *fc_scatter_min(fc_array *a, fc_array *indices, fc_array *values, int axis,
                         fc_take_mode mode) {
    return scatter("scatter_min", FCG_OP_SCATTER_MIN, a, indices, values, axis, mode);
}

/* put: the flat positions (normalised by the mode through a take of arange, so that a
 * negative index counts from the end and raise fails as take's does), the winner of each
 * position (the largest update number, by scatter_max over -1s), then the winners' values
 * gathered under one where. */
fc_array *fc_put(fc_array *a, fc_array *indices, fc_array *values, fc_take_mode mode) {
    fc_array *early;
    fc_ctx *ctx = fcg_begin("put", 3, (fc_array *[]){a, indices, values}, &early);
    if (!ctx || early) return early;
    if ((unsigned)mode > FC_TAKE_CLIP)
        return fcg_poison(ctx, FC_ERR_INVALID, "put: mode must be raise, wrap or clip, not %d",
                          (int)mode);
    fc_dtype it = (fc_dtype)indices->dtype;
    if (!(fcg_is_sint(it) || fcg_is_uint(it)) || indices->weak)
        return fcg_poison(ctx, FC_ERR_DTYPE, "put: indices must be an integer array, not %s%s",
                          indices->weak ? "a Python scalar of " : "", fc_dtype_name(it));
    int64_t n = (int64_t)fcg_node_numel(a), m = (int64_t)fcg_node_numel(indices),
            nv = (int64_t)fcg_node_numel(values);
    if (m == 0) {
        fcg_retain(a);
        return fcg_ret(ctx, a);
    }
    if (nv == 0)
        return fcg_poison(ctx, FC_ERR_VALUE, "put: cannot put %lld indices' values from an "
                          "empty values array", (long long)m);
    if (n == 0)
        return fcg_poison(ctx, FC_ERR_VALUE, "put: cannot put into an empty array");
    fc_shape sh = {a->ndim, {0}};
    memcpy(sh.dim, a->shape, (size_t)a->ndim * sizeof *a->shape);
    fc_scope *s = fc_scope_open(ctx);
    if (!s) return fcg_poison(ctx, FC_ERR_NOMEM, "put: out of memory");
    fc_array *flat = fc_reshape(a, FC_SHAPE(n));
    fc_array *pos = fc_take(fc_arange(ctx, FC_I64, 0, (double)n, 1), fc_reshape(indices, FC_SHAPE(m)),
                            0, mode);
    fc_array *order = fc_arange(ctx, FC_I64, 0, (double)m, 1);
    fc_array *winner = fc_scatter_max(fc_full(ctx, FC_I64, FC_SHAPE(n), -1), pos, order, 0,
                                      FC_TAKE_CLIP);
    /* values repeat when there are fewer than indices (np.put's rule) */
    fc_array *vals = fc_reshape(fc_cast(values, (fc_dtype)a->dtype), FC_SHAPE(nv));
    fc_array *got = fc_take(vals, fc_mod(winner, fc_i64(ctx, nv)), 0, FC_TAKE_CLIP);
    fc_array *r = fc_keep(fc_reshape(fc_where(fc_greater_equal(winner, fc_i64(ctx, 0)), got, flat),
                                     sh));
    fc_scope_close(s);
    return fcg_ret(ctx, r ? r : &ctx->oom);
}

/* np.put_along_axis as NumPy defines it: arr[idx] = values, idx the index arrays of
 * take_along_axis (aranges along the other axes, indices along axis), so fc_setitem's put
 * path does it, the last write winning where a position repeats. */
fc_array *fc_put_along_axis(fc_array *a, fc_array *indices, fc_array *values, int axis) {
    fc_array *early;
    fc_ctx *ctx = fcg_begin("put_along_axis", 3, (fc_array *[]){a, indices, values}, &early);
    if (!ctx || early) return early;
    char sa[200], si[200];
    fc_dtype it = (fc_dtype)indices->dtype;
    if (!(fcg_is_sint(it) || fcg_is_uint(it)) || indices->weak)
        return fcg_poison(ctx, FC_ERR_DTYPE, "put_along_axis: indices must be an integer array, "
                          "not %s%s", indices->weak ? "a Python scalar of " : "",
                          fc_dtype_name(it));
    fc_scope *s = fc_scope_open(ctx);
    if (!s) return fcg_poison(ctx, FC_ERR_NOMEM, "put_along_axis: out of memory");
    fc_array *r;
    if (axis == FC_AXIS_NONE) {
        fc_shape sh = {a->ndim, {0}};
        memcpy(sh.dim, a->shape, (size_t)a->ndim * sizeof *a->shape);
        if (indices->ndim != 1) {
            r = fcg_poison(ctx, FC_ERR_SHAPE, "put_along_axis: with axis None, indices must be "
                           "1-d, not %d-d", indices->ndim);
        } else {
            fc_array *flat = fc_reshape(a, FC_SHAPE((int64_t)fcg_node_numel(a)));
            fc_idx e[1] = {FC_ARRAY_IDX(indices)};
            r = fc_reshape(fc_setitem(flat, 1, e, values), sh);
        }
    } else if (a->ndim != indices->ndim) {
        r = fcg_poison(ctx, FC_ERR_SHAPE, "put_along_axis: indices (shape %s) and the array "
                       "(shape %s) must have the same number of axes",
                       fcg_shape_str(si, indices->ndim, indices->shape),
                       fcg_shape_str(sa, a->ndim, a->shape));
    } else {
        uint32_t mask;
        fc_status st = fcg_axes_mask(ctx, "put_along_axis", a->ndim, a->shape, FC_AXES(axis), &mask);
        if (st != FC_OK) {
            r = fcg_poison_ctx(ctx, st);
        } else {
            fc_idx e[FC_MAX_DIMS];
            for (int d = 0; d < a->ndim; d++)
                e[d] = FC_ARRAY_IDX(mask & (1u << d) ? indices
                                                     : fcg_axis_coord(ctx, a->ndim, d, a->shape[d]));
            r = fc_setitem(a, a->ndim, e, values);
        }
    }
    return fcg_scope_return(ctx, s, r);
}

/* Evaluates the int64 minimum and maximum of the non-empty x (which is evaluated too, so the
 * kernels that follow read it rather than compute it again). */
static fc_status extremes(fc_ctx *ctx, const char *name, fc_array *x, fc_dtype as, double *lo,
                          double *hi) {
    fc_scope *s = fc_scope_open(ctx);
    if (!s) return fcg_error(ctx, FC_ERR_NOMEM, "%s: out of memory", name);
    fc_array *mm[3] = {x, fc_cast(fc_min(x, FC_ALL, false), as), fc_cast(fc_max(x, FC_ALL, false), as)};
    fc_status st = fc_eval(ctx, mm, 3);
    if (st == FC_OK && as == FC_I64) {
        int64_t v[2];
        if ((st = fc_read(mm[1], &v[0], 0, 1)) == FC_OK) st = fc_read(mm[2], &v[1], 0, 1);
        *lo = (double)v[0];
        *hi = (double)v[1];
        /* exactness: callers compare these with small bounds; huge values only need to be
         * huge */
    } else if (st == FC_OK) {
        if ((st = fc_read(mm[1], lo, 0, 1)) == FC_OK) st = fc_read(mm[2], hi, 0, 1);
    }
    fc_scope_close(s);
    if (st != FC_OK) {
        char why[256];
        snprintf(why, sizeof why, "%s", fc_errmsg(ctx));
        return fcg_error(ctx, st, "%s: the result's size depends on the input's values, which "
                         "could not be evaluated (%s)", name, why);
    }
    return FC_OK;
}

fc_array *fc_bincount(fc_array *x, fc_array *weights, int64_t minlength) {
    fc_array *early;
    fc_array *in[2] = {x, weights};
    fc_ctx *ctx = fcg_begin("bincount", weights ? 2 : 1, in, &early);
    if (!ctx || early) return early;
    char sx[200], sw[200];
    fc_dtype t = (fc_dtype)x->dtype;
    if (!(t == FC_BOOL || fcg_is_sint(t) || (fcg_is_uint(t) && t != FC_U64)) || x->weak)
        return fcg_poison(ctx, FC_ERR_DTYPE, "bincount: x must be an array of integers that fit "
                          "int64, not %s%s", x->weak ? "a Python scalar of " : "",
                          fc_dtype_name(t));
    if (x->ndim != 1)
        return fcg_poison(ctx, FC_ERR_SHAPE, "bincount: x must be 1-d, not of shape %s",
                          fcg_shape_str(sx, x->ndim, x->shape));
    if (minlength < 0)
        return fcg_poison(ctx, FC_ERR_VALUE, "bincount: minlength must be non-negative, not %lld",
                          (long long)minlength);
    if (weights) {
        if (weights->ndim != 1 || weights->shape[0] != x->shape[0])
            return fcg_poison(ctx, FC_ERR_SHAPE, "bincount: weights (shape %s) must have x's "
                              "shape %s", fcg_shape_str(sw, weights->ndim, weights->shape),
                              fcg_shape_str(sx, x->ndim, x->shape));
        if (fcg_is_complex((fc_dtype)weights->dtype))
            return fcg_poison(ctx, FC_ERR_DTYPE, "bincount: weights must be real (they are cast "
                              "to float64), not %s", fc_dtype_name((fc_dtype)weights->dtype));
    }
    int64_t len = minlength;
    if (x->shape[0] > 0) {
        double lo, hi;
        fc_status st = extremes(ctx, "bincount", x, FC_I64, &lo, &hi);
        if (st != FC_OK) return fcg_poison_ctx(ctx, st);
        if (lo < 0)
            return fcg_poison(ctx, FC_ERR_VALUE, "bincount: x must not have negative values "
                              "(its minimum is %lld)", (long long)lo);
        if (hi + 1 > (double)len) len = (int64_t)hi + 1;
    }
    /* NumPy counts an empty x in intp, weights or not */
    fc_dtype out = weights && x->shape[0] > 0 ? FC_F64 : FC_I64;
    fc_scope *s = fc_scope_open(ctx);
    if (!s) return fcg_poison(ctx, FC_ERR_NOMEM, "bincount: out of memory");
    fc_array *vals = out == FC_F64 ? fc_cast(weights, FC_F64) : fc_scalar(ctx, FC_I64, 1);
    fc_array *r = fc_keep(fc_scatter_add(fc_zeros(ctx, out, FC_SHAPE(len)),
                                         t == FC_BOOL ? fc_cast(x, FC_U8) : x, vals, 0,
                                         FC_TAKE_CLIP));
    fc_scope_close(s);
    return fcg_ret(ctx, r ? r : &ctx->oom);
}

/* The range and the edges' dtype of np.histogram: *edge_dtype x's float dtype, float64 for
 * integers (np.result_type with float). */
static fc_status histogram_range(fc_ctx *ctx, const char *name, fc_array *x, int64_t bins,
                                 double *lo, double *hi, fc_dtype *edge_dtype) {
    fc_dtype t = (fc_dtype)x->dtype;
    if (t == FC_BOOL || fcg_is_complex(t) || x->weak)
        return fcg_error(ctx, FC_ERR_DTYPE, "%s: x must be an array of real numbers, not %s%s",
                         name, x->weak ? "a Python scalar of " : "", fc_dtype_name(t));
    if (bins < 1)
        return fcg_error(ctx, FC_ERR_VALUE, "%s: bins must be positive, not %lld", name,
                         (long long)bins);
    /* np.result_type(lo, hi, x) with float: bf16 (ml_dtypes) promotes to float64 there */
    *edge_dtype = fcg_is_float(t) && t != FC_BF16 ? t : FC_F64;
    if (isnan(*lo) && isnan(*hi)) {
        if (fcg_node_numel(x) == 0) {
            *lo = 0;
            *hi = 1;
        } else {
            fc_status st = extremes(ctx, name, x, FC_F64, lo, hi);
            if (st != FC_OK) return st;
        }
        if (!isfinite(*lo) || !isfinite(*hi))
            return fcg_error(ctx, FC_ERR_VALUE, "%s: autodetected range of [%g, %g] is not "
                             "finite", name, *lo, *hi);
    }
    if (!isfinite(*lo) || !isfinite(*hi))
        return fcg_error(ctx, FC_ERR_VALUE, "%s: supplied range of [%g, %g] is not finite", name,
                         *lo, *hi);
    if (*lo > *hi)
        return fcg_error(ctx, FC_ERR_VALUE, "%s: max must be larger than min in range parameter "
                         "(%g > %g)", name, *lo, *hi);
    if (*lo == *hi) {
        *lo -= 0.5;
        *hi += 0.5;
    }
    return FC_OK;
}

fc_array *fc_histogram_bin_edges(fc_array *x, int64_t bins, double lo, double hi) {
    fc_array *early;
    fc_ctx *ctx = fcg_begin("histogram_bin_edges", 1, &x, &early);
    if (!ctx || early) return early;
    fc_dtype et;
    fc_status st = histogram_range(ctx, "histogram_bin_edges", x, bins, &lo, &hi, &et);
    if (st != FC_OK) return fcg_poison_ctx(ctx, st);
    fc_scope *s = fc_scope_open(ctx);
    if (!s) return fcg_poison(ctx, FC_ERR_NOMEM, "histogram_bin_edges: out of memory");
    fc_array *r = fc_keep(fc_linspace(ctx, et, lo, hi, bins + 1, true));
    fc_scope_close(s);
    return fcg_ret(ctx, r ? r : &ctx->oom);
}

/* np.histogram's uniform-bins path, step for step: keep the values in [lo, hi]; the bin is
 * (x - lo) / (hi - lo) * bins in the edges' dtype, truncated; the last edge belongs to the
 * last bin; then one correction down (x below its bin's lower edge) and one up (x at or above
 * its upper edge, but not past the last bin), against the linspace edges. Values left out get
 * bin -1, which the scatter drops. */
fc_array *fc_histogram(fc_array *x, int64_t bins, double lo, double hi, fc_array *weights) {
    fc_array *early;
    fc_array *in[2] = {x, weights};
    fc_ctx *ctx = fcg_begin("histogram", weights ? 2 : 1, in, &early);
    if (!ctx || early) return early;
    char sx[200], sw[200];
    if (weights && (weights->ndim != x->ndim ||
                    memcmp(weights->shape, x->shape, (size_t)x->ndim * sizeof *x->shape) != 0))
        return fcg_poison(ctx, FC_ERR_SHAPE, "histogram: weights (shape %s) must have x's shape "
                          "%s", fcg_shape_str(sw, weights->ndim, weights->shape),
                          fcg_shape_str(sx, x->ndim, x->shape));
    if (weights && (weights->dtype == FC_BOOL || fcg_is_complex((fc_dtype)weights->dtype)))
        return fcg_poison(ctx, FC_ERR_DTYPE, "histogram: weights must be real numbers, not %s",
                          fc_dtype_name((fc_dtype)weights->dtype));
    fc_dtype et;
    fc_status st = histogram_range(ctx, "histogram", x, bins, &lo, &hi, &et);
    if (st != FC_OK) return fcg_poison_ctx(ctx, st);
    int64_t n = (int64_t)fcg_node_numel(x);
    fc_scope *s = fc_scope_open(ctx);
    if (!s) return fcg_poison(ctx, FC_ERR_NOMEM, "histogram: out of memory");
    fc_array *xf = fc_reshape(x, FC_SHAPE(n));
    fc_array *keep = fc_logical_and(fc_greater_equal(xf, fc_f64(ctx, lo)),
                                    fc_less_equal(xf, fc_f64(ctx, hi)));
    fc_array *xe = fc_cast(xf, et);
    fc_array *f = fc_mul(fc_div(fc_sub(xe, fc_f64(ctx, lo)), fc_f64(ctx, hi - lo)),
                         fc_i64(ctx, bins));
    fc_array *bin = fc_cast(f, FC_I64);
    fc_array *last = fc_i64(ctx, bins - 1);
    bin = fc_where(fc_equal(bin, fc_i64(ctx, bins)), last, bin);
    fc_array *edges = fc_linspace(ctx, et, lo, hi, bins + 1, true);
    bin = fc_where(fc_less(xe, fc_take(edges, bin, 0, FC_TAKE_CLIP)), fc_sub(bin, fc_i64(ctx, 1)),
                   bin);
    fc_array *up = fc_logical_and(
        fc_greater_equal(xe, fc_take(edges, fc_add(bin, fc_i64(ctx, 1)), 0, FC_TAKE_CLIP)),
        fc_not_equal(bin, last));
    bin = fc_where(up, fc_add(bin, fc_i64(ctx, 1)), bin);
    bin = fc_where(keep, bin, fc_i64(ctx, -1));
    fc_array *r;
    if (weights) {
        fc_array *sum = fc_scatter_add(fc_zeros(ctx, FC_F64, FC_SHAPE(bins)), bin,
                                       fc_cast(fc_reshape(weights, FC_SHAPE(n)), FC_F64), 0,
                                       FC_TAKE_DROP);
        r = fc_cast(sum, (fc_dtype)weights->dtype);
    } else {
        r = fc_scatter_add(fc_zeros(ctx, FC_I64, FC_SHAPE(bins)), bin, fc_scalar(ctx, FC_I64, 1),
                           0, FC_TAKE_DROP);
    }
    return fcg_scope_return(ctx, s, r);
}
