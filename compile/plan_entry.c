/*
 * compile/plan_entry.c - the persisted plan entry: key, encoding, decoding (plan_entry.h).
 */
#include "plan_entry.h"

#include "kcompile.h"

#include <stdio.h>
#include <string.h>

static const char *build_override;

void fck_plan_entry_set_build_for_tests(const char *build) { build_override = build; }

fc_status fck_plan_entry_key(const fc_hash *structure, const char *arch, char *options_buf,
                             size_t options_size, char *source_buf, size_t source_size,
                             fcc_key_fields *fields, fcc_key *key, char *msg, size_t msg_size) {
    int n = snprintf(source_buf, source_size, "fusec plan entry %u\nstructure %016llx%016llx\n"
                     "build %s\n", FCK_PLAN_ENTRY_VERSION, (unsigned long long)structure->hi,
                     (unsigned long long)structure->lo,
                     build_override ? build_override : fck_build_hash);
    if (n < 0 || (size_t)n >= source_size) {
        snprintf(msg, msg_size, "plan entry key: no room");
        return FC_ERR_INVALID;
    }
    /* The kernels' own fields (options, NVRTC version, codegen version) for this arch. */
    fcx_kernel_src src;
    memset(&src, 0, sizeof src);
    src.src = source_buf;
    src.len = (size_t)n;
    fc_status st = fcx_key_fields(&src, arch, options_buf, options_size, fields, msg, msg_size);
    if (st != FC_OK) return st;
    fields->kernel_name = FCK_PLAN_ENTRY_NAME;
    if ((st = fcc_key_compute(fields, key)) != FC_OK)
        snprintf(msg, msg_size, "plan entry key: %s", fc_strerror(st));
    return st;
}

/* ---- encoding ----------------------------------------------------------------------------- */

typedef struct writer {
    uint8_t *p;
    size_t len, cap;
    bool failed;
    fc_ctx *ctx;
} writer;

static void put(writer *w, const void *b, size_t n) {
    if (w->failed) return;
    if (w->len + n > w->cap) {
        size_t nc = w->cap ? w->cap * 2 : 256;
        while (nc < w->len + n) nc *= 2;
        uint8_t *q = fcg_realloc(w->ctx, w->p, w->cap, nc);
        if (!q) {
            w->failed = true;
            return;
        }
        w->p = q;
        w->cap = nc;
    }
    memcpy(w->p + w->len, b, n);
    w->len += n;
}

/* The host is little-endian (x86-64, aarch64), as the kernel cache's own format assumes. */
static void put_u32(writer *w, uint32_t v) { put(w, &v, 4); }
static void put_i32(writer *w, int32_t v) { put(w, &v, 4); }
static void put_u64(writer *w, uint64_t v) { put(w, &v, 8); }

static void put_slots(writer *w, const fcx_slot *s, int n) {
    for (int i = 0; i < n; i++) {
        put_u32(w, s[i].kind);
        put_i32(w, s[i].node);
        put_i32(w, s[i].dim);
    }
}

