/*
 * tests/test_driver.c - the compile driver (compile/driver.h): stages, the batch's dedup,
 * lookups and builds on threads, failures in kernel order, and that no stage after the graph
 * writes the nodes' scratch fields. A fault-injection loop runs a compile to keys with the Nth
 * allocation failing. Persisted plan entries: served, missed for another arch, shape or build,
 * unusable ones missed and rewritten, their decoding under damage, their paths under
 * allocation failures.
 */
#include <criterion/criterion.h>

#include "fusec.h"
#include "graph.h"
#include "driver.h"
#include "kcompile.h"
#include "plan_entry.h"
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

/* ---- persisted plan entries (compile/plan_entry.h) ---------------------------------------- */

/* A compile of the program to binaries for arch through cache. */
static fck_result *binaries(fc_ctx *ctx, const prog *p, fcc_cache *cache, const char *arch,
                            fck_stage stage) {
    fck_options o = fck_options_default();
    o.stage = stage;
    o.archs = &arch;
    o.narch = 1;
    o.cache = cache;
    fck_result *r;
    cr_assert_eq(fck_compile(ctx, p->outs, p->nout, &o, &r), FC_OK, "%s", fc_errmsg(ctx));
    return r;
}

/* The plan entry's key for the program's outputs. */
static fcc_key entry_key(fc_ctx *ctx, const prog *p, const char *arch, fcc_key_fields *f,
                         char *options, char *source) {
    fc_hash h;
    fc_array *const *order;
    size_t count;
    cr_assert_eq(fcg_plan_key(ctx, p->outs, p->nout, &h, &order, &count), FC_OK);
    fcc_key key;
    char msg[256];
    cr_assert_eq(fck_plan_entry_key(&h, arch, options, 1024, source, 160, f, &key, msg,
                                    sizeof msg), FC_OK, "%s", msg);
    return key;
}

/* A recipe served from an entry is the one codegen gives, text aside. */
static void assert_same_recipe(const fcx_kernel_src *a, const fcx_kernel_src *b) {
    cr_assert_eq(a->nptr, b->nptr);
    cr_assert_eq(a->nint, b->nint);
    cr_assert_eq(a->nflt, b->nflt);
    cr_assert_eq(a->strategy, b->strategy);
    cr_assert_eq(a->block, b->block);
    cr_assert_eq(a->idx64, b->idx64);
    cr_assert_eq(a->vec, b->vec);
    cr_assert_eq(a->ew_thread_steps, b->ew_thread_steps);
    cr_assert_eq(a->splits, b->splits);
    cr_assert_eq(memcmp(a->fields, b->fields, sizeof a->fields), 0);
    cr_assert_eq(memcmp(a->cached, b->cached, sizeof a->cached), 0);
    cr_assert_eq(a->static_smem, b->static_smem);
    for (int j = 0; j < a->nint; j++)
        cr_assert(a->islots[j].kind == b->islots[j].kind && a->islots[j].node ==
                  b->islots[j].node && a->islots[j].dim == b->islots[j].dim, "int slot %d", j);
    for (int j = 0; j < a->nflt; j++)
        cr_assert(a->fslots[j].kind == b->fslots[j].kind && a->fslots[j].node ==
                  b->fslots[j].node && a->fslots[j].dim == b->fslots[j].dim, "float slot %d", j);
}

static void assert_served(fc_ctx *ctx, const fck_result *r) {
    cr_assert_eq(r->plan_entry, FCK_PLAN_HIT);
    cr_assert_eq(r->nkernel, r->plan->nkernel);
    cr_assert_eq(r->cached, r->nkernel);
    cr_assert_eq(r->compiled, 0);
    for (int i = 0; i < r->nkernel; i++) {
        const fck_kernel *k = &r->kernels[i];
        cr_assert_eq(k->k, &r->plan->kernels[i]);
        cr_assert_null(k->src.src, "kernel %d: no source generated", i);
        cr_assert_eq(k->targets[0].state, FCK_CACHED);
        cr_assert_not_null(k->targets[0].cubin);
        fcx_kernel_src src;
        cr_assert_eq(fcx_generate(ctx, k->k, &src), FC_OK);
        assert_same_recipe(&k->src, &src);
        fcx_kernel_src_free(ctx, &src);
    }
}

/* A host context, a memory cache, and a program compiled into it for sm_80 (its plan entry
 * written). */
typedef struct fixture {
    fc_ctx *ctx;
    fcc_cache *cache;
    prog p;
} fixture;

static void fixture_open(fixture *f, const char *text) {
    f->ctx = host_ctx();
    f->cache = memory_cache();
    cr_assert_eq(prog_build(f->ctx, text, &f->p), FC_OK);
    fck_result *r = binaries(f->ctx, &f->p, f->cache, "sm_80", FCK_BINARY);
    cr_assert_eq(r->plan_entries_written, 1);
    fck_result_free(r);
}

