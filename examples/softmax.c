/* softmax: each row of x mapped to exp(x - max) / sum(exp(x - max)), in f32.
 * A reduce -> broadcast -> elementwise chain: keepdims keeps the row axis for broadcasting. */
#include "check.h"

#include <fusec.h>

#include <math.h>
#include <stdio.h>

enum { ROWS = 64, COLS = 1000 };

int main(void) {
    fc_ctx *ctx;
    fc_status st = fc_ctx_create(&ctx, NULL);
    if (st != FC_OK) return report_error("softmax", NULL, st);
    fc_scope *scope = fc_scope_open(ctx);

    /* Logits in [-10, 10). */
    fc_array *u = fc_random_uniform(ctx, FC_F32, FC_SHAPE(ROWS, COLS), 3);
    fc_array *x = fc_sub(fc_mul(u, fc_f64(ctx, 20.0)), fc_f64(ctx, 10.0));

    fc_array *m = fc_max(x, FC_AXES(1), true);
    fc_array *e = fc_exp(fc_sub(x, m));
    fc_array *y = fc_div(e, fc_sum(e, FC_AXES(1), true));

    static float xs[ROWS][COLS], ys[ROWS][COLS];
    static double want[ROWS][COLS];
    int rc;
    if ((st = fc_to_host(x, xs, sizeof xs)) != FC_OK ||
        (st = fc_to_host(y, ys, sizeof ys)) != FC_OK) {
        rc = report_error("softmax", ctx, st);
    } else {
        for (int r = 0; r < ROWS; r++) {
            double mx = xs[r][0], total = 0.0;
            for (int c = 1; c < COLS; c++) mx = fmax(mx, xs[r][c]);
            for (int c = 0; c < COLS; c++) total += exp(xs[r][c] - mx);
            for (int c = 0; c < COLS; c++) want[r][c] = exp(xs[r][c] - mx) / total;
        }
        double row0 = 0.0;
        for (int c = 0; c < COLS; c++) row0 += ys[0][c];
        printf("softmax: %d x %d f32, over rows, on the %s backend\n", ROWS, COLS,
               backend_name(ctx));
        printf("  row 0: y[0:3] = %.6g %.6g %.6g, sums to %.6f\n", ys[0][0], ys[0][1], ys[0][2],
               row0);
        rc = check_close("softmax", &ys[0][0], &want[0][0], (size_t)ROWS * COLS, 1e-5, 1e-9);
    }
    fc_scope_close(scope);
    fc_ctx_destroy(ctx);
    return rc;
}
