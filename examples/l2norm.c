/* l2norm: the Euclidean norm of each row, sqrt(sum(x*x, axis=1)), in f32. */
#include "check.h"

#include <fusec.h>

#include <math.h>
#include <stdio.h>

enum { ROWS = 128, COLS = 500 };

int main(void) {
    fc_ctx *ctx;
    fc_status st = fc_ctx_create(&ctx, NULL);
    if (st != FC_OK) return report_error("l2norm", NULL, st);
    fc_scope *scope = fc_scope_open(ctx);

    fc_array *x = fc_sub(fc_random_uniform(ctx, FC_F32, FC_SHAPE(ROWS, COLS), 5),
                         fc_f64(ctx, 0.5));
    fc_array *norm = fc_sqrt(fc_sum(fc_mul(x, x), FC_AXES(1), false));

    static float xs[ROWS][COLS], got[ROWS];
    static double want[ROWS];
    int rc;
    if ((st = fc_to_host(x, xs, sizeof xs)) != FC_OK ||
        (st = fc_to_host(norm, got, sizeof got)) != FC_OK) {
        rc = report_error("l2norm", ctx, st);
    } else {
        for (int r = 0; r < ROWS; r++) {
            double ss = 0.0;
            for (int c = 0; c < COLS; c++) ss += (double)xs[r][c] * xs[r][c];
            want[r] = sqrt(ss);
        }
        printf("l2norm: sqrt(sum(x*x, axis=1)) of a %d x %d f32 array, on the %s backend\n",
               ROWS, COLS, backend_name(ctx));
        printf("  norms[0:4] = %.6f %.6f %.6f %.6f\n", got[0], got[1], got[2], got[3]);
        rc = check_close("l2norm", got, want, ROWS, 1e-5, 0.0);
    }
    fc_scope_close(scope);
    fc_ctx_destroy(ctx);
    return rc;
}
