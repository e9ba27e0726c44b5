/*
 * tests/test_gpu_user.c - user kernels (fc_elementwise_kernel / fc_reduction_kernel) on the
 * GPU against the same computation written in built-in ops on the host reference backend.
 *
 * The data is the same in both contexts (random, never zero); results are read into buffers
 * poisoned with 0xA5 bytes. Tolerances: integers and bool exact; floats relative to the
 * element plus a scale (the largest |host| of the output times the same factor), f16 2e-2,
 * bf16 1e-1, f32 and c64 1e-4, f64 and c128 1e-9 (the user code computes f16 in float and
 * rounds once; the built-in ops round after each op). The fused chain's kernel count is
 * asserted, and the user l2norm is timed beside the built-in sqrt(sum(x*x, 1)). Raw modules:
 * launches with arrays, scalars, structs, dynamic shared memory, a template name expression
 * and a user stream; an output array keeps its value (and so do lazy expressions of it); a
 * faulting kernel kills the GPU's context but not the cache. Skipped, visibly, where there is
 * no GPU.
 */
#include <criterion/criterion.h>

#include "fusec.h"
#include "backend.h"
#include "graph.h"
#include "plan.h"
#include "raw.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>


static fc_ctx *hc, *gc;

static void setup(void) { tu_gpu_pair_open(&hc, &gc); }
static void teardown(void) { tu_gpu_pair_close(&hc, &gc); }

TestSuite(gpu_user, .init = setup, .fini = teardown);

#define SKIP_WITHOUT_GPU(name) TU_SKIP_WITHOUT_GPU(gc, "gpu_user", name)

/* ---- data and comparison ---------------------------------------------------------------- */

static uint64_t rng = 0x9E3779B97F4A7C15ULL;

static double urand(void) {
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    double u = (double)(rng >> 11) * 0x1p-53 * 4.0 - 2.0;
    return u == 0.0 ? 0.75 : u;
}

/* The same random data as an array of each context: floats in [-2, 2), integers in
 * [1, 9] (small, so products stay exact), bool a mix. */
static void pair_of(fc_dtype t, fc_shape s, fc_array **h, fc_array **g) {
    size_t n = 1;
    for (int d = 0; d < s.ndim; d++) n *= (size_t)s.dim[d];
    double *v = malloc((n ? n : 1) * 2 * sizeof *v);
    cr_assert_not_null(v);
    for (size_t i = 0; i < 2 * n; i++) {
        double u = urand();
        v[i] = fcg_is_inexact(t) ? u : t == FC_BOOL ? (u > 0) : floor(fabs(u) * 4) + 1;
    }
    fc_array *a = fc_from_host(hc, FC_F64, s, v);
    fc_array *b = fc_from_host(gc, FC_F64, s, v);
    if (fcg_is_complex(t)) { /* imaginary parts from the second half */
        fc_array *ai = fc_from_host(hc, FC_F64, s, v + n), *bi = fc_from_host(gc, FC_F64, s, v + n);
        a = fc_add(a, fc_mul(ai, fc_c128(hc, 0, 1)));
        b = fc_add(b, fc_mul(bi, fc_c128(gc, 0, 1)));
    }
    *h = fc_cast(a, t);
    *g = fc_cast(b, t);
    free(v);
}

static double tol_of(fc_dtype t) {
    switch (t) {
    case FC_F16: return 2e-2;
    case FC_BF16: return 1e-1;
    case FC_F32: case FC_C64: return 1e-4;
    case FC_F64: case FC_C128: return 1e-9;
    default: return 0;
    }
}

