/* tanh_sin: y = tanh(sin(x) + 0.1 * x) over x uniform in [-4, 4), in f32.
 * The whole expression is one lazy graph; it runs when the result is read. */
#include "check.h"

#include <fusec.h>

#include <math.h>
#include <stdio.h>

enum { N = 1 << 16 };

int main(void) {
    fc_ctx *ctx;
    fc_status st = fc_ctx_create(&ctx, NULL);
    if (st != FC_OK) return report_error("tanh_sin", NULL, st);
    fc_scope *scope = fc_scope_open(ctx);

    fc_array *u = fc_random_uniform(ctx, FC_F32, FC_SHAPE(N), 7);
    fc_array *x = fc_sub(fc_mul(u, fc_f64(ctx, 8.0)), fc_f64(ctx, 4.0)); /* stays f32 */
    fc_array *y = fc_tanh(fc_add(fc_sin(x), fc_mul(fc_f64(ctx, 0.1), x)));

    static float xs[N], ys[N];
    static double want[N];
    int rc = 0;
    if ((st = fc_eval(ctx, (fc_array *[]){x, y}, 2)) != FC_OK ||
        (st = fc_to_host(x, xs, sizeof xs)) != FC_OK ||
        (st = fc_to_host(y, ys, sizeof ys)) != FC_OK) {
        rc = report_error("tanh_sin", ctx, st);
    } else {
        printf("tanh_sin: y = tanh(sin(x) + 0.1*x), %d f32 values on the %s backend\n", N,
               backend_name(ctx));
        printf("  x[0:4] = % .5f % .5f % .5f % .5f\n", xs[0], xs[1], xs[2], xs[3]);
        printf("  y[0:4] = % .5f % .5f % .5f % .5f\n", ys[0], ys[1], ys[2], ys[3]);
        for (int i = 0; i < N; i++)
            want[i] = tanh(sin((double)xs[i]) + 0.1 * xs[i]);
        rc = check_close("tanh_sin", ys, want, N, 1e-5, 1e-6);
    }
    fc_scope_close(scope);
    fc_ctx_destroy(ctx);
    return rc;
}
