/*
 * tests/test_nvrtc.c - the NVRTC stage (codegen/nvrtc_compile.h): CUDA C to cubin, no GPU.
 *
 * Cubins are checked as ELF images: the magic, 64-bit class, machine EM_CUDA (190), the SM
 * number the arch asked for (bits 8..15 of e_flags in the ELF that NVRTC 12.8+ writes), and
 * the kernel's extern "C" name in the image. A kernel with errors must come back with
 * NVRTC's log and the numbered offending lines. Compiles take ~40 ms each here, so the file
 * compiles about 50 small kernels in all.
 */
#include <criterion/criterion.h>

#include "fusec.h"
#include "graph.h"
#include "../codegen/nvrtc_compile.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- kernels ---------------------------------------------------------------------------- */

/* A small fused elementwise kernel: y = tanh(sin(x) + 0.1 x). */
static const char EW_SRC[] =
    "extern \"C\" __global__ void fused_ew(const float *__restrict__ x, float *__restrict__ y,\n"
    "                                     long long n)\n"
    "{\n"
    "    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    long long stride = (long long)gridDim.x * blockDim.x;\n"
    "    for (; i < n; i += stride) {\n"
    "        float a = x[i];\n"
    "        y[i] = tanhf(sinf(a) + a * 0.1f);\n"
    "    }\n"
    "}\n";

/* A row reduction: warp shuffles, then one shared-memory slot per warp. */
static const char RED_SRC[] =
    "extern \"C\" __global__ void __launch_bounds__(256)\n"
    "fused_sum_rows(const float *__restrict__ x, float *__restrict__ y, int ncols)\n"
    "{\n"
    "    __shared__ float partial[32];\n"
    "    const float *row = x + (long long)blockIdx.x * ncols;\n"
    "    float acc = 0.0f;\n"
    "    for (int c = threadIdx.x; c < ncols; c += blockDim.x) {\n"
    "        float v = row[c];\n"
    "        acc += v * v;\n"
    "    }\n"
    "    for (int off = 16; off > 0; off >>= 1)\n"
    "        acc += __shfl_xor_sync(0xffffffffu, acc, off);\n"
    "    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;\n"
    "    if (lane == 0) partial[warp] = acc;\n"
    "    __syncthreads();\n"
    "    if (warp == 0) {\n"
    "        acc = lane < (int)(blockDim.x >> 5) ? partial[lane] : 0.0f;\n"
    "        for (int off = 16; off > 0; off >>= 1)\n"
    "            acc += __shfl_xor_sync(0xffffffffu, acc, off);\n"
    "        if (lane == 0) y[blockIdx.x] = sqrtf(acc);\n"
    "    }\n"
    "}\n";

/* Line 6 lacks its semicolon. */
static const char SYNTAX_SRC[] =
    "extern \"C\" __global__ void broken(const float *x, float *y, int n)\n" /* 1 */
    "{\n"                                                                    /* 2 */
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"                   /* 3 */
    "    if (i >= n) return;\n"                                              /* 4 */
    "    float a = x[i];\n"                                                  /* 5 */
    "    y[i] = a * 2.0f\n"                                                  /* 6 */
    "}\n"                                                                    /* 7 */
    "// trailing line 8\n"                                                   /* 8 */
    "// trailing line 9\n";                                                  /* 9 */

/* ---- helpers ---------------------------------------------------------------------------- */

static fc_ctx *new_ctx(void) {
    fc_ctx *ctx = NULL;
    fc_ctx_options o = {.backend = FC_BACKEND_HOST};
    cr_assert_eq(fc_ctx_create(&ctx, &o), FC_OK);
    return ctx;
}

static uint32_t rd32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The bytes of `needle` (without NUL) occur in the image. */
static bool image_has(const fcn_cubin *c, const char *needle) {
    size_t n = strlen(needle);
    for (size_t i = 0; c->size >= n && i + n <= c->size; i++)
        if (memcmp(c->data + i, needle, n) == 0) return true;
    return false;
}

