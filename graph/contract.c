/*
 * graph/contract.c - NumPy's tensor contractions as composites: dot, vdot, inner, outer,
 * tensordot, einsum, kron and linalg.matrix_power.
 *
 * Every contraction is described as einsum describes it: operands whose axes carry labels,
 * and the labels of the result. contract() lowers that description to existing ops:
 *   - a label repeated within one operand is that operand's diagonal (fc_diagonal, a view);
 *   - an axis of extent 1 whose label is longer elsewhere broadcasts: the operand does not
 *     vary along it, so the axis is dropped;
 *   - a label of one operand that no other operand and not the result has is summed first;
 *   - then operands combine two at a time, the pair whose result is smallest first (a greedy
 *     order, as opt_einsum's). A pair that shares a label to sum is one fc_matmul of
 *     [batch..., M, K] by [batch..., K, N] (on the GPU one cuBLAS batched GEMM), its operands
 *     permuted and merged into those groups by views; a pair with nothing to sum is a
 *     broadcast multiply, which fuses with its consumers.
 * An operand already laid out as [batch..., K, M] is handed to matmul as a swap of its last
 * two axes, which cuBLAS reads with its transpose flag instead of a copy; one whose groups
 * need merging (several labels in M, K or N) goes through a reshape, which the fusion pass
 * stores before the library call.
 *
 * Operands are cast to the result dtype first (the promotion of all of them, Python scalars
 * taken as arrays as np.asarray makes them), so the GEMM runs in that dtype; integer and bool
 * products wrap as NumPy's loops do (bool: any of the ands).
 */
#include "graph.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Labels: einsum's letters are 0..51 (ASCII order: 'A'..'Z' then 'a'..'z'), its ellipsis
 * dimensions ELLIPSIS_LABEL and up; the other functions number the axes themselves. */
#define NLABELS 64
#define NLETTERS 52
#define ELLIPSIS_LABEL NLETTERS
/* NumPy's limit on einsum's operands (NPY_MAXARGS). */
#define MAX_OPERANDS 64

typedef uint64_t labset;
#define BIT(l) ((labset)1 << (l))

typedef struct term {
    fc_array *a;
    int n; /* a's ndim */
    int lab[FC_MAX_DIMS];
} term;

static labset labels_of(const term *t) {
    labset s = 0;
    for (int d = 0; d < t->n; d++) s |= BIT(t->lab[d]);
    return s;
}

static int position(const int *lab, int n, int l) {
    for (int d = 0; d < n; d++)
        if (lab[d] == l) return d;
    return -1;
}

/* a in dtype dt and strongly typed: these functions take a Python scalar as the array
 * np.asarray makes of it. */
static fc_array *as_dtype(fc_array *a, fc_dtype dt) {
    return a->dtype == dt && !a->weak ? a : fc_cast(a, dt);
}

/* The promotion of the operands' dtypes (np.result_type of the arrays). */
static fc_dtype result_dtype(fc_array *const *in, int n) {
    fc_dtype dt = (fc_dtype)in[0]->dtype;
    for (int i = 1; i < n; i++) fc_promote_types(dt, (fc_dtype)in[i]->dtype, &dt);
    return dt;
}

/* ---- the lowering ----------------------------------------------------------------------- */

/* Repeated labels become diagonals: fc_diagonal drops both axes and appends the diagonal. */
static void take_diagonals(term *t) {
    for (int i = 0; i < t->n; i++)
        for (int j = i + 1; j < t->n; j++) {
            if (t->lab[i] != t->lab[j]) continue;
            int l = t->lab[i], k = 0;
            t->a = fc_diagonal(t->a, 0, i, j);
            for (int d = 0; d < t->n; d++)
                if (d != i && d != j) t->lab[k++] = t->lab[d];
            t->lab[k++] = l;
            t->n = k;
            i = -1; /* the axes moved: look again from the start */
            break;
        }
}

/* Drops the extent-1 axes whose labels are longer in another operand (they broadcast). */
static void drop_broadcast(term *t, const int64_t *ext) {
    fc_shape sh = {0, {0}};
    for (int d = 0; d < t->n; d++)
        if (t->a->shape[d] != 1 || ext[t->lab[d]] == 1) {
            sh.dim[sh.ndim] = t->a->shape[d];
            t->lab[sh.ndim++] = t->lab[d];
        }
    if (sh.ndim == t->n) return;
    t->a = fc_reshape(t->a, sh);
    t->n = sh.ndim;
}

/* Sums the axes whose labels are in `drop`, staying in dtype dt (NumPy's loops accumulate in
 * the operands' dtype: fc_sum's wider integer result wraps back when cast). */
static void sum_labels(term *t, labset drop, fc_dtype dt) {
    fc_axes axes = {0, {0}};
    int k = 0;
    for (int d = 0; d < t->n; d++) {
        if (drop & BIT(t->lab[d])) axes.axis[axes.n++] = d;
        else t->lab[k++] = t->lab[d];
    }
    if (axes.n == 0) return;
    t->a = as_dtype(fc_sum(t->a, axes, false), dt);
    t->n = k;
}

