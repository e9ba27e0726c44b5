/*
 * test_promotion.c - result dtypes against NumPy 2.4 (and ml_dtypes for bf16).
 *
 * The tables under tests/data/promotion_*.txt come from tests/gen_promotion.py, which says how
 * bf16 answers were chosen (ml_dtypes where it has a real answer, else f16's rule with bf16 in
 * place of f16). Every line of every table is asserted; a table that is missing or shorter
 * than expected fails the test.
 */
#include <criterion/criterion.h>
#include <fusec.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static fc_ctx *ctx;

static void setup(void) {
    fc_ctx_options opts = {0};
    opts.backend = FC_BACKEND_HOST;
    cr_assert_eq(fc_ctx_create(&ctx, &opts), FC_OK);
}

static void teardown(void) {
    fc_ctx_destroy(ctx);
    ctx = NULL;
}

/* The test's own spelling of dtype names, so a bug in fc_dtype_from_name cannot hide here. */
static const char *const names[FC_DTYPE_COUNT] = {
    "bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64",
    "f16", "bf16", "f32", "f64", "c64", "c128",
};

/* -1 for "error", -2 for an unknown word. */
static int parse_dtype(const char *s) {
    if (strcmp(s, "error") == 0) return -1;
    for (int t = 0; t < FC_DTYPE_COUNT; t++)
        if (strcmp(s, names[t]) == 0) return t;
    return -2;
}

/* Splits the next non-comment line of f into at most `max` words. Returns the word count, or
 * -1 at end of file. */
static int next_line(FILE *f, char *line, size_t size, char **words, int max) {
    while (fgets(line, (int)size, f)) {
        if (line[0] == '#' || line[0] == '\n') continue;
        int n = 0;
        for (char *tok = strtok(line, " \t\n"); tok && n < max; tok = strtok(NULL, " \t\n"))
            words[n++] = tok;
        return n;
    }
    return -1;
}

static FILE *open_table(const char *name) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", FUSEC_TEST_DATA_DIR, name);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "cannot open %s", path);
    return f;
}

/* Checks one result: `want` is a dtype, or -1 when NumPy raises. Returns true on a match and
 * reports a mismatch with `what` describing the case. */
static bool check_result(fc_array *r, int want, const char *what) {
    fc_status st = fc_array_status(r);
    if (want < 0) {
        if (st == FC_ERR_DTYPE) return true;
        cr_log_error("%s: NumPy raises, fusec gives %s (status %d)", what,
                     st == FC_OK ? names[fc_array_dtype(r)] : "an error of another kind", st);
        return false;
    }
    if (st != FC_OK) {
        cr_log_error("%s: expected %s, fusec fails: %s", what, names[want], fc_errmsg(ctx));
        return false;
    }
    if ((int)fc_array_dtype(r) != want) {
        cr_log_error("%s: expected %s, got %s", what, names[want], names[fc_array_dtype(r)]);
        return false;
    }
    return true;
}

/* ---- fc_promote_types ---------------------------------------------------------------------- */

Test(promotion, promote_types_table, .init = setup, .fini = teardown) {
    FILE *f = open_table("promotion_types.txt");
    char line[256], *w[8];
    int n, lines = 0, bad = 0;
    bool seen[FC_DTYPE_COUNT][FC_DTYPE_COUNT] = {{false}};
    while ((n = next_line(f, line, sizeof line, w, 8)) >= 0) {
        cr_assert_eq(n, 3, "malformed line %d", lines);
        int a = parse_dtype(w[0]), b = parse_dtype(w[1]), want = parse_dtype(w[2]);
        cr_assert(a >= 0 && b >= 0 && want >= 0, "bad names in line %d", lines);
        fc_dtype got = (fc_dtype)0xA5;
        fc_status st = fc_promote_types((fc_dtype)a, (fc_dtype)b, &got);
        if (st != FC_OK || (int)got != want) {
            cr_log_error("promote_types(%s, %s): expected %s, got %s (status %d)", names[a],
                         names[b], names[want], st == FC_OK ? fc_dtype_name(got) : "-", st);
            bad++;
        }
        seen[a][b] = true;
        lines++;
    }
    fclose(f);
    cr_expect_eq(lines, FC_DTYPE_COUNT * FC_DTYPE_COUNT);
    for (int a = 0; a < FC_DTYPE_COUNT; a++)
        for (int b = 0; b < FC_DTYPE_COUNT; b++)
            cr_expect(seen[a][b], "table lacks %s, %s", names[a], names[b]);
    cr_expect_eq(bad, 0, "%d of %d pairs differ from np.result_type", bad, lines);
}

