/*
 * runtime/cuda.c - the CUDA backend: the driver API loaded with dlopen, a context on one
 * device, stream-ordered device memory, and plan execution (fuse -> generate -> cache or
 * NVRTC -> load -> launch).
 *
 * libcuda is never linked: every binary starts on a machine without a driver, and the
 * backend says why it cannot run there. Entry points come from cuGetProcAddress for the ABI
 * this file was written against (CUDA 12.0), so a newer driver keeps these signatures.
 */
#include "graph.h"

#include "codegen.h"
#include "kcompile.h"
#include "plan.h"

#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FCR_ABI_VERSION 12000

typedef CUresult (*pfn_GetProcAddress)(const char *, void **, int, cuuint64_t,
                                       CUdriverProcAddressQueryResult *);

/* The driver entry points fusec uses, resolved once per process. */
typedef struct driver {
    CUresult (*Init)(unsigned);
    CUresult (*DriverGetVersion)(int *);
    CUresult (*DeviceGetCount)(int *);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DeviceGetName)(char *, int, CUdevice);
    CUresult (*DeviceGetAttribute)(int *, CUdevice_attribute, CUdevice);
    CUresult (*DeviceTotalMem)(size_t *, CUdevice);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*DevicePrimaryCtxRelease)(CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*CtxSynchronize)(void);
    CUresult (*StreamCreate)(CUstream *, unsigned);
    CUresult (*StreamDestroy)(CUstream);
    CUresult (*StreamSynchronize)(CUstream);
    CUresult (*MemAllocAsync)(CUdeviceptr *, size_t, CUstream);
    CUresult (*MemFreeAsync)(CUdeviceptr, CUstream);
    CUresult (*DeviceGetDefaultMemPool)(CUmemoryPool *, CUdevice);
    CUresult (*MemPoolSetAttribute)(CUmemoryPool, CUmemPool_attribute, void *);
    CUresult (*MemPoolTrimTo)(CUmemoryPool, size_t);
    CUresult (*MemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream);
    CUresult (*MemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
    CUresult (*MemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
    CUresult (*ModuleLoadData)(CUmodule *, const void *);
    CUresult (*ModuleUnload)(CUmodule);
    CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, CUstream, void **, void **);
    CUresult (*OccupancyMaxActiveBlocksPerMultiprocessor)(int *, CUfunction, int, size_t);
    CUresult (*GetErrorName)(CUresult, const char **);
    CUresult (*GetErrorString)(CUresult, const char **);
} driver;

static driver drv;
static int drv_state; /* 0 untried, 1 loaded, -1 failed */
static char drv_error[256];

/* A loaded kernel, found by its cache key. */
typedef struct module_entry {
    fcc_key key;
    CUmodule mod;
    CUfunction fn;
    int blocks_per_sm;
} module_entry;

typedef struct cuda_state {
    CUdevice dev;
    CUcontext cu;
    CUstream stream;
    CUmemoryPool pool;
    int sm_count, cc_major, cc_minor;
    char arch[16];
    char name[128];
    module_entry *mods;
    size_t nmods, capmods;
    size_t in_use, peak, limit;
    bool dead; /* a sticky error poisoned the CUDA context */
} cuda_state;

static const char *cu_err(CUresult r) {
    const char *name = NULL;
    if (drv.GetErrorName) drv.GetErrorName(r, &name);
    return name ? name : "CUDA_ERROR_UNKNOWN";
}

/* Errors that leave the CUDA context unusable. */
static bool sticky(CUresult r) {
    return r == CUDA_ERROR_ILLEGAL_ADDRESS || r == CUDA_ERROR_LAUNCH_FAILED ||
           r == CUDA_ERROR_MISALIGNED_ADDRESS || r == CUDA_ERROR_ILLEGAL_INSTRUCTION ||
           r == CUDA_ERROR_HARDWARE_STACK_ERROR || r == CUDA_ERROR_INVALID_PC ||
           r == CUDA_ERROR_LAUNCH_TIMEOUT || r == CUDA_ERROR_ECC_UNCORRECTABLE;
}

