/*
 * tests/test_fc_sparse.c - scipy.sparse's spellings in .fc programs (a sparse value kind).
 *
 *   - every constructor, method, attribute and operator builds the graph the C API's
 *     fc_sparse functions build on the same input arrays (the same structural hash), with
 *     the same values on the host backend;
 *   - the lazy forms print and parse back to the same graph;
 *   - misuse (wrong arity, a dense argument that is not 2-d, a bad shape, sparse + dense,
 *     sparse @ sparse, a function of a sparse value, `out` of one) is an error naming what is
 *     not supported, at its position.
 */
#include <criterion/criterion.h>

#include <fusec.h>

#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool hash_eq(fc_hash a, fc_hash b) { return a.lo == b.lo && a.hi == b.hi; }

/* The inputs every case may use; a is a CSR matrix from arrays, b one from dense d. */
#define DECLS                                                                                    \
    "d = input f64 [3, 4]\n"                                                                     \
    "x = input f64 [4]\n"                                                                        \
    "X = input f64 [4, 2]\n"                                                                     \
    "y = input f64 [3]\n"                                                                        \
    "v = input f64 [5]\n"                                                                        \
    "j = input i32 [5]\n"                                                                        \
    "p = input i32 [4]\n"                                                                        \
    "r = input i32 [5]\n"                                                                        \
    "f = input f32 [3, 4]\n"
enum { I_D, I_X, I_XM, I_Y, I_V, I_J, I_P, I_R, I_F, NIN };

typedef struct ins {
    fc_ctx *ctx;
    fc_array *a[NIN];
} ins;

static ins make_inputs(fc_ctx *ctx) {
    ins in = {.ctx = ctx};
    double d[12] = {0, 1.5, 0, -2, 0, 0, 0, 0, 3, 0, 0.25, 4};
    double x[4] = {1, -2, 0.5, 3}, xm[8] = {1, 2, 3, 4, 5, 6, 7, 8}, y[3] = {2, -1, 0.5};
    double v[5] = {1, 2, 3, 4, 5};
    int32_t j[5] = {0, 3, 1, 1, 2}, p[4] = {0, 2, 2, 5}, r[5] = {0, 0, 2, 2, 2};
    float f[12] = {0, 1, 0, 0, 2, 0, 0, 3, 0, 0, 0, 4};
    in.a[I_D] = fc_from_host(ctx, FC_F64, FC_SHAPE(3, 4), d);
    in.a[I_X] = fc_from_host(ctx, FC_F64, FC_SHAPE(4), x);
    in.a[I_XM] = fc_from_host(ctx, FC_F64, FC_SHAPE(4, 2), xm);
    in.a[I_Y] = fc_from_host(ctx, FC_F64, FC_SHAPE(3), y);
    in.a[I_V] = fc_from_host(ctx, FC_F64, FC_SHAPE(5), v);
    in.a[I_J] = fc_from_host(ctx, FC_I32, FC_SHAPE(5), j);
    in.a[I_P] = fc_from_host(ctx, FC_I32, FC_SHAPE(4), p);
    in.a[I_R] = fc_from_host(ctx, FC_I32, FC_SHAPE(5), r);
    in.a[I_F] = fc_from_host(ctx, FC_F32, FC_SHAPE(3, 4), f);
    for (int i = 0; i < NIN; i++) cr_assert_eq(fc_array_status(in.a[i]), FC_OK);
    return in;
}

/* The matrices the C API side starts from. */
static fc_sparse api_a(const ins *in) {
    return fc_sparse_csr(in->a[I_V], in->a[I_J], in->a[I_P], 3, 4);
}
static fc_sparse api_b(const ins *in) { return fc_sparse_from_dense(in->a[I_D], FC_SPARSE_CSR); }
static fc_sparse api_coo(const ins *in) {
    return fc_sparse_coo(in->a[I_V], in->a[I_R], in->a[I_J], 3, 4);
}
static fc_array *i64(const ins *in, int64_t k) { return fc_i64(in->ctx, k); }

