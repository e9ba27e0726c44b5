/*
 * test_codegen_emulated.c - generated kernels compute what the host reference backend
 * computes, checked on a machine without a GPU.
 *
 * NVRTC can say that a kernel compiles, not that it is right. Here the generated CUDA C is
 * compiled as host C++ instead: the device prelude has a host mode (FCX_HOST, the one
 * tests/test_prelude.cpp checks op by op), and a small shim gives the CUDA built-ins a host
 * meaning: a block of T threads is T POSIX threads, __shared__ arrays are statics shared by
 * them, __syncthreads() is a barrier, warp shuffles go through a per-block exchange buffer
 * between two barriers (warps of FCX_WARP threads, defined smaller than the device's 32 so a
 * block has several), atomics and fences are the compiler's, dynamic shared memory is a
 * buffer of the size the launch recipe asks for, and the G blocks of a grid run one after
 * another. Each program's kernels then run in plan order over real buffers (filled with 0xA5
 * first, so an element no kernel writes shows up), with the arguments the launch recipe's
 * slots name, the grid, scratch buffer and shared memory of fcx_launch_config (canaries behind
 * the last two), and every output is compared with fc_eval on the host backend. A library
 * call (matmul) takes its value from the host backend.
 *
 * What this catches that compiling cannot: wrong index arithmetic for views and broadcasts,
 * wrong dtype conversions and rounding, reductions that drop or repeat elements, buffers that
 * alias, kernels run out of order, block reductions that depend on the thread count, shuffle
 * trees that skip a lane, split reductions whose pieces or scratch layout disagree with the
 * launch recipe, rows kept on chip that one thread overwrites before another read them.
 * Programs: the benchmark workloads W1-W12 at small sizes with random data, a few regressions,
 * 1,300 random DAGs (tests/random_dag.c), every reduction of every dtype over several axis
 * sets, row kernels (softmax, layernorm, logsumexp) of several dtypes and row lengths, and
 * long reductions that split with the device's constants. Block shapes vary (1 thread; 8 in
 * warps of 4; 12 in warps of 4; 64 in warps of 32), most sets with small split constants
 * (FCX_SPLIT_*) so that small shapes split between blocks, and some without dynamic shared
 * memory, where row kernels take their fallback of reading global memory in every phase.
 *
 * Tolerances: integers and bool exact; floats relative (f16 / bf16 2e-2, f32 / c64 1e-4,
 * f64 / c128 1e-6: an f64 output may come from an f32 reduction whose order differs with the
 * thread count); NaN matches NaN, infinities match exactly.
 *
 * Needs a C++17 compiler at test time: $CXX, else c++ (the build already needs one for
 * tests/test_prelude.cpp). The kernels are compiled once per test into FUSEC_BINARY_DIR/tests.
 */
#include <criterion/criterion.h>

#include <fusec.h>

#include "codegen.h"
#include "graph.h"
#include "plan.h"
#include "random_dag.c"
#include "workloads.h"

#include <dlfcn.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- the host shim for generated kernels ------------------------------------------------- */

static const char SHIM[] =
    "#include <pthread.h>\n"
    "#include <cstring>\n"
    "struct fcx_dim3 { unsigned x, y, z; };\n"
    "static thread_local fcx_dim3 threadIdx = {0, 0, 0}, blockIdx = {0, 0, 0};\n"
    "static fcx_dim3 blockDim = {EMU_THREADS, 1, 1}, gridDim = {1, 1, 1};\n"
    "static pthread_barrier_t emu_barrier;\n"
    "#define __global__\n"
    "#define __launch_bounds__(...)\n"
    "#define __shared__ static\n"
    "static inline void __syncthreads(void) { if (EMU_THREADS > 1) pthread_barrier_wait(&emu_barrier); }\n"
    /* Warp shuffles and votes: every thread of the warp posts its value, the warp's barrier,
     * each reads its source lane's (its own when the source lies outside its warp), the
     * barrier again. Only the warp takes part, as on the device. */
    "static unsigned char emu_lanes[EMU_THREADS][16];\n"
    "static pthread_barrier_t emu_warp_barrier[EMU_THREADS / FCX_WARP];\n"
    "static inline void emu_warp_sync(void) {\n"
    "    if (FCX_WARP > 1) pthread_barrier_wait(&emu_warp_barrier[threadIdx.x / FCX_WARP]);\n"
    "}\n"
    "template <class T> static T emu_shfl(T v, unsigned src_lane) {\n"
    "    static_assert(sizeof(T) <= 16, \"shuffled value too big\");\n"
    "    memcpy(emu_lanes[threadIdx.x], &v, sizeof v);\n"
    "    emu_warp_sync();\n"
    "    const unsigned first = threadIdx.x / FCX_WARP * FCX_WARP;\n"
    "    T r = v;\n"
    "    if (src_lane < FCX_WARP) memcpy(&r, emu_lanes[first + src_lane], sizeof r);\n"
    "    emu_warp_sync();\n"
    "    return r;\n"
    "}\n"
    "template <class T> static T fcx_shfl_down(T v, int d) { return emu_shfl(v, threadIdx.x % FCX_WARP + (unsigned)d); }\n"
    "template <class T> static T fcx_shfl_idx(T v, int lane) { return emu_shfl(v, (unsigned)lane); }\n"
    "template <int = 0> static unsigned fcx_ballot(bool p) {\n"
    "    emu_lanes[threadIdx.x][0] = p;\n"
    "    emu_warp_sync();\n"
    "    const unsigned first = threadIdx.x / FCX_WARP * FCX_WARP;\n"
    "    unsigned m = 0;\n"
    "    for (unsigned l = 0; l < FCX_WARP; l++) m |= (unsigned)emu_lanes[first + l][0] << l;\n"
    "    emu_warp_sync();\n"
    "    return m;\n"
    "}\n"
    "template <int = 0> static void fcx_syncwarp() { emu_warp_sync(); }\n"
    "template <class T> static T fcx_ldcg(const T *p) { return *p; }\n"
    "template <class U> static unsigned fcx_atomic_add(U *p, unsigned v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }\n"
    "template <int = 0> static void fcx_fence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }\n"
    "template <class T> static void fcx_prefetch_l2(const T *) {}\n"
    "static unsigned long long emu_tiled_count, emu_strips_count;\n"
    "extern \"C\" unsigned long long emu_tiled(void) { return emu_tiled_count; }\n"
    "static unsigned long long emu_tile_vectors_count[2];\n"
    "extern \"C\" unsigned long long emu_tile_vectors(int whole) {\n"
    "    return emu_tile_vectors_count[whole];\n"
    "}\n"
    "extern \"C\" unsigned long long emu_strips(void) { return emu_strips_count; }\n"
    "static unsigned char *emu_dsmem;\n"
    "static unsigned emu_dsmem_bytes;\n"
    "template <int = 0> static unsigned fcx_dsmem_size() { return emu_dsmem_bytes; }\n"
    "#define FCX_DSMEM(name) unsigned char *const name = emu_dsmem\n"
    "struct emu_arg { void (*fn)(const void *); const void *p; unsigned block, thread; };\n"
    "static void *emu_thread(void *x) {\n"
    "    emu_arg *a = (emu_arg *)x;\n"
    "    blockIdx.x = a->block;\n"
    "    threadIdx.x = a->thread;\n"
    "    a->fn(a->p);\n"
    "    return 0;\n"
    "}\n"
    "static int emu_launch(void (*fn)(const void *), const void *p, unsigned grid, void *dsmem,\n"
    "                      unsigned dsmem_bytes) {\n"
    "    gridDim.x = grid;\n"
    "    emu_dsmem = (unsigned char *)dsmem;\n"
    "    emu_dsmem_bytes = dsmem_bytes;\n"
    "    if (EMU_THREADS == 1) {\n"
    "        for (unsigned b = 0; b < grid; b++) { blockIdx.x = b; threadIdx.x = 0; fn(p); }\n"
    "        return 0;\n"
    "    }\n"
    "    if (pthread_barrier_init(&emu_barrier, 0, EMU_THREADS)) return -1;\n"
    "    for (unsigned w = 0; w < EMU_THREADS / FCX_WARP; w++)\n"
    "        if (pthread_barrier_init(&emu_warp_barrier[w], 0, FCX_WARP)) return -1;\n"
    "    int rc = 0;\n"
    "    for (unsigned b = 0; b < grid; b++) {\n"
    "        pthread_t th[EMU_THREADS];\n"
    "        emu_arg a[EMU_THREADS];\n"
    "        unsigned started = 0;\n"
    "        for (unsigned t = 0; t < EMU_THREADS; t++) {\n"
    "            a[t] = emu_arg{fn, p, b, t};\n"
    "            if (pthread_create(&th[t], 0, emu_thread, &a[t])) { rc = -1; break; }\n"
    "            started++;\n"
    "        }\n"
    "        for (unsigned t = 0; t < started; t++) pthread_join(th[t], 0);\n"
    "        if (rc) break;\n"
    "    }\n"
    "    pthread_barrier_destroy(&emu_barrier);\n"
    "    for (unsigned w = 0; w < EMU_THREADS / FCX_WARP; w++) pthread_barrier_destroy(&emu_warp_barrier[w]);\n"
    "    return rc;\n"
    "}\n";

/* One emulated kernel: called with the pointer, integer and float arguments, the grid and
 * the dynamic shared memory. */
typedef int (*emu_call)(const void *const *ptr, const long long *ints, const double *flts,
                        unsigned grid, void *dsmem, unsigned dsmem_bytes);

/* How a set runs its kernels: threads per block, threads per warp, the most blocks of a grid,
 * the split constants (defaults, or small ones so that small shapes split between blocks),
 * and whether launches get no dynamic shared memory (row kernels then read global memory in
 * every phase). */
/* Families of sets that differ only in the block shape run one shape in the sanitizer build:
 * what AddressSanitizer sees is the C side (planning, codegen, the launch recipe), the same for
 * every shape, since the generated kernels compile uninstrumented; the plain build runs every
 * shape (CI runs the suite in both). */
#if defined(__SANITIZE_ADDRESS__)
#define EMU_OTHER_SHAPE .disabled = true
#else
#define EMU_OTHER_SHAPE .disabled = false
#endif

typedef struct emu_cfg {
    int threads, warp, blocks;
    bool small_splits;
    bool no_dsmem;
    bool sanitize; /* in a sanitizer build, the kernels too: a load outside a buffer fails */
    bool long_rows; /* every row kernel generated as for rows that do not fit on chip (they
                       stream the row in every phase, online sums): that form at every shape */
    bool fast_math; /* the fast-math tier: its rewrites, codegen/fast_math.cuh's host stand-ins
                       in front of the prelude, the tier's looser tolerance (close_enough) */
    bool misalign;  /* every buffer starts an element (of its first value's dtype, below 16
                       bytes) past a 16-byte boundary: vector accesses must not assume more;
                       only for kernels that check (the tiled ones) */
} emu_cfg;

/* Small split constants: pieces of a few elements, few pieces, a small scratch cap. */
static fcx_tuning small_tuning(int warp) {
    fcx_tuning t = {warp, 64, 2, 16, 2, 1 << 14, 16, 8};
    return t;
}

#define CANARY 64 /* bytes past a scratch or shared-memory buffer that must stay untouched */

/* ---- programs and their kernels ------------------------------------------------------------ */

typedef struct program {
    char name[96];
    bool random;
    uint64_t seed;
    int nout;
    fc_array *out[WL_MAX_OUT]; /* references the program holds */
    fc_array *ref[WL_MAX_OUT]; /* what each output must equal, when not itself on the host
                                  (user kernels: the same computation in built-in ops) */
    fcp_plan *plan;
    int first;                 /* index of its first kernel in the kernel table */
    bool exact;                /* every output bit for bit, floats too */
    bool differs;              /* some float output must differ from the host in some bit (the
                                  fast-math tier's functions are in effect) */
    bool exact_nan;            /* the same, but any NaN meets any NaN */
    bool check_tiled;          /* whether a launch took the shifted-slice tiles is checked: */
    bool want_tiled;           /* some did (else none did) */
    bool want_strips;          /* and some took a buffer's strips (else none did) */
} program;

typedef struct emu_set {
    fc_ctx *ctx;
    program *progs;
    int nprog, capprog;
    fcx_kernel_src *srcs; /* per plan kernel (LIB ones zeroed), in program order */
    int nsrc, capsrc;
    FILE *cpp;
    char cpp_path[1024], so_path[1024];
    void *so;
    emu_cfg cfg;
    fcx_tuning tuning;
    /* launches seen, by what they exercise (the tests check each path ran) */
    int n_split, n_cols, n_rows_on_chip, n_rows_vec, n_scan_tiles, n_scan_lines, n_scatter;
    int n_scatter_on_chip;
    int n_tiled;               /* launches of tiled elementwise kernels */
    int n_tile_whole, n_tile_part; /* of those with vectors of several elements: every access
                                      a whole vector; some element by element */
    int n_rows_long, n_online; /* launches of row kernels that stream rows; of those with an
                                  online sum */
    int n_rows_seg;            /* reduce kernels over rows of contiguous runs (non-trailing axes) */
    int n_cols_online;         /* column kernels with an online sum */
    int n_cols_online_batched; /* launches of those that fold it a batch of rows at a time */
    int n_slice_tiled;         /* launches that took the shifted-slice tiles */
    int n_slice_strips;        /* launches that took a buffer's shifted-slice strips */
    int n_rows_grouped; /* launches whose vector steps issue several steps' loads together */
    int n_rows_reverse; /* launches of streaming row kernels whose output phase runs backwards */
    int n_rows_seg_grouped; /* launches over rows of contiguous runs whose steps load in groups */
} emu_set;

static void set_open(emu_set *s, const char *tag, const emu_cfg *cfg) {
    memset(s, 0, sizeof *s);
    s->cfg = *cfg;
    s->tuning = cfg->small_splits ? small_tuning(cfg->warp) : fcx_default_tuning;
    s->tuning.warp = cfg->warp;
    fc_ctx_options o = {0};
    o.backend = FC_BACKEND_HOST;
    o.fast_math = cfg->fast_math ? 1 : -1; /* never the tier FUSEC_FAST_MATH would pick */
    cr_assert_eq(fc_ctx_create(&s->ctx, &o), FC_OK);
    snprintf(s->cpp_path, sizeof s->cpp_path, "%s/tests/emulated_%s_%d.cpp", FUSEC_BINARY_DIR, tag,
             (int)getpid());
    snprintf(s->so_path, sizeof s->so_path, "%s/tests/emulated_%s_%d.so", FUSEC_BINARY_DIR, tag,
             (int)getpid());
    s->cpp = fopen(s->cpp_path, "w");
    cr_assert_not_null(s->cpp, "cannot write %s", s->cpp_path);
    cr_assert(cfg->threads % cfg->warp == 0 && cfg->threads / cfg->warp <= cfg->warp,
              "a block of %d threads in warps of %d", cfg->threads, cfg->warp);
    fprintf(s->cpp, "#define FCX_HOST\n#define EMU_THREADS %d\n#define FCX_WARP %d\n"
                    "#define FCX_SCAN_THREADS %d\n#define FCX_TILE_THREADS %d\n", cfg->threads,
            cfg->warp, cfg->threads, cfg->threads);
    /* tiles of a scan that leave only their total published: look-back over totals runs */
    fputs("#define FCX_SCAN_PUBLISH(tile) ((tile) % 3 == 2 ? 1u : 2u)\n", s->cpp);
    if (cfg->small_splits)
        fprintf(s->cpp, "#define FCX_SPLIT_TARGET %lld\n#define FCX_SPLIT_MIN_CHUNK %lld\n"
                        "#define FCX_SPLIT_MAX %lld\n#define FCX_SPLIT_ALIGN %lld\n"
                        "#define FCX_SCRATCH_CAP %lld\n#define FCX_SCAN_TILE %lld\n"
                        "#define FCX_SCAN_MIN_ROW %lld\n",
                s->tuning.split_target, s->tuning.split_min_chunk, s->tuning.split_max,
                s->tuning.split_align, s->tuning.scratch_cap, s->tuning.scan_tile,
                s->tuning.scan_min_row);
    /* every thread of a block that takes an elementwise kernel's shifted-slice tiles counts,
     * and tiles are taken at every extent (the tiny ones too) */
    fputs("#define FCX_TILE_MIN_EXTENT 1\n", s->cpp);
    fputs("#define FCX_STENCIL_TILED() __atomic_fetch_add(&emu_tiled_count, 1ull, "
          "__ATOMIC_RELAXED)\n", s->cpp);
    fputs("#define FCX_TILE_VECTORS(whole) __atomic_fetch_add(&emu_tile_vectors_count[(whole) ? "
          "1 : 0], 1ull, __ATOMIC_RELAXED)\n", s->cpp);
    /* the same for a buffer's strips, taken at every width */
    fputs("#define FCX_STRIP_MIN_EXTENT 1\n", s->cpp);
    fputs("#define FCX_STENCIL_STRIPS() __atomic_fetch_add(&emu_strips_count, 1ull, "
          "__ATOMIC_RELAXED)\n", s->cpp);
    /* the tier's overloads go in front of the prelude, as codegen puts them (kernels generated
     * without the prelude leave them out) */
    if (cfg->fast_math) fputs(fcx_fast_math_source, s->cpp);
    fputs(fcx_prelude_source, s->cpp);
    fputs(SHIM, s->cpp);
}

static void set_close(emu_set *s) {
    for (int i = 0; i < s->nprog; i++) {
        for (int q = 0; q < s->progs[i].nout; q++) fc_release(s->progs[i].out[q]);
        fcp_plan_destroy(s->progs[i].plan);
    }
    for (int i = 0; i < s->nsrc; i++) fcx_kernel_src_free(s->ctx, &s->srcs[i]);
    free(s->progs);
    free(s->srcs);
    if (s->so) dlclose(s->so);
    unlink(s->cpp_path);
    unlink(s->so_path);
    fc_ctx_destroy(s->ctx);
}

/* Adds a program (its outputs are new references the set takes over): plans it and appends its
 * kernels, each with a C entry point emu_k<index>, to the translation unit. */
static void set_add(emu_set *s, const char *name, bool random, uint64_t seed, fc_array **outs,
                    int nout) {
    for (int q = 0; q < nout; q++)
        cr_assert_eq(fc_array_status(outs[q]), FC_OK, "%s: output %d: %s", name, q,
                     fc_array_errmsg(outs[q]));
    if (s->nprog == s->capprog) {
        s->capprog = s->capprog ? 2 * s->capprog : 64;
        s->progs = realloc(s->progs, (size_t)s->capprog * sizeof *s->progs);
        cr_assert_not_null(s->progs);
    }
    program *p = &s->progs[s->nprog++];
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s", name);
    p->random = random;
    p->seed = seed;
    p->nout = nout;
    memcpy(p->out, outs, (size_t)nout * sizeof *outs);
    fc_status st = fcp_plan_build(s->ctx, outs, nout, &p->plan);
    cr_assert_eq(st, FC_OK, "%s: fcp_plan_build: %s", name, fc_errmsg(s->ctx));
    p->first = s->nsrc;
    for (int k = 0; k < p->plan->nkernel; k++) {
        if (s->nsrc == s->capsrc) {
            s->capsrc = s->capsrc ? 2 * s->capsrc : 256;
            s->srcs = realloc(s->srcs, (size_t)s->capsrc * sizeof *s->srcs);
            cr_assert_not_null(s->srcs);
        }
        fcx_kernel_src *src = &s->srcs[s->nsrc];
        memset(src, 0, sizeof *src);
        int index = s->nsrc++;
        fcp_kernel *kern = &p->plan->kernels[k];
        if (kern->kind == FCP_KERNEL_LIB) continue;
        if (s->cfg.long_rows && kern->kind == FCP_KERNEL_ROW) kern->long_rows = true;
        char kname[32];
        snprintf(kname, sizeof kname, "k%d", index);
        st = fcx_generate_named(s->ctx, kern, kname, false, src);
        cr_assert_eq(st, FC_OK, "%s kernel %d: %s", name, k, fc_errmsg(s->ctx));
        fputs(src->src, s->cpp);
        fprintf(s->cpp,
                "static void emu_tramp_%s(const void *q) { %s::%s(*(const %s::fcx_params *)q); }\n"
                "extern \"C\" int emu_%s(const void *const *ptr, const long long *ints, "
                "const double *flts, unsigned grid, void *dsmem, unsigned dsmem_bytes) {\n"
                "    %s::fcx_params p;\n"
                "    memcpy((void *)p.ptr, ptr, sizeof p.ptr);\n"
                "    memcpy(p.i, ints, %d * sizeof(long long));\n"
                "    memcpy(p.f, flts, %d * sizeof(double));\n"
                "    return emu_launch(emu_tramp_%s, &p, grid, dsmem, dsmem_bytes);\n"
                "}\n",
                kname, kname, kname, kname, kname, kname, src->nint, src->nflt, kname);
    }
}

/* A program whose outputs the host backend cannot evaluate itself, compared with refs. */
static void set_add_ref(emu_set *s, const char *name, fc_array **outs, fc_array **refs, int nout) {
    set_add(s, name, false, 0, outs, nout);
    program *p = &s->progs[s->nprog - 1];
    for (int q = 0; q < nout; q++) {
        cr_assert_eq(fc_array_status(refs[q]), FC_OK, "%s: reference %d", name, q);
        p->ref[q] = refs[q];
    }
}

