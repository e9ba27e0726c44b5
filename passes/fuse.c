/*
 * passes/fuse.c - the pipeline driver, fusion grouping and scheduling.
 *
 * Fusion works on "roots": nodes that must be stored (requested arrays, library-call inputs
 * and outputs, and whatever the rules below decide to materialise). A root's region is every
 * node reachable from it without crossing another root or a value; views, broadcasts and pads
 * inside a region become index arithmetic (view folding), never copies. Each region is one
 * kernel:
 *   EW      no reductions inside;
 *   REDUCE  reductions of one level over one (space, axes), streamed, epilogue over the
 *           reduced space (sqrt of a sum, a norm's root);
 *   ROW     reductions over the trailing axes whose results broadcast back over the same rows
 *           (softmax, layernorm, normalise, logsumexp): kept on chip when a row fits, else
 *           streamed from memory in every phase (long_rows), when there are enough rows to
 *           give every multiprocessor a block (FCP_ROW_LONG_MIN_ROWS).
 * A region that fits none of these materialises its reductions and is tried again, so the
 * fallback is the fewest kernels the rules allow. Shared subexpressions are recomputed in each
 * consumer while small, materialised when big. Finally kernels over the same iteration space
 * merge (multi-output fusion) when neither depends on the other, or when an elementwise one
 * reads the other's outputs only at the element it computes.
 */
#include "plan.h"
#include "nodemap.h"
#include "passes.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const fcp_kernel_kind_names[] = {"elementwise", "reduce", "row", "library", "scan",
                                             "scatter"};

typedef struct fuse_state {
    fc_ctx *ctx;
    fc_array **ord;   /* topological order (values are leaves) */
    size_t n;
    fcg_nodemap pos;  /* node -> its index in ord: the key of every array below (the pass's own,
                         not the nodes' scratch `order`, which any graph walk rewrites) */
    uint8_t *mat;     /* materialised: a root */
    int *region;      /* region (root order index + 1) that last claimed the node */
    int *nregions;    /* how many regions claimed it */
    uint32_t *cost;   /* inline ops below, capped */
    int *level;       /* scratch of classify: reduction nesting depth */
    int tag;          /* stamp of the latest collect: region[] == tag marks its nodes */
    const char **why; /* reason a node was materialised (static strings or NULL) */
    fc_array **stack;
    int8_t (*amap)[FC_MAX_DIMS]; /* scratch of rows_aligned: each axis's axis of the space */
    int *sorted;                 /* scratch of rows_aligned: region positions in order */
    int scatter_part;            /* collect's view of a scatter root: 0 all its inputs, 1 in[0]
                                    alone (its copy kernel), 2 the indices and values */
    uint8_t *epilogue;           /* 1: the root ends a library call's epilogue (a library
                                    kernel stores it, the product inside); 2: a node inside one */
    /* Indices instead of map lookups where the pass walks most (collect, run several times per
     * root): is_leaf per node, the walk's edges (the inputs of node i at indices
     * edges.pos[edges.first[i]] onwards; none for a leaf), and the indices of the latest
     * collect's nodes. */
    uint8_t *leaf;
    fcg_topo_edges edges;
    int32_t *reg_ix;  /* parallel to collect's output */
    int32_t *istack;  /* collect's stack */
    /* The latest collect, which a collect of the same root into the same buffer returns again
     * while nothing it depends on has changed (set_mat and choose_roots clear it). */
    int64_t collected_root; /* its root's index, or -1 */
    int collected_part;     /* its scatter_part */
    fc_array **collected_out;
    size_t collected_n;
} fuse_state;

/* Marks node i materialised or not; a region collected before may change. */
static void set_mat(fuse_state *s, size_t i, uint8_t v) {
    s->mat[i] = v;
    s->collected_root = -1;
}

/* The index of node a (every node the pass meets is in the walk). */
static inline size_t ix(const fuse_state *s, const fc_array *a) {
    int64_t i = fcg_nodemap_get(&s->pos, a);
    assert(i >= 0);
    return (size_t)i;
}

static bool is_leaf(const fc_array *a) {
    return fcg_has_value(a) || a->op == FCG_OP_DATA || a->op == FCG_OP_INPUT;
}
static fcg_kind kind_of(const fc_array *a) { return fcg_ops[a->op].kind; }
static bool is_reduce(const fc_array *a) { return kind_of(a) == FCG_KIND_REDUCE; }
static bool is_lib(const fc_array *a) { return kind_of(a) == FCG_KIND_LIB; }
static bool is_scan(const fc_array *a) { return kind_of(a) == FCG_KIND_SCAN; }
static bool is_scatter(const fc_array *a) { return kind_of(a) == FCG_KIND_SCATTER; }

/* Collects the region of root r into `out` (r first), their indices into s->reg_ix; returns
 * its size. */
static size_t collect(fuse_state *s, fc_array *r, fc_array **out) {
    int32_t ri = (int32_t)ix(s, r);
    if (ri == s->collected_root && s->scatter_part == s->collected_part && out == s->collected_out)
        return s->collected_n; /* out, reg_ix and the region's tags are still its own */
    int tag = ++s->tag;
    int32_t *oix = s->reg_ix, *stack = s->istack;
    size_t nout = 0, depth = 0;
    stack[depth++] = ri;
    s->region[ri] = tag;
    while (depth) {
        int32_t ai = stack[--depth];
        fc_array *a = s->ord[ai];
        oix[nout] = ai;
        out[nout++] = a;
        if (s->leaf[ai] || (ai != ri && s->mat[ai])) continue;
        const int32_t *in = s->edges.pos + s->edges.first[ai];
        for (int i = 0; i < a->nin; i++) {
            int32_t ci = in[i];
            if (ai == ri && s->scatter_part && is_scatter(r) &&
                (i == 0) != (s->scatter_part == 1))
                continue;
            if (s->region[ci] == tag) continue;
            s->region[ci] = tag;
            if (s->leaf[ci] || s->mat[ci]) { /* a load: listed, not expanded */
                oix[nout] = ci;
                out[nout++] = s->ord[ci];
                continue;
            }
            stack[depth++] = ci;
        }
    }
    s->collected_root = ri;
    s->collected_part = s->scatter_part;
    s->collected_out = out;
    s->collected_n = nout;
    return nout;
}

/* Extents of `shape` without its 1s, for comparing a root with a reduced shape. */
static int squeezed(int nd, const int64_t *shape, int64_t *out) {
    int k = 0;
    for (int d = 0; d < nd; d++)
        if (shape[d] != 1) out[k++] = shape[d];
    return k;
}

static bool same_squeezed(int na, const int64_t *a, int nb, const int64_t *b) {
    int64_t x[FC_MAX_DIMS], y[FC_MAX_DIMS];
    int kx = squeezed(na, a, x), ky = squeezed(nb, b, y);
    return kx == ky && memcmp(x, y, (size_t)kx * sizeof *x) == 0;
}

typedef enum { FIT_EW, FIT_REDUCE, FIT_ROW, FIT_SCAN, FIT_SCATTER, FIT_NONE } fit_kind;

static int cmp_int(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* A reduction kernel keeps each reduction's result in a register per row (the space S less
 * the reduced axes rmask) and uses it wherever the region reads the reduction. That is the
 * program's meaning only if every path from the root to a reduction indexes the reduction by
 * its own kept axes: NumPy's broadcasting aligns shapes from the right, so sum(x, axis=1) of
 * an [n, n] x added to an [n, n] array runs along the columns, not the rows (seed 37686 of
 * the GPU differential run). Each value at level >= 1 gets, from its consumers, the axis of S
 * that each of its axes is indexed by (-1 for an extent-1 axis, which any index reads the
 * same); the root's are S's own (a value of the space) or the kept axes in order (a value of
 * the rows). Consumers must agree, and a reduction's axes must be its kept axes. */
