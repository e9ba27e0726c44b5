/*
 * test_graph.c - graph construction through the public API: shape inference (broadcasting,
 * reductions, views, indexing, pad, concatenate/stack, matmul), hash-consing and identity views,
 * reference counting and scopes, laziness, and the op table's own promises (every reduction
 * row has a whole descriptor; no node sets a parameter field its op's row does not name).
 *
 * Result shapes of broadcasting, broadcast_to, matmul and indexing come from NumPy 2.4 through
 * tests/data/shapes.txt (tests/gen_shapes.py). Reduction shapes are computed here by the plain
 * rule (drop the reduced axes, or keep them as 1).
 */
#include <criterion/criterion.h>
#include <fusec.h>

#include "graph.h" /* ctx->live_nodes and a->host, to observe lifetimes and laziness */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "random_dag.c"

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

/* ---- helpers -------------------------------------------------------------------------------- */

static void shape_to_str(const fc_shape *s, char *buf, size_t size) {
    size_t len = (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < s->ndim && len < size; i++)
        len += (size_t)snprintf(buf + len, size - len, "%s%lld", i ? "," : "",
                                (long long)s->dim[i]);
    if (len < size) snprintf(buf + len, size - len, "]");
}

static bool same_shape(const fc_shape *a, const fc_shape *b) {
    if (a->ndim != b->ndim) return false;
    for (int i = 0; i < a->ndim; i++)
        if (a->dim[i] != b->dim[i]) return false;
    return true;
}

/* Checks r is healthy and has shape `want`; logs and returns false otherwise. */
static bool has_shape(fc_array *r, fc_shape want, const char *what) {
    char w[128], g[128];
    shape_to_str(&want, w, sizeof w);
    if (fc_array_status(r) != FC_OK) {
        cr_log_error("%s: expected %s, fusec fails: %s", what, w, fc_array_errmsg(r));
        return false;
    }
    fc_shape got = fc_array_shape(r);
    if (!same_shape(&got, &want) || fc_array_ndim(r) != want.ndim) {
        shape_to_str(&got, g, sizeof g);
        cr_log_error("%s: expected %s, got %s", what, w, g);
        return false;
    }
    int64_t size = 1;
    for (int i = 0; i < want.ndim; i++) size *= want.dim[i];
    if (fc_array_size(r) != size) {
        cr_log_error("%s: size %lld, expected %lld", what, (long long)fc_array_size(r),
                     (long long)size);
        return false;
    }
    return true;
}

/* Checks r is poisoned with `want` (or any error for want == FC_OK's stand-in, 1). */
static bool fails_with(fc_array *r, fc_status want, const char *what) {
    fc_status st = fc_array_status(r);
    if (st == FC_OK) {
        fc_shape got = fc_array_shape(r);
        char g[128];
        shape_to_str(&got, g, sizeof g);
        cr_log_error("%s: expected an error, got shape %s", what, g);
        return false;
    }
    if ((int)want != 1 && st != want) {
        cr_log_error("%s: expected status %d (%s), got %d (%s): %s", what, want,
                     fc_strerror(want), st, fc_strerror(st), fc_array_errmsg(r));
        return false;
    }
    return true;
}
#define ANY_ERROR ((fc_status)1)

/* "[2,3]" -> shape. */
static fc_shape parse_shape(const char *s) {
    fc_shape sh;
    memset(&sh, 0, sizeof sh);
    cr_assert_eq(*s, '[', "bad shape %s", s);
    s++;
    while (*s && *s != ']') {
        char *end;
        cr_assert_lt(sh.ndim, FC_MAX_DIMS);
        sh.dim[sh.ndim++] = strtoll(s, &end, 10);
        cr_assert_neq(end, s, "bad shape");
        s = *end == ',' ? end + 1 : end;
    }
    return sh;
}

static int64_t parse_bound(const char **p) {
    if (**p == 'n') {
        (*p)++;
        return FC_NIL;
    }
    char *end;
    int64_t v = strtoll(*p, &end, 10);
    cr_assert_neq(end, *p, "bad slice bound");
    *p = end;
    return v;
}

/* "s1:n:-1;i2;N;E" -> entries; returns their count. */
static int parse_subscript(const char *s, fc_idx *idx, int max) {
    int n = 0;
    if (strcmp(s, "-") == 0) return 0;
    while (*s) {
        cr_assert_lt(n, max);
        fc_idx e = {FC_IDX_SLICE, 0, 0, 0, NULL};
        if (*s == 'N') {
            e.kind = FC_IDX_NEWAXIS;
            s++;
        } else if (*s == 'E') {
            e.kind = FC_IDX_ELLIPSIS;
            s++;
        } else if (*s == 'i') {
            char *end;
            e.kind = FC_IDX_INT;
            e.start = strtoll(s + 1, &end, 10);
            s = end;
        } else {
            cr_assert_eq(*s, 's', "bad subscript %s", s);
            s++;
            e.start = parse_bound(&s);
            cr_assert_eq(*s, ':');
            s++;
            e.stop = parse_bound(&s);
            cr_assert_eq(*s, ':');
            s++;
            e.step = parse_bound(&s);
        }
        idx[n++] = e;
        if (*s == ';') s++;
    }
    return n;
}

static fc_array *f32_of(fc_shape s) { return fc_ones(ctx, FC_F32, s); }

/* ---- the NumPy shape table ------------------------------------------------------------------ */

typedef fc_array *(*binary_fn)(fc_array *, fc_array *);

Test(shapes, numpy_table, .init = setup, .fini = teardown) {
    char path[1024], line[512];
    snprintf(path, sizeof path, "%s/shapes.txt", FUSEC_TEST_DATA_DIR);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "cannot open %s", path);
    int counts[5] = {0}, bad = 0, lines = 0;
    /* Every binary op class broadcasts the same way. */
    static const struct { binary_fn fn; fc_dtype t; const char *name; } bin[] = {
        {fc_add, FC_F32, "add"},          {fc_less, FC_F32, "less"},
        {fc_logical_and, FC_BOOL, "logical_and"}, {fc_bitwise_or, FC_I32, "bitwise_or"},
        {fc_arctan2, FC_F32, "arctan2"},  {fc_fmax, FC_F64, "fmax"},
        {fc_right_shift, FC_U16, "right_shift"},  {fc_pow, FC_C64, "pow"},
    };
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#') continue;
        char *w[6];
        int n = 0;
        for (char *tok = strtok(line, " \n"); tok && n < 6; tok = strtok(NULL, " \n")) w[n++] = tok;
        cr_assert_geq(n, 4, "malformed line %d", lines);
        const char *res = w[n - 1];
        bool err = strcmp(res, "error") == 0;
        fc_shape want = err ? FC_SCALAR : parse_shape(res);
        char what[256];
        fc_scope *s = fc_scope_open(ctx);
        if (strcmp(w[0], "bcast") == 0) {
            fc_shape a = parse_shape(w[1]), b = parse_shape(w[2]);
            for (size_t k = 0; k < sizeof bin / sizeof bin[0]; k++) {
                snprintf(what, sizeof what, "%s(%s, %s)", bin[k].name, w[1], w[2]);
                fc_array *r = bin[k].fn(fc_ones(ctx, bin[k].t, a), fc_ones(ctx, bin[k].t, b));
                if (!(err ? fails_with(r, FC_ERR_SHAPE, what) : has_shape(r, want, what))) bad++;
            }
            counts[0]++;
        } else if (strcmp(w[0], "bcast3") == 0) {
            fc_shape a = parse_shape(w[1]), b = parse_shape(w[2]), c = parse_shape(w[3]);
            snprintf(what, sizeof what, "where(%s, %s, %s)", w[1], w[2], w[3]);
            fc_array *r = fc_where(fc_ones(ctx, FC_BOOL, a), f32_of(b), f32_of(c));
            if (!(err ? fails_with(r, FC_ERR_SHAPE, what) : has_shape(r, want, what))) bad++;
            snprintf(what, sizeof what, "clip(%s, %s, %s)", w[1], w[2], w[3]);
            r = fc_clip(f32_of(a), fc_ones(ctx, FC_I8, b), f32_of(c));
            if (!(err ? fails_with(r, FC_ERR_SHAPE, what) : has_shape(r, want, what))) bad++;
            counts[1]++;
        } else if (strcmp(w[0], "broadcast_to") == 0) {
            snprintf(what, sizeof what, "broadcast_to(%s, %s)", w[1], w[2]);
            fc_array *r = fc_broadcast_to(f32_of(parse_shape(w[1])), parse_shape(w[2]));
            if (!(err ? fails_with(r, FC_ERR_SHAPE, what) : has_shape(r, want, what))) bad++;
            counts[2]++;
        } else if (strcmp(w[0], "matmul") == 0) {
            fc_shape a = parse_shape(w[1]), b = parse_shape(w[2]);
            snprintf(what, sizeof what, "matmul(%s, %s)", w[1], w[2]);
            fc_array *r = fc_matmul(f32_of(a), f32_of(b));
            /* NumPy raises ValueError for 0-d operands too; any error status will do there. */
            fc_status want_st = (a.ndim == 0 || b.ndim == 0) ? ANY_ERROR : FC_ERR_SHAPE;
            if (!(err ? fails_with(r, want_st, what) : has_shape(r, want, what))) bad++;
            counts[3]++;
        } else if (strcmp(w[0], "index") == 0) {
            fc_idx idx[16];
            int ni = parse_subscript(w[2], idx, 16);
            snprintf(what, sizeof what, "index(%s)[%s]", w[1], w[2]);
            fc_array *r = fc_index(f32_of(parse_shape(w[1])), ni, idx);
            if (!(err ? fails_with(r, FC_ERR_INDEX, what) : has_shape(r, want, what))) bad++;
            counts[4]++;
        } else {
            cr_assert_fail("unknown kind %s", w[0]);
        }
        fc_scope_close(s);
        lines++;
    }
    fclose(f);
    cr_expect_eq(counts[0], 225);
    cr_expect_eq(counts[1], 512);
    cr_expect_eq(counts[2], 144);
    cr_expect_eq(counts[3], 169);
    cr_expect_geq(counts[4], 600);
    cr_expect_eq(bad, 0, "%d shape results differ from NumPy", bad);
}

