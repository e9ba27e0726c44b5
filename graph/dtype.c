/*
 * graph/dtype.c - dtype names, NumPy promotion (NEP 50), result types of elementwise ops, and
 * the 16-bit float conversions every backend shares.
 */
#include "graph.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *const dtype_names[FC_DTYPE_COUNT] = {
    "bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64",
    "f16", "bf16", "f32", "f64", "c64", "c128",
};
static const size_t dtype_sizes[FC_DTYPE_COUNT] = {1, 1, 2, 4, 8, 1, 2, 4, 8, 2, 2, 4, 8, 8, 16};

static bool dtype_valid(fc_dtype t) { return (unsigned)t < FC_DTYPE_COUNT; }

const char *fc_dtype_name(fc_dtype dtype) { return dtype_valid(dtype) ? dtype_names[dtype] : NULL; }

size_t fc_dtype_size(fc_dtype dtype) { return dtype_valid(dtype) ? dtype_sizes[dtype] : 0; }

fc_status fc_dtype_from_name(const char *name, fc_dtype *out) {
    if (!name || !out) return FC_ERR_NULL;
    for (int t = 0; t < FC_DTYPE_COUNT; t++)
        if (strcmp(name, dtype_names[t]) == 0) {
            *out = (fc_dtype)t;
            return FC_OK;
        }
    return FC_ERR_INVALID;
}

/* NumPy's long dtype names, accepted besides fc_dtype_name's short ones (.fc programs, user
 * kernels' declarations). */
const fcg_dtype_alias fcg_dtype_aliases[] = {
    {"bool_", FC_BOOL},     {"int8", FC_I8},       {"int16", FC_I16},     {"int32", FC_I32},
    {"int64", FC_I64},      {"uint8", FC_U8},      {"uint16", FC_U16},    {"uint32", FC_U32},
    {"uint64", FC_U64},     {"float16", FC_F16},   {"bfloat16", FC_BF16}, {"float32", FC_F32},
    {"float64", FC_F64},    {"complex64", FC_C64}, {"complex128", FC_C128},
};
const size_t fcg_dtype_alias_count = sizeof fcg_dtype_aliases / sizeof fcg_dtype_aliases[0];

fc_status fcg_dtype_parse(const char *s, size_t n, fc_dtype *out) {
    char buf[16];
    if (n == 0 || n >= sizeof buf) return FC_ERR_INVALID;
    memcpy(buf, s, n);
    buf[n] = '\0';
    if (fc_dtype_from_name(buf, out) == FC_OK) return FC_OK;
    for (size_t i = 0; i < fcg_dtype_alias_count; i++)
        if (strcmp(buf, fcg_dtype_aliases[i].name) == 0) {
            *out = fcg_dtype_aliases[i].dtype;
            return FC_OK;
        }
    return FC_ERR_INVALID;
}

fc_dtype fcg_real_dtype(fc_dtype t) {
    if (t == FC_C64) return FC_F32;
    if (t == FC_C128) return FC_F64;
    return t;
}

/* Integer width in bits (bool counts as 1, non-integers 0). */
static int int_bits(fc_dtype t) {
    if (t == FC_BOOL) return 1;
    if (fcg_is_int(t)) return (int)fc_dtype_size(t) * 8;
    return 0;
}

bool fcg_can_cast_safe(fc_dtype from, fc_dtype to) {
    if (from == to || from == FC_BOOL) return true;
    if (fcg_is_int(from)) {
        int bits = int_bits(from);
        if (fcg_is_sint(to)) return int_bits(to) > bits || (fcg_is_sint(from) && int_bits(to) >= bits);
        if (fcg_is_uint(to)) return fcg_is_uint(from) && int_bits(to) >= bits;
        switch (to) {
        case FC_F16: case FC_BF16: return bits <= 8;
        case FC_F32: case FC_C64: return bits <= 16;
        case FC_F64: case FC_C128: return true;
        default: return false;
        }
    }
    switch (from) {
    case FC_F16: case FC_BF16: return to == FC_F32 || to == FC_F64 || to == FC_C64 || to == FC_C128;
    case FC_F32: return to == FC_F64 || to == FC_C64 || to == FC_C128;
    case FC_F64: return to == FC_C128;
    case FC_C64: return to == FC_C128;
    default: return false;
    }
}