static bool rows_aligned(fuse_state *s, fc_array *r, fc_array **reg, size_t nreg, int tag,
                         const fc_array *S, uint32_t rmask, bool root_of_space) {
    const int *level = s->level;
    const int8_t unset = -3;
    size_t nin = 0;
    for (size_t k = 0; k < nreg; k++) {
        fc_array *a = reg[k];
        if (is_leaf(a) || (a != r && s->mat[ix(s, a)]) || level[ix(s, a)] < 1) continue;
        s->sorted[nin++] = (int)ix(s, a);
        for (int d = 0; d < a->ndim; d++) s->amap[ix(s, a)][d] = unset;
    }
    /* The kept axes of extent > 1, in order. */
    int8_t kept[FC_MAX_DIMS];
    int nkept = 0;
    for (int d = 0; d < S->ndim; d++)
        if (!(rmask & (1u << d)) && S->shape[d] != 1) kept[nkept++] = (int8_t)d;
    int8_t *m = s->amap[ix(s, r)];
    for (int d = 0, j = 0; d < r->ndim; d++)
        m[d] = r->shape[d] == 1 ? -1 : root_of_space ? (int8_t)d : j < nkept ? kept[j++] : -2;
    /* Consumers before their inputs: positions in the topological order, descending. */
    qsort(s->sorted, nin, sizeof *s->sorted, cmp_int);
    for (size_t k = nin; k-- > 0;) {
        fc_array *a = s->ord[s->sorted[k]];
        m = s->amap[s->sorted[k]];
        for (int d = 0; d < a->ndim; d++)
            if (m[d] == unset) return false; /* no consumer in the region: cannot happen */
        if (is_reduce(a)) { /* indexed by its kept axes, in order, or keepdims' own */
            for (int d = 0, j = 0; d < S->ndim; d++) {
                bool reduced = rmask & (1u << d);
                if (a->ndim != S->ndim && reduced) continue;
                int e = a->ndim == S->ndim ? d : j++;
                if (e >= a->ndim) return false;
                if (a->shape[e] != 1 && m[e] != d) return false;
            }
        }
        for (int i = 0; i < a->nin; i++) {
            fc_array *c = a->in[i];
            size_t ic = ix(s, c);
            if (is_leaf(c) || s->region[ic] != tag || s->mat[ic] || level[ic] < 1) continue;
            int8_t *mc = s->amap[ic];
            int d = is_reduce(a) || a->op == FCG_OP_RESHAPE ? 0 : a->ndim - c->ndim;
            for (int e = 0; e < c->ndim; e++) {
                int8_t want = -1;
                if (c->shape[e] != 1) {
                    if (is_reduce(a)) { /* a reduction reads its input at S's own index */
                        want = (int8_t)e;
                    } else if (a->op == FCG_OP_RESHAPE) { /* a unit reshape: extents in order */
                        while (d < a->ndim && a->shape[d] == 1) d++;
                        if (d >= a->ndim) return false;
                        want = m[d++];
                    } else {
                        if (d + e < 0) return false;
                        want = m[d + e];
                    }
                }
                if (mc[e] != unset && mc[e] != want) return false;
                mc[e] = want;
            }
        }
    }
    return true;
}

/* Whether a has the shape of space S (a row kernel keeps such a buffer's rows on chip). */
static bool of_space(const fc_array *a, const fc_array *S) {
    return a->ndim == S->ndim &&
           memcmp(a->shape, S->shape, (size_t)S->ndim * sizeof *S->shape) == 0;
}

/* Decides what kernel a region can be. On FIT_NONE, *why says which rule failed. On FIT_ROW,
 * *long_rows says whether a row does not fit on chip (its kernel streams the rows). */
static fit_kind classify(fuse_state *s, fc_array *r, fc_array **reg, size_t nreg,
                         const char **why, bool *long_rows) {
    *long_rows = false;
    if (is_scan(r)) { /* a scan kernel computes its mapped input: elementwise ops and views */
        for (size_t k = 1; k < nreg; k++)
            if (is_reduce(reg[k]) && !is_leaf(reg[k]) && !s->mat[ix(s, reg[k])]) {
                *why = "a reduction feeding a scan is stored first";
                return FIT_NONE;
            }
        return FIT_SCAN;
    }
    if (is_scatter(r)) { /* its copy and its updates: elementwise ops, views and gathers */
        for (size_t k = 1; k < nreg; k++)
            if (is_reduce(reg[k]) && !is_leaf(reg[k]) && !s->mat[ix(s, reg[k])]) {
                *why = "a reduction feeding a scatter is stored first";
                return FIT_NONE;
            }
        return FIT_SCATTER;
    }
    fc_array *first = NULL;
    int levels_max = 0;
    bool any = false;
    for (size_t k = 0; k < nreg; k++)
        if (is_reduce(reg[k]) && (reg[k] == r || !s->mat[ix(s, reg[k])]) && !is_leaf(reg[k])) {
            any = true;
            if (!first) first = reg[k];
        }
    if (!any) return FIT_EW;
    const fc_array *S = first->in[0];
    uint32_t rmask = first->p.axes;
    for (size_t k = 0; k < nreg; k++) {
        fc_array *a = reg[k];
        if (!is_reduce(a) || is_leaf(a) || (a != r && s->mat[ix(s, a)])) continue;
        const fc_array *in = a->in[0];
        if (a->p.axes != rmask || in->ndim != S->ndim ||
            memcmp(in->shape, S->shape, (size_t)S->ndim * 8) != 0) {
            *why = "reductions over different spaces or axes";
            return FIT_NONE;
        }
    }
    /* Levels and the path rule: between a root and a reduction, or between two reductions,
     * only elementwise ops, broadcasts and unit reshapes keep the row index intact. reg is a
     * DFS pre-order from r, which is not a topological order of a DAG, so levels are found by
     * relaxing until nothing changes (regions are small; a few sweeps suffice). */
    int *level = s->level;
    for (size_t k = 0; k < nreg; k++) level[ix(s, reg[k])] = 0;
    bool path_ok = true;
    int tag = s->tag; /* reg came from the latest collect */
    for (bool again = true; again;) {
        again = false;
        for (size_t iter = nreg; iter-- > 0;) {
            fc_array *a = reg[iter];
            if (is_leaf(a) || (a != r && s->mat[ix(s, a)])) continue;
            int lv = 0;
            for (int i = 0; i < a->nin; i++) {
                fc_array *c = a->in[i];
                if (s->region[ix(s, c)] != tag || is_leaf(c) || s->mat[ix(s, c)]) continue;
                if (level[ix(s, c)] > lv) lv = level[ix(s, c)];
            }
            if (is_reduce(a)) lv += 1;
            if (lv != level[ix(s, a)]) {
                level[ix(s, a)] = lv;
                again = true;
            }
        }
    }
    for (size_t k = 0; k < nreg; k++) {
        fc_array *a = reg[k];
        if (is_leaf(a) || (a != r && s->mat[ix(s, a)])) continue;
        if (level[ix(s, a)] > levels_max) levels_max = level[ix(s, a)];
        if (is_reduce(a) || level[ix(s, a)] == 0) continue;
        bool ok = kind_of(a) == FCG_KIND_EW || kind_of(a) == FCG_KIND_USER ||
                  a->op == FCG_OP_BROADCAST ||
                  (a->op == FCG_OP_RESHAPE && fcg_unit_reshape(a));
        path_ok &= ok;
    }
    if (!path_ok) {
        *why = "a view other than a broadcast lies between a reduction and its consumer";
        return FIT_NONE;
    }
    int64_t red_shape[FC_MAX_DIMS];
    int rn = 0;
    int64_t row = 1;
    for (int d = 0; d < S->ndim; d++) {
        if (rmask & (1u << d)) row *= S->shape[d];
        else red_shape[rn++] = S->shape[d];
    }
    bool at_reduced = same_squeezed(r->ndim, r->shape, rn, red_shape);
    bool at_space = r->ndim == S->ndim && memcmp(r->shape, S->shape, (size_t)S->ndim * 8) == 0;
    const char *misaligned = "a reduction's result is broadcast along other axes than its own";
    if (levels_max == 1 && at_reduced) {
        if (rows_aligned(s, r, reg, nreg, tag, S, rmask, false)) return FIT_REDUCE;
        *why = misaligned;
        return FIT_NONE;
    }
    if (!at_reduced && !at_space) {
        *why = "the consumer's shape is neither the reduction's input nor its result";
        return FIT_NONE;
    }
    /* ROW: the reduced axes must be the trailing ones. A row that does not fit on chip is
     * streamed from memory in every phase, when there are rows enough for the device. */
    int k = 0;
    while (k < S->ndim && !(rmask & (1u << k))) k++;
    uint32_t trailing = S->ndim ? (uint32_t)(((1ull << S->ndim) - 1) & ~((1ull << k) - 1)) : 0;
    if (rmask != trailing || rmask == 0) {
        *why = "reduced axes are not the trailing (row) axes, so rows are not contiguous";
        return FIT_NONE;
    }
    /* What the kernel keeps on chip: the rows of the buffers of the space's shape (codegen's
     * choose_kept). A vector along the row (layernorm's gamma and beta) is no row of its own:
     * every block reads the same one, from cache. */
    size_t bytes_per_elem = 0;
    for (size_t j = 0; j < nreg; j++)
        if ((is_leaf(reg[j]) || (reg[j] != r && s->mat[ix(s, reg[j])])) && of_space(reg[j], S))
            bytes_per_elem += fc_dtype_size((fc_dtype)reg[j]->dtype);
    if (bytes_per_elem == 0) bytes_per_elem = 4;
    if ((double)row * (double)bytes_per_elem > FCP_ROW_MAX_BYTES) {
        int64_t rows = 1;
        for (int d = 0; d < rn; d++) rows *= red_shape[d];
        if (rows < FCP_ROW_LONG_MIN_ROWS) {
            *why = "a row does not fit on chip and there are too few rows for a block each: "
                   "the reductions split each row between blocks";
            return FIT_NONE;
        }
        *long_rows = true;
    }
    if (!rows_aligned(s, r, reg, nreg, tag, S, rmask, at_space)) {
        *why = misaligned;
        return FIT_NONE;
    }
    return FIT_ROW;
}

