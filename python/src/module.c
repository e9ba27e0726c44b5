/*
 * module.c - fusec._fusec: contexts, errors, conversions, transfers, creation, module init.
 */
#include "pyfusec.h"

#include <string.h>

PyTypeObject *pf_ctx_type;
PyObject *pf_linalg_error;
PyObject *pf_axis_error;

static PyObject *ctx_stack;      /* list: the contexts of open `with Context()` blocks */
static PyObject *default_ctx;    /* the process-wide default context, made on first use */
static PyObject *asarray_hook;   /* fusec.asarray, registered by the Python layer */

/* ---------------------------------------------------------------------------------------- */
/* Errors                                                                                   */
/* ---------------------------------------------------------------------------------------- */

/* The Python exception of each status, as NumPy raises for the same fault. */
static PyObject *exception_for(fc_status st, const char *msg) {
    switch (st) {
    case FC_ERR_SHAPE:
    case FC_ERR_VALUE:
    case FC_ERR_CONTEXT:
    case FC_ERR_PARSE:
    case FC_ERR_UNBOUND:
        return PyExc_ValueError;
    case FC_ERR_INVALID:
        /* A Python int that does not fit the array's dtype: NumPy 2's OverflowError. */
        return msg && strstr(msg, "out of bounds") ? PyExc_OverflowError : PyExc_ValueError;
    case FC_ERR_AXIS:
        return pf_axis_error;
    case FC_ERR_DTYPE:
    case FC_ERR_NULL:
        return PyExc_TypeError;
    case FC_ERR_INDEX:
        return PyExc_IndexError;
    case FC_ERR_NOMEM:
        return PyExc_MemoryError;
    case FC_ERR_UNSUPPORTED:
        return PyExc_NotImplementedError;
    case FC_ERR_LINALG:
        return pf_linalg_error;
    case FC_ERR_IO:
        return PyExc_OSError;
    case FC_OK:
    case FC_ERR_BACKEND:
    case FC_ERR_COMPILE:
    case FC_ERR_NOT_CACHED:
        break;
    }
    return PyExc_RuntimeError;
}

PyObject *pf_raise(fc_status st, const char *msg) {
    if (st == FC_ERR_UNBOUND && pf_tracing()) { /* an op evaluated a placeholder */
        pf_trace_refuse_eval();
        return NULL;
    }
    if (!msg || !*msg) msg = fc_strerror(st);
    PyErr_SetString(exception_for(st, msg), msg);
    return NULL;
}

/* The error of a failed evaluation: the context's message. */
static PyObject *raise_ctx(fc_status st, PyObject *ctx) {
    return pf_raise(st, fc_errmsg(pf_fc_ctx(ctx)));
}

PyObject *pf_wrap(fc_array *r, PyObject *ctx) {
    if (!r) return PyErr_NoMemory();
    fc_status st = fc_array_status(r);
    if (st != FC_OK) {
        pf_raise(st, fc_array_errmsg(r));
        fc_release(r);
        return NULL;
    }
    pf_array_object *o = (pf_array_object *)PyType_GenericAlloc(pf_array_type, 0);
    if (!o) {
        fc_release(r);
        return NULL;
    }
    o->a = r;
    o->ctx = Py_NewRef(ctx);
    if (pf_trace_made((PyObject *)o)) Py_CLEAR(o);
    return (PyObject *)o;
}

/* ---------------------------------------------------------------------------------------- */
/* Contexts                                                                                 */
/* ---------------------------------------------------------------------------------------- */

