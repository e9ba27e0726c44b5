/*
 * passes/simplify.c - constant folding and algebraic simplification.
 *
 * One walk over the graph in topological order (no recursion over the graph: it may be
 * thousands of nodes deep). Each node is rebuilt over its already simplified inputs, then the
 * rules below are applied to it until none fires. Nodes are hash-consed, so rebuilding is how
 * a node is rewritten and identical results share one node.
 *
 * Every rule is exact under NumPy semantics as the host reference backend computes them (NaN,
 * -0.0, infinities and integer wraparound included) and keeps the node's dtype, shape and weak
 * flag, wrapping its result in a CAST or BROADCAST where needed, or does not fire. Rules see
 * only the constants whose values the plan key holds (fcg_const_keyed: bools and small
 * integers); any other scalar is a kernel argument that a cached plan takes anew at each
 * evaluation, so nothing here may depend on its value:
 *   - folding: an elementwise node whose inputs are all 0-d constants (or broadcasts of them)
 *     becomes a constant, computed by the host backend on a 0-d copy of the node;
 *   - identities: x + 0 (integers, bool; floats only x + -0.0), x - 0 (+0 in every part),
 *     x * 1 and x / 1 (not complex: (a+bi)(1+0i) turns an infinite part into NaN);
 *   - powers with an integer-valued constant exponent: x ** 0 -> ones; for integers x ** 1
 *     -> x, x ** 2, 3, 4 -> products; for f16 and bf16 x ** 2 -> x * x; for f32 and f64 see
 *     pow_rule_exact (x ** 1, x ** 2, x ** -1 wait for the host backend to follow NumPy);
 *   - involutions: -(-x), conj(conj(x)), ~~x -> x; logical_not(logical_not(x)) -> x != 0;
 *   - cast chains: cast(cast(x, T1), T2) -> cast(x, T2) when x -> T1 is exact and T2 is
 *     inexact or x -> T2 is exact too; a cast to the input's own dtype disappears;
 *   - where with a constant condition -> the branch it picks;
 *   - matmul the GEMM library cannot take (lower_matmul): integer and bool matmuls become
 *     NumPy's loop as a reduction, mixed float operands are cast to the loop dtype.
 * One rule is not exact and fires only in the fast-math tier (ctx->fast_math): abs(z) <= r on
 * complex z as real(z)^2 + imag(z)^2 <= r^2 (abs_compare).
 * A node that holds a value (fcg_has_value: on the host or in the backend) is a leaf: it is
 * neither rewritten nor looked through, since recomputing what it stores would cost more than
 * reading it. Rules that drop an operand
 * (x ** 0, where) also drop any value error that operand would raise at evaluation.
 */
#include "passes.h"
#include "ref.h" /* fch_eval: constants fold on the reference evaluator */

#include <math.h>
#include <string.h>

typedef struct simp {
    fc_ctx *ctx;
    fcp_pass_stats stats;
} simp;

/* ---- constants -------------------------------------------------------------------------- */

/* The 0-d CONST behind a chain of broadcasts, or NULL when `a` is not a constant whose value
 * the plan key holds. Every rule reads constants through here: a scalar that is not keyed is
 * a kernel argument whose value may change between evaluations of one cached plan, so no
 * rewrite (folding included) may depend on it. */
static const fc_array *const_base(const fc_array *a) {
    while (a->op == FCG_OP_BROADCAST) a = a->in[0];
    return a->op == FCG_OP_CONST && a->ndim == 0 && fcg_const_keyed(a) ? a : NULL;
}

static bool is_intlike(fc_dtype t) { return t == FC_BOOL || fcg_is_int(t); }

/* Whether the constant's exact value is the small integer k (for complex: k + 0j). +0.0 counts
 * as 0, -0.0 does not: an integer 0 converts to +0.0. */
static bool const_is_int(const fc_array *c, int64_t k) {
    fc_dtype t = (fc_dtype)c->dtype;
    if (is_intlike(t)) return c->p.ival == k && !(t == FC_U64 && c->p.ival < 0);
    if (fcg_is_complex(t) && !(c->p.im == 0 && !signbit(c->p.im))) return false;
    return c->p.re == (double)k && !(k == 0 && signbit(c->p.re));
}

/* Whether the constant is -0.0 in every part (the identity of IEEE addition). */
static bool const_is_neg_zero(const fc_array *c) {
    fc_dtype t = (fc_dtype)c->dtype;
    if (!fcg_is_inexact(t) || c->p.re != 0 || !signbit(c->p.re)) return false;
    return !fcg_is_complex(t) || (c->p.im == 0 && signbit(c->p.im));
}

