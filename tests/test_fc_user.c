/*
 * tests/test_fc_user.c - user kernels in the .fc format (docs/FC_FORMAT.md, "User kernels"):
 *
 *   - declarations and calls (elementwise, several outputs unpacked, reductions with axis and
 *     keepdims) build the graph the C API builds: the same structural hash, in another context;
 *   - fc_program_print declares each kernel once before its first call and writes calls that
 *     parse back to the same graph in a fresh context and print the same bytes: elementwise,
 *     several outputs (all used, one unused), raw inputs, reductions, reduce_type, fused
 *     chains, texts with every kind of byte, kernel names that clash with other names;
 *   - unpacking lists, string literals that join and escape, a kernel variable hiding a function;
 *   - errors: a position and a message that names the kernel or the rule;
 *   - failing every allocation in turn: clean FC_ERR_NOMEM, nothing leaked;
 *   - a traced evaluation (on the host backend, which refuses to run the kernels) writes the
 *     canonical text, which parses to the same graph; `fusec warm` of it compiles with NVRTC
 *     for two archs (no GPU), a second warm compiles nothing, and `fusec dump` shows the user's
 *     text under its markers.
 */
#include <criterion/criterion.h>

#include <fusec.h>

#include "graph.h"
#include "counting_alloc.h"
#include "test_util.h"
#include "cli_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static fc_ctx *ctx;

static void setup(void) { ctx = tu_host_ctx(); }
static void teardown(void) { fc_ctx_destroy(ctx); }

static fc_kernel *ew(fc_ctx *c, const char *in, const char *out, const char *body,
                     const char *name) {
    fc_kernel *k = NULL;
    cr_assert_eq(fc_elementwise_kernel(c, in, out, body, name, &k), FC_OK, "%s: %s", name,
                 fc_errmsg(c));
    return k;
}

static fc_kernel *red(fc_ctx *c, const char *in, const char *out, const char *map,
                      const char *reduce, const char *post, const char *name,
                      const char *reduce_type) {
    fc_kernel *k = NULL;
    cr_assert_eq(fc_reduction_kernel(c, in, out, map, reduce, post, "0", name, reduce_type, &k),
                 FC_OK, "%s: %s", name, fc_errmsg(c));
    return k;
}

/* A data array of zeros (the tests hash and print; values do not matter). */
static fc_array *data(fc_ctx *c, fc_dtype dt, fc_shape shape) {
    int64_t n = 1;
    for (int d = 0; d < shape.ndim; d++) n *= shape.dim[d];
    void *buf = calloc((size_t)n + 1, fc_dtype_size(dt));
    fc_array *a = fc_from_host(c, dt, shape, buf);
    free(buf);
    cr_assert_eq(fc_array_status(a), FC_OK);
    return a;
}

static fc_array *call1(fc_kernel *k, int n, fc_array *const *in) {
    fc_array *r = fc_kernel_call1(k, n, in);
    cr_assert_eq(fc_array_status(r), FC_OK, "%s", fc_array_errmsg(r));
    return r;
}

static fc_array *reduce1(fc_kernel *k, int n, fc_array *const *in, fc_axes axes, bool keep) {
    fc_array *r = fc_kernel_reduce(k, n, in, axes, keep);
    cr_assert_eq(fc_array_status(r), FC_OK, "%s", fc_array_errmsg(r));
    return r;
}

static bool hash_eq(fc_hash a, fc_hash b) { return a.lo == b.lo && a.hi == b.hi; }

static int count_substr(const char *text, const char *s) {
    int count = 0;
    for (const char *p = text; (p = strstr(p, s)); p += strlen(s)) count++;
    return count;
}

/* Parses and builds text in c (symbols bound to 4); returns the number of outputs. */
static int build_text(fc_ctx *c, const char *text, fc_array **outs) {
    fc_program *p;
    cr_assert_eq(fc_program_parse(c, text, strlen(text), "user.fc", &p), FC_OK, "%s\n%s",
                 fc_errmsg(c), text);
    for (int i = 0; i < fc_program_num_symbols(p); i++)
        cr_assert_eq(fc_program_set_symbol(p, fc_program_symbol_name(p, i), 4), FC_OK);
    int n = fc_program_num_outputs(p);
    cr_assert_leq(n, 16);
    cr_assert_eq(fc_program_build(p, NULL, outs), FC_OK, "%s\n%s", fc_errmsg(c), text);
    fc_program_destroy(p);
    return n;
}

/* Prints outs[0..n) of ctx, then parses and builds the text in a fresh context: the same
 * structural hash, and printing that graph gives the same bytes. Returns the text (free). */
static char *round_trip(fc_array *const *outs, int n, const char *const *names) {
    fc_hash h1, h2;
    cr_assert_eq(fc_graph_hash(outs, n, &h1), FC_OK, "%s", fc_errmsg(ctx));
    char *t1, *t2;
    cr_assert_eq(fc_program_print(ctx, outs, n, names, &t1), FC_OK, "%s", fc_errmsg(ctx));
    fc_ctx *c2 = tu_host_ctx();
    fc_array *o2[16];
    cr_assert_eq(build_text(c2, t1, o2), n);
    cr_assert_eq(fc_graph_hash(o2, n, &h2), FC_OK);
    cr_assert(hash_eq(h1, h2), "print -> parse changed the graph:\n%s", t1);
    cr_assert_eq(fc_program_print(c2, o2, n, names, &t2), FC_OK, "%s", fc_errmsg(c2));
    cr_assert_str_eq(t1, t2, "reprinting in another context differs");
    char *copy = strdup(t1);
    fc_free(ctx, t1);
    fc_free(c2, t2);
    fc_ctx_destroy(c2);
    return copy;
}

