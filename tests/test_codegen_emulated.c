/*
 * test_codegen_emulated.c - generated kernels compute what the host reference backend
 * computes, checked on a machine without a GPU.
 *
 * NVRTC can say that a kernel compiles, not that it is right. Here the generated CUDA C is
 * compiled as host C++ instead: the device prelude has a host mode (FCX_HOST, the one
 * tests/test_prelude.cpp checks op by op), and a small shim gives the CUDA built-ins a host
 * meaning: a block of T threads is T POSIX threads, __shared__ arrays are statics shared by
 * them, __syncthreads() is a barrier, and the G blocks of a grid run one after another. Each
 * program's kernels then run in plan order over real buffers (filled with 0xA5 first, so an
 * element no kernel writes shows up), with the arguments the launch recipe's slots name, and
 * every output is compared with fc_eval on the host backend. A library call (matmul) takes its
 * value from the host backend.
 *
 * What this catches that compiling cannot: wrong index arithmetic for views and broadcasts,
 * wrong dtype conversions and rounding, reductions that drop or repeat elements, buffers that
 * alias, kernels run out of order, block reductions that depend on the thread count. Programs:
 * the workloads of WORKLOADS.md at small sizes with random data, a few regressions, and 1,000
 * random DAGs (tests/random_dag.c), half with one thread in one block, half with 8 threads in
 * each of 3 blocks.
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
    "static const fcx_dim3 blockDim = {EMU_THREADS, 1, 1}, gridDim = {EMU_BLOCKS, 1, 1};\n"
    "static pthread_barrier_t emu_barrier;\n"
    "#define __global__\n"
    "#define __launch_bounds__(n)\n"
    "#define __shared__ static\n"
    "static inline void __syncthreads(void) { if (EMU_THREADS > 1) pthread_barrier_wait(&emu_barrier); }\n"
    "struct emu_arg { void (*fn)(const void *); const void *p; unsigned block, thread; };\n"
    "static void *emu_thread(void *x) {\n"
    "    emu_arg *a = (emu_arg *)x;\n"
    "    blockIdx.x = a->block;\n"
    "    threadIdx.x = a->thread;\n"
    "    a->fn(a->p);\n"
    "    return 0;\n"
    "}\n"
    "static int emu_launch(void (*fn)(const void *), const void *p) {\n"
    "    if (EMU_THREADS == 1) {\n"
    "        for (unsigned b = 0; b < EMU_BLOCKS; b++) { blockIdx.x = b; threadIdx.x = 0; fn(p); }\n"
    "        return 0;\n"
    "    }\n"
    "    if (pthread_barrier_init(&emu_barrier, 0, EMU_THREADS)) return -1;\n"
    "    int rc = 0;\n"
    "    for (unsigned b = 0; b < EMU_BLOCKS; b++) {\n"
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
    "    return rc;\n"
    "}\n";

/* One emulated kernel: called with the pointer, integer and float arguments. */
typedef int (*emu_call)(const void *const *ptr, const long long *ints, const double *flts);

/* ---- programs and their kernels ------------------------------------------------------------ */

typedef struct program {
    char name[96];
    bool random;
    uint64_t seed;
    int nout;
    fc_array *out[WL_MAX_OUT]; /* references the program holds */
    fcp_plan *plan;
    int first;                 /* index of its first kernel in the kernel table */
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
} emu_set;

