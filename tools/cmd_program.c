/*
 * tools/cmd_program.c - fusec print, hash and run: one .fc program as text, as a hash, or
 * evaluated (on .npy or random inputs, outputs optionally written as .npy), and benchmarked.
 */
#include "cli.h"

#include "graph.h" /* f16 / bf16 bits to float for display */

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define SHOW_VALUES 6

/* ---- print, hash -------------------------------------------------------------------------- */

static const char usage_print[] =
    "usage: fusec print FILE.fc [--set NAME=VALUE ...]\n"
    "\n"
    "Prints the program's graph as canonical .fc text: one statement per node, inputs x0..,\n"
    "temporaries t0.., outputs under their names. Equal graphs print equal bytes.\n"
    "\n"
    "  --set NAME=VALUE   binds a dimension symbol (repeat for each symbol)\n";

static int print_one(fc_ctx *ctx, const cli_program *p, void *user) {
    (void)user;
    const char **names = calloc((size_t)p->nout + 1, sizeof *names);
    char *text = NULL;
    int rc = EXIT_OK;
    if (!names) {
        cli_error("out of memory");
        return EXIT_PROGRAM;
    }
    for (int i = 0; i < p->nout; i++) names[i] = fc_program_output_name(p->prog, i);
    if (fc_program_print(ctx, p->outs, p->nout, names, &text) != FC_OK) {
        cli_error("%s", fc_errmsg(ctx));
        rc = EXIT_PROGRAM;
    } else if (fputs(text, stdout) == EOF || fflush(stdout) != 0) {
        cli_error("cannot write the output: %s", strerror(errno));
        rc = EXIT_IO;
    }
    fc_free(ctx, text);
    free(names);
    return rc;
}

static int hash_one(fc_ctx *ctx, const cli_program *p, void *user) {
    (void)user;
    fc_hash h;
    if (fc_graph_hash(p->outs, p->nout, &h) != FC_OK) {
        cli_error("%s", fc_errmsg(ctx));
        return EXIT_PROGRAM;
    }
    printf("%016" PRIx64 "%016" PRIx64 "\n", h.hi, h.lo);
    if (fflush(stdout) != 0) {
        cli_error("cannot write the output: %s", strerror(errno));
        return EXIT_IO;
    }
    return EXIT_OK;
}

static int simple_command(const char *cmd, const char *usage, int argc, char **argv,
                          cli_program_fn fn) {
    cli_opts o;
    int rc = cli_parse(cmd, argc, argv, OPT_SET, &o);
    if (rc || o.help) {
        fputs(usage, o.help ? stdout : stderr);
        cli_opts_free(&o);
        return rc;
    }
    fc_ctx *ctx;
    if (!(rc = cli_open_ctx(FC_BACKEND_HOST, NULL, false, &ctx))) {
        rc = cli_for_each_program(ctx, &o, o.files[0], true, true, fn, NULL);
        fc_ctx_destroy(ctx);
    }
    cli_opts_free(&o);
    return rc;
}

int cmd_print(int argc, char **argv) {
    return simple_command("print", usage_print, argc, argv, print_one);
}

static const char usage_hash[] =
    "usage: fusec hash FILE.fc [--set NAME=VALUE ...]\n"
    "\n"
    "Prints the structural hash (128 bits, hex) of the program's graph: a function of its ops,\n"
    "dtypes, shapes, parameters and wiring only, the same in every process.\n"
    "\n"
    "  --set NAME=VALUE   binds a dimension symbol (repeat for each symbol)\n";

int cmd_hash(int argc, char **argv) {
    return simple_command("hash", usage_hash, argc, argv, hash_one);
}

/* ---- run ---------------------------------------------------------------------------------- */

