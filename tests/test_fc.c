/*
 * tests/test_fc.c - the .fc format: parser, printer, the fusec CLI.
 *
 *   - every bench/fc and tests/data/fc program parses, builds and hashes; print -> parse
 *     gives the same structural hash, and printing is byte-stable;
 *   - each program is the same graph as one written by hand with the C API (same hash in a
 *     separate context), and the small ones evaluate on the host backend to bitwise the same
 *     values (outputs poisoned with 0xA5 before each read);
 *   - every elementwise op by its NumPy name, its C name and NumPy's aliases;
 *   - tricky values and views round-trip (negative steps, NaN signs, 64-bit constants, ...);
 *   - malformed programs give the right status and a "name:line:col:" message;
 *   - every prefix of every program parses or fails cleanly, and an allocator that fails
 *     the Nth allocation never causes a crash or a leak (a counting allocator checks that
 *     every byte comes back);
 *   - the fusec CLI: commands, --help, exit codes.
 */
#include <criterion/criterion.h>

#include <fusec.h>

#include "graph.h"
#include "test_util.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- a counting allocator that can fail the Nth allocation ------------------------------ */

typedef struct tracker {
    long long live_bytes;
    long long calls;
    long long fail_at; /* 0: never */
    bool failed;
} tracker;

static void *t_malloc(void *user, size_t size) {
    tracker *t = user;
    t->calls++;
    if (t->fail_at && t->calls == t->fail_at) {
        t->failed = true;
        return NULL;
    }
    void *p = malloc(size);
    if (p) t->live_bytes += (long long)size;
    return p;
}

static void *t_realloc(void *user, void *ptr, size_t old_size, size_t new_size) {
    tracker *t = user;
    t->calls++;
    if (t->fail_at && t->calls == t->fail_at) {
        t->failed = true;
        return NULL;
    }
    void *p = realloc(ptr, new_size);
    if (p) t->live_bytes += (long long)new_size - (long long)old_size;
    return p;
}

static void t_free(void *user, void *ptr, size_t size) {
    tracker *t = user;
    if (ptr) t->live_bytes -= (long long)size;
    free(ptr);
}

static fc_ctx *tracked_ctx(tracker *t) {
    static fc_allocator alloc;
    alloc = (fc_allocator){t_malloc, t_realloc, t_free, t};
    memset(t, 0, sizeof *t);
    return tu_host_ctx_with(&alloc);
}

/* ---- files ------------------------------------------------------------------------------ */

typedef struct file_list {
    char **paths;
    int n;
} file_list;

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The .fc files of a directory, sorted. */
static file_list list_fc(const char *dir) {
    file_list fl = {NULL, 0};
    DIR *d = opendir(dir);
    cr_assert(d, "cannot open %s", dir);
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n < 4 || strcmp(e->d_name + n - 3, ".fc") != 0) continue;
        fl.paths = realloc(fl.paths, sizeof(char *) * (size_t)(fl.n + 1));
        fl.paths[fl.n] = malloc(strlen(dir) + n + 2);
        sprintf(fl.paths[fl.n], "%s/%s", dir, e->d_name);
        fl.n++;
    }
    closedir(d);
    qsort(fl.paths, (size_t)fl.n, sizeof(char *), cmp_str);
    return fl;
}

static void free_list(file_list *fl) {
    for (int i = 0; i < fl->n; i++) free(fl->paths[i]);
    free(fl->paths);
}

static file_list all_programs(void) {
    file_list a = list_fc(FUSEC_SOURCE_DIR "/bench/fc");
    file_list b = list_fc(FUSEC_TEST_DATA_DIR "/fc");
    cr_assert_geq(a.n, 11, "bench/fc should hold W1..W11");
    cr_assert_geq(b.n, 20);
    a.paths = realloc(a.paths, sizeof(char *) * (size_t)(a.n + b.n));
    memcpy(a.paths + a.n, b.paths, sizeof(char *) * (size_t)b.n);
    a.n += b.n;
    free(b.paths);
    return a;
}

/* Symbol values the tests use (syntax_symbolic.fc has n and m). */
static void bind_symbols(fc_program *p) {
    for (int i = 0; i < fc_program_num_symbols(p); i++) {
        const char *s = fc_program_symbol_name(p, i);
        cr_assert_eq(fc_program_set_symbol(p, s, strcmp(s, "m") == 0 ? 3 : 7), FC_OK);
    }
}

static bool hash_eq(fc_hash a, fc_hash b) { return a.lo == b.lo && a.hi == b.hi; }

/* ---- deterministic input data ----------------------------------------------------------- */

