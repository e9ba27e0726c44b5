/*
 * tools/cli_common.c - what every fusec command shares: messages, options, loading programs
 * (and trace files of many programs), planning and keys.
 */
#include "cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void cli_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("fusec: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

void cli_warn(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("fusec: warning: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

double cli_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- options ------------------------------------------------------------------------------ */

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
static bool parse_set(const char *arg, cli_opts *o) {
    const char *eq = strchr(arg, '=');
    uint64_t v;
    if (!eq || eq == arg || (size_t)(eq - arg) >= sizeof o->sets[0].name ||
        !parse_u64(eq + 1, &v) || v > INT64_MAX) {
        cli_error("--set expects NAME=VALUE with VALUE a non-negative integer, got '%s'", arg);
        return false;
    }
    if (o->nsets == CLI_MAX_SETS) {
        cli_error("at most %d --set options", CLI_MAX_SETS);
        return false;
    }
    cli_set *s = &o->sets[o->nsets++];
    memcpy(s->name, arg, (size_t)(eq - arg));
    s->name[eq - arg] = '\0';
    s->value = (int64_t)v;
    s->used = false;
    return true;
}

/* Reads "NAME=FILE" of --input. */
static bool parse_input(const char *arg, cli_opts *o) {
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg || !eq[1] || (size_t)(eq - arg) >= sizeof o->inputs[0].name) {
        cli_error("--input expects NAME=FILE.npy, got '%s'", arg);
        return false;
    }
    if (o->ninputs == CLI_MAX_INPUTS) {
        cli_error("at most %d --input options", CLI_MAX_INPUTS);
        return false;
    }
    size_t n = (size_t)(eq - arg);
    for (int i = 0; i < o->ninputs; i++)
        if (strlen(o->inputs[i].name) == n && memcmp(o->inputs[i].name, arg, n) == 0) {
            cli_error("--input %.*s is given twice", (int)n, arg);
            return false;
        }
    cli_input *in = &o->inputs[o->ninputs++];
    memset(in, 0, sizeof *in);
    memcpy(in->name, arg, n);
    in->name[n] = '\0';
    in->path = eq + 1;
    return true;
}

/* A count option's value in [lo, hi]. */
static bool parse_count(const char *opt, const char *v, uint64_t lo, uint64_t hi, uint64_t *out) {
    if (!parse_u64(v, out) || *out < lo || *out > hi) {
        cli_error("%s expects a number from %llu to %llu, got '%s'", opt, (unsigned long long)lo,
                  (unsigned long long)hi, v);
        return false;
    }
    return true;
}

/* Adds the arches of a comma-separated list, checked by NVRTC, without repeats. */
static bool parse_archs(const char *list, bool many, cli_opts *o) {
    const char *p = list;
    if (!*p) {
        cli_error("--arch needs an architecture such as sm_90");
        return false;
    }
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        char arch[64];
        if (n == 0 || n >= FCN_ARCH_MAX) {
            cli_error("--arch: '%.*s' is not an architecture (sm_XX)", (int)(n < 60 ? n : 60), p);
            return false;
        }
        memcpy(arch, p, n);
        arch[n] = '\0';
        if (!many && (comma || o->narchs > 0)) {
            cli_error("%s takes one --arch", o->cmd);
            return false;
        }
        char msg[512];
        if (fcn_check_arch(arch, msg, sizeof msg) != FC_OK) {
            cli_error("--arch %s: %s", arch, msg);
            return false;
        }
        bool dup = false;
        for (int i = 0; i < o->narchs; i++) dup |= strcmp(o->archs[i], arch) == 0;
        if (!dup) {
            if (o->narchs == CLI_MAX_ARCHS) {
                cli_error("at most %d architectures", CLI_MAX_ARCHS);
                return false;
            }
            memcpy(o->archs[o->narchs++], arch, n + 1);
        }
        if (!comma) return true;
        p = comma + 1;
    }
}

/* The value of "--opt VALUE" or "--opt=VALUE" (or "-jN" for short options). */
static const char *option_value(const char *opt, int argc, char **argv, int *i) {
    size_t n = strlen(opt);
    if (argv[*i][n] == '=') return argv[*i] + n + 1;
    if (opt[1] != '-' && argv[*i][n] != '\0') return argv[*i] + n;
    if (*i + 1 >= argc) {
        cli_error("%s needs a value", opt);
        return NULL;
    }
    return argv[++*i];
}

