/*
 * ops.c - fusec's op functions as functions of fusec._fusec, table-driven.
 *
 * Ops are grouped by C signature; each group is an X-macro list with one row per op
 * (Python name, C function) and one wrapper that parses the Python arguments for the whole
 * group. Adding an op of an existing signature is adding its row. The Python layer
 * (fusec/_functions.py) gives the public names, defaults and docstrings of the array API and
 * NumPy; these functions take the arguments in C's terms (axis None: every axis, or
 * FC_AXIS_NONE for the one-axis ops).
 *
 * Operands: arrays, Python scalars (weak where another operand is an array) and anything
 * fusec.asarray takes (pf_operands). Every fusec reference taken is released on every path.
 */
#include "pyfusec.h"

#include <string.h>

/* ---------------------------------------------------------------------------------------- */
/* The tables                                                                               */
/* ---------------------------------------------------------------------------------------- */

/* fc_array *fn(fc_array *) */
#define PF_UNARY(X)                                                                              \
    X(negative, fc_negative) X(abs, fc_abs) X(sign, fc_sign) X(sqrt, fc_sqrt) X(cbrt, fc_cbrt)   \
    X(square, fc_square) X(reciprocal, fc_reciprocal) X(exp, fc_exp) X(exp2, fc_exp2)            \
    X(expm1, fc_expm1) X(log, fc_log) X(log2, fc_log2) X(log10, fc_log10) X(log1p, fc_log1p)     \
    X(sin, fc_sin) X(cos, fc_cos) X(tan, fc_tan) X(arcsin, fc_arcsin) X(arccos, fc_arccos)       \
    X(arctan, fc_arctan) X(sinh, fc_sinh) X(cosh, fc_cosh) X(tanh, fc_tanh)                      \
    X(arcsinh, fc_arcsinh) X(arccosh, fc_arccosh) X(arctanh, fc_arctanh) X(erf, fc_erf)          \
    X(erfc, fc_erfc) X(gammaln, fc_lgamma) X(floor, fc_floor) X(ceil, fc_ceil) X(rint, fc_rint)  \
    X(trunc, fc_trunc) X(isnan, fc_isnan) X(isinf, fc_isinf) X(isfinite, fc_isfinite)            \
    X(signbit, fc_signbit) X(logical_not, fc_logical_not) X(invert, fc_bitwise_not)              \
    X(real, fc_real) X(imag, fc_imag) X(conj, fc_conj) X(angle, fc_angle)                        \
    X(positive, fc_positive) X(fabs, fc_fabs) X(deg2rad, fc_deg2rad) X(rad2deg, fc_rad2deg)      \
    X(sinc, fc_sinc) X(transpose, fc_transpose) X(flatnonzero, fc_flatnonzero)                   \
    X(argwhere, fc_argwhere) X(zeros_like, fc_zeros_like) X(ones_like, fc_ones_like)             \
    X(empty_like, fc_empty_like) X(linalg_inv, fc_linalg_inv) X(linalg_det, fc_linalg_det)       \
    X(linalg_svdvals, fc_linalg_svdvals) X(gelu, fc_gelu) X(gelu_tanh, fc_gelu_tanh)

/* fc_array *fn(fc_array *, fc_array *) */
#define PF_BINARY(X)                                                                             \
    X(add, fc_add) X(subtract, fc_sub) X(multiply, fc_mul) X(divide, fc_div)                     \
    X(floor_divide, fc_floordiv) X(remainder, fc_mod) X(power, fc_pow) X(arctan2, fc_arctan2)    \
    X(maximum, fc_maximum) X(minimum, fc_minimum) X(fmax, fc_fmax) X(fmin, fc_fmin)              \
    X(hypot, fc_hypot) X(logaddexp, fc_logaddexp) X(logaddexp2, fc_logaddexp2)                   \
    X(copysign, fc_copysign) X(nextafter, fc_nextafter) X(fmod, fc_fmod)                         \
    X(heaviside, fc_heaviside) X(float_power, fc_float_power) X(less, fc_less)                   \
    X(less_equal, fc_less_equal) X(greater, fc_greater) X(greater_equal, fc_greater_equal)       \
    X(equal, fc_equal) X(not_equal, fc_not_equal) X(logical_and, fc_logical_and)                 \
    X(logical_or, fc_logical_or) X(logical_xor, fc_logical_xor) X(bitwise_and, fc_bitwise_and)   \
    X(bitwise_or, fc_bitwise_or) X(bitwise_xor, fc_bitwise_xor) X(left_shift, fc_left_shift)     \
    X(right_shift, fc_right_shift) X(matmul, fc_matmul) X(dot, fc_dot) X(vdot, fc_vdot)          \
    X(inner, fc_inner) X(outer, fc_outer) X(kron, fc_kron) X(linalg_solve, fc_linalg_solve)

/* fc_array *fn(fc_array *, fc_array *, fc_array *) */
#define PF_TERNARY(X) X(where, fc_where) X(clip, fc_clip)