/* Compiles the translation unit into a shared object and loads it. */
static void set_build(emu_set *s) {
    cr_assert_eq(fclose(s->cpp), 0);
    s->cpp = NULL;
    const char *cxx = getenv("CXX") && *getenv("CXX") ? getenv("CXX") : "c++";
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
#if defined(__SANITIZE_ADDRESS__)
        if (s->cfg.sanitize)
            execlp(cxx, cxx, "-std=c++17", "-O1", "-w", "-ffp-contract=off", "-shared", "-fPIC",
                   "-pthread", "-fsanitize=address", "-o", s->so_path, s->cpp_path, (char *)NULL);
#endif
        /* -O0: compiling the generated kernels is most of this test's time (-O1 takes 2.6
         * times as long), and they run small shapes. -ffp-contract=off: as the build compiles
         * the host side (the float normal draws round every product). */
        execlp(cxx, cxx, "-std=c++17", "-O0", "-w", "-ffp-contract=off", "-shared", "-fPIC",
               "-pthread", "-o", s->so_path, s->cpp_path, (char *)NULL);
        _exit(127);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "%s could not compile the emulated kernels (%s): exit status %d", cxx, s->cpp_path,
              WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    s->so = dlopen(s->so_path, RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(s->so, "dlopen %s: %s", s->so_path, dlerror());
}

/* ---- running a plan ----------------------------------------------------------------------- */

static const fc_array *slot_node(const fcp_kernel *k, const fcx_slot *sl) {
    if (sl->node < 0) return NULL;
    return sl->node < k->nnode ? k->nodes[sl->node] : k->leaves[sl->node - k->nnode];
}

static long long int_arg(const fcp_kernel *k, const fcx_slot *sl) {
    const fc_array *n = slot_node(k, sl);
    switch ((fcx_slot_kind)sl->kind) {
    case FCX_SLOT_SPACE_EXTENT: return k->space[sl->dim];
    case FCX_SLOT_EXTENT: return n->shape[sl->dim];
    case FCX_SLOT_PARAM_A: return n->p.a[sl->dim];
    case FCX_SLOT_PARAM_B: return n->p.b[sl->dim];
    case FCX_SLOT_IVAL: return n->p.ival;
    case FCX_SLOT_COUNT: return n->p.count;
    default: cr_assert_fail("integer slot of kind %d", sl->kind); return 0;
    }
}

static double float_arg(const fcp_kernel *k, const fcx_slot *sl) {
    const fc_array *n = slot_node(k, sl);
    switch ((fcx_slot_kind)sl->kind) {
    case FCX_SLOT_RE: return n->p.re;
    case FCX_SLOT_IM: return n->p.im;
    default: cr_assert_fail("float slot of kind %d", sl->kind); return 0;
    }
}

static size_t node_bytes(const fc_array *a) {
    return fcg_node_numel(a) * fc_dtype_size((fc_dtype)a->dtype);
}

/* Element i of a buffer of dtype t as (re, im). */
static void element(fc_dtype t, const void *b, int64_t i, double *re, double *im) {
    *im = 0;
    switch (t) {
    case FC_BOOL: *re = ((const uint8_t *)b)[i]; break;
    case FC_I8: *re = ((const int8_t *)b)[i]; break;
    case FC_I16: *re = ((const int16_t *)b)[i]; break;
    case FC_I32: *re = ((const int32_t *)b)[i]; break;
    case FC_I64: *re = (double)((const int64_t *)b)[i]; break;
    case FC_U8: *re = ((const uint8_t *)b)[i]; break;
    case FC_U16: *re = ((const uint16_t *)b)[i]; break;
    case FC_U32: *re = ((const uint32_t *)b)[i]; break;
    case FC_U64: *re = (double)((const uint64_t *)b)[i]; break;
    case FC_F16: *re = fcg_f16_to_f32(((const uint16_t *)b)[i]); break;
    case FC_BF16: *re = fcg_bf16_to_f32(((const uint16_t *)b)[i]); break;
    case FC_F32: *re = ((const float *)b)[i]; break;
    case FC_F64: *re = ((const double *)b)[i]; break;
    case FC_C64:
        *re = ((const float *)b)[2 * i];
        *im = ((const float *)b)[2 * i + 1];
        break;
    case FC_C128:
        *re = ((const double *)b)[2 * i];
        *im = ((const double *)b)[2 * i + 1];
        break;
    default: break;
    }
}

static bool integral_equal(fc_dtype t, const void *a, const void *b, int64_t i) {
    size_t w = fc_dtype_size(t);
    return memcmp((const char *)a + (size_t)i * w, (const char *)b + (size_t)i * w, w) == 0;
}

/* fast: the fast-math tier, whose f32 results may differ by the GPU's approximate functions'
 * bounds (CUDA's __expf: 2 + 1.16 |x| ulp; __logf, __sinf, __cosf: 2^-21.4 absolute on their
 * main ranges): relative 1e-3 with an absolute floor of 1e-5 for f32 and c64, the default
 * elsewhere (f64 differs only by FMA contraction, which the host compiler does not do). */
static bool close_enough(fc_dtype t, double got, double want, bool fast) {
    if (isnan(got) || isnan(want)) return isnan(got) && isnan(want);
    if (isinf(got) || isinf(want)) return got == want;
    double tol = t == FC_F16 || t == FC_BF16 ? 2e-2 : t == FC_F32 || t == FC_C64 ? 1e-4 : 1e-6;
    double floor = tol * 1e-3;
    if (fast && (t == FC_F32 || t == FC_C64)) tol = 1e-3, floor = 1e-5;
    return fabs(got - want) <= tol * (fabs(want) + 1e-30) || fabs(got - want) <= floor;
}

/* Runs program p's kernels and compares its outputs. Returns a malloc'd report of the first
 * mismatch, or NULL. */
static char *run_program(emu_set *s, program *p) {
    fcp_plan *plan = p->plan;
    void **buf = calloc((size_t)plan->nmat + 1, sizeof *buf);
    cr_assert_not_null(buf);
    /* One buffer per materialised node, as a GPU runtime would bind the plan's slots. The
     * plan's slot assignment is used, so aliasing slots show up as wrong results. */
    void **slot = calloc((size_t)plan->nbuf + 1, sizeof *slot);
    unsigned char **base = calloc((size_t)plan->nbuf + 1, sizeof *base);
    cr_assert(slot && base);
    for (int b = 0; b < plan->nbuf; b++) {
        size_t shift = 0; /* cfg.misalign: the slot's first value's element size, below 16 */
        for (int m = 0; m < plan->nmat && s->cfg.misalign; m++)
            if (plan->mat_buf[m] == b) {
                shift = fc_dtype_size((fc_dtype)plan->mat[m]->dtype) % 16;
                break;
            }
        base[b] = aligned_alloc(16, (plan->buf_bytes[b] + 47) / 16 * 16);
        cr_assert_not_null(base[b]);
        slot[b] = base[b] + shift;
        memset(slot[b], 0xA5, plan->buf_bytes[b] + 16);
    }
    for (int m = 0; m < plan->nmat; m++) buf[m] = slot[plan->mat_buf[m]];
    char *report = NULL;
    /* Described for a report before anything runs: an evaluation on the host (a library
     * kernel's value, the outputs' reference values) cuts the graph the texts name. */
    char *desc = fcp_plan_describe(plan);
    char *text = NULL;
    fc_program_print(s->ctx, p->out, p->nout, NULL, &text);
    int tiled_launches = 0, strip_launches = 0;
    for (int k = 0; k < plan->nkernel && !report; k++) {
        const fcp_kernel *kern = &plan->kernels[k];
        if (kern->kind == FCP_KERNEL_LIB) {
            for (int q = 0; q < kern->nout; q++) {
                fc_array *a = kern->outs[q];
                cr_assert_eq(fc_eval(s->ctx, &a, 1), FC_OK, "%s: host matmul: %s", p->name,
                             fc_errmsg(s->ctx));
                for (int m = 0; m < plan->nmat; m++)
                    if (plan->mat[m] == a) memcpy(buf[m], a->host, node_bytes(a));
            }
            continue;
        }
        const fcx_kernel_src *src = &s->srcs[p->first + k];
        const void **ptr = calloc((size_t)src->nptr + 1, sizeof *ptr);
        long long *ints = calloc((size_t)src->nint + 1, sizeof *ints);
        double *flts = calloc((size_t)src->nflt + 1, sizeof *flts);
        unsigned char **moved = calloc((size_t)kern->nleaf + 1, sizeof *moved);
        cr_assert(ptr && ints && flts && moved);
        for (int l = 0; l < kern->nleaf; l++) {
            const fc_array *a = kern->leaves[l];
            ptr[l] = a->host;
            for (int m = 0; m < plan->nmat; m++)
                if (plan->mat[m] == a) ptr[l] = buf[m];
            cr_assert_not_null(ptr[l], "%s kernel %d: leaf %d has no buffer", p->name, k, l);
            if (s->cfg.misalign && ptr[l] == a->host) { /* an input: a copy an element off */
                size_t shift = fc_dtype_size((fc_dtype)a->dtype) % 16;
                moved[l] = aligned_alloc(16, (node_bytes(a) + 47) / 16 * 16);
                cr_assert_not_null(moved[l]);
                memcpy(moved[l] + shift, a->host, node_bytes(a));
                ptr[l] = moved[l] + shift;
            }
        }
        for (int q = 0; q < kern->nout; q++)
            for (int m = 0; m < plan->nmat; m++)
                if (plan->mat[m] == kern->outs[q]) ptr[kern->nleaf + q] = buf[m];
        for (int i = 0; i < src->nint; i++) ints[i] = int_arg(kern, &src->islots[i]);
        for (int i = 0; i < src->nflt; i++) flts[i] = float_arg(kern, &src->fslots[i]);
        /* The launch as the runtime would make it on a device of cfg.blocks multiprocessors
         * (the grid capped there: blocks run one after another here), with exactly the
         * scratch and shared memory the recipe asks for, each followed by a canary. */
        fcx_launch lc;
        fcx_launch_config_tuned(kern, src, s->cfg.blocks, 1, &s->tuning, &lc);
        cr_assert(lc.block >= 32 && lc.block <= (unsigned)src->block && lc.block % 32 == 0,
                  "%s kernel %d: block of %u threads", p->name, k, lc.block);
        unsigned grid = lc.grid < (unsigned)s->cfg.blocks ? lc.grid : (unsigned)s->cfg.blocks;
        size_t smem = s->cfg.no_dsmem ? 0 : lc.smem_bytes;
        unsigned char *scratch = NULL, *dsmem = malloc(smem + CANARY);
        cr_assert_not_null(dsmem);
        memset(dsmem, 0x5A, smem + CANARY);
        if (src->nptr > kern->nleaf + kern->nout) {
            cr_assert_eq(src->nptr, kern->nleaf + kern->nout + 1);
            if (lc.scratch_bytes) {
                scratch = malloc(lc.scratch_bytes + CANARY);
                cr_assert_not_null(scratch);
                memset(scratch, 0, lc.scratch_bytes);
                memset(scratch + lc.scratch_bytes, 0x5A, CANARY);
            }
            ptr[kern->nleaf + kern->nout] = scratch;
        } else {
            cr_assert_eq(lc.scratch_bytes, 0, "%s kernel %d: scratch without a pointer for it", p->name, k);
        }
        s->n_split += lc.scratch_bytes > 0;
        s->n_scatter += src->strategy == FCX_STRATEGY_SCATTER && lc.grid > 0;
        s->n_scatter_on_chip += src->strategy == FCX_STRATEGY_SCATTER && lc.grid > 0 && lc.smem_bytes > 0;
        s->n_cols += src->strategy == FCX_STRATEGY_BLOCK_COL;
        s->n_tiled += src->strategy == FCX_STRATEGY_EW_TILE && grid > 0;
        s->n_rows_on_chip += smem > 0;
        s->n_rows_vec += src->strategy == FCX_STRATEGY_BLOCK_ROW && src->vec > 1;
        s->n_rows_grouped += grid > 0 && strstr(src->src, "for (int gi = 0;") != NULL;
        s->n_rows_reverse += grid > 0 && strstr(src->src, "/* its last step */") != NULL;
        s->n_rows_long += kern->kind == FCP_KERNEL_ROW && kern->long_rows && grid > 0;
        s->n_rows_seg += grid > 0 && strstr(src->src, "contiguous run of a row") != NULL;
        s->n_rows_seg_grouped += grid > 0 && strstr(src->src, "contiguous run of a row") != NULL &&
                                 strstr(src->src, "for (int gi = 0;") != NULL;
        s->n_cols_online += grid > 0 && src->strategy == FCX_STRATEGY_BLOCK_COL &&
                            strstr(src->src, "online sum") != NULL;
        s->n_cols_online_batched += grid > 0 && src->strategy == FCX_STRATEGY_BLOCK_COL &&
                                    strstr(src->src, "the batch's max") != NULL;
        s->n_online += kern->kind == FCP_KERNEL_ROW && kern->long_rows && grid > 0 &&
                       strstr(src->src, "online sum") != NULL;
        cr_assert(!kern->long_rows || smem == 0, "%s kernel %d: a streaming row kernel asks for "
                  "%zu bytes of shared memory", p->name, k, smem);
        char sym[40];
        snprintf(sym, sizeof sym, "emu_k%d", p->first + k);
        emu_call fn = (emu_call)(uintptr_t)dlsym(s->so, sym);
        cr_assert_not_null(fn, "no symbol %s", sym);
        unsigned long long (*tiled)(void) =
            (unsigned long long (*)(void))(uintptr_t)dlsym(s->so, "emu_tiled");
        cr_assert_not_null(tiled);
        unsigned long long (*vectors)(int) =
            (unsigned long long (*)(int))(uintptr_t)dlsym(s->so, "emu_tile_vectors");
        cr_assert_not_null(vectors);
        unsigned long long whole_before = vectors(1), part_before = vectors(0);
        unsigned long long (*strips)(void) =
            (unsigned long long (*)(void))(uintptr_t)dlsym(s->so, "emu_strips");
        cr_assert_not_null(strips);
        unsigned long long tiled_before = tiled(), strips_before = strips();
        if (grid > 0)
            cr_assert_eq(fn(ptr, ints, flts, grid, dsmem, (unsigned)smem), 0,
                         "%s kernel %d: the emulated launch failed", p->name, k);
        /* a tiled launch whose vectors hold several elements: all whole, or not */
        const char *vec_line = strstr(src->src, ", vectors of ");
        if (src->strategy == FCX_STRATEGY_EW_TILE && grid > 0 && vec_line &&
            atoi(vec_line + strlen(", vectors of ")) > 1) {
            s->n_tile_whole += vectors(1) != whole_before && vectors(0) == part_before;
            s->n_tile_part += vectors(0) != part_before;
        }
        if (tiled() != tiled_before) {
            cr_assert(strstr(src->src, "// stencil: ") != NULL, "%s kernel %d: tiles without "
                      "the header line", p->name, k);
            s->n_slice_tiled++;
            tiled_launches++;
        }
        if (strips() != strips_before) {
            cr_assert(strstr(src->src, "// stencil: ") != NULL, "%s kernel %d: strips without "
                      "the header line", p->name, k);
            s->n_slice_strips++;
            strip_launches++;
        }
        if (grid > 0 && src->strategy == FCX_STRATEGY_SCAN_TILES && lc.scratch_bytes) {
            /* the counters and status words are zero again (the runtime keeps the scratch
             * for the next launch): a second launch must compute the same */
            const fc_array *r = kern->outs[0];
            long long L = kern->space[r->p.axis], O = 1;
            for (int d = 0; d < r->p.axis; d++) O *= kern->space[d];
            long long ts = fcx_scan_tile(&s->tuning,
                                         (size_t)fc_dtype_size(fcg_reduce_acc_dtype(r)));
            long long tiles = O * ((L + ts - 1) / ts);
            size_t acc = (size_t)fc_dtype_size(fcg_reduce_acc_dtype(r));
            size_t status = 16 + fcx_scan_status_bytes(acc, tiles);
            for (size_t b = 0; b < status; b++)
                cr_assert_eq(scratch[b], 0, "%s kernel %d: scan scratch byte %zu left %d", p->name,
                             k, b, scratch[b]);
            cr_assert_eq(fn(ptr, ints, flts, grid, dsmem, (unsigned)smem), 0,
                         "%s kernel %d: the second emulated launch failed", p->name, k);
            s->n_scan_tiles++;
        }
        s->n_scan_lines += src->strategy == FCX_STRATEGY_SCAN_LINES ||
                           (src->strategy == FCX_STRATEGY_SCAN_TILES && !lc.scratch_bytes);
        for (size_t b = 0; b < CANARY; b++) {
            cr_assert_eq(dsmem[smem + b], 0x5A, "%s kernel %d: wrote past its %zu bytes of shared "
                         "memory", p->name, k, smem);
            if (scratch)
                cr_assert_eq(scratch[lc.scratch_bytes + b], 0x5A, "%s kernel %d: wrote past its %zu "
                             "bytes of scratch", p->name, k, lc.scratch_bytes);
        }
        for (int l = 0; l < kern->nleaf; l++) free(moved[l]);
        free(moved);
        free(scratch);
        free(dsmem);
        free(ptr);
        free(ints);
        free(flts);
    }
    cr_assert(!p->check_tiled || (tiled_launches > 0) == p->want_tiled,
              "%s: %d launches took the shifted-slice tiles, expected %s", p->name,
              tiled_launches, p->want_tiled ? "some" : "none");
    cr_assert(!p->check_tiled || (strip_launches > 0) == p->want_strips,
              "%s: %d launches took the shifted-slice strips, expected %s", p->name,
              strip_launches, p->want_strips ? "some" : "none");
    /* Compare each output that a kernel stored with the host backend's value. */
    int64_t differs = 0; /* float elements not bit for bit the host's */
    for (int o = 0; o < p->nout && !report; o++) {
        fc_array *y = p->out[o];
        const void *got = NULL;
        for (int m = 0; m < plan->nmat; m++)
            if (plan->mat[m] == y) got = buf[m];
        if (!got) continue; /* a value already */
        size_t bytes = node_bytes(y);
        unsigned char *want = malloc(bytes + 1);
        cr_assert_not_null(want);
        memset(want, 0xA5, bytes + 1);
        fc_status st = fc_to_host(p->ref[o] ? p->ref[o] : y, want, bytes);
        cr_assert_eq(st, FC_OK, "%s output %d: host backend: %s", p->name, o, fc_errmsg(s->ctx));
        fc_dtype t = (fc_dtype)y->dtype;
        int64_t n = (int64_t)fcg_node_numel(y), bad = 0, first = -1;
        for (int64_t i = 0; i < n; i++) {
            bool ok;
            if (!fcg_is_inexact(t) || p->exact) {
                ok = integral_equal(t, got, want, i);
            } else if (p->exact_nan) {
                double gr, gi, wr, wi;
                element(t, got, i, &gr, &gi);
                element(t, want, i, &wr, &wi);
                ok = integral_equal(t, got, want, i) ||
                     ((isnan(gr) || isnan(gi)) && (isnan(wr) || isnan(wi)));
            } else {
                double gr, gi, wr, wi;
                element(t, got, i, &gr, &gi);
                element(t, want, i, &wr, &wi);
                bool fast = s->cfg.fast_math;
                ok = close_enough(t, gr, wr, fast) && close_enough(t, gi, wi, fast);
            }
            if (fcg_is_inexact(t) && !integral_equal(t, got, want, i)) differs++;
            if (!ok && bad++ == 0) first = i;
        }
        if (bad) {
            double gr, gi, wr, wi;
            element(t, got, first, &gr, &gi);
            element(t, want, first, &wr, &wi);
            size_t len = 0;
            FILE *m = open_memstream(&report, &len);
            fprintf(m, "%s: output %d (%s, %lld elements): %lld differ; first at flat index %lld: "
                       "kernel %.17g%+.17gi, host %.17g%+.17gi\nprogram:\n%s\n%s",
                    p->name, o, fc_dtype_name(t), (long long)n, (long long)bad, (long long)first,
                    gr, gi, wr, wi, text ? text : "?", desc ? desc : "");
            fclose(m);
        }
        free(want);
    }
    if (!report && p->differs && differs == 0) {
        size_t len = 0;
        FILE *m = open_memstream(&report, &len);
        fprintf(m, "%s: every float output is the host's bit for bit: the fast-math tier's "
                   "functions were not used", p->name);
        fclose(m);
    }
    fc_free(s->ctx, text);
    fcg_strfree(s->ctx, desc);
    for (int b = 0; b < plan->nbuf; b++) free(base[b]);
    free(base);
    free(slot);
    free(buf);
    return report;
}

/* Runs every program of the set, then closes it; fails with the first few mismatches (the
 * report is kept in a static buffer, so that failing leaks nothing). Returns the launches of
 * tiled elementwise kernels. */
static int set_run_and_close(emu_set *s) {
    static char first[8192];
    int failures = 0, nprog = s->nprog;
    first[0] = '\0';
    for (int i = 0; i < s->nprog; i++) {
        char *r = run_program(s, &s->progs[i]);
        if (!r) continue;
        if (failures < 5) cr_log_error("%s", r);
        if (!failures) snprintf(first, sizeof first, "%s", r);
        free(r);
        failures++;
    }
    cr_log_info("%s: %d launches split a reduction, %d were column kernels, %d kept rows on chip, "
                "%d row kernels had 16-byte steps, %d scatter launches (%d on chip), %d tiled "
                "elementwise launches", s->cpp_path, s->n_split, s->n_cols, s->n_rows_on_chip,
                s->n_rows_vec, s->n_scatter, s->n_scatter_on_chip, s->n_tiled);
    int tiled = s->n_tiled;
    set_close(s);
    if (failures)
        cr_assert_fail("%d of %d programs differ from the host backend; the first:\n%s", failures,
                       nprog, first);
    return tiled;
}

/* ---- the tests ------------------------------------------------------------------------------ */

static void emulate_workloads(const char *tag, const emu_cfg *cfg) {
    emu_set s;
    set_open(&s, tag, cfg);
    fc_scope_open(s.ctx);
    wl_data_seed = 7;
    for (int w = 0; w < WL_COUNT; w++) {
        fc_array *outs[WL_MAX_OUT];
        int n = wl_workloads[w].build(s.ctx, wl_workloads[w].small, outs);
        for (int q = 0; q < n; q++) outs[q] = fc_keep(outs[q]);
        set_add(&s, wl_workloads[w].name, false, 0, outs, n);
    }
    /* W8 with z as a second output, at a small size. */
    fc_array *outs[WL_MAX_OUT];
    int n = wl_mandelbrot(s.ctx, (const int64_t[]){24}, outs, 30, true);
    for (int q = 0; q < n; q++) outs[q] = fc_keep(outs[q]);
    set_add(&s, "mandelbrot with z, 30 steps", false, 0, outs, n);
    wl_data_seed = 0;
    set_build(&s);
    set_run_and_close(&s);
}

Test(emulated, workloads_one_thread) {
    emulate_workloads("workloads_t1", &(emu_cfg){1, 1, 1, false, false, false, false, false, false});
}
Test(emulated, workloads_eight_threads_three_blocks) {
    emulate_workloads("workloads_t8", &(emu_cfg){8, 4, 3, true, false, false, false, false, false});
}
/* Warps as wide as the device's: the shuffle trees run all five rounds. */
Test(emulated, workloads_64_threads_warps_of_32, EMU_OTHER_SHAPE) {
    emulate_workloads("workloads_t64", &(emu_cfg){64, 32, 2, true, false, false, false, false, false});
}

/* The fast-math tier (include/fusec.h): W1-W12 and W8 with z, and f32 / f16 transcendentals,
 * generated in the tier and run with codegen/fast_math.cuh's host stand-ins (the GPU's
 * approximate instructions are not available on the host: the stand-ins take the same steps
 * with exact libm, so this checks the tier's rewrites, its overloads taking over from the
 * prelude, and pow's sign and zero cases, not the instructions' own error), compared with the
 * exact host backend within close_enough's fast-tier tolerance. W8's counts must match
 * exactly: its |z|^2 <= 4 only differs from abs(z) <= 2 within ulps of the circle, and the
 * host compiler contracts nothing (-ffp-contract=off). */
Test(emulated, fast_math_tier_workloads_and_transcendentals) {
    emu_set s;
    emu_cfg cfg = {8, 4, 3, true, false, false, false, true, false};
    set_open(&s, "fast_math", &cfg);
    fc_scope_open(s.ctx);
    wl_data_seed = 7;
    for (int w = 0; w < WL_COUNT; w++) {
        fc_array *outs[WL_MAX_OUT];
        int n = wl_workloads[w].build(s.ctx, wl_workloads[w].small, outs);
        for (int q = 0; q < n; q++) outs[q] = fc_keep(outs[q]);
        set_add(&s, wl_workloads[w].name, false, 0, outs, n);
    }
    fc_array *outs[WL_MAX_OUT];
    int n = wl_mandelbrot(s.ctx, (const int64_t[]){40}, outs, 60, true);
    for (int q = 0; q < n; q++) outs[q] = fc_keep(outs[q]);
    set_add(&s, "mandelbrot with z, 60 steps", false, 0, outs, n);
    cr_assert(strstr(s.srcs[s.nsrc - 1].src, "math tier: fast") != NULL);
    cr_assert(strstr(s.srcs[s.nsrc - 1].src, "= fcx_abs(v") == NULL, "W8 still calls abs");
    /* x in [0.5, 4.5), h its f16: every overload of codegen/fast_math.cuh, pow of negative
     * bases with odd, even and fractional exponents and of zero */
    fc_ctx *c = s.ctx;
    fc_array *x = fc_add(fc_mul(fc_random_uniform(c, FC_F32, FC_SHAPE(3000), 11), fc_f64(c, 4)),
                         fc_f64(c, 0.5));
    fc_array *h = fc_cast(x, FC_F16);
    fc_array *t[WL_MAX_OUT], *nx = fc_negative(x);
    t[0] = fc_add(fc_add(fc_mul(fc_exp(x), fc_log(x)), fc_log2(x)), fc_log10(x));
    t[1] = fc_add(fc_sin(fc_mul(x, fc_f64(c, 3))),
                  fc_mul(fc_cos(x), fc_tan(fc_mul(x, fc_f64(c, 0.3)))));
    t[2] = fc_stack(c, (fc_array *[]){fc_pow(x, fc_f64(c, 2.5)), fc_pow(nx, fc_f64(c, 3)),
                                      fc_pow(nx, fc_f64(c, 2)), fc_pow(nx, fc_f64(c, 0.5)),
                                      fc_pow(fc_sub(x, x), x), fc_pow(x, fc_sub(x, x))},
                    6, 0);
    t[3] = fc_add(fc_mul(fc_exp(h), fc_sin(h)), fc_log(h));
    for (int q = 0; q < WL_MAX_OUT; q++) t[q] = fc_keep(t[q]);
    set_add(&s, "f32 and f16 transcendentals", false, 0, t, WL_MAX_OUT);
    s.progs[s.nprog - 1].differs = true;
    wl_data_seed = 0;
    set_build(&s);
    set_run_and_close(&s);
}

/* Programs that once went wrong. */
Test(emulated, regressions) {
    emu_set s;
    set_open(&s, "regressions", &(emu_cfg){4, 2, 2, true, false, true, false, false, false});
    fc_ctx *ctx = s.ctx;
    fc_scope_open(ctx);
    double vals[60];
    for (int i = 0; i < 60; i++) vals[i] = 1.0 + i * 0.75;
    fc_array *outs[WL_MAX_OUT];
    /* A rank-3 reduction over a leading axis and a rank-3 transpose: row-major offsets of 3+
     * axes (the linearisation once lost its parentheses: r0 * E1 + r1 * E2 + r2). */
    fc_array *x3 = fc_from_host(ctx, FC_F64, FC_SHAPE(2, 3, 5), vals);
    outs[0] = fc_keep(fc_sum(x3, FC_AXES(0), false));
    set_add(&s, "sum(x[2,3,5], axis=0)", false, 0, outs, 1);
    outs[0] = fc_keep(fc_add(fc_transpose(x3), fc_f64(ctx, 1.0)));
    set_add(&s, "transpose(x[2,3,5]) + 1", false, 0, outs, 1);
    /* f16 results are rounded to f16 before the next op uses them, as the host backend (and
     * NumPy) store each op's result: cast(expm1(x_f16), f64) is expm1 rounded to f16. */
    uint16_t h[4] = {0x3c00, 0x3800, 0x4000, 0x4200}; /* 1, 0.5, 2, 3 */
    fc_array *xh = fc_from_host(ctx, FC_F16, FC_SHAPE(4), h);
    outs[0] = fc_keep(fc_cast(fc_expm1(xh), FC_F64));
    set_add(&s, "cast(expm1(x_f16), f64)", false, 0, outs, 1);
    uint16_t b16[4] = {0x3f80, 0x3f00, 0x4000, 0x4040}; /* bf16 1, 0.5, 2, 3 */
    fc_array *xb = fc_from_host(ctx, FC_BF16, FC_SHAPE(4), b16);
    outs[0] = fc_keep(fc_mul(fc_exp(xb), fc_scalar(ctx, FC_F32, 3.0)));
    set_add(&s, "exp(x_bf16) * f32(3)", false, 0, outs, 1);
    /* Two live outputs must not share a buffer slot (a matmul input dies, its slot is reused,
     * and must not be handed out again while the reuser's value is wanted). */
    float sq[64 * 64];
    for (int i = 0; i < 64 * 64; i++) sq[i] = (float)((i % 17) - 8) / 8.0f + 0.0625f;
    fc_array *x = fc_from_host(ctx, FC_F32, FC_SHAPE(64, 64), sq);
    outs[0] = fc_keep(fc_matmul(fc_sin(x), x));
    outs[1] = fc_keep(fc_tan(fc_slice(x, FC_COLON, FC_S(0, 32, 1))));
    outs[2] = fc_keep(fc_exp(fc_slice(x, FC_COLON, FC_S(0, 16, 1))));
    set_add(&s, "sin(x) @ x, tan(x[:, :32]), exp(x[:, :16])", false, 0, outs, 3);
    /* Constant padding of an empty axis loads nothing (it once read the element before the
     * buffer, an illegal address on the GPU; the sanitized build of this test sees it). */
    fc_array *e8 = fc_cast(fc_slice(x, FC_S(0, 3, 1), FC_S(5, 5, 1)), FC_I8); /* [3, 0] */
    outs[0] = fc_keep(fc_add(fc_pad(e8, 2, (const int64_t[][2]){{1, 0}, {2, 3}},
                                    FC_PAD_CONSTANT, 7.0), fc_scalar(ctx, FC_I8, 1)));
    outs[1] = fc_keep(fc_pad(fc_slice(x3, FC_COLON, FC_COLON, FC_S(0, 0, 1)), 3,
                             (const int64_t[][2]){{1, 2}, {0, 0}, {0, 0}}, FC_PAD_SYMMETRIC, 0));
    set_add(&s, "pad(x[0:3, 5:5] as i8, constant 7) + 1, pad(x3[:, :, 0:0], symmetric)", false,
            0, outs, 2);
    /* A row kernel over rows of length 0 whose outputs are all empty is not launched (it once
     * ran its per-row epilogue, reading the empty input and writing the empty output at index
     * 0: an illegal address on the GPU, seed 23254 of the differential test). */
    int32_t none = 0;
    fc_array *z0 = fc_from_host(ctx, FC_I32, FC_SHAPE(1, 0), &none);
    fc_array *d0 = fc_add(z0, z0), *t0 = fc_tan(d0);
    fc_array *p0 = fc_abs(fc_prod(fc_cast(d0, FC_U8), FC_AXES(1), true));
    outs[0] = fc_keep(fc_cast(fc_equal(fc_exp2(t0), p0), FC_U8));
    outs[1] = fc_keep(fc_mul(t0, fc_f64(ctx, 57.29577951308232)));
    set_add(&s, "prod over an empty axis feeding only empty outputs", false, 0, outs, 2);
    /* A row reduction of a square array broadcast as NumPy does, from the right: along the
     * columns (it once ran as a row kernel that added row i's sum to row i). */
    fc_array *sq4 = fc_from_host(ctx, FC_F64, FC_SHAPE(4, 4), vals);
    outs[0] = fc_keep(fc_add(sq4, fc_sum(sq4, FC_AXES(1), false)));
    outs[1] = fc_keep(fc_sub(fc_exp(sq4), fc_max(sq4, FC_AXES(1), true)));
    set_add(&s, "x + sum(x, axis=1), exp(x) - max(x, axis=1, keepdims) of a square x", false, 0,
            outs, 2);
    set_build(&s);
    set_run_and_close(&s);
}

/* ---- tiled transposes ------------------------------------------------------------------------ */

/* A value of dtype t and the given shape, its elements a pattern of `salt` (every element
 * distinct within a few hundred, so a transposed or shifted read shows). */
static fc_array *tile_value(fc_ctx *ctx, fc_dtype t, fc_shape shape, int salt) {
    int64_t n = 1;
    for (int d = 0; d < shape.ndim; d++) n *= shape.dim[d];
    double *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
    cr_assert_not_null(v);
    for (int64_t i = 0; i < n; i++) v[i] = (double)((i * 37 + salt * 11) % 251) / 8.0 - 15.0;
    fc_array *a = fc_cast(fc_from_host(ctx, FC_F64, shape, v), t);
    free(v);
    cr_assert_eq(fc_eval(ctx, &a, 1), FC_OK, "%s", fc_errmsg(ctx));
    return a;
}

/* Elementwise kernels over permuted buffers, tiled through shared memory (each tile's reads
 * along one axis, its writes along another): batched and unbatched transposes at extents
 * that are not multiples of the tile (and are, and are 1 or 0), several transposed inputs
 * beside buffers read in output order and broadcasts, permutes along other axes, and every
 * kind of dtype. Grids of a few blocks, so that blocks take several tiles in turn. Extents
 * that are multiples of the vector (and edge tiles that are not whole tiles) move whole
 * vectors, odd ones element by element: the set checks both ran (none whole where
 * cfg->misalign puts every buffer an element off its vector's alignment). */
static void emulate_tiles(const char *tag, const emu_cfg *cfg) {
    emu_set s;
    set_open(&s, tag, cfg);
    fc_ctx *ctx = s.ctx;
    fc_scope_open(ctx);
    fc_array *outs[WL_MAX_OUT];
    fc_array *x = tile_value(ctx, FC_F32, FC_SHAPE(3, 37, 45), 1);
    outs[0] = fc_keep(fc_add(fc_mul(fc_f64(ctx, 2.0), fc_permute(x, FC_AXES(0, 2, 1))),
                             fc_f64(ctx, 1.0)));
    set_add(&s, "2 * transpose(x[3, 37, 45], (0, 2, 1)) + 1", false, 0, outs, 1);
    fc_array *m = tile_value(ctx, FC_F64, FC_SHAPE(33, 70), 2);
    fc_array *b = tile_value(ctx, FC_F64, FC_SHAPE(33), 3);
    outs[0] = fc_keep(fc_sub(fc_transpose(m), b));
    set_add(&s, "x[33, 70].T - b[33]", false, 0, outs, 1);
    fc_array *p = tile_value(ctx, FC_F32, FC_SHAPE(40, 50), 4);
    fc_array *q = tile_value(ctx, FC_F32, FC_SHAPE(40, 50), 5);
    fc_array *w = tile_value(ctx, FC_F32, FC_SHAPE(50, 40), 6);
    outs[0] = fc_keep(fc_add(fc_mul(fc_transpose(p), fc_transpose(q)), w));
    outs[1] = fc_keep(fc_sub(w, fc_transpose(p)));
    set_add(&s, "p.T * q.T + w, w - p.T", false, 0, outs, 2);
    fc_array *r = tile_value(ctx, FC_F32, FC_SHAPE(5, 6, 35), 7);
    outs[0] = fc_keep(fc_exp(fc_permute(r, FC_AXES(2, 1, 0))));
    outs[1] = fc_keep(fc_add(fc_permute(r, FC_AXES(2, 1, 0)),
                             fc_permute(tile_value(ctx, FC_F32, FC_SHAPE(35, 5, 6), 8),
                                        FC_AXES(0, 2, 1))));
    set_add(&s, "exp(r.transpose(2, 1, 0)), r.transpose(2, 1, 0) + t.transpose(0, 2, 1)", false,
            0, outs, 2);
    fc_array *u = tile_value(ctx, FC_F32, FC_SHAPE(1, 40, 33), 9);
    outs[0] = fc_keep(fc_negative(fc_permute(u, FC_AXES(0, 2, 1))));
    outs[1] = fc_keep(fc_transpose(tile_value(ctx, FC_I32, FC_SHAPE(64, 96), 10)));
    outs[2] = fc_keep(fc_abs(fc_permute(tile_value(ctx, FC_I16, FC_SHAPE(2, 0, 7), 11),
                                        FC_AXES(0, 2, 1))));
    set_add(&s, "-u[1, 40, 33] (0, 2, 1), i32 x[64, 96].T, abs(i16 x[2, 0, 7] (0, 2, 1))", false,
            0, outs, 3);
    static const fc_dtype types[] = {FC_F16, FC_BF16, FC_F64, FC_C64, FC_C128, FC_BOOL, FC_U8,
                                     FC_I64};
    for (size_t i = 0; i < sizeof types / sizeof *types; i++) {
        fc_dtype t = types[i];
        fc_array *v = tile_value(ctx, t, FC_SHAPE(2, 35, 33), 12 + (int)i);
        fc_array *y = t == FC_BOOL ? fc_logical_not(fc_permute(v, FC_AXES(0, 2, 1)))
                                   : fc_add(fc_permute(v, FC_AXES(0, 2, 1)),
                                            fc_permute(v, FC_AXES(0, 2, 1)));
        outs[0] = fc_keep(y);
        char name[64];
        snprintf(name, sizeof name, "%s x[2, 35, 33] (0, 2, 1), doubled", fc_dtype_name(t));
        set_add(&s, name, false, 0, outs, 1);
    }
    /* Extents that are multiples of 4 (whole vectors of up to 4 elements), but not of the
     * tile: edge tiles of partial rows and columns. */
    static const fc_dtype vtypes[] = {FC_F32, FC_F16, FC_BF16, FC_F64, FC_C64, FC_C128, FC_U8,
                                      FC_I16, FC_I64, FC_BOOL};
    for (size_t i = 0; i < sizeof vtypes / sizeof *vtypes; i++) {
        fc_dtype t = vtypes[i];
        fc_array *v = tile_value(ctx, t, FC_SHAPE(2, 36, 68), 30 + (int)i);
        fc_array *w2 = tile_value(ctx, t, FC_SHAPE(2, 68, 36), 40 + (int)i);
        fc_array *y = t == FC_BOOL ? fc_logical_xor(fc_permute(v, FC_AXES(0, 2, 1)), w2)
                                   : fc_sub(fc_permute(v, FC_AXES(0, 2, 1)), w2);
        outs[0] = fc_keep(y);
        char name[64];
        snprintf(name, sizeof name, "%s x[2, 36, 68] (0, 2, 1) - w[2, 68, 36]", fc_dtype_name(t));
        set_add(&s, name, false, 0, outs, 1);
    }
    /* f32 unbatched, whole tiles and a partial one: a transposed input, one read in output
     * order, a broadcast row and column, two outputs of different dtypes */
    fc_array *g = tile_value(ctx, FC_F32, FC_SHAPE(132, 64), 50);
    fc_array *h = tile_value(ctx, FC_F32, FC_SHAPE(64, 132), 51);
    fc_array *row = tile_value(ctx, FC_F32, FC_SHAPE(132), 52);
    fc_array *col = tile_value(ctx, FC_F32, FC_SHAPE(64, 1), 53);
    outs[0] = fc_keep(fc_add(fc_mul(fc_transpose(g), h), fc_add(row, col)));
    outs[1] = fc_keep(fc_cast(fc_transpose(g), FC_F16));
    set_add(&s, "g[132, 64].T * h + row + col, f16(g.T)", false, 0, outs, 2);
    /* one buffer read both ways, the first leaf read in output order (its vector is l0: a
     * tile coordinate of that name once broke the compile, tests/test_gpu_interop.c) */
    fc_array *sq = tile_value(ctx, FC_F32, FC_SHAPE(72, 72), 58);
    outs[0] = fc_keep(fc_tanh(fc_add(fc_mul(sq, sq), fc_transpose(sq))));
    set_add(&s, "tanh(x * x + x.T), x[72, 72]", false, 0, outs, 1);
    /* an f64 transpose into f32 (vectors of 2: the widest), an f32 one into c128 (of 1) */
    outs[0] = fc_keep(fc_cast(fc_transpose(tile_value(ctx, FC_F64, FC_SHAPE(20, 44), 54)),
                              FC_F32));
    set_add(&s, "f32(f64 x[20, 44].T)", false, 0, outs, 1);
    outs[0] = fc_keep(fc_cast(fc_transpose(tile_value(ctx, FC_F32, FC_SHAPE(24, 20), 55)),
                              FC_C128));
    set_add(&s, "c128(f32 x[24, 20].T)", false, 0, outs, 1);
    /* extents below one vector, and a row of 1 beside a wide one */
    outs[0] = fc_keep(fc_transpose(tile_value(ctx, FC_F32, FC_SHAPE(3, 2), 56)));
    outs[1] = fc_keep(fc_permute(tile_value(ctx, FC_F32, FC_SHAPE(5, 1, 8), 57),
                                 FC_AXES(1, 2, 0)));
    set_add(&s, "x[3, 2].T, x[5, 1, 8] (1, 2, 0)", false, 0, outs, 2);
    /* every program above has a tiled kernel but the empty one (no launch) */
    int want = s.nprog - 1;
    set_build(&s);
    int tiled = set_run_and_close(&s);
    cr_assert_geq(tiled, want, "%d tiled launches, %d wanted", tiled, want);
    cr_assert_gt(s.n_tile_part, 0, "no tiled launch moved elements one by one");
    if (cfg->misalign)
        cr_assert_eq(s.n_tile_whole, 0, "%d tiled launches took whole vectors off their "
                     "alignment", s.n_tile_whole);
    else
        cr_assert_geq(s.n_tile_whole, 11, "%d tiled launches took whole vectors, 11 wanted",
                      s.n_tile_whole);
}

Test(emulated, tiled_transposes_eight_threads) {
    emulate_tiles("tiles_t8", &(emu_cfg){8, 4, 3, false, false, false, false, false, false});
}
Test(emulated, tiled_transposes_twelve_threads, EMU_OTHER_SHAPE) {
    emulate_tiles("tiles_t12", &(emu_cfg){12, 4, 2, false, false, false, false, false, false});
}
Test(emulated, tiled_transposes_64_threads, EMU_OTHER_SHAPE) {
    emulate_tiles("tiles_t64", &(emu_cfg){64, 32, 5, false, false, false, false, false, false});
}
/* Every buffer an element off a 16-byte boundary: the vectors fall back to elements. */
Test(emulated, tiled_transposes_misaligned) {
    emulate_tiles("tiles_mis", &(emu_cfg){8, 4, 3, false, false, false, false, false, true});
}
/* The device's block: FCX_TILE_THREADS at its default, a block of a tile a thread. */
Test(emulated, tiled_transposes_256_threads, EMU_OTHER_SHAPE) {
    emulate_tiles("tiles_t256", &(emu_cfg){256, 32, 2, false, false, false, false, false, false});
}

/* The variance of equal values is 0, in the batches of 8 that u8 loads give (without small
 * split constants, whose pieces are not aligned to a batch). A batch's mean, a rounded sum / k,
 * was taken as exact, and k (its error)^2 was left in the batch's M2 (9.2e-10 for sqrt(57803)
 * in f32, seed 126802 of the differential test; here 6e-5: 100032.016 eight times sums to
 * 8 x 100032.008 in f32). */
Test(emulated, variance_batches_of_equal_values) {
    emu_set s;
    set_open(&s, "variance_batches", &(emu_cfg){8, 4, 2, false, false, true, false, false, false});
    fc_ctx *ctx = s.ctx;
    fc_scope_open(ctx);
    fc_array *outs[WL_MAX_OUT];
    uint8_t u200[3 * 48];
    memset(u200, 200, sizeof u200);
    fc_array *eq = fc_mul(fc_from_host(ctx, FC_U8, FC_SHAPE(3, 48), u200),
                          fc_scalar(ctx, FC_F32, 500.1601));
    outs[0] = fc_keep(fc_var(eq, FC_AXES(1), false, 0));
    outs[1] = fc_keep(fc_std(eq, FC_AXES(0, 1), false, 1));
    set_add(&s, "var and std of equal f32 values", false, 0, outs, 2);
    set_build(&s);
    set_run_and_close(&s);
}

/* ---- the stencil kernel (codegen/stencil.c) --------------------------------------------- */

/* One STENCIL2D configuration: the node's dtype and shapes, origin and boundary, and whether
 * to force 64-bit indices (which only huge arrays would choose). */
typedef struct stencil_case {
    fc_dtype t;
    int64_t h, w, kh, kw, oy, ox, oh, ow;
    int boundary;
    double fre, fim;
    bool wide;
} stencil_case;

/* n values of dtype t, never zero: small integers, floats in [-2, 2]. */
static void *stencil_data(fc_dtype t, size_t n, uint64_t seed) {
    size_t es = fc_dtype_size(t);
    unsigned char *b = malloc(n * es + 1);
    cr_assert_not_null(b);
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
    for (size_t i = 0; i < n * (fcg_is_complex(t) ? 2 : 1); i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        int v = (int)(x % 9) - 4;
        if (v == 0) v = 3;
        double f = v * 0.4375 + (double)(x >> 40 & 255) / 1024.0;
        switch (t) {
        case FC_F32: ((float *)b)[i] = (float)f; break;
        case FC_C64: ((float *)b)[i] = (float)f; break;
        case FC_F64: case FC_C128: ((double *)b)[i] = f; break;
        case FC_I8: case FC_U8: ((int8_t *)b)[i] = (int8_t)v; break;
        case FC_I16: case FC_U16: ((int16_t *)b)[i] = (int16_t)(v * 91); break;
        case FC_I32: case FC_U32: ((int32_t *)b)[i] = v * 70001; break;
        default: ((int64_t *)b)[i] = (int64_t)v * 3000000017ll; break;
        }
    }
    return b;
}

/* Generates every case's kernel into one translation unit, runs each on the host shim (256
 * threads a block, a grid of at most 3 blocks so that blocks take several tiles), and
 * compares with the host reference backend's STENCIL2D. */
Test(emulated, stencil_kernels) {
    static const stencil_case cases[] = {
        /* dtype, h, w, kh, kw, oy, ox, oh, ow, boundary, fill, wide */
        {FC_F32, 37, 70, 3, 3, 1, 1, 37, 70, FC_CONV_SYMM, 0, 0, false},   /* same, tiles */
        {FC_F32, 37, 70, 3, 3, 2, 2, 39, 72, FC_CONV_FILL, 1.5, 0, false}, /* full, fill */
        {FC_F64, 20, 30, 5, 6, 0, 0, 16, 25, FC_CONV_WRAP, 0, 0, false},   /* valid */
        {FC_F64, 9, 13, 2, 4, 1, 3, 10, 16, FC_CONV_FILL, -2.25, 0, false},
        {FC_C64, 3, 4, 7, 9, 6, 8, 9, 12, FC_CONV_WRAP, 0, 0, false},      /* kernel > input */
        {FC_C128, 3, 4, 7, 9, 3, 4, 3, 4, FC_CONV_SYMM, 0, 0, false},
        {FC_C128, 6, 5, 2, 2, 1, 1, 7, 6, FC_CONV_FILL, 0.5, -1.25, false},
        {FC_I8, 33, 65, 3, 3, 1, 1, 33, 65, FC_CONV_WRAP, 0, 0, false},    /* wraps in i8 */
        {FC_U16, 10, 12, 4, 3, 3, 2, 13, 14, FC_CONV_FILL, 7, 0, false},
        {FC_I32, 12, 40, 3, 5, 2, 1, 12, 40, FC_CONV_SYMM, 0, 0, false},
        {FC_I64, 8, 9, 2, 3, 0, 0, 7, 7, FC_CONV_FILL, 0, 0, false},
        {FC_U64, 8, 9, 3, 2, 2, 1, 10, 10, FC_CONV_FILL, 5, 0, false},
        {FC_F32, 5, 5, 1, 1, 0, 0, 5, 5, FC_CONV_FILL, 0, 0, false},      /* 1x1 */
        {FC_F32, 1, 200, 1, 15, 0, 7, 1, 200, FC_CONV_FILL, 0, 0, false}, /* np.convolve */
        {FC_F32, 30, 40, 12, 12, 6, 5, 30, 40, FC_CONV_SYMM, 0, 0, false}, /* not unrolled */
        {FC_F64, 120, 110, 100, 100, 0, 0, 21, 11, FC_CONV_FILL, 0, 0, false}, /* untiled */
        {FC_C128, 3, 50, 2, 1200, 1, 1199, 4, 1249, FC_CONV_SYMM, 0, 0, false}, /* untiled */
        {FC_F32, 37, 70, 3, 3, 1, 1, 37, 70, FC_CONV_WRAP, 0, 0, true},    /* 64-bit indices */
        {FC_F64, 20, 30, 40, 3, 39, 1, 59, 30, FC_CONV_SYMM, 0, 0, true},
    };
    enum { N = sizeof cases / sizeof *cases };
    emu_set s;
    set_open(&s, "stencil",
             &(emu_cfg){FCX_STENCIL_THREADS, 32, 3, false, false, false, false, false, false});
    int tiled = 0, untiled = 0, unrolled = 0;
    fcx_stencil plans[N];
    for (int c = 0; c < N; c++) {
        const stencil_case *k = &cases[c];
        fcx_stencil_plan(&plans[c], k->t, k->kh, k->kw, k->oy, k->ox, k->boundary, k->h, k->w,
                         k->oh, k->ow);
        if (k->wide) plans[c].wide = true;
        /* every other case reads its weights reversed, from the buffer a convolution's flip
         * is a view of (fcx_stencil.flipped) */
        plans[c].flipped = c % 2 == 1 || c == 14;
        tiled += plans[c].tiled;
        untiled += !plans[c].tiled;
        unrolled += plans[c].unrolled;
        char name[32], *src = NULL;
        snprintf(name, sizeof name, "st%d", c);
        cr_assert_eq(fcx_stencil_source(s.ctx, &plans[c], name, &src), FC_OK);
        fputs(src, s.cpp);
        fcg_strfree(s.ctx, src);
        fprintf(s.cpp,
                "struct emu_sa%d { const void *x, *w; void *out; long long i[6]; double f[2]; };\n"
                "static void emu_stramp%d(const void *q) {\n"
                "    const emu_sa%d *a = (const emu_sa%d *)q;\n"
                "    %s(a->x, a->w, a->out, a->i[0], a->i[1], a->i[2], a->i[3], a->i[4], a->i[5],\n"
                "       a->f[0], a->f[1]);\n}\n"
                "extern \"C\" int emu_%s(const void *x, const void *w, void *out, const long long *i,\n"
                "                        const double *f, unsigned grid) {\n"
                "    emu_sa%d a = {x, w, out, {i[0], i[1], i[2], i[3], i[4], i[5]}, {f[0], f[1]}};\n"
                "    return emu_launch(emu_stramp%d, &a, grid, 0, 0);\n}\n",
                c, c, c, c, name, name, c, c);
    }
    cr_assert(tiled >= 10 && untiled >= 2 && unrolled >= 8, "the cases cover every variant");
    int flipped_kinds[3] = {0, 0, 0}; /* unrolled, tiled and rolled, untiled */
    for (int c = 0; c < N; c++)
        if (plans[c].flipped)
            flipped_kinds[plans[c].unrolled ? 0 : plans[c].tiled ? 1 : 2]++;
    cr_assert(flipped_kinds[0] && flipped_kinds[1] && flipped_kinds[2],
              "reversed weights in every variant (%d, %d, %d)", flipped_kinds[0],
              flipped_kinds[1], flipped_kinds[2]);
    set_build(&s);
    typedef int (*stencil_fn)(const void *, const void *, void *, const long long *,
                              const double *, unsigned);
    for (int c = 0; c < N; c++) {
        const stencil_case *k = &cases[c];
        size_t es = fc_dtype_size(k->t), nout = (size_t)(k->oh * k->ow);
        void *xv = stencil_data(k->t, (size_t)(k->h * k->w), 2 * (uint64_t)c + 1);
        void *wv = stencil_data(k->t, (size_t)(k->kh * k->kw), 2 * (uint64_t)c + 2);
        fc_scope *sc = fc_scope_open(s.ctx);
        fc_array *ref = fcg_stencil2d(fc_from_host(s.ctx, k->t, FC_SHAPE(k->h, k->w), xv),
                                      fc_from_host(s.ctx, k->t, FC_SHAPE(k->kh, k->kw), wv),
                                      k->oh, k->ow, k->oy, k->ox, k->boundary, k->fre, k->fim);
        /* the fill as the node holds it, converted to the dtype (read before the evaluation
         * makes the node a value) */
        cr_assert_eq(fc_array_status(ref), FC_OK, "case %d: %s", c, fc_array_errmsg(ref));
        double flts[2] = {ref->p.re, ref->p.im};
        unsigned char *want = malloc(nout * es + 1), *got = malloc(nout * es + CANARY);
        cr_assert_eq(fc_read(ref, want, 0, (int64_t)nout), FC_OK, "case %d: %s", c,
                     fc_errmsg(s.ctx));
        memset(got, 0xA5, nout * es + CANARY);
        uint64_t tiles_x, tiles = fcx_stencil_tiles(&plans[c], k->oh, k->ow, &tiles_x);
        long long ints[6] = {k->h, k->w, k->oh, k->ow, (long long)tiles_x, (long long)tiles};
        char fname[32];
        snprintf(fname, sizeof fname, "emu_st%d", c);
        stencil_fn fn = (stencil_fn)(uintptr_t)dlsym(s.so, fname);
        cr_assert_not_null(fn, "%s", fname);
        size_t nw = (size_t)(k->kh * k->kw);
        unsigned char *wk = malloc(nw * es + 1); /* what the kernel reads */
        for (size_t e = 0; e < nw; e++)
            memcpy(wk + e * es, (unsigned char *)wv + (plans[c].flipped ? nw - 1 - e : e) * es, es);
        cr_assert_eq(fn(xv, wk, got, ints, flts, tiles < 3 ? (unsigned)tiles : 3u), 0);
        free(wk);
        for (size_t i = 0; i < nout; i++) {
            bool ok;
            if (!fcg_is_inexact(k->t)) {
                ok = integral_equal(k->t, got, want, (int64_t)i);
            } else {
                double gr, gi, wr, wi;
                element(k->t, got, (int64_t)i, &gr, &gi);
                element(k->t, want, (int64_t)i, &wr, &wi);
                ok = close_enough(k->t, gr, wr, false) && close_enough(k->t, gi, wi, false);
            }
            cr_assert(ok, "stencil case %d (%s %lldx%lld kernel, boundary %d): element %zu "
                      "differs from the host", c, fc_dtype_name(k->t), (long long)k->kh,
                      (long long)k->kw, k->boundary, i);
        }
        for (size_t i = 0; i < CANARY; i++)
            cr_assert_eq(got[nout * es + i], 0xA5, "case %d wrote past its output", c);
        free(want);
        free(got);
        free(xv);
        free(wv);
        fc_scope_close(sc);
    }
    set_close(&s);
}

/* ---- shifted-slice stencils in elementwise kernels (issue 13 item 6) ------------------------
 * Kernels that read one value through several slices take tiles through shared memory when
 * the slices' steps are 1 and their starts lie close (codegen/cuda.c, gen_ew_tiles), else the
 * direct loops. Each program says which it must take (the kernels count the blocks that took
 * tiles), at extents that are not multiples of the tile, tiny ones, every pad mode, several
 * dtypes, batches, other inputs beside the taps, and every block shape. */

static fc_array *sweep_input(fc_ctx *ctx, uint64_t seed, fc_dtype t, fc_shape shape);

/* s[..., r : r + (oh - 1) * step + 1 : step, c : c + ow] */
static fc_array *tap_at(fc_array *s, int64_t r, int64_t c, int64_t oh, int64_t ow, int64_t step) {
    fc_idx rows = FC_S(r, r + (oh - 1) * step + 1, step), cols = FC_S(c, c + ow, 1);
    if (fc_array_shape(s).ndim == 2) return fc_slice(s, rows, cols);
    return fc_slice(s, FC_COLON, rows, cols);
}

/* The sum of the k x k taps of s `gap` apart, rows `step` apart. */
static fc_array *window_sum(fc_array *s, int k, int64_t gap, int64_t step) {
    fc_shape sh = fc_array_shape(s);
    int64_t span = (k - 1) * gap, h = sh.dim[sh.ndim - 2], w = sh.dim[sh.ndim - 1];
    int64_t oh = (h - span - 1) / step + 1, ow = w - span;
    fc_array *sum = NULL;
    for (int di = 0; di < k; di++)
        for (int dj = 0; dj < k; dj++) {
            fc_array *t = tap_at(s, di * gap, dj * gap, oh, ow, step);
            sum = sum ? fc_add(sum, t) : t;
        }
    return sum;
}

/* The 5-point Laplacian of u over its interior (bench/fc/i13_laplacian.fc). */
static fc_array *laplacian(fc_ctx *ctx, fc_array *u) {
    fc_shape sh = fc_array_shape(u);
    int64_t oh = sh.dim[0] - 2, ow = sh.dim[1] - 2;
    fc_array *y = fc_add(tap_at(u, 0, 1, oh, ow, 1), tap_at(u, 2, 1, oh, ow, 1));
    y = fc_add(fc_add(y, tap_at(u, 1, 0, oh, ow, 1)), tap_at(u, 1, 2, oh, ow, 1));
    return fc_sub(y, fc_mul(fc_i64(ctx, 4), tap_at(u, 1, 1, oh, ow, 1)));
}

/* The body a program's stencil kernel must take. */
typedef enum { TAKES_DIRECT, TAKES_TILES, TAKES_STRIPS } slice_body;

static void add_tiled(emu_set *s, const char *name, slice_body want, fc_array **outs, int n) {
    for (int q = 0; q < n; q++) outs[q] = fc_keep(outs[q]);
    set_add(s, name, false, 0, outs, n);
    program *p = &s->progs[s->nprog - 1];
    p->check_tiled = true;
    p->want_tiled = want == TAKES_TILES;
    p->want_strips = want == TAKES_STRIPS;
    p->exact = true; /* the taps' values are the direct path's, the arithmetic the host's */
}

static void emulate_shifted_slices(const char *tag, const emu_cfg *cfg) {
    emu_set s;
    set_open(&s, tag, cfg);
    fc_ctx *ctx = s.ctx;
    fc_scope_open(ctx);
    char name[96];
    fc_array *outs[WL_MAX_OUT];
    wl_data_seed = 11;
    /* taps of a pad of a buffer take strips: rows wider than a strip (256 f32 columns)
     * have strips whose taps all read inside x (the pad a shift) between those that do not */
    static const int64_t blur[][2] = {{37, 45}, {70, 33}, {1, 5}, {6, 1}, {2, 2}, {1, 1},
                                      {5, 600}, {4, 1030}};
    for (size_t i = 0; i < sizeof blur / sizeof blur[0]; i++) {
        wl_w09_box_blur(ctx, blur[i], outs);
        snprintf(name, sizeof name, "W9 box blur %lldx%lld", (long long)blur[i][0],
                 (long long)blur[i][1]);
        add_tiled(&s, name, TAKES_STRIPS, outs, 1);
    }
    wl_data_seed = 0;
    static const struct { fc_dtype t; int64_t h, w; } lap[] = {
        {FC_F32, 37, 45}, {FC_F32, 3, 3}, {FC_F32, 66, 35}, {FC_F64, 20, 70},
        {FC_I32, 19, 40}, {FC_F16, 33, 34}, {FC_F32, 3, 40}, {FC_F32, 40, 3},
        {FC_C64, 18, 35}, {FC_I8, 35, 18},
        /* whole strips (256 f32 columns, 128 f64, 64 c128) and a part of one */
        {FC_F32, 7, 600}, {FC_F32, 4, 258}, {FC_F64, 9, 300}, {FC_C128, 4, 131},
        {FC_I8, 5, 521}, {FC_F16, 6, 515}};
    for (size_t i = 0; i < sizeof lap / sizeof lap[0]; i++) {
        fc_array *u = sweep_input(ctx, 100 + i, lap[i].t, FC_SHAPE(lap[i].h, lap[i].w));
        outs[0] = laplacian(ctx, u);
        snprintf(name, sizeof name, "laplacian %s %lldx%lld", fc_dtype_name(lap[i].t),
                 (long long)lap[i].h, (long long)lap[i].w);
        add_tiled(&s, name, TAKES_DIRECT, outs, 1); /* a buffer's taps (taps_find) */
    }
    /* a view of a buffer (its first element not 16-byte aligned), a batch of them, steps of
     * 2: a buffer's taps take the direct loops (strips are for pads of one: taps_find); an
     * empty result launches nothing */
    fc_array *ub = sweep_input(ctx, 120, FC_F32, FC_SHAPE(41, 303));
    outs[0] = laplacian(ctx, fc_slice(ub, FC_S(1, 41, 1), FC_S(3, 303, 1)));
    add_tiled(&s, "laplacian of ub[1:, 3:]", TAKES_DIRECT, outs, 1);
    fc_array *u3 = sweep_input(ctx, 121, FC_F32, FC_SHAPE(3, 6, 290));
    outs[0] = window_sum(u3, 3, 1, 1);
    add_tiled(&s, "3x3 taps of buffer u[3, 6, 290]", TAKES_DIRECT, outs, 1);
    outs[0] = fc_add(fc_add(fc_slice(u3, FC_S(0, 2, 1), FC_S(0, 5, 1), FC_S(0, 289, 1)),
                            fc_slice(u3, FC_S(1, 3, 1), FC_S(1, 6, 1), FC_S(1, 290, 1))),
                     fc_slice(u3, FC_S(0, 2, 1), FC_S(1, 6, 1), FC_S(0, 289, 1)));
    add_tiled(&s, "taps of buffer u[3, 6, 290] at two batch offsets", TAKES_DIRECT, outs, 1);
    outs[0] = window_sum(ub, 3, 1, 2);
    add_tiled(&s, "3x3 taps of a buffer with a row step of 2", TAKES_DIRECT, outs, 1);
    outs[0] = fc_add(fc_add(fc_slice(ub, FC_S(0, 40, 1), FC_S(0, 299, 2)),
                            fc_slice(ub, FC_S(1, 41, 1), FC_S(1, 300, 2))),
                     fc_slice(ub, FC_S(0, 40, 1), FC_S(2, 301, 2)));
    add_tiled(&s, "taps of a buffer with a column step of 2", TAKES_DIRECT, outs, 1);
    static const int64_t empty[][2] = {{2, 40}, {40, 2}};
    for (size_t i = 0; i < 2; i++) {
        outs[0] = laplacian(ctx, sweep_input(ctx, 122 + i, FC_F32, FC_SHAPE(empty[i][0],
                                                                            empty[i][1])));
        snprintf(name, sizeof name, "laplacian f32 %lldx%lld: empty", (long long)empty[i][0],
                 (long long)empty[i][1]);
        add_tiled(&s, name, TAKES_DIRECT, outs, 1);
    }
    /* every pad mode, narrow and wide (strips of 128 f64 columns for 3x3 taps, 64 for 5x5:
     * some inside x) */
    fc_array *x = sweep_input(ctx, 200, FC_F64, FC_SHAPE(23, 41));
    fc_array *xw = sweep_input(ctx, 207, FC_F64, FC_SHAPE(6, 300));
    static const char *const modes[] = {"constant", "edge", "reflect", "symmetric"};
    for (int m = 0; m < 4; m++)
        for (int64_t wd = 1; wd <= 2; wd++)
            for (int wide = 0; wide < 2; wide++) {
                fc_array *pd = fc_pad(wide ? xw : x, 1, (const int64_t[][2]){{wd, wd}},
                                      (fc_pad_mode)m, 2.5);
                outs[0] = window_sum(pd, (int)(2 * wd + 1), 1, 1);
                snprintf(name, sizeof name, "%dx%d taps of pad(%s, %lld, %s)", (int)(2 * wd + 1),
                         (int)(2 * wd + 1), wide ? "xw" : "x", (long long)wd, modes[m]);
                add_tiled(&s, name, TAKES_STRIPS, outs, 1);
            }
    /* taps of a computed value (a buffer's take the direct loops: taps_find) */
    fc_array *xc = fc_mul(x, fc_f64(ctx, 1.5));
    outs[0] = window_sum(x, 3, 1, 1);
    add_tiled(&s, "3x3 taps of a buffer", TAKES_DIRECT, outs, 1);
    outs[0] = window_sum(xc, 3, 2, 1);
    add_tiled(&s, "3x3 taps 2 apart: a spread of 4", TAKES_TILES, outs, 1);
    /* the direct loops: rows 2 apart, or starts spread beyond the halo */
    outs[0] = window_sum(xc, 3, 1, 2);
    add_tiled(&s, "3x3 taps with a row step of 2", TAKES_DIRECT, outs, 1);
    outs[0] = window_sum(xc, 3, 3, 1);
    add_tiled(&s, "3x3 taps 3 apart: a spread of 6", TAKES_DIRECT, outs, 1);
    outs[0] = window_sum(xc, 2, 5, 1);
    add_tiled(&s, "2x2 taps 5 apart", TAKES_DIRECT, outs, 1);
    /* other inputs beside the taps: a same-shape buffer and a broadcast row */
    fc_array *xf = sweep_input(ctx, 201, FC_F32, FC_SHAPE(45, 38));
    fc_array *z = sweep_input(ctx, 202, FC_F32, FC_SHAPE(43, 36));
    fc_array *b = sweep_input(ctx, 203, FC_F32, FC_SHAPE(36));
    outs[0] = fc_add(fc_mul(window_sum(fc_sqrt(xf), 3, 1, 1), z), b);
    add_tiled(&s, "taps * z + b", TAKES_TILES, outs, 1);
    /* a computed value as the taps' source, and two outputs */
    fc_array *y = sweep_input(ctx, 204, FC_F32, FC_SHAPE(45, 38));
    fc_array *src = fc_add(fc_exp(fc_mul(xf, fc_f64(ctx, 0.25))), y);
    outs[0] = window_sum(src, 3, 1, 1);
    outs[1] = fc_sub(tap_at(src, 1, 1, 43, 36, 1), z);
    add_tiled(&s, "taps of exp(x / 4) + y, two outputs", TAKES_TILES, outs, 2);
    /* batches: every tap at the same batch offset, or not */
    fc_array *x3 = fc_sqrt(sweep_input(ctx, 205, FC_F32, FC_SHAPE(3, 20, 37)));
    outs[0] = window_sum(x3, 3, 1, 1);
    add_tiled(&s, "3x3 taps of x[3, 20, 37]", TAKES_TILES, outs, 1);
    outs[0] = fc_add(fc_add(fc_slice(x3, FC_S(0, 2, 1), FC_S(0, 19, 1), FC_S(0, 36, 1)),
                            fc_slice(x3, FC_S(1, 3, 1), FC_S(1, 20, 1), FC_S(1, 37, 1))),
                     fc_slice(x3, FC_S(0, 2, 1), FC_S(1, 20, 1), FC_S(0, 36, 1)));
    add_tiled(&s, "taps of x[3, 20, 37] at two batch offsets", TAKES_DIRECT, outs, 1);
    fc_array *x1 = fc_abs(sweep_input(ctx, 206, FC_I32, FC_SHAPE(1, 9, 30)));
    outs[0] = window_sum(x1, 3, 1, 1);
    add_tiled(&s, "3x3 taps of i32 x[1, 9, 30]", TAKES_TILES, outs, 1);
    set_build(&s);
    set_run_and_close(&s);
}

Test(emulated, shifted_slices_one_thread) {
    emulate_shifted_slices("slices_t1", &(emu_cfg){1, 1, 1, false, false, false, false, false, false});
}
/* three warps of 4: a tile's elements do not divide among the threads */
Test(emulated, shifted_slices_twelve_threads, EMU_OTHER_SHAPE) {
    emulate_shifted_slices("slices_t12", &(emu_cfg){12, 4, 2, false, false, false, false, false, false});
}
Test(emulated, shifted_slices_64_threads_warps_of_32, EMU_OTHER_SHAPE) {
    emulate_shifted_slices("slices_t64", &(emu_cfg){64, 32, 3, false, false, false, false, false, false});
}

/* The triangle copy kernels (codegen/tri.c) on the host shim: every element size, both
 * triangles, a copy and a clearing in place (src NULL), square, tall and wide matrices whose
 * rows are longer and shorter than a block (8 threads; kept runs of more than 4 blocks' width
 * take the four-load loop), pitches wider than a row and gaps
 * between matrices (which must stay untouched), stacks, and grids of 1 to 3 blocks so that
 * blocks take several rows. dst starts poisoned (0xA5) for a copy, with other data for a
 * clearing; the kept triangle must be src's (or dst's own) bytes, the other zeros. */
Test(emulated, triangle_copies) {
    emu_set s;
    set_open(&s, "tri", &(emu_cfg){8, 4, 3, false, false, false, false, false, false});
    char *src = NULL;
    cr_assert_eq(fcx_tri_source(s.ctx, &src), FC_OK);
    fputs(src, s.cpp);
    fcg_strfree(s.ctx, src);
    fputs("struct emu_ta { int f; const void *src; void *dst; long long i[7]; int upper; };\n"
          "typedef void (*emu_tri_k)(const void *, void *, long long, long long, long long,\n"
          "                          long long, long long, long long, long long, int);\n"
          "static const emu_tri_k emu_tri_ks[3] = {fct_tri4, fct_tri8, fct_tri16};\n"
          "static void emu_tramp_tri(const void *q) {\n"
          "    const emu_ta *a = (const emu_ta *)q;\n"
          "    const long long *i = a->i;\n"
          "    emu_tri_ks[a->f](a->src, a->dst, i[0], i[1], i[2], i[3], i[4], i[5], i[6],\n"
          "                     a->upper);\n"
          "}\n"
          "extern \"C\" int emu_tri(int f, const void *src, void *dst, const long long *i,\n"
          "                        int upper, unsigned grid) {\n"
          "    emu_ta a = {f, src, dst, {i[0], i[1], i[2], i[3], i[4], i[5], i[6]}, upper};\n"
          "    return emu_launch(emu_tramp_tri, &a, grid, 0, 0);\n"
          "}\n",
          s.cpp);
    set_build(&s);
    typedef int (*tri_fn)(int, const void *, void *, const long long *, int, unsigned);
    tri_fn fn = (tri_fn)(uintptr_t)dlsym(s.so, "emu_tri");
    cr_assert_not_null(fn);
    static const struct {
        long long count, rows, cols, spad, sgap, dpad, dgap; /* pads and gaps in elements */
    } shapes[] = {{1, 1, 1, 0, 0, 0, 0},  {1, 5, 5, 0, 0, 0, 0},   {3, 5, 5, 0, 0, 0, 0},
                  {1, 7, 13, 0, 0, 3, 0}, {2, 13, 7, 2, 5, 0, 4},  {2, 20, 20, 1, 0, 0, 3},
                  {1, 3, 30, 0, 0, 0, 0}, {4, 9, 9, 0, 7, 2, 1},   {1, 0, 4, 0, 0, 0, 0},
                  {1, 40, 40, 1, 0, 2, 0}, {2, 45, 33, 0, 3, 0, 0}};
    int ran = 0;
    for (int f = 0; f < 3; f++) {
        size_t es = (size_t)4 << f;
        cr_assert_eq(fcx_tri_function(es), f);
        for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++)
            for (int mode = 0; mode < 4; mode++) {
                bool upper = mode & 1, inplace = mode & 2;
                long long count = shapes[si].count, rows = shapes[si].rows, cols = shapes[si].cols;
                long long sp = cols + shapes[si].spad, ss = rows * sp + shapes[si].sgap;
                long long dp = cols + shapes[si].dpad, ds = rows * dp + shapes[si].dgap;
                if (inplace) sp = dp, ss = ds;
                size_t sbytes = (size_t)(count * ss) * es, dbytes = (size_t)(count * ds) * es;
                unsigned char *sv = malloc(sbytes + 1), *dv = malloc(dbytes + CANARY);
                unsigned char *before = malloc(dbytes + 1);
                cr_assert(sv && dv && before);
                for (size_t i = 0; i < sbytes; i++) sv[i] = (unsigned char)(i * 131 + 7 + f);
                if (inplace)
                    for (size_t i = 0; i < dbytes; i++) dv[i] = (unsigned char)(i * 29 + 3);
                else
                    memset(dv, 0xA5, dbytes);
                memset(dv + dbytes, 0xA5, CANARY);
                memcpy(before, dv, dbytes);
                long long ints[7] = {rows, cols, sp, ss, dp, ds, count * rows};
                long long tasks = count * rows;
                unsigned grid = (unsigned)(1 + (si + (size_t)mode) % 3);
                if (tasks > 0 && grid > tasks) grid = (unsigned)tasks;
                cr_assert_eq(fn(f, inplace ? NULL : sv, dv, ints, upper, grid), 0);
                ran++;
                for (long long b = 0; b < count; b++)
                    for (long long i = 0; i < rows; i++)
                        for (long long j = 0; j < cols; j++) {
                            size_t at = (size_t)(b * ds + i * dp + j) * es;
                            bool keep = upper ? j >= i : j <= i;
                            static const unsigned char zero[16];
                            const unsigned char *want =
                                !keep ? zero
                                : inplace ? before + at
                                          : sv + (size_t)(b * ss + i * sp + j) * es;
                            cr_assert(memcmp(dv + at, want, es) == 0,
                                      "tri %zu-byte %s%s, %lldx%lld x %lld: matrix %lld element "
                                      "(%lld, %lld) is wrong", es, upper ? "upper" : "lower",
                                      inplace ? " in place" : "", rows, cols, count, b, i, j);
                        }
                /* everything outside the matrices' rows x cols elements is untouched */
                for (size_t at = 0; at < dbytes; at += es) {
                    long long e = (long long)(at / es), b = e / ds, r = e % ds;
                    bool inside = r / dp < rows && r % dp < cols;
                    if (!inside)
                        cr_assert(memcmp(dv + at, before + at, es) == 0,
                                  "tri %zu-byte, %lldx%lld x %lld: element %lld of matrix %lld "
                                  "(outside the rows) was written", es, rows, cols, count, r, b);
                }
                for (size_t i = 0; i < CANARY; i++)
                    cr_assert_eq(dv[dbytes + i], 0xA5, "tri: written past the stack");
                free(sv);
                free(dv);
                free(before);
            }
    }
    cr_expect_eq(ran, 3 * 11 * 4);
    set_close(&s);
}

