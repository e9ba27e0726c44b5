/*
 * tests/test_shapes.c - shape arithmetic at the edges (issue 15, item 1): extents and element
 * counts that would overflow int64 are FC_ERR_SHAPE errors naming the op, never wrapped shapes,
 * empty results or out-of-bounds reads; slices follow Python's slice.indices for every step
 * and bound, the steps near +-2^63 included; zero-size arrays flow through views and pads.
 * The expected slices are Python's: list(range(5))[start:stop:step].
 */
#include <criterion/criterion.h>

#include "test_util.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define BIG ((int64_t)1 << 62)

static void expect_shape_error(fc_array *a, const char *opname) {
    fc_ctx *ctx = fc_array_ctx(a);
    cr_assert_eq(fc_array_status(a), FC_ERR_SHAPE, "%s: status %s (%s)", opname,
                 fc_strerror(fc_array_status(a)), fc_array_errmsg(a));
    cr_assert_not_null(strstr(fc_array_errmsg(a), opname), "the message '%s' does not name %s",
                       fc_array_errmsg(a), opname);
    /* Evaluating it fails cleanly too. */
    cr_assert_eq(fc_eval(ctx, &a, 1), FC_ERR_SHAPE);
}

static fc_array *arange5(fc_ctx *ctx) {
    const int64_t v[5] = {10, 11, 12, 13, 14};
    return fc_from_host(ctx, FC_I64, FC_SHAPE(5), v);
}

Test(shapes, pad_widths_past_int64_are_errors) {
    fc_ctx *ctx = tu_host_ctx();
    fc_scope *sc = fc_scope_open(ctx);
    fc_array *x = arange5(ctx);
    /* 2^61 on each side of 5 elements: 2^62 + 5 elements of 8 bytes. */
    expect_shape_error(fc_pad(x, 1, (const int64_t[][2]){{(int64_t)1 << 61, (int64_t)1 << 61}},
                              FC_PAD_CONSTANT, 0), "pad");
    /* The sum itself overflows int64. */
    expect_shape_error(fc_pad(x, 1, (const int64_t[][2]){{INT64_MAX, 1}}, FC_PAD_CONSTANT, 0),
                       "pad");
    expect_shape_error(fc_pad(x, 1, (const int64_t[][2]){{BIG, BIG}}, FC_PAD_CONSTANT, 0), "pad");
    fc_clear_error(ctx);
    /* A wide pad that still fits stays lazy and exact in shape. */
    fc_array *ok = fc_pad(x, 1, (const int64_t[][2]){{1000, 3}}, FC_PAD_CONSTANT, -1);
    cr_assert_eq(fc_array_status(ok), FC_OK, "%s", fc_array_errmsg(ok));
    cr_assert_eq(fc_array_shape(ok).dim[0], 1008);
    fc_scope_close(sc);
    fc_ctx_destroy(ctx);
}

Test(shapes, broadcast_and_binary_results_past_2_62_bytes_are_errors) {
    fc_ctx *ctx = tu_host_ctx();
    fc_scope *sc = fc_scope_open(ctx);
    fc_array *x = arange5(ctx);
    fc_array *one = fc_reshape(x, FC_SHAPE(5, 1));
    expect_shape_error(fc_broadcast_to(fc_slice(x, FC_S(0, 1, 1)),
                                       FC_SHAPE((int64_t)1 << 32, (int64_t)1 << 32)),
                       "broadcast_to");
    /* Broadcasting in a binary op: [2^31, 1] + [2^31] is 2^62 elements of 8 bytes. */
    fc_array *col = fc_broadcast_to(fc_slice(one, FC_S(0, 1, 1), FC_COLON),
                                    FC_SHAPE((int64_t)1 << 31, 1));
    cr_assert_eq(fc_array_status(col), FC_OK, "%s", fc_array_errmsg(col));
    fc_array *row = fc_broadcast_to(fc_slice(x, FC_S(0, 1, 1)), FC_SHAPE((int64_t)1 << 31));
    expect_shape_error(fc_add(col, row), "add");
    /* bool is one byte: 2^62 elements are exactly the limit, one more is not. */
    fc_array *b = fc_greater(fc_slice(x, FC_S(0, 1, 1)), fc_i64(ctx, 0));
    cr_assert_eq(fc_array_status(fc_broadcast_to(b, FC_SHAPE(BIG))), FC_OK);
    expect_shape_error(fc_broadcast_to(b, FC_SHAPE(BIG + 1)), "broadcast_to");
    fc_scope_close(sc);
    fc_ctx_destroy(ctx);
}

