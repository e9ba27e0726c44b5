/*
 * tests/test_interop.c - interop on the host backend: external memory wrapped as arrays
 * (fc_from_external, fc_dlpack_import), values handed out (fc_array_export, fc_dlpack_export
 * and its versioned form), wrapped streams. Round trips of every dtype, strided layouts
 * against a gather done here, release callbacks and deleters counted (exactly once), memory
 * that stays valid after every fusec reference and the context are gone, read-only imports,
 * and the errors of what cannot be represented or is malformed. The GPU side is
 * tests/test_gpu_interop.c.
 */
#include <criterion/criterion.h>

#include "fusec_dlpack.h"
#include "test_util.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x9E3779B97F4A7C15ULL;
static uint64_t next_u64(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return rng;
}

/* n random elements of dtype t (bool as 0 / 1) in a new buffer. */
static void *random_data(fc_dtype t, size_t n) {
    size_t es = fc_dtype_size(t);
    unsigned char *p = malloc(n * es + 1);
    cr_assert_not_null(p);
    for (size_t i = 0; i < n * es; i++) p[i] = (unsigned char)next_u64();
    if (t == FC_BOOL)
        for (size_t i = 0; i < n; i++) p[i] &= 1;
    return p;
}

static int released; /* release callbacks and deleters seen */
static void count_release(void *user) {
    (void)user;
    released++;
}

/* Wraps host memory with count_release (released reset to 0) into *e; the import must work. */
static fc_array *wrap_counted(fc_ctx *ctx, void *data, fc_dtype t, fc_shape shape,
                              fc_external *e) {
    released = 0;
    *e = (fc_external){.data = data, .dtype = t, .shape = shape, .device = -1,
                       .release = count_release};
    fc_array *x = fc_from_external(ctx, e, NULL);
    cr_assert_eq(fc_array_status(x), FC_OK, "%s", fc_errmsg(ctx));
    return x;
}

/* ---- dtypes ----------------------------------------------------------------------------- */