/* The truth value where() takes from a constant condition (NaN is true). */
static bool const_truth(const fc_array *c) {
    fc_dtype t = (fc_dtype)c->dtype;
    if (is_intlike(t)) return c->p.ival != 0;
    return c->p.re != 0 || (fcg_is_complex(t) && c->p.im != 0);
}

/* Writes the constant's value as its dtype stores it. */
static void store_const(const fc_array *c, void *dst) {
    int64_t v = c->p.ival;
    switch ((fc_dtype)c->dtype) {
    case FC_BOOL: *(uint8_t *)dst = v != 0; break;
    case FC_I8: case FC_U8: *(uint8_t *)dst = (uint8_t)v; break;
    case FC_I16: case FC_U16: { uint16_t x = (uint16_t)v; memcpy(dst, &x, 2); break; }
    case FC_I32: case FC_U32: { uint32_t x = (uint32_t)v; memcpy(dst, &x, 4); break; }
    case FC_I64: case FC_U64: memcpy(dst, &v, 8); break;
    case FC_F16: { uint16_t h = fcg_f32_to_f16((float)c->p.re); memcpy(dst, &h, 2); break; }
    case FC_BF16: { uint16_t h = fcg_f32_to_bf16((float)c->p.re); memcpy(dst, &h, 2); break; }
    case FC_F32: { float f = (float)c->p.re; memcpy(dst, &f, 4); break; }
    case FC_F64: memcpy(dst, &c->p.re, 8); break;
    case FC_C64: {
        float f[2] = {(float)c->p.re, (float)c->p.im};
        memcpy(dst, f, 8);
        break;
    }
    default: {
        double d[2] = {c->p.re, c->p.im};
        memcpy(dst, d, 16);
        break;
    }
    }
}

/* CONST parameters holding a stored value of dtype t, in creation.c's canonical form. */
static void load_const(fc_dtype t, const void *src, fcg_params *p) {
    memset(p, 0, sizeof *p);
    switch (t) {
    case FC_BOOL: p->ival = *(const uint8_t *)src != 0; break;
    case FC_I8: p->ival = *(const int8_t *)src; break;
    case FC_U8: p->ival = *(const uint8_t *)src; break;
    case FC_I16: { int16_t x; memcpy(&x, src, 2); p->ival = x; break; }
    case FC_U16: { uint16_t x; memcpy(&x, src, 2); p->ival = x; break; }
    case FC_I32: { int32_t x; memcpy(&x, src, 4); p->ival = x; break; }
    case FC_U32: { uint32_t x; memcpy(&x, src, 4); p->ival = x; break; }
    case FC_I64: case FC_U64: memcpy(&p->ival, src, 8); break;
    case FC_F16: { uint16_t h; memcpy(&h, src, 2); p->re = fcg_f16_to_f32(h); break; }
    case FC_BF16: { uint16_t h; memcpy(&h, src, 2); p->re = fcg_bf16_to_f32(h); break; }
    case FC_F32: { float f; memcpy(&f, src, 4); p->re = f; break; }
    case FC_F64: memcpy(&p->re, src, 8); break;
    case FC_C64: {
        float f[2];
        memcpy(f, src, 8);
        p->re = f[0];
        p->im = f[1];
        break;
    }
    default: {
        double d[2];
        memcpy(d, src, 16);
        p->re = d[0];
        p->im = d[1];
        break;
    }
    }
}

/* Whether every NaN in the stored value is the default quiet NaN (either sign). A CONST holds
 * its value as a double, and the backends' conversions drop or quiet other payloads, so a
 * folded NaN with another payload would not evaluate to the same bits: it is left unfolded. */
static bool nan_canonical(fc_dtype t, const void *v) {
    size_t parts = fcg_is_complex(t) ? 2 : 1;
    for (size_t i = 0; i < parts; i++) {
        switch (t) {
        case FC_F16: case FC_BF16: {
            uint16_t h;
            memcpy(&h, v, 2);
            uint16_t m = h & 0x7fffu, qnan = t == FC_F16 ? 0x7e00u : 0x7fc0u;
            uint16_t inf = t == FC_F16 ? 0x7c00u : 0x7f80u;
            if (m > inf && m != qnan) return false;
            break;
        }
        case FC_F32: case FC_C64: {
            uint32_t b;
            memcpy(&b, (const char *)v + 4 * i, 4);
            b &= 0x7fffffffu;
            if (b > 0x7f800000u && b != 0x7fc00000u) return false;
            break;
        }
        case FC_F64: case FC_C128: {
            uint64_t b;
            memcpy(&b, (const char *)v + 8 * i, 8);
            b &= 0x7fffffffffffffffULL;
            if (b > 0x7ff0000000000000ULL && b != 0x7ff8000000000000ULL) return false;
            break;
        }
        default: return true;
        }
    }
    return true;
}

