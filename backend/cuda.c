/*
 * backend/cuda.c - the CUDA backend: the driver API loaded with dlopen, a context on one
 * device, stream-ordered device memory, a pinned host pool, streams and events, and plan
 * execution with a plan cache (fuse -> generate -> cache or NVRTC -> load -> launch, once per
 * graph structure; afterwards bind pointers and launch, or replay a CUDA graph).
 *
 * libcuda is never linked: every binary starts on a machine without a driver, and the
 * backend says why it cannot run there. Entry points come from cuGetProcAddress for the ABI
 * this file was written against (CUDA 12.0), so a newer driver keeps these signatures.
 */
#include "graph.h"
#include "backend.h"
#include "ref.h" /* fch_eval: library calls with no device path run on the reference */

#include "codegen.h"
#include "driver.h"
#include "kcompile.h" /* fcx_cache: opened with the context */
#include "nvrtc_compile.h"
#include "cuda_lib.h"
#include "plan.h"
#include "passes.h" /* fcp_log_enabled: FUSEC_LOG=timing */

#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
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
    CUresult (*StreamQuery)(CUstream);
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
    CUresult (*ModuleGetGlobal)(CUdeviceptr *, size_t *, CUmodule, const char *);
    CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, CUstream, void **, void **);
    CUresult (*OccupancyMaxActiveBlocksPerMultiprocessor)(int *, CUfunction, int, size_t);
    CUresult (*GetErrorName)(CUresult, const char **);
    CUresult (*StreamWaitEvent)(CUstream, CUevent, unsigned);
    CUresult (*EventCreate)(CUevent *, unsigned);
    CUresult (*EventDestroy)(CUevent);
    CUresult (*EventRecord)(CUevent, CUstream);
    CUresult (*EventSynchronize)(CUevent);
    CUresult (*EventElapsedTime)(float *, CUevent, CUevent);
    CUresult (*MemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream);
    CUresult (*MemsetD32Async)(CUdeviceptr, unsigned, size_t, CUstream);
    CUresult (*MemPoolGetAttribute)(CUmemoryPool, CUmemPool_attribute, void *);
    CUresult (*MemHostAlloc)(void **, size_t, unsigned);
    CUresult (*MemFreeHost)(void *);
    CUresult (*LaunchHostFunc)(CUstream, CUhostFn, void *);
    CUresult (*DeviceCanAccessPeer)(int *, CUdevice, CUdevice);
    CUresult (*CtxEnablePeerAccess)(CUcontext, unsigned);
    CUresult (*MemcpyPeerAsync)(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t, CUstream);
    CUresult (*GraphCreate)(CUgraph *, unsigned);
    CUresult (*GraphDestroy)(CUgraph);
    CUresult (*GraphAddKernelNode)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
                                   const CUDA_KERNEL_NODE_PARAMS_v2 *);
    CUresult (*GraphInstantiate)(CUgraphExec *, CUgraph, unsigned long long);
    CUresult (*GraphExecKernelNodeSetParams)(CUgraphExec, CUgraphNode,
                                             const CUDA_KERNEL_NODE_PARAMS_v2 *);
    CUresult (*GraphLaunch)(CUgraphExec, CUstream);
    CUresult (*GraphExecDestroy)(CUgraphExec);
    CUresult (*StreamBeginCapture)(CUstream, CUstreamCaptureMode);
    CUresult (*StreamEndCapture)(CUstream, CUgraph *);
    CUresult (*StreamIsCapturing)(CUstream, CUstreamCaptureStatus *);
    CUresult (*GraphAddChildGraphNode)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
                                       CUgraph);
    CUresult (*GraphExecChildGraphNodeSetParams)(CUgraphExec, CUgraphNode, CUgraph);
    CUresult (*GetErrorString)(CUresult, const char **);
    CUresult (*FuncSetAttribute)(CUfunction, CUfunction_attribute, int);
    CUresult (*StreamGetCtx)(CUstream, CUcontext *);
    CUresult (*PointerGetAttribute)(void *, CUpointer_attribute, CUdeviceptr);
} driver;

static driver drv;
static int drv_state; /* 0 untried, 1 loaded, -1 failed */
static char drv_error[256];

/* A loaded kernel, found by its cache key. */
typedef struct module_entry {
    fcc_key key;
    CUmodule mod;
    CUfunction fn;
    int blocks_per_sm; /* occupancy with no dynamic shared memory */
} module_entry;

/* Where a pointer argument of a cached plan comes from at each evaluation. */
typedef enum arg_kind {
    ARG_LEAF, /* the value of the plan's leaf idx (an input of the graph) */
    ARG_BUF,  /* buffer idx, allocated for this evaluation */
    ARG_CONST, /* a constant the plan made (simplify folds casts of scalars): the entry keeps
                  a device copy */
    ARG_NODE   /* a node the (live, uncached) plan made itself: its value */
} arg_kind;

typedef struct arg_src {
    uint8_t kind;
    int32_t idx;
    fc_array *node;   /* ARG_NODE */
    CUdeviceptr dptr; /* ARG_CONST */
} arg_src;

/* One launch of a plan. */
/* A library step's own copy of what its call reads of the plan: the kernel's leaves and nodes
 * as plain structs (op, dtype, shape, parameters; inputs among the copies, leaves without
 * inputs, no values), so that the entry outlives the plan and is cached like any other. */
typedef struct lib_copy {
    fcp_kernel k;
    int n;
    fc_array *nodes;  /* the copies: leaves first, then the kernel's nodes */
    fc_array **ptrs;  /* k.leaves, k.nodes and k.outs point into this */
    fc_array **ins;   /* the inputs of copies with more than fit inline (a sparse product's
                         four) */
    int nins;
} lib_copy;

/* A library step's work captured into a CUDA graph for one set of addresses (its inputs',
 * then its output's): a step keeps a few, so that a plan whose buffers alternate between
 * addresses it has seen switches its graph's child node to one of them without capturing. */
#define LIB_VARIANTS 4
#define LIB_MAX_ADDR (FCR_LIB_MAX_IN + 1)

typedef struct lib_variant {
    CUgraph graph;     /* NULL: an empty slot */
    CUdeviceptr addr[LIB_MAX_ADDR];
    uint64_t used;     /* the entry's use count when last chosen */
} lib_variant;

typedef struct step {
    const fcp_kernel *k;  /* library steps: the live plan's kernel on the first run, then the
                             copy's (copy.k) */
    bool lib;
    bool on_host;         /* a library step that ran on the host (its fallback needs the plan's
                             nodes: the entry is not cached) */
    lib_copy copy;
    lib_variant var[LIB_VARIANTS]; /* library steps in a CUDA graph: their captured work */
    int active;           /* the variant the graph's child node holds now */
    size_t mod;           /* index in cs->mods */
    fcx_launch lc;
    int nptr;
    arg_src *ptr;         /* the kernel's pointer arguments, in order */
    size_t nparam;
    uint64_t *param;      /* the argument block; pointer words are filled at each launch */
    CUdeviceptr value_flag; /* the module's fcx_value_error when the kernel can raise it */
    CUgraphNode gnode;
} step;

/* A scalar argument of a cached plan that the graph supplies anew at each evaluation: the
 * plan key leaves unkeyed constants' values out (fcg_const_keyed), so a learning rate that
 * changes every step reuses the plan and only these words are rewritten. */
typedef struct scalar_arg {
    int32_t step;
    uint32_t word;   /* index in the step's argument block */
    int64_t pos;     /* the CONST's position in the cut graph's canonical order */
    uint8_t kind;    /* FCX_SLOT_IVAL, _RE or _IM */
    bool as_double;  /* a float argument (else long long) */
} scalar_arg;

/* A plan ready to run: everything but the buffers' addresses and the scalars' values is fixed
 * by the graph's structure, so a repeated structure skips passes, codegen and cache lookups. */
/* A cached plan keeps the blocks of its small intermediates (never its results) from one
 * run to the next: a repeated evaluation of a program on small arrays then allocates and
 * frees only its results, and its library calls see the same addresses (their captured
 * graphs stay valid). The caps bound what a cache of many entries holds; for big arrays an
 * allocation's cost is small beside the work. */
#define KEEP_BUFFER_MAX ((size_t)64 << 10)
#define KEEP_ENTRY_MAX ((size_t)256 << 10)

typedef struct plan_entry {
    fc_hash key;
    bool cacheable;
    bool value_check;     /* a kernel can raise a value error: runs wait and check it */
    uint64_t last_use, uses;
    int nleaf;
    int64_t *leaf_pos;    /* leaf -> position in the cut graph's canonical order */
    fc_array **leaf_node; /* uncached: the leaves themselves */
    int nbuf;
    size_t *buf_bytes;
    int nstep;
    step *steps;
    int nout;
    arg_src *out;         /* per requested array: where its value is */
    int *donor;           /* per requested array: the leaf whose buffer it may take when that
                             leaf dies with the evaluation (fcp_donors), or -1; NULL: none */
    uint32_t last_stream; /* the stream of the last run: scratch and kept blocks are reused
                             in stream order */
    CUdeviceptr *kept;    /* per buffer: the block a small intermediate keeps between runs
                             (KEEP_BUFFER_MAX), owned by the entry, or 0 */
    size_t kept_bytes;    /* their total, at most KEEP_ENTRY_MAX */
    int nscalar;
    scalar_arg *scalars;
    int nconst;
    CUdeviceptr *const_ptr; /* device copies of the plan's constants and reductions' scratch
                               (ARG_CONST), owned by the entry */
    size_t *const_bytes;
    CUgraphExec exec;     /* CUDA graph of the steps, made on the second use */
    CUgraph graph;
    uint64_t *graph_ptrs; /* the pointer words the graph's nodes hold now */
    size_t ngraph_ptrs;
    bool lib_graph;       /* its library steps can join a graph (all fcr_lib_capturable) */
    bool no_graph;        /* capturing failed, or graphs cost more than they saved: the entry
                             runs its steps one by one from now on */
    uint32_t builds;      /* graphs built for it (one with library steps is built again when
                             its stream or the library's workspaces change) */
    uint32_t unready;     /* runs in a row whose capture needed something made first */
    bool lib_nodes;       /* the graph holds library steps' captured work */
    CUstream graph_stream; /* the stream its library steps were captured on */
    uint64_t graph_epoch; /* fcr_lib_epoch when they were */
    struct plan_entry *next; /* hash chain */
} plan_entry;

#define PLAN_BUCKETS 256
#define PLAN_CACHE_MAX 1024

/* A page-locked host block of the pinned pool. */
typedef struct pinned_block {
    void *p;
    size_t size;
    bool busy;      /* handed out (fc_host_alloc) or staging in flight */
    /* staging of a read: copied to dst once the stream reaches the callback */
    void *dst;
    size_t dst_bytes;
    struct cuda_state *cs;
    struct pinned_block *next;
} pinned_block;

typedef struct cuda_state {
    CUdevice dev;
    CUcontext cu;
    CUstream stream;
    CUmemoryPool pool;
    CUevent join;         /* orders one stream after another (record, then wait) */
    int sm_count, cc_major, cc_minor;
    char arch[16];
    char name[128];
    module_entry *mods;
    size_t nmods, capmods;
    size_t in_use, peak, limit;
    uint64_t allocations, reused; /* device allocations made; results that took a dead
                                     value's buffer */
    uint32_t *dropped;    /* scratch of fcg_dying_nodes, kept so a cached evaluation allocates
                             nothing */
    uint8_t *dies;
    size_t dying_cap;
    plan_entry *plans[PLAN_BUCKETS];
    size_t nplans;
    uint64_t clock;
    bool graphs;          /* replay repeated plans as CUDA graphs */
    fcr_graph_stats gstats; /* for tests: graph launches, builds, captures, switches */
    void *lib;            /* cuBLAS / cuFFT state (backend/cuda_lib.c) */
    pthread_mutex_t pin_lock;
    pinned_block *pinned;
    size_t pinned_busy, pinned_free;
    bool dead;            /* a sticky error poisoned the CUDA context */
    char dead_msg[FCG_ERRMSG_MAX];
    bool log_timing;      /* FUSEC_LOG=timing: each evaluation's phases on stderr */
    double alloc_s;       /* time in cuMemAllocAsync, and its calls, since the last line */
    int alloc_calls;
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
    cuda_state *cs = ctx->be_state;
    bool newly_dead = cs && !cs->dead && sticky(r);
    if (newly_dead) cs->dead = true;
    const char *desc = NULL;
    if (drv.GetErrorString) drv.GetErrorString(r, &desc);
    fc_status st = fcg_error(ctx, r == CUDA_ERROR_OUT_OF_MEMORY ? FC_ERR_NOMEM : FC_ERR_BACKEND,
                             "%s failed: %s (%s) at %s:%d%s", call, cu_err(r), desc ? desc : "",
                             file, line, cs && cs->dead ? "; the GPU context is now unusable" : "");
    if (newly_dead) snprintf(cs->dead_msg, sizeof cs->dead_msg, "%s", ctx->errmsg);
    return st;
}

/* Every entry point refuses to touch a dead context, so nothing runs and nothing is compiled
 * into the kernel cache after a sticky error. */
static fc_status alive(fc_ctx *ctx) {
    cuda_state *cs = ctx->be_state;
    if (!cs->dead) return FC_OK;
    return fcg_error(ctx, FC_ERR_BACKEND, "the GPU context is unusable after an earlier error: %s",
                     cs->dead_msg);
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
    SYM(StreamQuery, "cuStreamQuery");
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
    SYM(ModuleGetGlobal, "cuModuleGetGlobal");
    SYM(LaunchKernel, "cuLaunchKernel");
    SYM(OccupancyMaxActiveBlocksPerMultiprocessor, "cuOccupancyMaxActiveBlocksPerMultiprocessor");
    SYM(GetErrorName, "cuGetErrorName");
    SYM(GetErrorString, "cuGetErrorString");
    SYM(StreamWaitEvent, "cuStreamWaitEvent");
    SYM(EventCreate, "cuEventCreate");
    SYM(EventDestroy, "cuEventDestroy");
    SYM(EventRecord, "cuEventRecord");
    SYM(EventSynchronize, "cuEventSynchronize");
    SYM(EventElapsedTime, "cuEventElapsedTime");
    SYM(MemsetD8Async, "cuMemsetD8Async");
    SYM(MemsetD32Async, "cuMemsetD32Async");
    SYM(MemPoolGetAttribute, "cuMemPoolGetAttribute");
    SYM(MemHostAlloc, "cuMemHostAlloc");
    SYM(MemFreeHost, "cuMemFreeHost");
    SYM(LaunchHostFunc, "cuLaunchHostFunc");
    SYM(DeviceCanAccessPeer, "cuDeviceCanAccessPeer");
    SYM(CtxEnablePeerAccess, "cuCtxEnablePeerAccess");
    SYM(MemcpyPeerAsync, "cuMemcpyPeerAsync");
    SYM(GraphCreate, "cuGraphCreate");
    SYM(GraphDestroy, "cuGraphDestroy");
    SYM(GraphAddKernelNode, "cuGraphAddKernelNode");
    SYM(GraphInstantiate, "cuGraphInstantiateWithFlags");
    SYM(GraphExecKernelNodeSetParams, "cuGraphExecKernelNodeSetParams");
    SYM(GraphLaunch, "cuGraphLaunch");
    SYM(GraphExecDestroy, "cuGraphExecDestroy");
    SYM(StreamBeginCapture, "cuStreamBeginCapture");
    SYM(StreamEndCapture, "cuStreamEndCapture");
    SYM(StreamIsCapturing, "cuStreamIsCapturing");
    SYM(GraphAddChildGraphNode, "cuGraphAddChildGraphNode");
    SYM(GraphExecChildGraphNodeSetParams, "cuGraphExecChildGraphNodeSetParams");
    SYM(FuncSetAttribute, "cuFuncSetAttribute");
    SYM(StreamGetCtx, "cuStreamGetCtx");
    SYM(PointerGetAttribute, "cuPointerGetAttribute");
#undef SYM
    if (drv.Init(0) != CUDA_SUCCESS) {
        snprintf(drv_error, sizeof drv_error, "cuInit failed: no usable CUDA device or driver");
        return false;
    }
    drv_state = 1;
    return true;
}


