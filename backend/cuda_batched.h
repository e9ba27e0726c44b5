/*
 * backend/cuda_batched.h - internal: what backend/cuda_batched.c (dense linear algebra of
 * stacks of small matrices through batched routines) tells tests, with no CUDA header needed.
 * Its entry point for the library calls is declared in cuda_lib.h.
 */
#ifndef FUSEC_CUDA_BATCHED_H
#define FUSEC_CUDA_BATCHED_H

#include <stdint.h>

/* How many library calls in this process took each batched routine: getrfBatched (solve,
 * inv, det, slogdet), potrfBatched (cholesky), syevjBatched (eigh, eigvalsh), and of those
 * last the calls whose stack then went to the loop (eigh_loop: a matrix did not converge or
 * had eigenvalues that are not finite). Tests read them to know which path ran. */
typedef struct fcr_batched_counts {
    uint64_t lu, cholesky, eigh, eigh_loop;
} fcr_batched_counts;
void fcr_batched_counts_get(fcr_batched_counts *out);

#endif /* FUSEC_CUDA_BATCHED_H */
