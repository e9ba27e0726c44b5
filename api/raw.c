/*
 * api/raw.c - raw modules (cupy.RawModule / RawKernel): compile through compile/raw.c, load
 * and launch through the backend table.
 *
 * Values are immutable, so a kernel never writes an array a user or a lazy expression holds:
 * an OUT argument becomes a new DATA array that the backend fills with a copy of the given
 * array's value before the launch, and that array is what the kernel writes and what the call
 * returns.
 */
#include "api.h"
#include "raw.h"

#include <stdio.h>
#include <string.h>

struct fc_module {
    fc_ctx *ctx;
    void *handle; /* the backend's */
    int nnames;
    char *names[FCK_RAW_MAX_NAMES];   /* the name expressions, and */
    char *lowered[FCK_RAW_MAX_NAMES]; /* their lowered names */
    struct fc_module *next, *prev;
};

static fc_status check_texts(fc_ctx *ctx, const char *source, int noptions,
                             const char *const *options, int nnames, const char *const *names) {
    if (!source) return fcg_error(ctx, FC_ERR_NULL, "raw module: the source is NULL");
    if (noptions < 0 || (noptions && !options))
        return fcg_error(ctx, FC_ERR_NULL, "raw module: options missing");
    if (nnames < 0 || (nnames && !names))
        return fcg_error(ctx, FC_ERR_NULL, "raw module: name expressions missing");
    for (int i = 0; i < noptions; i++)
        if (!options[i]) return fcg_error(ctx, FC_ERR_NULL, "raw module: option %d is NULL", i);
    for (int i = 0; i < nnames; i++)
        if (!names[i] || !names[i][0])
            return fcg_error(ctx, FC_ERR_NULL, "raw module: name expression %d is empty", i);
    return FC_OK;
}

fc_status fc_module_compile(fc_ctx *ctx, const char *source, int noptions,
                            const char *const *options, int nnames,
                            const char *const *name_expressions, const char *arch) {
    if (!ctx) return FC_ERR_NULL;
    fc_status st = check_texts(ctx, source, noptions, options, nnames, name_expressions);
    if (st != FC_OK) return st;
    if (!arch) return fcg_error(ctx, FC_ERR_NULL, "raw module: no arch");
    fck_raw_binary b;
    st = fck_raw_compile(ctx, source, options, noptions, name_expressions, nnames, arch, &b);
    if (st == FC_OK) fck_raw_binary_free(ctx, &b);
    return st;
}

static void module_free(fc_module *m) {
    fc_ctx *ctx = m->ctx;
    for (int i = 0; i < m->nnames; i++) {
        fcg_strfree(ctx, m->names[i]);
        fcg_strfree(ctx, m->lowered[i]);
    }
    fcg_free(ctx, m, sizeof *m);
}

fc_status fc_module_create(fc_ctx *ctx, const char *source, int noptions,
                           const char *const *options, int nnames,
                           const char *const *name_expressions, fc_module **out) {
    if (!ctx || !out) return FC_ERR_NULL;
    *out = NULL;
    fc_status st = check_texts(ctx, source, noptions, options, nnames, name_expressions);
    if (st != FC_OK) return st;
    const char *arch = ctx->be->arch(ctx);
    if (!arch) /* the backend's own message: no device to run CUDA C on */
        return ctx->be->module_load(ctx, NULL, 0, &(void *){NULL});
    fck_raw_binary b;
    if ((st = fck_raw_compile(ctx, source, options, noptions, name_expressions, nnames, arch,
                              &b)) != FC_OK)
        return st;
    fc_module *m = fcg_calloc(ctx, sizeof *m);
    if (!m) {
        fck_raw_binary_free(ctx, &b);
        return fcg_error(ctx, FC_ERR_NOMEM, "raw module: out of memory");
    }
    m->ctx = ctx;
    for (int i = 0; i < nnames; i++) {
        m->names[i] = fcg_strdup(ctx, name_expressions[i]);
        m->lowered[i] = b.lowered[i];
        b.lowered[i] = NULL;
        m->nnames = i + 1;
        if (!m->names[i]) st = fcg_error(ctx, FC_ERR_NOMEM, "raw module: out of memory");
    }
    if (st == FC_OK) st = ctx->be->module_load(ctx, b.cubin, b.size, &m->handle);
    fck_raw_binary_free(ctx, &b);
    if (st != FC_OK) {
        module_free(m);
        return st;
    }
    m->next = ctx->modules;
    if (ctx->modules) ctx->modules->prev = m;
    ctx->modules = m;
    *out = m;
    return FC_OK;
}

