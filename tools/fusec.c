/*
 * tools/fusec.c - the fusec command line: reads .fc programs, prints, hashes and runs them.
 *
 *   fusec <command> [options]      (fusec --help lists the commands; each takes --help)
 *
 * Exit codes: 0 ok, 1 usage, 2 parse or program error, 3 evaluation error, 4 I/O error.
 * Messages go to stderr, prefixed "fusec: ". Commands are rows of one table, so later ones
 * (dump, graph, explain, warm, cache) are one row and one function each.
 */
#include <fusec.h>

#include "graph.h" /* f16 / bf16 bits to float for display */

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum {
    EXIT_OK = 0,
    EXIT_USAGE = 1,
    EXIT_PROGRAM = 2,
    EXIT_EVAL = 3,
    EXIT_IO = 4
};

#define MAX_SETS 64
#define SHOW_VALUES 6

static void errorf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void errorf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("fusec: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* ---- options ---------------------------------------------------------------------------- */

enum { OPT_SET = 1, OPT_SEED = 2, OPT_BACKEND = 4 };

typedef struct options {
    const char *file;
    struct {
        char name[256];
        int64_t value;
    } sets[MAX_SETS];
    int nsets;
    uint64_t seed;
    fc_backend backend;
    bool help;
} options;

static bool parse_u64(const char *s, uint64_t *out) {
    if (!*s || *s == '-' || *s == '+') return false;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || *end) return false;
    *out = v;
    return true;
}

/* Reads "NAME=VALUE" of --set. */
static bool parse_set(const char *arg, options *o) {
    const char *eq = strchr(arg, '=');
    uint64_t v;
    if (!eq || eq == arg || (size_t)(eq - arg) >= sizeof o->sets[0].name ||
        !parse_u64(eq + 1, &v) || v > INT64_MAX) {
        errorf("--set expects NAME=VALUE with VALUE a non-negative integer, got '%s'", arg);
        return false;
    }
    if (o->nsets == MAX_SETS) {
        errorf("at most %d --set options", MAX_SETS);
        return false;
    }
    memcpy(o->sets[o->nsets].name, arg, (size_t)(eq - arg));
    o->sets[o->nsets].name[eq - arg] = '\0';
    o->sets[o->nsets].value = (int64_t)v;
    o->nsets++;
    return true;
}

/* Takes the value of an option given as "--opt VALUE" or "--opt=VALUE". */
static const char *option_value(const char *opt, int argc, char **argv, int *i) {
    size_t n = strlen(opt);
    if (argv[*i][n] == '=') return argv[*i] + n + 1;
    if (*i + 1 >= argc) {
        errorf("%s needs a value", opt);
        return NULL;
    }
    return argv[++*i];
}

static bool is_option(const char *arg, const char *opt) {
    size_t n = strlen(opt);
    return strncmp(arg, opt, n) == 0 && (arg[n] == '\0' || arg[n] == '=');
}

/* Parses a command's arguments: one FILE and the options in `allowed`. */
static int parse_options(const char *cmd, int argc, char **argv, unsigned allowed, options *o) {
    memset(o, 0, sizeof *o);
    o->backend = FC_BACKEND_AUTO;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            o->help = true;
            return EXIT_OK;
        }
        if ((allowed & OPT_SET) && is_option(a, "--set")) {
            const char *v = option_value("--set", argc, argv, &i);
            if (!v || !parse_set(v, o)) return EXIT_USAGE;
        } else if ((allowed & OPT_SEED) && is_option(a, "--seed")) {
            const char *v = option_value("--seed", argc, argv, &i);
            if (!v) return EXIT_USAGE;
            if (!parse_u64(v, &o->seed)) {
                errorf("--seed expects a non-negative integer, got '%s'", v);
                return EXIT_USAGE;
            }
        } else if ((allowed & OPT_BACKEND) && is_option(a, "--backend")) {
            const char *v = option_value("--backend", argc, argv, &i);
            if (!v) return EXIT_USAGE;
            if (strcmp(v, "auto") == 0) o->backend = FC_BACKEND_AUTO;
            else if (strcmp(v, "host") == 0) o->backend = FC_BACKEND_HOST;
            else if (strcmp(v, "cuda") == 0) o->backend = FC_BACKEND_CUDA;
            else {
                errorf("--backend expects host, auto or cuda, got '%s'", v);
                return EXIT_USAGE;
            }
        } else if (a[0] == '-' && a[1] != '\0') {
            errorf("%s: unknown option '%s' (see fusec %s --help)", cmd, a, cmd);
            return EXIT_USAGE;
        } else if (o->file) {
            errorf("%s: more than one file given ('%s' and '%s')", cmd, o->file, a);
            return EXIT_USAGE;
        } else {
            o->file = a;
        }
    }
    if (!o->file) {
        errorf("%s: no .fc file given (see fusec %s --help)", cmd, cmd);
        return EXIT_USAGE;
    }
    return EXIT_OK;
}

