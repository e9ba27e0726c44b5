/*
 * tests/test_shard.c - sharded contexts (fusec.h, "Sharded contexts"): arrays split over the
 * shards of one context, against an ordinary context computing the same program on the same
 * data.
 *
 * Part 1, host-simulated shards. A sharded context on the host backend (fc_ctx_options.shards
 * = 2, 3, 4, 5 and 8) and an ordinary host context get the same random inputs (fc_from_host
 * in each); every program is built in both and the results are read back and compared.
 * Part 2, the API of sharded contexts (layouts, reshard, from_shards, parts, gathers, stats,
 * writes, copies, memory, the errors). Part 3, the same on the GPU (a sharded CUDA context over
 * every GPU, or two shards on device 0), skipped visibly where there is no GPU, and a device
 * fault in a child process.
 *
 * Tolerances (compare(), struct tol; the_comparison_sees_small_differences checks compare):
 *   - Bool, integer and index results: exactly (byte for byte).
 *   - Elementwise ops, views, gathers, max / min / argmax / argmin, creation ops, FFTs, and
 *     matmuls whose dot products stay on one shard (rows, columns or a batch split): exactly
 *     (bit for bit; NaN meets any NaN). Each shard is an ordinary host context running the
 *     same reference code on its range, so nothing but the summation order may differ.
 *   - Float reductions that sum over the split axis (sum, mean, var, std, norm, the sums of
 *     softmax and column normalisation): each shard sums its range in the accumulator, the
 *     partials are combined, and the result is rounded once; the reference sums in another
 *     order. Both are within count * eps(acc) * S of the exact sum of `count` terms whose
 *     magnitudes add up to at most S (S = count * B, B a bound on one term's magnitude), and
 *     rounding to the result dtype adds at most one ulp. So an element matches when
 *         |sharded - host| <= 4 eps(result) |host| + 2 count eps(acc) S
 *     with eps the unit roundoff (2^-11 f16, 2^-8 bf16, 2^-24 f32 / c64, 2^-53 f64 / c128) and
 *     eps(acc) 2^-24 for f16 / bf16 inputs (the reference may accumulate them in f32), 2^-53
 *     otherwise (f32 and f64 accumulate in f64, complex in c128). Complex: per real component,
 *     relative to the element's modulus. mean: the sum's bound / count. var / std: two passes
 *     of terms (x - mean)^2 <= (2B)^2, 3x the sum's bound / (count - ddof). prod: relative,
 *     4 eps(result) + 4 count eps(acc). Square roots of such sums (std, the L2 norm) use
 *     |sqrt(a) - sqrt(b)| <= min(|a - b| / sqrt(b), sqrt(|a - b|)). A matmul with the
 *     contracted axis split: each shard's partial product is rounded to the result dtype and
 *     the N partials summed: 4 eps(result) relative + (N + 2) eps(result) K Ba Bb absolute.
 *   - GPU (part 3): elementwise and reductions as tests/test_gpu_diff.c, |gpu - host| <= rtol
 *     (|host| + 1e-3 max|host|), rtol 2e-2 f16, 1e-1 bf16, 1e-4 f32 / c64, 1e-9 f64 / c128;
 *     matmul as tests/test_gpu_lib.c (4 ulps relative, 16 K eps(compute) absolute) plus the
 *     contracted split's term above; integers, random_uniform and arange exactly.
 *
 * The regressions of bugs this suite found in backend/mesh.c sit at its end (negative axes,
 * more than 64 inputs, 8-D reductions over the split axis, writes into parts after a read of
 * the whole). The GPU fault test runs in child processes (fork + alarm(60)): a faulting kernel
 * leaves CUDA unusable for the rest of its process, and the parent never touches CUDA.
 */
#include <criterion/criterion.h>

#include "fusec.h"
#include "graph.h"   /* f16 / bf16 conversions, dtype predicates */
#include "backend.h" /* fcr_test_fault */
#include "counting_alloc.h"
#include "test_util.h"
#include "test_values.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- contexts ------------------------------------------------------------------------------ */

static const int shard_counts[] = {2, 3, 4, 5, 8};
#define NCOUNTS ((int)(sizeof shard_counts / sizeof *shard_counts))

static fc_ctx *hc; /* the ordinary host context: the reference */
static fc_ctx *sc; /* the sharded one of the current case */

static fc_ctx *make_sharded(int n) {
    fc_ctx_options o;
    memset(&o, 0, sizeof o);
    o.backend = FC_BACKEND_HOST;
    o.shards = n;
    fc_ctx *c = NULL;
    fc_status st = fc_ctx_create(&c, &o);
    cr_assert_eq(st, FC_OK, "a host context of %d shards: %s", n, fc_strerror(st));
    cr_assert_not_null(c);
    cr_assert_eq(fc_ctx_shards(c), n);
    return c;
}

static void setup(void) { hc = tu_host_ctx(); }
static void teardown(void) {
    if (sc) fc_ctx_destroy(sc);
    if (hc) fc_ctx_destroy(hc);
    sc = hc = NULL;
}

/* ---- ranges, as fusec.h states them ----------------------------------------------------- */

static int64_t range_len(int64_t e, int n, int r) { return e / n + (r < e % n ? 1 : 0); }
static int64_t range_start(int64_t e, int n, int r) {
    int64_t s = 0;
    for (int q = 0; q < r; q++) s += range_len(e, n, q);
    return s;
}

/* ---- data ---------------------------------------------------------------------------------- */

static uint64_t rng_state = 1;
static void rng_seed(uint64_t s) { rng_state = s * 0x9E3779B97F4A7C15ULL + 12345; }

/* Uniform in [lo, hi), never 0. */
static double urand(double lo, double hi) {
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    double u = lo + (double)(rng_state >> 11) * 0x1p-53 * (hi - lo);
    return u == 0.0 ? (lo + hi) / 2 + 0.125 : u;
}

typedef enum dkind { D_SIGNED, D_POSITIVE } dkind;

/* n random elements of dtype t: floats in [-2, 2) (D_POSITIVE: [0.5, 2)), integers in
 * [-9, 9] \ {0} (unsigned and D_POSITIVE: [1, 9]), bools both ways. */
static void *rand_data(fc_dtype t, size_t n, dkind k) {
    size_t es = fc_dtype_size(t);
    unsigned char *p = malloc(n * es + 1);
    cr_assert_not_null(p);
    double lo = k == D_POSITIVE ? 0.5 : -2.0, hi = 2.0;
    for (size_t i = 0; i < n; i++) {
        double v = urand(lo, hi), w = urand(lo, hi);
        unsigned char *q = p + i * es;
        switch (t) {
        case FC_F16: { uint16_t h = fcg_f32_to_f16((float)v); memcpy(q, &h, 2); break; }
        case FC_BF16: { uint16_t h = fcg_f32_to_bf16((float)v); memcpy(q, &h, 2); break; }
        case FC_F32: { float f = (float)v; memcpy(q, &f, 4); break; }
        case FC_F64: memcpy(q, &v, 8); break;
        case FC_C64: { float f[2] = {(float)v, (float)w}; memcpy(q, f, 8); break; }
        case FC_C128: { double d[2] = {v, w}; memcpy(q, d, 16); break; }
        case FC_BOOL: { unsigned char b = urand(-1, 1) > 0; *q = b; break; }
        default: {
            int64_t x = (int64_t)floor(urand(-9.5, 9.5));
            if (x == 0) x = 1;
            if ((fcg_is_uint(t) || k == D_POSITIVE) && x < 0) x = -x;
            memcpy(q, &x, es); /* little-endian: the low bytes */
            break;
        }
        }
    }
    return p;
}

/* The same input in the reference context (h) and the sharded one (s). */
typedef struct pair {
    fc_array *h, *s;
} pair;

static pair input_data(fc_dtype t, fc_shape shape, const void *data) {
    pair p = {fc_from_host(hc, t, shape, data), fc_from_host(sc, t, shape, data)};
    cr_assert_eq(fc_array_status(p.h), FC_OK, "%s", fc_array_errmsg(p.h));
    cr_assert_eq(fc_array_status(p.s), FC_OK, "%s", fc_array_errmsg(p.s));
    return p;
}

static pair input_k(fc_dtype t, fc_shape shape, dkind k) {
    void *data = rand_data(t, tv_numel(shape), k);
    pair p = input_data(t, shape, data);
    free(data);
    return p;
}

static pair input(fc_dtype t, fc_shape shape) { return input_k(t, shape, D_SIGNED); }

/* ---- reading and comparing ---------------------------------------------------------------- */

static double eps_of(fc_dtype t) {
    switch (t) {
    case FC_F16: return 0x1p-11;
    case FC_BF16: return 0x1p-8;
    case FC_F32: case FC_C64: return 0x1p-24;
    default: return 0x1p-53;
    }
}
/* The accumulator's unit roundoff (see the header comment). */
static double acc_eps(fc_dtype in) { return in == FC_F16 || in == FC_BF16 ? 0x1p-24 : 0x1p-53; }

typedef enum tol_mode { T_PLAIN, T_SQRT, T_GPU } tol_mode;
typedef struct tol {
    double rtol, atol;
    tol_mode mode;
} tol;
static const tol EXACT = {0, 0, T_PLAIN};

/* A float sum of `count` terms each at most B in magnitude, with result dtype res. */
static tol tol_sum(fc_dtype in, fc_dtype res, double count, double B) {
    tol t = {4 * eps_of(res), 2 * count * acc_eps(in) * count * B, T_PLAIN};
    return t;
}

/* GPU float math (part 3): as tests/test_gpu_diff.c (tv_gpu_rtol). */
static tol tol_gpu(fc_dtype t) {
    tol r = {tv_gpu_rtol(t), 0, T_GPU};
    return fcg_is_inexact(t) ? r : EXACT;
}

/* a's whole value, read into a buffer poisoned with 0xA5 bytes (a missed write cannot pass);
 * NULL and *st set when the read fails. */
static unsigned char *read_all(fc_array *a, fc_status *st) {
    size_t n = (size_t)fc_array_size(a), es = fc_dtype_size(fc_array_dtype(a));
    unsigned char *buf = malloc(n * es + 1);
    cr_assert_not_null(buf);
    memset(buf, 0xA5, n * es + 1);
    *st = fc_read(a, buf, 0, (int64_t)n);
    if (*st != FC_OK) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* The number of elements of buffers sb (sharded) and hb (reference), n elements of dtype dt,
 * that differ beyond t; the first one described in first. */
static size_t mismatches(const unsigned char *hb, const unsigned char *sb, fc_dtype dt, size_t n,
                         tol t, char *first, size_t first_size) {
    size_t es = fc_dtype_size(dt), bad = 0;
    first[0] = '\0';
    if (!fcg_is_inexact(dt)) {
        for (size_t i = 0; i < n; i++)
            if (memcmp(sb + i * es, hb + i * es, es) != 0) {
                if (!bad) {
                    long long a = 0, b = 0;
                    memcpy(&a, sb + i * es, es < 8 ? es : 8);
                    memcpy(&b, hb + i * es, es < 8 ? es : 8);
                    snprintf(first, first_size, "element %zu: sharded %lld, host %lld", i, a, b);
                }
                bad++;
            }
    } else {
        int parts = fcg_is_complex(dt) ? 2 : 1;
        double big = 0;
        for (size_t i = 0; i < n; i++)
            for (int q = 0; q < parts; q++) {
                double v = fabs(tv_value_at(hb, dt, i, q));
                if (isfinite(v) && v > big) big = v;
            }
        for (size_t i = 0; i < n; i++)
            for (int q = 0; q < parts; q++) {
                double sv = tv_value_at(sb, dt, i, q), hv = tv_value_at(hb, dt, i, q);
                /* complex: a component's error is relative to the element's modulus */
                double mag = parts == 2 ? hypot(tv_value_at(hb, dt, i, 0), tv_value_at(hb, dt, i, 1))
                                        : fabs(hv);
                bool ok;
                if (isnan(hv) || isnan(sv)) ok = isnan(hv) && isnan(sv);
                else if (t.mode == T_PLAIN && t.rtol == 0 && t.atol == 0) { /* bit for bit */
                    size_t cs = es / (size_t)parts, off = i * es + (size_t)q * cs;
                    ok = memcmp(sb + off, hb + off, cs) == 0;
                }
                else if (isinf(hv) || isinf(sv)) ok = sv == hv;
                else {
                    double allowed;
                    if (t.mode == T_GPU) allowed = t.rtol * (mag + 1e-3 * big);
                    else if (t.mode == T_SQRT)
                        allowed = t.rtol * mag +
                                  fmin(mag > 0 ? t.atol / mag : INFINITY, sqrt(t.atol));
                    else allowed = t.rtol * mag + t.atol;
                    ok = fabs(sv - hv) <= allowed || fabs(sv - hv) <= 1e-300;
                    if (!ok && !bad)
                        snprintf(first, first_size, "element %zu%s: sharded %.17g, host %.17g "
                                 "(|diff| %.3g, allowed %.3g)", i, q ? " (imag)" : "", sv, hv,
                                 fabs(sv - hv), allowed);
                }
                if (!ok && !bad && !first[0])
                    snprintf(first, first_size, "element %zu%s: sharded %.17g, host %.17g "
                             "(exact comparison)", i, q ? " (imag)" : "", sv, hv);
                bad += !ok;
            }
    }
    return bad;
}

/* h (reference) and s (sharded, or GPU) hold the same value within t. A failed reference
 * (a poisoned array or an evaluation error) must fail the same way. */
static void compare(fc_array *h, fc_array *s, tol t, const char *fmt, ...) {
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    cr_assert_not_null(h, "%s: reference NULL", what);
    cr_assert_not_null(s, "%s: sharded NULL", what);
    fc_status hs = fc_array_status(h), ss = fc_array_status(s);
    if (hs != FC_OK) {
        cr_expect_eq(ss, hs, "%s: the reference fails with %s (%s), the sharded context gives %s",
                     what, fc_strerror(hs), fc_array_errmsg(h), fc_strerror(ss));
        return;
    }
    if (ss != FC_OK) {
        cr_expect_eq(ss, FC_OK, "%s: sharded array poisoned: %s", what, fc_array_errmsg(s));
        return;
    }
    fc_dtype dt = fc_array_dtype(h);
    cr_assert_eq(fc_array_dtype(s), dt, "%s: dtype %s, want %s", what,
                 fc_dtype_name(fc_array_dtype(s)), fc_dtype_name(dt));
    fc_shape sh = fc_array_shape(h), ss_ = fc_array_shape(s);
    cr_assert_eq(ss_.ndim, sh.ndim, "%s: ndim %d, want %d", what, ss_.ndim, sh.ndim);
    for (int d = 0; d < sh.ndim; d++)
        cr_assert_eq(ss_.dim[d], sh.dim[d], "%s: extent %d is %lld, want %lld", what, d,
                     (long long)ss_.dim[d], (long long)sh.dim[d]);
    fc_status rh, rs;
    unsigned char *hb = read_all(h, &rh);
    unsigned char *sb = read_all(s, &rs);
    if (rh != FC_OK) {
        cr_expect_eq(rs, rh, "%s: the reference's evaluation fails with %s (%s), the sharded "
                     "one gives %s (%s)", what, fc_strerror(rh), fc_errmsg(hc), fc_strerror(rs),
                     fc_errmsg(fc_array_ctx(s)));
        free(sb);
        return;
    }
    if (rs != FC_OK) {
        cr_expect_eq(rs, FC_OK, "%s: sharded evaluation fails: %s (%s)", what, fc_strerror(rs),
                     fc_errmsg(fc_array_ctx(s)));
        free(hb);
        return;
    }
    size_t n = (size_t)fc_array_size(h), bad;
    char first[300];
    bad = mismatches(hb, sb, dt, n, t, first, sizeof first);
    cr_expect_eq(bad, 0, "%s [%s %lld elements]: %zu differ; first %s", what, fc_dtype_name(dt),
                 (long long)n, bad, first);
    free(hb);
    free(sb);
}

/* The array's layout after evaluation. */
static int layout(fc_array *a) {
    int ax = -99;
    fc_status st = fc_sharding(a, &ax);
    cr_assert_eq(st, FC_OK, "sharding: %s (%s)", fc_strerror(st), fc_errmsg(fc_array_ctx(a)));
    return ax;
}

/* Input layouts a case runs with: free (fc_from_host, not yet evaluated: placed where its
 * consumers want it), or an evaluated value split along an axis or replicated. */
#define VAR_FREE (-2)
static const int variants[] = {VAR_FREE, 0, 1, FC_REPLICATED};
#define NVARIANTS 4
static const char *variant_name(int v) {
    static char buf[4][16];
    static int k;
    if (v == VAR_FREE) return "free input";
    if (v == FC_REPLICATED) return "replicated input";
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "split(%d) input", v);
    return buf[k];
}

/* s in variant v's layout (an axis beyond s's rank: its last axis). */
static fc_array *as_layout(fc_array *s, int v) {
    if (v == VAR_FREE) return s;
    int nd = fc_array_ndim(s);
    int ax = v == FC_REPLICATED || nd == 0 ? FC_REPLICATED : v < nd ? v : nd - 1;
    fc_array *r = fc_reshard(s, ax);
    cr_assert_eq(fc_array_status(r), FC_OK, "reshard(%d): %s", ax, fc_array_errmsg(r));
    cr_assert_eq(layout(r), ax);
    return r;
}

static fc_shard_stats stats(fc_ctx *c, bool reset) {
    fc_shard_stats s;
    cr_assert_eq(fc_shard_stats_get(c, &s, reset), FC_OK, "%s", fc_errmsg(c));
    return s;
}

static const char *axes_str(fc_axes a, char *buf) {
    if (a.n < 0) return "all";
    int len = sprintf(buf, "(");
    for (int i = 0; i < a.n; i++) len += sprintf(buf + len, i ? ",%d" : "%d", a.axis[i]);
    sprintf(buf + len, ")");
    return buf;
}

/* ---- reductions ------------------------------------------------------------------------------ */

typedef enum rop {
    R_SUM, R_PROD, R_MEAN, R_MAX, R_MIN, R_ANY, R_ALL, R_VAR0, R_VAR1, R_STD0, R_STD1,
    R_NORM2, R_NORM1, R_NORMINF, R_COUNT, R_ARGMAX, R_ARGMIN, R_NOPS
} rop;
static const char *const rop_names[] = {"sum", "prod", "mean", "max", "min", "any", "all",
                                        "var(ddof 0)", "var(ddof 1)", "std(ddof 0)",
                                        "std(ddof 1)", "norm(L2)", "norm(L1)", "norm(inf)",
                                        "count_nonzero", "argmax", "argmin"};

/* Reduction op of x over axes; NULL where the op takes no such axes (argmax: one axis or all).
 * any / all / count_nonzero reduce a predicate of x with both truth values in it. */
static fc_array *reduce_op(rop op, fc_array *x, fc_axes ax, bool kd) {
    fc_ctx *c = fc_array_ctx(x);
    switch (op) {
    case R_SUM: return fc_sum(x, ax, kd);
    case R_PROD: return fc_prod(x, ax, kd);
    case R_MEAN: return fc_mean(x, ax, kd);
    case R_MAX: return fc_max(x, ax, kd);
    case R_MIN: return fc_min(x, ax, kd);
    case R_ANY: return fc_any(fc_greater(fc_real(x), fc_f64(c, 1.5)), ax, kd);
    case R_ALL: return fc_all(fc_greater(fc_real(x), fc_f64(c, -1.8)), ax, kd);
    case R_VAR0: return fc_var(x, ax, kd, 0);
    case R_VAR1: return fc_var(x, ax, kd, 1);
    case R_STD0: return fc_std(x, ax, kd, 0);
    case R_STD1: return fc_std(x, ax, kd, 1);
    case R_NORM2: return fc_norm(x, ax, kd, FC_NORM_L2);
    case R_NORM1: return fc_norm(x, ax, kd, FC_NORM_L1);
    case R_NORMINF: return fc_norm(x, ax, kd, FC_NORM_INF);
    case R_COUNT: return fc_count_nonzero(fc_greater(fc_real(x), fc_f64(c, 0.5)), ax, kd);
    case R_ARGMAX:
    case R_ARGMIN: {
        int axis;
        if (ax.n < 0) axis = FC_AXIS_NONE;
        else if (ax.n == 1) axis = ax.axis[0];
        else return NULL;
        return op == R_ARGMAX ? fc_argmax(x, axis, kd) : fc_argmin(x, axis, kd);
    }
    case R_NOPS: break;
    }
    return NULL;
}

/* The tolerance of reduction op over `count` elements of dtype in with magnitudes <= B. */
static tol reduce_tol(rop op, fc_dtype in, fc_dtype res, double count, double B) {
    if (!fcg_is_inexact(res)) return EXACT;
    double dof;
    tol t;
    switch (op) {
    case R_SUM: case R_NORM1: return tol_sum(in, res, count, B);
    case R_MEAN:
        t = tol_sum(in, res, count, B);
        t.atol /= count > 0 ? count : 1;
        return t;
    case R_PROD: /* relative: a (complex) product's rounding is relative to its modulus */
        t.rtol = 4 * eps_of(res) + 4 * count * acc_eps(in);
        t.atol = 0;
        t.mode = T_PLAIN;
        return t;
    case R_VAR0: case R_VAR1: case R_STD0: case R_STD1:
        dof = count - (op == R_VAR1 || op == R_STD1);
        /* two passes, terms (x - mean)^2 <= (2B)^2; the mean's own error adds one more */
        t = tol_sum(in, res, count, 4 * B * B);
        t.atol = 3 * t.atol / (dof > 0 ? dof : 1);
        if (op == R_STD0 || op == R_STD1) t.mode = T_SQRT;
        return t;
    case R_NORM2:
        t = tol_sum(in, res, count, B * B);
        t.mode = T_SQRT;
        return t;
    default: return EXACT; /* max, min, norm(inf), arg*: exact */
    }
}

