/*
 * test_cli_run.c - `fusec run` with .npy inputs and outputs, and --bench, run as a separate
 * process.
 *
 * Inputs are written with fc_npy_save from random non-zero data; the outputs fusec writes are
 * compared with values computed here through the C API (fc_program_build on the same arrays),
 * and the output files are poisoned (garbage written there) before each run. Bad inputs must
 * give their documented exit code and a message that says what is wrong. --bench --json is
 * parsed by a small JSON reader here and every key checked. The GPU case skips, visibly,
 * without a device.
 */
#include <criterion/criterion.h>
#include <fusec.h>

#include "cli_util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* ---- temporary directory, files ----------------------------------------------------------- */

static cli_tmp tmp;

static void make_tmp(void) { cli_tmp_make(&tmp, "fusec_cli_run"); }

static void cleanup(void) { cli_tmp_remove(&tmp); }

/* A path under the test's directory, in a static ring of 64 buffers (enough for any one
 * test). */
static const char *tmp_path(const char *name) {
    static char ring[64][512];
    static int next;
    char *p = ring[next++ % 64];
    int n = snprintf(p, 512, "%s/%s", tmp.root, name);
    cr_assert(n > 0 && n < 512);
    return p;
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "cannot create %s", path);
    fputs(text, f);
    fclose(f);
}

/* ---- running fusec ------------------------------------------------------------------------ */

/* run("run", "x.fc", "--bench", NULL): fusec with the cache in the test's directory. */
#define run(...) cli_runl(&tmp, tmp.cache, NULL, __VA_ARGS__)

/* ---- data --------------------------------------------------------------------------------- */

