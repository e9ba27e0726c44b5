/*
 * tests/test_gpu_diff.c - the CUDA backend against the host reference on random programs.
 *
 * Each seed builds the same random DAG (tests/random_dag.c) in a host context and a CUDA
 * context, evaluates all outputs in both and compares them. Skipped, visibly, where there is
 * no GPU. FUSEC_DIFF_DAGS sets the count (default 2000) and FUSEC_DIFF_FIRST the first seed
 * (default 0), so a long run can be split; FUSEC_DIFF_REPORT names a file that
 * receives the .fc text of every mismatching program.
 *
 * Tolerances: integers and bool exactly. Floats: the GPU computes f16/bf16 chains in f32
 * without rounding between fused ops, and sums in a different order, so an element matches
 * when |gpu - host| <= rtol * (|host| + scale), rtol set by the least precise float dtype in
 * the program and scale the largest finite |host| of that output times 1e-3 (absorbs
 * cancellation); NaN must meet NaN and inf the same inf.
 */
#include <criterion/criterion.h>

#include "graph.h"
#include "test_util.h"
#include "test_values.h"
#include "random_dag.c"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool gpu_available(void) { return tu_gpu_available(); }

static void read_all(fc_array *a, unsigned char **out, size_t *bytes, fc_status *st) {
    size_t n = (size_t)fc_array_size(a), es = fc_dtype_size(fc_array_dtype(a));
    *bytes = n * es;
    *out = malloc(*bytes ? *bytes : 1);
    memset(*out, 0xA5, *bytes ? *bytes : 1); /* poisoned: a missed write cannot pass */
    *st = fc_read(a, *out, 0, (int64_t)n);
}

Test(gpu, random_dags_match_the_host_reference) {
    if (!gpu_available()) {
        fprintf(stderr, "gpu: SKIPPED 1 test (no CUDA device): random_dags_match_the_host_reference\n");
        cr_skip_test("no CUDA device: the GPU differential test is skipped");
    }
    const char *env = getenv("FUSEC_DIFF_DAGS");
    int count = env ? atoi(env) : 2000;
    const char *first_env = getenv("FUSEC_DIFF_FIRST"); /* to split a long run into chunks */
    int first = first_env ? atoi(first_env) : 0;
    const char *report_path = getenv("FUSEC_DIFF_REPORT");
    FILE *report = report_path ? fopen(report_path, "w") : NULL;
    fc_ctx_options ho, go;
    memset(&ho, 0, sizeof ho);
    memset(&go, 0, sizeof go);
    ho.backend = FC_BACKEND_HOST;
    go.backend = FC_BACKEND_CUDA;
    rdag_options o;
    rdag_default_options(&o);
    int failed_programs = 0, compared = 0, eval_failures = 0;
    /* FUSEC_DIFF_SEEDS="11,163": just these seeds (reproducing a report). */
    const char *list = getenv("FUSEC_DIFF_SEEDS");
    int seeds[4096], nseeds = 0;
    for (const char *c = list; c && *c && nseeds < 4096;) {
        seeds[nseeds++] = atoi(c);
        c = strchr(c, ',');
        if (c) c++;
    }
    if (nseeds) count = nseeds;
    for (int si = 0; si < count; si++) {
        int seed = nseeds ? seeds[si] : first + si;
        fc_ctx *hc, *gc;
        cr_assert_eq(fc_ctx_create(&hc, &ho), FC_OK);
        cr_assert_eq(fc_ctx_create(&gc, &go), FC_OK);
        rdag hd, gd;
        cr_assert_eq(rdag_build(hc, (uint64_t)seed, &o, &hd), FC_OK);
        cr_assert_eq(rdag_build(gc, (uint64_t)seed, &o, &gd), FC_OK);
        cr_assert_eq(hd.nout, gd.nout);
        /* Before evaluating: an evaluated output is a leaf, its history gone. */
        double rtol = tv_program_rtol(hc, hd.out, hd.nout, tv_gpu_rtol);
        fc_status hs = fc_eval(hc, hd.out, hd.nout);
        fc_status gs = fc_eval(gc, gd.out, gd.nout);
        bool mismatch = false;
        char why[512] = "";
        if (hs != gs) {
            /* The host fails on values (integer ** negative); the GPU defines a result. */
            if (!(hs == FC_ERR_VALUE && gs == FC_OK)) {
                snprintf(why, sizeof why, "host status %d (%s), gpu status %d (%s)", hs,
                         fc_errmsg(hc), gs, fc_errmsg(gc));
                mismatch = true;
                eval_failures++;
            }
        } else if (hs == FC_OK) {
            for (int k = 0; k < hd.nout && !mismatch; k++) {
                unsigned char *hb, *gb;
                size_t hbytes, gbytes;
                fc_status s1, s2;
                read_all(hd.out[k], &hb, &hbytes, &s1);
                read_all(gd.out[k], &gb, &gbytes, &s2);
                if (s1 != FC_OK || s2 != FC_OK) {
                    snprintf(why, sizeof why, "read failed: host %d, gpu %d (%s)", s1, s2,
                             fc_errmsg(gc));
                    mismatch = true;
                } else if (tv_compare(gb, hb, fc_array_dtype(hd.out[k]), (size_t)fc_array_size(hd.out[k]),
                                      rtol, 1e-3, 1e-30, "gpu", why, sizeof why)) {
                    mismatch = true;
                    /* Name the output and show the first bytes of both, for the report. */
                    size_t len = strlen(why), show = hbytes < 32 ? hbytes : 32;
                    len += (size_t)snprintf(why + len, sizeof why - len, " [output %d, %s; gpu", k,
                                            fc_dtype_name(fc_array_dtype(hd.out[k])));
                    for (size_t b = 0; b < show && len < sizeof why - 8; b++)
                        len += (size_t)snprintf(why + len, sizeof why - len, " %02x", gb[b]);
                    len += (size_t)snprintf(why + len, sizeof why - len, "; host");
                    for (size_t b = 0; b < show && len < sizeof why - 8; b++)
                        len += (size_t)snprintf(why + len, sizeof why - len, " %02x", hb[b]);
                    if (len < sizeof why - 2) snprintf(why + len, sizeof why - len, "]");
                }
                compared++;
                free(hb);
                free(gb);
            }
        }
        if (mismatch) {
            failed_programs++;
            char *text = rdag_print(&hd);
            if (report) fprintf(report, "# seed %d: %s\n%s\n", seed, why, text ? text : "");
            if (failed_programs <= 5) cr_log_error("seed %d: %s", seed, why);
            fc_free(hc, text);
        }
        rdag_free(&hd);
        rdag_free(&gd);
        fc_ctx_destroy(hc);
        fc_ctx_destroy(gc);
    }
    if (report) fclose(report);
    cr_log_info("%d programs, %d outputs compared, %d mismatching programs (%d status mismatches)",
                count, compared, failed_programs, eval_failures);
    printf("gpu differential: %d programs, %d outputs compared, %d mismatching\n", count, compared,
           failed_programs);
    cr_expect_eq(failed_programs, 0, "%d of %d random programs differ between GPU and host",
                 failed_programs, count);
}