#define A "sparse.csr_matrix((v, j, p), shape=(3, 4))"
#define B "sparse.csr_matrix(d)"
#define C "sparse.coo_matrix((v, (r, j)), shape=(3, 4))"

/* Each spelling (y = EXPR) and what builds the same graph through the C API. */
static const char *const exprs[] = {
    /* constructors, with @ */
    A " @ x",
    B " @ x",
    A " @ X",
    "sparse.coo_matrix(d) @ x",
    C " @ X",
    "sparse.csr_matrix((v, (r, j)), shape=[3, 4]) @ x",
    "sparse.csr_matrix(d, shape=(3, 4)) @ x",
    "sparse.csr_matrix(arg1=(v, j, p), shape=(3, 4)) @ x",
    "sparse.csr_matrix(" C ") @ x",
    "sparse.coo_matrix(" A ") @ x",
    "sparse.csr_matrix(f) @ x",
    /* conversions */
    A ".todense()",
    A ".toarray()",
    C ".todense()",
    C ".tocsr().todense()",
    A ".tocoo().toarray()",
    A ".tocsr() @ x",
    /* transposes */
    A ".T @ y",
    A ".transpose() @ y",
    B ".T.todense()",
    C ".T @ y",
    /* scalars, sums */
    "(2 * " A ").todense()",
    "(" A " * 2.5).todense()",
    "(-" A ").todense()",
    "(+" A ") @ x",
    "(" A " + " B ").todense()",
    "(" A " - " B ").todense()",
    "(" C " + " A ").todense()",
    "(3 * (" A " + " B ").T) @ y",
    /* attributes */
    "zeros(" A ".shape, " A ".dtype) + " A ".nnz",
    "zeros(" B ".shape) + " B ".nnz + " B ".ndim",
    "zeros(" B ".shape, dtype=sparse.csr_matrix(f).dtype)",
    A ".data + " A ".indices + " A ".indptr[3]",
    C ".row * " C ".col",
    "sparse.coo_matrix(d).row",
};
#define NCASES (int)(sizeof exprs / sizeof exprs[0])

