/*
 * test_codegen.c - code generation (codegen/cuda.c) end to end without a GPU: every kernel of
 * the workloads, of the .fc programs in the tree and of 1,000 random DAGs (tests/random_dag.c)
 * compiles under NVRTC for sm_80 and sm_90 (the random DAGs' in part: see below); generated
 * source is golden, deterministic across builds and processes, and shape-generic; kernels go
 * through the kernel cache.
 *
 * Compile time. NVRTC costs ~120 ms of CPU per generated kernel and arch here (measured
 * 2026-11-27, idle; more when the machine is busy), plus a fixed cost per call, so kernels are
 * batched: each is generated without the
 * prelude in its own namespace (fcx_generate_named), and the prelude and up to BATCH kernels
 * form one translation unit compiled once per arch. A failing batch is bisected to the kernel
 * that fails alone; the report names its program (for a random DAG, the seed and the DAG as
 * .fc text), NVRTC's message with the offending source lines, and a file under
 * FUSEC_BINARY_DIR/codegen_failures/ holding the kernel's whole source. The random DAGs are
 * split into four tests so that criterion --jobs=2 keeps both cores busy. The workloads', .fc
 * programs' and every-op kernels compile for sm_90, their first batch for sm_80 too. Of the
 * random DAGs' batches, one in sixteen compiles for sm_90 and one in thirty-two (others) for
 * sm_80 (the source does not depend on the arch): all of them would take about 8 minutes of
 * two idle cores, half of CI's run, and the GPU differential test (test_gpu_diff, on the GPU
 * host) compiles the kernels of 50,000 such programs for sm_90 and runs them. The kernels of
 * those DAGs that meet a zero-size array (an empty input, slice or reduced axis: about 180)
 * compile one batch in two for sm_90. In
 * sanitizer builds NVRTC compiles one random batch in RANDOM_NVRTC_STRIDE of those; codegen
 * still runs for all 1,000 DAGs.
 *
 * Golden sources: tests/data/golden/<workload>.cu holds the text after the prelude (from
 * "typedef" on) of each kernel of W1, W4, W6 and W9 at small sizes. Any change to the
 * generated code fails the test; after reviewing the change, FUSEC_UPDATE_GOLDEN=1 rewrites
 * the files.
 *
 * Cross-process determinism: the binary re-executes itself (/proc/self/exe --fusec-helper=...)
 * and compares the hashes of every source and cache key it prints with its own. The same
 * helper mode looks a kernel up in a disk cache that this process filled (fcx_get_binary).
 * Semantics (what the kernels compute) are checked in test_codegen_emulated.c.
 */
#include <criterion/criterion.h>

#include <fusec.h>

#include "cache.h"
#include "codegen.h"
#include "graph.h"
#include "kcompile.h"
#include "nvrtc_compile.h"
#include "plan.h"
#include "prelude.h"
#include "random_dag.c"
#include "workloads.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#define BATCH 64
#define RANDOM_DAGS 1000
#define RANDOM_CHUNKS 4

/* Under AddressSanitizer the C side (planning, codegen) of all 1,000 random DAGs still runs
 * instrumented, but NVRTC, which the sanitizer does not see into and whose verdict does not
 * depend on it, compiles one in RANDOM_NVRTC_STRIDE (16) of the random batches the plain run
 * compiles: CI runs the suite twice (plain and sanitized). */
#if defined(__SANITIZE_ADDRESS__)
#define RANDOM_NVRTC_STRIDE 16
#else
#define RANDOM_NVRTC_STRIDE 1
#endif

static const char *const ARCHS[2] = {"sm_80", "sm_90"};

static fc_ctx *new_ctx(void) {
    fc_ctx *c = NULL;
    fc_ctx_options o = {0};
    o.backend = FC_BACKEND_HOST;
    if (fc_ctx_create(&c, &o) != FC_OK) return NULL;
    return c;
}

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* ---- kernel lists ------------------------------------------------------------------------ */

typedef struct kern {
    char *src;         /* generated without the prelude, in namespace k<index> */
    char origin[160];  /* program and kernel index, for reports */
    bool random;       /* from random DAG `seed` */
    uint64_t seed;
    unsigned parts;    /* the prelude's optional parts it needs (fcx_prelude_parts_needed):
                          it compiles against those alone, as in production */
    int order;         /* its place in the list before compile_all grouped it by parts */
} kern;

typedef struct klist {
    kern *k;
    int n, cap;
    int kinds[FCP_KERNEL_SCATTER + 1]; /* kernels per fcp_kernel_kind (library ones: not
                                          generated) */
    FILE *keys;        /* when set: one line per kernel with the hash of its production
                          source (fcx_generate) and its cache keys for sm_80 and sm_90 */
    bool empty_only;   /* keep only kernels that meet a zero-size array (kernel_is_empty) */
} klist;

/* Whether a kernel meets a zero-size array: its space, a buffer it loads, a node it computes
 * or an output it stores has no element. */
static bool kernel_is_empty(const fcp_kernel *k) {
    bool empty = fcg_numel(k->ndim, k->space) == 0;
    for (int i = 0; i < k->nleaf; i++) empty |= fcg_node_numel(k->leaves[i]) == 0;
    for (int i = 0; i < k->nnode; i++) empty |= fcg_node_numel(k->nodes[i]) == 0;
    for (int i = 0; i < k->nout; i++) empty |= fcg_node_numel(k->outs[i]) == 0;
    return empty;
}

/* The production source of kernel k and its cache keys, as one line of l->keys. */
static void write_keys(fc_ctx *ctx, FILE *out, const fcp_kernel *k, const char *origin) {
    fcx_kernel_src src;
    fc_status st = fcx_generate(ctx, k, &src);
    cr_assert_eq(st, FC_OK, "%s: fcx_generate: %s", origin, fc_errmsg(ctx));
    XXH128_hash_t h = XXH3_128bits(src.src, src.len);
    fprintf(out, "%s: source %016llx%016llx", origin, (unsigned long long)h.high64,
            (unsigned long long)h.low64);
    for (int a = 0; a < 2; a++) {
        char opts[1024], msg[512] = "", hex[33];
        fcc_key_fields f;
        fcc_key key;
        st = fcx_key_fields(&src, ARCHS[a], opts, sizeof opts, &f, msg, sizeof msg);
        cr_assert_eq(st, FC_OK, "%s: fcx_key_fields: %s", origin, msg);
        cr_assert_eq(fcc_key_compute(&f, &key), FC_OK);
        fcc_key_to_hex(&key, hex);
        fprintf(out, " %s:%s", ARCHS[a], hex);
    }
    fprintf(out, "\n");
    fcx_kernel_src_free(ctx, &src);
}

static void klist_free(klist *l) {
    for (int i = 0; i < l->n; i++) free(l->k[i].src);
    free(l->k);
    memset(l, 0, sizeof *l);
}

static void check_healthy(const char *what, fc_array *const *outs, int n) {
    for (int i = 0; i < n; i++)
        cr_assert_eq(fc_array_status(outs[i]), FC_OK, "%s: output %d is poisoned: %s", what, i,
                     fc_array_errmsg(outs[i]));
}

/* Plans outs and generates every kernel into l (named k<index in l>). */
static void klist_add(fc_ctx *ctx, klist *l, fc_array *const *outs, int n, const char *origin,
                      bool random, uint64_t seed) {
    check_healthy(origin, outs, n);
    fcp_plan *p = NULL;
    fc_status st = fcp_plan_build(ctx, outs, n, &p);
    cr_assert_eq(st, FC_OK, "%s: fcp_plan_build: %s (%s)", origin, fc_strerror(st), fc_errmsg(ctx));
    for (int i = 0; i < p->nkernel; i++) {
        const fcp_kernel *k = &p->kernels[i];
        if (l->empty_only && !kernel_is_empty(k)) continue;
        l->kinds[k->kind]++;
        if (k->kind == FCP_KERNEL_LIB) continue;
        if (l->n == l->cap) {
            l->cap = l->cap ? 2 * l->cap : 256;
            l->k = realloc(l->k, (size_t)l->cap * sizeof *l->k);
            cr_assert_not_null(l->k);
        }
        char name[32];
        snprintf(name, sizeof name, "k%d", l->n);
        fcx_kernel_src src;
        st = fcx_generate_named(ctx, k, name, false, &src);
        if (st != FC_OK) {
            char *text = NULL;
            fc_program_print(ctx, outs, n, NULL, &text);
            char *desc = fcp_plan_describe(p);
            cr_assert_fail("%s, kernel %d: fcx_generate: %s (%s)\n%s\nprogram:\n%s", origin, i,
                           fc_strerror(st), fc_errmsg(ctx), desc ? desc : "", text ? text : "");
        }
        kern *e = &l->k[l->n++];
        e->src = strdup(src.src);
        cr_assert_not_null(e->src);
        snprintf(e->origin, sizeof e->origin, "%s, kernel %d of %d (%s)", origin, i, p->nkernel,
                 fcp_kernel_kind_names[k->kind]);
        if (l->keys) write_keys(ctx, l->keys, k, e->origin);
        e->random = random;
        e->seed = seed;
        e->parts = fcx_prelude_parts_needed(src.src, src.len);
        fcx_kernel_src_free(ctx, &src);
    }
    fcp_plan_destroy(p);
}

/* ---- the programs ------------------------------------------------------------------------ */

