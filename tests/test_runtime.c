/*
 * tests/test_runtime.c - streams, events, transfers, memory, devices and the plan cache.
 *
 * The first suite runs on every machine: on the host backend these calls exist too (streams
 * order nothing, events read the wall clock), and write/read semantics are the same. The
 * "gpu" suite needs a CUDA device and is skipped, visibly, without one; on the GPU host it
 * checks every result against the host backend on random data with outputs poisoned first.
 */
#include <criterion/criterion.h>

#include "graph.h"
#include "backend.h" /* fcr_plan_cache_stats, fcr_test_fault */
#include "cache.h"
#include "plan.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static fc_ctx *make_ctx(fc_backend b, size_t limit) {
    fc_ctx_options o;
    memset(&o, 0, sizeof o);
    o.backend = b;
    o.memory_limit = limit;
    fc_ctx *c = NULL;
    if (fc_ctx_create(&c, &o) != FC_OK) return NULL;
    return c;
}

static bool gpu_available(void) {
    int n = 0;
    if (fc_device_count(&n) != FC_OK || n == 0) return false;
    fc_ctx *c = make_ctx(FC_BACKEND_CUDA, 0);
    if (!c) return false;
    fc_ctx_destroy(c);
    return true;
}

#define NEED_GPU()                                                                               \
    do {                                                                                         \
        if (!gpu_available()) cr_skip_test("no CUDA device: GPU runtime test skipped");          \
    } while (0)

static void fill_random(float *x, size_t n, unsigned seed) {
    srand(seed);
    for (size_t i = 0; i < n; i++) x[i] = (float)rand() / (float)RAND_MAX * 4.0f - 2.0f + 1e-3f;
}

/* y = tanh(sin(x) + 0.1 * x) * w: two inputs, one fused kernel. */
static fc_array *program(fc_array *x, fc_array *w) {
    fc_ctx *c = fc_array_ctx(x);
    return fc_mul(fc_tanh(fc_add(fc_sin(x), fc_mul(x, fc_f64(c, 0.1)))), w);
}

static void expect_close(const float *got, const float *want, size_t n, float tol) {
    for (size_t i = 0; i < n; i++)
        cr_assert(fabsf(got[i] - want[i]) <= tol * (1.0f + fabsf(want[i])),
                  "element %zu: %g, expected %g", i, (double)got[i], (double)want[i]);
}

/* The host reference of program() on the same data. */
static void reference(const float *x, const float *w, size_t n, float *out) {
    fc_ctx *h = make_ctx(FC_BACKEND_HOST, 0);
    cr_assert_not_null(h);
    fc_scope *s = fc_scope_open(h);
    fc_array *xa = fc_from_host(h, FC_F32, FC_SHAPE((int64_t)n), x);
    fc_array *wa = fc_from_host(h, FC_F32, FC_SHAPE((int64_t)n), w);
    for (size_t i = 0; i < n; i++) out[i] = NAN;
    cr_assert_eq(fc_to_host(program(xa, wa), out, n * sizeof *out), FC_OK, "%s", fc_errmsg(h));
    fc_scope_close(s);
    fc_ctx_destroy(h);
}

/* The skipped GPU tests are counted on stderr, so a run without a GPU says what it left out. */
ReportHook(POST_ALL)(struct criterion_global_stats *stats) {
    if (stats->tests_skipped && !gpu_available())
        fprintf(stderr, "test_runtime: %zu GPU tests skipped (no CUDA device)\n",
                stats->tests_skipped);
}

/* ---- every backend -------------------------------------------------------------------- */

static void write_semantics(fc_backend b) {
    fc_ctx *c = make_ctx(b, 0);
    cr_assert_not_null(c);
    fc_scope *s = fc_scope_open(c);
    enum { N = 1000 };
    float x0[N], x1[N], w[N], y[N], ref[N];
    fill_random(x0, N, 1);
    fill_random(x1, N, 2);
    fill_random(w, N, 3);
    fc_array *x = fc_from_host(c, FC_F32, FC_SHAPE(N), x0);
    fc_array *wa = fc_from_host(c, FC_F32, FC_SHAPE(N), w);
    fc_array *y0 = program(x, wa);
    cr_assert_eq(fc_eval(c, &y0, 1), FC_OK, "%s", fc_errmsg(c));
    /* Write part of x, then all of it, from pageable memory on the default stream. */
    cr_assert_eq(fc_write(x, x1, 0, 10, NULL), FC_OK, "%s", fc_errmsg(c));
    cr_assert_eq(fc_write(x, x1 + 10, 10, N - 10, NULL), FC_OK, "%s", fc_errmsg(c));
    /* y0 was computed before the write: it keeps its value. */
    for (int i = 0; i < N; i++) y[i] = NAN;
    cr_assert_eq(fc_to_host(y0, y, sizeof y), FC_OK);
    reference(x0, w, N, ref);
    expect_close(y, ref, N, 1e-5f);
    /* The same expression built again sees the new data. */
    fc_array *y1 = program(x, wa);
    cr_assert_neq(y1, y0, "a write must detach the expressions built on the array");
    for (int i = 0; i < N; i++) y[i] = NAN;
    cr_assert_eq(fc_to_host(y1, y, sizeof y), FC_OK, "%s", fc_errmsg(c));
    reference(x1, w, N, ref);
    expect_close(y, ref, N, 1e-5f);
    /* x itself reads back the written data. */
    for (int i = 0; i < N; i++) y[i] = NAN;
    cr_assert_eq(fc_read(x, y, 0, N), FC_OK);
    cr_assert_eq(memcmp(y, x1, sizeof y), 0);
    /* Errors. */
    cr_assert_eq(fc_write(x, x1, N - 5, 10, NULL), FC_ERR_INDEX);
    cr_assert(strstr(fc_errmsg(c), "out of range"), "%s", fc_errmsg(c));
    cr_assert_eq(fc_write(x, NULL, 0, 3, NULL), FC_ERR_NULL);
    cr_assert_eq(fc_write(fc_f64(c, 1.0), x1, 0, 1, NULL), FC_ERR_INVALID);
    cr_assert_eq(fc_write(NULL, x1, 0, 1, NULL), FC_ERR_NULL);
    fc_scope_close(s);
    fc_ctx_destroy(c);
}

Test(runtime, write_keeps_snapshots_and_detaches_host) { write_semantics(FC_BACKEND_HOST); }

Test(runtime, write_into_empty_and_zeros_host) {
    fc_ctx *c = make_ctx(FC_BACKEND_HOST, 0);
    fc_scope *s = fc_scope_open(c);
    fc_array *e = fc_empty(c, FC_I32, FC_SHAPE(4));
    fc_array *e2 = fc_empty(c, FC_I32, FC_SHAPE(4));
    cr_assert_eq(e, e2, "equal lazy creations are one node before a write");
    int32_t v[4] = {7, -3, 11, 42}, got[4] = {0, 0, 0, 0};
    cr_assert_eq(fc_write(e, v, 0, 4, NULL), FC_OK, "%s", fc_errmsg(c));
    fc_array *e3 = fc_empty(c, FC_I32, FC_SHAPE(4));
    cr_assert_neq(e3, e, "a written array leaves the cons table");
    cr_assert_eq(fc_read(e, got, 0, 4), FC_OK);
    cr_assert_eq(memcmp(got, v, sizeof v), 0);
    /* A written constant array is data to the compiler: a GPU plan loads it rather than
     * folding the constant it was built from. */
    fc_array *f = fc_full(c, FC_F32, FC_SHAPE(4), 3.0);
    float fv[4] = {1.5f, -2, 8, 0.25f};
    cr_assert_eq(fc_write(f, fv, 0, 4, NULL), FC_OK, "%s", fc_errmsg(c));
    fc_array *y = fc_mul(fc_add(f, fc_f64(c, 1.0)), f);
    fcp_plan *plan;
    cr_assert_eq(fcp_plan_build(c, &y, 1, &plan), FC_OK, "%s", fc_errmsg(c));
    cr_assert_eq(plan->nkernel, 1);
    cr_assert_eq(plan->kernels[0].nleaf, 1, "the kernel loads the written array");
    cr_assert_eq(plan->kernels[0].leaves[0], f);
    fcp_plan_destroy(plan);
    float yv[4];
    cr_assert_eq(fc_read(y, yv, 0, 4), FC_OK);
    for (int i = 0; i < 4; i++) cr_assert_eq(yv[i], (fv[i] + 1.0f) * fv[i]);
    fc_scope_close(s);
    fc_ctx_destroy(c);
}

Test(runtime, streams_and_events_host) {
    fc_ctx *c = make_ctx(FC_BACKEND_HOST, 0);
    fc_stream *st;
    fc_event *a, *b;
    cr_assert_eq(fc_stream_create(c, &st), FC_OK);
    cr_assert_eq(fc_event_create(c, &a), FC_OK);
    cr_assert_eq(fc_event_create(c, &b), FC_OK);
    float ms = -1;
    cr_assert_eq(fc_event_elapsed_ms(a, b, &ms), FC_ERR_INVALID, "unrecorded events");
    cr_assert_eq(fc_stream_wait_event(st, a), FC_ERR_INVALID);
    cr_assert_eq(fc_event_record(a, st), FC_OK);
    fc_scope *s = fc_scope_open(c);
    fc_array *x = fc_random_uniform(c, FC_F64, FC_SHAPE(20000), 5);
    fc_array *y = fc_sum(fc_exp(x), FC_ALL, false);
    cr_assert_eq(fc_eval_on(c, &y, 1, st), FC_OK);
    cr_assert_eq(fc_event_record(b, st), FC_OK);
    cr_assert_eq(fc_stream_wait_event(NULL, b), FC_OK);
    cr_assert_eq(fc_event_synchronize(b), FC_OK);
    cr_assert_eq(fc_event_elapsed_ms(a, b, &ms), FC_OK);
    cr_assert(ms >= 0 && ms < 60000, "%g ms", (double)ms);
    cr_assert_eq(fc_stream_synchronize(c, st), FC_OK);
    cr_assert_eq(fc_stream_synchronize(c, NULL), FC_OK);
    cr_assert_eq(fc_ctx_synchronize(c), FC_OK);
    double v = 0;
    cr_assert_eq(fc_read_async(y, &v, 0, 1, st), FC_OK);
    cr_assert(v > 20000.0 && v < 20000.0 * 2.72, "sum of exp of uniforms: %g", v);
    fc_scope_close(s);
    /* A stream of another context is refused. */
    fc_ctx *c2 = make_ctx(FC_BACKEND_HOST, 0);
    cr_assert_eq(fc_stream_synchronize(c2, st), FC_ERR_CONTEXT);
    fc_ctx_destroy(c2);
    fc_event_destroy(a);
    fc_stream_destroy(st);
    /* b and nothing else is left: the context destroys it. */
    fc_ctx_destroy(c);
}

