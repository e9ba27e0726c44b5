/*
 * tools/cmd_warm.c - fusec warm: compiles every kernel of every program, for every arch, into
 * the kernel cache, with N threads.
 *
 * The compile driver does the work (compile/driver.h): each program is added to one batch
 * (planned, its kernels generated and keyed on this thread; a kernel that several programs
 * share, same source so same key, is held once), then the batch is built on N threads. This
 * file shows progress and failures as they come, and the summary.
 */
#include "cli.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage_warm[] =
    "usage: fusec warm [--arch sm_XX[,sm_YY...]] [-j N] [--set NAME=VALUE ...] [-q]\n"
    "                  [--cache-dir DIR] [--fast-math] FILE.fc...\n"
    "\n"
    "Compiles every kernel of every program in the files, for every architecture, into the\n"
    "kernel cache, so that later runs (on machines with those GPUs) find them there. Needs no\n"
    "GPU. A file may be a trace of many programs (FUSEC_TRACE, docs/TRACE.md). A kernel that\n"
    "several programs share is compiled once; kernels already cached are not compiled again.\n"
    "On a terminal a progress line is redrawn (done/total, kernels/s, time left); otherwise a\n"
    "plain line is written every 10 s. Then a summary goes to stdout:\n"
    "\n"
    "    programs: P\n"
    "    kernels: K (S distinct sources x A archs; D duplicate kernels skipped)\n"
    "    compiled: C\n"
    "    already cached: H\n"
    "    failed: F\n"
    "    wall time: T s\n"
    "\n"
    "  --arch LIST        comma-separated architectures, repeatable (default "
    CLI_DEFAULT_ARCH ")\n"
    "  -j, --jobs N       compile with N threads (default: one per CPU)\n"
    "  --set NAME=VALUE   binds a dimension symbol in every program that has it\n"
    "  -q, --quiet        no progress output\n"
    "  --cache-dir DIR    the kernel cache (default: $FUSEC_CACHE_DIR, $XDG_CACHE_HOME/fusec,\n"
    "                     ~/.cache/fusec)\n"
    "  --fast-math        the fast-math tier's kernels (as FUSEC_FAST_MATH=1; other keys)\n"
    "\n"
    "With FUSEC_REQUIRE_CACHED=1 nothing is compiled: each miss is reported with the key field\n"
    "that differs from the nearest cached entry, and the exit status is 5.\n"
    "Exit codes: 0 ok, 1 usage, 2 a program failed to load or plan (the others are still\n"
    "warmed), 4 the cache cannot be written, 5 a kernel failed to compile or missed the cache\n"
    "under FUSEC_REQUIRE_CACHED=1.\n";

typedef struct warm_state {
    const cli_opts *o;
    fck_result *batch;
    char **labels;      /* per fck_add call: the label of its program */
    int nlabels, caplabels;
    bool tty, progress_shown;
    double t0, last_plain; /* the build's start; the last plain progress line */
} warm_state;

/* ---- collecting kernels ------------------------------------------------------------------- */

static int collect_program(fc_ctx *ctx, const cli_program *p, void *user) {
    warm_state *ws = user;
    /* Labels are kept per call, so that a failure during the build names the program a kernel
     * first came from (fck_kernel.program). */
    if (ws->nlabels == ws->caplabels) {
        int nc = ws->caplabels ? ws->caplabels * 2 : 64;
        char **g = realloc(ws->labels, (size_t)nc * sizeof *g);
        if (!g) goto nomem;
        ws->labels = g;
        ws->caplabels = nc;
    }
    if (!(ws->labels[ws->nlabels] = strdup(p->label))) goto nomem;
    ws->nlabels++;
    if (fck_add(ws->batch, p->outs, p->nout) == FC_OK) return EXIT_OK;
    return cli_compile_failed(ctx, p, ws->batch);
nomem:
    cli_error("out of memory");
    return EXIT_PROGRAM;
}

/* ---- compiling ---------------------------------------------------------------------------- */

/* Redraws the progress line (terminal) or writes a plain one. */
static void show_progress(warm_state *ws, int done, int total, int failed, bool final) {
    double el = cli_now() - ws->t0;
    double rate = el > 0 ? done / el : 0;
    double eta = rate > 0 ? (total - done) / rate : 0;
    if (ws->tty) {
        enum { WIDTH = 24 };
        char bar[WIDTH + 1];
        int fill = total ? (int)((long long)done * WIDTH / total) : WIDTH;
        for (int i = 0; i < WIDTH; i++) bar[i] = i < fill ? '#' : '.';
        bar[WIDTH] = '\0';
        fprintf(stderr, "\rfusec: warm [%s] %d/%d  %.1f kernels/s", bar, done, total, rate);
        if (!final && done > 0) fprintf(stderr, "  ETA %.0f s", eta);
        if (failed) fprintf(stderr, "  %d failed", failed);
        fputs("\033[K", stderr);
        if (final) fputc('\n', stderr);
        ws->progress_shown = !final;
    } else {
        fprintf(stderr, "fusec: warm: %d/%d kernels, %.1f kernels/s", done, total, rate);
        if (done > 0 && done < total) fprintf(stderr, ", about %.0f s left", eta);
        fputc('\n', stderr);
    }
    fflush(stderr);
}

