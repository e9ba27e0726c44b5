/*
 * tools/cmd_program.c - fusec print, hash and run: one .fc program as text, as a hash, or
 * evaluated on random inputs.
 */
#include "cli.h"

#include "graph.h" /* f16 / bf16 bits to float for display */

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

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
    if (!(rc = cli_open_ctx(FC_BACKEND_HOST, NULL, &ctx))) {
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
    "usage: fusec run FILE.fc [--set NAME=VALUE ...] [--seed S] [--backend host|auto|cuda]\n"
    "                 [--cache-dir DIR]\n"
    "\n"
    "Runs the program on random inputs (floats uniform in [0, 1), small integers, random\n"
    "bools) and evaluates all its outputs together. For each output prints its dtype, shape,\n"
    "first values and min / max / mean, then the wall time of the evaluation.\n"
    "\n"
    "  --set NAME=VALUE   binds a dimension symbol (repeat for each symbol)\n"
    "  --seed S           seed of the random inputs (default 0)\n"
    "  --backend B        host, auto (the GPU when usable, else host; default) or cuda\n"
    "  --cache-dir DIR    the kernel cache (default: $FUSEC_CACHE_DIR, $XDG_CACHE_HOME/fusec,\n"
    "                     ~/.cache/fusec)\n"
    "\n"
    "Exit codes: 0 ok, 1 usage, 2 parse or program error, 3 evaluation error, 4 I/O error,\n"
    "5 a kernel failed to compile or missed the cache under FUSEC_REQUIRE_CACHED=1.\n";

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

static void print_value(fc_dtype dt, double re, double im) {
    if (dt == FC_BOOL) printf("%s", re != 0 ? "True" : "False");
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
                print_value(dt, re, im);
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

typedef struct run_args {
    uint64_t seed;
} run_args;

/* Builds the program again on random inputs (the placeholders of p->outs cannot be
 * evaluated), evaluates it and reports every output. */
static int run_one(fc_ctx *ctx, const cli_program *p, void *user) {
    const run_args *ra = user;
    fc_program *prog = p->prog;
    int nin = fc_program_num_inputs(prog), nout = fc_program_num_outputs(prog);
    fc_array **ins = calloc((size_t)nin + 1, sizeof *ins);
    fc_array **outs = calloc((size_t)nout + 1, sizeof *outs);
    int rc = EXIT_OK;
    if (!ins || !outs) {
        cli_error("out of memory");
        rc = EXIT_EVAL;
    }
    for (int i = 0; !rc && i < nin; i++) {
        fc_shape shape;
        fc_program_input_shape(prog, i, &shape);
        ins[i] = random_input(ctx, fc_program_input_dtype(prog, i), shape,
                              ra->seed * 1000003u + (uint64_t)i);
        if (!ins[i] || fc_array_status(ins[i]) != FC_OK) {
            cli_error("cannot make input '%s': %s", fc_program_input_name(prog, i),
                      ins[i] ? fc_errmsg(ctx) : "out of memory");
            rc = EXIT_EVAL;
        }
    }
    /* Inputs hold their values before the clock starts. */
    if (!rc && nin && fc_eval(ctx, ins, nin) != FC_OK) {
        cli_error("cannot make the inputs: %s", fc_errmsg(ctx));
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
            rc = st == FC_ERR_COMPILE || st == FC_ERR_NOT_CACHED ? EXIT_COMPILE : EXIT_EVAL;
        }
    }
    for (int i = 0; !rc && i < nout; i++)
        rc = report_output(fc_program_output_name(prog, i), outs[i]);
    if (!rc)
        printf("eval: %.3f ms on the %s backend\n", seconds * 1e3,
               fc_ctx_backend(ctx) == FC_BACKEND_CUDA ? "cuda" : "host");
    free(ins);
    free(outs);
    return rc;
}

int cmd_run(int argc, char **argv) {
    cli_opts o;
    int rc = cli_parse("run", argc, argv, OPT_SET | OPT_SEED | OPT_BACKEND | OPT_CACHE_DIR, &o);
    if (rc || o.help) {
        fputs(usage_run, o.help ? stdout : stderr);
        cli_opts_free(&o);
        return rc;
    }
    fc_ctx *ctx;
    if (!(rc = cli_open_ctx(o.backend, o.cache_dir, &ctx))) {
        run_args ra = {o.seed};
        rc = cli_for_each_program(ctx, &o, o.files[0], true, true, run_one, &ra);
        if (fflush(stdout) != 0 && !rc) {
            cli_error("cannot write the output: %s", strerror(errno));
            rc = EXIT_IO;
        }
        fc_ctx_destroy(ctx);
    }
    cli_opts_free(&o);
    return rc;
}
