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
#define FCX_CODEGEN_VERSION 5

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
    FCX_STRATEGY_EW,        /* grid-stride over the space, 16-byte accesses where contiguous */
    FCX_STRATEGY_BLOCK_ROW, /* a block per output row (or per piece of a long row): reduced
                               axes innermost, threads stride along the row */
    FCX_STRATEGY_BLOCK_COL, /* reduced axes outside the innermost kept axis: a warp's lanes take
                               adjacent columns, its warps split the rows, so loads coalesce */
    FCX_STRATEGY_SCAN_TILES, /* a scan along contiguous rows: a block per tile of FCX_SCAN_TILE
                                elements, tiles chained by decoupled look-back */
    FCX_STRATEGY_SCAN_LINES, /* a scan along a strided axis (or short rows): a thread per line,
                                in order, adjacent threads on adjacent lines */
    FCX_STRATEGY_SCATTER,    /* grid-stride over the updates, an atomic read-modify-write each */
    FCX_STRATEGY_EW_TILE     /* elementwise, a block per tile of two axes (FCX_TILE_CHUNKS
                                vectors of up to FCX_TILE_VEC elements each way): transposed
                                reads pass through shared memory, so that reads and writes
                                both coalesce */
} fcx_strategy;

#define FCX_BLOCK 256          /* threads per block of elementwise kernels (tiled ones too:
                                  the prelude's FCX_TILE_THREADS, which they are written for) */
#define FCX_TILE_CHUNKS 16     /* vectors along each edge of an elementwise kernel's tile
                                  (FCX_STRATEGY_EW_TILE): 256 V x V blocks, one a thread */
#define FCX_TILE_VEC 4         /* most elements V of such a tile's vectors (16 bytes of f32) */
#define FCX_ROW_BLOCK_MAX 512  /* most threads per block of row kernels (launch bound) */
#define FCX_COL_BLOCK 256      /* threads per block of column kernels */
#define FCX_KERNEL_NAME "fusec_kernel"

#define FCX_SUMMARY_SIZE 160   /* fcx_kernel_src.summary, NUL included */

/* Byte sizes 1, 2, 4, 8, 16 as indices 0..4 of the per-size counts below. */
#define FCX_NSIZES 5

typedef struct fcx_kernel_src {
    char *src;             /* NUL-terminated CUDA C (with the device prelude) */
    size_t len;
    int nptr;              /* pointer arguments: leaves, then outputs, then (reduce kernels) the
                              scratch buffer */
    int nint, nflt;        /* integer (long long) and float (double) arguments */
    fcx_slot *islots;      /* nint */
    fcx_slot *fslots;      /* nflt */
    fcx_strategy strategy;
    int block;             /* most threads per block (the kernel's launch bound) */
    bool idx64;            /* 64-bit index arithmetic */
    int vec;               /* elements per 16-byte access along rows, or of an elementwise
                              kernel's step when ew_thread_steps > 0 (1: none) */
    int ew_thread_steps;   /* elementwise kernels: steps of vec elements a thread takes (the
                              grid covers the work once); 0: a grid that fills the device once
                              and strides */
    bool splits;           /* a reduce kernel: long reductions split between blocks through the
                              scratch buffer */
    int fields[FCX_NSIZES];  /* accumulator fields of one partial result, per byte size */
    int cached[FCX_NSIZES];  /* row kernels: buffers kept on chip, per element byte size */
    size_t static_smem;    /* bytes of static shared memory (the reductions' exchange) */
    bool fast_math;        /* the context's fast-math tier: the source has
                              codegen/fast_math.cuh in front of the prelude and compiles with
                              --use_fast_math (both in the key) */
    char summary[FCX_SUMMARY_SIZE]; /* what it computes (fcp_kernel_summary), stored with the
                                       cached binary for `fusec cache list`; not in the key */
} fcx_kernel_src;

/* How one launch of a kernel looks for the kernel's current extents. Codegen owns it (it
 * knows the strategy); the runtime applies it. */
