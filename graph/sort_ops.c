/*
 * graph/sort_ops.c - NumPy functions built on the stable sort (graph/sort.c's fc_sort and
 * fc_argsort) and other public ops: partition / argpartition, unique, and the random
 * permutations of a generator (permutation, shuffle, choice).
 *
 * Composites in the manner of graph/composite.c: each checks its arguments first, naming
 * itself in every error, then builds inside a private scope so that its temporaries never
 * reach the caller's, and hands on only its results.
 *
 *   - partition is the sort itself: a sorted array is a valid partition for every kth, so
 *     fusec pays a sort where NumPy pays a selection, and the arrangement of the elements
 *     around kth (which NumPy leaves unspecified) is the sorted one.
 *   - unique's size is the number of distinct values, which depends on the data: as mask.c's
 *     flatnonzero, it evaluates at construction (the sort and the "differs from the previous
 *     sorted element" flags), then compacts the flags' positions and builds the results from
 *     them.
 *   - a permutation is the argsort of one draw of random 64-bit keys: a pure function of
 *     (seed, stream) through the draw's layout and the stable order, the same on every
 *     backend. Ties between keys (a chance of about n^2 / 2^65) are broken by position.
 */
#include "graph.h"

#include <stdio.h>
#include <string.h>

static fc_array *nomem(fc_ctx *ctx, const char *name) {
    return fcg_poison(ctx, FC_ERR_NOMEM, "%s: out of memory", name);
}

/* ---- partition / argpartition ----------------------------------------------------------- */

static fc_array *partition(fc_array *a, int64_t kth, int axis, bool arg) {
    const char *name = arg ? "argpartition" : "partition";
    fc_array *early;
    fc_ctx *ctx = fcg_begin(name, 1, &a, &early);
    if (!ctx || early) return early;
    char d[FCG_DESC_MAX];
    if (a->weak)
        return fcg_poison(ctx, FC_ERR_DTYPE, "%s: a Python scalar has no axis to partition",
                          name);
    /* The extent kth indexes: the flattened array's, or the axis' (argpartition takes a 0-d
     * array as shape [1], as NumPy's does). */
    int64_t size = (int64_t)fcg_node_numel(a), n = size;
    if (axis != FC_AXIS_NONE) {
        int nd = arg && a->ndim == 0 ? 1 : a->ndim;
        if (axis < -nd || axis >= nd)
            return fcg_poison(ctx, FC_ERR_AXIS, "%s: axis %d is out of bounds for an array of "
                              "dimension %d: %s", name, axis, nd, fcg_desc(d, a));
        n = a->ndim == 0 ? 1 : a->shape[axis < 0 ? axis + nd : axis];
    }
    /* NumPy checks kth only against a non-empty array */
    if (size > 0 && (kth < -n || kth >= n))
        return fcg_poison(ctx, FC_ERR_VALUE, "%s: kth %lld is out of bounds for an axis of "
                          "length %lld: %s", name, (long long)kth, (long long)n, fcg_desc(d, a));
    fc_scope *s = fc_scope_open(ctx);
    if (!s) return nomem(ctx, name);
    return fcg_scope_return(ctx, s, arg ? fc_argsort(a, axis) : fc_sort(a, axis));
}

fc_array *fc_partition(fc_array *a, int64_t kth, int axis) {
    return partition(a, kth, axis, false);
}

fc_array *fc_argpartition(fc_array *a, int64_t kth, int axis) {
    return partition(a, kth, axis, true);
}

/* ---- unique ----------------------------------------------------------------------------- */