/* Whether `first` occurs in text, before `then`. */
static bool before(const char *text, const char *first, const char *then) {
    const char *a = strstr(text, first), *b = strstr(text, then);
    return a && b && a < b;
}

#define AXPB_IN "float32 x, float32 a, float32 b"

/* ---- printing: each form round-trips ----------------------------------------------------- */

Test(fc_user_print, elementwise_calls_declare_once, .init = setup, .fini = teardown) {
    fc_kernel *k = ew(ctx, AXPB_IN, "float32 y", "y = a * x + b;", "axpb");
    fc_array *x = data(ctx, FC_F32, FC_SHAPE(3, 4));
    fc_array *y = call1(k, 3, (fc_array *[]){x, fc_f64(ctx, 2.0), fc_i64(ctx, -1)});
    fc_array *z = call1(k, 3, (fc_array *[]){y, x, fc_f64(ctx, 0.5)});
    char *text = round_trip((fc_array *[]){z, y}, 2, NULL);
    cr_expect_eq(count_substr(text, "= ElementwiseKernel("), 1, "%s", text);
    cr_expect(strstr(text, "axpb = ElementwiseKernel(\"" AXPB_IN "\", \"float32 y\", \"y = a * x "
                           "+ b;\", \"axpb\")\n"), "%s", text);
    cr_expect(before(text, "axpb = ElementwiseKernel(", "axpb(x0"), "%s", text);
    cr_expect(strstr(text, "y0 = axpb(y1, x0, "), "%s", text);
    free(text);
}

Test(fc_user_print, several_outputs_unpack, .init = setup, .fini = teardown) {
    fc_kernel *k = ew(ctx, "T x, T y", "T s, T d", "s = x + y;\nd = x - y;", "sumdiff");
    fc_array *x = data(ctx, FC_F32, FC_SHAPE(3, 4)), *y = data(ctx, FC_F32, FC_SHAPE(4));
    fc_array *o[2];
    cr_assert_eq(fc_kernel_call(k, 2, (fc_array *[]){x, y}, 2, o), FC_OK, "%s", fc_errmsg(ctx));
    /* both outputs, named, in the other order */
    char *text = round_trip((fc_array *[]){o[1], o[0]}, 2, (const char *[]){"dd", "ss"});
    cr_expect(strstr(text, "ss, dd = sumdiff(x0, x1)\n"), "%s", text);
    cr_expect(strstr(text, "\"s = x + y;\\nd = x - y;\""), "%s", text);
    free(text);
    /* one output unused: the other gets a fresh name */
    text = round_trip((fc_array *[]){o[1]}, 1, NULL);
    cr_expect(strstr(text, "t0, y0 = sumdiff(x0, x1)\n"), "%s", text);
    free(text);
    /* an output used inside an expression, another call of the same kernel beside it */
    fc_array *p[2];
    cr_assert_eq(fc_kernel_call(k, 2, (fc_array *[]){y, fc_f64(ctx, 3.0)}, 2, p), FC_OK);
    fc_array *e = fc_add(fc_exp(o[0]), p[1]);
    text = round_trip((fc_array *[]){e, o[1]}, 2, NULL);
    cr_expect_eq(count_substr(text, "= ElementwiseKernel("), 1, "%s", text);
    cr_expect_eq(count_substr(text, " = sumdiff("), 2, "%s", text);
    cr_expect(strstr(text, ", y1 = sumdiff(x0, x1)\n"), "%s", text);
    free(text);
}

Test(fc_user_print, raw_inputs, .init = setup, .fini = teardown) {
    fc_kernel *k = ew(ctx, "T x, raw T v", "T r", "r = v[(i + 1) % v.size()] - x;", "nextdiff");
    fc_array *x = data(ctx, FC_F64, FC_SHAPE(2, 5)), *v = data(ctx, FC_F64, FC_SHAPE(7));
    fc_array *r = call1(k, 2, (fc_array *[]){x, v});
    fc_array *q = call1(k, 2, (fc_array *[]){fc_f64(ctx, 1.5), r}); /* a raw 2-d argument */
    char *text = round_trip((fc_array *[]){r, q}, 2, NULL);
    cr_expect(strstr(text, "\"T x, raw T v\""), "%s", text);
    cr_expect(strstr(text, "y0 = nextdiff(x0, x1)\n"), "%s", text);
    cr_expect(strstr(text, "y1 = nextdiff(1.5, y0)\n"), "%s", text);
    free(text);
}