static void set_open(emu_set *s, const char *tag, int threads, int blocks) {
    memset(s, 0, sizeof *s);
    fc_ctx_options o = {0};
    o.backend = FC_BACKEND_HOST;
    cr_assert_eq(fc_ctx_create(&s->ctx, &o), FC_OK);
    snprintf(s->cpp_path, sizeof s->cpp_path, "%s/tests/emulated_%s_%d.cpp", FUSEC_BINARY_DIR, tag,
             (int)getpid());
    snprintf(s->so_path, sizeof s->so_path, "%s/tests/emulated_%s_%d.so", FUSEC_BINARY_DIR, tag,
             (int)getpid());
    s->cpp = fopen(s->cpp_path, "w");
    cr_assert_not_null(s->cpp, "cannot write %s", s->cpp_path);
    fprintf(s->cpp, "#define FCX_HOST\n#define EMU_THREADS %d\n#define EMU_BLOCKS %d\n", threads,
            blocks);
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
        const fcp_kernel *kern = &p->plan->kernels[k];
        if (kern->kind == FCP_KERNEL_LIB) continue;
        char kname[32];
        snprintf(kname, sizeof kname, "k%d", index);
        st = fcx_generate_named(s->ctx, kern, kname, false, src);
        cr_assert_eq(st, FC_OK, "%s kernel %d: %s", name, k, fc_errmsg(s->ctx));
        fputs(src->src, s->cpp);
        fprintf(s->cpp,
                "static void emu_tramp_%s(const void *q) { %s::%s(*(const %s::fcx_params *)q); }\n"
                "extern \"C\" int emu_%s(const void *const *ptr, const long long *ints, "
                "const double *flts) {\n"
                "    %s::fcx_params p;\n"
                "    memcpy((void *)p.ptr, ptr, sizeof p.ptr);\n"
                "    memcpy(p.i, ints, %d * sizeof(long long));\n"
                "    memcpy(p.f, flts, %d * sizeof(double));\n"
                "    return emu_launch(emu_tramp_%s, &p);\n"
                "}\n",
                kname, kname, kname, kname, kname, kname, src->nint, src->nflt, kname);
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
        execlp(cxx, cxx, "-std=c++17", "-O1", "-w", "-shared", "-fPIC", "-pthread", "-o",
               s->so_path, s->cpp_path, (char *)NULL);
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

static bool close_enough(fc_dtype t, double got, double want) {
    if (isnan(got) || isnan(want)) return isnan(got) && isnan(want);
    if (isinf(got) || isinf(want)) return got == want;
    double tol = t == FC_F16 || t == FC_BF16 ? 2e-2 : t == FC_F32 || t == FC_C64 ? 1e-4 : 1e-6;
    return fabs(got - want) <= tol * (fabs(want) + 1e-30) || fabs(got - want) <= tol * 1e-3;
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
    cr_assert_not_null(slot);
    for (int b = 0; b < plan->nbuf; b++) {
        slot[b] = malloc(plan->buf_bytes[b] + 16);
        cr_assert_not_null(slot[b]);
        memset(slot[b], 0xA5, plan->buf_bytes[b] + 16);
    }
    for (int m = 0; m < plan->nmat; m++) buf[m] = slot[plan->mat_buf[m]];
    char *report = NULL;
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
        cr_assert(ptr && ints && flts);
        for (int l = 0; l < kern->nleaf; l++) {
            const fc_array *a = kern->leaves[l];
            ptr[l] = a->host;
            for (int m = 0; m < plan->nmat; m++)
                if (plan->mat[m] == a) ptr[l] = buf[m];
            cr_assert_not_null(ptr[l], "%s kernel %d: leaf %d has no buffer", p->name, k, l);
        }
        for (int q = 0; q < kern->nout; q++)
            for (int m = 0; m < plan->nmat; m++)
                if (plan->mat[m] == kern->outs[q]) ptr[kern->nleaf + q] = buf[m];
        for (int i = 0; i < src->nint; i++) ints[i] = int_arg(kern, &src->islots[i]);
        for (int i = 0; i < src->nflt; i++) flts[i] = float_arg(kern, &src->fslots[i]);
        char sym[40];
        snprintf(sym, sizeof sym, "emu_k%d", p->first + k);
        emu_call fn = (emu_call)(uintptr_t)dlsym(s->so, sym);
        cr_assert_not_null(fn, "no symbol %s", sym);
        cr_assert_eq(fn(ptr, ints, flts), 0, "%s kernel %d: the emulated launch failed", p->name, k);
        free(ptr);
        free(ints);
        free(flts);
    }
    /* Compare each output that a kernel stored with the host backend's value. */
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
        fc_status st = fc_to_host(y, want, bytes);
        cr_assert_eq(st, FC_OK, "%s output %d: host backend: %s", p->name, o, fc_errmsg(s->ctx));
        fc_dtype t = (fc_dtype)y->dtype;
        int64_t n = (int64_t)fcg_node_numel(y), bad = 0, first = -1;
        for (int64_t i = 0; i < n; i++) {
            bool ok;
            if (!fcg_is_inexact(t)) {
                ok = integral_equal(t, got, want, i);
            } else {
                double gr, gi, wr, wi;
                element(t, got, i, &gr, &gi);
                element(t, want, i, &wr, &wi);
                ok = close_enough(t, gr, wr) && close_enough(t, gi, wi);
            }
            if (!ok && bad++ == 0) first = i;
        }
        if (bad) {
            double gr, gi, wr, wi;
            element(t, got, first, &gr, &gi);
            element(t, want, first, &wr, &wi);
            char *desc = fcp_plan_describe(plan);
            char *text = NULL;
            fc_program_print(s->ctx, p->out, p->nout, NULL, &text);
            size_t len = 0;
            FILE *m = open_memstream(&report, &len);
            fprintf(m, "%s: output %d (%s, %lld elements): %lld differ; first at flat index %lld: "
                       "kernel %.17g%+.17gi, host %.17g%+.17gi\nprogram:\n%s\n%s",
                    p->name, o, fc_dtype_name(t), (long long)n, (long long)bad, (long long)first,
                    gr, gi, wr, wi, text ? text : "?", desc ? desc : "");
            fclose(m);
            fc_free(s->ctx, text);
            fcg_strfree(s->ctx, desc);
        }
        free(want);
    }
    for (int b = 0; b < plan->nbuf; b++) free(slot[b]);
    free(slot);
    free(buf);
    return report;
}

/* Runs every program of the set, then closes it; fails with the first few mismatches (the
 * report is kept in a static buffer, so that failing leaks nothing). */
static void set_run_and_close(emu_set *s) {
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
    set_close(s);
    if (failures)
        cr_assert_fail("%d of %d programs differ from the host backend; the first:\n%s", failures,
                       nprog, first);
}

/* ---- the tests ------------------------------------------------------------------------------ */

static void emulate_workloads(int threads, int blocks) {
    emu_set s;
    char tag[32];
    snprintf(tag, sizeof tag, "workloads_t%d", threads);
    set_open(&s, tag, threads, blocks);
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

Test(emulated, workloads_one_thread, .timeout = 300) { emulate_workloads(1, 1); }
Test(emulated, workloads_eight_threads_three_blocks, .timeout = 300) { emulate_workloads(8, 3); }

/* Programs that once went wrong. */
Test(emulated, regressions, .timeout = 300) {
    emu_set s;
    set_open(&s, "regressions", 4, 2);
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
    set_build(&s);
    set_run_and_close(&s);
}

static void emulate_random(uint64_t lo, uint64_t hi, int threads, int blocks) {
    emu_set s;
    char tag[32];
    snprintf(tag, sizeof tag, "random_%llu", (unsigned long long)lo);
    set_open(&s, tag, threads, blocks);
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
    set_run_and_close(&s);
}

Test(emulated, random_dags_0_499_one_thread, .timeout = 300) { emulate_random(0, 500, 1, 1); }
Test(emulated, random_dags_500_999_eight_threads, .timeout = 300) { emulate_random(500, 1000, 8, 3); }
