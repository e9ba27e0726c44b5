/*
 * fusec.h - the whole public API of fusec, a fusing array compiler for NVIDIA GPUs.
 *
 * fusec follows CuPy's model: arrays with NumPy dtypes, ufuncs with broadcasting, reductions,
 * views. Every operation is lazy: it adds a node to an expression graph and returns at once.
 * Nothing runs until a result is needed (fc_eval, fc_read); then the graph is evaluated on the
 * context's backend (the GPU when there is one, else the host reference backend).
 *
 * A short tour (compiled by tests/test_header_example.c):
 *
 *     #include <fusec.h>
 *     #include <stdio.h>
 *
 *     int main(void) {
 *         fc_ctx *ctx;
 *         if (fc_ctx_create(&ctx, NULL) != FC_OK) return 1;   // GPU if there is one, else host
 *         fc_scope *s = fc_scope_open(ctx);                   // temporaries die at close
 *
 *         fc_array *x = fc_random_uniform(ctx, FC_F32, FC_SHAPE(1 << 20), 42);
 *         fc_array *y = fc_tanh(fc_add(fc_sin(x), fc_mul(x, fc_f64(ctx, 0.1))));  // lazy
 *
 *         float head[5];
 *         if (fc_read(y, head, 0, 5) != FC_OK)                // evaluates, then copies out
 *             fprintf(stderr, "fusec: %s\n", fc_errmsg(ctx));
 *         else
 *             printf("%g %g %g %g %g\n", head[0], head[1], head[2], head[3], head[4]);
 *         fc_scope_close(s);
 *         fc_ctx_destroy(ctx);
 *         return 0;
 *     }
 *
 * Ownership. Every function that returns an fc_array * returns a new reference. While a scope
 * is open (fc_scope_open), the innermost scope owns that reference and drops it at
 * fc_scope_close; otherwise the caller owns it and drops it with fc_release. fc_keep takes an
 * extra reference that no scope owns, to carry a result out of a scope. Arrays are values:
 * identical expressions may share one node (hash-consing), which is invisible except that they
 * compare equal as pointers. fc_write is the one mutation: it replaces an array's data, and
 * arrays already computed from it keep theirs.
 *
 * The GPU runs work asynchronously on streams (fc_eval queues it; fc_read waits). A program
 * evaluated again with new data reuses its plan and replays its kernels; streams, events,
 * pinned host memory and memory statistics are below, under "Streams and events" and
 * "Memory".
 *
 * Errors are values. Functions that can fail return an fc_status (FC_OK == 0, errors < 0) and
 * leave a message naming the op, the shapes and the dtypes in fc_errmsg(ctx). An op that fails,
 * or that is given a poisoned input, returns a poisoned array rather than NULL, so a chain of
 * ops needs one check at the end: fc_array_status, or the status fc_eval / fc_read returns. The
 * message names the first op that failed. Nothing aborts on bad input; nothing leaks.
 *
 * Types follow NumPy 2 (NEP 50): arrays are strongly typed; scalars made with fc_f64, fc_i64,
 * fc_c128 and fc_bool are "weak", as Python scalars are, and take the array's dtype
 * (f32 array * 0.1 stays f32; i8 array + 1.5 gives f64). bf16 promotes as f16 does, and
 * f16 with bf16 gives f32.
 *
 * Threads: a context and its arrays are used by one thread at a time. Separate contexts are
 * independent.
 */
#ifndef FUSEC_H
#define FUSEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define FC_API __attribute__((visibility("default")))
#else
#define FC_API
#endif

#define FUSEC_VERSION_MAJOR 0
#define FUSEC_VERSION_MINOR 1
#define FUSEC_VERSION_PATCH 0

/** Most dimensions an array may have. */
#define FC_MAX_DIMS 8

/* ---------------------------------------------------------------------------------------- */
/* Status codes                                                                             */
/* ---------------------------------------------------------------------------------------- */

typedef enum fc_status {
    FC_OK = 0,
    FC_ERR_NULL = -1,        /**< a NULL handle or pointer where one was required */
    FC_ERR_INVALID = -2,     /**< an argument's value is out of its domain */
    FC_ERR_SHAPE = -3,       /**< shapes do not broadcast, reshape size mismatch, ... */
    FC_ERR_AXIS = -4,        /**< an axis out of range or repeated */
    FC_ERR_DTYPE = -5,       /**< an op does not support this dtype or combination */
    FC_ERR_INDEX = -6,       /**< a bad slice or index */
    FC_ERR_NOMEM = -7,       /**< an allocation failed */
    FC_ERR_PARSE = -8,       /**< malformed .fc text */
    FC_ERR_BACKEND = -9,     /**< the requested backend is not available */
    FC_ERR_IO = -10,         /**< a file could not be read or written */
    FC_ERR_VALUE = -11,      /**< a value-dependent error found at evaluation */
    FC_ERR_UNSUPPORTED = -12,/**< valid, but not supported by fusec (yet) */
    FC_ERR_CONTEXT = -13,    /**< arrays of different contexts mixed, or a scope misuse */
    FC_ERR_UNBOUND = -14,    /**< a program input or dimension symbol has no value */
    FC_ERR_COMPILE = -15,    /**< NVRTC rejected a generated kernel (a fusec bug: report it) */
    FC_ERR_NOT_CACHED = -16, /**< FUSEC_REQUIRE_CACHED is set and a kernel was not cached */
    FC_ERR_LINALG = -17      /**< np.linalg.LinAlgError: a singular matrix, one that is not
                                  positive definite, a stack that is not square or not 2-d */
} fc_status;

/** A short, static description of a status code. Never NULL. */
FC_API const char *fc_strerror(fc_status status);

/* ---------------------------------------------------------------------------------------- */
/* Dtypes                                                                                   */
/* ---------------------------------------------------------------------------------------- */

/** The element types, in NumPy's kind order. f16 and bf16 are stored as 16-bit values (IEEE
 *  binary16 and bfloat16) and computed in f32; c64 / c128 are (re, im) pairs of f32 / f64. */
typedef enum fc_dtype {
    FC_BOOL,
    FC_I8, FC_I16, FC_I32, FC_I64,
    FC_U8, FC_U16, FC_U32, FC_U64,
    FC_F16, FC_BF16, FC_F32, FC_F64,
    FC_C64, FC_C128,
    FC_DTYPE_COUNT
} fc_dtype;

/** The dtype's name as NumPy writes it in short ("f32", "c128", "bool"). NULL if invalid. */
FC_API const char *fc_dtype_name(fc_dtype dtype);
/** Parses a dtype name as fc_dtype_name writes it. @return FC_OK or FC_ERR_INVALID. */
FC_API fc_status fc_dtype_from_name(const char *name, fc_dtype *out);
/** Bytes per element (1 for bool). 0 if invalid. */
FC_API size_t fc_dtype_size(fc_dtype dtype);
/** The dtype NumPy's promotion gives two strongly typed operands (np.result_type).
 *  @return FC_OK, or FC_ERR_INVALID for a bad dtype. Every pair promotes to something. */
FC_API fc_status fc_promote_types(fc_dtype a, fc_dtype b, fc_dtype *out);

/* ---------------------------------------------------------------------------------------- */
/* Shapes and axes                                                                          */
/* ---------------------------------------------------------------------------------------- */

/** A shape: ndim extents (0 <= ndim <= FC_MAX_DIMS), each >= 0. Passed by value. */
typedef struct fc_shape {
    int ndim;
    int64_t dim[FC_MAX_DIMS];
} fc_shape;

/** A set of axes (negative axes count from the end). n == -1 means every axis. */
typedef struct fc_axes {
    int n;
    int axis[FC_MAX_DIMS];
} fc_axes;

/** FC_SHAPE(4096, 1024): a shape literal of 0 to 8 extents; FC_SHAPE() (or FC_SCALAR) is the
 *  0-d shape. FC_AXES(0, -1): an axis-set literal of 0 to 8 axes; FC_AXES() (or FC_NO_AXES)
 *  is the empty set, FC_ALL every axis. In C they are compound literals; in C++ (which has
 *  none) they call inline helpers at the end of this header, with the same results. Both
 *  are strict C11 / C++11: no GNU extensions, no __VA_OPT__. One C restriction: an
 *  argument must not be just the name of a function-like macro (the emptiness test below
 *  would call it). */
#ifndef __cplusplus
/* Counting arguments in C11. FC_NARGS_ counts commas, so it sees one (empty) argument in ().
 * FC_ISEMPTY_ is 1 for () and 0 otherwise, by Jens Gustedt's test ("Detect empty macro
 * arguments", 2010): of the four probes only an empty list has a comma in the last alone.
 * The probes look at the text, never evaluate it. */
#define FC_ARG9_(_1, _2, _3, _4, _5, _6, _7, _8, _9, ...) _9
#define FC_NARGS_(...) FC_ARG9_(__VA_ARGS__, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define FC_HAS_COMMA_(...) FC_ARG9_(__VA_ARGS__, 1, 1, 1, 1, 1, 1, 1, 0, 0)
#define FC_COMMA_IF_CALLED_(...) ,
#define FC_ISEMPTY_(...)                                                                         \
    FC_ISEMPTY_CASE_(FC_HAS_COMMA_(__VA_ARGS__), FC_HAS_COMMA_(FC_COMMA_IF_CALLED_ __VA_ARGS__), \
                     FC_HAS_COMMA_(__VA_ARGS__()),                                              \
                     FC_HAS_COMMA_(FC_COMMA_IF_CALLED_ __VA_ARGS__()))
#define FC_ISEMPTY_CASE_(a, b, c, d) FC_HAS_COMMA_(FC_CAT5_(FC_ISEMPTY_IF_, a, b, c, d))
#define FC_CAT5_(p, a, b, c, d) p##a##b##c##d
#define FC_ISEMPTY_IF_0001 ,
#define FC_CAT_(a, b) FC_CAT2_(a, b)
#define FC_CAT2_(a, b) a##b

#define FC_SHAPE(...) FC_CAT_(FC_SHAPE_, FC_ISEMPTY_(__VA_ARGS__))(__VA_ARGS__)
#define FC_SHAPE_0(...) ((fc_shape){FC_NARGS_(__VA_ARGS__), {__VA_ARGS__}})
#define FC_SHAPE_1(...) FC_SCALAR
#define FC_SCALAR ((fc_shape){0, {0}})
#define FC_AXES(...) FC_CAT_(FC_AXES_, FC_ISEMPTY_(__VA_ARGS__))(__VA_ARGS__)
#define FC_AXES_0(...) ((fc_axes){FC_NARGS_(__VA_ARGS__), {__VA_ARGS__}})
#define FC_AXES_1(...) FC_NO_AXES
#define FC_ALL ((fc_axes){-1, {0}})
#define FC_NO_AXES ((fc_axes){0, {0}})
#else
#define FC_SHAPE(...) (::fc_cxx_::shape(__VA_ARGS__))
#define FC_SCALAR (fc_shape{0, {0}})
#define FC_AXES(...) (::fc_cxx_::axes(__VA_ARGS__))
#define FC_ALL (fc_axes{-1, {0}})
#define FC_NO_AXES (fc_axes{0, {0}})
#endif

/* ---------------------------------------------------------------------------------------- */
/* Contexts                                                                                 */
/* ---------------------------------------------------------------------------------------- */

typedef struct fc_ctx fc_ctx;
typedef struct fc_array fc_array;
typedef struct fc_scope fc_scope;

typedef enum fc_backend {
    FC_BACKEND_AUTO = 0, /**< the GPU when one is usable, else the host reference backend */
    FC_BACKEND_CUDA,     /**< the GPU, or fc_ctx_create fails with FC_ERR_BACKEND */
    FC_BACKEND_HOST      /**< the host reference backend: exact, simple, slow */
} fc_backend;

/** Memory hooks. Every allocation fusec makes for a context goes through them (tests use them
 *  to fail the Nth allocation). realloc_fn may be NULL: fusec then uses malloc_fn + copy. */
typedef struct fc_allocator {
    void *(*malloc_fn)(void *user, size_t size);
    void *(*realloc_fn)(void *user, void *ptr, size_t old_size, size_t new_size);
    void (*free_fn)(void *user, void *ptr, size_t size);
    void *user;
} fc_allocator;

/** Options of fc_ctx_create. Zero-initialise, then set what you need. */
typedef struct fc_ctx_options {
    fc_backend backend;            /**< FUSEC_BACKEND=host|cuda|auto overrides AUTO only */
    int device;                    /**< CUDA device ordinal */
    const char *cache_dir;         /**< kernel cache; NULL: $FUSEC_CACHE_DIR, XDG, ~/.cache */
    const fc_allocator *allocator; /**< NULL: the C library's malloc/realloc/free */
    size_t memory_limit;           /**< device bytes fusec may hold; 0: FUSEC_GPU_MEMORY_LIMIT,
                                        else unlimited */
    int cuda_graphs;               /**< 0: default (FUSEC_CUDA_GRAPHS=0|1, else on); 1 on;
                                        -1 off. A plan evaluated again replays as a CUDA graph,
                                        with its matmul, FFT and sparse-product calls captured
                                        into it (solvers and sorts keep it off) */
    int shards;                    /**< 0 or 1: one device. N > 1: a sharded context of N shards
                                        (see "Sharded contexts"); FC_SHARDS_ALL: one shard per
                                        GPU of the host (at least 2) */
    const int *devices;            /**< shards > 1, CUDA backend: the device of each shard
                                        (NULL: 0 .. N-1). A device may repeat (testing on one
                                        GPU): collectives then go through host memory */
    int fast_math;                 /**< 0: default (FUSEC_FAST_MATH=0|1, else off); 1 on;
                                        -1 off. On: the fast-math tier (below), which trades
                                        NumPy's exact results for speed */
    size_t preallocate;            /**< CUDA backend: device bytes reserved in the context's
                                        memory pool when it is created (0: FUSEC_GPU_PREALLOCATE,
                                        e.g. 2G, else none), so that the first evaluations'
                                        allocations map no memory (a first 256 MiB output
                                        costs ~0.3 ms otherwise). Held until the context is
                                        destroyed or an allocation runs out of memory (then
                                        the pool is trimmed); counted as cached, not in use.
                                        fc_ctx_create fails with FC_ERR_NOMEM if it cannot be
                                        reserved. The host backend ignores it */
} fc_ctx_options;

/* The fast-math tier (fc_ctx_options.fast_math, FUSEC_FAST_MATH=1, `fusec run --fast-math`).
 * Off by default: every kernel then computes what NumPy computes (docs/ARCHITECTURE.md says
 * within which bounds). On, generated kernels may differ from NumPy by more:
 *   - NVRTC compiles with --use_fast_math: a * b + c contracts to one fused multiply-add (one
 *     rounding instead of two, in f32 and f64), f32 subnormals flush to zero, f32 division and
 *     square root are approximate (2 ulp);
 *   - f32 exp, log, log2, log10, sin, cos, tan and pow use the GPU's approximate instructions
 *     (CUDA's __expf, __logf, __sinf, ...: a few ulp near 0, larger relative error for
 *     arguments of large magnitude, and sin / cos lose accuracy beyond |x| > pi); f64 math
 *     keeps its libm functions;
 *   - abs(z) <= r, abs(z) < r, r >= abs(z) and r > abs(z) with z complex compare
 *     real(z)^2 + imag(z)^2 with r^2 (no hypot): the result may differ where |z| is within a
 *     few ulp of r, or where a square overflows or underflows (|z| or r beyond about 1e154
 *     in f64, 1e19 in f32, or below their square roots of the smallest normal). A negative or
 *     NaN r still gives false, as abs(z) <= r does.
 * The tier is part of every kernel's cache key and of the plan cache's key, so binaries of the
 * two tiers never stand in for each other. The host backend ignores it (it stays exact). */

/** Whether the context runs the fast-math tier (1) or the exact default (0; 0 for NULL). */
FC_API int fc_ctx_fast_math(const fc_ctx *ctx);

/** fc_ctx_options.shards: one shard per CUDA device of the host. */
#define FC_SHARDS_ALL (-1)

/** Creates a context.
 *  @param[out] out   the new context; set to NULL on failure.
 *  @param[in]  opts  options, or NULL for defaults (backend AUTO, device 0).
 *  @return FC_OK; FC_ERR_NULL if out is NULL; FC_ERR_BACKEND if the backend asked for cannot be
 *          used (CUDA with no driver or device; AUTO then resolves to HOST); FC_ERR_INVALID if
 *          FUSEC_BACKEND (read for AUTO) is not host, cuda or auto, if fast_math is not
 *          -1, 0 or 1, or if FUSEC_FAST_MATH (read for fast_math 0) is not 0, 1 or empty
 *          (said on stderr); FC_ERR_NOMEM. Unknown words in FUSEC_LOG are warned about on
 *          stderr, once. */
FC_API fc_status fc_ctx_create(fc_ctx **out, const fc_ctx_options *opts);
/** Destroys a context: closes open scopes and frees every array still referenced.
 *  Handles into it are invalid afterwards. NULL is a no-op. */
FC_API void fc_ctx_destroy(fc_ctx *ctx);
/** The backend the context resolved to (never FC_BACKEND_AUTO). */
FC_API fc_backend fc_ctx_backend(const fc_ctx *ctx);
/** The message of the last error on this context ("" if none). Owned by the context; valid
 *  until the next failing call. */
FC_API const char *fc_errmsg(const fc_ctx *ctx);
/** Clears the message that fc_errmsg returns. */
FC_API void fc_clear_error(fc_ctx *ctx);
/** Frees memory fusec returned to the caller (fc_program_print's text). */
FC_API void fc_free(fc_ctx *ctx, void *ptr);

/* ---------------------------------------------------------------------------------------- */
/* References and scopes                                                                    */
/* ---------------------------------------------------------------------------------------- */

/** Opens a scope nested in the current one. Arrays returned while it is the innermost open
 *  scope are owned by it. @return the scope, or NULL if ctx is NULL or memory ran out. */
FC_API fc_scope *fc_scope_open(fc_ctx *ctx);
/** Releases every reference the scope owns and closes it, and any scope opened inside it
 *  that is still open. NULL is a no-op. */
FC_API void fc_scope_close(fc_scope *scope);
/** Returns a new reference to a that no scope owns: the caller releases it. NULL-safe. */
FC_API fc_array *fc_keep(fc_array *a);
/** Drops a reference the caller owns (from fc_keep, or from any op called with no open
 *  scope). NULL is a no-op. Releasing a scope-owned reference is a bug. */
FC_API void fc_release(fc_array *a);

/* ---------------------------------------------------------------------------------------- */
/* Array queries                                                                            */
/* ---------------------------------------------------------------------------------------- */

/** FC_OK, or the error that poisoned the array. FC_ERR_NULL for NULL. */
FC_API fc_status fc_array_status(const fc_array *a);
/** The poisoned array's own message (the first op that failed), or "" if healthy. */
FC_API const char *fc_array_errmsg(const fc_array *a);
FC_API fc_ctx *fc_array_ctx(const fc_array *a);
FC_API fc_dtype fc_array_dtype(const fc_array *a);
FC_API int fc_array_ndim(const fc_array *a);
FC_API fc_shape fc_array_shape(const fc_array *a);
/** Number of elements (product of the extents; 1 for 0-d). */
FC_API int64_t fc_array_size(const fc_array *a);
/** True if a is a weakly typed scalar (made by fc_f64, fc_i64, fc_c128, fc_bool). */
FC_API bool fc_array_is_weak(const fc_array *a);

