/*
 * graph/views.c - shape ops: reshape, permute, slices, broadcast, pad, concatenate, matmul.
 *
 * Canonical forms keep the graph (and so its hash and printed text) small and unique:
 * identity views return their input; expand_dims, squeeze and integer indices become RESHAPE;
 * flip becomes SLICE; chains of reshapes, permutes and slices fold into one node.
 */
#include "graph.h"

#include <stdio.h>
#include <string.h>

fc_status fcg_axes_mask(fc_ctx *ctx, const char *opname, int ndim, const int64_t *shape,
                        fc_axes axes, uint32_t *mask) {
    char sh[200];
    if (axes.n < 0) {
        *mask = ndim ? (uint32_t)((1ull << ndim) - 1) : 0;
        return FC_OK;
    }
    if (axes.n > FC_MAX_DIMS)
        return fcg_error(ctx, FC_ERR_AXIS, "%s: %d axes given for shape %s (at most %d)", opname,
                         axes.n, fcg_shape_str(sh, ndim, shape), FC_MAX_DIMS);
    uint32_t m = 0;
    for (int i = 0; i < axes.n; i++) {
        int ax = axes.axis[i];
        if (ax < -ndim || ax >= ndim)
            return fcg_error(ctx, FC_ERR_AXIS, "%s: axis %d is out of bounds for shape %s (%d "
                             "dimension%s)", opname, ax, fcg_shape_str(sh, ndim, shape), ndim,
                             ndim == 1 ? "" : "s");
        if (ax < 0) ax += ndim;
        if (m & (1u << ax))
            return fcg_error(ctx, FC_ERR_AXIS, "%s: axis %d is repeated for shape %s", opname,
                             axes.axis[i], fcg_shape_str(sh, ndim, shape));
        m |= 1u << ax;
    }
    *mask = m;
    return FC_OK;
}

static fc_array *same(fc_ctx *ctx, fc_array *a) {
    fcg_retain(a);
    return fcg_ret(ctx, a);
}

/* A view node (always strongly typed) over one input. */
static fc_array *view(fc_ctx *ctx, fcg_op op, fc_array *a, int ndim, const int64_t *shape,
                      const fcg_params *p) {
    return fcg_make(ctx, op, (fc_dtype)a->dtype, (fc_dtype)a->dtype, false, ndim, shape, 1, &a, p);
}

/* ---- reshape ---------------------------------------------------------------------------- */

static fc_array *reshape_to(fc_ctx *ctx, fc_array *a, int ndim, const int64_t *shape) {
    if (ndim == a->ndim && memcmp(shape, a->shape, (size_t)ndim * sizeof *shape) == 0)
        return same(ctx, a);
    if (a->op == FCG_OP_RESHAPE) a = a->in[0]; /* reshape of a reshape is one reshape */
    if (ndim == a->ndim && memcmp(shape, a->shape, (size_t)ndim * sizeof *shape) == 0)
        return same(ctx, a);
    return view(ctx, FCG_OP_RESHAPE, a, ndim, shape, NULL);
}

fc_array *fc_reshape(fc_array *a, fc_shape shape) {
    fc_array *early;
    fc_ctx *ctx = fcg_begin("reshape", 1, &a, &early);
    if (!ctx || early) return early;
    char s1[200], s2[200];
    if (shape.ndim < 0 || shape.ndim > FC_MAX_DIMS)
        return fcg_poison(ctx, FC_ERR_SHAPE, "reshape: %d dimensions (at most %d)", shape.ndim,
                          FC_MAX_DIMS);
    int infer = -1;
    int64_t known = 1, size = (int64_t)fcg_node_numel(a);
    for (int i = 0; i < shape.ndim; i++) {
        if (shape.dim[i] == -1 && infer < 0) {
            infer = i;
        } else if (shape.dim[i] < 0) {
            return fcg_poison(ctx, FC_ERR_SHAPE, "reshape: bad target shape %s for %s (%s)",
                              fcg_shape_str(s1, shape.ndim, shape.dim),
                              fcg_shape_str(s2, a->ndim, a->shape),
                              fc_dtype_name((fc_dtype)a->dtype));
        } else if (__builtin_mul_overflow(known, shape.dim[i], &known)) {
            goto mismatch; /* no array has that many elements */
        }
    }
    if (infer >= 0) {
        if (known == 0 || size % known != 0) goto mismatch;
        shape.dim[infer] = size / known;
    } else if (known != size) {
        goto mismatch;
    }
    return reshape_to(ctx, a, shape.ndim, shape.dim);
mismatch:
    return fcg_poison(ctx, FC_ERR_SHAPE, "reshape: cannot reshape %s (%s, %lld elements) into %s",
                      fcg_shape_str(s2, a->ndim, a->shape), fc_dtype_name((fc_dtype)a->dtype),
                      (long long)size, fcg_shape_str(s1, shape.ndim, shape.dim));
}

fc_array *fc_expand_dims(fc_array *a, int axis) {
    fc_array *early;
    fc_ctx *ctx = fcg_begin("expand_dims", 1, &a, &early);
    if (!ctx || early) return early;
    int nd = a->ndim + 1;
    if (nd > FC_MAX_DIMS || axis < -nd || axis >= nd)
    {
        char sh[200];
        return fcg_poison(ctx, FC_ERR_AXIS,
                          "expand_dims: axis %d is out of bounds for shape %s (the result has %d "
                          "dimensions)", axis, fcg_shape_str(sh, a->ndim, a->shape), nd);
    }
    if (axis < 0) axis += nd;
    int64_t shape[FC_MAX_DIMS];
    for (int d = 0, k = 0; d < nd; d++) shape[d] = d == axis ? 1 : a->shape[k++];
    return reshape_to(ctx, a, nd, shape);
}