static int ctx_init(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"backend", "device", "fast_math", NULL};
    const char *backend = NULL;
    int device = 0;
    PyObject *fast_math = Py_None; /* None: FUSEC_FAST_MATH decides; True / False: on / off */
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|ziO:Context", kwlist, &backend, &device,
                                     &fast_math))
        return -1;
    if (pf_fc_ctx(self)) {
        PyErr_SetString(PyExc_RuntimeError, "Context: already initialised");
        return -1;
    }
    fc_ctx_options opts;
    memset(&opts, 0, sizeof opts);
    opts.device = device;
    if (fast_math != Py_None) {
        int on = PyObject_IsTrue(fast_math);
        if (on < 0) return -1;
        opts.fast_math = on ? 1 : -1;
    }
    if (!backend || !strcmp(backend, "auto"))
        opts.backend = FC_BACKEND_AUTO;
    else if (!strcmp(backend, "host"))
        opts.backend = FC_BACKEND_HOST;
    else if (!strcmp(backend, "cuda"))
        opts.backend = FC_BACKEND_CUDA;
    else {
        PyErr_Format(PyExc_ValueError,
                     "Context: unknown backend '%s' (expected 'auto', 'host' or 'cuda')",
                     backend);
        return -1;
    }
    fc_ctx *c = NULL;
    fc_status st = fc_ctx_create(&c, &opts);
    if (st != FC_OK) {
        PyErr_Format(exception_for(st, NULL), "Context: cannot create a %s context: %s",
                     backend ? backend : "auto", fc_strerror(st));
        return -1;
    }
    ((pf_ctx_object *)self)->ctx = c;
    return 0;
}

static void ctx_dealloc(PyObject *self) {
    PyTypeObject *tp = Py_TYPE(self);
    fc_ctx_destroy(pf_fc_ctx(self));
    freefunc f = (freefunc)PyType_GetSlot(tp, Py_tp_free);
    f(self);
    Py_DECREF(tp);
}

static int ctx_check(PyObject *self) {
    if (pf_fc_ctx(self)) return 0;
    PyErr_SetString(PyExc_RuntimeError, "Context: not initialised");
    return -1;
}

static PyObject *ctx_backend(PyObject *self, void *closure) {
    (void)closure;
    if (ctx_check(self)) return NULL;
    return PyUnicode_FromString(fc_ctx_backend(pf_fc_ctx(self)) == FC_BACKEND_CUDA ? "cuda"
                                                                                    : "host");
}

static PyObject *ctx_fast_math(PyObject *self, void *closure) {
    (void)closure;
    if (ctx_check(self)) return NULL;
    return PyBool_FromLong(fc_ctx_fast_math(pf_fc_ctx(self)));
}

static PyObject *ctx_device(PyObject *self, void *closure) {
    (void)closure;
    if (ctx_check(self)) return NULL;
    return PyLong_FromLong(fc_ctx_device(pf_fc_ctx(self)));
}

static PyObject *ctx_enter(PyObject *self, PyObject *unused) {
    (void)unused;
    if (ctx_check(self) || PyList_Append(ctx_stack, self)) return NULL;
    return Py_NewRef(self);
}

static PyObject *ctx_exit(PyObject *self, PyObject *args) {
    (void)args;
    Py_ssize_t n = PyList_Size(ctx_stack);
    if (n < 1 || PyList_GetItem(ctx_stack, n - 1) != self) {
        PyErr_SetString(PyExc_RuntimeError, "Context: exited out of order");
        return NULL;
    }
    if (PyList_SetSlice(ctx_stack, n - 1, n, NULL)) return NULL;
    Py_RETURN_FALSE;
}

static PyObject *ctx_synchronize(PyObject *self, PyObject *unused) {
    (void)unused;
    if (ctx_check(self)) return NULL;
    fc_status st = fc_ctx_synchronize(pf_fc_ctx(self));
    if (st != FC_OK) return raise_ctx(st, self);
    Py_RETURN_NONE;
}

static PyObject *ctx_repr(PyObject *self) {
    if (!pf_fc_ctx(self)) return PyUnicode_FromString("<fusec.Context (uninitialised)>");
    fc_ctx *c = pf_fc_ctx(self);
    if (fc_ctx_backend(c) == FC_BACKEND_CUDA)
        return PyUnicode_FromFormat("<fusec.Context cuda:%d>", fc_ctx_device(c));
    return PyUnicode_FromString("<fusec.Context host>");
}

