/*
 * codegen/codegen.h - internal: one fused kernel of a plan -> canonical CUDA C and the recipe
 * for launching it. Prefix fcx_.
 *
 * The source is a pure function of the kernel's structure: dtypes, ops, rank, broadcast and
 * padding pattern, index width. Every extent, stride, slice start, pad width and constant is
 * a kernel argument, described by a slot, so one compiled kernel serves every size and the
 * same program yields byte-identical source in every process.
 */
#ifndef FUSEC_CODEGEN_H
#define FUSEC_CODEGEN_H

#include "plan.h"

/* Version of the generated code: part of the cache key; bump on any change to codegen. */
#define FCX_CODEGEN_VERSION 1

/* Where an argument's value comes from. `node` indexes the kernel's nodes (0..nnode-1) then
 * its leaves (nnode..nnode+nleaf-1). */
typedef enum fcx_slot_kind {
    FCX_SLOT_SPACE_EXTENT, /* kernel->space[dim] */
    FCX_SLOT_EXTENT,       /* node's shape[dim] */
    FCX_SLOT_PARAM_A,      /* node->p.a[dim]: slice start, pad before */
    FCX_SLOT_PARAM_B,      /* node->p.b[dim]: slice step, pad after */
    FCX_SLOT_IVAL,         /* node->p.ival: integer constant, eye k, random seed */
    FCX_SLOT_COUNT,        /* node->p.count: linspace num */
    FCX_SLOT_RE,           /* node->p.re: float constant, arange start, pad value */
    FCX_SLOT_IM            /* node->p.im: imaginary part, arange step, linspace stop */
} fcx_slot_kind;

typedef struct fcx_slot {
    uint8_t kind;
    int32_t node;
    int32_t dim;
} fcx_slot;

typedef enum fcx_strategy {
    FCX_STRATEGY_EW,        /* grid-stride over the space, one element per thread */
    FCX_STRATEGY_BLOCK_ROW  /* one block per output row (REDUCE and ROW kernels) */
} fcx_strategy;

#define FCX_BLOCK 256
#define FCX_KERNEL_NAME "fusec_kernel"

typedef struct fcx_kernel_src {
    char *src;             /* NUL-terminated CUDA C (with the device prelude) */
    size_t len;
    int nptr;              /* pointer arguments: leaves, then outputs */
    int nint, nflt;        /* integer (long long) and float (double) arguments */
    fcx_slot *islots;      /* nint */
    fcx_slot *fslots;      /* nflt */
    fcx_strategy strategy;
    int block;             /* threads per block */
    bool idx64;            /* 64-bit index arithmetic */
} fcx_kernel_src;

/* Generates the kernel's source and recipe. Deterministic. */
fc_status fcx_generate(fc_ctx *ctx, const fcp_kernel *k, fcx_kernel_src *out);
/* The same with another kernel name and optionally without the prelude, so that several
 * kernels can share one translation unit (each then sits in a namespace named after it, so
 * their parameter structs do not clash). Used to batch compiles in tests and tools. */
fc_status fcx_generate_named(fc_ctx *ctx, const fcp_kernel *k, const char *name,
                             bool with_prelude, fcx_kernel_src *out);
void fcx_kernel_src_free(fc_ctx *ctx, fcx_kernel_src *s);

/* The device prelude every kernel starts with (codegen/prelude.cuh, embedded at build). */
extern const char fcx_prelude_source[];
extern const size_t fcx_prelude_size;

#endif /* FUSEC_CODEGEN_H */
