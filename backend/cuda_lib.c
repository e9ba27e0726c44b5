/*
 * backend/cuda_lib.c - library kernels on the CUDA backend: matmul through cuBLAS, the FFTs
 * through cuFFT, sorts through fusec's own radix sort kernels (backend/cuda_sort.c), the
 * direct convolution through fusec's stencil kernel (backend/cuda_stencil.c).
 *
 * Neither library is linked: libcublas and libcufft are loaded with dlopen on first use (like
 * libcuda), so a binary starts where they are missing and a program that uses neither never
 * needs them. The toolkit's headers give types and enums only; every entry point is resolved
 * with dlsym into a pointer of the header's own type (__typeof__), so a signature cannot drift
 * from the library's.
 *
 * Matmul follows np.matmul as fc_matmul defines it. Buffers are row-major; cuBLAS is
 * column-major, so C = A B is computed as C^T = B^T A^T, which reads the same bytes with no
 * transpose. Batches that broadcast become strided batches (stride 0 for a broadcast
 * operand) after merging batch dims that step uniformly; what cannot merge is a loop. A batch
 * of A times one shared B is a single GEMM with the batch folded into A's rows. An operand
 * given as the transpose of a stored matrix (x.T: fusion stores x, not x.T) is read through
 * cuBLAS's transpose flag. f16 and bf16
 * accumulate in f32 and round once; f32 uses the default math mode (no TF32), so results stay
 * within f32 tolerances of the host reference. Operands of another dtype than the result's
 * (mixed-dtype or integer matmuls) and empty inner dimensions have no library path here:
 * FC_ERR_UNSUPPORTED sends them to the host reference.
 *
 * The FFTs are graph/fft.c's FFTN nodes: cuFFT's own complex, real-to-complex and
 * complex-to-real transforms over a run of up to three adjacent axes of a dense array, one
 * plan (run_fft says how the layout maps). Plans are cached per context by layout, type and
 * stream (a complex plan serves both directions). They are unscaled: NumPy's norm factor is an
 * elementwise multiplication that fuses into the kernel after the call.
 *
 * A sparse matrix times a dense operand (CSR_MATMUL) is one call of cuSPARSE's generic API:
 * SpMV for a vector, SpMM for a row-major matrix (B and C as they lie, ld = their width),
 * the CSR descriptor made over the node's buffers as they are (int32 or int64 indices, one
 * type for both arrays, zero base), alpha 1 and beta 0 in the value type, which is also the
 * compute type. The constructors (graph/sparse.c) have checked the indices; cuSPARSE trusts
 * them. Descriptors are made and destroyed per call (they are host structs), the buffer is
 * the stream's scratch (below).
 *
 * Workspaces. Everything a library call keeps on the device comes from fcr_lib_alloc, so it
 * counts in the context's memory statistics (fc_memory_stats.in_use, and .library for what
 * the library state holds) and its limit:
 *   - cuBLAS's workspace: one per stream (cuBLAS requires it: two streams must not share one),
 *     of the size cuBLAS's documentation recommends (32 MiB from sm_90, 4 MiB before; 64 KiB
 *     where the limit leaves no more), handed to the handle with cublasSetWorkspace whenever
 *     the handle moves to another stream (cublasSetStream resets it to cuBLAS's own pool);
 *     cuBLAS then never allocates, which stream capture needs; cuBLASLt's calls
 *     (backend/cuda_blaslt.c) on the stream work in it too;
 *   - a stream's scratch: C2R's copy of its input (cuFFT overwrites it), cuSPARSE's buffer;
 *     grown to the largest need met on the stream, never shrunk;
 *   - cuFFT's work areas: auto-allocation is off, each plan gets an area of the size
 *     cufftMakePlanMany64 reports (cufftSetWorkArea), freed with the plan. A plan belongs to
 *     one stream (set when it is made), so no two streams share an area.
 * They live in the context's library state and go when their stream is destroyed
 * (fcr_lib_stream_gone), when fc_memory_trim asks (fcr_lib_trim; remade on next use) or
 * with the context (fcr_lib_release). A cuFFT plan also goes when it is the least recently
 * used of FCR_LIB_MAX_PLANS. cuFFT's and cuBLAS's own small internal tables are theirs and
 * not counted.
 *
 * CUDA graphs. A cached plan whose library calls are all capturable (fcr_lib_capturable:
 * matmul, with or without a cuBLASLt epilogue, FFT and sparse products, whose calls only
 * queue work on the stream) replays as one
 * CUDA graph: backend/cuda.c captures each call (fcr_lib_capture) into a child graph. The
 * captured work holds the addresses it was given and those of the workspaces above, so
 * fcr_lib_epoch counts every free of a workspace, scratch area or plan: work captured before
 * a change is captured again. During a capture nothing is made or allocated: a call that
 * would need to (a new stream, plan or larger scratch) returns FC_ERR_UNSUPPORTED and the
 * caller runs it directly, which makes what it needs. Dense linear algebra reads devInfo back
 * on the host and sorts allocate per call: they are not capturable.
 */
#include "graph.h"

#include "codegen.h"
#include "cuda_lib.h"
#include "raw.h"

#include <cublas_v2.h>
#include <cufft.h>
#include <cusolverDn.h>
#include <cusparse.h>
#include <dlfcn.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the libraries, loaded once per process --------------------------------------------- */

typedef struct blas_api {
    __typeof__(cublasCreate_v2) *Create;
    __typeof__(cublasDestroy_v2) *Destroy;
    __typeof__(cublasSetStream_v2) *SetStream;
    __typeof__(cublasSetWorkspace_v2) *SetWorkspace;
    __typeof__(cublasSetMathMode) *SetMathMode;
    __typeof__(cublasGemmEx) *GemmEx;
    __typeof__(cublasGemmStridedBatchedEx) *GemmStridedBatchedEx;
    __typeof__(cublasGemmEx_64) *GemmEx_64;                               /* optional */
    __typeof__(cublasGemmStridedBatchedEx_64) *GemmStridedBatchedEx_64;   /* optional */
    __typeof__(cublasGetStatusName) *GetStatusName;                       /* optional */
    /* dense linear algebra's transposes and strided gathers, per dtype */
    __typeof__(cublasSgeam) *Sgeam;
    __typeof__(cublasDgeam) *Dgeam;
    __typeof__(cublasCgeam) *Cgeam;
    __typeof__(cublasZgeam) *Zgeam;
    __typeof__(cublasScopy_v2) *Scopy;
    __typeof__(cublasDcopy_v2) *Dcopy;
    __typeof__(cublasZcopy_v2) *Zcopy;
} blas_api;

typedef struct solver_api {
    __typeof__(cusolverDnCreate) *Create;
    __typeof__(cusolverDnDestroy) *Destroy;
    __typeof__(cusolverDnSetStream) *SetStream;
    __typeof__(cusolverDnCreateParams) *CreateParams;
    __typeof__(cusolverDnDestroyParams) *DestroyParams;
    __typeof__(cusolverDnXgetrf_bufferSize) *Xgetrf_bufferSize;
    __typeof__(cusolverDnXgetrf) *Xgetrf;
    __typeof__(cusolverDnXgetrs) *Xgetrs;
    __typeof__(cusolverDnXpotrf_bufferSize) *Xpotrf_bufferSize;
    __typeof__(cusolverDnXpotrf) *Xpotrf;
    __typeof__(cusolverDnXgeqrf_bufferSize) *Xgeqrf_bufferSize;
    __typeof__(cusolverDnXgeqrf) *Xgeqrf;
    __typeof__(cusolverDnXsyevd_bufferSize) *Xsyevd_bufferSize;
    __typeof__(cusolverDnXsyevd) *Xsyevd;
    __typeof__(cusolverDnXgesvd_bufferSize) *Xgesvd_bufferSize;
    __typeof__(cusolverDnXgesvd) *Xgesvd;
    /* Q from geqrf's reflections: the generic API has no orgqr, so one per dtype */
    __typeof__(cusolverDnSorgqr_bufferSize) *Sorgqr_bufferSize;
    __typeof__(cusolverDnDorgqr_bufferSize) *Dorgqr_bufferSize;
    __typeof__(cusolverDnCungqr_bufferSize) *Cungqr_bufferSize;
    __typeof__(cusolverDnZungqr_bufferSize) *Zungqr_bufferSize;
    __typeof__(cusolverDnSorgqr) *Sorgqr;
    __typeof__(cusolverDnDorgqr) *Dorgqr;
    __typeof__(cusolverDnCungqr) *Cungqr;
    __typeof__(cusolverDnZungqr) *Zungqr;
} solver_api;

typedef struct sparse_api {
    __typeof__(cusparseCreate) *Create;
    __typeof__(cusparseDestroy) *Destroy;
    __typeof__(cusparseSetStream) *SetStream;
    __typeof__(cusparseGetErrorName) *GetErrorName;
    __typeof__(cusparseCreateCsr) *CreateCsr;
    __typeof__(cusparseDestroySpMat) *DestroySpMat;
    __typeof__(cusparseCreateDnVec) *CreateDnVec;
    __typeof__(cusparseDestroyDnVec) *DestroyDnVec;
    __typeof__(cusparseCreateDnMat) *CreateDnMat;
    __typeof__(cusparseDestroyDnMat) *DestroyDnMat;
    __typeof__(cusparseSpMV_bufferSize) *SpMV_bufferSize;
    __typeof__(cusparseSpMV) *SpMV;
    __typeof__(cusparseSpMM_bufferSize) *SpMM_bufferSize;
    __typeof__(cusparseSpMM) *SpMM;
} sparse_api;

typedef struct fft_api {
    __typeof__(cufftCreate) *Create;
    __typeof__(cufftDestroy) *Destroy;
    __typeof__(cufftSetStream) *SetStream;
    __typeof__(cufftSetAutoAllocation) *SetAutoAllocation;
    __typeof__(cufftSetWorkArea) *SetWorkArea;
    __typeof__(cufftMakePlanMany64) *MakePlanMany64;
    __typeof__(cufftExecC2C) *ExecC2C;
    __typeof__(cufftExecZ2Z) *ExecZ2Z;
    __typeof__(cufftExecR2C) *ExecR2C;
    __typeof__(cufftExecD2Z) *ExecD2Z;
    __typeof__(cufftExecC2R) *ExecC2R;
    __typeof__(cufftExecZ2D) *ExecZ2D;
} fft_api;

static blas_api blas;
static fft_api fft;
static solver_api solver;
static sparse_api sparse;
static fcr_library blas_lib, fft_lib, solver_lib, sparse_lib;

bool fcr_load_library(fcr_library *lib, const char *what, const char *const *names, int nnames,
                      const fcr_sym *syms, int nsyms) {
    if (lib->state) return lib->state > 0;
    lib->state = -1;
    void *h = NULL;
    char tried[256] = "";
    size_t len = 0;
    for (int i = 0; i < nnames && !h; i++) {
        h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (h) snprintf(lib->soname, sizeof lib->soname, "%s", names[i]);
        else len += (size_t)snprintf(tried + len, len < sizeof tried ? sizeof tried - len : 0,
                                     "%s%s", i ? ", " : "", names[i]);
    }
    if (!h) {
        const char *why = dlerror();
        snprintf(lib->error, sizeof lib->error, "%s is not available: none of %s could be "
                 "loaded (%s)", what, tried, why ? why : "not found");
        return false;
    }
    for (int i = 0; i < nsyms; i++) {
        bool optional = syms[i].name[0] == '?';
        const char *name = syms[i].name + optional;
        void *p = dlsym(h, name);
        if (!p && !optional) {
            snprintf(lib->error, sizeof lib->error, "%s (%s) lacks %s: a newer version is "
                     "needed", what, lib->soname, name);
            for (int j = 0; j < i; j++) *syms[j].field = NULL;
            dlclose(h);
            return false;
        }
        *syms[i].field = p;
    }
    lib->state = 1; /* the handle stays open for the process's lifetime */
    return true;
}


static bool load_blas(void) {
    static const char *const names[] = {"libcublas.so.13", "libcublas.so.12"};
    const fcr_sym syms[] = {
        FCR_SYM(blas, Create, "cublasCreate_v2"),
        FCR_SYM(blas, Destroy, "cublasDestroy_v2"),
        FCR_SYM(blas, SetStream, "cublasSetStream_v2"),
        FCR_SYM(blas, SetWorkspace, "cublasSetWorkspace_v2"),
        FCR_SYM(blas, SetMathMode, "cublasSetMathMode"),
        FCR_SYM(blas, GemmEx, "cublasGemmEx"),
        FCR_SYM(blas, GemmStridedBatchedEx, "cublasGemmStridedBatchedEx"),
        FCR_SYM(blas, GemmEx_64, "?cublasGemmEx_64"),
        FCR_SYM(blas, GemmStridedBatchedEx_64, "?cublasGemmStridedBatchedEx_64"),
        FCR_SYM(blas, GetStatusName, "?cublasGetStatusName"),
        FCR_SYM(blas, Sgeam, "cublasSgeam"),
        FCR_SYM(blas, Dgeam, "cublasDgeam"),
        FCR_SYM(blas, Cgeam, "cublasCgeam"),
        FCR_SYM(blas, Zgeam, "cublasZgeam"),
        FCR_SYM(blas, Scopy, "cublasScopy_v2"),
        FCR_SYM(blas, Dcopy, "cublasDcopy_v2"),
        FCR_SYM(blas, Zcopy, "cublasZcopy_v2"),
    };
    return fcr_load_library(&blas_lib, "cuBLAS", names, 2, syms, (int)(sizeof syms / sizeof *syms));
}

static bool load_fft(void) {
    static const char *const names[] = {"libcufft.so.12", "libcufft.so.11"};
    const fcr_sym syms[] = {
        FCR_SYM(fft, Create, "cufftCreate"),
        FCR_SYM(fft, Destroy, "cufftDestroy"),
        FCR_SYM(fft, SetStream, "cufftSetStream"),
        FCR_SYM(fft, SetAutoAllocation, "cufftSetAutoAllocation"),
        FCR_SYM(fft, SetWorkArea, "cufftSetWorkArea"),
        FCR_SYM(fft, MakePlanMany64, "cufftMakePlanMany64"),
        FCR_SYM(fft, ExecC2C, "cufftExecC2C"),
        FCR_SYM(fft, ExecZ2Z, "cufftExecZ2Z"),
        FCR_SYM(fft, ExecR2C, "cufftExecR2C"),
        FCR_SYM(fft, ExecD2Z, "cufftExecD2Z"),
        FCR_SYM(fft, ExecC2R, "cufftExecC2R"),
        FCR_SYM(fft, ExecZ2D, "cufftExecZ2D"),
    };
    return fcr_load_library(&fft_lib, "cuFFT", names, 2, syms, (int)(sizeof syms / sizeof *syms));
}

