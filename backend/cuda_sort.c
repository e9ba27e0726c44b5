/*
 * backend/cuda_sort.c - np.sort and np.argsort on the GPU: fusec's radix sort kernels
 * (codegen/sort.cuh), compiled per dtype through the kernel cache as a raw module and run
 * here as a library call.
 *
 * Rows of up to a tile (256 threads x fcx_sort_items elements: 4096 elements of 4 bytes or
 * less, 2048 of 8, 1024 of 16) sort in one block each, every pass in shared memory, one
 * kernel. Longer rows sort with passes over the whole array, 8 bits a pass, least significant
 * first; each pass is three kernels: count each block's digits (fcs_upsweep), turn the counts
 * into starting places (fcs_scan, one block), move the elements there tile by tile, stably
 * (fcs_downsweep). Several long rows sort together: the key passes sort every element of the
 * array, then passes over the row number (each element carries its flat position) regroup the
 * rows, each still in sorted order, since every pass is stable. argsort carries the positions
 * and turns them into positions within the row at the end (fcs_finish); sort carries them only
 * for the row passes. The element itself, not its key, moves, so a sorted -0.0 or NaN keeps
 * its bits.
 *
 * Why not CUB: its device-wide radix sort is host code (dispatch through the runtime API) that
 * NVRTC cannot compile, and linking a CUB-built library means nvcc in the build and a binary
 * per arch, against fusec's model (NVRTC for the context's GPU, cached by key, warmable for
 * GPUs the build host does not have). The block-level ranking CUB offers is the part written
 * here in a few dozen lines, with NumPy's order built into the digit function.
 *
 * Positions are 32-bit: an array of 2^32 elements or more is sorted on the host
 * (FC_ERR_UNSUPPORTED sends the call there, as for other library calls without a path).
 */
#include "graph.h"

#include "codegen.h"
#include "cuda_lib.h"
#include "raw.h"

#include <stdint.h>
#include <string.h>

#define SORT_THREADS 256

enum { F_UPSWEEP, F_SCAN, F_DOWNSWEEP, F_DOWNSWEEP_IDX, F_ROWS, F_FINISH, F_COUNT };
static const char *const function_names[F_COUNT] = {
    "fcs_upsweep", "fcs_scan", "fcs_downsweep", "fcs_downsweep_idx", "fcs_rows", "fcs_finish"};

typedef struct sort_module {
    CUmodule mod;
    CUfunction fn[F_COUNT];
    int per_sm[F_COUNT]; /* resident blocks a multiprocessor of the shared-memory kernels */
} sort_module;

typedef struct sort_modules {
    sort_module of[FC_DTYPE_COUNT];
} sort_modules;

void fcr_sort_release(fc_ctx *ctx, void *modules) {
    sort_modules *m = modules;
    if (!m) return;
    for (int t = 0; t < FC_DTYPE_COUNT; t++) fcr_lib_module_unload(ctx, m->of[t].mod);
    fcg_free(ctx, m, sizeof *m);
}

/* The loaded module for dtype t: compiled (or found in the kernel cache) on first use. */
static fc_status module_for(fc_ctx *ctx, void **modules, fc_dtype t, sort_module **out) {
    if (!*modules && !(*modules = fcg_calloc(ctx, sizeof(sort_modules))))
        return fcg_error(ctx, FC_ERR_NOMEM, "sort: out of memory");
    sort_module *m = &((sort_modules *)*modules)->of[t];
    *out = m;
    if (m->mod) return FC_OK;
    const char *arch;
    int sms;
    fcr_lib_device(ctx, &arch, &sms);
    char *src = NULL;
    fc_status st = fcx_sort_source(ctx, t, &src);
    fck_raw_binary bin;
    memset(&bin, 0, sizeof bin);
    if (st == FC_OK) st = fck_raw_compile(ctx, src, NULL, 0, NULL, 0, arch, &bin);
    if (src) fcg_free(ctx, src, strlen(src) + 1);
    CUmodule mod = NULL;
    if (st == FC_OK) st = fcr_lib_module(ctx, bin.cubin, &mod);
    fck_raw_binary_free(ctx, &bin);
    for (int f = 0; f < F_COUNT && st == FC_OK; f++)
        st = fcr_lib_function(ctx, mod, function_names[f], &m->fn[f]);
    static const int tiled[] = {F_DOWNSWEEP, F_DOWNSWEEP_IDX, F_ROWS};
    for (int i = 0; i < 3 && st == FC_OK; i++) {
        int f = tiled[i];
        st = fcr_lib_prefer_shared(ctx, m->fn[f]);
        if (st == FC_OK) st = fcr_lib_occupancy(ctx, m->fn[f], SORT_THREADS, &m->per_sm[f]);
        if (m->per_sm[f] < 1) m->per_sm[f] = 1;
    }
    if (st != FC_OK) {
        fcr_lib_module_unload(ctx, mod);
        memset(m, 0, sizeof *m);
        return st;
    }
    m->mod = mod;
    return FC_OK;
}

