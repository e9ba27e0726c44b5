/*
 * test_weak_scalars.c - Python scalars exactly as NumPy 2.4 treats them (NEP 50, issue 17).
 *
 * tests/data/weak_scalars.txt (from tests/gen_weak.py, run once with NumPy 2.4) gives, for each
 * op family (comparison, arithmetic, true division, float-loop ufuncs, logical, clip, where),
 * each dtype NumPy has and each Python scalar in and out of that dtype's range, NumPy's result
 * or the exception it raises; every line is replayed on the host backend. The other tests are
 * the cases of issue 17 one by one, Python's arithmetic on literals, ints wider than int64
 * through the C API and .fc text, and reductions over axis 0 / -1 of 0-d arrays.
 */
#include <criterion/criterion.h>
#include <fusec.h>

#include "graph.h" /* fcg_pyint, fcg_pyint_of: the exact value a weak constant holds */
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static fc_ctx *ctx;

static void setup(void) { ctx = tu_host_ctx(); }

static void teardown(void) {
    fc_ctx_destroy(ctx);
    ctx = NULL;
}

TestSuite(weak, .init = setup, .fini = teardown);

/* The test's own spelling of dtype names, so a bug in fc_dtype_from_name cannot hide here. */
static const char *const names[FC_DTYPE_COUNT] = {
    "bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64",
    "f16", "bf16", "f32", "f64", "c64", "c128",
};

static int dtype_of(const char *s) {
    for (int t = 0; t < FC_DTYPE_COUNT; t++)
        if (strcmp(s, names[t]) == 0) return t;
    cr_assert_fail("unknown dtype '%s' in the table", s);
    return -1;
}

static bool is_int_dtype(fc_dtype t) { return t >= FC_I8 && t <= FC_U64; }
static bool is_complex_dtype(fc_dtype t) { return t == FC_C64 || t == FC_C128; }

static fcg_pyint parse_int(const char *s) {
    bool neg = *s == '-';
    if (neg) s++;
    fcg_pyint v = 0;
    for (; *s >= '0' && *s <= '9'; s++) v = v * 10 + (*s - '0');
    return neg ? -v : v;
}

/* The weak scalar a literal token (i:..., f:..., b:...) stands for. */
static fc_array *literal(const char *tok) {
    switch (tok[0]) {
    case 'i': {
        fcg_pyint v = parse_int(tok + 2);
        return fc_i128(ctx, (int64_t)(v >> 64), (uint64_t)v);
    }
    case 'f': return fc_f64(ctx, strtod(tok + 2, NULL));
    case 'b': return fc_bool(ctx, tok[2] == '1');
    }
    cr_assert_fail("bad literal token '%s'", tok);
    return NULL;
}

/* An array of dtype t from value tokens (RE|IM for complex). */
static fc_array *array_of(fc_dtype t, int n, char **tok) {
    double re[8], im[8];
    uint64_t bits[8];
    for (int i = 0; i < n; i++) {
        char *bar = strchr(tok[i], '|');
        re[i] = strtod(tok[i], NULL);
        im[i] = bar ? strtod(bar + 1, NULL) : 0.0;
        bits[i] = (uint64_t)parse_int(tok[i]);
    }
    fc_shape sh = FC_SHAPE(n);
    if (is_complex_dtype(t)) {
        double c[16];
        for (int i = 0; i < n; i++) c[2 * i] = re[i], c[2 * i + 1] = im[i];
        return fc_cast(fc_from_host(ctx, FC_C128, sh, c), t); /* exact: values came from t */
    }
    if (t == FC_BOOL || is_int_dtype(t)) {
        unsigned char buf[64];
        size_t w = fc_dtype_size(t);
        for (int i = 0; i < n; i++) memcpy(buf + w * (size_t)i, &bits[i], w); /* little-endian */
        return fc_from_host(ctx, t, sh, buf);
    }
    return fc_cast(fc_from_host(ctx, FC_F64, sh, re), t);
}