typedef struct fcx_launch {
    unsigned grid, block;
    size_t smem_bytes;    /* dynamic shared memory per block */
    size_t scratch_bytes; /* > 0: the runtime passes a zeroed device scratch buffer of this
                             size as the last pointer argument (src->nptr counts it). The kernel
                             leaves it zeroed again. When 0 and src->nptr counts a scratch
                             pointer, that pointer is passed as NULL (never read). Integer
                             arguments follow all src->nptr pointers. */
} fcx_launch;

/* The constants that split long reductions between blocks; the device prelude has the same
 * defaults (FCX_WARP, FCX_SPLIT_*, FCX_SCRATCH_CAP). Tests use other values on both sides. */
typedef struct fcx_tuning {
    int warp;
    long long split_target, split_min_chunk, split_max, split_align, scratch_cap;
    long long scan_tile;    /* elements of one tile of a scan whose accumulator has at most 4
                               bytes (FCX_SCAN_TILE); fcx_scan_tile scales it */
    long long scan_min_row; /* shorter contiguous rows scan a thread each (FCX_SCAN_MIN_ROW) */
} fcx_tuning;

extern const fcx_tuning fcx_default_tuning;

/* Elements of one tile of a scan with an accumulator of acc_bytes (the prelude's
 * FCX_SCAN_TILE_OF): wider accumulators take proportionally fewer. */
static inline long long fcx_scan_tile(const fcx_tuning *t, size_t acc_bytes) {
    long long n = acc_bytes <= 4 ? t->scan_tile : t->scan_tile * 4 / (long long)acc_bytes;
    return n > 0 ? n : 1;
}

/* Bytes of a tiled scan's status words for ntiles tiles (the prelude's fcx_scan_publish):
 * they follow the scratch's 16 bytes of counters and are zero between launches. */
static inline size_t fcx_scan_status_bytes(size_t acc_bytes, long long ntiles) {
    return (size_t)ntiles * (acc_bytes <= 4 ? 8 : acc_bytes <= 8 ? 16 : 4);
}
/* The whole scratch of a tiled scan: counters, status words and, for accumulators wider than
 * 8 bytes, each tile's total and inclusive prefix. */
static inline size_t fcx_scan_scratch_bytes(size_t acc_bytes, long long ntiles) {
    if (acc_bytes <= 8) return 16 + fcx_scan_status_bytes(acc_bytes, ntiles);
    return 16 + ((size_t)ntiles * 4 + 15) / 16 * 16 + 2 * (size_t)ntiles * acc_bytes;
}

/* The pieces a long reduction is split into (the prelude's fcx_split): items independent
 * reductions of len elements, part_bytes of scratch per piece of all items. */
void fcx_split_plan(const fcx_tuning *t, long long items, long long len, long long part_bytes,
                    bool cols, long long *S, long long *CH);

/* Dynamic shared memory a launch of k needs (it may depend on the extents). The runtime asks
 * the occupancy API with it, then calls fcx_launch_config. */
size_t fcx_dynamic_smem(const fcp_kernel *k, const fcx_kernel_src *src);
/* Grid, block and scratch for k on a device of sm_count multiprocessors that holds
 * blocks_per_sm blocks of src->block threads of this kernel at once. The partition of the
 * work (and so every result bit) depends on the extents alone, never on the device. */
void fcx_launch_config(const fcp_kernel *k, const fcx_kernel_src *src, int sm_count,
                       int blocks_per_sm, fcx_launch *out);
/* The same with other split constants (tests). */
void fcx_launch_config_tuned(const fcp_kernel *k, const fcx_kernel_src *src, int sm_count,
                             int blocks_per_sm, const fcx_tuning *t, fcx_launch *out);

/* Generates the kernel's source and recipe. Deterministic. */
fc_status fcx_generate(fc_ctx *ctx, const fcp_kernel *k, fcx_kernel_src *out);
/* The same with another kernel name and optionally without the prelude, so that several
 * kernels can share one translation unit (each then sits in a namespace named after it, so
 * their parameter structs do not clash). Used to batch compiles in tests and tools. */