Test(interop, dtype_mapping_both_ways) {
    for (int d = 0; d < FC_DTYPE_COUNT; d++) {
        DLDataType t;
        fc_dtype back;
        cr_assert_eq(fc_dlpack_dtype((fc_dtype)d, &t), FC_OK, "%s", fc_dtype_name((fc_dtype)d));
        cr_assert_eq(t.lanes, 1);
        cr_assert_eq(t.bits, fc_dtype_size((fc_dtype)d) * 8);
        cr_assert_eq(fc_dtype_from_dlpack(t, &back), FC_OK);
        cr_assert_eq(back, d);
    }
    DLDataType t;
    fc_dlpack_dtype(FC_BOOL, &t);
    cr_assert_eq(t.code, FC_DLPACK_BOOL);
    fc_dlpack_dtype(FC_BF16, &t);
    cr_assert_eq(t.code, kDLBfloat);
    fc_dlpack_dtype(FC_C128, &t);
    cr_assert(t.code == kDLComplex && t.bits == 128);
    fc_dtype out;
    const DLDataType bad[] = {{kDLFloat, 32, 4}, {kDLFloat, 8, 1}, {kDLInt, 128, 1},
                              {kDLOpaqueHandle, 64, 1}, {kDLBfloat, 32, 1}, {kDLComplex, 32, 1},
                              {FC_DLPACK_BOOL, 1, 1}, {9, 8, 1}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        cr_assert_eq(fc_dtype_from_dlpack(bad[i], &out), FC_ERR_DTYPE, "case %zu", i);
    cr_assert_eq(fc_dlpack_dtype(FC_DTYPE_COUNT, &t), FC_ERR_DTYPE);
    cr_assert_eq(fc_dlpack_dtype(FC_F32, NULL), FC_ERR_NULL);
    cr_assert_eq(fc_dtype_from_dlpack(t, NULL), FC_ERR_NULL);
}

/* ---- round trips ------------------------------------------------------------------------ */

Test(interop, dlpack_round_trip_every_dtype) {
    fc_ctx *ctx = tu_host_ctx();
    DLDevice dev;
    cr_assert_eq(fc_dlpack_device(ctx, &dev), FC_OK);
    cr_assert(dev.device_type == kDLCPU && dev.device_id == 0);
    for (int d = 0; d < FC_DTYPE_COUNT; d++) {
        fc_dtype t = (fc_dtype)d;
        size_t n = 2 * 3 * 5, es = fc_dtype_size(t);
        unsigned char *data = random_data(t, n);
        fc_array *x = fc_from_host(ctx, t, FC_SHAPE(2, 3, 5), data);
        DLManagedTensor *m;
        cr_assert_eq(fc_dlpack_export(x, NULL, &m), FC_OK, "%s", fc_errmsg(ctx));
        const DLTensor *dl = &m->dl_tensor;
        cr_assert_eq(dl->device.device_type, kDLCPU);
        cr_assert_eq(dl->ndim, 3);
        cr_assert(dl->shape[0] == 2 && dl->shape[1] == 3 && dl->shape[2] == 5);
        cr_assert(dl->strides[0] == 15 && dl->strides[1] == 5 && dl->strides[2] == 1);
        cr_assert_eq(dl->byte_offset, 0);
        fc_dtype back;
        cr_assert_eq(fc_dtype_from_dlpack(dl->dtype, &back), FC_OK);
        cr_assert_eq(back, t);
        cr_assert_eq(memcmp(dl->data, data, n * es), 0, "%s", fc_dtype_name(t));
        /* Back in: the same memory, zero-copy; exporting the import gives its address. */
        fc_array *y = fc_dlpack_import(ctx, m, NULL);
        cr_assert_eq(fc_array_status(y), FC_OK, "%s", fc_errmsg(ctx));
        fc_export e;
        cr_assert_eq(fc_array_export(y, NULL, &e), FC_OK);
        cr_assert_eq(e.data, m->dl_tensor.data);
        fc_export_release(&e);
        cr_assert_null(e.hold);
        fc_export_release(&e); /* a second time: nothing */
        unsigned char *got = malloc(n * es);
        memset(got, 0xA5, n * es);
        cr_assert_eq(fc_to_host(y, got, n * es), FC_OK);
        cr_assert_eq(memcmp(got, data, n * es), 0);
        fc_release(y); /* fusec calls m's deleter: the export goes */
        fc_release(x);
        free(got);
        free(data);
    }
    fc_memory_stats ms;
    fc_memory_stats_get(ctx, &ms);
    fc_ctx_destroy(ctx);
}

Test(interop, versioned_round_trip_read_only) {
    fc_ctx *ctx = tu_host_ctx();
    float v[6] = {1, 2, 3, 4, 5, 6};
    fc_array *x = fc_from_host(ctx, FC_F32, FC_SHAPE(2, 3), v);
    fc_dlpack_versioned *m;
    cr_assert_eq(fc_dlpack_export_versioned(x, NULL, 4, &m), FC_ERR_INVALID);
    cr_assert_eq(fc_dlpack_export_versioned(x, NULL, FC_DLPACK_FLAG_READ_ONLY, &m), FC_OK);
    cr_assert_eq(m->version.major, 1);
    cr_assert_eq(m->flags, FC_DLPACK_FLAG_READ_ONLY);
    fc_array *y = fc_dlpack_import_versioned(ctx, m, NULL);
    cr_assert_eq(fc_array_status(y), FC_OK, "%s", fc_errmsg(ctx));
    float w = 9;
    cr_assert_eq(fc_write(y, &w, 0, 1, NULL), FC_ERR_INVALID);
    cr_assert(strstr(fc_errmsg(ctx), "read-only"));
    fc_scope *s = fc_scope_open(ctx);
    float got = -1;
    cr_assert_eq(fc_read(fc_sum(fc_mul(y, y), FC_ALL, false), &got, 0, 1), FC_OK);
    cr_assert_float_eq(got, 91.0f, 0);
    fc_scope_close(s);
    fc_release(y);
    fc_release(x);
    fc_ctx_destroy(ctx);
}

/* ---- external memory -------------------------------------------------------------------- */

Test(interop, release_once_after_views_and_lazy_readers) {
    fc_ctx *ctx = tu_host_ctx();
    size_t n = 64;
    double *buf = random_data(FC_F64, n);
    for (size_t i = 0; i < n; i++) buf[i] = (double)(next_u64() >> 11) * 0x1p-53;
    fc_external e;
    fc_array *x = wrap_counted(ctx, buf, FC_F64, FC_SHAPE(8, 8), &e);
    fc_scope *build = fc_scope_open(ctx);
    fc_array *v = fc_slice(x, FC_S(1, 7, 2), FC_COLON);               /* a view */
    fc_array *lazy = fc_keep(fc_sum(fc_mul(v, v), FC_AXES(1), false)); /* unevaluated */
    fc_scope_close(build);
    fc_release(x);
    cr_assert_eq(released, 0, "the lazy reader still needs the memory");
    double got[3], want[3] = {0, 0, 0};
    memset(got, 0xA5, sizeof got);
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 8; c++) want[r] += buf[(1 + 2 * r) * 8 + c] * buf[(1 + 2 * r) * 8 + c];
    cr_assert_eq(fc_read(lazy, got, 0, 3), FC_OK);
    for (int r = 0; r < 3; r++) cr_assert_float_eq(got[r], want[r], 1e-12 * want[r]);
    cr_assert_eq(released, 1, "the evaluated result has its own value");
    fc_release(lazy);
    cr_assert_eq(released, 1);
    /* With a scope: the release waits for the scope. */
    released = 0;
    fc_scope *s = fc_scope_open(ctx);
    fc_array *y = fc_from_external(ctx, &e, NULL);
    fc_array *z = fc_negative(y);
    (void)z;
    cr_assert_eq(released, 0);
    fc_scope_close(s);
    cr_assert_eq(released, 1);
    /* And at the context's end. */
    released = 0;
    x = fc_from_external(ctx, &e, NULL);
    fc_ctx_destroy(ctx);
    cr_assert_eq(released, 1);
    free(buf);
}

