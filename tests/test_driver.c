/*
 * tests/test_driver.c - the compile driver (compile/driver.h): stages, the batch's dedup,
 * lookups and builds on threads, failures in kernel order, and that no stage after the graph
 * writes the nodes' scratch fields. A fault-injection loop runs a compile to keys with the Nth
 * allocation failing.
 */
#include <criterion/criterion.h>

#include "fusec.h"
#include "graph.h"
#include "driver.h"
#include "kcompile.h"
#include "counting_alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char softmax_fc[] =
    "x = input f32 [64, 256]\n"
    "m = max(x, axis=1, keepdims=true)\n"
    "e = exp(x - m)\n"
    "y = e / sum(e, axis=1, keepdims=true)\n"
    "out y\n";

/* Two kernels: a column sum, then an elementwise use of it. */
static const char two_fc[] =
    "x = input f32 [64, 256]\n"
    "s = sum(x, axis=0)\n"
    "y = sqrt(s) * 2\n"
    "z = x + s\n"
    "out y, z\n";

typedef struct prog {
    fc_program *p;
    fc_array *outs[4];
    int nout;
} prog;

static fc_status prog_build(fc_ctx *ctx, const char *text, prog *out) {
    memset(out, 0, sizeof *out);
    fc_status st = fc_program_parse(ctx, text, strlen(text), "test.fc", &out->p);
    if (st != FC_OK) return st;
    int n = fc_program_num_outputs(out->p);
    cr_assert_leq(n, 4);
    if ((st = fc_program_build(out->p, NULL, out->outs)) == FC_OK) out->nout = n;
    return st; /* on failure fc_ctx_destroy frees whatever was made */
}

static void prog_free(prog *p) {
    for (int i = 0; i < p->nout; i++) fc_release(p->outs[i]);
    fc_program_destroy(p->p);
}

static fc_ctx *host_ctx(void) {
    fc_ctx_options o = {.backend = FC_BACKEND_HOST};
    fc_ctx *ctx;
    cr_assert_eq(fc_ctx_create(&ctx, &o), FC_OK);
    return ctx;
}

static fcc_cache *memory_cache(void) {
    fcc_options o = fcc_options_default();
    o.memory_only = true;
    o.require_cached = 0;
    fcc_cache *c;
    cr_assert_eq(fcc_open(&o, &c), FC_OK);
    return c;
}

Test(driver, one_program_to_keys_matches_codegen_and_kcompile) {
    fc_ctx *ctx = host_ctx();
    prog p;
    cr_assert_eq(prog_build(ctx, two_fc, &p), FC_OK, "%s", fc_errmsg(ctx));
    const char *archs[] = {"sm_80", "sm_90"};
    fck_options o = fck_options_default();
    o.stage = FCK_KEY;
    o.archs = archs;
    o.narch = 2;
    fck_result *r;
    cr_assert_eq(fck_compile(ctx, p.outs, p.nout, &o, &r), FC_OK, "%s", fc_errmsg(ctx));
    cr_assert_eq(r->error, FC_OK);
    cr_assert_eq(r->programs, 1);
    cr_assert_eq(r->nkernel, r->plan->nkernel);
    cr_assert_geq(r->nkernel, 2);
    cr_assert_eq(r->targets, 2 * r->nkernel);
    for (int i = 0; i < r->nkernel; i++) {
        const fck_kernel *k = &r->kernels[i];
        cr_assert_eq(k->k, &r->plan->kernels[i]);
        cr_assert_eq(k->index, i);
        fcx_kernel_src src;
        cr_assert_eq(fcx_generate(ctx, k->k, &src), FC_OK);
        cr_assert_str_eq(k->src.src, src.src, "kernel %d: the source is codegen's", i);
        for (int a = 0; a < 2; a++) {
            char options[1024], msg[256];
            fcc_key_fields f;
            fcc_key key;
            cr_assert_eq(fcx_key_fields(&src, archs[a], options, sizeof options, &f, msg,
                                        sizeof msg), FC_OK);
            cr_assert_eq(fcc_key_compute(&f, &key), FC_OK);
            cr_assert_eq(memcmp(&key, &k->targets[a].key, sizeof key), 0, "kernel %d %s", i,
                         archs[a]);
            cr_assert_eq(k->targets[a].state, FCK_PENDING, "nothing looked up below LOOKUP");
            cr_assert_str_eq(k->targets[a].fields.arch, archs[a]);
        }
        fcx_kernel_src_free(ctx, &src);
    }
    fck_result_free(r);
    prog_free(&p);
    fc_ctx_destroy(ctx);
}

