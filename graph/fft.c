/*
 * graph/fft.c - the discrete Fourier transform ops (library calls): fc_fft, fc_ifft.
 *
 * np.fft.fft / np.fft.ifft with n = None and norm = "backward" along one axis. The node's
 * input is always complex of the result's dtype: NumPy 2 computes a float16 or float32 input
 * in complex64 and every other real or integer input in complex128, so a real input becomes a
 * CAST node first. The cast then fuses into whatever kernel produces the input, and the
 * library call (cuFFT on the GPU) is a plain complex-to-complex transform.
 *
 * ifft's 1/n is NumPy's too, rounded as NumPy rounds it: in the input's real dtype (f16 for an
 * f16 input, f32 for f32 and c64, f64 otherwise). It depends on the dtype before the cast, so
 * the node keeps it (p.re), and the printer writes the uncast input where the cast is the one
 * fc_ifft would insert.
 */
#include "graph.h"

#include <string.h>

fc_dtype fcg_fft_dtype(fc_dtype t) {
    return t == FC_F16 || t == FC_BF16 || t == FC_F32 || t == FC_C64 ? FC_C64 : FC_C128;
}

double fcg_ifft_scale(fc_dtype t, int64_t n) {
    /* NumPy 2: fct = reciprocal(n, dtype=result_type(a.real.dtype, 1.0)), with n converted to
     * that dtype first; half's reciprocal is computed in float and rounded. bf16 follows its
     * f16 twin (ml_dtypes has no reciprocal loop). */
    switch (t) {
    case FC_F16:
        return fcg_f16_to_f32(fcg_f32_to_f16(1.0f / fcg_f16_to_f32(fcg_f32_to_f16((float)n))));
    case FC_BF16:
        return fcg_bf16_to_f32(fcg_f32_to_bf16(1.0f / fcg_bf16_to_f32(fcg_f32_to_bf16((float)n))));
    case FC_F32:
    case FC_C64: return 1.0f / (float)n;
    default: return 1.0 / (double)n;
    }
}

static fc_array *fft_node(fcg_op op, fc_array *a, int axis) {
    const char *name = fcg_ops[op].pyname;
    fc_array *early;
    fc_ctx *ctx = fcg_begin(name, 1, &a, &early);
    if (!ctx || early) return early;
    char sh[200];
    if (axis < -a->ndim || axis >= a->ndim)
        return fcg_poison(ctx, FC_ERR_AXIS, "%s: axis %d is out of bounds for an array of "
                          "dimension %d (%s %s)", name, axis, a->ndim,
                          fcg_shape_str(sh, a->ndim, a->shape), fc_dtype_name((fc_dtype)a->dtype));
    if (axis < 0) axis += a->ndim;
    if (a->shape[axis] < 1)
        return fcg_poison(ctx, FC_ERR_SHAPE, "%s: invalid number of data points (0) along axis "
                          "%d of %s (%s)", name, axis, fcg_shape_str(sh, a->ndim, a->shape),
                          fc_dtype_name((fc_dtype)a->dtype));
    fc_dtype t = (fc_dtype)a->dtype, r = fcg_fft_dtype(t);
    fcg_params p;
    memset(&p, 0, sizeof p);
    p.axis = axis;
    if (op == FCG_OP_IFFT) p.re = fcg_ifft_scale(t, a->shape[axis]);
    /* The cast is ours alone (no scope takes it); the node holds its own reference. A cast to
     * the array's own dtype is the array itself. */
    fc_scope *saved = ctx->scope;
    ctx->scope = NULL;
    fc_array *x = fc_cast(a, r);
    ctx->scope = saved;
    if (x->status != FC_OK) return fcg_ret(ctx, x);
    /* fcg_make checks the size too: a real input widens to complex. */
    fc_array *node = fcg_make(ctx, op, r, r, false, a->ndim, a->shape, 1, &x, &p);
    fcg_release(x);
    return node;
}

fc_array *fc_fft(fc_array *a, int axis) { return fft_node(FCG_OP_FFT, a, axis); }

fc_array *fc_ifft(fc_array *a, int axis) { return fft_node(FCG_OP_IFFT, a, axis); }
