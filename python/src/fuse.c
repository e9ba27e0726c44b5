/*
 * fuse.c - what fusec.fuse is made of: placeholders, graph substitution, and the trace state.
 *
 * fusec.fuse (fusec/_fuse.py) traces a function once per signature on placeholders
 * (fc_placeholder) and replays the traced graph for later calls with fc_replay_run: one C
 * call that builds the traced nodes again on the call's arrays. While a trace runs, this
 * file's state records which array objects the function made (pf_wrap) and which it read
 * (pf_trace_use), so that arrays it captured from outside (a closure, a global) become inputs
 * of the replay too; and it refuses what a replay could not repeat: evaluating a traced value
 * (bool(x), float(x), printing, NumPy conversion) and assigning into an array the function did
 * not make (an argument or a captured array: a side effect).
 */
#include "pyfusec.h"

#include <string.h>

static PyObject *trace_made; /* set of ids: array objects made during the trace, or NULL */
static PyObject *trace_read; /* dict id -> object: array objects read during the trace */

int pf_tracing(void) { return trace_made != NULL; }

static int note(PyObject *o, int made) {
    PyObject *id = PyLong_FromVoidPtr(o);
    if (!id) return -1;
    int rc = made ? PySet_Add(trace_made, id) : PyDict_SetItem(trace_read, id, o);
    Py_DECREF(id);
    return rc;
}

int pf_trace_made(PyObject *o) { return trace_made ? note(o, 1) : 0; }

int pf_trace_use(PyObject *o) { return trace_made ? note(o, 0) : 0; }

int pf_trace_mutate(PyObject *o) {
    if (!trace_made) return 0;
    PyObject *id = PyLong_FromVoidPtr(o);
    if (!id) return -1;
    int made = PySet_Contains(trace_made, id);
    Py_DECREF(id);
    if (made < 0) return -1;
    if (made) return 0;
    PyErr_SetString(PyExc_TypeError,
                    "fusec.fuse: the function assigns into an array it did not make (an "
                    "argument or a captured array): a fused function cannot repeat that side "
                    "effect; assign into a copy (y = x.copy(); y[...] = v) and return it");
    return -1;
}

int pf_trace_refuse_eval(void) {
    if (!trace_made) return 0;
    PyErr_SetString(PyExc_TypeError,
                    "fusec.fuse: the function evaluates a traced value (bool(), float(), int(), "
                    "printing, NumPy conversion, fusec.eval, or an op whose result's shape "
                    "depends on values, such as a boolean mask): a fused function is traced "
                    "once and replayed, so its Python control flow cannot depend on array "
                    "values (use fusec.where)");
    return -1;
}

/* _trace_begin(): starts recording. */
static PyObject *py_trace_begin(PyObject *m, PyObject *unused) {
    (void)m, (void)unused;
    if (trace_made) {
        PyErr_SetString(PyExc_RuntimeError, "fusec.fuse: a trace is already running");
        return NULL;
    }
    trace_made = PySet_New(NULL);
    trace_read = PyDict_New();
    if (!trace_made || !trace_read) {
        Py_CLEAR(trace_made);
        Py_CLEAR(trace_read);
        return NULL;
    }
    Py_RETURN_NONE;
}

/* _trace_end() -> (made: set of ids, read: dict id -> array): stops recording. */
static PyObject *py_trace_end(PyObject *m, PyObject *unused) {
    (void)m, (void)unused;
    if (!trace_made) {
        PyErr_SetString(PyExc_RuntimeError, "fusec.fuse: no trace is running");
        return NULL;
    }
    PyObject *r = PyTuple_Pack(2, trace_made, trace_read);
    Py_CLEAR(trace_made);
    Py_CLEAR(trace_read);
    return r;
}

/* placeholder(code, shape, weak, ctx) */
static PyObject *py_placeholder(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *code, *shape_o, *ctx;
    int weak;
    fc_dtype dt;
    fc_shape shape;
    if (!PyArg_ParseTuple(args, "OOpO!:placeholder", &code, &shape_o, &weak, pf_ctx_type, &ctx) ||
        pf_dtype(code, &dt) || pf_shape(shape_o, &shape))
        return NULL;
    if (!pf_fc_ctx(ctx)) {
        PyErr_SetString(PyExc_RuntimeError, "Context: not initialised");
        return NULL;
    }
    return pf_wrap(fc_placeholder(pf_fc_ctx(ctx), dt, shape, weak), ctx);
}

