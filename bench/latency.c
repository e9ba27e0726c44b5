/*
 * bench/latency.c - fusec's latency figures, measured through the public API alone (issue 5):
 *
 *   (a) cold compile: the first evaluation of each workload program in a process whose kernel
 *       cache is an empty temporary directory (codegen, NVRTC, module load, the run itself);
 *   (b) the first evaluation in a new process from the warm disk cache: this program runs
 *       itself as a child on the cache (a) filled;
 *   (c) an in-process cache hit: the same program built again after its values were released
 *       (plan and kernel cache hit), wall time to the end of the GPU work;
 *   (d) host overhead per evaluation of a cached program of 1, 10 and 100 elementwise nodes on
 *       a tiny array: wall time per build + fc_eval over many iterations, synchronised at the
 *       end, with CUDA graph replay on and off.
 *
 * Every evaluation figure is also given less the program's own GPU time (CUDA events around
 * fc_eval, median of --hits runs), so that what remains is the latency fusec adds. NVRTC's
 * share of (a) is not separated: the public API does not expose it.
 *
 *     latency [--json FILE] [--set NAME=VALUE ...] [--backend cuda|host|auto] [--hits N]
 *             [--iters N] [--elements N] [--no-child] [--no-overhead] PROGRAM.fc...
 */
#define _XOPEN_SOURCE 700 /* mkdtemp, nftw, setenv, posix_spawn */

#include <fusec.h>

#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <math.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

enum { MAX_SETS = 16, MAX_PROGRAMS = 64, MAX_IO = 32, MAX_HITS = 1000, CHAIN_SIZES = 3 };
static const int chain_nodes[CHAIN_SIZES] = {1, 10, 100};

typedef struct set_opt {
    const char *name;
    int64_t value;
} set_opt;

typedef struct options {
    const char *json_path;
    const char *child_out;  /* set in the child: where it writes its figures */
    const char *cache_dir;  /* given: used and kept; else a fresh temporary directory */
    fc_backend backend;
    int hits;
    long iters;
    int64_t elements;
    bool child, overhead;
    set_opt sets[MAX_SETS];
    int nsets;
    const char *programs[MAX_PROGRAMS];
    int nprograms;
} options;

/* The figures of one program. NAN where not measured. */
typedef struct prog_result {
    char id[32];
    bool ok;
    char error[512];
    int noutputs;
    double first_ms;     /* (a) build + eval + synchronise, first time in this process */
    double hit_first_ms; /* (c) the second evaluation */
    double hit_ms;       /* (c) median over --hits later evaluations */
    double submit_us;    /* host time of build + fc_eval of a hit, without the wait */
    double gpu_ms;       /* events around fc_eval, median */
    double peak_extra;   /* device bytes at the peak beyond what was in use before, less the
                            library calls' workspaces made then (fc_memory_stats.library) */
    double warm_first_ms, warm_hit_ms, warm_gpu_ms; /* (b), from the child */
    char warm_error[512];
} prog_result;

/* The figures of one chain of (d). */
typedef struct chain_result {
    int nodes;
    bool graphs;
    bool library;     /* the chain's first node is a matmul (a library call), x an 8x8 matrix */
    int64_t elements;
    long iters;
    double per_eval_us, submit_us, build_us;
    char error[256];
} chain_result;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    if (n <= 0) return NAN;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Formats an error into a fixed buffer (first error wins: later ones are consequences). */
__attribute__((format(printf, 3, 4))) static void set_error(char *buf, size_t size,
                                                             const char *fmt, ...) {
    if (buf[0]) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, size, fmt, ap);
    va_end(ap);
}

/* "bench/fc/w01_tanh_sin.fc" -> "W1"; other names -> their base name without ".fc". */
static void program_id(const char *path, char *id, size_t size) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    int num = 0, len = 0;
    if (sscanf(base, "w%d%n", &num, &len) == 1 && len > 1 && (base[len] == '_' || base[len] == '.')) {
        snprintf(id, size, "W%d", num);
        return;
    }
    snprintf(id, size, "%s", base);
    char *dot = strrchr(id, '.');
    if (dot && strcmp(dot, ".fc") == 0) *dot = '\0';
}

/* ---- inputs ------------------------------------------------------------------------------ */

/* A random input that is never all zeros: floats uniform in [0, 1), integers in [1, 16),
 * bools half true. Returns a reference the caller owns (NULL or poisoned on error). */
static fc_array *random_input(fc_ctx *ctx, fc_dtype dt, fc_shape shape, uint64_t seed) {
    if (dt >= FC_F16) return fc_random_uniform(ctx, dt, shape, seed);
    fc_scope *s = fc_scope_open(ctx);
    if (!s) return NULL;
    fc_array *u = fc_random_uniform(ctx, FC_F64, shape, seed);
    fc_array *v = dt == FC_BOOL ? fc_greater(u, fc_f64(ctx, 0.5))
                                : fc_cast(fc_add(fc_mul(u, fc_f64(ctx, 15.0)), fc_f64(ctx, 1.0)), dt);
    fc_array *out = fc_keep(v);
    fc_scope_close(s);
    return out;
}