fc_array *fc_squeeze(fc_array *a, fc_axes axes) {
    fc_array *early;
    fc_ctx *ctx = fcg_begin("squeeze", 1, &a, &early);
    if (!ctx || early) return early;
    uint32_t mask = 0;
    if (axes.n < 0) {
        for (int d = 0; d < a->ndim; d++)
            if (a->shape[d] == 1) mask |= 1u << d;
    } else {
        fc_status st = fcg_axes_mask(ctx, "squeeze", a->ndim, a->shape, axes, &mask);
        if (st != FC_OK) return fcg_poison_ctx(ctx, st);
        for (int d = 0; d < a->ndim; d++)
            if ((mask & (1u << d)) && a->shape[d] != 1) {
                char sh[200];
                return fcg_poison(ctx, FC_ERR_AXIS,
                                  "squeeze: axis %d of shape %s has extent %lld, not 1", d,
                                  fcg_shape_str(sh, a->ndim, a->shape), (long long)a->shape[d]);
            }
    }
    int64_t shape[FC_MAX_DIMS];
    int nd = 0;
    for (int d = 0; d < a->ndim; d++)
        if (!(mask & (1u << d))) shape[nd++] = a->shape[d];
    return reshape_to(ctx, a, nd, shape);
}

/* ---- permute ---------------------------------------------------------------------------- */

fc_array *fc_permute(fc_array *a, fc_axes perm) {
    fc_array *early;
    fc_ctx *ctx = fcg_begin("transpose", 1, &a, &early);
    if (!ctx || early) return early;
    char sh[200];
    if (perm.n != a->ndim)
        return fcg_poison(ctx, FC_ERR_AXIS, "transpose: %d axes given for shape %s", perm.n,
                          fcg_shape_str(sh, a->ndim, a->shape));
    uint32_t mask;
    fc_status st = fcg_axes_mask(ctx, "transpose", a->ndim, a->shape, perm, &mask);
    if (st != FC_OK) return fcg_poison_ctx(ctx, st);
    fcg_params p;
    memset(&p, 0, sizeof p);
    int64_t shape[FC_MAX_DIMS];
    bool identity = true;
    for (int i = 0; i < a->ndim; i++) {
        int ax = perm.axis[i] < 0 ? perm.axis[i] + a->ndim : perm.axis[i];
        p.a[i] = ax;
        shape[i] = a->shape[ax];
        identity &= ax == i;
    }
    if (identity) return same(ctx, a);
    if (a->op == FCG_OP_PERMUTE) { /* compose: out i <- a's axis p.a[i] <- input axis */
        fc_array *src = a->in[0];
        identity = true;
        for (int i = 0; i < a->ndim; i++) {
            p.a[i] = a->p.a[p.a[i]];
            identity &= p.a[i] == i;
        }
        if (identity) return same(ctx, src);
        a = src;
    }
    return view(ctx, FCG_OP_PERMUTE, a, a->ndim, shape, &p);
}

fc_array *fc_transpose(fc_array *a) {
    fc_axes perm = {a ? a->ndim : 0, {0}};
    for (int i = 0; i < perm.n; i++) perm.axis[i] = perm.n - 1 - i;
    return fc_permute(a, perm);
}

/* ---- broadcast -------------------------------------------------------------------------- */

fc_array *fc_broadcast_to(fc_array *a, fc_shape shape) {
    fc_array *early;
    fc_ctx *ctx = fcg_begin("broadcast_to", 1, &a, &early);
    if (!ctx || early) return early;
    char s1[200], s2[200];
    bool ok = shape.ndim >= a->ndim && shape.ndim <= FC_MAX_DIMS;
    for (int d = 0; ok && d < shape.ndim; d++) {
        ok = shape.dim[d] >= 0;
        int k = d - (shape.ndim - a->ndim);
        if (ok && k >= 0) ok = a->shape[k] == shape.dim[d] || a->shape[k] == 1;
    }
    if (!ok)
        return fcg_poison(ctx, FC_ERR_SHAPE, "broadcast_to: cannot broadcast %s (%s) to %s",
                          fcg_shape_str(s1, a->ndim, a->shape), fc_dtype_name((fc_dtype)a->dtype),
                          fcg_shape_str(s2, shape.ndim, shape.dim));
    if (shape.ndim == a->ndim && memcmp(shape.dim, a->shape, (size_t)a->ndim * 8) == 0)
        return same(ctx, a);
    return view(ctx, FCG_OP_BROADCAST, a, shape.ndim, shape.dim, NULL);
}

/* ---- slices and indexing ---------------------------------------------------------------- */

/* Python's slice.indices(len) and the resulting length. */
static fc_status slice_bounds(fc_ctx *ctx, int64_t len, const fc_idx *ix, int64_t *start,
                              int64_t *step, int64_t *count) {
    int64_t st = ix->step == FC_NIL ? 1 : ix->step;
    if (st == 0) return fcg_error(ctx, FC_ERR_INDEX, "index: slice step cannot be zero");
    int64_t lo = st > 0 ? 0 : -1, hi = st > 0 ? len : len - 1;
    int64_t b, e;
    if (ix->start == FC_NIL) {
        b = st > 0 ? 0 : len - 1;
    } else {
        b = ix->start < 0 ? ix->start + len : ix->start;
        b = b < lo ? lo : b > hi ? hi : b;
    }
    if (ix->stop == FC_NIL) {
        e = st > 0 ? len : -1;
    } else {
        e = ix->stop < 0 ? ix->stop + len : ix->stop;
        e = e < lo ? lo : e > hi ? hi : e;
    }
    /* ceil(distance / |step|) without forming distance + |step|, which overflows for steps
     * near 2^63; |INT64_MIN| is taken in unsigned arithmetic. */
    int64_t n = 0;
    if (st > 0 && e > b) n = (int64_t)((uint64_t)(e - b - 1) / (uint64_t)st + 1);
    if (st < 0 && b > e) n = (int64_t)((uint64_t)(b - e - 1) / (0 - (uint64_t)st) + 1);
    *start = b;
    *step = st;
    *count = n;
    return FC_OK;
}

/* A SLICE of a (same rank) with per-dim start/step/count; identity dims are canonical (0, 1). */
static fc_array *slice_node(fc_ctx *ctx, fc_array *a, const int64_t *start, const int64_t *step,
                            const int64_t *count) {
    fcg_params p;
    memset(&p, 0, sizeof p);
    bool identity = true;
    for (int d = 0; d < a->ndim; d++) {
        p.a[d] = count[d] <= 1 ? (count[d] == 1 ? start[d] : 0) : start[d];
        p.b[d] = count[d] <= 1 ? 1 : step[d];
        identity &= count[d] == a->shape[d] && p.a[d] == 0 && p.b[d] == 1;
    }
    if (identity) return same(ctx, a);
    if (a->op == FCG_OP_SLICE) { /* a slice of a slice is one slice */
        fc_array *src = a->in[0];
        identity = true;
        for (int d = 0; d < a->ndim; d++) {
            /* an empty range is canonical (0, 1) whatever the outer slice's start */
            p.a[d] = count[d] == 0 ? 0 : a->p.a[d] + p.a[d] * a->p.b[d];
            p.b[d] = count[d] <= 1 ? 1 : p.b[d] * a->p.b[d];
            identity &= count[d] == src->shape[d] && p.a[d] == 0 && p.b[d] == 1;
        }
        if (identity) return same(ctx, src);
        a = src;
    }
    return view(ctx, FCG_OP_SLICE, a, a->ndim, count, &p);
}

