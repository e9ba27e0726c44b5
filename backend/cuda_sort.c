/*
 * backend/cuda_sort.c - np.sort and np.argsort on the GPU: fusec's radix sort kernels
 * (codegen/sort.cuh), compiled per dtype through the kernel cache as a raw module and run
 * here as a library call.
 *
 * Rows of up to a tile (256 threads x fcx_sort_items elements: 4096 elements of 4 bytes or
 * less, 2048 of 8, 1024 of 16) sort in one block each, every pass in shared memory, one
 * kernel. Longer rows sort with passes over the whole array, 8 bits a pass, least significant
 * first, onesweep style: one kernel zeroes the counters (fcs_zero), one reads the keys once
 * and counts the digits of every key pass (fcs_hist), one turns the counts into each digit's
 * start for every pass (fcs_scan), then each pass is one kernel (fcs_pass) that reads and
 * writes every element once, its blocks taking tiles in order and learning how many elements
 * of each digit the earlier tiles hold by a decoupled look-back. Several long rows sort
 * together: the key passes sort every element of the array, then passes over the row number
 * (each element carries its flat position) regroup the rows, each still in sorted order,
 * since every pass is stable. argsort carries the positions and its last pass writes them as
 * int64 positions within the row; sort carries them only for the row passes. The element
 * itself, not its key, moves, so a sorted -0.0 or NaN keeps its bits.
 *
 * Why not CUB: its device-wide radix sort is host code (dispatch through the runtime API) that
 * NVRTC cannot compile, and linking a CUB-built library means nvcc in the build and a binary
 * per arch, against fusec's model (NVRTC for the context's GPU, cached by key, warmable for
 * GPUs the build host does not have). The onesweep design (Adinets and Merrill, 2022) is
 * written here instead, in a few hundred lines, with NumPy's order built into the digit.
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

enum { F_ROWS, F_ZERO, F_HIST, F_SCAN, F_PASS, F_PASS_IDX, F_COUNT };
static const char *const function_names[F_COUNT] = {"fcs_rows", "fcs_zero", "fcs_hist",
                                                    "fcs_scan", "fcs_pass", "fcs_pass_idx"};

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
    static const int tiled[] = {F_ROWS, F_HIST, F_PASS, F_PASS_IDX};
    for (int i = 0; i < 4 && st == FC_OK; i++) {
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

/* The passes for rows of dtype t, least significant first (the key passes in the order of
 * codegen/sort.cuh's FCS_KPASSES); rows > 1 adds the row passes. */
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

/* A look-back count has 30 bits, so a pass launch covers fewer than 2^30 elements: an array
 * of more is sorted in portions of whole tiles, one launch each, each starting its digits
 * where the last one left them. */
