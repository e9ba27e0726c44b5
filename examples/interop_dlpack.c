/* interop_dlpack: arrays handed to another library and taken back through DLPack, zero-copy.
 *
 * A result of fusec's is exported as a DLManagedTensor (what __dlpack__ hands out), its memory
 * checked to be the array's own, then imported again as a consumer would (from_dlpack) and
 * computed on; its deleter runs once fusec no longer needs it. On the host backend a plain C
 * buffer with Fortran strides is also wrapped, as memory another library owns. Runs on either
 * backend. */
#include "check.h"

#include <fusec_dlpack.h>

#include <math.h>
#include <stdio.h>

enum { ROWS = 300, COLS = 200 };

static int deleted; /* deleters run: the exported tensor's, through the import's release */

static void count_delete(DLManagedTensor *t) {
    deleted++;
    t->manager_ctx = NULL;
}

int main(void) {
    fc_ctx *ctx;
    fc_status st = fc_ctx_create(&ctx, NULL);
    if (st != FC_OK) return report_error("interop_dlpack", NULL, st);
    printf("interop_dlpack (%s backend)\n", backend_name(ctx));
    fc_scope *scope = fc_scope_open(ctx);
    int rc = 0;

    /* y[i, j] = sin(0.01 i) * cos(0.02 j), handed out. */
    fc_array *i = fc_reshape(fc_arange(ctx, FC_F32, 0, ROWS, 1), FC_SHAPE(ROWS, 1));
    fc_array *j = fc_arange(ctx, FC_F32, 0, COLS, 1);
    fc_array *y = fc_mul(fc_sin(fc_mul(i, fc_f64(ctx, 0.01))), fc_cos(fc_mul(j, fc_f64(ctx, 0.02))));
    DLManagedTensor *t;
    if ((st = fc_dlpack_export(y, NULL, &t)) != FC_OK) {
        rc = report_error("interop_dlpack", ctx, st);
        goto done;
    }
    const DLTensor *dl = &t->dl_tensor;
    printf("  exported: %d-d %lld x %lld, strides %lld %lld (elements), device type %d\n",
           dl->ndim, (long long)dl->shape[0], (long long)dl->shape[1], (long long)dl->strides[0],
           (long long)dl->strides[1], (int)dl->device.device_type);

    /* A consumer takes it: the same memory, no copy. Column sums of the import. */
    fc_array *back = fc_dlpack_import(ctx, t, NULL);
    fc_export e;
    if ((st = fc_array_export(back, NULL, &e)) != FC_OK) {
        rc = report_error("interop_dlpack", ctx, st);
        goto done;
    }
    if (e.data != dl->data) {
        fprintf(stderr, "interop_dlpack: MISMATCH: the import is a copy\n");
        rc = 1;
    }
    fc_export_release(&e);
    static float got[COLS];
    static double want[COLS];
    if ((st = fc_to_host(fc_sum(back, FC_AXES(0), false), got, sizeof got)) != FC_OK) {
        rc = report_error("interop_dlpack", ctx, st);
        goto done;
    }
    for (int c = 0; c < COLS; c++) {
        want[c] = 0;
        for (int r = 0; r < ROWS; r++)
            want[c] += (double)(float)sin((float)r * 0.01f) * (double)(float)cos((float)c * 0.02f);
    }
    rc |= check_close("interop_dlpack", got, want, COLS, 1e-4, 1e-4);

    /* Memory of another library's: a C buffer in Fortran order (host memory: host backend). */
    if (fc_ctx_device(ctx) < 0) {
        static double fortran[ROWS * COLS];
        for (int c = 0; c < COLS; c++)
            for (int r = 0; r < ROWS; r++) fortran[c * ROWS + r] = r - 0.5 * c;
        /* The tensor (and what it points to) lives until its deleter runs: static here. */
        static int64_t shape[2] = {ROWS, COLS}, strides[2] = {1, ROWS};
        static DLManagedTensor ext;
        ext.dl_tensor.data = fortran;
        ext.dl_tensor.device.device_type = kDLCPU;
        ext.dl_tensor.ndim = 2;
        fc_dlpack_dtype(FC_F64, &ext.dl_tensor.dtype);
        ext.dl_tensor.shape = shape;
        ext.dl_tensor.strides = strides;
        ext.deleter = count_delete;
        double row_total[ROWS];
        st = fc_to_host(fc_sum(fc_dlpack_import(ctx, &ext, NULL), FC_AXES(1), false), row_total,
                        sizeof row_total);
        if (st != FC_OK) {
            rc = report_error("interop_dlpack", ctx, st);
            goto done;
        }
        for (int r = 0; r < ROWS && !rc; r++) {
            double w = r * (double)COLS - 0.5 * (COLS - 1) * COLS / 2.0;
            if (fabs(row_total[r] - w) > 1e-9 * fabs(w) + 1e-9) {
                fprintf(stderr, "interop_dlpack: MISMATCH at row %d: %g, expected %g\n", r,
                        row_total[r], w);
                rc = 1;
            }
        }
        printf("  a Fortran-order C buffer wrapped and summed: %s\n", rc ? "wrong" : "ok");
    }

done:
    fc_scope_close(scope); /* the imports go: fusec calls the deleters */
    if (!rc && fc_ctx_device(ctx) < 0 && deleted != 1) {
        fprintf(stderr, "interop_dlpack: the wrapped buffer's deleter ran %d times\n", deleted);
        rc = 1;
    }
    fc_ctx_destroy(ctx);
    return rc;
}