Test(runtime, memory_and_devices_host) {
    fc_ctx *c = make_ctx(FC_BACKEND_HOST, 0);
    fc_memory_stats m;
    memset(&m, 0xff, sizeof m);
    cr_assert_eq(fc_memory_stats_get(c, &m), FC_OK);
    cr_assert_eq(m.cached + m.limit + m.pinned_in_use + m.pinned_cached, 0);
    cr_assert_gt(m.host_in_use, 0, "the context's own tables count");
    cr_assert_eq(m.in_use, m.host_in_use, "the host backend's memory is host memory");
    cr_assert_geq(m.host_peak, m.host_in_use);
    cr_assert_eq(fc_memory_trim(c), FC_OK);
    char *p = fc_host_alloc(c, 1000);
    cr_assert_not_null(p);
    memset(p, 1, 1000);
    fc_host_free(c, p);
    fc_host_free(c, NULL);
    double gbps = 1;
    cr_assert_eq(fc_device_copy_bandwidth(c, 1 << 20, 3, &gbps), FC_ERR_BACKEND);
    cr_assert_eq(gbps, 0);
    int n = -1;
    cr_assert_eq(fc_device_count(&n), FC_OK);
    cr_assert(n >= 0);
    fc_device_info info;
    if (n == 0) cr_assert_eq(fc_device_get_info(0, &info), FC_ERR_BACKEND);
    cr_assert_eq(fc_device_get_info(-1, &info), FC_ERR_BACKEND);
    cr_assert_eq(fc_ctx_device(c), -1);
    fc_ctx_destroy(c);
}

Test(runtime, copy_between_host_contexts) {
    fc_ctx *a = make_ctx(FC_BACKEND_HOST, 0), *b = make_ctx(FC_BACKEND_HOST, 0);
    fc_scope *sa = fc_scope_open(a), *sb = fc_scope_open(b);
    fc_array *x = fc_mul(fc_random_uniform(a, FC_F32, FC_SHAPE(3, 5), 9), fc_f64(a, 3.0));
    fc_array *y = fc_copy_to(x, b);
    cr_assert_eq(fc_array_status(y), FC_OK, "%s", fc_errmsg(b));
    cr_assert_eq(fc_array_ctx(y), b);
    float vx[15], vy[15];
    cr_assert_eq(fc_to_host(x, vx, sizeof vx), FC_OK);
    for (int i = 0; i < 15; i++) vy[i] = NAN;
    cr_assert_eq(fc_to_host(y, vy, sizeof vy), FC_OK);
    cr_assert_eq(memcmp(vx, vy, sizeof vx), 0);
    fc_array *bad = fc_copy_to(fc_sqrt(fc_from_host(a, FC_F32, FC_SHAPE(2), NULL)), b);
    cr_assert_neq(fc_array_status(bad), FC_OK);
    fc_scope_close(sb);
    fc_scope_close(sa);
    fc_ctx_destroy(b);
    fc_ctx_destroy(a);
}

Test(runtime, cut_hash_keys_plans_by_structure) {
    fc_ctx *c = make_ctx(FC_BACKEND_HOST, 0);
    fc_scope *s = fc_scope_open(c);
    float d1[6] = {1, 2, 3, 4, 5, 6}, d2[6] = {6, 5, 4, 3, 2, 1};
    fc_array *x1 = fc_from_host(c, FC_F32, FC_SHAPE(2, 3), d1);
    fc_array *x2 = fc_from_host(c, FC_F32, FC_SHAPE(2, 3), d2);
    fc_array *y1 = fc_exp(fc_negative(x1));
    fc_array *y2 = fc_exp(fc_negative(x2));
    fc_hash h1, h2, h3, h4, h5;
    fc_array *const *order;
    size_t n;
    cr_assert_eq(fcg_plan_key(c, &y1, 1, &h1, &order, &n), FC_OK);
    cr_assert_eq(n, 3, "x, -x, exp(-x): %zu nodes", n);
    cr_assert_eq(order[0], x1);
    cr_assert_eq(fcg_plan_key(c, &y2, 1, &h2, &order, &n), FC_OK);
    cr_assert(h1.lo == h2.lo && h1.hi == h2.hi, "other data, same structure: same key");
    /* An evaluated intermediate is a leaf of the cut: another key. */
    fc_array *inner = y1->in[0];
    cr_assert_eq(fc_eval(c, &inner, 1), FC_OK);
    cr_assert_eq(fcg_plan_key(c, &y1, 1, &h3, &order, &n), FC_OK);
    cr_assert_eq(n, 2, "the evaluated -x is a leaf: %zu nodes", n);
    cr_assert(h3.lo != h1.lo || h3.hi != h1.hi);
    /* Another shape: another key. */
    fc_array *y4 = fc_exp(fc_negative(fc_reshape(x2, FC_SHAPE(3, 2))));
    cr_assert_eq(fcg_plan_key(c, &y4, 1, &h4, &order, &n), FC_OK);
    cr_assert(h4.lo != h2.lo || h4.hi != h2.hi);
    /* One input used twice is not two inputs of the same shape. */
    fc_array *twice = fc_add(x1, x1), *pair = fc_add(x1, x2);
    cr_assert_eq(fcg_plan_key(c, &twice, 1, &h4, &order, &n), FC_OK);
    cr_assert_eq(fcg_plan_key(c, &pair, 1, &h5, &order, &n), FC_OK);
    cr_assert(h4.lo != h5.lo || h4.hi != h5.hi);
    /* Small integer constants are part of the key (simplify specialises on them)... */
    fc_array *k1 = fc_mul(x1, fc_f64(c, 2.0)), *k2 = fc_mul(x1, fc_f64(c, 3.0));
    cr_assert_eq(fcg_plan_key(c, &k1, 1, &h4, &order, &n), FC_OK);
    cr_assert_eq(fcg_plan_key(c, &k2, 1, &h5, &order, &n), FC_OK);
    cr_assert(h4.lo != h5.lo || h4.hi != h5.hi);
    /* ... other scalars are kernel arguments: their values never key a plan, but their
     * dtypes, weakness and uses do. */
    fc_hash g[6];
    fc_array *lr[6] = {
        fc_mul(x1, fc_f64(c, 1e-3)),    fc_mul(x1, fc_f64(c, 0.37)),
        fc_mul(x1, fc_f64(c, 2.5)),     fc_mul(x1, fc_scalar(c, FC_F64, 0.37)),
        fc_mul(x1, fc_f64(c, 2.0)),     fc_add(fc_mul(x1, fc_f64(c, 0.5)), fc_f64(c, 0.25)),
    };
    for (int i = 0; i < 6; i++) cr_assert_eq(fcg_plan_key(c, &lr[i], 1, &g[i], &order, &n), FC_OK);
    cr_assert(g[0].lo == g[1].lo && g[0].hi == g[1].hi, "1e-3 and 0.37: one plan");
    cr_assert(g[0].lo == g[2].lo && g[0].hi == g[2].hi, "1e-3 and 2.5: one plan");
    cr_assert(g[0].lo != g[3].lo || g[0].hi != g[3].hi, "a strong f64 scalar is another plan");
    cr_assert(g[0].lo != g[4].lo || g[0].hi != g[4].hi, "2.0 is keyed");
    fc_array *same = fc_add(fc_mul(x1, fc_f64(c, 0.75)), fc_f64(c, 0.75));
    fc_hash hs;
    cr_assert_eq(fcg_plan_key(c, &same, 1, &hs, &order, &n), FC_OK);
    cr_assert(hs.lo != g[5].lo || hs.hi != g[5].hi,
              "one constant used twice is not two constants that differ");
    fc_scope_close(s);
    fc_ctx_destroy(c);
}

/* ---- loops: a value is a leaf, scalars are arguments ------------------------------------------ */

/* The natural optimizer loop: p2 = p - lr * g; evaluate; keep p2; release p. With a value
 * cut from its history and the scalar an argument, memory stays flat over `steps` steps and
 * (on the GPU) one plan serves every lr. The result matches the same loop in C floats bit
 * for bit (NumPy's f32 multiply and subtract; no contraction on either side). */
static void natural_loop(fc_backend b, size_t n, int steps, bool changing_lr) {
    fc_ctx *c = make_ctx(b, 0);
    cr_assert_not_null(c);
    float *p0 = malloc(n * sizeof *p0), *g0 = malloc(n * sizeof *g0);
    float *want = malloc(n * sizeof *want), *got = malloc(n * sizeof *got);
    cr_assert(p0 && g0 && want && got);
    fill_random(p0, n, 11);
    fill_random(g0, n, 12);
    memcpy(want, p0, n * sizeof *want);
    fc_array *p = fc_from_host(c, FC_F32, FC_SHAPE((int64_t)n), p0);
    fc_array *g = fc_from_host(c, FC_F32, FC_SHAPE((int64_t)n), g0);
    fc_memory_stats early, late;
    memset(&early, 0, sizeof early);
    for (int t = 0; t < steps; t++) {
        double lr = changing_lr ? 1e-3 / (1.0 + t) : 1e-3;
        fc_scope *s = fc_scope_open(c);
        fc_array *p2 = fc_sub(p, fc_mul(fc_f64(c, lr), g));
        cr_assert_eq(fc_eval(c, &p2, 1), FC_OK, "step %d: %s", t, fc_errmsg(c));
        fc_keep(p2);
        fc_scope_close(s);
        fc_release(p);
        p = p2;
        for (size_t i = 0; i < n; i++) want[i] = want[i] - (float)lr * g0[i];
        if (t == 9) {
            cr_assert_eq(fc_ctx_synchronize(c), FC_OK);
            cr_assert_eq(fc_memory_stats_get(c, &early), FC_OK);
        }
    }
    cr_assert_eq(fc_ctx_synchronize(c), FC_OK);
    cr_assert_eq(fc_memory_stats_get(c, &late), FC_OK);
    cr_assert_eq(p->nin, 0, "an evaluated array holds no inputs");
    cr_assert_eq(late.in_use, early.in_use, "%s: %zu bytes in use after 10 steps, %zu after %d",
                 b == FC_BACKEND_CUDA ? "device" : "host", early.in_use, late.in_use, steps);
    cr_assert_leq(late.host_in_use, early.host_in_use + 4096,
                  "host: %zu bytes in use after 10 steps, %zu after %d", early.host_in_use,
                  late.host_in_use, steps);
    if (b == FC_BACKEND_CUDA) {
        size_t entries;
        uint64_t replays;
        fcr_plan_cache_stats(c, &entries, &replays);
        cr_assert_eq(entries, 1, "%s lr: %zu plans", changing_lr ? "changing" : "constant",
                     entries);
        cr_assert_eq(replays, (uint64_t)steps - 1);
    }
    cr_assert_eq(fc_to_host(p, got, n * sizeof *got), FC_OK);
    for (size_t i = 0; i < n; i++)
        cr_assert(memcmp(&got[i], &want[i], sizeof got[i]) == 0, "element %zu: %.9g, expected %.9g",
                  i, (double)got[i], (double)want[i]);
    fc_release(p);
    fc_release(g);
    fc_ctx_destroy(c);
    free(p0), free(g0), free(want), free(got);
}

Test(runtime, loop_runs_in_constant_memory_host) {
    natural_loop(FC_BACKEND_HOST, 1 << 14, 1000, false);
    natural_loop(FC_BACKEND_HOST, 1 << 14, 1000, true);
}

Test(gpu, loop_runs_in_constant_memory_and_one_plan) {
    NEED_GPU();
    natural_loop(FC_BACKEND_CUDA, 1 << 20, 1000, false);
    natural_loop(FC_BACKEND_CUDA, 1 << 20, 1000, true);
}

/* ---- in-place updates: fc_assign --------------------------------------------------------------- */

enum { UPD_ROWS = 256, UPD_COLS = 1024, UPD_N = UPD_ROWS * UPD_COLS, UPD_PUT = 777 };

typedef struct update_run {
    float a[UPD_N], b[UPD_N];
    int32_t c[UPD_N];
    fc_memory_stats first, second, last; /* after steps 0 (plans made) and 1, and the last */
} update_run;

/* Loop state updated as NumPy code would update it in place: a[a > 0.5] = -0.25 then scaled
 * (a masked fill inside an elementwise update), b[1::3] = r + t (a slice assignment), c[i] = t
 * (a put at fixed positions), all three evaluated together by fc_assign each step. */