static double count_of(fc_shape s, fc_axes ax) {
    double c = 1;
    if (ax.n < 0) {
        for (int d = 0; d < s.ndim; d++) c *= (double)s.dim[d];
        return c;
    }
    for (int i = 0; i < ax.n; i++) c *= (double)s.dim[ax.axis[i] < 0 ? ax.axis[i] + s.ndim : ax.axis[i]];
    return c;
}

/* Every reduction op of x (pair) over every axis set in axs, keepdims both ways. B: a bound
 * on |x|. */
static void check_reductions(pair x, const fc_axes *axs, int naxs, double B, const char *tag) {
    fc_shape shape = fc_array_shape(x.h);
    fc_dtype t = fc_array_dtype(x.h);
    int n = fc_ctx_shards(sc);
    for (int a = 0; a < naxs; a++)
        for (int kd = 0; kd < 2; kd++)
            for (int op = 0; op < R_NOPS; op++) {
                fc_array *h = reduce_op((rop)op, x.h, axs[a], kd);
                fc_array *s = reduce_op((rop)op, x.s, axs[a], kd);
                if (!h) continue;
                char ab[64];
                tol tl = reduce_tol((rop)op, t, fc_array_dtype(h), count_of(shape, axs[a]), B);
                compare(h, s, tl, "%s: %d shards, %s over %s, keepdims %d", tag, n, rop_names[op],
                        axes_str(axs[a], ab), kd);
            }
}

/* ---- part 1: host-simulated shards against the host reference ------------------------------- */

TestSuite(shard_host, .init = setup, .fini = teardown);

/* The comparison itself can fail: it sees one ulp, an imaginary part, an integer off by one,
 * NaN against a number, and a difference just beyond a tolerance. */
Test(shard_host, the_comparison_sees_small_differences) {
    char first[300];
    double a[3] = {1.5, -0.25, 3.0}, b[3] = {1.5, -0.25, 3.0};
    cr_expect_eq(mismatches((void *)a, (void *)b, FC_F64, 3, EXACT, first, sizeof first), 0);
    b[1] = nextafter(b[1], 1.0);
    cr_expect_eq(mismatches((void *)a, (void *)b, FC_F64, 3, EXACT, first, sizeof first), 1, "1 ulp");
    cr_expect_eq(mismatches((void *)a, (void *)b, FC_F64, 3, tol_sum(FC_F64, FC_F64, 1, 0.25),
                            first, sizeof first), 0, "1 ulp within a sum's tolerance");
    b[1] = -0.25 + 1e-6;
    cr_expect_eq(mismatches((void *)a, (void *)b, FC_F64, 3, tol_sum(FC_F64, FC_F64, 100, 2),
                            first, sizeof first), 1, "1e-6 beyond a sum's tolerance");
    b[1] = NAN;
    cr_expect_eq(mismatches((void *)a, (void *)b, FC_F64, 3, tol_sum(FC_F64, FC_F64, 100, 2),
                            first, sizeof first), 1, "NaN against a number");
    a[1] = NAN;
    cr_expect_eq(mismatches((void *)a, (void *)b, FC_F64, 3, EXACT, first, sizeof first), 0, "NaN, NaN");
    float c[4] = {1, 2, 3, 4}, d[4] = {1, 2, 3, 4.0001f};
    cr_expect_eq(mismatches((void *)c, (void *)d, FC_C64, 2, EXACT, first, sizeof first), 1, "imag");
    cr_expect_eq(mismatches((void *)c, (void *)d, FC_C64, 2, tol_gpu(FC_C64), first, sizeof first), 0);
    int16_t e[2] = {7, -3}, f[2] = {7, -2};
    cr_expect_eq(mismatches((void *)e, (void *)f, FC_I16, 2, tol_gpu(FC_I16), first, sizeof first), 1,
                 "an integer off by one, even under a float tolerance");
    uint16_t g[1] = {fcg_f32_to_f16(1.0f)}, h[1] = {(uint16_t)(g[0] + 1)};
    cr_expect_eq(mismatches((void *)g, (void *)h, FC_F16, 1, EXACT, first, sizeof first), 1, "f16 ulp");
    tol sq = {0, 1e-12, T_SQRT};
    double s1[1] = {2.0}, s2[1] = {2.0 + 4e-13}; /* a square 1.6e-12 off: within 1e-12 / 2 */
    cr_expect_eq(mismatches((void *)s1, (void *)s2, FC_F64, 1, sq, first, sizeof first), 0);
    s2[0] = 2.0 + 1e-9;
    cr_expect_eq(mismatches((void *)s1, (void *)s2, FC_F64, 1, sq, first, sizeof first), 1, "sqrt mode");
}

/* W1-like chains, where / clip, a bias row, a bias column, scalars: exact. */
Test(shard_host, elementwise_chains_match_exactly) {
    for (int ci = 0; ci < NCOUNTS; ci++) {
        int n = shard_counts[ci];
        sc = make_sharded(n);
        fc_scope *s1 = fc_scope_open(hc), *s2 = fc_scope_open(sc);
        rng_seed(100 + (uint64_t)n);
        const int64_t R = 23, C = 6;
        pair x = input(FC_F32, FC_SHAPE(R, C)), y = input(FC_F32, FC_SHAPE(R, C));
        pair bias = input(FC_F32, FC_SHAPE(C)), col = input(FC_F32, FC_SHAPE(R, 1));
        pair xi = input(FC_I32, FC_SHAPE(R, C)), yi = input(FC_I32, FC_SHAPE(R, C));
        pair xd = input(FC_F64, FC_SHAPE(R, C));
        fc_array *h[12], *s[12];
        const char *names[12];
        int k = 0;
        for (int side = 0; side < 2; side++) {
            fc_ctx *c = side ? sc : hc;
            fc_array *X = side ? x.s : x.h, *Y = side ? y.s : y.h, *B = side ? bias.s : bias.h;
            fc_array *Cl = side ? col.s : col.h, *XI = side ? xi.s : xi.h, *YI = side ? yi.s : yi.h;
            fc_array *XD = side ? xd.s : xd.h;
            fc_array **o = side ? s : h;
            k = 0;
            names[k] = "tanh(sin(x) + 0.1 x)";
            o[k++] = fc_tanh(fc_add(fc_sin(X), fc_mul(X, fc_f64(c, 0.1))));
            names[k] = "where(x > y, x, 0.5 y)";
            o[k++] = fc_where(fc_greater(X, Y), X, fc_mul(fc_f64(c, 0.5), Y));
            names[k] = "clip(x, -1, 0.75)";
            o[k++] = fc_clip(X, fc_f64(c, -1.0), fc_f64(c, 0.75));
            names[k] = "x * y + bias row";
            o[k++] = fc_add(fc_mul(X, Y), B);
            names[k] = "exp(x) - bias column";
            o[k++] = fc_sub(fc_exp(X), Cl);
            names[k] = "bias row * bias column (outer broadcast)";
            o[k++] = fc_mul(B, Cl);
            names[k] = "i32: x * 3 + y // 2 - x % y";
            o[k++] = fc_sub(fc_add(fc_mul(XI, fc_i64(c, 3)), fc_floordiv(YI, fc_i64(c, 2))),
                            fc_mod(XI, YI));
            names[k] = "i32 / f32 promotion: xi + x";
            o[k++] = fc_add(XI, X);
            names[k] = "f64: sqrt(|x|) * 2.5 - 1";
            o[k++] = fc_sub(fc_mul(fc_sqrt(fc_abs(XD)), fc_f64(c, 2.5)), fc_f64(c, 1.0));
            names[k] = "strong scalar: x * f32(3) + cast(x, f16)";
            o[k++] = fc_add(fc_mul(X, fc_scalar(c, FC_F32, 3.0)), fc_cast(X, FC_F16));
            names[k] = "x + transpose(transpose(y))";
            o[k++] = fc_add(X, fc_transpose(fc_transpose(Y)));
        }
        /* evaluate together (multiple outputs in one evaluation), then compare */
        cr_assert_eq(fc_eval(sc, s, k), FC_OK, "%s", fc_errmsg(sc));
        for (int i = 0; i < k; i++) compare(h[i], s[i], EXACT, "%d shards: %s", n, names[i]);
        /* a [23, 6] elementwise result of a from_host input is split along axis 0 */
        cr_expect_eq(layout(s[0]), 0, "%d shards: W1's layout", n);
        fc_shard_stats st = stats(sc, false);
        cr_expect_eq(st.allreduces, 0, "%d shards: elementwise ops need no all-reduce", n);
        cr_expect_eq(st.gathers, 0, "%d shards: elementwise ops need no gather", n);
        /* operands in different layouts: split(0) with split(1), replicated, a split bias */
        for (int vi = 1; vi < NVARIANTS; vi++)
            for (int vj = 0; vj < NVARIANTS; vj++) {
                fc_array *X = as_layout(x.s, variants[vi]), *Y = as_layout(y.s, variants[vj]);
                fc_array *Bs = as_layout(bias.s, variants[vj]), *Cs = as_layout(col.s, variants[vi]);
                compare(fc_tanh(fc_add(fc_sin(x.h), fc_mul(y.h, bias.h))),
                        fc_tanh(fc_add(fc_sin(X), fc_mul(Y, Bs))), EXACT,
                        "%d shards: tanh(sin(x) + y * bias), x %s, y and bias %s", n,
                        variant_name(variants[vi]), variant_name(variants[vj]));
                compare(fc_where(fc_greater(x.h, col.h), y.h, x.h), fc_where(fc_greater(X, Cs), Y, X),
                        EXACT, "%d shards: where(x > col, y, x), x %s, y %s", n,
                        variant_name(variants[vi]), variant_name(variants[vj]));
                compare(fc_add(x.h, fc_transpose(fc_transpose(y.h))),
                        fc_add(X, fc_transpose(fc_transpose(Y))), EXACT,
                        "%d shards: x + y.T.T, x %s, y %s", n, variant_name(variants[vi]),
                        variant_name(variants[vj]));
            }
        fc_scope_close(s2);
        fc_scope_close(s1);
        fc_ctx_destroy(sc);
        sc = NULL;
    }
}

/* Every reduction op over the split axis, a non-split axis, both and all, keepdims both
 * ways, on f64 and f32 input split along axis 0 (the default) and along axis 1 (resharded). */
Test(shard_host, every_reduction_over_split_and_other_axes) {
    const fc_axes axs[] = {FC_AXES(0), FC_AXES(1), FC_AXES(0, 1), FC_AXES(-1), FC_ALL};
    for (int ci = 0; ci < NCOUNTS; ci++) {
        int n = shard_counts[ci];
        sc = make_sharded(n);
        fc_scope *s1 = fc_scope_open(hc), *s2 = fc_scope_open(sc);
        rng_seed(200 + (uint64_t)n);
        pair x = input(FC_F64, FC_SHAPE(23, 6));
        check_reductions(x, axs, 5, 2.0, "f64 free");
        x.s = as_layout(x.s, 0);
        check_reductions(x, axs, 5, 2.0, "f64 split(0) value");
        x.s = as_layout(x.s, FC_REPLICATED);
        check_reductions(x, axs, 5, 2.0, "f64 replicated value");
        pair y = input(FC_F32, FC_SHAPE(13, 11));
        check_reductions(y, axs, 5, 2.0, "f32 split(0)");
        /* split along axis 1: reductions over axis 1 now cross the shards */
        pair z = input(FC_F64, FC_SHAPE(5, 17));
        z.s = fc_reshard(z.s, 1);
        cr_assert_eq(layout(z.s), 1);
        check_reductions(z, axs, 5, 2.0, "f64 resharded split(1)");
        fc_scope_close(s2);
        fc_scope_close(s1);
        fc_ctx_destroy(sc);
        sc = NULL;
    }
}

/* Reductions over a split axis really cross the shards: the all-reduces are counted. */
Test(shard_host, reductions_over_the_split_axis_all_reduce) {
    sc = make_sharded(4);
    fc_scope *s1 = fc_scope_open(hc), *s2 = fc_scope_open(sc);
    rng_seed(7);
    pair x = input(FC_F64, FC_SHAPE(22, 5));
    cr_assert_eq(layout(x.s), 0); /* x holds a split value: what cannot follow it gathers */
    struct { rop op; uint64_t allreduces, gathers; } want[] = {
        {R_SUM, 1, 0}, {R_PROD, 1, 0}, {R_MEAN, 1, 0}, {R_MAX, 1, 0}, {R_MIN, 1, 0},
        {R_ANY, 1, 0}, {R_ALL, 1, 0}, {R_VAR0, 2, 0}, {R_VAR1, 2, 0}, {R_STD0, 2, 0},
        {R_NORM2, 1, 0}, {R_NORM1, 1, 0}, {R_NORMINF, 1, 0}, {R_COUNT, 1, 0},
        {R_ARGMAX, 0, 1}, {R_ARGMIN, 0, 1}};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        stats(sc, true);
        fc_array *h = reduce_op(want[i].op, x.h, FC_AXES(0), false);
        fc_array *s = reduce_op(want[i].op, x.s, FC_AXES(0), false);
        compare(h, s, reduce_tol(want[i].op, FC_F64, fc_array_dtype(h), 22, 2.0), "%s over 0",
                rop_names[want[i].op]);
        fc_shard_stats st = stats(sc, false);
        cr_expect_eq(st.allreduces, want[i].allreduces, "%s over the split axis: %llu all-reduces",
                     rop_names[want[i].op], (unsigned long long)st.allreduces);
        cr_expect_eq(st.gathers, want[i].gathers, "%s over the split axis: %llu gathers",
                     rop_names[want[i].op], (unsigned long long)st.gathers);
        /* over the other axis: local */
        stats(sc, true);
        h = reduce_op(want[i].op, x.h, FC_AXES(1), false);
        s = reduce_op(want[i].op, x.s, FC_AXES(1), false);
        compare(h, s, reduce_tol(want[i].op, FC_F64, fc_array_dtype(h), 5, 2.0), "%s over 1",
                rop_names[want[i].op]);
        st = stats(sc, false);
        cr_expect_eq(st.allreduces + st.gathers, 0, "%s over a non-split axis: %llu collectives",
                     rop_names[want[i].op], (unsigned long long)(st.allreduces + st.gathers));
        cr_expect_eq(layout(s), 0, "%s over axis 1 keeps the rows split", rop_names[want[i].op]);
    }
    fc_scope_close(s2);
    fc_scope_close(s1);
}

/* 3-D reductions over axis sets that include the split axis and not. */
Test(shard_host, reductions_of_3d_arrays) {
    const fc_axes axs[] = {FC_AXES(0, 2), FC_AXES(1, 2), FC_AXES(2, 0), FC_AXES(1), FC_ALL};
    const int counts[] = {3, 5};
    for (int ci = 0; ci < 2; ci++) {
        int n = counts[ci];
        sc = make_sharded(n);
        fc_scope *s1 = fc_scope_open(hc), *s2 = fc_scope_open(sc);
        rng_seed(300 + (uint64_t)n);
        pair x = input(FC_F64, FC_SHAPE(7, 4, 5));
        check_reductions(x, axs, 5, 2.0, "3-D f64 split(0)");
        x.s = fc_reshard(x.s, 2);
        check_reductions(x, axs, 5, 2.0, "3-D f64 split(2)");
        fc_scope_close(s2);
        fc_scope_close(s1);
        fc_ctx_destroy(sc);
        sc = NULL;
    }
}

/* NaN and inf on one shard only: max / min / sum / argmax propagate them as NumPy does. */
Test(shard_host, nan_and_inf_on_one_shard) {
    sc = make_sharded(4);
    fc_scope *s1 = fc_scope_open(hc), *s2 = fc_scope_open(sc);
    rng_seed(8);
    double *d = rand_data(FC_F64, 12 * 3, D_SIGNED);
    d[10 * 3 + 1] = NAN;      /* row 10: shard 3's range [9, 12) */
    d[4 * 3 + 2] = INFINITY;  /* row 4: shard 1 */
    d[7 * 3 + 2] = -INFINITY; /* row 7: shard 2 */
    pair x = input_data(FC_F64, FC_SHAPE(12, 3), d);
    free(d);
    for (int op = 0; op < R_NOPS; op++) {
        compare(reduce_op((rop)op, x.h, FC_AXES(0), false), reduce_op((rop)op, x.s, FC_AXES(0), false),
                EXACT, "%s over the split axis with NaN / inf", rop_names[op]);
    }
    compare(fc_nanmax(x.h, FC_AXES(0), false), fc_nanmax(x.s, FC_AXES(0), false), EXACT, "nanmax");
    compare(fc_nansum(x.h, FC_AXES(0), false), fc_nansum(x.s, FC_AXES(0), false),
            tol_sum(FC_F64, FC_F64, 12, 2), "nansum");
    fc_scope_close(s2);
    fc_scope_close(s1);
}

/* Reduce-broadcast chains: softmax over the split axis and over the other one, column
 * normalisation, standardisation. */
static fc_array *softmax(fc_array *x, int axis) {
    fc_array *e = fc_exp(fc_sub(x, fc_max(x, FC_AXES(axis), true)));
    return fc_div(e, fc_sum(e, FC_AXES(axis), true));
}

Test(shard_host, reduce_broadcast_chains) {
    for (int ci = 0; ci < NCOUNTS; ci++) {
        int n = shard_counts[ci];
        sc = make_sharded(n);
        fc_scope *s1 = fc_scope_open(hc), *s2 = fc_scope_open(sc);
        rng_seed(400 + (uint64_t)n);
        const int64_t R = 21, C = 6;
        static const fc_dtype dts[] = {FC_F32, FC_F64};
        for (int di = 0; di < 2; di++) {
            fc_dtype t = dts[di];
            pair x = input(t, FC_SHAPE(R, C));
            /* softmax: e / sum(e) with e <= 1 and sum(e) >= 1: relative error of the sum */
            tol ts = {4 * eps_of(t) + 2 * (double)R * R * acc_eps(t), 0, T_PLAIN};
            stats(sc, true);
            fc_array *ss = softmax(x.s, 0);
            compare(softmax(x.h, 0), ss, ts, "%d shards, %s: softmax over the split axis", n,
                    fc_dtype_name(t));
            fc_shard_stats st = stats(sc, false);
            cr_expect_eq(st.allreduces, 2, "%d shards: softmax over the split axis: %llu "
                         "all-reduces (max, then sum)", n, (unsigned long long)st.allreduces);
            cr_expect_eq(st.gathers, 0, "%d shards: softmax over the split axis gathers %llu", n,
                         (unsigned long long)st.gathers);
            cr_expect_eq(layout(ss), 0, "softmax over the split axis stays split");
            ts.rtol = 4 * eps_of(t) + 2 * (double)C * C * acc_eps(t);
            stats(sc, true);
            compare(softmax(x.h, 1), softmax(x.s, 1), ts, "%d shards, %s: softmax over axis 1",
                    n, fc_dtype_name(t));
            st = stats(sc, false);
            cr_expect_eq(st.allreduces + st.gathers, 0, "softmax over axis 1 is local");
            /* column normalisation on positive data: sum >= count / 4 of its largest term */
            pair p = input_k(t, FC_SHAPE(R, C), D_POSITIVE);
            tol tn = {4 * eps_of(t) + 2 * (double)R * 4 * acc_eps(t) * R, 0, T_PLAIN};
            compare(fc_div(p.h, fc_sum(p.h, FC_AXES(0), true)),
                    fc_div(p.s, fc_sum(p.s, FC_AXES(0), true)), tn,
                    "%d shards, %s: x / sum(x, axis 0)", n, fc_dtype_name(t));
            compare(fc_div(p.h, fc_sum(p.h, FC_AXES(1), true)),
                    fc_div(p.s, fc_sum(p.s, FC_AXES(1), true)), tn,
                    "%d shards, %s: x / sum(x, axis 1)", n, fc_dtype_name(t));
            /* x - mean(x, 0): absolute error of the mean */
            tol tm = tol_sum(t, t, R, 2.0);
            tm.atol /= (double)R;
            tm.atol += 4 * eps_of(t) * 4; /* the subtraction's rounding, |x - mean| < 4 */
            compare(fc_sub(x.h, fc_mean(x.h, FC_AXES(0), true)),
                    fc_sub(x.s, fc_mean(x.s, FC_AXES(0), true)), tm,
                    "%d shards, %s: x - mean(x, axis 0)", n, fc_dtype_name(t));
            /* a chain of two reductions over the split axis: sum(x * sum(x, 0), 0) */
            fc_array *hh = fc_sum(fc_mul(x.h, fc_max(x.h, FC_AXES(0), true)), FC_AXES(0), false);
            fc_array *sh = fc_sum(fc_mul(x.s, fc_max(x.s, FC_AXES(0), true)), FC_AXES(0), false);
            compare(hh, sh, tol_sum(t, t, R, 4.0), "%d shards, %s: sum(x * max(x, 0), 0)", n,
                    fc_dtype_name(t));
        }
        fc_scope_close(s2);
        fc_scope_close(s1);
        fc_ctx_destroy(sc);
        sc = NULL;
    }
}