/* ---------------------------------------------------------------------------------------- */
/* Evaluation and results                                                                   */
/* ---------------------------------------------------------------------------------------- */

/** Evaluates n arrays together (one fused program when a GPU runs it) and keeps their values.
 *  Evaluating an array whose value is already known is free. On the GPU the work is queued on
 *  the context's stream and the call returns without waiting (fc_read and fc_to_host wait);
 *  a graph whose structure was evaluated before (same ops, dtypes, shapes and constants; any
 *  data) reuses its cached plan: no passes, codegen or cache lookups, and from the second reuse
 *  its kernels replay as one CUDA graph.
 *  @return FC_OK; the status of the first poisoned input; FC_ERR_UNBOUND if the graph has a
 *          program input with no data; FC_ERR_VALUE (integer to a negative power, host
 *          backend); FC_ERR_NOMEM (also the GPU memory limit); FC_ERR_BACKEND (a driver error,
 *          named with its call and place; after a fault the context is unusable and every
 *          later call fails with this status). On error no array gains a value; an error of
 *          queued GPU work surfaces at the next call that waits. */
FC_API fc_status fc_eval(fc_ctx *ctx, fc_array *const *arrays, int n);
/** Loop state updated in place: state[i] = updates[i] for i < n, evaluated together. NumPy
 *  mutates x in `x[mask] = v`; fusec's fc_setitem makes a new array, and fc_assign is how it
 *  gets the old one's memory: the caller's references to the old state[i] are released first,
 *  so an old value that nothing else reads any more dies with the evaluation, and a result
 *  whose kernel reads it only element by element (a masked or sliced assignment, an
 *  elementwise update, a put) is written into its buffer instead of a new one (the CUDA
 *  backend; fc_memory_stats.reused counts them). A loop that updates its state this way
 *  allocates nothing per step for it. Both arrays of references are the caller's: each
 *  state[i] a reference it owns (fc_keep's, or made with no scope open), each updates[i] one
 *  it hands over (fc_keep's); state[i] becomes updates[i]. A scope that still holds an
 *  expression reading an old value keeps that value alive (keep the updates and close it
 *  first). @return fc_eval's statuses; on error state[i] still become updates[i], unevaluated,
 *  and the old values are released. */
FC_API fc_status fc_assign(fc_ctx *ctx, fc_array **state, fc_array *const *updates, int n);
/** Evaluates a if needed, then copies `count` elements starting at flat (row-major) index
 *  `offset` into dst, in a's dtype (bool as 1 byte, f16/bf16 as uint16_t bits, c64 as
 *  float[2]). @return as fc_eval, or FC_ERR_INDEX if [offset, offset+count) is out of range. */
FC_API fc_status fc_read(fc_array *a, void *dst, int64_t offset, int64_t count);
/** Evaluates a and copies all of it into dst, which holds `bytes` bytes (at least
 *  fc_array_size(a) * fc_dtype_size(dtype)), else FC_ERR_INVALID. */
FC_API fc_status fc_to_host(fc_array *a, void *dst, size_t bytes);

/** Tracing: from now on every fc_eval / fc_read / fc_to_host that evaluates something
 *  appends the program it evaluated to the .fc file at path (created if missing), as
 *  canonical text with a comment line before each program, so that `fusec warm FILE` can
 *  compile a real program's kernels ahead of time (in CI, for GPUs it does not have).
 *  path NULL stops tracing. The environment variable FUSEC_TRACE=FILE does the same for every
 *  context from its creation. A trace write that fails warns once on stderr and never fails
 *  the evaluation. @return FC_OK, FC_ERR_NULL (ctx), FC_ERR_NOMEM. */
FC_API fc_status fc_set_trace(fc_ctx *ctx, const char *path);

/* ---------------------------------------------------------------------------------------- */
/* Devices                                                                                  */
/* ---------------------------------------------------------------------------------------- */

typedef struct fc_device_info {
    int ordinal;
    char name[128];      /**< "NVIDIA H200" */
    char arch[16];       /**< "sm_90": what kernels are compiled for */
    int cc_major, cc_minor;
    int sm_count;
    size_t total_memory; /**< bytes */
} fc_device_info;

/** The number of CUDA devices. @return FC_OK (and 0) where there is no driver or no device:
 *  that is not an error; FC_ERR_NULL. */
FC_API fc_status fc_device_count(int *count);
/** Describes device `ordinal`. @return FC_OK; FC_ERR_BACKEND (no driver, or no such device). */
FC_API fc_status fc_device_get_info(int ordinal, fc_device_info *out);
/** The device a CUDA context runs on (a sharded one: its shard 0's), or -1 for the host
 *  backend. */
FC_API int fc_ctx_device(const fc_ctx *ctx);
/** Evaluates a and copies its value into context dst (another device, or the host backend):
 *  GPU to GPU directly, through peer access where the two devices have it, else staged
 *  through host memory. The result belongs to dst (its open scope, or the caller).
 *  @return the copy, poisoned on error (both contexts' messages say why). */
FC_API fc_array *fc_copy_to(fc_array *a, fc_ctx *dst);

/* ---------------------------------------------------------------------------------------- */
/* Sharded contexts: arrays split over the GPUs of a host                                   */
/* ---------------------------------------------------------------------------------------- */

/* A context created with fc_ctx_options.shards = N > 1 runs on N shards. Each shard is an
 * ordinary context of its own (fc_ctx_shard): on the CUDA backend one per device (devices[i],
 * else i), on the host backend N simulated shards in host memory, so a program's sharding is
 * tested where there is no GPU. Arrays of a sharded context have their global shapes and every
 * op applies as on one device; where the data lives is fusec's business:
 *
 *   - An evaluated array is split along one axis or replicated. Split: shard i holds a
 *     contiguous range of that axis, E / N entries of an extent E plus one for the first
 *     E % N shards (some shards hold none when E < N). Replicated: every shard holds it all.
 *   - Evaluation plans the layout of every node and runs each shard's part as an ordinary
 *     fused program on that shard's context, all devices at once (one stream each, queued from
 *     the calling thread). Elementwise ops follow their split operands (a replicated or
 *     broadcast operand is read where it is); reductions that keep the split axis stay local;
 *     reductions over it (sum, prod, mean, max, min, any, all, var, std, norm,
 *     count_nonzero) reduce locally and finish with an all-reduce; reduce-broadcast chains
 *     (softmax over the split axis) put the all-reduce in the middle. Matmul follows the
 *     data-parallel layouts: rows of a split, b replicated; columns of b split; the contracted
 *     axis split in both (partial products, all-reduced); a batch axis split.
 *   - What cannot follow a split (slicing, padding, concatenating or an FFT along the split
 *     axis, a reshape that moves it, argmax / argmin over it, a broadcast of it) gathers the
 *     operand first (all-gather) and goes on replicated. FUSEC_LOG=shard says so.
 *   - Data from the host (fc_from_host) and creation ops (fc_arange, fc_random_*, fc_zeros,
 *     ...) take the layout their first consumer wants, and are made where they are needed
 *     (an arange or random array split over shards computes each shard's part on that shard,
 *     with the values of the whole array). A result no consumer constrains is split along axis
 *     0 when that extent is at least N, else replicated.
 *   - Collectives: NCCL between distinct GPUs (libnccl is loaded with dlopen on first use);
 *     through host memory on the host backend, where devices repeat, where NCCL is missing,
 *     or with FUSEC_SHARD_COMM=host.
 *   - A shard whose device fails marks the whole context dead: every later call fails with the
 *     failing shard's message, NCCL communicators are aborted so no device waits forever.
 *
 * Not on a sharded context (FC_ERR_UNSUPPORTED, with a message): user elementwise and
 * reduction kernels and raw modules (run them on fc_ctx_shard's contexts), program inputs. */

/** The replicated layout, where an axis is asked for or told. Since it is -1, an axis given to
 *  fc_reshard or fc_from_shards is 0 .. ndim-1 or this: negative axes do not count from the
 *  end there. */
#define FC_REPLICATED (-1)

/** The number of shards of a context: N for a sharded context, 1 for any other, 0 for NULL. */
FC_API int fc_ctx_shards(const fc_ctx *ctx);
/** Shard i's own context (an ordinary one, owned by the sharded context), or NULL when ctx is
 *  not sharded or i is out of range. Its arrays never mix with the sharded context's. */
FC_API fc_ctx *fc_ctx_shard(const fc_ctx *ctx, int i);
/** Evaluates a (an array of a sharded context) and returns its value laid out anew: split along
 *  `axis` (0 .. ndim-1) or FC_REPLICATED. A no-op layout returns a itself (a new reference).
 *  Moving data between shards is an all-gather (NCCL or host).
 *  @return the resharded array, poisoned on error (FC_ERR_AXIS, FC_ERR_CONTEXT for an array of
 *  an ordinary context, the evaluation's error). */
FC_API fc_array *fc_reshard(fc_array *a, int axis);
/** Evaluates a and tells its layout: *axis is the split axis or FC_REPLICATED (an array of an
 *  ordinary context: FC_REPLICATED). @return FC_OK, FC_ERR_NULL, the evaluation's error. */
FC_API fc_status fc_sharding(fc_array *a, int *axis);
/** An array of sharded context ctx made of parts[0..N), parts[i] an array of fc_ctx_shard(ctx,
 *  i) (evaluated here): split along `axis` (the parts' extents along it are the shard ranges
 *  of their sum, as above; the other extents and the dtypes agree) or FC_REPLICATED (every part
 *  holds the whole value; not checked). The parts' values are shared, not copied: a later
 *  write into a part is seen by the sharded array (into a replicated one's: keep the parts
 *  equal).
 *  @return the array, poisoned on error (FC_ERR_SHAPE, FC_ERR_DTYPE, FC_ERR_CONTEXT,
 *  FC_ERR_AXIS). */
FC_API fc_array *fc_from_shards(fc_ctx *ctx, fc_array *const *parts, int axis);
/** Evaluates a and returns shard i's part of it as an array of fc_ctx_shard(ctx, i) (owned by
 *  that context's open scope, or the caller): its range of the split axis, which shares the
 *  value (a write to one is seen by the other); or, when a is replicated, a copy of shard i's
 *  replica. @return the part, poisoned on error (FC_ERR_INDEX for a bad i). */
FC_API fc_array *fc_shard_part(fc_array *a, int i);
/** Gathers a's whole value onto shard i: a new array of fc_ctx_shard(ctx, i) (a copy, owned by
 *  that context's open scope, or the caller). @return the array, poisoned on error. */
FC_API fc_array *fc_gather(fc_array *a, int i);

/** What a sharded context's collectives have done since it was made (or since the last
 *  reset). ms: the time they took on shard 0's stream, read with events around each (a wait
 *  for the slowest shard counts), synchronising what is pending. */
typedef struct fc_shard_stats {
    uint64_t allreduces; /**< all-reduces: one per reduction over a split axis (two for var
                              and std); on NCCL, max and min of floats carry a NaN flag
                              in the same group */
    uint64_t gathers;    /**< all-gathers (reshards, gathers, layouts that could not follow) */
    uint64_t bytes;      /**< payload: what each shard ends with (an all-reduce's result, a
                              gather's whole array), summed; the same on either transport */
    double ms;           /**< their time on shard 0 */
    int nccl;            /**< 1 when the collectives run on NCCL, 0 through host memory */
} fc_shard_stats;
/** Fills *out (all zero for a context that is not sharded); reset: then starts the counts
 *  again. @return FC_OK, FC_ERR_NULL, or the error of a shard while synchronising. */
FC_API fc_status fc_shard_stats_get(fc_ctx *ctx, fc_shard_stats *out, bool reset);

/* ---------------------------------------------------------------------------------------- */
/* Memory                                                                                   */
/* ---------------------------------------------------------------------------------------- */

typedef struct fc_memory_stats {
    size_t in_use;        /**< device bytes held by array values and running plans (the host
                               backend: host_in_use) */
    size_t peak;          /**< the most in_use since creation or fc_memory_reset_peak */
    size_t cached;        /**< bytes the pool keeps for reuse beyond in_use */
    size_t limit;         /**< the limit (0: none) */
    size_t pinned_in_use; /**< pinned host bytes handed out (fc_host_alloc, staging) */
    size_t pinned_cached; /**< pinned host bytes kept for reuse */
    size_t host_in_use;   /**< host bytes the context holds through its allocator: nodes,
                               host values, plans, caches (every backend) */
    size_t host_peak;     /**< the most host_in_use since creation or fc_memory_reset_peak */
    uint64_t allocations; /**< device allocations made (values, plans' buffers); the host
                               backend: 0 */
    uint64_t reused;      /**< results written into the buffer of a value that died with their
                               evaluation instead of a new one (fc_setitem's in-place reuse) */
    size_t library;       /**< of in_use: device bytes the library calls keep between
                               evaluations (cuBLAS's workspace per stream, cuFFT plans' work
                               areas, scratch for cuFFT and cuSPARSE); fc_memory_trim frees
                               them, and they are made again when next needed */
} fc_memory_stats;

/** Memory figures of a context. On the host backend in_use and peak are the host figures and
 *  the pool and pinned figures are zero. @return FC_OK, FC_ERR_NULL. */
FC_API fc_status fc_memory_stats_get(fc_ctx *ctx, fc_memory_stats *out);
/** Restarts the peak at the current in_use. */
FC_API void fc_memory_reset_peak(fc_ctx *ctx);
/** Waits for the context's work, then gives every cached device and pinned block back to the
 *  driver, with the library calls' workspaces (fc_memory_stats.library; made again when next
 *  needed). @return FC_OK, or the first asynchronous error. */
FC_API fc_status fc_memory_trim(fc_ctx *ctx);
/** Device-to-device copy bandwidth: copies `bytes` between two device buffers `runs` times
 *  (after a warm-up), timed with events, and gives the median in GB/s counting bytes read and
 *  written (2 * bytes / time). The reference for benchmarks' "% of floor".
 *  @return FC_OK; FC_ERR_BACKEND on the host backend; FC_ERR_NOMEM; FC_ERR_INVALID. */
FC_API fc_status fc_device_copy_bandwidth(fc_ctx *ctx, size_t bytes, int runs, double *gbps);
/** Page-locked host memory from the context's pinned pool (plain memory on the host backend):
 *  transfers from and to it are asynchronous. NULL when out of memory. */
FC_API void *fc_host_alloc(fc_ctx *ctx, size_t bytes);
/** Returns a block of fc_host_alloc to the pool. NULL is a no-op. */
FC_API void fc_host_free(fc_ctx *ctx, void *ptr);

/* ---------------------------------------------------------------------------------------- */
/* Streams and events                                                                       */
/* ---------------------------------------------------------------------------------------- */

/** Work is ordered on streams. Every context has a default stream (NULL in these calls);
 *  fc_eval enqueues there and returns without waiting for the GPU. Calls that hand data to
 *  the host (fc_read, fc_to_host) wait. Errors of queued work surface at the next call that
 *  waits. On the host backend streams and events exist too: work runs at once, and events
 *  read the wall clock, so timing code is portable. */
typedef struct fc_stream fc_stream;
typedef struct fc_event fc_event;

FC_API fc_status fc_stream_create(fc_ctx *ctx, fc_stream **out);
/** Waits for the stream's work, then destroys it. NULL is a no-op. */
FC_API void fc_stream_destroy(fc_stream *stream);
/** Waits for the stream's work (NULL: the default stream of ctx). @return FC_OK or the first
 *  asynchronous error. */
FC_API fc_status fc_stream_synchronize(fc_ctx *ctx, fc_stream *stream);
/** Waits for all of the context's work. */
FC_API fc_status fc_ctx_synchronize(fc_ctx *ctx);
/** fc_eval on a given stream (NULL: the default one). Values computed on another stream are
 *  waited for through events; nothing else is ordered between streams. */
FC_API fc_status fc_eval_on(fc_ctx *ctx, fc_array *const *arrays, int n, fc_stream *stream);

FC_API fc_status fc_event_create(fc_ctx *ctx, fc_event **out);
FC_API void fc_event_destroy(fc_event *event);
/** Records the event after the work queued so far on stream (NULL: default stream). */
FC_API fc_status fc_event_record(fc_event *event, fc_stream *stream);
/** Makes later work on stream wait for the event. */
FC_API fc_status fc_stream_wait_event(fc_stream *stream, fc_event *event);
FC_API fc_status fc_event_synchronize(fc_event *event);
/** Milliseconds between two recorded events (both must have completed, or this waits).
 *  @return FC_OK; FC_ERR_INVALID if either was never recorded. */
FC_API fc_status fc_event_elapsed_ms(fc_event *start, fc_event *end, float *ms);

/* ---------------------------------------------------------------------------------------- */
/* Transfers                                                                                */
/* ---------------------------------------------------------------------------------------- */

/** Copies `count` elements from src into a's value at flat index `offset` (set). a must hold a
 *  value (made by fc_from_host, fc_empty, ..., or evaluated). Arrays already computed from a
 *  keep their values; building the same expression again after a write gives a new array
 *  that sees the new data. The copy is queued on stream (NULL: default) through pinned
 *  staging: src may be reused when the call returns.
 *  @return FC_OK; FC_ERR_INDEX (range); FC_ERR_INVALID (a has no value of its own). */
FC_API fc_status fc_write(fc_array *a, const void *src, int64_t offset, int64_t count,
                          fc_stream *stream);
/** Queues a copy of a's elements [offset, offset+count) into dst on stream and returns;
 *  dst is filled once the stream is synchronised. dst from fc_host_alloc makes the copy truly
 *  asynchronous; other memory is staged. Evaluates a first if needed (on that stream). */
FC_API fc_status fc_read_async(fc_array *a, void *dst, int64_t offset, int64_t count,
                               fc_stream *stream);

/* ---------------------------------------------------------------------------------------- */
/* Interop: memory and streams shared with other libraries                                  */
/* ---------------------------------------------------------------------------------------- */

/* fusec can wrap memory another library allocated (cuBLAS user code, PyTorch, CuPy, Numba, a
 * kernel of the caller's), hand out the memory of its own values, and run on streams it did
 * not create. The DLPack forms of these calls (DLManagedTensor and its versioned form) are in
 * <fusec_dlpack.h>, so that this header needs no DLPack header; they follow the rules below.
 *
 * Units: every stride in these calls is in ELEMENTS, as DLPack counts them (NumPy's and
 * __cuda_array_interface__'s are in bytes: divide by fc_dtype_size). Data pointers are the
 * address of element [0, ..., 0], any byte offset already added. Devices: the CUDA backend
 * shares device memory of its context's device (fc_ctx_device); the host backend shares host
 * memory (device -1). A sharded context shares nothing (FC_ERR_UNSUPPORTED: share a part).
 *
 * Values are values. fusec's arrays never change but by fc_write, and fusec assumes the same
 * of memory it imports: the owner must not write it while fusec holds it (computations not
 * yet run would read the new data, a host copy fusec already made would not), and a consumer
 * of exported memory should treat it as read-only (fusec's results never go into it: a result
 * is never written over memory that is imported or exported, whatever fc_assign and
 * fc_setitem do with an unshared buffer, and the pool never recycles it while it is shared).
 *
 * Threads: a release callback (fc_external.release) runs on the thread that drops fusec's last
 * reference, or that destroys the context. fc_export_release and the DLPack deleters of
 * exports may be called from any thread, also after the context is destroyed: the context's
 * destruction then waits for the last of them (fc_ctx_destroy returns at once; the GPU memory,
 * the CUDA context and the allocator's blocks are let go by the last release, which must
 * therefore come while the allocator is still usable). */