static void update_loop(fc_backend backend, int steps, update_run *out) {
    fc_ctx *c = make_ctx(backend, 0);
    cr_assert_not_null(c);
    float *a0 = malloc(UPD_N * sizeof *a0), *b0 = malloc(UPD_N * sizeof *b0);
    float *r0 = malloc((UPD_N + 1) / 3 * sizeof *r0);
    int32_t *c0 = malloc(UPD_N * sizeof *c0);
    int64_t *i0 = malloc(UPD_PUT * sizeof *i0);
    cr_assert(a0 && b0 && r0 && c0 && i0);
    fill_random(a0, UPD_N, 21);
    fill_random(b0, UPD_N, 22);
    fill_random(r0, (UPD_N + 1) / 3, 23);
    for (int i = 0; i < UPD_N; i++) c0[i] = i % 1000 - 500;
    for (int i = 0; i < UPD_PUT; i++) i0[i] = ((int64_t)i * 7919) % UPD_N;
    fc_array *state[3] = {fc_from_host(c, FC_F32, FC_SHAPE(UPD_ROWS, UPD_COLS), a0),
                          fc_from_host(c, FC_F32, FC_SHAPE(UPD_N), b0),
                          fc_from_host(c, FC_I32, FC_SHAPE(UPD_N), c0)};
    fc_array *r = fc_from_host(c, FC_F32, FC_SHAPE((UPD_N + 1) / 3), r0);
    fc_array *idx = fc_from_host(c, FC_I64, FC_SHAPE(UPD_PUT), i0);
    for (int t = 0; t < steps; t++) {
        fc_scope *s = fc_scope_open(c);
        fc_array *a = state[0], *mask = fc_greater(a, fc_f64(c, 0.5));
        fc_array *a1 = fc_setitem(a, 1, (fc_idx[]){FC_ARRAY_IDX(mask)}, fc_f64(c, -0.25));
        fc_array *next[3] = {
            fc_keep(fc_add(fc_mul(a1, fc_f64(c, 1.5)), fc_f64(c, 0.125))),
            fc_keep(fc_setitem(state[1], 1, (fc_idx[]){FC_S(1, FC_NIL, 3)},
                               fc_add(r, fc_f64(c, (double)t)))),
            fc_keep(fc_setitem(state[2], 1, (fc_idx[]){FC_ARRAY_IDX(idx)}, fc_i64(c, t)))};
        fc_scope_close(s); /* the scope's expressions read the old state */
        cr_assert_eq(fc_assign(c, state, next, 3), FC_OK, "step %d: %s", t, fc_errmsg(c));
        if (t <= 1 || t == steps - 1) {
            cr_assert_eq(fc_ctx_synchronize(c), FC_OK);
            fc_memory_stats *m = t == 0 ? &out->first : t == 1 ? &out->second : &out->last;
            cr_assert_eq(fc_memory_stats_get(c, m), FC_OK);
        }
    }
    for (int i = 0; i < UPD_N; i++) out->a[i] = out->b[i] = NAN, out->c[i] = INT32_MIN;
    cr_assert_eq(fc_to_host(state[0], out->a, sizeof out->a), FC_OK, "%s", fc_errmsg(c));
    cr_assert_eq(fc_to_host(state[1], out->b, sizeof out->b), FC_OK, "%s", fc_errmsg(c));
    cr_assert_eq(fc_to_host(state[2], out->c, sizeof out->c), FC_OK, "%s", fc_errmsg(c));
    for (int q = 0; q < 3; q++) fc_release(state[q]);
    fc_release(r);
    fc_release(idx);
    fc_ctx_destroy(c);
    free(a0), free(b0), free(r0), free(c0), free(i0);
}

/* The same loop in plain C. */
static void update_loop_in_c(int steps, update_run *out) {
    fill_random(out->a, UPD_N, 21);
    fill_random(out->b, UPD_N, 22);
    float *r0 = malloc((UPD_N + 1) / 3 * sizeof *r0);
    cr_assert_not_null(r0);
    fill_random(r0, (UPD_N + 1) / 3, 23);
    for (int i = 0; i < UPD_N; i++) out->c[i] = i % 1000 - 500;
    for (int t = 0; t < steps; t++) {
        for (int i = 0; i < UPD_N; i++) {
            float v = out->a[i] > 0.5f ? -0.25f : out->a[i];
            out->a[i] = v * 1.5f + 0.125f;
        }
        for (int i = 1; i < UPD_N; i += 3) out->b[i] = r0[(i - 1) / 3] + (float)t;
        for (int i = 0; i < UPD_PUT; i++) out->c[((int64_t)i * 7919) % UPD_N] = t;
    }
    free(r0);
}

/* The loop on `backend`, checked bit for bit against plain C; the caller frees the run. */
static update_run *update_loop_checked(fc_backend backend, int steps) {
    update_run *got = malloc(sizeof *got), *want = malloc(sizeof *want);
    cr_assert(got && want);
    update_loop(backend, steps, got);
    update_loop_in_c(steps, want);
    for (int i = 0; i < UPD_N; i++) {
        cr_assert(memcmp(&got->a[i], &want->a[i], 4) == 0 && memcmp(&got->b[i], &want->b[i], 4) == 0,
                  "element %d: a %.9g b %.9g, expected %.9g %.9g", i, (double)got->a[i],
                  (double)got->b[i], (double)want->a[i], (double)want->b[i]);
        cr_assert_eq(got->c[i], want->c[i], "c[%d]", i);
    }
    free(want);
    return got;
}

Test(runtime, assign_updates_loop_state_host) {
    update_run *got = update_loop_checked(FC_BACKEND_HOST, 12);
    cr_assert_eq(got->last.reused, 0, "the host backend computes a reference: no reuse");
    free(got);
}

/* On the GPU every step writes its three results into the buffers of the values they replace
 * (each old value dies with the evaluation), so after the first step, which makes the plan,
 * the state allocates nothing and the loop holds the same memory: what a step still allocates
 * is the plan's own intermediates (the put's positions), the same each step, fewer than the
 * three results. */
Test(gpu, assign_reuses_the_buffers_of_replaced_values) {
    NEED_GPU();
    enum { STEPS = 40 };
    update_run *got = update_loop_checked(FC_BACKEND_CUDA, STEPS);
    cr_assert_eq(got->first.reused, 3, "step 0: %llu results reused a buffer",
                 (unsigned long long)got->first.reused);
    cr_assert_eq(got->last.reused, 3 * STEPS, "%llu results of %d reused a buffer",
                 (unsigned long long)got->last.reused, 3 * STEPS);
    uint64_t per_step = got->second.allocations - got->first.allocations;
    cr_assert_lt(per_step, 3, "step 1 made %llu device allocations",
                 (unsigned long long)per_step);
    cr_assert_eq(got->last.allocations - got->first.allocations, (STEPS - 1) * per_step,
                 "%llu device allocations after step 0, %llu after %d steps",
                 (unsigned long long)got->first.allocations,
                 (unsigned long long)got->last.allocations, STEPS);
    cr_assert_eq(got->last.in_use, got->first.in_use);
    free(got);
}

/* An update that fails after its kernels ran (an index out of range, found by a device-side
 * flag) may have written part of its result over the value it replaces: that value is gone
 * then, and evaluating the update again fails cleanly instead of reading it. */
Test(gpu, a_failed_update_never_reads_a_half_written_buffer) {
    NEED_GPU();
    fc_ctx *c = make_ctx(FC_BACKEND_CUDA, 0);
    cr_assert_not_null(c);
    int64_t bad[2] = {3, UPD_N + 5};
    fc_array *x = fc_random_uniform(c, FC_F32, FC_SHAPE(UPD_N), 9);
    cr_assert_eq(fc_eval(c, &x, 1), FC_OK, "%s", fc_errmsg(c));
    fc_array *idx = fc_from_host(c, FC_I64, FC_SHAPE(2), bad);
    fc_array *next = fc_setitem(x, 1, (fc_idx[]){FC_ARRAY_IDX(idx)}, fc_f64(c, 1.0));
    fc_array *state = x;
    cr_assert_eq(fc_assign(c, &state, &next, 1), FC_ERR_VALUE, "%s", fc_errmsg(c));
    cr_assert_eq(state, next, "state holds the unevaluated update");
    fc_status again = fc_eval(c, &state, 1);
    cr_assert(again == FC_ERR_VALUE || again == FC_ERR_UNBOUND, "evaluated again: %s (%s)",
              fc_strerror(again), fc_errmsg(c));
    fc_release(state);
    fc_release(idx);
    fc_ctx_destroy(c);
}

/* ---- plans with library calls ----------------------------------------------------------------- */

/* matmul with a fused epilogue, a sort and an FFT of fresh data each step, on the GPU and on
 * the host: the GPU's plan (three library calls and their elementwise kernels) is made once
 * and replayed (its library steps read the entry's copies of the plan's nodes). */
Test(gpu, library_plans_are_cached_and_replayed) {
    NEED_GPU();
    enum { M = 48, K = 64, N = 32, V = 4096, STEPS = 6 };
    fc_ctx *g = make_ctx(FC_BACKEND_CUDA, 0), *h = make_ctx(FC_BACKEND_HOST, 0);
    cr_assert(g && h);
    static float xs[M * K], ws[K * N], vs[V], got_y[M * N], want_y[M * N], got_s[V], want_s[V];
    static float got_f[V], want_f[V];
    fill_random(ws, K * N, 31);
    fc_ctx *cs[2] = {g, h};
    fc_array *x[2], *w[2], *v[2];
    for (int q = 0; q < 2; q++) {
        x[q] = fc_from_host(cs[q], FC_F32, FC_SHAPE(M, K), xs);
        w[q] = fc_from_host(cs[q], FC_F32, FC_SHAPE(K, N), ws);
        v[q] = fc_from_host(cs[q], FC_F32, FC_SHAPE(V), vs);
    }
    for (int t = 0; t < STEPS; t++) {
        fill_random(xs, M * K, 100 + (unsigned)t);
        fill_random(vs, V, 200 + (unsigned)t);
        for (int q = 0; q < 2; q++) {
            fc_ctx *c = cs[q];
            cr_assert_eq(fc_write(x[q], xs, 0, M * K, NULL), FC_OK, "%s", fc_errmsg(c));
            cr_assert_eq(fc_write(v[q], vs, 0, V, NULL), FC_OK, "%s", fc_errmsg(c));
            fc_scope *s = fc_scope_open(c);
            fc_array *out[3] = {
                fc_maximum(fc_add(fc_matmul(x[q], w[q]), fc_f64(c, 0.5)), fc_f64(c, 0.0)),
                fc_sort(fc_mul(v[q], fc_f64(c, 2.0)), -1),
                fc_abs(fc_fft(fc_sub(v[q], fc_f64(c, 1.0)), 0))};
            float *dst[3] = {q ? want_y : got_y, q ? want_s : got_s, q ? want_f : got_f};
            size_t bytes[3] = {sizeof got_y, sizeof got_s, sizeof got_f};
            cr_assert_eq(fc_eval(c, out, 3), FC_OK, "%s", fc_errmsg(c));
            for (int o = 0; o < 3; o++) {
                for (size_t i = 0; i < bytes[o] / 4; i++) dst[o][i] = NAN;
                cr_assert_eq(fc_to_host(out[o], dst[o], bytes[o]), FC_OK, "%s", fc_errmsg(c));
            }
            fc_scope_close(s);
        }
        expect_close(got_y, want_y, M * N, 1e-5f);
        cr_assert(memcmp(got_s, want_s, sizeof got_s) == 0, "step %d: sorts differ", t);
        expect_close(got_f, want_f, V, 1e-4f);
    }
    size_t entries;
    uint64_t replays;
    fcr_plan_cache_stats(g, &entries, &replays);
    cr_assert_eq(entries, 1, "%zu plans for one structure", entries);
    cr_assert_eq(replays, STEPS - 1, "%llu replays", (unsigned long long)replays);
    /* the sort allocates per call: no graph holds this plan, its steps run one by one */
    fcr_graph_stats gs;
    fcr_graph_stats_get(g, &gs);
    cr_assert_eq(gs.launches + gs.captures, 0, "%llu graph launches, %llu captures",
                 (unsigned long long)gs.launches, (unsigned long long)gs.captures);
    for (int q = 0; q < 2; q++) fc_release(x[q]), fc_release(w[q]), fc_release(v[q]);
    fc_ctx_destroy(g);
    fc_ctx_destroy(h);
}

