/*
 * bench/shard.c - sharded contexts (fusec.h, "Sharded contexts") timed against one GPU:
 *
 *   W1       tanh(sin(x) + 0.1*x)                 f32 [2^28]            (--small: [2^16])
 *   W6       sqrt(sum(x*x, axis=1))               f32 [65536, 4096]     (--small: [256, 256])
 *   colmean  mean(x, axis=0)                      f32 [65536, 4096]     (all-reduce at the end)
 *   softmax0 e = exp(x - max(x, 0)); e / sum(e, 0) f32 [65536, 4096]    (all-reduces inside)
 *
 *   shard [--backend cuda|host|auto] [--shards 1,2,4] [--small] [--iters K] [--repeats R]
 *         [--warmup W] [--elements N] [--rows R --cols C] [--json FILE]
 *
 * For each shard count (1: an ordinary context on device 0; N > 1: a sharded context over
 * devices 0 .. N-1; counts above the number of devices are skipped with a note; on the host
 * backend N simulated shards) the inputs are made on the context itself (fc_random_uniform,
 * evaluated once: split along axis 0 on N > 1 shards, which is checked and printed), so no
 * upload is timed. A timed repeat evaluates the program K times back to back, each time
 * building it afresh from the same input inside a scope (open, build, fc_eval, close), as a
 * user would, then synchronises; wall clock (CLOCK_MONOTONIC) / K is the time per evaluation.
 * R repeats after W warm-up evaluations give the median (defaults K = 20, R = 7, W = 3).
 *
 * Reported per program and shard count: ms, effective GB/s (the bytes that must move: inputs
 * read once, outputs written once), the speedup over 1 shard of the same run, % of N x the
 * floor (N times the device-to-device copy bandwidth of device 0, measured in the same run),
 * the host time to build and queue one evaluation (near 1000 x ms: the host is the limit),
 * and the collectives of the timed evaluations from fc_shard_stats_get: all-reduces per
 * evaluation, bytes per collective (fc_shard_stats.bytes over all-reduces plus all-gathers;
 * none of these programs gathers), their ms per evaluation (events on shard 0's stream) and
 * whether NCCL ran them. The sharded softmax reads x three times (max, sum, result: the
 * all-reduces sit between the passes), so it cannot reach the floor of one read.
 *
 * Correctness: for every shard count, all four programs are evaluated on data made on the host
 * with a deterministic generator (x = 0.25 + 2u, u in [0, 1): no zero crossings, so relative
 * errors mean something), uploaded with fc_from_host, and compared with an ordinary host-
 * backend context's results on the same data. The check uses a smaller matrix (4099 x 512,
 * --small 301 x 67: 2, 3 and 4 shards split those rows unevenly) since the host backend is
 * too slow for 2^28 elements. Tolerance: 1e-5 relative, every element.
 * Exit status: 0 when every check passed and every measurement ran; 2 when a check failed;
 * 3 when an API call failed; 1 for bad arguments or no context.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include <fusec.h>

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK_RTOL 1e-5
#define MAX_COUNTS 16

enum { P_W1, P_W6, P_COLMEAN, P_SOFTMAX, NPROG };

static const char *const prog_name[NPROG] = {"w1_tanh_sin", "w6_row_l2norm", "colmean_axis0",
                                             "softmax_axis0"};
static const char *const prog_text[NPROG] = {"tanh(sin(x) + 0.1*x)", "sqrt(sum(x*x, axis=1))",
                                             "mean(x, axis=0)",
                                             "exp(x - max(x,0)) / sum(exp(x - max(x,0)), 0)"};

typedef struct options {
    fc_backend backend;
    int counts[MAX_COUNTS], ncounts;
    bool small;
    int iters, repeats, warmup;
    int64_t elements, rows, cols;       /* timed sizes */
    int64_t check_rows, check_cols;     /* the correctness check's matrix */
    const char *json;
} options;

typedef struct meas {
    int prog, shards;
    bool ok;
    char error[256];
    int in_axis;                     /* the timed input's layout */
    double bytes;                    /* that must move per evaluation */
    double ms, min_ms, max_ms, gbps; /* median over repeats, per evaluation */
    double issue_us;                 /* host time to build and queue one (median) */
    double speedup, floor_pct;       /* NAN: no 1-shard figure / no floor */
    double allreduces, gathers, coll_bytes, coll_ms; /* per evaluation; bytes per collective */
    int nccl;
} meas;

