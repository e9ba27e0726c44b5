/*
 * tests/test_fault_injection.c - every allocation failure ends in a clean status and no leak.
 *
 * A counting allocator (the public fc_allocator hooks) fails the Nth allocation. A workload
 * that touches most of the library runs for N = 1, 2, ... until a run sees no injected
 * failure. Each run must end with FC_OK or FC_ERR_NOMEM (never another status, never a
 * crash), every value it did read must be right, and after fc_ctx_destroy no allocation may
 * be live. Two modes: the Nth allocation alone fails (recovery paths), and every allocation
 * from the Nth on fails (nothing may loop or crash once memory is gone).
 *
 * Expected values are computed here in plain C from the same inputs.
 */
#include <criterion/criterion.h>

#include "fusec.h"
#include "graph.h"
#include "counting_alloc.h"

#include <complex.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- inputs and their expected results (plain C) --------------------------------------- */

enum { R = 4, C = 6 };

static float xin[R][C];
static double yin[C];

static void make_inputs(void) {
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++) xin[i][j] = (float)(0.5 + 0.4 * sin(1.3 * (i * C + j) + 0.2));
    for (int j = 0; j < C; j++) yin[j] = 0.25 + 0.1 * j;
}

static double a_ref(int i, int j) { return (double)xin[i][j] * 0.5 + yin[j]; }
static double b_ref(int i, int j) {
    double a = a_ref(i, j);
    return a > 0.7 ? sin(a) : sqrt(a);
}
static int reflect(int i, int n) { return i < 0 ? -i : i >= n ? 2 * (n - 1) - i : i; }

/* ---- one run of the workload ------------------------------------------------------------ */

typedef struct run {
    fc_ctx *ctx;
    bool injected_possible; /* FC_ERR_NOMEM is acceptable only when a failure was injected */
    counting_alloc *ca;
    fc_status first_nomem;  /* FC_ERR_NOMEM once one was seen */
    char problem[512];      /* the first unexpected outcome, "" if none */
    int values_checked;
} run;

static void problem(run *r, const char *fmt, ...) {
    if (r->problem[0]) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->problem, sizeof r->problem, fmt, ap);
    va_end(ap);
}

/* Records a status: true for FC_OK, false otherwise. FC_ERR_NOMEM is acceptable after an
 * injected failure; `expected` (another status that this call may legitimately return) too. */
static bool status_ok(run *r, fc_status st, fc_status expected, const char *what) {
    if (st == FC_OK) return true;
    if (st == FC_ERR_NOMEM && r->ca->injected) {
        r->first_nomem = FC_ERR_NOMEM;
        return false;
    }
    if (st != expected || expected == FC_OK)
        problem(r, "%s: unexpected status %s (%s)", what, fc_strerror(st),
                r->ctx ? fc_errmsg(r->ctx) : "");
    return false;
}

/* Reads all of `a` (poisoned buffer first) as doubles and compares with want[]. */
static void expect_values(run *r, fc_array *a, const double *want, int64_t n, double tol,
                          const char *what) {
    if (!status_ok(r, fc_array_status(a), FC_OK, what)) return;
    if (fc_array_size(a) != n) {
        problem(r, "%s: %lld elements, expected %lld", what, (long long)fc_array_size(a),
                (long long)n);
        return;
    }
    fc_dtype dt = fc_array_dtype(a);
    size_t bytes = (size_t)n * fc_dtype_size(dt);
    unsigned char buf[1024];
    if (bytes > sizeof buf) {
        problem(r, "%s: too large for the test's buffer", what);
        return;
    }
    memset(buf, 0xA5, sizeof buf);
    if (!status_ok(r, fc_read(a, buf, 0, n), FC_OK, what)) return;
    for (int64_t i = 0; i < n; i++) {
        double v;
        switch (dt) {
        case FC_BOOL: v = ((const uint8_t *)buf)[i]; break;
        case FC_I32: v = ((const int32_t *)buf)[i]; break;
        case FC_I64: v = (double)((const int64_t *)buf)[i]; break;
        case FC_F32: v = ((const float *)buf)[i]; break;
        case FC_F64: v = ((const double *)buf)[i]; break;
        default: problem(r, "%s: dtype %s not handled by the test", what, fc_dtype_name(dt)); return;
        }
        if (!(fabs(v - want[i]) <= tol * (1.0 + fabs(want[i])))) {
            problem(r, "%s: element %lld is %.17g, expected %.17g", what, (long long)i, v, want[i]);
            return;
        }
    }
    r->values_checked++;
}