/* Reads r's n values: integers exactly into iv, floats into re / im (16-bit floats widened). */
static void read_values(fc_array *r, int n, fcg_pyint *iv, double *re, double *im) {
    fc_dtype t = fc_array_dtype(r);
    if (t == FC_F16 || t == FC_BF16 || t == FC_F32) r = fc_cast(r, FC_F64); /* exact */
    if (t == FC_C64) r = fc_cast(r, FC_C128);
    fc_dtype rt = fc_array_dtype(r);
    unsigned char buf[256];
    cr_assert_eq(fc_to_host(r, buf, (size_t)n * fc_dtype_size(rt)), FC_OK, "%s", fc_errmsg(ctx));
    for (int i = 0; i < n; i++) {
        const unsigned char *p = buf + (size_t)i * fc_dtype_size(rt);
        re[i] = im[i] = 0;
        iv[i] = 0;
        switch (rt) {
        case FC_BOOL: iv[i] = *p != 0; break;
        case FC_I8: iv[i] = *(const int8_t *)p; break;
        case FC_I16: { int16_t v; memcpy(&v, p, 2); iv[i] = v; } break;
        case FC_I32: { int32_t v; memcpy(&v, p, 4); iv[i] = v; } break;
        case FC_I64: { int64_t v; memcpy(&v, p, 8); iv[i] = v; } break;
        case FC_U8: iv[i] = *p; break;
        case FC_U16: { uint16_t v; memcpy(&v, p, 2); iv[i] = v; } break;
        case FC_U32: { uint32_t v; memcpy(&v, p, 4); iv[i] = v; } break;
        case FC_U64: { uint64_t v; memcpy(&v, p, 8); iv[i] = v; } break;
        case FC_F64: memcpy(&re[i], p, 8); break;
        case FC_C128: memcpy(&re[i], p, 8); memcpy(&im[i], p + 8, 8); break;
        case FC_F16: case FC_BF16: case FC_F32: case FC_C64: case FC_DTYPE_COUNT:
            cr_assert_fail("not widened: %s", names[rt]);
        }
    }
}

/* Within a few units in the last place of dtype t (transcendental loops: arctan2, hypot,
 * complex power); NaN only matches NaN, infinities match exactly. */
static bool close_to(double got, double want, fc_dtype t) {
    if (isnan(want)) return isnan(got);
    if (isinf(want) || want == 0) return got == want;
    double eps = t == FC_F16 ? 0x1p-10 : (t == FC_F32 || t == FC_C64) ? 0x1p-23 : 0x1p-52;
    return fabs(got - want) <= 4 * eps * fabs(want);
}

/* NumPy's exception -> fusec's status. */
static fc_status status_of_exception(const char *kind) {
    if (strcmp(kind, "OverflowError") == 0) return FC_ERR_INVALID;
    if (strcmp(kind, "TypeError") == 0) return FC_ERR_DTYPE;
    if (strcmp(kind, "ValueError") == 0) return FC_ERR_VALUE; /* int ** negative int */
    cr_assert_fail("unknown exception %s in the table", kind);
    return FC_OK;
}

typedef fc_array *(*binary_fn)(fc_array *, fc_array *);
static const struct { const char *name; binary_fn fn; } binary_ops[] = {
    {"less", fc_less}, {"greater_equal", fc_greater_equal}, {"equal", fc_equal},
    {"not_equal", fc_not_equal}, {"add", fc_add}, {"subtract", fc_sub}, {"multiply", fc_mul},
    {"floor_divide", fc_floordiv}, {"remainder", fc_mod}, {"power", fc_pow},
    {"bitwise_and", fc_bitwise_and}, {"maximum", fc_maximum}, {"divide", fc_div},
    {"arctan2", fc_arctan2}, {"hypot", fc_hypot}, {"logical_and", fc_logical_and},
    {"logical_xor", fc_logical_xor},
};

static fc_array *apply(const char *op, bool right, fc_array *x, fc_array *lit) {
    if (strcmp(op, "clip") == 0)
        return right ? fc_clip(x, fc_i64(ctx, -100), lit) : fc_clip(x, lit, fc_i64(ctx, 100));
    if (strcmp(op, "where") == 0) {
        bool c[3] = {true, false, true};
        fc_array *cond = fc_from_host(ctx, FC_BOOL, FC_SHAPE(3), c);
        return right ? fc_where(cond, x, lit) : fc_where(cond, lit, x);
    }
    for (size_t i = 0; i < sizeof binary_ops / sizeof binary_ops[0]; i++)
        if (strcmp(op, binary_ops[i].name) == 0)
            return right ? binary_ops[i].fn(x, lit) : binary_ops[i].fn(lit, x);
    cr_assert_fail("unknown op %s in the table", op);
    return NULL;
}

