/*
 * tests/test_linalg.c - dense linear algebra (graph/linalg.c, ref/host_linalg.c, cuSOLVER in
 * backend/cuda_lib.c) beyond the NumPy reference cases (tests/data/ops_linalg.txt, replayed
 * by tests/test_composite.c): invariants on the host, the errors' messages and their
 * aftermath, the .fc spellings and the printer's round trip, and the GPU against the host.
 *
 * Matrices are built here from a fixed generator: well conditioned ones (random in [-1, 1)
 * plus (n + 1) I: diagonally dominant), Hermitian positive definite ones (B B^H + n I),
 * exactly singular ones (a zero row) and indefinite ones. The GPU suite (gpu_linalg) runs
 * every op, dtype and batch shape in a host and a CUDA context over the same data and
 * compares within 256 n eps max(|host|, 1) (the host factorises in double, cuSOLVER in the
 * dtype's precision; the matrices' condition numbers are below 10); it is skipped, visibly,
 * where there is no GPU. Stacks of small matrices take the batched routines
 * (backend/cuda_batched.c) on the GPU: their own tests at the end check the rule, each op and
 * dtype against the host, the errors against the loop's (FUSEC_LINALG_BATCHED=0), and count
 * the batched calls each evaluation made.
 */
#include <criterion/criterion.h>

#include "codegen.h"
#include "cuda_batched.h"
#include "fusec.h"
#include "graph.h"
#include "test_util.h"
#include "test_values.h"

#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* re + im i, parts kept as given (re + im * I would turn an infinite part into NaNs, and
 * CMPLX is not in every C library: glibc defines it for GCC alone) */
static inline double complex complex_of(double re, double im) {
    double parts[2] = {re, im};
    double complex z;
    memcpy(&z, parts, sizeof z);
    return z;
}

/* ---- data ------------------------------------------------------------------------------- */

static uint64_t rng_state = 12345;

static double urand(void) { /* [-1, 1) */
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(rng_state >> 11) * 0x1p-53 * 2.0 - 1.0;
}

typedef enum kind { WELL, SPD, SINGULAR, INDEFINITE, RANDOM } kind;

/* count matrices n x n of `kind` (complex values in c[], row-major, one after another). */
static double complex *matrices(kind k, int64_t count, int64_t n, bool cplx) {
    double complex *m = calloc((size_t)(count * n * n + 1), sizeof *m);
    double complex *b = calloc((size_t)(n * n + 1), sizeof *b);
    cr_assert(m && b);
    for (int64_t q = 0; q < count; q++) {
        double complex *a = m + q * n * n;
        for (int64_t i = 0; i < n * n; i++) b[i] = complex_of(urand(), cplx ? urand() : 0.0);
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++) {
                double complex v = b[i * n + j];
                if (k == SPD) {
                    v = 0;
                    for (int64_t l = 0; l < n; l++) v += b[i * n + l] * conj(b[j * n + l]);
                    if (i == j) v += (double)n;
                } else if (k == WELL || k == SINGULAR) {
                    if (i == j) v += (double)(n + 1);
                } else if (k == INDEFINITE) {
                    v = i == j ? (i == n - 1 ? -1.0 : 2.0) : 0.0;
                }
                a[i * n + j] = v;
            }
        /* The last row zero: every LU with partial pivoting meets an exactly zero pivot, as
         * NumPy's does. A repeated row meets it only where the multiplier p / p comes out
         * exactly 1, which a complex p (C's division) or a reciprocal p * (1 / p) (LAPACK's
         * scaling; 49 * (1 / 49) < 1) need not give: host and GPU would disagree on noise. */
        if (k == SINGULAR)
            for (int64_t j = 0; j < n; j++) a[(n - 1) * n + j] = 0.0;
    }
    free(b);
    return m;
}

/* The values as an array of dtype t (shape s) in ctx. */
static fc_array *upload(fc_ctx *ctx, const double complex *v, fc_dtype t, fc_shape s) {
    size_t n = tv_numel(s), es = fc_dtype_size(t);
    unsigned char *p = malloc(n * es + 1);
    cr_assert_not_null(p);
    for (size_t i = 0; i < n; i++) {
        double re = creal(v[i]), im = cimag(v[i]);
        unsigned char *q = p + i * es;
        switch (t) {
        case FC_F32: { float f = (float)re; memcpy(q, &f, 4); break; }
        case FC_F64: memcpy(q, &re, 8); break;
        case FC_C64: { float f[2] = {(float)re, (float)im}; memcpy(q, f, 8); break; }
        case FC_C128: { double d[2] = {re, im}; memcpy(q, d, 16); break; }
        default: { int64_t k = (int64_t)lround(re * 4); memcpy(q, &k, es); break; }
        }
    }
    fc_array *a = fc_from_host(ctx, t, s, p);
    free(p);
    cr_assert_eq(fc_array_status(a), FC_OK, "%s", fc_errmsg(ctx));
    return a;
}

static fc_shape stack(int nb, const int64_t *batch, int64_t r, int64_t c) {
    fc_shape s = {.ndim = nb + 2};
    for (int d = 0; d < nb; d++) s.dim[d] = batch[d];
    s.dim[nb] = r;
    s.dim[nb + 1] = c;
    return s;
}

/* a's values as complex doubles (malloc'd), evaluated. */
static double complex *values(fc_array *a, const char *what) {
    size_t n = (size_t)fc_array_size(a);
    fc_dtype t = fc_array_dtype(a);
    unsigned char *buf = malloc(n * fc_dtype_size(t) + 1);
    double complex *v = malloc((n + 1) * sizeof *v);
    cr_assert(buf && v);
    memset(buf, 0xA5, n * fc_dtype_size(t) + 1);
    fc_status st = fc_read(a, buf, 0, (int64_t)n);
    cr_assert_eq(st, FC_OK, "%s: %s: %s", what, fc_strerror(st), fc_errmsg(fc_array_ctx(a)));
    for (size_t i = 0; i < n; i++)
        v[i] = complex_of(tv_value_at(buf, t, i, 0),
                     fcg_is_complex(t) ? tv_value_at(buf, t, i, 1) : 0.0);
    free(buf);
    return v;
}

/* Destroys a host context whose scopes are all closed: no node may outlive them. */
static void destroy_checked(fc_ctx *ctx) {
    cr_expect_eq(ctx->live_nodes, 0, "%zu nodes outlived their scopes", ctx->live_nodes);
    fc_ctx_destroy(ctx);
}

static double eps_of(fc_dtype t) { return t == FC_F32 || t == FC_C64 ? 0x1p-23 : 0x1p-52; }

/* |x - y| <= tol max(|y|, 1) elementwise over n values; the count that are not. */
static size_t mismatches(const double complex *x, const double complex *y, size_t n, double tol,
                         const char *what) {
    double big = 1.0;
    for (size_t i = 0; i < n; i++)
        if (isfinite(creal(y[i])) && isfinite(cimag(y[i]))) big = fmax(big, cabs(y[i]));
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        bool ok = true; /* part by part: NaN matches NaN, an infinity itself (an f32 det of a
                           large matrix overflows on both sides) */
        for (int q = 0; q < 2; q++) {
            double xv = q ? cimag(x[i]) : creal(x[i]), yv = q ? cimag(y[i]) : creal(y[i]);
            if (isnan(xv) || isnan(yv) || isinf(xv) || isinf(yv))
                ok = ok && ((isnan(xv) && isnan(yv)) || xv == yv);
            else
                ok = ok && fabs(xv - yv) <= tol * big;
        }
        if (ok) continue;
        if (!bad)
            cr_log_error("%s: element %zu: %.10g%+.10gi, want %.10g%+.10gi (tolerance %.3g)",
                         what, i, creal(x[i]), cimag(x[i]), creal(y[i]), cimag(y[i]), tol * big);
        bad++;
    }
    return bad;
}

static const fc_dtype dtypes[] = {FC_F32, FC_F64, FC_C64, FC_C128};
#define NDT 4

/* ---- host: invariants -------------------------------------------------------------------- */

/* solve's residual, inv's product with a, cholesky's L L^H and det against the product of
 * eigen-free identities: det(a) det(inv(a)) == 1, slogdet's sign times exp(logdet) == det. */
Test(linalg, invariants_on_the_host) {
    fc_ctx *ctx = tu_host_ctx();
    for (int di = 0; di < NDT; di++) {
        fc_dtype t = dtypes[di];
        bool c = fcg_is_complex(t);
        double tol = 64 * 8 * eps_of(t);
        fc_scope *s = fc_scope_open(ctx);
        int64_t batch[2] = {2, 3}, n = 6;
        double complex *wv = matrices(WELL, 6, n, c), *sv = matrices(SPD, 6, n, c);
        fc_array *a = upload(ctx, wv, t, stack(2, batch, n, n));
        fc_array *p = upload(ctx, sv, t, stack(2, batch, n, n));
        fc_array *b = upload(ctx, wv, t, stack(2, batch, n, 2));
        char what[64];
        snprintf(what, sizeof what, "%s solve residual", fc_dtype_name(t));
        double complex *r = values(fc_sub(fc_matmul(a, fc_linalg_solve(a, b)), b), what);
        double complex *z = calloc(6 * (size_t)n * 2, sizeof *z);
        cr_expect_eq(mismatches(r, z, 6 * (size_t)n * 2, tol, what), 0);
        free(r);
        snprintf(what, sizeof what, "%s inv(a) @ a", fc_dtype_name(t));
        fc_array *eye = fc_broadcast_to(fc_eye(ctx, t, n, n, 0), fc_array_shape(a));
        double complex *ia = values(fc_matmul(fc_linalg_inv(a), a), what);
        double complex *ev = values(eye, what);
        cr_expect_eq(mismatches(ia, ev, 6 * (size_t)(n * n), tol, what), 0);
        free(ia);
        /* cholesky: L L^H == p, L lower with a real positive diagonal; U^H U == p */
        fc_array *l = fc_linalg_cholesky(p, false), *u = fc_linalg_cholesky(p, true);
        fc_axes sw = FC_AXES(0, 1, 3, 2);
        fc_array *lh = fc_permute(c ? fc_conj(l) : l, sw);
        double complex *llh = values(fc_matmul(l, lh), what), *pv = values(p, what);
        snprintf(what, sizeof what, "%s L L^H", fc_dtype_name(t));
        cr_expect_eq(mismatches(llh, pv, 6 * (size_t)(n * n), tol, what), 0);
        double complex *lv = values(l, what), *uv = values(u, what);
        for (int64_t q = 0; q < 6; q++)
            for (int64_t i = 0; i < n; i++)
                for (int64_t j = 0; j < n; j++) {
                    double complex x = lv[(q * n + i) * n + j];
                    if (j > i) cr_expect(x == 0.0, "L[%lld][%lld] = %g", (long long)i,
                                         (long long)j, creal(x));
                    if (j == i) cr_expect(cimag(x) == 0.0 && creal(x) > 0.0);
                    /* U is L's conjugate transpose */
                    cr_expect(uv[(q * n + j) * n + i] == conj(x));
                }
        free(llh);
        free(lv);
        free(uv);
        /* det(a) * det(inv(a)) == 1; sign * exp(logdet) == det */
        snprintf(what, sizeof what, "%s det", fc_dtype_name(t));
        double complex *dd = values(fc_mul(fc_linalg_det(a), fc_linalg_det(fc_linalg_inv(a))), what);
        double complex ones[6] = {1, 1, 1, 1, 1, 1};
        cr_expect_eq(mismatches(dd, ones, 6, tol, what), 0);
        fc_array *sign, *logdet;
        cr_assert_eq(fc_linalg_slogdet(a, &sign, &logdet), FC_OK);
        cr_expect_eq(fc_array_dtype(sign), t);
        cr_expect_eq(fc_array_dtype(logdet), c ? (t == FC_C64 ? FC_F32 : FC_F64) : t);
        cr_expect_eq(fc_array_ndim(sign), 2);
        double complex *d1 = values(fc_linalg_det(a), what);
        double complex *d2 = values(fc_mul(sign, fc_exp(logdet)), what);
        cr_expect_eq(mismatches(d2, d1, 6, 0, what), 0); /* the same computation */
        double complex *sg = values(sign, what);
        for (int q = 0; q < 6; q++) cr_expect(fabs(cabs(sg[q]) - 1.0) < tol, "|sign| %g", cabs(sg[q]));
        free(d1);
        free(d2);
        free(sg);
        free(dd);
        free(z);
        free(ev);
        free(pv);
        free(wv);
        free(sv);
        fc_scope_close(s);
    }
    destroy_checked(ctx);
}

/* ---- errors ----------------------------------------------------------------------------- */

/* A singular matrix in a stack: the evaluation fails with FC_ERR_LINALG naming the function
 * and the matrix, no array gains a value, and the context goes on working (evaluating the
 * same program over regular data works). */
static void singular_in_a_stack(fc_ctx *ctx) {
    fc_scope *s = fc_scope_open(ctx);
    int64_t n = 4, batch[1] = {3};
    double complex *v = matrices(WELL, 3, n, false), *sing = matrices(SINGULAR, 1, n, false);
    memcpy(v + n * n, sing, sizeof *v * (size_t)(n * n)); /* matrix [1] is singular */
    fc_array *a = upload(ctx, v, FC_F64, stack(1, batch, n, n));
    fc_array *b = upload(ctx, v, FC_F64, stack(1, batch, n, 1));
    struct {
        fc_array *x;
        const char *name;
    } cases[] = {{fc_linalg_solve(a, b), "solve"}, {fc_linalg_inv(a), "inv"}};
    for (int i = 0; i < 2; i++) {
        fc_array *x = cases[i].x;
        cr_assert_eq(fc_array_status(x), FC_OK);
        double out[64];
        fc_status st = fc_read(x, out, 0, 1);
        cr_expect_eq(st, FC_ERR_LINALG, "%s: %s", cases[i].name, fc_strerror(st));
        const char *msg = fc_errmsg(ctx);
        cr_expect(strstr(msg, cases[i].name) && strstr(msg, "Singular matrix") &&
                      strstr(msg, "matrix [1] of the stack") && strstr(msg, "[3, 4, 4]"),
                  "message: %s", msg);
        cr_expect_str_eq(fc_strerror(FC_ERR_LINALG),
                         "linear algebra error (singular or not positive definite matrix, not "
                         "a square stack)");
    }
    /* det of the same stack is no error: 0 for the singular matrix */
    double d[3];
    cr_expect_eq(fc_read(fc_linalg_det(a), d, 0, 3), FC_OK, "%s", fc_errmsg(ctx));
    cr_expect(d[1] == 0.0 && d[0] != 0.0 && d[2] != 0.0, "%g %g %g", d[0], d[1], d[2]);
    /* not positive definite, in a stack */
    double complex *p = matrices(SPD, 2, n, true), *ind = matrices(INDEFINITE, 1, n, true);
    memcpy(p + n * n, ind, sizeof *p * (size_t)(n * n));
    fc_array *l = fc_linalg_cholesky(upload(ctx, p, FC_C64, stack(1, (int64_t[]){2}, n, n)), false);
    double out[64];
    cr_expect_eq(fc_read(l, out, 0, 1), FC_ERR_LINALG);
    cr_expect(strstr(fc_errmsg(ctx), "cholesky: Matrix is not positive definite") &&
                  strstr(fc_errmsg(ctx), "matrix [1] of the stack") &&
                  strstr(fc_errmsg(ctx), "order 4"),
              "message: %s", fc_errmsg(ctx));
    /* the context still works: the regular matrices alone */
    fc_array *ok = fc_linalg_solve(fcg_slice_axis(a, 0, 0, 1, 1), fcg_slice_axis(b, 0, 0, 1, 1));
    cr_expect_eq(fc_read(ok, out, 0, 4), FC_OK, "%s", fc_errmsg(ctx));
    free(v);
    free(sing);
    free(p);
    free(ind);
    fc_scope_close(s);
}

Test(linalg, errors_at_evaluation_on_the_host) {
    fc_ctx *ctx = tu_host_ctx();
    singular_in_a_stack(ctx);
    destroy_checked(ctx);
}

