/*
 * bench/libdirect.c - issue 12's library-bound rows with the libraries called directly.
 *
 *   libdirect [--runs N] [--warmup N] [--only ID,...] [--json FILE] [--seed S]
 *
 * The reference of the "within 2% of the library called directly" target: the bare cuSOLVER,
 * cuFFT, cuSPARSE and cuBLASLt calls of bench/fc/i12_*.fc (and of peers.py's I12_spmv), at
 * the same sizes, timed as fusec and the peers are, with CUDA events on one stream around the
 * calls, warm-up calls first, then the median (and min, max) of N timed runs, each waited for.
 * Plans, handles, descriptors and workspaces are made once per row, outside the clock, as a
 * library user keeps them (fusec and CuPy cache their plans too).
 *
 * The factorisations overwrite their input (getrf, potrf, gesvd; getrs its right-hand side),
 * which a NumPy function must not: each run first copies the input into the work buffer.
 * That copy stands between two events of its own: `median_ms` is the library calls alone,
 * `with_input_copy_ms` the copy and the calls, the like-for-like figure for an op that keeps
 * its input. Rows (ids as in bench/fusec_runs.py and bench/peers.py):
 *
 *   copy                  cudaMemcpyAsync device to device of 1 GiB (bytes read + written)
 *   I12_solve             cusolverDnXgetrf + Xgetrs, f32 4096 x 4096, one right-hand side
 *   I12_svd               cusolverDnXgesvd, f32 1024 x 1024, jobu = jobvt = 'A'
 *   I12_cholesky          cusolverDnXpotrf, f64 8192 x 8192
 *   I12_rfft              cufftExecR2C, 2^26 f32 points (one 1-D plan)
 *   I12_fft2              cufftExecC2C forward, c64 8192 x 8192 (one 2-D plan), out of place
 *   I12_spmv              cusparseSpMV (CSR, f32, int32 indices), 2^24 x 2^24, 2^27 non-zeros
 *   I12_matmul_bias_relu  cublasLtMatmul, f32 4096^3, CUBLASLT_EPILOGUE_RELU_BIAS
 *   I12_matmul_bias_gelu  cublasLtMatmul, f32 4096^3, CUBLASLT_EPILOGUE_GELU_BIAS
 *   I12_matmul            cublasLtMatmul, f32 4096^3, no epilogue (the product alone)
 *
 * Inputs are made on the host (uniform in [0, 1) from a counter-based hash, --seed) and
 * copied once: solve's A has 4096 added to its diagonal (strictly diagonally dominant),
 * cholesky's is (R + R^T) / 2 + 8192 I (SPD); the CSR matrix has each non-zero's row and
 * column uniform and independent, sorted by row, then column. The factorisations' info is
 * checked after the runs. f32 products use CUBLAS_COMPUTE_32F (no TF32), as the peers do.
 * GFLOP/s uses the nominal counts of bench/fusec_runs.py (FLOPS); GB/s and % of the copy
 * floor use the bytes that must move (inputs read once, outputs written once; SpMV: values,
 * column indices, row offsets, x and y once each) and the copy row's bandwidth.
 *
 * One line per row on stdout; --json FILE writes every figure. A row that fails prints its
 * error and the others go on; the exit status is 1 if any failed. Built only where the CUDA
 * toolkit's cuSOLVER, cuFFT, cuSPARSE and cuBLASLt are found (bench/CMakeLists.txt); it links
 * them directly, as fusec does not (it loads them at run time).
 */
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <cufft.h>
#include <cusolverDn.h>
#include <cusparse.h>

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- errors ------------------------------------------------------------------------------ */

static char errbuf[512]; /* the failing row's message */

static void fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(errbuf, sizeof errbuf, fmt, ap);
    va_end(ap);
}

/* Each check records the failing call and jumps to the function's `out` label, whose cleanup
 * frees what was made; rc stays -1. */
