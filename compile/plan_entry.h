/*
 * compile/plan_entry.h - internal: the persisted plan entry, the compile driver's start-up
 * shortcut. Prefix fck_.
 *
 * A program's kernels are keyed by their generated source, so without more a new process
 * must run codegen for every kernel only to find its cubin (W8's one kernel of 604 ops: about
 * 1 ms). The plan entry maps the program's structure to what codegen would give: for each
 * kernel of its plan in order, whether it is a library call, a fingerprint of the plan kernel
 * (leaves, nodes, outputs) and for a generated one its cache key for the arch and its launch
 * recipe (fcx_kernel_src without the text). A new process then plans the program, checks the
 * entry against the plan, and goes straight to the cubins.
 *
 * Its key is an ordinary kernel-cache key (cache/cache.h) whose "source" field names the
 * structure (fcg_plan_key, the in-process plan cache's key) and the build (fck_build_hash: a
 * hash of the sources of graph/, ref/, passes/, codegen/ and compile/), whose kernel name is
 * FCK_PLAN_ENTRY_NAME, with the codegen version, NVRTC options and version and arch of the
 * kernels'. So any change to what decides the plan or the code (a new build, another NVRTC,
 * other options, another arch) is another key; the stored value is checksummed like every
 * entry, and `fusec cache list|verify|export|import` treat it as one. The value's "cubin" is
 * the encoding below; a value that does not decode, or does not fit the plan, is a miss, as
 * is one of whose kernels a cubin is missing: the driver then takes the whole path and writes
 * the entry again.
 *
 * Encoding (little-endian): "FCPE", u32 version (FCK_PLAN_ENTRY_VERSION), u32 kernels, u32
 * zero, 16 bytes structure (lo, hi); per kernel: u8 lib, u8 x 3 zero, i32 leaves, i32 nodes,
 * i32 outputs; unless lib: key[16], i32 nptr, nint, nflt, strategy, block, vec,
 * ew_thread_steps, i32 flags (1 idx64, 2 splits), i32 fields[5], i32 cached[5], u64
 * static_smem, then per integer slot and per float slot: u8 kind, u8 x 3 zero, i32 node, i32
 * dim.
 */
#ifndef FUSEC_PLAN_ENTRY_H
#define FUSEC_PLAN_ENTRY_H

#include "cache.h"
#include "codegen.h"

#define FCK_PLAN_ENTRY_VERSION 2u
#define FCK_PLAN_ENTRY_NAME "fusec_plan"

/* A hash of the sources that decide plans and code, made at build time. */
extern const char fck_build_hash[];

/* One kernel of a plan entry. */
typedef struct fck_plan_kernel {
    bool lib;
    int nleaf, nnode, nout;   /* the plan kernel's fingerprint */
    fcc_key key;              /* !lib: the kernel's cache key for the entry's arch */
    fcx_kernel_src recipe;    /* !lib: src NULL, len 0, summary empty; slots owned */
} fck_plan_kernel;

/* The key fields and key of a program's entry for arch. The fields borrow options_buf and
 * source_buf (sizes at least 1024 and 128). On failure msg says why. */
fc_status fck_plan_entry_key(const fc_hash *structure, const char *arch, char *options_buf,
                             size_t options_size, char *source_buf, size_t source_size,
                             fcc_key_fields *fields, fcc_key *key, char *msg, size_t msg_size);

/* Encodes an entry (fcg_malloc'd, *size bytes; free with fcg_free). keys[i] is kernel i's key
 * (ignored for library calls; the kernels' own key fields are not read). */
fc_status fck_plan_entry_encode(fc_ctx *ctx, const fc_hash *structure, const fck_plan_kernel *k,
                                int nk, void **out, size_t *size);

/* Decodes a stored entry: false when it is malformed or of another structure (a miss).
 * *out (nk kernels) is freed with fck_plan_kernels_free. */
bool fck_plan_entry_decode(fc_ctx *ctx, const void *value, size_t size, const fc_hash *structure,
                           fck_plan_kernel **out, int *nk);

void fck_plan_kernels_free(fc_ctx *ctx, fck_plan_kernel *k, int nk);

/* A copy of src's recipe (no text, no summary) into *out. */
fc_status fck_recipe_copy(fc_ctx *ctx, const fcx_kernel_src *src, fcx_kernel_src *out);

/* For tests: another build hash (NULL: the real one), to prove a new build misses. */
void fck_plan_entry_set_build_for_tests(const char *build);

#endif /* FUSEC_PLAN_ENTRY_H */