Test(fc_user_print, reductions_with_axes_keepdims_and_reduce_type, .init = setup,
     .fini = teardown) {
    fc_kernel *l2 = red(ctx, "T x", "T y", "x * x", "a + b", "y = sqrt(a)", "l2norm", NULL);
    fc_kernel *dot = red(ctx, "T x, T w", "T y", "x * w", "a + b", "y = a", "dot", NULL);
    fc_kernel *wide = red(ctx, "T x", "float32 y", "x", "a + b", "y = (float)a", "wide",
                          "float64");
    fc_kernel *mixed = red(ctx, "T x, U w", "T y", "x * (T)w", "a + b", "y = a", "mixed", "U");
    fc_array *x = data(ctx, FC_F32, FC_SHAPE(2, 3, 4)), *v = data(ctx, FC_F32, FC_SHAPE(4));
    fc_array *w = data(ctx, FC_F64, FC_SHAPE(3, 1));
    fc_array *outs[] = {
        reduce1(l2, 1, &x, FC_AXES(1), false),
        reduce1(l2, 1, &x, FC_ALL, true),
        reduce1(l2, 1, &x, FC_AXES(0, 2), false),
        reduce1(l2, 1, &x, FC_AXES(-1), true),
        reduce1(dot, 2, (fc_array *[]){x, fc_f64(ctx, 0.5)}, FC_AXES(2), false),
        reduce1(dot, 2, (fc_array *[]){v, x}, FC_AXES(0, 1), false),
        reduce1(wide, 1, &x, FC_AXES(1), false),
        reduce1(mixed, 2, (fc_array *[]){x, w}, FC_AXES(1), true),
    };
    char *text = round_trip(outs, 8, NULL);
    cr_expect_eq(count_substr(text, "= ReductionKernel("), 4, "%s", text);
    cr_expect(strstr(text, "y0 = l2norm(x0, axis=[1])\n"), "%s", text);
    cr_expect(strstr(text, "y1 = l2norm(x0, axis=[0, 1, 2], keepdims=True)\n"), "%s", text);
    cr_expect(strstr(text, "y3 = l2norm(x0, axis=[2], keepdims=True)\n"), "%s", text);
    cr_expect(strstr(text, "\"l2norm\")\n"), "the default reduce_type is not written: %s", text);
    cr_expect(strstr(text, "\"wide\", reduce_type=\"f64\")\n"), "%s", text);
    cr_expect(strstr(text, "\"mixed\", reduce_type=\"U\")\n"), "%s", text);
    free(text);
}

Test(fc_user_print, a_fused_chain, .init = setup, .fini = teardown) {
    fc_kernel *axpb = ew(ctx, AXPB_IN, "float32 y", "y = a * x + b;", "axpb");
    fc_kernel *sd = ew(ctx, "T x, T y", "T s, T d", "s = x + y; d = x - y;", "sumdiff");
    fc_kernel *l2 = red(ctx, "T x", "T y", "x * x", "a + b", "y = sqrt(a)", "l2norm", NULL);
    fc_array *x = data(ctx, FC_F32, FC_SHAPE(8, 16));
    fc_array *z = fc_exp(call1(axpb, 3, (fc_array *[]){x, fc_f64(ctx, 2.0), fc_f64(ctx, 0.5)}));
    fc_array *o[2];
    cr_assert_eq(fc_kernel_call(sd, 2, (fc_array *[]){z, fc_sqrt(x)}, 2, o), FC_OK);
    fc_array *n = fc_add(reduce1(l2, 1, (fc_array *[]){fc_mul(o[0], o[1])}, FC_AXES(1), true),
                         fc_i64(ctx, 1));
    fc_array *m = fc_sum(fc_div(x, n), FC_AXES(0), false);
    char *text = round_trip((fc_array *[]){m, o[1]}, 2, (const char *[]){"m", "d"});
    cr_expect(before(text, "axpb = ", "sumdiff = ") && before(text, "sumdiff = ", "l2norm = "),
              "declarations in the order of first use: %s", text);
    cr_expect(strstr(text, ", d = sumdiff("), "%s", text);
    free(text);
}

/* Kernel variables take the kernel's name unless the name is a function's (which the
 * variable would hide), a reserved word, a generated name, an output's or another kernel's. */
Test(fc_user_print, kernel_variables_avoid_other_names, .init = setup, .fini = teardown) {
    static const char *const names[] = {"sum", "out", "t0", "y3", "ElementwiseKernel", "axpb",
                                        "x"};
    static const char *const want[] = {"sum_1", "out_1", "t0_1", "y3_1", "ElementwiseKernel_1",
                                       "axpb_1", "x"};
    fc_array *x = data(ctx, FC_F32, FC_SHAPE(4));
    fc_array *outs[10];
    int n = 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        fc_kernel *k = ew(ctx, "T x", "T y", "y = x;", names[i]);
        outs[n++] = call1(k, 1, &x);
    }
    /* two definitions of one name */
    outs[n++] = call1(ew(ctx, "T x", "T y", "y = x + 1;", "k"), 1, &x);
    outs[n++] = call1(ew(ctx, "T x", "T y", "y = x + 2;", "k"), 1, &x);
    const char *onames[10] = {"axpb", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9"};
    char *text = round_trip(outs, n, onames);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char decl[128];
        snprintf(decl, sizeof decl, "\n%s = ElementwiseKernel(", want[i]);
        cr_expect(strstr(text, decl), "kernel %s should be bound to %s: %s", names[i], want[i],
                  text);
    }
    cr_expect(strstr(text, "\nk = ElementwiseKernel(") && strstr(text, "\nk_1 = ElementwiseKernel("),
              "%s", text);
    cr_expect(strstr(text, "r1 = out_1(x0)\n"), "%s", text);
    free(text);
}