static const char usage_run[] =
    "usage: fusec run FILE.fc [--set NAME=VALUE ...] [--input NAME=FILE.npy ...]\n"
    "                 [--output-dir DIR] [--seed S] [--backend host|auto|cuda] [--cache-dir DIR]\n"
    "                 [--fast-math]\n"
    "                 [--bench [--runs N] [--warmup N] [--floor-bytes B] [--time-build]\n"
    "                          [--back-to-back [--batch N]] [--json]]\n"
    "\n"
    "Runs the program and evaluates all its outputs together. Inputs come from .npy files\n"
    "(--input) or are random (floats uniform in [0, 1), small integers, random bools). For each\n"
    "output prints its dtype, shape, first values and min / max / mean, then the wall time of\n"
    "the evaluation (compilation included).\n"
    "\n"
    "  --set NAME=VALUE     binds a dimension symbol (repeat for each symbol)\n"
    "  --input NAME=FILE    the value of input NAME, from a .npy file (repeatable); its dtype\n"
    "                       and shape must be the input's. A dimension symbol no --set gave\n"
    "                       takes the file's extent where the input uses it\n"
    "  --output-dir DIR     writes each output as DIR/NAME.npy (DIR is created if missing)\n"
    "  --seed S             seed of the random inputs (default 0)\n"
    "  --backend B          host, auto (the GPU when usable, else host; default) or cuda\n"
    "  --cache-dir DIR      the kernel cache (default: $FUSEC_CACHE_DIR, $XDG_CACHE_HOME/fusec,\n"
    "                       ~/.cache/fusec)\n"
    "  --fast-math          the fast-math tier (as FUSEC_FAST_MATH=1): FMA contraction,\n"
    "                       approximate f32 math, abs(z) <= r on complex as |z|^2 <= r^2 (the\n"
    "                       GPU's kernels; the host backend stays exact)\n"
    "\n"
    "  --bench              then times the program: each run rebuilds the outputs from the same\n"
    "                       inputs and evaluates them between two events (CUDA events on the GPU,\n"
    "                       the wall clock on the host). Prints kernels per evaluation, the\n"
    "                       median / min / max time, the bytes that must move (inputs read once,\n"
    "                       outputs written once), the GB/s achieved, the device copy bandwidth\n"
    "                       measured in the same run, the floor (bytes / copy bandwidth) and the\n"
    "                       % of floor reached, and the peak device memory of the timed runs\n"
    "  --runs N             timed runs (default 15)\n"
    "  --warmup N           untimed runs before them (default 3)\n"
    "  --floor-bytes B      the bytes that must move, instead of inputs + outputs\n"
    "  --time-build         the timed span starts before the outputs are built: for programs\n"
    "                       whose building evaluates (a mask subscript's count), as CuPy's\n"
    "                       x[x > 0.5] counts, synchronises and gathers in one timed call\n"
    "  --back-to-back       also times evaluations issued back to back, as JAX's timing\n"
    "                       does: after one untimed batch, --runs batches of --batch\n"
    "                       evaluations (each builds the outputs and evaluates them without\n"
    "                       waiting), each batch synchronised once at its end; a batch's wall\n"
    "                       time / its size is one figure, the median is reported beside the\n"
    "                       per-call time (JSON: \"b2b\")\n"
    "  --batch N            evaluations a back-to-back batch (default 0: about 50 ms of work\n"
    "                       from the per-call time, at most 100)\n"
    "  --json               prints one JSON object instead of the text summaries\n"
    "\n"
    "Exit codes: 0 ok, 1 usage (an --input naming no input, or of the wrong dtype or shape),\n"
    "2 parse or program error, 3 evaluation error, 4 I/O error (an --input file missing or not\n"
    "a readable .npy file, an output that cannot be written), 5 a kernel failed to compile or\n"
    "missed the cache under FUSEC_REQUIRE_CACHED=1.\n";