/* One table line; false (with a message) on a mismatch. */
static bool replay(char *line, int lineno) {
    char *field[3], *save = NULL;
    int nf = 0;
    for (char *f = strtok_r(line, ";", &save); f && nf < 3; f = strtok_r(NULL, ";", &save))
        field[nf++] = f;
    cr_assert_eq(nf, 3, "line %d: malformed", lineno);
    char *w[8], *wsave = NULL;
    int nw = 0;
    for (char *t = strtok_r(field[0], " \n", &wsave); t && nw < 8; t = strtok_r(NULL, " \n", &wsave))
        w[nw++] = t;
    cr_assert_eq(nw, 4, "line %d: malformed case", lineno);
    char what[160];
    snprintf(what, sizeof what, "line %d: %s %s %s %s", lineno, w[0], w[1], w[2], w[3]);
    char *xs[8];
    int nx = 0;
    for (char *t = strtok_r(field[1], " \n", &wsave); t && nx < 8; t = strtok_r(NULL, " \n", &wsave))
        xs[nx++] = t;
    char *rs[10];
    int nr = 0;
    for (char *t = strtok_r(field[2], " \n", &wsave); t && nr < 10; t = strtok_r(NULL, " \n", &wsave))
        rs[nr++] = t;
    cr_assert(nx == 3 && nr >= 2, "line %d: malformed values", lineno);

    fc_scope *s = fc_scope_open(ctx);
    fc_array *x = array_of((fc_dtype)dtype_of(w[2]), nx, xs);
    cr_assert_eq(fc_array_status(x), FC_OK, "%s: %s", what, fc_errmsg(ctx));
    fc_array *r = apply(w[0], w[1][0] == 'R', x, literal(w[3]));
    fc_status st = fc_array_status(r);
    if (st == FC_OK) st = fc_eval(ctx, &r, 1); /* int ** negative int fails when evaluated */
    bool ok = true;
    if (strcmp(rs[0], "raises") == 0) {
        fc_status want = status_of_exception(rs[1]);
        if (st != want) {
            cr_log_error("%s: NumPy raises %s, fusec gives %s (%s)", what, rs[1],
                         st == FC_OK ? names[fc_array_dtype(r)] : fc_strerror(st),
                         st == FC_OK ? "" : fc_errmsg(ctx));
            ok = false;
        }
    } else if (st != FC_OK) {
        cr_log_error("%s: NumPy gives %s, fusec fails: %s", what, rs[0], fc_errmsg(ctx));
        ok = false;
    } else if ((int)fc_array_dtype(r) != dtype_of(rs[0])) {
        cr_log_error("%s: NumPy gives %s, fusec %s", what, rs[0], names[fc_array_dtype(r)]);
        ok = false;
    } else {
        fc_dtype t = fc_array_dtype(r);
        int n = nr - 1;
        cr_assert_eq(fc_array_size(r), n, "%s", what);
        fcg_pyint iv[8];
        double re[8], im[8];
        read_values(r, n, iv, re, im);
        for (int i = 0; i < n && ok; i++) {
            char *bar = strchr(rs[1 + i], '|');
            if (t == FC_BOOL || is_int_dtype(t)) ok = iv[i] == parse_int(rs[1 + i]);
            else ok = close_to(re[i], strtod(rs[1 + i], NULL), t) &&
                      close_to(im[i], bar ? strtod(bar + 1, NULL) : 0.0, t);
            if (!ok)
                cr_log_error("%s: element %d: NumPy gives %s, fusec %.17g%+.17gj (%lld)", what,
                             i, rs[1 + i], re[i], im[i], (long long)iv[i]);
        }
    }
    fc_scope_close(s);
    return ok;
}

Test(weak, numpy_table) {
    FILE *f = tu_open_data("weak_scalars.txt");
    char line[1024];
    int lineno = 0, cases = 0, bad = 0, raises = 0, settled = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        if (line[0] == '#' || line[0] == '\n') continue;
        cases++;
        raises += strstr(line, "raises") != NULL;
        settled += strncmp(line, "equal R u8 i:256", 16) == 0; /* a settled comparison */
        if (!replay(line, lineno)) bad++;
    }
    fclose(f);
    /* 19 ops x 14 dtypes x 20 scalars x 2 sides; a shorter table would test less */
    cr_assert_eq(cases, 10640, "the table has %d cases", cases);
    cr_assert_gt(raises, 1000);
    cr_assert_eq(settled, 1);
    cr_assert_eq(bad, 0, "%d of %d cases differ from NumPy", bad, cases);
}

/* ---- the cases of issue 17, as .fc programs on random data ------------------------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15u;
static uint64_t next_random(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* A random array of dtype t and n elements, none zero. */
static fc_array *random_array(fc_dtype t, int n, fc_shape sh) {
    unsigned char buf[64];
    size_t w = fc_dtype_size(t);
    for (int i = 0; i < n; i++) {
        uint64_t v = next_random();
        if (t == FC_F32) {
            float f = 1.0f + (float)(v % 1000) / 100.0f;
            memcpy(buf + w * (size_t)i, &f, w);
            continue;
        }
        if (t == FC_F64) {
            double d = 1.0 + (double)(v % 1000) / 100.0;
            memcpy(buf + w * (size_t)i, &d, w);
            continue;
        }
        if (t == FC_BOOL) v = 1;
        else v = 1 + v % 100; /* non-zero and in range of every integer dtype */
        memcpy(buf + w * (size_t)i, &v, w);
    }
    return fc_from_host(ctx, t, sh, buf);
}

/* Builds `expr` over inputs x (dtype t, shape [4] or [] when scalar) and returns its output,
 * or a poisoned array with the builder's status. */
