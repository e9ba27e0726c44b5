/*
 * tests/test_npy.c - fc_npy_load and fc_npy_save.
 *
 * Fixtures (tests/data/npy, written by NumPy through tests/gen_npy.py): every dtype in C and
 * Fortran order, both byte orders, 0-d, empty, 8-d, format 2.0 and 3.0, each with its values
 * as raw C-order little-endian bytes; and malformed or unsupported files with the status and
 * a part of the message each must give. Then round trips save -> load of random data of every
 * dtype and shape kind, NumPy's exact bytes for what fc_npy_save writes, the atomic write, and
 * allocation failures injected at every point of a load and a save (nothing may leak).
 */
#include "counting_alloc.h"
#include <criterion/criterion.h>

#include "fusec.h"
#include "graph.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NPY_DIR FUSEC_TEST_DATA_DIR "/npy"

/* ---- helpers ---------------------------------------------------------------------------- */

/* buf = a + b, asserting it fits. */
static char *join(char *buf, size_t cap, const char *a, const char *b) {
    int n = snprintf(buf, cap, "%s%s", a, b);
    cr_assert(n >= 0 && (size_t)n < cap, "path too long");
    return buf;
}

static fc_ctx *host_ctx(void) {
    fc_ctx *ctx = NULL;
    fc_ctx_options opts = {.backend = FC_BACKEND_HOST};
    cr_assert_eq(fc_ctx_create(&ctx, &opts), FC_OK);
    return ctx;
}

/* Reads a whole file; *len its size. NULL if it cannot be opened. */
static unsigned char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    unsigned char *buf = malloc(cap);
    cr_assert(buf);
    size_t k;
    while ((k = fread(buf + n, 1, cap - n, f)) > 0) {
        n += k;
        if (n == cap) {
            buf = realloc(buf, cap *= 2);
            cr_assert(buf);
        }
    }
    fclose(f);
    *len = n;
    return buf;
}

static char *make_temp_dir(void) {
    char *dir = strdup("/tmp/fusec-test-npy-XXXXXX");
    cr_assert(dir && mkdtemp(dir), "mkdtemp: %s", strerror(errno));
    return dir;
}

/* Removes the directory and the plain files in it. */
static void remove_dir(char *dir) {
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        char path[4096];
        while ((e = readdir(d)))
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
                snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
                unlink(path);
            }
        closedir(d);
    }
    rmdir(dir);
    free(dir);
}

