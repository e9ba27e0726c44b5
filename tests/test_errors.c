/*
 * test_errors.c - bad input gives an error status and a message naming the op, the shapes and
 * the dtypes; NULL handles never crash; arrays of two contexts do not mix; poison propagates
 * and keeps the first failure's message.
 */
#include <criterion/criterion.h>
#include <fusec.h>

#include <ctype.h>
#include <math.h>
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

/* Whether `needle` occurs in `msg`, ignoring spaces in both ("[2, 3]" matches "[2,3]"). */
static bool mentions(const char *msg, const char *needle) {
    char a[2048], b[256];
    size_t n = 0;
    for (const char *p = msg; *p && n + 1 < sizeof a; p++)
        if (!isspace((unsigned char)*p)) a[n++] = *p;
    a[n] = '\0';
    n = 0;
    for (const char *p = needle; *p && n + 1 < sizeof b; p++)
        if (!isspace((unsigned char)*p)) b[n++] = *p;
    b[n] = '\0';
    return strstr(a, b) != NULL;
}

/* Checks that r failed with `want` and that its message (and the context's) mentions every
 * word in `words` (NULL-terminated; "a|b" accepts either). */
static bool failed_naming(fc_array *r, fc_status want, const char *what, const char *const *words) {
    fc_status st = fc_array_status(r);
    if (st != want) {
        cr_log_error("%s: expected status %s, got %s", what, fc_strerror(want), fc_strerror(st));
        return false;
    }
    const char *msg = fc_array_errmsg(r);
    if (!msg || !*msg) {
        cr_log_error("%s: poisoned array without a message", what);
        return false;
    }
    bool ok = true;
    for (int i = 0; words[i]; i++) {
        char alt[128];
        snprintf(alt, sizeof alt, "%s", words[i]);
        bool any = false;
        for (char *tok = strtok(alt, "|"); tok; tok = strtok(NULL, "|")) any |= mentions(msg, tok);
        if (!any) {
            cr_log_error("%s: message \"%s\" does not mention %s", what, msg, words[i]);
            ok = false;
        }
    }
    return ok;
}
#define NAMES(...) ((const char *const[]){__VA_ARGS__, NULL})

static fc_array *ones(fc_dtype t, fc_shape s) { return fc_ones(ctx, t, s); }

/* ---- shapes ---------------------------------------------------------------------------------- */

typedef fc_array *(*binary_fn)(fc_array *, fc_array *);

Test(errors, shape_mismatch_in_every_binary_op_class, .init = setup, .fini = teardown) {
    /* One op of each dtype rule; the message must name op, both shapes and the dtypes. */
    static const struct { binary_fn fn; const char *name; fc_dtype a, b; } ops[] = {
        {fc_add, "add", FC_F32, FC_F32},
        {fc_sub, "subtract|sub", FC_I32, FC_F64},
        {fc_div, "divide|div", FC_I16, FC_I16},
        {fc_floordiv, "floor_divide|floordiv", FC_F32, FC_I8},
        {fc_pow, "power|pow", FC_F64, FC_F64},
        {fc_arctan2, "arctan2", FC_F32, FC_F16},
        {fc_maximum, "maximum", FC_U8, FC_I8},
        {fc_less, "less", FC_F32, FC_I64},
        {fc_logical_and, "logical_and", FC_BOOL, FC_F32},
        {fc_bitwise_and, "bitwise_and", FC_I32, FC_U16},
        {fc_left_shift, "left_shift", FC_I64, FC_I64},
    };
    fc_scope *s = fc_scope_open(ctx);
    int bad = 0;
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        fc_array *r = ops[i].fn(ones(ops[i].a, FC_SHAPE(2, 3)), ones(ops[i].b, FC_SHAPE(4, 3)));
        if (!failed_naming(r, FC_ERR_SHAPE, ops[i].name,
                           NAMES(ops[i].name, "[2, 3]", "[4, 3]", fc_dtype_name(ops[i].a),
                                 fc_dtype_name(ops[i].b))))
            bad++;
        cr_expect(mentions(fc_errmsg(ctx), "[4, 3]"), "the context's message is set too: %s",
                  fc_errmsg(ctx));
    }
    fc_array *r = fc_where(ones(FC_BOOL, FC_SHAPE(5)), ones(FC_F32, FC_SHAPE(2, 3)),
                           ones(FC_F32, FC_SHAPE(3)));
    if (!failed_naming(r, FC_ERR_SHAPE, "where", NAMES("where", "[5]", "[2, 3]"))) bad++;
    r = fc_clip(ones(FC_F32, FC_SHAPE(4)), ones(FC_F32, FC_SHAPE(3)), ones(FC_F32, FC_SHAPE(4)));
    if (!failed_naming(r, FC_ERR_SHAPE, "clip", NAMES("clip", "[4]", "[3]"))) bad++;
    r = fc_matmul(ones(FC_F32, FC_SHAPE(2, 3)), ones(FC_F64, FC_SHAPE(4, 5)));
    if (!failed_naming(r, FC_ERR_SHAPE, "matmul", NAMES("matmul", "[2, 3]", "[4, 5]"))) bad++;
    cr_expect_eq(bad, 0);
    fc_scope_close(s);
}

