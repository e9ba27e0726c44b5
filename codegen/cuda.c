/*
 * codegen/cuda.c - one fused kernel -> CUDA C.
 *
 * Every node of a kernel is evaluated at a symbolic index: one C expression per axis of the
 * node's shape. Elementwise ops pass the index to their inputs (0 on broadcast axes); views
 * rewrite it (a slice scales and shifts, a permute reorders, a reshape re-linearises, a pad
 * clamps or reflects, a concatenate branches); a buffer turns it into an offset and loads.
 * So views never copy. Values are memoised per (node, index) within the current loop body,
 * which makes shared subexpressions free. Names come from positions and counters in a fixed
 * walk, so the text is a pure function of the kernel's structure.
 */
#include "codegen.h"

#include <stdio.h>
#include <string.h>
#include <xxhash.h>

/* ---- generator state -------------------------------------------------------------------- */

typedef struct ix {
    int nd;
    const char *e[FC_MAX_DIMS];
    bool identity; /* the space's own coordinates: a same-shape buffer loads at flat i */
} ix;

typedef struct memo_entry {
    const fc_array *node;
    uint64_t key;  /* hash of the index text */
    int var;
    int depth;     /* loop-scope depth it was made in */
} memo_entry;

typedef struct gen {
    fc_ctx *ctx;
    const fcp_kernel *k;
    fcg_sb body;
    int indent;
    int nvar;
    fc_status err;
    /* strings made during generation (index expressions), freed at the end */
    char **strs;
    size_t nstr, capstr;
    /* memo */
    memo_entry *memo;
    size_t nmemo, capmemo;
    int depth;
    /* slots */
    fcx_slot *islots, *fslots;
    int nint, nflt, capint, capflt;
    /* per kernel node position: the variable holding a reduction's row result, or -1 */
    int *red_var;
    uint64_t epoch;
    bool coords_used;
    int recursion;
    int vec;              /* > 0 while generating the vectorised body: elements per thread */
    bool strided_load;    /* a buffer was loaded at anything but the flat index i */
} gen;

static const char *dt(fc_dtype t) { return fc_dtype_name(t); }

static void fail(gen *g, fc_status st, const char *fmt, ...) FCG_PRINTF(3, 4);
static void fail(gen *g, fc_status st, const char *fmt, ...) {
    if (g->err != FC_OK) return;
    va_list ap;
    va_start(ap, fmt);
    fcg_verror(g->ctx, st, fmt, ap);
    va_end(ap);
    g->err = st;
}

static void line(gen *g, const char *fmt, ...) FCG_PRINTF(2, 3);
static void line(gen *g, const char *fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (k < 0 || (size_t)k >= sizeof buf) {
        fail(g, FC_ERR_UNSUPPORTED, "codegen: a generated line is too long");
        return;
    }
    for (int i = 0; i < g->indent; i++) fcg_sb_puts(&g->body, "    ");
    fcg_sb_puts(&g->body, buf);
    fcg_sb_puts(&g->body, "\n");
}

/* A string that lives until the end of generation. */
static const char *str(gen *g, const char *fmt, ...) FCG_PRINTF(2, 3);
static const char *str(gen *g, const char *fmt, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (k < 0 || (size_t)k >= sizeof buf) {
        fail(g, FC_ERR_UNSUPPORTED, "codegen: an index expression is too long");
        return "0";
    }
    if (g->nstr == g->capstr) {
        size_t nc = g->capstr ? g->capstr * 2 : 64;
        char **s = fcg_realloc(g->ctx, g->strs, g->capstr * sizeof *s, nc * sizeof *s);
        if (!s) {
            fail(g, FC_ERR_NOMEM, "codegen: out of memory");
            return "0";
        }
        g->strs = s;
        g->capstr = nc;
    }
    char *d = fcg_strdup(g->ctx, buf);
    if (!d) {
        fail(g, FC_ERR_NOMEM, "codegen: out of memory");
        return "0";
    }
    g->strs[g->nstr++] = d;
    return d;
}

/* Index expressions of more than a few levels are bound to a variable to stay short. */
static const char *bind_index(gen *g, const char *expr) {
    if (strlen(expr) < 48) return expr;
    int v = g->nvar++;
    line(g, "const idx_t j%d = %s;", v, expr);
    return str(g, "j%d", v);
}

/* ---- positions and slots ---------------------------------------------------------------- */

static int pos_of(gen *g, const fc_array *a) {
    if (a->visit == g->epoch) return (int)a->order;
    fail(g, FC_ERR_UNSUPPORTED, "codegen: node %s is not part of the kernel", fcg_ops[a->op].pyname);
    return 0;
}

static int leaf_index(gen *g, const fc_array *a) {
    int p = pos_of(g, a);
    return p - g->k->nnode;
}

static int slot(gen *g, bool flt, fcx_slot_kind kind, const fc_array *node, int dim) {
    fcx_slot s = {(uint8_t)kind, node ? pos_of(g, node) : -1, dim};
    fcx_slot **arr = flt ? &g->fslots : &g->islots;
    int *n = flt ? &g->nflt : &g->nint, *cap = flt ? &g->capflt : &g->capint;
    for (int i = 0; i < *n; i++)
        if ((*arr)[i].kind == s.kind && (*arr)[i].node == s.node && (*arr)[i].dim == s.dim) return i;
    if (*n == *cap) {
        int nc = *cap ? *cap * 2 : 16;
        fcx_slot *g2 = fcg_realloc(g->ctx, *arr, (size_t)*cap * sizeof *g2, (size_t)nc * sizeof *g2);
        if (!g2) {
            fail(g, FC_ERR_NOMEM, "codegen: out of memory");
            return 0;
        }
        *arr = g2;
        *cap = nc;
    }
    (*arr)[*n] = s;
    return (*n)++;
}

static const char *ival(gen *g, fcx_slot_kind kind, const fc_array *node, int dim) {
    return str(g, "p.i[%d]", slot(g, false, kind, node, dim));
}
static const char *fval(gen *g, fcx_slot_kind kind, const fc_array *node, int dim) {
    return str(g, "p.f[%d]", slot(g, true, kind, node, dim));
}
static const char *extent(gen *g, const fc_array *a, int d) {
    return ival(g, FCX_SLOT_EXTENT, a, d);
}

/* ---- memo ------------------------------------------------------------------------------- */

static uint64_t index_key(const ix *idx) {
    uint64_t h = (uint64_t)idx->nd;
    for (int d = 0; d < idx->nd; d++) h = XXH3_64bits_withSeed(idx->e[d], strlen(idx->e[d]), h);
    return h;
}

static int memo_find(gen *g, const fc_array *a, uint64_t key) {
    for (size_t i = g->nmemo; i-- > 0;)
        if (g->memo[i].node == a && g->memo[i].key == key) return g->memo[i].var;
    return -1;
}

static void memo_add(gen *g, const fc_array *a, uint64_t key, int var) {
    if (g->nmemo == g->capmemo) {
        size_t nc = g->capmemo ? g->capmemo * 2 : 256;
        memo_entry *m = fcg_realloc(g->ctx, g->memo, g->capmemo * sizeof *m, nc * sizeof *m);
        if (!m) {
            fail(g, FC_ERR_NOMEM, "codegen: out of memory");
            return;
        }
        g->memo = m;
        g->capmemo = nc;
    }
    g->memo[g->nmemo++] = (memo_entry){a, key, var, g->depth};
}

