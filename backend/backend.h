/*
 * backend/backend.h - internal: the interface every backend implements, and how a context gets
 * one. Prefix fcb_.
 *
 * A backend is a table of functions (ggml's struct ggml_backend_i is the model) plus a state
 * the context holds for it. The public calls that are not op constructors (evaluation,
 * transfers, streams, events, memory figures) dispatch through the table and never ask which
 * backend it is: another backend (a second GPU kind, a sharded multi-GPU one) is a new table,
 * not a new set of branches.
 *
 * Values: the host backend keeps an array's value in a->host. Any other backend keeps its own
 * in a->dev (an opaque handle: a CUdeviceptr on the CUDA backend) with a->dev_bytes,
 * a->dev_stream and a->dev_reader, which only that backend reads or writes; a->host is then
 * a host copy filled by `download` on demand. The graph and the passes only ask whether an
 * array has a value (fcg_has_value).
 *
 * Streams and events: the public fc_stream / fc_event records (graph.h) are made and listed
 * by api/api.c; a backend attaches its handle (`cu`) in stream_create / event_create.
 */
#ifndef FUSEC_BACKEND_H
#define FUSEC_BACKEND_H

#include "graph.h"

/* One argument of a raw kernel's launch (api/raw.c). */
typedef enum fcb_raw_kind {
    FCB_RAW_READ,  /* array: its value's device pointer (it holds a value of this backend) */
    FCB_RAW_WRITE, /* array: a DATA node without a value; the backend gives it a copy of
                      src's value, and the kernel gets that copy's pointer */
    FCB_RAW_BYTES  /* bytes[0..size): a scalar or a struct, by value */
} fcb_raw_kind;

typedef struct fcb_raw_arg {
    fcb_raw_kind kind;
    fc_array *array;
    const fc_array *src;
    const void *bytes;
    size_t size;
} fcb_raw_arg;

/* A value taken out of its array (take_value), on its way to drop_value: the fields of
 * fc_array that hold a value, as the backend that made it set them. */
typedef struct fcb_value {
    void *host;
    size_t host_bytes;
    uint64_t dev;
    size_t dev_bytes;
    uint32_t dev_stream, dev_reader;
} fcb_value;

struct fcb_backend {
    const char *name;  /* "host", "cuda", "sharded" */
    fc_backend kind;
    /* The value can change behind a->host (a sharded array's parts are arrays of their own,
     * which their holders may write): reads always go through read_async or download, and
     * download refreshes a->host even where it exists. */
    bool host_copy_volatile;

    /* Releases the backend's state (ctx->be_state); the context's arrays are already gone. */
    void (*destroy)(fc_ctx *ctx);
    /* The device ordinal the context runs on, or -1 for none. */
    int (*device)(const fc_ctx *ctx);

    /* Computes arrays[0..n) (distinct, none holding a value) on `stream` (NULL: the
     * context's own). May return before the work is done; a later read waits for it. On
     * failure no array gains a value and the context's message says why. */
    fc_status (*eval)(fc_ctx *ctx, fc_array *const *arrays, int n, fc_stream *stream);
    /* Fills a->host (allocated with fcg_malloc) from the backend's value of a, waiting for the
     * work that writes it. */
    fc_status (*download)(fc_ctx *ctx, fc_array *a);
    /* Frees the backend's value of a (a->dev); called when a dies or its value is replaced. */
    void (*free_value)(fc_ctx *ctx, fc_array *a);
    /* Copies `bytes` of src into a's value at `offset` (bytes), ordered on `stream`. a holds a
     * value of this backend already (api.c evaluates it first). */
    fc_status (*write)(fc_ctx *ctx, fc_array *a, const void *src, size_t offset, size_t bytes,
                       fc_stream *stream);
    /* Copies `bytes` of a's value at `offset` into dst, ordered on `stream`; dst is complete
     * once the stream is synchronised. */
    fc_status (*read_async)(fc_ctx *ctx, fc_array *a, void *dst, size_t offset, size_t bytes,
                            fc_stream *stream);
    /* dst (a DATA node of this context, of src's dtype and shape) takes a copy of src's
     * value, src being an evaluated array of another context of the same backend kind.
     * FC_ERR_UNSUPPORTED: the caller goes through the host instead. */
    fc_status (*copy_from)(fc_ctx *ctx, fc_array *dst, fc_ctx *src_ctx, const fc_array *src);
    /* Gives a (a DATA node of this context without a value) a value of its size whose bytes
     * are undefined, on the context's own stream: a buffer for a collective to fill. */
    fc_status (*alloc_value)(fc_ctx *ctx, fc_array *a);
    /* *idle = whether the work queued on the context's own stream is done, without waiting;
     * an error the work raised is returned (a sharded context polls its shards with this, so
     * that no wait on one device blocks the report of another's failure). */
    fc_status (*query)(fc_ctx *ctx, bool *idle);