/* Views on and off the split axis, each evaluated alone and under an elementwise op. */
Test(shard_host, views_on_and_off_the_split_axis) {
    for (int ci = 0; ci < NCOUNTS; ci++) {
        int n = shard_counts[ci];
        sc = make_sharded(n);
        fc_scope *s1 = fc_scope_open(hc), *s2 = fc_scope_open(sc);
        rng_seed(500 + (uint64_t)n);
        const int64_t R = 18, C = 6;
        for (int vi = 0; vi < NVARIANTS; vi++) {
        int var = variants[vi];
        pair x = input(FC_F64, FC_SHAPE(R, C)), y = input(FC_F64, FC_SHAPE(R, C));
        pair x3 = input(FC_F32, FC_SHAPE(R, 4, 5)), v = input(FC_F64, FC_SHAPE(R));
        pair row = input(FC_F64, FC_SHAPE(1, C)), col = input(FC_F64, FC_SHAPE(R, 1));
        x.s = as_layout(x.s, var);
        y.s = as_layout(y.s, var == 0 ? 1 : var == 1 ? 0 : var); /* the other split */
        x3.s = as_layout(x3.s, var == 1 ? 2 : var);
        v.s = as_layout(v.s, var);
        col.s = as_layout(col.s, var);
        enum { NV = 56 };
        fc_array *h[NV], *s[NV];
        const char *names[NV];
        int k = 0;
        for (int side = 0; side < 2; side++) {
            fc_ctx *c = side ? sc : hc;
            fc_array *X = side ? x.s : x.h, *Y = side ? y.s : y.h, *X3 = side ? x3.s : x3.h;
            fc_array *V = side ? v.s : v.h, *RW = side ? row.s : row.h, *CL = side ? col.s : col.h;
            fc_array **o = side ? s : h;
            k = 0;
#define V_(name, e) (names[k] = (name), o[k++] = (e))
            V_("transpose", fc_transpose(X));
            V_("transpose + 1", fc_add(fc_transpose(X), fc_f64(c, 1)));
            V_("x + x.T.T", fc_add(X, fc_transpose(fc_transpose(X))));
            V_("permute (2, 0, 1)", fc_mul(fc_permute(X3, FC_AXES(2, 0, 1)), fc_f64(c, 2)));
            V_("permute (1, 0, 2)", fc_permute(X3, FC_AXES(1, 0, 2)));
            V_("reshape [R, 2, 3] (keeps axis 0)", fc_reshape(X, FC_SHAPE(R, 2, 3)));
            V_("reshape [R, 2, 3] * 3", fc_mul(fc_reshape(X, FC_SHAPE(R, 2, 3)), fc_f64(c, 3)));
            V_("reshape [R * 6] (moves it)", fc_reshape(X, FC_SHAPE(R * C)));
            V_("reshape [6, R] (moves it)", fc_sin(fc_reshape(X, FC_SHAPE(C, R))));
            V_("reshape [3, R * 2]", fc_reshape(X, FC_SHAPE(3, R * 2)));
            V_("reshape 3-D [R, 20]", fc_reshape(X3, FC_SHAPE(R, 20)));
            V_("slice axis 0 [2:-3]", fc_slice(X, FC_S(2, -3, 1), FC_COLON));
            V_("slice axis 0 [::2] + 1", fc_add(fc_slice(X, FC_S(FC_NIL, FC_NIL, 2), FC_COLON),
                                                fc_f64(c, 1)));
            V_("slice axis 0 [::-1]", fc_slice(X, FC_S(FC_NIL, FC_NIL, -1), FC_COLON));
            V_("slice axis 1 [:, 1:5]", fc_slice(X, FC_COLON, FC_S(1, 5, 1)));
            V_("slice axis 1 [:, ::-2] * y[:, ::-2]",
               fc_mul(fc_slice(X, FC_COLON, FC_S(FC_NIL, FC_NIL, -2)),
                      fc_slice(Y, FC_COLON, FC_S(FC_NIL, FC_NIL, -2))));
            V_("index [:, 3]", fc_slice(X, FC_COLON, FC_AT(3)));
            V_("index [5]", fc_slice(X, FC_AT(5)));
            V_("index [:, None, :]", fc_slice(X, FC_COLON, FC_NEWAXIS, FC_COLON));
            V_("index [..., 1:3]", fc_slice(X3, FC_ELLIPSIS, FC_S(1, 3, 1)));
            V_("pad axis 0 constant", fc_pad(X, 2, (const int64_t[][2]){{1, 2}, {0, 0}},
                                             FC_PAD_CONSTANT, 7.5));
            V_("pad axis 1 edge", fc_pad(X, 2, (const int64_t[][2]){{0, 0}, {2, 1}}, FC_PAD_EDGE, 0));
            V_("pad axis 1 reflect", fc_pad(X, 2, (const int64_t[][2]){{0, 0}, {2, 3}},
                                            FC_PAD_REFLECT, 0));
            V_("pad both symmetric", fc_pad(X, 1, (const int64_t[][2]){{1, 1}}, FC_PAD_SYMMETRIC, 0));
            V_("concatenate axis 0", fc_concatenate(c, (fc_array *[]){X, Y}, 2, 0));
            V_("concatenate axis 1", fc_concatenate(c, (fc_array *[]){X, Y, X}, 3, 1));
            V_("stack axis 0", fc_stack(c, (fc_array *[]){X, Y}, 2, 0));
            V_("stack axis 2", fc_stack(c, (fc_array *[]){X, Y}, 2, 2));
            V_("broadcast_to column [R, 1] -> [R, C]", fc_broadcast_to(CL, FC_SHAPE(R, C)));
            V_("broadcast_to row [1, C] -> [R, C] + x", fc_add(fc_broadcast_to(RW, FC_SHAPE(R, C)), X));
            V_("broadcast_to v [R] -> [C, R]", fc_broadcast_to(V, FC_SHAPE(C, R)));
            V_("expand_dims(v, 1) -> [R, C]", fc_mul(fc_expand_dims(V, 1), X));
            V_("squeeze(col)", fc_squeeze(CL, FC_ALL));
            V_("flip axis 0", fc_flip(X, FC_AXES(0)));
            V_("flip axis 1", fc_flip(X, FC_AXES(1)));
            V_("roll 5 along axis 0", fc_roll(X, 5, 0));
            V_("roll -2 along axis 1", fc_roll(X, -2, 1));
            V_("tril(x, 1)", fc_tril(X, 1));
            V_("diagonal", fc_diagonal(X, 0, 0, 1));
            V_("sum over axis 1 of a transpose", fc_sum(fc_transpose(X), FC_AXES(1), false));
            V_("sum(broadcast row, 0)", fc_sum(fc_broadcast_to(RW, FC_SHAPE(R, C)), FC_AXES(0), false));
            V_("mean(x[::2], 0)", fc_mean(fc_slice(X, FC_S(FC_NIL, FC_NIL, 2), FC_COLON), FC_AXES(0), true));
            V_("sum(pad axis 0, 0)", fc_sum(fc_pad(X, 2, (const int64_t[][2]){{2, 1}, {0, 0}},
                                                  FC_PAD_REFLECT, 0), FC_AXES(0), false));
            V_("max(concatenate axis 0, 0)", fc_max(fc_concatenate(c, (fc_array *[]){X, Y}, 2, 0),
                                                   FC_AXES(0), false));
            V_("sum(reshape [R, 2, 3], (0, 2))", fc_sum(fc_reshape(X, FC_SHAPE(R, 2, 3)), FC_AXES(0, 2), false));
            V_("sum(permute x3, (1, 2))", fc_sum(fc_permute(X3, FC_AXES(2, 0, 1)), FC_AXES(1, 2), false));
            V_("x - mean(x.T, 1) as a row broadcast", fc_sub(X, fc_mean(fc_transpose(X), FC_AXES(1), false)));
#undef V_
        }
        for (int i = 0; i < k; i++) {
            /* the last one sums R values over the (moved) split axis */
            /* the sums and means add at most 4 R terms of magnitude < 2 */
            bool sums = strstr(names[i], "sum") || strstr(names[i], "mean");
            tol t = sums ? tol_sum(FC_F32, FC_F32, 4 * R, 2.0) : EXACT;
            compare(h[i], s[i], t, "%d shards, %s: %s", n, variant_name(var), names[i]);
        }
        }
        fc_scope_close(s2);
        fc_scope_close(s1);
        fc_ctx_destroy(sc);
        sc = NULL;
    }
}

/* a [R, K] split by rows: from parts made on each shard (from_shards). */
static fc_array *from_host_split(fc_ctx *c, fc_dtype t, fc_shape shape, const void *data, int axis) {
    int n = fc_ctx_shards(c);
    size_t es = fc_dtype_size(t), inner = es, outer = 1;
    for (int d = axis + 1; d < shape.ndim; d++) inner *= (size_t)shape.dim[d];
    for (int d = 0; d < axis; d++) outer *= (size_t)shape.dim[d];
    fc_array *parts[64];
    for (int r = 0; r < n; r++) {
        int64_t len = range_len(shape.dim[axis], n, r), start = range_start(shape.dim[axis], n, r);
        fc_shape ls = shape;
        ls.dim[axis] = len;
        size_t bytes = outer * (size_t)len * inner;
        char *buf = malloc(bytes + 1);
        for (size_t o = 0; o < outer; o++)
            memcpy(buf + o * (size_t)len * inner,
                   (const char *)data + (o * (size_t)shape.dim[axis] + (size_t)start) * inner,
                   (size_t)len * inner);
        parts[r] = fc_from_host(fc_ctx_shard(c, r), t, ls, buf);
        free(buf);
        cr_assert_eq(fc_array_status(parts[r]), FC_OK);
    }
    return fc_from_shards(c, parts, axis);
}

/* Matmul in each data-parallel layout. */
Test(shard_host, matmul_layouts) {
    static const fc_dtype dts[] = {FC_F64, FC_F32, FC_I32, FC_C64, FC_F16, FC_I8};
    for (int ci = 0; ci < NCOUNTS; ci++) {
        int n = shard_counts[ci];
        sc = make_sharded(n);
        fc_scope *s1 = fc_scope_open(hc), *s2 = fc_scope_open(sc);
        rng_seed(600 + (uint64_t)n);
        const int64_t R = 19, K = 7, M = 5, B = n + 2;
        for (int di = 0; di < 6; di++) {
            fc_dtype t = dts[di];
            const char *tn = fc_dtype_name(t);
            void *ad = rand_data(t, (size_t)(R * K), D_SIGNED);
            pair a = input_data(t, FC_SHAPE(R, K), ad), b = input(t, FC_SHAPE(K, M));
            fc_array *hab = fc_matmul(a.h, b.h);
            /* rows of a (from_shards), b replicated */
            fc_array *arows = from_host_split(sc, t, FC_SHAPE(R, K), ad, 0);
            cr_assert_eq(fc_array_status(arows), FC_OK, "%s", fc_array_errmsg(arows));
            free(ad);
            stats(sc, true);
            fc_array *m1 = fc_matmul(arows, b.s);
            compare(hab, m1, EXACT, "%d shards, %s: a split by rows (from_shards) @ b", n, tn);
            cr_expect_eq(layout(m1), 0, "rows of a give rows of the product");
            fc_shard_stats st = stats(sc, false);
            cr_expect_eq(st.allreduces + st.gathers, 0, "%d shards, %s: row-split matmul: %llu "
                         "collectives", n, tn, (unsigned long long)(st.allreduces + st.gathers));
            /* rows of a by reshard */
            compare(hab, fc_matmul(fc_reshard(a.s, 0), b.s), EXACT,
                    "%d shards, %s: reshard(a, 0) @ b", n, tn);
            /* columns of b, a replicated (a.s holds a split value by now: reshard it) */
            stats(sc, true);
            fc_array *m2 = fc_matmul(fc_reshard(a.s, FC_REPLICATED), fc_reshard(b.s, 1));
            compare(hab, m2, EXACT, "%d shards, %s: a (replicated) @ b split by columns", n, tn);
            cr_expect_eq(layout(m2), 1, "%d shards, %s: columns of b give columns of the product "
                         "(layout %d)", n, tn, layout(m2));
            st = stats(sc, false);
            cr_expect_eq(st.allreduces, 0, "column-split matmul: no all-reduce");
            /* columns of b, a free (from_host, not yet laid out): a is read replicated */
            pair af = input(t, FC_SHAPE(R, K));
            fc_array *m2f = fc_matmul(af.s, fc_reshard(b.s, 1));
            compare(fc_matmul(af.h, b.h), m2f, EXACT, "%d shards, %s: a (free) @ b split by columns",
                    n, tn);
            cr_expect_eq(layout(m2f), 1, "%d shards, %s: a free @ columns of b: layout %d", n, tn,
                         layout(m2f));
            /* the contracted axis split in both: partial products, all-reduced */
            fc_array *a1 = fc_reshard(a.s, 1), *b0 = fc_reshard(b.s, 0);
            cr_assert_eq(layout(a1), 1);
            cr_assert_eq(layout(b0), 0);
            stats(sc, true);
            fc_array *m3 = fc_matmul(a1, b0);
            tol tc = EXACT;
            if (fcg_is_inexact(t)) {
                tc.rtol = 4 * eps_of(t);
                tc.atol = (n + 2) * eps_of(t) * (double)K * 4 * (fcg_is_complex(t) ? 2 : 1);
            }
            compare(hab, m3, tc, "%d shards, %s: contracted axis split in both", n, tn);
            st = stats(sc, false);
            cr_expect_eq(st.allreduces, 1, "%d shards, %s: contracted split: %llu all-reduces", n,
                         tn, (unsigned long long)st.allreduces);
            /* batched: the batch axis split */
            pair a3 = input(t, FC_SHAPE(B, 4, K)), b3 = input(t, FC_SHAPE(B, K, M));
            fc_array *a3s = fc_reshard(a3.s, 0);
            stats(sc, true);
            fc_array *m4 = fc_matmul(a3s, b3.s);
            compare(fc_matmul(a3.h, b3.h), m4, EXACT, "%d shards, %s: batched, batch split", n, tn);
            cr_expect_eq(layout(m4), 0, "a batch split stays split");
            st = stats(sc, false);
            cr_expect_eq(st.allreduces, 0, "batched matmul: no all-reduce");
            compare(fc_matmul(a3.h, b.h), fc_matmul(a3s, b.s), EXACT,
                    "%d shards, %s: batched @ 2-D b (broadcast)", n, tn);
            /* batched with the contracted axis split in both */
            tol t3 = tc;
            compare(fc_matmul(a3.h, b3.h), fc_matmul(fc_reshard(a3.s, 2), fc_reshard(b3.s, 1)), t3,
                    "%d shards, %s: batched, contracted axis split", n, tn);
            /* batched rows split (axis 1), b a split batch */
            compare(fc_matmul(a3.h, b3.h), fc_matmul(fc_reshard(a3.s, 1), fc_reshard(b3.s, 0)), EXACT,
                    "%d shards, %s: batched, rows split, b batch split", n, tn);
            /* 2-D rows-split a @ batched b; batched a @ 2-D b split by columns */
            compare(fc_matmul(a.h, b3.h), fc_matmul(fc_reshard(a.s, 0), b3.s), EXACT,
                    "%d shards, %s: 2-D a (rows split) @ batched b", n, tn);
            compare(fc_matmul(a3.h, b.h), fc_matmul(a3.s, fc_reshard(b.s, 1)), EXACT,
                    "%d shards, %s: batched a @ 2-D b (columns split)", n, tn);
            /* a matrix-vector product (gathers) and a product whose inputs are expressions */
            pair vk = input(t, FC_SHAPE(K));
            compare(fc_matmul(a.h, vk.h), fc_matmul(a.s, vk.s), EXACT, "%d shards, %s: a @ v", n, tn);
            compare(fc_matmul(fc_add(a.h, a.h), fc_mul(b.h, b.h)),
                    fc_matmul(fc_add(a.s, a.s), fc_mul(b.s, b.s)), EXACT,
                    "%d shards, %s: (a + a) @ (b * b)", n, tn);
            /* a^T a: contracts the split rows */
            tol tt = EXACT;
            if (fcg_is_inexact(t)) {
                tt.rtol = 4 * eps_of(t);
                tt.atol = (n + 2) * eps_of(t) * (double)R * 4 * (fcg_is_complex(t) ? 2 : 1);
            }
            compare(fc_matmul(fc_transpose(a.h), a.h), fc_matmul(fc_transpose(a.s), a.s), tt,
                    "%d shards, %s: a.T @ a", n, tn);
        }
        fc_scope_close(s2);
        fc_scope_close(s1);
        fc_ctx_destroy(sc);
        sc = NULL;
    }
}

/* FFT along a non-split axis (local) and along the split axis (gathered). */
Test(shard_host, fft_along_each_axis) {
    static const fc_dtype dts[] = {FC_F32, FC_F64, FC_C64, FC_C128};
    for (int ci = 0; ci < NCOUNTS; ci++) {
        int n = shard_counts[ci];
        sc = make_sharded(n);
        fc_scope *s1 = fc_scope_open(hc), *s2 = fc_scope_open(sc);
        rng_seed(700 + (uint64_t)n);
        for (int di = 0; di < 4 * NVARIANTS; di++) {
            fc_dtype t = dts[di % 4];
            int var = variants[di / 4];
            pair x = input(t, FC_SHAPE(12, 8));
            x.s = as_layout(x.s, var);
            compare(fc_fft(x.h, 1), fc_fft(x.s, 1), EXACT, "%d shards, %s, %s: fft along axis 1", n,
                    fc_dtype_name(t), variant_name(var));
            compare(fc_fft(x.h, 0), fc_fft(x.s, 0), EXACT, "%d shards, %s, %s: fft along axis 0",
                    n, fc_dtype_name(t), variant_name(var));
            compare(fc_ifft(fc_mul(x.h, x.h), -1), fc_ifft(fc_mul(x.s, x.s), -1), EXACT,
                    "%d shards, %s: ifft(x * x) along -1", n, fc_dtype_name(t));
            compare(fc_abs(fc_fft(fc_fft(x.h, 0), 1)), fc_abs(fc_fft(fc_fft(x.s, 0), 1)), EXACT,
                    "%d shards, %s: |fft2|", n, fc_dtype_name(t));
        }
        fc_scope_close(s2);
        fc_scope_close(s1);
        fc_ctx_destroy(sc);
        sc = NULL;
    }
}

/* Creation ops made directly on the sharded context: the values of the whole array, whatever
 * the layout (each shard computes its range with the global indices). */
