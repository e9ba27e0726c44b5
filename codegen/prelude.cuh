/*
 * codegen/prelude.cuh - the device prelude every generated kernel begins with.
 *
 * CUDA C++ that gives each elementwise op NumPy's semantics per dtype, exactly as the host
 * reference backend (runtime/host*.c) computes them. Compiled by NVRTC (C++17, no headers: the
 * CUDA math functions are built in) and, with -DFCX_HOST, by a host C++17 compiler, so that
 * tests/test_prelude.cpp can compare it with the host backend on a machine with no GPU.
 *
 * The naming contract with the code generator:
 *   fcx_t_<dtype>    storage type (fc_dtype_name spelling: bool, i8, ..., bf16, f32, c128);
 *                    f16 / bf16 are 16-bit structs, c64 / c128 are {re, im} structs
 *   fcx_ct_<dtype>   compute type: f16 and bf16 compute in float, every other dtype in its
 *                    storage type (complex ones carry + - * / == !=)
 *   fcx_load_<dtype>(const fcx_t_<dtype> *) -> fcx_ct_<dtype>
 *   fcx_store_<dtype>(fcx_t_<dtype> *, fcx_ct_<dtype>)   f16 / bf16 round to nearest even
 *   fcx_cast_<dtype>(x)   NumPy's astype from any compute type (runtime/host_convert.c's rules)
 *   fcx_<cname>(...)      one per elementwise op of graph/ops.def, overloaded (templates that
 *                         accept only exact compute types, so nothing converts silently) on the
 *                         loop dtype's compute type; the result is in the compute type of the
 *                         node's dtype (bool for comparisons and predicates, the real type for
 *                         abs / real / imag / angle of complex). f16 / bf16 loops run in float:
 *                         the caller rounds at the store, as the host backend does.
 *   fcx_nextafter_<f16|bf16>(a, b)   the one exception: nextafter of a 16-bit loop steps the
 *                         16-bit format itself, so the caller names the loop dtype
 *   fcx_h2 and fcx_<op>2_<f16|bf16>, fcx_pack_*, fcx_lo/hi_*, ...: two 16-bit values in one
 *                         register, for the vector step of elementwise kernels (the 16-bit
 *                         pairs section says why each packed op rounds as the scalar path)
 *   fcx_rand_<uniform|normal>_<f16|bf16|f32|f64>(seed, stream, index), fcx_rand_integer:
 *                         graph.h's fcg_random_*_at (Philox4x32-10), for the random op; the
 *                         same with _span<N>(seed, stream, q, out): elements q N .. q N + N - 1
 *                         at once, for the vector step of an elementwise kernel. The float
 *                         normals are graph/normal32.h, which the build splices in.
 *   reduction helpers at the end: identities, NaN-propagating max / min, argmax / argmin pairs
 *   block-level machinery of reduce and row kernels: FCX_WARP, the split of long reductions
 *   (fcx_split, FCX_SPLIT_*: the same function as codegen/cuda.c's fcx_split_plan), division
 *   by a kernel-wide divisor without a divide (fcx_divider_of / fcx_div_by), word-wise
 *   warp shuffles (fcx_shfl_down / fcx_shfl_idx), L1-bypassing loads of other blocks' partial
 *   results (fcx_ldcg), fcx_atomic_add, fcx_fence, and the dynamic shared memory a launch
 *   got (FCX_DSMEM, fcx_dsmem_size). The device-only ones have no host version here:
 *   tests/test_codegen_emulated.c supplies its own (pthreads, an exchange buffer per block)
 *   when it runs generated kernels on the host.
 *
 * Deliberate differences from the host backend:
 *   - integer power with a negative exponent gives 0 here (no error channel on the device);
 *     the host fails with FC_ERR_VALUE, so the runtime must check for it separately.
 *   - complex transcendental functions (exp, log, sqrt, trig, hyperbolic and their inverses)
 *     are our own (the host calls the C library's cexp, ...): the same special values (C99
 *     Annex G, with glibc's choices where the standard leaves a sign open), a few ulps from
 *     glibc elsewhere. c64 ones compute in double and round once.
 *   - real libm functions (sinf, pow, ...) are CUDA's on the device: within CUDA's documented
 *     ulp bounds of the host's glibc results (lgamma's bound holds outside [-10.001, -2.264];
 *     inside, near its zeros, only its absolute error is small). Everything else (+ - * /,
 *     sqrt, fmod, copysign, nextafter, rint, conversions, integer ops) is IEEE-exact and
 *     matches the host bit for bit, provided NVRTC runs with --fmad=false and without
 *     --use_fast_math (NaN tests rely on x != x). NaN payloads and signs may differ (the GPU's
 *     default NaN is positive): so may signbit and copysign of a NaN that arithmetic made.
 *
 * Chained f16 / bf16 ops: the host rounds every node to its dtype, so a kernel that keeps an
 * f16 / bf16 result in a register must round it with fcx_cast_f16 / fcx_cast_bf16 before the
 * next op uses it, or it will differ from the host (a pair, fcx_h2, holds rounded values).
 *
 * Compile cost (NVRTC 13.0, sm_90, CPU time, measured on the H200 host): pasted in front of a
 * kernel, the whole prelude adds about 5-9 ms to every compile (a trivial kernel takes 6-9 ms);
 * passed as an in-memory header (#include as the source's first line) with NVRTC's automatic
 * precompiled headers (--pch first among the options, CUDA 12.8+), it adds 0-2 ms once the
 * first compile of the process has built the PCH (in memory), with byte-identical cubins; a
 * PCH does not serve another process, and building it slows the first compile. Instead a
 * kernel gets only the optional parts below that it names (FCX_PART_*; docs/ARCHITECTURE.md,
 * "Cold compile").
 */
#ifndef FCX_PRELUDE_CUH
#define FCX_PRELUDE_CUH

#ifdef FCX_HOST
#include <cmath>
#include <cstdint>
#include <cstring>
#define FCX_FN inline
#define FCX_BIG inline
#else /* not static: NVRTC warns about unused static functions, never about inline ones */
#define FCX_FN __device__ __forceinline__
#define FCX_BIG __device__ inline
#endif

/* Optional parts: each "#if FCX_PART_<NAME>" block below is compiled only into the kernels
 * that use it. Code generation (codegen/prelude_parts.c) defines FCX_PART_<NAME> as 0 in
 * front of the prelude for each part the kernel's text names nothing of (no identifier the
 * part alone defines; for COMPLEX, no complex compute type either), so NVRTC's front end
 * skips it: parsing the whole prelude is a fixed cost of every compile. Undefined, a part is
 * in (the host builds of the prelude take all of it). */
#ifndef FCX_PART_PAIRS
#define FCX_PART_PAIRS 1
#endif
#ifndef FCX_PART_COMPLEX
#define FCX_PART_COMPLEX 1
#endif
#ifndef FCX_PART_RANDOM
#define FCX_PART_RANDOM 1
#endif
#ifndef FCX_PART_REDUCE
#define FCX_PART_REDUCE 1
#endif
#ifndef FCX_PART_INDEX
#define FCX_PART_INDEX 1
#endif
#ifndef FCX_PART_BLOCK
#define FCX_PART_BLOCK 1
#endif

/* Raised by a kernel that met a value NumPy refuses: the runtime zeroes it before such a
 * kernel runs and reads it afterwards (FC_ERR_VALUE). A bit a cause: FCX_RAISE_POWER (an
 * integer to a negative power), FCX_RAISE_INDEX (take: an index out of bounds). */
#define FCX_RAISE_POWER 1u
#define FCX_RAISE_INDEX 2u
#ifdef FCX_HOST
inline unsigned int fcx_value_error;
#define fcx_raise(bit) (fcx_value_error |= (bit))
#else
__device__ unsigned int fcx_value_error;
#define fcx_raise(bit) atomicOr(&fcx_value_error, (bit))
#endif

/* Elementwise kernels' shifted-slice tiles (codegen/cuda.c, gen_ew_tiles): the fewest rows
 * and columns a space needs for them (a thinner one would leave most of a tile's threads
 * idle; the direct loops serve it), and a hook called once a block that takes them: nothing
 * on the device; tests/test_codegen_emulated.c counts them, with tiles at every extent. */
#ifndef FCX_TILE_MIN_EXTENT
#define FCX_TILE_MIN_EXTENT 16
#endif
#ifndef FCX_STENCIL_TILED
#define FCX_STENCIL_TILED()
#endif
/* A tiled elementwise kernel's threads report whether every access of the launch moves whole
 * vectors (the host emulation counts them; nothing on the device). */
#ifndef FCX_TILE_VECTORS
#define FCX_TILE_VECTORS(whole)
#endif
/* A pad's shifted slices taken in strips (gen_ew_strips), as the tiles above: the fewest
 * columns (a narrower row leaves most of a strip's lanes idle), and a hook called once a
 * thread that takes them. */
#ifndef FCX_STRIP_MIN_EXTENT
#define FCX_STRIP_MIN_EXTENT 64
#endif
#ifndef FCX_STENCIL_STRIPS
#define FCX_STENCIL_STRIPS()
#endif

/* ---- storage and compute types ---------------------------------------------------------- */

typedef bool fcx_t_bool;
typedef signed char fcx_t_i8;
typedef short fcx_t_i16;
typedef int fcx_t_i32;
typedef long long fcx_t_i64;
typedef unsigned char fcx_t_u8;
typedef unsigned short fcx_t_u16;
typedef unsigned int fcx_t_u32;
typedef unsigned long long fcx_t_u64;
struct fcx_t_f16 { unsigned short bits; };
struct fcx_t_bf16 { unsigned short bits; };
typedef float fcx_t_f32;
typedef double fcx_t_f64;
struct alignas(8) fcx_t_c64 { float re, im; };
struct alignas(16) fcx_t_c128 { double re, im; };

typedef bool fcx_ct_bool;
typedef signed char fcx_ct_i8;
typedef short fcx_ct_i16;
typedef int fcx_ct_i32;
typedef long long fcx_ct_i64;
typedef unsigned char fcx_ct_u8;
typedef unsigned short fcx_ct_u16;
typedef unsigned int fcx_ct_u32;
typedef unsigned long long fcx_ct_u64;
typedef float fcx_ct_f16;
typedef float fcx_ct_bf16;
typedef float fcx_ct_f32;
typedef double fcx_ct_f64;
typedef fcx_t_c64 fcx_ct_c64;
typedef fcx_t_c128 fcx_ct_c128;

/* Type classes. Op templates name their return type through these, so an op exists only for
 * the compute types of its class: fcx_ti (integers), fcx_tf (float, double), fcx_tc (complex),
 * fcx_tb (bool), fcx_ta (any). ::type is the type itself, ::test is bool. */
template <class T> struct fcx_ti {};
#define FCX_TI(T, W, S)                                                                        \
    template <> struct fcx_ti<T> {                                                             \
        typedef T type;                                                                        \
        typedef bool test;                                                                     \
        typedef W wide; /* unsigned, at least int: arithmetic in it wraps without UB */        \
        enum { sgn = S, bits = 8 * (int)sizeof(T) };                                           \
    };
FCX_TI(signed char, unsigned, 1)
FCX_TI(short, unsigned, 1)
FCX_TI(int, unsigned, 1)
FCX_TI(long long, unsigned long long, 1)
FCX_TI(unsigned char, unsigned, 0)
FCX_TI(unsigned short, unsigned, 0)
FCX_TI(unsigned int, unsigned, 0)
FCX_TI(unsigned long long, unsigned long long, 0)
template <class T> struct fcx_tf {};
template <> struct fcx_tf<float> { typedef float type; typedef bool test; };
template <> struct fcx_tf<double> { typedef double type; typedef bool test; };
template <class T> struct fcx_tc {};
template <> struct fcx_tc<fcx_t_c64> { typedef fcx_t_c64 type; typedef float real; typedef bool test; };
template <> struct fcx_tc<fcx_t_c128> { typedef fcx_t_c128 type; typedef double real; typedef bool test; };
template <class T> struct fcx_tb {};
template <> struct fcx_tb<bool> { typedef bool type; typedef bool test; };
template <class T> struct fcx_ta : fcx_ti<T> {};
template <> struct fcx_ta<bool> : fcx_tb<bool> {};
template <> struct fcx_ta<float> : fcx_tf<float> {};
template <> struct fcx_ta<double> : fcx_tf<double> {};
template <> struct fcx_ta<fcx_t_c64> : fcx_tc<fcx_t_c64> {};
template <> struct fcx_ta<fcx_t_c128> : fcx_tc<fcx_t_c128> {};

#define FCX_I(R) template <class T> FCX_FN typename fcx_ti<T>::R
#define FCX_F(R) template <class T> FCX_FN typename fcx_tf<T>::R
#define FCX_C(R) template <class T> FCX_FN typename fcx_tc<T>::R
#define FCX_B(R) template <class T> FCX_FN typename fcx_tb<T>::R
#define FCX_A(R) template <class T> FCX_FN typename fcx_ta<T>::R

/* fcx_kind<T>::v: 1 bool, 2 signed integer, 3 unsigned integer, 4 real float, 5 complex. */
template <class T> struct fcx_kind { enum { v = 0 }; };
#define FCX_KIND(T, K) template <> struct fcx_kind<T> { enum { v = K }; };
FCX_KIND(bool, 1) FCX_KIND(signed char, 2) FCX_KIND(short, 2) FCX_KIND(int, 2)
FCX_KIND(long long, 2) FCX_KIND(unsigned char, 3) FCX_KIND(unsigned short, 3)
FCX_KIND(unsigned int, 3) FCX_KIND(unsigned long long, 3) FCX_KIND(float, 4) FCX_KIND(double, 4)
FCX_KIND(fcx_t_c64, 5) FCX_KIND(fcx_t_c128, 5)
#undef FCX_KIND
/* ::type is R when P is S: keeps the load / store templates to their own storage type */
template <class P, class S, class R> struct fcx_same {};
template <class S, class R> struct fcx_same<S, S, R> { typedef R type; };

/* Nearly everything below is a template, even where one type would do: NVRTC's front end
 * turns every non-template function into IR whether a kernel uses it or not, while a template
 * costs little until it is instantiated. That keeps the prelude cheap to compile. */

/* ---- bits and libm ---------------------------------------------------------------------- */

#ifdef FCX_HOST
template <class F> FCX_FN unsigned fcx_fbits(F x) { unsigned u; memcpy(&u, &x, 4); return u; }
template <class U> FCX_FN float fcx_bitsf(U u) { unsigned v = u; float x; memcpy(&x, &v, 4); return x; }
template <class D> FCX_FN unsigned long long fcx_dbits(D x) { unsigned long long u; memcpy(&u, &x, 8); return u; }
template <class U> FCX_FN double fcx_bitsd(U u) { unsigned long long v = u; double x; memcpy(&x, &v, 8); return x; }
#else
template <class F> FCX_FN unsigned fcx_fbits(F x) { return __float_as_uint(x); }
template <class U> FCX_FN float fcx_bitsf(U u) { return __uint_as_float(u); }
template <class D> FCX_FN unsigned long long fcx_dbits(D x) { return (unsigned long long)__double_as_longlong(x); }
template <class U> FCX_FN double fcx_bitsd(U u) { return __longlong_as_double((long long)u); }
#endif

/* fcx_m_<fn>: the C library's function of float (fn##f) or double. */
#define FCX_M1(fn)                                                                             \
    template <class T> FCX_FN T fcx_m_##fn(T x) {                                              \
        if constexpr (sizeof(T) == 4) return fn##f(x);                                         \
        else return fn(x);                                                                     \
    }
#define FCX_M2(fn)                                                                             \
    template <class T> FCX_FN T fcx_m_##fn(T x, T y) {                                         \
        if constexpr (sizeof(T) == 4) return fn##f(x, y);                                      \
        else return fn(x, y);                                                                  \
    }
FCX_M1(sqrt) FCX_M1(cbrt) FCX_M1(exp) FCX_M1(exp2) FCX_M1(expm1) FCX_M1(log) FCX_M1(log2)
FCX_M1(log10) FCX_M1(log1p) FCX_M1(sin) FCX_M1(cos) FCX_M1(tan) FCX_M1(asin) FCX_M1(acos)
FCX_M1(atan) FCX_M1(sinh) FCX_M1(cosh) FCX_M1(tanh) FCX_M1(asinh) FCX_M1(acosh) FCX_M1(atanh)
FCX_M1(floor) FCX_M1(ceil) FCX_M1(trunc) FCX_M1(rint) FCX_M1(fabs) FCX_M1(erf) FCX_M1(erfc)
FCX_M1(lgamma)
FCX_M2(pow) FCX_M2(atan2) FCX_M2(fmod) FCX_M2(hypot) FCX_M2(copysign) FCX_M2(nextafter)
#undef FCX_M1
#undef FCX_M2