static void scope_push(gen *g) { g->depth++; }
static void scope_pop(gen *g) {
    while (g->nmemo && g->memo[g->nmemo - 1].depth >= g->depth) g->nmemo--;
    g->depth--;
}

/* ---- evaluation ------------------------------------------------------------------------- */

static int eval(gen *g, const fc_array *a, const ix *idx);

/* The index of input c of an elementwise node (or a broadcast) with index idx: axes align
 * on the right; extent-1 axes of the input read at 0. */
static ix broadcast_index(const fc_array *a, const fc_array *c, const ix *idx) {
    ix r;
    r.nd = c->ndim;
    r.identity = idx->identity && c->ndim == a->ndim &&
                 memcmp(c->shape, a->shape, (size_t)a->ndim * 8) == 0;
    for (int k = 0; k < c->ndim; k++) {
        int d = k + (a->ndim - c->ndim);
        r.e[k] = c->shape[k] == 1 ? "0" : idx->e[d];
    }
    return r;
}

static int new_var(gen *g) { return g->nvar++; }

static int convert(gen *g, int var, fc_dtype from, fc_dtype to) {
    if (from == to) return var;
    /* f16 and bf16 compute as float already; only the dtype's rounding differs. */
    int v = new_var(g);
    line(g, "const fcx_ct_%s v%d = fcx_cast_%s(v%d);", dt(to), v, dt(to), var);
    return v;
}

/* Linear (row-major) offset of idx within a's shape, using a's extents as arguments
 * (Horner's rule; long partial sums are bound to variables to keep lines short). */
static const char *linearize(gen *g, const fc_array *a, const ix *idx) {
    if (a->ndim == 0) return "0";
    const char *acc = str(g, "(idx_t)(%s)", idx->e[0]);
    for (int d = 1; d < a->ndim; d++) {
        if (a->shape[d] == 1) continue; /* idx is 0 there */
        acc = bind_index(g, str(g, "(%s) * %s + (%s)", acc, extent(g, a, d), idx->e[d]));
    }
    return bind_index(g, acc);
}

static int eval_leaf(gen *g, const fc_array *a, const ix *idx) {
    const fcp_kernel *k = g->k;
    int li = leaf_index(g, a);
    const char *off;
    if (idx->identity && a->ndim == k->ndim && memcmp(a->shape, k->space, (size_t)k->ndim * 8) == 0) {
        off = "i";
        if (g->vec) { /* from the vector loaded for this thread's elements */
            int v = new_var(g);
            line(g, "const fcx_ct_%s v%d = fcx_load_%s(&l%d.v[u]);", dt(a->dtype), v, dt(a->dtype), li);
            return v;
        }
    } else {
        off = linearize(g, a, idx);
        g->strided_load = true;
    }
    int v = new_var(g);
    line(g, "const fcx_ct_%s v%d = fcx_load_%s((const fcx_t_%s *)p.ptr[%d] + %s);", dt(a->dtype),
         v, dt(a->dtype), dt(a->dtype), li, off);
    return v;
}

static int eval_const(gen *g, const fc_array *a) {
    int v = new_var(g);
    fc_dtype t = (fc_dtype)a->dtype;
    if (fcg_is_complex(t)) {
        const char *r = fcg_is_complex(t) ? dt(fcg_real_dtype(t)) : dt(t);
        line(g, "fcx_ct_%s v%d; v%d.re = (fcx_ct_%s)%s; v%d.im = (fcx_ct_%s)%s;", dt(t), v, v, r,
             fval(g, FCX_SLOT_RE, a, 0), v, r, fval(g, FCX_SLOT_IM, a, 0));
    } else if (t == FC_BOOL) {
        line(g, "const fcx_ct_bool v%d = %s != 0;", v, ival(g, FCX_SLOT_IVAL, a, 0));
    } else if (fcg_is_int(t)) {
        line(g, "const fcx_ct_%s v%d = (fcx_ct_%s)%s;", dt(t), v, dt(t), ival(g, FCX_SLOT_IVAL, a, 0));
    } else {
        line(g, "const fcx_ct_%s v%d = (fcx_ct_%s)%s;", dt(t), v, dt(t), fval(g, FCX_SLOT_RE, a, 0));
    }
    return v;
}

static int eval_source(gen *g, const fc_array *a, const ix *idx) {
    fc_dtype t = (fc_dtype)a->dtype;
    int v = new_var(g);
    switch ((fcg_op)a->op) {
    case FCG_OP_ARANGE:
        line(g, "const fcx_ct_%s v%d = fcx_cast_%s(%s + (double)(%s) * %s);", dt(t), v, dt(t),
             fval(g, FCX_SLOT_RE, a, 0), idx->e[0], fval(g, FCX_SLOT_IM, a, 0));
        return v;
    case FCG_OP_LINSPACE: {
        const char *st = fval(g, FCX_SLOT_RE, a, 0), *sp = fval(g, FCX_SLOT_IM, a, 0);
        const char *num = ival(g, FCX_SLOT_COUNT, a, 0);
        line(g, "double y%d;", v);
        line(g, "{");
        g->indent++;
        line(g, "const double div = (double)(%s - %d), delta = %s - %s;", num, a->p.flag ? 1 : 0,
             sp, st);
        line(g, "y%d = (double)(%s);", v, idx->e[0]);
        line(g, "if (div > 0) { const double step = delta / div; y%d = step == 0 ? y%d / div * "
                "delta : y%d * step; } else { y%d = y%d * delta; }", v, v, v, v, v);
        line(g, "y%d += %s;", v, st);
        if (a->p.flag) line(g, "if (%s > 1 && (idx_t)(%s) == %s - 1) y%d = %s;", num, idx->e[0], num, v, sp);
        g->indent--;
        line(g, "}");
        int w = new_var(g);
        line(g, "const fcx_ct_%s v%d = fcx_cast_%s(y%d);", dt(t), w, dt(t), v);
        return w;
    }
    case FCG_OP_EYE:
        line(g, "const fcx_ct_%s v%d = fcx_cast_%s((int)((long long)(%s) + %s == (long long)(%s)));",
             dt(t), v, dt(t), idx->e[0], ival(g, FCX_SLOT_IVAL, a, 0), idx->e[1]);
        return v;
    case FCG_OP_RANDOM: {
        const char *lin = linearize(g, a, idx);
        const char *seed = ival(g, FCX_SLOT_IVAL, a, 0);
        fc_dtype r = fcg_real_dtype(t);
        if (fcg_is_complex(t)) {
            line(g, "fcx_ct_%s v%d; v%d.re = (fcx_ct_%s)fcx_random_unit_%s((unsigned long long)%s, "
                    "2ull * (unsigned long long)(%s)); v%d.im = (fcx_ct_%s)fcx_random_unit_%s("
                    "(unsigned long long)%s, 2ull * (unsigned long long)(%s) + 1ull);",
                 dt(t), v, v, dt(r), dt(r), seed, lin, v, dt(r), dt(r), seed, lin);
        } else {
            line(g, "const fcx_ct_%s v%d = (fcx_ct_%s)fcx_random_unit_%s((unsigned long long)%s, "
                    "(unsigned long long)(%s));", dt(t), v, dt(t), dt(t), seed, lin);
        }
        return v;
    }
    default:
        fail(g, FC_ERR_UNSUPPORTED, "codegen: source %s", fcg_ops[a->op].pyname);
        return v;
    }
}

