/* raw_kernels: the CuPy material's raw kernels as fusec raw modules, each checked against
 * plain C: a raw saxpy, my_add on a 5x5 grid (5 blocks of 5 threads), and a module with the
 * two kernels test_sum and test_multiply over N x N with N = 10, plus a template kernel
 * launched through a name expression. Outputs are new arrays (values are immutable): the
 * array given as an output keeps its value. Raw modules run on the GPU; on the host backend
 * the example says so and stops (exit 0). */
#include "check.h"

#include <fusec.h>

#include <stdio.h>

static const char saxpy_src[] =
    "extern \"C\" __global__ void saxpy(float a, const float *x, const float *y, float *out,\n"
    "                                   unsigned n) {\n"
    "    unsigned i = blockDim.x * blockIdx.x + threadIdx.x;\n"
    "    if (i < n) out[i] = a * x[i] + y[i];\n"
    "}\n";

static const char my_add_src[] =
    "extern \"C\" __global__ void my_add(const float* x1, const float* x2, float* y) {\n"
    "    int idx = threadIdx.x + blockDim.x * blockIdx.x;\n"
    "    y[idx] = x1[idx] + x2[idx];\n"
    "}\n";

static const char module_src[] =
    "extern \"C\" {\n"
    "__global__ void test_sum(const float* x1, const float* x2, float* y, unsigned int N) {\n"
    "    unsigned int idx = threadIdx.x + blockDim.x * blockIdx.x;\n"
    "    if (idx < N) y[idx] = x1[idx] + x2[idx];\n"
    "}\n"
    "__global__ void test_multiply(const float* x1, const float* x2, float* y, unsigned int N) {\n"
    "    unsigned int idx = threadIdx.x + blockDim.x * blockIdx.x;\n"
    "    if (idx < N) y[idx] = x1[idx] * x2[idx];\n"
    "}\n"
    "}\n"
    "template <typename T> __global__ void scale(const T* x, T* y, T s, unsigned int N) {\n"
    "    unsigned int idx = threadIdx.x + blockDim.x * blockIdx.x;\n"
    "    if (idx < N) y[idx] = x[idx] * s;\n"
    "}\n";

enum { N = 10, SAXPY_N = 1000 };

