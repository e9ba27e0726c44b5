/*
 * graph/graph.h - internal: nodes, the context, the op table, dtype and shape helpers.
 *
 * Prefix fcg_. Not installed and not exported from the shared library. Later stages (passes,
 * codegen, runtime, the .fc printer) read nodes through this header; only graph/ creates them.
 */
#ifndef FUSEC_GRAPH_H
#define FUSEC_GRAPH_H

#include "fusec.h"
#include "normal32.h"

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define FCG_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define FCG_PRINTF(f, a)
#endif

/* ---- the op table ----------------------------------------------------------------------- */

typedef enum fcg_op {
#define FCG_OP(E, c, py, nin, kind, rule, infix, params, red) FCG_OP_##E,
#include "ops.def"
#undef FCG_OP
    FCG_OP_COUNT
} fcg_op;

typedef enum fcg_kind {
    FCG_KIND_SPECIAL, FCG_KIND_SOURCE, FCG_KIND_EW, FCG_KIND_REDUCE, FCG_KIND_VIEW, FCG_KIND_LIB,
    FCG_KIND_USER, /* a user's elementwise kernel (graph/user.c): elementwise, body from its
                      definition */
    FCG_KIND_SCAN, /* an inclusive scan along p.axis (cumsum): its descriptor's identity,
                      combine and result rule, as a reduction's; same shape as its input
                      (COMPRESS: a running count, shape [count]) */
    FCG_KIND_GATHER, /* in[0] read at positions in[1] holds (take): elementwise over its own
                        shape, an indexed load of in[0] */
    FCG_KIND_SCATTER, /* in[0] with in[2]'s values combined in at positions in[1] holds
                         (np.add.at): in[0]'s shape, a stored buffer updated in place */
    FCG_KIND_EWX = FCG_KIND_EW /* elementwise with a hand-written constructor (cast) */
} fcg_kind;

/* Result-dtype rules of elementwise ops (graph/dtype.c: fcg_ew_types). */
typedef enum fcg_rule {
    FCG_RULE_NONE,
    FCG_RULE_ARITH,        /* common type (bool allowed) */
    FCG_RULE_ARITH_NOBOOL, /* common type, bool rejected (subtract) */
    FCG_RULE_TRUEDIV,      /* common type; bool/integer -> f64 */
    FCG_RULE_INTDIV,       /* common type; bool -> i8; complex rejected (//, %, fmod) */
    FCG_RULE_POWER,        /* common type; bool -> i8 */
    FCG_RULE_MINMAX,       /* common type */
    FCG_RULE_FLOAT_BINARY, /* common type, then the float rule; complex rejected (arctan2,
                              hypot, logaddexp, logaddexp2, copysign, nextafter) */
    FCG_RULE_COMPARE,      /* common type for the loop, bool result */
    FCG_RULE_LOGICAL,      /* any inputs taken as truth values, bool result */
    FCG_RULE_BITWISE,      /* bool and integers only, common type */
    FCG_RULE_SHIFT,        /* integers (bool -> i8) only, common type */
    FCG_RULE_NEGATIVE,     /* same dtype, bool rejected */
    FCG_RULE_ABS,          /* same dtype; complex -> real */
    FCG_RULE_SIGN,         /* same dtype, bool rejected */
    FCG_RULE_FLOAT_UNARY,  /* the float rule (i8 -> f16, i16 -> f32, i32 -> f64), complex kept */
    FCG_RULE_FLOAT_REAL,   /* the float rule, complex rejected (cbrt, erf, erfc, lgamma) */
    FCG_RULE_SQUARE,       /* same dtype; bool -> i8 (square, reciprocal) */
    FCG_RULE_ROUND_KEEP,   /* same dtype (integers kept), complex rejected (floor, ceil, trunc) */
    FCG_RULE_PREDICATE,    /* bool result (isnan, isinf, isfinite, logical_not) */
    FCG_RULE_FLOAT_PREDICATE, /* bool result of a float loop (the float rule), complex
                                 rejected (signbit) */
    FCG_RULE_BITWISE_NOT,  /* bool and integers only, same dtype */
    FCG_RULE_REALPART,     /* complex -> real dtype, others kept (real, imag) */
    FCG_RULE_CONJ,         /* same dtype; bool -> i8 */
    FCG_RULE_ANGLE,        /* complex -> real dtype; others the float rule */
    FCG_RULE_CAST,         /* the dtype asked for */
    FCG_RULE_WHERE,        /* cond as bool; the other two promote together */
    FCG_RULE_CLIP          /* all three promote together */
} fcg_rule;

/* The fields of fcg_params an op reads (ops.def's params column). Every other field stays
 * zero: consing and the structural hash compare the whole struct, and tests/test_graph.c
 * checks every node of its random programs against its op's mask. The printer, the .fc
 * parser and the pass log take an op's keywords from here (ddof, ord). */
typedef enum fcg_param_field {
    FCG_P_IVAL = 1u << 0, FCG_P_RE = 1u << 1, FCG_P_IM = 1u << 2, FCG_P_COUNT = 1u << 3,
    FCG_P_A = 1u << 4, FCG_P_B = 1u << 5, FCG_P_AXES = 1u << 6, FCG_P_AXIS = 1u << 7,
    FCG_P_DDOF = 1u << 8, FCG_P_KEEPDIMS = 1u << 9, FCG_P_ORD = 1u << 10,
    FCG_P_MODE = 1u << 11, FCG_P_FLAG = 1u << 12
} fcg_param_field;

/* ---- reduction descriptors --------------------------------------------------------------
 * What a reduction computes, as ops.def's red column says it; graph/reduce.c (dtypes, the
 * zero-size check), the host backend (ref/host_reduce.c) and codegen (codegen/cuda.c) read
 * these fields and switch over them without a default, so a new value fails to compile
 * (-Werror=switch) until every stage handles it. Value 0 of each is UNSET: valid only in rows
 * that are not reductions (tests/test_graph.c checks every REDUCE row is complete). */

/* Where an accumulator starts. */
typedef enum fcg_red_identity {
    FCG_ID_UNSET, FCG_ID_ZERO, FCG_ID_ONE, FCG_ID_FALSE, FCG_ID_TRUE,
    FCG_ID_NONE, /* none: the first element starts it; a zero-size reduction is an error */
    FCG_ID_USER  /* a user reduction kernel's identity expression (graph/user.c) */
} fcg_red_identity;

/* What each element contributes, from its value in the loop dtype. */
typedef enum fcg_red_map {
    FCG_MAP_UNSET,
    FCG_MAP_VALUE, /* itself */
    FCG_MAP_ABS,   /* |x| in the loop's real dtype */
    FCG_MAP_ABS2,  /* |x|^2 in the loop's real dtype */
    FCG_MAP_USER   /* the user's map expression over all of the node's inputs */
} fcg_red_map;

/* How contributions fold together (the order of elements is not fixed, except that
 * ARGMAX / ARGMIN prefer the lowest index among equals, and a NaN wins MAX / MIN and both
 * arg reductions, the first NaN for the arg ones). */
