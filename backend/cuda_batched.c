/*
 * backend/cuda_batched.c - dense linear algebra of a stack of small matrices in a few
 * launches for the whole stack, where backend/cuda_lib.c's loop makes several library calls
 * per matrix (issue 12: "batched where NumPy broadcasts").
 *
 *   solve, inv, det, slogdet   cuBLAS's getrfBatched, then getrsBatched (solve, inv)
 *   cholesky                   cuSOLVER's potrfBatched
 *   eigh, eigvalsh             cuSOLVER's syevjBatched / heevjBatched (Jacobi)
 *
 * around fusec's own helper kernels (codegen/batched.c): the arrays of per-matrix pointers
 * these routines take are written on the device by one launch each, and each change of
 * layout (a transpose of every matrix, the LU diagonals, the pivots, the eigenvalues' row) is
 * one strided move over the whole stack. A call is then a fixed handful of launches whatever
 * the batch, against the loop's five or more launches (tens of microseconds) a matrix, which
 * add up to seconds for 100000 matrices of 4 x 4.
 *
 * When (codegen.h's fcx_batched_takes, shared with `fusec warm`; the caller's loop serves
 * every other stack):
 *   - a stack of at least 2 matrices (a single matrix gains nothing: the loop is one call);
 *   - LU and Cholesky: n <= FCX_BATCHED_MAX_N (64). A matrix of order 64 is at most 0.18
 *     MFLOP of factorisation, under a microsecond even at a percent of the device's peak, so
 *     from the second matrix on the loop's fixed cost per matrix (about 20-40 us of launches)
 *     is what a stack pays; cuBLAS's and cuSOLVER's batched kernels are built for matrices
 *     that fit on chip, while a few large matrices are served better by the loop's
 *     factorisation of each with the whole device (cuSOLVER's blocked getrf / potrf). The
 *     crossover above 64 depends on the batch and was not measured: FUSEC_LINALG_BATCHED=all
 *     takes the batched path at every size, to measure it;
 *   - eigh, eigvalsh: n <= FCX_BATCHED_SYEVJ_MAX_N (32), the largest order syevjBatched
 *     accepts.
 * FUSEC_LINALG_BATCHED=0 turns the batched paths off (the loop for every stack: to compare
 * the two), `all` takes them for every stack they can serve (one matrix, any n; syevj still
 * n <= 32), anything else (or unset) is the rule above. fcr_batched_counts_get counts the
 * calls taken, so a test can tell which path ran.
 *
 * The algebra is the loop's (cuda_lib.c's comment): cuBLAS and cuSOLVER are column-major,
 * so a row-major buffer read by them is the transpose of fusec's matrix.
 *   LU       every A transposed into column-major order by one move (getrf must factor A
 *            itself: LU with partial pivoting of A^T chooses other pivots and misses the
 *            exactly zero pivot LAPACK meets in a singular A, so NumPy's LinAlgError would
 *            become huge values, and slogdet's (0, -inf) a finite pair), then getrfBatched
 *            in place with its int pivots and one info per matrix.
 *            solve, one right-hand side: b copied into the output, getrsBatched (no
 *            transpose) solves in place (a vector is its own transpose);
 *            solve, k > 1: B transposed into column-major order, getrsBatched, X transposed
 *            back into the output (two moves);
 *            inv (solve against the identity, flag 1): the identity copied into the output and
 *            getrsBatched with CUBLAS_OP_T: the output read column-major is Y with
 *            A^T Y = I, Y = A^-T, whose row-major reading is A^-1: no transpose at all;
 *            slogdet: the diagonals gathered (one move) and the pivots widened to the loop's
 *            int64 (two moves: the values into the low words, zeros into the high ones), then
 *            the loop's own slogdet_finish forms sign and log|det| on the host (NaN, zero
 *            pivot and sign rules unchanged).
 *            The infos go through the loop's check_infos: the same LinAlgError, naming the
 *            first singular matrix; det and slogdet of a singular matrix are no error.
 *   Cholesky A's lower triangle into the output with zeros above (the loop's triangle copy),
 *            potrfBatched in place on the column-major upper triangle (NumPy's lower one),
 *            then the triangle kernel once more with no source: zeros over the other triangle
 *            again, because potrfBatched may use it as workspace (cuSOLVER's documentation
 *            says so of the batched routine; potrf leaves it alone). The infos: the loop's
 *            "not positive definite" error.
 *   eigh     a copy of the stack (syevj overwrites it), syevjBatched with the loop's UPLO
 *            mapping, the dtype's machine epsilon as tolerance (cuSOLVER's default, stated
 *            here), at most 100 sweeps, eigenvalues sorted ascending. Its column-major
 *            eigenvectors are conj(V) (it factors conj(A)), moved with their imaginary sign
 *            flipped and transposed into rows 1..n of the output in one launch; the
 *            eigenvalues (real) into row 0 by one move (complex dtypes: their real parts,
 *            then zeros into the imaginary words); eigvalsh's go straight into the output.
 *            A positive info is a matrix Jacobi did not converge on within the sweeps; one
 *            launch marks so every matrix whose eigenvalues are not all finite too (a NaN or
 *            infinite entry, which Jacobi need not report). The whole stack then goes to the
 *            loop's syevd (FC_ERR_UNSUPPORTED to the caller), which gives for such a matrix
 *            what it gives without the batched path.
 * Jacobi is not LAPACK's algorithm, but it stops only when the off-diagonal part is below
 * eps * ||A||_F, so the eigenvalues are as accurate as syevd's (Jacobi's relative accuracy is
 * if anything better) and the eigenvectors orthonormal to working precision; eigenvectors of
 * repeated eigenvalues are, as with any solver, a basis of the eigenspace.
 *
 * Not batched: qr and svd (cuSOLVER's gesvdjBatched is Jacobi with a tolerance and sweeps of
 * its own, n <= 32, no status for a NaN; geqrfBatched is cuBLAS's without Q) stay in the loop.
 *
 * The routines' entry points are resolved from the libraries cuda_lib.c loaded
 * (fcr_lib_symbol), each into a pointer of the header's own type; a library without them
 * leaves the batched paths off and the loop serves every stack. Workspaces (the column-major
 * copies, pivots, infos, pointer arrays) are one block from the context's pool for the call.
 */
