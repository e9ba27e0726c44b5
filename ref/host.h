/*
 * ref/host.h - internal to the reference evaluator (ref/host*.c).
 *
 * Prefix fch_. Values move through the backend in chunks of at most FCH_CHUNK elements held in
 * a "compute kind" (the C type an op is computed in: f16/bf16/f32 in float, f64 in double,
 * integers in 64 bits) and are converted to and from storage dtypes with NumPy's cast rules.
 */
#ifndef FUSEC_HOST_H
#define FUSEC_HOST_H

#include "ref.h"

#include <stddef.h>
#include <stdint.h>

#define FCH_CHUNK 256

/* The C type an op over a loop dtype is computed in. */
typedef enum fch_kind {
    FCH_K_BOOL, /* uint8_t, 0 or 1 */
    FCH_K_I64,  /* int64_t, holding a value of the (signed) loop dtype */
    FCH_K_U64,  /* uint64_t, holding a value of the (unsigned) loop dtype */
    FCH_K_F32,  /* float (f16, bf16 and f32 loops) */
    FCH_K_F64,  /* double */
    FCH_K_C64,  /* float[2] */
    FCH_K_C128  /* double[2] */
} fch_kind;

/* Every dtype's values fit one of these exactly (the source side of a cast). */
typedef enum fch_wide { FCH_W_I64, FCH_W_U64, FCH_W_F64, FCH_W_C128 } fch_wide;

/* One value of any wide class. */
typedef union fch_wide_val {
    int64_t i;
    uint64_t u;
    double f;
    double c[2];
} fch_wide_val;

fch_kind fch_kind_of(fc_dtype t);
size_t fch_kind_size(fch_kind k);
fch_wide fch_wide_of(fc_dtype t);
fch_wide fch_wide_of_kind(fch_kind k);

/* IEEE binary16 from a double, rounded once (NumPy's double -> half cast). */
uint16_t fch_f64_to_f16(double d);
/* The float -> int conversion every backend uses where C leaves it undefined: NaN -> 0,
 * values beyond int64 saturate, then the integer wraps to the target width (as an in-range
 * value does under NumPy on every platform). */
int64_t fch_f64_to_i64(double d);
uint64_t fch_f64_to_u64(double d);

/* Reads n elements of dtype `src_dtype` (byte stride `stride`) into wide values (16 bytes of
 * room per element). */
void fch_read_wide(fc_dtype src_dtype, const char *src, int64_t stride, size_t n, void *wide);
/* Casts n wide values of class w to dtype `dst_dtype` at dst (byte stride `stride`). */
void fch_write_wide(fch_wide w, const void *wide, size_t n, fc_dtype dst_dtype, char *dst,
                    int64_t stride);
/* Reads n elements of dtype s, cast to loop dtype l, into l's compute kind (n <= FCH_CHUNK). */
void fch_gather(fc_dtype s, const char *src, int64_t stride, size_t n, fc_dtype l, void *out);
/* Reads n elements of dtype s, cast to dtype l, as wide values of l's class (n <= FCH_CHUNK). */
void fch_gather_wide(fc_dtype s, const char *src, int64_t stride, size_t n, fc_dtype l,
                     void *wide);
/* Writes n values of compute kind k to dtype d, cast (n <= FCH_CHUNK). */
void fch_store(fch_kind k, const void *buf, size_t n, fc_dtype d, char *dst, int64_t stride);
/* Copies a strided array of dtype s into a strided array of dtype d (a cast when they differ).
 * Byte strides. */
void fch_copy(int ndim, const int64_t *shape, fc_dtype s, const char *src, const int64_t *sstr,
              fc_dtype d, char *dst, const int64_t *dstr);

/* ---- strided iteration ------------------------------------------------------------------ */

#define FCH_MAX_OPS 4

/* Walks an ndim-dimensional index space in row-major order over up to FCH_MAX_OPS operands
 * (byte strides), calling fn once per innermost run. Adjacent dims merge when every operand
 * allows it, so contiguous data is one run. */