/* gpu (a CUDA-context result) against want (a host one): same dtype, shape and values. */
static void expect_close(const char *what, fc_array *gpu, fc_array *want) {
    cr_assert_eq(fc_array_status(gpu), FC_OK, "%s: %s", what, fc_array_errmsg(gpu));
    cr_assert_eq(fc_array_status(want), FC_OK, "%s (reference): %s", what, fc_array_errmsg(want));
    fc_dtype t = fc_array_dtype(want);
    cr_assert_eq(fc_array_dtype(gpu), t, "%s: dtype %s, want %s", what,
                 fc_dtype_name(fc_array_dtype(gpu)), fc_dtype_name(t));
    fc_array *g64 = fc_cast(gpu, fcg_is_complex(t) ? FC_C128 : FC_F64);
    fc_array *h64 = fc_cast(want, fcg_is_complex(t) ? FC_C128 : FC_F64);
    size_t n = 1;
    fc_shape s = fc_array_shape(want), gs = fc_array_shape(gpu);
    cr_assert_eq(gs.ndim, s.ndim, "%s: rank", what);
    for (int d = 0; d < s.ndim; d++) {
        cr_assert_eq(gs.dim[d], s.dim[d], "%s: extent %d", what, d);
        n *= (size_t)s.dim[d];
    }
    size_t w = fcg_is_complex(t) ? 2 : 1, bytes = (n ? n : 1) * w * sizeof(double);
    double *gv = malloc(bytes), *hv = malloc(bytes);
    memset(gv, 0xA5, bytes);
    memset(hv, 0xA5, bytes);
    cr_assert_eq(fc_to_host(g64, gv, n * w * sizeof(double)), FC_OK, "%s: %s", what, fc_errmsg(gc));
    cr_assert_eq(fc_to_host(h64, hv, n * w * sizeof(double)), FC_OK, "%s: %s", what, fc_errmsg(hc));
    double scale = 0, rtol = tol_of(t);
    for (size_t i = 0; i < n * w; i++)
        if (isfinite(hv[i]) && fabs(hv[i]) > scale) scale = fabs(hv[i]);
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < n * w; i++) {
        bool ok = rtol == 0 ? gv[i] == hv[i]
                            : (isnan(hv[i]) && isnan(gv[i])) || gv[i] == hv[i] ||
                                  fabs(gv[i] - hv[i]) <= rtol * (fabs(hv[i]) + 1e-3 * scale);
        if (!ok && bad++ == 0) first = i;
    }
    cr_expect_eq(bad, 0, "%s: %zu of %zu values differ; first at %zu: gpu %.17g, host %.17g", what,
                 bad, n * w, first, bad ? gv[first] : 0, bad ? hv[first] : 0);
    free(gv);
    free(hv);
}

static fc_kernel *ew(fc_ctx *c, const char *in, const char *out, const char *body,
                     const char *name) {
    fc_kernel *k = NULL;
    cr_assert_eq(fc_elementwise_kernel(c, in, out, body, name, &k), FC_OK, "%s", fc_errmsg(c));
    return k;
}

static fc_kernel *red(fc_ctx *c, const char *in, const char *out, const char *map,
                      const char *reduce, const char *post, const char *identity,
                      const char *name, const char *rtype) {
    fc_kernel *k = NULL;
    cr_assert_eq(fc_reduction_kernel(c, in, out, map, reduce, post, identity, name, rtype, &k),
                 FC_OK, "%s", fc_errmsg(c));
    return k;
}

/* ---- elementwise ------------------------------------------------------------------------ */