Test(interop, writable_import_is_written_by_fc_write_only) {
    fc_ctx *ctx = tu_host_ctx();
    int32_t buf[4] = {1, 2, 3, 4};
    fc_external e;
    fc_array *x = wrap_counted(ctx, buf, FC_I32, FC_SHAPE(4), &e);
    /* An update of x that x dies with: never written over the imported memory. */
    fc_array *state = x;
    fc_scope *build = fc_scope_open(ctx);
    fc_array *upd = fc_keep(fc_setitem(x, 1, (fc_idx[]){FC_S(0, 2, 1)}, fc_i64(ctx, 7)));
    fc_scope_close(build);
    cr_assert_eq(fc_assign(ctx, &state, &upd, 1), FC_OK, "%s", fc_errmsg(ctx));
    int32_t got[4];
    cr_assert_eq(fc_to_host(state, got, sizeof got), FC_OK);
    cr_assert(got[0] == 7 && got[1] == 7 && got[2] == 3 && got[3] == 4);
    cr_assert(buf[0] == 1 && buf[1] == 2, "the import was written");
    cr_assert_eq(released, 1);
    fc_release(state);
    /* fc_write is the caller's own write: it goes into the memory. */
    x = fc_from_external(ctx, &e, NULL);
    int32_t w = 42;
    cr_assert_eq(fc_write(x, &w, 3, 1, NULL), FC_OK);
    cr_assert_eq(buf[3], 42);
    fc_release(x);
    cr_assert_eq(released, 2);
    fc_ctx_destroy(ctx);
}

Test(interop, empty_and_zero_d) {
    fc_ctx *ctx = tu_host_ctx();
    fc_external e;
    fc_array *x = wrap_counted(ctx, NULL, FC_F32, FC_SHAPE(3, 0), &e);
    fc_scope *s = fc_scope_open(ctx);
    fc_array *r = fc_sum(x, FC_AXES(1), false);
    float zeros[3] = {1, 1, 1};
    cr_assert_eq(fc_read(r, zeros, 0, 3), FC_OK);
    cr_assert(zeros[0] == 0 && zeros[2] == 0);
    fc_scope_close(s);
    fc_release(x);
    cr_assert_eq(released, 1);
    double one = 2.5;
    fc_external z = {.data = &one, .dtype = FC_F64, .shape = FC_SCALAR, .device = -1};
    fc_array *y = fc_from_external(ctx, &z, NULL);
    DLManagedTensor *m;
    cr_assert_eq(fc_dlpack_export(y, NULL, &m), FC_OK);
    cr_assert_eq(m->dl_tensor.ndim, 0);
    cr_assert_eq(m->dl_tensor.data, &one);
    m->deleter(m);
    fc_release(y);
    fc_ctx_destroy(ctx);
}