static bool is_option(const char *arg, const char *opt) {
    size_t n = strlen(opt);
    if (strncmp(arg, opt, n) != 0) return false;
    if (arg[n] == '\0' || arg[n] == '=') return true;
    return opt[1] != '-' && arg[n] >= '0' && arg[n] <= '9'; /* -j4 */
}

static bool is_flag(const char *arg, const char *opt) { return strcmp(arg, opt) == 0; }

int cli_parse(const char *cmd, int argc, char **argv, unsigned allowed, cli_opts *o) {
    memset(o, 0, sizeof *o);
    o->cmd = cmd;
    o->backend = FC_BACKEND_AUTO;
    o->runs = 15;
    o->warmup = 3;
    const char *bench_only = NULL; /* an option that means something only with --bench */
    bool batch_given = false;
    o->files = malloc(((size_t)argc + 1) * sizeof *o->files);
    if (!o->files) {
        cli_error("out of memory");
        return EXIT_USAGE;
    }
    bool only_files = false;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!only_files && (is_flag(a, "-h") || is_flag(a, "--help"))) {
            o->help = true;
            return EXIT_OK;
        }
        if (only_files || a[0] != '-' || a[1] == '\0') {
            if (!(allowed & OPT_FILES) && o->nfiles == 1) {
                cli_error("%s: more than one file given ('%s' and '%s')", cmd, o->files[0], a);
                return EXIT_USAGE;
            }
            o->files[o->nfiles++] = a;
            continue;
        }
        const char *v;
        if (is_flag(a, "--")) {
            only_files = true;
        } else if ((allowed & OPT_SET) && is_option(a, "--set")) {
            if (!(v = option_value("--set", argc, argv, &i)) || !parse_set(v, o)) return EXIT_USAGE;
        } else if ((allowed & OPT_SEED) && is_option(a, "--seed")) {
            if (!(v = option_value("--seed", argc, argv, &i))) return EXIT_USAGE;
            if (!parse_u64(v, &o->seed)) {
                cli_error("--seed expects a non-negative integer, got '%s'", v);
                return EXIT_USAGE;
            }
        } else if ((allowed & OPT_BACKEND) && is_option(a, "--backend")) {
            if (!(v = option_value("--backend", argc, argv, &i))) return EXIT_USAGE;
            if (strcmp(v, "auto") == 0) o->backend = FC_BACKEND_AUTO;
            else if (strcmp(v, "host") == 0) o->backend = FC_BACKEND_HOST;
            else if (strcmp(v, "cuda") == 0) o->backend = FC_BACKEND_CUDA;
            else {
                cli_error("--backend expects host, auto or cuda, got '%s'", v);
                return EXIT_USAGE;
            }
        } else if ((allowed & (OPT_ARCH | OPT_ARCHS)) && is_option(a, "--arch")) {
            if (!(v = option_value("--arch", argc, argv, &i)) ||
                !parse_archs(v, (allowed & OPT_ARCHS) != 0, o))
                return EXIT_USAGE;
        } else if ((allowed & OPT_JOBS) && (is_option(a, "-j") || is_option(a, "--jobs"))) {
            uint64_t n;
            if (!(v = option_value(a[1] == '-' ? "--jobs" : "-j", argc, argv, &i)))
                return EXIT_USAGE;
            if (!parse_u64(v, &n) || n < 1 || n > 256) {
                cli_error("-j expects a number of threads from 1 to 256, got '%s'", v);
                return EXIT_USAGE;
            }
            o->jobs = (int)n;
        } else if ((allowed & OPT_DOT) && is_flag(a, "--dot")) {
            o->dot = true;
        } else if ((allowed & OPT_FAST_MATH) && is_flag(a, "--fast-math")) {
            o->fast_math = true;
        } else if ((allowed & OPT_NO_PRELUDE) && is_flag(a, "--no-prelude")) {
            o->no_prelude = true;
        } else if ((allowed & OPT_KEY) && is_option(a, "--key")) {
            if (!(v = option_value("--key", argc, argv, &i))) return EXIT_USAGE;
            o->key_file = v;
        } else if ((allowed & OPT_DELETE_BAD) && is_flag(a, "--delete-bad")) {
            o->delete_bad = true;
        } else if ((allowed & OPT_QUIET) && (is_flag(a, "-q") || is_flag(a, "--quiet"))) {
            o->quiet = true;
        } else if ((allowed & OPT_INPUT) && is_option(a, "--input")) {
            if (!(v = option_value("--input", argc, argv, &i)) || !parse_input(v, o))
                return EXIT_USAGE;
        } else if ((allowed & OPT_OUTPUT_DIR) && is_option(a, "--output-dir")) {
            if (!(v = option_value("--output-dir", argc, argv, &i))) return EXIT_USAGE;
            if (!*v) {
                cli_error("--output-dir needs a directory");
                return EXIT_USAGE;
            }
            o->output_dir = v;
        } else if ((allowed & OPT_BENCH) && is_flag(a, "--bench")) {
            o->bench = true;
        } else if ((allowed & OPT_BENCH) && is_flag(a, "--time-build")) {
            o->time_build = true;
            bench_only = "--time-build";
        } else if ((allowed & OPT_BENCH) && is_flag(a, "--json")) {
            o->json = true;
            bench_only = "--json";
        } else if ((allowed & OPT_BENCH) &&
                   (is_option(a, "--runs") || is_option(a, "--warmup"))) {
            const char *opt = is_option(a, "--runs") ? "--runs" : "--warmup";
            uint64_t n;
            if (!(v = option_value(opt, argc, argv, &i)) ||
                !parse_count(opt, v, opt[2] == 'r' ? 1 : 0, 1000000, &n))
                return EXIT_USAGE;
            *(opt[2] == 'r' ? &o->runs : &o->warmup) = (int)n;
            bench_only = opt;
        } else if ((allowed & OPT_BENCH) && is_flag(a, "--back-to-back")) {
            o->back_to_back = true;
            bench_only = "--back-to-back";
        } else if ((allowed & OPT_BENCH) && is_option(a, "--batch")) {
            uint64_t n;
            if (!(v = option_value("--batch", argc, argv, &i)) ||
                !parse_count("--batch", v, 0, 100000, &n))
                return EXIT_USAGE;
            o->batch = (int)n;
            batch_given = true;
            bench_only = "--batch";
        } else if ((allowed & OPT_BENCH) && is_option(a, "--floor-bytes")) {
            if (!(v = option_value("--floor-bytes", argc, argv, &i)) ||
                !parse_count("--floor-bytes", v, 1, (uint64_t)1 << 62, &o->floor_bytes))
                return EXIT_USAGE;
            bench_only = "--floor-bytes";
        } else if ((allowed & OPT_CACHE_DIR) && is_option(a, "--cache-dir")) {
            if (!(v = option_value("--cache-dir", argc, argv, &i))) return EXIT_USAGE;
            if (!*v) {
                cli_error("--cache-dir needs a directory");
                return EXIT_USAGE;
            }
            o->cache_dir = v;
        } else {
            cli_error("%s: unknown option '%s' (see fusec %s --help)", cmd, a, cmd);
            return EXIT_USAGE;
        }
    }
    if (bench_only && !o->bench) {
        cli_error("%s: %s needs --bench", cmd, bench_only);
        return EXIT_USAGE;
    }
    if (batch_given && !o->back_to_back) {
        cli_error("%s: --batch needs --back-to-back", cmd);
        return EXIT_USAGE;
    }
    if ((allowed & OPT_NO_FILE) && o->nfiles > 0) {
        cli_error("%s: unexpected argument '%s' (see fusec %s --help)", cmd, o->files[0], cmd);
        return EXIT_USAGE;
    }
    if (!(allowed & OPT_NO_FILE) && o->nfiles == 0) {
        cli_error("%s: no %sfile given (see fusec %s --help)", cmd,
                  strncmp(cmd, "cache", 5) == 0 ? "" : ".fc ", cmd);
        return EXIT_USAGE;
    }
    if ((allowed & (OPT_ARCH | OPT_ARCHS)) && o->narchs == 0) {
        char msg[512];
        if (fcn_check_arch(CLI_DEFAULT_ARCH, msg, sizeof msg) != FC_OK) {
            cli_error("the default architecture %s: %s; give one with --arch", CLI_DEFAULT_ARCH,
                      msg);
            return EXIT_USAGE;
        }
        strcpy(o->archs[0], CLI_DEFAULT_ARCH);
        o->narchs = 1;
    }
    return EXIT_OK;
}