/* ---- the plan --------------------------------------------------------------------------- */

static void kernel_free(fc_ctx *ctx, fcp_kernel *k) {
    fcg_free(ctx, k->outs, (size_t)k->nout * sizeof *k->outs);
    fcg_free(ctx, k->leaves, (size_t)k->nleaf * sizeof *k->leaves);
    fcg_free(ctx, k->nodes, (size_t)k->nnode * sizeof *k->nodes);
    fcg_free(ctx, k->reds, (size_t)k->nred * sizeof *k->reds);
}

void fcp_plan_destroy(fcp_plan *p) {
    if (!p) return;
    fc_ctx *ctx = p->ctx;
    for (int i = 0; i < p->nkernel; i++) kernel_free(ctx, &p->kernels[i]);
    fcg_free(ctx, p->kernels, (size_t)p->nkernel * sizeof *p->kernels);
    for (int i = 0; i < p->nboundary; i++) fcg_strfree(ctx, p->boundaries[i].reason);
    fcg_free(ctx, p->boundaries, (size_t)p->boundary_cap * sizeof *p->boundaries);
    for (int i = 0; i < p->nout; i++) fcg_release(p->outs[i]);
    fcg_free(ctx, p->outs, (size_t)p->nout * sizeof *p->outs);
    fcg_free(ctx, p->buf_bytes, (size_t)p->buf_cap * sizeof *p->buf_bytes);
    fcg_free(ctx, p->mat, (size_t)p->nmat * sizeof *p->mat);
    fcg_free(ctx, p->mat_buf, (size_t)p->nmat * sizeof *p->mat_buf);
    fcg_free(ctx, p->mat_last_use, (size_t)p->nmat * sizeof *p->mat_last_use);
    fcg_free(ctx, p, sizeof *p);
}

/* Appends to a growable array of pointers (capacity doubles; sizes tracked for the
 * allocator). */
static bool push_ptr(fc_ctx *ctx, fc_array ***arr, int *n, int *cap, fc_array *a) {
    if (*n == *cap) {
        int nc = *cap ? *cap * 2 : 8;
        fc_array **g = fcg_realloc(ctx, *arr, (size_t)*cap * sizeof **arr, (size_t)nc * sizeof **arr);
        if (!g) return false;
        *arr = g;
        *cap = nc;
    }
    (*arr)[(*n)++] = a;
    return true;
}

/* Shrinks a pushed array to its exact size so frees can name the size (*cap follows, so a
 * later failure still frees with the size allocated). */
static bool shrink(fc_ctx *ctx, fc_array ***arr, int n, int *cap) {
    if (n == *cap) return true;
    fc_array **g = fcg_realloc(ctx, *arr, (size_t)*cap * sizeof **arr, (size_t)n * sizeof **arr);
    if (!g) return false;
    *arr = g;
    *cap = n;
    return true;
}

typedef struct group {
    int kind;          /* fcp_kernel_kind */
    int nroot;
    int roots[16];     /* root order indices merged into this kernel */
    bool dead;
} group;

static bool same_space(const fcp_kernel *a, const fcp_kernel *b) {
    return a->kind == b->kind && a->kind != FCP_KERNEL_LIB && a->kind != FCP_KERNEL_SCATTER &&
           a->ndim == b->ndim &&
           a->rmask == b->rmask && memcmp(a->space, b->space, (size_t)a->ndim * 8) == 0;
}

static fc_status add_boundary(fcp_plan *p, int *cap, fc_array *node, const char *reason) {
    fc_ctx *ctx = p->ctx;
    if (p->nboundary == *cap) {
        int nc = *cap ? *cap * 2 : 8;
        fcp_boundary *b = fcg_realloc(ctx, p->boundaries, (size_t)*cap * sizeof *b,
                                      (size_t)nc * sizeof *b);
        if (!b) return FC_ERR_NOMEM;
        p->boundaries = b;
        *cap = nc;
    }
    char *r = fcg_strdup(ctx, reason);
    if (!r) return FC_ERR_NOMEM;
    p->boundaries[p->nboundary++] = (fcp_boundary){node, r};
    return FC_OK;
}

/* Marks roots until every region fits a kernel kind (see the file comment). */
static void choose_roots(fuse_state *s, fc_array **reg, int *claimed) {
    size_t n = s->n;
    for (int round = 0; round < 256; round++) {
        bool changed = false;
        memset(s->region, 0, n * sizeof *s->region);
        s->collected_root = -1;
        memset(s->nregions, 0, n * sizeof *s->nregions);
        memset(claimed, 0, n * sizeof *claimed);
        for (size_t i = 0; i < n; i++) {
            if (!s->mat[i] || is_lib(s->ord[i])) continue;
            /* Roots of one shape will most likely merge into one kernel (multi-output
             * fusion), so a node they share is not shared across kernels: claim it for the
             * first root of that shape. */
            size_t owner = i;
            for (size_t j = 0; j < i; j++)
                if (s->mat[j] && !is_lib(s->ord[j]) && s->ord[j]->ndim == s->ord[i]->ndim &&
                    memcmp(s->ord[j]->shape, s->ord[i]->shape, (size_t)s->ord[i]->ndim * 8) == 0) {
                    owner = j;
                    break;
                }
            size_t m = collect(s, s->ord[i], reg);
            for (size_t k = 1; k < m; k++) {
                int32_t ak = s->reg_ix[k];
                if (s->leaf[ak] || s->mat[ak] || claimed[ak] == (int)owner + 1) continue;
                claimed[ak] = (int)owner + 1;
                s->nregions[ak]++;
            }
        }
        /* Shared across kernels: a reduction is stored once; a big subexpression too. */
        for (size_t i = 0; i < n; i++) {
            if (s->mat[i] || s->nregions[i] < 2) continue;
            if (is_reduce(s->ord[i])) {
                set_mat(s, i, 1);
                s->why[i] = "a reduction used by several kernels is computed once and stored";
                changed = true;
            } else if (s->cost[i] > FCP_RECOMPUTE_MAX_OPS) {
                set_mat(s, i, 1);
                s->why[i] = "a large subexpression used by several kernels is stored, not "
                            "recomputed";
                changed = true;
            }
        }
        if (changed) continue;
        /* Depth: a chain longer than FCP_MAX_DEPTH inside one kernel is cut where it reaches
         * that depth (the code generator and compilers handle long chains badly). */
        for (size_t i = 0; i < n; i++) {
            int dp = 0;
            if (!s->leaf[i])
                for (int32_t e = s->edges.first[i]; e < s->edges.first[i + 1]; e++) {
                    int32_t c = s->edges.pos[e];
                    if (!s->leaf[c] && !s->mat[c] && s->level[c] > dp) dp = s->level[c];
                }
            s->level[i] = s->leaf[i] ? 0 : dp + 1;
            if (s->level[i] == FCP_MAX_DEPTH && !s->mat[i]) {
                set_mat(s, i, 1);
                s->why[i] = "the dependency chain is longer than one kernel should hold";
                changed = true;
            }
        }
        if (changed) continue;
        for (size_t i = 0; i < n; i++) {
            if (!s->mat[i] || is_lib(s->ord[i])) continue;
            size_t m = collect(s, s->ord[i], reg);
            size_t loads = 0;
            for (size_t k = 1; k < m; k++) loads += s->leaf[s->reg_ix[k]] || s->mat[s->reg_ix[k]];
            /* Too many nodes, or more buffers than the kernel's parameter space should carry:
             * split at the costliest node inside (repeated, this halves the group). */
            if (m > FCP_MAX_KERNEL_NODES || loads > FCP_MAX_LEAVES) {
                size_t best = 0;
                for (size_t k = 1; k < m; k++) {
                    fc_array *a = reg[k];
                    if (!is_leaf(a) && !s->mat[ix(s, a)] &&
                        (best == 0 || s->cost[ix(s, a)] > s->cost[ix(s, reg[best])]))
                        best = k;
                }
                if (best) {
                    set_mat(s, ix(s, reg[best]), 1);
                    s->why[ix(s, reg[best])] = m > FCP_MAX_KERNEL_NODES
                                                   ? "the kernel would exceed the node limit"
                                                   : "the kernel would load more buffers than "
                                                     "its parameter space allows";
                    changed = true;
                    continue;
                }
            }
            const char *why = NULL;
            bool long_rows;
            if (classify(s, s->ord[i], reg, m, &why, &long_rows) != FIT_NONE) continue;
            for (size_t k = 1; k < m; k++) {
                fc_array *a = reg[k];
                if (is_reduce(a) && !is_leaf(a) && !s->mat[ix(s, a)]) {
                    set_mat(s, ix(s, a), 1);
                    s->why[ix(s, a)] = why;
                    changed = true;
                }
            }
        }
        if (!changed) return;
    }
}

