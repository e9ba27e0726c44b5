/*
 * graph/mask.c - boolean masks: flatnonzero, nonzero, argwhere, and the masks of fc_index and
 * fc_setitem (x[mask], x[mask] = values).
 *
 * A mask's selection has a data-dependent size, so it is known when the mask's count is:
 * these calls evaluate the mask and its count_nonzero at construction (a synchronising
 * evaluation, as CuPy's boolean indexing is) and build the rest with that size. The selection
 * itself is one COMPRESS node (graph/ops.def): a scan kernel keeps the running count of the
 * mask, which gives each selected element its place, and stores the element's value there
 * (flatnonzero: its flat position, from arange), a single pass over the mask and the values.
 */
#include "graph.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* The mask of a (its truth values, flattened), evaluated, and how many are true. */
static fc_status mask_count(fc_ctx *ctx, const char *name, fc_array *a, fc_array **mask,
                            int64_t *count) {
    fc_array *m = fc_keep(fc_cast(fc_reshape(a, FC_SHAPE((int64_t)fcg_node_numel(a))), FC_BOOL));
    fc_array *c = fc_keep(fc_count_nonzero(m, FC_ALL, false));
    fc_array *both[2] = {m, c};
    fc_status st = fc_eval(ctx, both, 2);
    if (st == FC_OK) st = fc_read(c, count, 0, 1);
    fcg_release(c);
    if (st != FC_OK) {
        char why[256];
        snprintf(why, sizeof why, "%s", fc_errmsg(ctx));
        fcg_release(m);
        return fcg_error(ctx, st, "%s: the result's size is the mask's count, which could not "
                         "be evaluated (%s)", name, why);
    }
    *mask = m;
    return FC_OK;
}

/* values[mask] of a mask evaluated by mask_count (1-D bool) and values of its length: one
 * COMPRESS node, a scan kernel that keeps a running count of the mask and stores each
 * selected value at its place. The mask is a value, so the kernel reads the same truth values
 * the count came from and writes exactly count elements. */
static fc_array *compress(fc_ctx *ctx, fc_array *mask, fc_array *values, int64_t count) {
    fcg_params p;
    memset(&p, 0, sizeof p);
    fc_array *in[2] = {mask, values};
    /* the running count in 32 bits where it fits: half the scan's shared memory and status */
    fc_dtype loop = mask->shape[0] <= INT32_MAX ? FC_I32 : FC_I64;
    return fcg_make(ctx, FCG_OP_COMPRESS, (fc_dtype)values->dtype, loop, false, 1, &count, 2, in,
                    &p);
}

/* The elements of `values` (of mask_of's shape; NULL: the flat positions, int64) where
 * mask_of is true, in row-major order: its mask and count evaluated, then one COMPRESS. */
static fc_array *select_by_mask(fc_ctx *ctx, const char *name, fc_array *mask_of,
                                fc_array *values) {
    int64_t count = 0, n = (int64_t)fcg_node_numel(mask_of);
    fc_scope *s = fc_scope_open(ctx);
    if (!s) return fcg_poison(ctx, FC_ERR_NOMEM, "%s: out of memory", name);
    fc_array *m = NULL, *r;
    fc_dtype t = values ? (fc_dtype)values->dtype : FC_I64;
    fc_status st = mask_count(ctx, name, mask_of, &m, &count);
    if (st != FC_OK)
        r = fcg_poison_ctx(ctx, st);
    else if (count == 0)
        r = fc_zeros(ctx, t, FC_SHAPE(0));
    else
        r = compress(ctx, m, values ? fc_reshape(values, FC_SHAPE(n))
                                    : fc_arange(ctx, FC_I64, 0, (double)n, 1), count);
    if (m) fcg_release(m);
    return fcg_scope_return(ctx, s, r);
}

fc_array *fc_flatnonzero(fc_array *a) {
    fc_array *early;
    fc_ctx *ctx = fcg_begin("flatnonzero", 1, &a, &early);
    if (!ctx || early) return early;
    return select_by_mask(ctx, "flatnonzero", a, NULL);
}

fc_array *fcg_mask_select(fc_ctx *ctx, const char *name, fc_array *a, fc_array *mask) {
    return select_by_mask(ctx, name, mask, a);
}

/* The coordinates along axis d of the flat positions p in an array of shape `shape`. */
static fc_array *unravel(fc_ctx *ctx, fc_array *p, int ndim, const int64_t *shape, int d) {
    int64_t stride[FC_MAX_DIMS];
    fcg_contiguous_strides(ndim, shape, stride);
    fc_array *c = fc_floordiv(p, fc_i64(ctx, stride[d]));
    return d > 0 ? fc_mod(c, fc_i64(ctx, shape[d])) : c;
}