static void release_all(fc_array **a, int n) {
    for (int i = 0; i < n; i++) {
        fc_release(a[i]);
        a[i] = NULL;
    }
}

/* ---- (a), (b), (c): one program ---------------------------------------------------------- */

/* Builds the program's graph from `inputs` in a fresh scope and evaluates it; *submit_s gets
 * the host time of build + fc_eval, *gpu_ms (if not NULL) the events' time around fc_eval.
 * Waits for the GPU, then closes the scope, which releases the outputs' values. */
static fc_status eval_once(fc_ctx *ctx, fc_program *prog, fc_array *const *inputs, int nout,
                           double *wall_s, double *submit_s, fc_event *ev0, fc_event *ev1,
                           float *gpu_ms) {
    fc_array *outs[MAX_IO] = {0};
    double t0 = now_s();
    fc_scope *s = fc_scope_open(ctx);
    if (!s) return FC_ERR_NOMEM;
    fc_status st = fc_program_build(prog, inputs, outs);
    if (st == FC_OK && ev0) st = fc_event_record(ev0, NULL);
    if (st == FC_OK) st = fc_eval(ctx, outs, nout);
    if (st == FC_OK && ev1) st = fc_event_record(ev1, NULL);
    double t1 = now_s();
    fc_status sync = fc_ctx_synchronize(ctx);
    double t2 = now_s();
    if (st == FC_OK) st = sync;
    if (st == FC_OK && ev0 && ev1 && gpu_ms) st = fc_event_elapsed_ms(ev0, ev1, gpu_ms);
    fc_scope_close(s);
    if (submit_s) *submit_s = t1 - t0;
    if (wall_s) *wall_s = t2 - t0;
    return st;
}

static void measure_program(fc_ctx *ctx, const char *path, const options *o, prog_result *r) {
    fc_program *prog = NULL;
    fc_array *inputs[MAX_IO] = {0};
    fc_event *ev0 = NULL, *ev1 = NULL;
    int nin = 0;
    double *times = NULL;
    fc_status st = fc_program_load(ctx, path, &prog);
    if (st != FC_OK) goto fail;
    for (int i = 0; i < fc_program_num_symbols(prog); i++)
        for (int j = 0; j < o->nsets; j++)
            if (strcmp(fc_program_symbol_name(prog, i), o->sets[j].name) == 0 &&
                (st = fc_program_set_symbol(prog, o->sets[j].name, o->sets[j].value)) != FC_OK)
                goto fail;
    nin = fc_program_num_inputs(prog);
    r->noutputs = fc_program_num_outputs(prog);
    if (nin > MAX_IO || r->noutputs > MAX_IO) {
        set_error(r->error, sizeof r->error, "more than %d inputs or outputs", MAX_IO);
        goto done;
    }
    for (int i = 0; i < nin; i++) {
        fc_shape shape;
        if ((st = fc_program_input_shape(prog, i, &shape)) != FC_OK) goto fail;
        inputs[i] = random_input(ctx, fc_program_input_dtype(prog, i), shape, 1000 + (uint64_t)i);
        if ((st = fc_array_status(inputs[i])) != FC_OK) goto fail;
    }
    /* The inputs' own kernels (the generator) compile and run here, outside the clock. */
    if (nin > 0 && (st = fc_eval(ctx, inputs, nin)) != FC_OK) goto fail;
    if ((st = fc_ctx_synchronize(ctx)) != FC_OK) goto fail;
    if ((st = fc_event_create(ctx, &ev0)) != FC_OK || (st = fc_event_create(ctx, &ev1)) != FC_OK)
        goto fail;

    fc_memory_stats before, after;
    if ((st = fc_memory_stats_get(ctx, &before)) != FC_OK) goto fail;
    fc_memory_reset_peak(ctx);

    double wall, submit;
    if ((st = eval_once(ctx, prog, inputs, r->noutputs, &wall, NULL, NULL, NULL, NULL)) != FC_OK)
        goto fail;
    r->first_ms = wall * 1e3;
    if ((st = fc_memory_stats_get(ctx, &after)) != FC_OK) goto fail;
    /* less the workspaces the library calls made and keep (cuBLAS's, cuFFT's work areas) */
    double extra = after.peak > before.in_use ? (double)(after.peak - before.in_use) : 0;
    double kept = after.library > before.library ? (double)(after.library - before.library) : 0;
    r->peak_extra = extra > kept ? extra - kept : 0;

    if ((st = eval_once(ctx, prog, inputs, r->noutputs, &wall, NULL, NULL, NULL, NULL)) != FC_OK)
        goto fail;
    r->hit_first_ms = wall * 1e3;

    times = malloc(sizeof *times * 2 * (size_t)o->hits);
    if (!times) {
        set_error(r->error, sizeof r->error, "out of host memory");
        goto done;
    }
    double *subs = times + o->hits;
    for (int h = 0; h < o->hits; h++) {
        if ((st = eval_once(ctx, prog, inputs, r->noutputs, &wall, &submit, NULL, NULL, NULL)) !=
            FC_OK)
            goto fail;
        times[h] = wall * 1e3;
        subs[h] = submit * 1e6;
    }
    r->hit_ms = median(times, o->hits);
    r->submit_us = median(subs, o->hits);
    /* The program's own GPU time, in separate runs so the events do not touch the figures
     * above. */
    for (int h = 0; h < o->hits; h++) {
        float ms = 0;
        if ((st = eval_once(ctx, prog, inputs, r->noutputs, NULL, NULL, ev0, ev1, &ms)) != FC_OK)
            goto fail;
        times[h] = ms;
    }
    r->gpu_ms = median(times, o->hits);
    r->ok = true;
    goto done;
fail:
    set_error(r->error, sizeof r->error, "%s: %s", fc_strerror(st), fc_errmsg(ctx));
    fc_clear_error(ctx);
done:
    free(times);
    fc_event_destroy(ev0);
    fc_event_destroy(ev1);
    release_all(inputs, nin);
    fc_program_destroy(prog);
}

