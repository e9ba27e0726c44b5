/*
 * graph/linalg.c - dense linear algebra, as np.linalg: solve, inv, det, slogdet, cholesky, qr,
 * eigh, eigvalsh, svd, svdvals, lstsq, pinv, matrix_rank.
 *
 * Eight library ops carry the work (ops.def: LINALG_SOLVE, LINALG_SLOGDET, LINALG_CHOLESKY,
 * LINALG_QR, LINALG_EIGH, LINALG_EIGVALSH, LINALG_SVD, LINALG_SVDVALS); everything else is
 * built around them from views, elementwise ops, reductions and matmuls, which fuse with the
 * kernels on either side of the call:
 *   inv(a)      solve(a, identity broadcast over a's batch), as NumPy's inv calls gesv
 *   slogdet(a)  one node giving [..., 2] (sign, log|det|): two views of it
 *   det(a)      sign * exp(logabsdet), as NumPy computes it (umath_linalg's det)
 *   cholesky(a, upper=True)  the conjugate transpose of the lower factor
 *   qr(a)       one node giving [..., rows, c + n] (Q beside R): two views of it, so that Q and
 *               R come from one factorisation
 *   eigh(a)     one node giving [..., n + 1, n] (eigenvalues above the eigenvectors): two
 *               views, the eigenvalues' real part for complex dtypes
 *   svd(a)      one node giving [..., 1 + m + vr, w] (S, then U, then Vh): three views
 *   lstsq(a, b) over the reduced svd: x = Vh^H ((U^H b) * where(s > cutoff, 1 / s, 0)), the
 *               rank a count of that mask, the residuals sum(|b - a x|^2, axis=0) where NumPy
 *               gives them (their shape needs the rank: evaluated at the call, see
 *               lstsq_residuals)
 *   pinv(a)     Vh^H (where(s > cutoff, 1 / s, 0)[..., None] * U^H); hermitian: over eigh
 *   matrix_rank count_nonzero(svdvals(a) > tol, axis=-1); hermitian: |eigvalsh(a)|
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

#include <float.h>
#include <math.h>
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

/* The conjugate transpose of the stack x (its last two axes swapped, conjugated when
 * complex): a view for real x, which matmul reads with cuBLAS's transpose flag. */