/* ---- plans with library calls as CUDA graphs ------------------------------------------------- */

enum { LM = 24, LK = 64, LN = 16, LV = 4096, NPROG = 4 };

/* Four plans with library calls that a CUDA graph can hold: a matmul with a fused epilogue,
 * a complex FFT with one, a real transform there and back (R2C, then C2R, which reads a copy
 * of its input in the stream's scratch), and maximum(x @ w + bias, 0) (one cuBLASLt call with
 * its RELU_BIAS epilogue, after the kernel that stores the bias). Each is evaluated by itself:
 * four entries. */
static void lib_graph_programs(fc_ctx *c, fc_array *x, fc_array *w, fc_array *v,
                               fc_array *out[NPROG]) {
    out[0] = fc_tanh(fc_add(fc_matmul(x, w), fc_f64(c, 0.5)));
    out[1] = fc_abs(fc_fft(fc_sub(v, fc_f64(c, 1.0)), 0));
    out[2] = fc_mul(fc_irfft(fc_rfft(v, 0, 0, FC_FFT_BACKWARD), 0, 0, FC_FFT_BACKWARD),
                    fc_f64(c, 2.0));
    /* a product of its own (out[0]'s is the same node, read by tanh's chain) */
    fc_array *prod = fc_matmul(fc_negative(x), w);
    out[3] = fc_maximum(fc_add(prod, fc_sum(w, FC_AXES(0), false)), fc_f64(c, 0.0));
}

/* Evaluates the programs over x, w, v in g (on stream s) and in the host context h (xh, wh,
 * vh), one plan at a time, and compares every result. */
static void lib_graph_check(fc_ctx *g, fc_stream *s, fc_array *x, fc_array *w, fc_array *v,
                            fc_ctx *h, fc_array *xh, fc_array *wh, fc_array *vh,
                            const char *when) {
    static float got[LV], want[LV];
    static const size_t count[NPROG] = {LM * LN, LV, LV, LM * LN};
    /* relative to 1 + |host|: K = 64 f32 products summed in another order, FFTs of 4096 */
    static const float tol = 1e-4f;
    fc_scope *sg = fc_scope_open(g), *sh = fc_scope_open(h);
    fc_array *og[NPROG], *oh[NPROG];
    lib_graph_programs(g, x, w, v, og);
    lib_graph_programs(h, xh, wh, vh, oh);
    for (int p = 0; p < NPROG; p++) {
        cr_assert_eq(fc_eval_on(g, &og[p], 1, s), FC_OK, "%s, program %d: %s", when, p,
                     fc_errmsg(g));
        for (size_t i = 0; i < count[p]; i++) got[i] = want[i] = NAN;
        cr_assert_eq(fc_to_host(og[p], got, count[p] * sizeof *got), FC_OK, "%s", fc_errmsg(g));
        cr_assert_eq(fc_to_host(oh[p], want, count[p] * sizeof *want), FC_OK, "%s",
                     fc_errmsg(h));
        for (size_t i = 0; i < count[p]; i++)
            cr_assert(fabsf(got[i] - want[i]) <= tol * (1.0f + fabsf(want[i])),
                      "%s, program %d, element %zu: %g, expected %g", when, p, i,
                      (double)got[i], (double)want[i]);
    }
    fc_scope_close(sh);
    fc_scope_close(sg);
}

/* The same fresh data in a GPU array and a host one: new arrays when the pointers are NULL
 * (the GPU's goes up when a plan first reads it), else written into the arrays there. */
static void lib_graph_data(fc_ctx *g, fc_ctx *h, fc_array **ag, fc_array **ah, fc_shape shape,
                           size_t n, unsigned seed) {
    static float data[LV > LK * LN ? LV : LK * LN];
    fill_random(data, n, seed);
    if (!*ag) {
        *ag = fc_from_host(g, FC_F32, shape, data);
        *ah = fc_from_host(h, FC_F32, shape, data);
        cr_assert_eq(fc_array_status(*ag), FC_OK, "%s", fc_errmsg(g));
        return;
    }
    cr_assert_eq(fc_write(*ag, data, 0, (int64_t)n, NULL), FC_OK, "%s", fc_errmsg(g));
    cr_assert_eq(fc_write(*ah, data, 0, (int64_t)n, NULL), FC_OK, "%s", fc_errmsg(h));
}

/* Plans with a matmul, an FFT, a real FFT pair and a cuBLASLt epilogue are cached and, from
 * their second evaluation, launched as one CUDA graph each, their library calls captured into
 * it: right
 * on evaluations 1, 2, 3 (fresh data in the same arrays), and after new input arrays of the
 * same shapes (new addresses: the library calls are captured again). */
/* A CUDA context with graphs on whatever FUSEC_CUDA_GRAPHS says: for the tests of graphs
 * themselves (the suite also runs with the variable set to 0). */
static fc_ctx *graphs_ctx(void) {
    fc_ctx_options o;
    memset(&o, 0, sizeof o);
    o.backend = FC_BACKEND_CUDA;
    o.cuda_graphs = 1;
    fc_ctx *c = NULL;
    return fc_ctx_create(&c, &o) == FC_OK ? c : NULL;
}

Test(gpu, library_plans_replay_as_graphs_and_recapture) {
    NEED_GPU();
    enum { STEPS = 6, SWAP = 3 };
    fc_ctx *g = graphs_ctx(), *h = make_ctx(FC_BACKEND_HOST, 0);
    cr_assert(g && h);
    fc_array *x = NULL, *w = NULL, *v = NULL, *xh = NULL, *wh = NULL, *vh = NULL;
    lib_graph_data(g, h, &w, &wh, FC_SHAPE(LK, LN), LK * LN, 7);
    lib_graph_data(g, h, &x, &xh, FC_SHAPE(LM, LK), LM * LK, 8);
    lib_graph_data(g, h, &v, &vh, FC_SHAPE(LV), LV, 9);
    fcr_graph_stats before = {0}, after;
    char when[64];
    for (int t = 0; t < STEPS; t++) {
        fc_array *old[4] = {0};
        if (t == SWAP) {
            /* new arrays; the old live until the new have gone up, so the addresses differ */
            fcr_graph_stats_get(g, &before);
            old[0] = x, old[1] = xh, old[2] = v, old[3] = vh;
            x = xh = v = vh = NULL;
        }
        if (t > 0) {
            lib_graph_data(g, h, &x, &xh, FC_SHAPE(LM, LK), LM * LK, 100 + (unsigned)t);
            lib_graph_data(g, h, &v, &vh, FC_SHAPE(LV), LV, 200 + (unsigned)t);
        }
        snprintf(when, sizeof when, "evaluation %d%s", t + 1, t >= SWAP ? " (new inputs)" : "");
        lib_graph_check(g, NULL, x, w, v, h, xh, wh, vh, when);
        for (int i = 0; i < 4; i++) fc_release(old[i]);
    }
    fcr_graph_stats_get(g, &after);
    size_t entries;
    uint64_t replays;
    fcr_plan_cache_stats(g, &entries, &replays);
    cr_assert_eq(entries, NPROG, "%zu plans for %d structures", entries, NPROG);
    cr_assert_eq(replays, NPROG * (STEPS - 1), "%llu replays", (unsigned long long)replays);
    cr_assert_eq(after.fallbacks, 0, "a plan gave its graph up");
    cr_assert_eq(after.launches, NPROG * (STEPS - 1), "%llu graph launches for %d replays",
                 (unsigned long long)after.launches, NPROG * (STEPS - 1));
    cr_assert_geq(after.builds, NPROG, "%llu graphs built", (unsigned long long)after.builds);
    cr_assert_geq(before.captures, 5, "the five library calls are captured when the graphs "
                  "are built (%llu captures)", (unsigned long long)before.captures);
    cr_assert_gt(after.captures, before.captures, "new input addresses: captured again");
    fc_release(x), fc_release(xh), fc_release(w), fc_release(wh), fc_release(v), fc_release(vh);
    fc_ctx_destroy(g);
    fc_ctx_destroy(h);
}

/* A plan's graph follows its stream: captured work holds the stream's workspaces, so a run on
 * another stream captures again, and so does a run after fc_memory_trim freed the
 * workspaces, or after the stream it last ran on was destroyed. Every result stays right. */
Test(gpu, library_graphs_follow_streams_and_trim) {
    NEED_GPU();
    fc_ctx *g = graphs_ctx(), *h = make_ctx(FC_BACKEND_HOST, 0);
    cr_assert(g && h);
    fc_array *x = NULL, *w = NULL, *v = NULL, *xh = NULL, *wh = NULL, *vh = NULL;
    lib_graph_data(g, h, &w, &wh, FC_SHAPE(LK, LN), LK * LN, 17);
    lib_graph_data(g, h, &x, &xh, FC_SHAPE(LM, LK), LM * LK, 18);
    lib_graph_data(g, h, &v, &vh, FC_SHAPE(LV), LV, 19);
    fc_stream *s1 = NULL;
    cr_assert_eq(fc_stream_create(g, &s1), FC_OK, "%s", fc_errmsg(g));
    fc_stream *order[] = {NULL, NULL, s1, s1, NULL, s1, NULL};
    char when[64];
    fcr_graph_stats gs;
    for (int t = 0; t < (int)(sizeof order / sizeof *order); t++) {
        snprintf(when, sizeof when, "run %d on %s", t + 1, order[t] ? "a stream" : "the context");
        lib_graph_check(g, order[t], x, w, v, h, xh, wh, vh, when);
    }
    cr_assert_eq(fc_ctx_synchronize(g), FC_OK, "%s", fc_errmsg(g));
    fcr_graph_stats_get(g, &gs);
    cr_assert_eq(gs.fallbacks, 0);
    cr_assert_gt(gs.builds, NPROG, "a run on another stream builds the graph again (%llu builds)",
                 (unsigned long long)gs.builds);
    uint64_t builds = gs.builds;
    fc_memory_stats m;
    cr_assert_eq(fc_memory_trim(g), FC_OK, "%s", fc_errmsg(g));
    cr_assert_eq(fc_memory_stats_get(g, &m), FC_OK);
    cr_assert_eq(m.library, 0, "trim frees the library's workspaces (%zu bytes left)", m.library);
    lib_graph_check(g, NULL, x, w, v, h, xh, wh, vh, "after fc_memory_trim");
    lib_graph_check(g, NULL, x, w, v, h, xh, wh, vh, "after fc_memory_trim, again");
    lib_graph_check(g, s1, x, w, v, h, xh, wh, vh, "on the stream after the trim");
    fc_stream_destroy(s1);
    lib_graph_check(g, NULL, x, w, v, h, xh, wh, vh, "after the stream went");
    lib_graph_check(g, NULL, x, w, v, h, xh, wh, vh, "after the stream went, again");
    fcr_graph_stats_get(g, &gs);
    cr_assert_gt(gs.builds, builds, "freed workspaces: the graphs are built again");
    cr_assert_eq(gs.fallbacks, 0);
    fc_release(x), fc_release(xh), fc_release(w), fc_release(wh), fc_release(v), fc_release(vh);
    fc_ctx_destroy(g);
    fc_ctx_destroy(h);
}