/* The helper kernels of batched linear algebra (codegen/batched.c) on the host shim, every
 * word size: transposes of stacks of square, tall and wide matrices (the layouts
 * backend/cuda_batched.c makes: into column-major order and back), a gather along the
 * diagonal (the LU diagonals), scatters at stride 2 (eigenvalues into complex rows, pivots
 * widened) and their zeros (src NULL), the packed eigenvector rows with the conjugating
 * flip of the top word, and an empty move. dst starts poisoned (0xA5): what no element maps
 * to (gaps, the other words of a stride-2 scatter, the canary behind) must stay untouched.
 * Grids of 1 to 3 blocks of 8 threads, so that threads take several elements. Then the
 * pointer arrays, and the marks of matrices whose eigenvalues are not finite. */
Test(emulated, batched_moves) {
    emu_set s;
    set_open(&s, "batched", &(emu_cfg){8, 4, 3, false, false, false, false, false, false});
    char *src = NULL;
    cr_assert_eq(fcx_batched_source(s.ctx, &src), FC_OK);
    fputs(src, s.cpp);
    fcg_strfree(s.ctx, src);
    fputs("struct emu_ba { int f; const void *src; void *dst; long long i[9];\n"
          "                unsigned long long mask; };\n"
          "typedef void (*emu_bm_k)(const void *, void *, long long, long long, long long,\n"
          "                         long long, long long, long long, long long, long long,\n"
          "                         long long, unsigned long long);\n"
          "static const emu_bm_k emu_bm_ks[3] = {fcb_move4, fcb_move8, fcb_move16};\n"
          "static void emu_tramp_bm(const void *q) {\n"
          "    const emu_ba *a = (const emu_ba *)q;\n"
          "    const long long *i = a->i;\n"
          "    emu_bm_ks[a->f](a->src, a->dst, i[0], i[1], i[2], i[3], i[4], i[5], i[6], i[7],\n"
          "                    i[8], a->mask);\n"
          "}\n"
          "extern \"C\" int emu_bmove(int f, const void *src, void *dst, const long long *i,\n"
          "                          unsigned long long mask, unsigned grid) {\n"
          "    emu_ba a = {f, src, dst, {i[0], i[1], i[2], i[3], i[4], i[5], i[6], i[7], i[8]},\n"
          "                mask};\n"
          "    return emu_launch(emu_tramp_bm, &a, grid, 0, 0);\n"
          "}\n"
          "struct emu_pa { unsigned long long *dst; unsigned long long base;\n"
          "                long long stride, count; };\n"
          "static void emu_tramp_bp(const void *q) {\n"
          "    const emu_pa *a = (const emu_pa *)q;\n"
          "    fcb_ptrs(a->dst, a->base, a->stride, a->count);\n"
          "}\n"
          "extern \"C\" int emu_bptrs(unsigned long long *dst, unsigned long long base,\n"
          "                          long long stride, long long count, unsigned grid) {\n"
          "    emu_pa a = {dst, base, stride, count};\n"
          "    return emu_launch(emu_tramp_bp, &a, grid, 0, 0);\n"
          "}\n"
          "struct emu_na { int dbl; int *info; const void *w; long long n, count; int mark; };\n"
          "static void emu_tramp_bn(const void *q) {\n"
          "    const emu_na *a = (const emu_na *)q;\n"
          "    if (a->dbl) fcb_nonfinite8(a->info, a->w, a->n, a->count, a->mark);\n"
          "    else fcb_nonfinite4(a->info, a->w, a->n, a->count, a->mark);\n"
          "}\n"
          "extern \"C\" int emu_bnonfinite(int dbl, int *info, const void *w, long long n,\n"
          "                               long long count, int mark, unsigned grid) {\n"
          "    emu_na a = {dbl, info, w, n, count, mark};\n"
          "    return emu_launch(emu_tramp_bn, &a, grid, 0, 0);\n"
          "}\n",
          s.cpp);
    set_build(&s);
    typedef int (*move_fn)(int, const void *, void *, const long long *, unsigned long long,
                           unsigned);
    typedef int (*ptrs_fn)(unsigned long long *, unsigned long long, long long, long long,
                           unsigned);
    move_fn mv = (move_fn)(uintptr_t)dlsym(s.so, "emu_bmove");
    ptrs_fn pt = (ptrs_fn)(uintptr_t)dlsym(s.so, "emu_bptrs");
    cr_assert(mv && pt);
    static const struct {
        const char *what;
        long long i[9]; /* count, rows, cols, src row, col, matrix, dst row, col, matrix */
        long long dst_at; /* words before dst's first element */
        bool zeros;       /* src NULL */
        unsigned long long mask;
    } cases[] = {
        {"transpose 5x5 x3", {3, 5, 5, 1, 5, 25, 5, 1, 25}, 0, false, 0},
        {"transpose 4x7 x2", {2, 7, 4, 1, 7, 28, 4, 1, 28}, 0, false, 0},
        {"transpose 7x4 x2", {2, 4, 7, 1, 4, 28, 7, 1, 28}, 0, false, 0},
        {"diagonals 6x6 x4", {4, 6, 1, 7, 0, 36, 1, 0, 6}, 0, false, 0},
        {"row into complex", {3, 1, 5, 0, 1, 5, 0, 2, 60}, 0, false, 0},
        {"row's zeros", {3, 1, 5, 0, 1, 5, 0, 2, 60}, 1, true, 0},
        {"eigenvectors", {2, 4, 4, 1, 4, 16, 4, 1, 20}, 4, false, 1ull << 63},
        {"flip low bits", {2, 3, 3, 1, 3, 9, 3, 1, 9}, 0, false, 0x80000001ull},
        {"pivots widened", {1, 10, 1, 1, 0, 0, 2, 0, 0}, 0, false, 0},
        {"empty", {3, 0, 4, 1, 4, 0, 4, 1, 0}, 0, false, 0},
    };
    int ran = 0;
    for (int f = 0; f < 3; f++) {
        size_t es = (size_t)4 << f;
        cr_assert_eq(fcx_batched_move(es), FCX_BATCHED_MOVE4 + f);
        for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
            const long long *i = cases[c].i;
            long long count = i[0], rows = i[1], cols = i[2], send = 1, dend = 1;
            for (long long b = 0; b < count; b++)
                for (long long r = 0; r < rows; r++)
                    for (long long q = 0; q < cols; q++) {
                        long long sa = b * i[5] + r * i[3] + q * i[4] + 1;
                        long long da = cases[c].dst_at + b * i[8] + r * i[6] + q * i[7] + 1;
                        send = sa > send ? sa : send;
                        dend = da > dend ? da : dend;
                    }
            size_t sbytes = (size_t)send * es, dbytes = (size_t)dend * es;
            unsigned char *sv = malloc(sbytes), *dv = malloc(dbytes + CANARY);
            unsigned char *want = malloc(dbytes + CANARY);
            cr_assert(sv && dv && want);
            for (size_t k = 0; k < sbytes; k++) sv[k] = (unsigned char)(k * 131 + 7 + (size_t)f);
            memset(dv, 0xA5, dbytes + CANARY);
            memcpy(want, dv, dbytes + CANARY);
            for (long long b = 0; b < count; b++)
                for (long long r = 0; r < rows; r++)
                    for (long long q = 0; q < cols; q++) {
                        unsigned char word[16] = {0};
                        if (!cases[c].zeros) {
                            memcpy(word, sv + (size_t)(b * i[5] + r * i[3] + q * i[4]) * es, es);
                            /* the top 8 bytes (all of a 4-byte word, with the mask's low 32
                             * bits) XORed with the mask */
                            unsigned long long m = cases[c].mask, top = 0;
                            size_t at = es == 4 ? 0 : es - 8, len = es == 4 ? 4 : 8;
                            memcpy(&top, word + at, len);
                            top ^= es == 4 ? (m & 0xffffffffull) : m;
                            memcpy(word + at, &top, len);
                        }
                        size_t da = (size_t)(cases[c].dst_at + b * i[8] + r * i[6] + q * i[7]);
                        memcpy(want + da * es, word, es);
                    }
            unsigned grid = (unsigned)(1 + (c + (size_t)f) % 3);
            cr_assert_eq(mv(f, cases[c].zeros ? NULL : sv, dv + (size_t)cases[c].dst_at * es, i,
                            cases[c].mask, grid),
                         0);
            ran++;
            for (size_t k = 0; k < dbytes + CANARY; k += es)
                cr_assert(memcmp(dv + k, want + k, es) == 0, "batched move %zu-byte, %s: word "
                          "%zu is wrong", es, cases[c].what, k / es);
            free(sv);
            free(dv);
            free(want);
        }
    }
    cr_expect_eq(ran, 3 * (int)(sizeof cases / sizeof *cases));
    /* pointer arrays: count pointers base + i * stride, nothing past them */
    for (unsigned grid = 1; grid <= 3; grid++) {
        unsigned long long p[40];
        memset(p, 0xA5, sizeof p);
        cr_assert_eq(pt(p, 0x7f0000001000ull, 48, 37, grid), 0);
        for (int k = 0; k < 37; k++)
            cr_expect_eq(p[k], 0x7f0000001000ull + 48ull * (unsigned long long)k, "pointer %d", k);
        for (int k = 37; k < 40; k++) cr_expect_eq(p[k], 0xA5A5A5A5A5A5A5A5ull, "past the array");
    }
    /* eigenvalues that are not finite mark their matrix's info (where it is 0), f32 and f64:
     * 7 matrices of 3; a NaN, +inf or -inf marks, the largest finite value, -0 and a
     * subnormal do not; a matrix already marked by the solver keeps its info */
    typedef int (*nonfinite_fn)(int, int *, const void *, long long, long long, int, unsigned);
    nonfinite_fn nf = (nonfinite_fn)(uintptr_t)dlsym(s.so, "emu_bnonfinite");
    cr_assert_not_null(nf);
    for (int dbl = 0; dbl < 2; dbl++)
        for (unsigned grid = 1; grid <= 3; grid++) {
            double big = dbl ? DBL_MAX : FLT_MAX, tiny = dbl ? 0x1p-1070 : 0x1p-140;
            const double v[7][3] = {{1, 2, 3}, {1, NAN, 3}, {INFINITY, 0, 0}, {-0.0, tiny, big},
                                    {0, 0, -INFINITY}, {-big, 5, 6}, {NAN, 1, 1}};
            const int before[8] = {0, 0, 0, 0, 0, 0, 9, -7}, want[8] = {0, 4, 4, 0, 4, 0, 9, -7};
            float wf[21];
            double wd[21];
            for (int k = 0; k < 21; k++) {
                wf[k] = (float)v[k / 3][k % 3];
                wd[k] = v[k / 3][k % 3];
            }
            int info[8];
            memcpy(info, before, sizeof info);
            const void *w = dbl ? (const void *)wd : (const void *)wf;
            cr_assert_eq(nf(dbl, info, w, 3, 7, 4, grid), 0);
            for (int b = 0; b < 8; b++)
                cr_expect_eq(info[b], want[b], "nonfinite %s, grid %u: matrix %d's info %d, want "
                             "%d", dbl ? "f64" : "f32", grid, b, info[b], want[b]);
        }
    set_close(&s);
}

