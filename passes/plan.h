/*
 * passes/plan.h - internal: the plan a graph compiles to. Fusion groups nodes into kernels;
 * scheduling orders them and assigns buffers. Codegen turns each kernel into CUDA C; the
 * runtime binds buffers and launches. Prefix fcp_.
 */
#ifndef FUSEC_PLAN_H
#define FUSEC_PLAN_H

#include "graph.h"
#include "nodemap.h"

typedef enum fcp_kernel_kind {
    FCP_KERNEL_EW,     /* elementwise over `space` */
    FCP_KERNEL_REDUCE, /* independent reductions over `rmask` of `space`, streamed, with their
                          elementwise prologues and epilogues */
    FCP_KERNEL_ROW,    /* reduce -> broadcast -> elementwise over rows (rmask = trailing dims):
                          one block per row, the row kept on chip (or streamed: long_rows) */
    FCP_KERNEL_LIB,    /* a library call (matmul) */
    FCP_KERNEL_SCAN,   /* one scan (outs[0]) over `space` along its p.axis (rmask), its mapped
                          input computed inside */
    FCP_KERNEL_SCATTER /* the updates of one scatter (outs[0]) over `space`, the updates' shape:
                          atomic read-modify-writes of the buffer the elementwise kernel just
                          before it filled with in[0] (that kernel stores the same node) */
} fcp_kernel_kind;

extern const char *const fcp_kernel_kind_names[];

typedef struct fcp_kernel {
    fcp_kernel_kind kind;
    int ndim;
    int64_t space[FC_MAX_DIMS]; /* iteration space: EW: the outputs' shape; REDUCE / ROW: the
                                   reductions' input shape */
    uint32_t rmask;             /* REDUCE / ROW: reduced axes of space */
    int nout;
    fc_array **outs;            /* nodes this kernel stores, in order */
    int nleaf;
    fc_array **leaves;          /* buffers it loads (values or other kernels' outputs), in
                                   order of first use */
    int nnode;
    fc_array **nodes;           /* every node computed inside, inputs before users */
    int nred;
    fc_array **reds;            /* REDUCE / ROW: its reductions, in dependency order */
    bool long_rows;             /* ROW: a row does not fit on chip (FCP_ROW_MAX_BYTES): each
                                   phase streams the row from memory, and single-pass forms
                                   fold dependent reductions into one phase (codegen) */
} fcp_kernel;

/* Why two groups were not fused: recorded at every boundary for `fusec explain`. */
typedef struct fcp_boundary {
    fc_array *node;   /* the node materialised there */
    char *reason;
} fcp_boundary;

typedef struct fcp_plan {
    fc_ctx *ctx;
    int nout;
    fc_array **outs;         /* the arrays asked for (references held by the plan) */
    int nkernel;
    fcp_kernel *kernels;     /* in execution order */
    int nboundary;
    fcp_boundary *boundaries;
    int boundary_cap;        /* entries allocated in boundaries */
    /* Buffers: every materialised node that is not already a value gets a slot; slots are
     * reused once their last reader has run (liveness). */
    int nbuf;
    size_t *buf_bytes;       /* per slot */
    int buf_cap;             /* entries allocated in buf_bytes */
    int nmat;
    fc_array **mat;          /* materialised nodes (kernel outputs) */
    int *mat_buf;            /* slot of each */
    int *mat_last_use;       /* index of the last kernel that reads it (or nkernel for outputs) */
} fcp_plan;

/* Fusion limits (heuristics with recorded reasons). */
#define FCP_MAX_KERNEL_NODES 20000   /* a bigger group is split at its costliest node */
#define FCP_MAX_DEPTH 1000           /* longer dependency chains in one kernel are cut */
#define FCP_MAX_LEAVES 64            /* parameter space: pointers per kernel */
#define FCP_RECOMPUTE_MAX_OPS 48     /* a shared subexpression up to this size is recomputed in
                                        each consumer; a bigger one is materialised */
#define FCP_ROW_MAX_BYTES (44 * 1024) /* on-chip bytes of one row for a ROW kernel (its
                                        buffers' rows in dynamic shared memory; the rest of
                                        the 48 KiB a launch gets without opting in is left to
                                        the reductions' exchange buffers) */

#define FCP_ROW_LONG_MIN_ROWS 64      /* a row kernel whose row does not fit on chip needs
                                        this many rows (a block each); fewer, longer rows
                                        split between blocks in reduce kernels instead */