typedef struct check {
    int prog, shards;
    bool ran, pass;
    int in_axis, out_axis;
    double max_rel;
    char error[256];
} check;

/* ---- the programs --------------------------------------------------------------------------- */

static fc_array *build(fc_ctx *ctx, int p, fc_array *x) {
    switch (p) {
    case P_W1: return fc_tanh(fc_add(fc_sin(x), fc_mul(x, fc_f64(ctx, 0.1))));
    case P_W6: return fc_sqrt(fc_sum(fc_mul(x, x), FC_AXES(1), false));
    case P_COLMEAN: return fc_mean(x, FC_AXES(0), false);
    default: {
        fc_array *e = fc_exp(fc_sub(x, fc_max(x, FC_AXES(0), true)));
        return fc_div(e, fc_sum(e, FC_AXES(0), true));
    }
    }
}

/* Elements of program p's result for input [rows, cols] (W1: the flat [rows * cols]). */
static int64_t out_count(int p, int64_t rows, int64_t cols) {
    return p == P_W6 ? rows : p == P_COLMEAN ? cols : rows * cols;
}

/* Bytes that must move: the input read once, the output written once (f32). */
static double prog_bytes(int p, const options *o) {
    double mn = (double)o->rows * (double)o->cols;
    switch (p) {
    case P_W1: return 8.0 * (double)o->elements;
    case P_W6: return 4.0 * mn + 4.0 * (double)o->rows;
    case P_COLMEAN: return 4.0 * mn + 4.0 * (double)o->cols;
    default: return 8.0 * mn;
    }
}

/* ---- helpers -------------------------------------------------------------------------------- */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static const char *layout_str(int axis, char *buf, size_t size) {
    if (axis == FC_REPLICATED) snprintf(buf, size, "replicated");
    else snprintf(buf, size, "split(%d)", axis);
    return buf;
}

static void set_error(char *dst, size_t size, const char *what, fc_ctx *ctx, fc_status st) {
    snprintf(dst, size, "%s: %s: %s", what, fc_strerror(st), ctx ? fc_errmsg(ctx) : "");
    if (ctx) fc_clear_error(ctx);
}

/* Deterministic data in [0.25, 2.25): a hash of the index, the same on every run. */
static void make_data(float *x, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint64_t h = (uint64_t)i * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
        h ^= h >> 29;
        h *= 0xBF58476D1CE4E5B9ull;
        h ^= h >> 32;
        x[i] = 0.25f + 2.0f * (float)((double)(h >> 40) / 16777216.0);
    }
}

/* ---- timing --------------------------------------------------------------------------------- */

/* One evaluation as a user writes it: a fresh expression from x in a scope of its own. */
static fc_status one_eval(fc_ctx *ctx, int p, fc_array *x) {
    fc_scope *s = fc_scope_open(ctx);
    if (!s) return FC_ERR_NOMEM;
    fc_array *y = build(ctx, p, x);
    fc_status st = fc_eval(ctx, &y, 1);
    fc_scope_close(s);
    return st;
}

