/*
 * tests/test_gpu_interop.c - interop on the CUDA backend: a cuMemAlloc'd buffer of the test's
 * own wrapped as an array (fc_from_external and DLPack), computed on, exported, imported
 * back; deleters counted; work ordered on a CUstream the test created and wrapped; a result
 * never written over exported or imported memory (fc_memory_stats.reused). The driver API is
 * reached through dlopen, as fusec does, so the binary starts where there is no driver; each
 * test is skipped, visibly, where there is no GPU. Results are compared with the host
 * backend's on random data, read into buffers poisoned with 0xA5 bytes.
 */
#include <criterion/criterion.h>

#include "fusec_dlpack.h"
#include "test_util.h"

#include <cuda.h>
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

static fc_ctx *hc, *gc;

/* The driver calls the test makes itself. */
static struct {
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
    CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*MemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream);
    CUresult (*StreamCreate)(CUstream *, unsigned);
    CUresult (*StreamDestroy)(CUstream);
    CUresult (*StreamSynchronize)(CUstream);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*PrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*PrimaryCtxRelease)(CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
} cu;
static void *libcuda;
static CUcontext primary;
static CUdevice device;

#define LOAD(field, name) cr_assert_not_null(cu.field = (__typeof__(cu.field))dlsym(libcuda, name), name)
#define CK(call) cr_assert_eq((call), CUDA_SUCCESS, "%s", #call)

