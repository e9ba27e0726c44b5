/*
 * bench/startup.c - the start-up path of one program, timed in a new process (issue 13 item
 * 8): from the first evaluation's entry to the point where its kernels would be launched,
 * which is what the CUDA runtime does on a miss of its in-process plan cache (fcr_eval): the
 * plan key, then the compile driver to binaries (the persisted plan entry, or the passes,
 * codegen and keys; the kernel cache; NVRTC on a miss). Module loads and the launches
 * themselves need a GPU and are left out, so it runs anywhere. The kernel cache is opened
 * inside the timed span, as a new process's first evaluation opens it.
 *
 *     startup [--arch sm_XX] [--set NAME=VALUE ...] [--cache-dir DIR] [--json]
 *             [--no-plan-entry] FILE.fc
 *
 * --no-plan-entry takes the path without persisted plan entries (passes, codegen, keys, then
 * the kernel cache), as fusec did before them: the "before" of issue 13's figures.
 *
 * One program per process (run it once per file): the point is the first evaluation of a
 * process. Prints one line, or one JSON object with --json:
 *     FILE: first compile T ms, NVRTC N ms (K kernels; plan entry hit|miss; C compiled, H cached)
 * N is NVRTC's own time for the kernels compiled (source to cubin); T - N is fusec's.
 *
 * --nvrtc-phases R then compiles each generated kernel's source R more times as it was
 * compiled, with NVRTC's --time=- added, and prints the medians of NVRTC's phases: front end
 * (source to NVVM IR), NVVM optimiser, PTX translation (ptxas, PTX to cubin).
 */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: startup [--arch sm_XX] [--set NAME=VALUE ...] [--cache-dir DIR] [--json]\n"
    "               [--no-plan-entry] [--nvrtc-phases R] FILE.fc\n";

static bool no_plan_entry;
static int phase_runs; /* --nvrtc-phases */

enum { PHASES = 3, MAX_PHASE_RUNS = 101 };
static const char *const phase_names[PHASES] = {"CUDA C++ Frontend", "NVVM Optimizer",
                                                "PTX Translation"};

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* NVRTC's phases for one kernel: medians of phase_runs compiles with --time=-, whose table
 * ("NAME, PHASE, MS, ms" lines) NVRTC writes to its log. */
static int print_phases(fc_ctx *ctx, const char *label, int index, const fck_kernel *k,
                        const char *arch) {
    static const char *const time_opt[] = {"--time=-"};
    double ms[PHASES + 1][MAX_PHASE_RUNS];
    for (int r = 0; r < phase_runs; r++) {
        fcn_cubin c;
        fc_status st = fcn_compile(ctx, k->src.src, NULL, arch, fcx_nvrtc_flags(&k->src),
                                   time_opt, 1, &c);
        if (st != FC_OK) {
            cli_error("%s: kernel %d: %s", label, index, c.message ? c.message : "NVRTC failed");
            fcn_cubin_free(ctx, &c);
            return EXIT_COMPILE;
        }
        for (int p = 0; p < PHASES; p++) {
            const char *at = c.log ? strstr(c.log, phase_names[p]) : NULL;
            ms[p][r] = at ? strtod(at + strlen(phase_names[p]) + 1, NULL) : 0.0;
        }
        ms[PHASES][r] = c.compile_ms;
        fcn_cubin_free(ctx, &c);
    }
    for (int p = 0; p <= PHASES; p++) qsort(ms[p], (size_t)phase_runs, sizeof ms[p][0], cmp_double);
    int m = phase_runs / 2;
    printf("%s: kernel %d: NVRTC phases, median of %d: front end %.0f ms, NVVM %.0f ms, ptxas "
           "%.0f ms; compile %.1f ms\n", label, index, phase_runs, ms[0][m], ms[1][m], ms[2][m],
           ms[PHASES][m]);
    return EXIT_OK;
}

