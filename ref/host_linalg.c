/*
 * ref/host_linalg.c - the reference of the dense linear algebra ops (ops.def's LINALG_*):
 * LU with partial pivoting (solve, slogdet), Cholesky, Householder QR, Jacobi's eigenvalue
 * iteration for Hermitian matrices (eigh, eigvalsh) and one-sided Jacobi for the SVD (svd,
 * svdvals), on each matrix of a stack.
 *
 * Simple and exact rather than fast: every matrix is read into complex doubles (a real one
 * keeps zero imaginary parts, which the arithmetic below never disturbs: its products and
 * quotients by real numbers are the real operations), factorised as LAPACK's unblocked
 * algorithms do (getf2's pivot is the first largest |re| + |im| of the column, potf2 stops at
 * the first diagonal that is not positive; QR is geqr2's and org2r's reflections, with
 * LAPACK's signs, so that R's diagonal is real; eigh is cyclic Jacobi, which is simple and
 * accurate to the last bits rather than fast), and written back in the node's dtype. The
 * errors are NumPy's LinAlgError cases (FC_ERR_LINALG), found here at evaluation: an exactly
 * zero pivot for solve and inv, a non-positive (or NaN) diagonal for cholesky, an SVD that
 * does not converge (or a NaN or infinite entry: NumPy raises for NaN) for svd.
 */
#include "graph.h"
#include "host.h"

#include <complex.h>
#include <float.h>
#include <math.h>
#include <string.h>

/* re + im i, parts kept as given (re + im * I would turn an infinite part into NaNs, and
 * CMPLX is not in every C library: glibc defines it for GCC alone) */
static inline double complex complex_of(double re, double im) {
    double parts[2] = {re, im};
    double complex z;
    memcpy(&z, parts, sizeof z);
    return z;
}

typedef double complex cplx;

/* |re| + |im|: LAPACK's pivot measure (izamax's dcabs1; |x| for real values). */
static double cabs1(cplx z) { return fabs(creal(z)) + fabs(cimag(z)); }

/* z / d, exact when both are real (C's complex division scales, which can round). */
static cplx cdiv(cplx z, cplx d) {
    if (cimag(d) == 0.0) return complex_of(creal(z) / creal(d), cimag(z) / creal(d));
    return z / d;
}

/* Reads the n x m matrix at src (byte strides rs, cs) into dst (row-major). */
static void read_matrix(fc_dtype t, const char *src, int64_t rs, int64_t cs, int64_t n,
                        int64_t m, cplx *dst, fch_wide_val *row) {
    bool c = fcg_is_complex(t);
    for (int64_t i = 0; i < n; i++) {
        fch_read_wide(t, src + i * rs, cs, (size_t)m, row);
        for (int64_t j = 0; j < m; j++)
            dst[i * m + j] = c ? complex_of(row[j].c[0], row[j].c[1]) : complex_of(row[j].f, 0.0);
    }
}

/* Writes count values of src to dst (contiguous, dtype t), through `row` (room for `room`
 * wide values) a piece at a time. */
static void write_values(fc_dtype t, const cplx *src, int64_t count, char *dst,
                         fch_wide_val *row, int64_t room) {
    bool c = fcg_is_complex(t);
    size_t es = fc_dtype_size(t);
    for (int64_t at = 0; at < count; at += room) {
        int64_t len = count - at < room ? count - at : room;
        for (int64_t j = 0; j < len; j++) {
            cplx z = src[at + j];
            if (c) {
                row[j].c[0] = creal(z);
                row[j].c[1] = cimag(z);
            } else {
                row[j].f = creal(z);
            }
        }
        fch_write_wide(c ? FCH_W_C128 : FCH_W_F64, row, (size_t)len, t, dst + (size_t)at * es,
                       (int64_t)es);
    }
}

/* In-place LU of the n x n row-major lu with partial pivoting (getf2): piv[k] is the row
 * swapped with row k. Returns 0, or 1 + the first column whose pivot is exactly zero (the
 * factorisation goes on past it, as LAPACK's does). */