static void time_prog(fc_ctx *ctx, int p, fc_array *x, int in_axis, const options *o,
                      double copy_gbps, meas *m) {
    int n = fc_ctx_shards(ctx);
    memset(m, 0, sizeof *m);
    m->prog = p;
    m->shards = n;
    m->in_axis = in_axis;
    m->bytes = prog_bytes(p, o);
    m->ms = m->min_ms = m->max_ms = m->gbps = m->speedup = m->floor_pct = NAN;
    double *t = calloc(2 * (size_t)o->repeats, sizeof *t), *issue = t + o->repeats;
    fc_status st = t ? FC_OK : FC_ERR_NOMEM;
    for (int w = 0; w < o->warmup && st == FC_OK; w++) st = one_eval(ctx, p, x);
    if (st == FC_OK) st = fc_ctx_synchronize(ctx);
    fc_shard_stats s, sum;
    memset(&sum, 0, sizeof sum);
    if (st == FC_OK) st = fc_shard_stats_get(ctx, &s, true); /* forget the warm-up's */
    for (int r = 0; r < o->repeats && st == FC_OK; r++) {
        double t0 = now_s();
        for (int k = 0; k < o->iters && st == FC_OK; k++) st = one_eval(ctx, p, x);
        issue[r] = (now_s() - t0) * 1e6 / o->iters;
        if (st == FC_OK) st = fc_ctx_synchronize(ctx);
        t[r] = (now_s() - t0) * 1e3 / o->iters;
        /* Read (and reset) the collectives' figures after each repeat, outside the timed
         * window: reading synchronises their events. */
        if (st == FC_OK) st = fc_shard_stats_get(ctx, &s, true);
        if (st == FC_OK) {
            sum.allreduces += s.allreduces;
            sum.gathers += s.gathers;
            sum.bytes += s.bytes;
            sum.ms += s.ms;
            sum.nccl = s.nccl;
        }
    }
    if (st != FC_OK) {
        set_error(m->error, sizeof m->error, "timing", ctx, st);
        free(t);
        return;
    }
    qsort(t, (size_t)o->repeats, sizeof *t, cmp_double);
    qsort(issue, (size_t)o->repeats, sizeof *issue, cmp_double);
    int R = o->repeats;
    m->issue_us = R % 2 ? issue[R / 2] : 0.5 * (issue[R / 2 - 1] + issue[R / 2]);
    m->ms = R % 2 ? t[R / 2] : 0.5 * (t[R / 2 - 1] + t[R / 2]);
    m->min_ms = t[0];
    m->max_ms = t[R - 1];
    m->gbps = m->bytes / (m->ms * 1e6);
    if (copy_gbps > 0) m->floor_pct = 100.0 * (m->bytes / (n * copy_gbps * 1e6)) / m->ms;
    double evals = (double)o->iters * o->repeats;
    uint64_t colls = sum.allreduces + sum.gathers;
    m->allreduces = (double)sum.allreduces / evals;
    m->gathers = (double)sum.gathers / evals;
    m->coll_bytes = colls ? (double)sum.bytes / (double)colls : 0;
    m->coll_ms = sum.ms / evals;
    m->nccl = sum.nccl;
    m->ok = true;
    free(t);
}

/* Makes the timed input on the context (random, evaluated once) and says its layout.
 * *axis_ok: split along axis 0 on a sharded context (replicated on an ordinary one). */
static fc_array *make_input(fc_ctx *ctx, fc_shape shape, uint64_t seed, int *axis, bool *axis_ok,
                            char *err, size_t errsize) {
    fc_array *x = fc_random_uniform(ctx, FC_F32, shape, seed); /* no scope: ours to release */
    fc_status st = fc_eval(ctx, &x, 1);
    if (st == FC_OK) st = fc_sharding(x, axis);
    if (st == FC_OK) st = fc_ctx_synchronize(ctx);
    if (st != FC_OK) {
        set_error(err, errsize, "input", ctx, st);
        fc_release(x);
        return NULL;
    }
    *axis_ok = fc_ctx_shards(ctx) > 1 ? *axis == 0 : *axis == FC_REPLICATED;
    return x;
}

/* ---- correctness ---------------------------------------------------------------------------- */

/* Program p on data (check size) in ctx; its result into out (out_count elements). */
static fc_status run_on(fc_ctx *ctx, int p, const float *data, const options *o, float *out,
                        int *in_axis, int *out_axis) {
    int64_t R = o->check_rows, C = o->check_cols;
    fc_scope *s = fc_scope_open(ctx);
    if (!s) return FC_ERR_NOMEM;
    fc_shape shape = p == P_W1 ? FC_SHAPE(R * C) : FC_SHAPE(R, C);
    fc_array *x = fc_from_host(ctx, FC_F32, shape, data);
    fc_status st = fc_eval(ctx, &x, 1); /* sharded: split, as a user's data would be */
    if (st == FC_OK) st = fc_sharding(x, in_axis);
    fc_array *y = build(ctx, p, x);
    size_t bytes = (size_t)out_count(p, R, C) * sizeof(float);
    if (st == FC_OK) st = fc_to_host(y, out, bytes);
    if (st == FC_OK) st = fc_sharding(y, out_axis);
    fc_scope_close(s);
    return st;
}

