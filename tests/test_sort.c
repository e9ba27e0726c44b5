/*
 * tests/test_sort.c - sorting on the host reference backend: fc_sort / fc_argsort (graph/sort.c)
 * and the functions built on them (graph/sort_ops.c): fc_partition / fc_argpartition,
 * fc_unique, and the generator's fc_rng_permutation / shuffle / choice.
 *
 *   - against NumPy 2: tests/data/sort_numpy.txt (tests/gen_sort.py, whose docstring gives the
 *     format): every dtype with many ties, NaNs of both signs and several payloads, -0.0 mixed
 *     with 0.0, infinities, complex numbers with NaN in either part, empty arrays ([0], [3, 0],
 *     [0, 4]), size 1, 1-d to 3-d along every axis (negative ones too) and the flattened
 *     array, many short rows (contiguous and strided) and rows longer than 4096. sort is
 *     compared bit for bit (so the stability of equal elements with different bits is), argsort
 *     exactly. partition and argpartition must be the stable sort, hold the partition property
 *     and agree with NumPy's kth element; unique's four results exactly; the permutations and
 *     choices against fusec's documented layout (computed in Python); the errors NumPy raises
 *     through the .fc spelling;
 *   - rows of 4097 to 10000 elements of every dtype (too big for the table) by their
 *     properties: sorted in NumPy's order, argsort a permutation that takes the input to the
 *     sort, equal elements in their original order;
 *   - the errors of the C API (an axis out of range, a 0-d array along an axis, a Python
 *     scalar, NULL, a poisoned input), argsort's 0-d quirk (NumPy's: a 0-d array is [1]);
 *   - permutations: a permutation, the same for a seed in another context, different for
 *     another stream, one stream per call; choices distinct and in range; shuffle keeps the
 *     multiset; the .fc spellings of all of these (the same graphs as the C calls; unique's
 *     list of results);
 *   - the composites' temporaries die with their scope (flat host memory over a loop).
 * Every output is read into a buffer poisoned with 0xA5 bytes first.
 */
#include <criterion/criterion.h>

#include "fusec.h"
#include "graph.h"
#include "test_util.h"
#include "test_values.h"

#include "ref_format.c"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static fc_ctx *ctx;

static void setup(void) { ctx = tu_host_ctx(); }

static void teardown(void) {
    fc_ctx_destroy(ctx);
    ctx = NULL;
}

TestSuite(sort, .init = setup, .fini = teardown);

/* ---- helpers ---------------------------------------------------------------------------- */

/* All of a's elements (n of them) into a buffer poisoned with 0xA5 bytes first (and a guard
 * byte after it, which must stay); its status must be OK. */
static unsigned char *read_all(fc_array *a, size_t *n_out) {
    cr_assert_eq(fc_array_status(a), FC_OK, "%s", fc_array_errmsg(a));
    size_t n = (size_t)fc_array_size(a), es = fc_dtype_size(fc_array_dtype(a));
    unsigned char *buf = malloc(n * es + 1);
    cr_assert_not_null(buf);
    memset(buf, 0xA5, n * es + 1);
    cr_assert_eq(fc_read(a, buf, 0, (int64_t)n), FC_OK, "fc_read: %s", fc_errmsg(ctx));
    cr_assert_eq(buf[n * es], 0xA5, "fc_read wrote past the end");
    *n_out = n;
    return buf;
}

static bool is_signed_int(fc_dtype t) { return t >= FC_I8 && t <= FC_I64; }
static bool is_unsigned(fc_dtype t) { return t == FC_BOOL || (t >= FC_U8 && t <= FC_U64); }

static int64_t int_at(const unsigned char *p, fc_dtype t, size_t i) {
    size_t es = fc_dtype_size(t);
    if (es == 1) return (int8_t)p[i];
    if (es == 2) { int16_t v; memcpy(&v, p + 2 * i, 2); return v; }
    if (es == 4) { int32_t v; memcpy(&v, p + 4 * i, 4); return v; }
    int64_t v;
    memcpy(&v, p + 8 * i, 8);
    return v;
}

static uint64_t uint_at(const unsigned char *p, fc_dtype t, size_t i) {
    size_t es = fc_dtype_size(t);
    uint64_t v = 0;
    memcpy(&v, p + es * i, es); /* little-endian */
    return v;
}

/* Element i < element j in NumPy's sort order (npysort's LT: NaN after every number; complex
 * by real part, then imaginary part, [R + Rj, R + nanj, nan + Rj, nan + nanj]). */
static bool np_less(const unsigned char *p, fc_dtype t, size_t i, size_t j) {
    if (is_unsigned(t)) return uint_at(p, t, i) < uint_at(p, t, j);
    if (is_signed_int(t)) return int_at(p, t, i) < int_at(p, t, j);
    if (!fcg_is_complex(t)) {
        double a = tv_value_at(p, t, i, 0), b = tv_value_at(p, t, j, 0);
        return a < b || (isnan(b) && !isnan(a));
    }
    double ar = tv_value_at(p, t, i, 0), ai = tv_value_at(p, t, i, 1);
    double br = tv_value_at(p, t, j, 0), bi = tv_value_at(p, t, j, 1);
    if (ar < br) return !isnan(ai) || isnan(bi);
    if (ar > br) return isnan(bi) && !isnan(ai);
    if (ar == br || (isnan(ar) && isnan(br))) return ai < bi || (isnan(bi) && !isnan(ai));
    return isnan(br);
}

/* Elements i of p and j of q (both dtype t) are equal in the sort's order (neither first). */
static bool np_equiv2(const unsigned char *p, size_t i, const unsigned char *q, size_t j,
                      fc_dtype t) {
    size_t es = fc_dtype_size(t);
    unsigned char two[32];
    memcpy(two, p + i * es, es);
    memcpy(two + es, q + j * es, es);
    return !np_less(two, t, 0, 1) && !np_less(two, t, 1, 0);
}

