/*
 * interop.c - DLPack and __cuda_array_interface__ for the Python package, over the C interop
 * (include/fusec_dlpack.h, fc_array_export).
 *
 * Exports. _dlpack(a, stream, versioned) hands out a PyCapsule named "dltensor" or
 * "dltensor_versioned" holding fusec's DLManagedTensor; a consumer renames it "used_..." when
 * it takes ownership, so the capsule's destructor calls the deleter only for a capsule nobody
 * consumed (the protocol's rule). _export(a) backs __cuda_array_interface__: a capsule owning
 * an fc_export hold (released when the capsule goes) and the interface's dict; the Python
 * array keeps the capsules, so the memory stays valid while the array object lives, as the
 * interface asks of its producer.
 *
 * Streams. The DLPack `stream` argument is the consumer's CUstream as an integer (None and 1:
 * the legacy default stream, 2: the per-thread one, -1: no ordering wanted); it is wrapped
 * (fc_stream_wrap) for the export, which orders the consumer's stream after the work that
 * writes the value, and the wrapper is let go at once (which waits for the work queued on the
 * consumer's stream so far: correct, if not the cheapest). On the host backend streams mean
 * nothing and are ignored.
 *
 * Imports. _from_dlpack(capsule, ctx) takes a producer's capsule: on success the capsule is
 * renamed "used_..." and fusec owns the tensor (its deleter runs when fusec's last reference
 * goes); on failure the capsule keeps it, and its own destructor frees it.
 */
#include "pyfusec.h"

#include <fusec_dlpack.h>

#include <string.h>

static const char *const NAME_PLAIN = "dltensor", *const NAME_VERSIONED = "dltensor_versioned";
static const char *const USED_PLAIN = "used_dltensor",
                         *const USED_VERSIONED = "used_dltensor_versioned";

static void plain_capsule_free(PyObject *cap) {
    if (!PyCapsule_IsValid(cap, NAME_PLAIN)) return; /* consumed */
    DLManagedTensor *t = PyCapsule_GetPointer(cap, NAME_PLAIN);
    if (t && t->deleter) t->deleter(t);
}

static void versioned_capsule_free(PyObject *cap) {
    if (!PyCapsule_IsValid(cap, NAME_VERSIONED)) return;
    fc_dlpack_versioned *t = PyCapsule_GetPointer(cap, NAME_VERSIONED);
    if (t && t->deleter) t->deleter(t);
}

/* The stream argument as a wrapped fc_stream (NULL: none wanted, or the host backend). */
static int consumer_stream(fc_ctx *ctx, PyObject *arg, fc_stream **out) {
    *out = NULL;
    if (fc_ctx_backend(ctx) != FC_BACKEND_CUDA) return 0;
    long long handle = 1; /* None: the legacy default stream */
    if (arg != Py_None) {
        handle = PyLong_AsLongLong(arg);
        if (handle == -1 && PyErr_Occurred()) return -1;
    }
    if (handle == -1) return 0; /* the consumer orders the work itself */
    if (handle == 0) {
        PyErr_SetString(PyExc_ValueError, "fusec: DLPack stream 0 is ambiguous for CUDA; pass "
                                          "1 (the legacy default stream) or 2 (per-thread)");
        return -1;
    }
    fc_status st = fc_stream_wrap(ctx, (void *)(intptr_t)handle, out);
    if (st != FC_OK) {
        pf_raise(st, fc_errmsg(ctx));
        return -1;
    }
    return 0;
}

/* _dlpack(a, stream, versioned) -> capsule */
static PyObject *py_dlpack(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *arr, *stream_arg;
    int versioned;
    if (!PyArg_ParseTuple(args, "O!Op", pf_array_base, &arr, &stream_arg, &versioned))
        return NULL;
    fc_ctx *ctx = pf_fc_ctx(pf_arr_ctx(arr));
    fc_stream *stream;
    if (consumer_stream(ctx, stream_arg, &stream)) return NULL;
    fc_status st;
    PyObject *cap = NULL;
    if (versioned) {
        fc_dlpack_versioned *t = NULL;
        st = fc_dlpack_export_versioned(pf_arr(arr), stream, 0, &t);
        if (st == FC_OK && !(cap = PyCapsule_New(t, NAME_VERSIONED, versioned_capsule_free)))
            t->deleter(t);
    } else {
        DLManagedTensor *t = NULL;
        st = fc_dlpack_export(pf_arr(arr), stream, &t);
        if (st == FC_OK && !(cap = PyCapsule_New(t, NAME_PLAIN, plain_capsule_free)))
            t->deleter(t);
    }
    if (st != FC_OK) pf_raise(st, fc_errmsg(ctx));
    if (stream) fc_stream_destroy(stream);
    return cap;
}

