/*
 * graph/index.c - gathers: take (np.take), one op: the result is elementwise over its own
 * shape and the indexed input is read where each element needs it (codegen: an indexed load);
 * take_along_axis, composed from take and index arithmetic; searchsorted, one op whose
 * element is a binary search of indexed loads.
 */
#include "graph.h"

#include <string.h>

int64_t fcg_contiguous_strides(int ndim, const int64_t *shape, int64_t *stride) {
    int64_t size = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        stride[d] = size;
        size *= shape[d];
    }
    return size;
}

fc_array *fcg_axis_coord(fc_ctx *ctx, int ndim, int axis, int64_t extent) {
    fc_shape along = {ndim, {0}};
    for (int e = 0; e < ndim; e++) along.dim[e] = e == axis ? extent : 1;
    return fc_reshape(fc_arange(ctx, FC_I64, 0, (double)extent, 1), along);
}

fc_array *fc_take(fc_array *a, fc_array *indices, int axis, fc_take_mode mode) {
    fc_array *early;
    fc_ctx *ctx = fcg_begin("take", 2, (fc_array *[]){a, indices}, &early);
    if (!ctx || early) return early;
    char sh[200];
    if ((unsigned)mode > FC_TAKE_CLIP)
        return fcg_poison(ctx, FC_ERR_INVALID, "take: unknown mode %d", (int)mode);
    fc_dtype it = (fc_dtype)indices->dtype;
    if (!(it == FC_BOOL || fcg_is_sint(it) || fcg_is_uint(it)) || indices->weak)
        return fcg_poison(ctx, FC_ERR_DTYPE, "take: indices must be an integer array, not %s%s",
                          indices->weak ? "a Python scalar of " : "", fc_dtype_name(it));
    if (axis == FC_AXIS_NONE) {
        if (a->ndim != 1) {
            int64_t n = 1;
            for (int d = 0; d < a->ndim; d++) n *= a->shape[d]; /* a's size: no overflow */
            fc_scope *s = fc_scope_open(ctx);
            if (!s) return fcg_poison(ctx, FC_ERR_NOMEM, "take: out of memory");
            fc_array *r = fc_keep(fc_take(fc_reshape(a, FC_SHAPE(n)), indices, 0, mode));
            fc_scope_close(s);
            return fcg_ret(ctx, r ? r : &ctx->oom);
        }
        axis = 0;
    }
    uint32_t mask;
    fc_status st = fcg_axes_mask(ctx, "take", a->ndim, a->shape, FC_AXES(axis), &mask);
    if (st != FC_OK) return fcg_poison_ctx(ctx, st);
    int ax = 0;
    while (!(mask & (1u << ax))) ax++;
    int nd = a->ndim - 1 + indices->ndim;
    if (nd > FC_MAX_DIMS)
        return fcg_poison(ctx, FC_ERR_SHAPE, "take: the result would have %d axes (at most %d)",
                          nd, FC_MAX_DIMS);
    int64_t shape[FC_MAX_DIMS];
    int k = 0;
    for (int d = 0; d < ax; d++) shape[k++] = a->shape[d];
    for (int d = 0; d < indices->ndim; d++) shape[k++] = indices->shape[d];
    for (int d = ax + 1; d < a->ndim; d++) shape[k++] = a->shape[d];
    if (a->shape[ax] == 0 && fcg_node_numel(indices) > 0)
        return fcg_poison(ctx, FC_ERR_VALUE, "take: cannot take %lld elements from the empty "
                          "axis %d of shape %s", (long long)fcg_node_numel(indices), ax,
                          fcg_shape_str(sh, a->ndim, a->shape));
    fcg_params p;
    memset(&p, 0, sizeof p);
    p.axis = ax;
    p.mode = (uint8_t)mode;
    return fcg_make(ctx, FCG_OP_TAKE, (fc_dtype)a->dtype, (fc_dtype)a->dtype, false, nd, shape, 2,
                    (fc_array *[]){a, indices}, &p);
}

/* np.take_along_axis as one take from the flattened array: the flat position of each result
 * element is its coordinates (broadcast into a) times a's strides, the coordinate along axis
 * replaced by the index there. The index is first normalised by taking it from arange(n) in
 * raise mode, so a negative one counts from the end and one out of range fails as take's do;
 * the flat positions are then in range by construction (clip mode: no check left to make).
 * Every piece is elementwise or a gather, so the whole is one kernel's index arithmetic. */