static int eval_ew(gen *g, const fc_array *a, const ix *idx) {
    int vin[3];
    fc_dtype loop = (fc_dtype)a->loop_dtype;
    for (int i = 0; i < a->nin; i++) {
        const fc_array *c = a->in[i];
        ix ci = broadcast_index(a, c, idx);
        int cv = eval(g, c, &ci);
        fc_dtype want = loop;
        if (a->op == FCG_OP_WHERE && i == 0) want = FC_BOOL;
        if (a->op == FCG_OP_CAST) want = (fc_dtype)c->dtype;
        vin[i] = convert(g, cv, (fc_dtype)c->dtype, want);
    }
    int v = new_var(g);
    const char *cname = fcg_ops[a->op].cname;
    /* f16 and bf16 compute in float but round after every op, as NumPy and the host
     * reference do, so fused and unfused programs give the same bits. */
    fc_dtype od = (fc_dtype)a->dtype;
    if ((od == FC_F16 || od == FC_BF16) && a->op != FCG_OP_CAST) {
        const char *call = a->nin == 1   ? str(g, "fcx_%s(v%d)", cname, vin[0])
                           : a->nin == 2 ? str(g, "fcx_%s(v%d, v%d)", cname, vin[0], vin[1])
                                         : str(g, "fcx_%s(v%d, v%d, v%d)", cname, vin[0], vin[1], vin[2]);
        line(g, "const fcx_ct_%s v%d = fcx_cast_%s(%s);", dt(od), v, dt(od), call);
        return v;
    }
    if (a->op == FCG_OP_POW && a->in[1]->ndim == 0 && (loop == FC_F32 || loop == FC_F64)) {
        /* NumPy's fast path for a scalar exponent (x*x, x, 1/x), as the host computes it. */
        line(g, "const fcx_ct_%s v%d = v%d == (fcx_ct_%s)2 ? fcx_mul(v%d, v%d) : v%d == (fcx_ct_%s)1 ? "
                "fcx_mul(v%d, v%d) : v%d == (fcx_ct_%s)-1 ? fcx_reciprocal(v%d) : fcx_pow(v%d, v%d);",
             dt(loop), v, vin[1], dt(loop), vin[0], vin[0], vin[1], dt(loop), vin[0], vin[1], vin[1],
             dt(loop), vin[0], vin[0], vin[1]);
        return v;
    }
    if (a->op == FCG_OP_CAST)
        line(g, "const fcx_ct_%s v%d = fcx_cast_%s(v%d);", dt(a->dtype), v, dt(a->dtype), vin[0]);
    else if (a->nin == 1)
        line(g, "const fcx_ct_%s v%d = fcx_%s(v%d);", dt(a->dtype), v, cname, vin[0]);
    else if (a->nin == 2)
        line(g, "const fcx_ct_%s v%d = fcx_%s(v%d, v%d);", dt(a->dtype), v, cname, vin[0], vin[1]);
    else
        line(g, "const fcx_ct_%s v%d = fcx_%s(v%d, v%d, v%d);", dt(a->dtype), v, cname, vin[0],
             vin[1], vin[2]);
    return v;
}

static int eval_view(gen *g, const fc_array *a, const ix *idx) {
    const fc_array *c = a->in[0];
    ix ci;
    ci.nd = c->ndim;
    ci.identity = false;
    switch ((fcg_op)a->op) {
    case FCG_OP_BROADCAST:
        ci = broadcast_index(a, c, idx);
        return eval(g, c, &ci);
    case FCG_OP_PERMUTE:
        for (int i = 0; i < a->ndim; i++) ci.e[a->p.a[i]] = idx->e[i];
        return eval(g, c, &ci);
    case FCG_OP_SLICE:
        for (int d = 0; d < c->ndim; d++) {
            if (a->shape[d] == 1)
                ci.e[d] = ival(g, FCX_SLOT_PARAM_A, a, d);
            else
                ci.e[d] = bind_index(g, str(g, "%s + (idx_t)(%s) * %s", ival(g, FCX_SLOT_PARAM_A, a, d),
                                           idx->e[d], ival(g, FCX_SLOT_PARAM_B, a, d)));
        }
        return eval(g, c, &ci);
    case FCG_OP_RESHAPE:
        if (fcg_unit_reshape(a)) {
            int i = 0;
            for (int j = 0; j < c->ndim; j++) {
                if (c->shape[j] == 1) {
                    ci.e[j] = "0";
                    continue;
                }
                while (a->shape[i] == 1) i++;
                ci.e[j] = idx->e[i++];
            }
            ci.identity = false;
            return eval(g, c, &ci);
        } else {
            const char *lin = linearize(g, a, idx);
            int v = new_var(g);
            line(g, "idx_t f%d = %s;", v, lin);
            for (int j = c->ndim - 1; j >= 0; j--) {
                if (c->shape[j] == 1) {
                    ci.e[j] = "0";
                    continue;
                }
                if (j == 0) {
                    ci.e[j] = str(g, "f%d", v);
                    break;
                }
                int q = new_var(g);
                line(g, "const idx_t j%d = f%d %% %s; f%d /= %s;", q, v, extent(g, c, j), v,
                     extent(g, c, j));
                ci.e[j] = str(g, "j%d", q);
            }
            return eval(g, c, &ci);
        }
    case FCG_OP_PAD: {
        int inb = -1;
        for (int d = 0; d < c->ndim; d++) {
            if (a->p.a[d] == 0 && a->p.b[d] == 0) { /* axis not padded: pass through */
                ci.e[d] = idx->e[d];
                continue;
            }
            const char *len = extent(g, c, d);
            int q = new_var(g);
            line(g, "idx_t j%d = (idx_t)(%s) - %s;", q, idx->e[d], ival(g, FCX_SLOT_PARAM_A, a, d));
            switch ((fc_pad_mode)a->p.mode) {
            case FC_PAD_CONSTANT:
                if (inb < 0) {
                    inb = new_var(g);
                    line(g, "bool b%d = true;", inb);
                }
                line(g, "b%d = b%d && j%d >= 0 && j%d < %s;", inb, inb, q, q, len);
                line(g, "j%d = j%d < 0 ? 0 : j%d >= %s ? %s - 1 : j%d;", q, q, q, len, len, q);
                break;
            case FC_PAD_EDGE:
                line(g, "j%d = j%d < 0 ? 0 : j%d >= %s ? %s - 1 : j%d;", q, q, q, len, len, q);
                break;
            case FC_PAD_REFLECT:
                line(g, "j%d = j%d < 0 ? -j%d : j%d >= %s ? 2 * (%s - 1) - j%d : j%d;", q, q, q, q,
                     len, len, q, q);
                break;
            case FC_PAD_SYMMETRIC:
                line(g, "j%d = j%d < 0 ? -j%d - 1 : j%d >= %s ? 2 * %s - 1 - j%d : j%d;", q, q, q, q,
                     len, len, q, q);
                break;
            }
            ci.e[d] = str(g, "j%d", q);
        }
        int cv = eval(g, c, &ci);
        if (inb < 0) return cv;
        int pv = new_var(g);
        fc_dtype t = (fc_dtype)a->dtype;
        line(g, "const fcx_ct_%s v%d = fcx_cast_%s(%s);", dt(t), pv, dt(t),
             fval(g, FCX_SLOT_RE, a, 0));
        int v = new_var(g);
        line(g, "const fcx_ct_%s v%d = b%d ? v%d : v%d;", dt(t), v, inb, cv, pv);
        return v;
    }
    case FCG_OP_CONCAT: {
        int ax = a->p.axis;
        int v = new_var(g);
        fc_dtype t = (fc_dtype)a->dtype;
        line(g, "fcx_ct_%s v%d;", dt(t), v);
        int q = new_var(g);
        line(g, "const idx_t j%d = (idx_t)(%s);", q, idx->e[ax]);
        /* Branch on which input holds the position; each branch is its own memo scope. */
        const char *off = "0";
        for (int i = 0; i < a->nin; i++) {
            const fc_array *ch = a->in[i];
            const char *end = str(g, "%s + %s", off, extent(g, ch, ax));
            if (i + 1 < a->nin) line(g, "%sif (j%d < %s) {", i ? "} else " : "", q, end);
            else line(g, "%s{", i ? "} else " : "");
            g->indent++;
            scope_push(g);
            ix chi = *idx;
            chi.identity = false;
            chi.e[ax] = bind_index(g, str(g, "j%d - (%s)", q, off));
            int cv = eval(g, ch, &chi);
            cv = convert(g, cv, (fc_dtype)ch->dtype, t);
            line(g, "v%d = v%d;", v, cv);
            scope_pop(g);
            g->indent--;
            off = bind_index(g, end);
        }
        line(g, "}");
        return v;
    }
    default:
        fail(g, FC_ERR_UNSUPPORTED, "codegen: view %s", fcg_ops[a->op].pyname);
        return 0;
    }
}

