/*
 * tests/test_ops_ref.c - every op against NumPy 2.4, through the public API, on the host
 * backend.
 *
 * The cases under tests/data/ops_*.txt come from tests/gen_reference.py (its docstring gives
 * the format). Each case builds arrays with fc_from_host, applies ops with their public
 * functions, reads results with fc_read into a buffer poisoned with 0xA5 bytes, and compares
 * dtype, shape and values: exactly for bool and integers (and for float ops NumPy computes
 * exactly), within the case's tolerance otherwise. A coverage test asserts that every op of
 * ops.def (sources, elementwise, reductions, views, library calls) occurs in some case.
 */
#include <criterion/criterion.h>

#include "fusec.h"
#include "graph.h"

#include "ref_format.c"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the run ---------------------------------------------------------------------------- */

typedef struct run {
    fc_ctx *ctx;
    bool evaluate;          /* false: build only (the coverage pass) */
    bool covered[FCG_OP_COUNT];
    reff_report rep;
} run;

/* Marks every op in the graph under a. */
static void mark(run *r, const fc_array *a) {
    if (!a) return;
    r->covered[a->op] = true;
    for (int i = 0; i < a->nin; i++) mark(r, a->in[i]);
}

static int find_ew(const char *name) {
    for (int op = 0; op < FCG_OP_COUNT; op++)
        if (fcg_ops[op].kind == FCG_KIND_EW && strcmp(fcg_ops[op].pyname, name) == 0) return op;
    return -1;
}

static int64_t need_bound(reff_tokens *t) {
    const char *s = reff_need(t);
    if (strcmp(s, "nil") == 0) return FC_NIL;
    return strtoll(s, NULL, 10);
}

/* A register, or `none` (NULL). */
static fc_array *need_optional_reg(reff_tokens *t, fc_array **regs, int nreg) {
    const char *s = reff_need(t);
    if (strcmp(s, "none") == 0) return NULL;
    cr_assert(s[0] == '%', "%s: expected a register or none, got '%s'", t->path, s);
    int i = atoi(s + 1);
    cr_assert(i >= 0 && i < nreg, "%s: bad register %s", t->path, s);
    return regs[i];
}

/* A double's hex bits, or `none` (NaN). */
static double need_optional_double(reff_tokens *t) {
    const char *s = reff_need(t);
    if (strcmp(s, "none") == 0) return NAN;
    return reff_hex_double(strtoull(s, NULL, 16));
}