/* cuSOLVER's dense API: libcusolver.so.12 ships with CUDA 12 and 13 (its ABI kept the 12). */
static bool load_solver(void) {
    static const char *const names[] = {"libcusolver.so.12", "libcusolver.so.11"};
    const fcr_sym syms[] = {
        FCR_SYM(solver, Create, "cusolverDnCreate"),
        FCR_SYM(solver, Destroy, "cusolverDnDestroy"),
        FCR_SYM(solver, SetStream, "cusolverDnSetStream"),
        FCR_SYM(solver, CreateParams, "cusolverDnCreateParams"),
        FCR_SYM(solver, DestroyParams, "cusolverDnDestroyParams"),
        FCR_SYM(solver, Xgetrf_bufferSize, "cusolverDnXgetrf_bufferSize"),
        FCR_SYM(solver, Xgetrf, "cusolverDnXgetrf"),
        FCR_SYM(solver, Xgetrs, "cusolverDnXgetrs"),
        FCR_SYM(solver, Xpotrf_bufferSize, "cusolverDnXpotrf_bufferSize"),
        FCR_SYM(solver, Xpotrf, "cusolverDnXpotrf"),
        FCR_SYM(solver, Xgeqrf_bufferSize, "cusolverDnXgeqrf_bufferSize"),
        FCR_SYM(solver, Xgeqrf, "cusolverDnXgeqrf"),
        FCR_SYM(solver, Xsyevd_bufferSize, "cusolverDnXsyevd_bufferSize"),
        FCR_SYM(solver, Xsyevd, "cusolverDnXsyevd"),
        FCR_SYM(solver, Xgesvd_bufferSize, "cusolverDnXgesvd_bufferSize"),
        FCR_SYM(solver, Xgesvd, "cusolverDnXgesvd"),
        FCR_SYM(solver, Sorgqr_bufferSize, "cusolverDnSorgqr_bufferSize"),
        FCR_SYM(solver, Dorgqr_bufferSize, "cusolverDnDorgqr_bufferSize"),
        FCR_SYM(solver, Cungqr_bufferSize, "cusolverDnCungqr_bufferSize"),
        FCR_SYM(solver, Zungqr_bufferSize, "cusolverDnZungqr_bufferSize"),
        FCR_SYM(solver, Sorgqr, "cusolverDnSorgqr"),
        FCR_SYM(solver, Dorgqr, "cusolverDnDorgqr"),
        FCR_SYM(solver, Cungqr, "cusolverDnCungqr"),
        FCR_SYM(solver, Zungqr, "cusolverDnZungqr"),
    };
    return fcr_load_library(&solver_lib, "cuSOLVER", names, 2, syms,
                        (int)(sizeof syms / sizeof *syms));
}

/* cuSPARSE's generic API (libcusparse.so.12 ships with CUDA 12 and 13). */
static bool load_sparse(void) {
    static const char *const names[] = {"libcusparse.so.12", "libcusparse.so.11"};
    const fcr_sym syms[] = {
        FCR_SYM(sparse, Create, "cusparseCreate"),
        FCR_SYM(sparse, Destroy, "cusparseDestroy"),
        FCR_SYM(sparse, SetStream, "cusparseSetStream"),
        FCR_SYM(sparse, GetErrorName, "cusparseGetErrorName"),
        FCR_SYM(sparse, CreateCsr, "cusparseCreateCsr"),
        FCR_SYM(sparse, DestroySpMat, "cusparseDestroySpMat"),
        FCR_SYM(sparse, CreateDnVec, "cusparseCreateDnVec"),
        FCR_SYM(sparse, DestroyDnVec, "cusparseDestroyDnVec"),
        FCR_SYM(sparse, CreateDnMat, "cusparseCreateDnMat"),
        FCR_SYM(sparse, DestroyDnMat, "cusparseDestroyDnMat"),
        FCR_SYM(sparse, SpMV_bufferSize, "cusparseSpMV_bufferSize"),
        FCR_SYM(sparse, SpMV, "cusparseSpMV"),
        FCR_SYM(sparse, SpMM_bufferSize, "cusparseSpMM_bufferSize"),
        FCR_SYM(sparse, SpMM, "cusparseSpMM"),
    };
    return fcr_load_library(&sparse_lib, "cuSPARSE", names, 2, syms,
                        (int)(sizeof syms / sizeof *syms));
}

/* ---- errors ----------------------------------------------------------------------------- */

static const char *blas_status_name(cublasStatus_t r) {
    if (blas.GetStatusName) {
        const char *s = blas.GetStatusName(r);
        if (s) return s;
    }
    switch (r) {
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
    default: return "CUBLAS_STATUS_UNKNOWN";
    }
}

static const char *fft_status_name(cufftResult r) {
    switch (r) {
    case CUFFT_INVALID_PLAN: return "CUFFT_INVALID_PLAN";
    case CUFFT_ALLOC_FAILED: return "CUFFT_ALLOC_FAILED";
    case CUFFT_INVALID_TYPE: return "CUFFT_INVALID_TYPE";
    case CUFFT_INVALID_VALUE: return "CUFFT_INVALID_VALUE";
    case CUFFT_INTERNAL_ERROR: return "CUFFT_INTERNAL_ERROR";
    case CUFFT_EXEC_FAILED: return "CUFFT_EXEC_FAILED";
    case CUFFT_SETUP_FAILED: return "CUFFT_SETUP_FAILED";
    case CUFFT_INVALID_SIZE: return "CUFFT_INVALID_SIZE";
    case CUFFT_UNALIGNED_DATA: return "CUFFT_UNALIGNED_DATA";
    case CUFFT_INVALID_DEVICE: return "CUFFT_INVALID_DEVICE";
    case CUFFT_NO_WORKSPACE: return "CUFFT_NO_WORKSPACE";
    case CUFFT_NOT_IMPLEMENTED: return "CUFFT_NOT_IMPLEMENTED";
    case CUFFT_NOT_SUPPORTED: return "CUFFT_NOT_SUPPORTED";
    case CUFFT_MISSING_DEPENDENCY: return "CUFFT_MISSING_DEPENDENCY";
    case CUFFT_NVRTC_FAILURE: return "CUFFT_NVRTC_FAILURE";
    case CUFFT_NVJITLINK_FAILURE: return "CUFFT_NVJITLINK_FAILURE";
    case CUFFT_NVSHMEM_FAILURE: return "CUFFT_NVSHMEM_FAILURE";
    default: return "CUFFT_UNKNOWN_ERROR";
    }
}

/* A library call that failed, named with its status and place: out of memory or a backend
 * error. */
static fc_status lib_failed(fc_ctx *ctx, bool nomem, const char *status, const char *call,
                            const char *file, int line) {
    return fcg_error(ctx, nomem ? FC_ERR_NOMEM : FC_ERR_BACKEND, "%s failed: %s at %s:%d", call,
                     status, file, line);
}

static fc_status blas_check(fc_ctx *ctx, cublasStatus_t r, const char *call, const char *file,
                            int line) {
    if (r == CUBLAS_STATUS_SUCCESS) return FC_OK;
    return lib_failed(ctx, r == CUBLAS_STATUS_ALLOC_FAILED, blas_status_name(r), call, file, line);
}

static fc_status fft_check(fc_ctx *ctx, cufftResult r, const char *call, const char *file,
                           int line) {
    if (r == CUFFT_SUCCESS) return FC_OK;
    return lib_failed(ctx, r == CUFFT_ALLOC_FAILED, fft_status_name(r), call, file, line);
}

static const char *solver_status_name(cusolverStatus_t r) {
    switch (r) {
    case CUSOLVER_STATUS_NOT_INITIALIZED: return "CUSOLVER_STATUS_NOT_INITIALIZED";
    case CUSOLVER_STATUS_ALLOC_FAILED: return "CUSOLVER_STATUS_ALLOC_FAILED";
    case CUSOLVER_STATUS_INVALID_VALUE: return "CUSOLVER_STATUS_INVALID_VALUE";
    case CUSOLVER_STATUS_ARCH_MISMATCH: return "CUSOLVER_STATUS_ARCH_MISMATCH";
    case CUSOLVER_STATUS_EXECUTION_FAILED: return "CUSOLVER_STATUS_EXECUTION_FAILED";
    case CUSOLVER_STATUS_INTERNAL_ERROR: return "CUSOLVER_STATUS_INTERNAL_ERROR";
    case CUSOLVER_STATUS_MATRIX_TYPE_NOT_SUPPORTED:
        return "CUSOLVER_STATUS_MATRIX_TYPE_NOT_SUPPORTED";
    case CUSOLVER_STATUS_NOT_SUPPORTED: return "CUSOLVER_STATUS_NOT_SUPPORTED";
    case CUSOLVER_STATUS_INVALID_WORKSPACE: return "CUSOLVER_STATUS_INVALID_WORKSPACE";
    default: return "CUSOLVER_STATUS_UNKNOWN";
    }
}

static fc_status solver_check(fc_ctx *ctx, cusolverStatus_t r, const char *call,
                              const char *file, int line) {
    if (r == CUSOLVER_STATUS_SUCCESS) return FC_OK;
    return lib_failed(ctx, r == CUSOLVER_STATUS_ALLOC_FAILED, solver_status_name(r), call, file,
                      line);
}

/* cuSPARSE names its statuses itself (cusparseGetErrorName, in every version loaded). */
static const char *sparse_status_name(cusparseStatus_t r) {
    const char *s = sparse.GetErrorName(r);
    return s ? s : "CUSPARSE_STATUS_UNKNOWN";
}

static fc_status sparse_check(fc_ctx *ctx, cusparseStatus_t r, const char *call,
                              const char *file, int line) {
    if (r == CUSPARSE_STATUS_SUCCESS) return FC_OK;
    return lib_failed(ctx, r == CUSPARSE_STATUS_ALLOC_FAILED, sparse_status_name(r), call, file,
                      line);
}

