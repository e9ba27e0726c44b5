/*
 * graph/index.c - gathers: take (np.take). The result is elementwise over its own shape; the
 * indexed input is read where each element needs it (codegen: an indexed load).
 */
#include "graph.h"

#include <string.h>

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
