/*
 * graph/linalg.c - dense linear algebra, as np.linalg: solve, inv, det, slogdet, cholesky, qr,
 * eigh, eigvalsh.
 *
 * Six library ops carry the work (ops.def: LINALG_SOLVE, LINALG_SLOGDET, LINALG_CHOLESKY,
 * LINALG_QR, LINALG_EIGH, LINALG_EIGVALSH); everything else is built around them from views
 * and elementwise ops, which fuse with the kernels on either side of the call:
 *   inv(a)      solve(a, identity broadcast over a's batch), as NumPy's inv calls gesv
 *   slogdet(a)  one node giving [..., 2] (sign, log|det|): two views of it
 *   det(a)      sign * exp(logabsdet), as NumPy computes it (umath_linalg's det)
 *   cholesky(a, upper=True)  the conjugate transpose of the lower factor
 *   qr(a)       one node giving [..., rows, c + n] (Q beside R): two views of it, so that Q and
 *               R come from one factorisation
 *   eigh(a)     one node giving [..., n + 1, n] (eigenvalues above the eigenvectors): two
 *               views, the eigenvalues' real part for complex dtypes
 * A library op's inputs already have the op's dtype and the same batch shape (cast and
 * broadcast here), so the backends see dense stacks of equal matrices and nothing else.
 *
 * Dtypes are np.linalg's (_commonType): f32 / c64 stay single precision when every operand
 * is single precision, anything else computes in double (bool and integers in f64); f16 and
 * bf16 have no LAPACK loops in NumPy and are refused. Shape errors that NumPy raises as
 * LinAlgError (fewer than 2 dimensions, not square) are FC_ERR_LINALG here; a b that does not
 * fit a is NumPy's ValueError, FC_ERR_SHAPE.
 */
#include "graph.h"

#include <stdio.h>
#include <string.h>

/* The dtype np.linalg computes these operands in (complex if any is, single precision only
 * if all are), or false with a message for a dtype it refuses. */
static bool linalg_dtype(fc_ctx *ctx, const char *name, int n, fc_array *const *in,
                         fc_dtype *out) {
    bool cplx = false, dbl = false;
    for (int i = 0; i < n; i++) {
        fc_dtype t = (fc_dtype)in[i]->dtype;
        if (t == FC_F16 || t == FC_BF16) {
            fcg_error(ctx, FC_ERR_DTYPE, "%s: array type %s is unsupported in linalg", name,
                      fc_dtype_name(t));
            return false;
        }
        cplx |= fcg_is_complex(t);
        dbl |= t != FC_F32 && t != FC_C64;
    }
    *out = cplx ? (dbl ? FC_C128 : FC_C64) : (dbl ? FC_F64 : FC_F32);
    return true;
}

/* NumPy's _assert_stacked_2d, as an FC_ERR_LINALG poison. */
static fc_array *not_2d(fc_ctx *ctx, const char *name, const fc_array *a) {
    char d[FCG_DESC_MAX];
    if (a->ndim < 2)
        return fcg_poison(ctx, FC_ERR_LINALG, "%s: %d-dimensional array given (%s). Array must "
                          "be at least two-dimensional", name, a->ndim, fcg_desc(d, a));
    return NULL;
}

/* NumPy's _assert_stacked_2d and _assert_stacked_square, as FC_ERR_LINALG poisons. */
static fc_array *not_square(fc_ctx *ctx, const char *name, const fc_array *a) {
    char d[FCG_DESC_MAX];
    fc_array *early = not_2d(ctx, name, a);
    if (early) return early;
    if (a->shape[a->ndim - 1] != a->shape[a->ndim - 2])
        return fcg_poison(ctx, FC_ERR_LINALG, "%s: last 2 dimensions of the array must be "
                          "square (%s)", name, fcg_desc(d, a));
    return NULL;
}

/* x as a shape, with the last `core` extents replaced by core_shape. */
static fc_shape with_core(int nbatch, const int64_t *batch, int ncore, const int64_t *core) {
    fc_shape s;
    s.ndim = nbatch + ncore;
    for (int d = 0; d < nbatch; d++) s.dim[d] = batch[d];
    for (int d = 0; d < ncore; d++) s.dim[nbatch + d] = core[d];
    return s;
}