static uint64_t splitmix(uint64_t *state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* A random input: uniform floats from the library's generator, small integers from ours. */
static fc_array *random_input(fc_ctx *ctx, fc_dtype dt, fc_shape shape, uint64_t seed) {
    if (dt >= FC_F16) return fc_random_uniform(ctx, dt, shape, seed);
    int64_t n = 1;
    for (int d = 0; d < shape.ndim; d++) n *= shape.dim[d];
    size_t esize = fc_dtype_size(dt);
    unsigned char *buf = malloc(n ? (size_t)n * esize : 1);
    if (!buf) return NULL;
    uint64_t state = seed;
    for (int64_t i = 0; i < n; i++) {
        uint64_t r = splitmix(&state);
        /* Signed values in [-8, 8), unsigned in [0, 16), bools 0 or 1. */
        int64_t v = dt == FC_BOOL ? (int64_t)(r & 1)
                    : (dt >= FC_U8 && dt <= FC_U64) ? (int64_t)(r & 15)
                                                   : (int64_t)(r & 15) - 8;
        switch (esize) {
        case 1: buf[i] = (unsigned char)(int8_t)v; break;
        case 2: ((int16_t *)buf)[i] = (int16_t)v; break;
        case 4: ((int32_t *)buf)[i] = (int32_t)v; break;
        default: ((int64_t *)buf)[i] = v; break;
        }
    }
    fc_array *a = fc_from_host(ctx, dt, shape, buf);
    free(buf);
    return a;
}

/* Element i of a host buffer of dtype dt, as (re, im). */
static void element(const void *buf, fc_dtype dt, int64_t i, double *re, double *im) {
    *im = 0;
    switch (dt) {
    case FC_BOOL: *re = ((const uint8_t *)buf)[i] != 0; break;
    case FC_I8: *re = ((const int8_t *)buf)[i]; break;
    case FC_I16: *re = ((const int16_t *)buf)[i]; break;
    case FC_I32: *re = ((const int32_t *)buf)[i]; break;
    case FC_I64: *re = (double)((const int64_t *)buf)[i]; break;
    case FC_U8: *re = ((const uint8_t *)buf)[i]; break;
    case FC_U16: *re = ((const uint16_t *)buf)[i]; break;
    case FC_U32: *re = ((const uint32_t *)buf)[i]; break;
    case FC_U64: *re = (double)((const uint64_t *)buf)[i]; break;
    case FC_F16: *re = fcg_f16_to_f32(((const uint16_t *)buf)[i]); break;
    case FC_BF16: *re = fcg_bf16_to_f32(((const uint16_t *)buf)[i]); break;
    case FC_F32: *re = ((const float *)buf)[i]; break;
    case FC_F64: *re = ((const double *)buf)[i]; break;
    case FC_C64:
        *re = ((const float *)buf)[2 * i];
        *im = ((const float *)buf)[2 * i + 1];
        break;
    default:
        *re = ((const double *)buf)[2 * i];
        *im = ((const double *)buf)[2 * i + 1];
        break;
    }
}

static void print_value(const void *buf, int64_t i, fc_dtype dt, double re, double im) {
    /* 64-bit integers from the buffer: a double rounds them past 2^53. */
    if (dt == FC_I64) printf("%" PRId64, ((const int64_t *)buf)[i]);
    else if (dt == FC_U64) printf("%" PRIu64, ((const uint64_t *)buf)[i]);
    else if (dt == FC_BOOL) printf("%s", re != 0 ? "True" : "False");
    else if (dt <= FC_U64) printf("%.0f", re);
    else if (dt == FC_C64 || dt == FC_C128) printf("(%.6g%+.6gj)", re, im);
    else printf("%.6g", re);
}

/* Prints one evaluated output: dtype, shape, the first values, min / max / mean. Reads the
 * values in chunks so that a large output needs no second full-size buffer. */
static int report_output(const char *name, fc_array *a) {
    fc_dtype dt = fc_array_dtype(a);
    fc_shape shape = fc_array_shape(a);
    int64_t n = fc_array_size(a);
    bool cplx = dt == FC_C64 || dt == FC_C128;
    printf("%s: %s [", name, fc_dtype_name(dt));
    for (int d = 0; d < shape.ndim; d++) printf(d ? ", %" PRId64 : "%" PRId64, shape.dim[d]);
    printf("]\n  values:");
    enum { CHUNK = 1 << 16 };
    size_t esize = fc_dtype_size(dt);
    void *buf = malloc(CHUNK * esize);
    if (!buf) {
        cli_error("out of memory");
        return EXIT_EVAL;
    }
    double lo = INFINITY, hi = -INFINITY, sum_re = 0, sum_im = 0;
    bool any_nan = false;
    for (int64_t off = 0; off < n; off += CHUNK) {
        int64_t count = n - off < CHUNK ? n - off : CHUNK;
        fc_status st = fc_read(a, buf, off, count);
        if (st != FC_OK) {
            free(buf);
            cli_error("%s", fc_errmsg(fc_array_ctx(a)));
            return EXIT_EVAL;
        }
        for (int64_t i = 0; i < count; i++) {
            double re, im;
            element(buf, dt, i, &re, &im);
            if (off + i < SHOW_VALUES) {
                putchar(' ');
                print_value(buf, i, dt, re, im);
            }
            double mag = cplx ? hypot(re, im) : re;
            if (isnan(mag)) any_nan = true;
            else {
                if (mag < lo) lo = mag;
                if (mag > hi) hi = mag;
            }
            sum_re += re;
            sum_im += im;
        }
    }
    free(buf);
    if (n > SHOW_VALUES) printf(" ...");
    if (n == 0) printf(" (empty)");
    printf("\n");
    if (n > 0) {
        const char *what = cplx ? "|z| " : "";
        printf("  %smin %.6g  %smax %.6g  mean ", what, any_nan && lo > hi ? NAN : lo, what,
               any_nan && lo > hi ? NAN : hi);
        if (cplx) printf("(%.6g%+.6gj)", sum_re / (double)n, sum_im / (double)n);
        else printf("%.6g", sum_re / (double)n);
        printf("%s\n", any_nan ? "  (has NaN)" : "");
    }
    return EXIT_OK;
}

static void shape_text(char *buf, size_t cap, fc_shape sh) {
    size_t n = (size_t)snprintf(buf, cap, "[");
    for (int d = 0; d < sh.ndim && n < cap; d++)
        n += (size_t)snprintf(buf + n, cap - n, d ? ", %" PRId64 : "%" PRId64, sh.dim[d]);
    if (n < cap) snprintf(buf + n, cap - n, "]");
}

static size_t array_bytes(fc_dtype dt, fc_shape sh) {
    size_t n = fc_dtype_size(dt);
    for (int d = 0; d < sh.ndim; d++) n *= (size_t)sh.dim[d];
    return n;
}

/* What the summaries say about each output, kept after the outputs are released. */
typedef struct out_info {
    const char *name;
    fc_dtype dtype;
    fc_shape shape;
} out_info;

typedef struct run_args {
    const cli_opts *o;
    fc_array *const *loaded; /* per o->inputs[j]: its loaded array (owned by cmd_run) */
} run_args;

/* Creates dir and its missing parents (mkdir -p). */
static int make_dirs(const char *dir) {
    size_t n = strlen(dir);
    char *path = malloc(n + 1);
    if (!path) {
        cli_error("out of memory");
        return EXIT_IO;
    }
    memcpy(path, dir, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (path[i] != '/' && path[i] != '\0') continue;
        char c = path[i];
        path[i] = '\0';
        if (mkdir(path, 0777) != 0 && errno != EEXIST) {
            cli_error("--output-dir: cannot create %s: %s", path, strerror(errno));
            free(path);
            return EXIT_IO;
        }
        path[i] = c;
    }
    free(path);
    struct stat sb;
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        cli_error("--output-dir: %s is not a directory", dir);
        return EXIT_IO;
    }
    return EXIT_OK;
}

/* Writes output i as DIR/NAME.npy. */
static int save_output(const char *dir, const char *name, fc_array *a, bool quiet) {
    size_t n = strlen(dir) + strlen(name) + 6;
    char *path = malloc(n);
    if (!path) {
        cli_error("out of memory");
        return EXIT_IO;
    }
    snprintf(path, n, "%s/%s.npy", dir, name);
    fc_status st = fc_npy_save(a, path);
    int rc = EXIT_OK;
    if (st != FC_OK) {
        cli_error("cannot write output '%s': %s", name, fc_errmsg(fc_array_ctx(a)));
        rc = st == FC_ERR_IO ? EXIT_IO : EXIT_EVAL;
    } else if (!quiet) {
        printf("wrote %s\n", path);
    }
    free(path);
    return rc;
}