template <class T> FCX_FN bool fcx_inf(T x) {
    if constexpr (sizeof(T) == 4) return (fcx_fbits(x) & 0x7fffffffu) == 0x7f800000u;
    else return (fcx_dbits(x) << 1) == 0xffe0000000000000ull;
}
template <class T> FCX_FN bool fcx_finite(T x) {
    if constexpr (sizeof(T) == 4) return (fcx_fbits(x) & 0x7f800000u) != 0x7f800000u;
    else return (fcx_dbits(x) & 0x7ff0000000000000ull) != 0x7ff0000000000000ull;
}
template <class T> FCX_FN T fcx_inf_of() { return (T)fcx_bitsd(0x7ff0000000000000ull); }
template <class T> FCX_FN T fcx_nan_of() { return (T)fcx_bitsd(0x7ff8000000000000ull); }

/* ---- 16-bit floats: graph/dtype.c's conversions, bit for bit ----------------------------- *
 *
 * Speed (issue 13): an f16 / bf16 op computes in float and rounds its result once, which for
 * a value computed in float is exactly IEEE round-to-nearest-even of that float: what NumPy's
 * f16 loops (npy_float_to_half) and ml_dtypes' bf16 do, and what the GPU's conversion
 * instructions do in one step (cvt.rn.f16.f32; cvt.rn.bf16.f32 from sm_80; cvt.f32.f16 is
 * exact). So on the device the numeric part of every conversion below is that instruction,
 * and only NaN takes a select of its own, so that NaN bits stay those of the integer routines
 * (the instructions give a canonical NaN). A value computed in double must not round through
 * float first (f64 -> f32 -> f16 rounds twice: 1 + 2^-11 + 2^-40 would round to 1): it keeps
 * the exact integer routine fcx_f64_to_f16, so fcx_cast_f16 picks its path by the type the
 * value was computed in. On the host (FCX_HOST) the "instructions" are the integer routines
 * (fcx_sw_*); test_prelude checks those against an independent round-to-nearest-even (rint in
 * double) over every rounding boundary of both formats, so the device's instructions and the
 * host agree bit for bit. */

/* The integer routines: exact for every input, NaN quiet with its payload's top bits. */
template <class H> FCX_FN float fcx_sw_f16_to_f32(H h) {
    unsigned sign = (unsigned)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0) return fcx_bitsf(fcx_fbits((float)m * 0x1p-24f) | sign); /* exact */
    if (e == 31) return fcx_bitsf(sign | 0x7f800000u | (m << 13));
    return fcx_bitsf(sign | ((e + 112) << 23) | (m << 13));
}
template <class F> FCX_FN unsigned short fcx_sw_f32_to_f16(F f) {
    unsigned x = fcx_fbits(f), sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) /* inf, or NaN kept quiet */
        return (unsigned short)(sign | (ax > 0x7f800000u ? 0x7e00u | ((ax >> 13) & 0x3ffu) : 0x7c00u));
    if (ax >= 0x477ff000u) return (unsigned short)(sign | 0x7c00u);
    if (ax < 0x38800000u) /* subnormal: exact scale, then round half to even */
        return (unsigned short)(sign | (unsigned)fcx_m_rint(fcx_bitsf(ax) * 0x1p24f));
    unsigned h = (((ax >> 23) - 112) << 10) | ((ax & 0x7fffffu) >> 13), rem = ax & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++;
    return (unsigned short)(sign | h);
}
template <class F> FCX_FN unsigned short fcx_sw_f32_to_bf16(F f) {
    unsigned x = fcx_fbits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((x >> 16) | 0x40u);
    x += 0x7fffu + ((x >> 16) & 1u);
    return (unsigned short)(x >> 16);
}

/* The conversion instructions, for values that are not NaN (the callers select NaN's bits). */
template <class F> FCX_FN unsigned short fcx_rn_f16(F f) {
#ifdef FCX_HOST
    return fcx_sw_f32_to_f16(f);
#else
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"((float)f));
    return h;
#endif
}
template <class H> FCX_FN float fcx_up_f16(H h) {
#ifdef FCX_HOST
    return fcx_sw_f16_to_f32(h);
#else
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"((unsigned short)h));
    return f;
#endif
}
template <class F> FCX_FN unsigned short fcx_rn_bf16(F f) {
#if !defined(FCX_HOST) && __CUDA_ARCH__ >= 800
    unsigned short h;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"((float)f));
    return h;
#else /* sm_75 has no bf16 conversion: the integer routine, a few integer instructions */
    return fcx_sw_f32_to_bf16(f);
#endif
}

/* Loads, stores and the cast of a float: the instructions, NaN as the integer routines give it. */
template <class H> FCX_FN float fcx_f16_to_f32(H h) {
    unsigned b = h;
    return (b & 0x7fffu) > 0x7c00u ? fcx_bitsf(((b & 0x8000u) << 16) | 0x7f800000u | ((b & 0x3ffu) << 13))
                                   : fcx_up_f16(b);
}
template <class F> FCX_FN unsigned short fcx_f32_to_f16(F f) {
    unsigned x = fcx_fbits(f);
    return (x & 0x7fffffffu) > 0x7f800000u ? (unsigned short)(((x >> 16) & 0x8000u) | 0x7e00u | ((x >> 13) & 0x3ffu))
                                           : fcx_rn_f16(f);
}
/* float -> f16 -> float: the rounding of an f16 op's result (NaN: quiet, payload dropped, as
 * fcx_f64_to_f16 of the same value) */
template <class F> FCX_FN float fcx_round_f16(F f) {
    return f != f ? fcx_bitsf((fcx_fbits(f) & 0x80000000u) | 0x7fc00000u) : fcx_up_f16(fcx_rn_f16(f));
}
/* double -> a 16-bit format of MANT stored bits and smallest normal exponent EMIN (largest
 * 1 - EMIN), rounded once to nearest even; NaN quiet, payload dropped. f16 is host_convert.c's
 * fch_f64_to_f16; the host build's bf16 pair instructions use the bf16 one (see fcx_h2). */
template <int MANT, int EMIN, class D> FCX_FN unsigned short fcx_f64_to_16(D d) {
    const unsigned inf = (unsigned)(3 - 2 * EMIN) << MANT; /* all-ones exponent */
    unsigned long long b = fcx_dbits(d), mag = b & 0x7fffffffffffffffull;
    unsigned sign = (unsigned)(b >> 48) & 0x8000u;
    if (mag >= 0x7ff0000000000000ull)
        return (unsigned short)(sign | (mag == 0x7ff0000000000000ull ? inf : inf | (1u << (MANT - 1))));
    int e = (int)(mag >> 52) - 1023;
    if (e > 1 - EMIN) return (unsigned short)(sign | inf);
    if (e < EMIN - MANT - 1) return (unsigned short)sign;
    unsigned long long m = (mag & 0xfffffffffffffull) | (1ull << 52);
    int shift = e >= EMIN ? 52 - MANT : 52 - MANT + (EMIN - e);
    unsigned long long kept = m >> shift, rem = m & ((1ull << shift) - 1), half = 1ull << (shift - 1);
    if (rem > half || (rem == half && (kept & 1))) kept++;
    if (e < EMIN) return (unsigned short)(sign | kept); /* a carry makes the smallest normal */
    unsigned h = ((unsigned)(e - EMIN) << MANT) + (unsigned)kept;
    return (unsigned short)(sign | (h >= inf ? inf : h));
}
/* On the device a double's single rounding to f16 is one instruction (cvt.rn.f16.f64: IEEE
 * round-to-nearest-even of the double, subnormal results included), NaN's bits selected as
 * the routine gives them: an elementwise kernel's weak float constants are cast this way once
 * a thread, and the routine's 64-bit integer steps were most of a short thread's work. */
template <class D> FCX_FN unsigned short fcx_f64_to_f16(D d) {
#ifdef FCX_HOST
    return fcx_f64_to_16<10, -14>(d);
#else
    if (d != d) return (unsigned short)((unsigned)(fcx_dbits(d) >> 48) & 0x8000u) | 0x7e00u;
    unsigned short h;
    asm("cvt.rn.f16.f64 %0, %1;" : "=h"(h) : "d"((double)d));
    return h;
#endif
}
template <class H> FCX_FN float fcx_bf16_to_f32(H h) { return fcx_bitsf((unsigned)h << 16); }
template <class F> FCX_FN unsigned short fcx_f32_to_bf16(F f) {
    unsigned x = fcx_fbits(f);
    return (x & 0x7fffffffu) > 0x7f800000u ? (unsigned short)((x >> 16) | 0x40u) : fcx_rn_bf16(f);
}

/* ---- loads and stores ------------------------------------------------------------------- */

#define FCX_LS(D)                                                                              \
    template <class P> FCX_FN typename fcx_same<P, fcx_t_##D, fcx_ct_##D>::type fcx_load_##D(const P *p) { return *p; } \
    template <class P> FCX_FN typename fcx_same<P, fcx_t_##D, void>::type fcx_store_##D(P *p, fcx_ct_##D v) { *p = v; }
FCX_LS(i8) FCX_LS(i16) FCX_LS(i32) FCX_LS(i64) FCX_LS(u8) FCX_LS(u16) FCX_LS(u32) FCX_LS(u64)
FCX_LS(f32) FCX_LS(f64) FCX_LS(c64) FCX_LS(c128)
#undef FCX_LS
/* bool reads its byte: any non-zero byte is true, as the host backend reads it */
template <class P> FCX_FN typename fcx_same<P, bool, bool>::type fcx_load_bool(const P *p) {
    return *(const unsigned char *)p != 0;
}
template <class P> FCX_FN typename fcx_same<P, bool, void>::type fcx_store_bool(P *p, bool v) {
    *(unsigned char *)p = v ? 1 : 0;
}
template <class P> FCX_FN typename fcx_same<P, fcx_t_f16, float>::type fcx_load_f16(const P *p) {
    return fcx_f16_to_f32(p->bits);
}
template <class P> FCX_FN typename fcx_same<P, fcx_t_f16, void>::type fcx_store_f16(P *p, float v) {
    p->bits = fcx_f32_to_f16(v);
}
template <class P> FCX_FN typename fcx_same<P, fcx_t_bf16, float>::type fcx_load_bf16(const P *p) {
    return fcx_bf16_to_f32(p->bits);
}
template <class P> FCX_FN typename fcx_same<P, fcx_t_bf16, void>::type fcx_store_bf16(P *p, float v) {
    p->bits = fcx_f32_to_bf16(v);
}

/* A user kernel's raw argument (graph/user.c): x[j] reads element j of the whole array in
 * row-major order, x.size() is its number of elements. */
#define FCX_RAW(D)                                                                             \
    struct fcx_raw_##D {                                                                       \
        const fcx_t_##D *p;                                                                    \
        long long n;                                                                           \
        FCX_FN fcx_ct_##D operator[](long long j) const { return fcx_load_##D(p + j); }        \
        FCX_FN long long size() const { return n; }                                           \
    };
FCX_RAW(bool) FCX_RAW(i8) FCX_RAW(i16) FCX_RAW(i32) FCX_RAW(i64) FCX_RAW(u8) FCX_RAW(u16)
FCX_RAW(u32) FCX_RAW(u64) FCX_RAW(f16) FCX_RAW(bf16) FCX_RAW(f32) FCX_RAW(f64) FCX_RAW(c64)
FCX_RAW(c128)
#undef FCX_RAW

/* ---- complex arithmetic (NumPy's formulas) ---------------------------------------------- */