static PyMethodDef ctx_methods[] = {
    {"__enter__", ctx_enter, METH_NOARGS, "Makes this the context new arrays are made in."},
    {"__exit__", ctx_exit, METH_VARARGS, "Restores the context that was current before."},
    {"synchronize", ctx_synchronize, METH_NOARGS,
     "Waits for all of the context's queued work; raises the first asynchronous error."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef ctx_getset[] = {
    {"backend", ctx_backend, NULL, "'cuda' or 'host': the backend the context resolved to.",
     NULL},
    {"device", ctx_device, NULL, "The CUDA device ordinal, or -1 on the host backend.", NULL},
    {"fast_math", ctx_fast_math, NULL,
     "Whether the context runs the fast-math tier (include/fusec.h): FMA contraction, "
     "approximate f32 math, abs(z) <= r on complex as |z|^2 <= r^2.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot ctx_slots[] = {
    {Py_tp_doc, "Context(backend='auto', device=0, fast_math=None): a fusec context (a GPU, "
                "or the host reference backend). fast_math=True runs the fast-math tier, "
                "False the exact default, None (default) as FUSEC_FAST_MATH=0|1 says."
                "\n\nArrays are made in the current context: the innermost "
                "`with Context(...)` block, else a process-wide default made on first use "
                "(the GPU when there is one, else the host; FUSEC_BACKEND=host|cuda "
                "overrides). Arrays of different contexts do not mix."},
    {Py_tp_new, PyType_GenericNew},
    {Py_tp_init, ctx_init},
    {Py_tp_dealloc, ctx_dealloc},
    {Py_tp_repr, ctx_repr},
    {Py_tp_methods, ctx_methods},
    {Py_tp_getset, ctx_getset},
    {0, NULL},
};

static PyType_Spec ctx_spec = {"fusec._fusec.Context", sizeof(pf_ctx_object), 0,
                               Py_TPFLAGS_DEFAULT, ctx_slots};

PyObject *pf_current_ctx(void) {
    Py_ssize_t n = PyList_Size(ctx_stack);
    if (n > 0) return PyList_GetItem(ctx_stack, n - 1);
    if (!default_ctx) default_ctx = PyObject_CallNoArgs((PyObject *)pf_ctx_type);
    return default_ctx;
}

static PyObject *py_current_context(PyObject *m, PyObject *unused) {
    (void)m, (void)unused;
    PyObject *c = pf_current_ctx();
    return c ? Py_NewRef(c) : NULL;
}

/* ---------------------------------------------------------------------------------------- */
/* Conversions                                                                              */
/* ---------------------------------------------------------------------------------------- */

/* A Python int as a weak scalar: int64, uint64, or 128 bits (hi * 2**64 + lo). */
static fc_array *weak_int(fc_ctx *c, PyObject *o) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (v == -1 && PyErr_Occurred()) return NULL;
    if (!overflow) return fc_i64(c, v);
    if (overflow > 0) {
        unsigned long long u = PyLong_AsUnsignedLongLong(o);
        if (!PyErr_Occurred()) return fc_u64(c, u);
        PyErr_Clear();
    }
    /* hi = o >> 64 must fit int64; lo = o & (2**64 - 1). */
    PyObject *sixty4 = PyLong_FromLong(64), *mask = NULL, *hi = NULL, *lo = NULL;
    fc_array *r = NULL;
    if (!sixty4) return NULL;
    hi = PyNumber_Rshift(o, sixty4);
    mask = PyLong_FromUnsignedLongLong(~0ULL);
    if (hi && mask) lo = PyNumber_And(o, mask);
    if (lo) {
        long long h = PyLong_AsLongLongAndOverflow(hi, &overflow);
        if (overflow)
            PyErr_SetString(PyExc_OverflowError, "Python int too large for fusec (over 128 bits)");
        else if (!(h == -1 && PyErr_Occurred()))
            r = fc_i128(c, h, PyLong_AsUnsignedLongLong(lo));
    }
    Py_XDECREF(sixty4);
    Py_XDECREF(mask);
    Py_XDECREF(hi);
    Py_XDECREF(lo);
    return r;
}

int pf_operand(PyObject *o, PyObject *ctx, fc_array **out) {
    *out = NULL;
    if (pf_is_array(o)) {
        if (pf_trace_use(o)) return -1;
        *out = fc_keep(pf_arr(o));
        return 1;
    }
    fc_array *r = NULL;
    fc_ctx *c = pf_fc_ctx(ctx);
    if (PyBool_Check(o))
        r = fc_bool(c, o == Py_True);
    else if (PyLong_CheckExact(o)) {
        r = weak_int(c, o);
        if (!r) return PyErr_Occurred() ? -1 : (PyErr_NoMemory(), -1);
    } else if (PyFloat_CheckExact(o))
        r = fc_f64(c, PyFloat_AsDouble(o));
    else if (PyComplex_CheckExact(o))
        r = fc_c128(c, PyComplex_RealAsDouble(o), PyComplex_ImagAsDouble(o));
    else {
        if (!asarray_hook || o == Py_None || PyUnicode_Check(o) || PyBytes_Check(o)) return 0;
        PyObject *a = pf_asarray(o);
        if (!a) {
            /* Objects NumPy cannot make an array of are "not convertible", not an error. */
            if (PyErr_ExceptionMatches(PyExc_TypeError) ||
                PyErr_ExceptionMatches(PyExc_ValueError)) {
                PyErr_Clear();
                return 0;
            }
            return -1;
        }
        if (!pf_is_array(a)) {
            Py_DECREF(a);
            return 0;
        }
        *out = fc_keep(pf_arr(a));
        Py_DECREF(a);
        return 1;
    }
    if (!r) {
        PyErr_NoMemory();
        return -1;
    }
    *out = r;
    return 1;
}

PyObject *pf_asarray(PyObject *o) {
    if (!asarray_hook) {
        PyErr_SetString(PyExc_RuntimeError, "fusec: the Python layer is not loaded");
        return NULL;
    }
    return PyObject_CallFunctionObjArgs(asarray_hook, o, NULL);
}

PyObject *pf_ctx_of(PyObject *const *objs, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++)
        if (objs[i] && pf_is_array(objs[i])) return pf_arr_ctx(objs[i]);
    return pf_current_ctx();
}

void pf_release_all(fc_array **a, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) {
        fc_release(a[i]);
        a[i] = NULL;
    }
}