/* A cubin for SM `sm` that defines `kernel`. */
static void check_cubin(const fcn_cubin *c, int sm, const char *kernel) {
    cr_assert_not_null(c->data);
    cr_assert_gt(c->size, 64u);
    cr_assert_eq(memcmp(c->data, "\x7f" "ELF", 4), 0, "no ELF magic");
    cr_assert_eq(c->data[4], 2, "not a 64-bit ELF");
    cr_assert_eq(c->data[18] | c->data[19] << 8, 190, "machine is not EM_CUDA");
    cr_assert_eq((rd32(c->data + 0x30) >> 8) & 0xff, (uint32_t)sm, "e_flags 0x%x, wanted sm_%d",
                 rd32(c->data + 0x30), sm);
    cr_assert(image_has(c, kernel), "kernel %s not in the cubin", kernel);
    cr_assert_null(c->message);
    cr_assert_not_null(c->log);
    cr_assert_gt(c->compile_ms, 0.0);
    cr_assert_lt(c->compile_ms, 60000.0);
}

/* ---- arch handling ---------------------------------------------------------------------- */

Test(nvrtc, version_and_supported_archs) {
    int major = 0, minor = -1;
    cr_assert_eq(fcn_version(&major, &minor), FC_OK);
    cr_assert_geq(major, 12);
    cr_assert_geq(minor, 0);
    int n = 0, archs[128];
    cr_assert_eq(fcn_supported_archs(NULL, 0, &n), FC_OK);
    cr_assert_gt(n, 1);
    cr_assert_leq(n, 128);
    int n2 = 0;
    cr_assert_eq(fcn_supported_archs(archs, 128, &n2), FC_OK);
    cr_assert_eq(n, n2);
    bool has80 = false, has90 = false;
    for (int i = 0; i < n; i++) {
        if (i) cr_assert_gt(archs[i], archs[i - 1], "not ascending");
        has80 |= archs[i] == 80;
        has90 |= archs[i] == 90;
    }
    cr_assert(has80 && has90);
    cr_assert_eq(fcn_supported_archs(NULL, 0, NULL), FC_ERR_NULL);
    cr_assert_eq(fcn_supported_archs(NULL, 3, &n), FC_ERR_NULL);
}

Test(nvrtc, arch_validation) {
    char msg[1024];
    cr_assert_eq(fcn_check_arch("sm_80", msg, sizeof msg), FC_OK);
    cr_assert_eq(fcn_check_arch("sm_90", msg, sizeof msg), FC_OK);
    cr_assert_eq(fcn_check_arch("sm_90a", msg, sizeof msg), FC_OK);

    /* Well formed but not built by this NVRTC (13 dropped Volta; no SM 1.0 ever). */
    cr_assert_eq(fcn_check_arch("sm_10", msg, sizeof msg), FC_ERR_UNSUPPORTED);
    cr_assert(strstr(msg, "\"sm_10\"") && strstr(msg, "not supported") && strstr(msg, "sm_80") &&
              strstr(msg, "sm_90"), "%s", msg);
    cr_assert_eq(fcn_check_arch("sm_80a", msg, sizeof msg), FC_ERR_UNSUPPORTED);
    cr_assert(strstr(msg, "sm_90a"), "%s", msg);
    cr_assert_eq(fcn_check_arch("sm_89f", msg, sizeof msg), FC_ERR_UNSUPPORTED);

    const char *malformed[] = {"sm90", "sm_", "sm_9", "sm_9x", "sm_090", "sm_90b", "SM_90",
                               "sm_ 90", "sm_+90", "sm_90 ", "", "gfx90a", "sm_99999"};
    for (size_t i = 0; i < sizeof malformed / sizeof *malformed; i++) {
        msg[0] = '\0';
        cr_assert_eq(fcn_check_arch(malformed[i], msg, sizeof msg), FC_ERR_INVALID, "%s",
                     malformed[i]);
        cr_assert(strstr(msg, "bad arch") && strstr(msg, "sm_NN"), "%s: %s", malformed[i], msg);
    }
    cr_assert_eq(fcn_check_arch("compute_90", msg, sizeof msg), FC_ERR_INVALID);
    cr_assert(strstr(msg, "virtual") && strstr(msg, "sm_90"), "%s", msg);
    cr_assert_eq(fcn_check_arch(NULL, msg, sizeof msg), FC_ERR_NULL);
    cr_assert_eq(fcn_check_arch("sm_70", NULL, 0), FC_ERR_UNSUPPORTED); /* no message buffer */
}