static fc_array *build_op(run *r, reff_tokens *t, fc_array **regs, int nreg) {
    fc_ctx *ctx = r->ctx;
    const char *name = reff_need(t);
    r->rep.opname = name;
    /* reductions */
    static const char *const reds[] = {"sum", "prod", "mean", "max", "min", "any", "all",
                                       "count_nonzero"};
    fc_array *(*const redfn[])(fc_array *, fc_axes, bool) = {
        fc_sum, fc_prod, fc_mean, fc_max, fc_min, fc_any, fc_all, fc_count_nonzero};
    for (size_t i = 0; i < sizeof reds / sizeof *reds; i++) {
        if (strcmp(name, reds[i]) == 0) {
            fc_array *x = reff_need_reg(t, regs, nreg);
            fc_axes ax = reff_need_axes(t);
            bool keep = reff_need_int(t) != 0;
            return redfn[i](x, ax, keep);
        }
    }
    if (strcmp(name, "var") == 0 || strcmp(name, "std") == 0) {
        fc_array *x = reff_need_reg(t, regs, nreg);
        fc_axes ax = reff_need_axes(t);
        bool keep = reff_need_int(t) != 0;
        int ddof = (int)reff_need_int(t);
        return name[0] == 'v' ? fc_var(x, ax, keep, ddof) : fc_std(x, ax, keep, ddof);
    }
    if (strcmp(name, "norm") == 0) {
        fc_array *x = reff_need_reg(t, regs, nreg);
        fc_axes ax = reff_need_axes(t);
        bool keep = reff_need_int(t) != 0;
        return fc_norm(x, ax, keep, (fc_norm_ord)reff_need_int(t));
    }
    if (strcmp(name, "argmax") == 0 || strcmp(name, "argmin") == 0) {
        fc_array *x = reff_need_reg(t, regs, nreg);
        const char *a = reff_need(t);
        int axis = strcmp(a, "none") == 0 ? FC_AXIS_NONE : atoi(a);
        bool keep = reff_need_int(t) != 0;
        return name[3] == 'm' && name[4] == 'a' ? fc_argmax(x, axis, keep) : fc_argmin(x, axis, keep);
    }
    if (strcmp(name, "cumsum") == 0 || strcmp(name, "cumprod") == 0 ||
        strcmp(name, "cummax") == 0 || strcmp(name, "cummin") == 0) {
        fc_array *x = reff_need_reg(t, regs, nreg);
        const char *a = reff_need(t);
        int axis = strcmp(a, "none") == 0 ? FC_AXIS_NONE : atoi(a);
        return name[3] == 's' ? fc_cumsum(x, axis) : name[3] == 'p' ? fc_cumprod(x, axis)
               : name[4] == 'a'                    ? fc_cummax(x, axis)
                                                   : fc_cummin(x, axis);
    }
    if (strcmp(name, "take") == 0) {
        fc_array *x = reff_need_reg(t, regs, nreg), *ind = reff_need_reg(t, regs, nreg);
        const char *a = reff_need(t);
        int axis = strcmp(a, "none") == 0 ? FC_AXIS_NONE : atoi(a);
        const char *m = reff_need(t);
        fc_take_mode mode = strcmp(m, "wrap") == 0 ? FC_TAKE_WRAP
                            : strcmp(m, "clip") == 0 ? FC_TAKE_CLIP : FC_TAKE_RAISE;
        return fc_take(x, ind, axis, mode);
    }
    if (strncmp(name, "scatter_", 8) == 0 || strcmp(name, "put") == 0) {
        /* scatter_* %X %I %V AXIS MODE ; put %X %I %V MODE */
        fc_array *x = reff_need_reg(t, regs, nreg), *ind = reff_need_reg(t, regs, nreg);
        fc_array *v = reff_need_reg(t, regs, nreg);
        int axis = 0;
        if (name[0] == 's') {
            const char *a = reff_need(t);
            axis = strcmp(a, "none") == 0 ? FC_AXIS_NONE : atoi(a);
        }
        const char *m = reff_need(t);
        fc_take_mode mode = strcmp(m, "wrap") == 0   ? FC_TAKE_WRAP
                            : strcmp(m, "clip") == 0 ? FC_TAKE_CLIP
                            : strcmp(m, "drop") == 0 ? FC_TAKE_DROP
                                                     : FC_TAKE_RAISE;
        if (name[0] == 'p') return fc_put(x, ind, v, mode);
        return strcmp(name, "scatter_add") == 0   ? fc_scatter_add(x, ind, v, axis, mode)
               : strcmp(name, "scatter_max") == 0 ? fc_scatter_max(x, ind, v, axis, mode)
                                                  : fc_scatter_min(x, ind, v, axis, mode);
    }
    if (strcmp(name, "put_along_axis") == 0) { /* put_along_axis %X %I %V AXIS */
        fc_array *x = reff_need_reg(t, regs, nreg), *ind = reff_need_reg(t, regs, nreg);
        fc_array *v = reff_need_reg(t, regs, nreg);
        const char *a = reff_need(t);
        return fc_put_along_axis(x, ind, v, strcmp(a, "none") == 0 ? FC_AXIS_NONE : atoi(a));
    }
    if (strcmp(name, "flatnonzero") == 0) return fc_flatnonzero(reff_need_reg(t, regs, nreg));
    if (strcmp(name, "argwhere") == 0) return fc_argwhere(reff_need_reg(t, regs, nreg));
    if (strcmp(name, "nonzero") == 0) { /* nonzero %X AXIS: the coordinates along AXIS */
        fc_array *x = reff_need_reg(t, regs, nreg), *c[FC_MAX_DIMS];
        int64_t d = reff_need_int(t);
        fc_status st = fc_nonzero(x, c);
        cr_assert_eq(st, FC_OK, "nonzero: %s", fc_errmsg(ctx)); /* errors: test_graph.c */
        return c[d];
    }
    if (strcmp(name, "bincount") == 0) { /* bincount %X %W|none MINLENGTH */
        fc_array *x = reff_need_reg(t, regs, nreg);
        fc_array *wt = need_optional_reg(t, regs, nreg);
        return fc_bincount(x, wt, reff_need_int(t));
    }
    if (strncmp(name, "histogram", 9) == 0) { /* histogram %X BINS LO HI %W|none; _bin_edges */
        fc_array *x = reff_need_reg(t, regs, nreg);
        int64_t bins = reff_need_int(t);
        double lo = need_optional_double(t), hi = need_optional_double(t);
        if (name[9] == '_') return fc_histogram_bin_edges(x, bins, lo, hi);
        return fc_histogram(x, bins, lo, hi, need_optional_reg(t, regs, nreg));
    }
    if (strcmp(name, "searchsorted") == 0) {
        fc_array *x = reff_need_reg(t, regs, nreg), *v = reff_need_reg(t, regs, nreg);
        return fc_searchsorted(x, v, strcmp(reff_need(t), "right") == 0 ? FC_SIDE_RIGHT
                                                                         : FC_SIDE_LEFT);
    }
    if (strcmp(name, "take_along_axis") == 0) {
        fc_array *x = reff_need_reg(t, regs, nreg), *ind = reff_need_reg(t, regs, nreg);
        const char *a = reff_need(t);
        return fc_take_along_axis(x, ind, strcmp(a, "none") == 0 ? FC_AXIS_NONE : atoi(a));
    }
    if (strcmp(name, "cast") == 0) {
        fc_array *x = reff_need_reg(t, regs, nreg);
        return fc_cast(x, reff_need_dtype(t));
    }
    /* views */
    if (strcmp(name, "reshape") == 0) {
        fc_array *x = reff_need_reg(t, regs, nreg);
        return fc_reshape(x, reff_need_shape(t));
    }
    if (strcmp(name, "transpose") == 0) return fc_transpose(reff_need_reg(t, regs, nreg));
    if (strcmp(name, "permute") == 0) {
        fc_array *x = reff_need_reg(t, regs, nreg);
        fc_axes p = {(int)reff_need_int(t), {0}};
        for (int i = 0; i < p.n; i++) p.axis[i] = (int)reff_need_int(t);
        return fc_permute(x, p);
    }
    if (strcmp(name, "broadcast_to") == 0) {
        fc_array *x = reff_need_reg(t, regs, nreg);
        return fc_broadcast_to(x, reff_need_shape(t));
    }
    if (strcmp(name, "expand_dims") == 0) {
        fc_array *x = reff_need_reg(t, regs, nreg);
        return fc_expand_dims(x, (int)reff_need_int(t));
    }
    if (strcmp(name, "squeeze") == 0) {
        fc_array *x = reff_need_reg(t, regs, nreg);
        return fc_squeeze(x, reff_need_axes(t));
    }
    if (strcmp(name, "flip") == 0) {
        fc_array *x = reff_need_reg(t, regs, nreg);
        return fc_flip(x, reff_need_axes(t));
    }
    if (strcmp(name, "index") == 0 || strcmp(name, "setitem") == 0) {
        /* index %X N ENTRY... ; setitem %X %V N ENTRY... */
        fc_array *x = reff_need_reg(t, regs, nreg);
        fc_array *value = name[0] == 's' ? reff_need_reg(t, regs, nreg) : NULL;
        int n = (int)reff_need_int(t);
        fc_idx idx[16];
        cr_assert(n <= 16);
        for (int i = 0; i < n; i++) {
            const char *k = reff_need(t);
            if (k[0] == 's') {
                int64_t a = need_bound(t), b = need_bound(t), c = need_bound(t);
                idx[i] = FC_S(a, b, c);
            } else if (strcmp(k, "ia") == 0) { /* an index array */
                idx[i] = FC_ARRAY_IDX(reff_need_reg(t, regs, nreg));
            } else if (k[0] == 'i') {
                idx[i] = FC_AT(reff_need_int(t));
            } else if (k[0] == 'n') {
                idx[i] = FC_NEWAXIS;
            } else {
                idx[i] = FC_ELLIPSIS;
            }
        }
        return value ? fc_setitem(x, n, idx, value) : fc_index(x, n, idx);
    }
    if (strcmp(name, "pad") == 0) {
        fc_array *x = reff_need_reg(t, regs, nreg);
        int n = (int)reff_need_int(t);
        int64_t w[FC_MAX_DIMS][2];
        for (int i = 0; i < n; i++) {
            w[i][0] = reff_need_int(t);
            w[i][1] = reff_need_int(t);
        }
        fc_pad_mode mode = (fc_pad_mode)reff_need_int(t);
        return fc_pad(x, n, (const int64_t(*)[2])w, mode, reff_need_hexdouble(t));
    }
    if (strcmp(name, "concatenate") == 0 || strcmp(name, "stack") == 0) {
        int n = (int)reff_need_int(t);
        fc_array *xs[16];
        cr_assert(n <= 16);
        for (int i = 0; i < n; i++) xs[i] = reff_need_reg(t, regs, nreg);
        int axis = (int)reff_need_int(t);
        return name[0] == 'c' ? fc_concatenate(ctx, xs, n, axis) : fc_stack(ctx, xs, n, axis);
    }
    if (strcmp(name, "matmul") == 0) {
        fc_array *a = reff_need_reg(t, regs, nreg);
        return fc_matmul(a, reff_need_reg(t, regs, nreg));
    }
    if (strcmp(name, "sort") == 0 || strcmp(name, "argsort") == 0) { /* sort %X AXIS|none */
        fc_array *x = reff_need_reg(t, regs, nreg);
        const char *a = reff_need(t);
        int axis = strcmp(a, "none") == 0 ? FC_AXIS_NONE : atoi(a);
        return name[0] == 's' ? fc_sort(x, axis) : fc_argsort(x, axis);
    }
    if (strcmp(name, "fft") == 0 || strcmp(name, "ifft") == 0) {
        fc_array *x = reff_need_reg(t, regs, nreg);
        int axis = (int)reff_need_int(t);
        return name[0] == 'f' ? fc_fft(x, axis) : fc_ifft(x, axis);
    }
    /* creation */
    if (strcmp(name, "arange") == 0) {
        fc_dtype dt = reff_need_dtype(t);
        double a = reff_need_hexdouble(t), b = reff_need_hexdouble(t), c = reff_need_hexdouble(t);
        return fc_arange(ctx, dt, a, b, c);
    }
    if (strcmp(name, "linspace") == 0) {
        fc_dtype dt = reff_need_dtype(t);
        double a = reff_need_hexdouble(t), b = reff_need_hexdouble(t);
        int64_t num = reff_need_int(t);
        return fc_linspace(ctx, dt, a, b, num, reff_need_int(t) != 0);
    }
    if (strcmp(name, "eye") == 0) {
        fc_dtype dt = reff_need_dtype(t);
        int64_t n = reff_need_int(t), m = reff_need_int(t);
        return fc_eye(ctx, dt, n, m, reff_need_int(t));
    }
    if (strcmp(name, "full") == 0) {
        fc_dtype dt = reff_need_dtype(t);
        fc_shape sh = reff_need_shape(t);
        return fc_full(ctx, dt, sh, reff_need_hexdouble(t));
    }
    if (strcmp(name, "full_complex") == 0) {
        fc_dtype dt = reff_need_dtype(t);
        fc_shape sh = reff_need_shape(t);
        double re = reff_need_hexdouble(t);
        return fc_full_complex(ctx, dt, sh, re, reff_need_hexdouble(t));
    }
    if (strcmp(name, "zeros") == 0 || strcmp(name, "ones") == 0 || strcmp(name, "empty") == 0) {
        fc_dtype dt = reff_need_dtype(t);
        fc_shape sh = reff_need_shape(t);
        return name[0] == 'z' ? fc_zeros(ctx, dt, sh) : name[0] == 'o' ? fc_ones(ctx, dt, sh)
                                                                       : fc_empty(ctx, dt, sh);
    }
    if (strcmp(name, "zeros_like") == 0) return fc_zeros_like(reff_need_reg(t, regs, nreg));
    if (strcmp(name, "ones_like") == 0) return fc_ones_like(reff_need_reg(t, regs, nreg));
    if (strcmp(name, "empty_like") == 0) return fc_empty_like(reff_need_reg(t, regs, nreg));
    if (strcmp(name, "full_like") == 0) {
        fc_array *x = reff_need_reg(t, regs, nreg);
        return fc_full_like(x, reff_need_hexdouble(t));
    }
    if (strcmp(name, "random") == 0) {
        fc_dtype dt = reff_need_dtype(t);
        fc_shape sh = reff_need_shape(t);
        return fc_random_uniform(ctx, dt, sh, (uint64_t)reff_need_int(t));
    }
    if (strcmp(name, "standard_normal") == 0) { /* dtype shape seed stream */
        fc_dtype dt = reff_need_dtype(t);
        fc_shape sh = reff_need_shape(t);
        fc_rng g = fc_rng_init((uint64_t)reff_need_int(t));
        g.stream = (uint64_t)reff_need_int(t);
        return fc_rng_standard_normal(ctx, &g, dt, sh);
    }
    if (strcmp(name, "integers") == 0) { /* dtype shape low high seed stream */
        fc_dtype dt = reff_need_dtype(t);
        fc_shape sh = reff_need_shape(t);
        int64_t low = reff_need_int(t), high = reff_need_int(t);
        fc_rng g = fc_rng_init((uint64_t)reff_need_int(t));
        g.stream = (uint64_t)reff_need_int(t);
        return fc_rng_integers(ctx, &g, low, high, dt, sh);
    }
    if (strcmp(name, "scalar") == 0) {
        fc_dtype dt = reff_need_dtype(t);
        return fc_scalar(ctx, dt, reff_need_hexdouble(t));
    }
    /* elementwise, through the tables the .fc parser uses */
    int op = find_ew(name);
    cr_assert(op >= 0, "%s: unknown op '%s'", t->path, name);
    int nin = fcg_ops[op].nin;
    fc_array *in[3];
    for (int i = 0; i < nin; i++) in[i] = reff_need_reg(t, regs, nreg);
    if (nin == 1) {
        cr_assert_not_null(fcg_unary_api[op], "no public function for %s", name);
        return fcg_unary_api[op](in[0]);
    }
    if (nin == 2) {
        cr_assert_not_null(fcg_binary_api[op], "no public function for %s", name);
        return fcg_binary_api[op](in[0], in[1]);
    }
    cr_assert_not_null(fcg_ternary_api[op], "no public function for %s", name);
    return fcg_ternary_api[op](in[0], in[1], in[2]);
}