int pf_operands(const char *what, PyObject *const *objs, Py_ssize_t n, fc_array **out,
                PyObject **ctx) {
    Py_ssize_t first = -1;
    for (Py_ssize_t i = 0; i < n; i++) out[i] = NULL;
    for (Py_ssize_t i = 0; i < n && first < 0; i++)
        if (pf_is_array(objs[i])) first = i;
    PyObject *made = NULL; /* the array fusec.asarray made of objs[0], when none is an array */
    if (first < 0) {
        made = pf_asarray(objs[0]);
        if (!made) return -1;
        if (!pf_is_array(made)) {
            Py_DECREF(made);
            PyErr_Format(PyExc_TypeError, "%s: cannot convert an operand to an array", what);
            return -1;
        }
    }
    *ctx = made ? pf_arr_ctx(made) : pf_arr_ctx(objs[first]);
    for (Py_ssize_t i = 0; i < n; i++) {
        int rc = (i == 0 && made) ? pf_operand(made, *ctx, &out[i])
                                  : pf_operand(objs[i], *ctx, &out[i]);
        if (rc <= 0) {
            if (rc == 0) {
                PyObject *tn = PyType_GetName(Py_TYPE(objs[i]));
                PyErr_Format(PyExc_TypeError, "%s: unsupported operand type '%U'", what, tn);
                Py_XDECREF(tn);
            }
            pf_release_all(out, i);
            Py_XDECREF(made);
            return -1;
        }
    }
    Py_XDECREF(made); /* *ctx stays alive: out[0] is a reference into it, and fusec.asarray
                         makes arrays in the current context, which the module holds */
    return 0;
}