Test(linalg, errors_at_construction) {
    fc_ctx *ctx = tu_host_ctx();
    fc_scope *s = fc_scope_open(ctx);
    fc_array *v = fc_ones(ctx, FC_F32, FC_SHAPE(3)), *r = fc_ones(ctx, FC_F32, FC_SHAPE(2, 3));
    fc_array *h = fc_ones(ctx, FC_F16, FC_SHAPE(2, 2)), *m = fc_ones(ctx, FC_F32, FC_SHAPE(3, 3));
    struct {
        fc_array *x;
        fc_status st;
        const char *says;
    } cases[] = {
        {fc_linalg_inv(v), FC_ERR_LINALG, "inv: 1-dimensional array given"},
        {fc_linalg_det(r), FC_ERR_LINALG, "det: last 2 dimensions of the array must be square"},
        {fc_linalg_cholesky(r, true), FC_ERR_LINALG, "cholesky: last 2 dimensions"},
        {fc_linalg_solve(r, v), FC_ERR_LINALG, "solve: last 2 dimensions"},
        {fc_linalg_solve(m, fc_ones(ctx, FC_F32, FC_SHAPE(4))), FC_ERR_SHAPE, "solve: b [4]"},
        {fc_linalg_solve(m, fc_ones(ctx, FC_F32, FC_SHAPE(2, 3, 3))), FC_OK, ""},
        {fc_linalg_solve(fc_ones(ctx, FC_F32, FC_SHAPE(2, 3, 3)), fc_ones(ctx, FC_F32,
                                                                          FC_SHAPE(3, 3, 1))),
         FC_ERR_SHAPE, "do not broadcast"},
        {fc_linalg_det(h), FC_ERR_DTYPE, "det: array type f16 is unsupported in linalg"},
        {fc_linalg_solve(m, fc_f64(ctx, 1.0)), FC_ERR_SHAPE, "solve"},
        {fc_linalg_inv(fc_linalg_inv(v)), FC_ERR_LINALG, "inv: 1-dimensional"}, /* poison on */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        cr_expect_eq(fc_array_status(cases[i].x), cases[i].st, "case %zu: %s", i,
                     fc_array_errmsg(cases[i].x));
        if (cases[i].st != FC_OK)
            cr_expect(strstr(fc_array_errmsg(cases[i].x), cases[i].says), "case %zu: '%s'", i,
                      fc_array_errmsg(cases[i].x));
    }
    /* slogdet: both outputs hold the poison; NULL outputs are skipped; NULL a */
    fc_array *sign = NULL, *logdet = NULL;
    cr_expect_eq(fc_linalg_slogdet(r, &sign, &logdet), FC_ERR_LINALG);
    cr_expect_eq(fc_array_status(sign), FC_ERR_LINALG);
    cr_expect_eq(fc_array_status(logdet), FC_ERR_LINALG);
    cr_expect(strstr(fc_array_errmsg(logdet), "slogdet"));
    cr_expect_eq(fc_linalg_slogdet(m, NULL, &logdet), FC_OK);
    cr_expect_eq(fc_array_dtype(logdet), FC_F32);
    cr_expect_eq(fc_linalg_slogdet(NULL, &sign, &logdet), FC_ERR_NULL);
    /* dtypes: integers compute in f64, f32 with f64 in f64, c64 alone stays c64 */
    cr_expect_eq(fc_array_dtype(fc_linalg_inv(fc_ones(ctx, FC_I8, FC_SHAPE(2, 2)))), FC_F64);
    cr_expect_eq(fc_array_dtype(fc_linalg_solve(m, fc_ones(ctx, FC_F64, FC_SHAPE(3)))), FC_F64);
    cr_expect_eq(fc_array_dtype(fc_linalg_det(fc_ones(ctx, FC_C64, FC_SHAPE(2, 2)))), FC_C64);
    cr_expect_eq(fc_array_dtype(fc_linalg_solve(m, fc_ones(ctx, FC_C64, FC_SHAPE(3)))), FC_C64);
    fc_scope_close(s);
    destroy_checked(ctx);
}

/* ---- .fc -------------------------------------------------------------------------------- */

static fc_program *parse(fc_ctx *ctx, const char *text) {
    fc_program *p = NULL;
    cr_assert_eq(fc_program_parse(ctx, text, strlen(text), "t.fc", &p), FC_OK, "%s",
                 fc_errmsg(ctx));
    return p;
}

/* Prints the n outputs o, checks that the text holds every string of `says` (NULL-ended),
 * and that it parses back to the same graph (structural hash). */
static void round_trip(fc_ctx *ctx, fc_array **o, int n, const char *const *says) {
    char *printed = NULL;
    cr_assert_eq(fc_program_print(ctx, o, n, NULL, &printed), FC_OK, "%s", fc_errmsg(ctx));
    for (int i = 0; says[i]; i++) cr_expect(strstr(printed, says[i]), "no %s in\n%s", says[i], printed);
    fc_program *back = parse(ctx, printed);
    fc_array *o2[16];
    cr_assert_leq(n, 16);
    cr_assert_eq(fc_program_build(back, NULL, o2), FC_OK, "%s\n%s", fc_errmsg(ctx), printed);
    fc_hash h1, h2;
    cr_assert_eq(fc_graph_hash(o, n, &h1), FC_OK);
    cr_assert_eq(fc_graph_hash(o2, n, &h2), FC_OK);
    cr_expect(h1.lo == h2.lo && h1.hi == h2.hi, "the printed program differs:\n%s", printed);
    fc_free(ctx, printed);
    fc_program_destroy(back);
}

/* The program `text` built over the inputs in: each of its n outputs is the node c of the
 * C call, and the printed program holds every string of `says` and parses back to the same
 * graph. */
static void spelled(fc_ctx *ctx, const char *text, fc_array **in, fc_array **c, int n,
                    const char *const *says) {
    fc_program *prog = parse(ctx, text);
    fc_array *o[16];
    cr_assert_leq(n, 16);
    cr_assert_eq(fc_program_build(prog, in, o), FC_OK, "%s", fc_errmsg(ctx));
    for (int k = 0; k < n; k++) cr_expect_eq(o[k], c[k], "output %d is not the C call's node", k);
    round_trip(ctx, o, n, says);
    fc_program_destroy(prog);
}

/* Programs that fail to build: each with its status, line, column and message. */
typedef struct bad_fc {
    const char *text;
    fc_status st;
    int line, col;
    const char *says;
} bad_fc;

static void check_bad_fcs(const bad_fc *b, size_t n) {
    for (size_t i = 0; i < n; i++)
        tu_check_bad_fc(b[i].text, strlen(b[i].text), b[i].st, b[i].line, b[i].col, b[i].says);
}

/* The .fc spellings build the very nodes of the C calls, and a printed program parses back
 * to the same graph (structural hash), the packed slogdet and inv's identity included. */
Test(linalg, fc_spellings_and_round_trip) {
    fc_ctx *ctx = tu_host_ctx();
    fc_scope *s = fc_scope_open(ctx);
    const char *text = "a = input f32 [2, 4, 4]\n"
                       "b = input f32 [4, 3]\n"
                       "v = input i32 [4]\n"
                       "x = linalg.solve(a, b)\n"
                       "y = linalg.solve(a, v)\n"
                       "i = linalg.inv(a)\n"
                       "d = linalg.det(a)\n"
                       "sign, logdet = linalg.slogdet(a)\n"
                       "l = linalg.cholesky(a)\n"
                       "u = linalg.cholesky(a, upper=True)\n"
                       "p = linalg.matrix_power(a, -3)\n"
                       "out x, y, i, d, sign, logdet, l, u, p\n";
    fc_array *in[3] = {fc_zeros(ctx, FC_F32, FC_SHAPE(2, 4, 4)),
                       fc_zeros(ctx, FC_F32, FC_SHAPE(4, 3)), fc_zeros(ctx, FC_I32, FC_SHAPE(4))};
    fc_array *sign, *logdet;
    cr_assert_eq(fc_linalg_slogdet(in[0], &sign, &logdet), FC_OK);
    fc_array *c[9] = {fc_linalg_solve(in[0], in[1]), fc_linalg_solve(in[0], in[2]),
                      fc_linalg_inv(in[0]), fc_linalg_det(in[0]), sign, logdet,
                      fc_linalg_cholesky(in[0], false), fc_linalg_cholesky(in[0], true),
                      fc_matrix_power(in[0], -3)};
    cr_expect_eq(fc_array_dtype(c[1]), FC_F64);
    cr_expect_eq(fc_array_ndim(c[1]), 2);
    spelled(ctx, text, in, c, 9, (const char *const[]){"linalg.inv(", "linalg.slogdet_packed(",
                                                        "linalg.cholesky(", "linalg.solve(", NULL});
    fc_scope_close(s);
    fc_ctx_destroy(ctx);
}

Test(linalg, fc_errors) {
    static const bad_fc bad[] = {
        {"a = input f32 [3, 3]\ny = solve(a, a)\nout y\n", FC_ERR_PARSE, 2, 5,
         "write linalg.solve"},
        {"a = input f32 [3, 2]\ny = linalg.inv(a)\nout y\n", FC_ERR_LINALG, 2, 12,
         "must be square"},
        {"a = input f32 [3, 3]\ny = linalg.cholesky(a, True)\nout y\n", FC_ERR_PARSE, 2, 24,
         "at most 1 positional"},
        {"a = input f32 [3, 3]\ns, l, x = linalg.slogdet(a)\nout s\n", FC_ERR_INVALID, 2, 18,
         "cannot unpack a list of 2 into 3"},
        {"a = input f32 [3, 3]\nq, r = linalg.qr(a, mode=\"raw\")\nout q\n", FC_ERR_INVALID, 2,
         26, "qr mode must be"},
        {"a = input f32 [3, 3]\nw = linalg.eigvalsh(a, \"X\")\nout w\n", FC_ERR_INVALID, 2, 24,
         "UPLO must be"},
        {"a = input f32 [3, 3]\nu, s, v = linalg.svd(a, 2)\nout u\n", FC_ERR_INVALID, 2, 25,
         "full_matrices must be"},
        {"a = input f32 [3, 3]\np = linalg.pinv(a, 0.1, rtol=0.1)\nout p\n", FC_ERR_INVALID, 2,
         30, "can't be both set"},
        {"a = input f32 [3, 3]\nu, s = linalg.svd(a)\nout u\n", FC_ERR_INVALID, 2, 15,
         "cannot unpack a list of 3 into 2"},
        {"a = input f32 [2, 3, 3]\nx, r, k, s = linalg.lstsq(a, a)\nout x\n", FC_ERR_LINALG, 2,
         21, "3-dimensional array given"},
    };
    check_bad_fcs(bad, sizeof bad / sizeof *bad);
}

/* ---- the GPU against the host ------------------------------------------------------------ */

static fc_ctx *hc, *gc;

static void gpu_setup(void) { tu_gpu_pair_open(&hc, &gc); }
static void gpu_teardown(void) { tu_gpu_pair_close(&hc, &gc); }

TestSuite(gpu_linalg, .init = gpu_setup, .fini = gpu_teardown);

#define SKIP_WITHOUT_GPU(name) TU_SKIP_WITHOUT_GPU(gc, "gpu_linalg", name)

typedef fc_array *(*build_fn)(fc_array *a, fc_array *b);

static fc_array *b_solve(fc_array *a, fc_array *b) { return fc_linalg_solve(a, b); }
static fc_array *b_inv(fc_array *a, fc_array *b) { (void)b; return fc_linalg_inv(a); }
static fc_array *b_det(fc_array *a, fc_array *b) { (void)b; return fc_linalg_det(a); }
static fc_array *b_sign(fc_array *a, fc_array *b) {
    (void)b;
    fc_array *s = NULL;
    fc_linalg_slogdet(a, &s, NULL);
    return s;
}
static fc_array *b_logdet(fc_array *a, fc_array *b) {
    (void)b;
    fc_array *l = NULL;
    fc_linalg_slogdet(a, NULL, &l);
    return l;
}
static fc_array *b_chol(fc_array *a, fc_array *b) { (void)b; return fc_linalg_cholesky(a, false); }
static fc_array *b_chol_upper(fc_array *a, fc_array *b) {
    (void)b;
    return fc_linalg_cholesky(a, true);
}
/* fused neighbours: the operands computed by kernels, the result consumed by one */
static fc_array *b_fused(fc_array *a, fc_array *b) {
    fc_array *x = fc_linalg_solve(fc_mul(a, fc_f64(fc_array_ctx(a), 2.0)), fc_sin(b));
    return fc_add(fc_mul(x, fc_f64(fc_array_ctx(a), 3.0)), fc_f64(fc_array_ctx(a), 1.0));
}

/* op(a, b) in both contexts over the same data: a of shape as (matrices of kind k), b of
 * shape bs (RANDOM values); the GPU within 256 n eps max(|host|, 1). */
static void compare_shapes(build_fn op, kind k, fc_dtype t, fc_shape as, fc_shape bs,
                           const char *what) {
    int64_t n = as.dim[as.ndim - 1], per = n > 0 ? n * n : 1;
    bool c = fcg_is_complex(t);
    double complex *av = matrices(k, (int64_t)(tv_numel(as) / (size_t)per), n, c);
    double complex *bv = matrices(RANDOM, (int64_t)(tv_numel(bs) / (size_t)per) + 1, n, c);
    fc_scope *sh = fc_scope_open(hc), *sg = fc_scope_open(gc);
    fc_array *h = op(upload(hc, av, t, as), upload(hc, bv, t, bs));
    fc_array *g = op(upload(gc, av, t, as), upload(gc, bv, t, bs));
    cr_assert_eq(fc_array_status(h), FC_OK, "%s: %s", what, fc_array_errmsg(h));
    cr_assert_eq(fc_array_dtype(g), fc_array_dtype(h));
    double complex *hv = values(h, what), *gv = values(g, what);
    size_t total = (size_t)fc_array_size(h);
    double tol = 256 * (double)(n > 0 ? n : 1) * eps_of(t);
    cr_expect_eq(mismatches(gv, hv, total, tol, what), 0, "%s: the GPU differs from the host",
                 what);
    free(hv);
    free(gv);
    free(av);
    free(bv);
    fc_scope_close(sg);
    fc_scope_close(sh);
}

/* op(a, b) over a stack of n x n matrices and b (nrhs columns, or one vector), as
 * compare_shapes. */
static void compare(build_fn op, kind k, fc_dtype t, int nb, const int64_t *batch, int64_t n,
                    int64_t nrhs, bool vector, const char *what) {
    fc_shape as = stack(nb, batch, n, n);
    fc_shape bs = vector ? (fc_shape){.ndim = 1, .dim = {n}} : stack(nb, batch, n, nrhs);
    compare_shapes(op, k, t, as, bs, what);
}

Test(gpu_linalg, every_op_dtype_and_batch) {
    SKIP_WITHOUT_GPU("every_op_dtype_and_batch");
    static const struct {
        build_fn fn;
        const char *name;
        kind k;
    } ops[] = {{b_solve, "solve", WELL},       {b_inv, "inv", WELL},
               {b_det, "det", WELL},           {b_sign, "slogdet sign", WELL},
               {b_logdet, "slogdet logdet", WELL}, {b_chol, "cholesky", SPD},
               {b_chol_upper, "cholesky upper", SPD}, {b_det, "det singular", SINGULAR},
               {b_sign, "slogdet sign singular", SINGULAR}, {b_fused, "fused solve", WELL}};
    static const struct {
        int nb;
        int64_t batch[3], n, k;
    } shapes[] = {{0, {0}, 1, 1},      {0, {0}, 5, 1},     {0, {0}, 5, 3},
                  {1, {4}, 3, 2},      {2, {2, 3}, 4, 1},  {3, {2, 1, 2}, 6, 5},
                  {0, {0}, 64, 7},     {1, {2}, 130, 3},   {0, {0}, 0, 2},
                  {1, {0}, 3, 3},      {1, {3}, 0, 0}};
    for (size_t o = 0; o < sizeof ops / sizeof *ops; o++)
        for (int di = 0; di < NDT; di++)
            for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++) {
                char what[160];
                snprintf(what, sizeof what, "%s %s n=%lld k=%lld nb=%d", ops[o].name,
                         fc_dtype_name(dtypes[di]), (long long)shapes[si].n,
                         (long long)shapes[si].k, shapes[si].nb);
                compare(ops[o].fn, ops[o].k, dtypes[di], shapes[si].nb, shapes[si].batch,
                        shapes[si].n, shapes[si].k, false, what);
            }
    /* a vector b, against one matrix and against a stack; integer inputs (f64) */
    compare(b_solve, WELL, FC_C64, 0, NULL, 7, 1, true, "solve vector");
    compare(b_solve, WELL, FC_F32, 2, (int64_t[]){3, 2}, 7, 1, true, "solve stacked vector");
    compare(b_inv, WELL, FC_I32, 1, (int64_t[]){2}, 3, 1, false, "inv of integers");
    compare(b_det, WELL, FC_I64, 0, NULL, 4, 1, false, "det of integers");
}

