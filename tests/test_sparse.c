/*
 * tests/test_sparse.c - sparse matrices (graph/sparse.c, ref/host_sparse.c, cuSPARSE in
 * backend/cuda_lib.c): SciPy's values for every conversion and product (tests/data/sparse.txt,
 * written once by tests/gen_sparse.py) on the host backend; the accessors, lifetimes, errors
 * and .fc spellings; and the GPU against the host over the same cases, skipped visibly where
 * there is no GPU.
 */
#include <criterion/criterion.h>

#include "fusec.h"
#include "graph.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the data file ----------------------------------------------------------------------- */

/* One operand or result as the file gives it: a sparse matrix or a dense array. */
typedef struct operand {
    bool sparse;
    fc_sparse_format format;
    fc_dtype dt, it;
    int64_t m, n, nnz;
    int ndim;
    int64_t dims[2];
    double *values; /* 2 per element for complex dtypes */
    int64_t *idx0, *idx1;
    int64_t n0, n1; /* their lengths */
} operand;

typedef struct tcase {
    char name[160], op[32];
    double scalar[2];
    operand a, b, x, want;
    bool has_b, has_x;
    double rtol, atol;
} tcase;

typedef struct reader {
    char *line, *save;
    const char *path;
    int lineno;
} reader;

static const char *tok(reader *r) {
    char *t = strtok_r(NULL, " \n", &r->save);
    cr_assert_not_null(t, "%s:%d: the line ends early", r->path, r->lineno);
    return t;
}

static int64_t tok_int(reader *r) { return strtoll(tok(r), NULL, 10); }

static fc_dtype tok_dtype(reader *r) {
    fc_dtype t;
    const char *s = tok(r);
    cr_assert_eq(fc_dtype_from_name(s, &t), FC_OK, "%s:%d: dtype %s", r->path, r->lineno, s);
    return t;
}

static double *read_values(reader *r, fc_dtype t, int64_t count) {
    int64_t per = t == FC_C64 || t == FC_C128 ? 2 : 1;
    double *v = calloc((size_t)(count * per + 1), sizeof *v);
    cr_assert_not_null(v);
    for (int64_t i = 0; i < count * per; i++) v[i] = strtod(tok(r), NULL);
    return v;
}

static int64_t *read_ints(reader *r, int64_t count) {
    int64_t *v = calloc((size_t)(count + 1), sizeof *v);
    cr_assert_not_null(v);
    for (int64_t i = 0; i < count; i++) v[i] = tok_int(r);
    return v;
}

/* `coo|csr DT IT M N NNZ ...` or `dense DT NDIM DIMS ...` (kind already read). */
static void read_operand(reader *r, const char *kind, operand *o) {
    memset(o, 0, sizeof *o);
    if (strcmp(kind, "dense") == 0) {
        o->dt = tok_dtype(r);
        o->ndim = (int)tok_int(r);
        int64_t count = 1;
        for (int d = 0; d < o->ndim; d++) count *= (o->dims[d] = tok_int(r));
        o->values = read_values(r, o->dt, count);
        return;
    }
    o->sparse = true;
    o->format = strcmp(kind, "csr") == 0 ? FC_SPARSE_CSR : FC_SPARSE_COO;
    o->dt = tok_dtype(r);
    o->it = tok_dtype(r);
    o->m = tok_int(r), o->n = tok_int(r), o->nnz = tok_int(r);
    o->values = read_values(r, o->dt, o->nnz);
    o->n0 = o->nnz;
    o->n1 = o->format == FC_SPARSE_CSR ? o->m + 1 : o->nnz;
    o->idx0 = read_ints(r, o->n0);
    o->idx1 = read_ints(r, o->n1);
}

static void operand_free(operand *o) {
    free(o->values);
    free(o->idx0);
    free(o->idx1);
}

/* Reads the next case; false at the end of the file. */
static bool read_case(FILE *f, reader *r, size_t *cap, tcase *c) {
    for (;;) {
        if (getline(&r->line, cap, f) < 0) return false;
        r->lineno++;
        if (strncmp(r->line, "case ", 5) == 0) break;
    }
    memset(c, 0, sizeof *c);
    strtok_r(r->line, " \n", &r->save);
    snprintf(c->name, sizeof c->name, "%s", tok(r));
    snprintf(c->op, sizeof c->op, "%s", tok(r));
    const char *t = tok(r);
    if (strcmp(t, "mat") != 0) {
        c->scalar[0] = strtod(t, NULL);
        c->scalar[1] = strtod(tok(r), NULL);
        t = tok(r);
    }
    cr_assert_str_eq(t, "mat", "%s:%d", r->path, r->lineno);
    read_operand(r, tok(r), &c->a);
    for (t = tok(r); strcmp(t, "want") != 0; t = tok(r)) {
        if (strcmp(t, "mat") == 0) {
            read_operand(r, tok(r), &c->b);
            c->has_b = true;
        } else {
            cr_assert_str_eq(t, "vec", "%s:%d", r->path, r->lineno);
            read_operand(r, "dense", &c->x);
            c->has_x = true;
        }
    }
    t = tok(r);
    read_operand(r, strcmp(t, "sparse") == 0 ? tok(r) : t, &c->want);
    cr_assert_str_eq(tok(r), "tol");
    c->rtol = strtod(tok(r), NULL);
    c->atol = strtod(tok(r), NULL);
    cr_assert_str_eq(tok(r), "end");
    return true;
}

static void case_free(tcase *c) {
    operand_free(&c->a);
    operand_free(&c->b);
    operand_free(&c->x);
    operand_free(&c->want);
}

/* ---- building and reading ------------------------------------------------------------------- */

