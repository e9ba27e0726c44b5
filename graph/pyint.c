/*
 * graph/pyint.c - Python scalars as NumPy 2 meets them (NEP 50).
 *
 * A Python integer has no size. NumPy sees one only where it meets an array, and converts it
 * there (raising OverflowError where it does not fit); arithmetic between Python numbers
 * happens in Python before that, with Python's rules. fusec holds a weak integer exactly in
 * 128 bits (fcg_pyint: far beyond any dtype, so a value that meets an array converts, or
 * fails, as NumPy's does; a literal or result beyond 128 bits is an error, never a wrap), and
 * folds an operator whose operands are all weak constants here, as Python computes it, so
 * `x + (100 * 3)` meets x as 300 exactly as NumPy's `x + 300` does.
 *
 * Weak integer CONST nodes are canonical (interning compares their bytes): a value in int64 is
 * dtype i64 with p.ival; one in (INT64_MAX, UINT64_MAX] is dtype u64 with its bits in p.ival
 * (NumPy's np.asarray gives such an int uint64); any other ("wide") is dtype i64 with the low
 * 64 bits in p.ival and the high 64 bits, never 0, in p.count. A wide constant never reaches
 * a backend: an elementwise op converts it to its float loop, settles or drops it (comparison,
 * clip), or refuses it, and every other consumer refuses it (fcg_begin, fc_eval).
 */
#include "graph.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define PYINT_MAX ((fcg_pyint)(((fcg_upyint)1 << 127) - 1))
#define PYINT_MIN (-PYINT_MAX - 1)

bool fcg_pyint_of(const fc_array *a, fcg_pyint *v) {
    if (!a || a->op != FCG_OP_CONST || !a->weak) return false;
    if (a->dtype == FC_U64) *v = (fcg_pyint)(uint64_t)a->p.ival;
    else if (a->dtype != FC_I64) return false;
    else if (a->p.count == 0) *v = (fcg_pyint)a->p.ival;
    else *v = (fcg_pyint)(((fcg_upyint)(uint64_t)a->p.count << 64) | (uint64_t)a->p.ival);
    return true;
}

bool fcg_pyint_is_wide(const fc_array *a) {
    return a && a->op == FCG_OP_CONST && a->weak && a->dtype == FC_I64 && a->p.count != 0;
}

fcg_pyint fcg_pyint_min(fc_dtype t) {
    switch (t) {
    case FC_I8: return INT8_MIN;
    case FC_I16: return INT16_MIN;
    case FC_I32: return INT32_MIN;
    case FC_I64: return INT64_MIN;
    case FC_BOOL: case FC_U8: case FC_U16: case FC_U32: case FC_U64: return 0;
    case FC_F16: case FC_BF16: case FC_F32: case FC_F64: case FC_C64: case FC_C128:
    case FC_DTYPE_COUNT: break;
    }
    return PYINT_MIN; /* not an integer dtype: no bound */
}

fcg_pyint fcg_pyint_max(fc_dtype t) {
    switch (t) {
    case FC_BOOL: return 1;
    case FC_I8: return INT8_MAX;
    case FC_I16: return INT16_MAX;
    case FC_I32: return INT32_MAX;
    case FC_I64: return INT64_MAX;
    case FC_U8: return UINT8_MAX;
    case FC_U16: return UINT16_MAX;
    case FC_U32: return UINT32_MAX;
    case FC_U64: return UINT64_MAX;
    case FC_F16: case FC_BF16: case FC_F32: case FC_F64: case FC_C64: case FC_C128:
    case FC_DTYPE_COUNT: break;
    }
    return PYINT_MAX;
}

bool fcg_pyint_fits(fcg_pyint v, fc_dtype t) {
    if (!fcg_is_int(t)) return true; /* floats take any of ours (f16 may round to inf) */
    return v >= fcg_pyint_min(t) && v <= fcg_pyint_max(t);
}

const char *fcg_pyint_str(fcg_pyint v, char buf[FCG_PYINT_STR]) {
    char tmp[FCG_PYINT_STR];
    size_t n = 0;
    fcg_upyint m = v < 0 ? (fcg_upyint)0 - (fcg_upyint)v : (fcg_upyint)v;
    do {
        tmp[n++] = (char)('0' + (int)(m % 10));
        m /= 10;
    } while (m);
    size_t k = 0;
    if (v < 0) buf[k++] = '-';
    while (n) buf[k++] = tmp[--n];
    buf[k] = '\0';
    return buf;
}

