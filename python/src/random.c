/*
 * random.c - fusec.random's draws: fc_rng_* over a generator state (seed, stream) that the
 * Python layer (fusec/random.py) keeps. Each draw takes the state and returns the array with
 * the next stream, so the state advances exactly as fc_rng's does.
 */
#include "pyfusec.h"

#include <string.h>

/* rng(kind, seed, stream, ctx, *params) -> (array, next stream). kind and params:
 *   "random" code shape | "standard_normal" code shape | "uniform" low high code shape |
 *   "normal" loc scale code shape | "integers" low high code shape |
 *   "exponential" scale code shape | "bernoulli" p shape | "permutation" n |
 *   "shuffle" x axis | "choice" n size replace | "choice_array" a size replace */
static PyObject *py_rng(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
    (void)m;
    if (nargs < 4 || !PyUnicode_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "rng(kind, seed, stream, ctx, *params)");
        return NULL;
    }
    const char *kind = PyUnicode_AsUTF8AndSize(args[0], NULL);
    fc_rng g;
    g.seed = PyLong_AsUnsignedLongLongMask(args[1]);
    g.stream = PyLong_AsUnsignedLongLongMask(args[2]);
    PyObject *ctx = args[3];
    if (!kind || PyErr_Occurred()) return NULL;
    if (!PyObject_TypeCheck(ctx, pf_ctx_type) || !pf_fc_ctx(ctx)) {
        PyErr_SetString(PyExc_TypeError, "rng: a Context is required");
        return NULL;
    }
    fc_ctx *c = pf_fc_ctx(ctx);
    PyObject *const *p = args + 4;
    Py_ssize_t np_ = nargs - 4;
    fc_dtype dt = FC_F64;
    fc_shape shape = {0, {0}};
    double a = 0, b = 0;
    fc_array *r = NULL, *x = NULL;
#define NEED(k)                                                                                  \
    if (np_ != (k)) {                                                                            \
        PyErr_Format(PyExc_TypeError, "rng %s: %d parameters", kind, (k));                       \
        return NULL;                                                                             \
    }
#define TAIL(i) (pf_dtype(p[i], &dt) || pf_shape(p[(i) + 1], &shape))
    if (!strcmp(kind, "random") || !strcmp(kind, "standard_normal")) {
        NEED(2);
        if (TAIL(0)) return NULL;
        r = kind[0] == 'r' ? fc_rng_random(c, &g, dt, shape)
                           : fc_rng_standard_normal(c, &g, dt, shape);
    } else if (!strcmp(kind, "uniform") || !strcmp(kind, "normal")) {
        NEED(4);
        a = PyFloat_AsDouble(p[0]);
        b = PyFloat_AsDouble(p[1]);
        if (PyErr_Occurred() || TAIL(2)) return NULL;
        r = kind[0] == 'u' ? fc_rng_uniform(c, &g, a, b, dt, shape)
                           : fc_rng_normal(c, &g, a, b, dt, shape);
    } else if (!strcmp(kind, "integers")) {
        NEED(4);
        long long lo = PyLong_AsLongLong(p[0]), hi = PyLong_AsLongLong(p[1]);
        if (PyErr_Occurred() || TAIL(2)) return NULL;
        r = fc_rng_integers(c, &g, lo, hi, dt, shape);
    } else if (!strcmp(kind, "exponential")) {
        NEED(3);
        a = PyFloat_AsDouble(p[0]);
        if (PyErr_Occurred() || TAIL(1)) return NULL;
        r = fc_rng_exponential(c, &g, a, dt, shape);
    } else if (!strcmp(kind, "bernoulli")) {
        NEED(2);
        a = PyFloat_AsDouble(p[0]);
        if (PyErr_Occurred() || pf_shape(p[1], &shape)) return NULL;
        r = fc_rng_bernoulli(c, &g, a, shape);
    } else if (!strcmp(kind, "permutation")) {
        NEED(1);
        long long n = PyLong_AsLongLong(p[0]);
        if (PyErr_Occurred()) return NULL;
        r = fc_rng_permutation(c, &g, n);
    } else if (!strcmp(kind, "shuffle")) {
        NEED(2);
        int axis;
        if (pf_axis(p[1], &axis) || pf_operand(p[0], ctx, &x) <= 0) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "shuffle: not an array");
            return NULL;
        }
        r = fc_rng_shuffle(c, &g, x, axis);
    } else if (!strcmp(kind, "choice") || !strcmp(kind, "choice_array")) {
        NEED(3);
        int replace = PyObject_IsTrue(p[2]);
        if (replace < 0 || pf_shape(p[1], &shape)) return NULL;
        if (kind[6] == '\0') {
            long long n = PyLong_AsLongLong(p[0]);
            if (PyErr_Occurred()) return NULL;
            r = fc_rng_choice(c, &g, n, shape, replace);
        } else {
            if (pf_operand(p[0], ctx, &x) <= 0) {
                if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "choice: not an array");
                return NULL;
            }
            r = fc_rng_choice_array(c, &g, x, shape, replace);
        }
    } else {
        PyErr_Format(PyExc_ValueError, "rng: unknown draw '%s'", kind);
        return NULL;
    }
#undef NEED
#undef TAIL
    fc_release(x);
    PyObject *arr = pf_wrap(r, ctx);
    if (!arr) return NULL;
    PyObject *next = PyLong_FromUnsignedLongLong(g.stream);
    PyObject *t = next ? PyTuple_Pack(2, arr, next) : NULL;
    Py_DECREF(arr);
    Py_XDECREF(next);
    return t;
}

static PyMethodDef random_methods[] = {
    {"rng", (PyCFunction)(void (*)(void))py_rng, METH_FASTCALL,
     "rng(kind, seed, stream, ctx, *params) -> (array, next stream): a draw of fc_rng_*."},
    {NULL, NULL, 0, NULL},
};

int pf_random_add(PyObject *module) { return PyModule_AddFunctions(module, random_methods); }