/* A replay (fc_replay) of a traced program, and the Context its arrays belong to. */
typedef struct {
    PyObject_HEAD
    fc_replay *r;
    PyObject *ctx;
    Py_ssize_t m, n;
} replay_object;

static PyTypeObject *replay_type;

static void replay_dealloc(PyObject *self) {
    PyTypeObject *tp = Py_TYPE(self);
    replay_object *o = (replay_object *)self;
    fc_replay_destroy(o->r);
    o->r = NULL;
    Py_CLEAR(o->ctx);
    freefunc f = (freefunc)PyType_GetSlot(tp, Py_tp_free);
    f(self);
    Py_DECREF(tp);
}

#define PF_MAX_REPLAY 256

/* The fusec arrays of a tuple of array objects (borrowed), or -1 with TypeError. */
static int arrays_of(PyObject *t, fc_array **out, const char *what) {
    for (Py_ssize_t i = 0; i < PyTuple_Size(t); i++) {
        PyObject *o = PyTuple_GetItem(t, i);
        if (!pf_is_array(o)) {
            PyErr_Format(PyExc_TypeError, "replay: %s %zd is not an array", what, i);
            return -1;
        }
        out[i] = pf_arr(o);
    }
    return 0;
}

/* replay(outputs, inputs): the traced program computing the tuple `outputs` from the tuple
 * `inputs` (placeholders, captured arrays), made replayable. */
static PyObject *py_replay(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *outs_t, *ins_t;
    if (!PyArg_ParseTuple(args, "O!O!:replay", &PyTuple_Type, &outs_t, &PyTuple_Type, &ins_t))
        return NULL;
    Py_ssize_t n = PyTuple_Size(outs_t), k = PyTuple_Size(ins_t);
    if (n < 1 || n > PF_MAX_REPLAY || k > PF_MAX_REPLAY) {
        PyErr_Format(PyExc_ValueError, "replay: 1 to %d outputs and at most %d inputs",
                     PF_MAX_REPLAY, PF_MAX_REPLAY);
        return NULL;
    }
    fc_array *outs[PF_MAX_REPLAY], *ins[PF_MAX_REPLAY];
    if (arrays_of(outs_t, outs, "output") || arrays_of(ins_t, ins, "input")) return NULL;
    PyObject *ctx = pf_arr_ctx(PyTuple_GetItem(outs_t, 0));
    fc_replay *r = NULL;
    fc_status st = fc_replay_create(outs, (int)n, ins, (int)k, &r);
    if (st != FC_OK) return pf_raise(st, fc_errmsg(pf_fc_ctx(ctx)));
    replay_object *o = (replay_object *)PyType_GenericAlloc(replay_type, 0);
    if (!o) {
        fc_replay_destroy(r);
        return NULL;
    }
    o->r = r;
    o->ctx = Py_NewRef(ctx);
    o->m = k;
    o->n = n;
    return (PyObject *)o;
}

/* replay.run(*inputs) -> tuple of outputs: inputs are arrays or Python scalars (made weak, as
 * operands are). */
static PyObject *replay_run(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    replay_object *o = (replay_object *)self;
    if (nargs != o->m) {
        PyErr_Format(PyExc_TypeError, "replay: %zd inputs, given %zd", o->m, nargs);
        return NULL;
    }
    fc_array *in[PF_MAX_REPLAY], *res[PF_MAX_REPLAY];
    for (Py_ssize_t i = 0; i < nargs; i++) {
        int rc = pf_operand(args[i], o->ctx, &in[i]);
        if (rc <= 0) {
            if (rc == 0) PyErr_Format(PyExc_TypeError, "replay: input %zd is not an array or "
                                                       "a Python scalar", i);
            pf_release_all(in, i);
            return NULL;
        }
    }
    fc_status st = fc_replay_run(o->r, in, res);
    pf_release_all(in, nargs);
    if (st != FC_OK) return pf_raise(st, fc_errmsg(pf_fc_ctx(o->ctx)));
    return pf_tuple_of(res, (int)o->n, o->ctx);
}