static int fc_files(const char *dir, char names[][256], int cap) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < cap) {
        size_t len = strlen(e->d_name);
        if (len > 3 && len < 256 && strcmp(e->d_name + len - 3, ".fc") == 0)
            memcpy(names[n++], e->d_name, len + 1);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof names[0], (int (*)(const void *, const void *))strcmp);
    return n;
}

/* Every .fc program of the tree: the examples', the format tests' and the benchmarks'. Each
 * dimension symbol is bound to 100. */
static const char *const FC_DIRS[] = {FUSEC_SOURCE_DIR "/examples/fc", FUSEC_TEST_DATA_DIR "/fc",
                                      FUSEC_SOURCE_DIR "/bench/fc"};

static int add_fc_programs(fc_ctx *ctx, klist *l) {
    static char names[128][256];
    int programs = 0;
    for (size_t d = 0; d < sizeof FC_DIRS / sizeof FC_DIRS[0]; d++) {
        int nf = fc_files(FC_DIRS[d], names, 128);
        for (int f = 0; f < nf; f++) {
            char path[1024];
            snprintf(path, sizeof path, "%s/%.255s", FC_DIRS[d], names[f]);
            fc_program *prog = NULL;
            fc_status st = fc_program_load(ctx, path, &prog);
            cr_assert_eq(st, FC_OK, "%s: %s", path, fc_errmsg(ctx));
            for (int s = 0; s < fc_program_num_symbols(prog); s++)
                cr_assert_eq(fc_program_set_symbol(prog, fc_program_symbol_name(prog, s), 100), FC_OK);
            int nout = fc_program_num_outputs(prog);
            fc_array **outs = calloc((size_t)nout, sizeof *outs);
            cr_assert_not_null(outs);
            st = fc_program_build(prog, NULL, outs);
            cr_assert_eq(st, FC_OK, "%s: %s", path, fc_errmsg(ctx));
            klist_add(ctx, l, outs, nout, path, false, 0);
            free(outs);
            fc_program_destroy(prog);
            programs++;
        }
    }
    return programs;
}

/* Every workload at its full size (and W1 past 2^31 elements, for 64-bit indexing). */
static void add_workloads(fc_ctx *ctx, klist *l, bool small) {
    for (int w = 0; w < WL_COUNT; w++) {
        fc_array *outs[WL_MAX_OUT];
        const wl_workload *wl = &wl_workloads[w];
        int n = wl->build(ctx, small ? wl->small : wl->full, outs);
        cr_assert_gt(n, 0);
        char origin[96];
        snprintf(origin, sizeof origin, "workload %s (%s)", wl->name, small ? "small" : "full size");
        klist_add(ctx, l, outs, n, origin, false, 0);
    }
    if (!small) {
        fc_array *outs[WL_MAX_OUT];
        int n = wl_w01_tanh_sin(ctx, (const int64_t[]){(int64_t)1 << 32}, outs);
        klist_add(ctx, l, outs, n, "workload w01_tanh_sin at 2^32 elements", false, 0);
    }
}

static void add_random(fc_ctx *ctx, klist *l, uint64_t lo, uint64_t hi) {
    for (uint64_t seed = lo; seed < hi; seed++) {
        rdag d;
        fc_status st = rdag_build(ctx, seed, NULL, &d);
        cr_assert_eq(st, FC_OK, "random DAG %llu: rdag_build: %s", (unsigned long long)seed,
                     fc_strerror(st));
        char origin[64];
        snprintf(origin, sizeof origin, "random DAG seed %llu", (unsigned long long)seed);
        klist_add(ctx, l, d.out, d.nout, origin, true, seed);
        rdag_free(&d);
    }
}

/* ---- batched compiles -------------------------------------------------------------------- */

/* The prelude with only the parts l->k[lo, hi) need (they need the same ones), then those
 * kernels. */
static char *batch_text(const klist *l, int lo, int hi) {
    size_t nd = fcx_prelude_parts_defines(l->k[lo].parts, NULL, 0);
    size_t len = nd + fcx_prelude_size;
    for (int i = lo; i < hi; i++) len += strlen(l->k[i].src) + 1;
    char *t = malloc(len + 1);
    cr_assert_not_null(t);
    fcx_prelude_parts_defines(l->k[lo].parts, t, nd + 1);
    memcpy(t + nd, fcx_prelude_source, fcx_prelude_size);
    size_t at = nd + fcx_prelude_size;
    for (int i = lo; i < hi; i++) {
        size_t k = strlen(l->k[i].src);
        memcpy(t + at, l->k[i].src, k);
        at += k;
        t[at++] = '\n';
    }
    t[at] = '\0';
    return t;
}

static void check_cubin(const fcn_cubin *c, const char *arch) {
    cr_assert_not_null(c->data);
    cr_assert_gt(c->size, 64);
    cr_assert(memcmp(c->data, "\177ELF", 4) == 0, "%s: the cubin is not an ELF image", arch);
    cr_assert_str_eq(c->arch, arch);
}

/* Writes the kernel's source to the failures folder; returns the path (static buffer). */
static const char *save_failure(const kern *k, int index, const char *arch) {
    static char path[1024];
    char dir[900];
    snprintf(dir, sizeof dir, "%s/codegen_failures", FUSEC_BINARY_DIR);
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/k%d_%s.cu", dir, index, arch);
    FILE *f = fopen(path, "w");
    if (!f) return "(could not be written)";
    char defines[1024];
    fcx_prelude_parts_defines(k->parts, defines, sizeof defines);
    fputs(defines, f);
    fputs(fcx_prelude_source, f);
    fputs(k->src, f);
    fclose(f);
    return path;
}

/* The first kernel of l[lo, hi) that fails to compile alone for arch (its NVRTC result in
 * *out, to be freed), or -1. */
static int first_failing(fc_ctx *ctx, const klist *l, int lo, int hi, const char *arch,
                         fcn_cubin *out) {
    for (int i = lo; i < hi; i++) {
        char *t = batch_text(l, i, i + 1);
        fc_status st = fcn_compile(ctx, t, NULL, arch, 0, NULL, 0, out);
        free(t);
        if (st != FC_OK) return i;
        fcn_cubin_free(ctx, out);
    }
    return -1;
}

/* A batch failed: report the first kernel that fails alone. */
static void diagnose(fc_ctx *ctx, const klist *l, int lo, int hi, const char *arch,
                     const fcn_cubin *batch) {
    fcn_cubin c;
    int i = first_failing(ctx, l, lo, hi, arch, &c);
    if (i < 0)
        cr_assert_fail("%s: a batch of %d kernels fails, but each compiles alone:\n%.8000s", arch,
                       hi - lo, batch->message ? batch->message : "(no message)");
    const kern *k = &l->k[i];
    char *prog = NULL;
    if (k->random) {
        rdag d;
        if (rdag_build(ctx, k->seed, NULL, &d) == FC_OK) {
            prog = rdag_print(&d);
            rdag_free(&d);
        }
    }
    const char *path = save_failure(k, i, arch);
    cr_log_error("%s: %s does not compile:\n%.12000s", arch, k->origin,
                 c.message ? c.message : "(no message)");
    if (prog) cr_log_error("the program (.fc):\n%s", prog);
    cr_assert_fail("%s: %s does not compile; NVRTC's message is above; its source: %s", arch,
                   k->origin, path);
}

typedef struct compile_stats {
    int batches;
    double ms;        /* NVRTC wall time, all batches of one arch */
    double ms_max;    /* the slowest batch */
} compile_stats;

/* Which batches compile for an arch: batch b does when b % stride == offset (stride 0: none). */
typedef struct batch_pick {
    int stride, offset;
} batch_pick;

static int kern_by_parts(const void *a, const void *b) {
    const kern *x = a, *y = b;
    if (x->parts != y->parts) return x->parts < y->parts ? -1 : 1;
    return x->order - y->order;
}

/* The end of the batch that starts at lo: at most BATCH kernels, all needing the same parts
 * of the prelude. */
static int batch_end(const klist *l, int lo) {
    int hi = lo + 1;
    while (hi < l->n && hi - lo < BATCH && l->k[hi].parts == l->k[lo].parts) hi++;
    return hi;
}

/* Compiles the kernels of l in batches, for ARCHS[a] the batches pick[a] names. Kernels are
 * grouped by the prelude parts they need (in their order otherwise), so that each compiles
 * against exactly those: a part a kernel needs but was not given fails the batch. */
static void compile_all(fc_ctx *ctx, klist *l, const char *what, const batch_pick pick[2],
                        compile_stats *stats) {
    for (int i = 0; i < l->n; i++) l->k[i].order = i;
    qsort(l->k, (size_t)l->n, sizeof *l->k, kern_by_parts);
    for (int a = 0; a < 2; a++) {
        memset(&stats[a], 0, sizeof stats[a]);
        int compiled = 0;
        for (int lo = 0, b = 0, hi; lo < l->n; lo = hi, b++) {
            hi = batch_end(l, lo);
            if (pick[a].stride == 0 || b % pick[a].stride != pick[a].offset) continue;
            compiled += hi - lo;
            char *t = batch_text(l, lo, hi);
            fcn_cubin c;
            double t0 = now_ms();
            fc_status st = fcn_compile(ctx, t, NULL, ARCHS[a], 0, NULL, 0, &c);
            double dt = now_ms() - t0;
            free(t);
            if (st != FC_OK) diagnose(ctx, l, lo, hi, ARCHS[a], &c);
            check_cubin(&c, ARCHS[a]);
            fcn_cubin_free(ctx, &c);
            stats[a].batches++;
            stats[a].ms += dt;
            if (dt > stats[a].ms_max) stats[a].ms_max = dt;
        }
        fprintf(stderr, "codegen: %s: %d kernels (%d elementwise, %d reduce, %d row, %d scan, "
                        "%d scatter), %d compiled in %d batches for %s: %.0f ms of NVRTC, %.0f ms "
                        "per batch, slowest %.0f ms\n",
                what, l->n, l->kinds[FCP_KERNEL_EW], l->kinds[FCP_KERNEL_REDUCE],
                l->kinds[FCP_KERNEL_ROW], l->kinds[FCP_KERNEL_SCAN], l->kinds[FCP_KERNEL_SCATTER],
                compiled, stats[a].batches,
                ARCHS[a], stats[a].ms,
                stats[a].batches ? stats[a].ms / stats[a].batches : 0.0, stats[a].ms_max);
    }
}

