/* sharded: one context over two shards (two GPUs, or two simulated shards on the host backend
 * where there is no GPU). The data is made on the host and split by rows over the shards; a
 * softmax over the split axis and a column mean are written exactly as on one device, and
 * fusec finishes each reduction over rows with an all-reduce between the shards. The results
 * are compared with an ordinary context's. */
#include "check.h"

#include <fusec.h>

#include <math.h>
#include <stdio.h>

enum { ROWS = 1001, COLS = 96 }; /* 1001 rows: shard 0 holds 501, shard 1 holds 500 */

static const char *layout(int axis, char *buf) {
    if (axis == FC_REPLICATED) return "replicated";
    snprintf(buf, 24, "split along axis %d", axis);
    return buf;
}

/* Compares got with the ordinary context's ref: |got - ref| <= rtol * |ref| everywhere. */
static int compare(const char *what, const float *got, const float *ref, size_t n, double rtol) {
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        double err = fabs((double)got[i] - (double)ref[i]);
        if (!(err <= rtol * fabs((double)ref[i]))) {
            fprintf(stderr, "sharded: %s MISMATCH at element %zu: %.9g, the ordinary context "
                    "%.9g\n", what, i, (double)got[i], (double)ref[i]);
            return 1;
        }
        if (ref[i] != 0 && err / fabs((double)ref[i]) > worst) worst = err / fabs((double)ref[i]);
    }
    printf("  %s: as the ordinary context's (%zu values, largest relative difference %.3g)\n",
           what, n, worst);
    return 0;
}

/* softmax over axis 0 (down each column) and the column means of x. */
static void programs(fc_array *x, fc_array **softmax, fc_array **means) {
    fc_array *e = fc_exp(fc_sub(x, fc_max(x, FC_AXES(0), true)));
    *softmax = fc_div(e, fc_sum(e, FC_AXES(0), true));
    *means = fc_mean(x, FC_AXES(0), false);
}

int main(void) {
    static float data[ROWS][COLS], got_sm[ROWS][COLS], ref_sm[ROWS][COLS];
    static float got_mean[COLS], ref_mean[COLS];
    for (int r = 0; r < ROWS; r++)
        for (int c = 0; c < COLS; c++) data[r][c] = (float)((r * 37 + c * 11) % 101) / 25.0f;

    /* The sharded context. shards = 2 asks for two shards: with AUTO, GPUs 0 and 1 where the
     * host has two, else simulated shards on the host backend. A host with one GPU can still
     * run it by naming that device twice (its collectives then go through host memory). */
    int ndev = 0;
    fc_device_count(&ndev);
    static const int same_gpu[2] = {0, 0};
    fc_ctx_options o = {0};
    o.backend = FC_BACKEND_AUTO;
    o.shards = 2;
    o.devices = ndev == 1 ? same_gpu : NULL; /* NULL: devices 0 and 1 */
    fc_ctx *ctx, *one;
    fc_status st = fc_ctx_create(&ctx, &o);
    if (st != FC_OK) return report_error("sharded", NULL, st);
    st = fc_ctx_create(&one, NULL); /* an ordinary context: the reference */
    if (st != FC_OK) {
        fc_ctx_destroy(ctx);
        return report_error("sharded", NULL, st);
    }
    printf("sharded: %d shards on the %s backend, against an ordinary %s context\n",
           fc_ctx_shards(ctx), backend_name(ctx), backend_name(one));

    fc_scope *scope = fc_scope_open(ctx), *scope1 = fc_scope_open(one);
    int rc = 1;

    /* Host data -> the sharded context. Evaluating it gives it its layout: split by rows,
     * each shard holding its range (fc_shard_part shows one shard's part). */
    fc_array *x = fc_from_host(ctx, FC_F32, FC_SHAPE(ROWS, COLS), data);
    int axis = 0;
    char buf[24];
    if ((st = fc_sharding(x, &axis)) != FC_OK) goto fail;
    printf("  x f32[%d, %d]: %s\n", ROWS, COLS, layout(axis, buf));
    int64_t start = 0;
    for (int i = 0; i < fc_ctx_shards(ctx); i++) {
        /* No scope is open on shard i's own context, so the part is ours to release. */
        fc_array *part = fc_shard_part(x, i);
        int64_t rows = fc_array_shape(part).dim[0];
        int dev = fc_ctx_device(fc_ctx_shard(ctx, i));
        printf("    shard %d holds rows [%lld, %lld)", i, (long long)start,
               (long long)(start + rows));
        if (dev >= 0) printf(" on device %d", dev);
        printf("\n");
        start += rows;
        fc_release(part);
    }

    /* The programs, written as on one device, evaluated together. */
    fc_array *out[2];
    programs(x, &out[0], &out[1]);
    fc_shard_stats stats;
    if ((st = fc_shard_stats_get(ctx, &stats, true)) != FC_OK) goto fail; /* counts from here */
    if ((st = fc_eval(ctx, out, 2)) != FC_OK) goto fail;
    int sm_axis, mean_axis;
    if ((st = fc_sharding(out[0], &sm_axis)) != FC_OK ||
        (st = fc_sharding(out[1], &mean_axis)) != FC_OK)
        goto fail;
    printf("  softmax over axis 0: %s; column means: %s\n", layout(sm_axis, buf),
           layout(mean_axis, (char[24]){0}));
    if ((st = fc_to_host(out[0], got_sm, sizeof got_sm)) != FC_OK ||
        (st = fc_to_host(out[1], got_mean, sizeof got_mean)) != FC_OK)
        goto fail;
    if ((st = fc_shard_stats_get(ctx, &stats, false)) != FC_OK) goto fail;
    /* Each reduction over the split axis (the softmax's max and sum, the mean's sum) ends in
     * an all-reduce of the shards' partial results; nothing had to be gathered. */
    printf("  collectives: %llu all-reduces, %llu all-gathers, %llu bytes, %.3f ms, %s\n",
           (unsigned long long)stats.allreduces, (unsigned long long)stats.gathers,
           (unsigned long long)stats.bytes, stats.ms,
           stats.nccl ? "on NCCL" : "through host memory");

    /* The same programs on the ordinary context. */
    fc_array *x1 = fc_from_host(one, FC_F32, FC_SHAPE(ROWS, COLS), data), *out1[2];
    programs(x1, &out1[0], &out1[1]);
    if ((st = fc_to_host(out1[0], ref_sm, sizeof ref_sm)) != FC_OK ||
        (st = fc_to_host(out1[1], ref_mean, sizeof ref_mean)) != FC_OK) {
        rc = report_error("sharded", one, st);
        goto done;
    }
    double col0 = 0.0;
    for (int r = 0; r < ROWS; r++) col0 += got_sm[r][0];
    printf("  softmax column 0 sums to %.6f; means[0:3] = %.6f %.6f %.6f\n", col0, got_mean[0],
           got_mean[1], got_mean[2]);
    rc = compare("softmax", &got_sm[0][0], &ref_sm[0][0], (size_t)ROWS * COLS, 1e-5) |
         compare("column means", got_mean, ref_mean, COLS, 1e-5);
    goto done;
fail:
    rc = report_error("sharded", ctx, st);
done:
    fc_scope_close(scope1);
    fc_scope_close(scope);
    fc_ctx_destroy(one);
    fc_ctx_destroy(ctx);
    return rc;
}
