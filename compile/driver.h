/*
 * compile/driver.h - internal: the compile driver, the one place that strings the compile
 * path's stages together. Prefix fck_.
 *
 *     arrays --plan--> fcp_plan --generate--> fcx_kernel_src per kernel --key--> fcc_key per
 *     kernel and arch --look up--> cached or not --compile--> cubin (NVRTC, stored in the cache)
 *
 * Every caller takes kernels through it as far as it needs (fck_stage) and reads the result:
 * the CUDA runtime (a miss of its plan cache: binaries for the device's arch, which it then
 * loads), `fusec dump` (sources and keys), `fusec explain` (keys and lookups, with the reason
 * of each miss), and `fusec warm` (a batch of many programs: binaries for several archs, each
 * distinct kernel once, compiled on N threads with progress).
 *
 * Threads: planning and codegen walk the graph, which belongs to one thread at a time, so
 * fck_add runs on the calling thread. Only fck_build's lookups and compiles (codegen/kcompile.h,
 * thread-safe for one context when its allocator is; the default one is) run on workers, and
 * they never write the context's message: each target keeps its own.
 */
#ifndef FUSEC_DRIVER_H
#define FUSEC_DRIVER_H

#include "cache.h"
#include "codegen.h"
#include "plan.h"

/* How far a kernel is taken; each stage includes the ones before. */
typedef enum fck_stage {
    FCK_PLAN,   /* the plan only */
    FCK_SOURCE, /* and every kernel's generated source and launch recipe */
    FCK_KEY,    /* and its cache key for each arch */
    FCK_LOOKUP, /* and whether the cache holds it; nothing is compiled, a miss is explained */
    FCK_BINARY  /* and its binary: from the cache, else compiled with NVRTC and stored (with
                   FUSEC_REQUIRE_CACHED a miss fails instead, FC_ERR_NOT_CACHED) */
} fck_stage;

/* What became of one kernel for one arch. */
typedef enum fck_state {
    FCK_PENDING,  /* not looked up yet (below FCK_LOOKUP, or not reached) */
    FCK_CACHED,   /* found in the cache */
    FCK_COMPILED, /* compiled now (and stored) */
    FCK_MISSED,   /* FCK_LOOKUP: not in the cache; message says why (the nearest entry) */
    FCK_FAILED    /* status and message say why */
} fck_state;

/* One kernel for one arch. */
typedef struct fck_target {
    fcc_key key;
    fcc_key_fields fields;  /* what the key hashes; strings borrowed from the result (source is
                               the kernel's src.src: NULL in a batch, see fck_options.batch) */
    fck_state state;
    fc_status status;       /* FCK_FAILED: why */
    const void *cubin;      /* FCK_CACHED / FCK_COMPILED: owned by the cache store, valid until
                               its last fcc_close (the context's: until fc_ctx_destroy) */
    size_t cubin_size;
    double compile_ms;      /* FCK_COMPILED: NVRTC's time */
    char *message;          /* FCK_FAILED / FCK_MISSED: the full message; else NULL */
} fck_target;

/* One kernel, as far as the stage took it. */
typedef struct fck_kernel {
    const fcp_kernel *k;    /* the plan's kernel; NULL in a batch (plans are not kept) */
    int program;            /* the fck_add call that brought it, counted from 0 */
    int index;              /* its index in that program's plan */
    bool lib;               /* a library call: nothing to generate or compile (never in a
                               batch) */
    fcx_kernel_src src;     /* FCK_SOURCE on; in a batch src.src is NULL: the text is held
                               without the device prelude until it is built */
    fck_target *targets;    /* FCK_KEY on: one per arch, in the order of fck_options.archs */
} fck_kernel;

/* Progress of fck_build, for a display. */
typedef struct fck_progress {
    int done, total;        /* targets (kernel x arch) finished / to build in this call */
    int compiled, cached, missed, failed; /* of those finished */
    double elapsed_s;       /* since the build began */
    const fck_kernel *kernel; /* the kernel a target of which just finished (its state says
                                 how), or NULL for a periodic call */
    int arch;               /* that target's arch index */
} fck_progress;

/* Called serialised (never two at once), with the driver's lock held: from a worker right
 * after each target finishes (kernel set), and from the calling thread after each such
 * finish and at least every 100 ms while targets remain (kernel NULL). It must not call the
 * driver. */
typedef void (*fck_progress_fn)(const fck_progress *p, void *user);

typedef struct fck_options {
    fck_stage stage;
    const char *const *archs; /* targets ("sm_90"); copied. FCK_KEY on: at least one */
    int narch;
    fcc_cache *cache;       /* FCK_LOOKUP on: the store; NULL: the context's (fcx_cache) */
    bool batch;             /* kernels of many programs (fck_add per program): each distinct
                               kernel (by its key for archs[0]) is held once and later ones
                               are counted as duplicates; library calls are left out; plans
                               are not kept; sources are held without the prelude (~50 KB, the
                               same in every kernel) so that thousands of kernels stay small */
    int threads;            /* fck_build: compile threads; 0: one per CPU (at most 64). With 1
                               and no progress callback, everything runs on the calling
                               thread */
    bool keep_going;        /* fck_build: after a target fails, build the rest anyway (else
                               those not yet started stay FCK_PENDING) */
    fck_progress_fn progress; /* fck_build (may be NULL) */
    void *progress_user;
    const fc_hash *plan_key; /* the arrays' fcg_plan_key, when the caller has it (the runtime);
                                NULL: computed here. Names the persisted plan entry */
    bool no_plan_entry;     /* neither use nor write persisted plan entries */
} fck_options;