Test(driver, plan_stage_generates_nothing) {
    fc_ctx *ctx = host_ctx();
    prog p;
    cr_assert_eq(prog_build(ctx, softmax_fc, &p), FC_OK);
    fck_options o = fck_options_default();
    o.stage = FCK_PLAN;
    fck_result *r;
    cr_assert_eq(fck_compile(ctx, p.outs, p.nout, &o, &r), FC_OK);
    cr_assert_not_null(r->plan);
    for (int i = 0; i < r->nkernel; i++) {
        cr_assert_null(r->kernels[i].src.src);
        cr_assert_null(r->kernels[i].targets);
    }
    cr_assert_eq(r->targets, 0);
    fck_result_free(r);
    prog_free(&p);
    fc_ctx_destroy(ctx);
}

Test(driver, batch_holds_each_kernel_once) {
    fc_ctx *ctx = host_ctx();
    prog a, b, c;
    cr_assert_eq(prog_build(ctx, softmax_fc, &a), FC_OK);
    cr_assert_eq(prog_build(ctx, two_fc, &b), FC_OK);
    cr_assert_eq(prog_build(ctx, softmax_fc, &c), FC_OK); /* the same kernel again */
    const char *arch = "sm_90";
    fck_options o = fck_options_default();
    o.stage = FCK_KEY;
    o.archs = &arch;
    o.narch = 1;
    o.batch = true;
    fck_result *r;
    cr_assert_eq(fck_result_create(ctx, &o, &r), FC_OK);
    cr_assert_eq(fck_add(r, a.outs, a.nout), FC_OK);
    int after_a = r->nkernel;
    cr_assert_eq(fck_add(r, b.outs, b.nout), FC_OK);
    int after_b = r->nkernel;
    cr_assert_eq(fck_add(r, c.outs, c.nout), FC_OK);
    cr_assert_eq(r->programs, 3);
    cr_assert_eq(r->nkernel, after_b, "the softmax kernel is held once");
    cr_assert_eq(r->duplicates, after_a);
    cr_assert_null(r->plan, "a batch keeps no plans");
    for (int i = 0; i < r->nkernel; i++) {
        cr_assert_null(r->kernels[i].k);
        cr_assert_null(r->kernels[i].src.src, "held without the text");
        cr_assert_eq(r->kernels[i].program, i < after_a ? 0 : 1);
    }
    fck_result_free(r);
    prog_free(&a);
    prog_free(&b);
    prog_free(&c);
    fc_ctx_destroy(ctx);
}

static void count_progress(const fck_progress *g, void *user) {
    int *calls = user;
    if (g->kernel) calls[0]++;
    else calls[1]++;
    cr_assert_leq(g->done, g->total);
}

