/*
 * tests/test_fft.c - fc_fft / fc_ifft on the host reference backend.
 *
 *   - against NumPy 2: tests/data/fft_numpy.txt (tests/gen_fft.py, whose docstring gives the
 *     format and the tolerances): lengths 1 to 1031 (powers of two, primes, composites), both
 *     directions, every input dtype (the result dtype must be NumPy's), axes of 2-D to 4-D
 *     arrays, empty arrays, and the errors NumPy raises;
 *   - against a direct DFT in long double at lengths NumPy's table does not reach, so the
 *     Bluestein path is checked on its own;
 *   - the round trip ifft(fft(x)) == x, linearity of the axis choice (fft along axis 0 is the
 *     transpose of fft along axis 1, bit for bit), the .fc spelling (parse, print, parse gives
 *     the same hash), and the plan: an FFT is a library kernel of its own, and the cast of a
 *     real input fuses into the kernel that produces it.
 * Every output is read into a buffer poisoned with 0xA5 bytes first.
 */
#include <criterion/criterion.h>

#include "fusec.h"
#include "graph.h"
#include "plan.h"
#include "test_values.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static fc_ctx *ctx;

static void setup(void) {
    fc_ctx_options o;
    memset(&o, 0, sizeof o);
    o.backend = FC_BACKEND_HOST;
    cr_assert_eq(fc_ctx_create(&ctx, &o), FC_OK);
}

static void teardown(void) {
    fc_ctx_destroy(ctx);
    ctx = NULL;
}

TestSuite(fft, .init = setup, .fini = teardown);

/* ---- helpers ---------------------------------------------------------------------------- */

/* Reads all of a (a complex array) as double pairs; poisons the buffer first. */
static double *read_complex(fc_array *a, size_t *n_out) {
    cr_assert_eq(fc_array_status(a), FC_OK, "%s", fc_array_errmsg(a));
    fc_dtype t = fc_array_dtype(a);
    cr_assert(t == FC_C64 || t == FC_C128, "dtype %s is not complex", fc_dtype_name(t));
    size_t n = (size_t)fc_array_size(a), es = fc_dtype_size(t);
    unsigned char *raw = malloc(n * es + 1);
    double *out = malloc(2 * n * sizeof(double) + 1);
    cr_assert(raw && out);
    memset(raw, 0xA5, n * es + 1);
    cr_assert_eq(fc_read(a, raw, 0, (int64_t)n), FC_OK, "fc_read: %s", fc_errmsg(ctx));
    for (size_t i = 0; i < 2 * n; i++) {
        if (t == FC_C64) {
            float f;
            memcpy(&f, raw + 4 * i, 4);
            out[i] = f;
        } else {
            memcpy(&out[i], raw + 8 * i, 8);
        }
    }
    free(raw);
    *n_out = n;
    return out;
}

/* Random complex values, never zero, in [-2, 2) + [-2, 2)i (a deterministic LCG). */
static uint64_t lcg_state;
static double urand(void) {
    lcg_state = lcg_state * 6364136223846793005ULL + 1442695040888963407ULL;
    double u = (double)(lcg_state >> 11) * 0x1p-53 * 4.0 - 2.0;
    return u == 0.0 ? 0.5 : u;
}

static fc_array *random_c128(fc_shape shape, double **values) {
    size_t n = 1;
    for (int d = 0; d < shape.ndim; d++) n *= (size_t)shape.dim[d];
    double *v = malloc(2 * n * sizeof(double) + 1);
    cr_assert_not_null(v);
    for (size_t i = 0; i < 2 * n; i++) v[i] = urand();
    fc_array *a = fc_from_host(ctx, FC_C128, shape, v);
    if (values) *values = v;
    else free(v);
    return a;
}

static double max_abs(const double *v, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++) m = fmax(m, hypot(v[2 * i], v[2 * i + 1]));
    return m;
}

/* ---- the NumPy table -------------------------------------------------------------------- */

/* The words of the current line (strtok_r over it). */
typedef struct table {
    char *save;
    bool first;
    char *line;
} table;

static const char *word(table *t) {
    if (t->first) {
        t->first = false;
        return strtok_r(t->line, " \t\r", &t->save);
    }
    return strtok_r(NULL, " \t\r", &t->save);
}

static const char *need_word(table *t) {
    const char *w = word(t);
    cr_assert_not_null(w, "fft_numpy.txt: line ends early");
    return w;
}