/* fc_array *fn(fc_array *, fc_axes, bool keepdims): (x, axis=None, keepdims=False) */
#define PF_REDUCE(X)                                                                             \
    X(sum, fc_sum) X(prod, fc_prod) X(mean, fc_mean) X(max, fc_max) X(min, fc_min)               \
    X(any, fc_any) X(all, fc_all) X(nansum, fc_nansum) X(nanprod, fc_nanprod)                    \
    X(nanmean, fc_nanmean) X(nanmax, fc_nanmax) X(nanmin, fc_nanmin)                             \
    X(count_nonzero, fc_count_nonzero) X(logsumexp, fc_logsumexp)

/* fc_array *fn(fc_array *, fc_axes, bool, int ddof): (x, axis=None, keepdims=False, ddof=0) */
#define PF_REDUCE_DDOF(X) X(var, fc_var) X(std, fc_std)

/* fc_array *fn(fc_array *, int axis, bool keepdims): (x, axis=None, keepdims=False) */
#define PF_ARG(X)                                                                                \
    X(argmax, fc_argmax) X(argmin, fc_argmin) X(nanargmax, fc_nanargmax)                         \
    X(nanargmin, fc_nanargmin)

/* fc_array *fn(fc_array *, int axis): (x, axis=None), None the flattened array */
#define PF_AXIS(X)                                                                               \
    X(cumsum, fc_cumsum) X(cumprod, fc_cumprod) X(cummax, fc_cummax) X(cummin, fc_cummin)        \
    X(sort, fc_sort) X(argsort, fc_argsort) X(expand_dims, fc_expand_dims)

/* fc_array *fn(fc_array *, fc_axes): (x, axes=None), None every axis */
#define PF_AXES(X)                                                                               \
    X(squeeze, fc_squeeze) X(flip, fc_flip) X(fftshift, fc_fftshift)                             \
    X(ifftshift, fc_ifftshift) X(permute_dims, fc_permute)

/* fc_array *fn(fc_array *, fc_shape): (x, shape) */
#define PF_SHAPE(X) X(reshape, fc_reshape) X(broadcast_to, fc_broadcast_to)

/* fc_array *fn(fc_array *, int64_t): (x, k) */
#define PF_INT(X)                                                                                \
    X(tril, fc_tril) X(triu, fc_triu) X(diag, fc_diag) X(matrix_power, fc_matrix_power)

/* fc_array *fn(fc_array *, int64_t n, int axis, fc_fft_norm): (x, n=0, axis=-1, norm=0) */
#define PF_FFT(X)                                                                                \
    X(fft, fc_fft_n) X(ifft, fc_ifft_n) X(rfft, fc_rfft) X(irfft, fc_irfft) X(hfft, fc_hfft)     \
    X(ihfft, fc_ihfft)

/* fc_array *fn(fc_array *, int ns, const int64_t *s, fc_axes, fc_fft_norm):
 * (x, s=None, axes=None, norm=0) */
#define PF_FFTN(X) X(fftn, fc_fftn) X(ifftn, fc_ifftn) X(rfftn, fc_rfftn) X(irfftn, fc_irfftn)

/* ---------------------------------------------------------------------------------------- */
/* One wrapper per signature                                                                */
/* ---------------------------------------------------------------------------------------- */

typedef fc_array *(*fn1)(fc_array *);
typedef fc_array *(*fn2)(fc_array *, fc_array *);
typedef fc_array *(*fn3)(fc_array *, fc_array *, fc_array *);

/* fn over n positional operands (1 to 3). */
static PyObject *call_n(const char *name, PyObject *const *args, Py_ssize_t nargs, int n,
                        void (*fn)(void)) {
    if (nargs != n) {
        PyErr_Format(PyExc_TypeError, "%s() takes %d positional arguments (%zd given)", name, n,
                     nargs);
        return NULL;
    }
    fc_array *x[3];
    PyObject *ctx;
    if (pf_operands(name, args, n, x, &ctx)) return NULL;
    fc_array *r = n == 1   ? ((fn1)fn)(x[0])
                  : n == 2 ? ((fn2)fn)(x[0], x[1])
                           : ((fn3)fn)(x[0], x[1], x[2]);
    pf_release_all(x, n);
    return pf_wrap(r, ctx);
}

/* The one operand of the functions below that take keywords. */
static int one_operand(const char *name, PyObject *o, fc_array **x, PyObject **ctx) {
    return pf_operands(name, &o, 1, x, ctx);
}

static PyObject *call_reduce(const char *name, PyObject *args, PyObject *kw,
                             fc_array *(*fn)(fc_array *, fc_axes, bool)) {
    static char *kwlist[] = {"x", "axis", "keepdims", NULL};
    PyObject *xo, *axis = Py_None, *ctx;
    int keepdims = 0;
    fc_axes axes;
    fc_array *x;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|Op", kwlist, &xo, &axis, &keepdims) ||
        pf_axes(axis, &axes) || one_operand(name, xo, &x, &ctx))
        return NULL;
    fc_array *r = fn(x, axes, keepdims);
    fc_release(x);
    return pf_wrap(r, ctx);
}

static PyObject *call_reduce_ddof(const char *name, PyObject *args, PyObject *kw,
                                  fc_array *(*fn)(fc_array *, fc_axes, bool, int)) {
    static char *kwlist[] = {"x", "axis", "keepdims", "ddof", NULL};
    PyObject *xo, *axis = Py_None, *ctx;
    int keepdims = 0, ddof = 0;
    fc_axes axes;
    fc_array *x;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|Opi", kwlist, &xo, &axis, &keepdims, &ddof) ||
        pf_axes(axis, &axes) || one_operand(name, xo, &x, &ctx))
        return NULL;
    fc_array *r = fn(x, axes, keepdims, ddof);
    fc_release(x);
    return pf_wrap(r, ctx);
}