static const char softmax_fc[] =
    "# softmax over rows\n"
    "x = input f32 [n, 6]\n"
    "m = max(x, axis=1, keepdims=true)\n"
    "e = exp(x - m)\n"
    "y = e / sum(e, axis=1, keepdims=true)\n"
    "out y\n";

/* Arrays made inside scopes: elementwise, weak scalars, reductions, views, pad, concatenate,
 * complex, casts, a poisoned chain, fc_eval, fc_read. */
static void ops_part(run *r) {
    fc_ctx *ctx = r->ctx;
    fc_scope *s = fc_scope_open(ctx);
    if (!s) {
        status_ok(r, FC_ERR_NOMEM, FC_OK, "fc_scope_open");
        return;
    }
    fc_array *x = fc_from_host(ctx, FC_F32, FC_SHAPE(R, C), xin);
    fc_array *y = fc_from_host(ctx, FC_F64, FC_SHAPE(C), yin);

    /* a = x * 0.5 + y: weak scalar keeps f32, then f32 + f64 -> f64, broadcast over rows. */
    fc_array *a = fc_add(fc_mul(x, fc_f64(ctx, 0.5)), y);
    fc_array *b = fc_where(fc_greater(a, fc_f64(ctx, 0.7)), fc_sin(a), fc_sqrt(a));
    fc_array *row_sums = fc_sum(b, FC_AXES(1), true);
    fc_array *top = fc_max(b, FC_ALL, false);
    fc_array *col_std = fc_std(a, FC_AXES(0), false, 1);
    /* v = x[1:4, ::-2].T */
    fc_array *v = fc_transpose(fc_slice(x, FC_S(1, 4, 1), FC_S(FC_NIL, FC_NIL, -2)));
    fc_array *padded = fc_pad(x, 1, (const int64_t[][2]){{1, 2}}, FC_PAD_REFLECT, 0.0);
    fc_array *joined = fc_concatenate(ctx, (fc_array *[]){x, fc_slice(x, FC_S(0, 2, 1))}, 2, 0);
    fc_array *tens = fc_cast(fc_mul(x, fc_i64(ctx, 10)), FC_I32);
    fc_array *amax = fc_argmax(x, 1, false);
    fc_array *mag = fc_abs(fc_mul(fc_cast(x, FC_C64), fc_c128(ctx, 0.5, -1.0)));
    fc_array *low = fc_any(fc_logical_and(fc_less(x, fc_f64(ctx, 0.2)), fc_bool(ctx, true)),
                           FC_ALL, false);
    fc_array *shifted = fc_reshape(fc_add(x, fc_arange(ctx, FC_F32, 0, C, 1)), FC_SHAPE(2, -1, 3));
    fc_array *grid = fc_mean(fc_broadcast_to(fc_linspace(ctx, FC_F64, 0, 1, C, true),
                                             FC_SHAPE(R, C)), FC_AXES(0), false);

    /* A shape error poisons the chain; the status comes out at the end. */
    fc_array *bad = fc_exp(fc_add(x, fc_ones(ctx, FC_F32, FC_SHAPE(5))));
    status_ok(r, fc_array_status(bad), FC_ERR_SHAPE, "poisoned chain");
    status_ok(r, fc_eval(ctx, &bad, 1), FC_ERR_SHAPE, "fc_eval of a poisoned array");

    /* Inner scope; one result carried out with fc_keep. */
    fc_scope *inner = fc_scope_open(ctx);
    if (!inner) status_ok(r, FC_ERR_NOMEM, FC_OK, "fc_scope_open (inner)");
    fc_array *kept = fc_keep(fc_negative(fc_square(top)));
    fc_scope_close(inner);

    fc_array *together[] = {row_sums, top, col_std, v};
    status_ok(r, fc_eval(ctx, together, 4), FC_OK, "fc_eval");

    double want[64];
    for (int i = 0; i < R; i++) {
        want[i] = 0;
        for (int j = 0; j < C; j++) want[i] += b_ref(i, j);
    }
    expect_values(r, row_sums, want, R, 1e-12, "sum(b, axis=1)");
    want[0] = -INFINITY;
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++) want[0] = fmax(want[0], b_ref(i, j));
    double top_ref = want[0];
    expect_values(r, top, want, 1, 1e-12, "max(b)");
    for (int j = 0; j < C; j++) {
        double m = 0, ss = 0;
        for (int i = 0; i < R; i++) m += a_ref(i, j) / R;
        for (int i = 0; i < R; i++) ss += (a_ref(i, j) - m) * (a_ref(i, j) - m);
        want[j] = sqrt(ss / (R - 1));
    }
    expect_values(r, col_std, want, C, 1e-12, "std(a, axis=0, ddof=1)");
    for (int p = 0; p < 3; p++)
        for (int q = 0; q < 3; q++) want[p * 3 + q] = xin[1 + q][5 - 2 * p];
    expect_values(r, v, want, 9, 0, "x[1:4, ::-2].T");
    for (int i = 0; i < R + 3; i++)
        for (int j = 0; j < C + 3; j++) want[i * (C + 3) + j] = xin[reflect(i - 1, R)][reflect(j - 1, C)];
    expect_values(r, padded, want, (R + 3) * (C + 3), 0, "pad reflect");
    for (int i = 0; i < R + 2; i++)
        for (int j = 0; j < C; j++) want[i * C + j] = xin[i < R ? i : i - R][j];
    expect_values(r, joined, want, (R + 2) * C, 0, "concatenate");
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++) want[i * C + j] = (int32_t)(xin[i][j] * 10.0f);
    expect_values(r, tens, want, R * C, 0, "cast(x * 10, i32)");
    for (int i = 0; i < R; i++) {
        int best = 0;
        for (int j = 1; j < C; j++) best = xin[i][j] > xin[i][best] ? j : best;
        want[i] = best;
    }
    expect_values(r, amax, want, R, 0, "argmax(x, 1)");
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++) want[i * C + j] = cabs((double)xin[i][j] * (0.5 - 1.0 * I));
    expect_values(r, mag, want, R * C, 1e-6, "abs(c64(x) * (0.5-1j))");
    want[0] = 0;
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++) want[0] = want[0] || xin[i][j] < 0.2f;
    expect_values(r, low, want, 1, 0, "any(x < 0.2)");
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++) want[i * C + j] = (double)(xin[i][j] + (float)j);
    expect_values(r, shifted, want, R * C, 0, "reshape(x + arange)");
    for (int j = 0; j < C; j++) want[j] = j / (double)(C - 1);
    expect_values(r, grid, want, C, 1e-15, "mean(broadcast_to(linspace))");

    fc_scope_close(s);

    /* The kept array outlives its scope; with no scope open, results belong to the caller. */
    want[0] = -top_ref * top_ref;
    expect_values(r, kept, want, 1, 1e-12, "kept -max(b)**2");
    fc_array *twice = fc_add(kept, kept);
    want[0] *= 2;
    expect_values(r, twice, want, 1, 1e-12, "kept + kept, no scope");
    fc_release(twice);
    fc_release(kept);
}