/* ---- every kernel compiles -------------------------------------------------------------- */

Test(codegen, workloads_and_fc_programs_compile_for_sm80_and_sm90) {
    fc_ctx *ctx = new_ctx();
    cr_assert_not_null(ctx);
    fc_scope_open(ctx);
    klist l = {0};
    add_workloads(ctx, &l, false);
    int nwork = l.n;
    int programs = add_fc_programs(ctx, &l);
    cr_assert_geq(programs, 10, "only %d .fc programs found", programs);
    /* W1..W11 are one kernel each but W7 (at most two) and W3 (one or two). */
    cr_assert_geq(nwork, WL_COUNT - 1);
    compile_stats st[2];
    compile_all(ctx, &l, "workloads and .fc programs", (const batch_pick[2]){{2, 0}, {1, 0}}, st);
    klist_free(&l);
    fc_ctx_destroy(ctx);
}

/* Every elementwise op of ops.def over every loop dtype it has (from the first input dtype
 * that gives it), one program per op with an output per loop dtype, fused into one kernel:
 * each call the generator emits compiles, whether or not the random DAGs reach it. The op
 * list is the table's, so a new op is in. */
Test(codegen, every_elementwise_op_and_dtype_compiles_for_sm80_and_sm90) {
    fc_ctx *ctx = new_ctx();
    cr_assert_not_null(ctx);
    fc_scope_open(ctx);
    static const unsigned char zeros[4 * 16]; /* 4 elements of the widest dtype */
    klist l = {0};
    int programs = 0;
    for (int op = 0; op < FCG_OP_COUNT; op++) {
        int nin = fcg_ops[op].nin;
        if (fcg_ops[op].kind != FCG_KIND_EW || op == FCG_OP_CAST) continue;
        fc_array *outs[FC_DTYPE_COUNT];
        bool seen[FC_DTYPE_COUNT] = {false};
        int n = 0;
        for (int t = 0; t < FC_DTYPE_COUNT; t++) {
            fc_array *x[3];
            for (int i = 0; i < nin; i++) x[i] = fc_from_host(ctx, (fc_dtype)t, FC_SHAPE(4), zeros);
            fc_array *y = nin == 1   ? fcg_unary_api[op](x[0])
                          : nin == 2 ? fcg_binary_api[op](x[0], x[1])
                                     : fcg_ternary_api[op](x[0], x[1], x[2]);
            if (fc_array_status(y) != FC_OK) fc_clear_error(ctx); /* not for this dtype */
            else if (!seen[y->loop_dtype]) outs[n++] = y;
            if (fc_array_status(y) == FC_OK) seen[y->loop_dtype] = true;
        }
        cr_assert_gt(n, 0, "%s takes no dtype", fcg_ops[op].pyname);
        char origin[64];
        snprintf(origin, sizeof origin, "%s over every dtype", fcg_ops[op].pyname);
        klist_add(ctx, &l, outs, n, origin, false, 0);
        programs++;
    }
    /* the 16-bit loops of nextafter step their own format: their own device functions */
    bool f16 = false, bf16 = false;
    for (int i = 0; i < l.n; i++) {
        f16 |= strstr(l.k[i].src, "fcx_nextafter_f16(") != NULL;
        bf16 |= strstr(l.k[i].src, "fcx_nextafter_bf16(") != NULL;
    }
    cr_assert(f16 && bf16, "nextafter of f16 / bf16 does not call its own function");
    compile_stats st[2];
    compile_all(ctx, &l, "every elementwise op", (const batch_pick[2]){{2, 0}, {1, 0}}, st);
    klist_free(&l);
    fc_ctx_destroy(ctx);
}

/* The pair step (issue 13): elementwise ops over f16 and bf16 operands of one shape, one kernel
 * an op with both loops' results, and casts between the 16-bit dtypes and others. Each kernel's
 * vector step takes pairs and compiles for sm_80 (bf16 + - * as fma.rn.bf16x2) and sm_90
 * (add/sub/mul.rn.bf16x2). The ops: one of each way the pair step computes (the packed ones,
 * the bit moves, an op per lane packed once, copysign's exact unpack, nextafter's own function,
 * results of other dtypes); every op's lane code is the scalar call, which the other tests
 * compile, and test_codegen_emulated's sweep runs every unary op of f16 and bf16 in pairs. */
Test(codegen, sixteen_bit_elementwise_ops_compile_in_pairs) {
    fc_ctx *ctx = new_ctx();
    cr_assert_not_null(ctx);
    fc_scope_open(ctx);
    static const unsigned char zeros[16 * 2];
    static const fc_dtype hd[2] = {FC_F16, FC_BF16};
    static const fcg_op ops[] = {FCG_OP_ADD, FCG_OP_SUB, FCG_OP_MUL, FCG_OP_SQUARE, FCG_OP_NEGATIVE,
                                 FCG_OP_ABS, FCG_OP_WHERE, FCG_OP_DIV, FCG_OP_TANH, FCG_OP_POW,
                                 FCG_OP_COPYSIGN, FCG_OP_NEXTAFTER, FCG_OP_CLIP, FCG_OP_SIGNBIT,
                                 FCG_OP_LESS, FCG_OP_ISNAN};
    klist l = {0};
    for (size_t j = 0; j < sizeof ops / sizeof ops[0]; j++) {
        int op = ops[j], nin = fcg_ops[op].nin, n = 0;
        fc_array *outs[2];
        for (int d = 0; d < 2; d++) {
            fc_array *x[3];
            for (int i = 0; i < nin; i++) x[i] = fc_from_host(ctx, hd[d], FC_SHAPE(16), zeros);
            fc_array *y = nin == 1   ? fcg_unary_api[op](x[0])
                          : nin == 2 ? fcg_binary_api[op](x[0], x[1])
                                     : fcg_ternary_api[op](x[0], x[1], x[2]);
            cr_assert_eq(fc_array_status(y), FC_OK, "%s of %s", fcg_ops[op].pyname, fc_dtype_name(hd[d]));
            outs[n++] = fc_mul(y, x[0]); /* a 16-bit op after it, whatever its dtype */
        }
        char origin[64];
        snprintf(origin, sizeof origin, "%s of f16 and bf16", fcg_ops[op].pyname);
        klist_add(ctx, &l, outs, n, origin, false, 0);
    }
    static const fc_dtype others[] = {FC_BOOL, FC_I8, FC_U16, FC_I32, FC_I64, FC_F32, FC_F64};
    for (size_t j = 0; j < sizeof others / sizeof others[0]; j++) {
        fc_array *h = fc_from_host(ctx, FC_F16, FC_SHAPE(16), zeros);
        fc_array *b = fc_from_host(ctx, FC_BF16, FC_SHAPE(16), zeros);
        fc_array *o = fc_cast(h, others[j]);
        fc_array *outs[3] = {fc_add(fc_cast(o, FC_F16), h), fc_add(fc_cast(o, FC_BF16), b),
                             fc_add(o, fc_cast(fc_add(b, b), others[j]))};
        klist_add(ctx, &l, outs, 3, "casts of f16 and bf16", false, 0);
    }
    for (int i = 0; i < l.n; i++)
        cr_assert_not_null(strstr(l.k[i].src, "fcx_h2 v"), "%s: no pair step", l.k[i].origin);
    compile_stats st[2];
    compile_all(ctx, &l, "16-bit pairs", (const batch_pick[2]){{1, 0}, {1, 0}}, st);
    klist_free(&l);
    fc_ctx_destroy(ctx);
}

static void random_chunk(int chunk) {
    uint64_t per = RANDOM_DAGS / RANDOM_CHUNKS;
    uint64_t lo = per * (uint64_t)chunk, hi = lo + per;
    fc_ctx *ctx = new_ctx();
    cr_assert_not_null(ctx);
    klist l = {0};
    add_random(ctx, &l, lo, hi);
    /* The generator reaches every kind of kernel in every chunk (scatters, rarer, in the
     * whole set: test_fusion's random plans check that). */
    for (int kind = 0; kind <= FCP_KERNEL_SCAN; kind++)
        cr_assert_gt(l.kinds[kind], 0, "seeds %llu..%llu give no %s kernel",
                     (unsigned long long)lo, (unsigned long long)hi - 1, fcp_kernel_kind_names[kind]);
    char what[64];
    snprintf(what, sizeof what, "random DAGs %llu..%llu", (unsigned long long)lo,
             (unsigned long long)hi - 1);
    compile_stats st[2];
    const batch_pick pick[2] = {{32 * RANDOM_NVRTC_STRIDE, 2}, {16 * RANDOM_NVRTC_STRIDE, 0}};
    compile_all(ctx, &l, what, pick, st);
    klist_free(&l);
    fc_ctx_destroy(ctx);
}