static const char *plan_state_name(fck_plan_state s) {
    switch (s) {
    case FCK_PLAN_HIT: return "hit";
    case FCK_PLAN_MISS: return "miss";
    case FCK_PLAN_STALE: return "stale";
    default: return "unused";
    }
}

static int time_one(fc_ctx *ctx, const cli_program *p, void *user) {
    const cli_opts *o = user;
    const char *arch = o->archs[0];
    fck_options co = fck_options_default();
    co.stage = FCK_BINARY;
    co.archs = &arch;
    co.narch = 1;
    co.no_plan_entry = no_plan_entry;
    fck_result *r = NULL;
    double t0 = cli_now();
    fc_hash key;
    fc_array *const *order;
    size_t count;
    fc_status st = fcg_plan_key(ctx, p->outs, p->nout, &key, &order, &count);
    co.plan_key = &key; /* as the runtime passes it */
    if (st == FC_OK) st = fck_compile(ctx, p->outs, p->nout, &co, &r);
    double ms = (cli_now() - t0) * 1e3;
    int rc = EXIT_OK;
    if (st != FC_OK) {
        cli_error("%s: %s", p->label, fc_errmsg(ctx));
        rc = EXIT_COMPILE;
    } else {
        /* NVRTC's share of a miss: the rest is fusec's (passes, codegen, keys, the cache) */
        double nvrtc_ms = 0;
        for (int i = 0; i < r->nkernel; i++)
            if (r->kernels[i].targets && r->kernels[i].targets[0].state == FCK_COMPILED)
                nvrtc_ms += r->kernels[i].targets[0].compile_ms;
        if (o->json)
            printf("{\"program\": \"%s\", \"arch\": \"%s\", \"first_compile_ms\": %.4f, "
                   "\"nvrtc_ms\": %.4f, \"kernels\": %d, \"plan_entry\": \"%s\", "
                   "\"compiled\": %d, \"cached\": %d}\n",
                   p->label, arch, ms, nvrtc_ms, r->nkernel, plan_state_name(r->plan_entry),
                   r->compiled, r->cached);
        else
            printf("%s: first compile %.4f ms, NVRTC %.4f ms (%d kernels; plan entry %s; %d "
                   "compiled, %d cached)\n", p->label, ms, nvrtc_ms, r->nkernel,
                   plan_state_name(r->plan_entry), r->compiled, r->cached);
    }
    for (int i = 0; rc == EXIT_OK && phase_runs && i < r->nkernel; i++)
        if (!r->kernels[i].lib && r->kernels[i].src.src)
            rc = print_phases(ctx, p->label, i, &r->kernels[i], arch);
    fck_result_free(r);
    return rc;
}

int main(int argc, char **argv) {
    /* This tool's own flags, anywhere; the rest are the CLI's options. */
    bool json = false;
    int n = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--no-plan-entry") == 0) no_plan_entry = true;
        else if (strcmp(argv[i], "--nvrtc-phases") == 0 && i + 1 < argc) {
            phase_runs = atoi(argv[++i]);
            if (phase_runs < 1 || phase_runs > MAX_PHASE_RUNS) {
                fprintf(stderr, "startup: --nvrtc-phases takes 1 to %d\n", MAX_PHASE_RUNS);
                return EXIT_USAGE;
            }
        }
        else if (strcmp(argv[i], "--json") == 0) json = true;
        else argv[++n] = argv[i];
    }
    cli_opts o;
    int rc = cli_parse("startup", n, argv + 1, OPT_SET | OPT_ARCH | OPT_CACHE_DIR, &o);
    if (rc || o.help) {
        fputs(usage, o.help ? stdout : stderr);
        cli_opts_free(&o);
        return rc;
    }
    o.json = json;
    fc_ctx *ctx;
    if (!(rc = cli_open_ctx(FC_BACKEND_HOST, o.cache_dir, false, &ctx))) {
        rc = cli_for_each_program(ctx, &o, o.files[0], true, true, time_one, &o);
        fc_ctx_destroy(ctx);
    }
    cli_opts_free(&o);
    return rc;
}