/* ---- streams ------------------------------------------------------------------------------ */

/* The CUstream of a stream id: 0 is the context's own; a destroyed user stream (its work was
 * waited for when it died) reads as the context's own. */
static CUstream stream_of(fc_ctx *ctx, uint32_t id) {
    cuda_state *cs = ctx->be_state;
    if (id)
        for (fc_stream *s = ctx->streams; s; s = s->next)
            if (s->id == id) return (CUstream)s->cu;
    return cs->stream;
}

static uint32_t stream_id(const fc_stream *s) { return s ? s->id : 0; }

static void make_current(cuda_state *cs) { drv.CtxSetCurrent(cs->cu); }

/* Orders `later` after the work queued on `earlier` so far. */
static fc_status join(fc_ctx *ctx, CUstream earlier, CUstream later) {
    cuda_state *cs = ctx->be_state;
    if (earlier == later) return FC_OK;
    fc_status st = CU(ctx, EventRecord(cs->join, earlier));
    if (st == FC_OK) st = CU(ctx, StreamWaitEvent(later, cs->join, 0));
    return st;
}

/* Before stream `sid` reads a's device value: wait for the stream that wrote it, and remember
 * the reader so that freeing the value waits for it too. */
static fc_status use_on(fc_ctx *ctx, fc_array *a, uint32_t sid) {
    if (a->dev_stream == sid) return FC_OK;
    fc_status st = join(ctx, stream_of(ctx, a->dev_stream), stream_of(ctx, sid));
    if (st != FC_OK) return st;
    if (a->dev_reader == 0) a->dev_reader = sid + 1;
    else if (a->dev_reader != sid + 1) a->dev_reader = UINT32_MAX;
    return FC_OK;
}

/* ---- device memory ---------------------------------------------------------------------- */

static void pool_free(fc_ctx *ctx, CUdeviceptr p, size_t bytes, CUstream s) {
    cuda_state *cs = ctx->be_state;
    if (!cs->dead) drv.MemFreeAsync(p, s);
    cs->in_use -= bytes ? bytes : 1;
}

static void free_value(fc_ctx *ctx, fc_array *a) {
    cuda_state *cs = ctx->be_state;
    if (!cs || !a->dev) return;
    CUstream home = stream_of(ctx, a->dev_stream);
    if (!cs->dead) {
        make_current(cs);
        /* The free is ordered on the writer's stream; readers on other streams first. */
        if (a->dev_reader == UINT32_MAX) drv.CtxSynchronize();
        else if (a->dev_reader) join(ctx, stream_of(ctx, a->dev_reader - 1), home);
    }
    pool_free(ctx, (CUdeviceptr)a->dev, a->dev_bytes, home);
    a->dev = 0;
    a->dev_bytes = 0;
    a->dev_stream = 0;
    a->dev_reader = 0;
}

/* Stream-ordered allocation with the limit; on out-of-memory the pool's cached blocks are
 * released and the allocation retried once. */
static fc_status dev_alloc(fc_ctx *ctx, size_t bytes, CUstream s, CUdeviceptr *out) {
    cuda_state *cs = ctx->be_state;
    if (bytes == 0) bytes = 1;
    if (cs->limit && cs->in_use + bytes > cs->limit)
        return fcg_error(ctx, FC_ERR_NOMEM, "GPU memory limit: %zu bytes in use, %zu more asked, "
                         "limit %zu (FUSEC_GPU_MEMORY_LIMIT or fc_ctx_options.memory_limit)",
                         cs->in_use, bytes, cs->limit);
    const double t0 = cs->log_timing ? fcg_now_s() : 0;
    CUresult r = drv.MemAllocAsync(out, bytes, s);
    if (cs->log_timing) {
        cs->alloc_s += fcg_now_s() - t0;
        cs->alloc_calls++;
    }
    if (r == CUDA_ERROR_OUT_OF_MEMORY) {
        drv.CtxSynchronize();
        drv.MemPoolTrimTo(cs->pool, 0);
        r = drv.MemAllocAsync(out, bytes, s);
    }
    fc_status st = check(ctx, r, "cuMemAllocAsync", __FILE__, __LINE__);
    if (st != FC_OK) return st;
    cs->in_use += bytes;
    cs->allocations++;
    if (cs->in_use > cs->peak) cs->peak = cs->in_use;
    return FC_OK;
}

static size_t value_bytes(const fc_array *a) {
    return fcg_node_numel(a) * fc_dtype_size((fc_dtype)a->dtype);
}

static fc_status upload(fc_ctx *ctx, fc_array *a, uint32_t sid) {
    CUstream s = stream_of(ctx, sid);
    size_t bytes = value_bytes(a);
    CUdeviceptr p;
    fc_status st = dev_alloc(ctx, bytes, s, &p);
    if (st != FC_OK) return st;
    if (bytes && (st = CU(ctx, MemcpyHtoDAsync(p, a->host, bytes, s))) != FC_OK) {
        pool_free(ctx, p, bytes, s);
        return st;
    }
    a->dev = p;
    a->dev_bytes = bytes ? bytes : 1;
    a->dev_stream = sid;
    a->dev_reader = 0;
    return FC_OK;
}

static fc_status fcr_download(fc_ctx *ctx, fc_array *a) {
    cuda_state *cs = ctx->be_state;
    if (a->host) return FC_OK;
    if (!cs || !a->dev) return fcg_error(ctx, FC_ERR_BACKEND, "read: the array has no value");
    fc_status st = alive(ctx);
    if (st != FC_OK) return st;
    make_current(cs);
    size_t bytes = value_bytes(a);
    void *h = fcg_malloc(ctx, bytes ? bytes : 1);
    if (!h) return fcg_error(ctx, FC_ERR_NOMEM, "read: out of host memory for %zu bytes", bytes);
    CUstream s = stream_of(ctx, a->dev_stream);
    if (bytes) st = CU(ctx, MemcpyDtoHAsync(h, (CUdeviceptr)a->dev, bytes, s));
    if (st == FC_OK) st = CU(ctx, StreamSynchronize(s));
    if (st != FC_OK) {
        fcg_free(ctx, h, bytes ? bytes : 1);
        return st;
    }
    a->host = h;
    a->host_bytes = bytes ? bytes : 1;
    return FC_OK;
}

/* ---- pinned host pool ------------------------------------------------------------------- */

/* Blocks come in power-of-two sizes from 64 KiB, so a freed block serves later requests of
 * its class without a driver call (cuMemHostAlloc costs milliseconds). */
static size_t pinned_class(size_t bytes) {
    size_t c = 64 * 1024;
    while (c < bytes && c < ((size_t)1 << 62)) c <<= 1;
    return c;
}

static pinned_block *pinned_get(fc_ctx *ctx, size_t bytes) {
    cuda_state *cs = ctx->be_state;
    size_t size = pinned_class(bytes);
    pthread_mutex_lock(&cs->pin_lock);
    for (pinned_block *b = cs->pinned; b; b = b->next)
        if (!b->busy && b->size == size) {
            b->busy = true;
            cs->pinned_busy += size;
            cs->pinned_free -= size;
            pthread_mutex_unlock(&cs->pin_lock);
            return b;
        }
    pthread_mutex_unlock(&cs->pin_lock);
    pinned_block *b = fcg_calloc(ctx, sizeof *b);
    if (!b) return NULL;
    make_current(cs);
    if (drv.MemHostAlloc(&b->p, size, 0) != CUDA_SUCCESS) {
        fcg_free(ctx, b, sizeof *b);
        return NULL;
    }
    b->size = size;
    b->busy = true;
    b->cs = cs;
    pthread_mutex_lock(&cs->pin_lock);
    b->next = cs->pinned;
    cs->pinned = b;
    cs->pinned_busy += size;
    pthread_mutex_unlock(&cs->pin_lock);
    return b;
}

static void pinned_put(cuda_state *cs, pinned_block *b) {
    pthread_mutex_lock(&cs->pin_lock);
    b->busy = false;
    cs->pinned_busy -= b->size;
    cs->pinned_free += b->size;
    pthread_mutex_unlock(&cs->pin_lock);
}

static pinned_block *pinned_find(cuda_state *cs, const void *p, size_t bytes) {
    pthread_mutex_lock(&cs->pin_lock);
    pinned_block *hit = NULL;
    for (pinned_block *b = cs->pinned; b && !hit; b = b->next)
        if ((const char *)p >= (const char *)b->p &&
            (const char *)p + bytes <= (const char *)b->p + b->size)
            hit = b;
    pthread_mutex_unlock(&cs->pin_lock);
    return hit;
}

static void *fcr_host_alloc(fc_ctx *ctx, size_t bytes) {
    if (alive(ctx) != FC_OK) return NULL;
    pinned_block *b = pinned_get(ctx, bytes ? bytes : 1);
    return b ? b->p : NULL;
}

static void fcr_host_free(fc_ctx *ctx, void *p) {
    cuda_state *cs = ctx->be_state;
    pthread_mutex_lock(&cs->pin_lock);
    pinned_block *b = cs->pinned;
    while (b && b->p != p) b = b->next;
    pthread_mutex_unlock(&cs->pin_lock);
    if (b) pinned_put(cs, b);
}

/* Frees the pinned blocks nobody holds (trim, destruction). */
static void pinned_release_free(fc_ctx *ctx, bool all) {
    cuda_state *cs = ctx->be_state;
    pthread_mutex_lock(&cs->pin_lock);
    pinned_block **pp = &cs->pinned;
    while (*pp) {
        pinned_block *b = *pp;
        if (b->busy && !all) {
            pp = &b->next;
            continue;
        }
        *pp = b->next;
        if (b->busy) cs->pinned_busy -= b->size;
        else cs->pinned_free -= b->size;
        drv.MemFreeHost(b->p);
        fcg_free(ctx, b, sizeof *b);
    }
    pthread_mutex_unlock(&cs->pin_lock);
}

/* Runs on the driver's callback thread once a staged copy has landed. No CUDA calls here. */
static void CUDA_CB staged_read_done(void *user) {
    pinned_block *b = user;
    if (b->dst) memcpy(b->dst, b->p, b->dst_bytes);
    b->dst = NULL;
    pinned_put(b->cs, b);
}

static void CUDA_CB staging_done(void *user) {
    pinned_block *b = user;
    pinned_put(b->cs, b);
}

/* ---- context ------------------------------------------------------------------------------ */

static void entry_free(fc_ctx *ctx, plan_entry *e);

