/*
 * codegen/fast_math.cuh - what a kernel of the fast-math tier (include/fusec.h) puts in front of
 * the device prelude (codegen/prelude.cuh), which itself stays the same in both tiers.
 *
 * The prelude reaches every real libm function through fcx_m_<fn> templates. The overloads
 * below take f32 (non-templates, declared first: C++ prefers them to the template for a float
 * argument, and name lookup inside the prelude's templates sees them), so f32 exp, log, log2,
 * log10, sin, cos, tan and pow become the GPU's approximate instructions (__expf: ex2.approx of
 * x log2(e); __logf: lg2.approx times ln 2; __sinf: sin.approx; ...), as --use_fast_math, which
 * the tier also compiles with, does to a plain expf. f64 keeps libm: the GPU has no approximate
 * f64 instructions, and the tier's f64 gain is the contraction into FMAs.
 *
 * pow: __powf(x, y) is exp2(y log2(x)), NaN for every x < 0 and for pow(x, 0) with x 0 or
 * infinite. A negative base with an integral exponent (NumPy: a real result) and y == 0 (1,
 * whatever x) are taken apart, so the tier only loses digits, never a finite result.
 *
 * On the host (FCX_HOST, tests/test_codegen_emulated.c) the instructions are stand-ins that
 * take the same steps in float (exp as exp2f(x * log2(e)), log as log2f(x) * ln 2, tan as
 * sin / cos) with exact libm for the steps themselves: they show the tier's rewrites and the
 * rounding of its extra steps, not the approximation error of the GPU's instructions.
 */
#ifdef FCX_HOST
#include <cmath>
#define FCX_FAST_FN inline
#define FCX_FAST_INSN(host, device) host
#else
#define FCX_FAST_FN __device__ __forceinline__
#define FCX_FAST_INSN(host, device) device
#endif

FCX_FAST_FN float fcx_m_exp(float x) {
    return FCX_FAST_INSN(exp2f(x * 1.44269504088896341f), __expf(x));
}
FCX_FAST_FN float fcx_m_log(float x) {
    return FCX_FAST_INSN(log2f(x) * 0.693147180559945309f, __logf(x));
}
FCX_FAST_FN float fcx_m_log2(float x) { return FCX_FAST_INSN(log2f(x), __log2f(x)); }
FCX_FAST_FN float fcx_m_log10(float x) {
    return FCX_FAST_INSN(log2f(x) * 0.301029995663981195f, __log10f(x));
}
FCX_FAST_FN float fcx_m_sin(float x) { return FCX_FAST_INSN(sinf(x), __sinf(x)); }
FCX_FAST_FN float fcx_m_cos(float x) { return FCX_FAST_INSN(cosf(x), __cosf(x)); }
FCX_FAST_FN float fcx_m_tan(float x) { return FCX_FAST_INSN(sinf(x) / cosf(x), __tanf(x)); }
FCX_FAST_FN float fcx_m_pow(float x, float y) {
    if (y == 0.0f) return 1.0f;
    bool neg = x < 0.0f || (x == 0.0f && 1.0f / x < 0.0f); /* -0.0 too: pow(-0, -1) is -inf */
    float ax = neg ? -x : x;
    float p = FCX_FAST_INSN(exp2f(y * log2f(ax)), __powf(ax, y));
    if (!neg) return x == x ? p : x; /* x NaN: NaN (y == 0 went above) */
    float half = 0.5f * y;
    if (truncf(y) != y) return x == 0.0f ? p : (x - x) / (x - x); /* NaN, as NumPy */
    return truncf(half) == half ? p : -p;         /* odd integers keep the sign */
}
#undef FCX_FAST_INSN
#undef FCX_FAST_FN