/* The .fc text format: parse, bind, build, evaluate, print, parse the print again, hash. */
static void program_part(run *r) {
    fc_ctx *ctx = r->ctx;
    fc_program *bad = NULL;
    static const char broken[] = "x = input f32 [2, 3\nout x\n";
    status_ok(r, fc_program_parse(ctx, broken, sizeof broken - 1, "broken.fc", &bad),
              FC_ERR_PARSE, "parse of a broken program");
    if (bad) problem(r, "a failed parse returned a program");

    fc_program *prog = NULL;
    if (!status_ok(r, fc_program_parse(ctx, softmax_fc, sizeof softmax_fc - 1, "softmax.fc", &prog),
                   FC_OK, "fc_program_parse"))
        return;
    fc_scope *s = fc_scope_open(ctx);
    if (!s) status_ok(r, FC_ERR_NOMEM, FC_OK, "fc_scope_open");
    if (status_ok(r, fc_program_set_symbol(prog, "n", R), FC_OK, "fc_program_set_symbol")) {
        fc_array *x = fc_from_host(ctx, FC_F32, FC_SHAPE(R, C), xin);
        fc_array *out[1] = {NULL};
        if (status_ok(r, fc_program_build(prog, &x, out), FC_OK, "fc_program_build")) {
            double want[R * C];
            for (int i = 0; i < R; i++) {
                double m = xin[i][0], total = 0;
                for (int j = 1; j < C; j++) m = fmax(m, xin[i][j]);
                for (int j = 0; j < C; j++) total += exp(xin[i][j] - m);
                for (int j = 0; j < C; j++) want[i * C + j] = exp(xin[i][j] - m) / total;
            }
            expect_values(r, out[0], want, R * C, 1e-6, "softmax.fc");

            char *text = NULL;
            fc_hash h1, h2;
            if (status_ok(r, fc_program_print(ctx, out, 1, NULL, &text), FC_OK, "fc_program_print") &&
                status_ok(r, fc_graph_hash(out, 1, &h1), FC_OK, "fc_graph_hash")) {
                fc_program *again = NULL;
                if (status_ok(r, fc_program_parse(ctx, text, strlen(text), "printed", &again), FC_OK,
                              "parse of printed text")) {
                    fc_array *out2[1] = {NULL};
                    int nin = fc_program_num_inputs(again);
                    if (nin != 1) problem(r, "printed program has %d inputs", nin);
                    else if (status_ok(r, fc_program_build(again, NULL, out2), FC_OK,
                                       "build of printed text") &&
                             status_ok(r, fc_graph_hash(out2, 1, &h2), FC_OK, "hash of printed") &&
                             (h1.lo != h2.lo || h1.hi != h2.hi))
                        problem(r, "printed program hashes differently");
                    fc_program_destroy(again);
                }
            }
            fc_free(ctx, text);
        }
    }
    fc_scope_close(s);
    fc_program_destroy(prog);
}