static fc_status check(fc_ctx *ctx, CUresult r, const char *call, const char *file, int line) {
    if (r == CUDA_SUCCESS) return FC_OK;
    cuda_state *cs = ctx->cuda;
    if (cs && sticky(r)) cs->dead = true;
    const char *desc = NULL;
    if (drv.GetErrorString) drv.GetErrorString(r, &desc);
    return fcg_error(ctx, r == CUDA_ERROR_OUT_OF_MEMORY ? FC_ERR_NOMEM : FC_ERR_BACKEND,
                     "%s failed: %s (%s) at %s:%d%s", call, cu_err(r), desc ? desc : "", file,
                     line, cs && cs->dead ? "; the GPU context is now unusable" : "");
}
#define CU(ctx, call) check((ctx), drv.call, #call, __FILE__, __LINE__)

static bool load_driver(void) {
    if (drv_state) return drv_state > 0;
    drv_state = -1;
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(drv_error, sizeof drv_error, "no CUDA driver: %s", dlerror());
        return false;
    }
    pfn_GetProcAddress gpa = (pfn_GetProcAddress)dlsym(lib, "cuGetProcAddress_v2");
    if (!gpa) {
        snprintf(drv_error, sizeof drv_error,
                 "the CUDA driver is too old: it lacks cuGetProcAddress_v2 (CUDA 12 or newer "
                 "is needed)");
        return false;
    }