/* The inputs of the program: the --input files (checked against the declarations), random
 * values for the others. ins[i] of a file is borrowed from run_args; the others belong to the
 * open scope. */
static int make_inputs(fc_ctx *ctx, const cli_program *p, const run_args *ra, fc_array **ins) {
    const cli_opts *o = ra->o;
    fc_program *prog = p->prog;
    int nin = fc_program_num_inputs(prog);
    /* cli_for_each_program checked that every --input names an input. */
    for (int i = 0; i < nin; i++) {
        const char *name = fc_program_input_name(prog, i);
        fc_dtype want_dt = fc_program_input_dtype(prog, i);
        fc_shape want;
        fc_program_input_shape(prog, i, &want);
        int j = 0;
        while (j < o->ninputs && strcmp(o->inputs[j].name, name) != 0) j++;
        if (j < o->ninputs) {
            fc_array *a = ra->loaded[j];
            fc_dtype dt = fc_array_dtype(a);
            fc_shape sh = fc_array_shape(a);
            char got_s[256], want_s[256];
            shape_text(got_s, sizeof got_s, sh);
            shape_text(want_s, sizeof want_s, want);
            if (dt != want_dt) {
                cli_error("--input %s=%s: the file holds %s %s, but input '%s' of %s is %s %s",
                          name, o->inputs[j].path, fc_dtype_name(dt), got_s, name, p->label,
                          fc_dtype_name(want_dt), want_s);
                return EXIT_USAGE;
            }
            bool same = sh.ndim == want.ndim;
            for (int d = 0; same && d < sh.ndim; d++) same = sh.dim[d] == want.dim[d];
            if (!same) {
                cli_error("--input %s=%s: the file's shape is %s, but input '%s' of %s is %s %s%s",
                          name, o->inputs[j].path, got_s, name, p->label, fc_dtype_name(want_dt),
                          want_s, o->nsets ? " (with the --set values)" : "");
                return EXIT_USAGE;
            }
            ins[i] = a;
            continue;
        }
        ins[i] = random_input(ctx, want_dt, want, o->seed * 1000003u + (uint64_t)i);
        if (!ins[i] || fc_array_status(ins[i]) != FC_OK) {
            cli_error("cannot make input '%s': %s", name, ins[i] ? fc_errmsg(ctx) : "out of memory");
            return EXIT_EVAL;
        }
    }
    /* Inputs hold their values before any clock starts. */
    if (nin && fc_eval(ctx, ins, nin) != FC_OK) {
        cli_error("cannot make the inputs: %s", fc_errmsg(ctx));
        return EXIT_EVAL;
    }
    return EXIT_OK;
}

static int eval_exit(fc_status st) {
    return st == FC_ERR_COMPILE || st == FC_ERR_NOT_CACHED ? EXIT_COMPILE : EXIT_EVAL;
}

/* ---- bench -------------------------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* "536.9 MB": decimal units, so that MB per ms reads as GB/s. */
static const char *fmt_bytes(char *buf, size_t cap, double b) {
    const char *unit[] = {"B", "kB", "MB", "GB", "TB"};
    int u = 0;
    while (b >= 1000 && u < 4) {
        b /= 1000;
        u++;
    }
    snprintf(buf, cap, u ? "%.1f %s" : "%.0f %s", b, unit[u]);
    return buf;
}

static void json_string(const char *s) {
    putchar('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') printf("\\%c", c);
        else if (c < 0x20) printf("\\u%04x", c);
        else putchar(c);
    }
    putchar('"');
}

/* A JSON number, or null where not measured (negative or not finite). */
static void json_number(double v, bool measured) {
    if (!measured || !isfinite(v)) printf("null");
    else printf("%.9g", v);
}

static double median_of(double *ms, int n);

typedef struct bench_result {
    int kernels;
    double median_ms, min_ms, max_ms;
    double bytes, io_bytes, in_bytes, out_bytes;
    double gbps;
    bool have_copy;
    double copy_gbps, copy_bytes, floor_ms, floor_pct;
    bool have_peak;
    double peak_bytes;    /* values and plans' buffers: the library's workspaces left out */
    double library_bytes; /* the library calls' workspaces (fc_memory_stats.library) */
    char device[160], arch[16];
    bool gpu;
    bool fast_math; /* the context's fast-math tier */
    /* --back-to-back: per evaluation, from batches timed over the wall clock */
    bool have_b2b;
    double b2b_median_ms, b2b_min_ms, b2b_max_ms;
    int b2b_batch;
} bench_result;

/* Whether some output already holds a value it did not get from this run: then the timed
 * evaluation would do nothing (a value cached on a node that outlived the last run). Program
 * inputs returned as outputs are values by nature and do not count. */
static bool output_precomputed(fc_array *const *outs, int nout) {
    for (int q = 0; q < nout; q++)
        if (fcg_has_value(outs[q]) && outs[q]->op != FCG_OP_DATA) return true;
    return false;
}

/* Builds the outputs of a timed run from the inputs; none may hold a value yet. */
static int build_outputs(fc_ctx *ctx, const cli_program *p, fc_array *const *ins,
                         fc_array **outs, int nout) {
    if (fc_program_build(p->prog, ins, outs) != FC_OK) {
        cli_error("%s", fc_errmsg(ctx));
        return EXIT_PROGRAM;
    }
    if (output_precomputed(outs, nout)) {
        cli_error("bench: an output already holds a value before its run (a fusec bug: the "
                  "timing would measure nothing)");
        return EXIT_EVAL;
    }
    return EXIT_OK;
}