/* ---- strided layouts -------------------------------------------------------------------- */

/* Imports buf with shape / strides (elements, relative to element `base`) through DLPack
 * (byte_offset = base elements) and checks every element against the gather done here. */
static void check_strided(fc_ctx *ctx, const double *buf, size_t base, int ndim,
                          const int64_t *shape, const int64_t *strides) {
    DLManagedTensor m = {0};
    m.dl_tensor.data = (void *)buf;
    m.dl_tensor.byte_offset = base * sizeof *buf;
    m.dl_tensor.device.device_type = kDLCPU;
    m.dl_tensor.ndim = ndim;
    fc_dlpack_dtype(FC_F64, &m.dl_tensor.dtype);
    m.dl_tensor.shape = (int64_t *)shape;
    m.dl_tensor.strides = (int64_t *)strides;
    m.deleter = (void (*)(DLManagedTensor *))NULL;
    fc_array *x = fc_dlpack_import(ctx, &m, NULL);
    cr_assert_eq(fc_array_status(x), FC_OK, "%s", fc_errmsg(ctx));
    int64_t n = fc_array_size(x);
    double *got = malloc((size_t)(n ? n : 1) * sizeof *got);
    memset(got, 0xA5, (size_t)(n ? n : 1) * sizeof *got);
    cr_assert_eq(fc_read(x, got, 0, n), FC_OK, "%s", fc_errmsg(ctx));
    for (int64_t i = 0; i < n; i++) {
        int64_t rest = i, off = (int64_t)base;
        for (int d = ndim; d-- > 0;) {
            off += rest % shape[d] * strides[d];
            rest /= shape[d];
        }
        cr_assert_eq(got[i], buf[off], "element %lld", (long long)i);
    }
    free(got);
    fc_release(x);
}

Test(interop, strided_layouts_are_views) {
    fc_ctx *ctx = tu_host_ctx();
    double *buf = random_data(FC_F64, 4096);
    for (int i = 0; i < 4096; i++) buf[i] = i;
    check_strided(ctx, buf, 0, 2, (int64_t[]){5, 7}, (int64_t[]){1, 5});       /* Fortran */
    check_strided(ctx, buf, 0, 3, (int64_t[]){2, 3, 4}, (int64_t[]){1, 8, 2});  /* permuted */
    check_strided(ctx, buf, 34, 2, (int64_t[]){5, 7}, (int64_t[]){-7, 1});      /* flipped */
    check_strided(ctx, buf, 40, 2, (int64_t[]){5, 7}, (int64_t[]){-1, -5});     /* both */
    check_strided(ctx, buf, 3, 3, (int64_t[]){4, 6, 5}, (int64_t[]){0, 1, 0});  /* broadcast */
    check_strided(ctx, buf, 1, 2, (int64_t[]){4, 3}, (int64_t[]){20, 2});       /* gaps */
    check_strided(ctx, buf, 100, 3, (int64_t[]){3, 1, 4}, (int64_t[]){-48, 99, 3});
    check_strided(ctx, buf, 0, 1, (int64_t[]){9}, (int64_t[]){7});
    check_strided(ctx, buf, 5, 2, (int64_t[]){1, 1}, (int64_t[]){3, 3});        /* one element */
    check_strided(ctx, buf, 0, 8, (int64_t[]){2, 2, 2, 2, 2, 2, 2, 2},
                  (int64_t[]){256, 1, 128, 2, 64, 4, 32, 8}); /* eight axes, gaps */
    /* Overlapping or not nesting: refused, never copied; the deleter is not called. */
    released = 0;
    fc_external e = {.data = buf, .dtype = FC_F64, .shape = FC_SHAPE(3, 4), .device = -1,
                     .strides = (int64_t[]){2, 1}, .release = count_release};
    fc_array *x = fc_from_external(ctx, &e, NULL);
    cr_assert_eq(fc_array_status(x), FC_ERR_UNSUPPORTED);
    cr_assert(strstr(fc_array_errmsg(x), "overlap"), "%s", fc_array_errmsg(x));
    e.strides = (int64_t[]){3, 2};
    cr_assert_eq(fc_array_status(fc_from_external(ctx, &e, NULL)), FC_ERR_UNSUPPORTED);
    e.strides = (int64_t[]){INT64_MAX / 2, 1};
    cr_assert_eq(fc_array_status(fc_from_external(ctx, &e, NULL)), FC_ERR_SHAPE);
    cr_assert_eq(released, 0);
    /* A view's release comes once, when the view and its readers are gone. */
    e.strides = (int64_t[]){1, 3};
    x = fc_from_external(ctx, &e, NULL);
    cr_assert_eq(fc_array_status(x), FC_OK, "%s", fc_errmsg(ctx));
    fc_array *t = fc_add(x, x);
    fc_release(x);
    cr_assert_eq(released, 0);
    cr_assert_eq(fc_eval(ctx, &t, 1), FC_OK);
    cr_assert_eq(released, 1);
    fc_release(t);
    cr_assert_eq(released, 1);
    fc_ctx_destroy(ctx);
    free(buf);
}

