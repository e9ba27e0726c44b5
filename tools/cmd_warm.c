/*
 * tools/cmd_warm.c - fusec warm: compiles every kernel of every program, for every arch, into
 * the kernel cache, with N threads.
 *
 * Programs are planned and their kernels generated on the main thread (codegen walks the
 * graph, which belongs to one thread at a time); only fcx_get_binary, which is thread-safe,
 * runs on the workers. A kernel that several programs share (same source, so same key) is
 * compiled once.
 */
#include "cli.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char usage_warm[] =
    "usage: fusec warm [--arch sm_XX[,sm_YY...]] [-j N] [--set NAME=VALUE ...] [-q]\n"
    "                  [--cache-dir DIR] FILE.fc...\n"
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
    "\n"
    "With FUSEC_REQUIRE_CACHED=1 nothing is compiled: each miss is reported with the key field\n"
    "that differs from the nearest cached entry, and the exit status is 5.\n"
    "Exit codes: 0 ok, 1 usage, 2 a program failed to load or plan (the others are still\n"
    "warmed), 4 the cache cannot be written, 5 a kernel failed to compile or missed the cache\n"
    "under FUSEC_REQUIRE_CACHED=1.\n";

typedef struct warm_src {
    fcx_kernel_src src; /* the recipe; src.src is NULL: the text is kept in `body` */
    char *body;         /* the source without the device prelude (~50 KB, the same in every
                           kernel), so a trace of thousands of kernels stays small */
    size_t prelude_at;  /* where the prelude goes back in; SIZE_MAX: it had none */
    fcc_key key0;       /* its key for the first arch: the dedup key */
    char *label;        /* program and kernel it first came from */
} warm_src;

enum { JOB_PENDING, JOB_COMPILED, JOB_CACHED, JOB_FAILED };

typedef struct warm_job {
    int src, arch;
    int result;
} warm_job;

typedef struct warm_state {
    const cli_opts *o;
    fc_ctx *ctx;
    fcc_cache *cache;
    warm_src *srcs;
    int nsrc, capsrc;
    int *table;       /* open addressing on key0: src index + 1, 0 empty */
    size_t table_cap;
    int programs, duplicates;
    warm_job *jobs;
    int njobs;
    /* workers */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int next, done, compiled, cached, failed;
    bool tty, progress_shown;
    double t0;
} warm_state;

/* ---- collecting kernels ------------------------------------------------------------------- */

static uint64_t key_bits(const fcc_key *k) {
    uint64_t h;
    memcpy(&h, k->bytes, sizeof h);
    return h;
}

static bool table_grow(warm_state *ws) {
    size_t cap = ws->table_cap ? ws->table_cap * 2 : 256;
    int *t = calloc(cap, sizeof *t);
    if (!t) return false;
    for (int i = 0; i < ws->nsrc; i++) {
        size_t h = (size_t)(key_bits(&ws->srcs[i].key0) % cap);
        while (t[h]) h = (h + 1) % cap;
        t[h] = i + 1;
    }
    free(ws->table);
    ws->table = t;
    ws->table_cap = cap;
    return true;
}