/* The timed runs. Each rebuilds the outputs from the same input arrays inside a scope of its
 * own and evaluates them between two events; closing the scope releases the outputs and every
 * node built from the inputs, so the next build finds no cached value and really runs the
 * plan again (the plan and the kernels stay cached, as for any repeated evaluation). The end
 * event is waited for in each run, so runs do not overlap and their buffers are freed. */
static int bench_runs(fc_ctx *ctx, const cli_program *p, fc_array *const *ins, const cli_opts *o,
                      bench_result *r) {
    int nout = fc_program_num_outputs(p->prog);
    fc_array **outs = calloc((size_t)nout + 1, sizeof *outs);
    double *ms = calloc((size_t)o->runs, sizeof *ms);
    fc_event *start = NULL, *end = NULL;
    int rc = EXIT_OK;
    if (!outs || !ms) {
        cli_error("out of memory");
        rc = EXIT_EVAL;
    }
    if (!rc && (fc_event_create(ctx, &start) != FC_OK || fc_event_create(ctx, &end) != FC_OK)) {
        cli_error("cannot create events: %s", fc_errmsg(ctx));
        rc = EXIT_EVAL;
    }
    for (int it = 0; !rc && it < o->warmup + o->runs; it++) {
        if (it == o->warmup) fc_memory_reset_peak(ctx);
        fc_scope *scope = fc_scope_open(ctx);
        if (!scope) {
            cli_error("out of memory");
            rc = EXIT_EVAL;
            break;
        }
        fc_status st = o->time_build ? fc_event_record(start, NULL) : FC_OK;
        if (st != FC_OK) {
            cli_error("%s", fc_errmsg(ctx));
            rc = EXIT_EVAL;
        } else {
            rc = build_outputs(ctx, p, ins, outs, nout);
        }
        float t = 0;
        if (!rc && ((!o->time_build && (st = fc_event_record(start, NULL)) != FC_OK) ||
                    (st = fc_eval_on(ctx, outs, nout, NULL)) != FC_OK ||
                    (st = fc_event_record(end, NULL)) != FC_OK ||
                    (st = fc_event_synchronize(end)) != FC_OK ||
                    (st = fc_event_elapsed_ms(start, end, &t)) != FC_OK)) {
            cli_error("bench run %d: %s", it + 1, fc_errmsg(ctx));
            rc = eval_exit(st);
        }
        if (!rc && it >= o->warmup) ms[it - o->warmup] = t;
        fc_scope_close(scope);
    }
    if (!rc) {
        fc_memory_stats ms_stats;
        if (r->gpu && fc_memory_stats_get(ctx, &ms_stats) == FC_OK) {
            /* The library calls' workspaces (cuBLAS's, cuFFT's work areas) are made in the
             * warm-up and kept, as the libraries keep their own in other frameworks: they are
             * reported apart, not as the evaluation's memory. */
            r->have_peak = true;
            r->library_bytes = (double)ms_stats.library;
            r->peak_bytes = (double)(ms_stats.peak - ms_stats.library);
        }
        int n = o->runs;
        r->median_ms = median_of(ms, n);
        r->min_ms = ms[0];
        r->max_ms = ms[n - 1];
    }
    fc_event_destroy(start);
    fc_event_destroy(end);
    free(ms);
    free(outs);
    return rc;
}

static double median_of(double *ms, int n) {
    qsort(ms, (size_t)n, sizeof *ms, cmp_double);
    return n % 2 ? ms[n / 2] : (ms[n / 2 - 1] + ms[n / 2]) / 2;
}

/* Calls a batch holds by default: about 50 ms of work, at most 100 (bench/peers.py's rule for
 * jax.jit, so both sides amortise the one wait a batch alike). */
#define B2B_TARGET_MS 50.0
#define B2B_BATCH_MAX 100

/* --back-to-back: the time of an evaluation when evaluations are issued back to back, as
 * JAX's timing takes it (bench/peers.py): after one untimed batch, o->runs batches of
 * r->b2b_batch evaluations, each building the outputs from the inputs in a scope of its own
 * and evaluating them without waiting, the batch then synchronised once; a batch's wall time
 * / its size is one figure, and the median of the batches is reported. Builds are inside the
 * span (a caller's loop builds too), and the work of one evaluation may overlap the host's
 * side of the next, which per-call events never see. */