#include "graph.h"

#include "codegen.h"
#include "cuda_batched.h"
#include "cuda_lib.h"

#include <cublas_v2.h>
#include <cusolverDn.h>
#include <float.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

/* syevj's sweeps before it gives up on a matrix (cuSOLVER's default; Jacobi converges
 * quadratically, so a matrix of order 32 needs about ten). */
#define FCR_BATCHED_SYEVJ_SWEEPS 100

/* ---- the entry points ------------------------------------------------------------------- */

typedef struct batched_api {
    __typeof__(cublasSgetrfBatched) *Sgetrf;
    __typeof__(cublasDgetrfBatched) *Dgetrf;
    __typeof__(cublasCgetrfBatched) *Cgetrf;
    __typeof__(cublasZgetrfBatched) *Zgetrf;
    __typeof__(cublasSgetrsBatched) *Sgetrs;
    __typeof__(cublasDgetrsBatched) *Dgetrs;
    __typeof__(cublasCgetrsBatched) *Cgetrs;
    __typeof__(cublasZgetrsBatched) *Zgetrs;
    __typeof__(cusolverDnSpotrfBatched) *Spotrf;
    __typeof__(cusolverDnDpotrfBatched) *Dpotrf;
    __typeof__(cusolverDnCpotrfBatched) *Cpotrf;
    __typeof__(cusolverDnZpotrfBatched) *Zpotrf;
    __typeof__(cusolverDnSsyevjBatched_bufferSize) *Ssyevj_size;
    __typeof__(cusolverDnDsyevjBatched_bufferSize) *Dsyevj_size;
    __typeof__(cusolverDnCheevjBatched_bufferSize) *Cheevj_size;
    __typeof__(cusolverDnZheevjBatched_bufferSize) *Zheevj_size;
    __typeof__(cusolverDnSsyevjBatched) *Ssyevj;
    __typeof__(cusolverDnDsyevjBatched) *Dsyevj;
    __typeof__(cusolverDnCheevjBatched) *Cheevj;
    __typeof__(cusolverDnZheevjBatched) *Zheevj;
    __typeof__(cusolverDnCreateSyevjInfo) *CreateSyevjInfo;
    __typeof__(cusolverDnDestroySyevjInfo) *DestroySyevjInfo;
    __typeof__(cusolverDnXsyevjSetTolerance) *SetTolerance;
    __typeof__(cusolverDnXsyevjSetMaxSweeps) *SetMaxSweeps;
    __typeof__(cusolverDnXsyevjSetSortEig) *SetSortEig;
} batched_api;

static batched_api api;
static int api_state; /* 0 untried, 1 resolved, -1 a library or entry point is missing */

/* Resolves api from the libraries cuda_lib.c loads (after its handles exist, so they are
 * loaded). Not thread-safe on first use, like the libraries' loaders. */