#define CK_CUDA(call)                                                                         \
    do {                                                                                      \
        cudaError_t e_ = (call);                                                              \
        if (e_ != cudaSuccess) {                                                              \
            fail("%s (line %d): %s", #call, __LINE__, cudaGetErrorString(e_));                \
            goto out;                                                                         \
        }                                                                                     \
    } while (0)
#define CK_SOLVER(call)                                                                       \
    do {                                                                                      \
        cusolverStatus_t e_ = (call);                                                         \
        if (e_ != CUSOLVER_STATUS_SUCCESS) {                                                  \
            fail("%s (line %d): cusolverStatus %d", #call, __LINE__, (int)e_);                \
            goto out;                                                                         \
        }                                                                                     \
    } while (0)
#define CK_FFT(call)                                                                          \
    do {                                                                                      \
        cufftResult e_ = (call);                                                              \
        if (e_ != CUFFT_SUCCESS) {                                                            \
            fail("%s (line %d): cufftResult %d", #call, __LINE__, (int)e_);                   \
            goto out;                                                                         \
        }                                                                                     \
    } while (0)
#define CK_SPARSE(call)                                                                       \
    do {                                                                                      \
        cusparseStatus_t e_ = (call);                                                         \
        if (e_ != CUSPARSE_STATUS_SUCCESS) {                                                  \
            fail("%s (line %d): %s", #call, __LINE__, cusparseGetErrorString(e_));            \
            goto out;                                                                         \
        }                                                                                     \
    } while (0)
#define CK_LT(call)                                                                           \
    do {                                                                                      \
        cublasStatus_t e_ = (call);                                                           \
        if (e_ != CUBLAS_STATUS_SUCCESS) {                                                    \
            fail("%s (line %d): %s", #call, __LINE__, cublasLtGetStatusString(e_));           \
            goto out;                                                                         \
        }                                                                                     \
    } while (0)
#define CK_ALLOC(p)                                                                           \
    do {                                                                                      \
        if (!(p)) {                                                                           \
            fail("out of host memory (line %d)", __LINE__);                                   \
            goto out;                                                                         \
        }                                                                                     \
    } while (0)

/* ---- options and results ----------------------------------------------------------------- */

typedef struct opts {
    int runs, warmup;
    const char *only; /* comma-separated ids or prefixes (I12 selects every I12 row) */
    const char *json;
    uint64_t seed;
} opts;

typedef struct result {
    const char *id, *what;
    bool ok;
    double median_ms, min_ms, max_ms;
    double with_copy_ms; /* < 0: no input copy */
    double flops, bytes; /* 0: not counted */
    char error[512];
} result;

enum { MAX_ROWS = 16 };
static result results[MAX_ROWS];
static int nresults;
static double copy_gbps; /* the copy row's, 0 if it did not run */
static cudaStream_t stream;

/* ---- host data --------------------------------------------------------------------------- */

static uint64_t mix64(uint64_t z) {
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Uniform in [0, 1): draw i of stream s. */
static double uniform(uint64_t seed, uint64_t s, uint64_t i) {
    return (double)(mix64(mix64(seed ^ (s << 56)) + i) >> 11) * 0x1p-53;
}

static float *host_f32(size_t n, uint64_t seed, uint64_t s) {
    float *p = malloc(n * sizeof *p);
    if (p)
        for (size_t i = 0; i < n; i++) p[i] = (float)uniform(seed, s, i);
    return p;
}

/* A device buffer holding n floats from host_f32. */
static int device_f32(float **dst, size_t n, uint64_t seed, uint64_t s) {
    int rc = -1;
    float *h = host_f32(n, seed, s);
    CK_ALLOC(h);
    CK_CUDA(cudaMalloc((void **)dst, n * sizeof(float)));
    CK_CUDA(cudaMemcpy(*dst, h, n * sizeof(float), cudaMemcpyHostToDevice));
    rc = 0;
out:
    free(h);
    return rc;
}

static int device_int_ok(const int *dinfo, const char *call) {
    int info = 0, rc = -1;
    CK_CUDA(cudaMemcpy(&info, dinfo, sizeof info, cudaMemcpyDeviceToHost));
    if (info != 0) {
        fail("%s: info = %d", call, info);
        goto out;
    }
    rc = 0;
out:
    return rc;
}

/* ---- timing ------------------------------------------------------------------------------ */

/* One row's work: prep (may be NULL) copies the inputs the calls overwrite; call makes the
 * library calls. Both enqueue on `stream` and return 0, or -1 with errbuf set. */
typedef int (*stage_fn)(void *state);

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int time_row(const opts *o, stage_fn prep, stage_fn call, void *state, result *r) {
    int rc = -1;
    cudaEvent_t e0 = NULL, e1 = NULL, e2 = NULL;
    double *lib = calloc((size_t)o->runs, sizeof *lib);
    double *all = calloc((size_t)o->runs, sizeof *all);
    CK_ALLOC(lib && all);
    CK_CUDA(cudaEventCreate(&e0));
    CK_CUDA(cudaEventCreate(&e1));
    CK_CUDA(cudaEventCreate(&e2));
    for (int it = 0; it < o->warmup + o->runs; it++) {
        CK_CUDA(cudaEventRecord(e0, stream));
        if (prep && prep(state) != 0) goto out;
        CK_CUDA(cudaEventRecord(e1, stream));
        if (call(state) != 0) goto out;
        CK_CUDA(cudaEventRecord(e2, stream));
        CK_CUDA(cudaEventSynchronize(e2));
        float t_lib = 0, t_all = 0;
        CK_CUDA(cudaEventElapsedTime(&t_lib, e1, e2));
        CK_CUDA(cudaEventElapsedTime(&t_all, e0, e2));
        if (it >= o->warmup) {
            lib[it - o->warmup] = t_lib;
            all[it - o->warmup] = t_all;
        }
    }
    r->median_ms = median(lib, o->runs);
    r->min_ms = lib[0];
    r->max_ms = lib[o->runs - 1];
    r->with_copy_ms = prep ? median(all, o->runs) : -1;
    rc = 0;
out:
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    if (e2) cudaEventDestroy(e2);
    free(lib);
    free(all);
    return rc;
}

/* ---- copy -------------------------------------------------------------------------------- */

typedef struct copy_state {
    void *src, *dst;
    size_t bytes;
} copy_state;

static int copy_call(void *p) {
    copy_state *s = p;
    int rc = -1;
    CK_CUDA(cudaMemcpyAsync(s->dst, s->src, s->bytes, cudaMemcpyDeviceToDevice, stream));
    rc = 0;
out:
    return rc;
}

static int row_copy(const opts *o, result *r) {
    copy_state s = {NULL, NULL, (size_t)1 << 30};
    int rc = -1;
    CK_CUDA(cudaMalloc(&s.src, s.bytes));
    CK_CUDA(cudaMalloc(&s.dst, s.bytes));
    CK_CUDA(cudaMemset(s.src, 0x3c, s.bytes)); /* pages touched before the clock */
    CK_CUDA(cudaMemset(s.dst, 0, s.bytes));
    r->bytes = 2.0 * (double)s.bytes;
    if (time_row(o, NULL, copy_call, &s, r) != 0) goto out;
    copy_gbps = r->bytes / (r->median_ms * 1e-3) / 1e9;
    rc = 0;
out:
    cudaFree(s.src);
    cudaFree(s.dst);
    return rc;
}

/* ---- cuSOLVER: solve, svd, cholesky ------------------------------------------------------ */

typedef struct solver_state {
    cusolverDnHandle_t h;
    cusolverDnParams_t params;
    int64_t n;
    size_t mat_bytes, rhs_bytes;
    void *a, *work_a;   /* the input and the copy the factorisation overwrites */
    void *b, *x;        /* solve: b and the copy getrs overwrites with x */
    void *s, *u, *vt;   /* svd */
    int64_t *ipiv;      /* solve */
    int *info;          /* info of the factorisation, then of getrs */
    void *dwork, *hwork;
    size_t dwork_bytes, hwork_bytes;
} solver_state;

static int solver_open(solver_state *s) {
    int rc = -1;
    CK_SOLVER(cusolverDnCreate(&s->h));
    CK_SOLVER(cusolverDnCreateParams(&s->params));
    CK_SOLVER(cusolverDnSetStream(s->h, stream));
    CK_CUDA(cudaMalloc((void **)&s->info, 2 * sizeof(int)));
    CK_CUDA(cudaMemset(s->info, 0, 2 * sizeof(int)));
    rc = 0;
out:
    return rc;
}

static int solver_work(solver_state *s) {
    int rc = -1;
    if (s->dwork_bytes) CK_CUDA(cudaMalloc(&s->dwork, s->dwork_bytes));
    if (s->hwork_bytes) CK_ALLOC(s->hwork = malloc(s->hwork_bytes));
    rc = 0;
out:
    return rc;
}

static void solver_close(solver_state *s) {
    cudaFree(s->a);
    cudaFree(s->work_a);
    cudaFree(s->b);
    cudaFree(s->x);
    cudaFree(s->s);
    cudaFree(s->u);
    cudaFree(s->vt);
    cudaFree(s->ipiv);
    cudaFree(s->info);
    cudaFree(s->dwork);
    free(s->hwork);
    if (s->params) cusolverDnDestroyParams(s->params);
    if (s->h) cusolverDnDestroy(s->h);
}

/* The inputs into the buffers the calls overwrite (the timed runs' first, separate span). */
static int solver_prep(void *p) {
    solver_state *s = p;
    int rc = -1;
    CK_CUDA(cudaMemcpyAsync(s->work_a, s->a, s->mat_bytes, cudaMemcpyDeviceToDevice, stream));
    if (s->b)
        CK_CUDA(cudaMemcpyAsync(s->x, s->b, s->rhs_bytes, cudaMemcpyDeviceToDevice, stream));
    rc = 0;
out:
    return rc;
}

/* cuSOLVER is column-major: the row-major A reads as A^T, so getrf factors A^T and getrs
 * with CUBLAS_OP_T solves A x = b (the same work as factoring a transposed copy of A). */
static int solve_call(void *p) {
    solver_state *s = p;
    int rc = -1;
    CK_SOLVER(cusolverDnXgetrf(s->h, s->params, s->n, s->n, CUDA_R_32F, s->work_a, s->n, s->ipiv,
                               CUDA_R_32F, s->dwork, s->dwork_bytes, s->hwork, s->hwork_bytes,
                               s->info));
    CK_SOLVER(cusolverDnXgetrs(s->h, s->params, CUBLAS_OP_T, s->n, 1, CUDA_R_32F, s->work_a, s->n,
                               s->ipiv, CUDA_R_32F, s->x, s->n, s->info + 1));
    rc = 0;
out:
    return rc;
}

static int row_solve(const opts *o, result *r) {
    solver_state s;
    memset(&s, 0, sizeof s);
    int rc = -1;
    int64_t n = s.n = 4096;
    s.mat_bytes = (size_t)(n * n) * sizeof(float);
    s.rhs_bytes = (size_t)n * sizeof(float);
    float *h = host_f32((size_t)(n * n), o->seed, 1);
    CK_ALLOC(h);
    for (int64_t i = 0; i < n; i++) h[i * n + i] += (float)n; /* diagonally dominant */
    CK_CUDA(cudaMalloc(&s.a, s.mat_bytes));
    CK_CUDA(cudaMemcpy(s.a, h, s.mat_bytes, cudaMemcpyHostToDevice));
    CK_CUDA(cudaMalloc(&s.work_a, s.mat_bytes));
    if (device_f32((float **)&s.b, (size_t)n, o->seed, 2) != 0) goto out;
    CK_CUDA(cudaMalloc(&s.x, s.rhs_bytes));
    CK_CUDA(cudaMalloc((void **)&s.ipiv, (size_t)n * sizeof(int64_t)));
    if (solver_open(&s) != 0) goto out;
    CK_SOLVER(cusolverDnXgetrf_bufferSize(s.h, s.params, n, n, CUDA_R_32F, s.work_a, n, CUDA_R_32F,
                                          &s.dwork_bytes, &s.hwork_bytes));
    if (solver_work(&s) != 0) goto out;
    r->flops = 2.0 / 3.0 * (double)n * (double)n * (double)n + 2.0 * (double)n * (double)n;
    r->bytes = (double)(s.mat_bytes + 2 * s.rhs_bytes);
    if (time_row(o, solver_prep, solve_call, &s, r) != 0) goto out;
    if (device_int_ok(s.info, "cusolverDnXgetrf") != 0) goto out;
    if (device_int_ok(s.info + 1, "cusolverDnXgetrs") != 0) goto out;
    rc = 0;
out:
    free(h);
    solver_close(&s);
    return rc;
}

static int svd_call(void *p) {
    solver_state *s = p;
    int rc = -1;
    CK_SOLVER(cusolverDnXgesvd(s->h, s->params, 'A', 'A', s->n, s->n, CUDA_R_32F, s->work_a, s->n,
                               CUDA_R_32F, s->s, CUDA_R_32F, s->u, s->n, CUDA_R_32F, s->vt, s->n,
                               CUDA_R_32F, s->dwork, s->dwork_bytes, s->hwork, s->hwork_bytes,
                               s->info));
    rc = 0;
out:
    return rc;
}

static int row_svd(const opts *o, result *r) {
    solver_state s;
    memset(&s, 0, sizeof s);
    int rc = -1;
    int64_t n = s.n = 1024;
    s.mat_bytes = (size_t)(n * n) * sizeof(float);
    if (device_f32((float **)&s.a, (size_t)(n * n), o->seed, 3) != 0) goto out;
    CK_CUDA(cudaMalloc(&s.work_a, s.mat_bytes));
    CK_CUDA(cudaMalloc(&s.s, (size_t)n * sizeof(float)));
    CK_CUDA(cudaMalloc(&s.u, s.mat_bytes));
    CK_CUDA(cudaMalloc(&s.vt, s.mat_bytes));
    if (solver_open(&s) != 0) goto out;
    CK_SOLVER(cusolverDnXgesvd_bufferSize(s.h, s.params, 'A', 'A', n, n, CUDA_R_32F, s.work_a, n,
                                          CUDA_R_32F, s.s, CUDA_R_32F, s.u, n, CUDA_R_32F, s.vt, n,
                                          CUDA_R_32F, &s.dwork_bytes, &s.hwork_bytes));
    if (solver_work(&s) != 0) goto out;
    r->flops = 21.0 * (double)n * (double)n * (double)n;
    r->bytes = (double)(3 * s.mat_bytes + (size_t)n * sizeof(float));
    if (time_row(o, solver_prep, svd_call, &s, r) != 0) goto out;
    if (device_int_ok(s.info, "cusolverDnXgesvd") != 0) goto out;
    rc = 0;
out:
    solver_close(&s);
    return rc;
}

/* CUBLAS_FILL_MODE_UPPER of the column-major reading is the row-major lower triangle, what
 * NumPy reads (and what fusec passes); A is symmetric, so either triangle gives the factor. */
static int cholesky_call(void *p) {
    solver_state *s = p;
    int rc = -1;
    CK_SOLVER(cusolverDnXpotrf(s->h, s->params, CUBLAS_FILL_MODE_UPPER, s->n, CUDA_R_64F,
                               s->work_a, s->n, CUDA_R_64F, s->dwork, s->dwork_bytes, s->hwork,
                               s->hwork_bytes, s->info));
    rc = 0;
out:
    return rc;
}

static int row_cholesky(const opts *o, result *r) {
    solver_state s;
    memset(&s, 0, sizeof s);
    int rc = -1;
    int64_t n = s.n = 8192;
    s.mat_bytes = (size_t)(n * n) * sizeof(double);
    double *h = malloc(s.mat_bytes);
    CK_ALLOC(h);
    /* (R + R^T) / 2 + n I: element (i, j) and (j, i) share one draw */
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j <= i; j++) {
            double v = uniform(o->seed, 4, (uint64_t)(i * n + j));
            h[i * n + j] = h[j * n + i] = v + (i == j ? (double)n : 0.0);
        }
    CK_CUDA(cudaMalloc(&s.a, s.mat_bytes));
    CK_CUDA(cudaMemcpy(s.a, h, s.mat_bytes, cudaMemcpyHostToDevice));
    CK_CUDA(cudaMalloc(&s.work_a, s.mat_bytes));
    if (solver_open(&s) != 0) goto out;
    CK_SOLVER(cusolverDnXpotrf_bufferSize(s.h, s.params, CUBLAS_FILL_MODE_UPPER, n, CUDA_R_64F,
                                          s.work_a, n, CUDA_R_64F, &s.dwork_bytes,
                                          &s.hwork_bytes));
    if (solver_work(&s) != 0) goto out;
    r->flops = (double)n * (double)n * (double)n / 3.0;
    r->bytes = 2.0 * (double)s.mat_bytes;
    if (time_row(o, solver_prep, cholesky_call, &s, r) != 0) goto out;
    if (device_int_ok(s.info, "cusolverDnXpotrf") != 0) goto out;
    rc = 0;
out:
    free(h);
    solver_close(&s);
    return rc;
}

/* ---- cuFFT: rfft, fft2 ------------------------------------------------------------------- */

typedef struct fft_state {
    cufftHandle plan;
    bool have_plan;
    void *in, *out;
} fft_state;

static int rfft_call(void *p) {
    fft_state *s = p;
    int rc = -1;
    CK_FFT(cufftExecR2C(s->plan, (cufftReal *)s->in, (cufftComplex *)s->out));
    rc = 0;
out:
    return rc;
}

static int fft2_call(void *p) {
    fft_state *s = p;
    int rc = -1;
    CK_FFT(cufftExecC2C(s->plan, (cufftComplex *)s->in, (cufftComplex *)s->out, CUFFT_FORWARD));
    rc = 0;
out:
    return rc;
}

static void fft_close(fft_state *s) {
    if (s->have_plan) cufftDestroy(s->plan);
    cudaFree(s->in);
    cudaFree(s->out);
}

static int row_rfft(const opts *o, result *r) {
    fft_state s;
    memset(&s, 0, sizeof s);
    int rc = -1;
    const int n = 1 << 26;
    size_t out_bytes = (size_t)(n / 2 + 1) * sizeof(cufftComplex);
    if (device_f32((float **)&s.in, (size_t)n, o->seed, 5) != 0) goto out;
    CK_CUDA(cudaMalloc(&s.out, out_bytes));
    CK_FFT(cufftCreate(&s.plan));
    s.have_plan = true;
    size_t work = 0;
    CK_FFT(cufftMakePlan1d(s.plan, n, CUFFT_R2C, 1, &work));
    CK_FFT(cufftSetStream(s.plan, stream));
    r->bytes = (double)n * sizeof(float) + (double)out_bytes;
    if (time_row(o, NULL, rfft_call, &s, r) != 0) goto out;
    rc = 0;
out:
    fft_close(&s);
    return rc;
}

static int row_fft2(const opts *o, result *r) {
    fft_state s;
    memset(&s, 0, sizeof s);
    int rc = -1;
    const int side = 8192;
    size_t count = (size_t)side * (size_t)side, bytes = count * sizeof(cufftComplex);
    /* interleaved re, im: 2 count floats */
    if (device_f32((float **)&s.in, 2 * count, o->seed, 6) != 0) goto out;
    CK_CUDA(cudaMalloc(&s.out, bytes));
    CK_FFT(cufftCreate(&s.plan));
    s.have_plan = true;
    size_t work = 0;
    CK_FFT(cufftMakePlan2d(s.plan, side, side, CUFFT_C2C, &work)); /* row-major, as C */
    CK_FFT(cufftSetStream(s.plan, stream));
    r->bytes = 2.0 * (double)bytes;
    if (time_row(o, NULL, fft2_call, &s, r) != 0) goto out;
    rc = 0;
out:
    fft_close(&s);
    return rc;
}

/* ---- cuSPARSE: SpMV ---------------------------------------------------------------------- */

typedef struct spmv_state {
    cusparseHandle_t h;
    cusparseSpMatDescr_t mat;
    cusparseDnVecDescr_t vx, vy;
    void *offsets, *cols, *vals, *x, *y, *buf;
    size_t buf_bytes;
} spmv_state;

static int spmv_call(void *p) {
    spmv_state *s = p;
    int rc = -1;
    const float alpha = 1.0f, beta = 0.0f;
    CK_SPARSE(cusparseSpMV(s->h, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, s->mat, s->vx, &beta,
                           s->vy, CUDA_R_32F, CUSPARSE_SPMV_ALG_DEFAULT, s->buf));
    rc = 0;
out:
    return rc;
}

/* The random CSR matrix on the host: non-zero k's row and column are draws 2k and 2k + 1 of
 * one stream (n a power of two: a mask is exact), placed by a counting sort on the row, then
 * each row's columns sorted (about 8 a row: insertion sort). */
static uint64_t csr_draw(uint64_t base, uint64_t i) { return mix64(base + i); }

static int host_csr(int64_t n, int64_t nnz, uint64_t seed, int32_t *offsets, int32_t *cols) {
    int rc = -1;
    int64_t *next = calloc((size_t)n + 1, sizeof *next);
    CK_ALLOC(next);
    uint64_t mask = (uint64_t)n - 1, base = mix64(seed ^ 7);
    for (int64_t k = 0; k < nnz; k++) next[(csr_draw(base, 2 * (uint64_t)k) & mask) + 1]++;
    for (int64_t i = 0; i < n; i++) next[i + 1] += next[i];
    for (int64_t i = 0; i <= n; i++) offsets[i] = (int32_t)next[i];
    for (int64_t k = 0; k < nnz; k++) {
        int64_t row = (int64_t)(csr_draw(base, 2 * (uint64_t)k) & mask);
        cols[next[row]++] = (int32_t)(csr_draw(base, 2 * (uint64_t)k + 1) & mask);
    }
    for (int64_t i = 0; i < n; i++)
        for (int32_t a = offsets[i] + 1; a < offsets[i + 1]; a++) {
            int32_t c = cols[a], b = a;
            while (b > offsets[i] && cols[b - 1] > c) {
                cols[b] = cols[b - 1];
                b--;
            }
            cols[b] = c;
        }
    rc = 0;
out:
    free(next);
    return rc;
}

static int row_spmv(const opts *o, result *r) {
    spmv_state s;
    memset(&s, 0, sizeof s);
    int rc = -1;
    const int64_t n = (int64_t)1 << 24, nnz = (int64_t)1 << 27;
    int32_t *h_off = malloc((size_t)(n + 1) * sizeof *h_off);
    int32_t *h_cols = malloc((size_t)nnz * sizeof *h_cols);
    CK_ALLOC(h_off && h_cols);
    if (host_csr(n, nnz, o->seed, h_off, h_cols) != 0) goto out;
    CK_CUDA(cudaMalloc(&s.offsets, (size_t)(n + 1) * sizeof(int32_t)));
    CK_CUDA(cudaMalloc(&s.cols, (size_t)nnz * sizeof(int32_t)));
    CK_CUDA(cudaMemcpy(s.offsets, h_off, (size_t)(n + 1) * sizeof(int32_t),
                       cudaMemcpyHostToDevice));
    CK_CUDA(cudaMemcpy(s.cols, h_cols, (size_t)nnz * sizeof(int32_t), cudaMemcpyHostToDevice));
    if (device_f32((float **)&s.vals, (size_t)nnz, o->seed, 8) != 0) goto out;
    if (device_f32((float **)&s.x, (size_t)n, o->seed, 9) != 0) goto out;
    CK_CUDA(cudaMalloc(&s.y, (size_t)n * sizeof(float)));
    CK_SPARSE(cusparseCreate(&s.h));
    CK_SPARSE(cusparseSetStream(s.h, stream));
    CK_SPARSE(cusparseCreateCsr(&s.mat, n, n, nnz, s.offsets, s.cols, s.vals, CUSPARSE_INDEX_32I,
                                CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
    CK_SPARSE(cusparseCreateDnVec(&s.vx, n, s.x, CUDA_R_32F));
    CK_SPARSE(cusparseCreateDnVec(&s.vy, n, s.y, CUDA_R_32F));
    const float alpha = 1.0f, beta = 0.0f;
    CK_SPARSE(cusparseSpMV_bufferSize(s.h, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, s.mat, s.vx,
                                      &beta, s.vy, CUDA_R_32F, CUSPARSE_SPMV_ALG_DEFAULT,
                                      &s.buf_bytes));
    if (s.buf_bytes) CK_CUDA(cudaMalloc(&s.buf, s.buf_bytes));
    r->flops = 2.0 * (double)nnz;
    /* values and column indices, row offsets, x and y once each */
    r->bytes = 8.0 * (double)nnz + 4.0 * (double)(n + 1) + 8.0 * (double)n;
    if (time_row(o, NULL, spmv_call, &s, r) != 0) goto out;
    rc = 0;
out:
    free(h_off);
    free(h_cols);
    if (s.vx) cusparseDestroyDnVec(s.vx);
    if (s.vy) cusparseDestroyDnVec(s.vy);
    if (s.mat) cusparseDestroySpMat(s.mat);
    if (s.h) cusparseDestroy(s.h);
    cudaFree(s.offsets);
    cudaFree(s.cols);
    cudaFree(s.vals);
    cudaFree(s.x);
    cudaFree(s.y);
    cudaFree(s.buf);
    return rc;
}

/* ---- cuBLASLt: (A @ B + bias).relu() ----------------------------------------------------- */

typedef struct lt_state {
    cublasLtHandle_t h;
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t la, lb, lc;
    cublasLtMatmulPreference_t pref;
    cublasLtMatmulHeuristicResult_t heur;
    void *a, *b, *bias, *c, *ws;
    size_t ws_bytes;
    int n;
} lt_state;

/* Row-major C = A B is column-major C^T = B^T A^T, and a row-major buffer read column-major
 * is its transpose: so Lt's "A" is the buffer of B and its "B" the buffer of A, no transposes.
 * The bias epilogue adds bias[i] to row i of Lt's D, which is column i of the row-major C:
 * `a @ b + bias` with bias along the last axis. */
static int lt_call(void *p) {
    lt_state *s = p;
    int rc = -1;
    const float alpha = 1.0f, beta = 0.0f;
    CK_LT(cublasLtMatmul(s->h, s->op, &alpha, s->b, s->la, s->a, s->lb, &beta, s->c, s->lc, s->c,
                         s->lc, &s->heur.algo, s->ws, s->ws_bytes, stream));
    rc = 0;
out:
    return rc;
}

static int row_matmul(const opts *o, result *r, int epilogue) {
    lt_state s;
    memset(&s, 0, sizeof s);
    int rc = -1;
    int n = s.n = 4096;
    size_t mat = (size_t)n * (size_t)n * sizeof(float);
    if (device_f32((float **)&s.a, mat / sizeof(float), o->seed, 10) != 0) goto out;
    if (device_f32((float **)&s.b, mat / sizeof(float), o->seed, 11) != 0) goto out;
    if (device_f32((float **)&s.bias, (size_t)n, o->seed, 12) != 0) goto out;
    CK_CUDA(cudaMalloc(&s.c, mat));
    s.ws_bytes = (size_t)32 << 20;
    CK_CUDA(cudaMalloc(&s.ws, s.ws_bytes));
    CK_LT(cublasLtCreate(&s.h));
    CK_LT(cublasLtMatmulDescCreate(&s.op, CUBLAS_COMPUTE_32F, CUDA_R_32F)); /* no TF32 */
    if (epilogue) {
        cublasLtEpilogue_t epi = (cublasLtEpilogue_t)epilogue;
        CK_LT(cublasLtMatmulDescSetAttribute(s.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi,
                                             sizeof epi));
        const void *bias = s.bias;
        CK_LT(cublasLtMatmulDescSetAttribute(s.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                             sizeof bias));
    }
    CK_LT(cublasLtMatrixLayoutCreate(&s.la, CUDA_R_32F, (uint64_t)n, (uint64_t)n, n));
    CK_LT(cublasLtMatrixLayoutCreate(&s.lb, CUDA_R_32F, (uint64_t)n, (uint64_t)n, n));
    CK_LT(cublasLtMatrixLayoutCreate(&s.lc, CUDA_R_32F, (uint64_t)n, (uint64_t)n, n));
    CK_LT(cublasLtMatmulPreferenceCreate(&s.pref));
    uint64_t ws = s.ws_bytes;
    CK_LT(cublasLtMatmulPreferenceSetAttribute(s.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                               &ws, sizeof ws));
    int found = 0;
    CK_LT(cublasLtMatmulAlgoGetHeuristic(s.h, s.op, s.la, s.lb, s.lc, s.lc, s.pref, 1, &s.heur,
                                         &found));
    if (found < 1) {
        fail("cublasLtMatmulAlgoGetHeuristic: no algorithm");
        goto out;
    }
    r->flops = 2.0 * (double)n * n * n + (epilogue ? 2.0 * (double)n * n : 0.0);
    r->bytes = 3.0 * (double)mat + (epilogue ? (double)n * sizeof(float) : 0.0);
    if (time_row(o, NULL, lt_call, &s, r) != 0) goto out;
    rc = 0;
out:
    if (s.pref) cublasLtMatmulPreferenceDestroy(s.pref);
    if (s.la) cublasLtMatrixLayoutDestroy(s.la);
    if (s.lb) cublasLtMatrixLayoutDestroy(s.lb);
    if (s.lc) cublasLtMatrixLayoutDestroy(s.lc);
    if (s.op) cublasLtMatmulDescDestroy(s.op);
    if (s.h) cublasLtDestroy(s.h);
    cudaFree(s.a);
    cudaFree(s.b);
    cudaFree(s.bias);
    cudaFree(s.c);
    cudaFree(s.ws);
    return rc;
}

static int row_matmul_bias_relu(const opts *o, result *r) {
    return row_matmul(o, r, CUBLASLT_EPILOGUE_RELU_BIAS);
}
static int row_matmul_bias_gelu(const opts *o, result *r) {
    return row_matmul(o, r, CUBLASLT_EPILOGUE_GELU_BIAS);
}
static int row_matmul_only(const opts *o, result *r) { return row_matmul(o, r, 0); }

/* ---- the rows ---------------------------------------------------------------------------- */

typedef struct row {
    const char *id, *what;
    int (*run)(const opts *, result *);
} row;

static const row ROWS[] = {
    {"copy", "cudaMemcpyAsync device to device, 1 GiB (read + write counted)", row_copy},
    {"I12_solve", "cusolverDnXgetrf + Xgetrs, f32 4096, one right-hand side", row_solve},
    {"I12_svd", "cusolverDnXgesvd, f32 1024 x 1024, U and V^T", row_svd},
    {"I12_cholesky", "cusolverDnXpotrf, f64 8192", row_cholesky},
    {"I12_rfft", "cufftExecR2C, f32 2^26", row_rfft},
    {"I12_fft2", "cufftExecC2C 2-D plan, c64 8192 x 8192", row_fft2},
    {"I12_spmv", "cusparseSpMV CSR, 2^24 x 2^24, 2^27 nnz, f32, int32", row_spmv},
    {"I12_matmul_bias_relu", "cublasLtMatmul + CUBLASLT_EPILOGUE_RELU_BIAS, f32 4096^3",
     row_matmul_bias_relu},
    {"I12_matmul_bias_gelu", "cublasLtMatmul + CUBLASLT_EPILOGUE_GELU_BIAS, f32 4096^3",
     row_matmul_bias_gelu},
    {"I12_matmul", "cublasLtMatmul, no epilogue, f32 4096^3", row_matmul_only},
};

/* Whether --only selects id: each item is an id or the part before its first '_'. */
static bool selected(const char *only, const char *id) {
    if (!only) return true;
    size_t prefix = strcspn(id, "_");
    for (const char *p = only; *p;) {
        size_t len = strcspn(p, ",");
        if ((len == strlen(id) && strncmp(p, id, len) == 0) ||
            (len == prefix && strncmp(p, id, len) == 0))
            return true;
        p += len;
        if (*p == ',') p++;
    }
    return false;
}

static void json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

static void json_num(FILE *f, double v, bool have) {
    if (have) fprintf(f, "%.9g", v);
    else fputs("null", f);
}

static int write_json(const opts *o, const char *device, int cc_major, int cc_minor) {
    FILE *f = fopen(o->json, "w");
    if (!f) {
        perror(o->json);
        return -1;
    }
    fprintf(f, "{\"tool\": \"bench/libdirect\", \"device\": ");
    json_str(f, device);
    fprintf(f, ", \"cc\": \"%d.%d\", \"runs\": %d, \"warmup\": %d, \"copy_gbps\": ", cc_major,
            cc_minor, o->runs, o->warmup);
    json_num(f, copy_gbps, copy_gbps > 0);
    fprintf(f, ", \"rows\": {");
    for (int i = 0; i < nresults; i++) {
        const result *r = &results[i];
        bool t = r->ok;
        fprintf(f, "%s\n  ", i ? "," : "");
        json_str(f, r->id);
        fprintf(f, ": {\"what\": ");
        json_str(f, r->what);
        fprintf(f, ", \"median_ms\": ");
        json_num(f, r->median_ms, t);
        fprintf(f, ", \"min_ms\": ");
        json_num(f, r->min_ms, t);
        fprintf(f, ", \"max_ms\": ");
        json_num(f, r->max_ms, t);
        fprintf(f, ", \"with_input_copy_ms\": ");
        json_num(f, r->with_copy_ms, t && r->with_copy_ms >= 0);
        fprintf(f, ", \"flops\": ");
        json_num(f, r->flops, r->flops > 0);
        fprintf(f, ", \"gflops\": ");
        json_num(f, t && r->flops > 0 ? r->flops / (r->median_ms * 1e6) : 0, t && r->flops > 0);
        fprintf(f, ", \"bytes\": ");
        json_num(f, r->bytes, r->bytes > 0);
        fprintf(f, ", \"gbps\": ");
        json_num(f, t && r->bytes > 0 ? r->bytes / (r->median_ms * 1e6) : 0, t && r->bytes > 0);
        bool floor = t && r->bytes > 0 && copy_gbps > 0;
        double floor_ms = floor ? r->bytes / (copy_gbps * 1e9) * 1e3 : 0;
        fprintf(f, ", \"floor_ms\": ");
        json_num(f, floor_ms, floor);
        fprintf(f, ", \"floor_pct\": ");
        json_num(f, floor ? 100 * floor_ms / r->median_ms : 0, floor);
        fprintf(f, ", \"error\": ");
        if (r->ok) fputs("null", f);
        else json_str(f, r->error);
        fputc('}', f);
    }
    fprintf(f, "\n}}\n");
    if (fclose(f) != 0) {
        perror(o->json);
        return -1;
    }
    return 0;
}

static void usage(FILE *f) {
    fprintf(f,
            "usage: libdirect [--runs N] [--warmup N] [--only ID,...] [--json FILE] [--seed S]\n"
            "\n"
            "Times issue 12's rows with cuSOLVER, cuFFT, cuSPARSE and cuBLASLt called directly\n"
            "(CUDA events, the median of N runs after the warm-up; see the top of\n"
            "bench/libdirect.c). --only takes ids or prefixes (I12, copy); the copy row runs\n"
            "first and gives the floor's bandwidth. Rows:\n");
    for (size_t i = 0; i < sizeof ROWS / sizeof ROWS[0]; i++)
        fprintf(f, "  %-22s %s\n", ROWS[i].id, ROWS[i].what);
}

static bool parse_int(const char *s, int lo, int *out) {
    char *end;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v < lo || v > 100000) return false;
    *out = (int)v;
    return true;
}

int main(int argc, char **argv) {
    opts o = {15, 3, NULL, NULL, 12};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--runs") && v && parse_int(v, 1, &o.runs)) {
            i++;
        } else if (!strcmp(a, "--warmup") && v && parse_int(v, 0, &o.warmup)) {
            i++;
        } else if (!strcmp(a, "--only") && v) {
            o.only = v;
            i++;
        } else if (!strcmp(a, "--json") && v) {
            o.json = v;
            i++;
        } else if (!strcmp(a, "--seed") && v) {
            o.seed = strtoull(v, NULL, 10);
            i++;
        } else {
            fprintf(stderr, "libdirect: bad argument '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }

    struct cudaDeviceProp prop;
    int dev = 0;
    cudaError_t ce = cudaGetDevice(&dev);
    if (ce == cudaSuccess) ce = cudaGetDeviceProperties(&prop, dev);
    if (ce == cudaSuccess) ce = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    if (ce != cudaSuccess) {
        fprintf(stderr, "libdirect: no usable CUDA device: %s\n", cudaGetErrorString(ce));
        FILE *f = o.json ? fopen(o.json, "w") : NULL;
        if (f) { /* the run's record says why it has no rows */
            fprintf(f, "{\"tool\": \"bench/libdirect\", \"rows\": {}, \"error\": ");
            json_str(f, cudaGetErrorString(ce));
            fprintf(f, "}\n");
            fclose(f);
        }
        return 1;
    }
    printf("libdirect on %s (cc %d.%d), %d runs after %d warm-up\n", prop.name, prop.major,
           prop.minor, o.runs, o.warmup);
    int failed = 0;
    for (size_t i = 0; i < sizeof ROWS / sizeof ROWS[0]; i++) {
        /* the floor's bandwidth: the copy row runs whenever another row does */
        if (!selected(o.only, ROWS[i].id) && !(i == 0 && o.only)) continue;
        result *r = &results[nresults++];
        memset(r, 0, sizeof *r);
        r->id = ROWS[i].id;
        r->what = ROWS[i].what;
        r->with_copy_ms = -1;
        errbuf[0] = '\0';
        r->ok = ROWS[i].run(&o, r) == 0;
        /* a failed call can leave an error on the context: take it off before the next row */
        cudaError_t pending = cudaDeviceSynchronize();
        if (r->ok && pending != cudaSuccess) {
            r->ok = false;
            fail("after the row: %s", cudaGetErrorString(pending));
        }
        cudaGetLastError();
        if (!r->ok) {
            snprintf(r->error, sizeof r->error, "%s", errbuf[0] ? errbuf : "failed");
            printf("%-22s ERROR %s\n", r->id, r->error);
            failed++;
            fflush(stdout);
            continue;
        }
        printf("%-22s %9.3f ms  (min %.3f, max %.3f)", r->id, r->median_ms, r->min_ms, r->max_ms);
        if (r->with_copy_ms >= 0) printf("  with input copy %.3f ms", r->with_copy_ms);
        if (r->flops > 0) printf("  %.0f GFLOP/s", r->flops / (r->median_ms * 1e6));
        if (r->bytes > 0) printf("  %.0f GB/s", r->bytes / (r->median_ms * 1e6));
        if (r->bytes > 0 && copy_gbps > 0)
            printf("  %.0f%% of floor", 100 * r->bytes / (copy_gbps * 1e9) * 1e3 / r->median_ms);
        printf("  [%s]\n", r->what);
        fflush(stdout);
    }
    if (o.json && write_json(&o, prop.name, prop.major, prop.minor) != 0) failed++;
    cudaStreamDestroy(stream);
    return failed ? 1 : 0;
}
