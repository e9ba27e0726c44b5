/* sparse_spmv: y = A @ x + 0.5 x for a sparse A (a 2-d Poisson stencil, 5 values a row) built in
 * C as COO triples, converted to CSR and multiplied through cuSPARSE on the GPU (the host
 * reference elsewhere); the axpy after the product fuses into one kernel. */
#include "check.h"

#include <fusec.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

enum { G = 300, N = G * G, MAXNNZ = 5 * N };

int main(void) {
    static int32_t row[MAXNNZ], col[MAXNNZ];
    static float val[MAXNNZ], x[N], y[N];
    static double want[N];
    int nnz = 0;
    for (int i = 0; i < G; i++)
        for (int j = 0; j < G; j++) {
            int r = i * G + j;
            const int di[5] = {0, -1, 1, 0, 0}, dj[5] = {0, 0, 0, -1, 1};
            for (int k = 0; k < 5; k++) {
                int ii = i + di[k], jj = j + dj[k];
                if (ii < 0 || ii >= G || jj < 0 || jj >= G) continue;
                row[nnz] = r, col[nnz] = ii * G + jj, val[nnz] = k == 0 ? 4.0f : -1.0f;
                nnz++;
            }
        }
    for (int i = 0; i < N; i++) x[i] = (float)((i * 7919) % 1000) / 1000.0f;

    fc_ctx *ctx;
    fc_status st = fc_ctx_create(&ctx, NULL);
    if (st != FC_OK) return report_error("sparse_spmv", NULL, st);
    fc_scope *scope = fc_scope_open(ctx);

    fc_sparse coo = fc_sparse_coo(fc_from_host(ctx, FC_F32, FC_SHAPE(nnz), val),
                                  fc_from_host(ctx, FC_I32, FC_SHAPE(nnz), row),
                                  fc_from_host(ctx, FC_I32, FC_SHAPE(nnz), col), N, N);
    fc_sparse a = fc_sparse_tocsr(coo); /* canonical CSR: sorted, duplicates summed */
    fc_array *ax = fc_from_host(ctx, FC_F32, FC_SHAPE(N), x);
    fc_array *ay = fc_add(fc_sparse_matmul(a, ax), fc_mul(fc_f64(ctx, 0.5), ax));

    int rc;
    if ((st = fc_sparse_status(a)) != FC_OK || (st = fc_to_host(ay, y, sizeof y)) != FC_OK) {
        rc = report_error("sparse_spmv", ctx, st);
    } else {
        printf("sparse_spmv: y = A @ x + 0.5 x, A %d x %d with %lld stored values (%s), on the "
               "%s backend\n", N, N, (long long)fc_sparse_nnz(a),
               fc_dtype_name(fc_sparse_index_dtype(a)), backend_name(ctx));
        printf("  y[0:3] = %.6f %.6f %.6f\n", y[0], y[1], y[2]);
        for (int i = 0; i < N; i++) want[i] = 0.5 * x[i];
        for (int k = 0; k < nnz; k++) want[row[k]] += (double)val[k] * x[col[k]];
        rc = check_close("sparse_spmv", y, want, N, 1e-5, 1e-5);
    }
    fc_scope_close(scope);
    fc_ctx_destroy(ctx);
    return rc;
}