#define PORTION_LIMIT ((1u << 30) - 1u)

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
    const uint64_t ptile = (uint64_t)SORT_THREADS * (uint64_t)fcx_sort_pass_items(t, with_idx);
    const uint64_t tiles = (total + ptile - 1) / ptile;
    const uint64_t portion = PORTION_LIMIT / ptile * ptile;
    const uint64_t portions = (total + portion - 1) / portion;
    /* Scratch, in words: the histogram's totals and the passes' ticket counters (zeroed
     * first), each portion's digit starts for each pass, and two generations of look-back
     * words, a pass using one while zeroing the other for the next. */
    const uint64_t n_totals = (uint64_t)nkey * 256, n_tickets = (uint64_t)np * portions;
    uint64_t n_bases = portions * (uint64_t)np * 256, n_status = tiles * 256;
    CUdeviceptr scratch = 0, key[2] = {0, 0}, idx[2] = {0, 0};
    fc_status st = temp(ctx, tm, (size_t)(n_totals + n_tickets + n_bases + 2 * n_status) * 4,
                        s, &scratch);
    CUdeviceptr totals = scratch, tickets = totals + n_totals * 4,
                bases = tickets + n_tickets * 4;
    CUdeviceptr status[2] = {bases + n_bases * 4, bases + (n_bases + n_status) * 4};
    /* sort: the last pass writes `out`, so the pass before it writes the temporary and so on
     * back; argsort's keys go back and forth between two temporaries (its last key pass
     * writes none), and its last pass writes int64 positions to `out`. Indices are written by
     * every pass but the last. */
    if (st == FC_OK && (arg ? nkey > 1 : np > 1)) st = temp(ctx, tm, total * es, s, &key[0]);
    if (st == FC_OK && arg && nkey > 2) st = temp(ctx, tm, total * es, s, &key[1]);
    if (st == FC_OK && with_idx && np > 1) st = temp(ctx, tm, total * 4, s, &idx[0]);
    if (st == FC_OK && with_idx && np > 2) st = temp(ctx, tm, total * 4, s, &idx[1]);

    uint32_t zeroed = (uint32_t)(n_totals + n_tickets);
    void *zero_args[] = {&scratch, &zeroed};
    if (st == FC_OK)
        st = fcr_lib_launch(ctx, m->fn[F_ZERO], (zeroed + SORT_THREADS - 1) / SORT_THREADS,
                            SORT_THREADS, s, zero_args);
    const uint64_t htile = (uint64_t)SORT_THREADS * (uint64_t)fcx_sort_items(t);
    const uint64_t htiles = (total + htile - 1) / htile;
    uint64_t hgrid = (uint64_t)sms * (uint64_t)m->per_sm[F_HIST];
    if (hgrid > htiles) hgrid = htiles;
    uint64_t hchunk = (htiles + hgrid - 1) / hgrid * htile;
    hgrid = (total + hchunk - 1) / hchunk;
    uint64_t n64 = total, rows64 = rows;
    void *hist_args[] = {&in, &n64, &hchunk, &totals, &status[0], &n_status};
    if (st == FC_OK)
        st = fcr_lib_launch(ctx, m->fn[F_HIST], (unsigned)hgrid, SORT_THREADS, s, hist_args);
    void *scan_args[] = {&totals, &bases, &rows64, &row_len};
    if (st == FC_OK) st = fcr_lib_launch(ctx, m->fn[F_SCAN], (unsigned)np, SORT_THREADS, s,
                                         scan_args);

    const int f = with_idx ? F_PASS_IDX : F_PASS;
    CUdeviceptr kin = in, iin = 0;
    for (int p = 0; p < np && st == FC_OK; p++) {
        const bool last = p == np - 1;
        CUdeviceptr kout = !arg ? ((np - 1 - p) % 2 == 0 ? out : key[0])
                                : p + 1 < nkey ? key[p % 2] : 0;
        CUdeviceptr iout = with_idx && !last ? idx[p % 2] : 0, pout = arg && last ? out : 0;
        int part = ps[p].part, shift = ps[p].shift;
        for (uint64_t q = 0; q < portions && st == FC_OK; q++) {
            uint32_t lo = (uint32_t)(q * portion);
            uint32_t n = (uint32_t)(total - lo < portion ? total - lo : portion);
            const uint64_t first_tile = lo / ptile;
            CUdeviceptr b = bases + (q * np + (uint64_t)p) * 256 * 4;
            CUdeviceptr b_next = q + 1 < portions ? b + (uint64_t)np * 256 * 4 : 0;
            CUdeviceptr ticket = tickets + ((uint64_t)p * portions + q) * 4;
            CUdeviceptr st_now = status[p % 2] + first_tile * 256 * 4;
            CUdeviceptr st_next = last ? 0 : status[(p + 1) % 2] + first_tile * 256 * 4;
            void *args[] = {&kin, &iin, &kout, &iout, &pout, &lo, &n, &row_len, &part,
                            &shift, &b, &b_next, &ticket, &st_now, &st_next};
            st = fcr_lib_launch(ctx, m->fn[f], (unsigned)((n + ptile - 1) / ptile),
                                SORT_THREADS, s, args);
        }
        kin = kout;
        iin = iout;
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