Test(shapes, concatenate_and_stack_lengths_past_int64_are_errors) {
    fc_ctx *ctx = tu_host_ctx();
    fc_scope *sc = fc_scope_open(ctx);
    fc_array *b = fc_greater(fc_slice(arange5(ctx), FC_S(0, 1, 1)), fc_i64(ctx, 0));
    fc_array *half = fc_broadcast_to(b, FC_SHAPE((int64_t)1 << 61)); /* 2^61 bytes, lazy */
    cr_assert_eq(fc_array_status(half), FC_OK);
    fc_array *three[3] = {half, half, half}, *four[4] = {half, half, half, half};
    expect_shape_error(fc_concatenate(ctx, three, 3, 0), "concatenate"); /* 1.5 * 2^62 bytes */
    expect_shape_error(fc_concatenate(ctx, four, 4, 0), "concatenate");  /* 2^63: int64 wraps */
    expect_shape_error(fc_stack(ctx, four, 4, 0), "concatenate");
    fc_scope_close(sc);
    fc_ctx_destroy(ctx);
}

Test(shapes, creation_and_reshape_of_huge_empty_shapes) {
    fc_ctx *ctx = tu_host_ctx();
    fc_scope *sc = fc_scope_open(ctx);
    /* As NumPy: a zero extent does not excuse the product of the others. */
    expect_shape_error(fc_zeros(ctx, FC_F32, FC_SHAPE(0, BIG)), "zeros");
    expect_shape_error(fc_zeros(ctx, FC_F32, FC_SHAPE(BIG, BIG, 0)), "zeros");
    fc_clear_error(ctx);
    fc_array *e = fc_zeros(ctx, FC_F32, FC_SHAPE(0, (int64_t)1 << 40));
    cr_assert_eq(fc_array_status(e), FC_OK, "%s", fc_array_errmsg(e));
    /* Views of it, evaluated: every element count is zero, no stride overflows. */
    fc_array *v = fc_add(fc_transpose(e), fc_f64(ctx, 1.0));
    cr_assert_eq(fc_eval(ctx, &v, 1), FC_OK, "%s", fc_errmsg(ctx));
    cr_assert_eq(fc_array_size(v), 0);
    cr_assert_eq(fc_array_shape(v).dim[0], (int64_t)1 << 40);
    fc_array *r = fc_reshape(e, FC_SHAPE((int64_t)1 << 32, (int64_t)1 << 32, 0));
    cr_assert_eq(fc_array_status(r), FC_ERR_SHAPE, "%s", fc_array_errmsg(r));
    fc_clear_error(ctx);
    fc_array *r2 = fc_reshape(e, FC_SHAPE(0, -1));
    cr_assert_eq(fc_array_status(r2), FC_ERR_SHAPE, "reshape of an empty array to (0, -1) is "
                 "ambiguous, as in NumPy: %s", fc_array_errmsg(r2));
    fc_scope_close(sc);
    fc_ctx_destroy(ctx);
}

typedef struct slice_case {
    int64_t start, stop, step;
    int n;
    int64_t want[5]; /* list(range(5))[start:stop:step], each plus 10 */
} slice_case;

Test(shapes, slices_follow_python_for_every_step_and_bound) {
    static const slice_case cases[] = {
        {FC_NIL, FC_NIL, INT64_MAX, 1, {10}},
        {FC_NIL, FC_NIL, -INT64_MAX, 1, {14}},
        {1, FC_NIL, BIG, 1, {11}},
        {FC_NIL, FC_NIL, BIG, 1, {10}},
        {FC_NIL, INT64_MAX, 1, 5, {10, 11, 12, 13, 14}},
        {3, 0, -BIG, 1, {13}},
        {INT64_MIN + 1, INT64_MAX, INT64_MAX, 1, {10}},
        {INT64_MAX, INT64_MIN + 1, -INT64_MAX, 1, {14}},
        {2, INT64_MIN + 1, -1, 3, {12, 11, 10}},
        {-1, FC_NIL, -3, 2, {14, 11}},
        {4, -6, -2, 3, {14, 12, 10}},
        {INT64_MAX, FC_NIL, 1, 0, {0}},
        {-INT64_MAX, FC_NIL, -1, 0, {0}},
        {FC_NIL, FC_NIL, -1, 5, {14, 13, 12, 11, 10}},
    };
    fc_ctx *ctx = tu_host_ctx();
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const slice_case *c = &cases[i];
        fc_scope *sc = fc_scope_open(ctx);
        fc_array *y = fc_slice(arange5(ctx), FC_S(c->start, c->stop, c->step));
        cr_assert_eq(fc_array_status(y), FC_OK, "case %zu: %s", i, fc_array_errmsg(y));
        cr_assert_eq(fc_array_size(y), c->n, "case %zu (%lld:%lld:%lld): %lld elements, Python "
                     "gives %d", i, (long long)c->start, (long long)c->stop, (long long)c->step,
                     (long long)fc_array_size(y), c->n);
        int64_t got[5];
        for (int k = 0; k < 5; k++) got[k] = -777; /* poisoned */
        cr_assert_eq(fc_read(y, got, 0, c->n), FC_OK, "%s", fc_errmsg(ctx));
        for (int k = 0; k < c->n; k++)
            cr_assert_eq(got[k], c->want[k], "case %zu, element %d: %lld, Python gives %lld", i,
                         k, (long long)got[k], (long long)c->want[k]);
        fc_scope_close(sc);
    }
    fc_ctx_destroy(ctx);
}