static void destroy(fc_ctx *ctx) {
    cuda_state *cs = ctx->be_state;
    if (!cs) return;
    make_current(cs);
    /* Device values of nodes still alive are freed with them (before this runs). */
    if (!cs->dead) drv.CtxSynchronize();
    for (int b = 0; b < PLAN_BUCKETS; b++)
        while (cs->plans[b]) {
            plan_entry *e = cs->plans[b];
            cs->plans[b] = e->next;
            entry_free(ctx, e);
        }
    if (cs->lib) fcr_lib_release(ctx, cs->lib);
    if (!cs->dead) {
        for (size_t i = 0; i < cs->nmods; i++) drv.ModuleUnload(cs->mods[i].mod);
        if (cs->join) drv.EventDestroy(cs->join);
        if (cs->stream) drv.StreamDestroy(cs->stream);
    }
    pinned_release_free(ctx, true);
    pthread_mutex_destroy(&cs->pin_lock);
    drv.DevicePrimaryCtxRelease(cs->dev);
    fcg_free(ctx, cs->mods, cs->capmods * sizeof *cs->mods);
    fcg_free(ctx, cs->dropped, cs->dying_cap * sizeof *cs->dropped);
    fcg_free(ctx, cs->dies, cs->dying_cap);
    fcg_free(ctx, cs, sizeof *cs);
    ctx->be_state = NULL;
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

/* fc_ctx_options.preallocate / FUSEC_GPU_PREALLOCATE: a block allocated and freed again at
 * once, which the pool keeps (its release threshold is the maximum), so later allocations up
 * to its size are carved from memory already mapped (as XLA's allocator preallocates). */
static fc_status preallocate(fc_ctx *ctx) {
    cuda_state *cs = ctx->be_state;
    const char *env = getenv("FUSEC_GPU_PREALLOCATE");
    size_t bytes = ctx->preallocate ? ctx->preallocate : env ? parse_size(env) : 0;
    if (env && !ctx->preallocate && bytes == 0 && strcmp(env, "0") != 0)
        return fcg_error(ctx, FC_ERR_INVALID, "FUSEC_GPU_PREALLOCATE=%s: not a size (e.g. 2G, "
                         "512M, 0)", env);
    if (bytes == 0) return FC_OK;
    if (cs->limit && bytes > cs->limit) bytes = cs->limit; /* no more than fusec may hold */
    CUdeviceptr p;
    CUresult r = drv.MemAllocAsync(&p, bytes, cs->stream);
    if (r == CUDA_SUCCESS) r = drv.MemFreeAsync(p, cs->stream);
    if (r == CUDA_SUCCESS) r = drv.StreamSynchronize(cs->stream);
    if (r == CUDA_ERROR_OUT_OF_MEMORY)
        return fcg_error(ctx, FC_ERR_NOMEM, "preallocate: %zu bytes of device memory could not "
                         "be reserved (fc_ctx_options.preallocate or FUSEC_GPU_PREALLOCATE)",
                         bytes);
    return check(ctx, r, "cuMemAllocAsync (preallocate)", __FILE__, __LINE__);
}

fc_status fcr_device_count(int *count) {
    *count = 0;
    if (!load_driver()) return FC_OK; /* no driver: no devices */
    if (drv.DeviceGetCount(count) != CUDA_SUCCESS) *count = 0;
    return FC_OK;
}

fc_status fcr_device_info(int ordinal, fc_device_info *out) {
    int count = 0;
    if (!load_driver()) return FC_ERR_BACKEND;
    if (drv.DeviceGetCount(&count) != CUDA_SUCCESS || ordinal < 0 || ordinal >= count)
        return FC_ERR_BACKEND;
    CUdevice d;
    if (drv.DeviceGet(&d, ordinal) != CUDA_SUCCESS) return FC_ERR_BACKEND;
    out->ordinal = ordinal;
    drv.DeviceGetName(out->name, sizeof out->name, d);
    drv.DeviceGetAttribute(&out->cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d);
    drv.DeviceGetAttribute(&out->cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d);
    drv.DeviceGetAttribute(&out->sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, d);
    drv.DeviceTotalMem(&out->total_memory, d);
    snprintf(out->arch, sizeof out->arch, "sm_%d%d", out->cc_major, out->cc_minor);
    return FC_OK;
}

static const fcb_backend fcr_backend;

/* A failed open releases what it made; the context stays on the host backend. */
static fc_status open_failed(fc_ctx *ctx, fc_status st) {
    destroy(ctx);
    return st;
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
    if (pthread_mutex_init(&cs->pin_lock, NULL) != 0) {
        fcg_free(ctx, cs, sizeof *cs);
        return fcg_error(ctx, FC_ERR_BACKEND, "CUDA backend: cannot create a mutex");
    }
    fc_status st;
    if ((st = CU(ctx, DeviceGet(&cs->dev, device))) != FC_OK ||
        (st = CU(ctx, DevicePrimaryCtxRetain(&cs->cu, cs->dev))) != FC_OK) {
        pthread_mutex_destroy(&cs->pin_lock);
        fcg_free(ctx, cs, sizeof *cs);
        return st;
    }
    ctx->be_state = cs; /* from here destroy() releases it */
    if ((st = CU(ctx, CtxSetCurrent(cs->cu))) != FC_OK ||
        (st = CU(ctx, StreamCreate(&cs->stream, CU_STREAM_NON_BLOCKING))) != FC_OK ||
        (st = CU(ctx, EventCreate(&cs->join, CU_EVENT_DISABLE_TIMING))) != FC_OK ||
        (st = CU(ctx, DeviceGetAttribute(&cs->sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                                         cs->dev))) != FC_OK)
        return open_failed(ctx, st);
    CU(ctx, DeviceGetAttribute(&cs->cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, cs->dev));
    CU(ctx, DeviceGetAttribute(&cs->cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, cs->dev));
    CU(ctx, DeviceGetName(cs->name, sizeof cs->name, cs->dev));
    snprintf(cs->arch, sizeof cs->arch, "sm_%d%d", cs->cc_major, cs->cc_minor);
    if ((st = CU(ctx, DeviceGetDefaultMemPool(&cs->pool, cs->dev))) != FC_OK)
        return open_failed(ctx, st);
    /* Keep freed blocks cached in the pool: stream-ordered reuse without driver calls. */
    cuuint64_t keep = UINT64_MAX;
    CU(ctx, MemPoolSetAttribute(cs->pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep));
    const char *lim = getenv("FUSEC_GPU_MEMORY_LIMIT");
    cs->limit = ctx->memory_limit ? ctx->memory_limit : lim ? parse_size(lim) : 0;
    cs->log_timing = fcp_log_enabled("timing");
    const char *g = getenv("FUSEC_CUDA_GRAPHS");
    cs->graphs = ctx->cuda_graphs > 0 || (ctx->cuda_graphs == 0 && !(g && strcmp(g, "0") == 0));
    ctx->be = &fcr_backend;
    /* One-time costs of a process's first evaluation, paid here with the context's own setup
     * (FUSEC_LOG=timing on an H200: the pool's first allocation took 8-11 ms, opening the
     * kernel cache ~0.3 ms). A failure is left for the first evaluation to meet and report. */
    CUdeviceptr first;
    if (drv.MemAllocAsync(&first, 1, cs->stream) == CUDA_SUCCESS) {
        drv.MemFreeAsync(first, cs->stream);
        drv.StreamSynchronize(cs->stream);
    }
    if ((st = preallocate(ctx)) != FC_OK) return open_failed(ctx, st);
    fcc_cache *kernel_cache;
    (void)fcx_cache(ctx, &kernel_cache);
    ctx->errmsg[0] = '\0';
    return FC_OK;
}

/* ---- memory statistics ------------------------------------------------------------------ */

static void fcr_memory_stats(fc_ctx *ctx, fc_memory_stats *out) {
    cuda_state *cs = ctx->be_state;
    out->in_use = cs->in_use;
    out->peak = cs->peak;
    out->allocations = cs->allocations;
    out->reused = cs->reused;
    out->library = fcr_lib_bytes(cs->lib);
    out->limit = cs->limit;
    cuuint64_t reserved = 0;
    if (!cs->dead &&
        drv.MemPoolGetAttribute(cs->pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved) ==
            CUDA_SUCCESS &&
        reserved > cs->in_use)
        out->cached = (size_t)reserved - cs->in_use;
    pthread_mutex_lock(&cs->pin_lock);
    out->pinned_in_use = cs->pinned_busy;
    out->pinned_cached = cs->pinned_free;
    pthread_mutex_unlock(&cs->pin_lock);
}

static void fcr_memory_reset_peak(fc_ctx *ctx) {
    cuda_state *cs = ctx->be_state;
    cs->peak = cs->in_use;
}

static fc_status fcr_ctx_sync(fc_ctx *ctx) {
    fc_status st = alive(ctx);
    if (st != FC_OK) return st;
    make_current(ctx->be_state);
    return CU(ctx, CtxSynchronize());
}

static fc_status fcr_alloc_value(fc_ctx *ctx, fc_array *a) {
    fc_status st = alive(ctx);
    if (st != FC_OK) return st;
    make_current(ctx->be_state);
    size_t bytes = value_bytes(a);
    CUdeviceptr p;
    if ((st = dev_alloc(ctx, bytes, stream_of(ctx, 0), &p)) != FC_OK) return st;
    a->dev = p;
    a->dev_bytes = bytes ? bytes : 1;
    a->dev_stream = 0;
    a->dev_reader = 0;
    return FC_OK;
}

void *fcr_stream_handle(fc_ctx *ctx) {
    cuda_state *cs = ctx->be_state;
    make_current(cs);
    return cs->stream;
}

static fc_status fcr_query(fc_ctx *ctx, bool *idle) {
    *idle = false;
    fc_status st = alive(ctx);
    if (st != FC_OK) return st;
    cuda_state *cs = ctx->be_state;
    make_current(cs);
    CUresult r = drv.StreamQuery(cs->stream);
    if (r == CUDA_ERROR_NOT_READY) return FC_OK;
    *idle = r == CUDA_SUCCESS;
    return check(ctx, r, "cuStreamQuery", __FILE__, __LINE__);
}

static fc_status fcr_memory_trim(fc_ctx *ctx) {
    cuda_state *cs = ctx->be_state;
    fc_status st = fcr_ctx_sync(ctx);
    if (st != FC_OK) return st;
    /* the library's workspaces, scratch and cuFFT plans too: made again when next needed
     * (graphs that captured them are captured again: fcr_lib_epoch) */
    if (cs->lib) fcr_lib_trim(ctx, cs->lib);
    if ((st = CU(ctx, MemPoolTrimTo(cs->pool, 0))) != FC_OK) return st;
    pinned_release_free(ctx, false);
    return FC_OK;
}

static fc_status fcr_copy_bandwidth(fc_ctx *ctx, size_t bytes, int runs, double *gbps) {
    cuda_state *cs = ctx->be_state;
    fc_status st = alive(ctx);
    if (st != FC_OK) return st;
    make_current(cs);
    CUdeviceptr a = 0, b = 0;
    CUevent ev[2] = {0, 0};
    float *ms = fcg_malloc(ctx, (size_t)runs * sizeof *ms);
    if (!ms) return fcg_error(ctx, FC_ERR_NOMEM, "copy bandwidth: out of memory");
    if ((st = dev_alloc(ctx, bytes, cs->stream, &a)) != FC_OK) goto done;
    if ((st = dev_alloc(ctx, bytes, cs->stream, &b)) != FC_OK) goto done;
    if ((st = CU(ctx, EventCreate(&ev[0], 0))) != FC_OK) goto done;
    if ((st = CU(ctx, EventCreate(&ev[1], 0))) != FC_OK) goto done;
    if ((st = CU(ctx, MemsetD8Async(a, 0x5a, bytes, cs->stream))) != FC_OK) goto done;
    for (int w = 0; w < 3 && st == FC_OK; w++) st = CU(ctx, MemcpyDtoDAsync(b, a, bytes, cs->stream));
    for (int r = 0; r < runs && st == FC_OK; r++) {
        if ((st = CU(ctx, EventRecord(ev[0], cs->stream))) != FC_OK) break;
        if ((st = CU(ctx, MemcpyDtoDAsync(b, a, bytes, cs->stream))) != FC_OK) break;
        if ((st = CU(ctx, EventRecord(ev[1], cs->stream))) != FC_OK) break;
        if ((st = CU(ctx, EventSynchronize(ev[1]))) != FC_OK) break;
        st = CU(ctx, EventElapsedTime(&ms[r], ev[0], ev[1]));
    }
    if (st == FC_OK) {
        for (int i = 1; i < runs; i++) /* insertion sort: runs is small */
            for (int j = i; j > 0 && ms[j - 1] > ms[j]; j--) {
                float t = ms[j];
                ms[j] = ms[j - 1];
                ms[j - 1] = t;
            }
        double med = runs % 2 ? ms[runs / 2] : 0.5 * (ms[runs / 2 - 1] + ms[runs / 2]);
        *gbps = med > 0 ? 2.0 * (double)bytes / (med * 1e6) : 0;
    }
done:
    if (ev[0]) drv.EventDestroy(ev[0]);
    if (ev[1]) drv.EventDestroy(ev[1]);
    if (a) pool_free(ctx, a, bytes, cs->stream);
    if (b) pool_free(ctx, b, bytes, cs->stream);
    fcg_free(ctx, ms, (size_t)runs * sizeof *ms);
    return st;
}

/* ---- streams and events ------------------------------------------------------------------ */

static fc_status fcr_stream_create(fc_ctx *ctx, fc_stream *s) {
    fc_status st = alive(ctx);
    if (st != FC_OK) return st;
    make_current(ctx->be_state);
    CUstream cu;
    if ((st = CU(ctx, StreamCreate(&cu, CU_STREAM_NON_BLOCKING))) != FC_OK) return st;
    s->cu = cu;
    return FC_OK;
}

static void fcr_stream_destroy(fc_ctx *ctx, fc_stream *s) {
    cuda_state *cs = ctx->be_state;
    if (!s->cu && !s->external) return;
    if (!cs->dead) {
        make_current(cs);
        /* Values this stream wrote now belong to the context's stream (stream_of maps a dead
         * id there): order that stream after everything queued here. */
        join(ctx, (CUstream)s->cu, cs->stream);
        drv.StreamSynchronize((CUstream)s->cu);
    }
    /* the library's workspaces and plans of this stream go with it (its work is done) */
    if (cs->lib) fcr_lib_stream_gone(ctx, cs->lib, (CUstream)s->cu);
    if (!cs->dead && !s->external) drv.StreamDestroy((CUstream)s->cu); /* a wrapped one lives */
    s->cu = NULL;
}

static fc_status fcr_stream_sync(fc_ctx *ctx, fc_stream *s) {
    fc_status st = alive(ctx);
    if (st != FC_OK) return st;
    make_current(ctx->be_state);
    return CU(ctx, StreamSynchronize(stream_of(ctx, stream_id(s))));
}

static fc_status fcr_event_create(fc_ctx *ctx, fc_event *e) {
    fc_status st = alive(ctx);
    if (st != FC_OK) return st;
    make_current(ctx->be_state);
    CUevent ev;
    if ((st = CU(ctx, EventCreate(&ev, 0))) != FC_OK) return st;
    e->cu = ev;
    return FC_OK;
}

static void fcr_event_destroy(fc_ctx *ctx, fc_event *e) {
    cuda_state *cs = ctx->be_state;
    if (e->cu && !cs->dead) drv.EventDestroy((CUevent)e->cu);
    e->cu = NULL;
}

static fc_status fcr_event_record(fc_ctx *ctx, fc_event *e, fc_stream *s) {
    fc_status st = alive(ctx);
    if (st != FC_OK) return st;
    make_current(ctx->be_state);
    return CU(ctx, EventRecord((CUevent)e->cu, stream_of(ctx, stream_id(s))));
}

static fc_status fcr_stream_wait_event(fc_ctx *ctx, fc_stream *s, fc_event *e) {
    fc_status st = alive(ctx);
    if (st != FC_OK) return st;
    make_current(ctx->be_state);
    return CU(ctx, StreamWaitEvent(stream_of(ctx, stream_id(s)), (CUevent)e->cu, 0));
}

static fc_status fcr_event_sync(fc_ctx *ctx, fc_event *e) {
    fc_status st = alive(ctx);
    if (st != FC_OK) return st;
    make_current(ctx->be_state);
    return CU(ctx, EventSynchronize((CUevent)e->cu));
}

static fc_status fcr_event_elapsed(fc_ctx *ctx, fc_event *a, fc_event *b, float *ms) {
    fc_status st = fcr_event_sync(ctx, b);
    if (st == FC_OK) st = fcr_event_sync(ctx, a);
    if (st == FC_OK) st = CU(ctx, EventElapsedTime(ms, (CUevent)a->cu, (CUevent)b->cu));
    return st;
}

/* ---- interop (api/interop.c) ------------------------------------------------------------- */

static fc_status fcr_export_value(fc_ctx *ctx, fc_array *a, fc_stream *s, void **ptr,
                                  void **stream) {
    fc_status st = alive(ctx);
    if (st != FC_OK) return st;
    make_current(ctx->be_state);
    uint32_t sid = stream_id(s);
    if (!a->dev && (st = upload(ctx, a, sid)) != FC_OK) return st;
    st = s ? use_on(ctx, a, sid) : CU(ctx, StreamSynchronize(stream_of(ctx, a->dev_stream)));
    if (st != FC_OK) return st;
    /* Read from now on where fusec cannot see: freeing or writing it waits for the device,
     * and no result is ever written over it (donor_now wants a quiet buffer). */
    a->dev_reader = UINT32_MAX;
    *ptr = (void *)(uintptr_t)a->dev;
    *stream = stream_of(ctx, a->dev_stream);
    return FC_OK;
}

static fc_status fcr_import_value(fc_ctx *ctx, fc_array *a, void *ptr, fc_stream *s) {
    cuda_state *cs = ctx->be_state;
    fc_status st = alive(ctx);
    if (st != FC_OK) return st;
    make_current(cs);
    /* Memory the kernels cannot read would fault the context later: refuse it now. */
    unsigned type = 0, managed = 0;
    int ordinal = -1;
    CUdeviceptr p = (CUdeviceptr)(uintptr_t)ptr;
    if (drv.PointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p) != CUDA_SUCCESS)
        return fcg_error(ctx, FC_ERR_INVALID, "import: %p is not memory the CUDA driver knows "
                         "(host memory? kDLCPU arrays import on the host backend)", ptr);
    drv.PointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, p);
    if (!managed && type != CU_MEMORYTYPE_DEVICE)
        return fcg_error(ctx, FC_ERR_INVALID, "import: %p is host memory, not device memory",
                         ptr);
    if (!managed &&
        drv.PointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p) ==
            CUDA_SUCCESS &&
        ordinal != ctx->device)
        return fcg_error(ctx, FC_ERR_INVALID, "import: %p is memory of device %d; the context "
                         "runs on device %d", ptr, ordinal, ctx->device);
    size_t bytes = value_bytes(a);
    a->dev = (uint64_t)(uintptr_t)ptr;
    a->dev_bytes = bytes ? bytes : 1;
    a->dev_stream = stream_id(s);
    a->dev_reader = 0;
    return FC_OK;
}

static void fcr_take_value(fc_ctx *ctx, fc_array *a, fcb_value *v) {
    (void)ctx;
    memset(v, 0, sizeof *v);
    v->dev = a->dev, v->dev_bytes = a->dev_bytes;
    v->dev_stream = a->dev_stream, v->dev_reader = a->dev_reader;
    a->dev = 0, a->dev_bytes = 0, a->dev_stream = 0, a->dev_reader = 0;
}

static void fcr_drop_value(fc_ctx *ctx, fcb_value *v, bool external) {
    cuda_state *cs = ctx->be_state;
    if (!cs || !v->dev) return;
    if (!external) { /* fusec's own block: back to the pool, after its readers */
        fc_array husk;
        memset(&husk, 0, sizeof husk);
        husk.dev = v->dev, husk.dev_bytes = v->dev_bytes;
        husk.dev_stream = v->dev_stream, husk.dev_reader = v->dev_reader;
        free_value(ctx, &husk);
        return;
    }
    if (cs->dead) return; /* nothing of fusec's runs any more */
    /* The owner may free it once this returns: fusec's reads of it are done by then. */
    make_current(cs);
    if (v->dev_reader == UINT32_MAX) {
        drv.CtxSynchronize();
        return;
    }
    drv.StreamSynchronize(stream_of(ctx, v->dev_stream));
    if (v->dev_reader) drv.StreamSynchronize(stream_of(ctx, v->dev_reader - 1));
}

/* CUstream values with a meaning of their own: the legacy default stream (0 and
 * CU_STREAM_LEGACY) and the per-thread one. They belong to every context. */
static bool special_stream(void *cu) {
    return cu == NULL || cu == (void *)CU_STREAM_LEGACY || cu == (void *)CU_STREAM_PER_THREAD;
}

static fc_status fcr_stream_wrap(fc_ctx *ctx, fc_stream *s, void *cu) {
    cuda_state *cs = ctx->be_state;
    fc_status st = alive(ctx);
    if (st != FC_OK) return st;
    make_current(cs);
    CUcontext owner = NULL;
    if (!special_stream(cu)) {
        CUresult r = drv.StreamGetCtx((CUstream)cu, &owner);
        if (r != CUDA_SUCCESS)
            return fcg_error(ctx, FC_ERR_INVALID, "stream_wrap: %p is not a CUDA stream (%s)", cu,
                             cu_err(r));
        if (owner != cs->cu)
            return fcg_error(ctx, FC_ERR_INVALID, "stream_wrap: stream %p belongs to another "
                             "CUDA context than device %d's primary one, which fusec uses", cu,
                             ctx->device);
    }
    s->cu = cu;
    return FC_OK;
}

