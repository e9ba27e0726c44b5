/*
 * ref/host_conv.c - the STENCIL2D node on the host: the correlation of in[0] with the weights
 * in[1] at the node's origin, in[0] extended by the boundary (ops.def says what it computes).
 *
 * Exactly, as the oracle should: floats accumulate in double (complex in double pairs) and
 * round once to the node's dtype; integers accumulate modulo 2^64 and wrap to their width,
 * which is what SciPy's loops in the dtype give, whatever the order. Both operands are read
 * once into wide values first, so any strides cost one pass.
 */
#include "host.h"

#include <string.h>

/* Where index i of an axis of length n reads under the boundary; -1 for the fill. */
static int64_t boundary_index(int boundary, int64_t i, int64_t n) {
    if (i >= 0 && i < n) return i;
    if (boundary == FC_CONV_FILL || n == 0) return -1;
    if (boundary == FC_CONV_WRAP) return (i % n + n) % n;
    int64_t q = (i % (2 * n) + 2 * n) % (2 * n); /* symm: reflections with the edge repeated */
    return q < n ? q : 2 * n - 1 - q;
}

/* The array (dtype t, byte strides) as rows * cols wide values, row-major. */
static fch_wide_val *read_all(fc_ctx *ctx, fc_dtype t, const char *base, const int64_t *str,
                              int64_t rows, int64_t cols, size_t *bytes) {
    *bytes = (size_t)(rows * cols) * sizeof(fch_wide_val);
    fch_wide_val *v = fcg_malloc(ctx, *bytes ? *bytes : 1);
    if (!v) return NULL;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++)
            fch_read_wide(t, base + r * str[0] + c * str[1], 0, 1, &v[r * cols + c]);
    return v;
}

fc_status fch_stencil2d(fc_ctx *ctx, const fc_array *a, const char *const *in,
                        const int64_t (*in_strides)[FC_MAX_DIMS], char *out) {
    const fc_dtype t = (fc_dtype)a->dtype;
    const fch_wide cls = fch_wide_of(t);
    const int64_t h = a->in[0]->shape[0], w = a->in[0]->shape[1];
    const int64_t kh = a->in[1]->shape[0], kw = a->in[1]->shape[1];
    const int64_t oh = a->shape[0], ow = a->shape[1], oy = a->p.a[0], ox = a->p.a[1];
    const int boundary = a->p.mode;
    size_t xb, wb;
    fch_wide_val *x = read_all(ctx, t, in[0], in_strides[0], h, w, &xb);
    fch_wide_val *k = x ? read_all(ctx, t, in[1], in_strides[1], kh, kw, &wb) : NULL;
    if (!k) {
        if (x) fcg_free(ctx, x, xb);
        return fcg_error(ctx, FC_ERR_NOMEM, "stencil2d: out of memory");
    }
    fch_wide_val fill;
    memset(&fill, 0, sizeof fill);
    if (cls == FCH_W_I64) fill.i = (int64_t)a->p.re;
    else if (cls == FCH_W_U64) fill.u = a->p.re < 0 ? (uint64_t)(int64_t)a->p.re : (uint64_t)a->p.re;
    else if (cls == FCH_W_F64) fill.f = a->p.re;
    else fill.c[0] = a->p.re, fill.c[1] = a->p.im;
    const size_t es = fc_dtype_size(t);
    for (int64_t i = 0; i < oh; i++)
        for (int64_t j = 0; j < ow; j++) {
            fch_wide_val acc;
            memset(&acc, 0, sizeof acc);
            for (int64_t m = 0; m < kh; m++) {
                int64_t r = boundary_index(boundary, i + m - oy, h);
                for (int64_t n = 0; n < kw; n++) {
                    int64_t c = r < 0 ? -1 : boundary_index(boundary, j + n - ox, w);
                    const fch_wide_val *xv = c < 0 ? &fill : &x[r * w + c];
                    const fch_wide_val *kv = &k[m * kw + n];
                    switch (cls) {
                    case FCH_W_I64:
                    case FCH_W_U64: acc.u += xv->u * kv->u; break; /* modulo 2^64 */
                    case FCH_W_F64: acc.f += xv->f * kv->f; break;
                    case FCH_W_C128:
                        acc.c[0] += xv->c[0] * kv->c[0] - xv->c[1] * kv->c[1];
                        acc.c[1] += xv->c[0] * kv->c[1] + xv->c[1] * kv->c[0];
                        break;
                    }
                }
            }
            fch_write_wide(cls, &acc, 1, t, out + (size_t)(i * ow + j) * es, 0);
        }
    fcg_free(ctx, x, xb);
    fcg_free(ctx, k, wb);
    return FC_OK;
}
