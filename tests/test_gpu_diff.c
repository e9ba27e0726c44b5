/*
 * tests/test_gpu_diff.c - the CUDA backend against the host reference on random programs, each
 * slice of seeds in a child process, so that a crash costs one seed and the run goes on; and a
 * few programs over more than 2^31 elements (64-bit indexing).
 *
 * The random programs (gpu/random_dags_match_the_host_reference). Each seed builds the same
 * random DAG (tests/random_dag.c: every op and dtype, zero-size and size-1 extents) in a host
 * context and a CUDA context, evaluates all outputs in both and compares them by the rules
 * below. Skipped, visibly, where there is no GPU.
 *   - Isolation. This process (the parent) never touches CUDA: a CUDA context does not survive
 *     fork. A child process runs a slice of seeds (FUSEC_DIFF_SLICE, default 200) with one
 *     CUDA context and reports each finished seed through a pipe. When a child dies (a signal,
 *     an abort, an exit before its slice is done) or goes silent for FUSEC_DIFF_SEED_TIMEOUT
 *     seconds (default 120; it is killed), the seed it was running is a crash; a GPU error
 *     that kills the context (FC_ERR_BACKEND: an illegal address and the like) is a crash of
 *     its seed too, and the child stops. Either way a new child starts at the next seed. The
 *     probe that decides whether there is a GPU runs in a child as well. Each child takes the
 *     device the environment gives it (device 0 of CUDA_VISIBLE_DEVICES), so a script can
 *     spread processes over GPUs (tools/gpu-diff.sh).
 *   - Reports. Every failing seed (crash or mismatch) is printed as it happens and listed at
 *     the end, and FUSEC_DIFF_REPORT (a file) receives each one as "# seed N: crash|mismatch:
 *     reason" followed by the program as .fc (rebuilt in a short-lived child on the host
 *     backend, so a generator that crashes cannot take the parent down). A progress line goes
 *     to stderr after each slice ("gpu-diff: progress programs=... crashes=... last=..."); the
 *     summary, on stdout, reads "gpu differential: P programs, O outputs compared, C crashes,
 *     M mismatches, A failing alike, seeds F..L, T s; ..." and again as key=value pairs
 *     ("gpu differential: totals ...") for tools/gpu-diff.sh, which adds them up.
 *   - Knobs. FUSEC_DIFF_DAGS (count, default 2000), FUSEC_DIFF_FIRST (first seed, default 0),
 *     FUSEC_DIFF_SEEDS="11,163" (just these seeds: reproducing a report), FUSEC_DIFF_SLICE,
 *     FUSEC_DIFF_SEED_TIMEOUT, FUSEC_DIFF_REPORT, FUSEC_DIFF_INPUTS (a directory: each
 *     failing seed's inputs as .npy beside the report, see save_inputs); FUSEC_DIFF_BACKEND=host
 *     runs the host backend against itself (rule 1 only: the machinery and tools/gpu-diff.sh
 *     where there is no GPU).
 *     FUSEC_DIFF_TEST_CRASH_SEED="N[:how],..." makes the child misbehave at seed N (how: abort,
 *     the default; hang; dead, a dead-context error): gpu_diff_machinery's test runs the
 *     machinery with the host backend on both sides and checks that such seeds are crashes
 *     and that the run goes on past them.
 *
 * Tolerance rules. A program matches when the two sides agree on every output by these rules;
 * anything else is a mismatch. The summary line counts how often rules 2-6 were needed.
 *   1. Exactly: integer and bool outputs bit for bit; any output whose bytes are identical.
 *      The host backend against itself (the machinery's test) is held to this rule alone.
 *   2. Floats, within rtol * (|host| + scale) or atol = 1e-30 (subnormal noise), where rtol is
 *      set by the least precise float dtype among the results and loop dtypes of the program
 *      (f16 2e-2, bf16 1e-1, f32 / c64 1e-4, f64 / c128 1e-9: tv_gpu_rtol) and scale is 1e-3
 *      times the largest finite |host| of that output; complex parts each. Why: both sides
 *      compute f16 / bf16 ops in f32 and round after every op, but CUDA's f32 and f64 math
 *      functions are within 1-4 ulp of the correctly rounded result where glibc's are within
 *      1, so a result can round to the neighbouring f16 / bf16 / f32 value (a step of at
 *      most 2^-10, 2^-7, 2^-23 relative), and later ops carry and amplify that (a chain of
 *      20 ops, a subtraction of near-equal values); float sums accumulate in f64 (c128) on
 *      both sides, sequentially in index order on the host and as a fixed tree of warps and
 *      blocks on the GPU, so the two f64 sums differ in their last bits and can round to
 *      neighbouring values of the output dtype; var / std use two passes on the host and a
 *      batched Welford / Chan update on the GPU. scale: where values cancel (a sum, a - b of
 *      near-equal values) the error is proportional to the operands, not to the result, and
 *      the output's largest value stands for the operands' size. cuFFT and cuBLAS sum in
 *      other orders too (their error grows as log n and n times the input's size).
 *   3. NaN meets NaN, whatever its sign and payload (a NaN that arithmetic makes is negative
 *      on x86 and positive on NVIDIA GPUs); an infinity meets the same infinity, or a finite
 *      value of the same sign within rtol of the dtype's largest finite value (a result at the
 *      overflow threshold rounds to the largest value on one side and to inf on the other).
 *   4. Both sides failing with the same status (an error both find, such as an integer to a
 *      negative power) is "failing alike", not a mismatch.
 *   5. The host failing with FC_ERR_VALUE where the GPU succeeds is accepted when the program
 *      holds an integer power: the host computes every element of every node, the GPU only the
 *      elements the outputs read (a slice of a power is fused into it), so a negative exponent
 *      in an element no output reads fails the host alone.
 *   6. Replay: outputs that differ beyond rules 2-3 are accepted when the difference is
 *      carried there by ops that are each right. The program is built again on both sides
 *      and every node (every op, view and source, not the weak scalars) is evaluated as an
 *      output; then each op is recomputed on the host from the GPU's own values of its
 *      operands and must match the GPU's value of that op by rules 1-3 with the rtol of the
 *      op's own dtypes (result, loop, operands; integer and bool ops exactly), and the GPU's
 *      outputs in this run must match its outputs in the first run by rules 1-3 (where other
 *      kernels computed them: a sum-like output within its allowance below). A sum-like
 *      op (sum, mean, var, std, cumsum, matmul, fft, ifft) may also differ by the rounding of its
 *      summation order, 8 * n * eps * M an element: n terms, eps of the accumulator (2^-52:
 *      both sides sum in f64 / c128; cuBLAS and cuFFT in the dtype's own precision), M the
 *      sum of the terms' magnitudes (|x|, |x|^2 for var and its square root for std,
 *      |a| @ |b|, and for fft n times more), from the GPU's operands: where the terms cancel
 *      the result is as small as that rounding and no relative rule holds (sum(x - flip(x))
 *      is 0 on neither side, and not the same tiny value). This covers decisions taken on
 *      floats that rule 2 lets differ (a comparison, a cast to an integer, floor, sign,
 *      argmax, a where on a float condition) and ill-conditioned ops (tan near pi/2, 1/x of a
 *      cancelled x, pow) which amplify a last-bit difference beyond any fixed tolerance. A
 *      replay that fails names the op, its dtypes and the element: that op is wrong on the
 *      GPU (a mismatch, with the culprit in the report).
 *   7. Within rule 6's replay, an fft or ifft whose operand (the GPU's value) holds a NaN or
 *      an infinity is not compared. Where inf * 0 and inf - inf fall, and so which outputs
 *      become NaN, inf or a finite value, is decided by the algorithm's order of butterflies
 *      and twiddle products: the reference's direct sum and cuFFT's mixed-radix or Bluestein
 *      plans place them differently (NumPy's pocketfft a third way), and IEEE arithmetic gives
 *      no right answer to hold either to. The ops after it are still checked, from the GPU's
 *      own value of the transform. Counted in the summary.
 *   8. Within rule 6's replay, complex power's phase: z**w is exp(w log z), log z's parts are
 *      within a few ulps on each side (CUDA's and glibc's atan2 and log), and w carries that
 *      into the phase, about 8 eps |w| (|log z| + pi) radians. Where that exceeds the op's
 *      rtol the result's parts are not determined by its operands at the dtype's precision
 *      (which sign an infinite part of an overflowing power takes, seed 100688), and such an
 *      element matches when the two moduli do (within rtol, both infinite or both NaN).
 *      Counted (elements) in the summary.
 *   9. Within rule 6's replay, fusion moves a sum's rounding: the first run and the replay
 *      compute a sum-like node in different kernels (fused into a consumer's row kernel in
 *      one, a reduction of its own in the other, with other orders and batch widths), so its
 *      value may differ between the runs by twice rule 6's allowance and an ulp, and an
 *      ill-conditioned op after it (%, floor, a comparison, a cancellation) turns that into
 *      any difference (seed 126327: var(x) % x, 0.5 against 0.625). Where an output of the
 *      replay differs from the first run's, the ops between each sum-like node of its cone
 *      (up to four) and the output are recomputed on the host from the replay's values with
 *      that node moved by +-1, ..., 16 ulps, then in 48 geometric steps up to its allowance
 *      (seed 8827: the std of values 1 ulp apart, 3e-16, whose allowance is 4e-7); an element
 *      of the first run matches when it lies within the range those values span (an integer
 *      or bool element: when one of them is its value). A fused epilogue that computes a wrong
 *      value is still caught wherever the output is not that sensitive. Counted (outputs).
 *
 * Extents past 2^31 (gpu/extents_past_2_31_match_the_host_reference): FUSEC_DIFF_BIG (default
 * 8; 0 skips) short programs (seeds FUSEC_DIFF_BIG_FIRST..) over a u8, bool, f16 or f32 input
 * of more than 2^31 elements (one axis, or two of 3 x 715827883 or 32769 x 65537): two steps
 * among elementwise ops, views and casts, then a reduction (over everything or one axis), and
 * sometimes the full-size array as an output too. Each runs in a child and is compared with
 * the host reference in full; the plan must index in 64 bits in every kernel that spans 2^31
 * elements or more (fcx_generate's idx64) and in at least one. The ops are the exactly rounded
 * ones (add, multiply, maximum, comparisons, logical ops, casts) so that results are mostly
 * bit-identical and compare at memcmp speed. Several programs run at once as host memory
 * (MemAvailable), device memory and cores allow (FUSEC_DIFF_BIG_JOBS caps it); a program that
 * does not fit is skipped with a note, and the test is skipped when none fits; one silent
 * for FUSEC_DIFF_BIG_TIMEOUT seconds (900) is killed, a crash. Each program's line gives its
 * recipe, its memory estimate and peak, and its times. The host reference evaluates each
 * node single-threaded at 5-15 ns an element, 10-30 s a pass over 2^31 elements (measured on
 * the build host): a program should take one to two minutes, the test about three on a
 * 16-core host with 128 GiB and one H100 (the eight programs need some 90 GiB together, so
 * they run in one or two waves). FUSEC_DIFF_BACKEND=host runs it host against host (twice
 * the host memory).
 */
#include <criterion/criterion.h>

#include "codegen.h"
#include "graph.h"
#include "plan.h"
#include "test_util.h"
#include "test_values.h"
#include "random_dag.c"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int env_int(const char *name, int dflt) {
    const char *v = getenv(name);
    return v && *v ? atoi(v) : dflt;
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Writes all of buf (a child's report: at most PIPE_BUF bytes, so one atomic write). */
static void write_all(int fd, const void *buf, size_t n) {
    const char *p = buf;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) _exit(90);
        p += w;
        n -= (size_t)w;
    }
}

/* Reads exactly n bytes; returns the bytes read (less at end of file). */
static size_t read_all_fd(int fd, void *buf, size_t n) {
    char *p = buf;
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, p + got, n - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
    }
    return got;
}

/* What became of a child: "killed by signal 11 (Segmentation fault)", "exit status 3". */
static void describe_status(int status, char *buf, size_t size) {
    if (WIFSIGNALED(status))
        snprintf(buf, size, "killed by signal %d (%s)", WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
    else if (WIFEXITED(status))
        snprintf(buf, size, "exit status %d", WEXITSTATUS(status));
    else
        snprintf(buf, size, "status %#x", status);
}

/* A child: no core files (a crash is reported with its seed, which reproduces it), and the
 * parent's buffered output is not written twice. */
static pid_t fork_child(void) {
    fflush(NULL);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        struct rlimit no_core = {0, 0};
        setrlimit(RLIMIT_CORE, &no_core);
        /* dies with its parent (a run stopped by a time limit leaves nothing behind) */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(1);
    }
    return pid;
}

/* ---- is there a GPU? (asked in a child) ------------------------------------------------- */

typedef struct gpu_probe {
    bool ok;
    size_t total_memory;
    char name[128];
} gpu_probe;

/* Whether a CUDA context can be made, asked in a child process so that this one never
 * initialises CUDA. */
static gpu_probe probe_gpu(void) {
    gpu_probe g;
    memset(&g, 0, sizeof g);
    int fds[2];
    if (pipe(fds) != 0) return g;
    pid_t pid = fork_child();
    if (pid == 0) {
        close(fds[0]);
        fc_ctx_options o;
        memset(&o, 0, sizeof o);
        o.backend = FC_BACKEND_CUDA;
        fc_ctx *c = NULL;
        gpu_probe r;
        memset(&r, 0, sizeof r);
        if (fc_ctx_create(&c, &o) == FC_OK) {
            fc_device_info info;
            r.ok = true;
            if (fc_device_get_info(fc_ctx_device(c), &info) == FC_OK) {
                r.total_memory = info.total_memory;
                snprintf(r.name, sizeof r.name, "%s", info.name);
            }
            fc_ctx_destroy(c);
        }
        write_all(fds[1], &r, sizeof r);
        _exit(0);
    }
    close(fds[1]);
    if (pid > 0) {
        if (read_all_fd(fds[0], &g, sizeof g) != sizeof g) memset(&g, 0, sizeof g);
        waitpid(pid, NULL, 0);
    }
    close(fds[0]);
    return g;
}

/* ---- the tolerance rules ----------------------------------------------------------------- */

