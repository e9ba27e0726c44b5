/*
 * test_fusion.c - fusion grouping (passes/fuse.c): how many kernels a program compiles to, of
 * which kinds, what they load, and why a boundary was put where it was.
 *
 * The benchmark workloads W1-W12 are built at their full sizes with placeholder inputs (no
 * memory: tests/workloads.h), since fusion rules depend on sizes (a ROW kernel needs its row
 * on chip). The benchmark programs (bench/fc/, .fc files) are parsed and must plan the same way, and
 * the graphs built here in C must hash equal to them. On a failed count the plan's description
 * (fcp_plan_describe: kernels, fused ops, boundaries and reasons) is in the message.
 */
#include <criterion/criterion.h>

#include <fusec.h>

#include "graph.h"
#include "plan.h"
#include "workloads.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static fc_ctx *ctx;

static void setup(void) {
    fc_ctx_options o = {0};
    o.backend = FC_BACKEND_HOST;
    cr_assert_eq(fc_ctx_create(&ctx, &o), FC_OK);
    cr_assert_not_null(fc_scope_open(ctx));
}

static void teardown(void) {
    fc_ctx_destroy(ctx);
    ctx = NULL;
}

TestSuite(fusion, .init = setup, .fini = teardown);

/* ---- helpers ---------------------------------------------------------------------------- */

static void check_healthy(const char *what, fc_array *const *outs, int n) {
    for (int i = 0; i < n; i++)
        cr_assert_eq(fc_array_status(outs[i]), FC_OK, "%s: output %d is poisoned: %s", what, i,
                     fc_array_errmsg(outs[i]));
}

/* The plan of outs[0..n), asserted to build. The caller destroys it. */
static fcp_plan *plan_of(const char *what, fc_array *const *outs, int n) {
    check_healthy(what, outs, n);
    fcp_plan *p = NULL;
    fc_status st = fcp_plan_build(ctx, outs, n, &p);
    cr_assert_eq(st, FC_OK, "%s: fcp_plan_build: %s (%s)", what, fc_strerror(st), fc_errmsg(ctx));
    cr_assert_not_null(p);
    return p;
}

/* Asserts cond, with the plan's description in the message. On failure the message is
 * formatted first, then the plan is destroyed (the test ends there, and nothing leaks). */
static char plan_msg[32768];
#define plan_assert(p, cond, what, fmt, ...)                                                     \
    do {                                                                                         \
        if (!(cond)) {                                                                           \
            char *desc_ = fcp_plan_describe(p);                                                  \
            int len_ = snprintf(plan_msg, sizeof plan_msg, "%s: " fmt "\n", what, __VA_ARGS__);  \
            if (len_ > 0 && (size_t)len_ < sizeof plan_msg)                                      \
                snprintf(plan_msg + len_, sizeof plan_msg - (size_t)len_, "%s",                  \
                         desc_ ? desc_ : "(no description)");                                    \
            fcg_strfree(ctx, desc_);                                                             \
            fcp_plan_destroy(p);                                                                 \
            cr_assert_fail("%s", plan_msg);                                                      \
        }                                                                                        \
    } while (0)

static void check_plan(const char *what, fcp_plan *p);

static int count_kind(const fcp_plan *p, fcp_kernel_kind kind) {
    int n = 0;
    for (int i = 0; i < p->nkernel; i++) n += p->kernels[i].kind == kind;
    return n;
}

/* Plans, checks the kernel count is within [lo, hi], returns the plan. */
static fcp_plan *expect_kernels(const char *what, fc_array *const *outs, int n, int lo, int hi) {
    fcp_plan *p = plan_of(what, outs, n);
    plan_assert(p, p->nkernel >= lo && p->nkernel <= hi, what, "%d kernels, want %d..%d",
                p->nkernel, lo, hi);
    return p;
}

static bool has_boundary_reason(const fcp_plan *p, const char *needle) {
    for (int i = 0; i < p->nboundary; i++)
        if (p->boundaries[i].reason && strstr(p->boundaries[i].reason, needle)) return true;
    return false;
}

static const wl_workload *workload(const char *prefix) {
    for (int i = 0; i < WL_COUNT; i++)
        if (strncmp(wl_workloads[i].name, prefix, strlen(prefix)) == 0) return &wl_workloads[i];
    cr_assert_fail("no workload %s", prefix);
    return NULL;
}

/* Builds a workload at its full size into out; returns the output count. */
static int build_full(const wl_workload *w, fc_array **out) {
    int n = w->build(ctx, w->full, out);
    cr_assert_gt(n, 0, "%s: builder failed", w->name);
    check_healthy(w->name, out, n);
    return n;
}

/* ---- the workloads, one kernel each ----------------------------------------------------- */

/* Expected plan shape of each workload at its full size. */
typedef struct expect {
    const char *name;
    int lo, hi;         /* kernel count */
    int kind;           /* kind of the single kernel, or -1 */
    int leaves;         /* buffers the (single) kernel loads, or -1 */
} expect;

static const expect expects[] = {
    {"w01", 1, 1, FCP_KERNEL_EW, 1},
    {"w02", 1, 1, FCP_KERNEL_EW, 2},
    {"w03", 1, 2, -1, -1},
    {"w04", 1, 1, FCP_KERNEL_ROW, 1},
    {"w05", 1, 1, FCP_KERNEL_EW, 1},
    {"w06", 1, 1, FCP_KERNEL_REDUCE, 1},
    {"w07", 1, 2, -1, -1},
    {"w08", 1, 1, FCP_KERNEL_EW, 0},
    {"w09", 1, 1, FCP_KERNEL_EW, 1},
    {"w10", 1, 1, FCP_KERNEL_EW, 2},
    {"w11", 1, 1, FCP_KERNEL_REDUCE, 2},
    {"w12", 1, 1, FCP_KERNEL_LIB, 2},
};

static void check_expect(const expect *e, fc_array *const *outs, int n) {
    fcp_plan *p = expect_kernels(e->name, outs, n, e->lo, e->hi);
    if (e->lo == 1 && e->hi == 1) {
        const fcp_kernel *k = &p->kernels[0];
        plan_assert(p, (int)k->kind == e->kind, e->name, "kernel kind %s, want %s",
                    fcp_kernel_kind_names[k->kind], fcp_kernel_kind_names[e->kind]);
        plan_assert(p, e->leaves < 0 || k->nleaf == e->leaves, e->name,
                    "the kernel loads %d buffers, want %d (each input read once)", k->nleaf,
                    e->leaves);
        plan_assert(p, k->nout == n, e->name, "the kernel stores %d arrays, want %d", k->nout, n);
        /* One kernel: nothing is materialised but the outputs, and no boundary exists. */
        plan_assert(p, p->nboundary == 0, e->name, "%d boundaries in a single-kernel plan",
                    p->nboundary);
    }
    fcp_plan_destroy(p);
}

static void check_workload(const char *name) {
    const expect *e = NULL;
    for (size_t i = 0; i < sizeof expects / sizeof expects[0]; i++)
        if (strcmp(expects[i].name, name) == 0) e = &expects[i];
    cr_assert_not_null(e);
    fc_array *out[WL_MAX_OUT];
    int n = build_full(workload(name), out);
    check_expect(e, out, n);
}

Test(fusion, w01_tanh_sin_one_kernel) { check_workload("w01"); }
Test(fusion, w02_poly_one_kernel) { check_workload("w02"); }
Test(fusion, w03_sum) { check_workload("w03"); }
Test(fusion, w04_softmax_one_row_kernel) { check_workload("w04"); }
Test(fusion, w05_leaky_relu_one_kernel) { check_workload("w05"); }
Test(fusion, w06_row_l2norm_one_reduce_kernel) { check_workload("w06"); }
Test(fusion, w07_normalize_cols_at_most_two) { check_workload("w07"); }
Test(fusion, w08_mandelbrot_one_kernel) { check_workload("w08"); }
Test(fusion, w09_box_blur_one_kernel) { check_workload("w09"); }
Test(fusion, w10_saxpy_one_kernel) { check_workload("w10"); }
Test(fusion, w11_col_mean_scaled_one_kernel) { check_workload("w11"); }
Test(fusion, w12_matmul_is_a_library_kernel) { check_workload("w12"); }

/* W8 with z as an output as well as the count: both are the same shape, so one kernel still
 * (multi-output), and no iterate is stored. */
Test(fusion, w08_mandelbrot_with_z_output_one_kernel) {
    fc_array *out[WL_MAX_OUT];
    int n = wl_mandelbrot(ctx, (const int64_t[]){2048}, out, 100, true);
    fcp_plan *p = expect_kernels("w08 (count and z)", out, n, 1, 1);
    plan_assert(p, p->kernels[0].nout == 2, "w08 (count and z)", "%d stores", p->kernels[0].nout);
    fcp_plan_destroy(p);
}

/* W7 splits where the statistics are over non-trailing axes: the reduction kernel computes
 * mean and std together, and the boundary says why. */
Test(fusion, w07_boundary_reason) {
    fc_array *out[WL_MAX_OUT];
    int n = build_full(workload("w07"), out);
    fcp_plan *p = plan_of("w07", out, n);
    if (p->nkernel == 2) {
        plan_assert(p, p->kernels[0].kind == FCP_KERNEL_REDUCE && p->kernels[1].kind == FCP_KERNEL_EW,
                    "w07", "kinds %s, %s", fcp_kernel_kind_names[p->kernels[0].kind],
                    fcp_kernel_kind_names[p->kernels[1].kind]);
        plan_assert(p, p->kernels[0].nred == 2 && p->kernels[0].nout == 2, "w07",
                    "the reduce kernel has %d reductions and %d stores, want 2 and 2 (mean and "
                    "std in one pass)", p->kernels[0].nred, p->kernels[0].nout);
        plan_assert(p, p->nboundary >= 1, "w07", "%d boundaries recorded", p->nboundary);
        plan_assert(p, has_boundary_reason(p, "trailing"), "w07", "%s",
                    "no boundary names the non-trailing axes");
    } else {
        plan_assert(p, p->nkernel == 1 && p->nboundary == 0, "w07",
                    "%d kernels, %d boundaries", p->nkernel, p->nboundary);
    }
    fcp_plan_destroy(p);
}

/* ---- the .fc workloads, when helper B's files exist ------------------------------------- */

static int fc_files(const char *dir, char names[][256], int cap) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < cap) {
        size_t len = strlen(e->d_name);
        if (len > 3 && strcmp(e->d_name + len - 3, ".fc") == 0 && len < 256)
            memcpy(names[n++], e->d_name, len + 1);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof names[0], (int (*)(const void *, const void *))strcmp);
    return n;
}