static uint64_t mix(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Random data in dtype: floats in [-2, 2), signed ints in [-20, 20), unsigned in [0, 40). */
static void *random_data(fc_dtype dt, int64_t n, uint64_t seed) {
    size_t es = fc_dtype_size(dt);
    unsigned char *buf = malloc(n ? (size_t)n * es : 1);
    uint64_t s = seed * 7919 + 17;
    int64_t parts = (dt == FC_C64 || dt == FC_C128) ? 2 * n : n;
    for (int64_t i = 0; i < parts; i++) {
        uint64_t r = mix(&s);
        double u = (double)(r >> 11) * 0x1p-53 * 4.0 - 2.0;
        int64_t si = (int64_t)(r % 40) - 20;
        uint64_t ui = r % 40;
        switch (dt) {
        case FC_BOOL: buf[i] = (unsigned char)(r & 1); break;
        case FC_I8: ((int8_t *)buf)[i] = (int8_t)si; break;
        case FC_I16: ((int16_t *)buf)[i] = (int16_t)si; break;
        case FC_I32: ((int32_t *)buf)[i] = (int32_t)si; break;
        case FC_I64: ((int64_t *)buf)[i] = si; break;
        case FC_U8: ((uint8_t *)buf)[i] = (uint8_t)ui; break;
        case FC_U16: ((uint16_t *)buf)[i] = (uint16_t)ui; break;
        case FC_U32: ((uint32_t *)buf)[i] = (uint32_t)ui; break;
        case FC_U64: ((uint64_t *)buf)[i] = ui; break;
        case FC_F16: ((uint16_t *)buf)[i] = fcg_f32_to_f16((float)u); break;
        case FC_BF16: ((uint16_t *)buf)[i] = fcg_f32_to_bf16((float)u); break;
        case FC_F32:
        case FC_C64: ((float *)buf)[i] = (float)u; break;
        default: ((double *)buf)[i] = u; break;
        }
    }
    return buf;
}

static fc_array *data_input(fc_ctx *ctx, fc_dtype dt, fc_shape shape, uint64_t seed) {
    int64_t n = 1;
    for (int d = 0; d < shape.ndim; d++) n *= shape.dim[d];
    void *buf = random_data(dt, n, seed);
    fc_array *a = fc_from_host(ctx, dt, shape, buf);
    free(buf);
    cr_assert_eq(fc_array_status(a), FC_OK);
    return a;
}

/* A program-input placeholder (as fc_program_build makes for NULL inputs), for hashing a
 * full-size graph built by hand without its data. */
static fc_array *placeholder(fc_ctx *ctx, int index, fc_dtype dt, fc_shape shape) {
    fcg_params p;
    memset(&p, 0, sizeof p);
    p.ival = index;
    fc_array *a = fcg_make(ctx, FCG_OP_INPUT, dt, dt, false, shape.ndim, shape.dim, 0, NULL, &p);
    cr_assert_eq(fc_array_status(a), FC_OK);
    return a;
}

/* Reads a whole evaluated array into a fresh buffer first poisoned with 0xA5. */
static void *read_all(fc_array *a, size_t *bytes) {
    *bytes = (size_t)fc_array_size(a) * fc_dtype_size(fc_array_dtype(a));
    void *buf = malloc(*bytes ? *bytes : 1);
    memset(buf, 0xA5, *bytes ? *bytes : 1);
    fc_status st = fc_to_host(a, buf, *bytes);
    cr_assert_eq(st, FC_OK, "fc_to_host: %s", fc_errmsg(fc_array_ctx(a)));
    return buf;
}

/* ---- the programs written with the C API ------------------------------------------------ */

#define F(v) fc_f64(ctx, (v))
#define I(v) fc_i64(ctx, (v))
#define B(v) fc_bool(ctx, (v))
#define C(re, im) fc_c128(ctx, (re), (im))
#define NONE_AXIS FC_AXIS_NONE

typedef void (*builder_fn)(fc_ctx *ctx, fc_array **in, fc_array **out, const int64_t *dims);

static void build_w01(fc_ctx *ctx, fc_array **in, fc_array **out, const int64_t *dims) {
    (void)dims;
    fc_array *x = in[0];
    out[0] = fc_tanh(fc_add(fc_sin(x), fc_mul(F(0.1), x)));
}

static void build_w02(fc_ctx *ctx, fc_array **in, fc_array **out, const int64_t *dims) {
    (void)dims;
    out[0] = fc_add(fc_pow(in[0], I(2)), fc_mul(I(2), in[1]));
}

static void build_w03(fc_ctx *ctx, fc_array **in, fc_array **out, const int64_t *dims) {
    (void)dims;
    (void)ctx;
    out[0] = fc_sum(in[0], FC_ALL, false);
}

static void build_w04(fc_ctx *ctx, fc_array **in, fc_array **out, const int64_t *dims) {
    (void)dims;
    (void)ctx;
    fc_array *x = in[0];
    fc_array *m = fc_max(x, FC_AXES(1), true);
    fc_array *e = fc_exp(fc_sub(x, m));
    out[0] = fc_div(e, fc_sum(e, FC_AXES(1), true));
}

static void build_w05(fc_ctx *ctx, fc_array **in, fc_array **out, const int64_t *dims) {
    (void)dims;
    fc_array *x = in[0];
    out[0] = fc_where(fc_greater(x, F(0.5)), x, fc_mul(F(0.1), x));
}

static void build_w06(fc_ctx *ctx, fc_array **in, fc_array **out, const int64_t *dims) {
    (void)dims;
    (void)ctx;
    out[0] = fc_sqrt(fc_sum(fc_mul(in[0], in[0]), FC_AXES(1), false));
}

static void build_w07(fc_ctx *ctx, fc_array **in, fc_array **out, const int64_t *dims) {
    (void)dims;
    (void)ctx;
    fc_array *d = in[0];
    out[0] = fc_div(fc_sub(d, fc_mean(d, FC_AXES(0), false)), fc_std(d, FC_AXES(0), false, 0));
}

/* dims: height, width, iterations */
static void build_w08(fc_ctx *ctx, fc_array **in, fc_array **out, const int64_t *dims) {
    (void)in;
    int64_t h = dims[0], w = dims[1];
    fc_array *re = fc_linspace(ctx, FC_F64, -2.0, 0.5, w, true);
    fc_array *im = fc_linspace(ctx, FC_F64, -1.25, 1.25, h, true);
    fc_array *c = fc_add(fc_slice(re, FC_NEWAXIS, FC_COLON),
                         fc_mul(fc_slice(im, FC_COLON, FC_NEWAXIS), C(0, 1)));
    fc_array *z = fc_zeros(ctx, FC_C128, FC_SHAPE(h, w));
    fc_array *n = fc_zeros(ctx, FC_I32, FC_SHAPE(h, w));
    for (int64_t k = 0; k < dims[2]; k++) {
        fc_array *b = fc_less_equal(fc_abs(z), I(2));
        z = fc_where(b, fc_add(fc_mul(z, z), c), z);
        n = fc_add(n, b);
    }
    out[0] = n;
}

static void build_w09(fc_ctx *ctx, fc_array **in, fc_array **out, const int64_t *dims) {
    (void)dims;
    const int64_t widths[1][2] = {{1, 1}};
    fc_array *p = fc_pad(in[0], 1, widths, FC_PAD_SYMMETRIC, 0);
    const fc_idx part[3] = {FC_S(FC_NIL, -2, FC_NIL), FC_S(1, -1, FC_NIL), FC_S(2, FC_NIL, FC_NIL)};
    fc_array *s = NULL;
    for (int i = 0; i < 3; i++) {
        for (int j = 0; j < 3; j++) {
            fc_array *v = fc_slice(p, part[i], part[j]);
            s = s ? fc_add(s, v) : v;
        }
    }
    out[0] = fc_div(s, I(9));
}

static void build_w10(fc_ctx *ctx, fc_array **in, fc_array **out, const int64_t *dims) {
    (void)dims;
    out[0] = fc_add(fc_mul(I(2), in[0]), in[1]);
}

static void build_w11(fc_ctx *ctx, fc_array **in, fc_array **out, const int64_t *dims) {
    (void)dims;
    (void)ctx;
    out[0] = fc_mean(fc_mul(in[0], fc_slice(in[1], FC_NEWAXIS, FC_COLON)), FC_AXES(0), false);
}

static void build_arith(fc_ctx *ctx, fc_array **in, fc_array **out, const int64_t *dims) {
    (void)dims;
    fc_array *x = in[0], *y = in[1];
    out[0] = fc_sub(fc_add(fc_negative(fc_pow(x, I(2))), fc_mul(I(3), x)), fc_div(y, F(2.5)));
    out[1] = fc_pow(I(2), fc_negative(fc_pow(x, I(2))));
    out[2] = fc_mul(fc_pow(I(-2), I(2)), x);
    out[3] = fc_add(fc_mod(fc_floordiv(x, F(0.75)), F(2.0)), fc_mod(x, F(-1.5)));
    out[4] = fc_add(fc_sub(fc_mul(x, F(1e-3)), F(5.0)), F(1.0));
    out[5] = fc_matmul(x, y);
    out[6] = fc_matmul(fc_matmul(fc_transpose(x), x), y);
    out[7] = fc_add(fc_add(fc_sub(fc_mul(x, B(true)), B(false)), fc_mul(F(INFINITY), I(0))), F(NAN));
    out[8] = fc_add(fc_mul(fc_negative(fc_sub(x, y)), I(-1)), fc_negative(fc_negative(x)));
}

static void build_compare(fc_ctx *ctx, fc_array **in, fc_array **out, const int64_t *dims) {
    (void)dims;
    fc_array *x = in[0], *y = in[1];
    fc_array *lt = fc_less(x, y), *le = fc_less_equal(x, F(0.5)), *gt = fc_greater(x, y);
    fc_array *ge = fc_greater_equal(x, F(-0.25)), *eq = fc_equal(x, y), *ne = fc_not_equal(x, F(0.5));
    fc_array *m1 = fc_bitwise_or(fc_bitwise_and(lt, ge), fc_bitwise_xor(fc_bitwise_not(eq), ne));
    fc_array *m2 = fc_bitwise_and(fc_bitwise_or(lt, gt), fc_bitwise_xor(le, B(true)));
    out[0] = m1;
    out[1] = m2;
    out[2] = fc_add(fc_add(fc_logical_and(lt, ge), fc_mul(fc_logical_or(gt, eq), fc_logical_xor(le, ne))),
                    fc_logical_not(m1));
    out[3] = fc_add(fc_where(m2, x, y), fc_where(m1, I(1), F(0.5)));
}

static void build_int(fc_ctx *ctx, fc_array **in, fc_array **out, const int64_t *dims) {
    (void)dims;
    fc_array *a = in[0], *b = in[1], *u = in[2];
    out[0] = fc_sub(fc_add(a, fc_mul(b, I(3))), I(7));
    out[1] = fc_sub(fc_add(fc_floordiv(a, b), fc_mod(a, b)), fc_floordiv(a, I(-3)));
    out[2] = fc_add(fc_add(fc_left_shift(a, I(2)), fc_right_shift(b, I(1))), fc_left_shift(u, I(1)));
    out[3] = fc_bitwise_or(fc_bitwise_or(fc_bitwise_and(a, b), fc_bitwise_xor(a, I(5))), fc_bitwise_not(b));
    out[4] = fc_sub(fc_add(fc_add(fc_add(fc_add(fc_abs(a), fc_negative(b)), fc_sign(a)), fc_square(b)),
                           fc_maximum(a, b)),
                    fc_minimum(a, I(1)));
    out[5] = fc_add(fc_pow(a, I(2)), fc_pow(b, I(3)));
    out[6] = fc_add(fc_div(a, I(4)), fc_div(u, I(3)));
}

static void build_views(fc_ctx *ctx, fc_array **in, fc_array **out, const int64_t *dims) {
    (void)dims;
    fc_array *x = in[0], *v = in[1];
    int k = 0;
    out[k++] = fc_slice(x, FC_S(1, -1, FC_NIL), FC_S(FC_NIL, FC_NIL, 2));
    out[k++] = fc_slice(x, FC_NEWAXIS);
    out[k++] = fc_slice(x, FC_AT(0));
    out[k++] = fc_slice(x, FC_ELLIPSIS, FC_AT(1));
    out[k++] = fc_slice(x, FC_S(FC_NIL, FC_NIL, -1), FC_S(5, 1, -2));
    out[k++] = fc_slice(v, FC_S(-3, FC_NIL, FC_NIL));
    out[k++] = fc_slice(v, FC_S(FC_NIL, FC_NIL, -3));
    out[k++] = fc_slice(v, FC_S(8, -12, -1));
    out[k++] = fc_slice(x, FC_AT(2), FC_NEWAXIS, FC_S(1, 3, FC_NIL));
    out[k++] = fc_slice(fc_slice(x, FC_COLON, FC_COLON, FC_NEWAXIS), FC_ELLIPSIS, FC_AT(0));
    out[k++] = fc_slice(v, FC_S(3, 3, FC_NIL));
    out[k++] = fc_reshape(x, FC_SHAPE(4, -1));
    out[k++] = fc_reshape(x, FC_SHAPE(2, 3, 8));
    out[k++] = fc_transpose(x);
    out[k++] = fc_permute(fc_reshape(x, FC_SHAPE(2, 3, 8)), FC_AXES(2, 0, 1));
    out[k++] = fc_broadcast_to(v, FC_SHAPE(3, 10));
    out[k++] = fc_expand_dims(v, 0);
    out[k++] = fc_squeeze(fc_reshape(x, FC_SHAPE(1, 6, 1, 8)), FC_ALL);
    out[k++] = fc_squeeze(fc_reshape(x, FC_SHAPE(1, 6, 1, 8)), FC_AXES(0, 2));
    out[k++] = fc_flip(x, FC_ALL);
    out[k++] = fc_flip(x, FC_AXES(1));
    out[k++] = fc_flip(x, FC_AXES(0));
    const int64_t w2[1][2] = {{2, 2}}, w12[1][2] = {{1, 2}}, w3[2][2] = {{1, 0}, {0, 3}};
    const int64_t w23[1][2] = {{2, 3}}, w11[1][2] = {{1, 1}};
    out[k++] = fc_pad(x, 1, w2, FC_PAD_CONSTANT, 0);
    out[k++] = fc_pad(x, 1, w12, FC_PAD_EDGE, 0);
    out[k++] = fc_pad(x, 2, w3, FC_PAD_REFLECT, 0);
    out[k++] = fc_pad(v, 1, w23, FC_PAD_SYMMETRIC, 0);
    out[k++] = fc_pad(x, 1, w11, FC_PAD_CONSTANT, -1.5);
    out[k++] = fc_concatenate(ctx, (fc_array *[]){x, fc_slice(x, FC_S(FC_NIL, 2, FC_NIL))}, 2, 0);
    out[k++] = fc_concatenate(ctx, (fc_array *[]){x, x}, 2, 1);
    out[k++] = fc_stack(ctx, (fc_array *[]){v, fc_mul(v, I(2)), fc_add(v, I(1))}, 3, 0);
    out[k++] = fc_stack(ctx, (fc_array *[]){v, v}, 2, 1);
}

static void build_reduce(fc_ctx *ctx, fc_array **in, fc_array **out, const int64_t *dims) {
    (void)dims;
    fc_array *x = in[0], *b = in[1];
    int k = 0;
    out[k++] = fc_sum(x, FC_ALL, false);
    out[k++] = fc_sum(x, FC_AXES(1), false);
    out[k++] = fc_sum(x, FC_AXES(0, 2), true);
    out[k++] = fc_sum(x, FC_ALL, false);
    out[k++] = fc_sum(x, FC_AXES(-1), false);
    out[k++] = fc_prod(fc_add(fc_mul(x, F(0.5)), F(0.75)), FC_AXES(2), false);
    out[k++] = fc_mean(x, FC_AXES(0, 1), false);
    out[k++] = fc_sub(fc_max(x, FC_AXES(2), false), fc_slice(fc_min(x, FC_AXES(2), true), FC_ELLIPSIS, FC_AT(0)));
    out[k++] = fc_add(fc_max(x, FC_AXES(1), false), fc_min(x, FC_AXES(1), false));
    out[k++] = fc_argmax(x, NONE_AXIS, false);
    out[k++] = fc_argmax(x, 1, false);
    out[k++] = fc_argmin(x, 2, true);
    out[k++] = fc_any(b, FC_AXES(0), false);
    out[k++] = fc_all(b, FC_AXES(1), false);
    out[k++] = fc_var(x, FC_AXES(0), false, 0);
    out[k++] = fc_var(x, FC_AXES(1, 2), false, 1);
    out[k++] = fc_std(x, FC_AXES(0), true, 2);
    out[k++] = fc_norm(x, FC_AXES(2), false, FC_NORM_L1);
    out[k++] = fc_norm(x, FC_AXES(0, 1), false, FC_NORM_L2);
    out[k++] = fc_norm(x, FC_AXES(1), false, FC_NORM_INF);
    out[k++] = fc_norm(x, FC_ALL, true, FC_NORM_L2);
}

static void build_creation(fc_ctx *ctx, fc_array **in, fc_array **out, const int64_t *dims) {
    (void)dims;
    fc_array *x = in[0];
    int k = 0;
    out[k++] = fc_add(fc_zeros(ctx, FC_F32, FC_SHAPE(4, 4)), x);
    out[k++] = fc_ones(ctx, FC_F64, FC_SHAPE(4));
    out[k++] = fc_empty(ctx, FC_I16, FC_SHAPE(2, 3));
    out[k++] = fc_full(ctx, FC_F16, FC_SHAPE(4), 2.5);
    out[k++] = fc_full(ctx, FC_I64, FC_SHAPE(2, 2), 7);
    /* 2**53 + 1 has no double: the C API cannot say it, so build the node fc_full would. */
    fcg_params p;
    memset(&p, 0, sizeof p);
    p.ival = 9007199254740993LL;
    out[k++] = fcg_make(ctx, FCG_OP_CONST, FC_I64, FC_I64, false, 0, NULL, 0, NULL, &p);
    out[k++] = fc_full_complex(ctx, FC_C64, FC_SHAPE(3), 1, -2);
    out[k++] = fc_full(ctx, FC_BOOL, FC_SCALAR, 1);
    out[k++] = fc_arange(ctx, FC_I64, 0, 10, 1);
    out[k++] = fc_arange(ctx, FC_F64, 1, 2, 0.1);
    out[k++] = fc_arange(ctx, FC_F32, 5, 0, -1.5);
    out[k++] = fc_arange(ctx, FC_F64, 0, 1, 0.3);
    out[k++] = fc_linspace(ctx, FC_F64, 0, 1, 5, true);
    out[k++] = fc_linspace(ctx, FC_F32, -1, 1, 4, false);
    out[k++] = fc_eye(ctx, FC_F64, 3, 3, 0);
    out[k++] = fc_eye(ctx, FC_I32, 3, 4, 1);
    out[k++] = fc_eye(ctx, FC_BOOL, 4, 2, -1);
    out[k++] = fc_random_uniform(ctx, FC_F32, FC_SHAPE(3, 3), 7);
    out[k++] = fc_random_uniform(ctx, FC_C128, FC_SHAPE(5), UINT64_MAX);
    out[k++] = fc_add(fc_mul(x, C(0.5, -1)), C(0, 2));
    out[k++] = fc_add(fc_add(fc_add(fc_zeros_like(x), fc_ones_like(x)), fc_full_like(x, 3)), fc_empty_like(x));
}

static void build_literals(fc_ctx *ctx, fc_array **in, fc_array **out, const int64_t *dims) {
    (void)dims;
    fc_array *x = in[0], *n = in[1];
    const int64_t w[2][2] = {{1, 1}, {0, 2}};
    out[0] = fc_add(fc_add(fc_add(fc_add(fc_add(x, I(16)), I(3)), I(7)), F(100)), F(0.25));
    out[1] = fc_mul(fc_cast(n, FC_F32), I(3));
    out[2] = fc_pad(x, 2, w, FC_PAD_EDGE, 0);
    out[3] = fc_add(fc_cast(fc_greater(x, I(1)), FC_I8), fc_cast(n, FC_I8));
    out[4] = fc_add(fc_add(fc_add(fc_add(fc_abs(fc_sub(x, I(2))), fc_conj(x)), fc_pow(x, I(2))), fc_mod(x, I(3))),
                    fc_div(x, I(7)));
    out[5] = fc_add(fc_add(fc_add(fc_bitwise_not(n), fc_bitwise_not(n)), fc_bitwise_not(n)), fc_left_shift(n, I(1)));
    out[6] = fc_add(fc_add(fc_add(fc_arctan2(x, I(2)), fc_arctan2(x, I(3))), fc_arccos(fc_mul(x, F(0.1)))),
                    fc_arcsinh(x));
    out[7] = fc_add(fc_add(fc_add(fc_maximum(x, F(1.0)), fc_fmax(x, F(NAN))), fc_fmin(x, F(-INFINITY))),
                    fc_clip(x, F(0.25), F(0.75)));
}

static void build_complex(fc_ctx *ctx, fc_array **in, fc_array **out, const int64_t *dims) {
    (void)dims;
    fc_array *z = in[0], *x = in[1];
    out[0] = fc_add(fc_real(z), fc_mul(fc_imag(z), I(2)));
    out[1] = fc_sub(fc_mul(fc_conj(z), fc_add(I(1), C(0, 2))), C(0, 0.5));
    out[2] = fc_add(fc_abs(z), fc_angle(z));
    out[3] = fc_add(fc_mul(z, x), C(-1.5, 0.25));
    out[4] = fc_add(fc_add(fc_exp(z), fc_sqrt(z)), fc_log(fc_add(z, I(3))));
}

static void build_casts(fc_ctx *ctx, fc_array **in, fc_array **out, const int64_t *dims) {
    (void)dims;
    fc_array *x = in[0];
    out[0] = fc_cast(fc_mul(x, I(50)), FC_I8);
    out[1] = fc_mul(fc_cast(x, FC_F16), I(2));
    out[2] = fc_add(fc_cast(x, FC_BF16), I(1));
    out[3] = fc_add(fc_cast(fc_greater(x, F(0.5)), FC_U16), fc_cast(x, FC_C128));
    out[4] = fc_div(fc_cast(fc_cast(fc_mul(fc_abs(x), I(1000)), FC_U32), FC_F64), I(7));
    out[5] = fc_cast(x, FC_BOOL);
}

/* n = 7, m = 3 (bind_symbols) */
static void build_symbolic(fc_ctx *ctx, fc_array **in, fc_array **out, const int64_t *dims) {
    (void)dims;
    (void)ctx;
    fc_array *x = in[0], *y = in[1], *w = in[2];
    out[0] = fc_mul(x, fc_slice(y, FC_COLON, FC_NEWAXIS));
    out[1] = fc_add(fc_sum(out[0], FC_AXES(1), false), fc_slice(w, FC_AT(0)));
    out[2] = fc_reshape(x, FC_SHAPE(7, 2, 4));
}

static void build_outputs(fc_ctx *ctx, fc_array **in, fc_array **out, const int64_t *dims) {
    (void)dims;
    fc_array *y = fc_mul(in[0], I(2));
    out[0] = y;
    out[1] = y;
    out[2] = in[0];
    out[3] = y;
    out[4] = F(3.5);
}

/* n = 7 (bind_symbols) */
static void build_sorts(fc_ctx *ctx, fc_array **in, fc_array **out, const int64_t *dims) {
    (void)dims;
    fc_array *x = in[0], *i = in[1], *z = in[2];
    int k = 0;
    out[k++] = fc_sort(x, -1);
    out[k++] = fc_argsort(x, 0);
    out[k++] = fc_sort(i, -2);
    out[k++] = fc_argsort(i, FC_AXIS_NONE);
    out[k++] = fc_argsort(x, -1);
    out[k++] = fc_sort(fc_mul(fc_exp(x), I(2)), FC_AXIS_NONE);
    out[k++] = fc_sub(fc_take_along_axis(x, fc_argsort(x, 1), 1), fc_sort(x, 1));
    out[k++] = fc_add(fc_partition(x, 2, 0), fc_argpartition(x, -1, -1));
    out[k++] = fc_add(fc_sort(z, -1),
                      fc_slice(fc_sort(fc_slice(i, FC_AT(0)), -1), FC_AT(0), FC_AT(0)));
    fc_rng p = {3, 0}, q = {3, 1}, r = {5, 0}, s = {5, 1};
    out[k++] = fc_rng_permutation(ctx, &p, 10);
    out[k++] = fc_rng_shuffle(ctx, &q, i, 1);
    out[k++] = fc_rng_choice(ctx, &r, 10, FC_SHAPE(2, 3), false);
    out[k++] = fc_rng_choice_array(ctx, &s, x, FC_SHAPE(3), true);
}

typedef struct program_case {
    const char *file; /* relative to the source tree */
    builder_fn build;
    int64_t dims[3];
    bool evaluate; /* small: evaluate both and compare values */
} program_case;

static const program_case cases[] = {
    {"tests/data/fc/w01_tanh_sin.fc", build_w01, {0}, true},
    {"tests/data/fc/w02_poly.fc", build_w02, {0}, true},
    {"tests/data/fc/w03_sum.fc", build_w03, {0}, true},
    {"tests/data/fc/w04_softmax.fc", build_w04, {0}, true},
    {"tests/data/fc/w05_leaky_relu.fc", build_w05, {0}, true},
    {"tests/data/fc/w06_row_l2norm.fc", build_w06, {0}, true},
    {"tests/data/fc/w07_normalize_cols.fc", build_w07, {0}, true},
    {"tests/data/fc/w08_mandelbrot.fc", build_w08, {24, 32, 20}, true},
    {"tests/data/fc/w09_box_blur.fc", build_w09, {0}, true},
    {"tests/data/fc/w10_saxpy.fc", build_w10, {0}, true},
    {"tests/data/fc/w11_col_mean_scaled.fc", build_w11, {0}, true},
    {"tests/data/fc/syntax_arith.fc", build_arith, {0}, true},
    {"tests/data/fc/syntax_compare.fc", build_compare, {0}, true},
    {"tests/data/fc/syntax_int.fc", build_int, {0}, true},
    {"tests/data/fc/syntax_views.fc", build_views, {0}, true},
    {"tests/data/fc/syntax_reduce.fc", build_reduce, {0}, true},
    {"tests/data/fc/syntax_creation.fc", build_creation, {0}, true},
    {"tests/data/fc/syntax_literals.fc", build_literals, {0}, true},
    {"tests/data/fc/syntax_complex.fc", build_complex, {0}, true},
    {"tests/data/fc/syntax_casts.fc", build_casts, {0}, true},
    {"tests/data/fc/syntax_symbolic.fc", build_symbolic, {0}, true},
    {"tests/data/fc/syntax_outputs.fc", build_outputs, {0}, true},
    {"tests/data/fc/sorts.fc", build_sorts, {0}, true},
    {"bench/fc/w01_tanh_sin.fc", build_w01, {0}, false},
    {"bench/fc/w02_poly.fc", build_w02, {0}, false},
    {"bench/fc/w03_sum.fc", build_w03, {0}, false},
    {"bench/fc/w04_softmax.fc", build_w04, {0}, false},
    {"bench/fc/w05_leaky_relu.fc", build_w05, {0}, false},
    {"bench/fc/w06_row_l2norm.fc", build_w06, {0}, false},
    {"bench/fc/w07_normalize_cols.fc", build_w07, {0}, false},
    {"bench/fc/w08_mandelbrot.fc", build_w08, {2048, 2048, 100}, false},
    {"bench/fc/w09_box_blur.fc", build_w09, {0}, false},
    {"bench/fc/w10_saxpy.fc", build_w10, {0}, false},
    {"bench/fc/w11_col_mean_scaled.fc", build_w11, {0}, false},
};
#define NCASES (int)(sizeof cases / sizeof cases[0])

#define MAX_OUT 64

/* Builds case c in ctx: from the .fc file (parsed) or by hand (the builder), on the same
 * inputs, data or placeholders. */
static int build_case(fc_ctx *ctx, const program_case *c, bool parsed, bool with_data,
                      fc_array **outs) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", FUSEC_SOURCE_DIR, c->file);
    fc_program *p;
    fc_status st = fc_program_load(ctx, path, &p);
    cr_assert_eq(st, FC_OK, "%s: %s", c->file, fc_errmsg(ctx));
    bind_symbols(p);
    int nin = fc_program_num_inputs(p), nout = fc_program_num_outputs(p);
    cr_assert_leq(nout, MAX_OUT);
    fc_array *ins[16];
    cr_assert_leq(nin, 16);
    for (int i = 0; i < nin; i++) {
        fc_shape shape;
        cr_assert_eq(fc_program_input_shape(p, i, &shape), FC_OK);
        fc_dtype dt = fc_program_input_dtype(p, i);
        ins[i] = with_data ? data_input(ctx, dt, shape, (uint64_t)i + 1) : placeholder(ctx, i, dt, shape);
    }
    if (parsed) {
        st = fc_program_build(p, ins, outs);
        cr_assert_eq(st, FC_OK, "%s: %s", c->file, fc_errmsg(ctx));
    } else {
        for (int i = 0; i < MAX_OUT; i++) outs[i] = NULL;
        c->build(ctx, ins, outs, c->dims);
        for (int i = 0; i < nout; i++) {
            cr_assert(outs[i], "%s: the C builder made no output %d", c->file, i);
            cr_assert_eq(fc_array_status(outs[i]), FC_OK, "%s: C builder output %d: %s", c->file, i,
                         fc_array_errmsg(outs[i]));
        }
        cr_assert_null(outs[nout], "%s: the C builder made more outputs than the program", c->file);
    }
    fc_program_destroy(p);
    return nout;
}

