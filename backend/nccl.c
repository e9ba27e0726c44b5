/*
 * backend/nccl.c - NCCL collectives between the shards of a sharded context (backend/mesh.c).
 *
 * libnccl is loaded with dlopen on first use, like libcuda and the other CUDA libraries, so a
 * binary starts where it is missing (the sharded context then moves data through host
 * memory). One process drives every device from one thread, so communicators come from
 * ncclCommInitAll and every collective is a group (ncclGroupStart ... ncclGroupEnd) of one
 * call per device, queued on each shard context's own stream: the work of a shard before the
 * collective is ordered before it, and the work after it waits for it, with no host wait.
 */
#include "backend.h"

#include <cuda.h>
#include <nccl.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct {
    int state; /* 0 untried, 1 loaded, -1 failed */
    char error[320];
    __typeof__(ncclCommInitAll) *CommInitAll;
    __typeof__(ncclCommDestroy) *CommDestroy;
    __typeof__(ncclCommAbort) *CommAbort;
    __typeof__(ncclAllReduce) *AllReduce;
    __typeof__(ncclBroadcast) *Broadcast;
    __typeof__(ncclGroupStart) *GroupStart;
    __typeof__(ncclGroupEnd) *GroupEnd;
    __typeof__(ncclGetErrorString) *GetErrorString;
} nccl;

struct fcn_comm {
    int n;
    ncclComm_t comm[];
};

/* Not thread-safe on first use, like the other loaders. */
static bool load_nccl(void) {
    if (nccl.state) return nccl.state > 0;
    nccl.state = -1;
    /* FUSEC_NCCL_LIBRARY names the library where the loader's path does not find it (the
     * NCCL of a Python wheel, for instance). */
    const char *env = getenv("FUSEC_NCCL_LIBRARY");
    const char *name = env && *env ? env : "libnccl.so.2";
    void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *why = dlerror();
        snprintf(nccl.error, sizeof nccl.error, "%.100s could not be loaded (%.120s); "
                 "FUSEC_NCCL_LIBRARY may name it", name, why ? why : "not found");
        return false;
    }
    struct {
        void **field;
        const char *name;
    } syms[] = {
        {(void **)&nccl.CommInitAll, "ncclCommInitAll"},
        {(void **)&nccl.CommDestroy, "ncclCommDestroy"},
        {(void **)&nccl.CommAbort, "ncclCommAbort"},
        {(void **)&nccl.AllReduce, "ncclAllReduce"},
        {(void **)&nccl.Broadcast, "ncclBroadcast"},
        {(void **)&nccl.GroupStart, "ncclGroupStart"},
        {(void **)&nccl.GroupEnd, "ncclGroupEnd"},
        {(void **)&nccl.GetErrorString, "ncclGetErrorString"},
    };
    for (size_t i = 0; i < sizeof syms / sizeof *syms; i++) {
        if (!(*syms[i].field = dlsym(h, syms[i].name))) {
            snprintf(nccl.error, sizeof nccl.error, "%.100s lacks %s", name, syms[i].name);
            dlclose(h);
            return false;
        }
    }
    nccl.state = 1; /* the handle stays open for the process's lifetime */
    return true;
}

static fc_status nccl_error(fc_ctx *ctx, ncclResult_t r, const char *call) {
    return fcg_error(ctx, FC_ERR_BACKEND, "%s failed: %s (%d)", call,
                     nccl.GetErrorString ? nccl.GetErrorString(r) : "NCCL error", (int)r);
}

fcn_comm *fcn_comm_create(fc_ctx *const *ctxs, int n, char *why, size_t why_size) {
    if (!load_nccl()) {
        snprintf(why, why_size, "%s", nccl.error);
        return NULL;
    }
    int devs[64];
    if (n > 64) {
        snprintf(why, why_size, "more than 64 shards");
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        devs[i] = fc_ctx_device(ctxs[i]);
        for (int j = 0; j < i; j++)
            if (devs[j] == devs[i]) {
                snprintf(why, why_size, "device %d holds several shards (NCCL needs one device "
                         "a rank)", devs[i]);
                return NULL;
            }
    }
    fcn_comm *c = calloc(1, sizeof *c + (size_t)n * sizeof(ncclComm_t));
    if (!c) {
        snprintf(why, why_size, "out of memory");
        return NULL;
    }
    c->n = n;
    ncclResult_t r = nccl.CommInitAll(c->comm, n, devs);
    fcr_stream_handle(ctxs[0]); /* NCCL set devices as it went: fusec's context current again */
    if (r != ncclSuccess) {
        snprintf(why, why_size, "ncclCommInitAll failed: %s", nccl.GetErrorString(r));
        free(c);
        return NULL;
    }
    return c;
}