static void fixture_close(fixture *f) {
    prog_free(&f->p);
    fcc_close(f->cache);
    fc_ctx_destroy(f->ctx);
}

/* A batch of the program (as fusec warm builds it) into a cache that holds its kernels and
 * its plan entry: everything cached, nothing written. */
static void o_batch_again(fc_ctx *ctx, const prog *p, fcc_cache *cache) {
    const char *arch = "sm_80";
    fck_options o = fck_options_default();
    o.archs = &arch;
    o.narch = 1;
    o.cache = cache;
    o.batch = true;
    fck_result *r;
    cr_assert_eq(fck_result_create(ctx, &o, &r), FC_OK);
    cr_assert_eq(fck_add(r, p->outs, p->nout), FC_OK);
    cr_assert_eq(fck_build(r), FC_OK, "%s", fc_errmsg(ctx));
    cr_assert_eq(r->cached, r->nkernel);
    cr_assert_eq(r->plan_entries_written, 0, "the same entry is not written again");
    fck_result_free(r);
}

Test(driver, plan_entry_serves_a_later_compile_without_codegen) {
    fc_ctx *ctx = host_ctx();
    fcc_cache *cache = memory_cache();
    prog p;
    cr_assert_eq(prog_build(ctx, two_fc, &p), FC_OK);
    fck_result *r = binaries(ctx, &p, cache, "sm_80", FCK_BINARY);
    cr_assert_eq(r->plan_entry, FCK_PLAN_MISS);
    cr_assert_eq(r->plan_entries_written, 1);
    cr_assert_eq(r->compiled, r->nkernel);
    const void *cubin0 = r->kernels[0].targets[0].cubin;
    fcc_key key0 = r->kernels[0].targets[0].key;
    fck_result_free(r);

    /* The whole path again (no_plan_entry off, but a batch never serves): the entry is the
     * same and is not written again. */
    o_batch_again(ctx, &p, cache);

    /* A lookup only reports it; the kernels are generated as before. */
    r = binaries(ctx, &p, cache, "sm_80", FCK_LOOKUP);
    cr_assert_eq(r->plan_entry, FCK_PLAN_HIT);
    cr_assert_not_null(r->kernels[0].src.src);
    fck_result_free(r);

    /* Binaries come from it: the same keys and cubins, codegen's recipes, no source. */
    r = binaries(ctx, &p, cache, "sm_80", FCK_BINARY);
    assert_served(ctx, r);
    cr_assert_eq(r->kernels[0].targets[0].cubin, cubin0);
    cr_assert_eq(memcmp(&r->kernels[0].targets[0].key, &key0, sizeof key0), 0);
    cr_assert_eq(r->plan_entries_written, 0, "a served program writes nothing");
    fck_result_free(r);

    /* The same program built again (new nodes, same structure) and the caller's key. */
    prog q;
    cr_assert_eq(prog_build(ctx, two_fc, &q), FC_OK);
    fc_hash h;
    fc_array *const *order;
    size_t count;
    cr_assert_eq(fcg_plan_key(ctx, q.outs, q.nout, &h, &order, &count), FC_OK);
    const char *arch = "sm_80";
    fck_options o = fck_options_default();
    o.archs = &arch;
    o.narch = 1;
    o.cache = cache;
    o.plan_key = &h;
    cr_assert_eq(fck_compile(ctx, q.outs, q.nout, &o, &r), FC_OK);
    assert_served(ctx, r);
    fck_result_free(r);

    /* no_plan_entry: neither used nor written. */
    o.no_plan_entry = true;
    cr_assert_eq(fck_compile(ctx, q.outs, q.nout, &o, &r), FC_OK);
    cr_assert_eq(r->plan_entry, FCK_PLAN_UNUSED);
    cr_assert_not_null(r->kernels[0].src.src);
    cr_assert_eq(r->plan_entries_written, 0);
    fck_result_free(r);
    prog_free(&q);
    prog_free(&p);
    fcc_close(cache);
    fc_ctx_destroy(ctx);
}

