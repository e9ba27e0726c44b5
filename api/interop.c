/*
 * api/interop.c - memory and streams shared with code outside fusec: external memory wrapped
 * as arrays (fc_from_external, fc_dlpack_import), values handed out (fc_array_export,
 * fc_dlpack_export), wrapped streams. Backend work goes through the table's interop entries.
 *
 * A shared value has a record (`share`, in a->share while an array holds it). Exports are
 * counted on it; when the array dies the graph hands the value to unshare(), and the record
 * keeps it until no export is left, then frees it (fusec's memory) or calls the owner's
 * release (imported memory, after fusec's reads of it). Export handles are released from any
 * thread: they, and records they leave with neither owner nor export, go on locked lists that
 * the context's thread drains at its next export, import or evaluation. The last release after
 * fc_ctx_destroy finishes the destruction.
 */
#include "api.h"
#include "fusec_dlpack.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

typedef struct share {
    fc_ctx *ctx;
    fc_array *owner;             /* the array holding the value; NULL once it died */
    fcb_value value;             /* the value, once the owner died */
    bool external;               /* the memory is the caller's: never freed here */
    bool read_only;
    void (*release)(void *user); /* imported: told once when fusec is done with it */
    void *user;
    int exports;                 /* handles out (interop.lock) */
    bool dead;                   /* the owner died (interop.lock) */
    struct share *prev, *next;   /* interop.shares */
    struct share *next_free;     /* interop.freed: no owner, no export (interop.lock) */
} share;

/* One export: a DLPack struct (one of the two) with its shape and strides, or an fc_export's
 * hold. */
struct fc_export_hold {
    DLManagedTensor plain;
    fc_dlpack_versioned versioned;
    int64_t shape[FC_MAX_DIMS], strides[FC_MAX_DIMS];
    share *sh;
    struct fc_export_hold *next; /* interop.released */
};
typedef struct fc_export_hold hold;

typedef struct interop {
    pthread_mutex_t lock;
    share *shares;  /* every record (the context's thread) */
    hold *released; /* holds given back, not yet freed (lock) */
    share *freed;   /* records of dead owners whose last export was given back (lock) */
    int out;        /* holds not given back (lock) */
    bool destroyed; /* fc_ctx_destroy ran (lock) */
} interop;

/* ---- records and holds ------------------------------------------------------------------ */

static void dispose(fc_ctx *ctx, share *r) {
    interop *ix = ctx->interop;
    ctx->be->drop_value(ctx, &r->value, r->external);
    if (r->release) r->release(r->user);
    if (r->prev) r->prev->next = r->next;
    else ix->shares = r->next;
    if (r->next) r->next->prev = r->prev;
    fcg_free(ctx, r, sizeof *r);
}

/* The graph's hook: a dies holding a shared value. Its record goes now if no export holds
 * it, else when the last is given back (hold_release queues it then). */
static void unshare(fc_ctx *ctx, fc_array *a) {
    interop *ix = ctx->interop;
    share *r = a->share;
    a->share = NULL;
    ctx->be->take_value(ctx, a, &r->value);
    r->owner = NULL;
    pthread_mutex_lock(&ix->lock);
    r->dead = true;
    bool unheld = r->exports == 0;
    pthread_mutex_unlock(&ix->lock);
    if (unheld) dispose(ctx, r);
}

/* Frees the holds given back and the records they left with nothing (the context's thread). */
static void drain(fc_ctx *ctx) {
    interop *ix = ctx->interop;
    if (!ix) return;
    pthread_mutex_lock(&ix->lock);
    hold *h = ix->released;
    share *r = ix->freed;
    ix->released = NULL;
    ix->freed = NULL;
    pthread_mutex_unlock(&ix->lock);
    for (hold *next; h; h = next) {
        next = h->next;
        fcg_free(ctx, h, sizeof *h);
    }
    for (share *next; r; r = next) {
        next = r->next_free;
        dispose(ctx, r);
    }
}

