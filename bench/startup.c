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
 */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: startup [--arch sm_XX] [--set NAME=VALUE ...] [--cache-dir DIR] [--json]\n"
    "               [--no-plan-entry] FILE.fc\n";

static bool no_plan_entry;

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
    fck_result_free(r);
    return rc;
}

int main(int argc, char **argv) {
    /* This tool's own flags, anywhere; the rest are the CLI's options. */
    bool json = false;
    int n = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--no-plan-entry") == 0) no_plan_entry = true;
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