/* ---- (d): chains of tiny elementwise ops ------------------------------------------------- */

/* k elementwise nodes on x: alternately * 1.0001 and + 0.5 (bench/peers.py times the same
 * chain in CuPy and PyTorch). The result belongs to the open scope. */
static fc_array *chain(fc_ctx *ctx, fc_array *x, int k, bool library) {
    fc_array *y = library ? fc_matmul(x, x) : x;
    fc_array *mul = fc_f64(ctx, 1.0001), *add = fc_f64(ctx, 0.5);
    for (int i = library; i < k; i++) y = i % 2 == 0 ? fc_mul(y, mul) : fc_add(y, add);
    return y;
}

/* Runs n iterations of: open a scope, build the chain, (if eval) fc_eval it, close the scope.
 * Then waits. *submit_s: time until the last iteration returned; *wall_s: until the GPU is
 * done. */
static fc_status chain_loop(fc_ctx *ctx, fc_array *x, int k, bool library, long n, bool eval,
                            double *submit_s, double *wall_s) {
    fc_status st = FC_OK;
    double t0 = now_s();
    for (long i = 0; i < n && st == FC_OK; i++) {
        fc_scope *s = fc_scope_open(ctx);
        if (!s) return FC_ERR_NOMEM;
        fc_array *y = chain(ctx, x, k, library);
        st = eval ? fc_eval(ctx, &y, 1) : fc_array_status(y);
        fc_scope_close(s);
    }
    double t1 = now_s();
    fc_status sync = fc_ctx_synchronize(ctx);
    double t2 = now_s();
    if (submit_s) *submit_s = t1 - t0;
    if (wall_s) *wall_s = t2 - t0;
    return st != FC_OK ? st : sync;
}

/* Chains of 1, 10 and 100 nodes with CUDA graphs on and off over `elements`; then, graphs on,
 * a chain of 10 whose first node is a matmul of an 8x8 matrix (a library call: its plan is
 * cached like a fused one) beside 10 elementwise nodes over the same matrix. */
