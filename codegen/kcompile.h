/*
 * codegen/kcompile.h - internal: a generated kernel -> its cubin for an arch, through the
 * kernel cache (in-process map, then LMDB), compiling with NVRTC on a miss. Prefix fcx_.
 */
#ifndef FUSEC_KCOMPILE_H
#define FUSEC_KCOMPILE_H

#include "cache.h"
#include "codegen.h"

typedef struct fcx_binary {
    const void *cubin;   /* owned by the cache store: valid until the context is destroyed */
    size_t size;
    bool compiled;       /* false: found in the cache */
    double compile_ms;   /* NVRTC time when compiled */
    fcc_key key;
} fcx_binary;

/* The context's cache store, opened on first use (ctx->cache_dir or the environment). A
 * warning of the store (an unusable directory) is printed once to stderr. */
fc_status fcx_cache(fc_ctx *ctx, fcc_cache **out);

/* The key fields of a kernel's source for an arch. options_buf receives the joined NVRTC
 * options the fields point at. */
fc_status fcx_key_fields(const fcx_kernel_src *src, const char *arch, char *options_buf,
                         size_t options_size, fcc_key_fields *out, char *msg, size_t msg_size);

/* Looks the kernel up, compiling and storing it on a miss. Thread-safe for one context when
 * its allocator is (the default is): errors go to msg (msg_size bytes), never to the context's
 * message, so warm -j N can run it on several threads. With FUSEC_REQUIRE_CACHED a miss is
 * FC_ERR_NOT_CACHED with an explanation of the nearest entry. */
fc_status fcx_get_binary(fc_ctx *ctx, fcc_cache *cache, const fcx_kernel_src *src,
                         const char *arch, fcx_binary *out, char *msg, size_t msg_size);

#endif /* FUSEC_KCOMPILE_H */