static bool same_shape(fc_shape a, fc_shape b) {
    if (a.ndim != b.ndim) return false;
    for (int d = 0; d < a.ndim; d++)
        if (a.dim[d] != b.dim[d]) return false;
    return true;
}

/* An expectation read from the table: its dtype, shape and value bits. */
typedef struct expect {
    fc_dtype dt;
    fc_shape sh;
    size_t n;
    unsigned char *v;
} expect;

static expect need_expect(reff_tokens *t) {
    expect e;
    e.dt = reff_need_dtype(t);
    e.sh = reff_need_shape(t);
    e.n = reff_shape_numel(e.sh);
    e.v = reff_need_values(t, e.dt, e.n);
    return e;
}

static fc_array *array_of(const expect *e) { return fc_from_host(ctx, e->dt, e->sh, e->v); }

/* Whether a is e exactly: dtype, shape and every bit. Logs the first difference under what. */
static bool matches(fc_array *a, const expect *e, const char *what, int rec) {
    if (fc_array_status(a) != FC_OK) {
        cr_log_error("record %d: %s: %s", rec, what, fc_array_errmsg(a));
        return false;
    }
    if (fc_array_dtype(a) != e->dt || !same_shape(fc_array_shape(a), e->sh)) {
        cr_log_error("record %d: %s: dtype %s ndim %d, NumPy %s ndim %d", rec, what,
                     fc_dtype_name(fc_array_dtype(a)), fc_array_ndim(a), fc_dtype_name(e->dt),
                     e->sh.ndim);
        return false;
    }
    size_t n, es = fc_dtype_size(e->dt);
    unsigned char *got = read_all(a, &n);
    bool ok = true;
    for (size_t i = 0; i < n && ok; i++)
        if (memcmp(got + i * es, e->v + i * es, es) != 0) {
            uint64_t g = 0, w = 0;
            memcpy(&g, got + i * es, es < 8 ? es : 8);
            memcpy(&w, e->v + i * es, es < 8 ? es : 8);
            cr_log_error("record %d: %s: element %zu of %zu is %llx, NumPy %llx", rec, what, i, n,
                         (unsigned long long)g, (unsigned long long)w);
            ok = false;
        }
    free(got);
    return ok;
}

static int need_axis(reff_tokens *t) {
    const char *s = reff_need(t);
    return strcmp(s, "none") == 0 ? FC_AXIS_NONE : atoi(s);
}

/* The rows of an array of shape sh along axis (FC_AXIS_NONE: the flattened array is one row):
 * their count, length and the flat positions of row r's elements (row-major). */
typedef struct rows {
    int64_t count, len, stride, outer_stride, inner;
} rows;

static rows rows_of(fc_shape sh, int axis) {
    rows r;
    int64_t n = (int64_t)tv_numel(sh);
    if (axis == FC_AXIS_NONE || sh.ndim == 0) {
        r.len = n;
        r.count = 1;
        r.stride = 1;
        r.inner = 1;
        r.outer_stride = n;
        return r;
    }
    if (axis < 0) axis += sh.ndim;
    r.len = sh.dim[axis];
    r.inner = 1;
    for (int d = axis + 1; d < sh.ndim; d++) r.inner *= sh.dim[d];
    r.stride = r.inner;
    r.outer_stride = r.len * r.inner;
    r.count = r.len ? n / r.len : 0;
    return r;
}

/* The flat position of element k of row q. */
static size_t row_at(const rows *r, int64_t q, int64_t k) {
    int64_t outer = q / r->inner, in = q % r->inner;
    return (size_t)(outer * r->outer_stride + in + k * r->stride);
}

/* The partition property of row q of p (dtype t) at kth: nothing after kth before it in the
 * order, nothing before it after it. */
static bool partitioned(const unsigned char *p, fc_dtype t, const rows *r, int64_t q, int64_t kth) {
    size_t at = row_at(r, q, kth);
    for (int64_t k = 0; k < r->len; k++) {
        size_t i = row_at(r, q, k);
        if (k < kth && np_less(p, t, at, i)) return false;
        if (k > kth && np_less(p, t, i, at)) return false;
    }
    return true;
}

/* `x = input DTYPE [SHAPE]; y = CALL` as a .fc program, built on zeros of that shape: the
 * status of the build, its message in msg. */
static fc_status fc_call_status(const char *call, fc_dtype dt, fc_shape sh, char *msg,
                                size_t size) {
    char text[1024];
    int len = snprintf(text, sizeof text, "x = input %s [", fc_dtype_name(dt));
    for (int d = 0; d < sh.ndim; d++)
        len += snprintf(text + len, sizeof text - (size_t)len, d ? ", %lld" : "%lld",
                        (long long)sh.dim[d]);
    len += snprintf(text + len, sizeof text - (size_t)len, "]\ny = %s\nout y\n", call);
    fc_program *prog = NULL;
    fc_status st = fc_program_parse(ctx, text, (size_t)len, "sort_err.fc", &prog);
    if (st == FC_OK) {
        fc_array *x = fc_zeros(ctx, dt, sh), *y = NULL;
        st = fc_program_build(prog, &x, &y);
        if (st == FC_OK) st = fc_array_status(y);
    }
    snprintf(msg, size, "%s", fc_errmsg(ctx));
    fc_program_destroy(prog);
    fc_clear_error(ctx);
    return st;
}

/* ---- the NumPy table -------------------------------------------------------------------- */

typedef struct tally {
    int sorts, parts, uniques, perms, errors, failures;
} tally;