fc_status fcx_generate_named(fc_ctx *ctx, const fcp_kernel *k, const char *name,
                             bool with_prelude, fcx_kernel_src *out);
void fcx_kernel_src_free(fc_ctx *ctx, fcx_kernel_src *s);

/* The radix sort kernels (codegen/sort.cuh) for elements of dtype t: fcs_rows, fcs_zero,
 * fcs_hist, fcs_scan, fcs_pass, fcs_pass_idx, compiled as a raw module (backend/cuda_sort.c
 * says how they run). *out is fcg_malloc'd, strlen + 1 bytes. */
fc_status fcx_sort_source(fc_ctx *ctx, fc_dtype t, char **out);
/* Elements a thread holds in a tile of the sort kernels for dtype t (a tile is 256 of them):
 * rows of up to 256 * fcx_sort_items(t) elements sort in one block. */
int fcx_sort_items(fc_dtype t);
/* Elements a thread holds in a tile of a pass over the whole array: of a keys-only pass
 * (fcs_pass), or with idx of one that moves indices too (fcs_pass_idx). */
int fcx_sort_pass_items(fc_dtype t, bool idx);
/* Words of an element (2 for complex) and bits of a word, for the passes. */
int fcx_sort_words(fc_dtype t);
int fcx_sort_word_bits(fc_dtype t);

/* The STENCIL2D kernel (codegen/stencil.c): what is baked into its source, and the tile
 * geometry fcx_stencil_plan chooses for it. */
#define FCX_STENCIL_THREADS 256 /* a block: 32 x 8 threads */
typedef struct fcx_stencil {
    fc_dtype dtype;
    int64_t kh, kw, oy, ox; /* the weights' extent (both > 0) and the origin */
    int boundary;           /* fc_conv_boundary */
    bool wide;              /* 64-bit index arithmetic */
    bool tiled;             /* the input tile and its halo in shared memory */
    bool unrolled;          /* small kernel: unrolled loops, rows slide in registers */
    int ry, rx;             /* a thread's outputs: ry rows by rx columns 32 apart */
    bool flipped;           /* the weights' buffer holds them reversed (a convolution's flip of
                               a stored array, read from its source): weight e is at
                               KH * KW - 1 - e. Set by the caller after fcx_stencil_plan. */
} fcx_stencil;
/* Fills s for a STENCIL2D node of dtype t with weights [kh, kw] (both > 0), origin
 * (oy, ox), boundary, input [h, w] and output [oh, ow]: the extents only choose the index
 * width (a coarse size class), never the source otherwise. */
void fcx_stencil_plan(fcx_stencil *s, fc_dtype t, int64_t kh, int64_t kw, int64_t oy,
                      int64_t ox, int boundary, int64_t h, int64_t w, int64_t oh, int64_t ow);
/* The work units of an [oh, ow] output (the kernel's `tiles` argument; blocks take them
 * grid-stride) and the tiles of a row of them (`tiles_x`). */
uint64_t fcx_stencil_tiles(const fcx_stencil *s, int64_t oh, int64_t ow, uint64_t *tiles_x);
/* The kernel's source, its entry point `name`(x, w, out, h, w, oh, ow, tiles_x, tiles,
 * fill_re, fill_im), 256 threads a block, no dynamic shared memory. *out is fcg_malloc'd
 * (fcg_strfree). Deterministic: the same s gives the same bytes. */
fc_status fcx_stencil_source(fc_ctx *ctx, const fcx_stencil *s, const char *name, char **out);

/* The masked triangle copy of dense linear algebra (codegen/tri.c): entry points
 * fcx_tri_functions[fcx_tri_function(es)] for elements of es = 4, 8 or 16 bytes (-1 for
 * another size), each (src, dst, rows, cols, src_pitch, src_stride, dst_pitch, dst_stride,
 * tasks, upper): for tasks = count * rows rows of count matrices rows x cols (pitches between
 * rows and strides between matrices in elements, all 64-bit), the lower triangle (j <= i; the
 * upper, j >= i, where upper != 0) of each src matrix is copied into dst and dst's other
 * triangle set to zero; src NULL leaves dst's kept triangle as it is. Blocks of at most
 * FCX_TRI_THREADS threads take rows grid-stride: any grid and block size cover any stack.
 * One module for every dtype; *out is fcg_malloc'd (fcg_strfree). */