typedef enum fcg_red_combine {
    FCG_COMBINE_UNSET, FCG_COMBINE_ADD, FCG_COMBINE_MUL, FCG_COMBINE_OR, FCG_COMBINE_AND,
    FCG_COMBINE_MAX, FCG_COMBINE_MIN, FCG_COMBINE_ARGMAX, FCG_COMBINE_ARGMIN,
    FCG_COMBINE_MOMENTS, /* count, mean and the sum of squared deviations (Welford, Chan) */
    FCG_COMBINE_USER     /* the user's reduce expression of a and b */
} fcg_red_combine;

/* What becomes of the accumulator at the end. */
typedef enum fcg_red_finish {
    FCG_FINISH_UNSET,
    FCG_FINISH_NONE,     /* the accumulated value */
    FCG_FINISH_MEAN,     /* divided by the count of elements */
    FCG_FINISH_VARIANCE, /* squared deviations / max(count - ddof, 0) */
    FCG_FINISH_STD,      /* the square root of that */
    FCG_FINISH_SQRT,     /* the square root of the accumulated value */
    FCG_FINISH_INDEX,    /* the index of the winner (ARGMAX / ARGMIN) */
    FCG_FINISH_USER      /* the user's post-map expression (a: the accumulator) */
} fcg_red_finish;

/* The dtype the accumulator holds. */
typedef enum fcg_red_acc {
    FCG_ACC_UNSET,
    FCG_ACC_EXACT,     /* the loop dtype (max, min, arg*: no rounding to avoid) */
    FCG_ACC_WIDE,      /* floats in f64, complex in c128, others in the result dtype */
    FCG_ACC_WIDE_REAL, /* the real dtype of that (norms) */
    FCG_ACC_USER       /* the user kernel's reduce type (the node's loop dtype) */
} fcg_red_acc;

/* The loop dtype (what the input converts to before its map) and the result dtype, from
 * the input dtype t, as NumPy 2 chooses them. */
typedef enum fcg_red_result {
    FCG_RESULT_UNSET,
    FCG_RESULT_SUM,     /* bool and signed -> i64, unsigned -> u64, others t; loop = result */
    FCG_RESULT_SAME,    /* t, loop t */
    FCG_RESULT_BOOL,    /* bool, loop bool (truth values) */
    FCG_RESULT_COUNT,   /* i64, loop bool (count_nonzero) */
    FCG_RESULT_MEAN,    /* inexact t kept, others f64; loop = result */
    FCG_RESULT_REAL,    /* loop: inexact t kept, others f64; result: the loop's real dtype */
    FCG_RESULT_INDEX,   /* i64, loop t */
    FCG_RESULT_USER     /* set by the user kernel's declaration (graph/user.c) */
} fcg_red_result;

typedef struct fcg_reduction {
    fcg_red_identity identity;
    fcg_red_map map;
    fcg_red_combine combine;
    fcg_red_finish finish;
    fcg_red_acc acc;
    fcg_red_result result;
    bool by_ord; /* the row is ord 2's; p.ord picks the descriptor (fcg_norm_reductions) */
} fcg_reduction;

typedef struct fcg_op_info {
    const char *cname;  /* fc_<cname> */
    const char *pyname; /* NumPy / .fc name */
    int nin;            /* -1: variadic */
    fcg_kind kind;
    fcg_rule rule;
    const char *infix;  /* "" when none */
    uint32_t params;    /* fcg_param_field bits */
    fcg_reduction red;  /* REDUCE ops; all UNSET otherwise */
} fcg_op_info;

/* Norm's descriptors by fc_norm_ord (ops.def's FCG_NORM_ORD rows). */
extern const fcg_reduction fcg_norm_reductions[FC_NORM_INF + 1];

/* The descriptor of reduction op with p.ord == ord (its op's row, or its ord's for a norm),
 * and of reduction node r. */
const fcg_reduction *fcg_reduction_for(fcg_op op, int ord);
const fcg_reduction *fcg_reduction_of(const fc_array *r);

/* The loop and result dtypes of a reduction with this descriptor over dtype t. */
void fcg_reduce_types(const fcg_reduction *d, fc_dtype t, fc_dtype *loop, fc_dtype *out);

/* The accumulator dtype of reduction r (its acc rule over its loop and result dtypes). */
fc_dtype fcg_reduce_acc_dtype(const fc_array *r);

/* A reduction op over axes, with the keywords its params mask reads (ddof: FCG_P_DDOF, ord:
 * FCG_P_ORD; ignored otherwise). The public fc_sum ... call it; the .fc builder reaches every
 * reduction row through it. Not for argmax / argmin (one axis: fc_argmax). */
fc_array *fcg_reduce(fcg_op op, fc_array *a, fc_axes axes, bool keepdims, int ddof, int ord);

/* NumPy's long dtype names (float32, int64, bool_, ...) and a parser of either spelling. */
typedef struct fcg_dtype_alias {
    const char *name;
    fc_dtype dtype;
} fcg_dtype_alias;
extern const fcg_dtype_alias fcg_dtype_aliases[];
extern const size_t fcg_dtype_alias_count;
fc_status fcg_dtype_parse(const char *s, size_t n, fc_dtype *out);
/* ---- Python integers (graph/pyint.c) -----------------------------------------------------
 * A Python integer held exactly: 128-bit two's complement, the range fusec gives them (a value
 * or result beyond it is an error, never a wrap). Weak integer CONST nodes hold one canonically
 * (pyint.c says how); those outside int64 and uint64 ("wide") never reach a backend. */
__extension__ typedef __int128 fcg_pyint;
__extension__ typedef unsigned __int128 fcg_upyint;
#define FCG_PYINT_STR 48 /* a decimal fcg_pyint and its NUL */

/* The value of a weak integer constant; false when a is not one. */
bool fcg_pyint_of(const fc_array *a, fcg_pyint *v);
/* Whether a is a weak integer constant outside both int64 and uint64. */
bool fcg_pyint_is_wide(const fc_array *a);
/* Whether v fits integer dtype t (NEP 50: a weak int out of range is an error, not a wrap);
 * true for other dtypes. */
bool fcg_pyint_fits(fcg_pyint v, fc_dtype t);
/* Smallest and largest value of integer (or bool) dtype t. */
fcg_pyint fcg_pyint_min(fc_dtype t);
fcg_pyint fcg_pyint_max(fc_dtype t);
const char *fcg_pyint_str(fcg_pyint v, char buf[FCG_PYINT_STR]);
/* The canonical weak constant holding Python integer v: a reference for the API caller
 * (fcg_ret), or one the graph code owns (fcg_node: NULL when memory runs out). */
fc_array *fcg_pyint_const(fc_ctx *ctx, fcg_pyint v);
fc_array *fcg_pyint_node(fc_ctx *ctx, fcg_pyint v);
/* Whether comparison op holds for a three-way result c (-1, 0, 1; 2: unordered). */
bool fcg_compare_holds(fcg_op op, int c);
/* An operator (an op with an infix spelling) whose operands are all weak bool, int or float
 * constants is Python's, done before NumPy sees the result: *out is that result, a new weak
 * constant computed with Python's rules (arbitrary-size ints, true division of ints, bools as
 * ints, ZeroDivisionError...), or NULL when the op is not such a case. An error Python raises
 * is returned with a message naming the op and its operands. */
