/*
 * array.c - the array type, fusec._fusec._Array: the C base of fusec.ndarray.
 *
 * Here is what runs on every operation: the operators (+, <, @, ~, ...), a[key] and
 * a[key] = v, and the attributes shape / ndim / size. Each builds a node of the lazy graph and
 * returns; nothing evaluates. The Python subclass (fusec/_array.py) adds the methods that
 * evaluate (repr, __array__, float(), bool(), ...) and the NumPy-named methods.
 *
 * Arrays are values (fusec's model): a[key] = v and a += b build the new value and rebind this
 * object to it, so every Python name bound to this object sees the change, as in NumPy; an
 * array sliced from it earlier keeps the old value (a fusec slice is a value, not a view).
 */
#include "pyfusec.h"

PyTypeObject *pf_array_base;
PyTypeObject *pf_array_type;

static void array_dealloc(PyObject *self) {
    PyTypeObject *tp = Py_TYPE(self);
    pf_array_object *o = (pf_array_object *)self;
    fc_release(o->a);
    o->a = NULL;
    Py_CLEAR(o->ctx);
    freefunc f = (freefunc)PyType_GetSlot(tp, Py_tp_free);
    f(self);
    Py_DECREF(tp);
}

/* Arrays are only made by fusec's functions (pf_wrap); the Python class refuses direct calls. */
static PyObject *array_new(PyTypeObject *tp, PyObject *args, PyObject *kw) {
    (void)tp, (void)args, (void)kw;
    PyErr_SetString(PyExc_TypeError,
                    "fusec arrays are made by fusec.asarray, fusec.zeros, fusec.empty, ...");
    return NULL;
}

/* ---------------------------------------------------------------------------------------- */
/* Attributes                                                                               */
/* ---------------------------------------------------------------------------------------- */

static PyObject *shape_tuple(fc_shape s) {
    PyObject *t = PyTuple_New(s.ndim);
    for (int i = 0; t && i < s.ndim; i++) {
        PyObject *d = PyLong_FromLongLong(s.dim[i]);
        if (!d || PyTuple_SetItem(t, i, d)) {
            Py_DECREF(t);
            return NULL;
        }
    }
    return t;
}

static PyObject *get_shape(PyObject *self, void *c) {
    (void)c;
    return shape_tuple(fc_array_shape(pf_arr(self)));
}
static PyObject *get_ndim(PyObject *self, void *c) {
    (void)c;
    return PyLong_FromLong(fc_array_ndim(pf_arr(self)));
}
static PyObject *get_size(PyObject *self, void *c) {
    (void)c;
    return PyLong_FromLongLong(fc_array_size(pf_arr(self)));
}
static PyObject *get_code(PyObject *self, void *c) {
    (void)c;
    return PyLong_FromLong(fc_array_dtype(pf_arr(self)));
}
static PyObject *get_ctx(PyObject *self, void *c) {
    (void)c;
    return Py_NewRef(pf_arr_ctx(self));
}
static PyObject *get_T(PyObject *self, void *c) {
    (void)c;
    if (pf_trace_use(self)) return NULL;
    return pf_wrap(fc_transpose(pf_arr(self)), pf_arr_ctx(self));
}
/* a.mT: the last two axes swapped (the array API's matrix transpose). */
static PyObject *get_mT(PyObject *self, void *c) {
    (void)c;
    int nd = fc_array_ndim(pf_arr(self));
    if (pf_trace_use(self)) return NULL;
    if (nd < 2) {
        PyErr_SetString(PyExc_ValueError, "mT: the array must have at least 2 dimensions");
        return NULL;
    }
    fc_axes perm = {nd, {0}};
    for (int i = 0; i < nd; i++) perm.axis[i] = i;
    perm.axis[nd - 2] = nd - 1;
    perm.axis[nd - 1] = nd - 2;
    return pf_wrap(fc_permute(pf_arr(self), perm), pf_arr_ctx(self));
}

