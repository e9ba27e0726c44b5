/*
 * backend/cuda_lib.h - internal: library kernels (matmul through cuBLAS, FFT through cuFFT) on
 * the CUDA backend. backend/cuda.c runs a plan's FCP_KERNEL_LIB kernels through fcr_lib_run.
 * The libraries are loaded with dlopen on first use, like libcuda, so a binary starts where
 * they are missing. Prefix fcr_lib_.
 */
#ifndef FUSEC_CUDA_LIB_H
#define FUSEC_CUDA_LIB_H

#include "plan.h"

#include <cuda.h>

/* The most inputs a library call reads (a sparse product's four arrays). */
#define FCR_LIB_MAX_IN 4

/* Runs library kernel k (k->kind == FCP_KERNEL_LIB, one output k->outs[0]) on stream:
 * in[i] is the device address of k->leaves[i]'s value (dense, row-major), out the address of
 * the output's buffer. *state is the context's library state (handles, plans, workspaces:
 * cuda_lib.c's comment says where each lives), created on first use; fcr_lib_release frees
 * it.
 * @return FC_OK; FC_ERR_UNSUPPORTED when this op/dtype has no library path (the caller then
 * computes it on the host); another status with a message in ctx on failure. */
fc_status fcr_lib_run(fc_ctx *ctx, void **state, CUstream stream, const fcp_kernel *k,
                      const CUdeviceptr *in, CUdeviceptr out);
/* Frees the library state (called with the CUDA context current, before it is released). */
void fcr_lib_release(fc_ctx *ctx, void *state);

/* Library calls in CUDA graphs. Whether k's call only queues work on its stream once what it
 * needs exists (matmul, FFT, sparse products): no host reads, syncs or allocations. */
bool fcr_lib_capturable(const fcp_kernel *k);
/* Queues k's work on `stream`, which the caller is capturing (cuStreamBeginCapture), as
 * fcr_lib_run would run it: the graph then holds the addresses in[], out and the workspaces
 * of `stream`. Nothing is made or allocated: FC_ERR_UNSUPPORTED, with no message, when the
 * call needs something first (a handle, a workspace for this stream, a cuFFT plan, a larger
 * scratch area) or is not capturable; the caller ends the capture and runs the call with
 * fcr_lib_run, which makes it. Another status (with a message) when the library failed. */
fc_status fcr_lib_capture(fc_ctx *ctx, void **state, CUstream stream, const fcp_kernel *k,
                          const CUdeviceptr *in, CUdeviceptr out);
/* A count of frees of what captured work may hold (workspaces, scratch, cuFFT plans): work
 * captured at another epoch may point at freed memory and must be captured again. */
uint64_t fcr_lib_epoch(const void *state);
/* Device bytes the state holds beyond single calls (workspaces, scratch, work areas): a part
 * of the context's in_use (fc_memory_stats.library). */
size_t fcr_lib_bytes(const void *state);
/* `stream` is about to be destroyed and its work is complete: its workspaces and cuFFT plans
 * go. */
void fcr_lib_stream_gone(fc_ctx *ctx, void *state, CUstream stream);
/* Frees every workspace, scratch area and cuFFT plan (fc_memory_trim; the context's work is
 * complete); each is made again on its next use. */
void fcr_lib_trim(fc_ctx *ctx, void *state);

/* np.sort / np.argsort (a SORT or ARGSORT node) of the dense rows at `in` into `out`, through
 * the radix sort kernels (backend/cuda_sort.c); *modules is the context's table of loaded
 * sort modules, one per dtype (fcr_sort_release frees it). FC_ERR_UNSUPPORTED for arrays of
 * 2^32 elements or more (32-bit indices), which then sort on the host. */
fc_status fcr_sort_run(fc_ctx *ctx, void **modules, CUstream stream, const fc_array *a,
                       CUdeviceptr in, CUdeviceptr out);
void fcr_sort_release(fc_ctx *ctx, void *modules);

/* The STENCIL2D node `a` of the dense input at x and weights at w into `out`, through the
 * stencil kernel generated for it (backend/cuda_stencil.c); flipped: w holds the source of
 * the weights' flat reverse (fcp_lib_source), read reversed. *modules is the context's table
 * of loaded stencil modules (fcr_stencil_release frees it). FC_ERR_UNSUPPORTED for an empty
 * kernel (the host's zeros are uploaded). */