Test(gpu_user, elementwise_kernels_fuse_and_match) {
    SKIP_WITHOUT_GPU("elementwise_kernels_fuse_and_match");
    fc_scope_open(gc);
    fc_scope_open(hc);
    fc_kernel *axpb = ew(gc, "float32 x, T a, T b", "T y", "y = a * x + b;", "axpb");
    fc_array *hx, *gx;
    pair_of(FC_F32, FC_SHAPE(1000, 257), &hx, &gx);
    fc_array *g2 = fc_scalar(gc, FC_F32, 2.0), *g05 = fc_scalar(gc, FC_F32, 0.5);
    fc_array *h2 = fc_scalar(hc, FC_F32, 2.0), *h05 = fc_scalar(hc, FC_F32, 0.5);
    fc_array *gy = fc_sum(fc_mul(fc_kernel_call1(axpb, 3, (fc_array *[]){fc_sin(gx), g2, g05}),
                                 fc_f64(gc, 2.0)), FC_AXES(1), false);
    fc_array *hy = fc_sum(fc_mul(fc_add(fc_mul(h2, fc_sin(hx)), h05), fc_f64(hc, 2.0)),
                          FC_AXES(1), false);
    fcp_plan *plan = NULL;
    cr_assert_eq(fcp_plan_build(gc, &gy, 1, &plan), FC_OK);
    cr_expect_eq(plan->nkernel, 1, "x -> sin -> axpb -> * 2 -> sum: %d kernels", plan->nkernel);
    fcp_plan_destroy(plan);
    expect_close("sum(axpb(sin(x), 2, 0.5) * 2, axis=1)", gy, hy);

    /* every dtype the placeholder allows that subtracts (bool does not) */
    fc_kernel *sd = ew(gc, "T x, T y", "T z", "z = (x - y) * (x - y)", "squared_diff");
    for (int t = 0; t < FC_DTYPE_COUNT; t++) {
        if (t == FC_BOOL) continue;
        fc_array *ha, *ga, *hb, *gb;
        pair_of((fc_dtype)t, FC_SHAPE(333, 65), &ha, &ga);
        pair_of((fc_dtype)t, FC_SHAPE(65), &hb, &gb);
        fc_array *d = fc_sub(ha, hb);
        char what[64];
        snprintf(what, sizeof what, "squared_diff(%s)", fc_dtype_name((fc_dtype)t));
        expect_close(what, fc_kernel_call1(sd, 2, (fc_array *[]){ga, gb}), fc_mul(d, d));
    }

    fc_kernel *two = ew(gc, "T x, T y", "T s, T d", "s = x + y;\nd = x - y;", "sumdiff");
    fc_array *hw, *gw;
    pair_of(FC_F64, FC_SHAPE(1, 257), &hw, &gw);
    fc_array *gx64 = fc_cast(gx, FC_F64), *hx64 = fc_cast(hx, FC_F64);
    fc_array *o[2];
    cr_assert_eq(fc_kernel_call(two, 2, (fc_array *[]){gx64, gw}, 2, o), FC_OK);
    fc_eval(gc, o, 2); /* both outputs from one kernel */
    expect_close("sumdiff: s", o[0], fc_add(hx64, hw));
    expect_close("sumdiff: d", o[1], fc_sub(hx64, hw));

    fc_kernel *rev = ew(gc, "raw T x, T s", "T y", "y = x[x.size() - 1 - i] * s;", "reverse_all");
    expect_close("reverse_all(raw exp(x), x)",
                 fc_kernel_call1(rev, 2, (fc_array *[]){fc_exp(gx), gx}),
                 fc_mul(fc_flip(fc_exp(hx), FC_ALL), hx));
    fc_kernel *idx = ew(gc, "T x", "int64 y", "y = (long long)i * 2", "index_twice");
    expect_close("index_twice(x.T)", fc_kernel_call1(idx, 1, (fc_array *[]){fc_transpose(gx)}),
                 fc_reshape(fc_arange(hc, FC_I64, 0, 2 * 1000 * 257, 2), FC_SHAPE(257, 1000)));
}

/* ---- reductions ------------------------------------------------------------------------- */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Median wall time of evaluating build() 15 times (after 3), each synchronised. */
static double time_eval(fc_array *(*build)(fc_array *), fc_array *x) {
    double t[15];
    for (int r = -3; r < 15; r++) {
        fc_scope *s = fc_scope_open(gc);
        fc_array *y = build(x);
        cr_assert_eq(fc_ctx_synchronize(gc), FC_OK);
        double t0 = now_s();
        cr_assert_eq(fc_eval(gc, &y, 1), FC_OK, "%s", fc_errmsg(gc));
        cr_assert_eq(fc_ctx_synchronize(gc), FC_OK);
        if (r >= 0) t[r] = now_s() - t0;
        fc_scope_close(s);
    }
    for (int i = 1; i < 15; i++)
        for (int j = i; j > 0 && t[j] < t[j - 1]; j--) {
            double u = t[j];
            t[j] = t[j - 1];
            t[j - 1] = u;
        }
    return t[7];
}

static fc_kernel *l2_kernel;
static fc_array *user_l2(fc_array *x) {
    return fc_kernel_reduce(l2_kernel, 1, (fc_array *[]){x}, FC_AXES(1), false);
}
static fc_array *builtin_l2(fc_array *x) { return fc_sqrt(fc_sum(fc_mul(x, x), FC_AXES(1), false)); }