fc_status fcg_python_fold(fc_ctx *ctx, fcg_op op, int nin, fc_array *const *in, fc_array **out);

/* What an elementwise op does with each weak Python integer among its operands where it meets
 * an array, as NumPy 2.4 does (graph/dtype.c: fcg_weak_ints). */
typedef enum fcg_pyint_use {
    FCG_PYINT_KEEP,     /* converted to the loop dtype as any operand is */
    FCG_PYINT_AS_FLOAT, /* an int beyond 2**53 meeting a float or complex loop: replaced by
                           its double, which is how NumPy converts it to that loop */
    FCG_PYINT_NO_MIN,   /* clip's bound at or below the array dtype's minimum (NumPy >= 2.1
                           drops it): replaced by the loop dtype's minimum, a no-op bound */
    FCG_PYINT_NO_MAX    /* likewise at or above its maximum */
} fcg_pyint_use;

typedef struct fcg_weak_fix {
    fcg_pyint_use use[3];
    int settled; /* comparisons: -1, or the value (0, 1) of every element: an int array
                    compared with a Python int outside its dtype (NumPy 2 answers exactly) */
} fcg_weak_fix;

/* ---- user kernels (graph/user.c) ---------------------------------------------------------
 * A definition made by fc_elementwise_kernel / fc_reduction_kernel. Its nodes (USER_EW,
 * USER_REDUCE) name it by p.ival = hash, a 64-bit hash of its canonical text, so equal
 * definitions give equal nodes and the structural hash is the same in every process; the
 * context keeps every definition until it is destroyed (fcg_user_find). */

#define FCG_USER_MAX_PARAMS 16
#define FCG_USER_MAX_PLACEHOLDERS 8
#define FCG_USER_NAME_MAX 64

typedef struct fcg_user_param {
    char name[FCG_USER_NAME_MAX];
    int dtype;   /* fc_dtype, or -1: placeholder number `place` */
    int place;
    bool raw;    /* not broadcast: the body indexes it (x[j], x.size()) */
} fcg_user_param;

typedef enum fcg_user_kind { FCG_USER_ELEMENTWISE, FCG_USER_REDUCTION } fcg_user_kind;

struct fc_kernel {
    fc_ctx *ctx;
    fcg_user_kind kind;
    uint64_t hash;      /* of the canonical text below */
    char name[FCG_USER_NAME_MAX];
    int nin, nout;
    fcg_user_param in[FCG_USER_MAX_PARAMS], out[FCG_USER_MAX_PARAMS];
    int nplace;
    char place[FCG_USER_MAX_PLACEHOLDERS][FCG_USER_NAME_MAX];
    char *in_text, *out_text; /* the declarations as given, for printing */
    char *body;               /* ELEMENTWISE: the operation (C statements) */
    char *map, *reduce, *post, *identity; /* REDUCTION: expressions (post: statements) */
    int reduce_dtype;         /* REDUCTION: fc_dtype of a and b, or -1 - placeholder */
    bool uses_i;              /* the body or map reads i, the element's linear index */
    struct fc_kernel *next;   /* the context's list */
};
typedef struct fc_kernel fcg_user_kernel;

/* The definition a USER_EW / USER_REDUCE node names, or NULL (never for a node of ctx). */
const fcg_user_kernel *fcg_user_find(const fc_ctx *ctx, uint64_t hash);
/* The dtype a placeholder or parameter has in node a (from its inputs, as the call bound it). */
fc_dtype fcg_user_place_dtype(const fc_array *a, const fcg_user_kernel *k, int place);
fc_dtype fcg_user_param_dtype(const fc_array *a, const fcg_user_kernel *k, const fcg_user_param *p);
/* What a node computes, for logs and summaries: a user kernel's name, else the op's. */
const char *fcg_node_name(const fc_array *a);
/* Frees every definition of ctx (at its destruction). */
void fcg_user_free_all(fc_ctx *ctx);

extern const fcg_op_info fcg_ops[FCG_OP_COUNT];

/* Public constructors of elementwise ops, indexed by op (NULL where arity differs). The .fc
 * parser dispatches calls through these. */
typedef fc_array *(*fcg_unary_fn)(fc_array *);
typedef fc_array *(*fcg_binary_fn)(fc_array *, fc_array *);
typedef fc_array *(*fcg_ternary_fn)(fc_array *, fc_array *, fc_array *);
extern const fcg_unary_fn fcg_unary_api[FCG_OP_COUNT];
extern const fcg_binary_fn fcg_binary_api[FCG_OP_COUNT];
extern const fcg_ternary_fn fcg_ternary_api[FCG_OP_COUNT];

/* ---- nodes ------------------------------------------------------------------------------ */

/* Op parameters. Always zero-filled before use: consing compares and the structural hash reads
 * the bytes, padding included. Which fields an op uses:
 *   CONST      ival (bool and integers; u64 as its bits), re (floats), re + im (complex);
 *              a weak Python integer outside int64 and uint64: ival its low 64 bits,
 *              count its high 64 bits (never 0; graph/pyint.c)
 *   ARANGE     re = start, im = step
 *   LINSPACE   re = start, im = stop, count = num, flag = endpoint
 *   EYE        ival = k (the output shape is [n, m])
 *   RANDOM     ival = seed (as u64 bits)
 *   REDUCE ops axes = bitmask over the input's dims, keepdims, ddof (var/std), ord (norm,
 *              fc_norm_ord); argmax/argmin: axes has one bit, or every bit and flag = 1 for
 *              the flattened array (FC_AXIS_NONE)
 *   PERMUTE    a[i] = input axis of output axis i
 *   SLICE      a[d] = start, b[d] = step (never 0); output extents are the node's shape. Same
 *              rank as the input: integer indices and new axes become a RESHAPE
 *   BROADCAST  nothing: the node's shape is the target; input dims align on the right
 *   RESHAPE    nothing: the node's shape is the target
 *   PAD        a[d] = before, b[d] = after, mode (fc_pad_mode), re = constant value
 *   CONCAT     axis
 *   FFT, IFFT  retired (ops.def): no builder makes them
 *   FFTN       flag = the kind (fcg_fft_kind), axes = the transformed axes (adjacent, at most
 *              three), axis = the last of them (the real axis of R2C and C2R)
 *   CUMSUM ..  axis (normalised)
 *   TAKE       axis of in[0] (normalised) that in[1]'s values index, mode (fc_take_mode); the
 *              result's shape is in[0]'s with that axis replaced by in[1]'s shape
 *   SEARCHSORTED  mode (fc_side); the result has in[1]'s shape
 *   SCATTER_*  axis of in[0] (normalised) that in[1]'s values index, mode (fc_take_mode or
 *              FC_TAKE_DROP); in[2] has the updates' shape (in[0]'s with axis replaced by
 *              in[1]'s shape) and in[0]'s dtype
 *   INPUT      ival = the program input's index (placeholders are never consed)
 */
typedef struct fcg_params {
    int64_t ival;
    double re, im;
    int64_t count;
    int64_t a[FC_MAX_DIMS];
    int64_t b[FC_MAX_DIMS];
    uint32_t axes;
    int32_t axis;
    int32_t ddof;
    uint8_t keepdims, ord, mode, flag;
} fcg_params;