/* Streams, events, fc_write (which detaches the written array), fc_read_async, pinned host
 * memory, and a copy into a second context on the same allocator (the host forms of the
 * runtime calls). */
static void runtime_part(run *r) {
    fc_ctx *ctx = r->ctx;
    fc_stream *st = NULL;
    fc_event *e0 = NULL, *e1 = NULL;
    fc_ctx *other = NULL;
    fc_scope *s = NULL;
    if (!status_ok(r, fc_stream_create(ctx, &st), FC_OK, "fc_stream_create") ||
        !status_ok(r, fc_event_create(ctx, &e0), FC_OK, "fc_event_create") ||
        !status_ok(r, fc_event_create(ctx, &e1), FC_OK, "fc_event_create"))
        goto done;
    if (!(s = fc_scope_open(ctx))) {
        status_ok(r, FC_ERR_NOMEM, FC_OK, "fc_scope_open");
        goto done;
    }
    fc_array *v = fc_from_host(ctx, FC_F64, FC_SHAPE(C), yin);
    fc_array *sq = fc_mul(v, v);
    if (!status_ok(r, fc_event_record(e0, st), FC_OK, "fc_event_record") ||
        !status_ok(r, fc_eval_on(ctx, &sq, 1, st), FC_OK, "fc_eval_on"))
        goto done;
    double fresh[C], want[C];
    for (int j = 0; j < C; j++) fresh[j] = yin[j] * 2.0 - 1.0;
    if (!status_ok(r, fc_write(v, fresh, 0, C, st), FC_OK, "fc_write")) goto done;
    fc_array *sq2 = fc_add(fc_mul(v, v), fc_f64(ctx, 1.0)); /* sees the written data */
    double *pinned = fc_host_alloc(ctx, C * sizeof *pinned);
    if (!pinned) {
        status_ok(r, FC_ERR_NOMEM, FC_OK, "fc_host_alloc");
        goto done;
    }
    fc_status rs = fc_read_async(sq2, pinned, 0, C, st);
    if (status_ok(r, rs, FC_OK, "fc_read_async") &&
        status_ok(r, fc_event_record(e1, st), FC_OK, "fc_event_record") &&
        status_ok(r, fc_stream_synchronize(ctx, st), FC_OK, "fc_stream_synchronize")) {
        float ms;
        status_ok(r, fc_event_elapsed_ms(e0, e1, &ms), FC_OK, "fc_event_elapsed_ms");
        for (int j = 0; j < C; j++)
            if (pinned[j] != fresh[j] * fresh[j] + 1.0)
                problem(r, "read_async: element %d is %g", j, pinned[j]);
    }
    fc_host_free(ctx, pinned);
    /* The value computed before the write is kept. */
    for (int j = 0; j < C; j++) want[j] = yin[j] * yin[j];
    expect_values(r, sq, want, C, 0, "a value computed before fc_write");
    fc_allocator hooks = {ca_malloc, ca_realloc, ca_free, r->ca};
    fc_ctx_options opts = {.backend = FC_BACKEND_HOST, .allocator = &hooks};
    if (!status_ok(r, fc_ctx_create(&other, &opts), FC_OK, "fc_ctx_create (second)")) goto done;
    fc_scope *so = fc_scope_open(other);
    if (!so) {
        status_ok(r, FC_ERR_NOMEM, FC_OK, "fc_scope_open (second)");
        goto done;
    }
    fc_array *copy = fc_copy_to(sq2, other);
    if (status_ok(r, fc_array_status(copy), FC_OK, "fc_copy_to")) {
        double got[C];
        if (status_ok(r, fc_read(copy, got, 0, C), FC_OK, "fc_read (copy)"))
            for (int j = 0; j < C; j++)
                if (got[j] != fresh[j] * fresh[j] + 1.0) problem(r, "copy_to: element %d is %g", j, got[j]);
    }
    fc_scope_close(so);
done:
    fc_ctx_destroy(other);
    fc_scope_close(s);
    fc_event_destroy(e0);
    fc_event_destroy(e1);
    fc_stream_destroy(st);
}

