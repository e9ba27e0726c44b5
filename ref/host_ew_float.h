/*
 * ref/host_ew_float.h - elementwise kernels over one real float type, as NumPy's loops
 * compute them. A template: host_ew.c includes it once per type with
 *   HT        the C type (float, double)
 *   HF(fn)    the libm function of that type (sinf / sin)
 *   HN(name)  a name suffixed for that type
 */

/* npy_divmod: fmod, then adjusted to Python's sign convention, the quotient snapped. */
static inline HT HN(divmod)(HT a, HT b, HT *modp) {
    HT mod = HF(fmod)(a, b);
    if (!b) {
        *modp = mod;
        return a / b;
    }
    HT div = (a - mod) / b;
    if (mod) {
        if (isless(b, 0) != isless(mod, 0)) {
            mod += b;
            div -= 1;
        }
    } else {
        mod = HF(copysign)(0, b);
    }
    HT floordiv;
    if (div) {
        floordiv = HF(floor)(div);
        if (isgreater(div - floordiv, (HT)0.5)) floordiv += 1;
    } else {
        floordiv = HF(copysign)(0, a / b);
    }
    *modp = mod;
    return floordiv;
}

static inline HT HN(floordiv)(HT a, HT b) {
    HT mod;
    if (!b) return a / b;
    return HN(divmod)(a, b, &mod);
}

static inline HT HN(remainder)(HT a, HT b) {
    HT mod;
    if (!b) return HF(fmod)(a, b);
    HN(divmod)(a, b, &mod);
    return mod;
}

/* NaN in a wins; on ties the second operand is returned (NumPy's SIMD loops do the same). */
static inline HT HN(maximum)(HT a, HT b) { return (a > b || isnan(a)) ? a : b; }
static inline HT HN(minimum)(HT a, HT b) { return (a < b || isnan(a)) ? a : b; }
static inline HT HN(fmax)(HT a, HT b) { return (a > b || isnan(b)) ? a : b; }
static inline HT HN(fmin)(HT a, HT b) { return (a < b || isnan(b)) ? a : b; }

static inline HT HN(sign)(HT a) {
    return a > 0 ? (HT)1 : a < 0 ? (HT)-1 : a == 0 ? (HT)0 : a;
}

/* npy_logaddexp / npy_logaddexp2: the larger operand plus log1p of the smaller's share, so
 * nothing overflows. Equal operands (infinities of one sign too) give a + ln 2 (a + 1); a
 * NaN difference is the result. */
static inline HT HN(logaddexp)(HT a, HT b) {
    if (a == b) return a + (HT)0.693147180559945309417232121458176568;
    HT d = a - b;
    if (d > 0) return a + HF(log1p)(HF(exp)(-d));
    if (d <= 0) return b + HF(log1p)(HF(exp)(d));
    return d;
}
static inline HT HN(logaddexp2)(HT a, HT b) {
    const HT log2e = (HT)1.442695040888963407359924681001892137;
    if (a == b) return a + 1;
    HT d = a - b;
    if (d > 0) return a + log2e * HF(log1p)(HF(exp2)(-d));
    if (d <= 0) return b + log2e * HF(log1p)(HF(exp2)(d));
    return d;
}

/* lgamma without writing the global signgam, which is a data race between contexts that
 * evaluate on different threads. */
static inline HT HN(lgamma)(HT a) {
    int sign;
    return _Generic(a, float: lgammaf_r, default: lgamma_r)(a, &sign);
}

/* GELU (graph/ops.def): erfc keeps the exact form accurate in the negative tail, where
 * 1 + erf(x / sqrt 2) cancels; 1 / (1 + exp(-2 z)) is (1 + tanh z) / 2 without the
 * cancellation (exp overflows to +inf for very negative x: the result is -0). The device
 * (fcx_gelu, fcx_gelu_tanh in codegen/prelude.cuh) evaluates the same expressions. */
static inline HT HN(gelu)(HT a) {
    return (HT)0.5 * a * HF(erfc)(-a * (HT)0.707106781186547524400844362104849039);
}
static inline HT HN(gelu_tanh)(HT a) {
    const HT k = (HT)-1.595769121605730711759596218036645605; /* -2 sqrt(2 / pi) */
    return a / (1 + HF(exp)(k * (a + (HT)0.044715 * (a * a * a))));
}