static int64_t lu_factor(cplx *lu, int64_t n, int64_t *piv) {
    int64_t info = 0;
    for (int64_t k = 0; k < n; k++) {
        int64_t p = k;
        for (int64_t i = k + 1; i < n; i++)
            if (cabs1(lu[i * n + k]) > cabs1(lu[p * n + k])) p = i;
        piv[k] = p;
        if (p != k)
            for (int64_t j = 0; j < n; j++) {
                cplx tmp = lu[k * n + j];
                lu[k * n + j] = lu[p * n + j];
                lu[p * n + j] = tmp;
            }
        cplx d = lu[k * n + k];
        if (d == 0.0) {
            if (!info) info = k + 1;
            continue;
        }
        for (int64_t i = k + 1; i < n; i++) {
            cplx l = cdiv(lu[i * n + k], d);
            lu[i * n + k] = l;
            for (int64_t j = k + 1; j < n; j++) lu[i * n + j] -= l * lu[k * n + j];
        }
    }
    return info;
}

/* x (n x k, row-major) = A^-1 x from A's LU (getrs): the row swaps, then L and U. */
static void lu_solve(const cplx *lu, const int64_t *piv, int64_t n, cplx *x, int64_t k) {
    for (int64_t r = 0; r < n; r++)
        if (piv[r] != r)
            for (int64_t j = 0; j < k; j++) {
                cplx tmp = x[r * k + j];
                x[r * k + j] = x[piv[r] * k + j];
                x[piv[r] * k + j] = tmp;
            }
    for (int64_t i = 0; i < n; i++)
        for (int64_t q = 0; q < i; q++)
            for (int64_t j = 0; j < k; j++) x[i * k + j] -= lu[i * n + q] * x[q * k + j];
    for (int64_t i = n - 1; i >= 0; i--) {
        for (int64_t q = i + 1; q < n; q++)
            for (int64_t j = 0; j < k; j++) x[i * k + j] -= lu[i * n + q] * x[q * k + j];
        for (int64_t j = 0; j < k; j++) x[i * k + j] = cdiv(x[i * k + j], lu[i * n + i]);
    }
}

/* sign and log|det| from an LU (NumPy's slogdet_from_factored_diagonal): the product of
 * the pivots' phases times the permutation's sign, the sum of their logs. */
static void lu_slogdet(const cplx *lu, const int64_t *piv, int64_t n, int64_t info, cplx *out) {
    if (info) {
        out[0] = 0.0;
        out[1] = -INFINITY;
        return;
    }
    cplx sign = 1.0;
    double logdet = 0.0;
    for (int64_t i = 0; i < n; i++) {
        cplx d = lu[i * n + i];
        double ad = cabs(d);
        sign *= cimag(d) == 0.0 ? complex_of(creal(d) < 0 ? -1.0 : 1.0, 0.0) : d / ad;
        if (piv[i] != i) sign = -sign;
        logdet += log(ad);
    }
    out[0] = sign;
    out[1] = logdet;
}

/* In-place Cholesky of the lower triangle of the n x n row-major a (potf2, lower): L with
 * a == L L^H, zeros written above the diagonal. Returns 0, or 1 + the first column whose
 * diagonal is not positive (NaN included). */
static int64_t cholesky(cplx *a, int64_t n) {
    for (int64_t j = 0; j < n; j++) {
        double d = creal(a[j * n + j]);
        for (int64_t q = 0; q < j; q++) {
            cplx l = a[j * n + q];
            d -= creal(l) * creal(l) + cimag(l) * cimag(l);
        }
        if (!(d > 0.0)) return j + 1;
        d = sqrt(d);
        a[j * n + j] = d;
        for (int64_t i = j + 1; i < n; i++) {
            cplx s = a[i * n + j];
            for (int64_t q = 0; q < j; q++) s -= a[i * n + q] * conj(a[j * n + q]);
            a[i * n + j] = cdiv(s, d);
        }
        for (int64_t i = 0; i < j; i++) a[i * n + j] = 0.0;
    }
    return 0;
}

/* Householder QR of the m x n row-major a in place (geqr2): R in the upper triangle, each
 * reflection H_j = I - tau[j] v v^H's vector below the diagonal (v[j] = 1 implied), with
 * LAPACK's larfg choices: beta = -sign(Re alpha) |(alpha, x)|, so R's diagonal is real, and
 * tau = 0 (no reflection) where the column below the diagonal is zero and alpha is real. */