/* Kernels that meet zero-size arrays (an empty input of a program with a zero extent, an
 * empty slice, a reduction over an empty axis) compile, one batch in two for sm_90 (the random
 * chunks above compile fewer; the source does not depend on the arch, and sm_80 compiles the
 * other tests' batches). */
Test(codegen_random, zero_size_kernels_compile) {
    fc_ctx *ctx = new_ctx();
    cr_assert_not_null(ctx);
    klist l = {0};
    l.empty_only = true;
    add_random(ctx, &l, 0, RANDOM_DAGS);
    cr_assert_gt(l.n, 50, "only %d kernels of %d random DAGs meet a zero-size array", l.n,
                 RANDOM_DAGS);
    compile_stats st[2];
    const batch_pick pick[2] = {{0, 0}, {2 * RANDOM_NVRTC_STRIDE, 0}};
    compile_all(ctx, &l, "zero-size kernels of the random DAGs", pick, st);
    klist_free(&l);
    fc_ctx_destroy(ctx);
}

Test(codegen_random, dags_0_of_4_compile_for_sm80_and_sm90) { random_chunk(0); }
Test(codegen_random, dags_1_of_4_compile_for_sm80_and_sm90) { random_chunk(1); }
Test(codegen_random, dags_2_of_4_compile_for_sm80_and_sm90) { random_chunk(2); }
Test(codegen_random, dags_3_of_4_compile_for_sm80_and_sm90) { random_chunk(3); }

/* A failing batch is traced to its kernel: three good kernels and a broken one. */
Test(codegen, a_failing_batch_names_the_kernel) {
    fc_ctx *ctx = new_ctx();
    cr_assert_not_null(ctx);
    fc_scope_open(ctx);
    klist l = {0};
    const wl_workload *w = &wl_workloads[0];
    for (int i = 0; i < 4; i++) {
        fc_array *outs[WL_MAX_OUT];
        int n = w->build(ctx, w->small, outs);
        char origin[32];
        snprintf(origin, sizeof origin, "copy %d", i);
        klist_add(ctx, &l, outs, n, origin, false, 0);
    }
    /* Break the third kernel: an undeclared name in its body. */
    char *broken = malloc(strlen(l.k[2].src) + 64);
    cr_assert_not_null(broken);
    const char *body = strstr(l.k[2].src, "const idx_t n =");
    cr_assert_not_null(body);
    int head = (int)(body - l.k[2].src);
    sprintf(broken, "%.*sundeclared_name += 1;\n%s", head, l.k[2].src, body);
    free(l.k[2].src);
    l.k[2].src = broken;
    char *t = batch_text(&l, 0, l.n);
    fcn_cubin c;
    cr_assert_neq(fcn_compile(ctx, t, NULL, "sm_80", 0, NULL, 0, &c), FC_OK);
    fcn_cubin_free(ctx, &c);
    free(t);
    cr_assert_eq(first_failing(ctx, &l, 0, l.n, "sm_80", &c), 2);
    cr_assert_not_null(c.message);
    cr_assert_not_null(strstr(c.message, "undeclared_name"), "%s", c.message);
    fcn_cubin_free(ctx, &c);
    klist_free(&l);
    fc_ctx_destroy(ctx);
}

/* The generator is deterministic: the same seed gives the same graph, in a fresh context. */
Test(codegen_random, generator_is_deterministic) {
    fc_ctx *a = new_ctx(), *b = new_ctx();
    cr_assert(a && b);
    for (uint64_t seed = 0; seed < 50; seed++) {
        rdag x, y;
        cr_assert_eq(rdag_build(a, seed, NULL, &x), FC_OK);
        cr_assert_eq(rdag_build(b, seed, NULL, &y), FC_OK);
        fc_hash hx, hy;
        cr_assert_eq(fc_graph_hash(x.out, x.nout, &hx), FC_OK);
        cr_assert_eq(fc_graph_hash(y.out, y.nout, &hy), FC_OK);
        cr_assert(hx.lo == hy.lo && hx.hi == hy.hi && x.nout == y.nout && x.nsteps == y.nsteps,
                  "seed %llu gives two graphs", (unsigned long long)seed);
        rdag_free(&x);
        rdag_free(&y);
    }
    fc_ctx_destroy(a);
    fc_ctx_destroy(b);
}

/* ---- golden sources ---------------------------------------------------------------------- */

/* The kernel's text after the prelude, from "typedef" on. */
static const char *after_prelude(const char *src) {
    const char *p = strstr(src, fcx_prelude_source);
    cr_assert_not_null(p, "the generated source does not contain the prelude");
    const char *t = strstr(p + strlen(fcx_prelude_source), "typedef");
    cr_assert_not_null(t, "no typedef after the prelude");
    return t;
}

static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    fclose(f);
    if (s) s[n] = '\0';
    if (len) *len = (size_t)n;
    return s;
}

/* All kernels of a workload at its small size, after the prelude, separated by markers. */
static char *workload_text(fc_ctx *ctx, const wl_workload *w, const int64_t *dims) {
    fc_array *outs[WL_MAX_OUT];
    int n = w->build(ctx, dims, outs);
    check_healthy(w->name, outs, n);
    fcp_plan *p = NULL;
    cr_assert_eq(fcp_plan_build(ctx, outs, n, &p), FC_OK, "%s: %s", w->name, fc_errmsg(ctx));
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    cr_assert_not_null(m);
    for (int i = 0; i < p->nkernel; i++) {
        if (p->kernels[i].kind == FCP_KERNEL_LIB) {
            fprintf(m, "// ---- kernel %d: a library call\n", i);
            continue;
        }
        fcx_kernel_src src;
        fc_status st = fcx_generate(ctx, &p->kernels[i], &src);
        cr_assert_eq(st, FC_OK, "%s kernel %d: %s", w->name, i, fc_errmsg(ctx));
        fprintf(m, "// ---- kernel %d\n%s", i, after_prelude(src.src));
        fcx_kernel_src_free(ctx, &src);
    }
    fclose(m);
    fcp_plan_destroy(p);
    return text;
}

/* The first line where a and b differ, for the report. */
static void first_difference(const char *a, const char *b, char *out, size_t size) {
    int line = 1;
    const char *la = a, *lb = b;
    while (*a && *a == *b) {
        if (*a == '\n') {
            line++;
            la = a + 1;
            lb = b + 1;
        }
        a++, b++;
    }
    const char *ea = strchr(la, '\n'), *eb = strchr(lb, '\n');
    int na = ea ? (int)(ea - la) : (int)strlen(la), nb = eb ? (int)(eb - lb) : (int)strlen(lb);
    snprintf(out, size, "line %d:\n  golden:    %.*s\n  generated: %.*s", line, nb > 300 ? 300 : nb,
             lb, na > 300 ? 300 : na, la);
}

Test(codegen, golden_sources) {
    static const char *const names[] = {"w01_tanh_sin", "w04_softmax", "w06_row_l2norm",
                                        "w09_box_blur"};
    bool update = getenv("FUSEC_UPDATE_GOLDEN") && strcmp(getenv("FUSEC_UPDATE_GOLDEN"), "1") == 0;
    fc_ctx *ctx = new_ctx();
    cr_assert_not_null(ctx);
    fc_scope_open(ctx);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const wl_workload *w = NULL;
        for (int k = 0; k < WL_COUNT; k++)
            if (strcmp(wl_workloads[k].name, names[i]) == 0) w = &wl_workloads[k];
        cr_assert_not_null(w);
        char *got = workload_text(ctx, w, w->small);
        char path[1024];
        snprintf(path, sizeof path, "%s/golden/%s.cu", FUSEC_TEST_DATA_DIR, names[i]);
        if (update) {
            FILE *f = fopen(path, "w");
            cr_assert_not_null(f, "cannot write %s", path);
            fputs(got, f);
            fclose(f);
            cr_log_warn("rewrote %s", path);
        }
        char *want = read_file(path, NULL);
        static char failure[4096];
        failure[0] = '\0';
        if (!want) {
            snprintf(failure, sizeof failure, "%s is missing (FUSEC_UPDATE_GOLDEN=1 writes it)", path);
        } else if (strcmp(got, want) != 0) {
            char diff[1024];
            first_difference(got, want, diff, sizeof diff);
            snprintf(failure, sizeof failure, "%s: generated source differs from %s at %s\n"
                     "(review, then FUSEC_UPDATE_GOLDEN=1 to accept)", names[i], path, diff);
        }
        free(got);
        free(want);
        if (failure[0]) {
            fc_ctx_destroy(ctx);
            cr_assert_fail("%s", failure);
        }
    }
    fc_ctx_destroy(ctx);
}

/* ---- determinism ------------------------------------------------------------------------ */

/* The fixed program set of the determinism tests: every workload at full and small size, the
 * .fc programs, and 100 random DAGs. */
static void fixed_programs(fc_ctx *ctx, klist *l) {
    add_workloads(ctx, l, false);
    add_workloads(ctx, l, true);
    add_fc_programs(ctx, l);
    add_random(ctx, l, 5000, 5100);
}

/* Two lines per kernel of the fixed set: the XXH3-128 of its batch source (named, without the
 * prelude), and of its production source (fcx_generate, what the runtime compiles) with its
 * cache keys for sm_80 and sm_90. */
