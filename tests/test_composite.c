/*
 * tests/test_composite.c - the composite functions (graph/composite.c, graph/contract.c)
 * against NumPy 2.4, their .fc spellings, their fusion, their errors and their memory behaviour.
 *
 * The reference cases are tests/data/ops_composite.txt and ops_contract.txt, written by
 * tests/gen_composite.py and tests/gen_contract.py in tests/gen_reference.py's format (whose
 * docstring describes it; gen_contract.py's names its ops' arguments), with two additions: an op
 * with several results (`o meshgrid N ...`, `o split N ...`, `o split_at N ...`) fills N
 * registers, and `o pick %K` repeats register K so the next `x` checks it. An `err` also
 * checks that the message names the function (not a primitive it is built from). Values are
 * read with fc_read into a buffer poisoned with 0xA5 bytes and compared exactly for bool and
 * integers, within the case's tolerance for floats (0 0: exactly, +0 == -0).
 */
#include <criterion/criterion.h>

#include "fusec.h"
#include "graph.h"
#include "plan.h"

#include "counting_alloc.h"
#include "ref_format.c"
#include "test_util.h"
#include "workloads.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the reference run ------------------------------------------------------------------ */

typedef struct run {
    fc_backend backend;
    fc_ctx *ctx;
    reff_report rep;
    fc_status multi_status; /* what the last multi-output op returned */
} run;

#define MAX_REGS 64

/* An axis, or "none" for FC_AXIS_NONE. */
static int need_axis(reff_tokens *t) {
    const char *s = reff_need(t);
    return strcmp(s, "none") == 0 ? FC_AXIS_NONE : atoi(s);
}

/* An optional number: "none" (NULL) or a double's bits in hex, stored in *v. */
static const double *need_opt_double(reff_tokens *t, double *v) {
    const char *s = reff_need(t);
    if (strcmp(s, "none") == 0) return NULL;
    *v = reff_hex_double(strtoull(s, NULL, 16));
    return v;
}