Test(promotion, promote_types_spot_checks) {
    /* A few answers written out by hand, so the table's reader is checked too. */
    static const struct { fc_dtype a, b, want; } cases[] = {
        {FC_I8, FC_U8, FC_I16},      {FC_I64, FC_U64, FC_F64},  {FC_U8, FC_F16, FC_F16},
        {FC_I16, FC_F16, FC_F32},    {FC_I8, FC_BF16, FC_BF16}, {FC_I16, FC_BF16, FC_F32},
        {FC_F16, FC_BF16, FC_F32},   {FC_BF16, FC_F32, FC_F32}, {FC_F64, FC_C64, FC_C128},
        {FC_BOOL, FC_BOOL, FC_BOOL}, {FC_U32, FC_I32, FC_I64},  {FC_I64, FC_F16, FC_F64},
        {FC_BF16, FC_C64, FC_C64},   {FC_U64, FC_C64, FC_C128},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fc_dtype ab = FC_BOOL, ba = FC_BOOL;
        cr_expect_eq(fc_promote_types(cases[i].a, cases[i].b, &ab), FC_OK);
        cr_expect_eq(fc_promote_types(cases[i].b, cases[i].a, &ba), FC_OK);
        cr_expect_eq(ab, cases[i].want, "%s + %s", names[cases[i].a], names[cases[i].b]);
        cr_expect_eq(ba, cases[i].want, "%s + %s", names[cases[i].b], names[cases[i].a]);
    }
}

Test(promotion, promote_types_rejects_bad_dtypes) {
    fc_dtype out = FC_I8;
    cr_expect_eq(fc_promote_types(FC_DTYPE_COUNT, FC_I8, &out), FC_ERR_INVALID);
    cr_expect_eq(fc_promote_types(FC_I8, (fc_dtype)-1, &out), FC_ERR_INVALID);
    cr_expect_eq(fc_promote_types((fc_dtype)99, (fc_dtype)99, &out), FC_ERR_INVALID);
    cr_expect_eq(out, FC_I8, "a failed call must leave *out alone");
    cr_expect_eq(fc_promote_types(FC_I8, FC_I8, NULL), FC_ERR_NULL);
}

/* ---- ops by name ---------------------------------------------------------------------------- */

typedef fc_array *(*unary_fn)(fc_array *);
typedef fc_array *(*binary_fn)(fc_array *, fc_array *);

static const struct { const char *name; unary_fn fn; } unary_ops[] = {
    {"negative", fc_negative}, {"abs", fc_abs}, {"sign", fc_sign}, {"sqrt", fc_sqrt},
    {"cbrt", fc_cbrt}, {"square", fc_square}, {"reciprocal", fc_reciprocal}, {"exp", fc_exp},
    {"exp2", fc_exp2}, {"expm1", fc_expm1}, {"log", fc_log}, {"log2", fc_log2},
    {"log10", fc_log10}, {"log1p", fc_log1p}, {"sin", fc_sin}, {"cos", fc_cos}, {"tan", fc_tan},
    {"arcsin", fc_arcsin}, {"arccos", fc_arccos}, {"arctan", fc_arctan}, {"sinh", fc_sinh},
    {"cosh", fc_cosh}, {"tanh", fc_tanh}, {"arcsinh", fc_arcsinh}, {"arccosh", fc_arccosh},
    {"arctanh", fc_arctanh}, {"floor", fc_floor}, {"ceil", fc_ceil}, {"rint", fc_rint},
    {"trunc", fc_trunc}, {"isnan", fc_isnan}, {"isinf", fc_isinf}, {"isfinite", fc_isfinite},
    {"logical_not", fc_logical_not}, {"bitwise_not", fc_bitwise_not}, {"real", fc_real},
    {"imag", fc_imag}, {"conj", fc_conj}, {"angle", fc_angle}, {"signbit", fc_signbit},
    {"erf", fc_erf}, {"erfc", fc_erfc}, {"lgamma", fc_lgamma},
    {"gelu", fc_gelu}, {"gelu_tanh", fc_gelu_tanh},
};

