/*
 * graph/sparse.c - sparse matrices, as scipy.sparse's csr_matrix and coo_matrix.
 *
 * A matrix is a value of ordinary arrays (include/fusec.h's fc_sparse), so it is as lazy as
 * they are, and everything but the product with a dense operand is a composite of existing
 * ops that fuses with its neighbours and runs on the GPU with no kernel of its own:
 *   checks        an index array is gathered from arange(n) in raise mode (a negative index
 *                 sent out of range first): the gather's own bounds check fails the
 *                 evaluation with FC_ERR_VALUE, and the result is the same values; an
 *                 array that holds a value is checked at once instead and, when it passes,
 *                 is used as it is (the pass is remembered on the value)
 *   CSR -> COO    row[k] = searchsorted(indptr[1:], k, "right"): one binary search a value
 *   rows -> CSR   indptr[i] = searchsorted(row, i, "left") of entries sorted by row
 *   canonical     a stable argsort by column, then by row (two sorts, no key that could
 *                 overflow m * n), the starts of distinct (row, col) runs, their running
 *                 count as each entry's slot, scatter_add of the values into the slots; the
 *                 number of slots (and, for a sum, of non-zero results) is evaluated
 *   dense         scatter_add of the values at row * n + col into zeros
 *   transpose     COO swaps its index arrays; CSR sorts its column indices (stable), which
 *                 gives the transpose's rows in order with their columns (the old rows)
 *                 ascending
 * The product is one op, CSR_MATMUL (ops.def): cuSPARSE's SpMV / SpMM on the GPU
 * (backend/cuda_lib.c), ref/host_sparse.c on the host.
 */
#include "graph.h"

#include <stdint.h>
#include <string.h>

static bool value_dtype(fc_dtype t) {
    return t == FC_F32 || t == FC_F64 || t == FC_C64 || t == FC_C128;
}

static bool index_dtype(fc_dtype t) { return t == FC_I32 || t == FC_I64; }

/* int32 indices address at most INT32_MAX of anything (cuSPARSE's 32-bit index type too). */
static bool fits_i32(int64_t v) { return v <= INT32_MAX; }

static fc_sparse poisoned(fc_sparse_format format, fc_array *p) {
    fc_sparse r;
    memset(&r, 0, sizeof r);
    r.format = format;
    r.data = p;
    return r;
}

/* The three arrays of a healthy matrix of its format, in a fixed order. */
static void parts(fc_sparse *a, fc_array ***p) {
    p[0] = &a->data;
    p[1] = a->format == FC_SPARSE_CSR ? &a->indices : &a->row;
    p[2] = a->format == FC_SPARSE_CSR ? &a->indptr : &a->col;
}

/* Every field, NULL ones included. */
static void fields(fc_sparse *a, fc_array ***f) {
    f[0] = &a->data, f[1] = &a->indices, f[2] = &a->indptr, f[3] = &a->row, f[4] = &a->col;
}

/* The structure a matrix of format f must have (what the constructors check and every
 * function relies on): i0 and i1 are indices and indptr (CSR) or row and col (COO), of one
 * index dtype unless `convert` (a constructor converts them to a common one). A poison
 * naming `name`, or NULL. */
static fc_array *bad_parts(fc_ctx *ctx, const char *name, fc_sparse_format f, int64_t m,
                           int64_t n, const fc_array *data, const fc_array *i0,
                           const fc_array *i1, bool convert) {
    char d1[FCG_DESC_MAX], d2[FCG_DESC_MAX], d3[FCG_DESC_MAX];
    bool csr = f == FC_SPARSE_CSR;
    if (m < 0 || n < 0 || m == INT64_MAX)
        return fcg_poison(ctx, FC_ERR_SHAPE, "%s: the shape (%lld, %lld) has a negative or "
                          "unaddressable extent", name, (long long)m, (long long)n);
    if (data->ndim != 1 || i0->ndim != 1 || i1->ndim != 1)
        return fcg_poison(ctx, FC_ERR_SHAPE, "%s: data %s and the index arrays %s, %s must be "
                          "1-d", name, fcg_desc(d1, data), fcg_desc(d2, i0), fcg_desc(d3, i1));
    if (!value_dtype((fc_dtype)data->dtype) || data->weak)
        return fcg_poison(ctx, FC_ERR_DTYPE, "%s: data %s must be f32, f64, c64 or c128",
                          name, fcg_desc(d1, data));
    fc_dtype t0 = (fc_dtype)i0->dtype, t1 = (fc_dtype)i1->dtype;
    if (!index_dtype(t0) || !index_dtype(t1) || (t0 != t1 && !convert))
        return fcg_poison(ctx, FC_ERR_DTYPE, "%s: index arrays must be int32 or int64%s, not "
                          "%s and %s", name, convert ? "" : " (both alike)", fcg_desc(d1, i0),
                          fcg_desc(d2, i1));
    int64_t nnz = data->shape[0];
    if (i0->shape[0] != nnz || i1->shape[0] != (csr ? m + 1 : nnz))
        return fcg_poison(ctx, FC_ERR_SHAPE, "%s: %s %s and %s %s do not fit data %s and the "
                          "shape (%lld, %lld)%s", name, csr ? "indices" : "row", fcg_desc(d1, i0),
                          csr ? "indptr" : "col", fcg_desc(d2, i1), fcg_desc(d3, data),
                          (long long)m, (long long)n,
                          csr ? " (indptr has m + 1 entries, indices one per value)"
                              : " (one row and col per value)");
    if (t0 == FC_I32 && t1 == FC_I32 &&
        !(fits_i32(csr ? m + 1 : m) && fits_i32(n) && fits_i32(nnz)))
        return fcg_poison(ctx, FC_ERR_DTYPE, "%s: int32 indices cannot address a (%lld, %lld) "
                          "matrix of %lld values: use int64", name, (long long)m, (long long)n,
                          (long long)nnz);
    return NULL;
}