Test(shapes, broadcasting_by_hand, .init = setup, .fini = teardown) {
    /* A few cases written out, to check the table reader; scalars of every kind broadcast. */
    fc_scope *s = fc_scope_open(ctx);
    cr_expect(has_shape(fc_add(f32_of(FC_SHAPE(4, 1, 3)), f32_of(FC_SHAPE(5, 1))),
                        FC_SHAPE(4, 5, 3), "[4,1,3] + [5,1]"));
    cr_expect(has_shape(fc_add(f32_of(FC_SHAPE(0, 3)), f32_of(FC_SHAPE(1, 3))), FC_SHAPE(0, 3),
                        "[0,3] + [1,3]"));
    cr_expect(has_shape(fc_mul(f32_of(FC_SHAPE(2, 3)), fc_f64(ctx, 2.0)), FC_SHAPE(2, 3),
                        "[2,3] * weak"));
    cr_expect(has_shape(fc_mul(fc_scalar(ctx, FC_F64, 2.0), f32_of(FC_SHAPE(2, 3))),
                        FC_SHAPE(2, 3), "0-d * [2,3]"));
    cr_expect(has_shape(fc_add(fc_f64(ctx, 1.0), fc_i64(ctx, 2)), FC_SCALAR, "weak + weak"));
    cr_expect(fails_with(fc_add(f32_of(FC_SHAPE(2, 3)), f32_of(FC_SHAPE(3, 2))), FC_ERR_SHAPE,
                         "[2,3] + [3,2]"));
    cr_expect(fails_with(fc_add(f32_of(FC_SHAPE(0)), f32_of(FC_SHAPE(2))), FC_ERR_SHAPE,
                         "[0] + [2]"));
    /* 8 dims broadcast fine. */
    cr_expect(has_shape(fc_add(f32_of(FC_SHAPE(2, 1, 2, 1, 2, 1, 1, 1)), f32_of(FC_SHAPE(3, 4))),
                        FC_SHAPE(2, 1, 2, 1, 2, 1, 3, 4), "8-d + 2-d"));
    fc_scope_close(s);
}

/* ---- reductions ----------------------------------------------------------------------------- */

/* The expected shape of a reduction of `in` over the axes in `mask`. */
static fc_shape reduced_shape(fc_shape in, unsigned mask, bool keepdims) {
    fc_shape out;
    memset(&out, 0, sizeof out);
    for (int d = 0; d < in.ndim; d++) {
        if (mask & (1u << d)) {
            if (keepdims) out.dim[out.ndim++] = 1;
        } else {
            out.dim[out.ndim++] = in.dim[d];
        }
    }
    return out;
}

Test(reductions, every_axis_combination_of_4d, .init = setup, .fini = teardown) {
    const fc_shape in = FC_SHAPE(2, 3, 4, 5);
    fc_scope *s = fc_scope_open(ctx);
    fc_array *x = f32_of(in);
    int bad = 0;
    for (unsigned mask = 0; mask < 16; mask++) {
        for (int keep = 0; keep < 2; keep++) {
            /* The same set written three ways: positive, negative, and mixed in reverse. */
            fc_axes pos = FC_NO_AXES, neg = FC_NO_AXES, mixed = FC_NO_AXES;
            for (int d = 0; d < 4; d++)
                if (mask & (1u << d)) {
                    pos.axis[pos.n++] = d;
                    neg.axis[neg.n++] = d - 4;
                }
            for (int i = pos.n; i-- > 0;)
                mixed.axis[mixed.n++] = (i % 2) ? pos.axis[i] : pos.axis[i] - 4;
            fc_shape want = reduced_shape(in, mask, keep);
            const fc_axes *sets[3] = {&pos, &neg, &mixed};
            for (int k = 0; k < 3; k++) {
                char what[128];
                snprintf(what, sizeof what, "reduce mask %x keepdims %d form %d", mask, keep, k);
                if (!has_shape(fc_sum(x, *sets[k], keep), want, what)) bad++;
                if (!has_shape(fc_mean(x, *sets[k], keep), want, what)) bad++;
                if (!has_shape(fc_max(x, *sets[k], keep), want, what)) bad++;
                if (!has_shape(fc_var(x, *sets[k], keep, 1), want, what)) bad++;
                if (!has_shape(fc_norm(x, *sets[k], keep, FC_NORM_L1), want, what)) bad++;
                if (!has_shape(fc_any(x, *sets[k], keep), want, what)) bad++;
            }
        }
    }
    cr_expect_eq(bad, 0);
    /* FC_ALL is every axis. */
    cr_expect(has_shape(fc_sum(x, FC_ALL, false), FC_SCALAR, "sum all"));
    cr_expect(has_shape(fc_prod(x, FC_ALL, true), FC_SHAPE(1, 1, 1, 1), "prod all keepdims"));
    cr_expect(has_shape(fc_std(x, FC_ALL, false, 0), FC_SCALAR, "std all"));
    /* A 0-d input reduces to 0-d. */
    cr_expect(has_shape(fc_sum(fc_scalar(ctx, FC_F32, 1), FC_ALL, false), FC_SCALAR, "sum 0-d"));
    cr_expect(has_shape(fc_sum(fc_scalar(ctx, FC_F32, 1), FC_ALL, true), FC_SCALAR,
                        "sum 0-d keepdims"));
    fc_scope_close(s);
}

Test(reductions, argmax_shapes, .init = setup, .fini = teardown) {
    fc_scope *s = fc_scope_open(ctx);
    fc_array *x = f32_of(FC_SHAPE(2, 3, 4));
    cr_expect(has_shape(fc_argmax(x, 1, false), FC_SHAPE(2, 4), "argmax axis 1"));
    cr_expect(has_shape(fc_argmax(x, -1, true), FC_SHAPE(2, 3, 1), "argmax axis -1 keepdims"));
    cr_expect(has_shape(fc_argmin(x, 0, false), FC_SHAPE(3, 4), "argmin axis 0"));
    cr_expect(has_shape(fc_argmax(x, FC_AXIS_NONE, false), FC_SCALAR, "argmax flat"));
    /* np.argmax(x, axis=None, keepdims=True) has shape (1, 1, 1). */
    cr_expect(has_shape(fc_argmin(x, FC_AXIS_NONE, true), FC_SHAPE(1, 1, 1),
                        "argmin flat keepdims"));
    cr_expect(fails_with(fc_argmax(x, 3, false), FC_ERR_AXIS, "argmax axis 3"));
    cr_expect(fails_with(fc_argmax(x, -4, false), FC_ERR_AXIS, "argmax axis -4"));
    fc_scope_close(s);
}

Test(reductions, bad_axes, .init = setup, .fini = teardown) {
    fc_scope *s = fc_scope_open(ctx);
    fc_array *x = f32_of(FC_SHAPE(2, 3, 4, 5));
    cr_expect(fails_with(fc_sum(x, FC_AXES(0, 0), false), FC_ERR_AXIS, "sum axes (0, 0)"));
    cr_expect(fails_with(fc_sum(x, FC_AXES(1, -3), false), FC_ERR_AXIS, "sum axes (1, -3)"));
    cr_expect(fails_with(fc_mean(x, FC_AXES(4), false), FC_ERR_AXIS, "mean axis 4"));
    cr_expect(fails_with(fc_max(x, FC_AXES(-5), true), FC_ERR_AXIS, "max axis -5"));
    cr_expect(fails_with(fc_var(x, FC_AXES(0, 1, 2, 3, 0), false, 0), FC_ERR_AXIS,
                         "var repeated axis"));
    fc_scope_close(s);
}

/* ---- views ---------------------------------------------------------------------------------- */