#define FCX_TRI_THREADS 256
extern const char *const fcx_tri_functions[3];
int fcx_tri_function(size_t es);
fc_status fcx_tri_source(fc_ctx *ctx, char **out);

/* The helper kernels of batched dense linear algebra (codegen/batched.c), one module for
 * every dtype: fcx_batched_functions[FCX_BATCHED_PTRS] (dst, base, stride, count) writes
 * dst[i] = base + i * stride (bytes, 64-bit words) for i < count: the per-matrix pointer
 * arrays of cuBLAS's and cuSOLVER's batched routines; fcx_batched_functions[
 * fcx_batched_move(es)] for words of es = 4, 8 or 16 bytes (-1 for another size) takes
 * (src, dst, count, rows, cols, src_row, src_col, src_mat, dst_row, dst_col, dst_mat, mask)
 * and writes, for each of count matrices b and each (i, j) of rows x cols,
 * dst[b * dst_mat + i * dst_row + j * dst_col] = src[b * src_mat + i * src_row + j * src_col]
 * with the element's top 64 bits XORed with mask (a 4-byte word with its low 32; 1 << 63
 * conjugates a c64 or c128 element); src NULL writes zeros. Strides in words, all 64-bit; threads take
 * elements grid-stride in dst's order (j fastest): any grid and block cover any stack.
 * fcx_batched_functions[FCX_BATCHED_NONFINITE4 + (es == 8)] (info, w, n, count, mark), for
 * count matrices' n real eigenvalues at w (f32 or f64): info[b] = mark where info[b] == 0
 * and one of matrix b's eigenvalues is not finite; a thread a matrix, grid-stride. *out is
 * fcg_malloc'd (fcg_strfree). */
enum {
    FCX_BATCHED_PTRS,
    FCX_BATCHED_MOVE4,
    FCX_BATCHED_NONFINITE4 = FCX_BATCHED_MOVE4 + 3,
    FCX_BATCHED_COUNT = FCX_BATCHED_NONFINITE4 + 2
};
#define FCX_BATCHED_THREADS 256
extern const char *const fcx_batched_functions[FCX_BATCHED_COUNT];
int fcx_batched_move(size_t es);
fc_status fcx_batched_source(fc_ctx *ctx, char **out);
/* Which stacks take the batched paths (backend/cuda_batched.c says why): the LINALG node a
 * (solve, slogdet, cholesky of n <= FCX_BATCHED_MAX_N; eigh, eigvalsh of n <= 32, what
 * syevjBatched accepts) over a stack of at least 2 matrices, f32, f64, c64 or c128. The mode
 * is FUSEC_LINALG_BATCHED's (fcx_batched_mode_env): 0 never, `all` every stack a batched
 * routine can serve (one matrix, any n; syevj's limit stays), anything else the rule. The
 * backend decides with it, and `fusec warm` builds the helper module for the nodes it
 * answers true for. */
#define FCX_BATCHED_MAX_N 64
#define FCX_BATCHED_SYEVJ_MAX_N 32
typedef enum fcx_batched_mode {
    FCX_BATCHED_OFF,
    FCX_BATCHED_AUTO,
    FCX_BATCHED_ALL
} fcx_batched_mode;
fcx_batched_mode fcx_batched_mode_env(void);
bool fcx_batched_takes(const fc_array *a, fcx_batched_mode mode);

/* The device prelude every kernel starts with (codegen/prelude.cuh, embedded at build). */
extern const char fcx_prelude_source[];
extern const size_t fcx_prelude_size;
/* What a kernel of the fast-math tier has in front of it (codegen/fast_math.cuh). */
extern const char fcx_fast_math_source[];
extern const size_t fcx_fast_math_size;

#endif /* FUSEC_CODEGEN_H */