Test(nvrtc, unsupported_arch_fails_before_compiling) {
    fc_ctx *ctx = new_ctx();
    fcn_cubin c;
    memset(&c, 0x5a, sizeof c);
    cr_assert_eq(fcn_compile(ctx, EW_SRC, NULL, "sm_10", 0, NULL, 0, &c), FC_ERR_UNSUPPORTED);
    cr_assert_null(c.data);
    cr_assert_eq(c.size, 0u);
    cr_assert_null(c.log, "NVRTC should not have run");
    cr_assert_not_null(c.message);
    cr_assert(strstr(c.message, "sm_10") && strstr(c.message, "sm_90"), "%s", c.message);
    fcn_cubin_free(ctx, &c);
    fcn_cubin_free(ctx, &c); /* released twice: a no-op */

    /* The last arch is bad: nothing is compiled, the bad entry says why. */
    const char *archs[] = {"sm_80", "sm_90", "sm_9x"};
    fcn_cubin out[3];
    cr_assert_eq(fcn_compile_archs(ctx, EW_SRC, NULL, archs, 3, 0, NULL, 0, out), FC_ERR_INVALID);
    cr_assert_null(out[0].data);
    cr_assert_null(out[0].log);
    cr_assert_null(out[1].data);
    cr_assert_not_null(out[2].message);
    cr_assert(strstr(out[2].message, "sm_9x"), "%s", out[2].message);
    fcn_cubins_free(ctx, out, 3);
    cr_assert_eq(fcn_compile_archs(ctx, EW_SRC, NULL, archs, 0, 0, NULL, 0, out), FC_ERR_INVALID);
    cr_assert_eq(fcn_compile(NULL, EW_SRC, NULL, "sm_90", 0, NULL, 0, &c), FC_ERR_NULL);
    cr_assert_eq(fcn_compile(ctx, NULL, NULL, "sm_90", 0, NULL, 0, &c), FC_ERR_NULL);
    fcn_cubin_free(ctx, &c);
    cr_assert_eq(fcn_compile(ctx, EW_SRC, NULL, NULL, 0, NULL, 0, &c), FC_ERR_NULL);
    fcn_cubin_free(ctx, &c);
    cr_assert_eq(fcn_compile(ctx, EW_SRC, NULL, "sm_90", 0, NULL, 0, NULL), FC_ERR_NULL);
    fc_ctx_destroy(ctx);
}

/* ---- options ---------------------------------------------------------------------------- */

