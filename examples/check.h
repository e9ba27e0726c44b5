/*
 * examples/check.h - the few lines every example shares: report an fc_status, and compare a
 * result with a reference computed in plain C (double precision, libm).
 */
#ifndef FUSEC_EXAMPLES_CHECK_H
#define FUSEC_EXAMPLES_CHECK_H

#include <fusec.h>

#include <math.h>
#include <stddef.h>
#include <stdio.h>

static inline const char *backend_name(const fc_ctx *ctx) {
    return fc_ctx_backend(ctx) == FC_BACKEND_CUDA ? "cuda" : "host";
}

/* Prints why a call failed; returns the exit status for main. */
static inline int report_error(const char *example, fc_ctx *ctx, fc_status st) {
    fprintf(stderr, "%s: %s: %s\n", example, fc_strerror(st), ctx ? fc_errmsg(ctx) : "");
    return 1;
}

/* Checks |got - want| <= atol + rtol * |want| for every element (NaN never passes), prints the
 * outcome, and returns 0 on a match, 1 otherwise. */
static inline int check_close(const char *example, const float *got, const double *want,
                              size_t n, double rtol, double atol) {
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        double err = fabs((double)got[i] - want[i]);
        if (!(err <= atol + rtol * fabs(want[i]))) {
            fprintf(stderr, "%s: MISMATCH at element %zu: got %.9g, expected %.9g\n", example, i,
                    (double)got[i], want[i]);
            return 1;
        }
        if (err > worst) worst = err;
    }
    printf("  matches plain C (%zu values, largest difference %.3g)\n", n, worst);
    return 0;
}

#endif
