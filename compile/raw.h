/*
 * compile/raw.h - internal: a user's raw module (api/raw.c) to a cubin for one arch, through
 * the kernel cache like generated kernels (prefix fck_).
 *
 * The key covers the source, the NVRTC options (FCN_RAW's defaults and the user's), the name
 * expressions, the arch and NVRTC's version. The lowered names of the name expressions are
 * stored with the cubin (the entry's metadata), so a hit needs no NVRTC at all.
 */
#ifndef FUSEC_COMPILE_RAW_H
#define FUSEC_COMPILE_RAW_H

#include "cache.h"
#include "graph.h"

#define FCK_RAW_MAX_NAMES 64

typedef struct fck_raw_binary {
    const void *cubin; /* owned by the cache store: valid until the context is destroyed */
    size_t size;
    bool compiled;     /* false: found in the cache */
    int nnames;
    char *lowered[FCK_RAW_MAX_NAMES]; /* fcg_malloc'd; fck_raw_binary_free */
} fck_raw_binary;

/* Compiles (or finds) source with the user's options for arch. On failure the context's
 * message holds NVRTC's log with the offending source lines ("module.cu(LINE): error: ..."). */
fc_status fck_raw_compile(fc_ctx *ctx, const char *source, const char *const *options,
                          int noptions, const char *const *names, int nnames, const char *arch,
                          fck_raw_binary *out);
void fck_raw_binary_free(fc_ctx *ctx, fck_raw_binary *b);

#endif /* FUSEC_COMPILE_RAW_H */