/* ---- tests: programs -------------------------------------------------------------------- */

/* Parse, build, hash, print; the printed text parses to the same hash and prints the same. */
Test(fc, every_program_round_trips) {
    file_list fl = all_programs();
    fc_ctx *ctx = tu_host_ctx();
    for (int k = 0; k < fl.n; k++) {
        fc_scope *s = fc_scope_open(ctx);
        fc_program *p, *q;
        cr_assert_eq(fc_program_load(ctx, fl.paths[k], &p), FC_OK, "%s", fc_errmsg(ctx));
        bind_symbols(p);
        int n = fc_program_num_outputs(p);
        cr_assert(n >= 1 && n <= MAX_OUT);
        fc_array *o1[MAX_OUT], *o2[MAX_OUT];
        cr_assert_eq(fc_program_build(p, NULL, o1), FC_OK, "%s: %s", fl.paths[k], fc_errmsg(ctx));
        const char *names[MAX_OUT];
        for (int i = 0; i < n; i++) names[i] = fc_program_output_name(p, i);
        fc_hash h1, h2;
        cr_assert_eq(fc_graph_hash(o1, n, &h1), FC_OK);
        char *t1, *t2, *t3;
        cr_assert_eq(fc_program_print(ctx, o1, n, names, &t1), FC_OK, "%s", fc_errmsg(ctx));
        cr_assert_eq(fc_program_print(ctx, o1, n, names, &t3), FC_OK);
        cr_assert_str_eq(t1, t3, "%s: printing twice differs", fl.paths[k]);
        cr_assert_eq(fc_program_parse(ctx, t1, strlen(t1), "printed", &q), FC_OK,
                     "%s: the printed text does not parse: %s\n%s", fl.paths[k], fc_errmsg(ctx), t1);
        cr_assert_eq(fc_program_num_outputs(q), n);
        for (int i = 0; i < n; i++) cr_assert_str_eq(fc_program_output_name(q, i), names[i]);
        cr_assert_eq(fc_program_build(q, NULL, o2), FC_OK, "%s", fc_errmsg(ctx));
        cr_assert_eq(fc_graph_hash(o2, n, &h2), FC_OK);
        cr_assert(hash_eq(h1, h2), "%s: print -> parse changed the graph:\n%s", fl.paths[k], t1);
        cr_assert_eq(fc_program_print(ctx, o2, n, names, &t2), FC_OK);
        cr_assert_str_eq(t1, t2, "%s: reprinting differs", fl.paths[k]);
        fc_free(ctx, t1);
        fc_free(ctx, t2);
        fc_free(ctx, t3);
        fc_program_destroy(p);
        fc_program_destroy(q);
        fc_scope_close(s);
    }
    fc_ctx_destroy(ctx);
    free_list(&fl);
}

/* Each program is the graph written by hand with the C API: equal structural hashes across
 * two contexts; the small ones also evaluate to bitwise equal values. */
Test(fc, programs_match_the_c_api) {
    for (int k = 0; k < NCASES; k++) {
        const program_case *c = &cases[k];
        fc_ctx *a = tu_host_ctx(), *b = tu_host_ctx();
        fc_scope *sa = fc_scope_open(a), *sb = fc_scope_open(b);
        fc_array *oa[MAX_OUT + 1], *ob[MAX_OUT + 1];
        int n = build_case(a, c, true, c->evaluate, oa);
        int m = build_case(b, c, false, c->evaluate, ob);
        cr_assert_eq(n, m);
        fc_hash ha, hb;
        cr_assert_eq(fc_graph_hash(oa, n, &ha), FC_OK);
        cr_assert_eq(fc_graph_hash(ob, n, &hb), FC_OK);
        cr_assert(hash_eq(ha, hb), "%s: the parsed graph differs from the C API's", c->file);
        if (c->evaluate) {
            cr_assert_eq(fc_eval(a, oa, n), FC_OK, "%s: %s", c->file, fc_errmsg(a));
            cr_assert_eq(fc_eval(b, ob, n), FC_OK, "%s: %s", c->file, fc_errmsg(b));
            for (int i = 0; i < n; i++) {
                cr_assert_eq(fc_array_dtype(oa[i]), fc_array_dtype(ob[i]));
                fc_shape sha = fc_array_shape(oa[i]), shb = fc_array_shape(ob[i]);
                cr_assert_eq(sha.ndim, shb.ndim);
                for (int d = 0; d < sha.ndim; d++) cr_assert_eq(sha.dim[d], shb.dim[d]);
                size_t na, nb;
                void *va = read_all(oa[i], &na), *vb = read_all(ob[i], &nb);
                cr_assert_eq(na, nb);
                cr_assert(memcmp(va, vb, na) == 0, "%s: output %d differs from the C API's", c->file, i);
                free(va);
                free(vb);
            }
        }
        fc_scope_close(sa);
        fc_scope_close(sb);
        fc_ctx_destroy(a);
        fc_ctx_destroy(b);
    }
}