/* True if kernel `from` reads, directly or through other kernels, what kernel `to` stores.
 * The walk is over kernels, not nodes: once groups have merged, a kernel waits for every
 * input of all its roots, so reaching one root of a group continues from all of them. (A walk
 * over nodes alone let two independent merges make a cycle: ew{cosh(std), cast(x)} and
 * reduce{prod(x), argmin(cast)}, where std reads prod, which ran in no order that worked.) */
static bool reaches(fuse_state *s, const group *groups, const int *group_of, int from, int to,
                    int *seen) {
    memset(seen, 0, s->n * sizeof *seen);
    size_t depth = 0;
    for (int q = 0; q < groups[from].nroot; q++) {
        seen[groups[from].roots[q]] = 1;
        s->stack[depth++] = s->ord[groups[from].roots[q]];
    }
    while (depth) {
        fc_array *x = s->stack[--depth];
        if (is_leaf(x)) continue;
        for (int c = 0; c < x->nin; c++) {
            size_t iy = ix(s, x->in[c]);
            if (seen[iy]) continue;
            seen[iy] = 1;
            int g = group_of[iy];
            if (g == to) return true;
            s->stack[depth++] = x->in[c];
            if (g < 0 || g == from) continue;
            for (int q = 0; q < groups[g].nroot; q++) {
                int r = groups[g].roots[q];
                if (seen[r]) continue;
                seen[r] = 1;
                s->stack[depth++] = s->ord[r];
            }
        }
    }
    return false;
}

/* Whether a is a row constant of reduction M: elementwise ops, broadcasts, unit reshapes,
 * constants and one-element values over M (codegen's row_constant_of); *uses says it reads M. */
static bool row_constant(fuse_state *s, const fc_array *a, const fc_array *M, bool *uses,
                         int depth) {
    if (a == M) {
        *uses = true;
        return true;
    }
    if (depth > 64) return false;
    if (is_leaf(a) || s->mat[ix(s, a)]) return fcg_node_numel(a) == 1;
    if (a->op == FCG_OP_CONST) return true;
    if (kind_of(a) != FCG_KIND_EW && a->op != FCG_OP_BROADCAST &&
        !(a->op == FCG_OP_RESHAPE && fcg_unit_reshape(a)))
        return false;
    for (int i = 0; i < a->nin; i++)
        if (!row_constant(s, a->in[i], M, uses, depth + 1)) return false;
    return true;
}

/* Whether reduce group cons (one root: a sum or mean of exp(A - B), B a row constant of a max
 * M of reduce group prod over A) can join prod, both over the same space and axes with the
 * innermost axis kept (a column kernel): codegen then folds the sum into the max's pass as an
 * online sum (codegen/cuda.c online_pairs, which must pair them: it fails otherwise), so a
 * column softmax's statistics take one pass. cons loads nothing but values and M, so merging
 * makes no cycle. */
static bool online_merge(fuse_state *s, const group *groups, const fcp_kernel *kp, int prod,
                         int cons, fc_array **reg) {
    if (kp->kind != FCP_KERNEL_REDUCE || groups[cons].nroot != 1) return false;
    int inner = kp->ndim - 1;
    while (inner >= 0 && kp->space[inner] == 1) inner--;
    if (inner < 0 || (kp->rmask & (1u << inner))) return false; /* not a column kernel */
    fc_array *r = s->ord[groups[cons].roots[0]];
    if (!is_reduce(r)) return false;
    const fcg_reduction *d = fcg_reduction_of(r);
    fc_dtype lt = fcg_reduce_acc_dtype(r);
    if (d->combine != FCG_COMBINE_ADD || d->map != FCG_MAP_VALUE ||
        (d->finish != FCG_FINISH_NONE && d->finish != FCG_FINISH_MEAN) || !fcg_is_inexact(lt) ||
        fcg_is_complex(lt))
        return false;
    const fc_array *t = r->in[0];
    if (is_leaf(t) || s->mat[ix(s, t)] || t->op != FCG_OP_EXP || fcg_is_complex((fc_dtype)t->dtype))
        return false;
    const fc_array *sub = t->in[0];
    if (is_leaf(sub) || s->mat[ix(s, sub)] || sub->op != FCG_OP_SUB) return false;
    const fc_array *M = NULL;
    for (int q = 0; q < groups[prod].nroot && !M; q++) {
        const fc_array *c = s->ord[groups[prod].roots[q]];
        bool uses = false;
        if (is_reduce(c) && fcg_reduction_of(c)->combine == FCG_COMBINE_MAX &&
            c->in[0] == sub->in[0] && !fcg_is_complex((fc_dtype)c->dtype) &&
            c->p.axes == r->p.axes && row_constant(s, sub->in[1], c, &uses, 0) && uses &&
            (sub->in[1] == c || (!is_leaf(sub->in[1]) && !s->mat[ix(s, sub->in[1])])))
            M = c;
    }
    if (!M) return false;
    size_t m = collect(s, r, reg);
    for (size_t k = 1; k < m; k++)
        if (!is_leaf(reg[k]) && s->mat[ix(s, reg[k])] && reg[k] != M) return false;
    return true;
}

/* Whether elementwise group b can join group a (a scan, or an elementwise kernel over the
 * same space) although it reads what a stores: b reads a's roots only through elementwise ops
 * of a's space (so at the element a has just computed, in the same thread: the merged kernel
 * computes that root once, stores it and uses the register), and no buffer b loads depends on
 * a through other kernels. True only where b does read a. Uses s->level as scratch (whether a
 * node depends on a root of a). */
static bool reads_at_element(fuse_state *s, const group *groups, const int *group_of,
                             const fcp_kernel *ka, int a, int b, fc_array **reg, int *seen) {
    bool reads = false;
    for (int q = 0; q < groups[b].nroot; q++) {
        fc_array *r = s->ord[groups[b].roots[q]];
        size_t m = collect(s, r, reg);
        int tag = s->tag;
        for (size_t j = 0; j < m; j++) s->level[ix(s, reg[j])] = 0;
        for (bool again = true; again;) {
            again = false;
            for (size_t j = 0; j < m; j++) {
                fc_array *x = reg[j];
                if (is_leaf(x) || (x != r && s->mat[ix(s, x)]) || s->level[ix(s, x)]) continue;
                for (int i = 0; i < x->nin; i++) {
                    fc_array *c = x->in[i];
                    bool inside = s->region[ix(s, c)] == tag && !is_leaf(c) && !s->mat[ix(s, c)];
                    if ((!is_leaf(c) && group_of[ix(s, c)] == a) ||
                        (inside && s->level[ix(s, c)])) {
                        s->level[ix(s, x)] = 1;
                        again = true;
                        break;
                    }
                }
            }
        }
        for (size_t j = 0; j < m; j++) {
            fc_array *x = reg[j];
            if (is_leaf(x) || group_of[ix(s, x)] == a) continue;
            if (s->level[ix(s, x)]) {
                if (kind_of(x) != FCG_KIND_EW || x->ndim != ka->ndim ||
                    memcmp(x->shape, ka->space, (size_t)ka->ndim * 8) != 0)
                    return false;
                reads = true;
            } else if (x != r && s->mat[ix(s, x)]) {
                int c = group_of[ix(s, x)];
                if (c >= 0 && c != b && (c == a || reaches(s, groups, group_of, c, a, seen)))
                    return false;
            }
        }
    }
    return reads && !reaches(s, groups, group_of, a, b, seen);
}

/* Distinct buffers the union of two groups' regions would load. */
static int union_loads(fuse_state *s, const group *a, const group *b, fc_array **reg, int *seen) {
    memset(seen, 0, s->n * sizeof *seen);
    int loads = 0;
    for (int w = 0; w < 2; w++) {
        const group *g = w ? b : a;
        for (int q = 0; q < g->nroot; q++) {
            size_t m = collect(s, s->ord[g->roots[q]], reg);
            for (size_t j = 1; j < m; j++) {
                fc_array *x = reg[j];
                if (seen[ix(s, x)] || !(is_leaf(x) || s->mat[ix(s, x)])) continue;
                seen[ix(s, x)] = 1;
                loads++;
            }
        }
    }
    return loads;
}

/* Row kernels keep their rows on chip: the bytes of one row of every buffer the union of two
 * groups' regions would load (classify's measure for one region). */