Test(shard_host, creation_ops_give_the_same_values) {
    for (int ci = 0; ci < NCOUNTS; ci++) {
        int n = shard_counts[ci];
        sc = make_sharded(n);
        fc_scope *s1 = fc_scope_open(hc), *s2 = fc_scope_open(sc);
        enum { NC = 32 };
        fc_array *h[NC], *s[NC];
        const char *names[NC];
        int k = 0;
        rng_seed(800 + (uint64_t)n);
        pair x = input(FC_F32, FC_SHAPE(23, 6));
        for (int side = 0; side < 2; side++) {
            fc_ctx *c = side ? sc : hc;
            fc_array *X = side ? x.s : x.h;
            fc_array **o = side ? s : h;
            k = 0;
#define C_(name, e) (names[k] = (name), o[k++] = (e))
            C_("arange f64 [0, 23)", fc_arange(c, FC_F64, 0, 23, 1));
            C_("arange i64 (-5, 40, 3)", fc_arange(c, FC_I64, -5, 40, 3));
            C_("arange f32 (0.5, 10, 0.25)", fc_arange(c, FC_F32, 0.5, 10, 0.25));
            C_("arange u8 (3)", fc_arange(c, FC_U8, 0, 3, 1));
            C_("linspace f64 (-1, 2, 29, endpoint)", fc_linspace(c, FC_F64, -1, 2, 29, true));
            C_("linspace f32 (0, 1, 17, no endpoint)", fc_linspace(c, FC_F32, 0, 1, 17, false));
            C_("random f32 [23, 6]", fc_random_uniform(c, FC_F32, FC_SHAPE(23, 6), 7));
            C_("random f64 [9, 4, 3]", fc_random_uniform(c, FC_F64, FC_SHAPE(9, 4, 3), 8));
            C_("random c64 [17]", fc_random_uniform(c, FC_C64, FC_SHAPE(17), 9));
            C_("random c128 [11, 2]", fc_random_uniform(c, FC_C128, FC_SHAPE(11, 2), 10));
            C_("random f16 [13, 5]", fc_random_uniform(c, FC_F16, FC_SHAPE(13, 5), 11));
            C_("random bf16 [13, 5]", fc_random_uniform(c, FC_BF16, FC_SHAPE(13, 5), 12));
            C_("random f64 [3, 40] (rows < shards)", fc_random_uniform(c, FC_F64, FC_SHAPE(3, 40), 13));
            C_("zeros i16 [10, 3]", fc_zeros(c, FC_I16, FC_SHAPE(10, 3)));
            C_("ones bool [9]", fc_ones(c, FC_BOOL, FC_SHAPE(9)));
            C_("full f64 3.25 [12, 2]", fc_full(c, FC_F64, FC_SHAPE(12, 2), 3.25));
            C_("full u32 7 [12]", fc_full(c, FC_U32, FC_SHAPE(12), 7));
            C_("full_complex c128 [10, 2]", fc_full_complex(c, FC_C128, FC_SHAPE(10, 2), 1.5, -2));
            C_("empty f32 [9, 9]", fc_empty(c, FC_F32, FC_SHAPE(9, 9)));
            C_("eye f64 (11, 9, 1)", fc_eye(c, FC_F64, 11, 9, 1));
            C_("eye i32 (9, 11, -2)", fc_eye(c, FC_I32, 9, 11, -2));
            C_("identity f32 10", fc_identity(c, FC_F32, 10));
            C_("zeros_like(x) + 1", fc_add(fc_zeros_like(X), fc_f64(c, 1)));
            C_("full_like(x, 2) * x", fc_mul(fc_full_like(X, 2), X));
            /* consumers that want another layout: the random array is made in it */
            C_("random + reshard(x, 1)", fc_add(fc_random_uniform(c, FC_F32, FC_SHAPE(23, 6), 14),
                                                side ? fc_reshard(X, 1) : X));
            C_("sum(random, axis 1)", fc_sum(fc_random_uniform(c, FC_F64, FC_SHAPE(23, 6), 15),
                                             FC_AXES(1), false));
            C_("random.T * 2", fc_mul(fc_transpose(fc_random_uniform(c, FC_F64, FC_SHAPE(23, 6), 16)),
                                      fc_f64(c, 2)));
            C_("arange[:, None] * arange[None, :]",
               fc_mul(fc_reshape(fc_arange(c, FC_I64, 0, 14, 1), FC_SHAPE(14, 1)),
                      fc_reshape(fc_arange(c, FC_I64, 1, 8, 1), FC_SHAPE(1, 7))));
            C_("x @ random (b replicated)", fc_matmul(X, fc_random_uniform(c, FC_F32, FC_SHAPE(6, 4), 17)));
            C_("x + arange(6) (a broadcast row)", fc_add(X, fc_arange(c, FC_F32, 0, 6, 1)));
#undef C_
        }
        for (int i = 0; i < k; i++) compare(h[i], s[i], EXACT, "%d shards: %s", n, names[i]);
        /* each shard's part of a split random array is that range of the whole */
        fc_array *rs = fc_random_uniform(sc, FC_F64, FC_SHAPE(23, 3), 99);
        fc_array *rh = fc_random_uniform(hc, FC_F64, FC_SHAPE(23, 3), 99);
        cr_assert_eq(layout(rs), 0);
        for (int r = 0; r < n; r++) {
            int64_t st = range_start(23, n, r), len = range_len(23, n, r);
            compare(fc_slice(rh, FC_S(st, st + len, 1), FC_COLON), fc_shard_part(rs, r), EXACT,
                    "%d shards: shard %d's part of a random array", n, r);
        }
        /* a consumer that wants axis 1: each part is that column range */
        fc_array *r1 = fc_add(fc_random_uniform(sc, FC_F64, FC_SHAPE(4, 16), 98),
                              fc_reshard(fc_zeros(sc, FC_F64, FC_SHAPE(4, 16)), 1));
        fc_array *r1h = fc_random_uniform(hc, FC_F64, FC_SHAPE(4, 16), 98);
        cr_assert_eq(layout(r1), 1);
        for (int r = 0; r < n; r++) {
            int64_t st = range_start(16, n, r), len = range_len(16, n, r);
            compare(fc_slice(r1h, FC_COLON, FC_S(st, st + len, 1)), fc_shard_part(r1, r), EXACT,
                    "%d shards: shard %d's columns of a random array", n, r);
        }
        fc_scope_close(s2);
        fc_scope_close(s1);
        fc_ctx_destroy(sc);
        sc = NULL;
    }
}

/* One elementwise + reduction program per dtype. */
static fc_array *dtype_program(fc_array *x, fc_array *y, int which) {
    fc_ctx *c = fc_array_ctx(x);
    fc_dtype t = fc_array_dtype(x);
    switch (which) {
    case 0: /* elementwise */
        if (t == FC_BOOL) return fc_logical_or(fc_logical_xor(x, y), fc_logical_not(x));
        if (fcg_is_complex(t)) return fc_add(fc_mul(x, y), fc_conj(x));
        if (fcg_is_inexact(t)) return fc_where(fc_greater(x, y), fc_mul(x, y), fc_add(x, fc_f64(c, 0.5)));
        return fc_sub(fc_add(fc_mul(x, fc_i64(c, 3)), fc_floordiv(x, y)), fc_mod(y, x));
    case 1: return fc_sum(x, FC_AXES(0), false);
    case 2: return fc_sum(fc_mul(x, y), FC_AXES(1), false);
    case 3: return fc_prod(x, FC_AXES(0), true);
    case 4: return fc_max(x, FC_AXES(0), false);
    case 5: return fc_min(x, FC_AXES(1), false);
    case 6: return fc_any(x, FC_AXES(0), false);
    case 7: return fc_all(x, FC_AXES(0), false);
    case 8: return fc_mean(x, FC_AXES(0), false);
    case 9: return fc_var(x, FC_AXES(0), false, 1);
    case 10: return fc_std(x, FC_ALL, false, 0);
    case 11: return fc_argmax(x, 0, false);
    case 12: return fc_argmin(x, 1, false);
    case 13: return fc_count_nonzero(fc_sub(x, y), FC_AXES(0), false);
    case 14: return fc_norm(x, FC_AXES(0), false, FC_NORM_L2);
    case 15: return fc_max(fc_where(fc_greater(y, x), x, y), FC_ALL, false);
    default: return NULL;
    }
}
static const rop dtype_program_rop[] = {R_NOPS, R_SUM, R_SUM, R_PROD, R_MAX, R_MIN, R_ANY, R_ALL,
                                        R_MEAN, R_VAR1, R_STD0, R_ARGMAX, R_ARGMIN, R_COUNT,
                                        R_NORM2, R_MAX};

Test(shard_host, every_dtype) {
    const int counts[] = {3, 4};
    for (int ci = 0; ci < 2; ci++) {
        int n = counts[ci];
        sc = make_sharded(n);
        for (int ti = 0; ti < FC_DTYPE_COUNT; ti++) {
            fc_dtype t = (fc_dtype)ti;
            fc_scope *s1 = fc_scope_open(hc), *s2 = fc_scope_open(sc);
            rng_seed(900 + (uint64_t)(n * 100 + ti));
            const int64_t R = 11, C = 5;
            pair x = input(t, FC_SHAPE(R, C)), y = input(t, FC_SHAPE(R, C));
            for (int w = 0; w < 32; w++) {
                if (w == 16) { /* again, x split along 0 and y along 1: gathers of every dtype */
                    x.s = as_layout(x.s, 0);
                    y.s = as_layout(y.s, 1);
                }
                int wv = w % 16;
                fc_array *h = dtype_program(x.h, y.h, wv), *s = dtype_program(x.s, y.s, wv);
                tol tl = EXACT;
                if (wv > 0) {
                    double count = wv == 2 || wv == 5 || wv == 12 ? C : wv == 10 ? R * C : wv == 15 ? 1 : R;
                    double B = wv == 2 ? (fcg_is_inexact(t) ? 4 * (fcg_is_complex(t) ? 2 : 1) : 81)
                                       : (fcg_is_inexact(t) ? 2 * (fcg_is_complex(t) ? 1.5 : 1) : 9);
                    fc_dtype res = fc_array_status(h) == FC_OK ? fc_array_dtype(h) : t;
                    tl = reduce_tol(dtype_program_rop[wv], t, res, count, B);
                }
                compare(h, s, tl, "%d shards, %s, %s: program %d (%s)", n, fc_dtype_name(t),
                        w < 16 ? "free inputs" : "x split(0), y split(1)", wv,
                        wv ? rop_names[dtype_program_rop[wv]] : "elementwise");
            }
            fc_scope_close(s2);
            fc_scope_close(s1);
        }
        fc_ctx_destroy(sc);
        sc = NULL;
    }
}

/* Extents smaller than the shard count (empty shards), zero-size arrays, size-1 axes, 0-d
 * scalars, 1-D vectors. */
Test(shard_host, small_empty_and_degenerate_shapes) {
    const fc_axes axs[] = {FC_AXES(0), FC_AXES(1), FC_ALL};
    for (int ci = 0; ci < NCOUNTS; ci++) {
        int n = shard_counts[ci];
        sc = make_sharded(n);
        fc_scope *s1 = fc_scope_open(hc), *s2 = fc_scope_open(sc);
        rng_seed(1000 + (uint64_t)n);
        /* 3 rows: replicated by default; split by reshard, some shards empty when n > 3 */
        pair x = input(FC_F64, FC_SHAPE(3, 5));
        compare(fc_mul(x.h, x.h), fc_mul(x.s, x.s), EXACT, "%d shards: [3, 5] x * x", n);
        if (n > 3) cr_expect_eq(layout(x.s), FC_REPLICATED, "%d shards: [3, 5] is replicated", n);
        pair xs = x;
        xs.s = fc_reshard(x.s, 0);
        cr_assert_eq(layout(xs.s), 0, "%d shards: [3, 5] resharded along 0", n);
        for (int r = 0; r < n; r++) {
            fc_array *p = fc_shard_part(xs.s, r);
            cr_assert_eq(fc_array_status(p), FC_OK, "%s", fc_array_errmsg(p));
            cr_expect_eq(fc_array_shape(p).dim[0], range_len(3, n, r), "%d shards: part %d rows", n, r);
        }
        compare(fc_exp(x.h), fc_exp(xs.s), EXACT, "%d shards: exp of [3, 5] split (empty shards)", n);
        check_reductions(xs, axs, 3, 2.0, "[3, 5] split(0), shards may be empty");
        compare(softmax(x.h, 0), softmax(xs.s, 0),
                (tol){4 * eps_of(FC_F64) + 2 * 9 * acc_eps(FC_F64), 0, T_PLAIN},
                "%d shards: softmax over 3 split rows", n);
        for (int ddof = 2; ddof <= 4; ddof++) /* dof 1, 0 and -1 */
            compare(fc_var(x.h, FC_AXES(0), false, ddof), fc_var(xs.s, FC_AXES(0), false, ddof),
                    reduce_tol(R_VAR0, FC_F64, FC_F64, 3, 2.0), "%d shards: var ddof %d of 3 rows",
                    n, ddof);
        pair b = input(FC_F64, FC_SHAPE(5, 2));
        compare(fc_matmul(x.h, b.h), fc_matmul(xs.s, b.s), EXACT, "%d shards: [3, 5] split @ [5, 2]", n);
        /* zero-size arrays */
        pair z0 = input(FC_F64, FC_SHAPE(0, 5)), z1 = input(FC_F32, FC_SHAPE(5, 0));
        compare(fc_add(z0.h, fc_f64(hc, 1)), fc_add(z0.s, fc_f64(sc, 1)), EXACT, "%d shards: [0, 5] + 1", n);
        compare(fc_add(z1.h, fc_f64(hc, 1)), fc_add(z1.s, fc_f64(sc, 1)), EXACT, "%d shards: [5, 0] + 1", n);
        for (int w = 0; w < 2; w++) {
            pair z = w ? z1 : z0;
            for (int a = 0; a < 3; a++)
                for (int op = 0; op < R_NOPS; op++) {
                    fc_array *h = reduce_op((rop)op, z.h, axs[a], false);
                    if (!h) continue;
                    char ab[64];
                    compare(h, reduce_op((rop)op, z.s, axs[a], false), EXACT,
                            "%d shards: %s of %s over %s", n, rop_names[op], w ? "[5, 0]" : "[0, 5]",
                            axes_str(axs[a], ab));
                }
            compare(fc_transpose(z.h), fc_transpose(z.s), EXACT, "%d shards: zero-size transpose", n);
            compare(z.h, fc_reshard(z.s, 0), EXACT, "%d shards: zero-size reshard(0)", n);
            compare(z.h, fc_reshard(z.s, 1), EXACT, "%d shards: zero-size reshard(1)", n);
        }
        compare(fc_concatenate(hc, (fc_array *[]){z0.h, x.h}, 2, 0),
                fc_concatenate(sc, (fc_array *[]){z0.s, x.s}, 2, 0), EXACT,
                "%d shards: concatenate [0, 5] and [3, 5]", n);
        fc_array *z0r = fc_reshard(z0.s, 1);
        cr_expect_eq(fc_array_status(z0r), FC_OK, "%d shards: [0, 5] resharded along 1: %s", n,
                     fc_array_errmsg(z0r));
        compare(fc_sum(z0.h, FC_AXES(1), false), fc_sum(z0r, FC_AXES(1), false), EXACT,
                "%d shards: sum of [0, 5] split(1) over 1", n);
        /* size-1 axes */
        pair r1 = input(FC_F64, FC_SHAPE(1, 7)), c1 = input(FC_F64, FC_SHAPE(13, 1));
        check_reductions(r1, axs, 3, 2.0, "[1, 7]");
        check_reductions(c1, axs, 3, 2.0, "[13, 1]");
        compare(fc_squeeze(c1.h, FC_ALL), fc_squeeze(c1.s, FC_ALL), EXACT, "%d shards: squeeze [13, 1]", n);
        compare(fc_mul(r1.h, c1.h), fc_mul(r1.s, c1.s), EXACT, "%d shards: [1, 7] * [13, 1]", n);
        /* 0-d scalars */
        double v = 1.75;
        pair s0 = input_data(FC_F64, FC_SCALAR, &v);
        compare(fc_add(fc_mul(s0.h, fc_f64(hc, 2)), fc_f64(hc, 1)),
                fc_add(fc_mul(s0.s, fc_f64(sc, 2)), fc_f64(sc, 1)), EXACT, "%d shards: 0-d * 2 + 1", n);
        compare(fc_sum(s0.h, FC_ALL, false), fc_sum(s0.s, FC_ALL, false), EXACT, "%d shards: 0-d sum", n);
        compare(fc_mul(s0.h, c1.h), fc_mul(s0.s, c1.s), EXACT, "%d shards: 0-d * [13, 1]", n);
        compare(fc_sum(fc_mul(c1.h, c1.h), FC_ALL, false), fc_sum(fc_mul(c1.s, c1.s), FC_ALL, false),
                tol_sum(FC_F64, FC_F64, 13, 4), "%d shards: sum of squares, 0-d result", n);
        cr_expect_eq(layout(s0.s), FC_REPLICATED, "a 0-d array is replicated");
        fc_array *bad = fc_reshard(s0.s, 0);
        cr_expect_eq(fc_array_status(bad), FC_ERR_AXIS, "reshard of a 0-d array along 0");
        /* weak scalars of the sharded context */
        fc_array *w = fc_f64(sc, 2.5);
        double wv = 0;
        cr_expect_eq(fc_read(w, &wv, 0, 1), FC_OK, "%s", fc_errmsg(sc));
        cr_expect_eq(wv, 2.5);
        cr_expect_eq(layout(w), FC_REPLICATED, "a weak scalar is replicated");
        compare(fc_where(fc_greater(c1.h, fc_f64(hc, 0)), fc_f64(hc, 1.5), fc_i64(hc, -3)),
                fc_where(fc_greater(c1.s, fc_f64(sc, 0)), fc_f64(sc, 1.5), fc_i64(sc, -3)), EXACT,
                "%d shards: where with weak scalar branches", n);
        /* 8 dimensions, split along the last */
        pair x8 = input(FC_F32, FC_SHAPE(2, 1, 3, 1, 2, 1, 2, 9));
        pair x8s = x8;
        x8s.s = fc_reshard(x8.s, 7);
        cr_expect_eq(layout(x8s.s), 7);
        /* reductions over the split axis: see the 8-D regression at the end */
        compare(fc_sum(x8.h, FC_AXES(2), false), fc_sum(x8s.s, FC_AXES(2), false),
                tol_sum(FC_F32, FC_F32, 3, 2), "%d shards: 8-D split(7): sum over 2", n);
        compare(fc_transpose(x8.h), fc_transpose(x8s.s), EXACT, "%d shards: 8-D transpose", n);
        compare(fc_reshape(x8.h, FC_SHAPE(12, 18)), fc_reshape(x8s.s, FC_SHAPE(12, 18)), EXACT,
                "%d shards: 8-D reshaped to [12, 18]", n);
        compare(fc_exp(x8.h), fc_exp(fc_reshard(x8.s, 2)), EXACT, "%d shards: 8-D split(2)", n);
        /* 1-D vectors */
        pair v1 = input(FC_F64, FC_SHAPE(17));
        check_reductions(v1, (const fc_axes[]){FC_AXES(0), FC_ALL}, 2, 2.0, "1-D [17]");
        compare(fc_mul(v1.h, v1.h), fc_mul(v1.s, v1.s), EXACT, "%d shards: v * v", n);
        compare(fc_slice(v1.h, FC_S(3, 9, 1)), fc_slice(v1.s, FC_S(3, 9, 1)), EXACT, "%d shards: v[3:9]", n);
        compare(fc_matmul(v1.h, v1.h), fc_matmul(v1.s, v1.s), EXACT, "%d shards: v @ v", n);
        compare(fc_reshape(v1.h, FC_SHAPE(17, 1)), fc_reshape(v1.s, FC_SHAPE(17, 1)), EXACT,
                "%d shards: v reshaped [17, 1]", n);
        fc_scope_close(s2);
        fc_scope_close(s1);
        fc_ctx_destroy(sc);
        sc = NULL;
    }
}

/* Values evaluated once are reused in later programs in their layouts; several outputs of
 * different layouts evaluate together; a program evaluated again with new data. */
Test(shard_host, evaluated_values_feed_later_programs) {
    sc = make_sharded(3);
    fc_scope *s1 = fc_scope_open(hc), *s2 = fc_scope_open(sc);
    rng_seed(1100);
    pair x = input(FC_F64, FC_SHAPE(14, 9));
    fc_array *yh = fc_exp(fc_mul(x.h, fc_f64(hc, 0.5))), *ys = fc_exp(fc_mul(x.s, fc_f64(sc, 0.5)));
    cr_assert_eq(fc_eval(sc, &ys, 1), FC_OK, "%s", fc_errmsg(sc));
    cr_assert_eq(layout(ys), 0);
    /* y (split 0) feeds a transpose, a split-axis reduction, a column split product */
    fc_array *hs[4] = {fc_add(fc_transpose(yh), fc_f64(hc, 1)), fc_sum(yh, FC_AXES(0), false),
                       fc_matmul(fc_transpose(yh), yh), fc_add(yh, fc_transpose(fc_transpose(yh)))};
    fc_array *ss[4] = {fc_add(fc_transpose(ys), fc_f64(sc, 1)), fc_sum(ys, FC_AXES(0), false),
                       fc_matmul(fc_transpose(ys), fc_reshard(ys, 1)),
                       fc_add(ys, fc_transpose(fc_transpose(ys)))};
    cr_assert_eq(fc_eval(sc, ss, 4), FC_OK, "%s", fc_errmsg(sc));
    compare(hs[0], ss[0], EXACT, "y.T + 1");
    compare(hs[1], ss[1], tol_sum(FC_F64, FC_F64, 14, exp(1)), "sum(y, 0)");
    compare(hs[2], ss[2], (tol){4 * 0x1p-53, 5 * 0x1p-53 * 14 * exp(2), T_PLAIN}, "y.T @ y");
    compare(hs[3], ss[3], EXACT, "y + y.T.T");
    /* a value and what is computed from it, evaluated together */
    pair w = input(FC_F64, FC_SHAPE(14, 9));
    fc_array *wh = fc_sin(w.h), *ws = fc_sin(w.s);
    fc_array *outs_h[3] = {wh, fc_sum(wh, FC_AXES(0), false), fc_transpose(wh)};
    fc_array *outs_s[3] = {ws, fc_sum(ws, FC_AXES(0), false), fc_transpose(ws)};
    cr_assert_eq(fc_eval(sc, outs_s, 3), FC_OK, "%s", fc_errmsg(sc));
    compare(outs_h[0], outs_s[0], EXACT, "sin(w), evaluated with its consumers");
    compare(outs_h[1], outs_s[1], tol_sum(FC_F64, FC_F64, 14, 1), "sum(sin(w), 0), together");
    compare(outs_h[2], outs_s[2], EXACT, "sin(w).T, together");
    /* the same program again on new data: same values as the reference */
    for (int it = 0; it < 3; it++) {
        pair z = input(FC_F64, FC_SHAPE(14, 9));
        compare(softmax(z.h, 0), softmax(z.s, 0),
                (tol){4 * 0x1p-53 + 2 * 14 * 14 * 0x1p-53, 0, T_PLAIN}, "softmax, run %d", it);
    }
    fc_scope_close(s2);
    fc_scope_close(s1);
}