static fc_status fcr_stream_cu(fc_ctx *ctx, const fc_stream *s, void **cu) {
    *cu = stream_of(ctx, stream_id(s));
    return FC_OK;
}

static fc_status fcr_stream_wait_value(fc_ctx *ctx, fc_stream *s, fc_array *a) {
    fc_status st = alive(ctx);
    if (st != FC_OK) return st;
    make_current(ctx->be_state);
    return a->dev ? use_on(ctx, a, stream_id(s)) : FC_OK; /* a host value: nothing to wait for */
}

/* ---- transfers ------------------------------------------------------------------------------ */

static fc_status fcr_write(fc_ctx *ctx, fc_array *a, const void *src, size_t off, size_t bytes,
                    fc_stream *stream) {
    cuda_state *cs = ctx->be_state;
    fc_status st = alive(ctx);
    if (st != FC_OK) return st;
    make_current(cs);
    uint32_t sid = stream_id(stream);
    CUstream s = stream_of(ctx, sid);
    /* The write follows the value's writer and every reader on another stream. */
    if ((st = use_on(ctx, a, sid)) != FC_OK) return st;
    if (a->dev_reader == UINT32_MAX) st = CU(ctx, CtxSynchronize());
    else if (a->dev_reader && a->dev_reader - 1 != sid)
        st = join(ctx, stream_of(ctx, a->dev_reader - 1), s);
    if (st != FC_OK) return st;
    a->dev_stream = sid;
    a->dev_reader = 0;
    /* The host copy, if any, is stale from here on. */
    fcg_free(ctx, a->host, a->host_bytes);
    a->host = NULL;
    a->host_bytes = 0;
    CUdeviceptr dst = (CUdeviceptr)a->dev + off;
    if (pinned_find(cs, src, bytes)) return CU(ctx, MemcpyHtoDAsync(dst, src, bytes, s));
    /* Pageable source: copy into pinned staging now (the caller may reuse src at once),
     * then let the copy engine move it; the block returns to the pool when it lands. */
    pinned_block *b = pinned_get(ctx, bytes);
    if (!b) return CU(ctx, MemcpyHtoDAsync(dst, src, bytes, s)); /* the driver stages it */
    memcpy(b->p, src, bytes);
    st = CU(ctx, MemcpyHtoDAsync(dst, b->p, bytes, s));
    if (st == FC_OK) st = CU(ctx, LaunchHostFunc(s, staging_done, b));
    if (st != FC_OK) {
        drv.StreamSynchronize(s);
        pinned_put(cs, b);
    }
    return st;
}

static fc_status fcr_read_async(fc_ctx *ctx, fc_array *a, void *dst, size_t off, size_t bytes,
                         fc_stream *stream) {
    cuda_state *cs = ctx->be_state;
    fc_status st = alive(ctx);
    if (st != FC_OK) return st;
    make_current(cs);
    uint32_t sid = stream_id(stream);
    CUstream s = stream_of(ctx, sid);
    if ((st = use_on(ctx, a, sid)) != FC_OK) return st;
    CUdeviceptr src = (CUdeviceptr)a->dev + off;
    if (pinned_find(cs, dst, bytes)) return CU(ctx, MemcpyDtoHAsync(dst, src, bytes, s));
    pinned_block *b = pinned_get(ctx, bytes);
    if (!b) { /* no pinned memory: a plain, synchronous copy */
        st = CU(ctx, MemcpyDtoHAsync(dst, src, bytes, s));
        return st == FC_OK ? CU(ctx, StreamSynchronize(s)) : st;
    }
    b->dst = dst;
    b->dst_bytes = bytes;
    st = CU(ctx, MemcpyDtoHAsync(b->p, src, bytes, s));
    if (st == FC_OK) st = CU(ctx, LaunchHostFunc(s, staged_read_done, b));
    if (st != FC_OK) {
        b->dst = NULL;
        drv.StreamSynchronize(s);
        pinned_put(cs, b);
    }
    return st;
}

static fc_status fcr_copy_between(fc_ctx *dst_ctx, fc_array *dst, fc_ctx *src_ctx, const fc_array *src) {
    cuda_state *ds = dst_ctx->be_state, *ss = src_ctx->be_state;
    fc_status st = alive(dst_ctx);
    if (st == FC_OK && ss->dead)
        st = fcg_error(dst_ctx, FC_ERR_BACKEND, "copy_to: the source's GPU context is unusable");
    if (st != FC_OK) return st;
    /* The source's value is complete once its writer's stream is. */
    make_current(ss);
    if ((st = CU(src_ctx, StreamSynchronize(stream_of(src_ctx, src->dev_stream)))) != FC_OK)
        return fcg_error(dst_ctx, st, "copy_to: %s", fc_errmsg(src_ctx));
    make_current(ds);
    size_t bytes = value_bytes(src);
    CUdeviceptr p;
    if ((st = dev_alloc(dst_ctx, bytes, ds->stream, &p)) != FC_OK) return st;
    if (bytes && ds->cu == ss->cu) {
        st = CU(dst_ctx, MemcpyDtoDAsync(p, (CUdeviceptr)src->dev, bytes, ds->stream));
    } else if (bytes) {
        int can = 0;
        if (drv.DeviceCanAccessPeer(&can, ds->dev, ss->dev) == CUDA_SUCCESS && can) {
            CUresult r = drv.CtxEnablePeerAccess(ss->cu, 0);
            if (r != CUDA_SUCCESS && r != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED)
                st = check(dst_ctx, r, "cuCtxEnablePeerAccess", __FILE__, __LINE__);
        }
        /* Without peer access the driver stages the copy through the host. */
        if (st == FC_OK)
            st = CU(dst_ctx, MemcpyPeerAsync(p, ds->cu, (CUdeviceptr)src->dev, ss->cu, bytes,
                                             ds->stream));
    }
    if (st != FC_OK) {
        pool_free(dst_ctx, p, bytes, ds->stream);
        return st;
    }
    dst->dev = p;
    dst->dev_bytes = bytes ? bytes : 1;
    dst->dev_stream = 0;
    dst->dev_reader = 0;
    return FC_OK;
}

/* ---- kernels ---------------------------------------------------------------------------- */

/* Loads the binary the compile driver got for a kernel: one module per key, shared by every
 * plan that runs it. */