void cli_opts_free(cli_opts *o) {
    free(o->files);
    o->files = NULL;
}

int cli_usage(const char *usage, const cli_opts *o, int rc) {
    if (o->help) {
        fputs(usage, stdout);
        return EXIT_OK;
    }
    return rc;
}

int cli_open_ctx(fc_backend backend, const char *cache_dir, bool fast_math, fc_ctx **ctx) {
    fc_ctx_options opts;
    memset(&opts, 0, sizeof opts);
    opts.backend = backend;
    opts.cache_dir = cache_dir;
    opts.fast_math = fast_math ? 1 : 0;
    fc_status st = fc_ctx_create(ctx, &opts);
    if (st != FC_OK) {
        cli_error("cannot create a context: %s", fc_strerror(st));
        return EXIT_EVAL;
    }
    return EXIT_OK;
}

const char *cli_math_tier(const fc_ctx *ctx) {
    return fc_ctx_fast_math(ctx) ? "fast (--fast-math or FUSEC_FAST_MATH=1: FMA contraction, "
                                   "approximate f32 math, |z|^2 compares)"
                                 : "exact (NumPy's results)";
}

int cli_status_exit(fc_status st) {
    switch (st) {
    case FC_OK: return EXIT_OK;
    case FC_ERR_IO: return EXIT_IO;
    default: return EXIT_PROGRAM;
    }
}