/* a with its axes in the order of labels want[0..n) (a permutation of its labels). */
static fc_array *arrange(const term *t, const int *want) {
    fc_axes perm = {t->n, {0}};
    bool same = true;
    for (int d = 0; d < t->n; d++) {
        perm.axis[d] = position(t->lab, t->n, want[d]);
        same = same && perm.axis[d] == d;
    }
    return same ? t->a : fc_permute(t->a, perm);
}

static int64_t extent_product(const int64_t *ext, const int *lab, int n) {
    int64_t p = 1;
    for (int i = 0; i < n; i++) p *= ext[lab[i]];
    return p;
}

/* One operand of a pair's matmul: the batch labels B as axes of their own (one merged axis
 * when there are too many for matmul's result), then the two groups g1 and g2 each merged
 * into one axis: [B..., g1, g2]. Stored as [B..., g2, g1] with one label per group, it is
 * that array with its last two axes swapped, which matmul reads with cuBLAS's transpose
 * flag. With no batch and no free labels it is a vector, which matmul takes as a row (left
 * operand, [g1 = M, g2 = K]) or a column (right operand, [g1 = K, g2 = N]). */
static fc_array *matmul_operand(const term *t, const int64_t *ext, const int *B, int nb,
                                const int *g1, int n1, const int *g2, int n2, bool right) {
    int want[FC_MAX_DIMS], n = 0;
    for (int i = 0; i < nb; i++) want[n++] = B[i];
    for (int i = 0; i < n1; i++) want[n++] = g1[i];
    for (int i = 0; i < n2; i++) want[n++] = g2[i];
    if (n1 == 1 && n2 == 1) {
        int swapped[FC_MAX_DIMS];
        memcpy(swapped, B, (size_t)nb * sizeof *B);
        swapped[nb] = g2[0];
        swapped[nb + 1] = g1[0];
        if (memcmp(swapped, t->lab, (size_t)n * sizeof *swapped) == 0) {
            fc_axes swap = {n, {0}};
            for (int d = 0; d < n; d++) swap.axis[d] = d;
            swap.axis[n - 2] = n - 1;
            swap.axis[n - 1] = n - 2;
            return fc_permute(t->a, swap);
        }
    }
    fc_array *x = arrange(t, want);
    fc_shape sh = {0, {0}};
    if (nb == 0 && (right ? n2 : n1) == 0) {
        sh.ndim = 1;
        sh.dim[0] = extent_product(ext, g1, n1) * extent_product(ext, g2, n2);
    } else {
        if (nb <= FC_MAX_DIMS - 2)
            for (int i = 0; i < nb; i++) sh.dim[sh.ndim++] = ext[B[i]];
        else
            sh.dim[sh.ndim++] = extent_product(ext, B, nb);
        sh.dim[sh.ndim++] = extent_product(ext, g1, n1);
        sh.dim[sh.ndim++] = extent_product(ext, g2, n2);
    }
    if (sh.ndim == x->ndim && memcmp(sh.dim, x->shape, (size_t)sh.ndim * sizeof *sh.dim) == 0)
        return x;
    return fc_reshape(x, sh);
}