int pf_int64(PyObject *o, int64_t *out) {
    PyObject *i = PyNumber_Index(o);
    if (!i) return -1;
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(i, &overflow);
    Py_DECREF(i);
    if (v == -1 && PyErr_Occurred()) return -1;
    if (overflow) {
        PyErr_SetString(PyExc_IndexError, "index out of the int64 range");
        return -1;
    }
    *out = v;
    return 0;
}

static int small_int(PyObject *o, int *out, const char *what) {
    int64_t v;
    if (pf_int64(o, &v)) {
        if (PyErr_ExceptionMatches(PyExc_IndexError)) {
            PyErr_Clear();
            PyErr_Format(pf_axis_error, "%s out of range", what);
        }
        return -1;
    }
    if (v < -(1 << 20) || v > (1 << 20)) {
        PyErr_Format(pf_axis_error, "%s %lld is out of range", what, (long long)v);
        return -1;
    }
    *out = (int)v;
    return 0;
}

int pf_axis(PyObject *o, int *out) {
    if (o == Py_None) {
        *out = FC_AXIS_NONE;
        return 0;
    }
    return small_int(o, out, "axis");
}

int pf_axes(PyObject *o, fc_axes *out) {
    memset(out, 0, sizeof *out);
    if (o == Py_None) {
        out->n = -1;
        return 0;
    }
    if (PyIndex_Check(o)) {
        out->n = 1;
        return small_int(o, &out->axis[0], "axis");
    }
    PyObject *seq = PySequence_Tuple(o);
    if (!seq) {
        PyErr_Clear();
        PyErr_SetString(PyExc_TypeError, "axis must be None, an int or a tuple of ints");
        return -1;
    }
    Py_ssize_t n = PyTuple_Size(seq);
    if (n > FC_MAX_DIMS) {
        Py_DECREF(seq);
        PyErr_Format(pf_axis_error, "%zd axes: fusec arrays have at most %d", n, FC_MAX_DIMS);
        return -1;
    }
    out->n = (int)n;
    for (Py_ssize_t i = 0; i < n; i++)
        if (small_int(PyTuple_GetItem(seq, i), &out->axis[i], "axis")) {
            Py_DECREF(seq);
            return -1;
        }
    Py_DECREF(seq);
    return 0;
}

int pf_shape(PyObject *o, fc_shape *out) {
    memset(out, 0, sizeof *out);
    if (PyIndex_Check(o)) {
        out->ndim = 1;
        return pf_int64(o, &out->dim[0]);
    }
    PyObject *seq = PySequence_Tuple(o);
    if (!seq) {
        PyErr_Clear();
        PyErr_SetString(PyExc_TypeError, "a shape must be an int or a sequence of ints");
        return -1;
    }
    Py_ssize_t n = PyTuple_Size(seq);
    if (n > FC_MAX_DIMS) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_ValueError, "a shape of %zd dimensions: fusec allows at most %d", n,
                     FC_MAX_DIMS);
        return -1;
    }
    out->ndim = (int)n;
    for (Py_ssize_t i = 0; i < n; i++)
        if (pf_int64(PyTuple_GetItem(seq, i), &out->dim[i])) {
            Py_DECREF(seq);
            if (PyErr_ExceptionMatches(PyExc_IndexError)) {
                PyErr_Clear();
                PyErr_SetString(PyExc_ValueError, "array is too big");
            }
            return -1;
        }
    Py_DECREF(seq);
    return 0;
}

