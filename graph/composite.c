/*
 * graph/composite.c - NumPy functions built from the primitive ops: meshgrid, tile, repeat,
 * roll, split, triu / tril, diag / diagonal / trace, the nan-reductions,
 * logsumexp, isclose / allclose, round, nan_to_num, heaviside, deg2rad / rad2deg, sinc,
 * positive, fabs, float_power.
 *
 * No op rows and no kernels of their own (tinygrad builds mean and var the same way): each
 * function checks its arguments, naming itself in any error, then composes public ops inside
 * a private scope, so its temporaries die with it whatever scope the caller has open, and
 * only the result is handed on. The graph it leaves is what a user writing the expression by
 * hand would build, so hash-consing, simplification and fusion treat it the same way: a
 * logsumexp is max-reduce -> broadcast -> elementwise -> sum -> elementwise, which the fusion
 * pass's row kernel takes whole.
 *
 * Views stand in for gathers: the k-th diagonal of a square L x L window is the flattened
 * window with step L + 1; tile and repeat broadcast over a unit axis and merge it with its
 * neighbour; roll is a concatenation of two slices.
 */
#include "graph.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- private scopes --------------------------------------------------------------------- */

typedef struct cscope {
    fc_ctx *ctx;
    fc_scope *scope;
} cscope;

/* Opens a composite's private scope; false (with the message set) when memory runs out. */
static bool cs_open(cscope *cs, fc_ctx *ctx) {
    cs->ctx = ctx;
    cs->scope = fc_scope_open(ctx);
    return cs->scope != NULL;
}

static fc_array *cs_nomem(fc_ctx *ctx, const char *name) {
    return fcg_poison(ctx, FC_ERR_NOMEM, "%s: out of memory", name);
}

/* Closes the private scope and hands `r` (built inside it) to the caller's scope. */
static fc_array *cs_close(cscope *cs, fc_array *r) {
    return fcg_scope_return(cs->ctx, cs->scope, r);
}

/* Closes the private scope and hands out[0..n) on. Returns the first non-OK status. */
static fc_status cs_close_n(cscope *cs, fc_array **out, int64_t n) {
    for (int64_t i = 0; i < n; i++) out[i] = fc_keep(out[i]);
    fc_scope_close(cs->scope);
    fc_status st = FC_OK;
    for (int64_t i = 0; i < n; i++) {
        out[i] = fcg_ret(cs->ctx, out[i] ? out[i] : &cs->ctx->oom);
        if (st == FC_OK) st = out[i]->status;
    }
    return st;
}

/* Every output of a multi-output function gets (a reference to) the same poison. */
static fc_status fill_poison(fc_ctx *ctx, fc_array **out, int64_t n, fc_array *poison) {
    for (int64_t i = 0; i < n; i++) {
        if (i > 0) fcg_retain(poison);
        out[i] = i > 0 ? fcg_ret(ctx, poison) : poison;
    }
    return poison->status;
}

/* ---- small helpers ---------------------------------------------------------------------- */

const char *fcg_desc(char *buf, const fc_array *a) {
    char sh[200];
    snprintf(buf, FCG_DESC_MAX, "%s (%s)", fcg_shape_str(sh, a->ndim, a->shape),
             fc_dtype_name((fc_dtype)a->dtype));
    return buf;
}

static fc_shape shape_of(const fc_array *a) { return fc_array_shape(a); }

static int64_t prod(const int64_t *v, int from, int to) {
    int64_t p = 1;
    for (int i = from; i < to; i++) p *= v[i];
    return p;
}

fc_array *fcg_slice_axis(fc_array *a, int axis, int64_t start, int64_t stop, int64_t step) {
    fc_idx idx[FC_MAX_DIMS];
    for (int d = 0; d < a->ndim; d++) idx[d] = d == axis ? FC_S(start, stop, step) : FC_COLON;
    return fc_index(a, a->ndim, idx);
}

/* A strongly typed 0-d constant (zeros / full of dtype t), converted as a cast would. */
static fc_array *scalar_of(fc_ctx *ctx, fc_dtype t, double v) {
    return fc_full(ctx, t, FC_SCALAR, v);
}

/* Normalises one axis of `a`; else a poison naming `name` in *bad. */
static bool norm_axis(fc_ctx *ctx, const char *name, const fc_array *a, int axis, int *out,
                      fc_array **bad) {
    if (axis < -a->ndim || axis >= a->ndim) {
        char d[FCG_DESC_MAX];
        *bad = fcg_poison(ctx, FC_ERR_AXIS, "%s: axis %d is out of bounds for %s", name, axis,
                          fcg_desc(d, a));
        return false;
    }
    *out = axis < 0 ? axis + a->ndim : axis;
    return true;
}

/* Reduced axes of a reduction as a mask; else a poison naming `name`. With `nonempty`, a
 * reduction over a zero-length axis has no identity (max-like) and is an error too. */
static bool reduce_mask(fc_ctx *ctx, const char *name, const fc_array *a, fc_axes axes,
                        bool nonempty, uint32_t *mask, fc_array **bad) {
    fc_status st = fcg_axes_mask(ctx, name, a->ndim, a->shape, axes, mask);
    if (st != FC_OK) {
        *bad = fcg_poison_ctx(ctx, st);
        return false;
    }
    for (int d = 0; nonempty && d < a->ndim; d++)
        if ((*mask >> d & 1u) && a->shape[d] == 0) {
            char s[FCG_DESC_MAX];
            *bad = fcg_poison(ctx, FC_ERR_SHAPE, "%s: zero-size reduction of %s has no identity",
                              name, fcg_desc(s, a));
            return false;
        }
    return true;
}

/* True if the shape of `nd` extents exceeds what an array may hold (as check_dtype_shape). */
static bool too_large(const int64_t *dims, int nd, fc_dtype t) {
    double total = (double)fc_dtype_size(t);
    for (int d = 0; d < nd; d++) total *= (double)dims[d];
    return total > 0x1p62;
}

/* The dtype's largest finite value (finfo(t).max) and machine epsilon. */
static double float_max(fc_dtype t) {
    switch (t) {
    case FC_F16: return 65504.0;
    case FC_BF16: return 0x1.fep127;
    case FC_F32: return 0x1.fffffep127;
    default: return 0x1.fffffffffffffp1023;
    }
}

static double float_eps(fc_dtype t) {
    switch (t) {
    case FC_F16: return 0x1p-10;
    case FC_BF16: return 0x1p-7;
    case FC_F32: return 0x1p-23;
    default: return 0x1p-52;
    }
}

/* A complex (re, im) of the complex twin of re's real dtype, bit for bit, including signed
 * zeros, infinities and NaN. There is no op that builds a complex from two reals, so this
 * composes exact ones: cast(re) is (re, +0); subtracting im * (0 - 1j) subtracts (+0, -im)
 * for finite im (the textbook product every backend computes: im*0 - 0*(-1) is +0 for any
 * finite im), which leaves re untouched, -0 included. A -0 imaginary part comes from conj,
 * and a non-finite one from subtracting the matching constant (a product with inf would
 * make the real part NaN). */