static fc_status run_fc(const char *expr, fc_dtype t, bool scalar, fc_array **x, fc_array **y) {
    char text[512];
    snprintf(text, sizeof text, "x = input %s %s\ny = %s\nout y\n", names[t],
             scalar ? "[]" : "[4]", expr);
    fc_program *prog;
    cr_assert_eq(fc_program_parse(ctx, text, strlen(text), "case", &prog), FC_OK, "%s",
                 fc_errmsg(ctx));
    *x = random_array(t, scalar ? 1 : 4, scalar ? FC_SCALAR : FC_SHAPE(4));
    fc_status st = fc_program_build(prog, x, y);
    fc_program_destroy(prog);
    return st;
}

static void expect_refused(const char *expr, fc_dtype t, const char *msg) {
    fc_scope *s = fc_scope_open(ctx);
    fc_array *x, *y = NULL;
    fc_status st = run_fc(expr, t, false, &x, &y);
    cr_expect_eq(st, FC_ERR_INVALID, "%s on %s: NumPy raises OverflowError, fusec: %s", expr,
                 names[t], st == FC_OK ? "ran" : fc_errmsg(ctx));
    if (st != FC_OK)
        cr_expect(strstr(fc_errmsg(ctx), msg) != NULL, "%s: message '%s' lacks '%s'", expr,
                  fc_errmsg(ctx), msg);
    fc_scope_close(s);
}

/* Each element of y (bool) is `want`. */
static void expect_all(const char *expr, fc_dtype t, bool want) {
    fc_scope *s = fc_scope_open(ctx);
    fc_array *x, *y;
    cr_assert_eq(run_fc(expr, t, false, &x, &y), FC_OK, "%s: %s", expr, fc_errmsg(ctx));
    cr_assert_eq(fc_array_dtype(y), FC_BOOL, "%s", expr);
    bool v[4];
    cr_assert_eq(fc_to_host(y, v, sizeof v), FC_OK);
    for (int i = 0; i < 4; i++) cr_expect_eq(v[i], want, "%s: element %d", expr, i);
    fc_scope_close(s);
}

Test(weak, literal_arithmetic_is_range_checked) {
    /* NumPy: OverflowError "Python integer 300 out of bounds for int8"; fusec wrapped before */
    expect_refused("x + (100 * 3)", FC_I8, "Python integer 300 out of bounds for i8");
    expect_refused("x + (0 - 1)", FC_U8, "Python integer -1 out of bounds for u8");
    expect_refused("x ** (-1 - 3)", FC_U8, "Python integer -4 out of bounds for u8");
    expect_refused("-1 * 7 % x", FC_U8, "Python integer -7 out of bounds for u8");
    expect_refused("x + 2**64", FC_U64, "Python integer 18446744073709551616 out of bounds");
    expect_refused("x + 2**63", FC_I64, "Python integer 9223372036854775808 out of bounds");
    /* in range, the literal is exact: (100 * 3) - 200 == 100 fits i8 */
    fc_scope *s = fc_scope_open(ctx);
    fc_array *x, *y;
    cr_assert_eq(run_fc("x + ((100 * 3) - 200)", FC_I8, false, &x, &y), FC_OK, "%s",
                 fc_errmsg(ctx));
    int8_t xv[4], yv[4];
    cr_assert_eq(fc_to_host(x, xv, 4), FC_OK);
    cr_assert_eq(fc_to_host(y, yv, 4), FC_OK);
    for (int i = 0; i < 4; i++) cr_expect_eq(yv[i], (int8_t)(xv[i] + 100));
    fc_scope_close(s);
}

Test(weak, comparisons_with_out_of_range_ints) {
    expect_all("x > -1", FC_U8, true);
    expect_all("x != -1", FC_U8, true);
    expect_all("x < 256", FC_U8, true);
    expect_all("x == 1000", FC_I8, false);
    expect_all("-1 >= x", FC_U8, false);
    expect_all("x <= 2**70", FC_I64, true);
    expect_all("x == 18446744073709551615", FC_I64, false);
    expect_all("x > -2**70", FC_U64, true);
    /* bool arrays compare in int64: NumPy's OverflowError beyond it */
    expect_refused("x > 2**63", FC_BOOL, "out of bounds for i64");
}