fc_array *fcg_pyint_node(fc_ctx *ctx, fcg_pyint v) {
    fcg_params p;
    memset(&p, 0, sizeof p);
    fc_dtype t = FC_I64;
    p.ival = (int64_t)(uint64_t)(fcg_upyint)v;
    if (v > INT64_MAX && v <= UINT64_MAX) t = FC_U64;
    else if (v < INT64_MIN || v > INT64_MAX) p.count = (int64_t)(uint64_t)((fcg_upyint)v >> 64);
    return fcg_node(ctx, FCG_OP_CONST, t, t, true, 0, NULL, 0, NULL, &p);
}

fc_array *fcg_pyint_const(fc_ctx *ctx, fcg_pyint v) { return fcg_ret(ctx, fcg_pyint_node(ctx, v)); }

fc_array *fc_u64(fc_ctx *ctx, uint64_t value) {
    return ctx ? fcg_pyint_const(ctx, (fcg_pyint)value) : NULL;
}

fc_array *fc_i128(fc_ctx *ctx, int64_t hi, uint64_t lo) {
    if (!ctx) return NULL;
    return fcg_pyint_const(ctx, (fcg_pyint)(((fcg_upyint)(uint64_t)hi << 64) | lo));
}

/* ---- Python's arithmetic on Python numbers ------------------------------------------------ */

/* A Python number: bool, int (any size we hold) or float. Complex literals are not folded. */
typedef struct pynum {
    enum { PY_BOOL, PY_INT, PY_FLOAT } kind;
    fcg_pyint i; /* PY_BOOL (0 or 1) and PY_INT */
    double f;    /* PY_FLOAT */
} pynum;

static bool as_pynum(const fc_array *a, pynum *n) {
    memset(n, 0, sizeof *n);
    if (!a->weak || a->op != FCG_OP_CONST) return false;
    if (fcg_pyint_of(a, &n->i)) {
        n->kind = PY_INT;
        return true;
    }
    switch ((fc_dtype)a->dtype) {
    case FC_BOOL: n->kind = PY_BOOL; n->i = a->p.ival != 0; return true;
    case FC_F64: n->kind = PY_FLOAT; n->f = a->p.re; return true;
    case FC_I8: case FC_I16: case FC_I32: case FC_I64: case FC_U8: case FC_U16: case FC_U32:
    case FC_U64: case FC_F16: case FC_BF16: case FC_F32: case FC_C64: case FC_C128:
    case FC_DTYPE_COUNT: break;
    }
    return false; /* weak scalars are bool, int, f64 or c128; c128 is left to the kernel */
}

static const char *py_type(const pynum *n) {
    return n->kind == PY_BOOL ? "bool" : n->kind == PY_INT ? "int" : "float";
}

static double to_double(const pynum *n) { return n->kind == PY_FLOAT ? n->f : (double)n->i; }

/* Python's int / int: correctly rounded, as CPython's long_true_divide. */
static double int_true_divide(fcg_pyint a, fcg_pyint b) {
    bool neg = (a < 0) != (b < 0);
    fcg_upyint x = a < 0 ? (fcg_upyint)0 - (fcg_upyint)a : (fcg_upyint)a;
    fcg_upyint y = b < 0 ? (fcg_upyint)0 - (fcg_upyint)b : (fcg_upyint)b;
    if (x == 0) return neg ? -0.0 : 0.0;
    if (x <= ((fcg_upyint)1 << 53) && y <= ((fcg_upyint)1 << 53)) {
        double r = (double)x / (double)y; /* both exact: one rounding */
        return neg ? -r : r;
    }
    /* Long division to 55 significant bits plus a sticky bit, then one rounding. */
    fcg_upyint q = x / y, r = x % y;
    int exp = 0;
    while (q >> 55) { /* too many bits: fold the low ones into the sticky bit */
        r |= q & 1;
        q >>= 1;
        exp++;
    }
    while (!(q >> 54)) { /* r < y <= 2^127: r << 1 cannot overflow */
        r <<= 1;
        q <<= 1;
        if (r >= y) {
            r -= y;
            q |= 1;
        }
        exp--;
    }
    uint64_t m = (uint64_t)q | (r != 0); /* 55 bits: round-to-nearest-even keeps the sticky */
    double d = ldexp((double)m, exp);
    return neg ? -d : d;
}

/* Compares int a with float f exactly, as Python does: -1, 0, 1, or 2 when f is NaN. */
static int cmp_int_float(fcg_pyint a, double f) {
    if (isnan(f)) return 2;
    if (isinf(f)) return f > 0 ? -1 : 1;
    if (fabs(f) >= 0x1p127) return f > 0 ? -1 : 1;
    double fl = floor(f);
    fcg_pyint k = (fcg_pyint)fl; /* exact: |fl| < 2^127 */
    if (a < k) return -1;
    if (a > k) return 1;
    return fl == f ? 0 : -1; /* a == floor(f) < f when f has a fraction */
}