typedef struct tol {
    double rtol, scale_factor, atol;
} tol;

static const tol exact_tol = {0, 0, 0};

enum { RULE_CLOSE, RULE_OVERFLOW, RULE_ALIKE, RULE_INT_POW, RULE_REPLAY, RULE_NONFINITE_FFT,
       RULE_POW_PHASE, RULE_ORDER, RULE_COUNT };
static const char *const rule_names[RULE_COUNT] = {
    "outputs within rule 2", "elements by rule 3's overflow", "programs failing alike (4)",
    "host value errors of integer powers (5)", "programs by replay (6)",
    "transforms of non-finite operands (7)", "complex power elements by their modulus (8)",
    "outputs within a sum's order (9)"};

static double max_finite(fc_dtype t) {
    switch (t) {
    case FC_F16: return 65504.0;
    case FC_BF16: return 3.3895313892515355e38;
    case FC_F32: case FC_C64: return FLT_MAX;
    default: return DBL_MAX;
    }
}

/* The elements of got (n of dtype t) that do not match ref by rules 1-3 (and, where bound is
 * not NULL, rule 6's allowance bound[i] for element i); the first is described in why.
 * *close: set when the bytes differ but every element matches; *overflow:
 * elements that needed rule 3's overflow clause. */
static size_t diff_compare(const unsigned char *got, const unsigned char *ref, fc_dtype t,
                           size_t n, const tol *tl, const double *bound, bool *close,
                           int *overflow, char *why, size_t why_size) {
    size_t es = fc_dtype_size(t), bad = 0;
    if (n == 0 || memcmp(got, ref, n * es) == 0) return 0;
    if (!fcg_is_inexact(t)) {
        for (size_t i = 0; i < n; i++)
            if (memcmp(got + i * es, ref + i * es, es) != 0) {
                if (!bad) {
                    char g[24] = "", h[24] = "";
                    for (size_t b = 0; b < es; b++) {
                        snprintf(g + 2 * b, 3, "%02x", got[i * es + es - 1 - b]);
                        snprintf(h + 2 * b, 3, "%02x", ref[i * es + es - 1 - b]);
                    }
                    snprintf(why, why_size, "element %zu of %zu: 0x%s, host 0x%s (%s, exact)", i, n,
                             g, h, fc_dtype_name(t));
                }
                bad++;
            }
        return bad;
    }
    int parts = fcg_is_complex(t) ? 2 : 1;
    double scale = 0, big = max_finite(t);
    for (size_t i = 0; i < n; i++)
        for (int q = 0; q < parts; q++) {
            double h = fabs(tv_value_at(ref, t, i, q));
            if (isfinite(h) && h > scale) scale = h;
        }
    scale *= tl->scale_factor;
    for (size_t i = 0; i < n; i++)
        for (int q = 0; q < parts; q++) {
            double g = tv_value_at(got, t, i, q), h = tv_value_at(ref, t, i, q);
            bool ok;
            if (isnan(h) || isnan(g)) {
                ok = isnan(h) && isnan(g);
            } else if (isinf(h) || isinf(g)) {
                double fin = isinf(h) ? g : h;
                ok = g == h;
                if (!ok && tl->rtol > 0 && isfinite(fin) && signbit(g) == signbit(h) &&
                    fabs(fin) >= big * (1 - tl->rtol)) {
                    ok = true;
                    (*overflow)++;
                }
            } else {
                ok = fabs(g - h) <= tl->rtol * (fabs(h) + scale) || fabs(g - h) <= tl->atol ||
                     (bound && fabs(g - h) <= bound[i]);
            }
            if (!ok) {
                if (!bad)
                    snprintf(why, why_size, "element %zu of %zu%s: %.17g, host %.17g (%s, rtol %g, "
                             "scale %g)", i, n, q ? " (imag)" : "", g, h, fc_dtype_name(t),
                             tl->rtol, scale);
                bad++;
            }
        }
    if (!bad) *close = true;
    return bad;
}

/* ---- one program on both sides (in a child) ---------------------------------------------- */

enum { OUT_MATCH, OUT_ALIKE, OUT_MISMATCH, OUT_CRASH };
static const char *const outcome_names[] = {"match", "failing alike", "mismatch", "crash"};

/* A finished seed, child to parent: under PIPE_BUF, so written atomically. */
typedef struct diff_msg {
    int32_t index;    /* position in the run */
    int32_t outcome;  /* OUT_* */
    int32_t compared; /* outputs compared */
    int32_t rules[RULE_COUNT];
    char why[1800];
} diff_msg;

static fc_ctx *new_ctx(fc_backend b) {
    fc_ctx_options o;
    memset(&o, 0, sizeof o);
    o.backend = b;
    fc_ctx *c = NULL;
    return fc_ctx_create(&c, &o) == FC_OK ? c : NULL;
}

/* An output's value: malloc'd (at least 1 byte), poisoned first so that a missed write
 * cannot pass. */
static fc_status read_value(fc_array *a, unsigned char **out) {
    size_t bytes = (size_t)fc_array_size(a) * fc_dtype_size(fc_array_dtype(a));
    *out = malloc(bytes ? bytes : 1);
    if (!*out) return FC_ERR_NOMEM;
    memset(*out, 0xA5, bytes ? bytes : 1);
    return fc_read(a, *out, 0, fc_array_size(a));
}

/* Whether the program computing outs holds an integer (or bool) power (rule 5). */
static bool has_int_pow(fc_ctx *ctx, fc_array *const *outs, int n) {
    fc_array **ord;
    size_t count;
    bool found = false;
    if (fcg_topo_order(ctx, outs, n, false, &ord, &count) != FC_OK) return false;
    for (size_t i = 0; i < count; i++)
        found |= ord[i]->op == FCG_OP_POW && !fcg_is_inexact((fc_dtype)ord[i]->loop_dtype);
    fcg_free(ctx, ord, count * sizeof *ord);
    return found;
}

