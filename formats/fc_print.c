/*
 * formats/fc_print.c - canonical .fc text for a graph (fc_program_print).
 *
 * One statement per node, in DFS post-order from the outputs in order, children in input
 * order; names come from positions alone (x0.. for leaves holding data or program inputs,
 * t0.. for other nodes, the output names for outputs), so the same graph always prints the
 * same bytes. Weak scalars are written inline as literals. Every op is written in a form the
 * parser reads back to the same node (same structural hash): tests/test_fc.c checks it.
 * User kernels: each definition is declared once, before its first call, bound to a variable
 * named after the kernel; a call of a kernel with several outputs unpacks all of them, so its
 * other outputs (the same node the parser will make again) get their names there.
 *
 * The walk is iterative (explicit stack), so graph depth never threatens the C stack.
 */
#include "formats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- text buffer ------------------------------------------------------------------------ */

typedef struct fcq_buf {
    fc_ctx *ctx;
    char *data;
    size_t len, cap;
    bool oom;
} fcq_buf;

static void buf_reserve(fcq_buf *b, size_t extra) {
    if (b->oom || b->len + extra + 1 <= b->cap) return;
    size_t ncap = b->cap ? b->cap : 1024;
    while (ncap < b->len + extra + 1) {
        if (ncap > SIZE_MAX / 2) {
            b->oom = true;
            return;
        }
        ncap *= 2;
    }
    char *nd = fcg_realloc(b->ctx, b->data, b->cap, ncap);
    if (!nd) {
        b->oom = true;
        return;
    }
    b->data = nd;
    b->cap = ncap;
}

static void buf_puts(fcq_buf *b, const char *s) {
    size_t n = strlen(s);
    buf_reserve(b, n);
    if (b->oom) return;
    memcpy(b->data + b->len, s, n + 1);
    b->len += n;
}

static void buf_printf(fcq_buf *b, const char *fmt, ...) FCG_PRINTF(2, 3);
static void buf_printf(fcq_buf *b, const char *fmt, ...) {
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->oom = true;
        return;
    }
    if ((size_t)n < sizeof small) {
        buf_puts(b, small);
        return;
    }
    buf_reserve(b, (size_t)n);
    if (b->oom) return;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

/* ---- literals --------------------------------------------------------------------------- */

/* The shortest %g form that reads back to the same double, always in float form (1.0, not
 * 1), with inf and nan spelled as the parser reads them. */
static void fmt_double(char *out, size_t size, double d) {
    if (isnan(d)) {
        snprintf(out, size, "%s", signbit(d) ? "-nan" : "nan");
        return;
    }
    if (isinf(d)) {
        snprintf(out, size, "%s", d < 0 ? "-inf" : "inf");
        return;
    }
    int prec = 1;
    for (; prec < 17; prec++) {
        snprintf(out, size, "%.*g", prec, d);
        if (strtod(out, NULL) == d) break;
    }
    /* As Python's repr: positional notation from 1e-4 up to 1e16 (10.0, not 1e+01). */
    double mag = fabs(d);
    if (mag >= 1e-4 && mag < 1e16) {
        int int_digits = mag >= 1 ? (int)floor(log10(mag)) + 1 : 1;
        if (prec < int_digits) prec = int_digits;
    }
    snprintf(out, size, "%.*g", prec, d);
    if (!strpbrk(out, ".en")) {
        size_t n = strlen(out);
        if (n + 3 <= size) memcpy(out + n, ".0", 3);
    }
}

static void buf_double(fcq_buf *b, double d) {
    char tmp[64];
    fmt_double(tmp, sizeof tmp, d);
    buf_puts(b, tmp);
}

static void buf_shape(fcq_buf *b, int ndim, const int64_t *shape) {
    buf_puts(b, "[");
    for (int d = 0; d < ndim; d++) buf_printf(b, d ? ", %lld" : "%lld", (long long)shape[d]);
    buf_puts(b, "]");
}

/* A constant's value as a literal of its dtype. */
static void buf_const_value(fcq_buf *b, const fc_array *a) {
    fc_dtype t = (fc_dtype)a->dtype;
    fcg_pyint v;
    char vs[FCG_PYINT_STR];
    if (fcg_pyint_of(a, &v)) { /* a weak int of any size: the parser reads it back exactly */
        buf_puts(b, fcg_pyint_str(v, vs));
    } else if (fcg_is_bool(t)) {
        buf_puts(b, a->p.ival ? "True" : "False");
    } else if (fcg_is_sint(t)) {
        buf_printf(b, "%lld", (long long)a->p.ival);
    } else if (fcg_is_uint(t)) {
        buf_printf(b, "%llu", (unsigned long long)(uint64_t)a->p.ival);
    } else if (fcg_is_complex(t)) {
        buf_puts(b, "complex(");
        buf_double(b, a->p.re);
        buf_puts(b, ", ");
        buf_double(b, a->p.im);
        buf_puts(b, ")");
    } else {
        buf_double(b, a->p.re);
    }
}

static bool is_inline(const fc_array *a) { return a->op == FCG_OP_CONST && a->weak; }

static bool is_leaf_input(const fc_array *a) {
    return a->op == FCG_OP_DATA || a->op == FCG_OP_INPUT;
}

/* The node written as input i of a: inv(a) is solve(a, identity), and its text names a
 * alone (the parser makes the identity). */
static const fc_array *printed_input(const fc_array *a, int i) {
    if (a->op == FCG_OP_LINALG_SOLVE && a->p.flag) return a->in[0];
    return a->in[i];
}

/* ---- node names ------------------------------------------------------------------------- */

typedef struct fcq_entry {
    const fc_array *node; /* NULL: empty slot */
    char kind;            /* 'x', 't', or 'o' (output name `num`) */
    bool emitted;
    bool seen;            /* by the walk that finds calls of multi-output kernels */
    int64_t num;
} fcq_entry;