void fca_interop_drain(fc_ctx *ctx) { drain(ctx); }

static interop *interop_of(fc_ctx *ctx) {
    if (ctx->interop) return ctx->interop;
    interop *ix = fcg_calloc(ctx, sizeof *ix);
    if (!ix) return NULL;
    if (pthread_mutex_init(&ix->lock, NULL) != 0) {
        fcg_free(ctx, ix, sizeof *ix);
        return NULL;
    }
    ctx->interop = ix;
    ctx->unshare = unshare;
    return ix;
}

/* a's record, made if it has none. */
static share *share_of(fc_ctx *ctx, fc_array *a) {
    if (a->share) return a->share;
    interop *ix = interop_of(ctx);
    share *r = ix ? fcg_calloc(ctx, sizeof *r) : NULL;
    if (!r) return NULL;
    r->ctx = ctx;
    r->owner = a;
    r->next = ix->shares;
    if (ix->shares) ix->shares->prev = r;
    ix->shares = r;
    a->share = r;
    return r;
}

/* Frees every record and hold, and the state (the context's end). */
static void interop_free(fc_ctx *ctx) {
    interop *ix = ctx->interop;
    if (!ix) return;
    for (hold *h = ix->released, *next; h; h = next) {
        next = h->next;
        fcg_free(ctx, h, sizeof *h);
    }
    ix->released = NULL;
    ix->freed = NULL; /* (records all on ix->shares too) */
    while (ix->shares) dispose(ctx, ix->shares);
    pthread_mutex_destroy(&ix->lock);
    fcg_free(ctx, ix, sizeof *ix);
    ctx->interop = NULL;
}

bool fca_interop_close(fc_ctx *ctx) {
    interop *ix = ctx->interop;
    if (!ix) return true;
    drain(ctx);
    pthread_mutex_lock(&ix->lock);
    ix->destroyed = true;
    bool last = ix->out == 0;
    pthread_mutex_unlock(&ix->lock);
    if (last) interop_free(ctx);
    return last;
}

/* The context's end, by fc_ctx_destroy or by the last release after it. */
void fca_ctx_finish(fc_ctx *ctx) {
    interop_free(ctx);
    ctx->be->destroy(ctx);
    if (ctx->kcache) ctx->kcache_close(ctx->kcache);
    fcg_ctx_free(ctx);
}

/* Gives a hold back: any thread. */
static void hold_release(hold *h) {
    share *r = h->sh;
    fc_ctx *ctx = r->ctx;
    interop *ix = ctx->interop;
    pthread_mutex_lock(&ix->lock);
    if (--r->exports == 0 && r->dead) { /* nothing holds it any more */
        r->next_free = ix->freed;
        ix->freed = r;
    }
    h->next = ix->released;
    ix->released = h;
    bool finish = --ix->out == 0 && ix->destroyed;
    pthread_mutex_unlock(&ix->lock);
    if (finish) fca_ctx_finish(ctx); /* nobody else uses the context now */
}

/* ---- dtypes and devices ----------------------------------------------------------------- */

fc_status fc_dlpack_dtype(fc_dtype dtype, DLDataType *out) {
    if (!out) return FC_ERR_NULL;
    size_t size = fc_dtype_size(dtype);
    if (!size) return FC_ERR_DTYPE;
    uint8_t code = 0;
    switch (dtype) { /* every dtype: a new one fails to build (-Werror=switch) until mapped */
    case FC_BOOL: code = FC_DLPACK_BOOL; break;
    case FC_I8: case FC_I16: case FC_I32: case FC_I64: code = kDLInt; break;
    case FC_U8: case FC_U16: case FC_U32: case FC_U64: code = kDLUInt; break;
    case FC_F16: case FC_F32: case FC_F64: code = kDLFloat; break;
    case FC_BF16: code = kDLBfloat; break;
    case FC_C64: case FC_C128: code = kDLComplex; break;
    case FC_DTYPE_COUNT: return FC_ERR_DTYPE;
    }
    out->code = code;
    out->bits = (uint8_t)(size * 8);
    out->lanes = 1;
    return FC_OK;
}