/* NumPy's module prefixes name the same functions: fft.rfft(x) is rfft(x), random.normal(...)
 * is normal(...), linalg.norm(x) is norm(x) (the same graph); a variable of a module's name
 * is a variable. */
Test(fc, module_prefixes_name_the_same_functions) {
    static const char *const pairs[][2] = {
        {"y = fft.rfft(x, norm=\"ortho\")", "y = rfft(x, norm=\"ortho\")"},
        {"y = fft.fftshift(fft.irfft2(fft.fft2(x)))", "y = fftshift(irfft2(fft2(x)))"},
        {"y = fft.fftfreq(8, d=0.5) + x[0, 0]", "y = fftfreq(8, d=0.5) + x[0, 0]"},
        {"y = random.normal(0.0, 1.0, [4, 6], seed=3) * x", "y = normal(0.0, 1.0, [4, 6], seed=3) * x"},
        {"y = linalg.norm(x, axis=1)", "y = norm(x, axis=1)"},
        {"y = linalg.matmul(x, x.T)", "y = matmul(x, x.T)"},
        {"y = random.choice(x, 2, seed=1) + random.permutation(6, stream=2)",
         "y = choice(x, 2, seed=1) + permutation(6, stream=2)"},
    };
    for (size_t i = 0; i < sizeof pairs / sizeof *pairs; i++) {
        fc_hash h[2];
        for (int k = 0; k < 2; k++) {
            char text[512];
            int len = snprintf(text, sizeof text, "x = input f64 [4, 6]\n%s\nout y\n", pairs[i][k]);
            fc_ctx *c = tu_host_ctx();
            fc_program *prog = NULL;
            cr_assert_eq(fc_program_parse(c, text, (size_t)len, "ns.fc", &prog), FC_OK, "%s: %s",
                         pairs[i][k], fc_errmsg(c));
            fc_array *x = fc_ones(c, FC_F64, FC_SHAPE(4, 6)), *y = NULL;
            cr_assert_eq(fc_program_build(prog, &x, &y), FC_OK, "%s: %s", pairs[i][k], fc_errmsg(c));
            cr_assert_eq(fc_graph_hash(&y, 1, &h[k]), FC_OK);
            fc_program_destroy(prog);
            fc_ctx_destroy(c);
        }
        cr_expect(hash_eq(h[0], h[1]), "%s and %s build different graphs", pairs[i][0],
                  pairs[i][1]);
    }
    /* a variable named fft is a variable */
    const char *text = "fft = input f64 [4, 6]\ny = fft.T + fft[0, 0]\nout y\n";
    fc_ctx *c = tu_host_ctx();
    fc_program *prog = NULL;
    cr_assert_eq(fc_program_parse(c, text, strlen(text), "ns.fc", &prog), FC_OK, "%s",
                 fc_errmsg(c));
    fc_program_destroy(prog);
    fc_ctx_destroy(c);
}

/* The values themselves, for one program: softmax rows sum to one and match a direct
 * computation in double (a check independent of the C API builder). */
Test(fc, softmax_program_values) {
    fc_ctx *ctx = tu_host_ctx();
    fc_program *p;
    cr_assert_eq(fc_program_load(ctx, FUSEC_TEST_DATA_DIR "/fc/w04_softmax.fc", &p), FC_OK);
    fc_shape shape;
    cr_assert_eq(fc_program_input_shape(p, 0, &shape), FC_OK);
    int64_t rows = shape.dim[0], cols = shape.dim[1];
    float *x = random_data(FC_F32, rows * cols, 5);
    fc_array *in = fc_from_host(ctx, FC_F32, shape, x), *out;
    cr_assert_eq(fc_program_build(p, &in, &out), FC_OK, "%s", fc_errmsg(ctx));
    size_t bytes;
    float *y = read_all(out, &bytes);
    cr_assert_eq(bytes, (size_t)(rows * cols) * sizeof(float));
    for (int64_t r = 0; r < rows; r++) {
        double mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j < cols; j++) mx = fmax(mx, x[r * cols + j]);
        for (int64_t j = 0; j < cols; j++) sum += exp((double)x[r * cols + j] - mx);
        for (int64_t j = 0; j < cols; j++) {
            double want = exp((double)x[r * cols + j] - mx) / sum;
            cr_assert_float_eq(y[r * cols + j], want, 1e-6, "row %lld col %lld", (long long)r, (long long)j);
        }
    }
    free(x);
    free(y);
    fc_release(in);
    fc_release(out);
    fc_program_destroy(p);
    fc_ctx_destroy(ctx);
}

/* ---- every elementwise op by name ------------------------------------------------------- */

static const struct {
    const char *alias;
    fcg_op op;
} ew_aliases[] = {
    {"absolute", FCG_OP_ABS},          {"conjugate", FCG_OP_CONJ},      {"true_divide", FCG_OP_DIV},
    {"mod", FCG_OP_MOD},               {"power", FCG_OP_POW},           {"invert", FCG_OP_BITWISE_NOT},
    {"bitwise_invert", FCG_OP_BITWISE_NOT}, {"bitwise_not", FCG_OP_BITWISE_NOT},
    {"acos", FCG_OP_ARCCOS},           {"asin", FCG_OP_ARCSIN},         {"atan", FCG_OP_ARCTAN},
    {"atan2", FCG_OP_ARCTAN2},         {"acosh", FCG_OP_ARCCOSH},       {"asinh", FCG_OP_ARCSINH},
    {"atanh", FCG_OP_ARCTANH},         {"bitwise_left_shift", FCG_OP_LEFT_SHIFT},
    {"bitwise_right_shift", FCG_OP_RIGHT_SHIFT},
};

/* "name(a, b, c)" over inputs of dtype dt in ctx a, against fcg_*_api[op] in ctx b: same hash,
 * same status, bitwise the same values. Returns false if the op rejects dt. */
static bool check_ew_name(const char *name, fcg_op op, fc_dtype dt) {
    int nin = fcg_ops[op].nin;
    fc_ctx *a = tu_host_ctx(), *b = tu_host_ctx();
    fc_scope *sa = fc_scope_open(a), *sb = fc_scope_open(b);
    const fc_shape shapes[3] = {FC_SHAPE(3, 4), FC_SHAPE(4), FC_SHAPE(3, 1)};
    fc_array *ia[3] = {NULL, NULL, NULL}, *ib[3] = {NULL, NULL, NULL};
    for (int i = 0; i < nin; i++) {
        fc_dtype t = (op == FCG_OP_WHERE && i == 0) ? FC_BOOL : dt;
        ia[i] = data_input(a, t, shapes[i], 100 + (uint64_t)i);
        ib[i] = data_input(b, t, shapes[i], 100 + (uint64_t)i);
    }
    fc_array *want = nin == 1 ? fcg_unary_api[op](ib[0])
                     : nin == 2 ? fcg_binary_api[op](ib[0], ib[1])
                                : fcg_ternary_api[op](ib[0], ib[1], ib[2]);
    bool ok = fc_array_status(want) == FC_OK;
    if (ok) {
        char text[512];
        const char *dn = fc_dtype_name(dt);
        snprintf(text, sizeof text,
                 "a = input %s [3, 4]\nb = input %s [4]\nc = input %s [3, 1]\ny = %s(%s)\nout y\n",
                 op == FCG_OP_WHERE ? "bool" : dn, dn, dn, name,
                 nin == 1 ? "a" : nin == 2 ? "a, b" : "a, b, c");
        fc_program *p;
        cr_assert_eq(fc_program_parse(a, text, strlen(text), "ew.fc", &p), FC_OK, "%s: %s", name,
                     fc_errmsg(a));
        fc_array *got;
        fc_array *ins[3] = {ia[0], nin > 1 ? ia[1] : ia[0], nin > 2 ? ia[2] : ia[0]};
        if (nin < 3) {
            /* Unused program inputs still need arrays of the declared shapes. */
            ins[1] = nin > 1 ? ia[1] : data_input(a, dt, shapes[1], 7);
            ins[2] = data_input(a, dt, shapes[2], 8);
        }
        cr_assert_eq(fc_program_build(p, ins, &got), FC_OK, "%s: %s", name, fc_errmsg(a));
        fc_hash hw, hg;
        cr_assert_eq(fc_graph_hash(&want, 1, &hw), FC_OK);
        cr_assert_eq(fc_graph_hash(&got, 1, &hg), FC_OK);
        cr_assert(hash_eq(hw, hg), "%s: parsed graph differs from fc_%s", name, fcg_ops[op].cname);
        fc_status sw = fc_eval(b, &want, 1), sg = fc_eval(a, &got, 1);
        cr_assert_eq(sw, sg, "%s: evaluation status differs", name);
        if (sw == FC_OK) {
            size_t nw, ng;
            void *vw = read_all(want, &nw), *vg = read_all(got, &ng);
            cr_assert_eq(nw, ng);
            cr_assert(memcmp(vw, vg, nw) == 0, "%s (%s): values differ", name, dn);
            free(vw);
            free(vg);
        }
        fc_program_destroy(p);
    }
    fc_scope_close(sa);
    fc_scope_close(sb);
    fc_ctx_destroy(a);
    fc_ctx_destroy(b);
    return ok;
}

static void check_ew_all_dtypes(const char *name, fcg_op op) {
    static const fc_dtype try_dtypes[] = {FC_F64, FC_I32, FC_BOOL};
    bool any = false;
    for (size_t i = 0; i < sizeof try_dtypes / sizeof try_dtypes[0] && !any; i++)
        any = check_ew_name(name, op, try_dtypes[i]);
    cr_assert(any, "%s: no dtype accepted", name);
}

Test(fc, every_elementwise_op_by_name) {
    int count = 0;
    for (int op = 0; op < FCG_OP_COUNT; op++) {
        const fcg_op_info *info = &fcg_ops[op];
        if (info->kind != FCG_KIND_EW || op == FCG_OP_CAST) continue;
        cr_assert(info->nin >= 1 && info->nin <= 3);
        bool has = (info->nin == 1 && fcg_unary_api[op]) || (info->nin == 2 && fcg_binary_api[op]) ||
                   (info->nin == 3 && fcg_ternary_api[op]);
        cr_assert(has, "op %s has no public constructor in the api tables", info->pyname);
        check_ew_all_dtypes(info->pyname, (fcg_op)op);
        if (strcmp(info->cname, info->pyname) != 0) check_ew_all_dtypes(info->cname, (fcg_op)op);
        count++;
    }
    cr_assert_geq(count, 60);
    for (size_t i = 0; i < sizeof ew_aliases / sizeof ew_aliases[0]; i++)
        check_ew_all_dtypes(ew_aliases[i].alias, ew_aliases[i].op);
}

/* ---- round trips of tricky graphs -------------------------------------------------------- */

static void check_round_trip(fc_ctx *ctx, fc_array *const *arrays, int n, const char *what) {
    for (int i = 0; i < n; i++)
        cr_assert_eq(fc_array_status(arrays[i]), FC_OK, "%s: %s", what, fc_array_errmsg(arrays[i]));
    char *t1, *t2;
    cr_assert_eq(fc_program_print(ctx, arrays, n, NULL, &t1), FC_OK, "%s: %s", what, fc_errmsg(ctx));
    fc_program *p;
    cr_assert_eq(fc_program_parse(ctx, t1, strlen(t1), what, &p), FC_OK, "%s: %s\n%s", what,
                 fc_errmsg(ctx), t1);
    fc_array *outs[MAX_OUT];
    cr_assert_eq(fc_program_num_outputs(p), n);
    cr_assert_eq(fc_program_build(p, NULL, outs), FC_OK, "%s: %s\n%s", what, fc_errmsg(ctx), t1);
    fc_hash h1, h2;
    cr_assert_eq(fc_graph_hash(arrays, n, &h1), FC_OK);
    cr_assert_eq(fc_graph_hash(outs, n, &h2), FC_OK);
    cr_assert(hash_eq(h1, h2), "%s: print -> parse changed the graph:\n%s", what, t1);
    cr_assert_eq(fc_program_print(ctx, outs, n, NULL, &t2), FC_OK);
    cr_assert_str_eq(t1, t2, "%s", what);
    fc_free(ctx, t1);
    fc_free(ctx, t2);
    fc_program_destroy(p);
}