static int appendf(char *buf, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int appendf(char *buf, size_t size, const char *fmt, ...) {
    size_t len = strlen(buf);
    if (len + 1 >= size) return 0;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(buf + len, size - len, fmt, ap);
    va_end(ap);
    return w;
}

/* One node of the replay, recorded before evaluation cuts the graph's history (an evaluated
 * node becomes a value without inputs). */
typedef struct rp_node {
    fc_array *h, *g;   /* the host's and the GPU's node (references held) */
    fcg_op op;
    fc_dtype dtype, loop;
    bool weak;         /* a weak scalar: not evaluated, the same on both sides */
    int ndim;
    int64_t shape[FC_MAX_DIMS];
    fcg_params p;
    double rtol;       /* by the op's own dtypes: result, loop, inputs' */
    int nin;
    int *in;           /* positions of its inputs */
    unsigned char *gv; /* the GPU's value */
    double *bound;     /* rule 6's allowance for a sum-like op, from the GPU's operands */
} rp_node;

static int rp_find(fc_array *const *ord, int n, const fc_array *a) {
    for (int i = 0; i < n; i++)
        if (ord[i] == a) return i;
    return -1;
}

static double op_rtol(const fc_array *a) {
    double r = tv_gpu_rtol(FC_F64);
    fc_dtype ts[2] = {(fc_dtype)a->dtype, (fc_dtype)a->loop_dtype};
    for (int i = 0; i < 2; i++)
        if (fcg_is_inexact(ts[i]) && tv_gpu_rtol(ts[i]) > r) r = tv_gpu_rtol(ts[i]);
    for (int i = 0; i < a->nin; i++) {
        fc_dtype t = (fc_dtype)a->in[i]->dtype;
        if (fcg_is_inexact(t) && tv_gpu_rtol(t) > r) r = tv_gpu_rtol(t);
    }
    return r;
}

/* Bounds sum_bound made: reductions, matmuls, ffts, and those it could not make (the
 * machinery's test counts them). */
static int sum_bounds_made[4];

/* |x| in f64 (a complex modulus), on the host. */
static fc_array *magnitude(fc_array *x) {
    return fcg_is_complex(fc_array_dtype(x)) ? fc_cast(fc_abs(x), FC_F64)
                                             : fc_abs(fc_cast(x, FC_F64));
}

/* Rule 6's allowance for a sum-like op, whose two sides add the same terms in other orders:
 * per element, 8 * n * eps * M, n the number of terms, eps the accumulator's (2^-52: sum,
 * mean, var and std accumulate in f64 or c128 on both sides; cuBLAS and cuFFT in the dtype's
 * own precision) and M the sum of the terms' magnitudes (|x|, its running sum for cumsum;
 * |x|^2 for var, whose bound std
 * takes the square root of; |a| @ |b| for matmul; along the axis for fft, times n more for its
 * butterflies or Bluestein's chirps). Where the terms cancel, the result is as small as the
 * rounding of the partial sums and no relative rule can hold: this one is the textbook
 * bound. NULL (malloc'd otherwise) for any other op, or when it cannot be computed. */
static double *sum_bound(fc_ctx *hc, const rp_node *p, fc_array *const *ins, size_t count) {
    bool red = p->op == FCG_OP_SUM || p->op == FCG_OP_MEAN || p->op == FCG_OP_VAR ||
               p->op == FCG_OP_STD;
    bool mm = p->op == FCG_OP_MATMUL, fft = p->op == FCG_OP_FFTN;
    bool scan = p->op == FCG_OP_CUMSUM;
    if (!(red || mm || fft || scan) || !fcg_is_inexact(p->dtype) || count == 0) return NULL;
    fc_dtype lt = fcg_is_inexact(p->loop) ? p->loop : p->dtype;
    double eps = red || scan || lt == FC_F64 || lt == FC_C128 ? 0x1p-52
                 : lt == FC_F16 ? 0x1p-10 : lt == FC_BF16 ? 0x1p-7 : 0x1p-23;
    fc_array *x = ins[0], *m;
    fc_shape xs = fc_array_shape(x);
    double n = 1, per = 1;
    if (red) {
        fc_axes ax;
        memset(&ax, 0, sizeof ax);
        for (int d = 0; d < xs.ndim; d++)
            if (p->p.axes & (1u << d)) {
                ax.axis[ax.n++] = d;
                n *= (double)xs.dim[d];
            }
        fc_array *a = magnitude(x);
        if (p->op == FCG_OP_VAR || p->op == FCG_OP_STD) a = fc_mul(a, a);
        m = fc_sum(a, ax, p->p.keepdims);
        if (p->op == FCG_OP_MEAN) per = n > 0 ? 1 / n : 1;
        if (p->op == FCG_OP_VAR || p->op == FCG_OP_STD) per = 1 / fmax(n - p->p.ddof, 1);
    } else if (scan) { /* each running sum: its terms so far, in a tree on the GPU */
        n = (double)xs.dim[p->p.axis];
        m = fc_cumsum(magnitude(x), p->p.axis);
    } else if (mm) {
        n = xs.ndim ? (double)xs.dim[xs.ndim - 1] : 1;
        m = fc_matmul(magnitude(x), magnitude(ins[1]));
    } else { /* over every transformed axis; C2R's line counts its mirror image too */
        fc_axes ax;
        memset(&ax, 0, sizeof ax);
        for (int d = 0; d < xs.ndim; d++)
            if (p->p.axes & (1u << d)) {
                ax.axis[ax.n++] = d;
                n *= (double)(p->shape[d] > xs.dim[d] ? p->shape[d] : xs.dim[d]);
            }
        fc_shape s;
        s.ndim = p->ndim;
        memcpy(s.dim, p->shape, sizeof s.dim);
        m = fc_broadcast_to(fc_sum(magnitude(x), ax, true), s);
        per = (n + 2) * (p->p.flag == FCG_FFT_C2R ? 2 : 1);
    }
    double *b = malloc(count * sizeof *b);
    if (!b || fc_array_size(m) != (int64_t)count || fc_eval(hc, &m, 1) != FC_OK ||
        fc_read(m, b, 0, (int64_t)count) != FC_OK) {
        free(b);
        fc_clear_error(hc);
        sum_bounds_made[3]++;
        return NULL;
    }
    for (size_t i = 0; i < count; i++) {
        b[i] = 8 * n * eps * b[i] * per;
        if (p->op == FCG_OP_STD) b[i] = sqrt(b[i]);
    }
    sum_bounds_made[red || scan ? 0 : mm ? 1 : 2]++;
    return b;
}

/* The machinery's test: the node of the replay whose GPU value gets one bit flipped (-1: none). */
static int replay_corrupt = -1;

/* Rule 7's count in the last replay: transforms of non-finite operands left uncompared. */
static int replay_nonfinite_ffts;

/* Rules 8 and 9's counts in the last replay: complex power elements accepted by their modulus,
 * outputs accepted by a sum's order. */
static int replay_pow_phase, replay_order;

static bool has_nonfinite(const unsigned char *v, fc_dtype t, size_t n) {
    if (!fcg_is_inexact(t)) return false;
    for (size_t i = 0; i < n; i++)
        for (int q = 0; q < (fcg_is_complex(t) ? 2 : 1); q++)
            if (!isfinite(tv_value_at(v, t, i, q))) return true;
    return false;
}

/* Node i computed on the host from its operands' values: vals[k] for node k where vals is not
 * NULL and vals[k] is set, else the GPU's own (weak scalars as they are). ins receives the
 * operands (arrays of the current scope of hc). */
static fc_status host_op(fc_ctx *hc, const rp_node *nodes, int i, unsigned char *const *vals,
                         fc_array **ins, unsigned char **out) {
    const rp_node *p = &nodes[i];
    *out = NULL;
    if (p->nin > 64) return FC_ERR_INVALID;
    for (int k = 0; k < p->nin; k++) {
        if (p->in[k] < 0) return FC_ERR_INVALID;
        const rp_node *q = &nodes[p->in[k]];
        fc_shape sh;
        sh.ndim = q->ndim;
        memcpy(sh.dim, q->shape, sizeof sh.dim);
        const unsigned char *v = vals && vals[p->in[k]] ? vals[p->in[k]] : q->gv;
        ins[k] = q->weak ? q->h : fc_from_host(hc, q->dtype, sh, v);
    }
    fc_array *c = fcg_make(hc, p->op, p->dtype, p->loop, p->weak, p->ndim, p->shape, p->nin, ins,
                           &p->p);
    fc_status st = fc_eval(hc, &c, 1);
    return st == FC_OK ? read_value(c, out) : st;
}

/* The distance from x to the next value of dtype t away from zero (its ulp there). */
static double ulp_of(fc_dtype t, double x) {
    fc_dtype r = fcg_real_dtype(t);
    int digits = r == FC_F16 ? 11 : r == FC_BF16 ? 8 : r == FC_F32 ? 24 : 53;
    int emin = r == FC_F16 ? -14 : r == FC_BF16 || r == FC_F32 ? -126 : -1022;
    int e = x == 0 || !isfinite(x) ? emin : ilogb(x);
    return ldexp(1.0, (e < emin ? emin : e) - digits + 1);
}

/* Rule 8: complex power's phase. z**w is exp(w log z): log z's parts are within a few ulps on
 * each side (atan2 and log are CUDA's and glibc's), and w times them carries that error into
 * the phase, about 8 eps |w| (|log z| + pi) radians. Where that exceeds the op's rtol, the
 * parts are not determined by the operands at the dtype's precision (the sign of an infinite
 * part of an overflowing power, seed 100688), and such an element matches when the moduli do
 * (within rtol, or both infinite, or both NaN). Returns the elements accepted so, after copying
 * the GPU's value of each into hv. */
static size_t pow_phase_rule(fc_ctx *hc, const rp_node *p, fc_array *const *ins,
                             const unsigned char *gv, unsigned char *hv) {
    if (p->op != FCG_OP_POW || !fcg_is_complex(p->dtype) || p->nin != 2) return 0;
    double eps = p->loop == FC_C64 ? 0x1p-23 : 0x1p-52;
    size_t n = fcg_numel(p->ndim, p->shape), took = 0;
    fc_shape sh;
    sh.ndim = p->ndim;
    memcpy(sh.dim, p->shape, sizeof sh.dim);
    fc_array *z = fc_cast(ins[0], FC_C128), *w = fc_cast(ins[1], FC_C128);
    fc_array *err = fc_broadcast_to(
        fc_mul(fc_mul(fc_cast(fc_abs(w), FC_F64), fc_add(fc_cast(fc_abs(fc_log(z)), FC_F64),
                                                         fc_scalar(hc, FC_F64, M_PI))),
               fc_scalar(hc, FC_F64, 8 * eps)),
        sh);
    double *e = malloc((n ? n : 1) * sizeof *e);
    if (!e || fc_eval(hc, &err, 1) != FC_OK || fc_read(err, e, 0, (int64_t)n) != FC_OK) {
        fc_clear_error(hc);
        free(e);
        return 0;
    }
    size_t es = fc_dtype_size(p->dtype);
    for (size_t i = 0; i < n; i++) {
        if (!(e[i] > p->rtol) && !isnan(e[i])) continue;
        double g = hypot(tv_value_at(gv, p->dtype, i, 0), tv_value_at(gv, p->dtype, i, 1));
        double h = hypot(tv_value_at(hv, p->dtype, i, 0), tv_value_at(hv, p->dtype, i, 1));
        bool ok = (isnan(g) && isnan(h)) || (isinf(g) && isinf(h)) ||
                  (isfinite(g) && isfinite(h) && fabs(g - h) <= p->rtol * h);
        if (ok && memcmp(gv + i * es, hv + i * es, es) != 0) {
            memcpy(hv + i * es, gv + i * es, es);
            took++;
        }
    }
    free(e);
    return took;
}

/* Rule 9: fusion moves a sum's rounding. The first run and the replay compute a sum-like node
 * in different kernels (fused into a consumer's row kernel in one, a reduction of its own in
 * the other), whose orders and batch widths differ, so its value may differ between the two
 * runs by its allowance (twice rule 6's bound, plus an ulp of its dtype). An ill-conditioned
 * op after it (a modulo, floor, a comparison, a cancellation) can turn that into any
 * difference (seed 126327: var(x) % x, 0.5 against 0.625). So where an output of the replay
 * differs from the first run's, the ops between each sum-like node of its cone and the output
 * are recomputed on the host from the replay's values, with the sum-like node moved by +-1,
 * 2, ..., 16 ulps and then in 48 geometric steps up to its allowance; an element of the first
 * run matches when it lies within the range those values span (an integer or bool element:
 * when one of them is its value); the others are compared with the replay's by rules 1-3. A
 * fused epilogue that computes a wrong value is still caught wherever the output is not that
 * sensitive. Returns the reference to compare the first run with (malloc'd; NULL: none). */
static unsigned char *order_rule(fc_ctx *hc, const rp_node *nodes, int n, int at,
                                 const unsigned char *first, int *used) {
    const rp_node *o = &nodes[at];
    size_t on = fcg_numel(o->ndim, o->shape), oes = fc_dtype_size(o->dtype);
    int parts = fcg_is_complex(o->dtype) ? 2 : 1;
    bool inexact = fcg_is_inexact(o->dtype);
    size_t nk = on * (size_t)parts;
    bool *cone = calloc((size_t)n, sizeof *cone);
    unsigned char **vals = calloc((size_t)n, sizeof *vals), *ref = NULL;
    double *lov = malloc((nk + 1) * sizeof *lov), *hiv = malloc((nk + 1) * sizeof *hiv);
    bool *nan = calloc(nk + 1, sizeof *nan), *hit = calloc(on + 1, sizeof *hit);
    int sums = 0;
    if (!cone || !vals || !lov || !hiv || !nan || !hit || !o->gv) goto out;
    cone[at] = true;
    for (int i = at; i >= 0; i--)
        for (int k = 0; cone[i] && k < nodes[i].nin; k++)
            if (nodes[i].in[k] >= 0) cone[nodes[i].in[k]] = true;
    /* the range of each element's parts, starting from the replay's own value; integer and
     * bool outputs: whether some move gave the first run's value exactly */
    for (size_t k = 0; inexact && k < nk; k++) {
        lov[k] = hiv[k] = tv_value_at(o->gv, o->dtype, k / (size_t)parts, (int)(k % (size_t)parts));
        nan[k] = isnan(lov[k]);
    }
    for (int s = 0; s <= at && sums < 4; s++) {
        const rp_node *q = &nodes[s];
        if (!cone[s] || !q->bound || !q->gv || !fcg_is_inexact(q->dtype)) continue;
        sums++;
        size_t qn = fcg_numel(q->ndim, q->shape), qes = fc_dtype_size(q->dtype);
        int qparts = fcg_is_complex(q->dtype) ? 2 : 1;
        size_t qk = qn * (size_t)qparts;
        double *ulp = malloc((qk + 1) * sizeof *ulp), *allow = malloc((qk + 1) * sizeof *allow);
        unsigned char *moved = malloc(qn * qes + 1);
        if (!ulp || !allow || !moved) {
            free(ulp);
            free(allow);
            free(moved);
            break;
        }
        double widest = 0; /* the largest allowance, in ulps */
        for (size_t k = 0; k < qk; k++) {
            ulp[k] = ulp_of(q->dtype, tv_value_at(q->gv, q->dtype, k / (size_t)qparts,
                                                  (int)(k % (size_t)qparts)));
            allow[k] = 2 * q->bound[k / (size_t)qparts] + ulp[k];
            if (allow[k] / ulp[k] > widest) widest = allow[k] / ulp[k];
        }
        /* 64 levels: 1, 2, ..., 16 ulps (a sawtooth like % needs its jumps found), then
         * geometric steps up to the allowance, however many ulps it spans */
        for (int level = 0; level < 64 && (level < 16 || widest > 16); level++)
            for (int sign = -1; sign <= 1; sign += 2) {
                memcpy(moved, q->gv, qn * qes);
                for (size_t k = 0; k < qk; k++) {
                    double by = level < 16 ? (level + 1) * ulp[k]
                                           : 16 * ulp[k] * pow(allow[k] / (16 * ulp[k]),
                                                                (level - 15) / 48.0);
                    if (by > allow[k]) by = allow[k];
                    size_t e = k / (size_t)qparts;
                    int part = (int)(k % (size_t)qparts);
                    double x = tv_value_at(q->gv, q->dtype, e, part);
                    double y = x + sign * by;
                    if ((q->op == FCG_OP_VAR || q->op == FCG_OP_STD) && y < 0) y = 0; /* >= 0 */
                    if (isfinite(x)) tv_set_value_at(moved, q->dtype, e, part, y);
                }
                fc_scope *sc = fc_scope_open(hc);
                memset(vals, 0, (size_t)n * sizeof *vals);
                vals[s] = moved;
                bool ok = true;
                for (int d = s + 1; ok && d <= at; d++) {
                    bool below = false;
                    for (int k = 0; cone[d] && k < nodes[d].nin && !below; k++)
                        below = nodes[d].in[k] >= 0 && vals[nodes[d].in[k]];
                    if (!below || nodes[d].weak) continue;
                    fc_array *ins[64];
                    ok = host_op(hc, nodes, d, vals, ins, &vals[d]) == FC_OK;
                }
                fc_scope_close(sc);
                fc_clear_error(hc);
                const unsigned char *v = !ok ? NULL : s < at ? vals[at] : moved;
                for (size_t e = 0; v && e < on; e++) {
                    if (!inexact) {
                        hit[e] = hit[e] || memcmp(v + e * oes, first + e * oes, oes) == 0;
                        continue;
                    }
                    for (int part = 0; part < parts; part++) {
                        double x = tv_value_at(v, o->dtype, e, part);
                        size_t k = e * (size_t)parts + (size_t)part;
                        if (isnan(x)) nan[k] = true;
                        if (x < lov[k] || isnan(lov[k])) lov[k] = x;
                        if (x > hiv[k] || isnan(hiv[k])) hiv[k] = x;
                    }
                }
                for (int d = s + 1; d <= at; d++) {
                    free(vals[d]);
                    vals[d] = NULL;
                }
            }
        free(ulp);
        free(allow);
        free(moved);
    }
    if (!sums || !(ref = malloc(on * oes + 1))) goto out;
    memcpy(ref, o->gv, on * oes);
    for (size_t e = 0; e < on; e++) {
        bool inside = !inexact && hit[e];
        for (int part = 0; inexact && part < parts; part++) {
            double f = tv_value_at(first, o->dtype, e, part);
            size_t k = e * (size_t)parts + (size_t)part;
            inside = (part == 0 || inside) && (isnan(f) ? nan[k] : f >= lov[k] && f <= hiv[k]);
        }
        if (inside) memcpy(ref + e * oes, first + e * oes, oes);
    }
    *used = sums;
out:
    free(cone);
    free(vals);
    free(lov);
    free(hiv);
    free(nan);
    free(hit);
    return ref;
}

/* Rule 6. Returns 1 when every op of the program, recomputed on the host from the GPU's
 * values of its operands, matches the GPU's, and the GPU's outputs match those of the first
 * run (first[k]); 0 when not (why says where); -1 when the GPU context died. */
static int replay(fc_ctx *oc, uint64_t seed, unsigned char *const *first, const tol *prog_tol,
                  char *why, size_t why_size) {
    fc_ctx *hc = new_ctx(FC_BACKEND_HOST);
    if (!hc) {
        appendf(why, why_size, "; replay: no host context");
        return 0;
    }
    rdag_options o;
    rdag_default_options(&o);
    rdag hd, gd;
    memset(&gd, 0, sizeof gd);
    int result = 0;
    fc_array **hord = NULL, **gord = NULL, **hev = NULL, **gev = NULL;
    size_t hn = 0, gn = 0;
    rp_node *nodes = NULL;
    int n = 0, ne = 0;
    fc_scope *scope = NULL;
    char local[600];
    if (rdag_build(hc, seed, &o, &hd) != FC_OK || rdag_build(oc, seed, &o, &gd) != FC_OK) {
        appendf(why, why_size, "; replay: the program could not be built again");
        goto done;
    }
    if (fcg_topo_order(hc, hd.out, hd.nout, false, &hord, &hn) != FC_OK ||
        fcg_topo_order(oc, gd.out, gd.nout, false, &gord, &gn) != FC_OK || hn != gn) {
        appendf(why, why_size, "; replay: the two graphs differ");
        goto done;
    }
    n = (int)hn;
    nodes = calloc((size_t)n, sizeof *nodes);
    hev = calloc((size_t)n + 1, sizeof *hev);
    gev = calloc((size_t)n + 1, sizeof *gev);
    if (!nodes || !hev || !gev) {
        appendf(why, why_size, "; replay: out of memory");
        goto done;
    }
    for (int i = 0; i < n; i++) {
        rp_node *p = &nodes[i];
        const fc_array *a = hord[i];
        p->h = hord[i];
        p->g = gord[i];
        fcg_retain(p->h);
        fcg_retain(p->g);
        p->op = (fcg_op)a->op;
        p->dtype = (fc_dtype)a->dtype;
        p->loop = (fc_dtype)a->loop_dtype;
        p->weak = a->weak;
        p->ndim = a->ndim;
        memcpy(p->shape, a->shape, sizeof p->shape);
        p->p = a->p;
        p->rtol = op_rtol(a);
        p->nin = fcg_has_value(a) ? 0 : a->nin;
        p->in = calloc((size_t)(p->nin ? p->nin : 1), sizeof *p->in);
        for (int k = 0; p->in && k < p->nin; k++) p->in[k] = rp_find(hord, i, a->in[k]);
        if (!p->in || a->op != p->g->op || a->dtype != p->g->dtype || a->nin != p->g->nin) {
            appendf(why, why_size, "; replay: node %d differs between the two graphs", i);
            goto done;
        }
        if (!p->weak) {
            hev[ne] = p->h;
            gev[ne] = p->g;
            ne++;
        }
    }
    /* Every node as an output, on both sides. */
    fc_status hs = fc_eval(hc, hev, ne), gs = fc_eval(oc, gev, ne);
    if (gs == FC_ERR_BACKEND) {
        appendf(why, why_size, "; replay: %s", fc_errmsg(oc));
        result = -1;
        goto done;
    }
    if (hs != FC_OK || gs != FC_OK) {
        appendf(why, why_size, "; replay: evaluating every node fails (host %s, gpu %s: %s)",
                fc_strerror(hs), fc_strerror(gs), gs != FC_OK ? fc_errmsg(oc) : fc_errmsg(hc));
        goto done;
    }
    for (int i = 0; i < n; i++) {
        if (nodes[i].weak) continue;
        fc_status st = read_value(nodes[i].g, &nodes[i].gv);
        if (st == FC_ERR_BACKEND) {
            result = -1;
            goto done;
        }
        if (st != FC_OK) {
            appendf(why, why_size, "; replay: reading node %d fails", i);
            goto done;
        }
        if (i == replay_corrupt && fcg_numel(nodes[i].ndim, nodes[i].shape)) {
            /* one bit of element 0 (a NaN stays a NaN that way: it becomes 0 instead) */
            fc_dtype t = nodes[i].dtype;
            if (fcg_is_inexact(t) && isnan(tv_value_at(nodes[i].gv, t, 0, 0)))
                memset(nodes[i].gv, 0, fc_dtype_size(t));
            else
                nodes[i].gv[0] ^= 1;
        }
    }
    /* Each op again on the host, from the GPU's operands. */
    scope = fc_scope_open(hc);
    for (int i = 0; i < n; i++) {
        rp_node *p = &nodes[i];
        if (p->weak) continue;
        if (p->op == FCG_OP_FFTN && prog_tol->rtol > 0 && p->nin == 1 &&
            p->in[0] >= 0) {
            const rp_node *q = &nodes[p->in[0]];
            if (q->gv && has_nonfinite(q->gv, q->dtype, fcg_numel(q->ndim, q->shape))) {
                replay_nonfinite_ffts++; /* rule 7 */
                continue;
            }
        }
        tol lt = prog_tol->rtol > 0 ? (tol){p->rtol, 1e-3, 1e-30} : exact_tol;
        unsigned char *hv = NULL;
        double *bound = NULL;
        fc_status st;
        fc_array *ins[64];
        if (p->nin == 0) {
            /* A source (input data, constant, arange, random, ...): the two values directly. */
            st = read_value(p->h, &hv);
        } else {
            bool ordered = p->nin <= 64;
            for (int k = 0; ordered && k < p->nin; k++) ordered = p->in[k] >= 0;
            if (!ordered) {
                appendf(why, why_size, "; replay: node %d's inputs are not in the order", i);
                goto done;
            }
            st = host_op(hc, nodes, i, NULL, ins, &hv);
            if (st == FC_OK && lt.rtol > 0) {
                bound = sum_bound(hc, p, ins, fcg_numel(p->ndim, p->shape));
                replay_pow_phase += (int)pow_phase_rule(hc, p, ins, p->gv, hv);
            }
        }
        if (st != FC_OK) {
            appendf(why, why_size, "; replay: node %d (%s %s) fails on the host from the GPU's "
                    "operands: %s", i, fcg_ops[p->op].pyname, fc_dtype_name(p->dtype),
                    fc_errmsg(hc));
            free(hv);
            goto done;
        }
        bool close = false;
        int over = 0;
        local[0] = '\0';
        size_t bad = diff_compare(p->gv, hv, p->dtype, fcg_numel(p->ndim, p->shape), &lt, bound,
                                  &close, &over, local, sizeof local);
        free(hv);
        p->bound = bound;
        if (bad) {
            char sh[200];
            appendf(why, why_size, "; replay: op %s (node %d of %d, %s %s, loop %s) is wrong on "
                    "the GPU from its own operands: %zu elements, %s", fcg_ops[p->op].pyname, i, n,
                    fc_dtype_name(p->dtype), fcg_shape_str(sh, p->ndim, p->shape),
                    fc_dtype_name(p->loop), bad, local);
            goto done;
        }
    }
    /* The GPU's outputs are those of the first run, where other kernels computed them: a
     * sum-like output may differ by its order's rounding there too (var of values that cancel
     * to 1e-18, seed 41267). */
    for (int k = 0; k < hd.nout; k++) {
        int at = rp_find(hord, n, hd.out[k]);
        bool close = false;
        int over = 0;
        local[0] = '\0';
        fc_dtype t = fc_array_dtype(hd.out[k]);
        size_t count = (size_t)fc_array_size(hd.out[k]);
        if (at >= 0 && !diff_compare(first[k], nodes[at].gv, t, count, prog_tol, nodes[at].bound,
                                     &close, &over, local, sizeof local))
            continue;
        int sums = 0;
        unsigned char *ref = at < 0 ? NULL : order_rule(hc, nodes, n, at, first[k], &sums);
        bool bad = !ref || diff_compare(first[k], ref, t, count, prog_tol, nodes[at].bound,
                                        &close, &over, local, sizeof local);
        free(ref);
        if (bad) {
            appendf(why, why_size, "; replay: the GPU's output %d with every node an output "
                    "differs from the first run's (%d sum-like nodes moved by rule 9): %s", k,
                    sums, local);
            goto done;
        }
        replay_order++;
    }
    result = 1;
done:
    if (scope) fc_scope_close(scope);
    for (int i = 0; nodes && i < n; i++) {
        free(nodes[i].in);
        free(nodes[i].gv);
        free(nodes[i].bound);
        if (nodes[i].h) fcg_release(nodes[i].h);
        if (nodes[i].g) fcg_release(nodes[i].g);
    }
    free(nodes);
    free(hev);
    free(gev);
    if (hord) fcg_free(hc, hord, hn * sizeof *hord);
    if (gord) fcg_free(oc, gord, gn * sizeof *gord);
    rdag_free(&hd);
    rdag_free(&gd);
    fc_ctx_destroy(hc);
    return result;
}

/* Runs seed on the host and on oc; fills m. exact: oc is the host backend too (rule 1 only).
 * Returns false when oc is dead (the child must stop). */
static bool run_seed(fc_ctx *oc, bool exact, uint64_t seed, diff_msg *m) {
    m->outcome = OUT_MATCH;
    fc_ctx *hc = new_ctx(FC_BACKEND_HOST);
    if (!hc) {
        m->outcome = OUT_MISMATCH;
        snprintf(m->why, sizeof m->why, "no host context");
        return true;
    }
    rdag_options o;
    rdag_default_options(&o);
    rdag hd, gd;
    memset(&gd, 0, sizeof gd);
    bool alive = true;
    unsigned char *gout[RDAG_MAX_OUTPUTS] = {NULL}, *hout[RDAG_MAX_OUTPUTS] = {NULL};
    fc_status b1 = rdag_build(hc, seed, &o, &hd);
    fc_status b2 = b1 == FC_OK ? rdag_build(oc, seed, &o, &gd) : b1;
    fc_hash h1, h2;
    if (b1 != FC_OK || b2 != FC_OK) {
        m->outcome = OUT_MISMATCH;
        snprintf(m->why, sizeof m->why, "rdag_build: host %s, other %s", fc_strerror(b1),
                 fc_strerror(b2));
        goto done;
    }
    if (hd.nout != gd.nout || fc_graph_hash(hd.out, hd.nout, &h1) != FC_OK ||
        fc_graph_hash(gd.out, gd.nout, &h2) != FC_OK || h1.lo != h2.lo || h1.hi != h2.hi) {
        m->outcome = OUT_MISMATCH;
        snprintf(m->why, sizeof m->why, "the seed builds two different graphs");
        goto done;
    }
    /* Before evaluating: an evaluated output is a leaf, its history gone. */
    tol pt = exact_tol;
    if (!exact) pt = (tol){tv_program_rtol(hc, hd.out, hd.nout, tv_gpu_rtol), 1e-3, 1e-30};
    bool int_pow = has_int_pow(hc, hd.out, hd.nout);
    fc_status hs = fc_eval(hc, hd.out, hd.nout);
    fc_status gs = fc_eval(oc, gd.out, gd.nout);
    if (gs == FC_ERR_BACKEND && !exact) {
        m->outcome = OUT_CRASH;
        snprintf(m->why, sizeof m->why, "the GPU context died: %s", fc_errmsg(oc));
        alive = false;
        goto done;
    }
    if (hs != gs) {
        if (!exact && hs == FC_ERR_VALUE && gs == FC_OK && int_pow) {
            m->rules[RULE_INT_POW]++;
        } else {
            m->outcome = OUT_MISMATCH;
            snprintf(m->why, sizeof m->why, "host status %s (%s), other status %s (%s)",
                     fc_strerror(hs), hs ? fc_errmsg(hc) : "", fc_strerror(gs),
                     gs ? fc_errmsg(oc) : "");
        }
        goto done;
    }
    if (hs != FC_OK) {
        m->outcome = OUT_ALIKE;
        m->rules[RULE_ALIKE]++;
        goto done;
    }
    int first_bad = -1;
    for (int k = 0; k < hd.nout; k++) {
        fc_status s1 = read_value(hd.out[k], &hout[k]), s2 = read_value(gd.out[k], &gout[k]);
        if (s2 == FC_ERR_BACKEND && !exact) {
            m->outcome = OUT_CRASH;
            snprintf(m->why, sizeof m->why, "the GPU context died: %s", fc_errmsg(oc));
            alive = false;
            goto done;
        }
        if (s1 != FC_OK || s2 != FC_OK) {
            m->outcome = OUT_MISMATCH;
            snprintf(m->why, sizeof m->why, "reading output %d fails: host %s, other %s (%s)", k,
                     fc_strerror(s1), fc_strerror(s2), fc_errmsg(oc));
            goto done;
        }
        m->compared++;
        bool close = false;
        char why[600] = "";
        fc_dtype t = fc_array_dtype(hd.out[k]);
        if (diff_compare(gout[k], hout[k], t, (size_t)fc_array_size(hd.out[k]), &pt, NULL, &close,
                         &m->rules[RULE_OVERFLOW], why, sizeof why)) {
            if (first_bad < 0) {
                char sh[200];
                fc_shape s = fc_array_shape(hd.out[k]);
                snprintf(m->why, sizeof m->why, "output %d (%s %s): %s", k, fc_dtype_name(t),
                         fcg_shape_str(sh, s.ndim, s.dim), why);
                first_bad = k;
            }
        } else if (close) {
            m->rules[RULE_CLOSE]++;
        }
    }
    if (first_bad >= 0) {
        replay_nonfinite_ffts = replay_pow_phase = replay_order = 0;
        int r = exact ? 0 : replay(oc, seed, gout, &pt, m->why, sizeof m->why);
        if (r == 1) {
            m->rules[RULE_REPLAY]++;
            m->rules[RULE_NONFINITE_FFT] += replay_nonfinite_ffts;
            m->rules[RULE_POW_PHASE] += replay_pow_phase;
            m->rules[RULE_ORDER] += replay_order;
            m->why[0] = '\0';
        } else if (r < 0) {
            m->outcome = OUT_CRASH;
            appendf(m->why, sizeof m->why, " (the GPU context died in the replay)");
            alive = false;
        } else {
            m->outcome = OUT_MISMATCH;
        }
    }
done:
    /* A fault of queued work the seed never waited for (its outputs unread: the host failed)
     * surfaces here, in this seed, not in the next one. */
    if (alive && !exact && fc_ctx_synchronize(oc) == FC_ERR_BACKEND) {
        m->outcome = OUT_CRASH;
        snprintf(m->why, sizeof m->why, "the GPU context died (seen when waiting for the seed's "
                 "work): %s", fc_errmsg(oc));
        alive = false;
    }
    for (int k = 0; k < RDAG_MAX_OUTPUTS; k++) {
        free(hout[k]);
        free(gout[k]);
    }
    rdag_free(&hd);
    rdag_free(&gd);
    fc_ctx_destroy(hc);
    return alive;
}

/* ---- the machinery: slices of seeds in children ------------------------------------------ */

typedef struct diff_cfg {
    fc_backend backend;  /* the side compared with the host: CUDA, or HOST (the machinery's test) */
    int first, count;    /* seeds first..first+count-1, unless seeds */
    const int *seeds;
    int nseeds;
    int slice;           /* seeds per child */
    int timeout_s;       /* silence after which a child is killed */
    const char *report;  /* file for failing programs, or NULL */
} diff_cfg;

typedef struct diff_fail {
    int seed, outcome;
    char why[300];
} diff_fail;

typedef struct diff_result {
    int programs, compared, crashes, mismatches, alike;
    int ran; /* seeds a child finished (the others crashed) */
    int rules[RULE_COUNT];
    int children;
    diff_fail *fail;
    int nfail;
    double seconds;
} diff_result;

static int seed_at(const diff_cfg *c, int i) { return c->nseeds ? c->seeds[i] : c->first + i; }

/* The test hook: how seed should misbehave in the child ('a'bort, 'h'ang, 'd'ead), or 0. */
static char test_crash(int seed) {
    const char *v = getenv("FUSEC_DIFF_TEST_CRASH_SEED");
    for (const char *c = v; c && *c;) {
        char *end;
        long s = strtol(c, &end, 10);
        char how = 'a';
        if (*end == ':') {
            how = end[1];
            end = strchr(end, ',');
            if (!end) end = (char *)c + strlen(c);
        }
        if (end == c) break;
        if (s == seed) return how;
        c = *end ? end + 1 : end;
    }
    return 0;
}

/* A child: seeds [lo, hi) of the run, one message each on fd; exits when done or when its
 * context died. Never returns. */
static void diff_child(const diff_cfg *c, int lo, int hi, int fd) {
    bool exact = c->backend == FC_BACKEND_HOST;
    fc_ctx *oc = new_ctx(c->backend);
    for (int i = lo; i < hi; i++) {
        diff_msg m;
        memset(&m, 0, sizeof m);
        m.index = i;
        int seed = seed_at(c, i);
        if (!oc) {
            m.outcome = OUT_CRASH;
            snprintf(m.why, sizeof m.why, "no %s context in the child",
                     c->backend == FC_BACKEND_CUDA ? "CUDA" : "host");
            write_all(fd, &m, sizeof m);
            _exit(2);
        }
        char how = test_crash(seed);
        if (how == 'h') {
            for (;;) pause();
        } else if (how == 'd') {
            m.outcome = OUT_CRASH;
            snprintf(m.why, sizeof m.why, "the GPU context died: (FUSEC_DIFF_TEST_CRASH_SEED)");
            write_all(fd, &m, sizeof m);
            _exit(3);
        } else if (how) {
            abort();
        }
        bool alive = run_seed(oc, exact, (uint64_t)seed, &m);
        write_all(fd, &m, sizeof m);
        if (!alive) _exit(3); /* the context is gone: the parent starts a new child */
    }
    fc_ctx_destroy(oc);
    _exit(0);
}

/* FUSEC_DIFF_INPUTS=DIR: the inputs of a failing seed as DIR/seed-N-xK.npy, named as the
 * report's program names them, so that `fusec run` reproduces the seed from its .fc text and
 * these files (--input xK=FILE) without this test. The names come from printing the program
 * with the inputs appended as outputs: inputs are numbered in order of first use, so the
 * original outputs number them as the report does and the appended lines "yJ = xK" say which
 * input is which. A bf16 input has no .npy form and is left out. */
static void save_inputs(const rdag *d, int seed) {
    const char *dir = getenv("FUSEC_DIFF_INPUTS");
    if (!dir || !*dir || d->nin == 0) return;
    fc_array *all[RDAG_MAX_OUTPUTS + RDAG_MAX_INPUTS];
    for (int i = 0; i < d->nout; i++) all[i] = d->out[i];
    for (int k = 0; k < d->nin; k++) all[d->nout + k] = d->in[k];
    char *text = NULL;
    if (fc_program_print(d->ctx, all, d->nout + d->nin, NULL, &text) != FC_OK) return;
    for (int k = 0; k < d->nin; k++) {
        char want[32];
        snprintf(want, sizeof want, "\ny%d = x", d->nout + k);
        const char *at = strstr(text, want);
        if (!at || fc_array_dtype(d->in[k]) == FC_BF16) continue;
        int name = atoi(at + strlen(want));
        char path[4096];
        snprintf(path, sizeof path, "%s/seed-%d-x%d.npy", dir, seed, name);
        fc_npy_save(d->in[k], path);
    }
    fc_free(d->ctx, text);
}

/* The program of seed as .fc text, rebuilt in a child on the host backend (so a generator
 * that crashes cannot take this process down). malloc'd. */
static char *program_text(int seed) {
    int fds[2];
    if (pipe(fds) != 0) return strdup("(no pipe)");
    pid_t pid = fork_child();
    if (pid == 0) {
        close(fds[0]);
        fc_ctx *hc = new_ctx(FC_BACKEND_HOST);
        rdag d;
        char *text = NULL;
        if (hc && rdag_build(hc, (uint64_t)seed, NULL, &d) == FC_OK) {
            text = rdag_print(&d);
            save_inputs(&d, seed);
            rdag_free(&d);
        }
        const char *t = text ? text : "(the program could not be built or printed)\n";
        size_t len = strlen(t);
        while (len) {
            ssize_t w = write(fds[1], t, len);
            if (w <= 0) break;
            t += w;
            len -= (size_t)w;
        }
        _exit(0);
    }
    close(fds[1]);
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (len + 1024 > cap) buf = realloc(buf, cap *= 2);
        ssize_t r = read(fds[0], buf + len, cap - len - 1);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        len += (size_t)r;
    }
    buf[len] = '\0';
    close(fds[0]);
    int status = 0;
    if (pid > 0) waitpid(pid, &status, 0);
    if (pid < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        char st[96];
        describe_status(status, st, sizeof st);
        snprintf(buf, cap, "(rebuilding the program crashed: %s)\n", st);
    }
    return buf;
}