/* Every byte a kernel's text can hold prints as a literal that reads back to it. */
Test(fc_user_print, texts_with_any_bytes, .init = setup, .fini = teardown) {
    const char *body = "y = x; // \"q\" \\ \t\r\n/* \x01\x1f\x7f \xc3\xa9 # fusec trace */";
    fc_kernel *k = ew(ctx, "T x", "T y", body, "odd");
    fc_array *x = data(ctx, FC_F32, FC_SHAPE(2));
    fc_array *y = call1(k, 1, &x);
    char *text = round_trip(&y, 1, NULL);
    cr_expect(strstr(text, "\"y = x; // \\\"q\\\" \\\\ \\t\\r\\n/* \\x01\\x1f\x7f \xc3\xa9 # fusec "
                           "trace */\""), "%s", text);
    cr_expect_eq(count_substr(text, "\n"), 4, "one line per statement: %s", text);
    free(text);
}

/* ---- parsing: the C API's graph ----------------------------------------------------------- */

Test(fc_user_parse, programs_build_the_c_api_graph) {
    const char *text =
        "x = input f32 [4, 8]\n"
        "axpb = ElementwiseKernel(\"" AXPB_IN "\", \"float32 y\", \"y = a * x + b;\", \"axpb\")\n"
        "sumdiff = ElementwiseKernel(in_params=\"T x, T y\", out_params=\"T s, T d\",\n"
        "                            operation=\"s = x + y;\\n\"\n"
        "                                      \"d = x - y;\", name=\"sumdiff\")\n"
        "l2norm = ReductionKernel(\"T x\", \"T y\", \"x * x\", \"a + b\", \"y = sqrt(a)\", \"0\",\n"
        "                         name=\"l2norm\", reduce_type=None)\n"
        "wide = ReductionKernel(\"T x\", \"T y\", \"x\", \"a + b\", \"y = a\", \"0\", \"wide\", f64)\n"
        "z = axpb(x, 2.0, 1)\n"
        "s, d = sumdiff(z, x)\n"
        "n = l2norm(s * d, axis=1, keepdims=True)\n"
        "m = l2norm(d)\n"
        "k2 = l2norm\n"
        "q = k2(x, axis=[0, 1]) + wide(x, keepdims=False, axis=-1)\n"
        "out n, m, d, q\n";
    fc_ctx *a = tu_host_ctx(), *b = tu_host_ctx();
    fc_array *pa[16];
    cr_assert_eq(build_text(a, text, pa), 4);
    fc_kernel *axpb = ew(b, AXPB_IN, "float32 y", "y = a * x + b;", "axpb");
    fc_kernel *sd = ew(b, "T x, T y", "T s, T d", "s = x + y;\nd = x - y;", "sumdiff");
    fc_kernel *l2 = red(b, "T x", "T y", "x * x", "a + b", "y = sqrt(a)", "l2norm", NULL);
    fc_kernel *wide = red(b, "T x", "T y", "x", "a + b", "y = a", "wide", "float64");
    fc_array *x = data(b, FC_F32, FC_SHAPE(4, 8));
    fc_array *z = fc_kernel_call1(axpb, 3, (fc_array *[]){x, fc_f64(b, 2.0), fc_i64(b, 1)});
    fc_array *o[2];
    cr_assert_eq(fc_kernel_call(sd, 2, (fc_array *[]){z, x}, 2, o), FC_OK);
    fc_array *pb[4] = {
        fc_kernel_reduce(l2, 1, (fc_array *[]){fc_mul(o[0], o[1])}, FC_AXES(1), true),
        fc_kernel_reduce(l2, 1, &o[1], FC_ALL, false),
        o[1],
        fc_add(fc_kernel_reduce(l2, 1, &x, FC_AXES(0, 1), false),
               fc_kernel_reduce(wide, 1, &x, FC_AXES(-1), false)),
    };
    fc_hash ha, hb;
    cr_assert_eq(fc_graph_hash(pa, 4, &ha), FC_OK);
    cr_assert_eq(fc_graph_hash(pb, 4, &hb), FC_OK, "%s", fc_errmsg(b));
    cr_expect(hash_eq(ha, hb), "the parsed graph differs from the C API's");
    /* The declarations made the same definitions, texts joined and unescaped. */
    const fcg_user_kernel *k = fcg_user_find(a, (uint64_t)pa[2]->p.ival);
    cr_assert_not_null(k);
    cr_expect_str_eq(k->body, "s = x + y;\nd = x - y;");
    cr_expect_eq(pa[2]->op, FCG_OP_USER_EW);
    cr_expect_eq(pa[2]->p.count, 1, "d is the second output");
    fc_ctx_destroy(a);
    fc_ctx_destroy(b);
}

/* A variable bound to a kernel is called as the kernel, hiding a function of its name from
 * then on; before its binding the name is the function. */
Test(fc_user_parse, a_kernel_variable_hides_a_function, .init = setup, .fini = teardown) {
    fc_array *o[16];
    build_text(ctx, "x = input f32 [4]\n"
                    "a = sum(x)\n"
                    "sum = ReductionKernel(\"T x\", \"T y\", \"x\", \"a + b\", \"y = a\", \"0\", "
                    "\"mysum\")\n"
                    "b = sum(x)\n"
                    "out a, b\n", o);
    cr_expect_eq(o[0]->op, FCG_OP_SUM);
    cr_expect_eq(o[1]->op, FCG_OP_USER_REDUCE);
    cr_expect_eq(o[1]->ndim, 0, "axis defaults to None, every axis");
}