Test(nvrtc, option_list) {
    fcn_options o;
    char msg[512];
    cr_assert_eq(fcn_options_make(&o, "sm_90", 0, NULL, 0, msg, sizeof msg), FC_OK);
    const char *want[] = {"--std=c++17",  "-default-device",  "--minimal",
                          "--fmad=false", "--ftz=false",      "--prec-div=true",
                          "--prec-sqrt=true", "--gpu-architecture=sm_90"};
    cr_assert_eq(o.n, 8);
    for (int i = 0; i < o.n; i++) cr_assert_str_eq(o.opt[i], want[i]);

    const char *extra[] = {"-DFOO=1", "-DBAR=2"};
    cr_assert_eq(fcn_options_make(&o, "sm_80", FCN_LINEINFO | FCN_FMAD, extra, 2, msg, sizeof msg),
                 FC_OK);
    cr_assert_eq(o.n, 11);
    cr_assert_str_eq(o.opt[3], "--fmad=true");
    cr_assert_str_eq(o.opt[7], "-lineinfo");
    cr_assert_str_eq(o.opt[8], "-DFOO=1");
    cr_assert_str_eq(o.opt[9], "-DBAR=2");
    cr_assert_str_eq(o.opt[10], "--gpu-architecture=sm_80");
    cr_assert_eq(fcn_options_make(&o, "sm_90a", FCN_FAST_MATH, NULL, 0, msg, sizeof msg), FC_OK);
    cr_assert_eq(o.n, 5);
    cr_assert_str_eq(o.opt[3], "--use_fast_math");
    cr_assert_str_eq(o.opt[4], "--gpu-architecture=sm_90a");
    for (int i = 0; i < o.n; i++) cr_assert_null(strstr(o.opt[i], "fmad=false"));

    const char *many[FCN_MAX_EXTRA + 1];
    for (int i = 0; i <= FCN_MAX_EXTRA; i++) many[i] = "-DX";
    cr_assert_eq(fcn_options_make(&o, "sm_90", 0, many, FCN_MAX_EXTRA, msg, sizeof msg), FC_OK);
    cr_assert_eq(o.n, 7 + FCN_MAX_EXTRA + 1);
    cr_assert_eq(fcn_options_make(&o, "sm_90", 0, many, FCN_MAX_EXTRA + 1, msg, sizeof msg),
                 FC_ERR_INVALID);
    cr_assert_eq(fcn_options_make(&o, "sm_90", 0, many, -1, msg, sizeof msg), FC_ERR_INVALID);
    cr_assert_eq(fcn_options_make(&o, "sm_90", 0, NULL, 1, msg, sizeof msg), FC_ERR_NULL);
    const char *null_extra[] = {NULL};
    cr_assert_eq(fcn_options_make(&o, "sm_90", 0, null_extra, 1, msg, sizeof msg), FC_ERR_NULL);
    cr_assert_eq(fcn_options_make(&o, "sm_7", 0, NULL, 0, msg, sizeof msg), FC_ERR_INVALID);
    cr_assert_eq(fcn_options_make(NULL, "sm_90", 0, NULL, 0, msg, sizeof msg), FC_ERR_NULL);
}

/* The flags reach NVRTC: each changes the binary of a kernel it matters to. */
Test(nvrtc, flags_change_the_binary) {
    fc_ctx *ctx = new_ctx();
    static const char fma_src[] =
        "extern \"C\" __global__ void axpb(const float *a, const float *b, float *y)\n"
        "{ int i = threadIdx.x; y[i] = a[i] * b[i] + y[i]; }\n";
    fcn_cubin plain, fmad, lineinfo;
    cr_assert_eq(fcn_compile(ctx, fma_src, "axpb.cu", "sm_90", 0, NULL, 0, &plain), FC_OK);
    cr_assert_eq(fcn_compile(ctx, fma_src, "axpb.cu", "sm_90", FCN_FMAD, NULL, 0, &fmad), FC_OK);
    cr_assert_eq(fcn_compile(ctx, fma_src, "axpb.cu", "sm_90", FCN_LINEINFO, NULL, 0, &lineinfo),
                 FC_OK);
    check_cubin(&plain, 90, "axpb");
    check_cubin(&fmad, 90, "axpb");
    check_cubin(&lineinfo, 90, "axpb");
    cr_assert(plain.size != fmad.size || memcmp(plain.data, fmad.data, plain.size) != 0,
              "--fmad made no difference to a*b+c");
    cr_assert_gt(lineinfo.size, plain.size);
    cr_assert(image_has(&lineinfo, "axpb.cu"), "-lineinfo names the program in the cubin");
    cr_assert(!image_has(&plain, "axpb.cu"), "without -lineinfo the name must not be in it");
    fcn_cubin_free(ctx, &plain);
    fcn_cubin_free(ctx, &fmad);
    fcn_cubin_free(ctx, &lineinfo);

    /* An option NVRTC refuses. */
    const char *bad[] = {"--no-such-option"};
    fcn_cubin c;
    cr_assert_eq(fcn_compile(ctx, fma_src, "axpb.cu", "sm_90", 0, bad, 1, &c), FC_ERR_INVALID);
    cr_assert_null(c.data);
    cr_assert(strstr(c.message, "--no-such-option") &&
                  strstr(c.message, "NVRTC_ERROR_INVALID_OPTION"),
              "%s", c.message);
    fcn_cubin_free(ctx, &c);
    fc_ctx_destroy(ctx);
}