/* Entries of a directory other than . and .. */
static int count_entries(const char *dir) {
    DIR *d = opendir(dir);
    cr_assert(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n;
}

static fc_shape parse_shape_field(const char *s) {
    fc_shape sh = {0, {0}};
    if (strcmp(s, "-") == 0) return sh;
    for (const char *p = s; *p;) {
        cr_assert(sh.ndim < FC_MAX_DIMS);
        char *end;
        sh.dim[sh.ndim++] = strtoll(p, &end, 10);
        p = *end == ',' ? end + 1 : end;
    }
    return sh;
}

/* The value of an array as bytes, read into a poisoned buffer of exactly its size. */
static unsigned char *array_bytes(fc_array *a, size_t *len) {
    size_t n = (size_t)fc_array_size(a) * fc_dtype_size(fc_array_dtype(a));
    unsigned char *buf = malloc(n + 1);
    cr_assert(buf);
    memset(buf, 0xA5, n + 1);
    fc_status st = fc_to_host(a, buf, n);
    cr_assert_eq(st, FC_OK, "fc_to_host: %s", fc_errmsg(fc_array_ctx(a)));
    *len = n;
    return buf;
}

static uint64_t rng_state = 0x1234567;
static uint64_t rnd(void) {
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* n random non-zero values of dtype (bools random), as raw bytes. */
static void *random_data(fc_dtype dt, int64_t n) {
    size_t es = fc_dtype_size(dt);
    unsigned char *buf = malloc((size_t)n * es + 1);
    cr_assert(buf);
    for (int64_t i = 0; i < n; i++) {
        unsigned char *e = buf + (size_t)i * es;
        double v = (double)(rnd() >> 11) * 0x1p-53 * 200.0 - 100.0;
        if (v == 0) v = 0.5;
        switch (dt) {
        case FC_BOOL: *e = (unsigned char)(rnd() & 1); break;
        case FC_F16: { uint16_t h = fcg_f32_to_f16((float)v); memcpy(e, &h, 2); break; }
        case FC_BF16: { uint16_t h = fcg_f32_to_bf16((float)v); memcpy(e, &h, 2); break; }
        case FC_F32: { float f = (float)v; memcpy(e, &f, 4); break; }
        case FC_F64: memcpy(e, &v, 8); break;
        case FC_C64: { float c[2] = {(float)v, (float)(v * 0.37 + 1)}; memcpy(e, c, 8); break; }
        case FC_C128: { double c[2] = {v, v * 0.37 + 1}; memcpy(e, c, 16); break; }
        default: {
            uint64_t r = rnd();
            memcpy(e, &r, es);
            bool zero = true;
            for (size_t b = 0; b < es; b++) zero &= e[b] == 0;
            if (zero) e[0] = 1;
        }
        }
    }
    return buf;
}

/* ---- NumPy's files ---------------------------------------------------------------------- */

typedef struct valid_case {
    char file[256], ref[256], dtype[16], shape[128];
    int npsave;
} valid_case;

static int read_valid(valid_case *cases, int cap) {
    FILE *f = fopen(NPY_DIR "/valid.txt", "r");
    cr_assert(f, "cannot open " NPY_DIR "/valid.txt");
    char line[1024];
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#' || line[0] == '\n') continue;
        cr_assert(n < cap);
        valid_case *c = &cases[n];
        cr_assert_eq(sscanf(line, "%255s %255s %15s %127s %d", c->file, c->ref, c->dtype,
                            c->shape, &c->npsave), 5, "bad line: %s", line);
        n++;
    }
    fclose(f);
    return n;
}

Test(npy, loads_every_numpy_fixture) {
    static valid_case cases[512];
    int n = read_valid(cases, 512);
    cr_assert_geq(n, 150, "only %d fixtures", n);
    fc_ctx *ctx = host_ctx();
    int fortran = 0, big = 0, scalars = 0, empties = 0;
    for (int i = 0; i < n; i++) {
        const valid_case *c = &cases[i];
        char path[1024], ref[1024];
        join(path, sizeof path, NPY_DIR "/", c->file);
        join(ref, sizeof ref, NPY_DIR "/", c->ref);
        fc_scope *s = fc_scope_open(ctx);
        fc_array *a = fc_npy_load(ctx, path);
        cr_assert_eq(fc_array_status(a), FC_OK, "%s: %s", c->file, fc_array_errmsg(a));
        fc_dtype want_dt;
        cr_assert_eq(fc_dtype_from_name(c->dtype, &want_dt), FC_OK);
        cr_assert_eq(fc_array_dtype(a), want_dt, "%s: dtype %s", c->file,
                     fc_dtype_name(fc_array_dtype(a)));
        fc_shape want = parse_shape_field(c->shape), got = fc_array_shape(a);
        cr_assert_eq(got.ndim, want.ndim, "%s: ndim %d, expected %d", c->file, got.ndim, want.ndim);
        for (int d = 0; d < want.ndim; d++)
            cr_assert_eq(got.dim[d], want.dim[d], "%s: extent %d", c->file, d);
        size_t len, ref_len;
        unsigned char *bytes = array_bytes(a, &len);
        unsigned char *expect = slurp(ref, &ref_len);
        cr_assert(expect, "cannot read %s", ref);
        cr_assert_eq(len, ref_len, "%s: %zu bytes, reference %zu", c->file, len, ref_len);
        for (size_t b = 0; b < len; b++)
            cr_assert_eq(bytes[b], expect[b], "%s: byte %zu is %u, expected %u", c->file, b,
                         bytes[b], expect[b]);
        fortran += strstr(c->file, "_F_") != NULL;
        big += strstr(c->file, "_be") != NULL;
        scalars += want.ndim == 0;
        empties += fc_array_size(a) == 0;
        free(bytes);
        free(expect);
        fc_scope_close(s);
    }
    cr_assert(fortran >= 20 && big >= 30 && scalars >= 14 && empties >= 28,
              "coverage: %d Fortran, %d big-endian, %d 0-d, %d empty", fortran, big, scalars,
              empties);
    fc_ctx_destroy(ctx);
}

/* What np.save wrote for an array, fc_npy_save writes again byte for byte. */
Test(npy, save_writes_numpys_bytes) {
    static valid_case cases[512];
    int n = read_valid(cases, 512), checked = 0;
    fc_ctx *ctx = host_ctx();
    char *dir = make_temp_dir();
    for (int i = 0; i < n; i++) {
        const valid_case *c = &cases[i];
        if (!c->npsave) continue;
        char path[1024], out[1024];
        join(path, sizeof path, NPY_DIR "/", c->file);
        join(out, sizeof out, dir, "/out.npy");
        fc_array *a = fc_npy_load(ctx, path);
        cr_assert_eq(fc_npy_save(a, out), FC_OK, "%s: %s", c->file, fc_errmsg(ctx));
        size_t la, lb;
        unsigned char *orig = slurp(path, &la), *mine = slurp(out, &lb);
        cr_assert(orig && mine);
        cr_assert_eq(la, lb, "%s: %zu bytes written, NumPy wrote %zu", c->file, lb, la);
        cr_assert(memcmp(orig, mine, la) == 0, "%s: bytes differ from NumPy's", c->file);
        free(orig);
        free(mine);
        fc_release(a);
        checked++;
    }
    cr_assert_geq(checked, 70);
    cr_assert_eq(count_entries(dir), 1, "temporary files left behind");
    remove_dir(dir);
    fc_ctx_destroy(ctx);
}

typedef struct bad_case {
    char file[256], status[16], text[256];
} bad_case;

static fc_status status_named(const char *s) {
    if (!strcmp(s, "PARSE")) return FC_ERR_PARSE;
    if (!strcmp(s, "DTYPE")) return FC_ERR_DTYPE;
    if (!strcmp(s, "SHAPE")) return FC_ERR_SHAPE;
    if (!strcmp(s, "IO")) return FC_ERR_IO;
    cr_assert_fail("unknown status %s", s);
    return FC_OK;
}

static int read_bad(bad_case *cases, int cap) {
    FILE *f = fopen(NPY_DIR "/bad.txt", "r");
    cr_assert(f);
    char line[1024];
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#' || line[0] == '\n') continue;
        cr_assert(n < cap);
        bad_case *c = &cases[n];
        int used = 0;
        cr_assert_eq(sscanf(line, "%255s %15s %n", c->file, c->status, &used), 2);
        snprintf(c->text, sizeof c->text, "%s", line + used);
        c->text[strcspn(c->text, "\n")] = '\0';
        n++;
    }
    fclose(f);
    return n;
}