/** Memory of another library, described for fc_from_external. */
typedef struct fc_external {
    void *data;             /**< the address of element [0, ..., 0]; may be NULL only for
                                 an array of size 0 */
    fc_dtype dtype;
    fc_shape shape;
    const int64_t *strides; /**< shape.ndim strides in elements (negative and 0 allowed), or
                                 NULL for compact row-major (C order) */
    int device;             /**< where the memory is: the CUDA device ordinal (that of the
                                 context), or -1 for host memory (the host backend) */
    bool read_only;         /**< fc_write of the array fails (FC_ERR_INVALID) */
    void (*release)(void *user); /**< NULL, or called exactly once with `user` when fusec
                                      no longer needs the memory (after its last read) */
    void *user;
} fc_external;

/** Wraps external memory as an array, without a copy. Compact row-major memory becomes an
 *  array whose value IS that memory (fc_array_export of it gives the same address back).
 *  Other layouts (a transpose, Fortran order, negative strides, broadcast 0 strides, a slice
 *  with gaps between rows) become a lazy view of such an array, as fc_permute, fc_flip,
 *  fc_broadcast_to and fc_index make, so evaluating it writes a new compact value and reads
 *  the memory only then. Strides that overlap, or whose dimensions do not nest (each stride
 *  a multiple of the next smaller one, an extent's span within the stride above), cannot be
 *  described so and fail; fusec never copies silently. Compact device memory whose data is
 *  not 16-byte aligned (a slice of another array) is such a view too, of the memory from the
 *  16-byte boundary below data (in the same allocation), since fused kernels read a compact
 *  value 16 bytes at a time; fc_write on any view writes a value of its own, not the memory.
 *  `release` is called exactly once, when the last array that may read the memory is gone
 *  (this one, views of it, unevaluated expressions over it; an evaluated result has its own
 *  value) and fusec's queued work that reads it is done: on the GPU this waits for it. It is
 *  also called when the context is destroyed with the array alive. On failure it is NOT
 *  called: the caller still owns the memory.
 *  @param[in] ctx     the context (NULL gives NULL).
 *  @param[in] ext     the memory.
 *  @param[in] stream  the stream whose work so far writes the memory (a stream of fc_stream_wrap
 *                     for another library's): fusec's reads of it wait for that work. NULL:
 *                     the memory is ready, or written on the context's own stream.
 *  @return the array, poisoned with FC_ERR_NULL (ext, or data for a non-empty array),
 *          FC_ERR_DTYPE (a bad dtype), FC_ERR_SHAPE (a bad shape, or one too large),
 *          FC_ERR_INVALID (memory of another device than the context's, host memory on the
 *          CUDA backend or device memory on the host backend, data not aligned to its
 *          element, memory the driver does not know), FC_ERR_UNSUPPORTED (strides that
 *          overlap or do not nest; a sharded context), FC_ERR_CONTEXT (stream of another
 *          context), FC_ERR_NOMEM. */
FC_API fc_array *fc_from_external(fc_ctx *ctx, const fc_external *ext, fc_stream *stream);

/** An array's memory as fc_array_export hands it out. Valid until fc_export_release. */
typedef struct fc_export {
    void *data;                   /**< the address of element [0, ..., 0] */
    fc_dtype dtype;
    int ndim;
    int64_t shape[FC_MAX_DIMS];
    int64_t strides[FC_MAX_DIMS]; /**< in elements; always compact row-major (fusec's values
                                       are), given for consumers that want strides */
    size_t bytes;                 /**< size * fc_dtype_size(dtype) */
    int device;                   /**< the CUDA device ordinal, or -1: host memory */
    void *stream;                 /**< the CUstream the value was written on (NULL on the host
                                       backend); valid while that fusec stream lives. A
                                       consumer orders after it with fc_stream_wait_array,
                                       or by the `stream` argument of fc_array_export */
    struct fc_export_hold *hold;  /**< what keeps the memory: fc_export_release */
} fc_export;

/** Evaluates a if needed (on `stream`) and hands out its memory. The memory stays valid and
 *  unchanged by fusec until fc_export_release, whatever happens to a meanwhile (released,
 *  its scope closed, its context destroyed). Exporting the same array again gives the same
 *  address, with a hold of its own. On the CUDA backend a value that lives on the host so far
 *  (fc_from_host) is copied to the device first. fc_write of a writes into this memory: that
 *  is the caller's own write (after the device's queued work, a consumer's reads included);
 *  no other fusec call does.
 *  @param[in]  a       the array (not a weak Python integer beyond int64 and uint64).
 *  @param[in]  stream  the stream the consumer reads on (fc_stream_wrap of its own): ordered
 *                      after the work that writes a. NULL: the call waits for that work, so
 *                      the memory may be read on any stream when it returns.
 *  @param[out] out     filled on success; zeroed on failure.
 *  @return FC_OK; FC_ERR_NULL; FC_ERR_CONTEXT (stream of another context); FC_ERR_UNSUPPORTED
 *          (a sharded context); fc_eval's errors. */
FC_API fc_status fc_array_export(fc_array *a, fc_stream *stream, fc_export *out);
/** Gives back what fc_array_export handed out; e->hold becomes NULL, so a second call is a
 *  no-op. Any thread, also after the context is destroyed. The memory returns to fusec's pool
 *  at the context's next evaluation or export, or when it is destroyed, and on the GPU only
 *  after the device's work queued so far (a consumer's reads included). NULL is a no-op. */
FC_API void fc_export_release(fc_export *e);

/** Wraps a CUstream of the caller's (passed as void *) as an fc_stream, so that fusec's work
 *  on it (fc_eval_on, fc_write, fc_read_async...) is ordered with the caller's own. The
 *  stream must be a valid CUstream (the driver cannot tell a stale or made-up pointer from a
 *  stream: passing one is undefined, as in the driver API) of the context's device's primary
 *  CUDA context (the one the runtime API, PyTorch and CuPy use): a stream of another CUDA
 *  context gives FC_ERR_INVALID. NULL and CU_STREAM_LEGACY ((void *)1)
 *  name the legacy default stream, CU_STREAM_PER_THREAD ((void *)2) the per-thread one (as
 *  DLPack's stream argument does). fc_stream_destroy of a wrapped stream waits for the work
 *  queued on it so far, then lets the wrapper go and leaves the CUstream alive; the CUstream
 *  must outlive the wrapper. On the host backend any value is accepted and work on the
 *  stream runs at once, as on every host stream.
 *  @return FC_OK; FC_ERR_NULL (ctx, out); FC_ERR_INVALID; FC_ERR_UNSUPPORTED (sharded);
 *          FC_ERR_NOMEM. */
FC_API fc_status fc_stream_wrap(fc_ctx *ctx, void *cu_stream, fc_stream **out);
/** The CUstream of `stream` (NULL: the context's own stream, where fc_eval queues work), so
 *  the caller can queue its own work after fusec's, or wrap it elsewhere. Valid while the
 *  stream (or context) lives.
 *  @return FC_OK; FC_ERR_NULL; FC_ERR_CONTEXT; FC_ERR_BACKEND on the host backend, which has
 *          no CUDA streams (*cu_stream = NULL). */
FC_API fc_status fc_stream_get_handle(fc_ctx *ctx, const fc_stream *stream, void **cu_stream);
/** Makes later work on `stream` (NULL: the context's own) wait until a's value is written;
 *  evaluates a on that stream first if it has no value. What DLPack's stream argument
 *  asks of a producer: wrap the consumer's stream, then call this.
 *  @return FC_OK; FC_ERR_NULL; FC_ERR_CONTEXT; fc_eval's errors. */
FC_API fc_status fc_stream_wait_array(fc_stream *stream, fc_array *a);

/* ---------------------------------------------------------------------------------------- */
/* .npy files                                                                               */
/* ---------------------------------------------------------------------------------------- */

/** Reads a NumPy .npy file (format 1.0-3.0, C or Fortran order, either byte order) into a new
 *  array of the context, in C order and the host's byte order (Fortran order is reordered on
 *  load). Dtypes: b1 i1-i8 u1-u8 f2 f4 f8 c8 c16 (bf16 has no .npy form; ml_dtypes writes it
 *  as raw '<V2'). 0-d and empty arrays load as such. Bytes after the data are ignored, as
 *  NumPy does. Bools other than 0/1 load as 1.
 *  @return the array, poisoned with FC_ERR_NULL (path), FC_ERR_IO (cannot open or read),
 *  FC_ERR_PARSE (not a .npy file, a malformed header, a truncated file, a shape too large:
 *  the message names the file and what is wrong), FC_ERR_DTYPE (a dtype fusec lacks, named),
 *  FC_ERR_SHAPE (more than FC_MAX_DIMS dimensions) or FC_ERR_NOMEM. */
FC_API fc_array *fc_npy_load(fc_ctx *ctx, const char *path);
/** Evaluates a and writes it as a .npy file: the bytes np.save writes (format 1.0, C order,
 *  little-endian, NumPy's header layout). bf16 is written as f32, exactly (NumPy has no bf16).
 *  The file is written under a temporary name beside path and renamed over it, so a reader
 *  never sees a partial file and a failed save leaves path as it was.
 *  @return FC_OK, FC_ERR_NULL, FC_ERR_IO (cannot create, write or rename), or as fc_eval. */
FC_API fc_status fc_npy_save(fc_array *a, const char *path);

/* ---------------------------------------------------------------------------------------- */
/* Creation                                                                                 */
/* ---------------------------------------------------------------------------------------- */

/** An array holding a copy of `data` (row-major, `dtype` elements, f16/bf16 as uint16_t bits).
 *  data may be NULL only for a shape of size 0. The caller keeps `data`. */
FC_API fc_array *fc_from_host(fc_ctx *ctx, fc_dtype dtype, fc_shape shape, const void *data);
FC_API fc_array *fc_zeros(fc_ctx *ctx, fc_dtype dtype, fc_shape shape);
FC_API fc_array *fc_ones(fc_ctx *ctx, fc_dtype dtype, fc_shape shape);
/** Uninitialised in NumPy; fusec fills it with zeros so results are reproducible. */
FC_API fc_array *fc_empty(fc_ctx *ctx, fc_dtype dtype, fc_shape shape);
/** Every element `value` converted to dtype as a cast would (NaN to integer is an error). */
FC_API fc_array *fc_full(fc_ctx *ctx, fc_dtype dtype, fc_shape shape, double value);
/** fc_full with a complex value; dtype must be c64 or c128. */
FC_API fc_array *fc_full_complex(fc_ctx *ctx, fc_dtype dtype, fc_shape shape, double re,
                                 double im);
/** np.arange(start, stop, step, dtype): ceil((stop - start) / step) elements,
 *  element i = start + i * step. step must be non-zero and finite. */
FC_API fc_array *fc_arange(fc_ctx *ctx, fc_dtype dtype, double start, double stop, double step);
/** np.linspace(start, stop, num, endpoint, dtype). num >= 0. */
FC_API fc_array *fc_linspace(fc_ctx *ctx, fc_dtype dtype, double start, double stop, int64_t num,
                             bool endpoint);
/** np.eye(n, m, k, dtype): ones on the k-th diagonal of an n x m array. */
FC_API fc_array *fc_eye(fc_ctx *ctx, fc_dtype dtype, int64_t n, int64_t m, int64_t k);
/** Uniform values in [0, 1) (floating dtypes only): stream 0 of `seed` (fc_rng_random's
 *  values for a generator made by fc_rng_init(seed) and not yet drawn from). */
FC_API fc_array *fc_random_uniform(fc_ctx *ctx, fc_dtype dtype, fc_shape shape, uint64_t seed);

/** A random generator, as numpy.random.Generator: every draw is a new stream of the seed.
 *  Values are Philox4x32-10 (the counter-based generator cuRAND also implements) and a pure
 *  function of (seed, stream, flat index): the same on every backend, in any fusion, for any
 *  shard or slice of the array, and from one fusec version to the next (the layout below is
 *  part of the API). A draw is lazy like any op and fuses into the kernels that read it.
 *
 *  Layout: block b of stream s is Philox4x32-10 of counter (b, s) (each as two 32-bit words,
 *  low first) under key seed (low word first), four 32-bit words w0..w3. Element i of a draw
 *  of a 16- or 32-bit float dtype is word i % 4 of block i / 4, its top bits as the
 *  significand (uniform: (w >> 8) 2^-24 for f32, (w >> 21) 2^-11 for f16, (w >> 24) 2^-8 for
 *  bf16); of f64, the 64 bits w[2k] | w[2k+1] << 32 (k = i % 2) of block i / 2, as
 *  (x >> 11) 2^-53. Complex dtypes draw their real dtype's elements 2i (real part) and 2i + 1
 *  (imaginary). Normal values: Box-Muller on (u1, u2) = words (0, 1) or (2, 3) of block i / 4
 *  as ((w + 1) 2^-32, w 2^-32) for 16- and 32-bit dtypes, or on the two 53-bit halves of block
 *  i / 2 for f64: r = sqrt(-2 log u1), r cos(2 pi u2) for even i, r sin(2 pi u2) for odd i.
 *  16- and 32-bit dtypes compute it in float with fusec's own log, sin and cos (each step an
 *  IEEE operation: the same bits on every backend), within 2 ulps of the exact value, and
 *  f16 / bf16 round that float; f64 computes it in double. (Until this version 16- and 32-bit
 *  normals were computed in double and rounded once: their values changed, in the last bits.)
 *  Integers in [low, high): low + floor(x (high - low) /
 *  2^64) with x f64's 64 bits of element i for dtypes of 32 bits or fewer, and low +
 *  floor(x (high - low) / 2^128) with x the whole block i (w0 lowest) for 64-bit dtypes. */
typedef struct fc_rng {
    uint64_t seed;
    uint64_t stream; /**< the next draw's stream; each draw takes one and advances it */
} fc_rng;

/** numpy.random.default_rng(seed): a generator at stream 0. */
FC_API fc_rng fc_rng_init(uint64_t seed);
/** Generator.random: uniform in [0, 1), exact in dtype (a float or complex dtype). */
FC_API fc_array *fc_rng_random(fc_ctx *ctx, fc_rng *rng, fc_dtype dtype, fc_shape shape);
/** Generator.uniform: low + (high - low) u, u of f64's draw, computed in f64 and cast to dtype
 *  (a real float dtype). As in NumPy, rounding may give high itself. low and high finite. */
FC_API fc_array *fc_rng_uniform(fc_ctx *ctx, fc_rng *rng, double low, double high, fc_dtype dtype,
                                fc_shape shape);
/** Generator.standard_normal (a float or complex dtype; complex: independent parts of
 *  variance 1 each, as two real draws). */
FC_API fc_array *fc_rng_standard_normal(fc_ctx *ctx, fc_rng *rng, fc_dtype dtype, fc_shape shape);
/** Generator.normal: loc + scale z, z of dtype's standard normal draw (a real float dtype),
 *  computed in dtype. scale >= 0 and both finite, else FC_ERR_VALUE. */
FC_API fc_array *fc_rng_normal(fc_ctx *ctx, fc_rng *rng, double loc, double scale, fc_dtype dtype,
                               fc_shape shape);
/** Generator.integers(low, high, endpoint=False): integers in [low, high) of an integer dtype;
 *  both bounds must be values of dtype (high may be one past its largest), low < high, else
 *  FC_ERR_VALUE. Bounds are int64, so u64 draws reach 2^63 at most. */
FC_API fc_array *fc_rng_integers(fc_ctx *ctx, fc_rng *rng, int64_t low, int64_t high,
                                 fc_dtype dtype, fc_shape shape);
/** Generator.exponential: -scale log1p(-u), u of f64's draw, computed in f64 and cast to dtype
 *  (a real float dtype). scale >= 0 and finite. */
FC_API fc_array *fc_rng_exponential(fc_ctx *ctx, fc_rng *rng, double scale, fc_dtype dtype,
                                    fc_shape shape);
/** Bernoulli trials (Generator.binomial(1, p) as bool): u < p, u of f64's draw. 0 <= p <= 1. */
FC_API fc_array *fc_rng_bernoulli(fc_ctx *ctx, fc_rng *rng, double p, fc_shape shape);
/** Generator.permutation(n): 0 .. n-1 (int64) in a random order (empty for n <= 0, as NumPy's
 *  arange(n)). The order is the stable fc_argsort of one draw of keys, fc_rng_integers(
 *  INT64_MIN, INT64_MAX) as int64 of the generator's next stream: a pure function of (seed,
 *  stream), the same on every backend (a tie between two 64-bit keys, about n^2 / 2^65 likely,
 *  keeps the smaller position first). Costs a sort of n keys. Not NumPy's values. */
FC_API fc_array *fc_rng_permutation(fc_ctx *ctx, fc_rng *rng, int64_t n);
/** Generator.shuffle(x, axis) as a function (Generator.permutation(x, axis)): x with its
 *  slices along axis in the order of fc_rng_permutation(extent) of the next stream; x itself
 *  is unchanged. FC_ERR_AXIS for an axis out of range (a 0-d x has none); FC_ERR_DTYPE for a
 *  Python scalar. */
FC_API fc_array *fc_rng_shuffle(fc_ctx *ctx, fc_rng *rng, fc_array *x, int axis);
/** Generator.choice(n, size, replace): int64 samples of 0 .. n-1 in the shape size. With
 *  replacement fc_rng_integers(0, n, FC_I64, size) of the next stream; without it the first
 *  prod(size) elements of that stream's fc_rng_permutation(n), so distinct (a sort of n keys,
 *  whatever the size). FC_ERR_VALUE for samples from n <= 0, or more than n of them without
 *  replacement (as NumPy raises). fc_rng_choice_array is Generator.choice(a, size, replace)
 *  (axis 0): a's rows at such samples of its first extent, shape size + a's other extents
 *  (FC_ERR_VALUE for a 0-d a). Each call takes one stream, even when it draws nothing. */
FC_API fc_array *fc_rng_choice(fc_ctx *ctx, fc_rng *rng, int64_t n, fc_shape size, bool replace);
FC_API fc_array *fc_rng_choice_array(fc_ctx *ctx, fc_rng *rng, fc_array *a, fc_shape size,
                                     bool replace);
FC_API fc_array *fc_zeros_like(fc_array *a);
FC_API fc_array *fc_ones_like(fc_array *a);
FC_API fc_array *fc_empty_like(fc_array *a);
FC_API fc_array *fc_full_like(fc_array *a, double value);

