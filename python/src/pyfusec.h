/*
 * pyfusec.h - the shared declarations of the CPython extension fusec._fusec.
 *
 * Written against the limited API of CPython 3.11 (Py_LIMITED_API 0x030B0000, set here and by
 * setup.py), so one abi3 binary serves every CPython from 3.11 on. Three files:
 *
 *   module.c  contexts, errors, conversions of Python values to fusec arrays, transfers,
 *             creation functions, module init
 *   array.c   the array type (_fusec._Array): attributes, operators, indexing, setitem
 *   ops.c     the op functions, table-driven: one row per op, grouped by C signature
 *   fuse.c    fusec.fuse's placeholders, graph substitution and trace state
 *   user.c    user kernels (ElementwiseKernel, ReductionKernel, RawModule), streams, events
 *   random.c  fusec.random's draws (fc_rng_*)
 *   interop.c DLPack and __cuda_array_interface__ over the C interop (fusec_dlpack.h)
 *
 * Ownership. An array object holds exactly one fusec reference (no scope is ever open on a
 * context the extension made, so every op returns a reference the caller owns) and a strong
 * reference to its Context object, so the fc_ctx outlives every array made in it. tp_dealloc
 * releases both. Every fusec reference taken in a function (pf_operand's) is released before
 * it returns, on every path.
 */
#ifndef PYFUSEC_H
#define PYFUSEC_H

#ifndef Py_LIMITED_API
#define Py_LIMITED_API 0x030B0000
#endif
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <fusec.h>

/* A fusec context (fusec.Context). */
typedef struct {
    PyObject_HEAD
    fc_ctx *ctx;
} pf_ctx_object;

/* An array (the C base of fusec.ndarray). `a` is never NULL and never poisoned. */
typedef struct {
    PyObject_HEAD
    fc_array *a;
    PyObject *ctx; /* the pf_ctx_object the array belongs to (strong) */
} pf_array_object;

/* Types, set at module init (array.c, module.c). pf_array_type is the class new arrays get:
 * the C base until fusec/_array.py registers its Python subclass (fusec.ndarray). */
extern PyTypeObject *pf_ctx_type;
extern PyTypeObject *pf_array_base;
extern PyTypeObject *pf_array_type;
/* Exceptions fusec adds to Python's: LinAlgError (ValueError, as NumPy 2's) and AxisError
 * (ValueError and IndexError, as numpy.exceptions.AxisError). */
extern PyObject *pf_linalg_error;
extern PyObject *pf_axis_error;

#define pf_is_array(o) PyObject_TypeCheck((o), pf_array_base)
#define pf_arr(o) (((pf_array_object *)(o))->a)
#define pf_arr_ctx(o) (((pf_array_object *)(o))->ctx)
#define pf_fc_ctx(o) (((pf_ctx_object *)(o))->ctx)

/* module.c */
/* The context new arrays are made in: the innermost `with fusec.Context(...)`, else the
 * process-wide default (created on first use). Borrowed; NULL with an exception set if the
 * default context cannot be created. */
PyObject *pf_current_ctx(void);
/* Raises the Python exception for a fusec status with message msg ("" or NULL: the status's
 * own description). Returns NULL, for `return pf_raise(...)`. */
PyObject *pf_raise(fc_status st, const char *msg);
/* Turns an op's result into an array object of context ctx: consumes r (a new fusec
 * reference). A poisoned r raises its error and is released; NULL raises MemoryError. */
PyObject *pf_wrap(fc_array *r, PyObject *ctx);
/* Converts an operand to a new fusec reference in *out (release it with fc_release):
 * an array (its own node), a Python bool / int / float / complex (exact types only: a weak
 * scalar of context ctx, as NumPy 2 treats Python scalars), or anything the Python layer's
 * coercion hook accepts (NumPy arrays and scalars, lists: fusec.asarray, strongly typed).
 * @return 1 converted; 0 not convertible (no exception: the caller returns NotImplemented
 *         or raises TypeError); -1 an exception is set. */
int pf_operand(PyObject *o, PyObject *ctx, fc_array **out);
/* fusec.asarray(o) through the Python layer (a strongly typed array object), new reference. */
PyObject *pf_asarray(PyObject *o);
/* The context of the first array among objs[0..n), else the current one (borrowed). */
PyObject *pf_ctx_of(PyObject *const *objs, Py_ssize_t n);
/* Converts operands objs[0..n) as the op functions take them: arrays as they are, Python
 * scalars weak where some operand is an array, else the first one made an array by
 * fusec.asarray (so fusec.sin(1.0) is a float64 array, as np.sin gives). On success out[i]
 * are new fusec references (release with pf_release_all) and *ctx the context (borrowed).
 * @return 0, or -1 with an exception (TypeError naming `what` for an operand that does not
 *         convert) and nothing to release. */
int pf_operands(const char *what, PyObject *const *objs, Py_ssize_t n, fc_array **out,
                PyObject **ctx);
void pf_release_all(fc_array **a, Py_ssize_t n);
/* Parses Python values into fusec's C arguments. Each returns 0, or -1 with an exception. */
int pf_shape(PyObject *o, fc_shape *out);             /* int or sequence of ints */
int pf_axes(PyObject *o, fc_axes *out);               /* None (every axis), int, sequence */
int pf_axis(PyObject *o, int *out);                   /* None (FC_AXIS_NONE) or int */
int pf_dtype(PyObject *o, fc_dtype *out);             /* a dtype code (int) */
int pf_int64(PyObject *o, int64_t *out);              /* an index */

/* array.c */
int pf_array_init_type(PyObject *module);

/* ops.c */
int pf_ops_add(PyObject *module);
/* A tuple of the n results r[0..n) (new fusec references, consumed: pf_wrap of each), or NULL
 * with an exception and every one released. */
PyObject *pf_tuple_of(fc_array **r, int n, PyObject *ctx);

/* fuse.c. While fusec.fuse traces a function: pf_trace_made records an array object made
 * (pf_wrap calls it), pf_trace_use one read as an operand, pf_trace_mutate refuses an
 * assignment into one the function did not make, pf_trace_refuse_eval an evaluation. Each
 * returns 0, or -1 with an exception; outside a trace they do nothing. */
int pf_fuse_add(PyObject *module);
int pf_tracing(void);
int pf_trace_made(PyObject *o);
int pf_trace_use(PyObject *o);
int pf_trace_mutate(PyObject *o);
int pf_trace_refuse_eval(void);

/* random.c */
int pf_random_add(PyObject *module);

/* user.c. pf_current_stream: the stream of `with fusec.Stream():` when it belongs to ctx, else
 * NULL (the context's default stream). */
int pf_user_add(PyObject *module);
fc_stream *pf_current_stream(PyObject *ctx);

/* interop.c: DLPack and __cuda_array_interface__ (_dlpack, _dlpack_device, _from_dlpack,
 * _export) */
int pf_interop_add(PyObject *module);

#endif /* PYFUSEC_H */