/* Random draws bit for bit: the vector step's fcx_rand_*_span (a Philox block once for the
 * elements that share it) and the scalar tail and scalar draws give the host's values, every
 * draw kind and dtype, about 3.5 million elements in all; f32 normals dominate (graph.h's and
 * the prelude's float Box-Muller, graph/normal32.h, must agree in every bit). */
Test(emulated, random_draws_bit_for_bit) {
    emu_set s;
    set_open(&s, "random_draws", &(emu_cfg){64, 32, 3, false, false, false, false, false, false});
    fc_ctx *ctx = s.ctx;
    fc_scope_open(ctx);
    fc_array *outs[WL_MAX_OUT];
    const int64_t big = (1 << 21) + 3, n = 4099; /* a ragged tail after the vector steps */
    fc_rng g = fc_rng_init(0x9e3779b97f4a7c15ull);
    outs[0] = fc_keep(fc_rng_standard_normal(ctx, &g, FC_F32, FC_SHAPE(big)));
    set_add(&s, "standard_normal f32", false, 0, outs, 1);
    s.progs[s.nprog - 1].exact = true;
    static const fc_dtype fl[] = {FC_F16, FC_BF16, FC_F32, FC_F64, FC_C64, FC_C128};
    for (size_t k = 0; k < sizeof fl / sizeof fl[0]; k++) {
        int64_t len = fl[k] == FC_F32 ? 4 * n : 64 * n;
        outs[0] = fc_keep(fc_rng_standard_normal(ctx, &g, fl[k], FC_SHAPE(len)));
        outs[1] = fc_keep(fc_rng_random(ctx, &g, fl[k], FC_SHAPE(n)));
        /* an f32 draw stored as f64: a vector step of 2, half a block */
        outs[2] = fc_keep(fc_cast(fc_rng_standard_normal(ctx, &g, fl[k], FC_SHAPE(n)), FC_C128));
        char name[64];
        snprintf(name, sizeof name, "draws of %s", fc_dtype_name(fl[k]));
        set_add(&s, name, false, 0, outs, 3);
        s.progs[s.nprog - 1].exact = true;
    }
    static const fc_dtype in[] = {FC_I8, FC_U16, FC_I32, FC_U32, FC_I64, FC_U64};
    for (size_t k = 0; k < sizeof in / sizeof in[0]; k++) {
        outs[0] = fc_keep(fc_rng_integers(ctx, &g, fcg_is_sint(in[k]) ? -3 : 2, 100, in[k],
                                          FC_SHAPE(n)));
        char name[64];
        snprintf(name, sizeof name, "integers of %s", fc_dtype_name(in[k]));
        set_add(&s, name, false, 0, outs, 1);
    }
    /* a draw read at other than the flat index, in a kernel with vector steps (the scalar
     * draw inside the step) */
    float ones[33 * 64];
    for (int i = 0; i < 33 * 64; i++) ones[i] = 1.0f;
    fc_array *x = fc_from_host(ctx, FC_F32, FC_SHAPE(33, 64), ones);
    fc_array *d = fc_rng_standard_normal(ctx, &g, FC_F32, FC_SHAPE(64, 33));
    outs[0] = fc_keep(fc_mul(fc_transpose(d), x));
    set_add(&s, "standard_normal([64, 33]).T * x", false, 0, outs, 1);
    s.progs[s.nprog - 1].exact = true;
    set_build(&s);
    set_run_and_close(&s);
}