fc_status fck_plan_entry_encode(fc_ctx *ctx, const fc_hash *structure, const fck_plan_kernel *k,
                                int nk, void **out, size_t *size) {
    writer w = {NULL, 0, 0, false, ctx};
    put(&w, "FCPE", 4);
    put_u32(&w, FCK_PLAN_ENTRY_VERSION);
    put_u32(&w, (uint32_t)nk);
    put_u32(&w, 0);
    put_u64(&w, structure->lo);
    put_u64(&w, structure->hi);
    for (int i = 0; i < nk; i++) {
        const fck_plan_kernel *q = &k[i];
        put_u32(&w, q->lib ? 1u : 0u);
        put_i32(&w, q->nleaf);
        put_i32(&w, q->nnode);
        put_i32(&w, q->nout);
        if (q->lib) continue;
        const fcx_kernel_src *r = &q->recipe;
        put(&w, q->key.bytes, sizeof q->key.bytes);
        put_i32(&w, r->nptr);
        put_i32(&w, r->nint);
        put_i32(&w, r->nflt);
        put_i32(&w, (int32_t)r->strategy);
        put_i32(&w, r->block);
        put_i32(&w, r->vec);
        put_i32(&w, r->ew_thread_steps);
        put_i32(&w, (r->idx64 ? 1 : 0) | (r->splits ? 2 : 0));
        for (int c = 0; c < FCX_NSIZES; c++) put_i32(&w, r->fields[c]);
        for (int c = 0; c < FCX_NSIZES; c++) put_i32(&w, r->cached[c]);
        put_u64(&w, (uint64_t)r->static_smem);
        put_slots(&w, r->islots, r->nint);
        put_slots(&w, r->fslots, r->nflt);
    }
    if (w.failed) {
        fcg_free(ctx, w.p, w.cap);
        return fcg_error(ctx, FC_ERR_NOMEM, "compile: out of memory");
    }
    /* An exact-size block, so that the caller frees *size bytes. */
    uint8_t *exact = fcg_realloc(ctx, w.p, w.cap, w.len);
    if (!exact) {
        fcg_free(ctx, w.p, w.cap);
        return fcg_error(ctx, FC_ERR_NOMEM, "compile: out of memory");
    }
    *out = exact;
    *size = w.len;
    return FC_OK;
}

/* ---- decoding ----------------------------------------------------------------------------- */

typedef struct reader {
    const uint8_t *p;
    size_t len, at;
    bool bad;
} reader;

static void get(reader *r, void *b, size_t n) {
    if (r->bad || r->len - r->at < n) {
        r->bad = true;
        memset(b, 0, n);
        return;
    }
    memcpy(b, r->p + r->at, n);
    r->at += n;
}

static uint32_t get_u32(reader *r) {
    uint32_t v;
    get(r, &v, 4);
    return v;
}

static int32_t get_i32(reader *r) {
    int32_t v;
    get(r, &v, 4);
    return v;
}

static uint64_t get_u64(reader *r) {
    uint64_t v;
    get(r, &v, 8);
    return v;
}

/* A count read from the value: within [0, most], else the value is bad. */
static int get_count(reader *r, int most) {
    int32_t v = get_i32(r);
    if (v < 0 || v > most) r->bad = true;
    return r->bad ? 0 : v;
}

/* n slots into *out, *count = n; on failure nothing is kept (*out NULL, *count 0). */
static bool get_slots(fc_ctx *ctx, reader *r, fcx_slot **out, int *count, int n) {
    *out = NULL;
    *count = 0;
    /* Each slot takes 12 bytes: a count the value cannot hold is bad before any allocation. */
    if (r->bad || (size_t)n > (r->len - r->at) / 12) return false;
    if (n == 0) return true;
    fcx_slot *s = fcg_calloc(ctx, (size_t)n * sizeof *s);
    if (!s) return false;
    for (int i = 0; i < n; i++) {
        uint32_t kind = get_u32(r);
        s[i].kind = (uint8_t)kind;
        s[i].node = get_i32(r);
        s[i].dim = get_i32(r);
        /* Only a kernel-wide extent has no node: the others read one (the driver checks
         * the node against the plan kernel). */
        if (kind > FCX_SLOT_IM || s[i].dim < 0 || s[i].dim >= FC_MAX_DIMS || s[i].node < -1 ||
            (s[i].node < 0 && kind != FCX_SLOT_SPACE_EXTENT))
            r->bad = true;
    }
    if (r->bad) {
        fcg_free(ctx, s, (size_t)n * sizeof *s);
        return false;
    }
    *out = s;
    *count = n;
    return true;
}

void fck_plan_kernels_free(fc_ctx *ctx, fck_plan_kernel *k, int nk) {
    if (!k) return;
    for (int i = 0; i < nk; i++) fcx_kernel_src_free(ctx, &k[i].recipe);
    fcg_free(ctx, k, (size_t)(nk ? nk : 1) * sizeof *k);
}