fc_status fc_unique(fc_array *a, fc_array **values, fc_array **index, fc_array **inverse,
                    fc_array **counts) {
    fc_array **const outs[4] = {values, index, inverse, counts};
    fc_status st0;
    fc_array *early;
    fc_scope *s = fcg_multi_begin("unique", 1, &a, 4, outs, &st0, &early);
    if (!s) return st0;
    fc_ctx *ctx = a->ctx;
    if (early) return fcg_multi_return(ctx, s, 4, outs, NULL, early);
    if (a->weak)
        return fcg_multi_return(ctx, s, 4, outs, NULL,
                             fcg_poison(ctx, FC_ERR_DTYPE, "unique: a Python scalar has no "
                                        "dtype to collect values of (make it an array first)"));
    fc_dtype t = (fc_dtype)a->dtype;
    int64_t n = (int64_t)fcg_node_numel(a);
    fc_shape shape = fc_array_shape(a);
    fc_array *flat = fc_reshape(a, FC_SHAPE(n)), *res[4];
    if (n == 0) {
        res[0] = flat;
        res[1] = fc_zeros(ctx, FC_I64, FC_SHAPE(0));
        res[2] = fc_zeros(ctx, FC_I64, shape);
        res[3] = res[1];
        return fcg_multi_return(ctx, s, 4, outs, res, NULL);
    }
    /* The stable sort's positions (so index gives each value's first occurrence) and values,
     * and where a run of equal values starts: where an element differs from the previous one
     * (equal_nan: a NaN after a NaN does not start a run, whatever its payload or, for
     * complex numbers, whichever part is NaN; NumPy's NaNs sort after every number). */
    fc_array *perm = fc_argsort(flat, 0);
    fc_array *sorted = fc_take(flat, perm, 0, FC_TAKE_CLIP);
    fc_array *start = fc_ones(ctx, FC_BOOL, FC_SHAPE(1));
    if (n > 1) {
        fc_array *cur = fcg_slice_axis(sorted, 0, 1, n, 1);
        fc_array *prev = fcg_slice_axis(sorted, 0, 0, n - 1, 1);
        fc_array *differs = fc_not_equal(cur, prev);
        if (fcg_is_inexact(t))
            differs = fc_logical_and(differs,
                                     fc_logical_not(fc_logical_and(fc_isnan(cur), fc_isnan(prev))));
        fc_array *parts[2] = {start, differs};
        start = fc_concatenate(ctx, parts, 2, 0);
    }
    /* The number of distinct values is the flags' count: evaluate the sort and the flags
     * (keeping their values, so the results below do not sort again), then compact. */
    fc_array *ev[3] = {perm, sorted, start};
    fc_status st = fc_eval(ctx, ev, 3);
    if (st != FC_OK) {
        char why[FCG_ERRMSG_MAX / 2];
        snprintf(why, sizeof why, "%s", fc_errmsg(ctx));
        return fcg_multi_return(ctx, s, 4, outs, NULL,
                             fcg_poison(ctx, st, "unique: the number of distinct values depends "
                                        "on the data, which could not be evaluated (%s)", why));
    }
    fc_array *first = fc_flatnonzero(start); /* where each run starts, in the sorted order */
    int64_t k = fc_array_size(first);
    res[0] = fc_take(sorted, first, 0, FC_TAKE_CLIP);
    res[1] = fc_take(perm, first, 0, FC_TAKE_CLIP);
    /* inverse: the run of each sorted element (its running count of starts, less one), sent
     * back to the element's place; every place receives exactly one value */
    fc_array *run = fc_sub(fc_cumsum(start, 0), fc_i64(ctx, 1));
    res[2] = fc_reshape(fc_scatter_add(fc_zeros(ctx, FC_I64, FC_SHAPE(n)), perm, run, 0,
                                       FC_TAKE_DROP),
                        shape);
    /* counts: the distance from each start to the next one (or to n) */
    fc_array *next[2] = {fcg_slice_axis(first, 0, 1, k, 1),
                         fc_full(ctx, FC_I64, FC_SHAPE(1), (double)n)};
    res[3] = fc_sub(fc_concatenate(ctx, next, 2, 0), first);
    fc_array *bad = NULL;
    for (int i = 0; i < 4 && !bad; i++)
        if (res[i]->status != FC_OK) bad = res[i];
    return fcg_multi_return(ctx, s, 4, outs, res, bad);
}

/* ---- random permutations and choices ---------------------------------------------------- */

/* The next stream of rng, or a poison (NULL rng). */
static bool next_stream(fc_ctx *ctx, fc_rng *rng, const char *name, uint64_t *stream,
                        fc_array **bad) {
    *bad = NULL;
    if (!rng) {
        *bad = fcg_poison(ctx, FC_ERR_NULL, "%s: no generator", name);
        return false;
    }
    *stream = rng->stream++;
    return true;
}