/* Adjacent literals join; \r and \xHH escape; the kernel gets the exact bytes. */
Test(fc_user_parse, string_literals_join_and_escape, .init = setup, .fini = teardown) {
    fc_array *o[16];
    build_text(ctx, "x = input f32 [4]\n"
                    "k = ElementwiseKernel(\"T x\", \"T y\",\n"
                    "    \"y = x;\" \" /* \\x41\\x7e\\r\\t\\\"\\\\ */\"\n"
                    "    \"\\n\", \"k\")\n"
                    "y = k(x)\n"
                    "out y\n", o);
    const fcg_user_kernel *k = fcg_user_find(ctx, (uint64_t)o[0]->p.ival);
    cr_assert_not_null(k);
    cr_expect_str_eq(k->body, "y = x; /* A~\r\t\"\\ */\n");
}

/* NAME, ... = EXPR unpacks a list as well: the same graph as indexing it. */
Test(fc_user_parse, unpacking_a_list, .init = setup, .fini = teardown) {
    fc_array *a[16], *b[16];
    fc_hash ha, hb;
    build_text(ctx, "x = input f32 [6]\n"
                    "g0, g1 = meshgrid(x, x[:2], indexing=\"ij\")\n"
                    "p, q, r, = split(x, 3)\n"
                    "h, = [x * 2]\n"
                    "out g0, g1, p, q, r, h\n", a);
    build_text(ctx, "x = input f32 [6]\n"
                    "g = meshgrid(x, x[:2], indexing=\"ij\")\n"
                    "s = split(x, 3)\n"
                    "h = x * 2\n"
                    "g0 = g[0]\n"
                    "g1 = g[1]\n"
                    "p = s[0]\n"
                    "q = s[1]\n"
                    "r = s[2]\n"
                    "out g0, g1, p, q, r, h\n", b);
    cr_assert_eq(fc_graph_hash(a, 6, &ha), FC_OK);
    cr_assert_eq(fc_graph_hash(b, 6, &hb), FC_OK);
    cr_expect(hash_eq(ha, hb));
}

/* ---- errors --------------------------------------------------------------------------------- */

#define PRE                                                                                       \
    "x = input f32 [4]\n"                                                                         \
    "axpb = ElementwiseKernel(\"" AXPB_IN "\", \"float32 y\", \"y = a * x + b;\", \"axpb\")\n"   \
    "sumdiff = ElementwiseKernel(\"T x, T y\", \"T s, T d\", \"s = x + y; d = x - y;\", "       \
    "\"sumdiff\")\n"                                                                              \
    "l2 = ReductionKernel(\"T x\", \"T y\", \"x * x\", \"a + b\", \"y = sqrt(a)\", \"0\", "      \
    "\"l2norm\")\n"

/* Line 5 of a program after PRE (and `out x` when the line is not an out statement); the error
 * is at the last occurrence of `at` in the line. */