static void record_failure(diff_result *r, FILE *report, int seed, int outcome, const char *why) {
    if (outcome == OUT_CRASH) r->crashes++;
    else r->mismatches++;
    diff_fail *f = realloc(r->fail, (size_t)(r->nfail + 1) * sizeof *f);
    if (f) {
        r->fail = f;
        f[r->nfail].seed = seed;
        f[r->nfail].outcome = outcome;
        snprintf(f[r->nfail].why, sizeof f[r->nfail].why, "%s", why);
        r->nfail++;
    }
    fprintf(stderr, "gpu-diff: seed %d: %s: %s\n", seed, outcome_names[outcome], why);
    if (report) {
        char *text = program_text(seed);
        fprintf(report, "# seed %d: %s: %s\n%s\n", seed, outcome_names[outcome], why, text);
        fflush(report);
        free(text);
    }
}

/* Runs the seeds of c, a slice per child; fills r (r->fail malloc'd). */
static void diff_run(const diff_cfg *c, diff_result *r) {
    memset(r, 0, sizeof *r);
    double t0 = now_s();
    int total = c->nseeds ? c->nseeds : c->count;
    FILE *report = c->report ? fopen(c->report, "w") : NULL;
    int next = 0;
    while (next < total) {
        int hi = next + c->slice < total ? next + c->slice : total;
        int fds[2];
        if (pipe(fds) != 0) {
            fprintf(stderr, "gpu-diff: pipe: %s\n", strerror(errno));
            break;
        }
        pid_t pid = fork_child();
        if (pid == 0) {
            close(fds[0]);
            diff_child(c, next, hi, fds[1]);
        }
        close(fds[1]);
        if (pid < 0) {
            close(fds[0]);
            fprintf(stderr, "gpu-diff: fork: %s\n", strerror(errno));
            break;
        }
        r->children++;
        int at = next; /* the seed the child is running: the first it has not reported */
        bool hung = false, stopped = false; /* stopped: it reported a dead context and quit */
        for (;;) {
            struct pollfd p = {fds[0], POLLIN, 0};
            int pr = poll(&p, 1, c->timeout_s * 1000);
            if (pr < 0 && errno == EINTR) continue;
            if (pr == 0) {
                hung = true;
                kill(pid, SIGKILL);
                break;
            }
            diff_msg m;
            size_t got = read_all_fd(fds[0], &m, sizeof m);
            if (got != sizeof m) break; /* end of file: the child is gone */
            r->programs++;
            if (m.outcome != OUT_CRASH) r->ran++;
            stopped = m.outcome == OUT_CRASH;
            r->compared += m.compared;
            for (int k = 0; k < RULE_COUNT; k++) r->rules[k] += m.rules[k];
            if (m.outcome == OUT_ALIKE) r->alike++;
            if (m.outcome == OUT_MISMATCH || m.outcome == OUT_CRASH)
                record_failure(r, report, seed_at(c, m.index), m.outcome, m.why);
            at = m.index + 1;
        }
        close(fds[0]);
        int status = 0;
        waitpid(pid, &status, 0);
        if (at < hi && !stopped) { /* it died or hung before finishing: its seed crashed */
            char why[160], st[96];
            describe_status(status, st, sizeof st);
            if (hung)
                snprintf(why, sizeof why, "no answer in %d s: killed (a hang?)", c->timeout_s);
            else
                snprintf(why, sizeof why, "the child running it died: %s", st);
            r->programs++;
            record_failure(r, report, seed_at(c, at), OUT_CRASH, why);
            at++;
        }
        next = at;
        fprintf(stderr, "gpu-diff: progress programs=%d total=%d crashes=%d mismatches=%d "
                "first=%d last=%d seconds=%.0f compared=%d\n", r->programs, total, r->crashes,
                r->mismatches, seed_at(c, 0), seed_at(c, next - 1), now_s() - t0, r->compared);
    }
    if (report) fclose(report);
    r->seconds = now_s() - t0;
}