fc_status fc_dtype_from_dlpack(DLDataType t, fc_dtype *out) {
    if (!out) return FC_ERR_NULL;
    if (t.lanes != 1) return FC_ERR_DTYPE;
    for (int d = 0; d < FC_DTYPE_COUNT; d++) {
        DLDataType m;
        fc_dlpack_dtype((fc_dtype)d, &m);
        if (m.code == t.code && m.bits == t.bits) {
            *out = (fc_dtype)d;
            return FC_OK;
        }
    }
    return FC_ERR_DTYPE;
}

/* "float8 (code 2, bits 8, lanes 1)" and the like, for messages. */
static const char *dl_type_str(char *buf, size_t cap, DLDataType t) {
    static const char *const names[] = {"int", "uint", "float", "opaque handle", "bfloat",
                                        "complex", "bool"};
    const char *name = t.code < sizeof names / sizeof *names ? names[t.code] : "unknown type";
    snprintf(buf, cap, "%s%u (code %u, bits %u, lanes %u)", name, (unsigned)t.bits,
             (unsigned)t.code, (unsigned)t.bits, (unsigned)t.lanes);
    return buf;
}

fc_status fc_dlpack_device(fc_ctx *ctx, DLDevice *out) {
    if (!ctx || !out) return FC_ERR_NULL;
    if (fc_ctx_shards(ctx) > 1)
        return fcg_error(ctx, FC_ERR_UNSUPPORTED, "dlpack_device: a sharded context has no one "
                         "device");
    int dev = fc_ctx_device(ctx);
    out->device_type = dev >= 0 ? kDLCUDA : kDLCPU;
    out->device_id = dev >= 0 ? dev : 0;
    return FC_OK;
}

/* ---- import ----------------------------------------------------------------------------- */

/* The DATA leaf whose value is `ext` memory: `n` elements from `ptr` (1-d when shape is
 * NULL), with a record. Owned by the caller (fcg_node's reference). */
static fc_array *leaf(fc_ctx *ctx, const fc_external *ext, void *ptr, int ndim,
                      const int64_t *shape, fc_stream *stream, fc_status *st) {
    fc_dtype t = ext->dtype;
    fc_array *a = fcg_node(ctx, FCG_OP_DATA, t, t, false, ndim, shape, 0, NULL, NULL);
    if (!a) {
        *st = FC_ERR_NOMEM;
        return NULL;
    }
    size_t bytes = fcg_node_numel(a) * fc_dtype_size(t);
    bool own = bytes == 0 || !ptr; /* nothing to share: an empty value of fusec's */
    if (own) *st = ctx->be->alloc_value(ctx, a);
    else *st = ctx->be->import_value(ctx, a, ptr, stream);
    share *r = *st == FC_OK ? share_of(ctx, a) : NULL;
    if (*st == FC_OK && !r) *st = fcg_error(ctx, FC_ERR_NOMEM, "import: out of memory");
    if (*st != FC_OK) {
        if (!own) ctx->be->take_value(ctx, a, &(fcb_value){0}); /* not ours to free */
        fcg_release(a);
        return NULL;
    }
    r->external = !own;
    r->read_only = ext->read_only;
    return a;
}

/* The view that reads `ext`'s strided layout from a leaf over the memory it spans: the
 * dimensions that move (extent > 1, stride != 0), largest stride first, must nest (each stride
 * a multiple of the next, an extent's span within the stride above). The span, padded at its
 * end to whole rows of the largest stride, is reshaped into a box whose axes step by those
 * strides; each axis is cut to its extent, flipped where its stride is negative, put back in
 * place, and 0-stride axes are broadcast. NULL with *st = FC_ERR_SHAPE (beyond
 * FCG_MAX_BYTES) or FC_ERR_UNSUPPORTED (no such box) before anything is made, or with *st
 * from the leaf; else the view (the caller's scope's), poisoned if an op failed. */