static PyObject *call_arg(const char *name, PyObject *args, PyObject *kw,
                          fc_array *(*fn)(fc_array *, int, bool)) {
    static char *kwlist[] = {"x", "axis", "keepdims", NULL};
    PyObject *xo, *axis_o = Py_None, *ctx;
    int keepdims = 0, axis;
    fc_array *x;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|Op", kwlist, &xo, &axis_o, &keepdims) ||
        pf_axis(axis_o, &axis) || one_operand(name, xo, &x, &ctx))
        return NULL;
    fc_array *r = fn(x, axis, keepdims);
    fc_release(x);
    return pf_wrap(r, ctx);
}

static PyObject *call_axis(const char *name, PyObject *args, PyObject *kw,
                           fc_array *(*fn)(fc_array *, int)) {
    static char *kwlist[] = {"x", "axis", NULL};
    PyObject *xo, *axis_o = Py_None, *ctx;
    int axis;
    fc_array *x;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O", kwlist, &xo, &axis_o) ||
        pf_axis(axis_o, &axis) || one_operand(name, xo, &x, &ctx))
        return NULL;
    fc_array *r = fn(x, axis);
    fc_release(x);
    return pf_wrap(r, ctx);
}

static PyObject *call_axes(const char *name, PyObject *args, PyObject *kw,
                           fc_array *(*fn)(fc_array *, fc_axes)) {
    static char *kwlist[] = {"x", "axes", NULL};
    PyObject *xo, *axes_o = Py_None, *ctx;
    fc_axes axes;
    fc_array *x;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O", kwlist, &xo, &axes_o) ||
        pf_axes(axes_o, &axes) || one_operand(name, xo, &x, &ctx))
        return NULL;
    fc_array *r = fn(x, axes);
    fc_release(x);
    return pf_wrap(r, ctx);
}

static PyObject *call_shape(const char *name, PyObject *args, PyObject *kw,
                            fc_array *(*fn)(fc_array *, fc_shape)) {
    static char *kwlist[] = {"x", "shape", NULL};
    PyObject *xo, *shape_o, *ctx;
    fc_shape shape;
    fc_array *x;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO", kwlist, &xo, &shape_o) ||
        pf_shape(shape_o, &shape) || one_operand(name, xo, &x, &ctx))
        return NULL;
    fc_array *r = fn(x, shape);
    fc_release(x);
    return pf_wrap(r, ctx);
}

static PyObject *call_int(const char *name, PyObject *args, PyObject *kw,
                          fc_array *(*fn)(fc_array *, int64_t)) {
    static char *kwlist[] = {"x", "k", NULL};
    PyObject *xo, *ctx;
    long long k = 0;
    fc_array *x;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|L", kwlist, &xo, &k) ||
        one_operand(name, xo, &x, &ctx))
        return NULL;
    fc_array *r = fn(x, k);
    fc_release(x);
    return pf_wrap(r, ctx);
}

static PyObject *call_fft(const char *name, PyObject *args, PyObject *kw,
                          fc_array *(*fn)(fc_array *, int64_t, int, fc_fft_norm)) {
    static char *kwlist[] = {"x", "n", "axis", "norm", NULL};
    PyObject *xo, *ctx;
    long long n = 0;
    int axis = -1, norm = 0;
    fc_array *x;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|Lii", kwlist, &xo, &n, &axis, &norm) ||
        one_operand(name, xo, &x, &ctx))
        return NULL;
    fc_array *r = fn(x, n, axis, (fc_fft_norm)norm);
    fc_release(x);
    return pf_wrap(r, ctx);
}

static PyObject *call_fftn(const char *name, PyObject *args, PyObject *kw,
                           fc_array *(*fn)(fc_array *, int, const int64_t *, fc_axes,
                                           fc_fft_norm)) {
    static char *kwlist[] = {"x", "s", "axes", "norm", NULL};
    PyObject *xo, *s_o = Py_None, *axes_o = Py_None, *ctx;
    int norm = 0;
    fc_shape s = {0, {0}};
    fc_axes axes;
    fc_array *x;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|OOi", kwlist, &xo, &s_o, &axes_o, &norm) ||
        (s_o != Py_None && pf_shape(s_o, &s)) || pf_axes(axes_o, &axes) ||
        one_operand(name, xo, &x, &ctx))
        return NULL;
    fc_array *r = fn(x, s.ndim, s.dim, axes, (fc_fft_norm)norm);
    fc_release(x);
    return pf_wrap(r, ctx);
}

/* The wrappers of every row. */
#define DEF_FAST(name, fn, n)                                                                    \
    static PyObject *py_##name(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {           \
        (void)m;                                                                                 \
        return call_n(#name, args, nargs, n, (void (*)(void))fn);                                \
    }