#define SYM(field, name)                                                                         \
    do {                                                                                         \
        CUdriverProcAddressQueryResult q;                                                        \
        if (gpa(name, (void **)&drv.field, FCR_ABI_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &q) !=  \
                CUDA_SUCCESS ||                                                                  \
            !drv.field) {                                                                        \
            snprintf(drv_error, sizeof drv_error, "the CUDA driver lacks %s", name);             \
            return false;                                                                        \
        }                                                                                        \
    } while (0)
    SYM(Init, "cuInit");
    SYM(DriverGetVersion, "cuDriverGetVersion");
    SYM(DeviceGetCount, "cuDeviceGetCount");
    SYM(DeviceGet, "cuDeviceGet");
    SYM(DeviceGetName, "cuDeviceGetName");
    SYM(DeviceGetAttribute, "cuDeviceGetAttribute");
    SYM(DeviceTotalMem, "cuDeviceTotalMem");
    SYM(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    SYM(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease");
    SYM(CtxSetCurrent, "cuCtxSetCurrent");
    SYM(CtxSynchronize, "cuCtxSynchronize");
    SYM(StreamCreate, "cuStreamCreate");
    SYM(StreamDestroy, "cuStreamDestroy");
    SYM(StreamSynchronize, "cuStreamSynchronize");
    SYM(MemAllocAsync, "cuMemAllocAsync");
    SYM(MemFreeAsync, "cuMemFreeAsync");
    SYM(DeviceGetDefaultMemPool, "cuDeviceGetDefaultMemPool");
    SYM(MemPoolSetAttribute, "cuMemPoolSetAttribute");
    SYM(MemPoolTrimTo, "cuMemPoolTrimTo");
    SYM(MemcpyHtoDAsync, "cuMemcpyHtoDAsync");
    SYM(MemcpyDtoHAsync, "cuMemcpyDtoHAsync");
    SYM(MemcpyDtoDAsync, "cuMemcpyDtoDAsync");
    SYM(ModuleLoadData, "cuModuleLoadData");
    SYM(ModuleUnload, "cuModuleUnload");
    SYM(ModuleGetFunction, "cuModuleGetFunction");
    SYM(LaunchKernel, "cuLaunchKernel");
    SYM(OccupancyMaxActiveBlocksPerMultiprocessor, "cuOccupancyMaxActiveBlocksPerMultiprocessor");
    SYM(GetErrorName, "cuGetErrorName");
    SYM(GetErrorString, "cuGetErrorString");
#undef SYM
    if (drv.Init(0) != CUDA_SUCCESS) {
        snprintf(drv_error, sizeof drv_error, "cuInit failed: no usable CUDA device or driver");
        return false;
    }
    drv_state = 1;
    return true;
}

static void free_value(fc_ctx *ctx, fc_array *a) {
    cuda_state *cs = ctx->cuda;
    if (!cs || !a->dev) return;
    if (!cs->dead) drv.MemFreeAsync((CUdeviceptr)a->dev, cs->stream);
    cs->in_use -= a->dev_bytes;
    a->dev = 0;
    a->dev_bytes = 0;
}

static void destroy(fc_ctx *ctx) {
    cuda_state *cs = ctx->cuda;
    if (!cs) return;
    /* Device values of nodes still alive are freed with them (before this runs). */
    if (!cs->dead) {
        drv.StreamSynchronize(cs->stream);
        for (size_t i = 0; i < cs->nmods; i++) drv.ModuleUnload(cs->mods[i].mod);
        drv.StreamDestroy(cs->stream);
    }
    drv.DevicePrimaryCtxRelease(cs->dev);
    fcg_free(ctx, cs->mods, cs->capmods * sizeof *cs->mods);
    fcg_free(ctx, cs, sizeof *cs);
    ctx->cuda = NULL;
}

static size_t parse_size(const char *s) {
    char *end;
    double v = strtod(s, &end);
    if (end == s || v < 0) return 0;
    switch (*end) {
    case 'k': case 'K': v *= 1024.0; break;
    case 'm': case 'M': v *= 1024.0 * 1024; break;
    case 'g': case 'G': v *= 1024.0 * 1024 * 1024; break;
    default: break;
    }
    return (size_t)v;
}

fc_status fcr_open(fc_ctx *ctx, int device) {
    if (!load_driver()) return fcg_error(ctx, FC_ERR_BACKEND, "CUDA backend: %s", drv_error);
    int count = 0;
    if (drv.DeviceGetCount(&count) != CUDA_SUCCESS || count == 0)
        return fcg_error(ctx, FC_ERR_BACKEND, "CUDA backend: no CUDA device");
    if (device < 0 || device >= count)
        return fcg_error(ctx, FC_ERR_BACKEND, "CUDA backend: device %d does not exist (%d found)",
                         device, count);
    cuda_state *cs = fcg_calloc(ctx, sizeof *cs);
    if (!cs) return fcg_error(ctx, FC_ERR_NOMEM, "CUDA backend: out of memory");
    fc_status st;
    if ((st = CU(ctx, DeviceGet(&cs->dev, device))) != FC_OK) goto fail;
    if ((st = CU(ctx, DevicePrimaryCtxRetain(&cs->cu, cs->dev))) != FC_OK) goto fail;
    ctx->cuda = cs; /* from here destroy() releases it */
    ctx->cuda_destroy = destroy;
    ctx->cuda_free_value = free_value;
    if ((st = CU(ctx, CtxSetCurrent(cs->cu))) != FC_OK) return st;
    if ((st = CU(ctx, StreamCreate(&cs->stream, CU_STREAM_NON_BLOCKING))) != FC_OK) return st;
    if ((st = CU(ctx, DeviceGetAttribute(&cs->sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                                         cs->dev))) != FC_OK)
        return st;
    CU(ctx, DeviceGetAttribute(&cs->cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, cs->dev));
    CU(ctx, DeviceGetAttribute(&cs->cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, cs->dev));
    CU(ctx, DeviceGetName(cs->name, sizeof cs->name, cs->dev));
    snprintf(cs->arch, sizeof cs->arch, "sm_%d%d", cs->cc_major, cs->cc_minor);
    if ((st = CU(ctx, DeviceGetDefaultMemPool(&cs->pool, cs->dev))) != FC_OK) return st;
    /* Keep freed blocks cached in the pool: stream-ordered reuse without driver calls. */
    cuuint64_t keep = UINT64_MAX;
    CU(ctx, MemPoolSetAttribute(cs->pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep));
    const char *lim = getenv("FUSEC_GPU_MEMORY_LIMIT");
    cs->limit = lim ? parse_size(lim) : 0;
    return FC_OK;
fail:
    fcg_free(ctx, cs, sizeof *cs);
    return st;
}

/* Stream-ordered allocation with the limit; on out-of-memory the pool's cached blocks are
 * released and the allocation retried once. */
static fc_status dev_alloc(fc_ctx *ctx, size_t bytes, CUdeviceptr *out) {
    cuda_state *cs = ctx->cuda;
    if (bytes == 0) bytes = 1;
    if (cs->limit && cs->in_use + bytes > cs->limit)
        return fcg_error(ctx, FC_ERR_NOMEM, "GPU memory limit: %zu bytes in use, %zu more asked, "
                         "limit %zu (FUSEC_GPU_MEMORY_LIMIT)", cs->in_use, bytes, cs->limit);
    CUresult r = drv.MemAllocAsync(out, bytes, cs->stream);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) {
        drv.StreamSynchronize(cs->stream);
        drv.MemPoolTrimTo(cs->pool, 0);
        r = drv.MemAllocAsync(out, bytes, cs->stream);
    }
    fc_status st = check(ctx, r, "cuMemAllocAsync", __FILE__, __LINE__);
    if (st != FC_OK) return st;
    cs->in_use += bytes;
    if (cs->in_use > cs->peak) cs->peak = cs->in_use;
    return FC_OK;
}