static int bench_back_to_back(fc_ctx *ctx, const cli_program *p, fc_array *const *ins,
                              const cli_opts *o, bench_result *r) {
    int nout = fc_program_num_outputs(p->prog);
    fc_array **outs = calloc((size_t)nout + 1, sizeof *outs);
    double *ms = calloc((size_t)o->runs, sizeof *ms);
    int rc = EXIT_OK, batch = o->batch;
    if (batch <= 0) {
        double per = r->median_ms > 1e-3 ? r->median_ms : 1e-3;
        batch = (int)(B2B_TARGET_MS / per);
        batch = batch < 1 ? 1 : batch > B2B_BATCH_MAX ? B2B_BATCH_MAX : batch;
    }
    if (!outs || !ms) {
        cli_error("out of memory");
        rc = EXIT_EVAL;
    }
    for (int it = -1; !rc && it < o->runs; it++) {
        double t0 = cli_now();
        for (int j = 0; !rc && j < batch; j++) {
            fc_scope *scope = fc_scope_open(ctx);
            if (!scope) {
                cli_error("out of memory");
                rc = EXIT_EVAL;
                break;
            }
            fc_status st;
            if ((rc = build_outputs(ctx, p, ins, outs, nout)) != EXIT_OK) {
                /* said */
            } else if ((st = fc_eval_on(ctx, outs, nout, NULL)) != FC_OK) {
                cli_error("bench back-to-back batch %d: %s", it + 2, fc_errmsg(ctx));
                rc = eval_exit(st);
            }
            fc_scope_close(scope);
        }
        fc_status st = rc ? FC_OK : fc_ctx_synchronize(ctx);
        if (st != FC_OK) {
            cli_error("bench back-to-back batch %d: %s", it + 2, fc_errmsg(ctx));
            rc = eval_exit(st);
        }
        if (!rc && it >= 0) ms[it] = (cli_now() - t0) * 1e3 / batch;
    }
    if (!rc) {
        r->have_b2b = true;
        r->b2b_batch = batch;
        r->b2b_median_ms = median_of(ms, o->runs);
        r->b2b_min_ms = ms[0];
        r->b2b_max_ms = ms[o->runs - 1];
    }
    free(ms);
    free(outs);
    return rc;
}

static void print_bench_json(const cli_program *p, const cli_opts *o, const bench_result *r,
                             const out_info *oi, int nout) {
    printf("{\"program\": ");
    json_string(p->label);
    printf(", \"backend\": \"%s\", \"device\": ", r->gpu ? "cuda" : "host");
    json_string(r->device);
    printf(", \"arch\": ");
    if (r->gpu) json_string(r->arch);
    else printf("null");
    printf(", \"fast_math\": %s", r->fast_math ? "true" : "false");
    printf(", \"kernels\": %d, \"runs\": %d, \"warmup\": %d", r->kernels, o->runs, o->warmup);
    /* How median_ms was taken: per call, between two events */
    printf(", \"timing\": \"%s\"", r->gpu ? "cuda events per call" : "host wall clock per call");
    printf(", \"median_ms\": ");
    json_number(r->median_ms, true);
    printf(", \"min_ms\": ");
    json_number(r->min_ms, true);
    printf(", \"max_ms\": ");
    json_number(r->max_ms, true);
    printf(", \"bytes\": %.0f, \"gbps\": ", r->bytes);
    json_number(r->gbps, r->median_ms > 0);
    printf(", \"copy_gbps\": ");
    json_number(r->copy_gbps, r->have_copy);
    printf(", \"floor_ms\": ");
    json_number(r->floor_ms, r->have_copy);
    printf(", \"floor_pct\": ");
    json_number(r->floor_pct, r->have_copy && r->median_ms > 0);
    printf(", \"peak_bytes\": ");
    json_number(r->peak_bytes, r->have_peak);
    printf(", \"library_bytes\": ");
    json_number(r->library_bytes, r->have_peak);
    printf(", \"io_bytes\": %.0f", r->io_bytes);
    if (r->have_b2b) {
        printf(", \"b2b\": {\"timing\": \"back-to-back wall clock\", \"batch\": %d, "
               "\"batches\": %d, \"median_ms\": ", r->b2b_batch, o->runs);
        json_number(r->b2b_median_ms, true);
        printf(", \"min_ms\": ");
        json_number(r->b2b_min_ms, true);
        printf(", \"max_ms\": ");
        json_number(r->b2b_max_ms, true);
        printf(", \"gbps\": ");
        json_number(r->bytes / (r->b2b_median_ms * 1e-3) / 1e9, r->b2b_median_ms > 0);
        printf(", \"floor_pct\": ");
        json_number(r->floor_ms / r->b2b_median_ms * 100, r->have_copy && r->b2b_median_ms > 0);
        printf("}");
    }
    printf(", \"outputs\": [");
    for (int q = 0; q < nout; q++) {
        printf("%s{\"name\": ", q ? ", " : "");
        json_string(oi[q].name);
        printf(", \"dtype\": \"%s\", \"shape\": [", fc_dtype_name(oi[q].dtype));
        for (int d = 0; d < oi[q].shape.ndim; d++)
            printf(d ? ", %" PRId64 : "%" PRId64, oi[q].shape.dim[d]);
        printf("]}");
    }
    printf("]}\n");
}