/* Creates a context on the counting allocator, runs everything, destroys it. Returns the
 * final status: FC_OK, or FC_ERR_NOMEM if an injected failure surfaced. */
static fc_status workload(counting_alloc *ca, run *r) {
    memset(r, 0, sizeof *r);
    r->ca = ca;
    fc_allocator hooks = {ca_malloc, ca_realloc, ca_free, ca};
    fc_ctx_options opts = {.backend = FC_BACKEND_HOST, .allocator = &hooks};
    fc_status st = fc_ctx_create(&r->ctx, &opts);
    if (st != FC_OK) {
        if (r->ctx) problem(r, "fc_ctx_create failed but set *out");
        status_ok(r, st, FC_OK, "fc_ctx_create");
        return st;
    }
    ops_part(r);
    program_part(r);
    runtime_part(r);
    fc_ctx_destroy(r->ctx);
    r->ctx = NULL;
    return r->first_nomem;
}

/* Runs the workload failing allocation N = 1, 2, ... until a run sees no failure. */
static void fail_each_allocation(bool fail_after) {
    make_inputs();
    long n, surfaced = 0;
    for (n = 1; n < 200000; n++) {
        counting_alloc ca = {.fail_at = n, .fail_after = fail_after};
        run r;
        fc_status st = workload(&ca, &r);
        cr_assert(r.problem[0] == '\0', "fail_at %ld%s: %s", n, fail_after ? "+" : "", r.problem);
        cr_assert(st == FC_OK || (ca.injected && st == FC_ERR_NOMEM),
                  "fail_at %ld: final status %s", n, fc_strerror(st));
        cr_assert_eq(ca.live, 0, "fail_at %ld%s: %ld allocations live after fc_ctx_destroy", n,
                     fail_after ? "+" : "", ca.live);
        cr_assert_eq(ca.live_bytes, 0, "fail_at %ld: %zu bytes live after fc_ctx_destroy", n,
                     ca.live_bytes);
        cr_assert_eq(ca.size_mismatches, 0, "fail_at %ld: %ld frees with the wrong size", n,
                     ca.size_mismatches);
        surfaced += st == FC_ERR_NOMEM;
        if (!ca.injected) {
            /* The first run with no failure is the full workload: everything was checked. */
            cr_assert_eq(st, FC_OK);
            cr_assert_eq(r.values_checked, 16, "only %d value checks ran", r.values_checked);
            break;
        }
    }
    cr_assert(n > 50, "the workload made only %ld allocations", n);
    /* A few failures may be absorbed (a table that cannot grow stays smaller); most must
     * surface as FC_ERR_NOMEM, or errors are being lost. */
    cr_assert(2 * surfaced >= n - 1, "only %ld of %ld failures surfaced as FC_ERR_NOMEM", surfaced,
              n - 1);
    cr_log_info("%s: %ld runs, %ld ended in FC_ERR_NOMEM", fail_after ? "fail from N on" : "fail the Nth only",
                n, surfaced);
}