Test(gpu_user, reduction_kernels_match_and_keep_pace) {
    SKIP_WITHOUT_GPU("reduction_kernels_match_and_keep_pace");
    fc_scope_open(gc);
    fc_scope_open(hc);
    l2_kernel = red(gc, "T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm", NULL);
    fc_kernel *sop = red(gc, "T x, T w", "T y", "x * w", "a + b", "y = a", "0", "sum_of_products",
                         "float64");
    fc_kernel *vmax = red(gc, "T x", "T y", "x", "a > b ? a : b", "y = a", "-1e300", "vmax", NULL);
    fc_array *hx, *gx, *hw, *gw;
    pair_of(FC_F32, FC_SHAPE(700, 513), &hx, &gx);
    pair_of(FC_F32, FC_SHAPE(513), &hw, &gw);
    const int codes[][3] = {{1, 1, 0}, {1, 0, 0}, {2, 0, 1}};
    for (size_t c = 0; c < 3; c++) {
        fc_axes ax = {codes[c][0], {codes[c][1], codes[c][2]}};
        char what[64];
        snprintf(what, sizeof what, "l2norm(exp(x)) over axes code %zu", c);
        expect_close(what, fc_kernel_reduce(l2_kernel, 1, (fc_array *[]){fc_exp(gx)}, ax, c == 1),
                     fc_sqrt(fc_sum(fc_square(fc_exp(hx)), ax, c == 1)));
        snprintf(what, sizeof what, "x / l2norm(x) over axes code %zu", c);
        expect_close(what, fc_div(gx, fc_kernel_reduce(l2_kernel, 1, (fc_array *[]){gx}, ax, true)),
                     fc_div(hx, fc_sqrt(fc_sum(fc_square(hx), ax, true))));
        snprintf(what, sizeof what, "vmax(x_f64) over axes code %zu", c);
        expect_close(what, fc_kernel_reduce(vmax, 1, (fc_array *[]){fc_cast(gx, FC_F64)}, ax, false),
                     fc_max(fc_cast(hx, FC_F64), ax, false));
    }
    expect_close("sum_of_products(x, w) in f64",
                 fc_kernel_reduce(sop, 2, (fc_array *[]){gx, gw}, FC_ALL, false),
                 fc_cast(fc_sum(fc_mul(fc_cast(hx, FC_F64), fc_cast(hw, FC_F64)), FC_ALL, false),
                         FC_F32));

    /* the CuPy material's l2norm over rows, 16384 x 4096 f32, beside the built-in form */
    float *big = malloc((size_t)16384 * 4096 * sizeof *big);
    cr_assert_not_null(big);
    for (size_t i = 0; i < (size_t)16384 * 4096; i++) big[i] = (float)urand();
    fc_array *X = fc_keep(fc_from_host(gc, FC_F32, FC_SHAPE(16384, 4096), big));
    free(big);
    cr_assert_eq(fc_eval(gc, &X, 1), FC_OK);
    expect_close("l2norm rows of 16384 x 4096 (user vs built-in, both on the GPU)", user_l2(X),
                 builtin_l2(X));
    double tu = time_eval(user_l2, X), tb = time_eval(builtin_l2, X);
    fprintf(stderr, "gpu_user: l2norm over rows of 16384 x 4096 f32: user kernel %.4f ms, "
                    "built-in sqrt(sum(x*x, 1)) %.4f ms, ratio %.3f\n", tu * 1e3, tb * 1e3, tu / tb);
    cr_expect_leq(tu, 1.10 * tb + 20e-6, "the user l2norm takes %.4f ms, the built-in %.4f ms",
                  tu * 1e3, tb * 1e3);
    fc_release(X);
}

/* ---- raw modules ------------------------------------------------------------------------ */

