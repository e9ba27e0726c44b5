/*
 * fuzz/fuzz_fc.c - libFuzzer target: the .fc parser, builder, printer and the host backend.
 *
 * Each input is the text of a .fc program. On a fresh FC_BACKEND_HOST context:
 *   1. parse it (fc_program_parse). A failure must be FC_ERR_PARSE or FC_ERR_NOMEM with a
 *      message; that is the end of it.
 *   2. bind every dimension symbol to a small value that depends only on its name (0 to 5:
 *      renaming a symbol changes its size), and build the program with placeholder inputs.
 *   3. print the outputs (fc_program_print, with the program's output names) twice: the same
 *      bytes; parse the printed text, build it: it must parse and build, with the same
 *      outputs, the same structural hash, and print to the same bytes. A mismatch is a finding
 *      (abort): the printer promises that its text reads back to the same graph.
 *   4. when every node of the graph is small (at most FZ_MAX_NODE elements, FZ_MAX_WORK
 *      element operations in all, counting a matmul's inner products, an FFT's passes and
 *      every input, used or not),
 *      build it again with the inputs bound to small deterministic arrays of their dtypes
 *      (same structural hash: inputs hash by position, dtype and shape, not by value),
 *      evaluate it on the host and copy every output out; evaluate the placeholder graph
 *      too (the FC_ERR_UNBOUND path). A bigger program is only parsed, built and printed,
 *      so that no input can exhaust memory or time.
 * Every failing call must leave a message. Deterministic (a context per input, values from
 * positions) and leak-free (the context is destroyed, and LeakSanitizer is on).
 *
 * Build and run: tools/fuzz.sh [SECONDS] fuzz_fc (docs/ARCHITECTURE.md, "Fuzzing").
 * Without libFuzzer, ctest replays the seeds (fuzz_seeds_fuzz_fc, fuzz/replay.c).
 */
#include <fusec.h>

#include "graph.h"

#include "fuzz_util.h"

#include <math.h>
#include <stdbool.h>

#define FZ_MAX_NODE 4096          /* elements of any one node */
#define FZ_MAX_WORK (1 << 18)     /* element operations of the whole graph */
#define FZ_MAX_OUT 64

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char cache_dir[4200];

/* How far inputs got, printed at exit (tools/fuzz.sh shows the line). */
static struct {
    unsigned long long inputs, parsed, built, round_trips, evaluated, eval_ok;
} stats;

static void print_stats(void) {
    fprintf(stderr, "fuzz_fc: stats: %llu inputs, %llu parsed, %llu built, %llu round trips, "
            "%llu evaluated (%llu without error)\n", stats.inputs, stats.parsed, stats.built,
            stats.round_trips, stats.evaluated, stats.eval_ok);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    atexit(print_stats);
    /* Nothing in the environment may change what an input does. */
    unsetenv("FUSEC_TRACE");
    unsetenv("FUSEC_LOG");
    unsetenv("FUSEC_REQUIRE_CACHED");
    snprintf(cache_dir, sizeof cache_dir, "%s/cache", fz_tempdir());
    return 0;
}

/* A symbol's value from its name alone (FNV-1a): 0 to 5, mostly 1 to 5. */
static int64_t symbol_value(const char *name) {
    uint32_t h = 2166136261u;
    for (const char *s = name; *s; s++) h = (h ^ (uint8_t)*s) * 16777619u;
    return h % 11 == 0 ? 0 : 1 + h % 5;
}

/* Elements of a node's shape, capped (extents are < 2^62 but their product need not be). */
static uint64_t elements(const fc_array *a) {
    uint64_t n = 1;
    for (int d = 0; d < a->ndim; d++) {
        uint64_t e = (uint64_t)a->shape[d];
        if (e == 0) return 0;
        n = n > UINT64_MAX / 4 / e ? UINT64_MAX / 4 : n * e;
    }
    return n;
}

/* Whether the graph computing outs is small enough to evaluate: every node at most
 * FZ_MAX_NODE elements, the work of all of them at most FZ_MAX_WORK. */