static PyGetSetDef array_getset[] = {
    {"shape", get_shape, NULL, "The extents, a tuple of ints.", NULL},
    {"ndim", get_ndim, NULL, "The number of dimensions.", NULL},
    {"size", get_size, NULL, "The number of elements.", NULL},
    {"_code", get_code, NULL, "fusec's dtype code (fc_dtype).", NULL},
    {"context", get_ctx, NULL, "The fusec.Context the array belongs to.", NULL},
    {"T", get_T, NULL, "The array with its axes reversed.", NULL},
    {"mT", get_mT, NULL, "The array with its last two axes swapped.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

/* ---------------------------------------------------------------------------------------- */
/* Operators                                                                                */
/* ---------------------------------------------------------------------------------------- */

typedef fc_array *(*binary_fn)(fc_array *, fc_array *);

/* a OP b for the number slots, both orders: one of a, b is an array. NotImplemented when the
 * other does not convert (Python then tries the other side, or raises TypeError). */
static PyObject *binary(PyObject *a, PyObject *b, binary_fn fn) {
    PyObject *ctx = pf_is_array(a) ? pf_arr_ctx(a) : pf_arr_ctx(b);
    fc_array *x, *y;
    int rc = pf_operand(a, ctx, &x);
    if (rc <= 0) return rc < 0 ? NULL : Py_NewRef(Py_NotImplemented);
    rc = pf_operand(b, ctx, &y);
    if (rc <= 0) {
        fc_release(x);
        return rc < 0 ? NULL : Py_NewRef(Py_NotImplemented);
    }
    PyObject *r = pf_wrap(fn(x, y), ctx);
    fc_release(x);
    fc_release(y);
    return r;
}

/* NumPy's kinds in same_kind order: a cast is same_kind when it does not go up this list. */
static int kind_rank(fc_dtype d) {
    if (d == FC_BOOL) return 0;
    if (d >= FC_U8 && d <= FC_U64) return 1;
    if (d >= FC_I8 && d <= FC_I64) return 2;
    if (d >= FC_F16 && d <= FC_F64) return 3;
    return 4;
}

/* a OP= b: the result, cast back to a's dtype where NumPy's same_kind rule allows (else
 * TypeError, as NumPy's UFuncTypeError), becomes a's value; a is returned. */
static PyObject *inplace(PyObject *a, PyObject *b, binary_fn fn) {
    if (!pf_is_array(a)) return Py_NewRef(Py_NotImplemented);
    if (pf_trace_mutate(a)) return NULL;
    PyObject *r = binary(a, b, fn);
    if (!r || r == Py_NotImplemented) return r;
    fc_dtype have = fc_array_dtype(pf_arr(a)), got = fc_array_dtype(pf_arr(r));
    fc_array *v = fc_keep(pf_arr(r));
    Py_DECREF(r);
    if (got != have) {
        if (kind_rank(got) > kind_rank(have)) {
            fc_release(v);
            PyErr_Format(PyExc_TypeError,
                         "Cannot cast the result of an in-place operation from %s to %s with "
                         "casting rule 'same_kind'",
                         fc_dtype_name(got), fc_dtype_name(have));
            return NULL;
        }
        fc_array *c = fc_cast(v, have);
        fc_release(v);
        v = c;
        fc_status st = fc_array_status(v);
        if (st != FC_OK) {
            pf_raise(st, fc_array_errmsg(v));
            fc_release(v);
            return NULL;
        }
    }
    /* The shape may not grow: a (3,) += (2, 3) is NumPy's error too. */
    fc_shape s0 = fc_array_shape(pf_arr(a)), s1 = fc_array_shape(v);
    int same = s0.ndim == s1.ndim;
    for (int i = 0; same && i < s0.ndim; i++) same = s0.dim[i] == s1.dim[i];
    if (!same) {
        fc_release(v);
        PyErr_SetString(PyExc_ValueError, "non-broadcastable output operand: an in-place "
                                          "operation cannot change the array's shape");
        return NULL;
    }
    fc_release(pf_arr(a));
    ((pf_array_object *)a)->a = v;
    return Py_NewRef(a);
}

#define PF_BINARY_SLOTS(X)                                                                       \
    X(add, fc_add) X(subtract, fc_sub) X(multiply, fc_mul) X(true_divide, fc_div)                \
    X(floor_divide, fc_floordiv) X(remainder, fc_mod) X(and, fc_bitwise_and)                     \
    X(or, fc_bitwise_or) X(xor, fc_bitwise_xor) X(lshift, fc_left_shift)                         \
    X(rshift, fc_right_shift) X(matrix_multiply, fc_matmul)

#define DEF_SLOT(name, fn)                                                                       \
    static PyObject *nb_##name(PyObject *a, PyObject *b) { return binary(a, b, fn); }            \
    static PyObject *nb_inplace_##name(PyObject *a, PyObject *b) { return inplace(a, b, fn); }
PF_BINARY_SLOTS(DEF_SLOT)
#undef DEF_SLOT

static PyObject *nb_power(PyObject *a, PyObject *b, PyObject *mod) {
    if (mod != Py_None) return Py_NewRef(Py_NotImplemented);
    return binary(a, b, fc_pow);
}
static PyObject *nb_inplace_power(PyObject *a, PyObject *b, PyObject *mod) {
    if (mod != Py_None) return Py_NewRef(Py_NotImplemented);
    return inplace(a, b, fc_pow);
}

#define PF_UNARY_SLOTS(X)                                                                        \
    X(negative, fc_negative) X(positive, fc_positive) X(absolute, fc_abs) X(invert, fc_bitwise_not)
#define DEF_UNARY(name, fn)                                                                      \
    static PyObject *nb_##name(PyObject *a) {                                                    \
        return pf_trace_use(a) ? NULL : pf_wrap(fn(pf_arr(a)), pf_arr_ctx(a));                   \
    }
PF_UNARY_SLOTS(DEF_UNARY)
#undef DEF_UNARY

static PyObject *richcompare(PyObject *a, PyObject *b, int op) {
    static const binary_fn fns[] = {
        [Py_LT] = fc_less,  [Py_LE] = fc_less_equal, [Py_EQ] = fc_equal,
        [Py_NE] = fc_not_equal, [Py_GT] = fc_greater, [Py_GE] = fc_greater_equal,
    };
    if (op < 0 || op > Py_GE) return Py_NewRef(Py_NotImplemented);
    return binary(a, b, fns[op]);
}

/* ---------------------------------------------------------------------------------------- */
/* Indexing                                                                                 */
/* ---------------------------------------------------------------------------------------- */

#define PF_MAX_INDEX 32

/* The entries of a key; `held` keeps the arrays made for index entries (lists, NumPy arrays,
 * bools) alive until the call. */
typedef struct {
    int n;
    fc_idx idx[PF_MAX_INDEX];
    PyObject *held[PF_MAX_INDEX];
} key_entries;

static void key_clear(key_entries *k) {
    for (int i = 0; i < k->n; i++) Py_CLEAR(k->held[i]);
}

static int key_entry(PyObject *e, fc_idx *out, PyObject **held) {
    *held = NULL;
    out->array = NULL;
    out->start = out->stop = out->step = 0;
    if (e == Py_None) {
        out->kind = FC_IDX_NEWAXIS;
        return 0;
    }
    if (e == Py_Ellipsis) {
        out->kind = FC_IDX_ELLIPSIS;
        return 0;
    }
    if (PySlice_Check(e)) {
        Py_ssize_t start, stop, step;
        if (PySlice_Unpack(e, &start, &stop, &step)) return -1;
        /* PySlice_Unpack gives omitted bounds as PY_SSIZE_T_MIN / MAX, which clip as omitted
         * bounds do (PY_SSIZE_T_MIN is FC_NIL on 64-bit hosts). */
        out->kind = FC_IDX_SLICE;
        out->start = start;
        out->stop = stop;
        out->step = step;
        return 0;
    }
    if (pf_is_array(e)) {
        if (pf_trace_use(e)) return -1;
        out->kind = FC_IDX_ARRAY;
        out->array = pf_arr(e);
        return 0;
    }
    if (PyLong_Check(e) && !PyBool_Check(e)) {
        out->kind = FC_IDX_INT;
        return pf_int64(e, &out->start);
    }
    if (PyIndex_Check(e)) { /* NumPy integers; a NumPy array refuses and is an array below */
        out->kind = FC_IDX_INT;
        if (!pf_int64(e, &out->start)) return 0;
        if (!PyErr_ExceptionMatches(PyExc_TypeError)) return -1;
        PyErr_Clear();
    }
    if (PyUnicode_Check(e) || PyFloat_Check(e) || PyBytes_Check(e)) {
        PyErr_SetString(PyExc_IndexError,
                        "only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) "
                        "and integer or boolean arrays are valid indices");
        return -1;
    }
    /* Lists, NumPy arrays, bools: as arrays (fusec.asarray). */
    PyObject *a = pf_asarray(e);
    if (!a) return -1;
    if (!pf_is_array(a)) {
        Py_DECREF(a);
        PyErr_SetString(PyExc_IndexError, "an index entry that is not an array");
        return -1;
    }
    *held = a;
    out->kind = FC_IDX_ARRAY;
    out->array = pf_arr(a);
    return 0;
}

static int parse_key(PyObject *key, key_entries *k) {
    k->n = 0;
    if (!PyTuple_Check(key)) {
        k->n = 1;
        if (key_entry(key, &k->idx[0], &k->held[0])) {
            k->n = 0;
            return -1;
        }
        return 0;
    }
    Py_ssize_t n = PyTuple_Size(key);
    if (n > PF_MAX_INDEX) {
        PyErr_SetString(PyExc_IndexError, "too many indices for array");
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (key_entry(PyTuple_GetItem(key, i), &k->idx[i], &k->held[i])) {
            key_clear(k);
            return -1;
        }
        k->n = (int)i + 1;
    }
    return 0;
}

static PyObject *subscript(PyObject *self, PyObject *key) {
    key_entries k;
    if (pf_trace_use(self) || parse_key(key, &k)) return NULL;
    PyObject *r = pf_wrap(fc_index(pf_arr(self), k.n, k.idx), pf_arr_ctx(self));
    key_clear(&k);
    return r;
}

static int ass_subscript(PyObject *self, PyObject *key, PyObject *value) {
    if (!value) {
        PyErr_SetString(PyExc_ValueError, "cannot delete array elements");
        return -1;
    }
    if (pf_trace_mutate(self)) return -1;
    fc_array *v;
    int rc = pf_operand(value, pf_arr_ctx(self), &v);
    if (rc <= 0) {
        if (rc == 0) PyErr_SetString(PyExc_TypeError, "setitem: the value is not array-like");
        return -1;
    }
    key_entries k;
    if (parse_key(key, &k)) {
        fc_release(v);
        return -1;
    }
    fc_array *r = fc_setitem(pf_arr(self), k.n, k.idx, v);
    key_clear(&k);
    fc_release(v);
    fc_status st = r ? fc_array_status(r) : FC_ERR_NOMEM;
    if (st != FC_OK) {
        pf_raise(st, r ? fc_array_errmsg(r) : NULL);
        fc_release(r);
        return -1;
    }
    fc_release(pf_arr(self));
    ((pf_array_object *)self)->a = r;
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* The type                                                                                 */
/* ---------------------------------------------------------------------------------------- */

#define SLOT_PAIR(name, fn) {Py_nb_##name, nb_##name}, {Py_nb_inplace_##name, nb_inplace_##name},
#define SLOT_ONE(name, fn) {Py_nb_##name, nb_##name},

static PyType_Slot array_slots[] = {
    {Py_tp_doc, "The C base of fusec.ndarray."},
    {Py_tp_new, array_new},
    {Py_tp_dealloc, array_dealloc},
    {Py_tp_getset, array_getset},
    {Py_tp_richcompare, richcompare},
    {Py_tp_hash, PyObject_HashNotImplemented},
    {Py_mp_subscript, subscript},
    {Py_mp_ass_subscript, ass_subscript},
    {Py_nb_power, nb_power},
    {Py_nb_inplace_power, nb_inplace_power},
    PF_BINARY_SLOTS(SLOT_PAIR) PF_UNARY_SLOTS(SLOT_ONE){0, NULL},
};

static PyType_Spec array_spec = {"fusec._fusec._Array", sizeof(pf_array_object), 0,
                                 Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, array_slots};

int pf_array_init_type(PyObject *module) {
    pf_array_base = (PyTypeObject *)PyType_FromSpec(&array_spec);
    if (!pf_array_base) return -1;
    pf_array_type = (PyTypeObject *)Py_NewRef((PyObject *)pf_array_base);
    return PyModule_AddObjectRef(module, "_Array", (PyObject *)pf_array_base);
}