fc_status fc_nonzero(fc_array *a, fc_array **out) {
    if (!out) return FC_ERR_NULL;
    fc_array *early;
    fc_ctx *ctx = fcg_begin("nonzero", 1, &a, &early);
    if (!ctx || early) {
        fc_status st = early ? early->status : FC_ERR_NULL;
        fcg_release(early);
        return st;
    }
    if (a->ndim == 0)
        return fcg_error(ctx, FC_ERR_VALUE, "nonzero: a 0-d array has no axes to give "
                         "coordinates along (NumPy 2 refuses it; use atleast_1d)");
    for (int d = 0; d < a->ndim; d++) out[d] = NULL;
    fc_scope *s = fc_scope_open(ctx);
    if (!s) return fcg_error(ctx, FC_ERR_NOMEM, "nonzero: out of memory");
    fc_array *p = fc_flatnonzero(a);
    fc_status st = fc_array_status(p);
    for (int d = 0; d < a->ndim && st == FC_OK; d++) {
        out[d] = fc_keep(unravel(ctx, p, a->ndim, a->shape, d));
        st = fc_array_status(out[d]);
    }
    fc_scope_close(s);
    for (int d = 0; d < a->ndim; d++) {
        if (!out[d]) continue;
        if (st != FC_OK) {
            fcg_release(out[d]);
            out[d] = NULL;
        } else {
            out[d] = fcg_ret(ctx, out[d]);
        }
    }
    return st;
}

fc_array *fc_argwhere(fc_array *a) {
    fc_array *early;
    fc_ctx *ctx = fcg_begin("argwhere", 1, &a, &early);
    if (!ctx || early) return early;
    fc_scope *s = fc_scope_open(ctx);
    if (!s) return fcg_poison(ctx, FC_ERR_NOMEM, "argwhere: out of memory");
    fc_array *p = fc_flatnonzero(a), *r;
    int64_t count = fc_array_size(p);
    if (fc_array_status(p) != FC_OK) {
        r = p;
    } else if (a->ndim == 0) { /* np.argwhere of a 0-d array: (count, 0) */
        r = fc_zeros(ctx, FC_I64, FC_SHAPE(count, 0));
    } else {
        fc_array *cols[FC_MAX_DIMS];
        for (int d = 0; d < a->ndim; d++) cols[d] = unravel(ctx, p, a->ndim, a->shape, d);
        r = fc_stack(ctx, cols, a->ndim, 1);
    }
    return fcg_scope_return(ctx, s, r);
}

/* The axis of `a` that entry i of idx starts at, counting what the entries consume (a boolean
 * array its number of axes); entries after an ellipsis count from the end. */
static int entry_axis(const fc_array *a, int n, const fc_idx *idx, int i) {
    int ell = -1;
    for (int j = 0; j < n; j++)
        if (idx[j].kind == FC_IDX_ELLIPSIS) ell = j;
    int used = 0;
    if (ell >= 0 && i > ell) {
        for (int j = i; j < n; j++) used += fcg_idx_axes(&idx[j]);
        return a->ndim - used;
    }
    for (int j = 0; j < i; j++) used += fcg_idx_axes(&idx[j]);
    return used;
}

int fcg_idx_axes(const fc_idx *e) {
    switch (e->kind) {
    case FC_IDX_SLICE:
    case FC_IDX_INT: return 1;
    case FC_IDX_ARRAY: return e->array && e->array->dtype == FC_BOOL ? e->array->ndim : 1;
    default: return 0;
    }
}

fc_status fcg_expand_masks(fc_ctx *ctx, const char *name, fc_array *a, int n, const fc_idx *idx,
                           fc_idx *out, int cap, int *nout) {
    char sm[200], sa[200];
    int k = 0;
    for (int i = 0; i < n; i++) {
        const fc_idx *e = &idx[i];
        if (e->kind != FC_IDX_ARRAY || !e->array || e->array->dtype != FC_BOOL) {
            if (k == cap) return fcg_error(ctx, FC_ERR_INDEX, "%s: too many index entries", name);
            out[k++] = *e;
            continue;
        }
        fc_array *m = e->array;
        if (m->ndim == 0)
            return fcg_error(ctx, FC_ERR_UNSUPPORTED, "%s: a 0-d boolean index (entry %d) is not "
                             "supported", name, i);
        int at = entry_axis(a, n, idx, i);
        if (at < 0 || at + m->ndim > a->ndim)
            return fcg_error(ctx, FC_ERR_INDEX, "%s: too many indices: the boolean index of entry "
                             "%d (shape %s) goes past the array's %d axes", name, i,
                             fcg_shape_str(sm, m->ndim, m->shape), a->ndim);
        for (int d = 0; d < m->ndim; d++)
            if (m->shape[d] != a->shape[at + d])
                return fcg_error(ctx, FC_ERR_INDEX, "%s: boolean index did not match indexed array "
                                 "along axis %d; size of axis is %lld but size of corresponding "
                                 "boolean axis is %lld (array %s, mask %s)", name, at + d,
                                 (long long)a->shape[at + d], (long long)m->shape[d],
                                 fcg_shape_str(sa, a->ndim, a->shape),
                                 fcg_shape_str(sm, m->ndim, m->shape));
        fc_array *coords[FC_MAX_DIMS];
        fc_status st = fc_nonzero(m, coords);
        if (st != FC_OK) return st;
        for (int d = 0; d < m->ndim; d++) {
            if (k == cap) return fcg_error(ctx, FC_ERR_INDEX, "%s: too many index entries", name);
            out[k++] = (fc_idx){FC_IDX_ARRAY, 0, 0, 0, coords[d]};
        }
    }
    *nout = k;
    return FC_OK;
}