static fc_dtype need_dtype(table *t) {
    fc_dtype d;
    const char *w = need_word(t);
    cr_assert_eq(fc_dtype_from_name(w, &d), FC_OK, "bad dtype %s", w);
    return d;
}

static fc_shape need_shape(table *t) {
    fc_shape s;
    memset(&s, 0, sizeof s);
    s.ndim = atoi(need_word(t));
    for (int d = 0; d < s.ndim; d++) s.dim[d] = atoll(need_word(t));
    return s;
}

static size_t numel(fc_shape s) {
    size_t n = 1;
    for (int d = 0; d < s.ndim; d++) n *= (size_t)s.dim[d];
    return n;
}

/* The next line of a table, cut out of the buffer at *cursor in place, comments and blank
 * lines skipped; NULL at the end. *lineno counts every line. */
static char *next_line(char **cursor, int *lineno) {
    while (*cursor && **cursor) {
        char *line = *cursor, *nl = strchr(line, '\n');
        if (nl) *nl = '\0';
        *cursor = nl ? nl + 1 : NULL;
        (*lineno)++;
        if (*line != '#' && *line != '\0') return line;
    }
    return NULL;
}

/* Element values as their bits (complex: two words), into a buffer of n elements. */
static void *need_values(table *t, fc_dtype dt, size_t n) {
    size_t es = fc_dtype_size(dt), words = fcg_is_complex(dt) ? 2 : 1, ws = es / words;
    unsigned char *v = malloc(n * es + 1);
    cr_assert_not_null(v);
    for (size_t i = 0; i < n * words; i++) {
        uint64_t bits = strtoull(need_word(t), NULL, 16);
        memcpy(v + i * ws, &bits, ws); /* little-endian */
    }
    return v;
}

static fc_status status_named(const char *s) {
    if (strcmp(s, "FC_ERR_AXIS") == 0) return FC_ERR_AXIS;
    if (strcmp(s, "FC_ERR_SHAPE") == 0) return FC_ERR_SHAPE;
    if (strcmp(s, "FC_ERR_VALUE") == 0) return FC_ERR_VALUE;
    if (strcmp(s, "FC_ERR_DTYPE") == 0) return FC_ERR_DTYPE;
    cr_assert_fail("unknown status %s", s);
    return FC_OK;
}