static void fingerprint(FILE *out) {
    fc_ctx *ctx = new_ctx();
    if (!ctx) {
        fprintf(out, "no context\n");
        return;
    }
    fc_scope_open(ctx);
    klist l = {0};
    l.keys = out;
    fixed_programs(ctx, &l);
    for (int i = 0; i < l.n; i++) {
        XXH128_hash_t hb = XXH3_128bits(l.k[i].src, strlen(l.k[i].src));
        fprintf(out, "%s: batch source %016llx%016llx\n", l.k[i].origin,
                (unsigned long long)hb.high64, (unsigned long long)hb.low64);
    }
    fprintf(out, "%d kernels\n", l.n);
    klist_free(&l);
    fc_ctx_destroy(ctx);
}

static char *fingerprint_here(void) {
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    cr_assert_not_null(m);
    fingerprint(m);
    fclose(m);
    return text;
}

/* Runs this binary with `arg`, returns its stdout. The child gets the environment without
 * Criterion's sandbox variables (BXFI_*), which would make the child act as a test worker. */
static char *run_self(const char *arg, int *status) {
    extern char **environ;
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    cr_assert_gt(n, 0);
    exe[n] = '\0';
    int nenv = 0;
    while (environ[nenv]) nenv++;
    char **env = calloc((size_t)nenv + 1, sizeof *env);
    cr_assert_not_null(env);
    int k = 0;
    for (int i = 0; i < nenv; i++)
        if (strncmp(environ[i], "BXFI", 4) != 0) env[k++] = environ[i];
    int fd[2];
    cr_assert_eq(pipe(fd), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        dup2(fd[1], 1);
        close(fd[0]);
        close(fd[1]);
        char *argv[] = {exe, (char *)arg, NULL};
        execve(exe, argv, env);
        _exit(127);
    }
    free(env);
    close(fd[1]);
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    char buf[8192];
    ssize_t got;
    while ((got = read(fd[0], buf, sizeof buf)) > 0 || (got < 0 && errno == EINTR))
        if (got > 0) fwrite(buf, 1, (size_t)got, m);
    close(fd[0]);
    fclose(m);
    while (waitpid(pid, status, 0) < 0 && errno == EINTR) {}
    return text;
}

static void compare_texts(const char *what, const char *a, const char *b) {
    if (strcmp(a, b) == 0) return;
    char diff[1024];
    first_difference(a, b, diff, sizeof diff);
    cr_assert_fail("%s differ at %s", what, diff);
}

Test(codegen, sources_and_cache_keys_are_identical_in_another_process) {
    char *here = fingerprint_here();
    int status;
    char *there = run_self("--fusec-helper=fingerprint", &status);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the helper process failed");
    cr_assert_gt(strlen(here), 1000);
    cr_assert_not_null(strstr(here, " sm_80:"));
    cr_assert_not_null(strstr(here, " sm_90:"));
    compare_texts("this process's and another process's sources and keys", there, here);
    free(here);
    free(there);
}

/* Sources of the fixed set, concatenated, for in-process comparisons. */
static char *all_sources(fc_ctx *ctx) {
    klist l = {0};
    fixed_programs(ctx, &l);
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    for (int i = 0; i < l.n; i++) fprintf(m, "// %s\n%s", l.k[i].origin, l.k[i].src);
    fclose(m);
    klist_free(&l);
    return text;
}

Test(codegen, the_same_program_built_twice_gives_identical_source) {
    fc_ctx *ctx = new_ctx();
    cr_assert_not_null(ctx);
    fc_scope *s = fc_scope_open(ctx);
    char *first = all_sources(ctx);
    fc_scope_close(s);
    /* Again in the same context, after unrelated work moved the node ids and walk epochs. */
    s = fc_scope_open(ctx);
    klist junk = {0};
    add_random(ctx, &junk, 9000, 9020);
    klist_free(&junk);
    char *second = all_sources(ctx);
    fc_scope_close(s);
    compare_texts("two builds in one context", first, second);
    /* And in a fresh context with other nodes alive. */
    fc_ctx *other = new_ctx();
    cr_assert_not_null(other);
    fc_scope_open(other);
    float pad[7] = {1, 2, 3, 4, 5, 6, 7};
    fc_array *keep = fc_sin(fc_from_host(other, FC_F32, FC_SHAPE(7), pad));
    cr_assert_eq(fc_array_status(keep), FC_OK);
    char *third = all_sources(other);
    compare_texts("builds in two contexts", first, third);
    free(first);
    free(second);
    free(third);
    fc_ctx_destroy(other);
    fc_ctx_destroy(ctx);
}

/* ---- shape-generic ---------------------------------------------------------------------- */

/* The value of an integer slot of kernel k (what the runtime would pass). */
static int64_t slot_value(const fcp_kernel *k, const fcx_slot *s) {
    const fc_array *node = NULL;
    if (s->node >= 0) node = s->node < k->nnode ? k->nodes[s->node] : k->leaves[s->node - k->nnode];
    switch ((fcx_slot_kind)s->kind) {
    case FCX_SLOT_SPACE_EXTENT: return k->space[s->dim];
    case FCX_SLOT_EXTENT: return node->shape[s->dim];
    case FCX_SLOT_PARAM_A: return node->p.a[s->dim];
    case FCX_SLOT_PARAM_B: return node->p.b[s->dim];
    case FCX_SLOT_IVAL: return node->p.ival;
    case FCX_SLOT_COUNT: return node->p.count;
    default: return 0;
    }
}

Test(codegen, sources_are_shape_generic) {
    fc_ctx *ctx = new_ctx();
    cr_assert_not_null(ctx);
    fc_scope_open(ctx);
    for (int w = 0; w < WL_COUNT; w++) {
        const wl_workload *wl = &wl_workloads[w];
        fc_array *oa[WL_MAX_OUT], *ob[WL_MAX_OUT];
        int na = wl->build(ctx, wl->small, oa), nb = wl->build(ctx, wl->other, ob);
        fcp_plan *pa = NULL, *pb = NULL;
        cr_assert_eq(fcp_plan_build(ctx, oa, na, &pa), FC_OK, "%s: %s", wl->name, fc_errmsg(ctx));
        cr_assert_eq(fcp_plan_build(ctx, ob, nb, &pb), FC_OK, "%s: %s", wl->name, fc_errmsg(ctx));
        cr_assert_eq(pa->nkernel, pb->nkernel, "%s: %d kernels at one size, %d at the other",
                     wl->name, pa->nkernel, pb->nkernel);
        bool values_differ = false;
        for (int i = 0; i < pa->nkernel; i++) {
            if (pa->kernels[i].kind == FCP_KERNEL_LIB) continue;
            fcx_kernel_src sa, sb;
            cr_assert_eq(fcx_generate(ctx, &pa->kernels[i], &sa), FC_OK);
            cr_assert_eq(fcx_generate(ctx, &pb->kernels[i], &sb), FC_OK);
            char diff[1024] = "";
            if (strcmp(sa.src, sb.src) != 0) first_difference(sa.src, sb.src, diff, sizeof diff);
            cr_assert_str_eq(sa.src, sb.src, "%s kernel %d: [%lld, %lld] and [%lld, %lld] give "
                             "different sources at %s", wl->name, i, (long long)wl->small[0],
                             (long long)wl->small[1], (long long)wl->other[0],
                             (long long)wl->other[1], diff);
            cr_assert(sa.nint == sb.nint && sa.nflt == sb.nflt && sa.nptr == sb.nptr &&
                      sa.block == sb.block && sa.strategy == sb.strategy && sa.idx64 == sb.idx64,
                      "%s kernel %d: the launch recipes differ", wl->name, i);
            for (int s = 0; s < sa.nint; s++)
                cr_assert(sa.islots[s].kind == sb.islots[s].kind && sa.islots[s].node == sb.islots[s].node &&
                          sa.islots[s].dim == sb.islots[s].dim,
                          "%s kernel %d: integer slot %d is (%d, %d, %d) at one size, (%d, %d, %d) at the other",
                          wl->name, i, s, sa.islots[s].kind, sa.islots[s].node, sa.islots[s].dim,
                          sb.islots[s].kind, sb.islots[s].node, sb.islots[s].dim);
            for (int s = 0; s < sa.nflt; s++)
                cr_assert(sa.fslots[s].kind == sb.fslots[s].kind && sa.fslots[s].node == sb.fslots[s].node &&
                          sa.fslots[s].dim == sb.fslots[s].dim,
                          "%s kernel %d: float slot %d differs between the sizes", wl->name, i, s);
            for (int s = 0; s < sa.nint; s++)
                values_differ |= slot_value(&pa->kernels[i], &sa.islots[s]) !=
                                 slot_value(&pb->kernels[i], &sb.islots[s]);
            fcx_kernel_src_free(ctx, &sa);
            fcx_kernel_src_free(ctx, &sb);
        }
        if (pa->kernels[0].kind != FCP_KERNEL_LIB)
            cr_assert(values_differ, "%s: no integer argument differs between the two sizes",
                      wl->name);
        fcp_plan_destroy(pa);
        fcp_plan_destroy(pb);
    }
    fc_ctx_destroy(ctx);
}

/* Shifted slices of one value (issue 13 item 6): those of a pad of a buffer take strips (W9's
 * nine windows of a pad, with the pad a shift where a strip reads inside x), those of a
 * computed value shared-memory tiles, each one kernel whose header (what `fusec dump` shows)
 * says so; a buffer's own (the Laplacian's five windows of its input) and two slices take
 * neither. The emulator checks what the strips and tiles compute. */