static bool small_enough(fc_ctx *ctx, fc_array *const *outs, int n) {
    fc_array **order;
    size_t count;
    if (fcg_topo_order(ctx, outs, n, true, &order, &count) != FC_OK) return false;
    uint64_t work = 0;
    bool ok = true;
    for (size_t i = 0; i < count && ok; i++) {
        const fc_array *a = order[i];
        uint64_t e = elements(a), cost = e;
        for (int k = 0; k < a->nin; k++) {
            uint64_t ek = elements(a->in[k]);
            if (ek > cost) cost = ek; /* reductions, broadcasts: the bigger side */
        }
        if (a->op == FCG_OP_MATMUL && a->nin == 2 && a->in[0]->ndim > 0)
            cost = e * (uint64_t)a->in[0]->shape[a->in[0]->ndim - 1];
        if (a->op == FCG_OP_FFTN) cost = e * 160; /* Bluestein, direct */
        if (a->op == FCG_OP_CSR_MATMUL) /* its checks, then each stored value times x's row */
            cost = e + elements(a->in[0]) +
                   elements(a->in[1]) * (uint64_t)(a->ndim == 2 ? a->shape[1] + 1 : 2);
        if (a->op == FCG_OP_STENCIL2D) { /* a multiply-add per weight per output */
            uint64_t k = elements(a->in[1]);
            cost = k && e > UINT64_MAX / 4 / k ? UINT64_MAX / 4 : e * k + elements(a->in[0]);
        }
        if (fcg_op_is_linalg(a->op) && a->in[0]->ndim >= 2) {
            /* a factorisation and its solves: n^3 + n^2 k per matrix of the stack (qr's
             * m n min(m, n) + Q's m^2 k is within its input's m n times its width); the
             * host's Jacobi eigh and svd make a few sweeps of 3 n^3 complex operations each */
            uint64_t m = (uint64_t)a->in[0]->shape[a->in[0]->ndim - 1];
            cost = elements(a->in[0]) * (m + 1) + e * (m + 1);
            if (a->op == FCG_OP_LINALG_EIGH || a->op == FCG_OP_LINALG_EIGVALSH ||
                a->op == FCG_OP_LINALG_SVD || a->op == FCG_OP_LINALG_SVDVALS)
                cost *= 32;
        }
        ok = e <= FZ_MAX_NODE && cost <= FZ_MAX_WORK && (work += cost) <= FZ_MAX_WORK;
    }
    fcg_free(ctx, order, count * sizeof *order);
    return ok;
}

/* A small array of dtype and shape with values that depend only on position: made in f64,
 * i64 or c128 and cast, then evaluated so that it is a leaf holding data. */
static fc_array *data_input(fc_ctx *ctx, fc_dtype dt, fc_shape shape, int which) {
    int64_t n = 1;
    for (int d = 0; d < shape.ndim; d++) n *= shape.dim[d];
    bool cplx = dt == FC_C64 || dt == FC_C128;
    bool flt = dt == FC_F16 || dt == FC_BF16 || dt == FC_F32 || dt == FC_F64 || dt == FC_BOOL;
    size_t esize = cplx ? 16 : 8;
    unsigned char *buf = malloc((size_t)(n > 0 ? n : 1) * esize);
    if (!buf) return NULL;
    for (int64_t i = 0; i < n; i++) {
        int64_t k = i + 3 * which;
        double v = (double)(k % 7) - 3.0 + (k % 2 ? 0.25 : 0.0);
        if (k % 13 == 12) v = k % 26 == 12 ? NAN : -INFINITY;
        if (flt) memcpy(buf + 8 * i, &v, 8);
        else if (cplx) {
            double c[2] = {v, (double)(k % 5) - 2.0};
            memcpy(buf + 16 * i, c, 16);
        } else {
            int64_t iv = (k * 37) % 23 - 11;
            memcpy(buf + 8 * i, &iv, 8);
        }
    }
    fc_array *src = fc_from_host(ctx, cplx ? FC_C128 : flt ? FC_F64 : FC_I64, shape, buf);
    free(buf);
    fc_array *a = fc_cast(src, dt);
    if (fc_eval(ctx, &a, 1) != FC_OK) fz_fail("making an input of %s: %s", fc_dtype_name(dt),
                                              fc_errmsg(ctx));
    return a;
}

