/* kmeans: Lloyd's k-means on 2-d points as a NumPy user writes it: squared distances to the
 * centroids by broadcasting, labels = argmin over the centroids, then each centroid is the mean
 * of its points by bincount (counts, and sums with weights=x and weights=y). Checked against
 * the same iterations in plain C: the same labels, centroids within rounding (the GPU adds a
 * cluster's coordinates in another order). */
#include "check.h"

#include <fusec.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>

enum { N = 20000, K = 5, ITERS = 8 };

static double px[N], py[N];

/* Points around K centres, from a fixed linear congruential stream (uniform noise). */
static void make_points(void) {
    static const double cx[K] = {-4, 0, 5, 2, -2}, cy[K] = {-3, 4, 1, -5, 0.5};
    uint64_t s = 12345;
    for (int i = 0; i < N; i++) {
        double u[2];
        for (int q = 0; q < 2; q++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            u[q] = (double)(s >> 11) * 0x1p-53 * 2.0 - 1.0;
        }
        px[i] = cx[i % K] + 1.5 * u[0];
        py[i] = cy[i % K] + 1.5 * u[1];
    }
}

int main(void) {
    make_points();
    fc_ctx *ctx;
    fc_status st = fc_ctx_create(&ctx, NULL);
    if (st != FC_OK) return report_error("kmeans", NULL, st);
    fc_scope *scope = fc_scope_open(ctx);
    fc_array *x = fc_from_host(ctx, FC_F64, FC_SHAPE(N), px);
    fc_array *y = fc_from_host(ctx, FC_F64, FC_SHAPE(N), py);
    /* the first K points start as the centroids */
    fc_array *mx = fc_keep(fc_slice(x, FC_S(0, K, 1))), *my = fc_keep(fc_slice(y, FC_S(0, K, 1)));
    fc_array *labels = NULL;
    for (int it = 0; it < ITERS && st == FC_OK; it++) {
        fc_scope *s = fc_scope_open(ctx);
        fc_array *dx = fc_sub(fc_expand_dims(x, 1), fc_expand_dims(mx, 0));
        fc_array *dy = fc_sub(fc_expand_dims(y, 1), fc_expand_dims(my, 0));
        fc_array *lab = fc_argmin(fc_add(fc_mul(dx, dx), fc_mul(dy, dy)), 1, false);
        fc_array *count = fc_bincount(lab, NULL, K);
        fc_array *keep = fc_equal(count, fc_i64(ctx, 0)); /* an empty cluster keeps its place */
        fc_array *nx = fc_where(keep, mx, fc_div(fc_bincount(lab, x, K), count));
        fc_array *ny = fc_where(keep, my, fc_div(fc_bincount(lab, y, K), count));
        fc_array *state[3] = {nx, ny, lab};
        if ((st = fc_eval(ctx, state, 3)) == FC_OK) {
            fc_release(mx), fc_release(my);
            if (labels) fc_release(labels);
            mx = fc_keep(nx), my = fc_keep(ny), labels = fc_keep(lab);
        }
        fc_scope_close(s);
    }
    static int64_t got_lab[N];
    double got_x[K], got_y[K];
    if (st == FC_OK) st = fc_to_host(labels, got_lab, sizeof got_lab);
    if (st == FC_OK) st = fc_to_host(mx, got_x, sizeof got_x);
    if (st == FC_OK) st = fc_to_host(my, got_y, sizeof got_y);
    int rc = 0;
    if (st != FC_OK) {
        rc = report_error("kmeans", ctx, st);
    } else {
        /* The same iterations in plain C. */
        double cx[K], cy[K];
        static int64_t lab[N];
        for (int k = 0; k < K; k++) cx[k] = px[k], cy[k] = py[k];
        for (int it = 0; it < ITERS; it++) {
            double sx[K] = {0}, sy[K] = {0};
            int64_t cnt[K] = {0};
            for (int i = 0; i < N; i++) {
                int best = 0;
                double bd = INFINITY;
                for (int k = 0; k < K; k++) {
                    double ddx = px[i] - cx[k], ddy = py[i] - cy[k], d = ddx * ddx + ddy * ddy;
                    if (d < bd) bd = d, best = k;
                }
                lab[i] = best;
                cnt[best]++, sx[best] += px[i], sy[best] += py[i];
            }
            for (int k = 0; k < K; k++)
                if (cnt[k]) cx[k] = sx[k] / (double)cnt[k], cy[k] = sy[k] / (double)cnt[k];
        }
        int wrong = 0;
        for (int i = 0; i < N; i++) wrong += got_lab[i] != lab[i];
        double worst = 0;
        for (int k = 0; k < K; k++) {
            worst = fmax(worst, fabs(got_x[k] - cx[k]) / (1 + fabs(cx[k])));
            worst = fmax(worst, fabs(got_y[k] - cy[k]) / (1 + fabs(cy[k])));
        }
        if (wrong || !(worst <= 1e-10)) {
            fprintf(stderr, "kmeans: MISMATCH: %d labels differ, centroids differ by %.3g\n", wrong,
                    worst);
            rc = 1;
        } else {
            printf("kmeans: %d points, %d clusters, %d iterations on the %s backend\n", N, K,
                   ITERS, backend_name(ctx));
            for (int k = 0; k < K; k++) printf("  centroid %d: (%8.4f, %8.4f)\n", k, got_x[k], got_y[k]);
            printf("  every label matches plain C; centroids within %.2g\n", worst);
        }
    }
    fc_release(mx), fc_release(my);
    if (labels) fc_release(labels);
    fc_scope_close(scope);
    fc_ctx_destroy(ctx);
    return rc;
}
