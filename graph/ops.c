/*
 * graph/ops.c - the op table and every elementwise constructor, expanded from ops.def.
 */
#include "graph.h"

#include <stdio.h>
#include <string.h>

/* ops.def's red column */
#define RED(id, map, comb, fin, acc, res)                                                        \
    {FCG_ID_##id, FCG_MAP_##map, FCG_COMBINE_##comb, FCG_FINISH_##fin, FCG_ACC_##acc,          \
     FCG_RESULT_##res, false}
#define RED_BY_ORD(id, map, comb, fin, acc, res)                                                 \
    {FCG_ID_##id, FCG_MAP_##map, FCG_COMBINE_##comb, FCG_FINISH_##fin, FCG_ACC_##acc,          \
     FCG_RESULT_##res, true}
#define NORED {FCG_ID_UNSET, FCG_MAP_UNSET, FCG_COMBINE_UNSET, FCG_FINISH_UNSET, FCG_ACC_UNSET, \
               FCG_RESULT_UNSET, false}

const fcg_op_info fcg_ops[FCG_OP_COUNT] = {
#define FCG_OP(E, c, py, nin, kind, rule, infix, params, red) \
    [FCG_OP_##E] = {#c, py, nin, FCG_KIND_##kind, FCG_RULE_##rule, infix, params, red},
#include "ops.def"
#undef FCG_OP
};

const fcg_reduction fcg_norm_reductions[FC_NORM_INF + 1] = {
#define FCG_OP(...)
#define FCG_NORM_ORD(ord, red) [FC_NORM_##ord] = red,
#include "ops.def"
#undef FCG_NORM_ORD
#undef FCG_OP
};

#undef RED
#undef RED_BY_ORD
#undef NORED

fc_status fcg_broadcast_shapes(fc_ctx *ctx, const char *opname, int n, fc_array *const *in,
                               int *ndim, int64_t *shape) {
    int nd = 0;
    for (int i = 0; i < n; i++)
        if (in[i]->ndim > nd) nd = in[i]->ndim;
    for (int d = 0; d < nd; d++) {
        int64_t ext = 1;
        for (int i = 0; i < n; i++) {
            int k = d - (nd - in[i]->ndim);
            if (k < 0) continue;
            int64_t e = in[i]->shape[k];
            if (e == ext || e == 1) continue;
            if (ext != 1) goto mismatch;
            ext = e;
        }
        shape[d] = ext;
    }
    *ndim = nd;
    return FC_OK;
mismatch: {
    char msg[FCG_ERRMSG_MAX], sh[200];
    size_t len = (size_t)snprintf(msg, sizeof msg,
                                  "%s: operands could not be broadcast together with shapes",
                                  opname);
    for (int i = 0; i < n && len < sizeof msg; i++)
        len += (size_t)snprintf(msg + len, sizeof msg - len, "%s %s (%s)", i ? "," : "",
                                fcg_shape_str(sh, in[i]->ndim, in[i]->shape),
                                fc_dtype_name((fc_dtype)in[i]->dtype));
    return fcg_error(ctx, FC_ERR_SHAPE, "%s", msg);
}
}

/* Appends " for shapes [..] (dt), ..." to the context's message. */
static void append_operands(fc_ctx *ctx, int n, fc_array *const *in) {
    size_t len = strlen(ctx->errmsg);
    char sh[200];
    len += (size_t)snprintf(ctx->errmsg + len, sizeof ctx->errmsg - len, " with shapes");
    for (int i = 0; i < n && len < sizeof ctx->errmsg; i++)
        len += (size_t)snprintf(ctx->errmsg + len, sizeof ctx->errmsg - len, "%s %s", i ? "," : "",
                                fcg_shape_str(sh, in[i]->ndim, in[i]->shape));
}

/* The weak constant that stands for weak int operand a per `use` (a new reference the caller
 * releases), or a itself retained; NULL when memory runs out. */
static fc_array *weak_int_operand(fc_ctx *ctx, fc_array *a, fcg_pyint_use use, fc_dtype loop) {
    fcg_pyint v = 0;
    fcg_params p;
    switch (use) {
    case FCG_PYINT_KEEP: fcg_retain(a); return a;
    case FCG_PYINT_AS_FLOAT:
        fcg_pyint_of(a, &v);
        memset(&p, 0, sizeof p);
        p.re = (double)v; /* correctly rounded, as Python's float(int) */
        return fcg_node(ctx, FCG_OP_CONST, FC_F64, FC_F64, true, 0, NULL, 0, NULL, &p);
    case FCG_PYINT_NO_MIN: return fcg_pyint_node(ctx, fcg_pyint_min(loop));
    case FCG_PYINT_NO_MAX: return fcg_pyint_node(ctx, fcg_pyint_max(loop));
    }
    return NULL;
}

static fc_array *elementwise(fcg_op op, int nin, fc_array *const *in, fc_dtype cast_to) {
    const char *name = fcg_ops[op].pyname;
    fc_array *early;
    fc_ctx *ctx = fcg_begin_ew(name, nin, in, &early);
    if (!ctx || early) return early;
    /* An operator on Python numbers alone is Python's arithmetic, done before NumPy sees it. */
    fc_array *folded;
    fc_status st = fcg_python_fold(ctx, op, nin, in, &folded);
    if (st != FC_OK) return fcg_poison_ctx(ctx, st);
    if (folded) return folded;
    int ndim;
    int64_t shape[FC_MAX_DIMS];
    st = fcg_broadcast_shapes(ctx, name, nin, in, &ndim, shape);
    if (st != FC_OK) return fcg_poison_ctx(ctx, st);
    fc_dtype out, loop;
    bool weak;
    st = fcg_ew_types(ctx, op, nin, in, cast_to, &out, &loop, &weak);
    if (st != FC_OK) {
        append_operands(ctx, nin, in);
        return fcg_poison_ctx(ctx, st);
    }
    if (op == FCG_OP_CAST && out == in[0]->dtype && !in[0]->weak) {
        fcg_retain(in[0]); /* a cast to its own dtype is the array itself */
        return fcg_ret(ctx, in[0]);
    }
    fcg_weak_fix fix;
    fcg_weak_ints(op, nin, in, loop, &fix);
    if (fix.settled >= 0) {
        fc_shape s = {.ndim = ndim};
        memcpy(s.dim, shape, sizeof(int64_t) * (size_t)ndim);
        return fc_full(ctx, FC_BOOL, s, fix.settled);
    }
    fc_array *use[3];
    int made = 0;
    for (; made < nin; made++)
        if (!(use[made] = weak_int_operand(ctx, in[made], fix.use[made], loop))) break;
    /* fcg_make checks the result's size and hands it to the scope; it holds its own
     * references to the operands. NULL (out of memory) becomes the OOM poison. */
    fc_array *r = made == nin ? fcg_make(ctx, op, out, loop, weak, ndim, shape, nin, use, NULL)
                              : fcg_ret(ctx, NULL);
    for (int i = 0; i < made; i++) fcg_release(use[i]);
    return r;
}

/* The public constructors: fc_<cname> for every elementwise op of ops.def. */
#define DEF_EW1(E, c)                                                                            \
    fc_array *fc_##c(fc_array *a) { return elementwise(FCG_OP_##E, 1, (fc_array *[]){a}, 0); }
#define DEF_EW2(E, c)                                                                            \
    fc_array *fc_##c(fc_array *a, fc_array *b) {                                                 \
        return elementwise(FCG_OP_##E, 2, (fc_array *[]){a, b}, 0);                              \
    }
#define DEF_EW3(E, c)                                                                            \
    fc_array *fc_##c(fc_array *a, fc_array *b, fc_array *d) {                                    \
        return elementwise(FCG_OP_##E, 3, (fc_array *[]){a, b, d}, 0);                           \
    }
#define DEF_EW(E, c, nin) DEF_EW_N(nin)(E, c)
#define DEF_EW_N(nin) DEF_EW##nin
#define DEF_EWX(E, c, nin)
#define DEF_SOURCE(E, c, nin)
#define DEF_SPECIAL(E, c, nin)
#define DEF_REDUCE(E, c, nin)
#define DEF_VIEW(E, c, nin)
#define DEF_LIB(E, c, nin)
#define DEF_USER(E, c, nin)
#define DEF_SCAN(E, c, nin)
#define DEF_GATHER(E, c, nin)
#define DEF_SCATTER(E, c, nin)
#define FCG_OP(E, c, py, nin, kind, rule, infix, params, red) DEF_##kind(E, c, nin)
#include "ops.def"
#undef FCG_OP

fc_array *fc_cast(fc_array *a, fc_dtype dtype) {
    return elementwise(FCG_OP_CAST, 1, (fc_array *[]){a}, dtype);
}

/* Lookup tables for the .fc parser: each elementwise op's public constructor by arity. */
#define ENTRY(E, c) [FCG_OP_##E] = fc_##c,
#define SKIP(E, c)
#define NO_ENTRY(E, c, nin)
#define T_EWX NO_ENTRY
#define T_SOURCE NO_ENTRY
#define T_SPECIAL NO_ENTRY
#define T_REDUCE NO_ENTRY
#define T_VIEW NO_ENTRY
#define T_EW(E, c, nin) T_EW_N(nin)(E, c)
#define T_EW_N(nin) T_EW##nin

#define T_EW1 ENTRY
#define T_EW2 SKIP
#define T_EW3 SKIP
#define T_LIB NO_ENTRY
#define T_USER NO_ENTRY
#define T_SCAN NO_ENTRY
#define T_GATHER NO_ENTRY
#define T_SCATTER NO_ENTRY
#define FCG_OP(E, c, py, nin, kind, rule, infix, params, red) T_##kind(E, c, nin)
const fcg_unary_fn fcg_unary_api[FCG_OP_COUNT] = {
#include "ops.def"
};
#undef T_EW1
#undef T_EW2
#undef T_LIB
#define T_EW1 SKIP
#define T_EW2 ENTRY
/* binary library calls (matmul); the FFTs take an axis too and have no entry */
#define T_LIB(E, c, nin) T_LIB_N(nin)(E, c)
#define T_LIB_N(nin) T_LIB##nin
#define T_LIB1 SKIP
#define T_LIB2 ENTRY
#define T_LIB4 SKIP /* csr_matmul: graph/sparse.c's */
const fcg_binary_fn fcg_binary_api[FCG_OP_COUNT] = {
#include "ops.def"
};
#undef T_EW2
#undef T_EW3
#undef T_LIB
#define T_EW2 SKIP
#define T_EW3 ENTRY
#define T_LIB NO_ENTRY
const fcg_ternary_fn fcg_ternary_api[FCG_OP_COUNT] = {
#include "ops.def"
};
#undef FCG_OP