static void print_bench_text(const cli_program *p, const cli_opts *o, const bench_result *r) {
    char b1[32], b2[32], b3[32];
    printf("\nbench: %s on %s%s%s%s%s\n", p->label, r->device, r->gpu ? " (" : "",
           r->gpu ? r->arch : "", r->gpu ? ")" : " (host backend: wall-clock events)",
           r->fast_math ? ", fast-math tier" : "");
    printf("  %-22s %d\n", "kernels per eval", r->kernels);
    printf("  %-22s median %.4f ms   min %.4f ms   max %.4f ms   (%d runs after %d warm-up, "
           "%s)\n", "time", r->median_ms, r->min_ms, r->max_ms, o->runs, o->warmup,
           r->gpu ? "CUDA events around each call" : "wall clock around each call");
    if (r->have_b2b) {
        printf("  %-22s median %.4f ms   min %.4f ms   max %.4f ms   (per evaluation: %d batches "
               "of %d back to back, wall clock, one wait a batch)\n", "back-to-back",
               r->b2b_median_ms, r->b2b_min_ms, r->b2b_max_ms, o->runs, r->b2b_batch);
        if (r->have_copy && r->b2b_median_ms > 0)
            printf("  %-22s %.1f%% of floor\n", "back-to-back floor",
                   r->floor_ms / r->b2b_median_ms * 100);
    }
    if (o->floor_bytes)
        printf("  %-22s %s  (--floor-bytes; inputs + outputs are %s)\n", "bytes that must move",
               fmt_bytes(b1, sizeof b1, r->bytes), fmt_bytes(b2, sizeof b2, r->io_bytes));
    else
        printf("  %-22s %s  (inputs %s read once + outputs %s written once)\n",
               "bytes that must move", fmt_bytes(b1, sizeof b1, r->bytes),
               fmt_bytes(b2, sizeof b2, r->in_bytes), fmt_bytes(b3, sizeof b3, r->out_bytes));
    if (r->median_ms > 0) printf("  %-22s %.1f GB/s\n", "achieved", r->gbps);
    else printf("  %-22s not measurable (a run took no time)\n", "achieved");
    if (r->have_copy) {
        printf("  %-22s %.1f GB/s  (device-to-device copy of %s, read + written, median)\n",
               "copy bandwidth", r->copy_gbps, fmt_bytes(b1, sizeof b1, r->copy_bytes));
        printf("  %-22s %.4f ms  ->  %.1f%% of floor  (%.2fx the floor time)\n", "floor",
               r->floor_ms, r->floor_pct, r->median_ms / r->floor_ms);
    } else {
        printf("  %-22s not measured on the %s\n", "copy bandwidth",
               r->gpu ? "GPU (the copy failed)" : "host backend");
        printf("  %-22s not measured (needs the copy bandwidth)\n", "floor");
    }
    if (r->have_peak)
        printf("  %-22s %s  = %.2fx inputs + outputs (%s)\n", "peak device memory",
               fmt_bytes(b1, sizeof b1, r->peak_bytes),
               r->io_bytes > 0 ? r->peak_bytes / r->io_bytes : 0.0,
               fmt_bytes(b2, sizeof b2, r->io_bytes));
    if (r->have_peak && r->library_bytes > 0)
        printf("  %-22s %s  (kept between runs, not in the peak above)\n",
               "library workspaces", fmt_bytes(b1, sizeof b1, r->library_bytes));
    if (!r->have_peak)
        printf("  %-22s not measured on the host backend\n", "peak device memory");
}

static int bench(fc_ctx *ctx, const cli_program *p, fc_array *const *ins, const cli_opts *o,
                 const out_info *oi, int nout) {
    bench_result r;
    memset(&r, 0, sizeof r);
    r.gpu = fc_ctx_backend(ctx) == FC_BACKEND_CUDA;
    r.fast_math = fc_ctx_fast_math(ctx) != 0;
    snprintf(r.device, sizeof r.device, "host");
    fc_device_info info;
    if (r.gpu && fc_device_get_info(fc_ctx_device(ctx), &info) == FC_OK) {
        snprintf(r.device, sizeof r.device, "%s", info.name);
        snprintf(r.arch, sizeof r.arch, "%s", info.arch);
    }
    /* Kernels per evaluation: the plan of a build on the real inputs, in a scope closed
     * before the timed runs (so no node of it survives to hold a value). */
    int rc = EXIT_OK;
    fc_scope *scope = fc_scope_open(ctx);
    fc_array **outs = calloc((size_t)nout + 1, sizeof *outs);
    fcp_plan *plan = NULL;
    if (!scope || !outs) {
        cli_error("out of memory");
        rc = EXIT_EVAL;
    } else if (fc_program_build(p->prog, ins, outs) != FC_OK ||
               fcp_plan_build(ctx, outs, nout, &plan) != FC_OK) {
        cli_error("%s", fc_errmsg(ctx));
        rc = EXIT_PROGRAM;
    } else {
        r.kernels = plan->nkernel;
        fcp_plan_destroy(plan);
    }
    free(outs);
    fc_scope_close(scope);
    if (rc) return rc;
    for (int i = 0; i < fc_program_num_inputs(p->prog); i++)
        r.in_bytes += (double)array_bytes(fc_array_dtype(ins[i]), fc_array_shape(ins[i]));
    for (int q = 0; q < nout; q++) r.out_bytes += (double)array_bytes(oi[q].dtype, oi[q].shape);
    r.io_bytes = r.in_bytes + r.out_bytes;
    r.bytes = o->floor_bytes ? (double)o->floor_bytes : r.io_bytes;

    /* The copy bandwidth first, in the same process and on the same device: at least 256 MiB
     * (well past the L2), or the program's own bytes, at most 2 GiB. */
    if (r.gpu) {
        double want = r.bytes > (double)(256u << 20) ? r.bytes : (double)(256u << 20);
        size_t copy = want > (double)((size_t)2 << 30) ? (size_t)2 << 30 : (size_t)want;
        fc_status st = fc_device_copy_bandwidth(ctx, copy, o->runs, &r.copy_gbps);
        if (st == FC_OK && r.copy_gbps > 0) {
            r.have_copy = true;
            r.copy_bytes = (double)copy;
        } else {
            cli_warn("bench: the copy bandwidth could not be measured: %s", fc_errmsg(ctx));
        }
    }
    if ((rc = bench_runs(ctx, p, ins, o, &r)) != EXIT_OK) return rc;
    if (o->back_to_back && (rc = bench_back_to_back(ctx, p, ins, o, &r)) != EXIT_OK) return rc;
    if (r.median_ms > 0) r.gbps = r.bytes / (r.median_ms * 1e-3) / 1e9;
    if (r.have_copy) {
        r.floor_ms = r.bytes / (r.copy_gbps * 1e9) * 1e3;
        r.floor_pct = r.median_ms > 0 ? r.floor_ms / r.median_ms * 100 : 0;
    }
    if (o->json) print_bench_json(p, o, &r, oi, nout);
    else print_bench_text(p, o, &r);
    return EXIT_OK;
}