static double union_row_bytes(fuse_state *s, const group *a, const group *b, const fcp_kernel *k,
                              fc_array **reg, int *seen) {
    memset(seen, 0, s->n * sizeof *seen);
    double row = 1, bytes = 0;
    for (int d = 0; d < k->ndim; d++)
        if (k->rmask & (1u << d)) row *= (double)k->space[d];
    for (int w = 0; w < 2; w++) {
        const group *g = w ? b : a;
        for (int q = 0; q < g->nroot; q++) {
            size_t m = collect(s, s->ord[g->roots[q]], reg);
            for (size_t j = 1; j < m; j++) {
                fc_array *x = reg[j];
                if (seen[ix(s, x)] || !(is_leaf(x) || s->mat[ix(s, x)])) continue;
                seen[ix(s, x)] = 1;
                if (x->ndim == k->ndim && memcmp(x->shape, k->space, (size_t)k->ndim * 8) == 0)
                    bytes += (double)fc_dtype_size((fc_dtype)x->dtype);
            }
        }
    }
    return (bytes > 0 ? bytes : 4) * row;
}

/* Fills kernel k from the union of group g's regions. */
static fc_status build_kernel(fuse_state *s, const group *g, fcp_kernel *k, fc_array **reg,
                              int *seen) {
    fc_ctx *ctx = s->ctx;
    int ocap = 0, lcap = 0, ncap = 0, rcap = 0;
    memset(seen, 0, s->n * sizeof *seen);
    for (int q = 0; q < g->nroot; q++) {
        fc_array *r = s->ord[g->roots[q]];
        size_t m = collect(s, r, reg);
        for (size_t j = 0; j < m; j++) seen[s->reg_ix[j]] = 1;
        if (!push_ptr(ctx, &k->outs, &k->nout, &ocap, r)) goto nomem;
    }
    for (size_t j = 0; j < s->n; j++) {
        if (!seen[j]) continue;
        fc_array *a = s->ord[j];
        bool root = false;
        for (int q = 0; q < g->nroot; q++) root |= g->roots[q] == (int)j;
        if (s->leaf[j] || (s->mat[j] && !root)) {
            if (!push_ptr(ctx, &k->leaves, &k->nleaf, &lcap, a)) goto nomem;
            continue;
        }
        if (!push_ptr(ctx, &k->nodes, &k->nnode, &ncap, a)) goto nomem;
        if (is_reduce(a) && k->kind != FCP_KERNEL_EW && !push_ptr(ctx, &k->reds, &k->nred, &rcap, a))
            goto nomem;
    }
    if (!shrink(ctx, &k->outs, k->nout, &ocap) || !shrink(ctx, &k->leaves, k->nleaf, &lcap) ||
        !shrink(ctx, &k->nodes, k->nnode, &ncap) || !shrink(ctx, &k->reds, k->nred, &rcap))
        goto nomem;
    return FC_OK;
nomem:
    /* Record capacities as counts so kernel_free names the sizes allocated. */
    k->nout = ocap, k->nleaf = lcap, k->nnode = ncap, k->nred = rcap;
    return fcg_error(ctx, FC_ERR_NOMEM, "fusion: out of memory");
}

/* Each scatter kernel becomes two, in place: an elementwise kernel over the scatter's shape
 * that stores in[0] (and what computes it) as the scatter node, then the updates kernel, which
 * computes the indices and values and combines them into that same buffer. */
static fc_status split_scatters(fuse_state *s, fcp_plan *p, fc_array **reg, int *seen) {
    fc_ctx *ctx = s->ctx;
    int nsc = 0;
    for (int i = 0; i < p->nkernel; i++) nsc += p->kernels[i].kind == FCP_KERNEL_SCATTER;
    if (nsc == 0) return FC_OK;
    int nk = p->nkernel + nsc;
    fcp_kernel *ks = fcg_calloc(ctx, (size_t)nk * sizeof *ks);
    if (!ks) return fcg_error(ctx, FC_ERR_NOMEM, "fusion: out of memory");
    fc_status st = FC_OK;
    int w = 0;
    for (int i = 0; i < p->nkernel; i++) {
        fcp_kernel *old = &p->kernels[i];
        if (old->kind != FCP_KERNEL_SCATTER) {
            ks[w++] = *old;
            continue;
        }
        fc_array *r = old->outs[0];
        group g = {.kind = FCP_KERNEL_EW, .nroot = 1};
        g.roots[0] = (int)ix(s, r);
        fcp_kernel copy = {.kind = FCP_KERNEL_EW, .ndim = r->ndim};
        memcpy(copy.space, r->shape, sizeof copy.space);
        fcp_kernel upd = {.kind = FCP_KERNEL_SCATTER, .ndim = old->ndim};
        memcpy(upd.space, old->space, sizeof upd.space);
        kernel_free(ctx, old);
        s->scatter_part = 1;
        if (st == FC_OK) st = build_kernel(s, &g, &copy, reg, seen);
        s->scatter_part = 2;
        if (st == FC_OK) st = build_kernel(s, &g, &upd, reg, seen);
        s->scatter_part = 0;
        ks[w++] = copy;
        ks[w++] = upd;
    }
    fcg_free(ctx, p->kernels, (size_t)p->nkernel * sizeof *p->kernels);
    p->kernels = ks;
    p->nkernel = nk;
    return st;
}

/* ---- library epilogues ------------------------------------------------------------------ */

/* Whether a is requested by the plan. */
static bool is_requested(const fcp_plan *p, const fc_array *a) {
    for (int o = 0; o < p->nout; o++)
        if (p->outs[o] == a) return true;
    return false;
}

/* The one node of the walk that reads a, when exactly one reads it exactly once; else NULL. */
static fc_array *sole_reader(const fuse_state *s, const fc_array *a) {
    fc_array *reader = NULL;
    int reads = 0;
    for (size_t i = 0; i < s->n && reads < 2; i++) {
        fc_array *c = s->ord[i];
        if (is_leaf(c)) continue;
        for (int k = 0; k < c->nin; k++)
            if (c->in[k] == a) {
                reader = c;
                reads++;
            }
    }
    return reads == 1 ? reader : NULL;
}

/* A matmul whose only reader adds a bias vector along its last axis and / or takes
 * maximum(., 0) or gelu_tanh (fcp_epilogue_* say which chains qualify) is stored no more: the
 * end of the chain becomes the root of a library kernel with the product inside, and the
 * library applies the rest in its own epilogue (cuBLASLt's BIAS / RELU / GELU / ..._BIAS: one
 * pass over the product instead of two). A bias that is not a stored buffer yet is stored
 * (cuBLASLt reads it). */
static void absorb_epilogues(fuse_state *s, const fcp_plan *p) {
    for (size_t i = 0; i < s->n; i++) {
        fc_array *m = s->ord[i];
        if (is_leaf(m) || !fcp_epilogue_product(m) || is_requested(p, m) || s->epilogue[i])
            continue;
        fc_array *c1 = sole_reader(s, m), *end = NULL;
        const fc_array *bias = c1 ? fcp_epilogue_bias(c1, m) : NULL;
        if (bias) {
            end = c1;
            fc_array *c2 = is_requested(p, c1) ? NULL : sole_reader(s, c1);
            if (c2 && fcp_epilogue_activation(c2, c1)) end = c2;
        } else if (c1 && fcp_epilogue_activation(c1, m)) {
            end = c1;
        }
        /* (a chain another product already took: `p + q` of two [1, N] products) */
        if (!end || s->epilogue[ix(s, c1)] || s->epilogue[ix(s, end)]) continue;
        set_mat(s, i, 0);
        s->why[i] = NULL;
        s->epilogue[i] = 2;
        if (end != c1) {
            set_mat(s, ix(s, c1), 0);
            s->why[ix(s, c1)] = NULL;
            s->epilogue[ix(s, c1)] = 2;
        }
        set_mat(s, ix(s, end), 1);
        s->epilogue[ix(s, end)] = 1;
        if (bias && !is_leaf(bias) && !s->mat[ix(s, bias)]) {
            set_mat(s, ix(s, bias), 1);
            s->why[ix(s, bias)] = "bias of a matmul's epilogue, which the library reads from a "
                                  "stored buffer";
        }
    }
}