/* Singular and non-positive-definite matrices found by cuSOLVER on the device: the same
 * errors and messages as the host's, and the context goes on. The 3 x 3 is
 * tests/gen_linalg.py's: LU of A meets an exactly zero pivot (it eliminates with 1/2), LU of
 * A^T does not (1/3, 2/3), so a factorisation of the row-major buffer as it lies (A^T) would
 * evaluate it. */
Test(gpu_linalg, errors_on_the_gpu) {
    SKIP_WITHOUT_GPU("errors_on_the_gpu");
    singular_in_a_stack(gc);
    /* the host's message and the GPU's agree */
    static const double complex sv[9] = {1, 2, 3, 2, 4, 6, 1, 0, 1};
    for (int di = 0; di < NDT; di++) {
        fc_array *h = fc_linalg_inv(upload(hc, sv, dtypes[di], FC_SHAPE(3, 3)));
        fc_array *g = fc_linalg_inv(upload(gc, sv, dtypes[di], FC_SHAPE(3, 3)));
        double out[32];
        cr_expect_eq(fc_read(h, out, 0, 1), FC_ERR_LINALG);
        cr_expect_eq(fc_read(g, out, 0, 1), FC_ERR_LINALG, "%s", fc_errmsg(gc));
        cr_expect(strstr(fc_errmsg(gc), "inv: Singular matrix"), "%s", fc_errmsg(gc));
        fc_release(h);
        fc_release(g);
    }
}

/* The batched calls made so far in this process, by routine (backend/cuda_batched.c). */
static fcr_batched_counts batched_counts(void) {
    fcr_batched_counts c;
    fcr_batched_counts_get(&c);
    return c;
}

typedef fc_array *(*replay_fn)(fc_array *a, fc_array *p);

/* build(a, p) on the GPU and build(ah, ph) on the host, three times: a new graph over the same
 * arrays each time, so that the cached plan runs again, the third time after the next
 * `total` values of v (real parts, from v + total) are written into a and ah. Each run
 * within tol of the host (its output's values); the device memory in use after a later run
 * no more than after the first (the workspaces went back to the pool); calls[rep]: the
 * batched calls each GPU run made. */
static void replay(replay_fn build, fc_array *a, fc_array *ah, fc_array *p, fc_array *ph,
                   const double complex *v, size_t total, double tol, fcr_batched_counts *calls) {
    fc_memory_stats m0, m1;
    for (int rep = 0; rep < 3; rep++) {
        if (rep == 2) { /* new values into the same arrays: the plan replays */
            double *w = malloc(sizeof(double) * total);
            cr_assert_not_null(w);
            for (size_t i = 0; i < total; i++) w[i] = creal(v[total + i]);
            cr_assert_eq(fc_write(a, w, 0, (int64_t)total, NULL), FC_OK, "%s", fc_errmsg(gc));
            cr_assert_eq(fc_write(ah, w, 0, (int64_t)total, NULL), FC_OK);
            free(w);
        }
        fc_scope *inner = fc_scope_open(gc), *hs = fc_scope_open(hc);
        fc_array *g = build(a, p), *h = build(ah, ph);
        fcr_batched_counts c0 = batched_counts();
        double complex *gv = values(g, "cached"), *hv = values(h, "cached");
        fcr_batched_counts c1 = batched_counts();
        calls[rep] = (fcr_batched_counts){c1.lu - c0.lu, c1.cholesky - c0.cholesky,
                                          c1.eigh - c0.eigh, c1.eigh_loop - c0.eigh_loop};
        cr_expect_eq(mismatches(gv, hv, (size_t)fc_array_size(h), tol, "cached"), 0, "run %d",
                     rep);
        free(gv);
        free(hv);
        fc_scope_close(hs);
        fc_scope_close(inner);
        cr_assert_eq(fc_memory_stats_get(gc, rep ? &m1 : &m0), FC_OK);
        if (rep)
            cr_expect_leq(m1.in_use, m0.in_use, "run %d: %zu bytes of workspace left in use",
                          rep, m1.in_use - m0.in_use);
    }
}

static fc_array *inv_plus_det(fc_array *a, fc_array *p) {
    (void)p;
    return fc_add(fc_linalg_inv(a), fc_linalg_det(a));
}

/* A cached plan with a solver call runs again over new data (the entry's copy of the nodes);
 * the workspaces are freed: evaluations after the first leave device memory in use where the
 * first left it (the first also uploads a, which fc_from_host leaves on the host). One matrix:
 * the loop, no batched call. */
Test(gpu_linalg, cached_plan_and_memory) {
    SKIP_WITHOUT_GPU("cached_plan_and_memory");
    unsetenv("FUSEC_LINALG_BATCHED");
    int64_t n = 48;
    fc_scope *s = fc_scope_open(gc);
    double complex *v = matrices(WELL, 2, n, false);
    fc_array *a = upload(gc, v, FC_F64, FC_SHAPE(n, n));
    fc_array *ah = upload(hc, v, FC_F64, FC_SHAPE(n, n));
    fcr_batched_counts calls[3];
    replay(inv_plus_det, a, ah, NULL, NULL, v, (size_t)(n * n), 256 * (double)n * 0x1p-52, calls);
    for (int rep = 0; rep < 3; rep++) cr_expect_eq(calls[rep].lu, 0, "run %d", rep);
    free(v);
    fc_scope_close(s);
}

/* ---- qr, eigh, eigvalsh: invariants (their factors' signs and phases are not unique) ---- */

/* x (count matrices r x c) times y (count matrices c x d): xy (malloc'd); y^H when yh. */
static double complex *mat_mul(const double complex *x, const double complex *y, int64_t count,
                               int64_t r, int64_t c, int64_t d, bool xh) {
    double complex *z = calloc((size_t)(count * r * d + 1), sizeof *z);
    cr_assert_not_null(z);
    for (int64_t q = 0; q < count; q++)
        for (int64_t i = 0; i < r; i++)
            for (int64_t j = 0; j < d; j++) {
                double complex s = 0;
                for (int64_t l = 0; l < c; l++)
                    s += (xh ? conj(x[q * r * c + l * r + i]) : x[q * r * c + i * c + l]) *
                         y[q * c * d + l * d + j];
                z[q * r * d + i * d + j] = s;
            }
    return z;
}

/* Checks a == q r, q^H q == I, r upper triangular with a real diagonal (q: m x qc, r: rr x n,
 * count matrices). */
static void check_qr(const double complex *a, const double complex *q, const double complex *r,
                     int64_t count, int64_t m, int64_t n, int64_t qc, int64_t rr, double tol,
                     const char *what) {
    int64_t kk = qc < rr ? qc : rr; /* r's rows that q multiplies */
    double complex *rk = calloc((size_t)(count * qc * n + 1), sizeof *rk);
    cr_assert_not_null(rk);
    for (int64_t b = 0; b < count; b++)
        for (int64_t i = 0; i < kk; i++)
            for (int64_t j = 0; j < n; j++) rk[(b * qc + i) * n + j] = r[(b * rr + i) * n + j];
    double complex *qr = mat_mul(q, rk, count, m, qc, n, false);
    double complex *qhq = mat_mul(q, q, count, qc, m, qc, true);
    double complex *eye = calloc((size_t)(count * qc * qc + 1), sizeof *eye);
    cr_assert_not_null(eye);
    for (int64_t b = 0; b < count; b++)
        for (int64_t i = 0; i < qc; i++) eye[(b * qc + i) * qc + i] = 1.0;
    char w2[200];
    snprintf(w2, sizeof w2, "%s: q r == a", what);
    cr_expect_eq(mismatches(qr, a, (size_t)(count * m * n), tol, w2), 0, "%s", w2);
    snprintf(w2, sizeof w2, "%s: q^H q == I", what);
    cr_expect_eq(mismatches(qhq, eye, (size_t)(count * qc * qc), tol, w2), 0, "%s", w2);
    for (int64_t b = 0; b < count; b++)
        for (int64_t i = 0; i < rr; i++)
            for (int64_t j = 0; j <= i && j < n; j++) {
                double complex x = r[(b * rr + i) * n + j];
                cr_expect(j == i ? cimag(x) == 0.0 : x == 0.0, "%s: r[%lld][%lld] = %g%+gi", what,
                          (long long)i, (long long)j, creal(x), cimag(x));
            }
    free(rk);
    free(qr);
    free(qhq);
    free(eye);
}

/* Checks h v == v diag(w), v^H v == I, w ascending, for the Hermitian matrices of a's lower
 * (or upper) triangle (count matrices n x n). */
static void check_eigh(const double complex *a, const double complex *w, const double complex *v,
                       int64_t count, int64_t n, bool upper, double tol, const char *what) {
    double complex *h = malloc((size_t)(count * n * n + 1) * sizeof *h);
    double complex *vw = malloc((size_t)(count * n * n + 1) * sizeof *vw);
    double complex *eye = calloc((size_t)(count * n * n + 1), sizeof *eye);
    cr_assert(h && vw && eye);
    for (int64_t b = 0; b < count; b++)
        for (int64_t i = 0; i < n; i++) {
            eye[(b * n + i) * n + i] = 1.0;
            for (int64_t j = 0; j < n; j++) {
                const double complex *ab = a + b * n * n;
                bool lower_el = i > j;
                double complex x = i == j ? creal(ab[i * n + i])
                                   : lower_el != upper ? ab[i * n + j] : conj(ab[j * n + i]);
                h[(b * n + i) * n + j] = x;
                vw[(b * n + i) * n + j] = v[(b * n + i) * n + j] * w[b * n + j];
                if (j > 0 && i == 0)
                    cr_expect(creal(w[b * n + j - 1]) <= creal(w[b * n + j]), "%s: w not ascending",
                              what);
            }
        }
    double complex *hv = mat_mul(h, v, count, n, n, n, false), *vhv = mat_mul(v, v, count, n, n, n, true);
    char w2[200];
    snprintf(w2, sizeof w2, "%s: h v == v diag(w)", what);
    cr_expect_eq(mismatches(hv, vw, (size_t)(count * n * n), tol, w2), 0, "%s", w2);
    snprintf(w2, sizeof w2, "%s: v^H v == I", what);
    cr_expect_eq(mismatches(vhv, eye, (size_t)(count * n * n), tol, w2), 0, "%s", w2);
    free(h);
    free(vw);
    free(eye);
    free(hv);
    free(vhv);
}

static const struct {
    int nb;
    int64_t batch[2], m, n;
} qr_shapes[] = {{0, {0}, 4, 4},  {1, {3}, 5, 3}, {2, {2, 2}, 3, 5}, {0, {0}, 1, 1},
                 {0, {0}, 6, 1},  {1, {2}, 0, 3}, {1, {2}, 3, 0},    {1, {0}, 3, 3}};

/* qr in every mode, eigh (both triangles) and eigvalsh of a stack in ctx, checked by their
 * invariants; the host's own Q, R, w and V in *_out (NULL: not kept). */
static void qr_eigh_invariants(fc_ctx *ctx, fc_dtype t, double tol) {
    bool c = fcg_is_complex(t);
    for (size_t si = 0; si < sizeof qr_shapes / sizeof *qr_shapes; si++) {
        int64_t m = qr_shapes[si].m, n = qr_shapes[si].n, k = m < n ? m : n, count = 1;
        for (int d = 0; d < qr_shapes[si].nb; d++) count *= qr_shapes[si].batch[d];
        fc_scope *s = fc_scope_open(ctx);
        int64_t big = m > n ? m : n;
        double complex *av = matrices(RANDOM, count, big, c);
        /* the first m x n of each big x big matrix */
        for (int64_t b = 0; b < count; b++)
            for (int64_t i = 0; i < m; i++)
                for (int64_t j = 0; j < n; j++) av[(b * m + i) * n + j] = av[(b * big + i) * big + j];
        fc_array *a = upload(ctx, av, t, stack(qr_shapes[si].nb, qr_shapes[si].batch, m, n));
        for (int mode = 0; mode < 3; mode++) {
            char what[160];
            snprintf(what, sizeof what, "qr %s %s %lldx%lld batch %lld", fcg_qr_mode_names[mode],
                     fc_dtype_name(t), (long long)m, (long long)n, (long long)count);
            fc_array *q = NULL, *r = NULL;
            cr_assert_eq(fc_linalg_qr(a, (fc_qr_mode)mode, &q, &r), FC_OK, "%s: %s", what,
                         fc_errmsg(ctx));
            int64_t qc = mode == FC_QR_COMPLETE ? m : k, rr = mode == FC_QR_COMPLETE ? m : k;
            fc_shape rs = fc_array_shape(r);
            cr_expect(rs.dim[rs.ndim - 2] == rr && rs.dim[rs.ndim - 1] == n, "%s: r's shape", what);
            cr_expect_eq(fc_array_dtype(r), t);
            if (mode == FC_QR_R) {
                cr_expect_null(q, "%s: q in mode r", what);
                fc_array *q2 = NULL, *r2 = NULL;
                cr_assert_eq(fc_linalg_qr(a, FC_QR_REDUCED, &q2, &r2), FC_OK);
                double complex *rv = values(r, what), *r2v = values(r2, what);
                cr_expect_eq(mismatches(rv, r2v, (size_t)(count * k * n), 0, what), 0);
                free(rv);
                free(r2v);
                continue;
            }
            fc_shape qs = fc_array_shape(q);
            cr_expect(qs.dim[qs.ndim - 2] == m && qs.dim[qs.ndim - 1] == qc, "%s: q's shape", what);
            double complex *qv = values(q, what), *rv = values(r, what);
            check_qr(av, qv, rv, count, m, n, qc, rr, tol, what);
            free(qv);
            free(rv);
        }
        if (m == n)
            for (int upper = 0; upper < 2; upper++) {
                char what[160];
                snprintf(what, sizeof what, "eigh%s %s n=%lld batch %lld", upper ? " U" : "",
                         fc_dtype_name(t), (long long)n, (long long)count);
                fc_array *w = NULL, *v = NULL;
                cr_assert_eq(fc_linalg_eigh(a, upper, &w, &v), FC_OK, "%s", fc_errmsg(ctx));
                cr_expect_eq(fc_array_dtype(w), fcg_real_dtype(t));
                cr_expect_eq(fc_array_dtype(v), t);
                double complex *wv = values(w, what), *vv = values(v, what);
                check_eigh(av, wv, vv, count, n, upper, tol, what);
                double complex *ev = values(fc_linalg_eigvalsh(a, upper), what);
                cr_expect_eq(mismatches(ev, wv, (size_t)(count * n), tol, what), 0,
                             "%s: eigvalsh", what);
                free(wv);
                free(vv);
                free(ev);
            }
        free(av);
        fc_scope_close(s);
    }
}