static const char raw_src[] =
    "struct affine { float a; float b; };\n"
    "extern \"C\" __global__ void saxpy(float a, const float *x, const float *y, float *out,\n"
    "                                   unsigned n) {\n"
    "    unsigned i = blockDim.x * blockIdx.x + threadIdx.x;\n"
    "    if (i < n) out[i] = a * x[i] + y[i];\n"
    "}\n"
    "extern \"C\" __global__ void first_half(const affine p, double *y, unsigned n) {\n"
    "    unsigned i = blockDim.x * blockIdx.x + threadIdx.x;\n"
    "    if (i < n / 2) y[i] = p.a * y[i] + p.b;\n"
    "}\n"
    "template <int K> __global__ void add_k(long long *y, unsigned n) {\n"
    "    unsigned i = blockDim.x * blockIdx.x + threadIdx.x;\n"
    "    if (i < n) y[i] += K;\n"
    "}\n"
    "extern \"C\" __global__ void fault(float *y) { y[(size_t)1 << 40] = 1.0f; }\n"
    "extern \"C\" __global__ void block_sums(const float *x, float *out, unsigned n) {\n"
    "    extern __shared__ float part[];\n"
    "    unsigned i = blockDim.x * blockIdx.x + threadIdx.x;\n"
    "    part[threadIdx.x] = i < n ? x[i] : 0.0f;\n"
    "    __syncthreads();\n"
    "    for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {\n"
    "        if (threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];\n"
    "        __syncthreads();\n"
    "    }\n"
    "    if (threadIdx.x == 0) out[blockIdx.x] = part[0];\n"
    "}\n";

Test(gpu_user, raw_modules_launch_and_leave_inputs_unchanged) {
    SKIP_WITHOUT_GPU("raw_modules_launch_and_leave_inputs_unchanged");
    fc_scope_open(gc);
    fc_scope_open(hc);
    const char *names[] = {"add_k<7>"};
    fc_module *m = NULL;
    cr_assert_eq(fc_module_create(gc, raw_src, 0, NULL, 1, names, &m), FC_OK, "%s", fc_errmsg(gc));
    enum { n = 100003 };
    fc_array *hx, *gx, *hy, *gy;
    pair_of(FC_F32, FC_SHAPE(n), &hx, &gx);
    pair_of(FC_F32, FC_SHAPE(n), &hy, &gy);
    fc_array *gout = fc_zeros(gc, FC_F32, FC_SHAPE(n)), *res;
    fc_array *later = fc_add(gout, fc_f64(gc, 1.0)); /* built before the launch, read after */
    fc_arg sa[] = {fc_arg_float(FC_F32, 2.5), fc_arg_in(fc_sin(gx)), fc_arg_in(gy),
                   fc_arg_out(gout), fc_arg_int(FC_U32, n)};
    cr_assert_eq(fc_module_launch(m, "saxpy", (unsigned[]){(n + 255) / 256, 1, 1},
                                  (unsigned[]){256, 1, 1}, 0, NULL, 5, sa, &res), FC_OK, "%s",
                 fc_errmsg(gc));
    expect_close("raw saxpy(2.5, sin(x), y)", res,
                 fc_add(fc_mul(fc_scalar(hc, FC_F32, 2.5), fc_sin(hx)), hy));
    expect_close("the array given as the output keeps its value", gout,
                 fc_zeros(hc, FC_F32, FC_SHAPE(n)));
    expect_close("a lazy expression of it sees the old value", later,
                 fc_ones(hc, FC_F32, FC_SHAPE(n)));
    /* a struct by value, a partial write: the rest keeps the copied value */
    struct { float a, b; } p = {3.0f, -1.0f};
    fc_array *hd, *gd;
    pair_of(FC_F64, FC_SHAPE(1000), &hd, &gd);
    fc_arg fa[] = {fc_arg_bytes(&p, sizeof p), fc_arg_out(gd), fc_arg_int(FC_U32, 1000)};
    cr_assert_eq(fc_module_launch(m, "first_half", (unsigned[]){4, 1, 1}, (unsigned[]){256, 1, 1}, 0,
                                  NULL, 3, fa, &res), FC_OK, "%s", fc_errmsg(gc));
    fc_array *half = fc_slice(hd, FC_S(0, 500, 1));
    expect_close("first_half: the written half",
                 fc_slice(res, FC_S(0, 500, 1)), fc_sub(fc_mul(half, fc_f64(hc, 3.0)), fc_f64(hc, 1.0)));
    expect_close("first_half: the rest keeps its value", fc_slice(res, FC_S(500, 1000, 1)),
                 fc_slice(hd, FC_S(500, 1000, 1)));
    /* a template through its name expression, on a stream of the user's */
    fc_stream *s = NULL;
    cr_assert_eq(fc_stream_create(gc, &s), FC_OK);
    fc_array *k0 = fc_arange(gc, FC_I64, 0, 777, 1);
    fc_arg ka[] = {fc_arg_out(k0), fc_arg_int(FC_U32, 777)};
    cr_assert_eq(fc_module_launch(m, "add_k<7>", (unsigned[]){1, 1, 1}, (unsigned[]){1024, 1, 1}, 0,
                                  s, 2, ka, &res), FC_OK, "%s", fc_errmsg(gc));
    expect_close("add_k<7> on a user stream", res, fc_arange(hc, FC_I64, 7, 784, 1));
    fc_stream_destroy(s);
    /* dynamic shared memory: a sum per block of 256 */
    fc_array *hv, *gv;
    pair_of(FC_F32, FC_SHAPE(64 * 256), &hv, &gv);
    fc_array *sums = fc_zeros(gc, FC_F32, FC_SHAPE(64));
    fc_arg ba[] = {fc_arg_in(gv), fc_arg_out(sums), fc_arg_int(FC_U32, 64 * 256)};
    cr_assert_eq(fc_module_launch(m, "block_sums", (unsigned[]){64, 1, 1}, (unsigned[]){256, 1, 1},
                                  256 * sizeof(float), NULL, 3, ba, &res), FC_OK, "%s",
                 fc_errmsg(gc));
    expect_close("block_sums with 1 KiB of dynamic shared memory", res,
                 fc_sum(fc_reshape(hv, FC_SHAPE(64, 256)), FC_AXES(1), false));
    /* bad launches fail cleanly */
    cr_expect_eq(fc_module_launch(m, "nope", (unsigned[]){1, 1, 1}, (unsigned[]){1, 1, 1}, 0, NULL,
                                  2, ka, &res), FC_ERR_INVALID);
    cr_expect(strstr(fc_errmsg(gc), "'nope': the module has no such kernel"), "%s", fc_errmsg(gc));
    cr_expect_eq(fc_module_launch(m, "add_k<7>", (unsigned[]){0, 1, 1}, (unsigned[]){1, 1, 1}, 0,
                                  NULL, 2, ka, &res), FC_ERR_INVALID);
    fc_module_destroy(m);
}

