/* poly2: z = x**2 + 2*y in f32. The literals are weak scalars (NumPy 2 rules): x**2 and 2*y
 * stay f32. */
#include "check.h"

#include <fusec.h>

#include <math.h>
#include <stdio.h>

enum { N = 50000 };

int main(void) {
    fc_ctx *ctx;
    fc_status st = fc_ctx_create(&ctx, NULL);
    if (st != FC_OK) return report_error("poly2", NULL, st);
    fc_scope *scope = fc_scope_open(ctx);

    fc_array *x = fc_random_uniform(ctx, FC_F32, FC_SHAPE(N), 11);
    fc_array *y = fc_random_uniform(ctx, FC_F32, FC_SHAPE(N), 12);
    fc_array *z = fc_add(fc_pow(x, fc_i64(ctx, 2)), fc_mul(fc_i64(ctx, 2), y));

    static float xs[N], ys[N], zs[N];
    static double want[N];
    int rc;
    if ((st = fc_to_host(x, xs, sizeof xs)) != FC_OK ||
        (st = fc_to_host(y, ys, sizeof ys)) != FC_OK ||
        (st = fc_to_host(z, zs, sizeof zs)) != FC_OK) {
        rc = report_error("poly2", ctx, st);
    } else if (fc_array_dtype(z) != FC_F32) {
        fprintf(stderr, "poly2: MISMATCH: result dtype %s, expected f32\n",
                fc_dtype_name(fc_array_dtype(z)));
        rc = 1;
    } else {
        printf("poly2: z = x**2 + 2*y, %d f32 values on the %s backend\n", N, backend_name(ctx));
        printf("  z[0:4] = %.6f %.6f %.6f %.6f\n", zs[0], zs[1], zs[2], zs[3]);
        for (int i = 0; i < N; i++)
            want[i] = (double)xs[i] * xs[i] + 2.0 * ys[i];
        rc = check_close("poly2", zs, want, N, 1e-6, 1e-7);
    }
    fc_scope_close(scope);
    fc_ctx_destroy(ctx);
    return rc;
}