static fc_array *complex_from_parts(fc_ctx *ctx, fc_array *re, fc_array *im) {
    fc_dtype c = re->dtype == FC_F64 ? FC_C128 : FC_C64;
    fc_array *base = fc_cast(re, c);
    fc_array *zero = fc_f64(ctx, 0.0);
    fc_array *fin = fc_sub(base, fc_mul(fc_cast(im, c), fc_c128(ctx, 0.0, -1.0)));
    fc_array *neg_zero = fc_logical_and(fc_equal(im, zero), fc_less(fc_reciprocal(im), zero));
    fc_array *finite = fc_where(neg_zero, fc_conj(base), fin);
    fc_array *with_nan = fc_sub(base, fc_full_complex(ctx, c, FC_SCALAR, 0.0, NAN));
    fc_array *with_inf = fc_sub(base, fc_full_complex(ctx, c, FC_SCALAR, 0.0, -INFINITY));
    fc_array *with_ninf = fc_sub(base, fc_full_complex(ctx, c, FC_SCALAR, 0.0, INFINITY));
    fc_array *nonfinite = fc_where(fc_isnan(im), with_nan,
                                   fc_where(fc_greater(im, zero), with_inf, with_ninf));
    return fc_where(fc_isfinite(im), finite, nonfinite);
}

/* ---- creation and manipulation ---------------------------------------------------------- */

fc_array *fc_identity(fc_ctx *ctx, fc_dtype dtype, int64_t n) {
    if (!ctx) return NULL;
    if (n < 0) return fcg_poison(ctx, FC_ERR_SHAPE, "identity: n %lld is negative", (long long)n);
    return fc_eye(ctx, dtype, n, n, 0);
}

fc_status fc_meshgrid(fc_ctx *ctx, fc_array *const *in, int n, bool ij, fc_array **out) {
    if (!ctx) return FC_ERR_NULL;
    if (n < 0 || n > FC_MAX_DIMS)
        return fcg_error(ctx, FC_ERR_INVALID, "meshgrid: %d inputs (0 to %d are supported)", n,
                         FC_MAX_DIMS);
    if (n == 0) return FC_OK;
    if (!out) return fcg_error(ctx, FC_ERR_NULL, "meshgrid: out is NULL");
    if (!in) return fill_poison(ctx, out, n, fcg_poison(ctx, FC_ERR_NULL, "meshgrid: in is NULL"));
    for (int i = 0; i < n; i++) {
        if (!in[i])
            return fill_poison(ctx, out, n, fcg_poison(ctx, FC_ERR_NULL,
                                                       "meshgrid: input %d is NULL", i));
        if (in[i]->ctx != ctx)
            return fill_poison(ctx, out, n, fcg_poison(ctx, FC_ERR_CONTEXT, "meshgrid: input %d "
                                                       "belongs to another context", i));
    }
    for (int i = 0; i < n; i++)
        if (in[i]->status != FC_OK) {
            fcg_retain(in[i]);
            return fill_poison(ctx, out, n, fcg_ret(ctx, in[i]));
        }
    /* Output axis of input i: i itself, except that "xy" swaps the first two. */
    int pos[FC_MAX_DIMS];
    fc_shape full = {n, {0}};
    for (int i = 0; i < n; i++) pos[i] = !ij && n >= 2 && i < 2 ? 1 - i : i;
    for (int i = 0; i < n; i++) full.dim[pos[i]] = (int64_t)fcg_node_numel(in[i]);
    for (int i = 0; i < n; i++)
        if (too_large(full.dim, n, (fc_dtype)in[i]->dtype))
            return fill_poison(ctx, out, n, fcg_poison(ctx, FC_ERR_SHAPE, "meshgrid: the grid of "
                                                       "%d inputs is too large", n));
    cscope cs;
    if (!cs_open(&cs, ctx)) return fill_poison(ctx, out, n, cs_nomem(ctx, "meshgrid"));
    for (int i = 0; i < n; i++) {
        fc_shape s = {n, {0}};
        for (int d = 0; d < n; d++) s.dim[d] = d == pos[i] ? full.dim[d] : 1;
        out[i] = fc_broadcast_to(fc_reshape(in[i], s), full);
    }
    return cs_close_n(&cs, out, n);
}

/* Repeats `a` r times along axis d, either as whole blocks (tile: the new unit axis goes
 * before d) or element by element (repeat: after d), by broadcasting over the unit axis and
 * merging it into d. Four dims at most whatever a's rank: the axes before and after d merge. */
static fc_array *repeat_axis(fc_array *a, int d, int64_t r, bool blocks) {
    if (r == 1) {
        fcg_retain(a);
        return fcg_ret(a->ctx, a);
    }
    int64_t before = prod(a->shape, 0, d), len = a->shape[d];
    int64_t after = prod(a->shape, d + 1, a->ndim);
    fc_shape unit = blocks ? FC_SHAPE(before, 1, len, after) : FC_SHAPE(before, len, 1, after);
    fc_shape wide = blocks ? FC_SHAPE(before, r, len, after) : FC_SHAPE(before, len, r, after);
    fc_shape res = shape_of(a);
    res.dim[d] = len * r;
    return fc_reshape(fc_broadcast_to(fc_reshape(a, unit), wide), res);
}

fc_array *fc_tile(fc_array *a, int n, const int64_t *reps) {
    fc_array *early;
    fc_ctx *ctx = fcg_begin("tile", 1, &a, &early);
    if (!ctx || early) return early;
    char d[FCG_DESC_MAX];
    if (n < 0 || n > FC_MAX_DIMS)
        return fcg_poison(ctx, FC_ERR_INVALID, "tile: %d repetitions for %s (0 to %d)", n,
                          fcg_desc(d, a), FC_MAX_DIMS);
    if (n > 0 && !reps) return fcg_poison(ctx, FC_ERR_NULL, "tile: reps is NULL");
    int nd = a->ndim > n ? a->ndim : n;
    int64_t r[FC_MAX_DIMS], res[FC_MAX_DIMS];
    fc_shape sa = {nd, {0}};
    for (int i = 0; i < nd; i++) {
        int ka = i - (nd - a->ndim), kr = i - (nd - n);
        sa.dim[i] = ka >= 0 ? a->shape[ka] : 1;
        r[i] = kr >= 0 ? reps[kr] : 1;
        if (r[i] < 0)
            return fcg_poison(ctx, FC_ERR_INVALID, "tile: negative repetition %lld for %s",
                              (long long)r[i], fcg_desc(d, a));
        res[i] = sa.dim[i] * r[i];
        if (sa.dim[i] && r[i] > INT64_MAX / sa.dim[i]) res[i] = INT64_MAX;
    }
    if (too_large(res, nd, (fc_dtype)a->dtype))
        return fcg_poison(ctx, FC_ERR_SHAPE, "tile: the result of tiling %s is too large",
                          fcg_desc(d, a));
    cscope cs;
    if (!cs_open(&cs, ctx)) return cs_nomem(ctx, "tile");
    fc_array *t = fc_reshape(a, sa); /* NumPy prepends unit axes to the shorter of the two */
    /* One broadcast of a view with a unit axis before each tiled one when that fits, else a
     * broadcast per tiled axis. */
    int tiled = 0;
    for (int i = 0; i < nd; i++) tiled += r[i] != 1;
    if (tiled > 0 && nd + tiled <= FC_MAX_DIMS) {
        fc_shape unit = {0, {0}}, wide = {0, {0}}, out = {nd, {0}};
        for (int i = 0; i < nd; i++) {
            if (r[i] != 1) {
                unit.dim[unit.ndim++] = 1;
                wide.dim[wide.ndim++] = r[i];
            }
            unit.dim[unit.ndim++] = sa.dim[i];
            wide.dim[wide.ndim++] = sa.dim[i];
            out.dim[i] = res[i];
        }
        t = fc_reshape(fc_broadcast_to(fc_reshape(t, unit), wide), out);
    } else {
        for (int i = 0; i < nd; i++) t = repeat_axis(t, i, r[i], true);
    }
    return cs_close(&cs, t);
}

