/*
 * formats/fc_parse.c - the .fc program format: lexer, parser and graph builder.
 *
 * Two phases. fc_program_parse turns the text into statements (an AST the program keeps):
 * names are resolved and call arguments bound to parameters there, so every syntax and
 * naming error is found before any array exists. fc_program_build walks the statements and
 * makes the graph through the public API with the dimension symbols bound; an op's error gets
 * the statement's position prefixed. A program's memory lives in one arena, freed at destroy;
 * a build's temporaries live in another, freed when the build returns.
 *
 * Recursion is bounded twice: the parser counts its nesting (parentheses, unary operators)
 * and every expression node records its height, so that neither the parser nor the builder's
 * recursive walk can exhaust the stack on hostile input.
 */
#include "formats.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FCP_MAX_NEST 100      /* nested parentheses / brackets / unary operators */
#define FCP_MAX_HEIGHT 400    /* height of one statement's expression tree */
#define FCP_MAX_SUBSCRIPTS 32 /* entries of one subscript */
#define FCP_MAX_PARAMS 8 /* ReductionKernel's */
#define FCP_MAX_NAME 255
#define FCP_MAX_NUMBER 400

/* ---- arena ------------------------------------------------------------------------------ */

typedef struct fcf_block {
    struct fcf_block *next;
    size_t size, used;
    max_align_t data[];
} fcf_block;

typedef struct fcf_arena {
    fc_ctx *ctx;
    fcf_block *head;
} fcf_arena;

#define FCP_BLOCK_BYTES 16384

static void *arena_alloc(fcf_arena *a, size_t n) {
    n = (n + 15) & ~(size_t)15;
    if (n == 0) n = 16;
    fcf_block *b = a->head;
    if (!b || b->size - b->used < n) {
        size_t size = n > FCP_BLOCK_BYTES ? n : FCP_BLOCK_BYTES;
        if (size > SIZE_MAX - sizeof(fcf_block)) return NULL;
        fcf_block *nb = fcg_malloc(a->ctx, sizeof(fcf_block) + size);
        if (!nb) return NULL;
        nb->size = size;
        nb->used = 0;
        /* A large dedicated block goes behind the head, so the head keeps its free room. */
        if (b && n > FCP_BLOCK_BYTES / 4) {
            nb->next = b->next;
            b->next = nb;
        } else {
            nb->next = b;
            a->head = nb;
        }
        b = nb;
    }
    void *p = (char *)b->data + b->used;
    b->used += n;
    return p;
}

static void *arena_zalloc(fcf_arena *a, size_t n) {
    void *p = arena_alloc(a, n);
    if (p) memset(p, 0, n);
    return p;
}

static void arena_free(fcf_arena *a) {
    fcf_block *b = a->head;
    while (b) {
        fcf_block *next = b->next;
        fcg_free(a->ctx, b, sizeof(fcf_block) + b->size);
        b = next;
    }
    a->head = NULL;
}