/* ---- programs ----------------------------------------------------------------------------- */

#define TRACE_MARK "# fusec trace"

/* Reads a whole file (NUL-terminated). */
static int read_file(const char *path, char **text, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        cli_error("cannot open %s: %s", path, strerror(errno));
        return EXIT_IO;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (n + 1 >= cap) {
            char *g = realloc(buf, cap * 2);
            if (!g) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = g;
            cap *= 2;
        }
        size_t k = fread(buf + n, 1, cap - n - 1, f);
        n += k;
        if (k == 0) break;
    }
    int err = ferror(f);
    fclose(f);
    if (!buf) {
        cli_error("out of memory reading %s", path);
        return EXIT_IO;
    }
    if (err) {
        free(buf);
        cli_error("cannot read %s", path);
        return EXIT_IO;
    }
    buf[n] = '\0';
    *text = buf;
    *len = n;
    return EXIT_OK;
}

/* Whether [s, e) holds anything but blanks and comments. */
static bool has_statement(const char *s, const char *e) {
    bool in_comment = false;
    for (; s < e; s++) {
        if (*s == '\n') in_comment = false;
        else if (in_comment) continue;
        else if (*s == '#') in_comment = true;
        else if (*s != ' ' && *s != '\t' && *s != '\r' && *s != '\\') return true;
    }
    return false;
}

typedef struct segment {
    size_t start, end; /* byte range in the file */
    int line;          /* 1-based line where it starts */
} segment;

/* Splits text at lines starting with TRACE_MARK. The part before the first mark counts only
 * if it holds a statement. Returns the number of segments (malloc'd into *out), -1 on OOM. */
static int split_programs(const char *text, size_t len, segment **out) {
    int cap = 8, n = 0, line = 1;
    segment *seg = malloc((size_t)cap * sizeof *seg);
    if (!seg) return -1;
    seg[n++] = (segment){0, len, 1};
    for (size_t i = 0; i < len; i++) {
        bool bol = i == 0 || text[i - 1] == '\n';
        if (i > 0 && text[i - 1] == '\n') line++;
        if (!bol || strncmp(text + i, TRACE_MARK, sizeof TRACE_MARK - 1) != 0) continue;
        if (i == 0) continue; /* the first segment already starts here */
        if (n == cap) {
            segment *g = realloc(seg, (size_t)cap * 2 * sizeof *seg);
            if (!g) {
                free(seg);
                return -1;
            }
            seg = g;
            cap *= 2;
        }
        seg[n - 1].end = i;
        seg[n++] = (segment){i, len, line};
    }
    /* A leading part with no statement (a header comment) is not a program. */
    if (n > 1 && !has_statement(text + seg[0].start, text + seg[0].end)) {
        memmove(seg, seg + 1, (size_t)(n - 1) * sizeof *seg);
        n--;
    }
    *out = seg;
    return n;
}