Test(fusion, bench_fc_files_plan_like_the_c_workloads) {
    static char names[64][256];
    const char *dir = FUSEC_SOURCE_DIR "/bench/fc";
    int nf = fc_files(dir, names, 64);
    cr_assert_gt(nf, 0, "no .fc programs in %s", dir);
    int matched = 0;
    for (int f = 0; f < nf; f++) {
        /* Only the programs that are a C workload (w12_fft.fc, say, is not one). */
        bool known = false;
        for (int w = 0; w < WL_COUNT; w++) {
            size_t len = strlen(wl_workloads[w].name);
            known |= strncmp(names[f], wl_workloads[w].name, len) == 0 && strcmp(names[f] + len, ".fc") == 0;
        }
        const expect *e = NULL;
        for (size_t i = 0; i < sizeof expects / sizeof expects[0] && known; i++)
            if (strncmp(names[f], expects[i].name, 3) == 0) e = &expects[i];
        if (!e) continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%.255s", dir, names[f]);
        fc_program *prog = NULL;
        fc_status st = fc_program_load(ctx, path, &prog);
        cr_assert_eq(st, FC_OK, "%s: %s", path, fc_errmsg(ctx));
        cr_assert_eq(fc_program_num_symbols(prog), 0, "%s: the bench programs have fixed sizes", path);
        int nout = fc_program_num_outputs(prog);
        cr_assert(nout >= 1 && nout <= WL_MAX_OUT);
        fc_array *outs[WL_MAX_OUT];
        st = fc_program_build(prog, NULL, outs);
        cr_assert_eq(st, FC_OK, "%s: %s", path, fc_errmsg(ctx));
        check_expect(e, outs, nout);
        /* The C workload of the same name is the same program. */
        fc_array *c_outs[WL_MAX_OUT];
        int nc = build_full(workload(e->name), c_outs);
        fc_hash hf, hc;
        cr_assert_eq(fc_graph_hash(outs, nout, &hf), FC_OK);
        cr_assert_eq(fc_graph_hash(c_outs, nc, &hc), FC_OK);
        if (hf.lo != hc.lo || hf.hi != hc.hi) {
            char *tf = NULL, *tc = NULL;
            fc_program_print(ctx, outs, nout, NULL, &tf);
            fc_program_print(ctx, c_outs, nc, NULL, &tc);
            cr_assert_fail("%s and the C workload %s differ:\n--- .fc\n%.4000s\n--- C\n%.4000s",
                           path, e->name, tf ? tf : "?", tc ? tc : "?");
        }
        fc_program_destroy(prog);
        matched++;
    }
    cr_assert_geq(matched, 11, "only %d of the bench programs w01..w11 were found", matched);
}

/* ---- multi-output ------------------------------------------------------------------------ */

Test(fusion, two_outputs_of_one_shape_share_a_kernel) {
    fc_array *x = wl_input(ctx, 0, FC_F32, FC_SHAPE(1 << 20));
    fc_array *y = wl_input(ctx, 1, FC_F32, FC_SHAPE(1 << 20));
    fc_array *outs[2] = {fc_sin(x), fc_add(fc_cos(x), y)};
    fcp_plan *p = expect_kernels("sin(x), cos(x) + y", outs, 2, 1, 1);
    plan_assert(p, p->kernels[0].nout == 2 && p->kernels[0].nleaf == 2, "sin(x), cos(x) + y",
                "stores %d, loads %d", p->kernels[0].nout, p->kernels[0].nleaf);
    fcp_plan_destroy(p);
}

Test(fusion, three_outputs_with_a_shared_subexpression_one_kernel) {
    fc_array *x = wl_input(ctx, 0, FC_F32, FC_SHAPE(4096, 1024));
    fc_array *t = fc_tanh(fc_mul(x, fc_f64(ctx, 3.0)));
    fc_array *outs[3] = {fc_exp(t), fc_sub(t, x), fc_square(t)};
    fcp_plan *p = expect_kernels("exp(t), t - x, t^2", outs, 3, 1, 1);
    plan_assert(p, p->kernels[0].nleaf == 1, "three outputs", "loads %d", p->kernels[0].nleaf);
    fcp_plan_destroy(p);
}

/* A row reduction and its input's elementwise image: two outputs over different spaces of
 * one ROW / REDUCE structure: sum(x, 1) and x / sum(x, 1) -> one ROW kernel. */
Test(fusion, row_sum_and_normalised_rows_one_kernel) {
    fc_array *x = wl_input(ctx, 0, FC_F32, FC_SHAPE(1024, 2048));
    fc_array *s = fc_sum(x, FC_AXES(1), true);
    fc_array *outs[1] = {fc_div(x, s)};
    fcp_plan *p = expect_kernels("x / sum(x, 1)", outs, 1, 1, 1);
    plan_assert(p, p->kernels[0].kind == FCP_KERNEL_ROW, "x / sum(x, 1)", "kind %s",
                fcp_kernel_kind_names[p->kernels[0].kind]);
    fcp_plan_destroy(p);
}

/* Two reductions of one input over the same axes share a REDUCE kernel (one read). */
Test(fusion, sum_and_max_of_one_input_one_kernel) {
    fc_array *x = wl_input(ctx, 0, FC_F32, FC_SHAPE(4096, 512));
    fc_array *outs[2] = {fc_sum(x, FC_AXES(1), false), fc_max(x, FC_AXES(1), false)};
    fcp_plan *p = expect_kernels("sum(x,1), max(x,1)", outs, 2, 1, 1);
    plan_assert(p, p->kernels[0].kind == FCP_KERNEL_REDUCE && p->kernels[0].nleaf == 1,
                "sum(x,1), max(x,1)", "kind %s, loads %d", fcp_kernel_kind_names[p->kernels[0].kind],
                p->kernels[0].nleaf);
    fcp_plan_destroy(p);
}

/* Batch-norm statistics (issue 13 item 3): mean and var over the same non-trailing axes
 * (0, 2) share one REDUCE kernel that reads x once. */
Test(fusion, batch_norm_statistics_one_pass) {
    fc_array *x = wl_input(ctx, 0, FC_F32, FC_SHAPE(64, 256, 4096));
    fc_array *outs[2] = {fc_mean(x, FC_AXES(0, 2), false), fc_var(x, FC_AXES(0, 2), false, 0)};
    fcp_plan *p = expect_kernels("mean, var over (0, 2)", outs, 2, 1, 1);
    plan_assert(p, p->kernels[0].kind == FCP_KERNEL_REDUCE && p->kernels[0].nleaf == 1,
                "mean, var over (0, 2)", "kind %s, loads %d",
                fcp_kernel_kind_names[p->kernels[0].kind], p->kernels[0].nleaf);
    fcp_plan_destroy(p);
}

/* Column softmax: the max and the sum of exp(x - max) in one column kernel (the sum online),
 * then the elementwise kernel; logsumexp over axis 0 likewise (its log an elementwise kernel). */
Test(fusion, column_softmax_two_kernels) {
    fc_array *x = wl_input(ctx, 0, FC_F32, FC_SHAPE(8192, 8192));
    fc_array *e = fc_exp(fc_sub(x, fc_max(x, FC_AXES(0), true)));
    fc_array *outs[1] = {fc_div(e, fc_sum(e, FC_AXES(0), true))};
    fcp_plan *p = expect_kernels("column softmax", outs, 1, 2, 2);
    plan_assert(p, p->kernels[0].kind == FCP_KERNEL_REDUCE && p->kernels[0].nout == 2 &&
                p->kernels[0].nleaf == 1 && p->kernels[1].kind == FCP_KERNEL_EW,
                "column softmax", "kinds %s, %s", fcp_kernel_kind_names[p->kernels[0].kind],
                fcp_kernel_kind_names[p->kernels[1].kind]);
    fcp_plan_destroy(p);
    outs[0] = fc_logsumexp(x, FC_AXES(0), false);
    p = expect_kernels("logsumexp over axis 0", outs, 1, 2, 2); /* and its epilogue */
    fcp_plan_destroy(p);
}

/* Outputs of different shapes cannot share an elementwise kernel. */
Test(fusion, outputs_of_different_shapes_two_kernels) {
    fc_array *x = wl_input(ctx, 0, FC_F32, FC_SHAPE(256, 256));
    fc_array *outs[2] = {fc_sin(x), fc_cos(fc_slice(x, FC_S(0, 128, 1), FC_COLON))};
    fcp_plan *p = expect_kernels("sin(x), cos(x[:128])", outs, 2, 2, 2);
    fcp_plan_destroy(p);
}

/* ---- fallbacks ------------------------------------------------------------------------- */

/* Softmax whose row does not fit on chip (65536 f32 = 256 KiB > FCP_ROW_MAX_BYTES) over
 * enough rows for a block each: one ROW kernel that streams its rows (long_rows). */
Test(fusion, softmax_row_too_long_for_chip_one_streaming_kernel) {
    cr_assert_gt(65536 * 4, FCP_ROW_MAX_BYTES);
    fc_array *x = wl_input(ctx, 0, FC_F32, FC_SHAPE(FCP_ROW_LONG_MIN_ROWS, 65536));
    fc_array *e = fc_exp(fc_sub(x, fc_max(x, FC_AXES(1), true)));
    fc_array *outs[1] = {fc_div(e, fc_sum(e, FC_AXES(1), true))};
    fcp_plan *p = expect_kernels("softmax 64 x 65536", outs, 1, 1, 1);
    plan_assert(p, p->kernels[0].kind == FCP_KERNEL_ROW && p->kernels[0].long_rows && p->nboundary == 0,
                "softmax 64 x 65536", "a %s kernel, long_rows %d, %d boundaries",
                fcp_kernel_kind_names[p->kernels[0].kind], p->kernels[0].long_rows, p->nboundary);
    check_plan("softmax 64 x 65536", p);
    fcp_plan_destroy(p);
}

/* Few rows that do not fit on chip: a block a row would leave most of the device idle, so the
 * reductions split each row between blocks: max (REDUCE), sum(exp(x - m)) (REDUCE), e / s
 * (EW), with the reason. */