/** Weakly typed scalars (0-d), as Python's float, int, complex and bool in NumPy 2 (NEP 50,
 *  https://numpy.org/neps/nep-0050-scalar-promotion.html).
 *
 *  A Python int has no dtype of its own: it converts where it meets an array, as NumPy 2.4
 *  converts it. Against an integer loop it must fit that dtype (u8 array + 300 fails with
 *  FC_ERR_INVALID, NumPy's OverflowError "Python integer 300 out of bounds for uint8"), except
 *  that a comparison with an integer array is answered exactly (u8 array > -1 is all True,
 *  i8 array == 1000 all False), fc_clip drops a bound beyond the array's dtype (NumPy >= 2.1:
 *  clip(i8 array, -1000, 5) clips at 5 only), and fc_where converts unsafely (300 in a u8
 *  result is 44, as np.where gives). Where the loop is float or complex (true division of
 *  integers, arctan2, an f32 array) the int converts to it through a double, unchecked
 *  (u16 array / -1 is -1.0, f32 array * 2**64 is f32); where it is bool (logical_and) it
 *  must fit int64 and counts by its truth. An op over Python numbers only (fc_maximum(3, 4))
 *  takes each int as int64, as NumPy does.
 *
 *  An operator (fc_add, fc_mul, fc_less, ... the ops with a Python operator) whose operands are
 *  all weak bool, int or float scalars is Python's own arithmetic, done before NumPy sees the
 *  result: it returns a weak scalar computed with Python's rules, so fc_mul(fc_i64(ctx, 100),
 *  fc_i64(ctx, 3)) is the Python int 300 and meets an i8 array as 300 does. Ints are exact (held
 *  in 128 bits; a result beyond them fails with FC_ERR_VALUE, never wraps), int / int and int **
 *  negative int give floats, bools count as ints (True + True == 2), and what Python raises
 *  fails: ZeroDivisionError and OverflowError with FC_ERR_VALUE, TypeError (1.5 & 1) with
 *  FC_ERR_DTYPE. Complex operands are not folded: that arithmetic runs in the kernel in c128.
 *
 *  @param[in] ctx  the context; NULL gives NULL.
 *  @return a new weak 0-d array (a poisoned one if memory runs out). */
FC_API fc_array *fc_f64(fc_ctx *ctx, double value);
FC_API fc_array *fc_i64(fc_ctx *ctx, int64_t value);
FC_API fc_array *fc_c128(fc_ctx *ctx, double re, double im);
FC_API fc_array *fc_bool(fc_ctx *ctx, bool value);
/** The Python int `value`, which may exceed INT64_MAX (18446744073709551615 with a u64 array
 *  gives u64 results, as in NumPy). A weak int between INT64_MAX and UINT64_MAX evaluated by
 *  itself is u64, as np.asarray gives it.
 *  @param[in] ctx  the context; NULL gives NULL.
 *  @return a new weak 0-d array. */
FC_API fc_array *fc_u64(fc_ctx *ctx, uint64_t value);
/** The Python int hi * 2**64 + lo (128-bit two's complement: hi is the signed high word), for
 *  ints beyond int64 and uint64 such as 2**64 or -2**70. Such an int is valid only as an
 *  operand of an elementwise op, which converts it as above (f32 array * 2**64 works; u64
 *  array + 2**64 fails, as in NumPy); any other use of it (a view, a reduction, fc_eval of it)
 *  fails with FC_ERR_INVALID, since no dtype holds it.
 *  @param[in] ctx  the context; NULL gives NULL.
 *  @param[in] hi   the high 64 bits, signed.
 *  @param[in] lo   the low 64 bits.
 *  @return a new weak 0-d array. */
FC_API fc_array *fc_i128(fc_ctx *ctx, int64_t hi, uint64_t lo);
/** A strongly typed 0-d scalar (np.float32(v) and the like). */
FC_API fc_array *fc_scalar(fc_ctx *ctx, fc_dtype dtype, double value);

/* ---------------------------------------------------------------------------------------- */
/* Elementwise ops. All broadcast their operands (NumPy rules) and promote their dtypes (NEP  */
/* 50). On error (shapes that do not broadcast, a dtype the op lacks, such as - on bool or    */
/* arctan2 on complex) they return a poisoned array.                                          */
/* ---------------------------------------------------------------------------------------- */

/* Arithmetic: + - * / // % ** as NumPy's add, subtract, multiply, true_divide (integers give
 * f64), floor_divide and remainder (result has the divisor's sign; integer x // 0 == 0 and
 * x % 0 == 0, as NumPy), power (integer to a negative integer power fails at evaluation with
 * FC_ERR_VALUE). Integer overflow wraps. */
FC_API fc_array *fc_add(fc_array *a, fc_array *b);
FC_API fc_array *fc_sub(fc_array *a, fc_array *b);
FC_API fc_array *fc_mul(fc_array *a, fc_array *b);
FC_API fc_array *fc_div(fc_array *a, fc_array *b);
FC_API fc_array *fc_floordiv(fc_array *a, fc_array *b);
FC_API fc_array *fc_mod(fc_array *a, fc_array *b);
FC_API fc_array *fc_pow(fc_array *a, fc_array *b);
FC_API fc_array *fc_arctan2(fc_array *a, fc_array *b);
/** maximum/minimum propagate NaN; fmax/fmin ignore it (NaN only if both are NaN). */
FC_API fc_array *fc_maximum(fc_array *a, fc_array *b);
FC_API fc_array *fc_minimum(fc_array *a, fc_array *b);
FC_API fc_array *fc_fmax(fc_array *a, fc_array *b);
FC_API fc_array *fc_fmin(fc_array *a, fc_array *b);
/* More binary math, NumPy's ufuncs of the same names: float loops (integers and bool follow
 * the float rule), complex refused with FC_ERR_DTYPE. hypot is sqrt(a*a + b*b) and
 * logaddexp / logaddexp2 are log(e^a + e^b) / log2(2^a + 2^b), without overflow; copysign
 * gives |a| with b's sign bit; nextafter steps a one value of its dtype toward b (f16 and
 * bf16 in their own 16 bits). fmod is C's remainder, which has a's sign (fc_mod has b's), and
 * also takes integers (x fmod 0 == 0, as NumPy; bool computes in i8). */
FC_API fc_array *fc_hypot(fc_array *a, fc_array *b);
FC_API fc_array *fc_logaddexp(fc_array *a, fc_array *b);
FC_API fc_array *fc_logaddexp2(fc_array *a, fc_array *b);
FC_API fc_array *fc_copysign(fc_array *a, fc_array *b);
FC_API fc_array *fc_nextafter(fc_array *a, fc_array *b);
FC_API fc_array *fc_fmod(fc_array *a, fc_array *b);

/* Unary math, NumPy's ufuncs of the same names. Integer and bool inputs of the float functions
 * (sqrt, exp, sin, ...) give the smallest float that holds them (i8 -> f16, i16 -> f32,
 * i32 -> f64), as NumPy. */
FC_API fc_array *fc_negative(fc_array *a);
FC_API fc_array *fc_abs(fc_array *a); /**< complex -> its real dtype */
FC_API fc_array *fc_sign(fc_array *a);
FC_API fc_array *fc_sqrt(fc_array *a);
FC_API fc_array *fc_cbrt(fc_array *a);
FC_API fc_array *fc_square(fc_array *a);
FC_API fc_array *fc_reciprocal(fc_array *a); /**< integers: 1 / x in integer arithmetic */
FC_API fc_array *fc_exp(fc_array *a);
FC_API fc_array *fc_exp2(fc_array *a);
FC_API fc_array *fc_expm1(fc_array *a);
FC_API fc_array *fc_log(fc_array *a);
FC_API fc_array *fc_log2(fc_array *a);
FC_API fc_array *fc_log10(fc_array *a);
FC_API fc_array *fc_log1p(fc_array *a);
FC_API fc_array *fc_sin(fc_array *a);
FC_API fc_array *fc_cos(fc_array *a);
FC_API fc_array *fc_tan(fc_array *a);
FC_API fc_array *fc_arcsin(fc_array *a);
FC_API fc_array *fc_arccos(fc_array *a);
FC_API fc_array *fc_arctan(fc_array *a);
FC_API fc_array *fc_sinh(fc_array *a);
FC_API fc_array *fc_cosh(fc_array *a);
FC_API fc_array *fc_tanh(fc_array *a);
FC_API fc_array *fc_arcsinh(fc_array *a);
FC_API fc_array *fc_arccosh(fc_array *a);
FC_API fc_array *fc_arctanh(fc_array *a);
/** The error function, its complement and ln |gamma(x)|: scipy.special's erf, erfc and
 *  gammaln (NumPy has no such ufuncs; the .fc names are erf, erfc, lgamma), with the float
 *  rule above; complex is refused. */
FC_API fc_array *fc_erf(fc_array *a);
FC_API fc_array *fc_erfc(fc_array *a);
FC_API fc_array *fc_lgamma(fc_array *a);
/** GELU, x Phi(x), as torch.nn.functional.gelu computes it (NumPy has none), with the float
 *  rule above: fc_gelu the exact form 0.5 x erfc(-x / sqrt 2) (approximate='none');
 *  fc_gelu_tanh the tanh approximation x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) / 2
 *  (approximate='tanh'; jax.nn.gelu's default), evaluated as x / (1 + exp(-2 z)) so that it
 *  stays accurate where 1 + tanh z cancels. `a @ b + bias` followed by fc_gelu_tanh is one
 *  cuBLASLt call with its GELU epilogue (see fc_matmul). */
FC_API fc_array *fc_gelu(fc_array *a);
FC_API fc_array *fc_gelu_tanh(fc_array *a);
/** floor, ceil, trunc keep integer dtypes; rint rounds half to even. */
FC_API fc_array *fc_floor(fc_array *a);
FC_API fc_array *fc_ceil(fc_array *a);
FC_API fc_array *fc_rint(fc_array *a);
FC_API fc_array *fc_trunc(fc_array *a);

/* Predicates and comparisons: bool results. Complex numbers compare lexicographically. */
FC_API fc_array *fc_isnan(fc_array *a);
FC_API fc_array *fc_isinf(fc_array *a);
FC_API fc_array *fc_isfinite(fc_array *a);
/** Whether the sign bit is set (-0.0, and NaNs that carry it); integers and bool go through
 *  the float rule (NumPy has float loops only), complex is refused. */
FC_API fc_array *fc_signbit(fc_array *a);
FC_API fc_array *fc_less(fc_array *a, fc_array *b);
FC_API fc_array *fc_less_equal(fc_array *a, fc_array *b);
FC_API fc_array *fc_greater(fc_array *a, fc_array *b);
FC_API fc_array *fc_greater_equal(fc_array *a, fc_array *b);
FC_API fc_array *fc_equal(fc_array *a, fc_array *b);
FC_API fc_array *fc_not_equal(fc_array *a, fc_array *b);
FC_API fc_array *fc_logical_and(fc_array *a, fc_array *b);
FC_API fc_array *fc_logical_or(fc_array *a, fc_array *b);
FC_API fc_array *fc_logical_xor(fc_array *a, fc_array *b);
FC_API fc_array *fc_logical_not(fc_array *a);

/* Bitwise ops on bool and integers (~ on bool is logical not). Shifts: integers only; a shift
 * by the width or more gives 0 (or -1 for a negative value shifted right), as NumPy. */
FC_API fc_array *fc_bitwise_and(fc_array *a, fc_array *b);
FC_API fc_array *fc_bitwise_or(fc_array *a, fc_array *b);
FC_API fc_array *fc_bitwise_xor(fc_array *a, fc_array *b);
FC_API fc_array *fc_bitwise_not(fc_array *a);
FC_API fc_array *fc_left_shift(fc_array *a, fc_array *b);
FC_API fc_array *fc_right_shift(fc_array *a, fc_array *b);

/* Complex parts. real/imag of a real array give it (imag: zeros) in its own dtype; angle gives
 * radians in the real dtype (float rule for integers). */
FC_API fc_array *fc_real(fc_array *a);
FC_API fc_array *fc_imag(fc_array *a);
FC_API fc_array *fc_conj(fc_array *a);
FC_API fc_array *fc_angle(fc_array *a);

/** where(cond, a, b): cond is taken as bool; a and b promote together. */
FC_API fc_array *fc_where(fc_array *cond, fc_array *a, fc_array *b);
/** clip(a, lo, hi) == minimum(maximum(a, lo), hi), all three promoted together. */
FC_API fc_array *fc_clip(fc_array *a, fc_array *lo, fc_array *hi);
/** Converts to dtype as NumPy's astype(dtype) (unsafe casting: float to int truncates; an
 *  out-of-range or NaN float gives an unspecified integer, as in C). */
FC_API fc_array *fc_cast(fc_array *a, fc_dtype dtype);

/* ---------------------------------------------------------------------------------------- */
/* Reductions over a set of axes (FC_ALL: every axis), keepdims as NumPy. Reducing an empty   */
/* set of axes returns the input converted to the result dtype.                               */
/* ---------------------------------------------------------------------------------------- */

/** sum and prod: bool and signed integers accumulate in i64, unsigned in u64, others in their
 *  own dtype (f16/bf16 accumulate in f32, f32 in f64, then round). */
FC_API fc_array *fc_sum(fc_array *a, fc_axes axes, bool keepdims);
FC_API fc_array *fc_prod(fc_array *a, fc_axes axes, bool keepdims);
/** mean: integers and bool give f64. The mean of zero elements is NaN. */
FC_API fc_array *fc_mean(fc_array *a, fc_axes axes, bool keepdims);
/** max and min propagate NaN; reducing zero elements is an error (FC_ERR_SHAPE). */
FC_API fc_array *fc_max(fc_array *a, fc_axes axes, bool keepdims);
FC_API fc_array *fc_min(fc_array *a, fc_axes axes, bool keepdims);
FC_API fc_array *fc_any(fc_array *a, fc_axes axes, bool keepdims);
FC_API fc_array *fc_all(fc_array *a, fc_axes axes, bool keepdims);
/** var and std with ddof (NumPy's): real result dtype (float rule for integers). */
FC_API fc_array *fc_var(fc_array *a, fc_axes axes, bool keepdims, int ddof);
FC_API fc_array *fc_std(fc_array *a, fc_axes axes, bool keepdims, int ddof);

typedef enum fc_norm_ord {
    FC_NORM_L2 = 0, /**< sqrt(sum(|x|^2)) */
    FC_NORM_L1,     /**< sum(|x|) */
    FC_NORM_INF     /**< max(|x|) */
} fc_norm_ord;
/** Vector norm over the axes (np.linalg.vector_norm); real float result. */
FC_API fc_array *fc_norm(fc_array *a, fc_axes axes, bool keepdims, fc_norm_ord ord);

/** Index of the first maximum (minimum) along one axis, or over the flattened array when
 *  axis == FC_AXIS_NONE; i64 result. NaN counts as the maximum and the minimum. */
#define FC_AXIS_NONE (-1000)
FC_API fc_array *fc_argmax(fc_array *a, int axis, bool keepdims);
FC_API fc_array *fc_argmin(fc_array *a, int axis, bool keepdims);

/** Inclusive scans along one axis, or over the flattened array when axis == FC_AXIS_NONE (a
 *  0-d array is scanned as shape (1,), as NumPy does). cumsum and cumprod: np.cumsum and
 *  np.cumprod, result dtypes as fc_sum's (bool and signed integers i64, unsigned u64), floats
 *  accumulated in double (complex in c128) and rounded once per element; cummax and cummin:
 *  np.maximum.accumulate and np.minimum.accumulate, same dtype, NaN propagating from where it
 *  first appears, complex compared lexicographically. */
FC_API fc_array *fc_cumsum(fc_array *a, int axis);
FC_API fc_array *fc_cumprod(fc_array *a, int axis);
FC_API fc_array *fc_cummax(fc_array *a, int axis);
FC_API fc_array *fc_cummin(fc_array *a, int axis);

/** What fc_take does with an index outside [-n, n) of an axis of extent n (np.take's mode):
 *  RAISE fails the evaluation with FC_ERR_VALUE (negative indices count from the end, as in
 *  NumPy); WRAP takes it modulo n; CLIP clamps it to [0, n - 1] (negative indices give 0).
 *  An index is the int64 value of its bits: a u64 above 2^63 is negative, as NumPy casts it. */
typedef enum fc_take_mode { FC_TAKE_RAISE, FC_TAKE_WRAP, FC_TAKE_CLIP, FC_TAKE_DROP } fc_take_mode;
/* FC_TAKE_DROP (scatters only; JAX's mode="drop"): an update whose index is outside [0, n)
 * is skipped (negative indices included). fc_take refuses it. */
/** np.take(a, indices, axis, mode): the elements of a at the positions indices holds along
 *  axis, or in the flattened array when axis == FC_AXIS_NONE. The result's shape is a's with
 *  that axis replaced by indices' shape. indices: an integer or bool array (never a weak
 *  scalar's float). A gather is an indexed load in the kernel that consumes it (a is computed
 *  where it is read, as views are); taking from an empty axis fails (FC_ERR_VALUE) unless
 *  indices is empty. */
FC_API fc_array *fc_take(fc_array *a, fc_array *indices, int axis, fc_take_mode mode);
/** np.take_along_axis(a, indices, axis): indices has a's number of axes and broadcasts against
 *  it on every axis but `axis`, where it picks positions (negative ones count from the end;
 *  one outside [-n, n) fails the evaluation with FC_ERR_VALUE). The result's shape is the
 *  broadcast shape with indices' extent along axis. axis == FC_AXIS_NONE: a flattened,
 *  indices 1-d. indices: an integer array (not bool, as NumPy). The pairing of argsort and
 *  take_along_axis (sorting rows by a key) and gathering the argmax along an axis
 *  (expand_dims then take_along_axis) are its common uses; it is one kernel's index
 *  arithmetic and an indexed load. */
FC_API fc_array *fc_take_along_axis(fc_array *a, fc_array *indices, int axis);
/** np.put_along_axis(a, indices, values, axis), functionally: a new array equal to a with
 *  the positions take_along_axis would read set to values (broadcast to indices' shape against
 *  a's other axes, cast to a's dtype as NumPy's setitem casts). Negative indices count from the
 *  end; one out of range fails the evaluation (FC_ERR_VALUE); where a position repeats the
 *  last write wins. axis == FC_AXIS_NONE: the flattened array, indices 1-d. */
FC_API fc_array *fc_put_along_axis(fc_array *a, fc_array *indices, fc_array *values, int axis);
/** Which of equal elements np.searchsorted's insertion point goes before (LEFT: the first
 *  position where a[i] >= v) or after (RIGHT: the first where a[i] > v). */
typedef enum fc_side { FC_SIDE_LEFT, FC_SIDE_RIGHT } fc_side;
/** np.searchsorted(a, v, side): for each element of v, where it would be inserted into the
 *  sorted 1-d array a to keep it sorted (int64, v's shape). a and v are compared in their
 *  common dtype (NumPy's promotion, Python scalars weak) with NaN after every number, the
 *  order NumPy sorts in; a must be sorted that way (ascending), as NumPy assumes (not
 *  checked). A binary search per element in the consuming kernel. Complex dtypes and a
 *  sorter are not supported (FC_ERR_UNSUPPORTED). */