static fc_array *upload_values(fc_ctx *ctx, fc_dtype t, fc_shape shape, const double *v) {
    int64_t count = 1;
    for (int d = 0; d < shape.ndim; d++) count *= shape.dim[d];
    size_t es = fc_dtype_size(t);
    unsigned char *buf = calloc((size_t)count + 1, es);
    cr_assert_not_null(buf);
    for (int64_t i = 0; i < count; i++) {
        unsigned char *p = buf + (size_t)i * es;
        if (t == FC_F32) {
            float f = (float)v[i];
            memcpy(p, &f, 4);
        } else if (t == FC_F64) {
            memcpy(p, &v[i], 8);
        } else if (t == FC_C64) {
            float f[2] = {(float)v[2 * i], (float)v[2 * i + 1]};
            memcpy(p, f, 8);
        } else if (t == FC_C128) {
            memcpy(p, &v[2 * i], 16);
        } else if (t == FC_I32) {
            int32_t k = (int32_t)v[i];
            memcpy(p, &k, 4);
        } else {
            int64_t k = (int64_t)v[i];
            memcpy(p, &k, 8);
        }
    }
    fc_array *a = fc_from_host(ctx, t, shape, buf);
    free(buf);
    return a;
}

static fc_array *upload_ints(fc_ctx *ctx, fc_dtype t, int64_t n, const int64_t *v) {
    double *d = calloc((size_t)n + 1, sizeof *d);
    cr_assert_not_null(d);
    for (int64_t i = 0; i < n; i++) d[i] = (double)v[i];
    fc_array *a = upload_values(ctx, t, FC_SHAPE(n), d);
    free(d);
    return a;
}

static fc_array *dense_of(fc_ctx *ctx, const operand *o) {
    fc_shape s = {.ndim = o->ndim};
    for (int d = 0; d < o->ndim; d++) s.dim[d] = o->dims[d];
    return upload_values(ctx, o->dt, s, o->values);
}

static fc_sparse sparse_of(fc_ctx *ctx, const operand *o) {
    fc_array *data = upload_values(ctx, o->dt, FC_SHAPE(o->nnz), o->values);
    fc_array *i0 = upload_ints(ctx, o->it, o->n0, o->idx0);
    fc_array *i1 = upload_ints(ctx, o->it, o->n1, o->idx1);
    return o->format == FC_SPARSE_CSR ? fc_sparse_csr(data, i0, i1, o->m, o->n)
                                      : fc_sparse_coo(data, i0, i1, o->m, o->n);
}

/* a's values as doubles (2 per element for complex dtypes), or its integers. */
static double *download(fc_array *a, const char *what) {
    fc_dtype t = fc_array_dtype(a);
    int64_t n = fc_array_size(a);
    size_t es = fc_dtype_size(t);
    unsigned char *buf = calloc((size_t)n + 1, es);
    double *v = calloc((size_t)(2 * n + 2), sizeof *v);
    cr_assert(buf && v);
    cr_assert_eq(fc_to_host(a, buf, (size_t)n * es), FC_OK, "%s: %s", what,
                 fc_errmsg(fc_array_ctx(a)));
    for (int64_t i = 0; i < n; i++) {
        unsigned char *p = buf + (size_t)i * es;
        if (t == FC_F32 || t == FC_C64) {
            float f[2] = {0, 0};
            memcpy(f, p, es);
            v[2 * i] = f[0], v[2 * i + 1] = f[1];
        } else if (t == FC_F64 || t == FC_C128) {
            double d[2] = {0, 0};
            memcpy(d, p, es);
            v[2 * i] = d[0], v[2 * i + 1] = d[1];
        } else if (t == FC_I32) {
            int32_t k;
            memcpy(&k, p, 4);
            v[2 * i] = k;
        } else {
            int64_t k;
            memcpy(&k, p, 8);
            v[2 * i] = (double)k;
        }
    }
    free(buf);
    return v;
}

/* got (download's layout) against want (the file's: 2 per element only when complex). */
static int value_mismatches(const double *got, const double *want, int64_t n, bool cplx,
                            double rtol, double atol, const char *what) {
    int bad = 0;
    for (int64_t i = 0; i < n; i++)
        for (int p = 0; p < (cplx ? 2 : 1); p++) {
            double g = got[2 * i + p], w = want[cplx ? 2 * i + p : i];
            if (fabs(g - w) <= atol + rtol * fabs(w) || (isnan(g) && isnan(w))) continue;
            if (bad++ < 4)
                cr_log_error("%s: element %lld part %d: got %.17g, want %.17g", what,
                             (long long)i, p, g, w);
        }
    return bad;
}

static int int_mismatches(fc_array *a, const int64_t *want, int64_t n, const char *what) {
    double *got = download(a, what);
    int bad = 0;
    for (int64_t i = 0; i < n; i++)
        if (got[2 * i] != (double)want[i] && bad++ < 4)
            cr_log_error("%s: index %lld: got %.0f, want %lld", what, (long long)i, got[2 * i],
                         (long long)want[i]);
    free(got);
    return bad;
}

/* What a case computes, in ctx: a sparse result (*sr) or a dense one (*dr). */
static void run_case(fc_ctx *ctx, const tcase *c, fc_sparse *sr, fc_array **dr) {
    memset(sr, 0, sizeof *sr);
    *dr = NULL;
    const char *op = c->op;
    if (strncmp(op, "from_dense", 10) == 0) {
        *sr = fc_sparse_from_dense(dense_of(ctx, &c->a),
                                   strcmp(op, "from_dense_csr") == 0 ? FC_SPARSE_CSR
                                                                     : FC_SPARSE_COO);
        return;
    }
    fc_sparse a = sparse_of(ctx, &c->a);
    if (strcmp(op, "tocsr") == 0) *sr = fc_sparse_tocsr(a);
    else if (strcmp(op, "tocoo") == 0) *sr = fc_sparse_tocoo(a);
    else if (strcmp(op, "transpose") == 0) *sr = fc_sparse_transpose(a);
    else if (strcmp(op, "todense") == 0) *dr = fc_sparse_todense(a);
    else if (strcmp(op, "add") == 0) *sr = fc_sparse_add(a, sparse_of(ctx, &c->b));
    else if (strcmp(op, "matmul") == 0) *dr = fc_sparse_matmul(a, dense_of(ctx, &c->x));
    else if (strcmp(op, "multiply") == 0)
        *sr = fc_sparse_multiply(a, c->scalar[1] != 0 ? fc_c128(ctx, c->scalar[0], c->scalar[1])
                                                      : fc_f64(ctx, c->scalar[0]));
    else cr_assert_fail("%s: unknown op %s", c->name, op);
}

