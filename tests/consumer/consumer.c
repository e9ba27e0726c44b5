/* A program built against an installed fusec: a small elementwise + reduction chain through
 * the public API on the host backend, checked against plain C loops. Exit 0 on match.
 * It makes no libm calls of its own, so linking proves the static library brings libm. */
#include <fusec.h>

#include <stdio.h>

enum { ROWS = 16, COLS = 24 };

int main(void) {
    fc_ctx_options opts = {.backend = FC_BACKEND_HOST};
    fc_ctx *ctx;
    fc_status st = fc_ctx_create(&ctx, &opts);
    if (st != FC_OK) {
        fprintf(stderr, "consumer: fc_ctx_create: %s\n", fc_strerror(st));
        return 1;
    }
    double x[ROWS][COLS], y[COLS];
    for (int i = 0; i < ROWS; i++)
        for (int j = 0; j < COLS; j++) x[i][j] = (double)((i * 37 + j * 11) % 29) / 7.0 - 2.0;
    for (int j = 0; j < COLS; j++) y[j] = 0.5 + 0.125 * j;

    fc_scope *scope = fc_scope_open(ctx);
    fc_array *ax = fc_from_host(ctx, FC_F64, FC_SHAPE(ROWS, COLS), x);
    fc_array *ay = fc_from_host(ctx, FC_F64, FC_SHAPE(COLS), y);
    /* sum(where(x > 0, x, -x) * y + sqrt(x * x + 1), axis=1) */
    fc_array *absx = fc_where(fc_greater(ax, fc_f64(ctx, 0)), ax, fc_negative(ax));
    fc_array *hyp = fc_sqrt(fc_add(fc_mul(ax, ax), fc_f64(ctx, 1)));
    fc_array *r = fc_sum(fc_add(fc_mul(absx, ay), hyp), FC_AXES(1), false);

    double got[ROWS];
    st = fc_to_host(r, got, sizeof got);
    int bad = 0;
    if (st != FC_OK) {
        fprintf(stderr, "consumer: %s: %s\n", fc_strerror(st), fc_errmsg(ctx));
        bad = 1;
    }
    for (int i = 0; i < ROWS && !bad; i++) {
        double want = 0;
        for (int j = 0; j < COLS; j++) {
            double v = x[i][j] * x[i][j] + 1, s = v; /* sqrt by Newton's method: no libm */
            for (int k = 0; k < 60; k++) s = 0.5 * (s + v / s);
            want += (x[i][j] > 0 ? x[i][j] : -x[i][j]) * y[j] + s;
        }
        double diff = got[i] - want;
        if (!(diff <= 1e-9 && diff >= -1e-9)) {
            fprintf(stderr, "consumer: row %d: got %.17g, want %.17g\n", i, got[i], want);
            bad = 1;
        }
    }
    fc_scope_close(scope);
    fc_ctx_destroy(ctx);
    if (!bad)
        printf("consumer: fusec %d.%d.%d, %d row sums match plain C\n", FUSEC_VERSION_MAJOR,
               FUSEC_VERSION_MINOR, FUSEC_VERSION_PATCH, ROWS);
    return bad;
}