static void run_file(run *r, const char *file) {
    reff_tokens t;
    reff_open(&t, file);
    r->rep.file = file;
    const char *s;
    while ((s = reff_tok(&t)) != NULL) {
        cr_assert_str_eq(s, "case", "%s: expected 'case', got '%s'", t.path, s);
        snprintf(r->rep.casename, sizeof r->rep.casename, "%s", reff_need(&t));
        r->rep.cases++;
        r->rep.opname = NULL;
        fc_scope *scope = fc_scope_open(r->ctx);
        cr_assert_not_null(scope);
        fc_array *regs[64];
        int nreg = 0;
        double rtol = 0, atol = 0;
        for (;;) {
            const char *k = reff_need(&t);
            if (strcmp(k, "end") == 0) break;
            fc_array *made = NULL;
            if (strcmp(k, "a") == 0) {
                made = reff_need_array(&t, r->ctx);
            } else if (strcmp(k, "w") == 0) {
                made = reff_need_weak(&t, r->ctx);
            } else if (strcmp(k, "o") == 0) {
                made = build_op(r, &t, regs, nreg);
                cr_assert_not_null(made, "%s returned NULL", r->rep.opname);
                mark(r, made);
            } else if (strcmp(k, "tol") == 0) {
                rtol = strtod(reff_need(&t), NULL);
                atol = strtod(reff_need(&t), NULL);
            } else if (strcmp(k, "x") == 0) {
                cr_assert_gt(nreg, 0);
                reff_check_value(&r->rep, &t, r->ctx, regs[nreg - 1], rtol, atol, r->evaluate);
            } else if (strcmp(k, "err") == 0 || strcmp(k, "evalerr") == 0) {
                cr_assert_gt(nreg, 0);
                fc_status want = reff_need_status(&t);
                fc_array *a = regs[nreg - 1];
                r->rep.checks++;
                if (!r->evaluate) continue;
                if (k[0] == 'e' && k[1] == 'r') {
                    if (fc_array_status(a) != want)
                        reff_fail(&r->rep, "status %s, expected %s (NumPy raises)",
                                  fc_strerror(fc_array_status(a)), fc_strerror(want));
                } else if (fc_array_status(a) != FC_OK) {
                    reff_fail(&r->rep, "status %s at construction, expected %s at evaluation",
                              fc_strerror(fc_array_status(a)), fc_strerror(want));
                } else {
                    unsigned char buf[64];
                    int64_t cnt = fc_array_size(a) < 4 ? fc_array_size(a) : 4;
                    fc_status st = fc_read(a, buf, 0, cnt);
                    if (st != want)
                        reff_fail(&r->rep, "fc_read gave %s, expected %s", fc_strerror(st),
                                  fc_strerror(want));
                    /* a composite (put, setitem, put_along_axis) fails in an op it is made
                     * of: the message names that op and the index */
                    else if (!strstr(fc_errmsg(r->ctx), fcg_ops[a->op].pyname) &&
                             !((strcmp(r->rep.opname, "put") == 0 ||
                                strcmp(r->rep.opname, "setitem") == 0 ||
                                strcmp(r->rep.opname, "put_along_axis") == 0) &&
                               strstr(fc_errmsg(r->ctx), "out of bounds")))
                        reff_fail(&r->rep, "message '%s' does not name the op", fc_errmsg(r->ctx));
                    else if (a->host != NULL)
                        reff_fail(&r->rep, "a failed evaluation left a value");
                }
            } else {
                cr_assert_fail("%s: unknown word '%s'", t.path, k);
            }
            if (made) {
                cr_assert_lt(nreg, 64);
                regs[nreg++] = made;
            }
        }
        fc_scope_close(scope);
    }
    reff_close(&t);
}