static void check_prog(fc_ctx *ctx, int p, const float *data, const float *want, const options *o,
                       check *c) {
    memset(c, 0, sizeof *c);
    c->prog = p;
    c->shards = fc_ctx_shards(ctx);
    c->max_rel = NAN;
    int64_t n = out_count(p, o->check_rows, o->check_cols);
    float *got = malloc((size_t)n * sizeof *got);
    fc_status st = got ? run_on(ctx, p, data, o, got, &c->in_axis, &c->out_axis) : FC_ERR_NOMEM;
    c->ran = true;
    if (st != FC_OK) {
        set_error(c->error, sizeof c->error, "check", ctx, st);
        free(got);
        return;
    }
    double worst = 0;
    for (int64_t i = 0; i < n; i++) {
        double w = want[i], err = fabs((double)got[i] - w);
        double rel = w != 0 ? err / fabs(w) : err;
        if (!(rel <= worst)) worst = rel; /* NaN sticks */
        if (isnan(worst)) break;
    }
    c->max_rel = worst;
    bool layout_ok = c->shards > 1 ? c->in_axis == 0 : c->in_axis == FC_REPLICATED;
    c->pass = worst <= CHECK_RTOL && layout_ok;
    if (!layout_ok)
        snprintf(c->error, sizeof c->error, "the uploaded input is not split along axis 0");
    free(got);
}

/* ---- output ----------------------------------------------------------------------------------- */

static void json_num(FILE *f, const char *key, double v, bool comma) {
    if (isnan(v) || isinf(v)) fprintf(f, "\"%s\": null", key);
    else fprintf(f, "\"%s\": %.6g", key, v);
    if (comma) fputs(", ", f);
}

static void json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s < 0x20) fprintf(f, "\\u%04x", *s);
        else fputc(*s, f);
    }
    fputc('"', f);
}

static bool write_json(const char *path, const options *o, const char *backend, int ndev,
                       const char *device, double copy_gbps, const meas *ms, int nm,
                       const check *cs, int nc, const int *skipped, int nskipped, bool ok) {
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        return false;
    }
    fprintf(f, "{\"tool\": \"bench/shard\", \"backend\": \"%s\", \"devices\": %d, \"device\": ",
            backend, ndev);
    json_str(f, device);
    fputs(", ", f);
    json_num(f, "copy_gbps", copy_gbps > 0 ? copy_gbps : NAN, true);
    fprintf(f, "\"iters\": %d, \"repeats\": %d, \"warmup\": %d, \"small\": %s, "
               "\"elements\": %lld, \"rows\": %lld, \"cols\": %lld, \"check_rows\": %lld, "
               "\"check_cols\": %lld, \"check_rtol\": %g, \"skipped_shards\": [",
            o->iters, o->repeats, o->warmup, o->small ? "true" : "false",
            (long long)o->elements, (long long)o->rows, (long long)o->cols,
            (long long)o->check_rows, (long long)o->check_cols, CHECK_RTOL);
    for (int i = 0; i < nskipped; i++) fprintf(f, "%s%d", i ? ", " : "", skipped[i]);
    fputs("],\n \"results\": [", f);
    for (int i = 0; i < nm; i++) {
        const meas *m = &ms[i];
        fprintf(f, "%s\n  {\"program\": \"%s\", \"shards\": %d, ", i ? "," : "",
                prog_name[m->prog], m->shards);
        if (!m->ok) {
            fputs("\"error\": ", f);
            json_str(f, m->error);
            fputc('}', f);
            continue;
        }
        fprintf(f, "\"input_axis\": %d, ", m->in_axis);
        fprintf(f, "\"bytes\": %.0f, ", m->bytes);
        json_num(f, "ms", m->ms, true);
        json_num(f, "min_ms", m->min_ms, true);
        json_num(f, "max_ms", m->max_ms, true);
        json_num(f, "gbps", m->gbps, true);
        json_num(f, "issue_us", m->issue_us, true);
        json_num(f, "speedup", m->speedup, true);
        json_num(f, "floor_pct", m->floor_pct, true);
        json_num(f, "allreduces_per_eval", m->allreduces, true);
        json_num(f, "gathers_per_eval", m->gathers, true);
        json_num(f, "bytes_per_collective", m->coll_bytes, true);
        json_num(f, "collective_ms_per_eval", m->coll_ms, true);
        fprintf(f, "\"nccl\": %s}", m->nccl ? "true" : "false");
    }
    fputs("\n ],\n \"checks\": [", f);
    for (int i = 0; i < nc; i++) {
        const check *c = &cs[i];
        fprintf(f, "%s\n  {\"program\": \"%s\", \"shards\": %d, \"pass\": %s, ", i ? "," : "",
                prog_name[c->prog], c->shards, c->pass ? "true" : "false");
        fprintf(f, "\"input_axis\": %d, \"output_axis\": %d, ", c->in_axis, c->out_axis);
        json_num(f, "max_rel_err", c->max_rel, c->error[0] != 0);
        if (c->error[0]) {
            fputs("\"error\": ", f);
            json_str(f, c->error);
        }
        fputc('}', f);
    }
    fprintf(f, "\n ],\n \"ok\": %s}\n", ok ? "true" : "false");
    return fclose(f) == 0;
}