/* The source of the one kernel computing out. */
static char *one_kernel_source(fc_ctx *ctx, fc_array *out) {
    fcp_plan *p = NULL;
    cr_assert_eq(fcp_plan_build(ctx, &out, 1, &p), FC_OK, "%s", fc_errmsg(ctx));
    cr_assert_eq(p->nkernel, 1, "%d kernels", p->nkernel);
    fcx_kernel_src src;
    cr_assert_eq(fcx_generate(ctx, &p->kernels[0], &src), FC_OK);
    char *text = src.src;
    src.src = NULL;
    fcx_kernel_src_free(ctx, &src);
    fcp_plan_destroy(p);
    return text;
}

Test(codegen, shifted_slices_take_strips_or_tiles) {
    static const struct { const char *file, *want, *also; } cases[] = {
        {"w09_box_blur.fc", "// stencil: 9 shifted slices of one pad value in strips", "ts_in"},
    };
    fc_ctx *ctx = new_ctx();
    cr_assert_not_null(ctx);
    fc_scope_open(ctx);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/bench/fc/%s", FUSEC_SOURCE_DIR, cases[c].file);
        fc_program *prog = NULL;
        cr_assert_eq(fc_program_load(ctx, path, &prog), FC_OK, "%s: %s", path, fc_errmsg(ctx));
        fc_array *out = NULL;
        cr_assert_eq(fc_program_num_outputs(prog), 1);
        cr_assert_eq(fc_program_build(prog, NULL, &out), FC_OK, "%s: %s", path, fc_errmsg(ctx));
        char *src = one_kernel_source(ctx, out);
        cr_assert(strstr(src, cases[c].want) != NULL, "%s: no line \"%s\" in:\n%.600s", path,
                  cases[c].want, src);
        cr_assert(strstr(src, cases[c].also) != NULL && strstr(src, "tt_tile") == NULL, "%s",
                  path);
        fcg_strfree(ctx, src);
        fc_program_destroy(prog);
    }
    {
        char path[1024];
        snprintf(path, sizeof path, "%s/bench/fc/i13_laplacian.fc", FUSEC_SOURCE_DIR);
        fc_program *prog = NULL;
        cr_assert_eq(fc_program_load(ctx, path, &prog), FC_OK, "%s: %s", path, fc_errmsg(ctx));
        fc_array *out = NULL;
        cr_assert_eq(fc_program_build(prog, NULL, &out), FC_OK, "%s: %s", path, fc_errmsg(ctx));
        char *lsrc = one_kernel_source(ctx, out);
        cr_assert(strstr(lsrc, "// stencil: ") == NULL && strstr(lsrc, "tt_tile") == NULL &&
                      strstr(lsrc, "ts_ok") == NULL, "the Laplacian of a buffer took tiles or "
                  "strips:\n%.600s", lsrc);
        fcg_strfree(ctx, lsrc);
        fc_program_destroy(prog);
    }
    float v[64] = {0};
    fc_array *x = fc_from_host(ctx, FC_F32, FC_SHAPE(8, 8), v);
    /* taps of a computed value: tiles */
    fc_array *sx = fc_sqrt(x);
    fc_array *three = fc_add(fc_add(fc_slice(sx, FC_S(0, 6, 1), FC_COLON),
                                    fc_slice(sx, FC_S(1, 7, 1), FC_COLON)),
                             fc_slice(sx, FC_S(2, 8, 1), FC_COLON));
    char *src = one_kernel_source(ctx, three);
    cr_assert(strstr(src, "// stencil: 3 shifted slices of one sqrt value through shared-memory "
                          "tiles") != NULL && strstr(src, "tt_tile") != NULL, "%.600s", src);
    fcg_strfree(ctx, src);
    fc_array *two =
        fc_add(fc_slice(x, FC_S(0, 7, 1), FC_COLON), fc_slice(x, FC_S(1, 8, 1), FC_COLON));
    src = one_kernel_source(ctx, two);
    cr_assert(strstr(src, "// stencil: ") == NULL && strstr(src, "tt_tile") == NULL &&
                  strstr(src, "ts_ok") == NULL, "two slices took tiles or strips");
    fcg_strfree(ctx, src);
    fc_ctx_destroy(ctx);
}

/* The plan of bench/fc/<name>.fc (its inputs at their sizes there), of one kernel, and its
 * generated source; *prog and *p are for the caller to destroy. */
static void bench_kernel(fc_ctx *ctx, const char *name, fc_program **prog, fcp_plan **p,
                         fcx_kernel_src *k) {
    char path[1024];
    snprintf(path, sizeof path, "%s/bench/fc/%s.fc", FUSEC_SOURCE_DIR, name);
    *prog = NULL;
    cr_assert_eq(fc_program_load(ctx, path, prog), FC_OK, "%s: %s", path, fc_errmsg(ctx));
    fc_array *outs[3];
    int nout = fc_program_num_outputs(*prog);
    cr_assert(nout >= 1 && nout <= 3);
    cr_assert_eq(fc_program_build(*prog, NULL, outs), FC_OK, "%s: %s", path, fc_errmsg(ctx));
    *p = NULL;
    cr_assert_eq(fcp_plan_build(ctx, outs, nout, p), FC_OK, "%s: %s", name, fc_errmsg(ctx));
    cr_assert_eq((*p)->nkernel, 1, "%s: %d kernels", name, (*p)->nkernel);
    cr_assert_eq(fcx_generate(ctx, &(*p)->kernels[0], k), FC_OK, "%s: %s", name, fc_errmsg(ctx));
}

/* The strategy of the one kernel of bench/fc/<name>.fc, and its source in *src. */
static fcx_strategy bench_strategy(fc_ctx *ctx, const char *name, char **src) {
    fc_program *prog;
    fcp_plan *p;
    fcx_kernel_src k;
    bench_kernel(ctx, name, &prog, &p, &k);
    fcx_strategy st = k.strategy;
    *src = k.src;
    k.src = NULL;
    fcx_kernel_src_free(ctx, &k);
    fcp_plan_destroy(p);
    fc_program_destroy(prog);
    return st;
}

/* Issue 13: an elementwise op over a batched transpose of the last two axes reads it through
 * shared-memory tiles, 16-byte vectors on both sides; a contiguous op (an f16 GELU chain) and an outer product stay grid-stride, and the
 * outer product, which reads nothing at the flat index, still stores 16 bytes at a time with
 * its coordinates carried, not divided, element by element. */
Test(codegen, transposed_reads_go_through_tiles_and_outer_products_store_wide) {
    fc_ctx *ctx = new_ctx();
    cr_assert_not_null(ctx);
    fc_scope_open(ctx);
    char *src = NULL;
    cr_assert_eq(bench_strategy(ctx, "i13_transpose_ew", &src), FCX_STRATEGY_EW_TILE);
    /* 64 x 64 tiles moved as 16-byte vectors both ways */
    cr_assert_not_null(strstr(src, "__shared__ fcx_vec<fcx_t_f32, 4> fcx_tile0[1024];"), "%s", src);
    cr_assert_not_null(strstr(src, "fcx_tile_put<4, 16>(fcx_tile0, "), "%s", src);
    cr_assert_not_null(strstr(src, "fcx_tile_store<4>((fcx_t_f32 *)p.ptr[1] + i0, wv0, fcx_vl, "
                                   "nl);"), "%s", src);
    fcg_strfree(ctx, src);
    cr_assert_eq(bench_strategy(ctx, "i13_gelu_f16", &src), FCX_STRATEGY_EW);
    fcg_strfree(ctx, src);
    cr_assert_eq(bench_strategy(ctx, "i13_outer", &src), FCX_STRATEGY_EW);
    cr_assert_not_null(strstr(src, "((fcx_vec<fcx_t_f32, 4> *)p.ptr[2])[q] = w0;"), "%s", src);
    cr_assert_not_null(strstr(src, "if (++k1 == "), "%s", src);
    fcg_strfree(ctx, src);
    fc_ctx_destroy(ctx);
}

/* The launch of the one kernel of bench/fc/<name>.fc on a device of 132 multiprocessors
 * holding 8 blocks each; *steps gets its recipe's ew_thread_steps. */
static fcx_launch bench_launch(fc_ctx *ctx, const char *name, int *steps) {
    fc_program *prog;
    fcp_plan *p;
    fcx_kernel_src k;
    bench_kernel(ctx, name, &prog, &p, &k);
    fcx_launch lc;
    fcx_launch_config(&p->kernels[0], &k, 132, 8, &lc);
    *steps = k.ew_thread_steps;
    fcx_kernel_src_free(ctx, &k);
    fcp_plan_destroy(p);
    fc_program_destroy(prog);
    return lc;
}

/* Elementwise grids by kernel class (codegen/cuda.c, ew_grid_policy): streaming kernels a
 * 16-byte step a thread, kernels of a few instructions a byte four, steps that decode
 * coordinates (an outer product) and shifted-slice strips a grid that fills the device once
 * (132 x 8 blocks here), a transpose's tiles a block each; long rows' blocks by kernel kind. */
