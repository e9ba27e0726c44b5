/*
 * user.c - user kernels (cupy.ElementwiseKernel, ReductionKernel, RawModule / RawKernel) and
 * streams and events, as handles the Python layer (fusec/_user.py, fusec/_stream.py) wraps.
 *
 * A handle (_fusec._Handle) owns one fusec object of a context and a strong reference to the
 * Context object, so the fc_ctx outlives it; tp_dealloc destroys the object (streams, events,
 * modules; a kernel definition belongs to its context) and then drops the context. The
 * current stream (`with stream:`) is a handle set by the Python layer: fusec.eval and every
 * conversion to NumPy evaluate on it when it belongs to the array's context.
 */
#include "pyfusec.h"

#include <string.h>

typedef enum { H_KERNEL, H_MODULE, H_STREAM, H_EVENT } handle_kind;

typedef struct {
    PyObject_HEAD
    handle_kind kind;
    void *p;
    PyObject *ctx;
} handle_object;

static PyTypeObject *handle_type;
static PyObject *current_stream; /* a stream handle, or NULL (the context's default stream) */

static void handle_dealloc(PyObject *self) {
    PyTypeObject *tp = Py_TYPE(self);
    handle_object *h = (handle_object *)self;
    if (h->p) switch (h->kind) {
        case H_MODULE: fc_module_destroy(h->p); break;
        case H_STREAM: fc_stream_destroy(h->p); break;
        case H_EVENT: fc_event_destroy(h->p); break;
        case H_KERNEL: break; /* the context owns kernel definitions */
        }
    h->p = NULL;
    Py_CLEAR(h->ctx);
    freefunc f = (freefunc)PyType_GetSlot(tp, Py_tp_free);
    f(self);
    Py_DECREF(tp);
}

static PyType_Slot handle_slots[] = {
    {Py_tp_doc, "A fusec object of a context (a kernel, module, stream or event)."},
    {Py_tp_dealloc, handle_dealloc},
    {0, NULL},
};
static PyType_Spec handle_spec = {"fusec._fusec._Handle", sizeof(handle_object), 0,
                                  Py_TPFLAGS_DEFAULT, handle_slots};

static PyObject *new_handle(handle_kind kind, void *p, PyObject *ctx) {
    handle_object *h = (handle_object *)PyType_GenericAlloc(handle_type, 0);
    if (!h) return NULL;
    h->kind = kind;
    h->p = p;
    h->ctx = Py_NewRef(ctx);
    return (PyObject *)h;
}

/* The object of a handle of `kind`, or NULL with TypeError. */
static void *handle_of(PyObject *o, handle_kind kind, PyObject **ctx) {
    if (!PyObject_TypeCheck(o, handle_type) || ((handle_object *)o)->kind != kind) {
        PyErr_SetString(PyExc_TypeError, "fusec: a handle of the wrong kind");
        return NULL;
    }
    if (ctx) *ctx = ((handle_object *)o)->ctx;
    return ((handle_object *)o)->p;
}

static PyObject *ctx_or_raise(PyObject *ctx) {
    if (!PyObject_TypeCheck(ctx, pf_ctx_type) || !pf_fc_ctx(ctx)) {
        PyErr_SetString(PyExc_TypeError, "fusec: a Context is required");
        return NULL;
    }
    return ctx;
}

fc_stream *pf_current_stream(PyObject *ctx) {
    if (!current_stream || ((handle_object *)current_stream)->ctx != ctx) return NULL;
    return ((handle_object *)current_stream)->p;
}

/* ---------------------------------------------------------------------------------------- */
/* User kernels                                                                             */
/* ---------------------------------------------------------------------------------------- */

/* elementwise_kernel(ctx, in_params, out_params, operation, name) -> handle */
static PyObject *py_elementwise_kernel(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *ctx;
    const char *in, *out, *op, *name;
    if (!PyArg_ParseTuple(args, "Ossss:elementwise_kernel", &ctx, &in, &out, &op, &name) ||
        !ctx_or_raise(ctx))
        return NULL;
    fc_kernel *k = NULL;
    fc_status st = fc_elementwise_kernel(pf_fc_ctx(ctx), in, out, op, name, &k);
    if (st != FC_OK) return pf_raise(st, fc_errmsg(pf_fc_ctx(ctx)));
    return new_handle(H_KERNEL, k, ctx);
}