/* The whole file as a string (malloc'd). */
static char *slurp(const char *name) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", FUSEC_TEST_DATA_DIR, name);
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)len + 1);
    cr_assert_not_null(buf);
    cr_assert_eq(fread(buf, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    buf[len] = '\0';
    return buf;
}

Test(fft, host_matches_numpy) {
    char *buf = slurp("fft_numpy.txt");
    int cases = 0, errors = 0, failures = 0, lineno = 0;
    char *cursor = buf;
    for (char *line; (line = next_line(&cursor, &lineno));) {
        table t = {NULL, true, line};
        fc_scope *sc = fc_scope_open(ctx);
        const char *op = need_word(&t);
        if (strcmp(op, "err") == 0) {
            const char *which = need_word(&t);
            int axis = atoi(need_word(&t));
            fc_dtype dt = need_dtype(&t);
            fc_shape sh = need_shape(&t);
            fc_status want = status_named(need_word(&t));
            fc_array *x = fc_ones(ctx, dt, sh);
            fc_array *y = which[0] == 'f' ? fc_fft(x, axis) : fc_ifft(x, axis);
            cr_expect_eq(fc_array_status(y), want, "line %d: %s(axis=%d) gave %s, not %s", lineno,
                         which, axis, fc_strerror(fc_array_status(y)), fc_strerror(want));
            cr_expect(strstr(fc_array_errmsg(y), which) != NULL, "line %d: message '%s' does not "
                      "name %s", lineno, fc_array_errmsg(y), which);
            errors++;
            fc_scope_close(sc);
            continue;
        }
        int axis = atoi(need_word(&t));
        fc_dtype dt = need_dtype(&t);
        fc_shape sh = need_shape(&t);
        void *in = need_values(&t, dt, numel(sh));
        fc_dtype rdt = need_dtype(&t);
        fc_shape rsh = need_shape(&t);
        size_t n = numel(rsh);
        void *ref = need_values(&t, rdt, n);
        double rtol = strtod(need_word(&t), NULL), atol = strtod(need_word(&t), NULL);
        fc_array *x = fc_from_host(ctx, dt, sh, in);
        fc_array *y = op[0] == 'f' ? fc_fft(x, axis) : fc_ifft(x, axis);
        cr_assert_eq(fc_array_status(y), FC_OK, "line %d: %s", lineno, fc_array_errmsg(y));
        cr_expect_eq(fc_array_dtype(y), rdt, "line %d: %s of %s gives %s, NumPy %s", lineno, op,
                     fc_dtype_name(dt), fc_dtype_name(fc_array_dtype(y)), fc_dtype_name(rdt));
        fc_shape ys = fc_array_shape(y);
        cr_assert(ys.ndim == rsh.ndim &&
                      memcmp(ys.dim, rsh.dim, sizeof(int64_t) * (size_t)rsh.ndim) == 0,
                  "line %d: shape differs", lineno);
        size_t got_n;
        double *got = read_complex(y, &got_n);
        int bad = 0;
        for (size_t i = 0; i < 2 * n; i++) {
            double want;
            if (rdt == FC_C64) {
                float fv;
                memcpy(&fv, (char *)ref + 4 * i, 4);
                want = fv;
            } else {
                memcpy(&want, (char *)ref + 8 * i, 8);
            }
            if (!(fabs(got[i] - want) <= atol + rtol * fabs(want))) {
                if (!bad)
                    cr_log_error("line %d: %s axis %d of %s %zu-element: element %zu%s: got "
                                 "%.17g, NumPy %.17g (atol %.3g)", lineno, op, axis,
                                 fc_dtype_name(dt), n, i / 2, i % 2 ? " (imag)" : "", got[i],
                                 want, atol);
                bad++;
            }
        }
        failures += bad != 0;
        cases++;
        free(got);
        free(in);
        free(ref);
        fc_scope_close(sc);
    }
    free(buf);
    cr_log_info("fft_numpy.txt: %d cases, %d error cases, %d failures", cases, errors, failures);
    cr_expect_geq(cases, 300, "only %d cases", cases);
    cr_expect_geq(errors, 10, "only %d error cases", errors);
    cr_assert_eq(failures, 0, "%d of %d cases disagree with NumPy", failures, cases);
}

/* `y = CALL` of an input x of dtype dt and shape sh (no input when has_x is false), as a .fc
 * program through the public parser: the .fc spelling and the C functions at once. */
static fc_array *family_call(const char *call, bool has_x, fc_dtype dt, fc_shape sh, void *in,
                             int lineno, fc_status *status) {
    char text[1024];
    int len = 0;
    if (has_x) {
        len += snprintf(text, sizeof text, "x = input %s [", fc_dtype_name(dt));
        for (int d = 0; d < sh.ndim; d++)
            len += snprintf(text + len, sizeof text - (size_t)len, d ? ", %lld" : "%lld",
                            (long long)sh.dim[d]);
        len += snprintf(text + len, sizeof text - (size_t)len, "]\n");
    }
    len += snprintf(text + len, sizeof text - (size_t)len, "y = %s\nout y\n", call);
    fc_program *prog = NULL;
    cr_assert_eq(fc_program_parse(ctx, text, (size_t)len, "fft_family", &prog), FC_OK,
                 "line %d: %s: %s", lineno, call, fc_errmsg(ctx));
    fc_array *x = has_x ? fc_from_host(ctx, dt, sh, in) : NULL, *y = NULL;
    *status = fc_program_build(prog, has_x ? &x : NULL, &y);
    fc_program_destroy(prog);
    if (*status == FC_OK && y) *status = fc_array_status(y);
    return y;
}

/* np.fft's family (fft / ifft with n and norm, rfft, irfft, hfft, ihfft, fftn and kin,
 * fftfreq, rfftfreq, fftshift, ifftshift) against NumPy 2: tests/data/fft_family.txt
 * (tests/gen_fft.py). Every norm, real, integer, f16 and complex inputs, cropped and padded
 * axes, default and explicit s / axes, and the errors NumPy raises. */
Test(fft, family_matches_numpy) {
    char *buf = slurp("fft_family.txt");
    int cases = 0, errors = 0, failures = 0, lineno = 0;
    char *cursor = buf;
    for (char *line; (line = next_line(&cursor, &lineno));) {
        table t = {NULL, true, line};
        fc_scope *sc = fc_scope_open(ctx);
        const char *call = need_word(&t);
        if (strcmp(call, "err") == 0) {
            call = need_word(&t);
            fc_dtype dt = need_dtype(&t);
            fc_shape sh = need_shape(&t);
            fc_status want = status_named(need_word(&t));
            size_t n = numel(sh);
            void *in = calloc(n * fc_dtype_size(dt) + 1, 1);
            fc_status got;
            family_call(call, true, dt, sh, in, lineno, &got);
            cr_expect_eq(got, want, "line %d: %s gave %s, not %s", lineno, call,
                         fc_strerror(got), fc_strerror(want));
            free(in);
            errors++;
            fc_clear_error(ctx);
            fc_scope_close(sc);
            continue;
        }
        const char *dname = need_word(&t);
        bool has_x = strcmp(dname, "none") != 0;
        fc_dtype dt = FC_F64;
        fc_shape sh;
        memset(&sh, 0, sizeof sh);
        void *in = NULL;
        if (has_x) {
            cr_assert_eq(fc_dtype_from_name(dname, &dt), FC_OK, "bad dtype %s", dname);
            sh = need_shape(&t);
            in = need_values(&t, dt, numel(sh));
        }
        fc_dtype rdt = need_dtype(&t);
        fc_shape rsh = need_shape(&t);
        size_t n = numel(rsh);
        void *ref = need_values(&t, rdt, n);
        double rtol = strtod(need_word(&t), NULL), atol = strtod(need_word(&t), NULL);
        fc_status st;
        fc_array *y = family_call(call, has_x, dt, sh, in, lineno, &st);
        cr_assert(st == FC_OK && y, "line %d: %s: %s", lineno, call, fc_errmsg(ctx));
        cr_expect_eq(fc_array_dtype(y), rdt, "line %d: %s of %s gives %s, NumPy %s", lineno, call,
                     dname, fc_dtype_name(fc_array_dtype(y)), fc_dtype_name(rdt));
        fc_shape ys = fc_array_shape(y);
        cr_assert(ys.ndim == rsh.ndim &&
                      memcmp(ys.dim, rsh.dim, sizeof(int64_t) * (size_t)rsh.ndim) == 0,
                  "line %d: %s: shape differs", lineno, call);
        size_t es = fc_dtype_size(rdt);
        unsigned char *got = malloc(n * es + 1);
        memset(got, 0xA5, n * es + 1); /* poisoned */
        cr_assert_eq(fc_read(y, got, 0, (int64_t)n), FC_OK, "%s", fc_errmsg(ctx));
        int bad = 0, parts = fcg_is_complex(rdt) ? 2 : 1;
        for (size_t i = 0; i < n && fcg_is_inexact(rdt); i++)
            for (int q = 0; q < parts; q++) {
                double g = tv_value_at(got, rdt, i, q), w = tv_value_at(ref, rdt, i, q);
                if (fabs(g - w) <= atol + rtol * fabs(w)) continue;
                if (!bad)
                    cr_log_error("line %d: %s of %s: element %zu%s: got %.17g, NumPy %.17g "
                                 "(atol %.3g)", lineno, call, dname, i, q ? " (imag)" : "", g,
                                 w, atol);
                bad++;
            }
        if (!fcg_is_inexact(rdt) && memcmp(got, ref, n * es) != 0) {
            cr_log_error("line %d: %s of %s: the values differ", lineno, call, dname);
            bad++;
        }
        failures += bad != 0;
        cases++;
        free(got);
        free(in);
        free(ref);
        fc_scope_close(sc);
    }
    free(buf);
    cr_log_info("fft_family.txt: %d cases, %d error cases, %d failures", cases, errors, failures);
    cr_expect_geq(cases, 500, "only %d cases", cases);
    cr_expect_geq(errors, 8, "only %d error cases", errors);
    cr_assert_eq(failures, 0, "%d of %d cases disagree with NumPy", failures, cases);
}

/* ---- beyond the table ------------------------------------------------------------------- */

/* The DFT by definition, in long double. */
static void direct_dft(const double *x, int64_t n, bool inverse, double *out) {
    const long double pi = 3.141592653589793238462643383279502884L;
    for (int64_t k = 0; k < n; k++) {
        long double re = 0, im = 0;
        for (int64_t j = 0; j < n; j++) {
            /* the angle of jk mod n, exact in integers */
            long double th = 2 * pi * (long double)((j * k) % n) / (long double)n;
            long double c = cosl(th), s = inverse ? sinl(th) : -sinl(th);
            re += x[2 * j] * c - x[2 * j + 1] * s;
            im += x[2 * j] * s + x[2 * j + 1] * c;
        }
        if (inverse) re /= n, im /= n;
        out[2 * k] = (double)re;
        out[2 * k + 1] = (double)im;
    }
}

Test(fft, matches_a_direct_dft) {
    static const int64_t lengths[] = {2, 3, 5, 6, 10, 19, 23, 24, 45, 63, 64, 65, 99, 331, 640,
                                      1021, 1536, 2039, 2048};
    lcg_state = 7;
    for (size_t li = 0; li < sizeof lengths / sizeof *lengths; li++) {
        int64_t n = lengths[li];
        for (int inv = 0; inv < 2; inv++) {
            fc_scope *sc = fc_scope_open(ctx);
            double *xv;
            fc_array *x = random_c128(FC_SHAPE(n), &xv);
            fc_array *y = inv ? fc_ifft(x, 0) : fc_fft(x, 0);
            size_t m;
            double *got = read_complex(y, &m);
            double *want = malloc(2 * (size_t)n * sizeof(double));
            direct_dft(xv, n, inv, want);
            double worst = 0, scale = max_abs(want, (size_t)n);
            for (size_t i = 0; i < 2 * (size_t)n; i++) worst = fmax(worst, fabs(got[i] - want[i]));
            /* a few ulps of double times log2(n), relative to the result's largest element */
            double bound = 8 * 0x1p-53 * log2(2.0 * (double)n) * scale;
            cr_expect_leq(worst, bound, "%s length %lld: error %.3g > %.3g",
                          inv ? "ifft" : "fft", (long long)n, worst, bound);
            free(got);
            free(want);
            free(xv);
            fc_scope_close(sc);
        }
    }
}

Test(fft, round_trip_gives_the_input_back) {
    lcg_state = 11;
    for (int64_t n = 1; n <= 4100; n = n < 70 ? n + 1 : n * 2 + 3) {
        fc_scope *sc = fc_scope_open(ctx);
        double *xv;
        fc_array *x = random_c128(FC_SHAPE(2, n), &xv);
        fc_array *back = fc_ifft(fc_fft(x, 1), 1);
        size_t m;
        double *got = read_complex(back, &m);
        cr_assert_eq(m, 2 * (size_t)n);
        double worst = 0;
        for (size_t i = 0; i < 2 * m; i++) worst = fmax(worst, fabs(got[i] - xv[i]));
        cr_expect_leq(worst, 16 * 0x1p-53 * log2(2.0 * (double)n) * 3.0,
                      "length %lld: ifft(fft(x)) is %.3g away from x", (long long)n, worst);
        /* c64 too (the input cast to c64, the transforms in c64) */
        fc_array *back32 = fc_ifft(fc_fft(fc_cast(x, FC_C64), -1), -1);
        cr_expect_eq(fc_array_dtype(back32), FC_C64);
        double *g32 = read_complex(back32, &m);
        worst = 0;
        for (size_t i = 0; i < 2 * m; i++) worst = fmax(worst, fabs(g32[i] - xv[i]));
        cr_expect_leq(worst, 8 * 0x1p-24 * 3.0, "c64 length %lld: %.3g away", (long long)n, worst);
        free(g32);
        free(got);
        free(xv);
        fc_scope_close(sc);
    }
}

/* Every line is transformed by the same code, so the axis changes nothing but the order. */
Test(fft, an_axis_is_the_transpose_of_another) {
    lcg_state = 3;
    fc_scope *sc = fc_scope_open(ctx);
    fc_array *x = random_c128(FC_SHAPE(12, 7, 5), NULL);
    for (int axis = 0; axis < 3; axis++) {
        fc_axes to_last = axis == 0 ? FC_AXES(1, 2, 0) : axis == 1 ? FC_AXES(0, 2, 1)
                                                                   : FC_AXES(0, 1, 2);
        fc_axes back = axis == 0 ? FC_AXES(2, 0, 1) : axis == 1 ? FC_AXES(0, 2, 1)
                                                                : FC_AXES(0, 1, 2);
        fc_array *direct = fc_fft(x, axis);
        fc_array *via = fc_permute(fc_fft(fc_permute(x, to_last), -1), back);
        size_t n1, n2;
        double *a = read_complex(direct, &n1), *b = read_complex(via, &n2);
        cr_assert_eq(n1, n2);
        cr_expect(memcmp(a, b, 2 * n1 * sizeof(double)) == 0, "axis %d differs from the transposed "
                  "transform", axis);
        free(a);
        free(b);
    }
    fc_scope_close(sc);
}

Test(fft, result_dtypes_follow_numpy) {
    fc_scope *sc = fc_scope_open(ctx);
    for (int t = 0; t < FC_DTYPE_COUNT; t++) {
        fc_array *x = fc_ones(ctx, (fc_dtype)t, FC_SHAPE(3, 4));
        fc_dtype want = t == FC_F16 || t == FC_BF16 || t == FC_F32 || t == FC_C64 ? FC_C64
                                                                                  : FC_C128;
        fc_array *y = fc_fft(x, 0), *z = fc_ifft(x, -1);
        cr_expect_eq(fc_array_dtype(y), want, "fft of %s", fc_dtype_name((fc_dtype)t));
        cr_expect_eq(fc_array_dtype(z), want, "ifft of %s", fc_dtype_name((fc_dtype)t));
        fc_shape s = fc_array_shape(y);
        cr_expect(s.ndim == 2 && s.dim[0] == 3 && s.dim[1] == 4);
        /* fft(ones) along an axis of 3: 3 at frequency 0, zeros elsewhere */
        size_t n;
        double *v = read_complex(y, &n);
        cr_expect_eq(v[0], 3.0, "%s: %.17g", fc_dtype_name((fc_dtype)t), v[0]);
        cr_expect_leq(fabs(v[2 * 4]), 1e-6);
        free(v);
    }
    fc_scope_close(sc);
}

Test(fft, bad_arguments_poison) {
    fc_scope *sc = fc_scope_open(ctx);
    cr_expect_null(fc_fft(NULL, 0));
    fc_array *x = fc_ones(ctx, FC_F32, FC_SHAPE(4));
    fc_array *p = fc_fft(x, 2);
    cr_expect_eq(fc_array_status(p), FC_ERR_AXIS);
    cr_expect(strstr(fc_array_errmsg(p), "fft: axis 2") != NULL, "%s", fc_array_errmsg(p));
    /* a poisoned input comes back as it is, through the chain */
    fc_array *q = fc_ifft(fc_exp(p), 0);
    cr_expect_eq(fc_array_status(q), FC_ERR_AXIS);
    fc_scope_close(sc);
}

/* ---- the .fc spelling ------------------------------------------------------------------- */

static void hash_of(fc_array *const *a, int n, fc_hash *h) {
    cr_assert_eq(fc_graph_hash(a, n, h), FC_OK, "%s", fc_errmsg(ctx));
}

Test(fft, fc_programs_parse_and_print) {
    fc_scope *sc = fc_scope_open(ctx);
    const char *text = "x = input f32 [8, 6]\n"
                       "z = input c128 [5]\n"
                       "y = ifft(fft(x, axis=-1) * 2, axis=0, norm=\"backward\")\n"
                       "w = fft(z)\n"
                       "out y, w\n";
    fc_program *prog = NULL;
    cr_assert_eq(fc_program_parse(ctx, text, strlen(text), "t.fc", &prog), FC_OK, "%s",
                 fc_errmsg(ctx));
    fc_array *outs[2];
    cr_assert_eq(fc_program_build(prog, NULL, outs), FC_OK, "%s", fc_errmsg(ctx));
    fc_program_destroy(prog);
    cr_expect_eq(fc_array_dtype(outs[0]), FC_C64);
    cr_expect_eq(fc_array_dtype(outs[1]), FC_C128);
    /* ifft: the unscaled inverse transform, then NumPy's 1/n */
    cr_expect_eq(outs[0]->op, FCG_OP_MUL);
    const fc_array *inv = outs[0]->in[0];
    cr_expect_eq(inv->op, FCG_OP_FFTN);
    cr_expect_eq(inv->p.flag, FCG_FFT_C2C_INVERSE);
    cr_expect_eq(inv->p.axes, 1u);
    cr_expect_eq(outs[1]->op, FCG_OP_FFTN);
    cr_expect_eq(outs[1]->p.flag, FCG_FFT_C2C_FORWARD);
    cr_expect_eq(outs[1]->p.axes, 1u);
    char *printed = NULL;
    cr_assert_eq(fc_program_print(ctx, outs, 2, NULL, &printed), FC_OK, "%s", fc_errmsg(ctx));
    cr_expect(strstr(printed, "ifftn(") && strstr(printed, " fftn(") && strstr(printed, "axes=[1]"),
              "printed:\n%s", printed);
    fc_program *again = NULL;
    cr_assert_eq(fc_program_parse(ctx, printed, strlen(printed), "printed.fc", &again), FC_OK,
                 "%s\n%s", fc_errmsg(ctx), printed);
    fc_array *outs2[2];
    cr_assert_eq(fc_program_build(again, NULL, outs2), FC_OK, "%s", fc_errmsg(ctx));
    fc_program_destroy(again);
    fc_hash h1, h2;
    hash_of(outs, 2, &h1);
    hash_of(outs2, 2, &h2);
    cr_expect(h1.lo == h2.lo && h1.hi == h2.hi, "print -> parse changed the hash:\n%s", printed);
    fc_free(ctx, printed);
    /* fft and ifft, and their axes, hash apart */
    fc_array *x = fc_ones(ctx, FC_C64, FC_SHAPE(4, 4));
    fc_hash a, b, c;
    fc_array *f0 = fc_fft(x, 0), *f1 = fc_fft(x, 1), *i0 = fc_ifft(x, 0);
    hash_of(&f0, 1, &a);
    hash_of(&f1, 1, &b);
    hash_of(&i0, 1, &c);
    cr_expect(a.lo != b.lo && a.lo != c.lo && b.lo != c.lo);
    cr_expect_eq(fc_fft(x, -2), f0, "the same fft is one node");
    fc_scope_close(sc);
}

Test(fft, fc_rejects_bad_arguments) {
    static const char *const bad[] = {
        "x = input c64 [8]\ny = fft(x, 0)\nout y\n",
        "x = input c64 [8]\ny = fft(x, n=-8)\nout y\n",
        "x = input c64 [8]\ny = ifft(x, norm=\"sideways\")\nout y\n",
        "x = input c64 [8]\ny = fft(x, axis=1)\nout y\n",
        "x = input c64 [8]\ny = rfft(x)\nout y\n",
        "x = input c64 [8]\ny = fftfreq(0)\nout y\n",
        "x = input c64 [8]\ny = fftfreq(4, d=0)\nout y\n",
    };
    static const fc_status want[] = {FC_ERR_VALUE, FC_ERR_VALUE, FC_ERR_VALUE, FC_ERR_AXIS,
                                     FC_ERR_DTYPE, FC_ERR_VALUE, FC_ERR_VALUE};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        fc_scope *sc = fc_scope_open(ctx);
        fc_program *prog = NULL;
        fc_status st = fc_program_parse(ctx, bad[i], strlen(bad[i]), "bad.fc", &prog);
        if (st == FC_OK) {
            fc_array *out[1];
            st = fc_program_build(prog, NULL, out);
            fc_program_destroy(prog);
        }
        cr_expect_eq(st, want[i], "%s: got %s (%s)", bad[i], fc_strerror(st), fc_errmsg(ctx));
        fc_scope_close(sc);
    }
}