Test(driver, lookup_misses_then_binary_compiles_then_lookup_hits) {
    fc_ctx *ctx = host_ctx();
    fcc_cache *cache = memory_cache();
    prog p;
    cr_assert_eq(prog_build(ctx, two_fc, &p), FC_OK);
    const char *arch = "sm_80";
    fck_options o = fck_options_default();
    o.archs = &arch;
    o.narch = 1;
    o.cache = cache;
    fck_result *r;

    o.stage = FCK_LOOKUP;
    cr_assert_eq(fck_compile(ctx, p.outs, p.nout, &o, &r), FC_OK, "a miss is no failure");
    for (int i = 0; i < r->nkernel; i++) {
        cr_assert_eq(r->kernels[i].targets[0].state, FCK_MISSED);
        cr_assert(r->kernels[i].targets[0].message && *r->kernels[i].targets[0].message,
                  "a miss says why");
    }
    cr_assert_eq(r->missed, r->nkernel);
    int nkernel = r->nkernel;
    fck_result_free(r);

    /* A batch on two threads with progress, as `fusec warm` runs it. */
    int calls[2] = {0, 0};
    o.stage = FCK_BINARY;
    o.batch = true;
    o.threads = 2;
    o.keep_going = true;
    o.progress = count_progress;
    o.progress_user = calls;
    cr_assert_eq(fck_result_create(ctx, &o, &r), FC_OK);
    cr_assert_eq(fck_add(r, p.outs, p.nout), FC_OK);
    cr_assert_eq(fck_build(r), FC_OK, "%s", fc_errmsg(ctx));
    cr_assert_eq(r->compiled, nkernel);
    cr_assert_eq(calls[0], nkernel, "one call per finished target");
    for (int i = 0; i < r->nkernel; i++) {
        cr_assert_eq(r->kernels[i].targets[0].state, FCK_COMPILED);
        cr_assert_not_null(r->kernels[i].targets[0].cubin);
        cr_assert_gt(r->kernels[i].targets[0].cubin_size, 0);
    }
    fck_result_free(r);

    o = fck_options_default();
    o.stage = FCK_LOOKUP;
    o.archs = &arch;
    o.narch = 1;
    o.cache = cache;
    cr_assert_eq(fck_compile(ctx, p.outs, p.nout, &o, &r), FC_OK);
    cr_assert_eq(r->cached, r->nkernel);
    for (int i = 0; i < r->nkernel; i++) {
        cr_assert_eq(r->kernels[i].targets[0].state, FCK_CACHED);
        cr_assert_null(r->kernels[i].targets[0].message);
    }
    fck_result_free(r);
    prog_free(&p);
    fcc_close(cache);
    fc_ctx_destroy(ctx);
}

Test(driver, require_cached_fails_the_first_kernel_in_order) {
    fc_ctx *ctx = host_ctx();
    fcc_options co = fcc_options_default();
    co.memory_only = true;
    co.require_cached = 1;
    fcc_cache *cache;
    cr_assert_eq(fcc_open(&co, &cache), FC_OK);
    prog p;
    cr_assert_eq(prog_build(ctx, two_fc, &p), FC_OK);
    const char *arch = "sm_80";
    fck_options o = fck_options_default();
    o.archs = &arch;
    o.narch = 1;
    o.cache = cache;
    fck_result *r;
    cr_assert_eq(fck_compile(ctx, p.outs, p.nout, &o, &r), FC_ERR_NOT_CACHED);
    cr_assert_eq(r->kernels[0].targets[0].state, FCK_FAILED);
    cr_assert_eq(r->failed, 1, "a build stops at its first failure unless keep_going");
    cr_assert_eq(r->kernels[1].targets[0].state, FCK_PENDING);
    cr_assert(strstr(fc_errmsg(ctx), "FUSEC_REQUIRE_CACHED"), "%s", fc_errmsg(ctx));
    fck_result_free(r);
    prog_free(&p);
    fcc_close(cache);
    fc_ctx_destroy(ctx);
}