static fc_status fuse(fc_ctx *ctx, fcp_plan *p) {
    fuse_state s;
    memset(&s, 0, sizeof s);
    s.ctx = ctx;
    s.collected_root = -1;
    fc_array **reg = NULL;
    int *seen = NULL, *producer = NULL, *group_of = NULL;
    group *groups = NULL;
    size_t ngroups = 0, nst = 0, nroots = 0, nk = 0;
    fc_status st = fcg_topo_order_edges(ctx, p->outs, p->nout, true, &s.ord, &s.n, &s.edges);
    if (st != FC_OK) return st;
    size_t n = s.n;
    if ((st = fcg_nodemap_positions(ctx, s.ord, n, &s.pos)) != FC_OK) {
        fcg_free(ctx, s.ord, n * sizeof *s.ord);
        fcg_topo_edges_free(ctx, &s.edges);
        return fcg_error(ctx, st, "fusion: out of memory");
    }
    nst = 2 * n + 32;
    st = FC_ERR_NOMEM;
    s.mat = fcg_calloc(ctx, n);
    s.region = fcg_calloc(ctx, n * sizeof *s.region);
    s.nregions = fcg_calloc(ctx, n * sizeof *s.nregions);
    s.level = fcg_calloc(ctx, n * sizeof *s.level);
    s.cost = fcg_calloc(ctx, n * sizeof *s.cost);
    s.why = fcg_calloc(ctx, n * sizeof *s.why);
    s.stack = fcg_malloc(ctx, nst * sizeof *s.stack);
    s.amap = fcg_malloc(ctx, n * sizeof *s.amap);
    s.sorted = fcg_malloc(ctx, n * sizeof *s.sorted);
    s.epilogue = fcg_calloc(ctx, n);
    reg = fcg_malloc(ctx, (n + 1) * sizeof *reg);
    seen = fcg_malloc(ctx, (n + 1) * sizeof *seen);
    s.leaf = fcg_malloc(ctx, n);
    s.reg_ix = fcg_malloc(ctx, (n + 1) * sizeof *s.reg_ix);
    s.istack = fcg_malloc(ctx, (n + 1) * sizeof *s.istack);
    if (!s.mat || !s.region || !s.nregions || !s.level || !s.cost || !s.why || !s.stack || !reg ||
        !seen || !s.amap || !s.sorted || !s.epilogue || !s.leaf || !s.reg_ix || !s.istack)
        goto done;
    for (size_t i = 0; i < n; i++) s.leaf[i] = is_leaf(s.ord[i]);

    /* Roots to begin with: the arrays asked for, library calls and their inputs. */
    for (int i = 0; i < p->nout; i++)
        if (!is_leaf(p->outs[i])) set_mat(&s, ix(&s, p->outs[i]), 1);
    for (size_t i = 0; i < n; i++) {
        fc_array *a = s.ord[i];
        if (is_leaf(a) || !is_lib(a)) continue;
        set_mat(&s, i, 1);
        for (int k = 0; k < a->nin; k++) {
            /* A matmul reads a transposed operand's source with cuBLAS's transpose flag; the
             * stencil kernel reads a convolution's flipped weights from their source,
             * reversed (fcp_lib_source says which inputs). */
            fc_array *in = a->in[k];
            fc_array *src = fcp_lib_source(a, k);
            if (src && !s.mat[ix(&s, in)]) {
                if (!is_leaf(src) && !s.mat[ix(&s, src)]) {
                    set_mat(&s, ix(&s, src), 1);
                    s.why[ix(&s, src)] = a->op == FCG_OP_MATMUL
                                             ? "read transposed by a matmul (a cuBLAS flag, not "
                                               "a copy), which reads stored buffers"
                                             : "read reversed by the stencil kernel (flipped "
                                               "weights, not a copy), which reads stored buffers";
                }
                continue;
            }
            if (!is_leaf(in) && !s.mat[ix(&s, in)]) {
                set_mat(&s, ix(&s, in), 1);
                s.why[ix(&s, in)] = "input of a library call, which reads stored buffers";
            }
        }
    }
    /* Scans are kernels of their own: their consumers read them from memory. */
    for (size_t i = 0; i < n; i++)
        if (!is_leaf(s.ord[i]) && is_scan(s.ord[i]) && !s.mat[i]) {
            set_mat(&s, i, 1);
            s.why[i] = "a scan is a kernel of its own (stored; elementwise consumers that read "
                       "it where it is computed join that kernel)";
        }
    /* Scatters update a stored buffer in place: kernels of their own. */
    for (size_t i = 0; i < n; i++)
        if (!is_leaf(s.ord[i]) && is_scatter(s.ord[i]) && !s.mat[i]) {
            set_mat(&s, i, 1);
            s.why[i] = "a scatter is stored: a copy of its array, then its updates in place";
        }
    /* A user kernel's raw inputs: its code indexes them itself, so they are stored buffers. */
    for (size_t i = 0; i < n; i++) {
        fc_array *a = s.ord[i];
        if (is_leaf(a) || kind_of(a) != FCG_KIND_USER) continue;
        const fcg_user_kernel *uk = fcg_user_find(ctx, (uint64_t)a->p.ival);
        for (int k = 0; uk && k < a->nin && k < uk->nin; k++)
            if (uk->in[k].raw && !is_leaf(a->in[k]) && !s.mat[ix(&s, a->in[k])]) {
                set_mat(&s, ix(&s, a->in[k]), 1);
                s.why[ix(&s, a->in[k])] = "raw input of a user kernel, which indexes a stored buffer";
            }
    }
    /* Cost of recomputing each node: inline ops below it (an upper bound on a DAG). */
    for (size_t i = 0; i < n; i++) {
        uint64_t c = s.leaf[i] ? 0 : 1;
        for (int32_t e = s.edges.first[i]; e < s.edges.first[i + 1] && !s.leaf[i]; e++)
            c += s.cost[s.edges.pos[e]];
        s.cost[i] = c > (1u << 30) ? (1u << 30) : (uint32_t)c;
    }
    choose_roots(&s, reg, seen);
    absorb_epilogues(&s, p);

    for (size_t i = 0; i < n; i++) nroots += s.mat[i] != 0;
    if (nroots == 0) { /* everything asked for is already a value */
        st = FC_OK;
        goto done;
    }
    groups = fcg_calloc(ctx, nroots * sizeof *groups);
    group_of = fcg_malloc(ctx, n * sizeof *group_of); /* root -> its group, -1 elsewhere */
    if (!groups || !group_of) goto done;
    for (size_t i = 0; i < n; i++) group_of[i] = -1;
    fcp_kernel *proto = fcg_calloc(ctx, nroots * sizeof *proto);
    if (!proto) goto done;
    for (size_t i = 0; i < n; i++) {
        if (!s.mat[i]) continue;
        fc_array *r = s.ord[i];
        group *g = &groups[ngroups];
        fcp_kernel *k = &proto[ngroups];
        ngroups++;
        g->nroot = 1;
        g->roots[0] = (int)i;
        group_of[i] = (int)(g - groups);
        size_t m = collect(&s, r, reg);
        const char *why = NULL;
        bool lib = is_lib(r) || s.epilogue[i] == 1;
        bool long_rows = false;
        fit_kind fit = lib ? FIT_NONE : classify(&s, r, reg, m, &why, &long_rows);
        k->kind = lib                 ? FCP_KERNEL_LIB
                  : fit == FIT_REDUCE ? FCP_KERNEL_REDUCE
                  : fit == FIT_ROW    ? FCP_KERNEL_ROW
                  : fit == FIT_SCAN   ? FCP_KERNEL_SCAN
                  : fit == FIT_SCATTER ? FCP_KERNEL_SCATTER
                                      : FCP_KERNEL_EW;
        if (k->kind == FCP_KERNEL_SCAN) k->rmask = 1u << r->p.axis;
        k->long_rows = k->kind == FCP_KERNEL_ROW && long_rows;
        g->kind = (int)k->kind;
        /* a scatter runs over its updates; a compaction over its mask, not its selection */
        const fc_array *space = k->kind == FCP_KERNEL_SCATTER ? r->in[2]
                                : r->op == FCG_OP_COMPRESS   ? r->in[0]
                                                             : r;
        for (size_t j = 0; j < m && k->kind != FCP_KERNEL_EW && k->kind != FCP_KERNEL_LIB &&
                           k->kind != FCP_KERNEL_SCAN && k->kind != FCP_KERNEL_SCATTER;
             j++)
            if (is_reduce(reg[j]) && !is_leaf(reg[j]) && (reg[j] == r || !s.mat[ix(&s, reg[j])])) {
                space = reg[j]->in[0];
                k->rmask = reg[j]->p.axes;
                break;
            }
        k->ndim = space->ndim;
        memcpy(k->space, space->shape, sizeof k->space);
        if (s.why[i] && (st = add_boundary(p, &p->boundary_cap, r, s.why[i])) != FC_OK) {
            fcg_free(ctx, proto, nroots * sizeof *proto);
            goto done;
        }
    }
    /* A scan kernel takes in the elementwise kernels over its space that read it at the
     * element it computes (its epilogue: `cumsum(x) / n` is one kernel). */
    for (size_t a = 0; a < ngroups; a++) {
        /* (a compaction stores at places of its own, not at the element it computes) */
        if (proto[a].kind != FCP_KERNEL_SCAN || s.ord[groups[a].roots[0]]->op == FCG_OP_COMPRESS)
            continue;
        for (size_t b = 0; b < ngroups; b++) {
            if (b == a || groups[b].dead || proto[b].kind != FCP_KERNEL_EW ||
                proto[b].ndim != proto[a].ndim ||
                memcmp(proto[b].space, proto[a].space, (size_t)proto[a].ndim * 8) != 0 ||
                groups[a].nroot + groups[b].nroot > 16)
                continue;
            if (!reads_at_element(&s, groups, group_of, &proto[a], (int)a, (int)b, reg, seen) ||
                union_loads(&s, &groups[a], &groups[b], reg, seen) > FCP_MAX_LEAVES)
                continue;
            for (int q = 0; q < groups[b].nroot; q++) {
                group_of[groups[b].roots[q]] = (int)a;
                groups[a].roots[groups[a].nroot++] = groups[b].roots[q];
            }
            groups[b].dead = true;
        }
    }
    for (size_t b = 1; b < ngroups; b++)
        for (size_t a = 0; a < b; a++) {
            if (groups[a].dead || groups[b].dead || !same_space(&proto[a], &proto[b])) continue;
            if (proto[a].kind == FCP_KERNEL_SCAN || proto[b].kind == FCP_KERNEL_SCAN) continue;
            if (groups[a].nroot + groups[b].nroot > 16) continue;
            /* Independent kernels merge; so do elementwise ones where one reads the other's
             * outputs at the element it computes (an optimizer step returning p, m and v, p
             * computed from m and v: m and v are computed once, stored and used in registers). */
            bool b_reads_a = reaches(&s, groups, group_of, (int)b, (int)a, seen);
            bool a_reads_b = reaches(&s, groups, group_of, (int)a, (int)b, seen);
            if (b_reads_a || a_reads_b) {
                int prod = b_reads_a ? (int)a : (int)b, cons = b_reads_a ? (int)b : (int)a;
                if (b_reads_a && a_reads_b) continue;
                bool at_element =
                    proto[a].kind == FCP_KERNEL_EW && proto[b].kind == FCP_KERNEL_EW &&
                    reads_at_element(&s, groups, group_of, &proto[prod], prod, cons, reg, seen);
                if (!at_element && !online_merge(&s, groups, &proto[prod], prod, cons, reg))
                    continue;
            }
            if (union_loads(&s, &groups[a], &groups[b], reg, seen) > FCP_MAX_LEAVES) continue;
            /* Row kernels merge while their rows still fit on chip together, or when both
             * stream their rows already (a merged kernel reads each buffer as often). */
            bool both_long = proto[a].long_rows && proto[b].long_rows;
            if (proto[a].kind == FCP_KERNEL_ROW && !both_long &&
                union_row_bytes(&s, &groups[a], &groups[b], &proto[a], reg, seen) > FCP_ROW_MAX_BYTES)
                continue;
            for (int q = 0; q < groups[b].nroot; q++) {
                group_of[groups[b].roots[q]] = (int)a;
                groups[a].roots[groups[a].nroot++] = groups[b].roots[q];
            }
            groups[b].dead = true;
            break;
        }
    for (size_t g = 0; g < ngroups; g++) nk += !groups[g].dead;
    p->kernels = fcg_calloc(ctx, nk * sizeof *p->kernels);
    if (!p->kernels) {
        fcg_free(ctx, proto, nroots * sizeof *proto);
        goto done;
    }
    for (size_t g = 0; g < ngroups; g++) {
        if (groups[g].dead) continue;
        fcp_kernel *k = &p->kernels[p->nkernel++];
        *k = proto[g];
        if ((st = build_kernel(&s, &groups[g], k, reg, seen)) != FC_OK) {
            fcg_free(ctx, proto, nroots * sizeof *proto);
            goto done;
        }
    }
    fcg_free(ctx, proto, nroots * sizeof *proto);
    /* Order: a kernel runs after every kernel whose output it loads. Merging can put a
     * consumer's group before a producer's, so sort stably by moving producers up. */
    producer = seen;
    for (size_t i = 0; i < n; i++) producer[i] = -1;
    for (int i = 0; i < p->nkernel; i++)
        for (int q = 0; q < p->kernels[i].nout; q++) producer[ix(&s, p->kernels[i].outs[q])] = i;
    for (int guard = 0; guard < p->nkernel * p->nkernel + 1; guard++) {
        bool moved = false;
        for (int i = 0; i < p->nkernel && !moved; i++)
            for (int l = 0; l < p->kernels[i].nleaf && !moved; l++) {
                int prod = producer[ix(&s, p->kernels[i].leaves[l])];
                if (prod <= i) continue;
                fcp_kernel tmp = p->kernels[prod];
                memmove(&p->kernels[i + 1], &p->kernels[i], (size_t)(prod - i) * sizeof tmp);
                p->kernels[i] = tmp;
                for (int j = i; j <= prod; j++)
                    for (int q = 0; q < p->kernels[j].nout; q++)
                        producer[ix(&s, p->kernels[j].outs[q])] = j;
                moved = true;
            }
        if (!moved) break;
    }
    /* Merging refuses cycles, so the sort always ends with producers first; a plan that
     * still reads a buffer before writing it would compute garbage, so say so instead. */
    for (int i = 0; i < p->nkernel; i++)
        for (int l = 0; l < p->kernels[i].nleaf; l++)
            if (producer[ix(&s, p->kernels[i].leaves[l])] > i) {
                st = fcg_error(ctx, FC_ERR_UNSUPPORTED, "fusion: kernels %d and %d depend on "
                               "each other (a fusec bug: please report the program)", i,
                               producer[ix(&s, p->kernels[i].leaves[l])]);
                goto done;
            }
    st = split_scatters(&s, p, reg, seen);
    nk = (size_t)p->nkernel; /* the kernels' array now has this size */
    if (st != FC_OK) goto done;
done:
    if (st == FC_ERR_NOMEM) fcg_error(ctx, st, "fusion: out of memory");
    if (st != FC_OK && p->kernels) {
        for (int i = 0; i < p->nkernel; i++) kernel_free(ctx, &p->kernels[i]);
        fcg_free(ctx, p->kernels, nk * sizeof *p->kernels);
        p->kernels = NULL;
        p->nkernel = 0;
    }
    fcg_free(ctx, groups, nroots * sizeof *groups);
    fcg_free(ctx, group_of, n * sizeof *group_of);
    fcg_free(ctx, s.mat, n);
    fcg_free(ctx, s.region, n * sizeof *s.region);
    fcg_free(ctx, s.nregions, n * sizeof *s.nregions);
    fcg_free(ctx, s.level, n * sizeof *s.level);
    fcg_free(ctx, s.cost, n * sizeof *s.cost);
    fcg_free(ctx, s.why, n * sizeof *s.why);
    fcg_free(ctx, s.stack, nst * sizeof *s.stack);
    fcg_free(ctx, s.amap, n * sizeof *s.amap);
    fcg_free(ctx, s.sorted, n * sizeof *s.sorted);
    fcg_free(ctx, s.epilogue, n);
    fcg_free(ctx, reg, (n + 1) * sizeof *reg);
    fcg_free(ctx, seen, (n + 1) * sizeof *seen);
    fcg_free(ctx, s.leaf, n);
    fcg_topo_edges_free(ctx, &s.edges);
    fcg_free(ctx, s.reg_ix, (n + 1) * sizeof *s.reg_ix);
    fcg_free(ctx, s.istack, (n + 1) * sizeof *s.istack);
    fcg_free(ctx, s.ord, n * sizeof *s.ord);
    fcg_nodemap_free(&s.pos);
    return st;
}