static int eval(gen *g, const fc_array *a, const ix *idx) {
    if (g->err != FC_OK) return 0;
    if (++g->recursion > 4000) {
        fail(g, FC_ERR_UNSUPPORTED, "codegen: expression deeper than 4000");
        g->recursion--;
        return 0;
    }
    uint64_t key = index_key(idx);
    int v = memo_find(g, a, key);
    if (v < 0) {
        int p = pos_of(g, a);
        if (p >= g->k->nnode) v = eval_leaf(g, a, idx);
        else if (g->red_var[p] >= 0) v = g->red_var[p];
        else {
            switch (fcg_ops[a->op].kind) {
            case FCG_KIND_SOURCE:
                v = a->op == FCG_OP_CONST ? eval_const(g, a) : eval_source(g, a, idx);
                break;
            case FCG_KIND_EW: v = eval_ew(g, a, idx); break;
            case FCG_KIND_VIEW: v = eval_view(g, a, idx); break;
            default:
                fail(g, FC_ERR_UNSUPPORTED, "codegen: %s cannot be evaluated here",
                     fcg_ops[a->op].pyname);
                v = 0;
            }
        }
        memo_add(g, a, key, v);
    }
    g->recursion--;
    return v;
}

/* ---- kernel skeletons ------------------------------------------------------------------- */

/* Coordinates c0.. of the space from the flat index i (emitted once per loop body). */
static void decode(gen *g, const char *flat, const char *prefix, int nd, const int64_t *shape,
                   uint32_t only_mask, bool use_space_slots, const fc_array *node) {
    int first = -1;
    for (int d = 0; d < nd; d++)
        if (only_mask & (1u << d)) {
            first = d;
            break;
        }
    if (first < 0) return;
    line(g, "idx_t t_%s = %s;", prefix, flat);
    for (int d = nd - 1; d >= 0; d--) {
        if (!(only_mask & (1u << d))) continue;
        if (shape[d] == 1) {
            line(g, "const idx_t %s%d = 0;", prefix, d);
            continue;
        }
        const char *e = use_space_slots ? ival(g, FCX_SLOT_SPACE_EXTENT, NULL, d) : extent(g, node, d);
        e = str(g, "(idx_t)%s", e); /* divide in the index width, not in 64 bits */
        if (d == first) line(g, "const idx_t %s%d = t_%s;", prefix, d, prefix);
        else line(g, "const idx_t %s%d = t_%s %% %s; t_%s /= %s;", prefix, d, prefix, e, prefix, e);
    }
}

static void identity_index(gen *g, ix *idx, int nd, const char *prefix) {
    idx->nd = nd;
    idx->identity = true;
    for (int d = 0; d < nd; d++) idx->e[d] = str(g, "%s%d", prefix, d);
}

static void store(gen *g, const fc_array *out, int q, int v, const char *off) {
    line(g, "fcx_store_%s((fcx_t_%s *)p.ptr[%d] + %s, v%d);", dt(out->dtype), dt(out->dtype),
         g->k->nleaf + q, off, v);
}

static void gen_ew(gen *g) {
    const fcp_kernel *k = g->k;
    char buf[512];
    size_t len = 0;
    buf[0] = '\0';
    for (int d = 0; d < k->ndim && len < sizeof buf; d++)
        len += (size_t)snprintf(buf + len, sizeof buf - len, "%s(idx_t)%s", d ? " * " : "",
                                ival(g, FCX_SLOT_SPACE_EXTENT, NULL, d));
    line(g, "const idx_t n = %s;", k->ndim ? buf : "1");
    /* The scalar loop is generated first (into its own buffer): it shows whether every
     * buffer is read at the flat index, the condition for the vectorised loop, which then
     * goes in front and leaves the scalar loop the tail. */
    fcg_sb head = g->body;
    memset(&g->body, 0, sizeof g->body);
    g->body.ctx = g->ctx;
    line(g, "for (idx_t i = s0 + (idx_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; "
            "i += (idx_t)gridDim.x * blockDim.x) {");
    g->indent++;
    scope_push(g);
    decode(g, "i", "c", k->ndim, k->space, k->ndim ? (uint32_t)((1ull << k->ndim) - 1) : 0, true, NULL);
    ix idx;
    identity_index(g, &idx, k->ndim, "c");
    for (int q = 0; q < k->nout; q++) {
        int v = eval(g, k->outs[q], &idx);
        store(g, k->outs[q], q, v, "i");
    }
    scope_pop(g);
    g->indent--;
    line(g, "}");
    fcg_sb scalar = g->body;
    g->body = head;
    /* 16-byte accesses: as many elements as the widest dtype fits in 16 bytes (at most 8). */
    size_t widest = 1;
    for (int q = 0; q < k->nleaf; q++)
        if (fc_dtype_size((fc_dtype)k->leaves[q]->dtype) > widest) widest = fc_dtype_size((fc_dtype)k->leaves[q]->dtype);
    for (int q = 0; q < k->nout; q++)
        if (fc_dtype_size((fc_dtype)k->outs[q]->dtype) > widest) widest = fc_dtype_size((fc_dtype)k->outs[q]->dtype);
    int vec = (int)(16 / widest);
    if (vec > 8) vec = 8;
    if (g->strided_load || vec < 2 || k->ndim == 0) {
        line(g, "const idx_t s0 = 0;");
    } else {
        g->vec = vec;
        line(g, "const idx_t nv = n / %d, s0 = nv * %d;", vec, vec);
        line(g, "for (idx_t q = (idx_t)blockIdx.x * blockDim.x + threadIdx.x; q < nv; "
                "q += (idx_t)gridDim.x * blockDim.x) {");
        g->indent++;
        for (int li = 0; li < k->nleaf; li++)
            line(g, "const fcx_vec<fcx_t_%s, %d> l%d = ((const fcx_vec<fcx_t_%s, %d> *)p.ptr[%d])[q];",
                 dt(k->leaves[li]->dtype), vec, li, dt(k->leaves[li]->dtype), vec, li);
        for (int q = 0; q < k->nout; q++)
            line(g, "fcx_vec<fcx_t_%s, %d> w%d;", dt(k->outs[q]->dtype), vec, q);
        line(g, "#pragma unroll");
        line(g, "for (int u = 0; u < %d; u++) {", vec);
        g->indent++;
        scope_push(g);
        line(g, "const idx_t i = q * %d + u;", vec);
        decode(g, "i", "c", k->ndim, k->space, (uint32_t)((1ull << k->ndim) - 1), true, NULL);
        for (int q = 0; q < k->nout; q++) {
            int v = eval(g, k->outs[q], &idx);
            line(g, "fcx_store_%s(&w%d.v[u], v%d);", dt(k->outs[q]->dtype), q, v);
        }
        scope_pop(g);
        g->indent--;
        line(g, "}");
        for (int q = 0; q < k->nout; q++)
            line(g, "((fcx_vec<fcx_t_%s, %d> *)p.ptr[%d])[q] = w%d;", dt(k->outs[q]->dtype), vec,
                 k->nleaf + q, q);
        g->indent--;
        line(g, "}");
        g->vec = 0;
    }
    if (scalar.s) fcg_sb_puts(&g->body, scalar.s);
    if (scalar.failed) g->body.failed = true;
    fcg_sb_free(&scalar);
}