Test(shapes, constant_pad_of_an_empty_axis_is_all_padding) {
    fc_ctx *ctx = tu_host_ctx();
    fc_scope *sc = fc_scope_open(ctx);
    float v[12];
    for (int i = 0; i < 12; i++) v[i] = 0.5f + (float)i;
    fc_array *x = fc_from_host(ctx, FC_F32, FC_SHAPE(3, 4), v);
    fc_array *e = fc_slice(x, FC_COLON, FC_S(2, 2, 1)); /* [3, 0] */
    fc_array *p = fc_pad(e, 2, (const int64_t[][2]){{0, 1}, {2, 1}}, FC_PAD_CONSTANT, 7.25);
    cr_assert_eq(fc_array_status(p), FC_OK, "%s", fc_array_errmsg(p));
    cr_assert_eq(fc_array_size(p), 12);
    float got[12];
    for (int i = 0; i < 12; i++) got[i] = -1e30f;
    cr_assert_eq(fc_read(p, got, 0, 12), FC_OK, "%s", fc_errmsg(ctx));
    for (int i = 0; i < 12; i++) cr_assert_eq(got[i], 7.25f, "element %d is %g", i, got[i]);
    /* Non-constant modes need elements to copy: NumPy refuses them on an empty axis. */
    fc_array *s = fc_pad(e, 2, (const int64_t[][2]){{0, 0}, {1, 1}}, FC_PAD_SYMMETRIC, 0);
    cr_assert_eq(fc_array_status(s), FC_ERR_SHAPE, "%s", fc_array_errmsg(s));
    fc_scope_close(sc);
    fc_ctx_destroy(ctx);
}

/* The .fc subscript: every bound and step as Python writes it, -2^63 (which the C API
 * reserves for None, FC_NIL) included. */
Test(shapes, fc_slices_with_extreme_steps) {
    static const struct {
        const char *sub;
        int n;
        int64_t want[5];
    } cases[] = {
        {"::9223372036854775807", 1, {0}},
        {"::-9223372036854775807", 1, {4}},
        {"::-9223372036854775808", 1, {4}},
        {"-9223372036854775808:", 5, {0, 1, 2, 3, 4}},
        {":-9223372036854775808:-1", 5, {4, 3, 2, 1, 0}},
        {"9223372036854775807:-9223372036854775808:-9223372036854775808", 1, {4}},
    };
    fc_ctx *ctx = tu_host_ctx();
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char text[200];
        snprintf(text, sizeof text, "x = arange(5)\ny = x[%s]\nout y\n", cases[i].sub);
        fc_scope *sc = fc_scope_open(ctx);
        fc_program *prog = NULL;
        cr_assert_eq(fc_program_parse(ctx, text, strlen(text), NULL, &prog), FC_OK, "%s",
                     fc_errmsg(ctx));
        fc_array *y = NULL;
        cr_assert_eq(fc_program_build(prog, NULL, &y), FC_OK, "x[%s]: %s", cases[i].sub,
                     fc_errmsg(ctx));
        cr_assert_eq(fc_array_size(y), cases[i].n, "x[%s]: %lld elements, Python gives %d",
                     cases[i].sub, (long long)fc_array_size(y), cases[i].n);
        int64_t got[5] = {-7, -7, -7, -7, -7};
        cr_assert_eq(fc_read(y, got, 0, cases[i].n), FC_OK, "%s", fc_errmsg(ctx));
        for (int k = 0; k < cases[i].n; k++)
            cr_assert_eq(got[k], cases[i].want[k], "x[%s][%d] is %lld, Python gives %lld",
                         cases[i].sub, k, (long long)got[k], (long long)cases[i].want[k]);
        fc_program_destroy(prog);
        fc_scope_close(sc);
    }
    fc_ctx_destroy(ctx);
}