static bool load_api(void) {
    if (api_state) return api_state > 0;
    static const struct {
        size_t offset;
        bool blas;
        const char *name;
    } syms[] = {
#define B(field, name) {offsetof(batched_api, field), true, name}
#define S(field, name) {offsetof(batched_api, field), false, name}
        B(Sgetrf, "cublasSgetrfBatched"), B(Dgetrf, "cublasDgetrfBatched"),
        B(Cgetrf, "cublasCgetrfBatched"), B(Zgetrf, "cublasZgetrfBatched"),
        B(Sgetrs, "cublasSgetrsBatched"), B(Dgetrs, "cublasDgetrsBatched"),
        B(Cgetrs, "cublasCgetrsBatched"), B(Zgetrs, "cublasZgetrsBatched"),
        S(Spotrf, "cusolverDnSpotrfBatched"), S(Dpotrf, "cusolverDnDpotrfBatched"),
        S(Cpotrf, "cusolverDnCpotrfBatched"), S(Zpotrf, "cusolverDnZpotrfBatched"),
        S(Ssyevj_size, "cusolverDnSsyevjBatched_bufferSize"),
        S(Dsyevj_size, "cusolverDnDsyevjBatched_bufferSize"),
        S(Cheevj_size, "cusolverDnCheevjBatched_bufferSize"),
        S(Zheevj_size, "cusolverDnZheevjBatched_bufferSize"),
        S(Ssyevj, "cusolverDnSsyevjBatched"), S(Dsyevj, "cusolverDnDsyevjBatched"),
        S(Cheevj, "cusolverDnCheevjBatched"), S(Zheevj, "cusolverDnZheevjBatched"),
        S(CreateSyevjInfo, "cusolverDnCreateSyevjInfo"),
        S(DestroySyevjInfo, "cusolverDnDestroySyevjInfo"),
        S(SetTolerance, "cusolverDnXsyevjSetTolerance"),
        S(SetMaxSweeps, "cusolverDnXsyevjSetMaxSweeps"),
        S(SetSortEig, "cusolverDnXsyevjSetSortEig"),
#undef B
#undef S
    };
    batched_api got;
    memset(&got, 0, sizeof got);
    for (size_t i = 0; i < sizeof syms / sizeof *syms; i++) {
        void *p = fcr_lib_symbol(syms[i].blas, syms[i].name);
        if (!p) {
            api_state = -1;
            return false;
        }
        memcpy((char *)&got + syms[i].offset, &p, sizeof p);
    }
    api = got;
    api_state = 1;
    return true;
}

/* BLAS(ctx, "cublasXgetrfBatched", getrf(...)): the call's status, named with file:line on
 * failure by cuda_lib.c's checks (the libraries' own status names). */
#define BLAS(ctx, name, call) fcr_lib_blas_status((ctx), (int)(call), name, __FILE__, __LINE__)
#define SOLVER(ctx, name, call)                                                                  \
    fcr_lib_solver_status((ctx), (int)(call), name, __FILE__, __LINE__)

/* ---- counts --------------------------------------------------------------------------- */

static _Atomic uint64_t count_lu, count_cholesky, count_eigh, count_eigh_loop;

void fcr_batched_counts_get(fcr_batched_counts *out) {
    out->lu = atomic_load(&count_lu);
    out->cholesky = atomic_load(&count_cholesky);
    out->eigh = atomic_load(&count_eigh);
    out->eigh_loop = atomic_load(&count_eigh_loop);
}

/* ---- the per-context state: the helper kernels, syevj's parameters ---------------------- */

typedef struct batched_state {
    CUmodule mod;
    CUfunction fn[FCX_BATCHED_COUNT];
    syevjInfo_t syevj; /* made on the first eigh */
} batched_state;

void fcr_batched_release(fc_ctx *ctx, void *state) {
    batched_state *bs = state;
    if (!bs) return;
    if (bs->syevj) api.DestroySyevjInfo(bs->syevj);
    fcr_lib_module_unload(ctx, bs->mod);
    fcg_free(ctx, bs, sizeof *bs);
}

/* The context's state with the helper module loaded (compiled, or found in the kernel
 * cache, on the context's first batched call). */
static fc_status get_state(fc_ctx *ctx, void **state, batched_state **out) {
    if (!*state && !(*state = fcg_calloc(ctx, sizeof(batched_state))))
        return fcg_error(ctx, FC_ERR_NOMEM, "batched linear algebra: out of memory");
    batched_state *bs = *state;
    *out = bs;
    if (bs->mod) return FC_OK;
    char *src = NULL;
    fc_status st = fcx_batched_source(ctx, &src);
    return fcr_lib_raw_module(ctx, st, src, fcx_batched_functions, FCX_BATCHED_COUNT, bs->fn,
                              &bs->mod);
}