/* Reductions: accumulator variables per reduction, named by its position. */
/* Accumulation dtypes. Float sums, products and moments accumulate in double (complex in
 * c128), as the host reference does, so results agree to the output's precision; max, min
 * and arg* are exact in the loop dtype. acc_mean_dtype is the running value (the sum, or
 * Welford's mean); acc_type names its real part (norms, Welford's M2). */
static fc_dtype acc_mean_dtype(const fc_array *r) {
    fc_dtype l = (fc_dtype)r->loop_dtype;
    switch ((fcg_op)r->op) {
    case FCG_OP_SUM: case FCG_OP_MEAN: case FCG_OP_PROD: case FCG_OP_VAR: case FCG_OP_STD:
    case FCG_OP_NORM:
        if (fcg_is_complex(l)) return FC_C128;
        if (fcg_is_float(l)) return FC_F64;
        return l;
    default: return l;
    }
}
static const char *acc_type(const fc_array *r) {
    return fc_dtype_name(fcg_real_dtype(acc_mean_dtype(r)));
}

/* v (in the loop dtype) converted to the accumulation dtype. */
static int widen(gen *g, const fc_array *r, int v) {
    return convert(g, v, (fc_dtype)r->loop_dtype, acc_mean_dtype(r));
}

/* Declares the per-thread accumulator of reduction r (position pos). */
static void acc_init(gen *g, const fc_array *r, int pos) {
    const char *L = dt(acc_mean_dtype(r)), *A = acc_type(r);
    switch ((fcg_op)r->op) {
    case FCG_OP_SUM: case FCG_OP_MEAN:
        line(g, "fcx_ct_%s a%d = fcx_cast_%s(0);", L, pos, L);
        break;
    case FCG_OP_PROD: line(g, "fcx_ct_%s a%d = fcx_cast_%s(1);", L, pos, L); break;
    case FCG_OP_ANY: line(g, "bool a%d = false;", pos); break;
    case FCG_OP_ALL: line(g, "bool a%d = true;", pos); break;
    case FCG_OP_MAX: case FCG_OP_MIN:
        line(g, "fcx_ct_%s a%d = fcx_cast_%s(0); bool h%d = false;", L, pos, L, pos);
        break;
    case FCG_OP_ARGMAX: case FCG_OP_ARGMIN:
        line(g, "fcx_ct_%s a%d = fcx_cast_%s(0); long long x%d = -1;", L, pos, L, pos);
        break;
    case FCG_OP_VAR: case FCG_OP_STD:
        line(g, "fcx_ct_%s a%d = fcx_cast_%s(0); fcx_ct_%s m%d = fcx_cast_%s(0); long long n%d = 0;",
             L, pos, L, A, pos, A, pos);
        break;
    case FCG_OP_NORM:
        if (r->p.ord == FC_NORM_INF) line(g, "fcx_ct_%s a%d = fcx_cast_%s(0); bool h%d = false;", A, pos, A, pos);
        else line(g, "fcx_ct_%s a%d = fcx_cast_%s(0);", A, pos, A);
        break;
    default: fail(g, FC_ERR_UNSUPPORTED, "codegen: reduction %s", fcg_ops[r->op].pyname);
    }
}

/* Folds value v (in the loop dtype), at position e within the row, into the accumulator. */
static void acc_update(gen *g, const fc_array *r, int pos, int v, const char *e) {
    const char *A = acc_type(r);
    switch ((fcg_op)r->op) {
    case FCG_OP_SUM: case FCG_OP_MEAN: v = widen(g, r, v); line(g, "a%d = fcx_add(a%d, v%d);", pos, pos, v); break;
    case FCG_OP_PROD: v = widen(g, r, v); line(g, "a%d = fcx_mul(a%d, v%d);", pos, pos, v); break;
    case FCG_OP_ANY: line(g, "a%d = a%d || v%d;", pos, pos, v); break;
    case FCG_OP_ALL: line(g, "a%d = a%d && v%d;", pos, pos, v); break;
    case FCG_OP_MAX: case FCG_OP_MIN:
        line(g, "a%d = h%d ? fcx_%s(a%d, v%d) : v%d; h%d = true;", pos, pos,
             r->op == FCG_OP_MAX ? "maximum" : "minimum", pos, v, v, pos);
        break;
    case FCG_OP_ARGMAX: case FCG_OP_ARGMIN:
        /* Sequential order within a thread: a later element wins only if strictly better
         * (or the first NaN). */
        line(g, "if (x%d < 0 || (!fcx_isnan(a%d) && (fcx_isnan(v%d) || fcx_%s(v%d, a%d)))) { a%d = v%d; "
                "x%d = (long long)(%s); }", pos, pos, v, r->op == FCG_OP_ARGMAX ? "greater" : "less",
             v, pos, pos, v, pos, e);
        break;
    case FCG_OP_VAR: case FCG_OP_STD: {
        /* Welford: the running mean and the sum of squared deviations. */
        const char *L = dt(acc_mean_dtype(r));
        v = widen(g, r, v);
        line(g, "{ n%d += 1; const fcx_ct_%s d = fcx_sub(v%d, a%d); a%d = fcx_add(a%d, fcx_div(d, "
                "fcx_cast_%s(n%d))); const fcx_ct_%s d2 = fcx_abs(fcx_sub(v%d, a%d)); const fcx_ct_%s "
                "d1 = fcx_abs(d); m%d = fcx_add(m%d, fcx_mul(d1, d2)); }",
             pos, L, v, pos, pos, pos, L, pos, A, v, pos, A, pos, pos);
        break;
    }
    case FCG_OP_NORM: {
        /* |v| in the loop's real dtype, then widened. */
        const char *src = str(g, "fcx_cast_%s(fcx_abs(v%d))", A, v);
        if (r->p.ord == FC_NORM_L2)
            line(g, "{ const fcx_ct_%s t = %s; a%d = fcx_add(a%d, fcx_mul(t, t)); }", A, src, pos, pos);
        else if (r->p.ord == FC_NORM_L1)
            line(g, "a%d = fcx_add(a%d, %s);", pos, pos, src);
        else
            line(g, "{ const fcx_ct_%s t = %s; a%d = h%d ? fcx_maximum(a%d, t) : t; h%d = true; }", A,
                 src, pos, pos, pos, pos);
        break;
    }
    default: break;
    }
}