/* 16-bit pairs bit for bit (issue 13): f16 and bf16 chains whose vector step computes two
 * elements at once (packed + - * and square, the bit moves negative / abs / where, float ops
 * packed by one rounding, casts in and out, lanes of other dtypes beside them), at sizes around
 * the step of 8 (0, 1, 7, 8, 9 and 1000: no launch, the scalar tail alone, one step, a step
 * and its tail), over data with every kind of value: random bit patterns (subnormals, NaNs,
 * infinities, the largest values, whose sums and products overflow) and exact ties. Outputs
 * start poisoned (0xA5) and must equal the host backend's bits, a NaN meeting any NaN (the
 * packed instructions' NaN is canonical; tests/test_gpu_diff.c's rule 3). */
static fc_array *half_data(fc_ctx *ctx, fc_dtype t, int64_t n, uint64_t seed) {
    static const uint16_t f16s[] = {0x0000, 0x8000, 0x3c00, 0xbc00, 0x7bff, 0xfbff, 0x0400, 0x0001,
                                    0x03ff, 0x7c00, 0xfc00, 0x7e00, 0xfe00, 0x7c01, 0x3c01, 0x6801,
                                    0x1400, 0x3800, 0x0002, 0x8001};
    static const uint16_t bf16s[] = {0x0000, 0x8000, 0x3f80, 0xbf80, 0x7f7f, 0xff7f, 0x0080, 0x0001,
                                     0x007f, 0x7f80, 0xff80, 0x7fc0, 0xffc0, 0x7f81, 0x3f81, 0x4b01,
                                     0x3400, 0x3f00, 0x0002, 0x8001};
    uint16_t *b = malloc((size_t)(n + 1) * 2);
    cr_assert_not_null(b);
    uint64_t r = seed * 0x9e3779b97f4a7c15ull + 1;
    for (int64_t i = 0; i < n; i++) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        unsigned pick = (unsigned)(r >> 59), bits = (unsigned)(r >> 32) & 0xffffu;
        if (pick < 8) /* a special value */
            b[i] = (t == FC_F16 ? f16s : bf16s)[(r >> 40) % 20];
        else if (pick < 20) /* near 1: sums and products round, ties among them */
            b[i] = (uint16_t)((t == FC_F16 ? 0x3800u : 0x3f00u) + (bits & 0x3ffu) + ((bits >> 15) << 15));
        else
            b[i] = (uint16_t)bits;
    }
    fc_array *a = fc_from_host(ctx, t, FC_SHAPE(n), b);
    free(b);
    return a;
}