Test(errors, reshape_and_broadcast_to, .init = setup, .fini = teardown) {
    fc_scope *s = fc_scope_open(ctx);
    fc_array *x = ones(FC_F32, FC_SHAPE(2, 3, 4));
    cr_expect(failed_naming(fc_reshape(x, FC_SHAPE(5, 5)), FC_ERR_SHAPE, "reshape",
                            NAMES("reshape", "[2, 3, 4]", "[5, 5]")), "reshape");
    cr_expect(failed_naming(fc_reshape(x, FC_SHAPE(-1, -1, 2)), FC_ERR_SHAPE, "reshape -1 -1",
                            NAMES("reshape", "[2, 3, 4]")), "reshape -1 -1");
    cr_expect(failed_naming(fc_broadcast_to(x, FC_SHAPE(2, 5, 4)), FC_ERR_SHAPE, "broadcast_to",
                            NAMES("broadcast_to", "[2, 3, 4]", "[2, 5, 4]")), "broadcast_to");
    cr_expect(failed_naming(fc_broadcast_to(x, FC_SHAPE(3, 4)), FC_ERR_SHAPE, "broadcast_to",
                            NAMES("broadcast_to", "[2, 3, 4]", "[3, 4]")), "broadcast_to");
    fc_scope_close(s);
}

/* ---- axes ------------------------------------------------------------------------------------ */