static fc_array *bad_structure(fc_ctx *ctx, const char *name, const fc_sparse *a) {
    bool csr = a->format == FC_SPARSE_CSR;
    return bad_parts(ctx, name, a->format, a->shape[0], a->shape[1], a->data,
                     csr ? a->indices : a->row, csr ? a->indptr : a->col, false);
}

/* The prologue of a function of `na` matrices and optionally one dense array x: the context,
 * or NULL when there is none (nothing given); *early is set to what the function returns
 * when it must stop (a poisoned operand's poison, a poison for a NULL or foreign array, a bad
 * format or structure). */
static fc_ctx *sparse_begin(const char *name, int na, const fc_sparse *a, fc_array *x,
                            bool with_x, fc_array **early) {
    fc_array *in[7];
    int n = 0;
    *early = NULL;
    for (int i = 0; i < na; i++) {
        fc_array *d = a[i].data;
        if (d && d->status != FC_OK) { /* a poisoned matrix carries its poison in data */
            fcg_retain(d);
            *early = fcg_ret(d->ctx, d);
            return d->ctx;
        }
        if (a[i].format != FC_SPARSE_CSR && a[i].format != FC_SPARSE_COO) {
            fc_ctx *ctx = d ? d->ctx : x ? x->ctx : NULL;
            if (ctx)
                *early = fcg_poison(ctx, FC_ERR_INVALID, "%s: unknown sparse format %d", name,
                                    (int)a[i].format);
            return ctx;
        }
        fc_sparse c = a[i];
        fc_array **p[3];
        parts(&c, p);
        for (int j = 0; j < 3; j++) in[n++] = *p[j];
    }
    if (with_x) in[n++] = x;
    fc_ctx *ctx = fcg_begin(name, n, in, early);
    for (int i = 0; i < na && ctx && !*early; i++) *early = bad_structure(ctx, name, &a[i]);
    return ctx;
}

/* The end of a function that built r inside scope s: r's arrays handed to the caller's scope
 * (or the caller), or a poisoned matrix with the first poisoned array's message. */
static fc_sparse sparse_return(fc_ctx *ctx, fc_scope *s, fc_sparse r) {
    fc_array **f[5];
    fields(&r, f);
    for (int i = 0; i < 5; i++)
        if (*f[i] && (*f[i])->status != FC_OK)
            return poisoned(r.format, fcg_scope_return(ctx, s, *f[i]));
    for (int i = 0; i < 5; i++)
        if (*f[i]) *f[i] = fc_keep(*f[i]);
    fc_scope_close(s);
    bool oom = false;
    for (int i = 0; i < 5; i++)
        if (*f[i]) oom |= (*f[i] = fcg_ret(ctx, *f[i])) == &ctx->oom;
    return oom ? poisoned(r.format, &ctx->oom) : r;
}

/* A matrix of format f over its arrays: i0 and i1 are indices and indptr (CSR) or row and
 * col (COO). */
static fc_sparse make(fc_sparse_format f, fc_array *data, fc_array *i0, fc_array *i1, int64_t m,
                      int64_t n) {
    fc_sparse r;
    memset(&r, 0, sizeof r);
    r.format = f;
    r.shape[0] = m, r.shape[1] = n;
    r.data = data;
    *(f == FC_SPARSE_CSR ? &r.indices : &r.row) = i0;
    *(f == FC_SPARSE_CSR ? &r.indptr : &r.col) = i1;
    return r;
}