template <class C> FCX_FN typename fcx_tc<C>::type operator+(C a, C b) { return C{a.re + b.re, a.im + b.im}; }
template <class C> FCX_FN typename fcx_tc<C>::type operator-(C a, C b) { return C{a.re - b.re, a.im - b.im}; }
template <class C> FCX_FN typename fcx_tc<C>::type operator-(C a) { return C{-a.re, -a.im}; }
template <class C> FCX_FN typename fcx_tc<C>::type operator*(C a, C b) {
    return C{a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
}
/* Smith's method; a zero divisor gives inf / NaN parts */
template <class C> FCX_FN typename fcx_tc<C>::type operator/(C a, C b) {
    typedef typename fcx_tc<C>::real R;
    R abr = fcx_m_fabs(b.re), abi = fcx_m_fabs(b.im);
    if (abr >= abi) {
        if (abr == 0 && abi == 0) return C{a.re / abr, a.im / abi};
        R rat = b.im / b.re, scl = (R)1 / (b.re + b.im * rat);
        return C{(a.re + a.im * rat) * scl, (a.im - a.re * rat) * scl};
    }
    R rat = b.re / b.im, scl = (R)1 / (b.im + b.re * rat);
    return C{(a.re * rat + a.im) * scl, (a.im * rat - a.re) * scl};
}
template <class C> FCX_FN typename fcx_tc<C>::test operator==(C a, C b) { return a.re == b.re && a.im == b.im; }
template <class C> FCX_FN typename fcx_tc<C>::test operator!=(C a, C b) { return a.re != b.re || a.im != b.im; }

/* ---- casts (host_convert.c: a wide value, then the target) ------------------------------ */

/* Float -> integer where C leaves it undefined: NaN -> 0, beyond int64 saturates, then the
 * integer wraps to the target width (fch_f64_to_i64 / fch_f64_to_u64). */
template <class D> FCX_FN long long fcx_f64_to_i64(D d) {
    if (d != d) return 0;
    if (d >= 0x1p63) return 0x7fffffffffffffffll;
    if (d <= -0x1p63) return -0x7fffffffffffffffll - 1;
    return (long long)d;
}
template <class D> FCX_FN unsigned long long fcx_f64_to_u64(D d) {
    if (d >= 0x1p64) return ~0ull;
    if (d >= 0x1p63) return (unsigned long long)d;
    return (unsigned long long)fcx_f64_to_i64(d);
}
/* The source side: the real part of a complex value (complex -> real drops the imaginary
 * part, as NumPy); its integer bits (toward u64 with that target's float rule); its value as
 * double, and as float (rounded directly from an integer, never twice); its imaginary part;
 * its truth. */
template <class T> FCX_FN auto fcx_re(T x) {
    if constexpr (fcx_kind<T>::v == 5) return x.re;
    else return x;
}
template <class T> FCX_FN unsigned long long fcx_wi(T x, bool to_u64) {
    if constexpr (fcx_kind<T>::v >= 4)
        return to_u64 ? fcx_f64_to_u64((double)fcx_re(x)) : (unsigned long long)fcx_f64_to_i64((double)fcx_re(x));
    else return (unsigned long long)x;
}
template <class T> FCX_FN double fcx_wd(T x) { return (double)fcx_re(x); }
template <class T> FCX_FN float fcx_wf(T x) { return (float)fcx_re(x); }
template <class T> FCX_FN double fcx_wim(T x) {
    if constexpr (fcx_kind<T>::v == 5) return x.im;
    else return 0;
}
template <class T> FCX_FN bool fcx_truth(T x) {
    if constexpr (fcx_kind<T>::v == 5) return x.re != 0 || x.im != 0;
    else return x != 0;
}

template <class T> FCX_FN bool fcx_cast_bool(T x) { return fcx_truth(x); }
template <class T> FCX_FN signed char fcx_cast_i8(T x) { return (signed char)fcx_wi(x, false); }
template <class T> FCX_FN short fcx_cast_i16(T x) { return (short)fcx_wi(x, false); }
template <class T> FCX_FN int fcx_cast_i32(T x) { return (int)fcx_wi(x, false); }
template <class T> FCX_FN long long fcx_cast_i64(T x) { return (long long)fcx_wi(x, false); }
template <class T> FCX_FN unsigned char fcx_cast_u8(T x) { return (unsigned char)fcx_wi(x, false); }
template <class T> FCX_FN unsigned short fcx_cast_u16(T x) { return (unsigned short)fcx_wi(x, false); }
template <class T> FCX_FN unsigned fcx_cast_u32(T x) { return (unsigned)fcx_wi(x, false); }
template <class T> FCX_FN unsigned long long fcx_cast_u64(T x) { return fcx_wi(x, true); }
/* f16 from a value computed in float (or held exactly in one: bool, 8- and 16-bit integers) is
 * one hardware rounding; from double, i32 and i64 the exact double routine (see above) */
template <class T> FCX_FN float fcx_cast_f16(T x) {
    if constexpr (sizeof(fcx_re(x)) == 4 && fcx_kind<T>::v >= 4) return fcx_round_f16(fcx_re(x));
    else if constexpr (sizeof(T) <= 2) return fcx_round_f16((float)x);
    else return fcx_f16_to_f32(fcx_f64_to_f16(fcx_wd(x)));
}
/* bf16 rounds from float, as ml_dtypes does (a double rounds twice) */
template <class T> FCX_FN float fcx_cast_bf16(T x) { return fcx_bf16_to_f32(fcx_f32_to_bf16(fcx_wf(x))); }
template <class T> FCX_FN float fcx_cast_f32(T x) { return fcx_wf(x); }
template <class T> FCX_FN double fcx_cast_f64(T x) { return fcx_wd(x); }
template <class T> FCX_FN fcx_t_c64 fcx_cast_c64(T x) { return fcx_t_c64{fcx_wf(x), (float)fcx_wim(x)}; }
template <class T> FCX_FN fcx_t_c128 fcx_cast_c128(T x) { return fcx_t_c128{fcx_wd(x), fcx_wim(x)}; }

#if FCX_PART_PAIRS
/* ---- 16-bit pairs: the vector step of elementwise kernels (issue 13) --------------------- *
 *
 * In the vector step of an elementwise kernel over contiguous data (codegen/cuda.c, gen_ew),
 * an f16 / bf16 node's values at elements 2u and 2u + 1 travel as one fcx_h2: both 16-bit
 * patterns in one 32-bit register, element 2u in the low half (their order in memory). A
 * 16-byte load is four pairs with no conversion, and one instruction computes both elements
 * wherever the hardware has a packed one that rounds as NumPy does:
 *   - + - * (and square): NumPy's 16-bit op rounds the op's f32 result once to the 16-bit
 *     format (ml_dtypes' bf16 likewise). For two p-bit operands (f16 p = 11, bf16 p = 8),
 *     f32's 24 bits are at least 2p + 2, so rounding the exact result to f32 and then to the
 *     16-bit format equals rounding it once to the 16-bit format (double rounding is
 *     innocuous: Figueroa, "When is double rounding innocuous?", 1995; a product of two such
 *     values, 22 or 16 bits, is even exact in f32 where it is an f32 normal; docs/ARCHITECTURE.md
 *     covers the subnormal corners). One rounding of the exact result is what
 *     add/sub/mul.rn.f16x2 and .bf16x2 compute (sm_90; sm_80 has bf16x2 only as fma.rn, which
 *     with 1 or -0 as an operand is the same single rounding, signed zeros included). The .rn
 *     forms are never contracted into an fma by ptxas, so NumPy's two roundings of a * b + c
 *     stay two.
 *   - negative, abs and where move bits (the sign bit, a select) and round nothing.
 *   - everything else unpacks to floats (exact), calls the scalar function on each lane and
 *     packs the two float results with one cvt.rn.f16x2.f32 (cvt.rn.bf16x2.f32): the single
 *     rounding of a value computed in float, as fcx_round_f16. A value computed in double
 *     keeps the exact routine per lane (fcx_pack_* picks by type, as fcx_cast_f16 does), and a
 *     cast to a 16-bit dtype casts each lane (fcx_cast_*) and joins the bits (fcx_join_*).
 *
 * NaN: the packed instructions give the canonical NaN (0x7fff) where the scalar path gives
 * the integer routines' quiet NaN (its sign kept, its payload dropped); a NaN's sign and
 * payload are among the differences the GPU tests allow (tests/test_gpu_diff.c, rule 3).
 * Loads, stores, where, negative, abs and casts keep a NaN's bits. The fast unpack (fcx_lo_*,
 * fcx_hi_*: one conversion instruction) may lose an f16 NaN's sign and payload, so the
 * generator uses it only where the result sees no more of an operand than whether it is NaN
 * (the result a packed 16-bit value), and the exact one (fcx_lox_* / fcx_hix_*) for
 * copysign, casts and results of other dtypes (signbit, comparisons).
 *
 * On the host (FCX_HOST) each instruction is its definition, lane by lane: the exact result
 * in double, rounded once to the format (fcx_f64_to_16), a NaN result 0x7fff, and the fast
 * unpack gives a NaN as a positive default NaN. A double holds the exact sum, difference or
 * product of two f16 values (at most 40 bits) and the product of two bf16 values; a bf16 sum
 * a double cannot hold has operands more than 2^45 apart, and then the exact sum and the
 * double sum both lie within 2^-37 of an ulp of the larger operand, so both round to it.
 * test_prelude checks these against the scalar float-then-round path (exhaustively for one
 * operand), so the device's instructions and the host backend agree bit for bit, NaN bits
 * aside. */
struct fcx_h2 { unsigned bits; };

#ifdef FCX_HOST
template <bool BF, class H> inline fcx_h2 fcx_emu2(H a, H b, int op) {
    unsigned r = 0;
    for (int s = 0; s < 32; s += 16) {
        unsigned x = (a.bits >> s) & 0xffffu, y = (b.bits >> s) & 0xffffu;
        double dx = BF ? fcx_bf16_to_f32(x) : fcx_sw_f16_to_f32(x), dy = BF ? fcx_bf16_to_f32(y) : fcx_sw_f16_to_f32(y);
        double e = op == 0 ? dx + dy : op == 1 ? dx - dy : dx * dy;
        r |= (unsigned)(e != e ? 0x7fffu : BF ? fcx_f64_to_16<7, -126>(e) : fcx_f64_to_16<10, -14>(e)) << s;
    }
    return fcx_h2{r};
}
#endif

/* OP: 0 add, 1 subtract, 2 multiply */
template <int OP, class H> FCX_FN fcx_h2 fcx_f16x2(H a, H b) {
#ifdef FCX_HOST
    return fcx_emu2<false>(a, b, OP);
#else
    fcx_h2 d;
    if constexpr (OP == 0) asm("add.rn.f16x2 %0, %1, %2;" : "=r"(d.bits) : "r"(a.bits), "r"(b.bits));
    else if constexpr (OP == 1) asm("sub.rn.f16x2 %0, %1, %2;" : "=r"(d.bits) : "r"(a.bits), "r"(b.bits));
    else asm("mul.rn.f16x2 %0, %1, %2;" : "=r"(d.bits) : "r"(a.bits), "r"(b.bits));
    return d;
#endif
}
template <int OP, class H> FCX_FN fcx_h2 fcx_bf16x2(H a, H b) {
#ifdef FCX_HOST
    return fcx_emu2<true>(a, b, OP);
#elif __CUDA_ARCH__ >= 900
    fcx_h2 d;
    if constexpr (OP == 0) asm("add.rn.bf16x2 %0, %1, %2;" : "=r"(d.bits) : "r"(a.bits), "r"(b.bits));
    else if constexpr (OP == 1) asm("sub.rn.bf16x2 %0, %1, %2;" : "=r"(d.bits) : "r"(a.bits), "r"(b.bits));
    else asm("mul.rn.bf16x2 %0, %1, %2;" : "=r"(d.bits) : "r"(a.bits), "r"(b.bits));
    return d;
#elif __CUDA_ARCH__ >= 800 /* a * 1 + b, b * -1 + a, a * b + -0: exact but for the one rounding */
    fcx_h2 d;
    if constexpr (OP == 0)
        asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(d.bits) : "r"(a.bits), "r"(0x3f803f80u), "r"(b.bits));
    else if constexpr (OP == 1)
        asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(d.bits) : "r"(b.bits), "r"(0xbf80bf80u), "r"(a.bits));
    else asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(d.bits) : "r"(a.bits), "r"(b.bits), "r"(0x80008000u));
    return d;
#else /* sm_75: no bf16 arithmetic; the float op and the integer rounding, lane by lane */
    unsigned r = 0;
    for (int s = 0; s < 32; s += 16) {
        float x = fcx_bitsf((a.bits >> s) << 16), y = fcx_bitsf((b.bits >> s) << 16);
        r |= (unsigned)fcx_sw_f32_to_bf16(OP == 0 ? x + y : OP == 1 ? x - y : x * y) << s;
    }
    return fcx_h2{r};
#endif
}

/* The named pair ops of dtype D: loads and stores of elements p[0], p[1]; + - *; the lanes as
 * floats (fast: fcx_lo/hi, exact: fcx_lox/hix); a pair from two floats computed in float (or
 * double: then the exact routine), from two floats that hold values of D (bits moved), from
 * one such value twice. */
#define FCX_H2_OPS(D, X2)                                                                      \
    template <class P> FCX_FN typename fcx_same<P, fcx_t_##D, fcx_h2>::type fcx_ld2_##D(const P *p) { \
        return fcx_h2{(unsigned)p[0].bits | (unsigned)p[1].bits << 16};                        \
    }                                                                                          \
    template <class P> FCX_FN typename fcx_same<P, fcx_t_##D, void>::type fcx_st2_##D(P *p, fcx_h2 h) { \
        p[0].bits = (unsigned short)h.bits;                                                    \
        p[1].bits = (unsigned short)(h.bits >> 16);                                            \
    }                                                                                          \
    template <class H> FCX_FN typename fcx_same<H, fcx_h2, fcx_h2>::type fcx_add2_##D(H a, H b) { return X2<0>(a, b); } \
    template <class H> FCX_FN typename fcx_same<H, fcx_h2, fcx_h2>::type fcx_sub2_##D(H a, H b) { return X2<1>(a, b); } \
    template <class H> FCX_FN typename fcx_same<H, fcx_h2, fcx_h2>::type fcx_mul2_##D(H a, H b) { return X2<2>(a, b); } \
    template <class H> FCX_FN typename fcx_same<H, fcx_h2, float>::type fcx_lox_##D(H h) { return fcx_##D##_to_f32(h.bits & 0xffffu); } \
    template <class H> FCX_FN typename fcx_same<H, fcx_h2, float>::type fcx_hix_##D(H h) { return fcx_##D##_to_f32(h.bits >> 16); } \
    template <class F> FCX_FN typename fcx_same<F, float, fcx_h2>::type fcx_join_##D(F a, F b) { \
        return fcx_h2{(unsigned)fcx_f32_to_##D(a) | (unsigned)fcx_f32_to_##D(b) << 16};        \
    }                                                                                          \
    template <class F> FCX_FN typename fcx_same<F, float, fcx_h2>::type fcx_splat_##D(F x) {   \
        return fcx_h2{(unsigned)fcx_f32_to_##D(x) * 0x10001u};                                 \
    }
FCX_H2_OPS(f16, fcx_f16x2)
FCX_H2_OPS(bf16, fcx_bf16x2)
#undef FCX_H2_OPS

/* Fast unpack: f16 by the conversion instruction (NaN: see above); bf16 is exact by a shift */
template <class H> FCX_FN typename fcx_same<H, fcx_h2, float>::type fcx_lo_f16(H h) {
#ifdef FCX_HOST
    return (h.bits & 0x7fffu) > 0x7c00u ? fcx_bitsf(0x7fffffffu) : fcx_sw_f16_to_f32(h.bits & 0xffffu);
#else
    return fcx_up_f16(h.bits & 0xffffu);
#endif
}
template <class H> FCX_FN typename fcx_same<H, fcx_h2, float>::type fcx_hi_f16(H h) {
#ifdef FCX_HOST
    return fcx_lo_f16(fcx_h2{h.bits >> 16});
#else
    return fcx_up_f16(h.bits >> 16);
#endif
}
template <class H> FCX_FN typename fcx_same<H, fcx_h2, float>::type fcx_lo_bf16(H h) { return fcx_bitsf(h.bits << 16); }
template <class H> FCX_FN typename fcx_same<H, fcx_h2, float>::type fcx_hi_bf16(H h) { return fcx_bitsf(h.bits & 0xffff0000u); }

/* Two floats computed in float, each rounded once (the per-op rounding of a 16-bit result) */
template <class F> FCX_FN fcx_h2 fcx_pack_f16(F a, F b) {
    if constexpr (fcx_kind<F>::v != 4 || sizeof(F) != 4) {
        return fcx_join_f16(fcx_cast_f16(a), fcx_cast_f16(b)); /* computed in double */
    } else {
#ifdef FCX_HOST
        return fcx_h2{(unsigned)(a != a ? 0x7fffu : fcx_sw_f32_to_f16(a)) | (unsigned)(b != b ? 0x7fffu : fcx_sw_f32_to_f16(b)) << 16};
#elif __CUDA_ARCH__ >= 800
        fcx_h2 d;
        asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(d.bits) : "f"(b), "f"(a)); /* b in the high half */
        return d;
#else
        return fcx_h2{(unsigned)fcx_rn_f16(a) | (unsigned)fcx_rn_f16(b) << 16};
#endif
    }
}
template <class F> FCX_FN fcx_h2 fcx_pack_bf16(F a, F b) {
    if constexpr (fcx_kind<F>::v != 4 || sizeof(F) != 4) {
        return fcx_join_bf16(fcx_cast_bf16(a), fcx_cast_bf16(b));
    } else {
#ifdef FCX_HOST
        return fcx_h2{(unsigned)(a != a ? 0x7fffu : fcx_sw_f32_to_bf16(a)) | (unsigned)(b != b ? 0x7fffu : fcx_sw_f32_to_bf16(b)) << 16};
#elif __CUDA_ARCH__ >= 800
        fcx_h2 d;
        asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(d.bits) : "f"(b), "f"(a));
        return d;
#else
        return fcx_h2{(unsigned)fcx_sw_f32_to_bf16(a) | (unsigned)fcx_sw_f32_to_bf16(b) << 16};
#endif
    }
}

/* Bit moves, the same for both formats: negative, abs, where */
template <class H> FCX_FN typename fcx_same<H, fcx_h2, fcx_h2>::type fcx_neg2(H a) { return fcx_h2{a.bits ^ 0x80008000u}; }
template <class H> FCX_FN typename fcx_same<H, fcx_h2, fcx_h2>::type fcx_abs2(H a) { return fcx_h2{a.bits & 0x7fff7fffu}; }
template <class H> FCX_FN typename fcx_same<H, fcx_h2, fcx_h2>::type fcx_where2(bool c0, bool c1, H a, H b) {
    return fcx_h2{((c0 ? a : b).bits & 0xffffu) | ((c1 ? a : b).bits & 0xffff0000u)};
}
#endif /* FCX_PART_PAIRS */

/* ---- ops on every type ------------------------------------------------------------------ */

template <class T> FCX_FN T fcx_where(bool c, T a, T b) { return c ? a : b; }
FCX_A(test) fcx_logical_and(T a, T b) { return fcx_truth(a) && fcx_truth(b); }
FCX_A(test) fcx_logical_or(T a, T b) { return fcx_truth(a) || fcx_truth(b); }
FCX_A(test) fcx_logical_xor(T a, T b) { return fcx_truth(a) != fcx_truth(b); }
FCX_A(test) fcx_logical_not(T a) { return !fcx_truth(a); }

/* ---- bool ------------------------------------------------------------------------------- */

FCX_B(type) fcx_add(T a, T b) { return a || b; }
FCX_B(type) fcx_mul(T a, T b) { return a && b; }
FCX_B(type) fcx_maximum(T a, T b) { return a || b; }
FCX_B(type) fcx_minimum(T a, T b) { return a && b; }
FCX_B(type) fcx_fmax(T a, T b) { return a || b; }
FCX_B(type) fcx_fmin(T a, T b) { return a && b; }
FCX_B(type) fcx_bitwise_and(T a, T b) { return a && b; }
FCX_B(type) fcx_bitwise_or(T a, T b) { return a || b; }
FCX_B(type) fcx_bitwise_xor(T a, T b) { return a != b; }
FCX_B(type) fcx_bitwise_not(T a) { return !a; }
FCX_B(type) fcx_abs(T a) { return a; }
FCX_B(type) fcx_floor(T a) { return a; }
FCX_B(type) fcx_ceil(T a) { return a; }
FCX_B(type) fcx_trunc(T a) { return a; }
FCX_B(type) fcx_real(T a) { return a; }
FCX_B(type) fcx_imag(T) { return false; }
FCX_B(type) fcx_clip(T a, T lo, T hi) { return (a || lo) && hi; }

/* ---- bool, integers and floats: the plain comparisons ----------------------------------- */

#define FCX_CMP(name, op)                                                                      \
    FCX_B(test) fcx_##name(T a, T b) { return a op b; }                                        \
    FCX_I(test) fcx_##name(T a, T b) { return a op b; }                                        \
    FCX_F(test) fcx_##name(T a, T b) { return a op b; }
FCX_CMP(less, <) FCX_CMP(less_equal, <=) FCX_CMP(greater, >) FCX_CMP(greater_equal, >=)
FCX_CMP(equal, ==) FCX_CMP(not_equal, !=)

