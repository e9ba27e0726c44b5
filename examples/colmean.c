/* colmean: column means of x scaled by a weight per column, mean(x * w[None, :], axis=0). */
#include "check.h"

#include <fusec.h>

#include <math.h>
#include <stdio.h>

enum { ROWS = 300, COLS = 200 };

int main(void) {
    static float w[COLS];
    for (int c = 0; c < COLS; c++) w[c] = 1.0f + 0.01f * (float)c;

    fc_ctx *ctx;
    fc_status st = fc_ctx_create(&ctx, NULL);
    if (st != FC_OK) return report_error("colmean", NULL, st);
    fc_scope *scope = fc_scope_open(ctx);

    fc_array *x = fc_random_uniform(ctx, FC_F32, FC_SHAPE(ROWS, COLS), 21);
    fc_array *aw = fc_from_host(ctx, FC_F32, FC_SHAPE(COLS), w);
    fc_array *wrow = fc_slice(aw, FC_NEWAXIS, FC_COLON); /* w[None, :], shape [1, COLS] */
    fc_array *means = fc_mean(fc_mul(x, wrow), FC_AXES(0), false);

    static float xs[ROWS][COLS], got[COLS];
    static double want[COLS];
    int rc;
    if ((st = fc_to_host(x, xs, sizeof xs)) != FC_OK ||
        (st = fc_to_host(means, got, sizeof got)) != FC_OK) {
        rc = report_error("colmean", ctx, st);
    } else {
        for (int c = 0; c < COLS; c++) {
            double total = 0.0;
            for (int r = 0; r < ROWS; r++) total += (double)xs[r][c] * w[c];
            want[c] = total / ROWS;
        }
        printf("colmean: mean(x * w[None, :], axis=0) of a %d x %d f32 array, on the %s backend\n",
               ROWS, COLS, backend_name(ctx));
        printf("  means[0:4] = %.6f %.6f %.6f %.6f\n", got[0], got[1], got[2], got[3]);
        rc = check_close("colmean", got, want, COLS, 1e-5, 0.0);
    }
    fc_scope_close(scope);
    fc_ctx_destroy(ctx);
    return rc;
}