static fc_array *strided(fc_ctx *ctx, const fc_external *ext, fc_stream *stream,
                         fc_status *st) {
    const fc_shape *sh = &ext->shape;
    const int64_t *s = ext->strides;
    int order[FC_MAX_DIMS], m = 0;
    bool bcast = false;
    size_t es = fc_dtype_size(ext->dtype);
    int64_t lo = 0, span = 1; /* elements: the lowest offset from data, and how many */
    for (int i = 0; i < sh->ndim; i++) {
        if (sh->dim[i] <= 1) continue;
        if (s[i] == 0) {
            bcast = true;
            continue;
        }
        int64_t mag = s[i] < 0 ? -s[i] : s[i], reach;
        if (s[i] == INT64_MIN || __builtin_mul_overflow(mag, sh->dim[i] - 1, &reach) ||
            __builtin_add_overflow(span, reach, &span) || (uint64_t)span > FCG_MAX_BYTES / es)
            return NULL; /* *st stays FC_ERR_SHAPE */
        if (s[i] < 0) lo -= reach;
        int k = m++;
        for (; k > 0; k--) { /* insertion by |stride|, descending */
            int j = order[k - 1];
            if ((s[j] < 0 ? -s[j] : s[j]) >= mag) break;
            order[k] = j;
        }
        order[k] = i;
    }
#define MAG(i) (s[i] < 0 ? -s[i] : s[i])
    for (int k = 0; k + 1 < m; k++) {
        int a = order[k], b = order[k + 1];
        if (MAG(a) % MAG(b) != 0 || sh->dim[b] * MAG(b) > MAG(a)) {
            *st = FC_ERR_UNSUPPORTED;
            return NULL;
        }
    }
    /* The box: axis k of extent box[k] steps by the k-th largest stride (box[0] = its
     * extent, box[k] = stride k-1 / stride k); the smallest stride's steps are taken by a
     * slice of the last axis (extent box[m-1] * stride, step stride), so the box has m axes. */
    int64_t box[FC_MAX_DIMS], cut[FC_MAX_DIMS], boxn = 1;
    for (int k = 0; k < m; k++) {
        box[k] = k == 0 ? sh->dim[order[0]] : MAG(order[k - 1]) / MAG(order[k]);
        cut[k] = sh->dim[order[k]];
    }
    int64_t last = m ? MAG(order[m - 1]) : 1;
    if (m) box[m - 1] *= last;
    for (int k = 0; k < m; k++)
        if (__builtin_mul_overflow(boxn, box[k], &boxn) || (uint64_t)boxn > FCG_MAX_BYTES / es)
            return NULL;
#undef MAG
    fc_scope *scope = fc_scope_open(ctx);
    if (!scope) {
        *st = FC_ERR_NOMEM;
        return NULL;
    }
    fc_array *x = leaf(ctx, ext, (char *)ext->data + lo * (int64_t)es, 1, &span, stream, st);
    if (!x) {
        fc_scope_close(scope);
        return NULL;
    }
    share *r = x->share;
    x = fcg_ret(ctx, x); /* the scope's */
    if (boxn > span) x = fc_pad(x, 1, (const int64_t[][2]){{0, boxn - span}}, FC_PAD_CONSTANT, 0);
    fc_shape bs = {m, {0}};
    fc_idx idx[FC_MAX_DIMS];
    for (int k = 0; k < m; k++) {
        bs.dim[k] = box[k];
        idx[k] = k == m - 1 ? FC_S(0, cut[k] * last, last) : FC_S(0, cut[k], 1);
    }
    if (m) {
        x = fc_reshape(x, bs);
        x = fc_index(x, m, idx);
    }
    fc_axes flip = {0, {0}};
    for (int k = 0; k < m; k++)
        if (s[order[k]] < 0) flip.axis[flip.n++] = k;
    if (flip.n) x = fc_flip(x, flip);
    /* Axes in the memory's order, then in the tensor's: its k-th moving axis is box axis
     * rank[k]; the rest of the shape is extent-1 or broadcast axes. */
    fc_axes perm = {m, {0}};
    for (int k = 0, j = 0; k < sh->ndim; k++)
        if (sh->dim[k] > 1 && s[k] != 0)
            for (int q = 0; q < m; q++)
                if (order[q] == k) perm.axis[j++] = q;
    if (m) x = fc_permute(x, perm);
    fc_shape ones = *sh;
    for (int k = 0; k < sh->ndim; k++)
        if (sh->dim[k] > 1 && s[k] == 0) ones.dim[k] = 1;
    x = fc_reshape(x, ones);
    if (bcast) x = fc_broadcast_to(x, *sh);
    x = fcg_scope_return(ctx, scope, x);
    /* The owner's release is fusec's business from here on, not before: on failure the leaf
     * is gone already, and the caller still owns the memory. */
    if ((*st = fc_array_status(x)) == FC_OK) r->release = ext->release, r->user = ext->user;
    return x;
}

