/*
 * test_user_kernels.c - user kernels (fc_elementwise_kernel, fc_reduction_kernel) without a
 * GPU: their declarations and the errors of bad ones, calls (placeholder binding, dtype
 * checks, broadcasting, counts), fusion with the ops around them (kernel counts asserted),
 * and the generated CUDA C compiled by NVRTC for two architectures, raw inputs and several
 * outputs included; an NVRTC error in a user's text names the kernel and the line of its text.
 * Values are checked where kernels run: tests/test_codegen_emulated.c (generated code as host
 * C++, against the same computation in built-in ops) and tests/test_gpu_lib.c on the GPU.
 */
#include <criterion/criterion.h>

#include <fusec.h>

#include "driver.h"
#include "graph.h"
#include "plan.h"
#include "test_util.h"

#include <string.h>

static fc_ctx *ctx;

static void setup(void) { ctx = tu_host_ctx(); }
static void teardown(void) { fc_ctx_destroy(ctx); }

static fc_kernel *ew(const char *in, const char *out, const char *body, const char *name) {
    fc_kernel *k = NULL;
    fc_status st = fc_elementwise_kernel(ctx, in, out, body, name, &k);
    cr_assert_eq(st, FC_OK, "%s: %s", name, fc_errmsg(ctx));
    cr_assert_not_null(k);
    return k;
}

static fc_kernel *red(const char *in, const char *out, const char *map, const char *reduce,
                      const char *post, const char *identity, const char *name) {
    fc_kernel *k = NULL;
    fc_status st = fc_reduction_kernel(ctx, in, out, map, reduce, post, identity, name, NULL, &k);
    cr_assert_eq(st, FC_OK, "%s: %s", name, fc_errmsg(ctx));
    return k;
}

static fc_array *rand_f32(int64_t m, int64_t n) {
    static float data[65536];
    cr_assert_leq(m * n, 65536);
    for (int64_t i = 0; i < m * n; i++) data[i] = (float)((i * 37 % 101) - 50) / 16.0f + 0.25f;
    return fc_from_host(ctx, FC_F32, FC_SHAPE(m, n), data);
}

static int kernels_of(fc_array *const *outs, int n) {
    fcp_plan *p = NULL;
    cr_assert_eq(fcp_plan_build(ctx, outs, n, &p), FC_OK, "%s", fc_errmsg(ctx));
    int k = p->nkernel;
    fcp_plan_destroy(p);
    return k;
}

/* ---- declarations ------------------------------------------------------------------------ */

static void expect_bad_ew(const char *in, const char *out, const char *body, const char *name,
                          const char *needle) {
    fc_kernel *k = (fc_kernel *)1;
    fc_status st = fc_elementwise_kernel(ctx, in, out, body, name, &k);
    cr_expect_neq(st, FC_OK, "'%s' / '%s' / '%s' was accepted", in, out, body);
    cr_expect_null(k);
    cr_expect(strstr(fc_errmsg(ctx), needle), "message '%s' lacks '%s'", fc_errmsg(ctx), needle);
}