/* ---- arguments ---------------------------------------------------------------------------------- */

static void usage(FILE *to) {
    fputs("usage: shard [--backend cuda|host|auto] [--shards 1,2,4] [--small] [--iters K]\n"
          "             [--repeats R] [--warmup W] [--elements N] [--rows R --cols C]\n"
          "             [--json FILE]\n"
          "Times W1, W6, a column mean and a softmax over the split axis on 1 GPU and on\n"
          "sharded contexts of N GPUs (host backend: N simulated shards), checks each\n"
          "against the host backend, and reports ms, GB/s, speedup, % of N x the copy floor\n"
          "and the all-reduces. Defaults: --shards 1,2,4 --iters 20 --repeats 7 --warmup 3;\n"
          "W1 over 2^28 f32, the matrices 65536 x 4096 (--small: 2^16, 256 x 256).\n",
          to);
}

static bool parse_counts(const char *s, options *o) {
    o->ncounts = 0;
    while (*s) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < 1 || v > 64 || o->ncounts == MAX_COUNTS) return false;
        bool dup = false;
        for (int i = 0; i < o->ncounts; i++) dup |= o->counts[i] == (int)v;
        if (!dup) o->counts[o->ncounts++] = (int)v;
        s = end;
        if (*s == ',') s++;
        else if (*s) return false;
    }
    return o->ncounts > 0;
}

static int parse_args(int argc, char **argv, options *o) {
    memset(o, 0, sizeof *o);
    o->backend = FC_BACKEND_AUTO;
    o->counts[0] = 1, o->counts[1] = 2, o->counts[2] = 4, o->ncounts = 3;
    o->iters = 20, o->repeats = 7, o->warmup = 3;
    int64_t elements = 0, rows = 0, cols = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--small")) {
            o->small = true;
        } else if (!v) {
            usage(stderr);
            return 1;
        } else if (!strcmp(a, "--backend")) {
            if (!strcmp(v, "cuda")) o->backend = FC_BACKEND_CUDA;
            else if (!strcmp(v, "host")) o->backend = FC_BACKEND_HOST;
            else if (!strcmp(v, "auto")) o->backend = FC_BACKEND_AUTO;
            else {
                usage(stderr);
                return 1;
            }
            i++;
        } else if (!strcmp(a, "--shards")) {
            if (!parse_counts(v, o)) {
                fprintf(stderr, "shard: --shards wants a list such as 1,2,4 (1 to 64)\n");
                return 1;
            }
            i++;
        } else if (!strcmp(a, "--iters")) {
            o->iters = atoi(v), i++;
        } else if (!strcmp(a, "--repeats")) {
            o->repeats = atoi(v), i++;
        } else if (!strcmp(a, "--warmup")) {
            o->warmup = atoi(v), i++;
        } else if (!strcmp(a, "--elements")) {
            elements = strtoll(v, NULL, 10), i++;
        } else if (!strcmp(a, "--rows")) {
            rows = strtoll(v, NULL, 10), i++;
        } else if (!strcmp(a, "--cols")) {
            cols = strtoll(v, NULL, 10), i++;
        } else if (!strcmp(a, "--json")) {
            o->json = v, i++;
        } else {
            usage(stderr);
            return 1;
        }
    }
    o->elements = elements > 0 ? elements : o->small ? (int64_t)1 << 16 : (int64_t)1 << 28;
    o->rows = rows > 0 ? rows : o->small ? 256 : 65536;
    o->cols = cols > 0 ? cols : o->small ? 256 : 4096;
    o->check_rows = o->small ? 301 : 4099;
    o->check_cols = o->small ? 67 : 512;
    if (o->iters < 1 || o->repeats < 1 || o->warmup < 0) {
        fprintf(stderr, "shard: need --iters >= 1, --repeats >= 1, --warmup >= 0\n");
        return 1;
    }
    return -1; /* go on */
}