/* ---- the helper kernels ----------------------------------------------------------------- */

static void *dptr(CUdeviceptr p) { return (void *)(uintptr_t)p; }

/* Blocks for `work` elements, grid-stride: a few waves of the device at most. */
static unsigned grid_for(fc_ctx *ctx, int64_t work) {
    const char *arch;
    int sms;
    fcr_lib_device(ctx, &arch, &sms);
    int64_t cap = (int64_t)(sms > 0 ? sms : 1) * 32;
    int64_t blocks = (work + FCX_BATCHED_THREADS - 1) / FCX_BATCHED_THREADS;
    return (unsigned)(blocks < 1 ? 1 : blocks < cap ? blocks : cap);
}

/* One move over the stack (codegen.h's fcx_batched_move): count matrices rows x cols of
 * es-byte words, element (i, j) of matrix b from src[b sm + i sr + j sc] (zeros where src
 * is 0) to dst[b dm + i dr + j dc], its top word XORed with mask. */
typedef struct move_desc {
    size_t es;
    CUdeviceptr src, dst;
    int64_t count, rows, cols, sr, sc, sm, dr, dc, dm;
    unsigned long long mask;
} move_desc;

static fc_status move(fc_ctx *ctx, const batched_state *bs, CUstream stream, const move_desc *m) {
    int f = fcx_batched_move(m->es);
    if (f < 0)
        return fcg_error(ctx, FC_ERR_BACKEND, "batched move of %zu-byte words (fusec bug)", m->es);
    int64_t total = m->count * m->rows * m->cols;
    if (total == 0) return FC_OK;
    CUdeviceptr src = m->src, dst = m->dst;
    long long v[9] = {m->count, m->rows, m->cols, m->sr, m->sc, m->sm, m->dr, m->dc, m->dm};
    unsigned long long mask = m->mask;
    void *args[] = {&src, &dst, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8],
                    &mask};
    return fcr_lib_launch(ctx, bs->fn[f], grid_for(ctx, total), FCX_BATCHED_THREADS, stream,
                          args);
}

/* dst (count row-major c x r matrices) = the transpose of each of src's (r x c). */
static fc_status transpose(fc_ctx *ctx, const batched_state *bs, CUstream stream, size_t es,
                           int64_t count, int64_t r, int64_t c, CUdeviceptr src, CUdeviceptr dst) {
    const move_desc m = {es, src, dst, count, c, r, 1, c, r * c, r, 1, r * c, 0};
    return move(ctx, bs, stream, &m);
}

/* The pointer array at dst: count pointers base + i * stride (bytes). */
static fc_status pointers(fc_ctx *ctx, const batched_state *bs, CUstream stream, CUdeviceptr dst,
                          CUdeviceptr base, int64_t stride, int64_t count) {
    CUdeviceptr d = dst;
    unsigned long long b = base;
    long long s = stride, c = count;
    void *args[] = {&d, &b, &s, &c};
    return fcr_lib_launch(ctx, bs->fn[FCX_BATCHED_PTRS], grid_for(ctx, count),
                          FCX_BATCHED_THREADS, stream, args);
}

/* Marks with `mark` the infos (still 0) of the matrices whose n eigenvalues (real, of
 * res bytes each) at w are not all finite. */
static fc_status nonfinite(fc_ctx *ctx, const batched_state *bs, CUstream stream, size_t res,
                           CUdeviceptr info, CUdeviceptr w, int64_t n, int64_t count, int mark) {
    CUdeviceptr i = info, v = w;
    long long nn = n, c = count;
    int m = mark;
    void *args[] = {&i, &v, &nn, &c, &m};
    return fcr_lib_launch(ctx, bs->fn[FCX_BATCHED_NONFINITE4 + (res == 8)], grid_for(ctx, count),
                          FCX_BATCHED_THREADS, stream, args);
}

/* ---- workspaces: one block from the pool for the call, carved ---------------------------- */

typedef struct carve {
    size_t total;
} carve;

/* The offset of the next `bytes` (256-byte aligned, as the pool's blocks are). */
static size_t take(carve *c, size_t bytes) {
    size_t at = c->total;
    c->total += (bytes + 255) & ~(size_t)255;
    return at;
}

/* ---- the routines, per dtype ------------------------------------------------------------ */