/* ---- compiling --------------------------------------------------------------------------- */

Test(nvrtc, elementwise_for_sm80_and_sm90) {
    fc_ctx *ctx = new_ctx();
    const char *archs[] = {"sm_80", "sm_90"};
    fcn_cubin out[2];
    cr_assert_eq(fcn_compile_archs(ctx, EW_SRC, "ew.cu", archs, 2, 0, NULL, 0, out), FC_OK,
                 "%s", out[0].message ? out[0].message : out[1].message ? out[1].message : "");
    check_cubin(&out[0], 80, "fused_ew");
    check_cubin(&out[1], 90, "fused_ew");
    cr_assert_str_eq(out[0].arch, "sm_80");
    cr_assert_str_eq(out[1].arch, "sm_90");
    cr_assert(out[0].size != out[1].size || memcmp(out[0].data, out[1].data, out[0].size) != 0);
    fcn_cubins_free(ctx, out, 2);
    fc_ctx_destroy(ctx);
}

Test(nvrtc, block_reduction_for_sm80_and_sm90) {
    fc_ctx *ctx = new_ctx();
    fcn_cubin c80, c90;
    cr_assert_eq(fcn_compile(ctx, RED_SRC, "red.cu", "sm_80", 0, NULL, 0, &c80), FC_OK, "%s",
                 c80.message ? c80.message : "");
    cr_assert_eq(fcn_compile(ctx, RED_SRC, "red.cu", "sm_90", 0, NULL, 0, &c90), FC_OK, "%s",
                 c90.message ? c90.message : "");
    check_cubin(&c80, 80, "fused_sum_rows");
    check_cubin(&c90, 90, "fused_sum_rows");
    fcn_cubin_free(ctx, &c80);
    fcn_cubin_free(ctx, &c90);
    fc_ctx_destroy(ctx);
}

/* The cache keys binaries by source and options: the same inputs must give the same bytes, in
 * this process and in another (a child process compiles its own copy and pipes it back). */