/* Evaluations of more than 64 outputs, and ops with 64 inputs: as on one device. */
Test(shard_host, many_outputs_and_64_inputs) {
    sc = make_sharded(3);
    fc_scope *s1 = fc_scope_open(hc), *s2 = fc_scope_open(sc);
    rng_seed(1150);
    enum { M = 70 };
    pair x = input(FC_F64, FC_SHAPE(12, 3));
    fc_array *hs[M], *ss[M];
    /* 64 inputs (more: the regression at the end) */
    for (int v = 0; v < NVARIANTS; v++) {
        fc_array *X = as_layout(x.s, variants[v]);
        for (int i = 0; i < 64; i++) hs[i] = x.h, ss[i] = X;
        compare(fc_concatenate(hc, hs, 64, 1), fc_concatenate(sc, ss, 64, 1), EXACT,
                "concatenate of 64 arrays along axis 1, %s", variant_name(variants[v]));
        compare(fc_concatenate(hc, hs, 64, 0), fc_concatenate(sc, ss, 64, 0), EXACT,
                "concatenate of 64 arrays along axis 0, %s", variant_name(variants[v]));
    }
    for (int i = 0; i < M; i++) {
        hs[i] = fc_mul(x.h, fc_f64(hc, i));
        ss[i] = fc_mul(x.s, fc_f64(sc, i));
    }
    cr_assert_eq(fc_eval(sc, ss, M), FC_OK, "an evaluation of %d outputs: %s", M, fc_errmsg(sc));
    for (int i = 0; i < M; i++) compare(hs[i], ss[i], EXACT, "output %d of %d", i, M);
    fc_scope_close(s2);
    fc_scope_close(s1);
}

/* Collectives counted between reads of the statistics: their timings are kept, and bounded. */
Test(shard_host, many_collectives_between_stats_reads) {
    sc = make_sharded(2);
    rng_seed(1160);
    void *d = rand_data(FC_F64, 8 * 2, D_SIGNED);
    fc_array *x = fc_from_host(sc, FC_F64, FC_SHAPE(8, 2), d);
    fc_array *xh = fc_from_host(hc, FC_F64, FC_SHAPE(8, 2), d);
    free(d);
    cr_assert_eq(layout(x), 0);
    stats(sc, true);
    size_t warm = 0;
    for (int i = 0; i < 600; i++) {
        fc_scope *s = fc_scope_open(sc);
        fc_array *y = fc_sum(fc_mul(x, fc_f64(sc, (double)i)), FC_AXES(0), false);
        cr_assert_eq(fc_eval(sc, &y, 1), FC_OK, "step %d: %s", i, fc_errmsg(sc));
        fc_scope_close(s);
        if (i == 299) {
            fc_memory_stats m;
            cr_assert_eq(fc_memory_stats_get(sc, &m), FC_OK);
            warm = m.host_in_use;
        }
    }
    fc_memory_stats m;
    cr_assert_eq(fc_memory_stats_get(sc, &m), FC_OK);
    cr_expect_leq(m.host_in_use, warm, "host memory after 600 collectives %zu, after 300 %zu",
                  m.host_in_use, warm);
    fc_shard_stats st = stats(sc, true);
    cr_expect_eq(st.allreduces, 600, "600 all-reduces counted: %llu", (unsigned long long)st.allreduces);
    cr_expect(st.ms >= 0);
    fc_scope *s = fc_scope_open(sc);
    fc_scope *sh = fc_scope_open(hc);
    compare(fc_sum(xh, FC_AXES(0), false), fc_sum(x, FC_AXES(0), false), tol_sum(FC_F64, FC_F64, 8, 2),
            "sum after 600 collectives");
    fc_scope_close(sh);
    fc_scope_close(s);
}

/* ---- part 2: the API -------------------------------------------------------------------------- */

TestSuite(shard_api, .init = setup, .fini = teardown);

Test(shard_api, ctx_shards_and_shard) {
    sc = make_sharded(3);
    cr_expect_eq(fc_ctx_shards(sc), 3);
    cr_expect_eq(fc_ctx_shards(hc), 1);
    cr_expect_eq(fc_ctx_shards(NULL), 0);
    cr_expect_eq(fc_ctx_backend(sc), FC_BACKEND_HOST);
    cr_expect_eq(fc_ctx_device(sc), -1);
    for (int i = 0; i < 3; i++) {
        fc_ctx *c = fc_ctx_shard(sc, i);
        cr_assert_not_null(c, "shard %d", i);
        cr_expect_neq(c, sc);
        cr_expect_eq(fc_ctx_shards(c), 1, "a shard's context is an ordinary one");
        cr_expect_eq(fc_ctx_backend(c), FC_BACKEND_HOST);
        cr_expect_null(fc_ctx_shard(c, 0));
        for (int j = 0; j < i; j++) cr_expect_neq(c, fc_ctx_shard(sc, j), "shards %d and %d", i, j);
    }
    cr_expect_null(fc_ctx_shard(sc, -1));
    cr_expect_null(fc_ctx_shard(sc, 3));
    cr_expect_null(fc_ctx_shard(sc, 1000));
    cr_expect_null(fc_ctx_shard(hc, 0));
    cr_expect_null(fc_ctx_shard(NULL, 0));
    /* arrays of a shard and of the sharded context never mix */
    fc_scope *s = fc_scope_open(sc);
    fc_array *a = fc_ones(sc, FC_F32, FC_SHAPE(6));
    fc_array *b = fc_ones(fc_ctx_shard(sc, 0), FC_F32, FC_SHAPE(6));
    fc_array *c = fc_ones(hc, FC_F32, FC_SHAPE(6));
    fc_array *ab = fc_add(a, b);
    cr_expect_eq(fc_array_status(ab), FC_ERR_CONTEXT, "sharded + shard array: %s",
                 fc_strerror(fc_array_status(ab)));
    fc_array *ac = fc_add(a, c);
    cr_expect_eq(fc_array_status(ac), FC_ERR_CONTEXT, "sharded + plain array");
    fc_release(b);
    fc_release(c);
    fc_scope_close(s);
}

Test(shard_api, sharding_tells_layouts) {
    sc = make_sharded(4);
    fc_scope *s = fc_scope_open(sc);
    rng_seed(1200);
    void *d = rand_data(FC_F32, 20 * 5, D_SIGNED);
    fc_array *x = fc_from_host(sc, FC_F32, FC_SHAPE(20, 5), d);
    free(d);
    cr_expect_eq(layout(fc_sin(x)), 0, "elementwise of a [20, 5] from_host input: split(0)");
    cr_expect_eq(layout(fc_mean(x, FC_AXES(0), false)), FC_REPLICATED, "column mean: replicated");
    cr_expect_eq(layout(fc_mean(x, FC_AXES(0), true)), FC_REPLICATED, "column mean (keepdims)");
    cr_expect_eq(layout(fc_sum(x, FC_AXES(1), false)), 0, "row sums stay split");
    /* an unevaluated chain of a free input has no layout of its own: the transposed result
     * [5, 20] takes the default (split along its axis 0); the transpose of an evaluated split
     * array is split along axis 1 */
    cr_expect_eq(layout(fc_transpose(fc_exp(x))), 0, "a transposed free chain: default layout");
    fc_array *ex = fc_exp(x);
    cr_assert_eq(layout(ex), 0);
    cr_expect_eq(layout(fc_transpose(ex)), 1, "a transposed split array: split(1)");
    cr_expect_eq(layout(x), 0, "the from_host input itself: split(0)");
    fc_array *small = fc_ones(sc, FC_F64, FC_SHAPE(3, 5));
    cr_expect_eq(layout(small), FC_REPLICATED, "[3, 5] over 4 shards: replicated");
    cr_expect_eq(layout(fc_add(small, small)), FC_REPLICATED, "[3, 5] + [3, 5]: replicated");
    cr_expect_eq(layout(fc_ones(sc, FC_F64, FC_SHAPE(4, 5))), 0, "[4, 5] over 4 shards: split");
    cr_expect_eq(layout(fc_slice(fc_exp(x), FC_S(1, 5, 1), FC_COLON)), FC_REPLICATED,
                 "a slice along the split axis gathers");
    fc_array *p = fc_ones(hc, FC_F32, FC_SHAPE(20, 5));
    int ax = 5;
    cr_expect_eq(fc_sharding(p, &ax), FC_OK);
    cr_expect_eq(ax, FC_REPLICATED, "an ordinary context's array: replicated");
    fc_release(p);
    cr_expect_eq(fc_sharding(NULL, &ax), FC_ERR_NULL);
    cr_expect_eq(fc_sharding(x, NULL), FC_ERR_NULL);
    fc_array *bad = fc_add(x, fc_ones(sc, FC_F32, FC_SHAPE(3)));
    cr_expect_eq(fc_sharding(bad, &ax), FC_ERR_SHAPE, "a poisoned array's status");
    fc_scope_close(s);
}

Test(shard_api, reshard_every_axis) {
    sc = make_sharded(3);
    fc_scope *s1 = fc_scope_open(hc), *s2 = fc_scope_open(sc);
    rng_seed(1300);
    pair x = input(FC_I64, FC_SHAPE(7, 4, 5));
    fc_array *xe = fc_add(x.s, fc_i64(sc, 1)), *he = fc_add(x.h, fc_i64(hc, 1));
    cr_assert_eq(layout(xe), 0);
    /* FC_REPLICATED is -1, so negative axes do not count from the end (see bad_axes below) */
    const int axes[] = {0, 1, 2, FC_REPLICATED};
    const int want[] = {0, 1, 2, FC_REPLICATED};
    for (int i = 0; i < 4; i++) {
        fc_array *r = fc_reshard(xe, axes[i]);
        cr_assert_eq(fc_array_status(r), FC_OK, "reshard %d: %s", axes[i], fc_array_errmsg(r));
        cr_expect_eq(layout(r), want[i], "reshard(%d): layout %d", axes[i], layout(r));
        compare(he, r, EXACT, "reshard(%d)", axes[i]);
        /* and back, and through another axis */
        fc_array *r2 = fc_reshard(fc_reshard(r, (want[i] + 2) % 3), FC_REPLICATED);
        compare(he, r2, EXACT, "reshard(%d) then twice more", axes[i]);
        /* a computation on it */
        compare(fc_sum(fc_mul(he, he), FC_AXES(1), false), fc_sum(fc_mul(r, r), FC_AXES(1), false),
                EXACT, "sum(r * r, 1) after reshard(%d)", axes[i]);
    }
    /* the same layout: the same array (a new reference), the same values */
    fc_array *same = fc_reshard(xe, 0);
    cr_expect_eq(same, xe, "reshard to its own layout returns the array itself");
    compare(he, same, EXACT, "reshard to the same layout");
    /* errors */
    fc_array *bad = fc_reshard(xe, 3);
    cr_expect_eq(fc_array_status(bad), FC_ERR_AXIS, "reshard axis 3 of 3-D");
    cr_expect(strlen(fc_array_errmsg(bad)) > 0);
    bad = fc_reshard(xe, -5);
    cr_expect_eq(fc_array_status(bad), FC_ERR_AXIS, "reshard axis -5 of 3-D");
    /* -4 and the other negatives: the regression at the end */
    bad = fc_reshard(x.h, 0);
    cr_expect_eq(fc_array_status(bad), FC_ERR_CONTEXT, "reshard of an ordinary context's array");
    fc_array *poisoned = fc_add(xe, fc_ones(sc, FC_I64, FC_SHAPE(2)));
    bad = fc_reshard(poisoned, 0);
    cr_expect_eq(fc_array_status(bad), FC_ERR_SHAPE, "reshard of a poisoned array");
    cr_expect_null(fc_reshard(NULL, 0));
    /* a reshard of a from_host array not yet evaluated */
    compare(x.h, fc_reshard(x.s, 2), EXACT, "reshard of a from_host array");
    fc_scope_close(s2);
    fc_scope_close(s1);
}

Test(shard_api, from_shards_layouts_and_errors) {
    const int counts[] = {2, 4, 5};
    for (int ci = 0; ci < 3; ci++) {
        int n = counts[ci];
        sc = make_sharded(n);
        fc_scope *s1 = fc_scope_open(hc), *s2 = fc_scope_open(sc);
        rng_seed(1400 + (uint64_t)n);
        const int64_t R = 9, C = 7;
        float *d = rand_data(FC_F32, (size_t)(R * C), D_SIGNED);
        fc_array *xh = fc_from_host(hc, FC_F32, FC_SHAPE(R, C), d);
        for (int axis = 0; axis < 2; axis++) {
            fc_array *a = from_host_split(sc, FC_F32, FC_SHAPE(R, C), d, axis);
            cr_assert_eq(fc_array_status(a), FC_OK, "%s", fc_array_errmsg(a));
            cr_expect_eq(layout(a), axis, "from_shards along %d", axis);
            compare(xh, a, EXACT, "%d shards: from_shards along %d", n, axis);
            compare(fc_sum(xh, FC_AXES(0), false), fc_sum(a, FC_AXES(0), false),
                    tol_sum(FC_F32, FC_F32, R, 2), "%d shards: sum over 0 of from_shards(%d)", n, axis);
            compare(fc_max(xh, FC_AXES(1), false), fc_max(a, FC_AXES(1), false), EXACT,
                    "%d shards: max over 1 of from_shards(%d)", n, axis);
            compare(fc_exp(xh), fc_exp(a), EXACT, "%d shards: exp of from_shards(%d)", n, axis);
        }
        /* a negative axis other than FC_REPLICATED is not an axis here */
        {
            fc_array *q[8];
            for (int r = 0; r < n; r++) {
                int64_t st = range_start(R, n, r), len = range_len(R, n, r);
                q[r] = fc_from_host(fc_ctx_shard(sc, r), FC_F32, FC_SHAPE(len, C), d + st * C);
            }
            fc_array *neg = fc_from_shards(sc, q, -2);
            cr_expect_eq(fc_array_status(neg), FC_ERR_AXIS, "from_shards(-2): %s",
                         fc_array_errmsg(neg));
        }
        /* replicated: every part holds the whole */
        fc_array *parts[8], *rparts[8];
        for (int r = 0; r < n; r++)
            rparts[r] = fc_from_host(fc_ctx_shard(sc, r), FC_F32, FC_SHAPE(R, C), d);
        fc_array *rep = fc_from_shards(sc, rparts, FC_REPLICATED);
        cr_assert_eq(fc_array_status(rep), FC_OK, "%s", fc_array_errmsg(rep));
        cr_expect_eq(layout(rep), FC_REPLICATED);
        compare(xh, rep, EXACT, "%d shards: from_shards replicated", n);
        compare(fc_sum(xh, FC_AXES(0), false), fc_sum(rep, FC_AXES(0), false), EXACT,
                "%d shards: sum over 0 of a replicated array (local)", n);
        /* parts that are lazy expressions of the shards (evaluated by from_shards) */
        {
            fc_array *q[8];
            for (int r = 0; r < n; r++) {
                int64_t st = range_start(R, n, r), len = range_len(R, n, r);
                fc_ctx *cr_ = fc_ctx_shard(sc, r);
                q[r] = fc_sin(fc_from_host(cr_, FC_F32, FC_SHAPE(len, C), d + st * C));
            }
            fc_array *lazy = fc_from_shards(sc, q, 0);
            cr_assert_eq(fc_array_status(lazy), FC_OK, "%s", fc_array_errmsg(lazy));
            compare(fc_sin(xh), lazy, EXACT, "%d shards: from_shards of lazy parts", n);
        }
        /* errors: a part of the wrong context */
        for (int r = 0; r < n; r++) {
            int64_t len = range_len(R, n, r);
            parts[r] = fc_zeros(fc_ctx_shard(sc, r), FC_F32, FC_SHAPE(len, C));
        }
        fc_array *swap = parts[0];
        parts[0] = fc_zeros(fc_ctx_shard(sc, 1), FC_F32, FC_SHAPE(range_len(R, n, 0), C));
        fc_array *e = fc_from_shards(sc, parts, 0);
        cr_expect_eq(fc_array_status(e), FC_ERR_CONTEXT, "part 0 of shard 1's context: %s",
                     fc_strerror(fc_array_status(e)));
        cr_expect(strlen(fc_array_errmsg(e)) > 0);
        parts[0] = fc_zeros(hc, FC_F32, FC_SHAPE(range_len(R, n, 0), C));
        e = fc_from_shards(sc, parts, 0);
        cr_expect_eq(fc_array_status(e), FC_ERR_CONTEXT, "part 0 of an ordinary context");
        parts[0] = swap;
        cr_expect_eq(fc_array_status(fc_from_shards(sc, parts, 0)), FC_OK, "the right parts");
        /* wrong extents: along the axis, and across it */
        fc_array *keep = parts[n - 1];
        parts[n - 1] = fc_zeros(fc_ctx_shard(sc, n - 1), FC_F32,
                                FC_SHAPE(range_len(R, n, n - 1) + 2, C));
        e = fc_from_shards(sc, parts, 0);
        cr_expect_eq(fc_array_status(e), FC_ERR_SHAPE, "the last part too long: %s",
                     fc_strerror(fc_array_status(e)));
        parts[n - 1] = fc_zeros(fc_ctx_shard(sc, n - 1), FC_F32, FC_SHAPE(range_len(R, n, n - 1), C + 1));
        e = fc_from_shards(sc, parts, 0);
        cr_expect_eq(fc_array_status(e), FC_ERR_SHAPE, "the last part has another width");
        parts[n - 1] = fc_zeros(fc_ctx_shard(sc, n - 1), FC_F32, FC_SHAPE(C));
        e = fc_from_shards(sc, parts, 0);
        cr_expect_eq(fc_array_status(e), FC_ERR_SHAPE, "the last part has another rank");
        /* parts 0 and 1 of unequal lengths that sum to a valid extent but are not its ranges */
        if (n >= 2) {
            fc_array *q[8];
            for (int r = 0; r < n; r++) q[r] = fc_zeros(fc_ctx_shard(sc, r), FC_F32, FC_SHAPE(r == 0 ? 0 : 3, C));
            e = fc_from_shards(sc, q, 0);
            cr_expect_eq(fc_array_status(e), FC_ERR_SHAPE, "parts [0, 3, 3, ...]: not the ranges");
        }
        /* dtype mismatch */
        parts[n - 1] = fc_zeros(fc_ctx_shard(sc, n - 1), FC_F64, FC_SHAPE(range_len(R, n, n - 1), C));
        e = fc_from_shards(sc, parts, 0);
        cr_expect_eq(fc_array_status(e), FC_ERR_DTYPE, "the last part f64: %s",
                     fc_strerror(fc_array_status(e)));
        /* NULL part, NULL parts, a bad axis, an ordinary context */
        parts[n - 1] = NULL;
        e = fc_from_shards(sc, parts, 0);
        cr_expect_eq(fc_array_status(e), FC_ERR_NULL, "a NULL part");
        parts[n - 1] = keep;
        e = fc_from_shards(sc, NULL, 0);
        cr_expect_eq(fc_array_status(e), FC_ERR_NULL, "NULL parts");
        e = fc_from_shards(sc, parts, 2);
        cr_expect_eq(fc_array_status(e), FC_ERR_AXIS, "axis 2 of 2-D parts");
        e = fc_from_shards(sc, parts, -4);
        cr_expect_eq(fc_array_status(e), FC_ERR_AXIS, "axis -4 of 2-D parts");
        /* -3 and the other negatives: the regression at the end */
        e = fc_from_shards(hc, parts, 0);
        cr_expect_eq(fc_array_status(e), FC_ERR_CONTEXT, "from_shards on an ordinary context");
        cr_expect_null(fc_from_shards(NULL, parts, 0));
        /* a poisoned part */
        parts[0] = fc_add(parts[0], fc_zeros(fc_ctx_shard(sc, 0), FC_F32, FC_SHAPE(3)));
        e = fc_from_shards(sc, parts, 0);
        cr_expect_neq(fc_array_status(e), FC_OK, "a poisoned part");
        /* the parts' values are shared: a write to a part before the whole is read shows */
        fc_array *pp[8];
        for (int r = 0; r < n; r++) {
            int64_t st = range_start(R, n, r), len = range_len(R, n, r);
            pp[r] = fc_from_host(fc_ctx_shard(sc, r), FC_F32, FC_SHAPE(len, C), d + st * C);
        }
        fc_array *shared = fc_from_shards(sc, pp, 0);
        cr_assert_eq(fc_array_status(shared), FC_OK);
        float nine = 9.5f;
        cr_assert_eq(fc_write(pp[1], &nine, 0, 1, NULL), FC_OK);
        float got = 0;
        int64_t at = range_start(R, n, 1) * C;
        cr_assert_eq(fc_read(shared, &got, at, 1), FC_OK, "%s", fc_errmsg(sc));
        cr_expect_eq(got, 9.5f, "%d shards: a write to part 1 shows in the whole (got %g)", n, got);
        free(d);
        fc_scope_close(s2);
        fc_scope_close(s1);
        fc_ctx_destroy(sc);
        sc = NULL;
    }
}