/* ---- main --------------------------------------------------------------------------------------- */

int main(int argc, char **argv) {
    double start = now_s();
    options o;
    int rc = parse_args(argc, argv, &o);
    if (rc >= 0) return rc;

    int ndev = 0;
    if (o.backend != FC_BACKEND_HOST) fc_device_count(&ndev);
    if (o.backend == FC_BACKEND_CUDA && ndev == 0) {
        fprintf(stderr, "shard: --backend cuda, but there is no CUDA device\n");
        return 1;
    }
    bool gpu = ndev > 0 && o.backend != FC_BACKEND_HOST;
    fc_backend backend = gpu ? FC_BACKEND_CUDA : FC_BACKEND_HOST;
    char device[160] = "no GPU: simulated shards";
    fc_device_info info;
    if (gpu && fc_device_get_info(0, &info) == FC_OK)
        snprintf(device, sizeof device, "%s", info.name);

    /* The reference: an ordinary host-backend context, on data made here. */
    size_t check_n = (size_t)(o.check_rows * o.check_cols);
    float *data = malloc(check_n * sizeof *data);
    float *want[NPROG] = {0};
    bool have_memory = data != NULL;
    for (int p = 0; p < NPROG; p++) {
        want[p] = malloc((size_t)out_count(p, o.check_rows, o.check_cols) * sizeof(float));
        have_memory &= want[p] != NULL;
    }
    if (!have_memory) {
        fprintf(stderr, "shard: out of memory\n");
        return 1;
    }
    make_data(data, check_n);
    fc_ctx *host;
    fc_ctx_options ho;
    memset(&ho, 0, sizeof ho);
    ho.backend = FC_BACKEND_HOST;
    if (fc_ctx_create(&host, &ho) != FC_OK) {
        fprintf(stderr, "shard: no host-backend context\n");
        return 1;
    }
    for (int p = 0; p < NPROG; p++) {
        int ia, oa;
        fc_status st = run_on(host, p, data, &o, want[p], &ia, &oa);
        if (st != FC_OK) {
            fprintf(stderr, "shard: the host reference of %s failed: %s: %s\n", prog_name[p],
                    fc_strerror(st), fc_errmsg(host));
            return 3;
        }
    }
    fc_ctx_destroy(host);

    /* The copy floor of device 0, once. */
    double copy_gbps = 0;
    if (gpu) {
        fc_ctx *c0;
        fc_ctx_options co;
        memset(&co, 0, sizeof co);
        co.backend = FC_BACKEND_CUDA;
        if (fc_ctx_create(&c0, &co) == FC_OK) {
            if (fc_device_copy_bandwidth(c0, (size_t)512 << 20, o.repeats < 5 ? 5 : o.repeats,
                                         &copy_gbps) != FC_OK) {
                fprintf(stderr, "shard: copy bandwidth: %s\n", fc_errmsg(c0));
                copy_gbps = 0;
            }
            fc_ctx_destroy(c0);
        }
    }

    printf("shard: %s backend, %d device%s (%s); K=%d evaluations x R=%d repeats after %d "
           "warm-up, median\n",
           gpu ? "cuda" : "host", ndev, ndev == 1 ? "" : "s", device, o.iters, o.repeats,
           o.warmup);
    printf("  W1 over f32[%lld]; W6, colmean, softmax over f32[%lld, %lld]; checks on [%lld, "
           "%lld] against the host backend (rtol %g)\n",
           (long long)o.elements, (long long)o.rows, (long long)o.cols, (long long)o.check_rows,
           (long long)o.check_cols, CHECK_RTOL);
    if (copy_gbps > 0)
        printf("  device-to-device copy on device 0: %.0f GB/s (the floor of N shards: N x that)\n",
               copy_gbps);
    else
        printf("  %s\n", gpu ? "no copy bandwidth, so no floor" : "no copy floor on the host backend");
    fflush(stdout);

    meas ms[NPROG * MAX_COUNTS];
    check cs[NPROG * MAX_COUNTS];
    int nm = 0, nc = 0, skipped[MAX_COUNTS], nskipped = 0;
    bool api_failed = false, checks_failed = false;
    for (int ci = 0; ci < o.ncounts; ci++) {
        int n = o.counts[ci];
        if (gpu && n > ndev) {
            printf("  %d shards: skipped, this host has %d device%s\n", n, ndev,
                   ndev == 1 ? "" : "s");
            skipped[nskipped++] = n;
            continue;
        }
        fc_ctx_options co;
        memset(&co, 0, sizeof co);
        co.backend = backend;
        co.shards = n > 1 ? n : 0; /* devices NULL: 0 .. n-1 */
        fc_ctx *ctx;
        double t0 = now_s();
        if (fc_ctx_create(&ctx, &co) != FC_OK) {
            printf("  %d shards: no context (see stderr)\n", n);
            api_failed = true;
            continue;
        }
        if (n == 1)
            printf("\n1 shard: an ordinary %s context%s", gpu ? "CUDA" : "host",
                   gpu ? " on device 0" : "");
        else if (gpu)
            printf("\n%d shards: a sharded context over devices 0..%d", n, n - 1);
        else
            printf("\n%d shards: a sharded context of %d simulated host shards", n, n);
        printf(" (made in %.2f s)", now_s() - t0);
        fc_shard_stats s0;
        if (n > 1 && fc_shard_stats_get(ctx, &s0, false) == FC_OK)
            printf("; collectives %s", s0.nccl   ? "on NCCL"
                                       : gpu ? "through host memory (NCCL not loaded: "
                                               "libnccl.so.2 on the library path, or "
                                               "FUSEC_NCCL_LIBRARY, loads it)"
                                             : "through host memory");
        printf("\n");

        /* Correctness first, on the check's matrix (its own shapes: it warms nothing the
         * timed loops use, and their warm-up evaluations absorb their own compiles). */
        for (int p = 0; p < NPROG; p++) {
            check *c = &cs[nc++];
            check_prog(ctx, p, data, want[p], &o, c);
            char a[24], b[24];
            if (c->error[0] && isnan(c->max_rel)) {
                printf("  check %-14s FAILED: %s\n", prog_name[p], c->error);
                api_failed = true;
            } else {
                printf("  check %-14s input %-10s result %-10s max rel err %.3g  %s%s%s\n",
                       prog_name[p], layout_str(c->in_axis, a, sizeof a),
                       layout_str(c->out_axis, b, sizeof b), c->max_rel,
                       c->pass ? "ok" : "FAILED", c->error[0] ? ": " : "", c->error);
            }
            checks_failed |= !c->pass;
        }

        /* Timed: W1 over a vector, then the three matrix programs over one matrix. */
        for (int which = 0; which < 2; which++) {
            int axis = FC_REPLICATED;
            bool axis_ok = false;
            char err[256] = "";
            fc_shape shape = which == 0 ? FC_SHAPE(o.elements) : FC_SHAPE(o.rows, o.cols);
            fc_array *x = make_input(ctx, shape, 42 + (uint64_t)which, &axis, &axis_ok, err,
                                     sizeof err);
            char a[24], dims[64];
            if (which == 0) snprintf(dims, sizeof dims, "%lld", (long long)shape.dim[0]);
            else
                snprintf(dims, sizeof dims, "%lld, %lld", (long long)shape.dim[0],
                         (long long)shape.dim[1]);
            if (x)
                printf("  input f32[%s] made on the context: %s%s\n", dims,
                       layout_str(axis, a, sizeof a), axis_ok ? "" : "  (NOT split along 0)");
            else
                printf("  input: %s\n", err);
            if (!axis_ok) checks_failed = true;
            for (int p = which ? P_W6 : P_W1; p <= (which ? P_SOFTMAX : P_W1); p++) {
                meas *m = &ms[nm++];
                if (x) time_prog(ctx, p, x, axis, &o, copy_gbps, m);
                else {
                    memset(m, 0, sizeof *m);
                    m->prog = p, m->shards = n;
                    snprintf(m->error, sizeof m->error, "%s", err);
                }
                if (!m->ok) {
                    printf("  %-14s FAILED: %s\n", prog_name[p], m->error);
                    api_failed = true;
                } else {
                    printf("  %-14s %9.4f ms %8.1f GB/s", prog_name[p], m->ms, m->gbps);
                    if (n > 1)
                        printf("  %.2f all-reduces/eval, %.3f ms of collectives/eval (%s)",
                               m->allreduces, m->coll_ms, m->nccl ? "NCCL" : "host memory");
                    printf("\n");
                }
                fflush(stdout);
            }
            fc_release(x);
        }
        fc_ctx_destroy(ctx);
    }

    /* Speedups against the 1-shard figures of this run. */
    for (int i = 0; i < nm; i++)
        for (int j = 0; j < nm; j++)
            if (ms[i].ok && ms[j].ok && ms[j].shards == 1 && ms[j].prog == ms[i].prog)
                ms[i].speedup = ms[j].ms / ms[i].ms;

    printf("\n%-14s %6s %10s %9s %8s %9s %9s %8s %10s %10s %5s\n", "program", "shards", "ms",
           "GB/s", "speedup", "%Nxfloor", "issue us", "AR/eval", "B/collect", "coll ms", "comm");
    for (int p = 0; p < NPROG; p++)
        for (int i = 0; i < nm; i++) {
            const meas *m = &ms[i];
            if (m->prog != p) continue;
            if (!m->ok) {
                printf("%-14s %6d  failed\n", prog_name[p], m->shards);
                continue;
            }
            printf("%-14s %6d %10.4f %9.1f", prog_name[p], m->shards, m->ms, m->gbps);
            if (isnan(m->speedup)) printf(" %8s", "-");
            else printf(" %7.2fx", m->speedup);
            if (isnan(m->floor_pct)) printf(" %9s", "-");
            else printf(" %8.1f%%", m->floor_pct);
            printf(" %9.1f", m->issue_us);
            if (m->shards > 1)
                printf(" %8.2f %10.0f %10.4f %5s", m->allreduces, m->coll_bytes, m->coll_ms,
                       m->nccl ? "nccl" : "host");
            else
                printf(" %8s %10s %10s %5s", "-", "-", "-", "-");
            if (m->gathers > 0) printf("  (%.2f all-gathers/eval)", m->gathers);
            printf("\n");
        }
    for (int p = 0; p < NPROG; p++) printf("  %-14s = %s\n", prog_name[p], prog_text[p]);
    printf("  ms: wall clock per evaluation; issue us: host time to build and queue one (near\n"
           "  1000 x ms: host-bound); %%Nxfloor: bytes / (N x copy bandwidth) / time; AR/eval:\n"
           "  all-reduces per evaluation; B/collect: bytes per collective (fc_shard_stats.bytes);\n"
           "  coll ms: the collectives' ms per evaluation on shard 0's stream\n");

    bool ok = !api_failed && !checks_failed;
    if (o.json && !write_json(o.json, &o, gpu ? "cuda" : "host", ndev, device, copy_gbps, ms, nm,
                              cs, nc, skipped, nskipped, ok))
        api_failed = true;
    printf("\nshard: %s (%.1f s in all)\n",
           checks_failed ? "a correctness check FAILED"
           : api_failed  ? "a call FAILED"
                         : "all checks passed",
           now_s() - start);
    free(data);
    for (int p = 0; p < NPROG; p++) free(want[p]);
    return checks_failed ? 2 : api_failed ? 3 : 0;
}
