/*
 * graph/normal32.h - internal: the standard normal draw of 16- and 32-bit float dtypes.
 *
 * Box-Muller in float arithmetic, written once for both sides: graph.h includes this file for
 * the host (fcg_random_normal_at, the reference backend's values), and the build splices it
 * into the device prelude in place of codegen/prelude.cuh's #include line
 * (cmake/embed_prelude.cmake), so the text NVRTC compiles is this text. Plain C that is also
 * C++ and CUDA C++.
 *
 * Same bits on both sides: every floating-point step is one IEEE operation rounded to nearest
 * even (+, *, fma, int -> float) written through the FCG_N32_* macros, every other step exact
 * integer work (a float's bits read or set count as such). On the device the macros are the
 * __f*_rn intrinsics, which NVRTC never contracts or reorders whatever --fmad or
 * --use_fast_math say; on the host plain operators and fmaf, and the build compiles everything
 * with -ffp-contract=off (CMakeLists.txt) so that no host compiler fuses a product into a sum
 * either. No intermediate value is subnormal (nonzero ones stay above about 2^-110), so
 * flushing subnormals (--ftz) changes nothing. There is no division and no square root: the
 * polynomials are minimax fits of our own (Remez on the relative error, before rounding the
 * coefficients to float: ln(1 + f) = f + f^2 (-1/2 + f P(f)), P of degree 7 on [-1/3, 1/3],
 * to 2^-27.7; sin(2 pi x) / x and cos(2 pi x), of degrees 3 and 4 in x^2 on |x| <= 1/8, to
 * 2^-28 and 2^-33.9), the square root a Newton iteration.
 *
 * Accuracy: within 2 ulps of Box-Muller computed exactly from the same words (1.6 measured
 * over 40 million random pairs; tests/test_random.c checks millions of words and the extreme
 * ones): -2 ln u1 as a float pair to about 2^-26, sin and cos to 0.8 ulp, and the product
 * rounded once.
 */
#ifndef FCG_NORMAL32_H
#define FCG_NORMAL32_H

#ifdef __CUDA_ARCH__
#define FCG_N32_FN __device__ __forceinline__
#define FCG_N32_ADD(a, b) __fadd_rn(a, b)
#define FCG_N32_MUL(a, b) __fmul_rn(a, b)
#define FCG_N32_FMA(a, b, c) __fmaf_rn(a, b, c)
#define FCG_N32_CLZ(x) __clz((int)(x))
#define FCG_N32_FBITS(x) __float_as_uint(x)
#define FCG_N32_UFLOAT(u) __uint_as_float(u)
#else
#include <float.h>
#include <math.h>
#include <string.h>
#if FLT_EVAL_METHOD != 0
#error "graph/normal32.h needs float arithmetic without excess precision (FLT_EVAL_METHOD 0)"
#endif
#define FCG_N32_FN static inline
#define FCG_N32_ADD(a, b) ((a) + (b))
#define FCG_N32_MUL(a, b) ((a) * (b))
#define FCG_N32_FMA(a, b, c) fmaf(a, b, c)
#define FCG_N32_CLZ(x) __builtin_clz(x)
#define FCG_N32_FBITS(x) fcg_n32_fbits(x)
#define FCG_N32_UFLOAT(u) fcg_n32_ufloat(u)
static inline unsigned fcg_n32_fbits(float x) {
    unsigned u;
    memcpy(&u, &x, sizeof u);
    return u;
}
static inline float fcg_n32_ufloat(unsigned u) {
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}
#endif

/* -2 ln u for u = (a + 1) 2^-32 in [2^-32, 1], as hi + *lo (hi the larger by far). */
FCG_N32_FN float fcg_n32_m2log(unsigned a, float *lo) {
    /* u = 2^-k (1 + f) with 1 + f in [2/3, 4/3): ln u = ln(1 + f) - k ln 2. f comes exactly
     * from the 32-bit integer, as a float f and the little fl its rounding lost. */
    const unsigned m = a + 1u; /* 0 stands for 2^32: u = 1 */
    const int n = m ? FCG_N32_CLZ(m) : 0;
    const unsigned x = m << n; /* u = x 2^-(32 + n), x 2^-32 in [1/2, 1) (or x = 0: u = 1) */
    /* below 2/3 take 2 x (c = 1): 1 + f = x 2^(c - 32), f = d 2^-32 with d = x 2^c - 2^32 */
    const int c = x - 1u < 0xAAAAAAAAu, k = n + c, d = (int)(x << c);
    const float dh = (float)d;
    const float f = FCG_N32_MUL(dh, 0x1p-32f), fl = FCG_N32_MUL((float)(d - (int)dh), 0x1p-32f);
    /* ln(1 + f) = f + f^2 p(f), p(f) = -1/2 + f (1/3 - f / 4 + ...) */
    float p = -0x1.08058ep-3f;
    p = FCG_N32_FMA(p, f, 0x1.1e66bap-3f);
    p = FCG_N32_FMA(p, f, -0x1.f3113ep-4f);
    p = FCG_N32_FMA(p, f, 0x1.1ed716p-3f);
    p = FCG_N32_FMA(p, f, -0x1.559dccp-3f);
    p = FCG_N32_FMA(p, f, 0x1.99d028p-3f);
    p = FCG_N32_FMA(p, f, -0x1.fffef0p-3f);
    p = FCG_N32_FMA(p, f, 0x1.555506p-2f);
    p = FCG_N32_FMA(p, f, -0.5f);
    /* + fl (1 - f): ln(1 + f + fl) to first order in fl */
    const float t = FCG_N32_FMA(FCG_N32_MUL(f, f), p, FCG_N32_FMA(-fl, f, fl));
    /* f + t and then - k ln 2 as exact sums (|f| > |t|, k ln 2 > |f + t| or k = 0), with
     * ln 2 = 0x1.62e4p-1 + 0x1.7f7d1cp-20 (the first has 16 bits: times k, exact) */
    const float h = FCG_N32_ADD(f, t);
    const float hl = FCG_N32_ADD(t, -FCG_N32_ADD(h, -f));
    const float mk = (float)-k, ak = FCG_N32_MUL(mk, 0x1.62e4p-1f);
    const float s = FCG_N32_ADD(ak, h);
    const float sl = FCG_N32_ADD(h, -FCG_N32_ADD(s, -ak));
    *lo = FCG_N32_MUL(-2.0f, FCG_N32_FMA(mk, 0x1.7f7d1cp-20f, FCG_N32_ADD(hl, sl)));
    return FCG_N32_MUL(-2.0f, s);
}

