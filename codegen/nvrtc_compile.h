/*
 * codegen/nvrtc_compile.h - generated CUDA C to cubin with NVRTC (internal, prefix fcn_).
 *
 * (Not named nvrtc.h: codegen/ is on the include path, and <nvrtc.h> must find CUDA's.)
 *
 * Needs no GPU and no driver: NVRTC builds a cubin for any real arch it supports, so CI can
 * warm a kernel cache for GPUs it does not have.
 *
 * The options. fcn_options_make gives the exact option list handed to NVRTC, in a fixed
 * order; the cache key hashes that list (plus fcn_version), so a changed default can never
 * reuse a stale binary. The defaults, and why:
 *   --std=c++17        pinned, so a new NVRTC default dialect cannot change the binary unseen
 *   -default-device    codegen may write helper functions without __device__
 *   --minimal          omits textures, device runtime and runtime-API types that fused kernels
 *                      never use: 1-2 ms less per compile here, ~5 ms on a faster host
 *   --fmad=false       no a*b+c contraction: + - * / sqrt then round like the host reference
 *                      (and NumPy), bit for bit (seen on an H200: y = a*b + c matched the
 *                      host's float result in 2^20 of 2^20 elements, and in only 74% with
 *                      contraction); fused kernels are memory bound, so FMA buys nothing
 *                      there (FCN_FMAD turns contraction back on)
 *   --ftz=false --prec-div=true --prec-sqrt=true
 *                      IEEE denormals, division and square root, pinned explicitly
 *   --gpu-architecture=sm_XX  always last
 * No include path is passed: generated source must be self-contained (no #include; f16/bf16
 * conversions can be one-line inline PTX, cvt.f32.f16 / cvt.rn.f16.f32 / cvt.rn.bf16.f32). The
 * CUDA headers cost compile time: cuda_fp16.h + cuda_bf16.h, or one <cuda/std/...> header, add
 * ~8 ms to a ~36 ms compile here and 15-25 ms to a ~8 ms one on a fast host. And an -I option
 * naming this machine's toolkit path would put that path into the cache key, so a cache warmed
 * on one machine would miss on another. A caller that really needs headers passes -I... as an
 * extra option (and so keys on it).
 *
 * The program name appears in NVRTC's log and, with -lineinfo, inside the cubin: give a name
 * that depends only on the source (a fixed name is best), or byte-identical sources could
 * yield different binaries.
 *
 * Kernels should be extern "C": no lowered-name (mangling) lookup is done here.
 *
 * Threads: every function here may run on several threads at once with the same context, as
 * long as the context's allocator is thread-safe (the default one is). They use the context
 * only for its allocator and never write its error message: a failure's full message (NVRTC's
 * log and the quoted source lines) is returned in the fcn_cubin; the caller copies it into the
 * context (fcg_error(ctx, st, "%s", cubin.message)) when it reports the error. Why: CI warms a
 * cache with N threads compiling at once, and the context's message buffer is not shared
 * safely (and, at FCG_ERRMSG_MAX bytes, too small for a long log).
 */
#ifndef FUSEC_NVRTC_COMPILE_H
#define FUSEC_NVRTC_COMPILE_H

#include "graph.h"

#include <stddef.h>

/* The status a kernel that fails to compile returns. The generated source is ours, so such a
 * failure means codegen produced something NVRTC rejects: "valid, but not supported by fusec
 * (yet)" is the closest public meaning. A dedicated FC_ERR_COMPILE would be clearer; this
 * name is the one place to change when it exists. */
#define FCN_ERR_COMPILE FC_ERR_COMPILE

/* Flags for fcn_options_make / fcn_compile. */
enum {
    FCN_LINEINFO = 1u << 0,  /* -lineinfo: source lines for profilers (+2-5 ms, larger cubin) */
    FCN_FMAD = 1u << 1,      /* allow fused multiply-add contraction (results differ from the
                                host reference in the last bit) */
    FCN_FAST_MATH = 1u << 2, /* --use_fast_math: approximate math, flushes denormals */
    FCN_RAW = 1u << 3,       /* a user's raw module (api/raw.c): CUDA's own defaults instead
                                of codegen's (no -default-device, no --minimal, contraction on
                                unless FCN_FAST_MATH; no --std when an extra option sets one) */
};

#define FCN_ARCH_MAX 16    /* an arch name with its NUL ("sm_100a") fits in this */
#define FCN_MAX_EXTRA 16   /* at most this many extra options */
#define FCN_MAX_OPTIONS (8 + FCN_MAX_EXTRA + 1)

/* The option list of one compile: opt[0..n) is exactly what NVRTC receives. */
typedef struct fcn_options {
    const char *opt[FCN_MAX_OPTIONS];
    int n;
    char arch_opt[32 + FCN_ARCH_MAX]; /* storage of the "--gpu-architecture=..." entry */
} fcn_options;