Test(fusion, few_long_rows_split_between_blocks_three_kernels) {
    fc_array *x = wl_input(ctx, 0, FC_F32, FC_SHAPE(FCP_ROW_LONG_MIN_ROWS - 1, 65536));
    fc_array *e = fc_exp(fc_sub(x, fc_max(x, FC_AXES(1), true)));
    fc_array *outs[1] = {fc_div(e, fc_sum(e, FC_AXES(1), true))};
    fcp_plan *p = expect_kernels("softmax 63 x 65536", outs, 1, 3, 3);
    plan_assert(p, count_kind(p, FCP_KERNEL_REDUCE) == 2 && count_kind(p, FCP_KERNEL_EW) == 1,
                "softmax 63 x 65536", "%d reduce, %d elementwise kernels",
                count_kind(p, FCP_KERNEL_REDUCE), count_kind(p, FCP_KERNEL_EW));
    plan_assert(p, p->nboundary >= 2 && has_boundary_reason(p, "too few rows"), "softmax 63 x 65536",
                "%d boundaries, none says there are too few rows", p->nboundary);
    /* The materialised reductions are stored at their reduced size only. */
    for (int i = 0; i < p->nmat; i++)
        plan_assert(p, p->mat[i] == outs[0] || fcg_node_numel(p->mat[i]) == 63, "softmax",
                    "materialised node %d has %zu elements", i, fcg_node_numel(p->mat[i]));
    fcp_plan_destroy(p);
}

/* The same softmax where the row just fits (11264 f32 = 44 KiB): one ROW kernel on chip; one
 * more column and it streams its rows, still one kernel. */
Test(fusion, softmax_row_at_the_on_chip_limit_one_kernel) {
    int64_t cols = FCP_ROW_MAX_BYTES / 4;
    fc_array *x = wl_input(ctx, 0, FC_F32, FC_SHAPE(256, cols));
    fc_array *e = fc_exp(fc_sub(x, fc_max(x, FC_AXES(1), true)));
    fc_array *outs[1] = {fc_div(e, fc_sum(e, FC_AXES(1), true))};
    fcp_plan *p = expect_kernels("softmax at the limit", outs, 1, 1, 1);
    plan_assert(p, !p->kernels[0].long_rows, "softmax at the limit", "rows streamed (%d)", 1);
    fcp_plan_destroy(p);
    x = wl_input(ctx, 1, FC_F32, FC_SHAPE(256, cols + 1));
    e = fc_exp(fc_sub(x, fc_max(x, FC_AXES(1), true)));
    outs[0] = fc_div(e, fc_sum(e, FC_AXES(1), true));
    p = expect_kernels("softmax past the limit", outs, 1, 1, 1);
    plan_assert(p, p->kernels[0].long_rows, "softmax past the limit", "rows kept on chip (%d)", 0);
    fcp_plan_destroy(p);
}

/* A layernorm with a scale and shift over rows of 4096 f32 (the 'few thousand'): x's
 * row is 16 KiB; gamma and beta are vectors every block reads, not rows to keep on chip. It was
 * 3 kernels while they counted against FCP_ROW_MAX_BYTES. */
Test(fusion, layernorm_with_scale_and_shift_keeps_rows_on_chip) {
    fc_array *x = wl_input(ctx, 0, FC_F32, FC_SHAPE(16384, 4096));
    fc_array *gam = wl_input(ctx, 1, FC_F32, FC_SHAPE(4096));
    fc_array *bet = wl_input(ctx, 2, FC_F32, FC_SHAPE(4096));
    fc_array *ln = fc_div(fc_sub(x, fc_mean(x, FC_AXES(1), true)),
                          fc_sqrt(fc_add(fc_var(x, FC_AXES(1), true, 0), fc_f64(ctx, 1e-5))));
    fc_array *outs[1] = {fc_add(fc_mul(ln, gam), bet)};
    fcp_plan *p = expect_kernels("layernorm 16384 x 4096", outs, 1, 1, 1);
    plan_assert(p, p->kernels[0].kind == FCP_KERNEL_ROW && !p->kernels[0].long_rows,
                "layernorm 16384 x 4096", "a %s kernel, long_rows %d",
                fcp_kernel_kind_names[p->kernels[0].kind], p->kernels[0].long_rows);
    check_plan("layernorm 16384 x 4096", p);
    fcp_plan_destroy(p);
}

/* Issue 13 item 2: the row chains whose rows did not fit on chip (3 kernels before) are one
 * ROW kernel, at rows of 8192 (on chip: 32 KiB), 16384 and 65536 f32, and 6001 f64 (streamed):
 * layernorm with a scale and shift, softmax, logsumexp (composite and by hand), normalise by
 * the L2 norm, log-softmax. */
Test(fusion, long_row_chains_are_one_streaming_kernel) {
    static const int64_t lens[] = {8192, 16384, 65536};
    for (int li = 0; li < 4; li++) {
        bool f64 = li == 3;
        int64_t L = f64 ? 6001 : lens[li];
        fc_dtype t = f64 ? FC_F64 : FC_F32;
        fc_array *x = wl_input(ctx, 10 * li, t, FC_SHAPE(256, L));
        fc_array *gam = wl_input(ctx, 10 * li + 1, t, FC_SHAPE(L));
        fc_array *bet = wl_input(ctx, 10 * li + 2, t, FC_SHAPE(L));
        fc_array *mu = fc_mean(x, FC_AXES(1), true);
        fc_array *ln = fc_div(fc_sub(x, mu), fc_sqrt(fc_add(fc_var(x, FC_AXES(1), true, 0), fc_f64(ctx, 1e-5))));
        fc_array *m = fc_max(x, FC_AXES(1), true);
        fc_array *e = fc_exp(fc_sub(x, m));
        fc_array *lse = fc_add(fc_log(fc_sum(e, FC_AXES(1), true)), m);
        fc_array *progs[6] = {
            fc_add(fc_mul(ln, gam), bet),
            fc_div(e, fc_sum(e, FC_AXES(1), true)),
            fc_logsumexp(x, FC_AXES(1), false),
            lse,
            fc_div(x, fc_norm(x, FC_AXES(1), true, FC_NORM_L2)),
            fc_sub(x, lse),
        };
        static const char *const names[6] = {"layernorm", "softmax", "logsumexp", "logsumexp by hand",
                                              "x / norm(x)", "log-softmax"};
        for (int q = 0; q < 6; q++) {
            char what[96];
            snprintf(what, sizeof what, "%s of %s[256, %lld]", names[q], fc_dtype_name(t), (long long)L);
            fcp_plan *p = expect_kernels(what, &progs[q], 1, 1, 1);
            bool fits = (double)L * (double)fc_dtype_size(t) <= FCP_ROW_MAX_BYTES;
            plan_assert(p, p->kernels[0].kind == FCP_KERNEL_ROW && p->kernels[0].long_rows == !fits,
                        what, "a %s kernel, long_rows %d", fcp_kernel_kind_names[p->kernels[0].kind],
                        p->kernels[0].long_rows);
            check_plan(what, p);
            fcp_plan_destroy(p);
        }
    }
}

/* A reduction over a non-trailing axis feeding a broadcast: REDUCE + EW, with the reason. */
/* Row kernels of one space merge (multi-output fusion) only while their rows together still
 * fit on chip: two softmaxes of short rows share a kernel, two of long rows do not. */
static fc_array *softmax_rows(fc_array *x) {
    fc_array *e = fc_exp(fc_sub(x, fc_max(x, FC_AXES(1), true)));
    return fc_div(e, fc_sum(e, FC_AXES(1), true));
}
Test(fusion, row_kernels_merge_only_while_their_rows_fit_on_chip) {
    int64_t cols = FCP_ROW_MAX_BYTES / 4 / 4; /* a quarter of the budget per input */
    fc_array *outs[2] = {softmax_rows(wl_input(ctx, 0, FC_F32, FC_SHAPE(64, cols))),
                         softmax_rows(wl_input(ctx, 1, FC_F32, FC_SHAPE(64, cols)))};
    fcp_plan *p = expect_kernels("two short softmaxes", outs, 2, 1, 1);
    plan_assert(p, p->kernels[0].kind == FCP_KERNEL_ROW && p->kernels[0].nout == 2,
                "two short softmaxes", "%s kernel with %d stores",
                fcp_kernel_kind_names[p->kernels[0].kind], p->kernels[0].nout);
    fcp_plan_destroy(p);
    cols = FCP_ROW_MAX_BYTES / 4 * 3 / 4; /* three quarters of the budget per input */
    outs[0] = softmax_rows(wl_input(ctx, 2, FC_F32, FC_SHAPE(64, cols)));
    outs[1] = softmax_rows(wl_input(ctx, 3, FC_F32, FC_SHAPE(64, cols)));
    p = expect_kernels("two long softmaxes", outs, 2, 2, 2);
    plan_assert(p, count_kind(p, FCP_KERNEL_ROW) == 2, "two long softmaxes", "%d row kernels",
                count_kind(p, FCP_KERNEL_ROW));
    fcp_plan_destroy(p);
    /* rows that stream already: one kernel reads each buffer as often as two would */
    cols = FCP_ROW_MAX_BYTES / 4 * 2;
    outs[0] = softmax_rows(wl_input(ctx, 4, FC_F32, FC_SHAPE(64, cols)));
    outs[1] = softmax_rows(wl_input(ctx, 5, FC_F32, FC_SHAPE(64, cols)));
    p = expect_kernels("two streamed softmaxes", outs, 2, 1, 1);
    plan_assert(p, p->kernels[0].long_rows && p->kernels[0].nout == 2, "two streamed softmaxes",
                "long_rows %d, %d stores", p->kernels[0].long_rows, p->kernels[0].nout);
    fcp_plan_destroy(p);
}

Test(fusion, non_trailing_reduction_feeding_a_broadcast_two_kernels) {
    fc_array *x = wl_input(ctx, 0, FC_F32, FC_SHAPE(512, 64, 32));
    fc_array *m = fc_mean(x, FC_AXES(0, 2), true);
    fc_array *outs[1] = {fc_sub(x, m)};
    fcp_plan *p = expect_kernels("x - mean(x, (0, 2))", outs, 1, 2, 2);
    plan_assert(p, p->kernels[0].kind == FCP_KERNEL_REDUCE && p->kernels[1].kind == FCP_KERNEL_EW,
                "x - mean(x, (0, 2))", "kinds %s, %s", fcp_kernel_kind_names[p->kernels[0].kind],
                fcp_kernel_kind_names[p->kernels[1].kind]);
    plan_assert(p, p->nboundary >= 1 && has_boundary_reason(p, "trailing"), "x - mean(x, (0, 2))",
                "%d boundaries, none names the axes", p->nboundary);
    fcp_plan_destroy(p);
}

/* A scan computes its mapped input and takes in the elementwise consumers that read it at
 * the element it computes (its epilogue); a consumer that reads it elsewhere (a flip), a
 * reduction of it, or a reduction feeding it stay kernels of their own. */
