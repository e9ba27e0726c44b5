/*
 * graph/creation.c - arrays from host data, constants, ranges, eye, random, weak scalars.
 *
 * Filled arrays are a 0-d CONST broadcast to the shape: the constant becomes a kernel argument
 * (or an immediate) and the broadcast is index arithmetic, so zeros(...) never costs memory
 * until something stores it.
 */
#include "graph.h"

#include <math.h>
#include <string.h>

static bool dtype_ok(fc_dtype t) { return (unsigned)t < FC_DTYPE_COUNT; }

/* Validates a dtype and shape for `opname`; on error returns a poison in *bad. */
static bool check_dtype_shape(fc_ctx *ctx, const char *opname, fc_dtype dtype, fc_shape shape,
                              fc_array **bad) {
    if (!dtype_ok(dtype)) {
        *bad = fcg_poison(ctx, FC_ERR_DTYPE, "%s: invalid dtype %d", opname, (int)dtype);
        return false;
    }
    if (shape.ndim < 0 || shape.ndim > FC_MAX_DIMS) {
        *bad = fcg_poison(ctx, FC_ERR_SHAPE, "%s: %d dimensions (at most %d are supported)",
                          opname, shape.ndim, FC_MAX_DIMS);
        return false;
    }
    for (int i = 0; i < shape.ndim; i++) {
        if (shape.dim[i] < 0) {
            char sh[200];
            *bad = fcg_poison(ctx, FC_ERR_SHAPE, "%s: negative extent in shape %s", opname,
                              fcg_shape_str(sh, shape.ndim, shape.dim));
            return false;
        }
    }
    if (fcg_shape_too_large(shape.ndim, shape.dim, dtype)) {
        char sh[200];
        *bad = fcg_poison(ctx, FC_ERR_SHAPE, "%s: shape %s of %s is too large", opname,
                          fcg_shape_str(sh, shape.ndim, shape.dim), fc_dtype_name(dtype));
        return false;
    }
    return true;
}

/* Range of each integer dtype, for converting a double to it exactly. */
static bool int_range(fc_dtype t, double *lo, double *hi) {
    switch (t) {
    case FC_BOOL: *lo = -INFINITY; *hi = INFINITY; return true;
    case FC_I8: *lo = INT8_MIN; *hi = INT8_MAX; return true;
    case FC_I16: *lo = INT16_MIN; *hi = INT16_MAX; return true;
    case FC_I32: *lo = INT32_MIN; *hi = INT32_MAX; return true;
    case FC_I64: *lo = -0x1p63; *hi = 0x1p63; return true; /* hi exclusive */
    case FC_U8: *lo = 0; *hi = UINT8_MAX; return true;
    case FC_U16: *lo = 0; *hi = UINT16_MAX; return true;
    case FC_U32: *lo = 0; *hi = UINT32_MAX; return true;
    case FC_U64: *lo = 0; *hi = 0x1p64; return true;
    default: return false;
    }
}

/* Fills p with `value` (re, im) stored canonically for dtype; an error message otherwise. */
static fc_status const_value(fc_ctx *ctx, const char *opname, fc_dtype dtype, double re,
                             double im, fcg_params *p) {
    memset(p, 0, sizeof *p);
    double lo, hi;
    if (fcg_is_complex(dtype)) {
        p->re = dtype == FC_C64 ? (double)(float)re : re;
        p->im = dtype == FC_C64 ? (double)(float)im : im;
        return FC_OK;
    }
    if (im != 0)
        return fcg_error(ctx, FC_ERR_DTYPE, "%s: complex value (%g%+gj) for dtype %s", opname, re,
                         im, fc_dtype_name(dtype));
    if (int_range(dtype, &lo, &hi)) {
        if (dtype == FC_BOOL) {
            p->ival = re != 0;
            return FC_OK;
        }
        if (!isfinite(re) || re != trunc(re) || re < lo || re > hi ||
            ((dtype == FC_I64 || dtype == FC_U64) && re >= hi))
            return fcg_error(ctx, FC_ERR_INVALID, "%s: value %.17g is not representable in %s",
                             opname, re, fc_dtype_name(dtype));
        p->ival = dtype == FC_U64 ? (int64_t)(uint64_t)re : (int64_t)re;
        return FC_OK;
    }
    switch (dtype) {
    case FC_F16: p->re = fcg_f16_to_f32(fcg_f32_to_f16((float)re)); break;
    case FC_BF16: p->re = fcg_bf16_to_f32(fcg_f32_to_bf16((float)re)); break;
    case FC_F32: p->re = (double)(float)re; break;
    default: p->re = re; break;
    }
    return FC_OK;
}

static fc_array *make_const(fc_ctx *ctx, const char *opname, fc_dtype dtype, bool weak, double re,
                            double im) {
    fcg_params p;
    fc_status st = const_value(ctx, opname, dtype, re, im, &p);
    if (st != FC_OK) return fcg_poison_ctx(ctx, st);
    return fcg_make(ctx, FCG_OP_CONST, dtype, dtype, weak, 0, NULL, 0, NULL, &p);
}