/* Checks a case's result in ctx against the file; returns the number of mismatches. */
static int check_case(fc_ctx *ctx, const tcase *c) {
    fc_sparse sr;
    fc_array *dr;
    run_case(ctx, c, &sr, &dr);
    const operand *w = &c->want;
    bool cplx = w->dt == FC_C64 || w->dt == FC_C128;
    int bad = 0;
    if (!w->sparse) {
        cr_assert_not_null(dr, "%s: a dense result expected", c->name);
        cr_assert_eq(fc_array_status(dr), FC_OK, "%s: %s", c->name, fc_array_errmsg(dr));
        cr_assert_eq(fc_array_dtype(dr), w->dt, "%s: dtype %s, want %s", c->name,
                     fc_dtype_name(fc_array_dtype(dr)), fc_dtype_name(w->dt));
        cr_assert_eq(fc_array_ndim(dr), w->ndim, "%s", c->name);
        int64_t count = 1;
        for (int d = 0; d < w->ndim; d++) {
            cr_assert_eq(fc_array_shape(dr).dim[d], w->dims[d], "%s: extent %d", c->name, d);
            count *= w->dims[d];
        }
        double *got = download(dr, c->name);
        bad += value_mismatches(got, w->values, count, cplx, c->rtol, c->atol, c->name);
        free(got);
        return bad;
    }
    cr_assert_eq(fc_sparse_status(sr), FC_OK, "%s: %s", c->name, fc_sparse_errmsg(sr));
    cr_assert_eq(sr.format, w->format, "%s: format", c->name);
    cr_assert_eq(fc_sparse_dtype(sr), w->dt, "%s: dtype %s, want %s", c->name,
                 fc_dtype_name(fc_sparse_dtype(sr)), fc_dtype_name(w->dt));
    cr_assert_eq(fc_sparse_index_dtype(sr), w->it, "%s: index dtype %s, want %s", c->name,
                 fc_dtype_name(fc_sparse_index_dtype(sr)), fc_dtype_name(w->it));
    fc_shape s = fc_sparse_shape(sr);
    cr_assert(s.ndim == 2 && s.dim[0] == w->m && s.dim[1] == w->n, "%s: shape", c->name);
    cr_assert_eq(fc_sparse_nnz(sr), w->nnz, "%s: nnz %lld, want %lld", c->name,
                 (long long)fc_sparse_nnz(sr), (long long)w->nnz);
    cr_assert_eq(fc_sparse_eval(sr), FC_OK, "%s: %s", c->name, fc_errmsg(ctx));
    double *got = download(sr.data, c->name);
    bad += value_mismatches(got, w->values, w->nnz, cplx, c->rtol, c->atol, c->name);
    free(got);
    bool csr = w->format == FC_SPARSE_CSR;
    bad += int_mismatches(csr ? sr.indices : sr.row, w->idx0, w->n0, c->name);
    bad += int_mismatches(csr ? sr.indptr : sr.col, w->idx1, w->n1, c->name);
    return bad;
}

Test(sparse, scipy_reference_cases) {
    fc_ctx *ctx = tu_host_ctx();
    FILE *f = tu_open_data("sparse.txt");
    reader r = {.path = "tests/data/sparse.txt"};
    size_t cap = 0;
    tcase c;
    int cases = 0, failed = 0;
    bool seen_op[16] = {false};
    static const char *const ops[] = {"tocsr", "tocoo", "todense", "transpose", "multiply",
                                      "add", "matmul", "from_dense_csr", "from_dense_coo"};
    while (read_case(f, &r, &cap, &c)) {
        fc_scope *s = fc_scope_open(ctx);
        int bad = check_case(ctx, &c);
        fc_scope_close(s);
        for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) seen_op[i] |= !strcmp(c.op, ops[i]);
        if (bad) cr_log_error("%s: %d mismatches", c.name, bad);
        failed += bad != 0;
        cases++;
        case_free(&c);
        /* every node of the case died with its scope: nothing leaks across cases */
        cr_assert_eq(ctx->live_nodes, 0, "%s: %zu nodes outlived the case's scope", c.name,
                     ctx->live_nodes);
    }
    free(r.line);
    fclose(f);
    fc_ctx_destroy(ctx);
    cr_assert_gt(cases, 800, "only %d cases read", cases);
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
        cr_expect(seen_op[i], "no case of %s", ops[i]);
    cr_assert_eq(failed, 0, "%d of %d cases differ from SciPy", failed, cases);
}

/* ---- the API around the values ---------------------------------------------------------------- */

static fc_ctx *ctx;
static void setup(void) { ctx = tu_host_ctx(); }
static void teardown(void) { fc_ctx_destroy(ctx); }
TestSuite(sparse_api, .init = setup, .fini = teardown);

static fc_array *f64s(int64_t n, const double *v) { return fc_from_host(ctx, FC_F64, FC_SHAPE(n), v); }
static fc_array *i32s(int64_t n, const int32_t *v) { return fc_from_host(ctx, FC_I32, FC_SHAPE(n), v); }

/* [[1, 0, 2], [0, 0, 3]] as CSR, owned by the open scope, else by the caller (its inputs
 * die with the matrix) */
static fc_sparse small_csr(void) {
    static const double d[] = {1, 2, 3};
    static const int32_t ind[] = {0, 2, 2}, ptr[] = {0, 2, 3};
    fc_scope *s = fc_scope_open(ctx);
    fc_sparse r = fc_sparse_keep(fc_sparse_csr(f64s(3, d), i32s(3, ind), i32s(3, ptr), 2, 3));
    fc_scope_close(s);
    if (!ctx->scope) return r;
    fc_sparse owned = r;
    fc_array **f[] = {&owned.data, &owned.indices, &owned.indptr};
    for (int i = 0; i < 3; i++) *f[i] = fcg_ret(ctx, *f[i]); /* to the open scope */
    return owned;
}