Test(codegen, launch_geometry_follows_the_kernel_class) {
    fc_ctx *ctx = new_ctx();
    cr_assert_not_null(ctx);
    fc_scope_open(ctx);
    const long long n = 67108864; /* the programs' 2^26 elements */
    int steps = -1;
    fcx_launch lc = bench_launch(ctx, "w10_saxpy", &steps);
    cr_assert_eq(steps, 1);
    cr_assert_eq(lc.grid, n / (256 * 4));
    lc = bench_launch(ctx, "i13_adam", &steps);
    cr_assert_eq(steps, 1);
    cr_assert_eq(lc.grid, n / (256 * 4));
    lc = bench_launch(ctx, "w01_tanh_sin", &steps);
    cr_assert_eq(steps, 4);
    cr_assert_eq(lc.grid, n / (256 * 4 * 4));
    lc = bench_launch(ctx, "i13_gelu_f16", &steps); /* pairs of f16, 8 a step */
    cr_assert_eq(steps, 4);
    cr_assert_eq(lc.grid, n / (256 * 8 * 4));
    lc = bench_launch(ctx, "i13_outer", &steps);
    cr_assert_eq(steps, 0);
    cr_assert_eq(lc.grid, 132 * 8);
    lc = bench_launch(ctx, "w09_box_blur", &steps);
    cr_assert_eq(steps, 0);
    cr_assert_eq(lc.grid, 132 * 8);
    lc = bench_launch(ctx, "i13_transpose_ew", &steps); /* [64, 1024, 1024] f32 in 64 x 64 tiles */
    cr_assert_eq(steps, 0);
    cr_assert_eq(lc.grid, n / (64 * 64));
    /* long rows: statistics (reduce kernels) in blocks of 256, a layer norm's rows of 512 */
    lc = bench_launch(ctx, "i13_bn_stats", &steps);
    cr_assert_eq(lc.block, 256);
    lc = bench_launch(ctx, "i13_mean_std_rows", &steps);
    cr_assert_eq(lc.block, 256);
    lc = bench_launch(ctx, "i13_layernorm_32k", &steps);
    cr_assert_eq(lc.block, 512);
    fc_ctx_destroy(ctx);
}

/* Past 2^31 elements indexing becomes 64-bit: only the index type's lines change. */
Test(codegen, index_width_follows_the_size_class) {
    fc_ctx *ctx = new_ctx();
    cr_assert_not_null(ctx);
    fc_scope_open(ctx);
    fc_array *o32[1], *o64[1];
    wl_w01_tanh_sin(ctx, (const int64_t[]){(int64_t)1 << 26}, o32);
    wl_w01_tanh_sin(ctx, (const int64_t[]){(int64_t)1 << 32}, o64);
    fcp_plan *p32, *p64;
    cr_assert_eq(fcp_plan_build(ctx, o32, 1, &p32), FC_OK);
    cr_assert_eq(fcp_plan_build(ctx, o64, 1, &p64), FC_OK);
    fcx_kernel_src a, b;
    cr_assert_eq(fcx_generate(ctx, &p32->kernels[0], &a), FC_OK);
    cr_assert_eq(fcx_generate(ctx, &p64->kernels[0], &b), FC_OK);
    cr_assert(!a.idx64 && b.idx64);
    cr_assert_not_null(strstr(a.src, "typedef int idx_t;"));
    cr_assert_not_null(strstr(b.src, "typedef long long idx_t;"));
    cr_assert_str_neq(a.src, b.src);
    fcx_kernel_src_free(ctx, &a);
    fcx_kernel_src_free(ctx, &b);
    fcp_plan_destroy(p32);
    fcp_plan_destroy(p64);
    fc_ctx_destroy(ctx);
}

/* ---- through the kernel cache ------------------------------------------------------------ */

/* The W1 kernel of a fresh context with cache_dir `dir`, through fcx_get_binary. */
static fc_status cached_w01(const char *dir, fcx_binary *out, char *msg, size_t msg_size) {
    fc_ctx *ctx = NULL;
    fc_ctx_options o = {0};
    o.backend = FC_BACKEND_HOST;
    o.cache_dir = dir;
    if (fc_ctx_create(&ctx, &o) != FC_OK) return FC_ERR_NOMEM;
    fc_scope_open(ctx);
    fc_array *outs[1];
    wl_w01_tanh_sin(ctx, (const int64_t[]){1 << 20}, outs);
    fcp_plan *p = NULL;
    fc_status st = fcp_plan_build(ctx, outs, 1, &p);
    fcx_kernel_src src;
    memset(&src, 0, sizeof src);
    fcc_cache *cache = NULL;
    if (st == FC_OK) st = fcx_generate(ctx, &p->kernels[0], &src);
    if (st == FC_OK) st = fcx_cache(ctx, &cache);
    if (st == FC_OK) st = fcx_get_binary(ctx, cache, &src, "sm_80", out, msg, msg_size);
    if (st == FC_OK && out->size >= 4 && memcmp(out->cubin, "\177ELF", 4) != 0) st = FC_ERR_INVALID;
    fcx_kernel_src_free(ctx, &src);
    fcp_plan_destroy(p);
    fc_ctx_destroy(ctx);
    return st;
}

Test(codegen, kernels_go_through_the_disk_cache) {
    char dir[] = "/tmp/fusec-test-codegen-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char msg[1024] = "";
    fcx_binary b;
    fc_status st = cached_w01(dir, &b, msg, sizeof msg);
    cr_assert_eq(st, FC_OK, "first compile: %s: %s", fc_strerror(st), msg);
    cr_assert(b.compiled, "an empty cache cannot hold the kernel");
    /* Another process finds it on disk. */
    char arg[200];
    snprintf(arg, sizeof arg, "--fusec-helper=cache:%s", dir);
    int status;
    char *out = run_self(arg, &status);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "helper: %s", out);
    cr_assert_str_eq(out, "found\n", "another process: %s", out);
    free(out);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

/* ---- the prelude's optional parts ----------------------------------------------------- */

static unsigned part_bit(const char *name) {
    for (int i = 0; i < fcx_prelude_parts_count(); i++)
        if (strcmp(fcx_prelude_part_name(i), name) == 0) return 1u << i;
    cr_assert_fail("the prelude has no part %s", name);
    return 0;
}

static unsigned needs(const char *text) { return fcx_prelude_parts_needed(text, strlen(text)); }

/* The production source of workload w's first kernel at its small size (freed by the caller). */
static char *workload_source(fc_ctx *ctx, const wl_workload *w) {
    fc_array *outs[WL_MAX_OUT];
    int n = w->build(ctx, w->small, outs);
    fcp_plan *p = NULL;
    cr_assert_eq(fcp_plan_build(ctx, outs, n, &p), FC_OK, "%s", fc_errmsg(ctx));
    fcx_kernel_src src;
    cr_assert_eq(fcx_generate(ctx, &p->kernels[0], &src), FC_OK, "%s", fc_errmsg(ctx));
    char *text = strdup(src.src);
    cr_assert_not_null(text);
    fcx_kernel_src_free(ctx, &src);
    fcp_plan_destroy(p);
    return text;
}

/* A kernel gets the optional parts of the prelude it names and no others: NVRTC's front end
 * then skips the rest (a fixed cost of every compile; SASS identical). Batches above compile
 * each kernel against exactly its parts; this checks that the parts are left out at all. */
Test(codegen, kernels_get_the_prelude_parts_they_name) {
    cr_assert_eq(fcx_prelude_parts_count(), 6);
    unsigned complex = part_bit("COMPLEX"), random = part_bit("RANDOM"), block = part_bit("BLOCK");
    unsigned pairs = part_bit("PAIRS"), index = part_bit("INDEX"), reduce = part_bit("REDUCE");
    cr_assert_eq(needs("const fcx_ct_f32 v0 = fcx_tanh(fcx_load_f32(p));"), 0u);
    cr_assert_eq(needs("const fcx_ct_c128 v0 = fcx_abs(x);"), complex);
    cr_assert_eq(needs("fcx_cast_c64(x)"), complex);
    /* the storage type alone is no complex value (a 16-byte word of shared memory) */
    cr_assert_eq(needs("__shared__ fcx_t_c128 fcx_xchw[4];"), 0u);
    cr_assert_eq(needs("fcx_rand_uniform_f32(s, t, i)") & random, random);
    cr_assert_eq(needs("fcx_scatter_i8(p, v, op)") & index, index); /* fcx_scatter_##D makes it */
    cr_assert_eq(needs("if (x < FCX_WARP) fcx_shfl_down(v, 1);") & block, block);
    cr_assert_eq(needs("fcx_h2 h;") & pairs, pairs);
    cr_assert_eq(needs("fcx_identity_max<float>()") & reduce, reduce);
    /* names in comments and strings are not used */
    cr_assert_eq(needs("/* fcx_rand_uniform_f32 */ // FCX_WARP\n\"fcx_h2\" 'x'"), 0u);
    /* op names belong to no part, though parts overload them (fcx_exp of complex) or call
     * them (fcx_greater in argmax's combine) */
    cr_assert_eq(needs("fcx_exp(x) + fcx_greater(a, b) + fcx_less_equal(a, b)"), 0u);

    /* The production source says which in front of the prelude: W1 needs none, W8 complex. */
    fc_ctx *ctx = new_ctx();
    cr_assert_not_null(ctx);
    fc_scope_open(ctx);
    for (int i = 0; i < WL_COUNT; i++) {
        bool w1 = strcmp(wl_workloads[i].name, "w01_tanh_sin") == 0;
        bool w8 = strcmp(wl_workloads[i].name, "w08_mandelbrot") == 0;
        if (!w1 && !w8) continue;
        char *src = workload_source(ctx, &wl_workloads[i]);
        const char *pre = strstr(src, fcx_prelude_source);
        cr_assert_not_null(pre);
        for (int p = 0; p < fcx_prelude_parts_count(); p++) {
            char line[64];
            snprintf(line, sizeof line, "#define FCX_PART_%s 0\n", fcx_prelude_part_name(p));
            const char *at = strstr(src, line);
            bool out = at && at < pre;
            cr_assert_eq(out, w1 || (1u << p) != complex, "%s: part %s is %s",
                         wl_workloads[i].name, fcx_prelude_part_name(p), out ? "out" : "in");
        }
        free(src);
    }
    fc_ctx_destroy(ctx);
}