bool fcn_reduce_dtype_ok(fc_dtype t) {
    switch (t) {
    case FC_I8: case FC_U8: case FC_I32: case FC_U32: case FC_I64: case FC_U64:
    case FC_F16: case FC_BF16: case FC_F32: case FC_F64:
        return true;
    default:
        return false;
    }
}

static ncclDataType_t nccl_type(fc_dtype t) {
    switch (t) {
    case FC_I8: return ncclInt8;
    case FC_U8: return ncclUint8;
    case FC_I32: return ncclInt32;
    case FC_U32: return ncclUint32;
    case FC_I64: return ncclInt64;
    case FC_U64: return ncclUint64;
    case FC_F16: return ncclFloat16;
    case FC_BF16: return ncclBfloat16;
    case FC_F32: return ncclFloat32;
    default: return ncclFloat64;
    }
}

fc_status fcn_allreduce(fcn_comm *c, fc_ctx *const *ctxs, const fcn_job *jobs, int njobs) {
    static const ncclRedOp_t ops[] = {[FCN_SUM] = ncclSum, [FCN_PROD] = ncclProd,
                                      [FCN_MAX] = ncclMax, [FCN_MIN] = ncclMin};
    ncclResult_t r = nccl.GroupStart();
    for (int j = 0; j < njobs; j++)
        for (int i = 0; i < c->n && r == ncclSuccess; i++) {
            CUstream s = fcr_stream_handle(ctxs[i]);
            r = nccl.AllReduce((const void *)(uintptr_t)jobs[j].send[i],
                               (void *)(uintptr_t)jobs[j].recv[i], jobs[j].count,
                               nccl_type(jobs[j].dtype), ops[jobs[j].op], c->comm[i],
                               (cudaStream_t)s);
        }
    ncclResult_t end = nccl.GroupEnd();
    fcr_stream_handle(ctxs[0]);
    if (r != ncclSuccess) return nccl_error(ctxs[0], r, "ncclAllReduce");
    if (end != ncclSuccess) return nccl_error(ctxs[0], end, "ncclGroupEnd");
    return FC_OK;
}

fc_status fcn_allgather(fcn_comm *c, fc_ctx *const *ctxs, const uint64_t *send,
                        const size_t *bytes, const uint64_t *recv) {
    /* Parts differ in size (E % N), which ncclAllGather does not take: one broadcast from
     * each root, all in one group, is the same traffic. */
    ncclResult_t r = nccl.GroupStart();
    size_t offset = 0;
    for (int root = 0; root < c->n && r == ncclSuccess; root++) {
        if (bytes[root])
            for (int i = 0; i < c->n && r == ncclSuccess; i++) {
                CUstream s = fcr_stream_handle(ctxs[i]);
                r = nccl.Broadcast((const void *)(uintptr_t)send[root],
                                   (void *)(uintptr_t)(recv[i] + offset), bytes[root], ncclUint8,
                                   root, c->comm[i], (cudaStream_t)s);
            }
        offset += bytes[root];
    }
    ncclResult_t end = nccl.GroupEnd();
    fcr_stream_handle(ctxs[0]);
    if (r != ncclSuccess) return nccl_error(ctxs[0], r, "ncclBroadcast");
    if (end != ncclSuccess) return nccl_error(ctxs[0], end, "ncclGroupEnd");
    return FC_OK;
}

void fcn_comm_abort(fcn_comm *c) {
    if (!c) return;
    for (int i = 0; i < c->n; i++)
        if (c->comm[i]) nccl.CommAbort(c->comm[i]);
    memset(c->comm, 0, (size_t)c->n * sizeof *c->comm);
}

void fcn_comm_destroy(fcn_comm *c) {
    if (!c) return;
    for (int i = 0; i < c->n; i++)
        if (c->comm[i]) nccl.CommDestroy(c->comm[i]);
    free(c);
}