/* BLAS(ctx, GemmEx, (args...)): calls cublasGemmEx and names it, with file:line, on failure. */
#define BLAS(ctx, fn, args) blas_check((ctx), blas.fn args, "cublas" #fn, __FILE__, __LINE__)
#define FFT(ctx, fn, args) fft_check((ctx), fft.fn args, "cufft" #fn, __FILE__, __LINE__)
#define SOLVER(ctx, fn, args)                                                                    \
    solver_check((ctx), solver.fn args, "cusolverDn" #fn, __FILE__, __LINE__)
#define SPARSE(ctx, fn, args)                                                                    \
    sparse_check((ctx), sparse.fn args, "cusparse" #fn, __FILE__, __LINE__)

/* ---- the per-context state -------------------------------------------------------------- */

/* A cuFFT plan for one layout on one stream; it serves both directions. Plans hold device
 * work areas, so only a few are kept (least recently used goes first). */
#define FCR_LIB_MAX_PLANS 8

/* A plan's layout (cufftMakePlanMany64's arguments): element k of line b of the input at
 * b * idist + k * istride (k the row-major position in inembed), the output likewise. */
typedef struct fft_layout {
    int rank;
    long long n[FCG_FFTN_MAX_RANK], inembed[FCG_FFTN_MAX_RANK], onembed[FCG_FFTN_MAX_RANK];
    long long istride, idist, ostride, odist, batch;
    cufftType type;
} fft_layout;

typedef struct fft_plan {
    fft_layout layout;
    CUstream stream;   /* the plan runs on this stream only (cufftSetStream when made) */
    cufftHandle plan;
    CUdeviceptr area;  /* its work area (cufftSetWorkArea), area_bytes long */
    size_t area_bytes;
    uint64_t used;     /* the state's tick at its last use */
} fft_plan;

/* What library calls on one stream use: cuBLAS's workspace and the scratch area. */
typedef struct stream_work {
    CUstream stream;
    CUdeviceptr blas;  /* cuBLAS's workspace on this stream (0: not made yet) */
    size_t blas_bytes;
    CUdeviceptr scratch; /* C2R's copy of its input, cuSPARSE's buffer (0: none yet) */
    size_t scratch_bytes;
} stream_work;

typedef struct lib_state {
    cublasHandle_t blas;   /* created on the first cuBLAS call */
    bool blas_bound;       /* the handle is on blas_stream, with that stream's workspace */
    CUstream blas_stream;
    fft_plan plans[FCR_LIB_MAX_PLANS];
    int nplans;
    uint64_t tick;
    stream_work *work;     /* per stream that ran a library call */
    int nwork, capwork;
    size_t bytes;          /* device bytes held: workspaces, scratch, work areas */
    uint64_t epoch;        /* counts frees of what captured work may hold (fcr_lib_epoch) */
    bool capturing;        /* inside fcr_lib_capture: make nothing, allocate nothing */
    void *sort; /* the sort kernels' modules (backend/cuda_sort.c) */
    void *stencil; /* the stencil kernels' modules (backend/cuda_stencil.c) */
    void *lt; /* cuBLASLt's handle and cached calls (backend/cuda_blaslt.c) */
    void *batched; /* batched linear algebra's kernels and parameters (cuda_batched.c) */
    cusolverDnHandle_t solver; /* created on the first cuSOLVER call, with its params */
    cusolverDnParams_t params;
    bool solver_bound;     /* the cuSOLVER handle is on solver_stream */
    CUstream solver_stream;
    void *host_work; /* cuSOLVER's host workspace, kept and grown (solver_host_work) */
    size_t host_work_bytes;
    CUmodule tri; /* the masked triangle copies (codegen/tri.c), loaded on first use */
    CUfunction tri_fn[3];
    cusparseHandle_t sparse; /* created on the first cuSPARSE call */
    bool sparse_bound;     /* the cuSPARSE handle is on sparse_stream */
    CUstream sparse_stream;
} lib_state;

static fc_status get_state(fc_ctx *ctx, void **state, lib_state **out) {
    if (!*state) {
        lib_state *s = fcg_calloc(ctx, sizeof *s);
        if (!s) return fcg_error(ctx, FC_ERR_NOMEM, "library call: out of memory");
        *state = s;
    }
    *out = *state;
    return FC_OK;
}

/* A call being captured that would have to make or allocate something first: no message,
 * the caller runs the call directly instead (fcr_lib_capture). */
#define NOT_READY FC_ERR_UNSUPPORTED

/* Device memory the state holds for longer than a call (counted in s->bytes). */
static fc_status held_alloc(fc_ctx *ctx, lib_state *s, size_t bytes, CUstream stream,
                            CUdeviceptr *out) {
    fc_status st = fcr_lib_alloc(ctx, bytes, stream, out);
    if (st == FC_OK) s->bytes += bytes;
    return st;
}

/* Frees it in stream order; work captured with it must be captured again (the epoch). */
static void held_free(fc_ctx *ctx, lib_state *s, CUdeviceptr *p, size_t *bytes,
                      CUstream stream) {
    if (!*p) return;
    fcr_lib_free(ctx, *p, *bytes, stream);
    s->bytes -= *bytes;
    s->epoch++;
    *p = 0;
    *bytes = 0;
}

/* The stream's record; made when absent unless the call is being captured (NOT_READY). */
static fc_status stream_work_of(fc_ctx *ctx, lib_state *s, CUstream stream, stream_work **out) {
    for (int i = 0; i < s->nwork; i++)
        if (s->work[i].stream == stream) {
            *out = &s->work[i];
            return FC_OK;
        }
    if (s->capturing) return NOT_READY;
    if (s->nwork == s->capwork) {
        int cap = s->capwork ? 2 * s->capwork : 4;
        stream_work *w = fcg_realloc(ctx, s->work, (size_t)s->capwork * sizeof *w,
                                     (size_t)cap * sizeof *w);
        if (!w) return fcg_error(ctx, FC_ERR_NOMEM, "library call: out of memory");
        s->work = w;
        s->capwork = cap;
    }
    stream_work *w = &s->work[s->nwork++];
    memset(w, 0, sizeof *w);
    w->stream = stream;
    *out = w;
    return FC_OK;
}

/* At least `bytes` of the stream's scratch (grown, in stream order, to the largest need). */
static fc_status scratch(fc_ctx *ctx, lib_state *s, CUstream stream, size_t bytes,
                         CUdeviceptr *out) {
    stream_work *w;
    fc_status st = stream_work_of(ctx, s, stream, &w);
    if (st != FC_OK) return st;
    if (bytes == 0) bytes = 16;
    if (w->scratch_bytes < bytes) {
        if (s->capturing) return NOT_READY;
        held_free(ctx, s, &w->scratch, &w->scratch_bytes, stream);
        bytes = (bytes + 255) & ~(size_t)255;
        if ((st = held_alloc(ctx, s, bytes, stream, &w->scratch)) != FC_OK) return st;
        w->scratch_bytes = bytes;
    }
    *out = w->scratch;
    return FC_OK;
}

/* cuBLAS's recommended workspace: 32 MiB for Hopper and later, 4 MiB before. */
static size_t blas_workspace_bytes(fc_ctx *ctx) {
    const char *arch = NULL;
    int sms = 0;
    fcr_lib_device(ctx, &arch, &sms);
    int cc = arch && strncmp(arch, "sm_", 3) == 0 ? atoi(arch + 3) : 0;
    return (size_t)(cc >= 90 ? 32 : 4) << 20;
}

/* The stream's cuBLAS workspace, made on its first use. cuBLASLt's calls on the stream use it
 * too: the stream runs its calls one at a time. */
static fc_status blas_workspace(fc_ctx *ctx, lib_state *s, CUstream stream, stream_work **out) {
    stream_work *w;
    fc_status st = stream_work_of(ctx, s, stream, &w);
    if (st != FC_OK) return st;
    if (!w->blas) {
        if (s->capturing) return NOT_READY;
        /* Where the memory limit leaves no room for the recommended size, 64 KiB (cuBLAS
         * needs 16 KiB to never fail for want of workspace; larger only helps speed). */
        size_t bytes = blas_workspace_bytes(ctx);
        st = held_alloc(ctx, s, bytes, stream, &w->blas);
        if (st == FC_ERR_NOMEM) {
            ctx->errmsg[0] = '\0';
            bytes = 64 << 10;
            st = held_alloc(ctx, s, bytes, stream, &w->blas);
        }
        if (st != FC_OK) return st;
        w->blas_bytes = bytes;
    }
    *out = w;
    return FC_OK;
}

/* The context's cuBLAS handle, on `stream` with that stream's workspace. Moving the handle
 * costs two host calls, so it moves only when the stream changes. */
static fc_status blas_handle(fc_ctx *ctx, lib_state *s, CUstream stream) {
    if (!load_blas()) return fcg_error(ctx, FC_ERR_BACKEND, "%s", blas_lib.error);
    fc_status st;
    if (s->blas_bound && s->blas_stream == stream) return FC_OK;
    if (!s->blas) {
        if (s->capturing) return NOT_READY;
        cublasHandle_t h;
        if ((st = BLAS(ctx, Create, (&h))) != FC_OK) return st;
        /* The default math mode: f32 GEMMs stay in f32 (no TF32), as the oracle computes. */
        if ((st = BLAS(ctx, SetMathMode, (h, CUBLAS_DEFAULT_MATH))) != FC_OK) {
            blas.Destroy(h);
            return st;
        }
        s->blas = h;
    }
    stream_work *w;
    if ((st = blas_workspace(ctx, s, stream, &w)) != FC_OK) return st;
    s->blas_bound = false;
    /* cublasSetStream puts the handle back on cuBLAS's own workspace pool: ours follows */
    if ((st = BLAS(ctx, SetStream, (s->blas, stream))) != FC_OK ||
        (st = BLAS(ctx, SetWorkspace, (s->blas, (void *)(uintptr_t)w->blas, w->blas_bytes))) !=
            FC_OK)
        return st;
    s->blas_bound = true;
    s->blas_stream = stream;
    return FC_OK;
}

/* Destroys plan i and frees its work area (in its stream's order). */
static void plan_destroy(fc_ctx *ctx, lib_state *s, int i) {
    fft_plan *p = &s->plans[i];
    fft.Destroy(p->plan);
    held_free(ctx, s, &p->area, &p->area_bytes, p->stream);
    s->epoch++; /* captured work may run the plan's own kernels and tables */
}

/* Frees what stream `stream` holds (every stream when all): plans, workspace, scratch. */
static void release_streams(fc_ctx *ctx, lib_state *s, CUstream stream, bool all) {
    for (int i = 0; i < s->nplans;)
        if (all || s->plans[i].stream == stream) {
            plan_destroy(ctx, s, i);
            s->plans[i] = s->plans[--s->nplans];
        } else {
            i++;
        }
    for (int i = 0; i < s->nwork;) {
        stream_work *w = &s->work[i];
        if (!all && w->stream != stream) {
            i++;
            continue;
        }
        held_free(ctx, s, &w->blas, &w->blas_bytes, w->stream);
        held_free(ctx, s, &w->scratch, &w->scratch_bytes, w->stream);
        *w = s->work[--s->nwork];
    }
    /* the handles are moved (and cuBLAS's given its workspace) again before their next call */
    if (all || s->blas_stream == stream) s->blas_bound = false;
    if (all || s->solver_stream == stream) s->solver_bound = false;
    if (all || s->sparse_stream == stream) s->sparse_bound = false;
}

void fcr_lib_release(fc_ctx *ctx, void *state) {
    lib_state *s = state;
    if (!s) return;
    release_streams(ctx, s, NULL, true);
    fcg_free(ctx, s->work, (size_t)s->capwork * sizeof *s->work);
    if (s->blas) blas.Destroy(s->blas);
    if (s->params) solver.DestroyParams(s->params);
    if (s->solver) solver.Destroy(s->solver);
    if (s->sparse) sparse.Destroy(s->sparse);
    fcr_sort_release(ctx, s->sort);
    fcr_stencil_release(ctx, s->stencil);
    fcr_lt_release(ctx, s->lt);
    fcr_batched_release(ctx, s->batched);
    fcr_lib_module_unload(ctx, s->tri);
    fcg_free(ctx, s->host_work, s->host_work_bytes);
    fcg_free(ctx, s, sizeof *s);
}

void fcr_lib_stream_gone(fc_ctx *ctx, void *state, CUstream stream) {
    if (state) release_streams(ctx, state, stream, false);
}

void fcr_lib_trim(fc_ctx *ctx, void *state) {
    if (state) release_streams(ctx, state, NULL, true);
}

size_t fcr_lib_bytes(const void *state) {
    const lib_state *s = state;
    return s ? s->bytes : 0;
}

uint64_t fcr_lib_epoch(const void *state) {
    const lib_state *s = state;
    return s ? s->epoch : 0;
}

/* ---- matmul ----------------------------------------------------------------------------- */

/* alpha or beta in the scalar type cuBLAS reads for the compute type: a union of the real
 * types, so it has cuDoubleComplex's 16-byte alignment (cuBLAS was seen to crash on an
 * 8-byte aligned complex alpha, with a vector load). */
typedef union gemm_scalar {
    float f;
    double d;
    cuComplex c;
    cuDoubleComplex z;
} gemm_scalar;

typedef struct gemm_types {
    cudaDataType data;
    cublasComputeType_t compute;
    gemm_scalar one, zero;
} gemm_types;

static bool gemm_types_of(fc_dtype t, gemm_types *g) {
    memset(g, 0, sizeof *g);
    switch (t) {
    case FC_F16: g->data = CUDA_R_16F; break;
    case FC_BF16: g->data = CUDA_R_16BF; break;
    case FC_F32: g->data = CUDA_R_32F; break;
    case FC_F64: g->data = CUDA_R_64F; break;
    case FC_C64: g->data = CUDA_C_32F; break;
    case FC_C128: g->data = CUDA_C_64F; break;
    default: return false;
    }
    bool f32 = t != FC_F64 && t != FC_C128;
    g->compute = f32 ? CUBLAS_COMPUTE_32F : CUBLAS_COMPUTE_64F;
    if (t == FC_C64) g->one.c = (cuComplex){1.0f, 0.0f};
    else if (t == FC_C128) g->one.z = (cuDoubleComplex){1.0, 0.0};
    else if (f32) g->one.f = 1.0f;
    else g->one.d = 1.0;
    return true; /* zero: all bits 0 in every type */
}

static bool fits_int(int64_t v) { return v >= 0 && v <= INT_MAX; }

/* One (strided-batched) row-major GEMM: count products C_b[M, N] = A_b[M, K] B_b[K, N] with
 * element strides sa, sb, sc between batches. ta / tb: the operand's buffer holds its
 * transpose (A as K x M, B as N x K, row-major: x.T given to a matmul), read through cuBLAS's
 * transpose flag. */
static fc_status gemm(fc_ctx *ctx, lib_state *s, const gemm_types *g, int64_t M, int64_t N,
                      int64_t K, CUdeviceptr A, int64_t sa, bool ta, CUdeviceptr B, int64_t sb,
                      bool tb, CUdeviceptr C, int64_t sc, int64_t count) {
    const void *one = &g->one, *zero = &g->zero;
    /* column-major C^T[N, M] = B^T[N, K] A^T[K, M]: a row-major buffer read column-major is
     * its transpose, so B's buffer is B^T (leading dimension N) and A's is A^T (K); a buffer
     * holding B^T reads as B (K x N, leading dimension K), whose transpose flag gives B^T, and
     * one holding A^T reads as A (M x K, leading dimension M). */
    const void *pa = (const void *)(uintptr_t)B, *pb = (const void *)(uintptr_t)A;
    void *pc = (void *)(uintptr_t)C;
    cublasOperation_t oa = tb ? CUBLAS_OP_T : CUBLAS_OP_N, ob = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    int64_t lda = tb ? K : N, ldb = ta ? M : K;
    bool small = fits_int(M) && fits_int(N) && fits_int(K) && fits_int(count);
    if (count == 1) {
        if (small)
            return BLAS(ctx, GemmEx, (s->blas, oa, ob, (int)N, (int)M, (int)K, one, pa, g->data,
                                      (int)lda, pb, g->data, (int)ldb, zero, pc, g->data, (int)N,
                                      g->compute, CUBLAS_GEMM_DEFAULT));
        if (blas.GemmEx_64)
            return BLAS(ctx, GemmEx_64, (s->blas, oa, ob, N, M, K, one, pa, g->data, lda, pb,
                                         g->data, ldb, zero, pc, g->data, N, g->compute,
                                         CUBLAS_GEMM_DEFAULT));
    } else {
        if (small)
            return BLAS(ctx, GemmStridedBatchedEx,
                        (s->blas, oa, ob, (int)N, (int)M, (int)K, one, pa, g->data, (int)lda, sb,
                         pb, g->data, (int)ldb, sa, zero, pc, g->data, (int)N, sc, (int)count,
                         g->compute, CUBLAS_GEMM_DEFAULT));
        if (blas.GemmStridedBatchedEx_64)
            return BLAS(ctx, GemmStridedBatchedEx_64,
                        (s->blas, oa, ob, N, M, K, one, pa, g->data, lda, sb, pb, g->data, ldb,
                         sa, zero, pc, g->data, N, sc, count, g->compute, CUBLAS_GEMM_DEFAULT));
    }
    return FC_ERR_UNSUPPORTED; /* extents beyond int32 and no 64-bit API: the host does it */
}

static fc_status run_matmul(fc_ctx *ctx, lib_state *s, CUstream stream, const fc_array *a,
                            const CUdeviceptr *in, const bool *trans, CUdeviceptr out) {
    const fc_array *x = a->in[0], *y = a->in[1];
    fc_dtype t = (fc_dtype)a->dtype;
    gemm_types g;
    /* Integer and bool matmuls, and operands that would need a cast first, stay on the host */
    if (x->dtype != t || y->dtype != t || !gemm_types_of(t, &g)) return FC_ERR_UNSUPPORTED;
    int64_t M = x->ndim >= 2 ? x->shape[x->ndim - 2] : 1, K = x->shape[x->ndim - 1];
    int64_t N = y->ndim >= 2 ? y->shape[y->ndim - 1] : 1;
    if (K == 0) return FC_ERR_UNSUPPORTED; /* zeros: not worth a memset path of its own */

    /* Batch dims (right-aligned), each operand's stride in matrices (0 where it broadcasts),
     * unit dims dropped. */
    int xb = x->ndim > 2 ? x->ndim - 2 : 0, yb = y->ndim > 2 ? y->ndim - 2 : 0;
    int nb = xb > yb ? xb : yb;
    int64_t ext[FC_MAX_DIMS], str[3][FC_MAX_DIMS];
    int64_t ea_all[FC_MAX_DIMS], eb_all[FC_MAX_DIMS];
    for (int i = 0; i < nb; i++) {
        int ia = i - (nb - xb), ib = i - (nb - yb);
        ea_all[i] = ia >= 0 ? x->shape[ia] : 1;
        eb_all[i] = ib >= 0 ? y->shape[ib] : 1;
    }
    int r = 0;
    int64_t ma = 1, mb = 1, mc = 1; /* matrices below dim i, per operand */
    int64_t tmp_ext[FC_MAX_DIMS], tmp_str[3][FC_MAX_DIMS];
    for (int i = nb - 1; i >= 0; i--) {
        int64_t e = ea_all[i] > eb_all[i] ? ea_all[i] : eb_all[i];
        if (e != 1) {
            tmp_ext[r] = e;
            tmp_str[0][r] = ea_all[i] == 1 ? 0 : ma;
            tmp_str[1][r] = eb_all[i] == 1 ? 0 : mb;
            tmp_str[2][r] = mc;
            r++;
        }
        ma *= ea_all[i];
        mb *= eb_all[i];
        mc *= e;
    }
    /* tmp_* run innermost first; merge neighbours that step uniformly in every operand */
    int q = 0;
    for (int i = 0; i < r; i++) {
        if (q > 0) {
            bool merge = true;
            for (int o = 0; o < 3; o++)
                merge = merge && tmp_str[o][i] == str[o][q - 1] * ext[q - 1];
            if (merge) {
                ext[q - 1] *= tmp_ext[i];
                continue;
            }
        }
        ext[q] = tmp_ext[i];
        for (int o = 0; o < 3; o++) str[o][q] = tmp_str[o][i];
        q++;
    }
    fc_status st = blas_handle(ctx, s, stream);
    if (st != FC_OK) return st;
    int64_t es = (int64_t)fc_dtype_size(t);
    int64_t amat = M * K, bmat = K * N, cmat = M * N;
    if (q == 0) return gemm(ctx, s, &g, M, N, K, in[0], 0, trans[0], in[1], 0, trans[1], out, 0, 1);
    /* A batch of A against one shared B: one GEMM over the stacked rows of A (not when A's
     * matrices are stored transposed: their rows do not stack). */
    if (q == 1 && str[1][0] == 0 && str[0][0] == 1 && !trans[0])
        return gemm(ctx, s, &g, M * ext[0], N, K, in[0], 0, false, in[1], 0, trans[1], out, 0, 1);
    /* dim 0 (innermost) is the strided batch; the rest is a loop */
    int64_t idx[FC_MAX_DIMS] = {0};
    for (;;) {
        int64_t oa = 0, ob = 0, oc = 0;
        for (int d = 1; d < q; d++) {
            oa += idx[d] * str[0][d];
            ob += idx[d] * str[1][d];
            oc += idx[d] * str[2][d];
        }
        st = gemm(ctx, s, &g, M, N, K, in[0] + (CUdeviceptr)(oa * amat * es), str[0][0] * amat,
                  trans[0], in[1] + (CUdeviceptr)(ob * bmat * es), str[1][0] * bmat, trans[1],
                  out + (CUdeviceptr)(oc * cmat * es), str[2][0] * cmat, ext[0]);
        if (st != FC_OK) return st;
        int d = 1;
        for (; d < q; d++) {
            if (++idx[d] < ext[d]) break;
            idx[d] = 0;
        }
        if (d >= q) break;
    }
    return FC_OK;
}

/* ---- FFT -------------------------------------------------------------------------------- */

/* The cached plan for this layout on `stream`, made on a miss: cuFFT allocates nothing (its
 * auto-allocation is off), the work area comes from the pool, and the plan is set to the
 * stream once. */
static fc_status get_plan(fc_ctx *ctx, lib_state *s, const fft_layout *l, CUstream stream,
                         cufftHandle *out) {
    s->tick++;
    for (int i = 0; i < s->nplans; i++) {
        fft_plan *p = &s->plans[i];
        if (p->stream == stream && memcmp(&p->layout, l, sizeof *l) == 0) {
            p->used = s->tick;
            *out = p->plan;
            return FC_OK;
        }
    }
    if (s->capturing) return NOT_READY;
    cufftHandle h;
    fc_status st = FFT(ctx, Create, (&h));
    if (st != FC_OK) return st;
    long long n[FCG_FFTN_MAX_RANK], in[FCG_FFTN_MAX_RANK], on[FCG_FFTN_MAX_RANK];
    memcpy(n, l->n, sizeof n);
    memcpy(in, l->inembed, sizeof in);
    memcpy(on, l->onembed, sizeof on);
    size_t work = 0, area_bytes = 0;
    CUdeviceptr area = 0;
    st = FFT(ctx, SetAutoAllocation, (h, 0));
    if (st == FC_OK)
        st = FFT(ctx, MakePlanMany64, (h, l->rank, n, in, l->istride, l->idist, on, l->ostride,
                                       l->odist, l->type, l->batch, &work));
    /* an area even where none is asked for: every plan runs with one of fusec's */
    if (st == FC_OK) st = held_alloc(ctx, s, work ? work : 256, stream, &area);
    if (st == FC_OK) area_bytes = work ? work : 256;
    if (st == FC_OK) st = FFT(ctx, SetWorkArea, (h, (void *)(uintptr_t)area));
    if (st == FC_OK) st = FFT(ctx, SetStream, (h, stream));
    if (st != FC_OK) {
        fft.Destroy(h);
        held_free(ctx, s, &area, &area_bytes, stream);
        return st;
    }
    int slot = s->nplans;
    if (slot == FCR_LIB_MAX_PLANS) {
        slot = 0;
        for (int i = 1; i < s->nplans; i++)
            if (s->plans[i].used < s->plans[slot].used) slot = i;
        plan_destroy(ctx, s, slot);
    } else {
        s->nplans++;
    }
    s->plans[slot] = (fft_plan){*l, stream, h, area, area_bytes, s->tick};
    *out = h;
    return FC_OK;
}

/* One FFTN node (graph/fft.c: an unscaled transform over a run of adjacent axes p.axes, whose
 * last is p.axis) of the dense input at `in` into `out`. The run is the plan's rank and its
 * axes the plan's n (the real extents: C2R's output's, R2C's input's); the axes before it
 * (outer) and after it (inner) are the batch. With no inner axes the batch is one stride-1
 * plan over the outer lines; otherwise the lines step by inner elements, and the batch is
 * either inner lines one element apart, repeated in a loop over outer, or outer lines a whole
 * block apart, in a loop over inner: whichever loop is shorter. C2R overwrites its input (cuFFT
 * does, out of place too), so it reads a copy. */
static fc_status run_fft(fc_ctx *ctx, lib_state *s, CUstream stream, const fc_array *a,
                         CUdeviceptr in, CUdeviceptr out) {
    const fc_array *x = a->in[0];
    fc_dtype t = (fc_dtype)a->dtype, xt = (fc_dtype)x->dtype;
    fcg_fft_kind kind = (fcg_fft_kind)a->p.flag;
    int last = a->p.axis, first = last;
    while (first > 0 && (a->p.axes >> (first - 1) & 1)) first--;
    int rank = last - first + 1;
    bool dbl = t == FC_C128 || t == FC_F64;
    if (a->op != FCG_OP_FFTN || kind > FCG_FFT_C2R || rank > FCG_FFTN_MAX_RANK ||
        a->p.axes != ((2u << last) - (1u << first)) || (dbl ? xt != FC_C128 && xt != FC_F64
                                                            : xt != FC_C64 && xt != FC_F32))
        return fcg_error(ctx, FC_ERR_BACKEND, "%s: bad node (fusec bug)", fcg_ops[a->op].pyname);
    if (!load_fft()) return fcg_error(ctx, FC_ERR_BACKEND, "%s", fft_lib.error);
    fft_layout l;
    memset(&l, 0, sizeof l);
    l.rank = rank;
    int64_t iblock = 1, oblock = 1, outer = 1, inner = 1;
    for (int d = 0; d < first; d++) outer *= a->shape[d];
    for (int d = last + 1; d < a->ndim; d++) inner *= a->shape[d];
    for (int i = 0; i < rank; i++) {
        int d = first + i;
        l.n[i] = kind == FCG_FFT_C2R ? a->shape[d] : x->shape[d];
        l.inembed[i] = x->shape[d];
        l.onembed[i] = a->shape[d];
        iblock *= x->shape[d];
        oblock *= a->shape[d];
    }
    static const cufftType types[2][4] = {{CUFFT_C2C, CUFFT_C2C, CUFFT_R2C, CUFFT_C2R},
                                          {CUFFT_Z2Z, CUFFT_Z2Z, CUFFT_D2Z, CUFFT_Z2D}};
    l.type = types[dbl][kind];
    int64_t calls, istep, ostep;
    if (inner == 1) {
        l.istride = l.ostride = 1, l.idist = iblock, l.odist = oblock, l.batch = outer;
        calls = 1, istep = ostep = 0;
    } else if (outer <= inner) {
        l.istride = l.ostride = inner, l.idist = l.odist = 1, l.batch = inner;
        calls = outer, istep = iblock * inner, ostep = oblock * inner;
    } else {
        l.istride = l.ostride = inner, l.idist = iblock * inner, l.odist = oblock * inner;
        l.batch = outer, calls = inner, istep = ostep = 1;
    }
    cufftHandle plan;
    fc_status st = get_plan(ctx, s, &l, stream, &plan);
    if (st != FC_OK) return st;
    size_t ies = fc_dtype_size(xt), oes = fc_dtype_size(t);
    CUdeviceptr src = in;
    if (kind == FCG_FFT_C2R) { /* the copy C2R may overwrite: the stream's scratch */
        size_t copy_bytes = fcg_node_numel(x) * ies;
        if ((st = scratch(ctx, s, stream, copy_bytes, &src)) != FC_OK) return st;
        st = fcr_lib_copy(ctx, src, in, copy_bytes, stream);
    }
    int dir = kind == FCG_FFT_C2C_INVERSE ? CUFFT_INVERSE : CUFFT_FORWARD;
    for (int64_t c = 0; c < calls && st == FC_OK; c++) {
        void *i = (void *)(uintptr_t)(src + (CUdeviceptr)((size_t)(c * istep) * ies));
        void *o = (void *)(uintptr_t)(out + (CUdeviceptr)((size_t)(c * ostep) * oes));
        switch (l.type) {
        case CUFFT_C2C: st = FFT(ctx, ExecC2C, (plan, i, o, dir)); break;
        case CUFFT_Z2Z: st = FFT(ctx, ExecZ2Z, (plan, i, o, dir)); break;
        case CUFFT_R2C: st = FFT(ctx, ExecR2C, (plan, i, o)); break;
        case CUFFT_D2Z: st = FFT(ctx, ExecD2Z, (plan, i, o)); break;
        case CUFFT_C2R: st = FFT(ctx, ExecC2R, (plan, i, o)); break;
        default: st = FFT(ctx, ExecZ2D, (plan, i, o)); break;
        }
    }
    return st;
}

/* ---- dense linear algebra (cuSOLVER) -------------------------------------------------- *
 *
 * Each matrix of the stack is one call of cuSOLVER's 64-bit generic API (Xgetrf, Xgetrs,
 * Xpotrf: one code path for f32, f64, c64 and c128), in a loop over the batch on the plan's
 * stream: simple and right for every size. A stack of small matrices takes batched routines
 * instead (backend/cuda_batched.c: getrfBatched, potrfBatched, syevjBatched), with the same
 * algebra and this loop's infos and slogdet checks. cuSOLVER is
 * column-major and the buffers are row-major, so a buffer read by cuSOLVER is the transpose
 * of fusec's matrix:
 *   solve    getrf factors A itself, transposed by cuBLAS's geam into a column-major copy,
 *            as NumPy copies A into Fortran order: LU with partial pivoting of A^T chooses
 *            other pivots and multipliers, so it misses the exactly zero pivot that LAPACK
 *            meets in a singular A (in [[1,2,3],[2,4,6],[1,0,1]] LU of A eliminates with 1/2,
 *            LU of A^T with 1/3 and 2/3, which are not exact in binary). getrs with
 *            CUBLAS_OP_N then solves A X = B, with B and X transposed by geam into
 *            column-major order around it (a single right-hand side needs no transpose: a
 *            vector is its own transpose). The O(n^2) copies are small beside the O(n^3)
 *            factorisation;
 *   slogdet  getrf of A, transposed as for solve (a singular A gives (0, -inf) only so),
 *            then the diagonal (a strided copy) and the pivots come down and the host forms
 *            sign and log|det| in double, as ref/host_linalg.c does (NumPy's
 *            slogdet_from_factored_diagonal);
 *   cholesky potrf of the buffer as it is, not transposed: Cholesky chooses no pivots, and
 *            the column-major reading of a Hermitian A is A^T = conj(A) (A itself when real),
 *            whose factorisation is the mirror image of A's, meeting the same leading minors
 *            (round to nearest is symmetric in sign). CUBLAS_FILL_MODE_UPPER reads the
 *            column-major upper triangle, which is the row-major lower one (NumPy reads the
 *            lower triangle) and writes U with conj(A) = U^H U, whose row-major reading U^T
 *            is L (A = L L^H). potrf reads and writes that triangle alone, so one pass of
 *            fusec's triangle copy (codegen/tri.c) puts A's lower triangle into the output
 *            with zeros above it, and potrf factors it there, in place.
 * The factorisations report a zero pivot or a non-positive leading minor in devInfo, one int
 * per matrix; the evaluation reads them back when the stack is done (a wait, as CuPy's
 * default check makes) and fails with FC_ERR_LINALG naming the first matrix at fault.
 * Workspaces come from fcr_lib_alloc, so they are counted in the memory statistics. */

static bool solver_types(fc_dtype t, cudaDataType *out) {
    switch (t) {
    case FC_F32: *out = CUDA_R_32F; return true;
    case FC_F64: *out = CUDA_R_64F; return true;
    case FC_C64: *out = CUDA_C_32F; return true;
    case FC_C128: *out = CUDA_C_64F; return true;
    default: return false;
    }
}

/* The context's cuSOLVER handle (and cuBLAS's, for the transposes), on `stream`. */
static fc_status solver_handle(fc_ctx *ctx, lib_state *s, CUstream stream) {
    if (!load_solver()) return fcg_error(ctx, FC_ERR_BACKEND, "%s", solver_lib.error);
    fc_status st = blas_handle(ctx, s, stream);
    if (st != FC_OK) return st;
    if (!s->solver) {
        cusolverDnHandle_t h;
        if ((st = SOLVER(ctx, Create, (&h))) != FC_OK) return st;
        s->solver = h;
    }
    if (!s->params && (st = SOLVER(ctx, CreateParams, (&s->params))) != FC_OK) return st;
    if (s->solver_bound && s->solver_stream == stream) return FC_OK;
    s->solver_bound = false;
    if ((st = SOLVER(ctx, SetStream, (s->solver, stream))) != FC_OK) return st;
    s->solver_bound = true;
    s->solver_stream = stream;
    return FC_OK;
}

static void *dptr(CUdeviceptr p) { return (void *)(uintptr_t)p; }

/* C = op(A) by cuBLAS's geam (beta 0), column-major: C is m x n with leading dimension ldc,
 * A m x n (CUBLAS_OP_N) or n x m (a transposing op) with leading dimension lda. */
static fc_status geam(fc_ctx *ctx, lib_state *s, fc_dtype t, cublasOperation_t op, int m, int n,
                      CUdeviceptr a, int lda, CUdeviceptr c, int ldc) {
    gemm_types g; /* one and zero of the dtype */
    gemm_types_of(t, &g);
    switch (t) {
    case FC_F32:
        return BLAS(ctx, Sgeam, (s->blas, op, op, m, n, &g.one.f, dptr(a), lda, &g.zero.f,
                                 dptr(a), lda, dptr(c), ldc));
    case FC_F64:
        return BLAS(ctx, Dgeam, (s->blas, op, op, m, n, &g.one.d, dptr(a), lda, &g.zero.d,
                                 dptr(a), lda, dptr(c), ldc));
    case FC_C64:
        return BLAS(ctx, Cgeam, (s->blas, op, op, m, n, &g.one.c, dptr(a), lda, &g.zero.c,
                                 dptr(a), lda, dptr(c), ldc));
    default:
        return BLAS(ctx, Zgeam, (s->blas, op, op, m, n, &g.one.z, dptr(a), lda, &g.zero.z,
                                 dptr(a), lda, dptr(c), ldc));
    }
}

/* dst (row-major C x R) = the transpose of src (row-major R x C): column-major, src is C x R
 * (leading dimension C) and geam writes its transpose, R x C (leading dimension R). */
static fc_status transpose(fc_ctx *ctx, lib_state *s, fc_dtype t, int64_t r, int64_t c,
                           CUdeviceptr src, CUdeviceptr dst) {
    if (!fits_int(r) || !fits_int(c)) return FC_ERR_UNSUPPORTED;
    return geam(ctx, s, t, CUBLAS_OP_T, (int)r, (int)c, src, (int)c, dst, (int)r);
}

fc_status fcr_lib_raw_module(fc_ctx *ctx, fc_status st, char *src, const char *const *names,
                             int n, CUfunction *fn, CUmodule *out) {
    const char *arch;
    int sms;
    fcr_lib_device(ctx, &arch, &sms);
    fck_raw_binary bin;
    memset(&bin, 0, sizeof bin);
    if (st == FC_OK) st = fck_raw_compile(ctx, src, NULL, 0, NULL, 0, arch, &bin);
    fcg_strfree(ctx, src);
    CUmodule mod = NULL;
    if (st == FC_OK) st = fcr_lib_module(ctx, bin.cubin, &mod);
    fck_raw_binary_free(ctx, &bin);
    for (int f = 0; f < n && st == FC_OK; f++) st = fcr_lib_function(ctx, mod, names[f], &fn[f]);
    if (st != FC_OK) {
        fcr_lib_module_unload(ctx, mod);
        return st;
    }
    *out = mod;
    return FC_OK;
}

/* The triangle copy kernels (codegen/tri.c), compiled (or found in the kernel cache) and
 * loaded on the context's first use. */
static fc_status tri_kernels(fc_ctx *ctx, lib_state *s) {
    if (s->tri) return FC_OK;
    char *src = NULL;
    fc_status st = fcx_tri_source(ctx, &src);
    return fcr_lib_raw_module(ctx, st, src, fcx_tri_functions, 3, s->tri_fn, &s->tri);
}

/* A stack of row-major matrices in device memory: the first element, and the elements from a
 * row to the next (pitch) and from a matrix to the next (stride). */
typedef struct mat_stack {
    CUdeviceptr p;
    int64_t pitch, stride;
} mat_stack;

/* One launch over the whole stack of count matrices rows x cols (elements of es bytes): the
 * lower triangle of each matrix of src (j <= i; j >= i with upper) into dst, zeros over dst's
 * other triangle; src NULL writes the zeros alone (dst's kept triangle stays). A block takes a
 * row at a time, grid-stride: a block as wide as a short row (whole warps) and a few waves of
 * blocks for the device. */
static fc_status tri_copy(fc_ctx *ctx, lib_state *s, CUstream stream, size_t es, bool upper,
                          int64_t count, int64_t rows, int64_t cols, const mat_stack *src,
                          const mat_stack *dst) {
    int f = fcx_tri_function(es);
    if (f < 0) return fcg_error(ctx, FC_ERR_BACKEND, "triangle copy of %zu-byte elements "
                                "(fusec bug)", es);
    long long tasks = (long long)(count * rows);
    if (tasks == 0 || cols == 0) return FC_OK;
    fc_status st = tri_kernels(ctx, s);
    if (st != FC_OK) return st;
    const char *arch;
    int sms;
    fcr_lib_device(ctx, &arch, &sms);
    long long grid = (long long)(sms > 0 ? sms : 1) * 32;
    if (grid > tasks) grid = tasks;
    unsigned block = cols >= FCX_TRI_THREADS ? FCX_TRI_THREADS : (unsigned)(cols + 31) / 32 * 32;
    CUdeviceptr sp = src ? src->p : 0, dp = dst->p;
    long long r = (long long)rows, c = (long long)cols, spitch = src ? (long long)src->pitch : 0;
    long long sstride = src ? (long long)src->stride : 0, dpitch = (long long)dst->pitch;
    long long dstride = (long long)dst->stride;
    int up = upper;
    void *args[] = {&sp, &dp, &r, &c, &spitch, &sstride, &dpitch, &dstride, &tasks, &up};
    return fcr_lib_launch(ctx, s->tri_fn[f], (unsigned)grid, block, stream, args);
}

/* n elements of size es from src (stride incx elements) to dst (stride incy): a copy of 4-,
 * 8- or 16-byte words, whatever they hold (the values are not computed with). */
static fc_status strided_copy(fc_ctx *ctx, lib_state *s, size_t es, int n, CUdeviceptr src,
                              int incx, CUdeviceptr dst, int incy) {
    if (es == 4) return BLAS(ctx, Scopy, (s->blas, n, dptr(src), incx, dptr(dst), incy));
    if (es == 8) return BLAS(ctx, Dcopy, (s->blas, n, dptr(src), incx, dptr(dst), incy));
    return BLAS(ctx, Zcopy, (s->blas, n, dptr(src), incx, dptr(dst), incy));
}

/* Device workspaces of the batch loop, released together, and the context's host workspace
 * (borrowed: solver_host_work). */
typedef struct solver_work {
    CUdeviceptr dev[4];
    size_t dev_bytes[4];
    void *host;
} solver_work;

/* Slot i is set only on success: work_free frees what was allocated and nothing else. */
static fc_status work_alloc(fc_ctx *ctx, solver_work *w, int i, size_t bytes, CUstream stream) {
    size_t size = bytes ? bytes : 16;
    CUdeviceptr p = 0;
    fc_status st = fcr_lib_alloc(ctx, size, stream, &p);
    if (st != FC_OK) return st;
    w->dev[i] = p;
    w->dev_bytes[i] = size;
    return FC_OK;
}

static void work_free(fc_ctx *ctx, solver_work *w, CUstream stream) {
    for (int i = 0; i < 4; i++) fcr_lib_free(ctx, w->dev[i], w->dev_bytes[i], stream);
}

/* cuSOLVER's host workspace of `bytes` into w->host (NULL for none): the context's one buffer,
 * grown to the largest asked for and kept, so that no call pays a malloc and the page faults
 * of touching new memory (the bare library call allocates its workspaces once). No call can
 * still be using it when the next starts: every solver call of a library kernel ends with a
 * wait (its infos come back to the host), and the calls of a context run one at a time. */
static fc_status solver_host_work(fc_ctx *ctx, lib_state *s, size_t bytes, const fc_array *a,
                                  solver_work *w) {
    w->host = NULL;
    if (bytes == 0) return FC_OK;
    if (bytes > s->host_work_bytes) {
        void *p = fcg_malloc(ctx, bytes);
        if (!p) return fcg_error(ctx, FC_ERR_NOMEM, "%s: out of memory", fcg_linalg_name(a));
        fcg_free(ctx, s->host_work, s->host_work_bytes);
        s->host_work = p;
        s->host_work_bytes = bytes;
    }
    w->host = s->host_work;
    return FC_OK;
}

/* The devInfo of each matrix, read back (a wait): the first positive one is NumPy's
 * LinAlgError for this op, a negative one a bad argument (a fusec bug). count infos, of
 * count / batch calls for each matrix (info i is matrix i % batch's). */
static fc_status check_infos(fc_ctx *ctx, const fc_array *a, CUdeviceptr info, int64_t count,
                             int64_t batch, CUstream stream) {
    size_t bytes = (size_t)count * sizeof(int);
    int *h = fcg_malloc(ctx, bytes);
    if (!h) return fcg_error(ctx, FC_ERR_NOMEM, "%s: out of memory", fcg_linalg_name(a));
    fc_status st = fcr_lib_download(ctx, h, info, bytes, stream);
    const fc_array *x = a->in[0];
    const char *name = fcg_linalg_name(a);
    for (int64_t b = 0; b < count && st == FC_OK; b++) {
        if (h[b] == 0) continue;
        char d[FCG_DESC_MAX], where[160];
        fcg_linalg_where(where, sizeof where, x, b % batch);
        if (h[b] < 0 || a->op == FCG_OP_LINALG_QR) /* QR has no failure of its own */
            st = fcg_error(ctx, FC_ERR_BACKEND, "%s: cuSOLVER refused argument %d (fusec bug)",
                           name, h[b] < 0 ? -h[b] : h[b]);
        else if (a->op == FCG_OP_LINALG_EIGH || a->op == FCG_OP_LINALG_EIGVALSH)
            st = fcg_error(ctx, FC_ERR_LINALG, "%s: Eigenvalues did not converge: a %s%s has %d "
                           "off-diagonal elements of its tridiagonal form left", name,
                           fcg_desc(d, x), where, h[b]);
        else if (a->op == FCG_OP_LINALG_SVD || a->op == FCG_OP_LINALG_SVDVALS)
            st = fcg_error(ctx, FC_ERR_LINALG, "%s: SVD did not converge: a %s%s has %d "
                           "superdiagonals of its bidiagonal form left", name, fcg_desc(d, x),
                           where, h[b]);
        else if (a->op == FCG_OP_LINALG_CHOLESKY)
            st = fcg_error(ctx, FC_ERR_LINALG, "%s: Matrix is not positive definite: a %s%s has "
                           "a leading minor of order %d that is not", name, fcg_desc(d, x),
                           where, h[b]);
        else
            st = fcg_error(ctx, FC_ERR_LINALG, "%s: Singular matrix: a %s%s has a zero pivot "
                           "in column %d", name, fcg_desc(d, x), where, h[b] - 1);
    }
    fcg_free(ctx, h, bytes);
    return st;
}

/* One value of dtype t (re + i im) at p. */
static void put_value(fc_dtype t, char *p, double re, double im) {
    if (t == FC_F32 || t == FC_C64) {
        float v[2] = {(float)re, (float)im};
        memcpy(p, v, t == FC_F32 ? 4 : 8);
    } else {
        double v[2] = {re, im};
        memcpy(p, v, t == FC_F64 ? 8 : 16);
    }
}

/* One value of dtype t at p, as re + i im. */
static void get_value(fc_dtype t, const char *p, double *re, double *im) {
    *im = 0.0;
    if (t == FC_F32 || t == FC_C64) {
        float v[2] = {0.0f, 0.0f};
        memcpy(v, p, t == FC_F32 ? 4 : 8);
        *re = v[0], *im = v[1];
    } else {
        double v[2] = {0.0, 0.0};
        memcpy(v, p, t == FC_F64 ? 8 : 16);
        *re = v[0], *im = v[1];
    }
}

/* sign and log|det| of each matrix from its LU's diagonal and pivots (1-based, cuSOLVER's),
 * computed in double on the host and uploaded to out ([batch, 2] of dtype t). */
/* Whether matrix b of the stack of n x n matrices at a holds a NaN (it comes down). */
static fc_status matrix_has_nan(fc_ctx *ctx, fc_dtype t, int64_t n, CUdeviceptr a, int64_t b,
                                bool *nan, CUstream stream) {
    size_t es = fc_dtype_size(t), bytes = (size_t)(n * n) * es;
    char *h = fcg_malloc(ctx, bytes);
    if (!h) return fcg_error(ctx, FC_ERR_NOMEM, "slogdet: out of memory");
    fc_status st = fcr_lib_download(ctx, h, a + (CUdeviceptr)((size_t)b * bytes), bytes, stream);
    *nan = false;
    for (int64_t i = 0; i < n * n && st == FC_OK && !*nan; i++) {
        double re, im;
        get_value(t, h + (size_t)i * es, &re, &im);
        *nan = isnan(re) || isnan(im);
    }
    fcg_free(ctx, h, bytes);
    return st;
}

static fc_status slogdet_finish(fc_ctx *ctx, fc_dtype t, int64_t n, int64_t batch,
                                CUdeviceptr a, CUdeviceptr diag, CUdeviceptr piv,
                                CUdeviceptr info, CUdeviceptr out, CUstream stream) {
    size_t es = fc_dtype_size(t), nd = (size_t)(batch * n);
    size_t bytes = nd * es + nd * sizeof(int64_t) + (size_t)batch * sizeof(int) +
                   (size_t)batch * 2 * es;
    char *h = fcg_malloc(ctx, bytes);
    if (!h) return fcg_error(ctx, FC_ERR_NOMEM, "slogdet: out of memory");
    char *hd = h, *hr = h + nd * es + nd * sizeof(int64_t) + (size_t)batch * sizeof(int);
    int64_t *hp = (int64_t *)(h + nd * es);
    int *hi = (int *)(hp + nd);
    fc_status st = FC_OK;
    if (n > 0) {
        st = fcr_lib_download(ctx, hd, diag, nd * es, stream);
        if (st == FC_OK) st = fcr_lib_download(ctx, hp, piv, nd * sizeof(int64_t), stream);
        if (st == FC_OK) st = fcr_lib_download(ctx, hi, info, (size_t)batch * sizeof(int), stream);
    }
    for (int64_t b = 0; b < batch && st == FC_OK; b++) {
        double sr = 1.0, si = 0.0, logdet = 0.0;
        /* A NaN in A makes NaNs of the host's factors (and LAPACK's); getrf may instead call
         * a NaN pivot zero (the GPU's first runs found both): where it reports a zero pivot,
         * A itself comes down to be looked at (rare: a singular matrix) */
        bool nan = false;
        for (int64_t i = 0; i < n && !nan; i++) {
            double re, im;
            get_value(t, hd + (size_t)(b * n + i) * es, &re, &im);
            nan = isnan(re) || isnan(im);
        }
        if (!nan && n > 0 && hi[b] > 0 && (st = matrix_has_nan(ctx, t, n, a, b, &nan, stream)))
            break;
        if (nan) {
            sr = si = logdet = NAN;
        } else if (n > 0 && hi[b] > 0) { /* an exactly zero pivot: NumPy's (0, -inf) */
            sr = 0.0, logdet = -INFINITY;
        } else {
            for (int64_t i = 0; i < n; i++) {
                double re, im;
                get_value(t, hd + (size_t)(b * n + i) * es, &re, &im);
                double ad = hypot(re, im);
                double pr = im == 0.0 ? (re < 0 ? -1.0 : 1.0) : re / ad;
                double pi = im == 0.0 ? 0.0 : im / ad;
                double nr = sr * pr - si * pi;
                si = sr * pi + si * pr;
                sr = nr;
                if (hp[b * n + i] != i + 1) sr = -sr, si = -si;
                logdet += log(ad);
            }
        }
        put_value(t, hr + (size_t)(2 * b) * es, sr, si);
        put_value(t, hr + (size_t)(2 * b + 1) * es, logdet, 0.0);
    }
    if (st == FC_OK) st = fcr_lib_upload(ctx, out, hr, (size_t)batch * 2 * es, stream);
    fcg_free(ctx, h, bytes);
    return st;
}

/* orgqr / ungqr's workspace (elements of t) for Q (m x c) from k reflections at a (leading
 * dimension m) with scalars tau. */
static fc_status orgqr_size(fc_ctx *ctx, lib_state *s, fc_dtype t, int m, int c, int k,
                            CUdeviceptr a, CUdeviceptr tau, int *lwork) {
    switch (t) {
    case FC_F32:
        return SOLVER(ctx, Sorgqr_bufferSize, (s->solver, m, c, k, dptr(a), m, dptr(tau), lwork));
    case FC_F64:
        return SOLVER(ctx, Dorgqr_bufferSize, (s->solver, m, c, k, dptr(a), m, dptr(tau), lwork));
    case FC_C64:
        return SOLVER(ctx, Cungqr_bufferSize, (s->solver, m, c, k, dptr(a), m, dptr(tau), lwork));
    default:
        return SOLVER(ctx, Zungqr_bufferSize, (s->solver, m, c, k, dptr(a), m, dptr(tau), lwork));
    }
}

/* Q (m x c, column-major, leading dimension m) in place of the k reflections at a. */
static fc_status orgqr(fc_ctx *ctx, lib_state *s, fc_dtype t, int m, int c, int k,
                       CUdeviceptr a, CUdeviceptr tau, CUdeviceptr work, int lwork,
                       CUdeviceptr info) {
    switch (t) {
    case FC_F32:
        return SOLVER(ctx, Sorgqr, (s->solver, m, c, k, dptr(a), m, dptr(tau), dptr(work), lwork,
                                    dptr(info)));
    case FC_F64:
        return SOLVER(ctx, Dorgqr, (s->solver, m, c, k, dptr(a), m, dptr(tau), dptr(work), lwork,
                                    dptr(info)));
    case FC_C64:
        return SOLVER(ctx, Cungqr, (s->solver, m, c, k, dptr(a), m, dptr(tau), dptr(work), lwork,
                                    dptr(info)));
    default:
        return SOLVER(ctx, Zungqr, (s->solver, m, c, k, dptr(a), m, dptr(tau), dptr(work), lwork,
                                    dptr(info)));
    }
}

/* Every matrix of out (batch of them, rows x width of dtype t) set to zeros with the identity
 * of order `size` from row r0, column 0: the factors of empty matrices (qr's complete Q of an
 * m x 0 stack, svd's U or Vh beside no singular value), uploaded: no factorisation forms
 * them, and an empty one is a corner not worth cuSOLVER's. */
static fc_status upload_identity(fc_ctx *ctx, const fc_array *a, int64_t rows, int64_t width,
                                 int64_t r0, int64_t size, int64_t batch, CUdeviceptr out,
                                 CUstream stream) {
    fc_dtype t = (fc_dtype)a->dtype;
    size_t es = fc_dtype_size(t), bytes = (size_t)(rows * width) * es;
    char *h = fcg_calloc(ctx, bytes);
    if (!h) return fcg_error(ctx, FC_ERR_NOMEM, "%s: out of memory", fcg_linalg_name(a));
    for (int64_t i = 0; i < size; i++)
        put_value(t, h + (size_t)((r0 + i) * width + i) * es, 1.0, 0.0);
    fc_status st = FC_OK;
    for (int64_t b = 0; b < batch && st == FC_OK; b++)
        st = fcr_lib_upload(ctx, out + (CUdeviceptr)((size_t)b * bytes), h, bytes, stream);
    fcg_free(ctx, h, bytes);
    return st;
}

/* np.linalg.qr (LINALG_QR: Q beside R, ops.def), a matrix at a time: A transposed into
 * column-major order (geqrf must factor A itself, not the A^T that the row-major buffer
 * reads as), Xgeqrf, R's first k rows transposed by geam into their row-major place in the
 * output (pitch c + n) with geqrf's reflections below the diagonal, orgqr or ungqr forming Q
 * in place of the reflections and geam transposing it into the output's first c columns.
 * Then one triangle-clearing launch for the whole stack writes R's zeros: below the diagonal
 * and every row from k on (rows past n lie wholly below it). Q and R then cover the output,
 * so it is not zeroed first. */
static fc_status run_qr(fc_ctx *ctx, lib_state *s, CUstream stream, const fc_array *a,
                        CUdeviceptr in, CUdeviceptr out) {
    const fc_array *x = a->in[0];
    fc_dtype t = (fc_dtype)a->dtype;
    cudaDataType dt;
    if (x->dtype != t || x->ndim < 2 || !solver_types(t, &dt)) return FC_ERR_UNSUPPORTED;
    int nb = x->ndim - 2;
    int64_t m = x->shape[nb], n = x->shape[nb + 1], k = m < n ? m : n, batch = 1;
    for (int d = 0; d < nb; d++) batch *= x->shape[d];
    int64_t rows = a->shape[a->ndim - 2], width = a->shape[a->ndim - 1], c = width - n;
    int64_t wcols = c > n ? c : n; /* orgqr of a complete Q writes m columns */
    /* cuBLAS's and orgqr's int extents (beyond them: the host reference) */
    if (!fits_int(m) || !fits_int(width) || !fits_int(m * wcols)) return FC_ERR_UNSUPPORTED;
    if (k == 0) /* complete, n == 0 */
        return upload_identity(ctx, a, m, m, 0, m, batch, out, stream);
    fc_status st = solver_handle(ctx, s, stream);
    if (st != FC_OK) return st;
    size_t es = fc_dtype_size(t), per_out = (size_t)(rows * width) * es;
    solver_work w;
    memset(&w, 0, sizeof w);
    size_t dev_work = 0, host_work = 0;
    int lwork = 0;
    CUdeviceptr probe = in; /* the size queries read no data */
    st = SOLVER(ctx, Xgeqrf_bufferSize, (s->solver, s->params, m, n, dt, dptr(probe), m, dt,
                                         dptr(probe), dt, &dev_work, &host_work));
    if (st == FC_OK && c > 0)
        st = orgqr_size(ctx, s, t, (int)m, (int)c, (int)k, probe, probe, &lwork);
    if ((size_t)lwork * es > dev_work) dev_work = (size_t)lwork * es;
    /* dev[0] the workspace (geqrf's or orgqr's), dev[1] the infos (geqrf's for each matrix,
     * then orgqr's), dev[2] tau, dev[3] A in column-major order (m x wcols), where orgqr
     * forms Q */
    if (st == FC_OK) st = work_alloc(ctx, &w, 0, dev_work, stream);
    if (st == FC_OK) st = work_alloc(ctx, &w, 1, (size_t)(2 * batch) * sizeof(int), stream);
    if (st == FC_OK) st = work_alloc(ctx, &w, 2, (size_t)k * es, stream);
    if (st == FC_OK) st = work_alloc(ctx, &w, 3, (size_t)(m * wcols) * es, stream);
    if (st == FC_OK) st = solver_host_work(ctx, s, host_work, a, &w);
    if (st == FC_OK) st = fcr_lib_zero(ctx, w.dev[1], (size_t)(2 * batch), stream);
    CUdeviceptr tau = w.dev[2], ws = w.dev[3];
    int im = (int)m, in_ = (int)n, ik = (int)k, ic = (int)c, iw = (int)width;
    for (int64_t b = 0; b < batch && st == FC_OK; b++) {
        CUdeviceptr src = in + (CUdeviceptr)((size_t)(b * m * n) * es);
        CUdeviceptr o = out + (CUdeviceptr)((size_t)b * per_out);
        CUdeviceptr info = w.dev[1] + (CUdeviceptr)((size_t)b * sizeof(int));
        st = transpose(ctx, s, t, m, n, src, ws);
        if (st == FC_OK)
            st = SOLVER(ctx, Xgeqrf, (s->solver, s->params, m, n, dt, dptr(ws), m, dt, dptr(tau),
                                      dt, dptr(w.dev[0]), dev_work, w.host, host_work,
                                      dptr(info)));
        /* out's R part read column-major (leading dimension width) is R^T, n x k: the
         * transpose of ws's first k rows (k x n, leading dimension m) */
        if (st == FC_OK)
            st = geam(ctx, s, t, CUBLAS_OP_T, in_, ik, ws, im, o + (CUdeviceptr)((size_t)c * es),
                      iw);
        if (st != FC_OK || c == 0) continue;
        st = orgqr(ctx, s, t, im, ic, ik, ws, tau, w.dev[0], lwork,
                   w.dev[1] + (CUdeviceptr)((size_t)(batch + b) * sizeof(int)));
        if (st == FC_OK) st = geam(ctx, s, t, CUBLAS_OP_T, ic, im, ws, im, o, iw);
    }
    /* R's zeros: the upper triangle of every rows x n block kept, the rest cleared */
    const mat_stack r_part = {out + (CUdeviceptr)((size_t)c * es), width, rows * width};
    if (st == FC_OK) st = tri_copy(ctx, s, stream, es, true, batch, rows, n, NULL, &r_part);
    if (st == FC_OK) st = check_infos(ctx, a, w.dev[1], 2 * batch, batch, stream);
    work_free(ctx, &w, stream);
    return st;
}

/* np.linalg.eigh and eigvalsh (LINALG_EIGH: eigenvalues above eigenvectors; LINALG_EIGVALSH),
 * a matrix at a time by Xsyevd on a copy. The row-major buffer of a Hermitian A reads
 * column-major as A^T = conj(A): NumPy's lower triangle is the column-major upper one, and
 * conj(A) has A's eigenvalues with eigenvectors conj(v). So UPLO "L" is
 * CUBLAS_FILL_MODE_UPPER (and "U" LOWER), and the column-major eigenvectors Vc = conj(V)
 * become the row-major V by geam's conjugate transpose (V^T = Vc^H; a plain transpose for
 * real dtypes). The eigenvalues (real) go straight into the output, except for complex eigh,
 * whose row 0 is complex: they are copied into its real parts (stride 2 of the real type)
 * after the output is zeroed. */
static fc_status run_eigh(fc_ctx *ctx, lib_state *s, CUstream stream, const fc_array *a,
                          CUdeviceptr in, CUdeviceptr out) {
    const fc_array *x = a->in[0];
    fc_dtype t = (fc_dtype)x->dtype, rt = fcg_real_dtype(t);
    bool vectors = a->op == FCG_OP_LINALG_EIGH, cplx = fcg_is_complex(t);
    cudaDataType dt, wt;
    if ((fc_dtype)a->dtype != (vectors ? t : rt) || x->ndim < 2 || !solver_types(t, &dt) ||
        !solver_types(rt, &wt))
        return FC_ERR_UNSUPPORTED;
    int nb = x->ndim - 2;
    int64_t n = x->shape[nb], batch = 1;
    for (int d = 0; d < nb; d++) batch *= x->shape[d];
    if (!fits_int(n)) return FC_ERR_UNSUPPORTED;
    fc_status st = solver_handle(ctx, s, stream);
    if (st != FC_OK) return st;
    /* a stack of small matrices: syevjBatched (backend/cuda_batched.c) */
    st = fcr_batched_linalg(ctx, &s->batched, s, stream, s->blas, s->solver, a, &in, out);
    if (st != FC_ERR_UNSUPPORTED) return st;
    st = FC_OK;
    size_t es = fc_dtype_size(t), res = fc_dtype_size(rt), mat = (size_t)(n * n) * es;
    size_t per_out = vectors ? (size_t)(n + 1) * (size_t)n * es : (size_t)n * res;
    cusolverEigMode_t jobz = vectors ? CUSOLVER_EIG_MODE_VECTOR : CUSOLVER_EIG_MODE_NOVECTOR;
    cublasFillMode_t uplo = a->p.flag & 1 ? CUBLAS_FILL_MODE_LOWER : CUBLAS_FILL_MODE_UPPER;
    solver_work w;
    memset(&w, 0, sizeof w);
    size_t dev_work = 0, host_work = 0;
    CUdeviceptr probe = in; /* the size query reads no data */
    st = SOLVER(ctx, Xsyevd_bufferSize, (s->solver, s->params, jobz, uplo, n, dt, dptr(probe), n,
                                         wt, dptr(probe), dt, &dev_work, &host_work));
    /* dev[0] the workspace, dev[1] the infos, dev[2] complex eigh's eigenvalues, dev[3] the
     * copy of A that syevd overwrites with the eigenvectors */
    if (st == FC_OK) st = work_alloc(ctx, &w, 0, dev_work, stream);
    if (st == FC_OK) st = work_alloc(ctx, &w, 1, (size_t)batch * sizeof(int), stream);
    if (st == FC_OK && vectors && cplx) st = work_alloc(ctx, &w, 2, (size_t)n * res, stream);
    if (st == FC_OK) st = work_alloc(ctx, &w, 3, mat, stream);
    if (st == FC_OK) st = solver_host_work(ctx, s, host_work, a, &w);
    if (st == FC_OK) st = fcr_lib_zero(ctx, w.dev[1], (size_t)batch, stream);
    if (st == FC_OK && vectors && cplx)
        st = fcr_lib_zero(ctx, out, (size_t)batch * per_out / 4, stream);
    for (int64_t b = 0; b < batch && st == FC_OK; b++) {
        CUdeviceptr o = out + (CUdeviceptr)((size_t)b * per_out);
        CUdeviceptr vals = vectors && cplx ? w.dev[2] : o;
        st = fcr_lib_copy(ctx, w.dev[3], in + (CUdeviceptr)((size_t)b * mat), mat, stream);
        if (st == FC_OK)
            st = SOLVER(ctx, Xsyevd, (s->solver, s->params, jobz, uplo, n, dt, dptr(w.dev[3]), n,
                                      wt, dptr(vals), dt, dptr(w.dev[0]), dev_work, w.host,
                                      host_work, dptr(w.dev[1] + (CUdeviceptr)((size_t)b * sizeof(int)))));
        if (st != FC_OK || !vectors) continue;
        if (cplx) st = strided_copy(ctx, s, res, (int)n, vals, 1, o, 2);
        if (st == FC_OK)
            st = geam(ctx, s, t, cplx ? CUBLAS_OP_C : CUBLAS_OP_T, (int)n, (int)n, w.dev[3],
                      (int)n, o + (CUdeviceptr)((size_t)n * es), (int)n);
    }
    if (st == FC_OK) st = check_infos(ctx, a, w.dev[1], batch, batch, stream);
    work_free(ctx, &w, stream);
    return st;
}

/* After svd's loop: the infos, then the singular values (batch * k of the real type rt at
 * svals), read back. A positive info (gesvd's QR iteration left superdiagonals) or a singular
 * value that is not finite (what gesvd makes of a NaN or infinite entry, where NumPy raises
 * and the host reference does) is NumPy's "SVD did not converge", FC_ERR_LINALG. */
static fc_status svd_check(fc_ctx *ctx, const fc_array *a, CUdeviceptr info, CUdeviceptr svals,
                           int64_t batch, int64_t k, fc_dtype rt, CUstream stream) {
    fc_status st = check_infos(ctx, a, info, batch, batch, stream);
    size_t res = fc_dtype_size(rt), bytes = (size_t)(batch * k) * res;
    if (st != FC_OK || bytes == 0) return st;
    char *h = fcg_malloc(ctx, bytes);
    if (!h) return fcg_error(ctx, FC_ERR_NOMEM, "svd: out of memory");
    st = fcr_lib_download(ctx, h, svals, bytes, stream);
    for (int64_t i = 0; i < batch * k && st == FC_OK; i++) {
        double re, im;
        get_value(rt, h + (size_t)i * res, &re, &im);
        if (isfinite(re)) continue;
        char d[FCG_DESC_MAX], where[160];
        st = fcg_error(ctx, FC_ERR_LINALG, "%s: SVD did not converge: a %s%s has a NaN or "
                       "infinite entry (its singular values are not finite)", fcg_linalg_name(a),
                       fcg_desc(d, a->in[0]), fcg_linalg_where(where, sizeof where, a->in[0], i / k));
    }
    fcg_free(ctx, h, bytes);
    return st;
}

/* np.linalg.svd and svdvals (LINALG_SVD: S, U and Vh in one, ops.def; LINALG_SVDVALS), a
 * matrix at a time by Xgesvd: Householder bidiagonalisation and implicit QR iteration,
 * LAPACK's gesvd with its accuracy and a convergence status in devInfo. (gesvdj, Jacobi, has
 * no 64-bit generic entry point and stops at a tolerance and sweep count of its own; gesvdp,
 * through the polar decomposition, gives an error estimate rather than a status and loses
 * accuracy in the small singular values that lstsq, pinv and matrix_rank decide ranks by.)
 * gesvd takes r x c matrices with r >= c only, and the row-major buffer of A reads
 * column-major as A^T:
 *   m <= n (square included): a copy of the buffer is A^T (n x m), whose A^T = U' S V'^H
 *     gives A = conj(V') S U'^T: U = conj(V'), whose row-major slot read column-major
 *     (leading dimension w, the packed rows' pitch) is U^T = V'^H, gesvd's VT, and
 *     Vh = U'^T, whose slot reads as U' (n x vr): gesvd writes both straight into out, with
 *     no transpose; for a square matrix this is the bare call on the buffer as it lies;
 *   m > n: A is transposed into column-major order by geam, gesvd writes U (m x uc) and
 *     VT = Vh (n x n) into column-major workspaces, and geam transposes each into its
 *     row-major slot of out.
 * Passes beside gesvd, each for a reason: the copy of A (gesvd destroys its input; geam's
 * transpose is that copy when m > n); the singular values into a workspace [batch, k] and
 * from there into row 0 (a stride-2 copy into the real parts for complex dtypes), so that
 * svd_check reads all of them back with the infos in one wait (svdvals' output is that
 * workspace itself: gesvd writes it directly); zeros where no factor writes: the whole output
 * once where a factor is narrower than the rows (the padding columns of a non-square
 * matrix), else only complex row 0's imaginary parts (a square or reduced tall matrix fills
 * every other element); and the infos zeroed (a few bytes) so that none is read unwritten.
 * An empty matrix (k = 0) gets its identities uploaded. */
static fc_status run_svd(fc_ctx *ctx, lib_state *s, CUstream stream, const fc_array *a,
                         CUdeviceptr in, CUdeviceptr out) {
    const fc_array *x = a->in[0];
    fc_dtype t = (fc_dtype)x->dtype, rt = fcg_real_dtype(t);
    bool vectors = a->op == FCG_OP_LINALG_SVD, full = vectors && (a->p.flag & 1);
    cudaDataType dt, st_;
    if ((fc_dtype)a->dtype != (vectors ? t : rt) || x->ndim < 2 || !solver_types(t, &dt) ||
        !solver_types(rt, &st_))
        return FC_ERR_UNSUPPORTED;
    int nb = x->ndim - 2;
    int64_t m = x->shape[nb], n = x->shape[nb + 1], k = m < n ? m : n, batch = 1;
    for (int d = 0; d < nb; d++) batch *= x->shape[d];
    int64_t uc = full ? m : k, vr = full ? n : k;
    int64_t rows = vectors ? a->shape[a->ndim - 2] : 1, w = vectors ? a->shape[a->ndim - 1] : k;
    if (k == 0) /* no singular value: zeros, and full_matrices' identity where a side has room */
        return upload_identity(ctx, a, rows, w, 1, m > 0 ? uc : vr, batch, out, stream);
    /* geam's and the strided copies' int extents (beyond them: the host reference) */
    if (!fits_int(m) || !fits_int(n) || !fits_int(w) || !fits_int(uc * m))
        return FC_ERR_UNSUPPORTED;
    fc_status st = solver_handle(ctx, s, stream);
    if (st != FC_OK) return st;
    bool tall = m > n, cplx = fcg_is_complex(t);
    int64_t r = tall ? m : n, c = tall ? n : m; /* gesvd's matrix, r x c with r >= c */
    size_t es = fc_dtype_size(t), res = fc_dtype_size(rt);
    size_t per_out = (size_t)(rows * w) * (vectors ? es : res), mat = (size_t)(m * n) * es;
    size_t u_bytes = vectors && tall ? (size_t)(m * uc) * es : 0;
    size_t v_bytes = vectors && tall ? (size_t)(n * n) * es : 0;
    signed char job = !vectors ? 'N' : full ? 'A' : 'S';
    /* gesvd's U and VT, and their leading dimensions: workspaces (m > n) or out's slots
     * (svdvals: none, 'N', with the leading dimensions of its matrix) */
    int64_t ldu = tall || !vectors ? r : w, ldvt = tall || !vectors ? c : w;
    /* a factor narrower than out's rows leaves padding columns: zero it all first */
    bool zero_all = vectors && (uc < w || n < w), zero_row0 = vectors && !zero_all && cplx;
    solver_work wk;
    memset(&wk, 0, sizeof wk);
    size_t dev_work = 0, host_work = 0;
    CUdeviceptr probe = in; /* the size query reads no data */
    st = SOLVER(ctx, Xgesvd_bufferSize, (s->solver, s->params, job, job, r, c, dt, dptr(probe),
                                         r, st_, dptr(probe), dt, dptr(probe), ldu, dt,
                                         dptr(probe), ldvt, dt, &dev_work, &host_work));
    /* dev[0] the workspace, dev[1] the infos, dev[2] svd's singular values [batch, k] (svdvals
     * writes its output), dev[3] gesvd's copy of the matrix, then (m > n) U's and VT's
     * column-major workspaces */
    if (st == FC_OK) st = work_alloc(ctx, &wk, 0, dev_work, stream);
    if (st == FC_OK) st = work_alloc(ctx, &wk, 1, (size_t)batch * sizeof(int), stream);
    if (st == FC_OK && vectors) st = work_alloc(ctx, &wk, 2, (size_t)(batch * k) * res, stream);
    if (st == FC_OK) st = work_alloc(ctx, &wk, 3, mat + u_bytes + v_bytes, stream);
    if (st == FC_OK) st = solver_host_work(ctx, s, host_work, a, &wk);
    if (st == FC_OK) st = fcr_lib_zero(ctx, wk.dev[1], (size_t)batch, stream);
    if (st == FC_OK && zero_all) st = fcr_lib_zero(ctx, out, (size_t)batch * per_out / 4, stream);
    CUdeviceptr svals = vectors ? wk.dev[2] : out;
    CUdeviceptr bm = wk.dev[3], uw = bm + (CUdeviceptr)mat, vw = uw + (CUdeviceptr)u_bytes;
    for (int64_t b = 0; b < batch && st == FC_OK; b++) {
        CUdeviceptr src = in + (CUdeviceptr)((size_t)b * mat);
        CUdeviceptr o = out + (CUdeviceptr)((size_t)b * per_out);
        CUdeviceptr sv = svals + (CUdeviceptr)((size_t)(b * k) * res);
        CUdeviceptr ou = o + (CUdeviceptr)((size_t)w * es); /* U's slot, row 1 */
        CUdeviceptr ovh = ou + (CUdeviceptr)((size_t)(m * w) * es); /* Vh's, row 1 + m */
        CUdeviceptr gu = tall ? uw : ovh, gvt = tall ? vw : ou;
        st = tall ? transpose(ctx, s, t, m, n, src, bm) : fcr_lib_copy(ctx, bm, src, mat, stream);
        if (st == FC_OK)
            st = SOLVER(ctx, Xgesvd, (s->solver, s->params, job, job, r, c, dt, dptr(bm), r, st_,
                                      dptr(sv), dt, dptr(gu), ldu, dt, dptr(gvt), ldvt, dt,
                                      dptr(wk.dev[0]), dev_work, wk.host, host_work,
                                      dptr(wk.dev[1] + (CUdeviceptr)((size_t)b * sizeof(int)))));
        if (st != FC_OK || !vectors) continue;
        if (zero_row0) st = fcr_lib_zero(ctx, o, (size_t)w * es / 4, stream);
        if (st == FC_OK) st = strided_copy(ctx, s, res, (int)k, sv, 1, o, cplx ? 2 : 1);
        if (st != FC_OK || !tall) continue;
        /* out's U slot read column-major is U^T (uc x m), its Vh slot Vh^T (n x n) */
        st = geam(ctx, s, t, CUBLAS_OP_T, (int)uc, (int)m, uw, (int)m, ou, (int)w);
        if (st == FC_OK)
            st = geam(ctx, s, t, CUBLAS_OP_T, (int)n, (int)n, vw, (int)n, ovh, (int)w);
    }
    if (st == FC_OK) st = svd_check(ctx, a, wk.dev[1], svals, batch, k, rt, stream);
    work_free(ctx, &wk, stream);
    return st;
}

static fc_status run_linalg(fc_ctx *ctx, lib_state *s, CUstream stream, const fc_array *a,
                            const CUdeviceptr *in, CUdeviceptr out) {
    if (a->op == FCG_OP_LINALG_SVD || a->op == FCG_OP_LINALG_SVDVALS)
        return run_svd(ctx, s, stream, a, in[0], out);
    if (a->op == FCG_OP_LINALG_QR) return run_qr(ctx, s, stream, a, in[0], out);
    if (a->op == FCG_OP_LINALG_EIGH || a->op == FCG_OP_LINALG_EIGVALSH)
        return run_eigh(ctx, s, stream, a, in[0], out);
    const fc_array *x = a->in[0];
    fc_dtype t = (fc_dtype)a->dtype;
    cudaDataType dt;
    if (x->dtype != t || x->ndim < 2 || !solver_types(t, &dt)) return FC_ERR_UNSUPPORTED;
    int nb = x->ndim - 2;
    int64_t n = x->shape[nb], batch = 1;
    for (int d = 0; d < nb; d++) batch *= x->shape[d];
    int64_t k = a->op == FCG_OP_LINALG_SOLVE ? a->shape[a->ndim - 1] : n;
    bool slog = a->op == FCG_OP_LINALG_SLOGDET, chol = a->op == FCG_OP_LINALG_CHOLESKY;
    /* cuBLAS's transposes and gathers take int extents (beyond them: the host reference) */
    if (!fits_int(n) || !fits_int(k)) return FC_ERR_UNSUPPORTED;
    fc_status st = solver_handle(ctx, s, stream);
    if (st != FC_OK) return st;
    /* a stack of small matrices: a few batched calls (backend/cuda_batched.c) */
    st = fcr_batched_linalg(ctx, &s->batched, s, stream, s->blas, s->solver, a, in, out);
    if (st != FC_ERR_UNSUPPORTED) return st;
    st = FC_OK;
    size_t es = fc_dtype_size(t), mat = (size_t)(n * n) * es;
    solver_work w;
    memset(&w, 0, sizeof w);
    size_t dev_work = 0, host_work = 0;
    CUdeviceptr probe = in[0]; /* the size queries read no data */
    if (n > 0) {
        st = chol ? SOLVER(ctx, Xpotrf_bufferSize,
                           (s->solver, s->params, CUBLAS_FILL_MODE_UPPER, n, dt, dptr(probe), n,
                            dt, &dev_work, &host_work))
                  : SOLVER(ctx, Xgetrf_bufferSize, (s->solver, s->params, n, n, dt, dptr(probe),
                                                    n, dt, &dev_work, &host_work));
    }
    /* dev[0] the factorisation's workspace, dev[1] the infos (one per matrix, and getrs's),
     * dev[2] pivots (slogdet: all of them), dev[3] A transposed into column-major order to
     * be factorised and solve's transposed right-hand sides or slogdet's diagonals (solve
     * and slogdet; cholesky works in out) */
    if (st == FC_OK) st = work_alloc(ctx, &w, 0, dev_work, stream);
    if (st == FC_OK) st = work_alloc(ctx, &w, 1, (size_t)(batch + 1) * sizeof(int), stream);
    if (st == FC_OK && !chol)
        st = work_alloc(ctx, &w, 2, (size_t)((slog ? batch : 1) * n) * sizeof(int64_t), stream);
    if (st == FC_OK && !chol)
        st = work_alloc(ctx, &w, 3, mat + (size_t)((slog ? batch : k) * n) * es, stream);
    if (st == FC_OK) st = solver_host_work(ctx, s, host_work, a, &w);
    if (st == FC_OK && n > 0) st = fcr_lib_zero(ctx, w.dev[1], (size_t)(batch + 1), stream);
    CUdeviceptr info = w.dev[1], scratch_info = info + (CUdeviceptr)((size_t)batch * sizeof(int));
    CUdeviceptr lu = w.dev[3], rhs = w.dev[3] + (CUdeviceptr)mat;
    /* cholesky: A's lower triangle into out with zeros above, the whole stack in one pass
     * (half of A read, out written once); potrf then factors each matrix in place, reading
     * and writing that triangle alone, so the zeros stay */
    const mat_stack chol_in = {in[0], n, n * n}, chol_out = {out, n, n * n};
    if (chol && st == FC_OK && n > 0)
        st = tri_copy(ctx, s, stream, es, false, batch, n, n, &chol_in, &chol_out);
    for (int64_t b = 0; b < batch && n > 0 && st == FC_OK; b++) {
        CUdeviceptr src = in[0] + (CUdeviceptr)((size_t)b * mat);
        CUdeviceptr ib = info + (CUdeviceptr)((size_t)b * sizeof(int));
        if (chol) {
            CUdeviceptr o = out + (CUdeviceptr)((size_t)b * mat);
            st = SOLVER(ctx, Xpotrf, (s->solver, s->params, CUBLAS_FILL_MODE_UPPER, n, dt,
                                      dptr(o), n, dt, dptr(w.dev[0]), dev_work, w.host,
                                      host_work, dptr(ib)));
            continue;
        }
        CUdeviceptr piv = w.dev[2] + (CUdeviceptr)((size_t)(slog ? b * n : 0) * sizeof(int64_t));
        st = transpose(ctx, s, t, n, n, src, lu); /* A in column-major order: factor A itself */
        if (st == FC_OK)
            st = SOLVER(ctx, Xgetrf, (s->solver, s->params, n, n, dt, dptr(lu), n,
                                      (int64_t *)dptr(piv), dt, dptr(w.dev[0]), dev_work, w.host,
                                      host_work, dptr(ib)));
        if (st == FC_OK && slog) {
            st = strided_copy(ctx, s, es, (int)n, lu, (int)n + 1,
                              rhs + (CUdeviceptr)((size_t)(b * n) * es), 1);
            continue;
        }
        if (st != FC_OK || k == 0) continue;
        CUdeviceptr bsrc = in[1] + (CUdeviceptr)((size_t)(b * n * k) * es);
        CUdeviceptr o = out + (CUdeviceptr)((size_t)(b * n * k) * es);
        CUdeviceptr xb = k == 1 ? o : rhs; /* column-major n x k */
        st = k == 1 ? fcr_lib_copy(ctx, o, bsrc, (size_t)n * es, stream)
                    : transpose(ctx, s, t, n, k, bsrc, rhs);
        if (st == FC_OK)
            st = SOLVER(ctx, Xgetrs, (s->solver, s->params, CUBLAS_OP_N, n, k, dt, dptr(lu), n,
                                      (const int64_t *)dptr(piv), dt, dptr(xb), n,
                                      dptr(scratch_info)));
        if (st == FC_OK && k > 1) st = transpose(ctx, s, t, k, n, rhs, o);
    }
    if (st == FC_OK && slog)
        st = slogdet_finish(ctx, t, n, batch, in[0], rhs, w.dev[2], info, out, stream);
    else if (st == FC_OK && n > 0)
        st = check_infos(ctx, a, info, batch, batch, stream);
    work_free(ctx, &w, stream);
    return st;
}

/* ---- what backend/cuda_batched.c borrows (cuda_lib.h) ---------------------------------- */

void *fcr_lib_symbol(bool blas_library, const char *name) {
    fcr_library *lib = blas_library ? &blas_lib : &solver_lib;
    if (!(blas_library ? load_blas() : load_solver())) return NULL;
    /* loaded already: dlopen finds the same object (and dlclose leaves it loaded) */
    void *h = dlopen(lib->soname, RTLD_NOW | RTLD_LOCAL);
    void *p = h ? dlsym(h, name) : NULL;
    if (h) dlclose(h);
    return p;
}

fc_status fcr_lib_blas_status(fc_ctx *ctx, int status, const char *call, const char *file,
                              int line) {
    return blas_check(ctx, (cublasStatus_t)status, call, file, line);
}

fc_status fcr_lib_solver_status(fc_ctx *ctx, int status, const char *call, const char *file,
                                int line) {
    return solver_check(ctx, (cusolverStatus_t)status, call, file, line);
}

fc_status fcr_lib_check_infos(fc_ctx *ctx, const fc_array *a, CUdeviceptr info, int64_t count,
                              int64_t batch, CUstream stream) {
    return check_infos(ctx, a, info, count, batch, stream);
}

fc_status fcr_lib_slogdet_finish(fc_ctx *ctx, fc_dtype t, int64_t n, int64_t batch,
                                 CUdeviceptr a, CUdeviceptr diag, CUdeviceptr piv,
                                 CUdeviceptr info, CUdeviceptr out, CUstream stream) {
    return slogdet_finish(ctx, t, n, batch, a, diag, piv, info, out, stream);
}

fc_status fcr_lib_tri_copy(fc_ctx *ctx, void *lib, CUstream stream, size_t es, bool upper,
                           int64_t count, int64_t rows, int64_t cols, CUdeviceptr src,
                           CUdeviceptr dst) {
    const mat_stack from = {src, cols, rows * cols}, to = {dst, cols, rows * cols};
    return tri_copy(ctx, lib, stream, es, upper, count, rows, cols, src ? &from : NULL, &to);
}

/* ---- sparse products -------------------------------------------------------------------- */

/* The context's cuSPARSE handle, on `stream`. */
static fc_status sparse_handle(fc_ctx *ctx, lib_state *s, CUstream stream) {
    if (!load_sparse()) return fcg_error(ctx, FC_ERR_BACKEND, "%s", sparse_lib.error);
    fc_status st;
    if (!s->sparse) {
        if (s->capturing) return NOT_READY;
        cusparseHandle_t h;
        if ((st = SPARSE(ctx, Create, (&h))) != FC_OK) return st;
        s->sparse = h;
    }
    if (s->sparse_bound && s->sparse_stream == stream) return FC_OK;
    s->sparse_bound = false;
    if ((st = SPARSE(ctx, SetStream, (s->sparse, stream))) != FC_OK) return st;
    s->sparse_bound = true;
    s->sparse_stream = stream;
    return FC_OK;
}

/* scipy.sparse's csr_matrix @ x (CSR_MATMUL: in[0] indptr, in[1] indices, in[2] data, in[3]
 * x; see the file's comment). A matrix with no stored values gives zeros without a call. */
static fc_status run_csr_matmul(fc_ctx *ctx, lib_state *s, CUstream stream, const fc_array *a,
                                const CUdeviceptr *in, CUdeviceptr out) {
    const fc_array *ptr = a->in[0], *idx = a->in[1], *data = a->in[2], *x = a->in[3];
    fc_dtype t = (fc_dtype)a->dtype;
    cudaDataType dt;
    gemm_types g; /* one and zero of the value type */
    if (data->dtype != t || x->dtype != t || idx->dtype != ptr->dtype ||
        (idx->dtype != FC_I32 && idx->dtype != FC_I64) || !solver_types(t, &dt) ||
        !gemm_types_of(t, &g))
        return FC_ERR_UNSUPPORTED;
    cusparseIndexType_t itype = idx->dtype == FC_I32 ? CUSPARSE_INDEX_32I : CUSPARSE_INDEX_64I;
    bool vector = x->ndim == 1;
    int64_t m = ptr->shape[0] - 1, nnz = idx->shape[0], n = x->shape[0];
    int64_t k = vector ? 1 : x->shape[1];
    size_t es = fc_dtype_size(t);
    if (nnz == 0) return fcr_lib_zero(ctx, out, (size_t)(m * k) * es / 4, stream);
    /* cuSPARSE refuses more stored values than the matrix has places (duplicates a COO
     * product keeps, the GPU's first run found): the host reference adds them */
    if (n == 0 || nnz / n > m || (nnz / n == m && nnz % n)) return FC_ERR_UNSUPPORTED;
    fc_status st = sparse_handle(ctx, s, stream);
    if (st != FC_OK) return st;
    cusparseSpMatDescr_t ma = NULL;
    cusparseDnVecDescr_t vx = NULL, vy = NULL;
    cusparseDnMatDescr_t mb = NULL, mc = NULL;
    CUdeviceptr work = 0;
    size_t work_bytes = 0;
    const cusparseOperation_t op = CUSPARSE_OPERATION_NON_TRANSPOSE;
    st = SPARSE(ctx, CreateCsr, (&ma, m, n, nnz, dptr(in[0]), dptr(in[1]), dptr(in[2]), itype,
                                 itype, CUSPARSE_INDEX_BASE_ZERO, dt));
    if (st == FC_OK && vector) {
        st = SPARSE(ctx, CreateDnVec, (&vx, n, dptr(in[3]), dt));
        if (st == FC_OK) st = SPARSE(ctx, CreateDnVec, (&vy, m, dptr(out), dt));
        if (st == FC_OK)
            st = SPARSE(ctx, SpMV_bufferSize, (s->sparse, op, &g.one, ma, vx, &g.zero, vy, dt,
                                               CUSPARSE_SPMV_ALG_DEFAULT, &work_bytes));
    } else if (st == FC_OK) {
        st = SPARSE(ctx, CreateDnMat, (&mb, n, k, k, dptr(in[3]), dt, CUSPARSE_ORDER_ROW));
        if (st == FC_OK) st = SPARSE(ctx, CreateDnMat, (&mc, m, k, k, dptr(out), dt, CUSPARSE_ORDER_ROW));
        if (st == FC_OK)
            st = SPARSE(ctx, SpMM_bufferSize, (s->sparse, op, op, &g.one, ma, mb, &g.zero, mc, dt,
                                               CUSPARSE_SPMM_ALG_DEFAULT, &work_bytes));
    }
    if (st == FC_OK) st = scratch(ctx, s, stream, work_bytes, &work);
    if (st == FC_OK && vector)
        st = SPARSE(ctx, SpMV, (s->sparse, op, &g.one, ma, vx, &g.zero, vy, dt,
                                CUSPARSE_SPMV_ALG_DEFAULT, dptr(work)));
    else if (st == FC_OK)
        st = SPARSE(ctx, SpMM, (s->sparse, op, op, &g.one, ma, mb, &g.zero, mc, dt,
                                CUSPARSE_SPMM_ALG_DEFAULT, dptr(work)));
    if (mc) sparse.DestroyDnMat(mc);
    if (mb) sparse.DestroyDnMat(mb);
    if (vy) sparse.DestroyDnVec(vy);
    if (vx) sparse.DestroyDnVec(vx);
    if (ma) sparse.DestroySpMat(ma);
    return st;
}

/* ---- the entry point -------------------------------------------------------------------- */

fc_status fcr_lib_run(fc_ctx *ctx, void **state, CUstream stream, const fcp_kernel *k,
                      const CUdeviceptr *in, CUdeviceptr out) {
    if (k->kind != FCP_KERNEL_LIB || k->nout != 1 || k->outs[0]->nin > 4)
        return fcg_error(ctx, FC_ERR_BACKEND, "library call: not a library kernel (fusec bug)");
    /* The library node: what k stores, or the product inside when k stores the end of an
     * epilogue the library applies (passes/epilogue.c) */
    fcp_epilogue epi;
    bool epilogue = fcp_lib_epilogue(k, &epi);
    const fc_array *a = epi.lib;
    if (!a)
        return fcg_error(ctx, FC_ERR_BACKEND, "library call: a kernel with no library node "
                         "(fusec bug)");
    /* Leaves are the distinct buffers in order of first use: matmul(x, x) has one. An input
     * that is a view the library reads through a flag of its own (fcp_lib_source: a matmul
     * operand's transpose, a stencil's reversed weights) and was not stored is read from its
     * source's buffer with that flag (fusion stored the source). */
    CUdeviceptr args[4] = {0, 0, 0, 0}, bias = 0;
    bool trans[4] = {false, false, false, false}, have_bias = !epilogue || !epi.bias;
    for (int l = 0; !have_bias && l < k->nleaf; l++)
        if (k->leaves[l] == epi.bias) {
            bias = in[l];
            have_bias = true;
        }
    if (!have_bias)
        return fcg_error(ctx, FC_ERR_BACKEND, "matmul: the epilogue's bias is not a buffer of "
                         "the kernel (fusec bug)");
    for (int j = 0; j < a->nin; j++) {
        int l = 0;
        while (l < k->nleaf && k->leaves[l] != a->in[j]) l++;
        const fc_array *src = fcp_lib_source(a, j);
        if (l == k->nleaf && src) {
            for (l = 0; l < k->nleaf && k->leaves[l] != src; l++) {
            }
            trans[j] = l < k->nleaf;
        }
        if (l == k->nleaf)
            return fcg_error(ctx, FC_ERR_BACKEND, "%s: input %d is not a buffer of the kernel "
                             "(fusec bug)", fcg_ops[a->op].pyname, j);
        args[j] = in[l];
    }
    bool linalg = fcg_op_is_linalg(a->op);
    if (a->op != FCG_OP_MATMUL && a->op != FCG_OP_FFTN && a->op != FCG_OP_SORT &&
        a->op != FCG_OP_ARGSORT && a->op != FCG_OP_CSR_MATMUL && a->op != FCG_OP_STENCIL2D &&
        !linalg)
        return FC_ERR_UNSUPPORTED;
    if (fcg_node_numel(a) == 0) return FC_OK; /* nothing to write */
    lib_state *s = NULL;
    fc_status st = get_state(ctx, state, &s);
    if (st != FC_OK) return st;
    if (a->op == FCG_OP_STENCIL2D)
        return fcr_stencil_run(ctx, &s->stencil, stream, a, args[0], args[1], trans[1], out);
    if (a->op == FCG_OP_SORT || a->op == FCG_OP_ARGSORT)
        return fcr_sort_run(ctx, &s->sort, stream, a, args[0], out);
    if (epilogue) { /* cuBLASLt works in the stream's cuBLAS workspace */
        stream_work *w;
        if ((st = blas_workspace(ctx, s, stream, &w)) != FC_OK) return st;
        const fcr_lib_work work = {w->blas, w->blas_bytes, s->capturing};
        return fcr_lt_matmul(ctx, &s->lt, stream, &epi, args[0], trans[0], args[1], trans[1],
                             bias, out, &work);
    }
    if (a->op == FCG_OP_MATMUL) return run_matmul(ctx, s, stream, a, args, trans, out);
    if (linalg) return run_linalg(ctx, s, stream, a, args, out);
    if (a->op == FCG_OP_CSR_MATMUL) return run_csr_matmul(ctx, s, stream, a, args, out);
    return run_fft(ctx, s, stream, a, args[0], out);
}

/* ---- CUDA graphs -------------------------------------------------------------------------- */

bool fcr_lib_capturable(const fcp_kernel *k) {
    fcp_epilogue epi; /* a matmul with its epilogue (cuBLASLt) too */
    fcp_lib_epilogue(k, &epi);
    if (!epi.lib || k->nleaf > FCR_LIB_MAX_IN) return false;
    int op = epi.lib->op;
    return op == FCG_OP_MATMUL || op == FCG_OP_FFTN || op == FCG_OP_CSR_MATMUL;
}

fc_status fcr_lib_capture(fc_ctx *ctx, void **state, CUstream stream, const fcp_kernel *k,
                          const CUdeviceptr *in, CUdeviceptr out) {
    if (!*state || !fcr_lib_capturable(k)) return NOT_READY;
    lib_state *s = *state;
    s->capturing = true;
    fc_status st = fcr_lib_run(ctx, state, stream, k, in, out);
    s->capturing = false;
    return st;
}
