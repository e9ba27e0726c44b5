/*
 * codegen/kcompile.c - kernel source -> cubin through the cache.
 */
#include "kcompile.h"

#include "nvrtc_compile.h"

#include <stdio.h>
#include <string.h>

static void close_store(void *store) { fcc_close(store); }

fc_status fcx_cache(fc_ctx *ctx, fcc_cache **out) {
    if (!ctx->kcache) {
        fcc_options o = fcc_options_default();
        o.dir = ctx->cache_dir;
        fcc_cache *c;
        fc_status st = fcc_open(&o, &c);
        if (st != FC_OK)
            return fcg_error(ctx, st, "kernel cache: cannot open it: %s", fc_strerror(st));
        const char *w = fcc_take_warning(c);
        if (w) fprintf(stderr, "fusec: warning: %s\n", w);
        ctx->kcache = c;
        ctx->kcache_close = close_store;
    }
    *out = ctx->kcache;
    return FC_OK;
}

unsigned fcx_nvrtc_flags(const fcx_kernel_src *src) {
    return src->fast_math ? FCN_FAST_MATH : 0u;
}

fc_status fcx_key_fields(const fcx_kernel_src *src, const char *arch, char *options_buf,
                         size_t options_size, fcc_key_fields *out, char *msg, size_t msg_size) {
    fcn_options o;
    fc_status st = fcn_options_make(&o, arch, fcx_nvrtc_flags(src), NULL, 0, msg, msg_size);
    if (st != FC_OK) return st;
    size_t len = 0;
    options_buf[0] = '\0';
    for (int i = 0; i < o.n; i++) {
        /* The arch is a key field of its own: keeping it out of the options makes an
         * arch-only miss explain itself as just that. */
        if (strncmp(o.opt[i], "--gpu-architecture=", 19) == 0) continue;
        int k = snprintf(options_buf + len, options_size - len, "%s%s", len ? " " : "", o.opt[i]);
        if (k < 0 || (size_t)k >= options_size - len) {
            snprintf(msg, msg_size, "NVRTC options too long");
            return FC_ERR_INVALID;
        }
        len += (size_t)k;
    }
    int major, minor;
    if ((st = fcn_version(&major, &minor)) != FC_OK) {
        snprintf(msg, msg_size, "NVRTC does not report its version");
        return st;
    }
    memset(out, 0, sizeof *out);
    out->codegen_version = FCX_CODEGEN_VERSION;
    out->source = src->src;
    out->source_len = src->len;
    out->options = options_buf;
    out->arch = arch;
    out->nvrtc_version = (uint32_t)(major * 1000 + minor * 10);
    out->kernel_name = FCX_KERNEL_NAME;
    return FC_OK;
}

fc_status fcx_lookup(fcc_cache *cache, const fcc_key *key, fcx_binary *out, bool *found,
                     char *msg, size_t msg_size) {
    memset(out, 0, sizeof *out);
    out->key = *key;
    fcc_entry e;
    fc_status st = fcc_get(cache, key, &e, found);
    if (st != FC_OK) {
        snprintf(msg, msg_size, "kernel cache: %s", fcc_errmsg(cache));
        return st;
    }
    if (*found) {
        out->cubin = e.cubin;
        out->size = e.cubin_size;
    }
    return FC_OK;
}

fc_status fcx_compile_missed(fc_ctx *ctx, fcc_cache *cache, const fcx_kernel_src *src,
                             const fcc_key_fields *fields, const fcc_key *key, fcx_binary *out,
                             char *msg, size_t msg_size) {
    memset(out, 0, sizeof *out);
    out->key = *key;
    const char *arch = fields->arch;
    fc_status st;
    if (fcc_require_cached(cache)) {
        char hex[33], why[600] = "no explanation available";
        fcc_key_to_hex(key, hex);
        fcc_explanation *ex = NULL;
        if (fcc_explain_miss(cache, fields, &ex) == FC_OK) {
            fcc_explanation_format(ex, why, sizeof why);
            fcc_explanation_free(ex);
        }
        snprintf(msg, msg_size, "FUSEC_REQUIRE_CACHED is set and kernel %s for %s is not in the "
                 "cache: %s", hex, arch, why);
        return FC_ERR_NOT_CACHED;
    }
    /* Processes that miss the same kernel at once compile it once: the first takes the key's
     * lock and compiles, the others wait, then find it stored. */
    int lock = -1;
    if ((st = fcc_lock_key(cache, key, FCX_COMPILE_WAIT_MS, &lock)) != FC_OK) {
        snprintf(msg, msg_size, "kernel cache: out of memory");
        return st;
    }
    fcc_entry e;
    bool found = false;
    if (lock >= 0 && fcc_get(cache, key, &e, &found) == FC_OK && found) {
        fcc_unlock_key(cache, key, lock);
        out->cubin = e.cubin;
        out->size = e.cubin_size;
        return FC_OK; /* another process compiled it while we waited */
    }
    fcn_cubin cb;
    st = fcn_compile(ctx, src->src, NULL, arch, fcx_nvrtc_flags(src), NULL, 0, &cb);
    if (st != FC_OK) {
        fcc_unlock_key(cache, key, lock);
        snprintf(msg, msg_size, "%s", cb.message ? cb.message : fc_strerror(st));
        fcn_cubin_free(ctx, &cb);
        return st;
    }
    /* The metadata says what the entry is, for `fusec cache list`; the launch recipe itself
     * is regenerated with the plan, so the binary alone is what must be cached. */
    char meta[128];
    int ml = snprintf(meta, sizeof meta, "fusec kernel; block %d; %d pointers, %d ints, %d floats",
                      src->block, src->nptr, src->nint, src->nflt);
    fc_status pst = fcc_put(cache, fields, src->summary, cb.data, cb.size, meta, (size_t)ml);
    fcc_unlock_key(cache, key, lock);
    out->compiled = true;
    out->compile_ms = cb.compile_ms;
    fcn_cubin_free(ctx, &cb);
    if (pst != FC_OK && pst != FC_ERR_IO) {
        snprintf(msg, msg_size, "kernel cache: %s", fcc_errmsg(cache));
        return pst;
    }
    /* Read it back: the store owns the bytes from here on (also after an I/O failure, when
     * the in-process map holds them). */
    found = false;
    if ((st = fcc_get(cache, key, &e, &found)) != FC_OK || !found) {
        snprintf(msg, msg_size, "kernel cache: the compiled kernel could not be stored");
        return st != FC_OK ? st : FC_ERR_IO;
    }
    out->cubin = e.cubin;
    out->size = e.cubin_size;
    return FC_OK;
}

fc_status fcx_get_binary(fc_ctx *ctx, fcc_cache *cache, const fcx_kernel_src *src,
                         const char *arch, fcx_binary *out, char *msg, size_t msg_size) {
    memset(out, 0, sizeof *out);
    char options[1024];
    fcc_key_fields f;
    fcc_key key;
    fc_status st = fcx_key_fields(src, arch, options, sizeof options, &f, msg, msg_size);
    if (st != FC_OK) return st;
    if ((st = fcc_key_compute(&f, &key)) != FC_OK) {
        snprintf(msg, msg_size, "kernel cache key: %s", fc_strerror(st));
        return st;
    }
    bool found;
    if ((st = fcx_lookup(cache, &key, out, &found, msg, msg_size)) != FC_OK || found) return st;
    return fcx_compile_missed(ctx, cache, src, &f, &key, out, msg, msg_size);
}