Test(npy, malformed_files_give_clear_errors) {
    static bad_case cases[128];
    int n = read_bad(cases, 128);
    cr_assert_geq(n, 20);
    fc_ctx *ctx = host_ctx();
    for (int i = 0; i < n; i++) {
        const bad_case *c = &cases[i];
        char path[1024];
        join(path, sizeof path, NPY_DIR "/", c->file);
        fc_clear_error(ctx);
        fc_array *a = fc_npy_load(ctx, path);
        fc_status want = status_named(c->status);
        cr_assert_eq(fc_array_status(a), want, "%s: status %s (%s), expected %s", c->file,
                     fc_strerror(fc_array_status(a)), fc_array_errmsg(a), c->status);
        const char *msg = fc_array_errmsg(a);
        cr_assert(strstr(msg, path), "%s: the message does not name the file: %s", c->file, msg);
        cr_assert(strstr(msg, c->text), "%s: the message lacks '%s': %s", c->file, c->text, msg);
        cr_assert_str_eq(fc_errmsg(ctx), msg);
        /* A poisoned load poisons what is built from it, with the same message. */
        fc_array *b = fc_add(a, fc_f64(ctx, 1.0));
        cr_assert_eq(fc_array_status(b), want);
        fc_release(b);
        fc_release(a);
    }
    fc_ctx_destroy(ctx);
}