static void table_sort(reff_tokens *t, tally *ty, int rec) {
    int axis = need_axis(t);
    expect x = need_expect(t), s = need_expect(t), i = need_expect(t);
    fc_array *a = array_of(&x);
    bool ok = matches(fc_sort(a, axis), &s, "sort", rec) &&
              matches(fc_argsort(a, axis), &i, "argsort", rec);
    /* a view of the input (its reverse, reversed back) sorts the same */
    if (ok && x.sh.ndim > 0) {
        fc_array *v = fc_flip(fc_flip(a, FC_AXES(0)), FC_AXES(0));
        ok = matches(fc_sort(v, axis), &s, "sort of a view", rec);
    }
    if (!ok)
        cr_log_error("record %d: sort of %s, ndim %d, axis %d", rec, fc_dtype_name(x.dt),
                     x.sh.ndim, axis);
    ty->failures += !ok;
    ty->sorts++;
    free(x.v);
    free(s.v);
    free(i.v);
}

static void table_part(reff_tokens *t, tally *ty, int rec) {
    int64_t kth = reff_need_int(t);
    int axis = need_axis(t);
    expect x = need_expect(t), s = need_expect(t), i = need_expect(t), p = need_expect(t),
           ap = need_expect(t);
    fc_array *a = array_of(&x);
    fc_array *part = fc_partition(a, kth, axis), *apart = fc_argpartition(a, kth, axis);
    bool ok = matches(part, &s, "partition", rec) && matches(apart, &i, "argpartition", rec);
    rows r = rows_of(x.sh, axis);
    if (ok && r.len > 0) {
        int64_t k = kth < 0 ? kth + r.len : kth;
        size_t n;
        unsigned char *got = read_all(part, &n);
        unsigned char *pos = read_all(apart, &n);
        /* fusec's results: the partition property; NumPy's: the same kth element, and the
         * elements argpartition names are partition's */
        for (int64_t q = 0; q < r.count && ok; q++) {
            size_t at = row_at(&r, q, k);
            ok = partitioned(got, x.dt, &r, q, k) && partitioned(p.v, x.dt, &r, q, k) &&
                 np_equiv2(got, at, p.v, at, x.dt);
            int64_t np_pos, our_pos;
            memcpy(&np_pos, ap.v + 8 * at, 8);
            memcpy(&our_pos, pos + 8 * at, 8);
            /* the input position of a row's element: its row's base plus the position along */
            size_t base = row_at(&r, q, 0), stride = (size_t)r.stride;
            ok = ok && np_equiv2(x.v, base + (size_t)np_pos * stride, x.v,
                                 base + (size_t)our_pos * stride, x.dt);
            if (!ok)
                cr_log_error("record %d: row %lld: the partition property or the kth element "
                             "differs from NumPy's", rec, (long long)q);
        }
        free(got);
        free(pos);
    }
    if (!ok)
        cr_log_error("record %d: partition of %s, ndim %d, kth %lld axis %d", rec,
                     fc_dtype_name(x.dt), x.sh.ndim, (long long)kth, axis);
    ty->failures += !ok;
    ty->parts++;
    free(x.v);
    free(s.v);
    free(i.v);
    free(p.v);
    free(ap.v);
}

static void table_unique(reff_tokens *t, tally *ty, int rec) {
    expect x = need_expect(t), v = need_expect(t), i = need_expect(t), inv = need_expect(t),
           c = need_expect(t);
    fc_array *a = array_of(&x), *rv = NULL, *ri = NULL, *rinv = NULL, *rc = NULL;
    fc_status st = fc_unique(a, &rv, &ri, &rinv, &rc);
    bool ok = st == FC_OK;
    if (!ok) cr_log_error("record %d: unique: %s", rec, fc_errmsg(ctx));
    ok = ok && matches(rv, &v, "unique values", rec) && matches(ri, &i, "unique index", rec) &&
         matches(rinv, &inv, "unique inverse", rec) && matches(rc, &c, "unique counts", rec);
    /* one result alone is the same */
    fc_array *only = NULL;
    ok = ok && fc_unique(a, NULL, NULL, NULL, &only) == FC_OK &&
         matches(only, &c, "counts alone", rec);
    if (!ok) cr_log_error("record %d: unique of %s, ndim %d", rec, fc_dtype_name(x.dt), x.sh.ndim);
    ty->failures += !ok;
    ty->uniques++;
    free(x.v);
    free(v.v);
    free(i.v);
    free(inv.v);
    free(c.v);
}

static uint64_t need_u64(reff_tokens *t) { return strtoull(reff_need(t), NULL, 10); }

static void table_random(const char *kind, reff_tokens *t, tally *ty, int rec) {
    uint64_t seed = need_u64(t), stream = need_u64(t);
    fc_rng g = {seed, stream};
    bool ok;
    if (strcmp(kind, "perm") == 0) {
        int64_t n = reff_need_int(t);
        expect p = need_expect(t);
        ok = matches(fc_rng_permutation(ctx, &g, n), &p, "permutation", rec);
        free(p.v);
    } else if (strcmp(kind, "shuffle") == 0) {
        int axis = (int)reff_need_int(t);
        expect x = need_expect(t), r = need_expect(t);
        ok = matches(fc_rng_shuffle(ctx, &g, array_of(&x), axis), &r, "shuffle", rec);
        free(x.v);
        free(r.v);
    } else {
        int64_t n = reff_need_int(t);
        bool replace = reff_need_int(t) != 0;
        fc_shape size = reff_need_shape(t);
        expect r = need_expect(t);
        ok = matches(fc_rng_choice(ctx, &g, n, size, replace), &r, "choice", rec);
        /* choice of an array's rows takes the same positions */
        if (ok && n > 0 && n <= 1000) {
            fc_rng h = {seed, stream};
            fc_array *pop = fc_mul(fc_arange(ctx, FC_I64, 0, (double)n, 1), fc_i64(ctx, 1));
            ok = matches(fc_rng_choice_array(ctx, &h, pop, size, replace), &r, "choice_array",
                         rec);
        }
        free(r.v);
    }
    ok = ok && g.stream == stream + 1;
    if (!ok) cr_log_error("record %d: %s, seed %llu stream %llu", rec, kind,
                          (unsigned long long)seed, (unsigned long long)stream);
    ty->failures += !ok;
    ty->perms++;
}