/* An fc_array is a graph node. Immutable once built, except `host` (its value, filled in once
 * known) and the reference count. */
struct fc_array {
    /* What every graph walk reads (the inputs, whether the node holds a value, the walk's
     * scratch, the cons table's link, the plan key's hashes) comes first: 128 bytes, so that
     * a walk touches two or three cache lines of a node rather than one per field. */
    fc_ctx *ctx;
    uint32_t refs;        /* UINT32_MAX: immortal (the context's out-of-memory poison) */
    uint16_t op;          /* fcg_op */
    uint8_t dtype;        /* fc_dtype of the result */
    uint8_t loop_dtype;   /* EW: dtype the inputs convert to before the op (the ufunc loop);
                             REDUCE: dtype the input converts to before accumulating */
    uint8_t weak;         /* weakly typed scalar (NEP 50) */
    fc_status status;     /* FC_OK, or the error that poisoned it (op == POISON) */
    int nin;
    fc_array **in;        /* points at in_inline for nin <= 3 */
    fc_array *in_inline[3];
    void *host;           /* the value, row-major contiguous in dtype, or NULL */
    /* The value a backend other than the host's holds: opaque here, read and written by that
     * backend alone (backend/backend.h). The graph and passes only ask fcg_has_value. */
    uint64_t dev;         /* its handle (the CUDA backend: a CUdeviceptr), or 0 */
    /* Scratch of graph/'s own walks, which any later walk overwrites: passes, codegen and
     * tools keep their own maps (graph/nodemap.h) and never read or write these. */
    uint64_t visit;       /* == ctx->visit_epoch when seen this walk */
    int64_t order;        /* position in the last walk that saw it */
    fc_array *cons_next;
    uint64_t cons_hash;
    uint64_t shape_hash;  /* dtype, weak and shape: the node as a leaf of a plan's key */
    uint64_t local_hash;  /* op, dtypes, shape and params: the node inside a plan's key */
    int ndim;
    int64_t shape[FC_MAX_DIMS];
    fcg_params p;
    uint64_t id;          /* creation order in the context; never part of a structural hash */
    bool unhashed;        /* made while planning: the two hashes above are computed when a
                             plan key first reaches the node (fcg_plan_key), not before */
    size_t host_bytes;
    size_t dev_bytes;
    uint32_t dev_stream;  /* id of the stream that wrote it (0: the context's own) */
    uint32_t dev_reader;  /* 0: no other stream read it; id + 1 of the one that did;
                             UINT32_MAX: several did */
    char *errmsg;         /* POISON: the message of the op that failed */
    /* A check of this value's entries that passed (graph/sparse.c's index and indptr checks:
     * which, and its bound), so that a matrix built again from the same arrays reads them as
     * they are; 0: none. A value never changes but by fc_write, which clears it. */
    uint8_t checked_kind;
    int64_t checked_bound;
    fc_array *all_prev, *all_next; /* every live node of the context, for fc_ctx_destroy */
    /* The value's memory is shared with code outside fusec (api/interop.c: imported from it,
     * or exported to it): that layer's record, else NULL. A shared value is never given to
     * another array (a result written over a dying input), and when the node dies the graph
     * hands it to ctx->unshare instead of freeing it. */
    void *share;
};

/* Whether the array holds a value, on the host or in its backend: such a node is a leaf. */
static inline bool fcg_has_value(const fc_array *a) { return a->host || a->dev; }

/* ---- the context ------------------------------------------------------------------------ */

typedef struct fcb_backend fcb_backend; /* backend/backend.h */

#define FCG_ERRMSG_MAX 1024

struct fc_scope {
    fc_ctx *ctx;
    fc_scope *parent;
    fc_array **owned;
    size_t n, cap;
};

/* A stream or event of the public API (api/api.c). `cu` is the CUstream / CUevent on the
 * CUDA backend, NULL on the host backend. Contexts list them to destroy leftovers. */
struct fc_stream {
    fc_ctx *ctx;
    void *cu;
    uint32_t id;          /* > 0; arrays name the stream that wrote them by id */
    bool external;        /* wraps a stream fusec did not create (fc_stream_wrap): never
                             destroyed by fusec */
    fc_stream *prev, *next;
};

struct fc_event {
    fc_ctx *ctx;
    void *cu;
    double host_ms;       /* host backend: wall clock at record */
    bool recorded;
    fc_event *prev, *next;
};

/* A frame of fcg_plan_key's walk. */
struct fcg_key_frame {
    fc_array *node;
    int next;
};

struct fc_ctx {
    fc_allocator alloc;
    int device;
    char *cache_dir;
    char errmsg[FCG_ERRMSG_MAX];
    fc_scope *scope;      /* innermost open scope */
    fc_array **cons;      /* hash-consing buckets */
    size_t cons_cap, cons_n;
    int planning;         /* > 0 inside fcp_plan_build: the nodes its passes make are seldom
                             keyed, so their key hashes wait until they are (unhashed) */
    uint64_t next_id;
    fc_array oom;         /* immortal poison returned when even a poison cannot be allocated */
    fc_array *all;        /* list of every live node */
    uint64_t visit_epoch; /* bumped by each graph walk */
    char *trace_path;     /* fc_set_trace / FUSEC_TRACE: programs evaluated are appended here */
    bool trace_warned;
    const fcb_backend *be; /* the backend's functions (backend/backend.h): opaque here */
    void *be_state;       /* and its state (NULL on the host backend) */
    void (*free_value)(fc_ctx *ctx, fc_array *a); /* frees a backend value (a->dev) */
    /* A dying node's shared value (a->share) goes here instead of being freed: the interop
     * layer takes it out of a (api/interop.c). */
    void (*unshare)(fc_ctx *ctx, fc_array *a);
    void *interop;        /* api/interop.c's state: exports still held outside, and such */
    void *kcache;         /* the kernel cache store, opened on first compile (codegen/) */
    void (*kcache_close)(void *kcache);
    size_t live_nodes;
    size_t host_in_use, host_peak; /* bytes held through the allocator (graph/ctx.c) */
    size_t memory_limit;  /* fc_ctx_options.memory_limit */
    size_t preallocate;   /* fc_ctx_options.preallocate */
    int cuda_graphs;      /* fc_ctx_options.cuda_graphs */
    bool fast_math;       /* the fast-math tier (fc_ctx_options.fast_math, FUSEC_FAST_MATH):
                             simplify's complex-abs compare, codegen's fast_math.cuh and NVRTC's
                             --use_fast_math, the plan key */
    fc_stream *streams;   /* live user streams */
    fc_event *events;     /* live events */
    uint32_t next_stream_id;
    /* scratch of fcg_plan_key, kept between calls so a cached evaluation allocates nothing */
    fc_array **key_order;
    size_t key_order_cap;
    struct fcg_key_frame *key_stack;
    size_t key_stack_cap;
    uint32_t *key_words;
    size_t key_words_cap;
    struct fc_kernel *user_kernels; /* every user kernel defined (graph/user.c) */
    struct fc_module *modules;      /* raw modules not yet destroyed (api/raw.c) */
};

/* ---- memory (every allocation goes through the context's allocator) -------------------- */