static fc_status HN(ew)(fcg_op op, size_t n, const void *const *in, void *out) {
    const HT *a = in[0], *b = in[1], *c = in[2];
    HT *o = out;
    uint8_t *ob = out;
    size_t i;
#define L1(expr) for (i = 0; i < n; i++) o[i] = (expr); break
#define LB(expr) for (i = 0; i < n; i++) ob[i] = (expr); break
    switch (op) {
    case FCG_OP_ADD: L1(a[i] + b[i]);
    case FCG_OP_SUB: L1(a[i] - b[i]);
    case FCG_OP_MUL: L1(a[i] * b[i]);
    case FCG_OP_DIV: L1(a[i] / b[i]);
    case FCG_OP_FLOORDIV: L1(HN(floordiv)(a[i], b[i]));
    case FCG_OP_MOD: L1(HN(remainder)(a[i], b[i]));
    case FCG_OP_POW: L1(HF(pow)(a[i], b[i]));
    case FCG_OP_ARCTAN2: L1(HF(atan2)(a[i], b[i]));
    case FCG_OP_MAXIMUM: L1(HN(maximum)(a[i], b[i]));
    case FCG_OP_MINIMUM: L1(HN(minimum)(a[i], b[i]));
    case FCG_OP_FMAX: L1(HN(fmax)(a[i], b[i]));
    case FCG_OP_FMIN: L1(HN(fmin)(a[i], b[i]));
    case FCG_OP_LESS: LB(a[i] < b[i]);
    case FCG_OP_LESS_EQUAL: LB(a[i] <= b[i]);
    case FCG_OP_GREATER: LB(a[i] > b[i]);
    case FCG_OP_GREATER_EQUAL: LB(a[i] >= b[i]);
    case FCG_OP_EQUAL: LB(a[i] == b[i]);
    case FCG_OP_NOT_EQUAL: LB(a[i] != b[i]);
    case FCG_OP_LOGICAL_AND: LB(a[i] != 0 && b[i] != 0);
    case FCG_OP_LOGICAL_OR: LB(a[i] != 0 || b[i] != 0);
    case FCG_OP_LOGICAL_XOR: LB((a[i] != 0) != (b[i] != 0));
    case FCG_OP_NEGATIVE: L1(-a[i]);
    case FCG_OP_ABS: L1(HF(fabs)(a[i]));
    case FCG_OP_SIGN: L1(HN(sign)(a[i]));
    case FCG_OP_SQRT: L1(HF(sqrt)(a[i]));
    case FCG_OP_CBRT: L1(HF(cbrt)(a[i]));
    case FCG_OP_SQUARE: L1(a[i] * a[i]);
    case FCG_OP_RECIPROCAL: L1(1 / a[i]);
    case FCG_OP_EXP: L1(HF(exp)(a[i]));
    case FCG_OP_EXP2: L1(HF(exp2)(a[i]));
    case FCG_OP_EXPM1: L1(HF(expm1)(a[i]));
    case FCG_OP_LOG: L1(HF(log)(a[i]));
    case FCG_OP_LOG2: L1(HF(log2)(a[i]));
    case FCG_OP_LOG10: L1(HF(log10)(a[i]));
    case FCG_OP_LOG1P: L1(HF(log1p)(a[i]));
    case FCG_OP_SIN: L1(HF(sin)(a[i]));
    case FCG_OP_COS: L1(HF(cos)(a[i]));
    case FCG_OP_TAN: L1(HF(tan)(a[i]));
    case FCG_OP_ARCSIN: L1(HF(asin)(a[i]));
    case FCG_OP_ARCCOS: L1(HF(acos)(a[i]));
    case FCG_OP_ARCTAN: L1(HF(atan)(a[i]));
    case FCG_OP_SINH: L1(HF(sinh)(a[i]));
    case FCG_OP_COSH: L1(HF(cosh)(a[i]));
    case FCG_OP_TANH: L1(HF(tanh)(a[i]));
    case FCG_OP_ARCSINH: L1(HF(asinh)(a[i]));
    case FCG_OP_ARCCOSH: L1(HF(acosh)(a[i]));
    case FCG_OP_ARCTANH: L1(HF(atanh)(a[i]));
    case FCG_OP_FLOOR: L1(HF(floor)(a[i]));
    case FCG_OP_CEIL: L1(HF(ceil)(a[i]));
    case FCG_OP_TRUNC: L1(HF(trunc)(a[i]));
    case FCG_OP_RINT: L1(HF(rint)(a[i]));
    case FCG_OP_ISNAN: LB(isnan(a[i]) != 0);
    case FCG_OP_ISINF: LB(isinf(a[i]) != 0);
    case FCG_OP_ISFINITE: LB(isfinite(a[i]) != 0);
    case FCG_OP_LOGICAL_NOT: LB(a[i] == 0);
    case FCG_OP_REAL: L1(a[i]);
    case FCG_OP_IMAG: L1((HT)0);
    case FCG_OP_CONJ: L1(a[i]);
    case FCG_OP_ANGLE: L1(HF(atan2)((HT)0, a[i])); /* np.angle: arctan2(0, x) */
    case FCG_OP_HYPOT: L1(HF(hypot)(a[i], b[i]));
    case FCG_OP_LOGADDEXP: L1(HN(logaddexp)(a[i], b[i]));
    case FCG_OP_LOGADDEXP2: L1(HN(logaddexp2)(a[i], b[i]));
    case FCG_OP_COPYSIGN: L1(HF(copysign)(a[i], b[i]));
    /* f32 and f64 loops; a 16-bit loop steps in its own format (fch_ew_apply) */
    case FCG_OP_NEXTAFTER: L1(HF(nextafter)(a[i], b[i]));
    case FCG_OP_FMOD: L1(HF(fmod)(a[i], b[i]));
    case FCG_OP_SIGNBIT: LB(signbit(a[i]) != 0);
    case FCG_OP_ERF: L1(HF(erf)(a[i]));
    case FCG_OP_ERFC: L1(HF(erfc)(a[i]));
    case FCG_OP_LGAMMA: L1(HN(lgamma)(a[i]));
    case FCG_OP_GELU: L1(HN(gelu)(a[i]));
    case FCG_OP_GELU_TANH: L1(HN(gelu_tanh)(a[i]));
    case FCG_OP_WHERE: {
        const uint8_t *cond = in[0];
        for (i = 0; i < n; i++) o[i] = cond[i] ? b[i] : c[i];
        break;
    }
    case FCG_OP_CLIP: /* minimum(maximum(x, lo), hi) with clip's own NaN-first max/min */
        for (i = 0; i < n; i++) {
            HT m = isnan(a[i]) ? a[i] : (a[i] > b[i] ? a[i] : b[i]);
            o[i] = isnan(m) ? m : (m < c[i] ? m : c[i]);
        }
        break;
    default:
        return FC_ERR_UNSUPPORTED;
    }
#undef L1
#undef LB
    return FC_OK;
}