static void measure_chains(const options *o, const char *cache_dir, chain_result *res, int *nres) {
    *nres = 0;
    for (int g = 0; g < 3; g++) {
        bool graphs = g != 1, library_pass = g == 2;
        fc_ctx_options opts;
        memset(&opts, 0, sizeof opts);
        opts.backend = o->backend;
        opts.cache_dir = cache_dir;
        opts.cuda_graphs = graphs ? 1 : -1;
        fc_ctx *ctx = NULL;
        fc_status cst = fc_ctx_create(&ctx, &opts);
        for (int c = 0; c < (library_pass ? 2 : CHAIN_SIZES); c++) {
            chain_result *r = &res[(*nres)++];
            memset(r, 0, sizeof *r);
            r->nodes = library_pass ? 10 : chain_nodes[c];
            r->graphs = graphs;
            r->library = library_pass && c == 0;
            r->elements = library_pass ? 64 : o->elements;
            r->per_eval_us = r->submit_us = r->build_us = NAN;
            /* Fewer iterations for longer chains: building them costs more per iteration. */
            r->iters = o->iters * 10 / (r->nodes + 9);
            if (r->iters < 100) r->iters = 100;
            if (cst != FC_OK) {
                snprintf(r->error, sizeof r->error, "fc_ctx_create: %s", fc_strerror(cst));
                continue;
            }
            fc_array *x = library_pass ? random_input(ctx, FC_F32, FC_SHAPE(8, 8), 7)
                                       : random_input(ctx, FC_F32, FC_SHAPE(o->elements), 7);
            fc_status st = fc_array_status(x);
            if (st == FC_OK) st = fc_eval(ctx, &x, 1);
            /* Warm up: compile (or load) the kernel, fill the plan cache, capture a graph. */
            if (st == FC_OK) st = chain_loop(ctx, x, r->nodes, r->library, 200, true, NULL, NULL);
            double sub[3], wall[3], build[3];
            for (int rep = 0; rep < 3 && st == FC_OK; rep++) {
                double s1, w1;
                st = chain_loop(ctx, x, r->nodes, r->library, r->iters, false, NULL, &w1);
                build[rep] = w1 / (double)r->iters * 1e6;
                if (st == FC_OK)
                    st = chain_loop(ctx, x, r->nodes, r->library, r->iters, true, &s1, &w1);
                sub[rep] = s1 / (double)r->iters * 1e6;
                wall[rep] = w1 / (double)r->iters * 1e6;
            }
            if (st == FC_OK) {
                r->per_eval_us = median(wall, 3);
                r->submit_us = median(sub, 3);
                r->build_us = median(build, 3);
            } else {
                snprintf(r->error, sizeof r->error, "%s: %s", fc_strerror(st), fc_errmsg(ctx));
                fc_clear_error(ctx);
            }
            fc_release(x);
        }
        fc_ctx_destroy(ctx);
    }
}

/* ---- the child of (b) -------------------------------------------------------------------- */

/* Writes one line per program: index, ok, first, hit, gpu (ms), then the error (rest of line). */
static int write_child_results(const char *path, const prog_result *r, int n) {
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    for (int i = 0; i < n; i++) {
        char err[sizeof r[i].error];
        snprintf(err, sizeof err, "%s", r[i].error);
        for (char *p = err; *p; p++)
            if (*p == '\n' || *p == '\r') *p = ' ';
        fprintf(f, "%d %d %.17g %.17g %.17g %s\n", i, r[i].ok ? 1 : 0, r[i].first_ms, r[i].hit_ms,
                r[i].gpu_ms, err);
    }
    return fclose(f) == 0 ? 0 : -1;
}

static int read_child_results(const char *path, prog_result *r, int n) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[1024];
    int got = 0;
    while (fgets(line, sizeof line, f)) {
        int i, ok, off = 0;
        double first, hit, gpu;
        if (sscanf(line, "%d %d %lf %lf %lf %n", &i, &ok, &first, &hit, &gpu, &off) < 5 || i < 0 ||
            i >= n)
            continue;
        r[i].warm_first_ms = first;
        r[i].warm_hit_ms = hit;
        r[i].warm_gpu_ms = gpu;
        if (!ok) {
            line[strcspn(line, "\n")] = '\0';
            snprintf(r[i].warm_error, sizeof r[i].warm_error, "%s", off ? line + off : "failed");
        }
        got++;
    }
    fclose(f);
    return got;
}

/* Runs this program again (/proc/self/exe) on the warm cache and merges its figures. */
static void run_child(const options *o, const char *cache_dir, prog_result *r, int n) {
    char out_path[] = "/tmp/fusec-latency-child-XXXXXX";
    int fd = mkstemp(out_path);
    if (fd < 0) {
        for (int i = 0; i < n; i++)
            snprintf(r[i].warm_error, sizeof r[i].warm_error, "mkstemp: %s", strerror(errno));
        return;
    }
    close(fd);
    char hits[32], backend[16];
    snprintf(hits, sizeof hits, "%d", o->hits);
    snprintf(backend, sizeof backend, "%s",
             o->backend == FC_BACKEND_HOST ? "host" : o->backend == FC_BACKEND_AUTO ? "auto" : "cuda");
    /* argv: self --child-out F --cache-dir D --hits H --backend B [--set N=V]... programs */
    enum { FIXED = 9 };
    char *argv[FIXED + 2 * MAX_SETS + MAX_PROGRAMS + 1];
    char setbuf[MAX_SETS][160];
    int a = 0;
    argv[a++] = "latency";
    argv[a++] = "--child-out";
    argv[a++] = out_path;
    argv[a++] = "--cache-dir";
    argv[a++] = (char *)cache_dir;
    argv[a++] = "--hits";
    argv[a++] = hits;
    argv[a++] = "--backend";
    argv[a++] = backend;
    for (int i = 0; i < o->nsets; i++) {
        snprintf(setbuf[i], sizeof setbuf[i], "%s=%" PRId64, o->sets[i].name, o->sets[i].value);
        argv[a++] = "--set";
        argv[a++] = setbuf[i];
    }
    for (int i = 0; i < o->nprograms; i++) argv[a++] = (char *)o->programs[i];
    argv[a] = NULL;

    pid_t pid;
    int rc = posix_spawn(&pid, "/proc/self/exe", NULL, NULL, argv, environ);
    int status = 0;
    const char *why = NULL;
    char whybuf[128];
    if (rc != 0) {
        snprintf(whybuf, sizeof whybuf, "posix_spawn: %s", strerror(rc));
        why = whybuf;
    } else if (waitpid(pid, &status, 0) < 0) {
        snprintf(whybuf, sizeof whybuf, "waitpid: %s", strerror(errno));
        why = whybuf;
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        snprintf(whybuf, sizeof whybuf, "the child process failed (status 0x%x)", status);
        why = whybuf;
    }
    if (!why && read_child_results(out_path, r, n) < n) why = "the child wrote no figures";
    if (why)
        for (int i = 0; i < n; i++)
            if (!r[i].warm_error[0]) snprintf(r[i].warm_error, sizeof r[i].warm_error, "%s", why);
    unlink(out_path);
}