void *fcg_malloc(fc_ctx *ctx, size_t size);
void *fcg_calloc(fc_ctx *ctx, size_t size);
void *fcg_realloc(fc_ctx *ctx, void *ptr, size_t old_size, size_t new_size);
void fcg_free(fc_ctx *ctx, void *ptr, size_t size);
char *fcg_strdup(fc_ctx *ctx, const char *s);
/* Strings from fcg_strdup are freed with fcg_strfree (their size is strlen + 1). */
void fcg_strfree(fc_ctx *ctx, char *s);

/* ---- a growable string (graph/strbuf.c) ------------------------------------------------ */

typedef struct fcg_sb {
    fc_ctx *ctx;
    char *s;
    size_t len, cap;
    bool failed; /* an allocation failed: later appends do nothing */
} fcg_sb;
void fcg_sb_printf(fcg_sb *b, const char *fmt, ...) FCG_PRINTF(2, 3);
void fcg_sb_puts(fcg_sb *b, const char *str);
/* The text as an exact-size string (free with fcg_strfree), or NULL if anything failed
 * (the buffer is freed either way). */
char *fcg_sb_finish(fcg_sb *b);
void fcg_sb_free(fcg_sb *b);

/* ---- errors ----------------------------------------------------------------------------- */

/* Writes the context's message and returns `status`. */
fc_status fcg_error(fc_ctx *ctx, fc_status status, const char *fmt, ...) FCG_PRINTF(3, 4);
fc_status fcg_verror(fc_ctx *ctx, fc_status status, const char *fmt, va_list ap);
/* A new poisoned array carrying the message (also written to the context), registered in the
 * open scope like any result. Falls back to the immortal out-of-memory poison. */
fc_array *fcg_poison(fc_ctx *ctx, fc_status status, const char *fmt, ...) FCG_PRINTF(3, 4);
/* fcg_poison with the message already in the context (set by a failing helper). */
fc_array *fcg_poison_ctx(fc_ctx *ctx, fc_status status);
/* Broadcasts the shapes of in[0..n) (NumPy rules) into *ndim / shape. On mismatch writes a
 * message naming `opname`, every shape and dtype, and returns FC_ERR_SHAPE. */
fc_status fcg_broadcast_shapes(fc_ctx *ctx, const char *opname, int n, fc_array *const *in,
                               int *ndim, int64_t *shape);
/* Normalises an axis set of an ndim-array into a bitmask (FC_ALL: every axis). Out-of-range
 * or repeated axes: a message naming `opname` and FC_ERR_AXIS. */
fc_status fcg_axes_mask(fc_ctx *ctx, const char *opname, int ndim, const int64_t *shape,
                        fc_axes axes, uint32_t *mask);
/* A RESHAPE that only inserts or removes extent-1 axes: the other axes map in order, so
 * fusion and codegen can treat it as index-preserving. */
bool fcg_unit_reshape(const fc_array *a);
/* The array a transposes when a is a PERMUTE that swaps the last two axes and keeps the others
 * in place (x.T of a matrix, swapaxes(x, -1, -2) of a stack), else NULL: a matmul reads such an
 * operand as its source's buffer with cuBLAS's transpose flag instead of a copy. */
fc_array *fcg_matrix_transpose_of(const fc_array *a);
/* The source of a when a is a view that reverses the flat order of a 2-d array (fc_flip of
 * both axes: a SLICE stepping -1 from the end of every axis longer than 1; a stencil reads
 * such weights from their source's buffer, reversed: codegen/stencil.c), else NULL. */
fc_array *fcg_flat_reverse_of(const fc_array *a);
/* The LINALG_SLOGDET node of a ([..., 2]: sign, log|det|) that fc_linalg_slogdet and
 * fc_linalg_det read through views (graph/linalg.c); the .fc printer's linalg.slogdet_packed. */
fc_array *fcg_linalg_slogdet_packed(fc_array *a);
/* " (matrix [i, j] of the stack)": where matrix b (row-major over the batch) of the stack x
 * ([..., n, n]) is, for a linalg error message; "" when x is one matrix. Returns buf. */
const char *fcg_linalg_where(char *buf, size_t size, const fc_array *x, int64_t b);
/* The LINALG_QR node of a (fc_qr_mode `mode`: [..., rows, c + n] holding Q and R) and the
 * LINALG_EIGH node ([..., n + 1, n]: eigenvalues, then eigenvectors) that fc_linalg_qr and
 * fc_linalg_eigh read through views; the .fc printer's linalg.qr_packed and
 * linalg.eigh_packed. */
fc_array *fcg_linalg_qr_packed(fc_array *a, int mode);
/* NumPy's names of the fc_qr_mode values, in order: "reduced", "complete", "r". */
extern const char *const fcg_qr_mode_names[3];
fc_array *fcg_linalg_eigh_packed(fc_array *a, bool upper);
/* The LINALG_SVD node of a ([..., 1 + m + vr, w]: S, then U, then Vh) that fc_linalg_svd reads
 * through views; the .fc printer's linalg.svd_packed. */
fc_array *fcg_linalg_svd_packed(fc_array *a, bool full_matrices);
/* Whether op is one of the dense linear algebra ops (ops.def's LINALG_*): library calls of
 * ref/host_linalg.c and backend/cuda_lib.c's cuSOLVER path. */
static inline bool fcg_op_is_linalg(int op) {
    return op == FCG_OP_LINALG_SOLVE || op == FCG_OP_LINALG_SLOGDET ||
           op == FCG_OP_LINALG_CHOLESKY || op == FCG_OP_LINALG_QR || op == FCG_OP_LINALG_EIGH ||
           op == FCG_OP_LINALG_EIGVALSH || op == FCG_OP_LINALG_SVD || op == FCG_OP_LINALG_SVDVALS;
}
/* The np.linalg function a linalg node is named by in errors: inv for LINALG_SOLVE's inv
 * flag, svd for LINALG_SVD (whose pyname is the printer's svd_packed), else the pyname. */
static inline const char *fcg_linalg_name(const fc_array *a) {
    if (a->op == FCG_OP_LINALG_SOLVE && a->p.flag) return "inv";
    return a->op == FCG_OP_LINALG_SVD ? "svd" : fcg_ops[a->op].pyname;
}
/* The CSR_MATMUL node (ops.def) of the CSR matrix (indptr [m + 1], indices [nnz], data
 * [nnz]) times x ([n] or [n, k], data's dtype), its arrays used as they are: dtypes and shapes
 * are checked (poisons naming csr_matmul), index values are not (fc_sparse_csr and
 * fc_sparse_coo check them; the host reference checks them again). fc_sparse_matmul and the
 * .fc printer's sparse.csr_matmul build it (graph/sparse.c). */
fc_array *fcg_csr_matmul(fc_array *indptr, fc_array *indices, fc_array *data, fc_array *x);

/* ---- convolution (graph/convolve.c) ----------------------------------------------------- */

/* SciPy's names of fc_conv_mode, fc_conv_boundary and fc_conv_method values, in enum order. */
extern const char *const fcg_conv_mode_names[3];
extern const char *const fcg_conv_boundary_names[3];
extern const char *const fcg_conv_method_names[3];
/* The STENCIL2D node (ops.def says what it computes) of x [H, W] and weights w [KH, KW]:
 * shape [oh, ow], origin (oy, ox), boundary, fill value (converted to the dtype already). x
 * and w must have one of its dtypes (every integer, f32, f64, c64, c128) and the same one.
 * The printer's form signal.stencil2d(...) parses back to it. */