/* ---- scheduling: buffers and their reuse ------------------------------------------------ */

static fc_status schedule(fc_ctx *ctx, fcp_plan *p) {
    int nmat = 0;
    /* A scatter's updates kernel stores the node its copy kernel stored: one buffer. */
    for (int i = 0; i < p->nkernel; i++)
        if (p->kernels[i].kind != FCP_KERNEL_SCATTER) nmat += p->kernels[i].nout;
    if (nmat == 0) return FC_OK;
    p->mat = fcg_malloc(ctx, (size_t)nmat * sizeof *p->mat);
    p->mat_buf = fcg_malloc(ctx, (size_t)nmat * sizeof *p->mat_buf);
    p->mat_last_use = fcg_malloc(ctx, (size_t)nmat * sizeof *p->mat_last_use);
    p->buf_bytes = fcg_malloc(ctx, (size_t)nmat * sizeof *p->buf_bytes);
    int *busy = fcg_calloc(ctx, (size_t)nmat * sizeof *busy); /* occupant + 1, 0: free */
    if (!p->mat || !p->mat_buf || !p->mat_last_use || !p->buf_bytes || !busy) {
        fcg_free(ctx, busy, (size_t)nmat * sizeof *busy);
        p->nmat = nmat; /* sizes for fcp_plan_destroy */
        p->buf_cap = nmat;
        return fcg_error(ctx, FC_ERR_NOMEM, "schedule: out of memory");
    }
    p->nmat = nmat;
    p->buf_cap = nmat;
    int m = 0;
    for (int i = 0; i < p->nkernel; i++)
        for (int q = 0; q < p->kernels[i].nout && p->kernels[i].kind != FCP_KERNEL_SCATTER; q++) {
            fc_array *a = p->kernels[i].outs[q];
            int last = i;
            bool requested = false;
            for (int o = 0; o < p->nout; o++) requested |= p->outs[o] == a;
            for (int j = i + 1; j < p->nkernel; j++) {
                for (int l = 0; l < p->kernels[j].nleaf; l++)
                    if (p->kernels[j].leaves[l] == a) last = j;
                if (p->kernels[j].kind == FCP_KERNEL_SCATTER && p->kernels[j].outs[0] == a &&
                    last < j)
                    last = j;
            }
            p->mat[m] = a;
            p->mat_last_use[m] = requested ? p->nkernel : last;
            m++;
        }
    /* Liveness: before kernel i, slots whose last reader ran are free again; each output of
     * kernel i takes the smallest free slot big enough, or a new one. */
    int nbuf = 0;
    m = 0;
    for (int i = 0; i < p->nkernel; i++) {
        /* A slot is free once the node in it has had its last reader (a slot freed and
         * taken again belongs to its new occupant). */
        for (int j = 0; j < m; j++)
            if (p->mat_last_use[j] < i && busy[p->mat_buf[j]] == j + 1) busy[p->mat_buf[j]] = 0;
        for (int q = 0; q < p->kernels[i].nout && p->kernels[i].kind != FCP_KERNEL_SCATTER;
             q++, m++) {
            const fc_array *a = p->mat[m];
            size_t bytes = fcg_node_numel(a) * fc_dtype_size((fc_dtype)a->dtype);
            /* a scatter's 1- and 2-byte updates compare-and-swap the 4-byte word around them */
            if (kind_of(a) == FCG_KIND_SCATTER) bytes = (bytes + 3) / 4 * 4;
            int best = -1;
            for (int b = 0; b < nbuf; b++)
                if (!busy[b] && p->buf_bytes[b] >= bytes &&
                    (best < 0 || p->buf_bytes[b] < p->buf_bytes[best]))
                    best = b;
            if (best < 0) {
                best = nbuf++;
                p->buf_bytes[best] = bytes;
            }
            busy[best] = m + 1;
            p->mat_buf[m] = best;
        }
    }
    fcg_free(ctx, busy, (size_t)nmat * sizeof *busy);
    p->nbuf = nbuf;
    return FC_OK;
}