static void diff_summary(const diff_cfg *c, const diff_result *r, const char *label) {
    int total = c->nseeds ? c->nseeds : c->count;
    char rules[600] = "";
    for (int k = 0; k < RULE_COUNT; k++)
        appendf(rules, sizeof rules, "%s%d %s", k ? ", " : "", r->rules[k], rule_names[k]);
    printf("%s: %d programs, %d outputs compared, %d crashes, %d mismatches, %d failing alike, "
           "seeds %d..%d, %.0f s; %s\n", label, r->programs, r->compared, r->crashes,
           r->mismatches, r->alike, total ? seed_at(c, 0) : 0, total ? seed_at(c, total - 1) : -1,
           r->seconds, rules);
    for (int i = 0; i < r->nfail; i++)
        printf("%s: FAILED seed %d: %s: %s\n", label, r->fail[i].seed,
               outcome_names[r->fail[i].outcome], r->fail[i].why);
    /* the same for scripts (tools/gpu-diff.sh) */
    printf("%s: totals programs=%d compared=%d crashes=%d mismatches=%d alike=%d first=%d last=%d "
           "seconds=%.0f close=%d overflow=%d intpow=%d replay=%d nonfinite_fft=%d pow_phase=%d "
           "order=%d\n", label,
           r->programs,
           r->compared, r->crashes, r->mismatches, r->alike, total ? seed_at(c, 0) : 0,
           total ? seed_at(c, total - 1) : -1, r->seconds, r->rules[RULE_CLOSE],
           r->rules[RULE_OVERFLOW], r->rules[RULE_INT_POW], r->rules[RULE_REPLAY],
           r->rules[RULE_NONFINITE_FFT], r->rules[RULE_POW_PHASE], r->rules[RULE_ORDER]);
    fflush(stdout);
}

Test(gpu, random_dags_match_the_host_reference) {
    /* FUSEC_DIFF_BACKEND=host: the host backend against itself, rule 1 only (the machinery
     * and tools/gpu-diff.sh where there is no GPU) */
    const char *be = getenv("FUSEC_DIFF_BACKEND");
    bool host = be && strcmp(be, "host") == 0;
    gpu_probe g = host ? (gpu_probe){true, 0, "the host backend"} : probe_gpu();
    if (!g.ok) {
        fprintf(stderr, "gpu: SKIPPED 1 test (no CUDA device): "
                        "random_dags_match_the_host_reference\n");
        cr_skip_test("no CUDA device: the GPU differential test is skipped");
    }
    diff_cfg c;
    memset(&c, 0, sizeof c);
    c.backend = host ? FC_BACKEND_HOST : FC_BACKEND_CUDA;
    c.count = env_int("FUSEC_DIFF_DAGS", 2000);
    c.first = env_int("FUSEC_DIFF_FIRST", 0);
    c.slice = env_int("FUSEC_DIFF_SLICE", 200);
    c.timeout_s = env_int("FUSEC_DIFF_SEED_TIMEOUT", 120);
    c.report = getenv("FUSEC_DIFF_REPORT");
    if (c.slice < 1) c.slice = 1;
    if (c.timeout_s < 1) c.timeout_s = 1;
    /* FUSEC_DIFF_SEEDS="11,163": just these seeds (reproducing a report). */
    static int seeds[4096];
    int nseeds = 0;
    for (const char *s = getenv("FUSEC_DIFF_SEEDS"); s && *s && nseeds < 4096;) {
        seeds[nseeds++] = atoi(s);
        s = strchr(s, ',');
        if (s) s++;
    }
    c.seeds = seeds;
    c.nseeds = nseeds;
    fprintf(stderr, "gpu-diff: %s, CUDA_VISIBLE_DEVICES=%s\n", g.name,
            getenv("CUDA_VISIBLE_DEVICES") ? getenv("CUDA_VISIBLE_DEVICES") : "(unset)");
    diff_result r;
    diff_run(&c, &r);
    diff_summary(&c, &r, "gpu differential");
    int total = nseeds ? nseeds : c.count;
    cr_expect_eq(r.programs, total, "%d of %d programs ran", r.programs, total);
    cr_expect_eq(r.crashes, 0, "%d of %d random programs crashed", r.crashes, total);
    cr_expect_eq(r.mismatches, 0, "%d of %d random programs differ between GPU and host",
                 r.mismatches, total);
    free(r.fail);
}

/* The machinery without a GPU: the host backend on both sides (rule 1 only: 0 mismatches), a
 * child that aborts, one whose context "dies" and one that hangs; each costs its seed, which
 * is reported with its program, and the run goes on. */
Test(gpu_diff_machinery, a_crashing_seed_is_reported_and_the_run_goes_on) {
    char report[] = "/tmp/fusec-diff-report-XXXXXX";
    int rfd = mkstemp(report);
    cr_assert_geq(rfd, 0);
    close(rfd);
    setenv("FUSEC_DIFF_TEST_CRASH_SEED", "7,12:dead,17:hang", 1);
    diff_cfg c;
    memset(&c, 0, sizeof c);
    c.backend = FC_BACKEND_HOST;
    c.first = 0;
    c.count = 26;
    c.slice = 5;
    c.timeout_s = 3;
    c.report = report;
    diff_result r;
    diff_run(&c, &r);
    unsetenv("FUSEC_DIFF_TEST_CRASH_SEED");
    diff_summary(&c, &r, "host differential");
    cr_expect_eq(r.programs, 26, "every seed is accounted for");
    cr_expect_eq(r.mismatches, 0, "the host backend differs from itself");
    cr_expect_eq(r.crashes, 3);
    cr_assert_eq(r.nfail, 3);
    const int want[3] = {7, 12, 17};
    for (int i = 0; i < 3; i++) {
        cr_expect_eq(r.fail[i].seed, want[i]);
        cr_expect_eq(r.fail[i].outcome, OUT_CRASH);
    }
    cr_expect(strstr(r.fail[0].why, "signal 6") != NULL, "%s", r.fail[0].why);
    cr_expect(strstr(r.fail[1].why, "context died") != NULL, "%s", r.fail[1].why);
    cr_expect(strstr(r.fail[2].why, "no answer in 3 s") != NULL, "%s", r.fail[2].why);
    /* Seeds after each crash ran, in new children: 0-4, 5-7 (abort), 8-12 (dead), 13-17
     * (hang), 18-22, 23-25. */
    cr_expect_eq(r.children, 6);
    cr_expect_eq(r.ran, 23);
    cr_expect_gt(r.compared, 23);
    size_t len;
    char *text = tu_read_file(report, &len);
    for (int i = 0; i < 3; i++) {
        char head[64];
        snprintf(head, sizeof head, "# seed %d: crash: ", want[i]);
        char *at = strstr(text, head);
        cr_expect_not_null(at, "the report lacks seed %d:\n%s", want[i], text);
        /* the program follows, as .fc: its inputs first */
        if (at) cr_expect_not_null(strstr(at, " = input "), "%s", at);
    }
    free(text);
    free(r.fail);
    unlink(report);
}