/* A user kernel declared by the text so far, and the variable it is bound to. */
typedef struct fcq_kdecl {
    uint64_t hash;
    char var[FCG_USER_NAME_MAX + 24];
} fcq_kdecl;

typedef struct fcq_printer {
    fc_ctx *ctx;
    fcq_buf out;
    fcq_entry *map;
    size_t map_cap, map_n;
    fc_array *const *arrays;
    int n;
    const char *const *names; /* NULL: y0, y1, ... */
    int64_t next_x, next_t;
    /* Numbers of output names spelled x<k> / t<k>, sorted, which generated names skip. */
    int64_t *taken_x, *taken_t;
    int ntaken_x, ntaken_t;
    fcq_kdecl *kdecls;
    int nkdecl, cap_kdecl;
    /* Calls of kernels with several outputs (USER_EW nodes), found once when the first is
     * printed: a call's statement names every output of it that the graph holds. */
    const fc_array **multi;
    size_t nmulti, cap_multi;
    bool multi_found;
    fc_status status;
} fcq_printer;

static size_t ptr_hash(const void *p) {
    uint64_t h = (uint64_t)(uintptr_t)p;
    return (size_t)fcg_mix64(h);
}

static fcq_entry *map_get(fcq_printer *pr, const fc_array *a, bool create) {
    if (create && (pr->map_n + 1) * 2 > pr->map_cap) {
        size_t ncap = pr->map_cap ? pr->map_cap * 2 : 256;
        fcq_entry *nm = fcg_calloc(pr->ctx, ncap * sizeof(fcq_entry));
        if (!nm) return NULL;
        for (size_t i = 0; i < pr->map_cap; i++) {
            if (!pr->map[i].node) continue;
            size_t j = ptr_hash(pr->map[i].node) & (ncap - 1);
            while (nm[j].node) j = (j + 1) & (ncap - 1);
            nm[j] = pr->map[i];
        }
        if (pr->map) fcg_free(pr->ctx, pr->map, pr->map_cap * sizeof(fcq_entry));
        pr->map = nm;
        pr->map_cap = ncap;
    }
    if (!pr->map_cap) return NULL;
    size_t mask = pr->map_cap - 1;
    for (size_t i = ptr_hash(a) & mask;; i = (i + 1) & mask) {
        fcq_entry *e = &pr->map[i];
        if (e->node == a) return e;
        if (!e->node) {
            if (!create) return NULL;
            e->node = a;
            pr->map_n++;
            return e;
        }
    }
}

static bool taken(const int64_t *nums, int n, int64_t k) {
    int lo = 0, hi = n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (nums[mid] == k) return true;
        if (nums[mid] < k) lo = mid + 1;
        else hi = mid;
    }
    return false;
}

static void put_name(fcq_printer *pr, const fcq_entry *e) {
    if (e->kind == 'o') {
        if (pr->names) buf_puts(&pr->out, pr->names[e->num]);
        else buf_printf(&pr->out, "y%lld", (long long)e->num);
    } else {
        buf_printf(&pr->out, "%c%lld", e->kind, (long long)e->num);
    }
}

/* An operand: a weak scalar as a literal (parenthesised when negative and `infix`, so that
 * -2.0 ** x never reads as -(2.0 ** x)), else the node's name. */
static void put_operand(fcq_printer *pr, const fc_array *a, bool infix) {
    if (is_inline(a)) {
        size_t start = pr->out.len;
        buf_const_value(&pr->out, a);
        if (infix && !pr->out.oom && pr->out.data[start] == '-') {
            /* Re-emit in parentheses. */
            size_t n = pr->out.len - start;
            char tmp[160];
            if (n < sizeof tmp) {
                memcpy(tmp, pr->out.data + start, n);
                tmp[n] = '\0';
                pr->out.len = start;
                buf_printf(&pr->out, "(%s)", tmp);
            }
        }
        return;
    }
    const fcq_entry *e = map_get(pr, a, false);
    if (e) put_name(pr, e);
}

/* ---- statements ------------------------------------------------------------------------- */

static void put_axes_list(fcq_printer *pr, uint32_t mask, int ndim) {
    buf_puts(&pr->out, "[");
    bool first = true;
    for (int d = 0; d < ndim; d++) {
        if (!(mask & (1u << d))) continue;
        buf_printf(&pr->out, first ? "%d" : ", %d", d);
        first = false;
    }
    buf_puts(&pr->out, "]");
}

static int lowest_bit(uint32_t mask) {
    for (int d = 0; d < 32; d++)
        if (mask & (1u << d)) return d;
    return 0;
}

/* One subscript entry of a SLICE node for axis d. The stop is the one just past the last
 * element taken; with a negative step that runs to the axis start it is omitted, since any
 * negative stop would count from the end. */
static void put_slice_entry(fcq_printer *pr, const fc_array *a, int d) {
    int64_t len = a->in[0]->shape[d], n = a->shape[d];
    int64_t start = a->p.a[d], step = a->p.b[d];
    fcq_buf *b = &pr->out;
    if (step == 1 && start == 0 && n == len) {
        buf_puts(b, ":");
        return;
    }
    if (n == 0) {
        /* Empty: start:start selects nothing in either direction. */
        int64_t s = start < 0 ? 0 : start;
        buf_printf(b, "%lld:%lld", (long long)s, (long long)s);
    } else if (step > 0) {
        int64_t stop = start + (n - 1) * step + 1;
        if (start) buf_printf(b, "%lld", (long long)start);
        buf_puts(b, ":");
        if (stop < len) buf_printf(b, "%lld", (long long)stop);
    } else {
        int64_t stop = start + (n - 1) * step - 1;
        if (start != len - 1) buf_printf(b, "%lld", (long long)start);
        buf_puts(b, ":");
        if (stop >= 0) buf_printf(b, "%lld", (long long)stop);
    }
    if (step != 1) buf_printf(b, ":%lld", (long long)step);
}