Test(gpu_user, a_faulting_raw_kernel_kills_the_gpu_context_not_the_cache) {
    SKIP_WITHOUT_GPU("a_faulting_raw_kernel_kills_the_gpu_context_not_the_cache");
    /* (Criterion runs each test in a process of its own: the fault ends this one's GPU use) */
    char dir[64];
    fc_ctx *bad = tu_ctx_with_cache(FC_BACKEND_CUDA, dir, sizeof dir);
    cr_assert_not_null(bad);
    char arch[16];
    snprintf(arch, sizeof arch, "%s", bad->be->arch(bad));
    fc_module *m;
    cr_assert_eq(fc_module_create(bad, raw_src, 0, NULL, 0, NULL, &m), FC_OK, "%s", fc_errmsg(bad));
    fc_array *y = fc_zeros(bad, FC_F32, FC_SHAPE(4)), *res = NULL;
    fc_arg a[] = {fc_arg_out(y)};
    fc_status st = fc_module_launch(m, "fault", (unsigned[]){1, 1, 1}, (unsigned[]){1, 1, 1}, 0,
                                    NULL, 1, a, &res);
    if (st == FC_OK) st = fc_ctx_synchronize(bad);
    cr_expect_eq(st, FC_ERR_BACKEND, "an illegal address must surface: %s", fc_strerror(st));
    float v[4];
    cr_expect_eq(fc_to_host(fc_ones(bad, FC_F32, FC_SHAPE(4)), v, sizeof v), FC_ERR_BACKEND,
                 "the context must stay dead");
    fc_ctx_destroy(bad);
    /* the module's entry is intact: a host context finds it without compiling */
    fc_ctx_options o;
    memset(&o, 0, sizeof o);
    o.backend = FC_BACKEND_HOST;
    o.cache_dir = dir;
    fc_ctx *h;
    cr_assert_eq(fc_ctx_create(&h, &o), FC_OK);
    fck_raw_binary b;
    cr_assert_eq(fck_raw_compile(h, raw_src, NULL, 0, NULL, 0, arch, &b), FC_OK, "%s", fc_errmsg(h));
    cr_expect(!b.compiled, "the module must come from the cache after the fault");
    cr_expect_gt(b.size, 0);
    fck_raw_binary_free(h, &b);
    fc_ctx_destroy(h);
    tu_remove_dir(dir);
}