#define DEF_UNARY(name, fn) DEF_FAST(name, fn, 1)
#define DEF_BINARY(name, fn) DEF_FAST(name, fn, 2)
#define DEF_TERNARY(name, fn) DEF_FAST(name, fn, 3)
PF_UNARY(DEF_UNARY)
PF_BINARY(DEF_BINARY)
PF_TERNARY(DEF_TERNARY)

#define DEF_WITH(call, name, fn)                                                                 \
    static PyObject *py_##name(PyObject *m, PyObject *args, PyObject *kw) {                      \
        (void)m;                                                                                 \
        return call(#name, args, kw, fn);                                                        \
    }
#define DEF_REDUCE(name, fn) DEF_WITH(call_reduce, name, fn)
#define DEF_REDUCE_DDOF(name, fn) DEF_WITH(call_reduce_ddof, name, fn)
#define DEF_ARG(name, fn) DEF_WITH(call_arg, name, fn)
#define DEF_AXIS(name, fn) DEF_WITH(call_axis, name, fn)
#define DEF_AXES(name, fn) DEF_WITH(call_axes, name, fn)
#define DEF_SHAPE(name, fn) DEF_WITH(call_shape, name, fn)
#define DEF_INT(name, fn) DEF_WITH(call_int, name, fn)
#define DEF_FFT(name, fn) DEF_WITH(call_fft, name, fn)
#define DEF_FFTN(name, fn) DEF_WITH(call_fftn, name, fn)
PF_REDUCE(DEF_REDUCE)
PF_REDUCE_DDOF(DEF_REDUCE_DDOF)
PF_ARG(DEF_ARG)
PF_AXIS(DEF_AXIS)
PF_AXES(DEF_AXES)
PF_SHAPE(DEF_SHAPE)
PF_INT(DEF_INT)
PF_FFT(DEF_FFT)
PF_FFTN(DEF_FFTN)

/* ---------------------------------------------------------------------------------------- */
/* Ops of their own signature                                                               */
/* ---------------------------------------------------------------------------------------- */

/* cast(x, code) */
static PyObject *py_cast(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *xo, *code, *ctx;
    fc_dtype dt;
    fc_array *x;
    if (!PyArg_ParseTuple(args, "OO:cast", &xo, &code) || pf_dtype(code, &dt) ||
        one_operand("astype", xo, &x, &ctx))
        return NULL;
    fc_array *r = fc_cast(x, dt);
    fc_release(x);
    return pf_wrap(r, ctx);
}

/* The arrays of a sequence, converted (new references in *out, n of them; PyMem_Free it). */
static int sequence_operands(const char *name, PyObject *seq_o, fc_array ***out, int *n,
                             PyObject **ctx) {
    PyObject *seq = PySequence_Tuple(seq_o);
    if (!seq) return -1;
    Py_ssize_t len = PyTuple_Size(seq);
    if (len < 1 || len > 4096) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_ValueError, "%s: need 1 to 4096 arrays, got %zd", name, len);
        return -1;
    }
    fc_array **a = PyMem_Malloc((size_t)len * sizeof *a);
    PyObject **items = PyMem_Malloc((size_t)len * sizeof *items);
    int rc = -1;
    if (a && items) {
        for (Py_ssize_t i = 0; i < len; i++) items[i] = PyTuple_GetItem(seq, i);
        rc = pf_operands(name, items, len, a, ctx);
    } else
        PyErr_NoMemory();
    PyMem_Free(items);
    Py_DECREF(seq);
    if (rc) {
        PyMem_Free(a);
        return -1;
    }
    *out = a;
    *n = (int)len;
    return 0;
}

static PyObject *join(PyObject *args, PyObject *kw, const char *name,
                      fc_array *(*fn)(fc_ctx *, fc_array *const *, int, int)) {
    static char *kwlist[] = {"arrays", "axis", NULL};
    PyObject *seq, *ctx;
    int axis = 0, n;
    fc_array **a;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|i", kwlist, &seq, &axis) ||
        sequence_operands(name, seq, &a, &n, &ctx))
        return NULL;
    fc_array *r = fn(pf_fc_ctx(ctx), a, n, axis);
    pf_release_all(a, n);
    PyMem_Free(a);
    return pf_wrap(r, ctx);
}
static PyObject *py_concatenate(PyObject *m, PyObject *args, PyObject *kw) {
    (void)m;
    return join(args, kw, "concatenate", fc_concatenate);
}
static PyObject *py_stack(PyObject *m, PyObject *args, PyObject *kw) {
    (void)m;
    return join(args, kw, "stack", fc_stack);
}

/* einsum(subscripts, *operands) */
static PyObject *py_einsum(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
    (void)m;
    if (nargs < 2 || !PyUnicode_Check(args[0]) || nargs > 65) {
        PyErr_SetString(PyExc_TypeError, "einsum(subscripts, *operands): 1 to 64 operands");
        return NULL;
    }
    const char *sub = PyUnicode_AsUTF8AndSize(args[0], NULL);
    fc_array *a[64];
    PyObject *ctx;
    if (!sub || pf_operands("einsum", args + 1, nargs - 1, a, &ctx)) return NULL;
    fc_array *r = fc_einsum(pf_fc_ctx(ctx), sub, a, (int)nargs - 1);
    pf_release_all(a, nargs - 1);
    return pf_wrap(r, ctx);
}