static fc_array *matmul_2x2(fc_array *a, fc_array *b) { return fc_matmul(a, b); }
static fc_array *concatenate2(fc_array *a, fc_array *b) {
    fc_array *in[2] = {a, b};
    return fc_concatenate(fc_array_ctx(a), in, 2, 0);
}
static fc_array *stack2(fc_array *a, fc_array *b) {
    fc_array *in[2] = {a, b};
    return fc_stack(fc_array_ctx(a), in, 2, 0);
}

static const struct { const char *name; binary_fn fn; } binary_ops[] = {
    {"add", fc_add}, {"sub", fc_sub}, {"mul", fc_mul}, {"div", fc_div},
    {"floordiv", fc_floordiv}, {"mod", fc_mod}, {"pow", fc_pow}, {"arctan2", fc_arctan2},
    {"maximum", fc_maximum}, {"minimum", fc_minimum}, {"fmax", fc_fmax}, {"fmin", fc_fmin},
    {"less", fc_less}, {"less_equal", fc_less_equal}, {"greater", fc_greater},
    {"greater_equal", fc_greater_equal}, {"equal", fc_equal}, {"not_equal", fc_not_equal},
    {"logical_and", fc_logical_and}, {"logical_or", fc_logical_or},
    {"logical_xor", fc_logical_xor}, {"bitwise_and", fc_bitwise_and},
    {"bitwise_or", fc_bitwise_or}, {"bitwise_xor", fc_bitwise_xor},
    {"left_shift", fc_left_shift}, {"right_shift", fc_right_shift}, {"hypot", fc_hypot},
    {"logaddexp", fc_logaddexp}, {"logaddexp2", fc_logaddexp2}, {"copysign", fc_copysign},
    {"nextafter", fc_nextafter}, {"fmod", fc_fmod},
    {"matmul", matmul_2x2}, {"concatenate", concatenate2}, {"stack", stack2},
};

static unary_fn find_unary(const char *name) {
    for (size_t i = 0; i < sizeof unary_ops / sizeof unary_ops[0]; i++)
        if (strcmp(unary_ops[i].name, name) == 0) return unary_ops[i].fn;
    return NULL;
}

static binary_fn find_binary(const char *name) {
    for (size_t i = 0; i < sizeof binary_ops / sizeof binary_ops[0]; i++)
        if (strcmp(binary_ops[i].name, name) == 0) return binary_ops[i].fn;
    return NULL;
}

/* A strong array of ones, as the generator used (matmul operands are 2 x 2). */
static fc_array *ones_for(const char *op, fc_dtype t) {
    return fc_ones(ctx, t, strcmp(op, "matmul") == 0 ? FC_SHAPE(2, 2) : FC_SHAPE(2));
}