typedef fc_status (*fch_run_fn)(void *user, char *const *ptrs, const int64_t *strides, int64_t n);
fc_status fch_iterate(int ndim, const int64_t *shape, int nops, char *const *bases,
                      const int64_t (*strides)[FC_MAX_DIMS], fch_run_fn fn, void *user);

/* Row-major byte strides of a contiguous array. */
void fch_contig_strides(int ndim, const int64_t *shape, size_t elsize, int64_t *strides);
/* Steps idx (row-major, axis d held where it is) to the next line along d of an array of
 * `shape`; false after the last line. */
bool fch_next_line(int ndim, const int64_t *shape, int d, int64_t *idx);

/* ---- op families (ref/host_ew.c, host_reduce.c, host_fft.c) ------------------------- */

/* The compute kind of an elementwise op's result over loop dtype `loop`. */
fch_kind fch_ew_out_kind(fcg_op op, fc_dtype loop);
/* Applies an elementwise op to n values (in[i] in the loop dtype's kind; WHERE's condition in
 * FCH_K_BOOL). Returns FC_ERR_VALUE (integer to a negative power) or FC_ERR_UNSUPPORTED with
 * nothing written to the context (the caller names the op). */
fc_status fch_ew_apply(fcg_op op, fc_dtype loop, size_t n, const void *const *in, void *out);

/* A reduction of node `a` over its input (base pointer and byte strides, shape of a->in[0]),
 * into out (contiguous, a->dtype). */
fc_status fch_reduce(fc_ctx *ctx, const fc_array *a, const char *in, const int64_t *in_strides,
                     char *out);
/* np.matmul of node `a` over its two inputs (base pointers and byte strides). */
fc_status fch_matmul(fc_ctx *ctx, const fc_array *a, const char *const *in,
                     const int64_t (*in_strides)[FC_MAX_DIMS], char *out);
/* An inclusive scan (cumsum, cumprod, cummax, cummin) of the input at in (strides in bytes)
 * into out, contiguous in a's dtype. */
fc_status fch_scan(fc_ctx *ctx, const fc_array *a, const char *in, const int64_t *in_strides,
                   char *out);
/* The transform of FFTN node `a` over its input (base pointer and byte strides),
 * into out (contiguous, a->dtype) (ref/host_fft.c). */
fc_status fch_fft(fc_ctx *ctx, const fc_array *a, const char *in, const int64_t *in_strides,
                  char *out);
/* np.sort / np.argsort (SORT or ARGSORT) of the rows of the input's last axis (base pointer
 * and byte strides), stably in NumPy's order, into out (contiguous, a->dtype) (ref/host_sort.c). */
fc_status fch_sort(fc_ctx *ctx, const fc_array *a, const char *in, const int64_t *in_strides,
                   char *out);

/* The dense linear algebra ops (ops.def's LINALG_*: fcg_op_is_linalg) of node `a` over its
 * inputs (base pointers and byte strides), into out (contiguous, a->dtype); a singular or
 * non-positive-definite matrix is FC_ERR_LINALG (ref/host_linalg.c). */
fc_status fch_linalg(fc_ctx *ctx, const fc_array *a, const char *const *in,
                     const int64_t (*in_strides)[FC_MAX_DIMS], char *out);

/* A CSR matrix times a dense vector or matrix (CSR_MATMUL, ops.def) over in[0..3] (indptr,
 * indices, data, x: base pointers and byte strides), into out (contiguous, a->dtype), summed
 * in double (complex double) and rounded once; indptr and indices that break their rules are
 * FC_ERR_VALUE (ref/host_sparse.c). */
fc_status fch_csr_matmul(fc_ctx *ctx, const fc_array *a, const char *const *in,
                         const int64_t (*in_strides)[FC_MAX_DIMS], char *out);
/* The STENCIL2D node `a` (a correlation with an origin and a boundary: ops.def) over its
 * input and weights (base pointers and byte strides), into out (contiguous, a->dtype), in
 * wide accumulators (ref/host_conv.c). */
fc_status fch_stencil2d(fc_ctx *ctx, const fc_array *a, const char *const *in,
                        const int64_t (*in_strides)[FC_MAX_DIMS], char *out);

#endif /* FUSEC_HOST_H */