int pf_dtype(PyObject *o, fc_dtype *out) {
    long v = PyLong_AsLong(o);
    if (v == -1 && PyErr_Occurred()) return -1;
    if (v < 0 || v >= FC_DTYPE_COUNT) {
        PyErr_Format(PyExc_TypeError, "bad fusec dtype code %ld", v);
        return -1;
    }
    *out = (fc_dtype)v;
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Transfers and evaluation                                                                 */
/* ---------------------------------------------------------------------------------------- */

static PyObject *ctx_arg(PyObject *ctx) {
    if (!ctx || ctx == Py_None) return pf_current_ctx();
    if (!PyObject_TypeCheck(ctx, pf_ctx_type)) {
        PyErr_SetString(PyExc_TypeError, "ctx must be a fusec.Context");
        return NULL;
    }
    return ctx_check(ctx) ? NULL : ctx;
}

static PyObject *py_from_buffer(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *buf, *code, *shape_o, *ctx = NULL;
    if (!PyArg_ParseTuple(args, "OOO|O:from_buffer", &buf, &code, &shape_o, &ctx)) return NULL;
    fc_dtype dt;
    fc_shape shape;
    if (pf_dtype(code, &dt) || pf_shape(shape_o, &shape) || !(ctx = ctx_arg(ctx))) return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(buf, &view, PyBUF_C_CONTIGUOUS)) return NULL;
    int64_t n = 1;
    for (int i = 0; i < shape.ndim; i++) {
        if (shape.dim[i] < 0) n = -1;
        if (n >= 0) n *= shape.dim[i];
    }
    if (n < 0 || (size_t)view.len != (size_t)n * fc_dtype_size(dt)) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "from_buffer: the buffer's size is not the shape's");
        return NULL;
    }
    fc_array *r = fc_from_host(pf_fc_ctx(ctx), dt, shape, view.len ? view.buf : NULL);
    PyBuffer_Release(&view);
    return pf_wrap(r, ctx);
}

static PyObject *py_to_buffer(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *arr, *buf;
    if (!PyArg_ParseTuple(args, "O!O:to_buffer", pf_array_base, &arr, &buf) ||
        pf_trace_refuse_eval())
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(buf, &view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS)) return NULL;
    size_t need = (size_t)fc_array_size(pf_arr(arr)) * fc_dtype_size(fc_array_dtype(pf_arr(arr)));
    if ((size_t)view.len != need) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "to_buffer: the buffer's size is not the array's");
        return NULL;
    }
    /* Evaluated on the current stream (`with fusec.Stream():`), then copied out. */
    PyObject *ctx = pf_arr_ctx(arr);
    fc_status st = fc_eval_on(pf_fc_ctx(ctx), &((pf_array_object *)arr)->a, 1,
                              pf_current_stream(ctx));
    if (st == FC_OK && need) st = fc_to_host(pf_arr(arr), view.buf, need);
    PyBuffer_Release(&view);
    if (st != FC_OK) return raise_ctx(st, pf_arr_ctx(arr));
    Py_RETURN_NONE;
}

/* eval(*arrays): evaluates them together (one program), keeping their values. */
static PyObject *py_eval(PyObject *m, PyObject *const *args, Py_ssize_t n) {
    (void)m;
    if (pf_trace_refuse_eval()) return NULL;
    if (n == 0) Py_RETURN_NONE;
    fc_array *stack[16], **arrs = n <= 16 ? stack : PyMem_Malloc((size_t)n * sizeof *arrs);
    if (!arrs) return PyErr_NoMemory();
    PyObject *ctx = NULL, *ret = Py_None;
    for (Py_ssize_t i = 0; i < n && ret; i++) {
        if (!pf_is_array(args[i])) {
            PyErr_SetString(PyExc_TypeError, "eval: every argument must be a fusec array");
            ret = NULL;
        } else if (ctx && pf_arr_ctx(args[i]) != ctx) {
            PyErr_SetString(PyExc_ValueError, "eval: arrays of different contexts");
            ret = NULL;
        } else {
            ctx = pf_arr_ctx(args[i]);
            arrs[i] = pf_arr(args[i]);
        }
    }
    if (ret) {
        fc_status st = fc_eval_on(pf_fc_ctx(ctx), arrs, (int)n, pf_current_stream(ctx));
        if (st != FC_OK) ret = raise_ctx(st, ctx);
    }
    if (arrs != stack) PyMem_Free(arrs);
    return ret ? Py_NewRef(ret) : NULL;
}