/* The driver's progress callback (serialised): a failure as it happens, and the display. */
static void on_progress(const fck_progress *g, void *user) {
    warm_state *ws = user;
    if (g->kernel) {
        const fck_target *t = &g->kernel->targets[g->arch];
        if (t->state != FCK_FAILED) return;
        if (ws->progress_shown) fputs("\r\033[K", stderr);
        ws->progress_shown = false;
        cli_error("%s kernel %d for %s: %s", ws->labels[g->kernel->program], g->kernel->index,
                  ws->batch->archs[g->arch], t->message ? t->message : fc_strerror(t->status));
        return;
    }
    if (ws->o->quiet) return;
    if (ws->tty) {
        show_progress(ws, g->done, g->total, g->failed, false);
    } else if (cli_now() - ws->last_plain >= 10.0) {
        show_progress(ws, g->done, g->total, g->failed, false);
        ws->last_plain = cli_now();
    }
}

/* Adds every program of the files to the batch, builds it and prints the summary. Returns the
 * exit code (the first failure's). */
static int warm_files(fc_ctx *ctx, cli_opts *o, warm_state *ws, fcc_cache *cache, double t0) {
    int rc = EXIT_OK;
    /* Plan and generate everything (this thread), then compile (workers). */
    for (int i = 0; i < o->nfiles; i++) {
        int r = cli_for_each_program(ctx, o, o->files[i], false, false, collect_program, ws);
        if (r == EXIT_USAGE || r == EXIT_IO) return r; /* a bad --arch or unreadable file: stop */
        if (r && !rc) rc = r;
    }
    int r = cli_check_sets_used(o);
    if (r) return r;
    fck_result *b = ws->batch;
    if (b->targets > 0) {
        ws->t0 = ws->last_plain = cli_now();
        if (fck_build(b) != FC_OK && b->failed == 0) { /* not a kernel: the build itself */
            cli_error("%s", fc_errmsg(ctx));
            if (!rc) rc = EXIT_PROGRAM;
        }
        if (!o->quiet && ws->tty)
            show_progress(ws, b->compiled + b->cached + b->failed, b->targets, b->failed, true);
    }
    fcc_stats stats;
    if (fcc_flush(cache) != FC_OK ||
        (fcc_get_stats(cache, &stats) == FC_OK && stats.put_failures > 0)) {
        cli_error("warm: %s", *fcc_errmsg(cache) ? fcc_errmsg(cache)
                                                  : "some kernels could not be written to the "
                                                    "cache");
        if (!rc) rc = EXIT_IO;
    }
    if (b->failed && !rc) rc = EXIT_COMPILE;
    printf("programs: %d\n", b->programs);
    printf("kernels: %d (%d distinct source%s x %d arch%s; %d duplicate kernel%s skipped)\n",
           b->targets, b->nkernel, b->nkernel == 1 ? "" : "s", o->narchs,
           o->narchs == 1 ? "" : "s", b->duplicates, b->duplicates == 1 ? "" : "s");
    printf("compiled: %d\nalready cached: %d\nfailed: %d\n", b->compiled, b->cached, b->failed);
    printf("wall time: %.3f s\n", cli_now() - t0);
    if (fflush(stdout) != 0 && !rc) rc = EXIT_IO;
    return rc;
}

int cmd_warm(int argc, char **argv) {
    cli_opts o;
    int rc = cli_parse("warm", argc, argv,
                       OPT_SET | OPT_ARCHS | OPT_JOBS | OPT_QUIET | OPT_CACHE_DIR | OPT_FILES |
                           OPT_FAST_MATH,
                       &o);
    if (rc || o.help) {
        rc = cli_usage(usage_warm, &o, rc);
        cli_opts_free(&o);
        return rc;
    }
    double t0 = cli_now();
    fc_ctx *ctx;
    if ((rc = cli_open_ctx(FC_BACKEND_HOST, o.cache_dir, o.fast_math, &ctx))) {
        cli_opts_free(&o);
        return rc;
    }
    warm_state ws;
    memset(&ws, 0, sizeof ws);
    ws.o = &o;
    ws.tty = isatty(STDERR_FILENO) == 1;

    /* The store first: warming a cache that cannot be written is an error, found early. */
    fcc_cache *cache = NULL;
    if (fcx_cache(ctx, &cache) != FC_OK) {
        cli_error("%s", fc_errmsg(ctx));
        rc = EXIT_IO;
    } else if (!fcc_is_persistent(cache) || fcc_is_read_only(cache)) {
        cli_error("warm: the kernel cache %s cannot be written (see the warning above), so "
                  "nothing would be kept", fcc_dir(cache) ? fcc_dir(cache) : "(none)");
        rc = EXIT_IO;
    }
    const char *archs[CLI_MAX_ARCHS];
    for (int a = 0; a < o.narchs; a++) archs[a] = o.archs[a];
    fck_options co = fck_options_default();
    co.stage = FCK_BINARY;
    co.archs = archs;
    co.narch = o.narchs;
    co.cache = cache;
    co.batch = true;
    co.threads = o.jobs; /* 0: one per CPU */
    co.keep_going = true;
    co.progress = on_progress;
    co.progress_user = &ws;
    if (!rc && fck_result_create(ctx, &co, &ws.batch) != FC_OK) {
        cli_error("%s", fc_errmsg(ctx));
        rc = EXIT_PROGRAM;
    }
    if (!rc) rc = warm_files(ctx, &o, &ws, cache, t0);
    fck_result_free(ws.batch);
    for (int i = 0; i < ws.nlabels; i++) free(ws.labels[i]);
    free(ws.labels);
    fc_ctx_destroy(ctx);
    cli_opts_free(&o);
    return rc;
}