static void run_reference(const char *file, int min_cases) {
    run r;
    memset(&r, 0, sizeof r);
    r.ctx = tu_host_ctx();
    r.evaluate = true;
    run_file(&r, file);
    fc_ctx_destroy(r.ctx);
    cr_log_info("%s: %d cases, %d checks, %d failures", file, r.rep.cases, r.rep.checks,
                r.rep.failures);
    cr_expect_geq(r.rep.cases, min_cases, "%s has only %d cases", file, r.rep.cases);
    cr_assert_eq(r.rep.failures, 0, "%s: %d of %d checks disagree with NumPy (first %d logged)",
                 file, r.rep.failures, r.rep.checks, REFF_MAX_REPORTS);
}

Test(ops_ref, elementwise) { run_reference("ops_ew.txt", 3000); }
Test(ops_ref, special_values) { run_reference("ops_special.txt", 100); }
Test(ops_ref, reductions) { run_reference("ops_reduce.txt", 100); }
Test(ops_ref, views) { run_reference("ops_views.txt", 40); }
Test(ops_ref, creation) { run_reference("ops_creation.txt", 300); }
Test(ops_ref, matmul) { run_reference("ops_matmul.txt", 60); }
Test(ops_ref, fft) { run_reference("ops_fft.txt", 10); } /* tests/gen_fft.py */
Test(ops_ref, scans) { run_reference("ops_scan.txt", 150); } /* tests/gen_scan.py */
Test(ops_ref, take) { run_reference("ops_take.txt", 100); } /* tests/gen_take.py */
Test(ops_ref, scatter) { run_reference("ops_scatter.txt", 100); } /* tests/gen_scatter.py */
Test(ops_ref, sort) { run_reference("ops_sort.txt", 16); } /* tests/gen_sort.py */