Test(nvrtc, same_source_gives_identical_cubin) {
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    pid_t child = fork();
    cr_assert_neq(child, -1);
    if (child == 0) {
        close(fds[0]);
        fc_ctx *cctx = new_ctx();
        fcn_cubin c;
        int ok = fcn_compile(cctx, RED_SRC, "k.cu", "sm_90", 0, NULL, 0, &c) == FC_OK;
        size_t off = 0;
        while (ok && off < c.size) {
            ssize_t w = write(fds[1], c.data + off, c.size - off);
            if (w <= 0) break;
            off += (size_t)w;
        }
        close(fds[1]);
        fcn_cubin_free(cctx, &c);
        fc_ctx_destroy(cctx);
        _exit(ok ? 0 : 1);
    }
    close(fds[1]);
    fc_ctx *ctx = new_ctx();
    fcn_cubin a, b, other;
    cr_assert_eq(fcn_compile(ctx, RED_SRC, "k.cu", "sm_90", 0, NULL, 0, &a), FC_OK);
    cr_assert_eq(fcn_compile(ctx, RED_SRC, "k.cu", "sm_90", 0, NULL, 0, &b), FC_OK);
    cr_assert_eq(fcn_compile(ctx, EW_SRC, "k.cu", "sm_90", 0, NULL, 0, &other), FC_OK);
    cr_assert_eq(a.size, b.size);
    cr_assert_eq(memcmp(a.data, b.data, a.size), 0, "two compiles differ");
    cr_assert(a.size != other.size || memcmp(a.data, other.data, a.size) != 0);

    unsigned char *theirs = malloc(a.size + 1);
    cr_assert_not_null(theirs);
    size_t got = 0;
    for (ssize_t r; (r = read(fds[0], theirs + got, a.size + 1 - got)) > 0;) got += (size_t)r;
    close(fds[0]);
    int wstatus = 0;
    cr_assert_eq(waitpid(child, &wstatus, 0), child);
    cr_assert(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0, "the child's compile failed");
    cr_assert_eq(got, a.size, "the other process's cubin has %zu bytes, this one %zu", got, a.size);
    cr_assert_eq(memcmp(theirs, a.data, a.size), 0, "the other process's cubin differs");
    free(theirs);
    fcn_cubin_free(ctx, &a);
    fcn_cubin_free(ctx, &b);
    fcn_cubin_free(ctx, &other);
    fc_ctx_destroy(ctx);
}

/* ---- errors ------------------------------------------------------------------------------ */

Test(nvrtc, syntax_error_quotes_log_and_source) {
    fc_ctx *ctx = new_ctx();
    fcn_cubin c;
    fc_status st = fcn_compile(ctx, SYNTAX_SRC, "broken.cu", "sm_90", 0, NULL, 0, &c);
    cr_assert_eq(st, FCN_ERR_COMPILE, "%s", fc_strerror(st));
    cr_assert_null(c.data);
    cr_assert_eq(c.size, 0u);
    cr_assert_not_null(c.log);
    cr_assert_not_null(c.message);
    const char *m = c.message;
    /* NVRTC reports the missing ';' where the statement should have ended: line 6 or 7. */
    const char *at = strstr(c.log, "broken.cu(");
    cr_assert_not_null(at, "%s", c.log);
    int line = atoi(at + strlen("broken.cu("));
    cr_assert(line == 6 || line == 7, "log names line %d:\n%s", line, c.log);
    cr_assert(strstr(m, "broken.cu") && strstr(m, "sm_90") && strstr(m, "NVRTC_ERROR_COMPILATION"),
              "%s", m);
    /* The log's error line is in the message, whole. */
    char first[256];
    size_t first_len = strcspn(at, "\n");
    cr_assert_lt(first_len, sizeof first);
    memcpy(first, at, first_len);
    first[first_len] = '\0';
    cr_assert(strstr(first, "error"), "%s", first);
    cr_assert(strstr(m, first), "log line \"%s\" missing:\n%s", first, m);

    /* The numbered lines: the named one marked, two either side plain, nothing further. */
    static const char *const lines[] = {
        NULL,
        "extern \"C\" __global__ void broken(const float *x, float *y, int n)",
        "{",
        "    int i = blockIdx.x * blockDim.x + threadIdx.x;",
        "    if (i >= n) return;",
        "    float a = x[i];",
        "    y[i] = a * 2.0f",
        "}",
        "// trailing line 8",
        "// trailing line 9",
    };
    char want[256];
    for (int l = 1; l <= 9; l++) {
        snprintf(want, sizeof want, "%c %5d | %s\n", l == line ? '>' : ' ', l, lines[l]);
        bool in_window = l >= line - 2 && l <= line + 2;
        cr_assert_eq(strstr(m, want) != NULL, in_window, "line %d %s:\n%s", l,
                     in_window ? "not quoted" : "quoted", m);
    }
    fcn_cubin_free(ctx, &c);
    fc_ctx_destroy(ctx);
}