/* One pass over the whole array: which part of the key (codegen/sort.cuh: 0 the value or
 * real word, 1 the imaginary word, 2 the complex class, 3 the row) and the digit's shift. */
typedef struct pass {
    int part, shift;
} pass;

/* The passes for rows of dtype t, least significant first; rows > 1 adds the row passes. */
static int passes_of(fc_dtype t, uint64_t rows, pass *p) {
    int n = 0, bits = fcx_sort_word_bits(t);
    if (fcx_sort_words(t) == 2)
        for (int s = 0; s < bits; s += 8) p[n++] = (pass){1, s};
    for (int s = 0; s < bits; s += 8) p[n++] = (pass){0, s};
    if (fcx_sort_words(t) == 2) p[n++] = (pass){2, 0};
    for (int s = 0; s < 64 && rows > 1 && ((rows - 1) >> s) != 0; s += 8) p[n++] = (pass){3, s};
    return n;
}

typedef struct temps {
    CUdeviceptr p[5];
    size_t bytes[5];
    int n;
} temps;

static fc_status temp(fc_ctx *ctx, temps *tm, size_t bytes, CUstream s, CUdeviceptr *out) {
    fc_status st = fcr_lib_alloc(ctx, bytes, s, out);
    if (st != FC_OK) return st;
    tm->p[tm->n] = *out;
    tm->bytes[tm->n++] = bytes;
    return FC_OK;
}