/* ---- coverage: no op of ops.def goes untested ------------------------------------------- */

static const char *const ref_files[] = {"ops_ew.txt", "ops_special.txt", "ops_reduce.txt",
                                        "ops_views.txt", "ops_creation.txt", "ops_matmul.txt",
                                        "ops_fft.txt", "ops_scan.txt", "ops_take.txt",
                                        "ops_scatter.txt", "ops_sort.txt"};

Test(ops_ref, every_op_has_a_reference_case) {
    run r;
    memset(&r, 0, sizeof r);
    r.ctx = tu_host_ctx();
    for (size_t f = 0; f < sizeof ref_files / sizeof *ref_files; f++) run_file(&r, ref_files[f]);
    /* program inputs (placeholders) are covered by unbound_program_input below */
    r.covered[FCG_OP_INPUT] = true;
    fc_ctx_destroy(r.ctx);
    int missing = 0;
    for (int op = 0; op < FCG_OP_COUNT; op++) {
        fcg_kind k = fcg_ops[op].kind;
        if (k == FCG_KIND_SPECIAL || r.covered[op]) continue;
        /* user kernels run user code: tests/test_user_kernels.c, test_codegen_emulated.c */
        if (k == FCG_KIND_USER || fcg_ops[op].red.combine == FCG_COMBINE_USER) continue;
        /* dense linear algebra: tests/data/ops_linalg.txt (tests/gen_linalg.py), replayed by
         * tests/test_composite.c, whose runner has slogdet's two results and the errors
         * found at evaluation */
        if (fcg_op_is_linalg(op)) continue;
        /* the sparse product: tests/data/sparse.txt (tests/gen_sparse.py), replayed by
         * tests/test_sparse.c */
        if (op == FCG_OP_CSR_MATMUL) continue;
        /* convolution: tests/data/ops_convolve.txt (tests/gen_convolve.py), replayed by
         * tests/test_composite.c with NumPy's and SciPy's functions around the node */
        if (op == FCG_OP_STENCIL2D) continue;
        cr_log_error("op %s (%s) has no reference case", fcg_ops[op].pyname, fcg_ops[op].cname);
        missing++;
    }
    cr_assert_eq(missing, 0, "%d ops have no reference case", missing);
}