Test(npy, missing_file_directory_and_null_arguments) {
    fc_ctx *ctx = host_ctx();
    fc_array *a = fc_npy_load(ctx, NPY_DIR "/no/such/file.npy");
    cr_assert_eq(fc_array_status(a), FC_ERR_IO);
    cr_assert(strstr(fc_array_errmsg(a), "no/such/file.npy") &&
              strstr(fc_array_errmsg(a), "No such file"), "%s", fc_array_errmsg(a));
    fc_release(a);
    a = fc_npy_load(ctx, NPY_DIR);
    cr_assert_eq(fc_array_status(a), FC_ERR_IO, "%s", fc_array_errmsg(a));
    cr_assert(strstr(fc_array_errmsg(a), "directory"), "%s", fc_array_errmsg(a));
    fc_release(a);
    a = fc_npy_load(ctx, NULL);
    cr_assert_eq(fc_array_status(a), FC_ERR_NULL);
    fc_release(a);
    cr_assert_null(fc_npy_load(NULL, "x.npy"));
    cr_assert_eq(fc_npy_save(NULL, "x.npy"), FC_ERR_NULL);
    fc_array *x = fc_ones(ctx, FC_F32, FC_SHAPE(3));
    cr_assert_eq(fc_npy_save(x, NULL), FC_ERR_NULL);
    fc_release(x);
    fc_ctx_destroy(ctx);
}

/* ---- round trips ------------------------------------------------------------------------ */

static const fc_shape round_trip_shapes[] = {
    {0, {0}},                          /* 0-d */
    {1, {0}},                          /* empty */
    {3, {3, 0, 2}},                    /* empty in the middle */
    {1, {1}},
    {1, {1000}},
    {2, {7, 13}},
    {3, {2, 3, 5}},
    {8, {2, 1, 3, 2, 1, 2, 2, 3}},     /* FC_MAX_DIMS */
    {1, {1 << 21}},                    /* several of fc_npy_save's chunks for wide dtypes */
};