Test(driver, plan_entry_misses_for_another_arch_shape_or_build) {
    fixture fx;
    fixture_open(&fx, softmax_fc);
    fc_ctx *ctx = fx.ctx;
    fcc_cache *cache = fx.cache;
    prog p = fx.p;
    fck_result *r = binaries(ctx, &p, cache, "sm_90", FCK_LOOKUP);
    cr_assert_eq(r->plan_entry, FCK_PLAN_MISS, "another arch is another entry");
    fck_result_free(r);

    /* Another build of fusec (another hash of the planning and codegen sources). */
    fck_plan_entry_set_build_for_tests("another build");
    r = binaries(ctx, &p, cache, "sm_80", FCK_LOOKUP);
    cr_assert_eq(r->plan_entry, FCK_PLAN_MISS, "another build is another entry");
    fck_result_free(r);
    fck_plan_entry_set_build_for_tests(NULL);
    r = binaries(ctx, &p, cache, "sm_80", FCK_LOOKUP);
    cr_assert_eq(r->plan_entry, FCK_PLAN_HIT);
    fck_result_free(r);

    /* Another shape is another structure (its kernels are the same: shape-generic). */
    prog q;
    char other[sizeof softmax_fc + 8];
    snprintf(other, sizeof other, "%s", softmax_fc);
    memcpy(strstr(other, "[64, 256]"), "[64, 512]", 9);
    cr_assert_eq(prog_build(ctx, other, &q), FC_OK);
    r = binaries(ctx, &q, cache, "sm_80", FCK_BINARY);
    cr_assert_eq(r->plan_entry, FCK_PLAN_MISS);
    cr_assert_eq(r->cached, r->nkernel, "the kernels were cached already");
    cr_assert_eq(r->plan_entries_written, 1);
    fck_result_free(r);
    prog_free(&q);
    fixture_close(&fx);
}

/* A plan entry that is unusable is a miss, never a failure: garbage under its key (a valid
 * checksum: the cache cannot tell), another plan's entry under its key, an entry whose
 * kernels are gone. Each time the whole path runs and writes it again. */
Test(driver, unusable_plan_entries_are_misses_and_are_rewritten) {
    fixture fx;
    fixture_open(&fx, softmax_fc);
    fc_ctx *ctx = fx.ctx;
    fcc_cache *cache = fx.cache;
    prog p = fx.p, q;
    cr_assert_eq(prog_build(ctx, two_fc, &q), FC_OK);
    fck_result_free(binaries(ctx, &q, cache, "sm_80", FCK_BINARY));
    char options[1024], source[160], qoptions[1024], qsource[160];
    fcc_key_fields f, qf;
    fcc_key key = entry_key(ctx, &p, "sm_80", &f, options, source);
    fcc_key qkey = entry_key(ctx, &q, "sm_80", &qf, qoptions, qsource);
    fcc_entry good, other;
    bool found;
    cr_assert_eq(fcc_get(cache, &key, &good, &found), FC_OK);
    cr_assert(found);
    cr_assert_eq(fcc_get(cache, &qkey, &other, &found), FC_OK);
    cr_assert(found);

    const char garbage[] = "not a plan entry at all";
    struct {
        const void *value;
        size_t size;
    } bad[] = {
        {garbage, sizeof garbage},
        {other.cubin, other.cubin_size}, /* two_fc's entry: another structure */
        {good.cubin, good.cubin_size - 1},
        {"", 0},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert_eq(fcc_put(cache, &f, "bad", bad[i].value, bad[i].size, NULL, 0), FC_OK);
        fck_result *r = binaries(ctx, &p, cache, "sm_80", FCK_BINARY);
        cr_assert_eq(r->plan_entry, FCK_PLAN_STALE, "case %zu", i);
        cr_assert_not_null(r->kernels[0].src.src, "case %zu: the whole path ran", i);
        cr_assert_eq(r->plan_entries_written, 1, "case %zu: written again", i);
        fck_result_free(r);
        r = binaries(ctx, &p, cache, "sm_80", FCK_BINARY);
        assert_served(ctx, r);
        fck_result_free(r);
    }

    /* The entry alone, in a cache without its kernels: stale, the kernels compile. */
    fcc_cache *bare = memory_cache();
    cr_assert_eq(fcc_get(cache, &key, &good, &found), FC_OK);
    cr_assert_eq(fcc_put(bare, &f, "plan", good.cubin, good.cubin_size, NULL, 0), FC_OK);
    fck_result *r = binaries(ctx, &p, bare, "sm_80", FCK_BINARY);
    cr_assert_eq(r->plan_entry, FCK_PLAN_STALE);
    cr_assert_eq(r->compiled, r->nkernel);
    fck_result_free(r);
    r = binaries(ctx, &p, bare, "sm_80", FCK_BINARY);
    assert_served(ctx, r);
    fck_result_free(r);
    fcc_close(bare);
    prog_free(&q);
    fixture_close(&fx);
}

/* Decoding a damaged value never reads outside it: every truncation is refused, every byte
 * flipped either refused or decoded within bounds (checked by the sanitizer builds). */