/* ---- loading a program ------------------------------------------------------------------ */

static int status_exit(fc_status st) {
    switch (st) {
    case FC_OK: return EXIT_OK;
    case FC_ERR_IO: return EXIT_IO;
    default: return EXIT_PROGRAM;
    }
}

static int open_ctx(fc_backend backend, fc_ctx **ctx) {
    fc_ctx_options opts;
    memset(&opts, 0, sizeof opts);
    opts.backend = backend;
    fc_status st = fc_ctx_create(ctx, &opts);
    if (st != FC_OK) {
        errorf("cannot create a context: %s", fc_strerror(st));
        return EXIT_EVAL;
    }
    return EXIT_OK;
}

/* Loads o->file, binds the --set symbols, checks every symbol has a value. */
static int load_program(fc_ctx *ctx, const options *o, fc_program **prog) {
    fc_status st = fc_program_load(ctx, o->file, prog);
    if (st != FC_OK) {
        errorf("%s", fc_errmsg(ctx));
        return status_exit(st);
    }
    for (int i = 0; i < o->nsets; i++) {
        if (fc_program_set_symbol(*prog, o->sets[i].name, o->sets[i].value) != FC_OK) {
            errorf("%s", fc_errmsg(ctx));
            fc_program_destroy(*prog);
            *prog = NULL;
            return EXIT_USAGE;
        }
    }
    for (int i = 0; i < fc_program_num_inputs(*prog); i++) {
        fc_shape shape;
        if (fc_program_input_shape(*prog, i, &shape) == FC_ERR_UNBOUND) {
            errorf("%s; give it with --set NAME=VALUE", fc_errmsg(ctx));
            fc_program_destroy(*prog);
            *prog = NULL;
            return EXIT_PROGRAM;
        }
    }
    return EXIT_OK;
}

/* Builds the program with placeholder inputs into a new array of outputs. */
static int build_placeholders(fc_ctx *ctx, fc_program *prog, fc_array ***outs) {
    int n = fc_program_num_outputs(prog);
    *outs = calloc((size_t)n, sizeof **outs);
    if (!*outs) {
        errorf("out of memory");
        return EXIT_PROGRAM;
    }
    fc_status st = fc_program_build(prog, NULL, *outs);
    if (st != FC_OK) {
        errorf("%s", fc_errmsg(ctx));
        free(*outs);
        *outs = NULL;
        return EXIT_PROGRAM;
    }
    return EXIT_OK;
}

/* ---- print, hash ------------------------------------------------------------------------ */

static const char usage_print[] =
    "usage: fusec print FILE.fc [--set NAME=VALUE ...]\n"
    "\n"
    "Prints the program's graph as canonical .fc text: one statement per node, inputs x0..,\n"
    "temporaries t0.., outputs under their names. Equal graphs print equal bytes.\n"
    "\n"
    "  --set NAME=VALUE   binds a dimension symbol (repeat for each symbol)\n";

static int cmd_print(int argc, char **argv) {
    options o;
    int rc = parse_options("print", argc, argv, OPT_SET, &o);
    if (rc || o.help) {
        fputs(usage_print, o.help ? stdout : stderr);
        return rc;
    }
    fc_ctx *ctx;
    if ((rc = open_ctx(FC_BACKEND_HOST, &ctx))) return rc;
    fc_scope *scope = fc_scope_open(ctx);
    fc_program *prog = NULL;
    fc_array **outs = NULL;
    if (!scope) {
        errorf("out of memory");
        rc = EXIT_PROGRAM;
    }
    if (!rc) rc = load_program(ctx, &o, &prog);
    if (!rc) rc = build_placeholders(ctx, prog, &outs);
    if (!rc) {
        int n = fc_program_num_outputs(prog);
        const char **names = calloc((size_t)n, sizeof *names);
        char *text = NULL;
        if (!names) {
            errorf("out of memory");
            rc = EXIT_PROGRAM;
        } else {
            for (int i = 0; i < n; i++) names[i] = fc_program_output_name(prog, i);
            if (fc_program_print(ctx, outs, n, names, &text) != FC_OK) {
                errorf("%s", fc_errmsg(ctx));
                rc = EXIT_PROGRAM;
            } else if (fputs(text, stdout) == EOF || fflush(stdout) != 0) {
                errorf("cannot write the output: %s", strerror(errno));
                rc = EXIT_IO;
            }
        }
        fc_free(ctx, text);
        free(names);
    }
    free(outs);
    fc_program_destroy(prog);
    fc_scope_close(scope);
    fc_ctx_destroy(ctx);
    return rc;
}