static void qr_factor(cplx *a, int64_t m, int64_t n, cplx *tau) {
    int64_t k = m < n ? m : n;
    for (int64_t j = 0; j < k; j++) {
        cplx alpha = a[j * n + j];
        double xnorm = 0.0;
        for (int64_t i = j + 1; i < m; i++) xnorm = hypot(xnorm, cabs(a[i * n + j]));
        if (xnorm == 0.0 && cimag(alpha) == 0.0) {
            tau[j] = 0.0;
            continue;
        }
        double beta = -copysign(hypot(cabs(alpha), xnorm), creal(alpha));
        tau[j] = complex_of((beta - creal(alpha)) / beta, -cimag(alpha) / beta);
        cplx scale = 1.0 / (alpha - beta);
        for (int64_t i = j + 1; i < m; i++) a[i * n + j] *= scale;
        a[j * n + j] = beta;
        /* H_j^H (geqr2 applies the conjugate scalar) to the columns on the right */
        for (int64_t c = j + 1; c < n; c++) {
            cplx d = a[j * n + c];
            for (int64_t i = j + 1; i < m; i++) d += conj(a[i * n + j]) * a[i * n + c];
            d *= conj(tau[j]);
            a[j * n + c] -= d;
            for (int64_t i = j + 1; i < m; i++) a[i * n + c] -= a[i * n + j] * d;
        }
    }
}

/* q (m x c, row-major) = the first c columns of H_0 H_1 ... H_{k-1} from qr_factor's
 * reflections in a (m x n): org2r, the last reflection applied first to the identity. */
static void qr_form_q(const cplx *a, int64_t m, int64_t n, const cplx *tau, int64_t k, cplx *q,
                      int64_t c) {
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < c; j++) q[i * c + j] = i == j ? 1.0 : 0.0;
    for (int64_t j = k - 1; j >= 0; j--) {
        if (tau[j] == 0.0) continue;
        for (int64_t col = 0; col < c; col++) {
            cplx d = q[j * c + col];
            for (int64_t i = j + 1; i < m; i++) d += conj(a[i * n + j]) * q[i * c + col];
            d *= tau[j];
            q[j * c + col] -= d;
            for (int64_t i = j + 1; i < m; i++) q[i * c + col] -= a[i * n + j] * d;
        }
    }
}

/* The eigenvalues (w, ascending) and eigenvectors (v's columns, row-major n x n, in w's order)
 * of the Hermitian h (n x n, both triangles set, real diagonal), which is destroyed: cyclic
 * Jacobi. Each rotation U = diag(1, conj(e)) R in the (p, q) plane, e the phase of h[p][q]
 * and R the real rotation of the resulting real 2 x 2 block (Numerical Recipes' jacobi),
 * zeroes h[p][q]; an element negligible beside both diagonals (adding it changes neither) is
 * set to zero without one. Sweeps end when one leaves nothing to rotate (quadratic
 * convergence: a handful of sweeps). A non-finite h gives NaN, as there is nothing to
 * iterate on. order: room for n indices. */