/* take(a, indices, axis=None, mode=0) */
static PyObject *py_take(PyObject *m, PyObject *args, PyObject *kw) {
    (void)m;
    static char *kwlist[] = {"a", "indices", "axis", "mode", NULL};
    PyObject *ops[2], *axis_o = Py_None, *ctx;
    int axis, mode = 0;
    fc_array *x[2];
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|Oi", kwlist, &ops[0], &ops[1], &axis_o,
                                     &mode) ||
        pf_axis(axis_o, &axis) || pf_operands("take", ops, 2, x, &ctx))
        return NULL;
    fc_array *r = fc_take(x[0], x[1], axis, (fc_take_mode)mode);
    pf_release_all(x, 2);
    return pf_wrap(r, ctx);
}

/* take_along_axis(a, indices, axis) */
static PyObject *py_take_along_axis(PyObject *m, PyObject *args, PyObject *kw) {
    (void)m;
    static char *kwlist[] = {"a", "indices", "axis", NULL};
    PyObject *ops[2], *axis_o, *ctx;
    int axis;
    fc_array *x[2];
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO", kwlist, &ops[0], &ops[1], &axis_o) ||
        pf_axis(axis_o, &axis) || pf_operands("take_along_axis", ops, 2, x, &ctx))
        return NULL;
    fc_array *r = fc_take_along_axis(x[0], x[1], axis);
    pf_release_all(x, 2);
    return pf_wrap(r, ctx);
}

/* searchsorted(a, v, right=False) */
static PyObject *py_searchsorted(PyObject *m, PyObject *args, PyObject *kw) {
    (void)m;
    static char *kwlist[] = {"a", "v", "right", NULL};
    PyObject *ops[2], *ctx;
    int right = 0;
    fc_array *x[2];
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|p", kwlist, &ops[0], &ops[1], &right) ||
        pf_operands("searchsorted", ops, 2, x, &ctx))
        return NULL;
    fc_array *r = fc_searchsorted(x[0], x[1], right ? FC_SIDE_RIGHT : FC_SIDE_LEFT);
    pf_release_all(x, 2);
    return pf_wrap(r, ctx);
}

/* tensordot(a, b, axes_a, axes_b) */
static PyObject *py_tensordot(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *ops[2], *ao, *bo, *ctx;
    fc_axes aa, bb;
    fc_array *x[2];
    if (!PyArg_ParseTuple(args, "OOOO:tensordot", &ops[0], &ops[1], &ao, &bo) ||
        pf_axes(ao, &aa) || pf_axes(bo, &bb))
        return NULL;
    if (aa.n < 0 || aa.n != bb.n) {
        PyErr_SetString(PyExc_ValueError, "tensordot: the axes lists differ in length");
        return NULL;
    }
    if (pf_operands("tensordot", ops, 2, x, &ctx)) return NULL;
    fc_array *r = fc_tensordot_axes(x[0], x[1], aa.n, aa.axis, bb.axis);
    pf_release_all(x, 2);
    return pf_wrap(r, ctx);
}

PyObject *pf_tuple_of(fc_array **r, int n, PyObject *ctx) {
    PyObject *t = PyTuple_New(n);
    for (int i = 0; i < n; i++) {
        PyObject *o = t ? pf_wrap(r[i], ctx) : (fc_release(r[i]), NULL);
        r[i] = NULL;
        if (t && (!o || PyTuple_SetItem(t, i, o))) {
            Py_CLEAR(t);
            for (int j = i + 1; j < n; j++) fc_release(r[j]);
            return NULL;
        }
    }
    return t;
}

/* unique(x) -> (values, index, inverse, counts) */
static PyObject *py_unique(PyObject *m, PyObject *xo) {
    (void)m;
    PyObject *ctx;
    fc_array *x, *r[4] = {NULL, NULL, NULL, NULL};
    if (one_operand("unique", xo, &x, &ctx)) return NULL;
    fc_unique(x, &r[0], &r[1], &r[2], &r[3]);
    fc_release(x);
    return pf_tuple_of(r, 4, ctx);
}

/* nonzero(x) -> tuple of ndim index arrays */
static PyObject *py_nonzero(PyObject *m, PyObject *xo) {
    (void)m;
    PyObject *ctx;
    fc_array *x, *r[FC_MAX_DIMS] = {NULL};
    if (one_operand("nonzero", xo, &x, &ctx)) return NULL;
    int nd = fc_array_ndim(x);
    fc_status st = fc_nonzero(x, r);
    fc_release(x);
    if (st != FC_OK) {
        pf_release_all(r, FC_MAX_DIMS);
        return pf_raise(st, fc_errmsg(pf_fc_ctx(ctx)));
    }
    return pf_tuple_of(r, nd, ctx);
}

/* Linear algebra with flags or several results. */
static PyObject *py_linalg_cholesky(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *xo, *ctx;
    int upper = 0;
    fc_array *x;
    if (!PyArg_ParseTuple(args, "O|p", &xo, &upper) || one_operand("cholesky", xo, &x, &ctx))
        return NULL;
    fc_array *r = fc_linalg_cholesky(x, upper);
    fc_release(x);
    return pf_wrap(r, ctx);
}