Test(npy, round_trip_every_dtype_and_shape) {
    fc_ctx *ctx = host_ctx();
    char *dir = make_temp_dir();
    char path[4096];
    join(path, sizeof path, dir, "/a.npy");
    int trips = 0;
    for (int t = 0; t < FC_DTYPE_COUNT; t++) {
        fc_dtype dt = (fc_dtype)t;
        for (size_t k = 0; k < sizeof round_trip_shapes / sizeof round_trip_shapes[0]; k++) {
            fc_shape sh = round_trip_shapes[k];
            if (sh.dim[0] == (1 << 21) && fc_dtype_size(dt) < 8 && dt != FC_BF16) continue;
            fc_scope *s = fc_scope_open(ctx);
            int64_t n = 1;
            for (int d = 0; d < sh.ndim; d++) n *= sh.dim[d];
            void *data = random_data(dt, n);
            fc_array *a = fc_from_host(ctx, dt, sh, data);
            cr_assert_eq(fc_npy_save(a, path), FC_OK, "%s: %s", fc_dtype_name(dt), fc_errmsg(ctx));
            fc_array *b = fc_npy_load(ctx, path);
            cr_assert_eq(fc_array_status(b), FC_OK, "%s: %s", fc_dtype_name(dt),
                         fc_array_errmsg(b));
            fc_dtype want_dt = dt == FC_BF16 ? FC_F32 : dt;
            cr_assert_eq(fc_array_dtype(b), want_dt, "%s loaded as %s", fc_dtype_name(dt),
                         fc_dtype_name(fc_array_dtype(b)));
            fc_shape got = fc_array_shape(b);
            cr_assert_eq(got.ndim, sh.ndim);
            for (int d = 0; d < sh.ndim; d++) cr_assert_eq(got.dim[d], sh.dim[d]);
            size_t len;
            unsigned char *bytes = array_bytes(b, &len);
            if (dt == FC_BF16) {
                /* Saved as f32, exactly the bf16 value. */
                for (int64_t i = 0; i < n; i++) {
                    uint16_t h;
                    float f;
                    memcpy(&h, (unsigned char *)data + 2 * i, 2);
                    memcpy(&f, bytes + 4 * i, 4);
                    cr_assert_eq(f, fcg_bf16_to_f32(h), "bf16 element %lld", (long long)i);
                }
            } else {
                cr_assert_eq(len, (size_t)n * fc_dtype_size(dt));
                cr_assert(len == 0 || memcmp(bytes, data, len) == 0, "%s %d-d: values differ",
                          fc_dtype_name(dt), sh.ndim);
            }
            free(bytes);
            free(data);
            fc_scope_close(s);
            trips++;
        }
    }
    cr_assert_geq(trips, 15 * 8);
    cr_assert_eq(count_entries(dir), 1, "temporary files left behind");
    remove_dir(dir);
    fc_ctx_destroy(ctx);
}

/* fc_npy_save evaluates a lazy expression; a loaded array takes part in ops like any other. */
Test(npy, save_evaluates_and_loaded_arrays_compute) {
    fc_ctx *ctx = host_ctx();
    char *dir = make_temp_dir();
    char path[4096];
    join(path, sizeof path, dir, "/y.npy");
    fc_scope *s = fc_scope_open(ctx);
    fc_array *x = fc_arange(ctx, FC_F64, 1, 13, 1);
    fc_array *y = fc_reshape(fc_add(fc_mul(x, fc_f64(ctx, 2.5)), fc_f64(ctx, 1)), FC_SHAPE(3, 4));
    cr_assert_eq(fc_npy_save(y, path), FC_OK, "%s", fc_errmsg(ctx));
    fc_array *z = fc_npy_load(ctx, path);
    fc_array *t = fc_sum(fc_transpose(z), FC_AXES(1), false); /* row sums of y */
    double got[4] = {-1, -1, -1, -1};
    cr_assert_eq(fc_read(t, got, 0, 4), FC_OK, "%s", fc_errmsg(ctx));
    for (int i = 0; i < 4; i++) {
        double want = 0;
        for (int j = 0; j < 3; j++) want += (double)(j * 4 + i + 1) * 2.5 + 1;
        cr_assert_float_eq(got[i], want, 1e-12, "column %d", i);
    }
    fc_scope_close(s);
    remove_dir(dir);
    fc_ctx_destroy(ctx);
}