/* The library calls' workspaces count in the memory statistics: cuBLAS's (per stream) once a
 * matmul ran, a cuFFT plan's work area (a prime length: Bluestein's algorithm works in one)
 * once an FFT did; they are part of in_use, and fc_memory_trim gives them back. */
Test(gpu, library_workspaces_are_counted) {
    NEED_GPU();
    enum { P = 10007, B = 8 };
    fc_ctx *g = make_ctx(FC_BACKEND_CUDA, 0);
    cr_assert_not_null(g);
    static float xs[LM * LK], ws[LK * LN], vs[B * P];
    fill_random(xs, LM * LK, 1);
    fill_random(ws, LK * LN, 2);
    fill_random(vs, B * P, 3);
    fc_memory_stats m0, m1, m2, m3, m4;
    cr_assert_eq(fc_memory_stats_get(g, &m0), FC_OK);
    cr_assert_eq(m0.library, 0, "no library call yet, %zu bytes", m0.library);
    fc_array *x = fc_from_host(g, FC_F32, FC_SHAPE(LM, LK), xs);
    fc_array *w = fc_from_host(g, FC_F32, FC_SHAPE(LK, LN), ws);
    fc_array *v = fc_from_host(g, FC_F32, FC_SHAPE(B, P), vs);
    fc_array *y = fc_matmul(x, w);
    cr_assert_eq(fc_eval(g, &y, 1), FC_OK, "%s", fc_errmsg(g));
    cr_assert_eq(fc_memory_stats_get(g, &m1), FC_OK);
    cr_assert_geq(m1.library, (size_t)64 << 10, "cuBLAS's workspace: %zu bytes", m1.library);
    cr_assert_geq(m1.in_use, m1.library + sizeof xs + sizeof ws, "in_use %zu holds the "
                  "workspace (%zu) and the values", m1.in_use, m1.library);
    fc_array *f = fc_abs(fc_fft(v, -1));
    cr_assert_eq(fc_eval(g, &f, 1), FC_OK, "%s", fc_errmsg(g));
    cr_assert_eq(fc_memory_stats_get(g, &m2), FC_OK);
    cr_assert_gt(m2.library, m1.library, "the cuFFT plan's work area is counted (%zu, %zu "
                 "before the FFT)", m2.library, m1.library);
    cr_assert_geq(m2.in_use - m1.in_use, m2.library - m1.library);
    cr_assert_eq(fc_memory_trim(g), FC_OK, "%s", fc_errmsg(g));
    cr_assert_eq(fc_memory_stats_get(g, &m3), FC_OK);
    cr_assert_eq(m3.library, 0, "%zu bytes of workspace after the trim", m3.library);
    cr_assert_eq(m3.in_use, m2.in_use - m2.library, "the trim frees exactly the workspaces: "
                 "%zu in use, %zu before with %zu of workspace", m3.in_use, m2.in_use,
                 m2.library);
    /* made again on the next call, and the results stay right */
    fc_array *y2 = fc_matmul(x, w);
    float got[LM * LN];
    cr_assert_eq(fc_to_host(y2, got, sizeof got), FC_OK, "%s", fc_errmsg(g));
    for (int i = 0; i < LM; i++)
        for (int j = 0; j < LN; j++) {
            double want = 0;
            for (int q = 0; q < LK; q++) want += (double)xs[i * LK + q] * ws[q * LN + j];
            cr_assert(fabs(got[i * LN + j] - want) <= 1e-4 * (1 + fabs(want)),
                      "(%d, %d): %g, expected %g", i, j, (double)got[i * LN + j], want);
        }
    cr_assert_eq(fc_memory_stats_get(g, &m4), FC_OK);
    cr_assert_gt(m4.library, 0);
    fc_release(x), fc_release(w), fc_release(v), fc_release(y), fc_release(f), fc_release(y2);
    fc_ctx_destroy(g);
}

/* Library calls that cannot be captured (a solver reads devInfo back; a sort allocates per
 * call) keep their plans on the direct path: cached, replayed step by step, right every time,
 * new input arrays included, and never captured. */
Test(gpu, uncapturable_library_plans_run_directly) {
    NEED_GPU();
    enum { N = 8, R = 3, V = 5000, STEPS = 5, SWAP = 2 };
    fc_ctx *g = make_ctx(FC_BACKEND_CUDA, 0), *h = make_ctx(FC_BACKEND_HOST, 0);
    cr_assert(g && h);
    float as[N * N], bs[N * R], vs[V], got[V], want[V];
    fc_ctx *cs[2] = {g, h};
    fc_array *a[2] = {0}, *b[2] = {0}, *v[2] = {0};
    for (int t = 0; t < STEPS; t++) {
        fc_array *old[2][3] = {{0}};
        fill_random(as, N * N, 300 + (unsigned)t);
        for (int i = 0; i < N; i++) as[i * N + i] += 8.0f; /* well conditioned */
        fill_random(bs, N * R, 400 + (unsigned)t);
        fill_random(vs, V, 500 + (unsigned)t);
        for (int q = 0; q < 2; q++) {
            fc_ctx *c = cs[q];
            if (t == 0 || t == SWAP) { /* new arrays (the old go after this step) */
                old[q][0] = a[q], old[q][1] = b[q], old[q][2] = v[q];
                a[q] = fc_from_host(c, FC_F32, FC_SHAPE(N, N), as);
                b[q] = fc_from_host(c, FC_F32, FC_SHAPE(N, R), bs);
                v[q] = fc_from_host(c, FC_F32, FC_SHAPE(V), vs);
            } else {
                cr_assert_eq(fc_write(a[q], as, 0, N * N, NULL), FC_OK, "%s", fc_errmsg(c));
                cr_assert_eq(fc_write(b[q], bs, 0, N * R, NULL), FC_OK, "%s", fc_errmsg(c));
                cr_assert_eq(fc_write(v[q], vs, 0, V, NULL), FC_OK, "%s", fc_errmsg(c));
            }
        }
        fc_array *o[2][2];
        fc_scope *sc[2];
        for (int q = 0; q < 2; q++) {
            sc[q] = fc_scope_open(cs[q]);
            o[q][0] = fc_add(fc_linalg_solve(a[q], b[q]), fc_f64(cs[q], 1.0));
            o[q][1] = fc_sort(fc_mul(v[q], fc_f64(cs[q], 2.0)), -1);
            for (int p = 0; p < 2; p++) /* one plan each */
                cr_assert_eq(fc_eval(cs[q], &o[q][p], 1), FC_OK, "%s", fc_errmsg(cs[q]));
        }
        size_t count[2] = {N * R, V};
        for (int p = 0; p < 2; p++) {
            for (size_t i = 0; i < count[p]; i++) got[i] = want[i] = NAN;
            cr_assert_eq(fc_to_host(o[0][p], got, count[p] * sizeof *got), FC_OK, "%s",
                         fc_errmsg(g));
            cr_assert_eq(fc_to_host(o[1][p], want, count[p] * sizeof *want), FC_OK);
            if (p == 1)
                cr_assert(memcmp(got, want, count[p] * sizeof *got) == 0, "step %d: sorts differ",
                          t);
            else
                expect_close(got, want, count[p], 1e-4f);
        }
        fc_scope_close(sc[1]);
        fc_scope_close(sc[0]);
        for (int q = 0; q < 2; q++)
            for (int i = 0; i < 3; i++) fc_release(old[q][i]);
    }
    size_t entries;
    uint64_t replays;
    fcr_plan_cache_stats(g, &entries, &replays);
    cr_assert_eq(entries, 2, "%zu plans", entries);
    cr_assert_eq(replays, 2 * (STEPS - 1), "%llu replays", (unsigned long long)replays);
    fcr_graph_stats gs;
    fcr_graph_stats_get(g, &gs);
    cr_assert_eq(gs.launches + gs.builds + gs.captures + gs.fallbacks, 0,
                 "uncapturable plans went near graphs: %llu launches, %llu captures",
                 (unsigned long long)gs.launches, (unsigned long long)gs.captures);
    for (int q = 0; q < 2; q++) fc_release(a[q]), fc_release(b[q]), fc_release(v[q]);
    fc_ctx_destroy(g);
    fc_ctx_destroy(h);
}

/* FUSEC_CUDA_GRAPHS=0 (and fc_ctx_options.cuda_graphs = -1) turns every graph off, library
 * plans' too: the same programs run step by step, right. */
Test(gpu, library_plans_without_graphs) {
    NEED_GPU();
    for (int how = 0; how < 2; how++) {
        fc_ctx_options o;
        memset(&o, 0, sizeof o);
        o.backend = FC_BACKEND_CUDA;
        if (how == 0) setenv("FUSEC_CUDA_GRAPHS", "0", 1);
        else o.cuda_graphs = -1;
        fc_ctx *g = NULL, *h = make_ctx(FC_BACKEND_HOST, 0);
        cr_assert_eq(fc_ctx_create(&g, &o), FC_OK);
        unsetenv("FUSEC_CUDA_GRAPHS");
        fc_array *x = NULL, *w = NULL, *v = NULL, *xh = NULL, *wh = NULL, *vh = NULL;
        lib_graph_data(g, h, &w, &wh, FC_SHAPE(LK, LN), LK * LN, 27);
        lib_graph_data(g, h, &x, &xh, FC_SHAPE(LM, LK), LM * LK, 28);
        lib_graph_data(g, h, &v, &vh, FC_SHAPE(LV), LV, 29);
        for (int t = 0; t < 4; t++) {
            if (t) lib_graph_data(g, h, &x, &xh, FC_SHAPE(LM, LK), LM * LK, 30 + (unsigned)t);
            lib_graph_check(g, NULL, x, w, v, h, xh, wh, vh, how ? "cuda_graphs = -1"
                                                                  : "FUSEC_CUDA_GRAPHS=0");
        }
        fcr_graph_stats gs;
        fcr_graph_stats_get(g, &gs);
        cr_assert_eq(gs.launches + gs.builds + gs.captures, 0, "graphs are off");
        size_t entries;
        uint64_t replays;
        fcr_plan_cache_stats(g, &entries, &replays);
        cr_assert_eq(replays, NPROG * 3, "the plans are still cached (%llu replays)",
                     (unsigned long long)replays);
        fc_release(x), fc_release(xh), fc_release(w), fc_release(wh), fc_release(v),
            fc_release(vh);
        fc_ctx_destroy(g);
        fc_ctx_destroy(h);
    }
}

/* ---- on the GPU ------------------------------------------------------------------------------ */

Test(gpu, write_keeps_snapshots_and_detaches) {
    NEED_GPU();
    write_semantics(FC_BACKEND_CUDA);
}

