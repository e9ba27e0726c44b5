/*
 * test_raw.c - raw modules without a GPU: NVRTC compiles them for an arch through the kernel
 * cache (a second compile is a hit, with the lowered names of the name expressions kept),
 * compile errors quote the line of the user's source, bad arguments fail cleanly, and the
 * host backend says that raw modules need the CUDA backend. Launches are tested on the GPU
 * (tests/test_gpu_user.c, examples/raw_kernels.c).
 */
#include <criterion/criterion.h>

#include <fusec.h>

#include "graph.h"
#include "raw.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static fc_ctx *ctx;
static char dir[64];

static void setup(void) {
    ctx = tu_ctx_with_cache(FC_BACKEND_HOST, dir, sizeof dir); /* a cache of its own */
    cr_assert_not_null(ctx);
}

static void teardown(void) {
    fc_ctx_destroy(ctx);
    tu_remove_dir(dir);
}

TestSuite(raw, .init = setup, .fini = teardown);

static const char module_src[] =
    "extern \"C\" __global__ void saxpy(float a, const float *x, const float *y, float *out,\n"
    "                                   unsigned n) {\n"
    "    unsigned i = blockDim.x * blockIdx.x + threadIdx.x;\n"
    "    if (i < n) out[i] = a * x[i] + y[i];\n"
    "}\n"
    "template <typename T> __global__ void test_sum(const T *x, T *y, unsigned n) {\n"
    "    unsigned i = blockDim.x * blockIdx.x + threadIdx.x;\n"
    "    if (i < n) y[i] = x[i] + T(SHIFT);\n"
    "}\n";

Test(raw, compiles_through_the_cache_with_lowered_names) {
    const char *opts[] = {"-DSHIFT=3"};
    const char *names[] = {"test_sum<float>", "test_sum<int>"};
    fck_raw_binary b;
    cr_assert_eq(fck_raw_compile(ctx, module_src, opts, 1, names, 2, "sm_80", &b), FC_OK, "%s",
                 fc_errmsg(ctx));
    cr_expect(b.compiled, "the first compile must run NVRTC");
    cr_expect_gt(b.size, 0);
    cr_assert_eq(b.nnames, 2);
    char first[2][256];
    for (int i = 0; i < 2; i++) {
        cr_expect_eq(strncmp(b.lowered[i], "_Z", 2), 0, "%s lowered to %s", names[i], b.lowered[i]);
        snprintf(first[i], sizeof first[i], "%s", b.lowered[i]);
    }
    cr_expect_str_neq(first[0], first[1]);
    fck_raw_binary_free(ctx, &b);
    cr_assert_eq(fck_raw_compile(ctx, module_src, opts, 1, names, 2, "sm_80", &b), FC_OK);
    cr_expect(!b.compiled, "the same module again must come from the cache");
    cr_assert_eq(b.nnames, 2);
    for (int i = 0; i < 2; i++)
        cr_expect_str_eq(b.lowered[i], first[i], "the cached lowered name of %s", names[i]);
    fck_raw_binary_free(ctx, &b);
    /* another option or arch is another binary */
    const char *opts2[] = {"-DSHIFT=4"};
    cr_assert_eq(fck_raw_compile(ctx, module_src, opts2, 1, names, 2, "sm_80", &b), FC_OK);
    cr_expect(b.compiled, "a new define must compile again");
    fck_raw_binary_free(ctx, &b);
    cr_assert_eq(fck_raw_compile(ctx, module_src, opts, 1, names, 2, "sm_90", &b), FC_OK);
    cr_expect(b.compiled, "a new arch must compile again");
    fck_raw_binary_free(ctx, &b);
    /* and the public compile-only call */
    cr_expect_eq(fc_module_compile(ctx, module_src, 1, opts, 2, names, "sm_90"), FC_OK, "%s",
                 fc_errmsg(ctx));
}

Test(raw, errors_quote_the_users_line) {
    static const char bad[] = "extern \"C\" __global__ void k(float *x) {\n"
                              "    x[threadIdx.x] = 1.0f;\n"
                              "    x[0] = undefined_thing;\n"
                              "}\n";
    cr_expect_eq(fc_module_compile(ctx, bad, 0, NULL, 0, NULL, "sm_80"), FC_ERR_COMPILE);
    const char *msg = fc_errmsg(ctx);
    cr_expect(strstr(msg, "module.cu(3)"), "the message does not name line 3:\n%s", msg);
    cr_expect(strstr(msg, "undefined_thing"), "%s", msg);
    const char *names[] = {"no_such_template<float>"};
    cr_expect_neq(fc_module_compile(ctx, module_src, 0, NULL, 1, names, "sm_80"), FC_OK);
    const char *opts[] = {"-DSHIFT=3"};
    cr_expect_neq(fc_module_compile(ctx, module_src, 1, opts, 1, names, "sm_80"), FC_OK);
    cr_expect(strstr(fc_errmsg(ctx), "no_such_template"), "%s", fc_errmsg(ctx));
    cr_expect_eq(fc_module_compile(ctx, NULL, 0, NULL, 0, NULL, "sm_80"), FC_ERR_NULL);
    cr_expect_eq(fc_module_compile(ctx, module_src, 1, (const char *[]){NULL}, 0, NULL, "sm_80"),
                 FC_ERR_NULL);
    cr_expect_neq(fc_module_compile(ctx, module_src, 1, opts, 0, NULL, "compute_80"), FC_OK);
}

Test(raw, the_host_backend_refuses_with_a_reason) {
    fc_module *m = (fc_module *)1;
    cr_expect_eq(fc_module_create(ctx, module_src, 0, NULL, 0, NULL, &m), FC_ERR_UNSUPPORTED);
    cr_expect_null(m);
    cr_expect(strstr(fc_errmsg(ctx), "raw modules need the CUDA backend"), "%s", fc_errmsg(ctx));
    fc_module_destroy(NULL);
}
