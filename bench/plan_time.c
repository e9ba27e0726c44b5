/*
 * bench/plan_time.c - the host-side planning cost of programs (issue 13 item 8): the part of
 * a first evaluation from a warm disk cache that runs before the persisted plan entry is
 * found, repeated so that it can be profiled and compared before and after a change. Per
 * program, medians over the repetitions of
 *   first key, first plan: in a new context each time (the program parsed into it first), the
 *          plan key (fcg_plan_key) and then the passes (fcp_plan_build: simplify, fusion,
 *          scheduling; fcp_plan_destroy untimed), as a new process's first evaluation runs
 *          them: its own nodes, hash-consing table and allocations still cold;
 *   key, plan: again and again in one context (plan: fcp_plan_build + fcp_plan_destroy);
 *   warm:  fcg_plan_key + fck_compile to binaries served from the plan entry and the kernel
 *          cache (only with --cache-dir, which must hold the program's entry: run
 *          bench/startup on it once first), as the runtime's first evaluation does.
 * Times are the thread's CPU time (CLOCK_THREAD_CPUTIME_ID), so that the other load of a
 * shared build machine shows less (it still shows through the caches). No GPU needed.
 *
 *     plan_time [--reps N] [--set NAME=VALUE ...] [--arch sm_XX] [--cache-dir DIR] FILE.fc ...
 *
 * Prints one line per program:
 *     FILE: N nodes, K kernels; first key M ms, first plan M ms; key M ms, plan M ms
 *           [; warm M ms (plan entry S)]
 */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char usage[] =
    "usage: plan_time [--reps N] [--set NAME=VALUE ...] [--arch sm_XX] [--cache-dir DIR]\n"
    "                 FILE.fc ...\n";

typedef struct run_opts {
    cli_opts *cli;
    int reps;
    double *t_key, *t_plan; /* reps each: the new contexts' first key and plan */
    int fresh;              /* new contexts timed so far */
} run_opts;

/* Seconds of this thread's CPU time. */
static double cpu_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_ms(double *t, int n) {
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    return (n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2) * 1e3;
}

/* The first key and plan of a program in a context just made for it. */
static int time_first(fc_ctx *ctx, const cli_program *p, void *user) {
    run_opts *ro = user;
    fc_hash key;
    fc_array *const *order;
    size_t count;
    fcp_plan *plan = NULL;
    double t0 = cpu_now();
    fc_status st = fcg_plan_key(ctx, p->outs, p->nout, &key, &order, &count);
    double t1 = cpu_now();
    if (st == FC_OK) st = fcp_plan_build(ctx, p->outs, p->nout, &plan);
    double t2 = cpu_now();
    fcp_plan_destroy(plan);
    if (st != FC_OK) {
        cli_error("%s: %s", p->label, fc_errmsg(ctx));
        return EXIT_PROGRAM;
    }
    ro->t_key[ro->fresh] = t1 - t0;
    ro->t_plan[ro->fresh] = t2 - t1;
    ro->fresh++;
    return EXIT_OK;
}

/* The warm start path once: key, then the driver served from the persisted entries. */
static fc_status warm_once(fc_ctx *ctx, const cli_program *p, const char *arch,
                           fck_plan_state *state) {
    fc_hash key;
    fc_array *const *order;
    size_t count;
    fc_status st = fcg_plan_key(ctx, p->outs, p->nout, &key, &order, &count);
    if (st != FC_OK) return st;
    fck_options co = fck_options_default();
    co.stage = FCK_BINARY;
    co.archs = &arch;
    co.narch = 1;
    co.plan_key = &key;
    fck_result *r = NULL;
    st = fck_compile(ctx, p->outs, p->nout, &co, &r);
    if (r) *state = r->plan_entry;
    fck_result_free(r);
    return st;
}