static void table_err(reff_tokens *t, tally *ty, int rec) {
    const char *call = reff_need(t);
    fc_dtype dt = reff_need_dtype(t);
    fc_shape sh = reff_need_shape(t);
    fc_status want = reff_need_status(t);
    char msg[1024];
    fc_status got = fc_call_status(call, dt, sh, msg, sizeof msg);
    char fname[32];
    snprintf(fname, sizeof fname, "%.*s", (int)strcspn(call, "("), call);
    bool ok = got == want && strstr(msg, fname) != NULL;
    if (!ok)
        cr_log_error("record %d: %s of %s: %s (%s), want %s", rec, call, fc_dtype_name(dt),
                     fc_strerror(got), msg, fc_strerror(want));
    ty->failures += !ok;
    ty->errors++;
}

Test(sort, matches_numpy) {
    reff_tokens t;
    reff_open(&t, "sort_numpy.txt");
    tally ty = {0, 0, 0, 0, 0, 0};
    int rec = 0;
    for (const char *kind; (kind = reff_tok(&t)); rec++) {
        fc_scope *sc = fc_scope_open(ctx);
        if (strcmp(kind, "sort") == 0) table_sort(&t, &ty, rec);
        else if (strcmp(kind, "part") == 0) table_part(&t, &ty, rec);
        else if (strcmp(kind, "unique") == 0) table_unique(&t, &ty, rec);
        else if (strcmp(kind, "perm") == 0 || strcmp(kind, "shuffle") == 0 ||
                 strcmp(kind, "choice") == 0)
            table_random(kind, &t, &ty, rec);
        else if (strcmp(kind, "err") == 0) table_err(&t, &ty, rec);
        else cr_assert_fail("sort_numpy.txt: unknown record '%s'", kind);
        fc_scope_close(sc);
    }
    reff_close(&t);
    cr_log_info("sort_numpy.txt: %d sorts, %d partitions, %d uniques, %d random, %d errors, "
                "%d failures", ty.sorts, ty.parts, ty.uniques, ty.perms, ty.errors, ty.failures);
    cr_expect_geq(ty.sorts, 400);
    cr_expect_geq(ty.parts, 90);
    cr_expect_geq(ty.uniques, 90);
    cr_expect_geq(ty.perms, 15);
    cr_expect_geq(ty.errors, 12);
    cr_assert_eq(ty.failures, 0, "%d records disagree with NumPy", ty.failures);
}

/* ---- long rows, by their properties ----------------------------------------------------- */

static uint64_t lcg;
static uint64_t next_rand(void) {
    lcg = lcg * 6364136223846793005ULL + 1442695040888963407ULL;
    return lcg >> 17;
}

/* n random elements of dtype t with many ties: small integers and the extremes; floats among
 * a few values, -0.0 and 0.0, infinities and NaNs (several payloads, both signs). */
static unsigned char *tie_values(fc_dtype t, size_t n) {
    size_t es = fc_dtype_size(t);
    unsigned char *v = malloc(n * es + 1);
    cr_assert_not_null(v);
    static const double pool[] = {-2.5, -1.0, -0.0, 0.0, 0.5, 1.0, 3.0, INFINITY, -INFINITY, NAN,
                                  -NAN};
    for (size_t i = 0; i < n; i++) {
        uint64_t r = next_rand();
        if (!fcg_is_inexact(t)) {
            /* 1 in 16 the signed extremes (the middle of an unsigned range) */
            uint64_t top = (uint64_t)1 << (8 * es - 1);
            uint64_t bits = r % 16 == 0 ? top - (r / 16) % 2
                                        : (uint64_t)(int64_t)((int)(r % 7) - 3);
            if (t == FC_BOOL) bits &= 1;
            memcpy(v + i * es, &bits, es);
            continue;
        }
        int parts = fcg_is_complex(t) ? 2 : 1;
        for (int q = 0; q < parts; q++) {
            double x = pool[(r >> (8 * q)) % 11];
            tv_set_value_at(v, t, i, q, x);
            if (isnan(x) && (r >> 20) % 2) {
                /* a payload in the low bit of the significand */
                unsigned char *e = v + i * es + (size_t)q * (es / (size_t)parts);
                e[0] |= 1;
            }
        }
    }
    return v;
}

/* Checks sort and argsort of x (shape sh, values v of dtype t) along axis by their
 * properties. Returns the number of rows that fail. */
static int check_properties(fc_dtype t, fc_shape sh, const unsigned char *v, int axis) {
    fc_array *x = fc_from_host(ctx, t, sh, v);
    size_t n, m, es = fc_dtype_size(t);
    unsigned char *s = read_all(fc_sort(x, axis), &n);
    unsigned char *ip = read_all(fc_argsort(x, axis), &m);
    cr_assert_eq(n, m);
    rows r = rows_of(sh, axis);
    int bad = 0;
    char *seen = malloc((size_t)r.len + 1);
    for (int64_t q = 0; q < r.count; q++) {
        memset(seen, 0, (size_t)r.len + 1);
        bool ok = true;
        size_t base = axis == FC_AXIS_NONE ? 0 : row_at(&r, q, 0);
        for (int64_t k = 0; k < r.len && ok; k++) {
            size_t at = row_at(&r, q, k);
            int64_t p;
            memcpy(&p, ip + 8 * at, 8);
            ok = p >= 0 && p < r.len && !seen[p];
            if (!ok) break;
            seen[p] = 1;
            /* the element argsort names is the one sort put there, bit for bit */
            size_t src = base + (size_t)p * (size_t)r.stride;
            ok = memcmp(s + at * es, v + src * es, es) == 0;
            if (k > 0 && ok) {
                size_t prev = row_at(&r, q, k - 1);
                int64_t pp;
                memcpy(&pp, ip + 8 * prev, 8);
                /* ascending, and equal elements in their original order */
                ok = !np_less(s, t, at, prev) && (np_less(s, t, prev, at) || pp < p);
            }
        }
        if (!ok) {
            if (!bad)
                cr_log_error("%s, ndim %d, axis %d: row %lld is not a stable sort",
                             fc_dtype_name(t), sh.ndim, axis, (long long)q);
            bad++;
        }
    }
    free(seen);
    free(s);
    free(ip);
    return bad;
}

