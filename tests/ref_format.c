/*
 * tests/ref_format.c - the reader of the NumPy reference files (see ref_format.h).
 */
#include <criterion/criterion.h>

#include "ref_format.h"
#include "test_util.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- tokens ----------------------------------------------------------------------------- */

void reff_open(reff_tokens *t, const char *name) {
    snprintf(t->path, sizeof t->path, "%s/%s", FUSEC_TEST_DATA_DIR, name);
    size_t len;
    t->buf = tu_read_file(t->path, &len);
    cr_assert_gt(len, 0, "%s is empty", t->path);
    t->p = t->buf;
}

void reff_close(reff_tokens *t) { free(t->buf); }

const char *reff_tok(reff_tokens *t) {
    for (;;) {
        while (*t->p == ' ' || *t->p == '\n' || *t->p == '\t' || *t->p == '\r') t->p++;
        if (*t->p != '#') break;
        while (*t->p && *t->p != '\n') t->p++;
    }
    if (!*t->p) return NULL;
    char *start = t->p;
    while (*t->p && *t->p != ' ' && *t->p != '\n' && *t->p != '\t' && *t->p != '\r') t->p++;
    if (*t->p) *t->p++ = '\0';
    return start;
}

const char *reff_need(reff_tokens *t) {
    const char *s = reff_tok(t);
    cr_assert_not_null(s, "%s: unexpected end of file", t->path);
    return s;
}

long long reff_need_int(reff_tokens *t) {
    const char *s = reff_need(t);
    char *end;
    long long v = strtoll(s, &end, 10);
    cr_assert(*end == '\0', "%s: bad integer '%s'", t->path, s);
    return v;
}

unsigned long long reff_need_hex(reff_tokens *t) {
    const char *s = reff_need(t);
    char *end;
    unsigned long long v = strtoull(s, &end, 16);
    cr_assert(*end == '\0', "%s: bad hex '%s'", t->path, s);
    return v;
}