Test(promotion, elementwise_ops_table, .init = setup, .fini = teardown) {
    FILE *f = open_table("promotion_ops.txt");
    char line[256], *w[8], what[256];
    int n, lines = 0, bad = 0, unary_seen = 0, binary_seen = 0, ternary_seen = 0;
    while ((n = next_line(f, line, sizeof line, w, 8)) >= 0) {
        cr_assert(n >= 3 && n <= 5, "malformed line %d", lines);
        int want = parse_dtype(w[1]);
        int in[3] = {0, 0, 0};
        cr_assert(want >= -1, "bad result name in line %d", lines);
        for (int i = 2; i < n; i++) {
            in[i - 2] = parse_dtype(w[i]);
            cr_assert(in[i - 2] >= 0, "bad input name in line %d", lines);
        }
        fc_scope *s = fc_scope_open(ctx);
        fc_array *r = NULL;
        if (n == 3) {
            unary_fn fn = find_unary(w[0]);
            cr_assert_not_null(fn, "unknown unary op %s", w[0]);
            r = fn(fc_ones(ctx, (fc_dtype)in[0], FC_SHAPE(2)));
            snprintf(what, sizeof what, "%s(%s)", w[0], names[in[0]]);
            unary_seen++;
        } else if (n == 4) {
            binary_fn fn = find_binary(w[0]);
            cr_assert_not_null(fn, "unknown binary op %s", w[0]);
            r = fn(ones_for(w[0], (fc_dtype)in[0]), ones_for(w[0], (fc_dtype)in[1]));
            snprintf(what, sizeof what, "%s(%s, %s)", w[0], names[in[0]], names[in[1]]);
            binary_seen++;
        } else {
            fc_array *a = fc_ones(ctx, (fc_dtype)in[0], FC_SHAPE(2));
            fc_array *b = fc_ones(ctx, (fc_dtype)in[1], FC_SHAPE(2));
            fc_array *c = fc_ones(ctx, (fc_dtype)in[2], FC_SHAPE(2));
            if (strcmp(w[0], "where") == 0)
                r = fc_where(a, b, c);
            else if (strcmp(w[0], "clip") == 0)
                r = fc_clip(a, b, c);
            else
                cr_assert_fail("unknown ternary op %s", w[0]);
            snprintf(what, sizeof what, "%s(%s, %s, %s)", w[0], names[in[0]], names[in[1]],
                     names[in[2]]);
            ternary_seen++;
        }
        if (!check_result(r, want, what)) bad++;
        else if (want >= 0)
            cr_expect(!fc_array_is_weak(r), "%s of strong arrays must be strong", what);
        fc_scope_close(s);
        lines++;
    }
    fclose(f);
    /* 45 unary ops x 15, 35 binary x 225, where and clip x 225 */
    cr_expect_eq(unary_seen, 45 * FC_DTYPE_COUNT);
    cr_expect_eq(binary_seen, 35 * FC_DTYPE_COUNT * FC_DTYPE_COUNT);
    cr_expect_eq(ternary_seen, 2 * FC_DTYPE_COUNT * FC_DTYPE_COUNT);
    cr_expect_eq(bad, 0, "%d of %d op results differ from NumPy", bad, lines);
}