static fc_status upload(fc_ctx *ctx, fc_array *a) {
    cuda_state *cs = ctx->cuda;
    size_t bytes = fcg_node_numel(a) * fc_dtype_size((fc_dtype)a->dtype);
    CUdeviceptr p;
    fc_status st = dev_alloc(ctx, bytes, &p);
    if (st != FC_OK) return st;
    if (bytes && (st = CU(ctx, MemcpyHtoDAsync(p, a->host, bytes, cs->stream))) != FC_OK) {
        drv.MemFreeAsync(p, cs->stream);
        cs->in_use -= bytes ? bytes : 1;
        return st;
    }
    a->dev = p;
    a->dev_bytes = bytes ? bytes : 1;
    return FC_OK;
}

fc_status fcr_download(fc_ctx *ctx, fc_array *a) {
    cuda_state *cs = ctx->cuda;
    if (a->host) return FC_OK;
    if (!cs || !a->dev) return fcg_error(ctx, FC_ERR_BACKEND, "read: the array has no value");
    if (cs->dead) return fcg_error(ctx, FC_ERR_BACKEND, "the GPU context is unusable after an earlier error");
    size_t bytes = fcg_node_numel(a) * fc_dtype_size((fc_dtype)a->dtype);
    void *h = fcg_malloc(ctx, bytes);
    if (!h) return fcg_error(ctx, FC_ERR_NOMEM, "read: out of host memory for %zu bytes", bytes);
    fc_status st = FC_OK;
    if (bytes) st = CU(ctx, MemcpyDtoHAsync(h, (CUdeviceptr)a->dev, bytes, cs->stream));
    if (st == FC_OK) st = CU(ctx, StreamSynchronize(cs->stream));
    if (st != FC_OK) {
        fcg_free(ctx, h, bytes);
        return st;
    }
    a->host = h;
    a->host_bytes = bytes;
    return FC_OK;
}

/* ---- kernels ---------------------------------------------------------------------------- */