/* isnan / isinf / isfinite of bool and integers: constants */
FCX_B(test) fcx_isnan(T) { return false; }
FCX_B(test) fcx_isinf(T) { return false; }
FCX_B(test) fcx_isfinite(T) { return true; }
FCX_I(test) fcx_isnan(T) { return false; }
FCX_I(test) fcx_isinf(T) { return false; }
FCX_I(test) fcx_isfinite(T) { return true; }

/* ---- integers: unsigned arithmetic in fcx_ti<T>::wide, so overflow wraps without UB ------ */

#define FCX_W typename fcx_ti<T>::wide
FCX_I(type) fcx_add(T a, T b) { return (T)((FCX_W)a + (FCX_W)b); }
FCX_I(type) fcx_sub(T a, T b) { return (T)((FCX_W)a - (FCX_W)b); }
FCX_I(type) fcx_mul(T a, T b) { return (T)((FCX_W)a * (FCX_W)b); }
FCX_I(type) fcx_square(T a) { return (T)((FCX_W)a * (FCX_W)a); }
FCX_I(type) fcx_negative(T a) { return (T)(0 - (FCX_W)a); }
/* x // 0 == 0 and x % 0 == 0 (NumPy); MIN // -1 wraps to MIN, MIN % -1 == 0 */
FCX_I(type) fcx_floordiv(T a, T b) {
    if (b == 0) return 0;
    if constexpr (fcx_ti<T>::sgn) {
        if (b == -1) return (T)(0 - (FCX_W)a);
        T q = (T)(a / b);
        if (a % b != 0 && ((a < 0) != (b < 0))) q--;
        return q;
    } else {
        return (T)(a / b);
    }
}
FCX_I(type) fcx_mod(T a, T b) {
    if (b == 0) return 0;
    if constexpr (fcx_ti<T>::sgn) {
        if (b == -1) return 0;
        T r = (T)(a % b);
        if (r != 0 && ((r < 0) != (b < 0))) r = (T)(r + b);
        return r;
    } else {
        return (T)(a % b);
    }
}
/* C's %: the dividend's sign; x fmod 0 == 0 and MIN fmod -1 == 0 (NumPy) */
FCX_I(type) fcx_fmod(T a, T b) {
    if (b == 0) return 0;
    if constexpr (fcx_ti<T>::sgn)
        if (b == -1) return 0;
    return (T)(a % b);
}
/* By squaring. A negative exponent raises fcx_value_error (FC_ERR_VALUE, as on the host). */
FCX_I(type) fcx_pow(T a, T b) {
    if constexpr (fcx_ti<T>::sgn)
        if (b < 0) {
            fcx_raise(FCX_RAISE_POWER);
            return 0;
        }
    FCX_W r = 1, base = (FCX_W)a;
    for (unsigned long long e = (unsigned long long)b; e; e >>= 1) {
        if (e & 1) r *= base;
        base *= base;
    }
    return (T)r;
}
FCX_I(type) fcx_maximum(T a, T b) { return a > b ? a : b; }
FCX_I(type) fcx_minimum(T a, T b) { return a < b ? a : b; }
FCX_I(type) fcx_fmax(T a, T b) { return a > b ? a : b; }
FCX_I(type) fcx_fmin(T a, T b) { return a < b ? a : b; }
FCX_I(type) fcx_clip(T a, T lo, T hi) { T m = a > lo ? a : lo; return m < hi ? m : hi; }
FCX_I(type) fcx_bitwise_and(T a, T b) { return (T)(a & b); }
FCX_I(type) fcx_bitwise_or(T a, T b) { return (T)(a | b); }
FCX_I(type) fcx_bitwise_xor(T a, T b) { return (T)(a ^ b); }
FCX_I(type) fcx_bitwise_not(T a) { return (T)~a; }
/* A shift by the width or more, or by a negative count, gives 0 (-1 for a negative value
 * shifted right), as NumPy's npy_lshift / npy_rshift. */
template <class T> FCX_FN bool fcx_shift_out(T b) {
    if constexpr (fcx_ti<T>::sgn)
        if (b < 0) return true;
    return b >= (T)fcx_ti<T>::bits;
}
FCX_I(type) fcx_left_shift(T a, T b) { return fcx_shift_out(b) ? (T)0 : (T)((FCX_W)a << b); }
FCX_I(type) fcx_right_shift(T a, T b) {
    if constexpr (fcx_ti<T>::sgn) {
        if (fcx_shift_out(b)) return (T)(a < 0 ? -1 : 0);
        return (T)(a < 0 ? ~(~a >> b) : a >> b); /* arithmetic, spelled without UB */
    } else {
        return fcx_shift_out(b) ? (T)0 : (T)(a >> b);
    }
}
FCX_I(type) fcx_abs(T a) {
    if constexpr (fcx_ti<T>::sgn) return a < 0 ? (T)(0 - (FCX_W)a) : a;
    else return a;
}
FCX_I(type) fcx_sign(T a) {
    if constexpr (fcx_ti<T>::sgn) return (T)((a > 0) - (a < 0));
    else return (T)(a > 0);
}
/* 1 // x in integers (the host backend's choice; NumPy leaves 1 / 0 to the C cast) */
FCX_I(type) fcx_reciprocal(T a) {
    if constexpr (fcx_ti<T>::sgn) return (a == 1 || a == -1) ? a : (T)0;
    else return (T)(a == 1);
}
FCX_I(type) fcx_floor(T a) { return a; }
FCX_I(type) fcx_ceil(T a) { return a; }
FCX_I(type) fcx_trunc(T a) { return a; }
FCX_I(type) fcx_rint(T a) { return a; }
FCX_I(type) fcx_real(T a) { return a; }
FCX_I(type) fcx_imag(T) { return 0; }
FCX_I(type) fcx_conj(T a) { return a; }
#undef FCX_W

/* ---- real floats (f16 and bf16 loops run in float) -------------------------------------- */

FCX_F(type) fcx_add(T a, T b) { return a + b; }
FCX_F(type) fcx_sub(T a, T b) { return a - b; }
FCX_F(type) fcx_mul(T a, T b) { return a * b; }
FCX_F(type) fcx_div(T a, T b) { return a / b; }
/* a / b for float a and a divisor b that is constant over a row kernel's loop (a row's sum or
 * norm), given rb = fcx_recip_wide(b) computed once: the same bits as a / b, in a double
 * multiply and two conversions instead of the division's 10-odd instructions each element
 * (issue 13: layernorm and softmax rows were instruction-bound). Why exact: rb = 1/b (1 + e1),
 * q = a rb (1 + e2), |e1|, |e2| <= 2^-53, so q is within 2^-52 of a / b relatively. Rounding
 * q to float can only differ from rounding a / b if a float midpoint M = N 2^k (N odd, of 25
 * bits, normal range and the overflow threshold alike) lies between them; but a - b M is not
 * 0 (the odd part of a has at most 24 bits, that of b M at least 25: a quotient of floats is
 * never a midpoint) and is a multiple of 2^min(ea, eb + k) (ea, eb: the exponents of the
 * last bits of a, b), so |a / b - M| > 2^-49 M, far outside q's error. Below FLT_MIN the
 * midpoints have fewer bits and a quotient can be one (2^-149 / 2 is a tie), so a result
 * there takes the division; zeros, infinities and NaN come out of the multiply as the
 * division gives them (signs included; NaN payloads aside, as everywhere on the device). */
template <class T> FCX_FN double fcx_recip_wide(T b) {
    static_assert(sizeof(T) == 4, "fcx_recip_wide: float divisors only");
    return 1.0 / (double)b;
}
template <class T> FCX_FN T fcx_div_recip(T a, T b, double rb) {
    static_assert(sizeof(T) == 4, "fcx_div_recip: float quotients only");
    const double q = (double)a * rb;
    if (fcx_m_fabs(q) < 0x1p-126 && a != 0) return a / b;
    return (T)q;
}
/* npy_divmod: fmod, moved to the divisor's sign, the quotient snapped to an integer */
FCX_F(type) fcx_divmod(T a, T b, T *modp) {
    T mod = fcx_m_fmod(a, b);
    if (!b) {
        *modp = mod;
        return a / b;
    }
    T div = (a - mod) / b;
    if (mod) {
        if ((b < 0) != (mod < 0)) {
            mod += b;
            div -= 1;
        }
    } else {
        mod = fcx_m_copysign((T)0, b);
    }
    T fl;
    if (div) {
        fl = fcx_m_floor(div);
        if (div - fl > (T)0.5) fl += 1;
    } else {
        fl = fcx_m_copysign((T)0, a / b);
    }
    *modp = mod;
    return fl;
}
FCX_F(type) fcx_floordiv(T a, T b) {
    T mod;
    return b ? fcx_divmod(a, b, &mod) : a / b;
}
FCX_F(type) fcx_mod(T a, T b) {
    T mod;
    if (!b) return fcx_m_fmod(a, b);
    fcx_divmod(a, b, &mod);
    return mod;
}
FCX_F(type) fcx_pow(T a, T b) { return fcx_m_pow(a, b); }
FCX_F(type) fcx_arctan2(T a, T b) { return fcx_m_atan2(a, b); }
/* NaN in a wins; on a tie the second operand (NumPy's loops do the same: max(0., -0.) = -0.) */
FCX_F(type) fcx_maximum(T a, T b) { return (a > b || a != a) ? a : b; }
FCX_F(type) fcx_minimum(T a, T b) { return (a < b || a != a) ? a : b; }
FCX_F(type) fcx_fmax(T a, T b) { return (a > b || b != b) ? a : b; }
FCX_F(type) fcx_fmin(T a, T b) { return (a < b || b != b) ? a : b; }
FCX_F(type) fcx_clip(T a, T lo, T hi) { /* NaN in a (then in lo) propagates */
    T m = a != a ? a : (a > lo ? a : lo);
    return m != m ? m : (m < hi ? m : hi);
}
FCX_F(type) fcx_negative(T a) { return -a; }
FCX_F(type) fcx_abs(T a) { return fcx_m_fabs(a); }
FCX_F(type) fcx_sign(T a) { return a > 0 ? (T)1 : a < 0 ? (T)-1 : a == 0 ? (T)0 : a; }
FCX_F(type) fcx_square(T a) { return a * a; }
FCX_F(type) fcx_reciprocal(T a) { return (T)1 / a; }
#define FCX_FU(op, f) FCX_F(type) fcx_##op(T a) { return fcx_m_##f(a); }
FCX_FU(sqrt, sqrt) FCX_FU(cbrt, cbrt) FCX_FU(exp, exp) FCX_FU(exp2, exp2) FCX_FU(expm1, expm1)
FCX_FU(log, log) FCX_FU(log2, log2) FCX_FU(log10, log10) FCX_FU(log1p, log1p) FCX_FU(sin, sin)
FCX_FU(cos, cos) FCX_FU(tan, tan) FCX_FU(arcsin, asin) FCX_FU(arccos, acos) FCX_FU(arctan, atan)
FCX_FU(sinh, sinh) FCX_FU(cosh, cosh) FCX_FU(tanh, tanh) FCX_FU(arcsinh, asinh)
FCX_FU(arccosh, acosh) FCX_FU(arctanh, atanh) FCX_FU(floor, floor) FCX_FU(ceil, ceil)
FCX_FU(trunc, trunc) FCX_FU(rint, rint)
#undef FCX_FU
FCX_F(test) fcx_isnan(T a) { return a != a; }
FCX_F(test) fcx_isinf(T a) { return fcx_inf(a); }
FCX_F(test) fcx_isfinite(T a) { return fcx_finite(a); }
FCX_F(type) fcx_real(T a) { return a; }
FCX_F(type) fcx_imag(T) { return 0; }
FCX_F(type) fcx_conj(T a) { return a; }
FCX_F(type) fcx_angle(T a) { return fcx_m_atan2((T)0, a); } /* np.angle: arctan2(0, x) */
FCX_F(type) fcx_hypot(T a, T b) { return fcx_m_hypot(a, b); }
FCX_F(type) fcx_copysign(T a, T b) { return fcx_m_copysign(a, b); }
FCX_F(type) fcx_fmod(T a, T b) { return fcx_m_fmod(a, b); }
FCX_F(type) fcx_erf(T a) { return fcx_m_erf(a); }
FCX_F(type) fcx_erfc(T a) { return fcx_m_erfc(a); }
FCX_F(type) fcx_lgamma(T a) { return fcx_m_lgamma(a); }
/* GELU: the host's expressions (ref/host_ew_float.h), operation for operation */
FCX_F(type) fcx_gelu(T a) {
    return (T)0.5 * a * fcx_m_erfc(-a * (T)0.707106781186547524400844362104849039);
}
FCX_F(type) fcx_gelu_tanh(T a) {
    const T k = (T)-1.595769121605730711759596218036645605; /* -2 sqrt(2 / pi) */
    return a / (1 + fcx_m_exp(k * (a + (T)0.044715 * (a * a * a))));
}
FCX_F(test) fcx_signbit(T a) {
    if constexpr (sizeof(T) == 4) return (fcx_fbits(a) >> 31) != 0;
    else return (fcx_dbits(a) >> 63) != 0;
}
/* npy_logaddexp / npy_logaddexp2: the larger operand plus log1p of the smaller's share, so
 * nothing overflows. Equal operands (infinities of one sign too) give a + ln 2 (a + 1); a
 * NaN difference is the result. */
FCX_F(type) fcx_logaddexp(T a, T b) {
    if (a == b) return a + (T)0.693147180559945309417232121458176568;
    T d = a - b;
    if (d > 0) return a + fcx_m_log1p(fcx_m_exp(-d));
    if (d <= 0) return b + fcx_m_log1p(fcx_m_exp(d));
    return d;
}
FCX_F(type) fcx_logaddexp2(T a, T b) {
    const T log2e = (T)1.442695040888963407359924681001892137;
    if (a == b) return a + 1;
    T d = a - b;
    if (d > 0) return a + log2e * fcx_m_log1p(fcx_m_exp2(-d));
    if (d <= 0) return b + log2e * fcx_m_log1p(fcx_m_exp2(d));
    return d;
}
/* f32 and f64 loops. A 16-bit loop runs in float, where a step of one float ulp would round
 * straight back to x: the code generator calls fcx_nextafter_f16 / _bf16 for those, which
 * step the format's own bits (inf: its infinity, qnan: its quiet NaN). NumPy's f16 loop
 * (npy_half_nextafter) keeps x when x == y, so nextafter(0, -0) is +0; ml_dtypes' bf16 loop
 * returns y there, as C does. */
FCX_F(type) fcx_nextafter(T a, T b) { return fcx_m_nextafter(a, b); }
template <class U> FCX_FN unsigned short fcx_nextafter16(U x, U y, U inf, U qnan, bool tie_x) {
    U ax = x & 0x7fffu, ay = y & 0x7fffu;
    if (ax > inf || ay > inf) return (unsigned short)qnan;
    if (x == y || (ax == 0 && ay == 0)) return (unsigned short)(tie_x ? x : y);
    if (ax == 0) return (unsigned short)((y & 0x8000u) | 1u); /* the smallest subnormal toward y */
    /* away from zero only when y lies beyond x on x's side */
    return (unsigned short)(((x ^ y) & 0x8000u) == 0 && ax < ay ? x + 1u : x - 1u);
}
template <class T> FCX_FN typename fcx_same<T, float, float>::type fcx_nextafter_f16(T a, T b) {
    return fcx_f16_to_f32(fcx_nextafter16<unsigned>(fcx_f32_to_f16(a), fcx_f32_to_f16(b), 0x7c00u, 0x7e00u, true));
}
template <class T> FCX_FN typename fcx_same<T, float, float>::type fcx_nextafter_bf16(T a, T b) {
    return fcx_bf16_to_f32(fcx_nextafter16<unsigned>(fcx_f32_to_bf16(a), fcx_f32_to_bf16(b), 0x7f80u, 0x7fc0u, false));
}

#if FCX_PART_COMPLEX
/* ---- complex: C99 Annex G functions, computed in double --------------------------------- */

/* The kernels fcx_z_<fn>(x, y) take double parts (D is always double: a template only so
 * that unused ones cost nothing) and follow Annex G's special values, with glibc's choices
 * where it leaves a sign open. */
#define FCX_PI 3.14159265358979323846
#define FCX_LN2 0.693147180559945309417

/* Error-free a + b = s + *e (Knuth's two-sum; needs --fmad=false). */
template <class D> FCX_FN D fcx_two_sum(D a, D b, D *e) {
    D s = a + b, bb = s - a;
    *e = (a - (s - bb)) + (b - bb);
    return s;
}
/* a*a + b*b - 1 (a >= b) from its exact terms by cascaded two-sums, for log|z| near |z| == 1
 * where log(hypot) would lose its digits */