Test(emulated, half_pairs_bit_for_bit) {
    emu_set s;
    set_open(&s, "half_pairs", &(emu_cfg){8, 4, 2, false, false, false, false, false, false});
    fc_ctx *ctx = s.ctx;
    fc_scope_open(ctx);
    static const int64_t sizes[] = {0, 1, 7, 8, 9, 1000};
    static const fc_dtype hd[] = {FC_F16, FC_BF16};
    int first[2 * 6 * 4], nchecked = 0;
    for (int d = 0; d < 2; d++)
        for (int z = 0; z < 6; z++) {
            fc_dtype t = hd[d], other = hd[1 - d];
            int64_t n = sizes[z];
            uint64_t seed = (uint64_t)(d * 16 + z);
            fc_array *x = half_data(ctx, t, n, 3 * seed), *y = half_data(ctx, t, n, 3 * seed + 1);
            fc_array *xo = half_data(ctx, other, n, 3 * seed + 2);
            fc_array *outs[WL_MAX_OUT];
            char name[96];
            /* the GELU chain of bench/fc/i13_gelu_*.fc: weak Python floats, tanh */
            fc_array *inner = fc_mul(fc_f64(ctx, 0.7978845608),
                                     fc_add(x, fc_mul(fc_mul(fc_mul(fc_f64(ctx, 0.044715), x), x), x)));
            outs[0] = fc_keep(fc_mul(fc_mul(fc_f64(ctx, 0.5), x), fc_add(fc_i64(ctx, 1), fc_tanh(inner))));
            snprintf(name, sizeof name, "GELU chain of %s [%lld]", fc_dtype_name(t), (long long)n);
            set_add(&s, name, false, 0, outs, 1);
            first[nchecked++] = s.nprog - 1;
            /* the packed ops and bit moves; an op between two values in the format */
            outs[0] = fc_keep(fc_sub(fc_mul(fc_add(x, y), fc_sub(x, y)), fc_square(x)));
            outs[1] = fc_keep(fc_where(fc_less(x, y), fc_negative(x), fc_abs(y)));
            outs[2] = fc_keep(fc_add(fc_mul(x, y), fc_f64(ctx, -1.5)));
            snprintf(name, sizeof name, "packed ops of %s [%lld]", fc_dtype_name(t), (long long)n);
            set_add(&s, name, false, 0, outs, 3);
            first[nchecked++] = s.nprog - 1;
            /* float ops packed once; copysign and signbit (exact unpacks: a NaN's sign counts,
             * where a load or a bit move made it; arithmetic's NaN signs differ by design) */
            outs[0] = fc_keep(fc_div(fc_sqrt(fc_abs(x)), fc_add(y, fc_exp(x))));
            outs[1] = fc_keep(fc_copysign(fc_mul(x, fc_f64(ctx, 3.0)), y));
            outs[2] = fc_keep(fc_signbit(fc_negative(x)));
            outs[3] = fc_keep(fc_greater_equal(fc_add(x, y), y));
            snprintf(name, sizeof name, "float ops of %s [%lld]", fc_dtype_name(t), (long long)n);
            set_add(&s, name, false, 0, outs, 4);
            first[nchecked++] = s.nprog - 1;
            /* casts in and out: to f32 (exact lanes), the other 16-bit dtype, from an f64
             * value (the exact double routine per lane), i8 operands, a strong f32 scalar */
            fc_array *i8 = fc_cast(x, FC_I8);
            outs[0] = fc_keep(fc_cast(fc_mul(x, y), FC_F32));
            outs[1] = fc_keep(fc_add(fc_cast(xo, t), fc_cast(fc_add(x, y), other)));
            outs[2] = fc_keep(fc_cast(fc_mul(fc_cast(x, FC_F64), fc_f64(ctx, 1.0000001)), t));
            outs[3] = fc_keep(fc_add(fc_mul(x, i8), fc_cast(fc_mul(y, fc_scalar(ctx, FC_F32, 0.1)), t)));
            snprintf(name, sizeof name, "casts of %s [%lld]", fc_dtype_name(t), (long long)n);
            set_add(&s, name, false, 0, outs, 4);
            first[nchecked++] = s.nprog - 1;
        }
    for (int i = 0; i < nchecked; i++) {
        program *p = &s.progs[first[i]];
        p->exact_nan = true;
        /* the vector step of every kernel of a program of 7 or more elements takes pairs */
        if (fcg_node_numel(p->out[0]) < 2) continue;
        for (int k = 0; k < p->plan->nkernel; k++)
            if (p->plan->kernels[k].kind == FCP_KERNEL_EW)
                cr_assert_not_null(strstr(s.srcs[p->first + k].src, "fcx_h2 v"),
                                   "%s kernel %d: no pair step", p->name, k);
    }
    set_build(&s);
    set_run_and_close(&s);
}

/* Under AddressSanitizer, a quarter of each set of random DAGs: the generated kernels are
 * compiled uninstrumented, so what the sanitizer sees is the C side (planning, codegen, the
 * launch recipe), which a quarter of the programs exercises as well; CI runs the suite twice. */
#if defined(__SANITIZE_ADDRESS__)
#define EMU_RANDOM_SHARE 4
#else
#define EMU_RANDOM_SHARE 1
#endif

static void emulate_random(uint64_t lo, uint64_t hi, const emu_cfg *cfg) {
    hi = lo + (hi - lo) / EMU_RANDOM_SHARE;
    emu_set s;
    char tag[32];
    snprintf(tag, sizeof tag, "random_%llu", (unsigned long long)lo);
    set_open(&s, tag, cfg);
    for (uint64_t seed = lo; seed < hi; seed++) {
        rdag d;
        cr_assert_eq(rdag_build(s.ctx, seed, NULL, &d), FC_OK);
        char name[64];
        snprintf(name, sizeof name, "random DAG seed %llu", (unsigned long long)seed);
        fc_array *outs[WL_MAX_OUT];
        for (int q = 0; q < d.nout; q++) outs[q] = fc_keep(d.out[q]);
        set_add(&s, name, true, seed, outs, d.nout);
        rdag_free(&d);
    }
    set_build(&s);
    int nprog = s.nprog;
    bool small = cfg->small_splits, dsmem = !cfg->no_dsmem;
    set_run_and_close(&s); /* leaves the counts in s */
    /* The random programs must reach every path (at this many programs they always do; the
     * sanitizer run's quarter may not, and the plain run checks it). */
    bool whole = EMU_RANDOM_SHARE == 1;
    cr_assert(!whole || !small || s.n_split > nprog / 50, "only %d of %d programs split a "
              "reduction", s.n_split, nprog);
    cr_assert(!whole || s.n_cols > nprog / 50, "only %d column kernels in %d programs", s.n_cols,
              nprog);
    cr_assert(dsmem || s.n_rows_on_chip == 0, "rows on chip without shared memory");
    cr_assert(!whole || s.n_scatter > nprog / 100, "only %d scatter launches in %d programs",
              s.n_scatter, nprog);
}

/* Small split constants throughout, so reductions of these small shapes split between blocks
 * and combine through the scratch buffer (one block alone meets every piece in turn). */
Test(emulated, random_dags_0_499_one_thread) {
    emulate_random(0, 500, &(emu_cfg){1, 1, 1, true, false, false, false, false, false});
}
Test(emulated, random_dags_500_999_eight_threads) {
    emulate_random(500, 1000, &(emu_cfg){8, 4, 3, true, false, false, false, false, false});
}
/* Three warps a block (not a power of two), and no dynamic shared memory: row kernels read
 * their rows from global memory in every phase. */
Test(emulated, random_dags_1000_1299_twelve_threads_no_shared_rows) {
    emulate_random(1000, 1300, &(emu_cfg){12, 4, 2, true, true, false, false, false, false});
}

/* ---- reductions of every kind, dtype and axis set; row kernels; long splits ------------- */

/* An input of random non-zero data (random_dag.c's generator). */
static fc_array *sweep_input(fc_ctx *ctx, uint64_t seed, fc_dtype t, fc_shape shape) {
    rd r;
    memset(&r, 0, sizeof r);
    rdag_options o;
    rdag_default_options(&o);
    r.ctx = ctx;
    r.o = &o;
    r.state = seed * 0x9e3779b97f4a7c15ull + 1;
    int64_t n = 1;
    for (int d = 0; d < shape.ndim; d++) n *= shape.dim[d];
    void *buf = malloc((size_t)(n ? n : 1) * fc_dtype_size(t));
    cr_assert_not_null(buf);
    rd_fill(&r, t, buf, n);
    fc_array *a = fc_from_host(ctx, t, shape, buf);
    free(buf);
    return a;
}

static fc_axes axes_of(int code) {
    static const int sets[][4] = {{1, 2}, {1, 0}, {1, 1}, {2, 0, 1}, {2, 1, 2}, {2, 0, 2}, {3, 0, 1, 2}};
    const int *a = sets[code % 7];
    fc_axes ax;
    memset(&ax, 0, sizeof ax);
    ax.n = a[0];
    for (int i = 0; i < a[0]; i++) ax.axis[i] = a[1 + i];
    return ax;
}

static const char *const SWEEP_OPS[] = {"sum", "prod", "mean", "max", "min", "any", "all", "var",
                                        "std", "norm1", "norm2", "norminf", "argmax", "argmin",
                                        "count_nonzero"};
#define SWEEP_NOPS ((int)(sizeof SWEEP_OPS / sizeof SWEEP_OPS[0]))

static fc_array *sweep_reduce(int op, fc_array *x, int code, bool keep) {
    fc_axes ax = axes_of(code);
    int axis = ax.n == 1 ? ax.axis[0] : FC_AXIS_NONE;
    switch (op) {
    case 0: return fc_sum(x, ax, keep);
    case 1: return fc_prod(x, ax, keep);
    case 2: return fc_mean(x, ax, keep);
    case 3: return fc_max(x, ax, keep);
    case 4: return fc_min(x, ax, keep);
    case 5: return fc_any(x, ax, keep);
    case 6: return fc_all(x, ax, keep);
    case 7: return fc_var(x, ax, keep, code % 3);
    case 8: return fc_std(x, ax, keep, code % 2);
    case 9: return fc_norm(x, ax, keep, FC_NORM_L1);
    case 10: return fc_norm(x, ax, keep, FC_NORM_L2);
    case 11: return fc_norm(x, ax, keep, FC_NORM_INF);
    case 12: return fc_argmax(x, axis, keep);
    case 13: return fc_argmin(x, axis, keep);
    default: return fc_count_nonzero(x, ax, keep);
    }
}

/* Every reduction of every dtype over [6, 5, 9] (odd extents: rows that 16-byte steps do not
 * divide), each over two axis sets (row, column and mixed kernels, the full reduction), with
 * and without keepdims, directly and behind a prologue. */
static void emulate_reduction_sweep(const char *tag, const emu_cfg *cfg) {
    emu_set s;
    set_open(&s, tag, cfg);
    fc_scope_open(s.ctx);
    int n = 0;
    for (int op = 0; op < SWEEP_NOPS; op++)
        for (int t = 0; t < FC_DTYPE_COUNT; t++)
            for (int rep = 0; rep < 2; rep++) {
                int code = op * 3 + t + rep * 4;
                fc_array *x = sweep_input(s.ctx, (uint64_t)(op * 100 + t * 2 + rep), (fc_dtype)t,
                                          FC_SHAPE(6, 5, 9));
                if (rep) x = fc_mul(x, x); /* a prologue computed in the load */
                fc_array *y = sweep_reduce(op, x, code, (code & 1) != 0);
                if (fc_array_status(y) != FC_OK) { /* not defined for this dtype */
                    fc_clear_error(s.ctx);
                    continue;
                }
                char name[96];
                snprintf(name, sizeof name, "%s(%s%s[6,5,9], axes code %d, keepdims %d)",
                         SWEEP_OPS[op], rep ? "x*x of " : "", fc_dtype_name((fc_dtype)t), code % 7,
                         (code & 1) != 0);
                fc_array *outs[1] = {fc_keep(y)};
                set_add(&s, name, false, 0, outs, 1);
                n++;
            }
    cr_assert_gt(n, 250, "only %d reductions built", n);
    set_build(&s);
    set_run_and_close(&s);
    cr_assert(s.n_cols > 0 && s.n_rows_vec > 0, "paths not reached: %d column kernels, %d row "
              "kernels with 16-byte steps", s.n_cols, s.n_rows_vec);
    cr_assert(!cfg->small_splits || s.n_split > 50, "only %d launches split", s.n_split);
}

Test(emulated, reductions_every_kind_and_dtype_eight_threads) {
    emulate_reduction_sweep("sweep_t8", &(emu_cfg){8, 4, 3, true, false, false, false, false, false});
}
Test(emulated, reductions_every_kind_and_dtype_one_thread) {
    emulate_reduction_sweep("sweep_t1", &(emu_cfg){1, 1, 2, true, false, false, false, false, false});
}

/* Every scan of every dtype: along each axis of [6, 5, 9] (a thread per line) and over the
 * flattened array, along rows of 200 and 1-D arrays of 1000 (tiles of 16 elements here, so a
 * row chains many tiles by look-back), zero-size and size-1 extents; directly and behind a
 * prologue computed in the load. Each tiled scan runs twice on the same scratch, which it must
 * leave zeroed. */
static void emulate_scan_sweep(const char *tag, const emu_cfg *cfg) {
    emu_set s;
    set_open(&s, tag, cfg);
    fc_scope_open(s.ctx);
    static const char *const names[] = {"cumsum", "cumprod", "cummax", "cummin"};
    fc_array *(*const fns[])(fc_array *, int) = {fc_cumsum, fc_cumprod, fc_cummax, fc_cummin};
    static const struct {
        fc_shape shape;
        int axis;
    } cases[] = {{FC_SHAPE(6, 5, 9), 0}, {FC_SHAPE(6, 5, 9), 1}, {FC_SHAPE(6, 5, 9), 2},
                 {FC_SHAPE(6, 5, 9), FC_AXIS_NONE}, {FC_SHAPE(3, 200), 1}, {FC_SHAPE(1000), 0},
                 {FC_SHAPE(200, 3), 0}, {FC_SHAPE(0, 70), 1}, {FC_SHAPE(4, 0), 0},
                 {FC_SHAPE(1, 1), 1}};
    const int ncase = (int)(sizeof cases / sizeof cases[0]);
    int n = 0;
    for (int op = 0; op < 4; op++)
        for (int t = 0; t < FC_DTYPE_COUNT; t++)
            for (int c = 0; c < ncase; c++) {
                /* one thread: a third of the programs (the warps' paths need several) */
                if (cfg->threads == 1 && (op + t + c) % 3) continue;
                int rep = (op + t + c) % 2;
                fc_array *x = sweep_input(s.ctx, (uint64_t)(op * 1000 + t * 20 + c), (fc_dtype)t,
                                          cases[c].shape);
                if (rep) x = fc_mul(x, x);
                /* products of a thousand floats near 1, not overflowing: once a running product
                 * is infinite, where NaNs appear depends on the order of the products */
                if (op == 1 && fcg_is_inexact((fc_dtype)t))
                    x = fc_add(fc_mul(x, fc_f64(s.ctx, 1.0 / 64)), fc_f64(s.ctx, 1));
                fc_array *y = fns[op](x, cases[c].axis);
                if (fc_array_status(y) != FC_OK) { /* not defined for this dtype */
                    fc_clear_error(s.ctx);
                    continue;
                }
                char name[96];
                snprintf(name, sizeof name, "%s(%s%s, case %d)", names[op], rep ? "x*x of " : "",
                         fc_dtype_name((fc_dtype)t), c);
                fc_array *outs[1] = {fc_keep(y)};
                set_add(&s, name, false, 0, outs, 1);
                n++;
            }
    cr_assert_gt(n, cfg->threads == 1 ? 130 : 400, "only %d scans built", n);
    /* epilogues: consumers computed in the scan's kernel from the value it just computed */
    for (int c = 0; c < 3; c++) {
        static const int axes[] = {1, 0, 1};
        fc_shape sh = c == 2 ? FC_SHAPE(5, 6) : FC_SHAPE(4, 150);
        fc_array *x = sweep_input(s.ctx, (uint64_t)(9000 + c), FC_F32, sh);
        fc_array *i = sweep_input(s.ctx, (uint64_t)(9100 + c), FC_I32, sh);
        fc_array *cs = fc_cumsum(fc_mul(x, x), axes[c]);
        fc_array *outs[3] = {fc_keep(fc_div(cs, fc_add(x, fc_f64(s.ctx, 1)))),
                             fc_keep(fc_sub(fc_cummax(i, axes[c]), i)),
                             fc_keep(fc_sqrt(cs))};
        char name[64];
        snprintf(name, sizeof name, "scan epilogues, case %d", c);
        set_add(&s, name, false, 0, outs, 3);
    }
    set_build(&s);
    set_run_and_close(&s);
    cr_assert(s.n_scan_tiles > 30 && s.n_scan_lines > 30, "paths not reached: %d tiled scans, "
              "%d scans by lines", s.n_scan_tiles, s.n_scan_lines);
}

/* Gathers where kernels of each kind meet them: a take in a reduction's prologue, in a row
 * kernel's rows, of a stored reduction, by computed indices in each mode, of every dtype. */