/* ---- building nodes --------------------------------------------------------------------- */

static fc_status settle(simp *s, fc_array *a, fc_array **out);

static fc_status nomem(simp *s) {
    return fcg_error(s->ctx, FC_ERR_NOMEM, "simplify: out of memory");
}

/* The elementwise node `op` over `in` with the dtypes its public constructor would give, then
 * simplified. *out is NULL (and FC_OK returned) when the constructor would refuse it. */
static fc_status make_ew(simp *s, fcg_op op, int nin, fc_array *const *in, fc_dtype cast_to,
                         fc_array **out) {
    *out = NULL;
    int ndim;
    int64_t shape[FC_MAX_DIMS];
    fc_dtype dtype, loop;
    bool weak;
    if (fcg_broadcast_shapes(s->ctx, fcg_ops[op].pyname, nin, in, &ndim, shape) != FC_OK ||
        fcg_ew_types(s->ctx, op, nin, in, cast_to, &dtype, &loop, &weak) != FC_OK)
        return FC_OK; /* the caller's message is restored when the pass ends */
    if (op == FCG_OP_CAST && dtype == in[0]->dtype && !in[0]->weak) {
        fcg_retain(in[0]);
        *out = in[0];
        return FC_OK;
    }
    /* A Python int the constructor would convert, settle or drop first (graph/dtype.c) is
     * left to the constructor: a rewrite never builds that node itself. */
    fcg_weak_fix fix;
    fcg_weak_ints(op, nin, in, loop, &fix);
    bool plain = fix.settled < 0;
    for (int i = 0; i < nin; i++) plain &= fix.use[i] == FCG_PYINT_KEEP;
    if (!plain) return FC_OK;
    fc_array *a = fcg_node(s->ctx, op, dtype, loop, weak, ndim, shape, nin, in, NULL);
    if (!a) return FC_ERR_NOMEM;
    return settle(s, a, out);
}

static fc_status make_cast(simp *s, fc_array *x, fc_dtype to, fc_array **out) {
    return make_ew(s, FCG_OP_CAST, 1, &x, to, out);
}

/* x converted to dtype t as an elementwise loop over t sees it. */
static fc_status convert(simp *s, fc_array *x, fc_dtype t, fc_array **out) {
    if (x->dtype == t) {
        fcg_retain(x);
        *out = x;
        return FC_OK;
    }
    return make_cast(s, x, t, out);
}

/* Turns r (owned), whose value is node a's converted to a's dtype and broadcast to a's shape,
 * into a replacement for a: same dtype, weak flag and shape. *out is NULL when that cannot be
 * done (a weak node is never the result of a cast). */
static fc_status coerce(simp *s, fc_array *r, const fc_array *a, fc_array **out) {
    *out = NULL;
    if (r->dtype != a->dtype || r->weak != a->weak) {
        if (a->weak) {
            fcg_release(r);
            return FC_OK;
        }
        fc_array *c;
        fc_status st = make_cast(s, r, (fc_dtype)a->dtype, &c);
        fcg_release(r);
        if (st != FC_OK || !c) return st;
        r = c;
        if (r->dtype != a->dtype || r->weak) {
            fcg_release(r);
            return FC_OK;
        }
    }
    if (r->ndim != a->ndim || memcmp(r->shape, a->shape, (size_t)a->ndim * sizeof *a->shape)) {
        if (a->weak) {
            fcg_release(r);
            return FC_OK;
        }
        fc_array *b = fcg_node(s->ctx, FCG_OP_BROADCAST, (fc_dtype)r->dtype, (fc_dtype)r->dtype,
                               false, a->ndim, a->shape, 1, &r, NULL);
        fcg_release(r);
        if (!b) return FC_ERR_NOMEM;
        r = b;
    }
    *out = r;
    return FC_OK;
}

