/*
 * tools/cli.h - what the fusec commands (tools/cmd_*.c, tools/fusec.c) share: exit codes,
 * messages, option parsing, loading .fc programs and trace files, compiling them through the
 * compile driver (compile/driver.h).
 */
#ifndef FUSEC_CLI_H
#define FUSEC_CLI_H

#include <fusec.h>

#include "codegen.h"
#include "driver.h"
#include "kcompile.h"
#include "nvrtc_compile.h"
#include "plan.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* Exit codes (README.md, docs/fusec.1). When several things fail, the first one's code. */
enum {
    EXIT_OK = 0,
    EXIT_USAGE = 1,   /* unknown command or option, bad value, missing file; an --input that
                         names no input of the program or does not match its dtype or shape */
    EXIT_PROGRAM = 2, /* malformed .fc, unbound symbol, an op that fails to build, a plan or
                         codegen failure */
    EXIT_EVAL = 3,    /* evaluation error (run) */
    EXIT_IO = 4,      /* a file or the cache directory cannot be read or written (an --input
                         .npy file missing or malformed, an output that cannot be saved) */
    EXIT_COMPILE = 5, /* a kernel failed to compile, or missed the cache under
                         FUSEC_REQUIRE_CACHED=1 */
    EXIT_BAD_CACHE = 6 /* cache verify found bad entries (that remain), or an import file is
                          corrupt */
};

#define CLI_MAX_SETS 64
#define CLI_MAX_INPUTS 64
#define CLI_MAX_ARCHS 16
#define CLI_DEFAULT_ARCH "sm_90"

void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void cli_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Options a command accepts (a bit set passed to cli_parse). */
enum {
    OPT_SET = 1u << 0,        /* --set NAME=VALUE (repeatable) */
    OPT_SEED = 1u << 1,       /* --seed S */
    OPT_BACKEND = 1u << 2,    /* --backend host|auto|cuda */
    OPT_ARCH = 1u << 3,       /* --arch sm_XX (one) */
    OPT_ARCHS = 1u << 4,      /* --arch sm_XX,sm_YY (a list; repeatable) */
    OPT_JOBS = 1u << 5,       /* -j N, --jobs N */
    OPT_DOT = 1u << 6,        /* --dot */
    OPT_CACHE_DIR = 1u << 7,  /* --cache-dir DIR */
    OPT_DELETE_BAD = 1u << 8, /* --delete-bad */
    OPT_QUIET = 1u << 9,      /* -q, --quiet */
    OPT_FILES = 1u << 10,     /* several FILE arguments (else exactly one) */
    OPT_NO_FILE = 1u << 11,   /* no FILE argument at all */
    OPT_NO_PRELUDE = 1u << 12, /* --no-prelude */
    OPT_INPUT = 1u << 13,      /* --input NAME=FILE.npy (repeatable) */
    OPT_OUTPUT_DIR = 1u << 14, /* --output-dir DIR */
    OPT_BENCH = 1u << 15,      /* --bench, --runs N, --warmup N, --json, --floor-bytes B,
                                  --time-build, --back-to-back, --batch N */
    OPT_KEY = 1u << 16,        /* --key FILE (cache export / import: sign, check) */
    OPT_FAST_MATH = 1u << 17   /* --fast-math: the context's fast-math tier (FUSEC_FAST_MATH=1
                                  does the same) */
};

typedef struct cli_set {
    char name[256];
    int64_t value;
    bool used; /* some program had this symbol */
} cli_set;

/* One --input NAME=FILE. The command loads the file and fills in `shape` (loaded = true)
 * before the programs are read, so that dimension symbols can be inferred from it. */
typedef struct cli_input {
    char name[256];
    const char *path;
    bool loaded;
    fc_shape shape;
} cli_input;

typedef struct cli_opts {
    const char *cmd;   /* for messages: "dump", "cache verify", ... */
    const char **files;
    int nfiles;
    cli_set sets[CLI_MAX_SETS];
    int nsets;
    uint64_t seed;
    fc_backend backend;
    char archs[CLI_MAX_ARCHS][FCN_ARCH_MAX];
    int narchs;        /* 0 until given; cli_parse sets the default for OPT_ARCH(S) */
    int jobs;          /* 0: one per online CPU */
    bool dot, delete_bad, quiet, no_prelude, help;
    bool fast_math;    /* --fast-math */
    const char *cache_dir;
    const char *key_file;  /* --key FILE */
    cli_input inputs[CLI_MAX_INPUTS];
    int ninputs;
    const char *output_dir;
    bool bench, json;
    bool no_placeholders;  /* set by commands that build programs themselves (run): p->outs
                              stays empty, so no placeholder graph shares nodes with theirs */
    int runs, warmup;     /* --bench: timed runs (default 15), warm-up runs (default 3) */
    uint64_t floor_bytes; /* --floor-bytes; 0: inputs + outputs */
    bool time_build;      /* --time-build: the timed span starts before the outputs are built */
    bool back_to_back;    /* --back-to-back: also time batches of evaluations issued back to
                             back, over the wall clock, synchronised once a batch */
    int batch;            /* --batch: evaluations a batch; 0 (default): about 50 ms of work,
                             from the per-call time, at most 100 */
} cli_opts;

