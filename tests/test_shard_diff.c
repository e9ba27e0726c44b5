/*
 * tests/test_shard_diff.c - sharded contexts against the host reference on random programs.
 *
 * Each seed builds the same random DAG (tests/random_dag.c: every elementwise op, views,
 * reductions, composites, matmul, lazy sources; tiny extents, so shards are often empty) in an
 * ordinary host context and in a sharded one, evaluates all outputs in both and compares them.
 * The sharded context lays every node out, splits reductions over the split axis into local
 * partials and all-reduces, gathers where a layout cannot follow: every path of
 * backend/mesh.c's lowering runs on programs no one wrote by hand.
 *
 *   host_shards_match_the_host_reference: simulated shards on the host backend (2 to 5 of
 *     them, by seed), here and in CI. FUSEC_SHARD_DIFF_DAGS (default 4000), ..._FIRST.
 *   gpu_shards_match_the_host_reference: a sharded CUDA context (every GPU when there are at
 *     least two: NCCL; else two shards on GPU 0: host-staged collectives) against the host.
 *     Skipped, visibly, where there is no GPU. Same knobs (default 400: each program compiles).
 * FUSEC_SHARD_DIFF_REPORT names a file that receives the .fc text of every mismatch.
 *
 * Tolerances. Integers and bool exactly. Floats: a reduction over the split axis adds
 * per-shard partial sums (in the wide accumulator) where the reference adds everything at once,
 * and var / std take two passes where the reference takes Welford's one, so values differ by
 * the accumulator's rounding, which a rounding to the result dtype mostly erases: an element
 * matches when |got - host| <= rtol * (|host| + scale), rtol 1e-12 for f64 / c128 results and
 * one or two ulps of narrower dtypes (f32 2e-7 * 4, f16 and bf16 a unit of their last place),
 * scale the largest finite |host| of the output times 1e-9; and any |got - host| <= 1e-11,
 * since a sum that cancels to near zero keeps the reassociation error of its terms (at most
 * 4096 of them, of magnitude under 4: 4096 * 4 * 2^-52 < 4e-12) while the output's own
 * magnitude says nothing of theirs.
 * On the GPU the tolerances are test_gpu_diff's (the GPU's own float math differs more), and
 * an output that differs from the host's beyond them is accepted when it matches, by the same
 * tolerances, the output of the same program in a plain one-GPU context: then the difference
 * is the GPU's math against the host's, which test_gpu_diff judges with its replay (each op
 * recomputed from the GPU's own operands), not the sharding this test checks. Seed 351 is
 * one: cuFFT's and the reference's transforms of integers give zeros of opposite signs, and
 * arctan, whose branch cut lies on the imaginary axis, turns them into +pi/2 and -pi/2.
 * NaN must meet NaN, inf the same inf.
 */
#include <criterion/criterion.h>

#include "backend.h" /* fcm_test_force_split */
#include "graph.h"
#include "test_util.h"
#include "test_values.h"
#include "random_dag.c"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Host shards: the rounding of the result dtype (or of the loosest dtype inside the program,
 * whose intermediate rounding a different summation order can move by one unit). */
static double host_rtol_of(fc_dtype t) {
    switch (t) {
    case FC_F16: return 2e-3;
    case FC_BF16: return 1.6e-2;
    case FC_F32: case FC_C64: return 8e-7;
    default: return 1e-12;
    }
}

static fc_status read_all(fc_array *a, unsigned char **out) {
    size_t n = (size_t)fc_array_size(a), bytes = n * fc_dtype_size(fc_array_dtype(a));
    *out = malloc(bytes ? bytes : 1);
    memset(*out, 0xA5, bytes ? bytes : 1); /* poisoned: a missed write cannot pass */
    return fc_read(a, *out, 0, (int64_t)n);
}

static int env_int(const char *name, int dflt) {
    const char *v = getenv(name);
    return v && *v ? atoi(v) : dflt;
}

/* Runs seeds [first, first + count) against the sharded context make(seed) gives (release
 * after each seed); returns the number of mismatching programs. */
/* plain: where not NULL, the context whose value of an output that differs from the host's
 * may stand in for the host's (the one-GPU context). */