/* Runs the pipeline (simplify, cse, dce, fuse, schedule) on the graph of `arrays` and builds
 * the plan. The plan holds its own references. */
fc_status fcp_plan_build(fc_ctx *ctx, fc_array *const *arrays, int n, fcp_plan **out);
void fcp_plan_destroy(fcp_plan *plan);

/* In-place results (passes/donate.c): donor[o] (p->nout entries) is a value whose buffer
 * requested array o may be written into if that value dies with the evaluation: read by the
 * elementwise kernel that first stores o, only at the elements each thread writes, of o's
 * shape and element size, and by no later kernel; o's buffer slot holds nothing else. NULL
 * where none is. A backend aliases only when the value's references say it dies
 * (fcg_dying_nodes). */
fc_status fcp_donors(const fcp_plan *p, fc_array **donor);

/* A readable description of the plan (kernels, their nodes, boundaries and reasons), for
 * `fusec graph` / `fusec explain` and FUSEC_LOG=fusion. Free with fcg_strfree. */
char *fcp_plan_describe(const fcp_plan *plan);

/* The node numbers fcp_plan_describe writes ("%N"): positions in a walk of the plan's graph
 * (its outputs, values as leaves), into a map the caller owns (fcg_nodemap_free), so that
 * `fusec graph` can name the same nodes. */
fc_status fcp_plan_numbering(const fcp_plan *plan, fcg_nodemap *out);

/* One line saying what kernel k computes ("reduce over axis 1: sum(exp(x0-x1))"), for the
 * kernel cache's listing: a function of the kernel's structure alone (constants are "c",
 * extents are left out), like its source. Truncated to size with "..."; always terminated. */
void fcp_kernel_summary(const fcp_kernel *k, char *buf, size_t size);

/* Library epilogues (passes/epilogue.c): a library kernel may store, instead of its library
 * node, the end of an elementwise chain the library applies itself: `act?(prod + bias?)`
 * with prod an f32 matmul of two matrices, bias a vector along its last axis ([N] or
 * [1, N], stored), act relu (maximum(., +0.0)) or GELU's tanh form (gelu_tanh). The fusion
 * pass absorbs such chains; backends read them back with fcp_lib_epilogue. */
typedef enum fcp_activation {
    FCP_ACT_NONE,
    FCP_ACT_RELU, /* maximum(., +0.0) */
    FCP_ACT_GELU, /* gelu_tanh(.) */
} fcp_activation;

typedef struct fcp_epilogue {
    const fc_array *lib;  /* the library node computed inside the kernel */
    const fc_array *bias; /* added to every row of the product, or NULL */
    fcp_activation act;   /* applied last */
} fcp_epilogue;

/* Whether matmul node m can take an epilogue (f32 matrices, K > 0). */
bool fcp_epilogue_product(const fc_array *m);
/* The bias when `add` adds a vector along prod's last axis to prod, else NULL. */
const fc_array *fcp_epilogue_bias(const fc_array *add, const fc_array *prod);
/* The activation node f applies to x (maximum(x, +0.0) either way round, gelu_tanh(x)),
 * FCP_ACT_NONE when f is no such node. */
fcp_activation fcp_epilogue_activation(const fc_array *f, const fc_array *x);
/* Reads library kernel k's epilogue into e: true when k stores an epilogue's end (e->lib the
 * product, e->bias / e->act what follows); false when it stores its library node itself
 * (e->lib that node) or is not a library kernel (e->lib NULL). */
bool fcp_lib_epilogue(const fcp_kernel *k, fcp_epilogue *e);
/* What epilogue e applies, for people: "bias", "relu", "bias and gelu (tanh)". */
const char *fcp_epilogue_name(const fcp_epilogue *e);

/* The array a library node reads in place of its input j, through a flag of its own, when
 * that input is such a view and was not stored: a matmul operand's transpose
 * (fcg_matrix_transpose_of: cuBLAS's transpose flag), a stencil's weights reversed
 * (fcg_flat_reverse_of: a convolution's flip, read reversed by the stencil kernel); else
 * NULL. Fusion stores the source instead of the view; the backend reads the kernel's leaves
 * to see which it got. */
fc_array *fcp_lib_source(const fc_array *lib, int j);

#endif /* FUSEC_PLAN_H */