/* ---- the pipeline ----------------------------------------------------------------------- */

static int count_nodes(fc_ctx *ctx, fc_array *const *arrays, int n) {
    fc_array **ord;
    size_t count;
    if (fcg_topo_order(ctx, arrays, n, true, &ord, &count) != FC_OK) return -1;
    fcg_free(ctx, ord, count * sizeof *ord);
    return (int)count;
}

fc_status fcp_plan_build(fc_ctx *ctx, fc_array *const *arrays, int n, fcp_plan **out) {
    *out = NULL;
    if (n < 1) return fcg_error(ctx, FC_ERR_INVALID, "plan: no arrays to compute");
    for (int i = 0; i < n; i++)
        if (arrays[i]->status != FC_OK) return fcg_error(ctx, arrays[i]->status, "%s",
                                                         arrays[i]->errmsg);
    fcp_plan *p = fcg_calloc(ctx, sizeof *p);
    if (!p) return fcg_error(ctx, FC_ERR_NOMEM, "plan: out of memory");
    p->ctx = ctx;
    p->outs = fcg_malloc(ctx, (size_t)n * sizeof *p->outs);
    if (!p->outs) {
        fcg_free(ctx, p, sizeof *p);
        return fcg_error(ctx, FC_ERR_NOMEM, "plan: out of memory");
    }
    for (int i = 0; i < n; i++) {
        p->outs[i] = arrays[i];
        fcg_retain(arrays[i]);
    }
    p->nout = n;
    fcp_log_graph(ctx, "input", p->outs, n);
    fcp_pass_stats stats = {0, 0};
    /* The nodes the passes make hash their keys only if a plan key ever reaches them. */
    ctx->planning++;
    fc_status st = fcp_simplify(ctx, p->outs, n, &stats);
    if (st == FC_OK) {
        fcp_log_graph(ctx, "after simplify", p->outs, n);
        /* CSE happened as nodes were built (hash-consing); DCE is the walk from the outputs:
         * both are named here so the log shows the whole pipeline. */
        if (fcp_log_enabled("passes")) {
            fprintf(stderr, "fusec: pass cse: free by hash-consing; pass dce: %d live nodes\n",
                    count_nodes(ctx, p->outs, n));
        }
        st = fuse(ctx, p);
    }
    if (st == FC_OK) st = schedule(ctx, p);
    ctx->planning--;
    if (st != FC_OK) {
        fcp_plan_destroy(p);
        return st;
    }
    if (fcp_log_enabled("passes") || fcp_log_enabled("fusion")) {
        char *d = fcp_plan_describe(p);
        if (d) fprintf(stderr, "%s", d);
        fcg_strfree(ctx, d);
    }
    *out = p;
    return FC_OK;
}

/* ---- description ------------------------------------------------------------------------ */

fc_status fcp_plan_numbering(const fcp_plan *p, fcg_nodemap *out) {
    fc_array **ord;
    size_t count;
    memset(out, 0, sizeof *out);
    fc_status st = fcg_topo_order(p->ctx, p->outs, p->nout, true, &ord, &count);
    if (st != FC_OK) return st;
    st = fcg_nodemap_positions(p->ctx, ord, count, out);
    fcg_free(p->ctx, ord, count * sizeof *ord);
    return st;
}

static void sb_node(fcg_sb *b, const fcg_nodemap *num, const fc_array *a) {
    char sh[200];
    fcg_sb_printf(b, "%%%lld %s %s%s", (long long)fcg_nodemap_get(num, a), fcg_node_name(a),
              fc_dtype_name((fc_dtype)a->dtype), fcg_shape_str(sh, a->ndim, a->shape));
}

char *fcp_plan_describe(const fcp_plan *p) {
    fc_ctx *ctx = p->ctx;
    fcg_sb b = {ctx, NULL, 0, 0, false};
    /* Nodes are numbered by a walk of their own: the text depends on no earlier walk. */
    fcg_nodemap num;
    if (fcp_plan_numbering(p, &num) != FC_OK) return NULL;
    fcg_sb_printf(&b, "plan: %d kernel%s, %d buffer%s\n", p->nkernel, p->nkernel == 1 ? "" : "s",
              p->nbuf, p->nbuf == 1 ? "" : "s");
    char sh[200];
    for (int i = 0; i < p->nkernel; i++) {
        const fcp_kernel *k = &p->kernels[i];
        fcg_sb_printf(&b, "kernel %d: %s%s over %s", i, fcp_kernel_kind_names[k->kind],
                  k->long_rows ? " (long rows, streamed)" : "",
                  fcg_shape_str(sh, k->ndim, k->space));
        if (k->rmask) {
            fcg_sb_printf(&b, k->kind == FCP_KERNEL_SCAN ? " along axis" : " reducing axes");
            for (int d = 0; d < k->ndim; d++)
                if (k->rmask & (1u << d)) fcg_sb_printf(&b, " %d", d);
        }
        fcg_sb_printf(&b, "\n  stores:");
        for (int q = 0; q < k->nout; q++) {
            fcg_sb_printf(&b, " ");
            sb_node(&b, &num, k->outs[q]);
        }
        fcg_sb_printf(&b, "\n  loads:");
        for (int q = 0; q < k->nleaf; q++) {
            fcg_sb_printf(&b, " ");
            sb_node(&b, &num, k->leaves[q]);
        }
        fcg_sb_printf(&b, "\n  fused ops (%d):", k->nnode);
        for (int q = 0; q < k->nnode; q++) fcg_sb_printf(&b, " %s", fcg_node_name(k->nodes[q]));
        fcp_epilogue epi;
        if (fcp_lib_epilogue(k, &epi))
            fcg_sb_printf(&b, "\n  epilogue in the library call (cuBLASLt): %s",
                          fcp_epilogue_name(&epi));
        fcg_sb_printf(&b, "\n");
    }
    for (int i = 0; i < p->nboundary; i++) {
        fcg_sb_printf(&b, "boundary at ");
        sb_node(&b, &num, p->boundaries[i].node);
        fcg_sb_printf(&b, ": %s\n", p->boundaries[i].reason);
    }
    fcg_nodemap_free(&num);
    return fcg_sb_finish(&b);
}