static const char usage_hash[] =
    "usage: fusec hash FILE.fc [--set NAME=VALUE ...]\n"
    "\n"
    "Prints the structural hash (128 bits, hex) of the program's graph: a function of its ops,\n"
    "dtypes, shapes, parameters and wiring only, the same in every process.\n"
    "\n"
    "  --set NAME=VALUE   binds a dimension symbol (repeat for each symbol)\n";

static int cmd_hash(int argc, char **argv) {
    options o;
    int rc = parse_options("hash", argc, argv, OPT_SET, &o);
    if (rc || o.help) {
        fputs(usage_hash, o.help ? stdout : stderr);
        return rc;
    }
    fc_ctx *ctx;
    if ((rc = open_ctx(FC_BACKEND_HOST, &ctx))) return rc;
    fc_scope *scope = fc_scope_open(ctx);
    fc_program *prog = NULL;
    fc_array **outs = NULL;
    if (!scope) {
        errorf("out of memory");
        rc = EXIT_PROGRAM;
    }
    if (!rc) rc = load_program(ctx, &o, &prog);
    if (!rc) rc = build_placeholders(ctx, prog, &outs);
    if (!rc) {
        fc_hash h;
        if (fc_graph_hash(outs, fc_program_num_outputs(prog), &h) != FC_OK) {
            errorf("%s", fc_errmsg(ctx));
            rc = EXIT_PROGRAM;
        } else {
            printf("%016" PRIx64 "%016" PRIx64 "\n", h.hi, h.lo);
        }
    }
    free(outs);
    fc_program_destroy(prog);
    fc_scope_close(scope);
    fc_ctx_destroy(ctx);
    return rc;
}

/* ---- run -------------------------------------------------------------------------------- */