/* Probe values for symbol inference: symbol k of a probe copy of the program is bound to
 * PROBE_BASE + k, so an input extent equal to it is that symbol. No real extent is near 2^52
 * (it would be petabytes). */
#define PROBE_BASE ((int64_t)1 << 52)

/* Binds each symbol no --set gave that a dimension of an --input's program input uses to the
 * file's extent there. The program's dimension declarations are read through a probe copy
 * (parsed from the same text) whose symbols are bound to marker values. A file whose rank
 * differs from its input's is skipped: the command reports that mismatch itself. */
static int infer_symbols(fc_ctx *ctx, const cli_opts *o, fc_program *prog, const char *text,
                         size_t len, const char *file) {
    int nsym = fc_program_num_symbols(prog), nin = fc_program_num_inputs(prog), loaded = 0;
    /* First an --input that names no input: that, not a symbol left unbound, is the error. */
    for (int j = 0; j < o->ninputs; j++) {
        bool found = false;
        for (int i = 0; i < nin && !found; i++)
            found = strcmp(fc_program_input_name(prog, i), o->inputs[j].name) == 0;
        if (found) continue;
        char names[1024] = "";
        size_t n = 0;
        for (int i = 0; i < nin && n < sizeof names; i++)
            n += (size_t)snprintf(names + n, sizeof names - n, "%s%s", i ? ", " : "",
                                  fc_program_input_name(prog, i));
        cli_error("--input %s=%s: %s has no input '%s' (%s%s)", o->inputs[j].name,
                  o->inputs[j].path, file, o->inputs[j].name,
                  nin ? "its inputs: " : "it has no inputs", names);
        return EXIT_USAGE;
    }
    for (int i = 0; i < o->ninputs; i++) loaded += o->inputs[i].loaded;
    if (nsym == 0 || loaded == 0) return EXIT_OK;
    fc_program *probe = NULL;
    if (fc_program_parse(ctx, text, len, file, &probe) != FC_OK) {
        cli_error("%s", fc_errmsg(ctx));
        return EXIT_PROGRAM;
    }
    int64_t *value = malloc((size_t)nsym * sizeof *value);
    const cli_input **from = calloc((size_t)nsym, sizeof *from);
    bool *by_set = calloc((size_t)nsym, sizeof *by_set);
    int rc = EXIT_OK;
    if (!value || !from || !by_set) {
        cli_error("out of memory");
        rc = EXIT_PROGRAM;
    }
    for (int k = 0; !rc && k < nsym; k++) {
        const char *name = fc_program_symbol_name(probe, k);
        int64_t v = PROBE_BASE + k;
        for (int i = 0; i < o->nsets; i++)
            if (strcmp(o->sets[i].name, name) == 0) {
                by_set[k] = true;
                v = o->sets[i].value;
            }
        value[k] = -1;
        if (fc_program_set_symbol(probe, name, v) != FC_OK) {
            cli_error("%s", fc_errmsg(ctx));
            rc = EXIT_PROGRAM;
        }
    }
    for (int i = 0; !rc && i < fc_program_num_inputs(probe); i++) {
        const cli_input *in = NULL;
        for (int j = 0; j < o->ninputs; j++)
            if (o->inputs[j].loaded && strcmp(o->inputs[j].name, fc_program_input_name(probe, i)) == 0)
                in = &o->inputs[j];
        fc_shape sh;
        if (!in || fc_program_input_shape(probe, i, &sh) != FC_OK) continue;
        if (sh.ndim != in->shape.ndim) {
            cli_error("--input %s=%s: the file has %d dimension%s, but input '%s' of %s has %d",
                      in->name, in->path, in->shape.ndim, in->shape.ndim == 1 ? "" : "s",
                      in->name, file, sh.ndim);
            rc = EXIT_USAGE;
            break;
        }
        for (int d = 0; !rc && d < sh.ndim; d++) {
            int64_t k = sh.dim[d] - PROBE_BASE;
            if (k < 0 || k >= nsym || by_set[k]) continue;
            int64_t e = in->shape.dim[d];
            if (!from[k]) {
                value[k] = e;
                from[k] = in;
            } else if (value[k] != e) {
                cli_error("dimension symbol '%s' is %lld from --input %s=%s but %lld from --input "
                          "%s=%s", fc_program_symbol_name(probe, k), (long long)value[k],
                          from[k]->name, from[k]->path, (long long)e, in->name, in->path);
                rc = EXIT_USAGE;
            }
        }
    }
    for (int k = 0; !rc && k < nsym; k++)
        if (from[k] && fc_program_set_symbol(prog, fc_program_symbol_name(prog, k), value[k]) != FC_OK) {
            cli_error("%s", fc_errmsg(ctx));
            rc = EXIT_PROGRAM;
        }
    free(value);
    free(from);
    free(by_set);
    fc_program_destroy(probe);
    return rc;
}

