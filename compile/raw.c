/*
 * compile/raw.c - raw modules to cubins through the kernel cache (see raw.h).
 */
#include "raw.h"

#include "kcompile.h"
#include "nvrtc_compile.h"

#include <stdio.h>
#include <string.h>

/* Bumped when what this file stores or keys changes. */
#define FCK_RAW_VERSION 1u
/* The kernel-name key field of raw modules (a module has many kernels). */
#define FCK_RAW_KERNEL_NAME "raw_module"
/* NVRTC's name for the program, in its messages. */
#define FCK_RAW_PROGRAM "module.cu"

void fck_raw_binary_free(fc_ctx *ctx, fck_raw_binary *b) {
    fcn_names_free(ctx, b->lowered, b->nnames);
    memset(b, 0, sizeof *b);
}

/* The user's options and the name expressions, one string: part of the key (names change
 * what is instantiated). */
static fc_status options_text(fc_ctx *ctx, const char *arch, const char *const *options,
                              int noptions, const char *const *names, int nnames, fcg_sb *out) {
    fcn_options o;
    char why[512];
    fc_status st = fcn_options_make(&o, arch, FCN_RAW, options, noptions, why, sizeof why);
    if (st != FC_OK) return fcg_error(ctx, st, "raw module: %s", why);
    for (int i = 0; i < o.n; i++) {
        if (strncmp(o.opt[i], "--gpu-architecture=", 19) == 0) continue;
        fcg_sb_printf(out, "%s%s", out->len ? " " : "", o.opt[i]);
    }
    for (int i = 0; i < nnames; i++) fcg_sb_printf(out, " name-expression=%s", names[i]);
    return out->failed ? fcg_error(ctx, FC_ERR_NOMEM, "raw module: out of memory") : FC_OK;
}

/* The stored metadata: the lowered names, NUL-separated, in the order of the expressions. */
static fc_status names_from_meta(fc_ctx *ctx, const char *meta, size_t size, int nnames,
                                 fck_raw_binary *out) {
    size_t at = 0;
    for (int i = 0; i < nnames; i++) {
        const char *s = meta + at;
        size_t len = at < size ? strnlen(s, size - at) : size;
        if (at >= size || at + len >= size) return FC_ERR_IO; /* not ours: compile again */
        if (!(out->lowered[i] = fcg_malloc(ctx, len + 1))) return FC_ERR_NOMEM;
        memcpy(out->lowered[i], s, len + 1);
        out->nnames = i + 1;
        at += len + 1;
    }
    return FC_OK;
}

fc_status fck_raw_compile(fc_ctx *ctx, const char *source, const char *const *options,
                          int noptions, const char *const *names, int nnames, const char *arch,
                          fck_raw_binary *out) {
    memset(out, 0, sizeof *out);
    if (nnames < 0 || nnames > FCK_RAW_MAX_NAMES)
        return fcg_error(ctx, FC_ERR_INVALID, "raw module: %d name expressions (at most %d)",
                         nnames, FCK_RAW_MAX_NAMES);
    fcg_sb opts = {.ctx = ctx};
    fc_status st = options_text(ctx, arch, options, noptions, names, nnames, &opts);
    int major = 0, minor = 0;
    if (st == FC_OK && fcn_version(&major, &minor) != FC_OK)
        st = fcg_error(ctx, FC_ERR_BACKEND, "raw module: NVRTC does not report its version");
    fcc_cache *cache = NULL;
    if (st == FC_OK) st = fcx_cache(ctx, &cache);
    fcc_key_fields f;
    memset(&f, 0, sizeof f);
    f.codegen_version = FCK_RAW_VERSION;
    f.source = source;
    f.source_len = strlen(source);
    f.options = opts.s ? opts.s : "";
    f.arch = arch;
    f.nvrtc_version = (uint32_t)(major * 1000 + minor * 10);
    f.kernel_name = FCK_RAW_KERNEL_NAME;
    fcc_key key;
    if (st == FC_OK) st = fcc_key_compute(&f, &key);
    fcc_entry e;
    bool found = false;
    if (st == FC_OK && fcc_get(cache, &key, &e, &found) == FC_OK && found &&
        names_from_meta(ctx, e.meta, e.meta_size, nnames, out) == FC_OK) {
        out->cubin = e.cubin;
        out->size = e.cubin_size;
        fcg_sb_free(&opts);
        return FC_OK;
    }
    fcn_names_free(ctx, out->lowered, out->nnames);
    out->nnames = 0;
    if (st == FC_OK && fcc_require_cached(cache)) {
        char hex[33];
        fcc_key_to_hex(&key, hex);
        st = fcg_error(ctx, FC_ERR_NOT_CACHED, "FUSEC_REQUIRE_CACHED is set and raw module %s for "
                       "%s is not in the cache", hex, arch);
    }
    fcn_cubin cb;
    memset(&cb, 0, sizeof cb);
    if (st == FC_OK) {
        st = fcn_compile_named(ctx, source, FCK_RAW_PROGRAM, arch, FCN_RAW, options, noptions,
                               names, nnames, out->lowered, &cb);
        if (st != FC_OK)
            fcg_error(ctx, st, "raw module: %s", cb.message ? cb.message : fc_strerror(st));
        else
            out->nnames = nnames;
    }
    fcg_sb meta = {.ctx = ctx};
    for (int i = 0; st == FC_OK && i < nnames; i++) {
        fcg_sb_puts(&meta, out->lowered[i]);
        fcg_sb_puts(&meta, "|"); /* replaced by NUL below: fcg_sb holds C strings */
    }
    if (st == FC_OK && meta.failed) st = fcg_error(ctx, FC_ERR_NOMEM, "raw module: out of memory");
    if (st == FC_OK) {
        for (size_t i = 0; i < meta.len; i++)
            if (meta.s[i] == '|') meta.s[i] = '\0';
        char summary[160];
        snprintf(summary, sizeof summary, "raw module (%d name expressions, %zu bytes of source)",
                 nnames, f.source_len);
        fc_status pst = fcc_put(cache, &f, summary, cb.data, cb.size, meta.s, meta.len);
        if (pst != FC_OK && pst != FC_ERR_IO)
            st = fcg_error(ctx, pst, "kernel cache: %s", fcc_errmsg(cache));
        else if (fcc_get(cache, &key, &e, &found) != FC_OK || !found)
            st = fcg_error(ctx, FC_ERR_IO, "kernel cache: the compiled module could not be stored");
        else {
            out->cubin = e.cubin;
            out->size = e.cubin_size;
            out->compiled = true;
        }
    }
    fcn_cubin_free(ctx, &cb);
    fcg_sb_free(&meta);
    fcg_sb_free(&opts);
    if (st != FC_OK) fck_raw_binary_free(ctx, out);
    return st;
}
