/*
 * codegen/kcompile.h - internal: a generated kernel -> its cubin for an arch, through the
 * kernel cache (in-process map, then LMDB), compiling with NVRTC on a miss. Prefix fcx_.
 */
#ifndef FUSEC_KCOMPILE_H
#define FUSEC_KCOMPILE_H

#include "cache.h"
#include "codegen.h"

/* How long a compile waits for another process compiling the same kernel (fcc_lock_key)
 * before compiling it too: longer than any one NVRTC compile, short of a hang. */
#define FCX_COMPILE_WAIT_MS 60000u

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

/* The NVRTC flags (nvrtc_compile.h's FCN_*) a generated kernel compiles with: the exact
 * tier's defaults, or --use_fast_math in the fast-math tier. The key's options follow them. */
unsigned fcx_nvrtc_flags(const fcx_kernel_src *src);

/* The key fields of a kernel's source for an arch. options_buf receives the joined NVRTC
 * options the fields point at. */
fc_status fcx_key_fields(const fcx_kernel_src *src, const char *arch, char *options_buf,
                         size_t options_size, fcc_key_fields *out, char *msg, size_t msg_size);

/* Looks the kernel up, compiling and storing it on a miss: fcx_key_fields, fcx_lookup, then
 * on a miss fcx_compile_missed. Thread-safe for one context when its allocator is (the default
 * is): errors go to msg (msg_size bytes), never to the context's message, so several threads
 * can compile at once (fusec warm -j N). With FUSEC_REQUIRE_CACHED a miss is
 * FC_ERR_NOT_CACHED with an explanation of the nearest entry. */
fc_status fcx_get_binary(fc_ctx *ctx, fcc_cache *cache, const fcx_kernel_src *src,
                         const char *arch, fcx_binary *out, char *msg, size_t msg_size);

/* The two halves of fcx_get_binary, for a caller that has the key already (the compile driver:
 * a hit then needs no source at all). Same thread-safety and messages.
 * fcx_lookup: out (key, cubin, size) filled when *found. @return FC_OK (hit or miss), or the
 * store's error. */
fc_status fcx_lookup(fcc_cache *cache, const fcc_key *key, fcx_binary *out, bool *found,
                     char *msg, size_t msg_size);
/* After a miss of key (the key of fields, which name src's whole text as their source):
 * FC_ERR_NOT_CACHED under FUSEC_REQUIRE_CACHED, else compiles with NVRTC for fields->arch
 * and stores the cubin. */
fc_status fcx_compile_missed(fc_ctx *ctx, fcc_cache *cache, const fcx_kernel_src *src,
                             const fcc_key_fields *fields, const fcc_key *key, fcx_binary *out,
                             char *msg, size_t msg_size);

#endif /* FUSEC_KCOMPILE_H */