/* Binds the --set symbols the program has, infers others from --input files, and checks
 * every symbol is bound. */
static int bind_symbols(fc_ctx *ctx, cli_opts *o, fc_program *prog, bool strict, const char *text,
                        size_t len, const char *file) {
    for (int i = 0; i < o->nsets; i++) {
        bool known = false;
        for (int s = 0; s < fc_program_num_symbols(prog); s++)
            known |= strcmp(fc_program_symbol_name(prog, s), o->sets[i].name) == 0;
        if (!known && !strict) continue;
        if (fc_program_set_symbol(prog, o->sets[i].name, o->sets[i].value) != FC_OK) {
            cli_error("%s", fc_errmsg(ctx)); /* names the file */
            return EXIT_USAGE;
        }
        o->sets[i].used = true;
    }
    int rc = infer_symbols(ctx, o, prog, text, len, file);
    if (rc) return rc;
    for (int i = 0; i < fc_program_num_inputs(prog); i++) {
        fc_shape shape;
        if (fc_program_input_shape(prog, i, &shape) == FC_ERR_UNBOUND) {
            cli_error("%s; give it with --set NAME=VALUE%s", fc_errmsg(ctx),
                      o->ninputs ? " (or an --input file for an input that uses it)" : "");
            return EXIT_PROGRAM;
        }
    }
    return EXIT_OK;
}

/* Parses, binds and builds one segment, then calls fn inside a scope. */
static int one_program(fc_ctx *ctx, cli_opts *o, const char *file, const char *text,
                       const segment *sg, int index, int count, bool strict, cli_program_fn fn,
                       void *user) {
    /* Blank lines in front keep the parser's line numbers those of the file. */
    size_t pad = (size_t)sg->line - 1, n = sg->end - sg->start;
    char *buf = malloc(pad + n + 1);
    char label[4096];
    if (count > 1) snprintf(label, sizeof label, "%s:%d", file, sg->line);
    else snprintf(label, sizeof label, "%s", file);
    if (!buf) {
        cli_error("out of memory");
        return EXIT_PROGRAM;
    }
    memset(buf, '\n', pad);
    memcpy(buf + pad, text + sg->start, n);
    buf[pad + n] = '\0';
    fc_program *prog = NULL;
    fc_status st = fc_program_parse(ctx, buf, pad + n, file, &prog);
    if (st != FC_OK) {
        free(buf);
        cli_error("%s", fc_errmsg(ctx));
        return cli_status_exit(st);
    }
    int rc = bind_symbols(ctx, o, prog, strict, buf, pad + n, file);
    free(buf);
    fc_scope *scope = rc ? NULL : fc_scope_open(ctx);
    cli_program p = {file, label, index, count, prog, fc_program_num_outputs(prog), NULL};
    if (!rc && !scope) {
        cli_error("out of memory");
        rc = EXIT_PROGRAM;
    }
    if (!rc && !(p.outs = calloc((size_t)p.nout + 1, sizeof *p.outs))) {
        cli_error("out of memory");
        rc = EXIT_PROGRAM;
    }
    if (!rc && !o->no_placeholders && (st = fc_program_build(prog, NULL, p.outs)) != FC_OK) {
        cli_error("%s", fc_errmsg(ctx));
        rc = EXIT_PROGRAM;
    }
    if (!rc) rc = fn(ctx, &p, user);
    free(p.outs);
    fc_scope_close(scope);
    fc_program_destroy(prog);
    return rc;
}

