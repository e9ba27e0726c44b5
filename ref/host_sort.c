/*
 * ref/host_sort.c - np.sort / np.argsort on the host: a stable merge sort of each row of the
 * input's last axis, compared in NumPy's order (host.h's fch_sort).
 */
#include "host.h"

#include <math.h>
#include <string.h>

/* a < b in NumPy's sort order: NaN after every number; complex by real part, then
 * imaginary part, in the order [R + Rj, R + nanj, nan + Rj, nan + nanj] (npysort's CFLOAT_LT). */
static bool less(fch_wide w, const fch_wide_val *a, const fch_wide_val *b) {
    switch (w) {
    case FCH_W_I64: return a->i < b->i;
    case FCH_W_U64: return a->u < b->u;
    case FCH_W_F64: return a->f < b->f || (isnan(b->f) && !isnan(a->f));
    case FCH_W_C128: {
        double ar = a->c[0], ai = a->c[1], br = b->c[0], bi = b->c[1];
        if (ar < br) return !isnan(ai) || isnan(bi);
        if (ar > br) return isnan(bi) && !isnan(ai);
        if (ar == br || (isnan(ar) && isnan(br))) return ai < bi || (isnan(bi) && !isnan(ai));
        return isnan(br);
    }
    }
    return false;
}

/* Sorts perm[0..n) by v[perm[i]], stably (bottom-up merge sort through tmp). */
static void merge_sort(fch_wide w, const fch_wide_val *v, int64_t *perm, int64_t *tmp, int64_t n) {
    int64_t *src = perm, *dst = tmp;
    for (int64_t width = 1; width < n; width *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * width) {
            int64_t mid = lo + width < n ? lo + width : n;
            int64_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            int64_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) /* the right run's element goes first only if smaller */
                dst[k++] = less(w, &v[src[j]], &v[src[i]]) ? src[j++] : src[i++];
            while (i < mid) dst[k++] = src[i++];
            while (j < hi) dst[k++] = src[j++];
        }
        int64_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != perm) memcpy(perm, src, (size_t)n * sizeof *perm);
}

fc_status fch_sort(fc_ctx *ctx, const fc_array *a, const char *in, const int64_t *in_strides,
                   char *out) {
    const fc_array *x = a->in[0];
    const fc_dtype t = (fc_dtype)x->dtype;
    const int nd = x->ndim;
    const int64_t n = x->shape[nd - 1], total = (int64_t)fcg_node_numel(x);
    if (n == 0 || total == 0) return FC_OK;
    const int64_t rows = total / n, step = in_strides[nd - 1];
    const size_t es = fc_dtype_size(t);
    const fch_wide w = fch_wide_of(t);
    fch_wide_val *v = fcg_malloc(ctx, (size_t)n * sizeof *v);
    int64_t *perm = fcg_malloc(ctx, (size_t)n * sizeof *perm);
    int64_t *tmp = fcg_malloc(ctx, (size_t)n * sizeof *tmp);
    fc_status st = v && perm && tmp ? FC_OK
                                    : fcg_error(ctx, FC_ERR_NOMEM, "%s: out of host memory for "
                                                "a row of %lld", fcg_ops[a->op].pyname,
                                                (long long)n);
    for (int64_t r = 0; r < rows && st == FC_OK; r++) {
        const char *row = in; /* row r's first element: its coordinates over the outer axes */
        for (int64_t rest = r, d = nd - 2; d >= 0; d--) {
            row += (rest % x->shape[d]) * in_strides[d];
            rest /= x->shape[d];
        }
        for (int64_t j = 0; j < n; j += FCH_CHUNK) {
            int64_t c = n - j < FCH_CHUNK ? n - j : FCH_CHUNK;
            fch_gather_wide(t, row + j * step, step, (size_t)c, t, v + j);
        }
        for (int64_t j = 0; j < n; j++) perm[j] = j;
        merge_sort(w, v, perm, tmp, n);
        if (a->op == FCG_OP_ARGSORT) {
            memcpy(out + r * n * 8, perm, (size_t)n * 8);
        } else {
            char *o = out + r * n * (int64_t)es;
            for (int64_t j = 0; j < n; j++) memcpy(o + j * (int64_t)es, row + perm[j] * step, es);
        }
    }
    fcg_free(ctx, v, (size_t)n * sizeof *v);
    fcg_free(ctx, perm, (size_t)n * sizeof *perm);
    fcg_free(ctx, tmp, (size_t)n * sizeof *tmp);
    return st;
}