/* _dlpack_device(a) -> (device_type, device_id) */
static PyObject *py_dlpack_device(PyObject *m, PyObject *arr) {
    (void)m;
    if (!pf_is_array(arr)) {
        PyErr_SetString(PyExc_TypeError, "fusec: _dlpack_device takes a fusec array");
        return NULL;
    }
    fc_ctx *ctx = pf_fc_ctx(pf_arr_ctx(arr));
    DLDevice d;
    fc_status st = fc_dlpack_device(ctx, &d);
    if (st != FC_OK) return pf_raise(st, fc_errmsg(ctx));
    return Py_BuildValue("(ii)", (int)d.device_type, (int)d.device_id);
}

/* _from_dlpack(capsule, ctx) -> array */
static PyObject *py_from_dlpack(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *cap, *ctx_obj;
    if (!PyArg_ParseTuple(args, "OO!", &cap, pf_ctx_type, &ctx_obj)) return NULL;
    fc_ctx *ctx = pf_fc_ctx(ctx_obj);
    fc_array *r;
    if (PyCapsule_IsValid(cap, NAME_VERSIONED)) {
        fc_dlpack_versioned *t = PyCapsule_GetPointer(cap, NAME_VERSIONED);
        r = fc_dlpack_import_versioned(ctx, t, NULL);
        if (r && fc_array_status(r) == FC_OK && PyCapsule_SetName(cap, USED_VERSIONED)) {
            fc_release(r);
            return NULL;
        }
    } else if (PyCapsule_IsValid(cap, NAME_PLAIN)) {
        DLManagedTensor *t = PyCapsule_GetPointer(cap, NAME_PLAIN);
        r = fc_dlpack_import(ctx, t, NULL);
        if (r && fc_array_status(r) == FC_OK && PyCapsule_SetName(cap, USED_PLAIN)) {
            fc_release(r);
            return NULL;
        }
    } else {
        PyErr_SetString(PyExc_TypeError, "fusec.from_dlpack: not an unconsumed DLPack capsule "
                                         "('dltensor' or 'dltensor_versioned')");
        return NULL;
    }
    return pf_wrap(r, ctx_obj); /* a failed import raises its error; the capsule keeps t */
}

/* ---- __cuda_array_interface__ ------------------------------------------------------------- */

static const char *const EXPORT_NAME = "fusec.export";

static void export_capsule_free(PyObject *cap) {
    fc_export *e = PyCapsule_GetPointer(cap, EXPORT_NAME);
    if (!e) return;
    fc_export_release(e);
    PyMem_Free(e);
}

/* typestr of NumPy's array interface ('<f4', '|b1', ...), or NULL for a dtype it lacks. */
static const char *typestr(fc_dtype t) {
    switch (t) {
    case FC_BOOL: return "|b1";
    case FC_I8: return "|i1";
    case FC_I16: return "<i2";
    case FC_I32: return "<i4";
    case FC_I64: return "<i8";
    case FC_U8: return "|u1";
    case FC_U16: return "<u2";
    case FC_U32: return "<u4";
    case FC_U64: return "<u8";
    case FC_F16: return "<f2";
    case FC_F32: return "<f4";
    case FC_F64: return "<f8";
    case FC_C64: return "<c8";
    case FC_C128: return "<c16";
    default: return NULL; /* bf16 has no typestr NumPy or CuPy read */
    }
}

/* _export(a) -> (holder capsule, __cuda_array_interface__ dict). Version 3, strides None
 * (fusec's values are compact), the stream the value was written on so the consumer can order
 * after it. The CUDA backend only: an AttributeError elsewhere, so hasattr() says no. */