static fc_sparse csr_of(fc_array *data, fc_array *indices, fc_array *indptr, int64_t m,
                        int64_t n) {
    return make(FC_SPARSE_CSR, data, indices, indptr, m, n);
}

static fc_sparse coo_of(fc_array *data, fc_array *row, fc_array *col, int64_t m, int64_t n) {
    return make(FC_SPARSE_COO, data, row, col, m, n);
}

/* ---- checks ----------------------------------------------------------------------------- */

enum { CHECK_INDEX = 1, CHECK_INDPTR = 2 };

/* Whether the value v passes the check whose failures `bad` marks, asked now: the check's
 * reduction is evaluated and read (one kernel and a wait), and a pass is remembered on v
 * (fc_array.checked_*), so a matrix built from the same value again (a loop, a timed run)
 * skips the check and reads v's buffer as it is. Only a pass is remembered; a failure (or a
 * failed evaluation) leaves the lazy check in place, which fails every evaluation that reads
 * the matrix with its own message. */
static bool passes_now(fc_array *v, fc_array *bad, int kind, int64_t bound) {
    if (v->checked_kind == kind && v->checked_bound == bound) return true;
    bool any_bad = true;
    if (fc_read(fc_any(bad, FC_ALL, false), &any_bad, 0, 1) != FC_OK || any_bad) {
        v->ctx->errmsg[0] = '\0';
        return false;
    }
    v->checked_kind = (uint8_t)kind;
    v->checked_bound = bound;
    return true;
}

/* idx (1-d, int32 or int64) with each value checked against [0, n): a gather from arange(n)
 * in raise mode, which fails the evaluation with FC_ERR_VALUE for an index out of range and
 * otherwise gives idx again; a negative index, which take would count from the end, is sent
 * out of range first. One fused kernel; none where idx holds a value that passes now. */
static fc_array *checked_index(fc_ctx *ctx, fc_array *idx, int64_t n) {
    fc_array *neg = fc_less(idx, fc_i64(ctx, 0));
    if (fcg_has_value(idx) &&
        passes_now(idx, fc_logical_or(neg, fc_greater_equal(idx, fc_i64(ctx, n))), CHECK_INDEX,
                   n))
        return idx;
    fc_array *pos = fc_where(neg, fc_i64(ctx, n), idx);
    return fc_take(fc_arange(ctx, (fc_dtype)idx->dtype, 0, (double)n, 1), pos, 0,
                   FC_TAKE_RAISE);
}

/* indptr (1-d, m + 1 entries) checked as SciPy's check_format does: it starts at 0, never
 * falls, and ends at nnz (so every row's range lies in [0, nnz)). Entry i is gathered from
 * position i, or from the out-of-range position m + 1 where it breaks a rule; p itself where
 * it holds a value that passes now. */
static fc_array *checked_indptr(fc_ctx *ctx, fc_array *p, int64_t nnz) {
    int64_t len = p->shape[0];
    fc_array *pos = fc_arange(ctx, FC_I64, 0, (double)len, 1);
    fc_array *prev = fc_concatenate(ctx, (fc_array *[]){fcg_slice_axis(p, 0, 0, 1, 1),
                                                        fcg_slice_axis(p, 0, 0, len - 1, 1)},
                                    2, 0);
    fc_array *bad = fc_logical_or(
        fc_less(p, prev),
        fc_logical_or(fc_logical_and(fc_equal(pos, fc_i64(ctx, 0)),
                                     fc_not_equal(p, fc_i64(ctx, 0))),
                      fc_logical_and(fc_equal(pos, fc_i64(ctx, len - 1)),
                                     fc_not_equal(p, fc_i64(ctx, nnz)))));
    if (fcg_has_value(p) && passes_now(p, bad, CHECK_INDPTR, nnz)) return p;
    return fc_take(p, fc_where(bad, fc_i64(ctx, len), pos), 0, FC_TAKE_RAISE);
}

/* The dtype two index arrays share: int64 when they differ. */
static fc_dtype common_index(fc_dtype a, fc_dtype b) { return a == b ? a : FC_I64; }

/* The checks the constructors share; *it is the matrix's index dtype. A poison naming
 * `name`, or NULL. */
static fc_array *check_args(fc_ctx *ctx, const char *name, fc_array *data, fc_array *i0,
                            fc_array *i1, fc_sparse_format f, int64_t m, int64_t n,
                            fc_dtype *it) {
    fc_array *bad = bad_parts(ctx, name, f, m, n, data, i0, i1, true);
    if (bad) return bad;
    *it = common_index((fc_dtype)i0->dtype, (fc_dtype)i1->dtype);
    int64_t nnz = data->shape[0];
    if (nnz > 0 && (n == 0 || (f == FC_SPARSE_COO && m == 0)))
        return fcg_poison(ctx, FC_ERR_VALUE, "%s: %lld values cannot lie in a (%lld, %lld) "
                          "matrix: every index is out of range", name, (long long)nnz,
                          (long long)m, (long long)n);
    return NULL;
}