Test(gpu, plan_cache_and_graph_replay_match_host) {
    NEED_GPU();
    fc_ctx *c = make_ctx(FC_BACKEND_CUDA, 0);
    cr_assert_not_null(c);
    enum { N = 100003 };
    float *x = malloc(N * sizeof *x), *w = malloc(N * sizeof *w), *y = malloc(N * sizeof *y),
          *ref = malloc(N * sizeof *ref);
    cr_assert(x && w && y && ref);
    for (int it = 0; it < 6; it++) {
        fc_scope *s = fc_scope_open(c);
        fill_random(x, N, 100u + (unsigned)it);
        fill_random(w, N, 200u + (unsigned)it);
        fc_array *xa = fc_from_host(c, FC_F32, FC_SHAPE(N), x);
        fc_array *wa = fc_from_host(c, FC_F32, FC_SHAPE(N), w);
        /* Two kernels: a row reduction's result feeds an elementwise program. */
        fc_array *yv = program(xa, wa);
        fc_array *m = fc_max(fc_reshape(yv, FC_SHAPE(N)), FC_ALL, true);
        fc_array *z = fc_sub(yv, m);
        fc_array *outs[2] = {yv, z};
        cr_assert_eq(fc_eval(c, outs, 2), FC_OK, "%s", fc_errmsg(c));
        for (int i = 0; i < N; i++) y[i] = NAN;
        cr_assert_eq(fc_to_host(yv, y, N * sizeof *y), FC_OK, "%s", fc_errmsg(c));
        reference(x, w, N, ref);
        expect_close(y, ref, N, 1e-5f);
        float mx = -INFINITY;
        for (int i = 0; i < N; i++) mx = fmaxf(mx, ref[i]);
        for (int i = 0; i < N; i++) ref[i] -= mx;
        for (int i = 0; i < N; i++) y[i] = NAN;
        cr_assert_eq(fc_to_host(z, y, N * sizeof *y), FC_OK, "%s", fc_errmsg(c));
        expect_close(y, ref, N, 1e-5f);
        fc_scope_close(s);
    }
    size_t entries;
    uint64_t reuses;
    fcr_plan_cache_stats(c, &entries, &reuses);
    cr_assert_eq(entries, 1, "one structure, one cached plan (%zu)", entries);
    cr_assert_eq(reuses, 5, "five evaluations reused it (%llu)", (unsigned long long)reuses);
    free(x), free(w), free(y), free(ref);
    fc_ctx_destroy(c);
}

/* Values computed on the GPU (device-only, with inputs) are leaves of later programs. */
Test(gpu, evaluated_arrays_feed_later_programs) {
    NEED_GPU();
    fc_ctx *c = make_ctx(FC_BACKEND_CUDA, 0);
    fc_scope *s = fc_scope_open(c);
    enum { N = 4096 };
    float x[N], got[N];
    fill_random(x, N, 11);
    fc_array *xa = fc_from_host(c, FC_F32, FC_SHAPE(N), x);
    fc_array *w = fc_full(c, FC_F32, FC_SHAPE(N), 3.0); /* a broadcast of a constant */
    fc_array *y = fc_mul(fc_add(xa, fc_f64(c, 2.5)), w);
    fc_array *both[2] = {y, w};
    cr_assert_eq(fc_eval(c, both, 2), FC_OK, "%s", fc_errmsg(c));
    fc_array *z = fc_add(fc_sqrt(fc_abs(y)), fc_sub(w, fc_f64(c, 1.0)));
    for (int i = 0; i < N; i++) got[i] = NAN;
    cr_assert_eq(fc_to_host(z, got, sizeof got), FC_OK, "%s", fc_errmsg(c));
    for (int i = 0; i < N; i++) {
        float want = sqrtf(fabsf((x[i] + 2.5f) * 3.0f)) + 2.0f;
        cr_assert(fabsf(got[i] - want) <= 1e-5f * (1.0f + fabsf(want)), "element %d: %g, expected %g",
                  i, (double)got[i], (double)want);
    }
    fc_scope_close(s);
    fc_ctx_destroy(c);
}

/* FUSEC_LOG=timing: a line an evaluation on stderr, a miss naming its compile, load and run
 * phases and its allocations, a hit its key and run; the results are unchanged. */
Test(gpu, fusec_log_timing_reports_each_evaluation) {
    NEED_GPU();
    cr_assert_eq(setenv("FUSEC_LOG", "timing", 1), 0);
    FILE *cap;
    int saved = tu_stderr_begin(&cap);
    fc_ctx *c = make_ctx(FC_BACKEND_CUDA, 0);
    unsetenv("FUSEC_LOG");
    enum { N = 1000 };
    float x[N], w[N], got[N];
    fill_random(x, N, 21);
    fill_random(w, N, 22);
    fc_status st[2];
    for (int round = 0; round < 2; round++) { /* a miss, then a plan-cache hit */
        fc_scope *s = fc_scope_open(c);
        fc_array *y = program(fc_from_host(c, FC_F32, FC_SHAPE(N), x),
                              fc_from_host(c, FC_F32, FC_SHAPE(N), w));
        for (int i = 0; i < N; i++) got[i] = NAN;
        st[round] = fc_to_host(y, got, sizeof got);
        fc_scope_close(s);
    }
    char *log = tu_stderr_end(cap, saved);
    fc_ctx_destroy(c);
    cr_assert_eq(st[0], FC_OK);
    cr_assert_eq(st[1], FC_OK);
    for (int i = 0; i < N; i++) {
        float want = tanhf(sinf(x[i]) + 0.1f * x[i]) * w[i];
        cr_assert(fabsf(got[i] - want) <= 1e-5f * (1.0f + fabsf(want)), "element %d", i);
    }
    const char *miss = strstr(log, "fusec timing: miss: key ");
    cr_assert_not_null(miss, "no miss line in:\n%s", log);
    cr_assert_not_null(strstr(miss, "compile "), "%s", log);
    cr_assert_not_null(strstr(miss, "1 kernels"), "%s", log);
    cr_assert_not_null(strstr(miss, "load "), "%s", log);
    cr_assert_not_null(strstr(miss, " allocations "), "%s", log);
    cr_assert_not_null(strstr(log, "fusec timing: hit: key "), "no hit line in:\n%s", log);
    free(log);
}

/* NumPy refuses an integer to a negative power; the GPU reports it as the host does. */
Test(gpu, integer_negative_power_is_a_value_error) {
    NEED_GPU();
    fc_ctx *c = make_ctx(FC_BACKEND_CUDA, 0);
    fc_scope *s = fc_scope_open(c);
    int32_t base[6] = {3, -2, 5, 7, 1, 4}, ok_exp[6] = {0, 3, 2, 1, 9, 5}, bad_exp[6] = {1, 2, 3, -1, 0, 2};
    fc_array *b = fc_from_host(c, FC_I32, FC_SHAPE(6), base);
    fc_array *bad = fc_add(fc_pow(b, fc_from_host(c, FC_I32, FC_SHAPE(6), bad_exp)), fc_i64(c, 1));
    int32_t got[6];
    fc_status st = fc_read(bad, got, 0, 6);
    cr_assert_eq(st, FC_ERR_VALUE, "%s", fc_strerror(st));
    cr_assert(strstr(fc_errmsg(c), "negative integer powers"), "%s", fc_errmsg(c));
    /* The same program structure with valid data runs (and reuses the plan). */
    fc_array *good = fc_add(fc_pow(b, fc_from_host(c, FC_I32, FC_SHAPE(6), ok_exp)), fc_i64(c, 1));
    for (int i = 0; i < 6; i++) got[i] = -99;
    cr_assert_eq(fc_read(good, got, 0, 6), FC_OK, "%s", fc_errmsg(c));
    int32_t want[6] = {2, -7, 26, 8, 2, 1025};
    for (int i = 0; i < 6; i++) cr_assert_eq(got[i], want[i], "element %d: %d", i, got[i]);
    fc_scope_close(s);
    fc_ctx_destroy(c);
}

/* np.take raises IndexError for an index out of bounds; the GPU reports FC_ERR_VALUE as the
 * host does, and the same structure with indices in range (negative ones count from the end,
 * wrap and clip adjust any) runs. */
Test(gpu, take_out_of_bounds_is_a_value_error) {
    NEED_GPU();
    fc_ctx *c = make_ctx(FC_BACKEND_CUDA, 0);
    fc_scope *s = fc_scope_open(c);
    float xs[5] = {10, 11, 12, 13, 14};
    int64_t bad_i[4] = {0, 2, 5, 1}, ok_i[4] = {-1, 4, 0, -5}, far_i[4] = {7, -6, -1, 12};
    fc_array *x = fc_from_host(c, FC_F32, FC_SHAPE(5), xs);
    fc_array *bad = fc_take(x, fc_from_host(c, FC_I64, FC_SHAPE(4), bad_i), 0, FC_TAKE_RAISE);
    float got[4];
    fc_status st = fc_read(fc_mul(bad, fc_f64(c, 2)), got, 0, 4);
    cr_assert_eq(st, FC_ERR_VALUE, "%s", fc_strerror(st));
    cr_assert(strstr(fc_errmsg(c), "out of bounds"), "%s", fc_errmsg(c));
    fc_array *good = fc_take(x, fc_from_host(c, FC_I64, FC_SHAPE(4), ok_i), 0, FC_TAKE_RAISE);
    cr_assert_eq(fc_read(fc_mul(good, fc_f64(c, 2)), got, 0, 4), FC_OK, "%s", fc_errmsg(c));
    const float want[4] = {28, 28, 20, 20};
    for (int i = 0; i < 4; i++) cr_assert_eq(got[i], want[i], "element %d: %g", i, (double)got[i]);
    fc_array *far = fc_from_host(c, FC_I64, FC_SHAPE(4), far_i);
    const float wrap[4] = {12, 14, 14, 12}, clip[4] = {14, 10, 10, 14};
    cr_assert_eq(fc_read(fc_take(x, far, 0, FC_TAKE_WRAP), got, 0, 4), FC_OK, "%s", fc_errmsg(c));
    for (int i = 0; i < 4; i++) cr_assert_eq(got[i], wrap[i], "wrap %d: %g", i, (double)got[i]);
    cr_assert_eq(fc_read(fc_take(x, far, 0, FC_TAKE_CLIP), got, 0, 4), FC_OK, "%s", fc_errmsg(c));
    for (int i = 0; i < 4; i++) cr_assert_eq(got[i], clip[i], "clip %d: %g", i, (double)got[i]);
    fc_scope_close(s);
    fc_ctx_destroy(c);
}

/* One scatter program, built from the same f64 data in a context: base (n), indices (m, in
 * [-k, k + 3) so that some fall outside under drop / wrap / clip), values (m) cast to t. */
static fc_array *scatter_program(fc_ctx *c, fc_dtype t, int which, const double *base, int64_t n,
                                 const int64_t *ind, const double *vals, int64_t m,
                                 fc_take_mode mode) {
    fc_array *b = fc_cast(fc_from_host(c, FC_F64, FC_SHAPE(n), base), t);
    fc_array *i = fc_from_host(c, FC_I64, FC_SHAPE(m), ind);
    fc_array *v = fc_cast(fc_from_host(c, FC_F64, FC_SHAPE(m), vals), t);
    if (t == FC_BOOL) v = fc_greater(fc_from_host(c, FC_F64, FC_SHAPE(m), vals), fc_f64(c, 0.9));
    switch (which) {
    case 0: return fc_scatter_add(b, i, v, 0, mode);
    case 1: return fc_scatter_max(b, i, v, 0, mode);
    case 2: return fc_scatter_min(b, i, v, 0, mode);
    default: return fc_put(b, i, v, mode == FC_TAKE_DROP ? FC_TAKE_CLIP : mode);
    }
}

/* Scatters on the GPU against the host reference, every dtype and combine, many updates
 * meeting few positions (atomics under contention, compare-and-swap on sub-word elements):
 * integers, bools, max, min and put exactly; float sums within a tolerance (their order on
 * the GPU is unspecified). */