void fc_module_destroy(fc_module *m) {
    if (!m) return;
    fc_ctx *ctx = m->ctx;
    if (m->prev) m->prev->next = m->next;
    else ctx->modules = m->next;
    if (m->next) m->next->prev = m->prev;
    ctx->be->module_unload(ctx, m->handle);
    module_free(m);
}

void fca_modules_destroy(fc_ctx *ctx) {
    while (ctx->modules) fc_module_destroy(ctx->modules);
}

/* A scalar argument's bytes in its dtype's C layout (f16 / bf16: their bits). */
static fc_status scalar_bytes(fc_ctx *ctx, const char *name, int i, const fc_arg *a,
                              unsigned char *buf, size_t *size) {
    fc_dtype t = a->dtype;
    *size = fc_dtype_size(t);
    if (*size == 0)
        return fcg_error(ctx, FC_ERR_INVALID, "raw kernel '%s': argument %d: not a dtype", name, i);
    union {
        bool b;
        int8_t i8;
        int16_t i16;
        int32_t i32;
        int64_t i64;
        uint16_t h;
        float f[2];
        double d[2];
    } v;
    memset(&v, 0, sizeof v);
    switch (t) {
    case FC_BOOL: v.b = a->i != 0; break;
    case FC_I8: case FC_U8: v.i8 = (int8_t)a->i; break;
    case FC_I16: case FC_U16: v.i16 = (int16_t)a->i; break;
    case FC_I32: case FC_U32: v.i32 = (int32_t)a->i; break;
    case FC_I64: case FC_U64: v.i64 = a->i; break;
    case FC_F16: v.h = fcg_f32_to_f16((float)a->re); break;
    case FC_BF16: v.h = fcg_f32_to_bf16((float)a->re); break;
    case FC_F32: v.f[0] = (float)a->re; break;
    case FC_F64: v.d[0] = a->re; break;
    case FC_C64: v.f[0] = (float)a->re, v.f[1] = (float)a->im; break;
    case FC_C128: v.d[0] = a->re, v.d[1] = a->im; break;
    case FC_DTYPE_COUNT: break;
    }
    memcpy(buf, &v, *size);
    return FC_OK;
}

#define RAW_MAX_ARGS 64