static fc_status load_kernel(fc_ctx *ctx, const fck_kernel *fk, size_t *out) {
    cuda_state *cs = ctx->be_state;
    const fck_target *bin = &fk->targets[0];
    fc_status st;
    for (size_t i = 0; i < cs->nmods; i++)
        if (memcmp(&cs->mods[i].key, &bin->key, sizeof bin->key) == 0) {
            *out = i;
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
    e->key = bin->key;
    if ((st = CU(ctx, ModuleLoadData(&e->mod, bin->cubin))) != FC_OK) return st;
    if ((st = CU(ctx, ModuleGetFunction(&e->fn, e->mod, FCX_KERNEL_NAME))) != FC_OK ||
        (st = CU(ctx, OccupancyMaxActiveBlocksPerMultiprocessor(&e->blocks_per_sm, e->fn,
                                                                 fk->src.block, 0))) != FC_OK) {
        drv.ModuleUnload(e->mod);
        return st;
    }
    if (e->blocks_per_sm < 1) e->blocks_per_sm = 1;
    *out = cs->nmods++;
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

/* ---- plans ----------------------------------------------------------------------------- */

/* Destroys the entry's CUDA graph and its library steps' captured work; the next graph is
 * built from scratch. */
static void graph_drop(fc_ctx *ctx, plan_entry *e) {
    cuda_state *cs = ctx->be_state;
    if (!cs->dead) {
        if (e->exec) drv.GraphExecDestroy(e->exec);
        if (e->graph) drv.GraphDestroy(e->graph);
    }
    e->exec = NULL;
    e->graph = NULL;
    fcg_free(ctx, e->graph_ptrs, e->ngraph_ptrs * 8);
    e->graph_ptrs = NULL;
    e->ngraph_ptrs = 0;
    for (int i = 0; i < e->nstep; i++) {
        step *sp = &e->steps[i];
        sp->gnode = NULL;
        sp->active = -1;
        for (int v = 0; v < LIB_VARIANTS; v++) {
            if (sp->var[v].graph && !cs->dead) drv.GraphDestroy(sp->var[v].graph);
            sp->var[v].graph = NULL;
        }
    }
}

static void entry_free(fc_ctx *ctx, plan_entry *e) {
    cuda_state *cs = ctx->be_state;
    if (!e) return;
    graph_drop(ctx, e);
    for (int i = 0; i < e->nstep; i++) {
        step *sp = &e->steps[i];
        fcg_free(ctx, sp->ptr, (size_t)sp->nptr * sizeof(arg_src));
        fcg_free(ctx, sp->param, sp->nparam * 8);
        fcg_free(ctx, sp->copy.nodes, (size_t)sp->copy.n * sizeof *sp->copy.nodes);
        fcg_free(ctx, sp->copy.ptrs,
                 (size_t)(sp->copy.n + sp->copy.k.nout) * sizeof *sp->copy.ptrs);
        fcg_free(ctx, sp->copy.ins, (size_t)sp->copy.nins * sizeof *sp->copy.ins);
    }
    fcg_free(ctx, e->steps, (size_t)e->nstep * sizeof *e->steps);
    fcg_free(ctx, e->leaf_pos, (size_t)e->nleaf * sizeof *e->leaf_pos);
    fcg_free(ctx, e->leaf_node, (size_t)e->nleaf * sizeof *e->leaf_node);
    fcg_free(ctx, e->out, (size_t)e->nout * sizeof *e->out);
    fcg_free(ctx, e->donor, (size_t)e->nout * sizeof *e->donor);
    fcg_free(ctx, e->scalars, (size_t)e->nscalar * sizeof *e->scalars);
    /* Freed in stream order after the entry's last run. */
    if ((e->nconst || e->kept_bytes) && e->last_stream && !cs->dead)
        join(ctx, stream_of(ctx, e->last_stream), cs->stream);
    for (int i = 0; i < e->nconst; i++) pool_free(ctx, e->const_ptr[i], e->const_bytes[i], cs->stream);
    for (int b = 0; e->kept && b < e->nbuf; b++)
        if (e->kept[b]) pool_free(ctx, e->kept[b], e->buf_bytes[b], cs->stream);
    fcg_free(ctx, e->kept, e->kept ? (size_t)e->nbuf * sizeof *e->kept : 0);
    fcg_free(ctx, e->buf_bytes, (size_t)e->nbuf * sizeof *e->buf_bytes);
    fcg_free(ctx, e->const_ptr, (size_t)e->nconst * sizeof *e->const_ptr);
    fcg_free(ctx, e->const_bytes, (size_t)e->nconst * sizeof *e->const_bytes);
    fcg_free(ctx, e, sizeof *e);
}

/* A device block the entry owns for its whole life: a copy of `host`, or zeros. It is
 * complete when this returns (the host copy may die with the plan; scratch is then ready for
 * any stream). */
static fc_status entry_block(fc_ctx *ctx, plan_entry *e, size_t bytes, const void *host,
                             CUdeviceptr *out) {
    cuda_state *cs = ctx->be_state;
    CUdeviceptr *cp = fcg_realloc(ctx, e->const_ptr, (size_t)e->nconst * sizeof *cp,
                                  (size_t)(e->nconst + 1) * sizeof *cp);
    if (!cp) return fcg_error(ctx, FC_ERR_NOMEM, "eval: out of memory");
    e->const_ptr = cp;
    size_t *cb = fcg_realloc(ctx, e->const_bytes, (size_t)e->nconst * sizeof *cb,
                             (size_t)(e->nconst + 1) * sizeof *cb);
    if (!cb) return fcg_error(ctx, FC_ERR_NOMEM, "eval: out of memory");
    e->const_bytes = cb;
    CUdeviceptr dp;
    fc_status st = dev_alloc(ctx, bytes, cs->stream, &dp);
    if (st != FC_OK) return st;
    if (bytes)
        st = host ? CU(ctx, MemcpyHtoDAsync(dp, host, bytes, cs->stream))
                  : CU(ctx, MemsetD8Async(dp, 0, bytes, cs->stream));
    if (st == FC_OK) st = CU(ctx, StreamSynchronize(cs->stream));
    if (st != FC_OK) {
        pool_free(ctx, dp, bytes, cs->stream);
        return st;
    }
    e->const_ptr[e->nconst] = dp;
    e->const_bytes[e->nconst++] = bytes;
    *out = dp;
    return FC_OK;
}

/* The leaves of the cut graph (nodes with values, inputs) with their positions in its
 * canonical order, sorted by address: the runtime's own table, since the nodes' scratch
 * fields belong to the graph's walks. */
typedef struct leaf_map {
    size_t n;
    struct leaf_at {
        const fc_array *node;
        int64_t pos;
    } *at;
} leaf_map;

static int leaf_at_cmp(const void *a, const void *b) {
    const struct leaf_at *x = a, *y = b;
    return x->node < y->node ? -1 : x->node > y->node;
}

/* consts: map the unkeyed constants instead of the leaves (their values are arguments). */
static fc_status leaf_map_make(fc_ctx *ctx, fc_array *const *order, size_t count, bool consts,
                               leaf_map *m) {
    m->n = 0;
    m->at = fcg_malloc(ctx, (count ? count : 1) * sizeof *m->at);
    if (!m->at) return fcg_error(ctx, FC_ERR_NOMEM, "eval: out of memory");
    for (size_t i = 0; i < count; i++) {
        const fc_array *a = order[i];
        bool leaf = a->host || a->dev || a->op == FCG_OP_DATA || a->op == FCG_OP_INPUT;
        bool scalar = !leaf && a->op == FCG_OP_CONST && !fcg_const_keyed(a);
        if (consts ? scalar : leaf) m->at[m->n++] = (struct leaf_at){a, (int64_t)i};
    }
    qsort(m->at, m->n, sizeof *m->at, leaf_at_cmp);
    return FC_OK;
}

static void leaf_map_free(fc_ctx *ctx, leaf_map *m, size_t count) {
    fcg_free(ctx, m->at, (count ? count : 1) * sizeof *m->at);
}

static int64_t leaf_pos_of(const leaf_map *m, const fc_array *a) {
    struct leaf_at key = {a, 0};
    const struct leaf_at *hit = bsearch(&key, m->at, m->n, sizeof *m->at, leaf_at_cmp);
    return hit ? hit->pos : -1;
}

/* Where the value of node a comes from in plan p: a buffer of the plan, a leaf of the cut
 * graph (its position in lm), or the node itself (uncacheable). */
static fc_status arg_for(fc_ctx *ctx, plan_entry *e, const fcp_plan *p, fc_array *a,
                         const leaf_map *lm, arg_src *out) {
    memset(out, 0, sizeof *out);
    for (int q = 0; q < p->nmat; q++)
        if (p->mat[q] == a) {
            out->kind = ARG_BUF;
            out->idx = p->mat_buf[q];
            return FC_OK;
        }
    int64_t pos = leaf_pos_of(lm, a);
    if (pos >= 0) {
        for (int j = 0; j < e->nleaf; j++)
            if (e->leaf_pos[j] == pos) {
                out->kind = ARG_LEAF;
                out->idx = j;
                return FC_OK;
            }
        int64_t *lp = fcg_realloc(ctx, e->leaf_pos, (size_t)e->nleaf * sizeof *lp,
                                  (size_t)(e->nleaf + 1) * sizeof *lp);
        if (!lp) return fcg_error(ctx, FC_ERR_NOMEM, "eval: out of memory");
        e->leaf_pos = lp;
        fc_array **ln = fcg_realloc(ctx, e->leaf_node, (size_t)e->nleaf * sizeof *ln,
                                    (size_t)(e->nleaf + 1) * sizeof *ln);
        if (!ln) return fcg_error(ctx, FC_ERR_NOMEM, "eval: out of memory");
        e->leaf_node = ln;
        e->leaf_pos[e->nleaf] = pos;
        e->leaf_node[e->nleaf] = a;
        out->kind = ARG_LEAF;
        out->idx = e->nleaf++;
        return FC_OK;
    }
    if (a->host && !a->dev) {
        /* A constant simplify made: a pure function of the key (constants are hashed), so the
         * entry keeps one device copy for every later evaluation. */
        out->kind = ARG_CONST;
        return entry_block(ctx, e, value_bytes(a), a->host, &out->dptr);
    }
    out->kind = ARG_NODE;
    out->node = a;
    e->cacheable = false;
    return FC_OK;
}

/* A reduction's scratch: zeroed once here and left zeroed by every launch (codegen's
 * contract), so the entry keeps it for all its evaluations; runs on another stream than the
 * last are ordered after it (run_entry). No bytes asked: the kernel never reads it (NULL). */
static fc_status add_scratch(fc_ctx *ctx, plan_entry *e, size_t bytes, arg_src *out) {
    memset(out, 0, sizeof *out);
    out->kind = ARG_CONST;
    return bytes ? entry_block(ctx, e, bytes, NULL, &out->dptr) : FC_OK;
}

/* Whether kernel k can meet a value NumPy refuses: an integer power (a negative exponent), a
 * take whose index may be out of bounds. */
static bool raises_value_error(const fcp_kernel *k) {
    for (int i = 0; i < k->nnode; i++) {
        const fc_array *a = k->nodes[i];
        fc_dtype t = (fc_dtype)a->loop_dtype;
        if (a->op == FCG_OP_POW && (t == FC_I8 || t == FC_I16 || t == FC_I32 || t == FC_I64))
            return true;
        if (a->op == FCG_OP_TAKE && a->p.mode == FC_TAKE_RAISE) return true;
        if (k->kind == FCP_KERNEL_SCATTER && fcg_ops[a->op].kind == FCG_KIND_SCATTER &&
            a->p.mode == FC_TAKE_RAISE)
            return true;
    }
    return false;
}

/* Records the scalar arguments of step `si` (argument block layout: nptr pointers, then
 * max(nint, 1) integers, then the floats) that come from unkeyed constants of the graph. */
static fc_status add_scalars(fc_ctx *ctx, plan_entry *e, int si, const fcp_kernel *k,
                             const fcx_kernel_src *src, const leaf_map *cm) {
    for (int j = 0; j < src->nint + src->nflt; j++) {
        bool flt = j >= src->nint;
        const fcx_slot *sl = flt ? &src->fslots[j - src->nint] : &src->islots[j];
        if (sl->kind != FCX_SLOT_IVAL && sl->kind != FCX_SLOT_RE && sl->kind != FCX_SLOT_IM)
            continue;
        const fc_array *a = slot_node(k, sl);
        int64_t pos = a && a->op == FCG_OP_CONST ? leaf_pos_of(cm, a) : -1;
        if (pos < 0) continue; /* made by the plan from keyed values, or not a constant */
        scalar_arg *sc = fcg_realloc(ctx, e->scalars, (size_t)e->nscalar * sizeof *sc,
                                     (size_t)(e->nscalar + 1) * sizeof *sc);
        if (!sc) return fcg_error(ctx, FC_ERR_NOMEM, "eval: out of memory");
        e->scalars = sc;
        size_t word = (size_t)src->nptr +
                      (flt ? (size_t)(src->nint ? src->nint : 1) + (size_t)(j - src->nint)
                           : (size_t)j);
        sc[e->nscalar++] = (scalar_arg){si, (uint32_t)word, pos, sl->kind, flt};
    }
    return FC_OK;
}

/* Writes the current graph's scalar values into a cached entry's argument blocks. */
static void refresh_scalars(plan_entry *e, fc_array *const *order) {
    for (int i = 0; i < e->nscalar; i++) {
        const scalar_arg *sc = &e->scalars[i];
        const fc_array *c = order[sc->pos]; /* a CONST: the key says so */
        uint64_t *w = &e->steps[sc->step].param[sc->word];
        if (sc->as_double) {
            double v = sc->kind == FCX_SLOT_RE   ? c->p.re
                       : sc->kind == FCX_SLOT_IM ? c->p.im
                                                 : (double)c->p.ival;
            memcpy(w, &v, 8);
        } else {
            long long v = c->p.ival;
            memcpy(w, &v, 8);
        }
    }
}

/* Builds the runnable form of a compiled program (the driver's plan and binaries): modules
 * loaded, launches configured, argument blocks filled but for the pointers. */
/* The index of node a among from[0..n), or -1. */
static int copy_index(const fc_array *const *from, int n, const fc_array *a) {
    for (int q = 0; q < n; q++)
        if (from[q] == a) return q;
    return -1;
}

/* The copy of library kernel k (see lib_copy). A kernel the copy cannot describe (more nodes
 * than a call reads, an input from outside the kernel) gets none (copy.n == 0), and its
 * entry is not cached. */
static fc_status lib_copy_make(fc_ctx *ctx, const fcp_kernel *k, lib_copy *c) {
    memset(c, 0, sizeof *c);
    enum { MAX_COPY = 16 };
    const fc_array *from[MAX_COPY];
    int n = k->nleaf + k->nnode, nins = 0;
    if (n > MAX_COPY) return FC_OK;
    for (int i = 0; i < n; i++) {
        from[i] = i < k->nleaf ? k->leaves[i] : k->nodes[i - k->nleaf];
        if (i >= k->nleaf && from[i]->nin > 3) nins += from[i]->nin;
        for (int j = 0; i >= k->nleaf && j < from[i]->nin; j++)
            if (copy_index(from, n, from[i]->in[j]) < 0) return FC_OK;
    }
    for (int o = 0; o < k->nout; o++)
        if (copy_index(from, n, k->outs[o]) < 0) return FC_OK;
    c->nodes = fcg_calloc(ctx, (size_t)n * sizeof *c->nodes);
    c->ptrs = fcg_calloc(ctx, (size_t)(n + k->nout) * sizeof *c->ptrs);
    c->ins = nins ? fcg_calloc(ctx, (size_t)nins * sizeof *c->ins) : NULL;
    if (!c->nodes || !c->ptrs || (nins && !c->ins)) {
        fcg_free(ctx, c->nodes, (size_t)n * sizeof *c->nodes);
        fcg_free(ctx, c->ptrs, (size_t)(n + k->nout) * sizeof *c->ptrs);
        fcg_free(ctx, c->ins, (size_t)nins * sizeof *c->ins);
        memset(c, 0, sizeof *c);
        return fcg_error(ctx, FC_ERR_NOMEM, "eval: out of memory");
    }
    c->n = n;
    c->nins = nins;
    int used = 0;
    for (int i = 0; i < n; i++) {
        fc_array *d = &c->nodes[i];
        *d = *from[i];
        d->refs = UINT32_MAX, d->host = NULL, d->host_bytes = 0, d->dev = 0, d->dev_bytes = 0;
        d->errmsg = NULL, d->cons_next = NULL, d->all_prev = d->all_next = NULL;
        d->in = d->in_inline;
        if (i < k->nleaf) d->nin = 0; /* a leaf is read, never looked through */
        if (d->nin > 3) {
            d->in = c->ins + used;
            used += d->nin;
        }
        for (int j = 0; j < d->nin; j++) d->in[j] = &c->nodes[copy_index(from, n, from[i]->in[j])];
        c->ptrs[i] = d;
    }
    c->k = *k;
    c->k.leaves = c->ptrs;
    c->k.nodes = c->ptrs + k->nleaf;
    c->k.outs = c->ptrs + n;
    for (int o = 0; o < k->nout; o++) c->k.outs[o] = &c->nodes[copy_index(from, n, k->outs[o])];
    c->k.nred = 0, c->k.reds = NULL;
    return FC_OK;
}

/* Which leaf's buffer each requested array may take (fcp_donors), as leaf indices. */
static fc_status find_donors(fc_ctx *ctx, plan_entry *e, const fcp_plan *p) {
    fc_array *small[16], **donor = small;
    if (p->nout > 16 && !(donor = fcg_malloc(ctx, (size_t)p->nout * sizeof *donor)))
        return fcg_error(ctx, FC_ERR_NOMEM, "eval: out of memory");
    fc_status st = fcp_donors(p, donor);
    for (int o = 0; o < p->nout && st == FC_OK; o++) {
        int j = 0;
        while (j < e->nleaf && (!donor[o] || e->leaf_node[j] != donor[o])) j++;
        if (j == e->nleaf || e->out[o].kind != ARG_BUF) continue;
        if (!e->donor) {
            if (!(e->donor = fcg_malloc(ctx, (size_t)p->nout * sizeof *e->donor))) {
                st = fcg_error(ctx, FC_ERR_NOMEM, "eval: out of memory");
                break;
            }
            for (int q = 0; q < p->nout; q++) e->donor[q] = -1;
        }
        e->donor[o] = j;
    }
    if (donor != small) fcg_free(ctx, donor, (size_t)p->nout * sizeof *donor);
    return st;
}

static fc_status entry_build(fc_ctx *ctx, const fck_result *r, const leaf_map *lm,
                             const leaf_map *cm, plan_entry **out) {
    cuda_state *cs = ctx->be_state;
    const fcp_plan *p = r->plan;
    plan_entry *e = fcg_calloc(ctx, sizeof *e);
    if (!e) return fcg_error(ctx, FC_ERR_NOMEM, "eval: out of memory");
    e->cacheable = true;
    fc_status st = FC_OK;
    if (p->nbuf && !(e->buf_bytes = fcg_malloc(ctx, (size_t)p->nbuf * sizeof *e->buf_bytes)))
        st = fcg_error(ctx, FC_ERR_NOMEM, "eval: out of memory");
    for (int b = 0; b < p->nbuf && st == FC_OK; b++) e->buf_bytes[e->nbuf++] = p->buf_bytes[b];
    if (st == FC_OK && p->nkernel &&
        !(e->steps = fcg_calloc(ctx, (size_t)p->nkernel * sizeof *e->steps)))
        st = fcg_error(ctx, FC_ERR_NOMEM, "eval: out of memory");
    for (int i = 0; i < p->nkernel && st == FC_OK; i++) {
        const fcp_kernel *k = &p->kernels[i];
        const fcx_kernel_src *src = &r->kernels[i].src; /* zeroed for a library call */
        step *sp = &e->steps[e->nstep++];
        int nptr = k->nleaf + k->nout;
        if (k->kind == FCP_KERNEL_LIB) {
            sp->lib = true;
            sp->k = k;
            if ((st = lib_copy_make(ctx, k, &sp->copy)) != FC_OK) break;
        } else {
            if ((st = load_kernel(ctx, &r->kernels[i], &sp->mod)) != FC_OK) break;
            size_t smem = fcx_dynamic_smem(k, src);
            int bps = cs->mods[sp->mod].blocks_per_sm;
            if (smem && (st = CU(ctx, OccupancyMaxActiveBlocksPerMultiprocessor(
                             &bps, cs->mods[sp->mod].fn, src->block, smem))) != FC_OK)
                break;
            fcx_launch_config(k, src, cs->sm_count, bps < 1 ? 1 : bps, &sp->lc);
            nptr = src->nptr;
            if (raises_value_error(k)) {
                size_t fb;
                st = CU(ctx, ModuleGetGlobal(&sp->value_flag, &fb, cs->mods[sp->mod].mod,
                                             "fcx_value_error"));
                if (st != FC_OK) break;
                e->value_check = true;
            }
        }
        sp->nptr = nptr;
        if (!(sp->ptr = fcg_calloc(ctx, (size_t)(nptr ? nptr : 1) * sizeof *sp->ptr))) {
            st = fcg_error(ctx, FC_ERR_NOMEM, "eval: out of memory");
            break;
        }
        int w = 0;
        for (int l = 0; l < k->nleaf && st == FC_OK; l++)
            st = arg_for(ctx, e, p, k->leaves[l], lm, &sp->ptr[w++]);
        for (int o = 0; o < k->nout && st == FC_OK; o++)
            st = arg_for(ctx, e, p, k->outs[o], lm, &sp->ptr[w++]);
        if (st == FC_OK && w < nptr) /* the scratch buffer codegen asked for */
            st = add_scratch(ctx, e, sp->lc.scratch_bytes, &sp->ptr[w++]);
        if (st == FC_OK && w != nptr)
            st = fcg_error(ctx, FC_ERR_BACKEND, "eval: kernel %d has %d pointer arguments, %d "
                           "bound (fusec bug)", i, nptr, w);
        if (st == FC_OK && !sp->lib) {
            sp->nparam = (size_t)src->nptr + (size_t)(src->nint ? src->nint : 1) +
                         (size_t)(src->nflt ? src->nflt : 1);
            if (!(sp->param = fcg_calloc(ctx, sp->nparam * 8))) {
                st = fcg_error(ctx, FC_ERR_NOMEM, "eval: out of memory");
            } else {
                size_t q = (size_t)src->nptr;
                for (int j = 0; j < src->nint; j++) {
                    long long v = int_slot(k, &src->islots[j]);
                    memcpy(&sp->param[q++], &v, 8);
                }
                if (!src->nint) q++;
                for (int j = 0; j < src->nflt; j++) {
                    double v = float_slot(k, &src->fslots[j]);
                    memcpy(&sp->param[q++], &v, 8);
                }
                st = add_scalars(ctx, e, i, k, src, cm);
            }
        }
    }
    if (st == FC_OK && p->nout &&
        !(e->out = fcg_calloc(ctx, (size_t)p->nout * sizeof *e->out)))
        st = fcg_error(ctx, FC_ERR_NOMEM, "eval: out of memory");
    e->nout = p->nout;
    for (int o = 0; o < p->nout && st == FC_OK; o++)
        st = arg_for(ctx, e, p, p->outs[o], lm, &e->out[o]);
    if (st == FC_OK && p->nout) st = find_donors(ctx, e, p);
    if (st != FC_OK) {
        entry_free(ctx, e);
        return st;
    }
    *out = e;
    return FC_OK;
}

static plan_entry **bucket(cuda_state *cs, const fc_hash *key) {
    return &cs->plans[key->lo % PLAN_BUCKETS];
}

static plan_entry *cache_find(cuda_state *cs, const fc_hash *key) {
    for (plan_entry *e = *bucket(cs, key); e; e = e->next)
        if (e->key.lo == key->lo && e->key.hi == key->hi) return e;
    return NULL;
}

static void cache_insert(fc_ctx *ctx, plan_entry *e) {
    cuda_state *cs = ctx->be_state;
    if (cs->nplans >= PLAN_CACHE_MAX) { /* evict the least recently used */
        plan_entry **victim = NULL;
        for (int b = 0; b < PLAN_BUCKETS; b++)
            for (plan_entry **pp = &cs->plans[b]; *pp; pp = &(*pp)->next)
                if (!victim || (*pp)->last_use < (*victim)->last_use) victim = pp;
        plan_entry *v = *victim;
        *victim = v->next;
        entry_free(ctx, v);
        cs->nplans--;
    }
    plan_entry **b = bucket(cs, &e->key);
    e->next = *b;
    *b = e;
    cs->nplans++;
}

/* ---- execution ------------------------------------------------------------------------------ */

static CUdeviceptr arg_ptr(const arg_src *a, fc_array *const *leaves, const CUdeviceptr *bufs) {
    switch ((arg_kind)a->kind) {
    case ARG_LEAF: return (CUdeviceptr)leaves[a->idx]->dev;
    case ARG_BUF: return bufs[a->idx];
    case ARG_CONST: return a->dptr;
    default: return (CUdeviceptr)a->node->dev;
    }
}

/* A library kernel with no library path: its inputs come down (intermediates of this plan
 * have no value of their own yet: they come from their buffers), the host reference computes
 * it, the result goes up into its buffer. */
static fc_status lib_on_host(fc_ctx *ctx, const step *sp, fc_array *const *leaves,
                             const CUdeviceptr *bufs, CUstream s) {
    const fcp_kernel *k = sp->k;
    /* The leaves' values must be complete before they come down. */
    fc_status st = CU(ctx, StreamSynchronize(s));
    for (int i = 0; i < k->nleaf && st == FC_OK; i++) {
        fc_array *a = k->leaves[i];
        if (a->host) continue;
        size_t bytes = value_bytes(a);
        void *h = fcg_malloc(ctx, bytes ? bytes : 1);
        if (!h) return fcg_error(ctx, FC_ERR_NOMEM, "eval: out of host memory for %zu bytes", bytes);
        if (bytes) st = CU(ctx, MemcpyDtoHAsync(h, arg_ptr(&sp->ptr[i], leaves, bufs), bytes, s));
        if (st == FC_OK) st = CU(ctx, StreamSynchronize(s));
        if (st != FC_OK) {
            fcg_free(ctx, h, bytes ? bytes : 1);
            return st;
        }
        a->host = h;
        a->host_bytes = bytes ? bytes : 1;
    }
    if (st == FC_OK) st = fch_eval(ctx, k->outs, k->nout);
    if (st != FC_OK) return st;
    size_t bytes = value_bytes(k->outs[0]);
    CUdeviceptr out = arg_ptr(&sp->ptr[k->nleaf], leaves, bufs);
    if (bytes) st = CU(ctx, MemcpyHtoDAsync(out, k->outs[0]->host, bytes, s));
    return st == FC_OK ? CU(ctx, StreamSynchronize(s)) : st;
}

static fc_status run_lib(fc_ctx *ctx, step *sp, fc_array *const *leaves,
                         const CUdeviceptr *bufs, CUstream s) {
    cuda_state *cs = ctx->be_state;
    const fcp_kernel *k = sp->k;
    CUdeviceptr small[8], *in = small;
    if (k->nleaf > 8 && !(in = fcg_malloc(ctx, (size_t)k->nleaf * sizeof *in)))
        return fcg_error(ctx, FC_ERR_NOMEM, "eval: out of memory");
    for (int i = 0; i < k->nleaf; i++) in[i] = arg_ptr(&sp->ptr[i], leaves, bufs);
    CUdeviceptr out = arg_ptr(&sp->ptr[k->nleaf], leaves, bufs);
    fc_status st = fcr_lib_run(ctx, &cs->lib, s, k, in, out);
    if (st == FC_ERR_UNSUPPORTED && k == &sp->copy.k) {
        st = fcg_error(ctx, FC_ERR_BACKEND, "%s: a cached library call has no GPU path "
                       "(fusec bug)", fcg_ops[k->outs[0]->op].pyname);
    } else if (st == FC_ERR_UNSUPPORTED) {
        ctx->errmsg[0] = '\0';
        sp->on_host = true;
        st = lib_on_host(ctx, sp, leaves, bufs, s);
    }
    if (in != small) fcg_free(ctx, in, (size_t)k->nleaf * sizeof *in);
    return st;
}

/* Fills a step's pointer words; true if any differs from what `prev` held. */
static bool bind_step(const step *sp, fc_array *const *leaves, const CUdeviceptr *bufs,
                      uint64_t *block) {
    bool changed = false;
    for (int j = 0; j < sp->nptr; j++) {
        uint64_t v = arg_ptr(&sp->ptr[j], leaves, bufs);
        changed |= block[j] != v;
        block[j] = v;
    }
    return changed;
}

static fc_status launch_step(fc_ctx *ctx, const step *sp, fc_array *const *leaves,
                             const CUdeviceptr *bufs, CUstream s) {
    cuda_state *cs = ctx->be_state;
    if (sp->lc.grid == 0) return FC_OK;
    uint64_t small[128], *block = small;
    if (sp->nparam > 128 && !(block = fcg_malloc(ctx, sp->nparam * 8)))
        return fcg_error(ctx, FC_ERR_NOMEM, "launch: out of memory");
    memcpy(block, sp->param, sp->nparam * 8);
    bind_step(sp, leaves, bufs, block);
    void *args[] = {block};
    fc_status st = CU(ctx, LaunchKernel(cs->mods[sp->mod].fn, sp->lc.grid, 1, 1, sp->lc.block, 1,
                                        1, (unsigned)sp->lc.smem_bytes, s, args, NULL));
    if (block != small) fcg_free(ctx, block, sp->nparam * 8);
    return st;
}

static void node_params(const cuda_state *cs, const step *sp, void **args,
                        CUDA_KERNEL_NODE_PARAMS_v2 *np) {
    memset(np, 0, sizeof *np);
    np->func = cs->mods[sp->mod].fn;
    np->gridDimX = sp->lc.grid;
    np->gridDimY = np->gridDimZ = 1;
    np->blockDimX = sp->lc.block;
    np->blockDimY = np->blockDimZ = 1;
    np->sharedMemBytes = (unsigned)sp->lc.smem_bytes;
    np->kernelParams = args;
}

/* ---- CUDA graphs ----------------------------------------------------------------------------- *
 *
 * A repeated plan replays as one CUDA graph: one launch for all its steps. Kernel steps are
 * kernel nodes, built by hand so that the runtime keeps each node's handle and changes a
 * node's pointer words only where they changed (cuGraphExecKernelNodeSetParams). A library
 * step whose call is capturable (fcr_lib_capturable) is a child graph node whose graph was
 * captured from the call on the run's stream (cuStreamBeginCapture, fcr_lib_capture,
 * cuStreamEndCapture). A library's kernels bake their addresses into the captured work, so a
 * step keeps its captures by the addresses they were made for (lib_variant): a run whose
 * addresses match one swaps it into the child node (cuGraphExecChildGraphNodeSetParams),
 * otherwise the call is captured again first. Of the ways to change captured work this costs
 * least per changed run: the update touches one child graph's few nodes, where
 * cuGraphExecUpdate would compare the whole graph and a new instantiation would rebuild it,
 * and the addresses a loop alternates between (buffers the pool hands back) are captured
 * once. The graph is built again when its child nodes cannot take a capture (the call chose
 * other kernels: another topology), when the run is on another stream than the capture (the
 * work holds that stream's workspaces), or when the library freed a workspace, scratch area or
 * cuFFT plan since (fcr_lib_epoch). A capture that fails, a graph that cannot hold a child, or
 * graphs rebuilt for more than a quarter of an entry's runs turn graphs off for that entry:
 * its steps run one by one, as they do where any library step is not capturable (solvers that
 * read devInfo back, sorts that allocate per call, host fallbacks). */

/* The addresses library step sp reads and writes in this run: its inputs', then its output's
 * (fcr_lib_run's in[] and out). */
static int lib_addrs(const step *sp, fc_array *const *leaves, const CUdeviceptr *bufs,
                     CUdeviceptr *addr) {
    for (int j = 0; j < sp->nptr && j < LIB_MAX_ADDR; j++)
        addr[j] = arg_ptr(&sp->ptr[j], leaves, bufs);
    return sp->nptr;
}

/* Whether library step sp writes anything: an empty output needs no call and no node. */
static bool lib_has_work(const step *sp) { return fcg_node_numel(sp->k->outs[0]) > 0; }

typedef enum capture_result {
    CAPTURED,
    CAPTURE_NOT_READY, /* the call needs something made first: run it directly this time */
    CAPTURE_FAILED     /* the call cannot be captured: graphs are off for the entry */
} capture_result;

/* Captures library step sp's call for the addresses addr on stream s into a new graph
 * (*out). The stream always leaves capture mode; a failed capture leaves no message. An
 * error is returned only where the context died or the stream could not leave capture. */
static fc_status capture_lib(fc_ctx *ctx, const step *sp, const CUdeviceptr *addr, CUstream s,
                             CUgraph *out, capture_result *res) {
    cuda_state *cs = ctx->be_state;
    *out = NULL;
    *res = CAPTURE_FAILED;
    /* thread-local mode: a call of this thread that a capture cannot hold (an allocation, a
     * synchronisation) fails and invalidates the capture instead of running */
    if (drv.StreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) != CUDA_SUCCESS)
        return FC_OK;
    fc_status st = fcr_lib_capture(ctx, &cs->lib, s, sp->k, addr, addr[sp->k->nleaf]);
    CUgraph g = NULL;
    CUresult r = drv.StreamEndCapture(s, &g);
    CUstreamCaptureStatus now = CU_STREAM_CAPTURE_STATUS_NONE;
    if (r != CUDA_SUCCESS && drv.StreamIsCapturing(s, &now) == CUDA_SUCCESS &&
        now != CU_STREAM_CAPTURE_STATUS_NONE) {
        CUgraph g2 = NULL;
        CUresult r2 = drv.StreamEndCapture(s, &g2);
        if (g2) drv.GraphDestroy(g2);
        if (r2 != CUDA_SUCCESS && drv.StreamIsCapturing(s, &now) == CUDA_SUCCESS &&
            now != CU_STREAM_CAPTURE_STATUS_NONE) {
            if (g) drv.GraphDestroy(g);
            return check(ctx, r2, "cuStreamEndCapture (the stream is left capturing)", __FILE__,
                         __LINE__);
        }
    }
    if (st == FC_OK && r == CUDA_SUCCESS && g) {
        cs->gstats.captures++;
        *out = g;
        *res = CAPTURED;
        return FC_OK;
    }
    if (g) drv.GraphDestroy(g);
    if (cs->dead) return st != FC_OK ? st : check(ctx, r, "cuStreamEndCapture", __FILE__, __LINE__);
    ctx->errmsg[0] = '\0';
    if (st == FC_ERR_UNSUPPORTED && r == CUDA_SUCCESS) *res = CAPTURE_NOT_READY;
    return FC_OK;
}

/* The entry stops trying graphs: its steps run one by one from now on. */
static void graph_give_up(fc_ctx *ctx, plan_entry *e) {
    cuda_state *cs = ctx->be_state;
    graph_drop(ctx, e);
    e->no_graph = true;
    cs->gstats.fallbacks++;
    ctx->errmsg[0] = '\0';
}

/* A capture needed something made first (the steps run directly this time, which makes it);
 * where that keeps happening (more cuFFT plans in turn than the library keeps), graphs are
 * given up. */
static void graph_not_ready(fc_ctx *ctx, plan_entry *e, bool *direct) {
    *direct = true;
    if (++e->unready >= 4) graph_give_up(ctx, e);
}

/* A graph call on a graph with library steps failed with r: a dead context is an error, any
 * other failure turns graphs off for the entry (the steps run directly). */
static fc_status lib_graph_failed(fc_ctx *ctx, plan_entry *e, CUresult r, const char *call,
                                  bool *direct) {
    if (sticky(r)) return check(ctx, r, call, __FILE__, __LINE__);
    graph_give_up(ctx, e);
    *direct = true;
    return FC_OK;
}

/* Builds e's graph for this run's addresses. *direct: the steps run one by one this time
 * (a library call needs something made first, which a direct run makes; or the entry gave
 * graphs up). */
static fc_status graph_build(fc_ctx *ctx, plan_entry *e, fc_array *const *leaves,
                             const CUdeviceptr *bufs, CUstream s, bool *direct) {
    cuda_state *cs = ctx->be_state;
    fc_status st = FC_OK;
    bool lib = false;
    size_t total = 0;
    for (int i = 0; i < e->nstep; i++) {
        total += e->steps[i].nparam;
        lib |= e->steps[i].lib;
    }
    /* graphs built again for more than a quarter of the runs cost more than they save */
    if (e->builds >= 16 && (uint64_t)e->builds * 4 > e->uses) {
        graph_give_up(ctx, e);
        *direct = true;
        return FC_OK;
    }
    e->lib_nodes = false;
    if (!(e->graph_ptrs = fcg_calloc(ctx, (total ? total : 1) * 8)))
        return fcg_error(ctx, FC_ERR_NOMEM, "eval: out of memory");
    e->ngraph_ptrs = total ? total : 1;
    if ((st = CU(ctx, GraphCreate(&e->graph, 0))) != FC_OK) {
        graph_drop(ctx, e);
        return st;
    }
    CUgraphNode prev = NULL;
    size_t off = 0;
    for (int i = 0; i < e->nstep && st == FC_OK; i++) {
        step *sp = &e->steps[i];
        uint64_t *block = e->graph_ptrs + off;
        off += sp->nparam;
        sp->gnode = NULL;
        if (sp->lib) {
            if (!lib_has_work(sp)) continue; /* nothing to compute: no node */
            CUdeviceptr addr[LIB_MAX_ADDR];
            int n = lib_addrs(sp, leaves, bufs, addr);
            capture_result cr;
            CUgraph g;
            if ((st = capture_lib(ctx, sp, addr, s, &g, &cr)) != FC_OK) break;
            if (cr == CAPTURE_FAILED) {
                graph_give_up(ctx, e);
                *direct = true;
                return FC_OK;
            }
            if (cr == CAPTURE_NOT_READY) {
                graph_drop(ctx, e);
                graph_not_ready(ctx, e, direct);
                return FC_OK;
            }
            lib_variant *v = &sp->var[0];
            v->graph = g;
            memcpy(v->addr, addr, (size_t)n * sizeof *addr);
            v->used = e->uses;
            sp->active = 0;
            CUresult r = drv.GraphAddChildGraphNode(&sp->gnode, e->graph, prev ? &prev : NULL,
                                                    prev ? 1 : 0, g);
            if (r != CUDA_SUCCESS) {
                sp->gnode = NULL;
                st = lib_graph_failed(ctx, e, r, "cuGraphAddChildGraphNode", direct);
                if (st == FC_OK) return FC_OK; /* given up: e's graph is gone */
                break;
            }
            prev = sp->gnode;
            e->lib_nodes = true;
            continue;
        }
        if (sp->lc.grid == 0) continue; /* nothing to compute (zero-size): no node */
        memcpy(block, sp->param, sp->nparam * 8);
        bind_step(sp, leaves, bufs, block);
        void *args[] = {block};
        CUDA_KERNEL_NODE_PARAMS_v2 np;
        node_params(cs, sp, args, &np);
        st = CU(ctx, GraphAddKernelNode(&sp->gnode, e->graph, prev ? &prev : NULL,
                                        prev ? 1 : 0, &np));
        prev = sp->gnode;
    }
    if (st == FC_OK) {
        CUresult r = drv.GraphInstantiate(&e->exec, e->graph, 0);
        if (r != CUDA_SUCCESS) {
            e->exec = NULL;
            if (lib) {
                st = lib_graph_failed(ctx, e, r, "cuGraphInstantiateWithFlags", direct);
                if (st == FC_OK) return FC_OK;
            } else {
                st = check(ctx, r, "cuGraphInstantiateWithFlags", __FILE__, __LINE__);
            }
        }
    }
    if (st != FC_OK) {
        graph_drop(ctx, e);
        return st;
    }
    e->graph_stream = s;
    e->graph_epoch = fcr_lib_epoch(cs->lib);
    e->builds++;
    e->unready = 0;
    cs->gstats.builds++;
    return FC_OK;
}

/* Brings e's built graph to this run's addresses and scalars. *rebuild: a library step's
 * capture does not fit its child node (another topology): the graph must be built again.
 * *direct: as graph_build's. */
static fc_status graph_update(fc_ctx *ctx, plan_entry *e, fc_array *const *leaves,
                              const CUdeviceptr *bufs, CUstream s, bool *rebuild, bool *direct) {
    cuda_state *cs = ctx->be_state;
    fc_status st = FC_OK;
    size_t off = 0;
    for (int i = 0; i < e->nstep && st == FC_OK; i++) {
        step *sp = &e->steps[i];
        uint64_t *block = e->graph_ptrs + off;
        off += sp->nparam;
        if (!sp->gnode) continue; /* an empty launch or call: not in the graph */
        if (sp->lib) {
            CUdeviceptr addr[LIB_MAX_ADDR];
            size_t bytes = (size_t)lib_addrs(sp, leaves, bufs, addr) * sizeof *addr;
            if (memcmp(sp->var[sp->active].addr, addr, bytes) == 0) {
                sp->var[sp->active].used = e->uses;
                continue;
            }
            int v = -1;
            for (int q = 0; q < LIB_VARIANTS && v < 0; q++)
                if (sp->var[q].graph && memcmp(sp->var[q].addr, addr, bytes) == 0) v = q;
            if (v < 0) {
                /* a new capture, into an empty slot or the least recently chosen one */
                int slot = -1;
                for (int q = 0; q < LIB_VARIANTS; q++) {
                    if (q == sp->active) continue;
                    if (slot < 0 || !sp->var[q].graph) slot = q;
                    if (!sp->var[q].graph) break;
                    if (sp->var[q].used < sp->var[slot].used) slot = q;
                }
                capture_result cr;
                CUgraph g;
                if ((st = capture_lib(ctx, sp, addr, s, &g, &cr)) != FC_OK) return st;
                if (cr == CAPTURE_FAILED) {
                    graph_give_up(ctx, e);
                    *direct = true;
                    return FC_OK;
                }
                if (cr == CAPTURE_NOT_READY) {
                    graph_not_ready(ctx, e, direct);
                    return FC_OK;
                }
                v = slot;
                if (sp->var[v].graph) drv.GraphDestroy(sp->var[v].graph);
                sp->var[v].graph = g;
                memcpy(sp->var[v].addr, addr, bytes);
            }
            CUresult r = drv.GraphExecChildGraphNodeSetParams(e->exec, sp->gnode, sp->var[v].graph);
            if (r != CUDA_SUCCESS) {
                if (sticky(r))
                    return check(ctx, r, "cuGraphExecChildGraphNodeSetParams", __FILE__, __LINE__);
                *rebuild = true;
                return FC_OK;
            }
            sp->var[v].used = e->uses;
            sp->active = v;
            cs->gstats.switches++;
            continue;
        }
        bool changed = bind_step(sp, leaves, bufs, block);
        size_t nptr = (size_t)sp->nptr, nrest = sp->nparam - nptr;
        if (e->nscalar && memcmp(block + nptr, sp->param + nptr, nrest * 8) != 0) {
            memcpy(block + nptr, sp->param + nptr, nrest * 8); /* new scalar values */
            changed = true;
        }
        if (changed) {
            void *args[] = {block};
            CUDA_KERNEL_NODE_PARAMS_v2 np;
            node_params(cs, sp, args, &np);
            st = CU(ctx, GraphExecKernelNodeSetParams(e->exec, sp->gnode, &np));
        }
    }
    if (st == FC_OK) e->unready = 0;
    return st;
}

/* Runs e's steps as its CUDA graph, built on the first call (e's second use) and brought to
 * this run's addresses afterwards. *direct: the graph cannot serve this run; the caller runs
 * the steps one by one (nothing was queued). */
static fc_status replay_graph(fc_ctx *ctx, plan_entry *e, fc_array *const *leaves,
                              const CUdeviceptr *bufs, CUstream s, bool *direct) {
    cuda_state *cs = ctx->be_state;
    fc_status st = FC_OK;
    *direct = false;
    /* captured library work holds its stream's workspaces, and the library's */
    if (e->exec && e->lib_nodes &&
        (e->graph_stream != s || e->graph_epoch != fcr_lib_epoch(cs->lib)))
        graph_drop(ctx, e);
    if (e->exec) {
        bool rebuild = false;
        st = graph_update(ctx, e, leaves, bufs, s, &rebuild, direct);
        if (st == FC_OK && rebuild) graph_drop(ctx, e);
    }
    if (st == FC_OK && !*direct && !e->exec) st = graph_build(ctx, e, leaves, bufs, s, direct);
    if (st != FC_OK || *direct) return st;
    CUresult r = drv.GraphLaunch(e->exec, s);
    if (r == CUDA_SUCCESS) {
        cs->gstats.launches++;
        return FC_OK;
    }
    /* nothing was queued: a graph holding library work that will not launch is given up */
    if (e->lib_nodes) return lib_graph_failed(ctx, e, r, "cuGraphLaunch", direct);
    return check(ctx, r, "cuGraphLaunch", __FILE__, __LINE__);
}

/* Runs entry e on stream sid for the requested arrays `want` (leaves[j]: the value of leaf
 * j). Queues everything and returns; the outputs take their buffers. On failure nothing gains
 * a value and every buffer is released. */
/* The leaf whose buffer output o takes in this run, or -1: its donor when the donor dies with
 * the evaluation (dies: fcg_dying_nodes by key position; NULL when not computed), holds a
 * device buffer big enough, and no stream but this one may still read that buffer. */
static int donor_now(const plan_entry *e, int o, fc_array *const *leaves, const uint8_t *dies,
                     uint32_t sid) {
    int j = e->donor && dies ? e->donor[o] : -1;
    if (j < 0 || !dies[e->leaf_pos[j]]) return -1;
    const fc_array *v = leaves[j];
    const arg_src *src = &e->out[o];
    bool quiet = v->dev_reader == 0 || v->dev_reader == sid + 1;
    return v->dev && quiet && v->dev_bytes >= e->buf_bytes[src->idx] ? j : -1;
}

/* Whether the entry keeps block p of buffer b for its next run (it is kept already, or b is
 * an intermediate, never a result's buffer, small enough to keep, KEEP_*_MAX). */
static bool keep_block(fc_ctx *ctx, plan_entry *e, int b, CUdeviceptr p, uint32_t sid) {
    if (e->kept && e->kept[b] == p) return true;
    if (e->kept && e->kept[b]) return false; /* (a block of its own this run: not kept) */
    size_t bytes = e->buf_bytes[b];
    if (!e->cacheable || bytes > KEEP_BUFFER_MAX || e->kept_bytes + bytes > KEEP_ENTRY_MAX)
        return false;
    for (int o = 0; o < e->nout; o++)
        if (e->out[o].kind == ARG_BUF && e->out[o].idx == b) return false;
    if (!e->kept && !(e->kept = fcg_calloc(ctx, (size_t)e->nbuf * sizeof *e->kept))) return false;
    e->kept[b] = p;
    e->kept_bytes += bytes;
    e->last_stream = sid; /* the next run on another stream waits for this one */
    return true;
}

static fc_status run_entry(fc_ctx *ctx, plan_entry *e, fc_array *const *leaves,
                           fc_array *const *want, const uint8_t *dies, uint32_t sid) {
    cuda_state *cs = ctx->be_state;
    CUstream s = stream_of(ctx, sid);
    fc_status st = FC_OK;
    /* The entry's scratch is reused in stream order: a run on another stream than the last
     * follows it. (Constants and scratch were complete when the entry was built.) */
    if ((e->nconst || e->kept_bytes) && e->last_stream != sid) {
        st = join(ctx, stream_of(ctx, e->last_stream), s);
        e->last_stream = sid;
    }
    for (int j = 0; j < e->nleaf && st == FC_OK; j++) {
        fc_array *a = leaves[j];
        if (a->dev) st = use_on(ctx, a, sid);
        else if (a->host) st = upload(ctx, a, sid);
        else {
            char sh[200];
            st = fcg_error(ctx, FC_ERR_UNBOUND, "eval: a program input (%s %s) has no data",
                           fc_dtype_name((fc_dtype)a->dtype), fcg_shape_str(sh, a->ndim, a->shape));
        }
    }
    CUdeviceptr small[16], *bufs = small;
    bool taken_small[16], *taken = taken_small;
    int donated_small[16], *donated = donated_small; /* per buffer: the leaf it is, or -1 */
    if (e->nbuf > 16) {
        bufs = fcg_calloc(ctx, (size_t)e->nbuf * sizeof *bufs);
        taken = fcg_calloc(ctx, (size_t)e->nbuf * sizeof *taken);
        donated = fcg_calloc(ctx, (size_t)e->nbuf * sizeof *donated);
        if (!bufs || !taken || !donated) {
            fcg_free(ctx, bufs, (size_t)e->nbuf * sizeof *bufs);
            fcg_free(ctx, taken, (size_t)e->nbuf * sizeof *taken);
            fcg_free(ctx, donated, (size_t)e->nbuf * sizeof *donated);
            return st == FC_OK ? fcg_error(ctx, FC_ERR_NOMEM, "eval: out of memory") : st;
        }
    }
    memset(bufs, 0, (size_t)e->nbuf * sizeof *bufs);
    memset(taken, 0, (size_t)e->nbuf * sizeof *taken);
    for (int b = 0; b < e->nbuf; b++) donated[b] = -1;
    /* A result whose donor dies with this evaluation is written over the donor: the plan
     * reads the donor's elements before (or as) it writes them, and nothing reads it after. */
    for (int o = 0; o < e->nout && st == FC_OK && e->donor; o++) {
        int j = donor_now(e, o, leaves, dies, sid), b = e->out[o].idx;
        if (j < 0 || donated[b] >= 0) continue;
        donated[b] = j;
        bufs[b] = (CUdeviceptr)leaves[j]->dev;
    }
    for (int b = 0; b < e->nbuf && st == FC_OK; b++)
        if (donated[b] < 0 && !(bufs[b] = e->kept ? e->kept[b] : 0))
            st = dev_alloc(ctx, e->buf_bytes[b], s, &bufs[b]);
    for (int i = 0; i < e->nstep && st == FC_OK && e->value_check; i++)
        if (e->steps[i].value_flag) st = CU(ctx, MemsetD32Async(e->steps[i].value_flag, 0, 1, s));
    bool lib = false, work = false;
    for (int i = 0; i < e->nstep; i++) {
        const step *sp = &e->steps[i];
        lib |= sp->lib;
        work |= sp->lib ? lib_has_work(sp) : sp->lc.grid > 0;
    }
    bool ran = st == FC_OK; /* from here a donor's buffer may hold part of a result */
    /* A graph only where a step has work: empty launches and calls are never graph nodes.
     * Library steps join it where every one can be captured. */
    bool direct = true;
    if (st == FC_OK && cs->graphs && e->cacheable && !e->no_graph && (!lib || e->lib_graph) &&
        e->uses >= 2 && work)
        st = replay_graph(ctx, e, leaves, bufs, s, &direct);
    for (int i = 0; i < e->nstep && st == FC_OK && direct; i++)
        st = e->steps[i].lib ? run_lib(ctx, &e->steps[i], leaves, bufs, s)
                             : launch_step(ctx, &e->steps[i], leaves, bufs, s);
    /* A program that can raise a value error waits for its kernels and reads their flags:
     * the error must come back from this call, with no array holding a value. */
    for (int i = 0; i < e->nstep && st == FC_OK && e->value_check; i++) {
        unsigned raised = 0;
        if (!e->steps[i].value_flag) continue;
        if ((st = CU(ctx, MemcpyDtoHAsync(&raised, e->steps[i].value_flag, sizeof raised, s))) ==
            FC_OK)
            st = CU(ctx, StreamSynchronize(s));
        if (st == FC_OK && (raised & 2u)) /* the prelude's FCX_RAISE_INDEX */
            st = fcg_error(ctx, FC_ERR_VALUE, "take or scatter: an index is out of bounds for its axis");
        else if (st == FC_OK && raised)
            st = fcg_error(ctx, FC_ERR_VALUE,
                           "power: integers to negative integer powers are not allowed");
    }
    /* Each requested array takes its buffer; one whose value is elsewhere (a leaf, a buffer
     * another array took, a node the plan made) gets a copy. */
    int given = 0;
    for (int o = 0; o < e->nout && st == FC_OK; o++) {
        fc_array *w = want[o];
        const arg_src *src = &e->out[o];
        size_t bytes = value_bytes(w);
        if (src->kind == ARG_BUF && !taken[src->idx]) {
            taken[src->idx] = true;
            w->dev = bufs[src->idx];
            w->dev_bytes = e->buf_bytes[src->idx] ? e->buf_bytes[src->idx] : 1;
            if (donated[src->idx] >= 0) w->dev_bytes = leaves[donated[src->idx]]->dev_bytes;
        } else {
            CUdeviceptr p;
            if ((st = dev_alloc(ctx, bytes, s, &p)) != FC_OK) break;
            w->dev = p;
            w->dev_bytes = bytes ? bytes : 1;
            if (bytes && src->kind == ARG_NODE && !src->node->dev)
                st = fcg_error(ctx, FC_ERR_BACKEND, "eval: a result has no value (fusec bug)");
            else if (bytes)
                st = CU(ctx, MemcpyDtoDAsync(p, arg_ptr(src, leaves, bufs), bytes, s));
        }
        w->dev_stream = sid;
        w->dev_reader = 0;
        given = o + 1;
    }
    if (st != FC_OK) { /* nothing gains a value on failure */
        for (int o = 0; o < given; o++) {
            fc_array *w = want[o];
            bool from_buf = false;
            for (int b = 0; b < e->nbuf && !from_buf; b++) from_buf = taken[b] && w->dev == bufs[b];
            if (from_buf) w->dev = 0, w->dev_bytes = 0;
            else if (w->dev) free_value(ctx, w);
        }
        memset(taken, 0, (size_t)e->nbuf * sizeof *taken);
    }
    /* A donor's buffer now belongs to its result (the donor is freed without it once the
     * results drop their history). After a failed run (a value error) it may hold part of the
     * result, so the donor loses its device value: a host copy, where it has one, is still
     * its value; otherwise evaluating it again says it has no data, never reads the wreck. */
    for (int b = 0; b < e->nbuf; b++)
        if (donated[b] >= 0 && (st == FC_OK || ran)) {
            fc_array *v = leaves[donated[b]];
            if (st != FC_OK) pool_free(ctx, bufs[b], v->dev_bytes, s);
            else cs->reused++;
            v->dev = 0, v->dev_bytes = 0, v->dev_stream = 0, v->dev_reader = 0;
        }
    for (int b = 0; b < e->nbuf; b++)
        if (bufs[b] && !taken[b] && donated[b] < 0 && !keep_block(ctx, e, b, bufs[b], sid))
            pool_free(ctx, bufs[b], e->buf_bytes[b], s);
    if (bufs != small) fcg_free(ctx, bufs, (size_t)e->nbuf * sizeof *bufs);
    if (taken != taken_small) fcg_free(ctx, taken, (size_t)e->nbuf * sizeof *taken);
    if (donated != donated_small) fcg_free(ctx, donated, (size_t)e->nbuf * sizeof *donated);
    return st;
}

/* fcg_dying_nodes over the key's walk, in the state's scratch (grown, never shrunk). */
static fc_status dying_nodes(fc_ctx *ctx, fc_array *const *arrays, int n, fc_array *const *order,
                             size_t count, const uint8_t **out) {
    cuda_state *cs = ctx->be_state;
    if (count > cs->dying_cap) {
        size_t cap = count < 64 ? 64 : count * 2;
        uint32_t *d = fcg_malloc(ctx, cap * sizeof *d);
        uint8_t *x = fcg_malloc(ctx, cap);
        if (!d || !x) {
            fcg_free(ctx, d, cap * sizeof *d);
            fcg_free(ctx, x, cap);
            return fcg_error(ctx, FC_ERR_NOMEM, "eval: out of memory");
        }
        fcg_free(ctx, cs->dropped, cs->dying_cap * sizeof *cs->dropped);
        fcg_free(ctx, cs->dies, cs->dying_cap);
        cs->dropped = d, cs->dies = x, cs->dying_cap = cap;
    }
    fcg_dying_nodes(arrays, n, order, count, cs->dropped, cs->dies);
    *out = cs->dies;
    return FC_OK;
}

/* FUSEC_LOG=timing: one line an evaluation, the host time of each phase up to the return of
 * the last launch (the GPU's work is not waited for): t[0] start, t[1] plan key and lookup
 * done, t[2] compile driver done (a miss), t[3] entry built (module loads, constants). */
static void log_timing(cuda_state *cs, const char *what, const double *t, const fck_result *res) {
    const double end = fcg_now_s(), ms = 1e3;
    if (!res) {
        fprintf(stderr, "fusec timing: %s: key %.3f ms, run %.3f ms (of it %d allocations "
                "%.3f ms); total %.3f ms\n", what, (t[1] - t[0]) * ms, (end - t[1]) * ms,
                cs->alloc_calls, cs->alloc_s * ms, (end - t[0]) * ms);
        return;
    }
    static const char *const entry_word[] = {"not looked up", "used", "missing", "stale"};
    int pe = (int)res->plan_entry;
    fprintf(stderr, "fusec timing: %s: key %.3f ms, compile %.3f ms (%d kernels: %d cached, %d "
            "compiled; plan entry %s), load %.3f ms, run %.3f ms (of it %d allocations %.3f ms); "
            "total %.3f ms\n", what, (t[1] - t[0]) * ms, (t[2] - t[1]) * ms, res->nkernel,
            res->cached, res->compiled, pe >= 0 && pe < 4 ? entry_word[pe] : "?",
            (t[3] - t[2]) * ms, (end - t[3]) * ms, cs->alloc_calls, cs->alloc_s * ms,
            (end - t[0]) * ms);
}

static fc_status fcr_eval(fc_ctx *ctx, fc_array *const *arrays, int n, fc_stream *stream) {
    cuda_state *cs = ctx->be_state;
    fc_status st = alive(ctx);
    if (st != FC_OK) return st;
    make_current(cs);
    uint32_t sid = stream_id(stream);
    double t[4] = {cs->log_timing ? fcg_now_s() : 0, 0, 0, 0};
    /* The plan cache's key: the graph cut at nodes that hold values. */
    fc_hash key;
    fc_array *const *order;
    size_t count;
    if ((st = fcg_plan_key(ctx, arrays, n, &key, &order, &count)) != FC_OK) return st;
    plan_entry *e = cache_find(cs, &key);
    if (cs->log_timing) {
        t[1] = t[2] = fcg_now_s();
        cs->alloc_s = 0;
        cs->alloc_calls = 0;
    }
    /* Which values die with this evaluation, where a result may take a buffer: before the
     * compile driver's plan takes references of its own. */
    const uint8_t *dies = NULL;
    if ((!e || e->donor) && (st = dying_nodes(ctx, arrays, n, order, count, &dies)) != FC_OK)
        return st;
    if (e) {
        fc_array *small[16], **leaves = small;
        if (e->nleaf > 16 && !(leaves = fcg_malloc(ctx, (size_t)e->nleaf * sizeof *leaves)))
            return fcg_error(ctx, FC_ERR_NOMEM, "eval: out of memory");
        for (int j = 0; j < e->nleaf; j++) leaves[j] = order[e->leaf_pos[j]];
        refresh_scalars(e, order);
        e->uses++;
        e->last_use = ++cs->clock;
        st = run_entry(ctx, e, leaves, arrays, dies, sid);
        if (leaves != small) fcg_free(ctx, leaves, (size_t)e->nleaf * sizeof *leaves);
        if (cs->log_timing) log_timing(cs, "hit", t, NULL);
        return st;
    }
    /* A miss: the compile driver (passes, codegen, kernel cache or NVRTC), module loads; then
     * the same path. */
    leaf_map lm, cm;
    if ((st = leaf_map_make(ctx, order, count, false, &lm)) != FC_OK) return st;
    if ((st = leaf_map_make(ctx, order, count, true, &cm)) != FC_OK) {
        leaf_map_free(ctx, &lm, count);
        return st;
    }
    const char *arch = cs->arch;
    fck_options co = fck_options_default();
    co.stage = FCK_BINARY;
    co.archs = &arch;
    co.narch = 1;
    co.plan_key = &key; /* names the persisted plan entry: a new process skips codegen */
    fck_result *res = NULL;
    st = fck_compile(ctx, arrays, n, &co, &res);
    if (cs->log_timing) t[2] = fcg_now_s();
    if (st == FC_OK) {
        st = entry_build(ctx, res, &lm, &cm, &e);
        if (cs->log_timing) {
            t[3] = fcg_now_s();
            cs->alloc_s = 0; /* the entry's constants and scratch: counted in "build" */
            cs->alloc_calls = 0;
        }
        if (st == FC_OK) {
            e->key = key;
            e->uses = 1;
            e->last_use = ++cs->clock;
            st = run_entry(ctx, e, e->leaf_node, arrays, dies, sid);
            if (cs->log_timing) log_timing(cs, "miss", t, res);
            /* Library steps now read their copies of the plan's nodes; one that fell back to
             * the host, or has no copy, needs the live plan: such entries run once and go. */
            for (int i = 0; i < e->nstep && st == FC_OK; i++)
                if (e->steps[i].lib) {
                    step *sp = &e->steps[i];
                    if (sp->on_host || !sp->copy.n) e->cacheable = false;
                    sp->k = sp->copy.n ? &sp->copy.k : NULL;
                }
            /* A graph may hold the library steps where each call only queues work. */
            e->lib_graph = true;
            for (int i = 0; i < e->nstep && st == FC_OK && e->cacheable; i++)
                if (e->steps[i].lib && !fcr_lib_capturable(e->steps[i].k)) e->lib_graph = false;
            if (st == FC_OK && e->cacheable) {
                fcg_free(ctx, e->leaf_node, (size_t)e->nleaf * sizeof *e->leaf_node);
                e->leaf_node = NULL;
                cache_insert(ctx, e);
            } else {
                entry_free(ctx, e);
            }
        }
    }
    fck_result_free(res); /* the plan, after the run that may still point into it */
    leaf_map_free(ctx, &lm, count);
    leaf_map_free(ctx, &cm, count);
    return st;
}

/* ---- for tests -------------------------------------------------------------------------------- */

void fcr_plan_cache_stats(fc_ctx *ctx, size_t *entries, uint64_t *replays) {
    cuda_state *cs = ctx->be_state;
    *entries = cs ? cs->nplans : 0;
    *replays = 0;
    if (!cs) return;
    for (int b = 0; b < PLAN_BUCKETS; b++)
        for (plan_entry *e = cs->plans[b]; e; e = e->next) *replays += e->uses - 1;
}

void fcr_graph_stats_get(fc_ctx *ctx, fcr_graph_stats *out) {
    const cuda_state *cs = ctx->be == &fcr_backend ? ctx->be_state : NULL;
    memset(out, 0, sizeof *out);
    if (cs) *out = cs->gstats;
}

/* Launches a kernel that stores through a null pointer: a sticky error, as a real fault in a
 * generated kernel would give. Tests prove with it that a dead context fails cleanly. */
fc_status fcr_test_fault(fc_ctx *ctx) {
    cuda_state *cs = ctx->be_state;
    if (!cs) return fcg_error(ctx, FC_ERR_BACKEND, "test_fault: not a CUDA context");
    static const char src[] =
        "extern \"C\" __global__ void fusec_fault(int *p) { p[threadIdx.x] = 1; }\n";
    fcn_cubin cb;
    fc_status st = fcn_compile(ctx, src, "fault.cu", cs->arch, 0, NULL, 0, &cb);
    if (st != FC_OK) {
        fcg_error(ctx, st, "test_fault: %s", cb.message ? cb.message : "compile failed");
        fcn_cubin_free(ctx, &cb);
        return st;
    }
    make_current(cs);
    CUmodule mod;
    CUfunction fn;
    st = CU(ctx, ModuleLoadData(&mod, cb.data));
    fcn_cubin_free(ctx, &cb);
    if (st != FC_OK) return st;
    if ((st = CU(ctx, ModuleGetFunction(&fn, mod, "fusec_fault"))) == FC_OK) {
        void *null_ptr = NULL;
        void *args[] = {&null_ptr};
        st = CU(ctx, LaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, cs->stream, args, NULL));
        if (st == FC_OK) st = CU(ctx, StreamSynchronize(cs->stream));
    }
    if (!cs->dead) drv.ModuleUnload(mod);
    return st;
}