static void check_message(fc_ctx *ctx, fc_status st, const char *what) {
    if (st != FC_OK && !fc_errmsg(ctx)[0]) fz_fail("%s failed (%s) without a message", what,
                                                   fc_strerror(st));
}

static bool hash_eq(fc_hash a, fc_hash b) { return a.lo == b.lo && a.hi == b.hi; }

/* Steps 3 and 4 for a program that parsed; the scope of the caller owns every array. */
static void check_program(fc_ctx *ctx, fc_program *p, const char *src) {
    for (int i = 0; i < fc_program_num_symbols(p); i++) {
        const char *name = fc_program_symbol_name(p, i);
        if (fc_program_set_symbol(p, name, symbol_value(name)) != FC_OK)
            fz_fail("cannot bind symbol %s: %s", name, fc_errmsg(ctx));
    }
    int nout = fc_program_num_outputs(p), nin = fc_program_num_inputs(p);
    if (nout < 1 || nout > FZ_MAX_OUT) return;
    fc_array *o1[FZ_MAX_OUT], *o2[FZ_MAX_OUT], *o3[FZ_MAX_OUT];
    fc_status st = fc_program_build(p, NULL, o1);
    check_message(ctx, st, "fc_program_build");
    if (st != FC_OK) return;
    stats.built++;
    const char *names[FZ_MAX_OUT];
    for (int i = 0; i < nout; i++) {
        names[i] = fc_program_output_name(p, i);
        if (fc_array_status(o1[i]) != FC_OK) fz_fail("build succeeded with output %d poisoned", i);
    }

    /* Print, print again, reparse, rebuild, rehash, reprint. */
    fc_hash h1, h2, h3;
    if (fc_graph_hash(o1, nout, &h1) != FC_OK) fz_fail("hash: %s", fc_errmsg(ctx));
    char *t1 = NULL, *t1b = NULL, *t2 = NULL;
    st = fc_program_print(ctx, o1, nout, names, &t1);
    if (st == FC_ERR_NOMEM) return;
    if (st != FC_OK) fz_fail("a built program does not print: %s\n--- program\n%s", fc_errmsg(ctx),
                             src);
    if (fc_program_print(ctx, o1, nout, names, &t1b) != FC_OK || strcmp(t1, t1b) != 0)
        fz_fail("printing twice differs\n--- first\n%s--- second\n%s", t1, t1b ? t1b : "");
    fc_free(ctx, t1b);
    fc_program *q;
    st = fc_program_parse(ctx, t1, strlen(t1), "printed", &q);
    if (st != FC_OK)
        fz_fail("the printed text does not parse: %s\n--- program\n%s\n--- printed\n%s",
                fc_errmsg(ctx), src, t1);
    if (fc_program_num_outputs(q) != nout) fz_fail("the printed text has other outputs");
    for (int i = 0; i < nout; i++)
        if (strcmp(fc_program_output_name(q, i), names[i]) != 0)
            fz_fail("printed output %d is named %s, not %s", i, fc_program_output_name(q, i),
                    names[i]);
    st = fc_program_build(q, NULL, o2);
    if (st != FC_OK)
        fz_fail("the printed text does not build: %s\n--- program\n%s\n--- printed\n%s",
                fc_errmsg(ctx), src, t1);
    if (fc_graph_hash(o2, nout, &h2) != FC_OK) fz_fail("hash: %s", fc_errmsg(ctx));
    if (!hash_eq(h1, h2))
        fz_fail("print -> parse changed the graph's hash\n--- program\n%s\n--- printed\n%s", src,
                t1);
    if (fc_program_print(ctx, o2, nout, names, &t2) != FC_OK || strcmp(t1, t2) != 0)
        fz_fail("reprinting differs\n--- program\n%s\n--- printed\n%s--- reprinted\n%s", src, t1,
                t2 ? t2 : "");
    fc_free(ctx, t1);
    fc_free(ctx, t2);
    fc_program_destroy(q);
    stats.round_trips++;

    /* Evaluate small programs on the host, with data and without. */
    if (!small_enough(ctx, o1, nout)) return;
    /* Every input gets data, the unused ones too: they count against the budget. */
    fc_array *ins[256];
    fc_shape shapes[256];
    if (nin > 256) return;
    uint64_t input_elements = 0;
    for (int i = 0; i < nin; i++) {
        if (fc_program_input_shape(p, i, &shapes[i]) != FC_OK)
            fz_fail("input shape: %s", fc_errmsg(ctx));
        uint64_t e = 1;
        for (int d = 0; d < shapes[i].ndim; d++) {
            e = shapes[i].dim[d] > FZ_MAX_NODE ? FZ_MAX_NODE + 1 : e * (uint64_t)shapes[i].dim[d];
            if (e > FZ_MAX_NODE) e = FZ_MAX_NODE + 1; /* and no overflow */
        }
        if (e > FZ_MAX_NODE || (input_elements += e) > FZ_MAX_WORK) return;
    }
    for (int i = 0; i < nin; i++)
        ins[i] = data_input(ctx, fc_program_input_dtype(p, i), shapes[i], i);
    st = fc_program_build(p, ins, o3);
    if (st != FC_OK)
        fz_fail("builds with placeholders but not with data: %s\n--- program\n%s", fc_errmsg(ctx),
                src);
    if (fc_graph_hash(o3, nout, &h3) != FC_OK) fz_fail("hash: %s", fc_errmsg(ctx));
    if (!hash_eq(h1, h3)) fz_fail("binding data changed the graph's hash\n--- program\n%s", src);
    st = fc_eval(ctx, o3, nout);
    check_message(ctx, st, "fc_eval");
    stats.evaluated++;
    stats.eval_ok += st == FC_OK;
    for (int i = 0; st == FC_OK && i < nout; i++) {
        size_t bytes = (size_t)fc_array_size(o3[i]) * fc_dtype_size(fc_array_dtype(o3[i]));
        void *buf = malloc(bytes ? bytes : 1);
        if (!buf) break;
        if (fc_to_host(o3[i], buf, bytes) != FC_OK) fz_fail("fc_to_host: %s", fc_errmsg(ctx));
        free(buf);
    }
    if (nin > 0) {
        st = fc_eval(ctx, o1, nout);
        check_message(ctx, st, "fc_eval of placeholders");
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fc_ctx *ctx;
    fc_ctx_options o = {.backend = FC_BACKEND_HOST, .cache_dir = cache_dir};
    if (fc_ctx_create(&ctx, &o) != FC_OK) fz_fail("no host context");
    /* A NUL-terminated copy for messages; the parser gets the exact bytes. */
    char *src = malloc(size + 1);
    if (!src) fz_fail("out of memory");
    memcpy(src, data, size);
    src[size] = 0;
    fc_scope *s = fc_scope_open(ctx);
    stats.inputs++;
    fc_program *p;
    fc_status st = fc_program_parse(ctx, (const char *)data, size, "fuzz.fc", &p);
    if (st != FC_OK) {
        if (st != FC_ERR_PARSE && st != FC_ERR_NOMEM)
            fz_fail("fc_program_parse failed with %s: %s", fc_strerror(st), fc_errmsg(ctx));
        check_message(ctx, st, "fc_program_parse");
        if (p) fz_fail("a failed parse left a program");
    } else {
        stats.parsed++;
        check_program(ctx, p, src);
        fc_program_destroy(p);
    }
    fc_scope_close(s);
    fc_ctx_destroy(ctx);
    free(src);
    return 0;
}