Test(ops_ref, unbound_program_input) {
    fc_ctx *ctx = tu_host_ctx();
    const char *text = "x = input f32 [3]\ny = exp(x) + 1\nout y\n";
    fc_program *prog = NULL;
    cr_assert_eq(fc_program_parse(ctx, text, strlen(text), "t.fc", &prog), FC_OK, "%s",
                 fc_errmsg(ctx));
    fc_scope *s = fc_scope_open(ctx);
    fc_array *out[1] = {NULL};
    cr_assert_eq(fc_program_build(prog, NULL, out), FC_OK, "%s", fc_errmsg(ctx));
    bool has_input = false;
    for (const fc_array *a = out[0]; a; a = a->nin ? a->in[0] : NULL)
        has_input = has_input || a->op == FCG_OP_INPUT;
    cr_assert(has_input, "placeholder inputs are not INPUT nodes");
    float v[3];
    cr_assert_eq(fc_read(out[0], v, 0, 3), FC_ERR_UNBOUND);
    cr_assert(strstr(fc_errmsg(ctx), "input") != NULL, "message: %s", fc_errmsg(ctx));
    cr_assert_null(out[0]->host);
    /* the same program with data evaluates */
    float x[3] = {0.5f, -1.0f, 2.0f};
    fc_array *in[1] = {fc_from_host(ctx, FC_F32, FC_SHAPE(3), x)};
    cr_assert_eq(fc_program_build(prog, in, out), FC_OK, "%s", fc_errmsg(ctx));
    cr_assert_eq(fc_read(out[0], v, 0, 3), FC_OK, "%s", fc_errmsg(ctx));
    for (int i = 0; i < 3; i++) cr_expect_float_eq(v[i], expf(x[i]) + 1.0f, 1e-6f);
    fc_scope_close(s);
    fc_program_destroy(prog);
    fc_ctx_destroy(ctx);
}

/* ---- random ----------------------------------------------------------------------------- */

static double *random_values(fc_ctx *ctx, fc_dtype dt, int64_t n, uint64_t seed) {
    fc_scope *s = fc_scope_open(ctx);
    fc_array *a = fc_cast(fc_random_uniform(ctx, dt, FC_SHAPE(n), seed),
                          dt == FC_C64 || dt == FC_C128 ? FC_C128 : FC_F64);
    size_t comps = (dt == FC_C64 || dt == FC_C128) ? 2 : 1;
    double *v = malloc((size_t)n * comps * sizeof(double));
    cr_assert_not_null(v);
    memset(v, 0xA5, (size_t)n * comps * sizeof(double));
    cr_assert_eq(fc_read(a, v, 0, n), FC_OK, "%s", fc_errmsg(ctx));
    fc_scope_close(s);
    return v;
}

Test(ops_ref, random_uniform_statistics) {
    fc_ctx *ctx = tu_host_ctx();
    const fc_dtype dts[] = {FC_F16, FC_BF16, FC_F32, FC_F64, FC_C64, FC_C128};
    const int64_t n = 100000;
    for (size_t k = 0; k < sizeof dts / sizeof *dts; k++) {
        fc_dtype dt = dts[k];
        size_t m = (size_t)n * ((dt == FC_C64 || dt == FC_C128) ? 2 : 1);
        double *a = random_values(ctx, dt, n, 7), *b = random_values(ctx, dt, n, 7);
        double *c = random_values(ctx, dt, n, 8);
        double sum = 0;
        size_t differ = 0;
        for (size_t i = 0; i < m; i++) {
            cr_assert(a[i] >= 0.0 && a[i] < 1.0, "%s: value %g outside [0, 1)",
                      reff_dtype_names[dt], a[i]);
            cr_assert_eq(a[i], b[i], "%s: not deterministic at %zu", reff_dtype_names[dt], i);
            sum += a[i];
            differ += a[i] != c[i];
        }
        double mean = sum / (double)m;
        /* the mean of 1e5 uniforms has sd 0.0009; bf16 has only 256 levels (bias 1/512) */
        double slack = dt == FC_BF16 ? 0.0045 : 0.005;
        cr_expect(fabs(mean - 0.5) < slack || (dt == FC_BF16 && fabs(mean - (0.5 - 1.0 / 512)) < slack),
                  "%s: mean %g", reff_dtype_names[dt], mean);
        /* coarse dtypes repeat values by chance: f16 has 2048 levels, bf16 256 */
        double min_differ = dt == FC_BF16 ? 0.98 : dt == FC_F16 ? 0.99 : 0.9999;
        cr_expect((double)differ > min_differ * (double)m, "%s: seeds 7 and 8 agree on %zu of %zu",
                  reff_dtype_names[dt], m - differ, m);
        free(a);
        free(b);
        free(c);
    }
    fc_ctx_destroy(ctx);
}

/* ---- evaluation mechanics --------------------------------------------------------------- */