static char *arena_strndup(fcf_arena *a, const char *s, size_t n) {
    char *d = arena_alloc(a, n + 1);
    if (!d) return NULL;
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

/* Grows an arena-backed vector to hold n + 1 elements (old storage stays in the arena). */
static bool vec_reserve(fcf_arena *a, void **data, int *cap, int n, size_t elem) {
    if (n < *cap) return true;
    if (*cap > INT_MAX / 2) return false;
    int ncap = *cap ? *cap * 2 : 8;
    void *nd = arena_alloc(a, (size_t)ncap * elem);
    if (!nd) return false;
    if (n) memcpy(nd, *data, (size_t)n * elem);
    *data = nd;
    *cap = ncap;
    return true;
}

/* ---- tokens ----------------------------------------------------------------------------- */

typedef enum fcf_tk {
    TK_EOF, TK_NEWLINE, TK_NAME, TK_INT, TK_FLOAT, TK_IMAG, TK_STRING, TK_ERROR,
    TK_LPAREN, TK_RPAREN, TK_LBRACK, TK_RBRACK, TK_COMMA, TK_COLON, TK_ASSIGN, TK_ELLIPSIS, TK_DOT,
    TK_PLUS, TK_MINUS, TK_STAR, TK_SLASH, TK_DSLASH, TK_PERCENT, TK_DSTAR, TK_AT,
    TK_LSHIFT, TK_RSHIFT, TK_AMP, TK_PIPE, TK_CARET, TK_TILDE,
    TK_LT, TK_LE, TK_GT, TK_GE, TK_EQ, TK_NE
} fcf_tk;

typedef struct fcf_token {
    fcf_tk kind;
    int line, col;
    const char *text;
    size_t len;
    union {
        fcg_upyint u; /* TK_INT: at most 2**127 - 1 (fusec's Python ints are 128-bit) */
        double f;   /* TK_FLOAT, TK_IMAG */
    } v;
} fcf_token;

/* Punctuation, longest first so that "**" wins over "*". */
static const struct {
    const char *text;
    fcf_tk kind;
} fcf_puncts[] = {
    {"...", TK_ELLIPSIS}, {"**", TK_DSTAR}, {"//", TK_DSLASH}, {"<<", TK_LSHIFT},
    {">>", TK_RSHIFT},    {"<=", TK_LE},    {">=", TK_GE},     {"==", TK_EQ},
    {"!=", TK_NE},        {"(", TK_LPAREN}, {")", TK_RPAREN},  {"[", TK_LBRACK},
    {"]", TK_RBRACK},     {",", TK_COMMA},  {":", TK_COLON},   {"=", TK_ASSIGN},
    {"+", TK_PLUS},       {"-", TK_MINUS},  {"*", TK_STAR},    {"/", TK_SLASH},
    {"%", TK_PERCENT},    {"@", TK_AT},     {"&", TK_AMP},     {"|", TK_PIPE},
    {"^", TK_CARET},      {"~", TK_TILDE},  {"<", TK_LT},      {">", TK_GT},
    {".", TK_DOT},
};

/* ---- the AST ---------------------------------------------------------------------------- */

typedef enum fcf_ekind {
    E_INT, E_FLOAT, E_IMAG, E_BOOL, E_NONE, E_STR, E_VAR, E_SYM, E_DTYPE, E_LIST, E_ELLIPSIS,
    E_UNARY, E_BINARY, E_CALL, E_SUBSCRIPT, E_SLICE, E_ATTR,
    E_KCALL /* a call of a variable bound to a user kernel */
} fcf_ekind;

typedef enum fcf_fkind {
    FK_CAST, FK_REDUCE, FK_ARG, FK_NORM, FK_RESHAPE, FK_TRANSPOSE, FK_BROADCAST,
    FK_EXPAND, FK_SQUEEZE, FK_FLIP, FK_PAD, FK_CONCAT, FK_STACK, FK_MATMUL, FK_FILL, FK_FULL,
    FK_LIKE, FK_FULL_LIKE, FK_ARANGE, FK_LINSPACE, FK_EYE, FK_RANDOM, FK_COMPLEX, FK_FFT,
    FK_RAVEL, FK_COMPOSITE, FK_SCAN, FK_TAKE, FK_SCATTER, FK_FFTN, FK_FFTFREQ, FK_FFTSHIFT,
    FK_SORT, FK_UNIQUE, FK_PERMUTE, FK_CONTRACT, FK_LINALG, FK_SPARSE, FK_CONV,
    FK_EW_KERNEL, FK_RED_KERNEL /* user kernel declarations: a binding's whole right side */
} fcf_fkind;

/* FK_RANDOM's op: which draw. Those with parameters take them first, then the shape. */
enum { RD_RANDOM, RD_STANDARD_NORMAL, RD_INTEGERS, RD_UNIFORM, RD_NORMAL, RD_EXPONENTIAL,
       RD_BERNOULLI };

/* FK_LINALG's op: which function of graph/linalg.c (eval_linalg). Written linalg.NAME only. */
enum { LA_SOLVE, LA_INV, LA_DET, LA_SLOGDET, LA_SLOGDET_PACKED, LA_CHOLESKY, LA_QR,
       LA_QR_PACKED, LA_EIGH, LA_EIGH_PACKED, LA_EIGVALSH, LA_SVD, LA_SVD_PACKED, LA_SVDVALS,
       LA_LSTSQ, LA_PINV, LA_MATRIX_RANK };

/* FK_CONV's op (eval_conv): np.convolve and np.correlate; scipy.signal's convolve2d and
 * correlate2d and fusec's stencil2d node (the printer's form), written signal.NAME only. */
enum { CV_CONVOLVE, CV_CORRELATE, CV_CONVOLVE2D, CV_CORRELATE2D, CV_STENCIL2D };

/* FK_SPARSE's op: the printer's product node, and scipy.sparse's constructors (eval_sparse_ctor),
 * written sparse.NAME only. */
enum { SP_CSR_MATMUL, SP_CSR_MATRIX, SP_COO_MATRIX };

/* FK_CONTRACT's op: which contraction of graph/contract.c (eval_contract). */
enum { CT_DOT, CT_VDOT, CT_INNER, CT_OUTER, CT_KRON, CT_TENSORDOT, CT_EINSUM, CT_MATRIX_POWER };

/* FK_COMPOSITE's op: which function of graph/composite.c (eval_composite). */
enum {
    CP_IDENTITY, CP_MESHGRID, CP_TILE, CP_REPEAT, CP_ROLL, CP_SPLIT, CP_TRIL, CP_TRIU, CP_DIAG,
    CP_DIAGONAL, CP_TRACE, CP_NANSUM, CP_NANPROD, CP_NANMEAN, CP_NANMAX, CP_NANMIN,
    CP_NANARGMAX, CP_NANARGMIN, CP_LOGSUMEXP, CP_ISCLOSE, CP_ALLCLOSE,
    CP_ROUND, CP_NAN_TO_NUM, CP_HEAVISIDE, CP_DEG2RAD, CP_RAD2DEG, CP_SINC, CP_POSITIVE,
    CP_FABS, CP_FLOAT_POWER
};

typedef struct fcf_func {
    const char *name;
    fcf_fkind kind;
    int op;   /* REDUCE / ARG: the fcg_op; FILL / LIKE: 0 zeros, 1 ones, 2 empty */
    int npos; /* at most this many positional arguments */
    int nreq; /* the first nreq parameters are required */
    const char *params[FCP_MAX_PARAMS];
} fcf_func;

/* Every reduction of ops.def as a function, its keywords from its params column: f(a, axis,
 * keepdims) with ddof where it reads one; argmax / argmin (FCG_P_FLAG) take one axis or None;
 * norm (FCG_P_ORD) is numpy.linalg.norm(x, ord, axis, keepdims). A new reduction row needs
 * nothing here. */
#define RF_ORD(params) (((params) & FCG_P_ORD) != 0)
#define RF_REDUCE(E, py, params)                                                                 \
    {py, RF_ORD(params) ? FK_NORM : ((params) & FCG_P_FLAG) ? FK_ARG : FK_REDUCE, FCG_OP_##E,     \
     RF_ORD(params) ? 4 : 2, 1,                                                                  \
     {RF_ORD(params) ? "x" : "a", RF_ORD(params) ? "ord" : "axis",                               \
      RF_ORD(params) ? "axis" : "keepdims",                                                      \
      RF_ORD(params) ? "keepdims" : ((params) & FCG_P_DDOF) ? "ddof" : NULL}},
#define RF_SOURCE(E, py, params)
#define RF_SPECIAL(E, py, params)
#define RF_EW(E, py, params)
#define RF_EWX(E, py, params)
#define RF_VIEW(E, py, params)
#define RF_LIB(E, py, params)
#define RF_USER(E, py, params)
/* every scan: f(a, axis=None), as np.cumsum */
#define RF_SCAN(E, py, params) {py, FK_SCAN, FCG_OP_##E, 2, 1, {"a", "axis"}},
#define RF_GATHER(E, py, params)
#define RF_SCATTER(E, py, params)
static const fcf_func fcf_reduce_funcs[] = {
#define FCG_OP(E, c, py, nin, kind, rule, infix, params, red) RF_##kind(E, py, params)
#include "ops.def"
#undef FCG_OP
};
#undef RF_ORD
#undef RF_REDUCE
#undef RF_SOURCE
#undef RF_SPECIAL
#undef RF_EW
#undef RF_EWX
#undef RF_VIEW
#undef RF_LIB
#undef RF_USER
#undef RF_SCAN
#undef RF_GATHER
#undef RF_SCATTER

/* Functions that are not plain elementwise ops or reductions (fcg_ops[] and
 * fcf_reduce_funcs above have those). */
static const fcf_func fcf_funcs[] = {
    {"cast", FK_CAST, 0, 2, 2, {"x", "dtype"}},
    {"astype", FK_CAST, 0, 2, 2, {"x", "dtype"}},
    {"amax", FK_REDUCE, FCG_OP_MAX, 2, 1, {"a", "axis", "keepdims"}},
    {"amin", FK_REDUCE, FCG_OP_MIN, 2, 1, {"a", "axis", "keepdims"}},
    {"reshape", FK_RESHAPE, 0, 2, 2, {"a", "shape"}},
    {"ravel", FK_RAVEL, 0, 1, 1, {"a"}},
    {"transpose", FK_TRANSPOSE, 0, 2, 1, {"a", "axes"}},
    {"permute_dims", FK_TRANSPOSE, 0, 2, 1, {"a", "axes"}},
    {"broadcast_to", FK_BROADCAST, 0, 2, 2, {"array", "shape"}},
    {"expand_dims", FK_EXPAND, 0, 2, 2, {"a", "axis"}},
    {"squeeze", FK_SQUEEZE, 0, 2, 1, {"a", "axis"}},
    {"flip", FK_FLIP, 0, 2, 1, {"m", "axis"}},
    {"pad", FK_PAD, 0, 3, 2, {"array", "pad_width", "mode", "constant_values"}},
    {"concatenate", FK_CONCAT, 0, 2, 1, {"arrays", "axis"}},
    {"concat", FK_CONCAT, 0, 2, 1, {"arrays", "axis"}},
    {"stack", FK_STACK, 0, 2, 1, {"arrays", "axis"}},
    {"matmul", FK_MATMUL, 0, 2, 2, {"x1", "x2"}},
    /* contractions (graph/contract.c); einsum takes up to 7 operands here (any number in C) */
    {"dot", FK_CONTRACT, CT_DOT, 2, 2, {"a", "b"}},
    {"vdot", FK_CONTRACT, CT_VDOT, 2, 2, {"a", "b"}},
    {"inner", FK_CONTRACT, CT_INNER, 2, 2, {"a", "b"}},
    {"outer", FK_CONTRACT, CT_OUTER, 2, 2, {"a", "b"}},
    {"kron", FK_CONTRACT, CT_KRON, 2, 2, {"a", "b"}},
    {"tensordot", FK_CONTRACT, CT_TENSORDOT, 3, 2, {"a", "b", "axes"}},
    {"einsum", FK_CONTRACT, CT_EINSUM, 8, 2,
     {"subscripts", "x1", "x2", "x3", "x4", "x5", "x6", "x7"}},
    {"matrix_power", FK_CONTRACT, CT_MATRIX_POWER, 2, 2, {"a", "n"}},
    /* np.linalg (graph/linalg.c), spelled linalg.NAME; slogdet gives the list [sign,
     * logabsdet]; slogdet_packed is fusec's: the one node holding both (the printer's form) */
    {"solve", FK_LINALG, LA_SOLVE, 2, 2, {"a", "b"}},
    {"inv", FK_LINALG, LA_INV, 1, 1, {"a"}},
    {"det", FK_LINALG, LA_DET, 1, 1, {"a"}},
    {"slogdet", FK_LINALG, LA_SLOGDET, 1, 1, {"a"}},
    {"slogdet_packed", FK_LINALG, LA_SLOGDET_PACKED, 1, 1, {"a"}},
    {"cholesky", FK_LINALG, LA_CHOLESKY, 1, 1, {"a", "upper"}},
    /* qr gives [q, r] (mode "r": r alone), eigh [w, v]; the _packed forms are the nodes
     * holding both (the printer's) */
    {"qr", FK_LINALG, LA_QR, 2, 1, {"a", "mode"}},
    {"qr_packed", FK_LINALG, LA_QR_PACKED, 2, 1, {"a", "mode"}},
    {"eigh", FK_LINALG, LA_EIGH, 2, 1, {"a", "UPLO"}},
    {"eigh_packed", FK_LINALG, LA_EIGH_PACKED, 2, 1, {"a", "UPLO"}},
    {"eigvalsh", FK_LINALG, LA_EIGVALSH, 2, 1, {"a", "UPLO"}},
    /* sparse.csr_matmul(indptr, indices, data, x): the CSR product node itself, as the
     * printer writes it (graph/sparse.c's fcg_csr_matmul: the arrays used as they are) */
    {"csr_matmul", FK_SPARSE, SP_CSR_MATMUL, 4, 4, {"indptr", "indices", "data", "x"}},
    /* scipy.sparse.csr_matrix(arg1, shape=None) / coo_matrix: arg1 a dense 2-d array, a sparse
     * matrix, (data, indices, indptr) (CSR only) or (data, (row, col)); a sparse value */
    {"csr_matrix", FK_SPARSE, SP_CSR_MATRIX, 2, 1, {"arg1", "shape"}},
    {"coo_matrix", FK_SPARSE, SP_COO_MATRIX, 2, 1, {"arg1", "shape"}},
    /* convolution (graph/convolve.c): np.convolve / np.correlate, and scipy.signal's (written
     * signal.NAME) convolve2d / correlate2d with fusec's method keyword; signal.stencil2d is
     * the library node they build for the direct method (the printer's form) */
    {"convolve", FK_CONV, CV_CONVOLVE, 3, 2, {"a", "v", "mode", "method"}},
    {"correlate", FK_CONV, CV_CORRELATE, 3, 2, {"a", "v", "mode", "method"}},
    {"convolve2d", FK_CONV, CV_CONVOLVE2D, 5, 2,
     {"in1", "in2", "mode", "boundary", "fillvalue", "method"}},
    {"correlate2d", FK_CONV, CV_CORRELATE2D, 5, 2,
     {"in1", "in2", "mode", "boundary", "fillvalue", "method"}},
    {"stencil2d", FK_CONV, CV_STENCIL2D, 6, 4,
     {"x", "w", "shape", "origin", "boundary", "fillvalue"}},
    /* svd gives [u, s, vh] (compute_uv=False: s alone), lstsq [x, residuals, rank, s];
     * svd_packed is the node holding U, S and Vh (the printer's); pinv's and matrix_rank's
     * rtol is keyword-only, as NumPy's */
    {"svd", FK_LINALG, LA_SVD, 3, 1, {"a", "full_matrices", "compute_uv"}},
    {"svd_packed", FK_LINALG, LA_SVD_PACKED, 2, 1, {"a", "full_matrices"}},
    {"svdvals", FK_LINALG, LA_SVDVALS, 1, 1, {"x"}},
    {"lstsq", FK_LINALG, LA_LSTSQ, 3, 2, {"a", "b", "rcond"}},
    {"pinv", FK_LINALG, LA_PINV, 3, 1, {"a", "rcond", "hermitian", "rtol"}},
    {"matrix_rank", FK_LINALG, LA_MATRIX_RANK, 3, 1, {"A", "tol", "hermitian", "rtol"}},
    {"take", FK_TAKE, 0, 3, 2, {"a", "indices", "axis", "mode"}},
    {"take_along_axis", FK_TAKE, 1, 3, 2, {"arr", "indices", "axis"}},
    {"searchsorted", FK_TAKE, 2, 3, 2, {"a", "v", "side"}},
    /* graph/sort.c: op 0 np.sort, 1 np.argsort (axis=-1; None: the flattened array);
     * graph/sort_ops.c: 2 np.partition, 3 np.argpartition (the stable sort), np.unique (a
     * list of results when any return_ flag is set) */
    {"sort", FK_SORT, 0, 3, 1, {"a", "axis", "kind"}},
    {"argsort", FK_SORT, 1, 3, 1, {"a", "axis", "kind"}},
    {"partition", FK_SORT, 2, 4, 2, {"a", "kth", "axis", "kind"}},
    {"argpartition", FK_SORT, 3, 4, 2, {"a", "kth", "axis", "kind"}},
    {"unique", FK_UNIQUE, 0, 4, 1, {"ar", "return_index", "return_inverse", "return_counts"}},
    /* scatters (graph/scatter.c): op 0-2 np.add.at / maximum.at / minimum.at as functions, 3
     * np.put, 4 np.bincount, 5 np.histogram's counts, 6 np.histogram_bin_edges; masks (graph/
     * mask.c): 7 np.flatnonzero, 8 np.argwhere, 9 np.put_along_axis */
    {"scatter_add", FK_SCATTER, 0, 5, 3, {"a", "indices", "values", "axis", "mode"}},
    {"scatter_max", FK_SCATTER, 1, 5, 3, {"a", "indices", "values", "axis", "mode"}},
    {"scatter_min", FK_SCATTER, 2, 5, 3, {"a", "indices", "values", "axis", "mode"}},
    {"put", FK_SCATTER, 3, 4, 3, {"a", "ind", "v", "mode"}},
    {"bincount", FK_SCATTER, 4, 3, 1, {"x", "weights", "minlength"}},
    {"histogram", FK_SCATTER, 5, 4, 1, {"a", "bins", "range", "weights"}},
    {"histogram_bin_edges", FK_SCATTER, 6, 3, 1, {"a", "bins", "range"}},
    {"flatnonzero", FK_SCATTER, 7, 1, 1, {"a"}},
    {"argwhere", FK_SCATTER, 8, 1, 1, {"a"}},
    {"put_along_axis", FK_SCATTER, 9, 4, 4, {"arr", "indices", "values", "axis"}},
    /* np.fft (graph/fft.c): op 0-5 fft, ifft, rfft, irfft, hfft, ihfft; FK_FFTN's 0-3 fftn,
     * ifftn, rfftn, irfftn, 4-7 the same over axes (-2, -1) by default (fft2, ...) */
    {"fft", FK_FFT, 0, 4, 1, {"a", "n", "axis", "norm"}},
    {"ifft", FK_FFT, 1, 4, 1, {"a", "n", "axis", "norm"}},
    {"rfft", FK_FFT, 2, 4, 1, {"a", "n", "axis", "norm"}},
    {"irfft", FK_FFT, 3, 4, 1, {"a", "n", "axis", "norm"}},
    {"hfft", FK_FFT, 4, 4, 1, {"a", "n", "axis", "norm"}},
    {"ihfft", FK_FFT, 5, 4, 1, {"a", "n", "axis", "norm"}},
    {"fftn", FK_FFTN, 0, 4, 1, {"a", "s", "axes", "norm"}},
    {"ifftn", FK_FFTN, 1, 4, 1, {"a", "s", "axes", "norm"}},
    {"rfftn", FK_FFTN, 2, 4, 1, {"a", "s", "axes", "norm"}},
    {"irfftn", FK_FFTN, 3, 4, 1, {"a", "s", "axes", "norm"}},
    {"fft2", FK_FFTN, 4, 4, 1, {"a", "s", "axes", "norm"}},
    {"ifft2", FK_FFTN, 5, 4, 1, {"a", "s", "axes", "norm"}},
    {"rfft2", FK_FFTN, 6, 4, 1, {"a", "s", "axes", "norm"}},
    {"irfft2", FK_FFTN, 7, 4, 1, {"a", "s", "axes", "norm"}},
    {"fftfreq", FK_FFTFREQ, 0, 2, 1, {"n", "d"}},
    {"rfftfreq", FK_FFTFREQ, 1, 2, 1, {"n", "d"}},
    {"fftshift", FK_FFTSHIFT, 0, 2, 1, {"x", "axes"}},
    {"ifftshift", FK_FFTSHIFT, 1, 2, 1, {"x", "axes"}},
    {"zeros", FK_FILL, 0, 2, 1, {"shape", "dtype"}},
    {"ones", FK_FILL, 1, 2, 1, {"shape", "dtype"}},
    {"empty", FK_FILL, 2, 2, 1, {"shape", "dtype"}},
    {"full", FK_FULL, 0, 3, 2, {"shape", "fill_value", "dtype"}},
    {"zeros_like", FK_LIKE, 0, 1, 1, {"a"}},
    {"ones_like", FK_LIKE, 1, 1, 1, {"a"}},
    {"empty_like", FK_LIKE, 2, 1, 1, {"a"}},
    {"full_like", FK_FULL_LIKE, 0, 2, 2, {"a", "fill_value"}},
    {"arange", FK_ARANGE, 0, 4, 1, {"start", "stop", "step", "dtype"}},
    {"linspace", FK_LINSPACE, 0, 5, 2, {"start", "stop", "num", "endpoint", "dtype"}},
    {"eye", FK_EYE, 0, 4, 1, {"N", "M", "k", "dtype"}},
    /* random draws (include/fusec.h, fc_rng): explicit seed and stream, NumPy Generator names */
    {"random", FK_RANDOM, RD_RANDOM, 4, 1, {"shape", "dtype", "seed", "stream"}},
    {"standard_normal", FK_RANDOM, RD_STANDARD_NORMAL, 4, 1, {"shape", "dtype", "seed", "stream"}},
    {"integers", FK_RANDOM, RD_INTEGERS, 6, 3, {"low", "high", "shape", "dtype", "seed", "stream"}},
    {"uniform", FK_RANDOM, RD_UNIFORM, 6, 3, {"low", "high", "shape", "dtype", "seed", "stream"}},
    {"normal", FK_RANDOM, RD_NORMAL, 6, 3, {"loc", "scale", "shape", "dtype", "seed", "stream"}},
    {"exponential", FK_RANDOM, RD_EXPONENTIAL, 5, 2, {"scale", "shape", "dtype", "seed", "stream"}},
    {"bernoulli", FK_RANDOM, RD_BERNOULLI, 4, 2, {"p", "shape", "seed", "stream"}},
    /* permutations (graph/sort_ops.c): op 0 Generator.permutation (of n, or an array's
     * slices), 1 Generator.shuffle as a function, 2 Generator.choice (of n, or of an array's
     * rows); each takes its stream whole */
    {"permutation", FK_PERMUTE, 0, 4, 1, {"x", "axis", "seed", "stream"}},
    {"shuffle", FK_PERMUTE, 1, 4, 1, {"x", "axis", "seed", "stream"}},
    {"choice", FK_PERMUTE, 2, 5, 1, {"a", "size", "replace", "seed", "stream"}},
    {"complex", FK_COMPLEX, 0, 2, 1, {"real", "imag"}},
    /* composites (graph/composite.c), with NumPy's (scipy's, for logsumexp) signatures */
    {"identity", FK_COMPOSITE, CP_IDENTITY, 2, 1, {"n", "dtype"}},
    {"meshgrid", FK_COMPOSITE, CP_MESHGRID, 4, 1, {"x1", "x2", "x3", "x4", "indexing"}},
    {"tile", FK_COMPOSITE, CP_TILE, 2, 2, {"A", "reps"}},
    {"repeat", FK_COMPOSITE, CP_REPEAT, 3, 2, {"a", "repeats", "axis"}},
    {"roll", FK_COMPOSITE, CP_ROLL, 3, 2, {"a", "shift", "axis"}},
    {"split", FK_COMPOSITE, CP_SPLIT, 3, 2, {"ary", "indices_or_sections", "axis"}},
    {"tril", FK_COMPOSITE, CP_TRIL, 2, 1, {"m", "k"}},
    {"triu", FK_COMPOSITE, CP_TRIU, 2, 1, {"m", "k"}},
    {"diag", FK_COMPOSITE, CP_DIAG, 2, 1, {"v", "k"}},
    {"diagonal", FK_COMPOSITE, CP_DIAGONAL, 4, 1, {"a", "offset", "axis1", "axis2"}},
    {"trace", FK_COMPOSITE, CP_TRACE, 4, 1, {"a", "offset", "axis1", "axis2"}},
    {"nansum", FK_COMPOSITE, CP_NANSUM, 2, 1, {"a", "axis", "keepdims"}},
    {"nanprod", FK_COMPOSITE, CP_NANPROD, 2, 1, {"a", "axis", "keepdims"}},
    {"nanmean", FK_COMPOSITE, CP_NANMEAN, 2, 1, {"a", "axis", "keepdims"}},
    {"nanmax", FK_COMPOSITE, CP_NANMAX, 2, 1, {"a", "axis", "keepdims"}},
    {"nanmin", FK_COMPOSITE, CP_NANMIN, 2, 1, {"a", "axis", "keepdims"}},
    {"nanargmax", FK_COMPOSITE, CP_NANARGMAX, 2, 1, {"a", "axis", "keepdims"}},
    {"nanargmin", FK_COMPOSITE, CP_NANARGMIN, 2, 1, {"a", "axis", "keepdims"}},
    {"logsumexp", FK_COMPOSITE, CP_LOGSUMEXP, 5, 1, {"a", "axis", "b", "keepdims", "return_sign"}},
    {"isclose", FK_COMPOSITE, CP_ISCLOSE, 5, 2, {"a", "b", "rtol", "atol", "equal_nan"}},
    {"allclose", FK_COMPOSITE, CP_ALLCLOSE, 5, 2, {"a", "b", "rtol", "atol", "equal_nan"}},
    {"round", FK_COMPOSITE, CP_ROUND, 2, 1, {"a", "decimals"}},
    {"around", FK_COMPOSITE, CP_ROUND, 2, 1, {"a", "decimals"}},
    {"nan_to_num", FK_COMPOSITE, CP_NAN_TO_NUM, 5, 1, {"x", "copy", "nan", "posinf", "neginf"}},
    {"heaviside", FK_COMPOSITE, CP_HEAVISIDE, 2, 2, {"x1", "x2"}},
    {"float_power", FK_COMPOSITE, CP_FLOAT_POWER, 2, 2, {"x1", "x2"}},
    {"deg2rad", FK_COMPOSITE, CP_DEG2RAD, 1, 1, {"x"}},
    {"radians", FK_COMPOSITE, CP_DEG2RAD, 1, 1, {"x"}},
    {"rad2deg", FK_COMPOSITE, CP_RAD2DEG, 1, 1, {"x"}},
    {"degrees", FK_COMPOSITE, CP_RAD2DEG, 1, 1, {"x"}},
    {"sinc", FK_COMPOSITE, CP_SINC, 1, 1, {"x"}},
    {"positive", FK_COMPOSITE, CP_POSITIVE, 1, 1, {"x"}},
    {"fabs", FK_COMPOSITE, CP_FABS, 1, 1, {"x"}},
    /* user kernels (graph/user.c), with CuPy's parameter names */
    {"ElementwiseKernel", FK_EW_KERNEL, 0, 4, 4, {"in_params", "out_params", "operation", "name"}},
    {"ReductionKernel", FK_RED_KERNEL, 0, 8, 7,
     {"in_params", "out_params", "map_expr", "reduce_expr", "post_map_expr", "identity", "name",
      "reduce_type"}},
};

/* NumPy's other spellings of elementwise ops, mapped to the op's pyname in ops.def. */
static const struct {
    const char *alias, *pyname;
} fcf_ew_aliases[] = {
    {"absolute", "abs"},           {"conjugate", "conj"},
    {"true_divide", "divide"},     {"bitwise_invert", "invert"},
    {"acos", "arccos"},            {"asin", "arcsin"},
    {"atan", "arctan"},            {"atan2", "arctan2"},
    {"acosh", "arccosh"},          {"asinh", "arcsinh"},
    {"atanh", "arctanh"},          {"bitwise_left_shift", "left_shift"},
    {"bitwise_right_shift", "right_shift"},
};

/* The string values of pad's mode (in fc_pad_mode's order) and of fft's norm (fc_fft_norm's). */
static const char *const fcf_pad_modes[] = {"constant", "edge", "reflect", "symmetric"};
static const char *const fcf_take_modes[] = {"raise", "wrap", "clip"}; /* fc_take_mode's order */
static const char *const fcf_scatter_modes[] = {"raise", "wrap", "clip", "drop"};
static const char *const fcf_fft_norms[] = {"backward", "ortho", "forward"};
/* np.sort's kinds: every one gives fusec's stable order; np.partition's one kind */
static const char *const fcf_sort_kinds[] = {"quicksort", "mergesort", "heapsort", "stable"};
static const char *const fcf_partition_kinds[] = {"introselect"};
/* convolve's modes, convolve2d's boundaries (SciPy's spellings, with their aliases, in
 * fc_conv_boundary's order by twos) and the methods */
static const char *const fcf_conv_modes[] = {"full", "same", "valid"};
static const char *const fcf_conv_boundaries[] = {"fill", "pad", "wrap", "circular", "symm",
                                                  "symmetric"};
static const char *const fcf_conv_methods[] = {"auto", "direct", "fft"};

/* Reserved words. Each spelling maps to what it means; parse_name dispatches on the meaning. */
typedef enum fcf_kw { KW_TRUE, KW_FALSE, KW_NONE, KW_INF, KW_NAN, KW_INPUT, KW_OUT } fcf_kw;

static const struct {
    const char *word;
    fcf_kw kw;
} fcf_keywords[] = {
    {"True", KW_TRUE}, {"true", KW_TRUE}, {"False", KW_FALSE}, {"false", KW_FALSE},
    {"None", KW_NONE}, {"inf", KW_INF},   {"nan", KW_NAN},     {"input", KW_INPUT},
    {"out", KW_OUT},
};

/* NumPy's attribute and method spellings, x.name and x.name(...). Calls are desugared at
 * parse time into the function `func` with x as its first argument, so a method builds the
 * very node its function form builds (and the printer writes the function form). */
typedef enum fcf_mkind {
    MK_METHOD,  /* x.name(args): func(x, args), with func's keyword arguments */
    MK_VARARGS, /* x.name(a, b, ...): several positional arguments make one list (reshape) */
    MK_ATTR,    /* x.name: func(x) */
    MK_SHAPE,   /* x.name: a value read off the array, no node: a list of ints, */
    MK_NDIM,    /*   an int, */
    MK_SIZE,    /*   an int, */
    MK_DTYPE,   /*   a dtype */
    MK_SPARSE,  /* x.name(): a sparse matrix's conversion (tocsr, ...), no arguments */
    MK_SPATTR   /* x.name: a sparse matrix's nnz (an int) or one of its arrays (data, ...) */
} fcf_mkind;

/* What a method does with a sparse matrix (a V_SPARSE receiver): nothing (an error), the
 * same as SciPy's (SPM_OK: T, transpose(), shape, ndim, dtype), or a sparse-only conversion. */
enum { SPM_NONE, SPM_OK, SPM_TOCSR, SPM_TOCOO, SPM_TODENSE, SPM_NNZ, SPM_DATA, SPM_INDICES,
       SPM_INDPTR, SPM_ROW, SPM_COL };

typedef struct fcf_method {
    const char *name;
    fcf_mkind kind;
    const char *func; /* a name func_lookup finds; NULL for the value attributes */
    /* Keyword names of the arguments after x, for a method whose function is elementwise
     * (elementwise functions take positional arguments only): NumPy's x.clip(min=, max=). */
    const char *params[FCP_MAX_PARAMS - 1];
    int sparse; /* SPM_* */
} fcf_method;

static const fcf_method fcf_methods[] = {
    {"T", MK_ATTR, "transpose", {NULL}, SPM_OK},
    {"real", MK_ATTR, "real", {NULL}, SPM_NONE},
    {"imag", MK_ATTR, "imag", {NULL}, SPM_NONE},
    {"shape", MK_SHAPE, NULL, {NULL}, SPM_OK},
    {"ndim", MK_NDIM, NULL, {NULL}, SPM_OK},
    {"size", MK_SIZE, NULL, {NULL}, SPM_NONE},
    {"dtype", MK_DTYPE, NULL, {NULL}, SPM_OK},
    {"sum", MK_METHOD, "sum", {NULL}, SPM_NONE},
    {"prod", MK_METHOD, "prod", {NULL}, SPM_NONE},
    {"mean", MK_METHOD, "mean", {NULL}, SPM_NONE},
    {"max", MK_METHOD, "max", {NULL}, SPM_NONE},
    {"min", MK_METHOD, "min", {NULL}, SPM_NONE},
    {"any", MK_METHOD, "any", {NULL}, SPM_NONE},
    {"all", MK_METHOD, "all", {NULL}, SPM_NONE},
    {"var", MK_METHOD, "var", {NULL}, SPM_NONE},
    {"std", MK_METHOD, "std", {NULL}, SPM_NONE},
    {"argmax", MK_METHOD, "argmax", {NULL}, SPM_NONE},
    {"cumsum", MK_METHOD, "cumsum", {NULL}, SPM_NONE},
    {"cumprod", MK_METHOD, "cumprod", {NULL}, SPM_NONE},
    {"argmin", MK_METHOD, "argmin", {NULL}, SPM_NONE},
    {"argsort", MK_METHOD, "argsort", {NULL}, SPM_NONE},
    {"astype", MK_METHOD, "astype", {NULL}, SPM_NONE},
    {"reshape", MK_VARARGS, "reshape", {NULL}, SPM_NONE},
    {"transpose", MK_VARARGS, "transpose", {NULL}, SPM_OK},
    {"squeeze", MK_METHOD, "squeeze", {NULL}, SPM_NONE},
    {"ravel", MK_METHOD, "ravel", {NULL}, SPM_NONE},
    {"flatten", MK_METHOD, "ravel", {NULL}, SPM_NONE},
    {"clip", MK_METHOD, "clip", {"min", "max"}, SPM_NONE},
    {"conj", MK_METHOD, "conj", {NULL}, SPM_NONE},
    {"conjugate", MK_METHOD, "conj", {NULL}, SPM_NONE},
    {"round", MK_METHOD, "round", {NULL}, SPM_NONE},
    {"repeat", MK_METHOD, "repeat", {NULL}, SPM_NONE},
    {"diagonal", MK_METHOD, "diagonal", {NULL}, SPM_NONE},
    {"trace", MK_METHOD, "trace", {NULL}, SPM_NONE},
    {"dot", MK_METHOD, "dot", {NULL}, SPM_NONE},
    /* scipy.sparse's, on a sparse matrix only */
    {"tocsr", MK_SPARSE, NULL, {NULL}, SPM_TOCSR},
    {"tocoo", MK_SPARSE, NULL, {NULL}, SPM_TOCOO},
    {"todense", MK_SPARSE, NULL, {NULL}, SPM_TODENSE},
    {"toarray", MK_SPARSE, NULL, {NULL}, SPM_TODENSE},
    {"nnz", MK_SPATTR, NULL, {NULL}, SPM_NNZ},
    {"data", MK_SPATTR, NULL, {NULL}, SPM_DATA},
    {"indices", MK_SPATTR, NULL, {NULL}, SPM_INDICES},
    {"indptr", MK_SPATTR, NULL, {NULL}, SPM_INDPTR},
    {"row", MK_SPATTR, NULL, {NULL}, SPM_ROW},
    {"col", MK_SPATTR, NULL, {NULL}, SPM_COL},
};

static bool method_is_attr(const fcf_method *m) {
    return m->kind != MK_METHOD && m->kind != MK_VARARGS && m->kind != MK_SPARSE;
}

/* A method of sparse matrices alone (no array has it). */
static bool method_sparse_only(const fcf_method *m) {
    return m->kind == MK_SPARSE || m->kind == MK_SPATTR;
}

typedef struct fcf_expr fcf_expr;
struct fcf_expr {
    fcf_ekind kind;
    int line, col;
    int height;
    union {
        fcg_upyint u; /* E_INT: the magnitude (a sign comes from unary minus) */
        double f;     /* E_FLOAT; E_IMAG: the imaginary part */
        bool b;       /* E_BOOL */
        int index;    /* E_VAR: variable; E_SYM: symbol */
        fc_dtype dt;  /* E_DTYPE */
        struct {
            const char *s;
        } str;
        struct {
            int n;
            fcf_expr **items;
        } list;
        struct {
            int op; /* fcg_op, or -1 for unary plus */
            fcf_expr *a, *b;
        } bin;
        struct {
            const fcf_func *fn; /* NULL: elementwise op `op` */
            int op;
            int n;
            fcf_expr **args;         /* one per parameter, NULL where not given */
            const fcf_method *method; /* x.name(...): args[0] is x, which must be an array */
        } call;
        struct {
            fcf_expr *base;
            const fcf_method *m; /* MK_SHAPE .. MK_DTYPE, MK_SPARSE, MK_SPATTR */
        } attr;
        struct {
            int var; /* the variable holding the kernel */
            int n;
            fcf_expr **args;          /* the positional arguments: the kernel's inputs */
            fcf_expr *axis, *keepdims; /* a reduction kernel's keywords; NULL where not given */
        } kcall;
        struct {
            fcf_expr *base;
            int n;
            fcf_expr **items;
        } sub;
        struct {
            fcf_expr *start, *stop, *step;
        } slice;
    };
};

typedef enum fcf_skind {
    S_INPUT,
    S_ASSIGN,
    S_UNPACK /* NAME, NAME, ... = EXPR */
} fcf_skind;

typedef struct fcf_dim {
    int sym; /* symbol index, or -1 */
    int64_t value;
} fcf_dim;

typedef struct fcf_stmt {
    fcf_skind kind;
    int line, col;
    int var;
    fcf_expr *expr; /* S_ASSIGN, S_UNPACK */
    int input;      /* S_INPUT: index into prog->inputs */
    int ntargets;   /* S_UNPACK: the variables bound, in order */
    int *targets;
} fcf_stmt;

/* What a variable is known to hold at parse time: calls of a kernel variable are kernel
 * calls, resolved (and their keywords checked) before anything is built. */
typedef enum fcf_vk { VK_VALUE, VK_EW_KERNEL, VK_RED_KERNEL } fcf_vk;

typedef struct fcf_var {
    const char *name;
    int line, col;
    fcf_vk kernel;
} fcf_var;

typedef struct fcf_input {
    int var;
    fc_dtype dtype;
    int ndim;
    fcf_dim dims[FC_MAX_DIMS];
} fcf_input;

typedef struct fcf_symbol {
    const char *name;
    int64_t value;
    bool bound;
} fcf_symbol;

typedef struct fcf_output {
    int var;
    int line, col;
} fcf_output;

typedef enum fcf_nkind { N_VAR, N_SYM } fcf_nkind;

typedef struct fcf_name {
    const char *name; /* NULL: empty slot */
    size_t len;
    fcf_nkind kind;
    int index;
} fcf_name;

struct fc_program {
    fc_ctx *ctx;
    fcf_arena arena;
    const char *name;
    fcf_stmt *stmts;
    int nstmts, cap_stmts;
    fcf_var *vars;
    int nvars, cap_vars;
    fcf_input *inputs;
    int ninputs, cap_inputs;
    fcf_symbol *syms;
    int nsyms, cap_syms;
    fcf_output *outs;
    int nouts, cap_outs;
    int out_line; /* 0: no out statement yet */
    fcf_name *names;
    size_t names_cap, names_n;
};

/* ---- names ------------------------------------------------------------------------------ */

static uint64_t name_hash(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
    return h;
}

static fcf_name *name_find(const fc_program *prog, const char *s, size_t n) {
    if (!prog->names_cap) return NULL;
    size_t mask = prog->names_cap - 1;
    for (size_t i = name_hash(s, n) & mask;; i = (i + 1) & mask) {
        fcf_name *e = &prog->names[i];
        if (!e->name) return NULL;
        if (e->len == n && memcmp(e->name, s, n) == 0) return e;
    }
}

/* Adds a name (the caller checked it is new). The name is copied into the arena. */
static bool name_add(fc_program *prog, const char *s, size_t n, fcf_nkind kind, int index,
                     const char **stored) {
    if ((prog->names_n + 1) * 2 > prog->names_cap) {
        size_t ncap = prog->names_cap ? prog->names_cap * 2 : 64;
        fcf_name *nt = arena_zalloc(&prog->arena, ncap * sizeof(fcf_name));
        if (!nt) return false;
        for (size_t i = 0; i < prog->names_cap; i++) {
            fcf_name *e = &prog->names[i];
            if (!e->name) continue;
            size_t j = name_hash(e->name, e->len) & (ncap - 1);
            while (nt[j].name) j = (j + 1) & (ncap - 1);
            nt[j] = *e;
        }
        prog->names = nt;
        prog->names_cap = ncap;
    }
    char *copy = arena_strndup(&prog->arena, s, n);
    if (!copy) return false;
    size_t mask = prog->names_cap - 1;
    size_t i = name_hash(s, n) & mask;
    while (prog->names[i].name) i = (i + 1) & mask;
    prog->names[i] = (fcf_name){copy, n, kind, index};
    prog->names_n++;
    *stored = copy;
    return true;
}

static bool word_is(const char *s, size_t n, const char *word) {
    return strlen(word) == n && memcmp(s, word, n) == 0;
}

static bool dtype_lookup(const char *s, size_t n, fc_dtype *out) {
    return fcg_dtype_parse(s, n, out) == FC_OK;
}

#define FCF_COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* The meaning of a reserved word, or -1. */
static int keyword_lookup(const char *s, size_t n) {
    for (size_t i = 0; i < FCF_COUNT(fcf_keywords); i++)
        if (word_is(s, n, fcf_keywords[i].word)) return (int)fcf_keywords[i].kw;
    return -1;
}

bool fcf_name_is_reserved(const char *name, size_t len) {
    fc_dtype dt;
    return keyword_lookup(name, len) >= 0 || dtype_lookup(name, len, &dt);
}

/* Whether an op of the table is callable by name: elementwise, with a public constructor
 * that takes arrays alone (cast takes a dtype, so it is the function cast(x, dtype)). */
static bool ew_callable(int op) {
    const fcg_op_info *info = &fcg_ops[op];
    if (info->kind != FCG_KIND_EW) return false;
    return (info->nin == 1 && fcg_unary_api[op]) || (info->nin == 2 && fcg_binary_api[op]) ||
           (info->nin == 3 && fcg_ternary_api[op]);
}

/* A user reduction kernel's row is not a function: programs call it through its
 * declaration. */
static bool reduce_func_callable(const fcf_func *f) {
    /* (a compaction is spelled x[mask]; np.compress's signature is not a scan's) */
    return fcg_ops[f->op].red.combine != FCG_COMBINE_USER && f->op != FCG_OP_COMPRESS;
}

static const fcf_func *func_lookup(const char *s, size_t n, int *ew_op) {
    for (size_t i = 0; i < FCF_COUNT(fcf_funcs); i++)
        if (word_is(s, n, fcf_funcs[i].name)) return &fcf_funcs[i];
    for (size_t i = 0; i < FCF_COUNT(fcf_reduce_funcs); i++)
        if (reduce_func_callable(&fcf_reduce_funcs[i]) && word_is(s, n, fcf_reduce_funcs[i].name))
            return &fcf_reduce_funcs[i];
    const char *target = NULL;
    for (size_t i = 0; i < FCF_COUNT(fcf_ew_aliases); i++)
        if (word_is(s, n, fcf_ew_aliases[i].alias)) target = fcf_ew_aliases[i].pyname;
    for (int op = 0; op < FCG_OP_COUNT; op++) {
        const fcg_op_info *info = &fcg_ops[op];
        if (!ew_callable(op)) continue;
        if (target ? strcmp(target, info->pyname) == 0
                   : (word_is(s, n, info->pyname) || word_is(s, n, info->cname))) {
            *ew_op = op;
            return NULL;
        }
    }
    *ew_op = -1;
    return NULL;
}

bool fcf_name_is_function(const char *name, size_t len) {
    int ew_op;
    return func_lookup(name, len, &ew_op) || ew_op >= 0;
}

static const fcf_method *method_lookup(const char *s, size_t n) {
    for (size_t i = 0; i < FCF_COUNT(fcf_methods); i++)
        if (word_is(s, n, fcf_methods[i].name)) return &fcf_methods[i];
    return NULL;
}

/* Every name the parser accepts, from the tables above that it dispatches from, so that a
 * test can hold docs/FC_FORMAT.md to them (tests/test_fc_docs.c). */
void fcf_names(fcf_name_fn visit, void *user) {
    for (size_t i = 0; i < FCF_COUNT(fcf_keywords); i++)
        visit(user, FCF_KEYWORD, fcf_keywords[i].word, NULL);
    for (int t = 0; t < FC_DTYPE_COUNT; t++)
        visit(user, FCF_DTYPE, fc_dtype_name((fc_dtype)t), NULL);
    for (size_t i = 0; i < fcg_dtype_alias_count; i++)
        visit(user, FCF_DTYPE, fcg_dtype_aliases[i].name, fc_dtype_name(fcg_dtype_aliases[i].dtype));
    for (int t = 0; t < 2; t++) {
        const fcf_func *table = t ? fcf_reduce_funcs : fcf_funcs;
        size_t n = t ? FCF_COUNT(fcf_reduce_funcs) : FCF_COUNT(fcf_funcs);
        for (size_t i = 0; i < n; i++) {
            const fcf_func *f = &table[i];
            if (t && !reduce_func_callable(f)) continue;
            visit(user, FCF_FUNCTION, f->name, NULL);
            for (int k = 0; k < FCP_MAX_PARAMS && f->params[k]; k++)
                visit(user, FCF_PARAM, f->params[k], f->name);
        }
    }
    for (int op = 0; op < FCG_OP_COUNT; op++) {
        if (!ew_callable(op)) continue;
        visit(user, FCF_FUNCTION, fcg_ops[op].pyname, NULL);
        if (strcmp(fcg_ops[op].cname, fcg_ops[op].pyname) != 0)
            visit(user, FCF_FUNCTION, fcg_ops[op].cname, fcg_ops[op].pyname);
    }
    for (size_t i = 0; i < FCF_COUNT(fcf_ew_aliases); i++)
        visit(user, FCF_FUNCTION, fcf_ew_aliases[i].alias, fcf_ew_aliases[i].pyname);
    /* every string value a function accepts, with the function that takes it */
    static const struct {
        const char *const *names;
        size_t n;
        const char *owner;
    } strings[] = {
        {fcf_pad_modes, FCF_COUNT(fcf_pad_modes), "pad"},
        {fcf_take_modes, FCF_COUNT(fcf_take_modes), "take"},
        {fcf_scatter_modes, FCF_COUNT(fcf_scatter_modes), "scatter_add"},
        {fcf_fft_norms, FCF_COUNT(fcf_fft_norms), "fft"},
        {fcf_sort_kinds, FCF_COUNT(fcf_sort_kinds), "sort"},
        {fcf_partition_kinds, FCF_COUNT(fcf_partition_kinds), "partition"},
        {fcf_conv_modes, FCF_COUNT(fcf_conv_modes), "convolve"},
        {fcf_conv_boundaries, FCF_COUNT(fcf_conv_boundaries), "convolve2d"},
        {fcf_conv_methods, FCF_COUNT(fcf_conv_methods), "method"},
    };
    for (size_t k = 0; k < FCF_COUNT(strings); k++)
        for (size_t i = 0; i < strings[k].n; i++)
            visit(user, FCF_STRING, strings[k].names[i], strings[k].owner);
    for (size_t i = 0; i < FCF_COUNT(fcf_methods); i++) {
        const fcf_method *m = &fcf_methods[i];
        /* (a sparse-only name's owner is "sparse": tests/test_fc_docs.c tries it on one) */
        const char *owner = method_sparse_only(m) ? "sparse" : m->func;
        if (method_is_attr(m)) {
            visit(user, FCF_ATTRIBUTE, m->name, owner);
            continue;
        }
        visit(user, FCF_METHOD, m->name, owner);
        if (m->kind == MK_VARARGS || m->kind == MK_SPARSE) continue; /* positional / none */
        int ew_op;
        const fcf_func *f = func_lookup(m->func, strlen(m->func), &ew_op);
        for (int k = 1; f && k < FCP_MAX_PARAMS && f->params[k]; k++)
            visit(user, FCF_METHOD_PARAM, f->params[k], m->name);
        for (int k = 0; !f && k < FCP_MAX_PARAMS - 1 && m->params[k]; k++)
            visit(user, FCF_METHOD_PARAM, m->params[k], m->name);
    }
    for (size_t i = 0; i < FCF_COUNT(fcf_puncts); i++)
        visit(user, FCF_OPERATOR, fcf_puncts[i].text, NULL);
}

/* The op whose infix spelling is tok's text, with nin operands, from ops.def. */
static int infix_op(const fcf_token *t, int nin) {
    for (int op = 0; op < FCG_OP_COUNT; op++)
        if (fcg_ops[op].nin == nin && fcg_ops[op].infix[0] &&
            word_is(t->text, t->len, fcg_ops[op].infix))
            return op;
    return -1;
}

/* ---- lexer ------------------------------------------------------------------------------ */

typedef struct fcf_parser {
    fc_ctx *ctx;
    fc_program *prog;
    const char *text;
    size_t len;
    const char *name;
    fcf_token *toks;
    size_t ntoks, cap_toks;
    size_t pos;
    int nest;
    bool decl_ok; /* a kernel declaration may start here: the right side of a binding */
    bool nomem;
    char lexerr[160];
} fcf_parser;

static bool is_name_start(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool is_digit(int c) { return c >= '0' && c <= '9'; }
static bool is_name_char(int c) { return is_name_start(c) || is_digit(c); }

static bool push_token(fcf_parser *p, const fcf_token *t) {
    if (p->ntoks == p->cap_toks) {
        size_t ncap = p->cap_toks ? p->cap_toks * 2 : 256;
        if (ncap > SIZE_MAX / sizeof(fcf_token)) return false;
        fcf_token *nt = fcg_realloc(p->ctx, p->toks, p->cap_toks * sizeof(fcf_token),
                                    ncap * sizeof(fcf_token));
        if (!nt) return false;
        p->toks = nt;
        p->cap_toks = ncap;
    }
    p->toks[p->ntoks++] = *t;
    return true;
}

/* Integer literals are Python ints, held in 128 bits (graph/pyint.c): a larger one is an
 * error, never a wrap. */
#define LITERAL_MAX (((fcg_upyint)1 << 127) - 1)
#define LITERAL_TOO_LARGE "integer literal too large (fusec holds Python integers in 128 bits)"

/* Scans a number at s[0..n): sets the token's kind, value and length, or writes lexerr. */
static bool lex_number(fcf_parser *p, const char *s, size_t n, fcf_token *t) {
    size_t j = 0;
    if (n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X' || s[1] == 'b' || s[1] == 'B' ||
                                  s[1] == 'o' || s[1] == 'O')) {
        int base = (s[1] == 'x' || s[1] == 'X') ? 16 : (s[1] == 'b' || s[1] == 'B') ? 2 : 8;
        fcg_upyint v = 0;
        j = 2;
        size_t ndig = 0;
        for (; j < n; j++) {
            int c = s[j], d;
            if (is_digit(c)) d = c - '0';
            else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
            else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
            else break;
            if (d >= base) break;
            if (v > (LITERAL_MAX - (fcg_upyint)d) / (fcg_upyint)base) {
                snprintf(p->lexerr, sizeof p->lexerr, LITERAL_TOO_LARGE);
                return false;
            }
            v = v * (fcg_upyint)base + (fcg_upyint)d;
            ndig++;
        }
        if (ndig == 0 || (j < n && is_name_char((unsigned char)s[j]))) {
            snprintf(p->lexerr, sizeof p->lexerr, "malformed number literal");
            return false;
        }
        t->kind = TK_INT;
        t->v.u = v;
        t->len = j;
        return true;
    }
    bool is_float = false;
    while (j < n && is_digit((unsigned char)s[j])) j++;
    if (j < n && s[j] == '.' && !(j + 1 < n && s[j + 1] == '.')) {
        is_float = true;
        j++;
        while (j < n && is_digit((unsigned char)s[j])) j++;
    }
    if (j < n && (s[j] == 'e' || s[j] == 'E')) {
        size_t k = j + 1;
        if (k < n && (s[k] == '+' || s[k] == '-')) k++;
        if (k >= n || !is_digit((unsigned char)s[k])) {
            snprintf(p->lexerr, sizeof p->lexerr, "malformed exponent in number literal");
            return false;
        }
        while (k < n && is_digit((unsigned char)s[k])) k++;
        j = k;
        is_float = true;
    }
    size_t digits_end = j;
    bool imag = false;
    if (j < n && (s[j] == 'j' || s[j] == 'J')) {
        imag = true;
        j++;
    }
    if (j < n && is_name_char((unsigned char)s[j])) {
        snprintf(p->lexerr, sizeof p->lexerr, "malformed number literal");
        return false;
    }
    t->len = j;
    if (!is_float && !imag) {
        fcg_upyint v = 0;
        for (size_t i = 0; i < digits_end; i++) {
            fcg_upyint d = (fcg_upyint)(s[i] - '0');
            if (v > (LITERAL_MAX - d) / 10) {
                snprintf(p->lexerr, sizeof p->lexerr, LITERAL_TOO_LARGE);
                return false;
            }
            v = v * 10 + d;
        }
        t->kind = TK_INT;
        t->v.u = v;
        return true;
    }
    char buf[FCP_MAX_NUMBER + 1];
    if (digits_end > FCP_MAX_NUMBER) {
        snprintf(p->lexerr, sizeof p->lexerr, "number literal too long");
        return false;
    }
    memcpy(buf, s, digits_end);
    buf[digits_end] = '\0';
    errno = 0;
    t->v.f = strtod(buf, NULL); /* overflow gives inf, as Python's float literals do */
    t->kind = imag ? TK_IMAG : TK_FLOAT;
    return true;
}

static int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Scans a string literal starting at the opening quote; writes lexerr on error. */
static bool lex_string(fcf_parser *p, const char *s, size_t n, fcf_token *t) {
    size_t j = 1;
    while (j < n && s[j] != '"') {
        unsigned char c = (unsigned char)s[j];
        if (c == '\n' || c == '\r') break;
        if (c < 0x20 && c != '\t') {
            snprintf(p->lexerr, sizeof p->lexerr, "control character 0x%02x in string", c);
            return false;
        }
        if (c == '\\') {
            if (j + 1 >= n || !strchr("\\\"ntrx", s[j + 1]) || s[j + 1] == '\0') {
                snprintf(p->lexerr, sizeof p->lexerr, "invalid escape in string");
                return false;
            }
            /* \xHH: any byte but NUL (a kernel's text may hold any other), two hex digits */
            if (s[j + 1] == 'x' && (j + 3 >= n || hex_digit(s[j + 2]) < 0 ||
                                    hex_digit(s[j + 3]) < 0 ||
                                    hex_digit(s[j + 2]) * 16 + hex_digit(s[j + 3]) == 0)) {
                snprintf(p->lexerr, sizeof p->lexerr, "invalid escape in string (\\x takes two "
                         "hex digits, not 00)");
                return false;
            }
            j += s[j + 1] == 'x' ? 3 : 1;
        }
        j++;
    }
    if (j >= n || s[j] != '"') {
        snprintf(p->lexerr, sizeof p->lexerr, "unterminated string");
        return false;
    }
    t->kind = TK_STRING;
    t->len = j + 1;
    return true;
}

/* Tokenises the whole text. Newlines inside brackets are joined, as Python's are. A lexical
 * error ends the stream with a TK_ERROR token, reported when the parser reaches it, so the
 * first error in the file is the one reported. */
static fc_status lex_all(fcf_parser *p) {
    const char *s = p->text;
    size_t n = p->len, i = 0, line_start = 0;
    int line = 1, depth = 0;
    for (;;) {
        while (i < n) {
            char c = s[i];
            if (c == ' ' || c == '\t' || c == '\r' || c == '\f') {
                i++;
            } else if (c == '#') {
                while (i < n && s[i] != '\n') i++;
            } else if (c == '\\' && i + 1 < n && s[i + 1] == '\n') {
                i += 2;
                if (line < INT_MAX) line++;
                line_start = i;
            } else if (c == '\\' && i + 2 < n && s[i + 1] == '\r' && s[i + 2] == '\n') {
                i += 3;
                if (line < INT_MAX) line++;
                line_start = i;
            } else if (c == '\n' && depth > 0) {
                i++;
                if (line < INT_MAX) line++;
                line_start = i;
            } else {
                break;
            }
        }
        fcf_token t;
        memset(&t, 0, sizeof t);
        t.line = line;
        t.col = (int)((i - line_start) < INT_MAX ? (i - line_start) + 1 : INT_MAX);
        t.text = s + i;
        t.len = 1;
        if (i >= n) {
            t.kind = TK_EOF;
            t.len = 0;
            if (!push_token(p, &t)) return FC_ERR_NOMEM;
            return FC_OK;
        }
        unsigned char c = (unsigned char)s[i];
        bool ok = true;
        if (c == '\n') {
            t.kind = TK_NEWLINE;
            i++;
            if (!push_token(p, &t)) return FC_ERR_NOMEM;
            if (line < INT_MAX) line++;
            line_start = i;
            continue;
        }
        if (is_digit(c) || (c == '.' && i + 1 < n && is_digit((unsigned char)s[i + 1]))) {
            ok = lex_number(p, s + i, n - i, &t);
        } else if (is_name_start(c)) {
            size_t j = i;
            while (j < n && is_name_char((unsigned char)s[j])) j++;
            t.kind = TK_NAME;
            t.len = j - i;
            if (t.len > FCP_MAX_NAME) {
                snprintf(p->lexerr, sizeof p->lexerr, "name longer than %d characters",
                         FCP_MAX_NAME);
                ok = false;
            }
        } else if (c == '"') {
            ok = lex_string(p, s + i, n - i, &t);
        } else {
            ok = false;
            for (size_t k = 0; k < sizeof fcf_puncts / sizeof fcf_puncts[0]; k++) {
                size_t pl = strlen(fcf_puncts[k].text);
                if (pl <= n - i && memcmp(s + i, fcf_puncts[k].text, pl) == 0) {
                    t.kind = fcf_puncts[k].kind;
                    t.len = pl;
                    ok = true;
                    break;
                }
            }
            if (ok && (t.kind == TK_LPAREN || t.kind == TK_LBRACK)) depth++;
            if (ok && (t.kind == TK_RPAREN || t.kind == TK_RBRACK) && depth > 0) depth--;
            if (!ok) {
                if (c >= 0x21 && c < 0x7f)
                    snprintf(p->lexerr, sizeof p->lexerr, "unexpected character '%c'", c);
                else
                    snprintf(p->lexerr, sizeof p->lexerr, "unexpected byte 0x%02x", c);
            }
        }
        if (!ok) {
            t.kind = TK_ERROR;
            if (!push_token(p, &t)) return FC_ERR_NOMEM;
            return FC_OK;
        }
        i += t.len;
        if (!push_token(p, &t)) return FC_ERR_NOMEM;
    }
}

/* ---- parser ----------------------------------------------------------------------------- */

static const fcf_token *cur(const fcf_parser *p) { return &p->toks[p->pos]; }

static const fcf_token *peek2(const fcf_parser *p) {
    return &p->toks[p->pos + 1 < p->ntoks ? p->pos + 1 : p->pos];
}

static void advance(fcf_parser *p) {
    if (p->pos + 1 < p->ntoks) p->pos++;
}

static void describe(const fcf_token *t, char *buf, size_t size) {
    int n = t->len > 40 ? 40 : (int)t->len;
    const char *more = t->len > 40 ? "..." : "";
    switch (t->kind) {
    case TK_EOF: snprintf(buf, size, "end of input"); break;
    case TK_NEWLINE: snprintf(buf, size, "end of line"); break;
    case TK_NAME: snprintf(buf, size, "name '%.*s%s'", n, t->text, more); break;
    case TK_INT:
    case TK_FLOAT:
    case TK_IMAG: snprintf(buf, size, "number '%.*s%s'", n, t->text, more); break;
    case TK_STRING: snprintf(buf, size, "string %.*s%s", n, t->text, more); break;
    default: snprintf(buf, size, "'%.*s'", n, t->text); break;
    }
}

static fc_status perr_at(fcf_parser *p, int line, int col, const char *fmt, ...)
    FCG_PRINTF(4, 5);
static fc_status perr_at(fcf_parser *p, int line, int col, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return fcg_error(p->ctx, FC_ERR_PARSE, "%s:%d:%d: %s", p->name, line, col, msg);
}

/* "expected X, found Y" at the current token (or the lexer's message at a bad token). */
static fc_status perr_expected(fcf_parser *p, const char *expected) {
    const fcf_token *t = cur(p);
    if (t->kind == TK_ERROR) return perr_at(p, t->line, t->col, "%s", p->lexerr);
    char found[80];
    describe(t, found, sizeof found);
    return perr_at(p, t->line, t->col, "expected %s, found %s", expected, found);
}

static fc_status pnomem(fcf_parser *p) {
    p->nomem = true;
    return fcg_error(p->ctx, FC_ERR_NOMEM, "%s: out of memory while parsing", p->name);
}

static fcf_expr *new_expr(fcf_parser *p, fcf_ekind kind, const fcf_token *at) {
    fcf_expr *e = arena_zalloc(&p->prog->arena, sizeof *e);
    if (!e) {
        pnomem(p);
        return NULL;
    }
    e->kind = kind;
    e->line = at->line;
    e->col = at->col;
    e->height = 1;
    return e;
}

/* Records e's height from a child's; fails when the tree gets too deep for the builder. */
static bool note_child(fcf_parser *p, fcf_expr *e, const fcf_expr *child) {
    if (child && child->height + 1 > e->height) e->height = child->height + 1;
    if (e->height > FCP_MAX_HEIGHT) {
        perr_at(p, e->line, e->col, "expression nested too deeply (more than %d levels)",
                FCP_MAX_HEIGHT);
        return false;
    }
    return true;
}

static fcf_expr *parse_expr(fcf_parser *p);
static fcf_expr *parse_unary(fcf_parser *p);

static bool expect(fcf_parser *p, fcf_tk kind, const char *what) {
    if (cur(p)->kind != kind) {
        perr_expected(p, what);
        return false;
    }
    advance(p);
    return true;
}

/* Comma-separated expressions up to `close` (a trailing comma allowed), into an arena array. */
static bool parse_items(fcf_parser *p, fcf_tk close, const char *close_text, fcf_expr *owner,
                        int *n_out, fcf_expr ***items_out) {
    fcf_expr **items = NULL;
    int n = 0, cap = 0;
    while (cur(p)->kind != close) {
        fcf_expr *item = parse_expr(p);
        if (!item) return false;
        if (!vec_reserve(&p->prog->arena, (void **)&items, &cap, n, sizeof *items)) {
            pnomem(p);
            return false;
        }
        items[n++] = item;
        if (!note_child(p, owner, item)) return false;
        if (cur(p)->kind == TK_COMMA) {
            advance(p);
            continue;
        }
        if (cur(p)->kind != close) {
            char what[32];
            snprintf(what, sizeof what, "',' or '%s'", close_text);
            perr_expected(p, what);
            return false;
        }
    }
    advance(p);
    *n_out = n;
    *items_out = items;
    return true;
}

/* A call's arguments, from '(' to ')', bound to the function's parameters. For a method
 * (recv != NULL), x.name(...) is func(x, ...): recv fills the first parameter, and messages
 * name the method and count the arguments after x. */
static fcf_expr *parse_call(fcf_parser *p, const fcf_token *name_tok, fcf_expr *recv,
                            const fcf_method *m) {
    int ew_op;
    const fcf_func *fn = m ? func_lookup(m->func, strlen(m->func), &ew_op)
                           : func_lookup(name_tok->text, name_tok->len, &ew_op);
    if (!fn && ew_op < 0) {
        perr_at(p, name_tok->line, name_tok->col, "unknown function '%.*s'", (int)name_tok->len,
                name_tok->text);
        return NULL;
    }
    bool decl = fn && (fn->kind == FK_EW_KERNEL || fn->kind == FK_RED_KERNEL);
    if (decl && !p->decl_ok) {
        perr_at(p, name_tok->line, name_tok->col,
                "%s(...) must be the whole right side of a binding: NAME = %s(...)", fn->name,
                fn->name);
        return NULL;
    }
    p->decl_ok = false; /* not inside the arguments */
    fcf_expr *e = new_expr(p, E_CALL, name_tok);
    if (!e) return NULL;
    int nparams = fn ? 0 : fcg_ops[ew_op].nin;
    if (fn)
        while (nparams < FCP_MAX_PARAMS && fn->params[nparams]) nparams++;
    int npos = fn ? fn->npos : nparams;
    int nreq = fn ? fn->nreq : nparams;
    int first = recv ? 1 : 0; /* the first parameter the text gives */
    const char *fname = m ? m->name : fn ? fn->name : fcg_ops[ew_op].pyname;
    /* Keyword names per parameter: the function's, or for an elementwise one called as a
     * method the method's own (elementwise functions take none). */
    const char *kw[FCP_MAX_PARAMS] = {NULL};
    bool any_kw = false;
    for (int k = first; k < nparams; k++) {
        kw[k] = fn ? fn->params[k] : m ? m->params[k - 1] : NULL;
        any_kw |= kw[k] != NULL;
    }
    bool varargs = m && m->kind == MK_VARARGS;
    e->call.fn = fn;
    e->call.op = fn ? fn->op : ew_op;
    e->call.n = nparams;
    e->call.method = m;
    e->call.args = arena_zalloc(&p->prog->arena, sizeof(fcf_expr *) * (size_t)nparams + 1);
    if (!e->call.args) {
        pnomem(p);
        return NULL;
    }
    if (recv) {
        e->call.args[0] = recv;
        if (!note_child(p, e, recv)) return NULL;
    }
    fcf_expr **items = NULL; /* varargs: the positional arguments, made one list */
    int nitems = 0, cap_items = 0;
    const fcf_token *first_item = NULL;
    advance(p); /* '(' */
    int given = first;
    bool seen_keyword = false;
    while (cur(p)->kind != TK_RPAREN) {
        const fcf_token *at = cur(p);
        int slot;
        if (at->kind == TK_NAME && peek2(p)->kind == TK_ASSIGN) {
            seen_keyword = true;
            if (!any_kw || varargs) {
                perr_at(p, at->line, at->col, "%s() takes no keyword arguments", fname);
                return NULL;
            }
            slot = -1;
            for (int k = first; k < nparams; k++)
                if (kw[k] && word_is(at->text, at->len, kw[k])) slot = k;
            if (slot < 0) {
                perr_at(p, at->line, at->col, "%s() got an unexpected keyword argument '%.*s'",
                        fname, (int)at->len, at->text);
                return NULL;
            }
            advance(p);
            advance(p);
        } else {
            if (seen_keyword) {
                perr_at(p, at->line, at->col, "positional argument follows keyword argument");
                return NULL;
            }
            if (!varargs && given >= npos) {
                if (npos == first)
                    perr_at(p, at->line, at->col, "%s() takes no arguments", fname);
                else
                    perr_at(p, at->line, at->col, "%s() takes at most %d positional argument%s",
                            fname, npos - first, npos - first == 1 ? "" : "s");
                return NULL;
            }
            slot = varargs ? -1 : given++;
        }
        if (slot >= 0 && e->call.args[slot]) {
            perr_at(p, at->line, at->col, "%s() got multiple values for argument '%s'", fname,
                    kw[slot] ? kw[slot] : "?");
            return NULL;
        }
        fcf_expr *arg = parse_expr(p);
        if (!arg) return NULL;
        if (slot >= 0) {
            e->call.args[slot] = arg;
            if (!note_child(p, e, arg)) return NULL;
        } else {
            if (!vec_reserve(&p->prog->arena, (void **)&items, &cap_items, nitems, sizeof *items)) {
                pnomem(p);
                return NULL;
            }
            if (!first_item) first_item = at;
            items[nitems++] = arg;
        }
        if (cur(p)->kind == TK_COMMA) {
            advance(p);
        } else if (cur(p)->kind != TK_RPAREN) {
            perr_expected(p, "',' or ')'");
            return NULL;
        }
    }
    /* x.reshape(2, 3) is x.reshape([2, 3]); one argument is passed as it is (a list, a
     * tuple or an int, as NumPy takes them); none leaves the parameter unset. */
    if (nitems == 1) {
        e->call.args[1] = items[0];
        if (!note_child(p, e, items[0])) return NULL;
    } else if (nitems > 1) {
        fcf_expr *list = new_expr(p, E_LIST, first_item);
        if (!list) return NULL;
        list->list.n = nitems;
        list->list.items = items;
        for (int i = 0; i < nitems; i++)
            if (!note_child(p, list, items[i])) return NULL;
        e->call.args[1] = list;
        if (!note_child(p, e, list)) return NULL;
    }
    for (int k = first; k < nreq; k++) {
        if (e->call.args[k]) continue;
        int got = 0;
        for (int j = first; j < nparams; j++) got += e->call.args[j] != NULL;
        if (fn)
            perr_at(p, cur(p)->line, cur(p)->col, "%s() missing required argument '%s'", fname,
                    fn->params[k]);
        else
            perr_at(p, cur(p)->line, cur(p)->col, "%s() takes %d argument%s, got %d", fname,
                    nparams - first, nparams - first == 1 ? "" : "s", got);
        return NULL;
    }
    advance(p); /* ')' */
    return e;
}

/* A call of a kernel variable, at the '(' after its name: the positional arguments are the
 * kernel's inputs (their count is checked when the kernel exists, at build time); a
 * reduction kernel also takes axis= and keepdims=, as CuPy's do. */
static fcf_expr *parse_kernel_call(fcf_parser *p, const fcf_token *name_tok, int var) {
    bool reduction = p->prog->vars[var].kernel == VK_RED_KERNEL;
    int fl = (int)name_tok->len;
    const char *fname = name_tok->text;
    fcf_expr *e = new_expr(p, E_KCALL, name_tok);
    if (!e) return NULL;
    e->kcall.var = var;
    int cap = 0;
    bool seen_keyword = false;
    advance(p); /* '(' */
    while (cur(p)->kind != TK_RPAREN) {
        const fcf_token *at = cur(p);
        fcf_expr **slot = NULL;
        if (at->kind == TK_NAME && peek2(p)->kind == TK_ASSIGN) {
            seen_keyword = true;
            if (!reduction) {
                perr_at(p, at->line, at->col, "%.*s() takes no keyword arguments (an "
                        "elementwise kernel's arguments are its inputs)", fl, fname);
                return NULL;
            }
            if (word_is(at->text, at->len, "axis")) slot = &e->kcall.axis;
            else if (word_is(at->text, at->len, "keepdims")) slot = &e->kcall.keepdims;
            if (!slot) {
                perr_at(p, at->line, at->col, "%.*s() got an unexpected keyword argument '%.*s' "
                        "(a reduction kernel takes axis and keepdims)", fl, fname,
                        (int)at->len, at->text);
                return NULL;
            }
            if (*slot) {
                perr_at(p, at->line, at->col, "%.*s() got multiple values for argument '%.*s'",
                        fl, fname, (int)at->len, at->text);
                return NULL;
            }
            advance(p);
            advance(p);
        } else if (seen_keyword) {
            perr_at(p, at->line, at->col, "positional argument follows keyword argument");
            return NULL;
        } else if (e->kcall.n == FCG_USER_MAX_PARAMS) {
            perr_at(p, at->line, at->col, "%.*s(): more than %d arguments (a kernel has at most "
                    "%d inputs)", fl, fname, FCG_USER_MAX_PARAMS, FCG_USER_MAX_PARAMS);
            return NULL;
        }
        fcf_expr *arg = parse_expr(p);
        if (!arg) return NULL;
        if (slot) {
            *slot = arg;
        } else {
            if (!vec_reserve(&p->prog->arena, (void **)&e->kcall.args, &cap, e->kcall.n,
                             sizeof *e->kcall.args)) {
                pnomem(p);
                return NULL;
            }
            e->kcall.args[e->kcall.n++] = arg;
        }
        if (!note_child(p, e, arg)) return NULL;
        if (cur(p)->kind == TK_COMMA) {
            advance(p);
        } else if (cur(p)->kind != TK_RPAREN) {
            perr_expected(p, "',' or ')'");
            return NULL;
        }
    }
    advance(p); /* ')' */
    return e;
}

/* x.name or x.name(...) after the base x, at the '.'. */
static fcf_expr *parse_member(fcf_parser *p, fcf_expr *base) {
    advance(p); /* '.' */
    const fcf_token *t = cur(p);
    if (t->kind != TK_NAME) {
        perr_expected(p, "an attribute or method name after '.'");
        return NULL;
    }
    bool called = peek2(p)->kind == TK_LPAREN;
    const fcf_method *m = method_lookup(t->text, t->len);
    if (!m) {
        perr_at(p, t->line, t->col, "unknown %s '%.*s'", called ? "method" : "attribute",
                (int)t->len, t->text);
        return NULL;
    }
    if (called && method_is_attr(m)) {
        perr_at(p, t->line, t->col, "'%s' is an attribute, not a method: write x.%s", m->name,
                m->name);
        return NULL;
    }
    if (!called && !method_is_attr(m)) {
        perr_at(p, t->line, t->col, "method '%s' used without a call: write x.%s(...)", m->name,
                m->name);
        return NULL;
    }
    advance(p); /* the name */
    if (called && m->kind == MK_SPARSE) { /* x.tocsr(): no arguments, an E_ATTR */
        advance(p);                       /* '(' */
        if (cur(p)->kind != TK_RPAREN) {
            perr_at(p, cur(p)->line, cur(p)->col, "%s() takes no arguments", m->name);
            return NULL;
        }
        advance(p);
        called = false;
    }
    if (called) return parse_call(p, t, base, m);
    fcf_expr *e;
    if (m->kind == MK_ATTR) { /* func(x), a call with nothing else to bind */
        int ew_op;
        const fcf_func *fn = func_lookup(m->func, strlen(m->func), &ew_op);
        e = new_expr(p, E_CALL, t);
        if (!e) return NULL;
        e->call.fn = fn;
        e->call.op = fn ? fn->op : ew_op;
        e->call.n = 1;
        if (fn)
            while (e->call.n < FCP_MAX_PARAMS && fn->params[e->call.n]) e->call.n++;
        e->call.method = m;
        e->call.args = arena_zalloc(&p->prog->arena, sizeof(fcf_expr *) * (size_t)e->call.n);
        if (!e->call.args) {
            pnomem(p);
            return NULL;
        }
        e->call.args[0] = base;
    } else {
        e = new_expr(p, E_ATTR, t);
        if (!e) return NULL;
        e->attr.base = base;
        e->attr.m = m;
    }
    return note_child(p, e, base) ? e : NULL;
}

/* NumPy's module prefixes: fft.rfft(x), random.normal(...), linalg.norm(x) name the function
 * after the dot (and sparse.csr_matrix / coo_matrix, scipy.sparse's constructors, and
 * sparse.csr_matmul, the printer's form of a sparse product). Each admits the functions of
 * its module only (np.fft's, np.random's draws,
 * linalg's norm, matmul, tensordot, matrix_power and graph/linalg.c's functions); the word
 * is a prefix only where no variable of that name hides it. linalg's own functions (solve,
 * inv, ...) are written with the prefix only, as NumPy has no np.solve. */
static const char *const fcf_modules[] = {"fft", "random", "linalg", "sparse", "signal"};

static int module_of(const fcf_token *t) {
    for (int i = 0; i < (int)FCF_COUNT(fcf_modules); i++)
        if (word_is(t->text, t->len, fcf_modules[i])) return i;
    return -1;
}

static bool module_admits(int module, const fcf_func *f) {
    if (!f) return false;
    switch (module) {
    case 0:
        return f->kind == FK_FFT || f->kind == FK_FFTN || f->kind == FK_FFTFREQ ||
               f->kind == FK_FFTSHIFT;
    case 1: return f->kind == FK_RANDOM || f->kind == FK_PERMUTE;
    case 3: return f->kind == FK_SPARSE;
    case 4: return f->kind == FK_CONV && f->op >= CV_CONVOLVE2D;
    default:
        return f->kind == FK_NORM || f->kind == FK_MATMUL || f->kind == FK_LINALG ||
               (f->kind == FK_CONTRACT && (f->op == CT_TENSORDOT || f->op == CT_MATRIX_POWER));
    }
}

static fcf_expr *parse_name(fcf_parser *p) {
    const fcf_token *t = cur(p);
    fcf_expr *e = NULL;
    int module = module_of(t);
    if (module >= 0 && peek2(p)->kind == TK_DOT && p->pos + 3 < p->ntoks &&
        p->toks[p->pos + 2].kind == TK_NAME && !name_find(p->prog, t->text, t->len)) {
        const fcf_token *fnt = &p->toks[p->pos + 2];
        int ew_op;
        if (!module_admits(module, func_lookup(fnt->text, fnt->len, &ew_op))) {
            perr_at(p, fnt->line, fnt->col, "'%.*s' is not a function of %.*s", (int)fnt->len,
                    fnt->text, (int)t->len, t->text);
            return NULL;
        }
        if (p->toks[p->pos + 3].kind != TK_LPAREN) {
            perr_at(p, fnt->line, fnt->col, "function '%.*s.%.*s' used without a call",
                    (int)t->len, t->text, (int)fnt->len, fnt->text);
            return NULL;
        }
        advance(p);
        advance(p);
        advance(p);
        return parse_call(p, fnt, NULL, NULL);
    }
    switch (keyword_lookup(t->text, t->len)) {
    case KW_TRUE:
    case KW_FALSE:
        if ((e = new_expr(p, E_BOOL, t))) e->b = keyword_lookup(t->text, t->len) == KW_TRUE;
        advance(p);
        return e;
    case KW_NONE:
        e = new_expr(p, E_NONE, t);
        advance(p);
        return e;
    case KW_INF:
    case KW_NAN:
        if ((e = new_expr(p, E_FLOAT, t)))
            e->f = keyword_lookup(t->text, t->len) == KW_INF ? INFINITY : NAN;
        advance(p);
        return e;
    case KW_INPUT:
    case KW_OUT: perr_expected(p, "an expression"); return NULL;
    default: break;
    }
    if (peek2(p)->kind == TK_LPAREN) {
        /* A variable holding a kernel is called as the kernel (it hides a function of its
         * name, as in Python); any other name followed by '(' is a function. */
        fcf_name *nm = name_find(p->prog, t->text, t->len);
        int ew_op;
        advance(p);
        if (nm && nm->kind == N_VAR && p->prog->vars[nm->index].kernel != VK_VALUE)
            return parse_kernel_call(p, t, nm->index);
        const fcf_func *lf = func_lookup(t->text, t->len, &ew_op);
        bool sig = lf && lf->kind == FK_CONV && lf->op >= CV_CONVOLVE2D;
        if (lf && (lf->kind == FK_LINALG || lf->kind == FK_SPARSE || sig)) {
            const char *mod = sig ? "signal" : lf->kind == FK_LINALG ? "linalg" : "sparse";
            perr_at(p, t->line, t->col, "'%.*s' is a function of %s: write %s.%.*s(...)",
                    (int)t->len, t->text, mod, mod, (int)t->len, t->text);
            return NULL;
        }
        if (nm && nm->kind == N_VAR && !func_lookup(t->text, t->len, &ew_op) && ew_op < 0) {
            perr_at(p, t->line, t->col, "'%.*s' is not a function or a kernel: only names bound "
                    "to ElementwiseKernel(...) or ReductionKernel(...) can be called (line %d "
                    "binds it to something else)", (int)t->len, t->text,
                    p->prog->vars[nm->index].line);
            return NULL;
        }
        return parse_call(p, t, NULL, NULL);
    }
    fc_dtype dt;
    if (dtype_lookup(t->text, t->len, &dt)) {
        e = new_expr(p, E_DTYPE, t);
        if (e) e->dt = dt;
        advance(p);
        return e;
    }
    fcf_name *nm = name_find(p->prog, t->text, t->len);
    if (!nm) {
        int ew_op;
        if (func_lookup(t->text, t->len, &ew_op) || ew_op >= 0)
            perr_at(p, t->line, t->col, "function '%.*s' used without a call", (int)t->len,
                    t->text);
        else
            perr_at(p, t->line, t->col, "undefined name '%.*s'", (int)t->len, t->text);
        return NULL;
    }
    e = new_expr(p, nm->kind == N_VAR ? E_VAR : E_SYM, t);
    if (e) e->index = nm->index;
    advance(p);
    return e;
}

static fcf_expr *parse_atom(fcf_parser *p) {
    const fcf_token *t = cur(p);
    fcf_expr *e;
    switch (t->kind) {
    case TK_INT:
        e = new_expr(p, E_INT, t);
        if (e) e->u = t->v.u;
        advance(p);
        return e;
    case TK_FLOAT:
    case TK_IMAG:
        e = new_expr(p, t->kind == TK_FLOAT ? E_FLOAT : E_IMAG, t);
        if (e) e->f = t->v.f;
        advance(p);
        return e;
    case TK_STRING: {
        /* Adjacent literals are one string, as in Python and C: "a;\n" "b;" spans lines
         * inside parentheses. */
        size_t total = 0, ntok = 0;
        while (p->pos + ntok < p->ntoks && p->toks[p->pos + ntok].kind == TK_STRING)
            total += p->toks[p->pos + ntok++].len;
        e = new_expr(p, E_STR, t);
        if (!e) return NULL;
        char *s = arena_alloc(&p->prog->arena, total + 1);
        if (!s) {
            pnomem(p);
            return NULL;
        }
        size_t k = 0;
        for (size_t i = 0; i < ntok; i++) {
            const fcf_token *tok = cur(p);
            for (size_t j = 1; j + 1 < tok->len; j++) {
                char c = tok->text[j];
                if (c == '\\') {
                    c = tok->text[++j];
                    if (c == 'x') {
                        c = (char)(hex_digit(tok->text[j + 1]) * 16 + hex_digit(tok->text[j + 2]));
                        j += 2;
                    } else {
                        c = c == 'n' ? '\n' : c == 't' ? '\t' : c == 'r' ? '\r' : c;
                    }
                }
                s[k++] = c;
            }
            advance(p);
        }
        s[k] = '\0';
        e->str.s = s;
        return e;
    }
    case TK_NAME: return parse_name(p);
    case TK_ELLIPSIS:
        e = new_expr(p, E_ELLIPSIS, t);
        advance(p);
        return e;
    case TK_LPAREN: {
        advance(p);
        if (cur(p)->kind == TK_RPAREN) { /* () is the empty tuple: a 0-d shape */
            e = new_expr(p, E_LIST, t);
            advance(p);
            return e;
        }
        fcf_expr *inner = parse_expr(p);
        if (!inner) return NULL;
        if (cur(p)->kind == TK_RPAREN) {
            advance(p);
            return inner;
        }
        if (cur(p)->kind != TK_COMMA) {
            perr_expected(p, "')'");
            return NULL;
        }
        /* A tuple, taken as a list ((4, 4) is a shape, as in NumPy). */
        advance(p);
        e = new_expr(p, E_LIST, t);
        if (!e) return NULL;
        int n = 0;
        fcf_expr **rest = NULL;
        if (!parse_items(p, TK_RPAREN, ")", e, &n, &rest)) return NULL;
        e->list.items = arena_alloc(&p->prog->arena, sizeof(fcf_expr *) * ((size_t)n + 1));
        if (!e->list.items) {
            pnomem(p);
            return NULL;
        }
        e->list.items[0] = inner;
        if (n) memcpy(e->list.items + 1, rest, sizeof(fcf_expr *) * (size_t)n);
        e->list.n = n + 1;
        if (!note_child(p, e, inner)) return NULL;
        return e;
    }
    case TK_LBRACK:
        e = new_expr(p, E_LIST, t);
        if (!e) return NULL;
        advance(p);
        if (!parse_items(p, TK_RBRACK, "]", e, &e->list.n, &e->list.items)) return NULL;
        return e;
    default: perr_expected(p, "an expression"); return NULL;
    }
}

/* One subscript entry: an expression, or a slice [start]:[stop][:[step]]. */
static fcf_expr *parse_sub_entry(fcf_parser *p) {
    const fcf_token *at = cur(p);
    fcf_expr *start = NULL;
    if (at->kind != TK_COLON) {
        start = parse_expr(p);
        if (!start || cur(p)->kind != TK_COLON) return start;
    }
    fcf_expr *e = new_expr(p, E_SLICE, at);
    if (!e) return NULL;
    e->slice.start = start;
    advance(p); /* ':' */
    fcf_tk k = cur(p)->kind;
    if (k != TK_COLON && k != TK_COMMA && k != TK_RBRACK) {
        if (!(e->slice.stop = parse_expr(p))) return NULL;
    }
    if (cur(p)->kind == TK_COLON) {
        advance(p);
        k = cur(p)->kind;
        if (k != TK_COMMA && k != TK_RBRACK) {
            if (!(e->slice.step = parse_expr(p))) return NULL;
        }
    }
    if (!note_child(p, e, e->slice.start) || !note_child(p, e, e->slice.stop) ||
        !note_child(p, e, e->slice.step))
        return NULL;
    return e;
}

/* postfix := atom { '[' subscript ']' | '.' name [ '(' args ')' ] }, left to right, so
 * x.T.sum(axis=0)[1] chains, and all of it binds tighter than ** and unary minus. */
static fcf_expr *parse_postfix(fcf_parser *p) {
    fcf_expr *e = parse_atom(p);
    while (e && (cur(p)->kind == TK_LBRACK || cur(p)->kind == TK_DOT)) {
        if (cur(p)->kind == TK_DOT) {
            e = parse_member(p, e);
            continue;
        }
        fcf_expr *s = new_expr(p, E_SUBSCRIPT, cur(p));
        if (!s) return NULL;
        advance(p);
        s->sub.base = e;
        if (!note_child(p, s, e)) return NULL;
        fcf_expr **items = NULL;
        int n = 0, cap = 0;
        for (;;) {
            if (n == FCP_MAX_SUBSCRIPTS) {
                perr_at(p, cur(p)->line, cur(p)->col, "more than %d subscript entries",
                        FCP_MAX_SUBSCRIPTS);
                return NULL;
            }
            fcf_expr *item = parse_sub_entry(p);
            if (!item) return NULL;
            if (!vec_reserve(&p->prog->arena, (void **)&items, &cap, n, sizeof *items)) {
                pnomem(p);
                return NULL;
            }
            items[n++] = item;
            if (!note_child(p, s, item)) return NULL;
            if (cur(p)->kind == TK_COMMA) {
                advance(p);
                if (cur(p)->kind == TK_RBRACK) break;
                continue;
            }
            if (cur(p)->kind == TK_RBRACK) break;
            perr_expected(p, "',' or ']'");
            return NULL;
        }
        advance(p);
        s->sub.n = n;
        s->sub.items = items;
        e = s;
    }
    return e;
}

/* power := postfix ['**' unary]: ** binds tighter than a unary minus on its left and is
 * right-associative (its right operand is a unary expression, which reaches power again). */
static fcf_expr *parse_power(fcf_parser *p) {
    fcf_expr *base = parse_postfix(p);
    if (!base || cur(p)->kind != TK_DSTAR) return base;
    fcf_expr *e = new_expr(p, E_BINARY, cur(p));
    if (!e) return NULL;
    e->bin.op = infix_op(cur(p), 2);
    advance(p);
    e->bin.a = base;
    e->bin.b = parse_unary(p);
    if (!e->bin.b || !note_child(p, e, base) || !note_child(p, e, e->bin.b)) return NULL;
    return e;
}

static fcf_expr *parse_unary(fcf_parser *p) {
    const fcf_token *t = cur(p);
    if (++p->nest > FCP_MAX_NEST) {
        perr_at(p, t->line, t->col, "expression nested too deeply (more than %d levels)",
                FCP_MAX_NEST);
        return NULL;
    }
    fcf_expr *e;
    if (t->kind == TK_MINUS || t->kind == TK_PLUS || t->kind == TK_TILDE) {
        e = new_expr(p, E_UNARY, t);
        if (!e) return NULL;
        e->bin.op = t->kind == TK_PLUS ? -1 : infix_op(t, 1);
        advance(p);
        e->bin.a = parse_unary(p);
        if (!e->bin.a || !note_child(p, e, e->bin.a)) return NULL;
    } else {
        e = parse_power(p);
    }
    p->nest--;
    return e;
}

/* Binary precedence, Python's: | < ^ < & < shifts < + - < * / // % @. Comparisons sit below
 * all of them and do not chain. */
static int binary_prec(fcf_tk k) {
    switch (k) {
    case TK_PIPE: return 1;
    case TK_CARET: return 2;
    case TK_AMP: return 3;
    case TK_LSHIFT:
    case TK_RSHIFT: return 4;
    case TK_PLUS:
    case TK_MINUS: return 5;
    case TK_STAR:
    case TK_SLASH:
    case TK_DSLASH:
    case TK_PERCENT:
    case TK_AT: return 6;
    default: return 0;
    }
}

static bool is_comparison(fcf_tk k) {
    return k == TK_LT || k == TK_LE || k == TK_GT || k == TK_GE || k == TK_EQ || k == TK_NE;
}

static fcf_expr *parse_binary(fcf_parser *p, int min_prec) {
    fcf_expr *left = parse_unary(p);
    while (left) {
        int prec = binary_prec(cur(p)->kind);
        if (prec == 0 || prec < min_prec) break;
        fcf_expr *e = new_expr(p, E_BINARY, cur(p));
        if (!e) return NULL;
        e->bin.op = infix_op(cur(p), 2);
        advance(p);
        e->bin.a = left;
        e->bin.b = parse_binary(p, prec + 1);
        if (!e->bin.b || !note_child(p, e, left) || !note_child(p, e, e->bin.b)) return NULL;
        left = e;
    }
    return left;
}

static fcf_expr *parse_expr(fcf_parser *p) {
    fcf_expr *left = parse_binary(p, 1);
    if (!left || !is_comparison(cur(p)->kind)) return left;
    fcf_expr *e = new_expr(p, E_BINARY, cur(p));
    if (!e) return NULL;
    e->bin.op = infix_op(cur(p), 2);
    advance(p);
    e->bin.a = left;
    e->bin.b = parse_binary(p, 1);
    if (!e->bin.b || !note_child(p, e, left) || !note_child(p, e, e->bin.b)) return NULL;
    if (is_comparison(cur(p)->kind)) {
        perr_at(p, cur(p)->line, cur(p)->col,
                "chained comparisons are not supported: add parentheses");
        return NULL;
    }
    return e;
}

static bool add_var(fcf_parser *p, const fcf_token *t, int *index) {
    fc_program *prog = p->prog;
    if (!vec_reserve(&prog->arena, (void **)&prog->vars, &prog->cap_vars, prog->nvars,
                     sizeof(fcf_var))) {
        pnomem(p);
        return false;
    }
    const char *stored;
    if (!name_add(prog, t->text, t->len, N_VAR, prog->nvars, &stored)) {
        pnomem(p);
        return false;
    }
    prog->vars[prog->nvars] = (fcf_var){stored, t->line, t->col, VK_VALUE};
    *index = prog->nvars++;
    return true;
}

/* Checks that an assignment target (or a symbol) is a fresh, non-reserved name. */
static bool check_new_name(fcf_parser *p, const fcf_token *t) {
    if (fcf_name_is_reserved(t->text, t->len)) {
        perr_at(p, t->line, t->col, "'%.*s' is a reserved word", (int)t->len, t->text);
        return false;
    }
    fcf_name *nm = name_find(p->prog, t->text, t->len);
    if (nm && nm->kind == N_VAR) {
        const fcf_var *v = &p->prog->vars[nm->index];
        perr_at(p, t->line, t->col, "'%.*s' is already defined (line %d)", (int)t->len, t->text,
                v->line);
        return false;
    }
    if (nm) {
        perr_at(p, t->line, t->col, "'%.*s' is already a dimension symbol", (int)t->len,
                t->text);
        return false;
    }
    return true;
}

static bool parse_input_decl(fcf_parser *p, const fcf_token *target, fcf_stmt *st) {
    fc_program *prog = p->prog;
    advance(p); /* 'input' */
    const fcf_token *t = cur(p);
    fcf_input in;
    memset(&in, 0, sizeof in);
    if (t->kind != TK_NAME || !dtype_lookup(t->text, t->len, &in.dtype)) {
        perr_expected(p, "a dtype (bool, i8 ... u64, f16, bf16, f32, f64, c64, c128)");
        return false;
    }
    advance(p);
    if (!expect(p, TK_LBRACK, "'[' and the input's shape")) return false;
    while (cur(p)->kind != TK_RBRACK) {
        t = cur(p);
        if (in.ndim == FC_MAX_DIMS) {
            perr_at(p, t->line, t->col, "an input has at most %d dimensions", FC_MAX_DIMS);
            return false;
        }
        fcf_dim *d = &in.dims[in.ndim];
        if (t->kind == TK_INT) {
            if (t->v.u > (fcg_upyint)INT64_MAX) {
                perr_at(p, t->line, t->col, "dimension too large");
                return false;
            }
            d->sym = -1;
            d->value = (int64_t)t->v.u;
        } else if (t->kind == TK_NAME) {
            fcf_name *nm = name_find(prog, t->text, t->len);
            if (nm && nm->kind == N_SYM) {
                d->sym = nm->index;
            } else {
                if (!check_new_name(p, t)) return false;
                if (!vec_reserve(&prog->arena, (void **)&prog->syms, &prog->cap_syms,
                                 prog->nsyms, sizeof(fcf_symbol))) {
                    pnomem(p);
                    return false;
                }
                const char *stored;
                if (!name_add(prog, t->text, t->len, N_SYM, prog->nsyms, &stored)) {
                    pnomem(p);
                    return false;
                }
                prog->syms[prog->nsyms] = (fcf_symbol){stored, 0, false};
                d->sym = prog->nsyms++;
            }
        } else {
            perr_expected(p, "a dimension (an integer or a symbol)");
            return false;
        }
        in.ndim++;
        advance(p);
        if (cur(p)->kind == TK_COMMA) {
            advance(p);
        } else if (cur(p)->kind != TK_RBRACK) {
            perr_expected(p, "',' or ']'");
            return false;
        }
    }
    advance(p); /* ']' */
    if (!vec_reserve(&prog->arena, (void **)&prog->inputs, &prog->cap_inputs, prog->ninputs,
                     sizeof(fcf_input))) {
        pnomem(p);
        return false;
    }
    if (!add_var(p, target, &in.var)) return false;
    st->kind = S_INPUT;
    st->var = in.var;
    st->input = prog->ninputs;
    prog->inputs[prog->ninputs++] = in;
    return true;
}

static bool parse_out(fcf_parser *p) {
    fc_program *prog = p->prog;
    const fcf_token *kw = cur(p);
    if (prog->out_line) {
        perr_at(p, kw->line, kw->col, "a second 'out' statement (the first is on line %d)",
                prog->out_line);
        return false;
    }
    prog->out_line = kw->line;
    advance(p);
    for (;;) {
        const fcf_token *t = cur(p);
        if (t->kind != TK_NAME) {
            perr_expected(p, "the name of an output");
            return false;
        }
        fcf_name *nm = name_find(prog, t->text, t->len);
        if (!nm || nm->kind != N_VAR) {
            perr_at(p, t->line, t->col, "undefined name '%.*s'", (int)t->len, t->text);
            return false;
        }
        if (!vec_reserve(&prog->arena, (void **)&prog->outs, &prog->cap_outs, prog->nouts,
                         sizeof(fcf_output))) {
            pnomem(p);
            return false;
        }
        prog->outs[prog->nouts++] = (fcf_output){nm->index, t->line, t->col};
        advance(p);
        if (cur(p)->kind != TK_COMMA) break;
        advance(p);
    }
    return true;
}

/* The kernel declaration at the current token (ElementwiseKernel(...) or ReductionKernel(...),
 * unless a kernel variable of that name hides it): what a variable bound to it holds. */
static fcf_vk declaration_at(fcf_parser *p) {
    const fcf_token *t = cur(p);
    if (t->kind != TK_NAME || peek2(p)->kind != TK_LPAREN) return VK_VALUE;
    fcf_name *nm = name_find(p->prog, t->text, t->len);
    if (nm && nm->kind == N_VAR && p->prog->vars[nm->index].kernel != VK_VALUE) return VK_VALUE;
    int ew_op;
    const fcf_func *f = func_lookup(t->text, t->len, &ew_op);
    return !f ? VK_VALUE : f->kind == FK_EW_KERNEL ? VK_EW_KERNEL
                         : f->kind == FK_RED_KERNEL ? VK_RED_KERNEL : VK_VALUE;
}

/* NAME, NAME, ... = EXPR (Python's tuple unpacking), at the first name: each name is new, and
 * none is bound before the right side is parsed (it may not use them). */
static bool parse_unpack(fcf_parser *p, fcf_stmt *st) {
    fc_program *prog = p->prog;
    const fcf_token *names[FCG_USER_MAX_PARAMS];
    int n = 0;
    while (cur(p)->kind == TK_NAME) {
        const fcf_token *t = cur(p);
        if (!check_new_name(p, t)) return false;
        for (int i = 0; i < n; i++)
            if (names[i]->len == t->len && memcmp(names[i]->text, t->text, t->len) == 0) {
                perr_at(p, t->line, t->col, "'%.*s' is bound twice by one statement",
                        (int)t->len, t->text);
                return false;
            }
        if (n == FCG_USER_MAX_PARAMS) {
            perr_at(p, t->line, t->col, "more than %d names to unpack into",
                    FCG_USER_MAX_PARAMS);
            return false;
        }
        names[n++] = t;
        advance(p);
        if (cur(p)->kind != TK_COMMA) break;
        advance(p);
    }
    if (!expect(p, TK_ASSIGN, "'=' after the names to unpack into")) return false;
    if (declaration_at(p) != VK_VALUE) {
        perr_at(p, cur(p)->line, cur(p)->col, "a kernel declaration binds one name: NAME = "
                "%.*s(...)", (int)cur(p)->len, cur(p)->text);
        return false;
    }
    p->nest = 0;
    st->kind = S_UNPACK;
    if (!(st->expr = parse_expr(p))) return false;
    st->ntargets = n;
    st->targets = arena_alloc(&prog->arena, sizeof(int) * (size_t)n);
    if (!st->targets) {
        pnomem(p);
        return false;
    }
    for (int i = 0; i < n; i++)
        if (!add_var(p, names[i], &st->targets[i])) return false;
    st->var = st->targets[0];
    return true;
}

/* Room for one more statement, and *st zeroed at t's position. */
static bool stmt_begin(fcf_parser *p, const fcf_token *t, fcf_stmt *st) {
    fc_program *prog = p->prog;
    if (!vec_reserve(&prog->arena, (void **)&prog->stmts, &prog->cap_stmts, prog->nstmts,
                     sizeof(fcf_stmt))) {
        pnomem(p);
        return false;
    }
    memset(st, 0, sizeof *st);
    st->line = t->line;
    st->col = t->col;
    return true;
}

static bool parse_statement(fcf_parser *p) {
    fc_program *prog = p->prog;
    const fcf_token *t = cur(p);
    if (t->kind == TK_NAME && keyword_lookup(t->text, t->len) == KW_OUT &&
        peek2(p)->kind != TK_ASSIGN) {
        if (!parse_out(p)) return false;
    } else if (t->kind == TK_NAME && peek2(p)->kind == TK_COMMA) {
        fcf_stmt st;
        if (!stmt_begin(p, t, &st)) return false;
        if (!parse_unpack(p, &st)) return false;
        prog->stmts[prog->nstmts++] = st;
    } else {
        if (t->kind != TK_NAME) {
            perr_expected(p, "a statement (NAME = ... or out NAME, ...)");
            return false;
        }
        if (peek2(p)->kind != TK_ASSIGN) {
            advance(p);
            perr_expected(p, "'='");
            return false;
        }
        if (!check_new_name(p, t)) return false;
        advance(p);
        advance(p);
        fcf_stmt st;
        if (!stmt_begin(p, t, &st)) return false;
        fcf_vk decl = declaration_at(p);
        if (cur(p)->kind == TK_NAME && keyword_lookup(cur(p)->text, cur(p)->len) == KW_INPUT) {
            if (!parse_input_decl(p, t, &st)) return false;
        } else if (decl != VK_VALUE) {
            const fcf_token *fn = cur(p);
            p->nest = 0;
            p->decl_ok = true;
            advance(p);
            fcf_expr *e = parse_call(p, fn, NULL, NULL);
            if (!e) return false;
            if (cur(p)->kind != TK_NEWLINE && cur(p)->kind != TK_EOF) {
                perr_at(p, cur(p)->line, cur(p)->col, "%.*s(...) must be the whole right side "
                        "of a binding: NAME = %.*s(...)", (int)fn->len, fn->text, (int)fn->len,
                        fn->text);
                return false;
            }
            st.kind = S_ASSIGN;
            st.expr = e;
            if (!add_var(p, t, &st.var)) return false;
            prog->vars[st.var].kernel = decl;
        } else {
            p->nest = 0;
            fcf_expr *e = parse_expr(p);
            if (!e) return false;
            st.kind = S_ASSIGN;
            st.expr = e;
            if (!add_var(p, t, &st.var)) return false;
            /* k2 = k: k2 is the kernel too */
            if (e->kind == E_VAR) prog->vars[st.var].kernel = prog->vars[e->index].kernel;
        }
        prog->stmts[prog->nstmts++] = st;
    }
    if (cur(p)->kind == TK_NEWLINE) {
        advance(p);
        return true;
    }
    if (cur(p)->kind == TK_EOF) return true;
    perr_expected(p, "end of line");
    return false;
}

static fc_status parse_program(fcf_parser *p) {
    fc_status st = lex_all(p);
    if (st != FC_OK) return pnomem(p);
    for (;;) {
        const fcf_token *t = cur(p);
        if (t->kind == TK_EOF) break;
        if (t->kind == TK_NEWLINE) {
            advance(p);
            continue;
        }
        /* An allocation failure during parsing reports NOMEM, not a syntax error. */
        if (!parse_statement(p)) return p->nomem ? FC_ERR_NOMEM : FC_ERR_PARSE;
    }
    if (!p->prog->out_line) {
        const fcf_token *t = cur(p);
        return perr_at(p, t->line, t->col, "expected an 'out' statement, found end of input");
    }
    return FC_OK;
}

/* ---- public: parse, load, destroy, queries ---------------------------------------------- */

fc_status fc_program_parse(fc_ctx *ctx, const char *text, size_t len, const char *name,
                           fc_program **out) {
    if (out) *out = NULL;
    if (!ctx) return FC_ERR_NULL;
    if (!out || (!text && len)) return fcg_error(ctx, FC_ERR_NULL, "fc_program_parse: NULL argument");
    if (!name) name = "<input>";
    fc_program *prog = fcg_malloc(ctx, sizeof *prog);
    if (!prog) return fcg_error(ctx, FC_ERR_NOMEM, "%s: out of memory while parsing", name);
    memset(prog, 0, sizeof *prog);
    prog->ctx = ctx;
    prog->arena.ctx = ctx;
    prog->name = arena_strndup(&prog->arena, name, strlen(name));
    if (!prog->name) {
        fcg_free(ctx, prog, sizeof *prog);
        return fcg_error(ctx, FC_ERR_NOMEM, "%s: out of memory while parsing", name);
    }
    fcf_parser p;
    memset(&p, 0, sizeof p);
    p.ctx = ctx;
    p.prog = prog;
    p.text = text ? text : "";
    p.len = len;
    p.name = prog->name;
    fc_status st = parse_program(&p);
    fcg_free(ctx, p.toks, p.cap_toks * sizeof(fcf_token));
    if (st != FC_OK) {
        fc_program_destroy(prog);
        return st;
    }
    *out = prog;
    return FC_OK;
}

fc_status fc_program_load(fc_ctx *ctx, const char *path, fc_program **out) {
    if (out) *out = NULL;
    if (!ctx) return FC_ERR_NULL;
    if (!path || !out) return fcg_error(ctx, FC_ERR_NULL, "fc_program_load: NULL argument");
    FILE *f = fopen(path, "rb");
    if (!f) return fcg_error(ctx, FC_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    size_t cap = 0, len = 0;
    char *buf = NULL;
    fc_status st = FC_OK;
    for (;;) {
        if (len == cap) {
            size_t ncap = cap ? cap * 2 : 65536;
            char *nb = fcg_realloc(ctx, buf, cap, ncap);
            if (!nb) {
                st = fcg_error(ctx, FC_ERR_NOMEM, "out of memory reading '%s'", path);
                break;
            }
            buf = nb;
            cap = ncap;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0) {
            if (ferror(f)) st = fcg_error(ctx, FC_ERR_IO, "cannot read '%s': read error", path);
            break;
        }
    }
    fclose(f);
    if (st == FC_OK) st = fc_program_parse(ctx, buf, len, path, out);
    fcg_free(ctx, buf, cap);
    return st;
}

void fc_program_destroy(fc_program *prog) {
    if (!prog) return;
    fc_ctx *ctx = prog->ctx;
    arena_free(&prog->arena);
    fcg_free(ctx, prog, sizeof *prog);
}

int fc_program_num_inputs(const fc_program *prog) { return prog ? prog->ninputs : 0; }

const char *fc_program_input_name(const fc_program *prog, int i) {
    if (!prog || i < 0 || i >= prog->ninputs) return NULL;
    return prog->vars[prog->inputs[i].var].name;
}

fc_dtype fc_program_input_dtype(const fc_program *prog, int i) {
    if (!prog || i < 0 || i >= prog->ninputs) return FC_DTYPE_COUNT;
    return prog->inputs[i].dtype;
}

int fc_program_num_outputs(const fc_program *prog) { return prog ? prog->nouts : 0; }

const char *fc_program_output_name(const fc_program *prog, int i) {
    if (!prog || i < 0 || i >= prog->nouts) return NULL;
    return prog->vars[prog->outs[i].var].name;
}

int fc_program_num_symbols(const fc_program *prog) { return prog ? prog->nsyms : 0; }

const char *fc_program_symbol_name(const fc_program *prog, int i) {
    if (!prog || i < 0 || i >= prog->nsyms) return NULL;
    return prog->syms[i].name;
}

fc_status fc_program_set_symbol(fc_program *prog, const char *name, int64_t value) {
    if (!prog) return FC_ERR_NULL;
    if (!name) return fcg_error(prog->ctx, FC_ERR_NULL, "fc_program_set_symbol: NULL name");
    fcf_name *nm = name_find(prog, name, strlen(name));
    if (!nm || nm->kind != N_SYM)
        return fcg_error(prog->ctx, FC_ERR_INVALID, "%s: no dimension symbol named '%s'",
                         prog->name, name);
    if (value < 0)
        return fcg_error(prog->ctx, FC_ERR_INVALID,
                         "%s: dimension symbol '%s' must be >= 0, got %lld", prog->name, name,
                         (long long)value);
    prog->syms[nm->index].value = value;
    prog->syms[nm->index].bound = true;
    return FC_OK;
}

static fc_status input_shape(const fc_program *prog, int i, fc_shape *out, int line, int col) {
    const fcf_input *in = &prog->inputs[i];
    memset(out, 0, sizeof *out);
    out->ndim = in->ndim;
    for (int d = 0; d < in->ndim; d++) {
        const fcf_dim *dim = &in->dims[d];
        if (dim->sym < 0) {
            out->dim[d] = dim->value;
            continue;
        }
        const fcf_symbol *s = &prog->syms[dim->sym];
        if (!s->bound)
            return fcg_error(prog->ctx, FC_ERR_UNBOUND,
                             "%s:%d:%d: dimension symbol '%s' of input '%s' has no value",
                             prog->name, line, col, s->name, prog->vars[in->var].name);
        out->dim[d] = s->value;
    }
    return FC_OK;
}

static const fcf_stmt *input_stmt(const fc_program *prog, int i) {
    for (int k = 0; k < prog->nstmts; k++)
        if (prog->stmts[k].kind == S_INPUT && prog->stmts[k].input == i) return &prog->stmts[k];
    return NULL;
}

fc_status fc_program_input_shape(const fc_program *prog, int i, fc_shape *out) {
    if (!prog) return FC_ERR_NULL;
    if (!out) return fcg_error(prog->ctx, FC_ERR_NULL, "fc_program_input_shape: NULL out");
    if (i < 0 || i >= prog->ninputs)
        return fcg_error(prog->ctx, FC_ERR_INVALID, "%s: no input %d (the program has %d)",
                         prog->name, i, prog->ninputs);
    const fcf_stmt *st = input_stmt(prog, i);
    return input_shape(prog, i, out, st ? st->line : 0, st ? st->col : 0);
}

/* ---- builder ---------------------------------------------------------------------------- */

typedef enum fcf_vkind {
    V_ARRAY, V_INT, V_FLOAT, V_COMPLEX, V_BOOL, V_NONE, V_STR, V_DTYPE, V_LIST, V_ELLIPSIS,
    V_KERNEL, V_SPARSE
} fcf_vkind;

typedef struct fcf_value fcf_value;
struct fcf_value {
    fcf_vkind kind;
    union {
        fc_array *arr;
        fcg_pyint i; /* V_INT: a Python integer, exactly */
        double f;
        double c[2];
        bool b;
        fc_dtype dt;
        const char *s;
        struct {
            int n;
            fcf_value *items;
        } list;
        fc_kernel *kern; /* owned by the context */
        fc_sparse sp;    /* V_SPARSE: its arrays owned by the build's scope */
    };
};

typedef struct fcf_builder {
    fc_program *prog;
    fc_ctx *ctx;
    fcf_arena arena;
    fcf_value *vars;
    fc_array *const *inputs;
} fcf_builder;

static fc_status berr(fcf_builder *b, const fcf_expr *e, fc_status st, const char *fmt, ...)
    FCG_PRINTF(4, 5);
static fc_status berr(fcf_builder *b, const fcf_expr *e, fc_status st, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return fcg_error(b->ctx, st, "%s:%d:%d: %s", b->prog->name, e->line, e->col, msg);
}

static fc_status bnomem(fcf_builder *b) {
    return fcg_error(b->ctx, FC_ERR_NOMEM, "%s: out of memory while building", b->prog->name);
}

/* Takes an API result: on a poisoned array, prefixes the op's message with e's position. */
static fc_status bcheck(fcf_builder *b, const fcf_expr *e, fc_array *r, fcf_value *out) {
    fc_status st = fc_array_status(r);
    if (st == FC_OK) {
        out->kind = V_ARRAY;
        out->arr = r;
        return FC_OK;
    }
    char msg[FCG_ERRMSG_MAX];
    const char *m = r ? fc_array_errmsg(r) : NULL;
    if (!m || !*m) m = fc_errmsg(b->ctx);
    snprintf(msg, sizeof msg, "%s", m);
    return fcg_error(b->ctx, st, "%s:%d:%d: %s", b->prog->name, e->line, e->col, msg);
}

static const char *vkind_name(const fcf_value *v) {
    switch (v->kind) {
    case V_ARRAY: return "an array";
    case V_INT: return "an integer";
    case V_FLOAT: return "a float";
    case V_COMPLEX: return "a complex number";
    case V_BOOL: return "a bool";
    case V_NONE: return "None";
    case V_STR: return "a string";
    case V_DTYPE: return "a dtype";
    case V_LIST: return "a list";
    case V_ELLIPSIS: return "an Ellipsis";
    case V_KERNEL: return "a kernel";
    case V_SPARSE: return "a sparse matrix";
    }
    return "a value";
}

static fc_status to_array(fcf_builder *b, const fcf_expr *e, const fcf_value *v, fc_array **out) {
    fc_array *r;
    switch (v->kind) {
    case V_ARRAY: *out = v->arr; return FC_OK;
    case V_INT: r = fc_i128(b->ctx, (int64_t)(v->i >> 64), (uint64_t)v->i); break;
    case V_FLOAT: r = fc_f64(b->ctx, v->f); break;
    case V_COMPLEX: r = fc_c128(b->ctx, v->c[0], v->c[1]); break;
    case V_BOOL: r = fc_bool(b->ctx, v->b); break;
    case V_SPARSE:
        return berr(b, e, FC_ERR_UNSUPPORTED, "expected an array, found a sparse matrix (a "
                    "sparse matrix takes @, +, -, * by a scalar and its methods; "
                    "x.todense() is its dense array)");
    default: return berr(b, e, FC_ERR_INVALID, "expected an array, found %s", vkind_name(v));
    }
    fcf_value tmp;
    fc_status st = bcheck(b, e, r, &tmp);
    if (st == FC_OK) *out = tmp.arr;
    return st;
}

static fc_status to_int(fcf_builder *b, const fcf_expr *e, const fcf_value *v, const char *what,
                        int64_t *out) {
    if (v->kind != V_INT || v->i < INT64_MIN || v->i > INT64_MAX)
        return berr(b, e, FC_ERR_INVALID, "%s must be an integer, found %s", what,
                    v->kind == V_INT ? "one out of range" : vkind_name(v));
    *out = (int64_t)v->i;
    return FC_OK;
}

static fc_status to_small_int(fcf_builder *b, const fcf_expr *e, const fcf_value *v,
                              const char *what, int *out) {
    int64_t x = 0;
    fc_status st = to_int(b, e, v, what, &x);
    if (st != FC_OK) return st;
    if (x < INT_MIN / 2 || x > INT_MAX / 2)
        return berr(b, e, FC_ERR_INVALID, "%s %lld is out of range", what, (long long)x);
    *out = (int)x;
    return FC_OK;
}

static fc_status to_bool(fcf_builder *b, const fcf_expr *e, const fcf_value *v, const char *what,
                         bool *out) {
    if (v->kind == V_BOOL) *out = v->b;
    else if (v->kind == V_INT && (v->i == 0 || v->i == 1)) *out = v->i == 1;
    else return berr(b, e, FC_ERR_INVALID, "%s must be True or False, found %s", what, vkind_name(v));
    return FC_OK;
}

static fc_status to_double(fcf_builder *b, const fcf_expr *e, const fcf_value *v,
                           const char *what, double *out) {
    switch (v->kind) {
    case V_INT: *out = (double)v->i; return FC_OK;
    case V_FLOAT: *out = v->f; return FC_OK;
    case V_BOOL: *out = v->b ? 1.0 : 0.0; return FC_OK;
    default:
        return berr(b, e, FC_ERR_INVALID, "%s must be a number, found %s", what, vkind_name(v));
    }
}

static fc_status to_dtype(fcf_builder *b, const fcf_expr *e, const fcf_value *v, fc_dtype *out) {
    if (v->kind == V_DTYPE) {
        *out = v->dt;
        return FC_OK;
    }
    if (v->kind == V_STR && dtype_lookup(v->s, strlen(v->s), out)) return FC_OK;
    return berr(b, e, FC_ERR_INVALID, "expected a dtype, found %s", vkind_name(v));
}

/* A shape: a list of integers, or one integer. */
static fc_status to_shape(fcf_builder *b, const fcf_expr *e, const fcf_value *v, fc_shape *out) {
    memset(out, 0, sizeof *out);
    if (v->kind == V_INT) {
        out->ndim = 1;
        return to_int(b, e, v, "a shape's extent", &out->dim[0]);
    }
    if (v->kind != V_LIST)
        return berr(b, e, FC_ERR_INVALID, "expected a shape (a list of integers), found %s",
                    vkind_name(v));
    if (v->list.n > FC_MAX_DIMS)
        return berr(b, e, FC_ERR_SHAPE, "a shape has at most %d dimensions, found %d",
                    FC_MAX_DIMS, v->list.n);
    out->ndim = v->list.n;
    for (int i = 0; i < v->list.n; i++) {
        fc_status st = to_int(b, e, &v->list.items[i], "a shape's extent", &out->dim[i]);
        if (st != FC_OK) return st;
    }
    return FC_OK;
}

/* Axes: None (every axis), an integer, or a list of integers. */
static fc_status to_axes(fcf_builder *b, const fcf_expr *e, const fcf_value *v, fc_axes *out) {
    memset(out, 0, sizeof *out);
    if (!v || v->kind == V_NONE) {
        out->n = -1;
        return FC_OK;
    }
    if (v->kind == V_INT) {
        out->n = 1;
        return to_small_int(b, e, v, "axis", &out->axis[0]);
    }
    if (v->kind != V_LIST)
        return berr(b, e, FC_ERR_INVALID, "axis must be None, an integer or a list, found %s",
                    vkind_name(v));
    if (v->list.n > FC_MAX_DIMS)
        return berr(b, e, FC_ERR_AXIS, "at most %d axes, found %d", FC_MAX_DIMS, v->list.n);
    out->n = v->list.n;
    for (int i = 0; i < v->list.n; i++) {
        fc_status st = to_small_int(b, e, &v->list.items[i], "axis", &out->axis[i]);
        if (st != FC_OK) return st;
    }
    return FC_OK;
}

static fc_status eval(fcf_builder *b, const fcf_expr *e, fcf_value *out);

/* Evaluates argument k of a call, or gives `dflt` when it was not passed. */
static fc_status eval_arg(fcf_builder *b, const fcf_expr *call, int k, fcf_value *out,
                          fcf_vkind dflt) {
    const fcf_expr *a = call->call.args[k];
    if (a) return eval(b, a, out);
    memset(out, 0, sizeof *out);
    out->kind = dflt;
    return FC_OK;
}

static const fcf_expr *arg_pos(const fcf_expr *call, int k) {
    return call->call.args[k] ? call->call.args[k] : call;
}

/* A method's receiver must be an array: x.sum() of a number or a list is an error, where
 * sum(3) would take 3 as a weak scalar. A sparse matrix takes SciPy's few (fcf_method's
 * sparse), and the sparse-only ones take nothing else. */
static fc_status check_receiver(fcf_builder *b, const fcf_expr *at, const fcf_method *m,
                                const fcf_value *v) {
    const char *what = method_is_attr(m) ? "attribute" : "method";
    if (method_sparse_only(m))
        return v->kind == V_SPARSE ? FC_OK
                                   : berr(b, at, FC_ERR_INVALID, "%s '%s' needs a sparse matrix, "
                                          "found %s", what, m->name, vkind_name(v));
    if (v->kind == V_ARRAY || (v->kind == V_SPARSE && m->sparse == SPM_OK)) return FC_OK;
    if (v->kind == V_SPARSE)
        return berr(b, at, FC_ERR_UNSUPPORTED, "%s '%s' is not supported for a sparse matrix "
                    "(x.todense() is its dense array)", what, m->name);
    return berr(b, at, FC_ERR_INVALID, "%s '%s' needs an array, found %s", what, m->name,
                vkind_name(v));
}

static fc_status eval_array_arg(fcf_builder *b, const fcf_expr *call, int k, fc_array **out) {
    fcf_value v;
    fc_status st = eval(b, call->call.args[k], &v);
    if (st != FC_OK) return st;
    if (k == 0 && call->call.method &&
        (st = check_receiver(b, call, call->call.method, &v)) != FC_OK)
        return st;
    if (v.kind == V_SPARSE)
        return berr(b, call->call.args[k], FC_ERR_UNSUPPORTED, "%s() does not take a sparse "
                    "matrix (x.todense() is its dense array)",
                    call->call.fn ? call->call.fn->name : fcg_ops[call->call.op].pyname);
    return to_array(b, call->call.args[k], &v, out);
}

static fc_status eval_array_list(fcf_builder *b, const fcf_expr *call, fc_array ***arrays,
                                 int *n) {
    fcf_value v;
    const fcf_expr *pos = arg_pos(call, 0);
    fc_status st = eval(b, call->call.args[0], &v);
    if (st != FC_OK) return st;
    if (v.kind != V_LIST || v.list.n == 0)
        return berr(b, pos, FC_ERR_INVALID, "expected a non-empty list of arrays, found %s",
                    v.kind == V_LIST ? "an empty list" : vkind_name(&v));
    fc_array **arr = arena_alloc(&b->arena, sizeof(fc_array *) * (size_t)v.list.n);
    if (!arr) return bnomem(b);
    for (int i = 0; i < v.list.n; i++) {
        st = to_array(b, pos, &v.list.items[i], &arr[i]);
        if (st != FC_OK) return st;
    }
    *arrays = arr;
    *n = v.list.n;
    return FC_OK;
}

/* pad_width: w, [b, a], or [[b, a], ...] per axis. */
static fc_status to_pad_widths(fcf_builder *b, const fcf_expr *e, const fcf_value *v,
                               int64_t (*w)[2], int *n) {
    if (v->kind == V_INT) {
        *n = 1;
        fc_status st = to_int(b, e, v, "pad width", &w[0][0]);
        w[0][1] = w[0][0];
        return st;
    }
    if (v->kind != V_LIST || v->list.n == 0)
        return berr(b, e, FC_ERR_INVALID,
                    "pad_width must be an integer, [before, after] or a list of them");
    if (v->list.items[0].kind != V_LIST) {
        if (v->list.n != 2)
            return berr(b, e, FC_ERR_INVALID, "pad_width [before, after] needs 2 integers");
        *n = 1;
        fc_status st = to_int(b, e, &v->list.items[0], "pad width", &w[0][0]);
        if (st == FC_OK) st = to_int(b, e, &v->list.items[1], "pad width", &w[0][1]);
        return st;
    }
    if (v->list.n > FC_MAX_DIMS)
        return berr(b, e, FC_ERR_INVALID, "pad_width has more than %d entries", FC_MAX_DIMS);
    *n = v->list.n;
    for (int i = 0; i < v->list.n; i++) {
        const fcf_value *p = &v->list.items[i];
        if (p->kind != V_LIST || p->list.n != 2)
            return berr(b, e, FC_ERR_INVALID, "each pad_width entry must be [before, after]");
        fc_status st = to_int(b, e, &p->list.items[0], "pad width", &w[i][0]);
        if (st == FC_OK) st = to_int(b, e, &p->list.items[1], "pad width", &w[i][1]);
        if (st != FC_OK) return st;
    }
    return FC_OK;
}

/* The dtype NumPy infers from a Python scalar fill value. */
static fc_dtype scalar_dtype(const fcf_value *v) {
    switch (v->kind) {
    case V_BOOL: return FC_BOOL;
    case V_INT: return v->i > INT64_MAX ? FC_U64 : FC_I64;
    case V_COMPLEX: return FC_C128;
    default: return FC_F64;
    }
}

/* full() of a 64-bit integer that a double cannot hold (fc_full takes a double): the same
 * canonical nodes fc_full makes, a 0-d CONST holding the value's bits, broadcast to shape. */
static fc_status full_exact_int(fcf_builder *b, const fcf_expr *e, fc_dtype dtype, fc_shape shape,
                                const fcf_value *fill, fcf_value *out) {
    char vs[FCG_PYINT_STR];
    if ((dtype != FC_U64 && dtype != FC_I64) || !fcg_pyint_fits(fill->i, dtype))
        return berr(b, e, FC_ERR_INVALID, "full: value %s is not representable in %s",
                    fcg_pyint_str(fill->i, vs), fc_dtype_name(dtype));
    fcg_params p;
    memset(&p, 0, sizeof p);
    p.ival = (int64_t)(uint64_t)fill->i; /* u64 as its bits */
    fc_array *c = fcg_make(b->ctx, FCG_OP_CONST, dtype, dtype, false, 0, NULL, 0, NULL, &p);
    fc_status st = bcheck(b, e, c, out);
    if (st != FC_OK || shape.ndim == 0) return st;
    return bcheck(b, e, fc_broadcast_to(c, shape), out);
}

static fc_status eval_full(fcf_builder *b, const fcf_expr *e, fc_dtype dtype, fc_shape shape,
                           const fcf_value *fill, const fcf_expr *fill_pos, fcf_value *out) {
    if (fill->kind == V_COMPLEX)
        return bcheck(b, e, fc_full_complex(b->ctx, dtype, shape, fill->c[0], fill->c[1]), out);
    if (fill->kind == V_INT && fcg_is_int(dtype) &&
        (fill->i > (INT64_C(1) << 53) || fill->i < -(INT64_C(1) << 53)))
        return full_exact_int(b, e, dtype, shape, fill, out);
    double value;
    fc_status st = to_double(b, fill_pos, fill, "fill_value", &value);
    if (st != FC_OK) return st;
    return bcheck(b, e, fc_full(b->ctx, dtype, shape, value), out);
}

/* ---- composite functions (graph/composite.c) -------------------------------------------- */

/* One axis, or None (FC_AXIS_NONE: the flattened array). */
static fc_status to_axis_or_none(fcf_builder *b, const fcf_expr *e, const fcf_value *v,
                                 int *out) {
    if (v->kind == V_NONE) {
        *out = FC_AXIS_NONE;
        return FC_OK;
    }
    return to_small_int(b, e, v, "axis", out);
}

/* An integer or a list of at most `cap` integers (reps, shift, indices). */
static fc_status to_int_list(fcf_builder *b, const fcf_expr *e, const fcf_value *v,
                             const char *what, int cap, int64_t *out, int *n) {
    if (v->kind != V_LIST) {
        *n = 1;
        return to_int(b, e, v, what, &out[0]);
    }
    if (v->list.n > cap)
        return berr(b, e, FC_ERR_INVALID, "%s has %d entries (at most %d)", what, v->list.n, cap);
    *n = v->list.n;
    for (int i = 0; i < v->list.n; i++) {
        fc_status st = to_int(b, e, &v->list.items[i], what, &out[i]);
        if (st != FC_OK) return st;
    }
    return FC_OK;
}

/* The results of a function with several (meshgrid, split) as a list of arrays. */
static fc_status array_list(fcf_builder *b, const fcf_expr *e, fc_array **arrays, int n,
                            fc_status st, fcf_value *out) {
    if (st != FC_OK)
        return arrays[0] ? bcheck(b, e, arrays[0], out) : berr(b, e, st, "%s", fc_errmsg(b->ctx));
    fcf_value *items = arena_alloc(&b->arena, sizeof(fcf_value) * (size_t)n);
    if (!items) return bnomem(b);
    for (int i = 0; i < n; i++) {
        memset(&items[i], 0, sizeof items[i]);
        items[i].kind = V_ARRAY;
        items[i].arr = arrays[i];
    }
    out->kind = V_LIST;
    out->list.n = n;
    out->list.items = items;
    return FC_OK;
}

#define FCP_MAX_SECTIONS (1 << 16) /* split's results are values of the builder's arena */

/* ---- convolution (graph/convolve.c) ----------------------------------------------------- */

/* Argument k as one of the strings of names (n of them, fold of them to a value: SciPy's
 * aliases share one), or dflt when it is absent. */
static fc_status to_choice(fcf_builder *b, const fcf_expr *e, int k, fcf_value *v,
                           const char *what, const char *const *names, int n, int fold,
                           int dflt, int *out) {
    fc_status st = eval_arg(b, e, k, v, V_NONE);
    if (st != FC_OK) return st;
    *out = dflt;
    if (v->kind == V_NONE) return FC_OK;
    for (int i = 0; i < n && v->kind == V_STR; i++)
        if (strcmp(v->s, names[i]) == 0) {
            *out = i / fold;
            return FC_OK;
        }
    char list[200];
    size_t len = 0;
    for (int i = 0; i < n; i++) {
        int w = snprintf(list + len, sizeof list - len, "%s\"%s\"", i ? ", " : "", names[i]);
        if (w > 0 && len + (size_t)w < sizeof list) len += (size_t)w;
    }
    return berr(b, arg_pos(e, k), FC_ERR_VALUE, "%s must be one of %s, found %s", what, list,
                v->kind == V_STR ? v->s : vkind_name(v));
}

/* fillvalue: a number or a complex one */
static fc_status to_fill(fcf_builder *b, const fcf_expr *e, int k, fcf_value *v, double *re,
                         double *im) {
    fc_status st = eval_arg(b, e, k, v, V_NONE);
    *re = *im = 0;
    if (st != FC_OK || v->kind == V_NONE) return st;
    if (v->kind == V_COMPLEX) {
        *re = v->c[0];
        *im = v->c[1];
        return FC_OK;
    }
    return to_double(b, arg_pos(e, k), v, "fillvalue", re);
}

/* An [a, b] pair of integers (stencil2d's shape and origin). */
static fc_status to_pair(fcf_builder *b, const fcf_expr *e, int k, fcf_value *v,
                         const char *what, int64_t *out) {
    fc_status st = eval_arg(b, e, k, v, V_NONE);
    int n = 0;
    if (st == FC_OK) st = to_int_list(b, arg_pos(e, k), v, what, 2, out, &n);
    if (st == FC_OK && n != 2)
        st = berr(b, arg_pos(e, k), FC_ERR_INVALID, "%s must have 2 entries, found %d", what, n);
    return st;
}

static fc_status eval_conv(fcf_builder *b, const fcf_expr *e, fcf_value *v, fcf_value *out) {
    const int op = e->call.fn->op;
    fc_array *x, *y;
    fc_status st;
    if ((st = eval_array_arg(b, e, 0, &x)) != FC_OK) return st;
    if ((st = eval_array_arg(b, e, 1, &y)) != FC_OK) return st;
    int mode, boundary, method;
    double re, im;
    if (op == CV_STENCIL2D) {
        int64_t shape[2], origin[2];
        if ((st = to_pair(b, e, 2, &v[2], "shape", shape)) != FC_OK ||
            (st = to_pair(b, e, 3, &v[3], "origin", origin)) != FC_OK ||
            (st = to_choice(b, e, 4, &v[4], "boundary", fcf_conv_boundaries, 6, 2,
                            FC_CONV_FILL, &boundary)) != FC_OK ||
            (st = to_fill(b, e, 5, &v[5], &re, &im)) != FC_OK)
            return st;
        return bcheck(b, e, fcg_stencil2d(x, y, shape[0], shape[1], origin[0], origin[1],
                                          boundary, re, im), out);
    }
    bool two_d = op == CV_CONVOLVE2D || op == CV_CORRELATE2D;
    int k_method = two_d ? 5 : 3;
    if ((st = to_choice(b, e, 2, &v[2], "mode", fcf_conv_modes, 3, 1,
                        op == CV_CORRELATE ? FC_CONV_VALID : FC_CONV_FULL, &mode)) != FC_OK ||
        (st = to_choice(b, e, k_method, &v[k_method], "method", fcf_conv_methods, 3, 1,
                        FC_CONV_AUTO, &method)) != FC_OK)
        return st;
    if (!two_d) {
        fc_array *(*f)(fc_array *, fc_array *, fc_conv_mode, fc_conv_method) =
            op == CV_CONVOLVE ? fc_convolve : fc_correlate;
        return bcheck(b, e, f(x, y, (fc_conv_mode)mode, (fc_conv_method)method), out);
    }
    if ((st = to_choice(b, e, 3, &v[3], "boundary", fcf_conv_boundaries, 6, 2, FC_CONV_FILL,
                        &boundary)) != FC_OK ||
        (st = to_fill(b, e, 4, &v[4], &re, &im)) != FC_OK)
        return st;
    fc_array *(*f2)(fc_array *, fc_array *, fc_conv_mode, fc_conv_boundary, double, double,
                    fc_conv_method) = op == CV_CONVOLVE2D ? fc_convolve2d : fc_correlate2d;
    return bcheck(b, e, f2(x, y, (fc_conv_mode)mode, (fc_conv_boundary)boundary, re, im,
                           (fc_conv_method)method), out);
}

/* ---- linear algebra (graph/linalg.c) ---------------------------------------------------- */

/* The optional bool argument i (absent: dflt). */
static fc_status bool_arg(fcf_builder *b, const fcf_expr *e, fcf_value *v, int i,
                          const char *what, bool dflt, bool *out) {
    fc_status st = eval_arg(b, e, i, &v[i], V_NONE);
    *out = dflt;
    if (st == FC_OK && e->call.args[i]) st = to_bool(b, arg_pos(e, i), &v[i], what, out);
    return st;
}

/* The optional number argument i: *has false where it is absent or None. */
static fc_status number_arg(fcf_builder *b, const fcf_expr *e, fcf_value *v, int i,
                            const char *what, bool *has, double *out) {
    fc_status st = eval_arg(b, e, i, &v[i], V_NONE);
    *has = st == FC_OK && v[i].kind != V_NONE;
    if (*has) st = to_double(b, arg_pos(e, i), &v[i], what, out);
    return st;
}

/* linalg.svd(a, full_matrices=True, compute_uv=True): [u, s, vh], or s; svd_packed; svdvals */
static fc_status eval_svd(fcf_builder *b, const fcf_expr *e, fcf_value *v, fc_array *x,
                          fcf_value *out) {
    const fcf_func *fn = e->call.fn;
    bool full = true, uv = true;
    fc_status st = FC_OK;
    if (fn->op == LA_SVDVALS) return bcheck(b, e, fc_linalg_svdvals(x), out);
    if ((st = bool_arg(b, e, v, 1, "full_matrices", true, &full)) != FC_OK) return st;
    if (fn->op == LA_SVD_PACKED) return bcheck(b, e, fcg_linalg_svd_packed(x, full), out);
    if ((st = bool_arg(b, e, v, 2, "compute_uv", true, &uv)) != FC_OK) return st;
    fc_array *res[3] = {NULL, NULL, NULL};
    st = fc_linalg_svd(x, full, uv, &res[0], &res[1], &res[2]);
    if (!uv) return bcheck(b, e, res[1], out);
    return array_list(b, e, res, 3, st, out);
}

/* linalg.lstsq(a, b, rcond=None): [x, residuals, rank, s]; linalg.pinv(a, rcond=None,
 * hermitian=False, rtol=None); linalg.matrix_rank(A, tol=None, hermitian=False, rtol=None).
 * pinv's rtol is its rcond by NumPy's newer name (None there: the default 1e-15). */
static fc_status eval_rank_based(fcf_builder *b, const fcf_expr *e, fcf_value *v, fc_array *x,
                                 fcf_value *out) {
    const fcf_func *fn = e->call.fn;
    fc_status st;
    if (fn->op == LA_LSTSQ) {
        fc_array *y, *res[4] = {NULL, NULL, NULL, NULL};
        bool has = false;
        double rcond = 0.0;
        if ((st = eval_array_arg(b, e, 1, &y)) != FC_OK) return st;
        if ((st = number_arg(b, e, v, 2, "rcond", &has, &rcond)) != FC_OK) return st;
        st = fc_linalg_lstsq(x, y, has ? &rcond : NULL, &res[0], &res[1], &res[2], &res[3]);
        return array_list(b, e, res, 4, st, out);
    }
    bool has_tol = false, has_rtol = false, hermitian = false;
    double tol = 0.0, rtol = 0.0;
    const char *what = fn->op == LA_PINV ? "rcond" : "tol";
    if ((st = number_arg(b, e, v, 1, what, &has_tol, &tol)) != FC_OK) return st;
    if ((st = bool_arg(b, e, v, 2, "hermitian", false, &hermitian)) != FC_OK) return st;
    if ((st = number_arg(b, e, v, 3, "rtol", &has_rtol, &rtol)) != FC_OK) return st;
    if (fn->op == LA_MATRIX_RANK)
        return bcheck(b, e, fc_linalg_matrix_rank(x, has_tol ? &tol : NULL,
                                                  has_rtol ? &rtol : NULL, hermitian), out);
    if (has_tol && has_rtol)
        return berr(b, arg_pos(e, 3), FC_ERR_INVALID, "`rtol` and `rcond` can't be both set");
    return bcheck(b, e, fc_linalg_pinv(x, has_tol ? &tol : has_rtol ? &rtol : NULL, hermitian),
                  out);
}

static fc_status eval_linalg(fcf_builder *b, const fcf_expr *e, fcf_value *v, fcf_value *out) {
    const fcf_func *fn = e->call.fn;
    fc_array *x, *y = NULL;
    fc_status st;
    if ((st = eval_array_arg(b, e, 0, &x)) != FC_OK) return st;
    switch (fn->op) {
    case LA_SOLVE:
        if ((st = eval_array_arg(b, e, 1, &y)) != FC_OK) return st;
        return bcheck(b, e, fc_linalg_solve(x, y), out);
    case LA_INV: return bcheck(b, e, fc_linalg_inv(x), out);
    case LA_DET: return bcheck(b, e, fc_linalg_det(x), out);
    case LA_SLOGDET: {
        fc_array *res[2] = {NULL, NULL};
        st = fc_linalg_slogdet(x, &res[0], &res[1]);
        return array_list(b, e, res, 2, st, out);
    }
    case LA_SLOGDET_PACKED: return bcheck(b, e, fcg_linalg_slogdet_packed(x), out);
    case LA_QR:
    case LA_QR_PACKED: {
        int mode = FC_QR_REDUCED;
        if ((st = eval_arg(b, e, 1, &v[1], V_NONE)) != FC_OK) return st;
        if (v[1].kind != V_NONE) {
            mode = -1;
            for (int k = 0; k < 3; k++)
                if (v[1].kind == V_STR && strcmp(v[1].s, fcg_qr_mode_names[k]) == 0) mode = k;
            if (mode < 0)
                return berr(b, arg_pos(e, 1), FC_ERR_INVALID,
                            "qr mode must be \"reduced\", \"complete\" or \"r\"");
        }
        if (fn->op == LA_QR_PACKED) return bcheck(b, e, fcg_linalg_qr_packed(x, mode), out);
        fc_array *res[2] = {NULL, NULL};
        st = fc_linalg_qr(x, (fc_qr_mode)mode, &res[0], &res[1]);
        if (mode == FC_QR_R) return bcheck(b, e, res[1], out);
        return array_list(b, e, res, 2, st, out);
    }
    case LA_EIGH:
    case LA_EIGH_PACKED:
    case LA_EIGVALSH: {
        bool upper = false;
        if ((st = eval_arg(b, e, 1, &v[1], V_NONE)) != FC_OK) return st;
        if (v[1].kind != V_NONE) {
            bool lower = v[1].kind == V_STR && strcmp(v[1].s, "L") == 0;
            upper = v[1].kind == V_STR && strcmp(v[1].s, "U") == 0;
            if (!lower && !upper)
                return berr(b, arg_pos(e, 1), FC_ERR_INVALID, "UPLO must be \"L\" or \"U\"");
        }
        if (fn->op == LA_EIGVALSH) return bcheck(b, e, fc_linalg_eigvalsh(x, upper), out);
        if (fn->op == LA_EIGH_PACKED) return bcheck(b, e, fcg_linalg_eigh_packed(x, upper), out);
        fc_array *res[2] = {NULL, NULL};
        st = fc_linalg_eigh(x, upper, &res[0], &res[1]);
        return array_list(b, e, res, 2, st, out);
    }
    case LA_SVD:
    case LA_SVD_PACKED:
    case LA_SVDVALS: return eval_svd(b, e, v, x, out);
    case LA_LSTSQ:
    case LA_PINV:
    case LA_MATRIX_RANK: return eval_rank_based(b, e, v, x, out);
    default: {
        bool upper = false;
        if ((st = bool_arg(b, e, v, 1, "upper", false, &upper)) != FC_OK) return st;
        return bcheck(b, e, fc_linalg_cholesky(x, upper), out);
    }
    }
}

/* ---- contractions (graph/contract.c) ---------------------------------------------------- */

/* tensordot's axes: an integer, or a pair whose items are each an axis or a list of axes. */
static fc_status eval_tensordot(fcf_builder *b, const fcf_expr *e, const fcf_value *axes,
                                fc_array *x, fc_array *y, fcf_value *out) {
    const fcf_expr *pos = arg_pos(e, 2);
    fc_status st;
    if (axes->kind == V_NONE) return bcheck(b, e, fc_tensordot(x, y, 2), out);
    if (axes->kind != V_LIST) {
        int n;
        if ((st = to_small_int(b, pos, axes, "axes", &n)) != FC_OK) return st;
        return bcheck(b, e, fc_tensordot(x, y, n), out);
    }
    if (axes->list.n != 2)
        return berr(b, pos, FC_ERR_INVALID, "tensordot: axes must be an integer or a pair of "
                    "axis lists, found a list of %d", axes->list.n);
    int ax[2][FC_MAX_DIMS], n[2];
    for (int k = 0; k < 2; k++) {
        const fcf_value *item = &axes->list.items[k];
        bool list = item->kind == V_LIST;
        n[k] = list ? item->list.n : 1;
        if (n[k] > FC_MAX_DIMS)
            return berr(b, pos, FC_ERR_AXIS, "tensordot: %d axes (at most %d)", n[k],
                        FC_MAX_DIMS);
        for (int i = 0; i < n[k]; i++)
            if ((st = to_small_int(b, pos, list ? &item->list.items[i] : item, "axis",
                                   &ax[k][i])) != FC_OK)
                return st;
    }
    if (n[0] != n[1])
        return berr(b, pos, FC_ERR_SHAPE, "tensordot: shape-mismatch for sum: %d axes of a, %d "
                    "of b", n[0], n[1]);
    return bcheck(b, e, fc_tensordot_axes(x, y, n[0], ax[0], ax[1]), out);
}

static fc_status eval_contract(fcf_builder *b, const fcf_expr *e, fcf_value *v,
                               fcf_value *out) {
    const fcf_func *fn = e->call.fn;
    fc_status st;
    for (int k = 0; k < e->call.n; k++)
        if ((st = eval_arg(b, e, k, &v[k], V_NONE)) != FC_OK) return st;
    if (e->call.method && (st = check_receiver(b, e, e->call.method, &v[0])) != FC_OK) return st;
    if (fn->op == CT_EINSUM) {
        if (v[0].kind != V_STR)
            return berr(b, arg_pos(e, 0), FC_ERR_INVALID, "einsum: subscripts must be a string, "
                        "found %s", vkind_name(&v[0]));
        fc_array *ops[FCP_MAX_PARAMS];
        int n = 0;
        while (n + 1 < e->call.n && v[n + 1].kind != V_NONE) {
            if ((st = to_array(b, arg_pos(e, n + 1), &v[n + 1], &ops[n])) != FC_OK) return st;
            n++;
        }
        for (int k = n + 1; k < e->call.n; k++)
            if (v[k].kind != V_NONE)
                return berr(b, arg_pos(e, k), FC_ERR_INVALID, "einsum: x%d given without x%d",
                            k, n + 1);
        return bcheck(b, e, fc_einsum(b->ctx, v[0].s, ops, n), out);
    }
    fc_array *x, *y;
    if ((st = to_array(b, arg_pos(e, 0), &v[0], &x)) != FC_OK) return st;
    if (fn->op == CT_MATRIX_POWER) {
        int64_t n = 0;
        if ((st = to_int(b, arg_pos(e, 1), &v[1], "n", &n)) != FC_OK) return st;
        return bcheck(b, e, fc_matrix_power(x, n), out);
    }
    if ((st = to_array(b, arg_pos(e, 1), &v[1], &y)) != FC_OK) return st;
    if (fn->op == CT_TENSORDOT) return eval_tensordot(b, e, &v[2], x, y, out);
    fc_array *(*const pair[])(fc_array *, fc_array *) = {
        [CT_DOT] = fc_dot, [CT_VDOT] = fc_vdot, [CT_INNER] = fc_inner, [CT_OUTER] = fc_outer,
        [CT_KRON] = fc_kron};
    return bcheck(b, e, pair[fn->op](x, y), out);
}

static fc_status eval_composite(fcf_builder *b, const fcf_expr *e, fcf_value *v,
                                fcf_value *out) {
    fc_ctx *ctx = b->ctx;
    const fcf_func *fn = e->call.fn;
    int id = fn->op;
    fc_status st;
    fc_array *x = NULL, *y = NULL;
    for (int k = 0; k < e->call.n; k++)
        if ((st = eval_arg(b, e, k, &v[k], V_NONE)) != FC_OK) return st;
    if (e->call.method && (st = check_receiver(b, e, e->call.method, &v[0])) != FC_OK) return st;
    /* Functions whose first argument (two, for the binary ones) is an array. */
    if (id != CP_IDENTITY && id != CP_MESHGRID &&
        (st = to_array(b, arg_pos(e, 0), &v[0], &x)) != FC_OK)
        return st;
    if ((id == CP_ISCLOSE || id == CP_ALLCLOSE || id == CP_HEAVISIDE || id == CP_FLOAT_POWER) &&
        (st = to_array(b, arg_pos(e, 1), &v[1], &y)) != FC_OK)
        return st;
    switch (id) {
    case CP_IDENTITY: {
        int64_t n = 0;
        fc_dtype dt = FC_F64;
        if ((st = to_int(b, arg_pos(e, 0), &v[0], "n", &n)) != FC_OK) return st;
        if (v[1].kind != V_NONE && (st = to_dtype(b, arg_pos(e, 1), &v[1], &dt)) != FC_OK)
            return st;
        return bcheck(b, e, fc_identity(ctx, dt, n), out);
    }
    case CP_MESHGRID: {
        fc_array *in[4], *res[4] = {NULL, NULL, NULL, NULL};
        int n = 0;
        while (n < 4 && v[n].kind != V_NONE) {
            if ((st = to_array(b, arg_pos(e, n), &v[n], &in[n])) != FC_OK) return st;
            n++;
        }
        for (int k = n; k < 4; k++)
            if (v[k].kind != V_NONE)
                return berr(b, arg_pos(e, k), FC_ERR_INVALID, "meshgrid: x%d given without x%d",
                            k + 1, n + 1);
        bool ij = false;
        if (v[4].kind != V_NONE) {
            if (v[4].kind != V_STR || (strcmp(v[4].s, "xy") != 0 && strcmp(v[4].s, "ij") != 0))
                return berr(b, arg_pos(e, 4), FC_ERR_INVALID,
                            "meshgrid: indexing must be \"xy\" or \"ij\"");
            ij = v[4].s[0] == 'i';
        }
        return array_list(b, e, res, n, fc_meshgrid(ctx, in, n, ij, res), out);
    }
    case CP_TILE: {
        int64_t reps[FC_MAX_DIMS];
        int n;
        if ((st = to_int_list(b, arg_pos(e, 1), &v[1], "reps", FC_MAX_DIMS, reps, &n)) != FC_OK)
            return st;
        return bcheck(b, e, fc_tile(x, n, reps), out);
    }
    case CP_REPEAT: {
        int64_t r = 0;
        int axis;
        if (v[1].kind == V_LIST)
            return berr(b, arg_pos(e, 1), FC_ERR_UNSUPPORTED,
                        "repeat: repeats must be one integer (a count per element is not "
                        "supported)");
        if ((st = to_int(b, arg_pos(e, 1), &v[1], "repeats", &r)) != FC_OK ||
            (st = to_axis_or_none(b, arg_pos(e, 2), &v[2], &axis)) != FC_OK)
            return st;
        return bcheck(b, e, fc_repeat(x, r, axis), out);
    }
    case CP_ROLL: {
        /* NumPy broadcasts shift against axis; axis None rolls the flattened array by each
         * shift in turn */
        int64_t shift[FC_MAX_DIMS];
        int ns, na = 1, axes[FC_MAX_DIMS];
        if ((st = to_int_list(b, arg_pos(e, 1), &v[1], "shift", FC_MAX_DIMS, shift, &ns)) != FC_OK)
            return st;
        if (v[2].kind == V_NONE) {
            out->kind = V_ARRAY;
            out->arr = x;
            for (int i = 0; i < ns; i++)
                if ((st = bcheck(b, e, fc_roll(out->arr, shift[i], FC_AXIS_NONE), out)) != FC_OK)
                    return st;
            return FC_OK;
        }
        if (v[2].kind == V_LIST) {
            na = v[2].list.n;
            if (na > FC_MAX_DIMS)
                return berr(b, arg_pos(e, 2), FC_ERR_AXIS, "roll: %d axes (at most %d)", na,
                            FC_MAX_DIMS);
        }
        for (int i = 0; i < na; i++)
            if ((st = to_small_int(b, arg_pos(e, 2), v[2].kind == V_LIST ? &v[2].list.items[i]
                                                                          : &v[2],
                                   "axis", &axes[i])) != FC_OK)
                return st;
        if (ns != na && ns != 1 && na != 1)
            return berr(b, arg_pos(e, 2), FC_ERR_INVALID, "roll: %d shifts and %d axes do not "
                        "broadcast", ns, na);
        int n = ns > na ? ns : na;
        int64_t shifts[FC_MAX_DIMS];
        int ax[FC_MAX_DIMS];
        for (int i = 0; i < n; i++) {
            shifts[i] = shift[ns == 1 ? 0 : i];
            ax[i] = axes[na == 1 ? 0 : i];
        }
        if (v[1].kind != V_LIST && v[2].kind != V_LIST)
            return bcheck(b, e, fc_roll(x, shifts[0], ax[0]), out);
        return bcheck(b, e, fc_roll_axes(x, n, shifts, ax), out);
    }
    case CP_SPLIT: {
        int axis = 0;
        if (v[2].kind != V_NONE &&
            (st = to_small_int(b, arg_pos(e, 2), &v[2], "axis", &axis)) != FC_OK)
            return st;
        if (v[1].kind == V_LIST) {
            int n = v[1].list.n;
            if (n >= FCP_MAX_SECTIONS)
                return berr(b, arg_pos(e, 1), FC_ERR_INVALID, "split: %d indices (at most %d)",
                            n, FCP_MAX_SECTIONS - 1);
            int64_t *idx = arena_alloc(&b->arena, sizeof(int64_t) * (size_t)(n + 1));
            fc_array **res = arena_zalloc(&b->arena, sizeof(fc_array *) * (size_t)(n + 1));
            if (!idx || !res) return bnomem(b);
            for (int i = 0; i < n; i++)
                if ((st = to_int(b, arg_pos(e, 1), &v[1].list.items[i], "an index", &idx[i])) !=
                    FC_OK)
                    return st;
            return array_list(b, e, res, n + 1, fc_split_at(x, n, idx, axis, res), out);
        }
        int64_t sections = 0;
        if ((st = to_int(b, arg_pos(e, 1), &v[1], "indices_or_sections", &sections)) != FC_OK)
            return st;
        if (sections < 1 || sections > FCP_MAX_SECTIONS)
            return berr(b, arg_pos(e, 1), FC_ERR_INVALID,
                        "split: the number of sections %lld must be in 1..%d",
                        (long long)sections, FCP_MAX_SECTIONS);
        fc_array **res = arena_zalloc(&b->arena, sizeof(fc_array *) * (size_t)sections);
        if (!res) return bnomem(b);
        return array_list(b, e, res, (int)sections, fc_split(x, sections, axis, res), out);
    }
    case CP_TRIL:
    case CP_TRIU:
    case CP_DIAG: {
        int64_t k = 0;
        if (v[1].kind != V_NONE && (st = to_int(b, arg_pos(e, 1), &v[1], "k", &k)) != FC_OK)
            return st;
        return bcheck(b, e, id == CP_TRIL ? fc_tril(x, k) : id == CP_TRIU ? fc_triu(x, k)
                                                                        : fc_diag(x, k), out);
    }
    case CP_DIAGONAL:
    case CP_TRACE: {
        int64_t offset = 0;
        int axis1 = 0, axis2 = 1;
        if ((v[1].kind != V_NONE &&
             (st = to_int(b, arg_pos(e, 1), &v[1], "offset", &offset)) != FC_OK) ||
            (v[2].kind != V_NONE &&
             (st = to_small_int(b, arg_pos(e, 2), &v[2], "axis1", &axis1)) != FC_OK) ||
            (v[3].kind != V_NONE &&
             (st = to_small_int(b, arg_pos(e, 3), &v[3], "axis2", &axis2)) != FC_OK))
            return st;
        return bcheck(b, e, id == CP_DIAGONAL ? fc_diagonal(x, offset, axis1, axis2)
                                              : fc_trace(x, offset, axis1, axis2), out);
    }
    case CP_NANSUM: case CP_NANPROD: case CP_NANMEAN: case CP_NANMAX: case CP_NANMIN:
    case CP_LOGSUMEXP: case CP_NANARGMAX: case CP_NANARGMIN: {
        int keep_k = id == CP_LOGSUMEXP ? 3 : 2;
        bool keep = false;
        if (v[keep_k].kind != V_NONE &&
            (st = to_bool(b, arg_pos(e, keep_k), &v[keep_k], "keepdims", &keep)) != FC_OK)
            return st;
        if (id == CP_NANARGMAX || id == CP_NANARGMIN) {
            int axis;
            if ((st = to_axis_or_none(b, arg_pos(e, 1), &v[1], &axis)) != FC_OK) return st;
            return bcheck(b, e, id == CP_NANARGMAX ? fc_nanargmax(x, axis, keep)
                                                   : fc_nanargmin(x, axis, keep), out);
        }
        fc_axes axes;
        if ((st = to_axes(b, arg_pos(e, 1), &v[1], &axes)) != FC_OK) return st;
        if (id == CP_LOGSUMEXP) {
            bool sign = false;
            if (v[2].kind != V_NONE)
                return berr(b, arg_pos(e, 2), FC_ERR_UNSUPPORTED,
                            "logsumexp: b (weights) is not supported; b must be None");
            if (v[4].kind != V_NONE &&
                (st = to_bool(b, arg_pos(e, 4), &v[4], "return_sign", &sign)) != FC_OK)
                return st;
            if (sign)
                return berr(b, arg_pos(e, 4), FC_ERR_UNSUPPORTED,
                            "logsumexp: return_sign=True is not supported");
            return bcheck(b, e, fc_logsumexp(x, axes, keep), out);
        }
        fc_array *(*const red[])(fc_array *, fc_axes, bool) = {
            [CP_NANSUM] = fc_nansum, [CP_NANPROD] = fc_nanprod, [CP_NANMEAN] = fc_nanmean,
            [CP_NANMAX] = fc_nanmax, [CP_NANMIN] = fc_nanmin};
        return bcheck(b, e, red[id](x, axes, keep), out);
    }
    case CP_ISCLOSE:
    case CP_ALLCLOSE: {
        double rtol = 1e-5, atol = 1e-8;
        bool equal_nan = false;
        if ((v[2].kind != V_NONE &&
             (st = to_double(b, arg_pos(e, 2), &v[2], "rtol", &rtol)) != FC_OK) ||
            (v[3].kind != V_NONE &&
             (st = to_double(b, arg_pos(e, 3), &v[3], "atol", &atol)) != FC_OK) ||
            (v[4].kind != V_NONE &&
             (st = to_bool(b, arg_pos(e, 4), &v[4], "equal_nan", &equal_nan)) != FC_OK))
            return st;
        return bcheck(b, e, id == CP_ISCLOSE ? fc_isclose(x, y, rtol, atol, equal_nan)
                                             : fc_allclose(x, y, rtol, atol, equal_nan), out);
    }
    case CP_ROUND: {
        int decimals = 0;
        if (v[1].kind != V_NONE &&
            (st = to_small_int(b, arg_pos(e, 1), &v[1], "decimals", &decimals)) != FC_OK)
            return st;
        return bcheck(b, e, fc_round(x, decimals), out);
    }
    case CP_NAN_TO_NUM: {
        /* copy is accepted and means nothing: arrays are values */
        double nan = 0.0, val[2];
        const double *lim[2] = {NULL, NULL};
        bool copy;
        if ((v[1].kind != V_NONE &&
             (st = to_bool(b, arg_pos(e, 1), &v[1], "copy", &copy)) != FC_OK) ||
            (v[2].kind != V_NONE &&
             (st = to_double(b, arg_pos(e, 2), &v[2], "nan", &nan)) != FC_OK))
            return st;
        for (int k = 0; k < 2; k++) {
            if (v[3 + k].kind == V_NONE) continue;
            if ((st = to_double(b, arg_pos(e, 3 + k), &v[3 + k], k ? "neginf" : "posinf",
                                &val[k])) != FC_OK)
                return st;
            lim[k] = &val[k];
        }
        return bcheck(b, e, fc_nan_to_num(x, nan, lim[0], lim[1]), out);
    }
    case CP_HEAVISIDE: return bcheck(b, e, fc_heaviside(x, y), out);
    case CP_FLOAT_POWER: return bcheck(b, e, fc_float_power(x, y), out);
    case CP_DEG2RAD: return bcheck(b, e, fc_deg2rad(x), out);
    case CP_RAD2DEG: return bcheck(b, e, fc_rad2deg(x), out);
    case CP_SINC: return bcheck(b, e, fc_sinc(x), out);
    case CP_POSITIVE: return bcheck(b, e, fc_positive(x), out);
    case CP_FABS: return bcheck(b, e, fc_fabs(x), out);
    }
    return berr(b, e, FC_ERR_INVALID, "internal: unhandled composite %s", fn->name);
}

/* ElementwiseKernel(...) / ReductionKernel(...): the definition (graph/user.c parses it; its
 * message, which names the kernel and the parameter, is passed on at the declaration). */
static fc_status eval_kernel_decl(fcf_builder *b, const fcf_expr *e, fcf_value *v,
                                  fcf_value *out) {
    const fcf_func *fn = e->call.fn;
    const char *text[FCP_MAX_PARAMS] = {NULL};
    fc_status st;
    for (int k = 0; k < e->call.n; k++) {
        if ((st = eval_arg(b, e, k, &v[k], V_NONE)) != FC_OK) return st;
        bool reduce_type = fn->kind == FK_RED_KERNEL && k == 7;
        if (v[k].kind == V_STR) text[k] = v[k].s;
        else if (reduce_type && v[k].kind == V_DTYPE) text[k] = fc_dtype_name(v[k].dt);
        else if (!(reduce_type && v[k].kind == V_NONE))
            return berr(b, arg_pos(e, k), FC_ERR_INVALID, "%s(): %s must be a string, found %s",
                        fn->name, fn->params[k], vkind_name(&v[k]));
    }
    fc_kernel *k = NULL;
    st = fn->kind == FK_EW_KERNEL
             ? fc_elementwise_kernel(b->ctx, text[0], text[1], text[2], text[3], &k)
             : fc_reduction_kernel(b->ctx, text[0], text[1], text[2], text[3], text[4], text[5],
                                   text[6], text[7], &k);
    if (st != FC_OK) return berr(b, e, st, "%s", fc_errmsg(b->ctx));
    memset(out, 0, sizeof *out);
    out->kind = V_KERNEL;
    out->kern = k;
    return FC_OK;
}

/* A kernel call giving nout values into outs (1 in an expression; a statement's names when
 * it unpacks). The kernel checks the arguments (their count, dtypes and shapes) and its
 * message, which names it, is passed on at the call. */
static fc_status eval_kernel_call(fcf_builder *b, const fcf_expr *e, int nout, fcf_value *outs) {
    const fcf_value *kv = &b->vars[e->kcall.var];
    if (kv->kind != V_KERNEL) /* the parser only makes calls of kernel variables */
        return berr(b, e, FC_ERR_INVALID, "internal: '%s' holds %s, not a kernel",
                    b->prog->vars[e->kcall.var].name, vkind_name(kv));
    fc_kernel *k = kv->kern;
    const char *kname = fc_kernel_name(k);
    int n = e->kcall.n;
    fc_array **in = arena_alloc(&b->arena, sizeof(fc_array *) * (size_t)(n + 1));
    if (!in) return bnomem(b);
    fcf_value v;
    fc_status st;
    for (int i = 0; i < n; i++) {
        if ((st = eval(b, e->kcall.args[i], &v)) != FC_OK) return st;
        if ((st = to_array(b, e->kcall.args[i], &v, &in[i])) != FC_OK) return st;
    }
    if (k->kind == FCG_USER_REDUCTION) {
        if (nout != 1)
            return berr(b, e, FC_ERR_INVALID, "%s gives 1 output (%s), not %d", kname,
                        k->out_text, nout);
        fc_axes axes;
        bool keep = false;
        if (e->kcall.axis && (st = eval(b, e->kcall.axis, &v)) != FC_OK) return st;
        if ((st = to_axes(b, e->kcall.axis ? e->kcall.axis : e, e->kcall.axis ? &v : NULL,
                          &axes)) != FC_OK)
            return st;
        if (e->kcall.keepdims &&
            ((st = eval(b, e->kcall.keepdims, &v)) != FC_OK ||
             (st = to_bool(b, e->kcall.keepdims, &v, "keepdims", &keep)) != FC_OK))
            return st;
        return bcheck(b, e, fc_kernel_reduce(k, n, in, axes, keep), outs);
    }
    if (nout == 1 && k->nout != 1)
        return berr(b, e, FC_ERR_INVALID, "%s gives %d outputs (%s): bind them by unpacking, "
                    "as in `a, b = %s(...)`", kname, k->nout, k->out_text,
                    b->prog->vars[e->kcall.var].name);
    if (nout != k->nout)
        return berr(b, e, FC_ERR_INVALID, "%s gives %d output%s (%s), not %d", kname, k->nout,
                    k->nout == 1 ? "" : "s", k->out_text, nout);
    fc_array *res[FCG_USER_MAX_PARAMS];
    fc_kernel_call(k, n, in, nout, res);
    for (int j = 0; j < nout; j++)
        if ((st = bcheck(b, e, res[j], &outs[j])) != FC_OK) return st;
    return FC_OK;
}

/* ---- sparse matrices (scipy.sparse's spellings over include/fusec.h's fc_sparse) --------- */

/* Takes a sparse API result, as bcheck an array: a poisoned one's message gets e's position. */
static fc_status sparse_check(fcf_builder *b, const fcf_expr *e, fc_sparse r, fcf_value *out) {
    fcf_value tmp;
    fc_status st = bcheck(b, e, r.data, &tmp);
    if (st != FC_OK) return st;
    memset(out, 0, sizeof *out);
    out->kind = V_SPARSE;
    out->sp = r;
    return FC_OK;
}

/* A list of n integers (x.shape). */
static fc_status int_list(fcf_builder *b, int n, const int64_t *vals, fcf_value *out) {
    memset(out, 0, sizeof *out);
    out->kind = V_LIST;
    out->list.n = n;
    if (n == 0) return FC_OK;
    out->list.items = arena_zalloc(&b->arena, sizeof(fcf_value) * (size_t)n);
    if (!out->list.items) return bnomem(b);
    for (int d = 0; d < n; d++) {
        out->list.items[d].kind = V_INT;
        out->list.items[d].i = vals[d];
    }
    return FC_OK;
}

/* The arrays of a (data, ...) tuple, each an array (not a number: an index array has a
 * length). */
static fc_status sparse_parts(fcf_builder *b, const fcf_expr *at, const char *fname,
                              const fcf_value *items, int n, fc_array **parts) {
    for (int i = 0; i < n; i++) {
        if (items[i].kind != V_ARRAY)
            return berr(b, at, FC_ERR_INVALID, "%s(): the tuple's entries must be 1-d arrays, "
                        "entry %d is %s", fname, i, vkind_name(&items[i]));
        parts[i] = items[i].arr;
    }
    return FC_OK;
}

/* sparse.csr_matrix(arg1, shape=None) and sparse.coo_matrix: SciPy's forms of arg1, a dense
 * 2-d array, a sparse matrix, (data, indices, indptr) (csr_matrix only) or (data, (row, col)),
 * whose shape is required (SciPy infers it from the index values; fusec does not evaluate to
 * build one). */
static fc_status eval_sparse_ctor(fcf_builder *b, const fcf_expr *e, fcf_value *v,
                                  fcf_value *out) {
    const char *fname = e->call.fn->name;
    bool coo = e->call.op == SP_COO_MATRIX;
    fc_status st;
    fc_shape shape;
    if ((st = eval_arg(b, e, 0, &v[0], V_NONE)) != FC_OK) return st;
    if ((st = eval_arg(b, e, 1, &v[1], V_NONE)) != FC_OK) return st;
    bool has_shape = v[1].kind != V_NONE;
    if (has_shape) {
        if ((st = to_shape(b, arg_pos(e, 1), &v[1], &shape)) != FC_OK) return st;
        if (shape.ndim != 2)
            return berr(b, arg_pos(e, 1), FC_ERR_SHAPE, "%s(): shape must be (m, n), found %d "
                        "extent%s", fname, shape.ndim, shape.ndim == 1 ? "" : "s");
    }
    const fcf_expr *at = arg_pos(e, 0);
    fc_sparse r;
    if (v[0].kind == V_SPARSE || v[0].kind == V_ARRAY) {
        if (v[0].kind == V_SPARSE) {
            r = coo ? fc_sparse_tocoo(v[0].sp) : fc_sparse_tocsr(v[0].sp);
        } else {
            int nd = fc_array_ndim(v[0].arr);
            if (nd != 2)
                return berr(b, at, FC_ERR_SHAPE, "%s(): a dense argument must be 2-d, found "
                            "%d-d", fname, nd);
            r = fc_sparse_from_dense(v[0].arr, coo ? FC_SPARSE_COO : FC_SPARSE_CSR);
        }
        if ((st = sparse_check(b, e, r, out)) != FC_OK) return st;
        if (has_shape && (shape.dim[0] != r.shape[0] || shape.dim[1] != r.shape[1]))
            return berr(b, arg_pos(e, 1), FC_ERR_SHAPE, "%s(): shape (%lld, %lld) is not the "
                        "argument's (%lld, %lld)", fname, (long long)shape.dim[0],
                        (long long)shape.dim[1], (long long)r.shape[0], (long long)r.shape[1]);
        return FC_OK;
    }
    const fcf_value *it = v[0].kind == V_LIST ? v[0].list.items : NULL;
    int n = v[0].kind == V_LIST ? v[0].list.n : 0;
    bool ij = n == 2 && it[1].kind == V_LIST && it[1].list.n == 2;
    if (!ij && !(n == 3 && !coo))
        return berr(b, at, FC_ERR_INVALID, "%s() takes a dense 2-d array, a sparse matrix, "
                    "(data, (row, col))%s; found %s%s", fname,
                    coo ? "" : " or (data, indices, indptr)", n ? "a tuple of " : "",
                    n ? (n == 2 ? "2 (data and not (row, col))" : "another length")
                      : vkind_name(&v[0]));
    if (!has_shape)
        return berr(b, e, FC_ERR_UNSUPPORTED, "%s(): shape=(m, n) is required with %s (fusec "
                    "does not infer it from the index values)", fname,
                    ij ? "(data, (row, col))" : "(data, indices, indptr)");
    fc_array *parts[3] = {NULL, NULL, NULL};
    if ((st = sparse_parts(b, at, fname, it, 1, parts)) != FC_OK) return st;
    if (ij) {
        if ((st = sparse_parts(b, at, fname, it[1].list.items, 2, parts + 1)) != FC_OK)
            return st;
        r = fc_sparse_coo(parts[0], parts[1], parts[2], shape.dim[0], shape.dim[1]);
        if (!coo && fc_sparse_status(r) == FC_OK) r = fc_sparse_tocsr(r);
    } else {
        if ((st = sparse_parts(b, at, fname, it + 1, 2, parts + 1)) != FC_OK) return st;
        r = fc_sparse_csr(parts[0], parts[1], parts[2], shape.dim[0], shape.dim[1]);
    }
    return sparse_check(b, e, r, out);
}

/* x.shape, x.nnz, x.tocsr(), ... of a sparse matrix (E_ATTR; check_receiver passed it). */
static fc_status eval_sparse_attr(fcf_builder *b, const fcf_expr *e, fc_sparse a,
                                  fcf_value *out) {
    const fcf_method *m = e->attr.m;
    memset(out, 0, sizeof *out);
    switch (m->kind) {
    case MK_SHAPE: return int_list(b, 2, a.shape, out);
    case MK_NDIM: out->kind = V_INT; out->i = 2; return FC_OK;
    case MK_DTYPE: out->kind = V_DTYPE; out->dt = fc_sparse_dtype(a); return FC_OK;
    default: break;
    }
    fc_array *part = NULL;
    const char *other = a.format == FC_SPARSE_CSR ? "x.tocoo()" : "x.tocsr()";
    switch (m->sparse) {
    case SPM_TOCSR: return sparse_check(b, e, fc_sparse_tocsr(a), out);
    case SPM_TOCOO: return sparse_check(b, e, fc_sparse_tocoo(a), out);
    case SPM_TODENSE: return bcheck(b, e, fc_sparse_todense(a), out);
    case SPM_NNZ: out->kind = V_INT; out->i = fc_sparse_nnz(a); return FC_OK;
    case SPM_DATA: part = a.data; break;
    case SPM_INDICES: part = a.indices; break;
    case SPM_INDPTR: part = a.indptr; break;
    case SPM_ROW: part = a.row; break;
    case SPM_COL: part = a.col; break;
    default: return berr(b, e, FC_ERR_INVALID, "internal: unhandled sparse attribute");
    }
    if (!part)
        return berr(b, e, FC_ERR_INVALID, "a %s matrix has no '%s' (%s.%s has)",
                    a.format == FC_SPARSE_CSR ? "CSR" : "COO", m->name, other, m->name);
    return bcheck(b, e, part, out); /* owned by the build's scope, as the matrix */
}

/* An operator with a sparse operand: A @ x (x dense), A + B, A - B (both sparse), scalar * A
 * and A * scalar, -A; anything else is an error that says what is supported. */
static fc_status eval_sparse_binary(fcf_builder *b, const fcf_expr *e, const fcf_value *a,
                                    const fcf_value *c, fcf_value *out) {
    int op = e->bin.op;
    bool sa = a->kind == V_SPARSE, sc = c->kind == V_SPARSE;
    const char *sym = fcg_ops[op].infix;
    const char *lhs = sa                                               ? "sparse"
                      : a->kind == V_ARRAY && fc_array_ndim(a->arr) > 0 ? "dense"
                                                                         : "scalar";
    const char *rhs = sc                                               ? "sparse"
                      : c->kind == V_ARRAY && fc_array_ndim(c->arr) > 0 ? "dense"
                                                                         : "scalar";
    fc_array *x;
    fc_status st;
    if (op == FCG_OP_MATMUL) {
        if (!sa || sc)
            return berr(b, e, FC_ERR_UNSUPPORTED, "%s @ %s is not supported (a sparse matrix "
                        "multiplies a dense vector or matrix on its right: A @ x; x.todense() "
                        "is a sparse matrix's dense array)", lhs, rhs);
        if ((st = to_array(b, e->bin.b, c, &x)) != FC_OK) return st;
        return bcheck(b, e, fc_sparse_matmul(a->sp, x), out);
    }
    if (op == FCG_OP_ADD || op == FCG_OP_SUB) {
        if (!sa || !sc)
            return berr(b, e, FC_ERR_UNSUPPORTED, "%s %s %s is not supported (a sparse matrix "
                        "adds a sparse matrix; x.todense() is its dense array)", lhs, sym, rhs);
        fc_sparse r = c->sp;
        if (op == FCG_OP_SUB) r = fc_sparse_multiply(r, fc_i64(b->ctx, -1));
        return sparse_check(b, e, fc_sparse_add(a->sp, r), out);
    }
    if (op == FCG_OP_MUL && sa != sc) {
        const fcf_value *s = sa ? c : a;
        const fcf_expr *se = sa ? e->bin.b : e->bin.a;
        if (s->kind == V_ARRAY && fc_array_ndim(s->arr) != 0)
            return berr(b, e, FC_ERR_UNSUPPORTED, "sparse * dense is supported for a scalar "
                        "only (a number or a 0-d array), found a %d-d array (A @ x is the "
                        "matrix product)", fc_array_ndim(s->arr));
        if ((st = to_array(b, se, s, &x)) != FC_OK) return st;
        return sparse_check(b, e, fc_sparse_multiply(sa ? a->sp : c->sp, x), out);
    }
    return berr(b, e, FC_ERR_UNSUPPORTED, "%s %s %s is not supported (a sparse matrix takes "
                "A @ x, A + B, A - B, scalar * A and -A)", lhs, sym, rhs);
}

static fc_status eval_call(fcf_builder *b, const fcf_expr *e, fcf_value *out) {
    fc_ctx *ctx = b->ctx;
    const fcf_func *fn = e->call.fn;
    fcf_value v[FCP_MAX_PARAMS];
    fc_array *x = NULL;
    fc_status st;
    if (!fn) { /* elementwise */
        fc_array *in[3] = {NULL, NULL, NULL};
        for (int k = 0; k < e->call.n; k++)
            if ((st = eval_array_arg(b, e, k, &in[k])) != FC_OK) return st;
        int op = e->call.op;
        fc_array *r = e->call.n == 1 ? fcg_unary_api[op](in[0])
                      : e->call.n == 2 ? fcg_binary_api[op](in[0], in[1])
                                       : fcg_ternary_api[op](in[0], in[1], in[2]);
        return bcheck(b, e, r, out);
    }
    /* Functions whose first argument is an array. */
    switch (fn->kind) {
    case FK_CAST: case FK_REDUCE: case FK_ARG: case FK_NORM: case FK_RESHAPE: case FK_TRANSPOSE:
    case FK_BROADCAST: case FK_EXPAND: case FK_SQUEEZE: case FK_FLIP: case FK_PAD: case FK_LIKE:
    case FK_FULL_LIKE: case FK_FFT: case FK_RAVEL: case FK_SCAN: case FK_FFTN: case FK_FFTSHIFT:
    case FK_SORT: case FK_UNIQUE:
        if (fn->kind == FK_TRANSPOSE && e->call.method) { /* x.T, x.transpose(): maybe sparse */
            if ((st = eval(b, e->call.args[0], &v[0])) != FC_OK) return st;
            if (v[0].kind == V_SPARSE) {
                if (e->call.args[1])
                    return berr(b, e->call.args[1], FC_ERR_UNSUPPORTED,
                                "a sparse matrix's transpose() takes no axes");
                return sparse_check(b, e, fc_sparse_transpose(v[0].sp), out);
            }
            if ((st = check_receiver(b, e, e->call.method, &v[0])) != FC_OK ||
                (st = to_array(b, e->call.args[0], &v[0], &x)) != FC_OK)
                return st;
            break;
        }
        if ((st = eval_array_arg(b, e, 0, &x)) != FC_OK) return st;
        break;
    default: break;
    }
    switch (fn->kind) {
    case FK_COMPOSITE: return eval_composite(b, e, v, out);
    case FK_CONTRACT: return eval_contract(b, e, v, out);
    case FK_LINALG: return eval_linalg(b, e, v, out);
    case FK_SPARSE: {
        if (fn->op != SP_CSR_MATMUL) return eval_sparse_ctor(b, e, v, out);
        fc_array *a[4];
        for (int i = 0; i < 4; i++)
            if ((st = eval_array_arg(b, e, i, &a[i])) != FC_OK) return st;
        return bcheck(b, e, fcg_csr_matmul(a[0], a[1], a[2], a[3]), out);
    }
    case FK_CONV: return eval_conv(b, e, v, out);
    case FK_EW_KERNEL:
    case FK_RED_KERNEL: return eval_kernel_decl(b, e, v, out);
    case FK_CAST: {
        fc_dtype dt;
        if ((st = eval_arg(b, e, 1, &v[1], V_NONE)) != FC_OK) return st;
        if ((st = to_dtype(b, arg_pos(e, 1), &v[1], &dt)) != FC_OK) return st;
        return bcheck(b, e, fc_cast(x, dt), out);
    }
    case FK_SCAN: {
        int axis = FC_AXIS_NONE;
        if ((st = eval_arg(b, e, 1, &v[1], V_NONE)) != FC_OK) return st;
        if (v[1].kind != V_NONE &&
            (st = to_small_int(b, arg_pos(e, 1), &v[1], "axis", &axis)) != FC_OK)
            return st;
        fc_array *r = fn->op == FCG_OP_CUMSUM    ? fc_cumsum(x, axis)
                      : fn->op == FCG_OP_CUMPROD ? fc_cumprod(x, axis)
                      : fn->op == FCG_OP_CUMMAX  ? fc_cummax(x, axis)
                                                 : fc_cummin(x, axis);
        return bcheck(b, e, r, out);
    }
    case FK_REDUCE:
    case FK_NORM:
    case FK_ARG: {
        int axis_k = fn->kind == FK_NORM ? 2 : 1, keep_k = axis_k + 1;
        fc_axes axes;
        bool keep = false;
        if ((st = eval_arg(b, e, axis_k, &v[axis_k], V_NONE)) != FC_OK) return st;
        if ((st = eval_arg(b, e, keep_k, &v[keep_k], V_BOOL)) != FC_OK) return st;
        if (e->call.args[keep_k] &&
            (st = to_bool(b, arg_pos(e, keep_k), &v[keep_k], "keepdims", &keep)) != FC_OK)
            return st;
        if (fn->kind == FK_ARG) {
            int axis = FC_AXIS_NONE;
            if (v[1].kind != V_NONE &&
                (st = to_small_int(b, arg_pos(e, 1), &v[1], "axis", &axis)) != FC_OK)
                return st;
            return bcheck(b, e, fn->op == FCG_OP_ARGMAX ? fc_argmax(x, axis, keep)
                                                        : fc_argmin(x, axis, keep), out);
        }
        if ((st = to_axes(b, arg_pos(e, axis_k), &v[axis_k], &axes)) != FC_OK) return st;
        /* A 0-d array takes a bare axis 0 or -1 (NumPy's reduce), never a list of axes. */
        if (v[axis_k].kind == V_LIST && axes.n > 0 && fc_array_ndim(x) == 0)
            return berr(b, arg_pos(e, axis_k), FC_ERR_AXIS,
                        "%s: axis %d is out of bounds for shape [] (0 dimensions)",
                        fcg_ops[fn->op].pyname, axes.axis[0]);
        if (fn->kind == FK_NORM) {
            fc_norm_ord ord = FC_NORM_L2;
            if ((st = eval_arg(b, e, 1, &v[1], V_NONE)) != FC_OK) return st;
            if (v[1].kind == V_INT && v[1].i == 1) ord = FC_NORM_L1;
            else if (v[1].kind == V_INT && v[1].i == 2) ord = FC_NORM_L2;
            else if (v[1].kind == V_FLOAT && v[1].f == INFINITY) ord = FC_NORM_INF;
            else if (v[1].kind == V_FLOAT && (v[1].f == 1.0 || v[1].f == 2.0))
                ord = v[1].f == 1.0 ? FC_NORM_L1 : FC_NORM_L2;
            else if (v[1].kind != V_NONE)
                return berr(b, arg_pos(e, 1), FC_ERR_UNSUPPORTED,
                            "norm ord must be 1, 2 or inf");
            return bcheck(b, e, fc_norm(x, axes, keep, ord), out);
        }
        int ddof = 0;
        if (fcg_ops[fn->op].params & FCG_P_DDOF) {
            if ((st = eval_arg(b, e, 3, &v[3], V_NONE)) != FC_OK) return st;
            if (v[3].kind != V_NONE &&
                (st = to_small_int(b, arg_pos(e, 3), &v[3], "ddof", &ddof)) != FC_OK)
                return st;
        }
        return bcheck(b, e, fcg_reduce((fcg_op)fn->op, x, axes, keep, ddof, 0), out);
    }
    case FK_RESHAPE:
    case FK_BROADCAST: {
        fc_shape shape;
        if ((st = eval_arg(b, e, 1, &v[1], V_NONE)) != FC_OK) return st;
        if ((st = to_shape(b, arg_pos(e, 1), &v[1], &shape)) != FC_OK) return st;
        return bcheck(b, e, fn->kind == FK_RESHAPE ? fc_reshape(x, shape)
                                                  : fc_broadcast_to(x, shape), out);
    }
    case FK_RAVEL: {
        fc_shape flat;
        memset(&flat, 0, sizeof flat);
        flat.ndim = 1;
        flat.dim[0] = -1; /* inferred: the size */
        return bcheck(b, e, fc_reshape(x, flat), out);
    }
    case FK_TRANSPOSE: {
        if ((st = eval_arg(b, e, 1, &v[1], V_NONE)) != FC_OK) return st;
        if (v[1].kind == V_NONE) return bcheck(b, e, fc_transpose(x), out);
        fc_axes perm;
        /* An int is a 1-d permutation, as NumPy's x.transpose(0) of a vector. */
        if (v[1].kind != V_LIST && v[1].kind != V_INT)
            return berr(b, arg_pos(e, 1), FC_ERR_INVALID, "axes must be a list of integers");
        if ((st = to_axes(b, arg_pos(e, 1), &v[1], &perm)) != FC_OK) return st;
        return bcheck(b, e, fc_permute(x, perm), out);
    }
    case FK_EXPAND: {
        int axis;
        if ((st = eval_arg(b, e, 1, &v[1], V_NONE)) != FC_OK) return st;
        if ((st = to_small_int(b, arg_pos(e, 1), &v[1], "axis", &axis)) != FC_OK) return st;
        return bcheck(b, e, fc_expand_dims(x, axis), out);
    }
    case FK_SQUEEZE:
    case FK_FLIP: {
        fc_axes axes;
        if ((st = eval_arg(b, e, 1, &v[1], V_NONE)) != FC_OK) return st;
        if ((st = to_axes(b, arg_pos(e, 1), &v[1], &axes)) != FC_OK) return st;
        return bcheck(b, e, fn->kind == FK_SQUEEZE ? fc_squeeze(x, axes) : fc_flip(x, axes),
                      out);
    }
    case FK_PAD: {
        int64_t widths[FC_MAX_DIMS][2];
        int n = 0;
        fc_pad_mode mode = FC_PAD_CONSTANT;
        double value = 0.0;
        if ((st = eval_arg(b, e, 1, &v[1], V_NONE)) != FC_OK) return st;
        if ((st = to_pad_widths(b, arg_pos(e, 1), &v[1], widths, &n)) != FC_OK) return st;
        if ((st = eval_arg(b, e, 2, &v[2], V_NONE)) != FC_OK) return st;
        if (v[2].kind != V_NONE) {
            int m = -1;
            for (int k = 0; k < (int)FCF_COUNT(fcf_pad_modes); k++)
                if (v[2].kind == V_STR && strcmp(v[2].s, fcf_pad_modes[k]) == 0) m = k;
            if (m < 0)
                return berr(b, arg_pos(e, 2), FC_ERR_INVALID,
                            "pad mode must be \"constant\", \"edge\", \"reflect\" or "
                            "\"symmetric\"");
            mode = (fc_pad_mode)m;
        }
        if ((st = eval_arg(b, e, 3, &v[3], V_NONE)) != FC_OK) return st;
        if (v[3].kind != V_NONE &&
            (st = to_double(b, arg_pos(e, 3), &v[3], "constant_values", &value)) != FC_OK)
            return st;
        return bcheck(b, e, fc_pad(x, n, (const int64_t(*)[2])widths, mode, value), out);
    }
    case FK_CONCAT:
    case FK_STACK: {
        fc_array **arrays = NULL;
        int n = 0, axis = 0;
        if ((st = eval_array_list(b, e, &arrays, &n)) != FC_OK) return st;
        if ((st = eval_arg(b, e, 1, &v[1], V_NONE)) != FC_OK) return st;
        if (v[1].kind != V_NONE &&
            (st = to_small_int(b, arg_pos(e, 1), &v[1], "axis", &axis)) != FC_OK)
            return st;
        return bcheck(b, e, fn->kind == FK_CONCAT ? fc_concatenate(ctx, arrays, n, axis)
                                                 : fc_stack(ctx, arrays, n, axis), out);
    }
    case FK_SORT: {
        /* np.sort(a, axis=-1, kind=None), argsort; np.partition(a, kth, axis=-1,
         * kind="introselect"), argpartition. axis=None: the flattened array */
        bool part = fn->op >= 2;
        int at = part ? 2 : 1, axis = -1;
        int64_t kth = 0;
        if (part && ((st = eval_arg(b, e, 1, &v[1], V_NONE)) != FC_OK ||
                     (st = to_int(b, arg_pos(e, 1), &v[1], "kth", &kth)) != FC_OK))
            return st;
        if ((st = eval_arg(b, e, at, &v[at], V_NONE)) != FC_OK) return st;
        if (e->call.args[at] && v[at].kind == V_NONE) axis = FC_AXIS_NONE;
        else if (v[at].kind != V_NONE &&
                 (st = to_small_int(b, arg_pos(e, at), &v[at], "axis", &axis)) != FC_OK)
            return st;
        if ((st = eval_arg(b, e, at + 1, &v[at + 1], V_NONE)) != FC_OK) return st;
        if (v[at + 1].kind != V_NONE) {
            const char *const *kinds = part ? fcf_partition_kinds : fcf_sort_kinds;
            size_t nk = part ? FCF_COUNT(fcf_partition_kinds) : FCF_COUNT(fcf_sort_kinds);
            bool known = false;
            for (size_t i = 0; v[at + 1].kind == V_STR && i < nk; i++)
                known |= strcmp(v[at + 1].s, kinds[i]) == 0;
            if (!known)
                return berr(b, arg_pos(e, at + 1), FC_ERR_VALUE, "%s: kind must be %s",
                            fn->name, part ? "None or \"introselect\""
                                           : "None, \"quicksort\", \"mergesort\", "
                                             "\"heapsort\" or \"stable\"");
        }
        fc_array *r = fn->op == 0   ? fc_sort(x, axis)
                      : fn->op == 1 ? fc_argsort(x, axis)
                      : fn->op == 2 ? fc_partition(x, kth, axis)
                                    : fc_argpartition(x, kth, axis);
        return bcheck(b, e, r, out);
    }
    case FK_UNIQUE: {
        /* np.unique(ar, return_index=False, return_inverse=False, return_counts=False): the
         * values alone, or the list [values, index, inverse, counts] of those asked for */
        bool want[4] = {true, false, false, false};
        int n = 1;
        for (int k = 1; k < 4; k++) {
            if ((st = eval_arg(b, e, k, &v[k], V_BOOL)) != FC_OK) return st;
            if (e->call.args[k] &&
                (st = to_bool(b, arg_pos(e, k), &v[k], fn->params[k], &want[k])) != FC_OK)
                return st;
            n += want[k];
        }
        fc_array *res[4] = {NULL, NULL, NULL, NULL};
        st = fc_unique(x, &res[0], want[1] ? &res[1] : NULL, want[2] ? &res[2] : NULL,
                       want[3] ? &res[3] : NULL);
        if (n == 1) return bcheck(b, e, res[0], out);
        fc_array *list[4];
        for (int k = 0, j = 0; k < 4; k++)
            if (want[k]) list[j++] = res[k];
        return array_list(b, e, list, n, st, out);
    }
    case FK_FFT: case FK_FFTN: {
        /* np.fft.fft(a, n=None, axis=-1, norm=None) and kin; fftn(a, s=None, axes=None, ...) */
        fc_fft_norm norm = FC_FFT_BACKWARD;
        if ((st = eval_arg(b, e, 3, &v[3], V_NONE)) != FC_OK) return st;
        if (v[3].kind != V_NONE) {
            int k = -1;
            for (int i = 0; v[3].kind == V_STR && i < (int)FCF_COUNT(fcf_fft_norms); i++)
                if (strcmp(v[3].s, fcf_fft_norms[i]) == 0) k = i;
            if (k < 0)
                return berr(b, arg_pos(e, 3), FC_ERR_VALUE, "%s: norm must be None, "
                            "\"backward\", \"ortho\" or \"forward\"", fn->name);
            norm = (fc_fft_norm)k;
        }
        if ((st = eval_arg(b, e, 1, &v[1], V_NONE)) != FC_OK) return st;
        if ((st = eval_arg(b, e, 2, &v[2], V_NONE)) != FC_OK) return st;
        if (fn->kind == FK_FFT) {
            int64_t n = 0;
            int axis = -1;
            if (v[1].kind != V_NONE && (st = to_int(b, arg_pos(e, 1), &v[1], "n", &n)) != FC_OK)
                return st;
            if (v[1].kind != V_NONE && n < 1)
                return berr(b, arg_pos(e, 1), FC_ERR_VALUE, "%s: invalid number of FFT data "
                            "points (%lld) specified", fn->name, (long long)n);
            if (v[2].kind != V_NONE &&
                (st = to_small_int(b, arg_pos(e, 2), &v[2], "axis", &axis)) != FC_OK)
                return st;
            fc_array *(*const f[])(fc_array *, int64_t, int, fc_fft_norm) = {
                fc_fft_n, fc_ifft_n, fc_rfft, fc_irfft, fc_hfft, fc_ihfft};
            return bcheck(b, e, f[fn->op](x, n, axis, norm), out);
        }
        int64_t sz[FC_MAX_DIMS];
        int ns = 0;
        fc_axes axes;
        if (v[1].kind != V_NONE &&
            (st = to_int_list(b, arg_pos(e, 1), &v[1], "s", FC_MAX_DIMS, sz, &ns)) != FC_OK)
            return st;
        if ((st = to_axes(b, arg_pos(e, 2), &v[2], &axes)) != FC_OK) return st;
        if (fn->op >= 4 && axes.n < 0) axes = FC_AXES(-2, -1); /* fft2 and kin */
        fc_array *(*const f[])(fc_array *, int, const int64_t *, fc_axes, fc_fft_norm) = {
            fc_fftn, fc_ifftn, fc_rfftn, fc_irfftn};
        return bcheck(b, e, f[fn->op % 4](x, ns, sz, axes, norm), out);
    }
    case FK_FFTFREQ: {
        int64_t n = 0;
        double d = 1.0;
        if ((st = eval_arg(b, e, 0, &v[0], V_NONE)) != FC_OK) return st;
        if ((st = to_int(b, arg_pos(e, 0), &v[0], "n", &n)) != FC_OK) return st;
        if ((st = eval_arg(b, e, 1, &v[1], V_NONE)) != FC_OK) return st;
        if (v[1].kind != V_NONE && (st = to_double(b, arg_pos(e, 1), &v[1], "d", &d)) != FC_OK)
            return st;
        return bcheck(b, e, fn->op ? fc_rfftfreq(b->ctx, n, d) : fc_fftfreq(b->ctx, n, d), out);
    }
    case FK_FFTSHIFT: {
        fc_axes axes;
        if ((st = eval_arg(b, e, 1, &v[1], V_NONE)) != FC_OK) return st;
        if ((st = to_axes(b, arg_pos(e, 1), &v[1], &axes)) != FC_OK) return st;
        return bcheck(b, e, fn->op ? fc_ifftshift(x, axes) : fc_fftshift(x, axes), out);
    }
    case FK_TAKE: { /* op 1: take_along_axis, whose axis defaults to -1 (NumPy 2); op 2:
                       searchsorted */
        fc_array *ind;
        int axis = FC_AXIS_NONE, m = 0;
        if ((st = eval_array_arg(b, e, 0, &x)) != FC_OK) return st;
        if ((st = eval_array_arg(b, e, 1, &ind)) != FC_OK) return st;
        if (fn->op == 2) {
            if ((st = eval_arg(b, e, 2, &v[2], V_NONE)) != FC_OK) return st;
            bool right = v[2].kind == V_STR && strcmp(v[2].s, "right") == 0;
            if (v[2].kind != V_NONE && !right && !(v[2].kind == V_STR && strcmp(v[2].s, "left") == 0))
                return berr(b, arg_pos(e, 2), FC_ERR_INVALID,
                            "searchsorted side must be \"left\" or \"right\"");
            return bcheck(b, e, fc_searchsorted(x, ind, right ? FC_SIDE_RIGHT : FC_SIDE_LEFT), out);
        }
        if ((st = eval_arg(b, e, 2, &v[2], V_NONE)) != FC_OK) return st;
        if (fn->op && !e->call.args[2]) axis = -1;
        else if (v[2].kind != V_NONE &&
            (st = to_small_int(b, arg_pos(e, 2), &v[2], "axis", &axis)) != FC_OK)
            return st;
        if (fn->op) return bcheck(b, e, fc_take_along_axis(x, ind, axis), out);
        if ((st = eval_arg(b, e, 3, &v[3], V_NONE)) != FC_OK) return st;
        if (v[3].kind != V_NONE) {
            m = -1;
            for (int k = 0; k < (int)FCF_COUNT(fcf_take_modes); k++)
                if (v[3].kind == V_STR && strcmp(v[3].s, fcf_take_modes[k]) == 0) m = k;
            if (m < 0)
                return berr(b, arg_pos(e, 3), FC_ERR_INVALID,
                            "take mode must be \"raise\", \"wrap\" or \"clip\"");
        }
        return bcheck(b, e, fc_take(x, ind, axis, (fc_take_mode)m), out);
    }
    case FK_SCATTER: {
        fc_array *ind = NULL, *w = NULL;
        if ((st = eval_array_arg(b, e, 0, &x)) != FC_OK) return st;
        if (fn->op == 7) return bcheck(b, e, fc_flatnonzero(x), out);
        if (fn->op == 8) return bcheck(b, e, fc_argwhere(x), out);
        if (fn->op == 9) { /* put_along_axis(arr, indices, values, axis): axis required */
            fc_array *vals;
            int axis = FC_AXIS_NONE;
            if ((st = eval_array_arg(b, e, 1, &ind)) != FC_OK) return st;
            if ((st = eval_array_arg(b, e, 2, &vals)) != FC_OK) return st;
            if ((st = eval_arg(b, e, 3, &v[3], V_NONE)) != FC_OK) return st;
            if (v[3].kind != V_NONE &&
                (st = to_small_int(b, arg_pos(e, 3), &v[3], "axis", &axis)) != FC_OK)
                return st;
            return bcheck(b, e, fc_put_along_axis(x, ind, vals, axis), out);
        }
        if (fn->op <= 3) { /* scatter_*(a, indices, values, axis=None, mode="raise"), put */
            fc_array *vals;
            int axis = FC_AXIS_NONE, m = 0, mk = fn->op == 3 ? 3 : 4;
            if ((st = eval_array_arg(b, e, 1, &ind)) != FC_OK) return st;
            if ((st = eval_array_arg(b, e, 2, &vals)) != FC_OK) return st;
            if (fn->op < 3) {
                if ((st = eval_arg(b, e, 3, &v[3], V_NONE)) != FC_OK) return st;
                if (v[3].kind != V_NONE &&
                    (st = to_small_int(b, arg_pos(e, 3), &v[3], "axis", &axis)) != FC_OK)
                    return st;
            }
            if ((st = eval_arg(b, e, mk, &v[mk], V_NONE)) != FC_OK) return st;
            if (v[mk].kind != V_NONE) {
                m = -1;
                for (int k = 0; k < (fn->op == 3 ? 3 : 4); k++)
                    if (v[mk].kind == V_STR && strcmp(v[mk].s, fcf_scatter_modes[k]) == 0) m = k;
                if (m < 0)
                    return berr(b, arg_pos(e, mk), FC_ERR_INVALID, "%s mode must be %s",
                                fn->name, fn->op == 3 ? "\"raise\", \"wrap\" or \"clip\""
                                                      : "\"raise\", \"wrap\", \"clip\" or \"drop\"");
            }
            fc_take_mode md = (fc_take_mode)m;
            fc_array *r = fn->op == 0   ? fc_scatter_add(x, ind, vals, axis, md)
                          : fn->op == 1 ? fc_scatter_max(x, ind, vals, axis, md)
                          : fn->op == 2 ? fc_scatter_min(x, ind, vals, axis, md)
                                        : fc_put(x, ind, vals, md);
            return bcheck(b, e, r, out);
        }
        if (fn->op == 4) { /* bincount(x, weights=None, minlength=0) */
            int64_t minlength = 0;
            if ((st = eval_arg(b, e, 1, &v[1], V_NONE)) != FC_OK) return st;
            if (v[1].kind != V_NONE && (st = to_array(b, arg_pos(e, 1), &v[1], &w)) != FC_OK)
                return st;
            if ((st = eval_arg(b, e, 2, &v[2], V_NONE)) != FC_OK) return st;
            if (v[2].kind != V_NONE &&
                (st = to_int(b, arg_pos(e, 2), &v[2], "minlength", &minlength)) != FC_OK)
                return st;
            return bcheck(b, e, fc_bincount(x, w, minlength), out);
        }
        /* histogram(a, bins=10, range=None, weights=None), histogram_bin_edges(a, bins, range) */
        int64_t bins = 10;
        double lo = NAN, hi = NAN;
        if ((st = eval_arg(b, e, 1, &v[1], V_NONE)) != FC_OK) return st;
        if (v[1].kind != V_NONE && (st = to_int(b, arg_pos(e, 1), &v[1], "bins", &bins)) != FC_OK)
            return st;
        if ((st = eval_arg(b, e, 2, &v[2], V_NONE)) != FC_OK) return st;
        if (v[2].kind != V_NONE) {
            if (v[2].kind != V_LIST || v[2].list.n != 2)
                return berr(b, arg_pos(e, 2), FC_ERR_INVALID, "%s range must be a list "
                            "[lo, hi], found %s", fn->name, vkind_name(&v[2]));
            if ((st = to_double(b, arg_pos(e, 2), &v[2].list.items[0], "range", &lo)) != FC_OK ||
                (st = to_double(b, arg_pos(e, 2), &v[2].list.items[1], "range", &hi)) != FC_OK)
                return st;
            if (isnan(lo) || isnan(hi))
                return berr(b, arg_pos(e, 2), FC_ERR_VALUE, "%s: supplied range of [%g, %g] is "
                            "not finite", fn->name, lo, hi);
        }
        if (fn->op == 6) return bcheck(b, e, fc_histogram_bin_edges(x, bins, lo, hi), out);
        if ((st = eval_arg(b, e, 3, &v[3], V_NONE)) != FC_OK) return st;
        if (v[3].kind != V_NONE && (st = to_array(b, arg_pos(e, 3), &v[3], &w)) != FC_OK)
            return st;
        return bcheck(b, e, fc_histogram(x, bins, lo, hi, w), out);
    }
    case FK_MATMUL: {
        fc_array *y;
        if ((st = eval_array_arg(b, e, 0, &x)) != FC_OK) return st;
        if ((st = eval_array_arg(b, e, 1, &y)) != FC_OK) return st;
        return bcheck(b, e, fc_matmul(x, y), out);
    }
    case FK_FILL:
    case FK_FULL: {
        fc_shape shape;
        fc_dtype dt = FC_F64;
        int dtype_k = fn->kind == FK_FULL ? 2 : 1;
        if ((st = eval_arg(b, e, 0, &v[0], V_NONE)) != FC_OK) return st;
        if ((st = to_shape(b, arg_pos(e, 0), &v[0], &shape)) != FC_OK) return st;
        if (fn->kind == FK_FULL && (st = eval_arg(b, e, 1, &v[1], V_NONE)) != FC_OK) return st;
        if ((st = eval_arg(b, e, dtype_k, &v[dtype_k], V_NONE)) != FC_OK) return st;
        if (v[dtype_k].kind != V_NONE)
            st = to_dtype(b, arg_pos(e, dtype_k), &v[dtype_k], &dt);
        else if (fn->kind == FK_FULL)
            dt = scalar_dtype(&v[1]);
        if (st != FC_OK) return st;
        if (fn->kind == FK_FULL) return eval_full(b, e, dt, shape, &v[1], arg_pos(e, 1), out);
        return bcheck(b, e, fn->op == 0 ? fc_zeros(ctx, dt, shape)
                            : fn->op == 1 ? fc_ones(ctx, dt, shape) : fc_empty(ctx, dt, shape),
                      out);
    }
    case FK_LIKE:
        return bcheck(b, e, fn->op == 0 ? fc_zeros_like(x)
                            : fn->op == 1 ? fc_ones_like(x) : fc_empty_like(x), out);
    case FK_FULL_LIKE: {
        double value;
        if ((st = eval_arg(b, e, 1, &v[1], V_NONE)) != FC_OK) return st;
        if ((st = to_double(b, arg_pos(e, 1), &v[1], "fill_value", &value)) != FC_OK) return st;
        return bcheck(b, e, fc_full_like(x, value), out);
    }
    case FK_ARANGE: {
        double num[3] = {0.0, 0.0, 1.0};
        bool all_int = true;
        for (int k = 0; k < 4; k++)
            if ((st = eval_arg(b, e, k, &v[k], V_NONE)) != FC_OK) return st;
        for (int k = 0; k < 3; k++) {
            if (v[k].kind == V_NONE) continue;
            if ((st = to_double(b, arg_pos(e, k), &v[k], "arange bound", &num[k])) != FC_OK)
                return st;
            if (v[k].kind == V_FLOAT) all_int = false;
        }
        double start = num[0], stop = num[1];
        if (v[1].kind == V_NONE) { /* arange(stop) */
            start = 0.0;
            stop = num[0];
        }
        fc_dtype dt = all_int ? FC_I64 : FC_F64;
        if (v[3].kind != V_NONE && (st = to_dtype(b, arg_pos(e, 3), &v[3], &dt)) != FC_OK)
            return st;
        return bcheck(b, e, fc_arange(ctx, dt, start, stop, num[2]), out);
    }
    case FK_LINSPACE: {
        double start, stop;
        int64_t num = 50;
        bool endpoint = true;
        fc_dtype dt = FC_F64;
        for (int k = 0; k < 5; k++)
            if ((st = eval_arg(b, e, k, &v[k], V_NONE)) != FC_OK) return st;
        if ((st = to_double(b, arg_pos(e, 0), &v[0], "start", &start)) != FC_OK) return st;
        if ((st = to_double(b, arg_pos(e, 1), &v[1], "stop", &stop)) != FC_OK) return st;
        if (v[2].kind != V_NONE && (st = to_int(b, arg_pos(e, 2), &v[2], "num", &num)) != FC_OK)
            return st;
        if (v[3].kind != V_NONE &&
            (st = to_bool(b, arg_pos(e, 3), &v[3], "endpoint", &endpoint)) != FC_OK)
            return st;
        if (v[4].kind != V_NONE && (st = to_dtype(b, arg_pos(e, 4), &v[4], &dt)) != FC_OK)
            return st;
        return bcheck(b, e, fc_linspace(ctx, dt, start, stop, num, endpoint), out);
    }
    case FK_EYE: {
        int64_t n = 0, m, k = 0;
        fc_dtype dt = FC_F64;
        for (int i = 0; i < 4; i++)
            if ((st = eval_arg(b, e, i, &v[i], V_NONE)) != FC_OK) return st;
        if ((st = to_int(b, arg_pos(e, 0), &v[0], "N", &n)) != FC_OK) return st;
        m = n;
        if (v[1].kind != V_NONE && (st = to_int(b, arg_pos(e, 1), &v[1], "M", &m)) != FC_OK)
            return st;
        if (v[2].kind != V_NONE && (st = to_int(b, arg_pos(e, 2), &v[2], "k", &k)) != FC_OK)
            return st;
        if (v[3].kind != V_NONE && (st = to_dtype(b, arg_pos(e, 3), &v[3], &dt)) != FC_OK)
            return st;
        return bcheck(b, e, fc_eye(ctx, dt, n, m, k), out);
    }
    case FK_RANDOM: {
        int op = fn->op, npar = op == RD_RANDOM || op == RD_STANDARD_NORMAL ? 0
                              : op == RD_EXPONENTIAL || op == RD_BERNOULLI  ? 1
                                                                            : 2;
        bool has_dtype = op != RD_BERNOULLI;
        int nargs = npar + (has_dtype ? 4 : 3);
        for (int i = 0; i < nargs; i++)
            if ((st = eval_arg(b, e, i, &v[i], V_NONE)) != FC_OK) return st;
        double par[2] = {0, 0};
        int64_t ipar[2] = {0, 0};
        for (int i = 0; i < npar; i++) {
            const char *what = fn->params[i];
            st = op == RD_INTEGERS ? to_int(b, arg_pos(e, i), &v[i], what, &ipar[i])
                                   : to_double(b, arg_pos(e, i), &v[i], what, &par[i]);
            if (st != FC_OK) return st;
        }
        fc_shape shape;
        fc_dtype dt = op == RD_INTEGERS ? FC_I64 : op == RD_BERNOULLI ? FC_BOOL : FC_F64;
        if ((st = to_shape(b, arg_pos(e, npar), &v[npar], &shape)) != FC_OK) return st;
        int at = npar + 1;
        if (has_dtype) {
            if (v[at].kind != V_NONE && (st = to_dtype(b, arg_pos(e, at), &v[at], &dt)) != FC_OK)
                return st;
            at++;
        }
        uint64_t key[2] = {0, 0}; /* seed, stream */
        for (int k = 0; k < 2; k++, at++) {
            if (v[at].kind == V_NONE) continue;
            if (v[at].kind != V_INT || v[at].i < 0 || v[at].i > UINT64_MAX)
                return berr(b, arg_pos(e, at), FC_ERR_INVALID, "%s must be an integer in [0, 2**64)",
                            fn->params[at]);
            key[k] = (uint64_t)v[at].i;
        }
        fc_rng rng = {key[0], key[1]};
        fc_array *r = NULL;
        switch (op) {
        case RD_RANDOM: r = fc_rng_random(ctx, &rng, dt, shape); break;
        case RD_STANDARD_NORMAL: r = fc_rng_standard_normal(ctx, &rng, dt, shape); break;
        case RD_INTEGERS: r = fc_rng_integers(ctx, &rng, ipar[0], ipar[1], dt, shape); break;
        case RD_UNIFORM: r = fc_rng_uniform(ctx, &rng, par[0], par[1], dt, shape); break;
        case RD_NORMAL: r = fc_rng_normal(ctx, &rng, par[0], par[1], dt, shape); break;
        case RD_EXPONENTIAL: r = fc_rng_exponential(ctx, &rng, par[0], dt, shape); break;
        default: r = fc_rng_bernoulli(ctx, &rng, par[0], shape); break;
        }
        return bcheck(b, e, r, out);
    }
    case FK_PERMUTE: {
        /* permutation(x, axis=0), shuffle(x, axis=0), choice(a, size=None, replace=True),
         * each with seed=0 and stream=0 as the draws have them */
        bool choice = fn->op == 2;
        for (int i = 0; i < (choice ? 5 : 4); i++)
            if ((st = eval_arg(b, e, i, &v[i], V_NONE)) != FC_OK) return st;
        int ks = choice ? 3 : 2; /* where seed and stream are */
        uint64_t key[2] = {0, 0};
        for (int k = 0; k < 2; k++) {
            const fcf_value *kv = &v[ks + k];
            if (kv->kind == V_NONE) continue;
            if (kv->kind != V_INT || kv->i < 0 || kv->i > UINT64_MAX)
                return berr(b, arg_pos(e, ks + k), FC_ERR_INVALID,
                            "%s must be an integer in [0, 2**64)", fn->params[ks + k]);
            key[k] = (uint64_t)kv->i;
        }
        fc_rng rng = {key[0], key[1]};
        /* an integer n stands for arange(n) (not for shuffle, which takes arrays only) */
        bool of_n = v[0].kind == V_INT && fn->op != 1;
        int64_t n = 0;
        if (of_n && (st = to_int(b, arg_pos(e, 0), &v[0], fn->params[0], &n)) != FC_OK)
            return st;
        if (!of_n && v[0].kind != V_ARRAY)
            return berr(b, arg_pos(e, 0), FC_ERR_INVALID, "%s: %s must be %s, found %s",
                        fn->name, fn->params[0],
                        fn->op == 1 ? "an array" : "an integer or an array",
                        vkind_name(&v[0]));
        if (!choice) {
            int axis = 0;
            if (v[1].kind != V_NONE &&
                (st = to_small_int(b, arg_pos(e, 1), &v[1], "axis", &axis)) != FC_OK)
                return st;
            if (of_n) return bcheck(b, e, fc_rng_permutation(ctx, &rng, n), out);
            return bcheck(b, e, fc_rng_shuffle(ctx, &rng, v[0].arr, axis), out);
        }
        fc_shape size;
        memset(&size, 0, sizeof size); /* None: one sample, a 0-d result */
        bool replace = true;
        if (v[1].kind != V_NONE && (st = to_shape(b, arg_pos(e, 1), &v[1], &size)) != FC_OK)
            return st;
        if (v[2].kind != V_NONE &&
            (st = to_bool(b, arg_pos(e, 2), &v[2], "replace", &replace)) != FC_OK)
            return st;
        return bcheck(b, e, of_n ? fc_rng_choice(ctx, &rng, n, size, replace)
                                 : fc_rng_choice_array(ctx, &rng, v[0].arr, size, replace),
                      out);
    }
    case FK_COMPLEX: {
        double re, im = 0.0;
        if ((st = eval_arg(b, e, 0, &v[0], V_NONE)) != FC_OK) return st;
        if ((st = eval_arg(b, e, 1, &v[1], V_NONE)) != FC_OK) return st;
        if ((st = to_double(b, arg_pos(e, 0), &v[0], "real", &re)) != FC_OK) return st;
        if (v[1].kind != V_NONE &&
            (st = to_double(b, arg_pos(e, 1), &v[1], "imag", &im)) != FC_OK)
            return st;
        memset(out, 0, sizeof *out);
        out->kind = V_COMPLEX;
        out->c[0] = re;
        out->c[1] = im;
        return FC_OK;
    }
    }
    return berr(b, e, FC_ERR_INVALID, "internal: unhandled function");
}

/* list[i]: one element of a list, as x.shape[0]. */
static fc_status eval_list_item(fcf_builder *b, const fcf_expr *e, const fcf_value *list,
                                fcf_value *out) {
    const fcf_expr *it = e->sub.items[0];
    if (e->sub.n != 1 || it->kind == E_SLICE)
        return berr(b, it, FC_ERR_UNSUPPORTED, "a list takes one integer index");
    fcf_value iv;
    int64_t k = 0;
    fc_status st = eval(b, it, &iv);
    if (st == FC_OK) st = to_int(b, it, &iv, "a list index", &k);
    if (st != FC_OK) return st;
    if (k < -(int64_t)list->list.n || k >= list->list.n)
        return berr(b, it, FC_ERR_INDEX, "index %lld is out of range for a list of %d",
                    (long long)k, list->list.n);
    *out = list->list.items[k < 0 ? k + list->list.n : k];
    return FC_OK;
}

static fc_status eval_subscript(fcf_builder *b, const fcf_expr *e, fcf_value *out) {
    fcf_value base;
    fc_array *x;
    fc_status st = eval(b, e->sub.base, &base);
    if (st != FC_OK) return st;
    if (base.kind == V_LIST) return eval_list_item(b, e, &base, out);
    if ((st = to_array(b, e->sub.base, &base, &x)) != FC_OK) return st;
    /* In the arena, not on the stack: this frame is live across recursion. */
    fc_idx *idx = arena_alloc(&b->arena, sizeof(fc_idx) * (size_t)e->sub.n);
    if (!idx) return bnomem(b);
    for (int i = 0; i < e->sub.n; i++) {
        const fcf_expr *it = e->sub.items[i];
        fc_idx *d = &idx[i];
        memset(d, 0, sizeof *d);
        if (it->kind == E_SLICE) {
            const fcf_expr *parts[3] = {it->slice.start, it->slice.stop, it->slice.step};
            int64_t vals[3] = {FC_NIL, FC_NIL, FC_NIL};
            for (int k = 0; k < 3; k++) {
                if (!parts[k]) continue;
                fcf_value pv;
                if ((st = eval(b, parts[k], &pv)) != FC_OK) return st;
                if (pv.kind == V_NONE) continue;
                if ((st = to_int(b, parts[k], &pv, "a slice bound", &vals[k])) != FC_OK)
                    return st;
                /* -2^63 is FC_NIL (None) to fc_index; written out, it slices as -(2^63 - 1)
                 * does on any array (no extent reaches 2^62). */
                if (vals[k] == INT64_MIN) vals[k] = -INT64_MAX;
            }
            *d = FC_S(vals[0], vals[1], vals[2]);
            continue;
        }
        fcf_value iv;
        if ((st = eval(b, it, &iv)) != FC_OK) return st;
        if (iv.kind == V_NONE) {
            *d = FC_NEWAXIS;
        } else if (iv.kind == V_ELLIPSIS) {
            *d = FC_ELLIPSIS;
        } else if (iv.kind == V_INT) {
            int64_t k = 0;
            if ((st = to_int(b, it, &iv, "an index", &k)) != FC_OK) return st;
            *d = FC_AT(k);
        } else if (iv.kind == V_ARRAY) { /* an integer array: advanced indexing */
            fc_array *ia;
            if ((st = to_array(b, it, &iv, &ia)) != FC_OK) return st;
            *d = FC_ARRAY_IDX(ia);
        } else if (iv.kind == V_LIST) { /* a list of integers: an int64 index array */
            fc_array **items = arena_alloc(&b->arena, sizeof(fc_array *) * (size_t)(iv.list.n + 1));
            if (!items) return bnomem(b);
            for (int q = 0; q < iv.list.n; q++) {
                int64_t k = 0;
                if ((st = to_int(b, it, &iv.list.items[q], "a list index's entry", &k)) != FC_OK)
                    return st;
                items[q] = fc_scalar(b->ctx, FC_I64, (double)k);
            }
            fc_array *ia = iv.list.n ? fc_stack(b->ctx, items, iv.list.n, 0)
                                     : fc_full(b->ctx, FC_I64, FC_SHAPE(0), 0);
            fcf_value tmp;
            if ((st = bcheck(b, it, ia, &tmp)) != FC_OK) return st;
            *d = FC_ARRAY_IDX(tmp.arr);
        } else {
            return berr(b, it, FC_ERR_UNSUPPORTED,
                        "an index must be an integer, a slice, None, ... or an integer array, "
                        "found %s", vkind_name(&iv));
        }
    }
    return bcheck(b, e, fc_index(x, e->sub.n, idx), out);
}

/* x.shape, x.ndim, x.size, x.dtype: values read off the array; no node is made. */
static fc_status eval_attr(fcf_builder *b, const fcf_expr *e, fcf_value *out) {
    fcf_value base;
    fc_status st = eval(b, e->attr.base, &base);
    if (st == FC_OK) st = check_receiver(b, e, e->attr.m, &base);
    if (st != FC_OK) return st;
    if (base.kind == V_SPARSE) return eval_sparse_attr(b, e, base.sp, out);
    fc_shape shape = fc_array_shape(base.arr);
    memset(out, 0, sizeof *out);
    switch (e->attr.m->kind) {
    case MK_SHAPE: return int_list(b, shape.ndim, shape.dim, out);
    case MK_NDIM:
        out->kind = V_INT;
        out->i = shape.ndim;
        return FC_OK;
    case MK_SIZE:
        out->kind = V_INT;
        out->i = 1; /* a built array's size fits in int64: its constructor checked */
        for (int d = 0; d < shape.ndim; d++) out->i *= shape.dim[d];
        return FC_OK;
    case MK_DTYPE:
        out->kind = V_DTYPE;
        out->dt = fc_array_dtype(base.arr);
        return FC_OK;
    default: return berr(b, e, FC_ERR_INVALID, "internal: unhandled attribute");
    }
}

static fc_status eval(fcf_builder *b, const fcf_expr *e, fcf_value *out) {
    fc_status st;
    memset(out, 0, sizeof *out);
    switch (e->kind) {
    case E_INT:
        out->kind = V_INT;
        out->i = (fcg_pyint)e->u; /* the lexer kept it within 2**127 - 1 */
        return FC_OK;
    case E_FLOAT: out->kind = V_FLOAT; out->f = e->f; return FC_OK;
    case E_IMAG: out->kind = V_COMPLEX; out->c[0] = 0.0; out->c[1] = e->f; return FC_OK;
    case E_BOOL: out->kind = V_BOOL; out->b = e->b; return FC_OK;
    case E_NONE: out->kind = V_NONE; return FC_OK;
    case E_STR: out->kind = V_STR; out->s = e->str.s; return FC_OK;
    case E_DTYPE: out->kind = V_DTYPE; out->dt = e->dt; return FC_OK;
    case E_ELLIPSIS: out->kind = V_ELLIPSIS; return FC_OK;
    case E_VAR: *out = b->vars[e->index]; return FC_OK;
    case E_SYM: {
        const fcf_symbol *s = &b->prog->syms[e->index];
        if (!s->bound)
            return berr(b, e, FC_ERR_UNBOUND, "dimension symbol '%s' has no value", s->name);
        out->kind = V_INT;
        out->i = s->value;
        return FC_OK;
    }
    case E_LIST: {
        out->kind = V_LIST;
        out->list.n = e->list.n;
        if (e->list.n == 0) return FC_OK;
        out->list.items = arena_alloc(&b->arena, sizeof(fcf_value) * (size_t)e->list.n);
        if (!out->list.items) return bnomem(b);
        for (int i = 0; i < e->list.n; i++)
            if ((st = eval(b, e->list.items[i], &out->list.items[i])) != FC_OK) return st;
        return FC_OK;
    }
    case E_UNARY: {
        fcf_value a;
        if ((st = eval(b, e->bin.a, &a)) != FC_OK) return st;
        if (e->bin.op < 0) { /* unary plus */
            if (a.kind != V_ARRAY && a.kind != V_INT && a.kind != V_FLOAT &&
                a.kind != V_COMPLEX && a.kind != V_SPARSE)
                return berr(b, e, FC_ERR_INVALID, "unary + needs a number or an array, found %s",
                            vkind_name(&a));
            *out = a;
            return FC_OK;
        }
        /* A minus on a number literal makes a negative literal: -1 is a weak scalar, as in
         * Python, not negative(1). */
        if (e->bin.op == FCG_OP_NEGATIVE && a.kind == V_INT) {
            out->kind = V_INT;
            out->i = -a.i; /* literals and symbols lie within +-(2**127 - 1): exact */
            return FC_OK;
        }
        if (e->bin.op == FCG_OP_NEGATIVE && a.kind == V_FLOAT) {
            out->kind = V_FLOAT;
            out->f = -a.f;
            return FC_OK;
        }
        if (e->bin.op == FCG_OP_NEGATIVE && a.kind == V_COMPLEX) {
            out->kind = V_COMPLEX;
            out->c[0] = -a.c[0];
            out->c[1] = -a.c[1];
            return FC_OK;
        }
        if (a.kind == V_SPARSE && e->bin.op == FCG_OP_NEGATIVE) /* -A: (-1) * A */
            return sparse_check(b, e, fc_sparse_multiply(a.sp, fc_i64(b->ctx, -1)), out);
        if (a.kind == V_SPARSE)
            return berr(b, e, FC_ERR_UNSUPPORTED, "%s of a sparse matrix is not supported "
                        "(x.todense() is its dense array)", fcg_ops[e->bin.op].pyname);
        fc_array *x;
        if ((st = to_array(b, e->bin.a, &a, &x)) != FC_OK) return st;
        return bcheck(b, e, fcg_unary_api[e->bin.op](x), out);
    }
    case E_BINARY: {
        fcf_value a, c;
        fc_array *x, *y;
        if ((st = eval(b, e->bin.a, &a)) != FC_OK) return st;
        if ((st = eval(b, e->bin.b, &c)) != FC_OK) return st;
        if (a.kind == V_SPARSE || c.kind == V_SPARSE) return eval_sparse_binary(b, e, &a, &c, out);
        if ((st = to_array(b, e->bin.a, &a, &x)) != FC_OK) return st;
        if ((st = to_array(b, e->bin.b, &c, &y)) != FC_OK) return st;
        if (e->bin.op == FCG_OP_MATMUL) return bcheck(b, e, fc_matmul(x, y), out);
        return bcheck(b, e, fcg_binary_api[e->bin.op](x, y), out);
    }
    case E_CALL: return eval_call(b, e, out);
    case E_KCALL: return eval_kernel_call(b, e, 1, out);
    case E_ATTR: return eval_attr(b, e, out);
    case E_SUBSCRIPT: return eval_subscript(b, e, out);
    case E_SLICE:
        return berr(b, e, FC_ERR_INVALID, "a slice is only allowed inside a subscript");
    }
    return berr(b, e, FC_ERR_INVALID, "internal: unhandled expression");
}

static fc_status check_given_input(fcf_builder *b, const fcf_stmt *s, int i, fc_array *a,
                                 const fc_shape *want, fc_dtype dt) {
    const char *name = b->prog->vars[b->prog->inputs[i].var].name;
    if (fc_array_ctx(a) != b->ctx)
        return fcg_error(b->ctx, FC_ERR_CONTEXT, "%s:%d:%d: input '%s' belongs to another context",
                         b->prog->name, s->line, s->col, name);
    fc_status ast = fc_array_status(a);
    if (ast != FC_OK)
        return fcg_error(b->ctx, ast, "%s:%d:%d: input '%s' is poisoned: %s", b->prog->name,
                         s->line, s->col, name, fc_array_errmsg(a));
    fc_shape got = fc_array_shape(a);
    bool same = got.ndim == want->ndim && fc_array_dtype(a) == dt;
    for (int d = 0; same && d < got.ndim; d++) same = got.dim[d] == want->dim[d];
    if (!same) {
        char ws[200], gs[200];
        fcg_shape_str(ws, want->ndim, want->dim);
        fcg_shape_str(gs, got.ndim, got.dim);
        return fcg_error(b->ctx, fc_array_dtype(a) != dt ? FC_ERR_DTYPE : FC_ERR_SHAPE,
                         "%s:%d:%d: input '%s' is declared %s %s, given %s %s", b->prog->name,
                         s->line, s->col, name, fc_dtype_name(dt), ws,
                         fc_dtype_name(fc_array_dtype(a)), gs);
    }
    return FC_OK;
}

static fc_status build_input(fcf_builder *b, const fcf_stmt *s, fcf_value *out) {
    int i = s->input;
    const fcf_input *in = &b->prog->inputs[i];
    fc_shape shape;
    fc_status st = input_shape(b->prog, i, &shape, s->line, s->col);
    if (st != FC_OK) return st;
    out->kind = V_ARRAY;
    if (b->inputs && b->inputs[i]) {
        if ((st = check_given_input(b, s, i, b->inputs[i], &shape, in->dtype)) != FC_OK) return st;
        out->arr = b->inputs[i];
        return FC_OK;
    }
    /* A placeholder: an INPUT node (never consed) that knows its position. */
    for (int d = 0; d < shape.ndim; d++)
        if (shape.dim[d] < 0)
            return fcg_error(b->ctx, FC_ERR_SHAPE, "%s:%d:%d: negative extent", b->prog->name,
                             s->line, s->col);
    if (fcg_shape_too_large(shape.ndim, shape.dim, in->dtype))
        return fcg_error(b->ctx, FC_ERR_SHAPE, "%s:%d:%d: input of %s is too large (more than "
                         "2^62 bytes)", b->prog->name, s->line, s->col,
                         fc_dtype_name(in->dtype));
    fcg_params p;
    memset(&p, 0, sizeof p);
    p.ival = i;
    fc_array *a = fcg_node(b->ctx, FCG_OP_INPUT, in->dtype, in->dtype, false, shape.ndim,
                           shape.dim, 0, NULL, &p);
    if (!a) return bnomem(b);
    a = fcg_ret(b->ctx, a);
    fcf_value tmp;
    fcf_expr pos;
    memset(&pos, 0, sizeof pos);
    pos.line = s->line;
    pos.col = s->col;
    if ((st = bcheck(b, &pos, a, &tmp)) != FC_OK) return st;
    out->arr = tmp.arr;
    return FC_OK;
}

/* NAME, ... = EXPR: a kernel call gives that many outputs, a list that many items. */
static fc_status build_unpack(fcf_builder *b, const fcf_stmt *s) {
    const fcf_expr *e = s->expr;
    int n = s->ntargets;
    fcf_value *vals = arena_zalloc(&b->arena, sizeof(fcf_value) * (size_t)n);
    if (!vals) return bnomem(b);
    fc_status st;
    if (e->kind == E_KCALL) {
        if ((st = eval_kernel_call(b, e, n, vals)) != FC_OK) return st;
    } else {
        fcf_value v;
        if ((st = eval(b, e, &v)) != FC_OK) return st;
        if (v.kind != V_LIST)
            return berr(b, e, FC_ERR_INVALID, "cannot unpack %s into %d names (a kernel's "
                        "outputs or a list can be unpacked)", vkind_name(&v), n);
        if (v.list.n != n)
            return berr(b, e, FC_ERR_INVALID, "cannot unpack a list of %d into %d names",
                        v.list.n, n);
        memcpy(vals, v.list.items, sizeof(fcf_value) * (size_t)n);
    }
    for (int i = 0; i < n; i++) b->vars[s->targets[i]] = vals[i];
    return FC_OK;
}

fc_status fc_program_build(fc_program *prog, fc_array *const *inputs, fc_array **outputs) {
    if (!prog) return FC_ERR_NULL;
    fc_ctx *ctx = prog->ctx;
    if (!outputs) return fcg_error(ctx, FC_ERR_NULL, "fc_program_build: NULL outputs");
    for (int i = 0; i < prog->nouts; i++) outputs[i] = NULL;
    fcf_builder b;
    memset(&b, 0, sizeof b);
    b.prog = prog;
    b.ctx = ctx;
    b.arena.ctx = ctx;
    b.inputs = inputs;
    fc_scope *scope = fc_scope_open(ctx);
    if (!scope) return bnomem(&b);
    fc_status st = FC_OK;
    b.vars = arena_zalloc(&b.arena, sizeof(fcf_value) * ((size_t)prog->nvars + 1));
    if (!b.vars) st = bnomem(&b);
    for (int k = 0; st == FC_OK && k < prog->nstmts; k++) {
        const fcf_stmt *s = &prog->stmts[k];
        switch (s->kind) {
        case S_INPUT: st = build_input(&b, s, &b.vars[s->var]); break;
        case S_ASSIGN: st = eval(&b, s->expr, &b.vars[s->var]); break;
        case S_UNPACK: st = build_unpack(&b, s); break;
        }
    }
    fc_array *results[64];
    fc_array **res = results;
    if (st == FC_OK && prog->nouts > 64) {
        res = arena_alloc(&b.arena, sizeof(fc_array *) * (size_t)prog->nouts);
        if (!res) st = bnomem(&b);
    }
    int nkept = 0;
    for (int i = 0; st == FC_OK && i < prog->nouts; i++) {
        const fcf_output *o = &prog->outs[i];
        fcf_expr pos;
        memset(&pos, 0, sizeof pos);
        pos.line = o->line;
        pos.col = o->col;
        fc_array *a;
        if (b.vars[o->var].kind == V_SPARSE) {
            const char *nm = prog->vars[o->var].name;
            st = berr(&b, &pos, FC_ERR_UNSUPPORTED, "output '%s' is a sparse matrix; a "
                      "program's outputs are arrays: its dense array (d = %s.todense(); out d) "
                      "or its arrays (%s.data, ...)", nm, nm, nm);
            break;
        }
        if ((st = to_array(&b, &pos, &b.vars[o->var], &a)) != FC_OK) break;
        /* A reference no scope owns survives the close of ours. */
        res[i] = fc_keep(a);
        if (!res[i] || fc_array_status(res[i]) != FC_OK) {
            st = bnomem(&b);
            break;
        }
        nkept++;
    }
    fc_scope_close(scope);
    if (st != FC_OK) {
        for (int i = 0; i < nkept; i++) fc_release(res[i]);
        arena_free(&b.arena);
        return st;
    }
    /* Hand each result to the caller's scope (or to the caller when none is open). */
    bool failed = false;
    for (int i = 0; i < prog->nouts; i++) {
        outputs[i] = fcg_ret(ctx, res[i]);
        if (fc_array_status(outputs[i]) != FC_OK) failed = true;
    }
    arena_free(&b.arena);
    if (failed) {
        /* The scope owns what it took; with no scope open the references are ours to drop. */
        for (int i = 0; i < prog->nouts; i++) {
            if (!ctx->scope && fc_array_status(outputs[i]) == FC_OK) fc_release(outputs[i]);
            outputs[i] = NULL;
        }
        return bnomem(&b);
    }
    return FC_OK;
}
