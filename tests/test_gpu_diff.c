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
#include "random_dag.c"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool gpu_available(void) { return tu_gpu_available(); }

static double rtol_of(fc_dtype t) {
    switch (t) {
    case FC_F16: return 2e-2;
    case FC_BF16: return 1e-1;
    case FC_F32: case FC_C64: return 1e-4;
    default: return 1e-9;
    }
}

static double value_at(const unsigned char *p, fc_dtype t, size_t i, int part) {
    switch (t) {
    case FC_F16: { uint16_t h; memcpy(&h, p + 2 * i, 2); return fcg_f16_to_f32(h); }
    case FC_BF16: { uint16_t h; memcpy(&h, p + 2 * i, 2); return fcg_bf16_to_f32(h); }
    case FC_F32: { float f; memcpy(&f, p + 4 * i, 4); return f; }
    case FC_F64: { double d; memcpy(&d, p + 8 * i, 8); return d; }
    case FC_C64: { float f; memcpy(&f, p + 8 * i + 4 * (size_t)part, 4); return f; }
    case FC_C128: { double d; memcpy(&d, p + 16 * i + 8 * (size_t)part, 8); return d; }
    default: return 0;
    }
}

/* The loosest tolerance any float dtype in the program calls for: the GPU keeps f16/bf16
 * and f32 intermediates at higher precision than the host, which rounds after every op, so
 * an f64 output of a program with f16 inside it is only as close as f16 allows. */
static double program_rtol(fc_ctx *ctx, fc_array *const *outs, int n) {
    fc_array **ord;
    size_t count;
    double r = 1e-9;
    if (fcg_topo_order(ctx, outs, n, false, &ord, &count) != FC_OK) return 1e-1;
    for (size_t i = 0; i < count; i++) {
        fc_dtype t = (fc_dtype)ord[i]->dtype;
        if (fcg_is_inexact(t) && rtol_of(t) > r) r = rtol_of(t);
        t = (fc_dtype)ord[i]->loop_dtype;
        if (fcg_is_inexact(t) && rtol_of(t) > r) r = rtol_of(t);
    }
    fcg_free(ctx, ord, count * sizeof *ord);
    return r;
}

/* Number of mismatching elements of one output. */
static size_t compare(const unsigned char *gpu, const unsigned char *host, fc_dtype t, size_t n,
                      double rtol, char *why, size_t why_size) {
    size_t es = fc_dtype_size(t), bad = 0;
    if (!fcg_is_inexact(t)) {
        for (size_t i = 0; i < n; i++)
            if (memcmp(gpu + i * es, host + i * es, es) != 0) {
                if (!bad) snprintf(why, why_size, "element %zu differs (integer/bool)", i);
                bad++;
            }
        return bad;
    }
    int parts = fcg_is_complex(t) ? 2 : 1;
    double scale = 0;
    for (size_t i = 0; i < n; i++)
        for (int q = 0; q < parts; q++) {
            double h = fabs(value_at(host, t, i, q));
            if (isfinite(h) && h > scale) scale = h;
        }
    scale *= 1e-3;
    for (size_t i = 0; i < n; i++)
        for (int q = 0; q < parts; q++) {
            double g = value_at(gpu, t, i, q), h = value_at(host, t, i, q);
            bool ok;
            if (isnan(h) || isnan(g)) ok = isnan(h) && isnan(g);
            else if (isinf(h) || isinf(g)) ok = g == h;
            else ok = fabs(g - h) <= rtol * (fabs(h) + scale) || fabs(g - h) <= 1e-30;
            if (!ok) {
                if (!bad) snprintf(why, why_size, "element %zu%s: gpu %.9g, host %.9g", i,
                                   q ? " (imag)" : "", g, h);
                bad++;
            }
        }
    return bad;
}

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
        double rtol = program_rtol(hc, hd.out, hd.nout);
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
                } else if (compare(gb, hb, fc_array_dtype(hd.out[k]),
                                   (size_t)fc_array_size(hd.out[k]), rtol, why, sizeof why)) {
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