Test(fc, tricky_values_round_trip) {
    fc_ctx *ctx = tu_host_ctx();
    fc_scope *s = fc_scope_open(ctx);
    fc_array *x = data_input(ctx, FC_F64, FC_SHAPE(3), 1);
    const double doubles[] = {NAN, -NAN, INFINITY, -INFINITY, -0.0, 0.0, 1e-300, 5e-324,
                              1.7976931348623157e308, 0.1, 1.0 / 3.0, -2.5, 1e16, 123456789.125,
                              1e-5, 10.0};
    for (size_t i = 0; i < sizeof doubles / sizeof doubles[0]; i++) {
        fc_array *arrs[3] = {fc_mul(x, F(doubles[i])), fc_pow(F(doubles[i]), x), F(doubles[i])};
        check_round_trip(ctx, arrs, 3, "weak f64");
    }
    const int64_t ints[] = {INT64_MIN, INT64_MAX, -1, 0, 1, (INT64_C(1) << 53) + 1};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        fc_array *xi = data_input(ctx, FC_I64, FC_SHAPE(3), 2);
        fc_array *arrs[4] = {fc_add(xi, I(ints[i])), fc_sub(I(ints[i]), xi), I(ints[i]),
                             fc_full(ctx, FC_I64, FC_SCALAR, (double)(ints[i] / 1024 * 1024))};
        check_round_trip(ctx, arrs, 4, "weak i64");
    }
    fc_array *cplx[4] = {C(NAN, -0.0), fc_mul(x, C(INFINITY, -INFINITY)), fc_add(x, C(-1.5, 1e-300)),
                         fc_full_complex(ctx, FC_C64, FC_SCALAR, 0.1, -0.2)};
    check_round_trip(ctx, cplx, 4, "complex");
    fc_array *bools[4] = {B(true), B(false), fc_bitwise_not(B(true)), fc_add(x, B(true))};
    check_round_trip(ctx, bools, 4, "bool");
    /* Strong 0-d constants of every dtype, 64-bit extremes included. */
    fc_array *strong[FC_DTYPE_COUNT + 4];
    int ns = 0;
    for (int t = 0; t < FC_DTYPE_COUNT; t++)
        strong[ns++] = fc_scalar(ctx, (fc_dtype)t, fcg_is_inexact((fc_dtype)t) ? t + 0.1 : t % 2);
    strong[ns++] = fc_scalar(ctx, FC_U64, 18446744073709549568.0);
    strong[ns++] = fc_scalar(ctx, FC_I64, -9223372036854775808.0);
    strong[ns++] = fc_scalar(ctx, FC_F16, 0.1);
    strong[ns++] = fc_scalar(ctx, FC_BF16, -3.3);
    check_round_trip(ctx, strong, ns, "strong scalars");
    /* Weak arithmetic, negation and casts of literals. */
    fc_array *weak[5] = {fc_negative(I(3)), fc_negative(F(2.0)), fc_add(I(2), F(0.5)),
                         fc_cast(F(1.5), FC_F32), fc_pow(I(-2), I(2))};
    check_round_trip(ctx, weak, 5, "weak ops");
    fc_scope_close(s);
    fc_ctx_destroy(ctx);
}

Test(fc, views_round_trip) {
    fc_ctx *ctx = tu_host_ctx();
    fc_scope *s = fc_scope_open(ctx);
    fc_array *v = data_input(ctx, FC_F32, FC_SHAPE(10), 1);
    fc_array *m = data_input(ctx, FC_F32, FC_SHAPE(5, 7), 2);
    const fc_idx slices[] = {
        FC_S(FC_NIL, FC_NIL, -1), FC_S(8, 2, -3), FC_S(-1, -11, -1), FC_S(0, 0, -1),
        FC_S(5, 5, 1),            FC_S(3, 4, 1),  FC_S(9, FC_NIL, -4), FC_S(1, FC_NIL, 3),
        FC_S(-4, -1, 2),          FC_S(2, 100, 1), FC_S(-100, 3, 1),  FC_S(FC_NIL, 0, -1),
        FC_S(0, 1, -1),           FC_S(9, 8, -1), FC_S(FC_NIL, FC_NIL, 20), FC_S(9, FC_NIL, -20),
    };
    for (size_t i = 0; i < sizeof slices / sizeof slices[0]; i++) {
        fc_array *arrs[3] = {fc_index(v, 1, &slices[i]),
                             fc_slice(m, FC_S(FC_NIL, FC_NIL, -2), slices[i]),
                             fc_slice(fc_slice(v, slices[i]), FC_S(FC_NIL, FC_NIL, -1))};
        check_round_trip(ctx, arrs, 3, "slices");
    }
    const int64_t w[2][2] = {{2, 1}, {0, 3}};
    fc_array *views[] = {
        fc_pad(m, 2, w, FC_PAD_CONSTANT, -0.0),
        fc_pad(m, 2, w, FC_PAD_REFLECT, 0),
        fc_pad(m, 2, w, FC_PAD_EDGE, 0),
        fc_pad(v, 1, w, FC_PAD_SYMMETRIC, 0),
        fc_pad(v, 1, w, FC_PAD_CONSTANT, NAN),
        fc_permute(fc_reshape(v, FC_SHAPE(1, 2, 5)), FC_AXES(2, 0, 1)),
        fc_broadcast_to(m, FC_SHAPE(2, 5, 7)),
        fc_concatenate(ctx, (fc_array *[]){m, m, fc_slice(m, FC_COLON, FC_S(1, 3, 1))}, 3, 1),
        fc_reshape(v, FC_SHAPE(2, 1, 5, 1)),
        fc_reshape(fc_slice(v, FC_S(0, 1, 1)), FC_SCALAR),
        fc_sum(m, FC_NO_AXES, false),
        fc_argmax(fc_sum(v, FC_ALL, false), FC_AXIS_NONE, true),
        fc_argmin(m, -1, true),
        fc_matmul(m, fc_transpose(m)),
        fc_slice(data_input(ctx, FC_F32, FC_SHAPE(0, 3), 3), FC_S(FC_NIL, FC_NIL, -1), FC_COLON),
    };
    check_round_trip(ctx, views, (int)(sizeof views / sizeof views[0]), "views");
    fc_array *sources[] = {
        fc_arange(ctx, FC_F64, 0.1, 0.7, 0.1),  fc_arange(ctx, FC_F32, -3, 3, 0.7),
        fc_arange(ctx, FC_I64, 5, -5, -3),       fc_arange(ctx, FC_F64, 0, 0, 1),
        fc_arange(ctx, FC_F64, 1e15, 1e15 + 7, 0.3), fc_arange(ctx, FC_F64, 0, 1, 1.0 / 3.0),
        fc_linspace(ctx, FC_F64, 0, 1, 0, true), fc_linspace(ctx, FC_F16, 1, -1, 1, false),
        fc_eye(ctx, FC_F32, 2, 6, 5),            fc_eye(ctx, FC_U8, 0, 3, -2),
        fc_random_uniform(ctx, FC_BF16, FC_SHAPE(2, 2), UINT64_C(9223372036854775813)),
        fc_random_uniform(ctx, FC_F64, FC_SCALAR, 0),
    };
    check_round_trip(ctx, sources, (int)(sizeof sources / sizeof sources[0]), "sources");
    fc_scope_close(s);
    fc_ctx_destroy(ctx);
}

/* The canonical text itself, for a small graph. */
Test(fc, canonical_text) {
    fc_ctx *ctx = tu_host_ctx();
    fc_scope *s = fc_scope_open(ctx);
    fc_array *x = data_input(ctx, FC_F32, FC_SHAPE(10), 1);
    fc_array *y = data_input(ctx, FC_I32, FC_SHAPE(2, 5), 2);
    fc_array *r = fc_slice(x, FC_S(FC_NIL, FC_NIL, -1));
    fc_array *t = fc_mul(r, F(-2.5));
    fc_array *o0 = fc_pow(F(-2.0), t);
    fc_array *o1 = fc_add(fc_reshape(t, FC_SHAPE(2, 5)), fc_cast(y, FC_F32));
    fc_array *arrs[5] = {o0, o1, x, F(1.5), o0};
    char *text;
    cr_assert_eq(fc_program_print(ctx, arrs, 5, NULL, &text), FC_OK);
    const char *want = "x0 = input f32 [10]\n"
                       "t0 = x0[::-1]\n"
                       "t1 = t0 * (-2.5)\n"
                       "y0 = (-2.0) ** t1\n"
                       "t2 = reshape(t1, [2, 5])\n"
                       "x1 = input i32 [2, 5]\n"
                       "t3 = cast(x1, f32)\n"
                       "y1 = t2 + t3\n"
                       "y2 = x0\n"
                       "y3 = 1.5\n"
                       "y4 = y0\n"
                       "out y0, y1, y2, y3, y4\n";
    cr_assert_str_eq(text, want);
    fc_free(ctx, text);
    /* Named outputs; generated names step around output names that look generated. */
    const char *names[5] = {"t0", "x0", "data", "k", "t0"};
    cr_assert_eq(fc_program_print(ctx, arrs, 5, names, &text), FC_OK, "%s", fc_errmsg(ctx));
    const char *want2 = "x1 = input f32 [10]\n"
                        "t1 = x1[::-1]\n"
                        "t2 = t1 * (-2.5)\n"
                        "t0 = (-2.0) ** t2\n"
                        "t3 = reshape(t2, [2, 5])\n"
                        "x2 = input i32 [2, 5]\n"
                        "t4 = cast(x2, f32)\n"
                        "x0 = t3 + t4\n"
                        "data = x1\n"
                        "k = 1.5\n"
                        "out t0, x0, data, k, t0\n";
    cr_assert_str_eq(text, want2);
    fc_free(ctx, text);
    fc_scope_close(s);
    fc_ctx_destroy(ctx);
}

/* An output name that repeats is bound once. `out z, y, x, y` where y is z's node printed
 * `y = z` twice, which does not parse ('y' is already defined; found by fuzz/fuzz_fc.c). */
Test(fc, repeated_alias_outputs_round_trip) {
    fc_ctx *ctx = tu_host_ctx();
    fc_scope *s = fc_scope_open(ctx);
    const char *src = "x = input f32 [4]\ny = x * 2\nz = y\nk = 3.5\nout z, y, x, y, k, x, k\n";
    fc_program *p, *q;
    cr_assert_eq(fc_program_parse(ctx, src, strlen(src), "aliases", &p), FC_OK);
    fc_array *o1[7], *o2[7];
    const char *names[7];
    cr_assert_eq(fc_program_build(p, NULL, o1), FC_OK, "%s", fc_errmsg(ctx));
    for (int i = 0; i < 7; i++) names[i] = fc_program_output_name(p, i);
    char *t1, *t2;
    cr_assert_eq(fc_program_print(ctx, o1, 7, names, &t1), FC_OK, "%s", fc_errmsg(ctx));
    cr_assert_str_eq(t1, "x0 = input f32 [4]\n"
                         "z = x0 * 2\n"
                         "y = z\n"
                         "x = x0\n"
                         "k = 3.5\n"
                         "out z, y, x, y, k, x, k\n");
    cr_assert_eq(fc_program_parse(ctx, t1, strlen(t1), "printed", &q), FC_OK, "%s\n%s",
                 fc_errmsg(ctx), t1);
    cr_assert_eq(fc_program_build(q, NULL, o2), FC_OK, "%s", fc_errmsg(ctx));
    fc_hash h1, h2;
    cr_assert_eq(fc_graph_hash(o1, 7, &h1), FC_OK);
    cr_assert_eq(fc_graph_hash(o2, 7, &h2), FC_OK);
    cr_assert(hash_eq(h1, h2));
    cr_assert_eq(fc_program_print(ctx, o2, 7, names, &t2), FC_OK);
    cr_assert_str_eq(t1, t2);
    fc_free(ctx, t1);
    fc_free(ctx, t2);
    fc_program_destroy(p);
    fc_program_destroy(q);
    fc_scope_close(s);
    fc_ctx_destroy(ctx);
}

Test(fc, print_errors) {
    fc_ctx *ctx = tu_host_ctx();
    fc_scope *s = fc_scope_open(ctx);
    fc_array *x = data_input(ctx, FC_F32, FC_SHAPE(4), 1);
    fc_array *y = fc_exp(x);
    char *text = (char *)1;
    cr_assert_eq(fc_program_print(ctx, &x, 0, NULL, &text), FC_ERR_INVALID);
    cr_assert_null(text);
    cr_assert_eq(fc_program_print(ctx, NULL, 1, NULL, &text), FC_ERR_NULL);
    cr_assert_eq(fc_program_print(ctx, &x, 1, NULL, NULL), FC_ERR_NULL);
    cr_assert_eq(fc_program_print(NULL, &x, 1, NULL, &text), FC_ERR_NULL);
    const char *bad_names[][1] = {{"2x"}, {"a-b"}, {""}, {"True"}, {"f32"}, {"out"}, {"input"}, {"nan"}};
    for (size_t i = 0; i < sizeof bad_names / sizeof bad_names[0]; i++)
        cr_assert_eq(fc_program_print(ctx, &y, 1, bad_names[i], &text), FC_ERR_INVALID, "%s",
                     bad_names[i][0]);
    fc_array *two[2] = {x, y};
    const char *dup[2] = {"a", "a"};
    cr_assert_eq(fc_program_print(ctx, two, 2, dup, &text), FC_ERR_INVALID);
    fc_array *bad = fc_add(x, data_input(ctx, FC_F32, FC_SHAPE(5), 2));
    cr_assert_eq(fc_program_print(ctx, &bad, 1, NULL, &text), FC_ERR_SHAPE);
    fc_ctx *other = tu_host_ctx();
    cr_assert_eq(fc_program_print(other, &y, 1, NULL, &text), FC_ERR_CONTEXT);
    fc_ctx_destroy(other);
    fc_scope_close(s);
    fc_ctx_destroy(ctx);
}