/* Rule 6's replay, host against host: every op of every program, rebuilt from the other
 * side's values of its operands (fcg_make with the recorded op, dtypes, shape and
 * parameters), gives bit for bit what the program gave: so the replay rebuilds each kind of
 * node (elementwise, reductions, views, pad, concatenate, matmul, fft, sources) faithfully. */
Test(gpu_diff_machinery, the_replay_rebuilds_every_op_exactly) {
    fc_ctx *oc = new_ctx(FC_BACKEND_HOST);
    cr_assert_not_null(oc);
    rdag_options o;
    rdag_default_options(&o);
    int replayed = 0, failing = 0;
    for (uint64_t seed = 0; seed < 300; seed++) {
        rdag d;
        cr_assert_eq(rdag_build(oc, seed, &o, &d), FC_OK);
        unsigned char *first[RDAG_MAX_OUTPUTS] = {NULL};
        bool ok = fc_eval(oc, d.out, d.nout) == FC_OK;
        for (int k = 0; ok && k < d.nout; k++) ok = read_value(d.out[k], &first[k]) == FC_OK;
        rdag_free(&d);
        if (ok) {
            /* rule 1 alone, then with the GPU's tolerances (the sum-like ops' bounds made) */
            for (int pass = 0; pass < 2; pass++) {
                char why[1800] = "";
                tol gpu = {1e-4, 1e-3, 1e-30};
                int r = replay(oc, seed, first, pass ? &gpu : &exact_tol, why, sizeof why);
                cr_expect_eq(r, 1, "seed %llu, pass %d: %s", (unsigned long long)seed, pass, why);
            }
            replayed++;
        } else {
            failing++; /* an error both sides find (rule 4): nothing to replay */
        }
        for (int k = 0; k < RDAG_MAX_OUTPUTS; k++) free(first[k]);
        fc_clear_error(oc);
    }
    cr_expect_gt(replayed, 250, "only %d programs replayed (%d fail)", replayed, failing);
    cr_expect(sum_bounds_made[0] > 0 && sum_bounds_made[1] > 0 && sum_bounds_made[2] > 0 &&
                  sum_bounds_made[3] == 0,
              "sum bounds made: %d reductions, %d matmuls, %d ffts; %d failed", sum_bounds_made[0],
              sum_bounds_made[1], sum_bounds_made[2], sum_bounds_made[3]);
    cr_log_info("sum bounds made: %d reductions, %d matmuls, %d ffts", sum_bounds_made[0],
                sum_bounds_made[1], sum_bounds_made[2]);
    fc_ctx_destroy(oc);
}

/* A wrong op is named: one bit of one inner node's "GPU" value flipped, the replay fails at
 * that node, with its op. */
Test(gpu_diff_machinery, the_replay_names_a_wrong_op) {
    fc_ctx *oc = new_ctx(FC_BACKEND_HOST);
    cr_assert_not_null(oc);
    int named = 0;
    for (uint64_t seed = 0; seed < 40; seed++) {
        rdag d;
        cr_assert_eq(rdag_build(oc, seed, NULL, &d), FC_OK);
        /* an inner node with inputs and elements, not weak, not an output */
        fc_array **ord;
        size_t n;
        cr_assert_eq(fcg_topo_order(oc, d.out, d.nout, false, &ord, &n), FC_OK);
        int pick = -1;
        for (size_t i = 0; i < n && pick < 0; i++) {
            bool out = false;
            for (int k = 0; k < d.nout; k++) out |= ord[i] == d.out[k];
            if (!out && ord[i]->nin > 0 && !ord[i]->weak && fcg_node_numel(ord[i]) > 0)
                pick = (int)i;
        }
        char want[64];
        snprintf(want, sizeof want, "op %s (node %d of ",
                 pick >= 0 ? fcg_ops[ord[pick]->op].pyname : "", pick);
        fcg_free(oc, ord, n * sizeof *ord);
        unsigned char *first[RDAG_MAX_OUTPUTS] = {NULL};
        bool ok = pick >= 0 && fc_eval(oc, d.out, d.nout) == FC_OK;
        for (int k = 0; ok && k < d.nout; k++) ok = read_value(d.out[k], &first[k]) == FC_OK;
        rdag_free(&d);
        if (ok) {
            char why[1800] = "";
            replay_corrupt = pick;
            int r = replay(oc, seed, first, &exact_tol, why, sizeof why);
            replay_corrupt = -1;
            cr_expect_eq(r, 0, "seed %llu: a flipped bit passes the replay",
                         (unsigned long long)seed);
            cr_expect_not_null(strstr(why, want), "seed %llu: wanted \"%s\" in: %s",
                               (unsigned long long)seed, want, why);
            named++;
        }
        for (int k = 0; k < RDAG_MAX_OUTPUTS; k++) free(first[k]);
        fc_clear_error(oc);
    }
    cr_expect_gt(named, 20);
    fc_ctx_destroy(oc);
}

/* A replay node recorded from a, before evaluation cuts its history; ins: positions of its
 * operands among the test's nodes. */
static rp_node test_node(fc_array *a, int nin, const int *ins) {
    rp_node p;
    memset(&p, 0, sizeof p);
    p.h = a;
    p.op = (fcg_op)a->op;
    p.dtype = (fc_dtype)a->dtype;
    p.loop = (fc_dtype)a->loop_dtype;
    p.ndim = a->ndim;
    memcpy(p.shape, a->shape, sizeof p.shape);
    p.p = a->p;
    p.rtol = op_rtol(a);
    p.nin = nin;
    p.in = calloc(2, sizeof *p.in);
    for (int k = 0; k < nin; k++) p.in[k] = ins[k];
    return p;
}

/* A chain x -> s (sum-like) -> y for rule 9's tests, recorded, then evaluated on hc: the
 * host's values stand for the replay's, s gets its allowance, and *first receives the values
 * of y_first (the "first run"). y reads s, and x too when y_reads_x. */
static void order_chain(fc_ctx *hc, fc_array *x, fc_array *s, fc_array *y, bool y_reads_x,
                        fc_array *y_first, rp_node nodes[3], unsigned char **first) {
    nodes[0] = test_node(x, 0, NULL);
    nodes[1] = test_node(s, 1, (const int[]){0});
    nodes[2] = y_reads_x ? test_node(y, 2, (const int[]){1, 0}) : test_node(y, 1, (const int[]){1});
    fc_array *all[4] = {x, s, y, y_first};
    cr_assert_eq(fc_eval(hc, all, 4), FC_OK, "%s", fc_errmsg(hc));
    for (int i = 0; i < 3; i++) cr_assert_eq(read_value(all[i], &nodes[i].gv), FC_OK);
    cr_assert_eq(read_value(y_first, first), FC_OK);
    nodes[1].bound = sum_bound(hc, &nodes[1], &x, (size_t)fc_array_size(s));
    cr_assert_not_null(nodes[1].bound);
}

/* The elements of first (n f64 values) that rule 9 leaves unmatched; the first in why. */
static size_t order_left(fc_ctx *hc, rp_node nodes[3], const unsigned char *first, size_t n,
                         int *sums, char *why, size_t why_size) {
    tol t = {1e-9, 1e-3, 1e-30};
    bool close = false;
    int over = 0;
    unsigned char *ref = order_rule(hc, nodes, 3, 2, first, sums);
    cr_assert_not_null(ref);
    size_t bad = diff_compare(first, ref, FC_F64, n, &t, NULL, &close, &over, why, why_size);
    free(ref);
    return bad;
}

static void order_chain_free(rp_node nodes[3], unsigned char *first) {
    free(first);
    for (int i = 0; i < 3; i++) {
        free(nodes[i].in);
        free(nodes[i].gv);
        free(nodes[i].bound);
    }
}

/* Rule 9 on seed 126327's case: var(x, ddof=2) % x of int32 values up to 7.8e7 (a variance
 * near 6e14, whose ulp is 1/16). A first run whose variance was a few ulps off (another
 * kernel's order) matches; one whose output leaves the range the allowance gives does not. */
Test(gpu_diff_machinery, a_sum_order_explains_an_amplified_difference) {
    fc_ctx *hc = new_ctx(FC_BACKEND_HOST);
    cr_assert_not_null(hc);
    const int32_t xv[10] = {1, 2, -6, 9, 4, -78341576, -5, 3, 1, 4};
    fc_array *x = fc_from_host(hc, FC_I32, FC_SHAPE(5, 2), xv);
    fc_array *v = fc_var(x, FC_AXES(0, 1), false, 2);
    /* the "first run": the variance 3 ulps up, then the same modulo */
    fc_array *up = fc_scalar(hc, FC_F64, INFINITY);
    fc_array *v3 = fc_nextafter(fc_nextafter(fc_nextafter(v, up), up), up);
    rp_node nodes[3];
    unsigned char *first = NULL;
    order_chain(hc, x, v, fc_mod(v, x), true, fc_mod(v3, x), nodes, &first);
    tol t = {1e-9, 1e-3, 1e-30};
    bool close = false;
    int over = 0, sums = 0;
    char why[600] = "";
    cr_assert_gt(diff_compare(first, nodes[2].gv, FC_F64, 10, &t, NULL, &close, &over, why,
                              sizeof why),
                 0, "the moved variance changes no element of the modulo");
    cr_expect_eq(order_left(hc, nodes, first, 10, &sums, why, sizeof why), 0, "rule 9 leaves: %s",
                 why);
    cr_expect_eq(sums, 1);
    /* an element outside every moved value's range: |x| is at most 78341576 and % keeps x's
     * sign, so -1e9 is no modulo of any variance */
    double bad = -1e9;
    memcpy(first + 3 * 8, &bad, 8);
    cr_expect_eq(order_left(hc, nodes, first, 10, &sums, why, sizeof why), 1,
                 "a value out of the range passes rule 9: %s", why);
    order_chain_free(nodes, first);
    fc_ctx_destroy(hc);
}

/* Rule 9 on seed 8827's case: log10(std(x)) of 16 values -2 and its neighbours, 1 ulp apart.
 * The std, 3e-16, is rounding noise (its allowance is 4e-7), so a first run 20% off matches;
 * a NaN where every moved value is finite does not. */
Test(gpu_diff_machinery, a_sum_order_spans_a_std_of_rounding_noise) {
    fc_ctx *hc = new_ctx(FC_BACKEND_HOST);
    cr_assert_not_null(hc);
    double xv[16];
    for (int i = 0; i < 16; i++) xv[i] = nextafter(-2.0, i % 3 ? -3.0 : 0.0);
    fc_array *x = fc_from_host(hc, FC_F64, FC_SHAPE(16), xv);
    fc_array *sd = fc_std(x, FC_AXES(0), false, 2);
    rp_node nodes[3];
    unsigned char *first = NULL;
    order_chain(hc, x, sd, fc_log10(sd), false,
                fc_log10(fc_mul(sd, fc_scalar(hc, FC_F64, 1.2))), nodes, &first);
    cr_expect_gt(nodes[1].bound[0], 1e-8, "the std's allowance: %g", nodes[1].bound[0]);
    int sums = 0;
    char why[600] = "";
    cr_expect_eq(order_left(hc, nodes, first, 1, &sums, why, sizeof why), 0, "rule 9 leaves: %s",
                 why);
    double nan_value = NAN;
    memcpy(first, &nan_value, 8);
    cr_expect_eq(order_left(hc, nodes, first, 1, &sums, why, sizeof why), 1,
                 "a NaN passes rule 9");
    order_chain_free(nodes, first);
    fc_ctx_destroy(hc);
}

/* Rule 8 on seed 100688's case: (2.63 - 0.43j) ** 6647209197293938882 overflows, and the sign
 * of its infinite imaginary part is not determined by the operands in double precision. The
 * other sign passes, a finite value does not; a small power with a wrong phase does not. */
Test(gpu_diff_machinery, a_complex_power_phase_is_judged_by_its_modulus) {
    fc_ctx *hc = new_ctx(FC_BACKEND_HOST);
    cr_assert_not_null(hc);
    const double zv[2] = {2.6310279265454498, -0.42824891872093384};
    const uint64_t wv[2] = {6647209197293938882ull, 3};
    for (int c = 0; c < 2; c++) {
        fc_array *z = fc_from_host(hc, FC_C128, FC_SHAPE(1), zv);
        fc_array *w = fc_cast(fc_from_host(hc, FC_U64, FC_SHAPE(1), &wv[c]), FC_C128);
        fc_array *y = fc_pow(z, w);
        rp_node p = test_node(y, 2, (const int[]){0, 1});
        fc_array *ins[2] = {z, w};
        cr_assert_eq(fc_eval(hc, ins, 2), FC_OK);
        unsigned char *hv = NULL;
        cr_assert_eq(read_value(y, &hv), FC_OK);
        double h[2], g[2];
        memcpy(h, hv, 16);
        cr_expect(c == 1 || (isinf(h[0]) && isinf(h[1])), "the power overflows: %g %g", h[0], h[1]);
        /* the conjugate-signed imaginary part: the other phase, the same modulus */
        g[0] = h[0];
        g[1] = -h[1];
        size_t took = pow_phase_rule(hc, &p, ins, (const unsigned char *)g, hv);
        cr_expect_eq(took, c == 0 ? 1u : 0u, "case %d: %zu elements taken", c, took);
        memcpy(hv, h, 16);
        g[0] = 1;
        g[1] = 0;
        cr_expect_eq(pow_phase_rule(hc, &p, ins, (const unsigned char *)g, hv), 0u,
                     "case %d: a finite value meets an infinite one", c);
        free(hv);
        free(p.in);
    }
    fc_ctx_destroy(hc);
}

/* ---- extents past 2^31 ------------------------------------------------------------------- */

#define BIG_MAX_STEPS 4

/* A program over more than 2^31 elements, decided by its seed before anything is built (so
 * the parent can estimate its memory without building it). */
typedef struct big_recipe {
    uint64_t seed;
    fc_dtype t;             /* the big input's dtype */
    fc_shape shape;         /* its shape */
    fc_dtype small_t;       /* a small input that broadcasts against it */
    fc_shape small_shape;
    int nstep;
    int step[BIG_MAX_STEPS]; /* BIG_* below */
    int arg[BIG_MAX_STEPS];
    int reduce, reduce_axis; /* the final reduction and its axis (-1: all) */
    bool keep_full;         /* the last full-size array is an output too */
    int64_t host_bytes, dev_bytes; /* estimates */
} big_recipe;