Test(linalg, qr_and_eigh_invariants_on_the_host) {
    fc_ctx *ctx = tu_host_ctx();
    for (int di = 0; di < NDT; di++) qr_eigh_invariants(ctx, dtypes[di], 64 * 8 * eps_of(dtypes[di]));
    /* integers compute in f64; a known spectrum: [[2, 1], [1, 2]] has 1 and 3 */
    fc_array *w = fc_linalg_eigvalsh(fc_from_host(ctx, FC_I32, FC_SHAPE(2, 2),
                                                  (int32_t[]){2, 1, 1, 2}), false);
    cr_expect_eq(fc_array_dtype(w), FC_F64);
    double wv[2];
    cr_expect_eq(fc_read(w, wv, 0, 2), FC_OK);
    cr_expect(fabs(wv[0] - 1.0) < 1e-15 && fabs(wv[1] - 3.0) < 1e-15, "%g %g", wv[0], wv[1]);
    /* errors: qr of a vector, eigh of a non-square stack, an unknown mode, f16 */
    fc_array *q = NULL, *r = NULL, *v = NULL;
    cr_expect_eq(fc_linalg_qr(fc_ones(ctx, FC_F32, FC_SHAPE(3)), FC_QR_REDUCED, &q, &r),
                 FC_ERR_LINALG);
    cr_expect(strstr(fc_array_errmsg(r), "qr: 1-dimensional"), "%s", fc_array_errmsg(r));
    cr_expect_eq(fc_linalg_qr(fc_ones(ctx, FC_F32, FC_SHAPE(2, 3)), (fc_qr_mode)7, &q, &r),
                 FC_ERR_INVALID);
    cr_expect_eq(fc_linalg_eigh(fc_ones(ctx, FC_F32, FC_SHAPE(2, 3)), false, &w, &v),
                 FC_ERR_LINALG);
    cr_expect(strstr(fc_array_errmsg(v), "eigh: last 2 dimensions"), "%s", fc_array_errmsg(v));
    cr_expect_eq(fc_array_status(fc_linalg_eigvalsh(fc_ones(ctx, FC_F16, FC_SHAPE(2, 2)), true)),
                 FC_ERR_DTYPE);
    cr_expect_eq(fc_linalg_eigh(NULL, false, &w, &v), FC_ERR_NULL);
    cr_expect_eq(fc_linalg_qr(NULL, FC_QR_R, &q, &r), FC_ERR_NULL);
    cr_expect_null(q);
    fc_ctx_destroy(ctx);
}

/* The .fc spellings of qr, eigh, eigvalsh, svd, svdvals, lstsq, pinv and matrix_rank build
 * the C calls' nodes, and the printed programs (linalg.qr_packed, linalg.eigh_packed,
 * linalg.svd_packed) parse back to the same graphs. */
Test(linalg, qr_eigh_svd_fc_spellings_and_round_trip) {
    fc_ctx *ctx = tu_host_ctx();
    fc_scope *s = fc_scope_open(ctx);
    const char *text = "a = input c64 [2, 4, 3]\n"
                       "h = input f64 [3, 3]\n"
                       "q, r = linalg.qr(a)\n"
                       "qc, rc = linalg.qr(a, mode=\"complete\")\n"
                       "ro = linalg.qr(a, \"r\")\n"
                       "w, v = linalg.eigh(h)\n"
                       "wu, vu = linalg.eigh(h, UPLO=\"U\")\n"
                       "e = linalg.eigvalsh(h, \"U\")\n"
                       "out q, r, qc, rc, ro, w, v, wu, vu, e\n";
    fc_array *in[2] = {fc_zeros(ctx, FC_C64, FC_SHAPE(2, 4, 3)), fc_zeros(ctx, FC_F64, FC_SHAPE(3, 3))};
    fc_array *c[10];
    cr_assert_eq(fc_linalg_qr(in[0], FC_QR_REDUCED, &c[0], &c[1]), FC_OK);
    cr_assert_eq(fc_linalg_qr(in[0], FC_QR_COMPLETE, &c[2], &c[3]), FC_OK);
    cr_assert_eq(fc_linalg_qr(in[0], FC_QR_R, NULL, &c[4]), FC_OK);
    cr_assert_eq(fc_linalg_eigh(in[1], false, &c[5], &c[6]), FC_OK);
    cr_assert_eq(fc_linalg_eigh(in[1], true, &c[7], &c[8]), FC_OK);
    c[9] = fc_linalg_eigvalsh(in[1], true);
    spelled(ctx, text, in, c, 10, (const char *const[]){"linalg.qr_packed(", "mode=\"complete\"",
                                                         "linalg.eigh_packed(", "UPLO=\"U\"",
                                                         "linalg.eigvalsh(", NULL});
    /* svd, svdvals, lstsq, pinv and matrix_rank (linalg.svd_packed) */
    const char *svd_text = "a = input c64 [2, 4, 3]\n"
                       "w = input f64 [3, 5]\n"
                       "y = input f64 [3]\n"
                       "u, s, vh = linalg.svd(a)\n"
                       "ur, sr, vr = linalg.svd(a, full_matrices=False)\n"
                       "so = linalg.svd(a, compute_uv=False)\n"
                       "sv = linalg.svdvals(a)\n"
                       "x, res, rank, sl = linalg.lstsq(w, y, rcond=1e-3)\n"
                       "p = linalg.pinv(a)\n"
                       "ph = linalg.pinv(w, 0.5, hermitian=False)\n"
                       "pr = linalg.pinv(a, rtol=1e-6)\n"
                       "r = linalg.matrix_rank(a)\n"
                       "rt = linalg.matrix_rank(w, tol=0.25)\n"
                       "rr = linalg.matrix_rank(w, rtol=0.125)\n"
                       "out u, s, vh, ur, sr, vr, so, sv, x, res, rank, sl, p, ph, pr, r\n";
    fc_array *in2[3] = {fc_zeros(ctx, FC_C64, FC_SHAPE(2, 4, 3)), fc_zeros(ctx, FC_F64, FC_SHAPE(3, 5)),
                       fc_zeros(ctx, FC_F64, FC_SHAPE(3))};
    fc_array *c2[16];
    double rc = 1e-3, half = 0.5, rt = 1e-6;
    cr_assert_eq(fc_linalg_svd(in2[0], true, true, &c2[0], &c2[1], &c2[2]), FC_OK);
    cr_assert_eq(fc_linalg_svd(in2[0], false, true, &c2[3], &c2[4], &c2[5]), FC_OK);
    cr_assert_eq(fc_linalg_svd(in2[0], true, false, NULL, &c2[6], NULL), FC_OK);
    c2[7] = fc_linalg_svdvals(in2[0]);
    cr_assert_eq(fc_linalg_lstsq(in2[1], in2[2], &rc, &c2[8], &c2[9], &c2[10], &c2[11]), FC_OK);
    c2[12] = fc_linalg_pinv(in2[0], NULL, false);
    c2[13] = fc_linalg_pinv(in2[1], &half, false);
    c2[14] = fc_linalg_pinv(in2[0], &rt, false);
    c2[15] = fc_linalg_matrix_rank(in2[0], NULL, NULL, false);
    cr_expect_eq(c2[6], c2[7], "svd(compute_uv=False) is svdvals");
    spelled(ctx, svd_text, in2, c2, 16, (const char *const[]){"linalg.svd_packed(", "full_matrices=False",
                                                         "linalg.svdvals(", NULL});
    fc_scope_close(s);
    fc_ctx_destroy(ctx);
}

/* The GPU's qr, eigh and eigvalsh by the same invariants, every dtype, batches, empty stacks
 * and n up to 130; eigenvalues against the host's (they are unique). */
Test(gpu_linalg, qr_and_eigh_against_the_host) {
    SKIP_WITHOUT_GPU("qr_and_eigh_against_the_host");
    for (int di = 0; di < NDT; di++) {
        fc_dtype t = dtypes[di];
        qr_eigh_invariants(gc, t, 256 * 8 * eps_of(t));
        bool c = fcg_is_complex(t);
        static const int64_t sizes[][3] = {{2, 130, 130}, {1, 130, 70}, {3, 40, 97}, {1, 64, 64}};
        for (size_t si = 0; si < 4; si++) {
            int64_t count = sizes[si][0], m = sizes[si][1], n = sizes[si][2], k = m < n ? m : n;
            int64_t big = m > n ? m : n;
            double complex *av = matrices(SPD, count, big, c);
            for (int64_t b = 0; b < count; b++)
                for (int64_t i = 0; i < m; i++)
                    for (int64_t j = 0; j < n; j++)
                        av[(b * m + i) * n + j] = av[(b * big + i) * big + j];
            fc_scope *sg = fc_scope_open(gc), *sh = fc_scope_open(hc);
            fc_shape sh_ = stack(1, &count, m, n);
            fc_array *ag = upload(gc, av, t, sh_), *ah = upload(hc, av, t, sh_);
            char what[160];
            snprintf(what, sizeof what, "gpu qr %s %lldx%lld", fc_dtype_name(t), (long long)m,
                     (long long)n);
            double tol = 256 * (double)big * eps_of(t);
            for (int mode = 0; mode < 2; mode++) {
                fc_array *q = NULL, *r = NULL;
                cr_assert_eq(fc_linalg_qr(ag, (fc_qr_mode)mode, &q, &r), FC_OK);
                double complex *qv = values(q, what), *rv = values(r, what);
                int64_t qc = mode ? m : k;
                check_qr(av, qv, rv, count, m, n, qc, qc, tol, what);
                /* |R|'s diagonal is unique for a full-rank a (SPD blocks: full rank) */
                fc_array *rh = NULL;
                cr_assert_eq(fc_linalg_qr(ah, FC_QR_R, NULL, &rh), FC_OK);
                double complex *rhv = values(rh, what);
                for (int64_t b = 0; b < count; b++)
                    for (int64_t i = 0; i < k; i++) {
                        double g = cabs(rv[(b * qc + i) * n + i]), h = cabs(rhv[(b * k + i) * n + i]);
                        cr_expect(fabs(g - h) <= tol * fmax(h, 1.0), "%s: |R[%lld][%lld]| %g, host %g",
                                  what, (long long)i, (long long)i, g, h);
                    }
                free(qv);
                free(rv);
                free(rhv);
            }
            if (m == n) {
                snprintf(what, sizeof what, "gpu eigh %s n=%lld", fc_dtype_name(t), (long long)n);
                for (int upper = 0; upper < 2; upper++) {
                    fc_array *w = NULL, *v = NULL;
                    cr_assert_eq(fc_linalg_eigh(ag, upper, &w, &v), FC_OK);
                    double complex *wv = values(w, what), *vv = values(v, what);
                    check_eigh(av, wv, vv, count, n, upper, tol, what);
                    double complex *wh = values(fc_linalg_eigvalsh(ah, upper), what);
                    double complex *wg = values(fc_linalg_eigvalsh(ag, upper), what);
                    cr_expect_eq(mismatches(wv, wh, (size_t)(count * n), tol, what), 0, "%s", what);
                    cr_expect_eq(mismatches(wg, wh, (size_t)(count * n), tol, what), 0, "%s", what);
                    free(wv);
                    free(vv);
                    free(wh);
                    free(wg);
                }
            }
            free(av);
            fc_scope_close(sh);
            fc_scope_close(sg);
        }
    }
}

/* ---- svd, lstsq, pinv, matrix_rank ------------------------------------------------------ */

/* count matrices r x c of random values with the columns from `rank` on zero (r >= c) or the
 * rows (r < c): a rank-deficient stack whose zero singular values are exact. */
static double complex *deficient(int64_t count, int64_t r, int64_t c, int64_t rank, bool cplx) {
    int64_t big = r > c ? r : c;
    double complex *v = matrices(RANDOM, count, big, cplx);
    for (int64_t b = 0; b < count; b++)
        for (int64_t i = 0; i < r; i++)
            for (int64_t j = 0; j < c; j++)
                v[(b * r + i) * c + j] = (r >= c ? j >= rank : i >= rank) ? 0.0
                                                                          : v[(b * big + i) * big + j];
    return v;
}

/* Checks a == U[:, :k] diag(s) Vh[:k], U^H U == I, Vh Vh^H == I, s real, non-negative and
 * descending (count matrices m x n; U m x uc, Vh vr x n). */
static void check_svd(const double complex *a, const double complex *u, const double complex *s,
                      const double complex *vh, int64_t count, int64_t m, int64_t n, int64_t uc,
                      int64_t vr, double tol, const char *what) {
    int64_t k = m < n ? m : n;
    double complex *us = calloc((size_t)(count * m * k + 1), sizeof *us);
    double complex *vk = calloc((size_t)(count * k * n + 1), sizeof *vk);
    double complex *v = calloc((size_t)(count * n * vr + 1), sizeof *v); /* Vh^H */
    cr_assert(us && vk && v);
    for (int64_t b = 0; b < count; b++) {
        for (int64_t j = 0; j < k; j++) {
            double complex sj = s[b * k + j];
            cr_expect(cimag(sj) == 0.0 && creal(sj) >= 0.0 &&
                          (j == 0 || creal(s[b * k + j - 1]) >= creal(sj)),
                      "%s: s[%lld] = %g%+gi", what, (long long)j, creal(sj), cimag(sj));
            for (int64_t i = 0; i < m; i++) us[(b * m + i) * k + j] = u[(b * m + i) * uc + j] * sj;
            for (int64_t i = 0; i < n; i++) vk[(b * k + j) * n + i] = vh[(b * vr + j) * n + i];
        }
        for (int64_t j = 0; j < vr; j++)
            for (int64_t i = 0; i < n; i++) v[(b * n + i) * vr + j] = conj(vh[(b * vr + j) * n + i]);
    }
    double complex *rec = mat_mul(us, vk, count, m, k, n, false);
    double complex *uhu = mat_mul(u, u, count, uc, m, uc, true);
    double complex *vvh = mat_mul(v, v, count, vr, n, vr, true);
    int64_t big = uc > vr ? uc : vr;
    double complex *eye = calloc((size_t)(count * big * big + 1), sizeof *eye);
    cr_assert_not_null(eye);
    char w2[200];
    snprintf(w2, sizeof w2, "%s: u diag(s) vh == a", what);
    cr_expect_eq(mismatches(rec, a, (size_t)(count * m * n), tol, w2), 0, "%s", w2);
    for (int pass = 0; pass < 2; pass++) {
        int64_t sz = pass ? vr : uc;
        memset(eye, 0, (size_t)(count * big * big + 1) * sizeof *eye);
        for (int64_t b = 0; b < count; b++)
            for (int64_t i = 0; i < sz; i++) eye[(b * sz + i) * sz + i] = 1.0;
        snprintf(w2, sizeof w2, "%s: %s == I", what, pass ? "vh vh^H" : "u^H u");
        cr_expect_eq(mismatches(pass ? vvh : uhu, eye, (size_t)(count * sz * sz), tol, w2), 0,
                     "%s", w2);
    }
    free(us);
    free(vk);
    free(v);
    free(rec);
    free(uhu);
    free(vvh);
    free(eye);
}

static const struct {
    int nb;
    int64_t batch[2], m, n, rank; /* rank < min(m, n): deficient() */
} svd_shapes[] = {{0, {0}, 4, 4, 4},  {1, {3}, 5, 3, 3}, {2, {2, 2}, 3, 5, 3}, {0, {0}, 1, 1, 1},
                  {0, {0}, 6, 1, 1},  {0, {0}, 1, 6, 1}, {1, {2}, 6, 4, 2},    {1, {2}, 3, 6, 1},
                  {0, {0}, 5, 5, 0},  {1, {2}, 0, 3, 0}, {1, {2}, 3, 0, 0},    {1, {0}, 3, 3, 3}};

/* svd (full and reduced) and svdvals of stacks in ctx, checked by their invariants; compute_uv
 * false gives S alone. */