FC_API fc_array *fc_searchsorted(fc_array *a, fc_array *v, fc_side side);
/** np.sort(a, axis, kind="stable"): a's elements sorted along axis (FC_AXIS_NONE: the
 *  flattened array), ascending in NumPy's order: NaN after every number, -0.0 equal to 0.0
 *  (equal elements keep their order and their bits), complex numbers by real part, then
 *  imaginary part, with NaNs last as NumPy places them ([R + Rj, R + nanj, nan + Rj,
 *  nan + nanj]). Every numeric dtype and bool. Stable whatever kind a NumPy caller names, so
 *  it is also a valid np.partition. On the GPU: radix sorts of fusec's own (one block a row
 *  for rows of up to a tile, passes over the whole array for longer ones); the input is
 *  stored first (a sort does not fuse with what computes it). */
FC_API fc_array *fc_sort(fc_array *a, int axis);
/** np.argsort(a, axis, kind="stable"): int64 positions along axis that sort a (fc_sort's
 *  order; equal elements in their original order). FC_AXIS_NONE: positions in the flattened
 *  array. take_along_axis(a, argsort(a, axis), axis) is sort(a, axis). A 0-d a is taken as
 *  shape [1] (axis 0 or -1 gives [0]), as NumPy's argsort does; fc_sort refuses it
 *  (FC_ERR_AXIS) unless axis is FC_AXIS_NONE, as np.sort does. */
FC_API fc_array *fc_argsort(fc_array *a, int axis);
/** np.partition(a, kth, axis) / np.argpartition: a (its int64 positions) along axis
 *  (FC_AXIS_NONE: the flattened array) arranged so that position kth (negative: from the end)
 *  holds what a sort puts there, with nothing greater before it and nothing smaller after it
 *  (fc_sort's order). fusec returns the full stable sort (fc_sort, fc_argsort): a sorted array
 *  is a valid partition for every kth, so the result is NumPy's up to the order NumPy leaves
 *  unspecified, at the cost of a sort rather than a selection. FC_ERR_VALUE for kth outside
 *  [-n, n) of a non-empty a (n the extent kth indexes), as NumPy raises; FC_ERR_AXIS and
 *  FC_ERR_DTYPE (a Python scalar) as fc_sort; argpartition takes a 0-d a as shape [1]. */
FC_API fc_array *fc_partition(fc_array *a, int64_t kth, int axis);
FC_API fc_array *fc_argpartition(fc_array *a, int64_t kth, int axis);
/** np.unique(a, return_index, return_inverse, return_counts) (axis=None, equal_nan=True):
 *  of the flattened a, its distinct values in fc_sort's order (values, a's dtype, 1-d), the
 *  position in the flattened a of each value's first occurrence (index), the place in values
 *  of each element of a (inverse, a's shape, as NumPy 2 gives it) and how often each value
 *  occurs (counts), all int64 but values. Equal values are those a comparison finds equal
 *  (-0.0 and 0.0 are one value, which keeps the bits of its first occurrence); every NaN is one
 *  value, whatever its sign, payload or (complex) the part that is NaN, after every number,
 *  with the bits NumPy keeps (the first NaN in the sort's order). Each non-NULL pointer
 *  receives a new reference; NULL ones are not computed.
 *  The number of distinct values depends on the data, so this call evaluates a's stable sort
 *  and the positions where a new value starts (synchronising, as fc_flatnonzero does; a
 *  program input without data fails), then compacts them.
 *  @return FC_OK; FC_ERR_NULL (a NULL: the outputs untouched); FC_ERR_DTYPE (a Python
 *          scalar); an evaluation's or a poisoned a's status, each output then holding that
 *          poison. */
FC_API fc_status fc_unique(fc_array *a, fc_array **values, fc_array **index, fc_array **inverse,
                           fc_array **counts);

/** Scatters, functionally: a new array equal to a except that the updates combine in, one
 *  at a time in row-major order, at the positions indices holds along axis (FC_AXIS_NONE: in
 *  the flattened array). As np.add.at(a, (slice(None),) * axis + (indices,), values), and
 *  np.maximum.at / np.minimum.at. The updates' shape is a's with that axis replaced by
 *  indices' shape (take's result shape); values broadcast to it and cast to a's dtype, which
 *  NumPy's "same_kind" rule must allow (else FC_ERR_DTYPE; Python scalars count by kind).
 *  Repeated indices accumulate, unlike a[indices] += values. mode: take's, plus FC_TAKE_DROP.
 *  On the GPU each update is an atomic read-modify-write (native where the dtype has one, a
 *  compare-and-swap loop otherwise): integer and bool results are exact; a float sum adds
 *  the updates of one position in an unspecified order (a different last bit from run to
 *  run is possible where several updates meet), max and min are exact. bool: add is
 *  logical or. Complex max/min: FC_ERR_UNSUPPORTED. */
FC_API fc_array *fc_scatter_add(fc_array *a, fc_array *indices, fc_array *values, int axis,
                                fc_take_mode mode);
FC_API fc_array *fc_scatter_max(fc_array *a, fc_array *indices, fc_array *values, int axis,
                                fc_take_mode mode);
FC_API fc_array *fc_scatter_min(fc_array *a, fc_array *indices, fc_array *values, int axis,
                                fc_take_mode mode);
/** np.put(a, indices, values, mode), functionally: a new array equal to a with the flat
 *  positions in indices set to values (flattened, cast to a's dtype unsafely as NumPy does,
 *  repeated when shorter than indices). Where an index repeats, the last write wins, on
 *  every backend: the winner of each position is the largest update number (a scatter_max),
 *  then one kernel gathers the winners' values (deterministic, unlike a race of stores). */
FC_API fc_array *fc_put(fc_array *a, fc_array *indices, fc_array *values, fc_take_mode mode);
/** np.bincount(x, weights, minlength): how often each value of the 1-d non-negative integer
 *  array x occurs (int64), or the sums of weights (same shape as x, float64) per value; the
 *  length is max(x) + 1, at least minlength. That length depends on x's values, so this call
 *  evaluates x and its maximum (a synchronising evaluation, as in CuPy): a program input
 *  without a value fails. A negative value is FC_ERR_VALUE, as NumPy's ValueError. One
 *  scatter_add kernel counts. */
FC_API fc_array *fc_bincount(fc_array *x, fc_array *weights, int64_t minlength);
/** np.histogram(x, bins, range=(lo, hi), weights)[0]: counts (int64; weights' dtype with
 *  weights, which have x's shape) of x's values in `bins` equal bins over [lo, hi], the last
 *  bin closed; values outside (and NaN) are left out. The bin of a value is NumPy's: computed
 *  in the edges' dtype (x's float dtype, float64 for integers), then corrected against the
 *  edges np.linspace gives. lo == hi widens the range by 0.5 each way. lo and hi both NaN:
 *  the range is x's minimum and maximum (an evaluation, as fc_bincount's). x real (bool and
 *  complex: FC_ERR_DTYPE); bins >= 1, a finite range with lo <= hi, else FC_ERR_VALUE. */
FC_API fc_array *fc_histogram(fc_array *x, int64_t bins, double lo, double hi,
                              fc_array *weights);
/** np.histogram's second result: the bins + 1 edges (np.linspace(lo, hi, bins + 1) in the
 *  edges' dtype, as fc_histogram uses them; same arguments and range rules). */
FC_API fc_array *fc_histogram_bin_edges(fc_array *x, int64_t bins, double lo, double hi);

/** np.flatnonzero(a): the positions (int64, 1-d, increasing) of a's non-zero elements in the
 *  flattened array (NaN counts as non-zero, as bool(nan) is True). Its size is a's count of
 *  non-zero elements, so this call evaluates a's truth values and their count (synchronising,
 *  as CuPy's boolean indexing does; a program input without data fails). The positions are a
 *  compaction: one kernel keeps the mask's running count, which places each one. */
FC_API fc_array *fc_flatnonzero(fc_array *a);
/** np.nonzero(a): a's coordinates of its non-zero elements, one int64 array per axis, into
 *  out[0 .. ndim-1] (new references, NULL on failure), in row-major order. A 0-d a is
 *  FC_ERR_VALUE (NumPy 2 refuses it). Evaluates as fc_flatnonzero. np.where(cond) with one
 *  argument is this. */
FC_API fc_status fc_nonzero(fc_array *a, fc_array **out);
/** np.argwhere(a): the coordinates of a's non-zero elements as rows, int64 [count, ndim]. */
FC_API fc_array *fc_argwhere(fc_array *a);

/* ---------------------------------------------------------------------------------------- */
/* Views and shape ops. Lazy like everything else: a view is index arithmetic in the kernel   */
/* that consumes it, never a copy.                                                            */
/* ---------------------------------------------------------------------------------------- */

/** One extent may be -1 (inferred). Sizes must match: else FC_ERR_SHAPE. */
FC_API fc_array *fc_reshape(fc_array *a, fc_shape shape);
/** Reverses the axes (a.T). */
FC_API fc_array *fc_transpose(fc_array *a);
/** Permutes the axes: output axis i is input axis perm.axis[i]; perm.n == ndim. */
FC_API fc_array *fc_permute(fc_array *a, fc_axes perm);
FC_API fc_array *fc_broadcast_to(fc_array *a, fc_shape shape);
FC_API fc_array *fc_expand_dims(fc_array *a, int axis);
/** Removes the given size-1 axes, or every size-1 axis for FC_ALL. */
FC_API fc_array *fc_squeeze(fc_array *a, fc_axes axes);
/** Reverses the order of elements along the axes (FC_ALL: every axis). */
FC_API fc_array *fc_flip(fc_array *a, fc_axes axes);

/** One subscript entry of fc_index, as Python's a[...]: a slice start:stop:step (FC_NIL for an
 *  omitted bound), an integer index (drops the axis), None (a new axis), an Ellipsis, or an
 *  integer array (NumPy's advanced indexing: picks positions along its axis). */
typedef enum fc_idx_kind {
    FC_IDX_SLICE, FC_IDX_INT, FC_IDX_NEWAXIS, FC_IDX_ELLIPSIS, FC_IDX_ARRAY
} fc_idx_kind;
typedef struct fc_idx {
    fc_idx_kind kind;
    int64_t start, stop, step; /* FC_IDX_INT uses start as the index */
    fc_array *array;           /* FC_IDX_ARRAY: the index array (borrowed, not consumed) */
} fc_idx;
#define FC_NIL INT64_MIN
#ifndef __cplusplus
#define FC_S(start, stop, step) ((fc_idx){FC_IDX_SLICE, (start), (stop), (step), NULL})
#define FC_AT(i) ((fc_idx){FC_IDX_INT, (i), 0, 0, NULL})
#define FC_NEWAXIS ((fc_idx){FC_IDX_NEWAXIS, 0, 0, 0, NULL})
#define FC_ELLIPSIS ((fc_idx){FC_IDX_ELLIPSIS, 0, 0, 0, NULL})
#define FC_ARRAY_IDX(x) ((fc_idx){FC_IDX_ARRAY, 0, 0, 0, (x)})
#else /* no compound literals in C++: a helper whose int64_t parameters convert as C's do */
#define FC_S(start, stop, step) (::fc_cxx_::idx(FC_IDX_SLICE, (start), (stop), (step)))
#define FC_AT(i) (::fc_cxx_::idx(FC_IDX_INT, (i), 0, 0))
#define FC_NEWAXIS (::fc_cxx_::idx(FC_IDX_NEWAXIS, 0, 0, 0))
#define FC_ELLIPSIS (::fc_cxx_::idx(FC_IDX_ELLIPSIS, 0, 0, 0))
#define FC_ARRAY_IDX(x) (::fc_cxx_::array_idx(x))
#endif
#define FC_COLON FC_S(FC_NIL, FC_NIL, FC_NIL)
/** a[idx[0], ..., idx[n-1]] with NumPy's indexing rules. Basic entries (steps may be negative;
 *  slice bounds clip; an integer index out of range or a zero step is FC_ERR_INDEX) give a
 *  view. Integer arrays (FC_ARRAY_IDX) broadcast together and pick positions along their
 *  axes, as NumPy's advanced indexing: the broadcast shape replaces those axes where they are
 *  adjacent, else leads the result. A negative index counts from the end; one out of range
 *  fails the evaluation with FC_ERR_VALUE (a device-side check, as take's). The result is one
 *  indexed load in the consuming kernel. A boolean array (a mask) is its nonzero()
 *  coordinates, as in NumPy: x[mask] selects the elements where mask is true, in row-major
 *  order, mask's shape matching the axes it covers (else FC_ERR_INDEX); the selection's size
 *  is the mask's count, so building x[mask] evaluates the mask (see fc_flatnonzero). */
FC_API fc_array *fc_index(fc_array *a, int n, const fc_idx *idx);
/** x[idx[0], ..., idx[n-1]] = value, functionally: a new array equal to x except where the
 *  entries select, which take value cast to x's dtype (unsafely, as NumPy's setitem) and
 *  broadcast to the selection's shape. Basic entries (slices, integers, None, Ellipsis), or
 *  one boolean array of x's shape with a single value or with one value per selected element
 *  (a 1-d array of the mask's count, taken in row-major order: x[mask] = x[mask] ** 2; that
 *  count is evaluated). x itself is unchanged (it may have other readers; fc_assign writes
 *  the update over x's buffer when it has none); the update is one kernel that copies the
 *  rest. With integer arrays among the entries (or a mask of fewer axes) the selection is
 *  fc_index's, the value broadcasts to its shape, and where a position is selected twice the
 *  last write wins, as in NumPy (a put: three kernels). */
FC_API fc_array *fc_setitem(fc_array *x, int n, const fc_idx *idx, fc_array *value);
/** fc_slice(a, FC_S(1, -1, 1), FC_COLON): fc_index with the entries written inline (at least
 *  one in C; in C++ fc_slice(a) is a[()], a itself as a new reference). */
#ifndef __cplusplus
#define fc_slice(a, ...)                                                                         \
    fc_index((a), (int)(sizeof((fc_idx[]){__VA_ARGS__}) / sizeof(fc_idx)), (fc_idx[]){__VA_ARGS__})
#else
#define fc_slice(...) (::fc_cxx_::slice(__VA_ARGS__))
#endif

typedef enum fc_pad_mode { FC_PAD_CONSTANT, FC_PAD_EDGE, FC_PAD_REFLECT, FC_PAD_SYMMETRIC } fc_pad_mode;
/** np.pad. widths[i] = {before, after} for axis i; n == ndim, or n == 1 for the same widths
 *  on every axis. `value` is the constant for FC_PAD_CONSTANT. Widths are limited to one
 *  reflection (FC_ERR_SHAPE beyond): reflect at most the axis length - 1, symmetric at most
 *  the axis length, edge needs a non-empty axis. */
FC_API fc_array *fc_pad(fc_array *a, int n, const int64_t (*widths)[2], fc_pad_mode mode,
                        double value);
/** Joins arrays along an existing axis (concatenate) or a new one (stack); dtypes promote.
 *  n >= 1. */
FC_API fc_array *fc_concatenate(fc_ctx *ctx, fc_array *const *arrays, int n, int axis);
FC_API fc_array *fc_stack(fc_ctx *ctx, fc_array *const *arrays, int n, int axis);

/** Matrix product as np.matmul (1-D and 2-D operands, and batches that broadcast); dtypes
 *  promote; accumulation is wide. */
FC_API fc_array *fc_matmul(fc_array *a, fc_array *b);

/* Contractions, as NumPy's. Composites (graph/contract.c): a pair of operands that shares an
 * axis to sum is one fc_matmul (one cuBLAS batched GEMM on the GPU), its operands' axes
 * grouped into [batch, M, K] x [batch, K, N] by views; what sums nothing is a broadcast
 * multiply that fuses with its consumers. Operands are cast to the promotion of their dtypes
 * (np.result_type; Python scalars count as the arrays np.asarray makes: int64, float64,
 * complex128, bool), and the products accumulate in it, integers wrapping and bool giving
 * any of the ands, as NumPy's loops do. Errors are poisoned arrays whose message names the
 * function: FC_ERR_SHAPE where NumPy raises for shapes, FC_ERR_AXIS for a bad axis,
 * FC_ERR_VALUE for a bad einsum subscripts string. */

/** np.dot(a, b): for 1-d operands their inner product (0-d); a 0-d operand multiplies;
 *  otherwise the sum over a's last axis and b's second-to-last (its only one when 1-d), with
 *  shape a.shape[:-1] + b.shape[:-2] + b.shape[-1:]. FC_ERR_SHAPE when those extents differ
 *  ("shapes ... not aligned"). */
FC_API fc_array *fc_dot(fc_array *a, fc_array *b);
/** np.vdot(a, b): the 0-d sum of conj(a) * b over both flattened (sizes must be equal,
 *  else FC_ERR_SHAPE). */
FC_API fc_array *fc_vdot(fc_array *a, fc_array *b);
/** np.inner(a, b): the sum over the last axes of both (a 0-d operand multiplies), shape
 *  a.shape[:-1] + b.shape[:-1]. */
FC_API fc_array *fc_inner(fc_array *a, fc_array *b);
/** np.outer(a, b): a flattened times b flattened, [a.size, b.size] (a broadcast multiply,
 *  with np.multiply's dtype). */
FC_API fc_array *fc_outer(fc_array *a, fc_array *b);
/** np.tensordot(a, b, axes) with an integer: sums a's last `axes` axes against b's first
 *  `axes` ones (none when axes <= 0, as NumPy: an outer product). The result holds a's other
 *  axes, then b's. FC_ERR_AXIS when either has fewer axes, FC_ERR_SHAPE when paired extents
 *  differ. */
FC_API fc_array *fc_tensordot(fc_array *a, fc_array *b, int axes);
/** np.tensordot(a, b, (axes_a, axes_b)): sums a's axis axes_a[i] against b's axes_b[i] for
 *  i < n (negative axes count from the end). FC_ERR_AXIS for an axis out of range or repeated
 *  in one list, FC_ERR_SHAPE when paired extents differ ("shape-mismatch for sum"),
 *  FC_ERR_INVALID for n outside 0..FC_MAX_DIMS, FC_ERR_NULL for a NULL list with n > 0. */
FC_API fc_array *fc_tensordot_axes(fc_array *a, fc_array *b, int n, const int *axes_a,
                                   const int *axes_b);
/** np.einsum(subscripts, *operands) over n operands (1 to 64): one comma-separated term of
 *  letters per operand, then optionally "->" and the output's letters (spaces are ignored).
 *  A letter repeated within a term takes that operand's diagonal; a letter missing from the
 *  output is summed; "..." stands for an operand's dimensions that no letter names, which
 *  broadcast against the other operands' (right-aligned). Without "->" the output is "..."
 *  (when an ellipsis stands for any dimension) then the letters used once, in ASCII order
 *  (capitals first), as NumPy's implicit mode. An extent of 1 broadcasts against a longer
 *  one of the same letter, as in NumPy. Operands contract two at a time, the pair whose
 *  result is smallest first; a result, or any intermediate, of more than FC_MAX_DIMS
 *  dimensions is refused (FC_ERR_SHAPE for the result, FC_ERR_UNSUPPORTED when no order
 *  keeps the intermediates within it).
 *  @return the result, poisoned with FC_ERR_VALUE (a character that is not a letter, a '.'
 *  outside "...", a malformed "->", more or fewer terms than operands, an output letter
 *  that no input has or that repeats, no operands), FC_ERR_SHAPE (a term names more or fewer
 *  dimensions than its operand has and no "..." takes the rest, extents of a letter that
 *  differ, broadcast dimensions with no "..." in an explicit output), FC_ERR_NULL,
 *  FC_ERR_CONTEXT, or a poisoned operand's status. */