fc_array *fc_repeat(fc_array *a, int64_t repeats, int axis) {
    fc_array *early;
    fc_ctx *ctx = fcg_begin("repeat", 1, &a, &early);
    if (!ctx || early) return early;
    char d[FCG_DESC_MAX];
    if (repeats < 0)
        return fcg_poison(ctx, FC_ERR_INVALID, "repeat: negative repeats %lld for %s",
                          (long long)repeats, fcg_desc(d, a));
    int ax = 0;
    if (axis != FC_AXIS_NONE && !norm_axis(ctx, "repeat", a, axis, &ax, &early)) return early;
    int64_t len = axis == FC_AXIS_NONE ? (int64_t)fcg_node_numel(a) : a->shape[ax];
    int64_t res[FC_MAX_DIMS];
    memcpy(res, a->shape, sizeof res);
    res[ax] = len && repeats > INT64_MAX / len ? INT64_MAX : len * repeats;
    if (too_large(res, axis == FC_AXIS_NONE ? 1 : a->ndim, (fc_dtype)a->dtype))
        return fcg_poison(ctx, FC_ERR_SHAPE, "repeat: repeating %s %lld times is too large",
                          fcg_desc(d, a), (long long)repeats);
    cscope cs;
    if (!cs_open(&cs, ctx)) return cs_nomem(ctx, "repeat");
    fc_array *t = axis == FC_AXIS_NONE ? fc_reshape(a, FC_SHAPE(len)) : a; /* flattened */
    return cs_close(&cs, repeat_axis(t, ax, repeats, false));
}

/* a rolled by `shift` along axis d: the last `shift` elements (mod the length) move to the
 * front, as a concatenation of two slices. */
static fc_array *roll_axis(fc_array *a, int d, int64_t shift) {
    int64_t len = a->shape[d];
    int64_t s = len ? shift % len : 0;
    if (s < 0) s += len;
    if (s == 0) {
        fcg_retain(a);
        return fcg_ret(a->ctx, a);
    }
    fc_array *parts[2] = {fcg_slice_axis(a, d, len - s, len, 1),
                          fcg_slice_axis(a, d, 0, len - s, 1)};
    return fc_concatenate(a->ctx, parts, 2, d);
}

fc_array *fc_roll(fc_array *a, int64_t shift, int axis) {
    fc_array *early;
    fc_ctx *ctx = fcg_begin("roll", 1, &a, &early);
    if (!ctx || early) return early;
    int ax = 0;
    if (axis != FC_AXIS_NONE && !norm_axis(ctx, "roll", a, axis, &ax, &early)) return early;
    cscope cs;
    if (!cs_open(&cs, ctx)) return cs_nomem(ctx, "roll");
    fc_array *r;
    if (axis == FC_AXIS_NONE) /* rolls the flattened array, then restores the shape */
        r = fc_reshape(roll_axis(fc_reshape(a, FC_SHAPE((int64_t)fcg_node_numel(a))), 0, shift),
                       shape_of(a));
    else
        r = roll_axis(a, ax, shift);
    return cs_close(&cs, r);
}

fc_array *fc_roll_axes(fc_array *a, int n, const int64_t *shifts, const int *axes) {
    fc_array *early;
    fc_ctx *ctx = fcg_begin("roll", 1, &a, &early);
    if (!ctx || early) return early;
    if (n < 0 || (n > 0 && (!shifts || !axes)))
        return fcg_poison(ctx, n < 0 ? FC_ERR_INVALID : FC_ERR_NULL,
                          "roll: %d shifts, shifts or axes NULL", n);
    /* Shifts of one axis add up (NumPy broadcasts shift against axis); each is reduced mod
     * the axis length first so that the sum cannot overflow. */
    int64_t total[FC_MAX_DIMS] = {0};
    for (int i = 0; i < n; i++) {
        int ax;
        if (!norm_axis(ctx, "roll", a, axes[i], &ax, &early)) return early;
        int64_t len = a->shape[ax];
        if (len) total[ax] = (total[ax] + ((shifts[i] % len) + len) % len) % len;
    }
    cscope cs;
    if (!cs_open(&cs, ctx)) return cs_nomem(ctx, "roll");
    fc_array *r = a;
    for (int d = 0; d < a->ndim; d++) r = roll_axis(r, d, total[d]);
    return cs_close(&cs, r);
}

/* The pieces a[start[i]:start[i+1]] along `axis` (Python slice bounds), n of them. */
static fc_status split_pieces(fc_array *a, const char *name, int axis, int64_t n,
                              const int64_t *bounds, int64_t step_len, fc_array **out) {
    fc_ctx *ctx = a->ctx;
    cscope cs;
    if (!cs_open(&cs, ctx)) return fill_poison(ctx, out, n, cs_nomem(ctx, name));
    int64_t len = a->shape[axis];
    for (int64_t i = 0; i < n; i++) {
        int64_t lo = bounds ? (i == 0 ? 0 : bounds[i - 1]) : i * step_len;
        int64_t hi = bounds ? (i == n - 1 ? len : bounds[i]) : (i + 1) * step_len;
        /* Python's clipping, done here so that no bound is mistaken for FC_NIL (INT64_MIN) */
        lo = lo < -len ? 0 : lo > len ? len : lo;
        hi = hi < -len ? 0 : hi > len ? len : hi;
        out[i] = fcg_slice_axis(a, axis, lo, hi, 1);
    }
    return cs_close_n(&cs, out, n);
}

fc_status fc_split(fc_array *a, int64_t sections, int axis, fc_array **out) {
    if (!a) return FC_ERR_NULL;
    fc_ctx *ctx = a->ctx;
    if (!out) return fcg_error(ctx, FC_ERR_NULL, "split: out is NULL");
    if (sections < 1)
        return fcg_error(ctx, FC_ERR_INVALID, "split: number of sections %lld must be larger "
                         "than 0", (long long)sections);
    if (a->status != FC_OK) {
        fcg_retain(a);
        return fill_poison(ctx, out, sections, fcg_ret(ctx, a));
    }
    int ax;
    fc_array *bad;
    if (!norm_axis(ctx, "split", a, axis, &ax, &bad)) return fill_poison(ctx, out, sections, bad);
    if (a->shape[ax] % sections != 0) {
        char d[FCG_DESC_MAX];
        return fill_poison(ctx, out, sections,
                           fcg_poison(ctx, FC_ERR_SHAPE, "split: %s does not divide into %lld "
                                      "equal sections along axis %d", fcg_desc(d, a),
                                      (long long)sections, axis));
    }
    return split_pieces(a, "split", ax, sections, NULL, a->shape[ax] / sections, out);
}