    fc_status (*stream_create)(fc_ctx *ctx, fc_stream *s);
    void (*stream_destroy)(fc_ctx *ctx, fc_stream *s);
    fc_status (*stream_sync)(fc_ctx *ctx, fc_stream *s); /* NULL: the context's own */
    fc_status (*sync)(fc_ctx *ctx);                      /* every stream of the context */
    fc_status (*event_create)(fc_ctx *ctx, fc_event *e);
    void (*event_destroy)(fc_ctx *ctx, fc_event *e);
    fc_status (*event_record)(fc_ctx *ctx, fc_event *e, fc_stream *s);
    fc_status (*stream_wait_event)(fc_ctx *ctx, fc_stream *s, fc_event *e);
    fc_status (*event_sync)(fc_ctx *ctx, fc_event *e);
    fc_status (*event_elapsed)(fc_ctx *ctx, fc_event *start, fc_event *end, float *ms);

    /* The backend's figures (in_use, peak, cached, limit, pinned); api.c adds the host's. */
    void (*memory_stats)(fc_ctx *ctx, fc_memory_stats *out);
    void (*memory_reset_peak)(fc_ctx *ctx);
    fc_status (*memory_trim)(fc_ctx *ctx);
    /* Host memory suited to transfers (pinned on a GPU); NULL when out of memory. */
    void *(*host_alloc)(fc_ctx *ctx, size_t bytes);
    void (*host_free)(fc_ctx *ctx, void *p);
    /* Device-to-device copy bandwidth in GB/s (read + write bytes); FC_ERR_BACKEND where the
     * backend has no device. */
    fc_status (*copy_bandwidth)(fc_ctx *ctx, size_t bytes, int runs, double *gbps);

    /* Interop (api/interop.c): memory and streams shared with code outside fusec.
     * export_value makes a's value (a holds one) this backend's memory, uploading a host
     * value; orders `s` after the work that writes it (NULL: waits for that work); marks it
     * as read by streams fusec does not see, so that freeing it waits for the whole device;
     * and gives its address and the CUstream that wrote it (NULL on the host). */
    fc_status (*export_value)(fc_ctx *ctx, fc_array *a, fc_stream *s, void **ptr,
                              void **stream);
    /* a (a DATA node without a value) takes `ptr`, memory of this backend holding its
     * elements row-major, as its value, written by the work queued on `s` so far (NULL:
     * the context's own stream). */
    fc_status (*import_value)(fc_ctx *ctx, fc_array *a, void *ptr, fc_stream *s);
    /* Moves a's backend value (not a host copy of it) into *v: a keeps none. */
    void (*take_value)(fc_ctx *ctx, fc_array *a, fcb_value *v);
    /* A value taken from an array goes: its memory is freed (own) or, memory fusec does not
     * own (external), only waited for: fusec's work that reads it is complete on return. */
    void (*drop_value)(fc_ctx *ctx, fcb_value *v, bool external);
    /* s takes the caller's CUstream `cu` (fc_stream_wrap); FC_ERR_INVALID when it is not
     * one of the context's device. stream_destroy leaves such a stream alive. */
    fc_status (*stream_wrap)(fc_ctx *ctx, fc_stream *s, void *cu);
    /* The CUstream of s (NULL: the context's own); FC_ERR_BACKEND where there is none. */
    fc_status (*stream_handle)(fc_ctx *ctx, const fc_stream *s, void **cu);
    /* Orders later work on s after the work that writes a's value. */
    fc_status (*stream_wait_value)(fc_ctx *ctx, fc_stream *s, fc_array *a);

    /* Raw modules (api/raw.c). The device's arch for NVRTC ("sm_90"), or NULL where there is
     * no device (the rest then return FC_ERR_UNSUPPORTED with a message). module_load takes
     * a cubin (*module: the backend's handle); raw_launch runs kernel `name` (a symbol of
     * the module) with args in order, after the work that writes its READ arrays, on
     * `stream`; WRITE arrays hold their values when it returns (queued). A kernel that faults
     * kills the context, as any kernel's fault does. */
    const char *(*arch)(const fc_ctx *ctx);
    fc_status (*module_load)(fc_ctx *ctx, const void *cubin, size_t size, void **module);
    void (*module_unload)(fc_ctx *ctx, void *module);
    fc_status (*raw_launch)(fc_ctx *ctx, void *module, const char *name, const unsigned grid[3],
                            const unsigned block[3], size_t shared_bytes, fc_stream *stream,
                            int nargs, const fcb_raw_arg *args);
};

/* The host reference backend (backend/host_backend.c): always there. */
extern const fcb_backend fch_backend;