static fc_status load_kernel(fc_ctx *ctx, const fcx_kernel_src *src, module_entry **out) {
    cuda_state *cs = ctx->cuda;
    fcc_cache *cache;
    fc_status st = fcx_cache(ctx, &cache);
    if (st != FC_OK) return st;
    char msg[FCG_ERRMSG_MAX];
    fcx_binary bin;
    if ((st = fcx_get_binary(ctx, cache, src, cs->arch, &bin, msg, sizeof msg)) != FC_OK)
        return fcg_error(ctx, st, "%s", msg);
    for (size_t i = 0; i < cs->nmods; i++)
        if (memcmp(&cs->mods[i].key, &bin.key, sizeof bin.key) == 0) {
            *out = &cs->mods[i];
            return FC_OK;
        }
    if (cs->nmods == cs->capmods) {
        size_t nc = cs->capmods ? cs->capmods * 2 : 16;
        module_entry *m = fcg_realloc(ctx, cs->mods, cs->capmods * sizeof *m, nc * sizeof *m);
        if (!m) return fcg_error(ctx, FC_ERR_NOMEM, "CUDA backend: out of memory");
        cs->mods = m;
        cs->capmods = nc;
    }
    module_entry *e = &cs->mods[cs->nmods];
    memset(e, 0, sizeof *e);
    e->key = bin.key;
    if ((st = CU(ctx, ModuleLoadData(&e->mod, bin.cubin))) != FC_OK) return st;
    if ((st = CU(ctx, ModuleGetFunction(&e->fn, e->mod, FCX_KERNEL_NAME))) != FC_OK ||
        (st = CU(ctx, OccupancyMaxActiveBlocksPerMultiprocessor(&e->blocks_per_sm, e->fn,
                                                                 src->block, 0))) != FC_OK) {
        drv.ModuleUnload(e->mod);
        return st;
    }
    if (e->blocks_per_sm < 1) e->blocks_per_sm = 1;
    cs->nmods++;
    *out = e;
    return FC_OK;
}

/* The node at a slot's position: the kernel's nodes, then its leaves. */
static const fc_array *slot_node(const fcp_kernel *k, const fcx_slot *s) {
    if (s->node < 0) return NULL;
    return s->node < k->nnode ? k->nodes[s->node] : k->leaves[s->node - k->nnode];
}

static long long int_slot(const fcp_kernel *k, const fcx_slot *s) {
    const fc_array *a = slot_node(k, s);
    switch ((fcx_slot_kind)s->kind) {
    case FCX_SLOT_SPACE_EXTENT: return k->space[s->dim];
    case FCX_SLOT_EXTENT: return a->shape[s->dim];
    case FCX_SLOT_PARAM_A: return a->p.a[s->dim];
    case FCX_SLOT_PARAM_B: return a->p.b[s->dim];
    case FCX_SLOT_IVAL: return a->p.ival;
    case FCX_SLOT_COUNT: return a->p.count;
    default: return 0;
    }
}

static double float_slot(const fcp_kernel *k, const fcx_slot *s) {
    const fc_array *a = slot_node(k, s);
    switch ((fcx_slot_kind)s->kind) {
    case FCX_SLOT_RE: return a->p.re;
    case FCX_SLOT_IM: return a->p.im;
    default: return (double)int_slot(k, s);
    }
}