/* What became of a program's persisted plan entry (compile/plan_entry.h). */
typedef enum fck_plan_state {
    FCK_PLAN_UNUSED,  /* not looked up: a batch, below FCK_LOOKUP, no_plan_entry, or a program
                         of library calls alone (nothing to skip) */
    FCK_PLAN_HIT,     /* found for every arch and fits the plan; at FCK_BINARY it served the
                         program: no kernel was generated or keyed, each target is FCK_CACHED
                         and each kernel's src holds its recipe without text (src NULL) and
                         its targets no key fields */
    FCK_PLAN_MISS,    /* not in the cache for some arch */
    FCK_PLAN_STALE    /* found, but it does not decode (or memory ran out decoding it),
                         does not fit the plan, or (at FCK_BINARY) a kernel it names is not
                         cached: the whole path ran */
} fck_plan_state;

/* The driver's result. Read-only to callers. */
typedef struct fck_result {
    fc_ctx *ctx;
    fcp_plan *plan;         /* the program's plan (not in a batch; NULL when planning failed) */
    int nkernel;
    fck_kernel *kernels;    /* one program: the plan's kernels in order, up to the one that
                               failed (error_kernel); a batch: each distinct kernel once */
    int narch;
    const char *const *archs;
    /* The last fck_add's failure: error != FC_OK. The context's message says what failed. */
    fc_status error;
    fck_stage error_stage;  /* FCK_PLAN (planning), FCK_SOURCE (codegen, or memory while
                               holding a kernel) or FCK_KEY */
    int error_kernel;       /* FCK_SOURCE / FCK_KEY: the plan index of the kernel; else -1 */
    /* Counts. */
    int programs;           /* programs planned */
    int duplicates;         /* a batch: kernels not held again (same key as one held) */
    int targets;            /* kernels to build x archs (library calls excluded) */
    int compiled, cached, missed, failed; /* targets, as built so far */
    fck_plan_state plan_entry; /* one program: its persisted plan entry */
    int plan_entries_written;  /* FCK_BINARY: entries stored (per program and arch) once all
                                  their kernels were built; one already stored, byte for
                                  byte, is not written again */
} fck_result;

/* Defaults: FCK_BINARY, no archs, the context's cache, one thread, stop at the first
 * failure, no progress, plan entries used and written.
 *
 * Plan entries: at FCK_BINARY a program (not a batch) is served from its persisted plan entry
 * when there is one for every arch and every kernel it names is cached; otherwise the whole
 * path runs and, once every kernel is built, the entry is written for each arch (a batch
 * writes one per program too). At FCK_LOOKUP the entry is only looked up (plan_entry says
 * what was found); below that it is not looked at. */
fck_options fck_options_default(void);

/* An empty result. @return FC_OK; FC_ERR_INVALID (no arch from FCK_KEY on, a NULL one, or a
 *         batch below FCK_KEY); FC_ERR_NOMEM. The context's message is set on failure. */
fc_status fck_result_create(fc_ctx *ctx, const fck_options *opt, fck_result **out);

/* Plans arrays[0..n) and takes every kernel to min(stage, FCK_KEY), on the calling thread.
 * One program per result unless batch. A failure is recorded (error, error_stage,
 * error_kernel; the context's message) and returned; the kernels done before it stay held.
 * @return FC_OK; FC_ERR_INVALID (a second program without batch); a planning or codegen
 *         status; a key's status (a bad arch); FC_ERR_NOMEM. */
fc_status fck_add(fck_result *r, fc_array *const *arrays, int n);

/* Takes every pending target to the stage (FCK_LOOKUP, FCK_BINARY; nothing below that), on
 * opt.threads threads. @return FC_OK; else the status of the first target (in kernel, then
 * arch order) that failed, with its message in the context's; or opening the context's cache
 * failed. A miss under FCK_LOOKUP is no failure. */
fc_status fck_build(fck_result *r);

/* One program, the whole way: fck_result_create, fck_add, and fck_build (also of the kernels
 * before one that failed to generate, as they would have been built in order).
 * *out is set whenever a result could be made, on failure too (free it with
 * fck_result_free). @return FC_OK, or the first failure in kernel order. */
fc_status fck_compile(fc_ctx *ctx, fc_array *const *arrays, int n, const fck_options *opt,
                      fck_result **out);

/* Frees the result, its plan and sources (binaries stay with the cache store). NULL is
 * ignored. */
void fck_result_free(fck_result *r);

#endif /* FUSEC_DRIVER_H */