/* A constant of a's dtype, weak flag and shape, with parameters p. */
static fc_status make_const(simp *s, const fc_array *a, const fcg_params *p, fc_array **out) {
    *out = NULL;
    fc_array *c = fcg_node(s->ctx, FCG_OP_CONST, (fc_dtype)a->dtype, (fc_dtype)a->dtype,
                           a->weak, 0, NULL, 0, NULL, p);
    if (!c) return FC_ERR_NOMEM;
    if (a->ndim == 0) {
        *out = c;
        return FC_OK;
    }
    fc_array *b = fcg_node(s->ctx, FCG_OP_BROADCAST, (fc_dtype)a->dtype, (fc_dtype)a->dtype, false,
                           a->ndim, a->shape, 1, &c, NULL);
    fcg_release(c);
    if (!b) return FC_ERR_NOMEM;
    *out = b;
    return FC_OK;
}

/* ---- constant folding ------------------------------------------------------------------- */

/* Evaluates a 0-d copy of elementwise node a on the host backend. Its inputs are fresh data
 * leaves holding the constants, so the evaluation's own graph walk touches no node of the
 * graph being simplified (whose `order` fields index the pass's memo). */
static fc_status fold(simp *s, const fc_array *a, fc_array **out) {
    *out = NULL;
    const fc_array *base[3];
    if (a->nin > 3) return FC_OK;
    for (int j = 0; j < a->nin; j++)
        if (!(base[j] = const_base(a->in[j]))) return FC_OK;
    fc_ctx *ctx = s->ctx;
    fc_array *leaf[3] = {NULL, NULL, NULL}, *tmp = NULL;
    fc_status st = FC_ERR_NOMEM;
    for (int j = 0; j < a->nin; j++) {
        fc_dtype t = (fc_dtype)base[j]->dtype;
        leaf[j] = fcg_node(ctx, FCG_OP_DATA, t, t, base[j]->weak, 0, NULL, 0, NULL, NULL);
        if (!leaf[j]) goto done;
        size_t bytes = fc_dtype_size(t);
        if (!(leaf[j]->host = fcg_malloc(ctx, bytes))) goto done;
        leaf[j]->host_bytes = bytes;
        store_const(base[j], leaf[j]->host);
    }
    tmp = fcg_node(ctx, (fcg_op)a->op, (fc_dtype)a->dtype, (fc_dtype)a->loop_dtype, a->weak, 0,
                   NULL, a->nin, leaf, &a->p);
    if (!tmp) goto done;
    st = fch_eval(ctx, &tmp, 1);
    if (st != FC_OK) {
        /* A value error (an integer to a negative power) stays for evaluation to report. */
        if (st != FC_ERR_NOMEM) st = FC_OK;
        goto done;
    }
    if (!nan_canonical((fc_dtype)a->dtype, tmp->host)) goto done;
    fcg_params p;
    load_const((fc_dtype)a->dtype, tmp->host, &p);
    st = make_const(s, a, &p, out);
    if (st == FC_OK) s->stats.folded++;
done:
    if (tmp) fcg_release(tmp);
    for (int j = 0; j < a->nin; j++)
        if (leaf[j]) fcg_release(leaf[j]);
    return st;
}

/* ---- algebraic rules -------------------------------------------------------------------- */

/* NumPy computes a float power with a scalar f32 or f64 exponent of 1, 2 or -1 as x, x * x and
 * 1 / x (its fast path), which makes those rules exact under NumPy; the host backend follows
 * that fast path too (ref/host.c, eval_ew). */
static const bool host_pow_follows_numpy = true;

/* Whether x ** k may be computed as a product (or x, 1, or a reciprocal) in this loop dtype. */
static bool pow_rule_exact(fc_dtype loop, int k) {
    if (is_intlike(loop)) return k >= 0 && k <= 4; /* products wrap as the power does */
    if (k == 0) return true;                       /* pow(x, 0) is 1, NaN included */
    /* f16 and bf16 compute in f32, where x * x is exact: pow rounds the same value once. For
     * 1 and -1, pow changes NaNs in NumPy too. */
    if (loop == FC_F16 || loop == FC_BF16) return k == 2;
    /* pow rounds once and a product of three or four twice: never exact for floats */
    return host_pow_follows_numpy && fcg_is_float(loop) && (k == 1 || k == 2 || k == -1);
}