FC_API fc_array *fc_einsum(fc_ctx *ctx, const char *subscripts, fc_array *const *operands,
                           int n);
/** np.kron(a, b): the Kronecker product, both padded with leading axes to the larger rank
 *  (a broadcast multiply and views, with np.multiply's dtype). At most 4 dimensions
 *  (FC_ERR_UNSUPPORTED beyond: the product interleaves twice the rank). */
FC_API fc_array *fc_kron(fc_array *a, fc_array *b);
/** np.linalg.matrix_power(a, n): the identity (broadcast over a's batch) for 0, else products
 *  of matmuls by NumPy's binary decomposition; a negative n takes fc_linalg_inv(a) to the
 *  power -n, as NumPy does (a singular a fails the evaluation with FC_ERR_LINALG). a has at
 *  least 2 dimensions and square last two (else FC_ERR_SHAPE). */
FC_API fc_array *fc_matrix_power(fc_array *a, int64_t n);

/* Dense linear algebra, as np.linalg (NumPy 2). Every function works on stacks of matrices:
 * the last two axes are the matrix, the leading ones a batch (solve broadcasts a's batch
 * against b's; lstsq, as NumPy's, takes one matrix). Dtypes as np.linalg's: f32, f64, c64 and
 * c128 are computed in their own precision (lstsq, pinv and matrix_rank in double, as NumPy:
 * their rank thresholds are double precision's); bool and integers are computed in f64; f16
 * and bf16 are refused (FC_ERR_DTYPE: NumPy has no linalg loops for them); two operands
 * compute in f32 / c64 only when both are single precision. On the GPU through cuSOLVER
 * (loaded on first use like cuBLAS), on the host backend by fusec's own reference code (LU
 * with partial pivoting, Cholesky, Householder QR, Jacobi's eigenvalue iteration, one-sided
 * Jacobi SVD), each computed in f64 / c128.
 *
 * Errors. NumPy's LinAlgError is FC_ERR_LINALG, whose message names the function, the shape
 * and, for a batch, the first matrix at fault: an array of fewer than 2 dimensions or whose
 * last two are not square (at construction, a poisoned array); a singular matrix for solve
 * and inv, a matrix that is not positive definite for cholesky (found by the factorisation,
 * so at evaluation: fc_eval / fc_read return FC_ERR_LINALG and no array gains a value; on the
 * GPU the evaluation waits for the factorisation's status, as CuPy does). Shapes that do not
 * fit (b's rows against a's) are FC_ERR_SHAPE, as NumPy's ValueError. A singular matrix is no
 * error for det and slogdet: det is 0, slogdet gives sign 0 and logabsdet -inf. A matrix that
 * is singular in exact arithmetic may be factorised into tiny non-zero pivots by rounding
 * (then solve and inv give huge values, as NumPy's do); the error is raised for an exactly
 * zero pivot, LAPACK's and cuSOLVER's rule. */

/** np.linalg.solve(a, b): x with a @ x == b. a: [..., n, n]; b: [..., n, k] (a stack of
 *  matrices whose batch broadcasts against a's), or [n] (one vector, NumPy 2's rule: only a
 *  1-d b is a vector), giving [..., n, k] or [..., n]. */
FC_API fc_array *fc_linalg_solve(fc_array *a, fc_array *b);
/** np.linalg.inv(a): solve(a, identity) over a's batch. */
FC_API fc_array *fc_linalg_inv(fc_array *a);
/** np.linalg.det(a): sign * exp(logabsdet) of slogdet's, as NumPy computes it; a's batch
 *  shape, a's (linalg) dtype. */
FC_API fc_array *fc_linalg_det(fc_array *a);
/** np.linalg.slogdet(a): the sign (a's linalg dtype; for complex a a number of modulus 1)
 *  and the natural log of |det| (the real dtype), each of a's batch shape, from an LU
 *  factorisation with partial pivoting. A 0 x 0 matrix gives 1 and 0.
 *  @param sign, logabsdet receive new references (either may be NULL: not computed).
 *  @return FC_OK; FC_ERR_NULL (a NULL: outputs untouched); otherwise the error, each output
 *          then holding that poison (FC_ERR_LINALG, FC_ERR_DTYPE, a poisoned a's). */
FC_API fc_status fc_linalg_slogdet(fc_array *a, fc_array **sign, fc_array **logabsdet);
/** np.linalg.cholesky(a, upper=upper): L, lower triangular with a real positive diagonal,
 *  with a == L @ L^H (only a's lower triangle is read, as NumPy's LAPACK call does), or its
 *  conjugate transpose U (a == U^H @ U) when upper. FC_ERR_LINALG at evaluation when a matrix
 *  is not positive definite. */
FC_API fc_array *fc_linalg_cholesky(fc_array *a, bool upper);
/** np.linalg.qr's modes. */
typedef enum fc_qr_mode {
    FC_QR_REDUCED = 0,  /**< "reduced": Q [..., m, k], R [..., k, n], k = min(m, n) */
    FC_QR_COMPLETE = 1, /**< "complete": Q [..., m, m] (unitary), R [..., m, n] */
    FC_QR_R = 2         /**< "r": R [..., k, n] alone */
} fc_qr_mode;
/** np.linalg.qr(a, mode): a == Q @ R for a [..., m, n] (any m, n: a need not be square), Q
 *  with orthonormal columns, R upper triangular (zeros below the diagonal), by Householder
 *  reflections as LAPACK's geqrf and orgqr/ungqr: R's diagonal is real (its signs, like Q's
 *  columns', are the reflections' and need not be NumPy's where a is rank deficient). An
 *  empty a gives empty factors (complete: Q the identity).
 *  @param q, r receive new references (either may be NULL: not computed); in FC_QR_R mode
 *         *q, where given, is set to NULL (NumPy returns R alone).
 *  @return FC_OK; FC_ERR_NULL (a NULL: outputs untouched); otherwise the error, each output
 *          then holding that poison (FC_ERR_LINALG: fewer than 2 dimensions; FC_ERR_INVALID:
 *          an unknown mode; FC_ERR_DTYPE). */
FC_API fc_status fc_linalg_qr(fc_array *a, fc_qr_mode mode, fc_array **q, fc_array **r);
/** np.linalg.eigh(a, UPLO): the eigenvalues w [..., n] (real dtype: f32 for f32 and c64,
 *  ascending) and eigenvectors v [..., n, n] (a's linalg dtype, as columns: a @ v == v *
 *  w[..., None, :], v^H v == I; each column only up to a sign or phase, and any orthonormal
 *  basis of a repeated eigenvalue's space) of the Hermitian matrices a [..., n, n], read from
 *  their lower triangle, or the upper one when upper (NumPy's UPLO="U"); the diagonal's
 *  imaginary parts are ignored. FC_ERR_LINALG at construction for a stack that is not
 *  square, at evaluation if the eigenvalue iteration does not converge.
 *  @param w, v receive new references (either may be NULL: not computed).
 *  @return as fc_linalg_slogdet's. */
FC_API fc_status fc_linalg_eigh(fc_array *a, bool upper, fc_array **w, fc_array **v);
/** np.linalg.eigvalsh(a, UPLO): fc_linalg_eigh's eigenvalues alone (no eigenvectors are
 *  computed). */
FC_API fc_array *fc_linalg_eigvalsh(fc_array *a, bool upper);
/** np.linalg.svd(a, full_matrices, compute_uv): a == U @ (S[..., None, :] * Vh) (over the
 *  first k = min(m, n) columns of U and rows of Vh) for a [..., m, n] (any m, n), with U
 *  [..., m, m] and Vh [..., n, n] unitary when full_matrices, else U [..., m, k] and Vh
 *  [..., k, n] with orthonormal columns and rows; S [..., k] real (f32 for f32 and c64),
 *  non-negative and descending; U and Vh of a's linalg dtype. Each singular vector is unique
 *  only up to a sign or phase (U's column i and Vh's row i together), a repeated singular
 *  value's only up to a basis of its space, and full U's and Vh's extra columns and rows any
 *  orthonormal completion. An empty a gives empty factors (full: identities where a side has
 *  room). On the GPU through cuSOLVER's gesvd (bidiagonalisation and QR iteration, LAPACK's
 *  accuracy), on the host by one-sided Jacobi. FC_ERR_LINALG at evaluation when the iteration
 *  does not converge, and for a matrix with a NaN or infinite entry (NumPy's "SVD did not
 *  converge"). hermitian=True is not offered (fc_linalg_eigh is its factorisation).
 *  @param u, s, vh receive new references (any may be NULL: not computed); when compute_uv is
 *         false *u and *vh, where given, are set to NULL (NumPy returns S alone).
 *  @return FC_OK; FC_ERR_NULL (a NULL: outputs untouched); otherwise the error, each output
 *          then holding that poison (FC_ERR_LINALG: fewer than 2 dimensions; FC_ERR_DTYPE). */
FC_API fc_status fc_linalg_svd(fc_array *a, bool full_matrices, bool compute_uv, fc_array **u,
                               fc_array **s, fc_array **vh);
/** np.linalg.svdvals(a): fc_linalg_svd's S alone (compute_uv=False; no vectors are
 *  computed). */
FC_API fc_array *fc_linalg_svdvals(fc_array *a);
/** np.linalg.lstsq(a, b, rcond) (NumPy 2): the minimum-norm x minimising |b - a x| for one
 *  matrix a [M, N] and b [M, K] or [M] (no stacks, as NumPy: FC_ERR_LINALG), through a's
 *  reduced svd: x = Vh^H ((U^H b) / s) over the singular values s > rcond * max(s), the
 *  others discarded as LAPACK's gelsd does. rcond NULL is NumPy 2's default, eps * max(M, N);
 *  a negative one is eps. As NumPy, the factorisation is computed in double precision (f64 /
 *  c128: the thresholds are double precision's) and x cast to a's linalg dtype.
 *  @param x receives [N, K] or [N] (a's and b's linalg dtype; zeros when M or N is 0);
 *  @param residuals the squared 2-norms of b - a x's columns, [K] (of b [M]: [1]), real, where
 *         NumPy gives them: when rank == N and M > N; otherwise [0]. Their shape depends on
 *         the rank, so when residuals is requested and M > N > 0 (and K > 0) the call
 *         evaluates a's factorisation and rank (a synchronising evaluation, like a boolean
 *         mask's count; the evaluated factorisation is reused by x, rank and s); M <= N, N == 0
 *         or K == 0 need none. A failure of that evaluation (FC_ERR_LINALG: no convergence)
 *         is then the call's error;
 *  @param rank a 0-d i32 array (NumPy's int32), the number of singular values kept;
 *  @param s a's singular values [min(M, N)], descending, of the real dtype.
 *         Each output may be NULL (not computed).
 *  @return FC_OK; FC_ERR_NULL (a or b NULL: outputs untouched); otherwise the error, each
 *          output then holding that poison (FC_ERR_LINALG: a not 2-d, b not 1-d or 2-d, or
 *          rows that differ, NumPy's "Incompatible dimensions"; FC_ERR_DTYPE; FC_ERR_VALUE: a
 *          NaN rcond). */
FC_API fc_status fc_linalg_lstsq(fc_array *a, fc_array *b, const double *rcond, fc_array **x,
                                 fc_array **residuals, fc_array **rank, fc_array **s);
/** np.linalg.pinv(a, rcond, hermitian): the Moore-Penrose pseudo-inverse [..., n, m] of the
 *  stack a [..., m, n], Vh^H diag(1 / s) U^H over the singular values s > rcond * max(s)
 *  (the others give 0), computed in double precision as NumPy does and cast to a's linalg
 *  dtype. rcond NULL is NumPy's default, 1e-15 (NumPy's rtol=None is rcond = max(m, n) *
 *  eps). hermitian: a is Hermitian (its lower triangle is read), factorised by
 *  fc_linalg_eigh (s = |w|). An empty a gives an empty result of a's own dtype, as NumPy's.
 *  @return the result, poisoned with FC_ERR_LINALG (fewer than 2 dimensions; hermitian and
 *  not square), FC_ERR_DTYPE, FC_ERR_VALUE (a NaN rcond), or a poisoned a's status; no
 *  convergence fails the evaluation (FC_ERR_LINALG). */
FC_API fc_array *fc_linalg_pinv(fc_array *a, const double *rcond, bool hermitian);
/** np.linalg.matrix_rank(a, tol, hermitian, rtol=rtol): the number of singular values above
 *  the tolerance, an i64 array of a's batch shape: tol (absolute) where given, else rtol times
 *  the largest singular value, rtol NULL being NumPy's default max(m, n) * eps of S's real
 *  dtype (f32's for f32 and c64 input). S is computed in double precision and cast to the
 *  real dtype, as NumPy's svd does; tol and rtol compare in f64 (NumPy's arrays). hermitian:
 *  S = |eigvalsh(a)|. An a of fewer than 2 dimensions gives 1 if any element is non-zero,
 *  else 0 (a 0-d i64); an empty matrix's rank is 0.
 *  @return the result, poisoned with FC_ERR_VALUE (both tol and rtol given), FC_ERR_LINALG
 *  (hermitian and not square), FC_ERR_DTYPE, or a poisoned a's status. */
FC_API fc_array *fc_linalg_matrix_rank(fc_array *a, const double *tol, const double *rtol,
                                       bool hermitian);
/** Discrete Fourier transform along `axis` (negative counts from the end), as np.fft.fft and
 *  np.fft.ifft with n=None and norm="backward": fc_ifft scales by 1 / n, rounded as NumPy
 *  rounds it (to f16 for an f16 input, f32 for f32 and c64). The result is complex with a's
 *  shape: c64 for f16, bf16, f32 and c64 input, c128 otherwise (NumPy 2's rule). Any length
 *  works (primes too); on the GPU through cuFFT. @return FC_ERR_AXIS for a bad axis,
 *  FC_ERR_VALUE for an empty axis (NumPy's ValueError), as poisoned arrays. */
FC_API fc_array *fc_fft(fc_array *a, int axis);
FC_API fc_array *fc_ifft(fc_array *a, int axis);

/** np.fft's normalisations: backward (the default: the inverse transforms scale by 1 / n),
 *  ortho (both directions by 1 / sqrt(n)), forward (the forward transforms by 1 / n). The
 *  factor is NumPy's, rounded to the transform's real dtype (f32 for c64 results). */
typedef enum fc_fft_norm { FC_FFT_BACKWARD = 0, FC_FFT_ORTHO, FC_FFT_FORWARD } fc_fft_norm;
/** The np.fft family along one axis, with NumPy 2's names, dtypes and defaults: n > 0 crops
 *  or zero-pads the input along `axis` to n points (n = 0 is NumPy's None: the axis length,
 *  and for irfft / hfft 2 (m - 1) output points from m inputs). fft / ifft: complex results
 *  as fc_fft's; rfft: the n / 2 + 1 non-negative frequencies of a real input (a complex one
 *  is FC_ERR_DTYPE); irfft: n real points from a half spectrum (the imaginary parts of its
 *  first value and, for an even n, of its value n / 2 are ignored, as NumPy's); hfft / ihfft:
 *  the transforms of a Hermitian-symmetric signal (irfft of conj(a), conj of rfft, the norm's
 *  direction swapped). Each transform is one cuFFT plan of its kind (rfft a real-to-complex
 *  one, irfft complex-to-real); the cropping, padding, conjugations and scaling fuse with the
 *  kernels around the library call.
 *  @return as poisoned arrays: FC_ERR_AXIS, FC_ERR_VALUE (fewer than one point: n < 0, an
 *  empty axis, irfft of a single value; a bad norm), FC_ERR_DTYPE. */
FC_API fc_array *fc_fft_n(fc_array *a, int64_t n, int axis, fc_fft_norm norm);
FC_API fc_array *fc_ifft_n(fc_array *a, int64_t n, int axis, fc_fft_norm norm);
FC_API fc_array *fc_rfft(fc_array *a, int64_t n, int axis, fc_fft_norm norm);
FC_API fc_array *fc_irfft(fc_array *a, int64_t n, int axis, fc_fft_norm norm);
FC_API fc_array *fc_hfft(fc_array *a, int64_t n, int axis, fc_fft_norm norm);
FC_API fc_array *fc_ihfft(fc_array *a, int64_t n, int axis, fc_fft_norm norm);
/** np.fft.fftn / ifftn / rfftn / irfftn (fft2 and kin: axes FC_AXES(-2, -1)): s (ns extents,
 *  ns = 0 for NumPy's None) sizes the transformed axes as n does one; axes FC_ALL is NumPy's
 *  None (the last ns axes, or every axis when ns = 0). rfftn transforms its last axis as rfft,
 *  irfftn as irfft (2 (m - 1) points by default), the others as fft / ifft. Adjacent axes
 *  (up to three) are one cuFFT plan: fft2 of a matrix is one call. No axis (axes.n == 0):
 *  the input itself, as NumPy returns it. */
FC_API fc_array *fc_fftn(fc_array *a, int ns, const int64_t *s, fc_axes axes, fc_fft_norm norm);
FC_API fc_array *fc_ifftn(fc_array *a, int ns, const int64_t *s, fc_axes axes, fc_fft_norm norm);
FC_API fc_array *fc_rfftn(fc_array *a, int ns, const int64_t *s, fc_axes axes, fc_fft_norm norm);
FC_API fc_array *fc_irfftn(fc_array *a, int ns, const int64_t *s, fc_axes axes,
                           fc_fft_norm norm);
/** np.fft.fftfreq(n, d) / rfftfreq(n, d): the sample frequencies, f64 (n >= 1, d != 0, else
 *  FC_ERR_VALUE). */
FC_API fc_array *fc_fftfreq(fc_ctx *ctx, int64_t n, double d);
FC_API fc_array *fc_rfftfreq(fc_ctx *ctx, int64_t n, double d);
/** np.fft.fftshift / ifftshift over `axes` (FC_ALL: every axis): the zero frequency to the
 *  centre and back (a roll by n / 2, -(n / 2)). */
FC_API fc_array *fc_fftshift(fc_array *a, fc_axes axes);
FC_API fc_array *fc_ifftshift(fc_array *a, fc_axes axes);

/** Convolution and correlation: np.convolve / np.correlate (1-d) and scipy.signal's
 *  convolve2d / correlate2d (2-d), with SciPy's mode and boundary names. The output's size:
 *  full (every overlap), same (the first input's size, centred on the full result as NumPy
 *  and SciPy centre it, which differs between convolve2d and correlate2d for even kernels)
 *  or valid (only complete overlaps). */
typedef enum fc_conv_mode { FC_CONV_FULL, FC_CONV_SAME, FC_CONV_VALID } fc_conv_mode;
/** How convolve2d / correlate2d extend in1 past its edges: fill with fillvalue, wrap
 *  (circular), symm (reflected with the edge repeated: d c b a | a b c d | d c b a). */
typedef enum fc_conv_boundary { FC_CONV_FILL, FC_CONV_WRAP, FC_CONV_SYMM } fc_conv_boundary;
/** How a convolution is computed (scipy.signal.convolve's `method`): direct (fusec's stencil
 *  kernel: one kernel, the input tile and its halo loaded once per block), fft (rfft2 of the
 *  zero-padded operands, their product, irfft2 and a crop, composed of fusec's FFT ops so the
 *  product and the crop fuse), or auto: direct for integer dtypes (exact) and for small
 *  kernels, fft when the kernel's multiply-adds per output exceed the FFT's cost
 *  (docs/ARCHITECTURE.md gives the rule). */