static void svd_invariants(fc_ctx *ctx, fc_dtype t, double tol) {
    bool c = fcg_is_complex(t);
    fc_dtype rt = fcg_real_dtype(t);
    for (size_t si = 0; si < sizeof svd_shapes / sizeof *svd_shapes; si++) {
        int64_t m = svd_shapes[si].m, n = svd_shapes[si].n, k = m < n ? m : n, count = 1;
        for (int d = 0; d < svd_shapes[si].nb; d++) count *= svd_shapes[si].batch[d];
        fc_scope *s = fc_scope_open(ctx);
        double complex *av = deficient(count, m, n, svd_shapes[si].rank, c);
        fc_array *a = upload(ctx, av, t, stack(svd_shapes[si].nb, svd_shapes[si].batch, m, n));
        double complex *sref = NULL;
        for (int full = 0; full < 2; full++) {
            char what[160];
            snprintf(what, sizeof what, "svd%s %s %lldx%lld rank %lld batch %lld",
                     full ? " full" : "", fc_dtype_name(t), (long long)m, (long long)n,
                     (long long)svd_shapes[si].rank, (long long)count);
            fc_array *u = NULL, *sv = NULL, *vh = NULL;
            cr_assert_eq(fc_linalg_svd(a, full, true, &u, &sv, &vh), FC_OK, "%s: %s", what,
                         fc_errmsg(ctx));
            int64_t uc = full ? m : k, vr = full ? n : k;
            fc_shape us = fc_array_shape(u), ss = fc_array_shape(sv), vs = fc_array_shape(vh);
            cr_expect(us.dim[us.ndim - 2] == m && us.dim[us.ndim - 1] == uc, "%s: u's shape", what);
            cr_expect(vs.dim[vs.ndim - 2] == vr && vs.dim[vs.ndim - 1] == n, "%s: vh's shape", what);
            cr_expect(ss.ndim == svd_shapes[si].nb + 1 && ss.dim[ss.ndim - 1] == k, "%s: s", what);
            cr_expect(fc_array_dtype(u) == t && fc_array_dtype(vh) == t && fc_array_dtype(sv) == rt);
            double complex *uv = values(u, what), *svv = values(sv, what), *vhv = values(vh, what);
            check_svd(av, uv, svv, vhv, count, m, n, uc, vr, tol, what);
            /* the rank's zero singular values (the zero columns or rows): zero, to rounding */
            for (int64_t b = 0; b < count; b++)
                for (int64_t j = svd_shapes[si].rank; j < k; j++)
                    cr_expect(creal(svv[b * k + j]) <= tol * fmax(creal(svv[b * k]), 1.0),
                              "%s: s[%lld] = %g", what, (long long)j, creal(svv[b * k + j]));
            if (!full) {
                sref = svv;
                svv = NULL;
            }
            free(uv);
            free(svv);
            free(vhv);
        }
        fc_array *u = fc_ones(ctx, FC_F32, FC_SHAPE(1)), *vh = u, *sv = NULL;
        cr_assert_eq(fc_linalg_svd(a, true, false, &u, &sv, &vh), FC_OK);
        cr_expect(u == NULL && vh == NULL, "compute_uv=false gives S alone");
        double complex *s1 = values(sv, "svd s"), *s2 = values(fc_linalg_svdvals(a), "svdvals");
        cr_expect_eq(mismatches(s1, sref, (size_t)(count * k), tol, "svd(compute_uv=False)"), 0);
        cr_expect_eq(mismatches(s2, sref, (size_t)(count * k), tol, "svdvals"), 0);
        free(s1);
        free(s2);
        free(sref);
        free(av);
        fc_scope_close(s);
    }
}

/* Penrose's conditions for p = pinv(a): a p a == a, p a p == p, (a p)^H == a p; lstsq's x is
 * pinv(a) b (both the minimum-norm solution) and its rank matrix_rank's. A rank-deficient a
 * takes rcond 1e-10: the defaults (1e-15, eps max(M, N)) sit a few bits above the rounding
 * of an SVD's zero singular values, which differs between the host and cuSOLVER. */
static void pinv_lstsq_invariants(fc_ctx *ctx, fc_dtype t, double tol) {
    static const int64_t shapes[][3] = {{6, 4, 4}, {6, 4, 2}, {3, 5, 3}, {3, 6, 1}, {4, 4, 0}};
    bool c = fcg_is_complex(t);
    for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++) {
        int64_t m = shapes[si][0], n = shapes[si][1], rank = shapes[si][2];
        char what[160];
        snprintf(what, sizeof what, "pinv/lstsq %s %lldx%lld rank %lld", fc_dtype_name(t),
                 (long long)m, (long long)n, (long long)rank);
        fc_scope *s = fc_scope_open(ctx);
        double complex *av = deficient(1, m, n, rank, c), *bv = matrices(RANDOM, 1, m, c);
        fc_array *a = upload(ctx, av, t, FC_SHAPE(m, n)), *b = upload(ctx, bv, t, FC_SHAPE(m, 2));
        double loose = 1e-10;
        const double *rc = rank < (m < n ? m : n) ? &loose : NULL;
        fc_array *p = fc_linalg_pinv(a, rc, false);
        cr_expect_eq(fc_array_dtype(p), t);
        double complex *apa = values(fc_matmul(fc_matmul(a, p), a), what);
        double complex *pap = values(fc_matmul(fc_matmul(p, a), p), what), *pv = values(p, what);
        cr_expect_eq(mismatches(apa, av, (size_t)(m * n), tol, what), 0, "%s: a p a", what);
        cr_expect_eq(mismatches(pap, pv, (size_t)(m * n), tol, what), 0, "%s: p a p", what);
        fc_array *ap = fc_matmul(a, p);
        double complex *apv = values(ap, what), *aph = values(fc_conj(fc_transpose(ap)), what);
        cr_expect_eq(mismatches(aph, apv, (size_t)(m * m), tol, what), 0, "%s: (a p)^H", what);
        fc_array *x = NULL, *res = NULL, *rk = NULL, *sv = NULL;
        cr_assert_eq(fc_linalg_lstsq(a, b, rc, &x, &res, &rk, &sv), FC_OK, "%s: %s", what,
                     fc_errmsg(ctx));
        double complex *xv = values(x, what), *pb = values(fc_matmul(p, b), what);
        cr_expect_eq(mismatches(xv, pb, (size_t)(n * 2), tol, what), 0, "%s: x == pinv(a) b", what);
        int32_t r = -1;
        int64_t r2 = -1;
        cr_expect_eq(fc_read(rk, &r, 0, 1), FC_OK);
        cr_expect_eq(fc_read(fc_linalg_matrix_rank(a, NULL, NULL, false), &r2, 0, 1), FC_OK);
        cr_expect(r == rank && r2 == rank, "%s: rank %d, matrix_rank %lld", what, r, (long long)r2);
        /* NumPy's residuals: [K] where rank == N < M, else [0] */
        int64_t want = rank == n && m > n ? 2 : 0;
        cr_expect_eq(fc_array_size(res), want, "%s: residuals of size %lld", what,
                     (long long)fc_array_size(res));
        cr_expect_eq(fc_array_dtype(res), fcg_real_dtype(t));
        free(apa);
        free(pap);
        free(pv);
        free(apv);
        free(aph);
        free(xv);
        free(pb);
        free(av);
        free(bv);
        fc_scope_close(s);
    }
}

Test(linalg, svd_pinv_lstsq_invariants_on_the_host) {
    fc_ctx *ctx = tu_host_ctx();
    for (int di = 0; di < NDT; di++) {
        svd_invariants(ctx, dtypes[di], 64 * 8 * eps_of(dtypes[di]));
        pinv_lstsq_invariants(ctx, dtypes[di], 64 * 8 * eps_of(dtypes[di]));
    }
    /* a known spectrum: [[3, 0], [4, 5]] has singular values sqrt(45) and sqrt(5) */
    fc_scope *s = fc_scope_open(ctx);
    double sv[2];
    cr_expect_eq(fc_read(fc_linalg_svdvals(fc_from_host(ctx, FC_I32, FC_SHAPE(2, 2),
                                                        (int32_t[]){3, 0, 4, 5})), sv, 0, 2), FC_OK);
    cr_expect(fabs(sv[0] - sqrt(45.0)) < 1e-14 && fabs(sv[1] - sqrt(5.0)) < 1e-14, "%g %g", sv[0],
              sv[1]);
    fc_scope_close(s);
    destroy_checked(ctx);
}

/* A NaN or infinite entry, or a stack with one: FC_ERR_LINALG naming svd and the matrix at
 * evaluation (NumPy's "SVD did not converge"); lstsq's residuals need the rank, so there the
 * call itself fails; the context goes on. */
static void svd_nonfinite(fc_ctx *ctx) {
    fc_scope *s = fc_scope_open(ctx);
    double complex *v = matrices(WELL, 3, 4, false);
    v[16 + 5] = NAN; /* matrix [1] */
    fc_array *a = upload(ctx, v, FC_F64, FC_SHAPE(3, 4, 4));
    fc_array *cases[] = {fc_linalg_svdvals(a), fc_linalg_pinv(a, NULL, false),
                         fc_linalg_matrix_rank(a, NULL, NULL, false)};
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(fc_array_status(cases[i]), FC_OK);
        double out[64];
        cr_expect_eq(fc_read(cases[i], out, 0, 1), FC_ERR_LINALG, "case %d", i);
        cr_expect(strstr(fc_errmsg(ctx), "svd") && strstr(fc_errmsg(ctx), "SVD did not converge") &&
                      strstr(fc_errmsg(ctx), "matrix [1] of the stack"),
                  "message: %s", fc_errmsg(ctx));
    }
    fc_array *u = NULL, *sv = NULL, *vh = NULL;
    v[16 + 5] = INFINITY;
    fc_array *ai = upload(ctx, v, FC_C64, FC_SHAPE(3, 4, 4));
    cr_assert_eq(fc_linalg_svd(ai, false, true, &u, &sv, &vh), FC_OK);
    double out[64];
    cr_expect_eq(fc_read(vh, out, 0, 1), FC_ERR_LINALG, "%s", fc_errmsg(ctx));
    fc_array *m = fcg_slice_axis(a, 0, 1, 2, 1), *col = fc_ones(ctx, FC_F64, FC_SHAPE(4, 4));
    m = fc_concatenate(ctx, (fc_array *[]){fc_reshape(m, FC_SHAPE(4, 4)), col}, 2, 0); /* 8 x 4 */
    fc_array *x = NULL, *res = NULL;
    cr_expect_eq(fc_linalg_lstsq(m, fc_ones(ctx, FC_F64, FC_SHAPE(8)), NULL, &x, &res, NULL, NULL),
                 FC_ERR_LINALG);
    cr_expect(strstr(fc_array_errmsg(res), "lstsq: the residuals' shape depends on the rank") &&
                  strstr(fc_array_errmsg(x), "SVD did not converge"),
              "%s", fc_array_errmsg(x));
    cr_assert_eq(fc_linalg_lstsq(m, fc_ones(ctx, FC_F64, FC_SHAPE(8)), NULL, &x, NULL, NULL, NULL),
                 FC_OK);
    cr_expect_eq(fc_read(x, out, 0, 1), FC_ERR_LINALG);
    /* the context still works */
    cr_expect_eq(fc_read(fc_linalg_svdvals(fcg_slice_axis(a, 0, 0, 1, 1)), out, 0, 4), FC_OK, "%s",
                 fc_errmsg(ctx));
    free(v);
    fc_scope_close(s);
}

Test(linalg, svd_errors) {
    fc_ctx *ctx = tu_host_ctx();
    svd_nonfinite(ctx);
    fc_scope *s = fc_scope_open(ctx);
    fc_array *v = fc_ones(ctx, FC_F32, FC_SHAPE(3)), *m = fc_ones(ctx, FC_F32, FC_SHAPE(3, 2));
    fc_array *h = fc_ones(ctx, FC_F16, FC_SHAPE(2, 2)), *t3 = fc_ones(ctx, FC_F32, FC_SHAPE(2, 3, 2));
    double nan = NAN, one = 1.0;
    struct {
        fc_array *x;
        fc_status st;
        const char *says;
    } cases[] = {
        {fc_linalg_svdvals(v), FC_ERR_LINALG, "svdvals: 1-dimensional array given"},
        {fc_linalg_svdvals(h), FC_ERR_DTYPE, "svdvals: array type f16 is unsupported"},
        {fc_linalg_pinv(v, NULL, false), FC_ERR_LINALG, "pinv: 1-dimensional"},
        {fc_linalg_pinv(m, NULL, true), FC_ERR_LINALG, "pinv: last 2 dimensions"},
        {fc_linalg_pinv(m, &nan, false), FC_ERR_VALUE, "pinv: rcond is NaN"},
        {fc_linalg_pinv(h, NULL, false), FC_ERR_DTYPE, "pinv: array type f16"},
        {fc_linalg_matrix_rank(m, &one, &one, false), FC_ERR_VALUE, "can't be both set"},
        {fc_linalg_matrix_rank(m, NULL, NULL, true), FC_ERR_LINALG, "matrix_rank: last 2"},
        {fc_linalg_matrix_rank(h, NULL, NULL, false), FC_ERR_DTYPE, "matrix_rank: array type"},
        {fc_linalg_pinv(fc_linalg_svdvals(v), NULL, false), FC_ERR_LINALG, "svdvals"}, /* on */
        {fc_linalg_matrix_rank(v, NULL, NULL, false), FC_OK, ""},
        {fc_linalg_pinv(fc_ones(ctx, FC_F16, FC_SHAPE(0, 2)), NULL, false), FC_OK, ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        cr_expect_eq(fc_array_status(cases[i].x), cases[i].st, "case %zu: %s", i,
                     fc_array_errmsg(cases[i].x));
        if (cases[i].st != FC_OK)
            cr_expect(strstr(fc_array_errmsg(cases[i].x), cases[i].says), "case %zu: '%s'", i,
                      fc_array_errmsg(cases[i].x));
    }
    /* svd and lstsq: every output holds the poison; NULL outputs are skipped; NULL inputs */
    fc_array *u = NULL, *sv = NULL, *vh = NULL, *x = NULL, *res = NULL, *rk = NULL;
    cr_expect_eq(fc_linalg_svd(v, true, true, &u, &sv, &vh), FC_ERR_LINALG);
    cr_expect(fc_array_status(u) == FC_ERR_LINALG && fc_array_status(vh) == FC_ERR_LINALG &&
              strstr(fc_array_errmsg(sv), "svd: 1-dimensional"));
    cr_expect_eq(fc_linalg_svd(h, false, false, NULL, &sv, NULL), FC_ERR_DTYPE);
    cr_expect_eq(fc_linalg_svd(NULL, true, true, &u, &sv, &vh), FC_ERR_NULL);
    struct {
        fc_array *a, *b;
        const double *rcond;
        fc_status st;
        const char *says;
    } ls[] = {
        {t3, m, NULL, FC_ERR_LINALG, "lstsq: 3-dimensional array given"},
        {m, t3, NULL, FC_ERR_LINALG, "lstsq: 3-dimensional array given"},
        {v, v, NULL, FC_ERR_LINALG, "lstsq: 1-dimensional"},
        {m, fc_ones(ctx, FC_F32, FC_SHAPE(2)), NULL, FC_ERR_LINALG, "Incompatible dimensions"},
        {m, fc_f64(ctx, 1.0), NULL, FC_ERR_LINALG, "0-dimensional"},
        {h, fc_ones(ctx, FC_F16, FC_SHAPE(2)), NULL, FC_ERR_DTYPE, "lstsq: array type f16"},
        {m, v, &nan, FC_ERR_VALUE, "lstsq: rcond is NaN"},
    };
    for (size_t i = 0; i < sizeof ls / sizeof *ls; i++) {
        cr_expect_eq(fc_linalg_lstsq(ls[i].a, ls[i].b, ls[i].rcond, &x, &res, &rk, NULL),
                     ls[i].st, "lstsq case %zu", i);
        cr_expect(fc_array_status(x) == ls[i].st && fc_array_status(rk) == ls[i].st &&
                      strstr(fc_array_errmsg(res), ls[i].says),
                  "lstsq case %zu: '%s'", i, fc_array_errmsg(res));
    }
    cr_expect_eq(fc_linalg_lstsq(m, NULL, NULL, &x, &res, &rk, NULL), FC_ERR_NULL);
    /* dtypes: integers compute in f64, f32 stays f32 (computed in double), c64 with f64 c128 */
    cr_expect_eq(fc_array_dtype(fc_linalg_pinv(fc_ones(ctx, FC_I8, FC_SHAPE(2, 3)), NULL, false)),
                 FC_F64);
    cr_expect_eq(fc_array_dtype(fc_linalg_pinv(m, NULL, false)), FC_F32);
    cr_expect_eq(fc_array_dtype(fc_linalg_svdvals(fc_ones(ctx, FC_C64, FC_SHAPE(2, 2)))), FC_F32);
    cr_assert_eq(fc_linalg_lstsq(fc_ones(ctx, FC_C64, FC_SHAPE(2, 3)), fc_ones(ctx, FC_F64, FC_SHAPE(2)),
                                 NULL, &x, &res, &rk, &sv), FC_OK);
    cr_expect(fc_array_dtype(x) == FC_C128 && fc_array_dtype(sv) == FC_F64 &&
              fc_array_dtype(res) == FC_F64 && fc_array_size(res) == 0);
    fc_scope_close(s);
    destroy_checked(ctx);
}

/* lstsq's residuals: their shape is known at the call (NumPy's rule, the rank evaluated where
 * M > N > 0), the vector b's is [1], and the evaluated factorisation is reused by x. */
Test(linalg, lstsq_residuals_shape) {
    fc_ctx *ctx = tu_host_ctx();
    fc_scope *s = fc_scope_open(ctx);
    double complex *full = deficient(1, 6, 3, 3, false), *low = deficient(1, 6, 3, 2, false);
    fc_array *af = upload(ctx, full, FC_F64, FC_SHAPE(6, 3)), *al = upload(ctx, low, FC_F64, FC_SHAPE(6, 3));
    fc_array *y = fc_ones(ctx, FC_F32, FC_SHAPE(6)), *x = NULL, *res = NULL, *rk = NULL;
    cr_assert_eq(fc_linalg_lstsq(af, y, NULL, &x, &res, &rk, NULL), FC_OK, "%s", fc_errmsg(ctx));
    cr_expect(fc_array_ndim(res) == 1 && fc_array_size(res) == 1 && fc_array_ndim(x) == 1 &&
              fc_array_size(x) == 3 && fc_array_ndim(rk) == 0 && fc_array_dtype(rk) == FC_I32);
    cr_expect_eq(fc_array_dtype(x), FC_F64);
    /* the residual is |b - a x|^2 */
    double r1, r2;
    cr_expect_eq(fc_read(res, &r1, 0, 1), FC_OK);
    fc_array *d = fc_sub(fc_cast(y, FC_F64), fc_matmul(af, x));
    cr_expect_eq(fc_read(fc_sum(fc_mul(d, d), FC_ALL, false), &r2, 0, 1), FC_OK);
    cr_expect(fabs(r1 - r2) <= 1e-12 * fmax(r2, 1.0), "%g %g", r1, r2);
    cr_assert_eq(fc_linalg_lstsq(al, y, NULL, &x, &res, NULL, NULL), FC_OK);
    cr_expect(fc_array_ndim(res) == 1 && fc_array_size(res) == 0, "rank 2 < 3: no residuals");
    /* a cut that discards a singular value: rank 2 of a full-rank matrix, no residuals */
    double rc = 0.99;
    cr_assert_eq(fc_linalg_lstsq(af, y, &rc, NULL, &res, &rk, NULL), FC_OK);
    int32_t r = 0;
    cr_expect_eq(fc_read(rk, &r, 0, 1), FC_OK);
    cr_expect(r < 3 && fc_array_size(res) == 0, "rank %d, residuals %lld", r,
              (long long)fc_array_size(res));
    free(full);
    free(low);
    fc_scope_close(s);
    destroy_checked(ctx);
}

/* The GPU's svd (cuSOLVER's gesvd: both the transposed m >= n path and the direct m < n one)
 * by the same invariants, every dtype, batches, empty and rank-deficient stacks and sizes up to
 * 130; singular values, pinv, lstsq and matrix_rank against the host's (they are unique). */
static void svd_on_the_gpu(fc_dtype t) {
    svd_invariants(gc, t, 256 * 8 * eps_of(t));
    pinv_lstsq_invariants(gc, t, 256 * 8 * eps_of(t));
    bool c = fcg_is_complex(t);
    static const int64_t sizes[][4] = {{2, 130, 130, 130}, {1, 130, 70, 70}, {3, 40, 97, 40},
                                       {1, 64, 64, 10}, {2, 33, 17, 5}};
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
        int64_t count = sizes[si][0], m = sizes[si][1], n = sizes[si][2], k = m < n ? m : n;
        double complex *av = deficient(count, m, n, sizes[si][3], c);
        fc_scope *sg = fc_scope_open(gc), *sh = fc_scope_open(hc);
        fc_shape shp = stack(1, &count, m, n);
        fc_array *ag = upload(gc, av, t, shp), *ah = upload(hc, av, t, shp);
        char what[160];
        snprintf(what, sizeof what, "gpu svd %s %lldx%lld rank %lld", fc_dtype_name(t),
                 (long long)m, (long long)n, (long long)sizes[si][3]);
        double tol = 256 * (double)(m > n ? m : n) * eps_of(t);
        for (int full = 0; full < 2; full++) {
            fc_array *u = NULL, *sv = NULL, *vh = NULL;
            cr_assert_eq(fc_linalg_svd(ag, full, true, &u, &sv, &vh), FC_OK);
            double complex *uv = values(u, what), *svv = values(sv, what), *vhv = values(vh, what);
            check_svd(av, uv, svv, vhv, count, m, n, full ? m : k, full ? n : k, tol, what);
            double complex *sh_ = values(fc_linalg_svdvals(ah), what);
            cr_expect_eq(mismatches(svv, sh_, (size_t)(count * k), tol, what), 0, "%s: s", what);
            free(uv);
            free(svv);
            free(vhv);
            free(sh_);
        }
        int64_t rg[3], rh[3];
        cr_expect_eq(fc_read(fc_linalg_matrix_rank(ag, NULL, NULL, false), rg, 0, count), FC_OK);
        cr_expect_eq(fc_read(fc_linalg_matrix_rank(ah, NULL, NULL, false), rh, 0, count), FC_OK);
        for (int64_t b = 0; b < count; b++)
            cr_expect(rg[b] == sizes[si][3] && rh[b] == sizes[si][3], "%s: rank %lld, host %lld",
                      what, (long long)rg[b], (long long)rh[b]);
        double loose = 1e-10; /* pinv_lstsq_invariants says why */
        double complex *pg = values(fc_linalg_pinv(ag, &loose, false), what);
        double complex *ph = values(fc_linalg_pinv(ah, &loose, false), what);
        cr_expect_eq(mismatches(pg, ph, (size_t)(count * m * n), tol, what), 0, "%s: pinv", what);
        free(pg);
        free(ph);
        free(av);
        fc_scope_close(sh);
        fc_scope_close(sg);
    }
}