Test(emulated, takes_in_every_kind_of_kernel) {
    emu_set s;
    set_open(&s, "take", &(emu_cfg){8, 4, 3, true, false, false, false, false, false});
    fc_ctx *ctx = s.ctx;
    fc_scope_open(ctx);
    fc_array *x = sweep_input(ctx, 1, FC_F32, FC_SHAPE(6, 40));
    fc_array *i = sweep_input(ctx, 2, FC_I16, FC_SHAPE(9));
    fc_array *j = fc_cast(fc_mul(fc_abs(sweep_input(ctx, 3, FC_F64, FC_SHAPE(3, 5))), fc_f64(ctx, 9)),
                          FC_I32);
    fc_array *t = fc_take(fc_mul(x, x), i, 1, FC_TAKE_WRAP);
    fc_array *outs[3] = {fc_keep(fc_sum(t, FC_AXES(1), false)), NULL, NULL};
    set_add(&s, "sum(take(x*x, i, 1, wrap), 1)", false, 0, outs, 1);
    fc_array *u = fc_take(x, fc_mod(i, fc_i64(ctx, 6)), 0, FC_TAKE_RAISE);
    outs[0] = fc_keep(fc_sub(u, fc_max(u, FC_AXES(1), true)));
    set_add(&s, "take(x, i % 6, 0) - max(., 1)", false, 0, outs, 1);
    outs[0] = fc_keep(fc_take(fc_sum(x, FC_AXES(1), false), j, FC_AXIS_NONE, FC_TAKE_CLIP));
    outs[1] = fc_keep(fc_take(x, j, 1, FC_TAKE_WRAP));
    outs[2] = fc_keep(fc_take(fc_transpose(x), fc_negative(j), 0, FC_TAKE_CLIP));
    set_add(&s, "take of a reduction, of x, of x.T", false, 0, outs, 3);
    for (int d = 0; d < FC_DTYPE_COUNT; d++) {
        fc_array *y = sweep_input(ctx, (uint64_t)(10 + d), (fc_dtype)d, FC_SHAPE(4, 7));
        outs[0] = fc_keep(fc_take(y, i, FC_AXIS_NONE, (fc_take_mode)(1 + d % 2)));
        char name[64];
        snprintf(name, sizeof name, "take of %s", fc_dtype_name((fc_dtype)d));
        set_add(&s, name, false, 0, outs, 1);
    }
    set_build(&s);
    set_run_and_close(&s);
}

Test(emulated, scans_every_kind_and_dtype_eight_threads) {
    emulate_scan_sweep("scan_t8", &(emu_cfg){8, 4, 3, true, false, false, false, false, false});
}
Test(emulated, scans_every_kind_and_dtype_one_thread) {
    emulate_scan_sweep("scan_t1", &(emu_cfg){1, 1, 2, true, false, false, false, false, false});
}

/* User kernels (fc_elementwise_kernel / fc_reduction_kernel) fused with built-in ops, raw
 * inputs, several outputs, user reductions over rows, columns and everything (split), each
 * against the same computation in built-in ops on the host. */
Test(emulated, user_kernels) {
    emu_set s;
    set_open(&s, "user", &(emu_cfg){8, 4, 3, true, false, false, false, false, false});
    fc_ctx *ctx = s.ctx;
    fc_scope_open(ctx);
    fc_kernel *axpb, *sd, *sumdiff, *rev, *idx2, *l2, *sop, *vmax;
    cr_assert_eq(fc_elementwise_kernel(ctx, "float32 x, T a, T b", "T y", "y = a * x + b;", "axpb",
                                       &axpb), FC_OK);
    cr_assert_eq(fc_elementwise_kernel(ctx, "T x, T y", "T z", "z = (x - y) * (x - y);",
                                       "squared_diff", &sd), FC_OK);
    cr_assert_eq(fc_elementwise_kernel(ctx, "T x, T y", "T s, T d", "s = x + y;\nd = x - y;",
                                       "sumdiff", &sumdiff), FC_OK);
    cr_assert_eq(fc_elementwise_kernel(ctx, "raw T x, T s", "T y", "y = x[x.size() - 1 - i] * s",
                                       "reverse_all", &rev), FC_OK);
    cr_assert_eq(fc_elementwise_kernel(ctx, "T x", "int64 y", "y = (long long)i * 2;",
                                       "index_twice", &idx2), FC_OK);
    cr_assert_eq(fc_reduction_kernel(ctx, "T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0",
                                     "l2norm", NULL, &l2), FC_OK);
    cr_assert_eq(fc_reduction_kernel(ctx, "T x, T w", "T y", "x * w", "a + b", "y = a", "0",
                                     "sum_of_products", "float64", &sop), FC_OK);
    cr_assert_eq(fc_reduction_kernel(ctx, "T x", "T y", "x", "a > b ? a : b", "y = a", "-1e300",
                                     "vmax", NULL, &vmax), FC_OK);
    fc_array *x = sweep_input(ctx, 1, FC_F32, FC_SHAPE(6, 37));
    fc_array *w = sweep_input(ctx, 2, FC_F32, FC_SHAPE(1, 37));
    fc_array *o[2], *r[2];
    fc_array *f2 = fc_scalar(ctx, FC_F32, 2.0), *f05 = fc_scalar(ctx, FC_F32, 0.5);
    o[0] = fc_keep(fc_sum(fc_mul(fc_kernel_call1(axpb, 3, (fc_array *[]){fc_sin(x), f2, f05}),
                                 fc_f64(ctx, 2.0)), FC_AXES(1), false));
    r[0] = fc_keep(fc_sum(fc_mul(fc_add(fc_mul(f2, fc_sin(x)), f05), fc_f64(ctx, 2.0)), FC_AXES(1),
                          false));
    set_add_ref(&s, "sum(axpb(sin(x), 2, 0.5) * 2, axis=1)", o, r, 1);
    const fc_dtype sd_types[] = {FC_F16, FC_BF16, FC_F64, FC_I32, FC_U8, FC_C64};
    for (size_t t = 0; t < sizeof sd_types / sizeof *sd_types; t++) {
        fc_array *a = sweep_input(ctx, 10 + t, sd_types[t], FC_SHAPE(5, 9));
        fc_array *b = sweep_input(ctx, 20 + t, sd_types[t], FC_SHAPE(9));
        o[0] = fc_keep(fc_kernel_call1(sd, 2, (fc_array *[]){a, b}));
        fc_array *d = fc_sub(a, b);
        r[0] = fc_keep(fc_mul(d, d));
        char name[64];
        snprintf(name, sizeof name, "squared_diff(%s)", fc_dtype_name(sd_types[t]));
        set_add_ref(&s, name, o, r, 1);
    }
    cr_assert_eq(fc_kernel_call(sumdiff, 2, (fc_array *[]){x, w}, 2, o), FC_OK);
    o[0] = fc_keep(o[0]);
    o[1] = fc_keep(o[1]);
    r[0] = fc_keep(fc_add(x, w));
    r[1] = fc_keep(fc_sub(x, w));
    set_add_ref(&s, "sumdiff(x, w): two outputs", o, r, 2);
    o[0] = fc_keep(fc_kernel_call1(rev, 2, (fc_array *[]){fc_exp(x), x}));
    r[0] = fc_keep(fc_mul(fc_flip(fc_exp(x), FC_ALL), x));
    set_add_ref(&s, "reverse_all(raw exp(x), x)", o, r, 1);
    o[0] = fc_keep(fc_kernel_call1(idx2, 1, (fc_array *[]){fc_transpose(x)}));
    r[0] = fc_keep(fc_reshape(fc_arange(ctx, FC_I64, 0, 2 * 6 * 37, 2), FC_SHAPE(37, 6)));
    set_add_ref(&s, "index_twice(x.T)", o, r, 1);
    const int axes_codes[][3] = {{1, 1, -1}, {1, 0, -1}, {2, 0, 1}};
    for (size_t c = 0; c < sizeof axes_codes / sizeof *axes_codes; c++) {
        fc_axes ax = {axes_codes[c][0], {axes_codes[c][1], axes_codes[c][2]}};
        o[0] = fc_keep(fc_kernel_reduce(l2, 1, (fc_array *[]){fc_exp(x)}, ax, c == 1));
        r[0] = fc_keep(fc_sqrt(fc_sum(fc_square(fc_exp(x)), ax, c == 1)));
        set_add_ref(&s, "l2norm(exp(x))", o, r, 1);
        o[0] = fc_keep(fc_div(x, fc_kernel_reduce(l2, 1, (fc_array *[]){x}, ax, true)));
        r[0] = fc_keep(fc_div(x, fc_sqrt(fc_sum(fc_square(x), ax, true))));
        set_add_ref(&s, "x / l2norm(x, keepdims)", o, r, 1);
        fc_array *x64 = fc_cast(x, FC_F64);
        o[0] = fc_keep(fc_kernel_reduce(vmax, 1, (fc_array *[]){x64}, ax, false));
        r[0] = fc_keep(fc_max(x64, ax, false));
        set_add_ref(&s, "vmax(x_f64)", o, r, 1);
    }
    fc_array *big = sweep_input(ctx, 3, FC_F32, FC_SHAPE(300, 41));
    fc_array *bw = sweep_input(ctx, 4, FC_F32, FC_SHAPE(41));
    o[0] = fc_keep(fc_kernel_reduce(sop, 2, (fc_array *[]){big, bw}, FC_ALL, false));
    r[0] = fc_keep(fc_cast(fc_sum(fc_mul(fc_cast(big, FC_F64), fc_cast(bw, FC_F64)), FC_ALL, false),
                           FC_F32));
    set_add_ref(&s, "sum_of_products(x, w) in f64", o, r, 1);
    set_build(&s);
    set_run_and_close(&s);
}

/* Every elementwise op of ops.def (through the constructors the .fc parser uses, so a new op
 * is in without an entry here) over every dtype it accepts, on [7, 5] inputs with the other
 * operands broadcast from [5]: the call the generator emits, the conversions to the loop
 * dtype, the rounding of 16-bit results. nextafter also gives nextafter(x, y) - x, because
 * its step (one ulp of the loop dtype) is within the tolerance of no step at all. */
static void emulate_ew_sweep(const char *tag, const emu_cfg *cfg) {
    emu_set s;
    set_open(&s, tag, cfg);
    fc_ctx *ctx = s.ctx;
    fc_scope_open(ctx);
    int n = 0;
    for (int op = 0; op < FCG_OP_COUNT; op++) {
        int nin = fcg_ops[op].nin;
        if (fcg_ops[op].kind != FCG_KIND_EW || op == FCG_OP_CAST) continue;
        for (int t = 0; t < FC_DTYPE_COUNT; t++) {
            fc_array *x[3];
            for (int i = 0; i < nin; i++)
                x[i] = sweep_input(ctx, (uint64_t)(op * 64 + t * 4 + i), (fc_dtype)t,
                                   i ? FC_SHAPE(5) : FC_SHAPE(7, 5));
            if (op == FCG_OP_POW && fcg_is_int((fc_dtype)t)) /* a negative exponent fails */
                x[1] = fc_bitwise_and(x[1], fc_i64(ctx, 7));
            fc_array *y = nin == 1   ? fcg_unary_api[op](x[0])
                          : nin == 2 ? fcg_binary_api[op](x[0], x[1])
                                     : fcg_ternary_api[op](x[0], x[1], x[2]);
            if (fc_array_status(y) != FC_OK) { /* not defined for this dtype */
                fc_clear_error(ctx);
                continue;
            }
            fc_array *outs[2] = {fc_keep(y), NULL};
            int nout = 1;
            if (op == FCG_OP_NEXTAFTER) outs[nout++] = fc_keep(fc_sub(y, x[0]));
            char name[96];
            snprintf(name, sizeof name, "%s of %s [7, 5]%s", fcg_ops[op].pyname,
                     fc_dtype_name((fc_dtype)t), nin > 1 ? " and [5]" : "");
            set_add(&s, name, false, 0, outs, nout);
            n++;
        }
    }
    cr_assert_gt(n, 600, "only %d elementwise programs built", n);
    set_build(&s);
    set_run_and_close(&s);
}

Test(emulated, elementwise_every_op_and_dtype) {
    emulate_ew_sweep("ew_sweep_t8", &(emu_cfg){8, 4, 2, false, false, false, false, false, false});
}

/* Rows of special values for softmax and logsumexp, in dtype t (f16, f32 or f64), [6, 37]:
 * random; -inf first (an online max starts at -inf); a +inf; a NaN; all -inf; rising by 3 an
 * element (the max rises at every element, a rescale each time, over a range exp overflows). */
static fc_array *special_rows(fc_ctx *ctx, fc_dtype t) {
    enum { R = 6, C = 37 };
    double v[R * C];
    uint64_t st = 12345;
    for (int i = 0; i < R * C; i++) {
        st = st * 6364136223846793005ull + 1442695040888963407ull;
        v[i] = (double)(st >> 11) * 0x1p-53 * 8.0 - 4.0;
    }
    for (int j = 0; j < 5; j++) v[1 * C + j] = -INFINITY;
    v[2 * C + 17] = INFINITY;
    v[3 * C + 30] = NAN;
    for (int j = 0; j < C; j++) v[4 * C + j] = -INFINITY;
    for (int j = 0; j < C; j++) v[5 * C + j] = 3.0 * j - 40.0;
    fc_array *a = fc_from_host(ctx, FC_F64, FC_SHAPE(R, C), v);
    return fc_cast(a, t);
}

/* Columns of special values for column softmax and logsumexp, in dtype t, [R, 45] with R
 * rows enough for several batches of every warp (a column kernel folds its online sum a batch
 * of rows at a time, its shift moving lazily): 45 columns, not a multiple of a warp, of 12
 * kinds: random; -inf in the first rows; a +inf, a NaN in the middle of a batch; all -inf;
 * all equal; rising by 3 a row (the shift moves every batch, over a range exp overflows);
 * rising by 0.01 and by 0.05 a row (the shift lags behind the max, by less than the lazy
 * bound or past it); falling; random of magnitude 1000; one spike of 500 late in the column. */
static fc_array *special_columns(fc_ctx *ctx, fc_dtype t, int R) {
    enum { C = 45, MAXR = 400 };
    static double v[MAXR * C];
    cr_assert(R <= MAXR);
    uint64_t st = 777;
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++) {
            st = st * 6364136223846793005ull + 1442695040888963407ull;
            double u = (double)(st >> 11) * 0x1p-53 * 8.0 - 4.0, x = u;
            switch (j % 12) {
            case 1: x = i < 20 + j ? -INFINITY : u; break;
            case 2: x = i == R / 2 + j % 5 ? INFINITY : u; break;
            case 3: x = i == R / 3 + j % 7 ? NAN : u; break;
            case 4: x = -INFINITY; break;
            case 5: x = 2.5; break;
            case 6: x = 3.0 * i - 600.0; break;
            case 7: x = 0.01 * i + 0.1 * u; break;
            case 8: x = 0.05 * i + 0.1 * u; break;
            case 9: x = -0.2 * i + u; break;
            case 10: x = 250.0 * u; break;
            case 11: x = i == R - 7 ? 500.0 : u; break;
            default: break;
            }
            v[i * C + j] = x;
        }
    fc_array *a = fc_from_host(ctx, FC_F64, FC_SHAPE(R, C), v);
    return fc_cast(a, t);
}

/* Reduce -> broadcast -> elementwise chains (row kernels) of several dtypes and row lengths:
 * odd lengths leave rows unaligned for 16-byte steps, some rows keep several buffers on chip;
 * rows of length 1, no rows at all, rows of special values. */
static void emulate_row_kernels(const char *tag, const emu_cfg *cfg) {
    emu_set s;
    set_open(&s, tag, cfg);
    fc_ctx *ctx = s.ctx;
    fc_scope_open(ctx);
    static const fc_dtype types[] = {FC_F32, FC_F64, FC_F16, FC_BF16, FC_C64};
    static const int64_t shapes[][3] = {{7, 37, 0}, {4, 64, 0}, {3, 5, 12}, {5, 1, 0}, {2, 333, 0},
                                        {0, 37, 0}};
    int n = 0;
    for (int ti = 0; ti < 5; ti++)
        for (int si = 0; si < 6; si++) {
            fc_dtype t = types[ti];
            const int64_t *sh = shapes[si];
            fc_shape shape = sh[2] ? FC_SHAPE(sh[0], sh[1], sh[2]) : FC_SHAPE(sh[0], sh[1]);
            fc_axes ax = sh[2] ? FC_AXES(1, 2) : FC_AXES(1);
            fc_shape vshape = sh[2] ? FC_SHAPE(sh[1], sh[2]) : FC_SHAPE(sh[1]);
            uint64_t seed = (uint64_t)(ti * 10 + si);
            fc_array *x = sweep_input(ctx, seed, t, shape);
            fc_array *y = sweep_input(ctx, seed + 1000, t, shape);
            fc_array *gam = sweep_input(ctx, seed + 2000, t, vshape);
            char name[96];
            fc_array *outs[WL_MAX_OUT];
            bool cx = fcg_is_complex(t);
            if (!cx) { /* softmax */
                fc_array *e = fc_exp(fc_sub(x, fc_max(x, ax, true)));
                outs[0] = fc_keep(fc_div(e, fc_sum(e, ax, true)));
                snprintf(name, sizeof name, "softmax %s shape %d", fc_dtype_name(t), si);
                set_add(&s, name, false, 0, outs, 1);
                n++;
                /* logsumexp, and the row maxima as a second output */
                fc_array *m = fc_max(x, ax, true);
                outs[0] = fc_keep(fc_add(fc_log(fc_sum(fc_exp(fc_sub(x, m)), ax, true)), m));
                outs[1] = fc_keep(m);
                snprintf(name, sizeof name, "logsumexp %s shape %d", fc_dtype_name(t), si);
                set_add(&s, name, false, 0, outs, 2);
                n++;
            }
            /* layernorm with a scale: x read in two phases and the output phase */
            fc_array *mu = fc_mean(x, ax, true);
            fc_array *ln = fc_div(fc_sub(x, mu), fc_sqrt(fc_add(fc_var(x, ax, true, 0),
                                                                      fc_f64(ctx, 1e-3))));
            outs[0] = fc_keep(fc_mul(ln, gam));
            snprintf(name, sizeof name, "layernorm %s shape %d", fc_dtype_name(t), si);
            set_add(&s, name, false, 0, outs, 1);
            n++;
            /* two inputs kept on chip: y scaled by the norm of x, plus the norm of y - x */
            fc_array *nx = fc_norm(x, ax, true, FC_NORM_L2);
            fc_array *z = fc_mul(y, nx);
            outs[0] = fc_keep(fc_sub(z, fc_sum(fc_sub(z, x), ax, true)));
            snprintf(name, sizeof name, "two rows on chip %s shape %d", fc_dtype_name(t), si);
            set_add(&s, name, false, 0, outs, 1);
            n++;
        }
    /* argmax of a row minus its mean, booleans and integers kept on chip */
    fc_array *xi = sweep_input(ctx, 77, FC_I32, FC_SHAPE(9, 41));
    fc_array *xb = sweep_input(ctx, 78, FC_BOOL, FC_SHAPE(9, 41));
    fc_array *outs[WL_MAX_OUT];
    outs[0] = fc_keep(fc_where(xb, fc_sub(xi, fc_max(xi, FC_AXES(1), true)),
                               fc_sum(fc_where(xb, xi, fc_i64(ctx, 1)), FC_AXES(1), true)));
    set_add(&s, "where(b, i - max(i), sum(where(b, i, 1)))", false, 0, outs, 1);
    n++;
    static const fc_dtype special[] = {FC_F32, FC_F64, FC_F16};
    for (int ti = 0; ti < 3; ti++) {
        fc_array *x = special_rows(ctx, special[ti]);
        char name[96];
        fc_array *e = fc_exp(fc_sub(x, fc_max(x, FC_AXES(1), true)));
        outs[0] = fc_keep(fc_div(e, fc_sum(e, FC_AXES(1), true)));
        snprintf(name, sizeof name, "softmax of special rows, %s", fc_dtype_name(special[ti]));
        set_add(&s, name, false, 0, outs, 1);
        outs[0] = fc_keep(fc_logsumexp(x, FC_AXES(1), false));
        outs[1] = fc_keep(fc_mean(fc_exp(fc_sub(x, fc_max(x, FC_AXES(1), true))), FC_AXES(1), true));
        snprintf(name, sizeof name, "logsumexp and mean(exp(x - max)) of special rows, %s",
                 fc_dtype_name(special[ti]));
        set_add(&s, name, false, 0, outs, 2);
        n += 2;
    }
    set_build(&s);
    set_run_and_close(&s);
    cr_assert_gt(n, 80);
    cr_assert(cfg->no_dsmem || cfg->long_rows || s.n_rows_on_chip > 40,
              "only %d row kernels kept rows on chip", s.n_rows_on_chip);
    cr_assert(s.n_rows_vec > 40, "only %d row kernels had 16-byte steps", s.n_rows_vec);
    cr_assert(!cfg->long_rows || (s.n_rows_long > 60 && s.n_online > 20 && s.n_rows_reverse > 40),
              "only %d row kernels streamed their rows, %d with an online sum, %d backwards",
              s.n_rows_long, s.n_online, s.n_rows_reverse);
}

Test(emulated, row_kernels_eight_threads) {
    emulate_row_kernels("rows_t8", &(emu_cfg){8, 4, 3, true, false, false, false, false, false});
}
Test(emulated, row_kernels_one_thread_no_shared_rows) {
    emulate_row_kernels("rows_t1", &(emu_cfg){1, 1, 2, true, true, false, false, false, false});
}
/* The same programs with every row kernel in its form for rows that do not fit on chip (issue
 * 13 item 2): the rows streamed in every phase, softmax's and logsumexp's sums online. */
Test(emulated, row_kernels_streamed_eight_threads) {
    emulate_row_kernels("rows_long_t8", &(emu_cfg){8, 4, 3, true, false, false, true, false, false});
}
Test(emulated, row_kernels_streamed_twelve_threads) {
    emulate_row_kernels("rows_long_t12", &(emu_cfg){12, 4, 2, true, false, false, true, false, false});
}
/* Random programs with their row kernels streamed. */
Test(emulated, random_dags_1300_1499_streamed_rows) {
    emulate_random(1300, 1500, &(emu_cfg){8, 4, 3, true, false, false, true, false, false});
}