/* The count fc_arange gives for (start, stop, step). */
static int64_t arange_count(double start, double stop, double step) {
    double c = ceil((stop - start) / step);
    return c > 0 ? (int64_t)c : 0;
}

/* prefix name(in[0], ..., in[nin - 1]): a call of every input in order. */
static void put_call(fcq_printer *pr, const char *prefix, const char *name, const fc_array *a) {
    buf_printf(&pr->out, "%s%s(", prefix, name);
    for (int i = 0; i < a->nin; i++) {
        if (i) buf_puts(&pr->out, ", ");
        put_operand(pr, a->in[i], false);
    }
    buf_puts(&pr->out, ")");
}

static fc_status put_rhs(fcq_printer *pr, const fc_array *a) {
    fcq_buf *b = &pr->out;
    const fcg_op_info *info = &fcg_ops[a->op];
    const char *dt = fc_dtype_name((fc_dtype)a->dtype);
    switch ((fcg_op)a->op) {
    case FCG_OP_DATA:
    case FCG_OP_INPUT:
        buf_printf(b, "input %s ", dt);
        buf_shape(b, a->ndim, a->shape);
        return FC_OK;
    case FCG_OP_CONST:
        buf_puts(b, "full(");
        buf_shape(b, a->ndim, a->shape);
        buf_puts(b, ", ");
        buf_const_value(b, a);
        buf_printf(b, ", %s)", dt);
        return FC_OK;
    case FCG_OP_ARANGE: {
        double start = a->p.re, step = a->p.im;
        int64_t count = a->ndim ? a->shape[0] : 0;
        /* A stop that gives exactly `count` elements: the natural one when the division
         * lands there, else half a step short, which rounding cannot push across. */
        double stop = start + (double)count * step;
        if (arange_count(start, stop, step) != count) stop = start + ((double)count - 0.5) * step;
        buf_puts(b, "arange(");
        buf_double(b, start);
        buf_puts(b, ", ");
        buf_double(b, stop);
        buf_puts(b, ", ");
        buf_double(b, step);
        buf_printf(b, ", %s)", dt);
        return FC_OK;
    }
    case FCG_OP_LINSPACE:
        buf_puts(b, "linspace(");
        buf_double(b, a->p.re);
        buf_puts(b, ", ");
        buf_double(b, a->p.im);
        buf_printf(b, ", %lld, endpoint=%s, dtype=%s)", (long long)a->p.count,
                   a->p.flag ? "True" : "False", dt);
        return FC_OK;
    case FCG_OP_EYE:
        buf_printf(b, "eye(%lld, %lld, %lld, %s)", (long long)a->shape[0],
                   (long long)a->shape[1], (long long)a->p.ival, dt);
        return FC_OK;
    case FCG_OP_RANDOM: /* the stream only where it is not 0: texts of older versions read */
        if (a->p.mode == FCG_RANDOM_INTEGERS)
            buf_printf(b, "integers(%lld, %lld, ", (long long)a->p.a[0],
                       (long long)((uint64_t)a->p.a[0] + (uint64_t)a->p.b[0]));
        else
            buf_puts(b, a->p.mode == FCG_RANDOM_NORMAL ? "standard_normal(" : "random(");
        buf_shape(b, a->ndim, a->shape);
        buf_printf(b, ", %s, %llu", dt, (unsigned long long)(uint64_t)a->p.ival);
        if (a->p.count) buf_printf(b, ", %llu", (unsigned long long)(uint64_t)a->p.count);
        buf_puts(b, ")");
        return FC_OK;
    case FCG_OP_CAST:
        buf_puts(b, "cast(");
        put_operand(pr, a->in[0], false);
        buf_printf(b, ", %s)", dt);
        return FC_OK;
    case FCG_OP_MATMUL:
        put_operand(pr, a->in[0], true);
        buf_puts(b, " @ ");
        put_operand(pr, a->in[1], true);
        return FC_OK;
    case FCG_OP_SORT:
    case FCG_OP_ARGSORT:
        buf_printf(b, "%s(", info->pyname);
        put_operand(pr, a->in[0], false);
        buf_printf(b, ", axis=%d)", (int)a->p.axis);
        return FC_OK;
    case FCG_OP_FFTN: { /* np.fft's n-d calls whose norm leaves the transform unscaled and
                           whose s (irfftn's) resizes nothing build this very node */
        static const char *const fn[] = {"fftn", "ifftn", "rfftn", "irfftn"};
        const fc_array *x = a->in[0];
        int kind = a->p.flag < 4 ? a->p.flag : 0;
        buf_printf(b, "%s(", fn[kind]);
        put_operand(pr, x, false);
        if (kind == FCG_FFT_C2R) {
            buf_puts(b, ", s=[");
            bool first = true;
            for (int d = 0; d < a->ndim; d++)
                if (a->p.axes >> d & 1) {
                    buf_printf(b, first ? "%lld" : ", %lld", (long long)a->shape[d]);
                    first = false;
                }
            buf_puts(b, "]");
        }
        buf_puts(b, ", axes=");
        put_axes_list(pr, a->p.axes, a->ndim);
        if (kind == FCG_FFT_C2C_INVERSE || kind == FCG_FFT_C2R) buf_puts(b, ", norm=\"forward\"");
        buf_puts(b, ")");
        return FC_OK;
    }
    case FCG_OP_LINALG_SOLVE:
    case FCG_OP_LINALG_SLOGDET:
    case FCG_OP_LINALG_CHOLESKY: /* inputs of the node's own dtype and batch: linalg's calls
                                    make the very node from them */
        buf_printf(b, "linalg.%s(", a->p.flag ? "inv" : info->pyname);
        put_operand(pr, a->in[0], false);
        if (a->nin == 2 && !a->p.flag) {
            buf_puts(b, ", ");
            put_operand(pr, a->in[1], false);
        }
        buf_puts(b, ")");
        return FC_OK;
    case FCG_OP_LINALG_QR: /* linalg.qr_packed(a, mode=...) and linalg.eigh_packed(a, UPLO=...)
                              make the very packed nodes that qr's and eigh's views read */
        buf_printf(b, "linalg.%s(", info->pyname);
        put_operand(pr, a->in[0], false);
        buf_printf(b, ", mode=\"%s\")", fcg_qr_mode_names[a->p.flag < 3 ? a->p.flag : 0]);
        return FC_OK;
    case FCG_OP_STENCIL2D: /* the node itself: convolve2d and its kin build it from views */
        buf_puts(b, "signal.stencil2d(");
        put_operand(pr, a->in[0], false);
        buf_puts(b, ", ");
        put_operand(pr, a->in[1], false);
        buf_puts(b, ", ");
        buf_shape(b, 2, a->shape);
        buf_puts(b, ", ");
        buf_shape(b, 2, a->p.a);
        buf_printf(b, ", boundary=\"%s\"", fcg_conv_boundary_names[a->p.mode < 3 ? a->p.mode : 0]);
        if (a->p.im != 0.0 || signbit(a->p.im)) {
            buf_puts(b, ", fillvalue=complex(");
            buf_double(b, a->p.re);
            buf_puts(b, ", ");
            buf_double(b, a->p.im);
            buf_puts(b, ")");
        } else if (a->p.re != 0.0 || signbit(a->p.re)) {
            buf_puts(b, ", fillvalue=");
            buf_double(b, a->p.re);
        }
        buf_puts(b, ")");
        return FC_OK;
    case FCG_OP_LINALG_EIGH:
    case FCG_OP_LINALG_EIGVALSH:
        buf_printf(b, "linalg.%s(", info->pyname);
        put_operand(pr, a->in[0], false);
        buf_printf(b, ", UPLO=\"%s\")", a->p.flag & 1 ? "U" : "L");
        return FC_OK;
    case FCG_OP_CSR_MATMUL: /* sparse.csr_matmul(indptr, indices, data, x) makes the node */
        put_call(pr, "sparse.", info->pyname, a);
        return FC_OK;
    case FCG_OP_LINALG_SVD: /* linalg.svd_packed(a, full_matrices=...): svd's views read it */
    case FCG_OP_LINALG_SVDVALS:
        buf_printf(b, "linalg.%s(", info->pyname);
        put_operand(pr, a->in[0], false);
        if (a->op == FCG_OP_LINALG_SVD)
            buf_printf(b, ", full_matrices=%s", a->p.flag & 1 ? "True" : "False");
        buf_puts(b, ")");
        return FC_OK;
    case FCG_OP_RESHAPE:
    case FCG_OP_BROADCAST:
        buf_printf(b, "%s(", info->pyname);
        put_operand(pr, a->in[0], false);
        buf_puts(b, ", ");
        buf_shape(b, a->ndim, a->shape);
        buf_puts(b, ")");
        return FC_OK;
    case FCG_OP_PERMUTE:
        buf_puts(b, "transpose(");
        put_operand(pr, a->in[0], false);
        buf_puts(b, ", ");
        buf_shape(b, a->ndim, a->p.a);
        buf_puts(b, ")");
        return FC_OK;
    case FCG_OP_SLICE:
        put_operand(pr, a->in[0], true);
        buf_puts(b, "[");
        for (int d = 0; d < a->ndim; d++) {
            if (d) buf_puts(b, ", ");
            put_slice_entry(pr, a, d);
        }
        buf_puts(b, "]");
        return FC_OK;
    case FCG_OP_PAD: {
        static const char *const modes[] = {"constant", "edge", "reflect", "symmetric"};
        buf_puts(b, "pad(");
        put_operand(pr, a->in[0], false);
        buf_puts(b, ", [");
        for (int d = 0; d < a->ndim; d++)
            buf_printf(b, d ? ", [%lld, %lld]" : "[%lld, %lld]", (long long)a->p.a[d],
                       (long long)a->p.b[d]);
        buf_printf(b, "], mode=\"%s\"", a->p.mode < 4 ? modes[a->p.mode] : "constant");
        if (a->p.mode == FC_PAD_CONSTANT || a->p.re != 0.0 || signbit(a->p.re)) {
            buf_puts(b, ", constant_values=");
            buf_double(b, a->p.re);
        }
        buf_puts(b, ")");
        return FC_OK;
    }
    case FCG_OP_CONCAT:
        buf_puts(b, "concatenate([");
        for (int i = 0; i < a->nin; i++) {
            if (i) buf_puts(b, ", ");
            put_operand(pr, a->in[i], false);
        }
        buf_printf(b, "], axis=%d)", (int)a->p.axis);
        return FC_OK;
    default: break;
    }
    if (info->kind == FCG_KIND_REDUCE) {
        const fc_array *x = a->in[0];
        buf_printf(b, "%s(", info->pyname);
        put_operand(pr, x, false);
        if (info->params & FCG_P_FLAG) { /* argmax, argmin: one axis, or None */
            if (a->p.flag) buf_puts(b, ", axis=None");
            else buf_printf(b, ", axis=%d", lowest_bit(a->p.axes));
        } else {
            buf_puts(b, ", axis=");
            put_axes_list(pr, a->p.axes, x->ndim);
        }
        if (a->p.keepdims) buf_puts(b, ", keepdims=True");
        if ((info->params & FCG_P_DDOF) && a->p.ddof) buf_printf(b, ", ddof=%d", (int)a->p.ddof);
        if (info->params & FCG_P_ORD)
            buf_puts(b, a->p.ord == FC_NORM_L1 ? ", ord=1" : a->p.ord == FC_NORM_INF ? ", ord=inf"
                                                                                     : ", ord=2");
        buf_puts(b, ")");
        return FC_OK;
    }
    if (info->kind == FCG_KIND_EW) {
        if (a->nin == 2 && info->infix[0]) {
            put_operand(pr, a->in[0], true);
            buf_printf(b, " %s ", info->infix);
            put_operand(pr, a->in[1], true);
            return FC_OK;
        }
        if (a->nin == 1 && info->infix[0] && !is_inline(a->in[0])) {
            buf_puts(b, info->infix);
            put_operand(pr, a->in[0], true);
            return FC_OK;
        }
        put_call(pr, "", info->pyname, a);
        return FC_OK;
    }
    if (a->op == FCG_OP_SEARCHSORTED) {
        buf_puts(b, "searchsorted(");
        put_operand(pr, a->in[0], false);
        buf_puts(b, ", ");
        put_operand(pr, a->in[1], false);
        if (a->p.mode == FC_SIDE_RIGHT) buf_puts(b, ", side=\"right\"");
        buf_puts(b, ")");
        return FC_OK;
    }
    if (a->op == FCG_OP_TAKE) {
        static const char *const modes[] = {"raise", "wrap", "clip"};
        buf_puts(b, "take(");
        put_operand(pr, a->in[0], false);
        buf_puts(b, ", ");
        put_operand(pr, a->in[1], false);
        buf_printf(b, ", axis=%d", (int)a->p.axis);
        if (a->p.mode) buf_printf(b, ", mode=\"%s\"", modes[a->p.mode % 3]);
        buf_puts(b, ")");
        return FC_OK;
    }
    if (info->kind == FCG_KIND_SCATTER) {
        static const char *const modes[] = {"raise", "wrap", "clip", "drop"};
        buf_printf(b, "%s(", info->pyname);
        for (int i = 0; i < 3; i++) {
            if (i) buf_puts(b, ", ");
            put_operand(pr, a->in[i], false);
        }
        buf_printf(b, ", axis=%d", (int)a->p.axis);
        if (a->p.mode) buf_printf(b, ", mode=\"%s\"", modes[a->p.mode % 4]);
        buf_puts(b, ")");
        return FC_OK;
    }
    if (a->op == FCG_OP_COMPRESS) { /* values[mask], which builds it again */
        put_operand(pr, a->in[1], true);
        buf_puts(b, "[");
        put_operand(pr, a->in[0], false);
        buf_puts(b, "]");
        return FC_OK;
    }
    if (info->kind == FCG_KIND_SCAN) {
        buf_printf(b, "%s(", info->pyname);
        put_operand(pr, a->in[0], false);
        buf_printf(b, ", axis=%d)", (int)a->p.axis);
        return FC_OK;
    }
    return fcg_error(pr->ctx, FC_ERR_UNSUPPORTED, "fc_program_print: cannot print op %s",
                     info->pyname);
}