/* Keeps src unless a kernel of the same key is kept already (then frees it). */
static int add_source(warm_state *ws, fcx_kernel_src *src, const fcc_key *key, const char *label,
                      int kernel) {
    if ((size_t)(ws->nsrc + 1) * 2 > ws->table_cap && !table_grow(ws)) goto nomem;
    size_t h = (size_t)(key_bits(key) % ws->table_cap);
    for (; ws->table[h]; h = (h + 1) % ws->table_cap)
        if (memcmp(ws->srcs[ws->table[h] - 1].key0.bytes, key->bytes, sizeof key->bytes) == 0) {
            ws->duplicates++;
            fcx_kernel_src_free(ws->ctx, src);
            return EXIT_OK;
        }
    if (ws->nsrc == ws->capsrc) {
        int nc = ws->capsrc ? ws->capsrc * 2 : 64;
        warm_src *g = realloc(ws->srcs, (size_t)nc * sizeof *g);
        if (!g) goto nomem;
        ws->srcs = g;
        ws->capsrc = nc;
    }
    size_t ll = strlen(label) + 32;
    char *lab = malloc(ll);
    const char *pre = strstr(src->src, fcx_prelude_source);
    size_t pl = pre ? strlen(fcx_prelude_source) : 0;
    char *body = malloc(src->len - pl + 1);
    if (!lab || !body) {
        free(lab);
        free(body);
        goto nomem;
    }
    snprintf(lab, ll, "%s kernel %d", label, kernel);
    size_t at = pre ? (size_t)(pre - src->src) : SIZE_MAX;
    if (pre) {
        memcpy(body, src->src, at);
        memcpy(body + at, pre + pl, src->len - at - pl + 1);
    } else {
        memcpy(body, src->src, src->len + 1);
    }
    fcg_strfree(ws->ctx, src->src);
    src->src = NULL;
    src->len = 0;
    ws->srcs[ws->nsrc] = (warm_src){*src, body, at, *key, lab};
    ws->table[h] = ++ws->nsrc;
    return EXIT_OK;
nomem:
    fcx_kernel_src_free(ws->ctx, src);
    cli_error("out of memory");
    return EXIT_PROGRAM;
}

static int collect_program(fc_ctx *ctx, const cli_program *p, void *user) {
    warm_state *ws = user;
    fcp_plan *plan;
    int rc = cli_plan(ctx, p, &plan);
    if (rc) return rc;
    ws->programs++;
    for (int i = 0; !rc && i < plan->nkernel; i++) {
        const fcp_kernel *k = &plan->kernels[i];
        if (k->kind == FCP_KERNEL_LIB) continue; /* nothing to compile */
        fcx_kernel_src src;
        if (fcx_generate(ctx, k, &src) != FC_OK) {
            cli_error("%s: kernel %d: %s", p->label, i, fc_errmsg(ctx));
            rc = EXIT_PROGRAM;
            break;
        }
        fcc_key key;
        fcc_key_fields f;
        char options[1024];
        rc = cli_kernel_key(&src, ws->o->archs[0], &key, &f, options, sizeof options);
        if (rc) fcx_kernel_src_free(ctx, &src);
        else rc = add_source(ws, &src, &key, p->label, i);
    }
    fcp_plan_destroy(plan);
    return rc;
}

/* ---- compiling ---------------------------------------------------------------------------- */

/* Redraws the progress line (terminal) or writes a plain one. Called with mu held. */
static void show_progress(warm_state *ws, bool final) {
    double el = cli_now() - ws->t0;
    double rate = el > 0 ? ws->done / el : 0;
    double eta = rate > 0 ? (ws->njobs - ws->done) / rate : 0;
    if (ws->tty) {
        enum { WIDTH = 24 };
        char bar[WIDTH + 1];
        int fill = ws->njobs ? (int)((long long)ws->done * WIDTH / ws->njobs) : WIDTH;
        for (int i = 0; i < WIDTH; i++) bar[i] = i < fill ? '#' : '.';
        bar[WIDTH] = '\0';
        fprintf(stderr, "\rfusec: warm [%s] %d/%d  %.1f kernels/s", bar, ws->done, ws->njobs, rate);
        if (!final && ws->done > 0) fprintf(stderr, "  ETA %.0f s", eta);
        if (ws->failed) fprintf(stderr, "  %d failed", ws->failed);
        fputs("\033[K", stderr);
        if (final) fputc('\n', stderr);
        ws->progress_shown = !final;
    } else {
        fprintf(stderr, "fusec: warm: %d/%d kernels, %.1f kernels/s", ws->done, ws->njobs, rate);
        if (ws->done > 0 && ws->done < ws->njobs) fprintf(stderr, ", about %.0f s left", eta);
        fputc('\n', stderr);
    }
    fflush(stderr);
}