Test(fusion, scans_take_their_prologue_and_epilogue) {
    fc_array *x = wl_input(ctx, 0, FC_F32, FC_SHAPE(64, 1000));
    fc_array *c = fc_cumsum(fc_mul(x, x), 1);
    fc_array *y = fc_div(c, fc_add(x, fc_f64(ctx, 1)));
    fcp_plan *p = expect_kernels("cumsum(x*x) / (x + 1)", (fc_array *[]){y}, 1, 1, 1);
    plan_assert(p, p->kernels[0].kind == FCP_KERNEL_SCAN && p->kernels[0].nout == 2 &&
                       p->kernels[0].outs[0] == c && p->kernels[0].outs[1] == y,
                "cumsum(x*x) / (x + 1)", "kind %s, %d outputs",
                fcp_kernel_kind_names[p->kernels[0].kind], p->kernels[0].nout);
    fcp_plan_destroy(p);
    fc_array *f = fc_add(fc_flip(c, FC_AXES(1)), x);
    p = expect_kernels("flip(cumsum(x*x)) + x", (fc_array *[]){f}, 1, 2, 2);
    plan_assert(p, p->kernels[0].kind == FCP_KERNEL_SCAN && p->kernels[0].nout == 1 &&
                       p->kernels[1].kind == FCP_KERNEL_EW,
                "flip(cumsum(x*x)) + x", "kinds %s, %s", fcp_kernel_kind_names[p->kernels[0].kind],
                fcp_kernel_kind_names[p->kernels[1].kind]);
    fcp_plan_destroy(p);
    fc_array *m = fc_cummax(fc_sub(x, fc_mean(x, FC_AXES(1), true)), 1);
    p = expect_kernels("cummax(x - mean(x))", (fc_array *[]){fc_sum(m, FC_AXES(1), false)}, 1, 3, 3);
    plan_assert(p, count_kind(p, FCP_KERNEL_SCAN) == 1 && has_boundary_reason(p, "feeding a scan"),
                "cummax(x - mean(x))", "%d scan kernels", count_kind(p, FCP_KERNEL_SCAN));
    fcp_plan_destroy(p);
}

/* x[mask] with a mask of x's shape, and flatnonzero: one compaction kernel (a scan over the
 * mask that stores each selected value at its place), whose consumer is a kernel of its own
 * (its elements are not the mask's: no epilogue, even where the sizes agree). */
Test(fusion, a_mask_selection_is_one_compaction_kernel) {
    static float data[8000];
    for (int i = 0; i < 8000; i++) data[i] = (float)((i * 7919) % 1000) / 1000.0f;
    fc_array *x = fc_from_host(ctx, FC_F32, FC_SHAPE(8, 1000), data); /* the count needs data */
    fc_array *m = fc_greater(x, fc_f64(ctx, 0.5));
    fc_idx e[1] = {FC_ARRAY_IDX(m)};
    fc_array *sel = fc_index(fc_sin(x), 1, e);
    cr_assert_eq(fc_array_status(sel), FC_OK, "%s", fc_errmsg(ctx));
    fcp_plan *p = expect_kernels("sin(x)[x > 0.5]", (fc_array *[]){sel}, 1, 1, 1);
    plan_assert(p, p->kernels[0].kind == FCP_KERNEL_SCAN && p->kernels[0].nout == 1 &&
                       p->kernels[0].outs[0]->op == FCG_OP_COMPRESS &&
                       p->kernels[0].ndim == 1 && p->kernels[0].space[0] == 8000,
                "sin(x)[x > 0.5]", "kind %s, %d outputs",
                fcp_kernel_kind_names[p->kernels[0].kind], p->kernels[0].nout);
    fcp_plan_destroy(p);
    fc_array *y = fc_add(sel, fc_f64(ctx, 1));
    p = expect_kernels("sin(x)[x > 0.5] + 1", (fc_array *[]){y}, 1, 2, 2);
    fcp_plan_destroy(p);
    fc_array *all = fc_index(x, 1, (fc_idx[]){FC_ARRAY_IDX(fc_greater(x, fc_f64(ctx, -1)))});
    p = expect_kernels("x[x > -1] * 2 (every element kept)",
                       (fc_array *[]){fc_mul(all, fc_f64(ctx, 2))}, 1, 2, 2);
    fcp_plan_destroy(p);
    fc_array *nz = fc_flatnonzero(m);
    p = expect_kernels("flatnonzero(x > 0.5)", (fc_array *[]){nz}, 1, 1, 1);
    plan_assert(p, p->kernels[0].outs[0]->op == FCG_OP_COMPRESS, "flatnonzero(x > 0.5)",
                "kind %s", fcp_kernel_kind_names[p->kernels[0].kind]);
    fcp_plan_destroy(p);
}

/* A reduction of a reduction over different axes: two levels that cannot share a kernel. */
Test(fusion, reduction_of_a_reduction_over_other_axes_two_kernels) {
    fc_array *x = wl_input(ctx, 0, FC_F32, FC_SHAPE(256, 128, 64));
    fc_array *outs[1] = {fc_max(fc_sum(x, FC_AXES(2), false), FC_AXES(0), false)};
    fcp_plan *p = expect_kernels("max(sum(x, 2), 0)", outs, 1, 2, 2);
    plan_assert(p, p->nboundary >= 1, "max(sum(x, 2), 0)", "%d boundaries", p->nboundary);
    fcp_plan_destroy(p);
}

/* A view other than a broadcast between a reduction and its consumer (a transpose of the
 * reduced rows) cannot keep the row index: the reduction is stored. */
Test(fusion, transposed_reduction_result_is_stored) {
    fc_array *x = wl_input(ctx, 0, FC_F32, FC_SHAPE(64, 32, 16));
    fc_array *s = fc_sum(x, FC_AXES(2), false); /* [64, 32] */
    fc_array *outs[1] = {fc_add(fc_transpose(s), fc_f64(ctx, 1.0))};
    fcp_plan *p = expect_kernels("transpose(sum(x, 2)) + 1", outs, 1, 2, 2);
    plan_assert(p, p->nboundary >= 1, "transpose(sum(x, 2)) + 1", "%d boundaries", p->nboundary);
    fcp_plan_destroy(p);
}

/* A reduction used by two kernels of different spaces is computed once and stored. */
Test(fusion, reduction_shared_by_two_kernels_is_stored_once) {
    fc_array *x = wl_input(ctx, 0, FC_F32, FC_SHAPE(512, 256));
    fc_array *m = fc_max(x, FC_AXES(0), false);                      /* [256], non-trailing */
    fc_array *outs[2] = {fc_sub(x, m), fc_mul(m, fc_f64(ctx, 2.0))}; /* [512,256] and [256] */
    fcp_plan *p = plan_of("x - max(x, 0), 2 max(x, 0)", outs, 2);
    int reductions = 0;
    for (int i = 0; i < p->nkernel; i++)
        for (int j = 0; j < p->kernels[i].nnode; j++)
            reductions += p->kernels[i].nodes[j]->op == FCG_OP_MAX;
    plan_assert(p, reductions == 1, "x - max(x, 0), 2 max(x, 0)", "max computed %d times",
                reductions);
    plan_assert(p, p->nkernel <= 3, "x - max(x, 0), 2 max(x, 0)", "%d kernels", p->nkernel);
    fcp_plan_destroy(p);
}

/* ---- library calls ---------------------------------------------------------------------- */

/* matmul reads and writes stored buffers: its fused prologue and epilogue are kernels of
 * their own, with recorded boundaries. */
Test(fusion, matmul_is_a_boundary) {
    fc_array *a = wl_input(ctx, 0, FC_F32, FC_SHAPE(512, 256));
    fc_array *b = wl_input(ctx, 1, FC_F32, FC_SHAPE(256, 128));
    fc_array *mm = fc_matmul(fc_sin(a), b);
    fc_array *outs[1] = {fc_tanh(fc_add(mm, fc_f64(ctx, 1.0)))};
    fcp_plan *p = expect_kernels("tanh(sin(a) @ b + 1)", outs, 1, 3, 3);
    plan_assert(p, p->kernels[0].kind == FCP_KERNEL_EW && p->kernels[1].kind == FCP_KERNEL_LIB &&
                       p->kernels[2].kind == FCP_KERNEL_EW,
                "tanh(sin(a) @ b + 1)", "kinds %s %s %s", fcp_kernel_kind_names[p->kernels[0].kind],
                fcp_kernel_kind_names[p->kernels[1].kind], fcp_kernel_kind_names[p->kernels[2].kind]);
    plan_assert(p, has_boundary_reason(p, "library"), "tanh(sin(a) @ b + 1)", "%d boundaries, "
                "none names the library call", p->nboundary);
    fcp_plan_destroy(p);

    /* Plain inputs need no prologue kernel. */
    fc_array *o2[1] = {fc_exp(fc_matmul(a, b))};
    p = expect_kernels("exp(a @ b)", o2, 1, 2, 2);
    plan_assert(p, p->kernels[0].kind == FCP_KERNEL_LIB, "exp(a @ b)", "first kernel %s",
                fcp_kernel_kind_names[p->kernels[0].kind]);
    fcp_plan_destroy(p);
}

/* A transposed operand is the source's buffer with cuBLAS's transpose flag: no copy kernel,
 * the source (a value, or a computed node stored for the call) is the library kernel's leaf.
 * A permutation that is not a swap of the last two axes is still stored. */
Test(fusion, matmul_reads_a_transposed_operand_without_a_copy) {
    fc_array *a = wl_input(ctx, 0, FC_F32, FC_SHAPE(3, 64, 32));
    fc_array *b = wl_input(ctx, 1, FC_F32, FC_SHAPE(3, 48, 32));
    fc_axes swap = FC_AXES(0, 2, 1);
    fc_array *o1[1] = {fc_matmul(a, fc_permute(b, swap))};
    fcp_plan *p = expect_kernels("a @ swapaxes(b)", o1, 1, 1, 1);
    plan_assert(p, p->kernels[0].kind == FCP_KERNEL_LIB && p->kernels[0].nleaf == 2 &&
                       p->kernels[0].leaves[1] == b,
                "a @ swapaxes(b)", "kernel 0: %s with %d leaves",
                fcp_kernel_kind_names[p->kernels[0].kind], p->kernels[0].nleaf);
    fcp_plan_destroy(p);
    /* a computed source is stored once, then read transposed, on either side */
    fc_array *e = fc_exp(b), *d = wl_input(ctx, 3, FC_F32, FC_SHAPE(3, 20, 48));
    fc_array *o2[1] = {fc_matmul(fc_permute(e, swap), fc_permute(fc_sin(d), swap))};
    p = expect_kernels("swapaxes(exp(b)) @ swapaxes(sin(d))", o2, 1, 3, 3);
    plan_assert(p, count_kind(p, FCP_KERNEL_LIB) == 1 && count_kind(p, FCP_KERNEL_EW) == 2,
                "swapaxes(exp(b)) @ swapaxes(sin(d))", "%d library, %d elementwise kernels",
                count_kind(p, FCP_KERNEL_LIB), count_kind(p, FCP_KERNEL_EW));
    plan_assert(p, has_boundary_reason(p, "transposed by a matmul"),
                "swapaxes(exp(b)) @ swapaxes(sin(d))", "%d boundaries, none names the transpose "
                "flag", p->nboundary);
    fcp_plan_destroy(p);
    /* moving a batch axis is a copy */
    fc_array *c = wl_input(ctx, 2, FC_F32, FC_SHAPE(32, 3, 48));
    fc_array *o3[1] = {fc_matmul(a, fc_permute(c, FC_AXES(1, 0, 2)))};
    p = expect_kernels("a @ permute(c, (1, 0, 2))", o3, 1, 2, 2);
    fcp_plan_destroy(p);
}