/* Parses a command's arguments (argv[0] is the first argument after the command name).
 * Checks every --arch with fcn_check_arch. Returns EXIT_OK or EXIT_USAGE (message printed).
 * o->help is set for -h / --help: the caller prints its usage and returns EXIT_OK. Frees
 * nothing on success: call cli_opts_free. */
int cli_parse(const char *cmd, int argc, char **argv, unsigned allowed, cli_opts *o);
void cli_opts_free(cli_opts *o);

/* Prints usage to stdout (help asked for) or stderr (after an error) and returns rc. */
int cli_usage(const char *usage, const cli_opts *o, int rc);

/* A context for a command: the host backend unless backend says otherwise, the cache
 * directory of --cache-dir, the fast-math tier with --fast-math (else as FUSEC_FAST_MATH
 * says). Returns EXIT_OK or EXIT_EVAL (message printed). */
int cli_open_ctx(fc_backend backend, const char *cache_dir, bool fast_math, fc_ctx **ctx);

/* The line dump, explain and run print about the context's math tier (fc_ctx_fast_math). */
const char *cli_math_tier(const fc_ctx *ctx);

/* The status -> exit code of a failed load or build. */
int cli_status_exit(fc_status st);

/* ---- programs ----------------------------------------------------------------------------- */

/* One program of a file, built with placeholder inputs. */
typedef struct cli_program {
    const char *file;
    const char *label;  /* "FILE", or "FILE:LINE" for one program of a trace */
    int index;          /* 0-based position in its file */
    int count;          /* programs in its file */
    fc_program *prog;
    int nout;
    fc_array **outs;    /* the program's outputs (owned by the open scope) */
} cli_program;

/* Called once per program; returns an exit code (EXIT_OK to go on). */
typedef int (*cli_program_fn)(fc_ctx *ctx, const cli_program *p, void *user);

/* Reads FILE, splits it into programs (a line starting with "# fusec trace" starts a new one:
 * docs/TRACE.md), parses each, binds o->sets, infers the symbols still unbound from the
 * shapes of o->inputs that are loaded (a symbol used by a dimension of an input given a file
 * takes that file's extent), builds it with placeholder inputs inside a scope
 * of its own and calls fn. A program that fails to load is reported and skipped; the walk
 * goes on unless stop_on_error. With single, a file holding several programs is an error.
 * Returns the first failure's exit code (fn's included), else EXIT_OK. */
int cli_for_each_program(fc_ctx *ctx, cli_opts *o, const char *file, bool single,
                         bool stop_on_error, cli_program_fn fn, void *user);
/* After every file: a --set that no program knew is a usage error. */
int cli_check_sets_used(const cli_opts *o);

/* ---- kernels ------------------------------------------------------------------------------ */

/* Compiles a program's outputs through the compile driver (fck_compile) as far as opt says.
 * *r is set whenever a result was made, also on failure (free it with fck_result_free).
 * Returns EXIT_OK when the plan was made, even if a kernel failed later (r->error: the caller
 * shows what was done, then cli_compile_failed); else the planning failure's exit code, with
 * the message printed. */
int cli_compile(fc_ctx *ctx, const cli_program *p, const fck_options *opt, fck_result **r);

/* Prints r's failure (r->error != FC_OK) from the context's message, as "FILE: cannot plan
 * the program: ...", "FILE: kernel I: ..." (codegen) or the key's message, and returns its
 * exit code: EXIT_PROGRAM, or EXIT_USAGE for a key (a bad arch). */
int cli_compile_failed(fc_ctx *ctx, const cli_program *p, const fck_result *r);

/* A program's plan only (cli_compile to FCK_PLAN): r->plan. Returns EXIT_OK, or
 * EXIT_PROGRAM with the message printed and *r NULL. */
int cli_plan(fc_ctx *ctx, const cli_program *p, fck_result **r);

/* Why the output of kernel `producer` (node) is stored rather than fused into its consumer:
 * the plan's recorded reason, or the implicit ones (an output asked for, a library call). */
const char *cli_boundary_reason(const fcp_plan *plan, const fc_array *node);

/* The index of the kernel that stores node, or -1. */
int cli_producer(const fcp_plan *plan, const fc_array *node);

double cli_now(void);

/* ---- commands ----------------------------------------------------------------------------- */

int cmd_print(int argc, char **argv);
int cmd_hash(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_graph(int argc, char **argv);
int cmd_explain(int argc, char **argv);
int cmd_warm(int argc, char **argv);
int cmd_cache(int argc, char **argv);

#endif /* FUSEC_CLI_H */
