/* blur3x3: a 3x3 box blur with a symmetric boundary (scipy's convolve2d(..., boundary="symm")),
 * written as NumPy would: pad by one, then average the nine shifted slices. */
#include "check.h"

#include <fusec.h>

#include <stdio.h>

enum { H = 48, W = 64 };

/* Index into [0, n) with the edge mirrored: -1 -> 0, n -> n - 1 (np.pad mode "symmetric"). */
static int mirror(int i, int n) {
    return i < 0 ? -i - 1 : i >= n ? 2 * n - i - 1 : i;
}

int main(void) {
    fc_ctx *ctx;
    fc_status st = fc_ctx_create(&ctx, NULL);
    if (st != FC_OK) return report_error("blur3x3", NULL, st);
    fc_scope *scope = fc_scope_open(ctx);

    fc_array *img = fc_random_uniform(ctx, FC_F32, FC_SHAPE(H, W), 17);
    fc_array *p = fc_pad(img, 1, (const int64_t[][2]){{1, 1}}, FC_PAD_SYMMETRIC, 0.0);
    fc_array *acc = fc_zeros(ctx, FC_F32, FC_SHAPE(H, W));
    for (int di = 0; di < 3; di++)
        for (int dj = 0; dj < 3; dj++)
            acc = fc_add(acc, fc_slice(p, FC_S(di, di + H, 1), FC_S(dj, dj + W, 1)));
    fc_array *blur = fc_div(acc, fc_f64(ctx, 9.0));

    static float in[H][W], got[H][W];
    static double want[H][W];
    int rc;
    if ((st = fc_to_host(img, in, sizeof in)) != FC_OK ||
        (st = fc_to_host(blur, got, sizeof got)) != FC_OK) {
        rc = report_error("blur3x3", ctx, st);
    } else {
        for (int i = 0; i < H; i++)
            for (int j = 0; j < W; j++) {
                double total = 0.0;
                for (int di = -1; di <= 1; di++)
                    for (int dj = -1; dj <= 1; dj++)
                        total += in[mirror(i + di, H)][mirror(j + dj, W)];
                want[i][j] = total / 9.0;
            }
        printf("blur3x3: 3x3 box blur, symmetric edges, %d x %d f32, on the %s backend\n", H, W,
               backend_name(ctx));
        printf("  corner: in %.4f -> out %.4f; centre: in %.4f -> out %.4f\n", in[0][0],
               got[0][0], in[H / 2][W / 2], got[H / 2][W / 2]);
        rc = check_close("blur3x3", &got[0][0], &want[0][0], (size_t)H * W, 1e-6, 1e-7);
    }
    fc_scope_close(scope);
    fc_ctx_destroy(ctx);
    return rc;
}