/* reduction_kernel(ctx, in_params, out_params, map, reduce, post_map, identity, name,
 *                  reduce_type) -> handle */
static PyObject *py_reduction_kernel(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *ctx;
    const char *in, *out, *map, *red, *post, *ident, *name, *rtype;
    if (!PyArg_ParseTuple(args, "Osssssssz:reduction_kernel", &ctx, &in, &out, &map, &red,
                          &post, &ident, &name, &rtype) ||
        !ctx_or_raise(ctx))
        return NULL;
    fc_kernel *k = NULL;
    fc_status st = fc_reduction_kernel(pf_fc_ctx(ctx), in, out, map, red, post, ident, name,
                                       rtype, &k);
    if (st != FC_OK) return pf_raise(st, fc_errmsg(pf_fc_ctx(ctx)));
    return new_handle(H_KERNEL, k, ctx);
}

#define PF_MAX_KARGS 64

/* The operands of a kernel call: arrays of the kernel's context or Python scalars. */
static int kernel_operands(PyObject *kctx, PyObject *seq, fc_array **x, Py_ssize_t *n) {
    if (!PyTuple_Check(seq) || PyTuple_Size(seq) > PF_MAX_KARGS) {
        PyErr_Format(PyExc_TypeError, "fusec: a kernel takes at most %d arguments",
                     PF_MAX_KARGS);
        return -1;
    }
    *n = PyTuple_Size(seq);
    for (Py_ssize_t i = 0; i < *n; i++) {
        int rc = pf_operand(PyTuple_GetItem(seq, i), kctx, &x[i]);
        if (rc <= 0) {
            if (rc == 0)
                PyErr_Format(PyExc_TypeError, "fusec: kernel argument %zd is not an array or "
                             "a scalar", i);
            pf_release_all(x, i);
            return -1;
        }
    }
    return 0;
}

/* kernel_call(handle, args, nout) -> tuple of nout arrays */
static PyObject *py_kernel_call(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *h, *seq, *kctx;
    int nout;
    if (!PyArg_ParseTuple(args, "OOi:kernel_call", &h, &seq, &nout)) return NULL;
    fc_kernel *k = handle_of(h, H_KERNEL, &kctx);
    if (!k) return NULL;
    if (nout < 1 || nout > PF_MAX_KARGS) {
        PyErr_SetString(PyExc_ValueError, "kernel_call: bad number of outputs");
        return NULL;
    }
    fc_array *x[PF_MAX_KARGS], *r[PF_MAX_KARGS];
    Py_ssize_t n;
    if (kernel_operands(kctx, seq, x, &n)) return NULL;
    fc_status st = fc_kernel_call(k, (int)n, x, nout, r);
    pf_release_all(x, n);
    if (st != FC_OK) {
        PyObject *err = pf_raise(st, fc_array_errmsg(r[0]));
        pf_release_all(r, nout);
        return err;
    }
    return pf_tuple_of(r, (int)nout, kctx);
}

/* kernel_reduce(handle, args, axis, keepdims) -> array */
static PyObject *py_kernel_reduce(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *h, *seq, *axis, *kctx;
    int keepdims;
    if (!PyArg_ParseTuple(args, "OOOp:kernel_reduce", &h, &seq, &axis, &keepdims)) return NULL;
    fc_kernel *k = handle_of(h, H_KERNEL, &kctx);
    fc_axes axes;
    if (!k || pf_axes(axis, &axes)) return NULL;
    fc_array *x[PF_MAX_KARGS];
    Py_ssize_t n;
    if (kernel_operands(kctx, seq, x, &n)) return NULL;
    fc_array *r = fc_kernel_reduce(k, (int)n, x, axes, keepdims);
    pf_release_all(x, n);
    return pf_wrap(r, kctx);
}

/* ---------------------------------------------------------------------------------------- */
/* Raw modules                                                                              */
/* ---------------------------------------------------------------------------------------- */