fc_array *fcg_stencil2d(fc_array *x, fc_array *w, int64_t oh, int64_t ow, int64_t oy,
                        int64_t ox, int boundary, double fill_re, double fill_im);
/* The op table's two-input constructor for the STENCIL2D row (graph/ops.c's tables take
 * fc_<cname> for every binary library row): the full correlation of x with w, zero fill.
 * Internal (not exported). */
fc_array *fc_stencil2d(fc_array *x, fc_array *w);
/* Whether method auto computes a convolution of an [oh, ow] result with a [kh, kw] kernel in
 * dtype t through the FFT (docs/ARCHITECTURE.md, "Convolution"). */
bool fcg_conv_prefers_fft(fc_dtype t, int64_t oh, int64_t ow, int64_t kh, int64_t kw);
/* The smallest n' >= n whose factors are 2, 3, 5 and 7 (an FFT length cuFFT does fast). */
int64_t fcg_fft_fast_len(int64_t n);
/* "[4096, 1024]" into buf (at least 200 bytes); returns buf. */
char *fcg_shape_str(char *buf, int ndim, const int64_t *shape);

/* ---- node construction (graph/node.c) --------------------------------------------------- */

/* Finds or creates the node with these fields (hash-consed unless op is DATA, INPUT or
 * POISON). Takes a new reference to each input. Returns a new reference owned by the caller,
 * or NULL when memory runs out (the context's message says so). */
fc_array *fcg_node(fc_ctx *ctx, fcg_op op, fc_dtype dtype, fc_dtype loop_dtype, bool weak,
                   int ndim, const int64_t *shape, int nin, fc_array *const *in,
                   const fcg_params *p);
void fcg_retain(fc_array *a);
/* Drops a reference; frees the node, and inputs that become unreferenced, without recursion. */
void fcg_release(fc_array *a);
/* Hands a new reference to the API caller: the innermost open scope takes ownership. On
 * failure releases `a` and returns the out-of-memory poison. NULL becomes that poison too. */
fc_array *fcg_ret(fc_ctx *ctx, fc_array *a);
/* The end of a function built of other ops inside a private scope: keeps r, closes the scope
 * (releasing the temporaries) and hands r to the caller's scope, as fcg_ret does (the
 * out-of-memory poison when r is NULL or cannot be kept). */
fc_array *fcg_scope_return(fc_ctx *ctx, fc_scope *scope, fc_array *r);
/* Functions with several results (fc_unique, fc_linalg_qr, ...; at most FCG_MULTI_MAX).
 * fcg_multi_begin checks their nin inputs: a NULL one sets *status to FC_ERR_NULL and returns
 * NULL, the outputs untouched. Then it opens the scope they are built in, or, out of memory,
 * gives every non-NULL outs[i] (a reference to) one poison naming `name`, sets *status and
 * returns NULL; and sets *early to fcg_begin's poison for a bad input (NULL where none is).
 * fcg_multi_return ends such a function: each non-NULL outs[i] receives a new reference to
 * res[i] (to `poison` instead when one is given) in the caller's scope, as fcg_ret does; it
 * returns poison's status, else the first result's error, else FC_OK. */
#define FCG_MULTI_MAX 4
fc_scope *fcg_multi_begin(const char *name, int nin, fc_array *const *in, int n,
                          fc_array **const *outs, fc_status *status, fc_array **early);
fc_status fcg_multi_return(fc_ctx *ctx, fc_scope *s, int n, fc_array **const *outs,
                           fc_array *const *res, fc_array *poison);
/* "[3, 4] (f32)": a's shape and dtype for a message, into buf (FCG_DESC_MAX bytes). */
#define FCG_DESC_MAX 240
const char *fcg_desc(char *buf, const fc_array *a);
/* a[..., start:stop:step, ...] along one axis (Python slice bounds), as fc_index. */
fc_array *fcg_slice_axis(fc_array *a, int axis, int64_t start, int64_t stop, int64_t step);
/* The common prologue of a public op over `n` inputs. Returns the context, or NULL when no
 * input has one (all NULL). When the op must not go on, *early is set to what it returns:
 * the first poisoned input (a new reference), or a new poison for a NULL input or mixed
 * contexts. */
fc_ctx *fcg_begin(const char *opname, int n, fc_array *const *in, fc_array **early);
/* fcg_begin for elementwise ops, which also take wide Python integers (graph/pyint.c) and
 * convert them or refuse them themselves. */
fc_ctx *fcg_begin_ew(const char *opname, int n, fc_array *const *in, fc_array **early);
/* The largest array, in bytes, any shape may describe: so every byte offset, extent and
 * stride of an array (and their sums in index arithmetic) fits in int64. */
#define FCG_MAX_BYTES ((uint64_t)1 << 62)
/* Whether a shape has a negative extent or describes more than FCG_MAX_BYTES of dtype (the
 * product of its non-zero extents, as NumPy counts). */
bool fcg_shape_too_large(int ndim, const int64_t *shape, fc_dtype dtype);
/* fcg_ret of a node built by fcg_node, which may be NULL on out-of-memory; a shape
 * fcg_shape_too_large refuses gives a FC_ERR_SHAPE poison naming the op. */
fc_array *fcg_make(fc_ctx *ctx, fcg_op op, fc_dtype dtype, fc_dtype loop_dtype, bool weak,
                   int ndim, const int64_t *shape, int nin, fc_array *const *in,
                   const fcg_params *p);
size_t fcg_numel(int ndim, const int64_t *shape);
static inline size_t fcg_node_numel(const fc_array *a) { return fcg_numel(a->ndim, a->shape); }

/* Every node reachable from arrays[0..n), each once, inputs before their users: DFS
 * post-order from the arrays in order, inputs in order. With stop_at_values, a node that
 * holds a value (a->host) is a leaf: its inputs are not visited. *order is fcg_malloc'd
 * (*count pointers; free with fcg_free). The walk stamps the nodes' scratch fields for
 * graph/'s own use; a caller that needs positions maps them itself (fcg_nodemap_positions).
 * No recursion: deep graphs are fine. */
/* After a write into a: a and every node computed from it leave the cons table (graph/node.c). */
fc_status fcg_detach(fc_ctx *ctx, fc_array *a);

/* An evaluated array becomes a leaf: a node that holds a value (a->host or a->dev) drops its
 * inputs and turns into DATA, so a loop that keeps only its latest state runs in constant
 * memory (graph/node.c). It leaves the cons table: an identical expression built later is a
 * new node, computed again. Sources (no inputs) stay as they are. */
void fcg_cut_history(fc_ctx *ctx, fc_array *a);

/* Whether a CONST's value is part of the plan key. Scalars are kernel arguments: a plan is
 * reused whatever their values, so passes may look at a constant's value only where it is
 * keyed (simplify's rules go through this test). Keyed: bools, and integer-valued constants
 * in [-4, 4] (±0.0 included, complex with a zero imaginary part): the values of identities,
 * small powers and constant conditions. */
