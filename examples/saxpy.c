/* saxpy: z = 2*x + y in f32, with x and y made in C and copied in with fc_from_host. */
#include "check.h"

#include <fusec.h>

#include <math.h>
#include <stdio.h>

enum { N = 100000 };

int main(void) {
    static float x[N], y[N], z[N];
    static double want[N];
    for (int i = 0; i < N; i++) {
        x[i] = (float)sin(0.001 * i);
        y[i] = (float)(i % 97) / 97.0f - 0.5f;
    }

    fc_ctx *ctx;
    fc_status st = fc_ctx_create(&ctx, NULL);
    if (st != FC_OK) return report_error("saxpy", NULL, st);
    fc_scope *scope = fc_scope_open(ctx);

    fc_array *ax = fc_from_host(ctx, FC_F32, FC_SHAPE(N), x);
    fc_array *ay = fc_from_host(ctx, FC_F32, FC_SHAPE(N), y);
    fc_array *az = fc_add(fc_mul(fc_f64(ctx, 2.0), ax), ay);

    int rc;
    if ((st = fc_to_host(az, z, sizeof z)) != FC_OK) {
        rc = report_error("saxpy", ctx, st);
    } else {
        printf("saxpy: z = 2*x + y, %d f32 values on the %s backend\n", N, backend_name(ctx));
        printf("  z[1000:1003] = %.6f %.6f %.6f\n", z[1000], z[1001], z[1002]);
        for (int i = 0; i < N; i++)
            want[i] = 2.0 * x[i] + y[i];
        rc = check_close("saxpy", z, want, N, 1e-6, 1e-7);
    }
    fc_scope_close(scope);
    fc_ctx_destroy(ctx);
    return rc;
}
