/*
 * tests/test_prelude.cpp - the device prelude (codegen/prelude.cuh) against the host backend.
 *
 * The prelude is CUDA C++; compiled here as host C++ (FCX_HOST) it must give what the host
 * reference backend gives, op by op and dtype by dtype. For every elementwise op of ops.def and
 * every input dtype the public API accepts, inputs (special values: NaN, infinities, -0.0,
 * integer extremes, zero divisors, shift widths; then random values, never zero) run through
 * the public API on the host backend (fc_from_host, the op, fc_read into a poisoned buffer)
 * and through the prelude (load, cast to the node's loop dtype, fcx_<op>, store to the node's
 * dtype). Results must agree bit for bit (NaN payloads aside), except the complex
 * transcendental functions, which are the prelude's own code where the host calls the C
 * library: there, a few ulps. The op list comes from ops.def, so a new op without a prelude
 * function fails here. Also: casts between every pair of dtypes, f16 / bf16 loads and stores
 * against graph/dtype.c over every bit pattern, random draws against graph.h's (Philox) and the
 * host backend's draws, the reduction helpers against fc_max / fc_argmax, and a kernel
 * calling every prelude function compiled by NVRTC for sm_80 and sm_90 (the bf16 fallback for sm_75). And the f16 / bf16
 * roundings against an independent round-to-nearest-even (what the device's conversion
 * instructions compute) at every rounding boundary of both formats.
 */
#include <criterion/criterion.h>

#define FCX_HOST
#include "prelude.cuh"

extern "C" {
#include "graph.h"
#include "nvrtc_compile.h"
#include "prelude.h"
}
#include "test_util.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

/* ---- dtypes as types -------------------------------------------------------------------- */