static cublasStatus_t getrf(fc_dtype t, cublasHandle_t h, int n, CUdeviceptr a, int lda,
                            CUdeviceptr piv, CUdeviceptr info, int batch) {
    int *p = dptr(piv), *i = dptr(info);
    switch (t) {
    case FC_F32: return api.Sgetrf(h, n, dptr(a), lda, p, i, batch);
    case FC_F64: return api.Dgetrf(h, n, dptr(a), lda, p, i, batch);
    case FC_C64: return api.Cgetrf(h, n, dptr(a), lda, p, i, batch);
    default: return api.Zgetrf(h, n, dptr(a), lda, p, i, batch);
    }
}

static cublasStatus_t getrs(fc_dtype t, cublasHandle_t h, cublasOperation_t op, int n, int k,
                            CUdeviceptr a, int lda, CUdeviceptr piv, CUdeviceptr b, int ldb,
                            int *info, int batch) {
    const int *p = dptr(piv);
    switch (t) {
    case FC_F32: return api.Sgetrs(h, op, n, k, dptr(a), lda, p, dptr(b), ldb, info, batch);
    case FC_F64: return api.Dgetrs(h, op, n, k, dptr(a), lda, p, dptr(b), ldb, info, batch);
    case FC_C64: return api.Cgetrs(h, op, n, k, dptr(a), lda, p, dptr(b), ldb, info, batch);
    default: return api.Zgetrs(h, op, n, k, dptr(a), lda, p, dptr(b), ldb, info, batch);
    }
}

static cusolverStatus_t potrf(fc_dtype t, cusolverDnHandle_t h, int n, CUdeviceptr a,
                              CUdeviceptr info, int batch) {
    const cublasFillMode_t up = CUBLAS_FILL_MODE_UPPER;
    int *i = dptr(info);
    switch (t) {
    case FC_F32: return api.Spotrf(h, up, n, dptr(a), n, i, batch);
    case FC_F64: return api.Dpotrf(h, up, n, dptr(a), n, i, batch);
    case FC_C64: return api.Cpotrf(h, up, n, dptr(a), n, i, batch);
    default: return api.Zpotrf(h, up, n, dptr(a), n, i, batch);
    }
}

/* syevjBatched's workspace, in elements of t. */
static cusolverStatus_t syevj_size(fc_dtype t, cusolverDnHandle_t h, cusolverEigMode_t jobz,
                                   cublasFillMode_t uplo, int n, CUdeviceptr a, CUdeviceptr w,
                                   int *lwork, syevjInfo_t p, int batch) {
    switch (t) {
    case FC_F32: return api.Ssyevj_size(h, jobz, uplo, n, dptr(a), n, dptr(w), lwork, p, batch);
    case FC_F64: return api.Dsyevj_size(h, jobz, uplo, n, dptr(a), n, dptr(w), lwork, p, batch);
    case FC_C64: return api.Cheevj_size(h, jobz, uplo, n, dptr(a), n, dptr(w), lwork, p, batch);
    default: return api.Zheevj_size(h, jobz, uplo, n, dptr(a), n, dptr(w), lwork, p, batch);
    }
}

static cusolverStatus_t syevj(fc_dtype t, cusolverDnHandle_t h, cusolverEigMode_t jobz,
                              cublasFillMode_t uplo, int n, CUdeviceptr a, CUdeviceptr w,
                              CUdeviceptr work, int lwork, CUdeviceptr info, syevjInfo_t p,
                              int batch) {
    void *A = dptr(a), *W = dptr(w), *ws = dptr(work);
    int *i = dptr(info);
    switch (t) {
    case FC_F32: return api.Ssyevj(h, jobz, uplo, n, A, n, W, ws, lwork, i, p, batch);
    case FC_F64: return api.Dsyevj(h, jobz, uplo, n, A, n, W, ws, lwork, i, p, batch);
    case FC_C64: return api.Cheevj(h, jobz, uplo, n, A, n, W, ws, lwork, i, p, batch);
    default: return api.Zheevj(h, jobz, uplo, n, A, n, W, ws, lwork, i, p, batch);
    }
}

/* ---- solve, inv, det, slogdet: getrfBatched, getrsBatched -------------------------------- */