/* ---- output ------------------------------------------------------------------------------ */

static void json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c == '\n') fputs("\\n", f);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

static void json_num(FILE *f, double v) {
    if (isnan(v) || isinf(v)) fputs("null", f);
    else fprintf(f, "%.6g", v);
}

/* a - b, or NaN where either is missing. */
static double diff(double a, double b) { return isnan(a) || isnan(b) ? NAN : a - b; }

/* The chain whose first node is a matmul, and the elementwise chain of as many nodes over the
 * same matrix measured after it (measure_chains' last pass), or -1. */
static int library_pair(const chain_result *c, int nc) {
    for (int i = 0; i + 1 < nc; i++)
        if (c[i].library && !c[i + 1].library && c[i + 1].nodes == c[i].nodes &&
            c[i + 1].elements == c[i].elements)
            return i;
    return -1;
}

static void json_field(FILE *f, const char *name, double v, bool last) {
    fprintf(f, "\"%s\": ", name);
    json_num(f, v);
    fputs(last ? "" : ", ", f);
}

static int write_json(const char *path, const options *o, const fc_device_info *dev, bool have_dev,
                      fc_backend backend, const prog_result *r, int n, const chain_result *c,
                      int nc) {
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "latency: cannot write %s: %s\n", path, strerror(errno));
        return -1;
    }
    char date[64];
    time_t t = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S%z", localtime(&t));
    fprintf(f, "{\n \"tool\": \"bench/latency\",\n \"date\": ");
    json_str(f, date);
    fprintf(f, ",\n \"backend\": \"%s\",\n \"device\": ", backend == FC_BACKEND_CUDA ? "cuda" : "host");
    json_str(f, have_dev ? dev->name : "host");
    fprintf(f, ",\n \"arch\": ");
    json_str(f, have_dev ? dev->arch : "");
    fprintf(f, ",\n \"hits\": %d,\n \"nvrtc_ms_per_kernel\": null,\n", o->hits);
    fprintf(f, " \"notes\": \"times in ms unless named _us; *_extra_ms = the figure less the "
               "program's own run (hit_ms for first evaluations, gpu_ms for hits); NVRTC time "
               "is not exposed by the public API\",\n");
    fprintf(f, " \"programs\": [\n");
    for (int i = 0; i < n; i++) {
        fprintf(f, "  {\"program\": ");
        json_str(f, o->programs[i]);
        fprintf(f, ", \"id\": ");
        json_str(f, r[i].id);
        fprintf(f, ", \"outputs\": %d, ", r[i].noutputs);
        json_field(f, "gpu_ms", r[i].gpu_ms, false);
        json_field(f, "cold_first_ms", r[i].first_ms, false);
        json_field(f, "cold_extra_ms", diff(r[i].first_ms, r[i].hit_ms), false);
        json_field(f, "warm_disk_first_ms", r[i].warm_first_ms, false);
        json_field(f, "warm_disk_extra_ms", diff(r[i].warm_first_ms, r[i].warm_hit_ms), false);
        json_field(f, "warm_disk_hit_ms", r[i].warm_hit_ms, false);
        json_field(f, "hit_first_ms", r[i].hit_first_ms, false);
        json_field(f, "hit_ms", r[i].hit_ms, false);
        json_field(f, "hit_extra_ms", diff(r[i].hit_ms, r[i].gpu_ms), false);
        json_field(f, "hit_submit_us", r[i].submit_us, false);
        json_field(f, "peak_extra_bytes", r[i].peak_extra, false);
        fprintf(f, "\"error\": ");
        if (r[i].error[0]) json_str(f, r[i].error);
        else fputs("null", f);
        fprintf(f, ", \"warm_disk_error\": ");
        if (r[i].warm_error[0]) json_str(f, r[i].warm_error);
        else fputs("null", f);
        fprintf(f, "}%s\n", i + 1 < n ? "," : "");
    }
    fprintf(f, " ],\n \"overhead\": [\n");
    for (int i = 0; i < nc; i++) {
        fprintf(f, "  {\"nodes\": %d, \"library\": %s, \"cuda_graphs\": %s, \"elements\": %" PRId64
                   ", \"iters\": %ld, ",
                c[i].nodes, c[i].library ? "true" : "false", c[i].graphs ? "true" : "false",
                c[i].elements, c[i].iters);
        json_field(f, "per_eval_us", c[i].per_eval_us, false);
        json_field(f, "submit_us", c[i].submit_us, false);
        json_field(f, "build_us", c[i].build_us, false);
        json_field(f, "eval_us", diff(c[i].per_eval_us, c[i].build_us), false);
        fprintf(f, "\"error\": ");
        if (c[i].error[0]) json_str(f, c[i].error);
        else fputs("null", f);
        fprintf(f, "}%s\n", i + 1 < nc ? "," : "");
    }
    fprintf(f, " ],\n \"library_vs_fused\": ");
    int lp = library_pair(c, nc);
    if (lp < 0) {
        fputs("null\n}\n", f);
    } else {
        /* host time per evaluation beyond building the chain: the plan's own overhead */
        double lib_us = diff(c[lp].per_eval_us, c[lp].build_us);
        double ew_us = diff(c[lp + 1].per_eval_us, c[lp + 1].build_us);
        fprintf(f, "{\"nodes\": %d, \"elements\": %" PRId64 ", ", c[lp].nodes, c[lp].elements);
        json_field(f, "library_eval_us", lib_us, false);
        json_field(f, "fused_eval_us", ew_us, false);
        json_field(f, "ratio", ew_us > 0 ? lib_us / ew_us : NAN, false);
        json_field(f, "per_eval_ratio", c[lp + 1].per_eval_us > 0
                                            ? c[lp].per_eval_us / c[lp + 1].per_eval_us
                                            : NAN, false);
        fprintf(f, "\"target_ratio\": 2, \"note\": \"ratio = library_eval_us / fused_eval_us, "
                   "each the host time per evaluation beyond building the chain (issue 12 item "
                   "6: at most 2)\"}\n}\n");
    }
    if (fclose(f) != 0) {
        fprintf(stderr, "latency: cannot write %s\n", path);
        return -1;
    }
    return 0;
}