bool fcg_const_keyed(const fc_array *c);

/* Fills a->shape_hash and a->local_hash (graph/hash.c) and clears a->unhashed; called when a
 * node is made, or for one made while planning when a plan key first reaches it. */
void fcg_node_hashes(fc_array *a);
/* The plan cache's key, fast: the graph cut at values, each node by its precomputed
 * local_hash / shape_hash and its inputs' positions, and the context's fast-math tier when it
 * is on. *order_out is the walk's order (nodes by
 * position), in a buffer the context owns: valid until the next call. */
fc_status fcg_plan_key(fc_ctx *ctx, fc_array *const *arrays, int n, fc_hash *out,
                       fc_array *const **order_out, size_t *count_out);
/* Which nodes of a plan key's walk die with the evaluation of its arrays: once they hold
 * values, the arrays drop their inputs (fcg_cut_history), and a node whose every reference
 * comes from them or from other dying nodes is freed then. A dying value's buffer is dead
 * after the evaluation's last read of it, so a result may be written into it. order / count
 * are fcg_plan_key's (positions in a->order); dropped is count words of scratch; dies[i] is
 * set for the position i of a node that dies (never an array itself). Conservative: any
 * reference the walk does not see (a scope, the caller, an expression outside the walk, a
 * plan being built) keeps a node alive. */
void fcg_dying_nodes(fc_array *const *arrays, int n, fc_array *const *order, size_t count,
                     uint32_t *dropped, uint8_t *dies);
fc_status fcg_topo_order(fc_ctx *ctx, fc_array *const *arrays, int n, bool stop_at_values,
                         fc_array ***order, size_t *count);
/* The wiring of a walk by positions, for passes that would otherwise look each input up in a
 * map (graph/nodemap.h): the inputs of order[i] are at positions pos[first[i]] up to
 * pos[first[i + 1]] (none for a node the walk stopped at: it holds a value), and arrays[r] is
 * at roots[r]. */
typedef struct fcg_topo_edges {
    int32_t *first; /* count + 1 entries */
    int32_t *pos;   /* nedge entries */
    int32_t *roots; /* n entries */
    size_t count, nedge;
    int n;
} fcg_topo_edges;
/* fcg_topo_order, and its edges into *e (free with fcg_topo_edges_free; also on failure, when
 * *e is empty). */
fc_status fcg_topo_order_edges(fc_ctx *ctx, fc_array *const *arrays, int n,
                               bool stop_at_values, fc_array ***order, size_t *count,
                               fcg_topo_edges *e);
void fcg_topo_edges_free(fc_ctx *ctx, fcg_topo_edges *e);

/* ---- dtypes (graph/dtype.c) ------------------------------------------------------------- */

static inline bool fcg_is_bool(fc_dtype t) { return t == FC_BOOL; }
static inline bool fcg_is_sint(fc_dtype t) { return t >= FC_I8 && t <= FC_I64; }
static inline bool fcg_is_uint(fc_dtype t) { return t >= FC_U8 && t <= FC_U64; }
static inline bool fcg_is_int(fc_dtype t) { return t >= FC_I8 && t <= FC_U64; }
static inline bool fcg_is_float(fc_dtype t) { return t >= FC_F16 && t <= FC_F64; }
static inline bool fcg_is_complex(fc_dtype t) { return t == FC_C64 || t == FC_C128; }
static inline bool fcg_is_inexact(fc_dtype t) { return t >= FC_F16; }
/* c64 -> f32, c128 -> f64, others unchanged. */
fc_dtype fcg_real_dtype(fc_dtype t);
/* The float rule of NumPy's float ufuncs: smallest of f16, f32, f64 that holds t safely
 * (bool, i8, u8 -> f16; i16, u16 -> f32; wider -> f64); floats and complex unchanged. */
fc_dtype fcg_float_of(fc_dtype t);
/* Whether NumPy's "safe" casting allows from -> to. */
bool fcg_can_cast_safe(fc_dtype from, fc_dtype to);

/* Result and loop dtypes of an elementwise op over its inputs (weak scalars per NEP 50).
 * `cast_to` is the target of CAST. On error writes the context's message naming op and dtypes
 * and returns its status. */
fc_status fcg_ew_types(fc_ctx *ctx, fcg_op op, int nin, fc_array *const *in, fc_dtype cast_to,
                       fc_dtype *out_dtype, fc_dtype *loop_dtype, bool *out_weak);
/* After fcg_ew_types accepted op over `in` with loop dtype `loop`: what becomes of each weak
 * Python integer operand (fix->use) and whether a comparison is settled (fix->settled). */
void fcg_weak_ints(fcg_op op, int nin, fc_array *const *in, fc_dtype loop, fcg_weak_fix *fix);

/* An FFTN node's kind (p.flag): what cuFFT calls C2C forward and inverse, R2C and C2R. */
typedef enum fcg_fft_kind {
    FCG_FFT_C2C_FORWARD, FCG_FFT_C2C_INVERSE, FCG_FFT_R2C, FCG_FFT_C2R
} fcg_fft_kind;
#define FCG_FFTN_MAX_RANK 3 /* axes of one FFTN node: cuFFT's plans transform up to three */

/* IEEE binary16 and bfloat16 <-> f32, round to nearest even, NaN kept. */
float fcg_f16_to_f32(uint16_t h);
uint16_t fcg_f32_to_f16(float f);
float fcg_bf16_to_f32(uint16_t h);
uint16_t fcg_f32_to_bf16(float f);

/* ---- random numbers: one definition for every backend ---------------------------------- */