/* csr_matrix((data, i0, i1)) or coo_matrix((data, (i0, i1))): the arrays checked, their
 * index values wrapped in the checks above. */
static fc_sparse from_parts(const char *name, fc_sparse_format f, fc_array *data, fc_array *i0,
                            fc_array *i1, int64_t m, int64_t n) {
    fc_array *early;
    fc_ctx *ctx = fcg_begin(name, 3, (fc_array *[]){data, i0, i1}, &early);
    if (!ctx || early) return poisoned(f, early);
    fc_dtype it;
    if ((early = check_args(ctx, name, data, i0, i1, f, m, n, &it))) return poisoned(f, early);
    fc_scope *s = fc_scope_open(ctx);
    if (!s) return poisoned(f, fcg_poison(ctx, FC_ERR_NOMEM, "%s: out of memory", name));
    i0 = fc_cast(i0, it), i1 = fc_cast(i1, it);
    fc_sparse r = f == FC_SPARSE_CSR
                      ? csr_of(data, checked_index(ctx, i0, n),
                               checked_indptr(ctx, i1, data->shape[0]), m, n)
                      : coo_of(data, checked_index(ctx, i0, m), checked_index(ctx, i1, n), m, n);
    return sparse_return(ctx, s, r);
}

fc_sparse fc_sparse_csr(fc_array *data, fc_array *indices, fc_array *indptr, int64_t m,
                        int64_t n) {
    return from_parts("csr_matrix", FC_SPARSE_CSR, data, indices, indptr, m, n);
}

fc_sparse fc_sparse_coo(fc_array *data, fc_array *row, fc_array *col, int64_t m, int64_t n) {
    return from_parts("coo_matrix", FC_SPARSE_COO, data, row, col, m, n);
}

/* ---- conversions (inside the caller's private scope) ------------------------------------ */

static fc_dtype index_of(const fc_sparse *a) {
    return (fc_dtype)(a->format == FC_SPARSE_CSR ? a->indices : a->row)->dtype;
}

/* The row of each stored value of CSR indptr (m + 1 entries) holding nnz values: the number
 * of rows that end at or before it, searchsorted(indptr[1:], k, "right"). */
static fc_array *rows_of(fc_ctx *ctx, fc_array *indptr, int64_t nnz) {
    int64_t len = indptr->shape[0];
    fc_array *k = fc_arange(ctx, FC_I64, 0, (double)nnz, 1);
    return fc_cast(fc_searchsorted(fcg_slice_axis(indptr, 0, 1, len, 1), k, FC_SIDE_RIGHT),
                   (fc_dtype)indptr->dtype);
}

/* CSR of entries sorted by row (row, col, data of one length; row of index dtype): indptr[i]
 * is the number of entries whose row is below i. */
static fc_sparse rows_to_csr(fc_ctx *ctx, fc_array *data, fc_array *row, fc_array *col,
                             int64_t m, int64_t n) {
    fc_array *i = fc_arange(ctx, FC_I64, 0, (double)(m + 1), 1);
    fc_array *indptr = fc_cast(fc_searchsorted(row, i, FC_SIDE_LEFT), (fc_dtype)row->dtype);
    return csr_of(data, col, indptr, m, n);
}

static fc_sparse as_coo(fc_ctx *ctx, const fc_sparse *a) {
    if (a->format == FC_SPARSE_COO) return *a;
    return coo_of(a->data, rows_of(ctx, a->indptr, a->data->shape[0]), a->indices, a->shape[0],
                  a->shape[1]);
}

/* A CSR form of a for a product: a COO matrix's entries sorted by row (stable: no
 * evaluation, duplicates kept, which a product adds anyway). */
static fc_sparse as_csr_unsorted(fc_ctx *ctx, const fc_sparse *a) {
    if (a->format == FC_SPARSE_CSR) return *a;
    fc_array *o = fc_argsort(a->row, 0);
    return rows_to_csr(ctx, fc_take(a->data, o, 0, FC_TAKE_CLIP), fc_take(a->row, o, 0, FC_TAKE_CLIP),
                       fc_take(a->col, o, 0, FC_TAKE_CLIP), a->shape[0], a->shape[1]);
}

/* Canonical CSR (sorted by row, then column; duplicates summed in stored order) of the
 * entries (data, row, col) of an m x n matrix, row and col of index dtype it; with
 * drop_zeros, the sums that are zero are left out (SciPy's binary ops), else kept (SciPy's
 * sum_duplicates). Evaluates the run starts (and the non-zero sums). */