/* ---- the program API -------------------------------------------------------------------- */

Test(fc, program_api) {
    fc_ctx *ctx = tu_host_ctx();
    const char *text = "# api\nx = input f32 [n, 4]\nk = input i64 [m]\nw = input f32 [n, 4]\n"
                       "y = x * 2 + w\nz = sum(k)\nout y, z\n";
    fc_program *p;
    cr_assert_eq(fc_program_parse(ctx, text, strlen(text), NULL, &p), FC_OK, "%s", fc_errmsg(ctx));
    cr_assert_eq(fc_program_num_inputs(p), 3);
    cr_assert_str_eq(fc_program_input_name(p, 0), "x");
    cr_assert_str_eq(fc_program_input_name(p, 1), "k");
    cr_assert_eq(fc_program_input_dtype(p, 1), FC_I64);
    cr_assert_null(fc_program_input_name(p, 3));
    cr_assert_null(fc_program_input_name(p, -1));
    cr_assert_eq(fc_program_num_outputs(p), 2);
    cr_assert_str_eq(fc_program_output_name(p, 1), "z");
    cr_assert_null(fc_program_output_name(p, 2));
    cr_assert_eq(fc_program_num_symbols(p), 2);
    cr_assert_str_eq(fc_program_symbol_name(p, 0), "n");
    cr_assert_str_eq(fc_program_symbol_name(p, 1), "m");
    cr_assert_null(fc_program_symbol_name(p, 2));
    fc_shape shape;
    cr_assert_eq(fc_program_input_shape(p, 0, &shape), FC_ERR_UNBOUND);
    cr_assert(strstr(fc_errmsg(ctx), "'n'"), "%s", fc_errmsg(ctx));
    cr_assert_eq(fc_program_input_shape(p, 5, &shape), FC_ERR_INVALID);
    fc_array *outs[2];
    cr_assert_eq(fc_program_build(p, NULL, outs), FC_ERR_UNBOUND);
    cr_assert(strncmp(fc_errmsg(ctx), "<input>:2:1: ", 13) == 0, "%s", fc_errmsg(ctx));
    cr_assert_null(outs[0]);
    cr_assert_eq(fc_program_set_symbol(p, "q", 3), FC_ERR_INVALID);
    cr_assert_eq(fc_program_set_symbol(p, "n", -1), FC_ERR_INVALID);
    cr_assert_eq(fc_program_set_symbol(p, "x", 3), FC_ERR_INVALID);
    cr_assert_eq(fc_program_set_symbol(p, "n", 3), FC_OK);
    cr_assert_eq(fc_program_set_symbol(p, "m", 0), FC_OK);
    cr_assert_eq(fc_program_input_shape(p, 0, &shape), FC_OK);
    cr_assert_eq(shape.ndim, 2);
    cr_assert_eq(shape.dim[0], 3);
    cr_assert_eq(shape.dim[1], 4);

    /* Given inputs are checked against the declarations. */
    fc_scope *s = fc_scope_open(ctx);
    fc_array *x = data_input(ctx, FC_F32, FC_SHAPE(3, 4), 1);
    fc_array *k = data_input(ctx, FC_I64, FC_SHAPE(0), 2);
    fc_array *w = data_input(ctx, FC_F32, FC_SHAPE(3, 4), 3);
    fc_array *ins[3] = {x, k, w};
    cr_assert_eq(fc_program_build(p, ins, outs), FC_OK, "%s", fc_errmsg(ctx));
    cr_assert_eq(fc_array_dtype(outs[1]), FC_I64);
    int64_t zsum = -1;
    cr_assert_eq(fc_read(outs[1], &zsum, 0, 1), FC_OK);
    cr_assert_eq(zsum, 0);
    ins[0] = data_input(ctx, FC_F32, FC_SHAPE(3, 5), 1);
    cr_assert_eq(fc_program_build(p, ins, outs), FC_ERR_SHAPE);
    cr_assert(strstr(fc_errmsg(ctx), "input 'x'"), "%s", fc_errmsg(ctx));
    ins[0] = data_input(ctx, FC_F64, FC_SHAPE(3, 4), 1);
    cr_assert_eq(fc_program_build(p, ins, outs), FC_ERR_DTYPE);
    ins[0] = fc_add(x, data_input(ctx, FC_F32, FC_SHAPE(2), 1)); /* poisoned */
    cr_assert_eq(fc_program_build(p, ins, outs), FC_ERR_SHAPE);
    fc_ctx *other = tu_host_ctx();
    ins[0] = data_input(other, FC_F32, FC_SHAPE(3, 4), 1);
    cr_assert_eq(fc_program_build(p, ins, outs), FC_ERR_CONTEXT);
    ins[0] = NULL; /* a placeholder for just this input */
    cr_assert_eq(fc_program_build(p, ins, outs), FC_OK);
    fc_ctx_destroy(other);
    fc_scope_close(s);

    /* Outputs built with no scope open belong to the caller. */
    cr_assert_eq(fc_program_build(p, NULL, outs), FC_OK);
    fc_release(outs[0]);
    fc_release(outs[1]);
    cr_assert_eq(fc_program_build(p, NULL, NULL), FC_ERR_NULL);
    cr_assert_eq(fc_program_build(NULL, NULL, outs), FC_ERR_NULL);
    fc_program_destroy(p);
    fc_program_destroy(NULL);

    cr_assert_eq(fc_program_parse(ctx, NULL, 0, NULL, &p), FC_ERR_PARSE); /* empty */
    cr_assert_null(p);
    cr_assert_eq(fc_program_parse(ctx, NULL, 3, NULL, &p), FC_ERR_NULL);
    cr_assert_eq(fc_program_parse(ctx, "out x", 5, NULL, NULL), FC_ERR_NULL);
    cr_assert_eq(fc_program_load(ctx, FUSEC_TEST_DATA_DIR "/fc/no_such_file.fc", &p), FC_ERR_IO);
    cr_assert_null(p);
    cr_assert(strstr(fc_errmsg(ctx), "no_such_file.fc"), "%s", fc_errmsg(ctx));
    cr_assert_eq(fc_program_load(ctx, FUSEC_TEST_DATA_DIR, &p), FC_ERR_IO); /* a directory */
    cr_assert_eq(fc_program_num_inputs(NULL), 0);
    cr_assert_eq(fc_program_num_outputs(NULL), 0);
    cr_assert_eq(fc_program_num_symbols(NULL), 0);
    /* Text need not be NUL-terminated: only len bytes are read. */
    const char full[] = "y = 1\nout y\nGARBAGE";
    cr_assert_eq(fc_program_parse(ctx, full, 12, "cut", &p), FC_OK, "%s", fc_errmsg(ctx));
    fc_program_destroy(p);
    fc_ctx_destroy(ctx);
}

/* ---- malformed programs ----------------------------------------------------------------- */

typedef struct bad_case {
    const char *text;
    fc_status status;
    int line, col;
    const char *says; /* a piece of the message */
} bad_case;

#define X4 "x = input f32 [4]\n"

