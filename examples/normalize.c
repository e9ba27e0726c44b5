/* normalize: standardise each column, (d - mean(d, 0)) / std(d, 0), in f32. */
#include "check.h"

#include <fusec.h>

#include <math.h>
#include <stdio.h>

enum { ROWS = 400, COLS = 48 };

int main(void) {
    fc_ctx *ctx;
    fc_status st = fc_ctx_create(&ctx, NULL);
    if (st != FC_OK) return report_error("normalize", NULL, st);
    fc_scope *scope = fc_scope_open(ctx);

    /* Columns with different offsets and spreads: d = u * (1 + col) + col. */
    fc_array *col = fc_arange(ctx, FC_F32, 0, COLS, 1);
    fc_array *u = fc_random_uniform(ctx, FC_F32, FC_SHAPE(ROWS, COLS), 9);
    fc_array *d = fc_add(fc_mul(u, fc_add(col, fc_f64(ctx, 1.0))), col);
    fc_array *z = fc_div(fc_sub(d, fc_mean(d, FC_AXES(0), false)), fc_std(d, FC_AXES(0), false, 0));

    static float ds[ROWS][COLS], zs[ROWS][COLS];
    static double want[ROWS][COLS];
    int rc;
    if ((st = fc_to_host(d, ds, sizeof ds)) != FC_OK ||
        (st = fc_to_host(z, zs, sizeof zs)) != FC_OK) {
        rc = report_error("normalize", ctx, st);
    } else {
        for (int c = 0; c < COLS; c++) {
            double mean = 0.0, var = 0.0;
            for (int r = 0; r < ROWS; r++) mean += ds[r][c];
            mean /= ROWS;
            for (int r = 0; r < ROWS; r++) var += (ds[r][c] - mean) * (ds[r][c] - mean);
            double sd = sqrt(var / ROWS);
            for (int r = 0; r < ROWS; r++) want[r][c] = (ds[r][c] - mean) / sd;
        }
        double m0 = 0.0, v0 = 0.0;
        for (int r = 0; r < ROWS; r++) m0 += zs[r][COLS - 1];
        m0 /= ROWS;
        for (int r = 0; r < ROWS; r++) v0 += (zs[r][COLS - 1] - m0) * (zs[r][COLS - 1] - m0);
        printf("normalize: (d - mean(d,0)) / std(d,0) of a %d x %d f32 array, on the %s backend\n",
               ROWS, COLS, backend_name(ctx));
        printf("  last column after: mean %.2g, std %.6f\n", m0, sqrt(v0 / ROWS));
        rc = check_close("normalize", &zs[0][0], &want[0][0], (size_t)ROWS * COLS, 1e-4, 1e-5);
    }
    fc_scope_close(scope);
    fc_ctx_destroy(ctx);
    return rc;
}