static int cmp_nums(const pynum *a, const pynum *b) {
    if (a->kind != PY_FLOAT && b->kind != PY_FLOAT) return a->i < b->i ? -1 : a->i > b->i;
    if (a->kind == PY_FLOAT && b->kind == PY_FLOAT) {
        if (isnan(a->f) || isnan(b->f)) return 2;
        return a->f < b->f ? -1 : a->f > b->f;
    }
    if (a->kind == PY_FLOAT) {
        int c = cmp_int_float(b->i, a->f);
        return c == 2 ? 2 : -c;
    }
    return cmp_int_float(a->i, b->f);
}

typedef struct folded {
    enum { R_BOOL, R_INT, R_FLOAT, R_COMPLEX } kind;
    fcg_pyint i;
    double re, im;
} folded;

/* Python's float // and %: CPython's float_divmod (NumPy's npy_divmod is the same). */
static void float_divmod(double vx, double wx, double *floordiv, double *mod) {
    double m = fmod(vx, wx), div = (vx - m) / wx;
    if (m != 0) {
        if ((wx < 0) != (m < 0)) {
            m += wx;
            div -= 1.0;
        }
    } else {
        m = copysign(0.0, wx);
    }
    double fd;
    if (div != 0) {
        fd = floor(div);
        if (div - fd > 0.5) fd += 1.0;
    } else {
        fd = copysign(0.0, vx / wx);
    }
    *floordiv = fd;
    *mod = m;
}

/* Python's float ** float (CPython's float_pow): C99 pow, except that 0.0 to a negative power
 * raises ZeroDivisionError, a finite overflow raises OverflowError, and a negative base to a
 * non-integer power gives a complex number. */
static fc_status float_pow(fc_ctx *ctx, const char *ctxt, double x, double y, folded *r) {
    r->kind = R_FLOAT;
    if (x == 0 && y < 0)
        return fcg_error(ctx, FC_ERR_VALUE, "%s: ZeroDivisionError: zero to a negative power", ctxt);
    if (x < 0 && isfinite(x) && isfinite(y) && y != floor(y)) {
        double len = pow(-x, y), phase = atan2(0.0, x) * y; /* CPython's _Py_c_pow */
        r->kind = R_COMPLEX;
        r->re = len * cos(phase);
        r->im = len * sin(phase);
        return FC_OK;
    }
    r->re = pow(x, y);
    if (isinf(r->re) && isfinite(x) && isfinite(y) && x != 0)
        return fcg_error(ctx, FC_ERR_VALUE, "%s: OverflowError: numerical result out of range",
                         ctxt);
    return FC_OK;
}

static fc_status too_big(fc_ctx *ctx, const char *ctxt) {
    return fcg_error(ctx, FC_ERR_VALUE,
                     "%s: the Python integer result is outside the 128-bit range fusec holds "
                     "Python integers in", ctxt);
}

static fc_status int_pow(fc_ctx *ctx, const char *ctxt, fcg_pyint base, fcg_pyint e,
                         fcg_pyint *out) {
    fcg_pyint r = 1;
    while (e > 0) {
        if ((e & 1) && __builtin_mul_overflow(r, base, &r)) return too_big(ctx, ctxt);
        e >>= 1;
        if (e > 0 && __builtin_mul_overflow(base, base, &base)) {
            /* |base| >= 2: the result would overflow too, unless r is 0 (base 0 never gets
             * here), so this is the result's overflow. */
            return too_big(ctx, ctxt);
        }
    }
    *out = r;
    return FC_OK;
}