Test(gpu_linalg, svd_against_the_host) {
    SKIP_WITHOUT_GPU("svd_against_the_host");
    for (int di = 0; di < NDT; di++) svd_on_the_gpu(dtypes[di]);
}

Test(gpu_linalg, svd_errors_on_the_gpu) {
    SKIP_WITHOUT_GPU("svd_errors_on_the_gpu");
    svd_nonfinite(gc);
}

/* ---- the library paths' own passes: triangle copies, no transposes, no zeroing ---------- */

/* Poisons the GPU context's memory pool for an output of `bytes`: two arrays of that size,
 * every 4-byte word 0x7FC00000 (a NaN in f32, and with its neighbour in f64 and the complex
 * types), evaluated and freed, so that the next allocations of that size (an input's upload,
 * then the op's output) are likely to reuse them: an element the op leaves unwritten then
 * reads as a NaN rather than as fresh memory's zeros. Their addresses go to at[2]; the pool
 * does not promise the reuse, so poisoned() says whether an output got one. */
static void poison_pool(size_t bytes, uint64_t at[2]) {
    for (int i = 0; i < 2; i++) {
        fc_scope *s = fc_scope_open(gc);
        fc_array *p = fc_full(gc, FC_U32, FC_SHAPE((int64_t)(bytes / 4)), 2143289344.0);
        cr_assert_eq(fc_eval(gc, &p, 1), FC_OK, "%s", fc_errmsg(gc));
        at[i] = p->dev;
        fc_scope_close(s);
    }
}

static int poison_cases, poison_landed;

/* a's values (a GPU array read into a poisoned buffer by values()), its output allocated
 * where poison_pool left NaNs if the pool reuses them (counted). */
static double complex *poisoned_values(fc_array *a, const char *what) {
    uint64_t at[2];
    poison_pool((size_t)fc_array_size(a) * fc_dtype_size(fc_array_dtype(a)), at);
    double complex *v = values(a, what);
    poison_cases++;
    poison_landed += a->dev && (a->dev == at[0] || a->dev == at[1]);
    return v;
}

static void poison_report(const char *test) {
    fprintf(stderr, "gpu_linalg %s: %d of %d outputs were allocated over poisoned memory\n",
            test, poison_landed, poison_cases);
    poison_cases = poison_landed = 0;
}

/* No element of n is a NaN (the inputs are finite: a NaN is an element nothing wrote). */
static void expect_no_nan(const double complex *v, size_t n, const char *what) {
    for (size_t i = 0; i < n; i++)
        if (isnan(creal(v[i])) || isnan(cimag(v[i]))) {
            cr_expect_fail("%s: element %zu is a NaN: left unwritten", what, i);
            return;
        }
}

/* rows r0.. (nr of them), columns c0.. (nc) of each of count matrices rows x width at v. */
static double complex *block_of(const double complex *v, int64_t count, int64_t rows,
                                int64_t width, int64_t r0, int64_t nr, int64_t c0, int64_t nc) {
    double complex *o = calloc((size_t)(count * nr * nc + 1), sizeof *o);
    cr_assert_not_null(o);
    for (int64_t b = 0; b < count; b++)
        for (int64_t i = 0; i < nr; i++)
            for (int64_t j = 0; j < nc; j++)
                o[(b * nr + i) * nc + j] = v[(b * rows + r0 + i) * width + c0 + j];
    return o;
}

/* cholesky's one triangle copy before potrf: every dtype, a stack, n = 1, and rows longer
 * than a block of the copy (300 > 256 threads), read over poisoned memory: L matches the
 * host's, and every element above the diagonal is exactly zero. */
Test(gpu_linalg, cholesky_triangle_copy) {
    SKIP_WITHOUT_GPU("cholesky_triangle_copy");
    static const struct {
        int nb;
        int64_t batch[2], n;
    } shapes[] = {{1, {3}, 5}, {0, {0}, 1}, {1, {4}, 1}, {0, {0}, 300}, {2, {2, 1}, 300},
                  {1, {2}, 33}};
    for (int di = 0; di < NDT; di++)
        for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++) {
            fc_dtype t = dtypes[di];
            int64_t n = shapes[si].n, count = 1;
            for (int d = 0; d < shapes[si].nb; d++) count *= shapes[si].batch[d];
            char what[160];
            snprintf(what, sizeof what, "cholesky %s n=%lld batch %lld", fc_dtype_name(t),
                     (long long)n, (long long)count);
            double complex *av = matrices(SPD, count, n, fcg_is_complex(t));
            fc_shape s = stack(shapes[si].nb, shapes[si].batch, n, n);
            fc_scope *sh = fc_scope_open(hc), *sg = fc_scope_open(gc);
            fc_array *h = fc_linalg_cholesky(upload(hc, av, t, s), false);
            fc_array *g = fc_linalg_cholesky(upload(gc, av, t, s), false);
            double complex *hv = values(h, what), *gv = poisoned_values(g, what);
            size_t total = (size_t)(count * n * n);
            cr_expect_eq(mismatches(gv, hv, total, 256 * (double)n * eps_of(t), what), 0,
                         "%s: the GPU differs from the host", what);
            for (int64_t b = 0; b < count; b++)
                for (int64_t i = 0; i < n; i++)
                    for (int64_t j = i + 1; j < n; j++) {
                        double complex x = gv[(b * n + i) * n + j];
                        cr_expect(creal(x) == 0.0 && cimag(x) == 0.0 && !signbit(creal(x)),
                                  "%s: matrix %lld: L[%lld][%lld] = %g%+gi above the diagonal",
                                  what, (long long)b, (long long)i, (long long)j, creal(x),
                                  cimag(x));
                    }
            free(hv);
            free(gv);
            free(av);
            fc_scope_close(sg);
            fc_scope_close(sh);
        }
    poison_report("cholesky_triangle_copy");
}

/* svd's packed output ([1 + m + vr, w]: S in row 0, U, then Vh) read whole over poisoned
 * memory: square matrices (gesvd on the buffer as it lies, no transposes, no zeroing for real
 * dtypes), tall and wide ones, full_matrices both ways, stacks, every dtype. Every element is
 * written (no NaN), the padding columns and complex S's imaginary parts are exactly zero, the
 * factors satisfy the invariants and S matches the host's; compute_uv=False (svdvals' node,
 * written by gesvd directly) too. */
Test(gpu_linalg, svd_packed_output) {
    SKIP_WITHOUT_GPU("svd_packed_output");
    static const int64_t sizes[][3] = {{3, 6, 6}, {1, 1, 1}, {2, 40, 40}, {1, 200, 200},
                                       {2, 9, 5}, {2, 5, 9},  {1, 1, 4},   {1, 4, 1}};
    for (int di = 0; di < NDT; di++)
        for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
            fc_dtype t = dtypes[di];
            bool c = fcg_is_complex(t);
            int64_t count = sizes[si][0], m = sizes[si][1], n = sizes[si][2];
            int64_t k = m < n ? m : n;
            double complex *av = deficient(count, m, n, k, c);
            fc_scope *sh = fc_scope_open(hc), *sg = fc_scope_open(gc);
            fc_shape shp = stack(1, &count, m, n);
            fc_array *ag = upload(gc, av, t, shp), *ah = upload(hc, av, t, shp);
            double tol = 256 * (double)(m > n ? m : n) * eps_of(t);
            char what[160];
            snprintf(what, sizeof what, "svd %s %lldx%lld batch %lld", fc_dtype_name(t),
                     (long long)m, (long long)n, (long long)count);
            double complex *sref = values(fc_linalg_svdvals(ah), what);
            for (int full = 0; full < 2; full++) {
                char w2[200];
                snprintf(w2, sizeof w2, "%s%s", what, full ? " full" : "");
                int64_t uc = full ? m : k, vr = full ? n : k, w = uc > n ? uc : n;
                int64_t rows = 1 + m + vr;
                fc_array *p = fcg_linalg_svd_packed(ag, full);
                fc_shape ps = fc_array_shape(p);
                cr_assert(ps.dim[1] == rows && ps.dim[2] == w, "%s: packed shape", w2);
                double complex *pv = poisoned_values(p, w2);
                expect_no_nan(pv, (size_t)(count * rows * w), w2);
                for (int64_t b = 0; b < count; b++)
                    for (int64_t i = 0; i < rows; i++)
                        for (int64_t j = 0; j < w; j++) {
                            /* zero: row 0 past k, U's rows past uc, Vh's past n, and every
                             * imaginary part of row 0 */
                            bool pad = i == 0 ? j >= k : i <= m ? j >= uc : j >= n;
                            double complex x = pv[(b * rows + i) * w + j];
                            if (pad || i == 0)
                                cr_expect((pad ? creal(x) == 0.0 : true) && cimag(x) == 0.0,
                                          "%s: matrix %lld element (%lld, %lld) = %g%+gi, want "
                                          "%s", w2, (long long)b, (long long)i, (long long)j,
                                          creal(x), cimag(x), pad ? "0" : "a real value");
                        }
                double complex *sv = block_of(pv, count, rows, w, 0, 1, 0, k);
                double complex *uv = block_of(pv, count, rows, w, 1, m, 0, uc);
                double complex *vh = block_of(pv, count, rows, w, 1 + m, vr, 0, n);
                check_svd(av, uv, sv, vh, count, m, n, uc, vr, tol, w2);
                cr_expect_eq(mismatches(sv, sref, (size_t)(count * k), tol, w2), 0, "%s: s", w2);
                free(pv);
                free(sv);
                free(uv);
                free(vh);
                fc_array *s_only = NULL;
                cr_assert_eq(fc_linalg_svd(ag, full, false, NULL, &s_only, NULL), FC_OK);
                double complex *s1 = poisoned_values(s_only, w2);
                cr_expect_eq(mismatches(s1, sref, (size_t)(count * k), tol, w2), 0,
                             "%s: compute_uv=False", w2);
                free(s1);
            }
            free(sref);
            free(av);
            fc_scope_close(sg);
            fc_scope_close(sh);
        }
    poison_report("svd_packed_output");
}

/* qr's packed output ([rows, c + n]: Q, then R) read whole over poisoned memory: R's first k
 * rows come from geam and its zeros (below the diagonal, and whole rows from k on) from one
 * triangle-clearing launch over the stack, with nothing zeroed first. Every mode, square,
 * tall and wide stacks, R's rows longer than a block of the clearing (260 > 256), every
 * dtype: no NaN, R's zeros exact, Q R == A and Q^H Q == I, |R|'s diagonal the host's. */