/* The library node over `in` (already cast and broadcast), owned by the caller's scope. */
static fc_array *lib_node(fc_ctx *ctx, fcg_op op, fc_dtype t, fc_shape shape, int nin,
                          fc_array *const *in, uint8_t flag) {
    fcg_params p;
    memset(&p, 0, sizeof p);
    p.flag = flag;
    return fcg_make(ctx, op, t, t, false, shape.ndim, shape.dim, nin, in, &p);
}

/* solve of a [A..., n, n] and a stack b [B..., n, k] (inv: flag 1, b the identity). */
static fc_array *solve_matrices(fc_ctx *ctx, const char *name, fc_array *a, fc_array *b,
                                bool vector, uint8_t flag) {
    char d1[FCG_DESC_MAX], d2[FCG_DESC_MAX];
    fc_array *early = not_square(ctx, name, a);
    if (early) return early;
    fc_dtype t;
    if (!linalg_dtype(ctx, name, 2, (fc_array *[]){a, b}, &t)) return fcg_poison_ctx(ctx, FC_ERR_DTYPE);
    int64_t n = a->shape[a->ndim - 1];
    int bdims = vector ? 1 : 2;
    if (b->ndim < bdims || b->shape[b->ndim - bdims] != n)
        return fcg_poison(ctx, FC_ERR_SHAPE, "%s: b %s does not fit a %s: its %s must have %lld "
                          "rows", name, fcg_desc(d2, b), fcg_desc(d1, a),
                          vector ? "vector" : "matrices", (long long)n);
    /* The batch: a's leading axes against b's (a vector b has none), broadcast. */
    int na = a->ndim - 2, nb = b->ndim - bdims, nd = na > nb ? na : nb;
    int64_t batch[FC_MAX_DIMS];
    for (int i = 0; i < nd; i++) {
        int ia = i - (nd - na), ib = i - (nd - nb);
        int64_t ea = ia >= 0 ? a->shape[ia] : 1, eb = ib >= 0 ? b->shape[ib] : 1;
        if (ea != eb && ea != 1 && eb != 1)
            return fcg_poison(ctx, FC_ERR_SHAPE, "%s: the batch dimensions of a %s and b %s "
                              "do not broadcast", name, fcg_desc(d1, a), fcg_desc(d2, b));
        batch[i] = ea == 1 ? eb : ea;
    }
    if (nd + 2 > FC_MAX_DIMS)
        return fcg_poison(ctx, FC_ERR_SHAPE, "%s: a %s and b %s broadcast to more than %d "
                          "dimensions", name, fcg_desc(d1, a), fcg_desc(d2, b), FC_MAX_DIMS);
    fc_scope *scope = fc_scope_open(ctx);
    if (!scope) return fcg_poison(ctx, FC_ERR_NOMEM, "%s: out of memory", name);
    int64_t k = vector ? 1 : b->shape[b->ndim - 1];
    fc_array *bm = vector ? fc_reshape(b, FC_SHAPE(n, 1)) : b;
    fc_array *in[2] = {fc_broadcast_to(fc_cast(a, t), with_core(nd, batch, 2, (int64_t[]){n, n})),
                       fc_broadcast_to(fc_cast(bm, t), with_core(nd, batch, 2, (int64_t[]){n, k}))};
    fc_array *x = lib_node(ctx, FCG_OP_LINALG_SOLVE, t, with_core(nd, batch, 2, (int64_t[]){n, k}),
                           2, in, flag);
    if (vector) x = fc_reshape(x, with_core(nd, batch, 1, &n));
    return fcg_scope_return(ctx, scope, x);
}

fc_array *fc_linalg_solve(fc_array *a, fc_array *b) {
    fc_array *in[2] = {a, b}, *early;
    fc_ctx *ctx = fcg_begin("solve", 2, in, &early);
    if (!ctx || early) return early;
    return solve_matrices(ctx, "solve", a, b, b->ndim == 1, 0);
}