/* Rows of m x l values of dtype t with ties everywhere (values 0..4) and, for inexact dtypes,
 * NaNs: row 0 all equal, row 1 a NaN first, row 2 a NaN last, row 3 two NaNs, a few scattered
 * ones elsewhere. */
static fc_array *tie_rows(fc_ctx *ctx, fc_dtype t, int64_t m, int64_t l, uint64_t seed) {
    size_t n = (size_t)(m * l);
    double *v = malloc((n ? n : 1) * sizeof *v);
    cr_assert_not_null(v);
    uint64_t st = seed * 0x9e3779b97f4a7c15ull + 7;
    for (size_t i = 0; i < n; i++) {
        st = st * 6364136223846793005ull + 1442695040888963407ull;
        v[i] = (double)((st >> 33) % 5);
        if (fcg_is_inexact(t) && (st >> 20) % 211 == 0) v[i] = NAN;
    }
    bool nan = fcg_is_inexact(t) && l > 0;
    for (int64_t j = 0; j < l && m > 0; j++) v[j] = 2.0;
    if (nan && m > 1) v[1 * l] = NAN;
    if (nan && m > 2) v[2 * l + l - 1] = NAN;
    if (nan && m > 3) v[3 * l + l / 2] = v[3 * l + l / 3] = NAN;
    fc_array *a = fc_cast(fc_from_host(ctx, FC_F64, FC_SHAPE(m, l), v), t);
    free(v);
    return a;
}

/* Issue 13's row reductions: argmax and argmin of every dtype along rows of lengths 1, odd,
 * long enough that a thread issues several vector steps' loads together (row_steps) and that
 * small split constants split them between blocks, and no rows at all, with ties and NaNs
 * (NumPy: the first of equals, the first NaN); and mean, std and var of the same rows in one
 * kernel (Welford batches of a group of steps: f32 16 values, f16 32), also of rows far from
 * 0 whose deviations are small. */
static void emulate_row_reductions(const char *tag, const emu_cfg *cfg) {
    emu_set s;
    set_open(&s, tag, cfg);
    fc_ctx *ctx = s.ctx;
    fc_scope_open(ctx);
    static const int64_t lens[][2] = {{5, 1}, {6, 7}, {4, 131}, {5, 517}, {3, 4099}, {0, 7}};
    fc_array *outs[WL_MAX_OUT];
    char name[96];
    int n = 0;
    for (int t = 0; t < FC_DTYPE_COUNT; t++)
        for (int li = 0; li < 6; li++) {
            int64_t m = lens[li][0], l = lens[li][1];
            fc_array *x = tie_rows(ctx, (fc_dtype)t, m, l, (uint64_t)(t * 10 + li));
            fc_array *amax = fc_argmax(x, 1, false), *amin = fc_argmin(x, 1, li & 1);
            if (fc_array_status(amax) != FC_OK || fc_array_status(amin) != FC_OK) {
                fc_clear_error(ctx); /* not defined for this dtype */
                continue;
            }
            outs[0] = fc_keep(amax);
            outs[1] = fc_keep(amin);
            snprintf(name, sizeof name, "argmax, argmin of %s[%lld, %lld] with ties and NaNs",
                     fc_dtype_name((fc_dtype)t), (long long)m, (long long)l);
            set_add(&s, name, false, 0, outs, 2);
            n++;
        }
    static const fc_dtype mtypes[] = {FC_F32, FC_F64, FC_F16, FC_BF16, FC_C64};
    for (int ti = 0; ti < 5; ti++)
        for (int li = 0; li < 6; li++) {
            fc_dtype t = mtypes[ti];
            int64_t m = lens[li][0], l = lens[li][1];
            fc_array *x = sweep_input(ctx, (uint64_t)(500 + ti * 10 + li), t, FC_SHAPE(m, l));
            if (li & 1) /* far from 0: 1000 + x / 64 */
                x = fc_add(fc_mul(x, fc_scalar(ctx, t, 0.015625)), fc_scalar(ctx, t, 1000.0));
            outs[0] = fc_keep(fc_mean(x, FC_AXES(1), false));
            outs[1] = fc_keep(fc_std(x, FC_AXES(1), false, 1));
            outs[2] = fc_keep(fc_var(x, FC_AXES(1), true, 0));
            snprintf(name, sizeof name, "mean, std, var of %s[%lld, %lld]%s", fc_dtype_name(t),
                     (long long)m, (long long)l, li & 1 ? " about 1000" : "");
            set_add(&s, name, false, 0, outs, 3);
            int nk = s.progs[s.nprog - 1].plan->nkernel;
            cr_assert(nk == 1 || m * l == 0, "%s: %d kernels", name, nk);
            n++;
        }
    cr_assert_gt(n, 80, "only %d programs built", n);
    set_build(&s);
    set_run_and_close(&s);
    cr_assert(s.n_rows_grouped > 40, "only %d launches grouped their vector steps' loads",
              s.n_rows_grouped);
    cr_assert(!cfg->small_splits || s.n_split > 20, "only %d launches split", s.n_split);
}

Test(emulated, row_reductions_eight_threads) {
    emulate_row_reductions("rowred_t8", &(emu_cfg){8, 4, 3, true, false, false, false, false, false});
}
Test(emulated, row_reductions_one_thread, EMU_OTHER_SHAPE) {
    emulate_row_reductions("rowred_t1", &(emu_cfg){1, 1, 2, true, false, false, false, false, false});
}
Test(emulated, row_reductions_64_threads_default_splits, EMU_OTHER_SHAPE) {
    emulate_row_reductions("rowred_t64", &(emu_cfg){64, 32, 2, false, false, false, false, false, false});
}

/* Row chains at lengths that do not fit on chip, planned as they are (one streaming row
 * kernel each, 64 rows: FCP_ROW_LONG_MIN_ROWS), with the device's split constants: layernorm with
 * a scale and shift (f32, f16), softmax (f32, f64), logsumexp (f64), log-softmax and x / norm
 * (f32); odd lengths, so the rows' starts are unaligned for 16-byte steps. */
Test(emulated, long_rows_one_kernel_at_their_lengths) {
    emu_set s;
    set_open(&s, "long_rows", &(emu_cfg){8, 4, 2, false, false, false, false, false, false});
    fc_ctx *ctx = s.ctx;
    fc_scope_open(ctx);
    fc_array *outs[WL_MAX_OUT];
    int64_t R = FCP_ROW_LONG_MIN_ROWS;
    for (int ti = 0; ti < 2; ti++) {
        fc_dtype t = ti ? FC_F16 : FC_F32;
        int64_t L = ti ? 22531 : 11265; /* 44 KiB and a little more a row */
        fc_array *x = sweep_input(ctx, 50 + ti, t, FC_SHAPE(R, L));
        fc_array *gam = sweep_input(ctx, 60 + ti, t, FC_SHAPE(L));
        fc_array *bet = sweep_input(ctx, 70 + ti, t, FC_SHAPE(L));
        fc_array *ln = fc_div(fc_sub(x, fc_mean(x, FC_AXES(1), true)),
                              fc_sqrt(fc_add(fc_var(x, FC_AXES(1), true, 0), fc_f64(ctx, 1e-5))));
        outs[0] = fc_keep(fc_add(fc_mul(ln, gam), bet));
        set_add(&s, ti ? "layernorm f16[64, 22531]" : "layernorm f32[64, 11265]", false, 0, outs, 1);
    }
    fc_array *a = sweep_input(ctx, 80, FC_F32, FC_SHAPE(R, 11267));
    fc_array *e = fc_exp(fc_sub(a, fc_max(a, FC_AXES(1), true)));
    outs[0] = fc_keep(fc_div(e, fc_sum(e, FC_AXES(1), true)));
    set_add(&s, "softmax f32[64, 11267]", false, 0, outs, 1);
    outs[0] = fc_keep(fc_sub(a, fc_logsumexp(a, FC_AXES(1), true)));
    outs[1] = fc_keep(fc_div(a, fc_norm(a, FC_AXES(1), true, FC_NORM_L2)));
    set_add(&s, "log-softmax and x / norm(x) of f32[64, 11267]", false, 0, outs, 2);
    fc_array *b = sweep_input(ctx, 81, FC_F64, FC_SHAPE(R, 5633));
    e = fc_exp(fc_sub(b, fc_max(b, FC_AXES(1), true)));
    outs[0] = fc_keep(fc_div(e, fc_sum(e, FC_AXES(1), true)));
    set_add(&s, "softmax f64[64, 5633]", false, 0, outs, 1);
    outs[0] = fc_keep(fc_logsumexp(b, FC_AXES(1), false));
    set_add(&s, "logsumexp f64[64, 5633]", false, 0, outs, 1);
    for (int i = 0; i < s.nprog; i++) {
        const fcp_plan *p = s.progs[i].plan;
        cr_assert(p->nkernel == 1 && p->kernels[0].kind == FCP_KERNEL_ROW && p->kernels[0].long_rows,
                  "%s: %d kernels, the first %s, long_rows %d", s.progs[i].name, p->nkernel,
                  fcp_kernel_kind_names[p->kernels[0].kind], p->kernels[0].long_rows);
    }
    int nprog = s.nprog;
    set_build(&s);
    set_run_and_close(&s);
    cr_assert_eq(s.n_rows_long, nprog, "%d of %d kernels streamed their rows", s.n_rows_long, nprog);
    /* every program has an output phase but logsumexp's, whose output is per row */
    cr_assert_eq(s.n_rows_reverse, nprog - 1, "%d of %d output phases ran backwards",
                 s.n_rows_reverse, nprog - 1);
    cr_assert_eq(s.n_online, 4, "%d kernels with an online sum", s.n_online);
}

/* Reductions over non-trailing axes (issue 13 item 3): batch-norm statistics (mean and var
 * over (0, 2), one pass whose rows are runs of contiguous elements, loaded 16 bytes at a time
 * where the runs allow), over (0, 3) and (1, 3) of 4-D arrays, and column reductions over (0)
 * and (1) of 3-D ones; several dtypes, keepdims, odd runs (no 16-byte steps), zero-size and
 * size-1 extents, a prologue; `big` adds shapes long enough to split with the device's
 * constants. */
static void emulate_non_trailing(const char *tag, const emu_cfg *cfg, bool big) {
    emu_set s;
    set_open(&s, tag, cfg);
    fc_ctx *ctx = s.ctx;
    fc_scope_open(ctx);
    static const fc_dtype types[] = {FC_F32, FC_F64, FC_F16, FC_BF16, FC_I32, FC_I16};
    /* {9, 2, 12}: runs of 12, so a group of 16-byte steps spans runs (each step decodes its
     * own flat index) */
    static const int64_t shapes[][3] = {{5, 3, 8}, {3, 4, 12}, {2, 3, 7}, {0, 3, 8}, {2, 3, 0},
                                        {1, 3, 8}, {6, 1, 16}, {4, 2, 1}, {9, 2, 12}};
    enum { NSHAPE = sizeof shapes / sizeof *shapes };
    fc_array *outs[WL_MAX_OUT];
    int n = 0;
    for (int ti = 0; ti < 6; ti++)
        for (int si = 0; si < NSHAPE; si++) {
            fc_dtype t = types[ti];
            const int64_t *sh = shapes[si];
            fc_array *x =
                sweep_input(ctx, (uint64_t)(ti * 16 + si), t, FC_SHAPE(sh[0], sh[1], sh[2]));
            bool keep = (ti + si) & 1;
            char name[96];
            outs[0] = fc_keep(fc_mean(x, FC_AXES(0, 2), keep));
            outs[1] = fc_keep(fc_var(x, FC_AXES(0, 2), keep, 0));
            outs[2] = fc_keep(fc_sum(x, FC_AXES(0, 2), keep));
            snprintf(name, sizeof name, "mean, var, sum of %s shape %d over (0, 2)",
                     fc_dtype_name(t), si);
            set_add(&s, name, false, 0, outs, 3);
            outs[0] = fc_keep(fc_std(fc_mul(x, x), FC_AXES(0, 2), !keep, 1));
            outs[1] = fc_keep(fc_sum(x, FC_AXES(1), keep));
            outs[2] = fc_keep(fc_var(x, FC_AXES(0), keep, 0));
            snprintf(name, sizeof name,
                     "std(x*x) over (0, 2), sum over 1, var over 0 of %s shape %d",
                     fc_dtype_name(t), si);
            set_add(&s, name, false, 0, outs, 3);
            n += 2;
        }
    fc_array *y = sweep_input(ctx, 900, FC_F32, FC_SHAPE(3, 2, 5, 8));
    outs[0] = fc_keep(fc_mean(y, FC_AXES(0, 3), false));
    outs[1] = fc_keep(fc_var(y, FC_AXES(0, 3), false, 0));
    set_add(&s, "mean, var of f32[3, 2, 5, 8] over (0, 3)", false, 0, outs, 2);
    outs[0] = fc_keep(fc_sum(y, FC_AXES(1, 3), true));
    outs[1] = fc_keep(fc_max(y, FC_AXES(1, 3), true));
    set_add(&s, "sum, max of f32[3, 2, 5, 8] over (1, 3)", false, 0, outs, 2);
    n += 2;
    /* Column softmax, logsumexp and mean(exp(x - max)) over axis 0 (and (0, 1)): statistics
     * in one column kernel (the sum online), then the elementwise kernel; columns of -inf, a
     * NaN, +inf take the two-pass sums again. */
    static const fc_dtype ctypes[] = {FC_F32, FC_F64, FC_F16};
    int nsoft = 0;
    for (int ti = 0; ti < 3; ti++)
        for (int si = 0; si < 3; si++) {
            fc_dtype t = ctypes[ti];
            fc_array *x = si == 0   ? fc_transpose(special_rows(ctx, t))
                          : si == 1 ? sweep_input(ctx, (uint64_t)(950 + ti), t, FC_SHAPE(37, 5))
                                    : sweep_input(ctx, (uint64_t)(960 + ti), t, FC_SHAPE(3, 5, 7));
            fc_axes ax = si == 2 ? FC_AXES(0, 1) : FC_AXES(0);
            char name[96];
            fc_array *e = fc_exp(fc_sub(x, fc_max(x, ax, true)));
            outs[0] = fc_keep(fc_div(e, fc_sum(e, ax, true)));
            snprintf(name, sizeof name, "column softmax %s %d", fc_dtype_name(t), si);
            set_add(&s, name, false, 0, outs, 1);
            outs[0] = fc_keep(fc_logsumexp(x, ax, si == 1));
            outs[1] = fc_keep(fc_mean(fc_exp(fc_sub(x, fc_max(x, ax, true))), ax, false));
            snprintf(name, sizeof name, "column logsumexp, mean(exp(x - max)) %s %d",
                     fc_dtype_name(t), si);
            set_add(&s, name, false, 0, outs, 2);
            n += 2;
            nsoft += 2;
        }
    /* Columns long enough for the online sum's batches, of special values. */
    for (int ti = 0; ti < 3; ti++) {
        fc_dtype t = ctypes[ti];
        fc_array *x = special_columns(ctx, t, ti == 1 ? 133 : 300);
        char name[96];
        fc_array *e = fc_exp(fc_sub(x, fc_max(x, FC_AXES(0), true)));
        outs[0] = fc_keep(fc_div(e, fc_sum(e, FC_AXES(0), true)));
        snprintf(name, sizeof name, "column softmax of special columns, %s", fc_dtype_name(t));
        set_add(&s, name, false, 0, outs, 1);
        outs[0] = fc_keep(fc_logsumexp(x, FC_AXES(0), false));
        snprintf(name, sizeof name, "column logsumexp of special columns, %s", fc_dtype_name(t));
        set_add(&s, name, false, 0, outs, 1);
        n += 2;
        nsoft += 2;
    }
    if (big) {
        fc_array *z = sweep_input(ctx, 901, FC_F32, FC_SHAPE(8, 3, 4096));
        outs[0] = fc_keep(fc_mean(z, FC_AXES(0, 2), false));
        outs[1] = fc_keep(fc_var(z, FC_AXES(0, 2), false, 0));
        set_add(&s, "mean, var of f32[8, 3, 4096] over (0, 2)", false, 0, outs, 2);
        n++;
    }
    for (int i = 0; i < s.nprog; i++) /* statistics over the same axes: one pass */
        cr_assert((strncmp(s.progs[i].name, "mean, var", 9) || s.progs[i].plan->nkernel <= 1) &&
                  (strncmp(s.progs[i].name, "column", 6) || s.progs[i].plan->nkernel <= 2),
                  "%s: %d kernels", s.progs[i].name, s.progs[i].plan->nkernel);
    set_build(&s);
    set_run_and_close(&s);
    cr_assert_gt(n, 90);
    cr_assert(s.n_rows_seg > 40, "only %d launches over rows of contiguous runs", s.n_rows_seg);
    cr_assert(s.n_rows_seg_grouped > 0, "no launch over rows of contiguous runs grouped its loads");
    cr_log_info("%s: %d launches over rows of contiguous runs, %d grouped their loads", tag,
                s.n_rows_seg, s.n_rows_seg_grouped);
    cr_assert(s.n_cols_online >= nsoft, "%d column kernels with an online sum", s.n_cols_online);
    cr_assert(s.n_cols_online_batched >= 6, "only %d column kernels folded online batches",
              s.n_cols_online_batched);
    cr_assert(!cfg->small_splits || s.n_split > 20, "only %d launches split", s.n_split);
}

Test(emulated, non_trailing_reductions_eight_threads) {
    emulate_non_trailing("nontrail_t8", &(emu_cfg){8, 4, 3, true, false, false, false, false, false}, false);
}
Test(emulated, non_trailing_reductions_one_thread, EMU_OTHER_SHAPE) {
    emulate_non_trailing("nontrail_t1", &(emu_cfg){1, 1, 2, true, false, false, false, false, false}, false);
}
Test(emulated, non_trailing_reductions_default_splits, EMU_OTHER_SHAPE) {
    emulate_non_trailing("nontrail_def", &(emu_cfg){12, 4, 3, false, false, false, false, false, false}, true);
}

/* Long reductions with the device's split constants: the pieces, the scratch the launch
 * recipe sizes (canaries behind it), the last block's combine. */
Test(emulated, long_reductions_split_with_default_constants) {
    emu_set s;
    set_open(&s, "long", &(emu_cfg){8, 4, 3, false, false, false, false, false, false});
    fc_ctx *ctx = s.ctx;
    fc_scope_open(ctx);
    fc_array *outs[WL_MAX_OUT];
    fc_array *a = sweep_input(ctx, 1, FC_F32, FC_SHAPE((1 << 20) + 3));
    outs[0] = fc_keep(fc_sum(a, FC_ALL, false));
    outs[1] = fc_keep(fc_argmax(a, FC_AXIS_NONE, false));
    set_add(&s, "sum and argmax of f32[2^20 + 3]", false, 0, outs, 2);
    fc_array *b = sweep_input(ctx, 2, FC_F64, FC_SHAPE(30, 40000));
    outs[0] = fc_keep(fc_mean(b, FC_AXES(1), false));
    outs[1] = fc_keep(fc_std(b, FC_AXES(1), false, 1));
    set_add(&s, "mean, std of f64[30, 40000] over axis 1", false, 0, outs, 2);
    fc_array *c = sweep_input(ctx, 3, FC_F32, FC_SHAPE(40000, 70));
    outs[0] = fc_keep(fc_var(c, FC_AXES(0), false, 0));
    outs[1] = fc_keep(fc_min(c, FC_AXES(0), true));
    set_add(&s, "var, min of f32[40000, 70] over axis 0", false, 0, outs, 2);
    fc_array *d = sweep_input(ctx, 4, FC_I16, FC_SHAPE(3, 30000, 2));
    outs[0] = fc_keep(fc_sum(d, FC_AXES(1), false));
    set_add(&s, "sum of i16[3, 30000, 2] over axis 1", false, 0, outs, 1);
    fc_array *e = sweep_input(ctx, 5, FC_C64, FC_SHAPE(16, 3, 4000));
    outs[0] = fc_keep(fc_sum(e, FC_AXES(0, 2), false));
    set_add(&s, "sum of c64[16, 3, 4000] over axes 0, 2", false, 0, outs, 1);
    set_build(&s);
    set_run_and_close(&s);
    cr_assert(s.n_split >= 4 && s.n_cols >= 1, "%d launches split, %d column kernels", s.n_split,
              s.n_cols);
}

/* Seeds the GPU differential run found wrong (bench/results/h100x4-2026-11-27-diff/run2):
 * kernels merged into a cycle (32981, 34794, 43632: test_fusion checks their plans' order;
 * here the values, though a consumer that reads the poisoned buffer first can still match by
 * chance, as 43632's cosh of a tiny garbage value does) and a row kernel that broadcast a
 * reduction along the columns of a square space (37686, which fails here without the fix); a
 * complex product whose tree multiplied inf + 0i by the identity (8615,
 * bench/results/gpu-2026-11-27-diff4). */
Test(emulated, gpu_diff_seeds) {
    static const uint64_t seeds[] = {8615, 32981, 34794, 37686, 43632, 126802, 29149};
    emu_set s;
    set_open(&s, "gpu_diff_seeds", &(emu_cfg){8, 4, 3, true, false, false, false, false, false});
    for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) {
        rdag d;
        cr_assert_eq(rdag_build(s.ctx, seeds[i], NULL, &d), FC_OK);
        char name[64];
        snprintf(name, sizeof name, "random DAG seed %llu", (unsigned long long)seeds[i]);
        fc_array *outs[WL_MAX_OUT];
        for (int q = 0; q < d.nout; q++) outs[q] = fc_keep(d.out[q]);
        set_add(&s, name, true, seeds[i], outs, d.nout);
        rdag_free(&d);
    }
    set_build(&s);
    set_run_and_close(&s);
}