/* ---- exports outlive their arrays and the context --------------------------------------- */

static void *release_on_thread(void *m) {
    ((DLManagedTensor *)m)->deleter(m);
    return NULL;
}

Test(interop, export_outlives_arrays_and_context) {
    fc_ctx *ctx = tu_host_ctx();
    fc_memory_stats before, after;
    fc_memory_stats_get(ctx, &before);
    int64_t *data = random_data(FC_I64, 1000);
    fc_array *x = fc_from_host(ctx, FC_I64, FC_SHAPE(1000), data);
    fc_scope *build = fc_scope_open(ctx);
    fc_array *y = fc_keep(fc_add(x, fc_i64(ctx, 1))); /* lazy: the export evaluates it */
    fc_scope_close(build);
    DLManagedTensor *m1, *m2;
    cr_assert_eq(fc_dlpack_export(y, NULL, &m1), FC_OK);
    cr_assert_eq(fc_dlpack_export(y, NULL, &m2), FC_OK);
    cr_assert_eq(m1->dl_tensor.data, m2->dl_tensor.data);
    fc_release(y);
    fc_release(x);
    const int64_t *p = m1->dl_tensor.data;
    for (int i = 0; i < 1000; i++) cr_assert_eq(p[i], data[i] + 1);
    /* One given back from another thread; the memory stays for the other. */
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, release_on_thread, m1), 0);
    pthread_join(th, NULL);
    fc_memory_stats_get(ctx, &after);
    cr_assert_gt(after.host_in_use, before.host_in_use);
    for (int i = 0; i < 1000; i++) cr_assert_eq(p[i], data[i] + 1);
    /* The context goes first: its end waits for the last export (ASan: no use after free,
     * LeakSanitizer: nothing left once the deleter ran). */
    fc_ctx_destroy(ctx);
    for (int i = 0; i < 1000; i++) cr_assert_eq(p[i], data[i] + 1);
    cr_assert_eq(pthread_create(&th, NULL, release_on_thread, m2), 0);
    pthread_join(th, NULL);
    free(data);
}

Test(interop, exported_memory_comes_back) {
    fc_ctx *ctx = tu_host_ctx();
    fc_memory_stats before, mid, after;
    fc_export e;
    fc_array *x = fc_arange(ctx, FC_F32, 0, 1, 1); /* the first export makes the state */
    cr_assert_eq(fc_array_export(x, NULL, &e), FC_OK);
    fc_export_release(&e);
    fc_release(x);
    fc_memory_stats_get(ctx, &before);
    x = fc_arange(ctx, FC_F32, 0, 4096, 1);
    cr_assert_eq(fc_array_export(x, NULL, &e), FC_OK);
    cr_assert(e.device == -1 && e.stream == NULL && e.ndim == 1 && e.shape[0] == 4096 &&
              e.strides[0] == 1 && e.bytes == 4096 * 4 && e.dtype == FC_F32);
    fc_release(x);
    fc_memory_stats_get(ctx, &mid);
    cr_assert_geq(mid.host_in_use, before.host_in_use + 4096 * 4);
    cr_assert_eq(((const float *)e.data)[4095], 4095.0f);
    fc_export_release(&e);
    fc_memory_stats_get(ctx, &after);
    cr_assert_eq(after.host_in_use, before.host_in_use);
    fc_ctx_destroy(ctx);
}