/* ---- main: Criterion, or a helper mode for the cross-process tests ----------------------- */

int main(int argc, char *argv[]) {
    if (argc == 2 && strcmp(argv[1], "--fusec-helper=fingerprint") == 0) {
        fingerprint(stdout);
        return 0;
    }
    if (argc == 2 && strncmp(argv[1], "--fusec-helper=cache:", 21) == 0) {
        char msg[1024] = "";
        fcx_binary b;
        fc_status st = cached_w01(argv[1] + 21, &b, msg, sizeof msg);
        if (st != FC_OK) printf("error %s: %s\n", fc_strerror(st), msg);
        else printf("%s\n", b.compiled ? "compiled" : "found");
        return 0;
    }
    struct criterion_test_set *tests = criterion_initialize();
    int result = 0;
    if (criterion_handle_args(argc, argv, true)) result = !criterion_run_all_tests(tests);
    criterion_finalize(tests);
    return result;
}

/* Whether the bytes of `what` appear in data[0..size). */
static bool bytes_contain(const unsigned char *data, size_t size, const char *what) {
    size_t n = strlen(what);
    for (size_t i = 0; i + n <= size; i++)
        if (memcmp(data + i, what, n) == 0) return true;
    return false;
}

/* The radix sort kernels (codegen/sort.cuh) compile for each kind of key, with
 * the options raw modules get (backend/cuda_sort.c compiles them as one), and every kernel
 * backend/cuda_sort.c looks up is in the cubin. */
Test(codegen, sort_kernels_compile_for_each_key_kind) {
    fc_ctx *ctx = new_ctx();
    cr_assert_not_null(ctx);
    static const char *const kernels[] = {"fcs_rows", "fcs_zero", "fcs_hist", "fcs_scan",
                                          "fcs_pass", "fcs_pass_idx"};
    double ms = 0;
    /* One dtype of each kind of key (unsigned, signed, each float format, complex) and each
     * word size: the others differ from one of these only in constants (and the GPU tests
     * compile every dtype); NVRTC takes a second or two a module. f32 for sm_80 too. */
    static const fc_dtype dts[] = {FC_BOOL, FC_I16, FC_F16, FC_BF16, FC_F32, FC_U64, FC_F64,
                                   FC_C128};
    for (size_t di = 0; di < sizeof dts / sizeof *dts; di++) {
        fc_dtype t = dts[di];
        char *src = NULL;
        cr_assert_eq(fcx_sort_source(ctx, t, &src), FC_OK, "%s", fc_errmsg(ctx));
        for (int a = t == FC_F32 ? 0 : 1; a < 2; a++) {
            fcn_cubin c;
            double t0 = now_ms();
            fc_status st = fcn_compile(ctx, src, "sort.cu", ARCHS[a], FCN_RAW, NULL, 0, &c);
            ms += now_ms() - t0;
            cr_assert_eq(st, FC_OK, "sort kernels for %s, %s: %s", fc_dtype_name(t),
                         ARCHS[a], c.message ? c.message : fc_errmsg(ctx));
            check_cubin(&c, ARCHS[a]);
            for (size_t k = 0; k < sizeof kernels / sizeof *kernels; k++)
                cr_expect(bytes_contain(c.data, c.size, kernels[k]),
                          "%s: %s not in the %s cubin", fc_dtype_name(t), kernels[k],
                          ARCHS[a]);
            fcn_cubin_free(ctx, &c);
        }
        fcg_strfree(ctx, src);
    }
    fprintf(stderr, "codegen: sort kernels for %d dtypes (sm_90; f32 for sm_80 too): "
            "%.0f ms of NVRTC\n", (int)(sizeof dts / sizeof *dts), ms);
    fc_ctx_destroy(ctx);
}

/* A raw module of fusec's own (its source from make, twice: the same bytes every time, one
 * cache key) compiles with the options raw modules get, for each arch, and the cubin holds
 * every one of its n entry points, which the backend looks up. */
static void raw_module_compiles(fc_status (*make)(fc_ctx *, char **), const char *file,
                                const char *const *names, int n) {
    fc_ctx *ctx = new_ctx();
    cr_assert_not_null(ctx);
    char *src = NULL, *again = NULL;
    cr_assert_eq(make(ctx, &src), FC_OK, "%s", fc_errmsg(ctx));
    cr_assert_eq(make(ctx, &again), FC_OK);
    cr_expect_str_eq(src, again);
    for (int a = 0; a < 2; a++) {
        fcn_cubin c;
        fc_status st = fcn_compile(ctx, src, file, ARCHS[a], FCN_RAW, NULL, 0, &c);
        cr_assert_eq(st, FC_OK, "%s for %s: %s", file, ARCHS[a],
                     c.message ? c.message : fc_errmsg(ctx));
        check_cubin(&c, ARCHS[a]);
        for (int f = 0; f < n; f++)
            cr_expect(bytes_contain(c.data, c.size, names[f]), "%s not in the %s cubin", names[f],
                      ARCHS[a]);
        fcn_cubin_free(ctx, &c);
    }
    fcg_strfree(ctx, src);
    fcg_strfree(ctx, again);
    fc_ctx_destroy(ctx);
}

/* The triangle copy kernels (codegen/tri.c: one module for every element size), with
 * backend/cuda_lib.c's entry points. */
Test(codegen, tri_kernels_compile) {
    cr_expect(fcx_tri_function(4) == 0 && fcx_tri_function(8) == 1 && fcx_tri_function(16) == 2 &&
              fcx_tri_function(2) == -1 && fcx_tri_function(1) == -1);
    raw_module_compiles(fcx_tri_source, "tri.cu", fcx_tri_functions, 3);
}

/* The helper kernels of batched linear algebra (codegen/batched.c: pointer arrays, strided
 * moves of every word size, the marks of eigenvalues that are not finite; one module), with
 * backend/cuda_batched.c's entry points. */
Test(codegen, batched_kernels_compile) {
    cr_expect(fcx_batched_move(4) == FCX_BATCHED_MOVE4 &&
              fcx_batched_move(8) == FCX_BATCHED_MOVE4 + 1 &&
              fcx_batched_move(16) == FCX_BATCHED_MOVE4 + 2 && fcx_batched_move(2) == -1 &&
              fcx_batched_move(12) == -1);
    raw_module_compiles(fcx_batched_source, "batched.cu", fcx_batched_functions,
                        FCX_BATCHED_COUNT);
}

/* The stencil kernel (codegen/stencil.c) compiles with NVRTC in each of its variants (tiled
 * and unrolled, tiled with loops, untiled; 32- and 64-bit indices; each boundary) and dtype
 * class, with the options raw modules get, and the cubin holds its entry point. */
Test(codegen, stencil_kernels_compile) {
    fc_ctx *ctx = new_ctx();
    cr_assert_not_null(ctx);
    static const struct {
        fc_dtype t;
        int64_t kh, kw, n;
        int boundary;
    } cases[] = {{FC_F32, 3, 3, 4096, FC_CONV_FILL}, {FC_F32, 31, 31, 4096, FC_CONV_SYMM},
                 {FC_F64, 100, 100, 300, FC_CONV_WRAP}, {FC_C64, 5, 4, 64, FC_CONV_SYMM},
                 {FC_C128, 2, 2, 64, FC_CONV_FILL},    {FC_I8, 3, 3, 64, FC_CONV_WRAP},
                 {FC_U64, 4, 1, 64, FC_CONV_FILL},     {FC_F32, 3, 3, 50000, FC_CONV_WRAP}};
    double ms = 0;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        fcx_stencil s;
        int64_t n = cases[i].n;
        fcx_stencil_plan(&s, cases[i].t, cases[i].kh, cases[i].kw, cases[i].kh / 2,
                         cases[i].kw / 2, cases[i].boundary, n, n, n, n);
        char *src = NULL;
        cr_assert_eq(fcx_stencil_source(ctx, &s, "fcv_stencil", &src), FC_OK, "%s",
                     fc_errmsg(ctx));
        fcn_cubin c;
        double t0 = now_ms();
        fc_status st = fcn_compile(ctx, src, "stencil.cu", ARCHS[1], FCN_RAW, NULL, 0, &c);
        ms += now_ms() - t0;
        cr_assert_eq(st, FC_OK, "stencil case %zu: %s", i, c.message ? c.message : fc_errmsg(ctx));
        check_cubin(&c, ARCHS[1]);
        cr_expect(bytes_contain(c.data, c.size, "fcv_stencil"), "case %zu: no entry point", i);
        fcn_cubin_free(ctx, &c);
        fcg_strfree(ctx, src);
    }
    fprintf(stderr, "codegen: %d stencil kernels (sm_90): %.0f ms of NVRTC\n",
            (int)(sizeof cases / sizeof *cases), ms);
    fc_ctx_destroy(ctx);
}