/* A filled array: a 0-d CONST, broadcast unless the shape is 0-d. */
static fc_array *filled(fc_ctx *ctx, const char *opname, fc_dtype dtype, fc_shape shape, double re,
                        double im) {
    if (!ctx) return NULL;
    fc_array *bad;
    if (!check_dtype_shape(ctx, opname, dtype, shape, &bad)) return bad;
    fcg_params p;
    fc_status st = const_value(ctx, opname, dtype, re, im, &p);
    if (st != FC_OK) return fcg_poison_ctx(ctx, st);
    fc_array *c = fcg_node(ctx, FCG_OP_CONST, dtype, dtype, false, 0, NULL, 0, NULL, &p);
    if (!c || shape.ndim == 0) return fcg_ret(ctx, c);
    fc_array *b = fcg_node(ctx, FCG_OP_BROADCAST, dtype, dtype, false, shape.ndim, shape.dim, 1,
                           &c, NULL);
    fcg_release(c);
    return fcg_ret(ctx, b);
}

fc_array *fc_zeros(fc_ctx *ctx, fc_dtype dtype, fc_shape shape) {
    return filled(ctx, "zeros", dtype, shape, 0, 0);
}
fc_array *fc_ones(fc_ctx *ctx, fc_dtype dtype, fc_shape shape) {
    return filled(ctx, "ones", dtype, shape, 1, 0);
}
fc_array *fc_empty(fc_ctx *ctx, fc_dtype dtype, fc_shape shape) {
    return filled(ctx, "empty", dtype, shape, 0, 0);
}
fc_array *fc_full(fc_ctx *ctx, fc_dtype dtype, fc_shape shape, double value) {
    return filled(ctx, "full", dtype, shape, value, 0);
}
fc_array *fc_full_complex(fc_ctx *ctx, fc_dtype dtype, fc_shape shape, double re, double im) {
    if (ctx && dtype_ok(dtype) && !fcg_is_complex(dtype))
        return fcg_poison(ctx, FC_ERR_DTYPE, "full_complex: dtype %s is not complex",
                          fc_dtype_name(dtype));
    return filled(ctx, "full_complex", dtype, shape, re, im);
}
fc_array *fc_scalar(fc_ctx *ctx, fc_dtype dtype, double value) {
    return filled(ctx, "scalar", dtype, FC_SCALAR, value, 0);
}

fc_array *fc_f64(fc_ctx *ctx, double value) {
    return ctx ? make_const(ctx, "f64", FC_F64, true, value, 0) : NULL;
}
fc_array *fc_c128(fc_ctx *ctx, double re, double im) {
    return ctx ? make_const(ctx, "c128", FC_C128, true, re, im) : NULL;
}
fc_array *fc_bool(fc_ctx *ctx, bool value) {
    return ctx ? make_const(ctx, "bool", FC_BOOL, true, value, 0) : NULL;
}
fc_array *fc_i64(fc_ctx *ctx, int64_t value) {
    if (!ctx) return NULL;
    fcg_params p;
    memset(&p, 0, sizeof p);
    p.ival = value; /* exact: no trip through double */
    return fcg_make(ctx, FCG_OP_CONST, FC_I64, FC_I64, true, 0, NULL, 0, NULL, &p);
}

static fc_array *like(fc_array *a, const char *opname, double value) {
    fc_array *early;
    fc_ctx *ctx = fcg_begin(opname, 1, &a, &early);
    if (!ctx || early) return early;
    fc_shape s = fc_array_shape(a);
    return filled(ctx, opname, (fc_dtype)a->dtype, s, value, 0);
}
fc_array *fc_zeros_like(fc_array *a) { return like(a, "zeros_like", 0); }
fc_array *fc_ones_like(fc_array *a) { return like(a, "ones_like", 1); }
fc_array *fc_empty_like(fc_array *a) { return like(a, "empty_like", 0); }
fc_array *fc_full_like(fc_array *a, double value) { return like(a, "full_like", value); }

fc_array *fc_from_host(fc_ctx *ctx, fc_dtype dtype, fc_shape shape, const void *data) {
    if (!ctx) return NULL;
    fc_array *bad;
    if (!check_dtype_shape(ctx, "from_host", dtype, shape, &bad)) return bad;
    size_t bytes = fcg_numel(shape.ndim, shape.dim) * fc_dtype_size(dtype);
    if (!data && bytes)
        return fcg_poison(ctx, FC_ERR_NULL, "from_host: data is NULL for a non-empty array");
    fc_array *a = fcg_node(ctx, FCG_OP_DATA, dtype, dtype, false, shape.ndim, shape.dim, 0, NULL,
                           NULL);
    if (!a) return fcg_ret(ctx, NULL);
    if (!(a->host = fcg_malloc(ctx, bytes))) {
        fcg_release(a);
        char sh[200];
        return fcg_poison(ctx, FC_ERR_NOMEM, "from_host: out of memory for %s %s",
                          fcg_shape_str(sh, shape.ndim, shape.dim), fc_dtype_name(dtype));
    }
    a->host_bytes = bytes;
    if (bytes) memcpy(a->host, data, bytes);
    return fcg_ret(ctx, a);
}