int main(void) {
    fc_ctx *ctx;
    fc_status st = fc_ctx_create(&ctx, NULL);
    if (st != FC_OK) return report_error("raw_kernels", NULL, st);
    if (fc_ctx_backend(ctx) != FC_BACKEND_CUDA) {
        printf("raw_kernels: skipped on the %s backend (raw modules are CUDA C)\n",
               backend_name(ctx));
        fc_ctx_destroy(ctx);
        return 0;
    }
    fc_scope *scope = fc_scope_open(ctx);
    fc_module *saxpy, *add, *mod;
    const char *names[] = {"scale<double>"};
    if ((st = fc_module_create(ctx, saxpy_src, 0, NULL, 0, NULL, &saxpy)) != FC_OK ||
        (st = fc_module_create(ctx, my_add_src, 0, NULL, 0, NULL, &add)) != FC_OK ||
        (st = fc_module_create(ctx, module_src, 0, NULL, 1, names, &mod)) != FC_OK)
        return report_error("raw_kernels", ctx, st);

    /* saxpy: out = 2.5 x + y over 1000 elements, 4 blocks of 256 */
    fc_array *x = fc_random_uniform(ctx, FC_F32, FC_SHAPE(SAXPY_N), 3);
    fc_array *y = fc_random_uniform(ctx, FC_F32, FC_SHAPE(SAXPY_N), 4);
    fc_array *out = fc_zeros(ctx, FC_F32, FC_SHAPE(SAXPY_N)), *saxpy_out;
    fc_arg sa[] = {fc_arg_float(FC_F32, 2.5), fc_arg_in(x), fc_arg_in(y), fc_arg_out(out),
                   fc_arg_int(FC_U32, SAXPY_N)};
    if ((st = fc_module_launch(saxpy, "saxpy", (unsigned[]){4, 1, 1}, (unsigned[]){256, 1, 1}, 0,
                               NULL, 5, sa, &saxpy_out)) != FC_OK)
        return report_error("raw_kernels", ctx, st);

    /* my_add on a 5x5 grid */
    fc_array *a1 = fc_reshape(fc_arange(ctx, FC_F32, 0, 25, 1), FC_SHAPE(5, 5));
    fc_array *y5 = fc_zeros(ctx, FC_F32, FC_SHAPE(5, 5)), *add_out;
    fc_arg aa[] = {fc_arg_in(a1), fc_arg_in(a1), fc_arg_out(y5)};
    if ((st = fc_module_launch(add, "my_add", (unsigned[]){5, 1, 1}, (unsigned[]){5, 1, 1}, 0, NULL,
                               3, aa, &add_out)) != FC_OK)
        return report_error("raw_kernels", ctx, st);

    /* the module: test_sum, then test_multiply, then scale<double> */
    fc_array *x1 = fc_reshape(fc_arange(ctx, FC_F32, 0, N * N, 1), FC_SHAPE(N, N));
    fc_array *x2 = fc_ones(ctx, FC_F32, FC_SHAPE(N, N));
    fc_array *yz = fc_zeros(ctx, FC_F32, FC_SHAPE(N, N)), *sum_out, *mul_out, *scale_out;
    fc_arg ma[] = {fc_arg_in(x1), fc_arg_in(x2), fc_arg_out(yz), fc_arg_int(FC_U32, N * N)};
    if ((st = fc_module_launch(mod, "test_sum", (unsigned[]){N, 1, 1}, (unsigned[]){N, 1, 1}, 0,
                               NULL, 4, ma, &sum_out)) != FC_OK ||
        (st = fc_module_launch(mod, "test_multiply", (unsigned[]){N, 1, 1}, (unsigned[]){N, 1, 1}, 0,
                               NULL, 4, ma, &mul_out)) != FC_OK)
        return report_error("raw_kernels", ctx, st);
    fc_array *xd = fc_cast(x1, FC_F64), *yd = fc_zeros(ctx, FC_F64, FC_SHAPE(N, N));
    fc_arg da[] = {fc_arg_in(xd), fc_arg_out(yd), fc_arg_float(FC_F64, 0.5),
                   fc_arg_int(FC_U32, N * N)};
    if ((st = fc_module_launch(mod, "scale<double>", (unsigned[]){1, 1, 1},
                               (unsigned[]){128, 1, 1}, 0, NULL, 4, da, &scale_out)) != FC_OK)
        return report_error("raw_kernels", ctx, st);

    static float xs[SAXPY_N], ys[SAXPY_N], got_saxpy[SAXPY_N], got_add[25], got_sum[N * N],
        got_mul[N * N], got_scale_f[N * N], still_zero[N * N];
    static double want_saxpy[SAXPY_N], want_add[25], want_sum[N * N], want_mul[N * N],
        want_scale[N * N], zeros[N * N], got_scale[N * N];
    if ((st = fc_to_host(x, xs, sizeof xs)) != FC_OK || (st = fc_to_host(y, ys, sizeof ys)) != FC_OK ||
        (st = fc_to_host(saxpy_out, got_saxpy, sizeof got_saxpy)) != FC_OK ||
        (st = fc_to_host(add_out, got_add, sizeof got_add)) != FC_OK ||
        (st = fc_to_host(sum_out, got_sum, sizeof got_sum)) != FC_OK ||
        (st = fc_to_host(mul_out, got_mul, sizeof got_mul)) != FC_OK ||
        (st = fc_to_host(scale_out, got_scale, sizeof got_scale)) != FC_OK ||
        (st = fc_to_host(yz, still_zero, sizeof still_zero)) != FC_OK)
        return report_error("raw_kernels", ctx, st);
    for (int i = 0; i < SAXPY_N; i++) want_saxpy[i] = 2.5f * xs[i] + ys[i];
    for (int i = 0; i < 25; i++) want_add[i] = 2.0 * i;
    for (int i = 0; i < N * N; i++) {
        want_sum[i] = i + 1.0;
        want_mul[i] = i;
        want_scale[i] = 0.5 * i;
        got_scale_f[i] = (float)got_scale[i];
        zeros[i] = 0;
    }
    printf("raw_kernels on the %s backend:\n", backend_name(ctx));
    int rc = check_close("saxpy", got_saxpy, want_saxpy, SAXPY_N, 1e-6, 1e-6) ||
             check_close("my_add", got_add, want_add, 25, 0, 0) ||
             check_close("test_sum", got_sum, want_sum, N * N, 0, 0) ||
             check_close("test_multiply", got_mul, want_mul, N * N, 0, 0) ||
             check_close("scale<double>", got_scale_f, want_scale, N * N, 0, 0) ||
             check_close("the output array given keeps its value", still_zero, zeros, N * N, 0, 0);
    fc_module_destroy(saxpy);
    fc_module_destroy(add);
    fc_module_destroy(mod);
    fc_scope_close(scope);
    fc_ctx_destroy(ctx);
    return rc;
}