Test(shard_api, shard_part_and_gather) {
    const int counts[] = {3, 5};
    for (int ci = 0; ci < 2; ci++) {
        int n = counts[ci];
        sc = make_sharded(n);
        fc_scope *s1 = fc_scope_open(hc), *s2 = fc_scope_open(sc);
        rng_seed(1500 + (uint64_t)n);
        const int64_t R = 11, C = 7;
        pair x = input(FC_F64, FC_SHAPE(R, C));
        fc_array *yh = fc_cos(x.h), *ys = fc_cos(x.s);
        fc_array *y1 = fc_reshard(ys, 1), *yr = fc_reshard(ys, FC_REPLICATED);
        for (int r = 0; r < n; r++) {
            int64_t st = range_start(R, n, r), len = range_len(R, n, r);
            fc_array *p = fc_shard_part(ys, r);
            cr_assert_eq(fc_array_status(p), FC_OK, "%s", fc_array_errmsg(p));
            cr_expect_eq(fc_array_ctx(p), fc_ctx_shard(sc, r), "part %d's context", r);
            compare(fc_slice(yh, FC_S(st, st + len, 1), FC_COLON), p, EXACT, "%d shards: part %d of split(0)", n, r);
            int64_t cs = range_start(C, n, r), cl = range_len(C, n, r);
            compare(fc_slice(yh, FC_COLON, FC_S(cs, cs + cl, 1)), fc_shard_part(y1, r), EXACT,
                    "%d shards: part %d of split(1)", n, r);
            compare(yh, fc_shard_part(yr, r), EXACT, "%d shards: part %d of a replicated array", n, r);
            /* gather: the whole value on shard r */
            for (int w = 0; w < 3; w++) {
                fc_array *g = fc_gather(w == 0 ? ys : w == 1 ? y1 : yr, r);
                cr_assert_eq(fc_array_status(g), FC_OK, "%s", fc_array_errmsg(g));
                cr_expect_eq(fc_array_ctx(g), fc_ctx_shard(sc, r), "gather's context");
                compare(yh, g, EXACT, "%d shards: gather of layout %d onto shard %d", n, w, r);
            }
        }
        /* out of range, ordinary context, NULL */
        cr_expect_eq(fc_array_status(fc_shard_part(ys, n)), FC_ERR_INDEX);
        cr_expect_eq(fc_array_status(fc_shard_part(ys, -1)), FC_ERR_INDEX);
        cr_expect_eq(fc_array_status(fc_gather(ys, n)), FC_ERR_INDEX);
        cr_expect_eq(fc_array_status(fc_gather(ys, -1)), FC_ERR_INDEX);
        cr_expect_eq(fc_array_status(fc_shard_part(yh, 0)), FC_ERR_CONTEXT);
        cr_expect_eq(fc_array_status(fc_gather(yh, 0)), FC_ERR_CONTEXT);
        cr_expect_null(fc_shard_part(NULL, 0));
        cr_expect_null(fc_gather(NULL, 0));
        /* a part shares the value: a write to it is seen by the whole, and back */
        fc_array *z = fc_add(x.s, fc_f64(sc, 0.0));
        cr_assert_eq(layout(z), 0);
        fc_array *p1 = fc_shard_part(z, 1);
        double v = 123.5, got = 0;
        cr_assert_eq(fc_write(p1, &v, 0, 1, NULL), FC_OK, "%s", fc_errmsg(fc_ctx_shard(sc, 1)));
        cr_assert_eq(fc_read(z, &got, range_start(R, n, 1) * C, 1), FC_OK);
        cr_expect_eq(got, 123.5, "%d shards: a write to part 1 shows in the whole (got %g)", n, got);
        double w = -7.25;
        cr_assert_eq(fc_write(z, &w, range_start(R, n, 1) * C + 1, 1, NULL), FC_OK, "%s", fc_errmsg(sc));
        cr_assert_eq(fc_read(p1, &got, 1, 1), FC_OK);
        cr_expect_eq(got, -7.25, "%d shards: a write to the whole shows in part 1 (got %g)", n, got);
        /* after a read of the whole, and a replicated array's part: the regressions at the end */
        fc_scope_close(s2);
        fc_scope_close(s1);
        fc_ctx_destroy(sc);
        sc = NULL;
    }
}

Test(shard_api, shard_stats_count_collectives) {
    sc = make_sharded(4);
    fc_scope *s = fc_scope_open(sc);
    rng_seed(1600);
    void *d = rand_data(FC_F64, 24 * 6, D_SIGNED);
    fc_array *x = fc_from_host(sc, FC_F64, FC_SHAPE(24, 6), d);
    free(d);
    cr_assert_eq(layout(x), 0); /* x holds a split value */
    fc_shard_stats st = stats(sc, true);
    cr_expect_eq(st.nccl, 0, "the host backend's collectives go through host memory");
    st = stats(sc, false);
    cr_expect_eq(st.allreduces + st.gathers + st.bytes, 0, "after a reset");
    fc_array *m = fc_mean(x, FC_AXES(0), false);
    cr_assert_eq(fc_eval(sc, &m, 1), FC_OK, "%s", fc_errmsg(sc));
    st = stats(sc, true);
    cr_expect_eq(st.allreduces, 1, "column mean: %llu all-reduces", (unsigned long long)st.allreduces);
    cr_expect_eq(st.gathers, 0);
    cr_expect(st.bytes > 0, "bytes moved: %llu", (unsigned long long)st.bytes);
    cr_expect(st.ms >= 0);
    cr_expect_eq(st.nccl, 0);
    fc_array *v = fc_var(x, FC_AXES(0), false, 1);
    cr_assert_eq(fc_eval(sc, &v, 1), FC_OK);
    st = stats(sc, true);
    cr_expect_eq(st.allreduces, 2, "var over the split axis: %llu all-reduces",
                 (unsigned long long)st.allreduces);
    fc_array *rows = fc_sqrt(fc_sum(fc_mul(x, x), FC_AXES(1), false));
    cr_assert_eq(fc_eval(sc, &rows, 1), FC_OK);
    st = stats(sc, true);
    cr_expect_eq(st.allreduces, 0, "a row-wise op: %llu all-reduces", (unsigned long long)st.allreduces);
    cr_expect_eq(st.gathers, 0, "a row-wise op: %llu gathers", (unsigned long long)st.gathers);
    cr_expect_eq(st.bytes, 0);
    fc_array *y = fc_exp(x);
    cr_assert_eq(fc_eval(sc, &y, 1), FC_OK);
    stats(sc, true);
    fc_array *y1 = fc_reshard(y, 1);
    cr_assert_eq(fc_array_status(y1), FC_OK);
    st = stats(sc, true);
    cr_expect_eq(st.gathers, 1, "reshard split(0) -> split(1): %llu gathers", (unsigned long long)st.gathers);
    cr_expect_eq(st.allreduces, 0);
    cr_expect_eq(st.bytes, 24 * 6 * 8, "a gather of [24, 6] f64 moves %llu bytes per shard",
                 (unsigned long long)st.bytes);
    fc_array *yr = fc_reshard(y1, FC_REPLICATED);
    cr_assert_eq(fc_array_status(yr), FC_OK);
    st = stats(sc, true);
    cr_expect_eq(st.gathers, 1, "reshard split(1) -> replicated: %llu gathers", (unsigned long long)st.gathers);
    fc_array *y0 = fc_reshard(yr, 0);
    cr_assert_eq(fc_array_status(y0), FC_OK);
    st = stats(sc, true);
    cr_expect_eq(st.gathers, 0, "replicated -> split(0) is a slice: %llu gathers", (unsigned long long)st.gathers);
    fc_array *g = fc_gather(y, 2);
    cr_assert_eq(fc_array_status(g), FC_OK);
    st = stats(sc, true);
    cr_expect_eq(st.gathers, 1, "fc_gather: %llu gathers", (unsigned long long)st.gathers);
    fc_array *am = fc_argmax(x, 0, false);
    cr_assert_eq(fc_eval(sc, &am, 1), FC_OK);
    st = stats(sc, true);
    cr_expect_eq(st.gathers, 1, "argmax over the split axis gathers: %llu", (unsigned long long)st.gathers);
    cr_expect_eq(st.allreduces, 0);
    /* reset: the counts start again */
    fc_array *m2 = fc_sum(fc_exp(x), FC_AXES(0), false);
    cr_assert_eq(fc_eval(sc, &m2, 1), FC_OK);
    st = stats(sc, false);
    cr_expect_eq(st.allreduces, 1);
    st = stats(sc, true);
    cr_expect_eq(st.allreduces, 1, "get without reset keeps the counts");
    st = stats(sc, false);
    cr_expect_eq(st.allreduces + st.gathers + st.bytes, 0, "reset cleared them");
    /* an ordinary context: all zero; NULL */
    fc_shard_stats z;
    memset(&z, 0xff, sizeof z);
    cr_expect_eq(fc_shard_stats_get(hc, &z, false), FC_OK);
    cr_expect_eq(z.allreduces + z.gathers + z.bytes, 0);
    cr_expect_eq(z.nccl, 0);
    cr_expect_eq(z.ms, 0);
    cr_expect_eq(fc_shard_stats_get(NULL, &z, false), FC_ERR_NULL);
    cr_expect_eq(fc_shard_stats_get(sc, NULL, false), FC_ERR_NULL);
    fc_scope_close(s);
}

/* fc_write / fc_read on sharded arrays of each layout, against the same on the reference. */
Test(shard_api, write_then_read) {
    sc = make_sharded(3);
    fc_scope *s1 = fc_scope_open(hc), *s2 = fc_scope_open(sc);
    rng_seed(1700);
    const int64_t R = 10, C = 4;
    pair x = input(FC_F32, FC_SHAPE(R, C));
    fc_array *hy = fc_mul(x.h, fc_f64(hc, 2)), *sy0 = fc_mul(x.s, fc_f64(sc, 2));
    cr_assert_eq(fc_eval(hc, &hy, 1), FC_OK);
    cr_assert_eq(fc_eval(sc, &sy0, 1), FC_OK);
    fc_array *sy[3] = {sy0, fc_reshard(sy0, 1), fc_reshard(sy0, FC_REPLICATED)};
    const char *lname[3] = {"split(0)", "split(1)", "replicated"};
    float src[9] = {10, 11, 12, 13, 14, 15, 16, 17, 18};
    /* the reference: the same write */
    fc_array *before_h = fc_add(hy, fc_f64(hc, 1));
    cr_assert_eq(fc_eval(hc, &before_h, 1), FC_OK);
    cr_assert_eq(fc_write(hy, src, 5, 9, NULL), FC_OK);
    for (int l = 0; l < 3; l++) {
        fc_array *before = fc_add(sy[l], fc_f64(sc, 1)); /* computed before the write: keeps */
        cr_assert_eq(fc_eval(sc, &before, 1), FC_OK);
        cr_assert_eq(layout(sy[l]), l == 2 ? FC_REPLICATED : l);
        fc_status st = fc_write(sy[l], src, 5, 9, NULL); /* rows 1 .. 3: spans shards */
        cr_assert_eq(st, FC_OK, "write into %s: %s (%s)", lname[l], fc_strerror(st), fc_errmsg(sc));
        compare(hy, sy[l], EXACT, "%s: the whole after a write", lname[l]);
        float part[6], want[6];
        cr_assert_eq(fc_read(sy[l], part, 3, 6), FC_OK);
        cr_assert_eq(fc_read(hy, want, 3, 6), FC_OK);
        cr_expect_arr_eq(part, want, sizeof part, "%s: a read of elements 3 .. 8", lname[l]);
        compare(before_h, before, EXACT, "%s: an array computed before the write keeps its value", lname[l]);
        compare(fc_add(hy, fc_f64(hc, 1)), fc_add(sy[l], fc_f64(sc, 1)), EXACT,
                "%s: an expression built after the write sees it", lname[l]);
        compare(fc_sum(hy, FC_AXES(0), false), fc_sum(sy[l], FC_AXES(0), false),
                tol_sum(FC_F32, FC_F32, R, 20), "%s: sum over 0 after the write", lname[l]);
        /* the shards' parts see it */
        for (int r = 0; r < 3; r++) {
            fc_array *p = fc_shard_part(sy[l], r), *want_p;
            if (l == 0) {
                int64_t s0 = range_start(R, 3, r), len = range_len(R, 3, r);
                want_p = fc_slice(hy, FC_S(s0, s0 + len, 1), FC_COLON);
            } else if (l == 1) {
                int64_t s0 = range_start(C, 3, r), len = range_len(C, 3, r);
                want_p = fc_slice(hy, FC_COLON, FC_S(s0, s0 + len, 1));
            } else {
                want_p = hy;
            }
            compare(want_p, p, EXACT, "%s: part %d after the write", lname[l], r);
        }
    }
    /* a write into a from_host array that has not been laid out yet */
    cr_assert_eq(fc_write(x.s, src, 0, 4, NULL), FC_OK, "%s", fc_errmsg(sc));
    cr_assert_eq(fc_write(x.h, src, 0, 4, NULL), FC_OK);
    compare(fc_sum(x.h, FC_AXES(0), false), fc_sum(x.s, FC_AXES(0), false), tol_sum(FC_F32, FC_F32, R, 20),
            "from_host array written before use");
    /* out of range */
    cr_expect_eq(fc_write(sy0, src, R * C - 2, 3, NULL), FC_ERR_INDEX);
    float dummy[4];
    cr_expect_eq(fc_read(sy0, dummy, R * C - 2, 3), FC_ERR_INDEX);
    fc_scope_close(s2);
    fc_scope_close(s1);
}

/* Writes into arrays of several layouts made from one another: each keeps its own value
 * (arrays are values), mirrored on the reference context step by step. */
Test(shard_api, writes_leave_related_arrays_alone) {
    sc = make_sharded(4);
    fc_scope *s1 = fc_scope_open(hc), *s2 = fc_scope_open(sc);
    rng_seed(1750);
    const int64_t R = 13, C = 5;
    pair x = input(FC_F64, FC_SHAPE(R, C));
    enum { NA = 7 };
    fc_array *h[NA], *s[NA];
    const char *names[NA] = {"y = 2 x (split 0)", "reshard(y, 1)", "reshard(y, replicated)",
                             "reshape(y, [R * C])", "y - 0 (split 0)", "transpose(y)",
                             "from_host x itself"};
    h[0] = fc_mul(x.h, fc_f64(hc, 2));
    s[0] = fc_mul(x.s, fc_f64(sc, 2));
    cr_assert_eq(fc_eval(hc, &h[0], 1), FC_OK);
    cr_assert_eq(fc_eval(sc, &s[0], 1), FC_OK);
    /* new values equal to y, as a reshard is; distinct expressions, since identical ones
     * would be one node (hash-consing) */
    h[1] = fc_add(h[0], fc_f64(hc, 0.0));
    s[1] = fc_reshard(s[0], 1);
    h[2] = fc_add(h[0], fc_f64(hc, -0.0));
    s[2] = fc_reshard(s[0], FC_REPLICATED);
    h[3] = fc_reshape(h[0], FC_SHAPE(R * C));
    s[3] = fc_reshape(s[0], FC_SHAPE(R * C));
    h[4] = fc_sub(h[0], fc_f64(hc, 0.0));
    s[4] = fc_sub(s[0], fc_f64(sc, 0.0));
    h[5] = fc_transpose(h[0]);
    s[5] = fc_transpose(s[0]);
    h[6] = x.h;
    s[6] = x.s;
    cr_assert_eq(fc_eval(hc, h, NA), FC_OK);
    cr_assert_eq(fc_eval(sc, s, NA), FC_OK, "%s", fc_errmsg(sc));
    for (int i = 0; i < NA; i++) compare(h[i], s[i], EXACT, "before the writes: %s", names[i]);
    /* one write into each, each with its own values, some after a read of the whole */
    for (int i = 0; i < NA; i++) {
        double v[7];
        for (int j = 0; j < 7; j++) v[j] = 100.0 * (i + 1) + j;
        int64_t off = (3 * i + 4) % (R * C - 7);
        if (i % 2) {
            double tmp[R * C];
            cr_assert_eq(fc_read(s[i], tmp, 0, R * C), FC_OK); /* a host copy exists */
        }
        cr_assert_eq(fc_write(h[i], v, off, 7, NULL), FC_OK, "reference write %d", i);
        fc_status st = fc_write(s[i], v, off, 7, NULL);
        cr_assert_eq(st, FC_OK, "write into %s: %s (%s)", names[i], fc_strerror(st), fc_errmsg(sc));
        for (int j = 0; j < NA; j++)
            compare(h[j], s[j], EXACT, "after the write into %s: %s", names[i], names[j]);
    }
    /* and computations on them all */
    for (int i = 0; i < NA; i++) {
        fc_shape sh = fc_array_shape(h[i]);
        compare(fc_sum(h[i], FC_AXES(0), false), fc_sum(s[i], FC_AXES(0), false),
                tol_sum(FC_F64, FC_F64, (double)sh.dim[0], 800), "sum over 0 of %s after the writes",
                names[i]);
    }
    fc_scope_close(s2);
    fc_scope_close(s1);
}

Test(shard_api, copy_to_an_ordinary_context_and_back) {
    sc = make_sharded(4);
    fc_ctx *sc2 = make_sharded(3);
    fc_scope *s1 = fc_scope_open(hc), *s2 = fc_scope_open(sc), *s3 = fc_scope_open(sc2);
    rng_seed(1800);
    pair x = input(FC_C64, FC_SHAPE(9, 5));
    fc_array *yh = fc_mul(x.h, x.h), *ys = fc_mul(x.s, x.s);
    fc_array *y1 = fc_reshard(ys, 1);
    fc_array *c0 = fc_copy_to(ys, hc), *c1 = fc_copy_to(y1, hc);
    cr_assert_eq(fc_array_ctx(c0), hc);
    compare(yh, c0, EXACT, "copy_to from split(0) to an ordinary context");
    compare(yh, c1, EXACT, "copy_to from split(1)");
    fc_array *back = fc_copy_to(yh, sc);
    cr_assert_eq(fc_array_ctx(back), sc);
    compare(yh, back, EXACT, "copy_to from an ordinary context to a sharded one");
    compare(fc_sum(yh, FC_AXES(0), false), fc_sum(back, FC_AXES(0), false),
            tol_sum(FC_C64, FC_C64, 9, 8), "sum over 0 of the copy");
    fc_array *other = fc_copy_to(ys, sc2);
    cr_assert_eq(fc_array_ctx(other), sc2);
    compare(yh, other, EXACT, "copy_to between two sharded contexts");
    fc_array *toshard = fc_copy_to(ys, fc_ctx_shard(sc, 2));
    compare(yh, toshard, EXACT, "copy_to onto a shard's own context");
    /* fc_to_host and .npy files of a split array */
    float buf[9 * 5 * 2 + 1], want[9 * 5 * 2 + 1];
    cr_assert_eq(fc_to_host(y1, buf, sizeof buf), FC_OK, "%s", fc_errmsg(sc));
    cr_assert_eq(fc_to_host(yh, want, sizeof want), FC_OK);
    cr_expect_arr_eq(buf, want, 9 * 5 * 2 * sizeof(float), "to_host of split(1)");
    char path[] = "/tmp/fusec-shard-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    cr_assert_eq(fc_npy_save(y1, path), FC_OK, "%s", fc_errmsg(sc));
    compare(yh, fc_npy_load(hc, path), EXACT, ".npy of a split array, loaded in the reference");
    compare(yh, fc_npy_load(sc, path), EXACT, ".npy loaded into a sharded context");
    unlink(path);
    fc_scope_close(s3);
    fc_scope_close(s2);
    fc_scope_close(s1);
    fc_ctx_destroy(sc2);
}

Test(shard_api, memory_stats_streams_and_events) {
    sc = make_sharded(3);
    fc_scope *s = fc_scope_open(sc);
    fc_array *x = fc_random_uniform(sc, FC_F64, FC_SHAPE(300, 20), 1);
    fc_array *y = fc_sum(fc_exp(x), FC_AXES(0), false);
    cr_assert_eq(fc_eval(sc, &y, 1), FC_OK, "%s", fc_errmsg(sc));
    fc_memory_stats m;
    cr_assert_eq(fc_memory_stats_get(sc, &m), FC_OK);
    cr_expect(m.host_in_use > 0);
    cr_expect(m.peak >= m.in_use);
    for (int r = 0; r < 3; r++) {
        fc_memory_stats ms;
        cr_assert_eq(fc_memory_stats_get(fc_ctx_shard(sc, r), &ms), FC_OK);
        cr_expect(ms.host_in_use > 0, "shard %d holds memory", r);
    }
    fc_memory_reset_peak(sc);
    cr_expect_eq(fc_memory_trim(sc), FC_OK);
    void *p = fc_host_alloc(sc, 1000);
    cr_expect_not_null(p);
    if (p) memset(p, 1, 1000);
    fc_host_free(sc, p);
    cr_expect_eq(fc_ctx_synchronize(sc), FC_OK);
    fc_stream *st;
    cr_assert_eq(fc_stream_create(sc, &st), FC_OK);
    fc_event *e0, *e1;
    cr_assert_eq(fc_event_create(sc, &e0), FC_OK);
    cr_assert_eq(fc_event_create(sc, &e1), FC_OK);
    cr_expect_eq(fc_event_record(e0, st), FC_OK);
    fc_array *z = fc_mul(x, x);
    cr_expect_eq(fc_eval_on(sc, &z, 1, st), FC_OK, "%s", fc_errmsg(sc));
    cr_expect_eq(fc_event_record(e1, st), FC_OK);
    cr_expect_eq(fc_event_synchronize(e1), FC_OK);
    float ms = -1;
    cr_expect_eq(fc_event_elapsed_ms(e0, e1, &ms), FC_OK);
    cr_expect(ms >= 0);
    cr_expect_eq(fc_stream_synchronize(sc, st), FC_OK);
    fc_event_destroy(e0);
    fc_event_destroy(e1);
    fc_stream_destroy(st);
    /* a stream and an event left for fc_ctx_destroy to free (teardown) */
    fc_stream *left_s;
    fc_event *left_e;
    cr_assert_eq(fc_stream_create(sc, &left_s), FC_OK);
    cr_assert_eq(fc_event_create(sc, &left_e), FC_OK);
    cr_expect_eq(fc_event_record(left_e, left_s), FC_OK);
    double gbps;
    cr_expect_eq(fc_device_copy_bandwidth(sc, 1 << 16, 2, &gbps), FC_ERR_BACKEND,
                 "copy bandwidth on host shards");
    fc_scope_close(s);
}