static PyObject *py_export(PyObject *m, PyObject *arr) {
    (void)m;
    if (!pf_is_array(arr)) {
        PyErr_SetString(PyExc_TypeError, "fusec: _export takes a fusec array");
        return NULL;
    }
    fc_ctx *ctx = pf_fc_ctx(pf_arr_ctx(arr));
    if (fc_ctx_backend(ctx) != FC_BACKEND_CUDA) {
        PyErr_SetString(PyExc_AttributeError, "__cuda_array_interface__: the array lives on "
                                              "the host backend, not on a CUDA device");
        return NULL;
    }
    const char *ts = typestr(fc_array_dtype(pf_arr(arr)));
    if (!ts) {
        PyErr_Format(PyExc_AttributeError, "__cuda_array_interface__: %s has no typestr",
                     fc_dtype_name(fc_array_dtype(pf_arr(arr))));
        return NULL;
    }
    fc_export *e = PyMem_Calloc(1, sizeof *e);
    if (!e) return PyErr_NoMemory();
    fc_status st = fc_array_export(pf_arr(arr), NULL, e);
    if (st != FC_OK) {
        PyMem_Free(e);
        return pf_raise(st, fc_errmsg(ctx));
    }
    PyObject *holder = PyCapsule_New(e, EXPORT_NAME, export_capsule_free);
    if (!holder) {
        fc_export_release(e);
        PyMem_Free(e);
        return NULL;
    }
    PyObject *shape = PyTuple_New(e->ndim);
    for (int d = 0; shape && d < e->ndim; d++)
        PyTuple_SetItem(shape, d, PyLong_FromLongLong(e->shape[d]));
    /* fc_array_export(NULL stream) waited for the work that writes the value: no stream */
    PyObject *dict = shape ? Py_BuildValue("{s:O,s:s,s:(KO),s:O,s:i,s:O}", "shape", shape,
                                           "typestr", ts, "data",
                                           (unsigned long long)(uintptr_t)e->data, Py_False,
                                           "strides", Py_None, "version", 3, "stream", Py_None)
                           : NULL;
    Py_XDECREF(shape);
    if (!dict) {
        Py_DECREF(holder);
        return NULL;
    }
    PyObject *r = PyTuple_Pack(2, holder, dict);
    Py_DECREF(holder);
    Py_DECREF(dict);
    return r;
}

/* _consumer_stream(ctx, device_type) -> the `stream` to hand a producer's __dlpack__: the
 * CUstream fusec computes on as an integer (1 for the legacy default stream, whose handle is
 * 0), or None where the producer's memory is not CUDA device memory or fusec runs on the host. */
static PyObject *py_consumer_stream(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *ctx_obj;
    int kind;
    if (!PyArg_ParseTuple(args, "O!i", pf_ctx_type, &ctx_obj, &kind)) return NULL;
    fc_ctx *ctx = pf_fc_ctx(ctx_obj);
    if (fc_ctx_backend(ctx) != FC_BACKEND_CUDA || kind != kDLCUDA) Py_RETURN_NONE;
    void *handle = NULL;
    fc_status st = fc_stream_get_handle(ctx, NULL, &handle);
    if (st != FC_OK) return pf_raise(st, fc_errmsg(ctx));
    return PyLong_FromLongLong(handle ? (long long)(intptr_t)handle : 1);
}

/* _copy_to(a, ctx) -> a's value in another context (fc_copy_to: device to device, or through
 * the host between backends) */
static PyObject *py_copy_to(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *arr, *ctx_obj;
    if (!PyArg_ParseTuple(args, "O!O!", pf_array_base, &arr, pf_ctx_type, &ctx_obj)) return NULL;
    return pf_wrap(fc_copy_to(pf_arr(arr), pf_fc_ctx(ctx_obj)), ctx_obj);
}

static PyMethodDef interop_methods[] = {
    {"_copy_to", py_copy_to, METH_VARARGS, "_copy_to(a, ctx): a's value in context ctx."},
    {"_consumer_stream", py_consumer_stream, METH_VARARGS,
     "_consumer_stream(ctx, device_type): the stream a DLPack producer should order before."},
    {"_dlpack", py_dlpack, METH_VARARGS,
     "_dlpack(a, stream, versioned): a DLPack capsule of a's value (zero-copy)."},
    {"_dlpack_device", py_dlpack_device, METH_O, "_dlpack_device(a): (device_type, id)."},
    {"_from_dlpack", py_from_dlpack, METH_VARARGS,
     "_from_dlpack(capsule, ctx): an array over a producer's DLPack capsule (zero-copy)."},
    {"_export", py_export, METH_O,
     "_export(a): (holder, __cuda_array_interface__ dict); keep the holder while the memory "
     "is used."},
    {NULL, NULL, 0, NULL},
};

int pf_interop_add(PyObject *module) { return PyModule_AddFunctions(module, interop_methods); }