fc_status fc_module_launch(fc_module *m, const char *name, const unsigned grid[3],
                           const unsigned block[3], size_t shared_bytes, fc_stream *stream,
                           int nargs, const fc_arg *args, fc_array **outs) {
    if (!m) return FC_ERR_NULL;
    fc_ctx *ctx = m->ctx;
    if (!name || !grid || !block || (nargs > 0 && !args))
        return fcg_error(ctx, FC_ERR_NULL, "raw kernel: NULL argument");
    if (nargs < 0 || nargs > RAW_MAX_ARGS)
        return fcg_error(ctx, FC_ERR_INVALID, "raw kernel '%s': %d arguments (at most %d)", name,
                         nargs, RAW_MAX_ARGS);
    for (int d = 0; d < 3; d++)
        if (grid[d] == 0 || block[d] == 0)
            return fcg_error(ctx, FC_ERR_INVALID, "raw kernel '%s': grid and block extents must "
                             "be positive (grid %u %u %u, block %u %u %u)", name, grid[0],
                             grid[1], grid[2], block[0], block[1], block[2]);
    const char *symbol = name;
    for (int i = 0; i < m->nnames; i++)
        if (strcmp(m->names[i], name) == 0) symbol = m->lowered[i];
    /* Arrays: the inputs' values first (the outputs' sources are read too). */
    fc_array *need[RAW_MAX_ARGS];
    int nneed = 0, nout = 0;
    for (int i = 0; i < nargs; i++) {
        const fc_arg *a = &args[i];
        if (a->kind != FC_ARG_IN && a->kind != FC_ARG_OUT) continue;
        if (!a->array)
            return fcg_error(ctx, FC_ERR_NULL, "raw kernel '%s': argument %d: array is NULL", name, i);
        if (a->array->ctx != ctx)
            return fcg_error(ctx, FC_ERR_CONTEXT, "raw kernel '%s': argument %d belongs to another "
                             "context", name, i);
        if (a->array->status != FC_OK)
            return fcg_error(ctx, a->array->status, "raw kernel '%s': argument %d: %s", name, i,
                             a->array->errmsg ? a->array->errmsg : fc_strerror(a->array->status));
        if (a->kind == FC_ARG_OUT) nout++;
        bool dup_need = false;
        for (int j = 0; j < nneed; j++) dup_need |= need[j] == a->array;
        if (!dup_need && !fcg_has_value(a->array)) need[nneed++] = a->array;
    }
    if (nout && !outs) return fcg_error(ctx, FC_ERR_NULL, "raw kernel '%s': outs is NULL", name);
    for (int j = 0; j < nout; j++) outs[j] = NULL;
    fc_status st = nneed ? fca_eval_on(ctx, need, nneed, stream) : FC_OK;
    if (st != FC_OK) return st;
    fcb_raw_arg ra[RAW_MAX_ARGS];
    unsigned char scal[RAW_MAX_ARGS][16];
    fc_array *made[RAW_MAX_ARGS];
    int nmade = 0;
    for (int i = 0; i < nargs && st == FC_OK; i++) {
        const fc_arg *a = &args[i];
        memset(&ra[i], 0, sizeof ra[i]);
        switch (a->kind) {
        case FC_ARG_IN:
            /* a host backend value (never here: module_create refused) would have no dev */
            ra[i].kind = FCB_RAW_READ;
            ra[i].array = a->array;
            break;
        case FC_ARG_OUT: {
            fc_shape sh = fc_array_shape(a->array);
            fc_array *o = fcg_node(ctx, FCG_OP_DATA, (fc_dtype)a->array->dtype,
                                   (fc_dtype)a->array->dtype, false, sh.ndim, sh.dim, 0, NULL, NULL);
            if (!o) {
                st = fcg_error(ctx, FC_ERR_NOMEM, "raw kernel '%s': out of memory", name);
                break;
            }
            made[nmade++] = o;
            ra[i].kind = FCB_RAW_WRITE;
            ra[i].array = o;
            ra[i].src = a->array;
            break;
        }
        case FC_ARG_SCALAR:
            ra[i].kind = FCB_RAW_BYTES;
            st = scalar_bytes(ctx, name, i, a, scal[i], &ra[i].size);
            ra[i].bytes = scal[i];
            break;
        case FC_ARG_BYTES:
            if (!a->bytes || a->size == 0)
                st = fcg_error(ctx, FC_ERR_INVALID, "raw kernel '%s': argument %d: no bytes", name, i);
            ra[i].kind = FCB_RAW_BYTES;
            ra[i].bytes = a->bytes;
            ra[i].size = a->size;
            break;
        default:
            st = fcg_error(ctx, FC_ERR_INVALID, "raw kernel '%s': argument %d has kind %d", name,
                           i, (int)a->kind);
        }
    }
    if (st == FC_OK)
        st = ctx->be->raw_launch(ctx, m->handle, symbol, grid, block, shared_bytes, stream, nargs,
                                 ra);
    for (int j = 0; j < nmade; j++) {
        if (st == FC_OK) {
            outs[j] = fcg_ret(ctx, made[j]);
        } else {
            fcg_release(made[j]);
        }
    }
    return st;
}