/* A compact import whose data is not 16-byte aligned (a slice of another array's memory):
 * kernels read a buffer read at its flat index 16 bytes at a time, which would fault there. The
 * leaf starts at the 16-byte boundary below data instead (within the same allocation: CUDA's
 * allocators align theirs to 256 bytes or more) and the array is the view that skips those k
 * elements, which kernels read element by element, as they read a strided import. Like a
 * strided import, fc_write on it writes a value of its own, not the memory. NULL with *st
 * from the leaf, or the view (the caller's scope's), poisoned if an op failed. */
static fc_array *unaligned(fc_ctx *ctx, const fc_external *ext, fc_stream *stream, int64_t k,
                           int64_t n, fc_status *st) {
    fc_scope *scope = fc_scope_open(ctx);
    if (!scope) {
        *st = FC_ERR_NOMEM;
        return NULL;
    }
    int64_t span = k + n;
    size_t es = fc_dtype_size(ext->dtype);
    fc_array *x = leaf(ctx, ext, (char *)ext->data - k * (int64_t)es, 1, &span, stream, st);
    if (!x) {
        fc_scope_close(scope);
        return NULL;
    }
    share *r = x->share;
    x = fcg_ret(ctx, x); /* the scope's */
    x = fc_reshape(fc_index(x, 1, (fc_idx[]){FC_S(k, span, 1)}), ext->shape);
    x = fcg_scope_return(ctx, scope, x);
    /* as in strided: the owner's release is fusec's business once the view stands */
    if ((*st = fc_array_status(x)) == FC_OK) r->release = ext->release, r->user = ext->user;
    return x;
}

static bool compact(const fc_shape *sh, const int64_t *strides) {
    if (!strides) return true;
    int64_t want = 1;
    for (int i = sh->ndim; i-- > 0;) {
        if (sh->dim[i] > 1 && strides[i] != want) return false;
        want *= sh->dim[i];
    }
    return true;
}