Test(gpu, scatters_match_the_host) {
    NEED_GPU();
    fc_ctx *g = make_ctx(FC_BACKEND_CUDA, 0), *h = make_ctx(FC_BACKEND_HOST, 0);
    cr_assert(g && h);
    enum { N = 1000, M = 200000 };
    double *base = malloc(N * sizeof *base), *vals = malloc(M * sizeof *vals);
    int64_t *ind = malloc(M * sizeof *ind);
    unsigned char *gb = malloc(N * 16), *hb = malloc(N * 16);
    cr_assert(base && vals && ind && gb && hb);
    srand(11);
    for (int i = 0; i < N; i++) base[i] = (double)(rand() % 2000) / 16.0 - 60.0;
    for (int i = 0; i < M; i++) vals[i] = (double)(rand() % 256) / 256.0;
    for (int t = 0; t < FC_DTYPE_COUNT; t++) {
        bool cplx = t == FC_C64 || t == FC_C128, flt = t >= FC_F16 && t <= FC_C128;
        bool half = t == FC_F16 || t == FC_BF16;
        /* contended for exact results, spread for float sums (each position a few updates) */
        for (int which = 0; which < 4; which++) {
            if (cplx && (which == 1 || which == 2)) continue;
            int64_t k = flt && which == 0 ? N : 37, m = half && which == 0 ? 2000 : M;
            for (int64_t i = 0; i < m; i++) ind[i] = rand() % (k + 3) - (which == 3 ? 0 : 1);
            fc_take_mode mode = (fc_take_mode)(1 + (t + which) % 3); /* wrap, clip, drop */
            fc_scope *sg = fc_scope_open(g), *sh = fc_scope_open(h);
            fc_array *rg = scatter_program(g, (fc_dtype)t, which, base, N, ind, vals, m, mode);
            fc_array *rh = scatter_program(h, (fc_dtype)t, which, base, N, ind, vals, m, mode);
            size_t es = fc_dtype_size((fc_dtype)t);
            memset(gb, 0xA5, N * 16); /* poisoned */
            cr_assert_eq(fc_to_host(rg, gb, N * es), FC_OK, "%s: %s", fc_dtype_name((fc_dtype)t),
                         fc_errmsg(g));
            cr_assert_eq(fc_to_host(rh, hb, N * es), FC_OK, "%s", fc_errmsg(h));
            if (!(flt && which == 0)) {
                cr_assert(memcmp(gb, hb, N * es) == 0, "%s, combine %d: GPU and host differ",
                          fc_dtype_name((fc_dtype)t), which);
            } else {
                fc_dtype w = cplx ? FC_C128 : FC_F64;
                fc_array *xg = fc_cast(rg, w), *xh = fc_cast(rh, w);
                double a[2 * N], b[2 * N];
                cr_assert_eq(fc_to_host(xg, a, (size_t)N * fc_dtype_size(w)), FC_OK, "%s", fc_errmsg(g));
                cr_assert_eq(fc_to_host(xh, b, (size_t)N * fc_dtype_size(w)), FC_OK, "%s", fc_errmsg(h));
                /* a position's few updates add in another order: a few roundings of the
                 * running sum apart (bf16 has 8 significant bits, f16 11) */
                double tol = t == FC_BF16 ? 4e-2 : t == FC_F16 ? 1e-2
                             : t == FC_F32 || t == FC_C64 ? 1e-4 : 1e-11;
                for (int i = 0; i < (cplx ? 2 * N : N); i++)
                    cr_assert(fabs(a[i] - b[i]) <= tol * (1 + fabs(b[i])), "%s sum %d: %.17g, host %.17g",
                              fc_dtype_name((fc_dtype)t), i, a[i], b[i]);
            }
            fc_scope_close(sh);
            fc_scope_close(sg);
        }
    }
    /* bincount and histogram: exact counts */
    fc_scope *sg = fc_scope_open(g), *sh = fc_scope_open(h);
    for (int64_t i = 0; i < M; i++) ind[i] = rand() % 300;
    fc_array *bg = fc_bincount(fc_from_host(g, FC_I64, FC_SHAPE(M), ind), NULL, 0);
    fc_array *bh = fc_bincount(fc_from_host(h, FC_I64, FC_SHAPE(M), ind), NULL, 0);
    cr_assert_eq(fc_array_size(bg), fc_array_size(bh));
    cr_assert_eq(fc_to_host(bg, gb, 300 * 8), FC_OK, "%s", fc_errmsg(g));
    cr_assert_eq(fc_to_host(bh, hb, 300 * 8), FC_OK, "%s", fc_errmsg(h));
    cr_assert(memcmp(gb, hb, 300 * 8) == 0, "bincount differs");
    fc_array *hg = fc_histogram(fc_from_host(g, FC_F64, FC_SHAPE(M), vals), 17, 0.1, 0.8, NULL);
    fc_array *hh = fc_histogram(fc_from_host(h, FC_F64, FC_SHAPE(M), vals), 17, 0.1, 0.8, NULL);
    cr_assert_eq(fc_to_host(hg, gb, 17 * 8), FC_OK, "%s", fc_errmsg(g));
    cr_assert_eq(fc_to_host(hh, hb, 17 * 8), FC_OK, "%s", fc_errmsg(h));
    cr_assert(memcmp(gb, hb, 17 * 8) == 0, "histogram differs");
    /* raise: an index out of bounds fails the evaluation on the GPU too */
    int64_t bad[3] = {0, 1000, 2};
    fc_array *e = fc_scatter_add(fc_zeros(g, FC_F32, FC_SHAPE(N)), fc_from_host(g, FC_I64, FC_SHAPE(3), bad),
                                 fc_f64(g, 1), 0, FC_TAKE_RAISE);
    fc_status st = fc_to_host(e, gb, N * 4);
    cr_assert_eq(st, FC_ERR_VALUE, "%s", fc_strerror(st));
    cr_assert(strstr(fc_errmsg(g), "out of bounds"), "%s", fc_errmsg(g));
    fc_scope_close(sh);
    fc_scope_close(sg);
    free(base), free(vals), free(ind), free(gb), free(hb);
    fc_ctx_destroy(h);
    fc_ctx_destroy(g);
}

Test(gpu, streams_events_and_async_transfers) {
    NEED_GPU();
    fc_ctx *c = make_ctx(FC_BACKEND_CUDA, 0);
    enum { N = 1 << 20 };
    float *x = fc_host_alloc(c, N * sizeof *x), *w = malloc(N * sizeof *w);
    float *y = fc_host_alloc(c, N * sizeof *y), *ref = malloc(N * sizeof *ref);
    float *y2 = malloc(N * sizeof *y2);
    cr_assert(x && w && y && ref && y2);
    fill_random(x, N, 7);
    fill_random(w, N, 8);
    fc_stream *s1, *s2;
    fc_event *e0, *e1;
    cr_assert_eq(fc_stream_create(c, &s1), FC_OK);
    cr_assert_eq(fc_stream_create(c, &s2), FC_OK);
    cr_assert_eq(fc_event_create(c, &e0), FC_OK);
    cr_assert_eq(fc_event_create(c, &e1), FC_OK);
    fc_scope *s = fc_scope_open(c);
    /* Two different lazy creations (equal ones would be one node). */
    fc_array *xa = fc_empty(c, FC_F32, FC_SHAPE(N));
    fc_array *wa = fc_full(c, FC_F32, FC_SHAPE(N), 3.0);
    /* Pinned and pageable sources, on stream 1. */
    cr_assert_eq(fc_write(xa, x, 0, N, s1), FC_OK, "%s", fc_errmsg(c));
    cr_assert_eq(fc_write(wa, w, 0, N, s1), FC_OK, "%s", fc_errmsg(c));
    /* Computed on stream 2: its inputs were written on stream 1, which it must wait for. */
    fc_array *ya = program(xa, wa);
    cr_assert_eq(fc_event_record(e0, s2), FC_OK);
    cr_assert_eq(fc_eval_on(c, &ya, 1, s2), FC_OK, "%s", fc_errmsg(c));
    cr_assert_eq(fc_event_record(e1, s2), FC_OK);
    for (int i = 0; i < N; i++) y[i] = y2[i] = NAN;
    cr_assert_eq(fc_read_async(ya, y, 0, N, s2), FC_OK, "%s", fc_errmsg(c));
    cr_assert_eq(fc_read_async(ya, y2, 0, N, s1), FC_OK, "%s", fc_errmsg(c));
    cr_assert_eq(fc_stream_synchronize(c, s2), FC_OK, "%s", fc_errmsg(c));
    cr_assert_eq(fc_stream_synchronize(c, s1), FC_OK, "%s", fc_errmsg(c));
    float ms = -1;
    cr_assert_eq(fc_event_elapsed_ms(e0, e1, &ms), FC_OK, "%s", fc_errmsg(c));
    cr_assert(ms > 0 && ms < 10000, "%g ms", (double)ms);
    reference(x, w, N, ref);
    expect_close(y, ref, N, 1e-5f);
    expect_close(y2, ref, N, 1e-5f);
    fc_memory_stats m;
    cr_assert_eq(fc_memory_stats_get(c, &m), FC_OK);
    cr_assert(m.pinned_in_use >= 2 * N * sizeof(float), "the user's pinned blocks are in use");
    fc_scope_close(s);
    fc_event_destroy(e0);
    fc_event_destroy(e1);
    fc_stream_destroy(s1);
    fc_stream_destroy(s2);
    fc_host_free(c, x);
    fc_host_free(c, y);
    cr_assert_eq(fc_memory_trim(c), FC_OK);
    cr_assert_eq(fc_memory_stats_get(c, &m), FC_OK);
    cr_assert_eq(m.pinned_in_use + m.pinned_cached, 0, "trim gives pinned blocks back");
    free(w), free(ref), free(y2);
    fc_ctx_destroy(c);
}

/* A cached plan keeps the blocks of its small intermediates between runs (never its results):
 * once cached, each evaluation of exp(x) @ x allocates its result alone, the values stay
 * right, and the kept block stays in use (counted) while the plan is cached. */
Test(gpu, cached_plans_keep_small_intermediates) {
    NEED_GPU();
    fc_ctx *c = make_ctx(FC_BACKEND_CUDA, 0);
    cr_assert_not_null(c);
    float xs[64 * 64];
    fill_random(xs, 64 * 64, 5);
    fc_array *x = fc_from_host(c, FC_F32, FC_SHAPE(64, 64), xs);
    cr_assert_eq(fc_eval(c, &x, 1), FC_OK, "%s", fc_errmsg(c));
    float first[64 * 64], now[64 * 64];
    fc_memory_stats m[6];
    for (int run = 0; run < 6; run++) {
        fc_scope *s = fc_scope_open(c);
        fc_array *y = fc_matmul(fc_exp(x), x);
        cr_assert_eq(fc_read(y, run ? now : first, 0, 64 * 64), FC_OK, "%s", fc_errmsg(c));
        if (run) cr_assert(memcmp(now, first, sizeof now) == 0, "run %d differs", run);
        fc_scope_close(s);
        cr_assert_eq(fc_ctx_synchronize(c), FC_OK);
        cr_assert_eq(fc_memory_stats_get(c, &m[run]), FC_OK);
    }
    for (int run = 3; run < 6; run++) {
        cr_expect_eq(m[run].allocations - m[run - 1].allocations, 1,
                     "run %d made %llu device allocations (its result alone: 1)", run,
                     (unsigned long long)(m[run].allocations - m[run - 1].allocations));
        cr_expect_eq(m[run].in_use, m[run - 1].in_use, "run %d: %zu bytes in use, %zu before",
                     run, m[run].in_use, m[run - 1].in_use);
    }
    cr_expect_geq(m[5].in_use, sizeof xs + 64 * 64 * sizeof(float), "x and the kept block of "
                  "exp(x) (%zu bytes in use)", m[5].in_use);
    fc_ctx_destroy(c);
}