Test(npy, save_is_atomic_and_fails_cleanly) {
    fc_ctx *ctx = host_ctx();
    char *dir = make_temp_dir();
    char path[4096], bad_path[4096];
    join(path, sizeof path, dir, "/a.npy");
    join(bad_path, sizeof bad_path, dir, "/no/such/dir/a.npy");
    fc_scope *s = fc_scope_open(ctx);
    fc_array *a = fc_full(ctx, FC_I32, FC_SHAPE(4), 7);
    fc_array *b = fc_full(ctx, FC_I32, FC_SHAPE(6), 9);

    /* A directory that does not exist: FC_ERR_IO naming the path, nothing created. */
    cr_assert_eq(fc_npy_save(a, bad_path), FC_ERR_IO);
    cr_assert(strstr(fc_errmsg(ctx), "no/such/dir/a.npy"), "%s", fc_errmsg(ctx));
    cr_assert_eq(count_entries(dir), 0);

    /* Saving over a file replaces it whole. */
    cr_assert_eq(fc_npy_save(a, path), FC_OK);
    cr_assert_eq(fc_npy_save(b, path), FC_OK);
    fc_array *c = fc_npy_load(ctx, path);
    cr_assert_eq(fc_array_size(c), 6);
    int32_t v[6] = {0};
    cr_assert_eq(fc_read(c, v, 0, 6), FC_OK);
    for (int i = 0; i < 6; i++) cr_assert_eq(v[i], 9);
    cr_assert_eq(count_entries(dir), 1);

    /* A poisoned array and a failing evaluation write nothing and leave the old file. */
    fc_array *p = fc_add(a, b); /* shapes [4] and [6] do not broadcast */
    cr_assert_eq(fc_npy_save(p, path), FC_ERR_SHAPE);
    fc_array *neg = fc_pow(fc_full(ctx, FC_I32, FC_SHAPE(2), 2), fc_full(ctx, FC_I32, FC_SHAPE(2), -1));
    cr_assert_eq(fc_npy_save(neg, path), FC_ERR_VALUE, "%s", fc_errmsg(ctx));
    cr_assert_eq(count_entries(dir), 1, "a failed save left a file");
    fc_array *d = fc_npy_load(ctx, path);
    cr_assert_eq(fc_array_size(d), 6);

    /* Saving onto a directory fails at the rename, and the temporary file goes. */
    char sub[4096];
    join(sub, sizeof sub, dir, "/sub");
    cr_assert_eq(mkdir(sub, 0755), 0);
    char inner[4096];
    join(inner, sizeof inner, sub, "/keep");
    FILE *f = fopen(inner, "w");
    cr_assert(f);
    fclose(f);
    cr_assert_eq(fc_npy_save(a, sub), FC_ERR_IO);
    cr_assert(strstr(fc_errmsg(ctx), "rename"), "%s", fc_errmsg(ctx));
    cr_assert_eq(count_entries(dir), 2, "the temporary file was left behind");
    unlink(inner);
    rmdir(sub);
    fc_scope_close(s);
    remove_dir(dir);
    fc_ctx_destroy(ctx);
}

/* The file's mode is what a plain create gives (0666 less the umask), as np.save's. */
Test(npy, saved_file_mode_follows_umask) {
    fc_ctx *ctx = host_ctx();
    char *dir = make_temp_dir();
    char path[4096];
    join(path, sizeof path, dir, "/m.npy");
    mode_t old = umask(022);
    fc_array *a = fc_ones(ctx, FC_U8, FC_SHAPE(3));
    cr_assert_eq(fc_npy_save(a, path), FC_OK);
    umask(old);
    struct stat sb;
    cr_assert_eq(stat(path, &sb), 0);
    cr_assert_eq(sb.st_mode & 0777, 0644, "mode %o", (unsigned)(sb.st_mode & 0777));
    fc_release(a);
    remove_dir(dir);
    fc_ctx_destroy(ctx);
}

/* ---- allocation failures ---------------------------------------------------------------- */

/* One run: loads a Fortran-order big-endian file, a malformed one and one of an unsupported
 * dtype, saves an array and loads it back. Each step must end in its own status or
 * FC_ERR_NOMEM (only after an injected failure); values read must be right. Returns the
 * number of steps that ran to their expected end. */