/* Everything but the first key and plan, in the context the program was read into. */
static int time_program(fc_ctx *ctx, const cli_program *p, void *user) {
    run_opts *ro = user;
    int reps = ro->reps;
    double *t = malloc((size_t)reps * sizeof *t);
    if (!t) return EXIT_EVAL;
    fc_status st = FC_OK;
    int nkernel = 0;
    size_t nnode = 0;
    for (int i = 0; i < reps && st == FC_OK; i++) {
        fcp_plan *plan;
        double t0 = cpu_now();
        st = fcp_plan_build(ctx, p->outs, p->nout, &plan);
        if (st != FC_OK) break;
        nkernel = plan->nkernel;
        fcp_plan_destroy(plan);
        t[i] = cpu_now() - t0;
    }
    double plan_ms = st == FC_OK ? median_ms(t, reps) : 0;
    for (int i = 0; i < reps && st == FC_OK; i++) {
        fc_hash key;
        fc_array *const *order;
        double t0 = cpu_now();
        st = fcg_plan_key(ctx, p->outs, p->nout, &key, &order, &nnode);
        t[i] = cpu_now() - t0;
    }
    double key_ms = st == FC_OK ? median_ms(t, reps) : 0;
    fck_plan_state state = FCK_PLAN_UNUSED;
    double warm_ms = 0;
    bool warm = ro->cli->cache_dir != NULL;
    for (int i = 0; warm && i < reps && st == FC_OK; i++) {
        double t0 = cpu_now();
        st = warm_once(ctx, p, ro->cli->archs[0], &state);
        t[i] = cpu_now() - t0;
    }
    if (warm && st == FC_OK) warm_ms = median_ms(t, reps);
    free(t);
    if (st != FC_OK) {
        cli_error("%s: %s", p->label, fc_errmsg(ctx));
        return EXIT_PROGRAM;
    }
    printf("%s: %zu nodes, %d kernels; first key %.4f ms, first plan %.4f ms; key %.4f ms, "
           "plan %.4f ms", p->label, nnode, nkernel, median_ms(ro->t_key, ro->fresh),
           median_ms(ro->t_plan, ro->fresh), key_ms, plan_ms);
    if (warm)
        printf("; warm %.4f ms (plan entry %s)", warm_ms,
               state == FCK_PLAN_HIT ? "hit" : state == FCK_PLAN_STALE ? "stale" : "miss");
    printf("\n");
    return EXIT_OK;
}

/* One file: its first keys and plans in new contexts, then the rest in one more. */
static int time_file(run_opts *ro, const char *file) {
    cli_opts *o = ro->cli;
    int rc = EXIT_OK;
    ro->fresh = 0;
    for (int i = 0; i < ro->reps && !rc; i++) {
        fc_ctx *ctx;
        if ((rc = cli_open_ctx(FC_BACKEND_HOST, o->cache_dir, false, &ctx))) break;
        /* one program a file: several would share the first-plan samples */
        rc = cli_for_each_program(ctx, o, file, true, true, time_first, ro);
        fc_ctx_destroy(ctx);
    }
    fc_ctx *ctx;
    if (!rc && !(rc = cli_open_ctx(FC_BACKEND_HOST, o->cache_dir, false, &ctx))) {
        rc = cli_for_each_program(ctx, o, file, true, true, time_program, ro);
        fc_ctx_destroy(ctx);
    }
    return rc;
}

int main(int argc, char **argv) {
    /* This tool's own flag, anywhere; the rest are the CLI's options. */
    run_opts ro = {NULL, 200, NULL, NULL, 0};
    int n = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) ro.reps = atoi(argv[++i]);
        else argv[++n] = argv[i];
    }
    cli_opts o;
    int rc = cli_parse("plan_time", n, argv + 1,
                       OPT_SET | OPT_ARCH | OPT_CACHE_DIR | OPT_FILES, &o);
    if (!rc && !o.help && ro.reps < 1) {
        cli_error("--reps must be at least 1");
        rc = EXIT_USAGE;
    }
    if (rc || o.help) {
        fputs(usage, o.help ? stdout : stderr);
        cli_opts_free(&o);
        return rc;
    }
    ro.cli = &o;
    ro.t_key = malloc((size_t)ro.reps * sizeof *ro.t_key);
    ro.t_plan = malloc((size_t)ro.reps * sizeof *ro.t_plan);
    if (!ro.t_key || !ro.t_plan) {
        cli_error("out of memory");
        rc = EXIT_EVAL;
    }
    for (int f = 0; f < o.nfiles && !rc; f++) rc = time_file(&ro, o.files[f]);
    free(ro.t_key);
    free(ro.t_plan);
    cli_opts_free(&o);
    return rc;
}