enum { BIG_EW_SMALL, BIG_EW_SCALAR, BIG_COMPARE, BIG_CAST, BIG_FLIP, BIG_STEP_SLICE, BIG_TAIL,
       BIG_TRANSPOSE, BIG_PAD, BIG_CONCAT, BIG_KINDS };
enum { BIG_SUM, BIG_MAX, BIG_MIN, BIG_ANY, BIG_COUNT, BIG_ARGMAX, BIG_MEAN, BIG_REDUCTIONS };

static int64_t shape_numel(const fc_shape *s) {
    int64_t n = 1;
    for (int d = 0; d < s->ndim; d++) n *= s->dim[d];
    return n;
}

static const char *const big_step_names[BIG_KINDS] = {
    "op with the small input", "op with a scalar", "compare", "cast", "flip", "strided slice",
    "the last elements", "transpose", "pad", "concatenate"};
static const char *const big_reduce_names[BIG_REDUCTIONS] = {
    "sum", "max", "min", "any", "count_nonzero", "argmax", "mean"};

/* "u8 [2147483665], small u8 [1]: flip, cast, then sum over all (and the full array)" */
static void big_describe(const big_recipe *b, char *buf, size_t size) {
    char sh[200], ss[200];
    snprintf(buf, size, "%s %s, small %s %s:", fc_dtype_name(b->t),
             fcg_shape_str(sh, b->shape.ndim, b->shape.dim), fc_dtype_name(b->small_t),
             fcg_shape_str(ss, b->small_shape.ndim, b->small_shape.dim));
    for (int i = 0; i < b->nstep; i++)
        appendf(buf, size, "%s %s", i ? "," : "", big_step_names[b->step[i]]);
    appendf(buf, size, ", then %s over %s%s", big_reduce_names[b->reduce],
            b->reduce_axis < 0 ? "all" : "axis 0", b->keep_full ? " (and the full array)" : "");
}

/* The recipe of seed. The first four seeds of a run take u8, bool, f16, f32 in turn. */
static big_recipe big_plan(uint64_t seed) {
    big_recipe b;
    memset(&b, 0, sizeof b);
    b.seed = seed;
    rd r;
    memset(&r, 0, sizeof r);
    r.state = seed * 0x9e3779b97f4a7c15ULL ^ 0xb16b16b16ULL;
    static const fc_dtype types[4] = {FC_U8, FC_BOOL, FC_F16, FC_F32};
    b.t = types[seed % 4];
    int layout = rd_below(&r, 3);
    if (layout == 0) {
        b.shape.ndim = 1;
        b.shape.dim[0] = ((int64_t)1 << 31) + 1 + rd_below(&r, 4096);
    } else if (layout == 1) {
        b.shape.ndim = 2;
        b.shape.dim[0] = 3;
        b.shape.dim[1] = 715827883 + rd_below(&r, 64);
    } else {
        b.shape.ndim = 2;
        b.shape.dim[0] = 32769 + rd_below(&r, 8);
        b.shape.dim[1] = 65537 + rd_below(&r, 8);
    }
    /* The small input: the big one's last extent, a column, or one element. */
    b.small_t = b.t == FC_F16 && rd_chance(&r, 50) ? FC_F32 : b.t;
    int sk = rd_below(&r, 3);
    if (sk == 0 && b.shape.ndim == 2 && b.shape.dim[0] < 100000) {
        b.small_shape.ndim = 2;
        b.small_shape.dim[0] = b.shape.dim[0];
        b.small_shape.dim[1] = 1;
    } else if (sk == 1 && b.shape.dim[b.shape.ndim - 1] < 100000) {
        b.small_shape.ndim = 1;
        b.small_shape.dim[0] = b.shape.dim[b.shape.ndim - 1];
    } else {
        b.small_shape.ndim = 1;
        b.small_shape.dim[0] = 1;
    }
    b.nstep = 2; /* the host reference takes 20-40 s a pass over 2^31 elements */
    for (int i = 0; i < b.nstep; i++) {
        b.step[i] = rd_below(&r, BIG_KINDS);
        b.arg[i] = rd_below(&r, 1 << 20);
    }
    b.reduce = rd_below(&r, BIG_REDUCTIONS);
    b.reduce_axis = rd_chance(&r, 50) ? -1 : 0;
    /* the full-size result as an output too (64-bit stores), but not for f32 (8.6 GB each
     * side, and the others store 1 or 2 bytes an element past 2^31 already) */
    b.keep_full = rd_chance(&r, 50) && b.t != FC_F32;
    return b;
}

/* A fast fill of n elements of dtype t: the random programs' value ranges (non-zero integers,
 * float magnitudes in [1/4, 4)), several elements per splitmix64 draw. */
static void big_fill(uint64_t seed, fc_dtype t, void *buf, int64_t n) {
    rd r;
    memset(&r, 0, sizeof r);
    r.state = seed ^ 0xf111f111ULL;
    if (t == FC_U8 || t == FC_BOOL) {
        uint8_t *p = buf;
        for (int64_t i = 0; i < n; i += 8) {
            uint64_t v = rd_next(&r);
            for (int k = 0; k < 8 && i + k < n; k++, v >>= 8)
                p[i + k] = t == FC_BOOL ? (uint8_t)(v & 1) : (uint8_t)(v & 0xff ? v & 0xff : 1);
        }
    } else if (t == FC_F16) {
        uint16_t *p = buf;
        for (int64_t i = 0; i < n; i += 4) {
            uint64_t v = rd_next(&r);
            for (int k = 0; k < 4 && i + k < n; k++, v >>= 16)
                p[i + k] = (uint16_t)((v & 0x8000) | ((13 + ((v >> 10) & 3)) << 10) | (v & 0x3ff));
        }
    } else {
        float *p = buf;
        for (int64_t i = 0; i < n; i += 2) {
            uint64_t v = rd_next(&r);
            for (int k = 0; k < 2 && i + k < n; k++, v >>= 32) {
                float m = 0.25f + (float)(v & 0xffffff) * (3.75f / 16777216.0f);
                p[i + k] = (v >> 31) & 1 ? -m : m;
            }
        }
    }
}

/* Builds the recipe's program in ctx over data (the big input) and small (the small one);
 * outs[0] the reduction, outs[1] the full-size array when kept. Returns the output count, or
 * 0 when an op was refused (the message is in the context). Bytes of every node in *bytes. */
static int big_build(fc_ctx *ctx, const big_recipe *b, const void *data, const void *small,
                     fc_array **outs, int64_t *bytes) {
    fc_array *x = fc_from_host(ctx, b->t, b->shape, data);
    fc_array *s = fc_from_host(ctx, b->small_t, b->small_shape, small);
    *bytes = 0;
    for (int i = 0; i < b->nstep && fc_array_status(x) == FC_OK; i++) {
        fc_dtype t = fc_array_dtype(x);
        fc_shape sh = fc_array_shape(x);
        int a = b->arg[i], nd = sh.ndim;
        bool num = t != FC_BOOL;
        fc_array *y;
        switch (b->step[i]) {
        case BIG_EW_SMALL: {
            fc_array *o = fc_cast(s, t);
            if (!num) y = a % 2 ? fc_logical_xor(x, o) : fc_logical_or(x, o);
            else if (t == FC_U8) y = a % 2 ? fc_add(x, o) : fc_maximum(x, o);
            else y = a % 3 == 0 ? fc_add(x, o) : a % 3 == 1 ? fc_mul(x, o) : fc_minimum(x, o);
            break;
        }
        case BIG_EW_SCALAR:
            if (!num) y = fc_logical_not(x);
            else if (t == FC_U8) y = fc_bitwise_xor(x, fc_i64(ctx, 1 + a % 200));
            else y = fc_sub(fc_mul(x, fc_f64(ctx, 0.5)), fc_f64(ctx, 0.25));
            break;
        case BIG_COMPARE:
            y = num ? fc_greater(x, t == FC_U8 ? fc_i64(ctx, 128) : fc_f64(ctx, 0.0))
                    : fc_not_equal(x, fc_cast(s, FC_BOOL));
            break;
        case BIG_CAST: {
            static const fc_dtype to[4] = {FC_U8, FC_BOOL, FC_F16, FC_F32};
            fc_dtype d = to[a % 4] == t ? to[(a + 1) % 4] : to[a % 4];
            fc_array *v = x;
            if (fcg_is_inexact(t) && d == FC_U8) /* defined: finite and within [0, 100] */
                v = fc_clip(x, fc_f64(ctx, 0.0), fc_f64(ctx, 100.0));
            y = fc_cast(v, d);
            break;
        }
        case BIG_FLIP: y = fc_flip(x, FC_AXES(a % nd)); break;
        case BIG_STEP_SLICE: { /* every other or every third element, backwards sometimes */
            static const int64_t steps[4] = {2, -3, -1, 3};
            fc_idx idx[FC_MAX_DIMS];
            for (int d = 0; d < nd; d++) idx[d] = FC_COLON;
            idx[nd - 1] = FC_S(FC_NIL, FC_NIL, steps[a % 4]);
            y = fc_index(x, nd, idx);
            break;
        }
        case BIG_TAIL: { /* the last few elements: offsets past 2^31 in a small result */
            fc_array *f = nd == 1 ? x : fc_reshape(x, FC_SHAPE(-1));
            int64_t n = fc_array_size(f);
            y = fc_index(f, 1, (fc_idx[]){FC_S(n - 37 - a % 1000, FC_NIL, FC_NIL)});
            break;
        }
        case BIG_TRANSPOSE:
            y = nd == 2 ? fc_transpose(x) : fc_reshape(x, FC_SHAPE(-1, 1));
            break;
        case BIG_PAD: {
            int64_t w[FC_MAX_DIMS][2] = {{0}};
            w[nd - 1][0] = 1 + a % 3;
            w[nd - 1][1] = a % 2;
            y = fc_pad(x, nd, (const int64_t(*)[2])w, a % 3 == 0 ? FC_PAD_EDGE : FC_PAD_CONSTANT,
                       1);
            break;
        }
        default: { /* concatenate with a few of its own rows / elements */
            fc_idx idx[FC_MAX_DIMS];
            for (int d = 0; d < nd; d++) idx[d] = FC_COLON;
            idx[0] = FC_S(0, 2, FC_NIL);
            fc_array *p[2] = {x, fc_index(x, nd, idx)};
            y = fc_concatenate(ctx, p, 2, 0);
            break;
        }
        }
        x = y;
        if (fc_array_status(x) == FC_OK)
            *bytes += fc_array_size(x) * (int64_t)fc_dtype_size(fc_array_dtype(x));
    }
    if (fc_array_status(x) != FC_OK) return 0;
    int nd = fc_array_ndim(x);
    fc_axes ax = b->reduce_axis < 0 || nd == 0 ? FC_ALL : FC_AXES(b->reduce_axis % nd);
    fc_array *red;
    switch (b->reduce) {
    case BIG_SUM: red = fc_sum(x, ax, false); break;
    case BIG_MAX: red = fc_max(x, ax, false); break;
    case BIG_MIN: red = fc_min(x, ax, true); break;
    case BIG_ANY: red = fc_any(fc_logical_not(x), ax, false); break;
    case BIG_COUNT: red = fc_count_nonzero(x, ax, false); break;
    case BIG_ARGMAX:
        red = fc_argmax(x, b->reduce_axis < 0 || nd == 0 ? FC_AXIS_NONE : 0, false);
        break;
    default: red = fc_mean(x, ax, false); break;
    }
    if (fc_array_status(red) != FC_OK) return 0;
    outs[0] = red;
    int n = 1;
    if (b->keep_full && fc_array_size(x) > fc_array_size(red)) outs[n++] = x;
    for (int i = 0; i < n; i++)
        *bytes += fc_array_size(outs[i]) * (int64_t)fc_dtype_size(fc_array_dtype(outs[i]));
    return n;
}

/* Memory estimates of a recipe, from its steps alone (nothing is built): the dtype each step
 * leaves and an upper bound of its element count. On the host, views cost nothing (strides)
 * and the other steps a value each (a cast from a float to u8 two: the clip), which the host
 * reference may hold all at once. Host: while the GPU runs, the input twice (the host
 * context's copy and the GPU context's) and the full-size output read back; while the host
 * runs (the GPU context is gone), the input, every value and the output twice. Device: the
 * input, the output and, at most, every value. 1 GiB of slack each. */
static void big_estimate(big_recipe *b) {
    int64_t n = shape_numel(&b->shape), in = n * (int64_t)fc_dtype_size(b->t), nodes = 0;
    fc_dtype t = b->t;
    for (int i = 0; i < b->nstep; i++) {
        int a = b->arg[i], values = 1;
        switch (b->step[i]) {
        case BIG_COMPARE: t = FC_BOOL; break;
        case BIG_CAST: {
            static const fc_dtype to[4] = {FC_U8, FC_BOOL, FC_F16, FC_F32};
            fc_dtype d = to[a % 4] == t ? to[(a + 1) % 4] : to[a % 4];
            values = fcg_is_inexact(t) && d == FC_U8 ? 2 : 1;
            t = d;
            break;
        }
        case BIG_EW_SCALAR: values = fcg_is_inexact(t) ? 2 : 1; break;
        case BIG_CONCAT: n = n / b->shape.dim[0] * (b->shape.dim[0] + 2) + 2; break;
        case BIG_PAD: n += n / b->shape.dim[b->shape.ndim - 1] * 3 + 3; break;
        case BIG_TAIL: n = n < 1100 ? n : 1100; values = 0; break;
        case BIG_EW_SMALL: break;
        default: values = 0; break; /* a view */
        }
        nodes += values * n * (int64_t)fc_dtype_size(t);
    }
    int64_t out = b->keep_full ? n * (int64_t)fc_dtype_size(t) : 0, slack = (int64_t)1 << 30;
    int64_t gpu_phase = 2 * in + out, host_phase = in + nodes + 2 * out;
    b->host_bytes = (gpu_phase > host_phase ? gpu_phase : host_phase) + slack;
    b->dev_bytes = in + out + nodes + slack;
}