fc_status fc_split_at(fc_array *a, int n, const int64_t *indices, int axis, fc_array **out) {
    if (!a) return FC_ERR_NULL;
    fc_ctx *ctx = a->ctx;
    if (!out) return fcg_error(ctx, FC_ERR_NULL, "split: out is NULL");
    if (n < 0) return fcg_error(ctx, FC_ERR_INVALID, "split: %d indices", n);
    if (n > 0 && !indices)
        return fill_poison(ctx, out, (int64_t)n + 1,
                           fcg_poison(ctx, FC_ERR_NULL, "split: indices is NULL"));
    if (a->status != FC_OK) {
        fcg_retain(a);
        return fill_poison(ctx, out, (int64_t)n + 1, fcg_ret(ctx, a));
    }
    int ax;
    fc_array *bad;
    if (!norm_axis(ctx, "split", a, axis, &ax, &bad))
        return fill_poison(ctx, out, (int64_t)n + 1, bad);
    return split_pieces(a, "split", ax, (int64_t)n + 1, indices, 0, out);
}

/* tril keeps j - i <= k, triu j - i >= k, over the last two axes (a 1-D input broadcasts
 * against an n x n mask, as NumPy's tri(*m.shape[-2:]) does). The mask is two aranges: no
 * data, just index arithmetic in the kernel. */
static fc_array *tri_mask(fc_array *a, int64_t k, bool lower, const char *name) {
    fc_array *early;
    fc_ctx *ctx = fcg_begin(name, 1, &a, &early);
    if (!ctx || early) return early;
    if (a->ndim < 1) {
        char d[FCG_DESC_MAX];
        return fcg_poison(ctx, FC_ERR_SHAPE, "%s: input %s must have at least 1 dimension", name,
                          fcg_desc(d, a));
    }
    int64_t m = a->shape[a->ndim - 1], n = a->ndim >= 2 ? a->shape[a->ndim - 2] : m;
    /* Beyond these bounds the mask no longer changes: clamping keeps j - i - k in range. */
    int64_t kk = k < -n ? -n : k > m ? m : k;
    cscope cs;
    if (!cs_open(&cs, ctx)) return cs_nomem(ctx, name);
    fc_array *rows = fc_reshape(fc_arange(ctx, FC_I64, 0, (double)n, 1), FC_SHAPE(n, 1));
    fc_array *diff = fc_sub(fc_arange(ctx, FC_I64, 0, (double)m, 1), rows); /* j - i */
    fc_array *kw = fc_i64(ctx, kk);
    fc_array *mask = lower ? fc_less_equal(diff, kw) : fc_greater_equal(diff, kw);
    return cs_close(&cs, fc_where(mask, a, scalar_of(ctx, (fc_dtype)a->dtype, 0)));
}

fc_array *fc_tril(fc_array *a, int64_t k) { return tri_mask(a, k, true, "tril"); }
fc_array *fc_triu(fc_array *a, int64_t k) { return tri_mask(a, k, false, "triu"); }

/* The two axes of a diagonal, normalised; else a poison naming `name`. */
static bool diag_axes(fc_ctx *ctx, const char *name, const fc_array *a, int axis1, int axis2,
                      int *a1, int *a2, fc_array **bad) {
    char d[FCG_DESC_MAX];
    if (a->ndim < 2) {
        *bad = fcg_poison(ctx, FC_ERR_SHAPE, "%s: %s has fewer than 2 dimensions", name,
                          fcg_desc(d, a));
        return false;
    }
    if (!norm_axis(ctx, name, a, axis1, a1, bad) || !norm_axis(ctx, name, a, axis2, a2, bad))
        return false;
    if (*a1 == *a2) {
        *bad = fcg_poison(ctx, FC_ERR_AXIS, "%s: axis1 and axis2 are both %d for %s", name, *a1,
                          fcg_desc(d, a));
        return false;
    }
    return true;
}

fc_array *fc_diagonal(fc_array *a, int64_t offset, int axis1, int axis2) {
    fc_array *early;
    fc_ctx *ctx = fcg_begin("diagonal", 1, &a, &early);
    if (!ctx || early) return early;
    int a1, a2;
    if (!diag_axes(ctx, "diagonal", a, axis1, axis2, &a1, &a2, &early)) return early;
    int64_t s1 = a->shape[a1], s2 = a->shape[a2];
    /* The diagonal's length and the corner of its square window. */
    int64_t len = 0, r0 = 0, c0 = 0;
    if (offset >= 0 && offset < s2) {
        len = s1 < s2 - offset ? s1 : s2 - offset;
        c0 = offset;
    } else if (offset < 0 && offset > -s1) {
        len = s1 + offset < s2 ? s1 + offset : s2;
        r0 = -offset;
    }
    cscope cs;
    if (!cs_open(&cs, ctx)) return cs_nomem(ctx, "diagonal");
    /* The other axes first (in order), then axis1 and axis2, as NumPy lays the result out. */
    fc_axes perm = {a->ndim, {0}};
    int k = 0;
    for (int i = 0; i < a->ndim; i++)
        if (i != a1 && i != a2) perm.axis[k++] = i;
    perm.axis[k++] = a1;
    perm.axis[k++] = a2;
    fc_array *t = fc_permute(a, perm);
    fc_idx win[3] = {FC_ELLIPSIS, FC_S(r0, r0 + len, 1), FC_S(c0, c0 + len, 1)};
    t = fc_index(t, 3, win);
    /* In the row-major flattening of an L x L window, (i, i) sits at i * (L + 1). */
    fc_shape flat = {a->ndim - 1, {0}};
    for (int i = 0; i < a->ndim - 2; i++) flat.dim[i] = t->shape[i];
    flat.dim[a->ndim - 2] = len * len;
    fc_idx step[2] = {FC_ELLIPSIS, FC_S(0, FC_NIL, len + 1)};
    t = fc_index(fc_reshape(t, flat), 2, step);
    return cs_close(&cs, t);
}

fc_array *fc_diag(fc_array *v, int64_t k) {
    fc_array *early;
    fc_ctx *ctx = fcg_begin("diag", 1, &v, &early);
    if (!ctx || early) return early;
    char d[FCG_DESC_MAX];
    if (v->ndim == 2) return fc_diagonal(v, k, 0, 1);
    if (v->ndim != 1)
        return fcg_poison(ctx, FC_ERR_SHAPE, "diag: input %s must be 1-d or 2-d", fcg_desc(d, v));
    int64_t n = v->shape[0];
    uint64_t ak = k < 0 ? (uint64_t)0 - (uint64_t)k : (uint64_t)k;
    if (ak > (uint64_t)1 << 40 || too_large((int64_t[]){n + (int64_t)ak, n + (int64_t)ak}, 2,
                                            (fc_dtype)v->dtype))
        return fcg_poison(ctx, FC_ERR_SHAPE, "diag: the result for %s with k %lld is too large",
                          fcg_desc(d, v), (long long)k);
    int64_t big = n + (int64_t)ak;
    if (n == 0) /* nothing to place: no pad of an empty axis to load through */
        return fc_zeros(ctx, (fc_dtype)v->dtype, FC_SHAPE(big, big));
    cscope cs;
    if (!cs_open(&cs, ctx)) return cs_nomem(ctx, "diag");
    /* Row r of the result holds v[r] on the diagonal for k >= 0 (column c = r + k); column c
     * holds v[c] for k < 0. So v, padded to the result's size, broadcast along rows or
     * columns and masked by eye(k), is the matrix: one elementwise kernel, no scatter. */
    fc_array *padded = fc_pad(v, 1, (const int64_t[][2]){{0, (int64_t)ak}}, FC_PAD_CONSTANT, 0);
    fc_array *lines = fc_reshape(padded, k >= 0 ? FC_SHAPE(big, 1) : FC_SHAPE(1, big));
    fc_array *mask = fc_eye(ctx, FC_BOOL, big, big, k);
    return cs_close(&cs, fc_where(mask, lines, scalar_of(ctx, (fc_dtype)v->dtype, 0)));
}