int cli_for_each_program(fc_ctx *ctx, cli_opts *o, const char *file, bool single,
                         bool stop_on_error, cli_program_fn fn, void *user) {
    char *text;
    size_t len;
    int rc = read_file(file, &text, &len);
    if (rc) return rc;
    segment *seg = NULL;
    int n = split_programs(text, len, &seg);
    if (n < 0) {
        free(text);
        cli_error("out of memory");
        return EXIT_PROGRAM;
    }
    if (single && n > 1) {
        cli_error("%s holds %d programs (a trace, docs/TRACE.md); %s reads one (dump, graph, "
                  "explain and warm read them all)", file, n, o->cmd);
        free(seg);
        free(text);
        return EXIT_PROGRAM;
    }
    int first = EXIT_OK;
    for (int i = 0; i < n; i++) {
        int r = one_program(ctx, o, file, text, &seg[i], i, n, single, fn, user);
        if (r && !first) first = r;
        if (r && stop_on_error) break;
    }
    free(seg);
    free(text);
    return first;
}

int cli_check_sets_used(const cli_opts *o) {
    for (int i = 0; i < o->nsets; i++)
        if (!o->sets[i].used) {
            cli_error("--set %s: no program has a dimension symbol '%s'", o->sets[i].name,
                      o->sets[i].name);
            return EXIT_USAGE;
        }
    return EXIT_OK;
}

/* ---- kernels ------------------------------------------------------------------------------ */

int cli_compile(fc_ctx *ctx, const cli_program *p, const fck_options *opt, fck_result **r) {
    fck_compile(ctx, p->outs, p->nout, opt, r);
    if (!*r) {
        cli_error("%s: %s", p->label, fc_errmsg(ctx));
        return EXIT_PROGRAM;
    }
    return (*r)->plan ? EXIT_OK : cli_compile_failed(ctx, p, *r);
}

int cli_compile_failed(fc_ctx *ctx, const cli_program *p, const fck_result *r) {
    switch (r->error_stage) {
    case FCK_PLAN:
        cli_error("%s: cannot plan the program: %s", p->label, fc_errmsg(ctx));
        return EXIT_PROGRAM;
    case FCK_KEY: /* the arch (checked already) or NVRTC's version: the key's own message */
        cli_error("%s", fc_errmsg(ctx));
        return EXIT_USAGE;
    default:
        cli_error("%s: kernel %d: %s", p->label, r->error_kernel, fc_errmsg(ctx));
        return EXIT_PROGRAM;
    }
}

int cli_plan(fc_ctx *ctx, const cli_program *p, fck_result **r) {
    fck_options co = fck_options_default();
    co.stage = FCK_PLAN;
    int rc = cli_compile(ctx, p, &co, r);
    if (rc) {
        fck_result_free(*r);
        *r = NULL;
    }
    return rc;
}

int cli_producer(const fcp_plan *plan, const fc_array *node) {
    for (int i = 0; i < plan->nkernel; i++)
        for (int q = 0; q < plan->kernels[i].nout; q++)
            if (plan->kernels[i].outs[q] == node) return i;
    return -1;
}

const char *cli_boundary_reason(const fcp_plan *plan, const fc_array *node) {
    for (int i = 0; i < plan->nboundary; i++)
        if (plan->boundaries[i].node == node) return plan->boundaries[i].reason;
    for (int i = 0; i < plan->nout; i++)
        if (plan->outs[i] == node)
            return "it is asked for as an output, so it is stored anyway, and the consumer "
                   "loads it rather than computing it again";
    if (fcg_ops[node->op].kind == FCG_KIND_LIB)
        return "a library call (matmul, FFT, sort) runs as a kernel of its own and writes a buffer";
    return "no reason recorded by the fusion pass";
}