/* Shared-memory tree reduction of accumulator `pos` across the block, fixed order. The
 * block's result is left in the accumulator of every thread. */
static void acc_block_reduce(gen *g, const fc_array *r, int pos) {
    const char *L = dt(acc_mean_dtype(r)), *A = acc_type(r);
    bool flag = r->op == FCG_OP_MAX || r->op == FCG_OP_MIN ||
                (r->op == FCG_OP_NORM && r->p.ord == FC_NORM_INF);
    bool arg = r->op == FCG_OP_ARGMAX || r->op == FCG_OP_ARGMIN;
    bool welford = r->op == FCG_OP_VAR || r->op == FCG_OP_STD;
    bool boolean = r->op == FCG_OP_ANY || r->op == FCG_OP_ALL;
    const char *T = boolean                   ? "bool"
                    : r->op == FCG_OP_NORM    ? str(g, "fcx_ct_%s", A)
                                              : str(g, "fcx_ct_%s", L);
    line(g, "{");
    g->indent++;
    line(g, "__shared__ %s s_a[%d];", T, FCX_BLOCK);
    if (flag) line(g, "__shared__ bool s_h[%d];", FCX_BLOCK);
    if (arg) line(g, "__shared__ long long s_x[%d];", FCX_BLOCK);
    if (welford) line(g, "__shared__ fcx_ct_%s s_m[%d]; __shared__ long long s_n[%d];", A, FCX_BLOCK, FCX_BLOCK);
    line(g, "s_a[threadIdx.x] = a%d;", pos);
    if (flag) line(g, "s_h[threadIdx.x] = h%d;", pos);
    if (arg) line(g, "s_x[threadIdx.x] = x%d;", pos);
    if (welford) line(g, "s_m[threadIdx.x] = m%d; s_n[threadIdx.x] = n%d;", pos, pos);
    line(g, "__syncthreads();");
    line(g, "for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {");
    g->indent++;
    line(g, "if (threadIdx.x < s) {");
    g->indent++;
    line(g, "const unsigned o = threadIdx.x + s;");
    switch ((fcg_op)r->op) {
    case FCG_OP_SUM: case FCG_OP_MEAN: line(g, "s_a[threadIdx.x] = fcx_add(s_a[threadIdx.x], s_a[o]);"); break;
    case FCG_OP_PROD: line(g, "s_a[threadIdx.x] = fcx_mul(s_a[threadIdx.x], s_a[o]);"); break;
    case FCG_OP_ANY: line(g, "s_a[threadIdx.x] = s_a[threadIdx.x] || s_a[o];"); break;
    case FCG_OP_ALL: line(g, "s_a[threadIdx.x] = s_a[threadIdx.x] && s_a[o];"); break;
    case FCG_OP_NORM:
        if (r->p.ord != FC_NORM_INF) {
            line(g, "s_a[threadIdx.x] = fcx_add(s_a[threadIdx.x], s_a[o]);");
            break;
        }
        /* fall through: the inf-norm is a max of magnitudes */
        __attribute__((fallthrough));
    case FCG_OP_MAX: case FCG_OP_MIN:
        line(g, "if (s_h[o]) { s_a[threadIdx.x] = s_h[threadIdx.x] ? fcx_%s(s_a[threadIdx.x], s_a[o]) : "
                "s_a[o]; s_h[threadIdx.x] = true; }", r->op == FCG_OP_MIN ? "minimum" : "maximum");
        break;
    case FCG_OP_ARGMAX: case FCG_OP_ARGMIN:
        line(g, "const bool ta = s_x[threadIdx.x] >= 0, tb = s_x[o] >= 0;");
        line(g, "bool take = false;");
        line(g, "if (tb && !ta) take = true;");
        line(g, "else if (ta && tb) {");
        line(g, "    const bool na = fcx_isnan(s_a[threadIdx.x]), nb = fcx_isnan(s_a[o]);");
        line(g, "    if (na || nb) take = nb && (!na || s_x[o] < s_x[threadIdx.x]);");
        line(g, "    else if (fcx_%s(s_a[o], s_a[threadIdx.x])) take = true;",
             r->op == FCG_OP_ARGMAX ? "greater" : "less");
        line(g, "    else if (!fcx_%s(s_a[threadIdx.x], s_a[o])) take = s_x[o] < s_x[threadIdx.x];",
             r->op == FCG_OP_ARGMAX ? "greater" : "less");
        line(g, "}");
        line(g, "if (take) { s_a[threadIdx.x] = s_a[o]; s_x[threadIdx.x] = s_x[o]; }");
        break;
    case FCG_OP_VAR: case FCG_OP_STD:
        /* Chan et al.: merge two (count, mean, M2) summaries. */
        line(g, "const long long na = s_n[threadIdx.x], nb = s_n[o];");
        line(g, "if (nb > 0) {");
        line(g, "    if (na == 0) { s_a[threadIdx.x] = s_a[o]; s_m[threadIdx.x] = s_m[o]; s_n[threadIdx.x] = nb; }");
        line(g, "    else {");
        line(g, "        const long long nn = na + nb;");
        line(g, "        const fcx_ct_%s d = fcx_sub(s_a[o], s_a[threadIdx.x]);", L);
        line(g, "        s_a[threadIdx.x] = fcx_add(s_a[threadIdx.x], fcx_mul(d, fcx_cast_%s((double)nb / (double)nn)));", L);
        line(g, "        const fcx_ct_%s ad = fcx_abs(d);", A);
        line(g, "        s_m[threadIdx.x] = fcx_add(fcx_add(s_m[threadIdx.x], s_m[o]), fcx_mul(fcx_mul(ad, ad), "
                "fcx_cast_%s((double)na * (double)nb / (double)nn)));", A);
        line(g, "        s_n[threadIdx.x] = nn;");
        line(g, "    }");
        line(g, "}");
        break;
    default: break;
    }
    g->indent--;
    line(g, "}");
    line(g, "__syncthreads();");
    g->indent--;
    line(g, "}");
    line(g, "a%d = s_a[0];", pos);
    if (flag) line(g, "h%d = s_h[0];", pos);
    if (arg) line(g, "x%d = s_x[0];", pos);
    if (welford) line(g, "m%d = s_m[0]; n%d = s_n[0];", pos, pos);
    line(g, "__syncthreads();");
    g->indent--;
    line(g, "}");
}