/* x (+ - * / **) constant, and constant (+ *) x. */
static fc_status arith(simp *s, const fc_array *a, fc_array **out) {
    *out = NULL;
    fc_dtype loop = (fc_dtype)a->loop_dtype;
    if (loop != a->dtype) return FC_OK;
    bool cx = fcg_is_complex(loop), fl = fcg_is_float(loop), in = is_intlike(loop);
    fcg_op op = (fcg_op)a->op;
    for (int side = 1; side >= 0; side--) {
        if (side == 0 && op != FCG_OP_ADD && op != FCG_OP_MUL) break;
        const fc_array *c = const_base(a->in[side]);
        if (!c) continue;
        fc_array *x = a->in[1 - side];
        int power = 1; /* the result is x ** power */
        switch (op) {
        case FCG_OP_ADD:
            /* a real -0.0 becomes -0.0 + 0j in a complex loop: not the identity there */
            if (in ? !is_intlike((fc_dtype)c->dtype) || c->p.ival != 0
                   : !const_is_neg_zero(c) || (cx && !fcg_is_complex((fc_dtype)c->dtype)))
                continue;
            break;
        case FCG_OP_SUB:
            if (!const_is_int(c, 0)) continue;
            break;
        case FCG_OP_MUL:
            if (cx || !const_is_int(c, 1)) continue;
            break;
        case FCG_OP_DIV:
            if (!fl || !const_is_int(c, 1)) continue;
            break;
        case FCG_OP_POW: {
            if (cx) continue;
            int k = -2;
            bool float_zero = fcg_is_float((fc_dtype)c->dtype) && c->p.re == 0;
            for (int e = -1; e <= 4; e++)
                if (const_is_int(c, e) || (e == 0 && float_zero)) k = e; /* pow(x, -0.0) is 1 */
            if (k == -2 || !pow_rule_exact(loop, k)) continue;
            if (k == 0) {
                fcg_params p;
                memset(&p, 0, sizeof p);
                if (in) p.ival = 1;
                else p.re = 1;
                fc_status st = make_const(s, a, &p, out);
                if (st == FC_OK) s->stats.rewrites++;
                return st;
            }
            power = k;
            break;
        }
        default: return FC_OK;
        }
        fc_array *r, *y;
        fc_status st = convert(s, x, loop, &r);
        if (st != FC_OK || !r) return st;
        if (power == -1) {
            st = make_ew(s, FCG_OP_RECIPROCAL, 1, &r, 0, &y);
            fcg_release(r);
            if (st != FC_OK || !y) return st;
            r = y;
        } else if (power >= 2) {
            fc_array *sq;
            st = make_ew(s, FCG_OP_MUL, 2, (fc_array *[]){r, r}, 0, &sq);
            if (st != FC_OK || !sq) {
                fcg_release(r);
                return st;
            }
            y = sq;
            if (power == 3) st = make_ew(s, FCG_OP_MUL, 2, (fc_array *[]){sq, r}, 0, &y);
            if (power == 4) st = make_ew(s, FCG_OP_MUL, 2, (fc_array *[]){sq, sq}, 0, &y);
            if (power != 2) fcg_release(sq);
            fcg_release(r);
            if (st != FC_OK || !y) return st;
            r = y;
        }
        st = coerce(s, r, a, out);
        if (st == FC_OK && *out) s->stats.rewrites++;
        return st;
    }
    return FC_OK;
}

/* Whether casting from -> to keeps every value: NumPy's safe casts, less the 64-bit integers
 * to floats (safe for NumPy, but they round). */
static bool cast_exact(fc_dtype from, fc_dtype to) {
    if (!fcg_can_cast_safe(from, to)) return false;
    return !((from == FC_I64 || from == FC_U64) && fcg_is_inexact(to));
}

/* Rules over the node's first input. */
static fc_status unary(simp *s, const fc_array *a, fc_array **out) {
    *out = NULL;
    fc_array *y = a->in[0], *r = NULL;
    fc_status st = FC_OK;
    switch ((fcg_op)a->op) {
    case FCG_OP_NEGATIVE: case FCG_OP_CONJ: case FCG_OP_BITWISE_NOT:
        /* involutions: the inner node computes in x's dtype (conj of bool: i8, which the
         * coercion below casts to) */
        if (y->op != a->op || fcg_has_value(y)) return FC_OK;
        r = y->in[0];
        fcg_retain(r);
        break;
    case FCG_OP_LOGICAL_NOT:
        if (y->op != FCG_OP_LOGICAL_NOT || fcg_has_value(y)) return FC_OK;
        st = make_cast(s, y->in[0], FC_BOOL, &r); /* x != 0, NaN true, as a cast to bool */
        break;
    case FCG_OP_CAST:
        if (y->dtype == a->dtype && !y->weak) {
            r = y;
            fcg_retain(r);
        } else if (y->op == FCG_OP_CAST && !fcg_has_value(y)) {
            fc_array *x = y->in[0];
            fc_dtype from = (fc_dtype)x->dtype, mid = (fc_dtype)y->dtype, to = (fc_dtype)a->dtype;
            if (cast_exact(from, mid) && (fcg_is_inexact(to) || cast_exact(from, to)))
                st = make_cast(s, x, to, &r);
        }
        break;
    case FCG_OP_WHERE: {
        const fc_array *c = const_base(y);
        if (!c) return FC_OK;
        r = a->in[const_truth(c) ? 1 : 2];
        fcg_retain(r);
        break;
    }
    default: break;
    }
    if (st != FC_OK || !r) return st;
    st = coerce(s, r, a, out);
    if (st == FC_OK && *out) s->stats.rewrites++;
    return st;
}