Test(sort, long_rows_of_every_dtype) {
    lcg = 99;
    for (int ti = 0; ti < FC_DTYPE_COUNT; ti++) {
        fc_dtype t = (fc_dtype)ti;
        fc_scope *sc = fc_scope_open(ctx);
        unsigned char *v = tie_values(t, 10000);
        int bad = check_properties(t, FC_SHAPE(10000), v, 0);
        bad += check_properties(t, FC_SHAPE(2, 5000), v, 1);
        bad += check_properties(t, FC_SHAPE(5000, 2), v, 0);  /* strided rows */
        bad += check_properties(t, FC_SHAPE(4097, 2), v, -2); /* just over a tile */
        bad += check_properties(t, FC_SHAPE(100, 100), v, FC_AXIS_NONE);
        bad += check_properties(t, FC_SHAPE(2000, 5), v, 1); /* many short rows */
        cr_expect_eq(bad, 0, "%s: %d rows fail", fc_dtype_name(t), bad);
        free(v);
        fc_scope_close(sc);
    }
}

/* ---- errors and edge cases -------------------------------------------------------------- */

Test(sort, bad_arguments_poison) {
    fc_scope *sc = fc_scope_open(ctx);
    cr_expect_null(fc_sort(NULL, 0));
    cr_expect_null(fc_argsort(NULL, 0));
    cr_expect_null(fc_partition(NULL, 0, 0));
    fc_array *x = fc_ones(ctx, FC_F32, FC_SHAPE(4, 3));
    struct {
        fc_array *y;
        fc_status want;
        const char *msg;
    } cases[] = {
        {fc_sort(x, 2), FC_ERR_AXIS, "sort: axis 2"},
        {fc_argsort(x, -3), FC_ERR_AXIS, "argsort: axis -3"},
        {fc_sort(fc_f64(ctx, 1.5), FC_AXIS_NONE), FC_ERR_DTYPE, "sort: a Python scalar"},
        {fc_argsort(fc_i64(ctx, 3), -1), FC_ERR_DTYPE, "argsort: a Python scalar"},
        {fc_sort(fc_scalar(ctx, FC_F64, 2.0), -1), FC_ERR_AXIS, "sort: axis -1"},
        {fc_sort(fc_scalar(ctx, FC_I32, 2.0), 0), FC_ERR_AXIS, "sort: axis 0"},
        {fc_argsort(fc_scalar(ctx, FC_I32, 2.0), 1), FC_ERR_AXIS, "argsort: axis 1"},
        {fc_partition(x, 4, 0), FC_ERR_VALUE, "partition: kth 4"},
        {fc_argpartition(x, -4, 1), FC_ERR_VALUE, "argpartition: kth -4"},
        {fc_partition(x, 0, 2), FC_ERR_AXIS, "partition: axis 2"},
        {fc_partition(fc_f64(ctx, 1.0), 0, FC_AXIS_NONE), FC_ERR_DTYPE, "partition: a Python"},
        {fc_partition(x, 12, FC_AXIS_NONE), FC_ERR_VALUE, "partition: kth 12"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        cr_expect_eq(fc_array_status(cases[i].y), cases[i].want, "case %zu: %s", i,
                     fc_strerror(fc_array_status(cases[i].y)));
        cr_expect(strstr(fc_array_errmsg(cases[i].y), cases[i].msg) != NULL,
                  "case %zu: message '%s' lacks '%s'", i, fc_array_errmsg(cases[i].y),
                  cases[i].msg);
    }
    /* a poisoned input comes back through the chain */
    fc_array *p = fc_argsort(fc_exp(cases[0].y), 0);
    cr_expect_eq(fc_array_status(p), FC_ERR_AXIS);
    fc_array *u = NULL, *c = NULL;
    cr_expect_eq(fc_unique(cases[0].y, &u, NULL, NULL, &c), FC_ERR_AXIS);
    cr_expect_eq(fc_array_status(u), FC_ERR_AXIS);
    cr_expect_eq(fc_array_status(c), FC_ERR_AXIS);
    cr_expect_eq(fc_unique(NULL, &u, NULL, NULL, NULL), FC_ERR_NULL);
    cr_expect_eq(fc_unique(fc_f64(ctx, 2.0), &u, NULL, NULL, NULL), FC_ERR_DTYPE);
    cr_expect(strstr(fc_array_errmsg(u), "unique") != NULL, "%s", fc_array_errmsg(u));
    fc_scope_close(sc);
}

Test(sort, zero_d_and_empty_arrays) {
    fc_scope *sc = fc_scope_open(ctx);
    fc_array *z = fc_scalar(ctx, FC_F32, 2.5);
    /* np.argsort of a 0-d array is [0] along axis 0 or -1 (NumPy takes it as 1-d) */
    for (int axis = -1; axis <= 0; axis++) {
        fc_array *a = fc_argsort(z, axis);
        fc_shape s = fc_array_shape(a);
        cr_expect(s.ndim == 1 && s.dim[0] == 1, "argsort(0-d, %d): ndim %d", axis, s.ndim);
        size_t n;
        unsigned char *v = read_all(a, &n);
        int64_t w;
        memcpy(&w, v, 8);
        cr_expect_eq(w, 0);
        free(v);
        a = fc_argpartition(z, 0, axis);
        cr_expect_eq(fc_array_status(a), FC_OK, "%s", fc_array_errmsg(a));
    }
    fc_array *s = fc_sort(z, FC_AXIS_NONE);
    cr_expect(fc_array_ndim(s) == 1 && fc_array_size(s) == 1);
    /* empty: kth is not checked (NumPy's), the shapes are kept */
    fc_array *e = fc_zeros(ctx, FC_I16, FC_SHAPE(0, 5));
    fc_array *pe = fc_partition(e, 7, 1);
    cr_expect_eq(fc_array_status(pe), FC_OK, "%s", fc_array_errmsg(pe));
    cr_expect(same_shape(fc_array_shape(pe), FC_SHAPE(0, 5)));
    fc_array *ae = fc_argsort(e, 0);
    cr_expect(same_shape(fc_array_shape(ae), FC_SHAPE(0, 5)) && fc_array_dtype(ae) == FC_I64);
    size_t n;
    free(read_all(ae, &n));
    cr_expect_eq(n, 0);
    fc_scope_close(sc);
}

/* sort and argsort are nodes: the same call is the same node, other axes are other nodes, and
 * a sort along another axis is its last axis' sort between two transposes. */
Test(sort, nodes_and_axes) {
    fc_scope *sc = fc_scope_open(ctx);
    fc_array *x = fc_from_host(ctx, FC_F64, FC_SHAPE(3, 4),
                               (double[]){3, 1, 2, 0, -0.0, 0.0, NAN, -1, 5, 5, 4, 4});
    cr_expect_eq(fc_sort(x, -1), fc_sort(x, 1), "the same sort is one node");
    cr_expect_neq(fc_sort(x, 0), fc_sort(x, 1));
    fc_array *via = fc_transpose(fc_sort(fc_transpose(x), -1));
    size_t n, m;
    unsigned char *a = read_all(fc_sort(x, 0), &n), *b = read_all(via, &m);
    cr_expect(n == m && memcmp(a, b, n * 8) == 0, "sort along axis 0 is the transposed sort");
    free(a);
    free(b);
    fc_hash h1, h2;
    fc_array *s1 = fc_sort(x, 1), *s2 = fc_argsort(x, 1);
    cr_assert_eq(fc_graph_hash(&s1, 1, &h1), FC_OK);
    cr_assert_eq(fc_graph_hash(&s2, 1, &h2), FC_OK);
    cr_expect(h1.lo != h2.lo || h1.hi != h2.hi, "sort and argsort hash apart");
    fc_scope_close(sc);
}

/* ---- the random permutations ------------------------------------------------------------ */

static int64_t *read_i64(fc_array *a, size_t *n) {
    cr_assert_eq(fc_array_dtype(a), FC_I64);
    return (int64_t *)read_all(a, n);
}

static bool is_permutation(const int64_t *p, size_t n) {
    char *seen = calloc(n + 1, 1);
    bool ok = true;
    for (size_t i = 0; i < n && ok; i++) {
        ok = p[i] >= 0 && (size_t)p[i] < n && !seen[p[i]];
        if (ok) seen[p[i]] = 1;
    }
    free(seen);
    return ok;
}

Test(sort, permutations_are_permutations_of_the_seed_and_stream) {
    fc_scope *sc = fc_scope_open(ctx);
    fc_rng g = fc_rng_init(2024);
    fc_array *a = fc_rng_permutation(ctx, &g, 5000);
    cr_expect_eq(g.stream, 1, "a permutation takes one stream");
    fc_array *b = fc_rng_permutation(ctx, &g, 5000);
    cr_expect_eq(g.stream, 2);
    size_t n, m;
    int64_t *pa = read_i64(a, &n), *pb = read_i64(b, &m);
    cr_expect(n == 5000 && is_permutation(pa, n) && is_permutation(pb, m));
    cr_expect(memcmp(pa, pb, n * 8) != 0, "two streams give the same permutation");
    /* another context, the same seed: the same values */
    fc_ctx *other = tu_host_ctx();
    fc_rng h = fc_rng_init(2024);
    fc_array *c = fc_rng_permutation(other, &h, 5000);
    cr_assert_eq(fc_array_status(c), FC_OK);
    int64_t *pc = malloc(5000 * 8);
    memset(pc, 0xA5, 5000 * 8);
    cr_assert_eq(fc_read(c, pc, 0, 5000), FC_OK);
    cr_expect(memcmp(pa, pc, n * 8) == 0, "a permutation is not a function of the seed");
    fc_release(c);
    fc_ctx_destroy(other);
    /* another seed differs */
    fc_rng k = fc_rng_init(2025);
    int64_t *pk = read_i64(fc_rng_permutation(ctx, &k, 5000), &m);
    cr_expect(memcmp(pa, pk, n * 8) != 0);
    /* n <= 0: empty (NumPy permutes arange(n)); the stream still advances */
    fc_array *e = fc_rng_permutation(ctx, &g, -3);
    cr_expect(fc_array_size(e) == 0 && fc_array_ndim(e) == 1 && g.stream == 3);
    cr_expect_eq(fc_array_status(fc_rng_permutation(ctx, NULL, 3)), FC_ERR_NULL);
    cr_expect_null(fc_rng_permutation(NULL, &g, 3));
    free(pa);
    free(pb);
    free(pc);
    free(pk);
    fc_scope_close(sc);
}

Test(sort, shuffle_and_choice) {
    fc_scope *sc = fc_scope_open(ctx);
    fc_rng g = fc_rng_init(7);
    /* shuffle keeps the rows (each row here is its index times 10, plus its column) */
    fc_array *x = fc_add(fc_mul(fc_reshape(fc_arange(ctx, FC_I64, 0, 300, 1), FC_SHAPE(300, 1)),
                                fc_i64(ctx, 10)),
                         fc_arange(ctx, FC_I64, 0, 3, 1));
    fc_array *y = fc_rng_shuffle(ctx, &g, x, 0);
    size_t n;
    int64_t *v = read_i64(y, &n);
    int64_t rowsof[300];
    for (int i = 0; i < 300; i++) {
        rowsof[i] = v[3 * i] / 10;
        cr_expect(v[3 * i + 1] == v[3 * i] + 1 && v[3 * i + 2] == v[3 * i] + 2, "row %d torn", i);
    }
    cr_expect(is_permutation(rowsof, 300));
    free(v);
    cr_expect_eq(fc_array_status(fc_rng_shuffle(ctx, &g, x, 2)), FC_ERR_AXIS);
    cr_expect_eq(fc_array_status(fc_rng_shuffle(ctx, &g, fc_scalar(ctx, FC_F32, 1), 0)),
                 FC_ERR_AXIS);
    cr_expect_eq(fc_array_status(fc_rng_shuffle(ctx, &g, fc_f64(ctx, 1), 0)), FC_ERR_DTYPE);
    cr_expect_eq(fc_array_status(fc_rng_shuffle(ctx, &g, NULL, 0)), FC_ERR_NULL);
    cr_expect_eq(fc_array_status(fc_rng_shuffle(ctx, NULL, x, 0)), FC_ERR_NULL);
    cr_expect_eq(fc_array_status(fc_rng_choice_array(ctx, &g, NULL, FC_SHAPE(1), true)),
                 FC_ERR_NULL);
    /* an empty axis shuffles to itself */
    fc_array *e = fc_rng_shuffle(ctx, &g, fc_zeros(ctx, FC_F32, FC_SHAPE(0, 4)), 0);
    cr_expect(fc_array_status(e) == FC_OK && same_shape(fc_array_shape(e), FC_SHAPE(0, 4)));
    /* choice without replacement: distinct, in range; with it: in range */
    for (int rep = 0; rep < 2; rep++) {
        fc_array *c = fc_rng_choice(ctx, &g, 50, FC_SHAPE(5, 8), rep);
        cr_expect(same_shape(fc_array_shape(c), FC_SHAPE(5, 8)));
        int64_t *cv = read_i64(c, &n);
        char seen[50] = {0};
        bool distinct = true, in_range = true;
        for (size_t i = 0; i < n; i++) {
            in_range &= cv[i] >= 0 && cv[i] < 50;
            if (cv[i] >= 0 && cv[i] < 50) {
                distinct &= !seen[cv[i]];
                seen[cv[i]] = 1;
            }
        }
        cr_expect(in_range, "replace=%d: out of range", rep);
        if (!rep) cr_expect(distinct, "choice without replacement repeats");
        else cr_expect(!distinct, "40 draws of 50 with replacement are all distinct (unlikely)");
        free(cv);
    }
    uint64_t before = g.stream;
    cr_expect_eq(fc_array_status(fc_rng_choice(ctx, &g, 5, FC_SHAPE(6), false)), FC_ERR_VALUE);
    cr_expect_eq(fc_array_status(fc_rng_choice(ctx, &g, 0, FC_SHAPE(1), true)), FC_ERR_VALUE);
    cr_expect_eq(g.stream, before, "a refused choice takes no stream");
    fc_array *none = fc_rng_choice(ctx, &g, 0, FC_SHAPE(0), true);
    cr_expect(fc_array_status(none) == FC_OK && fc_array_size(none) == 0);
    /* the rows of an array */
    fc_array *ca = fc_rng_choice_array(ctx, &g, x, FC_SHAPE(2, 2), false);
    cr_expect(same_shape(fc_array_shape(ca), FC_SHAPE(2, 2, 3)), "choice of rows: ndim %d",
              fc_array_ndim(ca));
    cr_expect_eq(fc_array_status(fc_rng_choice_array(ctx, &g, fc_scalar(ctx, FC_I8, 1),
                                                     FC_SHAPE(2), true)),
                 FC_ERR_VALUE);
    fc_scope_close(sc);
}

/* ---- the .fc spelling ------------------------------------------------------------------- */

static fc_status build_text(const char *text, fc_array *const *in, fc_array **outs, int n) {
    fc_program *prog = NULL;
    fc_status st = fc_program_parse(ctx, text, strlen(text), "sorts.fc", &prog);
    if (st != FC_OK) return st;
    cr_assert_eq(fc_program_num_outputs(prog), n);
    st = fc_program_build(prog, in, outs);
    fc_program_destroy(prog);
    return st;
}

Test(sort, fc_spellings_build_the_c_graphs) {
    fc_scope *sc = fc_scope_open(ctx);
    const char *text = "x = input f32 [4, 6]\n"
                       "a = sort(x)\n"
                       "b = argsort(x, axis=0, kind=\"stable\")\n"
                       "c = sort(x, None, \"quicksort\")\n"
                       "d = x.argsort(axis=-2)\n"
                       "e = partition(x, 2, axis=0)\n"
                       "f = argpartition(x, -1)\n"
                       "g = random.permutation(10, seed=3, stream=1)\n"
                       "h = shuffle(x, axis=1, seed=3, stream=2)\n"
                       "i = random.choice(10, [2, 2], replace=False, seed=3)\n"
                       "j = choice(x, 3, seed=4, stream=5)\n"
                       "out a, b, c, d, e, f, g, h, i, j\n";
    fc_array *o[10], *x = fc_add(fc_zeros(ctx, FC_F32, FC_SHAPE(4, 6)),
                                 fc_arange(ctx, FC_F32, 0, 6, 1));
    cr_assert_eq(build_text(text, &x, o, 10), FC_OK, "%s", fc_errmsg(ctx));
    fc_rng g3 = {3, 1}, h3 = {3, 2}, i3 = {3, 0}, j4 = {4, 5};
    fc_array *want[10] = {fc_sort(x, -1), fc_argsort(x, 0), fc_sort(x, FC_AXIS_NONE),
                          fc_argsort(x, -2), fc_partition(x, 2, 0), fc_argpartition(x, -1, -1),
                          fc_rng_permutation(ctx, &g3, 10), fc_rng_shuffle(ctx, &h3, x, 1),
                          fc_rng_choice(ctx, &i3, 10, FC_SHAPE(2, 2), false),
                          fc_rng_choice_array(ctx, &j4, x, FC_SHAPE(3), true)};
    for (int i = 0; i < 10; i++) {
        fc_hash h1, h2;
        cr_assert_eq(fc_graph_hash(&o[i], 1, &h1), FC_OK);
        cr_assert_eq(fc_graph_hash(&want[i], 1, &h2), FC_OK, "%s", fc_array_errmsg(want[i]));
        cr_expect(h1.lo == h2.lo && h1.hi == h2.hi, "output %d differs from the C API's", i);
    }
    fc_scope_close(sc);
}

Test(sort, fc_unique_gives_a_list) {
    fc_scope *sc = fc_scope_open(ctx);
    double xv[] = {3, 1, NAN, 3, -0.0, 0.0, -NAN, 1};
    const char *text = "x = input f64 [8]\n"
                       "u = unique(x)\n"
                       "v, i, inv, c = unique(x, return_index=True, return_inverse=True, "
                       "return_counts=True)\n"
                       "w, k = unique(x, False, False, True)\n"
                       "out u, v, i, inv, c, w, k\n";
    fc_program *prog = NULL;
    cr_assert_eq(fc_program_parse(ctx, text, strlen(text), "u.fc", &prog), FC_OK, "%s",
                 fc_errmsg(ctx));
    fc_array *x = fc_from_host(ctx, FC_F64, FC_SHAPE(8), xv), *o[7];
    cr_assert_eq(fc_program_build(prog, &x, o), FC_OK, "%s", fc_errmsg(ctx));
    fc_program_destroy(prog);
    fc_array *v, *i, *inv, *c;
    cr_assert_eq(fc_unique(x, &v, &i, &inv, &c), FC_OK);
    fc_array *want[7] = {v, v, i, inv, c, v, c};
    for (int k = 0; k < 7; k++) {
        size_t n1, n2;
        unsigned char *a = read_all(o[k], &n1), *b = read_all(want[k], &n2);
        cr_expect(n1 == n2 && memcmp(a, b, n1 * 8) == 0, "output %d", k);
        free(a);
        free(b);
    }
    /* values [-0.0, 1, 3, nan]: -0.0 first seen (position 4), one NaN (the first, position 2) */
    size_t n;
    double *vv = (double *)read_all(v, &n);
    cr_expect_eq(n, 4);
    cr_expect(vv[0] == 0 && signbit(vv[0]) && vv[1] == 1 && vv[2] == 3 && isnan(vv[3]) &&
              !signbit(vv[3]));
    free(vv);
    int64_t *cv = read_i64(c, &n);
    cr_expect(cv[0] == 2 && cv[1] == 2 && cv[2] == 2 && cv[3] == 2);
    free(cv);
    /* without data the count cannot be known */
    const char *bad = "x = input f64 [8]\nu = unique(x)\nout u\n";
    cr_assert_eq(fc_program_parse(ctx, bad, strlen(bad), "u.fc", &prog), FC_OK);
    fc_array *u;
    fc_status st = fc_program_build(prog, NULL, &u);
    fc_program_destroy(prog);
    cr_expect_neq(st, FC_OK);
    cr_expect(strstr(fc_errmsg(ctx), "unique") != NULL, "%s", fc_errmsg(ctx));
    fc_clear_error(ctx);
    fc_scope_close(sc);
}

/* ---- references ------------------------------------------------------------------------- */

/* The composites hand on their results alone: a loop that builds and reads them in a scope of
 * its own holds flat host memory (each pass's temporaries die with its scope). */
Test(sort, composites_leave_no_references_behind) {
    size_t first = 0;
    for (int pass = 0; pass < 4; pass++) {
        fc_scope *sc = fc_scope_open(ctx);
        fc_rng g = fc_rng_init(11);
        lcg = 5;
        unsigned char *v = tie_values(FC_F32, 600);
        fc_array *x = fc_from_host(ctx, FC_F32, FC_SHAPE(20, 30), v);
        free(v);
        fc_array *outs[9];
        cr_assert_eq(fc_unique(x, &outs[0], &outs[1], &outs[2], &outs[3]), FC_OK);
        outs[4] = fc_partition(x, 3, 1);
        outs[5] = fc_argpartition(x, -2, FC_AXIS_NONE);
        outs[6] = fc_rng_permutation(ctx, &g, 100);
        outs[7] = fc_rng_shuffle(ctx, &g, x, 0);
        outs[8] = fc_rng_choice_array(ctx, &g, x, FC_SHAPE(5), false);
        cr_assert_eq(fc_eval(ctx, outs, 9), FC_OK, "%s", fc_errmsg(ctx));
        fc_scope_close(sc);
        fc_memory_stats m;
        cr_assert_eq(fc_memory_stats_get(ctx, &m), FC_OK);
        if (pass == 1) first = m.host_in_use;
        if (pass > 1)
            cr_expect_eq(m.host_in_use, first, "pass %d: %zu host bytes held, %zu after pass 1",
                         pass, m.host_in_use, first);
    }
}