static void jacobi_eigh(cplx *h, int64_t n, cplx *v, double *w, int64_t *order) {
    bool finite = true;
    for (int64_t i = 0; i < n * n; i++)
        finite = finite && isfinite(creal(h[i])) && isfinite(cimag(h[i]));
    for (int64_t i = 0; i < n * n; i++) v[i] = finite ? (i % (n + 1) == 0 ? 1.0 : 0.0) : NAN;
    for (int64_t i = 0; i < n; i++) w[i] = finite ? creal(h[i * n + i]) : NAN;
    for (int sweep = 0; finite && sweep < 100; sweep++) {
        bool rotated = false;
        for (int64_t p = 0; p < n; p++)
            for (int64_t q = p + 1; q < n; q++) {
                cplx hpq = h[p * n + q];
                double g = cabs(hpq), app = creal(h[p * n + p]), aqq = creal(h[q * n + q]);
                if (g == 0.0) continue;
                if (fabs(app) + g == fabs(app) && fabs(aqq) + g == fabs(aqq)) {
                    h[p * n + q] = h[q * n + p] = 0.0;
                    continue;
                }
                rotated = true;
                double theta = (aqq - app) / (2.0 * g), t;
                if (fabs(theta) > 1e150) t = 0.5 / theta; /* theta^2 would overflow */
                else t = copysign(1.0, theta) / (fabs(theta) + sqrt(1.0 + theta * theta));
                double cs = 1.0 / sqrt(1.0 + t * t), sn = t * cs;
                cplx e = hpq / g, ce = conj(e);
                /* h U and v U (columns p, q), then U^H h (rows p, q) */
                for (int64_t r = 0; r < n; r++) {
                    cplx *hr = h + r * n, *vr = v + r * n;
                    cplx x = hr[p], y = hr[q];
                    hr[p] = cs * x - sn * ce * y;
                    hr[q] = sn * x + cs * ce * y;
                    x = vr[p], y = vr[q];
                    vr[p] = cs * x - sn * ce * y;
                    vr[q] = sn * x + cs * ce * y;
                }
                for (int64_t col = 0; col < n; col++) {
                    cplx x = h[p * n + col], y = h[q * n + col];
                    h[p * n + col] = cs * x - sn * e * y;
                    h[q * n + col] = sn * x + cs * e * y;
                }
                h[p * n + q] = h[q * n + p] = 0.0;
                h[p * n + p] = creal(h[p * n + p]);
                h[q * n + q] = creal(h[q * n + q]);
            }
        if (!rotated) break;
    }
    /* ascending (insertion sort: stable, and n^2 beside the iteration's n^3) */
    for (int64_t i = 0; i < n; i++) {
        int64_t j = i;
        double x = finite ? creal(h[i * n + i]) : NAN;
        for (; j > 0 && w[j - 1] > x; j--) {
            w[j] = w[j - 1];
            order[j] = order[j - 1];
        }
        w[j] = x;
        order[j] = i;
    }
}

/* One-sided Jacobi SVD (Hestenes) of the R x C matrix b (R >= C) held column by column
 * (column j at b + j R): plane rotations of column pairs until every pair is orthogonal to
 * within tol (|b_p^H b_q| <= tol |b_p| |b_q|); v (C x C, column by column) accumulates them,
 * so that the columns of b end as U diag(s) and b_in = b_out v^H. Each rotation is the
 * Jacobi rotation of the pair's Gram matrix [[|b_p|^2, g], [conj(g), |b_q|^2]] (jacobi_eigh's,
 * its phase e = g / |g| taken out first). Simple and accurate to the last bits on every
 * singular value, relative to the largest (Demmel and Veselic); O(R C^2) a sweep, a handful of
 * sweeps. Returns false when `sweeps` do not converge. */
static bool jacobi_svd(cplx *b, int64_t r, int64_t c, cplx *v, int sweeps) {
    double tol = DBL_EPSILON * (double)(r > 1 ? r : 1);
    for (int64_t i = 0; i < c * c; i++) v[i] = i % (c + 1) == 0 ? 1.0 : 0.0;
    for (int sweep = 0; sweep < sweeps; sweep++) {
        bool rotated = false;
        for (int64_t p = 0; p < c; p++)
            for (int64_t q = p + 1; q < c; q++) {
                cplx *bp = b + p * r, *bq = b + q * r, gamma = 0.0;
                double alpha = 0.0, beta = 0.0;
                for (int64_t i = 0; i < r; i++) {
                    alpha += creal(bp[i]) * creal(bp[i]) + cimag(bp[i]) * cimag(bp[i]);
                    beta += creal(bq[i]) * creal(bq[i]) + cimag(bq[i]) * cimag(bq[i]);
                    gamma += conj(bp[i]) * bq[i];
                }
                double g = cabs(gamma);
                if (g == 0.0 || g <= tol * sqrt(alpha) * sqrt(beta)) continue;
                rotated = true;
                double theta = (beta - alpha) / (2.0 * g), t;
                if (fabs(theta) > 1e150) t = 0.5 / theta; /* theta^2 would overflow */
                else t = copysign(1.0, theta) / (fabs(theta) + sqrt(1.0 + theta * theta));
                double cs = 1.0 / sqrt(1.0 + t * t), sn = t * cs;
                cplx ce = conj(gamma / g);
                for (int64_t i = 0; i < r; i++) {
                    cplx x = bp[i], y = bq[i];
                    bp[i] = cs * x - sn * ce * y;
                    bq[i] = sn * x + cs * ce * y;
                }
                cplx *vp = v + p * c, *vq = v + q * c;
                for (int64_t i = 0; i < c; i++) {
                    cplx x = vp[i], y = vq[i];
                    vp[i] = cs * x - sn * ce * y;
                    vq[i] = sn * x + cs * ce * y;
                }
            }
        if (!rotated) return true;
    }
    return false;
}