Test(views, reshape, .init = setup, .fini = teardown) {
    fc_scope *s = fc_scope_open(ctx);
    fc_array *x = f32_of(FC_SHAPE(2, 3, 4));
    cr_expect(has_shape(fc_reshape(x, FC_SHAPE(-1, 4)), FC_SHAPE(6, 4), "(-1, 4)"));
    cr_expect(has_shape(fc_reshape(x, FC_SHAPE(4, -1)), FC_SHAPE(4, 6), "(4, -1)"));
    cr_expect(has_shape(fc_reshape(x, FC_SHAPE(-1)), FC_SHAPE(24), "(-1)"));
    cr_expect(has_shape(fc_reshape(x, FC_SHAPE(2, -1, 2)), FC_SHAPE(2, 6, 2), "(2, -1, 2)"));
    cr_expect(has_shape(fc_reshape(x, FC_SHAPE(1, 24, 1)), FC_SHAPE(1, 24, 1), "(1, 24, 1)"));
    cr_expect(fails_with(fc_reshape(x, FC_SHAPE(-1, -1)), FC_ERR_SHAPE, "(-1, -1)"));
    cr_expect(fails_with(fc_reshape(x, FC_SHAPE(5, 5)), FC_ERR_SHAPE, "(5, 5)"));
    cr_expect(fails_with(fc_reshape(x, FC_SHAPE(-1, 5)), FC_ERR_SHAPE, "(-1, 5)"));
    cr_expect(fails_with(fc_reshape(x, FC_SHAPE(-2, -12)), ANY_ERROR, "(-2, -12)"));
    cr_expect(fails_with(fc_reshape(x, FC_SCALAR), FC_ERR_SHAPE, "size 24 to 0-d"));
    /* size 1 <-> 0-d, and size 0 with -1 (NumPy: (0, 3) -> (-1, 3) is (0, 3); (-1, 0) fails). */
    cr_expect(has_shape(fc_reshape(f32_of(FC_SHAPE(1, 1)), FC_SCALAR), FC_SCALAR, "(1,1) -> ()"));
    cr_expect(has_shape(fc_reshape(fc_scalar(ctx, FC_F32, 1), FC_SHAPE(1, -1, 1)),
                        FC_SHAPE(1, 1, 1), "() -> (1, -1, 1)"));
    fc_array *z = f32_of(FC_SHAPE(0, 3));
    cr_expect(has_shape(fc_reshape(z, FC_SHAPE(-1, 3)), FC_SHAPE(0, 3), "(0,3) -> (-1, 3)"));
    cr_expect(has_shape(fc_reshape(z, FC_SHAPE(3, -1)), FC_SHAPE(3, 0), "(0,3) -> (3, -1)"));
    cr_expect(has_shape(fc_reshape(z, FC_SHAPE(5, 0, 7)), FC_SHAPE(5, 0, 7), "(0,3) -> (5,0,7)"));
    cr_expect(fails_with(fc_reshape(z, FC_SHAPE(-1, 0)), FC_ERR_SHAPE, "(0,3) -> (-1, 0)"));
    fc_scope_close(s);
}

Test(views, permute_and_transpose, .init = setup, .fini = teardown) {
    fc_scope *s = fc_scope_open(ctx);
    fc_array *x = f32_of(FC_SHAPE(2, 3, 4, 5));
    cr_expect(has_shape(fc_permute(x, FC_AXES(2, 0, 3, 1)), FC_SHAPE(4, 2, 5, 3), "permute"));
    cr_expect(has_shape(fc_permute(x, FC_AXES(-1, 0, 1, 2)), FC_SHAPE(5, 2, 3, 4),
                        "permute with a negative axis"));
    cr_expect(has_shape(fc_transpose(x), FC_SHAPE(5, 4, 3, 2), "transpose"));
    cr_expect(has_shape(fc_transpose(f32_of(FC_SHAPE(7))), FC_SHAPE(7), "transpose 1-d"));
    cr_expect(has_shape(fc_transpose(fc_scalar(ctx, FC_F32, 1)), FC_SCALAR, "transpose 0-d"));
    cr_expect(fails_with(fc_permute(x, FC_AXES(0, 0, 1, 2)), FC_ERR_AXIS, "repeated"));
    cr_expect(fails_with(fc_permute(x, FC_AXES(0, 1, 2)), ANY_ERROR, "too few axes"));
    cr_expect(fails_with(fc_permute(x, FC_AXES(0, 1, 2, 4)), FC_ERR_AXIS, "axis 4"));
    fc_scope_close(s);
}

Test(views, expand_dims_squeeze_flip, .init = setup, .fini = teardown) {
    fc_scope *s = fc_scope_open(ctx);
    fc_array *x = f32_of(FC_SHAPE(2, 3));
    cr_expect(has_shape(fc_expand_dims(x, 0), FC_SHAPE(1, 2, 3), "expand_dims 0"));
    cr_expect(has_shape(fc_expand_dims(x, 1), FC_SHAPE(2, 1, 3), "expand_dims 1"));
    cr_expect(has_shape(fc_expand_dims(x, 2), FC_SHAPE(2, 3, 1), "expand_dims 2"));
    cr_expect(has_shape(fc_expand_dims(x, -1), FC_SHAPE(2, 3, 1), "expand_dims -1"));
    cr_expect(has_shape(fc_expand_dims(x, -3), FC_SHAPE(1, 2, 3), "expand_dims -3"));
    cr_expect(has_shape(fc_expand_dims(fc_scalar(ctx, FC_F32, 1), 0), FC_SHAPE(1),
                        "expand_dims of 0-d"));
    cr_expect(fails_with(fc_expand_dims(x, 3), FC_ERR_AXIS, "expand_dims 3"));
    cr_expect(fails_with(fc_expand_dims(x, -4), FC_ERR_AXIS, "expand_dims -4"));
    cr_expect(fails_with(fc_expand_dims(f32_of(FC_SHAPE(1, 1, 1, 1, 1, 1, 1, 2)), 0), ANY_ERROR,
                         "expand_dims to 9 dims"));

    fc_array *y = f32_of(FC_SHAPE(1, 2, 1, 3, 1));
    cr_expect(has_shape(fc_squeeze(y, FC_ALL), FC_SHAPE(2, 3), "squeeze all"));
    cr_expect(has_shape(fc_squeeze(y, FC_AXES(0)), FC_SHAPE(2, 1, 3, 1), "squeeze 0"));
    cr_expect(has_shape(fc_squeeze(y, FC_AXES(-1, 2)), FC_SHAPE(1, 2, 3), "squeeze -1, 2"));
    cr_expect(has_shape(fc_squeeze(f32_of(FC_SHAPE(1, 1)), FC_ALL), FC_SCALAR, "squeeze to 0-d"));
    cr_expect(has_shape(fc_squeeze(x, FC_ALL), FC_SHAPE(2, 3), "squeeze with no 1s"));
    fc_array *bad = fc_squeeze(y, FC_AXES(1));
    cr_expect(fails_with(bad, ANY_ERROR, "squeeze a size-2 axis"));
    cr_expect(fc_array_status(bad) == FC_ERR_SHAPE || fc_array_status(bad) == FC_ERR_AXIS);
    cr_expect(fails_with(fc_squeeze(y, FC_AXES(5)), FC_ERR_AXIS, "squeeze axis 5"));
    cr_expect(fails_with(fc_squeeze(y, FC_AXES(0, -5)), FC_ERR_AXIS, "squeeze repeated"));

    fc_array *z = f32_of(FC_SHAPE(2, 3, 4));
    cr_expect(has_shape(fc_flip(z, FC_ALL), FC_SHAPE(2, 3, 4), "flip all"));
    cr_expect(has_shape(fc_flip(z, FC_AXES(1)), FC_SHAPE(2, 3, 4), "flip 1"));
    cr_expect(has_shape(fc_flip(z, FC_AXES(-1, 0)), FC_SHAPE(2, 3, 4), "flip -1, 0"));
    cr_expect(fails_with(fc_flip(z, FC_AXES(3)), FC_ERR_AXIS, "flip 3"));
    cr_expect(fails_with(fc_flip(z, FC_AXES(1, 1)), FC_ERR_AXIS, "flip repeated"));
    fc_scope_close(s);
}

Test(views, slicing_by_hand, .init = setup, .fini = teardown) {
    /* A few fc_slice cases written out; the NumPy table holds the many. */
    fc_scope *s = fc_scope_open(ctx);
    fc_array *x = f32_of(FC_SHAPE(10, 8, 6));
    cr_expect(has_shape(fc_slice(x, FC_S(1, -1, 1)), FC_SHAPE(8, 8, 6), "x[1:-1]"));
    cr_expect(has_shape(fc_slice(x, FC_COLON, FC_S(FC_NIL, FC_NIL, 2)), FC_SHAPE(10, 4, 6),
                        "x[:, ::2]"));
    cr_expect(has_shape(fc_slice(x, FC_S(FC_NIL, FC_NIL, -3)), FC_SHAPE(4, 8, 6), "x[::-3]"));
    cr_expect(has_shape(fc_slice(x, FC_AT(-1), FC_NEWAXIS), FC_SHAPE(1, 8, 6), "x[-1, None]"));
    cr_expect(has_shape(fc_slice(x, FC_ELLIPSIS, FC_AT(0)), FC_SHAPE(10, 8), "x[..., 0]"));
    cr_expect(has_shape(fc_slice(x, FC_AT(0), FC_AT(0), FC_AT(0)), FC_SCALAR, "x[0, 0, 0]"));
    cr_expect(has_shape(fc_slice(x, FC_S(100, 200, 1)), FC_SHAPE(0, 8, 6), "x[100:200]"));
    cr_expect(has_shape(fc_slice(x, FC_S(-100, 3, 1)), FC_SHAPE(3, 8, 6), "x[-100:3]"));
    cr_expect(fails_with(fc_slice(x, FC_S(0, 5, 0)), FC_ERR_INDEX, "x[0:5:0]"));
    cr_expect(fails_with(fc_slice(x, FC_AT(10)), FC_ERR_INDEX, "x[10]"));
    cr_expect(fails_with(fc_slice(x, FC_AT(-11)), FC_ERR_INDEX, "x[-11]"));
    cr_expect(fails_with(fc_slice(x, FC_AT(0), FC_AT(0), FC_AT(0), FC_AT(0)), FC_ERR_INDEX,
                         "too many indices"));
    cr_expect(fails_with(fc_slice(x, FC_ELLIPSIS, FC_ELLIPSIS), FC_ERR_INDEX, "two ellipses"));
    fc_scope_close(s);
}