Test(errors, bad_axes, .init = setup, .fini = teardown) {
    fc_scope *s = fc_scope_open(ctx);
    fc_array *x = ones(FC_F32, FC_SHAPE(2, 3, 4));
    int bad = 0;
#define AXIS_ERR(expr, op)                                                                       \
    do {                                                                                         \
        if (!failed_naming((expr), FC_ERR_AXIS, #expr, NAMES(op, "[2, 3, 4]"))) bad++;            \
    } while (0)
    AXIS_ERR(fc_sum(x, FC_AXES(3), false), "sum");
    AXIS_ERR(fc_sum(x, FC_AXES(-4), false), "sum");
    AXIS_ERR(fc_sum(x, FC_AXES(1, 1), false), "sum");
    AXIS_ERR(fc_prod(x, FC_AXES(0, -3), true), "prod");
    AXIS_ERR(fc_mean(x, FC_AXES(7), false), "mean");
    AXIS_ERR(fc_max(x, FC_AXES(2, 2), false), "max");
    AXIS_ERR(fc_min(x, FC_AXES(-5), false), "min");
    AXIS_ERR(fc_any(x, FC_AXES(3), false), "any");
    AXIS_ERR(fc_all(x, FC_AXES(0, 0), false), "all");
    AXIS_ERR(fc_var(x, FC_AXES(3), false, 0), "var");
    AXIS_ERR(fc_std(x, FC_AXES(-1, 2), false, 1), "std");
    AXIS_ERR(fc_norm(x, FC_AXES(5), false, FC_NORM_L2), "norm");
    AXIS_ERR(fc_argmax(x, 3, false), "argmax");
    AXIS_ERR(fc_argmin(x, -4, true), "argmin");
    AXIS_ERR(fc_expand_dims(x, 4), "expand_dims");
    AXIS_ERR(fc_expand_dims(x, -5), "expand_dims");
    AXIS_ERR(fc_squeeze(x, FC_AXES(3)), "squeeze");
    AXIS_ERR(fc_flip(x, FC_AXES(3)), "flip");
    AXIS_ERR(fc_flip(x, FC_AXES(0, -3)), "flip");
    AXIS_ERR(fc_permute(x, FC_AXES(0, 1, 1)), "transpose|permute");
    AXIS_ERR(fc_permute(x, FC_AXES(0, 1, 3)), "transpose|permute");
    fc_array *pair[2] = {x, x};
    AXIS_ERR(fc_concatenate(ctx, pair, 2, 3), "concatenate");
    AXIS_ERR(fc_concatenate(ctx, pair, 2, -4), "concatenate");
    AXIS_ERR(fc_stack(ctx, pair, 2, 4), "stack");
#undef AXIS_ERR
    /* Squeezing an axis that is not 1 long: NumPy's ValueError. */
    fc_array *r = fc_squeeze(x, FC_AXES(1));
    cr_expect(fc_array_status(r) == FC_ERR_SHAPE || fc_array_status(r) == FC_ERR_AXIS,
              "squeeze of a size-3 axis: %s", fc_strerror(fc_array_status(r)));
    cr_expect(mentions(fc_array_errmsg(r), "squeeze"), "%s", fc_array_errmsg(r));
    cr_expect_eq(bad, 0);
    fc_scope_close(s);
}

/* ---- dtypes ---------------------------------------------------------------------------------- */

Test(errors, unsupported_dtypes, .init = setup, .fini = teardown) {
    fc_scope *s = fc_scope_open(ctx);
    fc_array *f = ones(FC_F32, FC_SHAPE(3)), *b = ones(FC_BOOL, FC_SHAPE(3));
    fc_array *c = ones(FC_C64, FC_SHAPE(3)), *i = ones(FC_I32, FC_SHAPE(3));
    int bad = 0;
#define DTYPE_ERR(expr, ...)                                                                     \
    do {                                                                                         \
        if (!failed_naming((expr), FC_ERR_DTYPE, #expr, NAMES(__VA_ARGS__))) bad++;               \
    } while (0)
    DTYPE_ERR(fc_bitwise_and(f, f), "bitwise_and", "f32");
    DTYPE_ERR(fc_bitwise_or(i, f), "bitwise_or", "i32", "f32");
    DTYPE_ERR(fc_bitwise_not(f), "invert|bitwise_not", "f32");
    DTYPE_ERR(fc_left_shift(f, i), "left_shift", "f32");
    DTYPE_ERR(fc_sub(b, b), "subtract|sub", "bool");
    DTYPE_ERR(fc_negative(b), "negative", "bool");
    DTYPE_ERR(fc_arctan2(c, f), "arctan2", "c64");
    DTYPE_ERR(fc_cbrt(c), "cbrt", "c64");
    DTYPE_ERR(fc_floor(c), "floor", "c64");
    DTYPE_ERR(fc_floordiv(c, c), "floor_divide|floordiv", "c64");
    DTYPE_ERR(fc_mod(f, c), "remainder|mod", "c64");
#undef DTYPE_ERR
    cr_expect_eq(bad, 0);
    fc_scope_close(s);
}

Test(errors, bad_dtype_enums, .init = setup, .fini = teardown) {
    fc_scope *s = fc_scope_open(ctx);
    const fc_dtype bad_types[] = {FC_DTYPE_COUNT, (fc_dtype)-1, (fc_dtype)200};
    /* The header pins no code for a dtype outside the enum: "out of its domain" (INVALID)
     * and "a dtype the op does not support" (DTYPE) both describe it. */
#define BAD_DTYPE(expr)                                                                          \
    do {                                                                                         \
        fc_status st_ = fc_array_status(expr);                                                   \
        cr_expect(st_ == FC_ERR_INVALID || st_ == FC_ERR_DTYPE, "%s with dtype %d: %s", #expr,   \
                  (int)t, fc_strerror(st_));                                                     \
    } while (0)
    for (size_t k = 0; k < sizeof bad_types / sizeof bad_types[0]; k++) {
        fc_dtype t = bad_types[k];
        float data[2] = {1.5f, 2.5f};
        BAD_DTYPE(fc_zeros(ctx, t, FC_SHAPE(2)));
        BAD_DTYPE(fc_ones(ctx, t, FC_SHAPE(2)));
        BAD_DTYPE(fc_empty(ctx, t, FC_SHAPE(2)));
        BAD_DTYPE(fc_full(ctx, t, FC_SHAPE(2), 1.0));
        BAD_DTYPE(fc_scalar(ctx, t, 1.0));
        BAD_DTYPE(fc_arange(ctx, t, 0, 4, 1));
        BAD_DTYPE(fc_linspace(ctx, t, 0, 1, 4, true));
        BAD_DTYPE(fc_eye(ctx, t, 2, 2, 0));
        BAD_DTYPE(fc_random_uniform(ctx, t, FC_SHAPE(2), 1));
        BAD_DTYPE(fc_from_host(ctx, t, FC_SHAPE(2), data));
        BAD_DTYPE(fc_cast(ones(FC_F32, FC_SHAPE(2)), t));
        cr_expect_null(fc_dtype_name(t));
        cr_expect_eq(fc_dtype_size(t), 0);
    }
#undef BAD_DTYPE
    fc_dtype out = FC_I8;
    cr_expect_eq(fc_dtype_from_name("f128", &out), FC_ERR_INVALID);
    cr_expect_eq(fc_dtype_from_name("", &out), FC_ERR_INVALID);
    cr_expect_eq(fc_dtype_from_name("F32", &out), FC_ERR_INVALID);
    cr_expect_eq(out, FC_I8);
    /* Valid dtypes an op does not take. */
    fc_status st = fc_array_status(fc_random_uniform(ctx, FC_I32, FC_SHAPE(2), 1));
    cr_expect(st == FC_ERR_DTYPE || st == FC_ERR_INVALID, "random_uniform(i32): %s",
              fc_strerror(st));
    st = fc_array_status(fc_full_complex(ctx, FC_F32, FC_SHAPE(2), 1, 2));
    cr_expect(st == FC_ERR_DTYPE || st == FC_ERR_INVALID, "full_complex(f32): %s",
              fc_strerror(st));
    fc_scope_close(s);
}

/* ---- extents --------------------------------------------------------------------------------- */

Test(errors, bad_shapes, .init = setup, .fini = teardown) {
    fc_scope *s = fc_scope_open(ctx);
    fc_shape neg = FC_SHAPE(2, -3);
    fc_shape nine = {9, {1, 1, 1, 1, 1, 1, 1, 1}};
    fc_shape minus = {-1, {0}};
    const fc_shape bad[] = {neg, nine, minus};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        fc_status st = fc_array_status(fc_zeros(ctx, FC_F32, bad[k]));
        cr_expect(st == FC_ERR_SHAPE || st == FC_ERR_INVALID, "zeros, case %zu: %s", k,
                  fc_strerror(st));
        cr_expect_neq(fc_array_status(fc_ones(ctx, FC_I8, bad[k])), FC_OK);
        cr_expect_neq(fc_array_status(fc_full(ctx, FC_F64, bad[k], 2)), FC_OK);
        cr_expect_neq(fc_array_status(fc_random_uniform(ctx, FC_F32, bad[k], 3)), FC_OK);
        float data[8] = {1, 2, 3, 4, 5, 6, 7, 8};
        cr_expect_neq(fc_array_status(fc_from_host(ctx, FC_F32, bad[k], data)), FC_OK);
        cr_expect_neq(fc_array_status(fc_broadcast_to(ones(FC_F32, FC_SHAPE(1)), bad[k])), FC_OK);
        cr_expect_neq(fc_array_status(fc_reshape(ones(FC_F32, FC_SHAPE(1)), bad[k])), FC_OK);
    }
    cr_expect_neq(fc_array_status(fc_reshape(ones(FC_F32, FC_SHAPE(6)), FC_SHAPE(-2, -3))), FC_OK);
    /* More than 8 dims through expand_dims, and through indexing with new axes. */
    fc_array *eight = ones(FC_F32, FC_SHAPE(1, 2, 1, 2, 1, 2, 1, 2));
    cr_expect_neq(fc_array_status(fc_expand_dims(eight, 0)), FC_OK);
    cr_expect_neq(fc_array_status(fc_slice(eight, FC_NEWAXIS, FC_ELLIPSIS)), FC_OK);
    fc_array *eights[2] = {eight, eight};
    cr_expect_neq(fc_array_status(fc_stack(ctx, eights, 2, 0)), FC_OK);
    /* Other creation arguments out of their domain. */
    cr_expect_neq(fc_array_status(fc_arange(ctx, FC_F32, 0, 10, 0)), FC_OK, "zero step");
    cr_expect_neq(fc_array_status(fc_arange(ctx, FC_F32, 0, 10, INFINITY)), FC_OK);
    cr_expect_neq(fc_array_status(fc_linspace(ctx, FC_F32, 0, 1, -1, true)), FC_OK);
    cr_expect_neq(fc_array_status(fc_eye(ctx, FC_F32, -1, 2, 0)), FC_OK);
    cr_expect_neq(fc_array_status(fc_full(ctx, FC_I32, FC_SHAPE(2), NAN)), FC_OK,
                  "NaN to integer");
    fc_scope_close(s);
}

Test(errors, pad_errors, .init = setup, .fini = teardown) {
    fc_scope *s = fc_scope_open(ctx);
    fc_array *x = ones(FC_F32, FC_SHAPE(3, 4));
    /* One reflection only: reflect reaches len - 1 elements out, symmetric len. */
    const int64_t too_wide[2][2] = {{0, 3}, {1, 1}}, wider[2][2] = {{0, 4}, {1, 1}};
    const int64_t neg[1][2] = {{-1, 2}};
    cr_expect(failed_naming(fc_pad(x, 2, too_wide, FC_PAD_REFLECT, 0), FC_ERR_SHAPE, "reflect",
                            NAMES("pad", "[3, 4]")), "reflect");
    cr_expect(failed_naming(fc_pad(x, 2, wider, FC_PAD_SYMMETRIC, 0), FC_ERR_SHAPE,
                            "symmetric", NAMES("pad", "[3, 4]")), "symmetric");
    const int64_t one[1][2] = {{1, 1}};
    cr_expect(failed_naming(fc_pad(ones(FC_F32, FC_SHAPE(1, 4)), 1, one, FC_PAD_REFLECT, 0),
                            FC_ERR_SHAPE, "reflect of a 1-long axis", NAMES("pad", "[1, 4]")),
              "reflect of a 1-long axis");
    cr_expect_neq(fc_array_status(fc_pad(x, 1, neg, FC_PAD_CONSTANT, 0)), FC_OK);
    cr_expect_neq(fc_array_status(fc_pad(x, 1, one, (fc_pad_mode)17, 0)), FC_OK, "bad mode");
    /* Edge padding of an empty axis has no edge to copy (NumPy raises too). */
    cr_expect_neq(fc_array_status(fc_pad(ones(FC_F32, FC_SHAPE(0, 4)), 1, one, FC_PAD_EDGE, 0)),
                  FC_OK);
    fc_scope_close(s);
}

Test(errors, concatenate_errors, .init = setup, .fini = teardown) {
    fc_scope *s = fc_scope_open(ctx);
    fc_array *a = ones(FC_F32, FC_SHAPE(2, 3)), *b = ones(FC_I8, FC_SHAPE(2, 4));
    fc_array *ab[2] = {a, b};
    cr_expect_neq(fc_array_status(fc_concatenate(ctx, ab, 0, 0)), FC_OK, "empty concatenate");
    cr_expect_neq(fc_array_status(fc_stack(ctx, ab, 0, 0)), FC_OK, "empty stack");
    cr_expect_neq(fc_array_status(fc_concatenate(ctx, ab, -1, 0)), FC_OK, "negative count");
    cr_expect(failed_naming(fc_concatenate(ctx, ab, 2, 0), FC_ERR_SHAPE, "concatenate",
                            NAMES("concatenate", "[2, 3]", "[2, 4]")), "concatenate");
    cr_expect(failed_naming(fc_stack(ctx, ab, 2, 0), FC_ERR_SHAPE, "stack",
                            NAMES("stack", "[2, 3]", "[2, 4]")), "stack");
    fc_scope_close(s);
}

/* ---- indexing -------------------------------------------------------------------------------- */

Test(errors, bad_slices, .init = setup, .fini = teardown) {
    fc_scope *s = fc_scope_open(ctx);
    fc_array *x = ones(FC_F32, FC_SHAPE(5, 6));
    cr_expect(failed_naming(fc_slice(x, FC_S(0, 4, 0)), FC_ERR_INDEX, "zero step",
                            NAMES("[5, 6]")), "zero step");
    cr_expect(failed_naming(fc_slice(x, FC_AT(5)), FC_ERR_INDEX, "index 5 of 5",
                            NAMES("5", "[5, 6]")), "index 5 of 5");
    cr_expect(failed_naming(fc_slice(x, FC_COLON, FC_AT(-7)), FC_ERR_INDEX, "index -7 of 6",
                            NAMES("-7", "[5, 6]")), "index -7 of 6");
    cr_expect(failed_naming(fc_slice(x, FC_AT(0), FC_AT(0), FC_AT(0)), FC_ERR_INDEX,
                            "too many indices", NAMES("[5, 6]")), "too many indices");
    cr_expect(failed_naming(fc_slice(x, FC_COLON, FC_COLON, FC_COLON), FC_ERR_INDEX,
                            "too many slices", NAMES("[5, 6]")), "too many slices");
    cr_expect(failed_naming(fc_slice(x, FC_ELLIPSIS, FC_AT(0), FC_ELLIPSIS), FC_ERR_INDEX,
                            "two ellipses", NAMES("[5, 6]")), "two ellipses");
    cr_expect(failed_naming(fc_slice(fc_scalar(ctx, FC_F32, 1), FC_AT(0)), FC_ERR_INDEX,
                            "index into 0-d", NAMES("[]")), "index into 0-d");
    fc_idx weird = {(fc_idx_kind)42, 0, 0, 0, NULL};
    cr_expect_neq(fc_array_status(fc_index(x, 1, &weird)), FC_OK, "bad entry kind");
    cr_expect_neq(fc_array_status(fc_index(x, -1, NULL)), FC_OK, "negative count");
    cr_expect_neq(fc_array_status(fc_index(x, 1, NULL)), FC_OK, "entries missing");
    fc_scope_close(s);
}

/* ---- results --------------------------------------------------------------------------------- */

Test(errors, read_and_to_host_bounds, .init = setup, .fini = teardown) {
    fc_scope *s = fc_scope_open(ctx);
    fc_array *x = fc_arange(ctx, FC_F32, 0, 10, 1);
    float buf[16];
    memset(buf, 0xA5, sizeof buf);
    cr_expect_eq(fc_read(x, buf, 8, 3), FC_ERR_INDEX, "[8, 11) of 10");
    cr_expect_eq(fc_read(x, buf, -1, 2), FC_ERR_INDEX, "negative offset");
    cr_expect_eq(fc_read(x, buf, 0, -1), FC_ERR_INDEX, "negative count");
    cr_expect_eq(fc_read(x, buf, 11, 0), FC_ERR_INDEX, "offset past the end");
    cr_expect_eq(fc_read(x, buf, INT64_MAX, 2), FC_ERR_INDEX, "offset + count overflows");
    unsigned char poison[sizeof buf];
    memset(poison, 0xA5, sizeof poison);
    cr_expect_eq(memcmp(buf, poison, sizeof buf), 0, "a failed read writes nothing");
    cr_expect_eq(fc_to_host(x, buf, 10 * sizeof(float) - 1), FC_ERR_INVALID, "1 byte short");
    cr_expect_eq(fc_to_host(x, buf, 0), FC_ERR_INVALID);
    cr_expect_eq(memcmp(buf, poison, sizeof buf), 0, "a failed to_host writes nothing");
    /* In range works (the host backend evaluates). */
    cr_expect_eq(fc_read(x, buf, 7, 3), FC_OK, "%s", fc_errmsg(ctx));
    cr_expect_eq(buf[0], 7.0f);
    cr_expect_eq(buf[2], 9.0f);
    cr_expect_eq(fc_read(x, buf, 10, 0), FC_OK, "an empty read at the end is fine");
    fc_scope_close(s);
}

/* ---- NULL handles ---------------------------------------------------------------------------- */

typedef fc_array *(*unary_fn)(fc_array *);
static const unary_fn unary_ops[] = {
    fc_negative, fc_abs,   fc_sign,  fc_sqrt,  fc_cbrt,     fc_square,  fc_reciprocal, fc_exp,
    fc_exp2,     fc_expm1, fc_log,   fc_log2,  fc_log10,    fc_log1p,   fc_sin,        fc_cos,
    fc_tan,      fc_arcsin, fc_arccos, fc_arctan, fc_sinh,  fc_cosh,    fc_tanh,       fc_arcsinh,
    fc_arccosh,  fc_arctanh, fc_floor, fc_ceil, fc_rint,    fc_trunc,   fc_isnan,      fc_isinf,
    fc_isfinite, fc_logical_not, fc_bitwise_not, fc_real, fc_imag, fc_conj, fc_angle,
    fc_transpose, fc_zeros_like, fc_ones_like, fc_empty_like,
};
static const binary_fn binary_ops[] = {
    fc_add, fc_sub, fc_mul, fc_div, fc_floordiv, fc_mod, fc_pow, fc_arctan2, fc_maximum,
    fc_minimum, fc_fmax, fc_fmin, fc_less, fc_less_equal, fc_greater, fc_greater_equal, fc_equal,
    fc_not_equal, fc_logical_and, fc_logical_or, fc_logical_xor, fc_bitwise_and, fc_bitwise_or,
    fc_bitwise_xor, fc_left_shift, fc_right_shift, fc_matmul,
};

/* A result is acceptable for a NULL argument if it is NULL or poisoned with FC_ERR_NULL. */
static bool null_result(fc_array *r) {
    return r == NULL || fc_array_status(r) == FC_ERR_NULL;
}

Test(errors, null_handles_in_ops, .init = setup, .fini = teardown) {
    fc_scope *s = fc_scope_open(ctx);
    fc_array *x = ones(FC_F32, FC_SHAPE(2, 2));
    for (size_t i = 0; i < sizeof unary_ops / sizeof unary_ops[0]; i++)
        cr_expect(null_result(unary_ops[i](NULL)), "unary op %zu given NULL", i);
    for (size_t i = 0; i < sizeof binary_ops / sizeof binary_ops[0]; i++) {
        cr_expect(null_result(binary_ops[i](NULL, NULL)), "binary op %zu (NULL, NULL)", i);
        cr_expect(null_result(binary_ops[i](x, NULL)), "binary op %zu (x, NULL)", i);
        cr_expect(null_result(binary_ops[i](NULL, x)), "binary op %zu (NULL, x)", i);
    }
    cr_expect(null_result(fc_where(NULL, x, x)));
    cr_expect(null_result(fc_where(x, NULL, x)));
    cr_expect(null_result(fc_clip(x, x, NULL)));
    cr_expect(null_result(fc_cast(NULL, FC_F32)));
    cr_expect(null_result(fc_full_like(NULL, 1.0)));
    cr_expect(null_result(fc_sum(NULL, FC_ALL, false)));
    cr_expect(null_result(fc_prod(NULL, FC_ALL, false)));
    cr_expect(null_result(fc_mean(NULL, FC_ALL, false)));
    cr_expect(null_result(fc_max(NULL, FC_ALL, false)));
    cr_expect(null_result(fc_min(NULL, FC_ALL, false)));
    cr_expect(null_result(fc_any(NULL, FC_ALL, false)));
    cr_expect(null_result(fc_all(NULL, FC_ALL, false)));
    cr_expect(null_result(fc_var(NULL, FC_ALL, false, 0)));
    cr_expect(null_result(fc_std(NULL, FC_ALL, false, 0)));
    cr_expect(null_result(fc_norm(NULL, FC_ALL, false, FC_NORM_L2)));
    cr_expect(null_result(fc_argmax(NULL, 0, false)));
    cr_expect(null_result(fc_argmin(NULL, FC_AXIS_NONE, false)));
    cr_expect(null_result(fc_reshape(NULL, FC_SHAPE(4))));
    cr_expect(null_result(fc_permute(NULL, FC_AXES(1, 0))));
    cr_expect(null_result(fc_broadcast_to(NULL, FC_SHAPE(2, 2))));
    cr_expect(null_result(fc_expand_dims(NULL, 0)));
    cr_expect(null_result(fc_squeeze(NULL, FC_ALL)));
    cr_expect(null_result(fc_flip(NULL, FC_ALL)));
    cr_expect(null_result(fc_slice(NULL, FC_COLON)));
    const int64_t w[1][2] = {{1, 1}};
    cr_expect(null_result(fc_pad(NULL, 1, w, FC_PAD_CONSTANT, 0)));
    cr_expect(null_result(fc_pad(x, 1, NULL, FC_PAD_CONSTANT, 0)));
    fc_array *with_null[2] = {x, NULL};
    cr_expect(null_result(fc_concatenate(ctx, NULL, 2, 0)));
    cr_expect(null_result(fc_concatenate(ctx, with_null, 2, 0)));
    cr_expect(null_result(fc_stack(ctx, with_null, 2, 0)));
    fc_array *pair[2] = {x, x};
    cr_expect(null_result(fc_concatenate(NULL, pair, 2, 0)) ||
              fc_array_status(fc_concatenate(NULL, pair, 2, 0)) == FC_OK,
              "a NULL context either fails or is taken from the arrays");
    cr_expect_eq(fc_array_status(x), FC_OK, "x is untouched");
    fc_scope_close(s);
}

Test(errors, null_handles_in_creation_and_queries, .init = setup, .fini = teardown) {
    cr_expect_null(fc_zeros(NULL, FC_F32, FC_SHAPE(2)));
    cr_expect_null(fc_ones(NULL, FC_F32, FC_SHAPE(2)));
    cr_expect_null(fc_empty(NULL, FC_F32, FC_SHAPE(2)));
    cr_expect_null(fc_full(NULL, FC_F32, FC_SHAPE(2), 1));
    cr_expect_null(fc_full_complex(NULL, FC_C64, FC_SHAPE(2), 1, 2));
    cr_expect_null(fc_arange(NULL, FC_F32, 0, 3, 1));
    cr_expect_null(fc_linspace(NULL, FC_F32, 0, 1, 3, true));
    cr_expect_null(fc_eye(NULL, FC_F32, 2, 2, 0));
    cr_expect_null(fc_random_uniform(NULL, FC_F32, FC_SHAPE(2), 1));
    cr_expect_null(fc_from_host(NULL, FC_F32, FC_SHAPE(1), "abcd"));
    cr_expect_null(fc_f64(NULL, 1));
    cr_expect_null(fc_i64(NULL, 1));
    cr_expect_null(fc_c128(NULL, 1, 2));
    cr_expect_null(fc_bool(NULL, true));
    cr_expect_null(fc_scalar(NULL, FC_F32, 1));
    cr_expect_null(fc_scope_open(NULL));
    cr_expect_null(fc_keep(NULL));
    fc_scope_close(NULL);
    fc_release(NULL);
    fc_ctx_destroy(NULL);
    fc_clear_error(NULL);
    fc_free(NULL, NULL);
    fc_free(ctx, NULL);
    cr_expect_not_null(fc_errmsg(NULL));
    cr_expect_eq(fc_ctx_create(NULL, NULL), FC_ERR_NULL);

    /* data == NULL is allowed only for a size-0 shape */
    fc_scope *s = fc_scope_open(ctx);
    cr_expect_eq(fc_array_status(fc_from_host(ctx, FC_F32, FC_SHAPE(3), NULL)), FC_ERR_NULL);
    cr_expect_eq(fc_array_status(fc_from_host(ctx, FC_F32, FC_SHAPE(0, 3), NULL)), FC_OK);
    fc_scope_close(s);

    cr_expect_eq(fc_array_status(NULL), FC_ERR_NULL);
    cr_expect_not_null(fc_array_errmsg(NULL));
    cr_expect_null(fc_array_ctx(NULL));
    cr_expect_eq(fc_array_ndim(NULL), 0);
    cr_expect_eq(fc_array_shape(NULL).ndim, 0);
    cr_expect_eq(fc_array_size(NULL), 0);
    cr_expect(!fc_array_is_weak(NULL));
    fc_dtype t;
    cr_expect_eq(fc_dtype_from_name(NULL, &t), FC_ERR_NULL);
    cr_expect_eq(fc_dtype_from_name("f32", NULL), FC_ERR_NULL);
    cr_expect_eq(fc_promote_types(FC_F32, FC_F32, NULL), FC_ERR_NULL);
}

Test(errors, null_handles_in_eval_read_hash_program, .init = setup, .fini = teardown) {
    fc_scope *s = fc_scope_open(ctx);
    fc_array *x = ones(FC_F32, FC_SHAPE(2));
    fc_array *with_null[2] = {x, NULL};
    float buf[2];
    cr_expect_eq(fc_eval(NULL, &x, 1), FC_ERR_NULL);
    cr_expect_eq(fc_eval(ctx, NULL, 1), FC_ERR_NULL);
    cr_expect_eq(fc_eval(ctx, with_null, 2), FC_ERR_NULL);
    cr_expect_neq(fc_eval(ctx, &x, -1), FC_OK);
    cr_expect_eq(fc_read(NULL, buf, 0, 1), FC_ERR_NULL);
    cr_expect_eq(fc_read(x, NULL, 0, 1), FC_ERR_NULL);
    cr_expect_eq(fc_to_host(NULL, buf, sizeof buf), FC_ERR_NULL);
    cr_expect_eq(fc_to_host(x, NULL, sizeof buf), FC_ERR_NULL);
    fc_hash h;
    cr_expect_eq(fc_graph_hash(NULL, 1, &h), FC_ERR_NULL);
    cr_expect_eq(fc_graph_hash(&x, 1, NULL), FC_ERR_NULL);
    cr_expect_eq(fc_graph_hash(with_null, 2, &h), FC_ERR_NULL);
    cr_expect_neq(fc_graph_hash(&x, -1, &h), FC_OK);

    fc_program *p = (fc_program *)&h; /* must be overwritten with NULL on failure */
    const char *text = "x = input f32 [4]\ny = x + 1\nout y\n";
    cr_expect_eq(fc_program_parse(NULL, text, strlen(text), NULL, &p), FC_ERR_NULL);
    cr_expect_null(p, "*out is NULL on failure");
    cr_expect_eq(fc_program_parse(ctx, NULL, 4, NULL, &p), FC_ERR_NULL);
    cr_expect_eq(fc_program_parse(ctx, text, strlen(text), NULL, NULL), FC_ERR_NULL);
    cr_expect_eq(fc_program_load(ctx, NULL, &p), FC_ERR_NULL);
    cr_expect_eq(fc_program_load(NULL, "x.fc", &p), FC_ERR_NULL);
    fc_program_destroy(NULL);
    (void)fc_program_num_inputs(NULL);
    (void)fc_program_num_outputs(NULL);
    (void)fc_program_num_symbols(NULL);
    cr_expect_null(fc_program_input_name(NULL, 0));
    cr_expect_null(fc_program_output_name(NULL, 0));
    cr_expect_null(fc_program_symbol_name(NULL, 0));
    (void)fc_program_input_dtype(NULL, 0);
    cr_expect_eq(fc_program_set_symbol(NULL, "n", 3), FC_ERR_NULL);
    fc_shape sh;
    cr_expect_eq(fc_program_input_shape(NULL, 0, &sh), FC_ERR_NULL);
    fc_array *outs[1];
    cr_expect_eq(fc_program_build(NULL, NULL, outs), FC_ERR_NULL);
    char *printed = NULL;
    cr_expect_eq(fc_program_print(NULL, &x, 1, NULL, &printed), FC_ERR_NULL);
    cr_expect_eq(fc_program_print(ctx, NULL, 1, NULL, &printed), FC_ERR_NULL);
    cr_expect_eq(fc_program_print(ctx, &x, 1, NULL, NULL), FC_ERR_NULL);
    cr_expect_null(printed);
    fc_scope_close(s);
}

/* ---- contexts -------------------------------------------------------------------------------- */

Test(errors, arrays_of_two_contexts_do_not_mix, .init = setup, .fini = teardown) {
    fc_ctx *other;
    fc_ctx_options opts = {0};
    opts.backend = FC_BACKEND_HOST;
    cr_assert_eq(fc_ctx_create(&other, &opts), FC_OK);
    fc_scope *s = fc_scope_open(ctx);
    fc_scope *so = fc_scope_open(other);
    fc_array *x = ones(FC_F32, FC_SHAPE(3)), *y = fc_ones(other, FC_F32, FC_SHAPE(3));
    cr_expect_eq(fc_array_status(fc_add(x, y)), FC_ERR_CONTEXT);
    cr_expect_eq(fc_array_status(fc_mul(y, x)), FC_ERR_CONTEXT);
    cr_expect_eq(fc_array_status(fc_add(x, fc_f64(other, 1.0))), FC_ERR_CONTEXT,
                 "a weak scalar of another context");
    cr_expect_eq(fc_array_status(fc_where(fc_less(x, x), x, y)), FC_ERR_CONTEXT);
    cr_expect_eq(fc_array_status(fc_clip(y, x, x)), FC_ERR_CONTEXT);
    cr_expect_eq(fc_array_status(fc_matmul(x, y)), FC_ERR_CONTEXT);
    fc_array *xy[2] = {x, y}, *yy[2] = {y, y};
    cr_expect_eq(fc_array_status(fc_concatenate(ctx, xy, 2, 0)), FC_ERR_CONTEXT);
    cr_expect_eq(fc_array_status(fc_concatenate(ctx, yy, 2, 0)), FC_ERR_CONTEXT,
                 "arrays of another context than the one named");
    cr_expect_eq(fc_array_status(fc_stack(other, xy, 2, 0)), FC_ERR_CONTEXT);
    cr_expect_eq(fc_eval(ctx, &y, 1), FC_ERR_CONTEXT, "evaluating another context's array");
    cr_expect_eq(fc_eval(ctx, xy, 2), FC_ERR_CONTEXT);
    fc_hash h;
    cr_expect_eq(fc_graph_hash(xy, 2, &h), FC_ERR_CONTEXT);
    char *text = NULL;
    cr_expect_eq(fc_program_print(ctx, &y, 1, NULL, &text), FC_ERR_CONTEXT);
    /* Each context still works on its own afterwards. */
    cr_expect_eq(fc_array_status(fc_add(x, x)), FC_OK);
    cr_expect_eq(fc_array_status(fc_add(y, y)), FC_OK);
    fc_scope_close(so);
    fc_scope_close(s);
    fc_ctx_destroy(other);
}

/* ---- poison ---------------------------------------------------------------------------------- */

Test(errors, poison_propagates_with_the_first_message, .init = setup, .fini = teardown) {
    fc_scope *s = fc_scope_open(ctx);
    fc_array *a = ones(FC_F32, FC_SHAPE(2, 3)), *b = ones(FC_F32, FC_SHAPE(3, 2));
    fc_array *first = fc_add(a, b);
    cr_assert_eq(fc_array_status(first), FC_ERR_SHAPE);
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", fc_array_errmsg(first));
    cr_expect(mentions(msg, "add"), "%s", msg);

    /* Every kind of op passes the poison on, with the first message. */
    fc_array *pair[2] = {first, a};
    const int64_t w[1][2] = {{1, 1}};
    fc_array *chain[] = {
        fc_exp(first),
        fc_sub(fc_ones(ctx, FC_BOOL, FC_SHAPE(3)), first), /* would also fail on its own */
        fc_sum(first, FC_AXES(7), false),                  /* would also fail on its own */
        fc_mean(first, FC_ALL, true),
        fc_argmax(first, 0, false),
        fc_reshape(first, FC_SHAPE(-1)),
        fc_transpose(first),
        fc_slice(first, FC_S(0, 1, 1)),
        fc_broadcast_to(first, FC_SHAPE(4, 2, 3)),
        fc_cast(first, FC_I8),
        fc_pad(first, 1, w, FC_PAD_EDGE, 0),
        fc_concatenate(ctx, pair, 2, 0),
        fc_matmul(a, first),
        fc_where(first, a, a),
        fc_zeros_like(first),
        fc_tanh(fc_mul(fc_exp(first), fc_f64(ctx, 0.5))),
    };
    for (size_t i = 0; i < sizeof chain / sizeof chain[0]; i++) {
        cr_expect_eq(fc_array_status(chain[i]), FC_ERR_SHAPE, "chain[%zu]: %s", i,
                     fc_strerror(fc_array_status(chain[i])));
        cr_expect_str_eq(fc_array_errmsg(chain[i]), msg, "chain[%zu] names the first failure",
                         i);
    }
    /* A later, unrelated failure changes the context's message, not the poison's. */
    fc_array *later = fc_bitwise_and(a, a);
    cr_expect_eq(fc_array_status(later), FC_ERR_DTYPE);
    fc_array *last = fc_add(chain[15], later);
    cr_expect_eq(fc_array_status(last), FC_ERR_SHAPE, "the first poisoned operand wins");
    cr_expect_str_eq(fc_array_errmsg(last), msg);
    cr_expect_str_eq(fc_array_errmsg(a), "", "a healthy array has no message");

    fc_array *last_two[2] = {a, last};
    cr_expect_eq(fc_eval(ctx, &last, 1), FC_ERR_SHAPE);
    cr_expect(mentions(fc_errmsg(ctx), "add"), "fc_eval sets the message: %s", fc_errmsg(ctx));
    cr_expect_eq(fc_eval(ctx, last_two, 2), FC_ERR_SHAPE);
    float buf[6];
    cr_expect_eq(fc_read(last, buf, 0, 1), FC_ERR_SHAPE);
    cr_expect_eq(fc_to_host(last, buf, sizeof buf), FC_ERR_SHAPE);
    fc_hash h;
    cr_expect_eq(fc_graph_hash(&last, 1, &h), FC_ERR_SHAPE);
    fc_scope_close(s);
}

Test(errors, clear_error, .init = setup, .fini = teardown) {
    fc_scope *s = fc_scope_open(ctx);
    cr_expect_str_eq(fc_errmsg(ctx), "", "a new context has no message");
    fc_array *r = fc_sub(ones(FC_BOOL, FC_SHAPE(2)), ones(FC_BOOL, FC_SHAPE(2)));
    cr_expect_neq(fc_array_status(r), FC_OK);
    cr_expect_str_neq(fc_errmsg(ctx), "");
    fc_clear_error(ctx);
    cr_expect_str_eq(fc_errmsg(ctx), "");
    cr_expect_str_neq(fc_array_errmsg(r), "", "the poison keeps its own message");
    fc_scope_close(s);
}

Test(errors, strerror_of_every_status) {
    const fc_status all[] = {
        FC_OK,           FC_ERR_NULL,  FC_ERR_INVALID, FC_ERR_SHAPE,       FC_ERR_AXIS,
        FC_ERR_DTYPE,    FC_ERR_INDEX, FC_ERR_NOMEM,   FC_ERR_PARSE,       FC_ERR_BACKEND,
        FC_ERR_IO,       FC_ERR_VALUE, FC_ERR_UNSUPPORTED, FC_ERR_CONTEXT, FC_ERR_UNBOUND,
    };
    const size_t n = sizeof all / sizeof all[0];
    for (size_t i = 0; i < n; i++) {
        const char *m = fc_strerror(all[i]);
        cr_assert_not_null(m);
        cr_expect_geq(strlen(m), 2, "status %d has a real description", all[i]);
        for (size_t j = 0; j < i; j++)
            cr_expect_str_neq(m, fc_strerror(all[j]), "statuses %d and %d read the same",
                              all[i], all[j]);
    }
    /* Unknown codes still give a string. */
    cr_expect_not_null(fc_strerror((fc_status)-99));
    cr_expect_not_null(fc_strerror((fc_status)5));
    cr_expect_gt(strlen(fc_strerror((fc_status)-99)), 0);
}