/* ---- streams ---------------------------------------------------------------------------- */

Test(interop, streams_on_the_host_backend) {
    fc_ctx *ctx = tu_host_ctx(), *other = tu_host_ctx();
    fc_stream *s;
    cr_assert_eq(fc_stream_wrap(ctx, (void *)0x1234, &s), FC_OK);
    fc_array *x = fc_arange(ctx, FC_I32, 0, 10, 1);
    cr_assert_eq(fc_stream_wait_array(s, x), FC_OK);
    cr_assert_eq(fc_eval_on(ctx, &x, 1, s), FC_OK);
    void *cu = (void *)1;
    cr_assert_eq(fc_stream_get_handle(ctx, s, &cu), FC_ERR_BACKEND);
    cr_assert_null(cu);
    cr_assert_eq(fc_stream_get_handle(other, s, &cu), FC_ERR_CONTEXT);
    cr_assert_eq(fc_stream_wait_array(s, fc_arange(other, FC_I32, 0, 3, 1)), FC_ERR_CONTEXT);
    fc_export e;
    cr_assert_eq(fc_array_export(x, s, &e), FC_OK);
    cr_assert_eq(((const int32_t *)e.data)[9], 9);
    fc_external ext = {.data = e.data, .dtype = FC_I32, .shape = FC_SHAPE(10), .device = -1};
    cr_assert_eq(fc_array_status(fc_from_external(other, &ext, s)), FC_ERR_CONTEXT);
    fc_stream_destroy(s);
    fc_export_release(&e);
    fc_release(x);
    cr_assert_eq(fc_stream_wrap(NULL, NULL, &s), FC_ERR_NULL);
    cr_assert_eq(fc_stream_wrap(ctx, NULL, NULL), FC_ERR_NULL);
    cr_assert_eq(fc_stream_wait_array(NULL, NULL), FC_ERR_NULL);
    fc_ctx_destroy(other);
    fc_ctx_destroy(ctx);
}

/* ---- errors ----------------------------------------------------------------------------- */