/* Two chained matmuls with elementwise work between them. */
Test(fusion, two_matmuls_with_work_between) {
    fc_array *a = wl_input(ctx, 0, FC_F32, FC_SHAPE(128, 128));
    fc_array *h = fc_maximum(fc_matmul(a, a), fc_f64(ctx, 0.0));
    fc_array *outs[1] = {fc_matmul(h, a)};
    /* the relu is the first product's epilogue (passes/epilogue.c) */
    fcp_plan *p = expect_kernels("relu(a @ a) @ a", outs, 1, 2, 2);
    plan_assert(p, count_kind(p, FCP_KERNEL_LIB) == 2, "relu(a @ a) @ a", "%d library kernels",
                count_kind(p, FCP_KERNEL_LIB));
    fcp_epilogue e;
    plan_assert(p, fcp_lib_epilogue(&p->kernels[0], &e) && e.act == FCP_ACT_RELU && !e.bias &&
                    !fcp_lib_epilogue(&p->kernels[1], &e) && e.lib == outs[0],
                "relu(a @ a) @ a", "%s", "epilogues");
    fcp_plan_destroy(p);
}

/* A direct convolution is one library kernel: the stencil kernel reads the flipped weights
 * from their source, reversed (fcp_lib_source), and a real correlation's conjugate is the
 * weights themselves; complex correlations store the conjugate, and a flip of a computed
 * array stores what it flips. */