/* The product of x and y with the labels of `keep` kept and their shared others summed. */
static term pair(const term *x, const term *y, labset keep, const int64_t *ext) {
    labset sx = labels_of(x), sy = labels_of(y);
    int B[FC_MAX_DIMS], K[FC_MAX_DIMS], M[FC_MAX_DIMS], N[FC_MAX_DIMS];
    int nb = 0, nk = 0, nm = 0, nn = 0;
    for (int d = 0; d < x->n; d++) {
        int l = x->lab[d];
        if (!(sy & BIT(l))) M[nm++] = l;
        else if (keep & BIT(l)) B[nb++] = l;
        else K[nk++] = l;
    }
    for (int d = 0; d < y->n; d++)
        if (!(sx & BIT(y->lab[d]))) N[nn++] = y->lab[d];
    term z = {NULL, 0, {0}};
    fc_shape sh = {0, {0}};
    if (nk == 0) {
        /* Nothing to sum: x's labels then y's own, x with unit axes for y's, y permuted to
         * that order with unit axes for x's own (leading ones broadcast unwritten). */
        z = *x;
        for (int i = 0; i < nn; i++) z.lab[z.n++] = N[i];
        sh.ndim = z.n;
        for (int d = 0; d < z.n; d++) sh.dim[d] = d < x->n ? x->a->shape[d] : 1;
        fc_array *xa = nn ? fc_reshape(x->a, sh) : x->a;
        int want[FC_MAX_DIMS], nw = 0, first = -1;
        sh.ndim = 0;
        for (int d = 0; d < z.n; d++) {
            bool in_y = sy & BIT(z.lab[d]);
            if (in_y) want[nw++] = z.lab[d];
            if (in_y && first < 0) first = d;
            if (first >= 0) sh.dim[sh.ndim++] = in_y ? ext[z.lab[d]] : 1;
        }
        fc_array *yb = arrange(y, want);
        if (sh.ndim != y->n) yb = fc_reshape(yb, sh);
        z.a = fc_mul(xa, yb);
        return z;
    }
    if (nm == 0 && nn == 0 && nb > 0) {
        /* Batched inner products: a GEMM of 1 x 1 matrices would only add copies, while a
         * multiply and a sum are one fused reduction. */
        int want[FC_MAX_DIMS];
        memcpy(want, B, (size_t)nb * sizeof *B);
        memcpy(want + nb, K, (size_t)nk * sizeof *K);
        fc_axes axes = {nk, {0}};
        for (int i = 0; i < nk; i++) axes.axis[i] = nb + i;
        z.n = nb;
        memcpy(z.lab, B, (size_t)nb * sizeof *B);
        z.a = as_dtype(fc_sum(fc_mul(arrange(x, want), arrange(y, want)), axes, false),
                       (fc_dtype)x->a->dtype);
        return z;
    }
    fc_array *p = fc_matmul(matmul_operand(x, ext, B, nb, M, nm, K, nk, false),
                            matmul_operand(y, ext, B, nb, K, nk, N, nn, true));
    for (int i = 0; i < nb; i++) z.lab[z.n++] = B[i];
    for (int i = 0; i < nm; i++) z.lab[z.n++] = M[i];
    for (int i = 0; i < nn; i++) z.lab[z.n++] = N[i];
    sh.ndim = z.n;
    for (int d = 0; d < z.n; d++) sh.dim[d] = ext[z.lab[d]];
    z.a = sh.ndim == p->ndim && memcmp(sh.dim, p->shape, (size_t)sh.ndim * sizeof *sh.dim) == 0
              ? p
              : fc_reshape(p, sh);
    return z;
}

/* Contracts t[0..n) (n >= 1; their arrays in the private scope of the caller, which has
 * checked that repeated labels of an operand have equal extents and that a label's extents
 * other than 1 agree) into the labels out[0..nout), in dtype dt. Consumes t. */
static fc_array *contract(fc_ctx *ctx, const char *name, fc_dtype dt, term *t, int n,
                          const int *out, int nout) {
    labset outset = 0;
    for (int i = 0; i < nout; i++) outset |= BIT(out[i]);
    int64_t ext[NLABELS];
    for (int l = 0; l < NLABELS; l++) ext[l] = 1;
    for (int i = 0; i < n; i++) {
        t[i].a = as_dtype(t[i].a, dt);
        take_diagonals(&t[i]);
        for (int d = 0; d < t[i].n; d++)
            if (t[i].a->shape[d] != 1) ext[t[i].lab[d]] = t[i].a->shape[d];
    }
    for (int i = 0; i < n; i++) drop_broadcast(&t[i], ext);
    for (int i = 0; i < n; i++) {
        labset others = outset;
        for (int j = 0; j < n; j++)
            if (j != i) others |= labels_of(&t[j]);
        sum_labels(&t[i], labels_of(&t[i]) & ~others, dt);
    }
    while (n > 1) {
        int bi = -1, bj = -1;
        double best = INFINITY;
        labset keep = 0;
        for (int i = 0; i < n; i++)
            for (int j = i + 1; j < n; j++) {
                labset others = outset;
                for (int k = 0; k < n; k++)
                    if (k != i && k != j) others |= labels_of(&t[k]);
                labset z = (labels_of(&t[i]) | labels_of(&t[j])) & others;
                if (__builtin_popcountll(z) > FC_MAX_DIMS) continue;
                double size = 1;
                for (int l = 0; l < NLABELS; l++)
                    if (z & BIT(l)) size *= (double)ext[l];
                if (bi < 0 || size < best) {
                    best = size;
                    bi = i, bj = j;
                    keep = others;
                }
            }
        if (bi < 0)
            return fcg_poison(ctx, FC_ERR_UNSUPPORTED, "%s: every pairwise product of the "
                              "operands would have more than %d dimensions", name, FC_MAX_DIMS);
        t[bi] = pair(&t[bi], &t[bj], keep, ext);
        memmove(&t[bj], &t[bj + 1], (size_t)(n - bj - 1) * sizeof *t);
        n--;
    }
    return arrange(&t[0], out);
}

/* ---- dot, vdot, inner, outer, tensordot -------------------------------------------------- */

/* Two operands labelled 0.. (a's axes) and a->ndim.. (b's), with b's axes in `pair_b`
 * relabelled to a's axes in `pair_a`; the result keeps a's other axes, then b's. */