static const bad_case bad_cases[] = {
    {"", FC_ERR_PARSE, 1, 1, "expected an 'out' statement"},
    {X4 "y = fft.matmul(x, x)\nout y\n", FC_ERR_PARSE, 2, 9, "'matmul' is not a function of fft"},
    {X4 "y = linalg.rfft(x)\nout y\n", FC_ERR_PARSE, 2, 12, "'rfft' is not a function of linalg"},
    {X4 "y = random.sin(x)\nout y\n", FC_ERR_PARSE, 2, 12, "'sin' is not a function of random"},
    {X4 "y = fft.rfft\nout y\n", FC_ERR_PARSE, 2, 9, "function 'fft.rfft' used without a call"},
    {X4, FC_ERR_PARSE, 2, 1, "expected an 'out' statement"},
    {"# only a comment\n\n", FC_ERR_PARSE, 3, 1, "'out'"},
    {X4 "out y\n", FC_ERR_PARSE, 2, 5, "undefined name 'y'"},
    {X4 "x = x + 1\nout x\n", FC_ERR_PARSE, 2, 1, "already defined (line 1)"},
    {"x = input f31 [4]\nout x\n", FC_ERR_PARSE, 1, 11, "expected a dtype"},
    {"x = input f32 [4\nout x\n", FC_ERR_PARSE, 2, 1, "expected ',' or ']', found name 'out'"},
    {X4 "y = (x + 1\nout y\n", FC_ERR_PARSE, 3, 1, "expected ')'"},
    {X4 "y = x $ 1\nout y\n", FC_ERR_PARSE, 2, 7, "unexpected character '$'"},
    {X4 "y = foo(x)\nout y\n", FC_ERR_PARSE, 2, 5, "unknown function 'foo'"},
    {X4 "y = exp(x, x)\nout y\n", FC_ERR_PARSE, 2, 12, "at most 1 positional argument"},
    {X4 "y = exp()\nout y\n", FC_ERR_PARSE, 2, 9, "takes 1 argument, got 0"},
    {X4 "y = where(x, x)\nout y\n", FC_ERR_PARSE, 2, 15, "takes 3 arguments, got 2"},
    {X4 "y = sum(x, axis=0, axis=0)\nout y\n", FC_ERR_PARSE, 2, 20, "multiple values for argument 'axis'"},
    {X4 "y = sum(x, foo=1)\nout y\n", FC_ERR_PARSE, 2, 12, "unexpected keyword argument 'foo'"},
    {X4 "y = sum(axis=0, x)\nout y\n", FC_ERR_PARSE, 2, 17, "positional argument follows keyword"},
    {X4 "y = reshape(x)\nout y\n", FC_ERR_PARSE, 2, 14, "missing required argument 'shape'"},
    {X4 "y = exp(x=1)\nout y\n", FC_ERR_PARSE, 2, 9, "takes no keyword arguments"},
    {X4 "y = x[1:2:3:4]\nout y\n", FC_ERR_PARSE, 2, 12, "expected ',' or ']', found ':'"},
    {X4 "y = x[]\nout y\n", FC_ERR_PARSE, 2, 7, "expected an expression, found ']'"},
    {X4 "y = x +\nout y\n", FC_ERR_PARSE, 2, 8, "expected an expression, found end of line"},
    {"y = 1 +* 2\nout y\n", FC_ERR_PARSE, 1, 8, "found '*'"},
    {X4 "y = \"abc\nout y\n", FC_ERR_PARSE, 2, 5, "unterminated string"},
    {"x = \"abc", FC_ERR_PARSE, 1, 5, "unterminated string"},
    {X4 "y = \"a\\qb\"\nout y\n", FC_ERR_PARSE, 2, 5, "invalid escape"},
    {X4 "y = x + 1.5e\nout y\n", FC_ERR_PARSE, 2, 9, "malformed exponent"},
    {X4 "y = x + 12abc\nout y\n", FC_ERR_PARSE, 2, 9, "malformed number"},
    /* 2**127: beyond the 128 bits fusec holds Python integers in (smaller ones are valid) */
    {X4 "y = x + 170141183460469231731687303715884105728\nout y\n", FC_ERR_PARSE, 2, 9,
     "integer literal too large"},
    {X4 "y = x < x < x\nout y\n", FC_ERR_PARSE, 2, 11, "chained comparisons"},
    {X4 "out x\nout x\n", FC_ERR_PARSE, 3, 1, "second 'out' statement (the first is on line 2)"},
    {"True = input f32 [4]\nout True\n", FC_ERR_PARSE, 1, 1, "reserved word"},
    {"out = 1\nout out\n", FC_ERR_PARSE, 1, 1, "reserved word"},
    {"f32 = 1\nout f32\n", FC_ERR_PARSE, 1, 1, "reserved word"},
    {X4 "y = x\n+ 1\nout y\n", FC_ERR_PARSE, 3, 1, "expected a statement"},
    {"x = input f32 [1, 2, 3, 4, 5, 6, 7, 8, 9]\nout x\n", FC_ERR_PARSE, 1, 40, "at most 8 dimensions"},
    {"x = input f32 [-4]\nout x\n", FC_ERR_PARSE, 1, 16, "expected a dimension"},
    {X4 "n = 2\ny = input f32 [n]\nout y\n", FC_ERR_PARSE, 3, 16, "'n' is already defined"},
    {"x = input f32 [n]\nn = 2\nout x\n", FC_ERR_PARSE, 2, 1, "already a dimension symbol"},
    {X4 "y = cast(x, f31)\nout y\n", FC_ERR_PARSE, 2, 13, "undefined name 'f31'"},
    {X4 "y = exp\nout y\n", FC_ERR_PARSE, 2, 5, "function 'exp' used without a call"},
    {X4 "y = x.foo\nout y\n", FC_ERR_PARSE, 2, 7, "unknown attribute 'foo'"},
    {X4 "y = x\tz\nout y\n", FC_ERR_PARSE, 2, 7, "expected end of line, found name 'z'"},
    {X4 "y = (1, 2\nout y\n", FC_ERR_PARSE, 3, 1, "expected ',' or ')'"},
    {X4 "out x,\n", FC_ERR_PARSE, 2, 7, "expected the name of an output, found end of line"},
    {X4 "y = input\nout y\n", FC_ERR_PARSE, 2, 10, "expected a dtype"},
    {X4 "y = x + input\nout y\n", FC_ERR_PARSE, 2, 9, "expected an expression, found name 'input'"},
    {X4 "y = x !\nout y\n", FC_ERR_PARSE, 2, 7, "unexpected character '!'"},
    {"\xef\xbb\xbfx = input f32 [4]\nout x\n", FC_ERR_PARSE, 1, 1, "unexpected byte 0xef"},
    {"\x00\xff\x13garbage", FC_ERR_PARSE, 1, 1, "unexpected byte 0x00"},
    {"x = input f32 [4]\nx\n", FC_ERR_PARSE, 2, 2, "expected '=', found end of line"},
    {X4 "y = sum(x,)\nz = 3 4\nout y\n", FC_ERR_PARSE, 3, 7, "expected end of line, found number '4'"},
    /* Errors found while building: the op's message after the statement's position. */
    {X4 "y = x[1:2:0]\nout y\n", FC_ERR_INDEX, 2, 6, "step"},
    {X4 "y = x[5]\nout y\n", FC_ERR_INDEX, 2, 6, "out of bounds"},
    {X4 "y = x[:, :]\nout y\n", FC_ERR_INDEX, 2, 6, "too many indices"},
    {X4 "y = x[x > 0]\nout y\n", FC_ERR_UNBOUND, 2, 6, "mask's count"},
    {X4 "y = x[[0, 1.5]]\nout y\n", FC_ERR_INVALID, 2, 7, "a list index's entry must be an integer"},
    {X4 "z = input f32 [5]\ny = x + z\nout y\n", FC_ERR_SHAPE, 3, 7, "could not be broadcast"},
    {"x = input f32 [n]\nout x\n", FC_ERR_UNBOUND, 1, 1, "'n' of input 'x' has no value"},
    {X4 "y = cast(x, \"f31\")\nout y\n", FC_ERR_INVALID, 2, 13, "expected a dtype"},
    {X4 "y = reshape(x, [3, -1])\nout y\n", FC_ERR_SHAPE, 2, 5, "reshape"},
    {X4 "y = sum(x, axis=3)\nout y\n", FC_ERR_AXIS, 2, 5, "axis 3"},
    {X4 "y = sum(x, axis=1.5)\nout y\n", FC_ERR_INVALID, 2, 17, "axis must be"},
    {X4 "y = pad(x, 1, mode=\"wrap\")\nout y\n", FC_ERR_INVALID, 2, 20, "pad mode"},
    {"x = input bool [4]\ny = -x\nout y\n", FC_ERR_DTYPE, 2, 5, "negative"},
    {X4 "y = random([4], i32)\nout y\n", FC_ERR_DTYPE, 2, 5, "random"},
    {X4 "y = arange(0, 1, 0)\nout y\n", FC_ERR_INVALID, 2, 5, "arange"},
    {X4 "y = concatenate([], axis=0)\nout y\n", FC_ERR_INVALID, 2, 17, "non-empty list"},
    {X4 "y = x + [1, 2]\nout y\n", FC_ERR_INVALID, 2, 9, "expected an array, found a list"},
    {X4 "y = reshape(x, [18446744073709551615])\nout y\n", FC_ERR_INVALID, 2, 16,
     "one out of range"},
    {X4 "y = norm(x, 3)\nout y\n", FC_ERR_UNSUPPORTED, 2, 13, "ord"},
    {X4 "y = full([2], 1, \"f99\")\nout y\n", FC_ERR_INVALID, 2, 18, "expected a dtype"},
    {X4 "y = zeros([2, 1.5])\nout y\n", FC_ERR_INVALID, 2, 11, "extent"},
    {X4 "y = full([], 300, u8)\nout y\n", FC_ERR_INVALID, 2, 5, "not representable"},
    {X4 "y = x[...]\nz = ...\nout z\n", FC_ERR_INVALID, 4, 5, "expected an array"},
    /* sorting (FK_SORT, FK_UNIQUE, FK_PERMUTE) */
    {X4 "y = sort(x, kind=\"bogo\")\nout y\n", FC_ERR_VALUE, 2, 18, "sort: kind must be None"},
    {X4 "y = argsort(x, 0, 3)\nout y\n", FC_ERR_VALUE, 2, 19, "argsort: kind must be"},
    {X4 "y = x.argsort(kind=\"heap\")\nout y\n", FC_ERR_VALUE, 2, 20, "argsort: kind must be"},
    {X4 "y = partition(x, 1, kind=\"stable\")\nout y\n", FC_ERR_VALUE, 2, 26,
     "partition: kind must be None or \"introselect\""},
    {X4 "y = argsort(x, axis=1.5)\nout y\n", FC_ERR_INVALID, 2, 21, "axis must be an integer"},
    {X4 "y = sort(x, axis=2)\nout y\n", FC_ERR_AXIS, 2, 5, "sort: axis 2 is out of bounds"},
    {X4 "y = partition(x)\nout y\n", FC_ERR_PARSE, 2, 16, "missing required argument 'kth'"},
    {X4 "y = partition(x, 1.5)\nout y\n", FC_ERR_INVALID, 2, 18, "kth must be an integer"},
    {X4 "y = argpartition(x, 4)\nout y\n", FC_ERR_VALUE, 2, 5,
     "argpartition: kth 4 is out of bounds"},
    {X4 "y = unique(x, return_counts=2)\nout y\n", FC_ERR_INVALID, 2, 29,
     "return_counts must be True or False"},
    {X4 "y = unique(x, axis=0)\nout y\n", FC_ERR_PARSE, 2, 15,
     "unexpected keyword argument 'axis'"},
    {X4 "y = unique(x)\nout y\n", FC_ERR_UNBOUND, 2, 5, "unique: the number of distinct values"},
    {X4 "y = shuffle(3, seed=1)\nout y\n", FC_ERR_INVALID, 2, 13, "shuffle: x must be an array"},
    {X4 "y = permutation(1.5)\nout y\n", FC_ERR_INVALID, 2, 17, "must be an integer or an array"},
    {X4 "y = permutation(x, seed=-1)\nout y\n", FC_ERR_INVALID, 2, 25, "seed must be an integer"},
    {X4 "y = choice(5, 6, replace=False)\nout y\n", FC_ERR_VALUE, 2, 5, "without replacement"},
    {X4 "y = shuffle(x, axis=1)\nout y\n", FC_ERR_AXIS, 2, 5, "shuffle: axis 1"},
    {X4 "y = random.partition(x, 1)\nout y\n", FC_ERR_PARSE, 2, 12,
     "'partition' is not a function of random"},
};

Test(fc, malformed_programs) {
    size_t n = sizeof bad_cases / sizeof bad_cases[0];
    cr_assert_geq(n, 40);
    for (size_t i = 0; i < n; i++) {
        const bad_case *c = &bad_cases[i];
        /* The NUL-led garbage has explicit length; the others are strings. */
        size_t len = c->text[0] == '\0' && strcmp(c->says, "unexpected byte 0x00") == 0 ? 10 : strlen(c->text);
        tu_check_bad_fc(c->text, len, c->status, c->line, c->col, c->says);
    }
}

static char *repeat(const char *head, const char *unit, int n, const char *mid, const char *unit2,
                    int n2, const char *tail) {
    size_t len = strlen(head) + strlen(unit) * (size_t)n + strlen(mid) + strlen(unit2) * (size_t)n2 +
                 strlen(tail) + 1;
    char *s = malloc(len), *w = s;
    w += sprintf(w, "%s", head);
    for (int i = 0; i < n; i++) w += sprintf(w, "%s", unit);
    w += sprintf(w, "%s", mid);
    for (int i = 0; i < n2; i++) w += sprintf(w, "%s", unit2);
    sprintf(w, "%s", tail);
    return s;
}

/* Absurd nesting fails cleanly (no stack overflow), at every kind of recursion. */
Test(fc, deep_nesting_fails_cleanly) {
    struct {
        char *text;
        const char *says;
    } deep[] = {
        {repeat(X4 "y = ", "(", 200000, "x", ")", 200000, "\nout y\n"), "nested too deeply"},
        {repeat(X4 "y = ", "-", 200000, "x", "", 0, "\nout y\n"), "nested too deeply"},
        {repeat(X4 "y = ", "[", 200000, "x", "]", 200000, "\nout y\n"), "nested too deeply"},
        {repeat(X4 "y = ", "exp(", 200000, "x", ")", 200000, "\nout y\n"), "nested too deeply"},
        {repeat(X4 "y = x", " + x", 200000, "", "", 0, "\nout y\n"), "nested too deeply"},
        {repeat(X4 "y = x", " ** x", 200000, "", "", 0, "\nout y\n"), "nested too deeply"},
        {repeat(X4 "y = x", "[0:1]", 200000, "", "", 0, "\nout y\n"), "nested too deeply"},
    };
    for (size_t i = 0; i < sizeof deep / sizeof deep[0]; i++) {
        tracker t;
        fc_ctx *ctx = tracked_ctx(&t);
        fc_program *p;
        fc_status st = fc_program_parse(ctx, deep[i].text, strlen(deep[i].text), "deep.fc", &p);
        cr_assert_eq(st, FC_ERR_PARSE, "case %zu", i);
        cr_assert(strncmp(fc_errmsg(ctx), "deep.fc:2:", 10) == 0, "%s", fc_errmsg(ctx));
        cr_assert(strstr(fc_errmsg(ctx), deep[i].says), "%s", fc_errmsg(ctx));
        fc_ctx_destroy(ctx);
        cr_assert_eq(t.live_bytes, 0, "case %zu leaked %lld bytes", i, t.live_bytes);
        free(deep[i].text);
    }
    /* Just inside the limits still works. */
    char *ok = repeat(X4 "y = ", "(", 60, "x", ")", 60, "\nout y\n");
    fc_ctx *ctx = tu_host_ctx();
    fc_program *p;
    cr_assert_eq(fc_program_parse(ctx, ok, strlen(ok), "ok.fc", &p), FC_OK, "%s", fc_errmsg(ctx));
    fc_program_destroy(p);
    fc_ctx_destroy(ctx);
    free(ok);
}

/* Every prefix of every program parses, or fails cleanly; whatever parses also builds or
 * fails cleanly; nothing leaks. */
Test(fc, every_prefix_fails_cleanly) {
    file_list fl = all_programs();
    tracker t;
    fc_ctx *ctx = tracked_ctx(&t);
    long parsed = 0, failed = 0;
    for (int k = 0; k < fl.n; k++) {
        size_t len;
        char *text = tu_read_file(fl.paths[k], &len);
        /* The full-size Mandelbrot repeats three statements 100 times (its small twin in
         * tests/data has every prefix tried): every 7th prefix of it keeps ASan runs fast. */
        size_t stride = len > 6000 ? 7 : 1;
        for (size_t n = 0; n <= len; n += stride) {
            fc_program *p;
            fc_status st = fc_program_parse(ctx, text, n, "prefix.fc", &p);
            if (st != FC_OK) {
                cr_assert_eq(st, FC_ERR_PARSE, "%s[:%zu]: %s", fl.paths[k], n, fc_errmsg(ctx));
                cr_assert(strncmp(fc_errmsg(ctx), "prefix.fc:", 10) == 0, "%s", fc_errmsg(ctx));
                failed++;
                continue;
            }
            parsed++;
            bind_symbols(p);
            fc_scope *s = fc_scope_open(ctx);
            fc_array *outs[MAX_OUT];
            st = fc_program_build(p, NULL, outs);
            cr_assert(st == FC_OK || strncmp(fc_errmsg(ctx), "prefix.fc:", 10) == 0, "%s", fc_errmsg(ctx));
            fc_scope_close(s);
            fc_program_destroy(p);
        }
        free(text);
    }
    fc_ctx_destroy(ctx);
    cr_assert_eq(t.live_bytes, 0, "leaked %lld bytes", t.live_bytes);
    cr_assert_gt(parsed, 30);
    cr_assert_gt(failed, 1000);
    free_list(&fl);
}