/* The kernel's whole source again: its body with the prelude put back (malloc'd). */
static char *full_source(const warm_src *s) {
    size_t bl = strlen(s->body), pl = s->prelude_at == SIZE_MAX ? 0 : strlen(fcx_prelude_source);
    char *t = malloc(bl + pl + 1);
    if (!t) return NULL;
    if (s->prelude_at == SIZE_MAX) {
        memcpy(t, s->body, bl + 1);
    } else {
        memcpy(t, s->body, s->prelude_at);
        memcpy(t + s->prelude_at, fcx_prelude_source, pl);
        memcpy(t + s->prelude_at + pl, s->body + s->prelude_at, bl - s->prelude_at + 1);
    }
    return t;
}

static void *worker(void *arg) {
    warm_state *ws = arg;
    char *msg = malloc(16384);
    for (;;) {
        pthread_mutex_lock(&ws->mu);
        int j = ws->next < ws->njobs ? ws->next++ : -1;
        pthread_mutex_unlock(&ws->mu);
        if (j < 0) break;
        warm_job *job = &ws->jobs[j];
        fcx_binary bin;
        char small[256];
        char *m = msg ? msg : small;
        size_t msize = msg ? 16384 : sizeof small;
        m[0] = '\0';
        fcx_kernel_src src = ws->srcs[job->src].src;
        fc_status st = FC_ERR_NOMEM;
        if ((src.src = full_source(&ws->srcs[job->src]))) {
            src.len = strlen(src.src);
            st = fcx_get_binary(ws->ctx, ws->cache, &src, ws->o->archs[job->arch], &bin, m,
                                msize);
            free(src.src);
        }
        pthread_mutex_lock(&ws->mu);
        if (st != FC_OK) {
            job->result = JOB_FAILED;
            ws->failed++;
            if (ws->progress_shown) fputs("\r\033[K", stderr);
            ws->progress_shown = false;
            cli_error("%s for %s: %s", ws->srcs[job->src].label, ws->o->archs[job->arch],
                      *m ? m : fc_strerror(st));
        } else if (bin.compiled) {
            job->result = JOB_COMPILED;
            ws->compiled++;
        } else {
            job->result = JOB_CACHED;
            ws->cached++;
        }
        ws->done++;
        pthread_cond_signal(&ws->cv);
        pthread_mutex_unlock(&ws->mu);
    }
    free(msg);
    return NULL;
}

static int compile_all(warm_state *ws) {
    int nthreads = ws->o->jobs;
    if (nthreads <= 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        nthreads = n > 0 ? (int)(n < 64 ? n : 64) : 1;
    }
    if (nthreads > ws->njobs) nthreads = ws->njobs > 0 ? ws->njobs : 1;
    pthread_t *th = calloc((size_t)nthreads, sizeof *th);
    int started = 0;
    ws->t0 = cli_now();
    for (int i = 0; th && i < nthreads; i++) {
        if (pthread_create(&th[i], NULL, worker, ws) != 0) break;
        started++;
    }
    if (started == 0) worker(ws); /* no thread could start: work here */
    bool quiet = ws->o->quiet;
    double last_plain = ws->t0;
    pthread_mutex_lock(&ws->mu);
    while (ws->done < ws->njobs) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 100 * 1000 * 1000;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&ws->cv, &ws->mu, &until);
        if (quiet || ws->done >= ws->njobs) continue;
        if (ws->tty) show_progress(ws, false);
        else if (cli_now() - last_plain >= 10.0) {
            show_progress(ws, false);
            last_plain = cli_now();
        }
    }
    if (!quiet && ws->tty && ws->njobs) show_progress(ws, true);
    pthread_mutex_unlock(&ws->mu);
    for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
    free(th);
    return EXIT_OK;
}