static PyMethodDef replay_methods[] = {
    {"run", (PyCFunction)(void (*)(void))replay_run, METH_FASTCALL,
     "run(*inputs): the traced outputs built again on these inputs (a tuple)."},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot replay_slots[] = {
    {Py_tp_doc, "A traced program made replayable (fc_replay): fusec.fuse's per-signature "
                "program."},
    {Py_tp_dealloc, replay_dealloc},
    {Py_tp_methods, replay_methods},
    {0, NULL},
};
static PyType_Spec replay_spec = {"fusec._fusec._Replay", sizeof(replay_object), 0,
                                  Py_TPFLAGS_DEFAULT, replay_slots};

static PyObject *py_tracing(PyObject *m, PyObject *unused) {
    (void)m, (void)unused;
    return PyBool_FromLong(trace_made != NULL);
}

/* _alias(a): a new array object holding a's node (the value as it is now). */
static PyObject *py_alias(PyObject *m, PyObject *a) {
    (void)m;
    if (!pf_is_array(a)) {
        PyErr_SetString(PyExc_TypeError, "_alias: not an array");
        return NULL;
    }
    return pf_wrap(fc_keep(pf_arr(a)), pf_arr_ctx(a));
}

/* _signature(args) -> (key, dynamic) for fusec.fuse's fast path, or None when an argument is
 * not a fusec array, a Python float, complex, bool or an int that fits int64 (the Python
 * layer then computes the key). key is bytes: per argument a kind byte, then a dtype code,
 * ndim, extents and the context's address for an array, or the value of an int or bool;
 * dynamic is the tuple of the arrays, floats and complex numbers, the replay's inputs. */
static PyObject *py_signature(PyObject *m, PyObject *args) {
    (void)m;
    if (!PyTuple_Check(args)) Py_RETURN_NONE;
    Py_ssize_t n = PyTuple_Size(args);
    if (n > 64) Py_RETURN_NONE;
    unsigned char buf[64 * (2 + 8 * (FC_MAX_DIMS + 2))];
    size_t len = 0;
    PyObject *dyn = PyTuple_New(n), *key = NULL;
    if (!dyn) return NULL;
    Py_ssize_t nd = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *o = PyTuple_GetItem(args, i);
        if (pf_is_array(o)) {
            fc_shape s = fc_array_shape(pf_arr(o));
            void *c = pf_arr_ctx(o);
            buf[len++] = 'a';
            buf[len++] = (unsigned char)fc_array_dtype(pf_arr(o));
            buf[len++] = (unsigned char)s.ndim;
            memcpy(buf + len, s.dim, sizeof(int64_t) * (size_t)s.ndim);
            len += sizeof(int64_t) * (size_t)s.ndim;
            memcpy(buf + len, &c, sizeof c);
            len += sizeof c;
        } else if (PyFloat_CheckExact(o) || PyComplex_CheckExact(o)) {
            buf[len++] = PyFloat_CheckExact(o) ? 'f' : 'c';
        } else if (PyBool_Check(o) || PyLong_CheckExact(o)) {
            int overflow = 0;
            long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
            if (overflow || (v == -1 && PyErr_Occurred())) {
                PyErr_Clear();
                Py_DECREF(dyn);
                Py_RETURN_NONE;
            }
            buf[len++] = PyBool_Check(o) ? 'b' : 'i';
            memcpy(buf + len, &v, sizeof v);
            len += sizeof v;
            continue;
        } else {
            Py_DECREF(dyn);
            Py_RETURN_NONE;
        }
        PyTuple_SetItem(dyn, nd++, Py_NewRef(o));
    }
    if (nd < n) { /* a shorter tuple (the unset items are NULL, which dealloc skips) */
        PyObject *t = PyTuple_GetSlice(dyn, 0, nd);
        Py_DECREF(dyn);
        dyn = t;
        if (!dyn) return NULL;
    }
    key = PyBytes_FromStringAndSize((const char *)buf, (Py_ssize_t)len);
    PyObject *r = key ? PyTuple_Pack(2, key, dyn) : NULL;
    Py_XDECREF(key);
    Py_DECREF(dyn);
    return r;
}

static PyMethodDef fuse_methods[] = {
    {"_signature", py_signature, METH_O, NULL},
    {"_alias", py_alias, METH_O, NULL},
    {"_tracing", py_tracing, METH_NOARGS, NULL},
    {"placeholder", py_placeholder, METH_VARARGS,
     "placeholder(code, shape, weak, ctx): an input of a traced program (no data)."},
    {"replay", py_replay, METH_VARARGS,
     "replay(outputs, inputs): the traced program of outputs from inputs, replayable."},
    {"_trace_begin", py_trace_begin, METH_NOARGS, NULL},
    {"_trace_end", py_trace_end, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

int pf_fuse_add(PyObject *module) {
    replay_type = (PyTypeObject *)PyType_FromSpec(&replay_spec);
    if (!replay_type || PyModule_AddObjectRef(module, "_Replay", (PyObject *)replay_type))
        return -1;
    return PyModule_AddFunctions(module, fuse_methods);
}