static fc_status run_lu(fc_ctx *ctx, const batched_state *bs, CUstream stream,
                        cublasHandle_t blas, const fc_array *a, const CUdeviceptr *in,
                        CUdeviceptr out, int64_t batch, int64_t n) {
    fc_dtype t = (fc_dtype)a->dtype;
    bool slog = a->op == FCG_OP_LINALG_SLOGDET;
    int64_t k = slog ? 0 : a->shape[a->ndim - 1];
    bool inv = !slog && (a->p.flag & 1) && k == n; /* b is the identity */
    size_t es = fc_dtype_size(t), mat = (size_t)(n * n) * es;
    /* the workspace: A in column-major order, pivots, infos, the pointer arrays; B in
     * column-major order (solve, k > 1); the diagonals and the pivots as int64 (slogdet) */
    carve c = {0};
    size_t o_lu = take(&c, (size_t)batch * mat), o_piv = take(&c, (size_t)(batch * n) * 4);
    size_t o_info = take(&c, (size_t)batch * 4), o_pa = take(&c, (size_t)batch * 8);
    size_t o_pb = take(&c, slog ? 0 : (size_t)batch * 8);
    bool moved_b = !slog && !inv && k > 1;
    size_t o_rhs = take(&c, moved_b ? (size_t)(batch * n * k) * es : 0);
    size_t o_diag = take(&c, slog ? (size_t)(batch * n) * es : 0);
    size_t o_piv64 = take(&c, slog ? (size_t)(batch * n) * 8 : 0);
    CUdeviceptr w = 0;
    fc_status st = fcr_lib_alloc(ctx, c.total, stream, &w);
    if (st != FC_OK) return st;
    CUdeviceptr lu = w + o_lu, piv = w + o_piv, info = w + o_info, pa = w + o_pa, pb = w + o_pb;
    atomic_fetch_add(&count_lu, 1);
    /* A itself, column-major (see the file's comment), and its pointers */
    st = transpose(ctx, bs, stream, es, batch, n, n, in[0], lu);
    if (st == FC_OK) st = pointers(ctx, bs, stream, pa, lu, (int64_t)mat, batch);
    if (st == FC_OK) st = fcr_lib_zero(ctx, info, (size_t)batch, stream);
    if (st == FC_OK)
        st = BLAS(ctx, "cublasXgetrfBatched",
                  getrf(t, blas, (int)n, pa, (int)n, piv, info, (int)batch));
    if (st == FC_OK && slog) {
        CUdeviceptr diag = w + o_diag, piv64 = w + o_piv64;
        const move_desc d = {es, lu, diag, batch, n, 1, n + 1, 0, n * n, 1, 0, n, 0};
        const move_desc p = {4, piv, piv64, 1, batch * n, 1, 1, 0, 0, 2, 0, 0, 0};
        const move_desc z = {4, 0, piv64 + 4, 1, batch * n, 1, 0, 0, 0, 2, 0, 0, 0};
        st = move(ctx, bs, stream, &d);
        if (st == FC_OK) st = move(ctx, bs, stream, &p);
        if (st == FC_OK) st = move(ctx, bs, stream, &z);
        if (st == FC_OK)
            st = fcr_lib_slogdet_finish(ctx, t, n, batch, in[0], diag, piv64, info, out, stream);
        fcr_lib_free(ctx, w, c.total, stream);
        return st;
    }
    /* the right-hand sides where getrs solves them in place: the output itself (one vector, or
     * the identity for inv) or B in column-major order */
    CUdeviceptr x = moved_b ? w + o_rhs : out;
    size_t per_b = (size_t)(n * k) * es;
    if (st == FC_OK)
        st = moved_b ? transpose(ctx, bs, stream, es, batch, n, k, in[1], x)
                     : fcr_lib_copy(ctx, out, in[1], (size_t)batch * per_b, stream);
    if (st == FC_OK) st = pointers(ctx, bs, stream, pb, x, (int64_t)per_b, batch);
    int arg = 0; /* getrsBatched's own info: an argument it refused */
    if (st == FC_OK)
        st = BLAS(ctx, "cublasXgetrsBatched",
                  getrs(t, blas, inv ? CUBLAS_OP_T : CUBLAS_OP_N, (int)n, (int)k, pa, (int)n, piv,
                        pb, (int)n, &arg, (int)batch));
    if (st == FC_OK && arg != 0)
        st = fcg_error(ctx, FC_ERR_BACKEND, "%s: cublasXgetrsBatched refused argument %d "
                       "(fusec bug)", fcg_linalg_name(a), -arg);
    if (st == FC_OK && moved_b) st = transpose(ctx, bs, stream, es, batch, k, n, x, out);
    if (st == FC_OK) st = fcr_lib_check_infos(ctx, a, info, batch, batch, stream);
    fcr_lib_free(ctx, w, c.total, stream);
    return st;
}

/* ---- cholesky: potrfBatched ------------------------------------------------------------- */