/* The batch offset (bytes) of matrix b (row-major over x's batch) in an input whose strides
 * are `strides`. */
static int64_t batch_offset(const fc_array *x, int64_t b, const int64_t *strides) {
    int64_t off = 0;
    for (int d = x->ndim - 3; d >= 0; d--) {
        off += (b % x->shape[d]) * strides[d];
        b /= x->shape[d];
    }
    return off;
}

/* svd and svdvals of every matrix of the stack in[0] into out (ops.def's LINALG_SVD and
 * LINALG_SVDVALS). Each m x n matrix A is factorised as B = A (m >= n) or B = A^H (m < n),
 * R x C with R >= C: B = U_B diag(s) V_B^H by jacobi_svd on B scaled by a power of two (so
 * that sums of squares neither overflow nor lose the small columns; exact), then
 * U = U_B, Vh = V_B^H, or U = V_B, Vh = U_B^H. U_B's columns of zero singular values, and
 * full_matrices' extra ones, complete the others to an orthonormal basis: the trailing
 * columns of the Householder Q (qr_factor, qr_form_q) of the columns already known. */
static fc_status svd_decompose(fc_ctx *ctx, const fc_array *a, const char *in,
                               const int64_t *strides, char *out) {
    const fc_array *x = a->in[0];
    fc_dtype t = (fc_dtype)x->dtype, ot = (fc_dtype)a->dtype;
    bool vectors = a->op == FCG_OP_LINALG_SVD, full = vectors && (a->p.flag & 1);
    int nb = x->ndim - 2;
    int64_t m = x->shape[nb], n = x->shape[nb + 1], batch = 1;
    for (int d = 0; d < nb; d++) batch *= x->shape[d];
    bool tall = m >= n;
    int64_t r = tall ? m : n, c = tall ? n : m, ucb = full ? r : c; /* B is r x c, U_B r x ucb */
    int64_t rows = vectors ? a->shape[a->ndim - 2] : 1, width = vectors ? a->shape[a->ndim - 1] : c;
    int64_t per_out = rows * width;
    if (batch == 0 || per_out == 0) return FC_OK;
    /* room: A, B, V_B, U_B, the known columns and the completing Q (r x ucb), tau, the
     * packed result; s, the order; one row of wide values */
    size_t cells = (size_t)(m * n) * 2 + (size_t)(c * c) + (size_t)(r * ucb) * 3 + (size_t)c +
                   (size_t)per_out + 1;
    size_t rowlen = (size_t)(width > n ? width : n) + 2;
    size_t bytes = cells * sizeof(cplx) + (size_t)c * (sizeof(double) + sizeof(int64_t)) +
                   rowlen * sizeof(fch_wide_val);
    char *work = fcg_malloc(ctx, bytes);
    if (!work) return fcg_error(ctx, FC_ERR_NOMEM, "svd: out of memory");
    cplx *mat = (cplx *)work, *bm = mat + m * n, *vb = bm + m * n, *ub = vb + c * c;
    cplx *known = ub + r * ucb, *q = known + r * ucb, *tau = q + r * ucb, *res = tau + c;
    double *sv = (double *)(res + per_out + 1);
    int64_t *order = (int64_t *)(sv + c);
    fch_wide_val *row = (fch_wide_val *)(order + c);
    size_t es = fc_dtype_size(ot);
    fc_status st = FC_OK;
    for (int64_t bi = 0; bi < batch && st == FC_OK; bi++) {
        char d[FCG_DESC_MAX], where[160];
        read_matrix(t, in + batch_offset(x, bi, strides), strides[nb], strides[nb + 1], m, n, mat,
                    row);
        /* B column by column, scaled by 2^-e so that its largest entry is below 1 */
        double big = 0.0;
        bool finite = true;
        for (int64_t i = 0; i < m * n; i++) {
            finite = finite && isfinite(creal(mat[i])) && isfinite(cimag(mat[i]));
            big = fmax(big, cabs(mat[i]));
        }
        if (!finite) {
            st = fcg_error(ctx, FC_ERR_LINALG, "svd: SVD did not converge: a %s%s has a NaN or "
                           "infinite entry", fcg_desc(d, x),
                           fcg_linalg_where(where, sizeof where, x, bi));
            break;
        }
        int e = 0;
        if (big > 0.0) frexp(big, &e);
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                cplx z = complex_of(ldexp(creal(mat[i * n + j]), -e), ldexp(cimag(mat[i * n + j]), -e));
                if (tall) bm[j * m + i] = z;
                else bm[i * n + j] = conj(z); /* column i of A^H is row i of A, conjugated */
            }
        if (!jacobi_svd(bm, r, c, vb, 64)) {
            st = fcg_error(ctx, FC_ERR_LINALG, "svd: SVD did not converge: a %s%s is not "
                           "diagonalised after 64 sweeps", fcg_desc(d, x),
                           fcg_linalg_where(where, sizeof where, x, bi));
            break;
        }
        /* the singular values (column norms, by hypot: no overflow or underflow), descending
         * (insertion sort: stable, and c^2 beside the iteration's r c^2) */
        int64_t known_cols = 0;
        for (int64_t j = 0; j < c; j++) {
            double h = 0.0;
            for (int64_t i = 0; i < r; i++) h = hypot(h, cabs(bm[j * r + i]));
            int64_t p = j;
            for (; p > 0 && sv[p - 1] < h; p--) {
                sv[p] = sv[p - 1];
                order[p] = order[p - 1];
            }
            sv[p] = h;
            order[p] = j;
            known_cols += h > 0.0;
        }
        for (int64_t i = 0; i < per_out; i++) res[i] = 0.0;
        for (int64_t j = 0; j < c; j++) res[j] = ldexp(sv[j], e);
        if (vectors) {
            /* U_B: the normalised columns, then the completion of the first known_cols */
            for (int64_t j = 0; j < known_cols; j++)
                for (int64_t i = 0; i < r; i++) {
                    cplx z = bm[order[j] * r + i] / sv[j];
                    ub[i * ucb + j] = z;
                    known[i * known_cols + j] = z;
                }
            if (known_cols < ucb) {
                qr_factor(known, r, known_cols, tau);
                qr_form_q(known, r, known_cols, tau, known_cols, q, ucb);
                for (int64_t i = 0; i < r; i++)
                    for (int64_t j = known_cols; j < ucb; j++) ub[i * ucb + j] = q[i * ucb + j];
            }
            cplx *u = res + width, *vh = res + (1 + m) * width;
            int64_t uc = tall ? ucb : c, vr = tall ? c : ucb;
            for (int64_t i = 0; i < m; i++)
                for (int64_t j = 0; j < uc; j++)
                    u[i * width + j] = tall ? ub[i * ucb + j] : vb[order[j] * c + i];
            for (int64_t j = 0; j < vr; j++)
                for (int64_t i = 0; i < n; i++)
                    vh[j * width + i] = conj(tall ? vb[order[j] * c + i] : ub[i * ucb + j]);
        }
        write_values(ot, res, per_out, out + (size_t)(bi * per_out) * es, row, (int64_t)rowlen);
    }
    fcg_free(ctx, work, bytes);
    return st;
}