Test(driver, codegen_and_describe_leave_the_nodes_scratch_fields_alone) {
    fc_ctx *ctx = host_ctx();
    prog p;
    cr_assert_eq(prog_build(ctx, softmax_fc, &p), FC_OK);
    fck_options o = fck_options_default();
    o.stage = FCK_PLAN;
    fck_result *r;
    cr_assert_eq(fck_compile(ctx, p.outs, p.nout, &o, &r), FC_OK);
    const fcp_plan *plan = r->plan;
    /* Sentinels in every node the kernels touch: generating must not change them, and the
     * plan's description must not read them. */
    char *before = fcp_plan_describe(plan);
    cr_assert_not_null(before);
    for (int i = 0; i < plan->nkernel; i++) {
        const fcp_kernel *k = &plan->kernels[i];
        for (int q = 0; q < k->nnode; q++) k->nodes[q]->order = 7777, k->nodes[q]->visit = 1;
        for (int q = 0; q < k->nleaf; q++) k->leaves[q]->order = 7777, k->leaves[q]->visit = 1;
    }
    for (int i = 0; i < plan->nkernel; i++) {
        const fcp_kernel *k = &plan->kernels[i];
        fcx_kernel_src src;
        cr_assert_eq(fcx_generate(ctx, k, &src), FC_OK, "%s", fc_errmsg(ctx));
        fcx_kernel_src_free(ctx, &src);
        for (int q = 0; q < k->nnode; q++)
            cr_assert(k->nodes[q]->order == 7777 && k->nodes[q]->visit == 1);
        for (int q = 0; q < k->nleaf; q++)
            cr_assert(k->leaves[q]->order == 7777 && k->leaves[q]->visit == 1);
    }
    char *after = fcp_plan_describe(plan);
    cr_assert_str_eq(after, before);
    fcg_strfree(ctx, before);
    fcg_strfree(ctx, after);
    fck_result_free(r);
    prog_free(&p);
    fc_ctx_destroy(ctx);
}

/* One compile to keys on a context whose Nth allocation fails. Returns whether a failure was
 * injected (the loop stops at the first run without one). */
static bool faulty_run(long fail_at, bool fail_after) {
    counting_alloc ca = {.fail_at = fail_at, .fail_after = fail_after};
    fc_allocator hooks = {ca_malloc, ca_realloc, ca_free, &ca};
    fc_ctx_options opts = {.backend = FC_BACKEND_HOST, .allocator = &hooks};
    fc_ctx *ctx;
    fc_status st = fc_ctx_create(&ctx, &opts);
    if (st != FC_OK) {
        cr_assert_eq(st, FC_ERR_NOMEM);
        cr_assert_eq(ca.live, 0);
        return true;
    }
    prog p;
    st = prog_build(ctx, two_fc, &p);
    if (st == FC_OK) {
        const char *archs[] = {"sm_80", "sm_90"};
        fck_options o = fck_options_default();
        o.stage = FCK_KEY;
        o.archs = archs;
        o.narch = 2;
        fck_result *r = NULL;
        st = fck_compile(ctx, p.outs, p.nout, &o, &r);
        cr_assert(st == FC_OK || (st == FC_ERR_NOMEM && ca.injected), "N=%ld: %s (%s)", fail_at,
                  fc_strerror(st), fc_errmsg(ctx));
        if (st == FC_OK) {
            cr_assert_eq(r->error, FC_OK);
            for (int i = 0; i < r->nkernel; i++) cr_assert_not_null(r->kernels[i].src.src);
        }
        fck_result_free(r);
    } else {
        cr_assert_eq(st, FC_ERR_NOMEM, "N=%ld: %s", fail_at, fc_strerror(st));
    }
    prog_free(&p);
    fc_ctx_destroy(ctx);
    cr_assert_eq(ca.live, 0, "N=%ld: %ld blocks leaked", fail_at, ca.live);
    cr_assert_eq(ca.size_mismatches, 0, "N=%ld: frees named wrong sizes", fail_at);
    return ca.injected;
}

Test(driver, every_allocation_failure_is_clean) {
    for (int mode = 0; mode < 2; mode++)
        for (long n = 1; n < 200000; n++)
            if (!faulty_run(n, mode == 1)) break;
}