static PyObject *py_linalg_eigvalsh(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *xo, *ctx;
    int upper = 0;
    fc_array *x;
    if (!PyArg_ParseTuple(args, "O|p", &xo, &upper) || one_operand("eigvalsh", xo, &x, &ctx))
        return NULL;
    fc_array *r = fc_linalg_eigvalsh(x, upper);
    fc_release(x);
    return pf_wrap(r, ctx);
}

static PyObject *py_linalg_slogdet(PyObject *m, PyObject *xo) {
    (void)m;
    PyObject *ctx;
    fc_array *x, *r[2] = {NULL, NULL};
    if (one_operand("slogdet", xo, &x, &ctx)) return NULL;
    fc_linalg_slogdet(x, &r[0], &r[1]);
    fc_release(x);
    return pf_tuple_of(r, 2, ctx);
}

static PyObject *py_linalg_eigh(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *xo, *ctx;
    int upper = 0;
    fc_array *x, *r[2] = {NULL, NULL};
    if (!PyArg_ParseTuple(args, "O|p", &xo, &upper) || one_operand("eigh", xo, &x, &ctx))
        return NULL;
    fc_linalg_eigh(x, upper, &r[0], &r[1]);
    fc_release(x);
    return pf_tuple_of(r, 2, ctx);
}

static PyObject *py_linalg_qr(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *xo, *ctx;
    int mode = 0;
    fc_array *x, *r[2] = {NULL, NULL};
    if (!PyArg_ParseTuple(args, "O|i", &xo, &mode) || one_operand("qr", xo, &x, &ctx))
        return NULL;
    fc_linalg_qr(x, (fc_qr_mode)mode, &r[0], &r[1]);
    fc_release(x);
    if (mode == FC_QR_R) return pf_wrap(r[1], ctx);
    return pf_tuple_of(r, 2, ctx);
}

static PyObject *py_linalg_svd(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *xo, *ctx;
    int full = 1;
    fc_array *x, *r[3] = {NULL, NULL, NULL};
    if (!PyArg_ParseTuple(args, "O|p", &xo, &full) || one_operand("svd", xo, &x, &ctx))
        return NULL;
    fc_linalg_svd(x, full, true, &r[0], &r[1], &r[2]);
    fc_release(x);
    return pf_tuple_of(r, 3, ctx);
}

/* norm(x, axis=None, keepdims=False, ord=0): FC_NORM_L2, L1, INF */
static PyObject *py_norm(PyObject *m, PyObject *args, PyObject *kw) {
    (void)m;
    static char *kwlist[] = {"x", "axis", "keepdims", "ord", NULL};
    PyObject *xo, *axis = Py_None, *ctx;
    int keepdims = 0, ord = 0;
    fc_axes axes;
    fc_array *x;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|Opi", kwlist, &xo, &axis, &keepdims, &ord) ||
        pf_axes(axis, &axes) || one_operand("vector_norm", xo, &x, &ctx))
        return NULL;
    fc_array *r = fc_norm(x, axes, keepdims, (fc_norm_ord)ord);
    fc_release(x);
    return pf_wrap(r, ctx);
}

/* isclose(a, b, rtol, atol, equal_nan) */
static PyObject *py_isclose(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *ops[2], *ctx;
    double rtol, atol;
    int equal_nan;
    fc_array *x[2];
    if (!PyArg_ParseTuple(args, "OOddp:isclose", &ops[0], &ops[1], &rtol, &atol, &equal_nan) ||
        pf_operands("isclose", ops, 2, x, &ctx))
        return NULL;
    fc_array *r = fc_isclose(x[0], x[1], rtol, atol, equal_nan);
    pf_release_all(x, 2);
    return pf_wrap(r, ctx);
}

/* round(x, decimals) */
static PyObject *py_round(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *xo, *ctx;
    int decimals = 0;
    fc_array *x;
    if (!PyArg_ParseTuple(args, "O|i:round", &xo, &decimals) || one_operand("round", xo, &x, &ctx))
        return NULL;
    fc_array *r = fc_round(x, decimals);
    fc_release(x);
    return pf_wrap(r, ctx);
}

/* repeat(x, repeats, axis=None) */
static PyObject *py_repeat(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *xo, *axis_o = Py_None, *ctx;
    long long reps;
    int axis;
    fc_array *x;
    if (!PyArg_ParseTuple(args, "OL|O:repeat", &xo, &reps, &axis_o) || pf_axis(axis_o, &axis) ||
        one_operand("repeat", xo, &x, &ctx))
        return NULL;
    fc_array *r = fc_repeat(x, reps, axis);
    fc_release(x);
    return pf_wrap(r, ctx);
}

/* A tuple of int64 (a shape-like sequence) into v[0..n); at most FC_MAX_DIMS. */
static int int_list(PyObject *o, int64_t *v, int *n) {
    fc_shape s;
    if (pf_shape(o, &s)) return -1;
    *n = s.ndim;
    memcpy(v, s.dim, sizeof s.dim);
    return 0;
}