bool fck_plan_entry_decode(fc_ctx *ctx, const void *value, size_t size, const fc_hash *structure,
                           fck_plan_kernel **out, int *nk) {
    *out = NULL;
    *nk = 0;
    reader r = {value, size, 0, false};
    char magic[4];
    get(&r, magic, 4);
    uint32_t version = get_u32(&r), n = get_u32(&r), zero = get_u32(&r);
    uint64_t lo = get_u64(&r), hi = get_u64(&r);
    /* Each kernel takes at least 16 bytes. */
    if (r.bad || memcmp(magic, "FCPE", 4) != 0 || version != FCK_PLAN_ENTRY_VERSION || zero ||
        lo != structure->lo || hi != structure->hi || n > (size - r.at) / 16)
        return false;
    fck_plan_kernel *k = fcg_calloc(ctx, (size_t)(n ? n : 1) * sizeof *k);
    if (!k) return false;
    for (uint32_t i = 0; i < n && !r.bad; i++) {
        fck_plan_kernel *q = &k[i];
        uint32_t lib = get_u32(&r);
        if (lib > 1) r.bad = true;
        q->lib = lib == 1;
        q->nleaf = get_count(&r, INT32_MAX);
        q->nnode = get_count(&r, INT32_MAX);
        q->nout = get_count(&r, INT32_MAX);
        if (q->lib) continue;
        fcx_kernel_src *s = &q->recipe;
        get(&r, q->key.bytes, sizeof q->key.bytes);
        s->nptr = get_count(&r, INT32_MAX);
        /* The slot counts stay zero until their slots are read, so a free is always right. */
        int ni = get_count(&r, INT32_MAX), nf = get_count(&r, INT32_MAX);
        int32_t strategy = get_i32(&r);
        if (strategy < FCX_STRATEGY_EW || strategy > FCX_STRATEGY_SCATTER) r.bad = true;
        s->strategy = (fcx_strategy)strategy;
        s->block = get_count(&r, 1024);
        s->vec = get_count(&r, 64);
        s->ew_thread_steps = get_count(&r, 64);
        int32_t flags = get_i32(&r);
        if (flags & ~3) r.bad = true;
        s->idx64 = flags & 1;
        s->splits = (flags & 2) != 0;
        for (int c = 0; c < FCX_NSIZES; c++) s->fields[c] = get_count(&r, INT32_MAX);
        for (int c = 0; c < FCX_NSIZES; c++) s->cached[c] = get_count(&r, INT32_MAX);
        s->static_smem = (size_t)get_u64(&r);
        if (s->block < 1 || s->static_smem > ((size_t)1 << 20)) r.bad = true;
        if (!get_slots(ctx, &r, &s->islots, &s->nint, ni) ||
            !get_slots(ctx, &r, &s->fslots, &s->nflt, nf))
            r.bad = true;
    }
    if (r.bad || r.at != size) {
        fck_plan_kernels_free(ctx, k, (int)n);
        return false;
    }
    *out = k;
    *nk = (int)n;
    return true;
}

fc_status fck_recipe_copy(fc_ctx *ctx, const fcx_kernel_src *src, fcx_kernel_src *out) {
    *out = *src;
    out->src = NULL;
    out->len = 0;
    out->summary[0] = '\0';
    out->islots = out->fslots = NULL;
    if (src->nint && !(out->islots = fcg_malloc(ctx, (size_t)src->nint * sizeof *out->islots)))
        goto nomem;
    if (src->nflt && !(out->fslots = fcg_malloc(ctx, (size_t)src->nflt * sizeof *out->fslots)))
        goto nomem;
    if (src->nint) memcpy(out->islots, src->islots, (size_t)src->nint * sizeof *out->islots);
    if (src->nflt) memcpy(out->fslots, src->fslots, (size_t)src->nflt * sizeof *out->fslots);
    return FC_OK;
nomem:
    fcx_kernel_src_free(ctx, out);
    return fcg_error(ctx, FC_ERR_NOMEM, "compile: out of memory");
}