/* The CUDA backend (backend/cuda.c): loads the driver and makes a context on `device`; sets
 * ctx->be and ctx->be_state on success. FC_ERR_BACKEND (with a message) when there is no
 * driver or device. */
fc_status fcr_open(fc_ctx *ctx, int device);
/* Devices, whatever the context: 0 (and FC_OK) where there is no driver. */
fc_status fcr_device_count(int *count);
fc_status fcr_device_info(int ordinal, fc_device_info *out);

/* The sharded backend (backend/mesh.c): makes ctx (a new context with the host backend
 * attached) a sharded context over opts->shards shards, each a context of its own made with
 * opts' other fields. Sets ctx->be and ctx->be_state on success; FC_ERR_BACKEND,
 * FC_ERR_INVALID (a bad device list) or FC_ERR_NOMEM with a message in ctx otherwise. */
fc_status fcm_open(fc_ctx *ctx, const fc_ctx_options *opts);
/* Whether ctx is sharded, and its shards (NULL when i is out of range or ctx is not sharded). */
int fcm_shards(const fc_ctx *ctx);
/* Tests: from now on, data and results no consumer places split along axis (axis % ndim)
 * whatever their extents (shards may be empty); -1: the usual rule. */
void fcm_test_force_split(fc_ctx *ctx, int axis);
fc_ctx *fcm_shard_ctx(const fc_ctx *ctx, int i);
/* The public calls of fusec.h's "Sharded contexts" (api/shard.c checks their arguments). */
fc_array *fcm_reshard(fc_array *a, int axis);
fc_status fcm_sharding(fc_array *a, int *axis);
fc_array *fcm_from_shards(fc_ctx *ctx, fc_array *const *parts, int axis);
fc_array *fcm_part(fc_array *a, int i);
fc_array *fcm_gather(fc_array *a, int i);
fc_status fcm_stats(fc_ctx *ctx, fc_shard_stats *out, bool reset);

/* NCCL between the CUDA contexts of a sharded context's shards (backend/nccl.c). A
 * communicator set over n contexts on distinct devices; NULL (with why in *why) when NCCL
 * cannot serve. Buffers are device addresses of the contexts' values; every call queues on
 * each context's own stream and returns before the work is done. */
typedef struct fcn_comm fcn_comm;
typedef enum fcn_redop { FCN_SUM, FCN_PROD, FCN_MAX, FCN_MIN } fcn_redop;
fcn_comm *fcn_comm_create(fc_ctx *const *ctxs, int n, char *why, size_t why_size);
/* Whether all-reduce supports dtype t. */
bool fcn_reduce_dtype_ok(fc_dtype t);
/* An all-reduce: recv[i] = op over j of send[j] (count elements of dtype each), i a shard. */
typedef struct fcn_job {
    const uint64_t *send, *recv;
    size_t count;
    fc_dtype dtype;
    fcn_redop op;
} fcn_job;
/* Runs jobs[0..njobs) as one group (one launch per device for all of them). */
fc_status fcn_allreduce(fcn_comm *c, fc_ctx *const *ctxs, const fcn_job *jobs, int njobs);
/* Every recv[i] gets send[0] (bytes[0]) then send[1] (bytes[1]) ... back to back. */
fc_status fcn_allgather(fcn_comm *c, fc_ctx *const *ctxs, const uint64_t *send,
                        const size_t *bytes, const uint64_t *recv);
/* Aborts the communicators (a device failed: no collective may wait for it); then destroy. */
void fcn_comm_abort(fcn_comm *c);
void fcn_comm_destroy(fcn_comm *c);

/* The CUstream of a CUDA context's own stream, its CUDA context made current (for NCCL). */
void *fcr_stream_handle(fc_ctx *ctx);

/* For tests of the CUDA backend: its cached plans and how often they were reused; a kernel
 * that faults (a sticky error that kills the context). */
void fcr_plan_cache_stats(fc_ctx *ctx, size_t *entries, uint64_t *replays);
/* For tests: how the CUDA backend's cached plans ran as CUDA graphs (all zero on another
 * backend). */
typedef struct fcr_graph_stats {
    uint64_t launches;  /* runs that launched an entry's graph */
    uint64_t builds;    /* graphs built and instantiated */
    uint64_t captures;  /* library calls captured into a graph (stream capture) */
    uint64_t switches;  /* library steps of a built graph switched to work captured for other
                           addresses */
    uint64_t fallbacks; /* entries that gave graphs up (a capture failed, or graphs kept being
                           rebuilt) */
} fcr_graph_stats;
void fcr_graph_stats_get(fc_ctx *ctx, fcr_graph_stats *out);
fc_status fcr_test_fault(fc_ctx *ctx);

#endif /* FUSEC_BACKEND_H */