fc_array *fc_from_external(fc_ctx *ctx, const fc_external *ext, fc_stream *stream) {
    if (!ctx) return NULL;
    drain(ctx);
    if (!ext) return fcg_poison(ctx, FC_ERR_NULL, "from_external: ext is NULL");
    if (stream && stream->ctx != ctx)
        return fcg_poison(ctx, FC_ERR_CONTEXT, "from_external: the stream belongs to another "
                          "context");
    const fc_shape *sh = &ext->shape;
    size_t es = fc_dtype_size(ext->dtype);
    char d[200];
    if (!es) return fcg_poison(ctx, FC_ERR_DTYPE, "from_external: invalid dtype %d",
                               (int)ext->dtype);
    if (sh->ndim < 0 || sh->ndim > FC_MAX_DIMS)
        return fcg_poison(ctx, FC_ERR_SHAPE, "from_external: %d dimensions (at most %d are "
                          "supported)", sh->ndim, FC_MAX_DIMS);
    if (fcg_shape_too_large(sh->ndim, sh->dim, ext->dtype))
        return fcg_poison(ctx, FC_ERR_SHAPE, "from_external: shape %s of %s is negative or too "
                          "large", fcg_shape_str(d, sh->ndim, sh->dim),
                          fc_dtype_name(ext->dtype));
    size_t n = fcg_numel(sh->ndim, sh->dim);
    if (n && !ext->data) return fcg_poison(ctx, FC_ERR_NULL, "from_external: data is NULL");
    int dev = fc_ctx_device(ctx);
    if (n && ext->device != dev) {
        if (dev < 0 || ext->device < 0)
            return fcg_poison(ctx, FC_ERR_INVALID, "from_external: %s memory on a context of "
                              "the %s backend", ext->device < 0 ? "host" : "device",
                              dev < 0 ? "host" : "CUDA");
        return fcg_poison(ctx, FC_ERR_INVALID, "from_external: memory of device %d on a "
                          "context of device %d", ext->device, dev);
    }
    size_t align = es > 16 ? 16 : es;
    if (n && (uintptr_t)ext->data % align)
        return fcg_poison(ctx, FC_ERR_INVALID, "from_external: data %p is not aligned to %zu "
                          "bytes (an element of %s)", ext->data, align,
                          fc_dtype_name(ext->dtype));
    fc_status st = FC_OK;
    /* device memory only: the host backend's loops read element by element */
    size_t skew = (uintptr_t)ext->data % 16; /* a multiple of es (checked above) */
    if (n && skew && ext->device >= 0 && compact(sh, ext->strides)) {
        fc_array *a = unaligned(ctx, ext, stream, (int64_t)(skew / es), (int64_t)n, &st);
        return a ? a : fcg_poison_ctx(ctx, st);
    }
    if (n == 0 || compact(sh, ext->strides)) {
        fc_array *a = leaf(ctx, ext, n ? ext->data : NULL, sh->ndim, sh->dim, stream, &st);
        if (!a) return fcg_poison_ctx(ctx, st);
        share *r = a->share;
        r->release = ext->release, r->user = ext->user;
        return fcg_ret(ctx, a); /* (out of memory there: the leaf dies, the release runs) */
    }
    st = FC_ERR_SHAPE;
    fc_array *a = strided(ctx, ext, stream, &st);
    if (a) return a; /* the view, or a poison of its own */
    if (st != FC_ERR_SHAPE && st != FC_ERR_UNSUPPORTED) return fcg_poison_ctx(ctx, st);
    char t[200];
    fcg_shape_str(t, sh->ndim, ext->strides);
    return fcg_poison(ctx, st, "from_external: strides %s (elements) of shape %s %s; fusec "
                      "imports layouts whose strides nest (a permutation, flips, broadcasts, "
                      "gaps between rows) and copies nothing silently", t,
                      fcg_shape_str(d, sh->ndim, sh->dim),
                      st == FC_ERR_SHAPE ? "reach beyond 2**62 bytes" : "overlap or do not nest");
}

static void dl_release(void *user) {
    DLManagedTensor *t = user;
    if (t->deleter) t->deleter(t);
}

static void dl_release_versioned(void *user) {
    fc_dlpack_versioned *t = user;
    if (t->deleter) t->deleter(t);
}