Test(user_decl, bad_declarations_fail_cleanly, .init = setup, .fini = teardown) {
    expect_bad_ew("float32 x", "float32 x", "x = 1;", "k1", "'x' is also an input");
    expect_bad_ew("float32 x", "U y", "y = x;", "k2", "'U' is not bound by any input");
    expect_bad_ew("float32", "float32 y", "y = 1;", "k3", "parameter 1 is not 'TYPE NAME'");
    expect_bad_ew("float32 x y", "float32 z", "z = x;", "k4", "expected ',' after parameter 1");
    expect_bad_ew("float x", "float32 z", "z = x;", "k5", "'float' is neither a dtype");
    expect_bad_ew("float32 i", "float32 z", "z = i;", "k6", "'i' cannot name a parameter");
    expect_bad_ew("float32 v1", "float32 z", "z = v1;", "k7", "'v1' cannot name a parameter");
    expect_bad_ew("float32 x, int32 x", "float32 z", "z = x;", "k8", "declared twice");
    expect_bad_ew("float32 x", "raw float32 z", "z = x;", "k9", "raw outputs are not supported");
    expect_bad_ew("float32 x", "", "x;", "k10", "declares no output");
    expect_bad_ew("float32 x", "float32 z", "   ", "k11", "the operation is empty");
    expect_bad_ew("float32 x", "float32 z", "z = x;", "not a name", "not a C identifier");
    expect_bad_ew("T T", "T z", "z = T;", "k12", "is a type placeholder and a parameter");
    fc_kernel *k = NULL;
    cr_expect_neq(fc_reduction_kernel(ctx, "T x", "T y", "x", "a + 1", "y = a", "0", "r1", NULL, &k),
                  FC_OK);
    cr_expect(strstr(fc_errmsg(ctx), "must use both a and b"), "%s", fc_errmsg(ctx));
    cr_expect_neq(fc_reduction_kernel(ctx, "T x", "T y", "x", "a + b", "y = a", "", "r2", NULL, &k),
                  FC_OK);
    cr_expect(strstr(fc_errmsg(ctx), "identity is required"), "%s", fc_errmsg(ctx));
    cr_expect_neq(fc_reduction_kernel(ctx, "T x", "T y, T z", "x", "a + b", "y = a", "0", "r3",
                                      NULL, &k), FC_OK);
    cr_expect(strstr(fc_errmsg(ctx), "one output"), "%s", fc_errmsg(ctx));
    cr_expect_neq(fc_reduction_kernel(ctx, "T x", "T y", "x", "a + b", "q = a", "0", "r4", NULL, &k),
                  FC_OK);
    cr_expect(strstr(fc_errmsg(ctx), "never sets the output y"), "%s", fc_errmsg(ctx));
    cr_expect_neq(fc_reduction_kernel(ctx, "T x", "T y", "x", "a + b", "y = a", "0", "r5", "U", &k),
                  FC_OK);
    cr_expect(strstr(fc_errmsg(ctx), "'U' is not bound"), "%s", fc_errmsg(ctx));
}

Test(user_decl, the_same_text_is_the_same_kernel, .init = setup, .fini = teardown) {
    fc_kernel *a = ew("float32 x, float32 a", "float32 y", "y = a * x;", "scale");
    fc_kernel *b = ew("float32  x ,float32 a", "float32 y", "y = a * x;", "scale");
    fc_kernel *c = ew("float32 x, float32 a", "float32 y", "y = a * x + 0;", "scale");
    cr_expect_eq(a, b, "spacing in the declarations must not make another kernel");
    cr_expect_neq(a, c);
    cr_expect_str_eq(fc_kernel_name(a), "scale");
}

/* ---- calls --------------------------------------------------------------------------------- */

Test(user_call, placeholders_bind_from_arrays_then_scalars, .init = setup, .fini = teardown) {
    fc_kernel *k = ew("T x, T a, float64 b", "T y", "y = a * x + (T)b;", "axpb");
    fc_array *x = rand_f32(2, 3);
    fc_array *y = fc_kernel_call1(k, 3, (fc_array *[]){x, fc_f64(ctx, 2.0), fc_i64(ctx, 1)});
    cr_assert_eq(fc_array_status(y), FC_OK, "%s", fc_array_errmsg(y));
    cr_expect_eq(fc_array_dtype(y), FC_F32, "T binds to the array's f32; the scalars convert");
    cr_expect_eq(fc_array_ndim(y), 2);
    /* only scalars for T: T is the first scalar's dtype */
    fc_array *s = fc_kernel_call1(k, 3, (fc_array *[]){fc_f64(ctx, 1.5), fc_f64(ctx, 2.0),
                                                      fc_f64(ctx, 1.0)});
    cr_assert_eq(fc_array_status(s), FC_OK, "%s", fc_array_errmsg(s));
    cr_expect_eq(fc_array_dtype(s), FC_F64);
    cr_expect_eq(fc_array_ndim(s), 0);
}