/* ---- the fast-math tier ------------------------------------------------------------------ */

/* Only in the fast-math tier (ctx->fast_math; inexact, so no exact rule may do it): abs(z) <= r
 * and abs(z) < r (and r >= abs(z), r > abs(z)) with z complex and the comparison in f32 or f64
 * compare real(z)^2 + imag(z)^2 with r^2 in that dtype, leaving out abs's hypot. abs(z) >= 0,
 * so for r < 0 or NaN the answer is false while the squares may say true: a guard r >= 0 is
 * and-ed in, unless r is a keyed constant that is >= 0 (a keyed constant below 0 leaves the
 * node alone). NaN parts give false both ways; the squares differ from hypot only within a few
 * ulp of |z| == r and where they overflow or underflow (include/fusec.h). */
static fc_status abs_compare(simp *s, const fc_array *a, fc_array **out) {
    *out = NULL;
    fcg_op op = (fcg_op)a->op;
    int side = op == FCG_OP_LESS || op == FCG_OP_LESS_EQUAL ? 0 : 1; /* where abs(z) is */
    fc_array *abs = a->in[side], *r = a->in[1 - side];
    fc_dtype loop = (fc_dtype)a->loop_dtype;
    if (abs->op != FCG_OP_ABS || fcg_has_value(abs) || !fcg_is_complex((fc_dtype)abs->in[0]->dtype)
        || (loop != FC_F32 && loop != FC_F64) || fcg_is_complex((fc_dtype)r->dtype))
        return FC_OK;
    const fc_array *c = const_base(r);
    bool guard = true;
    if (c) {
        double v = is_intlike((fc_dtype)c->dtype) ? (double)c->p.ival : c->p.re;
        if (!(v >= 0)) return FC_OK;
        guard = false;
    }
    fc_array *z = abs->in[0], *part[2] = {NULL, NULL}, *sq[2] = {NULL, NULL};
    fc_array *rl = NULL, *r2 = NULL, *sum = NULL, *cmp = NULL, *zero = NULL, *pos = NULL;
    fc_array *res = NULL;
    fc_status st = FC_OK;
    for (int i = 0; i < 2 && st == FC_OK; i++) {
        fc_array *p;
        st = make_ew(s, i ? FCG_OP_IMAG : FCG_OP_REAL, 1, &z, 0, &p);
        if (st != FC_OK || !p) break;
        st = convert(s, p, loop, &part[i]);
        fcg_release(p);
        if (st == FC_OK && part[i])
            st = make_ew(s, FCG_OP_MUL, 2, (fc_array *[]){part[i], part[i]}, 0, &sq[i]);
    }
    if (st == FC_OK && sq[0] && sq[1]) st = make_ew(s, FCG_OP_ADD, 2, sq, 0, &sum);
    if (st == FC_OK && sum) st = convert(s, r, loop, &rl);
    if (st == FC_OK && rl) st = make_ew(s, FCG_OP_MUL, 2, (fc_array *[]){rl, rl}, 0, &r2);
    fc_array *cin[2] = {sum, r2};
    if (side) cin[0] = r2, cin[1] = sum;
    if (st == FC_OK && r2) st = make_ew(s, op, 2, cin, 0, &cmp);
    if (st == FC_OK && cmp && guard) {
        fcg_params p;
        memset(&p, 0, sizeof p);
        if (!(zero = fcg_node(s->ctx, FCG_OP_CONST, loop, loop, false, 0, NULL, 0, NULL, &p)))
            st = FC_ERR_NOMEM;
        if (st == FC_OK)
            st = make_ew(s, FCG_OP_GREATER_EQUAL, 2, (fc_array *[]){rl, zero}, 0, &pos);
        if (st == FC_OK && pos)
            st = make_ew(s, FCG_OP_LOGICAL_AND, 2, (fc_array *[]){cmp, pos}, 0, &res);
    } else if (st == FC_OK && cmp) {
        res = cmp;
        fcg_retain(res);
    }
    if (st == FC_OK && res) {
        st = coerce(s, res, a, out);
        res = NULL;
        if (st == FC_OK && *out) s->stats.rewrites++;
    }
    fc_array *tmp[] = {part[0], part[1], sq[0], sq[1], rl, r2, sum, cmp, zero, pos, res};
    for (size_t i = 0; i < sizeof tmp / sizeof *tmp; i++)
        if (tmp[i]) fcg_release(tmp[i]);
    return st;
}