static fc_array *api_case(const ins *in, int k) {
    fc_array *x = in->a[I_X], *xm = in->a[I_XM], *y = in->a[I_Y];
    switch (k) {
    case 0: return fc_sparse_matmul(api_a(in), x);
    case 1: return fc_sparse_matmul(api_b(in), x);
    case 2: return fc_sparse_matmul(api_a(in), xm);
    case 3: return fc_sparse_matmul(fc_sparse_from_dense(in->a[I_D], FC_SPARSE_COO), x);
    case 4: return fc_sparse_matmul(api_coo(in), xm);
    case 5: return fc_sparse_matmul(fc_sparse_tocsr(api_coo(in)), x);
    case 6: return fc_sparse_matmul(api_b(in), x);
    case 7: return fc_sparse_matmul(api_a(in), x);
    case 8: return fc_sparse_matmul(fc_sparse_tocsr(api_coo(in)), x);
    case 9: return fc_sparse_matmul(fc_sparse_tocoo(api_a(in)), x);
    case 10: return fc_sparse_matmul(fc_sparse_from_dense(in->a[I_F], FC_SPARSE_CSR), x);
    case 11: return fc_sparse_todense(api_a(in));
    case 12: return fc_sparse_todense(api_a(in));
    case 13: return fc_sparse_todense(api_coo(in));
    case 14: return fc_sparse_todense(fc_sparse_tocsr(api_coo(in)));
    case 15: return fc_sparse_todense(fc_sparse_tocoo(api_a(in)));
    case 16: return fc_sparse_matmul(fc_sparse_tocsr(api_a(in)), x);
    case 17: return fc_sparse_matmul(fc_sparse_transpose(api_a(in)), y);
    case 18: return fc_sparse_matmul(fc_sparse_transpose(api_a(in)), y);
    case 19: return fc_sparse_todense(fc_sparse_transpose(api_b(in)));
    case 20: return fc_sparse_matmul(fc_sparse_transpose(api_coo(in)), y);
    case 21: return fc_sparse_todense(fc_sparse_multiply(api_a(in), i64(in, 2)));
    case 22: return fc_sparse_todense(fc_sparse_multiply(api_a(in), fc_f64(in->ctx, 2.5)));
    case 23: return fc_sparse_todense(fc_sparse_multiply(api_a(in), i64(in, -1)));
    case 24: return fc_sparse_matmul(api_a(in), x);
    case 25: return fc_sparse_todense(fc_sparse_add(api_a(in), api_b(in)));
    case 26:
        return fc_sparse_todense(
            fc_sparse_add(api_a(in), fc_sparse_multiply(api_b(in), i64(in, -1))));
    case 27: return fc_sparse_todense(fc_sparse_add(api_coo(in), api_a(in)));
    case 28:
        return fc_sparse_matmul(
            fc_sparse_multiply(fc_sparse_transpose(fc_sparse_add(api_a(in), api_b(in))),
                               i64(in, 3)),
            y);
    case 29:
        return fc_add(fc_zeros(in->ctx, FC_F64, FC_SHAPE(3, 4)), i64(in, fc_sparse_nnz(api_a(in))));
    case 30:
        return fc_add(fc_add(fc_zeros(in->ctx, FC_F64, FC_SHAPE(3, 4)),
                             i64(in, fc_sparse_nnz(api_b(in)))),
                      i64(in, 2));
    case 31: return fc_zeros(in->ctx, FC_F32, FC_SHAPE(3, 4));
    case 32: {
        fc_sparse s = api_a(in);
        return fc_add(fc_add(s.data, s.indices),
                      fc_index(s.indptr, 1, (fc_idx[]){FC_AT(3)}));
    }
    case 33: {
        fc_sparse s = api_coo(in);
        return fc_mul(s.row, s.col);
    }
    case 34: return fc_sparse_from_dense(in->a[I_D], FC_SPARSE_COO).row;
    }
    cr_assert_fail("no C API form for case %d", k);
    return NULL;
}

/* Builds DECLS + "y = EXPR" on in's arrays; the status, and the output in *out. */
static fc_status build_expr(const ins *in, const char *expr, const char *tail, fc_array **out) {
    char text[2048];
    snprintf(text, sizeof text, DECLS "%s\n%s", expr, tail);
    fc_program *prog = NULL;
    fc_status st = fc_program_parse(in->ctx, text, strlen(text), "s.fc", &prog);
    if (st == FC_OK) st = fc_program_build(prog, in->a, out);
    fc_program_destroy(prog);
    return st;
}

static void expect_same_values(fc_array *got, fc_array *want, const char *what) {
    cr_assert_eq(fc_array_dtype(got), fc_array_dtype(want), "%s: dtype %s, expected %s", what,
                 fc_dtype_name(fc_array_dtype(got)), fc_dtype_name(fc_array_dtype(want)));
    fc_shape a = fc_array_shape(got), b = fc_array_shape(want);
    cr_assert_eq(a.ndim, b.ndim, "%s", what);
    for (int d = 0; d < a.ndim; d++) cr_assert_eq(a.dim[d], b.dim[d], "%s", what);
    size_t n = (size_t)fc_array_size(got) * fc_dtype_size(fc_array_dtype(got));
    unsigned char *x = calloc(1, n + 1), *y = calloc(1, n + 1);
    cr_assert_eq(fc_to_host(got, x, n), FC_OK, "%s: %s", what, fc_errmsg(fc_array_ctx(got)));
    cr_assert_eq(fc_to_host(want, y, n), FC_OK, "%s", what);
    cr_assert(memcmp(x, y, n) == 0, "%s: values differ from the C API's", what);
    free(x);
    free(y);
}