/* ---- raw modules (api/raw.c) ------------------------------------------------------------ */

static const char *fcr_arch(const fc_ctx *ctx) {
    const cuda_state *cs = ctx->be_state;
    return cs->arch;
}

/* ---- driver services for the library kernels (cuda_lib.h) ------------------------------- */

fc_status fcr_lib_alloc(fc_ctx *ctx, size_t bytes, CUstream s, CUdeviceptr *out) {
    return dev_alloc(ctx, bytes, s, out);
}

void fcr_lib_free(fc_ctx *ctx, CUdeviceptr p, size_t bytes, CUstream s) {
    if (p) pool_free(ctx, p, bytes, s);
}

fc_status fcr_lib_copy(fc_ctx *ctx, CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream s) {
    return bytes ? CU(ctx, MemcpyDtoDAsync(dst, src, bytes, s)) : FC_OK;
}

fc_status fcr_lib_zero(fc_ctx *ctx, CUdeviceptr dst, size_t words, CUstream s) {
    return words ? CU(ctx, MemsetD32Async(dst, 0, words, s)) : FC_OK;
}

fc_status fcr_lib_download(fc_ctx *ctx, void *dst, CUdeviceptr src, size_t bytes, CUstream s) {
    fc_status st = bytes ? CU(ctx, MemcpyDtoHAsync(dst, src, bytes, s)) : FC_OK;
    return st == FC_OK ? CU(ctx, StreamSynchronize(s)) : st;
}