template <int D> struct DT;
#define DT_(E, n)                                                                              \
    template <> struct DT<E> {                                                                 \
        typedef fcx_t_##n S;                                                                   \
        typedef fcx_ct_##n C;                                                                  \
        static constexpr const char *name = #n;                                                \
        static C load(const S *p) { return fcx_load_##n(p); }                                  \
        static void store(S *p, C v) { fcx_store_##n(p, v); }                                  \
        template <class X> static C cast(X x) { return fcx_cast_##n(x); }                      \
    };
DT_(FC_BOOL, bool) DT_(FC_I8, i8) DT_(FC_I16, i16) DT_(FC_I32, i32) DT_(FC_I64, i64)
DT_(FC_U8, u8) DT_(FC_U16, u16) DT_(FC_U32, u32) DT_(FC_U64, u64) DT_(FC_F16, f16)
DT_(FC_BF16, bf16) DT_(FC_F32, f32) DT_(FC_F64, f64) DT_(FC_C64, c64) DT_(FC_C128, c128)

/* Calls f(DT<d>{}) for the runtime dtype d. */
template <class F> static void with_dtype(fc_dtype d, F &&f) {
    switch (d) {
    case FC_BOOL: f(DT<FC_BOOL>{}); break;
    case FC_I8: f(DT<FC_I8>{}); break;
    case FC_I16: f(DT<FC_I16>{}); break;
    case FC_I32: f(DT<FC_I32>{}); break;
    case FC_I64: f(DT<FC_I64>{}); break;
    case FC_U8: f(DT<FC_U8>{}); break;
    case FC_U16: f(DT<FC_U16>{}); break;
    case FC_U32: f(DT<FC_U32>{}); break;
    case FC_U64: f(DT<FC_U64>{}); break;
    case FC_F16: f(DT<FC_F16>{}); break;
    case FC_BF16: f(DT<FC_BF16>{}); break;
    case FC_F32: f(DT<FC_F32>{}); break;
    case FC_F64: f(DT<FC_F64>{}); break;
    case FC_C64: f(DT<FC_C64>{}); break;
    default: f(DT<FC_C128>{}); break;
    }
}

static fc_dtype dtype_at(int i) { return (fc_dtype)i; }
static const char *dname(int t) { return fc_dtype_name((fc_dtype)t); }

/* Casts n elements with the prelude: load, fcx_cast_<to>, store. */
static void prelude_convert(fc_dtype from, const void *src, fc_dtype to, void *dst, size_t n) {
    with_dtype(from, [&](auto f) {
        with_dtype(to, [&](auto t) {
            using F = decltype(f);
            using T = decltype(t);
            for (size_t i = 0; i < n; i++)
                T::store((typename T::S *)dst + i, T::cast(F::load((const typename F::S *)src + i)));
        });
    });
}

/* ---- every op of ops.def as a callable: invocable exactly where the prelude has it ------- */

#define FCG_OP(E, c, py, nin, kind, rule, infix, params, red)                                 \
    struct OPF_##E {                                                                           \
        template <class... A> auto operator()(A... a) const -> decltype(fcx_##c(a...)) {       \
            return fcx_##c(a...);                                                              \
        }                                                                                      \
    };
#include "ops.def"
#undef FCG_OP

/* What codegen/cuda.c calls for op Op over loop dtype L (fcx_<cname>), except nextafter of
 * a 16-bit loop, for which it names the loop dtype (fcx_nextafter_f16 / _bf16). */
template <class Op, class L> struct loop_call : Op {};
template <> struct loop_call<OPF_NEXTAFTER, DT<FC_F16>> {
    template <class T> auto operator()(T a, T b) const -> decltype(fcx_nextafter_f16(a, b)) {
        return fcx_nextafter_f16(a, b);
    }
};
template <> struct loop_call<OPF_NEXTAFTER, DT<FC_BF16>> {
    template <class T> auto operator()(T a, T b) const -> decltype(fcx_nextafter_bf16(a, b)) {
        return fcx_nextafter_bf16(a, b);
    }
};
static const char *loop_fn_name(fcg_op op, fc_dtype loop) {
    if (op == FCG_OP_NEXTAFTER && loop == FC_F16) return "nextafter_f16";
    if (op == FCG_OP_NEXTAFTER && loop == FC_BF16) return "nextafter_bf16";
    return fcg_ops[op].cname;
}

/* Applies op functor Op over n elements of loop dtype `loop` (inputs in[0..nin) in the loop
 * dtype's storage; WHERE's first input is bool) and stores into `out` (dtype outd). Returns ""
 * or what is wrong. */
typedef std::string (*runner_fn)(fc_dtype loop, fc_dtype outd, int nin, void *const *in,
                                 void *out, size_t n);

template <class R> static std::string store_result(fc_dtype outd, void *out, size_t i, R r) {
    std::string err;
    with_dtype(outd, [&](auto o) {
        using O = decltype(o);
        if constexpr (std::is_same_v<R, typename O::C>) O::store((typename O::S *)out + i, r);
        else err = std::string("the result's compute type is not that of ") + O::name;
    });
    return err;
}

template <class Op> static std::string run_op(fc_dtype loop, fc_dtype outd, int nin,
                                              void *const *in, void *out, size_t n) {
    std::string err = "the prelude has no overload for this loop dtype";
    with_dtype(loop, [&](auto l) {
        using L = decltype(l);
        using C = typename L::C;
        const typename L::S *a = (const typename L::S *)in[0], *b = (const typename L::S *)in[1],
                            *c = (const typename L::S *)in[2];
        if (nin == 1) {
            if constexpr (std::is_invocable_v<Op, C>) {
                for (size_t i = 0; i < n && (err = store_result(outd, out, i, Op{}(L::load(a + i)))).empty(); i++) {}
            }
        } else if (nin == 2) {
            using F = loop_call<Op, L>;
            if constexpr (std::is_invocable_v<F, C, C>) {
                for (size_t i = 0; i < n && (err = store_result(outd, out, i, F{}(L::load(a + i), L::load(b + i)))).empty(); i++) {}
            }
        } else if (std::is_same_v<Op, OPF_WHERE>) {
            if constexpr (std::is_invocable_v<Op, bool, C, C>) {
                const fcx_t_bool *cond = (const fcx_t_bool *)in[0];
                for (size_t i = 0; i < n && (err = store_result(outd, out, i, Op{}(fcx_load_bool(cond + i), L::load(b + i), L::load(c + i)))).empty(); i++) {}
            }
        } else {
            if constexpr (std::is_invocable_v<Op, C, C, C>) {
                for (size_t i = 0; i < n && (err = store_result(outd, out, i, Op{}(L::load(a + i), L::load(b + i), L::load(c + i)))).empty(); i++) {}
            }
        }
    });
    return err;
}

static const runner_fn runners[FCG_OP_COUNT] = {
#define FCG_OP(E, c, py, nin, kind, rule, infix, params, red) run_op<OPF_##E>,
#include "ops.def"
#undef FCG_OP
};

/* ---- inputs ----------------------------------------------------------------------------- */

/* A value before it is stored in a dtype: integers as bits, reals as double, complex as two. */
struct val {
    unsigned long long bits;
    double re, im;
};

static void encode(fc_dtype t, const val &v, unsigned char *dst) {
    size_t size = fc_dtype_size(t);
    if (t == FC_BOOL) {
        dst[0] = v.bits != 0;
    } else if (fcg_is_int(t)) {
        memcpy(dst, &v.bits, size); /* little-endian: the low bytes */
    } else if (t == FC_F16) {
        uint16_t h = fcg_f32_to_f16((float)v.re);
        memcpy(dst, &h, 2);
    } else if (t == FC_BF16) {
        uint16_t h = fcg_f32_to_bf16((float)v.re);
        memcpy(dst, &h, 2);
    } else if (t == FC_F32 || t == FC_C64) {
        float p[2] = {(float)v.re, (float)v.im};
        memcpy(dst, p, size);
    } else {
        double p[2] = {v.re, v.im};
        memcpy(dst, p, size);
    }
}

static val V(unsigned long long bits) { return val{bits, 0, 0}; }
static val R(double re, double im = 0) { return val{0, re, im}; }

static std::vector<val> specials(fc_dtype t, bool many) {
    std::vector<val> s;
    int w = (int)fc_dtype_size(t) * 8;
    unsigned long long mx = w >= 64 ? ~0ull : (1ull << w) - 1; /* integers only */
    const double inf = INFINITY, nan = NAN;
    if (t == FC_BOOL) {
        s = {V(0), V(1)};
    } else if (fcg_is_sint(t)) {
        unsigned long long mn = 1ull << (w - 1);
        for (long long x : {0ll, 1ll, -1ll, 2ll, -2ll, 3ll, -7ll, (long long)w - 1, (long long)w,
                            (long long)w + 1})
            s.push_back(V((unsigned long long)x));
        for (unsigned long long x : {mn, mn - 1, mn + 1}) s.push_back(V(x));
    } else if (fcg_is_uint(t)) {
        for (unsigned long long x : {0ull, 1ull, 2ull, 3ull, 7ull, (unsigned long long)w - 1,
                                     (unsigned long long)w, (unsigned long long)w + 1, mx, mx - 1,
                                     mx / 2, mx / 2 + 1})
            s.push_back(V(x));
    } else {
        double big = t == FC_F16 ? 65504 : t == FC_F32 || t == FC_C64 || t == FC_BF16 ? 3e38 : 1.7e308;
        double tiny = t == FC_F16 ? 0x1p-24 : t == FC_BF16 ? 0x1p-133 : t == FC_F32 || t == FC_C64 ? 0x1p-149 : 0x1p-1074;
        std::vector<double> r = {0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 2.0, inf, -inf, nan, -nan};
        if (many || !fcg_is_complex(t))
            for (double x : {-0.5, 1.5, -3.0, 7.0, big, -big, tiny, -tiny, 1e-3}) r.push_back(x);
        if (fcg_is_complex(t)) {
            for (double a : r)
                for (double b : r) s.push_back(R(a, b));
        } else {
            for (double a : r) s.push_back(R(a));
        }
    }
    return s;
}

/* Random, never zero. Integers: full-width bits or small values; reals: moderate, spread over
 * magnitudes, some integral (exact quotients for // and %). */
static val random_val(fc_dtype t, std::mt19937_64 &rng) {
    std::uniform_real_distribution<double> u(0, 1);
    auto real = [&](double lo_exp, double hi_exp) {
        double m;
        switch (rng() % 4) {
        case 0: m = std::ldexp(1.0, (int)(rng() % 7)) * (1 + (double)(rng() % 8)) / 8; break;
        case 1: m = 1 + std::floor(u(rng) * 20); break;
        default: m = std::pow(10.0, lo_exp + (hi_exp - lo_exp) * u(rng)); break;
        }
        return (rng() & 1) ? -m : m;
    };
    if (t == FC_BOOL) return V(1 + 0 * rng()); /* true: "never zero" */
    if (fcg_is_int(t)) {
        unsigned long long x;
        do {
            x = (rng() & 1) ? rng() : (unsigned long long)((long long)(rng() % 41) - 20);
            int w = (int)fc_dtype_size(t) * 8;
            if (w < 64) x &= (1ull << w) - 1;
        } while (x == 0);
        return V(x);
    }
    if (fcg_is_complex(t)) return R(real(-3, 3), real(-3, 3));
    if (t == FC_F16) return R(real(-4, 4));
    return R(real(-6, 6));
}

/* The inputs of one op: nin columns in dtype t. Special values in every combination (a subset
 * for three complex inputs), then random rows. The second input of integer power is kept
 * non-negative (a negative exponent is an error on the host), shift counts mostly near the
 * width. */
static std::vector<std::vector<unsigned char>> make_inputs(fcg_op op, int nin, fc_dtype t,
                                                           size_t *count, std::mt19937_64 &rng) {
    std::vector<val> s = specials(t, nin < 3);
    std::vector<std::vector<val>> rows;
    if (nin == 1) {
        for (auto &a : s) rows.push_back({a});
    } else if (nin == 2) {
        for (auto &a : s)
            for (auto &b : s) rows.push_back({a, b});
    } else {
        size_t step = s.size() > 20 ? 7 : 1;
        for (size_t i = 0; i < s.size(); i += step)
            for (size_t j = 0; j < s.size(); j += step)
                for (size_t k = 0; k < s.size(); k += step) rows.push_back({s[i], s[j], s[k]});
    }
    for (int r = 0; r < 400; r++) {
        std::vector<val> row;
        for (int k = 0; k < nin; k++) row.push_back(random_val(t, rng));
        if (r % 4 == 0 && nin > 1) row[1] = s[rng() % s.size()]; /* specials meet randoms */
        rows.push_back(row);
    }
    int w = (int)fc_dtype_size(t) * 8;
    for (auto &row : rows) {
        if (op == FCG_OP_POW && fcg_is_int(t)) row[1].bits &= 63;
        if ((op == FCG_OP_LEFT_SHIFT || op == FCG_OP_RIGHT_SHIFT) && fcg_is_int(t) && (rng() % 4))
            row[1].bits = (unsigned long long)((long long)(rng() % (unsigned)(w + 6)) - 3);
    }
    size_t size = fc_dtype_size(t);
    std::vector<std::vector<unsigned char>> cols(nin, std::vector<unsigned char>(rows.size() * size));
    for (size_t i = 0; i < rows.size(); i++)
        for (int k = 0; k < nin; k++) encode(t, rows[i][k], &cols[k][i * size]);
    *count = rows.size();
    return cols;
}

/* ---- comparing -------------------------------------------------------------------------- */

static bool is_nan_bits(fc_dtype t, const unsigned char *p) {
    if (t == FC_F16) {
        uint16_t h;
        memcpy(&h, p, 2);
        return (h & 0x7c00) == 0x7c00 && (h & 0x3ff);
    }
    if (t == FC_BF16) {
        uint16_t h;
        memcpy(&h, p, 2);
        return (h & 0x7f80) == 0x7f80 && (h & 0x7f);
    }
    if (t == FC_F32) {
        float f;
        memcpy(&f, p, 4);
        return f != f;
    }
    double d;
    memcpy(&d, p, 8);
    return d != d;
}

/* Distance in ulps between two finite reals of the same sign class (huge if they differ). */
static double ulps(double a, double b, bool single) {
    if (a == b) return 0;
    double m = std::fmax(std::fabs(a), std::fabs(b));
    int e = std::ilogb(m);
    int emin = single ? -126 : -1022;
    double ulp = std::ldexp(1.0, (e < emin ? emin : e) - (single ? 23 : 52));
    return std::fabs(a - b) / ulp;
}

/* One complex result of a transcendental function: the same class (NaN, infinity, signed
 * zero) part by part, finite parts within tol ulps of the part or of the larger part. */
template <class R> static bool complex_close(const R *mine, const R *ref, double tol, bool signs) {
    bool single = sizeof(R) == 4;
    if (!signs || tol > 1e6) { /* the signs of zeros and infinities are noise */
        for (int k = 0; k < 2; k++) {
            double a = mine[k], b = ref[k];
            if ((a != a) != (b != b) || std::isinf(a) != std::isinf(b) || (a == 0) != (b == 0))
                return false;
        }
        return true;
    }
    double scale = std::fmax(std::fabs((double)ref[0]), std::fabs((double)ref[1]));
    for (int k = 0; k < 2; k++) {
        double a = mine[k], b = ref[k];
        if (a != a || b != b) {
            if ((a != a) != (b != b)) return false;
            continue;
        }
        if (std::isinf(a) || std::isinf(b)) {
            if (a != b) return false;
            continue;
        }
        if (a == 0 && b == 0) {
            if (std::signbit(a) != std::signbit(b)) return false;
            continue;
        }
        if (ulps(a, b, single) <= tol) continue;
        if (std::isfinite(scale) && ulps(a - b + scale, scale, single) <= tol) continue;
        return false;
    }
    return true;
}

/* Ops whose complex loop the prelude computes with its own code, not the C library's. */
static bool own_complex_math(fcg_op op) {
    switch (op) {
    case FCG_OP_SQRT: case FCG_OP_EXP: case FCG_OP_EXP2: case FCG_OP_LOG: case FCG_OP_LOG2:
    case FCG_OP_LOG10: case FCG_OP_SIN: case FCG_OP_COS: case FCG_OP_TAN: case FCG_OP_ARCSIN:
    case FCG_OP_ARCCOS: case FCG_OP_ARCTAN: case FCG_OP_SINH: case FCG_OP_COSH: case FCG_OP_TANH:
    case FCG_OP_ARCSINH: case FCG_OP_ARCCOSH: case FCG_OP_ARCTANH: case FCG_OP_POW:
        return true;
    default:
        return false;
    }
}

/* The tolerance of complex power: exp(w log z) magnifies a relative error of its argument by
 * |w log z|. Where the result overflows or underflows, its signs are those of cos and sin of
 * that argument, which a last-bit difference of log z (glibc's is not correctly rounded) can
 * flip: for power, only the classes of zeros and infinities are compared. */
template <class R> static double pow_tolerance(const R *a, const R *b) {
    double la = std::log(std::hypot((double)a[0], (double)a[1])), th = std::atan2((double)a[1], (double)a[0]);
    double w = std::hypot((double)b[0], (double)b[1]) * std::hypot(la, th);
    return 8 * (2 + (w == w ? w : 0)); /* infinite when w overflows */
}

/* Compares element i of the host's and the prelude's results (dtype t). */
static bool same_element(fcg_op op, fc_dtype loop, fc_dtype t, const unsigned char *host,
                         const unsigned char *mine, void *const *in, size_t i) {
    size_t size = fc_dtype_size(t);
    if (!fcg_is_inexact(t) || memcmp(host, mine, size) == 0) return memcmp(host, mine, size) == 0;
    if (fcg_is_complex(loop) && own_complex_math(op)) {
        if (t == FC_C64) {
            double tol = op == FCG_OP_POW ? pow_tolerance((const float *)in[0] + 2 * i, (const float *)in[1] + 2 * i) : 8;
            return complex_close((const float *)mine, (const float *)host, tol, op != FCG_OP_POW);
        }
        if (t == FC_C128) {
            double tol = op == FCG_OP_POW ? pow_tolerance((const double *)in[0] + 2 * i, (const double *)in[1] + 2 * i) : 8;
            return complex_close((const double *)mine, (const double *)host, tol, op != FCG_OP_POW);
        }
    }
    if (fcg_is_complex(t)) { /* NaN parts compare equal whatever their payload */
        size_t h = size / 2;
        fc_dtype r = fcg_real_dtype(t);
        for (size_t k = 0; k < 2; k++)
            if (!(is_nan_bits(r, host + k * h) && is_nan_bits(r, mine + k * h)) &&
                memcmp(host + k * h, mine + k * h, h) != 0)
                return false;
        return true;
    }
    return is_nan_bits(t, host) && is_nan_bits(t, mine);
}

static std::string hex(const unsigned char *p, size_t n) {
    std::string s = "0x";
    char b[3];
    for (size_t k = n; k-- > 0;) {
        snprintf(b, sizeof b, "%02x", p[k]);
        s += b;
    }
    return s;
}

/* ---- the host backend ------------------------------------------------------------------- */

static fc_shape shape1(int64_t n) {
    fc_shape s;
    memset(&s, 0, sizeof s);
    s.ndim = 1;
    s.dim[0] = n;
    return s;
}

static fc_array *make_op(fcg_op op, int nin, fc_array *const *x) {
    if (nin == 1 && fcg_unary_api[op]) return fcg_unary_api[op](x[0]);
    if (nin == 2 && fcg_binary_api[op]) return fcg_binary_api[op](x[0], x[1]);
    if (nin == 3 && fcg_ternary_api[op]) return fcg_ternary_api[op](x[0], x[1], x[2]);
    return NULL;
}

/* Reads all of a into a buffer poisoned beforehand. */
static std::vector<unsigned char> host_read(fc_array *a, fc_status *st) {
    size_t n = (size_t)fc_array_size(a), size = fc_dtype_size(fc_array_dtype(a));
    std::vector<unsigned char> buf(n * size, 0xA5);
    *st = fc_read(a, buf.data(), 0, (int64_t)n);
    return buf;
}

static bool is_tested_ew(int op) {
    return fcg_ops[op].kind == FCG_KIND_EW && op != FCG_OP_CAST;
}

/* Runs every elementwise op of arity nin over every input dtype. */
static void check_ops(int arity) {
    fc_ctx *ctx = tu_host_ctx();
    std::mt19937_64 rng(0x5eed0000u + (unsigned)arity);
    int checked = 0;
    for (int op = 0; op < FCG_OP_COUNT; op++) {
        if (!is_tested_ew(op) || fcg_ops[op].nin != arity) continue;
        int accepted = 0;
        for (int d = 0; d < FC_DTYPE_COUNT; d++) {
            fc_dtype t = dtype_at(d);
            fc_scope *scope = fc_scope_open(ctx);
            size_t n;
            auto cols = make_inputs((fcg_op)op, arity, t, &n, rng);
            fc_array *x[3];
            std::vector<unsigned char> cond(n);
            for (int k = 0; k < arity; k++) x[k] = fc_from_host(ctx, t, shape1((int64_t)n), cols[k].data());
            if (op == FCG_OP_WHERE) { /* the condition is a bool array */
                for (size_t i = 0; i < n; i++) cond[i] = (unsigned char)(rng() & 1);
                x[0] = fc_from_host(ctx, FC_BOOL, shape1((int64_t)n), cond.data());
            }
            fc_array *y = make_op((fcg_op)op, arity, x);
            cr_assert_not_null(y, "%s has no public constructor of arity %d", fcg_ops[op].pyname, arity);
            fc_status st = fc_array_status(y);
            if (st == FC_ERR_DTYPE) { /* the op does not take this dtype */
                fc_scope_close(scope);
                continue;
            }
            cr_assert_eq(st, FC_OK, "%s(%s): %s", fcg_ops[op].pyname, dname(d), fc_errmsg(ctx));
            accepted++;
            fc_dtype loop = (fc_dtype)y->loop_dtype, outd = (fc_dtype)y->dtype;
            auto host = host_read(y, &st);
            cr_assert_eq(st, FC_OK, "%s(%s): %s", fcg_ops[op].pyname, dname(d), fc_errmsg(ctx));

            /* the prelude: inputs cast to the loop dtype, the op, stored in the node's dtype */
            size_t lsize = fc_dtype_size(loop), osize = fc_dtype_size(outd);
            std::vector<std::vector<unsigned char>> lin(3, std::vector<unsigned char>(n * 16));
            void *lp[3] = {lin[0].data(), lin[1].data(), lin[2].data()};
            for (int k = 0; k < arity; k++) prelude_convert(t, cols[k].data(), loop, lp[k], n);
            if (op == FCG_OP_WHERE) memcpy(lp[0], cond.data(), n);
            std::vector<unsigned char> mine(n * osize, 0x5A);
            std::string err = runners[op](loop, outd, arity, lp, mine.data(), n);
            cr_expect(err.empty(), "%s, loop dtype %s -> %s: %s", fcg_ops[op].pyname, dname(loop),
                      dname(outd), err.c_str());
            if (!err.empty()) {
                fc_scope_close(scope);
                continue;
            }
            int bad = 0;
            for (size_t i = 0; i < n && bad < 4; i++) {
                if (same_element((fcg_op)op, loop, outd, &host[i * osize], &mine[i * osize], lp, i)) continue;
                bad++;
                std::string args;
                for (int k = 0; k < arity; k++)
                    args += (k ? ", " : "") + hex((op == FCG_OP_WHERE && k == 0) ? &cond[i] : &lin[k][i * lsize],
                                                  (op == FCG_OP_WHERE && k == 0) ? 1 : lsize);
                cr_expect(false, "%s over %s (from %s inputs), element %zu: inputs (%s) in %s; host %s, prelude %s",
                          fcg_ops[op].pyname, dname(loop), dname(d), i, args.c_str(), dname(loop),
                          hex(&host[i * osize], osize).c_str(), hex(&mine[i * osize], osize).c_str());
            }
            checked++;
            fc_scope_close(scope);
        }
        cr_expect_gt(accepted, 0, "%s took no dtype at all", fcg_ops[op].pyname);
    }
    cr_expect_gt(checked, 20 / arity, "too few (op, dtype) pairs checked: %d", checked);
    fc_ctx_destroy(ctx);
}

Test(prelude, unary_ops) { check_ops(1); }
Test(prelude, binary_ops) { check_ops(2); }
Test(prelude, ternary_ops) { check_ops(3); }

/* Integer power with a negative exponent: an error on the host, 0 from the prelude. */
Test(prelude, integer_negative_power) {
    fc_ctx *ctx = tu_host_ctx();
    int32_t a[2] = {3, -2}, b[2] = {2, -1};
    fc_array *y = fc_pow(fc_from_host(ctx, FC_I32, shape1(2), a), fc_from_host(ctx, FC_I32, shape1(2), b));
    int32_t out[2];
    cr_expect_eq(fc_read(y, out, 0, 2), FC_ERR_VALUE);
    cr_expect_eq(fcx_pow(3, 2), 9);
    cr_expect_eq(fcx_pow(-2, -1), 0);
    cr_expect_eq(fcx_pow((signed char)2, (signed char)7), (signed char)-128);
    cr_expect_eq(fcx_pow(0ull, 0ull), 1ull);
    fc_release(y);
    fc_ctx_destroy(ctx);
}

/* Every pair of dtypes, through fc_cast and through fcx_cast_<to>. */
Test(prelude, casts) {
    fc_ctx *ctx = tu_host_ctx();
    std::mt19937_64 rng(77);
    for (int s = 0; s < FC_DTYPE_COUNT; s++) {
        fc_dtype from = dtype_at(s);
        std::vector<val> v = specials(from, true);
        for (int r = 0; r < 300; r++) v.push_back(random_val(from, rng));
        if (fcg_is_inexact(from)) /* beyond every integer range, and near the u64 / i64 edges */
            for (double x : {1e19, -1e19, 0x1p63, -0x1p63, 0x1p64, 1.8e19, 4294967296.5, -129.9, 65519.0, 65520.0})
                v.push_back(R(x, -x));
        size_t n = v.size(), ss = fc_dtype_size(from);
        std::vector<unsigned char> src(n * ss);
        for (size_t i = 0; i < n; i++) encode(from, v[i], &src[i * ss]);
        for (int d = 0; d < FC_DTYPE_COUNT; d++) {
            fc_dtype to = dtype_at(d);
            fc_scope *scope = fc_scope_open(ctx);
            fc_array *y = fc_cast(fc_from_host(ctx, from, shape1((int64_t)n), src.data()), to);
            fc_status st;
            auto host = host_read(y, &st);
            cr_assert_eq(st, FC_OK, "cast %s -> %s: %s", dname(s), dname(d), fc_errmsg(ctx));
            size_t ds = fc_dtype_size(to);
            std::vector<unsigned char> mine(n * ds, 0x5A);
            prelude_convert(from, src.data(), to, mine.data(), n);
            int bad = 0;
            for (size_t i = 0; i < n && bad < 4; i++) {
                if (same_element(FCG_OP_CAST, to, to, &host[i * ds], &mine[i * ds], NULL, i)) continue;
                bad++;
                cr_expect(false, "cast %s -> %s of %s: host %s, prelude %s", dname(s), dname(d),
                          hex(&src[i * ss], ss).c_str(), hex(&host[i * ds], ds).c_str(),
                          hex(&mine[i * ds], ds).c_str());
            }
            fc_scope_close(scope);
        }
    }
    fc_ctx_destroy(ctx);
}

/* f16 and bf16 against graph/dtype.c: every bit pattern loads to the same float; stores of
 * those floats, of the midpoints between neighbours (ties) and of the floats just beside the
 * midpoints round the same way. */
Test(prelude, half_conversions) {
    int bad = 0;
    for (unsigned h = 0; h < 65536 && bad < 8; h++) {
        fcx_t_f16 p = {(unsigned short)h};
        fcx_t_bf16 q = {(unsigned short)h};
        float f = fcx_load_f16(&p), g = fcx_load_bf16(&q), rf = fcg_f16_to_f32((uint16_t)h),
              rg = fcg_bf16_to_f32((uint16_t)h);
        if (memcmp(&f, &rf, 4) || memcmp(&g, &rg, 4)) {
            bad++;
            cr_expect(false, "load of 0x%04x: f16 %a (dtype.c %a), bf16 %a (dtype.c %a)", h, f, rf, g, rg);
        }
        float next_f = fcg_f16_to_f32((uint16_t)(h + 1)), next_g = fcg_bf16_to_f32((uint16_t)(h + 1));
        float cand[] = {rf, rg, 0.5f * rf + 0.5f * next_f, 0.5f * rg + 0.5f * next_g,
                        std::nextafter(0.5f * rf + 0.5f * next_f, 0.0f),
                        std::nextafter(0.5f * rf + 0.5f * next_f, INFINITY),
                        std::nextafter(0.5f * rg + 0.5f * next_g, 0.0f),
                        std::nextafter(0.5f * rg + 0.5f * next_g, INFINITY)};
        for (float c : cand) {
            fcx_t_f16 sp;
            fcx_t_bf16 sq;
            fcx_store_f16(&sp, c);
            fcx_store_bf16(&sq, c);
            if (sp.bits != fcg_f32_to_f16(c) || sq.bits != fcg_f32_to_bf16(c)) {
                bad++;
                cr_expect(false, "store of %a: f16 0x%04x (dtype.c 0x%04x), bf16 0x%04x (dtype.c 0x%04x)",
                          c, sp.bits, fcg_f32_to_f16(c), sq.bits, fcg_f32_to_bf16(c));
            }
        }
    }
    std::mt19937_64 rng(16);
    for (int i = 0; i < 1000000 && bad < 8; i++) { /* random float bit patterns */
        uint32_t u = (uint32_t)rng();
        float c;
        memcpy(&c, &u, 4);
        if (fcx_f32_to_f16(c) != fcg_f32_to_f16(c) || fcx_f32_to_bf16(c) != fcg_f32_to_bf16(c)) {
            bad++;
            cr_expect(false, "store of bits 0x%08x differs from dtype.c", u);
        }
    }
    cr_expect_eq(bad, 0);
}

/* The device's conversion instructions (cvt.rn.f16.f32, cvt.rn.bf16.f32) are IEEE
 * round-to-nearest-even; the prelude uses them wherever its integer routines (the host's
 * rounding) give the same bits. That holds when the integer routines are round-to-nearest-even
 * themselves, which this checks against rne16 below, written apart from them: the quantum of
 * the value's binade (at least the format's smallest subnormal), rint in double (exact: a
 * float and its scaled copy fit), and overflow to inf from the format's largest finite value
 * plus half an ulp. Inputs: for every 16-bit pattern its float, the midpoint to the next one
 * (a tie) and the floats on both sides of it; 2^20 random float bit patterns; specials. The
 * cast of a float (an f16 op's rounding) must equal the exact double routine of the same
 * value, which is what fcx_cast_f16 computed before it used the instruction, NaN included.
 * FCX_EXHAUSTIVE=1 runs all 2^32 floats instead of the random ones (about a minute). */
static uint16_t rne16(float f, int mant, int emin, double max_finite, uint16_t inf) {
    double a = std::fabs((double)f);
    int e;
    std::frexp(a, &e); /* a = m 2^e, m in [0.5, 1) */
    double q = std::ldexp(1.0, std::max(e - 1, emin) - mant), r = std::rint(a / q) * q;
    uint16_t sign = std::signbit(f) ? 0x8000u : 0;
    if (r > max_finite) return sign | inf;
    float rf = (float)r; /* exact: r is a value of the 16-bit format */
    uint32_t u;
    memcpy(&u, &rf, 4);
    if (mant == 7) return (uint16_t)(sign | (u >> 16));
    if (r < 0x1p-14) return (uint16_t)(sign | (uint16_t)(r * 0x1p24)); /* subnormal f16 */
    return (uint16_t)(sign | (((u >> 23) - 112) << 10) | ((u >> 13) & 0x3ffu));
}

static int check_rounding(float c) {
    uint32_t u;
    memcpy(&u, &c, 4);
    uint16_t h = fcx_f32_to_f16(c), b = fcx_f32_to_bf16(c);
    float cast = fcx_cast_f16(c), exact = fcx_f16_to_f32(fcx_f64_to_f16((double)c));
    if (memcmp(&cast, &exact, 4)) return 1;
    if (c != c) return 0; /* NaN: half_conversions checks the integer routines' NaN bits */
    if (h != rne16(c, 10, -14, 65504.0, 0x7c00u) || fcx_rn_f16(c) != h) return 2;
    if (b != rne16(c, 7, -126, 0x1.fep127, 0x7f80u) || fcx_rn_bf16(c) != b) return 3;
    return 0;
}

Test(prelude, half_rounding_is_rne) {
    long bad = 0, n = 0;
    auto check = [&](float c) {
        int why = check_rounding(c);
        n++;
        if (why && bad++ < 8) {
            uint32_t u;
            memcpy(&u, &c, 4);
            cr_expect(false, "float bits 0x%08x: %s", u,
                      why == 1 ? "cast to f16 differs from the double routine"
                      : why == 2 ? "f16 rounding is not round-to-nearest-even"
                                 : "bf16 rounding is not round-to-nearest-even");
        }
    };
    for (unsigned p = 0; p < 65536; p++) {
        float f16v = fcg_f16_to_f32((uint16_t)p), f16n = fcg_f16_to_f32((uint16_t)(p + 1));
        float bv = fcg_bf16_to_f32((uint16_t)p), bn = fcg_bf16_to_f32((uint16_t)(p + 1));
        for (float m : {f16v, bv, (float)(0.5 * f16v + 0.5 * f16n), (float)(0.5 * bv + 0.5 * bn)}) {
            check(m);
            check(std::nextafter(m, 0.0f));
            check(std::nextafter(m, INFINITY));
            check(std::nextafter(m, -INFINITY));
        }
    }
    for (float s : {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, 65504.0f, 65519.99f, 65520.0f,
                    0x1p-24f, 0x1p-25f, 0x1.000002p-25f, 0x1p-149f, 0x1p-126f, 0x1.fep127f, FLT_MAX})
        check(s), check(-s);
    if (getenv("FCX_EXHAUSTIVE")) {
        for (uint64_t u = 0; u < (1ull << 32); u++) {
            uint32_t v = (uint32_t)u;
            float c;
            memcpy(&c, &v, 4);
            check(c);
        }
    } else {
        std::mt19937 rng(13);
        for (int i = 0; i < (1 << 20); i++) {
            uint32_t v = (uint32_t)rng();
            float c;
            memcpy(&c, &v, 4);
            check(c);
        }
    }
    cr_expect_eq(bad, 0, "%ld of %ld floats", bad, n);
}

/* 16-bit pairs (issue 13): each op of the elementwise vector step's pairs against the scalar
 * path it stands for. + - * (and so square): the host build's packed instruction is its
 * definition (the exact result, in double, rounded once to the format), the scalar path is
 * NumPy's (the float op, rounded to the format): equal bits say that rounding through f32
 * first changes nothing, the innocuous double rounding the pair step relies on. Every 16-bit
 * pattern is the first operand, in both lanes, against a sample of second operands: the
 * special values (zeros, infinities, NaNs, the largest and smallest values), the patterns
 * around 1 (ties: 1 + ulp/2 multiples), random patterns of every class. Then the unpacks,
 * packs, joins, splats and bit moves over every pattern. A NaN meets any NaN (the
 * instructions' NaN is canonical). FCX_EXHAUSTIVE=1: every pair of patterns (minutes). */
template <bool BF> static uint16_t scalar_op(int op, uint16_t a, uint16_t b) {
    float x = BF ? fcx_bf16_to_f32(a) : fcx_f16_to_f32(a), y = BF ? fcx_bf16_to_f32(b) : fcx_f16_to_f32(b);
    float r = op == 0 ? fcx_add(x, y) : op == 1 ? fcx_sub(x, y) : fcx_mul(x, y);
    return BF ? fcx_f32_to_bf16(fcx_cast_bf16(r)) : fcx_f32_to_f16(fcx_cast_f16(r));
}
template <bool BF> static bool nan16(unsigned h) { return (h & 0x7fffu) > (BF ? 0x7f80u : 0x7c00u); }
template <bool BF> static bool same16(unsigned got, unsigned want) {
    return got == want || (nan16<BF>(got) && nan16<BF>(want));
}
template <bool BF> static fcx_h2 pair_op(int op, fcx_h2 a, fcx_h2 b) {
    if (BF) return op == 0 ? fcx_add2_bf16(a, b) : op == 1 ? fcx_sub2_bf16(a, b) : fcx_mul2_bf16(a, b);
    return op == 0 ? fcx_add2_f16(a, b) : op == 1 ? fcx_sub2_f16(a, b) : fcx_mul2_f16(a, b);
}

template <bool BF> static long check_pair_arith(const std::vector<uint16_t> &sample, long *n) {
    long bad = 0;
    for (int op = 0; op < 3; op++)
        for (unsigned a = 0; a < 65536; a++)
            for (size_t j = 0; j + 1 < sample.size(); j += 2) {
                uint16_t b0 = sample[j], b1 = sample[j + 1], a1 = (uint16_t)(a ^ 0x8000u);
                fcx_h2 r = pair_op<BF>(op, fcx_h2{a | (unsigned)a1 << 16}, fcx_h2{b0 | (unsigned)b1 << 16});
                uint16_t w0 = scalar_op<BF>(op, (uint16_t)a, b0), w1 = scalar_op<BF>(op, a1, b1);
                *n += 2;
                if (!same16<BF>(r.bits & 0xffffu, w0) || !same16<BF>(r.bits >> 16, w1)) {
                    if (bad++ < 8)
                        cr_expect(false, "%s %s of 0x%04x, 0x%04x | 0x%04x, 0x%04x: pair 0x%08x, scalar 0x%04x 0x%04x",
                                  BF ? "bf16" : "f16", op == 0 ? "add" : op == 1 ? "subtract" : "multiply",
                                  a, b0, a1, b1, r.bits, w0, w1);
                }
            }
    return bad;
}

template <bool BF> static std::vector<uint16_t> pair_sample(bool every) {
    std::vector<uint16_t> s;
    if (every) {
        for (unsigned b = 0; b < 65536; b++) s.push_back((uint16_t)b);
        return s;
    }
    const unsigned one = BF ? 0x3f80u : 0x3c00u, inf = BF ? 0x7f80u : 0x7c00u;
    for (unsigned v : {0u, one, inf, inf | 1u, inf | (inf >> 1 & ~inf) /* quiet */, inf - 1u, 0x0001u,
                       0x0002u, BF ? 0x007fu : 0x03ffu, BF ? 0x0080u : 0x0400u, one + 1u, one - 1u,
                       BF ? 0x4b01u : 0x6801u /* 2^p + 1: sums with 1 tie */})
        s.push_back((uint16_t)v), s.push_back((uint16_t)(v | 0x8000u));
    for (unsigned d = 2; d < 64; d += 5) s.push_back((uint16_t)(one + d)), s.push_back((uint16_t)(one - d));
    std::mt19937 rng(1316);
    while (s.size() < 256) s.push_back((uint16_t)rng());
    return s;
}

Test(prelude, half_pairs_match_the_scalar_path) {
    bool every = getenv("FCX_EXHAUSTIVE") != nullptr;
    long n = 0, bad = check_pair_arith<false>(pair_sample<false>(every), &n);
    bad += check_pair_arith<true>(pair_sample<true>(every), &n);
    cr_expect_eq(bad, 0, "%ld of %ld lanes of + - * differ from the scalar path", bad, n);
    /* loads and stores keep element 0 in the low half; unpacks, joins, splats, bit moves */
    long bad2 = 0;
    for (unsigned h = 0; h < 65536; h++) {
        uint16_t g = (uint16_t)(h * 40503u + 7u); /* another pattern for the other lane */
        fcx_t_f16 m[2] = {{(uint16_t)h}, {g}}, back[2];
        fcx_h2 p = fcx_ld2_f16(m), q = fcx_h2{g | h << 16};
        fcx_st2_f16(back, p);
        bool ok = p.bits == (h | (unsigned)g << 16) && back[0].bits == h && back[1].bits == g;
        /* exact unpacks: the loads' bits; fast ones: the same value, NaN a NaN */
        float lx = fcx_lox_f16(p), hx = fcx_hix_f16(q), ld = fcx_f16_to_f32(h), lf = fcx_lo_f16(p);
        ok = ok && !memcmp(&lx, &ld, 4) && !memcmp(&hx, &ld, 4) && (nan16<false>(h) ? lf != lf : !memcmp(&lf, &ld, 4));
        float bx = fcx_lox_bf16(p), bh = fcx_hi_bf16(q), bd = fcx_bf16_to_f32(h);
        ok = ok && !memcmp(&bx, &bd, 4) && !memcmp(&bh, &bd, 4);
        /* bit moves: the scalar path's values (NaN: a NaN) */
        for (int bf = 0; bf < 2; bf++) {
            float v = bf ? bd : ld;
            unsigned neg = bf ? fcx_f32_to_bf16(fcx_cast_bf16(fcx_negative(v))) : fcx_f32_to_f16(fcx_cast_f16(fcx_negative(v)));
            unsigned ab = bf ? fcx_f32_to_bf16(fcx_cast_bf16(fcx_abs(v))) : fcx_f32_to_f16(fcx_cast_f16(fcx_abs(v)));
            bool nan = bf ? nan16<true>(h) : nan16<false>(h);
            ok = ok && (nan || ((fcx_neg2(p).bits & 0xffffu) == neg && (fcx_abs2(p).bits & 0xffffu) == ab));
            ok = ok && (fcx_neg2(p).bits >> 16) == (g ^ 0x8000u) && (fcx_abs2(q).bits >> 16) == (h & 0x7fffu);
        }
        fcx_h2 w = fcx_where2(true, false, p, q);
        ok = ok && w.bits == (h | h << 16) && fcx_where2(false, true, p, q).bits == (g | (unsigned)g << 16);
        /* joins and splats of values of the format (a quiet NaN keeps its bits) */
        if (!nan16<false>(h) || (h & 0x200u)) {
            ok = ok && fcx_join_f16(ld, 1.0f).bits == (h | 0x3c00u << 16) && fcx_splat_f16(ld).bits == (h | h << 16);
        }
        if (!nan16<true>(h) || (h & 0x40u)) {
            ok = ok && fcx_join_bf16(2.0f, bd).bits == (0x4000u | h << 16) && fcx_splat_bf16(bd).bits == (h | h << 16);
        }
        if (!ok && bad2++ < 8) cr_expect(false, "pair moves of 0x%04x (other lane 0x%04x)", h, g);
    }
    /* packs of floats: each lane rounded once, as the scalar store (NaN: a NaN); from double,
     * the exact routine */
    std::mt19937 rng(2113);
    for (int i = 0; i < (1 << 18); i++) {
        uint32_t u = (uint32_t)rng(), v = (uint32_t)rng();
        float a, b;
        memcpy(&a, &u, 4);
        memcpy(&b, &v, 4);
        fcx_h2 f = fcx_pack_f16(a, b), bf = fcx_pack_bf16(a, b);
        bool ok = same16<false>(f.bits & 0xffffu, fcx_f32_to_f16(a)) && same16<false>(f.bits >> 16, fcx_f32_to_f16(b)) &&
                  same16<true>(bf.bits & 0xffffu, fcx_f32_to_bf16(a)) && same16<true>(bf.bits >> 16, fcx_f32_to_bf16(b));
        double da = (double)a * (1.0 + 0x1p-40), db = (double)b;
        fcx_h2 fd = fcx_pack_f16(da, db);
        ok = ok && same16<false>(fd.bits & 0xffffu, fcx_f64_to_f16(da)) && same16<false>(fd.bits >> 16, fcx_f64_to_f16(db));
        if (!ok && bad2++ < 8) cr_expect(false, "packs of floats 0x%08x, 0x%08x", u, v);
    }
    cr_expect_eq(bad2, 0);
}

/* Random draws: Philox4x32-10's known answers (Random123's tests/kat_vectors, "philox4x32 10"),
 * the prelude's layout functions against graph.h's, and the host backend's draws. */
Test(prelude, random_draws) {
    static const uint32_t kat[3][10] = {
        {0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
        {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x408f276d,
         0x41c83b0e, 0xa20bc7c6, 0x6d5451fd},
        {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, 0xd16cfe09,
         0x94fdcceb, 0x5001e420, 0x24126ea1}};
    for (const auto &v : kat) {
        uint32_t host[4], dev[4];
        fcg_philox4x32_10(v, v + 4, host);
        fcx_philox4x32_10(v[0] | (uint64_t)v[1] << 32, v[2] | (uint64_t)v[3] << 32,
                          v[4] | (uint64_t)v[5] << 32, (unsigned *)dev);
        for (int k = 0; k < 4; k++) {
            cr_assert_eq(host[k], v[6 + k], "graph.h's Philox word %d: 0x%08x", k, host[k]);
            cr_assert_eq(dev[k], v[6 + k], "the prelude's Philox word %d: 0x%08x", k, dev[k]);
        }
    }
    for (unsigned long long seed : {0ull, 1ull, 42ull, 0xdeadbeefcafef00dull})
        for (unsigned long long stream : {0ull, 3ull, 0x123456789abcull})
            for (unsigned long long i = 0; i < 2000; i++) {
                cr_assert_eq(fcx_rand_uniform_f16(seed, stream, i), fcg_random_uniform_at(FC_F16, seed, stream, i));
                cr_assert_eq(fcx_rand_uniform_bf16(seed, stream, i), fcg_random_uniform_at(FC_BF16, seed, stream, i));
                cr_assert_eq(fcx_rand_uniform_f32(seed, stream, i), fcg_random_uniform_at(FC_F32, seed, stream, i));
                cr_assert_eq(fcx_rand_uniform_f64(seed, stream, i), fcg_random_uniform_at(FC_F64, seed, stream, i));
                cr_assert_eq(fcx_rand_normal_f32(seed, stream, i), fcg_random_normal_at(FC_F32, seed, stream, i));
                cr_assert_eq(fcx_rand_normal_f64(seed, stream, i), fcg_random_normal_at(FC_F64, seed, stream, i));
                for (unsigned long long range : {1ull, 7ull, 0x100000000ull, 0xfffffffffffffffull, ~0ull}) {
                    cr_assert_eq(fcx_rand_integer(false, 5ull, range, seed, stream, i),
                                 fcg_random_integer_at(false, 5, range, seed, stream, i));
                    cr_assert_eq(fcx_rand_integer(true, 5ull, range, seed, stream, i),
                                 fcg_random_integer_at(true, 5, range, seed, stream, i));
                }
            }
    fc_ctx *ctx = tu_host_ctx();
    const int64_t n = 3000;
    for (int mode : {FCG_RANDOM_UNIFORM, FCG_RANDOM_NORMAL})
        for (fc_dtype t : {FC_F16, FC_BF16, FC_F32, FC_F64, FC_C64, FC_C128}) {
            fc_array *y = fcg_random_draw(ctx, "draw", mode, t, shape1(n), 1234567, 9, 0, 0);
            fc_status st;
            auto host = host_read(y, &st);
            cr_assert_eq(st, FC_OK, "%s", fc_errmsg(ctx));
            size_t size = fc_dtype_size(t);
            std::vector<unsigned char> mine(host.size(), 0x5A);
            auto draw = [&](fc_dtype r, unsigned long long i) {
                bool normal = mode == FCG_RANDOM_NORMAL;
                switch (r) {
                case FC_F16: return normal ? fcx_rand_normal_f16(1234567ull, 9ull, i) : fcx_rand_uniform_f16(1234567ull, 9ull, i);
                case FC_BF16: return normal ? fcx_rand_normal_bf16(1234567ull, 9ull, i) : fcx_rand_uniform_bf16(1234567ull, 9ull, i);
                case FC_F32: return normal ? fcx_rand_normal_f32(1234567ull, 9ull, i) : fcx_rand_uniform_f32(1234567ull, 9ull, i);
                default: return normal ? fcx_rand_normal_f64(1234567ull, 9ull, i) : fcx_rand_uniform_f64(1234567ull, 9ull, i);
                }
            };
            for (int64_t i = 0; i < n; i++) {
                void *p = &mine[(size_t)i * size];
                unsigned long long k = (unsigned long long)i;
                switch (t) {
                case FC_F16: fcx_store_f16((fcx_t_f16 *)p, fcx_cast_f16(draw(t, k))); break;
                case FC_BF16: fcx_store_bf16((fcx_t_bf16 *)p, fcx_cast_bf16(draw(t, k))); break;
                case FC_F32: fcx_store_f32((fcx_t_f32 *)p, fcx_cast_f32(draw(t, k))); break;
                case FC_F64: fcx_store_f64((fcx_t_f64 *)p, draw(t, k)); break;
                case FC_C64: fcx_store_c64((fcx_t_c64 *)p, fcx_t_c64{fcx_cast_f32(draw(FC_F32, 2 * k)), fcx_cast_f32(draw(FC_F32, 2 * k + 1))}); break;
                default: fcx_store_c128((fcx_t_c128 *)p, fcx_t_c128{draw(FC_F64, 2 * k), draw(FC_F64, 2 * k + 1)}); break;
                }
            }
            cr_expect(memcmp(host.data(), mine.data(), host.size()) == 0, "%s draw of %s differs",
                      mode == FCG_RANDOM_NORMAL ? "normal" : "uniform", fc_dtype_name(t));
            fc_release(y);
        }
    for (fc_dtype t : {FC_I8, FC_U8, FC_I16, FC_U16, FC_I32, FC_U32, FC_I64, FC_U64}) {
        bool wide = fc_dtype_size(t) == 8, sgn = fcg_is_sint(t);
        int64_t lo = sgn ? -100 : 3, hi = sgn ? 27 : 120;
        fc_array *y = fcg_random_draw(ctx, "draw", FCG_RANDOM_INTEGERS, t, shape1(n), 77, 1, lo, hi);
        fc_status st;
        auto host = host_read(y, &st);
        cr_assert_eq(st, FC_OK, "%s", fc_errmsg(ctx));
        size_t size = fc_dtype_size(t);
        for (int64_t i = 0; i < n; i++) {
            unsigned long long v = fcx_rand_integer(wide, (unsigned long long)lo,
                                                    (unsigned long long)(hi - lo), 77ull, 1ull,
                                                    (unsigned long long)i);
            int64_t got = 0;
            memcpy(&got, &host[(size_t)i * size], size);
            if (sgn && size < 8) got = (got << (64 - 8 * size)) >> (64 - 8 * size);
            int64_t want = (int64_t)v;
            cr_assert_eq(got, want, "integers %s element %lld", fc_dtype_name(t), (long long)i);
            cr_assert(want >= lo && want < hi);
        }
        fc_release(y);
    }
    fc_ctx_destroy(ctx);
}

/* The vector step's draws: fcx_rand_<draw>_span<N> (each Philox block once for the elements
 * that share it) gives element q N + e what the one-element draw and graph.h give, for steps
 * of 2 to 16 elements (half a block to four): about 3 million elements with the f32 normals
 * after them. */
template <int N> static void check_spans(unsigned long long seed, unsigned long long stream,
                                         unsigned long long q0, unsigned long long nq) {
    for (unsigned long long q = q0; q < q0 + nq; q++) {
        const unsigned long long i0 = q * N;
        float nf[N];
        double u16[N], ub16[N], u32[N], u64[N], n64[N];
        unsigned long long narrow[N], wide[N];
        fcx_rand_normal_f32_span<N>(seed, stream, q, nf);
        fcx_rand_uniform_f16_span<N>(seed, stream, q, u16);
        fcx_rand_uniform_bf16_span<N>(seed, stream, q, ub16);
        fcx_rand_uniform_f32_span<N>(seed, stream, q, u32);
        fcx_rand_uniform_f64_span<N>(seed, stream, q, u64);
        fcx_rand_normal_f64_span<N>(seed, stream, q, n64);
        fcx_rand_integer_span<N, false>(3ull, 1000003ull, seed, stream, q, narrow);
        fcx_rand_integer_span<N, true>(3ull, ~0ull - 5, seed, stream, q, wide);
        for (int e = 0; e < N; e++) {
            const unsigned long long i = i0 + e;
            float f = nf[e], g = (float)fcg_random_normal_at(FC_F32, seed, stream, i);
            cr_assert(memcmp(&f, &g, sizeof f) == 0 && f == fcx_rand_normal_f32(seed, stream, i),
                      "normal f32 span<%d> element %llu: %a, graph.h %a", N, i, f, g);
            cr_assert_eq(u16[e], fcg_random_uniform_at(FC_F16, seed, stream, i));
            cr_assert_eq(ub16[e], fcg_random_uniform_at(FC_BF16, seed, stream, i));
            cr_assert_eq(u32[e], fcg_random_uniform_at(FC_F32, seed, stream, i));
            cr_assert_eq(u64[e], fcg_random_uniform_at(FC_F64, seed, stream, i));
            cr_assert_eq(n64[e], fcx_rand_normal_f64(seed, stream, i));
            cr_assert_eq(narrow[e], fcg_random_integer_at(false, 3, 1000003, seed, stream, i));
            cr_assert_eq(wide[e], fcg_random_integer_at(true, 3, ~0ull - 5, seed, stream, i));
        }
    }
}
Test(prelude, random_draw_spans) {
    for (unsigned long long seed : {0ull, 0xdeadbeefcafef00dull})
        for (unsigned long long stream : {0ull, 0x123456789abcull}) {
            check_spans<2>(seed, stream, 0, 40000);
            check_spans<4>(seed, stream, 0, 40000);
            check_spans<8>(seed, stream, 1ull << 40, 20000);
            check_spans<16>(seed, stream, (1ull << 59) - 5000, 5000); /* blocks past 2^32 */
        }
    /* the f32 normals of a million more indices: the prelude's and graph.h's bits agree */
    for (unsigned long long i = 0; i < 1000000; i++) {
        float f = fcx_rand_normal_f32(42ull, 7ull, i), g = (float)fcg_random_normal_at(FC_F32, 42, 7, i);
        cr_assert(memcmp(&f, &g, sizeof f) == 0, "normal f32 element %llu: %a, graph.h %a", i, f, g);
    }
}

/* The reduction helpers: max / min folded with fcx_maximum / fcx_minimum from the identity,
 * argmax / argmin pairs combined in sequence and as a tree, against the host's reductions. */
template <class L> static void check_reductions(fc_ctx *ctx, fc_dtype t, std::mt19937_64 &rng) {
    using C = typename L::C;
    const int n = 61;
    std::vector<val> s = specials(t, true);
    for (int rep = 0; rep < 40; rep++) {
        std::vector<unsigned char> src(n * fc_dtype_size(t));
        for (int i = 0; i < n; i++) { /* few distinct values: ties; some specials: NaN */
            val v = (rng() % 5 == 0) ? s[rng() % s.size()] : random_val(t, rng);
            if (rep % 2 && fcg_is_inexact(t) && v.re != v.re) v = R(1.0, 2.0); /* half without NaN */
            encode(t, v, &src[(size_t)i * fc_dtype_size(t)]);
        }
        const typename L::S *p = (const typename L::S *)src.data();
        C mx = fcx_identity_max<C>(), mn = fcx_identity_min<C>();
        C av = L::load(p), iv = L::load(p);
        long long ai = 0, ii = 0;
        for (int i = 0; i < n; i++) {
            mx = fcx_maximum(mx, L::load(p + i));
            mn = fcx_minimum(mn, L::load(p + i));
            if (i) {
                fcx_argmax_combine(&av, &ai, L::load(p + i), (long long)i);
                fcx_argmin_combine(&iv, &ii, L::load(p + i), (long long)i);
            }
        }
        /* a tree: pairs (i, i + h) combined bottom-up in a different order */
        C tv[n], tw[n]; /* not std::vector: vector<bool> has no element addresses */
        long long ti[n], tj[n];
        for (int i = 0; i < n; i++) {
            tv[i] = tw[i] = L::load(p + i);
            ti[i] = tj[i] = i;
        }
        for (int h = 1; h < n; h *= 2)
            for (int i = 0; i + h < n; i += 2 * h) {
                fcx_argmax_combine(&tv[i + h], &ti[i + h], tv[i], ti[i]); /* the later one first */
                tv[i] = tv[i + h];
                ti[i] = ti[i + h];
                fcx_argmin_combine(&tw[i + h], &tj[i + h], tw[i], tj[i]);
                tw[i] = tw[i + h];
                tj[i] = tj[i + h];
            }
        fc_scope *scope = fc_scope_open(ctx);
        fc_array *x = fc_from_host(ctx, t, shape1(n), src.data());
        fc_array *r[4] = {fc_argmax(x, FC_AXIS_NONE, false), fc_argmin(x, FC_AXIS_NONE, false),
                          fc_max(x, fc_axes{-1, {0}}, false), fc_min(x, fc_axes{-1, {0}}, false)};
        int64_t amax, amin;
        fc_status st;
        cr_assert_eq(fc_read(r[0], &amax, 0, 1), FC_OK, "%s", fc_errmsg(ctx));
        cr_assert_eq(fc_read(r[1], &amin, 0, 1), FC_OK, "%s", fc_errmsg(ctx));
        cr_expect_eq(ai, amax, "argmax %s: prelude %lld, host %lld", fc_dtype_name(t), ai, (long long)amax);
        cr_expect_eq(ii, amin, "argmin %s: prelude %lld, host %lld", fc_dtype_name(t), ii, (long long)amin);
        cr_expect_eq(ti[0], amax, "argmax %s as a tree: prelude %lld, host %lld", fc_dtype_name(t), ti[0], (long long)amax);
        cr_expect_eq(tj[0], amin, "argmin %s as a tree: prelude %lld, host %lld", fc_dtype_name(t), tj[0], (long long)amin);
        size_t size = fc_dtype_size(t);
        auto hmax = host_read(r[2], &st);
        cr_assert_eq(st, FC_OK);
        auto hmin = host_read(r[3], &st);
        cr_assert_eq(st, FC_OK);
        std::vector<unsigned char> m1(size), m2(size);
        L::store((typename L::S *)m1.data(), mx);
        L::store((typename L::S *)m2.data(), mn);
        cr_expect(same_element(FCG_OP_MAX, t, t, hmax.data(), m1.data(), NULL, 0),
                  "max %s: host %s, prelude %s", fc_dtype_name(t), hex(hmax.data(), size).c_str(), hex(m1.data(), size).c_str());
        cr_expect(same_element(FCG_OP_MIN, t, t, hmin.data(), m2.data(), NULL, 0),
                  "min %s: host %s, prelude %s", fc_dtype_name(t), hex(hmin.data(), size).c_str(), hex(m2.data(), size).c_str());
        fc_scope_close(scope);
    }
}

Test(prelude, reductions) {
    fc_ctx *ctx = tu_host_ctx();
    std::mt19937_64 rng(99);
    for (int d = 0; d < FC_DTYPE_COUNT; d++)
        with_dtype(dtype_at(d), [&](auto l) { check_reductions<decltype(l)>(ctx, dtype_at(d), rng); });
    cr_expect(fcx_identity_sum<fcx_t_c64>() == (fcx_t_c64{0, 0}));
    cr_expect(fcx_identity_prod<fcx_t_c128>() == (fcx_t_c128{1, 0}));
    cr_expect_eq(fcx_identity_prod<signed char>(), 1);
    cr_expect_eq(fcx_identity_max<short>(), -32768);
    cr_expect_eq(fcx_identity_min<unsigned>(), 4294967295u);
    cr_expect_eq(fcx_identity_max<bool>(), false);
    cr_expect_eq(fcx_identity_min<bool>(), true);
    cr_expect(std::isinf(fcx_identity_min<float>()) && fcx_identity_min<float>() > 0);
    fc_ctx_destroy(ctx);
}

/* fcx_div_recip (a row kernel's a / b over a row constant b, through b's double reciprocal)
 * gives the division's bits: every pair of special values, quotients that are exact ties
 * below FLT_MIN (the fallback's case: without it 3 2^-149 / 6 rounds up), quotients around
 * FLT_MIN and the overflow threshold, and random pairs of all magnitudes. */
Test(prelude, division_by_a_wide_reciprocal) {
    std::vector<float> sp = {0.0f, 1.0f, 3.0f, 6.0f, 0.1f, 1.5f, 7.0f, FLT_MIN, FLT_TRUE_MIN,
                             3 * FLT_TRUE_MIN, FLT_MIN - FLT_TRUE_MIN, FLT_MAX, 1e-30f, 1e30f,
                             INFINITY, NAN, 0x1p-126f * 1.5f, 0x1p127f, 0x1.fffffep-1f};
    for (size_t i = 0, n = sp.size(); i < n; i++) sp.push_back(-sp[i]);
    long bad = 0, checked = 0;
    auto check = [&](float a, float b) {
        float want = a / b, got = fcx_div_recip(a, b, fcx_recip_wide(b));
        bool same = std::isnan(want) ? std::isnan(got) : fcx_fbits(want) == fcx_fbits(got);
        if (!same && bad++ < 5)
            cr_log_error("%a / %a: %a, the division %a", (double)a, (double)b, (double)got,
                         (double)want);
        checked++;
    };
    for (float a : sp)
        for (float b : sp) check(a, b);
    for (int n = 1; n < 1 << 12; n += 2) /* a / b = n 2^-150 exactly: ties */
        for (int d = 1; d < 64; d += 2) {
            check(std::ldexp((float)(d * n), -149), (float)(2 * d));
            check(-std::ldexp((float)(d * n), -148), (float)(4 * d));
        }
    std::mt19937_64 rng(13);
    std::uniform_int_distribution<unsigned> bits(0, 0x7f7fffffu);
    for (int i = 0; i < 2000000; i++) {
        float a = fcx_bitsf(bits(rng) | (unsigned)(rng() & 1) << 31), b = fcx_bitsf(bits(rng));
        check(a, b);
        /* the quotient near FLT_MIN or near FLT_MAX */
        float m = std::ldexp(1.0f + (float)(rng() & 0xffffff) * 0x1p-24f, (int)(rng() % 40) - 20);
        check(std::ldexp(m, -126) * b, b);
        check(a, std::ldexp(a, -125) / m);
        check(std::ldexp(m, 127), std::ldexp(1.0f, (int)(rng() % 3)) * m * 0.999999f);
    }
    cr_expect_eq(bad, 0, "%ld of %ld quotients differ from the division", bad, checked);
}

/* ---- NVRTC ------------------------------------------------------------------------------ */

/* Kernels calling every prelude function for every loop dtype the API gives each op, every
 * cast, load, store, random unit and reduction helper; p[k] points at distinct buffers so
 * nothing is dead. 20 calls a kernel: one huge kernel takes NVRTC minutes, one kernel a call
 * several seconds. */
static std::string every_call_kernels(fc_ctx *ctx) {
    std::string k(fcx_prelude_source, fcx_prelude_size);
    int slot = 4;
    char line[512];
    auto ld = [](fc_dtype t, int ptr) {
        return std::string("fcx_load_") + dname(t) + "((const fcx_t_" + dname(t) + " *)p[" +
               std::to_string(ptr) + "] + i)";
    };
    for (int op = 0; op < FCG_OP_COUNT; op++) {
        if (!is_tested_ew(op)) continue;
        bool seen[FC_DTYPE_COUNT] = {false};
        for (int d = 0; d < FC_DTYPE_COUNT; d++) {
            fc_scope *scope = fc_scope_open(ctx);
            int nin = fcg_ops[op].nin;
            fc_array *x[3];
            for (int j = 0; j < nin; j++) x[j] = fc_zeros(ctx, dtype_at(d), shape1(4));
            fc_array *y = make_op((fcg_op)op, nin, x);
            if (y && fc_array_status(y) == FC_OK && !seen[y->loop_dtype]) {
                fc_dtype l = (fc_dtype)y->loop_dtype, o = (fc_dtype)y->dtype;
                seen[l] = true;
                std::string args;
                for (int j = 0; j < nin; j++)
                    args += (j ? ", " : "") + ((op == FCG_OP_WHERE && j == 0) ? ld(FC_BOOL, 0) : ld(l, j));
                snprintf(line, sizeof line, "    fcx_store_%s((fcx_t_%s *)p[%d] + i, fcx_%s(%s));\n",
                         dname(o), dname(o), slot++, loop_fn_name((fcg_op)op, l), args.c_str());
                k += line;
            }
            fc_scope_close(scope);
        }
    }
    for (int s = 0; s < FC_DTYPE_COUNT; s++)
        for (int d = 0; d < FC_DTYPE_COUNT; d++) {
            snprintf(line, sizeof line, "    fcx_store_%s((fcx_t_%s *)p[%d] + i, fcx_cast_%s(%s));\n",
                     dname(d), dname(d), slot++, dname(d), ld(dtype_at(s), 1).c_str());
            k += line;
        }
    for (const char *t : {"f16", "bf16", "f32", "f64"})
        for (const char *fn : {"uniform", "normal"}) {
            snprintf(line, sizeof line, "    fcx_store_%s((fcx_t_%s *)p[%d] + i, fcx_cast_%s(fcx_rand_%s_%s("
                     "(unsigned long long)seed, 3ull, (unsigned long long)i)));\n", t, t, slot++, t, fn, t);
            k += line;
        }
    for (const char *t : {"i8", "u64"}) {
        snprintf(line, sizeof line, "    fcx_store_%s((fcx_t_%s *)p[%d] + i, fcx_cast_%s((long long)fcx_rand_integer("
                 "%s, 5ull, 100ull, (unsigned long long)seed, 3ull, (unsigned long long)i)));\n", t, t,
                 slot++, t, t[0] == 'u' ? "true" : "false");
        k += line;
    }
    for (int d = 0; d < FC_DTYPE_COUNT; d++) {
        const char *t = dname(d);
        snprintf(line, sizeof line,
                 "    { fcx_ct_%s v = fcx_identity_max<fcx_ct_%s>(), w = fcx_identity_min<fcx_ct_%s>(); "
                 "long long a = i, b = i + 1; v = fcx_maximum(v, %s); w = fcx_minimum(w, %s); "
                 "fcx_argmax_combine(&v, &a, %s, b); fcx_argmin_combine(&w, &a, fcx_identity_sum<fcx_ct_%s>(), b); "
                 "fcx_store_%s((fcx_t_%s *)p[%d] + i, fcx_add(v, fcx_identity_prod<fcx_ct_%s>())); "
                 "((long long *)p[2])[i] = a; }\n",
                 t, t, t, ld(dtype_at(d), 1).c_str(), ld(dtype_at(d), 1).c_str(), ld(dtype_at(d), 3).c_str(),
                 t, t, t, slot++, t);
        k += line;
    }
    std::string out(fcx_prelude_source, fcx_prelude_size);
    size_t pos = fcx_prelude_size, count = 0;
    while (pos < k.size()) { /* one statement a line */
        size_t end = k.find('\n', pos) + 1;
        if (count++ % 20 == 0) {
            if (count > 1) out += "}\n";
            out += "extern \"C\" __global__ void every_call" + std::to_string(count / 20) +
                   "(void **p, unsigned long long seed) {\n"
                   "    const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n";
        }
        out.append(k, pos, end - pos);
        pos = end;
    }
    return out + "}\n";
}

static void check_nvrtc(const char *arch) {
    fc_ctx *ctx = tu_host_ctx();
    std::string src = every_call_kernels(ctx);
    cr_assert_eq(strlen(fcx_prelude_source), fcx_prelude_size);
    cr_assert(src.find("fcx_arccosh(") != std::string::npos);
    if (getenv("FCX_DUMP_KERNEL")) { /* to time or inspect it */
        FILE *f = fopen(getenv("FCX_DUMP_KERNEL"), "w");
        if (f) {
            fputs(src.c_str(), f);
            fclose(f);
        }
    }
    fcn_cubin cubin;
    fc_status st = fcn_compile(ctx, src.c_str(), "prelude_test.cu", arch, 0, NULL, 0, &cubin);
    cr_expect_eq(st, FC_OK, "%s: %s", arch, cubin.message ? cubin.message : "(no message)");
    if (st == FC_OK) {
        cr_expect_gt(cubin.size, 1000u);
        cr_expect(cubin.log == NULL || cubin.log[0] == '\0', "%s: NVRTC warns: %s", arch, cubin.log);
    }
    fcn_cubin_free(ctx, &cubin);
    fc_ctx_destroy(ctx);
}

/* sm_75 has no bf16 conversion or arithmetic, nor packed conversions: the prelude's fallbacks,
 * in kernels of their own (the whole every_call source takes seconds a compile) */
Test(prelude, nvrtc_sm75_bf16) {
    fc_ctx *ctx = tu_host_ctx();
    std::string src(fcx_prelude_source, fcx_prelude_size);
    src += "extern \"C\" __global__ void bf16_sm75(fcx_t_bf16 *p, const float *x) {\n"
           "    const int i = threadIdx.x;\n"
           "    fcx_store_bf16(p + i, fcx_cast_bf16(fcx_mul(fcx_load_bf16(p + i), x[i])));\n"
           "}\n";
    /* and the pair step's: bf16 + - * lane by lane, the f16 and bf16 packs without the packed
     * conversions */
    src += "extern \"C\" __global__ void pairs_sm75(fcx_t_bf16 *p, fcx_t_f16 *h) {\n"
           "    const int i = 2 * threadIdx.x;\n"
           "    const fcx_h2 a = fcx_ld2_bf16(p + i), b = fcx_ld2_f16(h + i);\n"
           "    const fcx_h2 c = fcx_sub2_bf16(fcx_mul2_bf16(a, a), fcx_add2_bf16(a, a));\n"
           "    fcx_st2_bf16(p + i, fcx_pack_bf16(fcx_lo_bf16(c) / 3, fcx_hi_bf16(c) / 3));\n"
           "    fcx_st2_f16(h + i, fcx_pack_f16(fcx_lo_f16(b) / 3, fcx_hix_f16(b) / 3));\n"
           "}\n";
    fcn_cubin cubin;
    fc_status st = fcn_compile(ctx, src.c_str(), "prelude_sm75.cu", "sm_75", 0, NULL, 0, &cubin);
    cr_expect_eq(st, FC_OK, "sm_75: %s", cubin.message ? cubin.message : "(no message)");
    if (st == FC_OK) cr_expect(cubin.log == NULL || cubin.log[0] == '\0', "sm_75: NVRTC warns: %s", cubin.log);
    fcn_cubin_free(ctx, &cubin);
    fc_ctx_destroy(ctx);
}
Test(prelude, nvrtc_sm80) { check_nvrtc("sm_80"); }
Test(prelude, nvrtc_sm90) { check_nvrtc("sm_90"); }