Test(gpu_linalg, qr_packed_output) {
    SKIP_WITHOUT_GPU("qr_packed_output");
    static const int64_t sizes[][3] = {{2, 6, 6}, {2, 9, 5}, {2, 5, 9}, {1, 1, 1}, {1, 300, 260}};
    for (int di = 0; di < NDT; di++)
        for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
            fc_dtype t = dtypes[di];
            int64_t count = sizes[si][0], m = sizes[si][1], n = sizes[si][2];
            int64_t k = m < n ? m : n;
            double complex *av = deficient(count, m, n, k, fcg_is_complex(t));
            fc_scope *sh = fc_scope_open(hc), *sg = fc_scope_open(gc);
            fc_shape shp = stack(1, &count, m, n);
            fc_array *ag = upload(gc, av, t, shp), *ah = upload(hc, av, t, shp);
            double tol = 256 * (double)(m > n ? m : n) * eps_of(t);
            fc_array *rh = NULL;
            cr_assert_eq(fc_linalg_qr(ah, FC_QR_R, NULL, &rh), FC_OK);
            double complex *rhv = values(rh, "host r");
            for (int mode = 0; mode < 3; mode++) {
                char what[160];
                snprintf(what, sizeof what, "qr %s %s %lldx%lld batch %lld",
                         fcg_qr_mode_names[mode], fc_dtype_name(t), (long long)m, (long long)n,
                         (long long)count);
                fc_array *p = fcg_linalg_qr_packed(ag, mode);
                fc_shape ps = fc_array_shape(p);
                int64_t rows = ps.dim[1], width = ps.dim[2], c = width - n;
                int64_t rr = mode == FC_QR_COMPLETE ? m : k;
                double complex *pv = poisoned_values(p, what);
                expect_no_nan(pv, (size_t)(count * rows * width), what);
                /* R's columns from row k on: zeros (complete R's rows, or padding) */
                for (int64_t b = 0; b < count; b++)
                    for (int64_t i = k; i < rows; i++)
                        for (int64_t j = c; j < width; j++)
                            cr_expect(pv[(b * rows + i) * width + j] == 0.0,
                                      "%s: matrix %lld: R's column %lld of row %lld >= k is "
                                      "not zero", what, (long long)b, (long long)(j - c),
                                      (long long)i);
                double complex *r = block_of(pv, count, rows, width, 0, rr, c, n);
                for (int64_t b = 0; b < count; b++)
                    for (int64_t i = 0; i < k; i++) {
                        double g = cabs(r[(b * rr + i) * n + i]);
                        double h = cabs(rhv[(b * k + i) * n + i]);
                        cr_expect(fabs(g - h) <= tol * fmax(h, 1.0), "%s: |R[%lld][%lld]| %g, "
                                  "host %g", what, (long long)i, (long long)i, g, h);
                    }
                if (c > 0) {
                    double complex *q = block_of(pv, count, rows, width, 0, m, 0, c);
                    check_qr(av, q, r, count, m, n, c, rr, tol, what);
                    free(q);
                }
                free(r);
                free(pv);
            }
            free(rhv);
            free(av);
            fc_scope_close(sg);
            fc_scope_close(sh);
        }
    poison_report("qr_packed_output");
}

/* ---- batched paths: stacks of small matrices (backend/cuda_batched.c) -------------------- */

/* The first library node under r, depth first (det over slogdet and its NaN guard, a vector
 * solve's reshape, cholesky's upper factor). */
static const fc_array *find_lib(const fc_array *r, int depth) {
    if (!r || depth > 64) return NULL;
    if (fcg_op_is_linalg(r->op)) return r;
    for (int i = 0; i < r->nin; i++) {
        const fc_array *l = find_lib(r->in[i], depth + 1);
        if (l) return l;
    }
    return NULL;
}

static const fc_array *lib_under(const fc_array *r) {
    r = find_lib(r, 0);
    cr_assert_not_null(r, "no library node");
    return r;
}

/* Which nodes take the batched paths (codegen.h's fcx_batched_takes, which the CUDA backend
 * and `fusec warm` both ask) by default and with FUSEC_LINALG_BATCHED=all, and none with 0:
 * stacks of at least 2 matrices, n <= 64 (LU, Cholesky) or 32 (eigh: syevjBatched's limit,
 * which `all` keeps), f32 to c128 (integers cast to f64), not qr or svd. */
Test(linalg, batched_rule) {
    fc_ctx *ctx = tu_host_ctx();
    fc_scope *s = fc_scope_open(ctx);
    static const struct {
        const char *value;
        fcx_batched_mode mode;
    } env[] = {{"0", FCX_BATCHED_OFF}, {"all", FCX_BATCHED_ALL}, {"1", FCX_BATCHED_AUTO},
               {"", FCX_BATCHED_AUTO}, {"yes", FCX_BATCHED_AUTO}, {NULL, FCX_BATCHED_AUTO}};
    for (size_t i = 0; i < sizeof env / sizeof *env; i++) {
        if (env[i].value) setenv("FUSEC_LINALG_BATCHED", env[i].value, 1);
        else unsetenv("FUSEC_LINALG_BATCHED");
        cr_expect_eq(fcx_batched_mode_env(), env[i].mode, "FUSEC_LINALG_BATCHED=%s",
                     env[i].value ? env[i].value : "(unset)");
    }
#define Z(t, ...) fc_zeros(ctx, t, FC_SHAPE(__VA_ARGS__))
    fc_array *w = NULL, *v = NULL, *q = NULL, *r = NULL;
    cr_assert_eq(fc_linalg_eigh(Z(FC_C64, 1, 8, 8), false, &w, &v), FC_OK);
    cr_assert_eq(fc_linalg_qr(Z(FC_F64, 3, 4, 4), FC_QR_REDUCED, &q, &r), FC_OK);
    struct {
        fc_array *x;
        bool by_default, with_all;
        const char *what;
    } cases[] = {
        {fc_linalg_solve(Z(FC_F64, 1000, 3, 3), Z(FC_F64, 1000, 3, 2)), true, true, "solve"},
        {fc_linalg_solve(Z(FC_F32, 3, 3), Z(FC_F32, 3)), false, true, "solve of one matrix"},
        {fc_linalg_solve(Z(FC_F32, 3, 3), Z(FC_F32, 1000, 3, 2)), true, true, "one A, b stacked"},
        {fc_linalg_solve(Z(FC_F32, 1000, 3, 3), Z(FC_F32, 3)), true, true, "one vector b"},
        {fc_linalg_inv(Z(FC_C64, 5, 32, 32)), true, true, "inv"},
        {fc_linalg_inv(Z(FC_I32, 3, 2, 2)), true, true, "inv of integers (f64)"},
        {fc_linalg_det(Z(FC_C128, 2, 3, 4, 4)), true, true, "det"},
        {fc_linalg_solve(Z(FC_F64, 2, 64, 64), Z(FC_F64, 2, 64, 1)), true, true, "n = 64"},
        {fc_linalg_solve(Z(FC_F64, 2, 65, 65), Z(FC_F64, 2, 65, 1)), false, true, "n = 65"},
        {fc_linalg_cholesky(Z(FC_F32, 64, 16, 16), false), true, true, "cholesky"},
        {fc_linalg_cholesky(Z(FC_F64, 2, 100, 100), true), false, true, "cholesky n = 100"},
        {fc_linalg_eigvalsh(Z(FC_F64, 2, 32, 32), false), true, true, "eigvalsh n = 32"},
        {fc_linalg_eigvalsh(Z(FC_F64, 2, 33, 33), true), false, false, "eigvalsh n = 33"},
        {v, false, true, "eigh of one matrix"},
        {fc_linalg_solve(Z(FC_F64, 0, 3, 3), Z(FC_F64, 0, 3, 1)), false, false, "empty stack"},
        {fc_linalg_det(Z(FC_F64, 4, 0, 0)), false, false, "0 x 0 matrices"},
        {r, false, false, "qr"},
        {fc_linalg_svdvals(Z(FC_F32, 3, 4, 4)), false, false, "svdvals"},
    };
#undef Z
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        cr_assert_eq(fc_array_status(cases[i].x), FC_OK, "%s: %s", cases[i].what,
                     fc_array_errmsg(cases[i].x));
        const fc_array *a = lib_under(cases[i].x);
        cr_expect_eq(fcx_batched_takes(a, FCX_BATCHED_AUTO), cases[i].by_default, "%s",
                     cases[i].what);
        cr_expect_eq(fcx_batched_takes(a, FCX_BATCHED_ALL), cases[i].with_all, "%s: all",
                     cases[i].what);
        cr_expect(!fcx_batched_takes(a, FCX_BATCHED_OFF), "%s: 0", cases[i].what);
    }
    fc_scope_close(s);
    destroy_checked(ctx);
}

/* The stacks of the batched tests: many tiny matrices, a batch of 16 x 16, a few of the
 * largest order syevjBatched takes, two batch axes. */
static const struct {
    int nb;
    int64_t batch[2], n;
} batched_shapes[] = {{1, {1000}, 3}, {1, {64}, 16}, {1, {5}, 32}, {2, {2, 3}, 4}};
#define NBATCHED (sizeof batched_shapes / sizeof *batched_shapes)

/* Every LU and Cholesky op, dtype and batched shape on the GPU against the host, as compare()
 * checks them, each evaluation one batched call (getrfBatched or potrfBatched). */
Test(gpu_linalg, batched_against_the_host) {
    SKIP_WITHOUT_GPU("batched_against_the_host");
    unsetenv("FUSEC_LINALG_BATCHED");
    static const struct {
        build_fn fn;
        const char *name;
        kind k;
        int64_t nrhs;
        bool vector, chol;
    } ops[] = {{b_solve, "solve", WELL, 1, false, false},
               {b_solve, "solve k=3", WELL, 3, false, false},
               {b_solve, "solve, one vector b", WELL, 1, true, false},
               {b_inv, "inv", WELL, 1, false, false},
               {b_det, "det", WELL, 1, false, false},
               {b_sign, "slogdet sign", WELL, 1, false, false},
               {b_logdet, "slogdet logdet", WELL, 1, false, false},
               {b_det, "det singular", SINGULAR, 1, false, false},
               {b_sign, "slogdet sign singular", SINGULAR, 1, false, false},
               {b_logdet, "slogdet logdet singular", SINGULAR, 1, false, false},
               {b_fused, "fused solve", WELL, 2, false, false},
               {b_chol, "cholesky", SPD, 1, false, true},
               {b_chol_upper, "cholesky upper", SPD, 1, false, true}};
    for (size_t o = 0; o < sizeof ops / sizeof *ops; o++)
        for (int di = 0; di < NDT; di++)
            for (size_t si = 0; si < NBATCHED; si++) {
                char what[160];
                snprintf(what, sizeof what, "batched %s %s n=%lld batch %lld", ops[o].name,
                         fc_dtype_name(dtypes[di]), (long long)batched_shapes[si].n,
                         (long long)batched_shapes[si].batch[0]);
                fcr_batched_counts c0 = batched_counts();
                compare(ops[o].fn, ops[o].k, dtypes[di], batched_shapes[si].nb,
                        batched_shapes[si].batch, batched_shapes[si].n, ops[o].nrhs,
                        ops[o].vector, what);
                fcr_batched_counts c1 = batched_counts();
                uint64_t took = ops[o].chol ? c1.cholesky - c0.cholesky : c1.lu - c0.lu;
                cr_expect_eq(took, 1, "%s: %llu batched calls, want 1", what,
                             (unsigned long long)took);
            }
}

/* solve's broadcasting into the batched path (graph/linalg.c broadcasts both operands to one
 * batch): a stack of A with one b, one A with a stack of b, batch axes that broadcast against
 * each other. */
Test(gpu_linalg, batched_broadcasts) {
    SKIP_WITHOUT_GPU("batched_broadcasts");
    unsetenv("FUSEC_LINALG_BATCHED");
    static const struct {
        fc_shape a, b;
        const char *what;
    } cases[] = {
        {FC_SHAPE(1000, 3, 3), FC_SHAPE(3, 2), "a stack of A, one b"},
        {FC_SHAPE(3, 3), FC_SHAPE(1000, 3, 2), "one A, a stack of b"},
        {FC_SHAPE(64, 16, 16), FC_SHAPE(16), "a stack of A, one vector b"},
        {FC_SHAPE(2, 1, 4, 4), FC_SHAPE(3, 4, 5), "batch axes (2, 1) and (3)"},
        {FC_SHAPE(1, 5, 32, 32), FC_SHAPE(2, 1, 32, 1), "batch axes (1, 5) and (2, 1)"},
    };
    for (int di = 0; di < NDT; di++)
        for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
            char what[160];
            snprintf(what, sizeof what, "%s %s", cases[i].what, fc_dtype_name(dtypes[di]));
            fcr_batched_counts c0 = batched_counts();
            compare_shapes(b_solve, WELL, dtypes[di], cases[i].a, cases[i].b, what);
            fcr_batched_counts c1 = batched_counts();
            cr_expect_eq(c1.lu - c0.lu, 1, "%s: not one batched call", what);
        }
}

/* Evaluates x (whose evaluation must fail with FC_ERR_LINALG) on the GPU by the batched path
 * and again by the loop (FUSEC_LINALG_BATCHED=0): the same message both times, the host's
 * (host: the same op in the host context), naming `member`; `chol`: potrfBatched, else
 * getrfBatched, once, and nothing batched for the loop. */
static void same_error(fc_array *x, fc_array *host, bool chol, const char *member,
                       const char *what) {
    double out[64];
    cr_expect_eq(fc_read(host, out, 0, 1), FC_ERR_LINALG, "%s: the host", what);
    char want[512];
    snprintf(want, sizeof want, "%s", fc_errmsg(hc));
    for (int loop = 0; loop < 2; loop++) {
        if (loop) setenv("FUSEC_LINALG_BATCHED", "0", 1);
        fcr_batched_counts c0 = batched_counts();
        fc_status st = fc_read(x, out, 0, 1);
        fcr_batched_counts c1 = batched_counts();
        unsetenv("FUSEC_LINALG_BATCHED");
        const char *path = loop ? "the loop" : "batched";
        cr_expect_eq(st, FC_ERR_LINALG, "%s, %s: %s", what, path, fc_strerror(st));
        cr_expect_str_eq(fc_errmsg(gc), want, "%s, %s", what, path);
        cr_expect(strstr(fc_errmsg(gc), member), "%s, %s: %s does not name %s", what, path,
                  fc_errmsg(gc), member);
        uint64_t took = chol ? c1.cholesky - c0.cholesky : c1.lu - c0.lu;
        cr_expect_eq(took, loop ? 0u : 1u, "%s, %s: %llu batched calls", what, path,
                     (unsigned long long)took);
    }
}

/* Singular, indefinite and NaN members of stacks that take the batched paths, every dtype:
 * solve and inv fail with the LinAlgError of the loop and the host, naming the first singular
 * matrix; det gives 0 and slogdet (0, -inf) for the singular ones and the host's values for
 * the others; cholesky fails naming the indefinite matrix and its minor; slogdet of a NaN
 * member is (NaN, NaN) there, as the loop's slogdet_finish makes it, the others' the host's;
 * eigh and eigvalsh of a NaN member go to the loop (counted) and give what it gives. */