fc_array *fc_trace(fc_array *a, int64_t offset, int axis1, int axis2) {
    fc_array *early;
    fc_ctx *ctx = fcg_begin("trace", 1, &a, &early);
    if (!ctx || early) return early;
    int a1, a2;
    if (!diag_axes(ctx, "trace", a, axis1, axis2, &a1, &a2, &early)) return early;
    cscope cs;
    if (!cs_open(&cs, ctx)) return cs_nomem(ctx, "trace");
    /* the sum's dtype rule: bool and signed integers give i64, unsigned u64 */
    return cs_close(&cs, fc_sum(fc_diagonal(a, offset, a1, a2), FC_AXES(-1), false));
}

/* ---- reductions ------------------------------------------------------------------------- */

/* where(isnan(a), fill, a): NaN (either part, for complex) replaced by a 0-d constant. */
static fc_array *replace_nan(fc_array *a, fc_array *fill) {
    return fc_where(fc_isnan(a), fill, a);
}

/* nansum / nanprod: NaN counts as the identity; bool and integers have no NaN. */
static fc_array *nan_sum_prod(fc_array *a, fc_axes axes, bool keepdims, bool product) {
    const char *name = product ? "nanprod" : "nansum";
    fc_array *early;
    fc_ctx *ctx = fcg_begin(name, 1, &a, &early);
    if (!ctx || early) return early;
    uint32_t mask;
    if (!reduce_mask(ctx, name, a, axes, false, &mask, &early)) return early;
    cscope cs;
    if (!cs_open(&cs, ctx)) return cs_nomem(ctx, name);
    fc_array *x = a;
    fc_dtype t = (fc_dtype)a->dtype;
    if (fcg_is_inexact(t)) x = replace_nan(a, scalar_of(ctx, t, product));
    return cs_close(&cs, product ? fc_prod(x, axes, keepdims) : fc_sum(x, axes, keepdims));
}

fc_array *fc_nansum(fc_array *a, fc_axes axes, bool keepdims) {
    return nan_sum_prod(a, axes, keepdims, false);
}
fc_array *fc_nanprod(fc_array *a, fc_axes axes, bool keepdims) {
    return nan_sum_prod(a, axes, keepdims, true);
}

fc_array *fc_nanmean(fc_array *a, fc_axes axes, bool keepdims) {
    fc_array *early;
    fc_ctx *ctx = fcg_begin("nanmean", 1, &a, &early);
    if (!ctx || early) return early;
    uint32_t mask;
    if (!reduce_mask(ctx, "nanmean", a, axes, false, &mask, &early)) return early;
    cscope cs;
    if (!cs_open(&cs, ctx)) return cs_nomem(ctx, "nanmean");
    fc_dtype t = (fc_dtype)a->dtype;
    if (!fcg_is_inexact(t)) return cs_close(&cs, fc_mean(a, axes, keepdims));
    /* NumPy: sum of the non-NaN values / their count (an intp), divided in the promoted
     * dtype (f64, or c128) and cast back; an all-NaN slice is 0 / 0 = NaN. Both sums read
     * the same input over the same axes: one reduction kernel. */
    fc_array *nan = fc_isnan(a);
    fc_array *tot = fc_sum(fc_where(nan, scalar_of(ctx, t, 0), a), axes, keepdims);
    fc_array *cnt = fc_sum(fc_logical_not(nan), axes, keepdims);
    return cs_close(&cs, fc_cast(fc_div(tot, cnt), t));
}

/* nanmax / nanmin: NumPy's fmax / fmin reduction. The NaNs are replaced by a value no other
 * element is below (above), so the max of the rest wins; a slice of NaNs only gives its first
 * element, which is what fmax.reduce keeps when every later element is NaN too. */
static fc_array *nan_extreme(fc_array *a, fc_axes axes, bool keepdims, bool is_max) {
    const char *name = is_max ? "nanmax" : "nanmin";
    fc_array *early;
    fc_ctx *ctx = fcg_begin(name, 1, &a, &early);
    if (!ctx || early) return early;
    uint32_t mask;
    if (!reduce_mask(ctx, name, a, axes, true, &mask, &early)) return early;
    cscope cs;
    if (!cs_open(&cs, ctx)) return cs_nomem(ctx, name);
    fc_dtype t = (fc_dtype)a->dtype;
    if (!fcg_is_inexact(t))
        return cs_close(&cs, is_max ? fc_max(a, axes, keepdims) : fc_min(a, axes, keepdims));
    double inf = is_max ? -INFINITY : INFINITY;
    /* complex compares lexicographically: (-inf, -inf) is below every non-NaN value */
    fc_array *fill = fcg_is_complex(t) ? fc_full_complex(ctx, t, FC_SCALAR, inf, inf)
                                       : scalar_of(ctx, t, inf);
    fc_array *nan = fc_isnan(a);
    fc_array *x = fc_where(nan, fill, a);
    fc_array *m = is_max ? fc_max(x, axes, keepdims) : fc_min(x, axes, keepdims);
    fc_idx first[FC_MAX_DIMS];
    for (int d = 0; d < a->ndim; d++)
        first[d] = !(mask >> d & 1u) ? FC_COLON : keepdims ? FC_S(0, 1, 1) : FC_AT(0);
    fc_array *head = fc_index(a, a->ndim, first);
    return cs_close(&cs, fc_where(fc_all(nan, axes, keepdims), head, m));
}

fc_array *fc_nanmax(fc_array *a, fc_axes axes, bool keepdims) {
    return nan_extreme(a, axes, keepdims, true);
}
fc_array *fc_nanmin(fc_array *a, fc_axes axes, bool keepdims) {
    return nan_extreme(a, axes, keepdims, false);
}

/* nanargmax / nanargmin: NumPy replaces NaN by -inf (+inf) and takes argmax (argmin), so
 * ties keep the first index as it does. An all-NaN slice, where NumPy raises ValueError, gives
 * -1 (as CuPy does): a value check would need an op that fails evaluation on data. */
static fc_array *nan_arg(fc_array *a, int axis, bool keepdims, bool is_max) {
    const char *name = is_max ? "nanargmax" : "nanargmin";
    fc_array *early;
    fc_ctx *ctx = fcg_begin(name, 1, &a, &early);
    if (!ctx || early) return early;
    fc_axes axes = FC_ALL;
    if (axis != FC_AXIS_NONE) {
        int ax;
        if (!norm_axis(ctx, name, a, axis, &ax, &early)) return early;
        axes = FC_AXES(ax);
    }
    uint32_t mask;
    if (!reduce_mask(ctx, name, a, axes, true, &mask, &early)) return early;
    cscope cs;
    if (!cs_open(&cs, ctx)) return cs_nomem(ctx, name);
    fc_dtype t = (fc_dtype)a->dtype;
    if (!fcg_is_inexact(t))
        return cs_close(&cs, is_max ? fc_argmax(a, axis, keepdims) : fc_argmin(a, axis, keepdims));
    fc_array *nan = fc_isnan(a);
    fc_array *x = fc_where(nan, scalar_of(ctx, t, is_max ? -INFINITY : INFINITY), a);
    fc_array *idx = is_max ? fc_argmax(x, axis, keepdims) : fc_argmin(x, axis, keepdims);
    return cs_close(&cs, fc_where(fc_all(nan, axes, keepdims), fc_i64(ctx, -1), idx));
}