/* A big program's result, child to parent (under PIPE_BUF). */
typedef struct big_msg {
    int32_t outcome;
    int32_t kernels, kernels64;
    double fill_s, gpu_s, host_s, compare_s;
    double peak_gib;  /* the child's peak resident memory */
    char why[1200];
    char program[2400];
} big_msg;

/* The plan's index width: every kernel spanning 2^31 elements or more (its space, a buffer it
 * reads or a node it computes) indexes in 64 bits. Returns false (why set) when one does not. */
static bool big_check_index_width(fc_ctx *hc, fc_array *const *outs, int n, big_msg *m) {
    fcp_plan *p = NULL;
    if (fcp_plan_build(hc, outs, n, &p) != FC_OK) {
        snprintf(m->why, sizeof m->why, "fcp_plan_build: %s", fc_errmsg(hc));
        return false;
    }
    bool ok = true;
    for (int i = 0; i < p->nkernel && ok; i++) {
        const fcp_kernel *k = &p->kernels[i];
        if (k->kind == FCP_KERNEL_LIB) continue;
        size_t most = fcg_numel(k->ndim, k->space);
        for (int j = 0; j < k->nleaf; j++)
            if (fcg_node_numel(k->leaves[j]) > most) most = fcg_node_numel(k->leaves[j]);
        for (int j = 0; j < k->nnode; j++)
            if (fcg_node_numel(k->nodes[j]) > most) most = fcg_node_numel(k->nodes[j]);
        fcx_kernel_src src;
        memset(&src, 0, sizeof src);
        if (fcx_generate(hc, k, &src) != FC_OK) {
            snprintf(m->why, sizeof m->why, "fcx_generate of kernel %d: %s", i, fc_errmsg(hc));
            ok = false;
            break;
        }
        m->kernels++;
        m->kernels64 += src.idx64;
        if (most > (size_t)INT32_MAX && !src.idx64) {
            snprintf(m->why, sizeof m->why, "kernel %d (%s) spans %zu elements with 32-bit indices",
                     i, fcp_kernel_kind_names[k->kind], most);
            ok = false;
        }
        fcx_kernel_src_free(hc, &src);
    }
    if (ok && m->kernels64 == 0) {
        snprintf(m->why, sizeof m->why, "no kernel of %d indexes in 64 bits", m->kernels);
        ok = false;
    }
    fcp_plan_destroy(p);
    return ok;
}

/* Runs one big program in this (child) process; never returns. */
static void big_child(const big_recipe *b, fc_backend other, int fd) {
    big_msg m;
    memset(&m, 0, sizeof m);
    m.outcome = OUT_MISMATCH;
    int64_t n = shape_numel(&b->shape), ns = shape_numel(&b->small_shape);
    size_t es = fc_dtype_size(b->t);
    double t0 = now_s();
    void *data = malloc((size_t)n * es), *small = malloc((size_t)ns * 4 + 16);
    fc_ctx *hc = new_ctx(FC_BACKEND_HOST), *gc = new_ctx(other);
    fc_array *ho[2], *go[2];
    unsigned char *gv[2] = {NULL, NULL}, *hv[2] = {NULL, NULL};
    int nout = 0;
    if (!data || !small || !hc || !gc) {
        snprintf(m.why, sizeof m.why, "no memory or no context (host %p, gpu %p)", (void *)hc,
                 (void *)gc);
        goto done;
    }
    big_fill(b->seed, b->t, data, n);
    big_fill(b->seed + 1, b->small_t, small, ns);
    m.fill_s = now_s() - t0;
    fc_scope_open(hc);
    fc_scope_open(gc);
    int64_t bytes;
    nout = big_build(hc, b, data, small, ho, &bytes);
    free(data); /* the GPU's input copies the host context's (one copy fewer at the peak) */
    data = NULL;
    fc_array *hx = ho[0];
    fc_array **hord;
    size_t hn;
    if (nout && fcg_topo_order(hc, ho, nout, false, &hord, &hn) == FC_OK) {
        for (size_t i = 0; i < hn; i++)
            if (hord[i]->op == FCG_OP_DATA && fcg_node_numel(hord[i]) == (size_t)n) hx = hord[i];
        fcg_free(hc, hord, hn * sizeof *hord);
    }
    int gn = nout ? big_build(gc, b, hx->host, small, go, &bytes) : 0;
    if (nout == 0 || gn != nout) {
        snprintf(m.why, sizeof m.why, "the program could not be built: %s", fc_errmsg(hc));
        goto done;
    }
    char *text = NULL;
    if (fc_program_print(hc, ho, nout, NULL, &text) == FC_OK) {
        snprintf(m.program, sizeof m.program, "%s", text);
        fc_free(hc, text);
    }
    if (!big_check_index_width(hc, ho, nout, &m)) goto done;
    tol pt = {tv_program_rtol(hc, ho, nout, tv_gpu_rtol), 1e-3, 1e-30};
    /* The GPU first (fast), its outputs read back; its context goes before the host runs. */
    t0 = now_s();
    fc_status gs = fc_eval(gc, go, nout);
    for (int k = 0; k < nout && gs == FC_OK; k++) gs = read_value(go[k], &gv[k]);
    m.gpu_s = now_s() - t0;
    if (gs != FC_OK) {
        m.outcome = gs == FC_ERR_BACKEND ? OUT_CRASH : OUT_MISMATCH;
        snprintf(m.why, sizeof m.why, "gpu: %s: %s", fc_strerror(gs), fc_errmsg(gc));
        goto done;
    }
    fc_ctx_destroy(gc);
    gc = NULL;
    t0 = now_s();
    fc_status hs = fc_eval(hc, ho, nout);
    for (int k = 0; k < nout && hs == FC_OK; k++) hs = read_value(ho[k], &hv[k]);
    m.host_s = now_s() - t0;
    if (hs != FC_OK) {
        snprintf(m.why, sizeof m.why, "host: %s: %s", fc_strerror(hs), fc_errmsg(hc));
        goto done;
    }
    t0 = now_s();
    m.outcome = OUT_MATCH;
    for (int k = 0; k < nout; k++) {
        bool close = false;
        int over = 0;
        char why[600] = "";
        fc_dtype t = fc_array_dtype(ho[k]);
        if (diff_compare(gv[k], hv[k], t, (size_t)fc_array_size(ho[k]), &pt, NULL, &close, &over,
                         why, sizeof why)) {
            m.outcome = OUT_MISMATCH;
            snprintf(m.why, sizeof m.why, "output %d (%s, %lld elements): %s", k, fc_dtype_name(t),
                     (long long)fc_array_size(ho[k]), why);
            break;
        }
    }
    m.compare_s = now_s() - t0;
done:;
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0) m.peak_gib = (double)ru.ru_maxrss / 1048576.0;
    write_all(fd, &m, sizeof m);
    _exit(0);
}

/* Host memory available now (MemAvailable), in bytes; 0 if unknown. */
static int64_t mem_available(void) {
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return 0;
    char line[256];
    long long kb = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %lld kB", &kb) == 1) break;
    fclose(f);
    return (int64_t)kb * 1024;
}

typedef struct big_run {
    big_recipe b;
    pid_t pid;
    int fd;
    double start;
    bool done;
} big_run;

Test(gpu, extents_past_2_31_match_the_host_reference) {
    /* FUSEC_DIFF_BACKEND=host: the host backend against itself (the machinery, here) */
    const char *be = getenv("FUSEC_DIFF_BACKEND");
    bool host = be && strcmp(be, "host") == 0;
    gpu_probe g = host ? (gpu_probe){true, (size_t)1 << 50, "the host backend"} : probe_gpu();
    if (!g.ok) {
        fprintf(stderr, "gpu: SKIPPED 1 test (no CUDA device): "
                        "extents_past_2_31_match_the_host_reference\n");
        cr_skip_test("no CUDA device: the 64-bit index test is skipped");
    }
    int count = env_int("FUSEC_DIFF_BIG", 8), first = env_int("FUSEC_DIFF_BIG_FIRST", 0);
    int timeout = env_int("FUSEC_DIFF_BIG_TIMEOUT", 900);
    if (count <= 0) cr_skip_test("FUSEC_DIFF_BIG=0");
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int jobs = env_int("FUSEC_DIFF_BIG_JOBS", cpus > 2 ? (int)(cpus / 2) : 1);
    if (jobs > 64) jobs = 64; /* the poll set below */
    if (jobs < 1) jobs = 1;
    int64_t host_budget = mem_available() * 7 / 10;
    int64_t dev_budget = (int64_t)g.total_memory * 8 / 10;
    fprintf(stderr, "gpu-big: %s, %.0f GiB; host memory for the test %.0f GiB, device %.0f GiB, up "
            "to %d programs at once\n", g.name, (double)g.total_memory / 1073741824.0,
            (double)host_budget / 1073741824.0, (double)dev_budget / 1073741824.0, jobs);
    big_run *runs = calloc((size_t)count, sizeof *runs);
    cr_assert_not_null(runs);
    int nrun = 0, skipped = 0;
    for (int i = 0; i < count; i++) {
        big_recipe b = big_plan((uint64_t)(first + i));
        big_estimate(&b);
        if (host) b.host_bytes *= 2; /* the other side is a host context too */
        char desc[400];
        big_describe(&b, desc, sizeof desc);
        fprintf(stderr, "gpu-big: seed %d: %s; about %.0f GiB of host and %.0f GiB of device "
                "memory\n", first + i, desc, (double)b.host_bytes / 1073741824.0,
                (double)b.dev_bytes / 1073741824.0);
        if (b.host_bytes > host_budget || b.dev_bytes > dev_budget) {
            fprintf(stderr, "gpu-big: seed %d SKIPPED: it needs about %.0f GiB of host and %.0f "
                    "GiB of device memory; there are %.0f and %.0f for it\n", first + i,
                    (double)b.host_bytes / 1073741824.0, (double)b.dev_bytes / 1073741824.0,
                    (double)host_budget / 1073741824.0, (double)dev_budget / 1073741824.0);
            skipped++;
            continue;
        }
        runs[nrun++].b = b;
    }
    if (nrun == 0) {
        free(runs);
        fprintf(stderr, "gpu: SKIPPED 1 test (too little memory): "
                        "extents_past_2_31_match_the_host_reference\n");
        cr_skip_test("too little host or device memory for any program over 2^31 elements");
    }
    double t0 = now_s();
    int next = 0, running = 0, failed = 0, passed = 0;
    int64_t host_used = 0, dev_used = 0;
    while (next < nrun || running > 0) {
        /* Start what fits. */
        while (next < nrun && running < jobs &&
               (running == 0 || (host_used + runs[next].b.host_bytes <= host_budget &&
                                 dev_used + runs[next].b.dev_bytes <= dev_budget))) {
            big_run *r = &runs[next++];
            int fds[2];
            cr_assert_eq(pipe(fds), 0);
            r->pid = fork_child();
            if (r->pid == 0) {
                close(fds[0]);
                big_child(&r->b, host ? FC_BACKEND_HOST : FC_BACKEND_CUDA, fds[1]);
            }
            close(fds[1]);
            cr_assert_gt(r->pid, 0);
            r->fd = fds[0];
            r->start = now_s();
            host_used += r->b.host_bytes;
            dev_used += r->b.dev_bytes;
            running++;
        }
        /* Wait for one to finish (or time out). */
        struct pollfd p[64];
        int idx[64], np = 0;
        for (int i = 0; i < next && np < 64; i++)
            if (!runs[i].done) {
                p[np] = (struct pollfd){runs[i].fd, POLLIN, 0};
                idx[np++] = i;
            }
        int pr = poll(p, (nfds_t)np, 5000);
        if (pr < 0 && errno != EINTR) break;
        for (int j = 0; j < np; j++) {
            big_run *r = &runs[idx[j]];
            bool ready = pr > 0 && (p[j].revents & (POLLIN | POLLHUP | POLLERR));
            bool late = now_s() - r->start > timeout;
            if (!ready && !late) continue;
            big_msg m;
            memset(&m, 0, sizeof m);
            int status = 0;
            if (late && !ready) {
                kill(r->pid, SIGKILL);
                m.outcome = OUT_CRASH;
                snprintf(m.why, sizeof m.why, "no answer in %d s: killed", timeout);
            } else if (read_all_fd(r->fd, &m, sizeof m) != sizeof m) {
                memset(&m, 0, sizeof m);
                m.outcome = OUT_CRASH;
            }
            close(r->fd);
            waitpid(r->pid, &status, 0);
            if (m.outcome == OUT_CRASH && !m.why[0]) {
                char st[96];
                describe_status(status, st, sizeof st);
                snprintf(m.why, sizeof m.why, "the child died: %s", st);
            }
            r->done = true;
            running--;
            host_used -= r->b.host_bytes;
            dev_used -= r->b.dev_bytes;
            char sh[200];
            fprintf(stderr, "gpu-big: seed %llu (%s %s): %s; %d of %d kernels 64-bit; fill %.0f s, "
                    "gpu %.1f s, host %.0f s, compare %.0f s; %.0f s in all; peak %.1f GiB "
                    "(estimate %.1f)%s%s\n",
                    (unsigned long long)r->b.seed, fc_dtype_name(r->b.t),
                    fcg_shape_str(sh, r->b.shape.ndim, r->b.shape.dim), outcome_names[m.outcome],
                    m.kernels64, m.kernels, m.fill_s, m.gpu_s, m.host_s, m.compare_s,
                    now_s() - r->start, m.peak_gib, (double)r->b.host_bytes / 1073741824.0,
                    m.why[0] ? ": " : "", m.why);
            if (m.outcome == OUT_MATCH) {
                passed++;
            } else {
                failed++;
                cr_log_error("big seed %llu: %s: %s\nprogram:\n%s", (unsigned long long)r->b.seed,
                             outcome_names[m.outcome], m.why, m.program);
            }
        }
    }
    printf("gpu extents past 2^31: %d programs, %d match, %d fail, %d skipped (memory), %.0f s\n",
           nrun, passed, failed, skipped, now_s() - t0);
    free(runs);
    cr_expect_eq(failed, 0, "%d of %d programs over 2^31 elements fail", failed, nrun);
}