static fc_status sort_passes(fc_ctx *ctx, const sort_module *m, CUstream s, fc_dtype t,
                             bool arg, uint64_t total, uint32_t row_len, CUdeviceptr in,
                             CUdeviceptr out, temps *tm) {
    const char *arch;
    int sms;
    fcr_lib_device(ctx, &arch, &sms);
    pass ps[40];
    const uint64_t rows = total / row_len;
    const int np = passes_of(t, rows, ps);
    int nkey = np;
    while (nkey > 0 && ps[nkey - 1].part == 3) nkey--;
    const bool with_idx = arg || rows > 1;
    const size_t es = fc_dtype_size(t);
    const uint64_t tile = (uint64_t)SORT_THREADS * (uint64_t)fcx_sort_items(t);
    const uint64_t tiles = (total + tile - 1) / tile;
    const int down = with_idx ? F_DOWNSWEEP_IDX : F_DOWNSWEEP;
    uint64_t grid = (uint64_t)sms * (uint64_t)m->per_sm[down];
    if (grid > tiles) grid = tiles;
    const uint64_t chunk = (tiles + grid - 1) / grid * tile;
    grid = (total + chunk - 1) / chunk;
    uint32_t blocks = (uint32_t)grid;
    CUdeviceptr counts = 0, totals, key[2] = {0, 0}, idx[2] = {0, 0};
    fc_status st = temp(ctx, tm, (size_t)(256 * grid + 256) * 4, s, &counts);
    totals = counts + 256 * grid * 4;
    /* sort: the last pass writes `out`, so the pass before it writes the temporary and so on
     * back; argsort's keys go back and forth between two temporaries (its last key pass
     * writes none). */
    if (st == FC_OK && (arg ? nkey > 1 : np > 1)) st = temp(ctx, tm, total * es, s, &key[0]);
    if (st == FC_OK && arg && nkey > 2) st = temp(ctx, tm, total * es, s, &key[1]);
    if (st == FC_OK && with_idx) st = temp(ctx, tm, total * 4, s, &idx[0]);
    if (st == FC_OK && with_idx && np > 1) st = temp(ctx, tm, total * 4, s, &idx[1]);
    CUdeviceptr kin = in, iin = 0;
    for (int p = 0; p < np && st == FC_OK; p++) {
        CUdeviceptr iout = with_idx ? idx[p % 2] : 0;
        CUdeviceptr kout = !arg ? ((np - 1 - p) % 2 == 0 ? out : key[0])
                                : p + 1 < nkey ? key[p % 2] : 0;
        int part = ps[p].part, shift = ps[p].shift;
        uint64_t n64 = total;
        uint32_t rl = row_len;
        void *up[] = {&kin, &iin, &n64, &rl, &part, &shift, (void *)&chunk, &counts};
        st = fcr_lib_launch(ctx, m->fn[F_UPSWEEP], (unsigned)grid, SORT_THREADS, s, up);
        void *sc[] = {&counts, &totals, &blocks};
        if (st == FC_OK) st = fcr_lib_launch(ctx, m->fn[F_SCAN], 256, SORT_THREADS, s, sc);
        void *keys_only[] = {&kin, &kout, &n64, &part, &shift, (void *)&chunk, &counts, &totals};
        void *pairs[] = {&kin, &iin, &kout, &iout, &n64, &rl, &part, &shift, (void *)&chunk,
                         &counts, &totals};
        if (st == FC_OK)
            st = fcr_lib_launch(ctx, m->fn[down], (unsigned)grid, SORT_THREADS, s,
                                with_idx ? pairs : keys_only);
        kin = kout;
        iin = iout;
    }
    if (st == FC_OK && arg) {
        uint64_t n64 = total;
        uint32_t rl = row_len;
        void *fin[] = {&iin, &out, &n64, &rl};
        uint64_t fin_blocks = (total + SORT_THREADS - 1) / SORT_THREADS;
        if (fin_blocks > (uint64_t)sms * 16) fin_blocks = (uint64_t)sms * 16;
        st = fcr_lib_launch(ctx, m->fn[F_FINISH], (unsigned)fin_blocks, SORT_THREADS, s, fin);
    }
    return st;
}

fc_status fcr_sort_run(fc_ctx *ctx, void **modules, CUstream s, const fc_array *a,
                       CUdeviceptr in, CUdeviceptr out) {
    const fc_array *x = a->in[0];
    const fc_dtype t = (fc_dtype)x->dtype;
    const uint64_t total = fcg_node_numel(x);
    const int64_t row_len = x->ndim ? x->shape[x->ndim - 1] : 1;
    if (total == 0 || row_len == 0) return FC_OK;
    if (total > UINT32_MAX) return FC_ERR_UNSUPPORTED; /* 32-bit positions: the host sorts it */
    sort_module *m = NULL;
    fc_status st = module_for(ctx, modules, t, &m);
    if (st != FC_OK) return st;
    const bool arg = a->op == FCG_OP_ARGSORT;
    const uint64_t rows = total / (uint64_t)row_len;
    if ((uint64_t)row_len <= (uint64_t)SORT_THREADS * (uint64_t)fcx_sort_items(t)) {
        const char *arch;
        int sms;
        fcr_lib_device(ctx, &arch, &sms);
        uint64_t grid = (uint64_t)sms * (uint64_t)m->per_sm[F_ROWS] * 4;
        if (grid > rows) grid = rows;
        CUdeviceptr kout = arg ? 0 : out, iout = arg ? out : 0;
        int rl = (int)row_len;
        uint64_t r64 = rows;
        void *args[] = {&in, &kout, &iout, &r64, &rl};
        return fcr_lib_launch(ctx, m->fn[F_ROWS], (unsigned)grid, SORT_THREADS, s, args);
    }
    temps tm = {.n = 0};
    st = sort_passes(ctx, m, s, t, arg, total, (uint32_t)row_len, in, out, &tm);
    for (int i = 0; i < tm.n; i++) fcr_lib_free(ctx, tm.p[i], tm.bytes[i], s);
    return st;
}