/* qr, eigh and eigvalsh of every matrix of the stack in[0] into out (see ops.def). */
static fc_status decompose(fc_ctx *ctx, const fc_array *a, const char *in,
                           const int64_t *strides, char *out) {
    const fc_array *x = a->in[0];
    fc_dtype t = (fc_dtype)x->dtype, ot = (fc_dtype)a->dtype;
    const char *name = fcg_ops[a->op].pyname;
    int nb = x->ndim - 2;
    int64_t m = x->shape[nb], n = x->shape[nb + 1], k = m < n ? m : n, batch = 1;
    for (int d = 0; d < nb; d++) batch *= x->shape[d];
    bool qr = a->op == FCG_OP_LINALG_QR, vals_only = a->op == FCG_OP_LINALG_EIGVALSH;
    int64_t rows = vals_only ? 1 : a->shape[a->ndim - 2];
    int64_t width = vals_only ? n : a->shape[a->ndim - 1], per_out = rows * width;
    if (batch == 0 || per_out == 0) return FC_OK;
    int64_t c = qr ? width - n : 0; /* Q's columns */
    /* room: the matrix, the eigenvectors or Q, the packed result, tau or w (as doubles:
     * fewer than n cells), the order, one row of wide values */
    size_t cells = (size_t)(m * n) + (size_t)(qr ? m * c : n * n) + (size_t)per_out + (size_t)n;
    size_t rowlen = (size_t)(width > n ? width : n) + 2;
    size_t bytes = (cells + 1) * sizeof(cplx) + (size_t)n * sizeof(int64_t) +
                   rowlen * sizeof(fch_wide_val);
    char *work = fcg_malloc(ctx, bytes);
    if (!work) return fcg_error(ctx, FC_ERR_NOMEM, "%s: out of memory", name);
    cplx *mat = (cplx *)work, *vec = mat + m * n, *res = vec + (qr ? m * c : n * n);
    cplx *tau = res + per_out;
    double *w = (double *)tau;
    int64_t *order = (int64_t *)(tau + n + 1);
    fch_wide_val *row = (fch_wide_val *)(order + n);
    size_t es = fc_dtype_size(ot);
    for (int64_t b = 0; b < batch; b++) {
        read_matrix(t, in + batch_offset(x, b, strides), strides[nb], strides[nb + 1], m, n, mat,
                    row);
        if (qr) {
            qr_factor(mat, m, n, tau);
            qr_form_q(mat, m, n, tau, k, vec, c);
            /* Q beside R (rows k.. of R, and R below its diagonal, zero) */
            for (int64_t i = 0; i < rows; i++)
                for (int64_t j = 0; j < width; j++)
                    res[i * width + j] = j < c ? vec[i * c + j]
                                         : i < k && j - c >= i ? mat[i * n + j - c] : 0.0;
        } else {
            /* the Hermitian matrix of the triangle read (NumPy's UPLO), real diagonal */
            bool upper = a->p.flag & 1;
            for (int64_t i = 0; i < n; i++)
                for (int64_t j = 0; j <= i; j++) {
                    cplx z = upper ? conj(mat[j * n + i]) : mat[i * n + j];
                    if (i == j) z = creal(z);
                    mat[i * n + j] = z;
                    mat[j * n + i] = conj(z);
                }
            jacobi_eigh(mat, n, vec, w, order);
            for (int64_t j = 0; j < n; j++) res[j] = w[j];
            for (int64_t i = 0; !vals_only && i < n; i++)
                for (int64_t j = 0; j < n; j++) res[(i + 1) * n + j] = vec[i * n + order[j]];
        }
        write_values(ot, res, per_out, out + (size_t)(b * per_out) * es, row, (int64_t)rowlen);
    }
    fcg_free(ctx, work, bytes);
    return FC_OK;
}