/* NumPy's promotion: the first type, in order of size within kind, both cast to safely. */
static fc_dtype promote2(fc_dtype a, fc_dtype b) {
    static const fc_dtype order[] = {FC_BOOL, FC_U8, FC_I8, FC_U16, FC_I16, FC_U32, FC_I32,
                                     FC_U64, FC_I64, FC_F16, FC_BF16, FC_F32, FC_F64, FC_C64,
                                     FC_C128};
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++)
        if (fcg_can_cast_safe(a, order[i]) && fcg_can_cast_safe(b, order[i])) return order[i];
    return FC_C128; /* unreachable: everything casts to c128 */
}

fc_status fc_promote_types(fc_dtype a, fc_dtype b, fc_dtype *out) {
    if (!out) return FC_ERR_NULL;
    if (!dtype_valid(a) || !dtype_valid(b)) return FC_ERR_INVALID;
    *out = promote2(a, b);
    return FC_OK;
}

fc_dtype fcg_float_of(fc_dtype t) {
    if (fcg_is_inexact(t)) return t;
    if (fcg_can_cast_safe(t, FC_F16)) return FC_F16;
    if (fcg_can_cast_safe(t, FC_F32)) return FC_F32;
    return FC_F64;
}

/* ---- weak scalars (NEP 50) -------------------------------------------------------------- */

enum { KIND_BOOL, KIND_INT, KIND_FLOAT, KIND_COMPLEX };

static int dtype_kind(fc_dtype t) {
    if (t == FC_BOOL) return KIND_BOOL;
    if (fcg_is_int(t)) return KIND_INT;
    if (fcg_is_float(t)) return KIND_FLOAT;
    return KIND_COMPLEX;
}

/* A strong dtype combined with a weak scalar of kind `kind`: the strong dtype wins unless the
 * scalar's kind is higher, then the smallest type of that kind holding the strong one. */
static fc_dtype apply_weak(fc_dtype strong, int kind) {
    int sk = dtype_kind(strong);
    if (kind <= sk) return strong;
    switch (kind) {
    case KIND_INT: return FC_I64;
    case KIND_FLOAT: return FC_F64;
    default:
        if (sk == KIND_FLOAT) return strong == FC_F64 ? FC_C128 : FC_C64;
        return FC_C128;
    }
}

/* Common dtype of the operands `in[first..nin)`, weak scalars per NEP 50. *all_weak is set
 * when every operand is weak (the result then stays weak for Python-style operators). */
static fc_status common_type(int first, int nin, fc_array *const *in, fc_dtype *out,
                             bool *all_weak) {
    bool have_strong = false;
    fc_dtype strong = FC_BOOL, weak_default = FC_BOOL;
    int weak_kind = -1;
    for (int i = first; i < nin; i++) {
        fc_dtype t = (fc_dtype)in[i]->dtype;
        if (in[i]->weak) {
            int k = dtype_kind(t);
            if (k > weak_kind) weak_kind = k;
            weak_default = weak_kind < 0 ? t : promote2(weak_default, t);
        } else {
            strong = have_strong ? promote2(strong, t) : t;
            have_strong = true;
        }
    }
    *all_weak = !have_strong;
    if (!have_strong) {
        *out = weak_default;
        return FC_OK;
    }
    *out = weak_kind < 0 ? strong : apply_weak(strong, weak_kind);
    return FC_OK;
}

/* What NumPy 2.4 does with a weak Python integer v, operand i of op, once the loop dtype is
 * known. NumPy converts the int where it meets the loop, so the check is against the loop's
 * dtype, not the other operand's: x_u16 / -1 and arctan2(x_u8, -1) run in float and never
 * check -1 against u16 or u8. */
typedef enum pyint_class {
    CL_KEEP, CL_AS_FLOAT, CL_NO_MIN, CL_NO_MAX, CL_SETTLE,
    CL_OUT_OF_BOUNDS, /* OverflowError: "Python integer 300 out of bounds for int8" */
    CL_NOT_LONG       /* OverflowError: NumPy converts it to a C long (int64) first */
} pyint_class;

