/*
 * backend/cuda_blaslt.c - a matmul and its elementwise epilogue as one cuBLASLt call.
 *
 * The fusion pass hands the backend a library kernel that stores `act?(a @ b + bias?)`
 * (passes/epilogue.c defines which chains: an f32 product of two matrices, a bias vector
 * along the last axis, maximum(., +0.0) or gelu_tanh). cuBLASLt adds the bias and applies
 * the activation in the product's own kernel (CUBLASLT_EPILOGUE_BIAS / RELU / GELU and their
 * _BIAS forms), so the result is written
 * once and never read back: the elementwise pass over M x N that the chain would otherwise
 * take is gone.
 *
 * Layout: as in cuda_lib.c's gemm, row-major C = A B is column-major C^T = B^T A^T over the
 * same bytes, so cuBLASLt's "A" is B's buffer and its "B" is A's; an operand whose buffer
 * holds its transpose (x.T handed to a matmul) takes the transpose flag. cuBLASLt's D is then
 * N x M column-major, and its bias epilogue adds bias[i] to row i of D, that is to column i of
 * the row-major C: NumPy's broadcast of a [N] vector over C's rows.
 *
 * Numerics: compute type CUBLAS_COMPUTE_32F (no TF32, like the cuBLAS path), scale type f32;
 * the bias is added to the f32 product and rounded once, as the unfused chain does.
 *
 * Like the other libraries, libcublasLt is loaded with dlopen on first use. Descriptors,
 * layouts and the algorithm cuBLASLt's heuristic picks are made once per (M, N, K, flags,
 * epilogue, pointer alignment) and cached in the context's library state. The algorithm works
 * in the stream's cuBLAS workspace (backend/cuda_lib.c; counted in the memory statistics)
 * where its workspace fits there, else in a block of fusec's stream-ordered pool for the
 * call. A call being captured into a CUDA graph makes nothing: no state, no plan, no block
 * (FC_ERR_UNSUPPORTED: the caller runs it directly first, which makes them).
 */
#include "graph.h"

#include "cuda_lib.h"

#include <cublasLt.h>
#include <stdio.h>
#include <string.h>

typedef struct lt_api {
    __typeof__(cublasLtCreate) *Create;
    __typeof__(cublasLtDestroy) *Destroy;
    __typeof__(cublasLtMatmulDescCreate) *MatmulDescCreate;
    __typeof__(cublasLtMatmulDescDestroy) *MatmulDescDestroy;
    __typeof__(cublasLtMatmulDescSetAttribute) *MatmulDescSetAttribute;
    __typeof__(cublasLtMatrixLayoutCreate) *MatrixLayoutCreate;
    __typeof__(cublasLtMatrixLayoutDestroy) *MatrixLayoutDestroy;
    __typeof__(cublasLtMatmulPreferenceCreate) *MatmulPreferenceCreate;
    __typeof__(cublasLtMatmulPreferenceDestroy) *MatmulPreferenceDestroy;
    __typeof__(cublasLtMatmulPreferenceSetAttribute) *MatmulPreferenceSetAttribute;
    __typeof__(cublasLtMatmulAlgoGetHeuristic) *MatmulAlgoGetHeuristic;
    __typeof__(cublasLtMatmul) *Matmul;
    __typeof__(cublasLtGetStatusString) *GetStatusString; /* optional */
} lt_api;

static lt_api lt;
static fcr_library lt_lib;