static fc_array *dl_import(fc_ctx *ctx, const DLTensor *t, bool read_only, void (*rel)(void *),
                           void *user, fc_stream *stream) {
    char b[96];
    fc_external e = {0};
    if (fc_dtype_from_dlpack(t->dtype, &e.dtype) != FC_OK)
        return fcg_poison(ctx, FC_ERR_DTYPE, "dlpack_import: fusec has no dtype for DLPack's %s",
                          dl_type_str(b, sizeof b, t->dtype));
    if (t->ndim < 0 || t->ndim > FC_MAX_DIMS)
        return fcg_poison(ctx, FC_ERR_SHAPE, "dlpack_import: %d dimensions (at most %d are "
                          "supported)", t->ndim, FC_MAX_DIMS);
    if (t->ndim > 0 && !t->shape) return fcg_poison(ctx, FC_ERR_NULL, "dlpack_import: shape is NULL");
    int dev = fc_ctx_device(ctx);
    int type = (int)t->device.device_type;
    bool ok = dev >= 0 ? (type == kDLCUDA || type == kDLCUDAManaged) && t->device.device_id == dev
                       : type == kDLCPU || type == kDLCUDAHost;
    if (!ok)
        return fcg_poison(ctx, FC_ERR_INVALID, "dlpack_import: device type %d, id %d: the context "
                          "reads %s", type, (int)t->device.device_id,
                          dev >= 0 ? "kDLCUDA or kDLCUDAManaged memory of its device"
                                   : "kDLCPU or kDLCUDAHost memory (the host backend)");
    e.shape.ndim = (int)t->ndim;
    if (t->ndim) memcpy(e.shape.dim, t->shape, (size_t)t->ndim * sizeof *t->shape);
    e.strides = t->ndim ? t->strides : NULL;
    e.device = dev;
    e.data = t->data ? (char *)t->data + t->byte_offset : NULL;
    e.read_only = read_only;
    e.release = rel;
    e.user = user;
    return fc_from_external(ctx, &e, stream);
}

fc_array *fc_dlpack_import(fc_ctx *ctx, DLManagedTensor *t, fc_stream *stream) {
    if (!ctx) return NULL;
    if (!t) return fcg_poison(ctx, FC_ERR_NULL, "dlpack_import: the tensor is NULL");
    return dl_import(ctx, &t->dl_tensor, false, dl_release, t, stream);
}

fc_array *fc_dlpack_import_versioned(fc_ctx *ctx, fc_dlpack_versioned *t, fc_stream *stream) {
    if (!ctx) return NULL;
    if (!t) return fcg_poison(ctx, FC_ERR_NULL, "dlpack_import: the tensor is NULL");
    if (t->version.major != FC_DLPACK_MAJOR)
        return fcg_poison(ctx, FC_ERR_UNSUPPORTED, "dlpack_import: DLPack version %u.%u; fusec "
                          "reads major version %d", (unsigned)t->version.major,
                          (unsigned)t->version.minor, FC_DLPACK_MAJOR);
    return dl_import(ctx, &t->dl_tensor, (t->flags & FC_DLPACK_FLAG_READ_ONLY) != 0,
                     dl_release_versioned, t, stream);
}

bool fca_read_only(const fc_array *a) {
    return a->share && ((const share *)a->share)->read_only;
}

/* ---- export ----------------------------------------------------------------------------- */