Test(weak, clip_with_any_python_int_bounds) {
    fc_scope *s = fc_scope_open(ctx);
    fc_array *x, *y;
    cr_assert_eq(run_fc("clip(x, -1000, 5)", FC_I8, false, &x, &y), FC_OK, "%s", fc_errmsg(ctx));
    cr_assert_eq(fc_array_dtype(y), FC_I8);
    int8_t xv[4], yv[4];
    cr_assert_eq(fc_to_host(x, xv, 4), FC_OK);
    cr_assert_eq(fc_to_host(y, yv, 4), FC_OK);
    for (int i = 0; i < 4; i++) cr_expect_eq(yv[i], xv[i] < 5 ? xv[i] : 5);
    cr_assert_eq(run_fc("clip(x, -2**70, 2**64)", FC_U64, false, &x, &y), FC_OK, "%s",
                 fc_errmsg(ctx));
    uint64_t xu[4], yu[4];
    cr_assert_eq(fc_to_host(x, xu, sizeof xu), FC_OK);
    cr_assert_eq(fc_to_host(y, yu, sizeof yu), FC_OK);
    cr_expect_eq(memcmp(xu, yu, sizeof xu), 0);
    fc_scope_close(s);
    /* a bound beyond the dtype on its inner side still raises, as in NumPy */
    expect_refused("clip(x, 300, 400)", FC_U8, "Python integer 300 out of bounds for u8");
    expect_refused("clip(x, -5, -1)", FC_U8, "Python integer -1 out of bounds for u8");
}

Test(weak, ints_beyond_int64) {
    fc_scope *s = fc_scope_open(ctx);
    fc_array *x, *y;
    cr_assert_eq(run_fc("x + 18446744073709551615", FC_U64, false, &x, &y), FC_OK, "%s",
                 fc_errmsg(ctx));
    uint64_t xu[4], yu[4];
    cr_assert_eq(fc_to_host(x, xu, sizeof xu), FC_OK);
    cr_assert_eq(fc_to_host(y, yu, sizeof yu), FC_OK);
    for (int i = 0; i < 4; i++) cr_expect_eq(yu[i], xu[i] - 1); /* wraps in u64, as NumPy */
    const char *f32_cases[] = {"x * 2**63", "x * 2**64", "x * 18446744073709551616",
                               "x * -2**70"};
    const double scale[] = {0x1p63, 0x1p64, 0x1p64, -0x1p70};
    for (int k = 0; k < 4; k++) {
        cr_assert_eq(run_fc(f32_cases[k], FC_F32, false, &x, &y), FC_OK, "%s: %s", f32_cases[k],
                     fc_errmsg(ctx));
        cr_assert_eq(fc_array_dtype(y), FC_F32, "%s", f32_cases[k]);
        float xf[4], yf[4];
        cr_assert_eq(fc_to_host(x, xf, sizeof xf), FC_OK);
        cr_assert_eq(fc_to_host(y, yf, sizeof yf), FC_OK);
        for (int i = 0; i < 4; i++)
            cr_expect_eq(yf[i], xf[i] * (float)scale[k], "%s: element %d", f32_cases[k], i);
    }
    /* through a double, as NumPy converts it: 2**60 + 2**36 + 1 rounds to 2**60 + 2**36 there,
     * which f32 rounds (a tie, to even) to 2**60; straight to f32 it would be 2**60 + 2**37 */
    cr_assert_eq(run_fc("x * 0 + 1152921573326323713", FC_F32, false, &x, &y), FC_OK, "%s",
                 fc_errmsg(ctx));
    float yf[4];
    cr_assert_eq(fc_to_host(y, yf, sizeof yf), FC_OK);
    for (int i = 0; i < 4; i++) cr_expect_eq(yf[i], 0x1p60f, "element %d: %a", i, yf[i]);
    fc_scope_close(s);
}

Test(weak, float_and_bool_loops_take_any_int) {
    fc_scope *s = fc_scope_open(ctx);
    fc_array *x, *y;
    cr_assert_eq(run_fc("x / -1", FC_U16, false, &x, &y), FC_OK, "%s", fc_errmsg(ctx));
    cr_assert_eq(fc_array_dtype(y), FC_F64);
    uint16_t xs[4];
    double yd[4];
    cr_assert_eq(fc_to_host(x, xs, sizeof xs), FC_OK);
    cr_assert_eq(fc_to_host(y, yd, sizeof yd), FC_OK);
    for (int i = 0; i < 4; i++) cr_expect_eq(yd[i], -(double)xs[i]);

    cr_assert_eq(run_fc("arctan2(x, -1)", FC_U8, false, &x, &y), FC_OK, "%s", fc_errmsg(ctx));
    cr_assert_eq(fc_array_dtype(y), FC_F16); /* NumPy's loop for u8: float16 */
    uint8_t xb[4];
    cr_assert_eq(fc_to_host(x, xb, sizeof xb), FC_OK);
    fc_array *yf = fc_cast(y, FC_F32);
    float yv[4];
    cr_assert_eq(fc_to_host(yf, yv, sizeof yv), FC_OK);
    for (int i = 0; i < 4; i++) /* atan2(x, -1) of x in [1, 100]: in (pi/2, 3pi/4] */
        cr_expect(fabsf(yv[i] - atan2f((float)xb[i], -1.0f)) < 2e-3f, "element %d", i);

    cr_assert_eq(run_fc("logical_and(x, 256)", FC_U8, false, &x, &y), FC_OK, "%s",
                 fc_errmsg(ctx));
    fc_scope_close(s);
    expect_all("logical_and(x, 256)", FC_U8, true);
    expect_all("logical_xor(x, -1)", FC_U8, false);
    expect_refused("logical_and(x, 2**63)", FC_U64, "out of bounds for i64");
}

