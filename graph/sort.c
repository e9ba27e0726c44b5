/*
 * graph/sort.c - np.sort and np.argsort: one library node each (SORT, ARGSORT) that sorts
 * the rows of its input's last axis. Any other axis is moved last around the node and moved
 * back after it (a stored transpose on the GPU, since a library call reads dense rows);
 * axis = None sorts the flattened array, as NumPy does.
 */
#include "graph.h"

#include <string.h>

static fc_array *sort_node(fcg_op op, fc_array *a, int axis) {
    const char *name = fcg_ops[op].pyname;
    fc_array *early;
    fc_ctx *ctx = fcg_begin(name, 1, &a, &early);
    if (!ctx || early) return early;
    if (a->weak)
        return fcg_poison(ctx, FC_ERR_DTYPE, "%s: a Python scalar has no axis to sort", name);
    fc_scope *scope = fc_scope_open(ctx);
    if (!scope) return fcg_poison(ctx, FC_ERR_NOMEM, "%s: out of memory", name);
    fc_array *x = a;
    if (axis == FC_AXIS_NONE || (op == FCG_OP_ARGSORT && a->ndim == 0)) {
        /* NumPy's argsort takes a 0-d array as shape [1] (np.argsort(x, axis=-1) is [0]) */
        int64_t n = (int64_t)fcg_node_numel(a); /* a's size: no overflow */
        x = fc_reshape(a, FC_SHAPE(n));
        if (x->status != FC_OK) return fcg_scope_return(ctx, scope, x);
        if (axis == FC_AXIS_NONE) axis = 0;
    }
    if (axis != FC_AXIS_NONE) {
        char sh[200];
        int xnd = x->ndim; /* x may be a reshape the scope holds */
        if (axis < -xnd || axis >= xnd) {
            fc_scope_close(scope);
            return fcg_poison(ctx, FC_ERR_AXIS, "%s: axis %d is out of bounds for an array of "
                              "dimension %d (%s %s)", name, axis, xnd,
                              fcg_shape_str(sh, a->ndim, a->shape),
                              fc_dtype_name((fc_dtype)a->dtype));
        }
        if (axis < 0) axis += x->ndim;
    }
    int nd = x->ndim, last = nd - 1;
    fc_axes perm = {nd, {0}};
    for (int d = 0; d < nd; d++) perm.axis[d] = d;
    perm.axis[axis] = last; /* a swap of axis and the last one is its own inverse */
    perm.axis[last] = axis;
    if (axis != last) x = fc_permute(x, perm);
    fc_array *r = x;
    if (x->status == FC_OK) {
        fcg_params p;
        memset(&p, 0, sizeof p);
        p.axis = last;
        fc_dtype t = op == FCG_OP_SORT ? (fc_dtype)x->dtype : FC_I64;
        r = fcg_make(ctx, op, t, (fc_dtype)x->dtype, false, nd, x->shape, 1, &x, &p);
        if (r->status == FC_OK && axis != last) r = fc_permute(r, perm);
    }
    return fcg_scope_return(ctx, scope, r);
}

fc_array *fc_sort(fc_array *a, int axis) { return sort_node(FCG_OP_SORT, a, axis); }

fc_array *fc_argsort(fc_array *a, int axis) { return sort_node(FCG_OP_ARGSORT, a, axis); }