Test(user_call, wrong_arguments_name_the_kernel_and_parameter, .init = setup, .fini = teardown) {
    fc_kernel *k = ew("T x, T y, float32 w", "T z", "z = x + y * w;", "wsum");
    fc_array *a = rand_f32(2, 3);
    fc_array *b = fc_cast(rand_f32(2, 3), FC_F64);
    fc_array *r = fc_kernel_call1(k, 3, (fc_array *[]){a, b, a});
    cr_expect_eq(fc_array_status(r), FC_ERR_DTYPE);
    cr_expect(strstr(fc_array_errmsg(r), "wsum: argument y is f64, but T is f32"), "%s",
              fc_array_errmsg(r));
    r = fc_kernel_call1(k, 3, (fc_array *[]){a, a, b});
    cr_expect_eq(fc_array_status(r), FC_ERR_DTYPE);
    cr_expect(strstr(fc_array_errmsg(r), "wsum: argument w is f64, the kernel declares f32"), "%s",
              fc_array_errmsg(r));
    r = fc_kernel_call1(k, 2, (fc_array *[]){a, a});
    cr_expect_eq(fc_array_status(r), FC_ERR_INVALID);
    cr_expect(strstr(fc_array_errmsg(r), "wsum takes 3 arguments"), "%s", fc_array_errmsg(r));
    fc_array *c = rand_f32(4, 5);
    r = fc_kernel_call1(k, 3, (fc_array *[]){a, c, a});
    cr_expect_eq(fc_array_status(r), FC_ERR_SHAPE, "%s", fc_array_errmsg(r));
    fc_array *outs[2];
    cr_expect_eq(fc_kernel_call(k, 3, (fc_array *[]){a, a, a}, 2, outs), FC_ERR_INVALID);
    cr_expect(strstr(fc_errmsg(ctx), "wsum gives 1 output"), "%s", fc_errmsg(ctx));
    cr_expect_eq(fc_array_status(outs[0]), FC_ERR_INVALID);
    cr_expect_eq(fc_array_status(outs[1]), FC_ERR_INVALID);
    fc_kernel *u8k = ew("uint8 x, uint8 a", "uint8 y", "y = x + a;", "add_u8");
    fc_array *xb = fc_cast(a, FC_U8);
    r = fc_kernel_call1(u8k, 2, (fc_array *[]){xb, fc_i64(ctx, 300)});
    cr_expect_eq(fc_array_status(r), FC_ERR_VALUE, "a Python int out of range must not wrap");
    cr_expect(strstr(fc_array_errmsg(r), "add_u8: argument a: 300 does not fit in u8"), "%s",
              fc_array_errmsg(r));
    r = fc_kernel_call1(u8k, 2, (fc_array *[]){xb, fc_i64(ctx, 255)});
    cr_expect_eq(fc_array_status(r), FC_OK, "%s", fc_array_errmsg(r));
    fc_kernel *rk = red("T x", "T y", "x", "a + b", "y = a", "0", "total");
    r = fc_kernel_call1(rk, 1, (fc_array *[]){a});
    cr_expect_eq(fc_array_status(r), FC_ERR_INVALID);
    cr_expect(strstr(fc_array_errmsg(r), "called with fc_kernel_call"), "%s", fc_array_errmsg(r));
    /* a poisoned argument passes through */
    fc_array *bad = fc_reshape(a, FC_SHAPE(7));
    r = fc_kernel_call1(k, 3, (fc_array *[]){a, bad, a});
    cr_expect_eq(fc_array_status(r), fc_array_status(bad));
}

Test(user_call, several_outputs_and_raw_inputs, .init = setup, .fini = teardown) {
    fc_kernel *k = ew("T x, T y", "T s, T d", "s = x + y; d = x - y;", "sumdiff");
    fc_array *a = rand_f32(3, 4), *b = rand_f32(1, 4);
    fc_array *o[2];
    cr_assert_eq(fc_kernel_call(k, 2, (fc_array *[]){a, b}, 2, o), FC_OK, "%s", fc_errmsg(ctx));
    cr_expect_neq(o[0], o[1]);
    cr_expect_eq(fc_array_shape(o[0]).dim[0], 3);
    fc_kernel *rev = ew("raw T x, int64 j", "T y", "y = x[x.size() - 1 - j];", "reverse");
    fc_array *idx = fc_arange(ctx, FC_I64, 0, 12, 1);
    fc_array *r = fc_kernel_call1(rev, 2, (fc_array *[]){fc_sin(a), idx});
    cr_assert_eq(fc_array_status(r), FC_OK, "%s", fc_array_errmsg(r));
    cr_expect_eq(fc_array_ndim(r), 1, "the shape comes from the arguments that are not raw");
    fc_kernel *allraw = ew("raw T x", "T y", "y = x[0];", "first");
    r = fc_kernel_call1(allraw, 1, (fc_array *[]){a});
    cr_expect_eq(fc_array_status(r), FC_ERR_INVALID);
    cr_expect(strstr(fc_array_errmsg(r), "every argument is raw"), "%s", fc_array_errmsg(r));
}