/* roll(x, shifts, axes=None): shifts an int or tuple; axes None rolls the flattened array */
static PyObject *py_roll(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *xo, *shift_o, *axes_o = Py_None, *ctx;
    int64_t shifts[FC_MAX_DIMS];
    int ns;
    fc_axes axes;
    fc_array *x;
    if (!PyArg_ParseTuple(args, "OO|O:roll", &xo, &shift_o, &axes_o) ||
        int_list(shift_o, shifts, &ns) || pf_axes(axes_o, &axes))
        return NULL;
    if (axes.n >= 0 && axes.n != ns) {
        PyErr_SetString(PyExc_ValueError, "roll: shift and axis must have the same length");
        return NULL;
    }
    if (axes.n < 0 && ns != 1) {
        PyErr_SetString(PyExc_ValueError, "roll: one shift without an axis");
        return NULL;
    }
    if (one_operand("roll", xo, &x, &ctx)) return NULL;
    fc_array *r = axes.n < 0 ? fc_roll(x, shifts[0], FC_AXIS_NONE)
                             : fc_roll_axes(x, ns, shifts, axes.axis);
    fc_release(x);
    return pf_wrap(r, ctx);
}

/* tile(x, reps) */
static PyObject *py_tile(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *xo, *reps_o, *ctx;
    int64_t reps[FC_MAX_DIMS];
    int n;
    fc_array *x;
    if (!PyArg_ParseTuple(args, "OO:tile", &xo, &reps_o) || int_list(reps_o, reps, &n) ||
        one_operand("tile", xo, &x, &ctx))
        return NULL;
    fc_array *r = fc_tile(x, n, reps);
    fc_release(x);
    return pf_wrap(r, ctx);
}

/* diagonal(x, offset, axis1, axis2) and trace(x, offset, axis1, axis2) */
static PyObject *diag_like(PyObject *args, const char *name,
                           fc_array *(*fn)(fc_array *, int64_t, int, int)) {
    PyObject *xo, *ctx;
    long long off = 0;
    int a1 = 0, a2 = 1;
    fc_array *x;
    if (!PyArg_ParseTuple(args, "O|Lii", &xo, &off, &a1, &a2) || one_operand(name, xo, &x, &ctx))
        return NULL;
    fc_array *r = fn(x, off, a1, a2);
    fc_release(x);
    return pf_wrap(r, ctx);
}
static PyObject *py_diagonal(PyObject *m, PyObject *args) {
    (void)m;
    return diag_like(args, "diagonal", fc_diagonal);
}
static PyObject *py_trace(PyObject *m, PyObject *args) {
    (void)m;
    return diag_like(args, "trace", fc_trace);
}

/* meshgrid(arrays, ij) -> tuple */
static PyObject *py_meshgrid(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *seq, *ctx;
    int ij = 0, n;
    fc_array **a, *r[FC_MAX_DIMS] = {NULL};
    if (!PyArg_ParseTuple(args, "O|p:meshgrid", &seq, &ij) ||
        sequence_operands("meshgrid", seq, &a, &n, &ctx))
        return NULL;
    fc_status st = n > FC_MAX_DIMS ? FC_ERR_INVALID : fc_meshgrid(pf_fc_ctx(ctx), a, n, ij, r);
    pf_release_all(a, n);
    PyMem_Free(a);
    if (st != FC_OK) {
        pf_release_all(r, FC_MAX_DIMS);
        return pf_raise(st, n > FC_MAX_DIMS ? "meshgrid: at most 8 arrays"
                                            : fc_errmsg(pf_fc_ctx(ctx)));
    }
    return pf_tuple_of(r, n, ctx);
}

/* An optional double: None is NULL, else *v holds it. -1 with an exception. */
static int opt_double(PyObject *o, double *v, const double **p) {
    *p = NULL;
    if (o == Py_None) return 0;
    *v = PyFloat_AsDouble(o);
    if (*v == -1.0 && PyErr_Occurred()) return -1;
    *p = v;
    return 0;
}

/* pad(x, widths, mode, value): widths a sequence of (before, after) pairs, one per axis or
 * one for every axis; mode 0..3 (fc_pad_mode) */
static PyObject *py_pad(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *xo, *wo, *ctx;
    int mode;
    double value;
    if (!PyArg_ParseTuple(args, "OOid:pad", &xo, &wo, &mode, &value)) return NULL;
    PyObject *seq = PySequence_Tuple(wo);
    if (!seq) return NULL;
    Py_ssize_t n = PyTuple_Size(seq);
    int64_t w[FC_MAX_DIMS][2];
    int bad = n < 1 || n > FC_MAX_DIMS;
    for (Py_ssize_t i = 0; i < n && !bad; i++) {
        fc_shape pair;
        if (pf_shape(PyTuple_GetItem(seq, i), &pair)) {
            Py_DECREF(seq);
            return NULL;
        }
        bad = pair.ndim != 2;
        w[i][0] = pair.dim[0];
        w[i][1] = pair.dim[1];
    }
    Py_DECREF(seq);
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "pad: pad_width must be (before, after) pairs, one "
                                          "per axis or one for all");
        return NULL;
    }
    fc_array *x;
    if (one_operand("pad", xo, &x, &ctx)) return NULL;
    fc_array *r = fc_pad(x, (int)n, (const int64_t(*)[2])w, (fc_pad_mode)mode, value);
    fc_release(x);
    return pf_wrap(r, ctx);
}

