/* mandelbrot_masked: the CuPy material's Mandelbrot loop as it is written there, with boolean
 * masks: Z[mask] = Z[mask] * Z[mask] + C[mask]; the points that escape this step get a smooth
 * colour, mat[newly] = n + 1 - log(log(|z|)) / log(2), and leave the mask; the loop stops
 * when no point is left (if not mask.any(): break). Each mask subscript knows its size once
 * the mask's count is evaluated (as CuPy synchronises there), so every step evaluates its
 * state, which also keeps the graph one step long; fc_assign does it, so an old state array
 * that only its update reads lends it its buffer (mat and mask here: Z's update reads the old
 * Z through gathers, elements other threads write). Checked against the same loop in plain C. */
#include "check.h"

#include <fusec.h>

#include <math.h>
#include <stdbool.h>
#include <stdio.h>

/* Grid steps are powers of two (1/32 and 1/16), so every c is exact in both programs. */
enum { W = 81, H = 37, MAX_ITER = 60 };
static const double X0 = -2.0, X1 = 0.5, Y0 = -1.125, Y1 = 1.125;

static bool any(fc_array *a) {
    bool v = false;
    return fc_read(fc_any(a, FC_ALL, false), &v, 0, 1) == FC_OK && v;
}

int main(void) {
    fc_ctx *ctx;
    fc_status st = fc_ctx_create(&ctx, NULL);
    if (st != FC_OK) return report_error("mandelbrot_masked", NULL, st);
    fc_scope *scope = fc_scope_open(ctx);

    /* C = X + 1j * Y over meshgrid(x, y, indexing="ij"): shape [W, H] */
    fc_array *xy[2] = {fc_linspace(ctx, FC_F64, X0, X1, W, true),
                       fc_linspace(ctx, FC_F64, Y0, Y1, H, true)}, *XY[2];
    if ((st = fc_meshgrid(ctx, xy, 2, true, XY)) != FC_OK)
        return report_error("mandelbrot_masked", ctx, st);
    fc_array *C = fc_keep(fc_add(XY[0], fc_mul(fc_c128(ctx, 0, 1), XY[1])));
    /* The loop's state: Z, mat and mask, updated together by fc_assign each step. */
    fc_array *state[3] = {fc_keep(fc_zeros_like(C)), fc_keep(fc_zeros(ctx, FC_F64, FC_SHAPE(W, H))),
                          fc_keep(fc_full(ctx, FC_BOOL, FC_SHAPE(W, H), 1))};
    int steps = 0;
    for (int n = 0; n < MAX_ITER && st == FC_OK; n++) {
        fc_scope *it = fc_scope_open(ctx);
        fc_array *Z = state[0], *mat = state[1], *mask = state[2];
        fc_idx m[1] = {FC_ARRAY_IDX(mask)};
        fc_array *zm = fc_index(Z, 1, m);
        fc_array *z = fc_setitem(Z, 1, m, fc_add(fc_mul(zm, zm), fc_index(C, 1, m)));
        fc_array *newly = fc_logical_and(fc_greater(fc_abs(z), fc_f64(ctx, 2.0)), mask);
        fc_array *colour = mat, *active = mask;
        if (any(newly)) {
            fc_idx e[1] = {FC_ARRAY_IDX(newly)};
            fc_array *lz = fc_log(fc_log(fc_abs(fc_index(z, 1, e))));
            colour = fc_setitem(mat, 1, e, fc_sub(fc_f64(ctx, n + 1), fc_div(lz, fc_f64(ctx, log(2.0)))));
            active = fc_setitem(mask, 1, e, fc_bool(ctx, false));
        }
        fc_array *next[3] = {fc_keep(z), fc_keep(colour), fc_keep(active)};
        /* The scope's expressions read the old state: closed first, an old value that only
         * the update reads dies with it, and the update takes its buffer (as NumPy's
         * in-place assignment would write into it) */
        fc_scope_close(it);
        st = fc_assign(ctx, state, next, 3);
        steps = n + 1;
        if (st == FC_OK && !any(state[2])) break;
    }
    fc_array *mat = state[1];
    static double got[W][H];
    if (st == FC_OK) st = fc_to_host(mat, got, sizeof got);
    int rc = 0;
    if (st != FC_OK) {
        rc = report_error("mandelbrot_masked", ctx, st);
    } else {
        /* The same loop in plain C, one point at a time. */
        int escaped = 0;
        double worst = 0;
        for (int i = 0; i < W && rc == 0; i++)
            for (int j = 0; j < H; j++) {
                double cr = X0 + i * (X1 - X0) / (W - 1), ci = Y0 + j * (Y1 - Y0) / (H - 1);
                double zr = 0, zi = 0, want = 0;
                for (int n = 0; n < MAX_ITER; n++) {
                    double nr = (zr * zr - zi * zi) + cr, ni = (zr * zi + zi * zr) + ci;
                    zr = nr, zi = ni;
                    if (hypot(zr, zi) > 2.0) {
                        want = n + 1 - log(log(hypot(zr, zi))) / log(2.0);
                        break;
                    }
                }
                double err = fabs(got[i][j] - want);
                if (err > 1e-12 * (1 + fabs(want))) {
                    fprintf(stderr, "mandelbrot_masked: MISMATCH at c = %g%+gj: %.17g, expected "
                            "%.17g\n", cr, ci, got[i][j], want);
                    rc = 1;
                    break;
                }
                if (err > worst) worst = err;
                escaped += want != 0;
            }
        if (rc == 0) {
            printf("mandelbrot_masked: %d x %d c128 grid, %d steps of masked updates, on the %s "
                   "backend\n", W, H, steps, backend_name(ctx));
            static const char shades[] = " .:-=+*%";
            for (int j = 0; j < H; j += 2) {
                char line[W + 1];
                for (int i = 0; i < W; i++) {
                    double v = got[i][j];
                    line[i] = v == 0 ? '#' : shades[v >= 28 ? 7 : (int)(v / 4) % 8];
                }
                line[W] = '\0';
                printf("  %s\n", line);
            }
            fc_memory_stats m;
            fc_memory_stats_get(ctx, &m);
            printf("  %d of %d points escaped; every colour matches plain C (largest difference "
                   "%.2g); %llu updates wrote over the value they replaced\n", escaped, W * H,
                   worst, (unsigned long long)m.reused);
        }
    }
    fc_release(C), fc_release(state[0]), fc_release(state[1]), fc_release(state[2]);
    fc_scope_close(scope);
    fc_ctx_destroy(ctx);
    return rc;
}