Test(views, pad_shapes, .init = setup, .fini = teardown) {
    fc_scope *s = fc_scope_open(ctx);
    fc_array *x = f32_of(FC_SHAPE(3, 4));
    const int64_t w2[2][2] = {{1, 2}, {0, 3}};
    const int64_t w1[1][2] = {{2, 2}};
    const int64_t big[1][2] = {{10, 10}};
    const int64_t refl_ok[2][2] = {{2, 2}, {3, 3}};
    const int64_t refl_bad[2][2] = {{3, 0}, {0, 0}};
    const int64_t neg[2][2] = {{-1, 0}, {0, 0}};
    cr_expect(has_shape(fc_pad(x, 2, w2, FC_PAD_CONSTANT, 0.5), FC_SHAPE(6, 7), "pad per axis"));
    cr_expect(has_shape(fc_pad(x, 1, w1, FC_PAD_EDGE, 0), FC_SHAPE(7, 8), "pad all axes"));
    cr_expect(has_shape(fc_pad(x, 1, big, FC_PAD_CONSTANT, 0), FC_SHAPE(23, 24), "pad wide"));
    cr_expect(has_shape(fc_pad(x, 2, refl_ok, FC_PAD_REFLECT, 0), FC_SHAPE(7, 10), "reflect"));
    cr_expect(has_shape(fc_pad(x, 2, refl_ok, FC_PAD_SYMMETRIC, 0), FC_SHAPE(7, 10),
                        "symmetric"));
    cr_expect(fails_with(fc_pad(x, 2, refl_bad, FC_PAD_REFLECT, 0), FC_ERR_SHAPE,
                         "reflect width 3 of axis 3"));
    cr_expect(fails_with(fc_pad(x, 1, big, FC_PAD_REFLECT, 0), FC_ERR_SHAPE, "reflect 10"));
    cr_expect(fails_with(fc_pad(x, 2, neg, FC_PAD_CONSTANT, 0), ANY_ERROR, "negative width"));
    const int64_t w3[3][2] = {{1, 1}, {1, 1}, {1, 1}};
    cr_expect(fails_with(fc_pad(x, 3, w3, FC_PAD_CONSTANT, 0), ANY_ERROR, "n neither 1 nor ndim"));
    cr_expect(fails_with(fc_pad(x, 0, w3, FC_PAD_CONSTANT, 0), ANY_ERROR, "n == 0"));
    fc_scope_close(s);
}

Test(views, concatenate_and_stack, .init = setup, .fini = teardown) {
    fc_scope *s = fc_scope_open(ctx);
    fc_array *a = f32_of(FC_SHAPE(2, 3)), *b = f32_of(FC_SHAPE(4, 3)), *c = f32_of(FC_SHAPE(2, 5));
    fc_array *ab[2] = {a, b}, *ac[2] = {a, c}, *aa[3] = {a, a, a}, *bc[2] = {b, c};
    cr_expect(has_shape(fc_concatenate(ctx, ab, 2, 0), FC_SHAPE(6, 3), "concat axis 0"));
    cr_expect(has_shape(fc_concatenate(ctx, ab, 2, -2), FC_SHAPE(6, 3), "concat axis -2"));
    cr_expect(has_shape(fc_concatenate(ctx, ac, 2, 1), FC_SHAPE(2, 8), "concat axis 1"));
    cr_expect(has_shape(fc_concatenate(ctx, aa, 3, -1), FC_SHAPE(2, 9), "concat 3 arrays"));
    cr_expect(has_shape(fc_concatenate(ctx, &a, 1, 0), FC_SHAPE(2, 3), "concat 1 array"));
    fc_array *z = f32_of(FC_SHAPE(0, 3)), *az[2] = {a, z};
    cr_expect(has_shape(fc_concatenate(ctx, az, 2, 0), FC_SHAPE(2, 3), "concat with empty"));
    cr_expect(fails_with(fc_concatenate(ctx, ab, 2, 1), FC_ERR_SHAPE, "concat mismatch"));
    cr_expect(fails_with(fc_concatenate(ctx, bc, 2, 0), FC_ERR_SHAPE, "concat mismatch 2"));
    cr_expect(fails_with(fc_concatenate(ctx, ab, 2, 2), FC_ERR_AXIS, "concat axis 2"));
    cr_expect(fails_with(fc_concatenate(ctx, ab, 2, -3), FC_ERR_AXIS, "concat axis -3"));
    fc_array *v = f32_of(FC_SHAPE(3)), *av[2] = {a, v};
    cr_expect(fails_with(fc_concatenate(ctx, av, 2, 0), FC_ERR_SHAPE, "concat ndim mismatch"));
    fc_array *sc = fc_scalar(ctx, FC_F32, 1), *scs[2] = {sc, sc};
    cr_expect(fails_with(fc_concatenate(ctx, scs, 2, 0), ANY_ERROR, "concat 0-d"));
    cr_expect(fails_with(fc_concatenate(ctx, ab, 0, 0), ANY_ERROR, "concat nothing"));

    cr_expect(has_shape(fc_stack(ctx, aa, 3, 0), FC_SHAPE(3, 2, 3), "stack axis 0"));
    cr_expect(has_shape(fc_stack(ctx, aa, 3, 1), FC_SHAPE(2, 3, 3), "stack axis 1"));
    cr_expect(has_shape(fc_stack(ctx, aa, 3, 2), FC_SHAPE(2, 3, 3), "stack axis 2"));
    cr_expect(has_shape(fc_stack(ctx, aa, 3, -1), FC_SHAPE(2, 3, 3), "stack axis -1"));
    cr_expect(has_shape(fc_stack(ctx, aa, 3, -3), FC_SHAPE(3, 2, 3), "stack axis -3"));
    cr_expect(has_shape(fc_stack(ctx, scs, 2, 0), FC_SHAPE(2), "stack 0-d"));
    cr_expect(fails_with(fc_stack(ctx, aa, 3, 3), FC_ERR_AXIS, "stack axis 3"));
    cr_expect(fails_with(fc_stack(ctx, aa, 3, -4), FC_ERR_AXIS, "stack axis -4"));
    cr_expect(fails_with(fc_stack(ctx, ab, 2, 0), FC_ERR_SHAPE, "stack mismatch"));
    cr_expect(fails_with(fc_stack(ctx, ab, 0, 0), ANY_ERROR, "stack nothing"));
    fc_scope_close(s);
}

/* ---- hash-consing and identity views --------------------------------------------------------- */

static fc_array *random_data(fc_dtype t, fc_shape shape, unsigned seed) {
    /* f32 host data, random and never zero */
    int64_t n = 1;
    for (int i = 0; i < shape.ndim; i++) n *= shape.dim[i];
    cr_assert_eq(t, FC_F32);
    float *buf = malloc((size_t)(n ? n : 1) * sizeof *buf);
    cr_assert_not_null(buf);
    srand(seed);
    for (int64_t i = 0; i < n; i++) buf[i] = 0.25f + (float)rand() / (float)RAND_MAX;
    fc_array *a = fc_from_host(ctx, t, shape, buf);
    free(buf);
    return a;
}

Test(consing, same_expression_same_node, .init = setup, .fini = teardown) {
    fc_scope *s = fc_scope_open(ctx);
    fc_array *x = random_data(FC_F32, FC_SHAPE(4, 5), 1), *y = random_data(FC_F32, FC_SHAPE(5), 2);
    cr_expect_neq(x, random_data(FC_F32, FC_SHAPE(4, 5), 1), "host data is never consed");
    cr_expect_eq(fc_add(x, y), fc_add(x, y));
    cr_expect_eq(fc_exp(x), fc_exp(x));
    cr_expect_eq(fc_sum(x, FC_AXES(1), true), fc_sum(x, FC_AXES(1), true));
    cr_expect_eq(fc_sum(x, FC_AXES(1), false), fc_sum(x, FC_AXES(-1), false),
                 "axis 1 and -1 of a 2-d array are one axis");
    cr_expect_eq(fc_reshape(x, FC_SHAPE(20)), fc_reshape(x, FC_SHAPE(-1)));
    cr_expect_eq(fc_slice(x, FC_S(1, 3, 1)), fc_slice(x, FC_S(1, 3, 1)));
    cr_expect_eq(fc_tanh(fc_add(fc_sin(x), fc_mul(x, fc_f64(ctx, 0.1)))),
                 fc_tanh(fc_add(fc_sin(x), fc_mul(x, fc_f64(ctx, 0.1)))), "a whole chain");
    cr_expect_eq(fc_f64(ctx, 0.5), fc_f64(ctx, 0.5));
    cr_expect_eq(fc_cast(x, FC_F16), fc_cast(x, FC_F16));
    fc_scope_close(s);
}