/* The reduction's final value, in its dtype's compute type, into a new variable. */
static int acc_finish(gen *g, const fc_array *r, int pos, const char *count) {
    int v = new_var(g);
    const char *O = dt(r->dtype), *L = dt(acc_mean_dtype(r)), *A = acc_type(r);
    switch ((fcg_op)r->op) {
    case FCG_OP_MEAN:
        line(g, "const fcx_ct_%s v%d = fcx_cast_%s(fcx_div(a%d, fcx_cast_%s((double)(%s))));", O, v, O,
             pos, L, count);
        break;
    case FCG_OP_ARGMAX: case FCG_OP_ARGMIN:
        line(g, "const fcx_ct_i64 v%d = x%d;", v, pos);
        break;
    case FCG_OP_VAR: case FCG_OP_STD: {
        line(g, "const long long dd%d = n%d - %d;", v, pos, r->p.ddof);
        line(g, "const fcx_ct_%s w%d = fcx_div(m%d, fcx_cast_%s((double)(dd%d > 0 ? dd%d : 0)));", A, v,
             pos, A, v, v);
        if (r->op == FCG_OP_STD) line(g, "const fcx_ct_%s v%d = fcx_cast_%s(fcx_sqrt(w%d));", O, v, O, v);
        else line(g, "const fcx_ct_%s v%d = fcx_cast_%s(w%d);", O, v, O, v);
        break;
    }
    case FCG_OP_NORM:
        if (r->p.ord == FC_NORM_L2) line(g, "const fcx_ct_%s v%d = fcx_cast_%s(fcx_sqrt(a%d));", O, v, O, pos);
        else line(g, "const fcx_ct_%s v%d = fcx_cast_%s(a%d);", O, v, O, pos);
        break;
    case FCG_OP_ANY: case FCG_OP_ALL: line(g, "const fcx_ct_bool v%d = a%d;", v, pos); break;
    default: line(g, "const fcx_ct_%s v%d = fcx_cast_%s(a%d);", O, v, O, pos); break;
    }
    (void)A;
    return v;
}

static void gen_rows(gen *g) {
    const fcp_kernel *k = g->k;
    char mbuf[512], lbuf[512];
    size_t ml = 0, ll = 0;
    mbuf[0] = lbuf[0] = '\0';
    for (int d = 0; d < k->ndim; d++) {
        const char *e = ival(g, FCX_SLOT_SPACE_EXTENT, NULL, d);
        if (k->rmask & (1u << d)) ll += (size_t)snprintf(lbuf + ll, sizeof lbuf - ll, "%s(idx_t)%s", ll ? " * " : "", e);
        else ml += (size_t)snprintf(mbuf + ml, sizeof mbuf - ml, "%s(idx_t)%s", ml ? " * " : "", e);
    }
    line(g, "const idx_t M = %s;", ml ? mbuf : "1");
    line(g, "const idx_t L = %s;", ll ? lbuf : "1");
    /* Levels: a reduction that reads another runs in a later phase. */
    int nred = k->nred;
    int *level = fcg_calloc(g->ctx, (size_t)(k->nnode + 1) * sizeof *level);
    if (!level) {
        fail(g, FC_ERR_NOMEM, "codegen: out of memory");
        return;
    }
    int maxlevel = 0;
    for (int i = 0; i < k->nnode; i++) {
        const fc_array *a = k->nodes[i];
        int lv = 0;
        for (int c = 0; c < a->nin; c++) {
            int p = pos_of(g, a->in[c]);
            if (p < k->nnode && level[p] > lv) lv = level[p];
        }
        if (fcg_ops[a->op].kind == FCG_KIND_REDUCE) lv++;
        level[i] = lv;
        if (lv > maxlevel) maxlevel = lv;
    }
    line(g, "for (idx_t row = blockIdx.x; row < M; row += gridDim.x) {");
    g->indent++;
    decode(g, "row", "o", k->ndim, k->space, ~k->rmask & (k->ndim ? (uint32_t)((1ull << k->ndim) - 1) : 0),
           true, NULL);
    /* With the reduced axes trailing, element e of row `row` sits at flat row * L + e, so
     * same-shape buffers load without index arithmetic. */
    int first_red = 0;
    while (first_red < k->ndim && !(k->rmask & (1u << first_red))) first_red++;
    bool trailing = k->ndim && k->rmask == (uint32_t)(((1ull << k->ndim) - 1) & ~((1ull << first_red) - 1));
    ix sidx;
    sidx.nd = k->ndim;
    sidx.identity = trailing;
    for (int d = 0; d < k->ndim; d++) sidx.e[d] = str(g, "%s%d", k->rmask & (1u << d) ? "r" : "o", d);
    for (int lv = 1; lv <= maxlevel; lv++) {
        for (int j = 0; j < nred; j++) {
            int pos = pos_of(g, k->reds[j]);
            if (level[pos] == lv) acc_init(g, k->reds[j], pos);
        }
        line(g, "for (idx_t e = threadIdx.x; e < L; e += blockDim.x) {");
        g->indent++;
        scope_push(g);
        decode(g, "e", "r", k->ndim, k->space, k->rmask, true, NULL);
        if (trailing) line(g, "const idx_t i = row * L + e;");
        for (int j = 0; j < nred; j++) {
            const fc_array *r = k->reds[j];
            int pos = pos_of(g, r);
            if (level[pos] != lv) continue;
            int v = eval(g, r->in[0], &sidx);
            v = convert(g, v, (fc_dtype)r->in[0]->dtype, (fc_dtype)r->loop_dtype);
            acc_update(g, r, pos, v, "e");
        }
        scope_pop(g);
        g->indent--;
        line(g, "}");
        for (int j = 0; j < nred; j++) {
            const fc_array *r = k->reds[j];
            int pos = pos_of(g, r);
            if (level[pos] != lv) continue;
            acc_block_reduce(g, r, pos);
            g->red_var[pos] = acc_finish(g, r, pos, "L");
        }
    }
    fcg_free(g->ctx, level, (size_t)(k->nnode + 1) * sizeof *level);
    /* Outputs over the whole space (ROW) store per element; outputs over the reduced space
     * store once per row. */
    bool any_full = false;
    for (int q = 0; q < k->nout; q++) {
        const fc_array *o = k->outs[q];
        any_full |= o->ndim == k->ndim && memcmp(o->shape, k->space, (size_t)k->ndim * 8) == 0 &&
                    k->rmask && fcg_node_numel(o) != 0 && fcg_ops[o->op].kind != FCG_KIND_REDUCE;
    }
    if (any_full) {
        line(g, "for (idx_t e = threadIdx.x; e < L; e += blockDim.x) {");
        g->indent++;
        scope_push(g);
        decode(g, "e", "r", k->ndim, k->space, k->rmask, true, NULL);
        line(g, "const idx_t i = row * L + e;");
        for (int q = 0; q < k->nout; q++) {
            const fc_array *o = k->outs[q];
            if (!(o->ndim == k->ndim && memcmp(o->shape, k->space, (size_t)k->ndim * 8) == 0) ||
                fcg_ops[o->op].kind == FCG_KIND_REDUCE)
                continue;
            int v = eval(g, o, &sidx);
            store(g, o, q, v, "i");
        }
        scope_pop(g);
        g->indent--;
        line(g, "}");
    }
    line(g, "if (threadIdx.x == 0) {");
    g->indent++;
    scope_push(g);
    for (int q = 0; q < k->nout; q++) {
        const fc_array *o = k->outs[q];
        bool full = o->ndim == k->ndim && memcmp(o->shape, k->space, (size_t)k->ndim * 8) == 0 &&
                    fcg_ops[o->op].kind != FCG_KIND_REDUCE;
        if (full && any_full) continue;
        /* The output's own coordinates from the row number. */
        char pre[16];
        snprintf(pre, sizeof pre, "q%d_", q);
        decode(g, "row", pre, o->ndim, o->shape, o->ndim ? (uint32_t)((1ull << o->ndim) - 1) : 0, false, o);
        ix oidx;
        identity_index(g, &oidx, o->ndim, pre);
        oidx.identity = false;
        int v = eval(g, o, &oidx);
        store(g, o, q, v, "row");
    }
    scope_pop(g);
    g->indent--;
    line(g, "}");
    line(g, "__syncthreads();");
    g->indent--;
    line(g, "}");
}