static uint64_t rng = 0x5eed;
static double rand_unit(void) {
    uint64_t z = (rng += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1p-53;
}

static fc_ctx *host_ctx(void) {
    fc_ctx *ctx = NULL;
    fc_ctx_options opts = {.backend = FC_BACKEND_HOST};
    cr_assert_eq(fc_ctx_create(&ctx, &opts), FC_OK);
    return ctx;
}

/* Random non-zero values in [0.5, 2) with random signs, saved as path. */
static fc_array *save_random(fc_ctx *ctx, fc_dtype dt, fc_shape sh, const char *path) {
    int64_t n = 1;
    for (int d = 0; d < sh.ndim; d++) n *= sh.dim[d];
    fc_array *a;
    if (dt == FC_F32) {
        float *v = malloc((size_t)n * sizeof *v + 1);
        for (int64_t i = 0; i < n; i++)
            v[i] = (float)((0.5 + 1.5 * rand_unit()) * (rand_unit() < 0.5 ? -1 : 1));
        a = fc_from_host(ctx, dt, sh, v);
        free(v);
    } else if (dt == FC_F64) {
        double *v = malloc((size_t)n * sizeof *v + 1);
        for (int64_t i = 0; i < n; i++) v[i] = (0.5 + 1.5 * rand_unit()) * (rand_unit() < 0.5 ? -1 : 1);
        a = fc_from_host(ctx, dt, sh, v);
        free(v);
    } else {
        cr_assert_eq(dt, FC_I32);
        int32_t *v = malloc((size_t)n * sizeof *v + 1);
        for (int64_t i = 0; i < n; i++) v[i] = 1 + (int32_t)(rand_unit() * 20);
        a = fc_from_host(ctx, dt, sh, v);
        free(v);
    }
    cr_assert_eq(fc_npy_save(a, path), FC_OK, "%s", fc_errmsg(ctx));
    return a;
}

/* ---- --input / --output-dir --------------------------------------------------------------- */

static const char prog_text[] =
    "# two float inputs sharing n; an integer input; outputs of three dtypes\n"
    "x = input f32 [n, 5]\n"
    "w = input f64 [5]\n"
    "k = input i32 [n]\n"
    "y = x * w + 1.5\n"
    "s = sum(x * x, axis=1) * k\n"
    "b = x > 0\n"
    "out y, s, b\n";

static void expect_same(fc_array *got, fc_array *want, const char *what) {
    cr_assert_eq(fc_array_status(got), FC_OK, "%s: %s", what, fc_array_errmsg(got));
    cr_assert_eq(fc_array_dtype(got), fc_array_dtype(want), "%s: dtype %s, expected %s", what,
                 fc_dtype_name(fc_array_dtype(got)), fc_dtype_name(fc_array_dtype(want)));
    fc_shape a = fc_array_shape(got), b = fc_array_shape(want);
    cr_assert_eq(a.ndim, b.ndim, "%s: ndim", what);
    for (int d = 0; d < a.ndim; d++) cr_assert_eq(a.dim[d], b.dim[d], "%s: extent %d", what, d);
    size_t n = (size_t)fc_array_size(got) * fc_dtype_size(fc_array_dtype(got));
    unsigned char *x = malloc(n + 1), *y = malloc(n + 1);
    memset(x, 0xA5, n + 1);
    memset(y, 0x5A, n + 1);
    cr_assert_eq(fc_to_host(got, x, n), FC_OK);
    cr_assert_eq(fc_to_host(want, y, n), FC_OK);
    cr_assert(memcmp(x, y, n) == 0, "%s: values differ from the C API's", what);
    free(x);
    free(y);
}

/* Each output outdir/NAME.npy fusec wrote is want[i]'s values; drops want's references. */
static void expect_outputs(fc_ctx *ctx, const char *outdir, const char *const *names,
                           fc_array **want, int n) {
    for (int i = 0; i < n; i++) {
        char p[700];
        snprintf(p, sizeof p, "%s/%s.npy", outdir, names[i]);
        fc_array *got = fc_npy_load(ctx, p);
        expect_same(got, want[i], names[i]);
        fc_release(got);
        fc_release(want[i]);
    }
}

Test(cli_run, input_and_output_dir_match_the_c_api, .init = make_tmp, .fini = cleanup) {
    const char *prog_path = tmp_path("p.fc");
    write_text(prog_path, prog_text);
    fc_ctx *ctx = host_ctx();
    fc_array *ins[3];
    ins[0] = save_random(ctx, FC_F32, FC_SHAPE(7, 5), tmp_path("x.npy"));
    ins[1] = save_random(ctx, FC_F64, FC_SHAPE(5), tmp_path("w.npy"));
    ins[2] = save_random(ctx, FC_I32, FC_SHAPE(7), tmp_path("k.npy"));

    /* Poison: the output directory exists and holds garbage under the outputs' names. */
    const char *outdir = tmp_path("out");
    cr_assert_eq(mkdir(outdir, 0755), 0);
    const char *names[] = {"y", "s", "b"};
    for (int i = 0; i < 3; i++) {
        char p[600];
        snprintf(p, sizeof p, "%s/%s.npy", outdir, names[i]);
        write_text(p, "poison");
    }

    char xin[600], win[600], kin[600];
    snprintf(xin, sizeof xin, "x=%s", tmp_path("x.npy"));
    snprintf(win, sizeof win, "w=%s", tmp_path("w.npy"));
    snprintf(kin, sizeof kin, "k=%s", tmp_path("k.npy"));
    /* n is not --set: it comes from x.npy (and k.npy agrees). */
    cli_result r = run("run", prog_path, "--input", xin, "--input", win, "--input", kin,
                       "--output-dir", outdir, "--backend", "host", NULL);
    cr_assert_eq(r.code, 0, "exit %d: %s", r.code, r.err);
    for (int i = 0; i < 3; i++) {
        char line[700];
        snprintf(line, sizeof line, "wrote %s/%s.npy\n", outdir, names[i]);
        cr_assert(strstr(r.out, line), "no '%s' in:\n%s", line, r.out);
    }

    /* The same program through the C API, on the same arrays. */
    fc_program *prog = NULL;
    cr_assert_eq(fc_program_parse(ctx, prog_text, sizeof prog_text - 1, "p.fc", &prog), FC_OK);
    cr_assert_eq(fc_program_set_symbol(prog, "n", 7), FC_OK);
    fc_array *want[3] = {NULL};
    cr_assert_eq(fc_program_build(prog, ins, want), FC_OK, "%s", fc_errmsg(ctx));
    expect_outputs(ctx, outdir, names, want, 3);
    /* A directory that does not exist yet is created, parents included. */
    const char *deep = tmp_path("a/b/c");
    cli_result r2 = run("run", prog_path, "--input", xin, "--input", win, "--input", kin,
                        "--output-dir", deep, "--backend", "host", NULL);
    cr_assert_eq(r2.code, 0, "exit %d: %s", r2.code, r2.err);
    char p[600];
    snprintf(p, sizeof p, "%s/b.npy", deep);
    fc_array *b = fc_npy_load(ctx, p);
    cr_assert_eq(fc_array_dtype(b), FC_BOOL);
    fc_release(b);

    /* Inputs not given are random, as before; a --set still binds n. */
    cli_result r3 = run("run", prog_path, "--input", win, "--set", "n=3", "--output-dir", deep,
                        "--backend", "host", NULL);
    cr_assert_eq(r3.code, 0, "exit %d: %s", r3.code, r3.err);
    fc_array *y = fc_npy_load(ctx, p);
    cr_assert_eq(fc_array_shape(y).dim[0], 3);
    fc_release(y);

    for (int i = 0; i < 3; i++) fc_release(ins[i]);
    fc_program_destroy(prog);
    fc_ctx_destroy(ctx);
    cli_result_free(&r);
    cli_result_free(&r2);
    cli_result_free(&r3);
}

typedef struct bad_run {
    const char *what;
    const char *args[8];
    int code;
    const char *message;
} bad_run;

Test(cli_run, bad_inputs_give_clear_errors, .init = make_tmp, .fini = cleanup) {
    const char *prog_path = tmp_path("p.fc");
    write_text(prog_path, prog_text);
    fc_ctx *ctx = host_ctx();
    fc_release(save_random(ctx, FC_F32, FC_SHAPE(7, 5), tmp_path("x.npy")));
    fc_release(save_random(ctx, FC_F64, FC_SHAPE(7, 5), tmp_path("x64.npy")));
    fc_release(save_random(ctx, FC_F32, FC_SHAPE(7, 4), tmp_path("x74.npy")));
    fc_release(save_random(ctx, FC_F32, FC_SHAPE(35), tmp_path("x1d.npy")));
    fc_release(save_random(ctx, FC_I32, FC_SHAPE(6), tmp_path("k6.npy")));
    write_text(tmp_path("junk.npy"), "not numpy");
    write_text(tmp_path("file"), "a file where a directory should be");
    fc_ctx_destroy(ctx);

    char x[600], x64[600], x74[600], x1d[600], k6[600], junk[600], missing[600], z[600];
    snprintf(x, sizeof x, "x=%s", tmp_path("x.npy"));
    snprintf(x64, sizeof x64, "x=%s", tmp_path("x64.npy"));
    snprintf(x74, sizeof x74, "x=%s", tmp_path("x74.npy"));
    snprintf(x1d, sizeof x1d, "x=%s", tmp_path("x1d.npy"));
    snprintf(k6, sizeof k6, "k=%s", tmp_path("k6.npy"));
    snprintf(junk, sizeof junk, "x=%s", tmp_path("junk.npy"));
    snprintf(missing, sizeof missing, "x=%s", tmp_path("missing.npy"));
    snprintf(z, sizeof z, "z=%s", tmp_path("x.npy"));
    char outdir[600];
    snprintf(outdir, sizeof outdir, "%s/sub", tmp_path("file"));

    const bad_run cases[] = {
        {"wrong dtype", {"--input", x64}, 1, "the file holds f64 [7, 5], but input 'x' of"},
        {"wrong shape", {"--input", x74}, 1, "the file's shape is [7, 4], but input 'x'"},
        {"wrong shape against --set", {"--input", x, "--set", "n=3"}, 1,
         "the file's shape is [7, 5], but input 'x'"},
        {"wrong rank", {"--input", x1d}, 1, "the file has 1 dimension, but input 'x'"},
        {"symbols disagree", {"--input", x, "--input", k6}, 1,
         "dimension symbol 'n' is 7 from --input x="},
        {"unknown name", {"--input", z, "--set", "n=7"}, 1, "has no input 'z' (its inputs: x, w, k)"},
        {"missing file", {"--input", missing}, 4, "No such file"},
        {"not a .npy file", {"--input", junk}, 4, "is not a .npy file"},
        {"no '='", {"--input", "x"}, 1, "--input expects NAME=FILE.npy"},
        {"given twice", {"--input", x, "--input", x}, 1, "--input x is given twice"},
        {"output dir under a file", {"--set", "n=2", "--output-dir", outdir}, 4, "cannot create"},
        {"--json without --bench", {"--set", "n=2", "--json"}, 1, "--json needs --bench"},
        {"--runs 0", {"--set", "n=2", "--bench", "--runs", "0"}, 1, "--runs expects a number"},
        {"--floor-bytes 0", {"--set", "n=2", "--bench", "--floor-bytes", "0"}, 1,
         "--floor-bytes expects a number"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const bad_run *b = &cases[c];
        const char *a[8] = {NULL};
        memcpy(a, b->args, sizeof a);
        cli_result r = run("run", prog_path, "--backend", "host", a[0], a[1], a[2], a[3], a[4],
                           a[5], a[6], a[7], NULL);
        cr_assert_eq(r.code, b->code, "%s: exit %d, expected %d; stderr: %s", b->what, r.code,
                     b->code, r.err);
        cr_assert(strstr(r.err, b->message), "%s: stderr lacks '%s':\n%s", b->what, b->message,
                  r.err);
        cr_assert(strncmp(r.err, "fusec: ", 7) == 0, "%s: %s", b->what, r.err);
        cli_result_free(&r);
    }
}

/* ---- a small JSON reader ------------------------------------------------------------------ */

typedef enum jkind { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ } jkind;

typedef struct jval jval;
struct jval {
    jkind kind;
    double num;
    char str[256];
    int n;            /* items of an array or object */
    char keys[32][32];
    jval *items[32];
};

typedef struct jparser {
    const char *p;
    bool ok;
} jparser;

static void jws(jparser *j) {
    while (*j->p == ' ' || *j->p == '\n' || *j->p == '\t' || *j->p == '\r') j->p++;
}

static jval *jparse(jparser *j);

static bool jstring(jparser *j, char *out, size_t cap) {
    if (*j->p != '"') return false;
    j->p++;
    size_t n = 0;
    while (*j->p && *j->p != '"') {
        char c = *j->p++;
        if (c == '\\') {
            c = *j->p++;
            if (c == 'u') {
                for (int i = 0; i < 4; i++)
                    if (!*j->p++) return false;
                c = '?';
            } else if (c != '"' && c != '\\' && c != '/') {
                c = c == 'n' ? '\n' : c == 't' ? '\t' : '?';
            }
        } else if ((unsigned char)c < 0x20) {
            return false;
        }
        if (n + 1 < cap) out[n++] = c;
    }
    out[n] = '\0';
    if (*j->p != '"') return false;
    j->p++;
    return true;
}

static jval *jparse(jparser *j) {
    jws(j);
    jval *v = calloc(1, sizeof *v);
    cr_assert_not_null(v);
    if (*j->p == '{' || *j->p == '[') {
        bool obj = *j->p == '{';
        v->kind = obj ? J_OBJ : J_ARR;
        j->p++;
        jws(j);
        if (*j->p == (obj ? '}' : ']')) {
            j->p++;
            return v;
        }
        for (;;) {
            jws(j);
            if (v->n >= 32) j->ok = false;
            if (!j->ok) return v;
            if (obj) {
                if (!jstring(j, v->keys[v->n], sizeof v->keys[0])) j->ok = false;
                jws(j);
                if (*j->p++ != ':') j->ok = false;
                if (!j->ok) return v;
            }
            v->items[v->n++] = jparse(j);
            jws(j);
            if (*j->p == ',') {
                j->p++;
                continue;
            }
            if (*j->p++ != (obj ? '}' : ']')) j->ok = false;
            return v;
        }
    }
    if (*j->p == '"') {
        v->kind = J_STR;
        if (!jstring(j, v->str, sizeof v->str)) j->ok = false;
        return v;
    }
    if (strncmp(j->p, "null", 4) == 0) {
        v->kind = J_NULL;
        j->p += 4;
        return v;
    }
    if (strncmp(j->p, "true", 4) == 0 || strncmp(j->p, "false", 5) == 0) {
        v->kind = J_BOOL;
        v->num = *j->p == 't';
        j->p += *j->p == 't' ? 4 : 5;
        return v;
    }
    char *end;
    v->kind = J_NUM;
    v->num = strtod(j->p, &end);
    if (end == j->p || !(*j->p == '-' || (*j->p >= '0' && *j->p <= '9'))) j->ok = false;
    j->p = end;
    return v;
}

static void jfree(jval *v) {
    if (!v) return;
    for (int i = 0; i < v->n; i++) jfree(v->items[i]);
    free(v);
}

static jval *jget(const jval *obj, const char *key) {
    for (int i = 0; i < obj->n; i++)
        if (strcmp(obj->keys[i], key) == 0) return obj->items[i];
    return NULL;
}

/* Parses text as exactly one JSON object (whitespace around it allowed). */
static jval *parse_one_object(const char *text) {
    jparser j = {text, true};
    jval *v = jparse(&j);
    jws(&j);
    cr_assert(j.ok && *j.p == '\0' && v->kind == J_OBJ, "not exactly one JSON object:\n%s", text);
    return v;
}

static const char *const bench_keys[] = {
    "program", "backend", "device", "arch", "kernels", "runs", "warmup", "median_ms", "min_ms",
    "max_ms", "bytes", "gbps", "copy_gbps", "floor_ms", "floor_pct", "peak_bytes",
    "library_bytes", "io_bytes", "fast_math", "outputs", "timing",
};

static double num(const jval *obj, const char *key) {
    const jval *v = jget(obj, key);
    cr_assert(v && v->kind == J_NUM, "'%s' is not a number", key);
    return v->num;
}

/* The checks every --bench --json shares; gpu: the measured-only-on-GPU keys are numbers. */
static void check_bench_json(const jval *o, bool gpu, double io_bytes) {
    for (size_t k = 0; k < sizeof bench_keys / sizeof bench_keys[0]; k++)
        cr_assert_not_null(jget(o, bench_keys[k]), "key '%s' is missing", bench_keys[k]);
    /* "b2b" only with --back-to-back (check_b2b_json) */
    cr_assert_eq(o->n, (int)(sizeof bench_keys / sizeof bench_keys[0]) + (jget(o, "b2b") != NULL),
                 "%d keys", o->n);
    cr_assert_str_eq(jget(o, "backend")->str, gpu ? "cuda" : "host");
    cr_assert_str_eq(jget(o, "timing")->str,
                     gpu ? "cuda events per call" : "host wall clock per call");
    cr_assert_eq(jget(o, "program")->kind, J_STR);
    cr_assert_eq(jget(o, "device")->kind, J_STR);
    /* the exact tier unless asked (FUSEC_FAST_MATH is not set in these tests) */
    cr_assert(jget(o, "fast_math")->kind == J_BOOL && jget(o, "fast_math")->num == 0);
    cr_assert_eq(jget(o, "arch")->kind, gpu ? J_STR : J_NULL);
    const char *positive[] = {"kernels", "runs", "median_ms", "min_ms", "max_ms", "bytes", "gbps",
                              "io_bytes"};
    for (size_t k = 0; k < sizeof positive / sizeof positive[0]; k++)
        cr_assert_gt(num(o, positive[k]), 0, "'%s' is not positive", positive[k]);
    cr_assert_geq(num(o, "warmup"), 0);
    cr_assert(num(o, "min_ms") <= num(o, "median_ms") && num(o, "median_ms") <= num(o, "max_ms"));
    cr_assert_eq(num(o, "io_bytes"), io_bytes);
    double gbps = num(o, "bytes") / (num(o, "median_ms") * 1e-3) / 1e9;
    cr_assert_float_eq(num(o, "gbps"), gbps, 1e-6 * gbps, "gbps %g, bytes / median give %g",
                       num(o, "gbps"), gbps);
    const char *gpu_only[] = {"copy_gbps", "floor_ms", "floor_pct", "peak_bytes"};
    for (size_t k = 0; k < 4; k++) {
        if (gpu) cr_assert_gt(num(o, gpu_only[k]), 0, "'%s' is not positive", gpu_only[k]);
        else cr_assert_eq(jget(o, gpu_only[k])->kind, J_NULL, "'%s' is not null", gpu_only[k]);
    }
    /* the library's workspaces: a number on the GPU (0 without library calls), else null */
    if (gpu) cr_assert_geq(num(o, "library_bytes"), 0);
    else cr_assert_eq(jget(o, "library_bytes")->kind, J_NULL, "'library_bytes' is not null");
    if (gpu) {
        double floor_ms = num(o, "bytes") / (num(o, "copy_gbps") * 1e9) * 1e3;
        cr_assert_float_eq(num(o, "floor_ms"), floor_ms, 1e-6 * floor_ms);
        cr_assert_float_eq(num(o, "floor_pct"), floor_ms / num(o, "median_ms") * 100,
                           1e-6 * num(o, "floor_pct"));
    }
}

/* The "b2b" object of --back-to-back: batches batches of batch evaluations (batch 0: any
 * size the default rule gives, 1..100); figures per evaluation, GB/s from the same bytes. */
static void check_b2b_json(const jval *o, bool gpu, int batches, int batch) {
    const jval *b = jget(o, "b2b");
    cr_assert(b && b->kind == J_OBJ, "no \"b2b\" object");
    cr_assert_eq(b->n, 8, "%d keys in b2b", b->n);
    cr_assert_str_eq(jget(b, "timing")->str, "back-to-back wall clock");
    cr_assert_eq(num(b, "batches"), batches);
    if (batch) cr_assert_eq(num(b, "batch"), batch);
    cr_assert(num(b, "batch") >= 1 && num(b, "batch") <= 100, "batch %g", num(b, "batch"));
    cr_assert_gt(num(b, "min_ms"), 0);
    cr_assert(num(b, "min_ms") <= num(b, "median_ms") && num(b, "median_ms") <= num(b, "max_ms"));
    double gbps = num(o, "bytes") / (num(b, "median_ms") * 1e-3) / 1e9;
    cr_assert_float_eq(num(b, "gbps"), gbps, 1e-6 * gbps);
    if (gpu) cr_assert_float_eq(num(b, "floor_pct"), num(o, "floor_ms") / num(b, "median_ms") *
                                100, 1e-6 * num(b, "floor_pct"));
    else cr_assert_eq(jget(b, "floor_pct")->kind, J_NULL, "b2b floor_pct is not null");
}

/* ---- --bench ------------------------------------------------------------------------------ */

static const char bench_prog[] =
    "x = input f32 [n]\n"
    "w = input f64 [n]\n"
    "y = tanh(sin(x) + 0.1 * x)\n"
    "z = sum(w * w)\n"
    "out y, z\n";

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

Test(cli_run, bench_json_on_the_host_backend, .init = make_tmp, .fini = cleanup) {
    const char *prog_path = tmp_path("b.fc");
    write_text(prog_path, bench_prog);
    enum { N = 1 << 17 };
    fc_ctx *ctx = host_ctx();
    fc_array *x = save_random(ctx, FC_F32, FC_SHAPE(N), tmp_path("x.npy"));
    char xin[600];
    snprintf(xin, sizeof xin, "x=%s", tmp_path("x.npy"));
    /* n comes from x.npy; w is random. */
    cli_result r = run("run", prog_path, "--input", xin, "--backend", "host", "--bench", "--json",
                       "--runs", "5", "--warmup", "1", NULL);
    cr_assert_eq(r.code, 0, "exit %d: %s", r.code, r.err);
    jval *o = parse_one_object(r.out);
    double io = (double)N * 4 + (double)N * 8 + (double)N * 4 + 8;
    check_bench_json(o, false, io);
    cr_assert_eq(num(o, "bytes"), io);
    cr_assert_eq(num(o, "runs"), 5);
    cr_assert_eq(num(o, "warmup"), 1);
    cr_assert_str_eq(jget(o, "program")->str, prog_path);
    cr_assert_str_eq(jget(o, "device")->str, "host");
    const jval *outs = jget(o, "outputs");
    cr_assert(outs && outs->kind == J_ARR && outs->n == 2);
    cr_assert_str_eq(jget(outs->items[0], "name")->str, "y");
    cr_assert_str_eq(jget(outs->items[0], "dtype")->str, "f32");
    const jval *sh = jget(outs->items[0], "shape");
    cr_assert(sh && sh->kind == J_ARR && sh->n == 1 && sh->items[0]->num == N);
    cr_assert_str_eq(jget(outs->items[1], "name")->str, "z");
    cr_assert_str_eq(jget(outs->items[1], "dtype")->str, "f64");
    cr_assert_eq(jget(outs->items[1], "shape")->n, 0);

    /* Each timed run really computes: not much faster than one evaluation timed here (a value
     * cached across runs would make it ~1000x faster). */
    fc_program *prog = NULL;
    cr_assert_eq(fc_program_parse(ctx, bench_prog, sizeof bench_prog - 1, "b.fc", &prog), FC_OK);
    cr_assert_eq(fc_program_set_symbol(prog, "n", N), FC_OK);
    fc_array *w = fc_random_uniform(ctx, FC_F64, FC_SHAPE(N), 7);
    cr_assert_eq(fc_eval(ctx, &w, 1), FC_OK);
    double best = INFINITY;
    for (int rep = 0; rep < 3; rep++) {
        fc_array *outs2[2] = {NULL};
        fc_array *ins[2] = {x, w};
        cr_assert_eq(fc_program_build(prog, ins, outs2), FC_OK);
        double t0 = now_ms();
        cr_assert_eq(fc_eval(ctx, outs2, 2), FC_OK);
        double t = now_ms() - t0;
        best = t < best ? t : best;
        fc_release(outs2[0]);
        fc_release(outs2[1]);
    }
    cr_assert_gt(num(o, "min_ms"), 0.2 * best, "timed runs took %g ms, one evaluation %g ms",
                 num(o, "min_ms"), best);
    jfree(o);
    cli_result_free(&r);

    /* --floor-bytes replaces the bytes (not io_bytes). */
    cli_result r2 = run("run", prog_path, "--set", "n=4096", "--backend", "host", "--bench",
                        "--json", "--runs", "3", "--warmup", "0", "--floor-bytes", "1000000",
                        NULL);
    cr_assert_eq(r2.code, 0, "exit %d: %s", r2.code, r2.err);
    o = parse_one_object(r2.out);
    check_bench_json(o, false, 4096.0 * 4 + 4096.0 * 8 + 4096.0 * 4 + 8);
    cr_assert_eq(num(o, "bytes"), 1000000);
    jfree(o);
    cli_result_free(&r2);

    fc_release(x);
    fc_release(w);
    fc_program_destroy(prog);
    fc_ctx_destroy(ctx);
}

Test(cli_run, bench_text_summary_on_the_host_backend, .init = make_tmp, .fini = cleanup) {
    const char *prog_path = tmp_path("b.fc");
    write_text(prog_path, bench_prog);
    cli_result r = run("run", prog_path, "--set", "n=10000", "--backend", "host", "--bench",
                       "--runs", "4", "--warmup", "1", NULL);
    cr_assert_eq(r.code, 0, "exit %d: %s", r.code, r.err);
    const char *expect[] = {"y: f32 [10000]", "eval: ", "bench: ", "kernels per eval",
                            "median ", " ms",
                            "(4 runs after 1 warm-up, wall clock around each call)",
                            "bytes that must move", "160.0 kB", "GB/s",
                            "not measured on the host backend"};
    for (size_t i = 0; i < sizeof expect / sizeof expect[0]; i++)
        cr_assert(strstr(r.out, expect[i]), "no '%s' in:\n%s", expect[i], r.out);
    cr_assert_null(strstr(r.out, "back-to-back"), "back-to-back without asking:\n%s", r.out);
    cli_result_free(&r);

    /* --back-to-back adds its line: per evaluation, batches of --batch. */
    r = run("run", prog_path, "--set", "n=10000", "--backend", "host", "--bench", "--runs", "3",
            "--warmup", "1", "--back-to-back", "--batch", "4", NULL);
    cr_assert_eq(r.code, 0, "exit %d: %s", r.code, r.err);
    const char *line = strstr(r.out, "\n  back-to-back ");
    cr_assert(line, "no back-to-back line in:\n%s", r.out);
    double med, lo, hi;
    cr_assert_eq(sscanf(line, "\n  back-to-back median %lf ms min %lf ms max %lf ms", &med, &lo,
                        &hi), 3, "%s", line);
    cr_assert(lo > 0 && lo <= med && med <= hi, "%s", line);
    cr_assert(strstr(line, "(per evaluation: 3 batches of 4 back to back, wall clock, one wait a "
                           "batch)"), "%s", line);
    cli_result_free(&r);
}

/* --back-to-back on the host backend: the "b2b" object beside the per-call figures, each
 * evaluation of a batch really computing; usage errors of its options. */
Test(cli_run, bench_back_to_back_on_the_host_backend, .init = make_tmp, .fini = cleanup) {
    const char *prog_path = tmp_path("b.fc");
    write_text(prog_path, bench_prog);
    enum { N = 1 << 17 };
    cli_result r = run("run", prog_path, "--set", "n=131072", "--backend", "host", "--bench",
                       "--json", "--runs", "3", "--warmup", "1", "--back-to-back", "--batch", "5",
                       NULL);
    cr_assert_eq(r.code, 0, "exit %d: %s", r.code, r.err);
    jval *o = parse_one_object(r.out);
    check_bench_json(o, false, (double)N * 16 + 8);
    check_b2b_json(o, false, 3, 5);
    /* A batch's evaluations each compute (the host backend waits for each): an evaluation of
     * a batch takes about what one timed call does, not a thousandth of it. */
    cr_assert_gt(num(jget(o, "b2b"), "median_ms"), 0.2 * num(o, "min_ms"), "b2b %g, call %g",
                 num(jget(o, "b2b"), "median_ms"), num(o, "min_ms"));
    jfree(o);
    cli_result_free(&r);

    /* The default batch: about 50 ms of work, 1..100 evaluations. */
    r = run("run", prog_path, "--set", "n=4096", "--backend", "host", "--bench", "--json",
            "--runs", "2", "--warmup", "0", "--back-to-back", NULL);
    cr_assert_eq(r.code, 0, "exit %d: %s", r.code, r.err);
    o = parse_one_object(r.out);
    check_b2b_json(o, false, 2, 0);
    jfree(o);
    cli_result_free(&r);

    struct {
        const char *args[4], *msg;
    } bad[] = {
        {{"--back-to-back", NULL}, "--back-to-back needs --bench"},
        {{"--bench", "--batch", "4", NULL}, "--batch needs --back-to-back"},
        {{"--bench", "--back-to-back", "--batch", "x"}, "--batch"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *a[4] = {NULL};
        for (int k = 0; k < 4; k++) a[k] = bad[i].args[k];
        r = run("run", prog_path, "--set", "n=8", "--backend", "host", a[0], a[1], a[2], a[3],
                NULL);
        cr_assert_eq(r.code, 1, "case %zu: exit %d: %s", i, r.code, r.err);
        cr_assert(strstr(r.err, bad[i].msg), "case %zu: no '%s' in: %s", i, bad[i].msg, r.err);
        cli_result_free(&r);
    }
}

/* On a GPU: the copy bandwidth, the floor and the peak memory are measured. */
Test(cli_run, bench_json_on_the_gpu, .init = make_tmp, .fini = cleanup) {
    int devices = 0;
    if (fc_device_count(&devices) != FC_OK || devices == 0) {
        cleanup(); /* a skipped test's .fini does not run */
        cr_skip("no CUDA device here: --bench on the GPU is not tested");
        return;
    }
    const char *prog_path = tmp_path("b.fc");
    write_text(prog_path, bench_prog);
    const char *outdir = tmp_path("out");
    cli_result r = run("run", prog_path, "--set", "n=4194304", "--backend", "cuda", "--bench",
                       "--json", "--output-dir", outdir, "--back-to-back", NULL);
    cr_assert_eq(r.code, 0, "exit %d: %s", r.code, r.err);
    jval *o = parse_one_object(r.out);
    double io = 4194304.0 * (4 + 8 + 4) + 8;
    check_bench_json(o, true, io);
    check_b2b_json(o, true, 15, 0);
    /* Fused intermediates are never stored (each would be 16 MB here): the peak is the inputs
     * and outputs, a little scratch, and the pool's rounding of 4 blocks. */
    cr_assert_leq(num(o, "peak_bytes"), io + (1 << 20) + 4 * (2 << 20),
                  "peak %g for %g bytes of I/O", num(o, "peak_bytes"), io);
    jfree(o);
    char p[600];
    snprintf(p, sizeof p, "%s/y.npy", outdir);
    fc_ctx *ctx = host_ctx();
    fc_array *y = fc_npy_load(ctx, p);
    cr_assert_eq(fc_array_status(y), FC_OK, "%s", fc_array_errmsg(y));
    cr_assert_eq(fc_array_size(y), 4194304);
    fc_release(y);
    fc_ctx_destroy(ctx);
    cli_result_free(&r);
}

/* ---- a sparse matrix from .npy arrays (bench/fc/i12_spmv.fc's form, small) ----------------- */

Test(cli_run, sparse_program_matches_the_c_api, .init = make_tmp, .fini = cleanup) {
    static const char text[] = "indptr = input i32 [4]\nindices = input i32 [5]\n"
                               "data = input f32 [5]\nx = input f32 [4]\nd = input f32 [3, 4]\n"
                               "a = sparse.csr_matrix((data, indices, indptr), shape=(3, 4))\n"
                               "y = a @ x\nz = (a + sparse.csr_matrix(d)).T.todense()\n"
                               "out y, z\n";
    const char *prog_path = tmp_path("s.fc");
    write_text(prog_path, text);
    fc_ctx *ctx = host_ctx();
    int32_t ip[4] = {0, 2, 2, 5}, ix[5] = {0, 3, 1, 2, 3};
    fc_array *ins[5];
    ins[0] = fc_from_host(ctx, FC_I32, FC_SHAPE(4), ip);
    ins[1] = fc_from_host(ctx, FC_I32, FC_SHAPE(5), ix);
    cr_assert_eq(fc_npy_save(ins[0], tmp_path("indptr.npy")), FC_OK);
    cr_assert_eq(fc_npy_save(ins[1], tmp_path("indices.npy")), FC_OK);
    ins[2] = save_random(ctx, FC_F32, FC_SHAPE(5), tmp_path("data.npy"));
    ins[3] = save_random(ctx, FC_F32, FC_SHAPE(4), tmp_path("x.npy"));
    ins[4] = save_random(ctx, FC_F32, FC_SHAPE(3, 4), tmp_path("d.npy"));
    const char *names[] = {"indptr", "indices", "data", "x", "d"};
    char args[5][600];
    for (int i = 0; i < 5; i++)
        snprintf(args[i], sizeof args[i], "%s=%s/%s.npy", names[i], tmp.root, names[i]);
    const char *outdir = tmp_path("out");
    cli_result r = run("run", prog_path, "--input", args[0], "--input", args[1], "--input",
                       args[2], "--input", args[3], "--input", args[4], "--output-dir", outdir,
                       "--backend", "host", NULL);
    cr_assert_eq(r.code, 0, "exit %d: %s", r.code, r.err);
    fc_program *prog = NULL;
    cr_assert_eq(fc_program_parse(ctx, text, sizeof text - 1, "s.fc", &prog), FC_OK);
    fc_array *want[2] = {NULL};
    cr_assert_eq(fc_program_build(prog, ins, want), FC_OK, "%s", fc_errmsg(ctx));
    const char *outs[] = {"y", "z"};
    expect_outputs(ctx, outdir, outs, want, 2);
    /* out of a sparse value: a program error (exit 2) that names the fix */
    write_text(prog_path, "d = input f32 [3, 4]\na = sparse.csr_matrix(d)\nout a\n");
    cli_result r2 = run("run", prog_path, "--backend", "host", NULL);
    cr_assert_eq(r2.code, 2, "exit %d: %s", r2.code, r2.err);
    cr_assert(strstr(r2.err, "output 'a' is a sparse matrix") != NULL, "%s", r2.err);
    for (int i = 0; i < 5; i++) fc_release(ins[i]);
    fc_program_destroy(prog);
    fc_ctx_destroy(ctx);
    cli_result_free(&r);
    cli_result_free(&r2);
}