static const struct {
    const char *line, *at;
    fc_status status;
    const char *says;
} bad[] = {
    /* calls */
    {"y = sumdiff(x, x)", "sumdiff", FC_ERR_INVALID,
     "sumdiff gives 2 outputs (T s, T d): bind them by unpacking"},
    {"y = 1 + sumdiff(x, x)", "sumdiff", FC_ERR_INVALID, "sumdiff gives 2 outputs"},
    {"a, b = sumdiff(x)", "sumdiff", FC_ERR_INVALID, "sumdiff takes 2 arguments (T x, T y), not 1"},
    {"a, b, c = sumdiff(x, x)", "sumdiff", FC_ERR_INVALID, "sumdiff gives 2 outputs (T s, T d), not 3"},
    {"a, b = l2(x)", "l2", FC_ERR_INVALID, "l2norm gives 1 output (T y), not 2"},
    {"y = axpb(x, 1)", "axpb", FC_ERR_INVALID, "axpb takes 3 arguments"},
    {"y = axpb(cast(x, f64), 1, 2)", "axpb", FC_ERR_DTYPE,
     "axpb: argument x is f64, the kernel declares f32"},
    {"y = axpb(x, 1, 2, axis=0)", "axis", FC_ERR_PARSE, "axpb() takes no keyword arguments"},
    {"y = l2(x, foo=1)", "foo", FC_ERR_PARSE, "l2() got an unexpected keyword argument 'foo'"},
    {"y = l2(x, axis=0, axis=1)", "axis=1", FC_ERR_PARSE, "multiple values for argument 'axis'"},
    {"y = l2(axis=0, x)", "x)", FC_ERR_PARSE, "positional argument follows keyword argument"},
    {"y = l2(x, axis=5)", "l2", FC_ERR_AXIS, "l2norm"},
    {"y = l2(x, keepdims=\"no\")", "\"no\"", FC_ERR_INVALID, "keepdims must be True or False"},
    {"y = nope(x)", "nope", FC_ERR_PARSE, "unknown function 'nope'"},
    {"y = later(x)\nlater = axpb", "later(", FC_ERR_PARSE, "unknown function 'later'"},
    {"y = x(1)", "x(", FC_ERR_PARSE, "'x' is not a function or a kernel"},
    /* a kernel where an array is expected */
    {"y = axpb + 1", "axpb", FC_ERR_INVALID, "expected an array, found a kernel"},
    {"y = exp(l2)", "l2", FC_ERR_INVALID, "expected an array, found a kernel"},
    {"y = axpb.sum()", "sum", FC_ERR_INVALID, "method 'sum' needs an array, found a kernel"},
    {"out axpb", "axpb", FC_ERR_INVALID, "expected an array, found a kernel"},
    /* declarations */
    {"axpb = ElementwiseKernel(\"T x\", \"T y\", \"y = x;\", \"other\")", "axpb", FC_ERR_PARSE,
     "'axpb' is already defined (line 2)"},
    {"k = ElementwiseKernel(\"float32 x\", \"float32 x\", \"x = 1;\", \"k1\")", "Elem",
     FC_ERR_INVALID, "k1: output 'x' is also an input"},
    {"k = ElementwiseKernel(\"float32 x\", \"U y\", \"y = x;\", \"k2\")", "Elem", FC_ERR_INVALID,
     "k2: out_params: type placeholder 'U' is not bound by any input"},
    {"k = ReductionKernel(\"T x\", \"T y\", \"x\", \"a + 1\", \"y = a\", \"0\", \"r1\")", "Red",
     FC_ERR_INVALID, "r1: reduce_expr 'a + 1' must use both a and b"},
    {"k = ElementwiseKernel(\"T x\", \"T y\", \"y = x;\")", ")", FC_ERR_PARSE,
     "ElementwiseKernel() missing required argument 'name'"},
    {"k = ElementwiseKernel(\"T x\", \"T y\", 3, \"k\")", "3", FC_ERR_INVALID,
     "ElementwiseKernel(): operation must be a string, found an integer"},
    {"k = ElementwiseKernel(\"T x\", \"T y\", \"y = x;\", \"k\", 1)", "1)", FC_ERR_PARSE,
     "takes at most 4 positional arguments"},
    {"k = ReductionKernel(\"T x\", \"T y\", \"x\", \"a + b\", \"y = a\", \"0\", \"k\", 3)", "3)",
     FC_ERR_INVALID, "reduce_type must be a string, found an integer"},
    {"y = exp(ElementwiseKernel(\"T x\", \"T y\", \"y = x;\", \"k\"))", "Elem", FC_ERR_PARSE,
     "ElementwiseKernel(...) must be the whole right side of a binding"},
    {"k = ElementwiseKernel(\"T x\", \"T y\", \"y = x;\", \"k\") * 2", "*", FC_ERR_PARSE,
     "must be the whole right side of a binding"},
    {"a, b = ReductionKernel(\"T x\", \"T y\", \"x\", \"a + b\", \"y = a\", \"0\", \"k\")", "Red",
     FC_ERR_PARSE, "a kernel declaration binds one name"},
    /* unpacking */
    {"a, a = sumdiff(x, x)", "a =", FC_ERR_PARSE, "'a' is bound twice by one statement"},
    {"b, x = sumdiff(x, x)", "x =", FC_ERR_PARSE, "'x' is already defined (line 1)"},
    {"a, out = sumdiff(x, x)", "out", FC_ERR_PARSE, "'out' is a reserved word"},
    {"a, b x", "x", FC_ERR_PARSE, "expected '=' after the names to unpack into"},
    {"a, b = x", "x", FC_ERR_INVALID, "cannot unpack an array into 2 names"},
    {"a, b = [x, x, x]", "[", FC_ERR_INVALID, "cannot unpack a list of 3 into 2 names"},
    {"a, b = a", "a", FC_ERR_PARSE, "undefined name 'a'"},
    /* strings */
    {"s = \"\\x00\"", "\"\\", FC_ERR_PARSE, "invalid escape in string"},
    {"s = \"\\x4\"", "\"\\", FC_ERR_PARSE, "invalid escape in string"},
};

Test(fc_user_errors, bad_programs_name_the_kernel_and_the_place) {
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[1024];
        bool has_out = strncmp(bad[i].line, "out ", 4) == 0;
        snprintf(text, sizeof text, PRE "%s\n%s", bad[i].line, has_out ? "" : "out x\n");
        const char *at = NULL;
        for (const char *q = bad[i].line; (q = strstr(q, bad[i].at)); q++) at = q;
        cr_assert_not_null(at, "case %zu: '%s' is not in the line", i, bad[i].at);
        tu_check_bad_fc(text, strlen(text), bad[i].status, 5, (int)(at - bad[i].line) + 1,
                        bad[i].says);
    }
}

/* ---- allocation failures ------------------------------------------------------------------ */

/* Parse, build, print, parse the print, build: failing the Nth allocation for every N until a
 * run meets none. Each failure is a clean FC_ERR_NOMEM and nothing leaks. */
Test(fc_user_errors, allocation_failures_are_clean) {
    size_t len;
    char *text = tu_read_file(FUSEC_SOURCE_DIR "/examples/fc/user_kernels.fc", &len);
    long long runs = 0;
    for (long long fail_at = 1;; fail_at++) {
        counting_alloc t = {0};
        fc_allocator alloc = {ca_malloc, ca_realloc, ca_free, &t};
        fc_ctx *c = tu_host_ctx_with(&alloc);
        t.calls = 0; /* count from here: the context itself is not under test */
        t.fail_at = fail_at;
        fc_program *p = NULL, *q = NULL;
        char *printed = NULL;
        fc_array *o1[4], *o2[4];
        fc_scope *s = fc_scope_open(c);
        fc_status st = s ? fc_program_parse(c, text, len, "fault.fc", &p) : FC_ERR_NOMEM;
        if (st == FC_OK) st = fc_program_set_symbol(p, "n", 8);
        if (st == FC_OK) st = fc_program_build(p, NULL, o1);
        if (st == FC_OK) st = fc_program_print(c, o1, 1, NULL, &printed);
        if (st == FC_OK) st = fc_program_parse(c, printed, strlen(printed), "printed", &q);
        if (st == FC_OK) st = fc_program_build(q, NULL, o2);
        fc_hash h1, h2;
        if (st == FC_OK) st = fc_graph_hash(o1, 1, &h1);
        if (st == FC_OK) st = fc_graph_hash(o2, 1, &h2);
        if (st == FC_OK) cr_assert(hash_eq(h1, h2), "the printed program is another graph");
        bool failed = t.injected;
        if (failed) cr_assert_eq(st, FC_ERR_NOMEM, "fail_at %lld: status %d: %s", fail_at, st,
                                 fc_errmsg(c));
        else cr_assert_eq(st, FC_OK, "%s", fc_errmsg(c));
        fc_free(c, printed);
        fc_program_destroy(p);
        fc_program_destroy(q);
        fc_scope_close(s);
        fc_ctx_destroy(c);
        cr_assert_eq(t.live_bytes, 0, "fail_at %lld: leaked %zu bytes", fail_at, t.live_bytes);
        cr_assert_eq(t.size_mismatches, 0, "fail_at %lld: a free with the wrong size", fail_at);
        runs++;
        if (!failed) break;
    }
    cr_expect_gt(runs, 50, "the program allocates: failures were injected (%lld runs)", runs);
    free(text);
}