/* Several outputs sharing subgraphs evaluate together; a value read later is the same. */
Test(ops_ref, shared_subgraphs_and_several_outputs) {
    fc_ctx *ctx = tu_host_ctx();
    fc_scope *s = fc_scope_open(ctx);
    double xs[12];
    for (int i = 0; i < 12; i++) xs[i] = 0.25 * (i + 1);
    fc_array *x = fc_from_host(ctx, FC_F64, FC_SHAPE(3, 4), xs);
    fc_array *e = fc_exp(x);                       /* shared by all three outputs */
    fc_array *t = fc_transpose(e);                 /* a view output */
    fc_array *m = fc_sum(e, FC_AXES(1), true);
    fc_array *y = fc_div(e, m);
    fc_array *outs[4] = {y, t, m, y};
    cr_assert_eq(fc_eval(ctx, outs, 4), FC_OK, "%s", fc_errmsg(ctx));
    cr_assert_not_null(y->host);
    cr_assert_not_null(t->host);
    cr_assert_not_null(m->host);
    cr_assert_null(e->host, "an intermediate kept a value");
    double yv[12], tv[12], mv[3];
    cr_assert_eq(fc_read(y, yv, 0, 12), FC_OK);
    cr_assert_eq(fc_read(t, tv, 0, 12), FC_OK);
    cr_assert_eq(fc_read(m, mv, 0, 3), FC_OK);
    for (int i = 0; i < 3; i++) {
        double sum = 0;
        for (int j = 0; j < 4; j++) sum += exp(xs[i * 4 + j]);
        cr_expect(fabs(mv[i] - sum) <= 1e-12 * sum);
        for (int j = 0; j < 4; j++) {
            cr_expect(fabs(yv[i * 4 + j] - exp(xs[i * 4 + j]) / sum) < 1e-15);
            cr_expect_eq(tv[j * 3 + i], exp(xs[i * 4 + j]));
        }
    }
    fc_scope_close(s);
    fc_ctx_destroy(ctx);
}

/* A failing evaluation gives no requested array a value. */
Test(ops_ref, failure_attaches_nothing) {
    fc_ctx *ctx = tu_host_ctx();
    fc_scope *s = fc_scope_open(ctx);
    int32_t b[3] = {2, 3, 4}, e[3] = {1, 2, -1};
    fc_array *base = fc_from_host(ctx, FC_I32, FC_SHAPE(3), b);
    fc_array *ok = fc_add(base, fc_i64(ctx, 1));
    fc_array *bad = fc_pow(base, fc_from_host(ctx, FC_I32, FC_SHAPE(3), e));
    fc_array *outs[2] = {ok, bad};
    cr_assert_eq(fc_eval(ctx, outs, 2), FC_ERR_VALUE);
    cr_assert(strstr(fc_errmsg(ctx), "power") != NULL, "message: %s", fc_errmsg(ctx));
    cr_assert_null(ok->host);
    cr_assert_null(bad->host);
    int32_t v[3];
    cr_assert_eq(fc_read(ok, v, 0, 3), FC_OK);
    cr_assert_eq(v[0], 3);
    cr_assert_eq(v[2], 5);
    fc_scope_close(s);
    fc_ctx_destroy(ctx);
}

/* ---- allocation failures inside the host backend ---------------------------------------- */

typedef struct fail_alloc {
    long calls, fail_at, live;
} fail_alloc;

typedef union header {
    size_t size;
    max_align_t align;
} header;

static void *fa_malloc(void *user, size_t size) {
    fail_alloc *fa = user;
    if (++fa->calls == fa->fail_at) return NULL;
    header *h = malloc(sizeof *h + size);
    if (!h) return NULL;
    h->size = size;
    fa->live++;
    return h + 1;
}

static void fa_free(void *user, void *p, size_t size) {
    fail_alloc *fa = user;
    if (!p) return;
    header *h = (header *)p - 1;
    cr_assert_eq(h->size, size, "freed with size %zu, allocated %zu", size, h->size);
    fa->live--;
    free(h);
}

/* A graph with every kind of node the host evaluates. */
static fc_status fault_workload(fc_ctx *ctx, double *out, size_t n_out) {
    fc_scope *s = fc_scope_open(ctx);
    if (!s) return FC_ERR_NOMEM;
    fc_array *x = fc_reshape(fc_arange(ctx, FC_F32, 0, 24, 1), FC_SHAPE(4, 6));
    fc_array *t = fc_transpose(fc_sin(x));
    fc_array *p = fc_pad(t, 1, (const int64_t[][2]){{1, 1}}, FC_PAD_REFLECT, 0);
    fc_array *c = fc_concatenate(ctx, (fc_array *[]){p, p}, 2, 0);
    fc_array *m = fc_matmul(c, fc_ones(ctx, FC_F64, FC_SHAPE(6, 2)));
    fc_array *v = fc_var(fc_slice(m, FC_S(FC_NIL, FC_NIL, -1), FC_COLON), FC_AXES(0), false, 1);
    fc_array *r = fc_add(v, fc_cast(fc_argmax(x, FC_AXIS_NONE, false), FC_F64));
    fc_status st = fc_read(r, out, 0, (int64_t)n_out);
    fc_scope_close(s);
    return st;
}

