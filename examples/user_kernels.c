/* user_kernels: the CuPy material's user kernels as fusec user kernels, each checked against
 * plain C: the elementwise axpb (y = a * x + b) and squared_diff, the reductions sum_squares
 * and l2norm (over axis 1), and, in the spirit of cupy.fuse, squared_diff followed by a sum
 * and a square root in one fused kernel, and sum_of_products (cupy.fuse of sum(x * y)),
 * which plain fusec ops already fuse into one kernel. User kernels run on the GPU; on the host backend the
 * example says so and stops (exit 0). */
#include "check.h"

#include <fusec.h>

#include <math.h>
#include <stdio.h>

enum { ROWS = 64, COLS = 300 };

int main(void) {
    fc_ctx *ctx;
    fc_status st = fc_ctx_create(&ctx, NULL);
    if (st != FC_OK) return report_error("user_kernels", NULL, st);
    if (fc_ctx_backend(ctx) != FC_BACKEND_CUDA) {
        printf("user_kernels: skipped on the %s backend (user kernels are CUDA C)\n",
               backend_name(ctx));
        fc_ctx_destroy(ctx);
        return 0;
    }
    fc_scope *scope = fc_scope_open(ctx);
    fc_kernel *axpb, *sqdiff, *sum_squares, *l2norm;
    if ((st = fc_elementwise_kernel(ctx, "float32 x, float32 a, float32 b", "float32 y",
                                    "y = a * x + b", "axpb", &axpb)) != FC_OK ||
        (st = fc_elementwise_kernel(ctx, "T x, T y", "T z", "z = (x - y) * (x - y)",
                                    "squared_diff", &sqdiff)) != FC_OK ||
        (st = fc_reduction_kernel(ctx, "T x", "T y", "x * x", "a + b", "y = a", "0",
                                  "sum_squares", NULL, &sum_squares)) != FC_OK ||
        (st = fc_reduction_kernel(ctx, "T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0",
                                  "l2norm", NULL, &l2norm)) != FC_OK)
        return report_error("user_kernels", ctx, st);

    fc_array *x = fc_sub(fc_random_uniform(ctx, FC_F32, FC_SHAPE(ROWS, COLS), 7), fc_f64(ctx, 0.5));
    fc_array *w = fc_random_uniform(ctx, FC_F32, FC_SHAPE(COLS), 8);
    fc_array *y = fc_kernel_call1(axpb, 3, (fc_array *[]){x, fc_f64(ctx, 2.0), fc_f64(ctx, 0.5)});
    fc_array *d = fc_kernel_call1(sqdiff, 2, (fc_array *[]){x, w});
    fc_array *ss = fc_kernel_reduce(sum_squares, 1, (fc_array *[]){x}, FC_ALL, false);
    fc_array *n = fc_kernel_reduce(l2norm, 1, (fc_array *[]){x}, FC_AXES(1), false);
    fc_array *dist = fc_sqrt(fc_sum(d, FC_AXES(1), false)); /* one kernel with squared_diff */
    fc_array *sop = fc_sum(fc_mul(x, w), FC_ALL, false);      /* cupy.fuse(sum_of_products) */

    static float xs[ROWS][COLS], ws[COLS], got_y[ROWS][COLS], got_d[ROWS][COLS], got_n[ROWS],
        got_dist[ROWS], got_ss, got_sop;
    static double want_y[ROWS][COLS], want_d[ROWS][COLS], want_n[ROWS], want_dist[ROWS], want_ss,
        want_sop;
    if ((st = fc_to_host(x, xs, sizeof xs)) != FC_OK || (st = fc_to_host(w, ws, sizeof ws)) != FC_OK ||
        (st = fc_to_host(y, got_y, sizeof got_y)) != FC_OK ||
        (st = fc_to_host(d, got_d, sizeof got_d)) != FC_OK ||
        (st = fc_to_host(ss, &got_ss, sizeof got_ss)) != FC_OK ||
        (st = fc_to_host(n, got_n, sizeof got_n)) != FC_OK ||
        (st = fc_to_host(dist, got_dist, sizeof got_dist)) != FC_OK ||
        (st = fc_to_host(sop, &got_sop, sizeof got_sop)) != FC_OK)
        return report_error("user_kernels", ctx, st);
    want_ss = want_sop = 0;
    for (int r = 0; r < ROWS; r++) {
        double row = 0, dd = 0;
        for (int c = 0; c < COLS; c++) {
            double v = xs[r][c], e = v - ws[c];
            want_y[r][c] = 2.0 * v + 0.5;
            want_d[r][c] = e * e;
            row += v * v;
            dd += (double)(float)(e * e);
            want_sop += v * ws[c];
        }
        want_n[r] = sqrt(row);
        want_dist[r] = sqrt(dd);
        want_ss += row;
    }
    printf("user_kernels on the %s backend:\n", backend_name(ctx));
    int rc = check_close("axpb", &got_y[0][0], &want_y[0][0], ROWS * COLS, 1e-6, 1e-6) ||
             check_close("squared_diff", &got_d[0][0], &want_d[0][0], ROWS * COLS, 1e-5, 1e-6) ||
             check_close("sum_squares", &got_ss, &want_ss, 1, 1e-5, 0) ||
             check_close("l2norm", got_n, want_n, ROWS, 1e-5, 0) ||
             check_close("sqrt(sum(squared_diff(x, w), 1))", got_dist, want_dist, ROWS, 1e-5, 0) ||
             check_close("sum_of_products", &got_sop, &want_sop, 1, 1e-5, 1e-5);
    fc_scope_close(scope);
    fc_ctx_destroy(ctx);
    return rc;
}