/* The ops of the reference files with several results. */
static bool is_multi(const char *name) {
    static const char *const names[] = {"meshgrid", "split", "split_at", "slogdet", "svd",
                                        "lstsq", "qr", "eigh"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (strcmp(name, names[i]) == 0) return true;
    return false;
}

/* An op with several results: fills out[0..n) and returns n. */
static int build_multi(run *r, reff_tokens *t, const char *name, fc_array **regs, int nreg,
                       fc_array **out) {
    int n = (int)reff_need_int(t);
    cr_assert(n >= 1 && nreg + n <= MAX_REGS, "%s: %d results", t->path, n);
    if (strcmp(name, "meshgrid") == 0) {
        fc_array *in[FC_MAX_DIMS];
        cr_assert(n <= FC_MAX_DIMS);
        for (int i = 0; i < n; i++) in[i] = reff_need_reg(t, regs, nreg);
        r->multi_status = fc_meshgrid(r->ctx, in, n, reff_need_int(t) != 0, out);
    } else if (strcmp(name, "split") == 0) {
        fc_array *a = reff_need_reg(t, regs, nreg);
        r->multi_status = fc_split(a, n, (int)reff_need_int(t), out);
    } else if (strcmp(name, "slogdet") == 0) {
        cr_assert_eq(n, 2);
        r->multi_status = fc_linalg_slogdet(reff_need_reg(t, regs, nreg), &out[0], &out[1]);
    } else if (strcmp(name, "svd") == 0) { /* o svd 3 %A FULL: U, S, Vh */
        cr_assert_eq(n, 3);
        fc_array *a = reff_need_reg(t, regs, nreg);
        bool full = reff_need_int(t) != 0;
        r->multi_status = fc_linalg_svd(a, full, true, &out[0], &out[1], &out[2]);
    } else if (strcmp(name, "lstsq") == 0) { /* o lstsq 4 %A %B RCOND: x, residuals, rank, s */
        cr_assert_eq(n, 4);
        fc_array *a = reff_need_reg(t, regs, nreg), *b = reff_need_reg(t, regs, nreg);
        double v;
        const double *rcond = need_opt_double(t, &v);
        r->multi_status = fc_linalg_lstsq(a, b, rcond, &out[0], &out[1], &out[2], &out[3]);
    } else if (strcmp(name, "qr") == 0) { /* o qr 2 %A MODE (reduced or complete): Q, R */
        cr_assert_eq(n, 2);
        fc_array *a = reff_need_reg(t, regs, nreg);
        r->multi_status = fc_linalg_qr(a, (fc_qr_mode)reff_need_int(t), &out[0], &out[1]);
    } else if (strcmp(name, "eigh") == 0) { /* o eigh 2 %A UPPER: w, v */
        cr_assert_eq(n, 2);
        fc_array *a = reff_need_reg(t, regs, nreg);
        r->multi_status = fc_linalg_eigh(a, reff_need_int(t) != 0, &out[0], &out[1]);
    } else {
        fc_array *a = reff_need_reg(t, regs, nreg);
        int nidx = (int)reff_need_int(t);
        cr_assert_eq(nidx + 1, n);
        int64_t idx[MAX_REGS];
        for (int i = 0; i < nidx; i++) idx[i] = reff_need_int(t);
        r->multi_status = fc_split_at(a, nidx, idx, (int)reff_need_int(t), out);
    }
    for (int i = 0; i < n; i++) {
        cr_assert_not_null(out[i], "%s: result %d is NULL", name, i);
        if (fc_array_status(out[i]) != r->multi_status)
            reff_fail(&r->rep, "result %d has status %s, the call returned %s", i,
                      fc_strerror(fc_array_status(out[i])), fc_strerror(r->multi_status));
    }
    return n;
}

typedef fc_array *(*reduce_fn)(fc_array *, fc_axes, bool);
typedef fc_array *(*unary_fn)(fc_array *);
typedef fc_array *(*binary_fn)(fc_array *, fc_array *);

static fc_array *build_op(run *r, reff_tokens *t, const char *name, fc_array **regs, int nreg) {
    fc_ctx *ctx = r->ctx;
    static const struct {
        const char *name;
        reduce_fn fn;
    } reds[] = {{"nansum", fc_nansum}, {"nanprod", fc_nanprod}, {"nanmean", fc_nanmean},
                {"nanmax", fc_nanmax}, {"nanmin", fc_nanmin}, {"count_nonzero", fc_count_nonzero},
                {"logsumexp", fc_logsumexp}};
    for (size_t i = 0; i < sizeof reds / sizeof *reds; i++)
        if (strcmp(name, reds[i].name) == 0) {
            fc_array *x = reff_need_reg(t, regs, nreg);
            fc_axes ax = reff_need_axes(t);
            return reds[i].fn(x, ax, reff_need_int(t) != 0);
        }
    static const struct {
        const char *name;
        unary_fn fn;
    } unary[] = {{"deg2rad", fc_deg2rad}, {"rad2deg", fc_rad2deg}, {"sinc", fc_sinc},
                 {"positive", fc_positive}, {"fabs", fc_fabs}, {"transpose", fc_transpose}};
    for (size_t i = 0; i < sizeof unary / sizeof *unary; i++)
        if (strcmp(name, unary[i].name) == 0) return unary[i].fn(reff_need_reg(t, regs, nreg));
    if (strcmp(name, "pick") == 0) return reff_need_reg(t, regs, nreg);
    if (strcmp(name, "identity") == 0) {
        fc_dtype dt = reff_need_dtype(t);
        return fc_identity(ctx, dt, reff_need_int(t));
    }
    if (strcmp(name, "tile") == 0) {
        fc_array *x = reff_need_reg(t, regs, nreg);
        int n = (int)reff_need_int(t);
        int64_t reps[FC_MAX_DIMS];
        cr_assert(n <= FC_MAX_DIMS);
        for (int i = 0; i < n; i++) reps[i] = reff_need_int(t);
        return fc_tile(x, n, reps);
    }
    if (strcmp(name, "repeat") == 0 || strcmp(name, "roll") == 0) {
        fc_array *x = reff_need_reg(t, regs, nreg);
        int64_t k = reff_need_int(t);
        int axis = need_axis(t);
        return name[1] == 'e' ? fc_repeat(x, k, axis) : fc_roll(x, k, axis);
    }
    if (strcmp(name, "roll_axes") == 0) {
        fc_array *x = reff_need_reg(t, regs, nreg);
        int n = (int)reff_need_int(t);
        int64_t shifts[FC_MAX_DIMS];
        int axes[FC_MAX_DIMS];
        cr_assert(n <= FC_MAX_DIMS);
        for (int i = 0; i < n; i++) {
            shifts[i] = reff_need_int(t);
            axes[i] = (int)reff_need_int(t);
        }
        return fc_roll_axes(x, n, shifts, axes);
    }
    if (strcmp(name, "tril") == 0 || strcmp(name, "triu") == 0 || strcmp(name, "diag") == 0 ||
        strcmp(name, "round") == 0) {
        fc_array *x = reff_need_reg(t, regs, nreg);
        int64_t k = reff_need_int(t);
        switch (name[3]) {
        case 'l': return fc_tril(x, k);
        case 'u': return fc_triu(x, k);
        case 'g': return fc_diag(x, k);
        default: return fc_round(x, (int)k);
        }
    }
    if (strcmp(name, "diagonal") == 0 || strcmp(name, "trace") == 0) {
        fc_array *x = reff_need_reg(t, regs, nreg);
        int64_t off = reff_need_int(t);
        int a1 = (int)reff_need_int(t), a2 = (int)reff_need_int(t);
        return name[0] == 'd' ? fc_diagonal(x, off, a1, a2) : fc_trace(x, off, a1, a2);
    }
    if (strcmp(name, "nanargmax") == 0 || strcmp(name, "nanargmin") == 0) {
        fc_array *x = reff_need_reg(t, regs, nreg);
        int axis = need_axis(t);
        bool keep = reff_need_int(t) != 0;
        return name[7] == 'a' ? fc_nanargmax(x, axis, keep) : fc_nanargmin(x, axis, keep);
    }
    if (strcmp(name, "isclose") == 0 || strcmp(name, "allclose") == 0) {
        fc_array *a = reff_need_reg(t, regs, nreg), *b = reff_need_reg(t, regs, nreg);
        double rtol = reff_need_hexdouble(t), atol = reff_need_hexdouble(t);
        bool eqn = reff_need_int(t) != 0;
        return name[0] == 'i' ? fc_isclose(a, b, rtol, atol, eqn)
                              : fc_allclose(a, b, rtol, atol, eqn);
    }
    if (strcmp(name, "nan_to_num") == 0) {
        fc_array *x = reff_need_reg(t, regs, nreg);
        double nan = reff_need_hexdouble(t), v[2];
        const double *p[2];
        for (int i = 0; i < 2; i++) {
            const char *s = reff_need(t);
            v[i] = strcmp(s, "none") == 0 ? 0 : reff_hex_double(strtoull(s, NULL, 16));
            p[i] = strcmp(s, "none") == 0 ? NULL : &v[i];
        }
        return fc_nan_to_num(x, nan, p[0], p[1]);
    }
    if (strcmp(name, "heaviside") == 0 || strcmp(name, "float_power") == 0) {
        fc_array *a = reff_need_reg(t, regs, nreg), *b = reff_need_reg(t, regs, nreg);
        return name[0] == 'h' ? fc_heaviside(a, b) : fc_float_power(a, b);
    }
    static const struct {
        const char *name;
        binary_fn fn;
    } binary[] = {{"dot", fc_dot}, {"vdot", fc_vdot}, {"inner", fc_inner}, {"outer", fc_outer},
                  {"kron", fc_kron}};
    for (size_t i = 0; i < sizeof binary / sizeof *binary; i++)
        if (strcmp(name, binary[i].name) == 0) {
            fc_array *a = reff_need_reg(t, regs, nreg);
            return binary[i].fn(a, reff_need_reg(t, regs, nreg));
        }
    if (strcmp(name, "tensordot") == 0 || strcmp(name, "tensordot_axes") == 0) {
        fc_array *a = reff_need_reg(t, regs, nreg), *b = reff_need_reg(t, regs, nreg);
        int n = (int)reff_need_int(t);
        if (name[9] == '\0') return fc_tensordot(a, b, n);
        int axes[2][FC_MAX_DIMS];
        cr_assert(n >= 0 && n <= FC_MAX_DIMS);
        for (int k = 0; k < 2; k++)
            for (int i = 0; i < n; i++) axes[k][i] = (int)reff_need_int(t);
        return fc_tensordot_axes(a, b, n, axes[0], axes[1]);
    }
    if (strcmp(name, "einsum") == 0) {
        const char *subs = reff_need(t);
        cr_assert_eq(subs[0], '=', "%s: einsum's subscripts follow '='", t->path);
        char text[256];
        snprintf(text, sizeof text, "%s", subs + 1);
        int n = (int)reff_need_int(t);
        fc_array *ops[MAX_REGS];
        cr_assert(n >= 1 && n <= MAX_REGS);
        for (int i = 0; i < n; i++) ops[i] = reff_need_reg(t, regs, nreg);
        return fc_einsum(ctx, text, ops, n);
    }
    if (strcmp(name, "matrix_power") == 0) {
        fc_array *a = reff_need_reg(t, regs, nreg);
        return fc_matrix_power(a, reff_need_int(t));
    }
    /* np.linalg (graph/linalg.c): tests/gen_linalg.py's cases */
    if (strcmp(name, "solve") == 0) {
        fc_array *a = reff_need_reg(t, regs, nreg);
        return fc_linalg_solve(a, reff_need_reg(t, regs, nreg));
    }
    if (strcmp(name, "inv") == 0) return fc_linalg_inv(reff_need_reg(t, regs, nreg));
    if (strcmp(name, "det") == 0) return fc_linalg_det(reff_need_reg(t, regs, nreg));
    if (strcmp(name, "cholesky") == 0) {
        fc_array *a = reff_need_reg(t, regs, nreg);
        return fc_linalg_cholesky(a, reff_need_int(t) != 0);
    }
    /* convolution (graph/convolve.c): tests/gen_convolve.py's cases */
    if (strcmp(name, "convolve") == 0 || strcmp(name, "correlate") == 0) {
        fc_array *a = reff_need_reg(t, regs, nreg), *v = reff_need_reg(t, regs, nreg);
        fc_conv_mode mode = (fc_conv_mode)reff_need_int(t);
        fc_conv_method method = (fc_conv_method)reff_need_int(t);
        return name[2] == 'n' ? fc_convolve(a, v, mode, method) : fc_correlate(a, v, mode, method);
    }
    if (strcmp(name, "convolve2d") == 0 || strcmp(name, "correlate2d") == 0) {
        fc_array *a = reff_need_reg(t, regs, nreg), *b = reff_need_reg(t, regs, nreg);
        fc_conv_mode mode = (fc_conv_mode)reff_need_int(t);
        fc_conv_boundary boundary = (fc_conv_boundary)reff_need_int(t);
        double re = reff_need_hexdouble(t), im = reff_need_hexdouble(t);
        fc_conv_method method = (fc_conv_method)reff_need_int(t);
        return name[2] == 'n' ? fc_convolve2d(a, b, mode, boundary, re, im, method)
                              : fc_correlate2d(a, b, mode, boundary, re, im, method);
    }
    if (strcmp(name, "qr_r") == 0) { /* qr's mode "r": R alone */
        fc_array *r_ = NULL;
        fc_linalg_qr(reff_need_reg(t, regs, nreg), FC_QR_R, NULL, &r_);
        return r_;
    }
    if (strcmp(name, "eigvalsh") == 0) {
        fc_array *a = reff_need_reg(t, regs, nreg);
        return fc_linalg_eigvalsh(a, reff_need_int(t) != 0);
    }
    if (strcmp(name, "svdvals") == 0) return fc_linalg_svdvals(reff_need_reg(t, regs, nreg));
    if (strcmp(name, "pinv") == 0) { /* o pinv %A RCOND HERMITIAN */
        fc_array *a = reff_need_reg(t, regs, nreg);
        double v;
        const double *rcond = need_opt_double(t, &v);
        return fc_linalg_pinv(a, rcond, reff_need_int(t) != 0);
    }
    if (strcmp(name, "matrix_rank") == 0) { /* o matrix_rank %A TOL RTOL HERMITIAN */
        fc_array *a = reff_need_reg(t, regs, nreg);
        double v[2];
        const double *tol = need_opt_double(t, &v[0]), *rtol = need_opt_double(t, &v[1]);
        return fc_linalg_matrix_rank(a, tol, rtol, reff_need_int(t) != 0);
    }
    /* what a factorisation's checks compute from its factors (tests/gen_linalg.py): |x|, a
     * product, a stack's conjugate transpose, a slice along one axis */
    if (strcmp(name, "absolute") == 0) return fc_abs(reff_need_reg(t, regs, nreg));
    if (strcmp(name, "matmul") == 0 || strcmp(name, "mul") == 0) {
        fc_array *a = reff_need_reg(t, regs, nreg), *b = reff_need_reg(t, regs, nreg);
        return name[1] == 'a' ? fc_matmul(a, b) : fc_mul(a, b);
    }
    if (strcmp(name, "adjoint") == 0) {
        fc_array *a = reff_need_reg(t, regs, nreg);
        int nd = fc_array_ndim(a);
        cr_assert_geq(nd, 2);
        fc_axes perm = {.n = nd};
        for (int d = 0; d < nd; d++) perm.axis[d] = d;
        perm.axis[nd - 1] = nd - 2;
        perm.axis[nd - 2] = nd - 1;
        return fc_conj(fc_permute(a, perm));
    }
    if (strcmp(name, "expand_dims") == 0) {
        fc_array *a = reff_need_reg(t, regs, nreg);
        return fc_expand_dims(a, (int)reff_need_int(t));
    }
    if (strcmp(name, "slice_axis") == 0) { /* o slice_axis %A AXIS START STOP */
        fc_array *a = reff_need_reg(t, regs, nreg);
        int axis = (int)reff_need_int(t);
        int64_t start = reff_need_int(t), stop = reff_need_int(t);
        return fcg_slice_axis(a, axis < 0 ? fc_array_ndim(a) + axis : axis, start, stop, 1);
    }
    cr_assert_fail("%s: unknown op '%s'", t->path, name);
    return NULL;
}

/* Whether msg names the function behind the runner's op name (split_at is split, roll_axes
 * roll). */
static bool names_op(const char *msg, const char *op) {
    char name[64];
    snprintf(name, sizeof name, "%s", op);
    char *suffix = strstr(name, "_at");
    if (!suffix) suffix = strstr(name, "_axes");
    if (suffix) *suffix = '\0';
    return strstr(msg, name) != NULL;
}

/* Each case runs in a context of its own, so that a GPU fault in one case (which makes its
 * context unusable) cannot hide the cases after it; its scope must leave no node behind. */
static void run_file(run *r, const char *file) {
    reff_tokens t;
    reff_open(&t, file);
    const char *s;
    while ((s = reff_tok(&t)) != NULL) {
        cr_assert_str_eq(s, "case", "%s: expected 'case', got '%s'", t.path, s);
        snprintf(r->rep.casename, sizeof r->rep.casename, "%s", reff_need(&t));
        r->rep.cases++;
        r->rep.opname = NULL;
        fc_ctx_options opts = {0};
        opts.backend = r->backend;
        cr_assert_eq(fc_ctx_create(&r->ctx, &opts), FC_OK, "no context for backend %d",
                     (int)r->backend);
        fc_scope *scope = fc_scope_open(r->ctx);
        cr_assert_not_null(scope);
        fc_array *regs[MAX_REGS];
        int nreg = 0;
        double rtol = 0, atol = 0;
        for (;;) {
            const char *k = reff_need(&t);
            if (strcmp(k, "end") == 0) break;
            if (strcmp(k, "a") == 0 || strcmp(k, "w") == 0) {
                cr_assert_lt(nreg, MAX_REGS);
                regs[nreg++] = k[0] == 'a' ? reff_need_array(&t, r->ctx)
                                           : reff_need_weak(&t, r->ctx);
            } else if (strcmp(k, "o") == 0) {
                const char *name = reff_need(&t);
                r->rep.opname = name;
                if (is_multi(name)) {
                    nreg += build_multi(r, &t, name, regs, nreg, regs + nreg);
                } else {
                    cr_assert_lt(nreg, MAX_REGS);
                    regs[nreg] = build_op(r, &t, name, regs, nreg);
                    cr_assert_not_null(regs[nreg], "%s returned NULL", name);
                    nreg++;
                }
            } else if (strcmp(k, "tol") == 0) {
                rtol = strtod(reff_need(&t), NULL);
                atol = strtod(reff_need(&t), NULL);
            } else if (strcmp(k, "x") == 0) {
                cr_assert_gt(nreg, 0);
                reff_check_value(&r->rep, &t, r->ctx, regs[nreg - 1], rtol, atol, true);
            } else if (strcmp(k, "evalerr") == 0) {
                /* it builds; the evaluation fails (a singular matrix), naming the function */
                fc_status want = reff_need_status(&t);
                fc_array *a = regs[nreg - 1];
                fc_status got = fc_eval(r->ctx, &a, 1);
                r->rep.checks++;
                if (got != want)
                    reff_fail(&r->rep, "evaluation status %s, expected %s (NumPy raises)",
                              fc_strerror(got), fc_strerror(want));
                else if (!names_op(fc_errmsg(r->ctx), r->rep.opname))
                    reff_fail(&r->rep, "message '%s' does not name %s", fc_errmsg(r->ctx),
                              r->rep.opname);
            } else if (strcmp(k, "err") == 0) {
                fc_status want = reff_need_status(&t);
                fc_array *a = regs[nreg - 1];
                r->rep.checks++;
                if (fc_array_status(a) != want)
                    reff_fail(&r->rep, "status %s, expected %s (NumPy raises)",
                              fc_strerror(fc_array_status(a)), fc_strerror(want));
                else if (!names_op(fc_array_errmsg(a), r->rep.opname))
                    reff_fail(&r->rep, "message '%s' does not name %s", fc_array_errmsg(a),
                              r->rep.opname);
            } else {
                cr_assert_fail("%s: unknown word '%s'", t.path, k);
            }
        }
        fc_scope_close(scope);
        if (r->ctx->live_nodes != 0)
            reff_fail(&r->rep, "%zu nodes outlived the case's scope", r->ctx->live_nodes);
        fc_ctx_destroy(r->ctx);
        r->ctx = NULL;
    }
    reff_close(&t);
}

static void run_reference(fc_backend backend, const char *file, int min_cases) {
    run r;
    memset(&r, 0, sizeof r);
    r.backend = backend;
    run_file(&r, file);
    cr_log_info("%s (%s): %d cases, %d checks, %d failures", file,
                backend == FC_BACKEND_HOST ? "host" : "cuda", r.rep.cases, r.rep.checks,
                r.rep.failures);
    cr_expect_geq(r.rep.cases, min_cases, "only %d cases", r.rep.cases);
    cr_assert_eq(r.rep.failures, 0, "%d of %d checks disagree with NumPy (first %d logged)",
                 r.rep.failures, r.rep.checks, REFF_MAX_REPORTS);
}

Test(composite, numpy_reference) { run_reference(FC_BACKEND_HOST, "ops_composite.txt", 380); }

/* The contractions (graph/contract.c): tests/gen_contract.py's cases. */
Test(composite, contract_numpy_reference) {
    run_reference(FC_BACKEND_HOST, "ops_contract.txt", 600);
}

/* np.linalg (graph/linalg.c): tests/gen_linalg.py's cases, singular and non-positive-definite
 * matrices included. */
Test(composite, linalg_numpy_reference) { run_reference(FC_BACKEND_HOST, "ops_linalg.txt", 630); }

static bool have_gpu(const char *test) {
    int n = 0;
    if (fc_device_count(&n) == FC_OK && n > 0) return true;
    fprintf(stderr, "composite: SKIPPED 1 test (no CUDA device): %s\n", test);
    return false;
}

/* The same cases through the GPU's kernels and cuBLAS (fused composites included), where
 * there is one. */
Test(composite, numpy_reference_on_the_gpu) {
    if (!have_gpu("numpy_reference_on_the_gpu")) cr_skip_test("no CUDA device");
    run_reference(FC_BACKEND_CUDA, "ops_composite.txt", 380);
}

Test(composite, contract_numpy_reference_on_the_gpu) {
    if (!have_gpu("contract_numpy_reference_on_the_gpu")) cr_skip_test("no CUDA device");
    run_reference(FC_BACKEND_CUDA, "ops_contract.txt", 600);
}

/* The linalg cases through cuSOLVER: values, and the singular / non-positive-definite
 * matrices found on the device and reported by the evaluation. */
Test(composite, linalg_numpy_reference_on_the_gpu) {
    if (!have_gpu("linalg_numpy_reference_on_the_gpu")) cr_skip_test("no CUDA device");
    run_reference(FC_BACKEND_CUDA, "ops_linalg.txt", 630);
}

/* np.convolve / np.correlate and scipy.signal.convolve2d / correlate2d (graph/convolve.c):
 * tests/gen_convolve.py's cases, each under the methods auto, direct and fft; on the GPU the
 * direct method is fusec's stencil kernel. */
Test(composite, convolve_numpy_reference) {
    run_reference(FC_BACKEND_HOST, "ops_convolve.txt", 1100);
}

Test(composite, convolve_numpy_reference_on_the_gpu) {
    if (!have_gpu("convolve_numpy_reference_on_the_gpu")) cr_skip_test("no CUDA device");
    run_reference(FC_BACKEND_CUDA, "ops_convolve.txt", 1100);
}

/* method auto: the stencil for small kernels and integers, the FFT for large float kernels
 * (docs/ARCHITECTURE.md's rule), as the graph shows; NULL arguments are errors, not crashes. */
Test(composite, convolve_method_choice) {
    cr_expect(!fcg_conv_prefers_fft(FC_F32, 4096, 4096, 3, 3));
    cr_expect(!fcg_conv_prefers_fft(FC_F32, 4096, 4096, 15, 15));
    cr_expect(fcg_conv_prefers_fft(FC_F32, 4096, 4096, 31, 31));
    cr_expect(!fcg_conv_prefers_fft(FC_I32, 4096, 4096, 31, 31));
    cr_expect(fcg_conv_prefers_fft(FC_C128, 1, 1000000, 1, 1000));
    cr_expect_eq(fcg_fft_fast_len(4111), 4116);
    cr_expect_eq(fcg_fft_fast_len(1), 1);
    fc_ctx *ctx = tu_host_ctx();
    fc_scope *s = fc_scope_open(ctx);
    fc_array *x = fc_zeros(ctx, FC_F32, FC_SHAPE(256, 256));
    fc_array *small = fc_convolve2d(x, fc_zeros(ctx, FC_F32, FC_SHAPE(3, 3)), FC_CONV_SAME,
                                    FC_CONV_SYMM, 0, 0, FC_CONV_AUTO);
    fc_array *large = fc_convolve2d(x, fc_zeros(ctx, FC_F32, FC_SHAPE(31, 31)), FC_CONV_SAME,
                                    FC_CONV_FILL, 0, 0, FC_CONV_AUTO);
    fc_array *ints = fc_convolve2d(fc_cast(x, FC_I32), fc_zeros(ctx, FC_I32, FC_SHAPE(31, 31)),
                                   FC_CONV_SAME, FC_CONV_FILL, 0, 0, FC_CONV_AUTO);
    cr_expect_eq(fc_array_status(small), FC_OK);
    cr_expect_eq(small->op, FCG_OP_STENCIL2D, "3x3: the stencil");
    cr_expect_neq(large->op, FCG_OP_STENCIL2D, "31x31: the FFT");
    cr_expect_eq(ints->op, FCG_OP_STENCIL2D, "integers: the stencil");
    cr_expect_eq(fc_array_status(fc_convolve2d(NULL, x, FC_CONV_FULL, FC_CONV_FILL, 0, 0,
                                               FC_CONV_AUTO)), FC_ERR_NULL);
    cr_expect_eq(fc_array_status(fc_correlate(x, NULL, FC_CONV_FULL, FC_CONV_AUTO)), FC_ERR_NULL);
    cr_expect_null(fc_convolve(NULL, NULL, FC_CONV_FULL, FC_CONV_AUTO));
    fc_scope_close(s);
    fc_ctx_destroy(ctx);
}

/* ---- .fc spellings: the parser builds the very nodes the C API does --------------------- */

typedef struct fc_case {
    const char *text;                  /* a statement `y = ...` over inputs x (f32 [3, 4]), */
    fc_array *(*build)(fc_ctx *, fc_array *, fc_array *, fc_array *); /* v (f32 [5]), j (i8 [4]) */
} fc_case;

static fc_array *b_identity(fc_ctx *c, fc_array *x, fc_array *v, fc_array *j) {
    (void)x, (void)v, (void)j;
    return fc_identity(c, FC_F32, 3);
}
static fc_array *b_tile(fc_ctx *c, fc_array *x, fc_array *v, fc_array *j) {
    (void)c, (void)v, (void)j;
    return fc_tile(x, 2, (const int64_t[]){2, 1});
}
static fc_array *b_repeat(fc_ctx *c, fc_array *x, fc_array *v, fc_array *j) {
    (void)c, (void)v, (void)j;
    return fc_repeat(x, 3, -1);
}
static fc_array *b_repeat_flat(fc_ctx *c, fc_array *x, fc_array *v, fc_array *j) {
    (void)c, (void)v, (void)j;
    return fc_repeat(x, 2, FC_AXIS_NONE);
}
static fc_array *b_roll(fc_ctx *c, fc_array *x, fc_array *v, fc_array *j) {
    (void)c, (void)v, (void)j;
    return fc_roll(x, -1, 1);
}
static fc_array *b_roll_flat(fc_ctx *c, fc_array *x, fc_array *v, fc_array *j) {
    (void)c, (void)v, (void)j;
    return fc_roll(x, 5, FC_AXIS_NONE);
}
static fc_array *b_roll_axes(fc_ctx *c, fc_array *x, fc_array *v, fc_array *j) {
    (void)c, (void)v, (void)j;
    return fc_roll_axes(x, 2, (const int64_t[]){1, 2}, (const int[]){0, 1});
}
static fc_array *b_roll_same(fc_ctx *c, fc_array *x, fc_array *v, fc_array *j) {
    (void)c, (void)v, (void)j;
    return fc_roll_axes(x, 2, (const int64_t[]){2, 2}, (const int[]){0, 1});
}
static fc_array *b_tril(fc_ctx *c, fc_array *x, fc_array *v, fc_array *j) {
    (void)c, (void)v, (void)j;
    return fc_tril(x, -1);
}
static fc_array *b_triu(fc_ctx *c, fc_array *x, fc_array *v, fc_array *j) {
    (void)c, (void)v, (void)j;
    return fc_triu(x, 0);
}
static fc_array *b_diag(fc_ctx *c, fc_array *x, fc_array *v, fc_array *j) {
    (void)c, (void)x, (void)j;
    return fc_diag(v, 1);
}
static fc_array *b_diagonal(fc_ctx *c, fc_array *x, fc_array *v, fc_array *j) {
    (void)c, (void)v, (void)j;
    return fc_diagonal(x, 1, 1, 0);
}
static fc_array *b_trace(fc_ctx *c, fc_array *x, fc_array *v, fc_array *j) {
    (void)c, (void)v, (void)j;
    return fc_trace(x, -1, 0, 1);
}
static fc_array *b_nansum(fc_ctx *c, fc_array *x, fc_array *v, fc_array *j) {
    (void)c, (void)v, (void)j;
    return fc_nansum(x, FC_AXES(1), true);
}
static fc_array *b_nanprod(fc_ctx *c, fc_array *x, fc_array *v, fc_array *j) {
    (void)c, (void)v, (void)j;
    return fc_nanprod(x, FC_ALL, false);
}
static fc_array *b_nanmean(fc_ctx *c, fc_array *x, fc_array *v, fc_array *j) {
    (void)c, (void)v, (void)j;
    return fc_nanmean(x, FC_AXES(0, 1), false);
}
static fc_array *b_nanmax(fc_ctx *c, fc_array *x, fc_array *v, fc_array *j) {
    (void)c, (void)v, (void)j;
    return fc_nanmax(x, FC_AXES(-1), false);
}
static fc_array *b_nanmin(fc_ctx *c, fc_array *x, fc_array *v, fc_array *j) {
    (void)c, (void)v, (void)j;
    return fc_nanmin(x, FC_AXES(0), true);
}
static fc_array *b_nanargmax(fc_ctx *c, fc_array *x, fc_array *v, fc_array *j) {
    (void)c, (void)v, (void)j;
    return fc_nanargmax(x, FC_AXIS_NONE, false);
}
static fc_array *b_nanargmin(fc_ctx *c, fc_array *x, fc_array *v, fc_array *j) {
    (void)c, (void)v, (void)j;
    return fc_nanargmin(x, 1, true);
}
static fc_array *b_count_nonzero(fc_ctx *c, fc_array *x, fc_array *v, fc_array *j) {
    (void)c, (void)v, (void)j;
    return fc_count_nonzero(x, FC_AXES(0), false);
}
static fc_array *b_logsumexp(fc_ctx *c, fc_array *x, fc_array *v, fc_array *j) {
    (void)c, (void)v, (void)j;
    return fc_logsumexp(x, FC_AXES(-1), true);
}
static fc_array *b_isclose(fc_ctx *c, fc_array *x, fc_array *v, fc_array *j) {
    (void)c, (void)v;
    return fc_isclose(x, j, 1e-5, 1e-8, false);
}
static fc_array *b_isclose_kw(fc_ctx *c, fc_array *x, fc_array *v, fc_array *j) {
    (void)x, (void)j;
    return fc_isclose(v, fc_f64(c, 2.0), 0.5, 0.25, true);
}
static fc_array *b_allclose(fc_ctx *c, fc_array *x, fc_array *v, fc_array *j) {
    (void)c, (void)v, (void)j;
    return fc_allclose(x, x, 1e-5, 1e-8, false);
}
static fc_array *b_round(fc_ctx *c, fc_array *x, fc_array *v, fc_array *j) {
    (void)c, (void)v, (void)j;
    return fc_round(x, 2);
}
static fc_array *b_round0(fc_ctx *c, fc_array *x, fc_array *v, fc_array *j) {
    (void)c, (void)x, (void)j;
    return fc_round(v, 0);
}
static fc_array *b_nan_to_num(fc_ctx *c, fc_array *x, fc_array *v, fc_array *j) {
    (void)c, (void)v, (void)j;
    return fc_nan_to_num(x, 0.0, NULL, NULL);
}
static fc_array *b_nan_to_num_kw(fc_ctx *c, fc_array *x, fc_array *v, fc_array *j) {
    (void)c, (void)v, (void)j;
    return fc_nan_to_num(x, -1.0, &(double){100.0}, NULL);
}
static fc_array *b_heaviside(fc_ctx *c, fc_array *x, fc_array *v, fc_array *j) {
    (void)v, (void)j;
    return fc_heaviside(x, fc_f64(c, 0.5));
}
static fc_array *b_deg2rad(fc_ctx *c, fc_array *x, fc_array *v, fc_array *j) {
    (void)c, (void)v, (void)j;
    return fc_deg2rad(x);
}
static fc_array *b_rad2deg(fc_ctx *c, fc_array *x, fc_array *v, fc_array *j) {
    (void)c, (void)v, (void)x;
    return fc_rad2deg(j);
}
static fc_array *b_sinc(fc_ctx *c, fc_array *x, fc_array *v, fc_array *j) {
    (void)c, (void)v, (void)j;
    return fc_sinc(x);
}
static fc_array *b_positive(fc_ctx *c, fc_array *x, fc_array *v, fc_array *j) {
    (void)c, (void)v, (void)x;
    return fc_positive(j);
}
static fc_array *b_fabs(fc_ctx *c, fc_array *x, fc_array *v, fc_array *j) {
    (void)c, (void)v, (void)x;
    return fc_fabs(j);
}
static fc_array *b_float_power(fc_ctx *c, fc_array *x, fc_array *v, fc_array *j) {
    (void)c, (void)v;
    return fc_float_power(x, j);
}
static fc_array *b_meshgrid(fc_ctx *c, fc_array *x, fc_array *v, fc_array *j) {
    (void)x;
    fc_array *out[2];
    fc_meshgrid(c, (fc_array *[]){v, j}, 2, false, out);
    return out[1];
}
static fc_array *b_meshgrid_ij(fc_ctx *c, fc_array *x, fc_array *v, fc_array *j) {
    fc_array *out[3];
    fc_meshgrid(c, (fc_array *[]){v, j, x}, 3, true, out);
    return out[2];
}
static fc_array *b_split(fc_ctx *c, fc_array *x, fc_array *v, fc_array *j) {
    (void)c, (void)v, (void)j;
    fc_array *out[2];
    fc_split(x, 2, 1, out);
    return out[1];
}
static fc_array *b_split_at(fc_ctx *c, fc_array *x, fc_array *v, fc_array *j) {
    (void)c, (void)x, (void)j;
    fc_array *out[3];
    fc_split_at(v, 2, (const int64_t[]){1, -1}, 0, out);
    return out[2];
}
static fc_array *b_dot(fc_ctx *c, fc_array *x, fc_array *v, fc_array *j) {
    (void)c, (void)v;
    return fc_dot(x, j);
}
static fc_array *b_vdot(fc_ctx *c, fc_array *x, fc_array *v, fc_array *j) {
    (void)c, (void)v, (void)j;
    return fc_vdot(x, x);
}
static fc_array *b_inner(fc_ctx *c, fc_array *x, fc_array *v, fc_array *j) {
    (void)c, (void)x, (void)v;
    return fc_inner(j, j);
}
static fc_array *b_outer(fc_ctx *c, fc_array *x, fc_array *v, fc_array *j) {
    (void)c, (void)x;
    return fc_outer(v, j);
}
static fc_array *b_kron(fc_ctx *c, fc_array *x, fc_array *v, fc_array *j) {
    (void)c, (void)x;
    return fc_kron(v, j);
}
static fc_array *b_tensordot2(fc_ctx *c, fc_array *x, fc_array *v, fc_array *j) {
    (void)c, (void)v, (void)j;
    return fc_tensordot(x, x, 2);
}
static fc_array *b_tensordot0(fc_ctx *c, fc_array *x, fc_array *v, fc_array *j) {
    (void)c, (void)x, (void)j;
    return fc_tensordot(v, v, 0);
}
static fc_array *b_tensordot_axes(fc_ctx *c, fc_array *x, fc_array *v, fc_array *j) {
    (void)c, (void)v, (void)j;
    return fc_tensordot_axes(x, x, 2, (const int[]){1, 0}, (const int[]){1, 0});
}
static fc_array *b_tensordot_pair(fc_ctx *c, fc_array *x, fc_array *v, fc_array *j) {
    (void)c, (void)v;
    return fc_tensordot_axes(x, j, 1, (const int[]){1}, (const int[]){0});
}
static fc_array *b_einsum(fc_ctx *c, fc_array *x, fc_array *v, fc_array *j) {
    (void)v;
    return fc_einsum(c, "ij,j->i", (fc_array *[]){x, j}, 2);
}
static fc_array *b_einsum3(fc_ctx *c, fc_array *x, fc_array *v, fc_array *j) {
    (void)x, (void)v;
    return fc_einsum(c, "i,i,i", (fc_array *[]){j, j, j}, 3);
}
static fc_array *b_matrix_power(fc_ctx *c, fc_array *x, fc_array *v, fc_array *j) {
    (void)c, (void)x, (void)j;
    return fc_matrix_power(fc_outer(v, v), 3);
}

static fc_array *b_convolve(fc_ctx *c, fc_array *x, fc_array *v, fc_array *j) {
    (void)c, (void)x;
    return fc_convolve(v, j, FC_CONV_FULL, FC_CONV_AUTO);
}
static fc_array *b_correlate_fft(fc_ctx *c, fc_array *x, fc_array *v, fc_array *j) {
    (void)c, (void)x;
    return fc_correlate(v, j, FC_CONV_SAME, FC_CONV_FFT);
}
static fc_array *b_convolve2d(fc_ctx *c, fc_array *x, fc_array *v, fc_array *j) {
    (void)c, (void)v, (void)j;
    return fc_convolve2d(x, x, FC_CONV_SAME, FC_CONV_SYMM, 0, 0, FC_CONV_AUTO);
}
static fc_array *b_correlate2d(fc_ctx *c, fc_array *x, fc_array *v, fc_array *j) {
    (void)c, (void)j;
    return fc_correlate2d(x, fc_reshape(v, FC_SHAPE(1, 5)), FC_CONV_FULL, FC_CONV_WRAP, 1.5, 0,
                          FC_CONV_DIRECT);
}
static fc_array *b_stencil2d(fc_ctx *c, fc_array *x, fc_array *v, fc_array *j) {
    (void)c, (void)v, (void)j;
    return fcg_stencil2d(x, x, 2, 3, 1, 2, FC_CONV_SYMM, 0.5, 0);
}

static const fc_case fc_cases[] = {
    {"y = convolve(v, j)", b_convolve},
    {"y = correlate(v, j, mode=\"same\", method=\"fft\")", b_correlate_fft},
    {"y = signal.convolve2d(x, x, mode=\"same\", boundary=\"symm\")", b_convolve2d},
    {"y = signal.correlate2d(x, reshape(v, [1, 5]), \"full\", \"circular\", 1.5, method=\"direct\")",
     b_correlate2d},
    {"y = signal.stencil2d(x, x, [2, 3], [1, 2], boundary=\"symmetric\", fillvalue=0.5)",
     b_stencil2d},
    {"y = identity(3, dtype=f32)", b_identity},
    {"y = tile(x, [2, 1])", b_tile},
    {"y = repeat(x, 3, axis=-1)", b_repeat},
    {"y = repeat(x, 2)", b_repeat_flat},
    {"y = roll(x, -1, axis=1)", b_roll},
    {"y = roll(x, 5)", b_roll_flat},
    {"y = roll(x, [1, 2], axis=[0, 1])", b_roll_axes},
    {"y = roll(x, 2, axis=[0, 1])", b_roll_same},
    {"y = tril(x, k=-1)", b_tril},
    {"y = triu(x)", b_triu},
    {"y = diag(v, 1)", b_diag},
    {"y = diagonal(x, offset=1, axis1=1, axis2=0)", b_diagonal},
    {"y = trace(x, -1)", b_trace},
    {"y = nansum(x, axis=1, keepdims=True)", b_nansum},
    {"y = nanprod(x)", b_nanprod},
    {"y = nanmean(x, axis=[0, 1])", b_nanmean},
    {"y = nanmax(x, -1)", b_nanmax},
    {"y = nanmin(x, axis=0, keepdims=True)", b_nanmin},
    {"y = nanargmax(x)", b_nanargmax},
    {"y = nanargmin(x, axis=1, keepdims=True)", b_nanargmin},
    {"y = count_nonzero(x, axis=0)", b_count_nonzero},
    {"y = logsumexp(x, axis=-1, keepdims=True)", b_logsumexp},
    {"y = isclose(x, j)", b_isclose},
    {"y = isclose(v, 2.0, rtol=0.5, atol=0.25, equal_nan=True)", b_isclose_kw},
    {"y = allclose(x, x)", b_allclose},
    {"y = round(x, 2)", b_round},
    {"y = around(v)", b_round0},
    {"y = nan_to_num(x)", b_nan_to_num},
    {"y = nan_to_num(x, nan=-1.0, posinf=100.0)", b_nan_to_num_kw},
    {"y = heaviside(x, 0.5)", b_heaviside},
    {"y = deg2rad(x)", b_deg2rad},
    {"y = radians(x)", b_deg2rad},
    {"y = rad2deg(j)", b_rad2deg},
    {"y = degrees(j)", b_rad2deg},
    {"y = sinc(x)", b_sinc},
    {"y = positive(j)", b_positive},
    {"y = fabs(j)", b_fabs},
    {"y = float_power(x, j)", b_float_power},
    {"y = meshgrid(v, j)[1]", b_meshgrid},
    {"g = meshgrid(v, j, x, indexing=\"ij\")\ny = g[-1]", b_meshgrid_ij},
    {"y = split(x, 2, axis=1)[1]", b_split},
    {"p = split(v, [1, -1])\ny = p[2]", b_split_at},
    {"y = x.round(2)", b_round},
    {"y = x.repeat(3, axis=-1)", b_repeat},
    {"y = x.diagonal(offset=1, axis1=1, axis2=0)", b_diagonal},
    {"y = x.trace(-1)", b_trace},
    {"y = dot(x, j)", b_dot},
    {"y = x.dot(j)", b_dot},
    {"y = vdot(x, b=x)", b_vdot},
    {"y = inner(j, j)", b_inner},
    {"y = outer(v, j)", b_outer},
    {"y = kron(v, j)", b_kron},
    {"y = tensordot(x, x)", b_tensordot2},
    {"y = linalg.tensordot(v, v, 0)", b_tensordot0},
    {"y = tensordot(x, x, axes=([1, 0], [1, 0]))", b_tensordot_axes},
    {"y = tensordot(x, j, axes=(1, 0))", b_tensordot_pair},
    {"y = einsum(\"ij,j->i\", x, j)", b_einsum},
    {"y = einsum(\"i,i,i\", j, j, j)", b_einsum3},
    {"y = linalg.matrix_power(outer(v, v), 3)", b_matrix_power},
    {"y = matrix_power(outer(v, v), n=3)", b_matrix_power},
};

Test(composite, fc_spellings_build_the_c_api_graph) {
    fc_ctx *ctx = tu_host_ctx();
    fc_scope *s = fc_scope_open(ctx);
    float xv[12], vv[5];
    int8_t jv[4] = {-3, 0, 2, 5};
    for (int i = 0; i < 12; i++) xv[i] = 0.25f * (float)i - 1.0f;
    for (int i = 0; i < 5; i++) vv[i] = 1.5f - (float)i;
    fc_array *in[3] = {fc_from_host(ctx, FC_F32, FC_SHAPE(3, 4), xv),
                       fc_from_host(ctx, FC_F32, FC_SHAPE(5), vv),
                       fc_from_host(ctx, FC_I8, FC_SHAPE(4), jv)};
    for (size_t k = 0; k < sizeof fc_cases / sizeof *fc_cases; k++) {
        char text[512];
        snprintf(text, sizeof text, "x = input f32 [3, 4]\nv = input f32 [5]\nj = input i8 [4]\n"
                 "%s\nout y\n", fc_cases[k].text);
        fc_program *prog = NULL;
        cr_assert_eq(fc_program_parse(ctx, text, strlen(text), "t.fc", &prog), FC_OK,
                     "%s: %s", fc_cases[k].text, fc_errmsg(ctx));
        fc_array *out[1] = {NULL};
        cr_assert_eq(fc_program_build(prog, in, out), FC_OK, "%s: %s", fc_cases[k].text,
                     fc_errmsg(ctx));
        fc_array *want = fc_cases[k].build(ctx, in[0], in[1], in[2]);
        cr_assert_eq(fc_array_status(want), FC_OK, "%s: %s", fc_cases[k].text,
                     fc_array_errmsg(want));
        /* hash-consing: the same graph is the same node */
        cr_expect_eq(out[0], want, "%s: the .fc spelling built another graph", fc_cases[k].text);
        fc_program_destroy(prog);
    }
    fc_scope_close(s);
    fc_ctx_destroy(ctx);
}

/* Bad arguments in .fc: a parse or build error with the position, never a crash. */
Test(composite, fc_spelling_errors) {
    fc_ctx *ctx = tu_host_ctx();
    static const struct {
        const char *stmt, *needle;
    } bad[] = {
        {"y = split(x, 5, axis=1)", "equal sections"},
        {"y = split(x, 3)[3]", "index 3"},
        {"y = meshgrid(x, x)", "list"},
        {"y = tile(x, [2, -1])", "negative"},
        {"y = logsumexp(x, b=x)", "b"},
        {"y = logsumexp(x, return_sign=True)", "return_sign"},
        {"y = repeat(x, [1, 2])", "repeats"},
        {"y = round(x, 1.5)", "decimals"},
        {"y = meshgrid(x, indexing=\"ji\")", "indexing"},
        {"y = diagonal(x, 0, 1, 1)", "axis1"},
        {"y = nan_to_num(x, posinf=x)", "posinf"},
        {"y = roll(x, [1, 2, 3], axis=[0, 1])", "shift"},
        {"y = (2.5).round()", "needs an array"},
        {"y = einsum(x, x)", "must be a string"},
        {"y = einsum(\"ij,jk\", x1=x, x3=x)", "x3 given without x2"},
        {"y = einsum(\"ij->ii\", x)", "more than once"},
        {"y = einsum(\"ij,jk\", x)", "name 2"},
        {"y = tensordot(x, x, axes=[[0], [0], [1]])", "pair"},
        {"y = tensordot(x, x, axes=([0, 1], [0]))", "shape-mismatch"},
        {"y = tensordot(x, x, axes=1.5)", "axes"},
        {"y = fft.dot(x, x)", "not a function of fft"},
        {"y = dot(x, x)", "not aligned"},
        {"y = matrix_power(x, 2)", "square"},
        {"y = matrix_power(x, n=x)", "n must be an integer"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        char text[256];
        snprintf(text, sizeof text, "x = input f32 [3, 4]\n%s\nout y\n", bad[k].stmt);
        fc_program *prog = NULL;
        fc_status st = fc_program_parse(ctx, text, strlen(text), "t.fc", &prog);
        if (st == FC_OK) {
            fc_scope *s = fc_scope_open(ctx);
            fc_array *out[1];
            st = fc_program_build(prog, NULL, out);
            fc_scope_close(s);
            fc_program_destroy(prog);
        }
        cr_expect_neq(st, FC_OK, "%s: accepted", bad[k].stmt);
        cr_expect(strstr(fc_errmsg(ctx), "t.fc:") != NULL,
                  "%s: message '%s' has no position", bad[k].stmt, fc_errmsg(ctx));
        cr_expect(strstr(fc_errmsg(ctx), bad[k].needle) != NULL,
                  "%s: message '%s' does not say '%s'", bad[k].stmt, fc_errmsg(ctx),
                  bad[k].needle);
    }
    fc_ctx_destroy(ctx);
}

/* ---- fusion ------------------------------------------------------------------------------ */

static fcp_plan *plan_of(fc_ctx *ctx, fc_array *y) {
    cr_assert_eq(fc_array_status(y), FC_OK, "%s", fc_array_errmsg(y));
    fcp_plan *p = NULL;
    cr_assert_eq(fcp_plan_build(ctx, &y, 1, &p), FC_OK, "%s", fc_errmsg(ctx));
    return p;
}

static void expect_one_kernel(fc_ctx *ctx, const char *what, fc_array *y, int kind) {
    fcp_plan *p = plan_of(ctx, y);
    char *desc = fcp_plan_describe(p);
    bool ok = p->nkernel == 1 && (kind < 0 || (int)p->kernels[0].kind == kind);
    cr_expect(ok, "%s: %d kernels (want 1%s%s)\n%s", what, p->nkernel, kind < 0 ? "" : ", ",
              kind < 0 ? "" : fcp_kernel_kind_names[kind], desc ? desc : "");
    fcg_strfree(ctx, desc);
    fcp_plan_destroy(p);
}

/* logsumexp over the last axis of [64, 1024] f32 is max-reduce -> broadcast -> elementwise ->
 * sum -> elementwise: the row kernel keeps each row on chip and reads x once. */
Test(composite, logsumexp_rows_plan_one_row_kernel) {
    fc_ctx *ctx = tu_host_ctx();
    fc_scope *s = fc_scope_open(ctx);
    fc_array *x = wl_input(ctx, 0, FC_F32, FC_SHAPE(64, 1024));
    expect_one_kernel(ctx, "logsumexp(x, -1)", fc_logsumexp(x, FC_AXES(-1), false), FCP_KERNEL_ROW);
    expect_one_kernel(ctx, "logsumexp(x, -1, keepdims)", fc_logsumexp(x, FC_AXES(-1), true),
                      FCP_KERNEL_ROW);
    fc_scope_close(s);
    fc_ctx_destroy(ctx);
}

/* The other composites fuse into one kernel wherever the same expression by hand would. */
Test(composite, composites_plan_one_kernel) {
    fc_ctx *ctx = tu_host_ctx();
    fc_scope *s = fc_scope_open(ctx);
    fc_array *x = wl_input(ctx, 0, FC_F32, FC_SHAPE(512, 256));
    fc_array *v = wl_input(ctx, 1, FC_F32, FC_SHAPE(300));
    fc_array *y = wl_input(ctx, 2, FC_F32, FC_SHAPE(512, 256));
    expect_one_kernel(ctx, "tril", fc_tril(x, 3), FCP_KERNEL_EW);
    expect_one_kernel(ctx, "diag(v)", fc_diag(v, -2), FCP_KERNEL_EW);
    expect_one_kernel(ctx, "isclose", fc_isclose(x, y, 1e-5, 1e-8, true), FCP_KERNEL_EW);
    expect_one_kernel(ctx, "round", fc_round(x, 2), FCP_KERNEL_EW);
    expect_one_kernel(ctx, "nan_to_num", fc_nan_to_num(x, 0, NULL, NULL), FCP_KERNEL_EW);
    expect_one_kernel(ctx, "sinc", fc_sinc(x), FCP_KERNEL_EW);
    expect_one_kernel(ctx, "tile", fc_tile(v, 2, (const int64_t[]){3, 2}), FCP_KERNEL_EW);
    expect_one_kernel(ctx, "roll", fc_roll(x, 7, 1), FCP_KERNEL_EW);
    expect_one_kernel(ctx, "nansum rows", fc_nansum(x, FC_AXES(1), false), FCP_KERNEL_REDUCE);
    expect_one_kernel(ctx, "nanmean rows", fc_nanmean(x, FC_AXES(1), false), -1);
    expect_one_kernel(ctx, "count_nonzero", fc_count_nonzero(x, FC_AXES(1), false),
                      FCP_KERNEL_REDUCE);
    expect_one_kernel(ctx, "trace", fc_trace(x, 0, 0, 1), FCP_KERNEL_REDUCE);
    fc_scope_close(s);
    fc_ctx_destroy(ctx);
}

/* A contraction whose operands are laid out as its GEMM reads them is one library call and
 * no copy: matmul reads them where they are, a transposed one through cuBLAS's flag. What
 * sums nothing, or only batched inner products, is one fused kernel. */
Test(composite, contractions_plan_one_kernel) {
    fc_ctx *ctx = tu_host_ctx();
    fc_scope *s = fc_scope_open(ctx);
    fc_array *a = wl_input(ctx, 0, FC_F32, FC_SHAPE(64, 32));
    fc_array *b = wl_input(ctx, 1, FC_F32, FC_SHAPE(32, 48));
    fc_array *c = wl_input(ctx, 2, FC_F32, FC_SHAPE(48, 32));
    fc_array *p = wl_input(ctx, 3, FC_F32, FC_SHAPE(8, 64, 32));
    fc_array *q = wl_input(ctx, 4, FC_F32, FC_SHAPE(8, 32, 16));
    fc_array *r = wl_input(ctx, 5, FC_F32, FC_SHAPE(8, 16, 32));
    fc_array *v = wl_input(ctx, 6, FC_F32, FC_SHAPE(32));
    const int lib = FCP_KERNEL_LIB;
    expect_one_kernel(ctx, "dot", fc_dot(a, b), lib);
    expect_one_kernel(ctx, "dot(matrix, vector)", fc_dot(a, v), lib);
    expect_one_kernel(ctx, "inner", fc_inner(a, c), lib);
    expect_one_kernel(ctx, "tensordot", fc_tensordot(a, b, 1), lib);
    expect_one_kernel(ctx, "ij,jk->ik", fc_einsum(ctx, "ij,jk->ik", (fc_array *[]){a, b}, 2), lib);
    expect_one_kernel(ctx, "ij,kj->ik", fc_einsum(ctx, "ij,kj->ik", (fc_array *[]){a, c}, 2), lib);
    expect_one_kernel(ctx, "ji,jk->ik", fc_einsum(ctx, "ji,jk->ik", (fc_array *[]){b, b}, 2), lib);
    expect_one_kernel(ctx, "bij,bjk->bik",
                      fc_einsum(ctx, "bij,bjk->bik", (fc_array *[]){p, q}, 2), lib);
    expect_one_kernel(ctx, "bij,bkj->bik",
                      fc_einsum(ctx, "bij,bkj->bik", (fc_array *[]){p, r}, 2), lib);
    expect_one_kernel(ctx, "outer", fc_outer(v, v), FCP_KERNEL_EW);
    expect_one_kernel(ctx, "bij,bij->b", fc_einsum(ctx, "bij,bij->b", (fc_array *[]){p, p}, 2),
                      FCP_KERNEL_REDUCE);
    expect_one_kernel(ctx, "ij->", fc_einsum(ctx, "ij->", &a, 1), FCP_KERNEL_REDUCE);
    fc_scope_close(s);
    fc_ctx_destroy(ctx);
}

/* ---- the C API's edges ------------------------------------------------------------------ */

/* The contractions' argument errors, which the NumPy cases cannot express. */
Test(composite, contraction_arguments) {
    fc_ctx *ctx = tu_host_ctx(), *other = tu_host_ctx();
    fc_scope *s = fc_scope_open(ctx);
    fc_array *x = fc_random_uniform(ctx, FC_F64, FC_SHAPE(3, 4), 1);
    fc_array *y = fc_random_uniform(other, FC_F64, FC_SHAPE(4), 1);
    static const struct {
        const char *subs;
        int n;
        fc_status want;
    } bad[] = {{"ij", 0, FC_ERR_VALUE}, {"ij", 65, FC_ERR_VALUE}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        fc_array *ops[65];
        for (int k = 0; k < 65; k++) ops[k] = x;
        fc_array *r = fc_einsum(ctx, bad[i].subs, ops, bad[i].n);
        cr_expect_eq(fc_array_status(r), bad[i].want, "%s with %d operands: %s", bad[i].subs,
                     bad[i].n, fc_array_errmsg(r));
    }
    cr_expect_null(fc_einsum(NULL, "ij", &x, 1));
    cr_expect_eq(fc_array_status(fc_einsum(ctx, NULL, &x, 1)), FC_ERR_NULL);
    cr_expect_eq(fc_array_status(fc_einsum(ctx, "ij", NULL, 1)), FC_ERR_NULL);
    cr_expect_eq(fc_array_status(fc_einsum(ctx, "ij,j", (fc_array *[]){x, NULL}, 2)),
                 FC_ERR_NULL);
    cr_expect_eq(fc_array_status(fc_einsum(ctx, "ij,j", (fc_array *[]){x, y}, 2)),
                 FC_ERR_CONTEXT);
    cr_expect_eq(fc_array_status(fc_dot(x, y)), FC_ERR_CONTEXT);
    /* spaces are ignored, as NumPy ignores them */
    fc_array *want = fc_einsum(ctx, "ij,kj->ik", (fc_array *[]){x, x}, 2);
    cr_expect_eq(fc_einsum(ctx, " i j , k j -> i k ", (fc_array *[]){x, x}, 2), want);
    cr_expect_eq(fc_inner(x, x), want, "inner is the same graph");
    /* 64 operands: NumPy's limit, contracted pairwise */
    fc_array *ops[64];
    char subs[200] = "";
    for (int k = 0; k < 64; k++) {
        ops[k] = fc_full(ctx, FC_F64, FC_SHAPE(2), 1.0 + (k == 5));
        strcat(subs, k ? ",i" : "i");
    }
    strcat(subs, "->i");
    double v[2];
    cr_expect_eq(fc_read(fc_einsum(ctx, subs, ops, 64), v, 0, 2), FC_OK, "%s", fc_errmsg(ctx));
    cr_expect(v[0] == 2.0 && v[1] == 2.0, "%g %g", v[0], v[1]);
    /* intermediates beyond FC_MAX_DIMS in every order; a result of more dimensions */
    fc_array *u = fc_ones(ctx, FC_F32, FC_SHAPE(1, 1, 1, 1, 1, 1, 1, 1));
    fc_array *big = fc_einsum(ctx, "abcdefgh,abcdijkl,efghijkl->aei", (fc_array *[]){u, u, u},
                              3);
    cr_expect_eq(fc_array_status(big), FC_ERR_UNSUPPORTED, "%s", fc_array_errmsg(big));
    fc_array *w = fc_ones(ctx, FC_F32, FC_SHAPE(1, 1, 1, 1, 1));
    cr_expect_eq(fc_array_status(fc_einsum(ctx, "abcde,fghij", (fc_array *[]){w, w}, 2)),
                 FC_ERR_SHAPE);
    cr_expect_eq(fc_array_status(fc_tensordot(w, w, 0)), FC_ERR_SHAPE);
    cr_expect_eq(fc_array_status(fc_tensordot_axes(x, x, 1, NULL, NULL)), FC_ERR_NULL);
    cr_expect_eq(fc_array_status(fc_tensordot_axes(x, x, -1, NULL, NULL)), FC_ERR_INVALID);
    cr_expect_eq(fc_array_status(fc_kron(w, w)), FC_ERR_UNSUPPORTED);
    /* a negative power is the power of the inverse (graph/linalg.c), as in NumPy */
    float mv[4];
    fc_array *m = fc_matrix_power(fc_mul(fc_eye(ctx, FC_F32, 2, 2, 0), fc_f64(ctx, 2.0)), -2);
    cr_expect_eq(fc_array_dtype(m), FC_F32);
    cr_expect_eq(fc_read(m, mv, 0, 4), FC_OK, "%s", fc_errmsg(ctx));
    cr_expect(mv[0] == 0.25f && mv[1] == 0.0f && mv[2] == 0.0f && mv[3] == 0.25f, "%g %g %g %g",
              mv[0], mv[1], mv[2], mv[3]);
    fc_scope_close(s);
    fc_ctx_destroy(other);
    fc_ctx_destroy(ctx);
}

Test(composite, multi_output_arguments) {
    fc_ctx *ctx = tu_host_ctx();
    fc_scope *s = fc_scope_open(ctx);
    fc_array *x = fc_ones(ctx, FC_F32, FC_SHAPE(4, 6));
    fc_array *out[9] = {NULL};
    cr_expect_eq(fc_meshgrid(NULL, &x, 1, false, out), FC_ERR_NULL);
    cr_expect_eq(fc_meshgrid(ctx, NULL, 0, false, NULL), FC_OK); /* nothing to make */
    cr_expect_eq(fc_meshgrid(ctx, &x, 9, false, out), FC_ERR_INVALID);
    cr_expect_eq(fc_meshgrid(ctx, &x, 1, false, NULL), FC_ERR_NULL);
    cr_expect_eq(fc_meshgrid(ctx, (fc_array *[]){x, NULL}, 2, false, out), FC_ERR_NULL);
    cr_expect_eq(fc_array_status(out[0]), FC_ERR_NULL);
    cr_expect_eq(fc_array_status(out[1]), FC_ERR_NULL);
    cr_expect(strstr(fc_array_errmsg(out[1]), "meshgrid") != NULL);
    /* a poisoned input poisons every output with its own status and message */
    fc_array *bad = fc_reshape(x, FC_SHAPE(5, 5));
    cr_expect_eq(fc_meshgrid(ctx, (fc_array *[]){x, bad}, 2, true, out), FC_ERR_SHAPE);
    cr_expect_eq(fc_array_status(out[0]), FC_ERR_SHAPE);
    cr_expect(strstr(fc_array_errmsg(out[0]), "reshape") != NULL);
    cr_expect_eq(fc_split(bad, 2, 0, out), FC_ERR_SHAPE);
    cr_expect_eq(fc_array_status(out[1]), FC_ERR_SHAPE);

    memset(out, 0, sizeof out);
    cr_expect_eq(fc_split(NULL, 2, 0, out), FC_ERR_NULL);
    cr_expect_eq(fc_split(x, 0, 0, out), FC_ERR_INVALID);
    cr_expect(strstr(fc_errmsg(ctx), "split") != NULL);
    cr_expect_null(out[0], "split with 0 sections wrote an output");
    cr_expect_eq(fc_split(x, 2, 0, NULL), FC_ERR_NULL);
    cr_expect_eq(fc_split_at(x, -1, NULL, 0, out), FC_ERR_INVALID);
    cr_expect_eq(fc_split_at(x, 2, NULL, 0, out), FC_ERR_NULL);
    cr_expect_eq(fc_array_status(out[2]), FC_ERR_NULL);
    /* large and odd sections: views, no memory per piece beyond the node */
    cr_expect_eq(fc_split(x, 6, 1, out), FC_OK);
    for (int i = 0; i < 6; i++) {
        fc_shape sh = fc_array_shape(out[i]);
        cr_expect(sh.ndim == 2 && sh.dim[0] == 4 && sh.dim[1] == 1);
    }
    fc_scope_close(s);
    fc_ctx_destroy(ctx);
}

/* Every single-output composite: NULL gives NULL, a poisoned input is passed on as it is, a
 * result with no scope open is the caller's, and temporaries never outlive the call. */
Test(composite, ownership_and_poison) {
    fc_ctx *ctx = tu_host_ctx();
    fc_array *x = fc_random_uniform(ctx, FC_F32, FC_SHAPE(3, 4), 1); /* no scope: ours */
    fc_array *bad = fc_reshape(x, FC_SHAPE(7));
    cr_assert_eq(fc_array_status(bad), FC_ERR_SHAPE);
    size_t live = ctx->live_nodes;
    fc_array *(*const unary[])(fc_array *) = {fc_deg2rad, fc_rad2deg, fc_sinc, fc_positive,
                                              fc_fabs};
    fc_array *(*const binary[])(fc_array *, fc_array *) = {fc_dot, fc_vdot, fc_inner, fc_outer,
                                                           fc_kron};
    for (size_t i = 0; i < sizeof binary / sizeof *binary; i++) {
        cr_expect_null(binary[i](NULL, NULL));
        fc_array *p = binary[i](x, bad);
        cr_expect_eq(p, bad, "a poisoned input is passed on");
        fc_release(p);
        p = binary[i](x, NULL);
        cr_expect_eq(fc_array_status(p), FC_ERR_NULL);
        fc_release(p);
    }
    fc_array *pe = fc_einsum(ctx, "ij,j", (fc_array *[]){x, bad}, 2);
    cr_expect_eq(pe, bad, "einsum passes a poisoned operand on");
    fc_release(pe);
    cr_expect_eq(ctx->live_nodes, live, "%zu nodes left behind", ctx->live_nodes - live);
    for (size_t i = 0; i < sizeof unary / sizeof *unary; i++) {
        cr_expect_null(unary[i](NULL));
        fc_array *p = unary[i](bad);
        cr_expect_eq(p, bad, "a poisoned input is passed on");
        fc_release(p);
        fc_array *y = unary[i](x);
        cr_expect_eq(fc_array_status(y), FC_OK, "%s", fc_array_errmsg(y));
        fc_release(y);
        cr_expect_eq(ctx->live_nodes, live, "composite %zu left %zu nodes behind", i,
                     ctx->live_nodes - live);
    }
    fc_array *made[] = {
        fc_tile(x, 2, (const int64_t[]){2, 2}), fc_repeat(x, 2, 0), fc_roll(x, 1, FC_AXIS_NONE),
        fc_tril(x, 0), fc_diag(x, 1), fc_trace(x, 0, 0, 1), fc_nansum(x, FC_ALL, false),
        fc_nanmean(x, FC_AXES(1), true), fc_nanmax(x, FC_AXES(0), false),
        fc_nanargmin(x, 1, false), fc_count_nonzero(x, FC_ALL, false),
        fc_logsumexp(x, FC_AXES(1), false), fc_allclose(x, x, 1e-5, 1e-8, true),
        fc_round(x, 3), fc_nan_to_num(x, 0, NULL, NULL), fc_heaviside(x, x),
        fc_float_power(x, x), fc_identity(ctx, FC_F64, 4), fc_inner(x, x), fc_vdot(x, x),
        fc_outer(x, x), fc_kron(x, x), fc_tensordot_axes(x, x, 1, (const int[]){0},
                                                         (const int[]){0}),
        fc_tensordot(x, x, 0), fc_einsum(ctx, "ij->j", &x, 1),
        fc_einsum(ctx, "ij,ij,kj->k", (fc_array *[]){x, x, x}, 3)};
    for (size_t i = 0; i < sizeof made / sizeof *made; i++) {
        cr_expect_eq(fc_array_status(made[i]), FC_OK, "%zu: %s", i, fc_array_errmsg(made[i]));
        cr_expect_eq(made[i]->refs, 1, "result %zu has %u references", i, made[i]->refs);
        fc_release(made[i]);
    }
    cr_expect_eq(ctx->live_nodes, live, "%zu nodes left behind", ctx->live_nodes - live);
    fc_release(bad);
    fc_release(x);
    cr_expect_eq(ctx->live_nodes, 0);
    fc_ctx_destroy(ctx);
}

/* Allocation failures anywhere inside the composites: FC_OK or FC_ERR_NOMEM, the same values
 * when it works, and nothing leaked. */
#define FAULT_TERMS 10
static fc_status fault_workload(fc_ctx *ctx, double *out) {
    fc_scope *s = fc_scope_open(ctx);
    if (!s) return FC_ERR_NOMEM;
    fc_array *x = fc_reshape(fc_arange(ctx, FC_F64, -6, 6, 1), FC_SHAPE(3, 4));
    fc_array *m[2];
    fc_status st = fc_meshgrid(ctx, (fc_array *[]){fc_arange(ctx, FC_F32, 0, 3, 1), x}, 2,
                               false, m);
    fc_array *parts[2];
    if (st == FC_OK) st = fc_split(x, 2, 1, parts);
    if (st != FC_OK) {
        fc_scope_close(s);
        return st;
    }
    fc_array *terms[] = {
        fc_sum(m[1], FC_ALL, false),
        fc_sum(fc_tile(parts[1], 2, (const int64_t[]){2, 3}), FC_ALL, false),
        fc_trace(fc_triu(x, 1), 1, 0, 1),
        fc_nanmean(fc_roll(x, 5, FC_AXIS_NONE), FC_ALL, false),
        fc_logsumexp(fc_deg2rad(x), FC_ALL, false),
        fc_cast(fc_nanargmax(fc_round(fc_sinc(x), 2), FC_AXIS_NONE, false), FC_F64),
        fc_cast(fc_count_nonzero(fc_isclose(x, fc_nan_to_num(x, 0, NULL, NULL), 1e-5, 0, true),
                                 FC_ALL, false), FC_F64),
        fc_sum(fc_diag(fc_repeat(fc_diagonal(x, 0, 0, 1), 2, 0), -1), FC_ALL, false),
        fc_sum(fc_einsum(ctx, "ij,kj,k->i", (fc_array *[]){x, x, fc_arange(ctx, FC_F64, 0, 3, 1)},
                         3), FC_ALL, false),
        fc_sum(fc_kron(fc_outer(x, x), fc_tensordot(x, x, 2)), FC_ALL, false),
    };
    fc_array *flat[FAULT_TERMS];
    for (int i = 0; i < FAULT_TERMS; i++)
        flat[i] = fc_reshape(fc_cast(terms[i], FC_F64), FC_SHAPE(1));
    fc_array *acc = fc_concatenate(ctx, flat, FAULT_TERMS, 0);
    st = fc_read(acc, out, 0, FAULT_TERMS);
    fc_scope_close(s);
    return st;
}

Test(composite, allocation_failures) {
    double want[FAULT_TERMS], got[FAULT_TERMS];
    {
        fc_ctx *ctx = tu_host_ctx();
        cr_assert_eq(fault_workload(ctx, want), FC_OK, "%s", fc_errmsg(ctx));
        fc_ctx_destroy(ctx);
    }
    int failures = 0;
    for (long n = 1;; n++) {
        counting_alloc ca = {0};
        ca.fail_at = n;
        fc_allocator al = {ca_malloc, ca_realloc, ca_free, &ca};
        fc_ctx_options opts = {0};
        opts.backend = FC_BACKEND_HOST;
        opts.allocator = &al;
        fc_ctx *ctx = NULL;
        if (fc_ctx_create(&ctx, &opts) != FC_OK) {
            cr_assert_eq(ca.live, 0);
            continue;
        }
        fc_status st = fault_workload(ctx, got);
        fc_ctx_destroy(ctx);
        cr_assert_eq(ca.live, 0, "N=%ld: %ld blocks leaked", n, ca.live);
        cr_assert_eq(ca.size_mismatches, 0, "N=%ld: frees with the wrong size", n);
        if (st == FC_OK) {
            for (int i = 0; i < FAULT_TERMS; i++)
                cr_assert(got[i] == want[i] || (isnan(got[i]) && isnan(want[i])),
                          "N=%ld: value %d is %g, not %g", n, i, got[i], want[i]);
            if (!ca.injected) break;
        } else {
            cr_assert_eq(st, FC_ERR_NOMEM, "N=%ld: %s", n, fc_strerror(st));
            failures++;
        }
        cr_assert_lt(n, 200000);
    }
    cr_assert_gt(failures, 100);
}