Test(fc_sparse, spellings_build_the_c_api_graph) {
    for (int k = 0; k < NCASES; k++) {
        fc_ctx *ctx = tu_host_ctx();
        fc_scope *s = fc_scope_open(ctx);
        ins in = make_inputs(ctx);
        char expr[1024];
        snprintf(expr, sizeof expr, "out_ = %s", exprs[k]);
        fc_array *got = NULL;
        cr_assert_eq(build_expr(&in, expr, "out out_\n", &got), FC_OK, "%s: %s", exprs[k],
                     fc_errmsg(ctx));
        fc_array *want = api_case(&in, k);
        cr_assert_eq(fc_array_status(want), FC_OK, "%s: %s", exprs[k], fc_array_errmsg(want));
        fc_hash hg, hw;
        cr_assert_eq(fc_graph_hash(&got, 1, &hg), FC_OK);
        cr_assert_eq(fc_graph_hash(&want, 1, &hw), FC_OK);
        cr_assert(hash_eq(hg, hw), "%s is not the C API's graph", exprs[k]);
        expect_same_values(got, want, exprs[k]);
        fc_scope_close(s);
        fc_ctx_destroy(ctx);
    }
}

/* Values worked by hand for a few (the C API is checked against SciPy in test_sparse.c). */
Test(fc_sparse, values) {
    fc_ctx *ctx = tu_host_ctx();
    fc_scope *s = fc_scope_open(ctx);
    ins in = make_inputs(ctx);
    fc_array *o[3];
    char text[2048];
    snprintf(text, sizeof text, DECLS "a = " A "\nb = " B "\nu = a @ x\nw = (a + 2 * b).T @ y\n"
             "n = zeros([1]) + a.nnz + b.nnz\nout u, w, n\n");
    fc_program *prog = NULL;
    cr_assert_eq(fc_program_parse(ctx, text, strlen(text), "v.fc", &prog), FC_OK, "%s",
                 fc_errmsg(ctx));
    cr_assert_eq(fc_program_build(prog, in.a, o), FC_OK, "%s", fc_errmsg(ctx));
    /* a = [[1 0 0 2], [0 0 0 0], [0 3+4 5 0]] (the two (2, 1) entries add up) */
    double u[3], w[4], n[1];
    cr_assert_eq(fc_read(o[0], u, 0, 3), FC_OK, "%s", fc_errmsg(ctx));
    cr_assert_eq(fc_read(o[1], w, 0, 4), FC_OK, "%s", fc_errmsg(ctx));
    cr_assert_eq(fc_read(o[2], n, 0, 1), FC_OK, "%s", fc_errmsg(ctx));
    cr_assert(u[0] == 1 + 6 && u[1] == 0 && u[2] == -14 + 2.5, "%g %g %g", u[0], u[1], u[2]);
    /* a + 2b = [[1 3 0 -2], [0 0 0 0], [6 7 5.5 8]]; its transpose times y = (2, -1, 0.5) */
    cr_assert(w[0] == 2 + 3 && w[1] == 6 + 3.5 && w[2] == 2.75 && w[3] == -4 + 4, "%g %g %g %g",
              w[0], w[1], w[2], w[3]);
    cr_assert(n[0] == 5 + 5, "%g", n[0]);
    fc_program_destroy(prog);
    fc_scope_close(s);
    fc_ctx_destroy(ctx);
}

/* The lazy forms build without data; the printer writes their arrays' ops and the product
 * node, which parse back to the same graph. */