/* Python int op int (bools count as 0 and 1, as in Python). */
static fc_status int_binary(fc_ctx *ctx, const char *ctxt, fcg_op op, fcg_pyint a, fcg_pyint b,
                            folded *r) {
    r->kind = R_INT;
    switch (op) {
    case FCG_OP_ADD:
        if (__builtin_add_overflow(a, b, &r->i)) return too_big(ctx, ctxt);
        return FC_OK;
    case FCG_OP_SUB:
        if (__builtin_sub_overflow(a, b, &r->i)) return too_big(ctx, ctxt);
        return FC_OK;
    case FCG_OP_MUL:
        if (__builtin_mul_overflow(a, b, &r->i)) return too_big(ctx, ctxt);
        return FC_OK;
    case FCG_OP_DIV:
        if (b == 0)
            return fcg_error(ctx, FC_ERR_VALUE, "%s: ZeroDivisionError: division by zero", ctxt);
        r->kind = R_FLOAT;
        r->re = int_true_divide(a, b);
        return FC_OK;
    case FCG_OP_FLOORDIV:
    case FCG_OP_MOD: {
        if (b == 0)
            return fcg_error(ctx, FC_ERR_VALUE, "%s: ZeroDivisionError: integer %s by zero", ctxt,
                             op == FCG_OP_MOD ? "modulo" : "division");
        if (a == PYINT_MIN && b == -1) {
            if (op == FCG_OP_FLOORDIV) return too_big(ctx, ctxt);
            r->i = 0;
            return FC_OK;
        }
        fcg_pyint q = a / b, m = a % b;
        if (m != 0 && ((m < 0) != (b < 0))) { /* floor, not truncation */
            q -= 1;
            m += b;
        }
        r->i = op == FCG_OP_MOD ? m : q;
        return FC_OK;
    }
    case FCG_OP_POW:
        if (b < 0) { /* int ** negative int is float ** float in Python */
            if (a == 0)
                return fcg_error(ctx, FC_ERR_VALUE,
                                 "%s: ZeroDivisionError: zero to a negative power", ctxt);
            return float_pow(ctx, ctxt, (double)a, (double)b, r);
        }
        return int_pow(ctx, ctxt, a, b, &r->i);
    case FCG_OP_BITWISE_AND: r->i = a & b; return FC_OK;
    case FCG_OP_BITWISE_OR: r->i = a | b; return FC_OK;
    case FCG_OP_BITWISE_XOR: r->i = a ^ b; return FC_OK;
    case FCG_OP_LEFT_SHIFT:
    case FCG_OP_RIGHT_SHIFT:
        if (b < 0) return fcg_error(ctx, FC_ERR_VALUE, "%s: ValueError: negative shift count", ctxt);
        if (op == FCG_OP_RIGHT_SHIFT) {
            r->i = b >= 127 ? (a < 0 ? -1 : 0) : a >> (int)b; /* floor, as Python's */
            return FC_OK;
        }
        if (a == 0) {
            r->i = 0;
            return FC_OK;
        }
        if (b >= 127) return too_big(ctx, ctxt);
        r->i = (fcg_pyint)((fcg_upyint)a << (int)b);
        if (r->i >> (int)b != a) return too_big(ctx, ctxt);
        return FC_OK;
    default: break; /* fold() handles comparisons and unary ops; no other op is infix */
    }
    return fcg_error(ctx, FC_ERR_INVALID, "%s: internal: not a binary int op", ctxt);
}

static fc_status float_binary(fc_ctx *ctx, const char *ctxt, fcg_op op, double x, double y,
                              folded *r) {
    r->kind = R_FLOAT;
    double fd, m;
    switch (op) {
    case FCG_OP_ADD: r->re = x + y; return FC_OK;
    case FCG_OP_SUB: r->re = x - y; return FC_OK;
    case FCG_OP_MUL: r->re = x * y; return FC_OK;
    case FCG_OP_DIV:
        if (y == 0)
            return fcg_error(ctx, FC_ERR_VALUE, "%s: ZeroDivisionError: float division by zero",
                             ctxt);
        r->re = x / y;
        return FC_OK;
    case FCG_OP_FLOORDIV:
    case FCG_OP_MOD:
        if (y == 0)
            return fcg_error(ctx, FC_ERR_VALUE, "%s: ZeroDivisionError: float %s by zero", ctxt,
                             op == FCG_OP_MOD ? "modulo" : "floor division");
        float_divmod(x, y, &fd, &m);
        r->re = op == FCG_OP_MOD ? m : fd;
        return FC_OK;
    case FCG_OP_POW: return float_pow(ctx, ctxt, x, y, r);
    default: break; /* the bitwise ops are refused for floats before; no other op is infix */
    }
    return fcg_error(ctx, FC_ERR_INVALID, "%s: internal: not a binary float op", ctxt);
}

static bool is_compare(fcg_op op) {
    return op == FCG_OP_LESS || op == FCG_OP_LESS_EQUAL || op == FCG_OP_GREATER ||
           op == FCG_OP_GREATER_EQUAL || op == FCG_OP_EQUAL || op == FCG_OP_NOT_EQUAL;
}