fc_status fcr_stencil_run(fc_ctx *ctx, void **modules, CUstream stream, const fc_array *a,
                          CUdeviceptr x, CUdeviceptr w, bool flipped, CUdeviceptr out);
void fcr_stencil_release(fc_ctx *ctx, void *modules);

/* Device memory a library call may use while it runs (the stream's: its calls run one at a
 * time), and whether the call is being captured into a CUDA graph (fcr_lib_capture: then it
 * makes and allocates nothing). */
typedef struct fcr_lib_work {
    CUdeviceptr p;
    size_t bytes;
    bool capture;
} fcr_lib_work;

/* A matmul with its epilogue (e: passes/epilogue.c) as one cuBLASLt call
 * (backend/cuda_blaslt.c): out = relu?(A B + bias?), A at a (its transpose stored there when
 * ta), B at b (likewise tb), bias at `bias` when e->bias. *state is the context's cuBLASLt
 * state (handle, cached descriptors and algorithms), made on first use; fcr_lt_release frees
 * it. The algorithm works in work->p when its workspace fits there, else in a block of the
 * pool for the call. FC_ERR_UNSUPPORTED where cuBLASLt has no algorithm for the case (the
 * host computes it), and, while capturing, where the call would first have to make its
 * state, its plan or a workspace (fcr_lib_capture's convention). */
fc_status fcr_lt_matmul(fc_ctx *ctx, void **state, CUstream stream, const fcp_epilogue *e,
                        CUdeviceptr a, bool ta, CUdeviceptr b, bool tb, CUdeviceptr bias,
                        CUdeviceptr out, const fcr_lib_work *work);
void fcr_lt_release(fc_ctx *ctx, void *state);

/* What the CUDA backend (backend/cuda.c) lends the library kernels: stream-ordered device
 * memory counted in the context's statistics and limit, modules and launches through its
 * driver table, and the device's arch and multiprocessor count. */
fc_status fcr_lib_alloc(fc_ctx *ctx, size_t bytes, CUstream s, CUdeviceptr *out);
void fcr_lib_free(fc_ctx *ctx, CUdeviceptr p, size_t bytes, CUstream s);
/* Copies and fills on stream s: device to device (queued), zero `words` 4-byte words
 * (queued), device to host and host to device (each waits for the stream, so the host
 * buffer is complete, or free to go, on return). */
fc_status fcr_lib_copy(fc_ctx *ctx, CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream s);
fc_status fcr_lib_zero(fc_ctx *ctx, CUdeviceptr dst, size_t words, CUstream s);
fc_status fcr_lib_download(fc_ctx *ctx, void *dst, CUdeviceptr src, size_t bytes, CUstream s);
fc_status fcr_lib_upload(fc_ctx *ctx, CUdeviceptr dst, const void *src, size_t bytes, CUstream s);
fc_status fcr_lib_module(fc_ctx *ctx, const void *cubin, CUmodule *out);
void fcr_lib_module_unload(fc_ctx *ctx, CUmodule m);
fc_status fcr_lib_function(fc_ctx *ctx, CUmodule m, const char *name, CUfunction *out);
/* Asks for the largest shared-memory carveout for f (more resident blocks of a kernel whose
 * occupancy shared memory limits). */
fc_status fcr_lib_prefer_shared(fc_ctx *ctx, CUfunction f);
fc_status fcr_lib_occupancy(fc_ctx *ctx, CUfunction f, int block, int *blocks_per_sm);
fc_status fcr_lib_launch(fc_ctx *ctx, CUfunction f, unsigned grid, unsigned block, CUstream s,
                         void **args);
void fcr_lib_device(fc_ctx *ctx, const char **arch, int *sm_count);