Test(driver, plan_entry_decoding_survives_any_damage) {
    fixture fx;
    fixture_open(&fx, two_fc);
    fc_ctx *ctx = fx.ctx;
    fcc_cache *cache = fx.cache;
    prog p = fx.p;
    char options[1024], source[160];
    fcc_key_fields f;
    fcc_key key = entry_key(ctx, &p, "sm_80", &f, options, source);
    fcc_entry e;
    bool found;
    cr_assert_eq(fcc_get(cache, &key, &e, &found), FC_OK);
    cr_assert(found);
    fc_hash h;
    fc_array *const *order;
    size_t count;
    cr_assert_eq(fcg_plan_key(ctx, p.outs, p.nout, &h, &order, &count), FC_OK);
    fck_plan_kernel *k;
    int nk;
    cr_assert(fck_plan_entry_decode(ctx, e.cubin, e.cubin_size, &h, &k, &nk));
    cr_assert_geq(nk, 2);
    fck_plan_kernels_free(ctx, k, nk);
    uint8_t *copy = malloc(e.cubin_size);
    for (size_t len = 0; len < e.cubin_size; len++) {
        memcpy(copy, e.cubin, len); /* exactly len bytes: a read past them is caught */
        uint8_t *exact = malloc(len ? len : 1);
        memcpy(exact, copy, len);
        cr_assert(!fck_plan_entry_decode(ctx, exact, len, &h, &k, &nk), "%zu bytes", len);
        free(exact);
    }
    for (size_t at = 0; at < e.cubin_size; at++)
        for (int bit = 0; bit < 8; bit += 3) {
            memcpy(copy, e.cubin, e.cubin_size);
            copy[at] ^= (uint8_t)(1u << bit);
            if (fck_plan_entry_decode(ctx, copy, e.cubin_size, &h, &k, &nk))
                fck_plan_kernels_free(ctx, k, nk);
        }
    free(copy);
    fixture_close(&fx);
}

/* The served path and the writing path with the Nth allocation failing: a failure is clean
 * (nothing leaked, the sizes freed are the sizes allocated); a served compile needs no NVRTC,
 * so every N is tried. */
static bool faulty_served_run(fcc_cache *cache, long fail_at) {
    counting_alloc ca = {.fail_at = fail_at};
    fc_allocator hooks = {ca_malloc, ca_realloc, ca_free, &ca};
    fc_ctx_options opts = {.backend = FC_BACKEND_HOST, .allocator = &hooks};
    fc_ctx *ctx;
    if (fc_ctx_create(&ctx, &opts) != FC_OK) return true;
    prog p;
    fc_status st = prog_build(ctx, two_fc, &p);
    if (st == FC_OK) {
        const char *arch = "sm_80";
        fck_options o = fck_options_default();
        o.archs = &arch;
        o.narch = 1;
        o.cache = cache;
        fck_result *r = NULL;
        st = fck_compile(ctx, p.outs, p.nout, &o, &r);
        cr_assert(st == FC_OK || (st == FC_ERR_NOMEM && ca.injected), "N=%ld: %s (%s)", fail_at,
                  fc_strerror(st), fc_errmsg(ctx));
        if (st == FC_OK) cr_assert_eq(r->cached, r->nkernel, "N=%ld", fail_at);
        fck_result_free(r);
        /* Two archs, one entry missing: the other's decoded kernels are freed whole. */
        const char *archs[] = {"sm_80", "sm_90"};
        o.stage = FCK_LOOKUP;
        o.archs = archs;
        o.narch = 2;
        r = NULL;
        st = fck_compile(ctx, p.outs, p.nout, &o, &r);
        cr_assert(st == FC_OK || (st == FC_ERR_NOMEM && ca.injected), "N=%ld: %s (%s)", fail_at,
                  fc_strerror(st), fc_errmsg(ctx));
        /* (stale when decoding sm_80's ran out of memory; no kernels at all when building
         * the program did, and left its outputs poisoned) */
        if (st == FC_OK && r->nkernel)
            cr_assert(r->plan_entry == FCK_PLAN_MISS ||
                      (ca.injected && r->plan_entry == FCK_PLAN_STALE), "N=%ld: state %d",
                      fail_at, (int)r->plan_entry);
        fck_result_free(r);
    }
    prog_free(&p);
    fc_ctx_destroy(ctx);
    cr_assert_eq(ca.live, 0, "N=%ld: %ld blocks leaked", fail_at, ca.live);
    cr_assert_eq(ca.size_mismatches, 0, "N=%ld: frees named wrong sizes", fail_at);
    return ca.injected;
}

Test(driver, plan_entry_paths_survive_every_allocation_failure) {
    fixture fx;
    fixture_open(&fx, two_fc);
    for (long n = 1; n < 200000; n++)
        if (!faulty_served_run(fx.cache, n)) break;
    fixture_close(&fx);
}