/* Advanced indexing (integer arrays among the entries), composed: the basic entries, with a
 * full slice where each array stands, give a view b; the result is one take from b flattened,
 * each element's flat position being its coordinates along b's other axes and its indices
 * along the arrays' axes, times b's strides. An index is normalised (negative from the end,
 * out of range failing the evaluation) by taking it from arange(n) in raise mode, so the flat
 * positions are in range by construction. */
static fc_array *index_advanced(fc_ctx *ctx, fc_array *a, int n, const fc_idx *idx) {
    char sh[200];
    fc_array *arr[FC_MAX_DIMS];
    int k = 0, consumed = 0;
    for (int i = 0; i < n; i++) {
        if (idx[i].kind == FC_IDX_ARRAY) {
            fc_array *x = idx[i].array;
            if (!x) return fcg_poison(ctx, FC_ERR_NULL, "index: entry %d has no array", i);
            if (x->ctx != ctx)
                return fcg_poison(ctx, FC_ERR_INVALID, "index: the array of entry %d belongs to "
                                  "another context", i);
            if (x->status != FC_OK) return fcg_poison_ctx(ctx, x->status);
            fc_dtype t = (fc_dtype)x->dtype;
            if (t == FC_BOOL)
                return fcg_poison(ctx, FC_ERR_UNSUPPORTED, "index: entry %d is a boolean array "
                                  "(mask indexing is not supported; where() selects by a "
                                  "mask)", i);
            if (!fcg_is_sint(t) && !fcg_is_uint(t))
                return fcg_poison(ctx, FC_ERR_INDEX, "index: arrays used as indices must be "
                                  "of integer type, entry %d is %s", i, fc_dtype_name(t));
        }
        if (idx[i].kind == FC_IDX_SLICE || idx[i].kind == FC_IDX_INT ||
            idx[i].kind == FC_IDX_ARRAY)
            consumed++;
    }
    fc_scope *sc = fc_scope_open(ctx);
    if (!sc) return fcg_poison(ctx, FC_ERR_NOMEM, "index: out of memory");
    fc_array *r = NULL;
    fc_idx basic[2 * FC_MAX_DIMS + 8];
    if (n > (int)(sizeof basic / sizeof basic[0])) {
        r = fcg_poison(ctx, FC_ERR_INDEX, "index: %d entries are too many", n);
        goto done;
    }
    /* b's axis of each array entry (slices, arrays and None make an axis of b, the ellipsis
     * the axes no entry names). Beside arrays, an integer is an index array too (0-d), as in
     * NumPy: it takes part in deciding where the broadcast axes go. */
    int pos[FC_MAX_DIMS], axis = 0, a_axis = 0;
    for (int i = 0; i < n; i++) {
        basic[i] = idx[i];
        switch (idx[i].kind) {
        case FC_IDX_INT: {
            int64_t e = a_axis < a->ndim ? a->shape[a_axis] : 0, v = idx[i].start;
            if (consumed <= a->ndim && (v < -e || v >= e)) {
                r = fcg_poison(ctx, FC_ERR_INDEX, "index: index %lld is out of bounds for axis "
                               "%d of shape %s", (long long)v, a_axis,
                               fcg_shape_str(sh, a->ndim, a->shape));
                goto done;
            }
            if (k == FC_MAX_DIMS) break;
            arr[k] = fc_scalar(ctx, FC_I64, (double)v);
        } /* fall through */
        case FC_IDX_ARRAY:
            if (k == FC_MAX_DIMS) {
                r = fcg_poison(ctx, FC_ERR_INDEX, "index: too many index arrays");
                goto done;
            }
            if (idx[i].kind == FC_IDX_ARRAY) arr[k] = idx[i].array;
            pos[k++] = axis++;
            a_axis++;
            basic[i] = (fc_idx){FC_IDX_SLICE, FC_NIL, FC_NIL, FC_NIL, NULL};
            break;
        case FC_IDX_SLICE: axis++, a_axis++; break;
        case FC_IDX_NEWAXIS: axis++; break;
        case FC_IDX_ELLIPSIS: {
            int m = a->ndim - consumed > 0 ? a->ndim - consumed : 0;
            axis += m;
            a_axis += m;
            break;
        }
        default: break;
        }
    }
    fc_array *b = fc_index(a, n, basic);
    if (b->status != FC_OK) {
        r = b;
        goto done;
    }
    int bnd = b->ndim, B_nd;
    int64_t B[FC_MAX_DIMS];
    fc_status st = fcg_broadcast_shapes(ctx, "index", k, arr, &B_nd, B);
    if (st != FC_OK) {
        r = fcg_poison_ctx(ctx, st);
        goto done;
    }
    bool adjacent = pos[k - 1] - pos[0] == k - 1;
    int first = adjacent ? pos[0] : 0; /* where the broadcast axes go in the result */
    fc_shape res = {0, {0}};
    int where[FC_MAX_DIMS];            /* the result axis of each of b's other axes */
    if (bnd - k + B_nd > FC_MAX_DIMS) {
        r = fcg_poison(ctx, FC_ERR_INDEX, "index: the result would have %d dimensions (at most "
                       "%d)", bnd - k + B_nd, FC_MAX_DIMS);
        goto done;
    }
    res.ndim = bnd - k + B_nd;
    for (int d = 0; d < B_nd; d++) res.dim[first + d] = B[d];
    for (int d = 0, other = 0; d < bnd; d++) {
        bool indexed = false;
        for (int q = 0; q < k; q++) indexed |= pos[q] == d;
        if (indexed) continue;
        where[d] = adjacent ? (d < pos[0] ? d : d - k + B_nd) : B_nd + other;
        other++;
        res.dim[where[d]] = b->shape[d];
    }
    int64_t numel = 1, stride[FC_MAX_DIMS], size = fcg_contiguous_strides(bnd, b->shape, stride);
    for (int d = 0; d < res.ndim; d++) numel *= res.dim[d];
    for (int q = 0; q < k && numel > 0; q++)
        if (b->shape[pos[q]] == 0) {
            r = fcg_poison(ctx, FC_ERR_INDEX, "index: cannot index the empty axis %d of shape %s "
                           "by an array", pos[q], fcg_shape_str(sh, bnd, b->shape));
            goto done;
        }
    fc_array *flat = fc_scalar(ctx, FC_I64, 0);
    fc_shape bshape = {B_nd, {0}}, along = {res.ndim, {0}};
    for (int d = 0; d < B_nd; d++) bshape.dim[d] = B[d];
    for (int d = 0; d < res.ndim; d++)
        along.dim[d] = d >= first && d < first + B_nd ? B[d - first] : 1;
    for (int q = 0; q < k; q++) { /* the index arrays, over the broadcast axes */
        fc_array *p = fc_take(fc_arange(ctx, FC_I64, 0, (double)b->shape[pos[q]], 1), arr[q], 0,
                              FC_TAKE_RAISE);
        p = fc_broadcast_to(fc_mul(p, fc_scalar(ctx, FC_I64, (double)stride[pos[q]])), bshape);
        flat = fc_add(flat, fc_reshape(p, along));
    }
    for (int d = 0; d < bnd; d++) { /* b's other axes, each along its own result axis */
        bool indexed = false;
        for (int q = 0; q < k; q++) indexed |= pos[q] == d;
        if (indexed || b->shape[d] == 1) continue;
        fc_array *c = fcg_axis_coord(ctx, res.ndim, where[d], b->shape[d]);
        flat = fc_add(flat, fc_mul(c, fc_scalar(ctx, FC_I64, (double)stride[d])));
    }
    r = fc_take(fc_reshape(b, FC_SHAPE(size)), fc_broadcast_to(flat, res), 0, FC_TAKE_CLIP);
done:
    return fcg_scope_return(ctx, sc, r);
}