Test(fusion, convolutions_read_their_weights_in_place) {
    fc_array *x = wl_input(ctx, 0, FC_F32, FC_SHAPE(64, 48));
    fc_array *k = wl_input(ctx, 1, FC_F32, FC_SHAPE(3, 4));
    fc_array *kc = wl_input(ctx, 2, FC_C64, FC_SHAPE(3, 3));
    fc_array *xc = wl_input(ctx, 3, FC_C64, FC_SHAPE(64, 48));
    struct {
        const char *what;
        fc_array *y;
        int kernels;
        fc_array *weights; /* the buffer the stencil kernel loads, or NULL: a stored one */
    } cases[] = {
        {"convolve2d(x, k)", fc_convolve2d(x, k, FC_CONV_SAME, FC_CONV_SYMM, 0, 0,
                                           FC_CONV_DIRECT), 1, k},
        {"correlate2d(x, k)", fc_correlate2d(x, k, FC_CONV_FULL, FC_CONV_FILL, 0, 0,
                                             FC_CONV_DIRECT), 1, k},
        {"correlate2d(xc, kc)", fc_correlate2d(xc, kc, FC_CONV_SAME, FC_CONV_WRAP, 0, 0,
                                               FC_CONV_DIRECT), 2, NULL},
        {"convolve2d(x, k * 2)", fc_convolve2d(x, fc_mul(k, fc_f64(ctx, 2.0)), FC_CONV_VALID,
                                               FC_CONV_FILL, 0, 0, FC_CONV_DIRECT), 2, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        fc_array *outs[1] = {cases[i].y};
        fcp_plan *p = expect_kernels(cases[i].what, outs, 1, cases[i].kernels, cases[i].kernels);
        const fcp_kernel *lib = &p->kernels[p->nkernel - 1];
        plan_assert(p, lib->kind == FCP_KERNEL_LIB && lib->nleaf == 2 &&
                        (!cases[i].weights || lib->leaves[1] == cases[i].weights),
                    cases[i].what, "%s", "the stencil kernel loads the weights' own buffer");
        fcp_plan_destroy(p);
    }
}

/* ---- library epilogues (passes/epilogue.c) ---------------------------------------------- */

/* Plans outs[0] alone; asserts the kernel count and, when `lib` is not NULL, that the last
 * kernel is a library kernel whose epilogue (fcp_lib_epilogue) has that product, bias and
 * activation; lib NULL: that no kernel has an epilogue. */
static void expect_epilogue(const char *what, fc_array *y, int kernels, const fc_array *lib,
                            const fc_array *bias, fcp_activation act) {
    fc_array *outs[1] = {y};
    fcp_plan *p = expect_kernels(what, outs, 1, kernels, kernels);
    fcp_epilogue e;
    if (!lib) {
        for (int i = 0; i < p->nkernel; i++)
            plan_assert(p, !fcp_lib_epilogue(&p->kernels[i], &e), what, "kernel %d has an "
                        "epilogue", i);
    } else {
        const fcp_kernel *k = &p->kernels[p->nkernel - 1];
        plan_assert(p, k->kind == FCP_KERNEL_LIB && k->nout == 1 && k->outs[0] == y, what, "%s",
                    "the last kernel is not a library kernel storing the result");
        plan_assert(p, fcp_lib_epilogue(k, &e) && e.lib == lib && e.bias == bias &&
                        e.act == act,
                    what, "epilogue: lib %s, bias %s, activation %d", e.lib == lib ? "ok" : "wrong",
                    e.bias == bias ? "ok" : "wrong", (int)e.act);
        plan_assert(p, !has_boundary_reason(p, "library call (matmul"), what, "%s",
                    "the product is still stored");
    }
    fcp_plan_destroy(p);
}

Test(fusion, matmul_bias_relu_is_one_library_kernel) {
    fc_array *a = wl_input(ctx, 0, FC_F32, FC_SHAPE(64, 32));
    fc_array *b = wl_input(ctx, 1, FC_F32, FC_SHAPE(32, 48));
    fc_array *bias = wl_input(ctx, 2, FC_F32, FC_SHAPE(48));
    fc_array *bias_row = wl_input(ctx, 3, FC_F32, FC_SHAPE(1, 48));
    fc_array *bt = wl_input(ctx, 4, FC_F32, FC_SHAPE(48, 32));
    fc_array *zero_i = fc_i64(ctx, 0), *zero_f = fc_f64(ctx, 0.0);
    fc_array *m = fc_matmul(a, b);
    expect_epilogue("maximum(a @ b + bias, 0)", fc_maximum(fc_add(m, bias), zero_i), 1, m, bias,
                    FCP_ACT_RELU);
    expect_epilogue("maximum(0.0, bias + a @ b)", fc_maximum(zero_f, fc_add(bias, m)), 1, m,
                    bias, FCP_ACT_RELU);
    expect_epilogue("a @ b + bias[1, N]", fc_add(m, bias_row), 1, m, bias_row, FCP_ACT_NONE);
    expect_epilogue("maximum(a @ b, 0)", fc_maximum(m, zero_i), 1, m, NULL, FCP_ACT_RELU);
    expect_epilogue("gelu_tanh(a @ b + bias)", fc_gelu_tanh(fc_add(m, bias)), 1, m, bias,
                    FCP_ACT_GELU);
    expect_epilogue("gelu_tanh(bias[1, N] + a @ b)", fc_gelu_tanh(fc_add(bias_row, m)), 1, m,
                    bias_row, FCP_ACT_GELU);
    expect_epilogue("gelu_tanh(a @ b)", fc_gelu_tanh(m), 1, m, NULL, FCP_ACT_GELU);
    /* cuBLAS's transpose flag still applies: the operand's source is the buffer */
    fc_array *mt = fc_matmul(a, fc_transpose(bt));
    expect_epilogue("maximum(a @ bt.T + bias, 0)", fc_maximum(fc_add(mt, bias), zero_i), 1, mt,
                    bias, FCP_ACT_RELU);
    /* a computed bias is stored first (cuBLASLt reads a buffer): 2 kernels */
    fc_array *bias2 = fc_mul(bias, fc_f64(ctx, 2.0));
    expect_epilogue("a @ b + bias * 2", fc_add(m, bias2), 2, m, bias2, FCP_ACT_NONE);
    /* what follows the epilogue is a kernel of its own, reading the epilogue's result */
    fc_array *r = fc_maximum(fc_add(m, bias), zero_i);
    fc_array *outs[1] = {fc_exp(r)};
    fcp_plan *p = expect_kernels("exp(relu(a @ b + bias))", outs, 1, 2, 2);
    fcp_epilogue e;
    plan_assert(p, p->kernels[0].kind == FCP_KERNEL_LIB && p->kernels[0].outs[0] == r &&
                    fcp_lib_epilogue(&p->kernels[0], &e) && e.act == FCP_ACT_RELU && e.bias == bias,
                "exp(relu(a @ b + bias))", "%s", "the relu's result is the library kernel's");
    fcp_plan_destroy(p);
}

Test(fusion, chains_that_are_not_epilogues) {
    fc_array *a = wl_input(ctx, 0, FC_F32, FC_SHAPE(64, 32));
    fc_array *b = wl_input(ctx, 1, FC_F32, FC_SHAPE(32, 48));
    fc_array *bias = wl_input(ctx, 2, FC_F32, FC_SHAPE(48));
    fc_array *col = wl_input(ctx, 3, FC_F32, FC_SHAPE(64, 1));
    fc_array *full = wl_input(ctx, 4, FC_F32, FC_SHAPE(64, 48));
    fc_array *m = fc_matmul(a, b);
    fc_array *zero = fc_i64(ctx, 0);
    /* a bias along the other axis, or a whole matrix: not cuBLASLt's bias vector */
    expect_epilogue("a @ b + col", fc_add(m, col), 2, NULL, NULL, FCP_ACT_NONE);
    expect_epilogue("a @ b + full", fc_add(m, full), 2, NULL, NULL, FCP_ACT_NONE);
    /* maximum with another constant, or with -0.0 (keeps -0.0: not ReLU) */
    expect_epilogue("maximum(a @ b, 0.5)", fc_maximum(m, fc_f64(ctx, 0.5)), 2, NULL, NULL, FCP_ACT_NONE);
    expect_epilogue("maximum(a @ b, -0.0)", fc_maximum(m, fc_f64(ctx, -0.0)), 2, NULL, NULL,
                    FCP_ACT_NONE);
    /* the exact gelu is not cuBLASLt's (its GELU is the tanh form) */
    expect_epilogue("gelu(a @ b)", fc_gelu(m), 2, NULL, NULL, FCP_ACT_NONE);
    /* a bias of another dtype promotes the sum */
    fc_array *bias64 = wl_input(ctx, 5, FC_F64, FC_SHAPE(48));
    expect_epilogue("a @ b + bias64", fc_add(m, bias64), 2, NULL, NULL, FCP_ACT_NONE);
    expect_epilogue("gelu_tanh(a @ b + bias64)", fc_gelu_tanh(fc_add(m, bias64)), 2, NULL, NULL,
                    FCP_ACT_NONE);
    /* f64, batched and vector products keep their elementwise kernel */
    fc_array *a64 = wl_input(ctx, 6, FC_F64, FC_SHAPE(64, 32));
    fc_array *b64 = wl_input(ctx, 7, FC_F64, FC_SHAPE(32, 48));
    expect_epilogue("maximum(a64 @ b64, 0)", fc_maximum(fc_matmul(a64, b64), zero), 2, NULL,
                    NULL, FCP_ACT_NONE);
    fc_array *a3 = wl_input(ctx, 8, FC_F32, FC_SHAPE(2, 64, 32));
    expect_epilogue("maximum(a3 @ b, 0)", fc_maximum(fc_matmul(a3, b), zero), 2, NULL, NULL,
                    FCP_ACT_NONE);
    /* the product read twice, or asked for as well: stored as before */
    fc_array *twice[1] = {fc_add(fc_maximum(m, zero), fc_exp(m))};
    fcp_plan *p = expect_kernels("relu(m) + exp(m)", twice, 1, 2, 2);
    fcp_epilogue e;
    plan_assert(p, !fcp_lib_epilogue(&p->kernels[0], &e), "relu(m) + exp(m)", "%s",
                "an epilogue on a product with two readers");
    fcp_plan_destroy(p);
    fc_array *both[2] = {m, fc_maximum(fc_add(m, bias), zero)};
    p = expect_kernels("m and relu(m + bias)", both, 2, 2, 2);
    plan_assert(p, !fcp_lib_epilogue(&p->kernels[0], &e) && !fcp_lib_epilogue(&p->kernels[1], &e),
                "m and relu(m + bias)", "%s", "an epilogue on a requested product");
    fcp_plan_destroy(p);
    /* the sum asked for too: the bias is the epilogue, the relu an elementwise kernel */
    fc_array *sum = fc_add(m, bias);
    fc_array *pair[2] = {sum, fc_maximum(sum, zero)};
    p = expect_kernels("m + bias and relu(m + bias)", pair, 2, 2, 2);
    plan_assert(p, fcp_lib_epilogue(&p->kernels[0], &e) && e.bias == bias && !e.act,
                "m + bias and relu(m + bias)", "%s", "the bias alone is the epilogue");
    fcp_plan_destroy(p);
}

/* ---- views fold into their consumer ------------------------------------------------------ */

Test(fusion, views_fold_into_one_kernel) {
    fc_array *x = wl_input(ctx, 0, FC_F32, FC_SHAPE(64, 48, 8));
    fc_array *v = fc_transpose(x);                                      /* [8, 48, 64] */
    v = fc_slice(v, FC_S(FC_NIL, FC_NIL, -1), FC_S(1, -1, 2), FC_COLON); /* [8, 23, 64] */
    v = fc_reshape(v, FC_SHAPE(8 * 23, 64));
    v = fc_pad(v, 1, (const int64_t[][2]){{2, 3}}, FC_PAD_REFLECT, 0.0);
    fc_array *parts[2] = {v, fc_flip(v, FC_ALL)};
    fc_array *outs[1] = {fc_sqrt(fc_abs(fc_concatenate(ctx, parts, 2, 0)))};
    fcp_plan *p = expect_kernels("a chain of views", outs, 1, 1, 1);
    plan_assert(p, p->kernels[0].nleaf == 1, "a chain of views", "loads %d", p->kernels[0].nleaf);
    fcp_plan_destroy(p);
}

/* A large subexpression used by kernels over different spaces is stored once rather than
 * recomputed in each (FCP_RECOMPUTE_MAX_OPS); a small one is recomputed. */
Test(fusion, large_shared_subexpression_is_stored_small_is_recomputed) {
    fc_array *x = wl_input(ctx, 0, FC_F32, FC_SHAPE(1024, 512));
    fc_array *big = x;
    for (int i = 0; i < FCP_RECOMPUTE_MAX_OPS + 8; i++) big = fc_sin(fc_add(big, fc_f64(ctx, 0.5)));
    fc_array *outs[2] = {fc_exp(big), fc_sum(big, FC_AXES(0), false)};
    fcp_plan *p = plan_of("big shared", outs, 2);
    plan_assert(p, has_boundary_reason(p, "large subexpression"), "big shared",
                "%d boundaries, none for the shared subexpression", p->nboundary);
    fcp_plan_destroy(p);

    fc_array *small = fc_sin(fc_add(x, fc_f64(ctx, 0.5)));
    fc_array *o2[2] = {fc_exp(small), fc_sum(small, FC_AXES(0), false)};
    p = plan_of("small shared", o2, 2);
    plan_assert(p, p->nboundary == 0, "small shared", "%d boundaries", p->nboundary);
    plan_assert(p, p->nkernel == 2, "small shared", "%d kernels", p->nkernel);
    fcp_plan_destroy(p);
}

/* A plan whose outputs are all values already has no kernel. */
Test(fusion, values_need_no_kernel) {
    float data[4] = {1, 2, 3, 4};
    fc_array *x = fc_from_host(ctx, FC_F32, FC_SHAPE(4), data);
    fc_array *outs[1] = {x};
    fcp_plan *p = plan_of("a value", outs, 1);
    cr_assert_eq(p->nkernel, 0);
    fcp_plan_destroy(p);
}

/* Kernels run after the kernels whose outputs they load. */
Test(fusion, kernels_are_in_dependency_order) {
    fc_array *x = wl_input(ctx, 0, FC_F32, FC_SHAPE(256, 128, 64));
    fc_array *s1 = fc_sum(x, FC_AXES(2), false);
    fc_array *s2 = fc_max(s1, FC_AXES(0), false);
    fc_array *outs[2] = {fc_mul(s1, fc_f64(ctx, 2.0)), fc_sub(s1, s2)};
    fcp_plan *p = plan_of("order", outs, 2);
    for (int i = 0; i < p->nkernel; i++)
        for (int l = 0; l < p->kernels[i].nleaf; l++) {
            const fc_array *leaf = p->kernels[i].leaves[l];
            for (int j = i; j < p->nkernel; j++)
                for (int q = 0; q < p->kernels[j].nout; q++)
                    plan_assert(p, p->kernels[j].outs[q] != leaf, "order",
                                "kernel %d loads what kernel %d stores", i, j);
        }
    fcp_plan_destroy(p);
}

/* ---- random DAGs: every plan is well formed --------------------------------------------- */

#include "random_dag.c"

static bool is_value_leaf(const fc_array *a) {
    return a->host || a->op == FCG_OP_DATA || a->op == FCG_OP_INPUT;
}

static bool same_shape(const fc_array *a, int nd, const int64_t *shape) {
    return a->ndim == nd && memcmp(a->shape, shape, (size_t)nd * sizeof *shape) == 0;
}

/* Structural invariants of a plan (see plan.h): order, kinds, stores, buffers. */
static void check_plan(const char *what, fcp_plan *p) {
    for (int i = 0; i < p->nkernel; i++) {
        const fcp_kernel *k = &p->kernels[i];
        plan_assert(p, k->nout >= 1, what, "kernel %d stores nothing", i);
        plan_assert(p, k->nleaf <= FCP_MAX_LEAVES, what, "kernel %d loads %d buffers, more than "
                    "FCP_MAX_LEAVES (%d)", i, k->nleaf, FCP_MAX_LEAVES);
        for (int q = 0; q < k->nout; q++) {
            bool inside = false;
            for (int j = 0; j < k->nnode; j++) inside |= k->nodes[j] == k->outs[q];
            plan_assert(p, inside, what, "kernel %d stores node %d it does not compute", i, q);
        }
        /* Every load is a value or an earlier kernel's store. */
        for (int l = 0; l < k->nleaf; l++) {
            const fc_array *leaf = k->leaves[l];
            bool ok = is_value_leaf(leaf);
            for (int j = 0; j < i && !ok; j++)
                for (int q = 0; q < p->kernels[j].nout; q++) ok |= p->kernels[j].outs[q] == leaf;
            plan_assert(p, ok, what, "kernel %d loads leaf %d that nothing stored before it", i, l);
        }
        int reductions = 0;
        for (int j = 0; j < k->nnode; j++) {
            const fc_array *a = k->nodes[j];
            fcg_kind kind = fcg_ops[a->op].kind;
            plan_assert(p, !is_value_leaf(a), what, "kernel %d computes a value leaf", i);
            /* a library kernel holds its call and the transposes its matmul reads by flag */
            /* a library kernel holds its library node, the views it reads through a flag
             * (fcp_lib_source) and the elementwise ops of an epilogue (fcp_lib_epilogue) */
            fcp_epilogue epi;
            bool epilogue = k->kind == FCP_KERNEL_LIB && fcp_lib_epilogue(k, &epi);
            const fc_array *lib = k->kind == FCP_KERNEL_LIB ? epi.lib : NULL;
            bool flag_view = false;
            for (int q = 0; lib && q < lib->nin; q++)
                flag_view |= lib->in[q] == a && fcp_lib_source(lib, q) != NULL;
            bool in_epilogue = epilogue && kind == FCG_KIND_EW;
            plan_assert(p, (kind == FCG_KIND_LIB) == (k->kind == FCP_KERNEL_LIB) || flag_view ||
                               in_epilogue,
                        what, "kernel %d (%s) holds %s", i, fcp_kernel_kind_names[k->kind],
                        fcg_ops[a->op].pyname);
            if (kind != FCG_KIND_REDUCE) continue;
            reductions++;
            plan_assert(p, k->kind == FCP_KERNEL_REDUCE || k->kind == FCP_KERNEL_ROW, what,
                        "kernel %d (%s) computes a reduction", i, fcp_kernel_kind_names[k->kind]);
            plan_assert(p, same_shape(a->in[0], k->ndim, k->space) && a->p.axes == k->rmask, what,
                        "kernel %d: reduction %s over another space or axes", i,
                        fcg_ops[a->op].pyname);
        }
        plan_assert(p, reductions == k->nred, what, "kernel %d: %d reductions, nred %d", i,
                    reductions, k->nred);
        if (k->kind == FCP_KERNEL_EW)
            for (int q = 0; q < k->nout; q++)
                plan_assert(p, same_shape(k->outs[q], k->ndim, k->space), what,
                            "elementwise kernel %d stores an array of another shape", i);
        if (k->kind == FCP_KERNEL_ROW) {
            int first = 0;
            while (first < k->ndim && !(k->rmask & (1u << first))) first++;
            uint32_t trailing = (uint32_t)(((1ull << k->ndim) - 1) & ~((1ull << first) - 1));
            plan_assert(p, k->rmask == trailing && k->rmask, what,
                        "row kernel %d reduces non-trailing axes 0x%x", i, k->rmask);
            /* streamed rows: a row's loads do not fit on chip, and there is a row a block */
            double row = 1, bytes = 0, rows = 1;
            for (int d = 0; d < k->ndim; d++) {
                if (k->rmask & (1u << d)) row *= (double)k->space[d];
                else rows *= (double)k->space[d];
            }
            for (int l = 0; l < k->nleaf; l++)
                if (same_shape(k->leaves[l], k->ndim, k->space))
                    bytes += (double)fc_dtype_size((fc_dtype)k->leaves[l]->dtype);
            if (bytes == 0) bytes = 4;
            plan_assert(p, !k->long_rows || (rows >= FCP_ROW_LONG_MIN_ROWS && row * bytes > FCP_ROW_MAX_BYTES),
                        what, "row kernel %d streams rows of %.0f elements (%.0f bytes each), %.0f rows",
                        i, row, bytes, rows);
        } else {
            plan_assert(p, !k->long_rows, what, "%s kernel %d says long_rows",
                        fcp_kernel_kind_names[k->kind], i);
        }
    }
    /* Every output is stored, or is a value already. */
    for (int o = 0; o < p->nout; o++) {
        bool stored = is_value_leaf(p->outs[o]);
        for (int i = 0; i < p->nkernel; i++)
            for (int q = 0; q < p->kernels[i].nout; q++) stored |= p->kernels[i].outs[q] == p->outs[o];
        plan_assert(p, stored, what, "output %d is never stored", o);
    }
    /* Buffers: big enough, and two stores share a slot only when their lives do not overlap. */
    int nk = p->nkernel;
    static int made[8192];
    plan_assert(p, p->nmat <= 8192, what, "%d materialised nodes", p->nmat);
    for (int m = 0; m < p->nmat; m++) {
        made[m] = -1;
        for (int i = 0; i < nk && made[m] < 0; i++)
            for (int q = 0; q < p->kernels[i].nout; q++)
                if (p->kernels[i].outs[q] == p->mat[m]) made[m] = i;
        plan_assert(p, made[m] >= 0, what, "materialised node %d has no producer", m);
        plan_assert(p, p->mat_buf[m] >= 0 && p->mat_buf[m] < p->nbuf, what, "slot %d of %d",
                    p->mat_buf[m], p->nbuf);
        size_t bytes = fcg_node_numel(p->mat[m]) * fc_dtype_size((fc_dtype)p->mat[m]->dtype);
        plan_assert(p, p->buf_bytes[p->mat_buf[m]] >= bytes, what, "slot %d holds %zu bytes, "
                    "node %d needs %zu", p->mat_buf[m], p->buf_bytes[p->mat_buf[m]], m, bytes);
        /* The recorded last use is the last kernel that loads it. */
        int last = made[m];
        for (int i = made[m] + 1; i < nk; i++)
            for (int l = 0; l < p->kernels[i].nleaf; l++)
                if (p->kernels[i].leaves[l] == p->mat[m]) last = i;
        plan_assert(p, p->mat_last_use[m] >= last, what, "node %d is read by kernel %d after its "
                    "last use %d", m, last, p->mat_last_use[m]);
    }
    for (int a = 0; a < p->nmat; a++)
        for (int b = a + 1; b < p->nmat; b++) {
            if (p->mat_buf[a] != p->mat_buf[b]) continue;
            bool disjoint = made[b] > p->mat_last_use[a] || made[a] > p->mat_last_use[b];
            plan_assert(p, disjoint, what, "nodes %d (kernels %d..%d) and %d (kernels %d..%d) "
                        "share slot %d while both live", a, made[a], p->mat_last_use[a], b,
                        made[b], p->mat_last_use[b], p->mat_buf[a]);
        }
}

/* Outputs that feed outputs (issue 13 item 4): an optimizer step returning p, m and v, p
 * computed from the new m and v, is one kernel that computes m and v once, stores them and
 * uses the registers; so is a chain of three outputs. Not where the reader needs another
 * element of the output (a reversed view: another thread computes it) or a broadcast of it,
 * nor where the reader also loads a buffer computed from the output by another kernel. */
Test(fusion, outputs_that_feed_outputs_are_one_kernel) {
    fc_array *p = wl_input(ctx, 0, FC_F32, FC_SHAPE(4096));
    fc_array *g = wl_input(ctx, 1, FC_F32, FC_SHAPE(4096));
    fc_array *m = wl_input(ctx, 2, FC_F32, FC_SHAPE(4096));
    fc_array *v = wl_input(ctx, 3, FC_F32, FC_SHAPE(4096));
    fc_array *m2 = fc_add(fc_mul(fc_f64(ctx, 0.9), m), fc_mul(fc_f64(ctx, 0.1), g));
    fc_array *v2 = fc_add(fc_mul(fc_f64(ctx, 0.999), v), fc_mul(fc_f64(ctx, 0.001), fc_square(g)));
    fc_array *p2 = fc_sub(p, fc_div(fc_mul(fc_f64(ctx, 0.001), m2),
                                    fc_add(fc_sqrt(v2), fc_f64(ctx, 1e-8))));
    fc_array *adam[3] = {p2, m2, v2};
    fcp_plan *pl = expect_kernels("adam step (p, m, v)", adam, 3, 1, 1);
    plan_assert(pl, pl->kernels[0].nout == 3 && pl->kernels[0].nleaf == 4, "adam step (p, m, v)",
                "%d outputs, %d loads", pl->kernels[0].nout, pl->kernels[0].nleaf);
    fcp_plan_destroy(pl);
    /* either order of the outputs, and a chain a -> b -> c */
    fc_array *rev[3] = {v2, m2, p2};
    fcp_plan_destroy(expect_kernels("adam step (v, m, p)", rev, 3, 1, 1));
    fc_array *a = fc_exp(g), *b = fc_mul(a, m), *c = fc_sub(b, a);
    fc_array *chain[3] = {c, a, b};
    fcp_plan_destroy(expect_kernels("a, b = f(a), c = f(a, b)", chain, 3, 1, 1));
    /* another element, or a broadcast of the output: two kernels */
    fc_array *flipped[2] = {a, fc_add(fc_flip(a, FC_ALL), m)};
    fcp_plan_destroy(expect_kernels("a and flip(a) + m", flipped, 2, 2, 2));
    fc_array *row = wl_input(ctx, 4, FC_F32, FC_SHAPE(64));
    fc_array *ra = fc_exp(row);
    fc_array *outer[2] = {ra, fc_mul(fc_reshape(ra, FC_SHAPE(64, 1)), fc_reshape(ra, FC_SHAPE(1, 64)))};
    fcp_plan_destroy(expect_kernels("a and a[:, None] * a[None, :]", outer, 2, 2, 2));
    /* the reader loads sum(a), which a reduction computes from a after a's kernel */
    fc_array *viasum[2] = {a, fc_add(a, fc_sum(a, FC_ALL, false))};
    fcp_plan *ps = expect_kernels("a and a + sum(a)", viasum, 2, 2, 3);
    check_plan("a and a + sum(a)", ps);
    fcp_plan_destroy(ps);
}

/* Seeds of the GPU differential run whose plans once ran a kernel before its producer: two
 * independent merges made a cycle between kernels (passes/fuse.c, reaches). */
Test(fusion, merged_kernels_never_wait_on_each_other) {
    const uint64_t seeds[] = {32981, 34794, 43632};
    for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) {
        rdag d;
        cr_assert_eq(rdag_build(ctx, seeds[i], NULL, &d), FC_OK);
        char what[64];
        snprintf(what, sizeof what, "random DAG seed %llu", (unsigned long long)seeds[i]);
        fcp_plan *p = plan_of(what, d.out, d.nout);
        check_plan(what, p);
        fcp_plan_destroy(p);
        rdag_free(&d);
    }
}