/* ---- run ---------------------------------------------------------------------------------- */

/* Builds the program again on real inputs (the placeholders of p->outs cannot be evaluated),
 * evaluates it, reports and writes every output, then benchmarks it if asked. */
static int run_one(fc_ctx *ctx, const cli_program *p, void *user) {
    const run_args *ra = user;
    const cli_opts *o = ra->o;
    fc_program *prog = p->prog;
    int nin = fc_program_num_inputs(prog), nout = fc_program_num_outputs(prog);
    fc_array **ins = calloc((size_t)nin + 1, sizeof *ins);
    fc_array **outs = calloc((size_t)nout + 1, sizeof *outs);
    out_info *oi = calloc((size_t)nout + 1, sizeof *oi);
    int rc = EXIT_OK;
    if (!ins || !outs || !oi) {
        cli_error("out of memory");
        rc = EXIT_EVAL;
    }
    if (!rc) rc = make_inputs(ctx, p, ra, ins);
    /* The first evaluation's outputs live in a scope of their own: closing it before the
     * bench leaves no node built from the inputs, so every timed run computes afresh. */
    fc_scope *scope = rc ? NULL : fc_scope_open(ctx);
    if (!rc && !scope) {
        cli_error("out of memory");
        rc = EXIT_EVAL;
    }
    if (!rc && fc_program_build(prog, ins, outs) != FC_OK) {
        cli_error("%s", fc_errmsg(ctx));
        rc = EXIT_PROGRAM;
    }
    double seconds = 0;
    if (!rc) {
        double t0 = cli_now();
        fc_status st = fc_eval(ctx, outs, nout);
        seconds = cli_now() - t0;
        if (st != FC_OK) {
            cli_error("%s", fc_errmsg(ctx));
            rc = eval_exit(st);
        }
    }
    for (int i = 0; !rc && i < nout; i++) {
        oi[i] = (out_info){fc_program_output_name(prog, i), fc_array_dtype(outs[i]),
                           fc_array_shape(outs[i])};
        if (!o->json) rc = report_output(oi[i].name, outs[i]);
    }
    if (!rc && !o->json)
        printf("eval: %.3f ms on the %s backend\n", seconds * 1e3,
               fc_ctx_backend(ctx) == FC_BACKEND_CUDA ? "cuda" : "host");
    for (int i = 0; !rc && o->output_dir && i < nout; i++)
        rc = save_output(o->output_dir, oi[i].name, outs[i], o->json);
    fc_scope_close(scope);
    if (!rc && o->bench) rc = bench(ctx, p, ins, o, oi, nout);
    free(ins);
    free(outs);
    free(oi);
    return rc;
}

int cmd_run(int argc, char **argv) {
    cli_opts o;
    int rc = cli_parse("run", argc, argv,
                       OPT_SET | OPT_SEED | OPT_BACKEND | OPT_CACHE_DIR | OPT_INPUT |
                           OPT_OUTPUT_DIR | OPT_BENCH | OPT_FAST_MATH,
                       &o);
    if (rc || o.help) {
        fputs(usage_run, o.help ? stdout : stderr);
        cli_opts_free(&o);
        return rc;
    }
    fc_ctx *ctx;
    fc_array *loaded[CLI_MAX_INPUTS] = {NULL};
    if (!(rc = cli_open_ctx(o.backend, o.cache_dir, o.fast_math, &ctx))) {
        /* The files load first: their shapes bind the symbols no --set gave. */
        for (int j = 0; !rc && j < o.ninputs; j++) {
            loaded[j] = fc_npy_load(ctx, o.inputs[j].path);
            fc_status st = fc_array_status(loaded[j]);
            if (st != FC_OK) {
                cli_error("--input %s: %s", o.inputs[j].name, fc_array_errmsg(loaded[j]));
                rc = st == FC_ERR_NOMEM ? EXIT_EVAL : EXIT_IO;
            } else {
                o.inputs[j].loaded = true;
                o.inputs[j].shape = fc_array_shape(loaded[j]);
            }
        }
        if (!rc && o.output_dir) rc = make_dirs(o.output_dir);
        if (!rc) {
            run_args ra = {&o, loaded};
            /* A program without inputs is all creation ops, which are hash-consed: a
             * placeholder build would share (and keep) the nodes run_one evaluates. */
            o.no_placeholders = true;
            rc = cli_for_each_program(ctx, &o, o.files[0], true, true, run_one, &ra);
        }
        if (fflush(stdout) != 0 && !rc) {
            cli_error("cannot write the output: %s", strerror(errno));
            rc = EXIT_IO;
        }
        for (int j = 0; j < o.ninputs; j++) fc_release(loaded[j]);
        fc_ctx_destroy(ctx);
    }
    cli_opts_free(&o);
    return rc;
}