fc_array *fcg_random_draw(fc_ctx *ctx, const char *name, int mode, fc_dtype dtype, fc_shape shape,
                          uint64_t seed, uint64_t stream, int64_t low, int64_t high) {
    if (!ctx) return NULL;
    fc_array *bad;
    if (!check_dtype_shape(ctx, name, dtype, shape, &bad)) return bad;
    if (mode == FCG_RANDOM_INTEGERS) {
        if (!fcg_is_int(dtype))
            return fcg_poison(ctx, FC_ERR_DTYPE, "%s: dtype %s is not an integer dtype", name,
                              fc_dtype_name(dtype));
        /* both bounds must be values of dtype; high may be one past its largest */
        if (low >= high || low < fcg_pyint_min(dtype) || high > fcg_pyint_max(dtype) + 1)
            return fcg_poison(ctx, FC_ERR_VALUE, "%s: [%lld, %lld) is not a non-empty range of "
                              "%s values", name, (long long)low, (long long)high,
                              fc_dtype_name(dtype));
    } else if (!fcg_is_inexact(dtype)) {
        return fcg_poison(ctx, FC_ERR_DTYPE, "%s: dtype %s is not floating point", name,
                          fc_dtype_name(dtype));
    }
    fcg_params p;
    memset(&p, 0, sizeof p);
    p.ival = (int64_t)seed;
    p.count = (int64_t)stream;
    p.mode = (uint8_t)mode;
    if (mode == FCG_RANDOM_INTEGERS) {
        p.a[0] = low;
        p.b[0] = (int64_t)((uint64_t)high - (uint64_t)low); /* the range, as unsigned */
    }
    return fcg_make(ctx, FCG_OP_RANDOM, dtype, dtype, false, shape.ndim, shape.dim, 0, NULL, &p);
}

fc_array *fc_random_uniform(fc_ctx *ctx, fc_dtype dtype, fc_shape shape, uint64_t seed) {
    return fcg_random_draw(ctx, "random_uniform", FCG_RANDOM_UNIFORM, dtype, shape, seed, 0, 0, 0);
}

fc_array *fc_arange(fc_ctx *ctx, fc_dtype dtype, double start, double stop, double step) {
    if (!ctx) return NULL;
    fc_array *bad;
    if (!check_dtype_shape(ctx, "arange", dtype, FC_SCALAR, &bad)) return bad;
    if (!(step != 0) || !isfinite(step) || !isfinite(start) || !isfinite(stop))
        return fcg_poison(ctx, FC_ERR_INVALID,
                          "arange: start %g, stop %g and step %g must be finite, step non-zero",
                          start, stop, step);
    double n = ceil((stop - start) / step);
    if (n < 0) n = 0;
    if (n > 0x1p52)
        return fcg_poison(ctx, FC_ERR_SHAPE, "arange: %g elements are too many", n);
    if (dtype == FC_BOOL && n > 2)
        return fcg_poison(ctx, FC_ERR_DTYPE, "arange: bool arrays hold at most 2 elements");
    fcg_params p;
    memset(&p, 0, sizeof p);
    p.re = start;
    p.im = step;
    int64_t len = (int64_t)n;
    return fcg_make(ctx, FCG_OP_ARANGE, dtype, dtype, false, 1, &len, 0, NULL, &p);
}

fc_array *fc_linspace(fc_ctx *ctx, fc_dtype dtype, double start, double stop, int64_t num,
                      bool endpoint) {
    if (!ctx) return NULL;
    fc_array *bad;
    if (!check_dtype_shape(ctx, "linspace", dtype, FC_SHAPE(num), &bad)) return bad;
    if (!isfinite(start) || !isfinite(stop))
        return fcg_poison(ctx, FC_ERR_INVALID, "linspace: start %g and stop %g must be finite",
                          start, stop);
    fcg_params p;
    memset(&p, 0, sizeof p);
    p.re = start;
    p.im = stop;
    p.count = num;
    p.flag = endpoint;
    return fcg_make(ctx, FCG_OP_LINSPACE, dtype, dtype, false, 1, &num, 0, NULL, &p);
}

fc_array *fc_eye(fc_ctx *ctx, fc_dtype dtype, int64_t n, int64_t m, int64_t k) {
    if (!ctx) return NULL;
    fc_array *bad;
    if (!check_dtype_shape(ctx, "eye", dtype, FC_SHAPE(n, m), &bad)) return bad;
    fcg_params p;
    memset(&p, 0, sizeof p);
    p.ival = k;
    int64_t shape[2] = {n, m};
    return fcg_make(ctx, FCG_OP_EYE, dtype, dtype, false, 2, shape, 0, NULL, &p);
}