static bool load_lt(void) {
    static const char *const names[] = {"libcublasLt.so.13", "libcublasLt.so.12"};
    const fcr_sym syms[] = {
        FCR_SYM(lt, Create, "cublasLtCreate"),
        FCR_SYM(lt, Destroy, "cublasLtDestroy"),
        FCR_SYM(lt, MatmulDescCreate, "cublasLtMatmulDescCreate"),
        FCR_SYM(lt, MatmulDescDestroy, "cublasLtMatmulDescDestroy"),
        FCR_SYM(lt, MatmulDescSetAttribute, "cublasLtMatmulDescSetAttribute"),
        FCR_SYM(lt, MatrixLayoutCreate, "cublasLtMatrixLayoutCreate"),
        FCR_SYM(lt, MatrixLayoutDestroy, "cublasLtMatrixLayoutDestroy"),
        FCR_SYM(lt, MatmulPreferenceCreate, "cublasLtMatmulPreferenceCreate"),
        FCR_SYM(lt, MatmulPreferenceDestroy, "cublasLtMatmulPreferenceDestroy"),
        FCR_SYM(lt, MatmulPreferenceSetAttribute, "cublasLtMatmulPreferenceSetAttribute"),
        FCR_SYM(lt, MatmulAlgoGetHeuristic, "cublasLtMatmulAlgoGetHeuristic"),
        FCR_SYM(lt, Matmul, "cublasLtMatmul"),
        FCR_SYM(lt, GetStatusString, "?cublasLtGetStatusString"),
    };
    return fcr_load_library(&lt_lib, "cuBLASLt", names, 2, syms,
                            (int)(sizeof syms / sizeof *syms));
}

static fc_status lt_check(fc_ctx *ctx, cublasStatus_t r, const char *call, int line) {
    if (r == CUBLAS_STATUS_SUCCESS) return FC_OK;
    const char *name = lt.GetStatusString ? lt.GetStatusString(r) : NULL;
    char code[32];
    if (!name) {
        snprintf(code, sizeof code, "status %d", (int)r);
        name = code;
    }
    return fcg_error(ctx, r == CUBLAS_STATUS_ALLOC_FAILED ? FC_ERR_NOMEM : FC_ERR_BACKEND,
                     "%s failed: %s at %s:%d", call, name, __FILE__, line);
}

#define LT(ctx, fn, args) lt_check((ctx), lt.fn args, "cublasLt" #fn, __LINE__)

/* What one cached call depends on: shapes, flags, epilogue and the pointers' alignment
 * (the heuristic picks algorithms for the alignment it is told). */
typedef struct lt_key {
    int64_t m, n, k;
    int ta, tb;
    int epilogue; /* cublasLtEpilogue_t */
    int align;    /* bytes, a power of two up to 256 */
} lt_key;

typedef struct lt_plan {
    lt_key key;
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t la, lb, lc;
    cublasLtMatmulAlgo_t algo;
    size_t workspace;
    uint64_t used;
} lt_plan;

#define LT_MAX_PLANS 8
#define LT_MAX_WORKSPACE ((uint64_t)32 << 20) /* what cuBLAS itself reserves on Hopper */

typedef struct lt_state {
    cublasLtHandle_t handle;
    lt_plan plans[LT_MAX_PLANS];
    int nplans;
    uint64_t tick;
} lt_state;

static void plan_destroy(lt_plan *p) {
    if (p->la) lt.MatrixLayoutDestroy(p->la);
    if (p->lb) lt.MatrixLayoutDestroy(p->lb);
    if (p->lc) lt.MatrixLayoutDestroy(p->lc);
    if (p->desc) lt.MatmulDescDestroy(p->desc);
    memset(p, 0, sizeof *p);
}

void fcr_lt_release(fc_ctx *ctx, void *state) {
    lt_state *s = state;
    if (!s) return;
    for (int i = 0; i < s->nplans; i++) plan_destroy(&s->plans[i]);
    if (s->handle) lt.Destroy(s->handle);
    fcg_free(ctx, s, sizeof *s);
}

/* The largest power of two up to 256 that divides every address. */
static int alignment_of(const CUdeviceptr *p, int n) {
    int a = 256;
    for (int i = 0; i < n; i++)
        while (a > 1 && p[i] % (CUdeviceptr)a) a /= 2;
    return a;
}