/* Gives a node its name: its output name when one was assigned, else the next x / t. */
static void assign_name(fcq_printer *pr, fcq_entry *e, const fc_array *a) {
    if (e->kind) return;
    if (is_leaf_input(a)) {
        while (taken(pr->taken_x, pr->ntaken_x, pr->next_x)) pr->next_x++;
        e->kind = 'x';
        e->num = pr->next_x++;
    } else {
        while (taken(pr->taken_t, pr->ntaken_t, pr->next_t)) pr->next_t++;
        e->kind = 't';
        e->num = pr->next_t++;
    }
}

typedef struct fcq_frame {
    const fc_array *node;
    int next; /* next input to visit */
} fcq_frame;

/* ---- user kernels ----------------------------------------------------------------------- */

static bool generated_form(const char *name, char *letter, int64_t *k);

/* A kernel's text as a string literal: the escapes the lexer reads back, \xHH for control
 * bytes it has no letter for (a kernel's text never holds NUL). */
static void buf_string(fcq_buf *b, const char *s) {
    buf_puts(b, "\"");
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        switch (*c) {
        case '\\': buf_puts(b, "\\\\"); break;
        case '"': buf_puts(b, "\\\""); break;
        case '\n': buf_puts(b, "\\n"); break;
        case '\t': buf_puts(b, "\\t"); break;
        case '\r': buf_puts(b, "\\r"); break;
        default:
            if (*c < 0x20) {
                buf_printf(b, "\\x%02x", *c);
            } else {
                char one[2] = {(char)*c, '\0'};
                buf_puts(b, one);
            }
        }
    }
    buf_puts(b, "\"");
}