Test(shard_api, user_kernels_are_refused) {
    sc = make_sharded(2);
    fc_scope *s = fc_scope_open(sc);
    fc_kernel *k = NULL;
    fc_status st = fc_elementwise_kernel(sc, "T x", "T y", "y = x * 2;", "twice", &k);
    if (st == FC_OK) {
        fc_array *x = fc_ones(sc, FC_F32, FC_SHAPE(8, 3));
        fc_array *y = fc_kernel_call1(k, 1, (fc_array *[]){x});
        float out[24];
        st = fc_to_host(y, out, sizeof out);
        cr_expect_eq(st, FC_ERR_UNSUPPORTED, "an elementwise kernel on a sharded context: %s",
                     fc_strerror(st));
        cr_expect(strstr(fc_errmsg(sc), "sharded"), "message: %s", fc_errmsg(sc));
    } else {
        cr_expect_eq(st, FC_ERR_UNSUPPORTED, "defining: %s", fc_strerror(st));
    }
    k = NULL;
    st = fc_reduction_kernel(sc, "T x", "T y", "x", "a + b", "y = a", "0", "mysum", NULL, &k);
    if (st == FC_OK) {
        fc_array *x = fc_ones(sc, FC_F32, FC_SHAPE(8, 3));
        fc_array *y = fc_kernel_reduce(k, 1, (fc_array *[]){x}, FC_AXES(0), false);
        float out[3];
        st = fc_to_host(y, out, sizeof out);
        cr_expect_eq(st, FC_ERR_UNSUPPORTED, "a reduction kernel on a sharded context: %s",
                     fc_strerror(st));
        cr_expect(strstr(fc_errmsg(sc), "sharded"), "message: %s", fc_errmsg(sc));
    } else {
        cr_expect_eq(st, FC_ERR_UNSUPPORTED, "defining: %s", fc_strerror(st));
    }
    fc_module *mod = NULL;
    st = fc_module_create(sc, "extern \"C\" __global__ void f(int *p) {}", 0, NULL, 0, NULL, &mod);
    cr_expect_eq(st, FC_ERR_UNSUPPORTED, "a raw module on a sharded context: %s", fc_strerror(st));
    cr_expect_null(mod);
    /* the context still works */
    fc_array *z = fc_sum(fc_arange(sc, FC_F64, 0, 10, 1), FC_ALL, false);
    double v = 0;
    cr_expect_eq(fc_read(z, &v, 0, 1), FC_OK, "%s", fc_errmsg(sc));
    cr_expect_eq(v, 45.0);
    fc_scope_close(s);
}

/* An evaluation loop that keeps only its latest state keeps memory flat. */
Test(shard_api, evaluation_loop_memory_is_flat) {
    sc = make_sharded(4);
    rng_seed(1900);
    void *d = rand_data(FC_F64, 40 * 8, D_SIGNED);
    fc_array *xs = fc_from_host(sc, FC_F64, FC_SHAPE(40, 8), d);
    fc_array *xh = fc_from_host(hc, FC_F64, FC_SHAPE(40, 8), d);
    free(d);
    size_t warm[5] = {0}, last[5] = {0}, warm_h = 0, last_h = 0;
    for (int i = 0; i < 100; i++) {
        for (int side = 0; side < 2; side++) {
            fc_ctx *c = side ? sc : hc;
            fc_array **x = side ? &xs : &xh;
            fc_scope *s = fc_scope_open(c);
            fc_array *y = fc_add(fc_mul(*x, fc_f64(c, 0.5)), fc_f64(c, 1.0));
            cr_assert_eq(fc_eval(c, &y, 1), FC_OK, "step %d: %s", i, fc_errmsg(c));
            y = fc_keep(y);
            fc_scope_close(s);
            fc_release(*x);
            *x = y;
        }
        if (i == 20 || i == 99) {
            size_t *into = i == 20 ? warm : last;
            fc_memory_stats m;
            for (int r = 0; r < 4; r++) {
                cr_assert_eq(fc_memory_stats_get(fc_ctx_shard(sc, r), &m), FC_OK);
                into[r] = m.host_in_use;
            }
            cr_assert_eq(fc_memory_stats_get(sc, &m), FC_OK);
            into[4] = m.host_in_use;
            cr_assert_eq(fc_memory_stats_get(hc, &m), FC_OK);
            *(i == 20 ? &warm_h : &last_h) = m.host_in_use;
        }
    }
    for (int r = 0; r < 4; r++)
        cr_expect_leq(last[r], warm[r], "shard %d: host_in_use %zu after 100 steps, %zu after 20",
                      r, last[r], warm[r]);
    cr_expect_leq(last[4], warm[4], "the sharded context: host_in_use %zu after 100 steps, %zu "
                  "after 20", last[4], warm[4]);
    cr_expect_leq(last_h, warm_h, "the reference context: %zu after 100, %zu after 20", last_h, warm_h);
    compare(xh, xs, EXACT, "x = x * 0.5 + 1, 100 times");
    fc_release(xs);
    fc_release(xh);
}

/* FUSEC_LOG=shard says where the layouts go and which collectives run. */
Test(shard_api, fusec_log_shard_reports_layouts_and_collectives) {
    cr_assert_eq(setenv("FUSEC_LOG", "shard", 1), 0);
    char path[] = "/tmp/fusec-shard-log-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    fflush(stderr);
    int saved = dup(2);
    cr_assert(saved >= 0);
    cr_assert(dup2(fd, 2) >= 0);
    sc = make_sharded(3);
    fc_scope *s1 = fc_scope_open(hc), *s2 = fc_scope_open(sc);
    rng_seed(2100);
    pair x = input(FC_F32, FC_SHAPE(9, 4));
    x.s = as_layout(x.s, 0);
    fc_array *hs[3] = {softmax(x.h, 0), fc_slice(x.h, FC_S(2, 7, 1), FC_COLON), fc_argmax(x.h, 0, false)};
    fc_array *ss[3] = {softmax(x.s, 0), fc_slice(x.s, FC_S(2, 7, 1), FC_COLON), fc_argmax(x.s, 0, false)};
    fc_status st = fc_eval(sc, ss, 3);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    unsetenv("FUSEC_LOG");
    cr_assert_eq(st, FC_OK, "%s", fc_errmsg(sc));
    compare(hs[0], ss[0], (tol){4 * eps_of(FC_F32) + 2 * 81 * acc_eps(FC_F32), 0, T_PLAIN},
            "softmax with FUSEC_LOG=shard");
    compare(hs[1], ss[1], EXACT, "slice with FUSEC_LOG=shard");
    compare(hs[2], ss[2], EXACT, "argmax with FUSEC_LOG=shard");
    size_t len;
    char *log = tu_read_file(path, &len);
    close(fd);
    unlink(path);
    cr_expect(strstr(log, "fusec shard: 3 shards on the host backend"), "log:\n%s", log);
    cr_expect(strstr(log, "(all-reduce)"), "the log names the all-reduces:\n%s", log);
    cr_expect(strstr(log, "(all-gather)"), "the log names the all-gathers:\n%s", log);
    free(log);
    fc_scope_close(s2);
    fc_scope_close(s1);
}

Test(shard_api, bad_options) {
    fc_ctx_options o;
    memset(&o, 0, sizeof o);
    o.backend = FC_BACKEND_HOST;
    fc_ctx *c = (fc_ctx *)&o; /* not NULL: must be set to NULL on failure */
    o.shards = -5;
    cr_expect_eq(fc_ctx_create(&c, &o), FC_ERR_INVALID, "shards = -5");
    cr_expect_null(c);
    c = (fc_ctx *)&o;
    o.shards = FC_SHARDS_ALL;
    fc_status st = fc_ctx_create(&c, &o);
    cr_expect_neq(st, FC_OK, "FC_SHARDS_ALL on the host backend: %s", fc_strerror(st));
    cr_expect_null(c);
    c = (fc_ctx *)&o;
    o.shards = 65;
    st = fc_ctx_create(&c, &o);
    cr_expect_eq(st, FC_ERR_INVALID, "65 shards: %s", fc_strerror(st));
    cr_expect_null(c);
    /* 0 and 1: an ordinary context */
    for (int n = 0; n < 2; n++) {
        o.shards = n;
        cr_assert_eq(fc_ctx_create(&c, &o), FC_OK);
        cr_expect_eq(fc_ctx_shards(c), 1);
        cr_expect_null(fc_ctx_shard(c, 0));
        fc_ctx_destroy(c);
    }
    /* devices are ignored on the host backend */
    const int devs[] = {3, 3};
    o.shards = 2;
    o.devices = devs;
    cr_assert_eq(fc_ctx_create(&c, &o), FC_OK, "host shards ignore devices");
    cr_expect_eq(fc_ctx_shards(c), 2);
    fc_ctx_destroy(c);
    /* AUTO with no GPU: simulated shards on the host */
    int ndev = -1;
    cr_assert_eq(fc_device_count(&ndev), FC_OK);
    if (ndev == 0) {
        memset(&o, 0, sizeof o);
        o.shards = 3;
        if (!getenv("FUSEC_BACKEND")) {
            cr_assert_eq(fc_ctx_create(&c, &o), FC_OK, "AUTO with 3 shards and no GPU");
            cr_expect_eq(fc_ctx_backend(c), FC_BACKEND_HOST);
            cr_expect_eq(fc_ctx_shards(c), 3);
            fc_ctx_destroy(c);
        }
        o.backend = FC_BACKEND_CUDA;
        c = (fc_ctx *)&o;
        cr_expect_eq(fc_ctx_create(&c, &o), FC_ERR_BACKEND, "CUDA shards with no GPU");
        cr_expect_null(c);
        o.backend = FC_BACKEND_AUTO;
        o.shards = FC_SHARDS_ALL;
        c = (fc_ctx *)&o;
        st = fc_ctx_create(&c, &o);
        cr_expect_neq(st, FC_OK, "FC_SHARDS_ALL with AUTO and no GPU: %s", fc_strerror(st));
        cr_expect_null(c);
    }
}

/* Every allocation failure of a sharded context (whose shards allocate through the same
 * hooks) ends in FC_OK or FC_ERR_NOMEM, right values where it succeeds, and no live
 * allocation after fc_ctx_destroy. Modes: the Nth allocation alone fails; every one from the
 * Nth on fails. */
enum { IR = 10, IC = 4, INJ_STEPS = 9 };

typedef struct inj_run {
    char problem[400];
    bool injected;
} inj_run;

static void inj_check(inj_run *r, counting_alloc *ca, fc_status st, const char *what) {
    if (r->problem[0] || st == FC_OK) return;
    if (st == FC_ERR_NOMEM && ca->injected) return;
    snprintf(r->problem, sizeof r->problem, "%s: %s%s", what, fc_strerror(st),
             ca->injected ? "" : " (no failure injected)");
}

/* Reads a into buf (n doubles) and checks them against want when the read succeeds. */
static void inj_read(inj_run *r, counting_alloc *ca, fc_array *a, const double *want, int n,
                     const char *what) {
    double buf[IR * IR];
    fc_status st = fc_array_status(a);
    if (st == FC_OK) st = fc_read(a, buf, 0, n);
    inj_check(r, ca, st, what);
    if (st != FC_OK || r->problem[0]) return;
    for (int i = 0; i < n; i++)
        if (fabs(buf[i] - want[i]) > 1e-12 * (1 + fabs(want[i]))) {
            snprintf(r->problem, sizeof r->problem, "%s: element %d is %.17g, want %.17g", what,
                     i, buf[i], want[i]);
            return;
        }
}

static double inj_x[IR * IC], inj_want[INJ_STEPS][IR * IR];
static int inj_n[INJ_STEPS];

/* Step k of the workload on context c (sharded: with its layout calls; the reference: the
 * same values without them), as an f64 array. */
static fc_array *inj_step(fc_array *x, int k, bool sharded) {
    fc_ctx *c = fc_array_ctx(x);
    switch (k) {
    case 0: return softmax(x, 0);
    case 1: return fc_sum(softmax(x, 0), FC_AXES(1), false);
    case 2: return fc_mean(x, FC_AXES(0), false);
    case 3: return fc_var(x, FC_AXES(0), false, 1);
    case 4: return fc_cast(fc_argmax(x, 0, false), FC_F64);
    case 5: return sharded ? fc_reshard(softmax(x, 0), 1) : softmax(x, 0);
    case 6: return sharded ? fc_gather(fc_reshard(fc_exp(x), 1), 2) : fc_exp(x);
    case 7: /* the contracted axis split */
        return sharded ? fc_matmul(fc_reshard(x, 1), fc_reshard(fc_transpose(x), 0))
                       : fc_matmul(x, fc_transpose(x));
    case 8: { /* a write into a split array, then a split-axis reduction of it */
        fc_array *y = fc_mul(x, fc_f64(c, 2.0));
        double v[3] = {1.5, -2.5, 3.5};
        fc_status st = fc_write(y, v, 11, 3, NULL);
        if (st != FC_OK) return fc_add(y, fc_zeros(c, FC_F64, FC_SHAPE(3))); /* poisoned: SHAPE */
        return fc_sum(y, FC_AXES(0), false);
    }
    default: return NULL;
    }
}

static void inj_workload(inj_run *r, counting_alloc *ca) {
    fc_allocator al = {ca_malloc, ca_realloc, ca_free, ca};
    fc_ctx_options o;
    memset(&o, 0, sizeof o);
    o.backend = FC_BACKEND_HOST;
    o.shards = 3;
    o.allocator = &al;
    fc_ctx *c = NULL;
    fc_status st = fc_ctx_create(&c, &o);
    inj_check(r, ca, st, "create");
    if (st != FC_OK) {
        if (c) snprintf(r->problem, sizeof r->problem, "create failed but set the context");
        return;
    }
    fc_scope *s = fc_scope_open(c);
    fc_array *x = fc_from_host(c, FC_F64, FC_SHAPE(IR, IC), inj_x);
    for (int k = 0; k < INJ_STEPS && !r->problem[0]; k++) {
        char what[32];
        snprintf(what, sizeof what, "step %d", k);
        fc_array *a = inj_step(x, k, true);
        if (k == 8 && fc_array_status(a) == FC_ERR_SHAPE) { /* the write failed */
            inj_check(r, ca, ca->injected ? FC_ERR_NOMEM : FC_ERR_SHAPE, "write");
            continue;
        }
        inj_read(r, ca, a, inj_want[k], inj_n[k], what);
    }
    fc_array *p = fc_shard_part(softmax(x, 0), 1);
    inj_check(r, ca, fc_array_status(p), "shard_part");
    fc_shard_stats sst;
    inj_check(r, ca, fc_shard_stats_get(c, &sst, true), "stats");
    fc_scope_close(s); /* NULL-safe when the scope could not be opened */
    fc_ctx_destroy(c);
}

static void inj_loop(bool fail_after) {
    fc_ctx *h = tu_host_ctx();
    fc_array *x = fc_from_host(h, FC_F64, FC_SHAPE(IR, IC), inj_x);
    for (int k = 0; k < INJ_STEPS; k++) {
        fc_array *a = inj_step(x, k, false);
        inj_n[k] = (int)fc_array_size(a);
        cr_assert(inj_n[k] <= IR * IR);
        cr_assert_eq(fc_read(a, inj_want[k], 0, inj_n[k]), FC_OK, "reference step %d: %s", k,
                     fc_errmsg(h));
    }
    fc_ctx_destroy(h);
    long runs = 0;
    for (long n = 1;; n++) {
        counting_alloc ca = {.fail_at = n, .fail_after = fail_after};
        inj_run r = {{0}, false};
        inj_workload(&r, &ca);
        cr_assert(r.problem[0] == '\0', "fail_at %ld%s: %s", n, fail_after ? "+" : "", r.problem);
        cr_assert_eq(ca.live, 0, "fail_at %ld%s: %ld allocations live after fc_ctx_destroy", n,
                     fail_after ? "+" : "", ca.live);
        cr_assert_eq(ca.size_mismatches, 0, "fail_at %ld%s: %ld frees with the wrong size", n,
                     fail_after ? "+" : "", ca.size_mismatches);
        runs++;
        if (!ca.injected) break;
        cr_assert(n < 100000, "no end to the allocations");
    }
    cr_assert(runs > 10, "the workload allocates (%ld runs)", runs);
    fprintf(stderr, "shard: fault injection (%s): %ld runs\n", fail_after ? "from N on" : "the Nth",
            runs);
}

static void inj_inputs(void) {
    rng_seed(3000);
    for (int i = 0; i < IR * IC; i++) inj_x[i] = urand(-2, 2);
}

Test(shard_api, every_allocation_failure_is_clean, .init = inj_inputs) { inj_loop(false); }
Test(shard_api, allocations_failing_from_n_on_are_clean, .init = inj_inputs) { inj_loop(true); }

/* ---- regressions: minimal reproducers of bugs found in backend/mesh.c ------------------------ */

/* Regression: fc_reshard and fc_from_shards mapped a negative axis by adding ndim, so -ndim - 1
 * became -1 == FC_REPLICATED and passed as the replicated layout. Only 0 .. ndim-1 and
 * FC_REPLICATED are axes there now. */
Test(shard_api, an_axis_of_minus_ndim_minus_1_is_an_axis_error) {
    sc = make_sharded(2);
    fc_scope *s = fc_scope_open(sc);
    fc_array *x = fc_ones(sc, FC_F32, FC_SHAPE(4, 3, 2));
    fc_array *r = fc_reshard(x, -4);
    cr_expect_eq(fc_array_status(r), FC_ERR_AXIS, "fc_reshard(3-D, -4): %s, layout %d",
                 fc_strerror(fc_array_status(r)), fc_array_status(r) == FC_OK ? layout(r) : -99);
    fc_array *parts[2] = {fc_ones(fc_ctx_shard(sc, 0), FC_F32, FC_SHAPE(4, 3)),
                          fc_ones(fc_ctx_shard(sc, 1), FC_F32, FC_SHAPE(4, 3))};
    fc_array *f = fc_from_shards(sc, parts, -3);
    cr_expect_eq(fc_array_status(f), FC_ERR_AXIS, "fc_from_shards(2-D parts, -3): %s, layout %d",
                 fc_strerror(fc_array_status(f)), fc_array_status(f) == FC_OK ? layout(f) : -99);
    fc_scope_close(s);
}

/* Regression: fc_shard_part shares a split value, but once the whole had been read its host
 * copy was never refreshed, so a later write to a part was not seen. Reads of a sharded array
 * now go to the parts each time. */
Test(shard_api, a_write_to_a_part_after_a_read_of_the_whole_shows) {
    sc = make_sharded(2);
    fc_scope *s = fc_scope_open(sc);
    fc_array *z = fc_add(fc_arange(sc, FC_F64, 0, 8, 1), fc_f64(sc, 0.5)); /* split: 4 + 4 */
    cr_assert_eq(layout(z), 0);
    double got = 0, v = 100.0;
    cr_assert_eq(fc_read(z, &got, 5, 1), FC_OK); /* 5.5; the whole now has a host copy */
    fc_array *p1 = fc_shard_part(z, 1);           /* elements 4 .. 7 */
    cr_assert_eq(fc_write(p1, &v, 1, 1, NULL), FC_OK);
    cr_assert_eq(fc_read(p1, &got, 1, 1), FC_OK);
    cr_assert_eq(got, 100.0, "the part itself");
    cr_assert_eq(fc_read(z, &got, 5, 1), FC_OK);
    cr_expect_eq(got, 100.0, "element 5 of the whole after a write to part 1: %g, want 100", got);
    fc_scope_close(s);
}

/* A replicated array's part i is a copy of shard i's replica (fusec.h): a write to it leaves
 * the whole and every replica as they were, so the replicas never differ. */
Test(shard_api, a_replicated_part_is_a_copy) {
    sc = make_sharded(2);
    fc_scope *s = fc_scope_open(sc);
    fc_array *z = fc_reshard(fc_add(fc_arange(sc, FC_F64, 0, 8, 1), fc_f64(sc, 0.5)), FC_REPLICATED);
    cr_assert_eq(layout(z), FC_REPLICATED);
    double got = 0, v = 100.0;
    fc_array *p1 = fc_shard_part(z, 1);
    cr_assert_eq(fc_write(p1, &v, 3, 1, NULL), FC_OK);
    cr_assert_eq(fc_read(p1, &got, 3, 1), FC_OK);
    cr_assert_eq(got, 100.0, "the copy itself");
    cr_assert_eq(fc_read(z, &got, 3, 1), FC_OK);
    cr_expect_eq(got, 3.5, "element 3 of the whole after a write to a copy of shard 1's: %g", got);
    cr_assert_eq(fc_read(fc_gather(z, 1), &got, 3, 1), FC_OK);
    cr_expect_eq(got, 3.5, "element 3 gathered on shard 1: %g", got);
    fc_release(p1);
    fc_scope_close(s);
}