/* One rule applied to node a, if any fires: *out is its replacement (owned), else NULL. */
static fc_status rewrite_once(simp *s, fc_array *a, fc_array **out) {
    *out = NULL;
    if (fcg_ops[a->op].kind != FCG_KIND_EW || fcg_has_value(a) || a->nin == 0) return FC_OK;
    fc_status st = fold(s, a, out);
    if (st != FC_OK || *out) return st;
    switch ((fcg_op)a->op) {
    case FCG_OP_ADD: case FCG_OP_SUB: case FCG_OP_MUL: case FCG_OP_DIV: case FCG_OP_POW:
        return arith(s, a, out);
    case FCG_OP_LESS: case FCG_OP_LESS_EQUAL: case FCG_OP_GREATER: case FCG_OP_GREATER_EQUAL:
        return s->ctx->fast_math ? abs_compare(s, a, out) : FC_OK;
    default: return unary(s, a, out);
    }
}

/* Applies rules to a (owned) until none fires; *out (owned) is the result. Each rule leaves a
 * strictly smaller pattern, so the bound only guards against a rule bug. */
static fc_status settle(simp *s, fc_array *a, fc_array **out) {
    *out = NULL;
    for (int round = 0; round < 16; round++) {
        fc_array *r;
        fc_status st = rewrite_once(s, a, &r);
        if (st != FC_OK) {
            fcg_release(a);
            return st;
        }
        if (!r) break;
        fcg_release(a);
        a = r;
    }
    *out = a;
    return FC_OK;
}

/* ---- matmul the library cannot take ------------------------------------------------------ */

/* A matmul whose operands are not both of its loop dtype becomes one of casts (the GEMM
 * library takes one dtype); an integer or bool matmul, which no GEMM library computes with
 * NumPy's wraparound, becomes the reduction NumPy's loop is: sum over k of x[.., m, k] *
 * y[.., k, n] cast to the result's dtype (the products wrap in the loop dtype and the sum
 * wraps in int64 or uint64, which agree modulo the result's width), any(x & y) for bool. A
 * plan runs that as one reduce kernel; the host reference computes matmul itself. *out is the
 * replacement (owned), or NULL. */
static fc_status lower_matmul(simp *s, fc_array *a, fc_array **out) {
    *out = NULL;
    fc_array *x = a->in[0], *y = a->in[1];
    fc_dtype loop = (fc_dtype)a->loop_dtype;
    bool reduce = is_intlike(loop);
    if (!reduce && x->dtype == loop && y->dtype == loop) return FC_OK;
    fc_ctx *ctx = s->ctx;
    fc_scope *saved = ctx->scope, *scope; /* the caller's scope must not take these nodes */
    ctx->scope = NULL;
    if (!(scope = fc_scope_open(ctx))) {
        ctx->scope = saved;
        return FC_ERR_NOMEM;
    }
    fc_array *xc = fc_cast(x, loop), *yc = fc_cast(y, loop), *r;
    if (!reduce) {
        r = fc_matmul(xc, yc);
    } else {
        int64_t k = x->shape[x->ndim - 1];
        /* [.., m, k, 1] against [.., 1, k, n] (a vector is a row on the left, a column on the
         * right), reduced over k; the result takes the matmul's shape */
        fc_array *xm = fc_expand_dims(x->ndim == 1 ? fc_reshape(xc, FC_SHAPE(1, k)) : xc, -1);
        fc_array *ym = fc_expand_dims(y->ndim == 1 ? fc_reshape(yc, FC_SHAPE(k, 1)) : yc, -3);
        fc_array *red = loop == FC_BOOL ? fc_any(fc_logical_and(xm, ym), FC_AXES(-2), false)
                                        : fc_sum(fc_mul(xm, ym), FC_AXES(-2), false);
        fc_shape shape = {a->ndim, {0}};
        memcpy(shape.dim, a->shape, sizeof(int64_t) * (size_t)a->ndim);
        r = fc_reshape(fc_cast(red, (fc_dtype)a->dtype), shape);
    }
    fc_status st = fc_array_status(r);
    if (st == FC_OK) {
        *out = r;
        fcg_retain(r);
        s->stats.rewrites++;
    }
    fc_scope_close(scope);
    ctx->scope = saved;
    return st;
}