/* The permutation of n of stream `stream` of rng's seed: the stable argsort of random int64
 * keys, integers(-2^63, 2^63 - 1) of that stream (so element i's key is a function of (seed,
 * stream, i) alone). */
static fc_array *permutation_of(fc_ctx *ctx, const char *name, uint64_t seed, uint64_t stream,
                                int64_t n) {
    fc_array *keys = fcg_random_draw(ctx, name, FCG_RANDOM_INTEGERS, FC_I64, FC_SHAPE(n), seed,
                                     stream, INT64_MIN, INT64_MAX);
    return fc_argsort(keys, 0);
}

fc_array *fc_rng_permutation(fc_ctx *ctx, fc_rng *rng, int64_t n) {
    if (!ctx) return NULL;
    fc_array *bad;
    uint64_t stream;
    if (!next_stream(ctx, rng, "permutation", &stream, &bad)) return bad;
    if (n < 0) n = 0; /* NumPy's permutation(n) permutes arange(n): empty for n < 0 */
    fc_scope *s = fc_scope_open(ctx);
    if (!s) return nomem(ctx, "permutation");
    return fcg_scope_return(ctx, s, permutation_of(ctx, "permutation", rng->seed, stream, n));
}

/* x's slices along axis in the order of a permutation of stream `stream` (x checked). */
static fc_array *shuffled(fc_ctx *ctx, const char *name, fc_array *x, int axis, uint64_t seed,
                          uint64_t stream) {
    int64_t n = x->shape[axis];
    fc_array *p = permutation_of(ctx, name, seed, stream, n);
    if (n == 0) return x; /* nothing to take; the draw was still made */
    return fc_take(x, p, axis, FC_TAKE_CLIP);
}

/* The checks shared by the functions that take an array: its context, not weak, an axis of
 * it. *axis is normalised. */
static fc_array *array_arg(fc_ctx *ctx, const char *name, fc_array *x, int *axis) {
    fc_array *early;
    if (!x) return fcg_poison(ctx, FC_ERR_NULL, "%s: no array", name);
    fcg_begin(name, 1, &x, &early);
    if (early) return early;
    if (x->ctx != ctx)
        return fcg_poison(ctx, FC_ERR_CONTEXT, "%s: the array belongs to another context", name);
    char d[FCG_DESC_MAX];
    if (x->weak)
        return fcg_poison(ctx, FC_ERR_DTYPE, "%s: a Python scalar has no axis to permute", name);
    if (*axis < -x->ndim || *axis >= x->ndim)
        return fcg_poison(ctx, FC_ERR_AXIS, "%s: axis %d is out of bounds for an array of "
                          "dimension %d: %s", name, *axis, x->ndim, fcg_desc(d, x));
    if (*axis < 0) *axis += x->ndim;
    return NULL;
}

fc_array *fc_rng_shuffle(fc_ctx *ctx, fc_rng *rng, fc_array *x, int axis) {
    if (!ctx) return NULL;
    fc_array *bad = array_arg(ctx, "shuffle", x, &axis);
    if (bad) return bad;
    uint64_t stream;
    if (!next_stream(ctx, rng, "shuffle", &stream, &bad)) return bad;
    fc_scope *s = fc_scope_open(ctx);
    if (!s) return nomem(ctx, "shuffle");
    return fcg_scope_return(ctx, s, shuffled(ctx, "shuffle", x, axis, rng->seed, stream));
}

/* The int64 positions of a choice of size from n (checked), of stream `stream`. */
static fc_array *choice_of(fc_ctx *ctx, const char *name, uint64_t seed, uint64_t stream,
                           int64_t n, fc_shape size, bool replace) {
    if (replace)
        return fcg_random_draw(ctx, name, FCG_RANDOM_INTEGERS, FC_I64, size, seed, stream, 0, n);
    int64_t k = (int64_t)fcg_numel(size.ndim, size.dim);
    fc_array *p = permutation_of(ctx, name, seed, stream, n);
    return fc_reshape(fcg_slice_axis(p, 0, 0, k, 1), size);
}