/* Regression: the lowering kept a node's inputs in arrays of 64, so an op of more inputs
 * (concatenate, stack) overflowed the stack when they were not free, and failed with
 * FC_ERR_UNSUPPORTED when they were, where one device computes it. */
Test(shard_api, concatenate_of_65_evaluated_arrays) {
    sc = make_sharded(2);
    fc_scope *s1 = fc_scope_open(hc), *s2 = fc_scope_open(sc);
    rng_seed(4000);
    pair x = input(FC_F64, FC_SHAPE(4, 3));
    fc_array *xs = fc_reshard(x.s, 0); /* a split value */
    fc_array *hs[65], *ss[65];
    for (int i = 0; i < 65; i++) hs[i] = x.h, ss[i] = xs;
    compare(fc_concatenate(hc, hs, 65, 1), fc_concatenate(sc, ss, 65, 1), EXACT,
            "concatenate of 65 split arrays along axis 1");
    fc_scope_close(s2);
    fc_scope_close(s1);
}

Test(shard_api, concatenate_of_65_free_arrays) {
    sc = make_sharded(2);
    fc_scope *s1 = fc_scope_open(hc), *s2 = fc_scope_open(sc);
    rng_seed(4001);
    pair x = input(FC_F64, FC_SHAPE(4, 3));
    fc_array *hs[65], *ss[65];
    for (int i = 0; i < 65; i++) hs[i] = x.h, ss[i] = x.s;
    compare(fc_concatenate(hc, hs, 65, 0), fc_concatenate(sc, ss, 65, 0), EXACT,
            "concatenate of 65 from_host arrays along axis 0");
    compare(fc_stack(hc, hs, 65, 0), fc_stack(sc, ss, 65, 0), EXACT, "stack of 65 from_host arrays");
    fc_scope_close(s2);
    fc_scope_close(s1);
}

/* Regression: host-memory all-reduces stacked the partials on a new leading axis, so an 8-D
 * partial needed 9 dimensions (a stack overflow under ASan, FC_ERR_SHAPE without); they are
 * stacked as [shards, elements] now. */
Test(shard_api, reductions_over_the_split_axis_of_8d_arrays) {
    sc = make_sharded(2);
    fc_scope *s1 = fc_scope_open(hc), *s2 = fc_scope_open(sc);
    rng_seed(4002);
    pair x = input(FC_F32, FC_SHAPE(2, 1, 3, 1, 2, 1, 2, 9));
    fc_array *xs = fc_reshard(x.s, 7);
    compare(fc_sum(x.h, FC_AXES(7), false), fc_sum(xs, FC_AXES(7), false),
            tol_sum(FC_F32, FC_F32, 9, 2), "8-D split(7): sum over 7");
    compare(fc_max(x.h, FC_AXES(0, 7), true), fc_max(xs, FC_AXES(0, 7), true), EXACT,
            "8-D split(7): max over (0, 7)");
    compare(fc_sum(x.h, FC_AXES(0), false), fc_sum(x.s, FC_AXES(0), false),
            tol_sum(FC_F32, FC_F32, 2, 2), "8-D split(0) (the default): sum over 0");
    fc_scope_close(s2);
    fc_scope_close(s1);
}

/* ---- part 3: the GPU ----------------------------------------------------------------------- */

static void skip_msg(const char *name) {
    fprintf(stderr, "shard: SKIPPED 1 test (no CUDA device): %s\n", name);
}

#define SKIP_WITHOUT_GPU(name)                                                                   \
    do {                                                                                         \
        if (!tu_gpu_available()) {                                                               \
            skip_msg(name);                                                                      \
            cr_skip_test("no CUDA device: the sharded GPU test is skipped");                     \
        }                                                                                        \
    } while (0)


/* A sharded CUDA context: every GPU (NCCL) when there are two or more, else two shards on
 * device 0 (host-staged collectives). *want_nccl: whether NCCL should serve. */
static fc_ctx *gpu_sharded(bool *want_nccl) {
    int ndev = 0;
    cr_assert_eq(fc_device_count(&ndev), FC_OK);
    fc_ctx_options o;
    memset(&o, 0, sizeof o);
    o.backend = FC_BACKEND_CUDA;
    static const int same[] = {0, 0};
    if (ndev >= 2) {
        o.shards = FC_SHARDS_ALL;
    } else {
        o.shards = 2;
        o.devices = same;
    }
    fc_ctx *c = NULL;
    fc_status st = fc_ctx_create(&c, &o);
    cr_assert_eq(st, FC_OK, "a sharded CUDA context (%d devices): %s", ndev, fc_strerror(st));
    cr_assert_eq(fc_ctx_shards(c), ndev >= 2 ? ndev : 2);
    cr_assert_eq(fc_ctx_backend(c), FC_BACKEND_CUDA);
    *want_nccl = ndev >= 2 && !getenv("FUSEC_SHARD_COMM");
    return c;
}

/* The representative programs on a sharded GPU context against the host reference. */
static void gpu_programs(const char *tag) {
    int n = fc_ctx_shards(sc);
    fc_scope *s1 = fc_scope_open(hc), *s2 = fc_scope_open(sc);
    rng_seed(2000);
    const int64_t R = 304, C = 67, K = 45; /* R: equal parts over 2, 4, 8 or 16 GPUs */
    for (int di = 0; di < 3; di++) {
        fc_dtype t = di == 0 ? FC_F32 : di == 1 ? FC_F64 : FC_F16;
        const char *tn = fc_dtype_name(t);
        pair x = input(t, FC_SHAPE(R, C));
        stats(sc, true);
        fc_array *w1 = fc_tanh(fc_add(fc_sin(x.s), fc_mul(x.s, fc_f64(sc, 0.1))));
        compare(fc_tanh(fc_add(fc_sin(x.h), fc_mul(x.h, fc_f64(hc, 0.1)))), w1, tol_gpu(t),
                "%s %s: W1", tag, tn);
        cr_expect_eq(layout(w1), 0);
        compare(softmax(x.h, 0), softmax(x.s, 0), tol_gpu(t), "%s %s: softmax over the split axis", tag, tn);
        compare(softmax(x.h, 1), softmax(x.s, 1), tol_gpu(t), "%s %s: softmax over axis 1", tag, tn);
        compare(fc_mean(x.h, FC_AXES(0), false), fc_mean(x.s, FC_AXES(0), false), tol_gpu(t),
                "%s %s: column mean", tag, tn);
        compare(fc_var(x.h, FC_AXES(0), false, 1), fc_var(x.s, FC_AXES(0), false, 1), tol_gpu(t),
                "%s %s: var over the split axis", tag, tn);
        compare(fc_std(x.h, FC_AXES(1), true, 0), fc_std(x.s, FC_AXES(1), true, 0), tol_gpu(t),
                "%s %s: std over axis 1", tag, tn);
        /* prod of 1 + x / 20 (in [0.9, 1.1)): no underflow over 304 rows, where the GPU may
         * flush subnormals */
        fc_array *xph = fc_add(fc_mul(x.h, fc_f64(hc, 0.05)), fc_f64(hc, 1.0));
        fc_array *xps = fc_add(fc_mul(x.s, fc_f64(sc, 0.05)), fc_f64(sc, 1.0));
        for (int op = 0; op < R_NOPS; op++) {
            fc_array *h = reduce_op((rop)op, op == R_PROD ? xph : x.h, FC_AXES(0), false);
            fc_array *g = reduce_op((rop)op, op == R_PROD ? xps : x.s, FC_AXES(0), false);
            compare(h, g, tol_gpu(fc_array_dtype(h)), "%s %s: %s over the split axis", tag, tn,
                    rop_names[op]);
        }
        fc_shard_stats st = stats(sc, false);
        cr_expect(st.allreduces >= 4, "%s: all-reduces counted (%llu)", tag, (unsigned long long)st.allreduces);
        if (t == FC_F16) continue;
        /* matmul layouts */
        void *ad = rand_data(t, (size_t)(R * K), D_SIGNED);
        pair a = input_data(t, FC_SHAPE(R, K), ad), b = input(t, FC_SHAPE(K, C));
        /* tests/test_gpu_lib.c's matmul rule (4 ulps relative, 16 K eps(compute) absolute for
         * operands below 2), plus the contracted split's N rounded partials of magnitude <= 4 K */
        tol tm = {4 * eps_of(t), 16 * (double)K * (t == FC_F64 ? 0x1p-53 : 0x1p-24) +
                                     (n + 2) * eps_of(t) * 4 * (double)K, T_PLAIN};
        fc_array *ref = fc_matmul(a.h, b.h);
        fc_array *ar = from_host_split(sc, t, FC_SHAPE(R, K), ad, 0);
        free(ad);
        compare(ref, fc_matmul(ar, b.s), tm, "%s %s: rows (from_shards) @ b", tag, tn);
        compare(ref, fc_matmul(a.s, fc_reshard(b.s, 1)), tm, "%s %s: a @ columns of b", tag, tn);
        compare(ref, fc_matmul(fc_reshard(a.s, 1), fc_reshard(b.s, 0)), tm,
                "%s %s: contracted axis split", tag, tn);
        pair a3 = input(t, FC_SHAPE(n + 3, 17, K)), b3 = input(t, FC_SHAPE(n + 3, K, 9));
        compare(fc_matmul(a3.h, b3.h), fc_matmul(fc_reshard(a3.s, 0), b3.s), tm,
                "%s %s: batched, batch split", tag, tn);
        /* reshard, gather, parts */
        fc_array *y = fc_exp(fc_mul(x.s, fc_f64(sc, 0.25))), *yh = fc_exp(fc_mul(x.h, fc_f64(hc, 0.25)));
        for (int ax = -1; ax < 2; ax++)
            compare(yh, fc_reshard(y, ax), tol_gpu(t), "%s %s: reshard(%d)", tag, tn, ax);
        compare(yh, fc_gather(y, n - 1), tol_gpu(t), "%s %s: gather onto the last shard", tag, tn);
        compare(fc_sum(yh, FC_AXES(0), false), fc_sum(fc_reshard(y, 1), FC_AXES(0), false), tol_gpu(t),
                "%s %s: sum over 0 of split(1)", tag, tn);
        /* random creation */
        compare(fc_random_uniform(hc, t, FC_SHAPE(R, C), 5), fc_random_uniform(sc, t, FC_SHAPE(R, C), 5),
                EXACT, "%s %s: random_uniform", tag, tn);
        compare(fc_sum(fc_random_uniform(hc, t, FC_SHAPE(R, C), 6), FC_AXES(0), false),
                fc_sum(fc_random_uniform(sc, t, FC_SHAPE(R, C), 6), FC_AXES(0), false), tol_gpu(t),
                "%s %s: sum over 0 of random_uniform", tag, tn);
        compare(fc_arange(hc, t, 0, 1000, 1), fc_arange(sc, t, 0, 1000, 1), EXACT, "%s %s: arange", tag, tn);
    }
    /* integers exactly */
    pair xi = input(FC_I32, FC_SHAPE(R, C));
    compare(fc_sum(xi.h, FC_AXES(0), false), fc_sum(xi.s, FC_AXES(0), false), EXACT, "%s i32: sum over 0", tag);
    compare(fc_max(xi.h, FC_AXES(0), false), fc_max(xi.s, FC_AXES(0), false), EXACT, "%s i32: max over 0", tag);
    compare(fc_argmin(xi.h, 0, false), fc_argmin(xi.s, 0, false), EXACT, "%s i32: argmin over 0", tag);
    compare(fc_matmul(xi.h, fc_transpose(xi.h)), fc_matmul(xi.s, fc_transpose(xi.s)), EXACT,
            "%s i32: x @ x.T", tag);
    fc_scope_close(s2);
    fc_scope_close(s1);
}

TestSuite(shard_gpu, .init = setup, .fini = teardown);

Test(shard_gpu, sharded_cuda_context_matches_the_host) {
    SKIP_WITHOUT_GPU("sharded_cuda_context_matches_the_host");
    bool want_nccl;
    sc = gpu_sharded(&want_nccl);
    gpu_programs(want_nccl ? "NCCL" : "devices {0, 0}");
    fc_shard_stats st = stats(sc, false);
    cr_expect_eq(st.nccl, want_nccl ? 1 : 0, "collectives on NCCL: %d (want %d; FUSEC_LOG=shard "
                 "says why not)", st.nccl, want_nccl);
    cr_expect(st.ms >= 0);
    for (int r = 0; r < fc_ctx_shards(sc); r++)
        cr_expect_eq(fc_ctx_backend(fc_ctx_shard(sc, r)), FC_BACKEND_CUDA);
}

Test(shard_gpu, bad_device_lists) {
    SKIP_WITHOUT_GPU("bad_device_lists");
    fc_ctx_options o;
    memset(&o, 0, sizeof o);
    o.backend = FC_BACKEND_CUDA;
    o.shards = 2;
    const int bad[] = {0, 9999}, neg[] = {-1, 0};
    fc_ctx *c = (fc_ctx *)&o;
    o.devices = bad;
    cr_expect_eq(fc_ctx_create(&c, &o), FC_ERR_INVALID, "device 9999");
    cr_expect_null(c);
    c = (fc_ctx *)&o;
    o.devices = neg;
    cr_expect_eq(fc_ctx_create(&c, &o), FC_ERR_INVALID, "device -1");
    cr_expect_null(c);
    int ndev = 0;
    cr_assert_eq(fc_device_count(&ndev), FC_OK);
    o.devices = NULL;
    o.shards = ndev + 1; /* devices 0 .. ndev: one too many */
    c = (fc_ctx *)&o;
    cr_expect_eq(fc_ctx_create(&c, &o), FC_ERR_INVALID, "%d shards over %d devices", ndev + 1, ndev);
    cr_expect_null(c);
}

Test(shard_gpu, host_staged_collectives_give_the_same_results) {
    SKIP_WITHOUT_GPU("host_staged_collectives_give_the_same_results");
    cr_assert_eq(setenv("FUSEC_SHARD_COMM", "host", 1), 0);
    bool want_nccl;
    sc = gpu_sharded(&want_nccl);
    gpu_programs("FUSEC_SHARD_COMM=host");
    fc_shard_stats st = stats(sc, false);
    cr_expect_eq(st.nccl, 0, "FUSEC_SHARD_COMM=host: nccl %d", st.nccl);
    unsetenv("FUSEC_SHARD_COMM");
}

/* The child's side of the fault test: returns its exit status (0: as wanted). CUDA is first
 * touched here, in the child, so the parent never forks a process that holds a CUDA context. */
static int fault_child(void) {
    int ndev = 0;
    if (fc_device_count(&ndev) != FC_OK || ndev < 1) return 77;
    fc_ctx_options o;
    memset(&o, 0, sizeof o);
    o.backend = FC_BACKEND_CUDA;
    static const int same[] = {0, 0};
    if (ndev >= 2) o.shards = FC_SHARDS_ALL;
    else o.shards = 2, o.devices = same;
    fc_ctx *c = NULL;
    if (fc_ctx_create(&c, &o) != FC_OK) return 10;
    fc_scope *s = fc_scope_open(c);
    fc_array *x = fc_random_uniform(c, FC_F32, FC_SHAPE(4096, 256), 3);
    fc_array *y = softmax(x, 0);
    float v[4];
    if (fc_read(y, v, 0, 4) != FC_OK) {
        fprintf(stderr, "fault child: the first softmax failed: %s\n", fc_errmsg(c));
        return 11;
    }
    fc_status st = fcr_test_fault(fc_ctx_shard(c, 1));
    if (st == FC_OK) {
        fprintf(stderr, "fault child: fcr_test_fault returned FC_OK\n");
        return 12;
    }
    /* a softmax over the split axis on new data: it must fail, not hang */
    fc_array *x2 = fc_random_uniform(c, FC_F32, FC_SHAPE(4096, 256), 4);
    fc_array *y2 = softmax(fc_mul(x2, fc_f64(c, 2.0)), 0);
    st = fc_read(y2, v, 0, 4);
    if (st == FC_OK) {
        fprintf(stderr, "fault child: the softmax after the fault succeeded\n");
        return 13;
    }
    const char *want = ndev >= 2 ? "shard 1" : "shard ";
    if (!strstr(fc_errmsg(c), want)) {
        fprintf(stderr, "fault child: the error '%s' does not name '%s'\n", fc_errmsg(c), want);
        return 14;
    }
    /* every later call fails, naming the shard */
    fc_array *z = fc_sum(fc_exp(x), FC_AXES(1), false);
    st = fc_eval(c, &z, 1);
    if (st == FC_OK || !strstr(fc_errmsg(c), want)) {
        fprintf(stderr, "fault child: a later eval gave %s: '%s'\n", fc_strerror(st), fc_errmsg(c));
        return 15;
    }
    st = fc_ctx_synchronize(c);
    if (st == FC_OK || !strstr(fc_errmsg(c), want)) {
        fprintf(stderr, "fault child: a later synchronize gave %s: '%s'\n", fc_strerror(st),
                fc_errmsg(c));
        return 16;
    }
    fc_array *r = fc_reshard(x, 1);
    if (fc_array_status(r) == FC_OK) {
        fprintf(stderr, "fault child: a reshard after the fault succeeded\n");
        return 17;
    }
    int ax;
    st = fc_sharding(x, &ax);
    if (st == FC_OK || !strstr(fc_errmsg(c), want)) {
        fprintf(stderr, "fault child: sharding of an unevaluated array gave %s: '%s'\n",
                fc_strerror(st), fc_errmsg(c));
        return 18;
    }
    /* y was evaluated before the fault, split over the shards: gathering it needs shard 1 */
    fc_array *g = fc_gather(y, 0);
    if (fc_array_status(g) == FC_OK) {
        fprintf(stderr, "fault child: a gather after the fault succeeded\n");
        return 19;
    }
    if (!strstr(fc_array_errmsg(g), "shard")) {
        fprintf(stderr, "fault child: the gather's error '%s' names no shard\n", fc_array_errmsg(g));
        return 20;
    }
    fc_scope_close(s);
    fc_ctx_destroy(c); /* no hang on the way out */
    return 0;
}

/* A fresh process: a new sharded context works. */
static int fresh_child(void) {
    int ndev = 0;
    if (fc_device_count(&ndev) != FC_OK || ndev < 1) return 77;
    fc_ctx_options o;
    memset(&o, 0, sizeof o);
    o.backend = FC_BACKEND_CUDA;
    static const int same[] = {0, 0};
    if (ndev >= 2) o.shards = FC_SHARDS_ALL;
    else o.shards = 2, o.devices = same;
    fc_ctx *c = NULL, *h = NULL;
    if (fc_ctx_create(&c, &o) != FC_OK) return 30;
    memset(&o, 0, sizeof o);
    o.backend = FC_BACKEND_HOST;
    if (fc_ctx_create(&h, &o) != FC_OK) return 31;
    fc_array *ys = fc_sum(softmax(fc_random_uniform(c, FC_F64, FC_SHAPE(1000, 8), 3), 0), FC_AXES(0), false);
    fc_array *yh = fc_sum(softmax(fc_random_uniform(h, FC_F64, FC_SHAPE(1000, 8), 3), 0), FC_AXES(0), false);
    double a[8], b[8];
    if (fc_read(ys, a, 0, 8) != FC_OK) {
        fprintf(stderr, "fresh child: %s\n", fc_errmsg(c));
        return 32;
    }
    if (fc_read(yh, b, 0, 8) != FC_OK) return 33;
    for (int i = 0; i < 8; i++)
        if (fabs(a[i] - b[i]) > 1e-9 || fabs(a[i] - 1.0) > 1e-9) {
            fprintf(stderr, "fresh child: column %d sums to %.17g (host %.17g)\n", i, a[i], b[i]);
            return 34;
        }
    fc_release(ys);
    fc_release(yh);
    fc_ctx_destroy(c);
    fc_ctx_destroy(h);
    return 0;
}

/* Runs f in a child process with a 60 s alarm; its exit status, or -signal. */
static int run_child(int (*f)(void)) {
    fflush(NULL);
    pid_t pid = fork();
    cr_assert_neq(pid, -1, "fork: %s", strerror(errno));
    if (pid == 0) {
        alarm(60);
        _exit(f());
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    if (WIFSIGNALED(status)) return -WTERMSIG(status);
    return WEXITSTATUS(status);
}

static int probe_gpu(void) { return tu_gpu_available() ? 0 : 77; }

/* No suite setup here: the parent must not touch CUDA before it forks. */
TestSuite(shard_gpu_fault);

Test(shard_gpu_fault, a_faulting_shard_fails_the_context_without_a_hang) {
    int probe = run_child(probe_gpu);
    if (probe == 77) {
        skip_msg("a_faulting_shard_fails_the_context_without_a_hang");
        cr_skip_test("no CUDA device: the sharded fault test is skipped");
    }
    cr_assert_eq(probe, 0, "the GPU probe child ended with %d", probe);
    int st = run_child(fault_child);
    cr_assert_neq(st, -SIGALRM, "the sharded context hung after a shard's fault (60 s alarm)");
    cr_assert(st >= 0, "the child died of signal %d", -st);
    cr_assert_eq(st, 0, "the fault child exited %d (see its stderr)", st);
    st = run_child(fresh_child);
    cr_assert_eq(st, 0, "a new sharded context in a new process: exit %d", st);
}