static int run_diff(fc_ctx *(*make)(int seed), void (*release)(fc_ctx *ctx), fc_ctx *plain,
                    double (*rtol_of)(fc_dtype), double scale_factor, double atol,
                    const char *what, int default_count) {
    int count = env_int("FUSEC_SHARD_DIFF_DAGS", default_count), first = env_int("FUSEC_SHARD_DIFF_FIRST", 0);
    const char *report_path = getenv("FUSEC_SHARD_DIFF_REPORT");
    FILE *report = report_path ? fopen(report_path, "w") : NULL;
    fc_ctx *hc = tu_host_ctx();
    rdag_options o;
    rdag_default_options(&o);
    int failed = 0, compared = 0, errors_alike = 0, plain_alike = 0;
    for (int seed = first; seed < first + count; seed++) {
        fc_ctx *sc = make(seed);
        rdag hd, sd;
        cr_assert_eq(rdag_build(hc, (uint64_t)seed, &o, &hd), FC_OK);
        cr_assert_eq(rdag_build(sc, (uint64_t)seed, &o, &sd), FC_OK);
        cr_assert_eq(hd.nout, sd.nout);
        double rtol = tv_program_rtol(hc, hd.out, hd.nout, rtol_of);
        fc_status hs = fc_eval(hc, hd.out, hd.nout);
        fc_status ss = fc_eval(sc, sd.out, sd.nout);
        char why[640] = "";
        bool mismatch = false;
        if (hs != ss) {
            /* Integer powers with negative exponents fail on the host reference and are
             * defined on the GPU (test_gpu_diff's rule). */
            if (!(hs == FC_ERR_VALUE && ss == FC_OK && rtol_of == tv_gpu_rtol)) {
                snprintf(why, sizeof why, "host status %d (%s), sharded status %d (%s)", hs,
                         fc_errmsg(hc), ss, fc_errmsg(sc));
                mismatch = true;
            }
        } else if (hs != FC_OK) {
            errors_alike++;
        } else {
            rdag pd = {0}; /* the program in the plain context, built when an output differs */
            bool plain_built = false, plain_ok = false;
            for (int k = 0; k < hd.nout && !mismatch; k++) {
                unsigned char *hb, *sb;
                fc_status s1 = read_all(hd.out[k], &hb), s2 = read_all(sd.out[k], &sb);
                if (s1 != FC_OK || s2 != FC_OK) {
                    snprintf(why, sizeof why, "read failed: host %d, sharded %d (%s)", s1, s2,
                             fc_errmsg(sc));
                    mismatch = true;
                } else if (tv_compare(sb, hb, fc_array_dtype(hd.out[k]),
                                      (size_t)fc_array_size(hd.out[k]), rtol, scale_factor, atol,
                                      "sharded", why, sizeof why)) {
                    size_t len = strlen(why);
                    snprintf(why + len, sizeof why - len, " [output %d, %s]", k,
                             fc_dtype_name(fc_array_dtype(hd.out[k])));
                    mismatch = true;
                    if (plain && !plain_built) {
                        plain_built = true;
                        plain_ok = rdag_build(plain, (uint64_t)seed, &o, &pd) == FC_OK &&
                                   fc_eval(plain, pd.out, pd.nout) == FC_OK;
                    }
                    unsigned char *pb = NULL;
                    char why_plain[320] = "";
                    if (plain_ok && read_all(pd.out[k], &pb) == FC_OK &&
                        !tv_compare(sb, pb, fc_array_dtype(hd.out[k]),
                                    (size_t)fc_array_size(hd.out[k]), rtol, scale_factor, atol,
                                    "sharded", why_plain, sizeof why_plain)) {
                        mismatch = false; /* the one-GPU context computes the same */
                        plain_alike++;
                    } else if (plain) {
                        len = strlen(why);
                        snprintf(why + len, sizeof why - len, "; against one GPU: %s",
                                 plain_ok ? why_plain : fc_errmsg(plain));
                    }
                    free(pb);
                }
                compared++;
                free(hb);
                free(sb);
            }
            if (plain_built) rdag_free(&pd);
        }
        if (mismatch) {
            failed++;
            rdag again; /* evaluated outputs have lost their history: build it again to print */
            cr_assert_eq(rdag_build(hc, (uint64_t)seed, &o, &again), FC_OK);
            char *text = rdag_print(&again);
            rdag_free(&again);
            if (report) fprintf(report, "# seed %d, %d shards: %s\n%s\n", seed,
                                fc_ctx_shards(sc), why, text ? text : "");
            if (failed <= 5)
                cr_log_error("%s: seed %d (%d shards): %s\n%s", what, seed, fc_ctx_shards(sc), why,
                             text ? text : "");
            fc_free(hc, text);
        }
        rdag_free(&hd);
        rdag_free(&sd);
        release(sc);
    }
    if (report) fclose(report);
    fc_ctx_destroy(hc);
    fprintf(stderr, "%s: %d programs (seeds %d..%d), %d outputs compared, %d failing alike, "
            "%d mismatching", what, count, first, first + count - 1, compared, errors_alike,
            failed);
    if (plain)
        fprintf(stderr, ", %d outputs differing from the host as the one-GPU context's do",
                plain_alike);
    fprintf(stderr, "\n");
    return failed;
}