fc_array *fc_nanargmax(fc_array *a, int axis, bool keepdims) {
    return nan_arg(a, axis, keepdims, true);
}
fc_array *fc_nanargmin(fc_array *a, int axis, bool keepdims) {
    return nan_arg(a, axis, keepdims, false);
}

fc_array *fc_logsumexp(fc_array *a, fc_axes axes, bool keepdims) {
    fc_array *early;
    fc_ctx *ctx = fcg_begin("logsumexp", 1, &a, &early);
    if (!ctx || early) return early;
    char d[FCG_DESC_MAX];
    fc_dtype t = (fc_dtype)a->dtype;
    if (fcg_is_complex(t))
        return fcg_poison(ctx, FC_ERR_DTYPE, "logsumexp: complex input %s is not supported",
                          fcg_desc(d, a));
    uint32_t mask;
    if (!reduce_mask(ctx, "logsumexp", a, axes, true, &mask, &early)) return early;
    cscope cs;
    if (!cs_open(&cs, ctx)) return cs_nomem(ctx, "logsumexp");
    if (!fcg_is_inexact(t)) t = FC_F64; /* scipy promotes integers and bool to float64 */
    fc_array *x = fc_cast(a, t);
    /* scipy: shift by the max, with a non-finite max replaced by 0, so that a slice of -inf
     * gives log(0) + 0 = -inf, one holding +inf gives inf, one holding NaN gives NaN. The
     * shape is max-reduce -> broadcast -> elementwise -> sum -> elementwise: one row kernel. */
    fc_array *m = fc_max(x, axes, true);
    fc_array *shift = fc_where(fc_isfinite(m), m, scalar_of(ctx, t, 0));
    fc_array *s = fc_sum(fc_exp(fc_sub(x, shift)), axes, keepdims);
    fc_array *r = fc_add(fc_log(s), keepdims ? shift : fc_reshape(shift, shape_of(s)));
    return cs_close(&cs, r);
}

/* ---- elementwise composites ------------------------------------------------------------- */

/* Whether any input of an elementwise composite fails to broadcast; a poison naming `name`. */
static bool broadcast_ok(fc_ctx *ctx, const char *name, int n, fc_array *const *in,
                         fc_array **bad) {
    int nd;
    int64_t shape[FC_MAX_DIMS];
    fc_status st = fcg_broadcast_shapes(ctx, name, n, in, &nd, shape);
    if (st == FC_OK) return true;
    *bad = fcg_poison_ctx(ctx, st);
    return false;
}

static fc_array *isclose_impl(fc_array *a, fc_array *b, double rtol, double atol,
                              bool equal_nan, const char *name, bool reduce) {
    fc_array *in[2] = {a, b}, *early;
    fc_ctx *ctx = fcg_begin(name, 2, in, &early);
    if (!ctx || early) return early;
    if (!broadcast_ok(ctx, name, 2, in, &early)) return early;
    cscope cs;
    if (!cs_open(&cs, ctx)) return cs_nomem(ctx, name);
    /* NumPy makes b inexact first (result_type(b, 1.0): integers and bool -> f64, a Python
     * int -> a Python float); x * 1.0 does exactly that, weak scalars included. */
    fc_array *y = fcg_is_inexact((fc_dtype)b->dtype) ? b : fc_mul(b, fc_f64(ctx, 1.0));
    /* (|x - y| <= atol + rtol * |y|) & isfinite(y) | (x == y), tolerances as Python floats */
    fc_array *tol = fc_add(fc_f64(ctx, atol), fc_mul(fc_f64(ctx, rtol), fc_abs(y)));
    fc_array *r = fc_bitwise_or(
        fc_bitwise_and(fc_less_equal(fc_abs(fc_sub(a, y)), tol), fc_isfinite(y)),
        fc_equal(a, y));
    if (equal_nan) r = fc_bitwise_or(r, fc_bitwise_and(fc_isnan(a), fc_isnan(y)));
    if (reduce) r = fc_all(r, FC_ALL, false);
    return cs_close(&cs, r);
}

fc_array *fc_isclose(fc_array *a, fc_array *b, double rtol, double atol, bool equal_nan) {
    return isclose_impl(a, b, rtol, atol, equal_nan, "isclose", false);
}
fc_array *fc_allclose(fc_array *a, fc_array *b, double rtol, double atol, bool equal_nan) {
    return isclose_impl(a, b, rtol, atol, equal_nan, "allclose", true);
}

/* NumPy's power_of_ten (multiarray/calculation.c): exact up to 1e8, then repeated products,
 * which is what its round multiplies by. */
static double power_of_ten(int n) {
    static const double p10[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8};
    if (n < 9) return p10[n];
    double r = 1e9;
    while (n-- > 9) r *= 10.0;
    return r;
}

/* PyArray_Round on a real float array: rint(x * 10**d) / 10**d (or rint(x / 10**-d) * 10**-d),
 * the factor a Python float, so the arithmetic runs in x's own dtype. */
static fc_array *round_float(fc_ctx *ctx, fc_array *x, int decimals) {
    if (decimals == 0) return fc_rint(x);
    fc_array *f = fc_f64(ctx, power_of_ten(decimals > 0 ? decimals : -decimals));
    return decimals > 0 ? fc_div(fc_rint(fc_mul(x, f)), f) : fc_mul(fc_rint(fc_div(x, f)), f);
}

fc_array *fc_round(fc_array *a, int decimals) {
    fc_array *early;
    fc_ctx *ctx = fcg_begin("round", 1, &a, &early);
    if (!ctx || early) return early;
    fc_dtype t = (fc_dtype)a->dtype;
    /* 10**400 is inf already: larger magnitudes change nothing (and cannot overflow). */
    int dec = decimals > 400 ? 400 : decimals < -400 ? -400 : decimals;
    if (t == FC_BOOL && dec != 0) {
        char d[FCG_DESC_MAX];
        return fcg_poison(ctx, FC_ERR_DTYPE, "round: decimals %d of a bool array %s (NumPy "
                          "cannot cast the float product back to bool)", decimals, fcg_desc(d, a));
    }
    if (fcg_is_int(t) && dec >= 0) { /* integers are already rounded */
        fcg_retain(a);
        return fcg_ret(ctx, a);
    }
    cscope cs;
    if (!cs_open(&cs, ctx)) return cs_nomem(ctx, "round");
    fc_array *r;
    if (fcg_is_int(t)) /* in f64, then cast back as NumPy does */
        r = fc_cast(round_float(ctx, fc_cast(a, FC_F64), dec), t);
    else if (fcg_is_complex(t)) /* each part on its own */
        r = complex_from_parts(ctx, round_float(ctx, fc_real(a), dec),
                               round_float(ctx, fc_imag(a), dec));
    else
        r = round_float(ctx, a, dec); /* bool with decimals 0: rint, an f16 */
    return cs_close(&cs, r);
}