/* Whether a kernel variable may take this name: not a reserved word, not a function (the
 * variable would hide it from the rest of the text), not a name the printer generates or an
 * output's, not another kernel's variable. */
static bool kernel_name_taken(const fcq_printer *pr, const char *name) {
    size_t len = strlen(name);
    char letter;
    int64_t k;
    if (fcf_name_is_reserved(name, len) || fcf_name_is_function(name, len) ||
        generated_form(name, &letter, &k))
        return true;
    if (name[0] == 'y' && name[1] && strspn(name + 1, "0123456789") == len - 1) return true;
    for (int i = 0; pr->names && i < pr->n; i++)
        if (strcmp(pr->names[i], name) == 0) return true;
    for (int i = 0; i < pr->nkdecl; i++)
        if (strcmp(pr->kdecls[i].var, name) == 0) return true;
    return false;
}

/* The variable holding kernel k, declared by a statement of its own the first time. */
static fc_status declare_kernel(fcq_printer *pr, const fcg_user_kernel *k, const char **var) {
    for (int i = 0; i < pr->nkdecl; i++)
        if (pr->kdecls[i].hash == k->hash) {
            *var = pr->kdecls[i].var;
            return FC_OK;
        }
    if (pr->nkdecl == pr->cap_kdecl) {
        int ncap = pr->cap_kdecl ? pr->cap_kdecl * 2 : 4;
        fcq_kdecl *nk = fcg_realloc(pr->ctx, pr->kdecls, (size_t)pr->cap_kdecl * sizeof *nk,
                                    (size_t)ncap * sizeof *nk);
        if (!nk) return fcg_error(pr->ctx, FC_ERR_NOMEM, "fc_program_print: out of memory");
        pr->kdecls = nk;
        pr->cap_kdecl = ncap;
    }
    fcq_kdecl *d = &pr->kdecls[pr->nkdecl];
    d->hash = k->hash;
    snprintf(d->var, sizeof d->var, "%s", k->name);
    for (int n = 1; kernel_name_taken(pr, d->var); n++)
        snprintf(d->var, sizeof d->var, "%s_%d", k->name, n);
    pr->nkdecl++;
    fcq_buf *b = &pr->out;
    bool red = k->kind == FCG_USER_REDUCTION;
    buf_printf(b, "%s = %s(", d->var, red ? "ReductionKernel" : "ElementwiseKernel");
    const char *texts[] = {k->in_text, k->out_text, red ? k->map : k->body, k->reduce, k->post,
                           k->identity, k->name};
    const int order_ew[] = {0, 1, 2, 6}, order_red[] = {0, 1, 2, 3, 4, 5, 6};
    const int *order = red ? order_red : order_ew;
    int ntexts = red ? 7 : 4;
    for (int i = 0; i < ntexts; i++) {
        if (i) buf_puts(b, ", ");
        buf_string(b, texts[order[i]]);
    }
    /* reduce_type only where it is not the default, the output's type */
    const fcg_user_param *o = &k->out[0];
    int dflt = o->dtype >= 0 ? o->dtype : -1 - o->place;
    if (red && k->reduce_dtype != dflt) {
        buf_puts(b, ", reduce_type=");
        buf_string(b, k->reduce_dtype >= 0 ? fc_dtype_name((fc_dtype)k->reduce_dtype)
                                           : k->place[-1 - k->reduce_dtype]);
    }
    buf_puts(b, ")\n");
    *var = d->var;
    return FC_OK;
}