Test(consing, different_params_different_nodes, .init = setup, .fini = teardown) {
    fc_scope *s = fc_scope_open(ctx);
    fc_array *x = random_data(FC_F32, FC_SHAPE(4, 5), 3);
    fc_array *y = random_data(FC_F32, FC_SHAPE(4, 5), 4);
    cr_expect_neq(fc_sub(x, y), fc_sub(y, x));
    cr_expect_neq(fc_add(x, y), fc_mul(x, y));
    cr_expect_neq(fc_sum(x, FC_AXES(0), true), fc_sum(x, FC_AXES(0), false));
    cr_expect_neq(fc_sum(x, FC_AXES(0), false), fc_sum(x, FC_AXES(1), false));
    cr_expect_neq(fc_var(x, FC_ALL, false, 0), fc_var(x, FC_ALL, false, 1));
    cr_expect_neq(fc_norm(x, FC_ALL, false, FC_NORM_L1), fc_norm(x, FC_ALL, false, FC_NORM_L2));
    cr_expect_neq(fc_slice(x, FC_S(0, 4, 1)), fc_slice(x, FC_S(0, 4, 2)));
    cr_expect_neq(fc_cast(x, FC_F16), fc_cast(x, FC_F64));
    cr_expect_neq(fc_f64(ctx, 0.5), fc_f64(ctx, 0.25));
    cr_expect_neq(fc_f64(ctx, 1.0), fc_i64(ctx, 1), "a weak float is not a weak int");
    cr_expect_neq(fc_f64(ctx, 1.0), fc_scalar(ctx, FC_F64, 1.0), "weak is not strong");
    cr_expect_neq(fc_f64(ctx, 0.0), fc_f64(ctx, -0.0), "-0.0 is a different constant");
    cr_expect_neq(fc_reshape(x, FC_SHAPE(20)), fc_reshape(x, FC_SHAPE(2, 10)));
    const int64_t w[1][2] = {{1, 1}};
    cr_expect_neq(fc_pad(x, 1, w, FC_PAD_EDGE, 0), fc_pad(x, 1, w, FC_PAD_REFLECT, 0));
    cr_expect_neq(fc_pad(x, 1, w, FC_PAD_CONSTANT, 0), fc_pad(x, 1, w, FC_PAD_CONSTANT, 1));
    fc_scope_close(s);
}

Test(consing, identity_views_return_the_input, .init = setup, .fini = teardown) {
    fc_scope *s = fc_scope_open(ctx);
    fc_array *x = random_data(FC_F32, FC_SHAPE(4, 5), 5);
    cr_expect_eq(fc_reshape(x, FC_SHAPE(4, 5)), x, "reshape to the same shape");
    cr_expect_eq(fc_reshape(x, FC_SHAPE(-1, 5)), x, "reshape to the same shape with -1");
    cr_expect_eq(fc_broadcast_to(x, FC_SHAPE(4, 5)), x, "broadcast_to the same shape");
    cr_expect_eq(fc_slice(x, FC_COLON, FC_COLON), x, "full slice");
    cr_expect_eq(fc_slice(x, FC_COLON), x, "full slice of the first axis");
    cr_expect_eq(fc_slice(x, FC_S(0, 4, 1), FC_S(-5, 100, 1)), x, "explicit full slice");
    cr_expect_eq(fc_slice(x, FC_ELLIPSIS), x, "x[...]");
    cr_expect_eq(fc_index(x, 0, NULL), x, "x[()]");
    cr_expect_eq(fc_cast(x, FC_F32), x, "cast to the same dtype");
    cr_expect_eq(fc_cast(fc_cast(x, FC_F64), FC_F64), fc_cast(x, FC_F64));
    fc_scope_close(s);
}

/* ---- references and scopes ------------------------------------------------------------------ */

Test(lifetime, scope_frees_its_arrays, .init = setup, .fini = teardown) {
    size_t base = ctx->live_nodes;
    fc_scope *s = fc_scope_open(ctx);
    cr_assert_not_null(s);
    fc_array *x = random_data(FC_F32, FC_SHAPE(8), 6);
    fc_array *y = fc_tanh(fc_add(fc_sin(x), fc_mul(x, fc_f64(ctx, 0.1))));
    fc_array *z = fc_sum(y, FC_ALL, false);
    cr_assert_eq(fc_array_status(z), FC_OK);
    cr_expect_geq(ctx->live_nodes, base + 6, "x, 0.1, sin, mul, add, tanh, sum are alive");
    fc_scope_close(s);
    cr_expect_eq(ctx->live_nodes, base, "closing the scope frees everything built in it");
}

Test(lifetime, keep_survives_and_release_frees, .init = setup, .fini = teardown) {
    size_t base = ctx->live_nodes;
    fc_scope *s = fc_scope_open(ctx);
    fc_array *x = random_data(FC_F32, FC_SHAPE(8), 7);
    fc_array *y = fc_exp(fc_mul(x, fc_f64(ctx, 0.5)));
    fc_array *kept = fc_keep(y);
    cr_expect_eq(kept, y);
    fc_scope_close(s);
    /* y holds its inputs: at least x, the product and exp itself. */
    cr_expect_geq(ctx->live_nodes, base + 3, "the kept array and its inputs stay alive");
    cr_expect_eq(fc_array_status(kept), FC_OK);
    cr_expect_eq(fc_array_ndim(kept), 1);
    /* It still evaluates: exp(x * 0.5), with x as random_data made it. */
    float got[8], want[8];
    memset(got, 0xA5, sizeof got);
    srand(7);
    for (int i = 0; i < 8; i++) want[i] = expf(0.5f * (0.25f + (float)rand() / (float)RAND_MAX));
    cr_expect_eq(fc_to_host(kept, got, sizeof got), FC_OK, "%s", fc_errmsg(ctx));
    for (int i = 0; i < 8; i++)
        cr_expect_float_eq(got[i], want[i], 1e-5f * want[i], "element %d", i);
    fc_release(kept);
    cr_expect_eq(ctx->live_nodes, base, "releasing the last reference frees the chain");
}

Test(lifetime, no_scope_caller_owns, .init = setup, .fini = teardown) {
    size_t base = ctx->live_nodes;
    fc_array *x = fc_ones(ctx, FC_F32, FC_SHAPE(3));
    fc_array *e = fc_exp(x);
    fc_release(x); /* e still holds x */
    cr_expect_gt(ctx->live_nodes, base);
    cr_expect_eq(fc_array_status(e), FC_OK);
    fc_release(e);
    cr_expect_eq(ctx->live_nodes, base);
}

Test(lifetime, consed_nodes_count_references, .init = setup, .fini = teardown) {
    size_t base = ctx->live_nodes;
    fc_array *x = fc_ones(ctx, FC_F32, FC_SHAPE(3));
    fc_array *a = fc_exp(x), *b = fc_exp(x);
    cr_expect_eq(a, b);
    fc_release(a);
    cr_expect_eq(fc_array_status(b), FC_OK, "the second reference keeps the node");
    fc_array *c = fc_exp(x);
    cr_expect_eq(c, b, "still consed after one release");
    fc_release(b);
    fc_release(c);
    fc_release(x);
    cr_expect_eq(ctx->live_nodes, base);
    /* After the node died, building it again makes a fresh one that works. */
    x = fc_ones(ctx, FC_F32, FC_SHAPE(3));
    a = fc_exp(x);
    cr_expect_eq(fc_array_status(a), FC_OK);
    fc_release(a);
    fc_release(x);
    cr_expect_eq(ctx->live_nodes, base);
}

Test(lifetime, nested_scopes, .init = setup, .fini = teardown) {
    size_t base = ctx->live_nodes;
    fc_scope *outer = fc_scope_open(ctx);
    fc_array *x = random_data(FC_F32, FC_SHAPE(8), 8);
    size_t after_outer = ctx->live_nodes;
    fc_scope *inner = fc_scope_open(ctx);
    fc_array *y = fc_sqrt(x);
    cr_expect_eq(fc_array_status(y), FC_OK);
    cr_expect_gt(ctx->live_nodes, after_outer);
    fc_scope_close(inner);
    cr_expect_eq(ctx->live_nodes, after_outer, "the inner scope's arrays die with it");
    cr_expect_eq(fc_array_status(x), FC_OK, "the outer scope's array lives on");
    fc_scope_close(outer);
    cr_expect_eq(ctx->live_nodes, base);
}

Test(lifetime, closing_outer_closes_inner, .init = setup, .fini = teardown) {
    size_t base = ctx->live_nodes;
    fc_scope *outer = fc_scope_open(ctx);
    fc_array *x = random_data(FC_F32, FC_SHAPE(8), 9);
    fc_scope *inner = fc_scope_open(ctx);
    cr_assert_not_null(inner);
    fc_array *y = fc_log(x);
    fc_scope *innermost = fc_scope_open(ctx);
    cr_assert_not_null(innermost);
    (void)fc_exp(y);
    fc_scope_close(outer);
    cr_expect_eq(ctx->live_nodes, base, "every scope inside the outer one is closed too");
    /* A new array after that is owned by the caller (no scope is open). */
    fc_array *z = fc_ones(ctx, FC_F32, FC_SHAPE(2));
    cr_expect_gt(ctx->live_nodes, base);
    fc_release(z);
    cr_expect_eq(ctx->live_nodes, base);
}