Test(sparse_api, accessors_and_poisons) {
    fc_scope *s = fc_scope_open(ctx);
    fc_sparse a = small_csr();
    cr_assert_eq(fc_sparse_status(a), FC_OK, "%s", fc_sparse_errmsg(a));
    cr_assert_eq(fc_sparse_nnz(a), 3);
    fc_shape sh = fc_sparse_shape(a);
    cr_assert(sh.ndim == 2 && sh.dim[0] == 2 && sh.dim[1] == 3);
    cr_assert_eq(fc_sparse_dtype(a), FC_F64);
    cr_assert_eq(fc_sparse_index_dtype(a), FC_I32);
    cr_assert_str_eq(fc_sparse_errmsg(a), "");
    /* a poisoned operand poisons every result, with its own message */
    fc_sparse bad = fc_sparse_csr(f64s(3, (double[]){1, 2, 3}), i32s(2, (int32_t[]){0, 1}),
                                  i32s(3, (int32_t[]){0, 2, 3}), 2, 3);
    cr_assert_eq(fc_sparse_status(bad), FC_ERR_SHAPE);
    cr_assert(strstr(fc_sparse_errmsg(bad), "csr_matrix") != NULL, "%s", fc_sparse_errmsg(bad));
    cr_assert_eq(fc_sparse_nnz(bad), -1);
    cr_assert_eq(fc_sparse_shape(bad).ndim, 0);
    cr_assert_eq(fc_sparse_dtype(bad), FC_DTYPE_COUNT);
    cr_assert_eq(fc_sparse_eval(bad), FC_ERR_SHAPE);
    fc_sparse chain[] = {fc_sparse_tocsr(bad), fc_sparse_tocoo(bad), fc_sparse_transpose(bad),
                         fc_sparse_multiply(bad, fc_f64(ctx, 2)), fc_sparse_add(a, bad),
                         fc_sparse_add(bad, a)};
    for (size_t i = 0; i < sizeof chain / sizeof *chain; i++) {
        cr_assert_eq(fc_sparse_status(chain[i]), FC_ERR_SHAPE, "result %zu", i);
        cr_assert_str_eq(fc_sparse_errmsg(chain[i]), fc_sparse_errmsg(bad));
    }
    cr_assert_eq(fc_array_status(fc_sparse_todense(bad)), FC_ERR_SHAPE);
    cr_assert_eq(fc_array_status(fc_sparse_matmul(bad, fc_ones(ctx, FC_F64, FC_SHAPE(3)))),
                 FC_ERR_SHAPE);
    /* a poisoned dense operand */
    fc_array *px = fc_reshape(fc_ones(ctx, FC_F64, FC_SHAPE(3)), FC_SHAPE(4));
    cr_assert_eq(fc_array_status(fc_sparse_matmul(a, px)), FC_ERR_SHAPE);
    cr_assert_eq(fc_sparse_status(fc_sparse_multiply(a, px)), FC_ERR_SHAPE);
    /* NULL everywhere: no context, so a matrix with no data (FC_ERR_NULL), never a crash */
    fc_sparse none = fc_sparse_csr(NULL, NULL, NULL, 2, 2);
    cr_assert_eq(fc_sparse_status(none), FC_ERR_NULL);
    cr_assert_eq(fc_sparse_status(fc_sparse_tocsr(none)), FC_ERR_NULL);
    cr_assert_null(fc_sparse_todense(none));
    fc_sparse half = fc_sparse_coo(f64s(1, (double[]){1}), NULL, i32s(1, (int32_t[]){0}), 1, 1);
    cr_assert_eq(fc_sparse_status(half), FC_ERR_NULL);
    fc_sparse_release(none); /* NULL fields: nothing to drop */
    fc_scope_close(s);
    cr_assert_eq(ctx->live_nodes, 0);
}

Test(sparse_api, references_without_a_scope) {
    /* results owned by the caller: released, nothing stays alive */
    fc_sparse a = small_csr();
    fc_sparse t = fc_sparse_transpose(a), c = fc_sparse_tocoo(a);
    fc_sparse k = fc_sparse_keep(t);
    fc_array *x = fc_ones(ctx, FC_F64, FC_SHAPE(3));
    fc_array *y = fc_sparse_matmul(a, x);
    double v[2];
    cr_assert_eq(fc_read(y, v, 0, 2), FC_OK, "%s", fc_errmsg(ctx));
    cr_assert(v[0] == 3 && v[1] == 3);
    fc_sparse_release(t);
    fc_sparse_release(a);
    fc_release(x);
    fc_release(y);
    cr_assert_eq(fc_sparse_eval(k), FC_OK); /* kept: still alive */
    fc_sparse_release(k);
    fc_sparse_release(c);
    cr_assert_eq(ctx->live_nodes, 0, "%zu nodes leaked", ctx->live_nodes);
    /* a scope releases what was made inside it, and keep carries a matrix out */
    fc_scope *s = fc_scope_open(ctx);
    fc_sparse out = fc_sparse_keep(fc_sparse_add(small_csr(), small_csr()));
    fc_scope_close(s);
    cr_assert_eq(fc_sparse_status(out), FC_OK, "%s", fc_sparse_errmsg(out));
    cr_assert_eq(fc_sparse_nnz(out), 3);
    fc_sparse_release(out);
    cr_assert_eq(ctx->live_nodes, 0, "%zu nodes leaked", ctx->live_nodes);
}

/* The error a build returns (status, and a message containing `says`). */
static void expect_error(fc_status got, fc_status want, const char *msg, const char *says,
                         const char *what) {
    cr_expect_eq(got, want, "%s: status %d (%s), want %d", what, got, msg, want);
    cr_expect(strstr(msg, says) != NULL, "%s: message '%s' lacks '%s'", what, msg, says);
}