double reff_hex_double(unsigned long long bits) {
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

double reff_need_hexdouble(reff_tokens *t) { return reff_hex_double(reff_need_hex(t)); }

const char *const reff_dtype_names[FC_DTYPE_COUNT] = {
    "bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64",
    "f16", "bf16", "f32", "f64", "c64", "c128",
};
const size_t reff_dtype_sizes[FC_DTYPE_COUNT] = {1, 1, 2, 4, 8, 1, 2, 4, 8, 2, 2, 4, 8, 8, 16};

fc_dtype reff_need_dtype(reff_tokens *t) {
    const char *s = reff_need(t);
    for (int d = 0; d < FC_DTYPE_COUNT; d++)
        if (strcmp(s, reff_dtype_names[d]) == 0) return (fc_dtype)d;
    cr_assert_fail("%s: unknown dtype '%s'", t->path, s);
    return FC_BOOL;
}

fc_shape reff_need_shape(reff_tokens *t) {
    fc_shape sh = {0, {0}};
    sh.ndim = (int)reff_need_int(t);
    cr_assert(sh.ndim >= 0 && sh.ndim <= FC_MAX_DIMS);
    for (int d = 0; d < sh.ndim; d++) sh.dim[d] = reff_need_int(t);
    return sh;
}

size_t reff_shape_numel(fc_shape sh) {
    size_t n = 1;
    for (int d = 0; d < sh.ndim; d++) n *= (size_t)sh.dim[d];
    return n;
}

void *reff_need_values(reff_tokens *t, fc_dtype dt, size_t numel) {
    size_t es = reff_dtype_sizes[dt];
    unsigned char *buf = malloc(numel * es + 1);
    cr_assert_not_null(buf);
    bool cx = dt == FC_C64 || dt == FC_C128;
    for (size_t i = 0; i < numel; i++)
        for (int part = 0; part < (cx ? 2 : 1); part++) {
            unsigned long long v = reff_need_hex(t);
            size_t w = cx ? es / 2 : es;
            memcpy(buf + i * es + (size_t)part * w, &v, w); /* little-endian host */
        }
    return buf;
}

fc_array *reff_need_reg(reff_tokens *t, fc_array **regs, int nreg) {
    const char *s = reff_need(t);
    cr_assert(s[0] == '%', "%s: expected a register, got '%s'", t->path, s);
    int i = atoi(s + 1);
    cr_assert(i >= 0 && i < nreg, "%s: bad register %s", t->path, s);
    return regs[i];
}

fc_axes reff_need_axes(reff_tokens *t) {
    const char *s = reff_need(t);
    if (strcmp(s, "all") == 0) return FC_ALL;
    if (strcmp(s, "none") == 0) return FC_NO_AXES;
    fc_axes ax = {0, {0}};
    const char *p = s;
    while (*p) {
        char *end;
        ax.axis[ax.n++] = (int)strtol(p, &end, 10);
        cr_assert(end != p && ax.n <= FC_MAX_DIMS, "%s: bad axes '%s'", t->path, s);
        p = *end == ',' ? end + 1 : end;
    }
    return ax;
}

fc_status reff_need_status(reff_tokens *t) {
    static const struct {
        const char *name;
        fc_status st;
    } table[] = {{"FC_ERR_DTYPE", FC_ERR_DTYPE}, {"FC_ERR_VALUE", FC_ERR_VALUE},
                 {"FC_ERR_SHAPE", FC_ERR_SHAPE}, {"FC_ERR_INVALID", FC_ERR_INVALID},
                 {"FC_ERR_AXIS", FC_ERR_AXIS}, {"FC_ERR_INDEX", FC_ERR_INDEX},
                 {"FC_ERR_UNSUPPORTED", FC_ERR_UNSUPPORTED}, {"FC_ERR_LINALG", FC_ERR_LINALG}};
    const char *s = reff_need(t);
    for (size_t i = 0; i < sizeof table / sizeof *table; i++)
        if (strcmp(s, table[i].name) == 0) return table[i].st;
    cr_assert_fail("%s: unknown status %s", t->path, s);
    return FC_OK;
}

fc_array *reff_need_array(reff_tokens *t, fc_ctx *ctx) {
    fc_dtype dt = reff_need_dtype(t);
    fc_shape sh = reff_need_shape(t);
    void *data = reff_need_values(t, dt, reff_shape_numel(sh));
    fc_array *a = fc_from_host(ctx, dt, sh, data);
    free(data);
    cr_assert_eq(fc_array_status(a), FC_OK, "from_host: %s", fc_errmsg(ctx));
    return a;
}

fc_array *reff_need_weak(reff_tokens *t, fc_ctx *ctx) {
    const char *kind = reff_need(t);
    fc_array *w;
    if (strcmp(kind, "int") == 0) w = fc_i64(ctx, reff_need_int(t));
    else if (strcmp(kind, "float") == 0) w = fc_f64(ctx, reff_need_hexdouble(t));
    else if (strcmp(kind, "bool") == 0) w = fc_bool(ctx, reff_need_int(t) != 0);
    else {
        double re = reff_need_hexdouble(t);
        w = fc_c128(ctx, re, reff_need_hexdouble(t));
    }
    cr_assert(fc_array_is_weak(w), "a weak scalar is not weak");
    return w;
}

/* ---- checks ----------------------------------------------------------------------------- */

void reff_fail(reff_report *rep, const char *fmt, ...) {
    rep->failures++;
    if (rep->failures > REFF_MAX_REPORTS) return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const char *op = rep->opname ? rep->opname : "-";
    if (rep->file)
        cr_log_error("%s: case %s, op %s: %s", rep->file, rep->casename, op, msg);
    else
        cr_log_error("case %s, op %s: %s", rep->casename, op, msg);
}

/* IEEE half and bfloat16 to double, written here independently of the library. */
static double half_to_double(uint16_t h) {
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v;
    if (e == 0)
        v = ldexp(m, -24);
    else if (e == 31)
        v = m ? NAN : INFINITY;
    else
        v = ldexp(m + 1024, e - 25);
    return (h & 0x8000) ? -v : v;
}

static double bf16_to_double(uint16_t h) {
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* Real component `part` of element i as a double. */
static double real_at(fc_dtype dt, const unsigned char *p, size_t i, int part) {
    uint16_t h;
    float f;
    double d;
    switch (dt) {
    case FC_F16: memcpy(&h, p + i * 2, 2); return half_to_double(h);
    case FC_BF16: memcpy(&h, p + i * 2, 2); return bf16_to_double(h);
    case FC_F32: memcpy(&f, p + i * 4, 4); return f;
    case FC_F64: memcpy(&d, p + i * 8, 8); return d;
    case FC_C64: memcpy(&f, p + i * 8 + (size_t)part * 4, 4); return f;
    default: memcpy(&d, p + i * 16 + (size_t)part * 8, 8); return d;
    }
}

static bool close_enough(double got, double want, double rtol, double atol) {
    if (isnan(want)) return isnan(got);
    if (isnan(got)) return false;
    if (isinf(want) || isinf(got)) return got == want;
    if (rtol == 0 && atol == 0) return got == want; /* exact (+0 and -0 compare equal) */
    return fabs(got - want) <= atol + rtol * fabs(want);
}

/* A shape as NumPy writes it: (2, 3). */
static void shape_text(char *buf, size_t size, int ndim, const int64_t *dims) {
    size_t len = (size_t)snprintf(buf, size, "(");
    for (int d = 0; d < ndim && len < size; d++)
        len += (size_t)snprintf(buf + len, size - len, "%s%lld", d ? ", " : "", (long long)dims[d]);
    if (len < size) snprintf(buf + len, size - len, ")");
}

void reff_check_value(reff_report *rep, reff_tokens *t, fc_ctx *ctx, fc_array *a, double rtol,
                      double atol, bool compare) {
    fc_dtype dt = reff_need_dtype(t);
    fc_shape sh = reff_need_shape(t);
    size_t n = reff_shape_numel(sh), es = reff_dtype_sizes[dt];
    unsigned char *want = reff_need_values(t, dt, n), *buf = NULL;
    rep->checks++;
    if (!compare) goto done;
    if (fc_array_status(a) != FC_OK) {
        reff_fail(rep, "status %s: %s", fc_strerror(fc_array_status(a)), fc_array_errmsg(a));
        goto done;
    }
    if (fc_array_dtype(a) != dt) {
        reff_fail(rep, "dtype %s, NumPy says %s", reff_dtype_names[fc_array_dtype(a)],
                  reff_dtype_names[dt]);
        goto done;
    }
    fc_shape got = fc_array_shape(a);
    bool same = got.ndim == sh.ndim;
    for (int d = 0; same && d < sh.ndim; d++) same = got.dim[d] == sh.dim[d];
    if (!same) {
        char g[200], w[200];
        shape_text(g, sizeof g, got.ndim, got.dim);
        shape_text(w, sizeof w, sh.ndim, sh.dim);
        reff_fail(rep, "shape %s, NumPy says %s", g, w);
        goto done;
    }
    /* poisoned buffer with a guard zone after the elements */
    const size_t guard = 32;
    buf = malloc(n * es + guard);
    cr_assert_not_null(buf);
    memset(buf, 0xA5, n * es + guard);
    fc_status st = fc_read(a, buf, 0, (int64_t)n);
    if (st != FC_OK) {
        reff_fail(rep, "fc_read: %s (%s)", fc_strerror(st), fc_errmsg(ctx));
        goto done;
    }
    for (size_t i = 0; i < guard; i++)
        if (buf[n * es + i] != 0xA5) {
            reff_fail(rep, "fc_read wrote past the end");
            break;
        }
    bool is_real = dt >= FC_F16 && dt <= FC_F64, is_cx = dt == FC_C64 || dt == FC_C128;
    int bad = 0;
    for (size_t i = 0; i < n && bad < 3; i++) {
        if (is_real || is_cx) {
            for (int part = 0; part < (is_cx ? 2 : 1); part++) {
                double g = real_at(dt, buf, i, part), w = real_at(dt, want, i, part);
                if (!close_enough(g, w, rtol, atol)) {
                    reff_fail(rep, "element %zu%s: got %.17g, NumPy %.17g (rtol %g, atol %g)", i,
                              is_cx ? (part ? " imag" : " real") : "", g, w, rtol, atol);
                    bad++;
                    break;
                }
            }
        } else if (memcmp(buf + i * es, want + i * es, es) != 0) {
            unsigned long long g = 0, w = 0;
            memcpy(&g, buf + i * es, es);
            memcpy(&w, want + i * es, es);
            reff_fail(rep, "element %zu: got 0x%llx, NumPy 0x%llx", i, g, w);
            bad++;
        }
    }
done:
    free(buf);
    free(want);
}
