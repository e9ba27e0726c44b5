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
 *
 * Kernel shapes (fcx_strategy): elementwise kernels stride over the space, 16 bytes a step
 * for buffers read at the flat index. Reduce and row kernels with the reduced axes innermost
 * give a block to each row (a long row of a reduce kernel is split into pieces, each a
 * block's, combined by the block that finishes last); row kernels keep the rows, and values
 * computed from them, that several phases need in shared memory, so each input is read from
 * global memory once. Reduce kernels whose innermost axis is kept give a warp's lanes
 * adjacent columns. Block-level combines are warp shuffles in a fixed tree. The split of the
 * work depends on the shape alone (fcx_launch_config), so results have the same bits on every
 * run and device.
 */
#include "codegen.h"
#include "nodemap.h"
#include "prelude.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <xxhash.h>

/* ---- generator state -------------------------------------------------------------------- */

/* Shifted-slice stencils (gen_ew_tiles): most taps read through the tile, the output tile
 * (rows x columns) and the largest spread of the taps' starts along each axis it stages. */
#define EWT_TAPS_MAX 32
#define EWT_TH 32
#define EWT_TW 32
#define EWT_HALO 4
/* Buffers' shifted slices (gen_ew_strips): the most nodes a kernel that takes strips has. */
#define STRIP_MAX_NODES 256

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
    int scan_var; /* >= 0: the variable holding the scan's value at the current element, while
                     a scan kernel computes its epilogue */
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
    fcg_nodemap pos;      /* kernel position of each node: its nodes, then its leaves */
    bool coords_used;
    int recursion;
    int vec;              /* > 0 while generating the vectorised body: elements per thread */
    bool ew_step;         /* generating gen_ew's vector step (elements q vec + u, u < vec) */
    bool flat_draw;       /* a random draw is read at the flat index somewhere */
    int ew_vec;           /* elementwise kernels: elements a thread's step covers (the
                             vector step's width) */
    int ew_thread_steps;  /* elementwise kernels: steps a thread takes before the grid
                             strides (0: a grid that fills the device once); see
                             ew_grid_policy */
    const char **span;    /* per kernel node: the statement that draws a random node's values
                             for the whole vector step into rd<pos>[], or NULL */
    bool strided_load;    /* a buffer was loaded at anything but the flat index i */
    /* per leaf (k->nleaf entries) */
    bool *vec_used;       /* read from this step's vector l<leaf> */
    bool *rvec_used;      /* row kernels: read at the element's position in the row, from this
                             step's vector lr<leaf> (row_operand) */
    bool rows_vec;        /* generating a row or reduce kernel's vector step */
    bool *flat_used;      /* read at the flat index somewhere */
    /* row kernels: values kept on chip, per kernel position (nodes, then leaves) */
    uint64_t *phases;     /* the phases (a bit each) that evaluate it at the flat index */
    int *fill;            /* the phase that stores its row in shared memory (later phases
                             read it there), 0: not kept */
    int *slot;            /* its shared-memory slot */
    bool *vfill, *vread;  /* vector step: stores it into wc<pos> / reads it from cv<pos> */
    int *pend, *pend_var; /* element body: values to store into shared memory at its end */
    int npend;
    bool fallback;        /* generating the recomputation for launches without the rows on
                             chip: nothing is recorded or stored */
    /* reductions */
    int phase;            /* row kernels: the phase being generated (1.. levels, then the
                             outputs), 0 elsewhere */
    int batch;            /* > 0: Welford updates go to the batch arrays bv<pos>[u] */
    int xch_lane_bytes;   /* the largest exchange group, bytes per lane */
    int part_bytes;       /* bytes of one partial result of all the kernel's reductions */
    int slot_size[FCX_NSIZES]; /* row kernels: shared-memory slots per element byte size */
    int *online;          /* long rows: per kernel node, the position of the max whose phase an
                             online sum folds in (online_pairs), -1 elsewhere; NULL: none */
    bool plain;           /* generating an online sum's exact recomputation: it is a sum again */
    bool online_batch;    /* column batches: online sums store their A in ob<pos>[u] (their
                             terms follow the batch: online_batch_terms) */
    bool seg_run;         /* a reduce kernel's rows are runs of R contiguous elements (row_loops) */
    uint32_t run_axes;    /* seg_run: the reduced axes of a run (after the last kept one) */
    /* shifted-slice stencils (gen_ew_tiles): the value the taps slice, the taps, and whether
       the tiled body is being generated (taps at the space's own index read the tile) */
    const fc_array *tap_src;
    const fc_array *tap[EWT_TAPS_MAX];
    int ntap;
    bool tap_tile;
    bool tap_strips;      /* S is a pad of a buffer: the taps take strips (gen_ew_strips),
                             not tiles */
    bool strip_body;      /* generating the strips: a tap's step along the last axis is 1 */
    bool pad_inside;      /* generating a strip whose taps of S = pad(buffer) all read inside
                             the buffer: the pad is a shift of the index there */
    bool pad_tap;         /* evaluating S for such a tap */
    /* tiled elementwise kernels */
    int *tile_of;         /* per kernel node: its tile (a permute read across the rows), or -1;
                             NULL: not tiled */
    bool tile_write;      /* generating the write phase: tiled permutes read their tile */
    bool idx64;           /* idx_t is 64-bit (needs_idx64): an arg* index field's width */
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
    int64_t p = fcg_nodemap_get(&g->pos, a);
    if (p >= 0) return (int)p;
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
/* Index arguments in the kernel's index width, so that 32-bit kernels do 32-bit arithmetic
 * (a long long argument would widen every product and division it enters). */
static const char *iarg(gen *g, fcx_slot_kind kind, const fc_array *node, int dim) {
    return str(g, "(idx_t)p.i[%d]", slot(g, false, kind, node, dim));
}
static const char *extent(gen *g, const fc_array *a, int d) {
    return iarg(g, FCX_SLOT_EXTENT, a, d);
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
static void pend_add(gen *g, int p, int v);

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

/* Linear offset of idx within the kernel's space (its extents are arguments). */
static const char *linearize_space(gen *g, const ix *idx) {
    const fcp_kernel *k = g->k;
    if (k->ndim == 0) return "0";
    const char *acc = str(g, "(idx_t)(%s)", idx->e[0]);
    for (int d = 1; d < k->ndim; d++) {
        if (k->space[d] == 1) continue; /* idx is 0 there */
        acc = bind_index(g, str(g, "(%s) * %s + (%s)", acc, iarg(g, FCX_SLOT_SPACE_EXTENT, NULL, d),
                                idx->e[d]));
    }
    return bind_index(g, acc);
}

/* A buffer that a row kernel's element reads at its own position within the row (a
 * layernorm's weight and bias): the reduced axes, with the space's extents, read at the
 * element's coordinates r<d>, and nothing else (extent 1 elsewhere). Its offset is then the
 * element's index e in the row, so a vector step of the row reads it as one aligned vector
 * too, where it used to take a scalar load an element (eight a step for a layernorm). */
static bool row_operand(gen *g, const fc_array *a, const ix *idx) {
    const fcp_kernel *k = g->k;
    if (a->ndim == 0 || a->ndim > k->ndim ||
        (int)fc_dtype_size((fc_dtype)a->dtype) * g->vec > 16)
        return false;
    int lead = k->ndim - a->ndim;
    for (int d = 0; d < lead; d++)
        if ((k->rmask & (1u << d)) && k->space[d] != 1) return false;
    char name[16];
    for (int d = 0; d < a->ndim; d++) {
        int sd = d + lead;
        if (a->shape[d] == 1 && k->space[sd] == 1) continue;
        if (!(k->rmask & (1u << sd))) {
            if (a->shape[d] != 1) return false;
            continue;
        }
        snprintf(name, sizeof name, "r%d", sd);
        if (a->shape[d] != k->space[sd] || strcmp(idx->e[d], name) != 0) return false;
    }
    return true;
}

static int eval_leaf(gen *g, const fc_array *a, const ix *idx) {
    const fcp_kernel *k = g->k;
    int li = leaf_index(g, a);
    const char *off;
    const char *T = dt(a->dtype);
    if (idx->identity && a->ndim == k->ndim && memcmp(a->shape, k->space, (size_t)k->ndim * 8) == 0) {
        off = "i";
        g->flat_used[li] = true;
        if (g->vec) { /* from the vector loaded for this thread's elements */
            g->vec_used[li] = true;
            int v = new_var(g);
            line(g, "const fcx_ct_%s v%d = fcx_load_%s(&l%d.v[u]);", T, v, T, li);
            return v;
        }
        int p = k->nnode + li, fill = g->phase > 0 ? g->fill[p] : 0;
        if (fill > 0 && g->phase > fill) {
            /* A row kept on chip by an earlier phase (rc: the launch had room for it). Each
             * thread reads back only elements it stored itself, so no barrier is needed. */
            int v = new_var(g);
            line(g, "const fcx_ct_%s v%d = rc ? fcx_load_%s(&c%d[e]) : fcx_load_%s((const "
                    "fcx_t_%s *)p.ptr[%d] + i);", T, v, T, p, T, T, li);
            return v;
        }
        if (fill > 0 && g->phase == fill) {
            int v = new_var(g);
            line(g, "const fcx_ct_%s v%d = fcx_load_%s((const fcx_t_%s *)p.ptr[%d] + i);", T, v, T, T, li);
            pend_add(g, p, v);
            return v;
        }
    } else if (g->vec && g->rows_vec && row_operand(g, a, idx)) {
        g->rvec_used[li] = true; /* from the vector of this step's row positions */
        int v = new_var(g);
        line(g, "const fcx_ct_%s v%d = fcx_load_%s(&lr%d.v[u]);", T, v, T, li);
        return v;
    } else {
        off = linearize(g, a, idx);
        g->strided_load = true;
    }
    int v = new_var(g);
    line(g, "const fcx_ct_%s v%d = fcx_load_%s((const fcx_t_%s *)p.ptr[%d] + %s);", T, v, T, T, li,
         off);
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

/* A random draw read at the flat index in gen_ew's vector step. The step's elements are
 * consecutive and share Philox blocks (4 or 2 an element): the step draws them together before
 * its loop (the prelude's fcx_rand_*_span, each block once, a normal pair's work once), and
 * element u reads its value. The seed and bound slots exist: the scalar loop came first. */
static int draw_in_step(gen *g, const fc_array *a, int v) {
    fc_dtype t = (fc_dtype)a->dtype, r = fcg_real_dtype(t);
    int p = pos_of(g, a), n = g->vec * (fcg_is_complex(t) ? 2 : 1);
    const char *seed = ival(g, FCX_SLOT_IVAL, a, 0), *stream = ival(g, FCX_SLOT_COUNT, a, 0);
    bool integers = a->p.mode == FCG_RANDOM_INTEGERS;
    if (!g->span[p] && integers) {
        const char *lo = ival(g, FCX_SLOT_PARAM_A, a, 0), *range = ival(g, FCX_SLOT_PARAM_B, a, 0);
        g->span[p] = str(g, "unsigned long long rd%d[%d]; fcx_rand_integer_span<%d, %s>((unsigned "
                            "long long)%s, (unsigned long long)%s, (unsigned long long)%s, "
                            "(unsigned long long)%s, (unsigned long long)q, rd%d);",
                         p, n, n, fc_dtype_size(t) == 8 ? "true" : "false", lo, range, seed,
                         stream, p);
    } else if (!g->span[p]) {
        bool normal = a->p.mode == FCG_RANDOM_NORMAL;
        g->span[p] = str(g, "%s rd%d[%d]; fcx_rand_%s_%s_span<%d>((unsigned long long)%s, "
                            "(unsigned long long)%s, (unsigned long long)q, rd%d);",
                         normal && r != FC_F64 ? "float" : "double", p, n,
                         normal ? "normal" : "uniform", dt(r), n, seed, stream, p);
    }
    if (integers)
        line(g, "const fcx_ct_%s v%d = fcx_cast_%s((%s long long)rd%d[u]);", dt(t), v, dt(t),
             fcg_is_sint(t) ? "" : "unsigned", p);
    else if (fcg_is_complex(t))
        line(g, "fcx_ct_%s v%d; v%d.re = fcx_cast_%s(rd%d[2 * u]); v%d.im = fcx_cast_%s(rd%d[2 * u "
                "+ 1]);", dt(t), v, v, dt(r), p, v, dt(r), p);
    else
        line(g, "const fcx_ct_%s v%d = fcx_cast_%s(rd%d[u]);", dt(t), v, dt(t), p);
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
    case FCG_OP_RANDOM: { /* graph.h's fcg_random_*_at, as the prelude's fcx_rand_* */
        const fcp_kernel *k = g->k;
        const char *seed, *stream;
        fc_dtype r = fcg_real_dtype(t);
        bool cplx = fcg_is_complex(t);
        const char *fn = a->p.mode == FCG_RANDOM_NORMAL ? "normal" : "uniform";
        if (idx->identity && a->ndim == k->ndim &&
            memcmp(a->shape, k->space, (size_t)k->ndim * 8) == 0) {
            g->flat_draw = true;
            if (g->ew_step) return draw_in_step(g, a, v);
        }
        const char *lin = linearize(g, a, idx);
        seed = ival(g, FCX_SLOT_IVAL, a, 0);
        stream = ival(g, FCX_SLOT_COUNT, a, 0);
        if (a->p.mode == FCG_RANDOM_INTEGERS) {
            line(g, "const fcx_ct_%s v%d = fcx_cast_%s((%s long long)fcx_rand_integer(%s, "
                    "(unsigned long long)%s, (unsigned long long)%s, (unsigned long long)%s, "
                    "(unsigned long long)%s, (unsigned long long)(%s)));",
                 dt(t), v, dt(t), fcg_is_sint(t) ? "" : "unsigned",
                 fc_dtype_size(t) == 8 ? "true" : "false", ival(g, FCX_SLOT_PARAM_A, a, 0),
                 ival(g, FCX_SLOT_PARAM_B, a, 0), seed, stream, lin);
            return v;
        }
        if (cplx) {
            line(g, "fcx_ct_%s v%d;", dt(t), v);
            for (int q = 0; q < 2; q++)
                line(g, "v%d.%s = fcx_cast_%s(fcx_rand_%s_%s((unsigned long long)%s, "
                        "(unsigned long long)%s, 2ull * (unsigned long long)(%s) + %dull));",
                     v, q ? "im" : "re", dt(r), fn, dt(r), seed, stream, lin, q);
        } else {
            line(g, "const fcx_ct_%s v%d = fcx_cast_%s(fcx_rand_%s_%s((unsigned long long)%s, "
                    "(unsigned long long)%s, (unsigned long long)(%s)));",
                 dt(t), v, dt(t), fn, dt(t), seed, stream, lin);
        }
        return v;
    }
    default:
        fail(g, FC_ERR_UNSUPPORTED, "codegen: source %s", fcg_ops[a->op].pyname);
        return v;
    }
}

/* The dtype an elementwise node computes input c in: its loop dtype, but where's condition is
 * bool and a cast takes its input as it is. */
static fc_dtype ew_want(const fc_array *a, int c) {
    if (a->op == FCG_OP_WHERE && c == 0) return FC_BOOL;
    if (a->op == FCG_OP_CAST) return (fc_dtype)a->in[c]->dtype;
    return (fc_dtype)a->loop_dtype;
}

/* The prelude call of a 16-bit node's op on its converted inputs (in float; the caller rounds). */
static const char *ew_half_call(gen *g, const fc_array *a, const int *vin) {
    const char *cname = fcg_ops[a->op].cname;
    /* nextafter steps the 16-bit format itself: in float the step would round away */
    if (a->op == FCG_OP_NEXTAFTER) cname = str(g, "nextafter_%s", dt(a->loop_dtype));
    return a->nin == 1   ? str(g, "fcx_%s(v%d)", cname, vin[0])
           : a->nin == 2 ? str(g, "fcx_%s(v%d, v%d)", cname, vin[0], vin[1])
                         : str(g, "fcx_%s(v%d, v%d, v%d)", cname, vin[0], vin[1], vin[2]);
}

static bool row_constant_of(gen *g, const fc_array *a, const fc_array *M, bool *uses, int depth);

/* Node a's value from its inputs' values vin[], each already in ew_want's dtype. */
static int ew_apply(gen *g, const fc_array *a, const int *vin) {
    int v = new_var(g);
    fc_dtype loop = (fc_dtype)a->loop_dtype;
    const char *cname = fcg_ops[a->op].cname;
    /* f16 and bf16 compute in float but round after every op, as NumPy and the host
     * reference do, so fused and unfused programs give the same bits. */
    fc_dtype od = (fc_dtype)a->dtype;
    if ((od == FC_F16 || od == FC_BF16) && a->op != FCG_OP_CAST) {
        line(g, "const fcx_ct_%s v%d = fcx_cast_%s(%s);", dt(od), v, dt(od), ew_half_call(g, a, vin));
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
    bool uses = false, uses0 = false;
    if (a->op == FCG_OP_DIV && loop == FC_F32 && od == FC_F32 &&
        row_constant_of(g, a->in[1], NULL, &uses, 0) && uses &&
        !row_constant_of(g, a->in[0], NULL, &uses0, 0)) {
        /* an element over a row's sum or norm: the divisor's wide reciprocal, which the
         * compiler hoists out of the row's loop, and the prelude's exact division by it */
        line(g, "const fcx_ct_f32 v%d = fcx_div_recip(v%d, v%d, fcx_recip_wide(v%d));", v, vin[0],
             vin[1], vin[1]);
    } else if (a->op == FCG_OP_CAST)
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

static int eval_ew(gen *g, const fc_array *a, const ix *idx) {
    int vin[3];
    for (int i = 0; i < a->nin; i++) {
        const fc_array *c = a->in[i];
        ix ci = broadcast_index(a, c, idx);
        int cv = eval(g, c, &ci);
        vin[i] = convert(g, cv, (fc_dtype)c->dtype, ew_want(a, i));
    }
    return ew_apply(g, a, vin);
}

/* ---- user kernels ----------------------------------------------------------------------
 * A user's code runs in a block of its own: typedefs for its placeholders, its inputs as
 * const locals of their compute types (a raw one as an fcx_raw_<dtype> over the leaf's
 * buffer), `i` where it reads it, its outputs as locals it assigns. #line directives make
 * NVRTC's messages about the user's text name the kernel and the line of its text. Names the
 * body could collide with (i, p, generated vN...) are refused in declarations (graph/user.c).
 */

static const fcg_user_kernel *user_of(gen *g, const fc_array *a) {
    const fcg_user_kernel *k = fcg_user_find(g->ctx, (uint64_t)a->p.ival);
    if (!k) fail(g, FC_ERR_UNSUPPORTED, "codegen: a user kernel's definition is missing");
    return k;
}

/* The user's text, verbatim, its lines numbered as in the text under the kernel's name;
 * statements get a closing ';' as CuPy gives them ("y = sqrt(a)" is a whole post-map). */
static void user_text(gen *g, const fcg_user_kernel *k, const char *what, const char *text,
                      bool statements) {
    fcg_sb_printf(&g->body, "#line 1 \"%s (%s)\"\n", k->name, what);
    fcg_sb_puts(&g->body, text);
    fcg_sb_puts(&g->body, statements ? "\n;\n#line 1 \"generated\"\n" : "\n#line 1 \"generated\"\n");
}

/* typedefs of the placeholders, from node a's inputs. */
static void user_typedefs(gen *g, const fc_array *a, const fcg_user_kernel *k) {
    for (int t = 0; t < k->nplace; t++)
        line(g, "typedef fcx_ct_%s %s;", dt(fcg_user_place_dtype(a, k, t)), k->place[t]);
}

/* Declares input j of a (evaluated at idx unless raw) as the parameter's local. */
static void user_input(gen *g, const fc_array *a, const fcg_user_kernel *k, int j, int var) {
    const fcg_user_param *prm = &k->in[j];
    fc_dtype t = fcg_user_param_dtype(a, k, prm);
    if (prm->raw) line(g, "const fcx_raw_%s %s = fcx_raw%d;", dt(t), prm->name, var);
    else line(g, "const fcx_ct_%s %s = v%d;", dt(t), prm->name, var);
}

/* The values of a's inputs at idx (raw ones: their buffers, declared as fcx_raw<var>): idx
 * indexes a's shape, or for a reduction its inputs' (graph/user.c gives them one shape). */
static void user_args(gen *g, const fc_array *a, const fcg_user_kernel *k, const ix *idx,
                      int *vars) {
    bool reduction = k->kind == FCG_USER_REDUCTION;
    for (int j = 0; j < a->nin && j < k->nin; j++) {
        const fc_array *c = a->in[j];
        if (!k->in[j].raw) {
            ix ci = reduction ? *idx : broadcast_index(a, c, idx);
            vars[j] = eval(g, c, &ci);
            continue;
        }
        if (pos_of(g, c) < g->k->nnode) { /* the planner materialises raw inputs */
            fail(g, FC_ERR_UNSUPPORTED, "codegen: %s: raw input %s is not a buffer", k->name,
                 k->in[j].name);
            return;
        }
        int v = new_var(g);
        const char *n = "1";
        for (int d = 0; d < c->ndim; d++) n = str(g, "%s * %s", n, extent(g, c, d));
        line(g, "const fcx_raw_%s fcx_raw%d = {(const fcx_t_%s *)p.ptr[%d], (long long)(%s)};",
             dt(c->dtype), v, dt(c->dtype), leaf_index(g, c), n);
        vars[j] = v;
    }
}

static int eval_user(gen *g, const fc_array *a, const ix *idx) {
    const fcg_user_kernel *k = user_of(g, a);
    if (!k) return 0;
    int vars[FCG_USER_MAX_PARAMS];
    user_args(g, a, k, idx, vars);
    const char *lin = k->uses_i ? linearize(g, a, idx) : NULL;
    int v = new_var(g);
    const fcg_user_param *want = &k->out[a->p.count];
    fc_dtype od = (fc_dtype)a->dtype;
    line(g, "fcx_ct_%s v%d;", dt(od), v);
    line(g, "{ /* %s */", k->name);
    g->indent++;
    user_typedefs(g, a, k);
    if (lin) line(g, "const idx_t i = %s;", lin);
    for (int j = 0; j < k->nin; j++) user_input(g, a, k, j, vars[j]);
    for (int j = 0; j < k->nout; j++)
        line(g, "fcx_ct_%s %s = fcx_cast_%s(0);", dt(fcg_user_param_dtype(a, k, &k->out[j])),
             k->out[j].name, dt(fcg_user_param_dtype(a, k, &k->out[j])));
    user_text(g, k, "operation", k->body, true);
    /* f16 and bf16 round on the way out, as every op's result does */
    line(g, "v%d = fcx_cast_%s(%s);", v, dt(od), want->name);
    g->indent--;
    line(g, "}");
    return v;
}

/* A user reduction's mapped value of one element (its inputs at idx), in the reduce type. */
static int user_map(gen *g, const fc_array *r, const ix *idx) {
    const fcg_user_kernel *k = user_of(g, r);
    if (!k) return 0;
    int vars[FCG_USER_MAX_PARAMS];
    user_args(g, r, k, idx, vars);
    const char *lin = k->uses_i ? linearize(g, r->in[0], idx) : NULL;
    int v = new_var(g);
    const char *R = dt(r->loop_dtype);
    line(g, "fcx_ct_%s v%d;", R, v);
    line(g, "{ /* %s: map */", k->name);
    g->indent++;
    user_typedefs(g, r, k);
    if (lin) line(g, "const idx_t i = %s;", lin);
    for (int j = 0; j < k->nin; j++) user_input(g, r, k, j, vars[j]);
    fcg_sb_printf(&g->body, "v%d = fcx_cast_%s((\n", v, R);
    user_text(g, k, "map_expr", k->map, false);
    line(g, "));");
    g->indent--;
    line(g, "}");
    return v;
}

/* dst = reduce_expr(a = dst, b = src) in the reduce type. */
static void user_combine(gen *g, const fc_array *r, const char *dst, const char *src) {
    const fcg_user_kernel *k = user_of(g, r);
    if (!k) return;
    const char *R = dt(r->loop_dtype);
    line(g, "{ /* %s: reduce */", k->name);
    g->indent++;
    user_typedefs(g, r, k);
    line(g, "const fcx_ct_%s a = %s, b = %s;", R, dst, src);
    fcg_sb_printf(&g->body, "%s = fcx_cast_%s((\n", dst, R);
    user_text(g, k, "reduce_expr", k->reduce, false);
    line(g, "));");
    g->indent--;
    line(g, "}");
}

/* The user's identity, in the reduce type. */
static const char *user_identity(gen *g, const fc_array *r) {
    const fcg_user_kernel *k = user_of(g, r);
    if (!k) return "0";
    for (const char *c = k->identity; *c; c++)
        if (*c == '\n' || *c == '"' || *c == '\\') {
            fail(g, FC_ERR_INVALID, "%s: the identity must be one line of plain C", k->name);
            return "0";
        }
    return str(g, "fcx_cast_%s((%s))", dt(r->loop_dtype), k->identity);
}

/* The output value from the accumulator a<pos>, through the user's post-map. */
static int user_finish(gen *g, const fc_array *r, int pos) {
    const fcg_user_kernel *k = user_of(g, r);
    int v = new_var(g);
    const char *O = dt(r->dtype);
    line(g, "fcx_ct_%s v%d;", O, v);
    if (!k) return v;
    line(g, "{ /* %s: post_map */", k->name);
    g->indent++;
    user_typedefs(g, r, k);
    line(g, "const fcx_ct_%s a = a%d;", dt(r->loop_dtype), pos);
    line(g, "fcx_ct_%s %s = fcx_cast_%s(0);", O, k->out[0].name, O);
    user_text(g, k, "post_map_expr", k->post, true);
    line(g, "v%d = fcx_cast_%s(%s);", v, O, k->out[0].name);
    g->indent--;
    line(g, "}");
    return v;
}

static int tap_read(gen *g, const fc_array *a);
static int tap_index(const gen *g, const fc_array *a);
static int tile_read(gen *g, const fc_array *a);

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
        if (g->tile_write && idx->identity && g->tile_of[pos_of(g, a)] >= 0)
            return tile_read(g, a);
        for (int i = 0; i < a->ndim; i++) ci.e[a->p.a[i]] = idx->e[i];
        return eval(g, c, &ci);
    case FCG_OP_SLICE:
        if (g->tap_tile && idx->identity) {
            int v = tap_read(g, a);
            if (v >= 0) return v;
        }
        for (int d = 0; d < c->ndim; d++) {
            if (a->shape[d] == 1)
                ci.e[d] = iarg(g, FCX_SLOT_PARAM_A, a, d);
            else if (g->strip_body && d == c->ndim - 1 && tap_index(g, a) >= 0)
                ci.e[d] = bind_index(g, str(g, "%s + %s", iarg(g, FCX_SLOT_PARAM_A, a, d),
                                            idx->e[d]));
            else
                ci.e[d] = bind_index(g, str(g, "%s + (idx_t)(%s) * %s", iarg(g, FCX_SLOT_PARAM_A, a, d),
                                           idx->e[d], iarg(g, FCX_SLOT_PARAM_B, a, d)));
        }
        if (g->pad_inside && tap_index(g, a) >= 0) { /* a read strip_pad_inside checked */
            g->pad_tap = true;
            int v = eval(g, c, &ci);
            g->pad_tap = false;
            return v;
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
            if (g->pad_tap && a == g->tap_src) {
                /* A tap's read inside the input (gen_ew_strips): a shift. The tap's index is
                 * a sum (or a name), and the shift goes in front of it, so that the strip's
                 * constant column offset stays outermost and folds into the load's address. */
                ci.e[d] = bind_index(g, str(g, "-%s + %s", iarg(g, FCX_SLOT_PARAM_A, a, d),
                                            idx->e[d]));
                continue;
            }
            const char *len = extent(g, c, d);
            int q = new_var(g);
            line(g, "idx_t j%d = (idx_t)(%s) - %s;", q, idx->e[d], iarg(g, FCX_SLOT_PARAM_A, a, d));
            switch ((fc_pad_mode)a->p.mode) {
            case FC_PAD_CONSTANT:
                if (inb < 0) {
                    inb = new_var(g);
                    line(g, "bool b%d = true;", inb);
                }
                line(g, "b%d = b%d && j%d >= 0 && j%d < %s;", inb, inb, q, q, len);
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
        if (inb < 0) return eval(g, c, &ci);
        /* Constant mode loads only inside the input: an index clamped into an empty input
         * would read before its buffer. The branch is its own memo scope. */
        fc_dtype t = (fc_dtype)a->dtype;
        int v = new_var(g);
        line(g, "fcx_ct_%s v%d;", dt(t), v);
        line(g, "if (b%d) {", inb);
        g->indent++;
        scope_push(g);
        int cv = eval(g, c, &ci);
        line(g, "v%d = v%d;", v, cv);
        scope_pop(g);
        g->indent--;
        line(g, "} else {");
        line(g, "    v%d = fcx_cast_%s(%s);", v, dt(t), fval(g, FCX_SLOT_RE, a, 0));
        line(g, "}");
        return v;
    }
    case FCG_OP_CONCAT: {
        int ax = a->p.axis;
        int v = new_var(g);
        fc_dtype t = (fc_dtype)a->dtype;
        line(g, "fcx_ct_%s v%d;", dt(t), v);
        int q = new_var(g);
        line(g, "const idx_t j%d = (idx_t)(%s);", q, idx->e[ax]);
        /* Where each input ends along the axis, bound before the branches: a binding made
         * between two branches would land inside the first, out of the next one's sight. */
        const char **ends = fcg_malloc(g->ctx, (size_t)a->nin * sizeof *ends);
        if (!ends) {
            fail(g, FC_ERR_NOMEM, "codegen: out of memory");
            return v;
        }
        const char *off = "0";
        for (int i = 0; i + 1 < a->nin; i++)
            off = ends[i] = bind_index(g, str(g, "%s + %s", off, extent(g, a->in[i], ax)));
        /* Branch on which input holds the position; each branch is its own memo scope. */
        off = "0";
        for (int i = 0; i < a->nin; i++) {
            const fc_array *ch = a->in[i];
            if (i + 1 < a->nin) line(g, "%sif (j%d < %s) {", i ? "} else " : "", q, ends[i]);
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
            if (i + 1 < a->nin) off = ends[i];
        }
        line(g, "}");
        fcg_free(g->ctx, ends, (size_t)a->nin * sizeof *ends);
        return v;
    }
    default:
        fail(g, FC_ERR_UNSUPPORTED, "codegen: view %s", fcg_ops[a->op].pyname);
        return 0;
    }
}

/* take at idx: the index array at the axes that replace the taken one, adjusted by the mode
 * (prelude fcx_take_index), then the input at that position: an indexed load, or the input's
 * expression computed there. */
static int eval_take(gen *g, const fc_array *a, const ix *idx) {
    const fc_array *x = a->in[0], *ind = a->in[1];
    const int ax = a->p.axis, ni = ind->ndim;
    ix ii;
    memset(&ii, 0, sizeof ii);
    ii.nd = ni;
    for (int d = 0; d < ni; d++) ii.e[d] = idx->e[ax + d];
    int v = eval(g, ind, &ii);
    int j = new_var(g);
    line(g, "const idx_t j%d = (idx_t)fcx_take_index(v%d, (long long)%s, %d);", j, v,
         extent(g, x, ax), (int)a->p.mode);
    ix xi;
    memset(&xi, 0, sizeof xi);
    xi.nd = x->ndim;
    for (int d = 0; d < x->ndim; d++)
        xi.e[d] = d < ax ? idx->e[d] : d == ax ? str(g, "j%d", j) : idx->e[d - 1 + ni];
    return eval(g, x, &xi);
}

/* searchsorted at idx: a binary search of the sorted 1-d in[0] for in[1]'s element there,
 * in the loop dtype, NaN after every number (prelude fcx_sort_less); in[0] is read (or
 * computed) at each probe. */
static int eval_searchsorted(gen *g, const fc_array *a, const ix *idx) {
    const fc_array *s = a->in[0], *v = a->in[1];
    const fc_dtype l = (fc_dtype)a->loop_dtype;
    int vv = convert(g, eval(g, v, idx), (fc_dtype)v->dtype, l);
    int r = new_var(g);
    line(g, "idx_t lo%d = 0, hi%d = (idx_t)%s;", r, r, extent(g, s, 0));
    line(g, "while (lo%d < hi%d) {", r, r);
    g->indent++;
    scope_push(g);
    line(g, "const idx_t mid%d = lo%d + (hi%d - lo%d) / 2;", r, r, r, r);
    ix si;
    memset(&si, 0, sizeof si);
    si.nd = 1;
    si.e[0] = str(g, "mid%d", r);
    int sv = convert(g, eval(g, s, &si), (fc_dtype)s->dtype, l);
    if (a->p.mode == FC_SIDE_RIGHT)
        line(g, "if (!fcx_sort_less(v%d, v%d)) lo%d = mid%d + 1;", vv, sv, r, r);
    else
        line(g, "if (fcx_sort_less(v%d, v%d)) lo%d = mid%d + 1;", sv, vv, r, r);
    line(g, "else hi%d = mid%d;", r, r);
    scope_pop(g);
    g->indent--;
    line(g, "}");
    int o = new_var(g);
    line(g, "const fcx_ct_i64 v%d = (fcx_ct_i64)lo%d;", o, r);
    return o;
}

static int eval_node(gen *g, const fc_array *a, const ix *idx) {
    switch (fcg_ops[a->op].kind) {
    case FCG_KIND_SOURCE: return a->op == FCG_OP_CONST ? eval_const(g, a) : eval_source(g, a, idx);
    case FCG_KIND_EW: return eval_ew(g, a, idx);
    case FCG_KIND_VIEW: return eval_view(g, a, idx);
    case FCG_KIND_USER: return eval_user(g, a, idx);
    case FCG_KIND_GATHER:
        return a->op == FCG_OP_SEARCHSORTED ? eval_searchsorted(g, a, idx) : eval_take(g, a, idx);
    case FCG_KIND_SCATTER: /* the copy kernel stores in[0] as the scatter's value */
        if (g->k->kind == FCP_KERNEL_EW) return eval(g, a->in[0], idx);
        break;
    case FCG_KIND_REDUCE: /* the planner gives these kernels of their own roles */
    case FCG_KIND_SCAN:
    case FCG_KIND_LIB:
    case FCG_KIND_SPECIAL: break;
    }
    fail(g, FC_ERR_UNSUPPORTED, "codegen: %s cannot be evaluated here", fcg_ops[a->op].pyname);
    return 0;
}

/* The value at position p (variable v) is stored into shared memory at the end of the
 * element's work, after every read of a slot it may share. */
static void pend_add(gen *g, int p, int v) {
    if (g->fallback) return;
    g->pend[g->npend] = p;
    g->pend_var[g->npend++] = v;
}

/* A computed value kept on chip by an earlier phase: read back, or recomputed when the launch
 * had no room for the rows. */
static int eval_kept(gen *g, const fc_array *a, int p, const ix *idx) {
    const char *T = dt(a->dtype);
    int v = new_var(g);
    line(g, "fcx_ct_%s v%d;", T, v);
    if (g->vec) {
        g->vread[p] = true;
        line(g, "if (rc) v%d = fcx_load_%s(&cv%d.v[u]);", v, T, p);
    } else {
        line(g, "if (rc) v%d = fcx_load_%s(&c%d[e]);", v, T, p);
    }
    line(g, "else {");
    g->indent++;
    scope_push(g);
    bool fb = g->fallback;
    g->fallback = true;
    int w = eval_node(g, a, idx);
    g->fallback = fb;
    line(g, "v%d = v%d;", v, w);
    scope_pop(g);
    g->indent--;
    line(g, "}");
    return v;
}

static int eval(gen *g, const fc_array *a, const ix *idx) {
    if (g->err != FC_OK) return 0;
    if (++g->recursion > 4000) {
        fail(g, FC_ERR_UNSUPPORTED, "codegen: expression deeper than 4000");
        g->recursion--;
        return 0;
    }
    if (g->scan_var >= 0 && a == g->k->outs[0]) { /* a scan kernel's epilogue */
        g->recursion--;
        return g->scan_var;
    }
    uint64_t key = index_key(idx);
    int v = memo_find(g, a, key);
    if (v < 0) {
        int p = pos_of(g, a);
        const fcp_kernel *k = g->k;
        /* Row kernels: values at the flat index of a phase can be kept on chip for later
         * phases (gen_rows decides which, from the phases recorded here). */
        bool flat = g->phase > 0 && idx->identity && a->ndim == k->ndim &&
                    memcmp(a->shape, k->space, (size_t)k->ndim * 8) == 0;
        if (flat && !g->fallback && g->phase < 64) g->phases[p] |= 1ull << g->phase;
        if (p >= k->nnode) v = eval_leaf(g, a, idx);
        else if (g->red_var[p] >= 0) v = g->red_var[p];
        else if (flat && g->fill[p] > 0 && g->phase > g->fill[p]) v = eval_kept(g, a, p, idx);
        else {
            v = eval_node(g, a, idx);
            if (flat && g->fill[p] > 0 && g->phase == g->fill[p]) pend_add(g, p, v);
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
        /* divide in the index width, not in 64 bits */
        const char *e = use_space_slots ? iarg(g, FCX_SLOT_SPACE_EXTENT, NULL, d) : extent(g, node, d);
        if (d == first) line(g, "const idx_t %s%d = t_%s;", prefix, d, prefix);
        else line(g, "const idx_t %s%d = t_%s %% %s; t_%s /= %s;", prefix, d, prefix, e, prefix, e);
    }
}

/* Whether generated text names a coordinate c0.. of the space (no other name is c<digits>). */
static bool mentions_coords(const char *text) {
    for (const char *p = strchr(text, 'c'); p; p = strchr(p + 1, 'c')) {
        bool starts = p == text || !(isalnum((unsigned char)p[-1]) || p[-1] == '_');
        if (starts && isdigit((unsigned char)p[1])) return true;
    }
    return false;
}

/* Mutable coordinates <prefix>0.. of the space at flat index `flat` (zero on extent-1 axes),
 * for coords_advance to step. */
static void decode_mutable(gen *g, const char *flat, const char *prefix) {
    const fcp_kernel *k = g->k;
    line(g, "idx_t t_%s = %s;", prefix, flat);
    for (int d = k->ndim - 1; d >= 0; d--) {
        if (k->space[d] == 1 || d == 0) {
            line(g, "idx_t %s%d = %s;", prefix, d, k->space[d] == 1 ? "0" : str(g, "t_%s", prefix));
            continue;
        }
        const char *e = iarg(g, FCX_SLOT_SPACE_EXTENT, NULL, d);
        line(g, "idx_t %s%d = t_%s %% %s; t_%s /= %s;", prefix, d, prefix, e, prefix, e);
    }
}

/* Moves the coordinates <prefix>0.. to the next flat index: the innermost axis steps and
 * carries outwards (extent-1 axes stay 0; the outermost axis only counts). */
static void coords_advance(gen *g, const char *prefix) {
    const fcp_kernel *k = g->k;
    int opened = 0;
    for (int d = k->ndim - 1; d >= 0; d--) {
        if (k->space[d] == 1) continue;
        bool outer = true;
        for (int e = d - 1; e >= 0; e--) outer &= k->space[e] == 1;
        if (outer) {
            line(g, "++%s%d;", prefix, d);
            break;
        }
        line(g, "if (++%s%d == %s) {", prefix, d, iarg(g, FCX_SLOT_SPACE_EXTENT, NULL, d));
        g->indent++;
        line(g, "%s%d = 0;", prefix, d);
        opened++;
    }
    while (opened-- > 0) {
        g->indent--;
        line(g, "}");
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

/* Opens a grid-stride loop over the kernel's space from flat index `first` + the thread's,
 * with the coordinates c0.. decoded and *idx the identity index over them. */
static void space_loop_open(gen *g, const char *first, ix *idx) {
    const fcp_kernel *k = g->k;
    line(g, "for (idx_t i = %s(idx_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; "
            "i += (idx_t)gridDim.x * blockDim.x) {", first);
    g->indent++;
    scope_push(g);
    decode(g, "i", "c", k->ndim, k->space, k->ndim ? (uint32_t)((1ull << k->ndim) - 1) : 0, true, NULL);
    identity_index(g, idx, k->ndim, "c");
}

/* ---- 16-bit pairs in gen_ew's vector step (issue 13) --------------------------------------
 * Where every node an elementwise kernel computes at the flat index is an elementwise op or a
 * contiguous buffer read there, and every other operand is a single value (a scalar, a weak
 * Python float), the vector step takes its elements two at a time: an f16 / bf16 node's two
 * values are one fcx_h2 (the prelude's 16-bit pairs, which say why each packed op rounds as
 * NumPy's per-op rounding does), a node of another dtype is two scalars (its lanes, computed
 * by the scalar code), a single value one scalar computed once before the loop (splatted to a
 * pair once where a 16-bit op needs it). A kernel with views, gathers, draws or broadcast
 * buffers in its cone keeps the element-by-element step, and the scalar tail loop is the same
 * in both. */

typedef struct pval {
    char kind;    /* 0 not yet; 'P' a pair v[0]; 'L' lanes v[0], v[1]; 'S' a single value v[0] */
    int v[2];
    int fast[2];  /* 'P': its lanes by the fast unpack, -1 until made */
    int exact[2]; /* 'P': by the exact one */
    int splat;    /* 'S': its pair, of dtype splat_to, -1 until made */
    fc_dtype splat_to;
} pval;

typedef struct pair_gen {
    gen *g;
    pval *val;  /* per kernel position */
    fcg_sb pre; /* statements before the loop: single values, their conversions and splats */
    int indent; /* the indentation there */
} pair_gen;

static bool is_half(fc_dtype t) { return t == FC_F16 || t == FC_BF16; }

static bool full_space(const fcp_kernel *k, const fc_array *a) {
    return a->ndim == k->ndim && memcmp(a->shape, k->space, (size_t)k->ndim * 8) == 0;
}

/* A single value computed before the loop: sources, elementwise ops and views of them. */
static bool single_fits(gen *g, const fc_array *a, int depth) {
    if (pos_of(g, a) >= g->k->nnode) return true;
    fcg_kind kd = fcg_ops[a->op].kind;
    if (depth > 64 || (kd != FCG_KIND_SOURCE && kd != FCG_KIND_EW && kd != FCG_KIND_VIEW)) return false;
    for (int i = 0; i < a->nin; i++)
        if (!single_fits(g, a->in[i], depth + 1)) return false;
    return true;
}

/* Whether a's cone at the flat index fits the pair step; counts its 16-bit elementwise ops. */
static bool pair_fits(gen *g, const fc_array *a, bool *seen, int *half) {
    const fcp_kernel *k = g->k;
    int p = pos_of(g, a);
    if (seen[p]) return true;
    seen[p] = true;
    if (!full_space(k, a)) return false;
    if (p >= k->nnode) return true;
    if (fcg_ops[a->op].kind != FCG_KIND_EW) return false;
    if (is_half((fc_dtype)a->dtype)) (*half)++;
    for (int i = 0; i < a->nin; i++) {
        const fc_array *c = a->in[i];
        if (full_space(k, c) ? !pair_fits(g, c, seen, half)
                             : fcg_node_numel(c) != 1 || !single_fits(g, c, 0))
            return false;
    }
    return true;
}

static bool pair_kernel(gen *g, int vec) {
    const fcp_kernel *k = g->k;
    if (vec % 2 || fcg_numel(k->ndim, k->space) < 2) return false;
    size_t n = (size_t)(k->nnode + k->nleaf);
    bool *seen = fcg_calloc(g->ctx, n + 1);
    if (!seen) {
        fail(g, FC_ERR_NOMEM, "codegen: out of memory");
        return false;
    }
    int half = 0;
    bool ok = true;
    for (int q = 0; q < k->nout && ok; q++) ok = pair_fits(g, k->outs[q], seen, &half);
    fcg_free(g->ctx, seen, n + 1);
    return ok && half > 0;
}

/* Lines emitted meanwhile go before the loop. */
static void pre_open(pair_gen *P, fcg_sb *save, int *indent) {
    *save = P->g->body;
    *indent = P->g->indent;
    P->g->body = P->pre;
    P->g->indent = P->indent;
}
static void pre_close(pair_gen *P, const fcg_sb *save, int indent) {
    P->pre = P->g->body;
    P->g->body = *save;
    P->g->indent = indent;
}

static pval *peval(pair_gen *P, const fc_array *a);

/* Input c's value: its pair or lanes, or a single value computed before the loop. */
static pval *pinput(pair_gen *P, const fc_array *c) {
    gen *g = P->g;
    if (full_space(g->k, c)) return peval(P, c);
    pval *x = &P->val[pos_of(g, c)];
    if (!x->kind) {
        ix z; /* what broadcast_index gives a single value: 0 on every axis */
        memset(&z, 0, sizeof z);
        z.nd = c->ndim;
        for (int d = 0; d < c->ndim; d++) z.e[d] = "0";
        fcg_sb save;
        int ind;
        pre_open(P, &save, &ind);
        x->kind = 'S';
        x->v[0] = eval(g, c, &z);
        pre_close(P, &save, ind);
    }
    return x;
}

/* c's two values as variables of dtype `want` (compute types); `exact`: an f16 NaN keeps its
 * sign and payload (the fast unpack may not). */
static void planes(pair_gen *P, const fc_array *c, fc_dtype want, bool exact, int *out) {
    gen *g = P->g;
    pval *x = pinput(P, c);
    fc_dtype from = (fc_dtype)c->dtype;
    if (x->kind == 'S') {
        fcg_sb save;
        int ind;
        pre_open(P, &save, &ind);
        out[0] = out[1] = convert(g, x->v[0], from, want);
        pre_close(P, &save, ind);
        return;
    }
    int l[2] = {x->v[0], x->v[1]};
    if (x->kind == 'P') {
        bool fast = !exact && from == FC_F16; /* bf16's unpack is exact anyway */
        int *m = fast ? x->fast : x->exact;
        if (m[0] < 0) {
            m[0] = new_var(g);
            m[1] = new_var(g);
            line(g, "const float v%d = fcx_lo%s_%s(v%d);", m[0], fast ? "" : "x", dt(from), x->v[0]);
            line(g, "const float v%d = fcx_hi%s_%s(v%d);", m[1], fast ? "" : "x", dt(from), x->v[0]);
        }
        l[0] = m[0];
        l[1] = m[1];
    }
    out[0] = convert(g, l[0], from, want);
    out[1] = convert(g, l[1], from, want);
}

/* c's values as a pair of the 16-bit dtype `to`. */
static int ppair(pair_gen *P, const fc_array *c, fc_dtype to) {
    gen *g = P->g;
    pval *x = pinput(P, c);
    fc_dtype from = (fc_dtype)c->dtype;
    if (x->kind == 'P' && from == to) return x->v[0];
    if (x->kind == 'S' && x->splat >= 0 && x->splat_to == to) return x->splat;
    int v = new_var(g);
    if (x->kind == 'S') {
        fcg_sb save;
        int ind;
        pre_open(P, &save, &ind);
        int w = convert(g, x->v[0], from, to);
        line(g, "const fcx_h2 v%d = fcx_splat_%s(v%d);", v, dt(to), w);
        pre_close(P, &save, ind);
        x->splat = v;
        x->splat_to = to;
        return v;
    }
    int l[2];
    planes(P, c, to, true, l); /* each a value of `to` held in a float: its bits move */
    line(g, "const fcx_h2 v%d = fcx_join_%s(v%d, v%d);", v, dt(to), l[0], l[1]);
    return v;
}

/* The ops a packed instruction or a bit move computes exactly (see the prelude's pairs). */
static const char *pair_native(const fc_array *a) {
    if (a->loop_dtype != a->dtype) return NULL;
    switch ((fcg_op)a->op) {
    case FCG_OP_ADD: return "add2_";
    case FCG_OP_SUB: return "sub2_";
    case FCG_OP_MUL: return "mul2_";
    case FCG_OP_SQUARE: return "mul2_";
    case FCG_OP_NEGATIVE: return "neg2";
    case FCG_OP_ABS: return "abs2";
    case FCG_OP_WHERE: return "where2";
    default: return NULL;
    }
}

static pval *peval(pair_gen *P, const fc_array *a) {
    gen *g = P->g;
    const fcp_kernel *k = g->k;
    int p = pos_of(g, a);
    pval *x = &P->val[p];
    if (x->kind || g->err != FC_OK) return x;
    fc_dtype od = (fc_dtype)a->dtype;
    const char *T = dt(od);
    if (p >= k->nnode) { /* a buffer read at the flat index: from this step's vector */
        int li = p - k->nnode;
        g->vec_used[li] = g->flat_used[li] = true;
        x->v[0] = new_var(g);
        if (is_half(od)) {
            x->kind = 'P';
            line(g, "const fcx_h2 v%d = fcx_ld2_%s(&l%d.v[2 * u]);", x->v[0], T, li);
        } else {
            x->kind = 'L';
            x->v[1] = new_var(g);
            line(g, "const fcx_ct_%s v%d = fcx_load_%s(&l%d.v[2 * u]);", T, x->v[0], T, li);
            line(g, "const fcx_ct_%s v%d = fcx_load_%s(&l%d.v[2 * u + 1]);", T, x->v[1], T, li);
        }
        return x;
    }
    int vin[2][3];
    const char *nat = is_half(od) ? pair_native(a) : NULL;
    if (is_half(od) && a->op == FCG_OP_CAST) {
        int v = ppair(P, a->in[0], od);
        x->kind = 'P';
        x->v[0] = v;
    } else if (nat) {
        int h[3];
        bool where = a->op == FCG_OP_WHERE;
        if (where) planes(P, a->in[0], FC_BOOL, true, vin[0]);
        for (int i = where; i < a->nin; i++) h[i] = ppair(P, a->in[i], od);
        int v = new_var(g);
        if (where)
            line(g, "const fcx_h2 v%d = fcx_where2(v%d, v%d, v%d, v%d);", v, vin[0][0], vin[0][1], h[1], h[2]);
        else if (a->nin == 2)
            line(g, "const fcx_h2 v%d = fcx_%s%s(v%d, v%d);", v, nat, T, h[0], h[1]);
        else if (a->op == FCG_OP_SQUARE)
            line(g, "const fcx_h2 v%d = fcx_%s%s(v%d, v%d);", v, nat, T, h[0], h[0]);
        else
            line(g, "const fcx_h2 v%d = fcx_%s(v%d);", v, nat, h[0]);
        x->kind = 'P';
        x->v[0] = v;
    } else {
        /* Lane by lane, the scalar code. A 16-bit result is one packed rounding of the two
         * float results, which see no more of a NaN operand than that it is NaN (copysign
         * aside), so those operands may unpack fast. */
        bool exact = !is_half(od) || a->op == FCG_OP_COPYSIGN;
        int l[3][2];
        for (int i = 0; i < a->nin; i++) planes(P, a->in[i], ew_want(a, i), exact, l[i]);
        for (int j = 0; j < 2; j++)
            for (int i = 0; i < a->nin; i++) vin[j][i] = l[i][j];
        if (is_half(od)) {
            int v = new_var(g);
            line(g, "const fcx_h2 v%d = fcx_pack_%s(%s, %s);", v, T, ew_half_call(g, a, vin[0]),
                 ew_half_call(g, a, vin[1]));
            x->kind = 'P';
            x->v[0] = v;
        } else {
            int v0 = ew_apply(g, a, vin[0]), v1 = ew_apply(g, a, vin[1]);
            x->kind = 'L';
            x->v[0] = v0;
            x->v[1] = v1;
        }
    }
    return x;
}

/* The pair step's loop body: outputs into w<q>.v[2u], v[2u + 1]. */
static void pair_step(gen *g, pair_gen *P, int vec) {
    const fcp_kernel *k = g->k;
    line(g, "#pragma unroll");
    line(g, "for (int u = 0; u < %d; u++) {", vec / 2);
    g->indent++;
    scope_push(g);
    for (int q = 0; q < k->nout; q++) {
        const fc_array *o = k->outs[q];
        fc_dtype od = (fc_dtype)o->dtype;
        if (is_half(od)) {
            line(g, "fcx_st2_%s(&w%d.v[2 * u], v%d);", dt(od), q, ppair(P, o, od));
        } else {
            int l[2];
            planes(P, o, od, true, l);
            line(g, "fcx_store_%s(&w%d.v[2 * u], v%d);", dt(od), q, l[0]);
            line(g, "fcx_store_%s(&w%d.v[2 * u + 1], v%d);", dt(od), q, l[1]);
        }
    }
    scope_pop(g);
    g->indent--;
    line(g, "}");
}

/* ---- shifted-slice stencils (issue 13 item 6) ----------------------------------------------
 * An elementwise kernel that reads one value S (a buffer, or a computed value such as a pad)
 * through three or more slices ("taps") of the space's shape, each at the space's own index
 * (W9's nine windows of pad(x), a Laplacian's five of u), spends most of its time on index
 * arithmetic when each tap computes its own offsets and, for a pad, its own reflection. Such a
 * kernel gets a second body in front of the direct one: a block takes output tiles of EWT_TH
 * rows by EWT_TW columns of the last two axes, evaluates S once at each element of the tile
 * plus its halo (S's own code: a coalesced load, or the pad's reflection once an element) into
 * shared memory, and computes each output with every tap reading the tile. Only where the taps'
 * values come from changes, so both bodies give the same bits. Which body runs is decided once
 * per launch from the arguments (a uniform branch): the taps must step by 1 along the last two
 * axes, start within EWT_HALO of each other there, and agree on the other axes; so one kernel
 * serves every shape and slice. Blocks take tiles grid-stride and threads take the tile's
 * elements block-stride, so any grid and block size are correct. */

/* Whether t is a slice of src of the space's shape. */
static bool tap_of(const fcp_kernel *k, const fc_array *t, const fc_array *src) {
    return t->op == FCG_OP_SLICE && t->in[0] == src && t->ndim == k->ndim &&
           memcmp(t->shape, k->space, (size_t)k->ndim * 8) == 0;
}

/* Picks S, the value with the most taps (at least 3; the first in kernel order on a tie). */
static void taps_find(gen *g) {
    const fcp_kernel *k = g->k;
    g->ntap = 0;
    if (k->kind != FCP_KERNEL_EW || k->ndim < 2) return;
    int best = 0;
    for (int i = 0; i < k->nnode; i++) {
        const fc_array *src = k->nodes[i]->op == FCG_OP_SLICE ? k->nodes[i]->in[0] : NULL;
        if (!src || !tap_of(k, k->nodes[i], src)) continue;
        bool seen = false;
        for (int j = 0; j < i && !seen; j++) seen = tap_of(k, k->nodes[j], src);
        int n = 0;
        for (int j = i; j < k->nnode; j++) n += tap_of(k, k->nodes[j], src);
        if (!seen && n > best) {
            best = n;
            g->tap_src = src;
        }
    }
    if (best < 3) return;
    /* The taps of a pad of a buffer take strips (gen_ew_strips): neighbouring threads' taps
     * hit L1, and inside the buffer the pad is a shift of the index (W9: 0.0961 ms on an
     * H200, the tiles 0.110). A buffer's own taps keep the direct loops: the 5-point
     * Laplacian took 0.204 ms there, 0.249 in strips and 0.305 in tiles (H200, sessions 16
     * and 17). The tiles pay where S is computed: each element of it once, not once a tap. */
    const bool pad = g->tap_src->op == FCG_OP_PAD;
    const fc_array *base = pad ? g->tap_src->in[0] : g->tap_src;
    bool leaf = false;
    for (int q = 0; q < k->nleaf; q++) leaf |= k->leaves[q] == base;
    if (leaf && !pad) {
        g->tap_src = NULL;
        return;
    }
    g->tap_strips = leaf;
    /* a long computation is bound by its arithmetic, and the strips' copies of it (up to
     * three a column of a thread's) would make its source long: the direct loops serve it */
    if (g->tap_strips && k->nnode > STRIP_MAX_NODES) return;
    for (int i = 0; i < k->nnode && g->ntap < EWT_TAPS_MAX; i++)
        if (tap_of(k, k->nodes[i], g->tap_src)) g->tap[g->ntap++] = k->nodes[i];
}

/* Which tap a is, or -1. */
static int tap_index(const gen *g, const fc_array *a) {
    for (int t = 0; t < g->ntap; t++)
        if (g->tap[t] == a) return t;
    return -1;
}

/* A tap read at the space's own index in the tiled body: from the tile. -1: not a tap. */
static int tap_read(gen *g, const fc_array *a) {
    int t = tap_index(g, a);
    if (t < 0) return -1;
    int v = new_var(g);
    line(g, "const fcx_ct_%s v%d = tt_at[tt_o%d];", dt(a->dtype), v, t);
    return v;
}

/* Ends a C block opened with its own memo scope. */
static void block_close(gen *g) {
    scope_pop(g);
    g->indent--;
    line(g, "}");
}

/* Every output evaluated at the space's coordinates c0, c1, ... (the caller declares them;
 * an axis of extent 1 needs none) and stored at their flat index i: the tiled bodies' last
 * phase. */
static void outputs_at_coords(gen *g) {
    const fcp_kernel *k = g->k;
    const char *flat = "c0";
    for (int d = 1; d < k->ndim; d++)
        if (k->space[d] != 1)
            flat = bind_index(g, str(g, "(%s) * %s + c%d", flat,
                                     iarg(g, FCX_SLOT_SPACE_EXTENT, NULL, d), d));
    line(g, "const idx_t i = %s;", flat);
    ix idx;
    identity_index(g, &idx, k->ndim, "c");
    for (int q = 0; q < k->nout; q++) {
        int v = eval(g, k->outs[q], &idx);
        store(g, k->outs[q], q, v, "i");
    }
}

/* The tiled body: a block of its own that returns, in front of the direct loops. */
static void gen_ew_tiles(gen *g) {
    const fcp_kernel *k = g->k;
    const int nd = k->ndim, ra = nd - 2, ca = nd - 1;
    const int SH = EWT_TH + EWT_HALO, SW = EWT_TW + EWT_HALO;
    line(g, "{ /* shifted slices: tiles through shared memory when the taps allow (above) */");
    g->indent++;
    scope_push(g);
    /* the taps' starts along the last two axes, their spread, and the run-time conditions */
    for (int t = 0; t < g->ntap; t++)
        line(g, "const idx_t tt_a%d = %s, tt_b%d = %s;", t,
             iarg(g, FCX_SLOT_PARAM_A, g->tap[t], ra), t, iarg(g, FCX_SLOT_PARAM_A, g->tap[t], ca));
    line(g, "idx_t tt_ma = tt_a0, tt_xa = tt_a0, tt_mb = tt_b0, tt_xb = tt_b0;");
    line(g, "bool tt_ok = true;");
    for (int t = 0; t < g->ntap; t++) {
        const fc_array *tap = g->tap[t];
        if (t > 0) {
            for (int ax = 0; ax < 2; ax++)
                line(g, "tt_m%c = tt_%c%d < tt_m%c ? tt_%c%d : tt_m%c; "
                        "tt_x%c = tt_%c%d > tt_x%c ? tt_%c%d : tt_x%c;",
                     "ab"[ax], "ab"[ax], t, "ab"[ax], "ab"[ax], t, "ab"[ax], "ab"[ax], "ab"[ax], t,
                     "ab"[ax], "ab"[ax], t, "ab"[ax]);
        }
        for (int d = 0; d < nd; d++) {
            bool unit = k->space[d] == 1; /* the slice reads its start alone there */
            if (d >= ra && !unit)
                line(g, "tt_ok = tt_ok && %s == 1;", iarg(g, FCX_SLOT_PARAM_B, tap, d));
            if (d < ra && t > 0) {
                line(g, "tt_ok = tt_ok && %s == %s;", iarg(g, FCX_SLOT_PARAM_A, tap, d),
                     iarg(g, FCX_SLOT_PARAM_A, g->tap[0], d));
                if (!unit)
                    line(g, "tt_ok = tt_ok && %s == %s;", iarg(g, FCX_SLOT_PARAM_B, tap, d),
                         iarg(g, FCX_SLOT_PARAM_B, g->tap[0], d));
            }
        }
    }
    const char *R = iarg(g, FCX_SLOT_SPACE_EXTENT, NULL, ra);
    const char *C = iarg(g, FCX_SLOT_SPACE_EXTENT, NULL, ca);
    line(g, "if (tt_ok && tt_xa - tt_ma <= %d && tt_xb - tt_mb <= %d && %s >= FCX_TILE_MIN_EXTENT "
            "&& %s >= FCX_TILE_MIN_EXTENT) {", EWT_HALO, EWT_HALO, R, C);
    g->indent++;
    const char *T = dt(g->tap_src->dtype);
    line(g, "__shared__ fcx_ct_%s tt_tile[%d * %d];", T, SH, SW);
    line(g, "FCX_STENCIL_TILED();");
    line(g, "const idx_t tt_tr = (%s + %d) / %d, tt_tc = (%s + %d) / %d;", R, EWT_TH - 1, EWT_TH, C,
         EWT_TW - 1, EWT_TW);
    const char *nt = "tt_tr * tt_tc";
    for (int d = 0; d < ra; d++)
        nt = str(g, "%s * (idx_t)%s", nt, ival(g, FCX_SLOT_SPACE_EXTENT, NULL, d));
    line(g, "const idx_t tt_nt = %s;", nt);
    for (int t = 0; t < g->ntap; t++)
        line(g, "const int tt_o%d = (int)((tt_a%d - tt_ma) * %d + (tt_b%d - tt_mb));", t, t, SW, t);
    line(g, "for (idx_t tt_t = (idx_t)blockIdx.x; tt_t < tt_nt; tt_t += (idx_t)gridDim.x) {");
    g->indent++;
    scope_push(g);
    line(g, "const idx_t tt_r0 = tt_t / tt_tc %% tt_tr * %d, tt_q0 = tt_t %% tt_tc * %d;", EWT_TH,
         EWT_TW);
    if (ra > 0) {
        line(g, "const idx_t tt_bt = tt_t / tt_tc / tt_tr;");
        decode(g, "tt_bt", "c", nd, k->space, (uint32_t)((1u << ra) - 1), true, NULL);
    }
    line(g, "const int tt_nr = (int)(%s - tt_r0 < %d ? %s - tt_r0 : %d) + (int)(tt_xa - tt_ma);", R,
         EWT_TH, R, EWT_TH);
    line(g, "const int tt_nc = (int)(%s - tt_q0 < %d ? %s - tt_q0 : %d) + (int)(tt_xb - tt_mb);", C,
         EWT_TW, C, EWT_TW);
    line(g, "__syncthreads(); /* the last tile's readers are done */");
    /* S at the tile and its halo: every element staged is one some tap reads (the taps are
     * slices within S), so all lie inside S */
    line(g, "for (int tt_e = (int)threadIdx.x; tt_e < %d; tt_e += (int)blockDim.x) {", SH * SW);
    g->indent++;
    line(g, "const int tt_sr = tt_e / %d, tt_sc = tt_e - tt_sr * %d;", SW, SW);
    line(g, "if (tt_sr < tt_nr && tt_sc < tt_nc) {");
    g->indent++;
    scope_push(g);
    ix si;
    si.nd = nd;
    si.identity = false;
    for (int d = 0; d < ra; d++) /* tap 0's coordinate: every tap's (checked above) */
        si.e[d] = k->space[d] == 1 ? iarg(g, FCX_SLOT_PARAM_A, g->tap[0], d)
                                   : bind_index(g, str(g, "%s + (idx_t)(c%d) * %s",
                                                       iarg(g, FCX_SLOT_PARAM_A, g->tap[0], d), d,
                                                       iarg(g, FCX_SLOT_PARAM_B, g->tap[0], d)));
    si.e[ra] = "tt_r0 + tt_ma + tt_sr";
    si.e[ca] = "tt_q0 + tt_mb + tt_sc";
    int sv = eval(g, g->tap_src, &si);
    line(g, "tt_tile[tt_e] = v%d;", sv);
    block_close(g);
    g->indent--;
    line(g, "}");
    line(g, "__syncthreads();");
    /* the outputs at the tile's elements, the taps from the tile */
    line(g, "for (int tt_e = (int)threadIdx.x; tt_e < %d; tt_e += (int)blockDim.x) {",
         EWT_TH * EWT_TW);
    g->indent++;
    scope_push(g);
    line(g, "const int tt_er = tt_e / %d, tt_ec = tt_e - tt_er * %d;", EWT_TW, EWT_TW);
    line(g, "const idx_t c%d = tt_r0 + tt_er, c%d = tt_q0 + tt_ec;", ra, ca);
    line(g, "if (c%d >= %s || c%d >= %s) continue;", ra, R, ca, C);
    /* the taps' offsets are loop-invariant: an add per tap to this address */
    line(g, "const fcx_ct_%s *const tt_at = tt_tile + (tt_er * %d + tt_ec);", T, SW);
    g->tap_tile = true;
    outputs_at_coords(g);
    g->tap_tile = false;
    block_close(g);
    block_close(g);
    line(g, "return;");
    g->indent--;
    line(g, "}");
    block_close(g);
}

/* ---- shifted slices of a pad of a buffer: strips ------------------------------------------
 * Where S is a pad of a buffer (W9's), neighbouring threads share its taps' lines through L1
 * and the tiles do not pay (taps_find); what the direct loops spend is instructions (about 54
 * an output of the 5-point Laplacian of a buffer, measured when strips served buffers too:
 * each output decodes its coordinates and builds every tap's offset from the slices' starts
 * and steps, then waits on its loads). The strips body gives a thread several outputs of one
 * row, 32 columns apart: a run of 32
 * threads (a warp on the device) covers a strip of 32 x V consecutive columns, so each load
 * of a warp is a coalesced row segment. Coordinates are decoded once a strip; with every
 * tap's step along the last axis 1 (checked once a launch, as the tiles' conditions are) a
 * tap's column at output u is its column at output 0 plus 32 u, so its V loads are one
 * address plus constants, and all of a whole strip's loads are issued before its first
 * store (the compiler must assume an output may alias S). A strip that overhangs its row
 * guards each output. For S = pad(x), a whole strip whose taps all read inside x (checked
 * per strip) evaluates the pad as a shift of the index, without its boundary rule. The outputs
 * are the same expressions at the same coordinates as in the direct loops, so all bodies give
 * the same bits. */

/* Outputs per thread of a strip: two. W9's nine f32 taps at 8 outputs a thread held 62
 * registers (four blocks of 256 a multiprocessor) and reached 34.7% of the copy floor, at 4
 * 36.3%, at 2 43.9% (H200, session 18 call 5): the strip's loads in flight matter less than
 * the threads that issue them. */
#define STRIP_OUTPUTS_PER_THREAD 2

/* The outputs of the strip's V columns c<last> + 32 u, stored at ts_i + 32 u: all evaluated
 * first, or (guarded) each only where its column lies in the row. */
static void strip_outputs(gen *g, int v, bool guarded, bool taps_first) {
    const fcp_kernel *k = g->k;
    const int ca = k->ndim - 1;
    const char *C = iarg(g, FCX_SLOT_SPACE_EXTENT, NULL, ca);
    /* unguarded: the taps at every column first (taps_first: where they are loads, not a
     * pad's reflections, which would hold too many registers), then the outputs, then their
     * stores (each pass finds the values of the one before in the memo), so that every load
     * is issued before the arithmetic (an exact division's slow path is a call the compiler
     * does not move loads across) */
    for (int pass = guarded || !taps_first ? 1 : 0; pass < (guarded ? 2 : 3); pass++)
        for (int u = 0; u < v; u++) {
            ix idx;
            identity_index(g, &idx, k->ndim, "c");
            idx.identity = false; /* buffers read at their coordinates: there is no flat i */
            if (u > 0) idx.e[ca] = str(g, "c%d + %d", ca, 32 * u);
            if (guarded) {
                line(g, "if (c%d + %d < %s) {", ca, 32 * u, C);
                g->indent++;
                scope_push(g);
            }
            for (int t = 0; t < g->ntap && pass == 0; t++) eval(g, g->tap[t], &idx);
            for (int q = 0; q < k->nout && pass > 0; q++) {
                int var = eval(g, k->outs[q], &idx);
                if (guarded || pass == 2)
                    store(g, k->outs[q], q, var, str(g, "ts_i + %d", 32 * u));
            }
            if (guarded) block_close(g);
        }
}

/* S = pad(buffer): along each padded axis, the least and greatest start of the taps (ts_lo<d>,
 * ts_hi<d>) and whether their steps agree (ts_pads), so that a strip can tell at a few
 * compares whether every tap reads inside the buffer (strip_pad_inside). */
static void strip_pad_bounds(gen *g) {
    const fcp_kernel *k = g->k;
    const fc_array *pad = g->tap_src;
    line(g, "bool ts_pads = true;");
    for (int d = 0; d < k->ndim; d++) {
        if (pad->p.a[d] == 0 && pad->p.b[d] == 0) continue;
        line(g, "idx_t ts_lo%d = %s, ts_hi%d = ts_lo%d;", d,
             iarg(g, FCX_SLOT_PARAM_A, g->tap[0], d), d, d);
        for (int t = 1; t < g->ntap; t++) {
            const char *a = iarg(g, FCX_SLOT_PARAM_A, g->tap[t], d);
            line(g, "ts_lo%d = %s < ts_lo%d ? %s : ts_lo%d; ts_hi%d = %s > ts_hi%d ? %s : ts_hi%d;",
                 d, a, d, a, d, d, a, d, a, d);
            if (d < k->ndim - 1 && k->space[d] != 1)
                line(g, "ts_pads = ts_pads && %s == %s;", iarg(g, FCX_SLOT_PARAM_B, g->tap[t], d),
                     iarg(g, FCX_SLOT_PARAM_B, g->tap[0], d));
        }
    }
}

/* ts_in: every tap of the whole strip from column ts_c0 (sw wide) at the strip's coordinates
 * reads S = pad(X) inside X. A tap reads S at start + coordinate * step (its start alone on
 * an axis of extent 1; step 1 along the last axis), X at that less the pad's width before. */
static void strip_pad_inside(gen *g, int sw) {
    const fcp_kernel *k = g->k;
    const fc_array *pad = g->tap_src, *x = pad->in[0];
    const int ca = k->ndim - 1;
    line(g, "bool ts_in = ts_pads;");
    for (int d = 0; d < k->ndim; d++) {
        if (pad->p.a[d] == 0 && pad->p.b[d] == 0) continue;
        const char *shift = "0", *span = "0";
        if (d == ca && k->space[d] != 1) {
            shift = "ts_c0";
            span = str(g, "%d", sw - 1);
        } else if (k->space[d] != 1) {
            shift = str(g, "c%d * %s", d, iarg(g, FCX_SLOT_PARAM_B, g->tap[0], d));
        }
        const char *lo = iarg(g, FCX_SLOT_PARAM_A, pad, d);
        line(g, "ts_in = ts_in && ts_lo%d + %s - %s >= 0 && ts_hi%d + %s + %s - %s < %s;", d,
             shift, lo, d, shift, span, lo, extent(g, x, d));
    }
}

/* The strips body: a block of its own that returns, in front of the direct loops. */
static void gen_ew_strips(gen *g) {
    const fcp_kernel *k = g->k;
    const int nd = k->ndim, ca = nd - 1, v = STRIP_OUTPUTS_PER_THREAD, sw = 32 * v;
    line(g, "{ /* shifted slices of a pad: strips of %d columns when the taps allow "
            "(above) */", sw);
    g->indent++;
    scope_push(g);
    line(g, "bool ts_ok = true;");
    for (int t = 0; t < g->ntap && k->space[ca] != 1; t++)
        line(g, "ts_ok = ts_ok && %s == 1;", iarg(g, FCX_SLOT_PARAM_B, g->tap[t], ca));
    strip_pad_bounds(g); /* S is a pad of a buffer (taps_find) */
    const char *C = iarg(g, FCX_SLOT_SPACE_EXTENT, NULL, ca);
    const char *rows = "(idx_t)1";
    for (int d = 0; d < ca; d++)
        rows = str(g, "%s * %s", rows, iarg(g, FCX_SLOT_SPACE_EXTENT, NULL, d));
    line(g, "const idx_t ts_w = (%s + %d) / %d, ts_rows = %s;", C, sw - 1, sw, rows);
    /* the lanes, rows rounded up to whole strips, fit the index width with a grid to spare
     * (needs_idx64) */
    line(g, "if (ts_ok && %s >= FCX_STRIP_MIN_EXTENT && (long long)ts_w * ts_rows < %s) {", C,
         g->idx64 ? "(1LL << 56)" : "(1LL << 25)");
    g->indent++;
    line(g, "FCX_STENCIL_STRIPS();");
    /* Lane q of the launch starts at strip q / 32 (row-major over rows and strips), lane
     * q % 32; each step moves it on by the grid's lanes, carried from the lane to the strip
     * to the row without a division. */
    line(g, "const idx_t ts_t = (idx_t)gridDim.x * blockDim.x, ts_ts = ts_t >> 5;");
    line(g, "const idx_t ts_tr = ts_ts / ts_w, ts_tw = ts_ts - ts_tr * ts_w;");
    line(g, "const idx_t ts_q = (idx_t)blockIdx.x * blockDim.x + threadIdx.x;");
    line(g, "idx_t ts_l = ts_q & 31, ts_r = (ts_q >> 5) / ts_w, ts_k = (ts_q >> 5) - ts_r * ts_w;");
    line(g, "for (; ts_r < ts_rows; ts_r += ts_tr) {");
    g->indent++;
    scope_push(g);
    line(g, "const idx_t ts_c0 = ts_k * %d, c%d = ts_c0 + ts_l;", sw, ca);
    if (ca > 0) decode(g, "ts_r", "c", nd, k->space, (uint32_t)((1u << ca) - 1), true, NULL);
    line(g, "const idx_t ts_i = ts_r * %s + c%d;", C, ca);
    g->strip_body = true;
    line(g, "if (ts_c0 + %d <= %s) { /* a whole strip */", sw, C);
    g->indent++;
    scope_push(g);
    strip_pad_inside(g, sw);
    line(g, "if (ts_in) {");
    g->indent++;
    scope_push(g);
    g->pad_inside = true;
    strip_outputs(g, v, false, true);
    g->pad_inside = false;
    block_close(g);
    line(g, "else {");
    g->indent++;
    scope_push(g);
    strip_outputs(g, v, false, false);
    block_close(g);
    block_close(g);
    line(g, "else {");
    g->indent++;
    scope_push(g);
    strip_outputs(g, v, true, false);
    block_close(g);
    g->strip_body = false;
    line(g, "ts_l += ts_t & 31;");
    line(g, "ts_k += ts_tw + (ts_l >> 5);");
    line(g, "ts_l &= 31;");
    line(g, "if (ts_k >= ts_w) {");
    line(g, "    ts_k -= ts_w;");
    line(g, "    ts_r++;");
    line(g, "}");
    block_close(g);
    line(g, "return;");
    g->indent--;
    line(g, "}");
    block_close(g);
}

/* Whether an elementwise kernel is write-bound: a few ops (WRITE_BOUND_MAX_OPS; a long
 * computation, W8's iterations, is bound by its arithmetic and would only grow fourfold in
 * the unrolled step) on broadcasts of buffers and sources (creation ops). The step's scalar
 * loads of an element each then hit few distinct lines, where a stencil's shifted windows
 * (slices, pads) would each touch four times the sectors of a warp's coalesced load. */
#define WRITE_BOUND_MAX_OPS 16
static bool write_bound(const fcp_kernel *k) {
    if (k->nnode > WRITE_BOUND_MAX_OPS) return false;
    for (int i = 0; i < k->nnode; i++) {
        const fc_array *a = k->nodes[i];
        fcg_kind kd = fcg_ops[a->op].kind;
        bool spread = a->op == FCG_OP_BROADCAST || (a->op == FCG_OP_RESHAPE && fcg_unit_reshape(a));
        if (kd != FCG_KIND_EW && kd != FCG_KIND_SOURCE && !spread) return false;
    }
    return true;
}

/* Rough instructions a kernel node costs an element: a math library call (transcendentals,
 * powers, the float rules' functions) tens, a division a few, the rest one. */
static int node_cost(const fc_array *a) {
    switch (fcg_ops[a->op].rule) {
    case FCG_RULE_FLOAT_UNARY:
    case FCG_RULE_FLOAT_REAL:
    case FCG_RULE_FLOAT_BINARY:
    case FCG_RULE_POWER: return 16;
    case FCG_RULE_TRUEDIV:
    case FCG_RULE_INTDIV: return 4;
    default: return 1;
    }
}

/* The grid of an elementwise kernel whose vector step reads and writes at the flat index
 * (measured on an H200, session 18, 2^26-element programs): one step a thread (a grid as
 * large as the work, the hardware handing out blocks as others finish) reached 100-102% of
 * the copy floor on streaming kernels (saxpy, a polynomial, leaky ReLU, Adam's three
 * outputs) where a grid that fills the device once and strides reached 92-95%; kernels of
 * about three or more instructions a byte (tanh(sin(x) + 0.1x): 87.6 -> 99%, a GELU over
 * f16: 88 -> 91%) did best at four steps a thread and lost 10-30% at one. A step that
 * decodes coordinates (broadcasts, outer products) or draws random numbers keeps the grid
 * that fills the device once: its per-thread start-up (divisions, a Philox key) is paid once
 * a thread (an outer product: 99.5% there, 85% at one step a thread). */
#define EW_HEAVY_COST_PER_BYTE 3
static int ew_grid_policy(const gen *g, bool coords) {
    const fcp_kernel *k = g->k;
    if (coords || g->flat_draw) return 0;
    long long cost = 0, bytes = 0;
    for (int i = 0; i < k->nnode; i++) cost += node_cost(k->nodes[i]);
    for (int q = 0; q < k->nleaf; q++)
        if (g->flat_used[q]) bytes += (long long)fc_dtype_size((fc_dtype)k->leaves[q]->dtype);
    for (int q = 0; q < k->nout; q++) bytes += (long long)fc_dtype_size((fc_dtype)k->outs[q]->dtype);
    return cost >= EW_HEAVY_COST_PER_BYTE * bytes ? 4 : 1;
}

/* The grid-stride loops over the space (after the line defining n). */
static void gen_ew_direct(gen *g) {
    const fcp_kernel *k = g->k;
    /* The scalar loop is generated first (into its own buffer): it shows whether every
     * buffer is read at the flat index, the condition for the vectorised loop, which then
     * goes in front and leaves the scalar loop the tail. */
    fcg_sb head = g->body;
    memset(&g->body, 0, sizeof g->body);
    g->body.ctx = g->ctx;
    ix idx;
    space_loop_open(g, "s0 + ", &idx);
    for (int q = 0; q < k->nout; q++) {
        int v = eval(g, k->outs[q], &idx);
        store(g, k->outs[q], q, v, "i");
    }
    scope_pop(g);
    g->indent--;
    line(g, "}");
    fcg_sb scalar = g->body;
    g->body = head;
    /* 16-byte accesses: as many elements as the widest buffer read at the flat index (or
     * output) fits in 16 bytes, at most 8. Buffers read elsewhere (broadcast operands, views)
     * load element by element inside the vector step. */
    size_t widest = 1;
    bool any_flat = false;
    for (int q = 0; q < k->nleaf; q++)
        if (g->flat_used[q]) {
            any_flat = true;
            if (fc_dtype_size((fc_dtype)k->leaves[q]->dtype) > widest) widest = fc_dtype_size((fc_dtype)k->leaves[q]->dtype);
        }
    for (int q = 0; q < k->nout; q++)
        if (fc_dtype_size((fc_dtype)k->outs[q]->dtype) > widest) widest = fc_dtype_size((fc_dtype)k->outs[q]->dtype);
    int vec = (int)(16 / widest);
    if (vec > 8) vec = 8;
    /* A random draw at the flat index also wants the step: its elements share Philox blocks.
     * So do write-bound kernels (broadcasts that expand, outer products, creation ops), for
     * its 16-byte stores and its carried coordinates. */
    if ((!any_flat && !g->flat_draw && !write_bound(k)) || vec < 2 || k->ndim == 0) {
        line(g, "const idx_t s0 = 0;");
    } else {
        /* The step's body first, to learn which buffers it reads from the vectors (and, for
         * the pair step, what it computes before the loop). */
        pair_gen P = {g, NULL, {0}, g->indent};
        P.pre.ctx = g->ctx;
        bool pairs = pair_kernel(g, vec);
        size_t npos = (size_t)(k->nnode + k->nleaf) + 1;
        if (pairs) {
            P.val = fcg_calloc(g->ctx, npos * sizeof *P.val);
            if (!P.val) {
                fail(g, FC_ERR_NOMEM, "codegen: out of memory");
                pairs = false;
            }
            for (size_t j = 0; P.val && j < npos; j++)
                P.val[j] = (pval){0, {-1, -1}, {-1, -1}, {-1, -1}, -1, FC_F16};
        }
        fcg_sb top = g->body;
        memset(&g->body, 0, sizeof g->body);
        g->body.ctx = g->ctx;
        memset(g->vec_used, 0, (size_t)(k->nleaf + 1) * sizeof *g->vec_used);
        g->indent++;
        g->ew_vec = vec;
        if (pairs) {
            pair_step(g, &P, vec);
            g->ew_thread_steps = ew_grid_policy(g, false);
        } else {
            g->vec = vec;
            g->ew_step = true;
            /* The loop body first: whether it needs the coordinates. */
            fcg_sb around = g->body;
            memset(&g->body, 0, sizeof g->body);
            g->body.ctx = g->ctx;
            g->indent++;
            scope_push(g);
            for (int q = 0; q < k->nout; q++) {
                int v = eval(g, k->outs[q], &idx);
                line(g, "fcx_store_%s(&w%d.v[u], v%d);", dt(k->outs[q]->dtype), q, v);
            }
            scope_pop(g);
            g->indent--;
            fcg_sb inner = g->body;
            g->body = around;
            /* The step's elements are consecutive: the coordinates are decoded once, at its
             * first element, and carried forward element by element (a compare a step, not a
             * division an element). */
            bool coords = inner.s && mentions_coords(inner.s);
            g->ew_thread_steps = ew_grid_policy(g, coords);
            if (coords) {
                char first[32];
                snprintf(first, sizeof first, "q * %d", vec);
                decode_mutable(g, first, "k");
            }
            line(g, "#pragma unroll");
            line(g, "for (int u = 0; u < %d; u++) {", vec);
            g->indent++;
            line(g, "const idx_t i = q * %d + u;", vec);
            for (int d = 0; coords && d < k->ndim; d++) line(g, "const idx_t c%d = k%d;", d, d);
            if (inner.s) fcg_sb_puts(&g->body, inner.s);
            if (inner.failed) g->body.failed = true;
            fcg_sb_free(&inner);
            if (coords) coords_advance(g, "k");
            g->indent--;
            line(g, "}");
            g->vec = 0;
            g->ew_step = false;
        }
        g->indent--;
        fcg_sb step = g->body;
        g->body = top;
        if (P.pre.s) fcg_sb_puts(&g->body, P.pre.s);
        if (P.pre.failed) g->body.failed = true;
        fcg_sb_free(&P.pre);
        if (P.val) fcg_free(g->ctx, P.val, npos * sizeof *P.val);
        line(g, "const idx_t nv = n / %d, s0 = nv * %d;", vec, vec);
        line(g, "for (idx_t q = (idx_t)blockIdx.x * blockDim.x + threadIdx.x; q < nv; "
                "q += (idx_t)gridDim.x * blockDim.x) {");
        g->indent++;
        for (int li = 0; li < k->nleaf; li++)
            if (g->vec_used[li])
                line(g, "const fcx_vec<fcx_t_%s, %d> l%d = ((const fcx_vec<fcx_t_%s, %d> *)p.ptr[%d])[q];",
                     dt(k->leaves[li]->dtype), vec, li, dt(k->leaves[li]->dtype), vec, li);
        for (int p = 0; p < k->nnode; p++)
            if (g->span[p]) line(g, "%s", g->span[p]);
        for (int q = 0; q < k->nout; q++)
            line(g, "fcx_vec<fcx_t_%s, %d> w%d;", dt(k->outs[q]->dtype), vec, q);
        if (step.s) fcg_sb_puts(&g->body, step.s);
        if (step.failed) g->body.failed = true;
        fcg_sb_free(&step);
        for (int q = 0; q < k->nout; q++)
            line(g, "((fcx_vec<fcx_t_%s, %d> *)p.ptr[%d])[q] = w%d;", dt(k->outs[q]->dtype), vec,
                 k->nleaf + q, q);
        g->indent--;
        line(g, "}");
    }
    if (scalar.s) fcg_sb_puts(&g->body, scalar.s);
    if (scalar.failed) g->body.failed = true;
    fcg_sb_free(&scalar);
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
    taps_find(g);
    if (g->ntap == 0) {
        gen_ew_direct(g);
        return;
    }
    /* The direct loops first, as without taps (what they record decides their own shape),
     * then the tiled body, which goes in front of them: it may not reuse their values. */
    fcg_sb head = g->body;
    memset(&g->body, 0, sizeof g->body);
    g->body.ctx = g->ctx;
    size_t nmemo = g->nmemo;
    gen_ew_direct(g);
    g->ew_thread_steps = 0; /* the tiles' and strips' blocks take tiles from a grid that fills
                               the device once */
    g->nmemo = nmemo;
    fcg_sb direct = g->body;
    g->body = head;
    if (g->tap_strips) gen_ew_strips(g);
    else gen_ew_tiles(g);
    if (direct.s) fcg_sb_puts(&g->body, direct.s);
    if (direct.failed) g->body.failed = true;
    fcg_sb_free(&direct);
}

/* ---- scatters ----------------------------------------------------------------------------- */

static const char *extent_product(gen *g, uint32_t mask);

/* Whether a scatter's block may sum its updates on chip first (shared-memory counters, flushed
 * with one global atomic each): adds of the dtypes shared memory has atomics for. Whether a
 * launch does is its extents' business (fcx_dynamic_smem), checked again in the kernel. */
static bool scatter_on_chip(const fc_array *r) {
    fc_dtype t = (fc_dtype)r->dtype;
    return r->op == FCG_OP_SCATTER_ADD && (t == FC_I32 || t == FC_U32 || t == FC_I64 ||
                                           t == FC_U64 || t == FC_F32 || t == FC_F64);
}
#define SCATTER_ON_CHIP_BYTES (32 * 1024) /* most bytes of counters a block keeps */
#define SCATTER_ON_CHIP_RATIO 4           /* updates per output element that make it pay */

/* The updates of a scatter: a thread per update (grid-stride), its index (in[1] at the index
 * axes' coordinates) adjusted by the mode, its value (in[2], the scatter's dtype), combined into
 * the contiguous buffer the copy kernel filled, by the prelude's atomic fcx_scatter_<dtype>. */
static void gen_scatter(gen *g) {
    const fcp_kernel *k = g->k;
    const fc_array *r = k->outs[0], *ind = r->in[1], *val = r->in[2];
    const int ax = r->p.axis, ni = ind->ndim;
    line(g, "const idx_t n = %s;", extent_product(g, k->ndim ? (uint32_t)((1ull << k->ndim) - 1) : 0));
    const char *T = dt((fc_dtype)r->dtype);
    const bool chip = scatter_on_chip(r);
    if (chip) { /* counters on chip when the launch gave room for them (fcx_dynamic_smem) */
        char nout[512];
        size_t len = 0;
        nout[0] = '\0';
        for (int d = 0; d < r->ndim && len < sizeof nout; d++)
            len += (size_t)snprintf(nout + len, sizeof nout - len, "%s(idx_t)%s", d ? " * " : "",
                                    extent(g, r, d));
        line(g, "FCX_DSMEM(fcx_dsm); /* the block's own counters */");
        line(g, "const idx_t nout = %s;", r->ndim ? nout : "1");
        line(g, "fcx_t_%s *const acc = (fcx_t_%s *)fcx_dsm;", T, T);
        line(g, "const bool on_chip = nout > 0 && fcx_dsmem_size() >= (size_t)nout * sizeof *acc;");
        line(g, "if (on_chip) {");
        line(g, "    for (idx_t q = threadIdx.x; q < nout; q += blockDim.x) acc[q] = 0;");
        line(g, "    __syncthreads();");
        line(g, "}");
    }
    ix idx;
    space_loop_open(g, "", &idx);
    ix ii;
    memset(&ii, 0, sizeof ii);
    ii.nd = ni;
    for (int d = 0; d < ni; d++) ii.e[d] = idx.e[ax + d];
    int v = eval(g, ind, &ii);
    int j = new_var(g);
    line(g, "const long long j%d = fcx_scatter_index(v%d, (long long)%s, %d);", j, v,
         extent(g, r, ax), (int)r->p.mode);
    line(g, "if (j%d >= 0) {", j);
    g->indent++;
    scope_push(g);
    int u = eval(g, val, &idx);
    /* the row-major offset in the scatter's buffer: the update's coordinates, the index axes
     * replaced by the position */
    char offs[2048];
    int len = snprintf(offs, sizeof offs, "(idx_t)0");
    for (int d = 0; d < r->ndim && len > 0 && len < (int)sizeof offs; d++) {
        char c[64], prev[sizeof offs];
        if (d < ax) snprintf(c, sizeof c, "%s", idx.e[d]);
        else if (d == ax) snprintf(c, sizeof c, "(idx_t)j%d", j);
        else snprintf(c, sizeof c, "%s", idx.e[d - 1 + ni]);
        memcpy(prev, offs, (size_t)len + 1);
        len = snprintf(offs, sizeof offs, "(%s) * (idx_t)%s + %s", prev, extent(g, r, d), c);
    }
    if (len <= 0 || len >= (int)sizeof offs)
        fail(g, FC_ERR_UNSUPPORTED, "codegen: a scatter's offset expression is too long");
    static const char *const ops[] = {"add", "max", "min"};
    int which = r->op == FCG_OP_SCATTER_ADD ? 0 : r->op == FCG_OP_SCATTER_MAX ? 1 : 2;
    if (chip) line(g, "if (on_chip) fcx_scatter_%s(acc + (%s), v%d, fcx_op_add());", T, offs, u);
    line(g, "%sfcx_scatter_%s((fcx_t_%s *)p.ptr[%d] + (%s), v%d, fcx_op_%s());",
         chip ? "else " : "", T, T, k->nleaf, offs, u, ops[which]);
    scope_pop(g);
    g->indent--;
    line(g, "}");
    scope_pop(g);
    g->indent--;
    line(g, "}");
    if (chip) { /* the block's sums into the buffer, one atomic an element that moved */
        line(g, "if (on_chip) {");
        line(g, "    __syncthreads();");
        line(g, "    for (idx_t q = threadIdx.x; q < nout; q += blockDim.x)");
        line(g, "        if (acc[q] != 0) fcx_scatter_%s((fcx_t_%s *)p.ptr[%d] + q, acc[q], "
                "fcx_op_add());", T, T, k->nleaf);
        line(g, "}");
    }
}

/* ---- reductions -------------------------------------------------------------------------- */

/* Each thread folds its elements into an accumulator (variables a<pos>, h<pos>, x<pos>,
 * m<pos>, n<pos> for the reduction at kernel position pos), in element order. Accumulators
 * then combine in a fixed tree: within a warp by shuffles (lane l takes lane l + d for
 * d = 16, 8, 4, 2, 1), the warps' results through shared memory and one more warp tree; a
 * long reduction split between blocks leaves one partial per block in the scratch buffer, and
 * the block that finishes last combines them in index order. Every shape fixes the block
 * size, the split and so the order, so a result has the same bits every run. */

/* Accumulation dtypes (the descriptor's acc rule, graph/reduce.c): float sums, products and
 * moments accumulate in double (complex in c128), as the host reference does, so results
 * agree to the output's precision; max, min and arg* are exact in the loop dtype.
 * acc_mean_dtype is the running value (the sum, or Welford's mean); acc_type names its real
 * part (Welford's M2). */
static fc_dtype acc_mean_dtype(const fc_array *r) { return fcg_reduce_acc_dtype(r); }
static const char *acc_type(const fc_array *r) {
    return fc_dtype_name(fcg_real_dtype(acc_mean_dtype(r)));
}

/* Bytes of a compute type (f16 and bf16 compute in float). */
static int ct_size(fc_dtype t) {
    switch (t) {
    case FC_BOOL: case FC_I8: case FC_U8: return 1;
    case FC_I16: case FC_U16: return 2;
    case FC_I32: case FC_U32: case FC_F16: case FC_BF16: case FC_F32: return 4;
    case FC_C128: return 16;
    default: return 8;
    }
}

static int size_class(int bytes) {
    return bytes <= 1 ? 0 : bytes <= 2 ? 1 : bytes <= 4 ? 2 : bytes <= 8 ? 3 : 4;
}

/* The variables of a reduction's accumulator. */
typedef struct field {
    char c;           /* a, h, x, m, n */
    const char *type; /* its C type */
    int size;         /* bytes */
} field;

static int online_of(gen *g, const fc_array *r);
static void pairwise_sum(gen *g, const char *t, int k);

static int red_fields(gen *g, const fc_array *r, field *f) {
    fc_dtype lt = acc_mean_dtype(r), at = fcg_real_dtype(lt);
    const char *L = str(g, "fcx_ct_%s", dt(lt)), *A = str(g, "fcx_ct_%s", dt(at));
    int n = 0;
    int pm = online_of(g, r);
    if (pm >= 0) { /* an online sum: the sum, relative to the shift at the max seen, and that max */
        fc_dtype mt = acc_mean_dtype(g->k->nodes[pm]);
        f[n++] = (field){'a', L, ct_size(lt)};
        f[n++] = (field){'o', str(g, "fcx_ct_%s", dt(mt)), ct_size(mt)};
        f[n++] = (field){'h', "bool", 1};
        return n;
    }
    switch (fcg_reduction_of(r)->combine) {
    case FCG_COMBINE_OR: case FCG_COMBINE_AND: f[n++] = (field){'a', "bool", 1}; break;
    case FCG_COMBINE_ADD: case FCG_COMBINE_MUL: case FCG_COMBINE_USER:
        f[n++] = (field){'a', L, ct_size(lt)};
        break;
    case FCG_COMBINE_MAX: case FCG_COMBINE_MIN:
        f[n++] = (field){'a', L, ct_size(lt)};
        f[n++] = (field){'h', "bool", 1}; /* whether a holds an element yet */
        break;
    case FCG_COMBINE_ARGMAX: case FCG_COMBINE_ARGMIN:
        f[n++] = (field){'a', L, ct_size(lt)};
        /* The element's index within the reduction: idx_t, which holds every index of the
         * kernel's space, so that 32-bit kernels compare and shuffle one word (issue 13);
         * the result widens to i64 at the end. */
        f[n++] = (field){'x', "idx_t", g->idx64 ? 8 : 4};
        break;
    case FCG_COMBINE_MOMENTS:
        f[n++] = (field){'a', L, ct_size(lt)};
        f[n++] = (field){'m', A, ct_size(at)};
        f[n++] = (field){'n', "long long", 8};
        break;
    case FCG_COMBINE_UNSET:
        fail(g, FC_ERR_UNSUPPORTED, "codegen: %s has no reduction descriptor", fcg_ops[r->op].pyname);
        f[n++] = (field){'a', L, ct_size(lt)};
        break;
    }
    return n;
}

/* v (in the loop dtype) converted to the accumulation dtype. */
static int widen(gen *g, const fc_array *r, int v) {
    return convert(g, v, (fc_dtype)r->loop_dtype, acc_mean_dtype(r));
}

static bool is_welford(const fc_array *r) {
    return fcg_reduction_of(r)->combine == FCG_COMBINE_MOMENTS && fcg_is_inexact(acc_mean_dtype(r));
}

/* The identity of reduction r into its variables <prefix><field><pos>, declared when decl. */
static void acc_identity(gen *g, const fc_array *r, int pos, const char *prefix, bool decl) {
    field f[3];
    int nf = red_fields(g, r, f);
    const char *L = dt(acc_mean_dtype(r)), *A = acc_type(r);
    const char *ident = NULL;
    switch (fcg_reduction_of(r)->identity) {
    case FCG_ID_ZERO: ident = str(g, "fcx_cast_%s(0)", L); break;
    case FCG_ID_ONE: ident = str(g, "fcx_cast_%s(1)", L); break;
    case FCG_ID_FALSE: ident = "false"; break;
    case FCG_ID_TRUE: ident = "true"; break;
    case FCG_ID_NONE: ident = str(g, "fcx_cast_%s(0)", L); break; /* unread until h or x is set */
    case FCG_ID_USER: ident = user_identity(g, r); break;
    case FCG_ID_UNSET:
        fail(g, FC_ERR_UNSUPPORTED, "codegen: %s has no reduction descriptor", fcg_ops[r->op].pyname);
        ident = "0";
        break;
    }
    for (int i = 0; i < nf; i++) {
        const char *val = ident; /* 'a' */
        if (f[i].c == 'h') val = "false";
        else if (f[i].c == 'x') val = "-1";
        else if (f[i].c == 'n') val = "0";
        else if (f[i].c == 'm') val = str(g, "fcx_cast_%s(0)", A);
        else if (f[i].c == 'o') val = str(g, "fcx_cast_%s(0)", dt(acc_mean_dtype(g->k->nodes[online_of(g, r)])));
        if (decl) line(g, "%s %s%c%d = %s;", f[i].type, prefix, f[i].c, pos, val);
        else line(g, "%s%c%d = %s;", prefix, f[i].c, pos, val);
    }
}

/* Declares the per-thread accumulator of reduction r (position pos). */
static void acc_init(gen *g, const fc_array *r, int pos) { acc_identity(g, r, pos, "", true); }

/* Merges partial products: complex ones pass over an identity partial (prelude
 * fcx_prod_merge); real ones multiply, 1 * x being x exactly. */
static const char *prod_merge(const fc_array *r) {
    return fcg_is_complex(acc_mean_dtype(r)) ? "fcx_prod_merge" : "fcx_mul";
}

/* Folds value v (in the loop dtype), at position e within the row, into the accumulator:
 * the descriptor's map gives x (in the accumulator's dtype; pre and post scope a temporary
 * it needs), then its combine folds x in. */
static void acc_update(gen *g, const fc_array *r, int pos, int v, const char *e) {
    const fcg_reduction *d = fcg_reduction_of(r);
    const char *L = dt(acc_mean_dtype(r)), *A = acc_type(r);
    bool twice = d->combine != FCG_COMBINE_ADD && d->combine != FCG_COMBINE_MUL &&
                 d->combine != FCG_COMBINE_OR && d->combine != FCG_COMBINE_AND; /* x read twice */
    const char *pre = "", *post = "", *x = NULL;
    switch (d->map) {
    case FCG_MAP_VALUE:
        if (d->combine == FCG_COMBINE_MOMENTS && g->batch && is_welford(r)) {
            line(g, "bv%d[bo + u] = v%d;", pos, v); /* merged a batch at a time (welford_batch) */
            return;
        }
        x = str(g, "v%d", widen(g, r, v));
        break;
    case FCG_MAP_ABS: /* |v| in the loop's real dtype, then widened */
        x = str(g, "fcx_cast_%s(fcx_abs(v%d))", A, v);
        if (twice) {
            pre = str(g, "{ const fcx_ct_%s t = %s; ", A, x);
            x = "t";
            post = " }";
        }
        break;
    case FCG_MAP_ABS2:
        pre = str(g, "{ const fcx_ct_%s t = fcx_cast_%s(fcx_abs(v%d)); ", A, A, v);
        x = "fcx_mul(t, t)";
        post = " }";
        break;
    case FCG_MAP_USER: /* v is user_map's value already */
        x = str(g, "v%d", v);
        break;
    case FCG_MAP_UNSET:
        fail(g, FC_ERR_UNSUPPORTED, "codegen: %s has no reduction descriptor", fcg_ops[r->op].pyname);
        return;
    }
    switch (d->combine) {
    case FCG_COMBINE_ADD: line(g, "%sa%d = fcx_add(a%d, %s);%s", pre, pos, pos, x, post); break;
    case FCG_COMBINE_MUL: line(g, "%sa%d = fcx_mul(a%d, %s);%s", pre, pos, pos, x, post); break;
    case FCG_COMBINE_OR: line(g, "%sa%d = a%d || %s;%s", pre, pos, pos, x, post); break;
    case FCG_COMBINE_AND: line(g, "%sa%d = a%d && %s;%s", pre, pos, pos, x, post); break;
    case FCG_COMBINE_MAX: case FCG_COMBINE_MIN:
        line(g, "%sa%d = h%d ? fcx_%s(a%d, %s) : %s; h%d = true;%s", pre, pos, pos,
             d->combine == FCG_COMBINE_MAX ? "maximum" : "minimum", pos, x, x, pos, post);
        break;
    case FCG_COMBINE_ARGMAX: case FCG_COMBINE_ARGMIN:
        /* Sequential order within a thread: a later element wins only if strictly better
         * (or the first NaN). For real and integer values, "not <=" is "> or unordered", so
         * with a not NaN it is the whole test: five instructions an element on sm_90, half
         * the long form's (this spelling, a conditional on x < 0 and & inside, is the one
         * NVRTC turns into three predicate steps: && branches, | materialises bools).
         * Complex order is lexicographic, where "not <=" misses a NaN imaginary part: the
         * long form. */
        if (!fcg_is_complex(fcg_reduce_acc_dtype(r))) {
            line(g, "%s{ const bool tk = x%d < 0 ? true : (!fcx_isnan(a%d) & !fcx_%s(%s, a%d)); "
                    "a%d = tk ? %s : a%d; x%d = tk ? (idx_t)(%s) : x%d; }%s", pre, pos, pos,
                 d->combine == FCG_COMBINE_ARGMAX ? "less_equal" : "greater_equal", x, pos, pos, x,
                 pos, pos, e, pos, post);
            break;
        }
        line(g, "%s{ const bool tk = (x%d < 0) | (!fcx_isnan(a%d) & (fcx_isnan(%s) | "
                "fcx_%s(%s, a%d))); a%d = tk ? %s : a%d; x%d = tk ? (idx_t)(%s) : x%d; }%s", pre,
             pos, pos, x,
             d->combine == FCG_COMBINE_ARGMAX ? "greater" : "less", x, pos, pos, x, pos, pos, e,
             pos, post);
        break;
    case FCG_COMBINE_MOMENTS:
        /* Welford: the running mean and the sum of squared deviations. */
        line(g, "%s{ n%d += 1; const fcx_ct_%s d = fcx_sub(%s, a%d); a%d = fcx_add(a%d, fcx_div(d, "
                "fcx_cast_%s(n%d))); const fcx_ct_%s d2 = fcx_abs(fcx_sub(%s, a%d)); const fcx_ct_%s "
                "d1 = fcx_abs(d); m%d = fcx_add(m%d, fcx_mul(d1, d2)); }%s",
             pre, pos, L, x, pos, pos, pos, L, pos, A, x, pos, A, pos, pos, post);
        break;
    case FCG_COMBINE_USER: user_combine(g, r, str(g, "a%d", pos), x); break;
    case FCG_COMBINE_UNSET:
        fail(g, FC_ERR_UNSUPPORTED, "codegen: %s has no reduction descriptor", fcg_ops[r->op].pyname);
        break;
    }
}

/* Merges the k values of bv<pos> into the running (n, mean, M2): the batch's mean and squared
 * deviations in the loop's precision, then Chan et al.'s update in the wide type. The batch's
 * mean mp = (sum of k values) / k is rounded (the sum is), and deviations taken about a point
 * off the batch's true mean by e add k e^2 to its M2: for values equal to within a few ulps,
 * whose M2 is about as small, that bias was the whole result (an f32 variance of equal values:
 * 9e-10 where the answer is 0). So the batch also sums its deviations d = x - mp, which are
 * exact where x and mp are within a factor two of each other, and corrects both: the mean to
 * mp + sum(d) / k and M2 to sum(d^2) - |sum(d)|^2 / k (the corrected two-pass formula; never
 * below 0), both in the wide type. One division per k elements and no per-element double
 * arithmetic keep W7-like kernels memory-bound.
 * A batch is a vector step (k = vec), a column kernel's COL_BATCH rows, or a group of vector
 * steps whose loads were issued together (row_steps: k = G vec, up to 32). Its sums are
 * pairwise in the loop's precision, so that a larger batch keeps the accuracy: a pairwise sum
 * of k values errs by at most ceil(log2 k) u times the sum of their magnitudes (u the loop's
 * unit roundoff), so sum(d^2), whose terms are positive and each rounded once (the square;
 * d = x - mp once more where x and mp are not within a factor two), is within about
 * (ceil(log2 k) + 2) u of the batch's exact M2 relatively (plus the k e^2 that the correction
 * removes): 6u at k = 16, against (k + 1) u for the sequential sums of 4 values it replaced
 * (5u). The merge in double adds nothing at f32 precision, so var and std stay within a few
 * ulps of f32, as before, with the double update and its division once per 16 elements. */
static void welford_batch(gen *g, const fc_array *r, int pos, int k) {
    if (!is_welford(r)) return;
    const char *L = dt(acc_mean_dtype(r)), *A = acc_type(r);
    fc_dtype lt = (fc_dtype)r->loop_dtype;
    const char *P = dt(lt), *PA = dt(fcg_real_dtype(lt));
    line(g, "{");
    g->indent++;
    line(g, "fcx_ct_%s t[%d];", P, k);
    line(g, "#pragma unroll");
    line(g, "for (int i = 0; i < %d; i++) t[i] = bv%d[i];", k, pos);
    pairwise_sum(g, "t", k);
    line(g, "const fcx_ct_%s mp = fcx_mul(t[0], fcx_cast_%s(%.17g));", P, P, 1.0 / k);
    line(g, "fcx_ct_%s tq[%d];", PA, k);
    line(g, "#pragma unroll");
    line(g, "for (int i = 0; i < %d; i++) {", k);
    line(g, "    t[i] = fcx_sub(bv%d[i], mp);", pos);
    line(g, "    const fcx_ct_%s ta = fcx_abs(t[i]);", PA);
    line(g, "    tq[i] = fcx_mul(ta, ta);");
    line(g, "}");
    pairwise_sum(g, "t", k);
    pairwise_sum(g, "tq", k);
    line(g, "const fcx_ct_%s dp = t[0];", P);
    line(g, "const fcx_ct_%s qp = tq[0];", PA);
    line(g, "const fcx_ct_%s dw = fcx_cast_%s(dp);", L, L);
    line(g, "const fcx_ct_%s mb = fcx_add(fcx_cast_%s(mp), fcx_mul(dw, fcx_cast_%s(%.17g)));", L, L,
         L, 1.0 / k);
    line(g, "const fcx_ct_%s dm = fcx_abs(dw);", A);
    line(g, "fcx_ct_%s qb = fcx_sub(fcx_cast_%s(qp), fcx_mul(fcx_mul(dm, dm), fcx_cast_%s(%.17g)));",
         A, A, A, 1.0 / k);
    line(g, "if (qb < 0) qb = fcx_cast_%s(0);", A);
    line(g, "if (n%d == 0) { a%d = mb; m%d = qb; n%d = %d; }", pos, pos, pos, pos, k);
    line(g, "else {");
    g->indent++;
    line(g, "const long long nn = n%d + %d;", pos, k);
    line(g, "const double rn = 1.0 / (double)nn;");
    line(g, "const fcx_ct_%s d = fcx_sub(mb, a%d);", L, pos);
    line(g, "a%d = fcx_add(a%d, fcx_mul(d, fcx_cast_%s((double)%d * rn)));", pos, pos, L, k);
    line(g, "const fcx_ct_%s ad = fcx_abs(d);", A);
    line(g, "m%d = fcx_add(fcx_add(m%d, qb), fcx_mul(fcx_mul(ad, ad), fcx_cast_%s((double)n%d * %d.0 * rn)));",
         pos, pos, A, pos, k);
    line(g, "n%d = nn;", pos);
    g->indent--;
    line(g, "}");
    g->indent--;
    line(g, "}");
}


/* Declares the batch array of a Welford reduction (k values of its loop dtype). Sums are not
 * batched: they keep a double add an element, since an f32 sum of a batch would cost the
 * mean its last bit against the exact sum, which a layernorm's x - mean amplifies. */
static void batch_decl(gen *g, const fc_array *r, int pos, int k) {
    if (is_welford(r)) line(g, "fcx_ct_%s bv%d[%d];", dt(r->loop_dtype), pos, k);
}

/* Sums t[0..k) into t[0], pairwise: t[i] += t[i + ceil(w / 2)] over halving widths w, so
 * each value passes through at most ceil(log2 k) additions. Eight additions a line. */
static void pairwise_sum(gen *g, const char *t, int k) {
    for (int w = k; w > 1; w = (w + 1) / 2)
        for (int i0 = 0; i0 < w / 2; i0 += 8) {
            char buf[512];
            size_t n = 0;
            for (int i = i0; i < w / 2 && i < i0 + 8; i++)
                n += (size_t)snprintf(buf + n, sizeof buf - n,
                                      "%s%s[%d] = fcx_add(%s[%d], %s[%d]);", i > i0 ? " " : "",
                                      t, i, t, i, t, i + (w + 1) / 2);
            line(g, "%s", buf);
        }
}

/* The batch arrays of the Welford reductions of phase lv (k values each); their merge. */
static void level_batch_decls(gen *g, const int *level, int lv, int k) {
    for (int j = 0; j < g->k->nred && lv > 0; j++) {
        int pos = pos_of(g, g->k->reds[j]);
        if (level[pos] == lv) batch_decl(g, g->k->reds[j], pos, k);
    }
}
static void level_batch_merges(gen *g, const int *level, int lv, int k) {
    for (int j = 0; j < g->k->nred && lv > 0; j++) {
        int pos = pos_of(g, g->k->reds[j]);
        if (level[pos] == lv) welford_batch(g, g->k->reds[j], pos, k);
    }
}

/* Where a step stores its values in the batch arrays: at bo + u, bo being the step's offset in
 * a batch of several steps (0 where a batch is one step). Declared where a batch is in use. */
static void batch_offset(gen *g, const int *level, int lv, const char *bo) {
    bool any = false;
    for (int j = 0; j < g->k->nred && lv > 0; j++)
        any |= level[pos_of(g, g->k->reds[j])] == lv && is_welford(g->k->reds[j]);
    if (any) line(g, "const int bo = %s;", bo);
}

/* ---- long rows: online sums ------------------------------------------------------------
 * A row kernel whose rows do not fit on chip (k->long_rows) reads its rows from memory in
 * every phase, so a phase saved is a read of the row saved. Softmax and logsumexp need the
 * row's max M before the sum of exp(A - B(M)), A being M's own input and B a row constant
 * computed from M alone (softmax: M; logsumexp: where(isfinite(M), M, 0)): two phases. The
 * online form (Milakov and Gimelshein, "Online normalizer calculation for softmax", 2018)
 * folds the sum in M's phase: each thread keeps the max m it has seen and the sum of
 * exp(A - B(m)) relative to it, multiplying the sum by exp(B(m) - B(m')) when m rises to m';
 * two partial (sum, max) pairs combine the same way. The terms are the program's own
 * (exp(A - B(m)) in A's dtype, as the program computes them, summed in the sum's
 * accumulator), so a result differs from the two-pass sum only by the rounding of the terms
 * computed against a smaller m and by the rescales (double for float data), well inside the
 * tolerances of the host comparison. What the online form cannot do exactly is a row where
 * B(m) is not finite for some m (a row of -inf first, a NaN, +inf): exp(-inf - -inf) is NaN
 * where the final B would have given 0. Such a row poisons its sum with NaN, and a row whose
 * online sum ends non-finite computes the sum again in a second pass with the final M, the
 * program's own two-phase sum (the branch is uniform: every thread holds the block's sum). */

static int online_of(gen *g, const fc_array *r) {
    if (!g->online || g->plain) return -1;
    int p = pos_of(g, r);
    return p < g->k->nnode ? g->online[p] : -1;
}

/* Whether a (inside the kernel) is a row constant computed from reduction M alone:
 * elementwise ops, broadcasts, unit reshapes and constants over M; *uses says it reads M.
 * M NULL: from any of the kernel's reductions, and loaded scalars do not count (the caller
 * wants values the compiler keeps in registers across the row's loop). */
static bool row_constant_of(gen *g, const fc_array *a, const fc_array *M, bool *uses, int depth) {
    bool red = a == M;
    for (int j = 0; j < g->k->nred && !M; j++) red |= a == g->k->reds[j];
    if (red) {
        *uses = true;
        return true;
    }
    if (depth > 64) return false;
    if (pos_of(g, a) >= g->k->nnode) return M && fcg_node_numel(a) == 1; /* a loaded scalar */
    if (a->op == FCG_OP_CONST) return true;
    if (fcg_ops[a->op].kind != FCG_KIND_EW && a->op != FCG_OP_BROADCAST &&
        !(a->op == FCG_OP_RESHAPE && fcg_unit_reshape(a)))
        return false;
    for (int i = 0; i < a->nin; i++)
        if (!row_constant_of(g, a->in[i], M, uses, depth + 1)) return false;
    return true;
}

/* Finds the online sums of a long-row kernel: a sum or mean (of a real float accumulator) of
 * exp(A - B), with A the input of a max M of the kernel and B a row constant of M. */
static fcx_strategy strategy_of(const fcp_kernel *k);

static fc_status online_pairs(gen *g) {
    const fcp_kernel *k = g->k;
    /* Long rows, and column kernels (fusion merges a column max with the sum it shifts only
     * where this pairs them: passes/fuse.c online_merge). */
    if (!(k->kind == FCP_KERNEL_ROW && k->long_rows) && strategy_of(k) != FCX_STRATEGY_BLOCK_COL)
        return FC_OK;
    g->online = fcg_malloc(g->ctx, (size_t)(k->nnode + 1) * sizeof *g->online);
    if (!g->online) return FC_ERR_NOMEM;
    for (int i = 0; i <= k->nnode; i++) g->online[i] = -1;
    for (int j = 0; j < k->nred; j++) {
        const fc_array *r = k->reds[j];
        const fcg_reduction *d = fcg_reduction_of(r);
        fc_dtype lt = acc_mean_dtype(r);
        if (d->combine != FCG_COMBINE_ADD || d->map != FCG_MAP_VALUE ||
            (d->finish != FCG_FINISH_NONE && d->finish != FCG_FINISH_MEAN) || !fcg_is_inexact(lt) ||
            fcg_is_complex(lt))
            continue;
        const fc_array *t = r->in[0];
        if (pos_of(g, t) >= k->nnode || t->op != FCG_OP_EXP || fcg_is_complex((fc_dtype)t->dtype))
            continue;
        const fc_array *sub = t->in[0];
        if (pos_of(g, sub) >= k->nnode || sub->op != FCG_OP_SUB || pos_of(g, sub->in[1]) >= k->nnode)
            continue;
        for (int i = 0; i < j; i++) {
            const fc_array *M = k->reds[i];
            bool uses = false;
            if (fcg_reduction_of(M)->combine != FCG_COMBINE_MAX || M->in[0] != sub->in[0] ||
                fcg_is_complex((fc_dtype)M->dtype) || online_of(g, M) >= 0)
                continue;
            if (!row_constant_of(g, sub->in[1], M, &uses, 0) || !uses) continue;
            g->online[pos_of(g, r)] = pos_of(g, M);
            break;
        }
    }
    return FC_OK;
}

/* The shift B of online sum r for the max value `m` (an expression in M's accumulator type),
 * evaluated per row (kept axes o<d>, reduced axes 0) into a new variable. */
static int online_shift(gen *g, const fc_array *r, const char *m) {
    const fcp_kernel *k = g->k;
    int pm = online_of(g, r);
    const fc_array *M = k->nodes[pm], *sub = r->in[0]->in[0];
    int mv = new_var(g);
    line(g, "const fcx_ct_%s v%d = fcx_cast_%s(%s);", dt(M->dtype), mv, dt(M->dtype), m);
    ix row;
    row.nd = k->ndim;
    row.identity = false;
    for (int d = 0; d < k->ndim; d++) row.e[d] = k->rmask & (1u << d) ? "0" : str(g, "o%d", d);
    ix bi = broadcast_index(sub, sub->in[1], &row);
    int saved = g->red_var[pm];
    g->red_var[pm] = mv;
    scope_push(g);
    int v = eval(g, sub->in[1], &bi);
    scope_pop(g);
    g->red_var[pm] = saved;
    return v;
}

/* s * exp(B(from) - B(to)) in the sum's accumulator type, s unchanged when 0. */
static const char *online_rescale(gen *g, const fc_array *r, const char *s, int from, int to) {
    const char *L = dt(acc_mean_dtype(r));
    return str(g, "(%s == fcx_cast_%s(0) ? %s : fcx_mul(%s, fcx_exp(fcx_sub(fcx_cast_%s(v%d), "
                  "fcx_cast_%s(v%d)))))", s, L, s, s, L, from, L, to);
}

/* dst absorbs src (online sums: the later max wins, both sums rescaled to its shift). */
static void online_combine(gen *g, const fc_array *r, int pos, const char *d, const char *s) {
    const char *L = dt(acc_mean_dtype(r)), *MT = dt(acc_mean_dtype(g->k->nodes[online_of(g, r)]));
    line(g, "if (%sh%d) {", s, pos);
    g->indent++;
    line(g, "if (!%sh%d) { %sa%d = %sa%d; %so%d = %so%d; %sh%d = true; }", d, pos, d, pos, s, pos, d,
         pos, s, pos, d, pos);
    line(g, "else {");
    g->indent++;
    scope_push(g);
    line(g, "const fcx_ct_%s mc = fcx_maximum(%so%d, %so%d);", MT, d, pos, s, pos);
    int bn = online_shift(g, r, "mc");
    line(g, "if (!fcx_isfinite(v%d)) %sa%d = fcx_nan_of<fcx_ct_%s>();", bn, d, pos, L);
    line(g, "else {");
    g->indent++;
    int bd = online_shift(g, r, str(g, "%so%d", d, pos));
    int bs = online_shift(g, r, str(g, "%so%d", s, pos));
    line(g, "const fcx_ct_%s fd = %s;", L, online_rescale(g, r, str(g, "%sa%d", d, pos), bd, bn));
    line(g, "const fcx_ct_%s fs = %s;", L, online_rescale(g, r, str(g, "%sa%d", s, pos), bs, bn));
    line(g, "%sa%d = fcx_add(fd, fs);", d, pos);
    g->indent--;
    line(g, "}");
    line(g, "%so%d = mc;", d, pos);
    scope_pop(g);
    g->indent--;
    line(g, "}");
    g->indent--;
    line(g, "}");
}

/* dst (<d><field><pos>) absorbs src (<s><field><pos>), src holding the later elements. */
static void acc_combine(gen *g, const fc_array *r, int pos, const char *d, const char *s) {
    const char *L = dt(acc_mean_dtype(r)), *A = acc_type(r);
    const fcg_red_combine c = fcg_reduction_of(r)->combine;
    if (online_of(g, r) >= 0) {
        online_combine(g, r, pos, d, s);
        return;
    }
    switch (c) {
    case FCG_COMBINE_ADD: line(g, "%sa%d = fcx_add(%sa%d, %sa%d);", d, pos, d, pos, s, pos); break;
    case FCG_COMBINE_MUL:
        line(g, "%sa%d = %s(%sa%d, %sa%d);", d, pos, prod_merge(r), d, pos, s, pos);
        break;
    case FCG_COMBINE_OR: line(g, "%sa%d = %sa%d || %sa%d;", d, pos, d, pos, s, pos); break;
    case FCG_COMBINE_AND: line(g, "%sa%d = %sa%d && %sa%d;", d, pos, d, pos, s, pos); break;
    case FCG_COMBINE_MAX: case FCG_COMBINE_MIN:
        line(g, "if (%sh%d) { %sa%d = %sh%d ? fcx_%s(%sa%d, %sa%d) : %sa%d; %sh%d = true; }", s, pos,
             d, pos, d, pos, c == FCG_COMBINE_MIN ? "minimum" : "maximum", d, pos, s, pos, s, pos, d, pos);
        break;
    case FCG_COMBINE_ARGMAX: case FCG_COMBINE_ARGMIN: {
        /* A NaN beats numbers (the first NaN wins); among equals the lower index wins. */
        const char *gt = c == FCG_COMBINE_ARGMAX ? "greater" : "less";
        line(g, "{");
        g->indent++;
        /* Branch-free (non-short-circuit operators, selects): the warp trees run this once a
         * round, and branches there cost more than the reading of a row. */
        line(g, "const bool na = fcx_isnan(%sa%d), nb = fcx_isnan(%sa%d), lo = %sx%d < %sx%d;", d,
             pos, s, pos, s, pos, d, pos);
        line(g, "const bool better = (nb & (!na | lo)) | (!na & !nb & (fcx_%s(%sa%d, %sa%d) | "
                "(!fcx_%s(%sa%d, %sa%d) & lo)));",
             gt, s, pos, d, pos, gt, d, pos, s, pos);
        line(g, "const bool take = (%sx%d >= 0) & ((%sx%d < 0) | better);", s, pos, d, pos);
        line(g, "%sa%d = take ? %sa%d : %sa%d;", d, pos, s, pos, d, pos);
        line(g, "%sx%d = take ? %sx%d : %sx%d;", d, pos, s, pos, d, pos);
        g->indent--;
        line(g, "}");
        break;
    }
    case FCG_COMBINE_USER: /* only where src has seen elements: a user's identity is exact */
        user_combine(g, r, str(g, "%sa%d", d, pos), str(g, "%sa%d", s, pos));
        break;
    case FCG_COMBINE_MOMENTS:
        /* Chan et al.: merge two (count, mean, M2) summaries. */
        line(g, "if (%sn%d > 0) {", s, pos);
        g->indent++;
        line(g, "if (%sn%d == 0) { %sa%d = %sa%d; %sm%d = %sm%d; %sn%d = %sn%d; }", d, pos, d, pos, s,
             pos, d, pos, s, pos, d, pos, s, pos);
        line(g, "else {");
        g->indent++;
        line(g, "const long long na = %sn%d, nb = %sn%d, nn = na + nb;", d, pos, s, pos);
        /* The weights nb / nn and na nb / nn. Equal counts, what the lanes of a block
         * reduction nearly always hold, make them 1/2 and na / 2, which is what the divisions
         * give exactly while na^2 is exact (na <= 2^26): the same bits without the two double
         * divisions, which were most of a row kernel's block reduction (issue 13). */
        line(g, "double wb = 0.5, wab = 0.5 * (double)na;");
        line(g, "if (na != nb || na > (1ll << 26)) { wb = (double)nb / (double)nn; "
                "wab = (double)na * (double)nb / (double)nn; }");
        line(g, "const fcx_ct_%s dd = fcx_sub(%sa%d, %sa%d);", L, s, pos, d, pos);
        line(g, "%sa%d = fcx_add(%sa%d, fcx_mul(dd, fcx_cast_%s(wb)));", d, pos, d, pos, L);
        line(g, "const fcx_ct_%s ad = fcx_abs(dd);", A);
        line(g, "%sm%d = fcx_add(fcx_add(%sm%d, %sm%d), fcx_mul(fcx_mul(ad, ad), fcx_cast_%s(wab)));",
             d, pos, d, pos, s, pos, A);
        line(g, "%sn%d = nn;", d, pos);
        g->indent--;
        line(g, "}");
        g->indent--;
        line(g, "}");
        break;
    case FCG_COMBINE_UNSET:
        fail(g, FC_ERR_UNSUPPORTED, "codegen: %s has no reduction descriptor", fcg_ops[r->op].pyname);
        break;
    }
}

/* The reductions at positions pos[0..n) are combined through shared memory in groups of at
 * most this many bytes per lane, so the exchange buffer stays small whatever the kernel. */
#define XCH_ROW_LANE_BYTES 256
#define XCH_COL_LANE_BYTES 64

/* Declares, for reductions pos[0..n), pointers s<field><pos> into the exchange buffer
 * fcx_xch: fields by decreasing size, so each array is aligned to its element size. */
static void xch_pointers(gen *g, const fcp_kernel *k, const int *pos, int n, bool cols) {
    const char *lanes = cols ? str(g, "%d", FCX_COL_BLOCK) : "FCX_WARP";
    int off = 0;
    for (int size = 16; size >= 1; size /= 2)
        for (int j = 0; j < n; j++) {
            field f[3];
            int nf = red_fields(g, k->nodes[pos[j]], f);
            for (int i = 0; i < nf; i++) {
                if (f[i].size != size) continue;
                line(g, "%s *const s%c%d = (%s *)(fcx_xch + %d * %s);", f[i].type, f[i].c, pos[j],
                     f[i].type, off, lanes);
                off += size;
            }
        }
    if (off > g->xch_lane_bytes) g->xch_lane_bytes = off;
}

static int lane_bytes(gen *g, const fc_array *r) {
    field f[3];
    int nf = red_fields(g, r, f), b = 0;
    for (int i = 0; i < nf; i++) b += f[i].size;
    return b;
}

/* The warp tree for reductions pos[0..n): lane l absorbs lane l + d, for d from half of
 * `lanes` rounded up to a power of two down to 1, so lane 0 ends with lanes [0, lanes). The
 * second stage of a block reduction combines only the nw warps' results: a 256-thread block
 * needs 3 rounds there, not 5 (for argmax's pairs, each round is a dozen instructions a
 * warp, and a row of 4096 f32 spent more of them in the reduction than in reading). */
static void warp_tree(gen *g, const fcp_kernel *k, const int *pos, int n, const char *lanes) {
    if (strcmp(lanes, "FCX_WARP") == 0) {
        line(g, "for (int d = FCX_WARP / 2; d > 0; d >>= 1) {");
    } else {
        line(g, "int d_top = 1;");
        line(g, "while (d_top < %s) d_top <<= 1;", lanes);
        line(g, "for (int d = d_top / 2; d > 0; d >>= 1) {");
    }
    g->indent++;
    for (int j = 0; j < n; j++) {
        const fc_array *r = k->nodes[pos[j]];
        field f[3];
        int nf = red_fields(g, r, f);
        line(g, "{");
        g->indent++;
        for (int i = 0; i < nf; i++)
            line(g, "const %s b_%c%d = fcx_shfl_down(%c%d, d);", f[i].type, f[i].c, pos[j], f[i].c, pos[j]);
        acc_combine(g, r, pos[j], "", "b_");
        g->indent--;
        line(g, "}");
    }
    g->indent--;
    line(g, "}");
}

/* Stores the accumulators of reductions pos[0..n) at slot `at` of the exchange buffer, in
 * the threads where `cond` holds; loads them back from slot `at`. */
static void xch_store(gen *g, const int *pos, int n, const char *cond, const char *at) {
    line(g, "if (%s) {", cond);
    g->indent++;
    for (int j = 0; j < n; j++) {
        field f[3];
        int nf = red_fields(g, g->k->nodes[pos[j]], f);
        for (int i = 0; i < nf; i++) line(g, "s%c%d[%s] = %c%d;", f[i].c, pos[j], at, f[i].c, pos[j]);
    }
    g->indent--;
    line(g, "}");
}
static void xch_load(gen *g, const int *pos, int n, const char *at) {
    for (int j = 0; j < n; j++) {
        field f[3];
        int nf = red_fields(g, g->k->nodes[pos[j]], f);
        for (int i = 0; i < nf; i++) line(g, "%c%d = s%c%d[%s];", f[i].c, pos[j], f[i].c, pos[j], at);
    }
}

/* Row kernels: the block's accumulators combined; every thread ends with the block's result.
 * Where a combine is costly (Welford's: tens of instructions a step), warp 0 alone combines
 * the warps' results and hands them to the others through the exchange buffer, for one more
 * barrier: the second tree in every warp was most of the instructions of a layernorm's block
 * reduction (issue 13). Cheap combines (a softmax's max and sum) keep the tree in every warp
 * and a shuffle from lane 0, without that barrier. */
static void block_reduce_rows(gen *g, const int *pos, int n) {
    const fcp_kernel *k = g->k;
    for (int j0 = 0; j0 < n;) {
        int j1 = j0, bytes = 0;
        bool costly = false;
        while (j1 < n && (j1 == j0 || bytes + lane_bytes(g, k->nodes[pos[j1]]) <= XCH_ROW_LANE_BYTES)) {
            costly |= fcg_reduction_of(k->nodes[pos[j1]])->combine == FCG_COMBINE_MOMENTS;
            bytes += lane_bytes(g, k->nodes[pos[j1++]]);
        }
        line(g, "{ /* block reduction: warps by shuffles, then the warps' results */");
        g->indent++;
        xch_pointers(g, k, pos + j0, j1 - j0, false);
        warp_tree(g, k, pos + j0, j1 - j0, "FCX_WARP");
        xch_store(g, pos + j0, j1 - j0, "lane == 0", "wid");
        line(g, "__syncthreads();");
        if (costly) {
            line(g, "if (wid == 0) {");
            g->indent++;
        }
        line(g, "if (lane < nw) {");
        g->indent++;
        xch_load(g, pos + j0, j1 - j0, "lane");
        g->indent--;
        line(g, "} else {");
        g->indent++;
        for (int j = j0; j < j1; j++) acc_identity(g, k->nodes[pos[j]], pos[j], "", false);
        g->indent--;
        line(g, "}");
        warp_tree(g, k, pos + j0, j1 - j0, "nw");
        if (costly) {
            xch_store(g, pos + j0, j1 - j0, "lane == 0", "0");
            g->indent--;
            line(g, "}");
            line(g, "__syncthreads();");
            xch_load(g, pos + j0, j1 - j0, "0");
        } else {
            for (int j = j0; j < j1; j++) {
                field f[3];
                int nf = red_fields(g, k->nodes[pos[j]], f);
                for (int i = 0; i < nf; i++)
                    line(g, "%c%d = fcx_shfl_idx(%c%d, 0);", f[i].c, pos[j], f[i].c, pos[j]);
            }
        }
        line(g, "__syncthreads();");
        g->indent--;
        line(g, "}");
        j0 = j1;
    }
}

/* Column kernels: the warps' accumulators of each lane (column) combined in warp order into
 * warp 0. */
static void block_reduce_cols(gen *g, const int *pos, int n) {
    const fcp_kernel *k = g->k;
    for (int j0 = 0; j0 < n;) {
        int j1 = j0, bytes = 0;
        while (j1 < n && (j1 == j0 || bytes + lane_bytes(g, k->nodes[pos[j1]]) <= XCH_COL_LANE_BYTES))
            bytes += lane_bytes(g, k->nodes[pos[j1++]]);
        line(g, "{ /* each column's warps combined, in warp order, into warp 0 */");
        g->indent++;
        xch_pointers(g, k, pos + j0, j1 - j0, true);
        for (int j = j0; j < j1; j++) {
            field f[3];
            int nf = red_fields(g, k->nodes[pos[j]], f);
            for (int i = 0; i < nf; i++)
                line(g, "s%c%d[threadIdx.x] = %c%d;", f[i].c, pos[j], f[i].c, pos[j]);
        }
        line(g, "__syncthreads();");
        line(g, "if (wid == 0) {");
        g->indent++;
        line(g, "for (int w2 = 1; w2 < nw; w2++) {");
        g->indent++;
        for (int j = j0; j < j1; j++) {
            const fc_array *r = k->nodes[pos[j]];
            field f[3];
            int nf = red_fields(g, r, f);
            line(g, "{");
            g->indent++;
            for (int i = 0; i < nf; i++)
                line(g, "const %s b_%c%d = s%c%d[w2 * FCX_WARP + lane];", f[i].type, f[i].c, pos[j],
                     f[i].c, pos[j]);
            acc_combine(g, r, pos[j], "", "b_");
            g->indent--;
            line(g, "}");
        }
        g->indent--;
        line(g, "}");
        g->indent--;
        line(g, "}");
        line(g, "__syncthreads();");
        g->indent--;
        line(g, "}");
        j0 = j1;
    }
}

/* The reduction's final value, in its dtype's compute type, into a new variable. */
static int acc_finish(gen *g, const fc_array *r, int pos, const char *count) {
    if (fcg_reduction_of(r)->finish == FCG_FINISH_USER) return user_finish(g, r, pos);
    int v = new_var(g);
    const char *O = dt(r->dtype), *L = dt(acc_mean_dtype(r)), *A = acc_type(r);
    const fcg_reduction *d = fcg_reduction_of(r);
    switch (d->finish) {
    case FCG_FINISH_NONE:
        if (d->combine == FCG_COMBINE_OR || d->combine == FCG_COMBINE_AND)
            line(g, "const fcx_ct_bool v%d = a%d;", v, pos);
        else
            line(g, "const fcx_ct_%s v%d = fcx_cast_%s(a%d);", O, v, O, pos);
        break;
    case FCG_FINISH_MEAN:
        line(g, "const fcx_ct_%s v%d = fcx_cast_%s(fcx_div(a%d, fcx_cast_%s((double)(%s))));", O, v, O,
             pos, L, count);
        break;
    case FCG_FINISH_INDEX: line(g, "const fcx_ct_i64 v%d = (fcx_ct_i64)x%d;", v, pos); break;
    case FCG_FINISH_VARIANCE: case FCG_FINISH_STD:
        line(g, "const long long dd%d = n%d - %d;", v, pos, r->p.ddof);
        line(g, "const fcx_ct_%s w%d = fcx_div(m%d, fcx_cast_%s((double)(dd%d > 0 ? dd%d : 0)));", A, v,
             pos, A, v, v);
        if (d->finish == FCG_FINISH_STD) line(g, "const fcx_ct_%s v%d = fcx_cast_%s(fcx_sqrt(w%d));", O, v, O, v);
        else line(g, "const fcx_ct_%s v%d = fcx_cast_%s(w%d);", O, v, O, v);
        break;
    case FCG_FINISH_SQRT: line(g, "const fcx_ct_%s v%d = fcx_cast_%s(fcx_sqrt(a%d));", O, v, O, pos); break;
    case FCG_FINISH_USER: break; /* above */
    case FCG_FINISH_UNSET:
        fail(g, FC_ERR_UNSUPPORTED, "codegen: %s has no reduction descriptor", fcg_ops[r->op].pyname);
        break;
    }
    return v;
}

/* Scratch of a split reduction: a counter per counted unit, then one array per accumulator
 * field of npart partials, each 16-byte aligned (fcx_launch_config sizes it the same way). */
static void scratch_pointers(gen *g, const int *pos, int n, const char *ncnt, const char *npart) {
    const fcp_kernel *k = g->k;
    line(g, "unsigned char *const fcx_sc = (unsigned char *)p.ptr[%d];", k->nleaf + k->nout);
    line(g, "unsigned *const fcx_cnt = (unsigned *)fcx_sc;");
    line(g, "size_t fcx_so = fcx_align16((size_t)(%s) * 4);", ncnt);
    for (int j = 0; j < n; j++) {
        field f[3];
        int nf = red_fields(g, k->nodes[pos[j]], f);
        for (int i = 0; i < nf; i++) {
            line(g, "%s *const g%c%d = (%s *)(fcx_sc + fcx_so);", f[i].type, f[i].c, pos[j], f[i].type);
            if (j + 1 < n || i + 1 < nf) line(g, "fcx_so += fcx_align16((size_t)(%s) * %d);", npart, f[i].size);
        }
    }
}

/* Partials pos[0..n) written at index `at` (by the threads `writer` names), the block's
 * arrival counted at fcx_cnt[cnt]; the block that arrives last goes on (the others continue
 * with their next work item) after folding partials `from` .. S-1 step `step` into its
 * threads' accumulators, which the caller then combines across the block. */
static void split_arrive(gen *g, const int *pos, int n, const char *writer, const char *at,
                         const char *cnt, const char *item, const char *guard, const char *from,
                         const char *step) {
    const fcp_kernel *k = g->k;
    line(g, "if (%s) {", writer);
    g->indent++;
    for (int j = 0; j < n; j++) {
        field f[3];
        int nf = red_fields(g, k->nodes[pos[j]], f);
        for (int i = 0; i < nf; i++) line(g, "g%c%d[%s] = %c%d;", f[i].c, pos[j], at, f[i].c, pos[j]);
    }
    g->indent--;
    line(g, "}");
    /* Release: each writer's partials are visible device-wide before the block counts itself
     * in; the last block fences again before it reads the others' partials. */
    line(g, "fcx_fence();");
    line(g, "__syncthreads();");
    line(g, "if (threadIdx.x == 0) fcx_last = fcx_atomic_add(&fcx_cnt[%s], 1u) == (unsigned)(S - 1);", cnt);
    line(g, "__syncthreads();");
    line(g, "if (!fcx_last) continue;");
    line(g, "fcx_fence();");
    for (int j = 0; j < n; j++) acc_identity(g, k->nodes[pos[j]], pos[j], "", false);
    if (strcmp(guard, "true") == 0) line(g, "for (idx_t sj = %s; sj < S; sj += %s) {", from, step);
    else line(g, "if (%s) for (idx_t sj = %s; sj < S; sj += %s) {", guard, from, step);
    g->indent++;
    for (int j = 0; j < n; j++) {
        const fc_array *r = k->nodes[pos[j]];
        field f[3];
        int nf = red_fields(g, r, f);
        line(g, "{");
        g->indent++;
        for (int i = 0; i < nf; i++)
            line(g, "const %s b_%c%d = fcx_ldcg(&g%c%d[%s * S + sj]);", f[i].type, f[i].c, pos[j], f[i].c,
                 pos[j], item);
        acc_combine(g, r, pos[j], "", "b_");
        g->indent--;
        line(g, "}");
    }
    g->indent--;
    line(g, "}");
}

/* Levels: a reduction that reads another runs in a later phase. level[] has nnode entries. */
static int reduction_levels(gen *g, int *level) {
    const fcp_kernel *k = g->k;
    int maxlevel = 0;
    for (int i = 0; i < k->nnode; i++) {
        const fc_array *a = k->nodes[i];
        int lv = 0;
        for (int c = 0; c < a->nin; c++) {
            int p = pos_of(g, a->in[c]);
            if (p < k->nnode && level[p] > lv) lv = level[p];
        }
        if (fcg_ops[a->op].kind == FCG_KIND_REDUCE)
            lv = online_of(g, a) >= 0 ? level[online_of(g, a)] : lv + 1; /* online: M's phase */
        level[i] = lv;
        if (lv > maxlevel) maxlevel = lv;
    }
    return maxlevel;
}

static bool full_output(const fcp_kernel *k, const fc_array *o) {
    return o->ndim == k->ndim && memcmp(o->shape, k->space, (size_t)k->ndim * 8) == 0 &&
           fcg_ops[o->op].kind != FCG_KIND_REDUCE;
}

/* Outputs over the reduced space, stored once per output row (flat index `row`). */
static void reduced_outputs(gen *g, bool skip_full) {
    const fcp_kernel *k = g->k;
    for (int q = 0; q < k->nout; q++) {
        const fc_array *o = k->outs[q];
        if (skip_full && full_output(k, o)) continue;
        char pre[16];
        snprintf(pre, sizeof pre, "q%d_", q);
        decode(g, "row", pre, o->ndim, o->shape, o->ndim ? (uint32_t)((1ull << o->ndim) - 1) : 0, false, o);
        ix oidx;
        identity_index(g, &oidx, o->ndim, pre);
        oidx.identity = false;
        int v = eval(g, o, &oidx);
        store(g, o, q, v, "row");
    }
}

/* A lazy online sum (column batches) keeps its shift while the max's shift rises by at most
 * this: its terms are then at most e^8 times those against the max itself (no overflow, no
 * rounding of consequence: f32 exp errs relatively), and a column of random data moves it
 * about once, where each batch's rise used to cost a double exp in most warps. */
#define ONLINE_LAZY_RISE 8

/* Moves online sum r's max to `mn` (declared by the caller) where it rises: the sum rescaled
 * to the new shift; a non-finite shift poisons the sum. `lazy`: only where the shift rises by
 * more than ONLINE_LAZY_RISE (or falls, or is not finite), so that the sum's max o<pos> may
 * stay below the max seen (online_settle moves it there before the result is used). */
static void online_move(gen *g, const fc_array *r, int pos, bool lazy) {
    const char *L = dt(acc_mean_dtype(r));
    int bn = -1, bo = -1;
    if (lazy) {
        scope_push(g);
        bn = online_shift(g, r, "mn");
        bo = online_shift(g, r, str(g, "o%d", pos));
        line(g, "const auto rise%d = v%d - v%d; /* B's real compute type */", pos, bn, bo);
        line(g, "if (!h%d || !(rise%d >= 0 && rise%d <= %d)) {", pos, pos, pos, ONLINE_LAZY_RISE);
    } else {
        line(g, "if (!h%d || !(mn == o%d)) {", pos, pos);
    }
    g->indent++;
    scope_push(g);
    if (!lazy) bn = online_shift(g, r, "mn");
    line(g, "if (!fcx_isfinite(v%d)) a%d = fcx_nan_of<fcx_ct_%s>();", bn, pos, L);
    line(g, "else if (h%d) {", pos);
    g->indent++;
    if (!lazy) bo = online_shift(g, r, str(g, "o%d", pos));
    line(g, "a%d = %s;", pos, online_rescale(g, r, str(g, "a%d", pos), bo, bn));
    g->indent--;
    line(g, "}");
    line(g, "o%d = mn;", pos);
    line(g, "h%d = true;", pos);
    scope_pop(g);
    g->indent--;
    line(g, "}");
    if (lazy) scope_pop(g);
}

/* Adds the term exp(A - B(m)) at sidx to online sum r, computed as the program computes it
 * with the shift of the max o<pos> the sum holds. */
static void online_term(gen *g, const fc_array *r, int pos, const ix *sidx) {
    int pm = online_of(g, r);
    const fc_array *M = g->k->nodes[pm];
    int mv = new_var(g);
    line(g, "const fcx_ct_%s v%d = fcx_cast_%s(o%d);", dt(M->dtype), mv, dt(M->dtype), pos);
    int saved = g->red_var[pm];
    g->red_var[pm] = mv;
    int v = eval(g, r->in[0], sidx);
    v = convert(g, v, (fc_dtype)r->in[0]->dtype, (fc_dtype)r->loop_dtype);
    acc_update(g, r, pos, v, "e");
    g->red_var[pm] = saved;
}

/* Folds the element at sidx into online sum r (position pos): the max it has seen rises
 * (online_move), then the term exp(A - B(m)) is added with the running max m. */
static void online_update(gen *g, const fc_array *r, int pos, const ix *sidx) {
    const fc_array *M = g->k->nodes[online_of(g, r)];
    const char *MT = dt(acc_mean_dtype(M));
    int xa = eval(g, M->in[0], sidx);
    xa = widen(g, M, convert(g, xa, (fc_dtype)M->in[0]->dtype, (fc_dtype)M->loop_dtype));
    line(g, "{ /* online sum: the max seen, the sum relative to its shift */");
    g->indent++;
    scope_push(g);
    line(g, "const fcx_ct_%s mn = h%d ? fcx_maximum(o%d, v%d) : v%d;", MT, pos, pos, xa, xa);
    online_move(g, r, pos, false);
    online_term(g, r, pos, sidx);
    scope_pop(g);
    g->indent--;
    line(g, "}");
}

/* The work of one element e of a row kernel's phase: fold the phase's reductions (lv > 0),
 * or compute and store the outputs over the whole space (lv == 0). */
static void row_element(gen *g, const ix *sidx, const int *level, int lv, bool vec) {
    const fcp_kernel *k = g->k;
    if (lv > 0) {
        for (int j = 0; j < k->nred; j++) {
            const fc_array *r = k->reds[j];
            int pos = pos_of(g, r);
            if (level[pos] != lv) continue;
            if (online_of(g, r) >= 0 && g->online_batch) {
                line(g, "ob%d[u] = v%d;", pos, eval(g, r->in[0]->in[0]->in[0], sidx));
                continue;
            }
            if (online_of(g, r) >= 0) {
                online_update(g, r, pos, sidx);
                continue;
            }
            int v;
            if (fcg_reduction_of(r)->map == FCG_MAP_USER) {
                v = user_map(g, r, sidx);
            } else {
                v = eval(g, r->in[0], sidx);
                v = convert(g, v, (fc_dtype)r->in[0]->dtype, (fc_dtype)r->loop_dtype);
            }
            acc_update(g, r, pos, v, "e");
        }
        return;
    }
    for (int q = 0; q < k->nout; q++) {
        const fc_array *o = k->outs[q];
        if (!full_output(k, o)) continue;
        int v = eval(g, o, sidx);
        if (vec) line(g, "fcx_store_%s(&w%d.v[u], v%d);", dt(o->dtype), q, v);
        else store(g, o, q, v, "i");
    }
}

/* A row kernel's loop over this thread's elements [eb, ee) of the current row: while the
 * row's start is aligned, `vec` elements a step with the buffers read at the flat index
 * loaded 16 bytes at a time (kept-on-chip rows from shared memory after their first phase),
 * then the tail element by element. The split of elements between threads is the same in
 * every phase, so a thread reads back only what it copied into shared memory itself. */
/* The dtype of kernel position p (a node, or a leaf after the nodes). */
static fc_dtype pos_dtype(const fcp_kernel *k, int p) {
    return (fc_dtype)(p < k->nnode ? k->nodes[p]->dtype : k->leaves[p - k->nnode]->dtype);
}

/* The element's values kept on chip by this phase, stored at the end of its work. */
static void flush_pending(gen *g, bool vec) {
    for (int j = 0; j < g->npend; j++) {
        int p = g->pend[j];
        const char *T = dt(pos_dtype(g->k, p));
        if (vec) {
            g->vfill[p] = true;
            line(g, "fcx_store_%s(&wc%d.v[u], v%d);", T, p, g->pend_var[j]);
        } else {
            line(g, "if (rc) fcx_store_%s(&c%d[e], v%d);", T, p, g->pend_var[j]);
        }
    }
    g->npend = 0;
}

/* Vector steps whose loads a thread issues together, at most: a step's work that branches (an
 * argmax's compare, a Welford merge's division) otherwise keeps the compiler from hoisting the
 * next step's load above it, leaving one 16-byte load in flight per thread, a latency-bound
 * loop (issue 13: argmax rows at 49% of the copy floor). ROW_GROUP_LOADS 16-byte loads of all
 * the step's buffers together, so that kernels reading several buffers keep their registers. */
#define ROW_GROUP_LOADS 4

/* Text made at indent + levels, pasted `levels` shallower. */
static void paste_dedent(gen *g, const char *text, int levels) {
    if (!text) return;
    size_t cut = (size_t)levels * 4;
    for (const char *s = text; *s;) {
        const char *nl = strchr(s, '\n');
        size_t n = nl ? (size_t)(nl - s) + 1 : strlen(s), skip = 0;
        while (skip < cut && skip < n && s[skip] == ' ') skip++;
        char buf[1024];
        size_t m = n - skip < sizeof buf - 1 ? n - skip : sizeof buf - 1;
        memcpy(buf, s + skip, m);
        buf[m] = '\0';
        fcg_sb_puts(&g->body, buf);
        s += n;
    }
}

/* The flat index of a vector step's first element e0: base + e0 where the rows are trailing,
 * i0 (step_index) where they are runs of R contiguous elements (g->seg_run). */
static const char *step_flat(gen *g) { return g->seg_run ? "i0" : "(base + e0)"; }

/* Segmented rows: the flat index i0 of the step at e0, from its coordinates. Each step of a
 * group decodes its own (its first element may start another run than the step before): its
 * run sq = e0 / R (by the kernel's fcx_dR: no division) and its place sr in the run, which is
 * the run axes' whole share of the flat index (they are trailing and contiguous); sq decodes
 * into the other reduced axes. */
static void step_index(gen *g) {
    const fcp_kernel *k = g->k;
    if (!g->seg_run) return;
    line(g, "const idx_t sq = fcx_div_by(e0, fcx_dR), sr = e0 - sq * R;");
    decode(g, "sq", "s", k->ndim, k->space, k->rmask & ~g->run_axes, true, NULL);
    ix first;
    first.nd = k->ndim;
    first.identity = false;
    for (int d = 0; d < k->ndim; d++)
        first.e[d] = g->run_axes & (1u << d) ? "0"
                     : k->rmask & (1u << d)  ? str(g, "s%d", d)
                                             : str(g, "o%d", d);
    line(g, "const idx_t i0 = %s + sr;", linearize_space(g, &first));
}

/* The global vector of leaf li at the step's flat index (a multiple of vec). Element
 * pointer plus index, not vector pointer indexed by index / vec: the signed division costs
 * three instructions a load. */
static const char *leaf_vec_global(gen *g, int li, int vec) {
    const char *T = dt(g->k->leaves[li]->dtype);
    return str(g, "*(const fcx_vec<fcx_t_%s, %d> *)((const fcx_t_%s *)p.ptr[%d] + %s)", T, vec, T,
               li, step_flat(g));
}

/* The vector load of leaf li for the step at e0 (an expression), or NULL when the step reads
 * it only to recompute kept values (conditional: not prefetched). */
static const char *leaf_vec_load(gen *g, int li, int vec, const char *e0) {
    const fcp_kernel *k = g->k;
    int p = k->nnode + li;
    const char *T = dt(k->leaves[li]->dtype);
    const char *glob = leaf_vec_global(g, li, vec);
    bool live = g->phase <= 0 || g->phase >= 64 || (g->phases[p] & (1ull << g->phase));
    if (!live) return NULL;
    if (g->fill[p] > 0 && g->phase > g->fill[p])
        return str(g, "rc ? *(const fcx_vec<fcx_t_%s, %d> *)(c%d + (%s)) : %s", T, vec, p, e0,
                   glob);
    return glob;
}

/* Whether a group of steps loads leaf li's vectors before its work: those read from global
 * memory. Rows kept on chip read back from shared memory, whose latency needs no groups (and
 * the registers of a group would cost the kernel occupancy). */
static bool leaf_prefetched(gen *g, int li) {
    int p = g->k->nnode + li;
    return g->vec_used[li] && leaf_vec_load(g, li, 1, "e0") &&
           !(g->fill[p] > 0 && g->phase > g->fill[p]);
}

/* The leaf loads of one step at e0, from the prefetched lg<leaf>[gi] where `grouped`. */
static void leaf_vec_lines(gen *g, int vec, bool grouped) {
    const fcp_kernel *k = g->k;
    for (int li = 0; li < k->nleaf; li++) {
        if (!g->vec_used[li]) continue;
        const char *T = dt(k->leaves[li]->dtype);
        const char *src = leaf_vec_load(g, li, vec, "e0");
        if (!src) { /* read only to recompute kept values, when the rows are not on chip */
            line(g, "fcx_vec<fcx_t_%s, %d> l%d;", T, vec, li);
            line(g, "if (!rc) l%d = %s;", li, leaf_vec_global(g, li, vec));
        } else {
            line(g, "const fcx_vec<fcx_t_%s, %d> l%d = %s;", T, vec, li,
                 grouped && leaf_prefetched(g, li) ? str(g, "lg%d[gi]", li) : src);
        }
    }
    /* Row operands hit in cache (every row reads the same): loaded per step, not prefetched. */
    for (int li = 0; li < k->nleaf; li++) {
        if (!g->rvec_used[li]) continue;
        const char *T = dt(k->leaves[li]->dtype);
        line(g, "const fcx_vec<fcx_t_%s, %d> lr%d = "
                "*(const fcx_vec<fcx_t_%s, %d> *)((const fcx_t_%s *)p.ptr[%d] + e0);",
             T, vec, li, T, vec, T, li);
    }
}

/* Whether a group's work reads at the step's flat index (step_flat) after the prefetched
 * loads: leaves not prefetched, or the row's outputs (phase 0). */
static bool group_reads_flat(gen *g, int lv) {
    const fcp_kernel *k = g->k;
    for (int q = 0; q < k->nout && lv == 0; q++)
        if (full_output(k, k->outs[q])) return true;
    for (int li = 0; li < k->nleaf; li++)
        if (g->vec_used[li] && !leaf_prefetched(g, li)) return true;
    return false;
}

/* A thread's vector steps c = threadIdx.x + j blockDim.x of the row piece (nv of them): groups
 * of G steps whose loads are all issued first, then the rest one at a time. A thread folds its
 * elements in the same order either way. Welford reductions (welford_batch) take a group's
 * values as one batch. `work` is a step's work after its loads, made two levels deeper than
 * the loop. `reverse`: the thread takes its steps from the last one down (long rows' output
 * phase: the end of a row, read last by the phase before, is the likeliest still in L2). */
static void row_steps(gen *g, int vec, const fcg_sb *work, const int *level, int lv,
                      bool reverse) {
    const fcp_kernel *k = g->k;
    int nload = 0;
    for (int li = 0; li < k->nleaf; li++) nload += leaf_prefetched(g, li);
    int G = nload > 0 ? ROW_GROUP_LOADS / nload : 1;
    bool rows = false; /* row operands load at e0, aligned where the piece's start eb is */
    for (int li = 0; li < k->nleaf; li++) rows |= g->rvec_used[li];
    if (g->seg_run) /* eb a multiple of vec already, as row operands need */
        line(g, "const idx_t nv = eb %% %d == 0 && R %% %d == 0 ? (ee - eb) / %d : 0;", vec, vec,
             vec);
    else
        line(g, "const idx_t nv = (base + eb) %% %d == 0%s ? (ee - eb) / %d : 0;", vec,
             rows ? str(g, " && eb %% %d == 0", vec) : "", vec);
    /* The step gi of a group at c: c + gi blockDim forwards, c - gi blockDim in reverse. */
    const char *step = reverse ? "c - (idx_t)(gi * blockDim.x)" : "c + (idx_t)(gi * blockDim.x)";
    if (reverse)
        line(g, "idx_t c = (idx_t)threadIdx.x < nv ? (idx_t)threadIdx.x + (nv - 1 - "
                "(idx_t)threadIdx.x) / (idx_t)blockDim.x * (idx_t)blockDim.x : (idx_t)-1; "
                "/* its last step */");
    else
        line(g, "idx_t c = threadIdx.x;");
    if (G > 1) {
        if (reverse)
            line(g, "for (; c >= (idx_t)(%d * blockDim.x); c -= (idx_t)(%d * blockDim.x)) {", G - 1,
                 G);
        else
            line(g, "for (; c + (idx_t)(%d * blockDim.x) < nv; c += (idx_t)(%d * blockDim.x)) {",
                 G - 1, G);
        g->indent++;
        for (int li = 0; li < k->nleaf; li++)
            if (leaf_prefetched(g, li))
                line(g, "fcx_vec<fcx_t_%s, %d> lg%d[%d];", dt(k->leaves[li]->dtype), vec, li, G);
        level_batch_decls(g, level, lv, G * vec);
        line(g, "#pragma unroll");
        line(g, "for (int gi = 0; gi < %d; gi++) {", G);
        g->indent++;
        line(g, "const idx_t e0 = eb + (%s) * %d;", step, vec);
        step_index(g);
        for (int li = 0; li < k->nleaf; li++)
            if (leaf_prefetched(g, li))
                line(g, "lg%d[gi] = %s;", li, leaf_vec_load(g, li, vec, "e0"));
        g->indent--;
        line(g, "}");
        line(g, "#pragma unroll");
        line(g, "for (int gi = 0; gi < %d; gi++) {", G);
        g->indent++;
        line(g, "const idx_t e0 = eb + (%s) * %d;", step, vec);
        if (group_reads_flat(g, lv)) step_index(g);
        leaf_vec_lines(g, vec, true);
        batch_offset(g, level, lv, str(g, "gi * %d", vec));
        g->indent--;
        if (work->s) fcg_sb_puts(&g->body, work->s);
        line(g, "}");
        level_batch_merges(g, level, lv, G * vec);
        g->indent--;
        line(g, "}");
    } else {
        line(g, "#pragma unroll 4");
    }
    if (reverse) line(g, "for (; c >= 0; c -= (idx_t)blockDim.x) {");
    else line(g, "for (; c < nv; c += blockDim.x) {");
    g->indent++;
    line(g, "const idx_t e0 = eb + c * %d;", vec);
    step_index(g);
    leaf_vec_lines(g, vec, false);
    level_batch_decls(g, level, lv, vec);
    batch_offset(g, level, lv, "0");
    g->indent--;
    paste_dedent(g, work->s, 1);
    g->indent++;
    level_batch_merges(g, level, lv, vec);
    g->indent--;
    line(g, "}");
}

static void row_loops(gen *g, const ix *sidx, const int *level, int lv, int vec, bool trailing) {
    const fcp_kernel *k = g->k;
    int np = k->nnode + k->nleaf;
    line(g, "{");
    g->indent++;
    /* Segmented rows (a reduce kernel over non-trailing axes whose innermost axis is reduced,
     * batch-norm's (0, 2)): a row is runs of R contiguous elements. When R and the piece's
     * start are multiples of vec, no step straddles two runs, and the step's flat index (its
     * first element's) is a multiple of vec as R is (every other axis's stride is a multiple
     * of R): 16-byte loads, with the element's coordinates decoded once a step (step_index). */
    bool segmented = !trailing && g->seg_run;
    if (vec > 1 && (trailing || segmented)) {
        ix vidx = *sidx;
        if (segmented) vidx.identity = true; /* same-shape buffers come from the step's vectors */
        /* The step's work (everything after its loads) first, one level deeper than the
         * plain loop's body, to learn which buffers and kept values it reads from vectors
         * and which kept values it stores. */
        fcg_sb head = g->body;
        memset(&g->body, 0, sizeof g->body);
        g->body.ctx = g->ctx;
        memset(g->vec_used, 0, (size_t)(k->nleaf + 1) * sizeof *g->vec_used);
        memset(g->rvec_used, 0, (size_t)(k->nleaf + 1) * sizeof *g->rvec_used);
        memset(g->vfill, 0, (size_t)(np + 1) * sizeof *g->vfill);
        memset(g->vread, 0, (size_t)(np + 1) * sizeof *g->vread);
        g->rows_vec = true;
        g->indent += 2;
        g->vec = vec;
        g->batch = vec;
        g->npend = 0;
        line(g, "#pragma unroll");
        line(g, "for (int u = 0; u < %d; u++) {", vec);
        g->indent++;
        scope_push(g);
        line(g, "const idx_t e = e0 + u;");
        decode(g, "e", "r", k->ndim, k->space, k->rmask, true, NULL);
        row_element(g, &vidx, level, lv, true);
        flush_pending(g, true);
        scope_pop(g);
        g->indent--;
        line(g, "}");
        g->vec = 0;
        g->batch = 0;
        g->rows_vec = false;
        fcg_sb elems = g->body; /* the step's elements; its declarations go before them */
        memset(&g->body, 0, sizeof g->body);
        g->body.ctx = g->ctx;
        for (int p = 0; p < k->nnode; p++) {
            const char *T = dt(pos_dtype(k, p));
            if (g->vread[p]) {
                line(g, "fcx_vec<fcx_t_%s, %d> cv%d;", T, vec, p);
                line(g, "if (rc) cv%d = *(const fcx_vec<fcx_t_%s, %d> *)(c%d + e0);", p, T, vec, p);
            }
            if (g->vfill[p]) line(g, "fcx_vec<fcx_t_%s, %d> wc%d;", T, vec, p);
        }
        if (lv == 0)
            for (int q = 0; q < k->nout; q++)
                if (full_output(k, k->outs[q])) line(g, "fcx_vec<fcx_t_%s, %d> w%d;", dt(k->outs[q]->dtype), vec, q);
        if (elems.s) fcg_sb_puts(&g->body, elems.s);
        if (elems.failed) g->body.failed = true;
        fcg_sb_free(&elems);
        /* Kept values stored after every read of this step (slots may be shared). */
        for (int li = 0; li < k->nleaf; li++) {
            int p = k->nnode + li;
            if (g->vec_used[li] && g->fill[p] == g->phase && g->phase > 0)
                line(g, "if (rc) *(fcx_vec<fcx_t_%s, %d> *)(c%d + e0) = l%d;", dt(k->leaves[li]->dtype),
                     vec, p, li);
        }
        for (int p = 0; p < k->nnode; p++)
            if (g->vfill[p])
                line(g, "if (rc) *(fcx_vec<fcx_t_%s, %d> *)(c%d + e0) = wc%d;", dt(pos_dtype(k, p)), vec,
                     p, p);
        if (lv == 0)
            for (int q = 0; q < k->nout; q++)
                if (full_output(k, k->outs[q]))
                    line(g, "*(fcx_vec<fcx_t_%s, %d> *)((fcx_t_%s *)p.ptr[%d] + %s) = w%d;",
                         dt(k->outs[q]->dtype), vec, dt(k->outs[q]->dtype), k->nleaf + q,
                         step_flat(g), q);
        g->indent -= 2;
        fcg_sb work = g->body;
        g->body = head;
        row_steps(g, vec, &work, level, lv, lv == 0 && k->kind == FCP_KERNEL_ROW && k->long_rows);
        if (work.failed) g->body.failed = true;
        fcg_sb_free(&work);
        line(g, "const idx_t es = eb + nv * %d;", vec);
    } else {
        line(g, "const idx_t es = eb;");
    }
    line(g, "for (idx_t e = es + threadIdx.x; e < ee; e += blockDim.x) {");
    g->indent++;
    scope_push(g);
    g->npend = 0;
    decode(g, "e", "r", k->ndim, k->space, k->rmask, true, NULL);
    if (trailing) line(g, "const idx_t i = base + e;");
    row_element(g, sidx, level, lv, false);
    flush_pending(g, false);
    scope_pop(g);
    g->indent--;
    line(g, "}");
    g->indent--;
    line(g, "}");
}

/* Elements per 16-byte access along a row: by the widest buffer of the space's shape (those
 * read at the flat index) and output stored over the whole space; 1 when none is narrower
 * than 16 bytes. */
static int row_vec_width(const fcp_kernel *k) {
    size_t widest = 0;
    for (int q = 0; q < k->nleaf; q++) {
        const fc_array *a = k->leaves[q];
        if (a->ndim == k->ndim && memcmp(a->shape, k->space, (size_t)k->ndim * 8) == 0 &&
            fc_dtype_size((fc_dtype)a->dtype) > widest)
            widest = fc_dtype_size((fc_dtype)a->dtype);
    }
    for (int q = 0; q < k->nout; q++)
        if (full_output(k, k->outs[q]) && fc_dtype_size((fc_dtype)k->outs[q]->dtype) > widest)
            widest = fc_dtype_size((fc_dtype)k->outs[q]->dtype);
    if (widest == 0 || widest >= 16) return 1;
    int v = (int)(16 / widest);
    return v > 8 ? 8 : v;
}

/* How the axes of a reduce kernel's space fall: reduced axes innermost (rows), or the
 * innermost axis kept (columns; extent-1 axes count as neither). */
static bool innermost_kept(const fcp_kernel *k) {
    for (int d = k->ndim - 1; d >= 0; d--) {
        if (k->space[d] == 1) continue;
        return !(k->rmask & (1u << d));
    }
    return false;
}

/* Column kernels: the kept axes after the last reduced (non-unit) axis are the inner ones. */
static int last_reduced_axis(const fcp_kernel *k) {
    int last = -1;
    for (int d = 0; d < k->ndim; d++)
        if ((k->rmask & (1u << d)) && k->space[d] != 1) last = d;
    return last;
}

/* ---- scans ------------------------------------------------------------------------------ */

static const char *extent_product(gen *g, uint32_t mask);

/* A scan kernel (FCP_KERNEL_SCAN) stores one scan over its space, the scan's mapped input (its
 * prologue) computed inside. Along contiguous rows of at least FCX_SCAN_MIN_ROW elements the
 * rows are cut into tiles of FCX_SCAN_TILE elements, a block each, taken in order from a
 * ticket counter: a block scans its tile (each thread a contiguous run, warps by shuffles,
 * the warps' totals by one thread), publishes the tile's total, and finds the prefix of all
 * tiles before it in the row by looking back over their published totals or inclusive
 * prefixes (decoupled look-back: one pass over the data, a block waits only on tiles that
 * blocks already running hold). The last block to finish zeroes the status words again (the
 * runtime's scratch contract). Other scans (along a strided axis, or short rows) give a
 * thread each line, walked in order. Every value combines with the identity exactly (sums
 * start from -0.0, complex products pass over 1 + 0i), so the first element is copied, as
 * NumPy's accumulate does. */
#define FCX_SCAN_BLOCK 256 /* threads of a tile's block */

static const fc_array *scan_of(const fcp_kernel *k) { return k->outs[0]; }

/* Rows are contiguous where every axis after the scanned one has extent 1 (a broadcast
 * pattern, so the source still depends on structure alone; the length decides at run time
 * between tiles and a thread per row). */
static bool scan_tiled(const fcp_kernel *k) {
    const fc_array *r = scan_of(k);
    for (int d = r->p.axis + 1; d < k->ndim; d++)
        if (k->space[d] != 1) return false;
    return true;
}

/* The identity of the scan's combine in its accumulator dtype: exact for every value. */
static const char *scan_identity(gen *g, const fc_array *r) {
    fc_dtype a = acc_mean_dtype(r);
    const char *A = dt(a), *R = dt(fcg_real_dtype(a));
    fcg_red_combine c = fcg_reduction_of(r)->combine;
    if (c == FCG_COMBINE_ADD || c == FCG_COMBINE_MUL) {
        const char *v = c == FCG_COMBINE_ADD ? (fcg_is_inexact(a) ? "-0.0" : "0") : "1";
        if (fcg_is_complex(a))
            return c == FCG_COMBINE_ADD ? str(g, "fcx_ct_%s{-0.0, -0.0}", A)
                                        : str(g, "fcx_ct_%s{1, 0}", A);
        if (a == FC_BOOL) return c == FCG_COMBINE_ADD ? "false" : "true";
        return str(g, "(fcx_ct_%s)%s", A, v);
    }
    bool lowest = c == FCG_COMBINE_MAX;
    if (fcg_is_complex(a)) {
        const char *inf = str(g, "%sfcx_inf_of<fcx_ct_%s>()", lowest ? "-" : "", R);
        return str(g, "fcx_ct_%s{%s, %s}", A, inf, inf);
    }
    if (fcg_is_inexact(a))
        return str(g, "(fcx_ct_%s)(%sfcx_inf_of<double>())", A, lowest ? "-" : "");
    switch (a) {
    case FC_BOOL: return lowest ? "false" : "true";
    case FC_I8: return lowest ? "(fcx_ct_i8)-128" : "(fcx_ct_i8)127";
    case FC_I16: return lowest ? "(fcx_ct_i16)-32768" : "(fcx_ct_i16)32767";
    case FC_I32: return lowest ? "(fcx_ct_i32)(-2147483647 - 1)" : "(fcx_ct_i32)2147483647";
    case FC_I64:
        return lowest ? "(fcx_ct_i64)(-9223372036854775807LL - 1)"
                      : "(fcx_ct_i64)9223372036854775807LL";
    case FC_U8: return lowest ? "(fcx_ct_u8)0" : "(fcx_ct_u8)255";
    case FC_U16: return lowest ? "(fcx_ct_u16)0" : "(fcx_ct_u16)65535";
    case FC_U32: return lowest ? "(fcx_ct_u32)0" : "(fcx_ct_u32)4294967295u";
    case FC_U64: return lowest ? "(fcx_ct_u64)0" : "(fcx_ct_u64)18446744073709551615ull";
    default: break;
    }
    fail(g, FC_ERR_UNSUPPORTED, "codegen: %s of %s", fcg_ops[r->op].pyname, A);
    return "0";
}

/* a combined with b, a holding the earlier elements. */
static const char *scan_combine(gen *g, const fc_array *r, const char *a, const char *b) {
    switch (fcg_reduction_of(r)->combine) {
    case FCG_COMBINE_ADD: return str(g, "fcx_add(%s, %s)", a, b);
    case FCG_COMBINE_MUL: return str(g, "%s(%s, %s)", prod_merge(r), a, b);
    case FCG_COMBINE_MAX: return str(g, "fcx_maximum(%s, %s)", a, b);
    case FCG_COMBINE_MIN: return str(g, "fcx_minimum(%s, %s)", a, b);
    default: break;
    }
    fail(g, FC_ERR_UNSUPPORTED, "codegen: %s is not a scan", fcg_ops[r->op].pyname);
    return a;
}

/* The scan's input at flat index `flat` of the space, in the accumulator's dtype; *idx is
 * the element's index. */
static int scan_input(gen *g, const char *flat, ix *idx) {
    const fcp_kernel *k = g->k;
    const fc_array *r = scan_of(k), *x = r->in[0];
    uint32_t all = k->ndim ? (uint32_t)((1ull << k->ndim) - 1) : 0;
    decode(g, flat, "c", k->ndim, k->space, all, true, NULL);
    identity_index(g, idx, k->ndim, "c");
    int v = eval(g, x, idx);
    v = convert(g, v, (fc_dtype)x->dtype, (fc_dtype)r->loop_dtype);
    return widen(g, r, v);
}

/* Stores the scan's value `val` (a variable of the accumulator's dtype) at flat index `flat`,
 * then the epilogue's outputs at that element (fusion merged them in: they read the scan only
 * there, so its value is this one). idx: the element's index, or NULL to decode it here. A
 * compaction (COMPRESS) instead stores the element's value (in[1]) at place val - 1 where
 * the running count steps up from `prev`, the count before the element. */
static void scan_emit(gen *g, int val, const char *flat, const ix *idx, const char *prev) {
    const fcp_kernel *k = g->k;
    const fc_array *r = scan_of(k);
    ix own;
    if (!idx) {
        uint32_t all = k->ndim ? (uint32_t)((1ull << k->ndim) - 1) : 0;
        decode(g, flat, "c", k->ndim, k->space, all, true, NULL);
        identity_index(g, &own, k->ndim, "c");
        idx = &own;
    }
    if (r->op == FCG_OP_COMPRESS) {
        line(g, "if (v%d != %s) {", val, prev);
        g->indent++;
        scope_push(g);
        int y = eval(g, r->in[1], idx);
        y = convert(g, y, (fc_dtype)r->in[1]->dtype, (fc_dtype)r->dtype);
        store(g, r, 0, y, str(g, "(idx_t)(v%d - 1)", val));
        scope_pop(g);
        g->indent--;
        line(g, "}");
        return;
    }
    int y = convert(g, val, acc_mean_dtype(r), (fc_dtype)r->dtype);
    store(g, r, 0, y, flat);
    g->scan_var = y;
    for (int q = 1; q < k->nout; q++) store(g, k->outs[q], q, eval(g, k->outs[q], idx), flat);
    g->scan_var = -1;
}

/* Folds the element at `flat` into accumulator `acc` and stores the running value there. */
static void scan_step(gen *g, const char *acc, const char *flat) {
    const fc_array *r = scan_of(g->k);
    scope_push(g);
    ix idx;
    int v = scan_input(g, flat, &idx);
    int before = new_var(g);
    line(g, "const fcx_ct_%s v%d = %s;", dt(acc_mean_dtype(r)), before, acc);
    line(g, "%s = %s;", acc, scan_combine(g, r, acc, str(g, "v%d", v)));
    int w = new_var(g);
    line(g, "const fcx_ct_%s v%d = %s;", dt(acc_mean_dtype(r)), w, acc);
    scan_emit(g, w, flat, &idx, str(g, "v%d", before));
    scope_pop(g);
}

/* Extents before, at and after the scan's axis. */
static void scan_extents(gen *g, uint32_t *before, uint32_t *after) {
    const fcp_kernel *k = g->k;
    int axis = scan_of(k)->p.axis;
    uint32_t all = k->ndim ? (uint32_t)((1ull << k->ndim) - 1) : 0;
    *before = (uint32_t)((1ull << axis) - 1) & all;
    *after = all & ~*before & ~(1u << axis);
    line(g, "const idx_t O = %s;", extent_product(g, *before));
    line(g, "const idx_t L = %s;", iarg(g, FCX_SLOT_SPACE_EXTENT, NULL, axis));
    line(g, "const idx_t C = %s;", extent_product(g, *after));
}

static void gen_scan_lines_body(gen *g) {
    const fc_array *r = scan_of(g->k);
    line(g, "for (idx_t t = (idx_t)blockIdx.x * blockDim.x + threadIdx.x; t < O * C; "
            "t += (idx_t)gridDim.x * blockDim.x) {");
    g->indent++;
    line(g, "const idx_t o = t / C, c = t %% C;");
    line(g, "fcx_ct_%s acc = %s;", dt(acc_mean_dtype(r)), scan_identity(g, r));
    line(g, "for (idx_t l = 0; l < L; l++) {");
    g->indent++;
    line(g, "const idx_t i = (o * L + l) * C + c;");
    scan_step(g, "acc", "i");
    g->indent--;
    line(g, "}");
    g->indent--;
    line(g, "}");
}

static void gen_scan_lines(gen *g) {
    uint32_t before, after;
    scan_extents(g, &before, &after);
    gen_scan_lines_body(g);
}

/* A tile: each warp takes its own chunk of consecutive elements, loads them (the prologue
 * applied) in coalesced strides, every load before any store to shared memory, and passes
 * them through its part of shared memory so that each thread holds a run of consecutive
 * elements in registers and scans it there; the warp's inclusive scan of its runs' totals
 * (shuffles) gives each run its offset in the chunk. One barrier; then warp 0 scans the
 * warps' totals, publishes the tile's total and finds the prefix of the tiles before it:
 * lane l reads the status of the l-th tile before, the warp waits until each has at least its
 * total, takes the nearest one with its inclusive prefix (a ballot) and combines it with the
 * totals in between, a window of a warp's tiles at a time (decoupled look-back); it
 * publishes the inclusive prefix and takes the block's next ticket. A second barrier; each
 * warp then writes its running values back through its part of shared memory and out in
 * coalesced strides with the epilogue. Two barriers a tile; each element is read once and
 * written once. */
static void gen_scan_tiles(gen *g) {
    const fcp_kernel *k = g->k;
    const fc_array *r = scan_of(k);
    const char *A = dt(acc_mean_dtype(r)), *id = scan_identity(g, r);
    uint32_t before, after;
    scan_extents(g, &before, &after);
    /* short rows: a thread each (fcx_launch_config agrees) */
    line(g, "if (L < FCX_SCAN_MIN_ROW) {");
    g->indent++;
    gen_scan_lines_body(g);
    line(g, "return;");
    g->indent--;
    line(g, "}");
    line(g, "typedef fcx_ct_%s acc_t;", A);
    line(g, "constexpr int NT = FCX_SCAN_THREADS;");
    line(g, "constexpr int NW = (NT + FCX_WARP - 1) / FCX_WARP;");
    line(g, "constexpr int IT = (int)((FCX_SCAN_TILE_OF(sizeof(acc_t)) + NT - 1) / NT);");
    line(g, "constexpr int CH = FCX_WARP * IT; /* a warp's chunk */");
    line(g, "constexpr long long TS = FCX_SCAN_TILE_OF(sizeof(acc_t)); /* <= NW * CH */");
    line(g, "__shared__ acc_t s_val[FCX_SCAN_PAD(NW * CH)];");
    line(g, "__shared__ acc_t s_tot[NW], s_exc[NW], s_prefix;");
    line(g, "__shared__ long long s_next;");
    line(g, "__shared__ bool s_last;");
    line(g, "const long long T = ((long long)L + TS - 1) / TS;");
    line(g, "const long long ntiles = (long long)O * T;");
    /* scratch: ticket and exit counters, then the status words (fcx_launch_config sizes it
     * with fcx_scan_scratch_bytes) */
    line(g, "unsigned *const cnt = (unsigned *)p.ptr[%d];", k->nleaf + k->nout);
    line(g, "unsigned char *const status = (unsigned char *)cnt + 16;");
    line(g, "const int lane = threadIdx.x %% FCX_WARP, warp = threadIdx.x / FCX_WARP;");
    line(g, "const int c0w = warp * CH; /* the warp's chunk in the tile */");
    /* tiles in ticket order: a tile's predecessors were taken by blocks already running */
    line(g, "if (threadIdx.x == 0) s_next = (long long)fcx_atomic_add(&cnt[0], 1u);");
    line(g, "__syncthreads();");
    line(g, "for (;;) {");
    g->indent++;
    line(g, "const long long tile = s_next;");
    line(g, "if (tile >= ntiles) break;");
    line(g, "const idx_t row = (idx_t)(tile / T), l0 = (idx_t)(tile %% T * TS);");
    line(g, "const idx_t len = L - l0 < (idx_t)TS ? L - l0 : (idx_t)TS;");
    /* the warp's chunk, coalesced, every load before any store to shared memory (the
     * compiler cannot tell the generic input pointers from the shared array) */
    line(g, "acc_t u[IT];");
    line(g, "#pragma unroll");
    line(g, "for (int k = 0; k < IT; k++) {");
    g->indent++;
    line(g, "const idx_t j = (idx_t)(c0w + k * FCX_WARP + lane);");
    line(g, "u[k] = %s;", id);
    line(g, "if (j < len) {");
    g->indent++;
    scope_push(g);
    line(g, "const idx_t i = row * L + l0 + j;");
    ix idx;
    int v = scan_input(g, "i", &idx);
    line(g, "u[k] = v%d;", v);
    scope_pop(g);
    g->indent--;
    line(g, "}");
    g->indent--;
    line(g, "}");
    line(g, "#pragma unroll");
    line(g, "for (int k = 0; k < IT; k++) s_val[FCX_SCAN_PAD(c0w + k * FCX_WARP + lane)] = u[k];");
    line(g, "fcx_syncwarp();");
    /* the thread's run, scanned in registers */
    line(g, "#pragma unroll");
    line(g, "for (int k = 0; k < IT; k++) u[k] = s_val[FCX_SCAN_PAD(c0w + lane * IT + k)];");
    line(g, "#pragma unroll");
    line(g, "for (int k = 1; k < IT; k++) u[k] = %s;", scan_combine(g, r, "u[k - 1]", "u[k]"));
    /* the warp's inclusive scan of the runs' totals (lane l takes lane l - d), then exclusive */
    line(g, "acc_t x = u[IT - 1];");
    line(g, "for (int d = 1; d < FCX_WARP; d <<= 1) {");
    line(g, "    const acc_t y = fcx_shfl_idx(x, lane >= d ? lane - d : lane);");
    line(g, "    if (lane >= d) x = %s;", scan_combine(g, r, "y", "x"));
    line(g, "}");
    line(g, "acc_t xe = fcx_shfl_idx(x, lane > 0 ? lane - 1 : 0);");
    line(g, "if (lane == 0) xe = %s;", id);
    line(g, "if (lane == FCX_WARP - 1) s_tot[warp] = x;");
    line(g, "__syncthreads();");
    /* warp 0: the warps' exclusive prefixes, the tile's total published, the look-back, the
     * next ticket */
    line(g, "if (warp == 0) {");
    g->indent++;
    line(g, "const acc_t w = lane < NW ? s_tot[lane] : %s;", id);
    line(g, "acc_t wi = w;");
    line(g, "for (int d = 1; d < FCX_WARP; d <<= 1) {");
    line(g, "    const acc_t y = fcx_shfl_idx(wi, lane >= d ? lane - d : lane);");
    line(g, "    if (lane >= d) wi = %s;", scan_combine(g, r, "y", "wi"));
    line(g, "}");
    line(g, "const acc_t total = fcx_shfl_idx(wi, NW - 1);");
    line(g, "acc_t we = fcx_shfl_idx(wi, lane > 0 ? lane - 1 : 0);");
    line(g, "if (lane == 0) we = %s;", id);
    line(g, "if (lane < NW) s_exc[lane] = we;");
    line(g, "const bool first = tile %% T == 0;");
    line(g, "if (lane == 0) fcx_scan_publish(status, ntiles, tile, first ? 2u : 1u, total);");
    line(g, "acc_t prefix = %s;", id);
    line(g, "if (!first) {");
    g->indent++;
    line(g, "const long long lo = tile - tile %% T;");
    line(g, "for (long long hi = tile - 1;; hi -= FCX_WARP) {");
    g->indent++;
    line(g, "const long long q = hi - lane;");
    line(g, "acc_t y = %s;", id);
    line(g, "unsigned f = 2u;");
    line(g, "if (q >= lo)");
    line(g, "    while ((f = fcx_scan_peek(status, ntiles, q, &y)) == 0u) {}");
    /* the nearest tile with its inclusive prefix (the lowest lane), then every lane up to
     * it combined, earlier tiles (higher lanes) first */
    line(g, "const unsigned inc = fcx_ballot(f == 2u);");
    line(g, "const int near = inc ? fcx_lowest_set(inc) : FCX_WARP;");
    line(g, "if (lane > near) y = %s;", id);
    line(g, "for (int d = 1; d < FCX_WARP; d <<= 1) {");
    line(g, "    const acc_t o = fcx_shfl_down(y, d);");
    line(g, "    if (lane + d < FCX_WARP) y = %s;", scan_combine(g, r, "o", "y"));
    line(g, "}");
    line(g, "prefix = %s;", scan_combine(g, r, "y", "prefix"));
    line(g, "if (inc) break;");
    g->indent--;
    line(g, "}");
    line(g, "if (lane == 0 && FCX_SCAN_PUBLISH(tile) == 2u)");
    line(g, "    fcx_scan_publish(status, ntiles, tile, 2u, %s);",
         scan_combine(g, r, "prefix", "total"));
    g->indent--;
    line(g, "}");
    line(g, "if (lane == 0) {");
    line(g, "    s_prefix = prefix;");
    line(g, "    s_next = (long long)fcx_atomic_add(&cnt[0], 1u);");
    line(g, "}");
    g->indent--;
    line(g, "}");
    line(g, "__syncthreads();");
    /* the running values from the run's prefix, back through the warp's shared memory */
    line(g, "const acc_t base = %s;", scan_combine(g, r, "s_prefix", "s_exc[warp]"));
    line(g, "const acc_t run = %s;", scan_combine(g, r, "base", "xe"));
    line(g, "#pragma unroll");
    line(g, "for (int k = 0; k < IT; k++) s_val[FCX_SCAN_PAD(c0w + lane * IT + k)] = %s;",
         scan_combine(g, r, "run", "u[k]"));
    line(g, "fcx_syncwarp();");
    /* store, coalesced, with the epilogue (a compaction's count before the chunk is base) */
    line(g, "#pragma unroll");
    line(g, "for (int k = 0; k < IT; k++) {");
    g->indent++;
    line(g, "const int jc = k * FCX_WARP + lane;");
    line(g, "const idx_t j = (idx_t)(c0w + jc);");
    line(g, "if (j < len) {");
    g->indent++;
    scope_push(g);
    line(g, "const idx_t i = row * L + l0 + j;");
    int w = new_var(g);
    line(g, "const acc_t v%d = s_val[FCX_SCAN_PAD(j)];", w);
    scan_emit(g, w, "i", NULL, "(jc > 0 ? s_val[FCX_SCAN_PAD(j - 1)] : base)");
    scope_pop(g);
    g->indent--;
    line(g, "}");
    g->indent--;
    line(g, "}");
    line(g, "fcx_syncwarp(); /* the chunk's reads before the next tile's writes */");
    g->indent--;
    line(g, "}");
    /* the last block to leave the loop (every tile is done then, and every block has taken
     * its last ticket) leaves the counters and status words zeroed */
    line(g, "if (threadIdx.x == 0) {");
    line(g, "    fcx_fence();");
    line(g, "    s_last = fcx_atomic_add(&cnt[1], 1u) == gridDim.x - 1;");
    line(g, "}");
    line(g, "__syncthreads();");
    line(g, "if (s_last) {");
    line(g, "    fcx_fence();");
    line(g, "    fcx_scan_clear<acc_t>(status, ntiles, threadIdx.x, NT);");
    line(g, "    if (threadIdx.x == 0) cnt[0] = cnt[1] = 0u;");
    line(g, "}");
}

static fcx_strategy strategy_of(const fcp_kernel *k) {
    if (k->kind == FCP_KERNEL_EW) return FCX_STRATEGY_EW;
    if (k->kind == FCP_KERNEL_SCATTER) return FCX_STRATEGY_SCATTER;
    if (k->kind == FCP_KERNEL_SCAN)
        return scan_tiled(k) ? FCX_STRATEGY_SCAN_TILES : FCX_STRATEGY_SCAN_LINES;
    if (k->kind == FCP_KERNEL_REDUCE && innermost_kept(k) && last_reduced_axis(k) >= 0)
        return FCX_STRATEGY_BLOCK_COL;
    return FCX_STRATEGY_BLOCK_ROW;
}

/* Product of the space's extents over the axes in mask, as an expression. */
static const char *extent_product(gen *g, uint32_t mask) {
    const fcp_kernel *k = g->k;
    char buf[512];
    size_t len = 0;
    buf[0] = '\0';
    for (int d = 0; d < k->ndim && len < sizeof buf; d++)
        if (mask & (1u << d))
            len += (size_t)snprintf(buf + len, sizeof buf - len, "%s(idx_t)%s", len ? " * " : "",
                                    ival(g, FCX_SLOT_SPACE_EXTENT, NULL, d));
    if (len >= sizeof buf) fail(g, FC_ERR_UNSUPPORTED, "codegen: an extent product is too long");
    return len ? str(g, "%s", buf) : "1";
}

static void collect_level(gen *g, const int *level, int lv, int *pos, int *n) {
    *n = 0;
    for (int j = 0; j < g->k->nred; j++) {
        int p = pos_of(g, g->k->reds[j]);
        if (level[p] == lv) pos[(*n)++] = p;
    }
}

/* An online sum (position pos) that ended non-finite: the row's sum again, in a pass of its
 * own with the row's max final (the program's two-phase sum), as a plain sum. */
static void online_recheck(gen *g, const ix *sidx, int pos, int vec, bool trailing) {
    const fcp_kernel *k = g->k;
    int *lv = fcg_malloc(g->ctx, (size_t)(k->nnode + 1) * sizeof *lv);
    if (!lv) {
        fail(g, FC_ERR_NOMEM, "codegen: out of memory");
        return;
    }
    for (int i = 0; i < k->nnode; i++) lv[i] = i == pos ? 1 : 0;
    line(g, "if (!fcx_isfinite(a%d)) { /* a non-finite shift or sum: the two-pass sum */", pos);
    g->indent++;
    g->plain = true;
    acc_identity(g, k->nodes[pos], pos, "", false);
    row_loops(g, sidx, lv, 1, vec, trailing);
    block_reduce_rows(g, &pos, 1);
    g->plain = false;
    g->indent--;
    line(g, "}");
    fcg_free(g->ctx, lv, (size_t)(k->nnode + 1) * sizeof *lv);
}

/* Reduce and row kernels with the reduced axes innermost: a block per output row, or per
 * piece of a long row (reduce kernels). `level` has the reductions' phases. */
static void gen_rows_body(gen *g, const int *level, int maxlevel, int *pos) {
    const fcp_kernel *k = g->k;
    bool row_kind = k->kind == FCP_KERNEL_ROW;
    uint32_t all = k->ndim ? (uint32_t)((1ull << k->ndim) - 1) : 0;
    int first_red = 0;
    while (first_red < k->ndim && !(k->rmask & (1u << first_red))) first_red++;
    /* With the reduced axes trailing, element e of row `row` sits at flat row * L + e, so
     * same-shape buffers load without index arithmetic. */
    bool trailing = k->ndim && k->rmask == (uint32_t)(all & ~((1ull << first_red) - 1));
    /* Segmented rows (row_loops): the innermost non-unit axis reduced, the kept axes not all
     * outside the reduced ones. R: the elements of one contiguous run of a row. */
    int last_kept = k->ndim - 1;
    while (last_kept >= 0 && ((k->rmask & (1u << last_kept)) || k->space[last_kept] == 1))
        last_kept--;
    uint32_t run = last_kept < 0 ? all : all & ~(uint32_t)((2ull << last_kept) - 1); /* after it */
    g->seg_run = !trailing && !row_kind && !innermost_kept(k) && (run & k->rmask);
    int vec = trailing || g->seg_run ? row_vec_width(k) : 1;
    g->run_axes = run & k->rmask;
    if (g->seg_run) {
        line(g, "const idx_t R = %s; /* elements of a contiguous run of a row */",
             extent_product(g, run & k->rmask));
        line(g, "const fcx_divider<idx_t> fcx_dR = fcx_divider_of(R);");
    }
    ix sidx;
    sidx.nd = k->ndim;
    sidx.identity = trailing;
    for (int d = 0; d < k->ndim; d++) sidx.e[d] = str(g, "%s%d", k->rmask & (1u << d) ? "r" : "o", d);
    if (row_kind) {
        line(g, "for (idx_t row = blockIdx.x; row < M; row += gridDim.x) {");
    } else {
        line(g, "idx_t S, CH; /* pieces per row and their length: from the shape alone */");
        line(g, "fcx_split((long long)M, (long long)L, (long long)M * %d, false, &S, &CH);", g->part_bytes);
        line(g, "for (idx_t w = blockIdx.x; w < M * S; w += gridDim.x) {");
    }
    g->indent++;
    if (!row_kind) {
        line(g, "const idx_t row = w / S, sp = w - row * S;");
        line(g, "const idx_t eb = sp * CH, ee = eb + CH < L ? eb + CH : L;");
    } else {
        line(g, "const idx_t eb = 0, ee = L;");
    }
    decode(g, "row", "o", k->ndim, k->space, ~k->rmask & all, true, NULL);
    if (trailing) line(g, "const idx_t base = row * L;");
    for (int lv = 1; lv <= maxlevel; lv++) {
        int n;
        collect_level(g, level, lv, pos, &n);
        for (int j = 0; j < n; j++) acc_init(g, k->nodes[pos[j]], pos[j]);
        g->phase = row_kind ? lv : 0;
        row_loops(g, &sidx, level, lv, vec, trailing);
        g->phase = 0;
        block_reduce_rows(g, pos, n);
        if (!row_kind) {
            line(g, "if (S > 1) { /* a piece of a split row: the last block combines the partials */");
            g->indent++;
            scratch_pointers(g, pos, n, "M", "M * S");
            split_arrive(g, pos, n, "threadIdx.x == 0", "row * S + sp", "row", "row", "true",
                         "threadIdx.x", "blockDim.x");
            block_reduce_rows(g, pos, n);
            line(g, "if (threadIdx.x == 0) fcx_cnt[row] = 0; /* the scratch is zero again */");
            g->indent--;
            line(g, "}");
        }
        for (int j = 0; j < n; j++) {
            if (online_of(g, k->nodes[pos[j]]) >= 0) online_recheck(g, &sidx, pos[j], vec, trailing);
            g->red_var[pos[j]] = acc_finish(g, k->nodes[pos[j]], pos[j], "L");
        }
    }
    /* Row kernels store their outputs over the whole space per element; reduce kernels (whose
     * outputs may have the space's shape only when the reduced extents are 1) once per row. */
    bool any_full = false;
    for (int q = 0; q < k->nout && row_kind; q++)
        any_full |= full_output(k, k->outs[q]) && k->rmask && fcg_node_numel(k->outs[q]) != 0;
    if (any_full) {
        g->phase = maxlevel + 1;
        row_loops(g, &sidx, level, 0, vec, trailing);
        g->phase = 0;
    }
    line(g, "if (threadIdx.x == 0) {");
    g->indent++;
    scope_push(g);
    reduced_outputs(g, any_full);
    scope_pop(g);
    g->indent--;
    line(g, "}");
    /* Rows kept on chip: the next row may give an element another thread (its alignment
     * differs), which must not overwrite the copy before this row's last phase read it. */
    bool cached = false;
    for (int p = 0; p < k->nnode + k->nleaf; p++) cached |= g->fill[p] > 0;
    if (cached) line(g, "if (rc) __syncthreads();");
    g->indent--;
    line(g, "}");
}

/* Bytes of one partial result of all the kernel's reductions (a piece of every item). */
static int partial_bytes(gen *g) {
    int b = 0;
    for (int j = 0; j < g->k->nred; j++) b += lane_bytes(g, g->k->reds[j]);
    return b;
}

/* One dry run of a row kernel's body: records the phases that evaluate each value at the flat
 * index (g->phases) under the current choice of kept values, leaving the rest as it was. */
static void dry_run(gen *g, const int *level, int maxlevel, int *pos) {
    const fcp_kernel *k = g->k;
    int np = k->nnode + k->nleaf;
    fcg_sb head = g->body;
    memset(&g->body, 0, sizeof g->body);
    g->body.ctx = g->ctx;
    int nvar = g->nvar;
    size_t nmemo = g->nmemo;
    memset(g->phases, 0, (size_t)(np + 1) * sizeof *g->phases);
    gen_rows_body(g, level, maxlevel, pos);
    fcg_sb_free(&g->body);
    g->body = head;
    g->nvar = nvar;
    g->nmemo = nmemo;
    for (int i = 0; i < k->nnode; i++) g->red_var[i] = -1;
}

static bool several(uint64_t ph) { return ph && (ph & (ph - 1)); }

/* Worth keeping on chip: evaluated at the flat index in several phases, not kept yet, not a
 * reduction; computed values only when allowed and no wider than the vector steps allow. */
static bool keep_candidate(gen *g, int p, bool nodes, int vec) {
    const fcp_kernel *k = g->k;
    if (g->fill[p] || !several(g->phases[p])) return false;
    if (p >= k->nnode) return true;
    if (!nodes || fcg_ops[k->nodes[p]->op].kind == FCG_KIND_REDUCE) return false;
    return vec <= 1 || (int)fc_dtype_size(pos_dtype(k, p)) * vec <= 16;
}

/* Gives each kept value a shared-memory slot, in phase order; a slot is free again in the
 * phase its last reader runs (an element's stores follow its reads), and is taken again only
 * by a value of its element size: element e of an 8-byte value overlaps elements 2e and 2e + 1
 * of a 4-byte one, so a thread storing its element e would overwrite elements it (or another
 * thread) has yet to read (seed 29149 of the differential test: a u32 row read back after the
 * f64 row that replaced it had been stored over it). Returns the bytes per row element of all
 * slots; the slots' element sizes go to slot_bytes. */
static int assign_slots(gen *g, int *slot_bytes, int *free_after, int *nslot) {
    const fcp_kernel *k = g->k;
    int np = k->nnode + k->nleaf, n = 0;
    for (int phase = 1; phase < 64; phase++)
        for (int p = 0; p < np; p++) {
            if (g->fill[p] != phase) continue;
            int size = (int)fc_dtype_size(pos_dtype(k, p)), last = 63;
            while (last > 0 && !(g->phases[p] & (1ull << last))) last--;
            int best = -1;
            for (int sl = 0; sl < n && best < 0; sl++)
                if (free_after[sl] <= phase && slot_bytes[sl] == size) best = sl;
            if (best < 0) {
                best = n++;
                slot_bytes[best] = size;
            }
            g->slot[p] = best;
            free_after[best] = last;
        }
    *nslot = n;
    int bytes = 0;
    for (int sl = 0; sl < n; sl++) bytes += slot_bytes[sl];
    return bytes;
}

/* Row kernels keep values that several phases need at the flat index in shared memory: the
 * rows they read (each is read from global memory once) and, where it saves recomputing,
 * values computed from them (softmax's exp(x - max)). Dry runs find them: each round keeps
 * the outermost values still needed in several phases, until none is; slots are shared
 * between values whose lifetimes (phases) do not overlap. Computed values are kept only if
 * all this takes no more shared memory than the rows of the kernel's inputs, which fusion
 * budgeted (FCP_ROW_MAX_BYTES). */
static void choose_kept(gen *g, const int *level, int maxlevel, int *pos, int vec) {
    const fcp_kernel *k = g->k;
    int np = k->nnode + k->nleaf;
    int budget = 0;
    for (int li = 0; li < k->nleaf; li++) {
        const fc_array *a = k->leaves[li];
        if (a->ndim == k->ndim && memcmp(a->shape, k->space, (size_t)k->ndim * 8) == 0)
            budget += (int)fc_dtype_size((fc_dtype)a->dtype);
    }
    int *slot_bytes = fcg_calloc(g->ctx, (size_t)(np + 1) * sizeof *slot_bytes);
    int *free_after = fcg_calloc(g->ctx, (size_t)(np + 1) * sizeof *free_after);
    if (!slot_bytes || !free_after) {
        fcg_free(g->ctx, slot_bytes, (size_t)(np + 1) * sizeof *slot_bytes);
        fcg_free(g->ctx, free_after, (size_t)(np + 1) * sizeof *free_after);
        fail(g, FC_ERR_NOMEM, "codegen: out of memory");
        return;
    }
    int nslot = 0;
    for (int attempt = 0; attempt < 2 && g->err == FC_OK; attempt++) {
        bool nodes = attempt == 0;
        memset(g->fill, 0, (size_t)(np + 1) * sizeof *g->fill);
        for (int round = 0; round < 32; round++) {
            dry_run(g, level, maxlevel, pos);
            bool added = false;
            for (int p = 0; p < np; p++) {
                if (!keep_candidate(g, p, nodes, vec)) continue;
                const fc_array *a = p < k->nnode ? k->nodes[p] : k->leaves[p - k->nnode];
                bool outermost = true;
                for (int q = 0; q < k->nnode && outermost; q++)
                    for (int c = 0; c < k->nodes[q]->nin; c++)
                        if (k->nodes[q]->in[c] == a && keep_candidate(g, q, nodes, vec)) outermost = false;
                if (!outermost) continue;
                int first = 1;
                while (!(g->phases[p] & (1ull << first))) first++;
                g->fill[p] = first;
                added = true;
            }
            if (!added) break;
        }
        if (assign_slots(g, slot_bytes, free_after, &nslot) <= budget) break;
    }
    if (g->err == FC_OK && nslot > 0 && nslot <= np) {
        line(g, "FCX_DSMEM(fcx_dsm); /* rows and values kept on chip */");
        line(g, "size_t fcx_co = 0;");
        for (int sl = 0; sl < nslot; sl++) {
            line(g, "unsigned char *const fcx_s%d = fcx_dsm + fcx_co;", sl);
            line(g, "fcx_co += fcx_align16((size_t)L * %d);", slot_bytes[sl]);
            g->slot_size[size_class(slot_bytes[sl])]++;
        }
        for (int p = 0; p < np; p++)
            if (g->fill[p])
                line(g, "fcx_t_%s *const c%d = (fcx_t_%s *)fcx_s%d;", dt(pos_dtype(k, p)), p,
                     dt(pos_dtype(k, p)), g->slot[p]);
        line(g, "const bool rc = fcx_dsmem_size() >= fcx_co;");
    } else {
        memset(g->fill, 0, (size_t)(np + 1) * sizeof *g->fill);
    }
    fcg_free(g->ctx, slot_bytes, (size_t)(np + 1) * sizeof *slot_bytes);
    fcg_free(g->ctx, free_after, (size_t)(np + 1) * sizeof *free_after);
}

static void gen_rows(gen *g) {
    const fcp_kernel *k = g->k;
    uint32_t all = k->ndim ? (uint32_t)((1ull << k->ndim) - 1) : 0;
    line(g, "const idx_t M = %s;", extent_product(g, ~k->rmask & all));
    line(g, "const idx_t L = %s;", extent_product(g, k->rmask & all));
    line(g, "const int lane = (int)(threadIdx.x %% FCX_WARP), wid = (int)(threadIdx.x / FCX_WARP), "
            "nw = (int)(blockDim.x / FCX_WARP);");
    if (k->kind != FCP_KERNEL_ROW) line(g, "__shared__ bool fcx_last;");
    int *level = fcg_calloc(g->ctx, (size_t)(k->nnode + 1) * sizeof *level);
    int *pos = fcg_calloc(g->ctx, (size_t)(k->nred + 1) * sizeof *pos);
    if (!level || !pos) {
        fcg_free(g->ctx, level, (size_t)(k->nnode + 1) * sizeof *level);
        fcg_free(g->ctx, pos, (size_t)(k->nred + 1) * sizeof *pos);
        fail(g, FC_ERR_NOMEM, "codegen: out of memory");
        return;
    }
    if (online_pairs(g) != FC_OK) fail(g, FC_ERR_NOMEM, "codegen: out of memory");
    int maxlevel = reduction_levels(g, level);
    g->part_bytes = partial_bytes(g);
    /* Long rows stream from memory in every phase: nothing is kept on chip. */
    if (k->kind == FCP_KERNEL_ROW && maxlevel >= 1 && !k->long_rows)
        choose_kept(g, level, maxlevel, pos, row_vec_width(k));
    gen_rows_body(g, level, maxlevel, pos);
    fcg_free(g->ctx, level, (size_t)(k->nnode + 1) * sizeof *level);
    fcg_free(g->ctx, pos, (size_t)(k->nred + 1) * sizeof *pos);
}

/* Reduce kernels whose innermost axis is kept (column reductions such as mean(x, 0)): the
 * kept axes split into outer ones (before the last reduced axis, flat index o < O) and inner
 * ones (after it, c < C). A block takes a tile of FCX_WARP adjacent inner columns, one per
 * lane, and a piece of the reduced range; its warps take every nw-th element of the piece,
 * col_batch elements at a time, so a warp's loads are one contiguous run per element and
 * several are in flight. Warps combine in order through shared memory; pieces through the
 * scratch buffer. */
#define COL_BATCH 8 /* elements (rows) a thread loads before it folds them: loads in flight */

/* A warp's load of a row of 4-byte columns is 128 bytes, of 8-byte ones 256: narrow columns
 * take twice the batch, so as many bytes are in flight (W11's and W7's kernels keep their
 * registers and occupancy at 16: ptxas, sm_90). */
static int col_batch(const fcp_kernel *k) {
    size_t widest = 0;
    for (int q = 0; q < k->nleaf; q++) {
        const fc_array *a = k->leaves[q];
        if (a->ndim == k->ndim && memcmp(a->shape, k->space, (size_t)k->ndim * 8) == 0 &&
            fc_dtype_size((fc_dtype)a->dtype) > widest)
            widest = fc_dtype_size((fc_dtype)a->dtype);
    }
    return widest <= 4 ? 2 * COL_BATCH : COL_BATCH;
}

/* A column kernel's element: its row e (from `e`, NULL where the loop names it e), its
 * coordinates r<d> and, where the axes are contiguous, its flat index i. */
static void cols_element(gen *g, const char *e, bool contig) {
    const fcp_kernel *k = g->k;
    if (e) line(g, "const idx_t e = %s;", e);
    decode(g, "e", "r", k->ndim, k->space, k->rmask, true, NULL);
    if (contig) line(g, "const idx_t i = (o * L + e) * C + c;");
}

/* A column kernel's online sum (position pos) that ended non-finite in some column of the
 * tile: the tile's sums again over the whole reduced range, with the columns' final maxima
 * (from warp 0, through shared memory, to every warp), as plain sums: the program's two-pass
 * sum (online_recheck's reason). The branch is uniform: the block decides it together. */
static void cols_online_recheck(gen *g, const ix *sidx, int pos, bool contig) {
    const fcp_kernel *k = g->k;
    int pm = online_of(g, k->nodes[pos]);
    const fc_array *M = k->nodes[pm];
    int *lv = fcg_calloc(g->ctx, (size_t)(k->nnode + 1) * sizeof *lv);
    if (!lv) {
        fail(g, FC_ERR_NOMEM, "codegen: out of memory");
        return;
    }
    lv[pos] = 1;
    line(g, "{ /* a non-finite online sum: the two-pass sums of the tile */");
    g->indent++;
    line(g, "__shared__ bool fcx_redo%d;", pos);
    line(g, "__shared__ fcx_ct_%s fcx_rm%d[FCX_WARP];", dt(acc_mean_dtype(M)), pos);
    line(g, "__shared__ bool fcx_rh%d[FCX_WARP];", pos);
    line(g, "if (threadIdx.x == 0) fcx_redo%d = false;", pos);
    line(g, "__syncthreads();");
    line(g, "if (wid == 0 && act && !fcx_isfinite(a%d)) fcx_redo%d = true;", pos, pos);
    line(g, "if (wid == 0) { fcx_rm%d[lane] = a%d; fcx_rh%d[lane] = h%d; }", pos, pm, pos, pm);
    line(g, "__syncthreads();");
    line(g, "if (fcx_redo%d) {", pos);
    g->indent++;
    scope_push(g);
    line(g, "a%d = fcx_rm%d[lane];", pm, pos);
    line(g, "h%d = fcx_rh%d[lane];", pm, pos);
    g->red_var[pm] = acc_finish(g, M, pm, "L");
    g->plain = true;
    acc_identity(g, k->nodes[pos], pos, "", false);
    line(g, "if (act) for (idx_t e = wid; e < L; e += nw) {");
    g->indent++;
    scope_push(g);
    cols_element(g, NULL, contig);
    row_element(g, sidx, lv, 1, false);
    scope_pop(g);
    g->indent--;
    line(g, "}");
    block_reduce_cols(g, &pos, 1);
    g->plain = false;
    g->red_var[pm] = -1;
    scope_pop(g);
    g->indent--;
    line(g, "}");
    g->indent--;
    line(g, "}");
    fcg_free(g->ctx, lv, (size_t)(k->nnode + 1) * sizeof *lv);
}

/* Whether a column kernel folds its online sums a batch at a time: every online sum's max M
 * takes the values themselves (map VALUE), so that M's accumulator after a batch is the
 * running max that the sum's shift follows (lazily: online_move). */
static bool cols_online_batched(gen *g, const int *pos, int n) {
    bool any = false;
    for (int j = 0; j < n; j++) {
        int pm = online_of(g, g->k->nodes[pos[j]]);
        if (pm < 0) continue;
        if (fcg_reduction_of(g->k->nodes[pm])->map != FCG_MAP_VALUE) return false;
        any = true;
    }
    return any;
}

/* The terms of online sum r (position pos) for a batch of k rows whose values A the batch
 * stored in ob<pos>[u]: the shift moves at most once, lazily, towards the max after the whole
 * batch (M's own accumulator), then the k terms exp(A - B(m)) are added. At most one rescale
 * (a double exp) a batch, rarely taken, where it used to be one an element the max rose on,
 * and no branch between the batch's loads. */
static void online_batch_terms(gen *g, const fc_array *r, int pos, int k, const ix *sidx,
                               bool contig) {
    const fcp_kernel *kn = g->k;
    int pm = online_of(g, r);
    const fc_array *t = r->in[0], *sub = t->in[0], *A = sub->in[0];
    const char *MT = dt(acc_mean_dtype(kn->nodes[pm]));
    line(g, "{ /* online sum: the batch's max, then its terms */");
    g->indent++;
    scope_push(g);
    line(g, "const fcx_ct_%s mn = fcx_cast_%s(a%d);", MT, MT, pm);
    online_move(g, r, pos, true);
    line(g, "#pragma unroll");
    line(g, "for (int u = 0; u < %d; u++) {", k);
    g->indent++;
    scope_push(g);
    cols_element(g, "e4 + u * nw", contig);
    /* A's value at the element, as the batch stored it: the term's own evaluation of A finds
     * it (memo) instead of loading it again. */
    ix ti = broadcast_index(t, sub, sidx), ai = broadcast_index(sub, A, &ti);
    int va = new_var(g);
    line(g, "const fcx_ct_%s v%d = ob%d[u];", dt(A->dtype), va, pos);
    memo_add(g, A, index_key(&ai), va);
    online_term(g, r, pos, sidx);
    block_close(g);
    block_close(g);
}

/* Moves a lazy online sum's shift (online_batch_terms) to its max M itself, the shift the
 * program's two-pass sum has: in warp 0, which holds the columns' combined sums. */
static void online_settle(gen *g, const fc_array *r, int pos) {
    int pm = online_of(g, r);
    const char *MT = dt(acc_mean_dtype(g->k->nodes[pm]));
    line(g, "if (wid == 0 && h%d && h%d) { /* the lazy shift moved to the max itself */", pm, pos);
    g->indent++;
    scope_push(g);
    line(g, "const fcx_ct_%s mn = fcx_cast_%s(a%d);", MT, MT, pm);
    online_move(g, r, pos, false);
    block_close(g);
}

static void gen_cols(gen *g) {
    const fcp_kernel *k = g->k;
    uint32_t all = k->ndim ? (uint32_t)((1ull << k->ndim) - 1) : 0;
    int last = last_reduced_axis(k);
    uint32_t inner = 0, outer = 0;
    for (int d = 0; d < k->ndim; d++)
        if (!(k->rmask & (1u << d))) {
            if (d > last) inner |= 1u << d;
            else outer |= 1u << d;
        }
    /* Flat index (o * L + e) * C + c when the non-unit axes run outer, reduced, inner. */
    bool contig = true;
    int state = 0;
    for (int d = 0; d < k->ndim; d++) {
        if (k->space[d] == 1) continue;
        int cat = (k->rmask & (1u << d)) ? 1 : (inner & (1u << d)) ? 2 : 0;
        if (cat < state) contig = false;
        state = cat;
    }
    int *level = fcg_calloc(g->ctx, (size_t)(k->nnode + 1) * sizeof *level);
    int *pos = fcg_calloc(g->ctx, (size_t)(k->nred + 1) * sizeof *pos);
    if (!level || !pos) {
        fcg_free(g->ctx, level, (size_t)(k->nnode + 1) * sizeof *level);
        fcg_free(g->ctx, pos, (size_t)(k->nred + 1) * sizeof *pos);
        fail(g, FC_ERR_NOMEM, "codegen: out of memory");
        return;
    }
    if (online_pairs(g) != FC_OK) fail(g, FC_ERR_NOMEM, "codegen: out of memory");
    if (reduction_levels(g, level) > 1)
        fail(g, FC_ERR_UNSUPPORTED, "codegen: a column kernel with dependent reductions that "
                                    "are no online sum (a fusion bug)");
    int n;
    collect_level(g, level, 1, pos, &n);
    g->part_bytes = partial_bytes(g);
    line(g, "const idx_t O = %s;", extent_product(g, outer));
    line(g, "const idx_t C = %s;", extent_product(g, inner));
    line(g, "const idx_t L = %s;", extent_product(g, k->rmask & all));
    line(g, "const idx_t T = (C + FCX_WARP - 1) / FCX_WARP; /* column tiles */");
    line(g, "const int lane = (int)(threadIdx.x %% FCX_WARP), wid = (int)(threadIdx.x / FCX_WARP), "
            "nw = (int)(blockDim.x / FCX_WARP);");
    line(g, "__shared__ bool fcx_last;");
    line(g, "idx_t S, CH; /* pieces of the reduced range and their length: from the shape alone */");
    line(g, "fcx_split((long long)O * T, (long long)L, (long long)O * C * %d, true, &S, &CH);",
         g->part_bytes);
    line(g, "for (idx_t w = blockIdx.x; w < O * T * S; w += gridDim.x) {");
    g->indent++;
    /* Consecutive work items take adjacent tiles of the same rows: blocks running together
     * read whole rows, which DRAM serves best. */
    line(g, "const idx_t sp = w / (O * T), ot = w - sp * (O * T), o = ot / T, tile = ot - o * T;");
    line(g, "const idx_t c = tile * FCX_WARP + lane;");
    line(g, "const bool act = c < C;");
    line(g, "const idx_t row = o * C + c;");
    line(g, "const idx_t eb = sp * CH, ee = eb + CH < L ? eb + CH : L;");
    decode(g, "o", "o", k->ndim, k->space, outer, true, NULL);
    decode(g, "c", "k", k->ndim, k->space, inner, true, NULL);
    ix sidx;
    sidx.nd = k->ndim;
    sidx.identity = contig;
    for (int d = 0; d < k->ndim; d++)
        sidx.e[d] = str(g, "%s%d", k->rmask & (1u << d) ? "r" : (inner & (1u << d)) ? "k" : "o", d);
    for (int j = 0; j < n; j++) acc_init(g, k->nodes[pos[j]], pos[j]);
    line(g, "if (act) {");
    g->indent++;
    line(g, "idx_t e4 = eb + wid;");
    const int batch = col_batch(k);
    line(g, "for (; e4 + %d * nw < ee; e4 += %d * nw) {", batch - 1, batch);
    g->indent++;
    for (int j = 0; j < n; j++) batch_decl(g, k->nodes[pos[j]], pos[j], batch);
    batch_offset(g, level, 1, "0");
    const bool obatch = cols_online_batched(g, pos, n);
    for (int j = 0; j < n && obatch; j++)
        if (online_of(g, k->nodes[pos[j]]) >= 0)
            line(g, "fcx_ct_%s ob%d[%d];", dt(k->nodes[pos[j]]->in[0]->in[0]->in[0]->dtype), pos[j],
                 batch);
    /* An online sum folded an element at a time branches out of line when the shift moves
     * (the rescaling's exp), which keeps the compiler from issuing a later row's load before
     * it: the batch's rows of each full-shape buffer go to L2 first, all in flight together.
     * Batched online sums leave the batch's loads free of branches. */
    bool online = false;
    for (int j = 0; j < n; j++) online = online || online_of(g, k->nodes[pos[j]]) >= 0;
    for (int q = 0; online && !obatch && contig && q < k->nleaf; q++)
        if (k->leaves[q]->ndim == k->ndim &&
            memcmp(k->leaves[q]->shape, k->space, (size_t)k->ndim * 8) == 0) {
            line(g, "#pragma unroll");
            line(g, "for (int u = 0; u < %d; u++) fcx_prefetch_l2((const fcx_t_%s *)p.ptr[%d] + "
                    "(o * L + e4 + u * nw) * C + c);", batch, dt(k->leaves[q]->dtype), q);
        }
    g->batch = batch;
    g->online_batch = obatch;
    line(g, "#pragma unroll");
    line(g, "for (int u = 0; u < %d; u++) {", batch);
    g->indent++;
    scope_push(g);
    cols_element(g, "e4 + u * nw", contig);
    row_element(g, &sidx, level, 1, false);
    scope_pop(g);
    g->indent--;
    line(g, "}");
    g->batch = 0;
    g->online_batch = false;
    for (int j = 0; j < n; j++) welford_batch(g, k->nodes[pos[j]], pos[j], batch);
    for (int j = 0; j < n && obatch; j++)
        if (online_of(g, k->nodes[pos[j]]) >= 0)
            online_batch_terms(g, k->nodes[pos[j]], pos[j], batch, &sidx, contig);
    g->indent--;
    line(g, "}");
    line(g, "for (; e4 < ee; e4 += nw) {");
    g->indent++;
    scope_push(g);
    cols_element(g, "e4", contig);
    row_element(g, &sidx, level, 1, false);
    scope_pop(g);
    g->indent--;
    line(g, "}");
    g->indent--;
    line(g, "}");
    block_reduce_cols(g, pos, n);
    line(g, "if (S > 1) { /* a piece of split columns: the last block combines the partials */");
    g->indent++;
    scratch_pointers(g, pos, n, "O * T", "O * C * S");
    split_arrive(g, pos, n, "wid == 0 && act", "row * S + sp", "ot", "row", "act", "wid", "nw");
    block_reduce_cols(g, pos, n);
    line(g, "if (threadIdx.x == 0) fcx_cnt[ot] = 0; /* the scratch is zero again */");
    g->indent--;
    line(g, "}");
    for (int j = 0; j < n && obatch; j++)
        if (online_of(g, k->nodes[pos[j]]) >= 0) online_settle(g, k->nodes[pos[j]], pos[j]);
    for (int j = 0; j < n; j++)
        if (online_of(g, k->nodes[pos[j]]) >= 0) cols_online_recheck(g, &sidx, pos[j], contig);
    line(g, "if (wid == 0 && act) {");
    g->indent++;
    scope_push(g);
    for (int j = 0; j < n; j++) g->red_var[pos[j]] = acc_finish(g, k->nodes[pos[j]], pos[j], "L");
    reduced_outputs(g, false);
    scope_pop(g);
    g->indent--;
    line(g, "}");
    g->indent--;
    line(g, "}");
    fcg_free(g->ctx, level, (size_t)(k->nnode + 1) * sizeof *level);
    fcg_free(g->ctx, pos, (size_t)(k->nred + 1) * sizeof *pos);
}

/* ---- transposed reads through shared-memory tiles (issue 13) ----------------------------
 * An elementwise kernel that reads a buffer through a permute whose input's fastest-varying
 * axis is a space axis A other than the innermost L (a transpose of the last two axes,
 * batched or not) would read it a stride apart from one thread to the next. Such a kernel
 * gives each block tiles of T x T elements of the (A, L) plane, T = FCX_TILE_CHUNKS V (the
 * other axes and the tiles grid-stride over the blocks), and moves them as vectors of V
 * elements (tile_vec: 16 bytes of the widest type that moves as vectors, at most
 * FCX_TILE_VEC). Read phase: a thread loads its V x V block of each tiled permute's input,
 * V vectors along A (a warp's lanes along A, so the loads coalesce), all of them before any
 * store; it transposes the block in registers and stores it as V vectors along L into the
 * tile in shared memory, swizzled (the prelude's fcx_tile_put) so that neither side
 * conflicts on banks. Write phase, after a barrier: a thread takes vectors of V outputs along
 * L (lanes along L, so stores and every buffer read in output order coalesce), with the
 * tiled permutes' values from a vector of the tile and buffers read in output order loaded
 * as vectors too (g->vec, as gen_ew's vector step); everything else (broadcasts, other
 * views) evaluates element by element as in gen_ew. Which permutes are tiled is a function
 * of the kernel's structure (tile_plan): the permutes of the kernel's buffers whose shape is
 * the space's and whose input's last axis follows the same space axis A, while their tiles
 * fit TILE_SMEM_BYTES. Extents are arguments: a side moves whole vectors where its rows'
 * extent is a multiple of V and its buffers' starts are aligned to the vector (decided once
 * a launch), element by element at the tile's edges and otherwise, so one kernel serves
 * every size. */

#define TILE_SMEM_BYTES (32 * 1024) /* static shared memory of a tiled kernel's tiles */

static bool is_leaf_of(const fcp_kernel *k, const fc_array *a) {
    for (int i = 0; i < k->nleaf; i++)
        if (k->leaves[i] == a) return true;
    return false;
}

/* The space axis that runs along the last axis of permute a's input, when a is a tiled
 * candidate (see above), else -1. */
static int transposed_axis(const fcp_kernel *k, const fc_array *a) {
    if (k->kind != FCP_KERNEL_EW || k->ndim < 2) return -1;
    if (a->op != FCG_OP_PERMUTE || !full_space(k, a) || !is_leaf_of(k, a->in[0])) return -1;
    const int L = k->ndim - 1, last = a->in[0]->ndim - 1;
    if (k->space[L] == 1) return -1;
    for (int i = 0; i < a->ndim; i++)
        if (a->p.a[i] == last) return i != L && k->space[i] != 1 ? i : -1;
    return -1;
}

/* Elements V of a tiled kernel's vectors: as many of the widest of its candidate permutes,
 * outputs and buffers of the space's shape (those a vector reads in output order) as fit
 * 16 bytes, at most FCX_TILE_VEC. */
static int tile_vec(const fcp_kernel *k) {
    size_t widest = 1;
    for (int i = 0; i < k->nnode; i++)
        if (transposed_axis(k, k->nodes[i]) >= 0 &&
            fc_dtype_size((fc_dtype)k->nodes[i]->dtype) > widest)
            widest = fc_dtype_size((fc_dtype)k->nodes[i]->dtype);
    for (int q = 0; q < k->nout; q++)
        if (fc_dtype_size((fc_dtype)k->outs[q]->dtype) > widest)
            widest = fc_dtype_size((fc_dtype)k->outs[q]->dtype);
    for (int i = 0; i < k->nleaf; i++)
        if (full_space(k, k->leaves[i]) && fc_dtype_size((fc_dtype)k->leaves[i]->dtype) > widest)
            widest = fc_dtype_size((fc_dtype)k->leaves[i]->dtype);
    int v = (int)(16 / widest);
    return v > FCX_TILE_VEC ? FCX_TILE_VEC : v < 1 ? 1 : v;
}

/* Bytes of a tile of permute a's values: (FCX_TILE_CHUNKS V)^2 elements. */
static size_t tile_bytes(const fc_array *a, int V) {
    size_t edge = (size_t)FCX_TILE_CHUNKS * (size_t)V;
    return edge * edge * fc_dtype_size((fc_dtype)a->dtype);
}

/* The tiled axis A of elementwise kernel k, or -1 when it is not tiled; tile_of (k->nnode
 * entries, or NULL) gets each node's tile number or -1, *smem the tiles' bytes. */
static int tile_plan(const fcp_kernel *k, int *tile_of, size_t *smem) {
    int axis = -1, n = 0, V = tile_vec(k);
    size_t used = 0;
    for (int i = 0; i < k->nnode; i++) {
        if (tile_of) tile_of[i] = -1;
        int A = transposed_axis(k, k->nodes[i]);
        size_t b = A >= 0 ? tile_bytes(k->nodes[i], V) : 0;
        if (A < 0 || (axis >= 0 && A != axis) || used + b > TILE_SMEM_BYTES) continue;
        axis = A;
        used += b;
        if (tile_of) tile_of[i] = n;
        n++;
    }
    if (smem) *smem = used;
    return axis;
}

/* Tiles of kernel k over tiled axis A: T x T of (A, last), times the other axes' extents. */
static long long tile_count(const fcp_kernel *k, int A) {
    const int L = k->ndim - 1;
    const long long T = (long long)FCX_TILE_CHUNKS * tile_vec(k);
    long long n = ((k->space[A] + T - 1) / T) * ((k->space[L] + T - 1) / T);
    for (int d = 0; d < k->ndim; d++)
        if (d != A && d != L) n *= k->space[d];
    return n;
}

/* Permute a's value at the write phase's element u: from its tile's vector. */
static int tile_read(gen *g, const fc_array *a) {
    int v = new_var(g);
    line(g, "const fcx_ct_%s v%d = fcx_load_%s(&tw%d.v[u]);", dt(a->dtype), v, dt(a->dtype),
         g->tile_of[pos_of(g, a)]);
    return v;
}

/* Declares the coordinates c<d> of the axes other than A and L (the tile's batch). */
static void tile_batch_coords(gen *g, int A) {
    const fcp_kernel *k = g->k;
    for (int d = 0; d < k->ndim; d++)
        if (d != A && d != k->ndim - 1)
            line(g, "const idx_t c%d = %s;", d, k->space[d] == 1 ? "0" : str(g, "o%d", d));
}

/* The read phase: each thread's V x V blocks of every tiled permute's input into registers
 * (loads only), then transposed into the tiles. */
static void tile_read_phase(gen *g, int A, int V) {
    const fcp_kernel *k = g->k;
    const int L = k->ndim - 1, C = FCX_TILE_CHUNKS;
    const char *EA = iarg(g, FCX_SLOT_SPACE_EXTENT, NULL, A);
    const char *EL = iarg(g, FCX_SLOT_SPACE_EXTENT, NULL, L);
    const char *steps = str(g, "(%d + FCX_TILE_THREADS - 1) / FCX_TILE_THREADS", C * C);
    for (int i = 0; i < k->nnode; i++)
        if (g->tile_of[i] >= 0)
            line(g, "fcx_vec<fcx_t_%s, %d> tv%d[%s][%d];", dt(k->nodes[i]->dtype), V,
                 g->tile_of[i], steps, V);
    line(g, "#pragma unroll");
    line(g, "for (int s = 0; s < %s; s++) {", steps);
    g->indent++;
    line(g, "const int b = (int)threadIdx.x + s * FCX_TILE_THREADS; /* the thread's block */");
    line(g, "const int ab = b %% %d, lb = b / %d; /* its vector along A, its columns along L */",
         C, C);
    tile_batch_coords(g, A);
    line(g, "const idx_t c%d = ta + (idx_t)(ab * %d);", A, V);
    line(g, "#pragma unroll");
    line(g, "for (int j = 0; j < %d; j++) {", V);
    g->indent++;
    line(g, "const idx_t c%d = tl + (idx_t)(lb * %d + j);", L, V);
    line(g, "const bool in = b < %d && c%d < %s && c%d < %s;", C * C, A, EA, L, EL);
    scope_push(g);
    for (int i = 0; i < k->nnode; i++) {
        if (g->tile_of[i] < 0) continue;
        const fc_array *a = k->nodes[i], *x = a->in[0];
        ix ci;
        ci.nd = x->ndim;
        ci.identity = false;
        for (int d = 0; d < a->ndim; d++) ci.e[a->p.a[d]] = str(g, "c%d", d);
        const char *off = linearize(g, x, &ci), *T = dt(x->dtype);
        int n = g->tile_of[i];
        line(g, "tv%d[s][j] = in ? fcx_tile_load<fcx_vec<fcx_t_%s, %d>, %d>((const fcx_t_%s *)"
                "p.ptr[%d] + %s, fcx_va%d, (long long)(%s - c%d)) : fcx_vec<fcx_t_%s, %d>();",
             n, T, V, V, T, leaf_index(g, x), off, n, EA, A, T, V);
    }
    scope_pop(g);
    g->indent--;
    line(g, "}");
    g->indent--;
    line(g, "}");
    line(g, "#pragma unroll");
    line(g, "for (int s = 0; s < %s; s++) {", steps);
    g->indent++;
    line(g, "const int b = (int)threadIdx.x + s * FCX_TILE_THREADS;");
    line(g, "if (b < %d) {", C * C);
    for (int i = 0; i < k->nnode; i++)
        if (g->tile_of[i] >= 0)
            line(g, "    fcx_tile_put<%d, %d>(fcx_tile%d, b %% %d, b / %d, tv%d[s]);", V, C,
                 g->tile_of[i], C, C, g->tile_of[i]);
    line(g, "}");
    g->indent--;
    line(g, "}");
}

/* The write phase: vectors of V outputs along L, a tile row's vector of each tiled permute,
 * buffers read in output order as vectors (which ones the body says: *vl gets the condition
 * that their accesses and the stores move whole vectors). */
static void tile_write_phase(gen *g, int A, int V, const char **vl) {
    const fcp_kernel *k = g->k;
    const int L = k->ndim - 1, C = FCX_TILE_CHUNKS, T = C * V;
    const char *EA = iarg(g, FCX_SLOT_SPACE_EXTENT, NULL, A);
    const char *EL = iarg(g, FCX_SLOT_SPACE_EXTENT, NULL, L);
    line(g, "#pragma unroll");
    line(g, "for (int s = 0; s < (%d + FCX_TILE_THREADS - 1) / FCX_TILE_THREADS; s++) {", T * C);
    g->indent++;
    line(g, "const int w = (int)threadIdx.x + s * FCX_TILE_THREADS;");
    line(g, "const int wr = w / %d, wc = w %% %d; /* the tile's row (along A), its vector */",
         C, C);
    tile_batch_coords(g, A);
    line(g, "const idx_t c%d = ta + (idx_t)wr, tile_l0 = tl + (idx_t)(wc * %d);", A, V);
    line(g, "if (w < %d && c%d < %s && tile_l0 < %s) {", T * C, A, EA, EL);
    g->indent++;
    scope_push(g);
    line(g, "const long long nl = (long long)(%s - tile_l0); /* of the vector's elements inside */",
         EL);
    const char *flat = "c0";
    for (int d = 1; d < k->ndim; d++)
        if (k->space[d] != 1)
            flat = bind_index(g, str(g, "(%s) * %s + %s", flat,
                                     iarg(g, FCX_SLOT_SPACE_EXTENT, NULL, d),
                                     d == L ? "tile_l0" : str(g, "c%d", d)));
    line(g, "const idx_t i0 = %s;", flat);
    for (int i = 0; i < k->nnode; i++)
        if (g->tile_of[i] >= 0)
            line(g, "const fcx_vec<fcx_t_%s, %d> tw%d = fcx_tile_get<%d, %d>(fcx_tile%d, wr, wc);",
                 dt(k->nodes[i]->dtype), V, g->tile_of[i], V, C, g->tile_of[i]);
    /* The element loop first, to learn which buffers it reads as vectors. */
    fcg_sb around = g->body;
    memset(&g->body, 0, sizeof g->body);
    g->body.ctx = g->ctx;
    memset(g->vec_used, 0, (size_t)(k->nleaf + 1) * sizeof *g->vec_used);
    for (int q = 0; q < k->nout; q++)
        line(g, "fcx_vec<fcx_t_%s, %d> wv%d;", dt(k->outs[q]->dtype), V, q);
    line(g, "#pragma unroll");
    line(g, "for (int u = 0; u < %d; u++) {", V);
    g->indent++;
    /* an element outside the space (the tile's edge) is evaluated at the vector's first
     * element, so that nothing reads outside a buffer; it is not stored */
    line(g, "const int uu = u < nl ? u : 0;");
    line(g, "const idx_t c%d = tile_l0 + (idx_t)uu, i = i0 + (idx_t)uu;", L);
    scope_push(g);
    ix idx;
    identity_index(g, &idx, k->ndim, "c");
    g->vec = V;
    g->tile_write = true;
    for (int q = 0; q < k->nout; q++) {
        int v = eval(g, k->outs[q], &idx);
        line(g, "fcx_store_%s(&wv%d.v[u], v%d);", dt(k->outs[q]->dtype), q, v);
    }
    g->tile_write = false;
    g->vec = 0;
    scope_pop(g);
    g->indent--;
    line(g, "}");
    fcg_sb inner = g->body;
    g->body = around;
    const char *cond = str(g, "%s %% %d == 0", EL, V);
    for (int li = 0; li < k->nleaf; li++) {
        if (!g->vec_used[li]) continue;
        const char *D = dt(k->leaves[li]->dtype);
        line(g, "const fcx_vec<fcx_t_%s, %d> l%d = fcx_tile_load<fcx_vec<fcx_t_%s, %d>, %d>("
                "(const fcx_t_%s *)p.ptr[%d] + i0, fcx_vl, nl);", D, V, li, D, V, V, D, li);
        cond = str(g, "%s && fcx_aligned(p.ptr[%d], %d)", cond, li,
                   V * (int)fc_dtype_size((fc_dtype)k->leaves[li]->dtype));
    }
    if (inner.s) fcg_sb_puts(&g->body, inner.s);
    if (inner.failed) g->body.failed = true;
    fcg_sb_free(&inner);
    for (int q = 0; q < k->nout; q++) {
        line(g, "fcx_tile_store<%d>((fcx_t_%s *)p.ptr[%d] + i0, wv%d, fcx_vl, nl);", V,
             dt(k->outs[q]->dtype), k->nleaf + q, q);
        cond = str(g, "%s && fcx_aligned(p.ptr[%d], %d)", cond, k->nleaf + q,
                   V * (int)fc_dtype_size((fc_dtype)k->outs[q]->dtype));
    }
    *vl = cond;
    scope_pop(g);
    g->indent--;
    line(g, "}");
    g->indent--;
    line(g, "}");
}

static void gen_ew_tile(gen *g, int A) {
    const fcp_kernel *k = g->k;
    const int L = k->ndim - 1, V = tile_vec(k), C = FCX_TILE_CHUNKS, T = C * V;
    const char *EA = iarg(g, FCX_SLOT_SPACE_EXTENT, NULL, A);
    const char *EL = iarg(g, FCX_SLOT_SPACE_EXTENT, NULL, L);
    for (int i = 0; i < k->nnode; i++)
        if (g->tile_of[i] >= 0)
            line(g, "__shared__ fcx_vec<fcx_t_%s, %d> fcx_tile%d[%d]; /* %d x %d, swizzled */",
                 dt(k->nodes[i]->dtype), V, g->tile_of[i], T * C, T, T);
    line(g, "const idx_t nta = (%s + %d) / %d, ntl = (%s + %d) / %d;", EA, T - 1, T, EL, T - 1, T);
    const char *count = "nta * ntl";
    int outermost = -1;
    for (int d = 0; d < k->ndim; d++)
        if (d != A && d != L && k->space[d] != 1) {
            count = str(g, "%s * %s", count, iarg(g, FCX_SLOT_SPACE_EXTENT, NULL, d));
            if (outermost < 0) outermost = d;
        }
    line(g, "const idx_t ntiles = %s;", count);
    /* whole vectors along A where the source's rows are a multiple of V and its start aligned */
    for (int i = 0; i < k->nnode; i++)
        if (g->tile_of[i] >= 0) {
            const fc_array *x = k->nodes[i]->in[0];
            line(g, "const bool fcx_va%d = %s %% %d == 0 && fcx_aligned(p.ptr[%d], %d);",
                 g->tile_of[i], EA, V, leaf_index(g, x),
                 V * (int)fc_dtype_size((fc_dtype)x->dtype));
        }
    /* The tile loop first: the write phase says what its whole vectors need. */
    fcg_sb head = g->body;
    memset(&g->body, 0, sizeof g->body);
    g->body.ctx = g->ctx;
    /* A block takes a run of consecutive tiles (L fastest, then A, then the batch), so that
     * the next tile's corner is a carry, not two divisions. */
    line(g, "const idx_t per = (ntiles + (idx_t)gridDim.x - 1) / (idx_t)gridDim.x;");
    line(g, "idx_t t = (idx_t)blockIdx.x * per;");
    line(g, "const idx_t tend = t + per < ntiles ? t + per : ntiles;");
    line(g, "idx_t ob = t / (nta * ntl), ta = t %% (nta * ntl) / ntl * %d, tl = t %% ntl * %d;",
         T, T);
    line(g, "for (; t < tend; t++) {");
    g->indent++;
    if (outermost >= 0) {
        line(g, "idx_t tr = ob;");
        for (int d = k->ndim - 1; d >= 0; d--) {
            if (d == A || d == L || k->space[d] == 1) continue;
            const char *e = iarg(g, FCX_SLOT_SPACE_EXTENT, NULL, d);
            if (d == outermost) line(g, "const idx_t o%d = tr;", d);
            else line(g, "const idx_t o%d = tr %% %s; tr /= %s;", d, e, e);
        }
    }
    line(g, "__syncthreads(); /* the last tile's reads are done */");
    tile_read_phase(g, A, V);
    line(g, "__syncthreads();");
    const char *vl = "false";
    tile_write_phase(g, A, V, &vl);
    line(g, "tl += %d;", T);
    line(g, "if (tl >= %s) {", EL);
    line(g, "    tl = 0;");
    line(g, "    ta += %d;", T);
    line(g, "    if (ta >= %s) ta = 0, ob++;", EA);
    line(g, "}");
    g->indent--;
    line(g, "}");
    fcg_sb loop = g->body;
    g->body = head;
    line(g, "const bool fcx_vl = %s;", vl);
    const char *whole = "fcx_vl";
    for (int i = 0; i < k->nnode; i++)
        if (g->tile_of[i] >= 0) whole = str(g, "%s && fcx_va%d", whole, g->tile_of[i]);
    line(g, "FCX_TILE_VECTORS(%s);", whole);
    if (loop.s) fcg_sb_puts(&g->body, loop.s);
    if (loop.failed) g->body.failed = true;
    fcg_sb_free(&loop);
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

/* ---- launch geometry ---------------------------------------------------------------------- */

const fcx_tuning fcx_default_tuning = {32, 1024, 8192, 1024, 64, 1048576, 4096, 64};

/* Static plus dynamic shared memory a block may use without the kernel opting in to more. */
#define SMEM_DEFAULT_LIMIT 49152

void fcx_split_plan(const fcx_tuning *t, long long items, long long len, long long part_bytes,
                    bool cols, long long *S, long long *CH) {
    /* The device prelude's fcx_split, step for step. */
    long long minc = cols ? t->split_min_chunk / t->warp : t->split_min_chunk;
    if (minc < 1) minc = 1;
    long long s = 1;
    if (items > 0 && items < t->split_target && len / minc > 1) {
        s = len / minc;
        long long want = (t->split_target + items - 1) / items;
        if (s > want) s = want;
        if (s > t->split_max) s = t->split_max;
        long long cap = t->scratch_cap / (part_bytes > 0 ? part_bytes : 1);
        if (s > cap) s = cap;
        if (s < 1) s = 1;
    }
    long long ch = (len + s - 1) / s;
    ch = (ch + t->split_align - 1) / t->split_align * t->split_align;
    if (ch < 1) ch = 1;
    s = len > 0 ? (len + ch - 1) / ch : 1;
    *S = s;
    *CH = ch;
}

static long long space_product(const fcp_kernel *k, uint32_t mask) {
    long long n = 1;
    for (int d = 0; d < k->ndim; d++)
        if (mask & (1u << d)) n *= k->space[d];
    return n;
}

static size_t align16(size_t n) { return (n + 15) / 16 * 16; }

/* Bytes of the scratch arrays of npart partial results (one array per accumulator field). */
static size_t fields_scratch(const fcx_kernel_src *src, long long npart) {
    size_t b = 0;
    for (int c = 0; c < FCX_NSIZES; c++) b += (size_t)src->fields[c] * align16((size_t)npart << c);
    return b;
}

static long long part_size(const fcx_kernel_src *src) {
    long long b = 0;
    for (int c = 0; c < FCX_NSIZES; c++) b += (long long)src->fields[c] << c;
    return b;
}

size_t fcx_dynamic_smem(const fcp_kernel *k, const fcx_kernel_src *src) {
    if (src->strategy == FCX_STRATEGY_SCATTER) {
        const fc_array *r = k->outs[0];
        size_t nout = fcg_node_numel(r), b = nout * fc_dtype_size((fc_dtype)r->dtype);
        size_t nupd = fcg_numel(k->ndim, k->space);
        if (!scatter_on_chip(r) || nout == 0 || b > SCATTER_ON_CHIP_BYTES ||
            nupd / SCATTER_ON_CHIP_RATIO < nout)
            return 0;
        return align16(b);
    }
    if (k->kind != FCP_KERNEL_ROW || src->strategy != FCX_STRATEGY_BLOCK_ROW) return 0;
    uint32_t all = k->ndim ? (uint32_t)((1ull << k->ndim) - 1) : 0;
    size_t L = (size_t)space_product(k, k->rmask & all), b = 0;
    for (int c = 0; c < FCX_NSIZES; c++) b += (size_t)src->cached[c] * align16(L << c);
    /* Too big for a launch without opting in: the kernel then reads the rows from global
     * memory in every phase (it checks the size it got). Fusion keeps rows smaller. */
    if (b == 0 || b + src->static_smem > SMEM_DEFAULT_LIMIT) return 0;
    return b;
}

#ifndef FCX_SCAN_MIN_BLOCKS
#define FCX_SCAN_MIN_BLOCKS 5
#endif
static bool kernel_gathers(const fcp_kernel *k) {
    for (int i = 0; i < k->nnode; i++)
        if (fcg_ops[k->nodes[i]->op].kind == FCG_KIND_GATHER) return true;
    return false;
}

void fcx_launch_config_tuned(const fcp_kernel *k, const fcx_kernel_src *src, int sm_count,
                             int blocks_per_sm, const fcx_tuning *t, fcx_launch *out) {
    memset(out, 0, sizeof *out);
    /* A kernel whose every output is empty has nothing to write: grid 0, no launch. (A row
     * kernel over rows of length 0 would otherwise still run its per-row epilogue, which
     * reads and writes the empty arrays at index 0.) */
    bool writes = false;
    for (int i = 0; i < k->nout; i++) writes |= fcg_node_numel(k->outs[i]) > 0;
    if (!writes) {
        out->block = (unsigned)src->block;
        return;
    }
    long long sms = sm_count > 0 ? sm_count : 1, per = blocks_per_sm > 0 ? blocks_per_sm : 1;
    uint32_t all = k->ndim ? (uint32_t)((1ull << k->ndim) - 1) : 0;
    long long items, S = 1, CH = 0, resident = sms * per;
    out->block = (unsigned)src->block;
    const fc_array *scan = k->kind == FCP_KERNEL_SCAN ? k->outs[0] : NULL;
    if (src->strategy == FCX_STRATEGY_SCAN_TILES && k->space[scan->p.axis] >= t->scan_min_row) {
        /* Blocks take tiles in order from a ticket counter, so a grid of any size works. */
        const fc_array *r = scan;
        long long L = k->space[r->p.axis];
        long long O = space_product(k, (uint32_t)((1ull << r->p.axis) - 1) & all);
        size_t acc = (size_t)ct_size(fcg_reduce_acc_dtype(r));
        long long tile = fcx_scan_tile(t, acc), ntiles = O * ((L + tile - 1) / tile);
        out->scratch_bytes = fcx_scan_scratch_bytes(acc, ntiles);
        long long most = sms * per; /* persistent blocks (16 resident grids ran 5% slower) */
        out->grid = (unsigned)(ntiles < most ? ntiles : most);
        return;
    }
    if (src->strategy == FCX_STRATEGY_EW_TILE) {
        /* A block a tile (a batched transpose of 2^26 f32: 91% of the copy floor with a grid
         * that filled the device once and runs of tiles a block, 100.5% with a block a tile;
         * H200, session 18); past 2^31 - 1 tiles each block takes an equal run of
         * consecutive ones. The kernel is written for blocks of exactly FCX_BLOCK threads. */
        long long tiles = tile_count(k, tile_plan(k, NULL, NULL));
        out->grid = (unsigned)(tiles < 0x7fffffffLL ? tiles : 0x7fffffffLL);
        return;
    }
    if (src->strategy == FCX_STRATEGY_EW && src->ew_thread_steps > 0 && !kernel_gathers(k)) {
        /* ew_grid_policy's grid: ew_thread_steps steps of src->vec elements a thread */
        size_t n = fcg_numel(k->ndim, k->space);
        size_t block_elems = (size_t)src->block * (size_t)src->vec * (size_t)src->ew_thread_steps;
        long long blocks = (long long)((n + block_elems - 1) / block_elems);
        out->grid = (unsigned)(blocks < 0x7fffffffLL ? blocks : 0x7fffffffLL);
        return;
    }
    if (src->strategy == FCX_STRATEGY_EW || src->strategy == FCX_STRATEGY_SCATTER || scan) {
        /* Enough blocks to fill the GPU at the kernel's occupancy; the kernels stride (a
         * scan's threads over its lines). */
        size_t n = fcg_numel(k->ndim, k->space);
        if (scan) n /= (size_t)k->space[scan->p.axis];
        items = (long long)((n + (size_t)src->block - 1) / (size_t)src->block);
        out->smem_bytes = fcx_dynamic_smem(k, src);
    } else if (src->strategy == FCX_STRATEGY_BLOCK_COL) {
        int last = -1;
        for (int d = 0; d < k->ndim; d++)
            if ((k->rmask & (1u << d)) && k->space[d] != 1) last = d;
        uint32_t inner = 0;
        for (int d = last + 1; d < k->ndim; d++)
            if (!(k->rmask & (1u << d))) inner |= 1u << d;
        long long O = space_product(k, ~k->rmask & ~inner & all), C = space_product(k, inner);
        long long L = space_product(k, k->rmask & all), T = (C + t->warp - 1) / t->warp;
        fcx_split_plan(t, O * T, L, O * C * part_size(src), true, &S, &CH);
        items = O * T * S;
        if (S > 1) out->scratch_bytes = align16((size_t)(O * T) * 4) + fields_scratch(src, O * C * S);
    } else {
        long long M = space_product(k, ~k->rmask & all), L = space_product(k, k->rmask & all);
        if (src->splits) fcx_split_plan(t, M, L, M * part_size(src), false, &S, &CH);
        long long len = S > 1 ? CH : L;
        /* About eight 16-byte steps per thread, in 32 .. block threads: smaller blocks put
         * more rows in flight per multiprocessor, and each row's block reduction is shared by
         * more elements (argmax over rows of 4096 f32 went from 89.6% of the floor at four
         * steps to 100.3% at eight, on an H200; sums of squares stayed at 101-103%). */
        long long steps = 8;
        long long want = (len + steps * src->vec - 1) / (steps * src->vec);
        /* Reduce kernels (statistics, no output phase) at most 256 threads a block: at the
         * same occupancy (56 registers: two blocks of 512 or four of 256 a multiprocessor),
         * batch-norm statistics went from 79.3% of the floor to 88.9% and mean and std of rows
         * of 65536 from 88.4% to 96.6% (H200, session 18); a layer norm's long rows, which
         * stream the row again to write it, lost 5% at 256. */
        unsigned most = k->kind == FCP_KERNEL_REDUCE && src->block > 256 ? 256u
                                                                         : (unsigned)src->block;
        unsigned b = 32;
        while ((long long)b < want && b < most) b *= 2;
        out->block = b;
        /* blocks_per_sm counts blocks of src->block threads: smaller ones fit more. */
        resident = sms * per * (src->block / (int)b);
        items = M * S;
        if (S > 1) out->scratch_bytes = align16((size_t)M * 4) + fields_scratch(src, M * S);
        out->smem_bytes = fcx_dynamic_smem(k, src);
    }
    /* Elementwise kernels: a grid that fills the device once, striding over the rest. Reduce
     * and row kernels: a block per work item (up to 16 resident grids' worth), so the hardware
     * hands out rows as blocks finish and no partial last wave of long-lived blocks trails. */
    if (src->strategy != FCX_STRATEGY_EW && src->strategy != FCX_STRATEGY_SCATTER && !scan)
        resident *= 16;
    else if (src->strategy == FCX_STRATEGY_EW && kernel_gathers(k))
        resident = items; /* a thread an element: the scheduler keeps more gathers in flight */
    if (resident > 0x7fffffffLL) resident = 0x7fffffffLL; /* the grid-stride covers the rest */
    out->grid = (unsigned)(items < resident ? items : resident);
}

void fcx_launch_config(const fcp_kernel *k, const fcx_kernel_src *src, int sm_count,
                       int blocks_per_sm, fcx_launch *out) {
    fcx_launch_config_tuned(k, src, sm_count, blocks_per_sm, &fcx_default_tuning, out);
}

void fcx_kernel_src_free(fc_ctx *ctx, fcx_kernel_src *s) {
    fcg_strfree(ctx, s->src);
    fcg_free(ctx, s->islots, (size_t)s->nint * sizeof *s->islots);
    fcg_free(ctx, s->fslots, (size_t)s->nflt * sizeof *s->fslots);
    memset(s, 0, sizeof *s);
}

/* The generator's per-position arrays (NULL ones are fine). */
static void gen_free_arrays(gen *g) {
    const fcp_kernel *k = g->k;
    size_t nl = (size_t)k->nleaf + 1, npos = (size_t)k->nnode + (size_t)k->nleaf + 1;
    fcg_free(g->ctx, g->red_var, (size_t)(k->nnode + 1) * sizeof *g->red_var);
    fcg_free(g->ctx, g->span, (size_t)(k->nnode + 1) * sizeof *g->span);
    fcg_free(g->ctx, g->vec_used, nl * sizeof *g->vec_used);
    fcg_free(g->ctx, g->rvec_used, nl * sizeof *g->rvec_used);
    fcg_free(g->ctx, g->flat_used, nl * sizeof *g->flat_used);
    fcg_free(g->ctx, g->phases, npos * sizeof *g->phases);
    fcg_free(g->ctx, g->fill, npos * sizeof *g->fill);
    fcg_free(g->ctx, g->slot, npos * sizeof *g->slot);
    fcg_free(g->ctx, g->vfill, npos * sizeof *g->vfill);
    fcg_free(g->ctx, g->vread, npos * sizeof *g->vread);
    fcg_free(g->ctx, g->pend, npos * sizeof *g->pend);
    fcg_free(g->ctx, g->pend_var, npos * sizeof *g->pend_var);
    fcg_free(g->ctx, g->online, (size_t)(k->nnode + 1) * sizeof *g->online);
    fcg_free(g->ctx, g->tile_of, (size_t)(k->nnode + 1) * sizeof *g->tile_of);
    g->online = NULL;
    g->tile_of = NULL;
    g->red_var = NULL;
    g->span = NULL;
    g->vec_used = g->rvec_used = g->flat_used = g->vfill = g->vread = NULL;
    g->phases = NULL;
    g->fill = g->slot = g->pend = g->pend_var = NULL;
    fcg_nodemap_free(&g->pos);
}

/* The prelude in front of the kernel text `after`: a line "#define FCX_PART_<NAME> 0" for
 * each optional part that neither it nor the fast-math tier's text (in front of the prelude,
 * when on) needs, then that text and the prelude. A pure function of the kernel's text, so
 * the source stays canonical. */
static void put_prelude(fcg_sb *sb, bool fast_math, const char *after, size_t len) {
    unsigned needed = fcx_prelude_parts_needed(after, len);
    if (fast_math) needed |= fcx_prelude_parts_needed(fcx_fast_math_source, fcx_fast_math_size);
    char defines[1024];
    if (fcx_prelude_parts_defines(needed, defines, sizeof defines) >= sizeof defines)
        sb->failed = true; /* more parts than room: a fusec bug, reported as out of memory */
    else
        fcg_sb_puts(sb, defines);
    if (fast_math) fcg_sb_puts(sb, fcx_fast_math_source);
    fcg_sb_puts(sb, fcx_prelude_source);
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
    g.scan_var = -1;
    g.body.ctx = ctx;
    g.indent = 1;
    /* Positions live in a map of the generator's own: the plan's nodes are shared, and their
     * scratch fields belong to the graph's walks. */
    fc_status pst = fcg_nodemap_init(ctx, &g.pos, (size_t)k->nnode + (size_t)k->nleaf);
    for (int i = 0; i < k->nnode && pst == FC_OK; i++)
        pst = fcg_nodemap_put(&g.pos, k->nodes[i], i);
    for (int i = 0; i < k->nleaf && pst == FC_OK; i++)
        pst = fcg_nodemap_put(&g.pos, k->leaves[i], k->nnode + i);
    if (pst != FC_OK) {
        fcg_nodemap_free(&g.pos);
        return fcg_error(ctx, FC_ERR_NOMEM, "codegen: out of memory");
    }
    size_t nl = (size_t)k->nleaf + 1, npos = (size_t)k->nnode + (size_t)k->nleaf + 1;
    g.red_var = fcg_malloc(ctx, (size_t)(k->nnode + 1) * sizeof *g.red_var);
    g.span = fcg_calloc(ctx, (size_t)(k->nnode + 1) * sizeof *g.span);
    g.vec_used = fcg_calloc(ctx, nl * sizeof *g.vec_used);
    g.rvec_used = fcg_calloc(ctx, nl * sizeof *g.rvec_used);
    g.flat_used = fcg_calloc(ctx, nl * sizeof *g.flat_used);
    g.phases = fcg_calloc(ctx, npos * sizeof *g.phases);
    g.fill = fcg_calloc(ctx, npos * sizeof *g.fill);
    g.slot = fcg_calloc(ctx, npos * sizeof *g.slot);
    g.vfill = fcg_calloc(ctx, npos * sizeof *g.vfill);
    g.vread = fcg_calloc(ctx, npos * sizeof *g.vread);
    g.pend = fcg_calloc(ctx, npos * sizeof *g.pend);
    g.pend_var = fcg_calloc(ctx, npos * sizeof *g.pend_var);
    if (!g.red_var || !g.span || !g.vec_used || !g.rvec_used || !g.flat_used || !g.phases ||
        !g.fill || !g.slot || !g.vfill || !g.vread || !g.pend || !g.pend_var) {
        gen_free_arrays(&g);
        return fcg_error(ctx, FC_ERR_NOMEM, "codegen: out of memory");
    }
    for (int i = 0; i <= k->nnode; i++) g.red_var[i] = -1;
    bool idx64 = needs_idx64(k);
    g.idx64 = idx64;
    fcx_strategy strategy = strategy_of(k);
    int tile_axis = -1;
    size_t tile_smem = 0;
    if (strategy == FCX_STRATEGY_EW && tile_plan(k, NULL, NULL) >= 0) {
        g.tile_of = fcg_malloc(ctx, (size_t)(k->nnode + 1) * sizeof *g.tile_of);
        if (!g.tile_of) {
            gen_free_arrays(&g);
            return fcg_error(ctx, FC_ERR_NOMEM, "codegen: out of memory");
        }
        tile_axis = tile_plan(k, g.tile_of, &tile_smem);
        strategy = FCX_STRATEGY_EW_TILE;
    }
    int block = strategy == FCX_STRATEGY_EW          ? FCX_BLOCK
                : strategy == FCX_STRATEGY_BLOCK_COL ? FCX_COL_BLOCK
                                                     : FCX_ROW_BLOCK_MAX;

    if (strategy == FCX_STRATEGY_EW || strategy == FCX_STRATEGY_SCAN_LINES ||
        strategy == FCX_STRATEGY_SCATTER || strategy == FCX_STRATEGY_EW_TILE)
        block = FCX_BLOCK;
    if (strategy == FCX_STRATEGY_SCAN_TILES) block = FCX_SCAN_BLOCK;
    if (strategy == FCX_STRATEGY_EW) gen_ew(&g);
    else if (strategy == FCX_STRATEGY_BLOCK_COL) gen_cols(&g);
    else if (strategy == FCX_STRATEGY_SCAN_TILES) gen_scan_tiles(&g);
    else if (strategy == FCX_STRATEGY_SCAN_LINES) gen_scan_lines(&g);
    else if (strategy == FCX_STRATEGY_SCATTER) gen_scatter(&g);
    else if (strategy == FCX_STRATEGY_EW_TILE) gen_ew_tile(&g, tile_axis);
    else gen_rows(&g);
    /* The exchange buffer of the block reductions (sized by the largest group). */
    int xlanes = strategy == FCX_STRATEGY_BLOCK_COL ? FCX_COL_BLOCK : 32;
    size_t static_smem = (size_t)g.xch_lane_bytes * (size_t)xlanes +
                         (strategy != FCX_STRATEGY_EW && k->kind == FCP_KERNEL_REDUCE ? 16 : 0) +
                         tile_smem;
    /* Reduce kernels may split long reductions between blocks: their last pointer is the
     * scratch buffer (NULL when a launch does not split). */
    bool splits = strategy != FCX_STRATEGY_EW && strategy != FCX_STRATEGY_SCATTER &&
                  k->kind == FCP_KERNEL_REDUCE;
    if (strategy == FCX_STRATEGY_SCAN_TILES) { /* s_val, s_tot, s_exc, s_prefix, s_next, s_last */
        size_t acc = (size_t)ct_size(acc_mean_dtype(k->outs[0]));
        size_t tile = (size_t)fcx_scan_tile(&fcx_default_tuning, acc);
        static_smem = (tile + tile / 32 + 17) * acc + 16;
    }
    int nptr = k->nleaf + k->nout + (splits || strategy == FCX_STRATEGY_SCAN_TILES ? 1 : 0);

    fcg_sb src = {ctx, NULL, 0, 0, false};
    if (g.err == FC_OK) {
        static const char *const how[] = {
            "grid-stride over the elements, 16-byte accesses where contiguous",
            "a block per row (or piece of a long row), warp-shuffle block reductions",
            "a warp's lanes over adjacent columns, its warps over the rows",
            "a block per tile of a row, tiles chained by decoupled look-back",
            "a thread per line along the scanned axis, in order",
            "grid-stride over the updates, an atomic read-modify-write each",
            "tiles of V x V blocks, vectors both ways, transposed through shared memory"};
        fcg_sb_printf(&src, "// fusec kernel: %s over rank %d", fcp_kernel_kind_names[k->kind], k->ndim);
        if (k->rmask)
            fcg_sb_printf(&src, k->kind == FCP_KERNEL_SCAN ? ", scanning axes mask 0x%x"
                                                           : ", reducing axes mask 0x%x",
                          k->rmask);
        fcg_sb_printf(&src, ", %s index\n// strategy: %s%s\n// fused ops:", idx64 ? "64-bit" : "32-bit",
                      how[strategy],
                      k->kind == FCP_KERNEL_ROW && k->long_rows
                          ? "; long rows: each phase streams the row from memory" : "");
        for (int i = 0; i < k->nnode; i++) fcg_sb_printf(&src, " %s", fcg_ops[k->nodes[i]->op].pyname);
        fcg_sb_puts(&src, "\n");
        if (strategy == FCX_STRATEGY_EW_TILE) {
            int V = tile_vec(k);
            fcg_sb_printf(&src, "// tiles: %d x %d elements, %d x %d blocks of %d x %d a thread's, "
                                "vectors of %d\n", FCX_TILE_CHUNKS * V, FCX_TILE_CHUNKS * V,
                          FCX_TILE_CHUNKS, FCX_TILE_CHUNKS, V, V, V);
        }
        if (g.ntap && g.tap_strips)
            fcg_sb_printf(&src, "// stencil: %d shifted slices of one pad value in strips of "
                                "32 lanes x %d columns, when their steps along the last axis "
                                "are 1\n", g.ntap, STRIP_OUTPUTS_PER_THREAD);
        else if (g.ntap)
            fcg_sb_printf(&src, "// stencil: %d shifted slices of one %s value through "
                                "shared-memory tiles of %dx%d and their halo, when their steps "
                                "are 1 and their starts within %d\n",
                          g.ntap, fcg_ops[g.tap_src->op].pyname, EWT_TH, EWT_TW, EWT_HALO);
        fcg_sb_printf(&src, "// codegen version %d\n", FCX_CODEGEN_VERSION);
        /* The fast-math tier's overloads go in front of the prelude, which they take over
         * from; the exact tier's source stays as it was before the tier existed. Without the
         * prelude, whoever puts it in puts them in front of it too. */
        if (ctx->fast_math)
            fcg_sb_puts(&src, "// math tier: fast (FMA contraction, approximate f32 math, "
                              "|z|^2 compares; include/fusec.h)\n");
        /* What follows the prelude is written first, to learn which of the prelude's
         * optional parts it needs; the others are left to the preprocessor to skip. */
        fcg_sb whole = src;
        src = (fcg_sb){ctx, NULL, 0, 0, false};
        if (!with_prelude) fcg_sb_printf(&src, "namespace %s {\n", name);
        fcg_sb_printf(&src, "\ntypedef %s idx_t;\n", idx64 ? "long long" : "int");
        fcg_sb_puts(&src, "template <class T, int N> struct alignas(sizeof(T) * N) fcx_vec { T v[N]; };\n");
        fcg_sb_printf(&src, "struct fcx_params {\n    const void *ptr[%d];\n    long long i[%d];\n    "
                            "double f[%d];\n};\n",
                      nptr, g.nint ? g.nint : 1, g.nflt ? g.nflt : 1);
        /* scan tiles with accumulators of up to 8 bytes: at most 48 registers (5 blocks a
         * multiprocessor; 58 gave 4), more blocks in flight while warp 0 looks back */
        int min_blocks = strategy == FCX_STRATEGY_SCAN_TILES &&
                                 ct_size(acc_mean_dtype(k->outs[0])) <= 8
                             ? FCX_SCAN_MIN_BLOCKS
                             : 0;

        if (min_blocks > 0)
            fcg_sb_printf(&src, "extern \"C\" __global__ void __launch_bounds__(%d, %d) %s(const "
                                "fcx_params p) {\n", block, min_blocks, name);
        else
            fcg_sb_printf(&src, "extern \"C\" __global__ void __launch_bounds__(%d) %s(const "
                                "fcx_params p) {\n", block, name);
        if (g.xch_lane_bytes)
            fcg_sb_printf(&src, "    __shared__ fcx_t_c128 fcx_xchw[(%d * %s + 15) / 16]; /* 16-byte aligned */\n"
                                "    unsigned char *const fcx_xch = (unsigned char *)fcx_xchw;\n",
                          g.xch_lane_bytes, strategy == FCX_STRATEGY_BLOCK_COL ? "256" : "FCX_WARP");
        if (g.body.s) fcg_sb_puts(&src, g.body.s);
        fcg_sb_puts(&src, "}\n");
        if (!with_prelude) fcg_sb_puts(&src, "}\n");
        if (with_prelude) put_prelude(&whole, ctx->fast_math, src.s ? src.s : "", src.len);
        if (src.s) fcg_sb_puts(&whole, src.s);
        whole.failed |= src.failed;
        fcg_sb_free(&src);
        src = whole;
    }
    int fields[FCX_NSIZES] = {0}, cached[FCX_NSIZES] = {0};
    for (int j = 0; j < k->nred && strategy != FCX_STRATEGY_EW && g.err == FC_OK; j++) {
        field f[3];
        int nf = red_fields(&g, k->reds[j], f);
        for (int i = 0; i < nf; i++) fields[size_class(f[i].size)]++;
    }
    memcpy(cached, g.slot_size, sizeof cached);
    int vec = strategy == FCX_STRATEGY_BLOCK_ROW ? row_vec_width(k)
              : strategy == FCX_STRATEGY_EW && g.ew_thread_steps ? g.ew_vec
                                                                 : 1;
    fcg_sb_free(&g.body);
    gen_free_arrays(&g);
    for (size_t i = 0; i < g.nstr; i++) fcg_strfree(ctx, g.strs[i]);
    fcg_free(ctx, g.strs, g.capstr * sizeof *g.strs);
    fcg_free(ctx, g.memo, g.capmemo * sizeof *g.memo);
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
    out->nptr = nptr;
    out->nint = g.nint;
    out->nflt = g.nflt;
    out->islots = g.nint ? g.islots : (fcg_free(ctx, g.islots, (size_t)g.capint * sizeof *g.islots), NULL);
    out->fslots = g.nflt ? g.fslots : (fcg_free(ctx, g.fslots, (size_t)g.capflt * sizeof *g.fslots), NULL);
    out->strategy = strategy;
    out->block = block;
    out->idx64 = idx64;
    out->vec = vec;
    out->ew_thread_steps = strategy == FCX_STRATEGY_EW ? g.ew_thread_steps : 0;
    out->splits = splits;
    memcpy(out->fields, fields, sizeof fields);
    memcpy(out->cached, cached, sizeof cached);
    out->static_smem = static_smem;
    out->fast_math = ctx->fast_math;
    fcp_kernel_summary(k, out->summary, sizeof out->summary);
    return FC_OK;
}