static void print_tables(const prog_result *r, int n, const chain_result *c, int nc) {
    printf("\nLatency per program (ms). extra = figure less the program's own run.\n");
    printf("%-22s %9s | %9s %9s | %9s %9s | %9s %9s %9s\n", "program", "gpu", "cold", "extra",
           "disk", "extra", "hit", "extra", "submit_us");
    for (int i = 0; i < n; i++) {
        if (!r[i].ok) {
            printf("%-22s FAILED: %s\n", r[i].id, r[i].error);
            continue;
        }
        printf("%-22s %9.3f | %9.3f %9.3f | %9.3f %9.3f | %9.3f %9.3f %9.1f\n", r[i].id,
               r[i].gpu_ms, r[i].first_ms, diff(r[i].first_ms, r[i].hit_ms), r[i].warm_first_ms,
               diff(r[i].warm_first_ms, r[i].warm_hit_ms), r[i].hit_ms,
               diff(r[i].hit_ms, r[i].gpu_ms), r[i].submit_us);
        if (r[i].warm_error[0]) printf("%-22s   disk: %s\n", "", r[i].warm_error);
    }
    if (nc == 0) return;
    printf("\nHost overhead per evaluation of a cached chain of elementwise nodes (the first a "
           "matmul where\nthe kind says so)\n");
    printf("%6s %-7s %9s %7s %8s %12s %12s %12s\n", "nodes", "kind", "elements", "graphs",
           "iters", "per_eval_us", "submit_us", "build_us");
    for (int i = 0; i < nc; i++) {
        const char *kind = c[i].library ? "matmul" : "ew";
        if (c[i].error[0]) {
            printf("%6d %-7s %9" PRId64 " %7s FAILED: %s\n", c[i].nodes, kind, c[i].elements,
                   c[i].graphs ? "on" : "off", c[i].error);
            continue;
        }
        printf("%6d %-7s %9" PRId64 " %7s %8ld %12.2f %12.2f %12.2f\n", c[i].nodes, kind,
               c[i].elements, c[i].graphs ? "on" : "off", c[i].iters, c[i].per_eval_us,
               c[i].submit_us, c[i].build_us);
    }
    int i = library_pair(c, nc);
    if (i >= 0 && !c[i].error[0] && !c[i + 1].error[0])
        printf("a plan with a library call: %.2f us of host time per evaluation beyond "
               "building, %.2fx a fused plan of as many nodes (%.2f us; target: at most 2x)\n",
               c[i].per_eval_us - c[i].build_us,
               (c[i].per_eval_us - c[i].build_us) / (c[i + 1].per_eval_us - c[i + 1].build_us),
               c[i + 1].per_eval_us - c[i + 1].build_us);
}