static fc_status multi_push(fcq_printer *pr, const fc_array *a) {
    if (pr->nmulti == pr->cap_multi) {
        size_t ncap = pr->cap_multi ? pr->cap_multi * 2 : 8;
        const fc_array **nm = fcg_realloc(pr->ctx, pr->multi, pr->cap_multi * sizeof *nm,
                                          ncap * sizeof *nm);
        if (!nm) return fcg_error(pr->ctx, FC_ERR_NOMEM, "fc_program_print: out of memory");
        pr->multi = nm;
        pr->cap_multi = ncap;
    }
    pr->multi[pr->nmulti++] = a;
    return FC_OK;
}

/* Collects every call of a multi-output kernel the outputs reach (an iterative walk). */
static fc_status find_multi(fcq_printer *pr) {
    pr->multi_found = true;
    size_t cap = 64, depth = 0;
    fcq_frame *stack = fcg_malloc(pr->ctx, cap * sizeof *stack);
    if (!stack) return fcg_error(pr->ctx, FC_ERR_NOMEM, "fc_program_print: out of memory");
    fc_status st = FC_OK;
    for (int i = 0; i <= pr->n && st == FC_OK; i++) {
        const fc_array *a = i < pr->n ? pr->arrays[i] : NULL;
        if (a) {
            fcq_entry *e = map_get(pr, a, true);
            if (!e) st = fcg_error(pr->ctx, FC_ERR_NOMEM, "fc_program_print: out of memory");
            else if (!e->seen) {
                e->seen = true;
                stack[depth++] = (fcq_frame){a, 0};
            }
        }
        while (depth && st == FC_OK) {
            fcq_frame *f = &stack[depth - 1];
            if (f->next == f->node->nin) {
                const fc_array *x = f->node;
                const fcg_user_kernel *k = x->op == FCG_OP_USER_EW
                                               ? fcg_user_find(pr->ctx, (uint64_t)x->p.ival)
                                               : NULL;
                if (k && k->nout > 1) st = multi_push(pr, x);
                depth--;
                continue;
            }
            const fc_array *c = f->node->in[f->next++];
            fcq_entry *ce = map_get(pr, c, true);
            if (!ce) {
                st = fcg_error(pr->ctx, FC_ERR_NOMEM, "fc_program_print: out of memory");
                break;
            }
            if (ce->seen) continue;
            ce->seen = true;
            if (depth == cap) {
                fcq_frame *ns = fcg_realloc(pr->ctx, stack, cap * sizeof *ns,
                                            cap * 2 * sizeof *ns);
                if (!ns) {
                    st = fcg_error(pr->ctx, FC_ERR_NOMEM, "fc_program_print: out of memory");
                    break;
                }
                stack = ns;
                cap *= 2;
            }
            stack[depth++] = (fcq_frame){c, 0};
        }
    }
    fcg_free(pr->ctx, stack, cap * sizeof *stack);
    return st;
}

/* Output j of the call that a is another output of, if the graph holds it. */
static const fc_array *sibling(const fcq_printer *pr, const fc_array *a, int64_t j) {
    for (size_t i = 0; i < pr->nmulti; i++) {
        const fc_array *s = pr->multi[i];
        if (s->p.ival != a->p.ival || s->p.count != j || s->nin != a->nin) continue;
        bool same = true;
        for (int k = 0; k < a->nin && same; k++) same = s->in[k] == a->in[k];
        if (same) return s;
    }
    return NULL;
}

/* A user kernel's call, whole statement: its declaration first if this is its first call;
 * then `t = k(args)`, `t = k(args, axis=[...])` or `a, b = k(args)`. */