template <class D> FCX_FN D fcx_x2y2m1(D a, D b) {
    D pa = a * a, pb = b * b, ea = fma(a, a, -pa), eb = fma(b, b, -pb), e1, e2, e3, e4;
    D s = fcx_two_sum(pa, (D)-1, &e1);
    s = fcx_two_sum(s, pb, &e2);
    s = fcx_two_sum(s, ea, &e3);
    s = fcx_two_sum(s, eb, &e4);
    return s + (((e1 + e2) + e3) + e4);
}

template <class D> FCX_BIG fcx_t_c128 fcx_z_sqrt(D x, D y) {
    const D inf = fcx_inf_of<D>();
    if (fcx_inf(y)) return {inf, y};
    if (x != x) return {x, x};
    if (fcx_inf(x)) {
        if (x > 0) return {x, y != y ? y : fcx_m_copysign((D)0, y)};
        return {y != y ? y : (D)0, fcx_m_copysign(inf, y)};
    }
    if (y != y) return {y, y};
    if (x == 0 && y == 0) return {0.0, y};
    D a = fcx_m_fabs(x), b = fcx_m_fabs(y), scale = 1;
    if (a > 0x1p1020 || b > 0x1p1020) { /* a + |z| would overflow */
        a *= 0.25;
        b *= 0.25;
        scale = 2;
    } else if (a < 0x1p-1000 && b < 0x1p-1000) { /* keep the digits of subnormals */
        a *= 0x1p600;
        b *= 0x1p600;
        scale = 0x1p-300;
    }
    D t = fcx_m_sqrt(0.5 * (a + fcx_m_hypot(a, b)));
    if (x >= 0) return {t * scale, fcx_m_copysign(b / (2 * t), y) * scale};
    return {b / (2 * t) * scale, fcx_m_copysign(t, y) * scale};
}

template <class D> FCX_BIG fcx_t_c128 fcx_z_exp(D x, D y) {
    if (fcx_finite(x)) {
        if (!fcx_finite(y)) return {y - y, y - y};
        if (y == 0) return {fcx_m_exp(x), y};
        D c = fcx_m_cos(y), s = fcx_m_sin(y);
        if (x > 708) { /* exp(x) overflows before the products would: split it */
            D h = fcx_m_exp(0.5 * x);
            return {c * h * h, s * h * h};
        }
        D e = fcx_m_exp(x);
        return {e * c, e * s};
    }
    if (x != x) return {x, y == 0 ? y : x};
    if (x > 0) {
        if (y == 0) return {x, y};
        if (!fcx_finite(y)) return {x, y - y};
        return {fcx_m_copysign(x, fcx_m_cos(y)), fcx_m_copysign(x, fcx_m_sin(y))};
    }
    if (!fcx_finite(y)) return {0.0, fcx_m_copysign((D)0, y)};
    return {fcx_m_copysign((D)0, fcx_m_cos(y)), fcx_m_copysign((D)0, fcx_m_sin(y))};
}

template <class D> FCX_BIG fcx_t_c128 fcx_z_log(D x, D y) {
    const D inf = fcx_inf_of<D>();
    if (fcx_inf(x) || fcx_inf(y)) return {inf, fcx_m_atan2(y, x)};
    if (x != x || y != y) return {x + y, x + y};
    D a = fcx_m_fabs(x), b = fcx_m_fabs(y), re;
    if (a < b) {
        D t = a;
        a = b;
        b = t;
    }
    if (a == 0) return {-inf, fcx_m_atan2(y, x)};
    D h = fcx_m_hypot(a, b);
    if (h > 0.7 && h < 1.4) re = 0.5 * fcx_m_log1p(fcx_x2y2m1(a, b));
    else if (a > 0x1p1020) re = fcx_m_log(fcx_m_hypot(0.5 * a, 0.5 * b)) + FCX_LN2;
    else if (a < 0x1p-1000) re = fcx_m_log(fcx_m_hypot(a * 0x1p600, b * 0x1p600)) - 600 * FCX_LN2;
    else re = fcx_m_log(h);
    return {re, fcx_m_atan2(y, x)};
}

/* sinh(x + iy) = (sinh x cos y, cosh x sin y); cosh(x + iy) = (cosh x cos y, sinh x sin y) */
template <class D> FCX_BIG fcx_t_c128 fcx_z_sinh(D x, D y, bool cosh) {
    if (y == 0) { /* the imaginary part is an exact zero, even where cosh x overflows */
        if (cosh) return {fcx_m_cosh(x), x != x ? y : y * fcx_m_copysign((D)1, x)};
        return {fcx_m_sinh(x), y};
    }
    if (!fcx_finite(y)) { /* glibc: +0 and +inf where Annex G leaves the sign open */
        if (x == 0) return {cosh ? y - y : x, cosh ? (D)0 : y - y};
        if (fcx_inf(x)) return {fcx_m_fabs(x), y - y};
        return {y - y, y - y};
    }
    if (x != x) return {x, x};
    D c = fcx_m_cos(y), s = fcx_m_sin(y), sh, ch, scale = 1, ax = fcx_m_fabs(x);
    if (ax < 20) {
        sh = fcx_m_sinh(x);
        ch = fcx_m_cosh(x);
    } else { /* cosh x == |sinh x| == e^|x| / 2 in double; split the exponential where it overflows */
        ch = ax > 709 ? fcx_m_exp(0.5 * ax) : 0.5 * fcx_m_exp(ax);
        if (ax > 709) scale = 0.5 * ch;
        sh = fcx_m_copysign(ch, x);
    }
    if (cosh) return {ch * c * scale, sh * s * scale};
    return {sh * c * scale, ch * s * scale};
}

/* tanh(x + iy) = (sinh x cosh x + i sin y cos y) / (sinh^2 x + cos^2 y): no cancellation */
template <class D> FCX_BIG fcx_t_c128 fcx_z_tanh(D x, D y) {
    if (x != x) return {x, y == 0 ? y : x};
    if (fcx_inf(x)) /* 1 + i0 sin(2y) */
        return {fcx_m_copysign((D)1, x),
                fcx_m_copysign((D)0, fcx_finite(y) ? fcx_m_sin(y) * fcx_m_cos(y) : y)};
    if (!fcx_finite(y)) return {x == 0 ? x : y - y, y - y};
    if (y == 0) return {fcx_m_tanh(x), y};
    D s = fcx_m_sin(y), c = fcx_m_cos(y);
    if (fcx_m_fabs(x) > 354) { /* sinh^2 x overflows: the real part is +-1, the rest 4 e^-2|x| */
        D e = fcx_m_exp(-fcx_m_fabs(x));
        return {fcx_m_copysign((D)1, x), 4 * s * c * e * e};
    }
    D sh = fcx_m_sinh(x), ch = fcx_m_cosh(x), d = sh * sh + c * c;
    return {sh * ch / d, s * c / d};
}

/* asin(x + iy) for finite x, y >= 0, by Hull, Fairgrieve and Tang (ACM TOMS 23(3), 1997):
 * *ras = Re asin, *rac = Re acos, *im = Im asin = -Im acos (>= 0). */
template <class D> FCX_BIG void fcx_z_asin_core(D x, D y, D *ras, D *rac, D *im) {
    if (x > 0x1p28 || y > 0x1p28) { /* asin z ~ pi/2 - arg z - i log(2|z|) */
        *ras = fcx_m_atan2(x, y);
        *rac = fcx_m_atan2(y, x);
        D s = (x > 0x1p1000 || y > 0x1p1000) ? 0.25 : 1;
        *im = fcx_m_log(fcx_m_hypot(x * s, y * s)) + FCX_LN2 - fcx_m_log(s);
        return;
    }
    if (x < 0x1p-28 && y < 0x1p-28) { /* asin z ~ z */
        *ras = x;
        *rac = FCX_PI / 2 - x;
        *im = y;
        return;
    }
    if (y < 0x1p-500) { /* y^2 would underflow: first-order terms in y (sqrt y at x == 1) */
        if (x < 1) {
            *ras = fcx_m_asin(x);
            *rac = fcx_m_acos(x);
            *im = y / fcx_m_sqrt((1 - x) * (1 + x));
        } else if (x == 1) {
            *ras = FCX_PI / 2;
            *rac = *im = fcx_m_sqrt(y);
        } else {
            *ras = FCX_PI / 2;
            *rac = y / fcx_m_sqrt((x - 1) * (x + 1));
            *im = fcx_m_log1p((x - 1) + fcx_m_sqrt((x - 1) * (x + 1)));
        }
        return;
    }
    D r = fcx_m_hypot(x + 1, y), s = fcx_m_hypot(x - 1, y), a = 0.5 * (r + s), b = x / a;
    D y2 = y * y;
    if (b <= 0.6417) {
        *ras = fcx_m_asin(b);
        *rac = fcx_m_acos(b);
    } else { /* asin / acos of b near 1 lose digits: take an arctangent of exact-ish parts */
        D d = x <= 1 ? fcx_m_sqrt(0.5 * (a + x) * (y2 / (r + x + 1) + (s + (1 - x))))
                     : y * fcx_m_sqrt(0.5 * ((a + x) / (r + x + 1) + (a + x) / (s + (x - 1))));
        *ras = fcx_m_atan(x / d);
        *rac = fcx_m_atan(d / x);
    }
    if (a <= 1.5) { /* log(a + sqrt(a^2 - 1)) through a - 1, computed without cancellation */
        D am1 = x < 1 ? 0.5 * (y2 / (r + x + 1) + y2 / (s + (1 - x)))
                      : 0.5 * (y2 / (r + x + 1) + (s + (x - 1)));
        *im = fcx_m_log1p(am1 + fcx_m_sqrt(am1 * (a + 1)));
    } else {
        *im = fcx_m_log(a + fcx_m_sqrt((a - 1) * (a + 1)));
    }
}

template <class D> FCX_BIG fcx_t_c128 fcx_z_asinh(D x, D y) {
    if (x != x || y != y) {
        if (fcx_inf(x)) return {x, y};
        if (fcx_inf(y)) return {fcx_m_copysign(fcx_inf_of<D>(), x), x};
        if (y == 0) return {x, y};
        return {x + y, x + y};
    }
    if (fcx_inf(x) || fcx_inf(y)) {
        D im = fcx_inf(x) ? (fcx_inf(y) ? FCX_PI / 4 : 0.0) : FCX_PI / 2;
        return {fcx_m_copysign(fcx_inf_of<D>(), x), fcx_m_copysign(im, y)};
    }
    D ras, rac, im; /* asinh z = -i asin(iz) */
    fcx_z_asin_core(fcx_m_fabs(y), fcx_m_fabs(x), &ras, &rac, &im);
    return {fcx_m_copysign(im, x), fcx_m_copysign(ras, y)};
}

template <class D> FCX_BIG fcx_t_c128 fcx_z_acos(D x, D y) {
    if (x != x || y != y) {
        /* -inf with y's sign flipped, from y's sign bit: negating a NaN need not flip its
         * sign on the device (PTX leaves neg of a NaN unspecified), copysign reads the bit. */
        if (fcx_inf(x)) return {y, -fcx_m_copysign(fcx_inf_of<D>(), y)};
        if (fcx_inf(y)) return {x, -y};
        if (x == 0) return {FCX_PI / 2, y};
        return {x + y, x + y};
    }
    if (fcx_inf(x) || fcx_inf(y)) {
        D re = fcx_inf(y) ? (fcx_inf(x) ? (x > 0 ? FCX_PI / 4 : 3 * FCX_PI / 4) : FCX_PI / 2)
                          : (x > 0 ? 0.0 : FCX_PI);
        return {re, -fcx_m_copysign(fcx_inf_of<D>(), y)};
    }
    D ras, rac, im;
    fcx_z_asin_core(fcx_m_fabs(x), fcx_m_fabs(y), &ras, &rac, &im);
    return {fcx_m_copysign((D)1, x) < 0 ? FCX_PI - rac : rac, fcx_m_copysign(im, -y)};
}

/* acosh z = (|Im acos z|, Re acos z with the sign of y) */
template <class D> FCX_BIG fcx_t_c128 fcx_z_acosh(D x, D y) {
    fcx_t_c128 a = fcx_z_acos(x, y);
    if (a.im != a.im) return {fcx_m_fabs(a.im), a.re};
    return {fcx_m_fabs(a.im), fcx_m_copysign(a.re, y)};
}

template <class D> FCX_BIG fcx_t_c128 fcx_z_atanh(D x, D y) {
    if (x != x || y != y) {
        if (fcx_inf(x)) return {fcx_m_copysign((D)0, x), y};
        if (fcx_inf(y)) return {fcx_m_copysign((D)0, x), fcx_m_copysign((D)(FCX_PI / 2), y)};
        if (x == 0) return {x, y};
        return {x + y, x + y};
    }
    if (fcx_inf(x) || fcx_inf(y)) return {fcx_m_copysign((D)0, x), fcx_m_copysign((D)(FCX_PI / 2), y)};
    D ax = fcx_m_fabs(x), ay = fcx_m_fabs(y), re, im;
    if (ax > 0x1p28 || ay > 0x1p28) { /* x / |z|^2 and pi/2 - y / |z|^2 */
        D s = (ax > 0x1p1000 || ay > 0x1p1000) ? 0.25 : 1, h = fcx_m_hypot(ax * s, ay * s);
        re = ax * s / h / h * s;
        im = FCX_PI / 2 - ay * s / h / h * s;
    } else if (ax < 0x1p-28 && ay < 0x1p-28) { /* atanh z ~ z */
        re = ax;
        im = ay;
    } else {
        if (ax == 1 && ay < 0x1p-500) re = 0.5 * (FCX_LN2 - fcx_m_log(ay)); /* y^2 underflows */
        else re = 0.25 * fcx_m_log1p(4 * ax / ((1 - ax) * (1 - ax) + ay * ay));
        im = 0.5 * fcx_m_atan2(2 * ay, (1 - ax) * (1 + ax) - ay * ay);
    }
    return {fcx_m_copysign(re, x), fcx_m_copysign(im, y)};
}

/* The complex ops: the double kernel, rounded once to T's parts. sin z = -i sinh(iz),
 * cos z = cosh(iz), tan z = -i tanh(iz), asin z = -i asinh(iz), atan z = -i atanh(iz), the
 * identities by which the C standard defines them (and their special values). */
template <class T> FCX_FN T fcx_cx_round(fcx_t_c128 r) {
    typedef typename fcx_tc<T>::real R;
    return T{(R)r.re, (R)r.im};
}
template <class T> FCX_FN T fcx_cx_round_rot(fcx_t_c128 r) { /* -i r */
    typedef typename fcx_tc<T>::real R;
    return T{(R)r.im, (R)-r.re};
}
#define FCX_ZF(op, expr)                                                                       \
    FCX_C(type) fcx_##op(T z) {                                                                \
        double x = z.re, y = z.im;                                                             \
        return expr;                                                                           \
    }
FCX_ZF(sqrt, fcx_cx_round<T>(fcx_z_sqrt(x, y)))
FCX_ZF(exp, fcx_cx_round<T>(fcx_z_exp(x, y)))
FCX_ZF(log, fcx_cx_round<T>(fcx_z_log(x, y)))
FCX_ZF(sinh, fcx_cx_round<T>(fcx_z_sinh(x, y, false)))
FCX_ZF(cosh, fcx_cx_round<T>(fcx_z_sinh(x, y, true)))
FCX_ZF(tanh, fcx_cx_round<T>(fcx_z_tanh(x, y)))
FCX_ZF(arcsinh, fcx_cx_round<T>(fcx_z_asinh(x, y)))
FCX_ZF(arccos, fcx_cx_round<T>(fcx_z_acos(x, y)))
FCX_ZF(arccosh, fcx_cx_round<T>(fcx_z_acosh(x, y)))
FCX_ZF(arctanh, fcx_cx_round<T>(fcx_z_atanh(x, y)))
FCX_ZF(sin, (fcx_inf(y) && !fcx_finite(x) ? T{z.re - z.re, fcx_inf_of<decltype(z.re)>()} /* glibc's */
                                            : fcx_cx_round_rot<T>(fcx_z_sinh(-y, x, false))))
FCX_ZF(cos, fcx_cx_round<T>(fcx_z_sinh(-y, x, true)))
FCX_ZF(tan, fcx_cx_round_rot<T>(fcx_z_tanh(-y, x)))
FCX_ZF(arcsin, fcx_cx_round_rot<T>(fcx_z_asinh(-y, x)))
FCX_ZF(arctan, fcx_cx_round_rot<T>(fcx_z_atanh(-y, x)))
#undef FCX_ZF

/* ---- complex: NumPy's own loops (funcs.inc.src), computed in T's precision -------------- */