fc_status fch_linalg(fc_ctx *ctx, const fc_array *a, const char *const *in,
                     const int64_t (*in_strides)[FC_MAX_DIMS], char *out) {
    const fc_array *x = a->in[0];
    fc_dtype t = (fc_dtype)x->dtype;
    const char *name = fcg_linalg_name(a);
    bool decomposition = a->op == FCG_OP_LINALG_QR || a->op == FCG_OP_LINALG_EIGH ||
                         a->op == FCG_OP_LINALG_EIGVALSH;
    fc_dtype want = a->op == FCG_OP_LINALG_EIGVALSH || a->op == FCG_OP_LINALG_SVDVALS
                        ? fcg_real_dtype(t) : t;
    if (x->ndim < 2 || a->dtype != want ||
        (t != FC_F32 && t != FC_F64 && t != FC_C64 && t != FC_C128))
        return fcg_error(ctx, FC_ERR_UNSUPPORTED, "%s: bad node (fusec bug)", name);
    if (a->op == FCG_OP_LINALG_SVD || a->op == FCG_OP_LINALG_SVDVALS)
        return svd_decompose(ctx, a, in[0], in_strides[0], out);
    if (decomposition) return decompose(ctx, a, in[0], in_strides[0], out);
    int nb = x->ndim - 2;
    int64_t n = x->shape[nb], k = a->op == FCG_OP_LINALG_SOLVE ? a->shape[a->ndim - 1] : n;
    int64_t batch = 1;
    for (int d = 0; d < nb; d++) batch *= x->shape[d];
    int64_t per_out = a->op == FCG_OP_LINALG_SLOGDET ? 2 : n * k;
    if (batch == 0 || per_out == 0) return FC_OK;
    size_t es = fc_dtype_size(t);
    /* room: the matrix, the right-hand sides, pivots and one row of wide values */
    size_t cells = (size_t)(n * n) + (size_t)(n * k) + 2, rowlen = (size_t)(n > k ? n : k) + 2;
    size_t bytes = cells * sizeof(cplx) + (size_t)n * sizeof(int64_t) + rowlen * sizeof(fch_wide_val);
    char *work = fcg_malloc(ctx, bytes);
    if (!work) return fcg_error(ctx, FC_ERR_NOMEM, "%s: out of memory", name);
    cplx *m = (cplx *)work, *rhs = m + n * n;
    int64_t *piv = (int64_t *)(rhs + n * k + 2);
    fch_wide_val *row = (fch_wide_val *)(piv + n);
    fc_status st = FC_OK;
    for (int64_t b = 0; b < batch && st == FC_OK; b++) {
        int64_t off[2] = {batch_offset(x, b, in_strides[0]),
                          a->nin > 1 ? batch_offset(x, b, in_strides[1]) : 0};
        read_matrix(t, in[0] + off[0], in_strides[0][nb], in_strides[0][nb + 1], n, n, m, row);
        char *dst = out + (size_t)(b * per_out) * es;
        int64_t info;
        char where[160];
        switch ((fcg_op)a->op) {
        case FCG_OP_LINALG_SOLVE:
            read_matrix(t, in[1] + off[1], in_strides[1][nb], in_strides[1][nb + 1], n, k, rhs,
                        row);
            if ((info = lu_factor(m, n, piv)) != 0) {
                char d[FCG_DESC_MAX];
                st = fcg_error(ctx, FC_ERR_LINALG, "%s: Singular matrix: a %s%s has a zero "
                               "pivot in column %lld", name, fcg_desc(d, x),
                               fcg_linalg_where(where, sizeof where, x, b), (long long)info - 1);
                break;
            }
            lu_solve(m, piv, n, rhs, k);
            write_values(t, rhs, n * k, dst, row, (int64_t)rowlen);
            break;
        case FCG_OP_LINALG_SLOGDET:
            info = lu_factor(m, n, piv);
            lu_slogdet(m, piv, n, info, rhs);
            write_values(t, rhs, 2, dst, row, (int64_t)rowlen);
            break;
        case FCG_OP_LINALG_CHOLESKY:
            if ((info = cholesky(m, n)) != 0) {
                char d[FCG_DESC_MAX];
                st = fcg_error(ctx, FC_ERR_LINALG, "%s: Matrix is not positive definite: a "
                               "%s%s has a leading minor of order %lld that is not", name,
                               fcg_desc(d, x), fcg_linalg_where(where, sizeof where, x, b),
                               (long long)info);
                break;
            }
            write_values(t, m, n * n, dst, row, (int64_t)rowlen);
            break;
        default:
            st = fcg_error(ctx, FC_ERR_UNSUPPORTED, "%s: not a linalg op (fusec bug)", name);
            break;
        }
    }
    fcg_free(ctx, work, bytes);
    return st;
}