static fc_array *contract_axes(fc_ctx *ctx, const char *name, fc_array *a, fc_array *b,
                               int npair, const int *pair_a, const int *pair_b) {
    fc_scope *scope = fc_scope_open(ctx);
    if (!scope) return fcg_poison(ctx, FC_ERR_NOMEM, "%s: out of memory", name);
    fc_array *in[2] = {a, b};
    term t[2] = {{a, a->ndim, {0}}, {b, b->ndim, {0}}};
    for (int d = 0; d < a->ndim; d++) t[0].lab[d] = d;
    for (int d = 0; d < b->ndim; d++) t[1].lab[d] = a->ndim + d;
    labset summed = 0;
    for (int i = 0; i < npair; i++) {
        t[1].lab[pair_b[i]] = pair_a[i];
        summed |= BIT(pair_a[i]);
    }
    int out[2 * FC_MAX_DIMS], nout = 0;
    for (int k = 0; k < 2; k++)
        for (int d = 0; d < t[k].n; d++)
            if (!(summed & BIT(t[k].lab[d]))) out[nout++] = t[k].lab[d];
    fc_array *r;
    if (nout > FC_MAX_DIMS) {
        char d1[FCG_DESC_MAX], d2[FCG_DESC_MAX];
        r = fcg_poison(ctx, FC_ERR_SHAPE, "%s: the result of %s and %s would have %d "
                       "dimensions (at most %d)", name, fcg_desc(d1, a), fcg_desc(d2, b), nout,
                       FC_MAX_DIMS);
    } else {
        r = contract(ctx, name, result_dtype(in, 2), t, 2, out, nout);
    }
    return fcg_scope_return(ctx, scope, r);
}

static fc_array *not_aligned(fc_ctx *ctx, const char *name, const fc_array *a, int da,
                             const fc_array *b, int db) {
    char d1[FCG_DESC_MAX], d2[FCG_DESC_MAX];
    return fcg_poison(ctx, FC_ERR_SHAPE, "%s: shapes %s and %s not aligned: %lld (dim %d) != "
                      "%lld (dim %d)", name, fcg_desc(d1, a), fcg_desc(d2, b),
                      (long long)a->shape[da], da, (long long)b->shape[db], db);
}

fc_array *fc_dot(fc_array *a, fc_array *b) {
    fc_array *in[2] = {a, b}, *early;
    fc_ctx *ctx = fcg_begin("dot", 2, in, &early);
    if (!ctx || early) return early;
    if (a->ndim == 0 || b->ndim == 0) return contract_axes(ctx, "dot", a, b, 0, NULL, NULL);
    int da = a->ndim - 1, db = b->ndim == 1 ? 0 : b->ndim - 2;
    if (a->shape[da] != b->shape[db]) return not_aligned(ctx, "dot", a, da, b, db);
    return contract_axes(ctx, "dot", a, b, 1, &da, &db);
}

fc_array *fc_inner(fc_array *a, fc_array *b) {
    fc_array *in[2] = {a, b}, *early;
    fc_ctx *ctx = fcg_begin("inner", 2, in, &early);
    if (!ctx || early) return early;
    if (a->ndim == 0 || b->ndim == 0) return contract_axes(ctx, "inner", a, b, 0, NULL, NULL);
    int da = a->ndim - 1, db = b->ndim - 1;
    if (a->shape[da] != b->shape[db]) return not_aligned(ctx, "inner", a, da, b, db);
    return contract_axes(ctx, "inner", a, b, 1, &da, &db);
}

/* a flattened, strongly typed (np.ravel of np.asarray(a)). */
static fc_array *flat(fc_array *a) {
    return fc_reshape(a->weak ? fc_cast(a, (fc_dtype)a->dtype) : a, FC_SHAPE(-1));
}

fc_array *fc_vdot(fc_array *a, fc_array *b) {
    fc_array *in[2] = {a, b}, *early;
    fc_ctx *ctx = fcg_begin("vdot", 2, in, &early);
    if (!ctx || early) return early;
    if (fcg_node_numel(a) != fcg_node_numel(b)) {
        char d1[FCG_DESC_MAX], d2[FCG_DESC_MAX];
        return fcg_poison(ctx, FC_ERR_SHAPE, "vdot: vectors have different lengths: %s and %s",
                          fcg_desc(d1, a), fcg_desc(d2, b));
    }
    fc_scope *scope = fc_scope_open(ctx);
    if (!scope) return fcg_poison(ctx, FC_ERR_NOMEM, "vdot: out of memory");
    fc_array *x = flat(a);
    if (fcg_is_complex((fc_dtype)a->dtype)) x = fc_conj(x);
    int axis = 0;
    return fcg_scope_return(ctx, scope, contract_axes(ctx, "vdot", x, flat(b), 1, &axis, &axis));
}

fc_array *fc_outer(fc_array *a, fc_array *b) {
    fc_array *in[2] = {a, b}, *early;
    fc_ctx *ctx = fcg_begin("outer", 2, in, &early);
    if (!ctx || early) return early;
    fc_scope *scope = fc_scope_open(ctx);
    if (!scope) return fcg_poison(ctx, FC_ERR_NOMEM, "outer: out of memory");
    /* np.multiply(a.ravel()[:, None], b.ravel()[None, :]) */
    fc_array *r = fc_mul(fc_reshape(flat(a), FC_SHAPE(-1, 1)), flat(b));
    return fcg_scope_return(ctx, scope, r);
}