#define EXPECT_SPARSE_ERR(expr, want, says)                                                      \
    do {                                                                                         \
        fc_sparse r_ = (expr);                                                                   \
        expect_error(fc_sparse_status(r_), want, fc_sparse_errmsg(r_), says, #expr);             \
    } while (0)
#define EXPECT_ARRAY_ERR(expr, want, says)                                                       \
    do {                                                                                         \
        fc_array *r_ = (expr);                                                                   \
        expect_error(fc_array_status(r_), want, fc_array_errmsg(r_), says, #expr);               \
    } while (0)

Test(sparse_api, construction_errors) {
    fc_scope *s = fc_scope_open(ctx);
    fc_array *d3 = f64s(3, (double[]){1, 2, 3});
    fc_array *i3 = i32s(3, (int32_t[]){0, 1, 2}), *p3 = i32s(3, (int32_t[]){0, 2, 3});
    /* shapes */
    EXPECT_SPARSE_ERR(fc_sparse_csr(d3, i3, p3, 3, 3), FC_ERR_SHAPE, "indptr");
    EXPECT_SPARSE_ERR(fc_sparse_csr(d3, i32s(2, (int32_t[]){0, 1}), p3, 2, 3), FC_ERR_SHAPE,
                      "do not fit");
    EXPECT_SPARSE_ERR(fc_sparse_csr(d3, i3, p3, -2, 3), FC_ERR_SHAPE, "negative");
    /* m + 1 entries of indptr: no m that overflows it (UBSan would say so) */
    EXPECT_SPARSE_ERR(fc_sparse_csr(d3, i3, p3, INT64_MAX, 3), FC_ERR_SHAPE, "unaddressable");
    /* COO needs no m + 1: int32 indices address INT32_MAX rows, as SciPy's do */
    fc_sparse tall = fc_sparse_coo(d3, i3, i3, INT32_MAX, 3);
    cr_expect_eq(fc_sparse_status(tall), FC_OK, "%s", fc_sparse_errmsg(tall));
    EXPECT_SPARSE_ERR(fc_sparse_coo(fc_reshape(d3, FC_SHAPE(1, 3)), i3, i3, 3, 3), FC_ERR_SHAPE,
                      "1-d");
    EXPECT_SPARSE_ERR(fc_sparse_coo(d3, i3, i32s(2, (int32_t[]){0, 1}), 3, 3), FC_ERR_SHAPE,
                      "coo_matrix");
    /* dtypes: values, indices (floats, narrow integers, Python scalars) */
    EXPECT_SPARSE_ERR(fc_sparse_coo(i3, i3, i3, 3, 3), FC_ERR_DTYPE, "f32, f64, c64 or c128");
    EXPECT_SPARSE_ERR(fc_sparse_coo(fc_cast(d3, FC_F16), i3, i3, 3, 3), FC_ERR_DTYPE, "data");
    EXPECT_SPARSE_ERR(fc_sparse_coo(d3, d3, i3, 3, 3), FC_ERR_DTYPE, "int32 or int64");
    EXPECT_SPARSE_ERR(fc_sparse_coo(d3, fc_cast(i3, FC_U8), i3, 3, 3), FC_ERR_DTYPE, "int32");
    EXPECT_SPARSE_ERR(fc_sparse_csr(d3, fc_cast(i3, FC_I16), p3, 2, 3), FC_ERR_DTYPE, "int64");
    EXPECT_SPARSE_ERR(fc_sparse_from_dense(fc_ones(ctx, FC_I32, FC_SHAPE(2, 2)), FC_SPARSE_CSR),
                      FC_ERR_DTYPE, "cast first");
    EXPECT_SPARSE_ERR(fc_sparse_from_dense(d3, FC_SPARSE_CSR), FC_ERR_SHAPE, "2-d");
    EXPECT_SPARSE_ERR(fc_sparse_from_dense(fc_ones(ctx, FC_F64, FC_SHAPE(2, 2)),
                                           (fc_sparse_format)7), FC_ERR_INVALID, "format");
    /* values in a matrix with no columns: every index is out of range */
    EXPECT_SPARSE_ERR(fc_sparse_coo(d3, i3, i3, 3, 0), FC_ERR_VALUE, "out of range");
    /* a mix of index dtypes is int64 */
    fc_sparse mix = fc_sparse_coo(d3, i3, fc_cast(i3, FC_I64), 3, 3);
    cr_assert_eq(fc_sparse_index_dtype(mix), FC_I64);
    /* mismatched operands */
    fc_sparse a = small_csr(); /* 2 x 3 */
    EXPECT_SPARSE_ERR(fc_sparse_add(a, fc_sparse_transpose(a)), FC_ERR_SHAPE,
                      "inconsistent shapes");
    EXPECT_ARRAY_ERR(fc_sparse_matmul(a, fc_ones(ctx, FC_F64, FC_SHAPE(2))), FC_ERR_SHAPE,
                     "dimension mismatch");
    EXPECT_ARRAY_ERR(fc_sparse_matmul(a, fc_ones(ctx, FC_F64, FC_SHAPE(3, 2, 1))), FC_ERR_SHAPE,
                     "1-d or 2-d");
    EXPECT_ARRAY_ERR(fc_sparse_matmul(a, fc_f64(ctx, 2)), FC_ERR_SHAPE, "1-d or 2-d");
    EXPECT_SPARSE_ERR(fc_sparse_multiply(a, fc_ones(ctx, FC_F64, FC_SHAPE(2))), FC_ERR_SHAPE,
                      "0-d");
    /* a hand-made struct of an unknown format is refused, not read */
    fc_sparse odd = a;
    odd.format = (fc_sparse_format)5;
    EXPECT_SPARSE_ERR(fc_sparse_tocsr(odd), FC_ERR_INVALID, "unknown sparse format");
    /* arrays of two contexts */
    fc_ctx *other = tu_host_ctx();
    fc_array *foreign = fc_keep(fc_ones(other, FC_F64, FC_SHAPE(3)));
    EXPECT_ARRAY_ERR(fc_sparse_matmul(a, foreign), FC_ERR_CONTEXT, "different contexts");
    fc_release(foreign);
    fc_ctx_destroy(other);
    fc_scope_close(s);
}

/* An index that breaks its rules fails every evaluation that reads the matrix, as a gather's
 * out-of-range index does, and nothing gains a value. */
Test(sparse_api, index_values_are_checked_at_evaluation) {
    fc_scope *s = fc_scope_open(ctx);
    fc_array *d3 = f64s(3, (double[]){1, 2, 3});
    fc_array *x = fc_ones(ctx, FC_F64, FC_SHAPE(3));
    struct {
        const char *what;
        fc_sparse m;
    } bad[] = {
        {"coo row too large", fc_sparse_coo(d3, i32s(3, (int32_t[]){0, 3, 1}),
                                            i32s(3, (int32_t[]){0, 1, 2}), 3, 3)},
        {"coo negative col", fc_sparse_coo(d3, i32s(3, (int32_t[]){0, 1, 1}),
                                           i32s(3, (int32_t[]){0, -1, 2}), 3, 3)},
        {"csr col too large", fc_sparse_csr(d3, i32s(3, (int32_t[]){0, 5, 1}),
                                            i32s(4, (int32_t[]){0, 1, 2, 3}), 3, 3)},
        {"indptr not from 0", fc_sparse_csr(d3, i32s(3, (int32_t[]){0, 1, 1}),
                                            i32s(4, (int32_t[]){1, 1, 2, 3}), 3, 3)},
        {"indptr falls", fc_sparse_csr(d3, i32s(3, (int32_t[]){0, 1, 1}),
                                       i32s(4, (int32_t[]){0, 2, 1, 3}), 3, 3)},
        {"indptr ends short", fc_sparse_csr(d3, i32s(3, (int32_t[]){0, 1, 1}),
                                            i32s(4, (int32_t[]){0, 1, 2, 2}), 3, 3)},
        {"indptr beyond nnz", fc_sparse_csr(d3, i32s(3, (int32_t[]){0, 1, 1}),
                                            i32s(4, (int32_t[]){0, 1, 9, 3}), 3, 3)},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        cr_assert_eq(fc_sparse_status(bad[i].m), FC_OK, "%s: built", bad[i].what);
        cr_expect_eq(fc_sparse_eval(bad[i].m), FC_ERR_VALUE, "%s", bad[i].what);
        cr_expect(strstr(fc_errmsg(ctx), "out of bounds") != NULL, "%s: %s", bad[i].what,
                  fc_errmsg(ctx));
        fc_array *y = fc_sparse_matmul(bad[i].m, x);
        double v[3];
        cr_expect_eq(fc_read(y, v, 0, 1), FC_ERR_VALUE, "%s: product", bad[i].what);
        cr_expect_eq(fc_array_status(fc_sparse_todense(bad[i].m)), FC_OK); /* lazy */
        cr_expect_eq(fc_eval(ctx, (fc_array *[]){fc_sparse_todense(bad[i].m)}, 1), FC_ERR_VALUE,
                     "%s: todense", bad[i].what);
    }
    fc_scope_close(s);
}

/* Index arrays that hold values are checked when the matrix is built, and a pass is
 * remembered on the value: the matrix reads them as they are (no checking copy), again when
 * it is rebuilt from the same arrays; fc_write forgets the pass, so new contents are checked
 * again and a bad index fails the evaluation as above. */
Test(sparse_api, checked_values_are_read_as_they_are) {
    fc_scope *s = fc_scope_open(ctx);
    fc_array *d3 = f64s(3, (double[]){1, 2, 3});
    fc_array *ind = i32s(3, (int32_t[]){0, 2, 1}), *ptr = i32s(4, (int32_t[]){0, 1, 2, 3});
    fc_array *x = f64s(3, (double[]){1, 10, 100});
    for (int rep = 0; rep < 2; rep++) {
        fc_sparse m = fc_sparse_csr(d3, ind, ptr, 3, 3);
        cr_assert_eq(fc_sparse_status(m), FC_OK);
        cr_expect(m.indices == ind && m.indptr == ptr, "build %d: the checked values are the "
                  "matrix's own arrays", rep);
        double y[3];
        cr_assert_eq(fc_read(fc_sparse_matmul(m, x), y, 0, 3), FC_OK, "%s", fc_errmsg(ctx));
        cr_expect(y[0] == 1 && y[1] == 200 && y[2] == 30, "y = %g %g %g", y[0], y[1], y[2]);
    }
    /* a pass against one bound says nothing of another: 3 columns pass, 2 do not */
    fc_sparse narrow = fc_sparse_csr(d3, ind, ptr, 3, 2);
    cr_expect(narrow.indices != ind, "a check against a smaller bound is made again");
    cr_expect_eq(fc_sparse_eval(narrow), FC_ERR_VALUE);
    /* new contents: checked again, and the bad index fails the evaluation */
    cr_assert_eq(fc_write(ind, (int32_t[]){7}, 1, 1, NULL), FC_OK, "%s", fc_errmsg(ctx));
    fc_sparse bad = fc_sparse_csr(d3, ind, ptr, 3, 3);
    cr_assert_eq(fc_sparse_status(bad), FC_OK);
    cr_expect(bad.indices != ind, "a written value is checked again");
    cr_expect_eq(fc_sparse_eval(bad), FC_ERR_VALUE);
    cr_expect(strstr(fc_errmsg(ctx), "out of bounds") != NULL, "%s", fc_errmsg(ctx));
    cr_assert_eq(fc_write(ptr, (int32_t[]){2, 1}, 1, 2, NULL), FC_OK, "%s", fc_errmsg(ctx));
    cr_assert_eq(fc_write(ind, (int32_t[]){2}, 1, 1, NULL), FC_OK, "%s", fc_errmsg(ctx));
    bad = fc_sparse_csr(d3, ind, ptr, 3, 3);
    cr_expect(bad.indices == ind && bad.indptr != ptr, "indices pass again, indptr falls");
    cr_expect_eq(fc_sparse_eval(bad), FC_ERR_VALUE);
    /* COO's row and column checks alike */
    fc_array *row = i32s(3, (int32_t[]){2, 0, 1});
    fc_sparse coo = fc_sparse_coo(d3, row, ind, 3, 3);
    cr_expect(coo.row == row && coo.col == ind, "COO's checked values are its own arrays");
    fc_scope_close(s);
}

/* The product node itself checks nothing it is given but shapes and dtypes (.fc's printer
 * form); the host reference refuses indices out of range rather than read outside x. */
Test(sparse_api, host_reference_checks_the_product_node) {
    fc_scope *s = fc_scope_open(ctx);
    fc_array *x = fc_ones(ctx, FC_F64, FC_SHAPE(3));
    fc_array *d = f64s(2, (double[]){1, 2});
    fc_array *y = fcg_csr_matmul(i32s(3, (int32_t[]){0, 1, 2}), i32s(2, (int32_t[]){0, 7}), d, x);
    cr_assert_eq(fc_array_status(y), FC_OK, "%s", fc_array_errmsg(y));
    double v[2];
    cr_assert_eq(fc_read(y, v, 0, 2), FC_ERR_VALUE);
    cr_assert(strstr(fc_errmsg(ctx), "column index 7") != NULL, "%s", fc_errmsg(ctx));
    y = fcg_csr_matmul(i32s(3, (int32_t[]){0, 3, 2}), i32s(2, (int32_t[]){0, 1}), d, x);
    cr_assert_eq(fc_read(y, v, 0, 2), FC_ERR_VALUE);
    cr_assert(strstr(fc_errmsg(ctx), "indptr[2]") != NULL, "%s", fc_errmsg(ctx));
    EXPECT_ARRAY_ERR(fcg_csr_matmul(i32s(3, (int32_t[]){0, 1, 2}), i32s(2, (int32_t[]){0, 1}), d,
                                    fc_cast(x, FC_F32)), FC_ERR_DTYPE, "data's dtype");
    EXPECT_ARRAY_ERR(fcg_csr_matmul(i32s(3, (int32_t[]){0, 1, 2}),
                                    fc_cast(i32s(2, (int32_t[]){0, 1}), FC_I64), d, x),
                     FC_ERR_DTYPE, "both alike");
    fc_scope_close(s);
}

/* Laziness: the conversions that need no value build without evaluating anything; the product
 * of x computed by kernels is one library call between kernels. */
Test(sparse_api, lazy_conversions_evaluate_nothing) {
    fc_scope *s = fc_scope_open(ctx);
    fc_sparse a = small_csr();
    fc_sparse t = fc_sparse_tocoo(fc_sparse_transpose(a)); /* 3 x 2 */
    fc_array *y = fc_add(fc_sparse_matmul(t, fc_sin(fc_ones(ctx, FC_F64, FC_SHAPE(2)))),
                         fc_f64(ctx, 1));
    /* (a's indices held a value and passed their check when a was built: a reads them) */
    cr_assert_eq(a.indices->op, FCG_OP_DATA, "small_csr's indices are its input's value");
    cr_assert_null(t.data->host);
    cr_assert_null(t.row->host);
    double v[3];
    cr_assert_eq(fc_read(y, v, 0, 3), FC_OK, "%s", fc_errmsg(ctx));
    double s1 = sin(1.0);
    cr_assert(fabs(v[0] - (1 + s1)) < 1e-15 && fabs(v[1] - 1) < 1e-15 &&
              fabs(v[2] - (1 + 5 * s1)) < 1e-15, "%g %g %g", v[0], v[1], v[2]);
    fc_scope_close(s);
}

/* ---- .fc ------------------------------------------------------------------------------------ */

Test(sparse_api, fc_print_and_parse_round_trip) {
    fc_scope *s = fc_scope_open(ctx);
    fc_program *p = NULL;
    static const char text[] = "p = input i32 [4]\ni = input i32 [5]\nd = input c64 [5]\n"
                               "x = input c64 [6, 2]\ny = sparse.csr_matmul(p, i, d, x) * 2\n"
                               "out y\n";
    cr_assert_eq(fc_program_parse(ctx, text, sizeof text - 1, "t.fc", &p), FC_OK, "%s",
                 fc_errmsg(ctx));
    fc_array *out[1];
    cr_assert_eq(fc_program_build(p, NULL, out), FC_OK, "%s", fc_errmsg(ctx));
    cr_assert_eq(fc_array_dtype(out[0]), FC_C64);
    cr_assert(fc_array_shape(out[0]).dim[0] == 3 && fc_array_shape(out[0]).dim[1] == 2);
    char *t1;
    cr_assert_eq(fc_program_print(ctx, out, 1, NULL, &t1), FC_OK, "%s", fc_errmsg(ctx));
    cr_assert(strstr(t1, "sparse.csr_matmul(") != NULL, "%s", t1);
    fc_program *q = NULL;
    cr_assert_eq(fc_program_parse(ctx, t1, strlen(t1), "t1.fc", &q), FC_OK, "%s", fc_errmsg(ctx));
    fc_array *back[1];
    cr_assert_eq(fc_program_build(q, NULL, back), FC_OK, "%s", fc_errmsg(ctx));
    fc_hash h1, h2;
    cr_assert_eq(fc_graph_hash(out, 1, &h1), FC_OK);
    cr_assert_eq(fc_graph_hash(back, 1, &h2), FC_OK);
    cr_assert(h1.lo == h2.lo && h1.hi == h2.hi, "the printed program is another graph:\n%s", t1);
    /* a C API product prints and parses back to the same graph too */
    fc_sparse a = fc_sparse_coo(fc_ones(ctx, FC_F32, FC_SHAPE(4)),
                                fc_arange(ctx, FC_I64, 0, 4, 1), fc_zeros(ctx, FC_I64, FC_SHAPE(4)),
                                5, 2);
    fc_array *z[1] = {fc_sparse_matmul(a, fc_ones(ctx, FC_F64, FC_SHAPE(2)))};
    char *t2;
    cr_assert_eq(fc_program_print(ctx, z, 1, NULL, &t2), FC_OK, "%s", fc_errmsg(ctx));
    fc_program *r = NULL;
    cr_assert_eq(fc_program_parse(ctx, t2, strlen(t2), "t2.fc", &r), FC_OK, "%s\n%s",
                 fc_errmsg(ctx), t2);
    fc_array *zb[1];
    cr_assert_eq(fc_program_build(r, NULL, zb), FC_OK, "%s", fc_errmsg(ctx));
    cr_assert_eq(fc_graph_hash(z, 1, &h1), FC_OK);
    cr_assert_eq(fc_graph_hash(zb, 1, &h2), FC_OK);
    cr_assert(h1.lo == h2.lo && h1.hi == h2.hi, "another graph:\n%s", t2);
    double v[5], w[5];
    cr_assert_eq(fc_read(z[0], v, 0, 5), FC_OK, "%s", fc_errmsg(ctx));
    cr_assert_eq(fc_read(zb[0], w, 0, 5), FC_OK, "%s", fc_errmsg(ctx));
    cr_assert(memcmp(v, w, sizeof v) == 0 && v[0] == 1 && v[4] == 0);
    fc_free(ctx, t1);
    fc_free(ctx, t2);
    fc_program_destroy(p);
    fc_program_destroy(q);
    fc_program_destroy(r);
    fc_scope_close(s);
}

Test(sparse_api, fc_errors) {
    static const struct {
        const char *text;
        fc_status status;
        int line, col;
        const char *says;
    } bad[] = {
        {"p = input i32 [2]\ny = csr_matmul(p, p, p, p)\nout y\n", FC_ERR_PARSE, 2, 5,
         "write sparse.csr_matmul"},
        {"p = input i32 [2]\ny = sparse.solve(p, p)\nout y\n", FC_ERR_PARSE, 2, 12,
         "not a function of sparse"},
        {"p = input i32 [3]\ni = input i32 [2]\nd = input f64 [2]\nx = input f32 [4]\n"
         "y = sparse.csr_matmul(p, i, d, x)\nout y\n", FC_ERR_DTYPE, 5, 12, "data's dtype"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        tu_check_bad_fc(bad[i].text, strlen(bad[i].text), bad[i].status, bad[i].line, bad[i].col,
                        bad[i].says);
}

/* ---- the GPU against the host ------------------------------------------------------------ */

/* Each test opens a host context and a CUDA one (none without a GPU: the test is skipped,
 * counted on stderr) and closes both when it ends. */
static fc_ctx *hc, *gc;
static void gpu_pair_close(void) { tu_gpu_pair_close(&hc, &gc); }
TestSuite(gpu_sparse, .fini = gpu_pair_close);

#define GPU_TEST_BEGIN(name)                                                                     \
    do {                                                                                         \
        tu_gpu_pair_open(&hc, &gc);                                                              \
        TU_SKIP_WITHOUT_GPU(gc, "gpu_sparse", name);                                             \
    } while (0)

/* Every case of the SciPy file in a GPU context against SciPy (as on the host), and its
 * dense results against the host's within a few ulps of the dtype (cuSPARSE sums in the
 * dtype, the host in double; a duplicate's sum through scatter_add's atomics may round
 * otherwise). */
Test(gpu_sparse, every_reference_case_on_the_gpu) {
    GPU_TEST_BEGIN("every_reference_case_on_the_gpu");
    FILE *f = tu_open_data("sparse.txt");
    reader r = {.path = "tests/data/sparse.txt"};
    size_t cap = 0;
    tcase c;
    int cases = 0, failed = 0;
    while (read_case(f, &r, &cap, &c)) {
        fc_scope *sg = fc_scope_open(gc), *sh = fc_scope_open(hc);
        tcase loose = c; /* cuSPARSE sums f32 in f32, in its own order */
        loose.rtol *= 16, loose.atol *= 16;
        int bad = check_case(gc, &loose);
        if (!c.want.sparse) {
            fc_sparse s1, s2;
            fc_array *h, *g;
            run_case(hc, &c, &s1, &h);
            run_case(gc, &c, &s2, &g);
            int64_t n = fc_array_size(h);
            double *hv = download(h, c.name), *gv = download(g, c.name);
            bool cplx = c.want.dt == FC_C64 || c.want.dt == FC_C128;
            /* hv in download's layout: as the file's complex layout, or every other one */
            double *hw = calloc((size_t)(2 * n + 2), sizeof *hw);
            cr_assert_not_null(hw);
            for (int64_t i = 0; i < n; i++) {
                if (cplx) hw[2 * i] = hv[2 * i], hw[2 * i + 1] = hv[2 * i + 1];
                else hw[i] = hv[2 * i];
            }
            bad += value_mismatches(gv, hw, n, cplx, 4 * c.rtol, 4 * c.atol, c.name);
            free(hv);
            free(gv);
            free(hw);
        }
        fc_scope_close(sh);
        fc_scope_close(sg);
        failed += bad != 0;
        cases++;
        case_free(&c);
    }
    free(r.line);
    fclose(f);
    cr_assert_eq(failed, 0, "%d of %d cases differ on the GPU", failed, cases);
}

/* A larger product, vector and matrix, every value and index dtype, through cuSPARSE, against
 * the host; and the same product again (the cached plan's library step). */
Test(gpu_sparse, large_products_and_replays) {
    GPU_TEST_BEGIN("large_products_and_replays");
    static const fc_dtype dts[] = {FC_F32, FC_F64, FC_C64, FC_C128};
    static const fc_dtype its[] = {FC_I32, FC_I64};
    const int64_t m = 3000, n = 2000, nnz = 40000;
    for (int di = 0; di < 4; di++)
        for (int ii = 0; ii < 2; ii++)
            for (int k = 0; k < 3; k += 2) { /* k 0: a vector */
                fc_dtype t = dts[di], it = its[ii];
                char what[96];
                snprintf(what, sizeof what, "%s %s k=%d", fc_dtype_name(t), fc_dtype_name(it), k);
                fc_ctx *cs[2] = {hc, gc};
                double *res[2];
                int64_t size = 0;
                for (int w = 0; w < 2; w++) {
                    fc_ctx *cx = cs[w];
                    fc_scope *s = fc_scope_open(cx);
                    fc_rng g = fc_rng_init(7);
                    fc_array *row = fc_rng_integers(cx, &g, 0, m, it, FC_SHAPE(nnz));
                    fc_array *col = fc_rng_integers(cx, &g, 0, n, it, FC_SHAPE(nnz));
                    fc_array *data = fc_rng_standard_normal(cx, &g, t, FC_SHAPE(nnz));
                    fc_array *x = k ? fc_rng_standard_normal(cx, &g, t, FC_SHAPE(n, k))
                                    : fc_rng_standard_normal(cx, &g, t, FC_SHAPE(n));
                    fc_sparse a = fc_sparse_coo(data, row, col, m, n);
                    fc_array *y = fc_sparse_matmul(a, x);
                    fc_array *y2 = fc_sparse_matmul(fc_sparse_tocsr(a), x);
                    res[w] = download(y, what);
                    double *again = download(y2, what);
                    size = fc_array_size(y);
                    /* both in download's layout: pairs (the GPU's first run found this
                     * compared a pair against a packed layout) */
                    cr_expect_eq(value_mismatches(again, res[w], size, true, 1e-4, 1e-4, what),
                                 0, "%s: tocsr's product differs", what);
                    free(again);
                    fc_scope_close(s);
                }
                bool single = t == FC_F32 || t == FC_C64;
                /* download's layout on both sides: compare pairs as complex */
                int bad = value_mismatches(res[1], res[0], size, true, single ? 1e-4 : 1e-11,
                                           single ? 1e-4 : 1e-11, what);
                cr_expect_eq(bad, 0, "%s: the GPU differs from the host", what);
                free(res[0]);
                free(res[1]);
            }
}