/* ---- Python's arithmetic on literals ------------------------------------------------------ */

static fcg_pyint int_of(fc_array *a) {
    fcg_pyint v = 0;
    cr_assert(fcg_pyint_of(a, &v), "not a weak int: %s (%s)", fc_strerror(fc_array_status(a)),
              fc_errmsg(ctx));
    return v;
}

static double float_of(fc_array *a) {
    cr_assert_eq(fc_array_status(a), FC_OK, "%s", fc_errmsg(ctx));
    cr_assert(fc_array_is_weak(a));
    cr_assert_eq(fc_array_dtype(a), FC_F64);
    double d;
    cr_assert_eq(fc_to_host(a, &d, sizeof d), FC_OK);
    return d;
}

static fc_array *I(int64_t v) { return fc_i64(ctx, v); }

Test(weak, python_arithmetic) {
    fc_scope *s = fc_scope_open(ctx);
    /* ints are exact, well past int64 */
    fcg_pyint big = int_of(fc_mul(fc_pow(I(2), I(64)), I(3)));
    cr_expect(big == (fcg_pyint)3 << 64);
    cr_expect(int_of(fc_sub(fc_pow(I(2), I(64)), I(1))) == (fcg_pyint)UINT64_MAX);
    cr_expect_eq(fc_array_dtype(fc_sub(fc_pow(I(2), I(64)), I(1))), FC_U64);
    cr_expect(int_of(fc_negative(fc_pow(I(2), I(63)))) == (fcg_pyint)INT64_MIN);
    cr_expect_eq(fc_array_dtype(fc_negative(fc_pow(I(2), I(63)))), FC_I64);
    /* floor division and remainder round toward -inf, as Python's */
    cr_expect(int_of(fc_floordiv(I(-7), I(2))) == -4);
    cr_expect(int_of(fc_mod(I(-7), I(2))) == 1);
    cr_expect(int_of(fc_mod(I(7), I(-2))) == -1);
    cr_expect(int_of(fc_right_shift(I(-5), I(1))) == -3);
    cr_expect(int_of(fc_left_shift(I(1), I(100))) == (fcg_pyint)1 << 100);
    cr_expect(int_of(fc_bitwise_not(I(5))) == -6);
    cr_expect(int_of(fc_bitwise_and(I(-1), fc_pow(I(2), I(70)))) == (fcg_pyint)1 << 70);
    /* true division and negative powers give floats, correctly rounded */
    cr_expect_eq(float_of(fc_div(I(7), I(2))), 3.5);
    cr_expect_eq(float_of(fc_div(I(1), I(3))), 1.0 / 3.0);
    cr_expect_eq(float_of(fc_div(fc_sub(fc_pow(I(2), I(100)), I(1)), fc_pow(I(2), I(47)))),
                 0x1p53); /* (2**100 - 1) / 2**47 rounds to 2**53 */
    cr_expect_eq(float_of(fc_div(fc_add(fc_pow(I(2), I(100)), fc_pow(I(2), I(46))),
                                 fc_pow(I(2), I(47)))), 0x1p53 + 0.5 * 2); /* ties to even */
    cr_expect_eq(float_of(fc_pow(I(2), I(-1))), 0.5);
    cr_expect_eq(float_of(fc_floordiv(fc_f64(ctx, -7.5), I(2))), -4.0);
    cr_expect_eq(float_of(fc_mod(fc_f64(ctx, -7.5), I(2))), 0.5);
    /* bools count as ints, except & | ^ of two bools */
    cr_expect(int_of(fc_add(fc_bool(ctx, true), fc_bool(ctx, true))) == 2);
    cr_expect(int_of(fc_negative(fc_bool(ctx, true))) == -1);
    cr_expect_eq(fc_array_dtype(fc_bitwise_and(fc_bool(ctx, true), fc_bool(ctx, true))), FC_BOOL);
    /* comparisons are exact between ints and floats */
    bool b;
    fc_array *c = fc_greater(fc_add(fc_pow(I(2), I(53)), I(1)), fc_f64(ctx, 0x1p53));
    cr_assert_eq(fc_array_dtype(c), FC_BOOL);
    cr_assert_eq(fc_to_host(c, &b, 1), FC_OK);
    cr_expect(b, "2**53 + 1 > 2.0**53 in Python");
    /* the result stays a Python int: it meets an array as a literal would */
    fc_array *x = random_array(FC_I8, 4, FC_SHAPE(4));
    cr_expect_eq(fc_array_dtype(fc_add(x, fc_mul(I(10), I(12)))), FC_I8);
    cr_expect_eq(fc_array_status(fc_add(x, fc_mul(I(10), I(13)))), FC_ERR_INVALID);
    fc_scope_close(s);
}