static pyint_class classify(fcg_op op, int nin, fc_array *const *in, int i, fc_dtype loop,
                            fcg_pyint v) {
    fcg_rule rule = fcg_ops[op].rule;
    bool wide = fcg_pyint_is_wide(in[i]);
    /* where's condition (its truth) and a cast's operand keep the int's own dtype, as
     * np.asarray gives it (int64, or uint64 above INT64_MAX). */
    if ((rule == FCG_RULE_WHERE && i == 0) || rule == FCG_RULE_CAST)
        return wide ? CL_NOT_LONG : CL_KEEP;
    bool all_weak = true;
    for (int j = rule == FCG_RULE_WHERE ? 1 : 0; j < nin; j++) all_weak &= in[j]->weak != 0;
    /* Python numbers alone in a function: NumPy makes each int an int64 array first. */
    if (all_weak) return fcg_pyint_fits(v, FC_I64) ? CL_KEEP : CL_NOT_LONG;
    /* NumPy converts the int to a float loop through a double: one beyond 2**53 must round
     * there first (converting it straight to f32 could round differently). */
    if (fcg_is_inexact(loop))
        return v > ((fcg_pyint)1 << 53) || v < -((fcg_pyint)1 << 53) ? CL_AS_FLOAT : CL_KEEP;
    /* logical_and & co. take the int as a C long, then its truth (256 is True for u8). */
    if (loop == FC_BOOL) return fcg_pyint_fits(v, FC_I64) ? CL_KEEP : CL_NOT_LONG;
    if (fcg_pyint_fits(v, loop)) return CL_KEEP;
    switch (rule) {
    case FCG_RULE_COMPARE: /* NumPy 2 compares an int array with any Python int exactly */
        return fcg_is_int((fc_dtype)in[1 - i]->dtype) ? CL_SETTLE : CL_OUT_OF_BOUNDS;
    case FCG_RULE_CLIP:
        /* NumPy >= 2.1 (_methods._clip): for an integer array, a Python-int min at or below
         * its dtype's minimum, or max at or above its maximum, is dropped. */
        if (i > 0 && !in[0]->weak && fcg_is_int((fc_dtype)in[0]->dtype)) {
            fc_dtype a = (fc_dtype)in[0]->dtype;
            if (i == 1 && v <= fcg_pyint_min(a)) return CL_NO_MIN;
            if (i == 2 && v >= fcg_pyint_max(a)) return CL_NO_MAX;
        }
        return CL_OUT_OF_BOUNDS;
    case FCG_RULE_WHERE:
        /* np.where casts its values unsafely: 300 becomes 44 in a u8 result, as C's cast
         * does (the loop's conversion), once the int is an int64 or uint64. */
        return wide ? CL_NOT_LONG : CL_KEEP;
    case FCG_RULE_NONE: case FCG_RULE_ARITH: case FCG_RULE_ARITH_NOBOOL: case FCG_RULE_TRUEDIV:
    case FCG_RULE_INTDIV: case FCG_RULE_POWER: case FCG_RULE_SQUARE: case FCG_RULE_CONJ:
    case FCG_RULE_FLOAT_BINARY: case FCG_RULE_FLOAT_REAL: case FCG_RULE_FLOAT_UNARY:
    case FCG_RULE_LOGICAL: case FCG_RULE_PREDICATE: case FCG_RULE_FLOAT_PREDICATE:
    case FCG_RULE_BITWISE: case FCG_RULE_BITWISE_NOT: case FCG_RULE_SHIFT: case FCG_RULE_ABS:
    case FCG_RULE_REALPART: case FCG_RULE_ROUND_KEEP: case FCG_RULE_ANGLE: case FCG_RULE_CAST:
    case FCG_RULE_MINMAX: case FCG_RULE_NEGATIVE: case FCG_RULE_SIGN:
        break;
    }
    return CL_OUT_OF_BOUNDS;
}

/* The error for each weak int NumPy refuses here (none: FC_OK). */
static fc_status check_weak_ints(fc_ctx *ctx, fcg_op op, int nin, fc_array *const *in,
                                 fc_dtype loop) {
    for (int i = 0; i < nin; i++) {
        fcg_pyint v;
        if (!fcg_pyint_of(in[i], &v)) continue;
        char s[FCG_PYINT_STR];
        switch (classify(op, nin, in, i, loop, v)) {
        case CL_KEEP: case CL_AS_FLOAT: case CL_NO_MIN: case CL_NO_MAX: case CL_SETTLE: break;
        case CL_OUT_OF_BOUNDS:
            return fcg_error(ctx, FC_ERR_INVALID, "%s: Python integer %s out of bounds for %s",
                             fcg_ops[op].pyname, fcg_pyint_str(v, s), fc_dtype_name(loop));
        case CL_NOT_LONG:
            return fcg_error(ctx, FC_ERR_INVALID,
                             "%s: Python integer %s out of bounds for i64 (NumPy converts it to "
                             "a C long here)", fcg_ops[op].pyname, fcg_pyint_str(v, s));
        }
    }
    return FC_OK;
}