static fc_sparse canonical(fc_ctx *ctx, const char *name, fc_array *data, fc_array *row,
                           fc_array *col, int64_t m, int64_t n, fc_dtype it, bool drop_zeros) {
    int64_t nnz = data->shape[0];
    fc_dtype t = (fc_dtype)data->dtype;
    if (nnz == 0)
        return csr_of(fc_zeros(ctx, t, FC_SHAPE(0)), fc_zeros(ctx, it, FC_SHAPE(0)),
                      fc_zeros(ctx, it, FC_SHAPE(m + 1)), m, n);
    /* (row, col) order by two stable sorts: by column, then by row */
    fc_array *o1 = fc_argsort(col, 0);
    fc_array *o = fc_take(o1, fc_argsort(fc_take(row, o1, 0, FC_TAKE_CLIP), 0), 0, FC_TAKE_CLIP);
    fc_array *rs = fc_take(row, o, 0, FC_TAKE_CLIP), *cs = fc_take(col, o, 0, FC_TAKE_CLIP);
    fc_array *ds = fc_take(data, o, 0, FC_TAKE_CLIP);
    /* where a run of equal (row, col) starts, and each entry's run (its slot) */
    fc_array *differs = fc_logical_or(
        fc_not_equal(fcg_slice_axis(rs, 0, 1, nnz, 1), fcg_slice_axis(rs, 0, 0, nnz - 1, 1)),
        fc_not_equal(fcg_slice_axis(cs, 0, 1, nnz, 1), fcg_slice_axis(cs, 0, 0, nnz - 1, 1)));
    fc_array *starts = fc_concatenate(ctx, (fc_array *[]){fc_ones(ctx, FC_BOOL, FC_SHAPE(1)),
                                                          differs}, 2, 0);
    fc_array *slot = fc_sub(fc_cumsum(starts, 0), fc_i64(ctx, 1));
    fc_array *first = fc_flatnonzero(starts);
    if (fc_array_status(first) != FC_OK)
        return csr_of(fcg_poison(ctx, fc_array_status(first), "%s: %s", name,
                                 fc_array_errmsg(first)), NULL, NULL, m, n);
    int64_t k = first->shape[0];
    fc_array *sums = fc_scatter_add(fc_zeros(ctx, t, FC_SHAPE(k)), slot, ds, 0, FC_TAKE_CLIP);
    fc_array *ru = fc_take(rs, first, 0, FC_TAKE_CLIP), *cu = fc_take(cs, first, 0, FC_TAKE_CLIP);
    if (drop_zeros) {
        fc_array *keep = fc_flatnonzero(sums);
        if (fc_array_status(keep) != FC_OK)
            return csr_of(fcg_poison(ctx, fc_array_status(keep), "%s: %s", name,
                                     fc_array_errmsg(keep)), NULL, NULL, m, n);
        sums = fc_take(sums, keep, 0, FC_TAKE_CLIP);
        ru = fc_take(ru, keep, 0, FC_TAKE_CLIP);
        cu = fc_take(cu, keep, 0, FC_TAKE_CLIP);
    }
    return rows_to_csr(ctx, sums, ru, cu, m, n);
}

/* ---- public conversions ------------------------------------------------------------------ */

fc_sparse fc_sparse_from_dense(fc_array *dense, fc_sparse_format format) {
    const char *name = format == FC_SPARSE_COO ? "coo_matrix" : "csr_matrix";
    fc_array *early;
    char d[FCG_DESC_MAX];
    fc_ctx *ctx = fcg_begin(name, 1, &dense, &early);
    if (!ctx || early) return poisoned(format, early);
    if (format != FC_SPARSE_CSR && format != FC_SPARSE_COO)
        return poisoned(format, fcg_poison(ctx, FC_ERR_INVALID, "%s: unknown sparse format %d",
                                           name, (int)format));
    if (dense->ndim != 2)
        return poisoned(format, fcg_poison(ctx, FC_ERR_SHAPE, "%s: a dense matrix must be 2-d, "
                                           "not %s", name, fcg_desc(d, dense)));
    if (!value_dtype((fc_dtype)dense->dtype) || dense->weak)
        return poisoned(format, fcg_poison(ctx, FC_ERR_DTYPE, "%s: values must be f32, f64, "
                                           "c64 or c128, not %s (cast first)", name,
                                           fcg_desc(d, dense)));
    fc_scope *s = fc_scope_open(ctx);
    if (!s) return poisoned(format, fcg_poison(ctx, FC_ERR_NOMEM, "%s: out of memory", name));
    int64_t m = dense->shape[0], n = dense->shape[1];
    fc_array *flat = fc_flatnonzero(dense); /* row-major: SciPy's order */
    fc_sparse r;
    if (fc_array_status(flat) != FC_OK) {
        r = poisoned(format, fcg_poison(ctx, fc_array_status(flat), "%s: %s", name,
                                        fc_array_errmsg(flat)));
        return sparse_return(ctx, s, r);
    }
    int64_t nnz = flat->shape[0];
    fc_dtype it = fits_i32(m + 1) && fits_i32(n) && fits_i32(nnz) ? FC_I32 : FC_I64;
    fc_array *row = fc_cast(fc_floordiv(flat, fc_i64(ctx, n)), it);
    fc_array *col = fc_cast(fc_mod(flat, fc_i64(ctx, n)), it);
    fc_array *data = fc_take(fc_reshape(dense, FC_SHAPE(m * n)), flat, 0, FC_TAKE_CLIP);
    r = format == FC_SPARSE_COO ? coo_of(data, row, col, m, n) : rows_to_csr(ctx, data, row, col, m, n);
    return sparse_return(ctx, s, r);
}