static fc_status launch(fc_ctx *ctx, const fcp_kernel *k, const fcx_kernel_src *src,
                        const module_entry *m) {
    cuda_state *cs = ctx->cuda;
    size_t nparam = (size_t)src->nptr + (size_t)(src->nint ? src->nint : 1) +
                    (size_t)(src->nflt ? src->nflt : 1);
    uint64_t small[256], *buf = small;
    if (nparam > 256 && !(buf = fcg_malloc(ctx, nparam * 8)))
        return fcg_error(ctx, FC_ERR_NOMEM, "launch: out of memory");
    memset(buf, 0, nparam * 8);
    size_t w = 0;
    for (int i = 0; i < k->nleaf; i++) buf[w++] = k->leaves[i]->dev;
    for (int i = 0; i < k->nout; i++) buf[w++] = k->outs[i]->dev;
    for (int i = 0; i < src->nint; i++) {
        long long v = int_slot(k, &src->islots[i]);
        memcpy(&buf[w++], &v, 8);
    }
    if (!src->nint) w++;
    for (int i = 0; i < src->nflt; i++) {
        double v = float_slot(k, &src->fslots[i]);
        memcpy(&buf[w++], &v, 8);
    }
    /* Grid: enough blocks to fill the GPU at the kernel's occupancy; the kernels stride. */
    size_t work;
    if (src->strategy == FCX_STRATEGY_EW) {
        work = (fcg_numel(k->ndim, k->space) + (size_t)src->block - 1) / (size_t)src->block;
    } else {
        work = 1;
        for (int d = 0; d < k->ndim; d++)
            if (!(k->rmask & (1u << d))) work *= (size_t)k->space[d];
    }
    size_t full = (size_t)cs->sm_count * (size_t)m->blocks_per_sm;
    unsigned grid = (unsigned)(work < full ? work : full);
    fc_status st = FC_OK;
    if (grid > 0) {
        void *args[] = {buf};
        st = CU(ctx, LaunchKernel(m->fn, grid, 1, 1, (unsigned)src->block, 1, 1, 0, cs->stream,
                                  args, NULL));
    }
    if (buf != small) fcg_free(ctx, buf, nparam * 8);
    return st;
}

/* A library kernel (matmul): until cuBLAS lands, the host reference computes it from the
 * inputs' values, and the result is uploaded. */
static fc_status run_library(fc_ctx *ctx, const fcp_kernel *k) {
    for (int i = 0; i < k->nleaf; i++) {
        fc_status st = fcr_download(ctx, k->leaves[i]);
        if (st != FC_OK) return st;
    }
    fc_status st = fch_eval(ctx, k->outs, k->nout);
    cuda_state *cs = ctx->cuda;
    for (int i = 0; i < k->nout && st == FC_OK; i++) {
        fc_array *o = k->outs[i];
        size_t bytes = fcg_node_numel(o) * fc_dtype_size((fc_dtype)o->dtype);
        if (bytes) st = CU(ctx, MemcpyHtoDAsync((CUdeviceptr)o->dev, o->host, bytes, cs->stream));
    }
    return st;
}

