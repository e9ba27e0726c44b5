/* mandelbrot: 100 steps of z = where(abs(z) <= 2, z*z + c, z) over a c128 grid, counting for
 * each point the steps it stayed bounded. The 100 steps build one lazy graph; reading the
 * counts runs it. The grid is made with linspace and broadcasting: c = re[None, :] + 1j*im[:, None]. */
#include "check.h"

#include <fusec.h>

#include <stdint.h>
#include <stdio.h>

/* Grid steps are powers of two (1/32 and 1/16), so every c is exact and the plain C loop below
 * sees the very same numbers. */
enum { W = 81, H = 37, STEPS = 100 };
static const double RE0 = -2.0, RE1 = 0.5, IM0 = -1.125, IM1 = 1.125;

int main(void) {
    fc_ctx *ctx;
    fc_status st = fc_ctx_create(&ctx, NULL);
    if (st != FC_OK) return report_error("mandelbrot", NULL, st);
    fc_scope *scope = fc_scope_open(ctx);

    fc_array *re = fc_linspace(ctx, FC_F64, RE0, RE1, W, true);
    fc_array *im = fc_linspace(ctx, FC_F64, IM0, IM1, H, true);
    fc_array *c = fc_add(fc_expand_dims(re, 0), fc_mul(fc_expand_dims(im, 1), fc_c128(ctx, 0, 1)));

    fc_array *z = fc_zeros_like(c);
    fc_array *count = fc_zeros(ctx, FC_I32, FC_SHAPE(H, W));
    for (int step = 0; step < STEPS; step++) {
        fc_array *bounded = fc_less_equal(fc_abs(z), fc_f64(ctx, 2.0));
        z = fc_where(bounded, fc_add(fc_mul(z, z), c), z);
        count = fc_add(count, bounded); /* bool + i32 -> i32 */
    }

    static int32_t got[H][W];
    int rc = 0;
    if ((st = fc_to_host(count, got, sizeof got)) != FC_OK) {
        rc = report_error("mandelbrot", ctx, st);
    } else {
        /* The same iteration in plain C, one point at a time. */
        int inside = 0;
        for (int i = 0; i < H && rc == 0; i++) {
            for (int j = 0; j < W; j++) {
                double cr = RE0 + j * (RE1 - RE0) / (W - 1), ci = IM0 + i * (IM1 - IM0) / (H - 1);
                double zr = 0.0, zi = 0.0;
                int32_t n = 0;
                for (int step = 0; step < STEPS; step++) {
                    if (!(hypot(zr, zi) <= 2.0)) continue;
                    double nr = (zr * zr - zi * zi) + cr, ni = (zr * zi + zi * zr) + ci;
                    zr = nr;
                    zi = ni;
                    n++;
                }
                if (got[i][j] != n) {
                    fprintf(stderr, "mandelbrot: MISMATCH at c = %g%+gj: %d steps, expected %d\n",
                            cr, ci, got[i][j], n);
                    rc = 1;
                    break;
                }
                inside += n == STEPS;
            }
        }
        if (rc == 0) {
            printf("mandelbrot: %d x %d c128 grid, %d steps, on the %s backend\n", W, H, STEPS,
                   backend_name(ctx));
            /* Every other row: '#' never escaped, then shades by how long a point lasted. */
            static const char shades[] = " .:-=+*%";
            for (int i = 0; i < H; i += 2) {
                char line[W + 1];
                for (int j = 0; j < W; j++) {
                    int n = got[i][j];
                    line[j] = n == STEPS ? '#' : shades[n >= 32 ? 7 : n / 5];
                }
                line[W] = '\0';
                printf("  %s\n", line);
            }
            printf("  %d of %d points stayed bounded; every count matches plain C\n", inside, W * H);
        }
    }
    fc_scope_close(scope);
    fc_ctx_destroy(ctx);
    return rc;
}