Test(fc_sparse, print_and_parse_round_trip) {
    fc_ctx *ctx = tu_host_ctx();
    fc_scope *s = fc_scope_open(ctx);
    static const char text[] = DECLS "a = " A "\nc = " C "\n"
                               "u = (2 * a.T).tocoo() @ y + (-c).T @ y\n"
                               "w = a.todense() + c.T.toarray().T\nout u, w\n";
    fc_program *p = NULL;
    cr_assert_eq(fc_program_parse(ctx, text, sizeof text - 1, "rt.fc", &p), FC_OK, "%s",
                 fc_errmsg(ctx));
    fc_array *out[2];
    cr_assert_eq(fc_program_build(p, NULL, out), FC_OK, "%s", fc_errmsg(ctx));
    char *printed;
    cr_assert_eq(fc_program_print(ctx, out, 2, NULL, &printed), FC_OK, "%s", fc_errmsg(ctx));
    cr_assert(strstr(printed, "sparse.csr_matmul(") != NULL, "%s", printed);
    fc_program *q = NULL;
    cr_assert_eq(fc_program_parse(ctx, printed, strlen(printed), "printed.fc", &q), FC_OK,
                 "%s\n%s", fc_errmsg(ctx), printed);
    fc_array *back[2];
    cr_assert_eq(fc_program_build(q, NULL, back), FC_OK, "%s", fc_errmsg(ctx));
    fc_hash h1, h2;
    cr_assert_eq(fc_graph_hash(out, 2, &h1), FC_OK);
    cr_assert_eq(fc_graph_hash(back, 2, &h2), FC_OK);
    cr_assert(hash_eq(h1, h2), "the printed program is another graph:\n%s", printed);
    fc_free(ctx, printed);
    fc_program_destroy(p);
    fc_program_destroy(q);
    fc_scope_close(s);
    fc_ctx_destroy(ctx);
}

/* ---- errors --------------------------------------------------------------------------------- */