static fc_status run_cholesky(fc_ctx *ctx, const batched_state *bs, void *lib, CUstream stream,
                              cusolverDnHandle_t solver, const fc_array *a, CUdeviceptr in,
                              CUdeviceptr out, int64_t batch, int64_t n) {
    fc_dtype t = (fc_dtype)a->dtype;
    size_t es = fc_dtype_size(t), mat = (size_t)(n * n) * es;
    carve c = {0};
    size_t o_info = take(&c, (size_t)batch * 4), o_pa = take(&c, (size_t)batch * 8);
    CUdeviceptr w = 0;
    fc_status st = fcr_lib_alloc(ctx, c.total, stream, &w);
    if (st != FC_OK) return st;
    CUdeviceptr info = w + o_info, pa = w + o_pa;
    atomic_fetch_add(&count_cholesky, 1);
    st = fcr_lib_tri_copy(ctx, lib, stream, es, false, batch, n, n, in, out);
    if (st == FC_OK) st = pointers(ctx, bs, stream, pa, out, (int64_t)mat, batch);
    if (st == FC_OK) st = fcr_lib_zero(ctx, info, (size_t)batch, stream);
    if (st == FC_OK)
        st = SOLVER(ctx, "cusolverDnXpotrfBatched", potrf(t, solver, (int)n, pa, info, (int)batch));
    /* potrfBatched's workspace triangle (row-major upper) back to zeros */
    if (st == FC_OK) st = fcr_lib_tri_copy(ctx, lib, stream, es, false, batch, n, n, 0, out);
    if (st == FC_OK) st = fcr_lib_check_infos(ctx, a, info, batch, batch, stream);
    fcr_lib_free(ctx, w, c.total, stream);
    return st;
}

/* ---- eigh, eigvalsh: syevjBatched ------------------------------------------------------- */