static void setup(void) {
    tu_gpu_pair_open(&hc, &gc);
    if (!gc) return;
    cr_assert_not_null(libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL));
    LOAD(MemAlloc, "cuMemAlloc_v2");
    LOAD(MemFree, "cuMemFree_v2");
    LOAD(MemcpyHtoD, "cuMemcpyHtoD_v2");
    LOAD(MemcpyDtoH, "cuMemcpyDtoH_v2");
    LOAD(MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
    LOAD(StreamCreate, "cuStreamCreate");
    LOAD(StreamDestroy, "cuStreamDestroy_v2");
    LOAD(StreamSynchronize, "cuStreamSynchronize");
    LOAD(DeviceGet, "cuDeviceGet");
    LOAD(PrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    LOAD(PrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
    LOAD(CtxSetCurrent, "cuCtxSetCurrent");
    CK(cu.DeviceGet(&device, fc_ctx_device(gc)));
    CK(cu.PrimaryCtxRetain(&primary, device));
    CK(cu.CtxSetCurrent(primary));
}

static void teardown(void) {
    if (gc) cu.PrimaryCtxRelease(device);
    tu_gpu_pair_close(&hc, &gc);
    if (libcuda) dlclose(libcuda);
    libcuda = NULL;
}

TestSuite(gpu_interop, .init = setup, .fini = teardown);

#define SKIP(name) TU_SKIP_WITHOUT_GPU(gc, "gpu_interop", name)

static uint64_t rng = 0x2545F4914F6CDD1DULL;
static float frand(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (float)(rng >> 40) * 0x1p-24f * 4.0f - 2.0f;
}

/* A device buffer of the test's own, and its deleter count. */
typedef struct owned {
    CUdeviceptr p;
    int freed;
} owned;
static void free_owned(void *user) {
    owned *o = user;
    o->freed++;
    cu.CtxSetCurrent(primary);
    cu.MemFree(o->p);
}
static void dl_free_owned(DLManagedTensor *m) { free_owned(m->manager_ctx); }

#define N 4096

Test(gpu_interop, wrap_compute_export_import) {
    SKIP("wrap_compute_export_import");
    float host[N], got[N], want[N];
    for (int i = 0; i < N; i++) host[i] = frand();
    owned o = {0};
    CK(cu.MemAlloc(&o.p, sizeof host));
    CK(cu.MemcpyHtoD(o.p, host, sizeof host));
    fc_external e = {.data = (void *)(uintptr_t)o.p, .dtype = FC_F32, .shape = FC_SHAPE(64, 64),
                     .device = fc_ctx_device(gc), .release = free_owned, .user = &o};
    fc_array *x = fc_from_external(gc, &e, NULL);
    cr_assert_eq(fc_array_status(x), FC_OK, "%s", fc_errmsg(gc));
    fc_array *xh = fc_from_host(hc, FC_F32, FC_SHAPE(64, 64), host);
    fc_scope *s = fc_scope_open(gc), *sh = fc_scope_open(hc);
    fc_array *y = fc_keep(fc_tanh(fc_add(fc_mul(x, x), fc_permute(x, FC_AXES(1, 0)))));
    fc_array *yh = fc_tanh(fc_add(fc_mul(xh, xh), fc_permute(xh, FC_AXES(1, 0))));
    fc_scope_close(s);
    cr_assert_eq(fc_to_host(yh, want, sizeof want), FC_OK);
    fc_scope_close(sh);
    /* Export the result, import it back (zero-copy), read it. */
    DLManagedTensor *m;
    cr_assert_eq(fc_dlpack_export(y, NULL, &m), FC_OK, "%s", fc_errmsg(gc));
    cr_assert_eq(m->dl_tensor.device.device_type, kDLCUDA);
    cr_assert_eq(m->dl_tensor.device.device_id, fc_ctx_device(gc));
    memset(got, 0xA5, sizeof got);
    CK(cu.MemcpyDtoH(got, (CUdeviceptr)(uintptr_t)m->dl_tensor.data, sizeof got));
    for (int i = 0; i < N; i++) cr_assert_float_eq(got[i], want[i], 1e-5f, "element %d", i);
    fc_array *z = fc_dlpack_import(gc, m, NULL);
    fc_export ex;
    cr_assert_eq(fc_array_export(z, NULL, &ex), FC_OK);
    cr_assert_eq(ex.data, m->dl_tensor.data);
    cr_assert_eq(ex.device, fc_ctx_device(gc));
    fc_export_release(&ex);
    fc_release(y);
    memset(got, 0xA5, sizeof got);
    cr_assert_eq(fc_to_host(z, got, sizeof got), FC_OK);
    for (int i = 0; i < N; i++) cr_assert_float_eq(got[i], want[i], 1e-5f);
    fc_release(z);
    cr_assert_eq(o.freed, 0, "x still holds the buffer");
    fc_release(x);
    cr_assert_eq(o.freed, 1);
    fc_release(xh);
}

/* Compact imports whose data is 1 to 3 elements (4 to 12 bytes) past a 16-byte boundary, as
 * a slice of a PyTorch tensor gives: kernels that read whole buffers 16 bytes at a time
 * (elementwise, row reductions) must not meet them there (a misaligned-address fault, seen
 * from Python before the import read them as a view); values as the host's, the release
 * once. Also f64 one element off and f16 (8 a vector) several off. */
Test(gpu_interop, unaligned_compact_imports) {
    SKIP("unaligned_compact_imports");
    static const struct { fc_dtype t; int skip; } cases[] = {
        {FC_F32, 1}, {FC_F32, 2}, {FC_F32, 3}, {FC_F64, 1}, {FC_F16, 3}, {FC_F16, 7}};
    float host[N + 8];
    for (int i = 0; i < N + 8; i++) host[i] = frand();
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        fc_dtype t = cases[c].t;
        size_t es = fc_dtype_size(t);
        /* the host values in t, then on the device from its aligned start */
        fc_array *all = fc_cast(fc_from_host(hc, FC_F32, FC_SHAPE(N + 8), host), t);
        unsigned char bytes[(N + 8) * 8];
        cr_assert_eq(fc_to_host(all, bytes, (N + 8) * es), FC_OK, "%s", fc_errmsg(hc));
        owned o = {0};
        CK(cu.MemAlloc(&o.p, (N + 8) * es));
        CK(cu.MemcpyHtoD(o.p, bytes, (N + 8) * es));
        fc_external e = {.data = (void *)(uintptr_t)(o.p + cases[c].skip * es), .dtype = t,
                         .shape = FC_SHAPE(16, N / 16), .device = fc_ctx_device(gc),
                         .release = free_owned, .user = &o};
        fc_array *x = fc_from_external(gc, &e, NULL);
        cr_assert_eq(fc_array_status(x), FC_OK, "%s", fc_errmsg(gc));
        fc_array *xh = fc_reshape(fc_slice(all, FC_S(cases[c].skip, cases[c].skip + N, 1)),
                                  FC_SHAPE(16, N / 16));
        fc_scope *s = fc_scope_open(gc), *sh = fc_scope_open(hc);
        fc_array *y[2] = {fc_keep(fc_add(fc_mul(x, fc_f64(gc, 2.0)), fc_f64(gc, 1.0))),
                          fc_keep(fc_sum(fc_cast(x, FC_F64), FC_AXES(1), false))};
        fc_array *yh[2] = {fc_keep(fc_add(fc_mul(xh, fc_f64(hc, 2.0)), fc_f64(hc, 1.0))),
                           fc_keep(fc_sum(fc_cast(xh, FC_F64), FC_AXES(1), false))};
        fc_scope_close(s);
        fc_scope_close(sh);
        cr_assert_eq(fc_eval(gc, y, 2), FC_OK, "case %zu: %s", c, fc_errmsg(gc));
        for (int q = 0; q < 2; q++) {
            double got[N], want[N];
            int64_t n = q ? 16 : N;
            memset(got, 0xA5, sizeof got);
            cr_assert_eq(fc_to_host(fc_cast(y[q], FC_F64), got, (size_t)n * 8), FC_OK,
                         "%s", fc_errmsg(gc));
            cr_assert_eq(fc_to_host(fc_cast(yh[q], FC_F64), want, (size_t)n * 8), FC_OK);
            for (int64_t i = 0; i < n; i++)
                cr_assert(got[i] == want[i] || fabs(got[i] - want[i]) <= 1e-9 * fabs(want[i]),
                          "case %zu output %d element %lld: %g, want %g", c, q, (long long)i,
                          got[i], want[i]);
            fc_release(y[q]);
            fc_release(yh[q]);
        }
        cr_assert_eq(o.freed, 0, "x still holds the buffer");
        fc_release(x);
        cr_assert_eq(o.freed, 1);
    }
}

Test(gpu_interop, dlpack_import_of_own_buffer_deleter_once) {
    SKIP("dlpack_import_of_own_buffer_deleter_once");
    double host[256], got[16];
    for (int i = 0; i < 256; i++) host[i] = frand();
    owned o = {0};
    CK(cu.MemAlloc(&o.p, sizeof host));
    CK(cu.MemcpyHtoD(o.p, host, sizeof host));
    int64_t shape[2] = {4, 4}, strides[2] = {1, 32}; /* a transposed slice: a view */
    DLManagedTensor m = {0};
    m.dl_tensor.data = (void *)(uintptr_t)o.p;
    m.dl_tensor.byte_offset = 8 * sizeof(double);
    m.dl_tensor.device = (DLDevice){kDLCUDA, fc_ctx_device(gc)};
    m.dl_tensor.ndim = 2;
    fc_dlpack_dtype(FC_F64, &m.dl_tensor.dtype);
    m.dl_tensor.shape = shape;
    m.dl_tensor.strides = strides;
    m.manager_ctx = &o;
    m.deleter = dl_free_owned;
    fc_array *x = fc_dlpack_import(gc, &m, NULL);
    cr_assert_eq(fc_array_status(x), FC_OK, "%s", fc_errmsg(gc));
    memset(got, 0xA5, sizeof got);
    cr_assert_eq(fc_read(x, got, 0, 16), FC_OK, "%s", fc_errmsg(gc));
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) cr_assert_eq(got[i * 4 + j], host[8 + i + 32 * j]);
    fc_release(x);
    cr_assert_eq(o.freed, 1);
    /* Another device's id, and host memory as device memory: clear errors, no deleter. */
    owned o2 = {0};
    CK(cu.MemAlloc(&o2.p, 64));
    m.dl_tensor.data = (void *)(uintptr_t)o2.p;
    m.dl_tensor.byte_offset = 0;
    m.dl_tensor.strides = NULL;
    m.manager_ctx = &o2;
    m.dl_tensor.device.device_id = fc_ctx_device(gc) + 1;
    cr_assert_eq(fc_array_status(fc_dlpack_import(gc, &m, NULL)), FC_ERR_INVALID);
    m.dl_tensor.device.device_id = fc_ctx_device(gc);
    m.dl_tensor.data = host;
    fc_array *bad = fc_dlpack_import(gc, &m, NULL);
    cr_assert_eq(fc_array_status(bad), FC_ERR_INVALID);
    cr_assert(strstr(fc_array_errmsg(bad), "not memory the CUDA driver knows") ||
              strstr(fc_array_errmsg(bad), "host memory"), "%s", fc_array_errmsg(bad));
    cr_assert_eq(o2.freed, 0);
    free_owned(&o2);
}