typedef enum fc_conv_method { FC_CONV_AUTO, FC_CONV_DIRECT, FC_CONV_FFT } fc_conv_method;
/** np.convolve(a, v, mode): 1-d arrays (a 0-d one counts as one element, as NumPy's
 *  ndmin=1); the longer one slides, as in NumPy. Dtypes promote (np.result_type; a Python
 *  scalar counts as its default dtype, as NumPy's asarray makes it); integers wrap as
 *  NumPy's loops do, bool is the OR of ANDs, f16 accumulates in f32. fc_convolve(a, v,
 *  FC_CONV_FULL, FC_CONV_AUTO) is NumPy's default.
 *  @return as poisoned arrays: FC_ERR_SHAPE (more than one dimension), FC_ERR_VALUE (an
 *  empty input; a bad mode or method). */
FC_API fc_array *fc_convolve(fc_array *a, fc_array *v, fc_conv_mode mode, fc_conv_method method);
/** np.correlate(a, v, mode) (NumPy's default mode is FC_CONV_VALID): c[k] = sum over n of
 *  a[n + k] * conj(v[n]), in NumPy's order when v is the longer. Dtypes as fc_convolve's.
 *  @return as fc_convolve's; a 0-d input is FC_ERR_SHAPE too, as in NumPy. */
FC_API fc_array *fc_correlate(fc_array *a, fc_array *v, fc_conv_mode mode, fc_conv_method method);
/** scipy.signal.convolve2d(in1, in2, mode, boundary, fillvalue) and correlate2d (in2 flipped
 *  for convolve2d, conjugated for correlate2d; in valid mode the inputs swap when in2 is the
 *  larger, and correlate2d's result is then reversed, as SciPy does). fillvalue is
 *  fill_re + i fill_im, converted to the result's dtype as SciPy converts it (FC_ERR_VALUE
 *  when it does not fit: an imaginary part for a real dtype, out of an integer's range).
 *  Dtypes: SciPy's (the inputs promote; every integer dtype, f32, f64, c64 and c128;
 *  integers wrap); bool, f16 and bf16 are FC_ERR_DTYPE. `method` as fc_conv_method says
 *  (SciPy's convolve2d has none: it is always direct).
 *  @return as poisoned arrays: FC_ERR_SHAPE (inputs not both 2-d; valid mode where neither
 *  input is at least as large as the other in every dimension; a negative full size),
 *  FC_ERR_VALUE (a bad mode, boundary or method; wrap or symm of an empty in1), FC_ERR_DTYPE. */
FC_API fc_array *fc_convolve2d(fc_array *in1, fc_array *in2, fc_conv_mode mode,
                               fc_conv_boundary boundary, double fill_re, double fill_im,
                               fc_conv_method method);
FC_API fc_array *fc_correlate2d(fc_array *in1, fc_array *in2, fc_conv_mode mode,
                                fc_conv_boundary boundary, double fill_re, double fill_im,
                                fc_conv_method method);

/* ---------------------------------------------------------------------------------------- */
/* User kernels, as CuPy's ElementwiseKernel and ReductionKernel. A call is a node of the lazy */
/* graph like any op: it fuses with the ops around it into one generated kernel, and its     */
/* CUDA C is part of that kernel's cache key.                                                 */
/* ---------------------------------------------------------------------------------------- */

/** A user kernel definition. The context owns it (fc_ctx_destroy frees it); defining the same
 *  text again returns the same definition. */
typedef struct fc_kernel fc_kernel;

/** An elementwise kernel (cupy.ElementwiseKernel). `in_params` and `out_params` are
 *  comma-separated "TYPE NAME" declarations, as "float32 x, T a, raw T y": TYPE is a dtype
 *  name (fc_dtype_name's, or NumPy's long ones: float32, int64, bool, complex64, ...) or a
 *  type placeholder (any other identifier, bound by the dtypes of the arguments given for it);
 *  `raw` marks an input the body indexes itself (x[j], x.size(): it is not broadcast and is
 *  read whole). `operation` is CUDA C statements assigning every output from the inputs, run
 *  once per output element; `i` is the element's index in the output (row-major) and the
 *  placeholders are type names. f16 and bf16 values are float in the body and are rounded on
 *  the way out, as everywhere in fusec. `name` names the kernel in errors, dumps and explains
 *  (a C identifier). @return FC_ERR_INVALID for a malformed declaration (the message names the
 *  parameter), an output that repeats an input's name, or an output type no input binds. */
FC_API fc_status fc_elementwise_kernel(fc_ctx *ctx, const char *in_params, const char *out_params,
                                       const char *operation, const char *name, fc_kernel **out);

/** A reduction kernel (cupy.ReductionKernel): `map_expr` (an expression of the inputs, and of
 *  i) gives each element's value, `reduce_expr` (an expression of `a` and `b`, which it must
 *  use) folds two of them, `post_map_expr` (statements) sets the one output from `a`, the
 *  reduced value, and `identity` is the value a folds from (required). Values are folded in
 *  `reduce_type` (a dtype or placeholder name; NULL or "" for the output's type), in no fixed
 *  order: reduce_expr must be associative and commutative. */
FC_API fc_status fc_reduction_kernel(fc_ctx *ctx, const char *in_params, const char *out_params,
                                     const char *map_expr, const char *reduce_expr,
                                     const char *post_map_expr, const char *identity,
                                     const char *name, const char *reduce_type, fc_kernel **out);

/** Calls an elementwise kernel on nin arrays (weak scalars such as fc_f64(ctx, 2.0) count as
 *  scalars), giving its nout outputs in out (new references; poisoned arrays on error). The
 *  arguments that are not raw broadcast together. An array argument must have its declared
 *  dtype exactly (fc_cast converts), and the arrays given for one placeholder must agree, as
 *  in CuPy; a weak scalar converts to its parameter's type (a Python integer outside an
 *  integer type's range is FC_ERR_VALUE, as NumPy 2 raises). @return FC_OK, or the error every output
 *  carries (FC_ERR_INVALID for a wrong count, FC_ERR_DTYPE naming the kernel and the
 *  parameter, FC_ERR_SHAPE for operands that do not broadcast). */
FC_API fc_status fc_kernel_call(fc_kernel *k, int nin, fc_array *const *in, int nout,
                                fc_array **out);
/** fc_kernel_call for a kernel with one output. */
FC_API fc_array *fc_kernel_call1(fc_kernel *k, int nin, fc_array *const *in);

/** Calls a reduction kernel on nin arrays (broadcast together) over `axes`, as cupy's
 *  kernel(x, axis=..., keepdims=...). A reduction over zero elements gives the post-map of
 *  the identity. @return the output (new reference), or a poisoned array. */
FC_API fc_array *fc_kernel_reduce(fc_kernel *k, int nin, fc_array *const *in, fc_axes axes,
                                  bool keepdims);

/** The kernel's name. */
FC_API const char *fc_kernel_name(const fc_kernel *k);

/* ---------------------------------------------------------------------------------------- */
/* Raw modules (cupy.RawModule and RawKernel): CUDA C of the user's, compiled by NVRTC        */
/* through the kernel cache, launched with a grid and a block on the context's GPU.           */
/* ---------------------------------------------------------------------------------------- */

typedef struct fc_module fc_module;

/** Compiles `source` (CUDA C++, NUL-terminated; NVRTC names it module.cu in messages) for the
 *  context's GPU and loads it. `options` are extra NVRTC options ("-std=c++14", "-DN=4",
 *  "-I/dir"; at most 16); `name_expressions` are C++ names of kernels to launch by name that
 *  are not extern "C", such as template instantiations ("test_sum<float>"). Binaries go to the
 *  kernel cache keyed by the source, options, names, arch and NVRTC version. @return FC_OK;
 *  FC_ERR_COMPILE with NVRTC's log and the offending lines of source in fc_errmsg;
 *  FC_ERR_UNSUPPORTED on the host backend (it does not run CUDA C). */
FC_API fc_status fc_module_create(fc_ctx *ctx, const char *source, int noptions,
                                  const char *const *options, int nnames,
                                  const char *const *name_expressions, fc_module **out);
/** Compiles `source` for `arch` ("sm_90") into the kernel cache without loading it: needs no
 *  GPU (CI can warm raw modules for GPUs it does not have, and check that they compile). */
FC_API fc_status fc_module_compile(fc_ctx *ctx, const char *source, int noptions,
                                   const char *const *options, int nnames,
                                   const char *const *name_expressions, const char *arch);
/** Unloads a module. NULL-safe; fc_ctx_destroy destroys the modules left. */
FC_API void fc_module_destroy(fc_module *m);

/** One argument of fc_module_launch, in the kernel's parameter order. */
typedef enum fc_arg_kind {
    FC_ARG_IN,     /**< array: the kernel reads it (a const T * of its value, row-major) */
    FC_ARG_OUT,    /**< array: the kernel writes it (see fc_module_launch) */
    FC_ARG_SCALAR, /**< a value of `dtype` by value: i (bool, integers), re (floats), re + im
                        (complex) */
    FC_ARG_BYTES   /**< size bytes at `bytes` by value: a struct */
} fc_arg_kind;
typedef struct fc_arg {
    fc_arg_kind kind;
    fc_array *array;
    fc_dtype dtype;
    int64_t i;
    double re, im;
    const void *bytes;
    size_t size;
} fc_arg;
static inline fc_arg fc_arg_in(fc_array *a) {
    fc_arg r = {FC_ARG_IN, a, FC_BOOL, 0, 0, 0, 0, 0};
    return r;
}
static inline fc_arg fc_arg_out(fc_array *a) {
    fc_arg r = {FC_ARG_OUT, a, FC_BOOL, 0, 0, 0, 0, 0};
    return r;
}
static inline fc_arg fc_arg_int(fc_dtype dtype, int64_t v) {
    fc_arg r = {FC_ARG_SCALAR, 0, dtype, v, 0, 0, 0, 0};
    return r;
}
static inline fc_arg fc_arg_float(fc_dtype dtype, double v) {
    fc_arg r = {FC_ARG_SCALAR, 0, dtype, 0, v, 0, 0, 0};
    return r;
}
static inline fc_arg fc_arg_bytes(const void *bytes, size_t size) {
    fc_arg r = {FC_ARG_BYTES, 0, FC_BOOL, 0, 0, 0, bytes, size};
    return r;
}

/** Launches kernel `name` of m (an extern "C" kernel, or one of the module's name
 *  expressions) on grid[0..3) blocks of block[0..3) threads with shared_bytes of dynamic
 *  shared memory, on `stream` (NULL: the context's). IN arrays are evaluated first. Values are
 *  immutable, so an OUT argument passes a new copy of its array's value, which the kernel may
 *  overwrite in part or whole: outs[j] (one per OUT argument, in order; new references)
 *  receives that new array, and the array given keeps its old value, as does any lazy
 *  expression that reads it. The launch is queued; reading an output waits for it. A kernel
 *  that faults (an out-of-bounds access) makes the GPU unusable for the rest of the process,
 *  as any kernel's fault does (CUDA's sticky errors; every fusec context on that GPU shares
 *  its CUDA context): calls then fail with FC_ERR_BACKEND. The kernel cache is never
 *  affected. @return FC_OK; FC_ERR_INVALID naming the kernel
 *  (no such kernel, a zero grid or block, an argument of the wrong kind); the error of an IN
 *  array that fails to evaluate. */
FC_API fc_status fc_module_launch(fc_module *m, const char *name, const unsigned grid[3],
                                  const unsigned block[3], size_t shared_bytes, fc_stream *stream,
                                  int nargs, const fc_arg *args, fc_array **outs);

/* ---------------------------------------------------------------------------------------- */
/* Composites: NumPy functions built from the ops above inside the graph. They add no kernels */
/* of their own: fusion fuses them as it would the same expression written by hand. Each     */
/* checks its arguments first, so an error is a poisoned array whose message names the       */
/* function, the shapes and the dtypes (never a primitive it is made of). Results are new    */
/* references, as everywhere.                                                                 */
/* ---------------------------------------------------------------------------------------- */

/** np.identity(n, dtype): the n x n identity (fc_eye with m == n, k == 0). */
FC_API fc_array *fc_identity(fc_ctx *ctx, fc_dtype dtype, int64_t n);
/** np.meshgrid(*in, indexing="ij" if ij else "xy"): each input is flattened; output i holds
 *  input i along axis i of the grid (len(in[0]), ..., len(in[n-1])), whose first two extents
 *  "xy" swaps. Outputs keep their input's dtype and are broadcast views (no memory).
 *  @param out room for n arrays, each a new reference (poisoned on error).
 *  @return FC_OK (n == 0: nothing to do); FC_ERR_NULL (ctx, out; in or an input NULL);
 *          FC_ERR_INVALID (n outside 0..FC_MAX_DIMS); FC_ERR_CONTEXT; a poisoned input's
 *          status; FC_ERR_SHAPE (a grid too large). */
FC_API fc_status fc_meshgrid(fc_ctx *ctx, fc_array *const *in, int n, bool ij, fc_array **out);
/** np.tile(a, reps): a repeated reps[i] times along axis i, n == len(reps) (0..FC_MAX_DIMS);
 *  the shorter of a.shape and reps gains leading 1s. FC_ERR_INVALID for a negative count. */
FC_API fc_array *fc_tile(fc_array *a, int n, const int64_t *reps);
/** np.repeat(a, repeats, axis): each element `repeats` times along axis (FC_AXIS_NONE: over
 *  the flattened array, giving 1-D). A scalar count only. FC_ERR_INVALID if negative. */
FC_API fc_array *fc_repeat(fc_array *a, int64_t repeats, int axis);
/** np.roll(a, shift, axis): elements shifted by `shift` (either sign, any size) along axis,
 *  those leaving one end entering at the other; FC_AXIS_NONE rolls the flattened array and
 *  keeps a's shape. fc_roll_axes rolls by shifts[i] along axes[i] (an axis may repeat: its
 *  shifts add up, as NumPy's broadcast tuple does). */
FC_API fc_array *fc_roll(fc_array *a, int64_t shift, int axis);
FC_API fc_array *fc_roll_axes(fc_array *a, int n, const int64_t *shifts, const int *axes);
/** np.split(a, sections, axis): `sections` equal views along axis into out[0..sections).
 *  fc_split_at is np.split(a, indices, axis): the n + 1 views a[:i0], a[i0:i1], ..., a[i(n-1):]
 *  into out[0..n] (Python slice bounds: negative from the end, clipped, empty when reversed).
 *  Every output is a new reference, all poisoned (with the same error) on failure.
 *  @return FC_OK; FC_ERR_NULL (a or out NULL: out untouched, or indices NULL);
 *          FC_ERR_INVALID (sections < 1, n < 0: out untouched); FC_ERR_AXIS; FC_ERR_SHAPE
 *          (fc_split: the axis does not divide equally, as NumPy raises); a poisoned a's. */
FC_API fc_status fc_split(fc_array *a, int64_t sections, int axis, fc_array **out);
FC_API fc_status fc_split_at(fc_array *a, int n, const int64_t *indices, int axis,
                             fc_array **out);
/** np.tril / np.triu(a, k): zeros above (below) the k-th diagonal of the last two axes
 *  (k > 0 above the main one). A 1-D input of length m gives an m x m result, as NumPy's. */
FC_API fc_array *fc_tril(fc_array *a, int64_t k);
FC_API fc_array *fc_triu(fc_array *a, int64_t k);
/** np.diag(v, k): a 1-D v gives the square matrix with v on its k-th diagonal; a 2-D v gives
 *  its k-th diagonal (fc_diagonal). FC_ERR_SHAPE for any other rank. */
FC_API fc_array *fc_diag(fc_array *v, int64_t k);
/** np.diagonal(a, offset, axis1, axis2): the diagonal of the 2-D planes (axis1, axis2), as a
 *  new last axis after the remaining axes (length 0 when offset misses the plane). A view:
 *  the diagonal of the L x L window is its flattening with step L + 1. FC_ERR_SHAPE for
 *  ndim < 2, FC_ERR_AXIS for equal or out-of-range axes. */
FC_API fc_array *fc_diagonal(fc_array *a, int64_t offset, int axis1, int axis2);
/** np.trace(a, offset, axis1, axis2): the sum of fc_diagonal's last axis, with fc_sum's dtype
 *  rule (bool and signed integers give i64, unsigned u64). */
FC_API fc_array *fc_trace(fc_array *a, int64_t offset, int axis1, int axis2);

/* NaN-ignoring reductions, as NumPy's: axes and keepdims as fc_sum's; bool and integer inputs
 * have no NaN and give what the plain reduction gives. nansum / nanprod count NaN as 0 / 1;
 * nanmean divides the sum of the other values by their count (an all-NaN slice gives NaN, a
 * float input keeps its dtype). nanmax / nanmin ignore NaN (NumPy's fmax / fmin reduction): an
 * all-NaN slice gives NaN (NumPy also warns), complex compares lexicographically; a zero-size
 * reduction is FC_ERR_SHAPE. nanargmax / nanargmin (i64) take the first extreme, ignoring NaN;
 * an all-NaN slice, where NumPy raises ValueError, gives -1 (as CuPy): fusec has no op that
 * fails an evaluation on a value it computes. */
FC_API fc_array *fc_nansum(fc_array *a, fc_axes axes, bool keepdims);
FC_API fc_array *fc_nanprod(fc_array *a, fc_axes axes, bool keepdims);
FC_API fc_array *fc_nanmean(fc_array *a, fc_axes axes, bool keepdims);
FC_API fc_array *fc_nanmax(fc_array *a, fc_axes axes, bool keepdims);
FC_API fc_array *fc_nanmin(fc_array *a, fc_axes axes, bool keepdims);
FC_API fc_array *fc_nanargmax(fc_array *a, int axis, bool keepdims);
FC_API fc_array *fc_nanargmin(fc_array *a, int axis, bool keepdims);
/** np.count_nonzero(a, axis, keepdims): the number of non-zero (true) elements, i64. NaN is
 *  non-zero; a complex element counts if either part is. */
FC_API fc_array *fc_count_nonzero(fc_array *a, fc_axes axes, bool keepdims);
/** scipy.special.logsumexp(a, axis, keepdims): m + log(sum(exp(a - m))) with m the max over
 *  the axes, a non-finite m taken as 0 (so a slice of -inf gives -inf, one with +inf gives inf,
 *  one with NaN NaN). Float inputs keep their dtype; integers and bool give f64. Over the
 *  trailing axes of rows that fit on chip it is one GPU kernel. FC_ERR_DTYPE for complex,
 *  FC_ERR_SHAPE for a zero-size reduction (as max). */
FC_API fc_array *fc_logsumexp(fc_array *a, fc_axes axes, bool keepdims);

/** np.isclose(a, b, rtol, atol, equal_nan): |a - b| <= atol + rtol * |b| where b is finite,
 *  or a == b (NaN == NaN too with equal_nan); bool result. As NumPy, b is made inexact first
 *  (integers and bool to f64) and the tolerances are Python floats (an f32 comparison stays
 *  f32). fc_allclose is all(isclose(...)) as a 0-d bool array. NumPy's defaults are rtol 1e-5,
 *  atol 1e-8, equal_nan false. */