/* A counting allocator: every byte fusec takes from it must come back by fc_ctx_destroy. */
typedef struct counting {
    size_t live_bytes, peak_bytes, total_bytes;
    long live_blocks;
} counting;

static void *count_malloc(void *user, size_t size) {
    counting *c = user;
    void *p = malloc(size ? size : 1);
    if (p) {
        c->live_bytes += size;
        c->total_bytes += size;
        c->live_blocks++;
        if (c->live_bytes > c->peak_bytes) c->peak_bytes = c->live_bytes;
    }
    return p;
}
static void *count_realloc(void *user, void *ptr, size_t old_size, size_t new_size) {
    counting *c = user;
    void *p = realloc(ptr, new_size ? new_size : 1);
    if (p) {
        c->live_bytes += new_size - old_size;
        c->total_bytes += new_size;
        if (!ptr) c->live_blocks++;
        if (c->live_bytes > c->peak_bytes) c->peak_bytes = c->live_bytes;
    }
    return p;
}
static void count_free(void *user, void *ptr, size_t size) {
    counting *c = user;
    if (!ptr) return;
    c->live_bytes -= size;
    c->live_blocks--;
    free(ptr);
}

static fc_ctx *counting_ctx(counting *c) {
    static fc_allocator alloc;
    alloc = (fc_allocator){count_malloc, count_realloc, count_free, c};
    fc_ctx_options opts = {0};
    opts.backend = FC_BACKEND_HOST;
    opts.allocator = &alloc;
    fc_ctx *cx = NULL;
    cr_assert_eq(fc_ctx_create(&cx, &opts), FC_OK);
    return cx;
}

Test(lifetime, ctx_destroy_frees_open_scopes_and_kept_arrays) {
    counting c = {0};
    fc_ctx *cx = counting_ctx(&c);
    fc_scope *s1 = fc_scope_open(cx);
    fc_array *x = fc_random_uniform(cx, FC_F32, FC_SHAPE(16, 16), 1);
    fc_array *k = fc_keep(fc_sum(fc_exp(x), FC_AXES(0), false));
    fc_scope *s2 = fc_scope_open(cx);
    (void)fc_matmul(x, x);
    (void)fc_add(x, fc_i64(cx, 300));
    (void)fc_add(x, fc_ones(cx, FC_F32, FC_SHAPE(3))); /* a poisoned array too */
    fc_array *k2 = fc_keep(fc_slice(x, FC_S(1, 5, 2)));
    (void)s1;
    (void)s2;
    (void)k;
    (void)k2;
    cr_expect_gt(c.live_blocks, 0);
    fc_ctx_destroy(cx); /* scopes still open, two kept references never released */
    cr_expect_eq(c.live_blocks, 0, "%ld blocks leaked", c.live_blocks);
    cr_expect_eq(c.live_bytes, 0, "%zu bytes leaked (or sizes passed to free are wrong)",
                 c.live_bytes);
}

Test(lifetime, every_allocation_goes_through_the_allocator) {
    counting c = {0};
    fc_ctx *cx = counting_ctx(&c);
    cr_expect_gt(c.total_bytes, 0, "the context itself comes from the allocator");
    fc_ctx_destroy(cx);
    cr_expect_eq(c.live_blocks, 0);
    cr_expect_eq(c.live_bytes, 0);
}

/* ---- laziness ------------------------------------------------------------------------------- */

Test(laziness, building_a_graph_evaluates_nothing) {
    counting c = {0};
    fc_ctx *cx = counting_ctx(&c);
    fc_scope *s = fc_scope_open(cx);
    const int64_t n = 1000000;
    fc_array *x = fc_random_uniform(cx, FC_F32, FC_SHAPE(n), 42);
    fc_array *y = fc_tanh(fc_add(fc_sin(x), fc_mul(x, fc_f64(cx, 0.1))));
    fc_array *m = fc_mean(fc_reshape(y, FC_SHAPE(1000, -1)), FC_AXES(1), true);
    fc_array *z = fc_sub(fc_reshape(y, FC_SHAPE(1000, 1000)), m);
    fc_array *w = fc_matmul(z, fc_transpose(z));
    cr_assert_eq(fc_array_status(w), FC_OK, "%s", fc_errmsg(cx));
    cr_expect_eq(fc_array_size(x), n);
    cr_expect_null(x->host, "the random source is not generated");
    cr_expect_null(y->host);
    cr_expect_null(m->host);
    cr_expect_null(w->host);
    cr_expect_lt(c.peak_bytes, (size_t)n, "building allocated %zu bytes: was something run?",
                 c.peak_bytes);
    /* Evaluating gives the requested array a value (the host backend runs it). */
    fc_status st = fc_eval(cx, &m, 1);
    cr_expect_eq(st, FC_OK, "%s", fc_errmsg(cx));
    if (st == FC_OK) {
        cr_expect_not_null(m->host);
        cr_expect_geq(m->host_bytes, 1000 * sizeof(float));
        cr_expect_null(w->host, "an array not asked for stays lazy");
    }
    fc_scope_close(s);
    fc_ctx_destroy(cx);
    cr_expect_eq(c.live_bytes, 0);
}

/* ---- the op table -------------------------------------------------------------------------- */

static bool descriptor_complete(const fcg_reduction *d) {
    return d->identity != FCG_ID_UNSET && d->map != FCG_MAP_UNSET &&
           d->combine != FCG_COMBINE_UNSET && d->finish != FCG_FINISH_UNSET &&
           d->acc != FCG_ACC_UNSET && d->result != FCG_RESULT_UNSET;
}

/* The pairings the stages assume (ref/host_reduce.c, codegen/cuda.c): a missing identity
 * only where an extreme or an index is kept, an index only from arg*, a variance only from
 * moments, moments only of plain values. */
static const char *descriptor_inconsistency(const fcg_reduction *d) {
    bool arg = d->combine == FCG_COMBINE_ARGMAX || d->combine == FCG_COMBINE_ARGMIN;
    bool extreme = d->combine == FCG_COMBINE_MAX || d->combine == FCG_COMBINE_MIN;
    bool moments = d->combine == FCG_COMBINE_MOMENTS;
    bool variance = d->finish == FCG_FINISH_VARIANCE || d->finish == FCG_FINISH_STD;
    bool user = d->combine == FCG_COMBINE_USER;
    if (user != (d->identity == FCG_ID_USER) || user != (d->map == FCG_MAP_USER) ||
        user != (d->finish == FCG_FINISH_USER) || user != (d->acc == FCG_ACC_USER) ||
        user != (d->result == FCG_RESULT_USER))
        return "a user reduction's fields are all USER, and only its";
    if (user) return NULL;
    if ((d->identity == FCG_ID_NONE) != (arg || extreme)) return "identity NONE iff max/min/arg*";
    if (arg != (d->finish == FCG_FINISH_INDEX)) return "finish INDEX iff arg*";
    if (arg != (d->result == FCG_RESULT_INDEX)) return "result INDEX iff arg*";
    if (moments != variance) return "finish VARIANCE/STD iff MOMENTS";
    if ((moments || arg) && d->map != FCG_MAP_VALUE) return "moments and arg* map VALUE";
    if ((d->combine == FCG_COMBINE_OR || d->combine == FCG_COMBINE_AND) &&
        d->result != FCG_RESULT_BOOL)
        return "or/and reduce truth values (result BOOL)";
    if ((d->identity == FCG_ID_TRUE || d->identity == FCG_ID_FALSE) !=
        (d->combine == FCG_COMBINE_OR || d->combine == FCG_COMBINE_AND))
        return "TRUE/FALSE identities iff or/and";
    return NULL;
}