/* Errors on line 1 and on line 30: clipped windows, two of them, "..." between. */
Test(nvrtc, two_errors_two_windows) {
    fc_ctx *ctx = new_ctx();
    char src[4096];
    size_t len = 0;
    len += (size_t)snprintf(src + len, sizeof src - len, "undeclared_type a1;\n");
    for (int l = 2; l <= 29; l++)
        len += (size_t)snprintf(src + len, sizeof src - len, "// filler %d\n", l);
    len += (size_t)snprintf(src + len, sizeof src - len,
                            "extern \"C\" __global__ void k30(int *p) { *p = missing_name; }\n");
    (void)len;
    fcn_cubin c;
    cr_assert_eq(fcn_compile(ctx, src, "two.cu", "sm_80", 0, NULL, 0, &c), FCN_ERR_COMPILE);
    const char *m = c.message;
    cr_assert(strstr(m, "two.cu(1): error") && strstr(m, "two.cu(30): error"), "%s", m);
    cr_assert(strstr(m, ">     1 | undeclared_type a1;\n"), "%s", m);
    cr_assert(strstr(m, "      3 | // filler 3\n"), "%s", m);
    cr_assert_null(strstr(m, "| // filler 4\n"), "%s", m);
    cr_assert(strstr(m, "      ...\n"), "%s", m);
    cr_assert(strstr(m, "     28 | // filler 28\n"), "%s", m);
    cr_assert(strstr(m, ">    30 | extern \"C\""), "%s", m);
    cr_assert_null(strstr(m, "| // filler 27\n"), "%s", m);
    /* The source section comes after the whole log. */
    cr_assert_gt(strstr(m, ">     1 |") - m, strstr(m, "two.cu(30): error") - m);
    fcn_cubin_free(ctx, &c);
    fc_ctx_destroy(ctx);
}

/* ---- threads ----------------------------------------------------------------------------- */

#define N_KERNELS 8
#define N_THREADS 4

typedef struct job {
    fc_ctx *ctx;
    const char *src[N_KERNELS];
    fcn_cubin out[N_KERNELS];
    fc_status st[N_KERNELS];
} job;

typedef struct worker {
    job *jobs;
    int thread;
} worker;

static void *compile_share(void *arg) {
    worker *w = arg;
    /* Thread t compiles kernels t and t + N_THREADS. */
    for (int k = w->thread; k < N_KERNELS; k += N_THREADS)
        w->jobs->st[k] = fcn_compile(w->jobs->ctx, w->jobs->src[k], "k.cu",
                                     k % 2 ? "sm_80" : "sm_90", 0, NULL, 0, &w->jobs->out[k]);
    return NULL;
}