fc_status fcr_lib_upload(fc_ctx *ctx, CUdeviceptr dst, const void *src, size_t bytes, CUstream s) {
    fc_status st = bytes ? CU(ctx, MemcpyHtoDAsync(dst, src, bytes, s)) : FC_OK;
    return st == FC_OK ? CU(ctx, StreamSynchronize(s)) : st; /* src may go once it returns */
}

fc_status fcr_lib_module(fc_ctx *ctx, const void *cubin, CUmodule *out) {
    return CU(ctx, ModuleLoadData(out, cubin));
}

void fcr_lib_module_unload(fc_ctx *ctx, CUmodule m) {
    const cuda_state *cs = ctx->be_state;
    if (m && !cs->dead) drv.ModuleUnload(m);
}

fc_status fcr_lib_function(fc_ctx *ctx, CUmodule m, const char *name, CUfunction *out) {
    return CU(ctx, ModuleGetFunction(out, m, name));
}

fc_status fcr_lib_prefer_shared(fc_ctx *ctx, CUfunction f) {
    return CU(ctx, FuncSetAttribute(f, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT,
                                    CU_SHAREDMEM_CARVEOUT_MAX_SHARED));
}

fc_status fcr_lib_occupancy(fc_ctx *ctx, CUfunction f, int block, int *blocks_per_sm) {
    return CU(ctx, OccupancyMaxActiveBlocksPerMultiprocessor(blocks_per_sm, f, block, 0));
}

