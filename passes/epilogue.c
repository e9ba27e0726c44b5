/*
 * passes/epilogue.c - the elementwise epilogues a library applies in its own kernel.
 *
 * cuBLASLt's matmul adds a bias vector along the product's rows and applies ReLU or GELU in
 * the kernel that computes the product (CUBLASLT_EPILOGUE_BIAS / RELU / RELU_BIAS / GELU /
 * GELU_BIAS), so `maximum(a @ b + bias, 0)` is one pass over the result instead of the
 * product's pass and an elementwise one. The chains that qualify are defined here once: the
 * fusion pass absorbs them into the library kernel (passes/fuse.c, absorb_epilogues) and the
 * backend reads them back from the kernel (fcp_lib_epilogue) to set the library's epilogue.
 * Likewise the views a library reads through a flag of its own instead of a stored copy
 * (fcp_lib_source).
 *
 * The product: f32 x f32 -> f32 of two matrices (2-D), K > 0: the type and shapes cuBLASLt's
 * epilogues take with results that equal the unfused chain's (an f32 bias added to an f32
 * product, rounded once, then max(., +0.0)); GELU is cuBLASLt's own evaluation of the tanh
 * form, which differs from fcx_gelu_tanh's in the last bits (as its product does from
 * cuBLAS's), so only gelu_tanh qualifies, never the exact gelu. Batched, half-precision, f64
 * and complex products keep their elementwise kernel.
 */
#include "plan.h"

#include <math.h>
#include <string.h>

static bool same_shape(const fc_array *a, const fc_array *b) {
    return a->ndim == b->ndim && memcmp(a->shape, b->shape, (size_t)a->ndim * 8) == 0;
}

bool fcp_epilogue_product(const fc_array *m) {
    if (m->op != FCG_OP_MATMUL || m->dtype != FC_F32 || m->ndim != 2 || m->nin != 2) return false;
    const fc_array *x = m->in[0], *y = m->in[1];
    return x->ndim == 2 && y->ndim == 2 && x->dtype == FC_F32 && y->dtype == FC_F32 &&
           x->shape[1] > 0;
}

const fc_array *fcp_epilogue_bias(const fc_array *add, const fc_array *prod) {
    if (add->op != FCG_OP_ADD || add->nin != 2 || add->dtype != prod->dtype ||
        !same_shape(add, prod) || (add->in[0] == prod) == (add->in[1] == prod))
        return NULL;
    const fc_array *b = add->in[0] == prod ? add->in[1] : add->in[0];
    int64_t n = prod->shape[prod->ndim - 1];
    bool vector = (b->ndim == 1 && b->shape[0] == n) ||
                  (b->ndim == 2 && b->shape[0] == 1 && b->shape[1] == n);
    return vector && b->dtype == prod->dtype ? b : NULL;
}

/* A scalar zero: an integer 0 (`maximum(x, 0)`: a weak Python int) or +0.0 (maximum(x, -0.0)
 * keeps -0.0 where x is -0.0: not ReLU's result). The callers have checked that the maximum
 * keeps x's dtype, so the constant did not promote it. */
static bool positive_zero(const fc_array *c) {
    if (c->op != FCG_OP_CONST || c->ndim != 0) return false;
    fc_dtype t = (fc_dtype)c->dtype;
    if (fcg_is_int(t)) return c->p.ival == 0;
    return fcg_is_float(t) && !fcg_is_complex(t) && c->p.re == 0.0 && !signbit(c->p.re);
}

fcp_activation fcp_epilogue_activation(const fc_array *f, const fc_array *x) {
    if (f->dtype != x->dtype || !same_shape(f, x)) return FCP_ACT_NONE;
    if (f->op == FCG_OP_GELU_TANH && f->nin == 1 && f->in[0] == x) return FCP_ACT_GELU;
    if (f->op != FCG_OP_MAXIMUM || f->nin != 2) return FCP_ACT_NONE;
    return (f->in[0] == x && positive_zero(f->in[1])) || (f->in[1] == x && positive_zero(f->in[0]))
               ? FCP_ACT_RELU
               : FCP_ACT_NONE;
}

static bool is_leaf_of(const fcp_kernel *k, const fc_array *a) {
    for (int l = 0; l < k->nleaf; l++)
        if (k->leaves[l] == a) return true;
    return false;
}

bool fcp_lib_epilogue(const fcp_kernel *k, fcp_epilogue *e) {
    memset(e, 0, sizeof *e);
    if (k->kind != FCP_KERNEL_LIB || k->nout != 1) return false;
    const fc_array *x = k->outs[0];
    if (fcg_ops[x->op].kind == FCG_KIND_LIB) {
        e->lib = x;
        return false;
    }
    if ((x->op == FCG_OP_MAXIMUM && x->nin == 2) || x->op == FCG_OP_GELU_TANH) {
        /* the activation's operand that is not a loaded leaf or the constant zero */
        const fc_array *v = x->nin == 2 && (is_leaf_of(k, x->in[0]) || x->in[0]->op == FCG_OP_CONST)
                                ? x->in[1]
                                : x->in[0];
        if (!(e->act = fcp_epilogue_activation(x, v))) return false;
        x = v;
    }
    if (x->op == FCG_OP_ADD && x->nin == 2) {
        /* the product is computed inside; the bias is a buffer the kernel loads */
        const fc_array *prod = is_leaf_of(k, x->in[0]) ? x->in[1] : x->in[0];
        if (is_leaf_of(k, prod) || !(e->bias = fcp_epilogue_bias(x, prod))) return false;
        x = prod;
    }
    if (!fcp_epilogue_product(x) || is_leaf_of(k, x) || (!e->bias && !e->act)) {
        memset(e, 0, sizeof *e);
        return false;
    }
    e->lib = x;
    return true;
}

const char *fcp_epilogue_name(const fcp_epilogue *e) {
    static const char *const names[2][3] = {{"nothing", "relu", "gelu (tanh)"},
                                            {"bias", "bias and relu", "bias and gelu (tanh)"}};
    return names[e->bias != NULL][e->act];
}

fc_array *fcp_lib_source(const fc_array *lib, int j) {
    if (lib->op == FCG_OP_MATMUL) return fcg_matrix_transpose_of(lib->in[j]);
    if (lib->op == FCG_OP_STENCIL2D && j == 1) return fcg_flat_reverse_of(lib->in[j]);
    return NULL;
}