Test(interop, bad_input_errors) {
    fc_ctx *ctx = tu_host_ctx();
    float buf[16] = {0};
    released = 0;
    fc_external e = {.data = buf, .dtype = FC_F32, .shape = FC_SHAPE(4, 4), .device = -1,
                     .release = count_release};
    cr_assert_null(fc_from_external(NULL, &e, NULL));
    cr_assert_eq(fc_array_status(fc_from_external(ctx, NULL, NULL)), FC_ERR_NULL);
    fc_external b = e;
    b.data = NULL;
    cr_assert_eq(fc_array_status(fc_from_external(ctx, &b, NULL)), FC_ERR_NULL);
    b = e, b.dtype = (fc_dtype)99;
    cr_assert_eq(fc_array_status(fc_from_external(ctx, &b, NULL)), FC_ERR_DTYPE);
    b = e, b.shape.ndim = 9;
    cr_assert_eq(fc_array_status(fc_from_external(ctx, &b, NULL)), FC_ERR_SHAPE);
    b = e, b.shape.dim[0] = -1;
    cr_assert_eq(fc_array_status(fc_from_external(ctx, &b, NULL)), FC_ERR_SHAPE);
    b = e, b.shape = FC_SHAPE(INT64_MAX / 2, 8);
    cr_assert_eq(fc_array_status(fc_from_external(ctx, &b, NULL)), FC_ERR_SHAPE);
    b = e, b.device = 0;
    fc_array *x = fc_from_external(ctx, &b, NULL);
    cr_assert_eq(fc_array_status(x), FC_ERR_INVALID);
    cr_assert(strstr(fc_array_errmsg(x), "device memory"), "%s", fc_array_errmsg(x));
    b = e, b.data = (char *)buf + 2;
    cr_assert_eq(fc_array_status(fc_from_external(ctx, &b, NULL)), FC_ERR_INVALID);
    cr_assert_eq(released, 0, "a failed import never releases");

    /* DLPack: what fusec cannot represent, named; the tensor stays the caller's. */
    int64_t shape[2] = {4, 4};
    DLManagedTensor m = {0};
    m.dl_tensor.data = buf;
    m.dl_tensor.device.device_type = kDLCPU;
    m.dl_tensor.ndim = 2;
    m.dl_tensor.shape = shape;
    m.dl_tensor.dtype = (DLDataType){kDLFloat, 32, 4};
    m.deleter = (void (*)(DLManagedTensor *))count_release;
    x = fc_dlpack_import(ctx, &m, NULL);
    cr_assert_eq(fc_array_status(x), FC_ERR_DTYPE);
    cr_assert(strstr(fc_array_errmsg(x), "lanes 4"), "%s", fc_array_errmsg(x));
    m.dl_tensor.dtype = (DLDataType){kDLFloat, 8, 1};
    x = fc_dlpack_import(ctx, &m, NULL);
    cr_assert(strstr(fc_array_errmsg(x), "float8"), "%s", fc_array_errmsg(x));
    m.dl_tensor.dtype = (DLDataType){kDLFloat, 32, 1};
    m.dl_tensor.device.device_type = kDLCUDA;
    x = fc_dlpack_import(ctx, &m, NULL);
    cr_assert_eq(fc_array_status(x), FC_ERR_INVALID);
    cr_assert(strstr(fc_array_errmsg(x), "device type 2"), "%s", fc_array_errmsg(x));
    m.dl_tensor.device.device_type = kDLCPU;
    m.dl_tensor.ndim = 9;
    cr_assert_eq(fc_array_status(fc_dlpack_import(ctx, &m, NULL)), FC_ERR_SHAPE);
    m.dl_tensor.ndim = -1;
    cr_assert_eq(fc_array_status(fc_dlpack_import(ctx, &m, NULL)), FC_ERR_SHAPE);
    m.dl_tensor.ndim = 2;
    m.dl_tensor.shape = NULL;
    cr_assert_eq(fc_array_status(fc_dlpack_import(ctx, &m, NULL)), FC_ERR_NULL);
    cr_assert_eq(fc_array_status(fc_dlpack_import(ctx, NULL, NULL)), FC_ERR_NULL);
    fc_dlpack_versioned v = {0};
    v.version.major = 2;
    cr_assert_eq(fc_array_status(fc_dlpack_import_versioned(ctx, &v, NULL)), FC_ERR_UNSUPPORTED);
    cr_assert_eq(released, 0, "a failed import never calls the deleter");
    /* kDLCUDAHost is host memory to the host backend; byte_offset counts. */
    m.dl_tensor.shape = shape;
    m.dl_tensor.device.device_type = kDLCUDAHost;
    m.dl_tensor.byte_offset = 4;
    shape[0] = 3;
    for (int i = 0; i < 16; i++) buf[i] = (float)i;
    x = fc_dlpack_import(ctx, &m, NULL);
    float first = -1;
    cr_assert_eq(fc_read(x, &first, 0, 1), FC_OK, "%s", fc_errmsg(ctx));
    cr_assert_eq(first, 1.0f);
    fc_release(x);
    cr_assert_eq(released, 1);

    /* Exports. */
    DLManagedTensor *out = (DLManagedTensor *)1;
    fc_export ex;
    cr_assert_eq(fc_dlpack_export(NULL, NULL, &out), FC_ERR_NULL);
    cr_assert_null(out);
    cr_assert_eq(fc_array_export(NULL, NULL, &ex), FC_ERR_NULL);
    fc_array *bad = fc_add(fc_zeros(ctx, FC_F32, FC_SHAPE(2)), fc_zeros(ctx, FC_F32, FC_SHAPE(3)));
    cr_assert_eq(fc_dlpack_export(bad, NULL, &out), FC_ERR_SHAPE);
    cr_assert_null(out);
    cr_assert_eq(fc_array_export(fc_i128(ctx, 1, 0), NULL, &ex), FC_ERR_INVALID);
    cr_assert_null(ex.hold);
    cr_assert_eq(fc_dlpack_device(NULL, NULL), FC_ERR_NULL);
    fc_export_release(NULL);
    fc_ctx_destroy(ctx);
}