/* Many random plans: a merge that makes a cycle between
 * kernels met about one program in 5,000 (planning takes about 25 us a program). FUSEC_RANDOM_PLANS overrides the count. */
static int random_plans(void) {
    const char *e = getenv("FUSEC_RANDOM_PLANS");
    return e && atoi(e) > 0 ? atoi(e) : 50000;
}

Test(fusion, random_dag_plans_are_well_formed) {
    const int RANDOM_PLANS = random_plans();
    int kinds[FCP_KERNEL_SCATTER + 1] = {0}, kernels = 0;
    for (uint64_t seed = 0; seed < (uint64_t)RANDOM_PLANS; seed++) {
        rdag d;
        cr_assert_eq(rdag_build(ctx, seed, NULL, &d), FC_OK);
        char what[64];
        snprintf(what, sizeof what, "random DAG seed %llu", (unsigned long long)seed);
        fcp_plan *p = plan_of(what, d.out, d.nout);
        check_plan(what, p);
        for (int i = 0; i < p->nkernel; i++) kinds[p->kernels[i].kind]++;
        kernels += p->nkernel;
        fcp_plan_destroy(p);
        rdag_free(&d);
    }
    for (int k = 0; k <= FCP_KERNEL_SCATTER; k++)
        cr_assert_gt(kinds[k], 0, "no %s kernel in %d random DAGs",
                     fcp_kernel_kind_names[k], RANDOM_PLANS);
    cr_log_info("%d random DAGs: %d kernels (%d elementwise, %d reduce, %d row, %d library)",
                RANDOM_PLANS, kernels, kinds[0], kinds[1], kinds[2], kinds[3]);
}

/* The workloads' plans are well formed too. */
Test(fusion, workload_plans_are_well_formed) {
    for (int w = 0; w < WL_COUNT; w++) {
        fc_array *out[WL_MAX_OUT];
        int n = build_full(&wl_workloads[w], out);
        fcp_plan *p = plan_of(wl_workloads[w].name, out, n);
        check_plan(wl_workloads[w].name, p);
        fcp_plan_destroy(p);
    }
}