Test(user_call, the_host_backend_says_it_needs_the_gpu, .init = setup, .fini = teardown) {
    fc_kernel *k = ew("T x", "T y", "y = x * 2;", "twice");
    fc_array *y = fc_kernel_call1(k, 1, (fc_array *[]){rand_f32(2, 2)});
    float out[4];
    cr_expect_eq(fc_to_host(y, out, sizeof out), FC_ERR_UNSUPPORTED);
    cr_expect(strstr(fc_errmsg(ctx), "twice: user kernels need the CUDA backend"), "%s",
              fc_errmsg(ctx));
}

/* ---- fusion -------------------------------------------------------------------------------- */

Test(user_fusion, an_elementwise_kernel_fuses_with_the_ops_around_it, .init = setup,
     .fini = teardown) {
    fc_kernel *axpb = ew("float32 x, T a, T b", "T y", "y = a * x + b;", "axpb");
    fc_array *x = rand_f32(64, 32);
    fc_array *d = fc_kernel_call1(axpb, 3, (fc_array *[]){fc_sin(x), fc_scalar(ctx, FC_F32, 2.0),
                                                         fc_scalar(ctx, FC_F32, 0.5)});
    cr_assert_eq(fc_array_status(d), FC_OK, "%s", fc_array_errmsg(d));
    fc_array *y = fc_sum(fc_mul(d, fc_f64(ctx, 2.0)), FC_AXES(1), false);
    cr_expect_eq(kernels_of(&y, 1), 1, "x -> sin -> axpb -> * 2 -> sum must be one kernel");
    /* plans (fusec explain, graph, cache summaries) name the kernel, not the op */
    fcp_plan *p = NULL;
    cr_assert_eq(fcp_plan_build(ctx, &y, 1, &p), FC_OK);
    char *desc = fcp_plan_describe(p);
    cr_assert_not_null(desc);
    cr_expect(strstr(desc, "axpb"), "the plan does not name axpb:\n%s", desc);
    fcg_strfree(ctx, desc);
    fcp_plan_destroy(p);
    fc_kernel *l2 = red("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm");
    fc_array *n = fc_kernel_reduce(l2, 1, (fc_array *[]){fc_exp(x)}, FC_AXES(1), false);
    cr_assert_eq(fc_array_status(n), FC_OK, "%s", fc_array_errmsg(n));
    fc_array *z = fc_div(x, fc_reshape(n, FC_SHAPE(64, 1)));
    cr_expect_eq(kernels_of(&z, 1), 1, "x / l2norm(exp(x)) over rows must be one row kernel");
}

/* ---- generated code through NVRTC ---------------------------------------------------------- */

/* Compiles the program's kernels for sm_80 and sm_90 into a cache in memory; returns the
 * result (the caller frees it) with its status in *st. */
static fck_result *compile(fc_array *const *outs, int n, fc_status *st) {
    static const char *const archs[] = {"sm_80", "sm_90"};
    fcc_options co = fcc_options_default();
    co.memory_only = true;
    co.require_cached = 0;
    fcc_cache *cache;
    cr_assert_eq(fcc_open(&co, &cache), FC_OK);
    fck_options o = fck_options_default();
    o.stage = FCK_BINARY;
    o.archs = archs;
    o.narch = 2;
    o.cache = cache;
    o.keep_going = true;
    fck_result *r = NULL;
    *st = fck_compile(ctx, outs, n, &o, &r);
    fcc_close(cache);
    return r;
}