/* Random byte soup and random token soup fail cleanly. */
Test(fc, random_input_fails_cleanly) {
    static const char *const pieces[] = {
        "x", "y", " = ", "input", " f32 ", "[", "]", "(", ")", ",", ":", "\n", "out ", "+", "-", "**",
        "@", "1", "2.5", "1j", "None", "...", "sum", "exp(", "axis=", "\"s\"", "#c\n", "n", "<", "~"};
    tracker t;
    fc_ctx *ctx = tracked_ctx(&t);
    uint64_t seed = 12345;
    char buf[400];
    for (int iter = 0; iter < 4000; iter++) {
        size_t len = 0;
        int kind = iter % 2;
        int n = (int)(mix(&seed) % 60);
        for (int i = 0; i < n && len < sizeof buf - 32; i++) {
            if (kind == 0) {
                buf[len++] = (char)(mix(&seed) & 0xff);
            } else {
                const char *pc = pieces[mix(&seed) % (sizeof pieces / sizeof pieces[0])];
                memcpy(buf + len, pc, strlen(pc));
                len += strlen(pc);
            }
        }
        if (kind == 1 && iter % 4 == 1) {
            memcpy(buf, "x = input f32 [4]\n", 18 < len ? 18 : len);
        }
        fc_program *p;
        fc_status st = fc_program_parse(ctx, buf, len, "soup.fc", &p);
        if (st == FC_OK) {
            fc_scope *s = fc_scope_open(ctx);
            fc_array *outs[MAX_OUT];
            if (fc_program_num_outputs(p) <= MAX_OUT) (void)fc_program_build(p, NULL, outs);
            fc_scope_close(s);
            fc_program_destroy(p);
        } else {
            cr_assert_eq(st, FC_ERR_PARSE);
            cr_assert(strncmp(fc_errmsg(ctx), "soup.fc:", 8) == 0, "%s", fc_errmsg(ctx));
        }
    }
    fc_ctx_destroy(ctx);
    cr_assert_eq(t.live_bytes, 0);
}

/* ---- allocation failures ---------------------------------------------------------------- */

/* Load, build, print, parse the print, build again; fails the Nth allocation for every N
 * until a run meets no failure. Each failure must be a clean FC_ERR_NOMEM with nothing leaked. */
static void fault_inject(const char *path) {
    size_t len;
    char *text = tu_read_file(path, &len);
    for (long long fail_at = 1;; fail_at++) {
        tracker t;
        fc_ctx *ctx = tracked_ctx(&t);
        t.calls = 0;
        t.fail_at = fail_at;
        fc_status st;
        fc_program *p = NULL, *q = NULL;
        char *printed = NULL;
        fc_scope *s = fc_scope_open(ctx);
        fc_array *o1[MAX_OUT], *o2[MAX_OUT];
        st = s ? FC_OK : FC_ERR_NOMEM;
        if (st == FC_OK) st = fc_program_parse(ctx, text, len, "fault.fc", &p);
        if (st == FC_OK) {
            bind_symbols(p);
            st = fc_program_build(p, NULL, o1);
        }
        const char *names[MAX_OUT];
        int n = p ? fc_program_num_outputs(p) : 0;
        for (int i = 0; i < n; i++) names[i] = fc_program_output_name(p, i);
        if (st == FC_OK) st = fc_program_print(ctx, o1, n, names, &printed);
        if (st == FC_OK) st = fc_program_parse(ctx, printed, strlen(printed), "printed", &q);
        if (st == FC_OK) st = fc_program_build(q, NULL, o2);
        if (st == FC_OK) {
            fc_hash h1, h2;
            st = fc_graph_hash(o1, n, &h1);
            if (st == FC_OK) st = fc_graph_hash(o2, n, &h2);
            if (st == FC_OK) cr_assert(hash_eq(h1, h2));
        }
        bool failed = t.failed;
        if (failed) cr_assert_eq(st, FC_ERR_NOMEM, "%s, fail_at %lld: status %d: %s", path, fail_at, st,
                                 fc_errmsg(ctx));
        else cr_assert_eq(st, FC_OK, "%s: %s", path, fc_errmsg(ctx));
        fc_free(ctx, printed);
        fc_program_destroy(p);
        fc_program_destroy(q);
        fc_scope_close(s);
        fc_ctx_destroy(ctx);
        cr_assert_eq(t.live_bytes, 0, "%s, fail_at %lld: leaked %lld bytes", path, fail_at, t.live_bytes);
        if (!failed) break;
    }
    free(text);
}

Test(fc, allocation_failures_are_clean) {
    static const char *const files[] = {"syntax_views.fc", "syntax_creation.fc", "syntax_reduce.fc",
                                        "syntax_outputs.fc", "w09_box_blur.fc", "syntax_literals.fc"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/fc/%s", FUSEC_TEST_DATA_DIR, files[i]);
        fault_inject(path);
    }
}

/* ---- the fusec CLI ---------------------------------------------------------------------- */

#define FUSEC_BIN FUSEC_BINARY_DIR "/tools/fusec"

typedef struct cli_result {
    int code;
    char *out, *err;
} cli_result;

static char *slurp_or_empty(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return calloc(1, 1);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = calloc((size_t)n + 1, 1);
    if (n > 0) cr_assert_eq(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    return b;
}

static cli_result run_cli(const char *args) {
    static int counter;
    char out[512], err[512], cmd[4096];
    snprintf(out, sizeof out, "%s/test_fc_cli_%d_%d.out", FUSEC_BINARY_DIR, (int)getpid(), counter);
    snprintf(err, sizeof err, "%s/test_fc_cli_%d_%d.err", FUSEC_BINARY_DIR, (int)getpid(), counter++);
    snprintf(cmd, sizeof cmd, "'%s' %s >'%s' 2>'%s'", FUSEC_BIN, args, out, err);
    int rc = system(cmd);
    cr_assert(rc != -1 && WIFEXITED(rc), "cannot run: %s", cmd);
    cli_result r = {WEXITSTATUS(rc), slurp_or_empty(out), slurp_or_empty(err)};
    remove(out);
    remove(err);
    return r;
}

static void free_result(cli_result *r) {
    free(r->out);
    free(r->err);
}

static void expect_cli(const char *args, int code, const char *out_has, const char *err_has) {
    cli_result r = run_cli(args);
    cr_assert_eq(r.code, code, "fusec %s: exit %d, want %d\nstdout: %s\nstderr: %s", args, r.code, code,
                 r.out, r.err);
    if (out_has) cr_assert(strstr(r.out, out_has), "fusec %s: stdout lacks '%s':\n%s", args, out_has, r.out);
    if (err_has) cr_assert(strstr(r.err, err_has), "fusec %s: stderr lacks '%s':\n%s", args, err_has, r.err);
    if (code != 0 && r.err[0]) cr_assert(strncmp(r.err, "fusec: ", 7) == 0 || strncmp(r.err, "usage:", 6) == 0,
                                         "fusec %s: stderr should start 'fusec: ':\n%s", args, r.err);
    free_result(&r);
}

#define DATA_FC FUSEC_TEST_DATA_DIR "/fc/"

Test(fc, cli_commands_and_exit_codes) {
    expect_cli("--help", 0, "commands:", NULL);
    expect_cli("-h", 0, "print", NULL);
    expect_cli("", 1, NULL, "usage: fusec");
    expect_cli("frobnicate", 1, NULL, "fusec: unknown command 'frobnicate'");
    expect_cli("version", 0, "fusec 0.1.0", NULL);
    expect_cli("--version", 0, "fusec 0.1.0", NULL);
    expect_cli("version extra", 1, NULL, "unexpected argument");
    expect_cli("version --help", 0, "usage: fusec version", NULL);
    expect_cli("print --help", 0, "usage: fusec print", NULL);
    expect_cli("hash --help", 0, "usage: fusec hash", NULL);
    expect_cli("run --help", 0, "--backend", NULL);
    expect_cli("help run", 0, "usage: fusec run", NULL);
    expect_cli("help", 0, "commands:", NULL);
    expect_cli("help nope", 1, NULL, "unknown command");
    expect_cli("print", 1, NULL, "no .fc file given");
    expect_cli("print a.fc b.fc", 1, NULL, "more than one file");
    expect_cli("print --frob " DATA_FC "w01_tanh_sin.fc", 1, NULL, "unknown option '--frob'");
    expect_cli("print " DATA_FC "does_not_exist.fc", 4, NULL, "does_not_exist.fc");
    expect_cli("print " DATA_FC "syntax_symbolic.fc", 2, NULL, "--set");
    expect_cli("print " DATA_FC "syntax_symbolic.fc --set n=7 --set q=1", 1, NULL, "'q'");
    expect_cli("print " DATA_FC "syntax_symbolic.fc --set n=-7", 1, NULL, "--set expects");
    expect_cli("print " DATA_FC "syntax_symbolic.fc --set n", 1, NULL, "--set expects");
    expect_cli("print " DATA_FC "syntax_symbolic.fc --set", 1, NULL, "needs a value");
    expect_cli("print " DATA_FC "syntax_symbolic.fc --set n=7 --set=m=3", 0, "x0 = input f32 [7, 8]", NULL);
    expect_cli("run " DATA_FC "w04_softmax.fc --seed abc", 1, NULL, "--seed");
    expect_cli("run " DATA_FC "w04_softmax.fc --backend tpu", 1, NULL, "--backend");
    expect_cli("run " DATA_FC "w04_softmax.fc --backend host --seed 3", 0, "y: f32 [33, 65]", NULL);
    expect_cli("run " DATA_FC "syntax_outputs.fc --backend=host", 0, "k: f64 []", NULL);
    expect_cli("run " DATA_FC "syntax_int.fc --backend host", 0, "bw: i32 [3, 8]", NULL);
    expect_cli("run " DATA_FC "syntax_symbolic.fc --backend host --set n=5 --set m=2", 0, "c: f32 [5, 2, 4]",
               NULL);
    expect_cli("hash " DATA_FC "w04_softmax.fc extra.fc", 1, NULL, "more than one file");
}

/* A malformed program: exit 2 and the parser's message; an evaluation error: exit 3. */
Test(fc, cli_errors_from_programs) {
    char bad[512], evalbad[512];
    snprintf(bad, sizeof bad, "%s/test_fc_bad_%d.fc", FUSEC_BINARY_DIR, (int)getpid());
    snprintf(evalbad, sizeof evalbad, "%s/test_fc_evalbad_%d.fc", FUSEC_BINARY_DIR, (int)getpid());
    FILE *f = fopen(bad, "w");
    fputs("x = input f32 [4]\ny = x +* 1\nout y\n", f);
    fclose(f);
    f = fopen(evalbad, "w");
    fputs("x = input i32 [64]\ny = x ** -1\nout y\n", f);
    fclose(f);
    char args[1200];
    snprintf(args, sizeof args, "print '%s'", bad);
    expect_cli(args, 2, NULL, ":2:8: expected an expression, found '*'");
    snprintf(args, sizeof args, "hash '%s'", bad);
    expect_cli(args, 2, NULL, "fusec: ");
    snprintf(args, sizeof args, "run '%s' --backend host", bad);
    expect_cli(args, 2, NULL, "fusec: ");
    snprintf(args, sizeof args, "run '%s' --backend host", evalbad);
    expect_cli(args, 3, NULL, "fusec: ");
    snprintf(args, sizeof args, "print '%s'", evalbad);
    expect_cli(args, 0, "y = x0 ** (-1)", NULL);
    remove(bad);
    remove(evalbad);
}

/* `fusec hash` and `fusec print` agree with the library in this process. */
Test(fc, cli_hash_and_print_match_the_library) {
    const char *file = FUSEC_SOURCE_DIR "/bench/fc/w09_box_blur.fc";
    fc_ctx *ctx = tu_host_ctx();
    fc_program *p;
    cr_assert_eq(fc_program_load(ctx, file, &p), FC_OK);
    fc_array *out;
    cr_assert_eq(fc_program_build(p, NULL, &out), FC_OK);
    fc_hash h;
    cr_assert_eq(fc_graph_hash(&out, 1, &h), FC_OK);
    char want[64];
    snprintf(want, sizeof want, "%016llx%016llx\n", (unsigned long long)h.hi, (unsigned long long)h.lo);
    cli_result r = run_cli("hash " FUSEC_SOURCE_DIR "/bench/fc/w09_box_blur.fc");
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_assert_str_eq(r.out, want);
    free_result(&r);
    const char *name = "y";
    char *text;
    cr_assert_eq(fc_program_print(ctx, &out, 1, &name, &text), FC_OK);
    r = run_cli("print " FUSEC_SOURCE_DIR "/bench/fc/w09_box_blur.fc");
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_assert_str_eq(r.out, text);
    free_result(&r);
    fc_free(ctx, text);
    fc_release(out);
    fc_program_destroy(p);
    fc_ctx_destroy(ctx);
}
