/*
 * tests/random_dag.h - random array programs for tests: rdag_build(ctx, seed, ...) builds a
 * random DAG through the public API (include/fusec.h) alone, deterministically per seed.
 *
 * What a DAG holds (every row of graph/ops.def is reachable but those named at the end;
 * tests/test_graph.c's op_table tests check it over 600 seeds, and that every dtype, zero-size
 * and size-1 extents occur):
 *   - inputs made with fc_from_host (op `input`): random dtypes among all fifteen (bool,
 *     i8..i64, u8..u64, f16, bf16, f32, f64, c64, c128), random shapes of rank 0-4 with small
 *     extents (1s included, so operands broadcast), random data that is never all zeros
 *     (integers are non-zero, floats are non-zero with magnitudes in [1/8, 4), bool is a
 *     random mix);
 *   - zero extents: zero_percent of the programs (default 12, about 1 in 8) have an axis of
 *     extent 0 in their base shape; their first input has it, later inputs may (a suffix of
 *     the base shape), and their sources may be empty too (full, random_uniform, arange,
 *     linspace, eye with a 0). Views make zero-size arrays in any program (a slice 3:3, a
 *     reshape of an empty array to [2, 0] or [-1, 3]); reductions over an empty axis give
 *     their identity (or are refused, as NumPy refuses max of nothing);
 *   - optionally lazy sources (fc_full -> const, fc_arange, fc_linspace, fc_eye,
 *     fc_random_uniform -> random);
 *   - elementwise ops of every arity taken from graph/ops.def (every EW op with a public
 *     constructor, so a new op is picked up without touching this file), with operands that
 *     broadcast, weak scalars (fc_f64, fc_i64, fc_c128, fc_bool: const nodes) and strong 0-d
 *     scalars, and casts (fc_cast) to random dtypes;
 *   - views: reshape (with a -1 sometimes), transpose / permute, basic indexing (slice:
 *     steps of either sign and omitted bounds, integer indices, None, Ellipsis),
 *     expand_dims, squeeze, flip, broadcast_to, pad in every mode, concatenate and stack;
 *   - reductions (sum prod mean max min any all var std norm) over random axis sets, with
 *     keepdims and ddof, argmax / argmin over one axis or the flattened array,
 *     count_nonzero (below);
 *   - composites (graph/composite.c: meshgrid, tile, repeat, roll, split, tril / triu, diag,
 *     diagonal, trace, the nan-reductions, count_nonzero, logsumexp, isclose / allclose,
 *     round, nan_to_num, heaviside, float_power, deg2rad, sinc, ...), whose graphs mix
 *     views, reductions and where-chains in ways hand-written ops rarely do;
 *   - optionally a matmul and an fft / ifft along one axis (library calls, so fusion must cut
 *     around them; fft of an empty axis is refused, as NumPy refuses it), and with matmul the
 *     contractions built on it (graph/contract.c: einsum with random subscripts, with
 *     diagonals, broadcasting letters, sums and transposed layouts; dot, tensordot, outer,
 *     kron) and the dense linear algebra (graph/linalg.c: solve, inv, det, slogdet,
 *     cholesky) of diagonally dominant matrices made from a pool array (well conditioned and
 *     positive definite, so both backends agree and none fails), and sparse products
 *     (graph/sparse.c: a random COO matrix, int32 or int64 indices, times a pool array);
 *   - sorts (graph/sort.c, graph/sort_ops.c): sort, argsort, partition and argpartition along
 *     an axis or of the flattened array, unique, and the generator's permutation, shuffle and
 *     choice (library calls too; under gpu_safe, below, only where every backend breaks ties
 *     the same way);
 *   - 1 to max_outputs outputs, chosen among the computed (non-input) arrays.
 * Not generated: user kernels (elementwise_kernel, reduction_kernel: the host reference does
 * not run CUDA C; tests/test_gpu_user.c covers them), .fc program inputs without data (op
 * `input` with a name: tests/test_fc.c), and poison (never evaluated).
 * An op whose dtype or shape rules reject its operands returns a poisoned array: the result
 * is discarded and another op is tried. Arrays larger than max_elements are discarded too.
 *
 * Determinism: every choice comes from a splitmix64 stream seeded by `seed` and the options
 * (and whether the program has a zero extent, from a second stream of the seed); nothing
 * depends on pointers, time or hash-consing. The same seed and options give the same graph
 * (same fc_graph_hash) in every process.
 *
 * gpu_safe (default on) keeps the program free of results the API leaves unspecified or that
 * fail at evaluation, so a GPU run can be compared with the host reference: float-to-integer
 * casts go through where(isfinite(x), clip(x, lo, hi), 0) first (complex through its real
 * part), integer powers get a small non-negative weak exponent, the operands whose sign
 * bit is read (signbit's, copysign's second) have their NaNs replaced by 0, since the sign of
 * a NaN that arithmetic makes is the hardware's choice, and sorts whose order a last-bit
 * difference could change are not made (argsort of computed floats, sort of computed complex
 * numbers, unique of anything but a program input). Left as they come:
 * integer wrap-around (defined), NaN from sqrt / log of negatives (defined), shifts by
 * negative amounts and INT_MIN // -1 (rare with this data).
 *
 * Usage: a test that needs it writes #include "random_dag.c" (each tests/test_*.c is its own
 * executable, so the generator is compiled into the tests that use it and nowhere else):
 *
 *     rdag_options o;
 *     rdag_default_options(&o);
 *     rdag d;
 *     if (rdag_build(ctx, seed, &o, &d) != FC_OK) ...;   // only NOMEM and bad arguments fail
 *     fcp_plan_build(ctx, d.out, d.nout, &plan) or fc_eval(ctx, d.out, d.nout) ...
 *     char *text = rdag_print(&d);                        // the program as .fc, for reports
 *     fc_free(ctx, text);
 *     rdag_free(&d);
 *
 * Ownership: d.out and d.in are references no scope owns (fc_keep); rdag_free releases them.
 * rdag_build opens and closes its own scope, so temporaries never leak into the caller's.
 */