fc_array *fc_index(fc_array *a, int n, const fc_idx *idx) {
    bool masks = false, arrays = false;
    for (int i = 0; i < n && idx && a; i++)
        if (idx[i].kind == FC_IDX_ARRAY) {
            arrays = true;
            masks |= idx[i].array && idx[i].array->dtype == FC_BOOL;
        }
    if (arrays) {
        fc_array *early;
        fc_ctx *ctx = fcg_begin("index", 1, &a, &early);
        if (!ctx || early) return early;
        if (!masks) return index_advanced(ctx, a, n, idx);
        /* a boolean array is its nonzero() coordinates (NumPy's definition) */
        for (int i = 0; i < n; i++)
            if (idx[i].kind == FC_IDX_ARRAY && idx[i].array && idx[i].array->status != FC_OK)
                return fcg_poison_ctx(ctx, idx[i].array->status);
        fc_array *m0 = n == 1 && idx[0].kind == FC_IDX_ARRAY ? idx[0].array : NULL;
        if (m0 && m0->dtype == FC_BOOL && m0->ctx == ctx && m0->ndim > 0 && m0->ndim == a->ndim &&
            memcmp(m0->shape, a->shape, sizeof(int64_t) * (size_t)a->ndim) == 0)
            return fcg_mask_select(ctx, "index", a, m0); /* x[x > 0]: one compaction kernel */
        fc_scope *sc = fc_scope_open(ctx);
        if (!sc) return fcg_poison(ctx, FC_ERR_NOMEM, "index: out of memory");
        fc_idx ex[2 * FC_MAX_DIMS + 8];
        int m = 0;
        fc_status st = fcg_expand_masks(ctx, "index", a, n, idx, ex,
                                        (int)(sizeof ex / sizeof ex[0]), &m);
        fc_array *r = fc_keep(st == FC_OK ? index_advanced(ctx, a, m, ex) : fcg_poison_ctx(ctx, st));
        fc_scope_close(sc);
        return fcg_ret(ctx, r ? r : &ctx->oom);
    }
    fc_array *early;
    fc_ctx *ctx = fcg_begin("index", 1, &a, &early);
    if (!ctx || early) return early;
    char sh[200];
    if (n < 0 || (n > 0 && !idx)) return fcg_poison(ctx, FC_ERR_NULL, "index: no index entries");
    int consumed = 0, ellipses = 0;
    for (int i = 0; i < n; i++) {
        switch (idx[i].kind) {
        case FC_IDX_SLICE: case FC_IDX_INT: consumed++; break;
        case FC_IDX_NEWAXIS: break;
        case FC_IDX_ELLIPSIS: ellipses++; break;
        default: return fcg_poison(ctx, FC_ERR_INDEX, "index: entry %d has kind %d", i,
                                   (int)idx[i].kind);
        }
    }
    if (ellipses > 1)
        return fcg_poison(ctx, FC_ERR_INDEX, "index: an index can only have a single ellipsis "
                          "(shape %s)", fcg_shape_str(sh, a->ndim, a->shape));
    if (consumed > a->ndim)
        return fcg_poison(ctx, FC_ERR_INDEX, "index: too many indices for shape %s: %d given",
                          fcg_shape_str(sh, a->ndim, a->shape), consumed);
    int64_t start[FC_MAX_DIMS], step[FC_MAX_DIMS], count[FC_MAX_DIMS];
    int64_t out_shape[2 * FC_MAX_DIMS];
    int out_nd = 0, d = 0;
    for (int i = 0; i <= n; i++) {
        /* The ellipsis, or the implicit one at the end, covers the dims no entry names. */
        bool fill = i == n ? true : idx[i].kind == FC_IDX_ELLIPSIS;
        if (fill) {
            int stop = i == n ? a->ndim : d + (a->ndim - consumed);
            for (; d < stop; d++) {
                start[d] = 0;
                step[d] = 1;
                count[d] = a->shape[d];
                out_shape[out_nd++] = a->shape[d];
            }
            if (i == n) break;
            consumed = a->ndim; /* only one ellipsis: later entries map 1:1 */
            continue;
        }
        const fc_idx *ix = &idx[i];
        if (ix->kind == FC_IDX_NEWAXIS) {
            out_shape[out_nd++] = 1;
            continue;
        }
        if (ix->kind == FC_IDX_INT) {
            int64_t k = ix->start < 0 ? ix->start + a->shape[d] : ix->start;
            if (k < 0 || k >= a->shape[d])
                return fcg_poison(ctx, FC_ERR_INDEX,
                                  "index: index %lld is out of bounds for axis %d of shape %s",
                                  (long long)ix->start, d, fcg_shape_str(sh, a->ndim, a->shape));
            start[d] = k;
            step[d] = 1;
            count[d] = 1;
            d++;
            continue;
        }
        fc_status st = slice_bounds(ctx, a->shape[d], ix, &start[d], &step[d], &count[d]);
        if (st != FC_OK)
            return fcg_poison(ctx, st, "index: slice step cannot be zero (axis %d of shape %s)", d,
                              fcg_shape_str(sh, a->ndim, a->shape));
        out_shape[out_nd++] = count[d];
        d++;
    }
    if (out_nd > FC_MAX_DIMS)
        return fcg_poison(ctx, FC_ERR_INDEX, "index: the result would have %d dimensions "
                          "(at most %d)", out_nd, FC_MAX_DIMS);
    /* Integer indices drop dims and None adds them: both are a reshape of the slice. The
     * slice is an intermediate the caller never sees, so no scope may take it. */
    fc_scope *saved = ctx->scope;
    ctx->scope = NULL;
    fc_array *s = slice_node(ctx, a, start, step, count);
    fc_array *r = s;
    if (s->status == FC_OK) r = reshape_to(ctx, s, out_nd, out_shape);
    else fcg_retain(s);
    fcg_release(s);
    ctx->scope = saved;
    return fcg_ret(ctx, r);
}