/* A function of one matrix: its prologue and private scope. NULL: *out is what to return. */
static fc_scope *unary_begin(const char *name, fc_sparse a, fc_ctx **ctx, fc_sparse *out) {
    fc_array *early;
    *ctx = sparse_begin(name, 1, &a, NULL, false, &early);
    if (!*ctx || early) {
        *out = poisoned(a.format, early);
        return NULL;
    }
    fc_scope *s = fc_scope_open(*ctx);
    if (!s) *out = poisoned(a.format, fcg_poison(*ctx, FC_ERR_NOMEM, "%s: out of memory", name));
    return s;
}

fc_sparse fc_sparse_tocsr(fc_sparse a) {
    fc_ctx *ctx;
    fc_sparse r;
    fc_scope *s = unary_begin("tocsr", a, &ctx, &r);
    if (!s) return r;
    r = a.format == FC_SPARSE_CSR
            ? a
            : canonical(ctx, "tocsr", a.data, a.row, a.col, a.shape[0], a.shape[1], index_of(&a),
                        false);
    return sparse_return(ctx, s, r);
}

fc_sparse fc_sparse_tocoo(fc_sparse a) {
    fc_ctx *ctx;
    fc_sparse r;
    fc_scope *s = unary_begin("tocoo", a, &ctx, &r);
    if (!s) return r;
    return sparse_return(ctx, s, as_coo(ctx, &a));
}

fc_array *fc_sparse_todense(fc_sparse a) {
    fc_array *early;
    fc_ctx *ctx = sparse_begin("todense", 1, &a, NULL, false, &early);
    if (!ctx || early) return early;
    int64_t m = a.shape[0], n = a.shape[1];
    fc_dtype t = (fc_dtype)a.data->dtype;
    if (fcg_shape_too_large(2, a.shape, t))
        return fcg_poison(ctx, FC_ERR_SHAPE, "todense: a dense (%lld, %lld) array of %s is too "
                          "large", (long long)m, (long long)n, fc_dtype_name(t));
    fc_scope *s = fc_scope_open(ctx);
    if (!s) return fcg_poison(ctx, FC_ERR_NOMEM, "todense: out of memory");
    fc_sparse c = as_coo(ctx, &a);
    fc_array *flat = fc_add(fc_mul(fc_cast(c.row, FC_I64), fc_i64(ctx, n)), fc_cast(c.col, FC_I64));
    fc_array *d = fc_scatter_add(fc_zeros(ctx, t, FC_SHAPE(m * n)), flat, c.data, 0, FC_TAKE_CLIP);
    return fcg_scope_return(ctx, s, fc_reshape(d, FC_SHAPE(m, n)));
}

fc_sparse fc_sparse_transpose(fc_sparse a) {
    fc_ctx *ctx;
    fc_sparse r;
    fc_scope *s = unary_begin("transpose", a, &ctx, &r);
    if (!s) return r;
    int64_t m = a.shape[0], n = a.shape[1], nnz = a.data->shape[0];
    if (a.format == FC_SPARSE_COO) {
        r = coo_of(a.data, a.col, a.row, n, m);
    } else {
        /* the stored values in column order (stable: by row within a column, as stored) */
        fc_array *o = fc_argsort(a.indices, 0);
        fc_array *row = rows_of(ctx, a.indptr, nnz);
        r = rows_to_csr(ctx, fc_take(a.data, o, 0, FC_TAKE_CLIP),
                        fc_take(a.indices, o, 0, FC_TAKE_CLIP), fc_take(row, o, 0, FC_TAKE_CLIP),
                        n, m);
    }
    return sparse_return(ctx, s, r);
}