Test(gpu_interop, wrapped_stream_orders_work) {
    SKIP("wrapped_stream_orders_work");
    CUstream mine;
    CK(cu.StreamCreate(&mine, CU_STREAM_NON_BLOCKING));
    fc_stream *s;
    cr_assert_eq(fc_stream_wrap(gc, mine, &s), FC_OK, "%s", fc_errmsg(gc));
    void *h = NULL;
    cr_assert_eq(fc_stream_get_handle(gc, s, &h), FC_OK);
    cr_assert_eq(h, (void *)mine);
    cr_assert_eq(fc_stream_get_handle(gc, NULL, &h), FC_OK);
    cr_assert_not_null(h);
    /* The test writes a buffer on its stream (async, no wait); fusec reads it after. */
    static float host[N];
    float got[N];
    for (int i = 0; i < N; i++) host[i] = frand();
    owned o = {0};
    CK(cu.MemAlloc(&o.p, sizeof host));
    CK(cu.MemcpyHtoDAsync(o.p, host, sizeof host, mine));
    fc_external e = {.data = (void *)(uintptr_t)o.p, .dtype = FC_F32, .shape = FC_SHAPE(N),
                     .device = fc_ctx_device(gc), .release = free_owned, .user = &o};
    fc_array *x = fc_from_external(gc, &e, s);
    fc_scope *sc = fc_scope_open(gc);
    fc_array *y = fc_keep(fc_mul(x, fc_f64(gc, 3.0)));
    fc_scope_close(sc);
    cr_assert_eq(fc_eval_on(gc, &y, 1, NULL), FC_OK, "%s", fc_errmsg(gc));
    /* Export for a consumer on the test's stream: the stream waits for fusec's kernel. */
    fc_export ex;
    cr_assert_eq(fc_array_export(y, s, &ex), FC_OK, "%s", fc_errmsg(gc));
    cr_assert_not_null(ex.stream);
    memset(got, 0xA5, sizeof got);
    CK(cu.StreamSynchronize(mine));
    CK(cu.MemcpyDtoH(got, (CUdeviceptr)(uintptr_t)ex.data, sizeof got));
    for (int i = 0; i < N; i++) cr_assert_float_eq(got[i], host[i] * 3.0f, 1e-6f);
    cr_assert_eq(fc_stream_wait_array(s, y), FC_OK);
    fc_export_release(&ex);
    fc_release(y);
    fc_release(x);
    cr_assert_eq(o.freed, 1);
    fc_stream_destroy(s); /* the CUstream stays the test's */
    CK(cu.StreamSynchronize(mine));
    CK(cu.StreamDestroy(mine));
    /* The legacy default stream, by the DLPack convention. */
    cr_assert_eq(fc_stream_wrap(gc, (void *)1, &s), FC_OK, "%s", fc_errmsg(gc));
    fc_stream_destroy(s);
    /* (A pointer that is no stream at all is not checked: the driver dereferences it, which
     * crashed here in session 15's call 3. fc_stream_wrap asks for a valid CUstream.) */
}