/* x[idx] = value, functionally: a new array equal to x but where idx selects. With basic
 * entries, each element of x is tested against the selection axis by axis (a slice's
 * start, step and count, an integer's position) and, inside it, reads value (cast to x's dtype
 * and broadcast to the selection's shape) at the selection's coordinate: one where over index
 * arithmetic and a gather, so the update is one kernel that also copies the rest. A boolean
 * array of x's shape selects elementwise and takes a single value, or one value per selected
 * element (the mask's running count says which). Other entries with arrays: a put at the
 * selection's flat positions (fc_index of arange(x.size)), the last write winning. */
fc_array *fc_setitem(fc_array *x, int n, const fc_idx *idx, fc_array *value) {
    fc_array *early;
    fc_ctx *ctx = fcg_begin("setitem", 2, (fc_array *[]){x, value}, &early);
    if (!ctx || early) return early;
    char sh[200], sv[200];
    if (n < 0 || (n > 0 && !idx)) return fcg_poison(ctx, FC_ERR_NULL, "setitem: no index entries");
    fc_scope *sc = fc_scope_open(ctx);
    if (!sc) return fcg_poison(ctx, FC_ERR_NOMEM, "setitem: out of memory");
    fc_array *r = NULL, *v = fc_cast(value, (fc_dtype)x->dtype); /* NumPy casts unsafely */
    if (n == 1 && idx[0].kind == FC_IDX_ARRAY && idx[0].array && idx[0].array->dtype == FC_BOOL &&
        idx[0].array->ndim == x->ndim &&
        memcmp(idx[0].array->shape, x->shape, sizeof(int64_t) * (size_t)x->ndim) == 0) {
        fc_array *m = idx[0].array;
        if (fcg_node_numel(value) == 1) {
            r = fc_where(m, fc_reshape(v, (fc_shape){0, {0}}), x);
            goto done;
        }
        /* x[mask] = values: the k-th selected element (row-major) takes values[k], the
         * running count of the mask saying which k; the count must be the values' size */
        int64_t count = 0;
        fc_array *c = fc_count_nonzero(m, FC_ALL, false);
        fc_status st = fc_read(c, &count, 0, 1);
        if (st != FC_OK) {
            r = fcg_poison(ctx, st, "setitem: the mask's count could not be evaluated (%s)",
                           fc_errmsg(ctx));
            goto done;
        }
        if (value->ndim > 1 || (int64_t)fcg_node_numel(value) != count) {
            r = fcg_poison(ctx, FC_ERR_SHAPE, "setitem: shape mismatch: value array of shape %s "
                           "could not be broadcast to indexing result of shape [%lld]",
                           fcg_shape_str(sv, value->ndim, value->shape), (long long)count);
            goto done;
        }
        if (count == 0) {
            r = x;
            goto done;
        }
        int64_t nx = (int64_t)fcg_node_numel(x);
        fc_shape xs = {x->ndim, {0}};
        memcpy(xs.dim, x->shape, sizeof(int64_t) * (size_t)x->ndim);
        fc_array *k = fc_reshape(fc_sub(fc_cumsum(fc_reshape(m, FC_SHAPE(nx)), 0), fc_i64(ctx, 1)),
                                 xs);
        r = fc_where(m, fc_take(fc_reshape(v, FC_SHAPE(count)), k, 0, FC_TAKE_CLIP), x);
        goto done;
    }
    for (int i = 0; i < n; i++)
        if (idx[i].kind == FC_IDX_ARRAY) {
            /* index arrays (and masks not of x's shape): the selection's flat positions in x
             * are the same subscript of arange(x.size), and a put writes the values there,
             * the last write winning where a position repeats (as NumPy's loop does) */
            int64_t nx = (int64_t)fcg_node_numel(x);
            fc_shape xs = {x->ndim, {0}};
            memcpy(xs.dim, x->shape, sizeof(int64_t) * (size_t)x->ndim);
            fc_array *sel = fc_index(fc_reshape(fc_arange(ctx, FC_I64, 0, (double)nx, 1), xs), n, idx);
            if (sel->status != FC_OK) {
                r = sel;
                goto done;
            }
            int64_t m = (int64_t)fcg_node_numel(sel);
            fc_shape ss = {sel->ndim, {0}};
            memcpy(ss.dim, sel->shape, sizeof(int64_t) * (size_t)sel->ndim);
            fc_array *vb = fc_broadcast_to(v, ss);
            if (vb->status != FC_OK) {
                r = fcg_poison(ctx, FC_ERR_SHAPE, "setitem: shape mismatch: value array of shape "
                               "%s could not be broadcast to indexing result of shape %s",
                               fcg_shape_str(sv, value->ndim, value->shape),
                               fcg_shape_str(sh, sel->ndim, sel->shape));
                goto done;
            }
            r = m == 0 ? x : fc_put(x, fc_reshape(sel, FC_SHAPE(m)), fc_reshape(vb, FC_SHAPE(m)),
                                    FC_TAKE_CLIP);
            goto done;
        }
    fc_array *b = fc_index(x, n, idx); /* checks the entries; its shape is the selection's */
    if (b->status != FC_OK) {
        r = b;
        goto done;
    }
    fc_shape bs = {b->ndim, {0}};
    memcpy(bs.dim, b->shape, sizeof(int64_t) * (size_t)b->ndim);
    fc_array *vb = fc_broadcast_to(v, bs);
    if (vb->status != FC_OK) {
        r = fcg_poison(ctx, FC_ERR_SHAPE, "setitem: a value of shape %s cannot be broadcast to "
                       "the selection's shape %s", fcg_shape_str(sv, value->ndim, value->shape),
                       fcg_shape_str(sh, b->ndim, b->shape));
        goto done;
    }
    int64_t size = fcg_node_numel(b);
    if (size == 0) { /* nothing selected: x as it is */
        r = x;
        goto done;
    }
    /* per axis of x: the entry's start, step and count (an integer: count 1), and the axis of
     * the selection it becomes (-1 for an integer) */
    int64_t start[FC_MAX_DIMS], step[FC_MAX_DIMS], count[FC_MAX_DIMS], bstride[2 * FC_MAX_DIMS];
    int baxis[FC_MAX_DIMS], consumed = 0, d = 0, ba = 0;
    for (int i = 0; i < n; i++) consumed += idx[i].kind == FC_IDX_SLICE || idx[i].kind == FC_IDX_INT;
    fcg_contiguous_strides(b->ndim, b->shape, bstride);
    for (int i = 0; i <= n; i++) {
        bool fill = i == n || idx[i].kind == FC_IDX_ELLIPSIS;
        if (fill) {
            int stop = i == n ? x->ndim : d + (x->ndim - consumed);
            for (; d < stop; d++) {
                start[d] = 0, step[d] = 1, count[d] = x->shape[d], baxis[d] = ba++;
            }
            if (i == n) break;
            consumed = x->ndim;
            continue;
        }
        if (idx[i].kind == FC_IDX_NEWAXIS) {
            ba++;
            continue;
        }
        if (idx[i].kind == FC_IDX_INT) {
            int64_t k = idx[i].start;
            start[d] = k < 0 ? k + x->shape[d] : k, step[d] = 1, count[d] = 1, baxis[d] = -1;
        } else {
            slice_bounds(ctx, x->shape[d], &idx[i], &start[d], &step[d], &count[d]);
            baxis[d] = ba++;
        }
        d++;
    }
    fc_array *inside = fc_bool(ctx, true), *flat = fc_scalar(ctx, FC_I64, 0);
    for (d = 0; d < x->ndim; d++) {
        if (start[d] == 0 && step[d] == 1 && count[d] == x->shape[d]) { /* the whole axis */
            if (baxis[d] >= 0 && x->shape[d] > 1) {
                fc_array *c = fcg_axis_coord(ctx, x->ndim, d, x->shape[d]);
                flat = fc_add(flat, fc_mul(c, fc_scalar(ctx, FC_I64, (double)bstride[baxis[d]])));
            }
            continue;
        }
        fc_array *c = fcg_axis_coord(ctx, x->ndim, d, x->shape[d]);
        fc_array *off = fc_sub(c, fc_scalar(ctx, FC_I64, (double)start[d]));
        fc_array *q, *in;
        if (count[d] == 1) { /* one position (an integer, or a slice of one element) */
            in = fc_equal(off, fc_scalar(ctx, FC_I64, 0));
            q = fc_scalar(ctx, FC_I64, 0);
        } else {
            fc_array *st = fc_scalar(ctx, FC_I64, (double)step[d]);
            q = fc_floordiv(off, st);
            in = fc_logical_and(fc_equal(fc_mod(off, st), fc_scalar(ctx, FC_I64, 0)),
                                fc_logical_and(fc_greater_equal(q, fc_scalar(ctx, FC_I64, 0)),
                                               fc_less(q, fc_scalar(ctx, FC_I64, (double)count[d]))));
        }
        inside = fc_logical_and(inside, in);
        if (baxis[d] >= 0)
            flat = fc_add(flat, fc_mul(q, fc_scalar(ctx, FC_I64, (double)bstride[baxis[d]])));
    }
    fc_shape xs = {x->ndim, {0}};
    memcpy(xs.dim, x->shape, sizeof(int64_t) * (size_t)x->ndim);
    fc_array *picked = fc_take(fc_reshape(vb, FC_SHAPE(size)), fc_broadcast_to(flat, xs), 0,
                               FC_TAKE_CLIP);
    r = fc_where(fc_broadcast_to(inside, xs), picked, x);
done:
    return fcg_scope_return(ctx, sc, r);
}