/* ---- the plan --------------------------------------------------------------------------- */

Test(fft, is_a_library_kernel_and_the_cast_fuses) {
    fc_scope *sc = fc_scope_open(ctx);
    fc_array *x = fc_ones(ctx, FC_F32, FC_SHAPE(64, 32));
    fc_array *y = fc_mul(fc_ifft(fc_fft(fc_sin(x), 1), 1), fc_f64(ctx, 2.0));
    fcp_plan *p = NULL;
    cr_assert_eq(fcp_plan_build(ctx, &y, 1, &p), FC_OK, "%s", fc_errmsg(ctx));
    /* sin + cast to c64 | fft | ifft | * 2 */
    bool ok = p->nkernel == 4 && p->kernels[0].kind == FCP_KERNEL_EW &&
              p->kernels[1].kind == FCP_KERNEL_LIB && p->kernels[2].kind == FCP_KERNEL_LIB &&
              p->kernels[3].kind == FCP_KERNEL_EW;
    char *desc = ok ? NULL : fcp_plan_describe(p);
    fcp_plan_destroy(p);
    cr_expect(ok, "plan:\n%s", desc ? desc : "");
    if (desc) fcg_strfree(ctx, desc);
    /* and it evaluates: ifft(fft(sin(1))) * 2 == 2 sin(1) */
    size_t n;
    double *v = read_complex(y, &n);
    cr_expect_leq(fabs(v[0] - 2 * sin(1.0)), 1e-5);
    cr_expect_leq(fabs(v[1]), 1e-5);
    free(v);
    fc_scope_close(sc);
}