fc_status fcr_lib_launch(fc_ctx *ctx, CUfunction f, unsigned grid, unsigned block, CUstream s,
                         void **args) {
    return CU(ctx, LaunchKernel(f, grid, 1, 1, block, 1, 1, 0, s, args, NULL));
}

void fcr_lib_device(fc_ctx *ctx, const char **arch, int *sm_count) {
    const cuda_state *cs = ctx->be_state;
    *arch = cs->arch;
    *sm_count = cs->sm_count;
}

static fc_status fcr_module_load(fc_ctx *ctx, const void *cubin, size_t size, void **module) {
    (void)size;
    cuda_state *cs = ctx->be_state;
    fc_status st = alive(ctx);
    if (st != FC_OK) return st;
    make_current(cs);
    CUmodule m = NULL;
    if ((st = CU(ctx, ModuleLoadData(&m, cubin))) != FC_OK) return st;
    *module = m;
    return FC_OK;
}

static void fcr_module_unload(fc_ctx *ctx, void *module) {
    cuda_state *cs = ctx->be_state;
    if (!module || cs->dead) return;
    make_current(cs);
    drv.ModuleUnload((CUmodule)module);
}

static fc_status fcr_raw_launch(fc_ctx *ctx, void *module, const char *name,
                                const unsigned grid[3], const unsigned block[3],
                                size_t shared_bytes, fc_stream *stream, int nargs,
                                const fcb_raw_arg *args) {
    cuda_state *cs = ctx->be_state;
    fc_status st = alive(ctx);
    if (st != FC_OK) return st;
    make_current(cs);
    CUfunction fn;
    CUresult r = drv.ModuleGetFunction(&fn, (CUmodule)module, name);
    if (r == CUDA_ERROR_NOT_FOUND)
        return fcg_error(ctx, FC_ERR_INVALID, "raw kernel '%s': the module has no such kernel "
                         "(extern \"C\" kernels by name, templates through name expressions)", name);
    if ((st = check(ctx, r, "cuModuleGetFunction", __FILE__, __LINE__)) != FC_OK) return st;
    uint32_t sid = stream_id(stream);
    CUstream s = stream_of(ctx, sid);
    void *small[32], **params = small;
    if (nargs > 32 && !(params = fcg_malloc(ctx, (size_t)nargs * sizeof *params)))
        return fcg_error(ctx, FC_ERR_NOMEM, "raw kernel '%s': out of memory", name);
    int made = 0; /* WRITE values given so far: freed again on failure */
    for (int i = 0; i < nargs && st == FC_OK; i++) {
        const fcb_raw_arg *a = &args[i];
        switch (a->kind) {
        case FCB_RAW_READ:
            /* a value the host holds (data given with fc_from_host) goes up first */
            st = a->array->dev ? use_on(ctx, a->array, sid) : upload(ctx, a->array, sid);
            params[i] = &a->array->dev;
            break;
        case FCB_RAW_WRITE: {
            /* a copy of src's value: the kernel writes the copy, src keeps its value */
            fc_array *src = (fc_array *)a->src;
            size_t bytes = value_bytes(src);
            CUdeviceptr p = 0;
            st = src->dev ? use_on(ctx, src, sid) : upload(ctx, src, sid);
            if (st == FC_OK &&
                (st = dev_alloc(ctx, bytes, s, &p)) == FC_OK && bytes &&
                (st = CU(ctx, MemcpyDtoDAsync(p, (CUdeviceptr)src->dev, bytes, s))) != FC_OK)
                pool_free(ctx, p, bytes, s);
            if (st == FC_OK) {
                a->array->dev = p;
                a->array->dev_bytes = bytes ? bytes : 1;
                a->array->dev_stream = sid;
                a->array->dev_reader = 0;
                made = i + 1;
            }
            params[i] = &a->array->dev;
            break;
        }
        case FCB_RAW_BYTES: params[i] = (void *)a->bytes; break;
        }
    }
    if (st == FC_OK)
        st = CU(ctx, LaunchKernel(fn, grid[0], grid[1], grid[2], block[0], block[1], block[2],
                                  (unsigned)shared_bytes, s, params, NULL));
    if (st != FC_OK)
        for (int i = 0; i < made; i++)
            if (args[i].kind == FCB_RAW_WRITE && args[i].array->dev) free_value(ctx, args[i].array);
    if (params != small) fcg_free(ctx, params, (size_t)nargs * sizeof *params);
    return st;
}

/* ---- the backend table ---------------------------------------------------------------------- */

static int cuda_device(const fc_ctx *ctx) { return ctx->device; }

static const fcb_backend fcr_backend = {
    .name = "cuda",
    .kind = FC_BACKEND_CUDA,
    .destroy = destroy,
    .device = cuda_device,
    .eval = fcr_eval,
    .download = fcr_download,
    .free_value = free_value,
    .export_value = fcr_export_value, .import_value = fcr_import_value,
    .take_value = fcr_take_value, .drop_value = fcr_drop_value, .stream_wrap = fcr_stream_wrap,
    .stream_handle = fcr_stream_cu, .stream_wait_value = fcr_stream_wait_value,
    .write = fcr_write,
    .read_async = fcr_read_async,
    .copy_from = fcr_copy_between,
    .alloc_value = fcr_alloc_value,
    .query = fcr_query,
    .stream_create = fcr_stream_create,
    .stream_destroy = fcr_stream_destroy,
    .stream_sync = fcr_stream_sync,
    .sync = fcr_ctx_sync,
    .event_create = fcr_event_create,
    .event_destroy = fcr_event_destroy,
    .event_record = fcr_event_record,
    .stream_wait_event = fcr_stream_wait_event,
    .event_sync = fcr_event_sync,
    .event_elapsed = fcr_event_elapsed,
    .memory_stats = fcr_memory_stats,
    .memory_reset_peak = fcr_memory_reset_peak,
    .memory_trim = fcr_memory_trim,
    .host_alloc = fcr_host_alloc,
    .host_free = fcr_host_free,
    .copy_bandwidth = fcr_copy_bandwidth,
    .arch = fcr_arch,
    .module_load = fcr_module_load,
    .module_unload = fcr_module_unload,
    .raw_launch = fcr_raw_launch,
};