Test(nvrtc, eight_kernels_from_four_threads) {
    static const char *const ops[N_KERNELS] = {"a + b", "a * b", "a - b", "fmaxf(a, b)",
                                               "sqrtf(a) + b", "a / b", "expf(a) * b",
                                               "fminf(a, b) - 1.0f"};
    char src[N_KERNELS][512];
    char name[N_KERNELS][32];
    job j = {.ctx = new_ctx()};
    for (int k = 0; k < N_KERNELS; k++) {
        snprintf(name[k], sizeof name[k], "fused_k%d", k);
        snprintf(src[k], sizeof src[k],
                 "extern \"C\" __global__ void %s(const float *x, const float *y, float *z,\n"
                 "                                 int n)\n"
                 "{\n"
                 "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                 "    if (i < n) { float a = x[i], b = y[i]; z[i] = %s; }\n"
                 "}\n",
                 name[k], ops[k]);
        j.src[k] = src[k];
    }
    pthread_t tid[N_THREADS];
    worker w[N_THREADS];
    for (int t = 0; t < N_THREADS; t++) {
        w[t] = (worker){.jobs = &j, .thread = t};
        cr_assert_eq(pthread_create(&tid[t], NULL, compile_share, &w[t]), 0);
    }
    for (int t = 0; t < N_THREADS; t++) pthread_join(tid[t], NULL);

    for (int k = 0; k < N_KERNELS; k++) {
        cr_assert_eq(j.st[k], FC_OK, "kernel %d: %s", k, j.out[k].message ? j.out[k].message : "");
        check_cubin(&j.out[k], k % 2 ? 80 : 90, name[k]);
        for (int other = 0; other < N_KERNELS; other++)
            if (other != k) cr_assert(!image_has(&j.out[k], name[other]), "%d holds %d", k, other);
        /* The same bytes as a compile on this thread alone. */
        fcn_cubin serial;
        cr_assert_eq(fcn_compile(j.ctx, src[k], "k.cu", k % 2 ? "sm_80" : "sm_90", 0, NULL, 0,
                                 &serial),
                     FC_OK);
        cr_assert_eq(serial.size, j.out[k].size);
        cr_assert_eq(memcmp(serial.data, j.out[k].data, serial.size), 0, "kernel %d differs", k);
        fcn_cubin_free(j.ctx, &serial);
    }
    fcn_cubins_free(j.ctx, j.out, N_KERNELS);
    fc_ctx_destroy(j.ctx);
}

/* ---- allocation failures ------------------------------------------------------------------ */

typedef struct failing_alloc {
    long calls, fail_at, live;
    bool injected, size_mismatch;
} failing_alloc;

typedef union header {
    size_t size;
    max_align_t align;
} header;

static void *fa_malloc(void *user, size_t size) {
    failing_alloc *fa = user;
    if (++fa->calls == fa->fail_at) {
        fa->injected = true;
        return NULL;
    }
    header *h = malloc(sizeof *h + size);
    if (!h) return NULL;
    h->size = size;
    fa->live++;
    return h + 1;
}

static void fa_free(void *user, void *ptr, size_t size) {
    failing_alloc *fa = user;
    header *h = (header *)ptr - 1;
    if (h->size != size) fa->size_mismatch = true;
    fa->live--;
    free(h);
}

/* realloc_fn NULL: fusec falls back to malloc + copy + free, so every growth is counted. */
static void run_with_failures(const char *src, fc_status expected) {
    for (long n = 1;; n++) {
        failing_alloc fa = {0};
        fc_allocator a = {.malloc_fn = fa_malloc, .free_fn = fa_free, .user = &fa};
        fc_ctx_options o = {.backend = FC_BACKEND_HOST, .allocator = &a};
        fc_ctx *ctx = NULL;
        cr_assert_eq(fc_ctx_create(&ctx, &o), FC_OK);
        long live_before = fa.live;
        fa.fail_at = fa.calls + n;
        fcn_cubin c;
        fc_status st = fcn_compile(ctx, src, "f.cu", "sm_90", 0, NULL, 0, &c);
        bool injected = fa.injected;
        if (injected) {
            cr_assert_eq(st, FC_ERR_NOMEM, "n=%ld: %s", n, fc_strerror(st));
            cr_assert_null(c.data);
        } else {
            cr_assert_eq(st, expected, "n=%ld: %s", n, fc_strerror(st));
            cr_assert_eq(c.message == NULL, expected == FC_OK);
        }
        fcn_cubin_free(ctx, &c);
        cr_assert_eq(fa.live, live_before, "n=%ld: %ld blocks leaked", n, fa.live - live_before);
        fc_ctx_destroy(ctx);
        cr_assert_eq(fa.live, 0);
        cr_assert(!fa.size_mismatch, "n=%ld: a block freed with the wrong size", n);
        if (!injected) break;
        cr_assert_lt(n, 50, "no end to the allocations");
    }
}

Test(nvrtc, allocation_failures_are_clean) {
    run_with_failures(EW_SRC, FC_OK);
    run_with_failures(SYNTAX_SRC, FCN_ERR_COMPILE);
}