Test(promotion, elementwise_spot_checks, .init = setup, .fini = teardown) {
    /* The brief's examples, by hand, independent of the table. */
    fc_scope *s = fc_scope_open(ctx);
    fc_array *i8 = fc_ones(ctx, FC_I8, FC_SHAPE(3)), *i16 = fc_ones(ctx, FC_I16, FC_SHAPE(3));
    fc_array *b = fc_ones(ctx, FC_BOOL, FC_SHAPE(3)), *c64 = fc_ones(ctx, FC_C64, FC_SHAPE(3));
    fc_array *f32 = fc_ones(ctx, FC_F32, FC_SHAPE(3));
    cr_expect(check_result(fc_sqrt(i8), FC_F16, "sqrt(i8)"));
    cr_expect(check_result(fc_sqrt(i16), FC_F32, "sqrt(i16)"));
    cr_expect(check_result(fc_div(i8, i8), FC_F64, "div(i8, i8)"));
    cr_expect(check_result(fc_floor(i8), FC_I8, "floor(i8)"));
    cr_expect(check_result(fc_rint(i8), FC_F16, "rint(i8)"));
    cr_expect(check_result(fc_less(i8, f32), FC_BOOL, "less(i8, f32)"));
    cr_expect(check_result(fc_abs(c64), FC_F32, "abs(c64)"));
    cr_expect(check_result(fc_square(b), FC_I8, "square(bool)"));
    cr_expect(check_result(fc_conj(b), FC_I8, "conj(bool)"));
    cr_expect(check_result(fc_sub(b, b), -1, "sub(bool, bool)"));
    cr_expect(check_result(fc_bitwise_and(f32, f32), -1, "bitwise_and(f32, f32)"));
    cr_expect(check_result(fc_arctan2(c64, c64), -1, "arctan2(c64, c64)"));
    cr_expect(check_result(fc_cbrt(c64), -1, "cbrt(c64)"));
    cr_expect(check_result(fc_angle(i8), FC_F16, "angle(i8)"));
    cr_expect(check_result(fc_real(i16), FC_I16, "real(i16)"));
    cr_expect(check_result(fc_imag(f32), FC_F32, "imag(f32)"));
    cr_expect(check_result(fc_real(c64), FC_F32, "real(c64)"));
    cr_expect(check_result(fc_hypot(i8, i16), FC_F32, "hypot(i8, i16)"));
    cr_expect(check_result(fc_copysign(c64, f32), -1, "copysign(c64, f32)"));
    cr_expect(check_result(fc_fmod(b, b), FC_I8, "fmod(bool, bool)"));
    cr_expect(check_result(fc_fmod(c64, c64), -1, "fmod(c64, c64)"));
    cr_expect(check_result(fc_signbit(i8), FC_BOOL, "signbit(i8)"));
    cr_expect(check_result(fc_signbit(c64), -1, "signbit(c64)"));
    cr_expect(check_result(fc_lgamma(i16), FC_F32, "lgamma(i16)"));
    fc_scope_close(s);
}

/* ---- weak scalars (NEP 50) ------------------------------------------------------------------ */

static fc_array *weak_of_kind(const char *kind) {
    if (strcmp(kind, "bool") == 0) return fc_bool(ctx, true);
    if (strcmp(kind, "int") == 0) return fc_i64(ctx, 1);
    if (strcmp(kind, "float") == 0) return fc_f64(ctx, 1.5);
    if (strcmp(kind, "complex") == 0) return fc_c128(ctx, 0.0, 1.0);
    return NULL;
}

Test(promotion, weak_scalar_table, .init = setup, .fini = teardown) {
    FILE *f = open_table("promotion_weak.txt");
    char line[256], *w[8], what[256];
    int n, lines = 0, bad = 0;
    while ((n = next_line(f, line, sizeof line, w, 8)) >= 0) {
        cr_assert_eq(n, 5, "malformed line %d", lines);
        binary_fn fn = find_binary(w[0]);
        int t = parse_dtype(w[2]), want = parse_dtype(w[4]);
        cr_assert(fn && t >= 0 && want >= -1, "bad line %d", lines);
        fc_scope *s = fc_scope_open(ctx);
        fc_array *arr = fc_ones(ctx, (fc_dtype)t, FC_SHAPE(2)), *weak = weak_of_kind(w[3]);
        cr_assert_not_null(weak, "unknown weak kind %s", w[3]);
        cr_assert(fc_array_is_weak(weak));
        bool right = strcmp(w[1], "R") == 0;
        fc_array *r = right ? fn(arr, weak) : fn(weak, arr);
        if (right)
            snprintf(what, sizeof what, "%s(%s array, weak %s)", w[0], names[t], w[3]);
        else
            snprintf(what, sizeof what, "%s(weak %s, %s array)", w[0], w[3], names[t]);
        if (!check_result(r, want, what)) bad++;
        else if (want >= 0) {
            cr_expect(!fc_array_is_weak(r), "%s: a strong operand makes the result strong", what);
            cr_expect_eq(fc_array_ndim(r), 1, "%s", what);
        }
        fc_scope_close(s);
        lines++;
    }
    fclose(f);
    cr_expect_eq(lines, 32 * FC_DTYPE_COUNT * 4 * 2);
    cr_expect_eq(bad, 0, "%d of %d weak-scalar results differ from NumPy", bad, lines);
}