static fc_array *adjoint(fc_array *x) {
    fc_axes perm = {.n = x->ndim};
    for (int d = 0; d < x->ndim; d++) perm.axis[d] = d;
    perm.axis[x->ndim - 1] = x->ndim - 2;
    perm.axis[x->ndim - 2] = x->ndim - 1;
    fc_array *t = fc_permute(x, perm);
    return fcg_is_complex((fc_dtype)x->dtype) ? fc_conj(t) : t;
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

/* slogdet's pair with (NaN, NaN) for every matrix of a that holds a NaN, as NumPy's is (LAPACK
 * carries the NaN into the factors): the rule is the graph's, not each backend's, since
 * cuSOLVER's getrf was seen to give a finite U for a matrix with a NaN at [0, 0] (a stack's
 * member, GPU call 3 of session 14) where cuBLAS's getrfBatched and the host give NaNs. One
 * reduction over the matrices, read once; the printer's form (slogdet_packed) stays the bare
 * node, so a printed program parses back to this. */
static fc_array *nan_guarded(fc_ctx *ctx, fc_array *a, fc_array *pair) {
    fc_dtype t = (fc_dtype)pair->dtype;
    fc_axes core;
    memset(&core, 0, sizeof core);
    core.n = 2;
    core.axis[0] = a->ndim - 2;
    core.axis[1] = a->ndim - 1;
    fc_array *bad = fc_any(fc_isnan(fc_cast(a, t)), core, true);
    bad = fc_reshape(bad, with_core(a->ndim - 2, a->shape, 1, (int64_t[]){1}));
    fc_array *nan = fcg_is_complex(t) ? fc_c128(ctx, NAN, NAN) : fc_f64(ctx, NAN);
    return fc_where(bad, nan, pair);
}

fc_status fc_linalg_slogdet(fc_array *a, fc_array **sign, fc_array **logabsdet) {
    fc_array **const outs[2] = {sign, logabsdet};
    fc_status st;
    fc_array *early;
    fc_scope *s = fcg_multi_begin("slogdet", 1, &a, 2, outs, &st, &early);
    if (!s) return st;
    fc_ctx *ctx = a->ctx;
    fc_array *pair = early ? early : slogdet_node(ctx, "slogdet", a);
    if (pair->status != FC_OK) return fcg_multi_return(ctx, s, 2, outs, NULL, pair);
    pair = nan_guarded(ctx, a, pair);
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
    pair = nan_guarded(ctx, a, pair);
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
    return fcg_scope_return(ctx, scope, upper ? adjoint(l) : l);
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
    fc_status st;
    fc_array *early;
    fc_scope *s = fcg_multi_begin("qr", 1, &a, 2, outs, &st, &early);
    if (!s) return st;
    fc_ctx *ctx = a->ctx;
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
    fc_status st;
    fc_array *early;
    fc_scope *s = fcg_multi_begin("eigh", 1, &a, 2, outs, &st, &early);
    if (!s) return st;
    fc_ctx *ctx = a->ctx;
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

/* ---- svd, and lstsq, pinv and matrix_rank over it ---------------------------------------- */

/* np.linalg's computation dtype for result dtype t: _commonType's t, always double precision.
 * lstsq, pinv and matrix_rank compute their factorisation in it, as NumPy does (its loops are
 * called with the double signature), because their rank decisions compare singular values
 * with thresholds chosen for double precision (lstsq's eps * max(M, N) is f64's eps, pinv's
 * 1e-15): in single precision the rounding noise of a rank-deficient matrix's zero singular
 * values, about 1e-7 of the largest, would pass them, and rank and solution would be wrong. */
static fc_dtype compute_dtype(fc_dtype t) { return fcg_is_complex(t) ? FC_C128 : FC_F64; }

/* The LINALG_SVD node of a in dtype t (vectors), or its LINALG_SVDVALS node (of t's real
 * dtype), or a poison naming `name`; t is np.linalg's dtype for a or compute_dtype's. */
static fc_array *svd_node(fc_ctx *ctx, const char *name, fc_array *a, fc_dtype t, bool vectors,
                          bool full) {
    fc_array *early = not_2d(ctx, name, a);
    if (early) return early;
    int nb = a->ndim - 2;
    int64_t m = a->shape[nb], n = a->shape[nb + 1], k = m < n ? m : n;
    int64_t uc = full ? m : k, vr = full ? n : k, w = uc > n ? uc : n;
    fc_scope *scope = fc_scope_open(ctx);
    if (!scope) return fcg_poison(ctx, FC_ERR_NOMEM, "%s: out of memory", name);
    fc_array *x = fc_cast(a, t);
    fc_array *r = vectors ? lib_node(ctx, FCG_OP_LINALG_SVD, t,
                                     with_core(nb, a->shape, 2, (int64_t[]){1 + m + vr, w}), 1,
                                     &x, full)
                          : lib_node(ctx, FCG_OP_LINALG_SVDVALS, fcg_real_dtype(t),
                                     with_core(nb, a->shape, 1, &k), 1, &x, 0);
    return fcg_scope_return(ctx, scope, r);
}

/* svd_node in np.linalg's dtype for a, or a poison. */
static fc_array *svd_of(fc_ctx *ctx, const char *name, fc_array *a, bool vectors, bool full) {
    fc_dtype t;
    if (!linalg_dtype(ctx, name, 1, &a, &t)) return fcg_poison_ctx(ctx, FC_ERR_DTYPE);
    return svd_node(ctx, name, a, t, vectors, full);
}

fc_array *fcg_linalg_svd_packed(fc_array *a, bool full_matrices) {
    fc_array *early;
    fc_ctx *ctx = fcg_begin("svd", 1, &a, &early);
    if (!ctx || early) return early;
    return svd_of(ctx, "svd", a, true, full_matrices);
}

fc_array *fc_linalg_svdvals(fc_array *a) {
    fc_array *early;
    fc_ctx *ctx = fcg_begin("svdvals", 1, &a, &early);
    if (!ctx || early) return early;
    return svd_of(ctx, "svdvals", a, false, false);
}

/* The views of an svd node of m x n matrices: parts[0] U [..., m, uc], parts[1] S [..., k]
 * (real), parts[2] Vh [..., vr, n]. */
static void svd_parts(fc_array *pack, int64_t m, int64_t n, bool full, fc_array **parts) {
    int nd = pack->ndim;
    int64_t k = m < n ? m : n, uc = full ? m : k, vr = full ? n : k;
    fc_array *row = fcg_slice_axis(fcg_slice_axis(pack, nd - 2, 0, 1, 1), nd - 1, 0, k, 1);
    row = fc_reshape(row, with_core(nd - 2, pack->shape, 1, &k));
    parts[0] = fcg_slice_axis(fcg_slice_axis(pack, nd - 2, 1, 1 + m, 1), nd - 1, 0, uc, 1);
    parts[1] = fcg_is_complex((fc_dtype)pack->dtype) ? fc_real(row) : row;
    parts[2] = fcg_slice_axis(fcg_slice_axis(pack, nd - 2, 1 + m, 1 + m + vr, 1), nd - 1, 0, n, 1);
}

fc_status fc_linalg_svd(fc_array *a, bool full_matrices, bool compute_uv, fc_array **u,
                        fc_array **s, fc_array **vh) {
    if (!compute_uv) { /* NumPy gives S alone */
        if (u) *u = NULL;
        if (vh) *vh = NULL;
    }
    fc_array **const outs[3] = {compute_uv ? u : NULL, s, compute_uv ? vh : NULL};
    fc_status st;
    fc_array *early;
    fc_scope *sc = fcg_multi_begin("svd", 1, &a, 3, outs, &st, &early);
    if (!sc) return st;
    fc_ctx *ctx = a->ctx;
    fc_array *node = early ? early : svd_of(ctx, "svd", a, compute_uv, full_matrices);
    if (node->status != FC_OK) return fcg_multi_return(ctx, sc, 3, outs, NULL, node);
    if (!compute_uv) return fcg_multi_return(ctx, sc, 3, outs, (fc_array *[]){NULL, node, NULL}, NULL);
    fc_array *res[3];
    svd_parts(node, a->shape[a->ndim - 2], a->shape[a->ndim - 1], full_matrices, res);
    return fcg_multi_return(ctx, sc, 3, outs, res, NULL);
}

/* where(s > cutoff, 1 / s, 0) for the singular values s [..., k] (k > 0) of a reduced svd,
 * cutoff = rcond * s[..., :1] (the largest: s descends), as NumPy's pinv and LAPACK's gelsd
 * discard small singular values; *keep (when given) receives the mask s > cutoff. */
static fc_array *inverse_above(fc_ctx *ctx, fc_array *sv, double rcond, fc_array **keep) {
    int nd = sv->ndim;
    fc_array *large = fc_greater(sv, fc_mul(fcg_slice_axis(sv, nd - 1, 0, 1, 1), fc_f64(ctx, rcond)));
    if (keep) *keep = large;
    return fc_where(large, fc_reciprocal(sv), fc_zeros(ctx, (fc_dtype)sv->dtype, FC_SHAPE()));
}

/* NumPy's _assert_2d: lstsq takes one matrix and one vector or matrix, no stacks. */
static fc_array *not_exactly_2d(fc_ctx *ctx, const char *name, const fc_array *x, int lo) {
    char d[FCG_DESC_MAX];
    if (x->ndim < lo || x->ndim > 2)
        return fcg_poison(ctx, FC_ERR_LINALG, "%s: %d-dimensional array given (%s). Array must "
                          "be two-dimensional", name, x->ndim, fcg_desc(d, x));
    return NULL;
}

/* lstsq's residuals once its x is known: sum(|b - a x|^2, axis=0) of the real dtype rt where
 * NumPy gives them (rank == n and m > n), else empty. Their shape depends on the rank, so
 * where m > n > 0 (and b has columns) the rank is evaluated here, with the factorisation it
 * comes from (kept as a value, so x's evaluation reuses it): a synchronising evaluation, as a
 * boolean mask's count is (graph/mask.c). m <= n gives empty residuals and n == 0 a rank of 0
 * == n without one. A poison naming lstsq when the evaluation fails. */
static fc_array *lstsq_residuals(fc_ctx *ctx, fc_array *a, fc_array *b, fc_array *x,
                                 fc_array *pack, fc_array *rank, fc_dtype rt) {
    int64_t m = a->shape[0], n = a->shape[1], nrhs = b->shape[1];
    if (m <= n || nrhs == 0) return fc_zeros(ctx, rt, FC_SHAPE(0));
    if (n > 0) {
        fc_array *both[2] = {pack, rank};
        int32_t r = 0;
        fc_status st = fc_eval(ctx, both, 2);
        if (st == FC_OK) st = fc_read(rank, &r, 0, 1);
        if (st != FC_OK) {
            char why[256];
            snprintf(why, sizeof why, "%s", fc_errmsg(ctx));
            return fcg_poison(ctx, st, "lstsq: the residuals' shape depends on the rank, which "
                              "could not be evaluated (%s)", why);
        }
        if (r != n) return fc_zeros(ctx, rt, FC_SHAPE(0));
    }
    fc_array *d = fc_abs(n > 0 ? fc_sub(b, fc_matmul(a, x)) : b);
    return fc_cast(fc_sum(fc_mul(d, d), FC_AXES(0), false), rt);
}

fc_status fc_linalg_lstsq(fc_array *a, fc_array *b, const double *rcond, fc_array **x,
                          fc_array **residuals, fc_array **rank, fc_array **s) {
    fc_array **const outs[4] = {x, residuals, rank, s};
    fc_array *early, *in[2] = {a, b};
    fc_status st;
    fc_scope *sc = fcg_multi_begin("lstsq", 2, in, 4, outs, &st, &early);
    if (!sc) return st;
    fc_ctx *ctx = a->ctx;
    char d1[FCG_DESC_MAX], d2[FCG_DESC_MAX];
    fc_dtype t = FC_F64;
    if (!early) early = not_exactly_2d(ctx, "lstsq", a, 2);
    if (!early) early = not_exactly_2d(ctx, "lstsq", b, 1);
    if (!early && a->shape[0] != b->shape[0])
        early = fcg_poison(ctx, FC_ERR_LINALG, "lstsq: Incompatible dimensions: a %s and b %s "
                           "have different numbers of rows", fcg_desc(d1, a), fcg_desc(d2, b));
    if (!early && !linalg_dtype(ctx, "lstsq", 2, in, &t)) early = fcg_poison_ctx(ctx, FC_ERR_DTYPE);
    if (!early && rcond && isnan(*rcond))
        early = fcg_poison(ctx, FC_ERR_VALUE, "lstsq: rcond is NaN");
    if (early) return fcg_multi_return(ctx, sc, 4, outs, NULL, early);
    int64_t m = a->shape[0], n = a->shape[1], k = m < n ? m : n;
    /* NumPy 2's default, eps * max(M, N) of the double precision it computes in; gelsd takes a
     * negative rcond as machine precision */
    double rc = rcond ? *rcond : DBL_EPSILON * (double)(m > n ? m : n);
    if (rc < 0) rc = DBL_EPSILON;
    fc_dtype ct = compute_dtype(t), rt = fcg_real_dtype(t);
    bool vector = b->ndim == 1;
    int64_t nrhs = vector ? 1 : b->shape[1];
    fc_array *ac = fc_cast(a, ct), *bc = fc_cast(vector ? fc_reshape(b, FC_SHAPE(m, 1)) : b, ct);
    fc_array *pack = NULL, *sv, *xs, *rk;
    if (k > 0) {
        /* x = V diag(1 / s above the cutoff) U^H b, the minimum-norm solution (gelsd's) */
        fc_array *parts[3], *keep;
        pack = svd_node(ctx, "lstsq", ac, ct, true, false);
        svd_parts(pack, m, n, false, parts);
        sv = parts[1];
        fc_array *sinv = inverse_above(ctx, sv, rc, &keep);
        fc_array *c = fc_mul(fc_matmul(adjoint(parts[0]), bc), fc_expand_dims(sinv, -1));
        xs = fc_matmul(adjoint(parts[2]), c);
        rk = fc_cast(fc_count_nonzero(keep, FC_ALL, false), FC_I32);
    } else { /* NumPy's x of an empty a is zeros, its rank 0 */
        sv = fc_zeros(ctx, fcg_real_dtype(ct), FC_SHAPE(0));
        xs = fc_zeros(ctx, ct, FC_SHAPE(n, nrhs));
        rk = fc_zeros(ctx, FC_I32, FC_SHAPE());
    }
    fc_array *res = residuals ? lstsq_residuals(ctx, ac, bc, xs, pack, rk, rt) : NULL;
    if (res && res->status != FC_OK) return fcg_multi_return(ctx, sc, 4, outs, NULL, res);
    fc_array *xr = fc_cast(xs, t);
    fc_array *out[4] = {vector ? fc_reshape(xr, FC_SHAPE(n)) : xr, res, rk, fc_cast(sv, rt)};
    return fcg_multi_return(ctx, sc, 4, outs, out, NULL);
}

fc_array *fc_linalg_pinv(fc_array *a, const double *rcond, bool hermitian) {
    fc_array *early;
    fc_ctx *ctx = fcg_begin("pinv", 1, &a, &early);
    if (!ctx || early) return early;
    if ((early = hermitian ? not_square(ctx, "pinv", a) : not_2d(ctx, "pinv", a))) return early;
    if (rcond && isnan(*rcond)) return fcg_poison(ctx, FC_ERR_VALUE, "pinv: rcond is NaN");
    int nb = a->ndim - 2;
    int64_t m = a->shape[nb], n = a->shape[nb + 1];
    /* NumPy returns an empty a's pinv, [..., n, m], in a's own dtype without factorising */
    if (m == 0 || n == 0)
        return fc_zeros(ctx, (fc_dtype)a->dtype, with_core(nb, a->shape, 2, (int64_t[]){n, m}));
    fc_dtype t;
    if (!linalg_dtype(ctx, "pinv", 1, &a, &t)) return fcg_poison_ctx(ctx, FC_ERR_DTYPE);
    double rc = rcond ? *rcond : 1e-15; /* NumPy's default rcond (rtol unset) */
    fc_dtype ct = compute_dtype(t);
    fc_scope *scope = fc_scope_open(ctx);
    if (!scope) return fcg_poison(ctx, FC_ERR_NOMEM, "pinv: out of memory");
    fc_array *r;
    if (hermitian) {
        /* NumPy's svd(hermitian=True) is eigh's, s = |w|: pinv is V diag(1 / w) V^H over the
         * eigenvalues with |w| above rcond times the largest |w| */
        fc_array *w = NULL, *v = NULL;
        fc_linalg_eigh(fc_cast(a, ct), false, &w, &v);
        fc_array *aw = fc_abs(w);
        fc_array *large = fc_greater(aw, fc_mul(fc_max(aw, FC_AXES(-1), true), fc_f64(ctx, rc)));
        fc_array *winv = fc_where(large, fc_reciprocal(w), fc_zeros(ctx, (fc_dtype)w->dtype, FC_SHAPE()));
        r = fc_matmul(fc_mul(v, fc_expand_dims(winv, -2)), adjoint(v));
    } else {
        fc_array *parts[3];
        fc_array *pack = svd_node(ctx, "pinv", a, ct, true, false);
        if (pack->status != FC_OK) return fcg_scope_return(ctx, scope, pack);
        svd_parts(pack, m, n, false, parts);
        fc_array *sinv = inverse_above(ctx, parts[1], rc, NULL);
        r = fc_matmul(adjoint(parts[2]), fc_mul(fc_expand_dims(sinv, -1), adjoint(parts[0])));
    }
    return fcg_scope_return(ctx, scope, fc_cast(r, t));
}

fc_array *fc_linalg_matrix_rank(fc_array *a, const double *tol, const double *rtol,
                                bool hermitian) {
    fc_array *early;
    fc_ctx *ctx = fcg_begin("matrix_rank", 1, &a, &early);
    if (!ctx || early) return early;
    if (tol && rtol)
        return fcg_poison(ctx, FC_ERR_VALUE, "matrix_rank: `tol` and `rtol` can't be both set");
    fc_scope *scope = fc_scope_open(ctx);
    if (!scope) return fcg_poison(ctx, FC_ERR_NOMEM, "matrix_rank: out of memory");
    fc_array *r;
    if (a->ndim < 2) { /* NumPy: int(not all(A == 0)) */
        r = fc_cast(fc_any(fc_not_equal(a, fc_zeros(ctx, FC_BOOL, FC_SHAPE())), FC_ALL, false), FC_I64);
        return fcg_scope_return(ctx, scope, r);
    }
    if ((early = hermitian ? not_square(ctx, "matrix_rank", a) : NULL))
        return fcg_scope_return(ctx, scope, early);
    fc_dtype t;
    if (!linalg_dtype(ctx, "matrix_rank", 1, &a, &t))
        return fcg_scope_return(ctx, scope, fcg_poison_ctx(ctx, FC_ERR_DTYPE));
    int nb = a->ndim - 2;
    int64_t m = a->shape[nb], n = a->shape[nb + 1], k = m < n ? m : n;
    fc_dtype ct = compute_dtype(t), rt = fcg_real_dtype(t);
    /* S in the result's real dtype, as NumPy's svd returns it (computed in double) */
    fc_array *sv = hermitian ? fc_abs(fc_linalg_eigvalsh(fc_cast(a, ct), false))
                             : svd_node(ctx, "matrix_rank", a, ct, false, false);
    if (sv->status != FC_OK) return fcg_scope_return(ctx, scope, sv);
    sv = fc_cast(sv, rt);
    if (k == 0) { /* S.max(initial=0) is 0 and no singular value exceeds it */
        r = fc_zeros(ctx, FC_I64, with_core(nb, a->shape, 0, NULL));
        return fcg_scope_return(ctx, scope, r);
    }
    fc_array *large;
    if (tol) { /* NumPy's tol and rtol are f64 arrays, which the comparison promotes to */
        large = fc_greater(fc_cast(sv, FC_F64), fc_f64(ctx, *tol));
    } else if (rtol) {
        fc_array *smax = fc_cast(fc_max(sv, FC_AXES(-1), true), FC_F64);
        large = fc_greater(fc_cast(sv, FC_F64), fc_mul(smax, fc_f64(ctx, *rtol)));
    } else { /* S.max * max(M, N) * eps of S's dtype, all in that dtype */
        double eps = rt == FC_F32 ? (double)FLT_EPSILON : DBL_EPSILON;
        fc_array *smax = fc_max(sv, FC_AXES(-1), true);
        large = fc_greater(sv, fc_mul(smax, fc_f64(ctx, (double)(m > n ? m : n) * eps)));
    }
    r = fc_count_nonzero(large, FC_AXES(-1), false);
    return fcg_scope_return(ctx, scope, r);
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