fc_array *fc_nan_to_num(fc_array *a, double nan, const double *posinf, const double *neginf) {
    fc_array *early;
    fc_ctx *ctx = fcg_begin("nan_to_num", 1, &a, &early);
    if (!ctx || early) return early;
    fc_dtype t = (fc_dtype)a->dtype;
    if (!fcg_is_inexact(t)) {
        fcg_retain(a);
        return fcg_ret(ctx, a);
    }
    cscope cs;
    if (!cs_open(&cs, ctx)) return cs_nomem(ctx, "nan_to_num");
    fc_dtype rt = fcg_real_dtype(t);
    double hi = posinf ? *posinf : float_max(rt), lo = neginf ? *neginf : -float_max(rt);
    bool cx = fcg_is_complex(t);
    fc_array *parts[2] = {cx ? fc_real(a) : a, cx ? fc_imag(a) : NULL};
    fc_array *inf = fc_f64(ctx, INFINITY), *ninf = fc_f64(ctx, -INFINITY);
    for (int i = 0; i < 2 && parts[i]; i++) {
        fc_array *x = parts[i];
        parts[i] = fc_where(fc_isnan(x), scalar_of(ctx, rt, nan),
                            fc_where(fc_equal(x, inf), scalar_of(ctx, rt, hi),
                                     fc_where(fc_equal(x, ninf), scalar_of(ctx, rt, lo), x)));
    }
    fc_array *r = cx ? complex_from_parts(ctx, parts[0], parts[1]) : parts[0];
    return cs_close(&cs, r);
}

fc_array *fc_heaviside(fc_array *x1, fc_array *x2) {
    fc_array *in[2] = {x1, x2}, *early;
    fc_ctx *ctx = fcg_begin("heaviside", 2, in, &early);
    if (!ctx || early) return early;
    if (!broadcast_ok(ctx, "heaviside", 2, in, &early)) return early;
    /* NumPy's loops are float only (e f d): the common type's float, as arctan2 resolves it */
    fc_dtype out, loop;
    bool weak;
    if (fcg_ew_types(ctx, FCG_OP_ARCTAN2, 2, in, FC_BOOL, &out, &loop, &weak) != FC_OK) {
        char d1[FCG_DESC_MAX], d2[FCG_DESC_MAX];
        return fcg_poison(ctx, FC_ERR_DTYPE, "heaviside: not supported for %s and %s",
                          fcg_desc(d1, x1), fcg_desc(d2, x2));
    }
    cscope cs;
    if (!cs_open(&cs, ctx)) return cs_nomem(ctx, "heaviside");
    fc_array *x = fc_cast(x1, loop), *h0 = fc_cast(x2, loop), *zero = fc_f64(ctx, 0.0);
    /* npy_heaviside: NaN -> NaN (x itself), 0 -> h0 (either sign), < 0 -> 0, > 0 -> 1 */
    fc_array *r = fc_where(fc_less(x, zero), scalar_of(ctx, loop, 0),
                           fc_where(fc_greater(x, zero), scalar_of(ctx, loop, 1),
                                    fc_where(fc_equal(x, zero), h0, x)));
    return cs_close(&cs, r);
}

/* x * c as NumPy's deg2rad / rad2deg loops compute it: in f64 with the double constant; in
 * f32 with the float constant (NPY_PIf / 180.0f, 180.0f / NPY_PIf, folded in float); f16 and
 * bf16 (and narrow integers) through f32, rounded once at the end. */
static fc_array *angle_scale(fc_array *a, bool to_rad) {
    const char *name = to_rad ? "deg2rad" : "rad2deg";
    fc_array *early;
    fc_ctx *ctx = fcg_begin(name, 1, &a, &early);
    if (!ctx || early) return early;
    fc_dtype t = (fc_dtype)a->dtype;
    if (fcg_is_complex(t)) {
        char d[FCG_DESC_MAX];
        return fcg_poison(ctx, FC_ERR_DTYPE, "%s: complex input %s is not supported", name,
                          fcg_desc(d, a));
    }
    fc_dtype ft = fcg_float_of(t);
    cscope cs;
    if (!cs_open(&cs, ctx)) return cs_nomem(ctx, name);
    /* The float constants as NumPy's C folds them, written out so that no compiler's excess
     * precision (x87) can fold them differently: fl(fl(pi) / 180) and fl(180 / fl(pi)). */
    static const double rad_f32 = 0x1.1df46ap-6, deg_f32 = 0x1.ca5dcp+5;
    fc_array *r;
    if (ft == FC_F64) {
        double c = to_rad ? 3.14159265358979323846 / 180.0 : 180.0 / 3.14159265358979323846;
        r = fc_mul(fc_cast(a, FC_F64), scalar_of(ctx, FC_F64, c));
    } else {
        double c = to_rad ? rad_f32 : deg_f32;
        r = fc_cast(fc_mul(fc_cast(a, FC_F32), scalar_of(ctx, FC_F32, c)), ft);
    }
    return cs_close(&cs, r);
}

fc_array *fc_deg2rad(fc_array *a) { return angle_scale(a, true); }
fc_array *fc_rad2deg(fc_array *a) { return angle_scale(a, false); }

fc_array *fc_sinc(fc_array *a) {
    fc_array *early;
    fc_ctx *ctx = fcg_begin("sinc", 1, &a, &early);
    if (!ctx || early) return early;
    cscope cs;
    if (!cs_open(&cs, ctx)) return cs_nomem(ctx, "sinc");
    /* NumPy: x = pi * x (a Python float: integers give f64); y = where(x, x, eps) with eps the
     * dtype's machine epsilon (1e-20 for complex); sin(y) / y. */
    fc_array *x = fc_mul(fc_f64(ctx, 3.14159265358979323846), a);
    fc_dtype t = (fc_dtype)x->dtype;
    fc_array *eps = fcg_is_complex(t) ? fc_f64(ctx, 1e-20) : scalar_of(ctx, t, float_eps(t));
    fc_array *y = fc_where(x, x, eps);
    return cs_close(&cs, fc_div(fc_sin(y), y));
}

fc_array *fc_positive(fc_array *a) {
    fc_array *early;
    fc_ctx *ctx = fcg_begin("positive", 1, &a, &early);
    if (!ctx || early) return early;
    if (a->dtype == FC_BOOL) {
        char d[FCG_DESC_MAX];
        return fcg_poison(ctx, FC_ERR_DTYPE, "positive: not supported for bool %s", fcg_desc(d, a));
    }
    fcg_retain(a); /* +x is x: arrays are values */
    return fcg_ret(ctx, a);
}

fc_array *fc_fabs(fc_array *a) {
    fc_array *early;
    fc_ctx *ctx = fcg_begin("fabs", 1, &a, &early);
    if (!ctx || early) return early;
    fc_dtype t = (fc_dtype)a->dtype;
    if (fcg_is_complex(t)) {
        char d[FCG_DESC_MAX];
        return fcg_poison(ctx, FC_ERR_DTYPE, "fabs: complex input %s is not supported (use abs)",
                          fcg_desc(d, a));
    }
    cscope cs;
    if (!cs_open(&cs, ctx)) return cs_nomem(ctx, "fabs");
    return cs_close(&cs, fc_abs(fc_cast(a, fcg_float_of(t))));
}