Test(promotion, weak_scalar_spot_checks, .init = setup, .fini = teardown) {
    fc_scope *s = fc_scope_open(ctx);
    cr_expect(check_result(fc_add(fc_ones(ctx, FC_I8, FC_SHAPE(2)), fc_f64(ctx, 1.5)), FC_F64,
                           "i8 + 1.5"));
    cr_expect(check_result(fc_add(fc_ones(ctx, FC_F16, FC_SHAPE(2)), fc_c128(ctx, 0, 1)), FC_C64,
                           "f16 + 1j"));
    cr_expect(check_result(fc_add(fc_ones(ctx, FC_BOOL, FC_SHAPE(2)), fc_i64(ctx, 1)), FC_I64,
                           "bool + 1"));
    cr_expect(check_result(fc_add(fc_ones(ctx, FC_U8, FC_SHAPE(2)), fc_bool(ctx, true)), FC_U8,
                           "u8 + True"));
    cr_expect(check_result(fc_mul(fc_ones(ctx, FC_F32, FC_SHAPE(2)), fc_f64(ctx, 0.1)), FC_F32,
                           "f32 * 0.1"));
    cr_expect(check_result(fc_mul(fc_ones(ctx, FC_BF16, FC_SHAPE(2)), fc_f64(ctx, 0.1)), FC_BF16,
                           "bf16 * 0.1"));
    /* A strong 0-d scalar is not weak: np.float32(1) + np.ones(2, np.float16) is f32. */
    cr_expect(check_result(fc_add(fc_scalar(ctx, FC_F32, 1.0), fc_ones(ctx, FC_F16, FC_SHAPE(2))),
                           FC_F32, "f32 scalar + f16 array"));
    cr_expect(!fc_array_is_weak(fc_scalar(ctx, FC_F32, 1.0)));
    fc_scope_close(s);
}

Test(promotion, weak_int_out_of_range_is_an_error, .init = setup, .fini = teardown) {
    /* NumPy 2: OverflowError "Python integer 300 out of bounds for int8" and the like. */
    static const struct { fc_dtype t; int64_t v; } bad[] = {
        {FC_I8, 300}, {FC_I8, -129}, {FC_U8, -1}, {FC_U8, 256}, {FC_I16, 40000},
        {FC_U16, 65536}, {FC_I32, 3000000000LL}, {FC_U32, -5}, {FC_U64, -1},
    };
    static const struct { fc_dtype t; int64_t v; } good[] = {
        {FC_I8, 127}, {FC_I8, -128}, {FC_U8, 255}, {FC_U8, 0}, {FC_I16, -32768},
        {FC_U32, 4294967295LL}, {FC_I64, INT64_MIN}, {FC_U64, INT64_MAX},
        /* the int only needs to fit where the result is an integer */
        {FC_F16, 100000}, {FC_BOOL, 300},
    };
    fc_scope *s = fc_scope_open(ctx);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        fc_array *r = fc_add(fc_ones(ctx, bad[i].t, FC_SHAPE(2)), fc_i64(ctx, bad[i].v));
        cr_expect_neq(fc_array_status(r), FC_OK, "%s array + %lld must fail", names[bad[i].t],
                      (long long)bad[i].v);
        cr_expect_neq(fc_eval(ctx, &r, 1), FC_OK);
        r = fc_mul(fc_i64(ctx, bad[i].v), fc_ones(ctx, bad[i].t, FC_SHAPE(2)));
        cr_expect_neq(fc_array_status(r), FC_OK, "%lld * %s array must fail",
                      (long long)bad[i].v, names[bad[i].t]);
    }
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        fc_array *r = fc_add(fc_ones(ctx, good[i].t, FC_SHAPE(2)), fc_i64(ctx, good[i].v));
        cr_expect_eq(fc_array_status(r), FC_OK, "%s array + %lld: %s", names[good[i].t],
                     (long long)good[i].v, fc_errmsg(ctx));
    }
    fc_scope_close(s);
}