void fcg_weak_ints(fcg_op op, int nin, fc_array *const *in, fc_dtype loop, fcg_weak_fix *fix) {
    fix->settled = -1;
    for (int i = 0; i < nin; i++) {
        fix->use[i] = FCG_PYINT_KEEP;
        fcg_pyint v;
        if (!fcg_pyint_of(in[i], &v)) continue;
        switch (classify(op, nin, in, i, loop, v)) {
        case CL_KEEP: case CL_OUT_OF_BOUNDS: case CL_NOT_LONG: break; /* fcg_ew_types refused */
        case CL_AS_FLOAT: fix->use[i] = FCG_PYINT_AS_FLOAT; break;
        case CL_NO_MIN: fix->use[i] = FCG_PYINT_NO_MIN; break;
        case CL_NO_MAX: fix->use[i] = FCG_PYINT_NO_MAX; break;
        case CL_SETTLE: {
            /* Every element of the other operand lies inside its dtype, v outside it. */
            int c = v > fcg_pyint_max(loop) ? -1 : 1; /* element vs v */
            fix->settled = fcg_compare_holds(op, i == 1 ? c : -c);
            break;
        }
        }
    }
}

static fc_status type_error(fc_ctx *ctx, fcg_op op, int nin, fc_array *const *in) {
    char buf[256];
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < nin && len < sizeof buf - 32; i++)
        len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s%s", i ? ", " : "",
                                in[i]->weak ? "weak " : "", fc_dtype_name((fc_dtype)in[i]->dtype));
    return fcg_error(ctx, FC_ERR_DTYPE, "%s: not supported for dtypes (%s)", fcg_ops[op].pyname,
                     buf);
}