fc_array *fc_float_power(fc_array *a, fc_array *b) {
    fc_array *in[2] = {a, b}, *early;
    fc_ctx *ctx = fcg_begin("float_power", 2, in, &early);
    if (!ctx || early) return early;
    if (!broadcast_ok(ctx, "float_power", 2, in, &early)) return early;
    cscope cs;
    if (!cs_open(&cs, ctx)) return cs_nomem(ctx, "float_power");
    fc_dtype t = fcg_is_complex((fc_dtype)a->dtype) || fcg_is_complex((fc_dtype)b->dtype)
                     ? FC_C128 : FC_F64;
    return cs_close(&cs, fc_pow(fc_cast(a, t), fc_cast(b, t)));
}

/* ---- random generators (include/fusec.h, fc_rng): draws of the random op, and NumPy's
 * Generator methods composed from them ---------------------------------------------------- */

fc_rng fc_rng_init(uint64_t seed) {
    return (fc_rng){seed, 0};
}

/* The next stream of rng; NULL rng poisons (ctx set) or returns NULL (no ctx). */
static bool rng_next(fc_ctx *ctx, fc_rng *rng, const char *name, uint64_t *stream,
                     fc_array **bad) {
    *bad = NULL;
    if (!ctx) return false;
    if (!rng) {
        *bad = fcg_poison(ctx, FC_ERR_NULL, "%s: no generator", name);
        return false;
    }
    *stream = rng->stream++;
    return true;
}

static bool real_float(fc_ctx *ctx, const char *name, fc_dtype dtype, fc_array **bad) {
    if (fcg_is_float(dtype)) return true;
    *bad = fcg_poison(ctx, FC_ERR_DTYPE, "%s: dtype %s is not a real floating dtype", name,
                      (unsigned)dtype < FC_DTYPE_COUNT ? fc_dtype_name(dtype) : "?");
    return false;
}

/* The random op's own draw of `mode` from rng's next stream. */
static fc_array *draw(fc_ctx *ctx, fc_rng *rng, const char *name, int mode, fc_dtype dtype,
                      fc_shape shape, int64_t low, int64_t high) {
    uint64_t stream;
    fc_array *bad;
    if (!rng_next(ctx, rng, name, &stream, &bad)) return bad;
    return fcg_random_draw(ctx, name, mode, dtype, shape, rng->seed, stream, low, high);
}

fc_array *fc_rng_random(fc_ctx *ctx, fc_rng *rng, fc_dtype dtype, fc_shape shape) {
    return draw(ctx, rng, "random", FCG_RANDOM_UNIFORM, dtype, shape, 0, 0);
}

fc_array *fc_rng_standard_normal(fc_ctx *ctx, fc_rng *rng, fc_dtype dtype, fc_shape shape) {
    return draw(ctx, rng, "standard_normal", FCG_RANDOM_NORMAL, dtype, shape, 0, 0);
}

fc_array *fc_rng_integers(fc_ctx *ctx, fc_rng *rng, int64_t low, int64_t high, fc_dtype dtype,
                          fc_shape shape) {
    return draw(ctx, rng, "integers", FCG_RANDOM_INTEGERS, dtype, shape, low, high);
}

/* f(u) for u of f64's uniform draw, cast to dtype, in a private scope. */
typedef fc_array *(*u_map)(fc_ctx *ctx, fc_array *u, double a, double b);

static fc_array *map_uniform(fc_ctx *ctx, fc_rng *rng, const char *name, fc_dtype dtype,
                             fc_shape shape, u_map f, double a, double b) {
    cscope cs;
    if (!cs_open(&cs, ctx)) return cs_nomem(ctx, name);
    fc_array *r = f(ctx, draw(ctx, rng, name, FCG_RANDOM_UNIFORM, FC_F64, shape, 0, 0), a, b);
    return cs_close(&cs, dtype == FC_F64 || dtype == FC_BOOL ? r : fc_cast(r, dtype));
}

static fc_array *uniform_map(fc_ctx *ctx, fc_array *u, double low, double high) {
    return fc_add(fc_f64(ctx, low), fc_mul(fc_f64(ctx, high - low), u));
}

fc_array *fc_rng_uniform(fc_ctx *ctx, fc_rng *rng, double low, double high, fc_dtype dtype,
                         fc_shape shape) {
    fc_array *bad;
    if (!ctx) return NULL;
    if (!real_float(ctx, "uniform", dtype, &bad)) return bad;
    if (!isfinite(low) || !isfinite(high) || !isfinite(high - low))
        return fcg_poison(ctx, FC_ERR_VALUE, "uniform: the range [%g, %g) is not finite", low,
                          high);
    return map_uniform(ctx, rng, "uniform", dtype, shape, uniform_map, low, high);
}

static fc_array *exponential_map(fc_ctx *ctx, fc_array *u, double scale, double unused) {
    (void)unused;
    return fc_mul(fc_f64(ctx, -scale), fc_log1p(fc_negative(u)));
}

fc_array *fc_rng_exponential(fc_ctx *ctx, fc_rng *rng, double scale, fc_dtype dtype,
                             fc_shape shape) {
    fc_array *bad;
    if (!ctx) return NULL;
    if (!real_float(ctx, "exponential", dtype, &bad)) return bad;
    if (!(scale >= 0) || !isfinite(scale))
        return fcg_poison(ctx, FC_ERR_VALUE, "exponential: scale %g is not finite and >= 0",
                          scale);
    return map_uniform(ctx, rng, "exponential", dtype, shape, exponential_map, scale, 0);
}

static fc_array *bernoulli_map(fc_ctx *ctx, fc_array *u, double p, double unused) {
    (void)unused;
    return fc_less(u, fc_f64(ctx, p));
}

fc_array *fc_rng_bernoulli(fc_ctx *ctx, fc_rng *rng, double p, fc_shape shape) {
    if (!ctx) return NULL;
    if (!(p >= 0 && p <= 1))
        return fcg_poison(ctx, FC_ERR_VALUE, "bernoulli: p = %g is not in [0, 1]", p);
    return map_uniform(ctx, rng, "bernoulli", FC_BOOL, shape, bernoulli_map, p, 0);
}

fc_array *fc_rng_normal(fc_ctx *ctx, fc_rng *rng, double loc, double scale, fc_dtype dtype,
                        fc_shape shape) {
    fc_array *bad;
    if (!ctx) return NULL;
    if (!real_float(ctx, "normal", dtype, &bad)) return bad;
    if (!(scale >= 0) || !isfinite(scale) || !isfinite(loc))
        return fcg_poison(ctx, FC_ERR_VALUE, "normal: loc %g and scale %g must be finite, scale "
                          ">= 0", loc, scale);
    cscope cs;
    if (!cs_open(&cs, ctx)) return cs_nomem(ctx, "normal");
    fc_array *z = draw(ctx, rng, "normal", FCG_RANDOM_NORMAL, dtype, shape, 0, 0);
    /* Python floats: the arithmetic stays in dtype, as NumPy's loc + scale * z would */
    return cs_close(&cs, fc_add(fc_f64(ctx, loc), fc_mul(fc_f64(ctx, scale), z)));
}