fc_array *fc_tensordot(fc_array *a, fc_array *b, int axes) {
    fc_array *in[2] = {a, b}, *early;
    fc_ctx *ctx = fcg_begin("tensordot", 2, in, &early);
    if (!ctx || early) return early;
    /* NumPy pairs a's last `axes` axes with b's first ones; none for axes <= 0 */
    int n = axes > 0 ? axes : 0;
    if (n > a->ndim || n > b->ndim) {
        char d1[FCG_DESC_MAX], d2[FCG_DESC_MAX];
        return fcg_poison(ctx, FC_ERR_AXIS, "tensordot: cannot sum over %d axes of %s and %s",
                          n, fcg_desc(d1, a), fcg_desc(d2, b));
    }
    int pa[FC_MAX_DIMS], pb[FC_MAX_DIMS];
    for (int i = 0; i < n; i++) {
        pa[i] = a->ndim - n + i;
        pb[i] = i;
    }
    return fc_tensordot_axes(a, b, n, pa, pb);
}

/* Normalises tensordot's axes of one operand: in range, each once. */
static bool pair_axes(fc_ctx *ctx, const fc_array *x, int n, const int *axes, int *out,
                      fc_array **bad) {
    char d[FCG_DESC_MAX];
    uint32_t seen = 0;
    for (int i = 0; i < n; i++) {
        int ax = axes[i];
        if (ax < -x->ndim || ax >= x->ndim) {
            *bad = fcg_poison(ctx, FC_ERR_AXIS, "tensordot: axis %d is out of bounds for %s", ax,
                              fcg_desc(d, x));
            return false;
        }
        out[i] = ax < 0 ? ax + x->ndim : ax;
        if (seen & 1u << out[i]) {
            *bad = fcg_poison(ctx, FC_ERR_AXIS, "tensordot: duplicate axes are not allowed "
                              "(axis %d of %s)", ax, fcg_desc(d, x));
            return false;
        }
        seen |= 1u << out[i];
    }
    return true;
}

fc_array *fc_tensordot_axes(fc_array *a, fc_array *b, int n, const int *axes_a,
                            const int *axes_b) {
    fc_array *in[2] = {a, b}, *early;
    fc_ctx *ctx = fcg_begin("tensordot", 2, in, &early);
    if (!ctx || early) return early;
    if (n > 0 && (!axes_a || !axes_b))
        return fcg_poison(ctx, FC_ERR_NULL, "tensordot: axes_a or axes_b is NULL");
    if (n < 0 || n > FC_MAX_DIMS)
        return fcg_poison(ctx, FC_ERR_INVALID, "tensordot: %d pairs of axes (0 to %d)", n,
                          FC_MAX_DIMS);
    int pa[FC_MAX_DIMS], pb[FC_MAX_DIMS];
    if (!pair_axes(ctx, a, n, axes_a, pa, &early) ||
        !pair_axes(ctx, b, n, axes_b, pb, &early))
        return early;
    for (int i = 0; i < n; i++)
        if (a->shape[pa[i]] != b->shape[pb[i]]) {
            char d1[FCG_DESC_MAX], d2[FCG_DESC_MAX];
            return fcg_poison(ctx, FC_ERR_SHAPE, "tensordot: shape-mismatch for sum: axis %d of "
                              "%s has %lld, axis %d of %s has %lld", pa[i], fcg_desc(d1, a),
                              (long long)a->shape[pa[i]], pb[i], fcg_desc(d2, b),
                              (long long)b->shape[pb[i]]);
        }
    return contract_axes(ctx, "tensordot", a, b, n, pa, pb);
}

/* ---- einsum ----------------------------------------------------------------------------- */

/* Einsum's letters as labels, in ASCII order (which orders an implicit output). */
static int letter_label(char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return 26 + c - 'a';
    return -1;
}

static char label_letter(int l) { return (char)(l < 26 ? 'A' + l : 'a' + l - 26); }

/* What parsing the subscripts found: each operand's labels (an ellipsis as one -1 entry for
 * now) and the output's. */
typedef struct einsum_spec {
    int nlab[MAX_OPERANDS], lab[MAX_OPERANDS][FC_MAX_DIMS + 1];
    bool ellipsis[MAX_OPERANDS];
    int nbroadcast; /* the most dimensions an ellipsis stands for */
    bool explicit_out, out_ellipsis;
    int nout, out[FC_MAX_DIMS + 1];
} einsum_spec;

#define ELLIPSIS_MARK (-1)

/* Parses one term (an operand's or the output's) of [s, end): letters, spaces (ignored) and
 * at most one "...". `what` names it in messages. At most `cap` labels. */