fc_sparse fc_sparse_multiply(fc_sparse a, fc_array *scalar) {
    const char *name = "multiply";
    fc_array *early;
    char d1[FCG_DESC_MAX], d2[FCG_DESC_MAX];
    fc_ctx *ctx = sparse_begin(name, 1, &a, scalar, true, &early);
    if (!ctx || early) return poisoned(a.format, early);
    if (scalar->ndim != 0)
        return poisoned(a.format, fcg_poison(ctx, FC_ERR_SHAPE, "%s: a sparse matrix times %s: "
                                             "the scalar must be 0-d", name,
                                             fcg_desc(d1, scalar)));
    fc_scope *s = fc_scope_open(ctx);
    if (!s) return poisoned(a.format, fcg_poison(ctx, FC_ERR_NOMEM, "%s: out of memory", name));
    fc_array *data = fc_mul(a.data, scalar);
    if (fc_array_status(data) == FC_OK && !value_dtype(fc_array_dtype(data)))
        data = fcg_poison(ctx, FC_ERR_DTYPE, "%s: %s times %s gives %s, which a sparse matrix "
                          "cannot hold", name, fcg_desc(d1, a.data), fcg_desc(d2, scalar),
                          fc_dtype_name(fc_array_dtype(data)));
    fc_sparse r = a;
    r.data = data;
    return sparse_return(ctx, s, r);
}

fc_sparse fc_sparse_add(fc_sparse a, fc_sparse b) {
    const char *name = "add";
    fc_array *early;
    fc_ctx *ctx = sparse_begin(name, 2, (fc_sparse[]){a, b}, NULL, false, &early);
    if (!ctx || early) return poisoned(FC_SPARSE_CSR, early);
    if (a.shape[0] != b.shape[0] || a.shape[1] != b.shape[1])
        return poisoned(FC_SPARSE_CSR,
                        fcg_poison(ctx, FC_ERR_SHAPE, "%s: inconsistent shapes (%lld, %lld) and "
                                   "(%lld, %lld)", name, (long long)a.shape[0],
                                   (long long)a.shape[1], (long long)b.shape[0],
                                   (long long)b.shape[1]));
    fc_dtype t;
    fc_promote_types((fc_dtype)a.data->dtype, (fc_dtype)b.data->dtype, &t);
    fc_dtype it = common_index(index_of(&a), index_of(&b));
    fc_scope *s = fc_scope_open(ctx);
    if (!s) return poisoned(FC_SPARSE_CSR, fcg_poison(ctx, FC_ERR_NOMEM, "%s: out of memory", name));
    /* a's entries, then b's: a duplicate sums in that order, as SciPy's csr_plus_csr */
    fc_sparse ca = as_coo(ctx, &a), cb = as_coo(ctx, &b);
    fc_array *data = fc_concatenate(ctx, (fc_array *[]){fc_cast(ca.data, t), fc_cast(cb.data, t)}, 2, 0);
    fc_array *row = fc_concatenate(ctx, (fc_array *[]){fc_cast(ca.row, it), fc_cast(cb.row, it)}, 2, 0);
    fc_array *col = fc_concatenate(ctx, (fc_array *[]){fc_cast(ca.col, it), fc_cast(cb.col, it)}, 2, 0);
    fc_sparse r = canonical(ctx, name, data, row, col, a.shape[0], a.shape[1], it, true);
    return sparse_return(ctx, s, r);
}

/* ---- the product ---------------------------------------------------------------------------- */

fc_array *fcg_csr_matmul(fc_array *indptr, fc_array *indices, fc_array *data, fc_array *x) {
    const char *name = "csr_matmul";
    char d1[FCG_DESC_MAX], d2[FCG_DESC_MAX];
    fc_array *early;
    fc_ctx *ctx = fcg_begin(name, 4, (fc_array *[]){indptr, indices, data, x}, &early);
    if (!ctx || early) return early;
    if (indptr->ndim != 1 || indptr->shape[0] < 1)
        return fcg_poison(ctx, FC_ERR_SHAPE, "%s: indptr %s must be 1-d with m + 1 entries",
                          name, fcg_desc(d1, indptr));
    if (x->ndim != 1 && x->ndim != 2)
        return fcg_poison(ctx, FC_ERR_SHAPE, "%s: x %s must be 1-d or 2-d", name,
                          fcg_desc(d1, x));
    if (x->dtype != data->dtype || x->weak)
        return fcg_poison(ctx, FC_ERR_DTYPE, "%s: x %s must have data's dtype (%s)", name,
                          fcg_desc(d1, x), fcg_desc(d2, data));
    int64_t m = indptr->shape[0] - 1;
    fc_sparse probe = csr_of(data, indices, indptr, m, x->shape[0]);
    if ((early = bad_structure(ctx, name, &probe))) return early;
    int64_t shape[2] = {m, x->ndim == 2 ? x->shape[1] : 0};
    fcg_params p;
    memset(&p, 0, sizeof p);
    return fcg_make(ctx, FCG_OP_CSR_MATMUL, (fc_dtype)data->dtype, (fc_dtype)data->dtype, false,
                    x->ndim, shape, 4, (fc_array *[]){indptr, indices, data, x}, &p);
}