fc_array *fc_flip(fc_array *a, fc_axes axes) {
    fc_array *early;
    fc_ctx *ctx = fcg_begin("flip", 1, &a, &early);
    if (!ctx || early) return early;
    uint32_t mask;
    fc_status st = fcg_axes_mask(ctx, "flip", a->ndim, a->shape, axes, &mask);
    if (st != FC_OK) return fcg_poison_ctx(ctx, st);
    int64_t start[FC_MAX_DIMS], step[FC_MAX_DIMS], count[FC_MAX_DIMS];
    for (int d = 0; d < a->ndim; d++) {
        bool f = (mask >> d) & 1u;
        start[d] = f && a->shape[d] > 0 ? a->shape[d] - 1 : 0;
        step[d] = f ? -1 : 1;
        count[d] = a->shape[d];
    }
    return slice_node(ctx, a, start, step, count);
}

/* ---- pad -------------------------------------------------------------------------------- */

fc_array *fc_pad(fc_array *a, int n, const int64_t (*widths)[2], fc_pad_mode mode, double value) {
    fc_array *early;
    fc_ctx *ctx = fcg_begin("pad", 1, &a, &early);
    if (!ctx || early) return early;
    static const char *const modes[] = {"constant", "edge", "reflect", "symmetric"};
    char sh[200];
    if (!widths) return fcg_poison(ctx, FC_ERR_NULL, "pad: widths is NULL");
    if ((unsigned)mode > FC_PAD_SYMMETRIC)
        return fcg_poison(ctx, FC_ERR_INVALID, "pad: unknown mode %d", (int)mode);
    if (n != 1 && n != a->ndim)
        return fcg_poison(ctx, FC_ERR_SHAPE, "pad: %d widths given for shape %s", n,
                          fcg_shape_str(sh, a->ndim, a->shape));
    fcg_params p;
    memset(&p, 0, sizeof p);
    int64_t shape[FC_MAX_DIMS];
    bool identity = true;
    for (int d = 0; d < a->ndim; d++) {
        int64_t before = widths[n == 1 ? 0 : d][0], after = widths[n == 1 ? 0 : d][1];
        int64_t len = a->shape[d], most = INT64_MAX;
        if (before < 0 || after < 0)
            return fcg_poison(ctx, FC_ERR_INVALID, "pad: negative width (%lld, %lld) for axis %d",
                              (long long)before, (long long)after, d);
        if (mode == FC_PAD_REFLECT) most = len - 1;
        if (mode == FC_PAD_SYMMETRIC) most = len;
        if (mode == FC_PAD_EDGE && len == 0) most = 0;
        if ((before > most || after > most) && (before || after))
            return fcg_poison(ctx, FC_ERR_SHAPE,
                              "pad: widths (%lld, %lld) are too wide for axis %d of shape %s in "
                              "mode %s (at most %lld)", (long long)before, (long long)after, d,
                              fcg_shape_str(sh, a->ndim, a->shape), modes[mode],
                              (long long)(most < 0 ? 0 : most));
        p.a[d] = before;
        p.b[d] = after;
        if (__builtin_add_overflow(len, before, &shape[d]) ||
            __builtin_add_overflow(shape[d], after, &shape[d]))
            return fcg_poison(ctx, FC_ERR_SHAPE, "pad: widths (%lld, %lld) for axis %d of shape "
                              "%s make the result too large", (long long)before, (long long)after,
                              d, fcg_shape_str(sh, a->ndim, a->shape));
        identity &= before == 0 && after == 0;
    }
    if (identity) return same(ctx, a);
    p.mode = (uint8_t)mode;
    p.re = mode == FC_PAD_CONSTANT ? value : 0;
    return view(ctx, FCG_OP_PAD, a, a->ndim, shape, &p);
}