fc_status fcr_eval(fc_ctx *ctx, fc_array *const *arrays, int n) {
    cuda_state *cs = ctx->cuda;
    if (cs->dead) return fcg_error(ctx, FC_ERR_BACKEND, "the GPU context is unusable after an "
                                   "earlier error (%s)", "see the first error");
    fcp_plan *plan;
    fc_status st = fcp_plan_build(ctx, arrays, n, &plan);
    if (st != FC_OK) return st;
    /* Inputs: upload values the GPU does not have yet. */
    for (int i = 0; i < plan->nkernel && st == FC_OK; i++)
        for (int l = 0; l < plan->kernels[i].nleaf && st == FC_OK; l++) {
            fc_array *a = plan->kernels[i].leaves[l];
            if (a->dev) continue;
            if (!a->host) {
                bool produced = false;
                for (int q = 0; q < plan->nmat && !produced; q++) produced = plan->mat[q] == a;
                if (produced) continue;
                char sh[200];
                st = fcg_error(ctx, FC_ERR_UNBOUND, "eval: a program input (%s %s) has no data",
                               fc_dtype_name((fc_dtype)a->dtype), fcg_shape_str(sh, a->ndim, a->shape));
                break;
            }
            st = upload(ctx, a);
        }
    /* Buffers of the plan's slots; materialised nodes borrow their slot's pointer. */
    CUdeviceptr *bufs = NULL;
    if (st == FC_OK && plan->nbuf) {
        bufs = fcg_calloc(ctx, (size_t)plan->nbuf * sizeof *bufs);
        if (!bufs) st = fcg_error(ctx, FC_ERR_NOMEM, "eval: out of memory");
        for (int b = 0; b < plan->nbuf && st == FC_OK; b++) st = dev_alloc(ctx, plan->buf_bytes[b], &bufs[b]);
    }
    for (int q = 0; q < plan->nmat && st == FC_OK; q++) plan->mat[q]->dev = bufs[plan->mat_buf[q]];
    for (int i = 0; i < plan->nkernel && st == FC_OK; i++) {
        const fcp_kernel *k = &plan->kernels[i];
        if (k->kind == FCP_KERNEL_LIB) {
            st = run_library(ctx, k);
            continue;
        }
        fcx_kernel_src src;
        if ((st = fcx_generate(ctx, k, &src)) != FC_OK) break;
        module_entry *m = NULL;
        st = load_kernel(ctx, &src, &m);
        if (st == FC_OK) st = launch(ctx, k, &src, m);
        fcx_kernel_src_free(ctx, &src);
    }
    if (st == FC_OK) st = CU(ctx, StreamSynchronize(cs->stream));
    /* The plan computed its own (simplified) versions of the requested arrays: plan->outs[o]
     * stands for arrays[o]. Each requested array takes its buffer; an array whose value is
     * somewhere else (a leaf, or a buffer another array took) gets a copy. */
    for (int q = 0; q < plan->nmat; q++) plan->mat[q]->dev = 0;
    bool *taken = bufs ? fcg_calloc(ctx, (size_t)plan->nbuf * sizeof *taken) : NULL;
    if (bufs && !taken && st == FC_OK) st = fcg_error(ctx, FC_ERR_NOMEM, "eval: out of memory");
    for (int o = 0; o < n && st == FC_OK; o++) {
        fc_array *want = arrays[o], *have = plan->outs[o];
        if (want->dev || want->host) continue;
        int b = -1;
        for (int q = 0; q < plan->nmat && b < 0; q++)
            if (plan->mat[q] == have) b = plan->mat_buf[q];
        size_t bytes = fcg_node_numel(want) * fc_dtype_size((fc_dtype)want->dtype);
        if (b >= 0 && !taken[b]) {
            taken[b] = true;
            want->dev = bufs[b];
            want->dev_bytes = plan->buf_bytes[b] ? plan->buf_bytes[b] : 1;
            continue;
        }
        CUdeviceptr p;
        if ((st = dev_alloc(ctx, bytes, &p)) != FC_OK) break;
        want->dev = p;
        want->dev_bytes = bytes ? bytes : 1;
        if (!bytes) continue;
        if (b >= 0) st = CU(ctx, MemcpyDtoDAsync(p, bufs[b], bytes, cs->stream));
        else if (have->dev) st = CU(ctx, MemcpyDtoDAsync(p, (CUdeviceptr)have->dev, bytes, cs->stream));
        else if (have->host) st = CU(ctx, MemcpyHtoDAsync(p, have->host, bytes, cs->stream));
        else st = fcg_error(ctx, FC_ERR_BACKEND, "eval: a result has no value (fusec bug)");
    }
    if (st == FC_OK) st = CU(ctx, StreamSynchronize(cs->stream));
    if (st != FC_OK) { /* nothing gains a value on failure */
        for (int o = 0; o < n; o++) {
            bool from_plan = false;
            for (int b = 0; b < plan->nbuf && !from_plan; b++)
                from_plan = bufs && arrays[o]->dev == bufs[b];
            if (from_plan) arrays[o]->dev = 0, arrays[o]->dev_bytes = 0; /* freed below */
            else if (arrays[o]->dev) free_value(ctx, arrays[o]);
        }
    }
    for (int b = 0; b < plan->nbuf; b++) {
        if (!bufs || !bufs[b] || (st == FC_OK && taken[b])) continue;
        if (!cs->dead) drv.MemFreeAsync(bufs[b], cs->stream);
        cs->in_use -= plan->buf_bytes[b] ? plan->buf_bytes[b] : 1;
    }
    fcg_free(ctx, taken, (size_t)plan->nbuf * sizeof *taken);
    fcg_free(ctx, bufs, (size_t)plan->nbuf * sizeof *bufs);
    fcp_plan_destroy(plan);
    return st;
}