/* nan_to_num(x, nan, posinf=None, neginf=None) */
static PyObject *py_nan_to_num(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *xo, *po, *no, *ctx;
    double nan, pv, nv;
    const double *pp, *np_;
    fc_array *x;
    if (!PyArg_ParseTuple(args, "OdOO:nan_to_num", &xo, &nan, &po, &no) ||
        opt_double(po, &pv, &pp) || opt_double(no, &nv, &np_) ||
        one_operand("nan_to_num", xo, &x, &ctx))
        return NULL;
    fc_array *r = fc_nan_to_num(x, nan, pp, np_);
    fc_release(x);
    return pf_wrap(r, ctx);
}

/* linalg_pinv(x, rcond=None, hermitian=False) */
static PyObject *py_linalg_pinv(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *xo, *ro = Py_None, *ctx;
    int herm = 0;
    double rv;
    const double *rp;
    fc_array *x;
    if (!PyArg_ParseTuple(args, "O|Op:pinv", &xo, &ro, &herm) || opt_double(ro, &rv, &rp) ||
        one_operand("pinv", xo, &x, &ctx))
        return NULL;
    fc_array *r = fc_linalg_pinv(x, rp, herm);
    fc_release(x);
    return pf_wrap(r, ctx);
}

/* linalg_matrix_rank(x, tol=None, rtol=None, hermitian=False) */
static PyObject *py_linalg_matrix_rank(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *xo, *to = Py_None, *ro = Py_None, *ctx;
    int herm = 0;
    double tv, rv;
    const double *tp, *rp;
    fc_array *x;
    if (!PyArg_ParseTuple(args, "O|OOp:matrix_rank", &xo, &to, &ro, &herm) ||
        opt_double(to, &tv, &tp) || opt_double(ro, &rv, &rp) ||
        one_operand("matrix_rank", xo, &x, &ctx))
        return NULL;
    fc_array *r = fc_linalg_matrix_rank(x, tp, rp, herm);
    fc_release(x);
    return pf_wrap(r, ctx);
}

/* linalg_lstsq(a, b, rcond=None) -> (x, residuals, rank, s) */
static PyObject *py_linalg_lstsq(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *ops[2], *ro = Py_None, *ctx;
    double rv;
    const double *rp;
    fc_array *x[2], *r[4] = {NULL, NULL, NULL, NULL};
    if (!PyArg_ParseTuple(args, "OO|O:lstsq", &ops[0], &ops[1], &ro) ||
        opt_double(ro, &rv, &rp) || pf_operands("lstsq", ops, 2, x, &ctx))
        return NULL;
    fc_status st = fc_linalg_lstsq(x[0], x[1], rp, &r[0], &r[1], &r[2], &r[3]);
    pf_release_all(x, 2);
    if (st != FC_OK && !r[0]) return pf_raise(st, fc_errmsg(pf_fc_ctx(ctx)));
    return pf_tuple_of(r, 4, ctx);
}

/* ---------------------------------------------------------------------------------------- */
/* The method table                                                                         */
/* ---------------------------------------------------------------------------------------- */

#define ROW_FAST(name, fn) {#name, (PyCFunction)(void (*)(void))py_##name, METH_FASTCALL, NULL},
#define ROW_KW(name, fn)                                                                         \
    {#name, (PyCFunction)(void (*)(void))py_##name, METH_VARARGS | METH_KEYWORDS, NULL},
#define ROW_ARGS(name) {#name, py_##name, METH_VARARGS, NULL},
#define ROW_ONE(name) {#name, py_##name, METH_O, NULL},

static PyMethodDef op_methods[] = {
    PF_UNARY(ROW_FAST) PF_BINARY(ROW_FAST) PF_TERNARY(ROW_FAST)
    PF_REDUCE(ROW_KW) PF_REDUCE_DDOF(ROW_KW) PF_ARG(ROW_KW) PF_AXIS(ROW_KW) PF_AXES(ROW_KW)
    PF_SHAPE(ROW_KW) PF_INT(ROW_KW) PF_FFT(ROW_KW) PF_FFTN(ROW_KW)
    ROW_KW(concatenate, 0) ROW_KW(stack, 0) ROW_KW(take, 0) ROW_KW(take_along_axis, 0)
    ROW_KW(searchsorted, 0) ROW_KW(norm, 0) ROW_FAST(einsum, 0)
    ROW_ARGS(cast) ROW_ARGS(tensordot) ROW_ARGS(isclose) ROW_ARGS(round) ROW_ARGS(repeat)
    ROW_ARGS(roll) ROW_ARGS(tile) ROW_ARGS(diagonal) ROW_ARGS(trace) ROW_ARGS(meshgrid)
    ROW_ARGS(linalg_cholesky) ROW_ARGS(linalg_eigvalsh) ROW_ARGS(linalg_eigh)
    ROW_ARGS(linalg_qr) ROW_ARGS(linalg_svd) ROW_ARGS(pad) ROW_ARGS(nan_to_num)
    ROW_ARGS(linalg_pinv) ROW_ARGS(linalg_matrix_rank) ROW_ARGS(linalg_lstsq)
    ROW_ONE(unique) ROW_ONE(nonzero) ROW_ONE(linalg_slogdet)
    {NULL, NULL, 0, NULL},
};

int pf_ops_add(PyObject *module) { return PyModule_AddFunctions(module, op_methods); }