int cmd_warm(int argc, char **argv) {
    cli_opts o;
    int rc = cli_parse("warm", argc, argv,
                       OPT_SET | OPT_ARCHS | OPT_JOBS | OPT_QUIET | OPT_CACHE_DIR | OPT_FILES, &o);
    if (rc || o.help) {
        rc = cli_usage(usage_warm, &o, rc);
        cli_opts_free(&o);
        return rc;
    }
    double t0 = cli_now();
    fc_ctx *ctx;
    if ((rc = cli_open_ctx(FC_BACKEND_HOST, o.cache_dir, &ctx))) {
        cli_opts_free(&o);
        return rc;
    }
    warm_state ws;
    memset(&ws, 0, sizeof ws);
    ws.o = &o;
    ws.ctx = ctx;
    ws.tty = isatty(STDERR_FILENO) == 1;
    pthread_mutex_init(&ws.mu, NULL);
    pthread_cond_init(&ws.cv, NULL);

    /* The store first: warming a cache that cannot be written is an error, found early. */
    if (fcx_cache(ctx, &ws.cache) != FC_OK) {
        cli_error("%s", fc_errmsg(ctx));
        rc = EXIT_IO;
    } else if (!fcc_is_persistent(ws.cache) || fcc_is_read_only(ws.cache)) {
        cli_error("warm: the kernel cache %s cannot be written (see the warning above), so "
                  "nothing would be kept", fcc_dir(ws.cache) ? fcc_dir(ws.cache) : "(none)");
        rc = EXIT_IO;
    }
    /* Plan and generate everything (main thread), then compile (workers). */
    for (int i = 0; rc != EXIT_IO && i < o.nfiles; i++) {
        int r = cli_for_each_program(ctx, &o, o.files[i], false, false, collect_program, &ws);
        if (r == EXIT_USAGE || r == EXIT_IO) {
            rc = r; /* a bad --arch or an unreadable file: stop */
            break;
        }
        if (r && !rc) rc = r;
    }
    int load_rc = rc;
    if (load_rc != EXIT_USAGE && load_rc != EXIT_IO) {
        int r = cli_check_sets_used(&o);
        if (r) load_rc = rc = r;
    }
    if (load_rc != EXIT_USAGE && load_rc != EXIT_IO && ws.cache && ws.nsrc > 0) {
        ws.njobs = ws.nsrc * o.narchs;
        ws.jobs = calloc((size_t)ws.njobs, sizeof *ws.jobs);
        if (!ws.jobs) {
            cli_error("out of memory");
            rc = EXIT_PROGRAM;
        } else {
            /* Arch-major order: a warm cut short has whole archs done. */
            for (int a = 0; a < o.narchs; a++)
                for (int s = 0; s < ws.nsrc; s++)
                    ws.jobs[a * ws.nsrc + s] = (warm_job){s, a, JOB_PENDING};
            compile_all(&ws);
        }
    }
    if (load_rc != EXIT_USAGE && load_rc != EXIT_IO && ws.cache) {
        fcc_stats stats;
        if (fcc_flush(ws.cache) != FC_OK ||
            (fcc_get_stats(ws.cache, &stats) == FC_OK && stats.put_failures > 0)) {
            cli_error("warm: %s", *fcc_errmsg(ws.cache) ? fcc_errmsg(ws.cache)
                                                         : "some kernels could not be written "
                                                           "to the cache");
            if (!rc) rc = EXIT_IO;
        }
        if (ws.failed && !rc) rc = EXIT_COMPILE;
        printf("programs: %d\n", ws.programs);
        printf("kernels: %d (%d distinct source%s x %d arch%s; %d duplicate kernel%s skipped)\n",
               ws.njobs, ws.nsrc, ws.nsrc == 1 ? "" : "s", o.narchs, o.narchs == 1 ? "" : "s",
               ws.duplicates, ws.duplicates == 1 ? "" : "s");
        printf("compiled: %d\nalready cached: %d\nfailed: %d\n", ws.compiled, ws.cached,
               ws.failed);
        printf("wall time: %.3f s\n", cli_now() - t0);
        if (fflush(stdout) != 0 && !rc) rc = EXIT_IO;
    }
    for (int i = 0; i < ws.nsrc; i++) {
        fcx_kernel_src_free(ctx, &ws.srcs[i].src);
        free(ws.srcs[i].body);
        free(ws.srcs[i].label);
    }
    free(ws.srcs);
    free(ws.table);
    free(ws.jobs);
    pthread_mutex_destroy(&ws.mu);
    pthread_cond_destroy(&ws.cv);
    fc_ctx_destroy(ctx);
    cli_opts_free(&o);
    return rc;
}
