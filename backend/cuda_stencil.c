/*
 * backend/cuda_stencil.c - the STENCIL2D node (convolve2d / correlate2d's direct method) on
 * the GPU: fusec's stencil kernel (codegen/stencil.c), generated for the node's dtype, kernel
 * extent, origin, boundary and index width, compiled through the kernel cache as a raw module
 * (so `fusec cache list` shows it and a warm cache skips NVRTC) and run here as a library
 * call: one launch, the input and weights as they are stored, the output written once.
 *
 * The loaded modules are kept per context in a small table keyed by the generator's
 * descriptor, so a program that convolves with the same kernel shape again loads nothing.
 */
#include "graph.h"

#include "codegen.h"
#include "cuda_lib.h"
#include "raw.h"

#include <string.h>

typedef struct stencil_module {
    fcx_stencil key;
    CUmodule mod;
    CUfunction fn;
    int per_sm; /* resident blocks a multiprocessor */
} stencil_module;

typedef struct stencil_modules {
    stencil_module *m;
    int n, cap;
} stencil_modules;

void fcr_stencil_release(fc_ctx *ctx, void *modules) {
    stencil_modules *t = modules;
    if (!t) return;
    for (int i = 0; i < t->n; i++) fcr_lib_module_unload(ctx, t->m[i].mod);
    fcg_free(ctx, t->m, (size_t)t->cap * sizeof *t->m);
    fcg_free(ctx, t, sizeof *t);
}

/* The loaded kernel for descriptor key: compiled (or found in the kernel cache) on first
 * use. */
static fc_status module_for(fc_ctx *ctx, void **modules, const fcx_stencil *key,
                            const stencil_module **out) {
    if (!*modules && !(*modules = fcg_calloc(ctx, sizeof(stencil_modules))))
        return fcg_error(ctx, FC_ERR_NOMEM, "stencil2d: out of memory");
    stencil_modules *t = *modules;
    for (int i = 0; i < t->n; i++)
        if (memcmp(&t->m[i].key, key, sizeof *key) == 0) {
            *out = &t->m[i];
            return FC_OK;
        }
    if (t->n == t->cap) {
        int cap = t->cap ? 2 * t->cap : 4;
        stencil_module *m = fcg_realloc(ctx, t->m, (size_t)t->cap * sizeof *m,
                                        (size_t)cap * sizeof *m);
        if (!m) return fcg_error(ctx, FC_ERR_NOMEM, "stencil2d: out of memory");
        t->m = m;
        t->cap = cap;
    }
    const char *arch;
    int sms;
    fcr_lib_device(ctx, &arch, &sms);
    char *src = NULL;
    fc_status st = fcx_stencil_source(ctx, key, "fcv_stencil", &src);
    fck_raw_binary bin;
    memset(&bin, 0, sizeof bin);
    if (st == FC_OK) st = fck_raw_compile(ctx, src, NULL, 0, NULL, 0, arch, &bin);
    if (src) fcg_strfree(ctx, src);
    stencil_module m;
    memset(&m, 0, sizeof m);
    m.key = *key;
    if (st == FC_OK) st = fcr_lib_module(ctx, bin.cubin, &m.mod);
    fck_raw_binary_free(ctx, &bin);
    if (st == FC_OK) st = fcr_lib_function(ctx, m.mod, "fcv_stencil", &m.fn);
    if (st == FC_OK) st = fcr_lib_occupancy(ctx, m.fn, FCX_STENCIL_THREADS, &m.per_sm);
    if (st != FC_OK) {
        fcr_lib_module_unload(ctx, m.mod);
        return st;
    }
    if (m.per_sm < 1) m.per_sm = 1;
    t->m[t->n] = m;
    *out = &t->m[t->n++];
    return FC_OK;
}

fc_status fcr_stencil_run(fc_ctx *ctx, void **modules, CUstream s, const fc_array *a,
                          CUdeviceptr x, CUdeviceptr w, bool flipped, CUdeviceptr out) {
    const fc_array *in = a->in[0], *wt = a->in[1];
    long long h = in->shape[0], wd = in->shape[1], oh = a->shape[0], ow = a->shape[1];
    /* an empty sum (zeros) or an output of nothing: the host's few values, uploaded */
    if (wt->shape[0] == 0 || wt->shape[1] == 0) return FC_ERR_UNSUPPORTED;
    if (oh == 0 || ow == 0) return FC_OK;
    fcx_stencil key;
    fcx_stencil_plan(&key, (fc_dtype)a->dtype, wt->shape[0], wt->shape[1], a->p.a[0], a->p.a[1],
                     a->p.mode, h, wd, oh, ow);
    key.flipped = flipped;
    const stencil_module *m = NULL;
    fc_status st = module_for(ctx, modules, &key, &m);
    if (st != FC_OK) return st;
    const char *arch;
    int sms;
    fcr_lib_device(ctx, &arch, &sms);
    uint64_t tiles_x;
    long long tiles = (long long)fcx_stencil_tiles(&key, oh, ow, &tiles_x);
    long long tx = (long long)tiles_x;
    /* blocks take tiles grid-stride: a few waves of resident blocks cover any size */
    uint64_t grid = (uint64_t)sms * (uint64_t)m->per_sm * 8;
    if (grid > (uint64_t)tiles) grid = (uint64_t)tiles;
    double fre = a->p.re, fim = a->p.im;
    void *args[] = {&x, &w, &out, &h, &wd, &oh, &ow, &tx, &tiles, &fre, &fim};
    return fcr_lib_launch(ctx, m->fn, (unsigned)grid, FCX_STENCIL_THREADS, s, args);
}