/* The fast-math tier's keys: a context with fast_math -1 (off) gives exactly the keys, sources
 * and plan key of one that does not say (0, FUSEC_FAST_MATH unset); the tier (1) gives other
 * kernel keys (other source: codegen/fast_math.cuh in front; other options: --use_fast_math)
 * and another plan key. W8's compare of abs(z) with 2 is the tier's rewrite. */
static const char w8_fc[] =
    "re = linspace(-2.0, 0.5, 64, dtype=f64)\n"
    "im = linspace(-1.25, 1.25, 64, dtype=f64)\n"
    "c = re[None, :] + im[:, None] * 1j\n"
    "z = zeros([64, 64], c128)\n"
    "b = abs(z) <= 2\n"
    "z1 = where(b, z * z + c, z)\n"
    "n = (abs(z1) <= 2) + b\n"
    "out n\n";

typedef struct tier_keys {
    fcc_key key;
    fc_hash plan;
    char options[1024];
    char *src;
} tier_keys;

static void keys_of_tier(const char *text, int fast_math, tier_keys *out) {
    fc_ctx_options o = {.backend = FC_BACKEND_HOST, .fast_math = fast_math};
    fc_ctx *ctx;
    cr_assert_eq(fc_ctx_create(&ctx, &o), FC_OK);
    cr_assert_eq(fc_ctx_fast_math(ctx), fast_math > 0);
    prog p;
    cr_assert_eq(prog_build(ctx, text, &p), FC_OK, "%s", fc_errmsg(ctx));
    fc_array *const *order;
    size_t count;
    cr_assert_eq(fcg_plan_key(ctx, p.outs, p.nout, &out->plan, &order, &count), FC_OK);
    const char *arch = "sm_90";
    fck_options co = fck_options_default();
    co.stage = FCK_KEY;
    co.archs = &arch;
    co.narch = 1;
    fck_result *r;
    cr_assert_eq(fck_compile(ctx, p.outs, p.nout, &co, &r), FC_OK, "%s", fc_errmsg(ctx));
    cr_assert_eq(r->nkernel, 1);
    out->key = r->kernels[0].targets[0].key;
    snprintf(out->options, sizeof out->options, "%s", r->kernels[0].targets[0].fields.options);
    out->src = strdup(r->kernels[0].src.src);
    fck_result_free(r);
    prog_free(&p);
    fc_ctx_destroy(ctx);
}

Test(driver, fast_math_tier_keys_differ_exact_keys_unchanged) {
    unsetenv("FUSEC_FAST_MATH");
    const char *texts[] = {w8_fc, softmax_fc};
    for (int t = 0; t < 2; t++) {
        tier_keys given, off, fast;
        keys_of_tier(texts[t], 0, &given);
        keys_of_tier(texts[t], -1, &off);
        keys_of_tier(texts[t], 1, &fast);
        cr_assert_eq(memcmp(&given.key, &off.key, sizeof given.key), 0, "program %d", t);
        cr_assert_eq(memcmp(&given.plan, &off.plan, sizeof given.plan), 0, "program %d", t);
        cr_assert_str_eq(given.src, off.src);
        cr_assert_neq(memcmp(&given.key, &fast.key, sizeof given.key), 0, "program %d", t);
        cr_assert_neq(memcmp(&given.plan, &fast.plan, sizeof given.plan), 0, "program %d", t);
        cr_assert_null(strstr(given.src, "math tier"));
        cr_assert_not_null(strstr(fast.src, "// math tier: fast"));
        cr_assert_not_null(strstr(fast.src, fcx_fast_math_source));
        cr_assert_null(strstr(given.options, "--use_fast_math"));
        cr_assert_not_null(strstr(given.options, "--fmad=false"));
        cr_assert_not_null(strstr(fast.options, "--use_fast_math"));
        /* W8: abs (hypot) in the exact tier only */
        if (t == 0) {
            cr_assert_not_null(strstr(given.src, "= fcx_abs(v"));
            cr_assert_null(strstr(fast.src, "= fcx_abs(v"));
        }
        free(given.src);
        free(off.src);
        free(fast.src);
    }
}