/* Slots are reused only after their last reader: here sin(x) (a matmul input) dies after the
 * matmul, tan(x[:, :32]) then takes its slot, and exp(x[:, :16]) must not take it again while
 * tan's value is still wanted (both are outputs). */
Test(fusion, live_buffers_never_share_a_slot) {
    fc_array *x = wl_input(ctx, 0, FC_F32, FC_SHAPE(64, 64));
    fc_array *outs[3] = {fc_matmul(fc_sin(x), x), fc_tan(fc_slice(x, FC_COLON, FC_S(0, 32, 1))),
                         fc_exp(fc_slice(x, FC_COLON, FC_S(0, 16, 1)))};
    fcp_plan *p = plan_of("sin(x) @ x, tan(x[:, :32]), exp(x[:, :16])", outs, 3);
    check_plan("sin(x) @ x, tan(x[:, :32]), exp(x[:, :16])", p);
    fcp_plan_destroy(p);
}

/* A kernel loads at most FCP_MAX_LEAVES buffers (the parameter space is bounded: past 32 KiB
 * NVRTC refuses the kernel), however wide the expression: a balanced sum of 200 inputs. */
Test(fusion, kernel_loads_are_bounded) {
    enum { N = 200 };
    fc_array *v[N];
    for (int i = 0; i < N; i++) v[i] = wl_input(ctx, i, FC_F32, FC_SHAPE(1024));
    for (int m = N; m > 1;) {
        int k = 0;
        for (int i = 0; i < m; i += 2) v[k++] = i + 1 < m ? fc_add(v[i], v[i + 1]) : v[i];
        m = k;
    }
    fcp_plan *p = plan_of("a balanced sum of 200 inputs", v, 1);
    check_plan("a balanced sum of 200 inputs", p);
    fcp_plan_destroy(p);
}

/* ---- in-place results (passes/donate.c) ------------------------------------------------- */

/* A value of `shape` with data (the plan sees a leaf holding a value). */
static fc_array *value_of(fc_dtype dtype, fc_shape shape) {
    int64_t n = 1;
    for (int i = 0; i < shape.ndim; i++) n *= shape.dim[i];
    double *data = calloc((size_t)(n ? n : 1), 16);
    fc_array *a = fc_from_host(ctx, dtype, shape, data);
    free(data);
    cr_assert_eq(fc_array_status(a), FC_OK);
    return a;
}

/* The donor fcp_donors picks for each of outs[0..n) against want[0..n) (NULL: none). */
static void check_donors(const char *what, fc_array *const *outs, int n, fc_array *const *want) {
    fcp_plan *p = plan_of(what, outs, n);
    fc_array *donor[8] = {0};
    cr_assert_eq(fcp_donors(p, donor), FC_OK);
    for (int o = 0; o < n; o++)
        plan_assert(p, donor[o] == want[o], what, "output %d: donor %p, expected %p", o,
                    (void *)donor[o], (void *)want[o]);
    fcp_plan_destroy(p);
}

/* Updates whose kernel reads the old value only at the element it writes take its buffer:
 * a masked fill, a slice assignment, an elementwise expression, a put (its updates kernel
 * does not read the old value), a cast between dtypes of one size. */
Test(fusion, updates_take_the_buffer_of_what_they_replace) {
    fc_array *x = value_of(FC_F32, FC_SHAPE(64, 48)), *m = fc_greater(x, fc_f64(ctx, 0.5));
    fc_array *v = value_of(FC_F32, FC_SHAPE(48));
    fc_array *outs[1] = {fc_setitem(x, 1, (fc_idx[]){FC_ARRAY_IDX(m)}, fc_f64(ctx, 2.0))};
    check_donors("x[x > 0.5] = 2", outs, 1, (fc_array *[]){x});
    outs[0] = fc_setitem(x, 2, (fc_idx[]){FC_S(1, 9, 2), FC_COLON}, v);
    check_donors("x[1:9:2, :] = v", outs, 1, (fc_array *[]){x});
    outs[0] = fc_add(fc_mul(x, x), fc_exp(x));
    check_donors("x * x + exp(x)", outs, 1, (fc_array *[]){x});
    fc_array *i = value_of(FC_I64, FC_SHAPE(5));
    fc_array *flat = fc_reshape(x, FC_SHAPE(64 * 48));
    outs[0] = fc_setitem(flat, 1, (fc_idx[]){FC_ARRAY_IDX(i)}, fc_f64(ctx, 1.0));
    check_donors("flat[i] = 1 (a put)", outs, 1, (fc_array *[]){NULL}); /* a view of x */
    fc_array *y = value_of(FC_F32, FC_SHAPE(3072));
    outs[0] = fc_setitem(y, 1, (fc_idx[]){FC_ARRAY_IDX(i)}, fc_f64(ctx, 1.0));
    check_donors("y[i] = 1 (a put)", outs, 1, (fc_array *[]){y});
    outs[0] = fc_cast(x, FC_I32);
    check_donors("x.astype(i32)", outs, 1, (fc_array *[]){x});
    /* two results cannot share one donor; the second takes the other value read */
    fc_array *z = value_of(FC_F32, FC_SHAPE(64, 48));
    fc_array *two[2] = {fc_add(x, z), fc_sub(x, z)};
    check_donors("x + z, x - z", two, 2, (fc_array *[]){x, z});
}

/* Reads that another thread's write could overtake keep the buffer apart: a gather, a view
 * (a reversed slice, a transpose), a broadcast, a read by a later kernel; so do a value that
 * is itself requested, and results of another element size or shape. */
Test(fusion, updates_that_read_elsewhere_take_no_buffer) {
    fc_array *x = value_of(FC_F32, FC_SHAPE(64, 64)), *none[2] = {NULL, NULL};
    fc_array *outs[2] = {fc_add(fc_slice(x, FC_S(FC_NIL, FC_NIL, -1), FC_COLON), x)};
    check_donors("x[::-1] + x", outs, 1, none);
    outs[0] = fc_add(fc_transpose(x), fc_f64(ctx, 1.0));
    check_donors("x.T + 1", outs, 1, none);
    fc_array *i = value_of(FC_I64, FC_SHAPE(64, 64));
    outs[0] = fc_add(fc_take(fc_reshape(x, FC_SHAPE(4096)), fc_reshape(i, FC_SHAPE(4096)), 0,
                             FC_TAKE_CLIP),
                     fc_reshape(x, FC_SHAPE(4096)));
    check_donors("take(x, i) + x", outs, 1, none);
    fc_array *row = value_of(FC_F32, FC_SHAPE(64));
    outs[0] = fc_add(x, row);
    check_donors("x + row (row broadcast)", outs, 1, (fc_array *[]){x});
    fc_array *sq = value_of(FC_F32, FC_SHAPE(1, 64));
    outs[0] = fc_mul(sq, row);
    check_donors("sq * row: [1, 64], its own shape", outs, 1, (fc_array *[]){sq});
    outs[0] = fc_cast(x, FC_F64);
    check_donors("x.astype(f64)", outs, 1, none);
    outs[0] = fc_exp(x), outs[1] = x;
    check_donors("exp(x), x", outs, 2, none);
    /* x is read again by the reduction's kernel, which runs after the elementwise one */
    outs[0] = fc_exp(x), outs[1] = fc_sum(fc_transpose(x), FC_AXES(0), false);
    fcp_plan *p = plan_of("exp(x), sum(x.T, 0)", outs, 2);
    fc_array *donor[2];
    cr_assert_eq(fcp_donors(p, donor), FC_OK);
    int ew = 0;
    while (ew < p->nkernel && p->kernels[ew].kind != FCP_KERNEL_EW) ew++;
    bool later = false;
    for (int k = ew + 1; k < p->nkernel; k++)
        for (int l = 0; l < p->kernels[k].nleaf; l++) later |= p->kernels[k].leaves[l] == x;
    plan_assert(p, donor[0] == (later ? NULL : x), "exp(x), sum(x.T, 0)",
                "donor %p with x read later: %d", (void *)donor[0], later);
    fcp_plan_destroy(p);
}

/* The nodes the passes make hash their plan-key shares only when a key first reaches them
 * (fc_array.unhashed): an expression a caller builds afterwards that hash-conses onto such a
 * node keys exactly as the same expression in a context that never planned. */
static fc_hash key_of_exp_cast(fc_ctx *c, fc_array *x, fc_array **cast_out) {
    fc_array *cast = fc_cast(x, FC_F32);
    fc_array *z = fc_exp(cast);
    fc_hash key;
    fc_array *const *order;
    size_t count;
    cr_assert_eq(fcg_plan_key(c, &z, 1, &key, &order, &count), FC_OK, "%s", fc_errmsg(c));
    if (cast_out) *cast_out = cast;
    return key;
}

Test(fusion, nodes_the_passes_make_key_like_any_other) {
    int8_t v[4] = {1, -2, 3, -4};
    fc_array *x = fc_from_host(ctx, FC_I8, FC_SHAPE(4), v);
    /* i8 -> f64 is exact, so simplify turns the cast chain into cast(x, f32), a new node */
    fc_array *y = fc_cast(fc_cast(x, FC_F64), FC_F32);
    fcp_plan *p = plan_of("cast chain", &y, 1);
    const fc_array *made = NULL;
    for (int k = 0; k < p->nkernel; k++)
        for (int i = 0; i < p->kernels[k].nnode; i++)
            if (p->kernels[k].nodes[i]->op == FCG_OP_CAST &&
                p->kernels[k].nodes[i]->in[0] == x)
                made = p->kernels[k].nodes[i];
    cr_assert_not_null(made, "simplify made no cast(x, f32)");
    cr_assert(made->unhashed, "a node the passes made was hashed as it was made");
    fc_array *cast;
    fc_hash key = key_of_exp_cast(ctx, x, &cast);
    cr_assert_eq(cast, made, "the caller's cast(x, f32) is not the node the passes made");
    cr_assert_not(made->unhashed, "the key did not hash the node it reached");
    fcp_plan_destroy(p);

    fc_ctx *other;
    fc_ctx_options o = {0};
    o.backend = FC_BACKEND_HOST;
    cr_assert_eq(fc_ctx_create(&other, &o), FC_OK);
    fc_array *x2 = fc_from_host(other, FC_I8, FC_SHAPE(4), v);
    fc_hash fresh = key_of_exp_cast(other, x2, NULL);
    cr_assert(key.lo == fresh.lo && key.hi == fresh.hi,
              "a node hashed late keys differently from one hashed as it was made");
    fc_ctx_destroy(other);
}