Test(user_nvrtc, every_form_compiles_for_two_archs, .init = setup, .fini = teardown) {
    fc_kernel *axpb = ew("float32 x, T a, T b", "T y", "y = a * x + b;", "axpb");
    fc_kernel *sd = ew("T x, T y", "T z", "z = (x - y) * (x - y);", "squared_diff");
    fc_kernel *two = ew("T x, T y", "T s, T d", "s = x + y;\nd = x - y;", "sumdiff");
    fc_kernel *rev = ew("raw T x, T s", "T y", "y = x[x.size() - 1 - i] * s;", "reverse_all");
    fc_kernel *idx = ew("T x", "int64 y", "y = (long long)i * 2;", "index_twice");
    fc_kernel *l2 = red("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm");
    fc_kernel *sp = red("T x, T w", "T y", "x * w", "a + b", "y = a", "0", "sum_of_products");
    fc_kernel *mx = red("T x", "T y", "x", "max(a, b)", "y = a", "-1e30", "vmax");
    fc_array *x = rand_f32(64, 300), *w = rand_f32(1, 300);
    fc_array *h = fc_cast(x, FC_F16);
    fc_array *o2[2];
    cr_assert_eq(fc_kernel_call(two, 2, (fc_array *[]){x, w}, 2, o2), FC_OK);
    fc_array *outs[] = {
        fc_sum(fc_kernel_call1(axpb, 3, (fc_array *[]){fc_sin(x), fc_scalar(ctx, FC_F32, 2), fc_scalar(ctx, FC_F32, 1)}),
               FC_AXES(1), false),
        fc_kernel_call1(sd, 2, (fc_array *[]){h, fc_cast(w, FC_F16)}),
        fc_add(o2[0], o2[1]),
        fc_kernel_call1(rev, 2, (fc_array *[]){fc_exp(x), x}),
        fc_kernel_call1(idx, 1, (fc_array *[]){x}),
        fc_kernel_reduce(l2, 1, (fc_array *[]){x}, FC_AXES(1), false),
        fc_kernel_reduce(l2, 1, (fc_array *[]){x}, FC_AXES(0), true),
        fc_kernel_reduce(sp, 2, (fc_array *[]){x, w}, FC_ALL, false),
        fc_kernel_reduce(mx, 1, (fc_array *[]){fc_cast(x, FC_F64)}, FC_AXES(0), false),
    };
    int n = (int)(sizeof outs / sizeof *outs);
    for (int i = 0; i < n; i++)
        cr_assert_eq(fc_array_status(outs[i]), FC_OK, "output %d: %s", i, fc_array_errmsg(outs[i]));
    fc_status st;
    fck_result *r = compile(outs, n, &st);
    cr_assert_not_null(r);
    for (int i = 0; i < r->nkernel; i++)
        for (int a = 0; a < r->narch; a++) {
            if (r->kernels[i].lib) continue;
            const fck_target *t = &r->kernels[i].targets[a];
            cr_expect(t->state == FCK_COMPILED || t->state == FCK_CACHED,
                      "kernel %d for %s: %s", i, r->archs[a], t->message ? t->message : "?");
        }
    cr_expect_eq(st, FC_OK, "%s", fc_errmsg(ctx));
    cr_expect_eq(r->failed, 0);
    /* the source carries the user's text and names the kernel */
    bool named = false;
    for (int i = 0; i < r->nkernel; i++)
        named |= r->kernels[i].src.src && strstr(r->kernels[i].src.src, "/* squared_diff */");
    cr_expect(named, "no kernel names squared_diff in its source");
    fck_result_free(r);
}

Test(user_nvrtc, an_error_in_the_users_text_names_its_line, .init = setup, .fini = teardown) {
    fc_kernel *k = ew("T x", "T y", "T t = x * 2;\ny = t + undefined_name;", "broken");
    fc_array *y = fc_kernel_call1(k, 1, (fc_array *[]){rand_f32(4, 4)});
    fc_status st;
    fck_result *r = compile(&y, 1, &st);
    cr_expect_neq(st, FC_OK);
    cr_assert_not_null(r);
    const char *msg = NULL;
    for (int i = 0; i < r->nkernel && !msg; i++)
        for (int a = 0; a < r->narch && !msg; a++)
            if (r->kernels[i].targets && r->kernels[i].targets[a].state == FCK_FAILED)
                msg = r->kernels[i].targets[a].message;
    cr_assert_not_null(msg, "no failed target");
    cr_expect(strstr(msg, "broken (operation)(2)"), "the message does not point at line 2 of the "
              "operation:\n%s", msg);
    cr_expect(strstr(msg, "undefined_name"), "%s", msg);
    fck_result_free(r);
}