static int npy_workload(counting_alloc *ca, const char *dir, char *problem, size_t cap) {
    fc_allocator hooks = {ca_malloc, NULL, ca_free, ca};
    fc_ctx_options opts = {.backend = FC_BACKEND_HOST, .allocator = &hooks};
    fc_ctx *ctx = NULL;
    if (fc_ctx_create(&ctx, &opts) != FC_OK) return 0;
    int done = 0;
#define EXPECT(st, want, what)                                                                   \
    do {                                                                                         \
        fc_status st_ = (st);                                                                    \
        if (st_ == (want)) done++;                                                               \
        else if (!(st_ == FC_ERR_NOMEM && ca->injected) && !problem[0])                          \
            snprintf(problem, cap, "%s: %s (%s)", what, fc_strerror(st_), fc_errmsg(ctx));       \
    } while (0)
    fc_array *a = fc_npy_load(ctx, NPY_DIR "/valid/f32_8d_F_be.npy");
    EXPECT(fc_array_status(a), FC_OK, "load Fortran big-endian");
    if (fc_array_status(a) == FC_OK) {
        float v[4] = {0};
        fc_status st = fc_read(a, v, 0, 4);
        EXPECT(st, FC_OK, "read");
        size_t len;
        unsigned char *ref = slurp(NPY_DIR "/ref/f32_8d.bin", &len);
        if (st == FC_OK && memcmp(ref, v, sizeof v) != 0 && !problem[0])
            snprintf(problem, cap, "loaded values differ");
        free(ref);
    }
    fc_release(a);
    fc_array *b = fc_npy_load(ctx, NPY_DIR "/bad/shape_paren_int.npy");
    EXPECT(fc_array_status(b), FC_ERR_PARSE, "load malformed");
    fc_release(b);
    fc_array *c = fc_npy_load(ctx, NPY_DIR "/bad/dtype_structured.npy");
    EXPECT(fc_array_status(c), FC_ERR_DTYPE, "load structured");
    fc_release(c);
    char path[4096];
    join(path, sizeof path, dir, "/w.npy");
    fc_array *d = fc_mul(fc_arange(ctx, FC_BF16, 1, 9, 1), fc_f64(ctx, 0.5));
    EXPECT(fc_npy_save(d, path), FC_OK, "save bf16 expression");
    fc_release(d);
    fc_array *e = fc_npy_load(ctx, path);
    fc_status est = fc_array_status(e);
    /* The file is there only if the save succeeded in this run. */
    if (est != FC_ERR_IO) EXPECT(est, FC_OK, "load saved");
    if (est == FC_OK) {
        float v[8] = {0};
        if (fc_read(e, v, 0, 8) == FC_OK)
            for (int i = 0; i < 8; i++)
                if (v[i] != (float)(i + 1) * 0.5f && !problem[0])
                    snprintf(problem, cap, "saved element %d is %g", i, v[i]);
    }
    fc_release(e);
    unlink(path);
#undef EXPECT
    fc_ctx_destroy(ctx);
    return done;
}

static void fail_each_allocation(bool fail_after) {
    char *dir = make_temp_dir();
    long n;
    for (n = 1; n < 100000; n++) {
        counting_alloc ca = {.fail_at = n, .fail_after = fail_after};
        char problem[512] = "";
        int done = npy_workload(&ca, dir, problem, sizeof problem);
        cr_assert(problem[0] == '\0', "fail_at %ld%s: %s", n, fail_after ? "+" : "", problem);
        cr_assert_eq(ca.live, 0, "fail_at %ld%s: %ld allocations live after fc_ctx_destroy", n,
                     fail_after ? "+" : "", ca.live);
        cr_assert_eq(ca.live_bytes, 0);
        cr_assert_eq(ca.size_mismatches, 0, "fail_at %ld: frees with the wrong size", n);
        cr_assert_eq(count_entries(dir), 0, "fail_at %ld: a file was left behind", n);
        if (!ca.injected) {
            cr_assert_eq(done, 6, "the full workload finished only %d steps", done);
            break;
        }
    }
    cr_assert_gt(n, 20, "the workload made only %ld allocations", n);
    remove_dir(dir);
}

Test(npy, nth_allocation_fails) { fail_each_allocation(false); }

Test(npy, every_allocation_from_nth_fails) { fail_each_allocation(true); }