FC_API fc_array *fc_isclose(fc_array *a, fc_array *b, double rtol, double atol, bool equal_nan);
FC_API fc_array *fc_allclose(fc_array *a, fc_array *b, double rtol, double atol,
                             bool equal_nan);
/** np.round(a, decimals), as NumPy computes it: floats rint(a * 10**d) / 10**d in their own
 *  dtype (decimals < 0: rint(a / 10**-d) * 10**-d; 0: rint), complex part by part; integers
 *  unchanged for decimals >= 0, else rounded half to even in f64 and cast back; bool with
 *  decimals 0 gives rint's f16, other decimals FC_ERR_DTYPE (NumPy cannot cast back). */
FC_API fc_array *fc_round(fc_array *a, int decimals);
/** np.nan_to_num(a, nan=nan, posinf=*posinf, neginf=*neginf): NaN, +inf and -inf replaced
 *  (converted to a's dtype; posinf / neginf NULL: the dtype's largest / most negative finite
 *  value), complex part by part; bool and integers unchanged. bf16 is a float here (NumPy
 *  leaves ml_dtypes' bfloat16 unchanged). */
FC_API fc_array *fc_nan_to_num(fc_array *a, double nan, const double *posinf,
                               const double *neginf);
/** np.heaviside(x1, x2): 0 where x1 < 0, x2 where x1 == 0, 1 where x1 > 0, NaN where x1 is;
 *  float loops only (integers and bool follow the float rule), complex FC_ERR_DTYPE. */
FC_API fc_array *fc_heaviside(fc_array *x1, fc_array *x2);
/** np.deg2rad / np.rad2deg (radians / degrees): x * (pi / 180) and x * (180 / pi) with NumPy's
 *  constants, in f64 for f64, else in f32 and rounded to the float rule's dtype once (f16,
 *  bf16, narrow integers); complex FC_ERR_DTYPE. */
FC_API fc_array *fc_deg2rad(fc_array *a);
FC_API fc_array *fc_rad2deg(fc_array *a);
/** np.sinc: sin(pi x) / (pi x), 1 at 0 (NumPy's formula: y = pi * x with 0 replaced by the
 *  dtype's epsilon, 1e-20 for complex; sin(y) / y). Integers and bool give f64. */
FC_API fc_array *fc_sinc(fc_array *a);
/** np.positive: a itself (arrays are values); FC_ERR_DTYPE for bool, as NumPy. */
FC_API fc_array *fc_positive(fc_array *a);
/** np.fabs: |a| in the float rule's dtype (i8 -> f16, ...); FC_ERR_DTYPE for complex. */
FC_API fc_array *fc_fabs(fc_array *a);
/** np.float_power(a, b): a ** b computed in f64, or c128 when either is complex. */
FC_API fc_array *fc_float_power(fc_array *a, fc_array *b);

/* ---------------------------------------------------------------------------------------- */
/* Sparse matrices, as scipy.sparse's csr_matrix and coo_matrix                             */
/* ---------------------------------------------------------------------------------------- */

/* A sparse matrix is a value made of ordinary arrays, as in SciPy: CSR holds data (the nnz
 * stored values), indices (their column indices) and indptr (m + 1 row pointers: row i's
 * values are data[indptr[i]:indptr[i + 1]]); COO holds data, row and col (each of nnz). It is
 * 2-d; its values are f32, f64, c64 or c128 and its indices int32 or int64 (one dtype for
 * all of them). Since its parts are fc_arrays, a sparse matrix is lazy like any array: the
 * conversions below are composites of existing ops (argsort, take, searchsorted, cumsum,
 * scatter_add, compaction), so they fuse and run on the GPU with no kernel of their own;
 * only the product with a dense operand is a library call (cuSPARSE's SpMV / SpMM on the GPU).
 *
 * Ownership is the arrays': a function returning an fc_sparse returns new references to each
 * of its non-NULL arrays, owned by the innermost open scope, else by the caller, who drops
 * them with fc_sparse_release (or keeps them past a scope with fc_sparse_keep). The struct is
 * passed by value and its fields are read-only: read them (data, indices, ...) to evaluate
 * or download the parts as arrays.
 *
 * Errors are values, as arrays' are: a function that fails, or that is given a poisoned
 * matrix, returns a poisoned matrix (its data the poisoned array, the other fields NULL),
 * whose message names the function, the shapes and the dtypes; fc_sparse_status tells.
 * Shapes and dtypes are checked when a matrix is built (FC_ERR_SHAPE, FC_ERR_DTYPE); index
 * values are checked when it is evaluated, as fusec's gathers check theirs: an index out of
 * range, a negative one, or row pointers that do not start at 0, fall, or end elsewhere than
 * nnz fail the evaluation of anything computed from the matrix with FC_ERR_VALUE. Index
 * arrays that already hold values are checked when the matrix is built (a reduction, read
 * back); a pass is remembered on the value until fc_write changes it, and the matrix then
 * reads the value's buffer as it is.
 *
 * The number of stored values is known without evaluating (the length of data), except where
 * it depends on values: from_dense (the non-zeros), COO to CSR (duplicates merge) and
 * addition (entries that cancel are dropped, as SciPy's) evaluate what decides it, as
 * fc_flatnonzero does (a synchronising evaluation; a program input without data fails). */

typedef enum fc_sparse_format {
    FC_SPARSE_CSR = 0, /**< compressed sparse rows: data, indices, indptr */
    FC_SPARSE_COO = 1  /**< coordinates: data, row, col */
} fc_sparse_format;

typedef struct fc_sparse {
    fc_sparse_format format;
    int64_t shape[2]; /**< m, n */
    fc_array *data;    /**< [nnz] values */
    fc_array *indices; /**< CSR: [nnz] column indices (NULL for COO) */
    fc_array *indptr;  /**< CSR: [m + 1] row pointers (NULL for COO) */
    fc_array *row;     /**< COO: [nnz] row indices (NULL for CSR) */
    fc_array *col;     /**< COO: [nnz] column indices (NULL for CSR) */
} fc_sparse;

/** scipy.sparse.csr_matrix((data, indices, indptr), shape=(m, n)): the arrays as they are (1-d;
 *  data of a value dtype; indices and indptr int32 or int64, converted to int64 when they
 *  differ), with indptr of length m + 1 and indices of data's length (else FC_ERR_SHAPE). The
 *  values are checked at evaluation (above). Duplicate and unsorted column indices are
 *  allowed, as in SciPy (tocsr of a COO matrix and fc_sparse_add give the canonical form).
 *  The arrays are borrowed: the result holds its own references. */
FC_API fc_sparse fc_sparse_csr(fc_array *data, fc_array *indices, fc_array *indptr, int64_t m,
                               int64_t n);
/** scipy.sparse.coo_matrix((data, (row, col)), shape=(m, n)): 1-d arrays of one length
 *  (duplicates allowed: they add up wherever the matrix is used). */
FC_API fc_sparse fc_sparse_coo(fc_array *data, fc_array *row, fc_array *col, int64_t m,
                               int64_t n);
/** csr_matrix(dense) / coo_matrix(dense) of a 2-d array of a value dtype: its non-zero
 *  elements (NaN counts) in row-major order, explicit zeros dropped, as SciPy. Indices are
 *  int32 when m, n and nnz fit in it, else int64 (SciPy's rule). Evaluates the truth values
 *  of dense (see above). */
FC_API fc_sparse fc_sparse_from_dense(fc_array *dense, fc_sparse_format format);
/** A.tocsr(): a CSR matrix is itself (new references); a COO matrix becomes canonical CSR,
 *  as SciPy's: sorted by row, then column, duplicates summed (in their stored order on the
 *  host backend; on the GPU in an unspecified order, as fc_scatter_add's), explicit zeros and
 *  sums that are zero kept. Evaluates which entries are distinct (see above). */
FC_API fc_sparse fc_sparse_tocsr(fc_sparse a);
/** A.tocoo(): a CSR matrix's entries as COO, in stored order, duplicates kept (no
 *  evaluation); a COO matrix is itself. */
FC_API fc_sparse fc_sparse_tocoo(fc_sparse a);
/** A.toarray() (and todense()): the dense m x n array of a's dtype, duplicates summed. */
FC_API fc_array *fc_sparse_todense(fc_sparse a);
/** A.T: the n x m transpose, in a's format. COO swaps row and col; CSR is the CSR of the
 *  transpose (a stable sort of the column indices: sorted indices when a's are, duplicates
 *  kept). No evaluation. */
FC_API fc_sparse fc_sparse_transpose(fc_sparse a);
/** scalar * A: every stored value times a 0-d array (a Python scalar such as fc_f64(ctx, 2)
 *  is weak, as in NumPy), in the promoted dtype; the structure is kept (SciPy keeps explicit
 *  zeros). FC_ERR_SHAPE for a scalar that is not 0-d, FC_ERR_DTYPE for a result dtype that
 *  is not a value dtype. */
FC_API fc_sparse fc_sparse_multiply(fc_sparse a, fc_array *scalar);
/** A + B of equal shapes (else FC_ERR_SHAPE), in either format: canonical CSR (sorted,
 *  duplicates summed) of the promoted dtype without the entries whose sum is zero, as
 *  SciPy's csr + csr. Indices: int64 when either operand's are. */
FC_API fc_sparse fc_sparse_add(fc_sparse a, fc_sparse b);
/** A @ x: x dense, [n] (a vector: the result is [m]) or [n, k] (the result [m, k]), in the
 *  promoted dtype of A and x (integers and bool promote as NumPy's, so always f32, f64, c64
 *  or c128). FC_ERR_SHAPE when x has another rank or its first extent is not A's n
 *  ("dimension mismatch"). One cuSPARSE SpMV (vector) or SpMM (matrix, row-major) on the
 *  GPU; a COO matrix is first sorted into CSR (duplicates kept, no evaluation). Accumulates
 *  in the result dtype on the GPU, in double on the host. */
FC_API fc_array *fc_sparse_matmul(fc_sparse a, fc_array *x);

/** FC_OK, or the error of a's first poisoned array (FC_ERR_NULL for a matrix with no data). */
FC_API fc_status fc_sparse_status(fc_sparse a);
/** The message of a's poison ("" when healthy). */
FC_API const char *fc_sparse_errmsg(fc_sparse a);
/** The number of stored values (duplicates and explicit zeros included), or -1 if poisoned. */
FC_API int64_t fc_sparse_nnz(fc_sparse a);
/** (m, n); FC_SHAPE() if poisoned. */
FC_API fc_shape fc_sparse_shape(fc_sparse a);
/** The dtype of the values (FC_DTYPE_COUNT if poisoned). */
FC_API fc_dtype fc_sparse_dtype(fc_sparse a);
/** The dtype of the indices, int32 or int64 (FC_DTYPE_COUNT if poisoned). */
FC_API fc_dtype fc_sparse_index_dtype(fc_sparse a);
/** Evaluates every array of a together (fc_eval). */
FC_API fc_status fc_sparse_eval(fc_sparse a);
/** New references to a's arrays that no scope owns (fc_keep of each). */
FC_API fc_sparse fc_sparse_keep(fc_sparse a);
/** Drops the caller's references to a's arrays (fc_release of each non-NULL one). */
FC_API void fc_sparse_release(fc_sparse a);

/* ---------------------------------------------------------------------------------------- */
/* Graph identity                                                                           */
/* ---------------------------------------------------------------------------------------- */

/** A 128-bit structural hash of the graph that computes `arrays` (in order): a function of the
 *  ops, dtypes, shapes, parameters and wiring alone, never of pointers, so equal programs hash
 *  equal in every process. Inputs hash by position, dtype and shape, not by their values. */
typedef struct fc_hash {
    uint64_t lo, hi;
} fc_hash;
FC_API fc_status fc_graph_hash(fc_array *const *arrays, int n, fc_hash *out);

/* ---------------------------------------------------------------------------------------- */
/* Traced programs: placeholders and substitution                                           */
/* ---------------------------------------------------------------------------------------- */

/** A placeholder: a leaf of `dtype` and `shape` with no data (a program input, as
 *  fc_program_build makes for an input given no array), never shared with another node. Ops
 *  take it as any array, so a function built on placeholders is a traced program; evaluating
 *  anything that reads one fails with FC_ERR_UNBOUND (so does an op that evaluates its operand
 *  while building, such as a boolean mask's count). weak: a weakly typed 0-d scalar standing
 *  for a Python bool, int, float or complex (dtype bool, i64, f64 or c128), as fc_f64 makes;
 *  ops treat it by its dtype alone (a Python int's range checks need its value: trace ints as
 *  fc_i64 constants instead); fc_replay_create makes such a graph replayable. Not on a
 *  sharded context's evaluation.
 *  @return the placeholder, poisoned with FC_ERR_DTYPE, FC_ERR_SHAPE or FC_ERR_INVALID (a weak
 *          one not 0-d or of another dtype). */
FC_API fc_array *fc_placeholder(fc_ctx *ctx, fc_dtype dtype, fc_shape shape, bool weak);
/** A traced program made replayable: the graph computing outputs[0..n) as a function of
 *  inputs[0..m) (usually placeholders). The nodes that depend on an input are kept in
 *  topological order with where each operand comes from; the rest of the graph (constants,
 *  captured values) is shared by every replay. The replay holds references to what it keeps.
 *  @return FC_OK (*out the replay); FC_ERR_NULL; FC_ERR_CONTEXT; a poisoned argument's
 *          status; FC_ERR_NOMEM. */
typedef struct fc_replay fc_replay;
FC_API fc_status fc_replay_create(fc_array *const *outputs, int n, fc_array *const *inputs,
                                  int m, fc_replay **out);
/** Builds the traced graph again on new inputs: every node that depends on an input is made
 *  anew with the traced node's op, dtypes, shape and parameters and the new operands (the
 *  nodes that building the same expression on these inputs gives, hash-consed with any that
 *  exist), with no shape or dtype inference and no walk of the graph. inputs[i] must have the
 *  traced input's dtype, weakness and shape.
 *  @param results room for n arrays, new references (the open scope's, or the caller's).
 *  @return FC_OK; FC_ERR_NULL; FC_ERR_CONTEXT; a poisoned input's status; FC_ERR_DTYPE or
 *          FC_ERR_SHAPE for an input unlike the traced one (the message names both);
 *          FC_ERR_NOMEM. On error results[i] are NULL. */
FC_API fc_status fc_replay_run(fc_replay *replay, fc_array *const *inputs, fc_array **results);
/** Frees a replay and its references. NULL is a no-op. Before fc_ctx_destroy of its context. */
FC_API void fc_replay_destroy(fc_replay *replay);

/* ---------------------------------------------------------------------------------------- */
/* .fc programs (text format: FC_FORMAT.md)                                                 */
/* ---------------------------------------------------------------------------------------- */

typedef struct fc_program fc_program;

/** Parses .fc text. `name` labels messages (a file name, or NULL for "<input>").
 *  @return FC_OK; FC_ERR_PARSE with "name:line:col: what was expected" in fc_errmsg;
 *          FC_ERR_NOMEM. *out is NULL on failure. */
FC_API fc_status fc_program_parse(fc_ctx *ctx, const char *text, size_t len, const char *name,
                                  fc_program **out);
/** Reads and parses a .fc file. FC_ERR_IO if it cannot be read. */
FC_API fc_status fc_program_load(fc_ctx *ctx, const char *path, fc_program **out);
FC_API void fc_program_destroy(fc_program *prog);

FC_API int fc_program_num_inputs(const fc_program *prog);
FC_API const char *fc_program_input_name(const fc_program *prog, int i);
FC_API fc_dtype fc_program_input_dtype(const fc_program *prog, int i);
FC_API int fc_program_num_outputs(const fc_program *prog);
FC_API const char *fc_program_output_name(const fc_program *prog, int i);
/** Dimension symbols (`x = input f32 [n, 4]`), in order of first appearance. */
FC_API int fc_program_num_symbols(const fc_program *prog);
FC_API const char *fc_program_symbol_name(const fc_program *prog, int i);
/** Gives a dimension symbol a value (>= 0). FC_ERR_INVALID for an unknown name. */
FC_API fc_status fc_program_set_symbol(fc_program *prog, const char *name, int64_t value);
/** The shape of input i with the symbols bound. FC_ERR_UNBOUND if a symbol has no value. */
FC_API fc_status fc_program_input_shape(const fc_program *prog, int i, fc_shape *out);

/** Builds the program's graph. inputs: one array per program input (checked against its dtype
 *  and shape), or NULL for placeholder inputs that can be hashed, printed and compiled but not
 *  evaluated. outputs: room for fc_program_num_outputs arrays, which the caller (or the open
 *  scope) owns. @return FC_OK; FC_ERR_UNBOUND for an unbound symbol; the error of the first
 *  statement that fails, with its line and column in fc_errmsg. */
FC_API fc_status fc_program_build(fc_program *prog, fc_array *const *inputs, fc_array **outputs);

/** Prints the graph computing `arrays` as canonical .fc text: one statement per node in a
 *  fixed order, inputs (leaves that hold data or are program inputs) named x0, x1, ... in order
 *  of first use, outputs named by out_names (NULL: y0, y1, ...). Parsing the text gives a graph of the same structural
 *  hash. *text is NUL-terminated; free it with fc_free. */
FC_API fc_status fc_program_print(fc_ctx *ctx, fc_array *const *arrays, int n,
                                  const char *const *out_names, char **text);

#ifdef __cplusplus
} /* extern "C" */

/* The C++ side of the literal macros above (FC_SHAPE, FC_AXES, FC_S, fc_slice, ...): C++ has
 * no compound literals, so they call these. Internal: use the macros. extern "C++" because a
 * user may include this header inside an extern "C" block, where templates are refused. */
extern "C++" {
namespace fc_cxx_ {
template <typename... T> constexpr fc_shape shape(T... extent) noexcept {
    static_assert(sizeof...(T) <= FC_MAX_DIMS, "FC_SHAPE: at most FC_MAX_DIMS extents");
    return fc_shape{static_cast<int>(sizeof...(T)), {static_cast<int64_t>(extent)...}};
}
template <typename... T> constexpr fc_axes axes(T... axis) noexcept {
    static_assert(sizeof...(T) <= FC_MAX_DIMS, "FC_AXES: at most FC_MAX_DIMS axes");
    return fc_axes{static_cast<int>(sizeof...(T)), {static_cast<int>(axis)...}};
}
constexpr fc_idx idx(fc_idx_kind kind, int64_t start, int64_t stop, int64_t step) noexcept {
    return fc_idx{kind, start, stop, step, nullptr};
}
constexpr fc_idx array_idx(fc_array *x) noexcept { return fc_idx{FC_IDX_ARRAY, 0, 0, 0, x}; }
template <typename... I> inline fc_array *slice(fc_array *a, I... entry) {
    const fc_idx v[sizeof...(I) ? sizeof...(I) : 1] = {entry...}; /* fc_idx only */
    return fc_index(a, static_cast<int>(sizeof...(I)), v);
}
} /* namespace fc_cxx_ */
} /* extern "C++" */
#endif
#endif /* FUSEC_H */