/* A sequence of str into v[0..*n) (at most cap; borrowed UTF-8 of the tuple `held`). */
static int strings(PyObject *o, const char **v, int cap, int *n, PyObject **held) {
    *held = PySequence_Tuple(o);
    if (!*held) return -1;
    Py_ssize_t len = PyTuple_Size(*held);
    if (len > cap) {
        PyErr_Format(PyExc_ValueError, "fusec: at most %d options or names", cap);
        return -1;
    }
    for (Py_ssize_t i = 0; i < len; i++)
        if (!(v[i] = PyUnicode_AsUTF8AndSize(PyTuple_GetItem(*held, i), NULL))) return -1;
    *n = (int)len;
    return 0;
}

/* module_create(ctx, source, options, names) -> handle, or
 * module_create(ctx, source, options, names, arch) -> None (compiled into the cache only). */
static PyObject *py_module_create(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *ctx, *opts_o, *names_o, *opts_t = NULL, *names_t = NULL, *ret = NULL;
    const char *src, *arch = NULL, *opts[16], *names[64];
    int nopts = 0, nnames = 0;
    if (!PyArg_ParseTuple(args, "OsOO|z:module_create", &ctx, &src, &opts_o, &names_o, &arch) ||
        !ctx_or_raise(ctx))
        return NULL;
    if (!strings(opts_o, opts, 16, &nopts, &opts_t) &&
        !strings(names_o, names, 64, &nnames, &names_t)) {
        fc_ctx *c = pf_fc_ctx(ctx);
        if (arch) {
            fc_status st = fc_module_compile(c, src, nopts, opts, nnames, names, arch);
            ret = st == FC_OK ? Py_NewRef(Py_None) : pf_raise(st, fc_errmsg(c));
        } else {
            fc_module *mod = NULL;
            fc_status st = fc_module_create(c, src, nopts, opts, nnames, names, &mod);
            ret = st == FC_OK ? new_handle(H_MODULE, mod, ctx) : pf_raise(st, fc_errmsg(c));
            if (!ret) fc_module_destroy(mod);
        }
    }
    Py_XDECREF(opts_t);
    Py_XDECREF(names_t);
    return ret;
}

/* A scalar argument of a launch: (code, value) for a NumPy scalar (the Python layer makes
 * the pair), or a Python bool / int / float / complex (bool, int64, float64, complex128, as
 * CuPy passes them). */
static int scalar_arg(PyObject *o, fc_arg *a) {
    memset(a, 0, sizeof *a);
    a->kind = FC_ARG_SCALAR;
    PyObject *v = o;
    if (PyTuple_Check(o) && PyTuple_Size(o) == 2) {
        if (pf_dtype(PyTuple_GetItem(o, 0), &a->dtype)) return -1;
        v = PyTuple_GetItem(o, 1);
    } else if (PyBool_Check(o)) {
        a->dtype = FC_BOOL;
    } else if (PyLong_Check(o)) {
        a->dtype = FC_I64;
    } else if (PyFloat_Check(o)) {
        a->dtype = FC_F64;
    } else if (PyComplex_Check(o)) {
        a->dtype = FC_C128;
    } else {
        PyErr_SetString(PyExc_TypeError, "fusec: a kernel argument that is not an array, a "
                        "NumPy scalar or a Python scalar");
        return -1;
    }
    fc_dtype d = a->dtype;
    if (d == FC_C64 || d == FC_C128) {
        if (PyComplex_Check(v)) {
            a->re = PyComplex_RealAsDouble(v);
            a->im = PyComplex_ImagAsDouble(v);
        } else {
            a->re = PyFloat_AsDouble(v);
        }
    } else if (d >= FC_F16 && d <= FC_F64) {
        a->re = PyFloat_AsDouble(v);
    } else if (d >= FC_U8 && d <= FC_U64) {
        a->i = (int64_t)PyLong_AsUnsignedLongLongMask(v);
    } else {
        a->i = PyLong_AsLongLong(v);
    }
    return PyErr_Occurred() ? -1 : 0;
}