/* ---- the pass --------------------------------------------------------------------------- */

/* The simplified node of `a`, whose inputs are simplified in memo (indexed by their positions
 * in the walk, in_pos: taken as the walk was made, since rules build nodes and may walk the
 * graph). */
static fc_status simplify_node(simp *s, fc_array *a, fc_array *const *memo,
                               const int32_t *in_pos, fc_array **out) {
    *out = NULL;
    if (fcg_has_value(a) || a->nin == 0) {
        fcg_retain(a);
        *out = a;
        return FC_OK;
    }
    fc_array *small[8], **in = small;
    size_t bytes = (size_t)a->nin * sizeof *in;
    if (a->nin > 8 && !(in = fcg_malloc(s->ctx, bytes))) return FC_ERR_NOMEM;
    bool changed = false;
    for (int j = 0; j < a->nin; j++) {
        in[j] = memo[in_pos[j]];
        changed |= in[j] != a->in[j];
    }
    fc_array *r = a;
    if (changed)
        r = fcg_node(s->ctx, (fcg_op)a->op, (fc_dtype)a->dtype, (fc_dtype)a->loop_dtype, a->weak,
                     a->ndim, a->shape, a->nin, in, &a->p);
    else
        fcg_retain(a);
    if (in != small) fcg_free(s->ctx, in, bytes);
    if (!r) return FC_ERR_NOMEM;
    if (r->op == FCG_OP_MATMUL) {
        fc_array *lowered;
        fc_status st = lower_matmul(s, r, &lowered);
        if (st != FC_OK || lowered) fcg_release(r);
        if (st != FC_OK) return st;
        if (lowered) r = lowered;
    }
    return settle(s, r, out);
}

fc_status fcp_simplify(fc_ctx *ctx, fc_array **arrays, int n, fcp_pass_stats *stats) {
    if (stats) memset(stats, 0, sizeof *stats);
    if (!ctx) return FC_ERR_NULL;
    if (n <= 0) return FC_OK;
    if (!arrays) return fcg_error(ctx, FC_ERR_NULL, "simplify: arrays is NULL");
    for (int i = 0; i < n; i++) {
        if (!arrays[i]) return fcg_error(ctx, FC_ERR_NULL, "simplify: array %d is NULL", i);
        if (arrays[i]->ctx != ctx)
            return fcg_error(ctx, FC_ERR_CONTEXT, "simplify: array %d belongs to another context",
                             i);
    }
    /* Rules that do not apply may leave messages behind; a pass that succeeds leaves the
     * context's message as it found it. */
    char saved[FCG_ERRMSG_MAX];
    memcpy(saved, ctx->errmsg, sizeof saved);

    simp s = {ctx, {0, 0}};
    fc_array **order, **memo = NULL;
    fcg_topo_edges edges;
    size_t count, done = 0;
    fc_status st = fcg_topo_order_edges(ctx, arrays, n, true, &order, &count, &edges);
    if (st != FC_OK) return st;
    if (!(memo = fcg_calloc(ctx, count * sizeof *memo))) {
        st = nomem(&s);
        goto out;
    }
    for (; done < count; done++) {
        st = simplify_node(&s, order[done], memo, edges.pos + edges.first[done], &memo[done]);
        if (st != FC_OK) {
            if (st == FC_ERR_NOMEM) nomem(&s);
            goto out;
        }
    }
    for (int i = 0; i < n; i++) {
        fc_array *r = memo[edges.roots[i]];
        fcg_retain(r);
        fcg_release(arrays[i]);
        arrays[i] = r;
    }
    memcpy(ctx->errmsg, saved, sizeof saved);
    if (stats) *stats = s.stats;
out:
    for (size_t i = 0; i < done; i++) fcg_release(memo[i]);
    if (memo) fcg_free(ctx, memo, count * sizeof *memo);
    fcg_topo_edges_free(ctx, &edges);
    fcg_free(ctx, order, count * sizeof *order);
    return st;
}