/* ---- the transform nodes (FFTN) np.fft's functions build -------------------------------- */

/* The one FFTN node under y (through a multiplication by norm's factor, if any). */
static const fc_array *transform_of(const fc_array *y) {
    while (y && y->op != FCG_OP_FFTN) y = y->nin ? y->in[0] : NULL;
    return y;
}

Test(fft, each_transform_is_one_plan_of_its_kind) {
    fc_scope *sc = fc_scope_open(ctx);
    fc_array *z = fc_ones(ctx, FC_C64, FC_SHAPE(8, 6)), *r = fc_ones(ctx, FC_F32, FC_SHAPE(8, 6));
    fc_axes last2 = FC_AXES(-2, -1);
    struct {
        fc_array *y;
        fcg_fft_kind kind;
        uint32_t axes;
        const char *what;
    } cases[] = {
        {fc_fftn(z, 0, NULL, last2, FC_FFT_BACKWARD), FCG_FFT_C2C_FORWARD, 3u, "fft2"},
        {fc_ifftn(z, 0, NULL, last2, FC_FFT_BACKWARD), FCG_FFT_C2C_INVERSE, 3u, "ifft2"},
        {fc_rfftn(r, 0, NULL, last2, FC_FFT_BACKWARD), FCG_FFT_R2C, 3u, "rfft2"},
        {fc_irfftn(z, 0, NULL, last2, FC_FFT_BACKWARD), FCG_FFT_C2R, 3u, "irfft2"},
        {fc_rfft(r, 0, -1, FC_FFT_ORTHO), FCG_FFT_R2C, 2u, "rfft"},
        {fc_irfft(z, 0, 0, FC_FFT_FORWARD), FCG_FFT_C2R, 1u, "irfft"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const fc_array *t = transform_of(cases[i].y);
        cr_assert_not_null(t, "%s: no transform node", cases[i].what);
        cr_expect_eq(t->p.flag, cases[i].kind, "%s: kind %d", cases[i].what, t->p.flag);
        cr_expect_eq(t->p.axes, cases[i].axes, "%s: axes %#x", cases[i].what, t->p.axes);
        /* the node's input is the transform's own: nothing else under it is an FFTN */
        cr_expect_null(transform_of(t->in[0]), "%s: two transforms", cases[i].what);
        fcp_plan *p = NULL;
        cr_assert_eq(fcp_plan_build(ctx, &cases[i].y, 1, &p), FC_OK, "%s", fc_errmsg(ctx));
        int lib = 0;
        for (int k = 0; k < p->nkernel; k++) lib += p->kernels[k].kind == FCP_KERNEL_LIB;
        fcp_plan_destroy(p);
        cr_expect_eq(lib, 1, "%s: %d library calls", cases[i].what, lib);
    }
    /* rfft of f32 is the R2C node alone: no cast, no slice, no scaling kernel */
    fc_array *y = fc_rfft(r, 0, -1, FC_FFT_BACKWARD);
    cr_expect_eq(y->op, FCG_OP_FFTN);
    cr_expect_eq(y->in[0], r);
    fc_shape s = fc_array_shape(y);
    cr_expect(s.ndim == 2 && s.dim[0] == 8 && s.dim[1] == 4, "rfft of [8, 6]: [8, 4]");
    fc_scope_close(sc);
}

Test(fft, unit_axes_make_no_transform_and_runs_split) {
    fc_scope *sc = fc_scope_open(ctx);
    /* a transform of one point is the identity: [4, 1, 5] over every axis is axes 0 and 2,
     * which are not adjacent: two nodes */
    fc_array *x = fc_ones(ctx, FC_C128, FC_SHAPE(4, 1, 5));
    fc_array *y = fc_fftn(x, 0, NULL, FC_ALL, FC_FFT_BACKWARD);
    const fc_array *t = transform_of(y);
    cr_assert_not_null(t);
    const fc_array *u = transform_of(t->in[0]);
    cr_assert_not_null(u, "two transform nodes");
    cr_expect_eq(t->p.axes | u->p.axes, 5u);
    cr_expect_eq(t->p.axes & u->p.axes, 0u);
    /* rfft of one real point is x + 0j; irfft to one point the real part: no node at all */
    fc_array *one = fc_full(ctx, FC_F64, FC_SHAPE(3, 1), 2.5);
    cr_expect_null(transform_of(fc_rfft(one, 0, -1, FC_FFT_BACKWARD)));
    cr_expect_null(transform_of(fc_irfft(fc_cast(one, FC_C128), 1, -1, FC_FFT_BACKWARD)));
    /* no axis: NumPy's fftn returns its input; the result is a reference of its own */
    fc_array *same = fc_fftn(x, 0, NULL, (fc_axes){.n = 0}, FC_FFT_BACKWARD);
    cr_expect_eq(same, x);
    fc_scope_close(sc);
    /* x had two references in the scope (its own and fftn's); closing released both */
}
