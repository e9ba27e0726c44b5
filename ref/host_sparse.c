/*
 * ref/host_sparse.c - the reference of a CSR matrix times a dense vector or matrix
 * (CSR_MATMUL): each row's stored values times x's rows they name, in stored order, summed in
 * double (or complex double) and rounded once to the result's dtype, as SciPy's csr_matvec /
 * csr_matvecs loops but with a wide accumulator. Only stored values take part (a missing
 * entry is no 0 * inf). The index arrays are checked first, whatever built the node: a bad
 * one is FC_ERR_VALUE, never a read outside x.
 */
#include "graph.h"
#include "host.h"

#include <string.h>

/* Element i of the 1-d integer array at base (byte stride) as int64. */
static int64_t index_at(fc_dtype t, const char *base, int64_t stride, int64_t i) {
    fch_wide_val v;
    fch_read_wide(t, base + i * stride, stride, 1, &v);
    return v.i;
}

fc_status fch_csr_matmul(fc_ctx *ctx, const fc_array *a, const char *const *in,
                         const int64_t (*in_strides)[FC_MAX_DIMS], char *out) {
    const fc_array *ptr = a->in[0], *idx = a->in[1], *x = a->in[3];
    fc_dtype pt = (fc_dtype)ptr->dtype, it = (fc_dtype)idx->dtype, t = (fc_dtype)a->dtype;
    int64_t m = ptr->shape[0] - 1, nnz = idx->shape[0], n = x->shape[0];
    int64_t k = x->ndim == 2 ? x->shape[1] : 1;
    int64_t ps = in_strides[0][0], is = in_strides[1][0], ds = in_strides[2][0];
    int64_t xs0 = in_strides[3][0], xs1 = x->ndim == 2 ? in_strides[3][1] : 0;
    /* SciPy's check_format, in full */
    int64_t prev = 0;
    for (int64_t i = 0; i <= m; i++) {
        int64_t p = index_at(pt, in[0], ps, i);
        if ((i == 0 && p != 0) || p < prev || (i == m && p != nnz))
            return fcg_error(ctx, FC_ERR_VALUE, "csr_matmul: indptr[%lld] = %lld: row pointers "
                             "must start at 0, never fall and end at nnz = %lld", (long long)i,
                             (long long)p, (long long)nnz);
        prev = p;
    }
    for (int64_t j = 0; j < nnz; j++) {
        int64_t c = index_at(it, in[1], is, j);
        if (c < 0 || c >= n)
            return fcg_error(ctx, FC_ERR_VALUE, "csr_matmul: value %lld's column index %lld is "
                             "out of range for %lld columns", (long long)j, (long long)c,
                             (long long)n);
    }
    bool cplx = fcg_is_complex(t);
    size_t bytes = (size_t)(k > 0 ? k : 1) * 2 * sizeof(fch_wide_val);
    fch_wide_val *acc = fcg_malloc(ctx, bytes);
    if (!acc) return fcg_error(ctx, FC_ERR_NOMEM, "csr_matmul: out of memory");
    fch_wide_val *row = acc + (k > 0 ? k : 1);
    size_t es = fc_dtype_size(t);
    int64_t start = 0;
    for (int64_t i = 0; i < m; i++) {
        int64_t end = index_at(pt, in[0], ps, i + 1);
        memset(acc, 0, (size_t)k * sizeof *acc);
        for (int64_t jj = start; jj < end; jj++) {
            fch_wide_val v;
            fch_read_wide(t, in[2] + jj * ds, ds, 1, &v);
            int64_t c = index_at(it, in[1], is, jj);
            fch_read_wide(t, in[3] + c * xs0, xs1, (size_t)k, row);
            for (int64_t q = 0; q < k; q++) {
                if (cplx) {
                    acc[q].c[0] += v.c[0] * row[q].c[0] - v.c[1] * row[q].c[1];
                    acc[q].c[1] += v.c[0] * row[q].c[1] + v.c[1] * row[q].c[0];
                } else {
                    acc[q].f += v.f * row[q].f;
                }
            }
        }
        fch_write_wide(cplx ? FCH_W_C128 : FCH_W_F64, acc, (size_t)k, t,
                       out + (size_t)(i * k) * es, (int64_t)es);
        start = end;
    }
    fcg_free(ctx, acc, bytes);
    return FC_OK;
}