bool fcg_compare_holds(fcg_op op, int c) {
    if (c == 2) return op == FCG_OP_NOT_EQUAL; /* NaN: unordered */
    if (op == FCG_OP_LESS) return c < 0;
    if (op == FCG_OP_LESS_EQUAL) return c <= 0;
    if (op == FCG_OP_GREATER) return c > 0;
    if (op == FCG_OP_GREATER_EQUAL) return c >= 0;
    if (op == FCG_OP_EQUAL) return c == 0;
    assert(op == FCG_OP_NOT_EQUAL); /* callers pass comparisons only */
    return c != 0;
}

static fc_status fold(fc_ctx *ctx, const char *ctxt, fcg_op op, int nin, const pynum *v,
                      folded *r) {
    memset(r, 0, sizeof *r);
    if (nin == 1) {
        if (op == FCG_OP_NEGATIVE && v[0].kind == PY_FLOAT) {
            r->kind = R_FLOAT;
            r->re = -v[0].f;
            return FC_OK;
        }
        if (v[0].kind == PY_FLOAT) /* ~1.5 */
            return fcg_error(ctx, FC_ERR_DTYPE, "%s: TypeError: bad operand type for unary ~: "
                             "'float'", ctxt);
        r->kind = R_INT; /* -True == -1 and ~True == -2: bools act as ints */
        if (op == FCG_OP_NEGATIVE) {
            if (v[0].i == PYINT_MIN) return too_big(ctx, ctxt);
            r->i = -v[0].i;
        } else {
            r->i = ~v[0].i;
        }
        return FC_OK;
    }
    bool any_float = v[0].kind == PY_FLOAT || v[1].kind == PY_FLOAT;
    if (is_compare(op)) {
        r->kind = R_BOOL;
        r->i = fcg_compare_holds(op, cmp_nums(&v[0], &v[1]));
        return FC_OK;
    }
    bool bitwise = op == FCG_OP_BITWISE_AND || op == FCG_OP_BITWISE_OR ||
                   op == FCG_OP_BITWISE_XOR || op == FCG_OP_LEFT_SHIFT ||
                   op == FCG_OP_RIGHT_SHIFT;
    if (bitwise && any_float)
        return fcg_error(ctx, FC_ERR_DTYPE, "%s: TypeError: unsupported operand type(s) for %s: "
                         "'%s' and '%s'", ctxt, fcg_ops[op].infix, py_type(&v[0]),
                         py_type(&v[1]));
    if (any_float) return float_binary(ctx, ctxt, op, to_double(&v[0]), to_double(&v[1]), r);
    fc_status st = int_binary(ctx, ctxt, op, v[0].i, v[1].i, r);
    /* bool & | ^ bool stays a bool in Python; every other op on bools gives an int */
    if (st == FC_OK && v[0].kind == PY_BOOL && v[1].kind == PY_BOOL &&
        (op == FCG_OP_BITWISE_AND || op == FCG_OP_BITWISE_OR || op == FCG_OP_BITWISE_XOR))
        r->kind = R_BOOL;
    return st;
}

fc_status fcg_python_fold(fc_ctx *ctx, fcg_op op, int nin, fc_array *const *in, fc_array **out) {
    *out = NULL;
    const fcg_op_info *info = &fcg_ops[op];
    if (info->infix[0] == '\0' || info->kind != FCG_KIND_EW || nin < 1 || nin > 2) return FC_OK;
    pynum v[2];
    for (int i = 0; i < nin; i++)
        if (!as_pynum(in[i], &v[i])) return FC_OK;
    /* The message names the expression as Python would see it. */
    char ctxt[200], a[FCG_PYINT_STR], b[FCG_PYINT_STR];
    const char *sa = v[0].kind == PY_FLOAT ? (snprintf(a, sizeof a, "%.17g", v[0].f), a)
                                           : fcg_pyint_str(v[0].i, a);
    if (nin == 1) {
        snprintf(ctxt, sizeof ctxt, "%s: %s%s", info->pyname, info->infix, sa);
    } else {
        const char *sb = v[1].kind == PY_FLOAT ? (snprintf(b, sizeof b, "%.17g", v[1].f), b)
                                               : fcg_pyint_str(v[1].i, b);
        snprintf(ctxt, sizeof ctxt, "%s: %s %s %s", info->pyname, sa, info->infix, sb);
    }
    folded r;
    fc_status st = fold(ctx, ctxt, op, nin, v, &r);
    if (st != FC_OK) return st;
    switch (r.kind) {
    case R_BOOL: *out = fc_bool(ctx, r.i != 0); break;
    case R_INT: *out = fcg_pyint_const(ctx, r.i); break;
    case R_FLOAT: *out = fc_f64(ctx, r.re); break;
    case R_COMPLEX: *out = fc_c128(ctx, r.re, r.im); break;
    }
    return FC_OK;
}