/* The checks of a choice of size from n: the size a shape, samples from an empty population
 * only when none are taken, no more than n of them without replacement. */
static fc_array *choice_check(fc_ctx *ctx, const char *name, int64_t n, fc_shape size,
                              bool replace) {
    if (size.ndim < 0 || size.ndim > FC_MAX_DIMS)
        return fcg_poison(ctx, FC_ERR_SHAPE, "%s: a size of %d dimensions", name, size.ndim);
    if (fcg_shape_too_large(size.ndim, size.dim, FC_I64)) {
        char sh[200];
        return fcg_poison(ctx, FC_ERR_SHAPE, "%s: size %s is not a valid shape", name,
                          fcg_shape_str(sh, size.ndim, size.dim));
    }
    int64_t k = (int64_t)fcg_numel(size.ndim, size.dim);
    if (k > 0 && n <= 0)
        return fcg_poison(ctx, FC_ERR_VALUE, "%s: a population of %lld cannot give samples "
                          "(NumPy: a must be a positive integer unless no samples are taken)",
                          name, (long long)n);
    if (!replace && k > n)
        return fcg_poison(ctx, FC_ERR_VALUE, "%s: %lld samples without replacement from a "
                          "population of %lld (NumPy: cannot take a larger sample than "
                          "population when replace is False)", name, (long long)k,
                          (long long)(n < 0 ? 0 : n));
    return NULL;
}

fc_array *fc_rng_choice(fc_ctx *ctx, fc_rng *rng, int64_t n, fc_shape size, bool replace) {
    if (!ctx) return NULL;
    fc_array *bad = choice_check(ctx, "choice", n, size, replace);
    if (bad) return bad;
    uint64_t stream;
    if (!next_stream(ctx, rng, "choice", &stream, &bad)) return bad;
    if (fcg_numel(size.ndim, size.dim) == 0) /* no samples: nothing drawn from the stream */
        return fc_zeros(ctx, FC_I64, size);
    fc_scope *s = fc_scope_open(ctx);
    if (!s) return nomem(ctx, "choice");
    return fcg_scope_return(ctx, s, choice_of(ctx, "choice", rng->seed, stream, n, size, replace));
}

fc_array *fc_rng_choice_array(fc_ctx *ctx, fc_rng *rng, fc_array *a, fc_shape size,
                              bool replace) {
    if (!ctx) return NULL;
    int axis = 0;
    if (a && !a->weak && a->ndim == 0 && a->ctx == ctx && a->status == FC_OK)
        return fcg_poison(ctx, FC_ERR_VALUE, "choice: a 0-d array is not a population (NumPy: "
                          "a must be a sequence or an integer)");
    fc_array *bad = array_arg(ctx, "choice", a, &axis);
    if (bad) return bad;
    int64_t n = a->shape[0];
    if ((bad = choice_check(ctx, "choice", n, size, replace))) return bad;
    uint64_t stream;
    if (!next_stream(ctx, rng, "choice", &stream, &bad)) return bad;
    fc_scope *s = fc_scope_open(ctx);
    if (!s) return nomem(ctx, "choice");
    /* the chosen rows: size's shape, then a's other axes */
    fc_shape out = size;
    if (out.ndim + a->ndim - 1 > FC_MAX_DIMS) {
        fc_scope_close(s);
        return fcg_poison(ctx, FC_ERR_SHAPE, "choice: size of %d dimensions and an array of %d "
                          "give more than %d", size.ndim, a->ndim, FC_MAX_DIMS);
    }
    for (int d = 1; d < a->ndim; d++) out.dim[out.ndim++] = a->shape[d];
    fc_array *r;
    if (fcg_numel(size.ndim, size.dim) == 0) {
        r = fc_zeros(ctx, (fc_dtype)a->dtype, out);
    } else {
        fc_array *pos = choice_of(ctx, "choice", rng->seed, stream, n, size, replace);
        r = fc_reshape(fc_take(a, fc_reshape(pos, FC_SHAPE(-1)), 0, FC_TAKE_CLIP), out);
    }
    return fcg_scope_return(ctx, s, r);
}