/* Makes the descriptors for key and asks the heuristic for an algorithm. */
static fc_status plan_make(fc_ctx *ctx, lt_state *s, const lt_key *key, lt_plan *p) {
    memset(p, 0, sizeof *p);
    p->key = *key;
    cublasOperation_t oa = key->tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t ob = key->ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasLtEpilogue_t epi = (cublasLtEpilogue_t)key->epilogue;
    uint64_t m = (uint64_t)key->m, n = (uint64_t)key->n, k = (uint64_t)key->k;
    fc_status st = LT(ctx, MatmulDescCreate, (&p->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    if (st == FC_OK)
        st = LT(ctx, MatmulDescSetAttribute,
                (p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &oa, sizeof oa));
    if (st == FC_OK)
        st = LT(ctx, MatmulDescSetAttribute,
                (p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &ob, sizeof ob));
    if (st == FC_OK)
        st = LT(ctx, MatmulDescSetAttribute,
                (p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
    /* cuBLASLt's A: B's buffer, N x K as used (stored K x N when it holds B^T); its B: A's
     * buffer, K x M as used (stored M x K when it holds A^T); D: N x M. */
    if (st == FC_OK)
        st = LT(ctx, MatrixLayoutCreate, (&p->la, CUDA_R_32F, key->tb ? k : n, key->tb ? n : k,
                                          (int64_t)(key->tb ? k : n)));
    if (st == FC_OK)
        st = LT(ctx, MatrixLayoutCreate, (&p->lb, CUDA_R_32F, key->ta ? m : k, key->ta ? k : m,
                                          (int64_t)(key->ta ? m : k)));
    if (st == FC_OK) st = LT(ctx, MatrixLayoutCreate, (&p->lc, CUDA_R_32F, n, m, (int64_t)n));
    cublasLtMatmulPreference_t pref = NULL;
    if (st == FC_OK) st = LT(ctx, MatmulPreferenceCreate, (&pref));
    uint64_t ws = LT_MAX_WORKSPACE;
    uint32_t align = (uint32_t)key->align;
    if (st == FC_OK)
        st = LT(ctx, MatmulPreferenceSetAttribute,
                (pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
    for (int a = CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES;
         a <= CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES && st == FC_OK; a++)
        st = LT(ctx, MatmulPreferenceSetAttribute,
                (pref, (cublasLtMatmulPreferenceAttributes_t)a, &align, sizeof align));
    cublasLtMatmulHeuristicResult_t heur;
    int found = 0;
    memset(&heur, 0, sizeof heur);
    if (st == FC_OK)
        st = LT(ctx, MatmulAlgoGetHeuristic, (s->handle, p->desc, p->la, p->lb, p->lc, p->lc,
                                              pref, 1, &heur, &found));
    if (pref) lt.MatmulPreferenceDestroy(pref);
    if (st == FC_OK && found < 1) {
        ctx->errmsg[0] = '\0';
        st = FC_ERR_UNSUPPORTED; /* no algorithm for this case: the host computes it */
    }
    if (st != FC_OK) {
        plan_destroy(p);
        return st;
    }
    p->algo = heur.algo;
    p->workspace = heur.workspaceSize;
    return FC_OK;
}

/* The cached plan for key, made on a miss (the least recently used one makes room), except
 * while capturing (FC_ERR_UNSUPPORTED). */
static fc_status get_plan(fc_ctx *ctx, lt_state *s, const lt_key *key, bool capture,
                          lt_plan **out) {
    s->tick++;
    for (int i = 0; i < s->nplans; i++)
        if (memcmp(&s->plans[i].key, key, sizeof *key) == 0) {
            s->plans[i].used = s->tick;
            *out = &s->plans[i];
            return FC_OK;
        }
    if (capture) return FC_ERR_UNSUPPORTED;
    int slot = s->nplans;
    if (slot == LT_MAX_PLANS) {
        slot = 0;
        for (int i = 1; i < s->nplans; i++)
            if (s->plans[i].used < s->plans[slot].used) slot = i;
        plan_destroy(&s->plans[slot]);
    }
    lt_plan fresh;
    fc_status st = plan_make(ctx, s, key, &fresh);
    if (st != FC_OK) {
        if (slot < s->nplans) { /* the evicted slot is empty now: close the gap */
            s->plans[slot] = s->plans[s->nplans - 1];
            s->nplans--;
        }
        return st;
    }
    fresh.used = s->tick;
    s->plans[slot] = fresh;
    if (slot == s->nplans) s->nplans++;
    *out = &s->plans[slot];
    return FC_OK;
}

fc_status fcr_lt_matmul(fc_ctx *ctx, void **state, CUstream stream, const fcp_epilogue *e,
                        CUdeviceptr a, bool ta, CUdeviceptr b, bool tb, CUdeviceptr bias,
                        CUdeviceptr out, const fcr_lib_work *work) {
    if (!load_lt()) return fcg_error(ctx, FC_ERR_BACKEND, "%s", lt_lib.error);
    const fc_array *x = e->lib->in[0], *y = e->lib->in[1];
    lt_key key;
    memset(&key, 0, sizeof key); /* the key is compared as bytes: no stray padding */
    key.m = x->shape[0];
    key.k = x->shape[1];
    key.n = y->shape[1];
    key.ta = ta;
    key.tb = tb;
    static const int epilogues[2][3] = {
        {CUBLASLT_EPILOGUE_DEFAULT, CUBLASLT_EPILOGUE_RELU, CUBLASLT_EPILOGUE_GELU},
        {CUBLASLT_EPILOGUE_BIAS, CUBLASLT_EPILOGUE_RELU_BIAS, CUBLASLT_EPILOGUE_GELU_BIAS}};
    key.epilogue = epilogues[e->bias != NULL][e->act];
    CUdeviceptr ptrs[3] = {a, b, out};
    key.align = alignment_of(ptrs, 3);
    /* The bias is read as vectors; an address of fewer than 16 bytes' alignment (not one
     * fusec's allocator returns) is left to the host. */
    if (e->bias && bias % 16) return FC_ERR_UNSUPPORTED;
    if (!*state && work->capture) return FC_ERR_UNSUPPORTED;
    if (!*state) {
        lt_state *s = fcg_calloc(ctx, sizeof *s);
        if (!s) return fcg_error(ctx, FC_ERR_NOMEM, "matmul: out of memory");
        fc_status st = LT(ctx, Create, (&s->handle));
        if (st != FC_OK) {
            fcg_free(ctx, s, sizeof *s);
            return st;
        }
        *state = s;
    }
    lt_state *s = *state;
    lt_plan *p;
    fc_status st = get_plan(ctx, s, &key, work->capture, &p);
    if (st != FC_OK) return st;
    const void *bp = (const void *)(uintptr_t)bias;
    if (e->bias)
        st = LT(ctx, MatmulDescSetAttribute,
                (p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bp, sizeof bp));
    /* the stream's workspace where it is large enough, else a block for this call */
    bool own = p->workspace > work->bytes;
    CUdeviceptr ws = own ? 0 : work->p;
    if (st == FC_OK && own && work->capture) return FC_ERR_UNSUPPORTED;
    if (st == FC_OK && own) st = fcr_lib_alloc(ctx, p->workspace, stream, &ws);
    if (st != FC_OK) return st;
    const float one = 1.0f, zero = 0.0f;
    void *d = (void *)(uintptr_t)out;
    st = LT(ctx, Matmul, (s->handle, p->desc, &one, (const void *)(uintptr_t)b, p->la,
                          (const void *)(uintptr_t)a, p->lb, &zero, d, p->lc, d, p->lc, &p->algo,
                          (void *)(uintptr_t)ws, p->workspace, (cudaStream_t)stream));
    if (own) fcr_lib_free(ctx, ws, p->workspace, stream);
    return st;
}