static bool parse_term(fc_ctx *ctx, const char *s, const char *end, const char *what, int cap,
                       int *lab, int *nlab, bool *ellipsis, fc_array **bad) {
    *nlab = 0;
    *ellipsis = false;
    for (const char *p = s; p < end; p++) {
        if (*p == ' ') continue;
        if (*p == '.') {
            if (*ellipsis || end - p < 3 || p[1] != '.' || p[2] != '.') {
                *bad = fcg_poison(ctx, FC_ERR_VALUE, "einsum: subscripts contain a '.' that is "
                                  "not part of an ellipsis ('...') in %s", what);
                return false;
            }
            *ellipsis = true;
            lab[(*nlab)++] = ELLIPSIS_MARK;
            p += 2;
            continue;
        }
        int l = letter_label(*p);
        if (l < 0) {
            *bad = fcg_poison(ctx, FC_ERR_VALUE, "einsum: invalid subscript '%c' in %s: "
                              "subscripts must be letters", *p, what);
            return false;
        }
        if (*nlab - (*ellipsis ? 1 : 0) >= cap) {
            *bad = fcg_poison(ctx, FC_ERR_SHAPE, "einsum: too many subscripts for %s", what);
            return false;
        }
        lab[(*nlab)++] = l;
    }
    return true;
}

static bool parse_subscripts(fc_ctx *ctx, const char *subscripts, fc_array *const *ops, int n,
                             einsum_spec *sp, fc_array **bad) {
    const char *p = subscripts;
    char what[64];
    int count[NLETTERS] = {0};
    sp->nbroadcast = 0;
    for (int i = 0; i < n; i++) {
        const char *end = p + strcspn(p, ",-");
        if (i < n - 1 && *end != ',') {
            *bad = fcg_poison(ctx, FC_ERR_VALUE, "einsum: %d operands given, but the subscripts "
                              "\"%s\" name %d", n, subscripts, i + 1);
            return false;
        }
        snprintf(what, sizeof what, "operand %d", i);
        if (!parse_term(ctx, p, end, what, ops[i]->ndim, sp->lab[i], &sp->nlab[i],
                        &sp->ellipsis[i], bad))
            return false;
        int named = sp->nlab[i] - (sp->ellipsis[i] ? 1 : 0);
        if (!sp->ellipsis[i] && named != ops[i]->ndim) {
            char d[FCG_DESC_MAX];
            *bad = fcg_poison(ctx, FC_ERR_SHAPE, "einsum: operand %d is %s but its subscripts "
                              "name %d dimensions, and no '...' broadcasts the others", i,
                              fcg_desc(d, ops[i]), named);
            return false;
        }
        if (sp->ellipsis[i] && ops[i]->ndim - named > sp->nbroadcast)
            sp->nbroadcast = ops[i]->ndim - named;
        for (int k = 0; k < sp->nlab[i]; k++)
            if (sp->lab[i][k] >= 0) count[sp->lab[i][k]]++;
        p = end;
        if (i < n - 1) p++;
    }
    if (*p == ',') {
        int terms = n + 1;
        for (const char *q = p + 1; *q && *q != '-'; q++) terms += *q == ',';
        *bad = fcg_poison(ctx, FC_ERR_VALUE, "einsum: %d operand%s given, but the subscripts "
                          "\"%s\" name %d", n, n == 1 ? "" : "s", subscripts, terms);
        return false;
    }
    sp->explicit_out = *p != '\0';
    if (!sp->explicit_out) {
        /* NumPy's implicit output: the broadcast dimensions, then every letter used once, in
         * ASCII order */
        sp->nout = 0;
        sp->out_ellipsis = sp->nbroadcast > 0;
        if (sp->out_ellipsis) sp->out[sp->nout++] = ELLIPSIS_MARK;
        for (int l = 0; l < NLETTERS; l++)
            if (count[l] == 1) {
                if (sp->nout - (sp->out_ellipsis ? 1 : 0) + sp->nbroadcast >= FC_MAX_DIMS) {
                    *bad = fcg_poison(ctx, FC_ERR_SHAPE, "einsum: the output would have more "
                                      "than %d dimensions", FC_MAX_DIMS);
                    return false;
                }
                sp->out[sp->nout++] = l;
            }
        return true;
    }
    if (p[0] != '-' || p[1] != '>') {
        *bad = fcg_poison(ctx, FC_ERR_VALUE, "einsum: the subscripts \"%s\" do not contain a "
                          "proper '->' output", subscripts);
        return false;
    }
    p += 2;
    if (!parse_term(ctx, p, p + strlen(p), "the output", FC_MAX_DIMS, sp->out, &sp->nout,
                    &sp->out_ellipsis, bad))
        return false;
    for (int k = 0; k < sp->nout; k++) {
        int l = sp->out[k];
        if (l < 0) continue;
        if (count[l] == 0) {
            *bad = fcg_poison(ctx, FC_ERR_VALUE, "einsum: output subscript '%c' never appeared "
                              "in an input", label_letter(l));
            return false;
        }
        for (int j = k + 1; j < sp->nout; j++)
            if (sp->out[j] == l) {
                *bad = fcg_poison(ctx, FC_ERR_VALUE, "einsum: output subscript '%c' appears "
                                  "more than once", label_letter(l));
                return false;
            }
    }
    int nout = sp->nout - (sp->out_ellipsis ? 1 : 0) + (sp->out_ellipsis ? sp->nbroadcast : 0);
    if (!sp->out_ellipsis && sp->nbroadcast > 0) {
        *bad = fcg_poison(ctx, FC_ERR_SHAPE, "einsum: the operands have %d broadcast "
                          "dimension%s but the output has no '...' for them", sp->nbroadcast,
                          sp->nbroadcast == 1 ? "" : "s");
        return false;
    }
    if (nout > FC_MAX_DIMS) {
        *bad = fcg_poison(ctx, FC_ERR_SHAPE, "einsum: the output would have %d dimensions "
                          "(at most %d)", nout, FC_MAX_DIMS);
        return false;
    }
    return true;
}