fc_array *fc_take_along_axis(fc_array *a, fc_array *indices, int axis) {
    fc_array *early;
    fc_ctx *ctx = fcg_begin("take_along_axis", 2, (fc_array *[]){a, indices}, &early);
    if (!ctx || early) return early;
    char sa[200], si[200];
    fc_dtype it = (fc_dtype)indices->dtype;
    if (!(fcg_is_sint(it) || fcg_is_uint(it)) || indices->weak)
        return fcg_poison(ctx, FC_ERR_DTYPE,
                          "take_along_axis: indices must be an integer array, not %s%s",
                          indices->weak ? "a Python scalar of " : "", fc_dtype_name(it));
    if (axis == FC_AXIS_NONE) {
        if (indices->ndim != 1)
            return fcg_poison(ctx, FC_ERR_SHAPE, "take_along_axis: with axis None, indices must "
                              "be 1-d, not %d-d", indices->ndim);
        int64_t n = fcg_node_numel(a);
        fc_scope *sc = fc_scope_open(ctx);
        if (!sc) return fcg_poison(ctx, FC_ERR_NOMEM, "take_along_axis: out of memory");
        fc_array *r = fc_keep(fc_take_along_axis(fc_reshape(a, FC_SHAPE(n)), indices, 0));
        fc_scope_close(sc);
        return fcg_ret(ctx, r ? r : &ctx->oom);
    }
    if (a->ndim != indices->ndim)
        return fcg_poison(ctx, FC_ERR_SHAPE, "take_along_axis: indices (shape %s) and the array "
                          "(shape %s) must have the same number of axes",
                          fcg_shape_str(si, indices->ndim, indices->shape),
                          fcg_shape_str(sa, a->ndim, a->shape));
    uint32_t mask;
    fc_status st = fcg_axes_mask(ctx, "take_along_axis", a->ndim, a->shape, FC_AXES(axis), &mask);
    if (st != FC_OK) return fcg_poison_ctx(ctx, st);
    int ax = 0;
    while (!(mask & (1u << ax))) ax++;
    /* the result's shape: the two broadcast together on every other axis */
    fc_shape shape = {a->ndim, {0}};
    int64_t numel = 1;
    for (int d = 0; d < a->ndim; d++) {
        int64_t x = a->shape[d], y = indices->shape[d];
        if (d != ax && x != y && x != 1 && y != 1)
            return fcg_poison(ctx, FC_ERR_SHAPE, "take_along_axis: indices (shape %s) do not "
                              "broadcast against the array (shape %s) outside axis %d",
                              fcg_shape_str(si, indices->ndim, indices->shape),
                              fcg_shape_str(sa, a->ndim, a->shape), ax);
        shape.dim[d] = d == ax ? y : (x == 1 ? y : x);
        numel *= shape.dim[d];
    }
    int64_t n = a->shape[ax];
    if (n == 0 && numel > 0)
        return fcg_poison(ctx, FC_ERR_VALUE, "take_along_axis: cannot take elements from the "
                          "empty axis %d of shape %s", ax, fcg_shape_str(sa, a->ndim, a->shape));
    fc_scope *sc = fc_scope_open(ctx);
    if (!sc) return fcg_poison(ctx, FC_ERR_NOMEM, "take_along_axis: out of memory");
    int64_t stride[FC_MAX_DIMS], size = fcg_contiguous_strides(a->ndim, a->shape, stride);
    /* the index along axis, in [0, n), times the axis' stride */
    fc_array *pos = fc_take(fc_arange(ctx, FC_I64, 0, (double)n, 1), indices, 0, FC_TAKE_RAISE);
    fc_array *flat = fc_broadcast_to(fc_mul(pos, fc_scalar(ctx, FC_I64, (double)stride[ax])),
                                     shape);
    for (int d = 0; d < a->ndim; d++) {
        if (d == ax || a->shape[d] == 1) continue; /* a broadcast axis adds nothing */
        fc_array *coord = fcg_axis_coord(ctx, a->ndim, d, shape.dim[d]);
        flat = fc_add(flat, fc_mul(coord, fc_scalar(ctx, FC_I64, (double)stride[d])));
    }
    fc_array *r = fc_keep(fc_take(fc_reshape(a, FC_SHAPE(size)), flat, 0, FC_TAKE_CLIP));
    fc_scope_close(sc);
    return fcg_ret(ctx, r ? r : &ctx->oom);
}

fc_array *fc_searchsorted(fc_array *a, fc_array *v, fc_side side) {
    fc_array *early;
    fc_ctx *ctx = fcg_begin("searchsorted", 2, (fc_array *[]){a, v}, &early);
    if (!ctx || early) return early;
    char sh[200];
    if ((unsigned)side > FC_SIDE_RIGHT)
        return fcg_poison(ctx, FC_ERR_INVALID, "searchsorted: unknown side %d", (int)side);
    if (a->ndim != 1)
        return fcg_poison(ctx, FC_ERR_SHAPE, "searchsorted: the sorted array must be 1-d, not "
                          "of shape %s", fcg_shape_str(sh, a->ndim, a->shape));
    fc_array *in[2] = {a, v};
    fc_dtype out, loop;
    bool weak;
    fc_status st = fcg_ew_types(ctx, FCG_OP_LESS, 2, in, FC_BOOL, &out, &loop, &weak);
    if (st != FC_OK) return fcg_poison_ctx(ctx, st);
    if (fcg_is_complex(loop))
        return fcg_poison(ctx, FC_ERR_UNSUPPORTED, "searchsorted: complex values (%s and %s) are "
                          "not supported", fc_dtype_name((fc_dtype)a->dtype),
                          fc_dtype_name((fc_dtype)v->dtype));
    fcg_weak_fix fix;
    fcg_weak_ints(FCG_OP_LESS, 2, in, loop, &fix);
    if (fix.settled >= 0 || fix.use[1] != FCG_PYINT_KEEP)
        return fcg_poison(ctx, FC_ERR_VALUE, "searchsorted: the Python integer is out of bounds "
                          "for %s", fc_dtype_name((fc_dtype)a->dtype));
    fcg_params p;
    memset(&p, 0, sizeof p);
    p.mode = (uint8_t)side;
    return fcg_make(ctx, FCG_OP_SEARCHSORTED, FC_I64, loop, false, v->ndim, v->shape, 2, in, &p);
}