fc_status fcg_ew_types(fc_ctx *ctx, fcg_op op, int nin, fc_array *const *in, fc_dtype cast_to,
                       fc_dtype *out_dtype, fc_dtype *loop_dtype, bool *out_weak) {
    const fcg_op_info *info = &fcg_ops[op];
    fcg_rule rule = info->rule;
    bool all_weak = false;
    fc_dtype c = FC_BOOL;
    int first = rule == FCG_RULE_WHERE ? 1 : 0;
    fc_status st = common_type(first, nin, in, &c, &all_weak);
    if (st != FC_OK) return st;
    if (rule == FCG_RULE_WHERE && in[0]->weak == 0) all_weak = false;
    fc_dtype loop = c, out = c;
    switch (rule) {
    case FCG_RULE_ARITH: case FCG_RULE_MINMAX: case FCG_RULE_WHERE: case FCG_RULE_CLIP: break;
    case FCG_RULE_ARITH_NOBOOL:
    case FCG_RULE_NEGATIVE:
    case FCG_RULE_SIGN:
        if (c == FC_BOOL) return type_error(ctx, op, nin, in);
        break;
    case FCG_RULE_TRUEDIV:
        if (!fcg_is_inexact(c)) loop = out = FC_F64;
        break;
    case FCG_RULE_INTDIV:
        if (fcg_is_complex(c)) return type_error(ctx, op, nin, in);
        if (c == FC_BOOL) loop = out = FC_I8;
        break;
    case FCG_RULE_POWER:
    case FCG_RULE_SQUARE:
    case FCG_RULE_CONJ:
        if (c == FC_BOOL) loop = out = FC_I8;
        break;
    case FCG_RULE_FLOAT_BINARY:
        if (fcg_is_complex(c)) return type_error(ctx, op, nin, in);
        loop = out = fcg_float_of(c);
        /* NumPy picks the first float loop both strong operands cast to safely, which can be
         * smaller than the float of their common type (i8 with u8: f16, not f32). */
        if (nin == 2 && !in[0]->weak && !in[1]->weak) {
            static const fc_dtype loops[] = {FC_F16, FC_BF16, FC_F32, FC_F64};
            for (int i = 3; i >= 0; i--)
                if (fcg_can_cast_safe((fc_dtype)in[0]->dtype, loops[i]) &&
                    fcg_can_cast_safe((fc_dtype)in[1]->dtype, loops[i]))
                    loop = out = loops[i];
        }
        break;
    case FCG_RULE_FLOAT_REAL:
        if (fcg_is_complex(c)) return type_error(ctx, op, nin, in);
        loop = out = fcg_float_of(c);
        break;
    case FCG_RULE_FLOAT_UNARY: loop = out = fcg_float_of(c); break;
    case FCG_RULE_COMPARE: out = FC_BOOL; break;
    case FCG_RULE_LOGICAL: loop = out = FC_BOOL; break;
    case FCG_RULE_PREDICATE: out = FC_BOOL; break;
    case FCG_RULE_FLOAT_PREDICATE: /* signbit: NumPy has float loops only ('e->?' ...) */
        if (fcg_is_complex(c)) return type_error(ctx, op, nin, in);
        loop = fcg_float_of(c);
        out = FC_BOOL;
        break;
    case FCG_RULE_BITWISE:
    case FCG_RULE_BITWISE_NOT:
        if (!fcg_is_int(c) && c != FC_BOOL) return type_error(ctx, op, nin, in);
        break;
    case FCG_RULE_SHIFT:
        if (c == FC_BOOL) loop = out = FC_I8;
        else if (!fcg_is_int(c)) return type_error(ctx, op, nin, in);
        break;
    case FCG_RULE_ABS:
    case FCG_RULE_REALPART: out = fcg_real_dtype(c); break;
    case FCG_RULE_ROUND_KEEP:
        if (fcg_is_complex(c)) return type_error(ctx, op, nin, in);
        break;
    case FCG_RULE_ANGLE:
        if (fcg_is_complex(c)) out = fcg_real_dtype(c);
        /* np.angle(x) is arctan2(0, x) with a Python 0: bool meets a weak int first (i64). */
        else if (c == FC_BOOL) loop = out = FC_F64;
        else loop = out = fcg_float_of(c);
        break;
    case FCG_RULE_CAST:
        if (!dtype_valid(cast_to))
            return fcg_error(ctx, FC_ERR_INVALID, "cast: invalid target dtype %d", (int)cast_to);
        loop = c;
        out = cast_to;
        all_weak = false;
        break;
    case FCG_RULE_NONE: return type_error(ctx, op, nin, in);
    }
    if ((st = check_weak_ints(ctx, op, nin, in, loop)) != FC_OK) return st;
    *out_dtype = out;
    *loop_dtype = loop;
    /* Operators on Python scalars stay Python scalars; functions give NumPy scalars. */
    *out_weak = all_weak && info->infix[0] != '\0';
    return FC_OK;
}

/* ---- 16-bit floats ---------------------------------------------------------------------- */

float fcg_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu, bits;
    if (exp == 0) {
        float v = (float)mant * 0x1p-24f; /* subnormal or zero: exact */
        memcpy(&bits, &v, 4);
        bits |= sign;
    } else if (exp == 31) {
        bits = sign | 0x7f800000u | (mant << 13);
    } else {
        bits = sign | ((exp + 112) << 23) | (mant << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

uint16_t fcg_f32_to_f16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) /* inf, or NaN kept quiet */
        return (uint16_t)(sign | (ax > 0x7f800000u ? 0x7e00u | ((ax >> 13) & 0x3ffu) : 0x7c00u));
    if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* >= 65520 rounds to inf */
    if (ax < 0x38800000u) {                                  /* below 2^-14: subnormal */
        float v;
        memcpy(&v, &ax, 4);
        return (uint16_t)(sign | (uint16_t)lrintf(v * 0x1p24f)); /* exact scale, then RNE */
    }
    uint32_t h = ((((ax >> 23) - 127 + 15) << 10) | ((ax & 0x7fffffu) >> 13));
    uint32_t rem = ax & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++;
    return (uint16_t)(sign | h);
}

float fcg_bf16_to_f32(uint16_t h) {
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

uint16_t fcg_f32_to_bf16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}