static fc_status put_user(fcq_printer *pr, const fc_array *a) {
    const fcg_user_kernel *k = fcg_user_find(pr->ctx, (uint64_t)a->p.ival);
    if (!k)
        return fcg_error(pr->ctx, FC_ERR_INVALID, "fc_program_print: a call of an unknown user "
                         "kernel");
    const char *var = "";
    fc_status st = declare_kernel(pr, k, &var);
    if (st != FC_OK) return st;
    fcq_buf *b = &pr->out;
    if (a->op == FCG_OP_USER_EW && k->nout > 1) {
        if (!pr->multi_found && (st = find_multi(pr)) != FC_OK) return st;
        for (int j = 0; j < k->nout; j++) {
            const fc_array *s = j == a->p.count ? a : sibling(pr, a, j);
            if (j) buf_puts(b, ", ");
            if (!s) { /* an output nothing uses: a fresh name */
                while (taken(pr->taken_t, pr->ntaken_t, pr->next_t)) pr->next_t++;
                buf_printf(b, "t%lld", (long long)pr->next_t++);
                continue;
            }
            fcq_entry *e = map_get(pr, s, true);
            if (!e) return fcg_error(pr->ctx, FC_ERR_NOMEM, "fc_program_print: out of memory");
            assign_name(pr, e, s);
            put_name(pr, e);
            e->emitted = true;
        }
    } else {
        fcq_entry *e = map_get(pr, a, false);
        assign_name(pr, e, a);
        put_name(pr, e);
    }
    buf_printf(b, " = %s(", var);
    for (int i = 0; i < a->nin; i++) {
        if (i) buf_puts(b, ", ");
        put_operand(pr, a->in[i], false);
    }
    if (a->op == FCG_OP_USER_REDUCE) {
        buf_puts(b, ", axis=");
        put_axes_list(pr, a->p.axes, a->nin ? a->in[0]->ndim : 0);
        if (a->p.keepdims) buf_puts(b, ", keepdims=True");
    }
    buf_puts(b, ")");
    return FC_OK;
}

/* DFS post-order from root: each node's statement after its inputs'. */
static fc_status emit_from(fcq_printer *pr, const fc_array *root, fcq_frame **stack,
                           size_t *stack_cap) {
    size_t depth = 0;
    if (is_inline(root)) return FC_OK;
    fcq_entry *e = map_get(pr, root, true);
    if (!e) return fcg_error(pr->ctx, FC_ERR_NOMEM, "fc_program_print: out of memory");
    if (e->emitted) return FC_OK;
    (*stack)[depth++] = (fcq_frame){root, 0};
    while (depth) {
        fcq_frame *f = &(*stack)[depth - 1];
        const fc_array *a = f->node;
        if (a->status != FC_OK || a->op == FCG_OP_POISON)
            return fcg_error(pr->ctx, a->status != FC_OK ? a->status : FC_ERR_INVALID,
                             "fc_program_print: a poisoned array: %s",
                             a->errmsg ? a->errmsg : "");
        if (f->next < a->nin) {
            const fc_array *c = printed_input(a, f->next++);
            if (is_inline(c)) continue;
            fcq_entry *ce = map_get(pr, c, true);
            if (!ce) return fcg_error(pr->ctx, FC_ERR_NOMEM, "fc_program_print: out of memory");
            if (ce->emitted) continue;
            if (depth == *stack_cap) {
                size_t ncap = *stack_cap * 2;
                fcq_frame *ns = fcg_realloc(pr->ctx, *stack, *stack_cap * sizeof(fcq_frame),
                                            ncap * sizeof(fcq_frame));
                if (!ns) return fcg_error(pr->ctx, FC_ERR_NOMEM, "fc_program_print: out of memory");
                *stack = ns;
                *stack_cap = ncap;
            }
            (*stack)[depth++] = (fcq_frame){c, 0};
            continue;
        }
        fcq_entry *ae = map_get(pr, a, false);
        fc_status st;
        if (a->op == FCG_OP_USER_EW || a->op == FCG_OP_USER_REDUCE) {
            st = put_user(pr, a);
            ae = map_get(pr, a, false); /* put_user may have grown the map */
        } else {
            assign_name(pr, ae, a);
            put_name(pr, ae);
            buf_puts(&pr->out, " = ");
            st = put_rhs(pr, a);
        }
        if (st != FC_OK) return st;
        buf_puts(&pr->out, "\n");
        ae->emitted = true;
        depth--;
    }
    return pr->out.oom ? fcg_error(pr->ctx, FC_ERR_NOMEM, "fc_program_print: out of memory")
                       : FC_OK;
}

/* Whether name is x<k> or t<k> (k a canonical decimal); sets the letter and k. */
static bool generated_form(const char *name, char *letter, int64_t *k) {
    if ((name[0] != 'x' && name[0] != 't') || !name[1]) return false;
    if (name[1] == '0' && name[2]) return false;
    int64_t v = 0;
    for (const char *c = name + 1; *c; c++) {
        if (*c < '0' || *c > '9' || v > (INT64_MAX - 9) / 10) return false;
        v = v * 10 + (*c - '0');
    }
    *letter = name[0];
    *k = v;
    return true;
}

static int cmp_i64(const void *x, const void *y) {
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return (a > b) - (a < b);
}