/* ---- the repository's programs -------------------------------------------------------------- */

/* examples/fc/user_kernels.fc and W13 build; W13 is the C API's l2norm call, and W13b the
 * same norm in built-in ops (another graph over the same input). */
Test(fc_user_parse, example_and_bench_programs, .init = setup, .fini = teardown) {
    static const char *const files[] = {"examples/fc/user_kernels.fc",
                                        "bench/fc/w13_user_l2norm.fc",
                                        "bench/fc/w13b_builtin_l2norm.fc"};
    fc_array *o[3][16];
    for (int i = 0; i < 3; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", FUSEC_SOURCE_DIR, files[i]);
        size_t len;
        char *text = tu_read_file(path, &len);
        cr_assert_eq(build_text(ctx, text, o[i]), 1, "%s", files[i]);
        free(text);
        free(round_trip(o[i], 1, NULL));
    }
    fc_kernel *l2 = red(ctx, "T x", "T y", "x * x", "a + b", "y = sqrt(a)", "l2norm", NULL);
    /* a program input of W13's size, without its 256 MiB */
    fcg_params prm;
    memset(&prm, 0, sizeof prm);
    fc_array *x = fcg_make(ctx, FCG_OP_INPUT, FC_F32, FC_F32, false, 2, (int64_t[]){16384, 4096},
                           0, NULL, &prm);
    fc_array *w13 = reduce1(l2, 1, &x, FC_AXES(1), false);
    fc_hash h13, hfile, hb;
    cr_assert_eq(fc_graph_hash(&w13, 1, &h13), FC_OK);
    cr_assert_eq(fc_graph_hash(o[1], 1, &hfile), FC_OK);
    cr_assert_eq(fc_graph_hash(o[2], 1, &hb), FC_OK);
    cr_expect(hash_eq(h13, hfile), "W13 is one l2norm call over axis 1");
    cr_expect(!hash_eq(hb, hfile));
    cr_expect_eq(o[2][0]->op, FCG_OP_SQRT);
    /* the example's chain: one user reduction at the end, user calls inside */
    cr_expect_eq(o[0][0]->in[0]->op, FCG_OP_USER_REDUCE);
}

/* ---- traces and the CLI --------------------------------------------------------------------- */

static cli_tmp tmp;

/* Runs fusec with args (NULL-terminated) and the cache in the test's directory. */
static cli_result run(const char *const *args) { return cli_run(&tmp, tmp.cache, NULL, args); }