static const char usage_run[] =
    "usage: fusec run FILE.fc [--set NAME=VALUE ...] [--seed S] [--backend host|auto|cuda]\n"
    "\n"
    "Runs the program on random inputs (floats uniform in [0, 1), small integers, random\n"
    "bools) and evaluates all its outputs together. For each output prints its dtype, shape,\n"
    "first values and min / max / mean, then the wall time of the evaluation.\n"
    "\n"
    "  --set NAME=VALUE   binds a dimension symbol (repeat for each symbol)\n"
    "  --seed S           seed of the random inputs (default 0)\n"
    "  --backend B        host, auto (the GPU when usable, else host; default) or cuda\n"
    "\n"
    "Exit codes: 0 ok, 1 usage, 2 parse or program error, 3 evaluation error, 4 I/O error.\n";

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
        errorf("out of memory");
        return EXIT_EVAL;
    }
    double lo = INFINITY, hi = -INFINITY, sum_re = 0, sum_im = 0;
    bool any_nan = false;
    for (int64_t off = 0; off < n; off += CHUNK) {
        int64_t count = n - off < CHUNK ? n - off : CHUNK;
        fc_status st = fc_read(a, buf, off, count);
        if (st != FC_OK) {
            free(buf);
            errorf("%s", fc_errmsg(fc_array_ctx(a)));
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

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int run_program(fc_ctx *ctx, fc_program *prog, const options *o) {
    int nin = fc_program_num_inputs(prog), nout = fc_program_num_outputs(prog);
    fc_array **ins = calloc((size_t)nin + 1, sizeof *ins);
    fc_array **outs = calloc((size_t)nout + 1, sizeof *outs);
    int rc = EXIT_OK;
    if (!ins || !outs) {
        errorf("out of memory");
        rc = EXIT_EVAL;
    }
    for (int i = 0; !rc && i < nin; i++) {
        fc_shape shape;
        fc_program_input_shape(prog, i, &shape);
        ins[i] = random_input(ctx, fc_program_input_dtype(prog, i), shape,
                              o->seed * 1000003u + (uint64_t)i);
        if (!ins[i] || fc_array_status(ins[i]) != FC_OK) {
            errorf("cannot make input '%s': %s", fc_program_input_name(prog, i),
                   ins[i] ? fc_errmsg(ctx) : "out of memory");
            rc = EXIT_EVAL;
        }
    }
    /* Inputs hold their values before the clock starts. */
    if (!rc && nin && fc_eval(ctx, ins, nin) != FC_OK) {
        errorf("cannot make the inputs: %s", fc_errmsg(ctx));
        rc = EXIT_EVAL;
    }
    if (!rc && fc_program_build(prog, ins, outs) != FC_OK) {
        errorf("%s", fc_errmsg(ctx));
        rc = EXIT_PROGRAM;
    }
    double seconds = 0;
    if (!rc) {
        double t0 = now_seconds();
        fc_status st = fc_eval(ctx, outs, nout);
        seconds = now_seconds() - t0;
        if (st != FC_OK) {
            errorf("%s", fc_errmsg(ctx));
            rc = EXIT_EVAL;
        }
    }
    for (int i = 0; !rc && i < nout; i++) rc = report_output(fc_program_output_name(prog, i), outs[i]);
    if (!rc)
        printf("eval: %.3f ms on the %s backend\n", seconds * 1e3,
               fc_ctx_backend(ctx) == FC_BACKEND_CUDA ? "cuda" : "host");
    free(ins);
    free(outs);
    return rc;
}

static int cmd_run(int argc, char **argv) {
    options o;
    int rc = parse_options("run", argc, argv, OPT_SET | OPT_SEED | OPT_BACKEND, &o);
    if (rc || o.help) {
        fputs(usage_run, o.help ? stdout : stderr);
        return rc;
    }
    fc_ctx *ctx;
    if ((rc = open_ctx(o.backend, &ctx))) return rc;
    fc_scope *scope = fc_scope_open(ctx);
    fc_program *prog = NULL;
    if (!scope) {
        errorf("out of memory");
        rc = EXIT_EVAL;
    }
    if (!rc) rc = load_program(ctx, &o, &prog);
    if (!rc) rc = run_program(ctx, prog, &o);
    if (fflush(stdout) != 0 && !rc) {
        errorf("cannot write the output: %s", strerror(errno));
        rc = EXIT_IO;
    }
    fc_program_destroy(prog);
    fc_scope_close(scope);
    fc_ctx_destroy(ctx);
    return rc;
}

/* ---- version, help ---------------------------------------------------------------------- */

static const char usage_version[] = "usage: fusec version\n\nPrints fusec's version.\n";

static int cmd_version(int argc, char **argv) {
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            fputs(usage_version, stdout);
            return EXIT_OK;
        }
        errorf("version: unexpected argument '%s'", argv[i]);
        return EXIT_USAGE;
    }
    printf("fusec %d.%d.%d\n", FUSEC_VERSION_MAJOR, FUSEC_VERSION_MINOR, FUSEC_VERSION_PATCH);
    return EXIT_OK;
}

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} command;

static int cmd_help(int argc, char **argv);

static const command commands[] = {
    {"print", cmd_print, "print a .fc program's graph as canonical .fc text"},
    {"hash", cmd_hash, "print the structural hash of a .fc program's graph"},
    {"run", cmd_run, "run a .fc program on random inputs and summarise its outputs"},
    {"version", cmd_version, "print fusec's version"},
    {"help", cmd_help, "show help for fusec or for a command"},
};
#define NCOMMANDS (int)(sizeof commands / sizeof commands[0])

static void print_usage(FILE *f) {
    fputs("usage: fusec <command> [options]\n"
          "\n"
          "fusec is a fusing array compiler; this tool reads .fc programs (FC_FORMAT.md).\n"
          "\n"
          "commands:\n",
          f);
    for (int i = 0; i < NCOMMANDS; i++) fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fputs("\n"
          "Run 'fusec <command> --help' for a command's options.\n"
          "Exit codes: 0 ok, 1 usage, 2 parse or program error, 3 evaluation error, 4 I/O error.\n",
          f);
}

static int cmd_help(int argc, char **argv) {
    if (argc == 0) {
        print_usage(stdout);
        return EXIT_OK;
    }
    for (int i = 0; i < NCOMMANDS; i++) {
        if (strcmp(argv[0], commands[i].name) == 0 && commands[i].run != cmd_help) {
            char help[] = "--help";
            char *args[] = {help, NULL};
            return commands[i].run(1, args);
        }
    }
    errorf("help: unknown command '%s'", argv[0]);
    return EXIT_USAGE;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        print_usage(stderr);
        return EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        print_usage(stdout);
        return EXIT_OK;
    }
    if (strcmp(cmd, "--version") == 0) return cmd_version(0, NULL);
    for (int i = 0; i < NCOMMANDS; i++)
        if (strcmp(cmd, commands[i].name) == 0) return commands[i].run(argc - 2, argv + 2);
    errorf("unknown command '%s' (see fusec --help)", cmd);
    return EXIT_USAGE;
}