/* 2 to 5 shards; two seeds in three force a split of the inputs along an axis chosen by the
 * seed whatever its extent, so the tiny random programs run split (empty shards included)
 * rather than replicated. */
static fc_ctx *host_shards(int seed) {
    fc_ctx_options o;
    memset(&o, 0, sizeof o);
    o.backend = FC_BACKEND_HOST;
    o.shards = 2 + seed % 4;
    fc_ctx *c = NULL;
    cr_assert_eq(fc_ctx_create(&c, &o), FC_OK);
    if (seed % 3) fcm_test_force_split(c, (seed / 3) % 4);
    return c;
}

Test(shard_diff, host_shards_match_the_host_reference) {
    int failed = run_diff(host_shards, fc_ctx_destroy, NULL, host_rtol_of, 1e-9, 1e-11, "shard_diff (host shards)",
                          4000);
    cr_assert_eq(failed, 0, "%d random programs differ between sharded and plain host contexts",
                 failed);
}

/* One sharded GPU context for the whole run (making NCCL communicators per seed would cost
 * more than the programs); the forced split changes per seed as on the host. */
static fc_ctx *gpu_ctx;

static fc_ctx *gpu_shards(int seed) {
    if (!gpu_ctx) {
        int n = 0;
        fc_device_count(&n);
        static const int same[2] = {0, 0};
        fc_ctx_options o;
        memset(&o, 0, sizeof o);
        o.backend = FC_BACKEND_CUDA;
        o.shards = n >= 2 ? FC_SHARDS_ALL : 2;
        o.devices = n >= 2 ? NULL : same;
        cr_assert_eq(fc_ctx_create(&gpu_ctx, &o), FC_OK);
    }
    fcm_test_force_split(gpu_ctx, seed % 3 ? (seed / 3) % 4 : -1);
    return gpu_ctx;
}

static void keep_ctx(fc_ctx *ctx) { (void)ctx; }

Test(shard_diff, gpu_shards_match_the_host_reference) {
    if (!tu_gpu_available()) {
        fprintf(stderr, "shard_diff: SKIPPED 1 test (no CUDA device): "
                        "gpu_shards_match_the_host_reference\n");
        cr_skip_test("no CUDA device: the sharded GPU differential test is skipped");
    }
    fc_ctx_options po;
    memset(&po, 0, sizeof po);
    po.backend = FC_BACKEND_CUDA;
    fc_ctx *one_gpu = NULL;
    cr_assert_eq(fc_ctx_create(&one_gpu, &po), FC_OK, "the one-GPU context");
    int failed = run_diff(gpu_shards, keep_ctx, one_gpu, tv_gpu_rtol, 1e-3, 1e-30,
                          "shard_diff (GPU shards)", 400);
    fc_ctx_destroy(one_gpu);
    fc_shard_stats st;
    fc_shard_stats_get(gpu_ctx, &st, false);
    fprintf(stderr, "shard_diff (GPU shards): %d shards, collectives %s: %llu all-reduces, %llu "
            "all-gathers\n", fc_ctx_shards(gpu_ctx), st.nccl ? "on NCCL" : "through host memory",
            (unsigned long long)st.allreduces, (unsigned long long)st.gathers);
    fc_ctx_destroy(gpu_ctx);
    gpu_ctx = NULL;
    cr_assert_eq(failed, 0, "%d random programs differ between a sharded GPU context and the "
                 "host reference", failed);
}