/* A new hold on a's memory, evaluated and ordered for `stream`; fills e. */
static fc_status export_hold(fc_array *a, fc_stream *stream, fc_export *e, hold **out) {
    *out = NULL;
    fc_ctx *ctx = a->ctx;
    drain(ctx);
    if (stream && stream->ctx != ctx)
        return fcg_error(ctx, FC_ERR_CONTEXT, "export: the stream belongs to another context");
    fc_status st = fca_eval_on(ctx, &a, 1, stream);
    if (st != FC_OK) return st;
    void *ptr = NULL, *cu = NULL;
    if ((st = ctx->be->export_value(ctx, a, stream, &ptr, &cu)) != FC_OK) return st;
    hold *h = fcg_calloc(ctx, sizeof *h);
    share *r = h ? share_of(ctx, a) : NULL;
    if (!r) {
        fcg_free(ctx, h, sizeof *h);
        return fcg_error(ctx, FC_ERR_NOMEM, "export: out of memory");
    }
    interop *ix = ctx->interop;
    pthread_mutex_lock(&ix->lock);
    r->exports++;
    ix->out++;
    pthread_mutex_unlock(&ix->lock);
    h->sh = r;
    int64_t step = 1;
    for (int i = a->ndim; i-- > 0;) {
        h->shape[i] = a->shape[i];
        h->strides[i] = step;
        step *= a->shape[i];
    }
    memset(e, 0, sizeof *e);
    e->data = ptr;
    e->dtype = (fc_dtype)a->dtype;
    e->ndim = a->ndim;
    memcpy(e->shape, h->shape, sizeof h->shape);
    memcpy(e->strides, h->strides, sizeof h->strides);
    e->bytes = fcg_node_numel(a) * fc_dtype_size(e->dtype);
    e->device = fc_ctx_device(ctx);
    e->stream = cu;
    e->hold = h;
    *out = h;
    return FC_OK;
}

fc_status fc_array_export(fc_array *a, fc_stream *stream, fc_export *out) {
    if (out) memset(out, 0, sizeof *out);
    if (!a || !out) return FC_ERR_NULL;
    hold *h;
    return export_hold(a, stream, out, &h);
}

void fc_export_release(fc_export *e) {
    if (!e || !e->hold) return;
    hold *h = e->hold;
    e->hold = NULL;
    hold_release(h);
}

static void dl_fill(DLTensor *t, const fc_export *e, hold *h) {
    DLDevice dev = {e->device >= 0 ? kDLCUDA : kDLCPU, e->device >= 0 ? e->device : 0};
    t->data = e->data;
    t->device = dev;
    t->ndim = e->ndim;
    fc_dlpack_dtype(e->dtype, &t->dtype);
    t->shape = h->shape;
    t->strides = h->strides;
    t->byte_offset = 0;
}

static void dl_deleter(DLManagedTensor *t) { hold_release(t->manager_ctx); }
static void dl_deleter_versioned(fc_dlpack_versioned *t) { hold_release(t->manager_ctx); }

fc_status fc_dlpack_export(fc_array *a, fc_stream *stream, DLManagedTensor **out) {
    if (out) *out = NULL;
    if (!a || !out) return FC_ERR_NULL;
    fc_export e;
    hold *h;
    fc_status st = export_hold(a, stream, &e, &h);
    if (st != FC_OK) return st;
    dl_fill(&h->plain.dl_tensor, &e, h);
    h->plain.manager_ctx = h;
    h->plain.deleter = dl_deleter;
    *out = &h->plain;
    return FC_OK;
}

fc_status fc_dlpack_export_versioned(fc_array *a, fc_stream *stream, uint64_t flags,
                                     fc_dlpack_versioned **out) {
    if (out) *out = NULL;
    if (!a || !out) return FC_ERR_NULL;
    if (flags & ~(uint64_t)FC_DLPACK_FLAG_READ_ONLY)
        return fcg_error(a->ctx, FC_ERR_INVALID, "dlpack_export: flags 0x%llx (only "
                         "FC_DLPACK_FLAG_READ_ONLY may be asked for)", (unsigned long long)flags);
    fc_export e;
    hold *h;
    fc_status st = export_hold(a, stream, &e, &h);
    if (st != FC_OK) return st;
    dl_fill(&h->versioned.dl_tensor, &e, h);
    h->versioned.version.major = FC_DLPACK_MAJOR;
    h->versioned.version.minor = FC_DLPACK_MINOR;
    h->versioned.flags = flags;
    h->versioned.manager_ctx = h;
    h->versioned.deleter = dl_deleter_versioned;
    *out = &h->versioned;
    return FC_OK;
}