Test(weak, python_errors) {
    fc_scope *s = fc_scope_open(ctx);
    struct { fc_array *r; fc_status want; const char *msg; } cases[] = {
        {fc_floordiv(I(1), I(0)), FC_ERR_VALUE, "ZeroDivisionError"},
        {fc_div(I(1), I(0)), FC_ERR_VALUE, "ZeroDivisionError"},
        {fc_mod(fc_f64(ctx, 1.5), fc_f64(ctx, 0.0)), FC_ERR_VALUE, "ZeroDivisionError"},
        {fc_div(fc_f64(ctx, 1.0), I(0)), FC_ERR_VALUE, "ZeroDivisionError"},
        {fc_pow(I(0), I(-1)), FC_ERR_VALUE, "ZeroDivisionError"},
        {fc_pow(fc_f64(ctx, 10.0), I(400)), FC_ERR_VALUE, "OverflowError"},
        {fc_pow(I(2), I(127)), FC_ERR_VALUE, "128-bit"},
        {fc_mul(fc_pow(I(2), I(100)), fc_pow(I(2), I(30))), FC_ERR_VALUE, "128-bit"},
        {fc_left_shift(I(1), I(-1)), FC_ERR_VALUE, "negative shift count"},
        {fc_bitwise_and(fc_f64(ctx, 1.5), I(1)), FC_ERR_DTYPE, "TypeError"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cr_expect_eq(fc_array_status(cases[i].r), cases[i].want, "case %zu", i);
        const char *m = fc_array_errmsg(cases[i].r);
        cr_expect(m && strstr(m, cases[i].msg), "case %zu: '%s' lacks '%s'", i, m ? m : "",
                  cases[i].msg);
    }
    /* (-8.0) ** 0.5 is complex in Python */
    fc_array *c = fc_pow(fc_f64(ctx, -8.0), fc_f64(ctx, 0.5));
    cr_expect_eq(fc_array_dtype(c), FC_C128);
    cr_expect(fc_array_is_weak(c));
    fc_scope_close(s);
}

/* ---- ints wider than int64 in the C API and in .fc text ------------------------------------ */

Test(weak, wide_ints_have_no_dtype) {
    fc_scope *s = fc_scope_open(ctx);
    fc_array *w = fc_i128(ctx, 1, 0); /* 2**64 */
    cr_assert_eq(fc_array_status(w), FC_OK);
    cr_expect(int_of(w) == (fcg_pyint)1 << 64);
    cr_expect_eq(fc_eval(ctx, &w, 1), FC_ERR_INVALID);
    cr_expect(strstr(fc_errmsg(ctx), "18446744073709551616") != NULL, "%s", fc_errmsg(ctx));
    cr_expect_eq(fc_array_status(fc_reshape(w, FC_SHAPE(1))), FC_ERR_INVALID);
    cr_expect_eq(fc_array_status(fc_sum(w, FC_ALL, false)), FC_ERR_INVALID);
    cr_expect_eq(fc_array_status(fc_sin(w)), FC_ERR_INVALID); /* NumPy: no dtype for it */
    /* u64 scalars above INT64_MAX are u64, as np.asarray gives */
    fc_array *u = fc_u64(ctx, UINT64_MAX);
    cr_expect_eq(fc_array_dtype(u), FC_U64);
    uint64_t got = 0;
    cr_assert_eq(fc_to_host(u, &got, sizeof got), FC_OK);
    cr_expect_eq(got, UINT64_MAX);
    /* the same value built two ways is one node */
    cr_expect_eq(fc_i128(ctx, 0, UINT64_MAX), u);
    cr_expect_eq(fc_i128(ctx, -1, (uint64_t)-5), fc_i64(ctx, -5));
    fc_scope_close(s);
}

Test(weak, wide_literals_print_and_parse_back) {
    const char *text = "x = input f32 [4]\ny = x * 2**70 + (-2**80 // 3)\nout y\n";
    fc_program *prog;
    cr_assert_eq(fc_program_parse(ctx, text, strlen(text), "w", &prog), FC_OK, "%s",
                 fc_errmsg(ctx));
    fc_array *y;
    cr_assert_eq(fc_program_build(prog, NULL, &y), FC_OK, "%s", fc_errmsg(ctx));
    fc_program_destroy(prog);
    char *printed;
    cr_assert_eq(fc_program_print(ctx, &y, 1, NULL, &printed), FC_OK, "%s", fc_errmsg(ctx));
    /* the wide ints met an f32 loop: NumPy converts them through a double */
    cr_expect(strstr(printed, "1.1805916207174113e+21") != NULL, "%s", printed);
    fc_program *again;
    cr_assert_eq(fc_program_parse(ctx, printed, strlen(printed), "p", &again), FC_OK, "%s",
                 fc_errmsg(ctx));
    fc_array *y2;
    cr_assert_eq(fc_program_build(again, NULL, &y2), FC_OK, "%s", fc_errmsg(ctx));
    fc_hash h1, h2;
    cr_assert_eq(fc_graph_hash(&y, 1, &h1), FC_OK);
    cr_assert_eq(fc_graph_hash(&y2, 1, &h2), FC_OK);
    cr_expect_eq(memcmp(&h1, &h2, sizeof h1), 0);
    fc_program_destroy(again);
    fc_free(ctx, printed);
    /* a wide int as an output is printed as its literal and parses back */
    fc_array *w = fc_i128(ctx, -3, 12345);
    cr_assert_eq(fc_program_print(ctx, &w, 1, NULL, &printed), FC_OK, "%s", fc_errmsg(ctx));
    char want[FCG_PYINT_STR];
    fcg_pyint_str((fcg_pyint)-3 * ((fcg_pyint)1 << 64) + 12345, want);
    cr_expect(strstr(printed, want) != NULL, "%s lacks %s", printed, want);
    fc_free(ctx, printed);
    fc_release(y);
    fc_release(y2);
    fc_release(w);
}

/* ---- reductions over axis 0 / -1 of a 0-d array -------------------------------------------- */

Test(weak, zero_d_reductions) {
    const char *ok[] = {"sum", "prod", "max", "min", "any", "all", "argmax", "argmin"};
    const char *raise[] = {"mean", "var", "std"};
    for (int axis = -1; axis <= 0; axis++) {
        for (size_t k = 0; k < sizeof ok / sizeof ok[0]; k++) {
            fc_scope *s = fc_scope_open(ctx);
            char expr[64];
            snprintf(expr, sizeof expr, "%s(x, axis=%d)", ok[k], axis);
            fc_array *x, *y;
            cr_assert_eq(run_fc(expr, FC_F64, true, &x, &y), FC_OK, "%s: %s", expr,
                         fc_errmsg(ctx));
            cr_expect_eq(fc_array_ndim(y), 0, "%s", expr);
            double xv, yv;
            cr_assert_eq(fc_to_host(x, &xv, sizeof xv), FC_OK);
            cr_assert_eq(fc_to_host(fc_cast(y, FC_F64), &yv, sizeof yv), FC_OK);
            double want = k < 4 ? xv : k < 6 ? 1.0 : 0.0; /* x is non-zero; arg*: index 0 */
            cr_expect_eq(yv, want, "%s of %g: %g", expr, xv, yv);
            fc_scope_close(s);
        }
        for (size_t k = 0; k < sizeof raise / sizeof raise[0]; k++) {
            fc_scope *s = fc_scope_open(ctx);
            char expr[64];
            snprintf(expr, sizeof expr, "%s(x, axis=%d)", raise[k], axis);
            fc_array *x, *y;
            cr_expect_eq(run_fc(expr, FC_F64, true, &x, &y), FC_ERR_AXIS, "%s", expr);
            fc_scope_close(s);
        }
    }
    fc_scope *s = fc_scope_open(ctx);
    fc_array *x, *y;
    /* NumPy takes a bare 0 or -1 only: a tuple of axes, or another axis, is an AxisError */
    cr_expect_eq(run_fc("sum(x, axis=[0])", FC_F64, true, &x, &y), FC_ERR_AXIS);
    cr_expect_eq(run_fc("sum(x, axis=1)", FC_F64, true, &x, &y), FC_ERR_AXIS);
    cr_expect_eq(run_fc("norm(x, axis=0)", FC_F64, true, &x, &y), FC_ERR_AXIS);
    /* keepdims keeps the 0-d shape */
    cr_assert_eq(run_fc("max(x, axis=0, keepdims=True)", FC_F64, true, &x, &y), FC_OK);
    cr_expect_eq(fc_array_ndim(y), 0);
    /* the C API */
    fc_array *z = random_array(FC_I32, 1, FC_SCALAR);
    cr_expect_eq(fc_array_status(fc_prod(z, FC_AXES(-1), false)), FC_OK);
    cr_expect_eq(fc_array_dtype(fc_prod(z, FC_AXES(-1), false)), FC_I64);
    cr_expect_eq(fc_array_status(fc_argmin(z, 0, false)), FC_OK);
    cr_expect_eq(fc_array_status(fc_mean(z, FC_AXES(0), false)), FC_ERR_AXIS);
    fc_scope_close(s);
}