Test(gpu_interop, no_result_over_shared_memory) {
    SKIP("no_result_over_shared_memory");
    float host[N];
    for (int i = 0; i < N; i++) host[i] = frand();
    /* Control: a state updated in place reuses its buffer. */
    fc_memory_stats m0, m1;
    fc_array *state = fc_from_host(gc, FC_F32, FC_SHAPE(N), host);
    cr_assert_eq(fc_eval(gc, &state, 1), FC_OK);
    fc_memory_stats_get(gc, &m0);
    fc_scope *sc = fc_scope_open(gc);
    fc_array *upd = fc_keep(fc_add(state, fc_f64(gc, 1.0)));
    fc_scope_close(sc);
    cr_assert_eq(fc_assign(gc, &state, &upd, 1), FC_OK, "%s", fc_errmsg(gc));
    fc_memory_stats_get(gc, &m1);
    cr_assert_eq(m1.reused, m0.reused + 1, "the control must reuse");
    /* Exported: the update gets a buffer of its own, the export keeps its data. */
    fc_export ex;
    cr_assert_eq(fc_array_export(state, NULL, &ex), FC_OK);
    sc = fc_scope_open(gc);
    upd = fc_keep(fc_add(state, fc_f64(gc, 1.0)));
    fc_scope_close(sc);
    cr_assert_eq(fc_assign(gc, &state, &upd, 1), FC_OK);
    cr_assert_eq(fc_ctx_synchronize(gc), FC_OK);
    fc_memory_stats_get(gc, &m0);
    cr_assert_eq(m0.reused, m1.reused, "a result went over exported memory");
    float got[N];
    memset(got, 0xA5, sizeof got);
    CK(cu.MemcpyDtoH(got, (CUdeviceptr)(uintptr_t)ex.data, sizeof got));
    for (int i = 0; i < N; i++) cr_assert_eq(got[i], host[i] + 1.0f);
    fc_export_release(&ex);
    /* Imported: likewise. */
    owned o = {0};
    CK(cu.MemAlloc(&o.p, sizeof host));
    CK(cu.MemcpyHtoD(o.p, host, sizeof host));
    fc_external e = {.data = (void *)(uintptr_t)o.p, .dtype = FC_F32, .shape = FC_SHAPE(N),
                     .device = fc_ctx_device(gc), .release = free_owned, .user = &o};
    fc_release(state);
    state = fc_from_external(gc, &e, NULL);
    sc = fc_scope_open(gc);
    upd = fc_keep(fc_add(state, fc_f64(gc, 1.0)));
    fc_scope_close(sc);
    cr_assert_eq(fc_assign(gc, &state, &upd, 1), FC_OK);
    cr_assert_eq(o.freed, 1);
    fc_memory_stats_get(gc, &m1);
    cr_assert_eq(m1.reused, m0.reused, "a result went over imported memory");
    memset(got, 0xA5, sizeof got);
    cr_assert_eq(fc_to_host(state, got, sizeof got), FC_OK);
    for (int i = 0; i < N; i++) cr_assert_eq(got[i], host[i] + 1.0f);
    fc_release(state);
}

Test(gpu_interop, export_outlives_context) {
    SKIP("export_outlives_context");
    fc_ctx_options o;
    memset(&o, 0, sizeof o);
    o.backend = FC_BACKEND_CUDA;
    fc_ctx *c;
    cr_assert_eq(fc_ctx_create(&c, &o), FC_OK);
    fc_array *x = fc_arange(c, FC_I32, 0, N, 1);
    DLManagedTensor *m;
    cr_assert_eq(fc_dlpack_export(x, NULL, &m), FC_OK, "%s", fc_errmsg(c));
    fc_release(x);
    fc_ctx_destroy(c); /* waits for m's deleter to let the memory go */
    int32_t got[N];
    memset(got, 0xA5, sizeof got);
    cu.CtxSetCurrent(primary);
    CK(cu.MemcpyDtoH(got, (CUdeviceptr)(uintptr_t)m->dl_tensor.data, sizeof got));
    for (int i = 0; i < N; i++) cr_assert_eq(got[i], i);
    m->deleter(m); /* finishes the context */
}