/* module_launch(handle, name, grid, block, shared_bytes, args, scalars) -> tuple of new arrays,
 * one per array argument (each passed as an OUT argument: the kernel may write it).
 * scalars: a tuple of (index, value, code or None) for the scalar arguments. */
static PyObject *py_module_launch(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *h, *seq, *mctx;
    const char *name;
    unsigned g[3], b[3];
    unsigned long long shared;
    if (!PyArg_ParseTuple(args, "Os(III)(III)KO:module_launch", &h, &name, &g[0], &g[1], &g[2],
                          &b[0], &b[1], &b[2], &shared, &seq))
        return NULL;
    fc_module *mod = handle_of(h, H_MODULE, &mctx);
    if (!mod) return NULL;
    if (!PyTuple_Check(seq) || PyTuple_Size(seq) > PF_MAX_KARGS) {
        PyErr_Format(PyExc_TypeError, "fusec: a launch takes a tuple of at most %d arguments",
                     PF_MAX_KARGS);
        return NULL;
    }
    Py_ssize_t n = PyTuple_Size(seq);
    fc_arg a[PF_MAX_KARGS];
    fc_array *outs[PF_MAX_KARGS];
    int nout = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *o = PyTuple_GetItem(seq, i);
        if (pf_is_array(o)) {
            if (pf_arr_ctx(o) != mctx) {
                PyErr_SetString(PyExc_ValueError, "fusec: a kernel argument of another context");
                return NULL;
            }
            a[i] = fc_arg_out(pf_arr(o));
            nout++;
        } else if (scalar_arg(o, &a[i])) {
            return NULL;
        }
    }
    fc_status st = fc_module_launch(mod, name, g, b, (size_t)shared, pf_current_stream(mctx),
                                    (int)n, a, outs);
    if (st != FC_OK) return pf_raise(st, fc_errmsg(pf_fc_ctx(mctx)));
    return pf_tuple_of(outs, (int)nout, mctx);
}

/* ---------------------------------------------------------------------------------------- */
/* Streams and events                                                                       */
/* ---------------------------------------------------------------------------------------- */

static PyObject *py_stream_create(PyObject *m, PyObject *ctx) {
    (void)m;
    if (!ctx_or_raise(ctx)) return NULL;
    fc_stream *s = NULL;
    fc_status st = fc_stream_create(pf_fc_ctx(ctx), &s);
    if (st != FC_OK) return pf_raise(st, fc_errmsg(pf_fc_ctx(ctx)));
    PyObject *h = new_handle(H_STREAM, s, ctx);
    if (!h) fc_stream_destroy(s);
    return h;
}

static PyObject *py_event_create(PyObject *m, PyObject *ctx) {
    (void)m;
    if (!ctx_or_raise(ctx)) return NULL;
    fc_event *e = NULL;
    fc_status st = fc_event_create(pf_fc_ctx(ctx), &e);
    if (st != FC_OK) return pf_raise(st, fc_errmsg(pf_fc_ctx(ctx)));
    PyObject *h = new_handle(H_EVENT, e, ctx);
    if (!h) fc_event_destroy(e);
    return h;
}

/* A stream argument: a handle, or (None, ctx) for ctx's default stream. */
static int stream_arg(PyObject *o, PyObject *ctx, fc_stream **s) {
    *s = NULL;
    if (o == Py_None) return 0;
    PyObject *sctx;
    if (!(*s = handle_of(o, H_STREAM, &sctx))) return -1;
    if (sctx != ctx) {
        PyErr_SetString(PyExc_ValueError, "fusec: a stream and an event of different contexts");
        return -1;
    }
    return 0;
}

static PyObject *status_none(fc_status st, PyObject *ctx) {
    if (st != FC_OK) return pf_raise(st, fc_errmsg(pf_fc_ctx(ctx)));
    Py_RETURN_NONE;
}

/* stream_synchronize(ctx, stream or None) */
static PyObject *py_stream_synchronize(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *ctx, *so;
    fc_stream *s;
    if (!PyArg_ParseTuple(args, "OO:stream_synchronize", &ctx, &so) || !ctx_or_raise(ctx) ||
        stream_arg(so, ctx, &s))
        return NULL;
    return status_none(fc_stream_synchronize(pf_fc_ctx(ctx), s), ctx);
}