/* ---- main -------------------------------------------------------------------------------- */

static const char usage[] =
    "usage: latency [--json FILE] [--set NAME=VALUE ...] [--backend cuda|host|auto] [--hits N]\n"
    "               [--iters N] [--elements N] [--no-child] [--no-overhead] PROGRAM.fc...\n"
    "\n"
    "Measures, for each program: the first evaluation with an empty kernel cache (a fresh\n"
    "temporary FUSEC cache directory), the first evaluation in a new process from that warm\n"
    "disk cache, and in-process cache hits; then the host overhead per evaluation of cached\n"
    "chains of 1, 10 and 100 elementwise nodes on a tiny array.\n"
    "\n"
    "  --json FILE     also write every figure as JSON\n"
    "  --set N=V       binds a dimension symbol in the programs that have it\n"
    "  --backend B     cuda (default), host or auto\n"
    "  --hits N        timed cache hits per program (default 5)\n"
    "  --iters N       iterations of the 1-node overhead loop (default 20000)\n"
    "  --elements N    elements of the tiny array (default 1)\n"
    "  --cache-dir D   use D as the kernel cache (kept; cold figures are cold only if D is\n"
    "                  empty) instead of a fresh temporary directory\n"
    "  --no-child      skip the new-process measurement\n"
    "  --no-overhead   skip the host-overhead chains\n";

static bool parse_int(const char *s, long long lo, long long *out) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < lo) return false;
    *out = v;
    return true;
}

static int parse_args(int argc, char **argv, options *o) {
    memset(o, 0, sizeof *o);
    o->backend = FC_BACKEND_CUDA;
    o->hits = 5;
    o->iters = 20000;
    o->elements = 1;
    o->child = o->overhead = true;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        long long n;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            fputs(usage, stdout);
            exit(0);
        } else if (strcmp(a, "--no-child") == 0) {
            o->child = false;
        } else if (strcmp(a, "--no-overhead") == 0) {
            o->overhead = false;
        } else if (a[0] == '-' && a[1] == '-' && !v) {
            fprintf(stderr, "latency: %s needs a value\n", a);
            return -1;
        } else if (strcmp(a, "--json") == 0) {
            o->json_path = argv[++i];
        } else if (strcmp(a, "--child-out") == 0) {
            o->child_out = argv[++i];
        } else if (strcmp(a, "--cache-dir") == 0) {
            o->cache_dir = argv[++i];
        } else if (strcmp(a, "--backend") == 0) {
            i++;
            if (strcmp(v, "cuda") == 0) o->backend = FC_BACKEND_CUDA;
            else if (strcmp(v, "host") == 0) o->backend = FC_BACKEND_HOST;
            else if (strcmp(v, "auto") == 0) o->backend = FC_BACKEND_AUTO;
            else {
                fprintf(stderr, "latency: --backend is cuda, host or auto, not '%s'\n", v);
                return -1;
            }
        } else if (strcmp(a, "--hits") == 0 || strcmp(a, "--iters") == 0 ||
                   strcmp(a, "--elements") == 0) {
            i++;
            if (!parse_int(v, 1, &n) || (a[2] == 'h' && n > MAX_HITS)) {
                fprintf(stderr, "latency: %s expects a positive integer%s, got '%s'\n", a,
                        a[2] == 'h' ? " up to 1000" : "", v);
                return -1;
            }
            if (a[2] == 'h') o->hits = (int)n;
            else if (a[2] == 'i') o->iters = (long)n;
            else o->elements = (int64_t)n;
        } else if (strcmp(a, "--set") == 0) {
            i++;
            const char *eq = strchr(v, '=');
            static char names[MAX_SETS][128];
            if (!eq || eq == v || (size_t)(eq - v) >= sizeof names[0] || !parse_int(eq + 1, 0, &n) ||
                o->nsets >= MAX_SETS) {
                fprintf(stderr, "latency: --set expects NAME=VALUE (at most %d), got '%s'\n",
                        MAX_SETS, v);
                return -1;
            }
            memcpy(names[o->nsets], v, (size_t)(eq - v));
            names[o->nsets][eq - v] = '\0';
            o->sets[o->nsets].name = names[o->nsets];
            o->sets[o->nsets].value = (int64_t)n;
            o->nsets++;
        } else if (a[0] == '-') {
            fprintf(stderr, "latency: unknown option %s\n%s", a, usage);
            return -1;
        } else {
            if (o->nprograms >= MAX_PROGRAMS) {
                fprintf(stderr, "latency: at most %d programs\n", MAX_PROGRAMS);
                return -1;
            }
            o->programs[o->nprograms++] = a;
        }
    }
    if (o->nprograms == 0 && !o->overhead) {
        fputs(usage, stderr);
        return -1;
    }
    return 0;
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