FCX_C(type) fcx_add(T a, T b) { return a + b; }
FCX_C(type) fcx_sub(T a, T b) { return a - b; }
FCX_C(type) fcx_mul(T a, T b) { return a * b; }
/* Merges two partial products of a complex reduction. A partial that saw no element is the
 * identity and is passed over, not multiplied in: NumPy's prod of [inf + 0i] is 1 * (inf + 0i)
 * = inf + NaN i, and one more factor 1 + 0i from an idle thread would make it NaN + NaN i. */
FCX_C(type) fcx_prod_merge(T a, T b) {
    if (a.re == 1 && a.im == 0) return b;
    if (b.re == 1 && b.im == 0) return a;
    return a * b;
}
FCX_C(type) fcx_div(T a, T b) { return a / b; }
FCX_C(type) fcx_negative(T a) { return -a; }
FCX_C(type) fcx_square(T a) { return a * a; }
FCX_C(type) fcx_conj(T a) { return T{a.re, -a.im}; }
FCX_C(real) fcx_real(T a) { return a.re; }
FCX_C(real) fcx_imag(T a) { return a.im; }
FCX_C(real) fcx_abs(T a) { return fcx_m_hypot(a.re, a.im); }
FCX_C(real) fcx_angle(T a) { return fcx_m_atan2(a.im, a.re); }
FCX_C(type) fcx_rint(T a) { return T{fcx_m_rint(a.re), fcx_m_rint(a.im)}; }
FCX_C(test) fcx_isnan(T a) { return a.re != a.re || a.im != a.im; }
FCX_C(test) fcx_isinf(T a) { return fcx_inf(a.re) || fcx_inf(a.im); }
FCX_C(test) fcx_isfinite(T a) { return fcx_finite(a.re) && fcx_finite(a.im); }
FCX_C(type) fcx_reciprocal(T a) {
    typedef typename fcx_tc<T>::real R;
    if (fcx_m_fabs(a.im) <= fcx_m_fabs(a.re)) {
        R r = a.im / a.re, d = a.re + a.im * r;
        return T{(R)1 / d, -r / d};
    }
    R r = a.re / a.im, d = a.re * r + a.im;
    return T{r / d, (R)-1 / d};
}
/* sign(z) = z / |z| (NumPy 2), with its infinities */
FCX_C(type) fcx_sign(T a) {
    typedef typename fcx_tc<T>::real R;
    R ab = fcx_m_hypot(a.re, a.im), nan = fcx_nan_of<R>();
    if (ab != ab) return T{nan, nan};
    if (fcx_inf(ab)) {
        if (fcx_inf(a.re)) return fcx_inf(a.im) ? T{nan, nan} : T{a.re > 0 ? (R)1 : (R)-1, 0};
        return T{0, a.im > 0 ? (R)1 : (R)-1};
    }
    if (ab == 0) return T{0, 0};
    return T{a.re / ab, a.im / ab};
}
FCX_C(type) fcx_exp2(T a) {
    typedef typename fcx_tc<T>::real R;
    const R ln2 = (R)FCX_LN2;
    return fcx_exp(T{a.re * ln2, a.im * ln2});
}
FCX_C(type) fcx_expm1(T a) {
    typedef typename fcx_tc<T>::real R;
    R s = fcx_m_sin(a.im / 2);
    return T{fcx_m_expm1(a.re) * fcx_m_cos(a.im) - 2 * s * s, fcx_m_exp(a.re) * fcx_m_sin(a.im)};
}
FCX_C(type) fcx_log1p(T a) {
    typedef typename fcx_tc<T>::real R;
    R l = fcx_m_hypot(a.re + 1, a.im);
    return T{fcx_m_log(l), fcx_m_atan2(a.im, a.re + 1)};
}
FCX_C(type) fcx_log2(T a) {
    typedef typename fcx_tc<T>::real R;
    T l = fcx_log(a);
    const R k = (R)1.44269504088896340735992468100189214;
    return T{l.re * k, l.im * k};
}
FCX_C(type) fcx_log10(T a) {
    typedef typename fcx_tc<T>::real R;
    T l = fcx_log(a);
    const R k = (R)0.434294481903251827651128918916605082;
    return T{l.re * k, l.im * k};
}
/* C's complex multiplication (Annex G): the plain product, except that a NaN + iNaN result
 * of infinite factors is recovered as an infinity (cpow's b * log a needs it). */
FCX_C(type) fcx_cmul_annex_g(T z, T w) {
    typedef typename fcx_tc<T>::real R;
    R a = z.re, b = z.im, c = w.re, d = w.im, ac = a * c, bd = b * d, ad = a * d, bc = b * c;
    R x = ac - bd, y = ad + bc;
    if (x == x || y == y) return T{x, y};
    bool recalc = false;
    if (fcx_inf(a) || fcx_inf(b)) { /* box the infinity, zero the NaNs of the other factor */
        a = fcx_m_copysign((R)(fcx_inf(a) ? 1 : 0), a);
        b = fcx_m_copysign((R)(fcx_inf(b) ? 1 : 0), b);
        if (c != c) c = fcx_m_copysign((R)0, c);
        if (d != d) d = fcx_m_copysign((R)0, d);
        recalc = true;
    }
    if (fcx_inf(c) || fcx_inf(d)) {
        c = fcx_m_copysign((R)(fcx_inf(c) ? 1 : 0), c);
        d = fcx_m_copysign((R)(fcx_inf(d) ? 1 : 0), d);
        if (a != a) a = fcx_m_copysign((R)0, a);
        if (b != b) b = fcx_m_copysign((R)0, b);
        recalc = true;
    }
    if (!recalc && (fcx_inf(ac) || fcx_inf(bd) || fcx_inf(ad) || fcx_inf(bc))) { /* overflow */
        if (a != a) a = fcx_m_copysign((R)0, a);
        if (b != b) b = fcx_m_copysign((R)0, b);
        if (c != c) c = fcx_m_copysign((R)0, c);
        if (d != d) d = fcx_m_copysign((R)0, d);
        recalc = true;
    }
    if (recalc) {
        x = fcx_inf_of<R>() * (a * c - b * d);
        y = fcx_inf_of<R>() * (a * d + b * c);
    }
    return T{x, y};
}
/* npy_cpow: small integer powers by repeated multiplication, else exp(b log a) with both
 * steps rounded to T (as the C library's cpow does). */
FCX_C(type) fcx_pow(T a, T b) {
    typedef typename fcx_tc<T>::real R;
    if (b.re == 0 && b.im == 0) return T{1, 0};
    if (a.re == 0 && a.im == 0) {
        if (b.re > 0) return T{0, 0};
        return T{fcx_nan_of<R>(), fcx_nan_of<R>()};
    }
    if (b.im == 0 && b.re >= -100 && b.re <= 100 && (R)(int)b.re == b.re) {
        int n = (int)b.re;
        if (n == 1) return a;
        if (n == 2) return a * a;
        if (n == 3) return a * (a * a);
        if (n > -100 && n < 100) {
            T acc = {1, 0}, p = a;
            int m = n < 0 ? -n : n;
            for (int mask = 1;; mask <<= 1) {
                if (m & mask) acc = acc * p;
                if (m < (mask << 1)) break;
                p = p * p;
            }
            if (n < 0) acc = T{1, 0} / acc;
            return acc;
        }
    }
    return fcx_exp(fcx_cmul_annex_g(b, fcx_log(a)));
}
/* Lexicographic order; a NaN part makes the real-part test false (NumPy's CLT / CGT). */
FCX_C(test) fcx_less(T x, T y) {
    return (x.re < y.re && x.im == x.im && y.im == y.im) || (x.re == y.re && x.im < y.im);
}
FCX_C(test) fcx_less_equal(T x, T y) {
    return (x.re < y.re && x.im == x.im && y.im == y.im) || (x.re == y.re && x.im <= y.im);
}
FCX_C(test) fcx_greater(T x, T y) { return fcx_less(y, x); }
FCX_C(test) fcx_greater_equal(T x, T y) { return fcx_less_equal(y, x); }
FCX_C(test) fcx_equal(T x, T y) { return x == y; }
FCX_C(test) fcx_not_equal(T x, T y) { return x != y; }
FCX_C(type) fcx_maximum(T a, T b) { return (fcx_isnan(a) || fcx_greater_equal(a, b)) ? a : b; }
FCX_C(type) fcx_minimum(T a, T b) { return (fcx_isnan(a) || fcx_less_equal(a, b)) ? a : b; }
FCX_C(type) fcx_fmax(T a, T b) { return (fcx_isnan(b) || fcx_greater_equal(a, b)) ? a : b; }
FCX_C(type) fcx_fmin(T a, T b) { return (fcx_isnan(b) || fcx_less_equal(a, b)) ? a : b; }
/* clip's own max / min: NaN in the first operand wins, plain lexicographic order */
FCX_C(type) fcx_clip(T x, T lo, T hi) {
    bool ge = x.re > lo.re || (x.re == lo.re && x.im >= lo.im);
    T m = (fcx_isnan(x) || ge) ? x : lo;
    bool le = m.re < hi.re || (m.re == hi.re && m.im <= hi.im);
    return (fcx_isnan(m) || le) ? m : hi;
}
#endif /* FCX_PART_COMPLEX */

#if FCX_PART_RANDOM
/* ---- random numbers --------------------------------------------------------------------- */

/* Random draws: graph.h's fcg_philox4x32_10 and fcg_random_*_at, bit for bit (the layout is
 * documented at include/fusec.h's fc_rng). Each draw is written once, as element i from the
 * words w of its Philox block (fcx_randw_<draw>), and used two ways:
 *   fcx_rand_<draw>(seed, stream, i)      element i, its block computed for it
 *   fcx_rand_<draw>_span<N>(seed, stream, q, out)
 *                                         out[e] = element q N + e (e < N), each block
 *                                         computed once: the vector step of an elementwise
 *                                         kernel, whose consecutive elements share blocks
 * <draw>: uniform_<dtype> and normal_<dtype> (dtype f16, bf16, f32, f64); integers take their
 * bounds first: fcx_rand_integer(wide, low, range, seed, stream, i) and
 * fcx_rand_integer_span<N, wide>(low, range, seed, stream, q, out). */
/* a b = *hi 2^32 + *lo. On the device one mul.wide.u32, so that ptxas makes one IMAD.WIDE.U32
 * of it (from a separate high and low product, or from a 64-bit product split with shifts, it
 * may make two instructions or add a spare one). */
FCX_FN void fcx_mul_wide(unsigned a, unsigned b, unsigned *hi, unsigned *lo) {
#ifdef FCX_HOST
    const unsigned long long p = (unsigned long long)a * b;
    *hi = (unsigned)(p >> 32);
    *lo = (unsigned)p;
#else
    unsigned long long p;
    asm("mul.wide.u32 %0, %1, %2;" : "=l"(p) : "r"(a), "r"(b));
    asm("mov.b64 {%0, %1}, %2;" : "=r"(*lo), "=r"(*hi) : "l"(p));
#endif
}
template <class U> FCX_FN void fcx_philox4x32_10(U block, U stream, U seed, unsigned *w) {
    unsigned c0 = (unsigned)block, c1 = (unsigned)(block >> 32), c2 = (unsigned)stream,
             c3 = (unsigned)(stream >> 32), k0 = (unsigned)seed, k1 = (unsigned)(seed >> 32);
#ifndef FCX_HOST
#pragma unroll
#endif
    for (int r = 0; r < 10; r++) {
        if (r) {
            k0 += 0x9E3779B9u;
            k1 += 0xBB67AE85u;
        }
        unsigned h0, l0, h1, l1;
        fcx_mul_wide(0xD2511F53u, c0, &h0, &l0);
        fcx_mul_wide(0xCD9E8D57u, c2, &h1, &l1);
        c0 = h1 ^ c1 ^ k0;
        c1 = l1;
        c2 = h0 ^ c3 ^ k1;
        c3 = l0;
    }
    w[0] = c0;
    w[1] = c1;
    w[2] = c2;
    w[3] = c3;
}
/* Elements q N + e (e < N) of a draw of PER elements a block (element i: block i / PER, PER a
 * power of two), each block computed once: draw(w, i) is element i from its block's words.
 * Unrolled, e and so which word an element takes are constants. */
template <int PER, int N, class T, class U, class F>
FCX_FN void fcx_rand_span(U seed, U stream, U q, T *out, F draw) {
    unsigned w[4];
#ifndef FCX_HOST
#pragma unroll
#endif
    for (int e = 0; e < N; e++) {
        const U i = q * N + e;
        if (e == 0 || i % PER == 0) fcx_philox4x32_10(i / PER, stream, seed, w);
        out[e] = draw(w, i);
    }
}
/* element i's 64 bits of f64's layout: words 2 (i % 2) (low) and + 1 of its block */
template <class U> FCX_FN unsigned long long fcx_randw_bits64(const unsigned *w, U i) {
    return (i & 1) ? (w[2] | (unsigned long long)w[3] << 32)
                   : (w[0] | (unsigned long long)w[1] << 32);
}
/* f64's normal: Box-Muller in double on the block's two 53-bit halves, cos for even i, sin
 * for odd */
template <class U> FCX_FN double fcx_randw_box_muller(const unsigned *w, U i) {
    const double u1 = (double)(((w[0] | (unsigned long long)w[1] << 32) >> 11) + 1) * 0x1p-53;
    const double u2 = (double)((w[2] | (unsigned long long)w[3] << 32) >> 11) * 0x1p-53;
    const double r = fcx_m_sqrt(-2 * fcx_m_log(u1)), a = 6.283185307179586 * u2;
    return (i & 1) ? r * fcx_m_sin(a) : r * fcx_m_cos(a);
}
/* 16- and 32-bit dtypes' normal: graph/normal32.h's Box-Muller in float on words 0-1 or 2-3,
 * spliced in here by the build (cmake/embed_prelude.cmake; a host compile includes it) */
#include "../graph/normal32.h"

/* fcx_randw_<draw>, fcx_rand_<draw> and fcx_rand_<draw>_span of a draw of type T, PER
 * elements a block, element i = expr (of the words w and i) */