/* Dense linear algebra of a stack of small matrices through batched routines
 * (backend/cuda_batched.c: cuBLAS's getrfBatched / getrsBatched, cuSOLVER's potrfBatched and
 * syevjBatched), for the LINALG node a (solve, slogdet, cholesky, eigh, eigvalsh) with in and
 * out as fcr_lib_run's. Called by cuda_lib.c's linear algebra with the context's cuBLAS and
 * cuSOLVER handles, on `stream`; lib is cuda_lib.c's state (its triangle copy). *state is
 * the context's batched state (the helper kernels' module, syevj's parameters), made on
 * first use; fcr_batched_release frees it.
 * @return FC_ERR_UNSUPPORTED, with no message, where the stack does not take the batched
 * path (one matrix, a large one, FUSEC_LINALG_BATCHED=0, a library without the routines) or
 * where syevjBatched did not converge on a matrix: the caller then runs its loop over the
 * stack; else what the loop would return (FC_ERR_LINALG for a singular or indefinite matrix,
 * with the same message). */
struct cublasContext;
struct cusolverDnContext;
fc_status fcr_batched_linalg(fc_ctx *ctx, void **state, void *lib, CUstream stream,
                             struct cublasContext *blas, struct cusolverDnContext *solver,
                             const fc_array *a, const CUdeviceptr *in, CUdeviceptr out);
void fcr_batched_release(fc_ctx *ctx, void *state);
/* (fcr_batched_counts_get, which tests read: backend/cuda_batched.h) */

/* What cuda_lib.c lends backend/cuda_batched.c: an entry point of the cuBLAS (blas) or
 * cuSOLVER library it loaded (NULL where missing), its checks of a cublasStatus_t or
 * cusolverStatus_t (FC_OK, or the error naming the call, its status and file:line), the
 * loop's infos check and slogdet finish (cuda_lib.c's check_infos, slogdet_finish), and the
 * triangle copy over a dense stack of count matrices rows x cols (src 0: zeros alone). */
void *fcr_lib_symbol(bool blas, const char *name);

/* A library loaded with dlopen on first use (cuda_lib.c's cuBLAS, cuFFT, cuSOLVER, cuSPARSE;
 * cuda_blaslt.c's cuBLASLt): whether it loaded, and why not. */
typedef struct fcr_library {
    int state; /* 0 untried, 1 loaded, -1 failed */
    char error[384];
    char soname[32];
} fcr_library;
/* A symbol to resolve: where its pointer goes, and its name ('?' first: optional). */
typedef struct fcr_sym {
    void **field;
    const char *name;
} fcr_sym;
#define FCR_SYM(api, field, name) {(void **)&(api).field, name}
/* dlopens the first of `names` that loads, then resolves `syms`; on failure lib->error says
 * why and no pointer is left set. Not thread-safe on first use, like the driver's loader. */
bool fcr_load_library(fcr_library *lib, const char *what, const char *const *names, int nnames,
                      const fcr_sym *syms, int nsyms);
/* A module of fusec's own kernels (codegen's raw sources: the triangle copy, the batched
 * helpers) for the context's device: src (owned, freed here; st the status of making it)
 * compiled or found in the kernel cache, loaded, and its n functions names[i] looked up into
 * fn[i]; *out the module, left as it is on failure (nothing stays loaded). */
fc_status fcr_lib_raw_module(fc_ctx *ctx, fc_status st, char *src, const char *const *names,
                             int n, CUfunction *fn, CUmodule *out);
fc_status fcr_lib_blas_status(fc_ctx *ctx, int status, const char *call, const char *file,
                              int line);
fc_status fcr_lib_solver_status(fc_ctx *ctx, int status, const char *call, const char *file,
                                int line);
fc_status fcr_lib_check_infos(fc_ctx *ctx, const fc_array *a, CUdeviceptr info, int64_t count,
                              int64_t batch, CUstream stream);
fc_status fcr_lib_slogdet_finish(fc_ctx *ctx, fc_dtype t, int64_t n, int64_t batch,
                                 CUdeviceptr a, CUdeviceptr diag, CUdeviceptr piv,
                                 CUdeviceptr info, CUdeviceptr out, CUstream stream);
fc_status fcr_lib_tri_copy(fc_ctx *ctx, void *lib, CUstream stream, size_t es, bool upper,
                           int64_t count, int64_t rows, int64_t cols, CUdeviceptr src,
                           CUdeviceptr dst);

#endif /* FUSEC_CUDA_LIB_H */