Test(promotion, weak_with_weak_stays_weak, .init = setup, .fini = teardown) {
    /* Python's own arithmetic: the higher kind wins, the result is still a Python scalar; a
     * bool in + or * counts as an int (True + True == 2, graph/pyint.c). */
    static const struct { const char *a, *b; fc_dtype want; } cases[] = {
        {"bool", "bool", FC_I64},     {"bool", "int", FC_I64},       {"int", "int", FC_I64},
        {"int", "float", FC_F64},      {"float", "float", FC_F64},    {"bool", "float", FC_F64},
        {"float", "complex", FC_C128}, {"int", "complex", FC_C128},   {"bool", "complex", FC_C128},
        {"complex", "complex", FC_C128},
    };
    fc_scope *s = fc_scope_open(ctx);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        binary_fn fns[2] = {fc_add, fc_mul};
        for (int k = 0; k < 2; k++) {
            fc_array *ab = fns[k](weak_of_kind(cases[i].a), weak_of_kind(cases[i].b));
            fc_array *ba = fns[k](weak_of_kind(cases[i].b), weak_of_kind(cases[i].a));
            char what[128];
            snprintf(what, sizeof what, "%s(weak %s, weak %s)", k ? "mul" : "add", cases[i].a,
                     cases[i].b);
            cr_expect(check_result(ab, (int)cases[i].want, what));
            cr_expect(check_result(ba, (int)cases[i].want, what));
            cr_expect(fc_array_is_weak(ab), "%s must stay weak", what);
            cr_expect(fc_array_is_weak(ba), "%s must stay weak", what);
            cr_expect_eq(fc_array_ndim(ab), 0);
        }
    }
    /* ...and a weak result still yields to a strong array afterwards: (1 + 1) + i8 -> i8. */
    fc_array *two = fc_add(fc_i64(ctx, 1), fc_i64(ctx, 1));
    cr_expect(check_result(fc_add(fc_ones(ctx, FC_I8, FC_SHAPE(2)), two), FC_I8, "i8 + (1 + 1)"));
    fc_array *f = fc_mul(fc_f64(ctx, 2.0), fc_i64(ctx, 3));
    cr_expect(check_result(fc_add(fc_ones(ctx, FC_F16, FC_SHAPE(2)), f), FC_F16,
                           "f16 + (2.0 * 3)"));
    fc_scope_close(s);
}

/* ---- reductions ----------------------------------------------------------------------------- */

static fc_array *reduce_by_name(const char *op, fc_array *a) {
    if (strcmp(op, "sum") == 0) return fc_sum(a, FC_ALL, false);
    if (strcmp(op, "prod") == 0) return fc_prod(a, FC_ALL, false);
    if (strcmp(op, "mean") == 0) return fc_mean(a, FC_ALL, false);
    if (strcmp(op, "max") == 0) return fc_max(a, FC_ALL, false);
    if (strcmp(op, "min") == 0) return fc_min(a, FC_ALL, false);
    if (strcmp(op, "any") == 0) return fc_any(a, FC_ALL, false);
    if (strcmp(op, "all") == 0) return fc_all(a, FC_ALL, false);
    if (strcmp(op, "var") == 0) return fc_var(a, FC_ALL, false, 0);
    if (strcmp(op, "std") == 0) return fc_std(a, FC_ALL, false, 0);
    if (strcmp(op, "norm_l2") == 0) return fc_norm(a, FC_ALL, false, FC_NORM_L2);
    if (strcmp(op, "norm_l1") == 0) return fc_norm(a, FC_ALL, false, FC_NORM_L1);
    if (strcmp(op, "norm_inf") == 0) return fc_norm(a, FC_ALL, false, FC_NORM_INF);
    if (strcmp(op, "argmax") == 0) return fc_argmax(a, FC_AXIS_NONE, false);
    if (strcmp(op, "argmin") == 0) return fc_argmin(a, FC_AXIS_NONE, false);
    return NULL;
}