/* ---- the whole kernel ------------------------------------------------------------------- */

static bool needs_idx64(const fcp_kernel *k) {
    double most = (double)fcg_numel(k->ndim, k->space);
    for (int i = 0; i < k->nleaf; i++)
        if ((double)fcg_node_numel(k->leaves[i]) > most) most = (double)fcg_node_numel(k->leaves[i]);
    for (int i = 0; i < k->nnode; i++)
        if ((double)fcg_node_numel(k->nodes[i]) > most) most = (double)fcg_node_numel(k->nodes[i]);
    /* 32-bit indices need headroom: a grid-stride loop adds up to a whole grid (well below
     * 2^30 threads) past the last element before it stops. */
    return most >= 0x1p30;
}

void fcx_kernel_src_free(fc_ctx *ctx, fcx_kernel_src *s) {
    fcg_strfree(ctx, s->src);
    fcg_free(ctx, s->islots, (size_t)s->nint * sizeof *s->islots);
    fcg_free(ctx, s->fslots, (size_t)s->nflt * sizeof *s->fslots);
    memset(s, 0, sizeof *s);
}

fc_status fcx_generate(fc_ctx *ctx, const fcp_kernel *k, fcx_kernel_src *out) {
    return fcx_generate_named(ctx, k, FCX_KERNEL_NAME, true, out);
}

fc_status fcx_generate_named(fc_ctx *ctx, const fcp_kernel *k, const char *name,
                             bool with_prelude, fcx_kernel_src *out) {
    memset(out, 0, sizeof *out);
    if (k->kind == FCP_KERNEL_LIB)
        return fcg_error(ctx, FC_ERR_UNSUPPORTED, "codegen: library calls are not generated");
    gen g;
    memset(&g, 0, sizeof g);
    g.ctx = ctx;
    g.k = k;
    g.body.ctx = ctx;
    g.indent = 1;
    g.epoch = ++ctx->visit_epoch;
    for (int i = 0; i < k->nnode; i++) {
        k->nodes[i]->visit = g.epoch;
        k->nodes[i]->order = i;
    }
    for (int i = 0; i < k->nleaf; i++) {
        k->leaves[i]->visit = g.epoch;
        k->leaves[i]->order = k->nnode + i;
    }
    g.red_var = fcg_malloc(ctx, (size_t)(k->nnode + 1) * sizeof *g.red_var);
    if (!g.red_var) return fcg_error(ctx, FC_ERR_NOMEM, "codegen: out of memory");
    for (int i = 0; i <= k->nnode; i++) g.red_var[i] = -1;
    bool idx64 = needs_idx64(k);

    if (k->kind == FCP_KERNEL_EW) gen_ew(&g);
    else gen_rows(&g);

    fcg_sb src = {ctx, NULL, 0, 0, false};
    if (g.err == FC_OK) {
        fcg_sb_printf(&src, "// fusec kernel: %s over rank %d", fcp_kernel_kind_names[k->kind], k->ndim);
        if (k->rmask) fcg_sb_printf(&src, ", reducing axes mask 0x%x", k->rmask);
        fcg_sb_printf(&src, ", %s index\n// fused ops:", idx64 ? "64-bit" : "32-bit");
        for (int i = 0; i < k->nnode; i++) fcg_sb_printf(&src, " %s", fcg_ops[k->nodes[i]->op].pyname);
        fcg_sb_puts(&src, "\n");
        fcg_sb_printf(&src, "// codegen version %d\n", FCX_CODEGEN_VERSION);
        if (with_prelude) fcg_sb_puts(&src, fcx_prelude_source);
        else fcg_sb_printf(&src, "namespace %s {\n", name);
        fcg_sb_printf(&src, "\ntypedef %s idx_t;\n", idx64 ? "long long" : "int");
        fcg_sb_puts(&src, "template <class T, int N> struct alignas(sizeof(T) * N) fcx_vec { T v[N]; };\n");
        fcg_sb_printf(&src, "struct fcx_params {\n    const void *ptr[%d];\n    long long i[%d];\n    "
                            "double f[%d];\n};\n",
                      k->nleaf + k->nout, g.nint ? g.nint : 1, g.nflt ? g.nflt : 1);
        fcg_sb_printf(&src, "extern \"C\" __global__ void __launch_bounds__(%d) %s(const fcx_params p) {\n",
                      FCX_BLOCK, name);
        if (g.body.s) fcg_sb_puts(&src, g.body.s);
        fcg_sb_puts(&src, "}\n");
        if (!with_prelude) fcg_sb_puts(&src, "}\n");
    }
    fcg_sb_free(&g.body);
    for (size_t i = 0; i < g.nstr; i++) fcg_strfree(ctx, g.strs[i]);
    fcg_free(ctx, g.strs, g.capstr * sizeof *g.strs);
    fcg_free(ctx, g.memo, g.capmemo * sizeof *g.memo);
    fcg_free(ctx, g.red_var, (size_t)(k->nnode + 1) * sizeof *g.red_var);
    fc_status st = g.err;
    if (st == FC_OK) {
        out->src = fcg_sb_finish(&src);
        if (!out->src) st = fcg_error(ctx, FC_ERR_NOMEM, "codegen: out of memory");
    } else {
        fcg_sb_free(&src);
    }
    /* Exact-size slot arrays, so frees name their sizes. */
    if (st == FC_OK && g.capint != g.nint && g.nint) {
        fcx_slot *s = fcg_realloc(ctx, g.islots, (size_t)g.capint * sizeof *s, (size_t)g.nint * sizeof *s);
        if (s) g.islots = s, g.capint = g.nint;
        else st = fcg_error(ctx, FC_ERR_NOMEM, "codegen: out of memory");
    }
    if (st == FC_OK && g.capflt != g.nflt && g.nflt) {
        fcx_slot *s = fcg_realloc(ctx, g.fslots, (size_t)g.capflt * sizeof *s, (size_t)g.nflt * sizeof *s);
        if (s) g.fslots = s, g.capflt = g.nflt;
        else st = fcg_error(ctx, FC_ERR_NOMEM, "codegen: out of memory");
    }
    if (st != FC_OK) {
        fcg_strfree(ctx, out->src);
        out->src = NULL;
        fcg_free(ctx, g.islots, (size_t)g.capint * sizeof *g.islots);
        fcg_free(ctx, g.fslots, (size_t)g.capflt * sizeof *g.fslots);
        return st;
    }
    out->len = strlen(out->src);
    out->nptr = k->nleaf + k->nout;
    out->nint = g.nint;
    out->nflt = g.nflt;
    out->islots = g.nint ? g.islots : (fcg_free(ctx, g.islots, (size_t)g.capint * sizeof *g.islots), NULL);
    out->fslots = g.nflt ? g.fslots : (fcg_free(ctx, g.fslots, (size_t)g.capflt * sizeof *g.fslots), NULL);
    out->strategy = k->kind == FCP_KERNEL_EW ? FCX_STRATEGY_EW : FCX_STRATEGY_BLOCK_ROW;
    out->block = FCX_BLOCK;
    out->idx64 = idx64;
    return FC_OK;
}
