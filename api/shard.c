/*
 * api/shard.c - the public calls of sharded contexts (fusec.h, "Sharded contexts"): argument
 * checks, then the sharded backend (backend/mesh.c), which does the work.
 */
#include "api.h"

int fc_ctx_shards(const fc_ctx *ctx) { return ctx ? fcm_shards(ctx) : 0; }

fc_ctx *fc_ctx_shard(const fc_ctx *ctx, int i) { return fcm_shard_ctx(ctx, i); }

/* The prologue of the calls on one array: NULL stays NULL, a poisoned array is returned (a new
 * reference), an array of an ordinary context gets FC_ERR_CONTEXT. NULL: go on. */
static fc_array *early(fc_array *a, const char *what) {
    if (a->status != FC_OK) {
        fcg_retain(a);
        return fcg_ret(a->ctx, a);
    }
    if (fcm_shards(a->ctx) == 1)
        return fcg_poison(a->ctx, FC_ERR_CONTEXT, "%s: the array's context is not sharded", what);
    return NULL;
}

fc_array *fc_reshard(fc_array *a, int axis) {
    if (!a) return NULL;
    fc_array *e = early(a, "reshard");
    return e ? e : fcm_reshard(a, axis);
}

fc_status fc_sharding(fc_array *a, int *axis) {
    if (!a || !axis) return FC_ERR_NULL;
    if (fcm_shards(a->ctx) == 1) {
        *axis = FC_REPLICATED;
        return a->status == FC_OK ? fc_eval(a->ctx, &a, 1) : fcg_error(a->ctx, a->status, "%s", a->errmsg);
    }
    return fcm_sharding(a, axis);
}

fc_array *fc_from_shards(fc_ctx *ctx, fc_array *const *parts, int axis) {
    if (!ctx) return NULL;
    if (fcm_shards(ctx) == 1)
        return fcg_poison(ctx, FC_ERR_CONTEXT, "from_shards: the context is not sharded");
    if (!parts) return fcg_poison(ctx, FC_ERR_NULL, "from_shards: parts is NULL");
    return fcm_from_shards(ctx, parts, axis);
}

fc_array *fc_shard_part(fc_array *a, int i) {
    if (!a) return NULL;
    fc_array *e = early(a, "shard_part");
    return e ? e : fcm_part(a, i);
}

fc_array *fc_gather(fc_array *a, int i) {
    if (!a) return NULL;
    fc_array *e = early(a, "gather");
    return e ? e : fcm_gather(a, i);
}

fc_status fc_shard_stats_get(fc_ctx *ctx, fc_shard_stats *out, bool reset) {
    if (!ctx || !out) return FC_ERR_NULL;
    return fcm_stats(ctx, out, reset);
}