fc_array *fc_linalg_inv(fc_array *a) {
    fc_array *early;
    fc_ctx *ctx = fcg_begin("inv", 1, &a, &early);
    if (!ctx || early) return early;
    if ((early = not_square(ctx, "inv", a))) return early;
    fc_dtype t;
    if (!linalg_dtype(ctx, "inv", 1, &a, &t)) return fcg_poison_ctx(ctx, FC_ERR_DTYPE);
    int64_t n = a->shape[a->ndim - 1];
    fc_scope *scope = fc_scope_open(ctx);
    if (!scope) return fcg_poison(ctx, FC_ERR_NOMEM, "inv: out of memory");
    fc_array *eye = fc_broadcast_to(fc_eye(ctx, t, n, n, 0), fc_array_shape(a));
    return fcg_scope_return(ctx, scope, solve_matrices(ctx, "inv", a, eye, false, 1));
}

/* The slogdet node of a, or a poison naming `name`. */
static fc_array *slogdet_node(fc_ctx *ctx, const char *name, fc_array *a) {
    fc_array *early = not_square(ctx, name, a);
    if (early) return early;
    fc_dtype t;
    if (!linalg_dtype(ctx, name, 1, &a, &t)) return fcg_poison_ctx(ctx, FC_ERR_DTYPE);
    fc_scope *scope = fc_scope_open(ctx);
    if (!scope) return fcg_poison(ctx, FC_ERR_NOMEM, "%s: out of memory", name);
    fc_array *x = fc_cast(a, t);
    fc_array *r = lib_node(ctx, FCG_OP_LINALG_SLOGDET, t,
                           with_core(a->ndim - 2, a->shape, 1, (int64_t[]){2}), 1, &x, 0);
    return fcg_scope_return(ctx, scope, r);
}

fc_array *fcg_linalg_slogdet_packed(fc_array *a) {
    fc_array *early;
    fc_ctx *ctx = fcg_begin("slogdet", 1, &a, &early);
    if (!ctx || early) return early;
    return slogdet_node(ctx, "slogdet", a);
}

/* Part i of a slogdet node (0 sign, 1 log|det|, real), of the batch's shape. */
static fc_array *slogdet_part(fc_array *pair, int i) {
    fc_array *v = fcg_slice_axis(pair, pair->ndim - 1, i, i + 1, 1);
    v = fc_reshape(v, with_core(pair->ndim - 1, pair->shape, 0, NULL));
    return i == 1 && fcg_is_complex((fc_dtype)pair->dtype) ? fc_real(v) : v;
}

fc_status fc_linalg_slogdet(fc_array *a, fc_array **sign, fc_array **logabsdet) {
    fc_array **const outs[2] = {sign, logabsdet};
    if (!a) return FC_ERR_NULL;
    fc_ctx *ctx = a->ctx;
    fc_status st;
    fc_scope *s = fcg_multi_begin(ctx, "slogdet", 2, outs, &st);
    if (!s) return st;
    fc_array *early;
    fcg_begin("slogdet", 1, &a, &early);
    fc_array *pair = early ? early : slogdet_node(ctx, "slogdet", a);
    if (pair->status != FC_OK) return fcg_multi_return(ctx, s, 2, outs, NULL, pair);
    fc_array *res[2] = {slogdet_part(pair, 0), slogdet_part(pair, 1)};
    return fcg_multi_return(ctx, s, 2, outs, res, NULL);
}

fc_array *fc_linalg_det(fc_array *a) {
    fc_array *early;
    fc_ctx *ctx = fcg_begin("det", 1, &a, &early);
    if (!ctx || early) return early;
    fc_scope *scope = fc_scope_open(ctx);
    if (!scope) return fcg_poison(ctx, FC_ERR_NOMEM, "det: out of memory");
    fc_array *pair = slogdet_node(ctx, "det", a);
    if (pair->status != FC_OK) return fcg_scope_return(ctx, scope, pair);
    /* NumPy's det_from_slogdet: sign * exp(logdet), in the dtype */
    fc_array *r = fc_mul(slogdet_part(pair, 0), fc_exp(slogdet_part(pair, 1)));
    return fcg_scope_return(ctx, scope, r);
}