static inline uint64_t fcg_mix64(uint64_t z) {
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
/* 64 random bits for (seed, stream index). Complex dtypes use index 2i (re) and 2i + 1 (im). */
static inline uint64_t fcg_random_bits(uint64_t seed, uint64_t index) {
    return fcg_mix64(seed ^ fcg_mix64(index));
}

/* The random op's draws (FCG_OP_RANDOM, p.mode): every backend computes element i of a draw
 * from Philox4x32-10 blocks exactly as below (the device prelude has the same functions), so
 * that a value is a pure function of (seed, stream, index) and the same everywhere. The layout
 * is part of fusec's contract (include/fusec.h, fc_rng): changing it changes users' numbers. */
enum { FCG_RANDOM_UNIFORM = 0, FCG_RANDOM_NORMAL = 1, FCG_RANDOM_INTEGERS = 2 };

/* graph/index.c: pieces of the gathers composed over take (take_along_axis, integer-array
 * subscripts, setitem). Row-major strides of shape into stride[0..ndim) (elements); returns
 * the size. */
int64_t fcg_contiguous_strides(int ndim, const int64_t *shape, int64_t *stride);
/* arange(extent) in int64, laid along `axis` of an ndim-array (extent 1 on every other axis):
 * the coordinate of that axis, broadcasting over the others. */
fc_array *fcg_axis_coord(fc_ctx *ctx, int ndim, int axis, int64_t extent);
/* Boolean masks (graph/mask.c). The axes a subscript entry consumes (a boolean array its
 * number of axes). */
int fcg_idx_axes(const fc_idx *e);
/* idx with each boolean-array entry replaced by its nonzero() coordinate arrays (NumPy's
 * definition of a mask subscript), after checking that the mask matches the axes it covers
 * (FC_ERR_INDEX). Evaluates the masks. The new arrays belong to the innermost open scope. */
fc_status fcg_expand_masks(fc_ctx *ctx, const char *name, fc_array *a, int n, const fc_idx *idx,
                           fc_idx *out, int cap, int *nout);
/* a[mask] for a mask of a's shape (the caller checks it): the selected elements in C order,
 * 1-D, through one COMPRESS node. Evaluates the mask and its count. */
fc_array *fcg_mask_select(fc_ctx *ctx, const char *name, fc_array *a, fc_array *mask);

/* graph/creation.c: a draw (FCG_OP_RANDOM) of `mode` of stream `stream` of `seed`; integers in
 * [low, high). Checks the dtype for the mode and the bounds, naming `name` in errors. */
fc_array *fcg_random_draw(fc_ctx *ctx, const char *name, int mode, fc_dtype dtype, fc_shape shape,
                          uint64_t seed, uint64_t stream, int64_t low, int64_t high);

/* Philox4x32-10 (Salmon, Moraes, Dror and Shaw, SC'11): the 128-bit block of counter ctr
 * under key. */
static inline void fcg_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2],
                                     uint32_t out[4]) {
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3], k0 = key[0], k1 = key[1];
    for (int r = 0; r < 10; r++) {
        if (r) {
            k0 += 0x9E3779B9u;
            k1 += 0xBB67AE85u;
        }
        uint64_t p0 = (uint64_t)0xD2511F53u * c0, p1 = (uint64_t)0xCD9E8D57u * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c1 = (uint32_t)p1;
        c3 = (uint32_t)p0;
        c0 = n0;
        c2 = n2;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}
/* Block `block` of a draw: counter (block, stream) and key seed, each as two 32-bit words,
 * low word first. */
static inline void fcg_random_block(uint64_t seed, uint64_t stream, uint64_t block,
                                    uint32_t out[4]) {
    const uint32_t ctr[4] = {(uint32_t)block, (uint32_t)(block >> 32), (uint32_t)stream,
                             (uint32_t)(stream >> 32)};
    const uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    fcg_philox4x32_10(ctr, key, out);
}
/* Uniform in [0, 1), exact in the dtype (never 1.0 once rounded). A draw of a 16- or 32-bit
 * real dtype takes one 32-bit word an element (element i: block i / 4, word i % 4) and keeps
 * the significand's bits, f64 two words (block i / 2, words 2 (i % 2) low and + 1 high); a
 * complex draw is the real dtype's, its element i the parts 2i and 2i + 1. */
static inline double fcg_random_uniform_at(fc_dtype real_dtype, uint64_t seed, uint64_t stream,
                                           uint64_t i) {
    uint32_t w[4];
    if (real_dtype == FC_F64) {
        fcg_random_block(seed, stream, i >> 1, w);
        uint64_t x = w[2 * (i & 1)] | (uint64_t)w[2 * (i & 1) + 1] << 32;
        return (double)(x >> 11) * 0x1p-53;
    }
    fcg_random_block(seed, stream, i >> 2, w);
    uint32_t x = w[i & 3];
    switch (real_dtype) {
    case FC_F16: return (double)(x >> 21) * 0x1p-11;
    case FC_BF16: return (double)(x >> 24) * 0x1p-8;
    default: return (double)(x >> 8) * 0x1p-24;
    }
}
/* Standard normal by Box-Muller, for the caller to round: a pair (u1 in (0, 1], u2 in [0, 1))
 * gives r = sqrt(-2 log u1) and r cos(2 pi u2), r sin(2 pi u2) for two consecutive elements.
 * 16- and 32-bit dtypes: element i takes block i / 4, words 0-1 for i % 4 in {0, 1} and 2-3
 * for {2, 3}, u1 = (word + 1) 2^-32, u2 = word 2^-32 (tails to 6.7 sigma), computed in float
 * by graph/normal32.h (the device prelude's code too: the same bits on every backend); f64:
 * block i / 2, u1 from words 0-1 and u2 from 2-3 with 53 bits each (8.6 sigma), in double;
 * cos for even i, sin for odd. */
static inline double fcg_random_normal_at(fc_dtype real_dtype, uint64_t seed, uint64_t stream,
                                          uint64_t i) {
    uint32_t w[4];
    if (real_dtype != FC_F64) {
        fcg_random_block(seed, stream, i >> 2, w);
        int k = (int)(i & 2);
        return fcg_normal32(w[k], w[k + 1], (int)(i & 1));
    }
    fcg_random_block(seed, stream, i >> 1, w);
    double u1 = (double)(((w[0] | (uint64_t)w[1] << 32) >> 11) + 1) * 0x1p-53;
    double u2 = (double)((w[2] | (uint64_t)w[3] << 32) >> 11) * 0x1p-53;
    double r = sqrt(-2 * log(u1)), t = 6.283185307179586 * u2;
    return (i & 1) ? r * sin(t) : r * cos(t);
}
/* An integer in [low, low + range) (range >= 1, as unsigned), wrapping as two's complement:
 * the top of a fixed-point product (Lemire's method without its rejection step, so that an
 * element is a pure function of its index). Dtypes of 32 bits or fewer: 64 random bits an
 * element (f64's layout), bias at most range / 2^64; 64-bit dtypes: a whole block an
 * element (block i), bias at most range / 2^128. */
static inline uint64_t fcg_random_integer_at(bool wide, uint64_t low, uint64_t range,
                                             uint64_t seed, uint64_t stream, uint64_t i) {
    uint32_t w[4];
    if (!wide) {
        fcg_random_block(seed, stream, i >> 1, w);
        uint64_t x = w[2 * (i & 1)] | (uint64_t)w[2 * (i & 1) + 1] << 32;
        return low + (uint64_t)(((fcg_upyint)x * range) >> 64);
    }
    fcg_random_block(seed, stream, i, w);
    uint64_t xl = w[0] | (uint64_t)w[1] << 32, xh = w[2] | (uint64_t)w[3] << 32;
    fcg_upyint t = (fcg_upyint)xh * range + (((fcg_upyint)xl * range) >> 64);
    return low + (uint64_t)(t >> 64);
}

/* ---- contexts (graph/ctx.c): the parts every layer shares -------------------------------- */

/* A new context using `alloc` with no backend yet: the cons table and the out-of-memory
 * poison. FC_ERR_NOMEM when that fails (nothing is left allocated). The API layer
 * (api/context.c) attaches a backend. */
fc_status fcg_ctx_new(const fc_allocator *alloc, fc_ctx **out);

/* Seconds on the monotonic clock, for the timings fusec reports (compile times, FUSEC_LOG). */
double fcg_now_s(void);
/* Closes the open scopes and frees every array of the context, whatever its count (values a
 * backend holds through ctx->free_value). */
void fcg_ctx_drop_arrays(fc_ctx *ctx);
/* Frees what is left of the context, and the context: call after fcg_ctx_drop_arrays and the
 * backend's destroy. */
void fcg_ctx_free(fc_ctx *ctx);

#endif /* FUSEC_GRAPH_H */