/* ---- concatenate and stack -------------------------------------------------------------- */

/* Checks a list of arrays against the context the caller named; NULL when all is well, else
 * what the op returns (a poison, or the first poisoned array). */
static fc_array *check_list(fc_ctx *ctx, const char *opname, fc_array *const *arrays, int n) {
    for (int i = 0; i < n; i++) {
        if (!arrays[i]) return fcg_poison(ctx, FC_ERR_NULL, "%s: array %d is NULL", opname, i);
        if (arrays[i]->ctx != ctx)
            return fcg_poison(ctx, FC_ERR_CONTEXT, "%s: array %d belongs to another context",
                              opname, i);
    }
    for (int i = 0; i < n; i++)
        if (arrays[i]->status != FC_OK) return same(ctx, arrays[i]);
    return NULL;
}

fc_array *fc_concatenate(fc_ctx *ctx, fc_array *const *arrays, int n, int axis) {
    if (!ctx) return NULL;
    if (!arrays) return fcg_poison(ctx, FC_ERR_NULL, "concatenate: arrays is NULL");
    if (n < 1) return fcg_poison(ctx, FC_ERR_INVALID, "concatenate: needs at least one array");
    fc_array *early = check_list(ctx, "concatenate", arrays, n);
    if (early) return early;
    fc_array *a0 = arrays[0];
    char s1[200], s2[200];
    if (a0->ndim == 0)
        return fcg_poison(ctx, FC_ERR_SHAPE, "concatenate: zero-dimensional arrays cannot be "
                          "concatenated");
    if (axis < -a0->ndim || axis >= a0->ndim)
        return fcg_poison(ctx, FC_ERR_AXIS, "concatenate: axis %d is out of bounds for shape %s",
                          axis, fcg_shape_str(s1, a0->ndim, a0->shape));
    if (axis < 0) axis += a0->ndim;
    int64_t shape[FC_MAX_DIMS];
    memcpy(shape, a0->shape, sizeof shape);
    fc_dtype dt = (fc_dtype)a0->dtype;
    for (int i = 1; i < n; i++) {
        const fc_array *b = arrays[i];
        bool ok = b->ndim == a0->ndim;
        for (int d = 0; ok && d < a0->ndim; d++) ok = d == axis || b->shape[d] == a0->shape[d];
        if (!ok)
            return fcg_poison(ctx, FC_ERR_SHAPE, "concatenate: shapes %s (%s) and %s (%s) differ "
                              "off axis %d", fcg_shape_str(s1, a0->ndim, a0->shape),
                              fc_dtype_name(dt), fcg_shape_str(s2, b->ndim, b->shape),
                              fc_dtype_name((fc_dtype)b->dtype), axis);
        if (__builtin_add_overflow(shape[axis], b->shape[axis], &shape[axis]))
            return fcg_poison(ctx, FC_ERR_SHAPE, "concatenate: the result is too large along "
                              "axis %d", axis);
        fc_promote_types(dt, (fc_dtype)b->dtype, &dt);
    }
    if (n == 1) return same(ctx, a0);
    fcg_params p;
    memset(&p, 0, sizeof p);
    p.axis = axis;
    return fcg_make(ctx, FCG_OP_CONCAT, dt, dt, false, a0->ndim, shape, n, arrays, &p);
}