Test(op_table, every_reduction_row_has_a_whole_descriptor) {
    int reductions = 0;
    for (int op = 0; op < FCG_OP_COUNT; op++) {
        const fcg_op_info *info = &fcg_ops[op];
        const fcg_reduction *d = &info->red;
        if (info->kind == FCG_KIND_SCAN) { /* a running reduction: its combine, no finish */
            cr_expect(descriptor_complete(d) && d->finish == FCG_FINISH_NONE &&
                          d->map == FCG_MAP_VALUE &&
                          (d->combine == FCG_COMBINE_ADD || d->combine == FCG_COMBINE_MUL ||
                           d->combine == FCG_COMBINE_MAX || d->combine == FCG_COMBINE_MIN),
                      "scan %s: a descriptor scans take (VALUE map, no finish, +, *, max, min)",
                      info->pyname);
            cr_expect(info->params == FCG_P_AXIS, "scan %s reads p.axis alone", info->pyname);
            continue;
        }
        if (info->kind != FCG_KIND_REDUCE) {
            const fcg_reduction unset = {FCG_ID_UNSET, FCG_MAP_UNSET, FCG_COMBINE_UNSET,
                                         FCG_FINISH_UNSET, FCG_ACC_UNSET, FCG_RESULT_UNSET, false};
            cr_expect(memcmp(d, &unset, sizeof unset) == 0, "%s is not a reduction but has a descriptor",
                      info->pyname);
            /* (axes is a transform's too: FFTN) */
            cr_expect(!(info->params & (FCG_P_KEEPDIMS | FCG_P_DDOF | FCG_P_ORD)),
                      "%s names a reduction's parameters", info->pyname);
            continue;
        }
        reductions++;
        cr_expect(descriptor_complete(d), "reduction %s: its descriptor has an UNSET field",
                  info->pyname);
        const char *why = descriptor_inconsistency(d);
        cr_expect(!why, "reduction %s: %s", info->pyname, why ? why : "");
        cr_expect((info->params & (FCG_P_AXES | FCG_P_KEEPDIMS)) == (FCG_P_AXES | FCG_P_KEEPDIMS),
                  "reduction %s must read axes and keepdims", info->pyname);
        cr_expect(d->by_ord == !!(info->params & FCG_P_ORD), "%s: by_ord iff it reads ord",
                  info->pyname);
        if (d->by_ord)
            for (int ord = 0; ord <= FC_NORM_INF; ord++) {
                const fcg_reduction *o = fcg_reduction_for((fcg_op)op, ord);
                cr_expect(descriptor_complete(o) && !descriptor_inconsistency(o),
                          "%s: ord %d's descriptor is incomplete or inconsistent", info->pyname, ord);
            }
    }
    cr_expect_geq(reductions, 13, "only %d reduction rows", reductions);
}

/* Every field outside the op's params mask is zero (what consing and hashing rely on, and
 * what makes the mask a true statement of what the op reads). */
static bool params_outside_mask_zero(const fc_array *a, char *field, size_t size) {
    fcg_params p = a->p, zero;
    memset(&zero, 0, sizeof zero);
    uint32_t used = fcg_ops[a->op].params;
    if (used & FCG_P_IVAL) p.ival = 0;
    if (used & FCG_P_RE) p.re = 0;
    if (used & FCG_P_IM) p.im = 0;
    if (used & FCG_P_COUNT) p.count = 0;
    if (used & FCG_P_A) memset(p.a, 0, sizeof p.a);
    if (used & FCG_P_B) memset(p.b, 0, sizeof p.b);
    if (used & FCG_P_AXES) p.axes = 0;
    if (used & FCG_P_AXIS) p.axis = 0;
    if (used & FCG_P_DDOF) p.ddof = 0;
    if (used & FCG_P_KEEPDIMS) p.keepdims = 0;
    if (used & FCG_P_ORD) p.ord = 0;
    if (used & FCG_P_MODE) p.mode = 0;
    if (used & FCG_P_FLAG) p.flag = 0;
    /* compare field by field: padding is the struct's own business */
    const char *bad = p.ival ? "ival" : p.re != 0 || signbit(p.re) ? "re" : p.im != 0 || signbit(p.im) ? "im"
                      : p.count ? "count" : p.axes ? "axes" : p.axis ? "axis" : p.ddof ? "ddof"
                      : p.keepdims ? "keepdims" : p.ord ? "ord" : p.mode ? "mode" : p.flag ? "flag" : NULL;
    if (!bad && memcmp(p.a, zero.a, sizeof p.a)) bad = "a";
    if (!bad && memcmp(p.b, zero.b, sizeof p.b)) bad = "b";
    if (bad) snprintf(field, size, "%s", bad);
    return !bad;
}

static void visit_params(const fc_array *a, bool *seen_op, int *bad) {
    char field[16];
    seen_op[a->op] = true;
    if (!params_outside_mask_zero(a, field, sizeof field) && (*bad)++ < 5)
        cr_log_error("%s node sets p.%s, which its row's params column does not name",
                     fcg_ops[a->op].pyname, field);
    for (int i = 0; i < a->nin; i++) visit_params(a->in[i], seen_op, bad);
}