Test(fc_user_cli, traced_programs_parse_warm_and_dump) {
    cli_tmp_make(&tmp, "fusec_fc_user");
    char trace[512];
    snprintf(trace, sizeof trace, "%s/trace.fc", tmp.root);
    /* A traced evaluation on the host backend: the record is written, then the backend
     * refuses the kernels. */
    fc_ctx *c = tu_host_ctx();
    cr_assert_eq(fc_set_trace(c, trace), FC_OK);
    fc_kernel *axpb = ew(c, AXPB_IN, "float32 y", "y = a * x + b;", "axpb");
    fc_kernel *sd = ew(c, "T x, T y", "T s, T d", "s = x + y;\nd = x - y;", "sumdiff");
    fc_kernel *l2 = red(c, "T x", "T y", "x * x", "a + b", "y = sqrt(a)", "l2norm", NULL);
    fc_array *x = data(c, FC_F32, FC_SHAPE(64, 256));
    fc_array *z = call1(axpb, 3, (fc_array *[]){x, fc_f64(c, 2.0), fc_f64(c, 0.5)});
    fc_array *o[2];
    cr_assert_eq(fc_kernel_call(sd, 2, (fc_array *[]){z, x}, 2, o), FC_OK);
    fc_array *outs[2] = {reduce1(l2, 1, (fc_array *[]){fc_mul(o[0], o[1])}, FC_AXES(1), false),
                         o[1]};
    cr_assert_eq(fc_eval(c, outs, 2), FC_ERR_UNSUPPORTED);
    cr_expect(strstr(fc_errmsg(c), "user kernels need the CUDA backend"), "%s", fc_errmsg(c));
    char *printed;
    cr_assert_eq(fc_program_print(c, outs, 2, NULL, &printed), FC_OK);
    char *text = cli_slurp(trace);
    cr_assert_eq(strncmp(text, "# fusec trace: program ", 23), 0, "%s", text);
    cr_expect_str_eq(strchr(text, '\n') + 1, printed, "the record is the canonical text");
    cr_expect_eq(count_substr(text, "# fusec trace"), 1);
    /* The record parses to the evaluated graph. */
    fc_program *p;
    fc_array *back[2];
    cr_assert_eq(fc_program_load(c, trace, &p), FC_OK, "%s", fc_errmsg(c));
    cr_assert_eq(fc_program_build(p, NULL, back), FC_OK, "%s", fc_errmsg(c));
    fc_hash h1, h2;
    cr_assert_eq(fc_graph_hash(outs, 2, &h1), FC_OK);
    cr_assert_eq(fc_graph_hash(back, 2, &h2), FC_OK);
    cr_expect(hash_eq(h1, h2), "the traced program is another graph:\n%s", text);
    fc_program_destroy(p);
    fc_free(c, printed);
    fc_ctx_destroy(c);

    /* dump: the user's text under its markers. */
    cli_result d = run((const char *[]){"dump", "--no-prelude", trace, NULL});
    cr_assert_eq(d.code, 0, "%s", d.err);
    long kernels = count_substr(d.out, "// ==== kernel ");
    cr_expect_geq(kernels, 1);
    cr_expect(strstr(d.out, "/* axpb */") && strstr(d.out, "#line 1 \"axpb (operation)\"\n"
                                                           "y = a * x + b;\n"), "%s", d.out);
    cr_expect(strstr(d.out, "/* sumdiff */") && strstr(d.out, "s = x + y;\nd = x - y;\n"), "%s",
              d.out);
    cr_expect(strstr(d.out, "#line 1 \"l2norm (map_expr)\"\n"), "%s", d.out);
    /* warm for two archs compiles every kernel with NVRTC; a second warm compiles nothing */
    cli_result w = run((const char *[]){"warm", "-q", "--arch", "sm_80,sm_90", trace, NULL});
    cr_assert_eq(w.code, 0, "%s\n%s", w.out, w.err);
    cr_expect_eq(cli_field(w.out, "programs"), 1, "%s", w.out);
    cr_expect_eq(cli_field(w.out, "compiled"), 2 * kernels, "%s", w.out);
    cr_expect_eq(cli_field(w.out, "failed"), 0, "%s", w.out);
    cli_result again = run((const char *[]){"warm", "-q", "--arch", "sm_80,sm_90", trace, NULL});
    cr_assert_eq(again.code, 0, "%s", again.err);
    cr_expect_eq(cli_field(again.out, "compiled"), 0, "%s", again.out);
    cr_expect_eq(cli_field(again.out, "already cached"), 2 * kernels, "%s", again.out);
    /* run on the host backend refuses them, saying why */
    cli_result r = run((const char *[]){"run", "--backend", "host", trace, NULL});
    cr_expect_eq(r.code, 3, "%s", r.err);
    cr_expect(strstr(r.err, "user kernels need the CUDA backend"), "%s", r.err);
    cli_result_free(&d);
    cli_result_free(&w);
    cli_result_free(&again);
    cli_result_free(&r);
    free(text);
    cli_tmp_remove(&tmp);
}

/* The repository's programs with user kernels: dump shows the texts, warm compiles them. */
Test(fc_user_cli, example_and_bench_programs_dump_and_warm) {
    cli_tmp_make(&tmp, "fusec_fc_user");
    const char *example = FUSEC_SOURCE_DIR "/examples/fc/user_kernels.fc";
    const char *w13 = FUSEC_SOURCE_DIR "/bench/fc/w13_user_l2norm.fc";
    const char *w13b = FUSEC_SOURCE_DIR "/bench/fc/w13b_builtin_l2norm.fc";
    cli_result d = run((const char *[]){"dump", "--no-prelude", "--set", "n=64", example, NULL});
    cr_assert_eq(d.code, 0, "%s", d.err);
    cr_expect_eq(count_substr(d.out, "// ==== kernel "), 1, "the chain fuses into one kernel");
    cr_expect(strstr(d.out, "#line 1 \"squared_diff (operation)\"\nT t = x - y;\nz = t * t;\n"),
              "%s", d.out);
    cli_result d13 = run((const char *[]){"dump", "--no-prelude", w13, NULL});
    cr_assert_eq(d13.code, 0, "%s", d13.err);
    cr_expect_eq(count_substr(d13.out, "// ==== kernel "), 1);
    cr_expect(strstr(d13.out, "#line 1 \"l2norm (map_expr)\"\nx * x"), "%s", d13.out);
    cli_result d13b = run((const char *[]){"dump", "--no-prelude", w13b, NULL});
    cr_assert_eq(d13b.code, 0, "%s", d13b.err);
    cr_expect_eq(count_substr(d13b.out, "// ==== kernel "), 1);
    cr_expect(!strstr(d13b.out, "#line 1 \"l2norm"));
    cli_result w = run((const char *[]){"warm", "-q", "--arch", "sm_80", "--set", "n=64", example,
                                        w13, NULL});
    cr_assert_eq(w.code, 0, "%s\n%s", w.out, w.err);
    cr_expect_eq(cli_field(w.out, "compiled"), 2, "%s", w.out);
    cr_expect_eq(cli_field(w.out, "failed"), 0, "%s", w.out);
    cli_result_free(&d);
    cli_result_free(&d13);
    cli_result_free(&d13b);
    cli_result_free(&w);
    cli_tmp_remove(&tmp);
}