/* Fills *out: the defaults for `flags` (see the top of this file), then extra[0..n_extra)
 * (borrowed: they must outlive *out), then --gpu-architecture=arch. Checks the arch with
 * fcn_check_arch. msg (msg_size bytes, may be NULL) receives the reason on failure.
 * @return FC_OK; FC_ERR_NULL (out or arch NULL, or an extra option NULL); FC_ERR_INVALID (a
 *         malformed arch, n_extra < 0 or > FCN_MAX_EXTRA); FC_ERR_UNSUPPORTED (an arch this
 *         NVRTC cannot build). */
fc_status fcn_options_make(fcn_options *out, const char *arch, unsigned flags,
                           const char *const *extra, int n_extra, char *msg, size_t msg_size);

/* NVRTC's version (nvrtcVersion), for the cache key. @return FC_OK or FC_ERR_BACKEND. */
fc_status fcn_version(int *major, int *minor);

/* The real archs this NVRTC builds, as compute capabilities times ten (75, 80, 90, ...),
 * ascending. Writes at most cap of them to archs (may be NULL when cap is 0) and the total to
 * *n. @return FC_OK, FC_ERR_NULL or FC_ERR_BACKEND. */
fc_status fcn_supported_archs(int *archs, int cap, int *n);

/* Checks an arch name as the --arch option and fcn_compile take it: "sm_NN", "sm_NNa"
 * (arch-specific, NN >= 90) or "sm_NNf" (family-specific, NN >= 100), NN one of
 * fcn_supported_archs. Virtual archs (compute_NN) are refused: they give no cubin. On failure
 * writes a message saying what is wrong and which archs are supported to msg (msg_size bytes;
 * msg may be NULL).
 * @return FC_OK; FC_ERR_NULL; FC_ERR_INVALID (not of that form); FC_ERR_UNSUPPORTED (well
 *         formed, but this NVRTC cannot build it); FC_ERR_BACKEND (NVRTC would not answer). */
fc_status fcn_check_arch(const char *arch, char *msg, size_t msg_size);

/* One compile's result. Every pointer is fcg_malloc'd from the compiling context; release
 * with fcn_cubin_free (safe on a zeroed or already released fcn_cubin). */
typedef struct fcn_cubin {
    char arch[FCN_ARCH_MAX]; /* the arch it was built for ("" if the arch was rejected) */
    unsigned char *data;     /* the cubin: an ELF image; NULL on failure */
    size_t size;             /* bytes in data */
    char *log;               /* NVRTC's log, NUL-terminated ("" if it said nothing): kept on
                                success too, for warnings. NULL if NVRTC never ran */
    char *message;           /* on failure: what failed, NVRTC's log and the numbered source
                                lines its errors name; NULL on success (and when even the
                                message could not be allocated: FC_ERR_NOMEM) */
    double compile_ms;       /* wall-clock time of create + compile + fetching the cubin */
    size_t log_alloc, message_alloc; /* allocation sizes, for fcn_cubin_free */
} fcn_cubin;

/* Compiles the NUL-terminated CUDA C `source`, named `name` (NULL: "fusec_kernel.cu") in
 * NVRTC's log, for one real arch, with fcn_options_make(arch, flags, extra, n_extra). *out is
 * always initialised, on failure too.
 * @return FC_OK; FC_ERR_NULL (ctx, source, arch or out NULL); FC_ERR_INVALID /
 *         FC_ERR_UNSUPPORTED (a bad arch, see fcn_check_arch; or an extra option NVRTC
 *         refuses: FC_ERR_INVALID); FCN_ERR_COMPILE (the source does not compile:
 *         out->message quotes the log and the offending lines); FC_ERR_NOMEM; FC_ERR_BACKEND
 *         (NVRTC failed internally, e.g. its builtins library is missing). */
fc_status fcn_compile(fc_ctx *ctx, const char *source, const char *name, const char *arch,
                      unsigned flags, const char *const *extra, int n_extra, fcn_cubin *out);

/* fcn_compile for each of archs[0..n_archs), one cubin each, into out[0..n_archs). Every arch
 * is checked before anything compiles. Stops at the first failure: the entries before it stay
 * valid, the failing one holds the message, the rest are zeroed. Release all n_archs entries
 * with fcn_cubins_free. @return as fcn_compile (FC_ERR_INVALID if n_archs < 1). */
fc_status fcn_compile_archs(fc_ctx *ctx, const char *source, const char *name,
                            const char *const *archs, int n_archs, unsigned flags,
                            const char *const *extra, int n_extra, fcn_cubin *out);

/* fcn_compile with C++ name expressions (nvrtcAddNameExpression): names[0..nnames) are added
 * before compiling, and on success lowered[i] receives names[i]'s lowered (mangled) name,
 * fcg_malloc'd (fcn_names_free). An unknown name expression fails the compile. */
fc_status fcn_compile_named(fc_ctx *ctx, const char *source, const char *name, const char *arch,
                            unsigned flags, const char *const *extra, int n_extra,
                            const char *const *names, int nnames, char **lowered,
                            fcn_cubin *out);
void fcn_names_free(fc_ctx *ctx, char **lowered, int nnames);

void fcn_cubin_free(fc_ctx *ctx, fcn_cubin *c);
void fcn_cubins_free(fc_ctx *ctx, fcn_cubin *c, int n);

#endif