/* ---------------------------------------------------------------------------------------- */
/* Creation                                                                                 */
/* ---------------------------------------------------------------------------------------- */

/* full(code, shape, value, ctx=None): zeros, ones, empty and full. A float, bool or int that
 * a double holds exactly goes through fc_full; a complex through fc_full_complex; a larger
 * int is cast exactly (a weak int cast to the dtype, broadcast). */
static PyObject *py_full(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *code, *shape_o, *value, *ctx = NULL;
    if (!PyArg_ParseTuple(args, "OOO|O:full", &code, &shape_o, &value, &ctx)) return NULL;
    fc_dtype dt;
    fc_shape shape;
    if (pf_dtype(code, &dt) || pf_shape(shape_o, &shape) || !(ctx = ctx_arg(ctx))) return NULL;
    fc_ctx *c = pf_fc_ctx(ctx);
    if (PyComplex_Check(value)) {
        double re = PyComplex_RealAsDouble(value), im = PyComplex_ImagAsDouble(value);
        if (dt == FC_C64 || dt == FC_C128) return pf_wrap(fc_full_complex(c, dt, shape, re, im), ctx);
        if (im != 0) {
            PyErr_SetString(PyExc_TypeError, "full: a complex fill value for a real dtype");
            return NULL;
        }
        return pf_wrap(fc_full(c, dt, shape, re), ctx);
    }
    if (PyLong_Check(value) && !PyBool_Check(value)) {
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
        if (v == -1 && PyErr_Occurred()) return NULL;
        if (overflow || v > (1LL << 53) || v < -(1LL << 53)) {
            fc_array *w = NULL;
            if (pf_operand(value, ctx, &w) < 0) return NULL;
            fc_array *cast = fc_cast(w, dt);
            fc_release(w);
            fc_array *r = fc_broadcast_to(cast, shape);
            fc_release(cast);
            return pf_wrap(r, ctx);
        }
        return pf_wrap(fc_full(c, dt, shape, (double)v), ctx);
    }
    double v = PyFloat_AsDouble(value);
    if (v == -1.0 && PyErr_Occurred()) return NULL;
    return pf_wrap(fc_full(c, dt, shape, v), ctx);
}

static PyObject *py_arange(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *code, *ctx = NULL;
    double start, stop, step;
    if (!PyArg_ParseTuple(args, "Oddd|O:arange", &code, &start, &stop, &step, &ctx)) return NULL;
    fc_dtype dt;
    if (pf_dtype(code, &dt) || !(ctx = ctx_arg(ctx))) return NULL;
    return pf_wrap(fc_arange(pf_fc_ctx(ctx), dt, start, stop, step), ctx);
}

static PyObject *py_linspace(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *code, *ctx = NULL;
    double start, stop;
    long long num;
    int endpoint;
    if (!PyArg_ParseTuple(args, "OddLp|O:linspace", &code, &start, &stop, &num, &endpoint, &ctx))
        return NULL;
    fc_dtype dt;
    if (pf_dtype(code, &dt) || !(ctx = ctx_arg(ctx))) return NULL;
    return pf_wrap(fc_linspace(pf_fc_ctx(ctx), dt, start, stop, num, endpoint), ctx);
}

static PyObject *py_eye(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *code, *ctx = NULL;
    long long n, mm, k;
    if (!PyArg_ParseTuple(args, "OLLL|O:eye", &code, &n, &mm, &k, &ctx)) return NULL;
    fc_dtype dt;
    if (pf_dtype(code, &dt) || !(ctx = ctx_arg(ctx))) return NULL;
    return pf_wrap(fc_eye(pf_fc_ctx(ctx), dt, n, mm, k), ctx);
}

/* ---------------------------------------------------------------------------------------- */
/* Dtypes and hooks                                                                         */
/* ---------------------------------------------------------------------------------------- */