/* event_record(event, stream or None) */
static PyObject *py_event_record(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *eo, *so, *ctx;
    fc_stream *s;
    fc_event *e;
    if (!PyArg_ParseTuple(args, "OO:event_record", &eo, &so) ||
        !(e = handle_of(eo, H_EVENT, &ctx)) || stream_arg(so, ctx, &s))
        return NULL;
    return status_none(fc_event_record(e, s), ctx);
}

/* stream_wait_event(stream or None, event) */
static PyObject *py_stream_wait_event(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *eo, *so, *ctx;
    fc_stream *s;
    fc_event *e;
    if (!PyArg_ParseTuple(args, "OO:stream_wait_event", &so, &eo) ||
        !(e = handle_of(eo, H_EVENT, &ctx)) || stream_arg(so, ctx, &s))
        return NULL;
    return status_none(fc_stream_wait_event(s, e), ctx);
}

static PyObject *py_event_synchronize(PyObject *m, PyObject *eo) {
    (void)m;
    PyObject *ctx;
    fc_event *e = handle_of(eo, H_EVENT, &ctx);
    if (!e) return NULL;
    return status_none(fc_event_synchronize(e), ctx);
}

/* event_elapsed(start, end) -> milliseconds */
static PyObject *py_event_elapsed(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *a, *b, *ca, *cb;
    fc_event *s, *e;
    if (!PyArg_ParseTuple(args, "OO:event_elapsed", &a, &b) || !(s = handle_of(a, H_EVENT, &ca)) ||
        !(e = handle_of(b, H_EVENT, &cb)))
        return NULL;
    if (ca != cb) {
        PyErr_SetString(PyExc_ValueError, "fusec: events of different contexts");
        return NULL;
    }
    float ms = 0;
    fc_status st = fc_event_elapsed_ms(s, e, &ms);
    if (st != FC_OK) return pf_raise(st, fc_errmsg(pf_fc_ctx(ca)));
    return PyFloat_FromDouble(ms);
}

/* _set_stream(handle or None) -> the previous one: the stream evaluations go to. */
static PyObject *py_set_stream(PyObject *m, PyObject *h) {
    (void)m;
    if (h != Py_None && !handle_of(h, H_STREAM, NULL)) return NULL;
    PyObject *old = current_stream ? current_stream : Py_NewRef(Py_None);
    current_stream = h == Py_None ? NULL : Py_NewRef(h);
    return old;
}

static PyMethodDef user_methods[] = {
    {"elementwise_kernel", py_elementwise_kernel, METH_VARARGS, NULL},
    {"reduction_kernel", py_reduction_kernel, METH_VARARGS, NULL},
    {"kernel_call", py_kernel_call, METH_VARARGS, NULL},
    {"kernel_reduce", py_kernel_reduce, METH_VARARGS, NULL},
    {"module_create", py_module_create, METH_VARARGS, NULL},
    {"module_launch", py_module_launch, METH_VARARGS, NULL},
    {"stream_create", py_stream_create, METH_O, NULL},
    {"event_create", py_event_create, METH_O, NULL},
    {"stream_synchronize", py_stream_synchronize, METH_VARARGS, NULL},
    {"stream_wait_event", py_stream_wait_event, METH_VARARGS, NULL},
    {"event_record", py_event_record, METH_VARARGS, NULL},
    {"event_synchronize", py_event_synchronize, METH_O, NULL},
    {"event_elapsed", py_event_elapsed, METH_VARARGS, NULL},
    {"_set_stream", py_set_stream, METH_O, NULL},
    {NULL, NULL, 0, NULL},
};

int pf_user_add(PyObject *module) {
    handle_type = (PyTypeObject *)PyType_FromSpec(&handle_spec);
    if (!handle_type) return -1;
    if (PyModule_AddObjectRef(module, "_Handle", (PyObject *)handle_type)) return -1;
    return PyModule_AddFunctions(module, user_methods);
}