fc_array *fc_linalg_cholesky(fc_array *a, bool upper) {
    fc_array *early;
    fc_ctx *ctx = fcg_begin("cholesky", 1, &a, &early);
    if (!ctx || early) return early;
    if ((early = not_square(ctx, "cholesky", a))) return early;
    fc_dtype t;
    if (!linalg_dtype(ctx, "cholesky", 1, &a, &t)) return fcg_poison_ctx(ctx, FC_ERR_DTYPE);
    fc_scope *scope = fc_scope_open(ctx);
    if (!scope) return fcg_poison(ctx, FC_ERR_NOMEM, "cholesky: out of memory");
    fc_array *x = fc_cast(a, t);
    fc_array *l = lib_node(ctx, FCG_OP_LINALG_CHOLESKY, t, fc_array_shape(a), 1, &x, 0);
    if (upper) {
        fc_axes perm = {.n = a->ndim};
        for (int d = 0; d < a->ndim; d++) perm.axis[d] = d;
        perm.axis[a->ndim - 1] = a->ndim - 2;
        perm.axis[a->ndim - 2] = a->ndim - 1;
        l = fc_permute(l, perm);
        if (fcg_is_complex(t)) l = fc_conj(l);
    }
    return fcg_scope_return(ctx, scope, l);
}

const char *const fcg_qr_mode_names[3] = {"reduced", "complete", "r"};

/* The LINALG_QR node of a in `mode` (fc_qr_mode), or a poison. */
static fc_array *qr_node(fc_ctx *ctx, fc_array *a, int mode) {
    if (mode < FC_QR_REDUCED || mode > FC_QR_R)
        return fcg_poison(ctx, FC_ERR_INVALID, "qr: unknown mode %d: reduced (%d), complete "
                          "(%d) or r (%d)", mode, FC_QR_REDUCED, FC_QR_COMPLETE, FC_QR_R);
    fc_array *early = not_2d(ctx, "qr", a);
    if (early) return early;
    fc_dtype t;
    if (!linalg_dtype(ctx, "qr", 1, &a, &t)) return fcg_poison_ctx(ctx, FC_ERR_DTYPE);
    int nb = a->ndim - 2;
    int64_t m = a->shape[nb], n = a->shape[nb + 1], k = m < n ? m : n;
    /* rows and Q's columns: R alone (k rows) in mode r; Q m x k or m x m beside R */
    int64_t rows = mode == FC_QR_R ? k : m;
    int64_t c = mode == FC_QR_R ? 0 : mode == FC_QR_COMPLETE ? m : k;
    fc_scope *scope = fc_scope_open(ctx);
    if (!scope) return fcg_poison(ctx, FC_ERR_NOMEM, "qr: out of memory");
    fc_array *x = fc_cast(a, t);
    fc_array *r = lib_node(ctx, FCG_OP_LINALG_QR, t, with_core(nb, a->shape, 2, (int64_t[]){rows, c + n}),
                           1, &x, (uint8_t)mode);
    return fcg_scope_return(ctx, scope, r);
}

fc_array *fcg_linalg_qr_packed(fc_array *a, int mode) {
    fc_array *early;
    fc_ctx *ctx = fcg_begin("qr", 1, &a, &early);
    if (!ctx || early) return early;
    return qr_node(ctx, a, mode);
}

fc_status fc_linalg_qr(fc_array *a, fc_qr_mode mode, fc_array **q, fc_array **r) {
    if (mode == FC_QR_R && q) *q = NULL; /* NumPy gives R alone */
    fc_array **const outs[2] = {mode == FC_QR_R ? NULL : q, r};
    if (!a) return FC_ERR_NULL;
    fc_ctx *ctx = a->ctx;
    fc_status st;
    fc_scope *s = fcg_multi_begin(ctx, "qr", 2, outs, &st);
    if (!s) return st;
    fc_array *early;
    fcg_begin("qr", 1, &a, &early);
    fc_array *pack = early ? early : qr_node(ctx, a, (int)mode);
    if (pack->status != FC_OK) return fcg_multi_return(ctx, s, 2, outs, NULL, pack);
    if (mode == FC_QR_R)
        return fcg_multi_return(ctx, s, 2, outs, (fc_array *[]){NULL, pack}, NULL);
    int nd = pack->ndim;
    int64_t m = a->shape[a->ndim - 2], n = a->shape[a->ndim - 1], k = m < n ? m : n;
    int64_t c = pack->shape[nd - 1] - n, rr = mode == FC_QR_COMPLETE ? m : k;
    fc_array *res[2] = {fcg_slice_axis(pack, nd - 1, 0, c, 1),
                        fcg_slice_axis(fcg_slice_axis(pack, nd - 2, 0, rr, 1), nd - 1, c, c + n, 1)};
    return fcg_multi_return(ctx, s, 2, outs, res, NULL);
}