/* Replaces an ellipsis in lab[0..*n) by the labels of the last `count` of nbroadcast
 * broadcast dimensions (right-aligned, as broadcasting aligns them). */
static void expand_ellipsis(int *lab, int *n, int count, int nbroadcast) {
    int k = position(lab, *n, ELLIPSIS_MARK);
    if (k < 0) return;
    int tail = *n - k - 1;
    memmove(&lab[k + count], &lab[k + 1], (size_t)tail * sizeof *lab);
    for (int i = 0; i < count; i++) lab[k + i] = ELLIPSIS_LABEL + nbroadcast - count + i;
    *n = k + count + tail;
}

static const char *label_name(char *buf, int l) {
    if (l < NLETTERS) snprintf(buf, 32, "'%c'", label_letter(l));
    else snprintf(buf, 32, "'...' dimension %d", l - ELLIPSIS_LABEL);
    return buf;
}

/* Checks the extents: a repeated label of an operand (a diagonal) must have equal ones, and a
 * label's extents other than 1 must agree across operands (1 broadcasts, as in NumPy). */
static bool check_extents(fc_ctx *ctx, const term *t, int n, fc_array **bad) {
    int64_t ext[NLABELS];
    int from[NLABELS];
    for (int l = 0; l < NLABELS; l++) ext[l] = 1, from[l] = -1;
    char ln[32];
    for (int i = 0; i < n; i++) {
        int64_t own[NLABELS];
        for (int d = 0; d < t[i].n; d++) own[t[i].lab[d]] = -1;
        for (int d = 0; d < t[i].n; d++) {
            int l = t[i].lab[d];
            int64_t e = t[i].a->shape[d];
            if (own[l] >= 0 && own[l] != e) {
                *bad = fcg_poison(ctx, FC_ERR_SHAPE, "einsum: dimensions in operand %d for "
                                  "collapsing index %s don't match (%lld != %lld)", i,
                                  label_name(ln, l), (long long)own[l], (long long)e);
                return false;
            }
            own[l] = e;
            if (e == 1) continue;
            if (from[l] >= 0 && ext[l] != e) {
                *bad = fcg_poison(ctx, FC_ERR_SHAPE, "einsum: size of label %s for operand %d "
                                  "(%lld) does not match operand %d (%lld)", label_name(ln, l),
                                  i, (long long)e, from[l], (long long)ext[l]);
                return false;
            }
            ext[l] = e;
            from[l] = i;
        }
    }
    return true;
}

fc_array *fc_einsum(fc_ctx *ctx, const char *subscripts, fc_array *const *operands, int n) {
    if (!ctx) return NULL;
    if (!subscripts) return fcg_poison(ctx, FC_ERR_NULL, "einsum: subscripts is NULL");
    if (n < 1) return fcg_poison(ctx, FC_ERR_VALUE, "einsum: no operands");
    if (!operands) return fcg_poison(ctx, FC_ERR_NULL, "einsum: operands is NULL");
    if (n > MAX_OPERANDS)
        return fcg_poison(ctx, FC_ERR_VALUE, "einsum: %d operands (at most %d)", n,
                          MAX_OPERANDS);
    fc_array *early;
    fc_ctx *own = fcg_begin("einsum", n, operands, &early);
    if (early) return early;
    if (!own) return fcg_poison(ctx, FC_ERR_NULL, "einsum: the operands are NULL");
    if (own != ctx)
        return fcg_poison(ctx, FC_ERR_CONTEXT, "einsum: an operand belongs to another context");
    einsum_spec *sp = fcg_malloc(ctx, sizeof *sp);
    term *t = fcg_malloc(ctx, (size_t)n * sizeof *t);
    fc_scope *scope = sp && t ? fc_scope_open(ctx) : NULL;
    fc_array *r = NULL;
    if (!scope) {
        r = fcg_poison(ctx, FC_ERR_NOMEM, "einsum: out of memory");
    } else if (parse_subscripts(ctx, subscripts, operands, n, sp, &r)) {
        for (int i = 0; i < n; i++) {
            t[i].a = operands[i];
            t[i].n = sp->nlab[i];
            memcpy(t[i].lab, sp->lab[i], sizeof t[i].lab);
            int named = sp->nlab[i] - (sp->ellipsis[i] ? 1 : 0);
            expand_ellipsis(t[i].lab, &t[i].n, operands[i]->ndim - named, sp->nbroadcast);
        }
        expand_ellipsis(sp->out, &sp->nout, sp->nbroadcast, sp->nbroadcast);
        if (check_extents(ctx, t, n, &r))
            r = contract(ctx, "einsum", result_dtype(operands, n), t, n, sp->out, sp->nout);
    }
    if (t) fcg_free(ctx, t, (size_t)n * sizeof *t);
    if (sp) fcg_free(ctx, sp, sizeof *sp);
    return scope ? fcg_scope_return(ctx, scope, r) : r;
}