fc_array *fc_stack(fc_ctx *ctx, fc_array *const *arrays, int n, int axis) {
    if (!ctx) return NULL;
    if (!arrays) return fcg_poison(ctx, FC_ERR_NULL, "stack: arrays is NULL");
    if (n < 1) return fcg_poison(ctx, FC_ERR_INVALID, "stack: needs at least one array");
    fc_array *early = check_list(ctx, "stack", arrays, n);
    if (early) return early;
    char s1[200], s2[200];
    for (int i = 1; i < n; i++)
        if (arrays[i]->ndim != arrays[0]->ndim ||
            memcmp(arrays[i]->shape, arrays[0]->shape, (size_t)arrays[0]->ndim * 8) != 0)
            return fcg_poison(ctx, FC_ERR_SHAPE, "stack: all arrays must have the same shape: "
                              "%s and %s", fcg_shape_str(s1, arrays[0]->ndim, arrays[0]->shape),
                              fcg_shape_str(s2, arrays[i]->ndim, arrays[i]->shape));
    int nd = arrays[0]->ndim + 1;
    if (axis < -nd || axis >= nd)
        return fcg_poison(ctx, FC_ERR_AXIS, "stack: axis %d is out of bounds for arrays of shape "
                          "%s (the result has %d dimensions)", axis,
                          fcg_shape_str(s1, arrays[0]->ndim, arrays[0]->shape), nd);
    if (axis < 0) axis += nd;
    /* Each array gains the new axis (a reshape); the stack is their concatenation. */
    fc_array *small[8], **parts = n <= 8 ? small : fcg_malloc(ctx, (size_t)n * sizeof *parts);
    if (!parts) return fcg_poison(ctx, FC_ERR_NOMEM, "stack: out of memory");
    fc_scope *saved = ctx->scope;
    ctx->scope = NULL; /* the parts are ours alone: no scope takes them */
    int made = 0;
    fc_array *result = NULL;
    for (; made < n; made++) {
        parts[made] = fc_expand_dims(arrays[made], axis);
        if (parts[made]->status != FC_OK) {
            result = parts[made];
            fcg_retain(result);
            made++;
            break;
        }
    }
    if (!result) result = fc_concatenate(ctx, parts, n, axis);
    ctx->scope = saved;
    for (int i = 0; i < made; i++) fcg_release(parts[i]);
    if (parts != small) fcg_free(ctx, parts, (size_t)n * sizeof *parts);
    return fcg_ret(ctx, result);
}

/* ---- matmul ----------------------------------------------------------------------------- */

fc_array *fc_matmul(fc_array *a, fc_array *b) {
    fc_array *in[2] = {a, b}, *early;
    fc_ctx *ctx = fcg_begin("matmul", 2, in, &early);
    if (!ctx || early) return early;
    char s1[200], s2[200];
    if (a->ndim == 0 || b->ndim == 0)
        return fcg_poison(ctx, FC_ERR_SHAPE, "matmul: operands must have at least one dimension, "
                          "got %s and %s", fcg_shape_str(s1, a->ndim, a->shape),
                          fcg_shape_str(s2, b->ndim, b->shape));
    int64_t m = a->ndim == 1 ? 1 : a->shape[a->ndim - 2];
    int64_t k = a->shape[a->ndim - 1];
    int64_t kb = b->ndim == 1 ? b->shape[0] : b->shape[b->ndim - 2];
    int64_t nn = b->ndim == 1 ? 1 : b->shape[b->ndim - 1];
    if (k != kb)
        return fcg_poison(ctx, FC_ERR_SHAPE, "matmul: core dimensions of %s (%s) and %s (%s) do "
                          "not match (%lld != %lld)", fcg_shape_str(s1, a->ndim, a->shape),
                          fc_dtype_name((fc_dtype)a->dtype), fcg_shape_str(s2, b->ndim, b->shape),
                          fc_dtype_name((fc_dtype)b->dtype), (long long)k, (long long)kb);
    /* Batch dims broadcast like an elementwise op's. */
    int ba = a->ndim > 2 ? a->ndim - 2 : 0, bb = b->ndim > 2 ? b->ndim - 2 : 0;
    int nb = ba > bb ? ba : bb;
    int64_t shape[FC_MAX_DIMS + 2];
    for (int d = 0; d < nb; d++) {
        int ka = d - (nb - ba), kk = d - (nb - bb);
        int64_t ea = ka >= 0 ? a->shape[ka] : 1, eb = kk >= 0 ? b->shape[kk] : 1;
        if (ea != eb && ea != 1 && eb != 1)
            return fcg_poison(ctx, FC_ERR_SHAPE, "matmul: batch dimensions of %s and %s do not "
                              "broadcast", fcg_shape_str(s1, a->ndim, a->shape),
                              fcg_shape_str(s2, b->ndim, b->shape));
        shape[d] = ea == 1 ? eb : ea;
    }
    int nd = nb;
    if (a->ndim > 1) shape[nd++] = m;
    if (b->ndim > 1) shape[nd++] = nn;
    fc_dtype dt;
    fc_promote_types((fc_dtype)a->dtype, (fc_dtype)b->dtype, &dt);
    return fcg_make(ctx, FCG_OP_MATMUL, dt, dt, false, nd, shape, 2, in, NULL);
}

fc_array *fcg_matrix_transpose_of(const fc_array *a) {
    if (!a || a->op != FCG_OP_PERMUTE || a->ndim < 2 || a->nin != 1 || fcg_has_value(a))
        return NULL;
    int n = a->ndim;
    for (int d = 0; d < n - 2; d++)
        if (a->p.a[d] != d) return NULL;
    return a->p.a[n - 2] == n - 1 && a->p.a[n - 1] == n - 2 ? a->in[0] : NULL;
}

fc_array *fcg_flat_reverse_of(const fc_array *a) {
    if (!a || a->op != FCG_OP_SLICE || a->ndim != 2 || a->nin != 1 || fcg_has_value(a))
        return NULL;
    const fc_array *src = a->in[0];
    for (int d = 0; d < 2; d++) {
        if (a->shape[d] != src->shape[d]) return NULL;
        if (a->shape[d] > 1 && (a->p.a[d] != a->shape[d] - 1 || a->p.b[d] != -1)) return NULL;
    }
    return a->in[0];
}

bool fcg_unit_reshape(const fc_array *a) {
    const fc_array *src = a->in[0];
    int i = 0, j = 0;
    while (i < a->ndim || j < src->ndim) {
        if (i < a->ndim && a->shape[i] == 1) { i++; continue; }
        if (j < src->ndim && src->shape[j] == 1) { j++; continue; }
        if (i >= a->ndim || j >= src->ndim || a->shape[i] != src->shape[j]) return false;
        i++, j++;
    }
    return true;
}