Test(op_table, no_node_sets_a_parameter_its_row_does_not_name, .init = setup, .fini = teardown) {
    bool seen[FCG_OP_COUNT] = {false};
    int bad = 0;
    for (uint64_t seed = 0; seed < 600; seed++) {
        rdag_options o;
        rdag_default_options(&o);
        rdag d;
        cr_assert_eq(rdag_build(ctx, seed, &o, &d), FC_OK);
        for (int i = 0; i < d.nout; i++) visit_params(d.out[i], seen, &bad);
        rdag_free(&d);
    }
    /* the random programs hold no user kernels (the host reference cannot run them) */
    float data[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    fc_array *x = fc_from_host(ctx, FC_F32, FC_SHAPE(3, 4), data);
    fc_kernel *ek, *rk;
    cr_assert_eq(fc_elementwise_kernel(ctx, "T x", "T y, T z", "y = x; z = -x;", "pair", &ek), FC_OK);
    cr_assert_eq(fc_reduction_kernel(ctx, "T x", "T y", "x", "a + b", "y = a", "0", "total", NULL,
                                     &rk), FC_OK);
    fc_array *pair[2];
    cr_assert_eq(fc_kernel_call(ek, 1, &x, 2, pair), FC_OK);
    visit_params(pair[1], seen, &bad);
    visit_params(fc_kernel_reduce(rk, 1, &x, FC_AXES(0), true), seen, &bad);
    cr_expect_eq(bad, 0, "%d nodes set parameters outside their op's params column", bad);
    int missed = 0;
    for (int op = 0; op < FCG_OP_COUNT; op++)
        if (!seen[op] && fcg_ops[op].kind != FCG_KIND_SPECIAL && op != FCG_OP_INPUT && missed++ < 8)
            cr_log_warn("op %s did not occur in the random programs", fcg_ops[op].pyname);
    cr_expect_eq(missed, 0, "%d ops never occurred: the check above did not see them", missed);
}

/* What the random programs (tests/random_dag.c) reach, as its header promises: every op but
 * user kernels, poison and named program inputs (op_table test above, with the user kernels
 * added by hand), every dtype as an input and as a node, zero-size inputs in about one
 * program in eight, zero-size nodes and outputs, and size-1 extents. */
typedef struct rdag_reach {
    bool op[FCG_OP_COUNT];
    bool input_dtype[FC_DTYPE_COUNT], node_dtype[FC_DTYPE_COUNT];
    int zero_nodes, unit_nodes, zero_outputs;
} rdag_reach;

static void visit_reach(const fc_array *a, rdag_reach *r) {
    r->op[a->op] = true;
    r->node_dtype[a->dtype] = true;
    int64_t n = 1;
    bool unit = false;
    for (int d = 0; d < a->ndim; d++) {
        n *= a->shape[d];
        unit |= a->shape[d] == 1 && a->ndim > 1;
    }
    r->zero_nodes += n == 0;
    r->unit_nodes += unit;
    for (int i = 0; i < a->nin; i++) visit_reach(a->in[i], r);
}

Test(op_table, random_programs_reach_every_op_dtype_and_empty_and_unit_extents, .init = setup,
     .fini = teardown) {
    static rdag_reach r;
    memset(&r, 0, sizeof r);
    int programs = 600, zero_programs = 0, zero_inputs = 0;
    for (uint64_t seed = 0; seed < (uint64_t)programs; seed++) {
        rdag d;
        cr_assert_eq(rdag_build(ctx, seed, NULL, &d), FC_OK);
        bool empty_input = false;
        for (int i = 0; i < d.nin; i++) {
            r.input_dtype[fc_array_dtype(d.in[i])] = true;
            empty_input |= fc_array_size(d.in[i]) == 0;
        }
        cr_assert(!d.zero || empty_input, "seed %llu: a zero-extent program with no empty input",
                  (unsigned long long)seed);
        zero_programs += d.zero;
        zero_inputs += empty_input;
        for (int i = 0; i < d.nout; i++) {
            visit_reach(d.out[i], &r);
            r.zero_outputs += fc_array_size(d.out[i]) == 0;
        }
        rdag_free(&d);
    }
    for (int op = 0; op < FCG_OP_COUNT; op++)
        cr_expect(r.op[op] || fcg_ops[op].kind == FCG_KIND_SPECIAL ||
                      fcg_ops[op].kind == FCG_KIND_USER || op == FCG_OP_INPUT ||
                      op == FCG_OP_USER_REDUCE,
                  "op %s never occurs in %d random programs", fcg_ops[op].pyname, programs);
    for (int t = 0; t < FC_DTYPE_COUNT; t++) {
        cr_expect(r.input_dtype[t], "no %s input", fc_dtype_name((fc_dtype)t));
        cr_expect(r.node_dtype[t], "no %s node", fc_dtype_name((fc_dtype)t));
    }
    /* about 1 in 8 (zero_percent 12): between 1 in 16 and 1 in 5 over 600 seeds */
    cr_expect(zero_programs > programs / 16 && zero_programs < programs / 5,
              "%d of %d programs have a zero extent", zero_programs, programs);
    cr_expect_geq(zero_inputs, zero_programs);
    cr_expect_gt(r.zero_outputs, programs / 50, "only %d zero-size outputs", r.zero_outputs);
    cr_expect_gt(r.zero_nodes, programs / 10);
    cr_expect_gt(r.unit_nodes, programs);
    cr_log_info("%d programs: %d with a zero extent, %d with an empty input, %d zero-size "
                "outputs, %d zero-size and %d size-1-axis nodes", programs, zero_programs,
                zero_inputs, r.zero_outputs, r.zero_nodes, r.unit_nodes);
    /* Whether a program has a zero extent comes from a stream of its own: with zero_percent 0
     * the same seeds give the same graphs, zero programs aside. */
    rdag_options none;
    rdag_default_options(&none);
    none.zero_percent = 0;
    for (uint64_t seed = 0; seed < 50; seed++) {
        rdag a, b;
        cr_assert_eq(rdag_build(ctx, seed, NULL, &a), FC_OK);
        cr_assert_eq(rdag_build(ctx, seed, &none, &b), FC_OK);
        fc_hash ha, hb;
        cr_assert_eq(fc_graph_hash(a.out, a.nout, &ha), FC_OK);
        cr_assert_eq(fc_graph_hash(b.out, b.nout, &hb), FC_OK);
        cr_assert(a.zero || (ha.lo == hb.lo && ha.hi == hb.hi),
                  "seed %llu: zero_percent changes a program without a zero extent",
                  (unsigned long long)seed);
        rdag_free(&a);
        rdag_free(&b);
    }
}

/* Masks need their count: a 0-d nonzero is refused as NumPy 2 refuses it, a program input
 * without data says the size could not be evaluated, and nothing leaks either way. */
Test(masks, sizes_need_values, .init = setup, .fini = teardown) {
    fc_scope *s = fc_scope_open(ctx);
    fc_array *c[FC_MAX_DIMS];
    fc_status st = fc_nonzero(fc_f64(ctx, 2.0), c);
    cr_assert_eq(st, FC_ERR_VALUE, "%s", fc_strerror(st));
    fcg_params pin;
    memset(&pin, 0, sizeof pin);
    fc_array *in = fcg_ret(ctx, fcg_node(ctx, FCG_OP_INPUT, FC_F32, FC_F32, false, 1,
                                         (int64_t[]){5}, 0, NULL, &pin)); /* a placeholder */
    fc_array *f = fc_flatnonzero(in);
    cr_assert_neq(fc_array_status(f), FC_OK);
    cr_assert(strstr(fc_errmsg(ctx), "flatnonzero") && strstr(fc_errmsg(ctx), "count"), "%s",
              fc_errmsg(ctx));
    fc_array *b = fc_bincount(fc_cast(in, FC_I32), NULL, 0);
    cr_assert_neq(fc_array_status(b), FC_OK);
    cr_assert(strstr(fc_errmsg(ctx), "bincount"), "%s", fc_errmsg(ctx));
    int32_t v[6] = {0, 3, 0, 7, 1, 0};
    fc_array *x = fc_from_host(ctx, FC_I32, FC_SHAPE(2, 3), v);
    cr_assert_eq(fc_nonzero(x, c), FC_OK, "%s", fc_errmsg(ctx));
    int64_t r[3], cc[3];
    cr_assert_eq(fc_read(c[0], r, 0, 3), FC_OK, "%s", fc_errmsg(ctx));
    cr_assert_eq(fc_read(c[1], cc, 0, 3), FC_OK, "%s", fc_errmsg(ctx));
    cr_assert(r[0] == 0 && cc[0] == 1 && r[1] == 1 && cc[1] == 0 && r[2] == 1 && cc[2] == 1);
    fc_scope_close(s);
}

/* ---- values that die with an evaluation (fcg_dying_nodes) -------------------------------- */

/* Whether `v` dies when `outs` are evaluated, by the references the graph holds now. */
static bool dies_with(fc_array *const *outs, int n, const fc_array *v) {
    fc_hash key;
    fc_array *const *order;
    size_t count;
    cr_assert_eq(fcg_plan_key(ctx, outs, n, &key, &order, &count), FC_OK);
    uint32_t *dropped = calloc(count, sizeof *dropped);
    uint8_t *dies = calloc(count, 1);
    fcg_dying_nodes(outs, n, order, count, dropped, dies);
    bool found = false, d = false;
    for (size_t i = 0; i < count; i++)
        if (order[i] == v) found = true, d = dies[i];
    free(dropped);
    free(dies);
    cr_assert(found, "the value is not in the evaluation's graph");
    return d;
}

static fc_array *host_value(void) {
    float data[6] = {0.5f, -1.25f, 2.0f, 3.5f, -0.75f, 9.0f};
    return fc_from_host(ctx, FC_F32, FC_SHAPE(2, 3), data);
}

/* A value dies with an evaluation when every reference to it comes from the evaluated arrays
 * (which drop their inputs) or from nodes that die too; a reference from the caller, a
 * scope, an expression left unevaluated or an evaluated array itself keeps it. */
Test(graph, values_die_with_the_evaluations_that_consume_them, .init = setup, .fini = teardown) {
    fc_array *x = host_value();
    fc_array *y = fc_add(x, fc_f64(ctx, 1.0));
    cr_assert_not(dies_with(&y, 1, x), "the caller holds x");
    fc_release(x);
    cr_assert(dies_with(&y, 1, x), "only y reads x");
    fc_array *t = fc_exp(y), *u = fc_mul(t, t), *other = fc_negative(y);
    fc_release(y);
    fc_release(t);
    cr_assert_not(dies_with(&u, 1, x), "an expression outside the evaluation reads y");
    fc_release(other);
    cr_assert(dies_with(&u, 1, x), "t (read twice), y and x die with u");
    fc_array *both[2] = {u, fc_sin(u)};
    cr_assert(dies_with(both, 2, x));
    cr_assert_not(dies_with(both, 2, u), "an evaluated array never dies");
    fc_release(both[1]);
    fc_release(u);
}

Test(graph, scoped_values_live_until_their_scope_closes, .init = setup, .fini = teardown) {
    fc_scope *s = fc_scope_open(ctx);
    fc_array *x = host_value();
    fc_array *y = fc_keep(fc_abs(x));
    cr_assert_not(dies_with(&y, 1, x), "the scope holds x");
    fc_scope_close(s);
    cr_assert(dies_with(&y, 1, x));
    fc_release(y);
}

/* A program traced on placeholders and replayed (fc_placeholder, fc_replay_*): the replay is
 * the graph the same ops build on the new inputs (the same hash-consed nodes, so the same
 * values), the weak scalar stays weak, a mismatched input is refused, and nothing leaks. */
Test(graph, replay_builds_the_traced_graph_on_new_inputs, .init = setup, .fini = teardown) {
    fc_scope *s = fc_scope_open(ctx);
    fc_array *p = fc_placeholder(ctx, FC_F32, FC_SHAPE(4), false);
    fc_array *w = fc_placeholder(ctx, FC_F64, FC_SHAPE(), true);
    cr_assert_eq(fc_array_status(p), FC_OK);
    cr_assert(fc_array_is_weak(w));
    fc_array *c = fc_arange(ctx, FC_F32, 0, 4, 1); /* depends on no input: shared */
    fc_array *traced[2] = {fc_tanh(fc_add(fc_mul(p, w), c)), fc_sum(c, FC_AXES(0), false)};
    cr_assert_eq(fc_eval(ctx, traced, 1), FC_ERR_UNBOUND);
    fc_replay *r;
    fc_array *ins[2] = {p, w};
    cr_assert_eq(fc_replay_create(traced, 2, ins, 2, &r), FC_OK);
    for (int k = 0; k < 3; k++) {
        float data[4] = {1.0f + k, 2, 3, 4};
        fc_array *x = fc_from_host(ctx, FC_F32, FC_SHAPE(4), data);
        fc_array *args[2] = {x, fc_f64(ctx, 0.5 * k)}, *out[2];
        cr_assert_eq(fc_replay_run(r, args, out), FC_OK);
        fc_array *want = fc_tanh(fc_add(fc_mul(x, args[1]), c));
        cr_assert_eq(out[0], want, "the replay is the hash-consed node op by op builds");
        cr_assert_eq(out[1], traced[1], "what depends on no input is shared");
        float got[4];
        cr_assert_eq(fc_read(out[0], got, 0, 4), FC_OK);
        cr_assert_float_eq(got[0], tanhf((1.0f + k) * 0.5f * k), 1e-6);
    }
    fc_array *bad[2] = {fc_zeros(ctx, FC_F64, FC_SHAPE(4)), fc_f64(ctx, 1)}, *out[2];
    cr_assert_eq(fc_replay_run(r, bad, out), FC_ERR_DTYPE);
    cr_assert_null(out[0]);
    cr_assert(strstr(fc_errmsg(ctx), "traced as f32"), "%s", fc_errmsg(ctx));
    bad[0] = fc_zeros(ctx, FC_F32, FC_SHAPE(4));
    bad[1] = fc_i64(ctx, 1); /* an int where a weak float was traced */
    cr_assert_eq(fc_replay_run(r, bad, out), FC_ERR_DTYPE);
    fc_replay_destroy(r);
    cr_assert_eq(fc_array_status(fc_placeholder(ctx, FC_F32, FC_SHAPE(), true)),
                 FC_ERR_INVALID, "a weak placeholder is bool, i64, f64 or c128");
    cr_assert_eq(fc_replay_create(NULL, 1, NULL, 0, &r), FC_ERR_NULL);
    fc_replay_destroy(NULL);
    fc_scope_close(s);
}