Test(promotion, reductions_table, .init = setup, .fini = teardown) {
    FILE *f = open_table("promotion_reduce.txt");
    char line[256], *w[8], what[128];
    int n, lines = 0, bad = 0;
    while ((n = next_line(f, line, sizeof line, w, 8)) >= 0) {
        cr_assert_eq(n, 3, "malformed line %d", lines);
        int t = parse_dtype(w[1]), want = parse_dtype(w[2]);
        cr_assert(t >= 0 && want >= -1, "bad line %d", lines);
        fc_scope *s = fc_scope_open(ctx);
        fc_array *a = fc_ones(ctx, (fc_dtype)t, FC_SHAPE(3, 2));
        fc_array *r = reduce_by_name(w[0], a);
        cr_assert_not_null(r, "unknown reduction %s", w[0]);
        snprintf(what, sizeof what, "%s(%s)", w[0], names[t]);
        if (!check_result(r, want, what)) bad++;
        else if (want >= 0) cr_expect_eq(fc_array_ndim(r), 0, "%s over every axis is 0-d", what);
        /* The dtype does not depend on which axes are reduced (one axis, keepdims). */
        if (want >= 0 && strncmp(w[0], "arg", 3) != 0) {
            fc_array *r1 = NULL;
            if (strcmp(w[0], "sum") == 0) r1 = fc_sum(a, FC_AXES(1), true);
            else if (strcmp(w[0], "mean") == 0) r1 = fc_mean(a, FC_AXES(0), true);
            else if (strcmp(w[0], "var") == 0) r1 = fc_var(a, FC_AXES(-1), false, 1);
            if (r1 && !check_result(r1, want, what)) bad++;
        }
        fc_scope_close(s);
        lines++;
    }
    fclose(f);
    cr_expect_eq(lines, 14 * FC_DTYPE_COUNT);
    cr_expect_eq(bad, 0, "%d reduction dtypes differ from NumPy", bad);
}

Test(promotion, reduction_spot_checks, .init = setup, .fini = teardown) {
    static const struct { const char *op; fc_dtype in, want; } cases[] = {
        {"sum", FC_I8, FC_I64},     {"sum", FC_U8, FC_U64},     {"sum", FC_BOOL, FC_I64},
        {"sum", FC_F16, FC_F16},    {"mean", FC_I8, FC_F64},    {"var", FC_C64, FC_F32},
        {"norm_l2", FC_I8, FC_F64}, {"argmax", FC_F32, FC_I64}, {"any", FC_F64, FC_BOOL},
        {"prod", FC_U16, FC_U64},   {"max", FC_BOOL, FC_BOOL},  {"std", FC_C128, FC_F64},
    };
    fc_scope *s = fc_scope_open(ctx);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char what[64];
        snprintf(what, sizeof what, "%s(%s)", cases[i].op, names[cases[i].in]);
        fc_array *r = reduce_by_name(cases[i].op, fc_ones(ctx, cases[i].in, FC_SHAPE(4)));
        cr_expect(check_result(r, (int)cases[i].want, what));
    }
    fc_scope_close(s);
}

Test(promotion, cast_gives_the_dtype_asked_for, .init = setup, .fini = teardown) {
    fc_scope *s = fc_scope_open(ctx);
    for (int from = 0; from < FC_DTYPE_COUNT; from++)
        for (int to = 0; to < FC_DTYPE_COUNT; to++) {
            char what[64];
            snprintf(what, sizeof what, "cast(%s -> %s)", names[from], names[to]);
            fc_array *r = fc_cast(fc_ones(ctx, (fc_dtype)from, FC_SHAPE(2)), (fc_dtype)to);
            cr_expect(check_result(r, to, what));
        }
    /* Casting a weak scalar to another dtype makes it strong (np.float32(1.5)). */
    fc_array *w = fc_cast(fc_f64(ctx, 1.5), FC_F32);
    cr_expect(!fc_array_is_weak(w), "cast of a weak scalar is strong");
    cr_expect_eq(fc_array_dtype(w), FC_F32);
    cr_expect(check_result(fc_add(w, fc_ones(ctx, FC_F16, FC_SHAPE(2))), FC_F32,
                           "f32(1.5) + f16 array"));
    fc_scope_close(s);
}