#ifndef FUSEC_TESTS_RANDOM_DAG_H
#define FUSEC_TESTS_RANDOM_DAG_H

#include <fusec.h>

#include <stdbool.h>
#include <stdint.h>

#define RDAG_MAX_OUTPUTS 3
#define RDAG_MAX_INPUTS 8

typedef struct rdag_options {
    int min_steps, max_steps; /* successful construction steps (default 4 .. 24) */
    int max_inputs;           /* fc_from_host inputs, 1 .. RDAG_MAX_INPUTS (default 4) */
    int max_outputs;          /* 1 .. RDAG_MAX_OUTPUTS (default 3) */
    int max_extent;           /* largest extent of an input axis (default 5) */
    int64_t max_elements;     /* larger intermediate arrays are discarded (default 4096) */
    bool sources;             /* lazy creation sources (default true) */
    bool views;               /* view and shape ops (default true) */
    bool reductions;          /* reductions and argmax / argmin (default true) */
    bool matmul;              /* an occasional matmul (default true) */
    bool gpu_safe;            /* see the file comment (default true) */
    bool composites;          /* composite functions: tile, roll, split, tril, nanmax,
                                 logsumexp, isclose, round, ... (default true) */
    bool fft;                 /* an occasional fft / ifft (default true) */
    int zero_percent;         /* programs with a zero extent, 0 .. 100 (default 12) */
} rdag_options;

typedef struct rdag {
    fc_ctx *ctx;
    uint64_t seed;
    int nout;
    fc_array *out[RDAG_MAX_OUTPUTS]; /* the outputs (references owned by the rdag) */
    int nin;
    fc_array *in[RDAG_MAX_INPUTS];   /* the fc_from_host inputs (owned by the rdag) */
    int nsteps;                      /* ops that produced a usable array */
    int ndiscarded;                  /* ops whose result was poisoned or too big */
    bool zero;                       /* the program has a zero extent (zero_percent) */
} rdag;

void rdag_default_options(rdag_options *o);

/* Builds the DAG of `seed`. opt NULL: the defaults. *out is always initialised.
 * @return FC_OK; FC_ERR_NULL (ctx or out NULL); FC_ERR_INVALID (options out of range);
 *         FC_ERR_NOMEM (the context's allocator failed; nothing is left allocated). */
fc_status rdag_build(fc_ctx *ctx, uint64_t seed, const rdag_options *opt, rdag *out);

/* Releases the outputs and inputs. Safe on a zeroed or already freed rdag. */
void rdag_free(rdag *d);

/* The DAG as canonical .fc text (fc_program_print, outputs y0..), for failure reports; free
 * with fc_free(d->ctx, text). NULL on failure. */
char *rdag_print(const rdag *d);

#endif /* FUSEC_TESTS_RANDOM_DAG_H */
