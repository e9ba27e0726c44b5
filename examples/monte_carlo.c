/* monte_carlo: pi from points uniform in the unit square, and the mean and spread of a
 * normal sample, with a random generator (fc_rng). The draws fuse into the reductions that
 * read them: each estimate is one kernel that never stores its random numbers. The values
 * are a pure function of (seed, stream, index), so the same program gives the same numbers on
 * every backend; plain C recomputes the estimates from the draws read back. */
#include "check.h"

#include <fusec.h>

#include <math.h>
#include <stdio.h>

enum { N = 1 << 20 };

int main(void) {
    fc_ctx *ctx;
    fc_status st = fc_ctx_create(&ctx, NULL);
    if (st != FC_OK) return report_error("monte_carlo", NULL, st);
    fc_scope *scope = fc_scope_open(ctx);

    fc_rng rng = fc_rng_init(2026);
    fc_array *x = fc_rng_random(ctx, &rng, FC_F64, FC_SHAPE(N));
    fc_array *y = fc_rng_random(ctx, &rng, FC_F64, FC_SHAPE(N));
    fc_array *inside = fc_less(fc_add(fc_mul(x, x), fc_mul(y, y)), fc_f64(ctx, 1.0));
    fc_array *pi = fc_mul(fc_mean(fc_cast(inside, FC_F64), FC_ALL, false), fc_f64(ctx, 4.0));
    fc_array *z = fc_rng_normal(ctx, &rng, 3.0, 0.5, FC_F32, FC_SHAPE(N));
    fc_array *zmean = fc_mean(z, FC_ALL, false), *zstd = fc_std(z, FC_ALL, false, 0);

    static double xs[N], ys[N];
    static float zs[N];
    double got_pi, got_mean, got_std;
    int rc = 0;
    if ((st = fc_eval(ctx, (fc_array *[]){pi, zmean, zstd}, 3)) != FC_OK ||
        (st = fc_to_host(pi, &got_pi, sizeof got_pi)) != FC_OK ||
        (st = fc_to_host(fc_cast(zmean, FC_F64), &got_mean, sizeof got_mean)) != FC_OK ||
        (st = fc_to_host(fc_cast(zstd, FC_F64), &got_std, sizeof got_std)) != FC_OK ||
        (st = fc_to_host(x, xs, sizeof xs)) != FC_OK || (st = fc_to_host(y, ys, sizeof ys)) != FC_OK ||
        (st = fc_to_host(z, zs, sizeof zs)) != FC_OK) {
        rc = report_error("monte_carlo", ctx, st);
    } else {
        long hits = 0;
        double s = 0, s2 = 0;
        for (int i = 0; i < N; i++) {
            hits += xs[i] * xs[i] + ys[i] * ys[i] < 1.0;
            s += zs[i];
        }
        double mean = s / N;
        for (int i = 0; i < N; i++) s2 += ((double)zs[i] - mean) * ((double)zs[i] - mean);
        double want[3] = {4.0 * (double)hits / N, mean, sqrt(s2 / N)};
        float got[3] = {(float)got_pi, (float)got_mean, (float)got_std};
        printf("monte_carlo: %d points on the %s backend: pi ~ %.6f (error %.2g); normal(3, 0.5): "
               "mean %.5f, std %.5f\n", N, backend_name(ctx), got_pi, fabs(got_pi - M_PI),
               got_mean, got_std);
        /* the count is exact; the f32 mean and std sum in another order than plain C's */
        rc = check_close("monte_carlo", got, want, 3, 1e-5, 1e-9);
        if (!rc && (fabs(got_pi - M_PI) > 0.01 || fabs(got_mean - 3) > 0.01 ||
                    fabs(got_std - 0.5) > 0.01)) {
            fprintf(stderr, "monte_carlo: the estimates are off\n");
            rc = 1;
        }
    }
    fc_scope_close(scope);
    fc_ctx_destroy(ctx);
    return rc;
}