static fc_status check_names(fcq_printer *pr) {
    const char *const *names = pr->names;
    if (!names) return FC_OK;
    for (int i = 0; i < pr->n; i++) {
        const char *s = names[i];
        if (!s) return fcg_error(pr->ctx, FC_ERR_NULL, "fc_program_print: output name %d is NULL", i);
        size_t len = strlen(s);
        bool ok = len > 0 && len <= 255 &&
                  ((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') || s[0] == '_');
        for (size_t k = 1; ok && k < len; k++)
            ok = (s[k] >= 'a' && s[k] <= 'z') || (s[k] >= 'A' && s[k] <= 'Z') ||
                 (s[k] >= '0' && s[k] <= '9') || s[k] == '_';
        if (!ok || fcf_name_is_reserved(s, len))
            return fcg_error(pr->ctx, FC_ERR_INVALID,
                             "fc_program_print: output name '%.64s' is not a usable name", s);
        for (int j = 0; j < i; j++)
            if (strcmp(names[j], s) == 0 && pr->arrays[j] != pr->arrays[i])
                return fcg_error(pr->ctx, FC_ERR_INVALID,
                                 "fc_program_print: two different outputs named '%s'", s);
        char letter;
        int64_t k;
        if (generated_form(s, &letter, &k)) {
            if (letter == 'x') pr->taken_x[pr->ntaken_x++] = k;
            else pr->taken_t[pr->ntaken_t++] = k;
        }
    }
    qsort(pr->taken_x, (size_t)pr->ntaken_x, sizeof(int64_t), cmp_i64);
    qsort(pr->taken_t, (size_t)pr->ntaken_t, sizeof(int64_t), cmp_i64);
    return FC_OK;
}

static fc_status print_all(fcq_printer *pr) {
    fc_status st = check_names(pr);
    if (st != FC_OK) return st;
    /* Outputs computed by a node of their own take their name there; leaves, weak scalars
     * and repeats get an alias statement after the body. */
    for (int i = 0; i < pr->n; i++) {
        const fc_array *a = pr->arrays[i];
        if (is_inline(a) || is_leaf_input(a)) continue;
        fcq_entry *e = map_get(pr, a, true);
        if (!e) return fcg_error(pr->ctx, FC_ERR_NOMEM, "fc_program_print: out of memory");
        if (!e->kind) {
            e->kind = 'o';
            e->num = i;
        }
    }
    size_t stack_cap = 64;
    fcq_frame *stack = fcg_malloc(pr->ctx, stack_cap * sizeof(fcq_frame));
    if (!stack) return fcg_error(pr->ctx, FC_ERR_NOMEM, "fc_program_print: out of memory");
    for (int i = 0; st == FC_OK && i < pr->n; i++)
        st = emit_from(pr, pr->arrays[i], &stack, &stack_cap);
    fcg_free(pr->ctx, stack, stack_cap * sizeof(fcq_frame));
    if (st != FC_OK) return st;
    for (int i = 0; i < pr->n; i++) {
        const fc_array *a = pr->arrays[i];
        const fcq_entry *e = is_inline(a) ? NULL : map_get(pr, a, false);
        if (e && e->kind == 'o' &&
            (e->num == i || (pr->names && strcmp(pr->names[e->num], pr->names[i]) == 0)))
            continue;
        /* A name that repeats (the same array: check_names) is bound once, at its first
         * output: .fc binds each name once. */
        bool repeat = false;
        for (int j = 0; pr->names && j < i && !repeat; j++)
            repeat = strcmp(pr->names[j], pr->names[i]) == 0;
        if (repeat) continue;
        fcq_entry self = {a, 'o', false, false, i};
        put_name(pr, &self);
        buf_puts(&pr->out, " = ");
        put_operand(pr, a, false);
        buf_puts(&pr->out, "\n");
    }
    buf_puts(&pr->out, "out ");
    for (int i = 0; i < pr->n; i++) {
        fcq_entry self = {pr->arrays[i], 'o', false, false, i};
        if (i) buf_puts(&pr->out, ", ");
        put_name(pr, &self);
    }
    buf_puts(&pr->out, "\n");
    return pr->out.oom ? fcg_error(pr->ctx, FC_ERR_NOMEM, "fc_program_print: out of memory")
                       : FC_OK;
}

fc_status fc_program_print(fc_ctx *ctx, fc_array *const *arrays, int n,
                           const char *const *out_names, char **text) {
    if (text) *text = NULL;
    if (!ctx) return FC_ERR_NULL;
    if (!arrays || !text) return fcg_error(ctx, FC_ERR_NULL, "fc_program_print: NULL argument");
    if (n < 1) return fcg_error(ctx, FC_ERR_INVALID, "fc_program_print: no arrays to print");
    for (int i = 0; i < n; i++) {
        if (!arrays[i]) return fcg_error(ctx, FC_ERR_NULL, "fc_program_print: array %d is NULL", i);
        if (arrays[i]->ctx != ctx)
            return fcg_error(ctx, FC_ERR_CONTEXT, "fc_program_print: array %d belongs to another context", i);
        if (arrays[i]->status != FC_OK)
            return fcg_error(ctx, arrays[i]->status, "fc_program_print: array %d is poisoned: %s", i,
                             arrays[i]->errmsg ? arrays[i]->errmsg : "");
    }
    fcq_printer pr;
    memset(&pr, 0, sizeof pr);
    pr.ctx = ctx;
    pr.out.ctx = ctx;
    pr.arrays = arrays;
    pr.n = n;
    pr.names = out_names;
    fc_status st = FC_OK;
    if (out_names) {
        pr.taken_x = fcg_malloc(ctx, sizeof(int64_t) * (size_t)n);
        pr.taken_t = fcg_malloc(ctx, sizeof(int64_t) * (size_t)n);
        if (!pr.taken_x || !pr.taken_t)
            st = fcg_error(ctx, FC_ERR_NOMEM, "fc_program_print: out of memory");
    }
    if (st == FC_OK) st = print_all(&pr);
    if (pr.map) fcg_free(ctx, pr.map, pr.map_cap * sizeof(fcq_entry));
    if (pr.kdecls) fcg_free(ctx, pr.kdecls, (size_t)pr.cap_kdecl * sizeof *pr.kdecls);
    if (pr.multi) fcg_free(ctx, pr.multi, pr.cap_multi * sizeof *pr.multi);
    if (pr.taken_x) fcg_free(ctx, pr.taken_x, sizeof(int64_t) * (size_t)n);
    if (pr.taken_t) fcg_free(ctx, pr.taken_t, sizeof(int64_t) * (size_t)n);
    if (st == FC_OK) {
        /* Exactly strlen + 1 bytes, the size fc_free gives back to the allocator. */
        *text = fcg_strdup(ctx, pr.out.data);
        if (!*text) st = fcg_error(ctx, FC_ERR_NOMEM, "fc_program_print: out of memory");
    }
    if (pr.out.data) fcg_free(ctx, pr.out.data, pr.out.cap);
    return st;
}