static fc_status run_eigh(fc_ctx *ctx, batched_state *bs, CUstream stream,
                          cusolverDnHandle_t solver, const fc_array *a, CUdeviceptr in,
                          CUdeviceptr out, int64_t batch, int64_t n) {
    const fc_array *x = a->in[0];
    fc_dtype t = (fc_dtype)x->dtype, rt = fcg_real_dtype(t);
    bool vectors = a->op == FCG_OP_LINALG_EIGH, cplx = fcg_is_complex(t);
    size_t es = fc_dtype_size(t), res = fc_dtype_size(rt), mat = (size_t)(n * n) * es;
    cusolverEigMode_t jobz = vectors ? CUSOLVER_EIG_MODE_VECTOR : CUSOLVER_EIG_MODE_NOVECTOR;
    /* the loop's mapping: NumPy's lower triangle is the column-major upper one */
    cublasFillMode_t uplo = a->p.flag & 1 ? CUBLAS_FILL_MODE_LOWER : CUBLAS_FILL_MODE_UPPER;
    fc_status st = FC_OK;
    if (!bs->syevj) {
        syevjInfo_t p = NULL;
        if ((st = SOLVER(ctx, "cusolverDnCreateSyevjInfo", api.CreateSyevjInfo(&p))) != FC_OK)
            return st;
        bs->syevj = p;
    }
    double tol = t == FC_F32 || t == FC_C64 ? (double)FLT_EPSILON : DBL_EPSILON;
    st = SOLVER(ctx, "cusolverDnXsyevjSetTolerance", api.SetTolerance(bs->syevj, tol));
    if (st == FC_OK)
        st = SOLVER(ctx, "cusolverDnXsyevjSetMaxSweeps",
                    api.SetMaxSweeps(bs->syevj, FCR_BATCHED_SYEVJ_SWEEPS));
    if (st == FC_OK)
        st = SOLVER(ctx, "cusolverDnXsyevjSetSortEig", api.SetSortEig(bs->syevj, 1));
    if (st != FC_OK) return st;
    int lwork = 0;
    CUdeviceptr probe = in; /* the size query reads no data */
    st = SOLVER(ctx, "cusolverDnXsyevjBatched_bufferSize",
                syevj_size(t, solver, jobz, uplo, (int)n, probe, probe, &lwork, bs->syevj,
                           (int)batch));
    if (st != FC_OK) return st;
    /* the copy syevj overwrites (with the eigenvectors), its workspace, the infos, and
     * eigh's eigenvalues (eigvalsh's go straight into the output) */
    carve c = {0};
    size_t o_a = take(&c, (size_t)batch * mat), o_work = take(&c, (size_t)lwork * es);
    size_t o_info = take(&c, (size_t)batch * 4);
    size_t o_w = take(&c, vectors ? (size_t)(batch * n) * res : 0);
    CUdeviceptr w = 0;
    if ((st = fcr_lib_alloc(ctx, c.total, stream, &w)) != FC_OK) return st;
    CUdeviceptr ws = w + o_a, info = w + o_info, vals = vectors ? w + o_w : out;
    atomic_fetch_add(&count_eigh, 1);
    st = fcr_lib_copy(ctx, ws, in, (size_t)batch * mat, stream);
    if (st == FC_OK) st = fcr_lib_zero(ctx, info, (size_t)batch, stream);
    if (st == FC_OK)
        st = SOLVER(ctx, "cusolverDnXsyevjBatched",
                    syevj(t, solver, jobz, uplo, (int)n, ws, vals, w + o_work, lwork, info,
                          bs->syevj, (int)batch));
    /* A matrix whose eigenvalues are not all finite (NaN or infinite entries: Jacobi's
     * rotations turn them into NaNs, where it may not report them) is marked as one that did
     * not converge, so that the loop decides what it gives, as without the batched path */
    if (st == FC_OK) st = nonfinite(ctx, bs, stream, res, info, vals, n, batch, (int)n + 1);
    /* the infos: a negative one is an argument refused, a positive one a matrix Jacobi did
     * not converge on (the whole stack then goes to the loop's syevd) */
    size_t ibytes = (size_t)batch * sizeof(int);
    int *h = st == FC_OK ? fcg_malloc(ctx, ibytes) : NULL;
    if (st == FC_OK && !h)
        st = fcg_error(ctx, FC_ERR_NOMEM, "%s: out of memory", fcg_linalg_name(a));
    if (st == FC_OK) st = fcr_lib_download(ctx, h, info, ibytes, stream);
    bool converged = true;
    for (int64_t b = 0; b < batch && st == FC_OK; b++) {
        if (h[b] < 0)
            st = fcg_error(ctx, FC_ERR_BACKEND, "%s: cuSOLVER's syevjBatched refused argument "
                           "%d (fusec bug)", fcg_linalg_name(a), -h[b]);
        converged = converged && h[b] == 0;
    }
    if (h) fcg_free(ctx, h, ibytes);
    if (st == FC_OK && !converged) {
        atomic_fetch_add(&count_eigh_loop, 1);
        fcr_lib_free(ctx, w, c.total, stream);
        return FC_ERR_UNSUPPORTED;
    }
    if (st == FC_OK && vectors) {
        /* row 0: the eigenvalues (a complex row: real parts, then zero imaginary words) */
        int64_t step = cplx ? 2 : 1, dm = (n + 1) * n * step;
        const move_desc wv = {res, vals, out, batch, 1, n, 0, 1, n, 0, step, dm, 0};
        const move_desc wz = {res, 0, out + res, batch, 1, n, 0, 1, n, 0, step, dm, 0};
        /* rows 1..n: V (i, j) = conj(Z(i, j)), Z column-major at ws */
        const move_desc vv = {es, ws, out + (CUdeviceptr)((size_t)n * es), batch, n, n, 1, n,
                              n * n, n, 1, (n + 1) * n, cplx ? 1ull << 63 : 0};
        st = move(ctx, bs, stream, &wv);
        if (st == FC_OK && cplx) st = move(ctx, bs, stream, &wz);
        if (st == FC_OK) st = move(ctx, bs, stream, &vv);
    }
    fcr_lib_free(ctx, w, c.total, stream);
    return st;
}

/* ---- the entry point -------------------------------------------------------------------- */

fc_status fcr_batched_linalg(fc_ctx *ctx, void **state, void *lib, CUstream stream,
                             struct cublasContext *blas, struct cusolverDnContext *solver,
                             const fc_array *a, const CUdeviceptr *in, CUdeviceptr out) {
    bool lu = a->op == FCG_OP_LINALG_SOLVE || a->op == FCG_OP_LINALG_SLOGDET;
    bool chol = a->op == FCG_OP_LINALG_CHOLESKY;
    if (!fcx_batched_takes(a, fcx_batched_mode_env()) || !load_api()) return FC_ERR_UNSUPPORTED;
    const fc_array *x = a->in[0];
    int nb = x->ndim - 2;
    int64_t n = x->shape[nb], batch = 1;
    for (int d = 0; d < nb; d++) batch *= x->shape[d];
    batched_state *bs = NULL;
    fc_status st = get_state(ctx, state, &bs);
    if (st != FC_OK) return st;
    if (lu) return run_lu(ctx, bs, stream, blas, a, in, out, batch, n);
    if (chol) return run_cholesky(ctx, bs, lib, stream, solver, a, in[0], out, batch, n);
    return run_eigh(ctx, bs, stream, solver, a, in[0], out, batch, n);
}