#define FCX_RAND_DRAW(draw, T, PER, expr)                                                       \
    template <class U> FCX_FN T fcx_randw_##draw(const unsigned *w, U i) { return expr; }      \
    template <class U> FCX_FN T fcx_rand_##draw(U seed, U stream, U i) {                       \
        unsigned w[4];                                                                          \
        fcx_philox4x32_10(i / PER, stream, seed, w);                                            \
        return fcx_randw_##draw(w, i);                                                          \
    }                                                                                           \
    template <int N, class U> FCX_FN void fcx_rand_##draw##_span(U seed, U stream, U q, T *out) { \
        fcx_rand_span<PER, N>(seed, stream, q, out,                                             \
                              [](const unsigned *w, U i) { return fcx_randw_##draw(w, i); });   \
    }
/* uniform in [0, 1): the top bits of element i's word(s) */
FCX_RAND_DRAW(uniform_f64, double, 2, (double)(fcx_randw_bits64(w, i) >> 11) * 0x1p-53)
FCX_RAND_DRAW(uniform_f32, double, 4, (double)(w[i & 3] >> 8) * 0x1p-24)
FCX_RAND_DRAW(uniform_f16, double, 4, (double)(w[i & 3] >> 21) * 0x1p-11)
FCX_RAND_DRAW(uniform_bf16, double, 4, (double)(w[i & 3] >> 24) * 0x1p-8)
/* standard normal: elements 2j and 2j + 1 share their pair of words (and Box-Muller's work) */
FCX_RAND_DRAW(normal_f64, double, 2, fcx_randw_box_muller(w, i))
FCX_RAND_DRAW(normal_f32, float, 4, (fcg_normal32(w[i & 2], w[(i & 2) + 1], (int)(i & 1))))
FCX_RAND_DRAW(normal_f16, float, 4, (fcg_normal32(w[i & 2], w[(i & 2) + 1], (int)(i & 1))))
FCX_RAND_DRAW(normal_bf16, float, 4, (fcg_normal32(w[i & 2], w[(i & 2) + 1], (int)(i & 1))))
#undef FCX_RAND_DRAW

/* low + floor(x range / 2^64) (x: 64 bits of f64's layout, two elements a block) or, wide,
 * floor(x range / 2^128) (x: block i, w0 lowest), wrapping */
template <class U> FCX_FN unsigned long long fcx_mulhi64(U a, U b) {
#ifdef FCX_HOST
    return (unsigned long long)((unsigned __int128)a * b >> 64);
#else
    return __umul64hi(a, b);
#endif
}
template <class U> FCX_FN unsigned long long fcx_randw_integer(bool wide, U low, U range,
                                                               const unsigned *w, U i) {
    if (!wide) return low + fcx_mulhi64(fcx_randw_bits64(w, i), range);
    const unsigned long long xl = w[0] | (unsigned long long)w[1] << 32,
                             xh = w[2] | (unsigned long long)w[3] << 32;
    /* (xh range + hi(xl range)) >> 64 with the carry of the low halves' sum */
    const unsigned long long a_lo = xh * range, a_hi = fcx_mulhi64(xh, range),
                             b = fcx_mulhi64(xl, range);
    const unsigned long long s = a_lo + b;
    return low + a_hi + (s < a_lo ? 1ull : 0ull);
}
template <class U> FCX_FN unsigned long long fcx_rand_integer(bool wide, U low, U range, U seed,
                                                              U stream, U i) {
    unsigned w[4];
    fcx_philox4x32_10(wide ? i : i >> 1, stream, seed, w);
    return fcx_randw_integer(wide, low, range, w, i);
}
template <int N, bool WIDE, class U>
FCX_FN void fcx_rand_integer_span(U low, U range, U seed, U stream, U q, unsigned long long *out) {
    fcx_rand_span<WIDE ? 1 : 2, N>(seed, stream, q, out, [=](const unsigned *w, U i) {
        return fcx_randw_integer(WIDE, low, range, w, i);
    });
}
#endif /* FCX_PART_RANDOM */

#if FCX_PART_REDUCE
/* ---- reductions ------------------------------------------------------------------------- */

/* Identities in the accumulator's compute type T: fcx_identity_sum<T>() (0),
 * fcx_identity_prod<T>() (1), and for max / min the value every other value beats (-inf /
 * +inf for floats, the integer extremes, (-inf, -inf) / (+inf, +inf) for complex, false /
 * true for bool). any and all start from false and true. Max and min combine with
 * fcx_maximum / fcx_minimum (accumulator first): NaN propagates, NumPy's max / min. */
template <class T> FCX_FN T fcx_identity_sum() { return T{}; }
template <class T> FCX_FN T fcx_identity_prod() {
    if constexpr (fcx_kind<T>::v == 5) return T{1, 0};
    else return (T)1;
}
template <class T> FCX_FN T fcx_identity_max() {
    if constexpr (fcx_kind<T>::v == 5) return T{-fcx_inf_of<decltype(T{}.re)>(), -fcx_inf_of<decltype(T{}.re)>()};
    else if constexpr (fcx_kind<T>::v == 4) return -fcx_inf_of<T>();
    else if constexpr (fcx_kind<T>::v == 2) return (T)((unsigned long long)1 << (8 * sizeof(T) - 1));
    else return (T)0;
}
template <class T> FCX_FN T fcx_identity_min() {
    if constexpr (fcx_kind<T>::v == 5) return T{fcx_inf_of<decltype(T{}.re)>(), fcx_inf_of<decltype(T{}.re)>()};
    else if constexpr (fcx_kind<T>::v == 4) return fcx_inf_of<T>();
    else if constexpr (fcx_kind<T>::v == 2) return (T)~((unsigned long long)1 << (8 * sizeof(T) - 1));
    else if constexpr (fcx_kind<T>::v == 1) return true;
    else return (T)~(T)0;
}

/* argmax / argmin: folds the pair (v2, i2) into the running pair (*v, *i). A NaN beats every
 * number (the first NaN wins), and among equal values the lower index wins, so the result
 * does not depend on the order in which a parallel reduction combines pairs. */
template <class T> FCX_FN void fcx_argmax_combine(T *v, long long *i, T v2, long long i2) {
    bool n1 = fcx_isnan(*v), n2 = fcx_isnan(v2);
    bool take = n2 ? (!n1 || i2 < *i)
                   : (!n1 && (fcx_greater(v2, *v) || (fcx_equal(v2, *v) && i2 < *i)));
    if (take) {
        *v = v2;
        *i = i2;
    }
}
template <class T> FCX_FN void fcx_argmin_combine(T *v, long long *i, T v2, long long i2) {
    bool n1 = fcx_isnan(*v), n2 = fcx_isnan(v2);
    bool take = n2 ? (!n1 || i2 < *i)
                   : (!n1 && (fcx_less(v2, *v) || (fcx_equal(v2, *v) && i2 < *i)));
    if (take) {
        *v = v2;
        *i = i2;
    }
}
#endif /* FCX_PART_REDUCE */

#if FCX_PART_INDEX
/* ---- gathers ---------------------------------------------------------------------------- */

/* take's index v along an axis of extent n (n >= 1) by mode (fc_take_mode: 0 raise, 1 wrap,
 * 2 clip), as np.take: an index is the int64 value of its bits (a u64 above 2^63 is
 * negative, as NumPy casts it); raise counts negative indices from the end and raises
 * FCX_RAISE_INDEX (reading element 0 instead) outside [-n, n). */
template <class I> FCX_FN long long fcx_take_index(I v, long long n, int mode) {
    long long j = (long long)v;
    if (mode == 1) return (j % n + n) % n;
    if (mode == 2) return j >= n ? n - 1 : j < 0 ? 0 : j;
    if (j < 0 && j >= -n) j += n;
    if (j < 0 || j >= n) {
        fcx_raise(FCX_RAISE_INDEX);
        return 0;
    }
    return j;
}

/* ---- scatters ------------------------------------------------------------------------- */

/* The position an update goes to along an axis of extent n, or -1 to skip it: take's modes,
 * and 3 (FC_TAKE_DROP) skips what is out of range. Raise marks the error and skips. */
template <class I> FCX_FN long long fcx_scatter_index(I v, long long n, int mode) {
    long long j = (long long)v;
    if (mode == 3) return j >= 0 && j < n ? j : -1;
    if (mode == 1) return (j % n + n) % n;
    if (mode == 2) return j >= n ? n - 1 : j < 0 ? 0 : j;
    if (j < 0 && j >= -n) j += n;
    if (j < 0 || j >= n) {
        fcx_raise(FCX_RAISE_INDEX);
        return -1;
    }
    return j;
}

/* How an update combines with the element it meets: the elementwise ops themselves, so a
 * scatter's arithmetic is exactly add's, maximum's and minimum's (NaN and all). */
struct fcx_op_add {};
struct fcx_op_max {};
struct fcx_op_min {};
template <class T> FCX_FN T fcx_apply(fcx_op_add, T a, T b) { return fcx_add(a, b); }
template <class T> FCX_FN T fcx_apply(fcx_op_max, T a, T b) { return fcx_maximum(a, b); }
template <class T> FCX_FN T fcx_apply(fcx_op_min, T a, T b) { return fcx_minimum(a, b); }

#ifdef FCX_HOST /* host emulation of kernels (tests): the compiler's atomics */
template <class U> FCX_FN U fcx_cas(U *p, U expect, U want) {
    __atomic_compare_exchange_n(p, &expect, want, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    return expect;
}
template <class U> FCX_FN U fcx_load_word(U *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
#else
template <class U> FCX_FN U fcx_cas(U *p, U expect, U want) { return atomicCAS(p, expect, want); }
template <class U> FCX_FN U fcx_load_word(U *p) { return *(volatile U *)p; }
#endif
/* The first n bytes of *s into *d (a bit cast; the compiler makes it a register move). */
template <class D, class S> FCX_FN void fcx_bitcopy(D *d, const S *s, unsigned n) {
    for (unsigned k = 0; k < n; k++) ((unsigned char *)d)[k] = ((const unsigned char *)s)[k];
}
template <int B> struct fcx_word {};
template <> struct fcx_word<4> { typedef unsigned type; };
template <> struct fcx_word<8> { typedef unsigned long long type; };

/* *p = f(*p), atomically, by compare-and-swap: 4- and 8-byte elements on their own word,
 * 1- and 2-byte ones on the aligned 4-byte word around them (the planner rounds such a
 * buffer up to whole words). An update that changes no bit stores nothing. */
template <class S, class F> FCX_FN void fcx_cas_update(S *p, F f) {
    if constexpr (sizeof(S) == 4 || sizeof(S) == 8) {
        typedef typename fcx_word<sizeof(S)>::type U;
        U *w = (U *)p;
        U old = fcx_load_word(w), seen;
        do {
            seen = old;
            S cur, nxt;
            fcx_bitcopy(&cur, &seen, sizeof cur);
            nxt = f(cur);
            U want;
            fcx_bitcopy(&want, &nxt, sizeof want);
            if (want == seen) return;
            old = fcx_cas(w, seen, want);
        } while (old != seen);
    } else {
        static_assert(sizeof(S) <= 2, "16-byte elements have no compare-and-swap");
        unsigned *w = (unsigned *)((unsigned long long)p & ~3ull);
        const int sh = (int)((unsigned long long)p & 3ull) * 8;
        const unsigned mask = (sizeof(S) == 1 ? 0xffu : 0xffffu) << sh;
        unsigned old = fcx_load_word(w), seen;
        do {
            seen = old;
            unsigned bits = (seen & mask) >> sh, nb = 0;
            S cur, nxt;
            fcx_bitcopy(&cur, &bits, sizeof cur); /* little-endian: the low bytes */
            nxt = f(cur);
            fcx_bitcopy(&nb, &nxt, sizeof nxt);
            unsigned want = (seen & ~mask) | (nb << sh);
            if (want == seen) return;
            old = fcx_cas(w, seen, want);
        } while (old != seen);
    }
}

/* A float added atomically: the hardware's add on the GPU, compare-and-swap on the host. */
template <class T> FCX_FN void fcx_atomic_add_float(T *p, T v) {
#ifdef FCX_HOST
    fcx_cas_update(p, [=](T s) { return s + v; });
#else
    atomicAdd(p, v);
#endif
}

/* fcx_scatter_D(p, v, op): *p = op(*p, v) atomically for an element of dtype D. The generic
 * path loads, combines and stores through the dtype's own load and store (f16 and bf16 round
 * as their stores do); the specialisations below use the hardware's atomics where one does the
 * same arithmetic. */
#define FCX_SCATTER(D)                                                                             template <class Op> FCX_FN void fcx_scatter_##D(fcx_t_##D *p, fcx_ct_##D v, Op op) {                  fcx_cas_update(p, [=](fcx_t_##D s) {                                                               fcx_t_##D n;                                                                                   fcx_store_##D(&n, fcx_apply(op, fcx_load_##D(&s), v));                                         return n;                                                                                  });                                                                                        }
FCX_SCATTER(bool) FCX_SCATTER(i8) FCX_SCATTER(i16) FCX_SCATTER(i32) FCX_SCATTER(i64)
FCX_SCATTER(u8) FCX_SCATTER(u16) FCX_SCATTER(u32) FCX_SCATTER(u64) FCX_SCATTER(f16)
FCX_SCATTER(bf16) FCX_SCATTER(f32) FCX_SCATTER(f64) FCX_SCATTER(c64) FCX_SCATTER(c128)
#undef FCX_SCATTER
/* complex sums add their parts (c128 has no 16-byte compare-and-swap; max and min of complex
 * values are refused before codegen) */
template <> FCX_FN void fcx_scatter_c64<fcx_op_add>(fcx_t_c64 *p, fcx_ct_c64 v, fcx_op_add) {
    fcx_atomic_add_float(&p->re, v.re);
    fcx_atomic_add_float(&p->im, v.im);
}
template <> FCX_FN void fcx_scatter_c128<fcx_op_add>(fcx_t_c128 *p, fcx_ct_c128 v, fcx_op_add) {
    fcx_atomic_add_float(&p->re, v.re);
    fcx_atomic_add_float(&p->im, v.im);
}
template <> FCX_FN void fcx_scatter_f32<fcx_op_add>(fcx_t_f32 *p, float v, fcx_op_add) {
    fcx_atomic_add_float(p, v);
}
template <> FCX_FN void fcx_scatter_f64<fcx_op_add>(fcx_t_f64 *p, double v, fcx_op_add) {
    fcx_atomic_add_float(p, v);
}
#ifndef FCX_HOST
/* integer sums wrap in two's complement whatever the order; max and min are exact */
template <> FCX_FN void fcx_scatter_i32<fcx_op_add>(int *p, int v, fcx_op_add) { atomicAdd(p, v); }
template <> FCX_FN void fcx_scatter_u32<fcx_op_add>(unsigned *p, unsigned v, fcx_op_add) { atomicAdd(p, v); }
template <> FCX_FN void fcx_scatter_i64<fcx_op_add>(long long *p, long long v, fcx_op_add) {
    atomicAdd((unsigned long long *)p, (unsigned long long)v);
}
template <> FCX_FN void fcx_scatter_u64<fcx_op_add>(unsigned long long *p, unsigned long long v, fcx_op_add) {
    atomicAdd(p, v);
}
template <> FCX_FN void fcx_scatter_i32<fcx_op_max>(int *p, int v, fcx_op_max) { atomicMax(p, v); }
template <> FCX_FN void fcx_scatter_u32<fcx_op_max>(unsigned *p, unsigned v, fcx_op_max) { atomicMax(p, v); }
template <> FCX_FN void fcx_scatter_i64<fcx_op_max>(long long *p, long long v, fcx_op_max) { atomicMax(p, v); }
template <> FCX_FN void fcx_scatter_u64<fcx_op_max>(unsigned long long *p, unsigned long long v, fcx_op_max) {
    atomicMax(p, v);
}
template <> FCX_FN void fcx_scatter_i32<fcx_op_min>(int *p, int v, fcx_op_min) { atomicMin(p, v); }
template <> FCX_FN void fcx_scatter_u32<fcx_op_min>(unsigned *p, unsigned v, fcx_op_min) { atomicMin(p, v); }
template <> FCX_FN void fcx_scatter_i64<fcx_op_min>(long long *p, long long v, fcx_op_min) { atomicMin(p, v); }
template <> FCX_FN void fcx_scatter_u64<fcx_op_min>(unsigned long long *p, unsigned long long v, fcx_op_min) {
    atomicMin(p, v);
}
#endif

/* a < b in NumPy's sort order: NaN after every number (searchsorted; real compute types). */
template <class T> FCX_FN bool fcx_sort_less(T a, T b) { return a < b || (b != b && a == a); }
#endif /* FCX_PART_INDEX */

#if FCX_PART_BLOCK
/* ---- block-level machinery of the reduction kernels ------------------------------------ */

/* Threads of a warp. Host emulation (tests/test_codegen_emulated.c) defines it smaller, and
 * supplies its own fcx_shfl_down / fcx_shfl_idx / fcx_ldcg / fcx_atomic_add / fcx_fence /
 * fcx_dsmem_size / FCX_DSMEM, so generated kernels run there unchanged. */
#ifndef FCX_WARP
#define FCX_WARP 32
#endif

/* How a long reduction is split between blocks (see fcx_split). Tests redefine them to make
 * small shapes split. codegen/cuda.c's fcx_tuning holds the same defaults. */
#ifndef FCX_SPLIT_TARGET
#define FCX_SPLIT_TARGET 1024 /* work items a split reduction aims for */
#endif
#ifndef FCX_SPLIT_MIN_CHUNK
#define FCX_SPLIT_MIN_CHUNK 8192 /* fewest elements in one piece of a split row */
#endif
#ifndef FCX_SPLIT_MAX
#define FCX_SPLIT_MAX 1024 /* most pieces per row */
#endif
#ifndef FCX_SPLIT_ALIGN
#define FCX_SPLIT_ALIGN 64 /* pieces start at multiples of this (keeps 16-byte loads aligned) */
#endif
#ifndef FCX_SCRATCH_CAP
#define FCX_SCRATCH_CAP 1048576 /* bytes of partial results a split may need */
#endif

/* Division by a divisor fixed for a whole kernel (a reduce kernel's run length R): a step's
 * decode then takes a multiply-high, an add and a shift where a division by a runtime value
 * takes about twenty instructions (issue 13: batch-norm statistics). Granlund and
 * Montgomery's round-up multiplier m for 32-bit indices: with s = ceil(log2 d) and
 * m = floor(2^32 (2^s - d) / d) + 1, n / d = (mulhi(m, n) + n) >> s for every n < 2^32, and
 * for n < 2^31 (a 32-bit idx_t) the sum does not overflow. 64-bit indices divide plainly. */
template <class I> struct fcx_divider {
    I d;
    unsigned m;
    int s;
};
template <class I> FCX_FN fcx_divider<I> fcx_divider_of(I d) {
    fcx_divider<I> v{d, 1u, 0};
    if (sizeof(I) == 4 && d > 1) {
        while ((1ull << v.s) < (unsigned long long)d) v.s++;
        v.m = (unsigned)(((((1ull << v.s) - (unsigned long long)d) << 32) / (unsigned long long)d) + 1);
    }
    return v;
}
template <class I> FCX_FN I fcx_div_by(I n, const fcx_divider<I> &v) {
    if constexpr (sizeof(I) == 4) {
        const unsigned u = (unsigned)n;
#ifdef FCX_HOST
        const unsigned t = (unsigned)(((unsigned long long)u * v.m) >> 32);
#else
        const unsigned t = __umulhi(u, v.m);
#endif
        return (I)((t + u) >> v.s);
    } else {
        return n / v.d;
    }
}

/* The split of `items` independent reductions of `len` elements each (rows; for column
 * kernels, tiles of FCX_WARP columns and len rows): *S pieces of *CH elements (the last one
 * shorter). part_bytes is the scratch one piece of every item takes. It depends on the shape
 * alone, never on the grid or the device, so partial results combine in the same order
 * everywhere: the same bits every run. fcx_split_plan in codegen/cuda.c is this function. */
template <class I> FCX_FN void fcx_split(long long items, long long len, long long part_bytes,
                                         bool cols, I *S, I *CH) {
    long long minc = cols ? FCX_SPLIT_MIN_CHUNK / FCX_WARP : FCX_SPLIT_MIN_CHUNK;
    if (minc < 1) minc = 1;
    long long s = 1;
    if (items > 0 && items < FCX_SPLIT_TARGET && len / minc > 1) {
        s = len / minc;
        long long want = (FCX_SPLIT_TARGET + items - 1) / items;
        if (s > want) s = want;
        if (s > FCX_SPLIT_MAX) s = FCX_SPLIT_MAX;
        long long cap = FCX_SCRATCH_CAP / (part_bytes > 0 ? part_bytes : 1);
        if (s > cap) s = cap;
        if (s < 1) s = 1;
    }
    if (s == 1) { /* unsplit, the usual case: the same S and CH without two 64-bit divisions
                     (~150 instructions a warp; a grid of short rows runs this once a row) */
        const long long whole = (len + FCX_SPLIT_ALIGN - 1) / FCX_SPLIT_ALIGN * FCX_SPLIT_ALIGN;
        *S = (I)1;
        *CH = (I)(whole < 1 ? 1 : whole);
        return;
    }
    long long ch = (len + s - 1) / s;
    ch = (ch + FCX_SPLIT_ALIGN - 1) / FCX_SPLIT_ALIGN * FCX_SPLIT_ALIGN;
    if (ch < 1) ch = 1;
    s = len > 0 ? (len + ch - 1) / ch : 1;
    *S = (I)s;
    *CH = (I)ch;
}

template <class I> FCX_FN I fcx_align16(I n) { return (n + 15) / 16 * 16; }

/* Elements of one tile of a scan along contiguous rows whose accumulator has at most 4 bytes
 * (a block's share; codegen/cuda.c's fcx_tuning.scan_tile holds the same default). A thread
 * holds its run of a tile in registers (16 elements of 4 bytes) and the tile passes through
 * shared memory (from coalesced order to runs), so wider accumulators take proportionally
 * fewer (FCX_SCAN_TILE_OF, as fcx_scan_tile in codegen.h): a run of 16 doubles took 122
 * registers. Tests make it small so that small shapes chain many tiles. */
#ifndef FCX_SCAN_TILE
#define FCX_SCAN_TILE 4096
#endif
#define FCX_SCAN_TILE_OF(bytes) \
    ((bytes) <= 4 ? FCX_SCAN_TILE : (FCX_SCAN_TILE * 4 / (bytes) > 0 ? FCX_SCAN_TILE * 4 / (bytes) : 1))
/* Threads of a scan tile's block (codegen/cuda.c's FCX_SCAN_BLOCK; the host emulation runs
 * other block sizes): a thread's run of a tile is FCX_SCAN_TILE_OF / FCX_SCAN_THREADS
 * elements, a compile-time count, so the run lives in registers. */
#ifndef FCX_SCAN_THREADS
#define FCX_SCAN_THREADS 256
#endif
/* Threads of a tiled elementwise kernel's block (codegen.h's FCX_BLOCK, FCX_STRATEGY_EW_TILE):
 * each thread takes the tile's blocks and vectors FCX_TILE_THREADS apart, a compile-time
 * count, so its loads are all in flight at once. The host emulation runs other block sizes. */
#ifndef FCX_TILE_THREADS
#define FCX_TILE_THREADS 256
#endif
/* Whether address p is a multiple of `bytes` (a power of two): a tile's vector accesses need
 * the buffer's start aligned to the vector. */
FCX_FN bool fcx_aligned(const void *p, unsigned bytes) {
    return ((unsigned long long)(size_t)p & (bytes - 1)) == 0;
}
/* Up to N elements at p as one vector Vec (of N elements): one access where `whole` (p is
 * aligned to the vector and all N lie inside), else the first min(n, N) one by one and the
 * rest zero, so that a tile's edges are never read past. */
template <class Vec, int N, class T> FCX_FN Vec fcx_tile_load(const T *p, bool whole, long long n) {
    if (whole) return *(const Vec *)p;
    Vec r;
    for (int u = 0; u < N; u++) r.v[u] = u < n ? p[u] : T();
    return r;
}
/* The first min(n, N) elements of w at p: one access where `whole`, else one by one. */
template <int N, class Vec, class T> FCX_FN void fcx_tile_store(T *p, const Vec &w, bool whole,
                                                                long long n) {
    if (whole) {
        *(Vec *)p = w;
        return;
    }
    for (int u = 0; u < N; u++)
        if (u < n) p[u] = w.v[u];
}
/* A thread's N x N block of a tile into shared memory, transposed: r[j] holds N elements
 * along the source's contiguous axis (tile rows ab N + i) at tile column lb N + j. The tile
 * is C vectors a row, a row's vector lb stored at lb ^ (row / N): the lanes of one access
 * (a quarter warp of 16-byte vectors, a half warp of 8-byte ones) storing the same lb of rows
 * of different ab, or loading consecutive vectors of one row, hit distinct banks (a swizzle
 * instead of padding, which vectors cannot take). */
template <int N, int C, class Vec> FCX_FN void fcx_tile_put(Vec *tile, int ab, int lb,
                                                            const Vec *r) {
    for (int i = 0; i < N; i++) { /* N is a constant: unrolled */
        Vec t;
        for (int j = 0; j < N; j++) t.v[j] = r[j].v[i];
        tile[(ab * N + i) * C + (lb ^ ab)] = t;
    }
}
/* Tile row `row`'s vector c (N elements along the destination's contiguous axis). */
template <int N, int C, class Vec> FCX_FN const Vec &fcx_tile_get(const Vec *tile, int row,
                                                                  int c) {
    return tile[row * C + (c ^ (row / N))];
}
/* A tile's element j in shared memory: one word of padding every 32 elements, so that a warp
 * whose threads each walk their own run of 2^k consecutive elements hits distinct banks. */
#define FCX_SCAN_PAD(j) ((j) + (j) / 32)
/* Contiguous rows shorter than this scan a thread each (a tile would leave its block idle). */
#ifndef FCX_SCAN_MIN_ROW
#define FCX_SCAN_MIN_ROW 64
#endif
/* The status a tile publishes once its inclusive prefix is known: 2. The host emulation,
 * whose blocks run one after another and so never find a tile that has only its total
 * published, leaves some tiles at 1 so that look-back over totals runs there too. */
#ifndef FCX_SCAN_PUBLISH
#define FCX_SCAN_PUBLISH(tile) 2u
#endif

/* A scan tile's status (0 nothing yet, 1 the tile's total, 2 its inclusive prefix) and value,
 * published for the look-back of later tiles of the same launch. An accumulator of up to 8
 * bytes travels with its status in one naturally aligned word of 8 or 16 bytes, stored and
 * loaded whole at L2 (an aligned vector access moves as one, which CUB's tile state also
 * relies on), so a reader never sees a status without its value and no fence is needed.
 * Wider accumulators store the value, then the status with release semantics; readers
 * acquire the status, then load the value. The layout after the scratch's 16 bytes of
 * counters: ntiles words of 8 (accumulators of at most 4 bytes) or 16 bytes; or ntiles
 * 4-byte statuses, then (16-aligned) each tile's total and inclusive prefix. codegen.h's
 * fcx_scan_scratch_bytes and fcx_scan_status_bytes say the same. */
#ifdef FCX_HOST
FCX_FN void fcx_st_relaxed64(unsigned long long *p, unsigned long long v) {
    __atomic_store_n(p, v, __ATOMIC_SEQ_CST);
}
FCX_FN unsigned long long fcx_ld_relaxed64(const unsigned long long *p) {
    return __atomic_load_n(p, __ATOMIC_SEQ_CST);
}
/* the emulator's blocks run one after another: the two halves need no single access */
FCX_FN void fcx_st_relaxed128(unsigned long long *p, unsigned long long a, unsigned long long b) {
    __atomic_store_n(p + 1, b, __ATOMIC_SEQ_CST);
    __atomic_store_n(p, a, __ATOMIC_SEQ_CST);
}
FCX_FN void fcx_ld_relaxed128(const unsigned long long *p, unsigned long long *a,
                              unsigned long long *b) {
    *a = __atomic_load_n(p, __ATOMIC_SEQ_CST);
    *b = __atomic_load_n(p + 1, __ATOMIC_SEQ_CST);
}
FCX_FN void fcx_st_release32(unsigned *p, unsigned v) { __atomic_store_n(p, v, __ATOMIC_SEQ_CST); }
FCX_FN unsigned fcx_ld_acquire32(const unsigned *p) { return __atomic_load_n(p, __ATOMIC_SEQ_CST); }
FCX_FN int fcx_lowest_set(unsigned m) { return __builtin_ctz(m); }
#else
FCX_FN void fcx_st_relaxed64(unsigned long long *p, unsigned long long v) {
    asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
FCX_FN unsigned long long fcx_ld_relaxed64(const unsigned long long *p) {
    unsigned long long v;
    asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
FCX_FN void fcx_st_relaxed128(unsigned long long *p, unsigned long long a, unsigned long long b) {
    asm volatile("st.relaxed.gpu.global.v2.u64 [%0], {%1, %2};" ::"l"(p), "l"(a), "l"(b) : "memory");
}
FCX_FN void fcx_ld_relaxed128(const unsigned long long *p, unsigned long long *a,
                              unsigned long long *b) {
    asm volatile("ld.relaxed.gpu.global.v2.u64 {%0, %1}, [%2];" : "=l"(*a), "=l"(*b) : "l"(p) : "memory");
}
FCX_FN void fcx_st_release32(unsigned *p, unsigned v) {
    asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
FCX_FN unsigned fcx_ld_acquire32(const unsigned *p) {
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
FCX_FN int fcx_lowest_set(unsigned m) { return __ffs((int)m) - 1; }
#endif
template <class A> union fcx_scan_bits {
    A v;
    unsigned long long u;
};
template <class A> FCX_FN A *fcx_scan_values(unsigned char *st, long long ntiles) {
    return (A *)(st + fcx_align16(ntiles * 4));
}
template <class A>
FCX_FN void fcx_scan_publish(unsigned char *st, long long ntiles, long long tile, unsigned s, A v) {
    if constexpr (sizeof(A) <= 8) {
        fcx_scan_bits<A> b;
        b.u = 0;
        b.v = v;
        if constexpr (sizeof(A) <= 4)
            fcx_st_relaxed64((unsigned long long *)st + tile, (unsigned long long)s << 32 | b.u);
        else
            fcx_st_relaxed128((unsigned long long *)st + 2 * tile, s, b.u);
    } else {
        fcx_scan_values<A>(st, ntiles)[2 * tile + (s == 2u)] = v;
        fcx_st_release32((unsigned *)st + tile, s);
    }
}
/* Tile q's status; *v its value when the status is not 0. */
template <class A>
FCX_FN unsigned fcx_scan_peek(unsigned char *st, long long ntiles, long long q, A *v) {
    if constexpr (sizeof(A) <= 8) {
        fcx_scan_bits<A> b;
        unsigned long long s;
        if constexpr (sizeof(A) <= 4) {
            const unsigned long long w = fcx_ld_relaxed64((const unsigned long long *)st + q);
            s = w >> 32;
            b.u = w & 0xFFFFFFFFull;
        } else {
            fcx_ld_relaxed128((const unsigned long long *)st + 2 * q, &s, &b.u);
        }
        *v = b.v;
        return (unsigned)s;
    } else {
        const unsigned s = fcx_ld_acquire32((const unsigned *)st + q);
        if (s) *v = fcx_ldcg(&fcx_scan_values<A>(st, ntiles)[2 * q + (s == 2u)]);
        return s;
    }
}
/* Zeroes every status (the scratch contract: the next launch finds them 0), thread t of nt. */
template <class A> FCX_FN void fcx_scan_clear(unsigned char *st, long long ntiles, long long t,
                                              long long nt) {
    const long long words = sizeof(A) <= 4 ? ntiles : sizeof(A) <= 8 ? 2 * ntiles : (ntiles + 1) / 2;
    for (long long i = t; i < words; i += nt) ((unsigned long long *)st)[i] = 0;
}

#ifndef FCX_HOST
/* A value of any type moved between lanes word by word (every lane of the warp takes part). */
template <class T> FCX_FN T fcx_shfl_down(T v, int delta) {
    union U { T v; unsigned w[(sizeof(T) + 3) / 4]; } u;
    for (int k = 0; k < (int)(sizeof(T) + 3) / 4; k++) u.w[k] = 0;
    u.v = v;
    for (int k = 0; k < (int)(sizeof(T) + 3) / 4; k++) u.w[k] = __shfl_down_sync(0xffffffffu, u.w[k], delta);
    return u.v;
}
template <class T> FCX_FN T fcx_shfl_idx(T v, int lane) {
    union U { T v; unsigned w[(sizeof(T) + 3) / 4]; } u;
    for (int k = 0; k < (int)(sizeof(T) + 3) / 4; k++) u.w[k] = 0;
    u.v = v;
    for (int k = 0; k < (int)(sizeof(T) + 3) / 4; k++) u.w[k] = __shfl_sync(0xffffffffu, u.w[k], lane);
    return u.v;
}
/* A load that bypasses L1: partial results another block wrote in this launch. */
template <class T> FCX_FN T fcx_ldcg(const T *p) {
    union U { T v; unsigned char c[sizeof(T)]; unsigned short h[sizeof(T) / 2 + 1];
              unsigned w[sizeof(T) / 4 + 1]; unsigned long long d[sizeof(T) / 8 + 1]; } u;
    if constexpr (sizeof(T) % 8 == 0)
        for (int k = 0; k < (int)sizeof(T) / 8; k++) u.d[k] = __ldcg((const unsigned long long *)p + k);
    else if constexpr (sizeof(T) % 4 == 0)
        for (int k = 0; k < (int)sizeof(T) / 4; k++) u.w[k] = __ldcg((const unsigned *)p + k);
    else if constexpr (sizeof(T) % 2 == 0)
        for (int k = 0; k < (int)sizeof(T) / 2; k++) u.h[k] = __ldcg((const unsigned short *)p + k);
    else
        for (int k = 0; k < (int)sizeof(T); k++) u.c[k] = __ldcg((const unsigned char *)p + k);
    return u.v;
}
template <class U> FCX_FN unsigned fcx_atomic_add(U *p, unsigned v) { return atomicAdd(p, v); }
template <int = 0> FCX_FN void fcx_fence() { __threadfence(); }
/* Asks L2 for the line at p, returning nothing: a column kernel whose per-element fold calls
 * out of line (an online sum's rescaling) issues its batch's rows this way first, so they are
 * in flight together. */
template <class T> FCX_FN void fcx_prefetch_l2(const T *p) {
    asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
}
/* A vote of the warp's lanes: bit l set where lane l's p holds (every lane takes part). */
template <int = 0> FCX_FN unsigned fcx_ballot(bool p) { return __ballot_sync(0xffffffffu, p); }
/* The warp's lanes meet: shared memory one wrote is visible to the others. */
template <int = 0> FCX_FN void fcx_syncwarp() { __syncwarp(); }
/* Bytes of dynamic shared memory this launch has: a kernel that keeps rows on chip checks it
 * and reads global memory instead when the launch gave it too little. */
template <int = 0> FCX_FN unsigned fcx_dsmem_size() {
    unsigned r;
    asm volatile("mov.u32 %0, %%dynamic_smem_size;" : "=r"(r));
    return r;
}
#define FCX_DSMEM(name) extern __shared__ __align__(16) unsigned char name[]
#endif
#endif /* FCX_PART_BLOCK */

#endif /* FCX_PRELUDE_CUH */