Test(ops_ref, allocation_failures_in_evaluation) {
    double want[2], got[2];
    {
        fc_ctx *ctx = tu_host_ctx();
        cr_assert_eq(fault_workload(ctx, want, 2), FC_OK, "%s", fc_errmsg(ctx));
        fc_ctx_destroy(ctx);
    }
    int failures_seen = 0;
    for (long n = 1;; n++) {
        fail_alloc fa = {0, n, 0};
        fc_allocator al = {fa_malloc, NULL, fa_free, &fa};
        fc_ctx_options opts = {0};
        opts.backend = FC_BACKEND_HOST;
        opts.allocator = &al;
        fc_ctx *ctx = NULL;
        if (fc_ctx_create(&ctx, &opts) != FC_OK) {
            cr_assert_eq(fa.live, 0);
            continue;
        }
        fc_status st = fault_workload(ctx, got, 2);
        fc_ctx_destroy(ctx);
        cr_assert_eq(fa.live, 0, "N=%ld: %ld blocks leaked", n, fa.live);
        if (st == FC_OK) {
            cr_assert_eq(got[0], want[0]);
            cr_assert_eq(got[1], want[1]);
            if (fa.calls < n) break; /* no failure was injected: every allocation was tried */
        } else {
            cr_assert_eq(st, FC_ERR_NOMEM, "N=%ld: %s", n, fc_strerror(st));
            failures_seen++;
        }
        cr_assert_lt(n, 100000);
    }
    cr_assert_gt(failures_seen, 10);
}

/* Views with negative strides (flip, x[::-1]) read every dtype through every host loader:
 * the same values as the reversed data stored forwards. The host's loaders once computed
 * `src + i * stride` with i unsigned, so a negative stride became a huge unsigned offset
 * that wrapped around (UBSan: pointer overflow; found by fuzz/fuzz_fc.c). */
Test(ops_ref, negative_strides_of_every_dtype) {
    fc_ctx *ctx = tu_host_ctx();
    for (int t = 0; t < FC_DTYPE_COUNT; t++) {
        fc_scope *s = fc_scope_open(ctx);
        const int64_t fwd[6] = {0, 1, 2, 3, 4, 5}, rev[6] = {5, 4, 3, 2, 1, 0};
        fc_array *x = fc_cast(fc_from_host(ctx, FC_I64, FC_SHAPE(6), fwd), (fc_dtype)t);
        fc_array *y = fc_cast(fc_from_host(ctx, FC_I64, FC_SHAPE(6), rev), (fc_dtype)t);
        cr_assert_eq(fc_eval(ctx, (fc_array *[]){x, y}, 2), FC_OK, "%s", fc_errmsg(ctx));
        fc_array *r = fc_flip(x, FC_ALL);
        /* same-dtype loops, a conversion in the loader, a reduction, and a plain copy */
        fc_array *got[4] = {fc_add(r, r), fc_cast(r, FC_C128), fc_sum(r, FC_ALL, false),
                            fc_reshape(fc_flip(fc_reshape(x, FC_SHAPE(2, 3)), FC_AXES(1)),
                                       FC_SHAPE(6))};
        const int64_t rows[6] = {2, 1, 0, 5, 4, 3}; /* each row of x reversed */
        fc_array *want[4] = {fc_add(y, y), fc_cast(y, FC_C128), fc_sum(y, FC_ALL, false),
                             fc_cast(fc_from_host(ctx, FC_I64, FC_SHAPE(6), rows), (fc_dtype)t)};
        for (int k = 0; k < 4; k++) {
            fc_array *g = fc_cast(got[k], FC_C128), *w = fc_cast(want[k], FC_C128);
            int64_t n = fc_array_size(w);
            double gv[12], wv[12];
            cr_assert_eq(fc_read(g, gv, 0, n), FC_OK, "%s: %s", fc_dtype_name((fc_dtype)t),
                         fc_errmsg(ctx));
            cr_assert_eq(fc_read(w, wv, 0, n), FC_OK, "%s", fc_errmsg(ctx));
            cr_assert(memcmp(gv, wv, (size_t)n * 16) == 0, "%s: case %d differs",
                      fc_dtype_name((fc_dtype)t), k);
        }
        fc_scope_close(s);
    }
    fc_ctx_destroy(ctx);
}

/* NumPy's prod starts from its identity: prod([inf + 0i]) is 1 * (inf + 0i) = inf + NaN i, and
 * each later factor goes through the formula (the GPU merges partial products in a tree and
 * passes over partials that saw no element: test_codegen_emulated, seed 8615). */
static bool same_or_both_nan(double a, double b) { return isnan(b) ? isnan(a) : a == b; }

Test(ops_ref, complex_prod_starts_from_the_identity) {
    fc_ctx *ctx = tu_host_ctx();
    const double one_inf[2] = {INFINITY, 0}, inf_two[4] = {INFINITY, 0, 2, 0},
                 with_ones[6] = {1, 0, INFINITY, 0, 1, 0};
    struct {
        const double *data;
        int64_t n;
        double re, im; /* np.prod(np.array(data)), NaN meaning NaN */
    } cases[] = {{one_inf, 1, INFINITY, NAN}, {inf_two, 2, NAN, NAN}, {with_ones, 3, NAN, NAN}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        for (int k = 0; k < 2; k++) {
            const fc_dtype t = k ? FC_C128 : FC_C64;
            fc_array *x = fc_cast(fc_from_host(ctx, FC_C128, FC_SHAPE(cases[c].n), cases[c].data),
                                  t);
            double got[2] = {-1, -1};
            cr_assert_eq(fc_read(fc_cast(fc_prod(x, FC_ALL, false), FC_C128), got, 0, 1), FC_OK,
                         "%s", fc_errmsg(ctx));
            cr_assert(same_or_both_nan(got[0], cases[c].re) && same_or_both_nan(got[1], cases[c].im), "case %zu (%s): prod is (%g, %g), NumPy's (%g, %g)", c,
                      fc_dtype_name(t), got[0], got[1], cases[c].re, cases[c].im);
        }
    }
    fc_ctx_destroy(ctx);
}