Test(gpu, out_of_memory_is_clean_and_recoverable) {
    NEED_GPU();
    fc_ctx *c = make_ctx(FC_BACKEND_CUDA, 64u << 20);
    cr_assert_not_null(c);
    fc_memory_stats before, after;
    cr_assert_eq(fc_memory_stats_get(c, &before), FC_OK);
    cr_assert_eq(before.limit, 64u << 20);
    fc_scope *s = fc_scope_open(c);
    /* 3 x 40 MiB: the inputs fit, the output does not. */
    fc_array *a = fc_random_uniform(c, FC_F32, FC_SHAPE(10 << 20), 1);
    cr_assert_eq(fc_eval(c, &a, 1), FC_OK, "%s", fc_errmsg(c));
    fc_array *y = fc_mul(fc_add(a, fc_random_uniform(c, FC_F32, FC_SHAPE(10 << 20), 2)),
                         fc_f64(c, 2.0));
    fc_status st = fc_eval(c, &y, 1);
    cr_assert_eq(st, FC_ERR_NOMEM, "%s", fc_strerror(st));
    cr_assert(strstr(fc_errmsg(c), "memory limit"), "%s", fc_errmsg(c));
    cr_assert_eq(fc_memory_stats_get(c, &after), FC_OK);
    cr_assert_eq(after.in_use, (size_t)40 << 20, "only a's value is held: %zu", after.in_use);
    fc_scope_close(s);
    cr_assert_eq(fc_memory_stats_get(c, &after), FC_OK);
    cr_assert_eq(after.in_use, 0, "nothing leaked: %zu bytes in use", after.in_use);
    /* The next evaluation succeeds. */
    s = fc_scope_open(c);
    float got[4] = {NAN, NAN, NAN, NAN};
    fc_array *z = fc_add(fc_arange(c, FC_F32, 0, 4, 1), fc_f64(c, 0.5));
    cr_assert_eq(fc_read(z, got, 0, 4), FC_OK, "%s", fc_errmsg(c));
    for (int i = 0; i < 4; i++) cr_assert_eq(got[i], (float)i + 0.5f);
    fc_scope_close(s);
    fc_ctx_destroy(c);
}

/* fc_ctx_options.preallocate reserves pool memory at creation (cached, not in use), later
 * allocations come out of it, and a reservation the device cannot hold fails the creation
 * cleanly. */
Test(gpu, preallocate_reserves_the_pool) {
    NEED_GPU();
    fc_ctx_options o;
    memset(&o, 0, sizeof o);
    o.backend = FC_BACKEND_CUDA;
    o.preallocate = (size_t)256 << 20;
    fc_ctx *c = NULL;
    cr_assert_eq(fc_ctx_create(&c, &o), FC_OK);
    fc_memory_stats m;
    cr_assert_eq(fc_memory_stats_get(c, &m), FC_OK);
    cr_assert_eq(m.in_use, 0);
    cr_assert(m.cached >= o.preallocate, "cached %zu after preallocating %zu", m.cached,
              o.preallocate);
    enum { N = 1 << 20 };
    fc_scope *s = fc_scope_open(c);
    fc_array *x = fc_random_uniform(c, FC_F32, FC_SHAPE(N), 5);
    fc_array *y = fc_mul(x, fc_f64(c, 3.0));
    cr_assert_eq(fc_eval(c, &y, 1), FC_OK, "%s", fc_errmsg(c));
    float *xs = malloc(N * sizeof *xs), *ys = malloc(N * sizeof *ys);
    cr_assert(xs && ys);
    cr_assert_eq(fc_to_host(x, xs, N * sizeof *xs), FC_OK, "%s", fc_errmsg(c));
    cr_assert_eq(fc_to_host(y, ys, N * sizeof *ys), FC_OK, "%s", fc_errmsg(c));
    for (int i = 0; i < N; i++) cr_assert_eq(ys[i], xs[i] * 3.0f, "element %d", i);
    free(xs);
    free(ys);
    cr_assert_eq(fc_memory_stats_get(c, &m), FC_OK);
    cr_assert_eq(m.in_use, (size_t)2 * N * 4, "in use %zu", m.in_use);
    fc_scope_close(s);
    fc_ctx_destroy(c);
    o.preallocate = (size_t)1 << 50; /* a petabyte */
    c = NULL;
    cr_assert_eq(fc_ctx_create(&c, &o), FC_ERR_NOMEM);
    cr_assert_null(c);
}

Test(gpu, memory_peak_is_inputs_plus_outputs) {
    NEED_GPU();
    fc_ctx *c = make_ctx(FC_BACKEND_CUDA, 0);
    enum { N = 1 << 22 };
    fc_scope *s = fc_scope_open(c);
    fc_array *x = fc_random_uniform(c, FC_F32, FC_SHAPE(N), 3);
    cr_assert_eq(fc_eval(c, &x, 1), FC_OK);
    cr_assert_eq(fc_ctx_synchronize(c), FC_OK);
    fc_memory_reset_peak(c);
    fc_array *y = fc_tanh(fc_add(fc_sin(x), fc_mul(x, fc_f64(c, 0.1))));
    cr_assert_eq(fc_eval(c, &y, 1), FC_OK, "%s", fc_errmsg(c));
    fc_memory_stats m;
    cr_assert_eq(fc_memory_stats_get(c, &m), FC_OK);
    cr_assert(m.peak >= (size_t)2 * N * 4 && m.peak <= (size_t)2 * N * 4 + (1u << 20),
              "peak %zu: inputs + outputs (+ at most 1 MiB): fused intermediates never exist", m.peak);
    double gbps = 0;
    cr_assert_eq(fc_device_copy_bandwidth(c, 64u << 20, 5, &gbps), FC_OK, "%s", fc_errmsg(c));
    cr_assert(gbps > 100, "copy bandwidth %g GB/s", gbps);
    fc_scope_close(s);
    fc_ctx_destroy(c);
}

Test(gpu, devices_and_copies_between_contexts) {
    NEED_GPU();
    int n = 0;
    cr_assert_eq(fc_device_count(&n), FC_OK);
    cr_assert(n >= 1);
    fc_device_info info;
    cr_assert_eq(fc_device_get_info(0, &info), FC_OK);
    cr_assert(info.sm_count > 0 && info.total_memory > 0 && strncmp(info.arch, "sm_", 3) == 0);
    cr_assert_eq(fc_device_get_info(n, &info), FC_ERR_BACKEND);
    fc_ctx *g1 = make_ctx(FC_BACKEND_CUDA, 0), *h = make_ctx(FC_BACKEND_HOST, 0);
    fc_ctx_options o;
    memset(&o, 0, sizeof o);
    o.backend = FC_BACKEND_CUDA;
    o.device = n - 1; /* the last device: another one where there are two */
    fc_ctx *g2;
    cr_assert_eq(fc_ctx_create(&g2, &o), FC_OK);
    cr_assert_eq(fc_ctx_device(g2), n - 1);
    fc_scope *s1 = fc_scope_open(g1), *s2 = fc_scope_open(g2), *sh = fc_scope_open(h);
    fc_array *x = fc_mul(fc_random_uniform(g1, FC_F64, FC_SHAPE(1000, 7), 4), fc_f64(g1, 3.0));
    fc_array *y = fc_copy_to(x, g2);
    fc_array *z = fc_copy_to(fc_add(y, fc_f64(g2, 1.0)), h);
    fc_array *back = fc_copy_to(z, g1);
    double *vx = malloc(7000 * sizeof *vx), *vb = malloc(7000 * sizeof *vb);
    cr_assert_eq(fc_to_host(x, vx, 7000 * sizeof *vx), FC_OK, "%s", fc_errmsg(g1));
    for (int i = 0; i < 7000; i++) vb[i] = NAN;
    cr_assert_eq(fc_to_host(back, vb, 7000 * sizeof *vb), FC_OK, "%s", fc_errmsg(g1));
    for (int i = 0; i < 7000; i++) cr_assert_eq(vb[i], vx[i] + 1.0, "element %d", i);
    free(vx), free(vb);
    fc_scope_close(sh);
    fc_scope_close(s2);
    fc_scope_close(s1);
    fc_ctx_destroy(g2);
    fc_ctx_destroy(h);
    fc_ctx_destroy(g1);
}

static size_t cache_entries(const char *dir) {
    fcc_options o = fcc_options_default();
    o.dir = dir;
    fcc_cache *cache = NULL;
    size_t n = 0;
    if (fcc_open(&o, &cache) == FC_OK) {
        fcc_stats st;
        if (fcc_get_stats(cache, &st) == FC_OK) n = (size_t)st.entries;
        fcc_close(cache);
    }
    return n;
}

Test(gpu, dead_context_fails_cleanly_and_writes_no_cache) {
    NEED_GPU();
    char dir[] = "/tmp/fusec-dead-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    fc_ctx_options o;
    memset(&o, 0, sizeof o);
    o.backend = FC_BACKEND_CUDA;
    o.cache_dir = dir;
    fc_ctx *c;
    cr_assert_eq(fc_ctx_create(&c, &o), FC_OK);
    fc_scope *s = fc_scope_open(c);
    fc_array *x = fc_exp(fc_random_uniform(c, FC_F32, FC_SHAPE(1000), 1));
    cr_assert_eq(fc_eval(c, &x, 1), FC_OK, "%s", fc_errmsg(c));
    cr_assert_eq(fc_ctx_synchronize(c), FC_OK);
    size_t entries = cache_entries(dir);
    cr_assert(entries >= 1);
    fc_status st = fcr_test_fault(c);
    cr_assert_eq(st, FC_ERR_BACKEND, "%s", fc_strerror(st));
    cr_assert(strstr(fc_errmsg(c), "unusable"), "%s", fc_errmsg(c));
    /* A new program (a new kernel) fails at once and compiles nothing. */
    fc_array *y = fc_log1p(fc_cosh(fc_random_uniform(c, FC_F64, FC_SHAPE(77), 2)));
    double v[77];
    st = fc_read(y, v, 0, 77);
    cr_assert_eq(st, FC_ERR_BACKEND);
    cr_assert(strstr(fc_errmsg(c), "unusable after an earlier error"), "%s", fc_errmsg(c));
    float f;
    cr_assert_eq(fc_read(x, &f, 0, 1), FC_ERR_BACKEND, "no download from a dead context");
    fc_stream *str;
    cr_assert_eq(fc_stream_create(c, &str), FC_ERR_BACKEND);
    cr_assert_eq(fc_ctx_synchronize(c), FC_ERR_BACKEND);
    cr_assert_eq(cache_entries(dir), entries, "no cache write after death");
    fc_scope_close(s);
    fc_ctx_destroy(c); /* and no crash or hang on the way out */
    /* A new process on the same GPU and cache runs normally (this one's CUDA is gone). */
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s/tools/fusec run %s/examples/fc/saxpy.fc --set n=4096 "
             "--backend cuda --cache-dir %s > /dev/null", FUSEC_BINARY_DIR, FUSEC_SOURCE_DIR, dir);
    cr_assert_eq(system(cmd), 0, "a new process after the fault: %s", cmd);
    cr_assert_gt(cache_entries(dir), entries, "the new process compiled and cached its kernel");
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}
