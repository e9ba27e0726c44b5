/*
 * passes/donate.c - which results may be written into the buffer of a value the evaluation
 * consumes (NumPy's in-place updates, functionally: x[mask] = v makes a new array, and when
 * the old x has no other reader the new one takes its memory). This is the plan's half of
 * the decision: the structure that makes an alias safe. Whether the value is dead after the
 * evaluation is a matter of references, decided at each evaluation (fcg_dying_nodes).
 */
#include "plan.h"
#include "nodemap.h"

#include <string.h>

static bool same_shape(const fc_array *a, int ndim, const int64_t *shape) {
    return a->ndim == ndim && memcmp(a->shape, shape, sizeof(int64_t) * (size_t)ndim) == 0;
}

static bool among(fc_array *const *list, int n, const fc_array *a) {
    for (int i = 0; i < n; i++)
        if (list[i] == a) return true;
    return false;
}

/* Whether every read of `v` in elementwise kernel k is at the element the same thread
 * writes: v and each node computed from it inside k are read only by elementwise ops of
 * k's space, so no thread reads an element of v another thread overwrites (a gather, a view,
 * a broadcast or a user kernel reading raw inputs could). pos maps k's nodes to their index. */
static bool reads_aligned(const fcp_kernel *k, const fcg_nodemap *pos, const fc_array *v,
                          bool *derived) {
    memset(derived, 0, (size_t)k->nnode * sizeof *derived);
    for (int i = 0; i < k->nnode; i++) {
        const fc_array *a = k->nodes[i];
        bool reads = false;
        for (int j = 0; j < a->nin && !reads; j++) {
            int64_t at = fcg_nodemap_get(pos, a->in[j]);
            reads = a->in[j] == v || (at >= 0 && derived[at]);
        }
        if (!reads) continue;
        if (fcg_ops[a->op].kind != FCG_KIND_EW || !same_shape(a, k->ndim, k->space)) return false;
        derived[i] = true;
    }
    return true;
}

/* The donor of an output: a value read by the elementwise kernel that first stores it, of
 * its shape and element size, read nowhere after that kernel and only at aligned elements in
 * it; the output's buffer slot holds nothing else (an earlier occupant would overwrite the
 * donor first). NULL when there is none. */
static fc_status donor_of(const fcp_plan *p, int o, fc_array *const *taken, bool **derived,
                          int *cap, fc_array **out_donor) {
    fc_array *out = p->outs[o];
    *out_donor = NULL;
    int q = 0;
    while (q < p->nmat && p->mat[q] != out) q++;
    if (fcg_node_numel(out) == 0 || q == p->nmat) return FC_OK; /* empty, or a value already */
    for (int r = 0; r < p->nmat; r++)
        if (r != q && p->mat_buf[r] == p->mat_buf[q]) return FC_OK;
    int first = 0;
    while (first < p->nkernel && !among(p->kernels[first].outs, p->kernels[first].nout, out))
        first++;
    if (first == p->nkernel) return FC_OK;
    const fcp_kernel *k = &p->kernels[first];
    if (k->kind != FCP_KERNEL_EW || !same_shape(out, k->ndim, k->space)) return FC_OK;
    if (k->nnode > *cap) {
        bool *d = fcg_realloc(p->ctx, *derived, (size_t)*cap * sizeof *d,
                              (size_t)k->nnode * sizeof *d);
        if (!d) return fcg_error(p->ctx, FC_ERR_NOMEM, "plan: out of memory");
        *derived = d;
        *cap = k->nnode;
    }
    fcg_nodemap pos;
    fc_status st = fcg_nodemap_positions(p->ctx, k->nodes, (size_t)k->nnode, &pos);
    for (int l = 0; l < k->nleaf && st == FC_OK && !*out_donor; l++) {
        fc_array *v = k->leaves[l];
        if (!fcg_has_value(v) || !same_shape(v, out->ndim, out->shape) ||
            fc_dtype_size((fc_dtype)v->dtype) != fc_dtype_size((fc_dtype)out->dtype) ||
            among(p->outs, p->nout, v) || among(taken, o, v))
            continue;
        bool read_later = false;
        for (int j = first + 1; j < p->nkernel && !read_later; j++)
            read_later = among(p->kernels[j].leaves, p->kernels[j].nleaf, v);
        if (!read_later && reads_aligned(k, &pos, v, *derived)) *out_donor = v;
    }
    fcg_nodemap_free(&pos);
    return st;
}

fc_status fcp_donors(const fcp_plan *p, fc_array **donor) {
    memset(donor, 0, (size_t)p->nout * sizeof *donor);
    bool *derived = NULL;
    int cap = 0;
    fc_status st = FC_OK;
    for (int o = 0; o < p->nout && st == FC_OK; o++) st = donor_of(p, o, donor, &derived, &cap, &donor[o]);
    fcg_free(p->ctx, derived, (size_t)cap * sizeof *derived);
    return st;
}