int main(int argc, char **argv) {
    options o;
    if (parse_args(argc, argv, &o) != 0) return 1;

    char tmpdir[] = "/tmp/fusec-latency-cache-XXXXXX";
    const char *cache_dir = o.cache_dir;
    if (!cache_dir) {
        if (!mkdtemp(tmpdir)) {
            fprintf(stderr, "latency: mkdtemp: %s\n", strerror(errno));
            return 1;
        }
        cache_dir = tmpdir;
    }

    prog_result *res = calloc((size_t)o.nprograms + 1, sizeof *res);
    chain_result chains[2 * CHAIN_SIZES + 2];
    int nchains = 0, rc = 0;
    if (!res) {
        fprintf(stderr, "latency: out of memory\n");
        rc = 1;
        goto out;
    }
    for (int i = 0; i < o.nprograms; i++) {
        program_id(o.programs[i], res[i].id, sizeof res[i].id);
        res[i].first_ms = res[i].hit_first_ms = res[i].hit_ms = res[i].submit_us = NAN;
        res[i].gpu_ms = res[i].peak_extra = NAN;
        res[i].warm_first_ms = res[i].warm_hit_ms = res[i].warm_gpu_ms = NAN;
    }

    fc_ctx_options opts;
    memset(&opts, 0, sizeof opts);
    opts.backend = o.backend;
    opts.cache_dir = cache_dir;
    fc_ctx *ctx = NULL;
    fc_status st = fc_ctx_create(&ctx, &opts);
    if (st != FC_OK) {
        fprintf(stderr, "latency: cannot create a %s context: %s\n",
                o.backend == FC_BACKEND_HOST ? "host" : "CUDA", fc_strerror(st));
        /* Still leave a JSON that says why, for bench/report.py. */
        if (o.json_path && !o.child_out) {
            FILE *f = fopen(o.json_path, "w");
            if (f) {
                fprintf(f, "{\"tool\": \"bench/latency\", \"error\": ");
                char msg[160];
                snprintf(msg, sizeof msg, "cannot create a context: %s", fc_strerror(st));
                json_str(f, msg);
                fprintf(f, ", \"programs\": [], \"overhead\": []}\n");
                fclose(f);
            }
        }
        rc = 1;
        goto out;
    }
    fc_backend backend = fc_ctx_backend(ctx);
    fc_device_info dev;
    bool have_dev = fc_ctx_device(ctx) >= 0 && fc_device_get_info(fc_ctx_device(ctx), &dev) == FC_OK;

    for (int i = 0; i < o.nprograms; i++) {
        measure_program(ctx, o.programs[i], &o, &res[i]);
        if (!o.child_out) {
            if (res[i].ok)
                fprintf(stderr, "latency: %s: first %.3f ms, hit %.3f ms, gpu %.3f ms\n", res[i].id,
                        res[i].first_ms, res[i].hit_ms, res[i].gpu_ms);
            else
                fprintf(stderr, "latency: %s: %s\n", res[i].id, res[i].error);
        }
    }
    fc_ctx_destroy(ctx); /* before the child: its cache files are closed and complete */

    if (o.child_out) { /* the child of (b): its first evaluations are the warm-disk ones */
        rc = write_child_results(o.child_out, res, o.nprograms) == 0 ? 0 : 1;
        goto out;
    }
    if (o.overhead) measure_chains(&o, cache_dir, chains, &nchains);
    if (o.child && o.nprograms > 0) run_child(&o, cache_dir, res, o.nprograms);

    printf("latency: %s, %s%s%s\n", backend == FC_BACKEND_CUDA ? "cuda" : "host",
           have_dev ? dev.name : "host", have_dev ? " " : "", have_dev ? dev.arch : "");
    print_tables(res, o.nprograms, chains, nchains);
    if (o.json_path &&
        write_json(o.json_path, &o, &dev, have_dev, backend, res, o.nprograms, chains, nchains) != 0)
        rc = 1;
    for (int i = 0; i < o.nprograms; i++)
        if (!res[i].ok) rc = 2; /* every figure was still written */

out:
    free(res);
    if (!o.cache_dir && cache_dir) nftw(tmpdir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    return rc;
}