static const struct bad {
    const char *body; /* after DECLS; a and b are bound first */
    fc_status st;
    const char *message;
} bad[] = {
    /* arity and arguments */
    {"z = sparse.csr_matrix()\nout z", FC_ERR_PARSE, "csr_matrix() missing required argument 'arg1'"},
    {"z = sparse.csr_matrix(d, (3, 4), 1)\nout z", FC_ERR_PARSE, "at most 2 positional"},
    {"z = sparse.coo_matrix(d, dtype=f32)\nout z", FC_ERR_PARSE, "unexpected keyword argument 'dtype'"},
    {"z = csr_matrix(d)\nout z", FC_ERR_PARSE, "write sparse.csr_matrix(...)"},
    {"z = sparse.csr_matrix(x).todense()\nout z", FC_ERR_SHAPE, "a dense argument must be 2-d, found 1-d"},
    {"z = sparse.csr_matrix(X[None]).todense()\nout z", FC_ERR_SHAPE, "must be 2-d, found 3-d"},
    {"z = sparse.csr_matrix((v, j, p)).todense()\nout z", FC_ERR_UNSUPPORTED, "shape=(m, n) is required"},
    {"z = sparse.csr_matrix((v, j, p), shape=(3, 4, 1)).todense()\nout z", FC_ERR_SHAPE,
     "shape must be (m, n), found 3 extents"},
    {"z = sparse.csr_matrix((v, j, p), shape=(5, 4)).todense()\nout z", FC_ERR_SHAPE, "s.fc:12:12: csr_matrix: indices [5] (i32) and indptr [4]"},
    {"z = sparse.coo_matrix((v, (r, p)), shape=(3, 4)).todense()\nout z", FC_ERR_SHAPE, "s.fc:12:12: coo_matrix: row [5] (i32) and col [4]"},
    {"z = sparse.csr_matrix(d, shape=(4, 3)).todense()\nout z", FC_ERR_SHAPE,
     "shape (4, 3) is not the argument's (3, 4)"},
    {"z = sparse.coo_matrix((v, j, p), shape=(3, 4)).todense()\nout z", FC_ERR_INVALID,
     "coo_matrix() takes a dense 2-d array, a sparse matrix, (data, (row, col)); found a tuple"},
    {"z = sparse.csr_matrix(3).todense()\nout z", FC_ERR_INVALID, "found an integer"},
    {"z = sparse.csr_matrix((v, (r, 2)), shape=(3, 4)).todense()\nout z", FC_ERR_INVALID,
     "entry 1 is an integer"},
    /* operators */
    {"z = a + d\nout z", FC_ERR_UNSUPPORTED, "sparse + dense is not supported"},
    {"z = d - a\nout z", FC_ERR_UNSUPPORTED, "dense - sparse is not supported"},
    {"z = a @ b\nout z", FC_ERR_UNSUPPORTED, "sparse @ sparse is not supported"},
    {"z = y @ a\nout z", FC_ERR_UNSUPPORTED, "dense @ sparse is not supported"},
    {"z = a @ y\nout z", FC_ERR_SHAPE, "s.fc:12:7: sparse matmul: dimension mismatch"},
    {"z = a * d\nout z", FC_ERR_UNSUPPORTED, "scalar only (a number or a 0-d array), found a 2-d"},
    {"z = a * b\nout z", FC_ERR_UNSUPPORTED, "sparse * sparse is not supported"},
    {"z = a / 2\nout z", FC_ERR_UNSUPPORTED, "sparse / scalar is not supported"},
    {"z = ~a\nout z", FC_ERR_UNSUPPORTED, "invert of a sparse matrix is not supported"},
    /* functions, methods, subscripts of a sparse value */
    {"z = sin(a)\nout z", FC_ERR_UNSUPPORTED, "sin() does not take a sparse matrix"},
    {"z = sum(a)\nout z", FC_ERR_UNSUPPORTED, "sum() does not take a sparse matrix"},
    {"z = a.sum()\nout z", FC_ERR_UNSUPPORTED, "method 'sum' is not supported for a sparse matrix"},
    {"z = a.size\nout d", FC_ERR_UNSUPPORTED, "attribute 'size' is not supported for a sparse"},
    {"z = a[0]\nout z", FC_ERR_UNSUPPORTED, "found a sparse matrix"},
    {"z = a.transpose(1, 0)\nout d", FC_ERR_UNSUPPORTED, "transpose() takes no axes"},
    {"z = d.tocsr()\nout z", FC_ERR_INVALID, "method 'tocsr' needs a sparse matrix, found an array"},
    {"z = d.nnz\nout d", FC_ERR_INVALID, "attribute 'nnz' needs a sparse matrix"},
    {"z = a.tocsr(1)\nout d", FC_ERR_PARSE, "tocsr() takes no arguments"},
    {"z = a.todense\nout d", FC_ERR_PARSE, "method 'todense' used without a call"},
    {"z = a.nnz()\nout d", FC_ERR_PARSE, "'nnz' is an attribute, not a method"},
    {"z = a.row\nout d", FC_ERR_INVALID, "a CSR matrix has no 'row' (x.tocoo().row has)"},
    {"z = a.tocoo().indptr\nout d", FC_ERR_INVALID, "a COO matrix has no 'indptr'"},
    /* outputs stay arrays */
    {"out a", FC_ERR_UNSUPPORTED, "output 'a' is a sparse matrix; a program's outputs are arrays"},
    {"z = [a, b]\nout z", FC_ERR_INVALID, "found a list"},
};

Test(fc_sparse, misuse_is_a_clear_error) {
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        fc_ctx *ctx = tu_host_ctx();
        fc_scope *s = fc_scope_open(ctx);
        ins in = make_inputs(ctx);
        char body[1024];
        snprintf(body, sizeof body, "a = " A "\nb = " B "\n%s", bad[k].body);
        fc_array *o[1] = {NULL};
        fc_status st = build_expr(&in, body, "\n", o);
        cr_assert_eq(st, bad[k].st, "%s: status %d (%s), expected %d", bad[k].body, (int)st,
                     fc_errmsg(ctx), (int)bad[k].st);
        cr_assert(strstr(fc_errmsg(ctx), bad[k].message) != NULL, "%s: message '%s' lacks '%s'",
                  bad[k].body, fc_errmsg(ctx), bad[k].message);
        cr_assert(strstr(fc_errmsg(ctx), "s.fc:") != NULL, "%s: no position in '%s'",
                  bad[k].body, fc_errmsg(ctx));
        fc_scope_close(s);
        fc_ctx_destroy(ctx);
    }
}