static PyObject *py_promote_types(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *a, *b;
    fc_dtype x, y, r;
    if (!PyArg_ParseTuple(args, "OO:promote_types", &a, &b) || pf_dtype(a, &x) || pf_dtype(b, &y))
        return NULL;
    fc_status st = fc_promote_types(x, y, &r);
    if (st != FC_OK) return pf_raise(st, NULL);
    return PyLong_FromLong(r);
}

/* _set_hooks(array_class, asarray): the Python layer's array class (a subclass of _Array
 * that adds the Python methods; results of ops are made of it) and fusec.asarray. */
static PyObject *py_set_hooks(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *cls, *asarray;
    if (!PyArg_ParseTuple(args, "OO:_set_hooks", &cls, &asarray)) return NULL;
    if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject *)cls, pf_array_base) ||
        !PyCallable_Check(asarray)) {
        PyErr_SetString(PyExc_TypeError, "_set_hooks: an _Array subclass and a callable");
        return NULL;
    }
    PyObject *old_cls = (PyObject *)pf_array_type, *old_hook = asarray_hook;
    pf_array_type = (PyTypeObject *)Py_NewRef(cls);
    asarray_hook = Py_NewRef(asarray);
    Py_XDECREF(old_cls);
    Py_XDECREF(old_hook);
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"current_context", py_current_context, METH_NOARGS,
     "The context new arrays are made in (the innermost `with Context()`, else the default)."},
    {"from_buffer", py_from_buffer, METH_VARARGS,
     "from_buffer(buf, code, shape, ctx=None): an array holding a copy of a C-contiguous "
     "buffer."},
    {"to_buffer", py_to_buffer, METH_VARARGS,
     "to_buffer(array, buf): evaluates the array and copies its value into a writable "
     "C-contiguous buffer of its size."},
    {"eval", (PyCFunction)(void (*)(void))py_eval, METH_FASTCALL,
     "eval(*arrays): evaluates the arrays together, as one fused program."},
    {"full", py_full, METH_VARARGS, "full(code, shape, value, ctx=None)"},
    {"arange", py_arange, METH_VARARGS, "arange(code, start, stop, step, ctx=None)"},
    {"linspace", py_linspace, METH_VARARGS,
     "linspace(code, start, stop, num, endpoint, ctx=None)"},
    {"eye", py_eye, METH_VARARGS, "eye(code, n, m, k, ctx=None)"},
    {"promote_types", py_promote_types, METH_VARARGS,
     "promote_types(code, code): NumPy's promotion of two dtype codes."},
    {"_set_hooks", py_set_hooks, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "fusec._fusec",
    "fusec's C core: contexts, the array type and the op functions (use the fusec package).",
    -1, module_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__fusec(void) {
    PyObject *m = PyModule_Create(&module_def);
    if (!m) return NULL;
    ctx_stack = PyList_New(0);
    pf_ctx_type = (PyTypeObject *)PyType_FromSpec(&ctx_spec);
    PyObject *bases = PyTuple_Pack(2, PyExc_ValueError, PyExc_IndexError);
    if (bases) pf_axis_error = PyErr_NewException("fusec.AxisError", bases, NULL);
    Py_XDECREF(bases);
    pf_linalg_error = PyErr_NewException("fusec.linalg.LinAlgError", PyExc_ValueError, NULL);
    if (!ctx_stack || !pf_ctx_type || !pf_axis_error || !pf_linalg_error ||
        PyModule_AddObjectRef(m, "Context", (PyObject *)pf_ctx_type) ||
        PyModule_AddObjectRef(m, "AxisError", pf_axis_error) ||
        PyModule_AddObjectRef(m, "LinAlgError", pf_linalg_error) ||
        PyModule_AddIntConstant(m, "MAX_DIMS", FC_MAX_DIMS) || pf_array_init_type(m) ||
        pf_ops_add(m) || pf_fuse_add(m) || pf_user_add(m) ||
        pf_random_add(m) || pf_interop_add(m)) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