Test(gpu_linalg, batched_errors) {
    SKIP_WITHOUT_GPU("batched_errors");
    unsetenv("FUSEC_LINALG_BATCHED");
    for (int di = 0; di < NDT; di++) {
        fc_dtype t = dtypes[di];
        bool c = fcg_is_complex(t);
        const char *tn = fc_dtype_name(t);
        char what[160];
        fc_scope *sh = fc_scope_open(hc), *sg = fc_scope_open(gc);
        int64_t count = 1000, n = 3;
        double complex *av = matrices(WELL, count, n, c), *sing = matrices(SINGULAR, 2, n, c);
        memcpy(av + 617 * n * n, sing, sizeof *av * (size_t)(n * n));
        memcpy(av + 900 * n * n, sing + n * n, sizeof *av * (size_t)(n * n));
        double complex *bv = matrices(RANDOM, count, n, c);
        fc_shape as = stack(1, &count, n, n), bs = stack(1, &count, n, 2);
        fc_array *ag = upload(gc, av, t, as), *ah = upload(hc, av, t, as);
        fc_array *bg = upload(gc, bv, t, bs), *bh = upload(hc, bv, t, bs);
        snprintf(what, sizeof what, "solve %s, singular members", tn);
        same_error(fc_linalg_solve(ag, bg), fc_linalg_solve(ah, bh), false,
                   "matrix [617] of the stack", what);
        snprintf(what, sizeof what, "inv %s, singular members", tn);
        same_error(fc_linalg_inv(ag), fc_linalg_inv(ah), false, "matrix [617] of the stack",
                   what);
        /* det and slogdet: no error; 0 and (0, -inf) for the singular members */
        double tol = 256 * (double)n * eps_of(t);
        build_fn parts[3] = {b_det, b_sign, b_logdet};
        for (int p = 0; p < 3; p++) {
            snprintf(what, sizeof what, "%s %s, singular members", p == 0 ? "det" : p == 1 ?
                     "slogdet sign" : "slogdet logdet", tn);
            fcr_batched_counts c0 = batched_counts();
            double complex *gv = values(parts[p](ag, NULL), what);
            fcr_batched_counts c1 = batched_counts();
            double complex *hv = values(parts[p](ah, NULL), what);
            cr_expect_eq(c1.lu - c0.lu, 1, "%s: not one batched call", what);
            cr_expect_eq(mismatches(gv, hv, (size_t)count, tol, what), 0, "%s", what);
            double want = p == 2 ? -INFINITY : 0.0;
            cr_expect(gv[617] == want && gv[900] == want, "%s: %g and %g for the singular "
                      "members", what, creal(gv[617]), creal(gv[900]));
            free(gv);
            free(hv);
        }
        /* cholesky of a stack with an indefinite member */
        int64_t pc = 64, pn = 16;
        double complex *pv = matrices(SPD, pc, pn, c), *ind = matrices(INDEFINITE, 1, pn, c);
        memcpy(pv + 10 * pn * pn, ind, sizeof *pv * (size_t)(pn * pn));
        fc_shape ps = stack(1, &pc, pn, pn);
        snprintf(what, sizeof what, "cholesky %s, an indefinite member", tn);
        same_error(fc_linalg_cholesky(upload(gc, pv, t, ps), false),
                   fc_linalg_cholesky(upload(hc, pv, t, ps), false), true,
                   "matrix [10] of the stack", what);
        cr_expect(strstr(fc_errmsg(gc), "order 16"), "%s: %s", what, fc_errmsg(gc));
        /* slogdet with a NaN member: (NaN, NaN) there, by the batched path as by the loop */
        double complex *nv = matrices(WELL, count, n, c);
        nv[5 * n * n] = complex_of(NAN, 0.0);
        fc_array *nh = upload(hc, nv, t, as);
        for (int p = 1; p < 3; p++) {
            snprintf(what, sizeof what, "slogdet %s %s, a NaN member", p == 1 ? "sign" :
                     "logdet", tn);
            /* each run over an upload of its own: a new graph, evaluated (the first one's
             * result holds its value) */
            fcr_batched_counts c0 = batched_counts();
            double complex *gv = values(parts[p](upload(gc, nv, t, as), NULL), what);
            fcr_batched_counts c1 = batched_counts();
            setenv("FUSEC_LINALG_BATCHED", "0", 1);
            double complex *lv = values(parts[p](upload(gc, nv, t, as), NULL), what);
            unsetenv("FUSEC_LINALG_BATCHED");
            fcr_batched_counts c2 = batched_counts();
            double complex *hv = values(parts[p](nh, NULL), what);
            cr_expect(c1.lu - c0.lu == 1 && c2.lu == c1.lu, "%s: %llu batched calls, then %llu "
                      "by the loop", what, (unsigned long long)(c1.lu - c0.lu),
                      (unsigned long long)(c2.lu - c1.lu));
            cr_expect(isnan(creal(gv[5])) && isnan(creal(lv[5])), "%s: %g (batched), %g (the "
                      "loop) for the NaN member", what, creal(gv[5]), creal(lv[5]));
            cr_expect_eq(mismatches(gv, lv, (size_t)count, tol, what), 0, "%s: batched against "
                         "the loop", what);
            hv[5] = gv[5]; /* the others against the host */
            cr_expect_eq(mismatches(gv, hv, (size_t)count, tol, what), 0, "%s: the host", what);
            free(gv);
            free(lv);
            free(hv);
        }
        /* eigh and eigvalsh of a NaN member: the stack goes to the loop, whose answer stands */
        int64_t ec = 64, en = 4;
        double complex *ev = matrices(RANDOM, ec, en, c);
        ev[7 * en * en] = complex_of(NAN, 0.0);
        for (int vec = 0; vec < 2; vec++) {
            snprintf(what, sizeof what, "%s %s, a NaN member", vec ? "eigh" : "eigvalsh", tn);
            double complex *got[2] = {NULL, NULL};
            fc_status st[2];
            char msg[2][512];
            size_t total = 0;
            for (int loop = 0; loop < 2; loop++) {
                /* each run over an upload of its own: a new graph, evaluated */
                fc_array *eg = upload(gc, ev, t, stack(1, &ec, en, en)), *x = NULL;
                if (vec) cr_assert_eq(fc_linalg_eigh(eg, false, NULL, &x), FC_OK);
                else x = fc_linalg_eigvalsh(eg, false);
                total = (size_t)fc_array_size(x);
                if (loop) setenv("FUSEC_LINALG_BATCHED", "0", 1);
                fcr_batched_counts c0 = batched_counts();
                unsigned char *buf = malloc(total * fc_dtype_size(fc_array_dtype(x)) + 1);
                cr_assert_not_null(buf);
                st[loop] = fc_read(x, buf, 0, (int64_t)total);
                snprintf(msg[loop], sizeof msg[loop], "%s", st[loop] ? fc_errmsg(gc) : "");
                fcr_batched_counts c1 = batched_counts();
                unsetenv("FUSEC_LINALG_BATCHED");
                if (st[loop] == FC_OK) {
                    got[loop] = malloc(total * sizeof **got);
                    cr_assert_not_null(got[loop]);
                    fc_dtype xt = fc_array_dtype(x);
                    for (size_t i = 0; i < total; i++)
                        got[loop][i] = complex_of(tv_value_at(buf, xt, i, 0),
                                                  fcg_is_complex(xt) ? tv_value_at(buf, xt, i, 1)
                                                                     : 0.0);
                }
                free(buf);
                cr_expect(loop ? c1.eigh == c0.eigh
                               : c1.eigh - c0.eigh == 1 && c1.eigh_loop - c0.eigh_loop == 1,
                          "%s, %s: %llu syevjBatched calls, %llu sent to the loop", what,
                          loop ? "the loop" : "batched", (unsigned long long)(c1.eigh - c0.eigh),
                          (unsigned long long)(c1.eigh_loop - c0.eigh_loop));
            }
            cr_expect_eq(st[0], st[1], "%s: %s batched, %s by the loop", what,
                         fc_strerror(st[0]), fc_strerror(st[1]));
            cr_expect_str_eq(msg[0], msg[1], "%s", what);
            if (got[0] && got[1])
                cr_expect_eq(mismatches(got[0], got[1], total, 256 * (double)en * eps_of(t),
                                        what), 0, "%s", what);
            free(got[0]);
            free(got[1]);
        }
        free(av);
        free(sing);
        free(bv);
        free(pv);
        free(ind);
        free(nv);
        free(ev);
        fc_scope_close(sg);
        fc_scope_close(sh);
    }
}

/* eigh (both triangles) and eigvalsh of the batched shapes by syevjBatched, every dtype: the
 * invariants of check_eigh, the eigenvalues against the host's, one syevjBatched call each
 * and none sent to the loop. */
Test(gpu_linalg, batched_eigh) {
    SKIP_WITHOUT_GPU("batched_eigh");
    unsetenv("FUSEC_LINALG_BATCHED");
    for (int di = 0; di < NDT; di++)
        for (size_t si = 0; si < NBATCHED; si++)
            for (int upper = 0; upper < 2; upper++) {
                fc_dtype t = dtypes[di];
                int nb = batched_shapes[si].nb;
                int64_t n = batched_shapes[si].n, count = 1;
                for (int d = 0; d < nb; d++) count *= batched_shapes[si].batch[d];
                char what[160];
                snprintf(what, sizeof what, "batched eigh%s %s n=%lld batch %lld",
                         upper ? " U" : "", fc_dtype_name(t), (long long)n, (long long)count);
                double complex *av = matrices(RANDOM, count, n, fcg_is_complex(t));
                fc_scope *sh = fc_scope_open(hc), *sg = fc_scope_open(gc);
                fc_shape shp = stack(nb, batched_shapes[si].batch, n, n);
                fc_array *ag = upload(gc, av, t, shp), *ah = upload(hc, av, t, shp);
                fc_array *w = NULL, *v = NULL;
                cr_assert_eq(fc_linalg_eigh(ag, upper, &w, &v), FC_OK);
                fcr_batched_counts c0 = batched_counts();
                fc_array *both[2] = {w, v};
                cr_assert_eq(fc_eval(gc, both, 2), FC_OK, "%s: %s", what, fc_errmsg(gc));
                double complex *wv = values(w, what), *vv = values(v, what);
                double complex *wg = values(fc_linalg_eigvalsh(ag, upper), what);
                fcr_batched_counts c1 = batched_counts();
                cr_expect(c1.eigh - c0.eigh == 2 && c1.eigh_loop == c0.eigh_loop, "%s: %llu "
                          "syevjBatched calls (want 2), %llu sent to the loop", what,
                          (unsigned long long)(c1.eigh - c0.eigh),
                          (unsigned long long)(c1.eigh_loop - c0.eigh_loop));
                double tol = 256 * (double)n * eps_of(t);
                check_eigh(av, wv, vv, count, n, upper, tol, what);
                double complex *wh = values(fc_linalg_eigvalsh(ah, upper), what);
                cr_expect_eq(mismatches(wv, wh, (size_t)(count * n), tol, what), 0, "%s", what);
                cr_expect_eq(mismatches(wg, wh, (size_t)(count * n), tol, what), 0,
                             "%s: eigvalsh", what);
                free(wv);
                free(vv);
                free(wg);
                free(wh);
                free(av);
                fc_scope_close(sg);
                fc_scope_close(sh);
            }
}

/* FUSEC_LINALG_BATCHED on the GPU, results against the host each time: by default a single
 * matrix, n = 65 and eigh's n = 33 take the loop; 0 sends every stack to the loop; `all`
 * sends single matrices and orders above 64 to the batched routines (syevj's n <= 32 stays). */
Test(gpu_linalg, batched_modes) {
    SKIP_WITHOUT_GPU("batched_modes");
    static const struct {
        const char *env;
        build_fn fn;
        kind k;
        int nb;
        int64_t batch, n, nrhs;
        int lu, chol; /* batched calls expected */
    } cases[] = {
        {NULL, b_solve, WELL, 1, 1000, 3, 2, 1, 0},  {NULL, b_solve, WELL, 0, 1, 3, 2, 0, 0},
        {NULL, b_inv, WELL, 1, 2, 65, 1, 0, 0},      {NULL, b_chol, SPD, 1, 2, 65, 1, 0, 0},
        {"0", b_solve, WELL, 1, 1000, 3, 2, 0, 0},   {"0", b_det, WELL, 1, 64, 16, 1, 0, 0},
        {"0", b_chol, SPD, 1, 64, 16, 1, 0, 0},      {"all", b_solve, WELL, 0, 1, 5, 3, 1, 0},
        {"all", b_solve, WELL, 1, 2, 100, 3, 1, 0},  {"all", b_inv, WELL, 1, 3, 70, 1, 1, 0},
        {"all", b_logdet, WELL, 0, 1, 90, 1, 1, 0},  {"all", b_chol, SPD, 0, 1, 80, 1, 0, 1},
        {"all", b_chol_upper, SPD, 1, 2, 7, 1, 0, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        for (int di = 0; di < NDT; di++) {
            if (cases[i].env) setenv("FUSEC_LINALG_BATCHED", cases[i].env, 1);
            else unsetenv("FUSEC_LINALG_BATCHED");
            char what[160];
            snprintf(what, sizeof what, "case %zu (FUSEC_LINALG_BATCHED=%s) %s n=%lld batch %lld",
                     i, cases[i].env ? cases[i].env : "", fc_dtype_name(dtypes[di]),
                     (long long)cases[i].n, (long long)cases[i].batch);
            fcr_batched_counts c0 = batched_counts();
            compare(cases[i].fn, cases[i].k, dtypes[di], cases[i].nb, &cases[i].batch, cases[i].n,
                    cases[i].nrhs, false, what);
            fcr_batched_counts c1 = batched_counts();
            cr_expect(c1.lu - c0.lu == (uint64_t)cases[i].lu &&
                          c1.cholesky - c0.cholesky == (uint64_t)cases[i].chol,
                      "%s: %llu getrfBatched and %llu potrfBatched calls, want %d and %d", what,
                      (unsigned long long)(c1.lu - c0.lu),
                      (unsigned long long)(c1.cholesky - c0.cholesky), cases[i].lu, cases[i].chol);
        }
    /* eigh: n = 33 is syevj's no more, whatever the mode; `all` takes one matrix of 32 */
    for (int m = 0; m < 3; m++) {
        const char *env = m == 0 ? NULL : m == 1 ? "all" : "0";
        int64_t count = m == 1 ? 1 : 2, n = m == 1 ? 32 : 33;
        if (env) setenv("FUSEC_LINALG_BATCHED", env, 1);
        else unsetenv("FUSEC_LINALG_BATCHED");
        for (int di = 0; di < NDT; di++) {
            fc_dtype t = dtypes[di];
            double complex *av = matrices(RANDOM, count, n, fcg_is_complex(t));
            fc_scope *sh = fc_scope_open(hc), *sg = fc_scope_open(gc);
            fc_shape shp = stack(1, &count, n, n);
            char what[160];
            snprintf(what, sizeof what, "eigvalsh (FUSEC_LINALG_BATCHED=%s) %s n=%lld batch %lld",
                     env ? env : "", fc_dtype_name(t), (long long)n, (long long)count);
            fcr_batched_counts c0 = batched_counts();
            double complex *g = values(fc_linalg_eigvalsh(upload(gc, av, t, shp), false), what);
            fcr_batched_counts c1 = batched_counts();
            double complex *h = values(fc_linalg_eigvalsh(upload(hc, av, t, shp), false), what);
            cr_expect_eq(c1.eigh - c0.eigh, m == 1 ? 1u : 0u, "%s: syevjBatched calls", what);
            cr_expect_eq(mismatches(g, h, (size_t)(count * n), 256 * (double)n * eps_of(t), what),
                         0, "%s", what);
            free(g);
            free(h);
            free(av);
            fc_scope_close(sg);
            fc_scope_close(sh);
        }
    }
    unsetenv("FUSEC_LINALG_BATCHED");
}

static fc_array *inv_det_cholesky(fc_array *a, fc_array *p) {
    int64_t count = fc_array_shape(a).dim[0];
    return fc_add(fc_add(fc_linalg_inv(a), fc_linalg_cholesky(p, false)),
                  fc_reshape(fc_linalg_det(a), FC_SHAPE(count, 1, 1)));
}

/* A cached plan with batched calls (inv and det: getrfBatched each; cholesky: potrfBatched)
 * runs again over new data, and their workspaces go back to the pool, as replay() checks. */
Test(gpu_linalg, batched_cached_plan_and_memory) {
    SKIP_WITHOUT_GPU("batched_cached_plan_and_memory");
    unsetenv("FUSEC_LINALG_BATCHED");
    int64_t count = 1000, n = 4;
    fc_scope *s = fc_scope_open(gc);
    double complex *v = matrices(WELL, 2 * count, n, false), *p = matrices(SPD, count, n, false);
    fc_shape shp = stack(1, &count, n, n);
    fcr_batched_counts calls[3];
    replay(inv_det_cholesky, upload(gc, v, FC_F64, shp), upload(hc, v, FC_F64, shp),
           upload(gc, p, FC_F64, shp), upload(hc, p, FC_F64, shp), v, (size_t)(count * n * n),
           256 * (double)n * 0x1p-52, calls);
    for (int rep = 0; rep < 3; rep++)
        cr_expect(calls[rep].lu == 2 && calls[rep].cholesky == 1, "run %d: %llu LU and %llu "
                  "Cholesky batched calls", rep, (unsigned long long)calls[rep].lu,
                  (unsigned long long)calls[rep].cholesky);
    free(v);
    free(p);
    fc_scope_close(s);
}