fc_array *fc_sparse_matmul(fc_sparse a, fc_array *x) {
    const char *name = "sparse matmul";
    char d[FCG_DESC_MAX];
    fc_array *early;
    fc_ctx *ctx = sparse_begin(name, 1, &a, x, true, &early);
    if (!ctx || early) return early;
    if (x->ndim != 1 && x->ndim != 2)
        return fcg_poison(ctx, FC_ERR_SHAPE, "%s: a (%lld, %lld) matrix times %s: the dense "
                          "operand must be 1-d or 2-d", name, (long long)a.shape[0],
                          (long long)a.shape[1], fcg_desc(d, x));
    if (x->shape[0] != a.shape[1])
        return fcg_poison(ctx, FC_ERR_SHAPE, "%s: dimension mismatch: a (%lld, %lld) matrix "
                          "times %s", name, (long long)a.shape[0], (long long)a.shape[1],
                          fcg_desc(d, x));
    fc_dtype t;
    fc_promote_types((fc_dtype)a.data->dtype, (fc_dtype)x->dtype, &t);
    if (!value_dtype(t))
        return fcg_poison(ctx, FC_ERR_DTYPE, "%s: a %s matrix times %s computes in %s, which "
                          "has no sparse product", name, fc_dtype_name((fc_dtype)a.data->dtype),
                          fcg_desc(d, x), fc_dtype_name(t));
    fc_scope *s = fc_scope_open(ctx);
    if (!s) return fcg_poison(ctx, FC_ERR_NOMEM, "%s: out of memory", name);
    fc_sparse c = as_csr_unsorted(ctx, &a);
    fc_array *r = fcg_csr_matmul(c.indptr, c.indices, fc_cast(c.data, t), fc_cast(x, t));
    return fcg_scope_return(ctx, s, r);
}

/* ---- queries and lifetime ------------------------------------------------------------------ */

fc_status fc_sparse_status(fc_sparse a) {
    if (!a.data) return FC_ERR_NULL;
    fc_array **f[5];
    fields(&a, f);
    for (int i = 0; i < 5; i++)
        if (*f[i] && (*f[i])->status != FC_OK) return (*f[i])->status;
    return FC_OK;
}

const char *fc_sparse_errmsg(fc_sparse a) {
    fc_array **f[5];
    fields(&a, f);
    for (int i = 0; i < 5; i++)
        if (*f[i] && (*f[i])->status != FC_OK) return fc_array_errmsg(*f[i]);
    return "";
}

int64_t fc_sparse_nnz(fc_sparse a) {
    return fc_sparse_status(a) == FC_OK && a.data->ndim == 1 ? a.data->shape[0] : -1;
}

fc_shape fc_sparse_shape(fc_sparse a) {
    if (fc_sparse_status(a) != FC_OK) return FC_SHAPE();
    return FC_SHAPE(a.shape[0], a.shape[1]);
}

fc_dtype fc_sparse_dtype(fc_sparse a) {
    return fc_sparse_status(a) == FC_OK ? (fc_dtype)a.data->dtype : FC_DTYPE_COUNT;
}

fc_dtype fc_sparse_index_dtype(fc_sparse a) {
    if (fc_sparse_status(a) != FC_OK) return FC_DTYPE_COUNT;
    const fc_array *i = a.format == FC_SPARSE_CSR ? a.indices : a.row;
    return i ? (fc_dtype)i->dtype : FC_DTYPE_COUNT;
}

fc_status fc_sparse_eval(fc_sparse a) {
    fc_status st = fc_sparse_status(a);
    if (st != FC_OK) return st;
    fc_array *in[3];
    fc_array **p[3];
    parts(&a, p);
    for (int i = 0; i < 3; i++) {
        if (!*p[i]) return fcg_error(a.data->ctx, FC_ERR_NULL, "sparse eval: a part is NULL");
        in[i] = *p[i];
    }
    return fc_eval(a.data->ctx, in, 3);
}

fc_sparse fc_sparse_keep(fc_sparse a) {
    fc_array **f[5];
    fields(&a, f);
    for (int i = 0; i < 5; i++) *f[i] = fc_keep(*f[i]);
    return a;
}

void fc_sparse_release(fc_sparse a) {
    fc_array **f[5];
    fields(&a, f);
    for (int i = 0; i < 5; i++) fc_release(*f[i]);
}