Test(fault_injection, nth_allocation_fails) { fail_each_allocation(false); }

Test(fault_injection, every_allocation_from_nth_fails) { fail_each_allocation(true); }

Test(fault_injection, normal_path_leaves_nothing_live) {
    make_inputs();
    counting_alloc ca = {0};
    fc_allocator hooks = {ca_malloc, ca_realloc, ca_free, &ca};
    fc_ctx_options opts = {.backend = FC_BACKEND_HOST, .allocator = &hooks};
    run r = {.ca = &ca};
    cr_assert_eq(fc_ctx_create(&r.ctx, &opts), FC_OK);

    /* The first pass may grow tables the context keeps; a second pass must not grow anything:
     * whatever the workload allocates, releasing its results frees again. */
    ops_part(&r);
    program_part(&r);
    cr_assert(r.problem[0] == '\0', "%s", r.problem);
    cr_assert_eq(r.ctx->live_nodes, 0, "%zu nodes live with every reference released",
                 r.ctx->live_nodes);
    long live_after_first = ca.live;
    ops_part(&r);
    program_part(&r);
    cr_assert(r.problem[0] == '\0', "%s", r.problem);
    cr_assert_eq(r.ctx->live_nodes, 0);
    cr_assert_eq(ca.live, live_after_first, "%ld allocations live after a second pass, %ld after the first",
                 ca.live, live_after_first);
    cr_assert_eq(r.values_checked, 30);

    fc_ctx_destroy(r.ctx);
    cr_assert_eq(ca.live, 0, "%ld allocations live after fc_ctx_destroy", ca.live);
    cr_assert_eq(ca.live_bytes, 0);
    cr_assert_eq(ca.size_mismatches, 0);
    cr_assert(ca.calls > 50);
}