/* The LINALG_EIGH node of a (vectors) or its LINALG_EIGVALSH node, or a poison naming
 * `name`. */
static fc_array *eigh_node(fc_ctx *ctx, const char *name, fc_array *a, bool upper, bool vectors) {
    fc_array *early = not_square(ctx, name, a);
    if (early) return early;
    fc_dtype t;
    if (!linalg_dtype(ctx, name, 1, &a, &t)) return fcg_poison_ctx(ctx, FC_ERR_DTYPE);
    int nb = a->ndim - 2;
    int64_t n = a->shape[nb];
    fc_scope *scope = fc_scope_open(ctx);
    if (!scope) return fcg_poison(ctx, FC_ERR_NOMEM, "%s: out of memory", name);
    fc_array *x = fc_cast(a, t);
    fc_array *r = vectors ? lib_node(ctx, FCG_OP_LINALG_EIGH, t,
                                     with_core(nb, a->shape, 2, (int64_t[]){n + 1, n}), 1, &x, upper)
                          : lib_node(ctx, FCG_OP_LINALG_EIGVALSH, fcg_real_dtype(t),
                                     with_core(nb, a->shape, 1, &n), 1, &x, upper);
    return fcg_scope_return(ctx, scope, r);
}

fc_array *fcg_linalg_eigh_packed(fc_array *a, bool upper) {
    fc_array *early;
    fc_ctx *ctx = fcg_begin("eigh", 1, &a, &early);
    if (!ctx || early) return early;
    return eigh_node(ctx, "eigh", a, upper, true);
}

fc_array *fc_linalg_eigvalsh(fc_array *a, bool upper) {
    fc_array *early;
    fc_ctx *ctx = fcg_begin("eigvalsh", 1, &a, &early);
    if (!ctx || early) return early;
    return eigh_node(ctx, "eigvalsh", a, upper, false);
}

fc_status fc_linalg_eigh(fc_array *a, bool upper, fc_array **w, fc_array **v) {
    fc_array **const outs[2] = {w, v};
    if (!a) return FC_ERR_NULL;
    fc_ctx *ctx = a->ctx;
    fc_status st;
    fc_scope *s = fcg_multi_begin(ctx, "eigh", 2, outs, &st);
    if (!s) return st;
    fc_array *early;
    fcg_begin("eigh", 1, &a, &early);
    fc_array *pack = early ? early : eigh_node(ctx, "eigh", a, upper, true);
    if (pack->status != FC_OK) return fcg_multi_return(ctx, s, 2, outs, NULL, pack);
    int nd = pack->ndim;
    int64_t n = pack->shape[nd - 1];
    fc_array *vals = fc_reshape(fcg_slice_axis(pack, nd - 2, 0, 1, 1),
                                with_core(nd - 2, pack->shape, 1, &n));
    fc_array *res[2] = {fcg_is_complex((fc_dtype)pack->dtype) ? fc_real(vals) : vals,
                        fcg_slice_axis(pack, nd - 2, 1, n + 1, 1)};
    return fcg_multi_return(ctx, s, 2, outs, res, NULL);
}

const char *fcg_linalg_where(char *buf, size_t size, const fc_array *x, int64_t b) {
    int nb = x->ndim - 2;
    buf[0] = '\0';
    if (nb <= 0 || size == 0) return buf;
    int64_t idx[FC_MAX_DIMS];
    for (int d = nb - 1; d >= 0; d--) {
        idx[d] = b % x->shape[d];
        b /= x->shape[d];
    }
    size_t len = (size_t)snprintf(buf, size, " (matrix [");
    for (int d = 0; d < nb && len < size; d++)
        len += (size_t)snprintf(buf + len, size - len, "%s%lld", d ? ", " : "", (long long)idx[d]);
    if (len < size) snprintf(buf + len, size - len, "] of the stack)");
    return buf;
}