/* cos (odd == 0) or sin (odd != 0) of 2 pi b 2^-32. */
FCG_N32_FN float fcg_n32_turn(unsigned b, int odd) {
    /* b 2^-32 turns = j quarter turns + t 2^-32, t in [-2^29, 2^29): both exact */
    const unsigned j = (b + 0x20000000u) >> 30;
    const int t = (int)(b - (j << 30));
    const float th = (float)t;
    const float x = FCG_N32_MUL(th, 0x1p-32f), xl = FCG_N32_MUL((float)(t - (int)th), 0x1p-32f);
    const float z = FCG_N32_MUL(x, x);
    /* sin(2 pi x) = x (2 pi + z q(z)), 2 pi as 0x1.921fb6p+2 - 0x1.777a5cp-23 */
    float q = FCG_N32_FMA(-0x1.2dc84cp+6f, z, 0x1.466004p+6f);
    q = FCG_N32_FMA(q, z, -0x1.4abbbep+5f);
    q = FCG_N32_FMA(z, q, -0x1.777a5cp-23f);
    /* cos(2 pi x) = 1 + z (c0 + z r(z)), c0 as -0x1.3bd3ccp+4 - 0x1.ee0ec6p-22 */
    float r = FCG_N32_FMA(0x1.d9d57ep+5f, z, -0x1.55c5e0p+6f);
    r = FCG_N32_FMA(r, z, 0x1.03c1dep+6f);
    /* With xl, what rounding t lost, as e = 2 pi xl: sin(a + e) = sin a + e cos a, cos(a + e)
     * = cos a - e sin a, with cos a and sin a to a few bits (1 + c0 z, 2 pi x). */
    const float e = FCG_N32_MUL(xl, 0x1.921fb6p+2f);
    const float ec = FCG_N32_MUL(e, FCG_N32_FMA(z, -0x1.3bd3ccp+4f, 1.0f));
    const float sa = FCG_N32_FMA(x, 0x1.921fb6p+2f, FCG_N32_FMA(x, q, ec));
    /* z c0 + the rest, rounded once (with what rounding z = x^2 lost), then + 1 */
    float w = FCG_N32_MUL(z, FCG_N32_FMA(z, r, -0x1.ee0ec6p-22f));
    w = FCG_N32_FMA(FCG_N32_FMA(x, x, -z), -0x1.3bd3ccp+4f, w);
    w = FCG_N32_FMA(-e, FCG_N32_MUL(x, 0x1.921fb6p+2f), w);
    const float ca = FCG_N32_ADD(1.0f, FCG_N32_FMA(z, -0x1.3bd3ccp+4f, w));
    /* cos theta = sin(theta + a quarter turn); each quarter turn maps sin to cos to -sin */
    const unsigned h = j + (odd ? 0u : 1u);
    const float v = (h & 1u) ? ca : sa;
    return (h & 2u) ? -v : v;
}

/* Element i's standard normal from its pair of words (include/fusec.h, fc_rng): u1 =
 * (a + 1) 2^-32 in (0, 1], u2 = b 2^-32 in [0, 1); sqrt(-2 ln u1) cos(2 pi u2) for even i
 * (odd == 0), sqrt(-2 ln u1) sin(2 pi u2) for odd i. */
FCG_N32_FN float fcg_normal32(unsigned a, unsigned b, int odd) {
    float ll;
    const float l = fcg_n32_m2log(a, &ll), v = fcg_n32_turn(b, odd);
    /* r = sqrt(l) to about 2^-17 without a square root: 1 / sqrt(l) from l's bits and two
     * Newton steps, times l. Then sqrt(l + ll) = r + (l + ll - r^2) / (2 r) to well below an
     * ulp (r^2 exact inside the fma), and the product rounds once. */
    const float hl = FCG_N32_MUL(0.5f, l);
    float y = FCG_N32_UFLOAT(0x5F3759DFu - (FCG_N32_FBITS(l) >> 1));
    y = FCG_N32_MUL(y, FCG_N32_FMA(-FCG_N32_MUL(hl, y), y, 1.5f));
    y = FCG_N32_MUL(y, FCG_N32_FMA(-FCG_N32_MUL(hl, y), y, 1.5f));
    const float r = FCG_N32_MUL(l, y);
    const float d = FCG_N32_MUL(FCG_N32_ADD(FCG_N32_FMA(-r, r, l), ll), FCG_N32_MUL(0.5f, y));
    return FCG_N32_FMA(r, v, FCG_N32_MUL(d, v));
}

#endif /* FCG_NORMAL32_H */