/* ---- kron, matrix_power ----------------------------------------------------------------- */

fc_array *fc_kron(fc_array *a, fc_array *b) {
    fc_array *in[2] = {a, b}, *early;
    fc_ctx *ctx = fcg_begin("kron", 2, in, &early);
    if (!ctx || early) return early;
    int nd = a->ndim > b->ndim ? a->ndim : b->ndim;
    if (2 * nd > FC_MAX_DIMS) {
        char d1[FCG_DESC_MAX], d2[FCG_DESC_MAX];
        return fcg_poison(ctx, FC_ERR_UNSUPPORTED, "kron: %s and %s: at most %d dimensions are "
                          "supported", fcg_desc(d1, a), fcg_desc(d2, b), FC_MAX_DIMS / 2);
    }
    /* Both padded to nd axes with leading ones; a's axes interleaved with unit axes times b's
     * interleaved the other way, so that axis 2i + 1 runs over b inside axis 2i over a; the
     * pairs then merge: out[i * len_b + j] = a[i] * b[j] on every axis. */
    fc_shape sa = {2 * nd, {0}}, sb = {2 * nd, {0}}, so = {nd, {0}};
    for (int d = 0; d < nd; d++) {
        int ka = d - (nd - a->ndim), kb = d - (nd - b->ndim);
        int64_t ea = ka >= 0 ? a->shape[ka] : 1, eb = kb >= 0 ? b->shape[kb] : 1;
        sa.dim[2 * d] = ea;
        sa.dim[2 * d + 1] = 1;
        sb.dim[2 * d] = 1;
        sb.dim[2 * d + 1] = eb;
        if (__builtin_mul_overflow(ea, eb, &so.dim[d]))
            return fcg_poison(ctx, FC_ERR_SHAPE, "kron: the result is too large");
    }
    fc_scope *scope = fc_scope_open(ctx);
    if (!scope) return fcg_poison(ctx, FC_ERR_NOMEM, "kron: out of memory");
    fc_array *r = fc_mul(fc_reshape(flat(a), sa), fc_reshape(flat(b), sb));
    return fcg_scope_return(ctx, scope, fc_reshape(r, so));
}

fc_array *fc_matrix_power(fc_array *a, int64_t n) {
    fc_array *early;
    fc_ctx *ctx = fcg_begin("matrix_power", 1, &a, &early);
    if (!ctx || early) return early;
    char d[FCG_DESC_MAX];
    if (a->ndim < 2)
        return fcg_poison(ctx, FC_ERR_SHAPE, "matrix_power: %s: %d-dimensional array given, "
                          "it must be at least two-dimensional", fcg_desc(d, a), a->ndim);
    int64_t m = a->shape[a->ndim - 1];
    if (a->shape[a->ndim - 2] != m)
        return fcg_poison(ctx, FC_ERR_SHAPE, "matrix_power: %s: the last 2 dimensions must be "
                          "square", fcg_desc(d, a));
    fc_scope *scope = fc_scope_open(ctx);
    if (!scope) return fcg_poison(ctx, FC_ERR_NOMEM, "matrix_power: out of memory");
    /* NumPy: a negative power is the power of the inverse (n == INT64_MIN: its magnitude
     * still fits the unsigned loop below) */
    fc_array *x = n < 0 ? fc_linalg_inv(a) : a, *r = NULL;
    uint64_t un = n < 0 ? 0 - (uint64_t)n : (uint64_t)n;
    if (un == 0) {
        fc_shape sh = fc_array_shape(a);
        r = fc_broadcast_to(fc_eye(ctx, (fc_dtype)a->dtype, m, m, 0), sh);
    } else if (un <= 3) {
        /* NumPy's small powers, associated as it does */
        r = x;
        for (uint64_t i = 1; i < un; i++) r = fc_matmul(r, x);
    } else {
        /* NumPy's binary decomposition: z runs through the squarings, each set bit of n
         * multiplies it into the result, in NumPy's order */
        fc_array *z = NULL;
        for (uint64_t k = un; k > 0; k >>= 1) {
            z = z ? fc_matmul(z, z) : x;
            if (k & 1) r = r ? fc_matmul(r, z) : z;
        }
    }
    return fcg_scope_return(ctx, scope, r);
}
