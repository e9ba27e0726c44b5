/*
 * compile/driver.c - the compile driver: plan -> sources -> keys -> lookups or binaries
 * (driver.h).
 */
#include "driver.h"

#include "kcompile.h"
#include "nvrtc_compile.h"
#include "plan_entry.h"
#include "raw.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Room for one failure's message: NVRTC's log with the source lines it quotes can be long. */
#define MSG_MAX 16384
/* The joined NVRTC options of a key (fcx_key_fields). */
#define OPTIONS_MAX 1024

/* The driver's own part of a held kernel (parallel to fck_result.kernels). */
typedef struct held {
    char *body;        /* batch: the source without the prelude (NUL-terminated); else NULL */
    size_t prelude_at; /* where the prelude goes back in; SIZE_MAX: the source had none */
} held;

/* A program whose plan entry is written once its kernels are built: per plan kernel its
 * fingerprint, and for a generated one the held kernel that has its binaries (in a batch,
 * maybe another program's with the same key) and its recipe. */
typedef struct pending {
    fc_hash structure;
    int nk, ngen;
    fck_plan_kernel *k;
    int *held;          /* per plan kernel: index in fck_result.kernels, or -1 */
} pending;

typedef struct impl {
    fck_result pub;    /* first, so that a result is its impl */
    fck_options opt;   /* opt.archs points at arch_ptr */
    char **arch_copy;
    const char **arch_ptr;
    char (*options)[OPTIONS_MAX]; /* per arch: the keys' options string, which their fields
                                     borrow (every kernel writes the same text again) */
    held *held;
    int kcap, hcap;    /* entries allocated in pub.kernels, in held */
    int calls;         /* fck_add calls */
    int *table;        /* batch: open addressing on targets[0].key, kernel index + 1 */
    size_t table_cap;
    pending *pend;     /* plan entries to write after fck_build */
    int npend, cappend;
} impl;

static impl *impl_of(fck_result *r) { return (impl *)r; }

fck_options fck_options_default(void) {
    fck_options o;
    memset(&o, 0, sizeof o);
    o.stage = FCK_BINARY;
    o.threads = 1;
    return o;
}

fc_status fck_result_create(fc_ctx *ctx, const fck_options *opt, fck_result **out) {
    *out = NULL;
    if (opt->stage >= FCK_KEY && opt->narch < 1)
        return fcg_error(ctx, FC_ERR_INVALID, "compile: no arch to key kernels for");
    if (opt->batch && opt->stage < FCK_KEY)
        return fcg_error(ctx, FC_ERR_INVALID, "compile: a batch tells kernels apart by key");
    for (int a = 0; a < opt->narch; a++)
        if (!opt->archs || !opt->archs[a])
            return fcg_error(ctx, FC_ERR_INVALID, "compile: arch %d is NULL", a);
    impl *r = fcg_calloc(ctx, sizeof *r);
    if (!r) return fcg_error(ctx, FC_ERR_NOMEM, "compile: out of memory");
    r->pub.ctx = ctx;
    r->pub.error_kernel = -1;
    r->opt = *opt;
    size_t na = (size_t)opt->narch;
    if (na) {
        r->arch_copy = fcg_calloc(ctx, na * sizeof *r->arch_copy);
        r->arch_ptr = fcg_calloc(ctx, na * sizeof *r->arch_ptr);
        r->options = fcg_calloc(ctx, na * sizeof *r->options);
        bool ok = r->arch_copy && r->arch_ptr && r->options;
        for (size_t a = 0; ok && a < na; a++) {
            r->arch_copy[a] = fcg_strdup(ctx, opt->archs[a]);
            ok = r->arch_copy[a] != NULL;
        }
        if (!ok) {
            r->pub.narch = opt->narch; /* sizes for the free */
            fck_result_free(&r->pub);
            return fcg_error(ctx, FC_ERR_NOMEM, "compile: out of memory");
        }
        for (size_t a = 0; a < na; a++) r->arch_ptr[a] = r->arch_copy[a];
    }
    r->opt.archs = r->arch_ptr;
    r->pub.narch = opt->narch;
    r->pub.archs = r->arch_ptr;
    *out = &r->pub;
    return FC_OK;
}

static void kernel_free(fc_ctx *ctx, int narch, fck_kernel *k, held *h) {
    if (k->targets) {
        for (int a = 0; a < narch; a++) fcg_strfree(ctx, k->targets[a].message);
        fcg_free(ctx, k->targets, (size_t)narch * sizeof *k->targets);
    }
    fcx_kernel_src_free(ctx, &k->src);
    if (h) fcg_strfree(ctx, h->body);
}

static void pending_free(fc_ctx *ctx, pending *p) {
    fck_plan_kernels_free(ctx, p->k, p->nk);
    fcg_free(ctx, p->held, (size_t)(p->nk ? p->nk : 1) * sizeof *p->held);
    memset(p, 0, sizeof *p);
}

void fck_result_free(fck_result *pub) {
    if (!pub) return;
    impl *r = impl_of(pub);
    fc_ctx *ctx = pub->ctx;
    for (int i = 0; i < r->npend; i++) pending_free(ctx, &r->pend[i]);
    fcg_free(ctx, r->pend, (size_t)r->cappend * sizeof *r->pend);
    for (int i = 0; i < pub->nkernel; i++)
        kernel_free(ctx, pub->narch, &pub->kernels[i], &r->held[i]);
    fcg_free(ctx, pub->kernels, (size_t)r->kcap * sizeof *pub->kernels);
    fcg_free(ctx, r->held, (size_t)r->hcap * sizeof *r->held);
    fcg_free(ctx, r->table, r->table_cap * sizeof *r->table);
    size_t na = (size_t)pub->narch;
    for (size_t a = 0; r->arch_copy && a < na; a++) fcg_strfree(ctx, r->arch_copy[a]);
    fcg_free(ctx, r->arch_copy, na * sizeof *r->arch_copy);
    fcg_free(ctx, r->arch_ptr, na * sizeof *r->arch_ptr);
    fcg_free(ctx, r->options, na * sizeof *r->options);
    fcp_plan_destroy(pub->plan);
    fcg_free(ctx, r, sizeof *r);
}

/* ---- fck_add ------------------------------------------------------------------------------ */

/* The kernel's key for every arch. On failure the context's message says which arch. */
static fc_status make_targets(impl *r, fck_kernel *k) {
    fc_ctx *ctx = r->pub.ctx;
    int na = r->pub.narch;
    if (!(k->targets = fcg_calloc(ctx, (size_t)na * sizeof *k->targets)))
        return fcg_error(ctx, FC_ERR_NOMEM, "compile: out of memory");
    for (int a = 0; a < na; a++) {
        fck_target *t = &k->targets[a];
        const char *arch = r->arch_ptr[a];
        char msg[512] = "";
        fc_status st = fcx_key_fields(&k->src, arch, r->options[a], OPTIONS_MAX, &t->fields, msg,
                                      sizeof msg);
        if (st == FC_OK) st = fcc_key_compute(&t->fields, &t->key);
        if (st != FC_OK)
            return fcg_error(ctx, st, "cache key for %s: %s", arch, *msg ? msg : fc_strerror(st));
    }
    return FC_OK;
}

static uint64_t key_bits(const fcc_key *k) {
    uint64_t h;
    memcpy(&h, k->bytes, sizeof h);
    return h;
}

static bool table_grow(impl *r) {
    size_t cap = r->table_cap ? r->table_cap * 2 : 256;
    int *t = fcg_calloc(r->pub.ctx, cap * sizeof *t);
    if (!t) return false;
    for (int i = 0; i < r->pub.nkernel; i++) {
        size_t h = (size_t)(key_bits(&r->pub.kernels[i].targets[0].key) % cap);
        while (t[h]) h = (h + 1) % cap;
        t[h] = i + 1;
    }
    fcg_free(r->pub.ctx, r->table, r->table_cap * sizeof *r->table);
    r->table = t;
    r->table_cap = cap;
    return true;
}

/* Batch: the table slot of key: the kernel holding it (*found) or the empty slot it would take
 * (NULL: out of memory). */
static int *table_slot(impl *r, const fcc_key *key, bool *found) {
    *found = false;
    if ((size_t)(r->pub.nkernel + 1) * 2 > r->table_cap && !table_grow(r)) return NULL;
    size_t h = (size_t)(key_bits(key) % r->table_cap);
    for (; r->table[h]; h = (h + 1) % r->table_cap)
        if (memcmp(r->pub.kernels[r->table[h] - 1].targets[0].key.bytes, key->bytes,
                   sizeof key->bytes) == 0) {
            *found = true;
            break;
        }
    return &r->table[h];
}

/* Batch: keeps the source without the prelude (the same ~50 KB in every kernel). */
static fc_status strip_prelude(fc_ctx *ctx, fck_kernel *k, held *h) {
    const char *src = k->src.src;
    const char *pre = strstr(src, fcx_prelude_source);
    size_t pl = pre ? strlen(fcx_prelude_source) : 0, len = k->src.len;
    char *body = fcg_malloc(ctx, len - pl + 1);
    if (!body) return fcg_error(ctx, FC_ERR_NOMEM, "compile: out of memory");
    h->prelude_at = pre ? (size_t)(pre - src) : SIZE_MAX;
    if (pre) {
        memcpy(body, src, h->prelude_at);
        memcpy(body + h->prelude_at, pre + pl, len - h->prelude_at - pl + 1);
    } else {
        memcpy(body, src, len + 1);
    }
    h->body = body;
    fcg_strfree(ctx, k->src.src);
    k->src.src = NULL;
    k->src.len = 0;
    return FC_OK;
}

static fc_status push_kernel(impl *r, const fck_kernel *k, const held *h) {
    fc_ctx *ctx = r->pub.ctx;
    if (r->pub.nkernel == r->kcap) {
        int nc = r->kcap ? r->kcap * 2 : 16;
        fck_kernel *g = fcg_realloc(ctx, r->pub.kernels, (size_t)r->kcap * sizeof *g,
                                    (size_t)nc * sizeof *g);
        if (!g) return fcg_error(ctx, FC_ERR_NOMEM, "compile: out of memory");
        r->pub.kernels = g;
        r->kcap = nc;
    }
    if (r->pub.nkernel == r->hcap) {
        int nc = r->hcap ? r->hcap * 2 : 16;
        held *g = fcg_realloc(ctx, r->held, (size_t)r->hcap * sizeof *g, (size_t)nc * sizeof *g);
        if (!g) return fcg_error(ctx, FC_ERR_NOMEM, "compile: out of memory");
        r->held = g;
        r->hcap = nc;
    }
    r->pub.kernels[r->pub.nkernel] = *k;
    r->held[r->pub.nkernel] = *h;
    r->pub.nkernel++;
    return FC_OK;
}

/* Records the failure of the last fck_add (the context's message is set already). */
static fc_status failed(impl *r, fc_status st, fck_stage stage, int kernel) {
    r->pub.error = st;
    r->pub.error_stage = stage;
    r->pub.error_kernel = kernel;
    return st;
}

/* A sort, a direct convolution, a cholesky or a qr, a stack of small matrices (library calls
 * of fusec's own kernels: backend/cuda_sort.c, cuda_stencil.c, cuda_lib.c's triangle copy,
 * cuda_batched.c's helpers) has no kernel in the plan, but its module is a binary like any
 * other: a batch build (`fusec warm`) compiles or finds it for each arch, so that a cache
 * warmed for a GPU holds everything such a program needs there. The runtime does not come
 * here: the backend loads each module on first use and keeps it, and a plan with a library
 * call is compiled again at every evaluation, so this would hash the module's source each
 * time. raw_module compiles one
 * source (src, owned; st the status of making it) for every arch asked. */
static fc_status raw_module(impl *r, fc_status st, char *src) {
    fck_result *pub = &r->pub;
    for (int a = 0; a < pub->narch && st == FC_OK; a++) {
        fck_raw_binary bin;
        st = fck_raw_compile(pub->ctx, src, NULL, 0, NULL, 0, r->opt.archs[a], &bin);
        if (st == FC_OK) {
            if (bin.compiled) pub->compiled++;
            else pub->cached++;
            pub->targets++;
        }
        fck_raw_binary_free(pub->ctx, &bin);
    }
    if (src) fcg_strfree(pub->ctx, src);
    return st;
}

static fc_status sort_module(impl *r, fc_dtype t) {
    char *src = NULL;
    fc_status st = fcx_sort_source(r->pub.ctx, t, &src);
    return raw_module(r, st, src);
}

/* The triangle copy kernels (codegen/tri.c) of cholesky and qr. */
static fc_status tri_module(impl *r) {
    char *src = NULL;
    fc_status st = fcx_tri_source(r->pub.ctx, &src);
    return raw_module(r, st, src);
}

/* The helper kernels (codegen/batched.c) of a stack of small matrices that the batched
 * linear algebra serves (backend/cuda_batched.c; fcx_batched_takes decides for both). */
static fc_status batched_module(impl *r) {
    char *src = NULL;
    fc_status st = fcx_batched_source(r->pub.ctx, &src);
    return raw_module(r, st, src);
}

/* The stencil kernel of a STENCIL2D node (backend/cuda_stencil.c generates the same source
 * from the same node); none for an empty kernel or output, which launch nothing. */
static fc_status stencil_module(impl *r, const fcp_kernel *k) {
    const fc_array *a = k->outs[0], *w = a->in[1];
    /* the weights read reversed from their flip's source (fcp_lib_source), as the backend
     * sees it: the kernel loads the source, not the flip */
    const fc_array *wsrc = fcp_lib_source(a, 1);
    bool loads_w = false, loads_src = false;
    for (int l = 0; l < k->nleaf; l++) {
        loads_w |= k->leaves[l] == w;
        loads_src |= wsrc && k->leaves[l] == wsrc;
    }
    bool flipped = loads_src && !loads_w;
    if (w->shape[0] == 0 || w->shape[1] == 0 || a->shape[0] == 0 || a->shape[1] == 0)
        return FC_OK;
    fcx_stencil key;
    fcx_stencil_plan(&key, (fc_dtype)a->dtype, w->shape[0], w->shape[1], a->p.a[0], a->p.a[1],
                     a->p.mode, a->in[0]->shape[0], a->in[0]->shape[1], a->shape[0],
                     a->shape[1]);
    key.flipped = flipped;
    char *src = NULL;
    fc_status st = fcx_stencil_source(r->pub.ctx, &key, "fcv_stencil", &src);
    return raw_module(r, st, src);
}

/* ---- plan entries ------------------------------------------------------------------------- */

/* Whether a decoded entry describes this plan: the same kernels, each of the same kind and
 * fingerprint, its recipe's pointers and slots within the plan kernel. The key says so
 * already; this makes a damaged or colliding entry a miss rather than a wrong launch. */
static bool entry_fits(const fcp_plan *plan, const fck_plan_kernel *k, int nk) {
    if (nk != plan->nkernel) return false;
    for (int i = 0; i < nk; i++) {
        const fcp_kernel *pk = &plan->kernels[i];
        const fck_plan_kernel *q = &k[i];
        if (q->lib != (pk->kind == FCP_KERNEL_LIB) || q->nleaf != pk->nleaf ||
            q->nnode != pk->nnode || q->nout != pk->nout)
            return false;
        if (q->lib) continue;
        const fcx_kernel_src *s = &q->recipe;
        int io = pk->nleaf + pk->nout;
        if (s->nptr != io && s->nptr != io + 1) return false;
        for (int j = 0; j < s->nint + s->nflt; j++) {
            const fcx_slot *sl = j < s->nint ? &s->islots[j] : &s->fslots[j - s->nint];
            if (sl->node >= pk->nnode + pk->nleaf) return false;
        }
    }
    return true;
}

/* Looks up and decodes the program's entry for arch a: FCK_PLAN_HIT (then *out, *nk),
 * FCK_PLAN_MISS or FCK_PLAN_STALE. */
static fck_plan_state entry_get(impl *r, fcc_cache *cache, const fc_hash *structure,
                                const fcp_plan *plan, int a, fck_plan_kernel **out, int *nk) {
    fc_ctx *ctx = r->pub.ctx;
    char options[OPTIONS_MAX], source[160], msg[256];
    fcc_key_fields f;
    fcc_key key;
    *out = NULL;
    *nk = 0;
    if (fck_plan_entry_key(structure, r->arch_ptr[a], options, sizeof options, source,
                           sizeof source, &f, &key, msg, sizeof msg) != FC_OK)
        return FCK_PLAN_MISS;
    fcc_entry e;
    bool found = false;
    if (fcc_get(cache, &key, &e, &found) != FC_OK || !found) return FCK_PLAN_MISS;
    if (!fck_plan_entry_decode(ctx, e.cubin, e.cubin_size, structure, out, nk))
        return FCK_PLAN_STALE;
    if (!entry_fits(plan, *out, *nk)) {
        fck_plan_kernels_free(ctx, *out, *nk);
        *out = NULL;
        *nk = 0;
        return FCK_PLAN_STALE;
    }
    return FCK_PLAN_HIT;
}

/* One program from its plan entries: every arch's found and fitting, every kernel's cubin
 * cached. Then the result holds the plan's kernels with their recipes and binaries, and
 * nothing was generated. Else the result is untouched and the state says why. */
static fck_plan_state serve_from_entries(impl *r, fcc_cache *cache, const fc_hash *structure,
                                         const fcp_plan *plan, int call, bool use) {
    fc_ctx *ctx = r->pub.ctx;
    int na = r->pub.narch, nk = 0;
    fck_plan_state state = FCK_PLAN_HIT;
    fck_plan_kernel **dec = fcg_calloc(ctx, (size_t)na * sizeof *dec);
    fck_kernel *ks = NULL;
    if (!dec) return FCK_PLAN_MISS;
    /* An entry found fits the plan: plan->nkernel kernels, whatever the arch. */
    for (int a = 0; a < na && state == FCK_PLAN_HIT; a++)
        state = entry_get(r, cache, structure, plan, a, &dec[a], &nk);
    nk = plan->nkernel;
    if (state == FCK_PLAN_HIT && use) {
        ks = fcg_calloc(ctx, (size_t)(nk ? nk : 1) * sizeof *ks);
        if (!ks) state = FCK_PLAN_MISS;
    }
    for (int i = 0; i < nk && ks && state == FCK_PLAN_HIT; i++) {
        fck_kernel *k = &ks[i];
        k->k = &plan->kernels[i];
        k->program = call;
        k->index = i;
        k->lib = dec[0][i].lib;
        if (k->lib) continue;
        if (!(k->targets = fcg_calloc(ctx, (size_t)na * sizeof *k->targets))) {
            state = FCK_PLAN_MISS;
            break;
        }
        for (int a = 0; a < na && state == FCK_PLAN_HIT; a++) {
            fck_target *t = &k->targets[a];
            char msg[256];
            fcx_binary bin;
            bool found = false;
            t->key = dec[a][i].key;
            if (fcx_lookup(cache, &t->key, &bin, &found, msg, sizeof msg) != FC_OK || !found) {
                state = FCK_PLAN_STALE;
            } else {
                t->state = FCK_CACHED;
                t->cubin = bin.cubin;
                t->cubin_size = bin.size;
            }
        }
        /* The recipe moves from the decoded entry to the kernel. */
        k->src = dec[0][i].recipe;
        memset(&dec[0][i].recipe, 0, sizeof dec[0][i].recipe);
    }
    fck_result *pub = &r->pub;
    int pushed = 0, first = pub->nkernel;
    for (int i = 0; i < nk && ks && state == FCK_PLAN_HIT; i++) {
        held h = {NULL, SIZE_MAX};
        if (push_kernel(r, &ks[i], &h) != FC_OK) state = FCK_PLAN_MISS;
        else pushed++;
    }
    if (!ks) {
        /* only looked up (use false), or out of memory */
    } else if (state == FCK_PLAN_HIT) {
        for (int i = 0; i < nk; i++)
            if (!ks[i].lib) pub->targets += na, pub->cached += na;
    } else {
        /* Nothing stays: the whole path runs instead. */
        for (int i = 0; i < nk; i++)
            kernel_free(ctx, na, i < pushed ? &pub->kernels[first + i] : &ks[i], NULL);
        pub->nkernel = first;
    }
    for (int a = 0; a < na; a++)
        if (dec[a]) fck_plan_kernels_free(ctx, dec[a], nk);
    fcg_free(ctx, dec, (size_t)na * sizeof *dec);
    fcg_free(ctx, ks, (size_t)(nk ? nk : 1) * sizeof *ks);
    return state;
}

/* Starts the record of a program whose entry is to be written. */
static pending *pending_add(impl *r, const fc_hash *structure, int nk) {
    fc_ctx *ctx = r->pub.ctx;
    if (r->npend == r->cappend) {
        int nc = r->cappend ? r->cappend * 2 : 8;
        pending *g = fcg_realloc(ctx, r->pend, (size_t)r->cappend * sizeof *g,
                                 (size_t)nc * sizeof *g);
        if (!g) return NULL;
        r->pend = g;
        r->cappend = nc;
    }
    pending *p = &r->pend[r->npend];
    memset(p, 0, sizeof *p);
    p->structure = *structure;
    p->k = fcg_calloc(ctx, (size_t)(nk ? nk : 1) * sizeof *p->k);
    p->held = fcg_calloc(ctx, (size_t)(nk ? nk : 1) * sizeof *p->held);
    if (!p->k || !p->held) {
        fcg_free(ctx, p->k, (size_t)(nk ? nk : 1) * sizeof *p->k);
        fcg_free(ctx, p->held, (size_t)(nk ? nk : 1) * sizeof *p->held);
        return NULL;
    }
    p->nk = nk;
    r->npend++;
    return p;
}

/* Writes the entry of each pending program for each arch whose kernels all have binaries.
 * A failure to write is no failure of the build: the next run takes the whole path again. */
static void write_entries(impl *r, fcc_cache *cache) {
    fc_ctx *ctx = r->pub.ctx;
    for (int i = 0; i < r->npend; i++) {
        pending *p = &r->pend[i];
        for (int a = 0; a < r->pub.narch && p->ngen; a++) {
            bool built = true;
            for (int j = 0; j < p->nk && built; j++) {
                if (p->k[j].lib) continue;
                const fck_target *t = p->held[j] < 0 ? NULL
                                      : &r->pub.kernels[p->held[j]].targets[a];
                built = t && (t->state == FCK_CACHED || t->state == FCK_COMPILED);
                if (built) p->k[j].key = t->key;
            }
            if (!built) continue;
            char options[OPTIONS_MAX], source[160], msg[256], summary[96];
            fcc_key_fields f;
            fcc_key key;
            void *blob = NULL;
            size_t size = 0;
            if (fck_plan_entry_key(&p->structure, r->arch_ptr[a], options, sizeof options,
                                   source, sizeof source, &f, &key, msg, sizeof msg) != FC_OK ||
                fck_plan_entry_encode(ctx, &p->structure, p->k, p->nk, &blob, &size) != FC_OK)
                continue;
            snprintf(summary, sizeof summary, "plan entry: %d kernel%s, %d library call%s",
                     p->ngen, p->ngen == 1 ? "" : "s", p->nk - p->ngen,
                     p->nk - p->ngen == 1 ? "" : "s");
            /* The same entry already stored is not written again: a warm of a trace of many
             * cached programs would otherwise make a write transaction for each. */
            fcc_entry old;
            bool same = false;
            if (fcc_get(cache, &key, &old, &same) == FC_OK && same)
                same = old.cubin_size == size && memcmp(old.cubin, blob, size) == 0;
            fc_status st = same ? FC_OK : fcc_put(cache, &f, summary, blob, size, NULL, 0);
            if (!same && (st == FC_OK || st == FC_ERR_IO)) r->pub.plan_entries_written++;
            fcg_free(ctx, blob, size);
        }
        pending_free(ctx, p);
    }
    r->npend = 0;
}

fc_status fck_add(fck_result *pub, fc_array *const *arrays, int n) {
    impl *r = impl_of(pub);
    fc_ctx *ctx = pub->ctx;
    const fck_options *o = &r->opt;
    int call = r->calls++;
    pub->error = FC_OK;
    pub->error_stage = FCK_PLAN;
    pub->error_kernel = -1;
    if (!o->batch && call > 0)
        return failed(r, fcg_error(ctx, FC_ERR_INVALID, "compile: one program per result "
                                   "unless it is a batch (fusec bug)"), FCK_PLAN, -1);
    /* The structure names the plan entry: taken before planning, as the runtime takes it. */
    fc_hash structure;
    bool entries = !o->no_plan_entry && o->stage >= FCK_LOOKUP;
    fc_status st = FC_OK;
    if (entries && o->plan_key) {
        structure = *o->plan_key;
    } else if (entries) {
        fc_array *const *order;
        size_t count;
        if ((st = fcg_plan_key(ctx, arrays, n, &structure, &order, &count)) != FC_OK)
            return failed(r, st, FCK_PLAN, -1);
    }
    fcp_plan *plan;
    st = fcp_plan_build(ctx, arrays, n, &plan);
    if (st != FC_OK) return failed(r, st, FCK_PLAN, -1);
    pub->programs++;
    if (!o->batch) pub->plan = plan;
    /* A program of library calls alone has nothing to skip: no entry, no cache opened. */
    int ngen = 0;
    for (int i = 0; i < plan->nkernel; i++) ngen += plan->kernels[i].kind != FCP_KERNEL_LIB;
    if (entries && !o->batch && ngen) {
        fcc_cache *cache = o->cache;
        if (!cache && (st = fcx_cache(ctx, &cache)) != FC_OK) return failed(r, st, FCK_PLAN, -1);
        pub->plan_entry = serve_from_entries(r, cache, &structure, plan, call,
                                             o->stage >= FCK_BINARY);
        if (pub->plan_entry == FCK_PLAN_HIT && o->stage >= FCK_BINARY) return FC_OK;
    }
    /* The entry to write once the kernels are built. */
    pending *pend = NULL;
    if (entries && o->stage >= FCK_BINARY && ngen) {
        if (!(pend = pending_add(r, &structure, plan->nkernel))) {
            if (o->batch) fcp_plan_destroy(plan);
            return failed(r, fcg_error(ctx, FC_ERR_NOMEM, "compile: out of memory"), FCK_PLAN,
                          -1);
        }
        pend->ngen = ngen;
        for (int i = 0; i < plan->nkernel; i++) {
            const fcp_kernel *pk = &plan->kernels[i];
            pend->k[i] = (fck_plan_kernel){pk->kind == FCP_KERNEL_LIB, pk->nleaf, pk->nnode,
                                           pk->nout, {{0}}, {0}};
            pend->held[i] = -1;
        }
    }
    for (int i = 0; i < plan->nkernel; i++) {
        const fcp_kernel *pk = &plan->kernels[i];
        bool lib = pk->kind == FCP_KERNEL_LIB;
        const fc_array *lo = lib ? pk->outs[0] : NULL;
        bool raw = lo && o->batch && o->stage >= FCK_BINARY;
        if (raw && (lo->op == FCG_OP_SORT || lo->op == FCG_OP_ARGSORT))
            st = sort_module(r, (fc_dtype)lo->in[0]->dtype);
        else if (raw && lo->op == FCG_OP_STENCIL2D)
            st = stencil_module(r, pk);
        else if (raw && (lo->op == FCG_OP_LINALG_CHOLESKY || lo->op == FCG_OP_LINALG_QR))
            st = tri_module(r);
        if (st == FC_OK && raw && fcg_op_is_linalg(lo->op) &&
            fcx_batched_takes(lo, fcx_batched_mode_env()))
            st = batched_module(r);
        if (st != FC_OK) {
            failed(r, st, FCK_BINARY, i);
            break;
        }
        if (lib && o->batch) continue; /* nothing to compile */
        fck_kernel k;
        memset(&k, 0, sizeof k);
        k.k = o->batch ? NULL : pk;
        k.program = call;
        k.index = i;
        k.lib = lib;
        held h = {NULL, SIZE_MAX};
        int *slot = NULL;
        fck_stage at = FCK_SOURCE; /* what failed; running out of memory counts as codegen */
        if (!lib && o->stage >= FCK_SOURCE) st = fcx_generate(ctx, pk, &k.src);
        if (st == FC_OK && !lib && o->stage >= FCK_KEY) {
            at = FCK_KEY;
            st = make_targets(r, &k);
            if (st == FC_OK) at = FCK_SOURCE;
        }
        if (st == FC_OK && pend && !lib) st = fck_recipe_copy(ctx, &k.src, &pend->k[i].recipe);
        if (st == FC_OK && o->batch) {
            bool dup;
            if (!(slot = table_slot(r, &k.targets[0].key, &dup))) {
                st = fcg_error(ctx, FC_ERR_NOMEM, "compile: out of memory");
            } else if (dup) {
                pub->duplicates++;
                if (pend) pend->held[i] = *slot - 1;
                kernel_free(ctx, pub->narch, &k, NULL);
                continue;
            } else if ((st = strip_prelude(ctx, &k, &h)) == FC_OK) {
                for (int a = 0; a < pub->narch; a++) k.targets[a].fields.source = NULL;
            }
        }
        if (st == FC_OK) st = push_kernel(r, &k, &h);
        if (st != FC_OK) {
            kernel_free(ctx, pub->narch, &k, &h);
            failed(r, st, at, i);
            break;
        }
        if (slot) *slot = pub->nkernel; /* its index + 1 */
        if (pend) pend->held[i] = pub->nkernel - 1;
        if (!lib && o->stage >= FCK_KEY) pub->targets += pub->narch;
    }
    if (o->batch) fcp_plan_destroy(plan);
    return st;
}

/* ---- fck_build ---------------------------------------------------------------------------- */

typedef struct job {
    int kernel, arch;
} job;

typedef struct pool {
    impl *r;
    fcc_cache *cache;
    job *jobs;
    int njobs;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int next;          /* jobs handed out */
    bool stop;         /* a job failed and !keep_going: hand out no more */
    fck_progress prog; /* done counts the jobs finished */
    double t0;
} pool;

/* The kernel's whole source: in a batch its body with the prelude put back. */
static char *whole_source(fc_ctx *ctx, const held *h) {
    if (!h->body) return NULL;
    size_t bl = strlen(h->body), pl = h->prelude_at == SIZE_MAX ? 0 : strlen(fcx_prelude_source);
    char *t = fcg_malloc(ctx, bl + pl + 1);
    if (!t) return NULL;
    if (h->prelude_at == SIZE_MAX) {
        memcpy(t, h->body, bl + 1);
    } else {
        memcpy(t, h->body, h->prelude_at);
        memcpy(t + h->prelude_at, fcx_prelude_source, pl);
        memcpy(t + h->prelude_at + pl, h->body + h->prelude_at, bl - h->prelude_at + 1);
    }
    return t;
}

/* Sets a target's outcome; message (may be NULL) is copied. Runs on workers: it touches only
 * the target and allocates through the context's allocator, never its message. */
static void settle(fc_ctx *ctx, fck_target *t, fck_state state, fc_status st, const char *message) {
    t->state = state;
    t->status = st;
    if (message && !(t->message = fcg_strdup(ctx, message))) {
        t->state = FCK_FAILED; /* an outcome that cannot say why is a failure */
        t->status = FC_ERR_NOMEM;
    }
}

/* The kernel's source for a miss (to explain or compile it), and its key fields naming that
 * text. A batch puts the prelude back into a copy: *whole, freed by the caller. */
static fc_status miss_source(fc_ctx *ctx, const fck_kernel *k, const fck_target *t,
                             const held *h, fcx_kernel_src *src, fcc_key_fields *f,
                             char **whole) {
    *src = k->src;
    *f = t->fields;
    *whole = NULL;
    if (!src->src) {
        if (!(*whole = whole_source(ctx, h))) return FC_ERR_NOMEM;
        src->src = *whole;
        src->len = strlen(*whole);
    }
    f->source = src->src;
    f->source_len = src->len;
    return FC_OK;
}

/* Looks one target up (FCK_LOOKUP: a miss is explained), or gets its binary (FCK_BINARY: a
 * miss is compiled). A hit needs no source. msg: msg_size bytes of scratch. */
static void run_job(pool *p, const job *jb, char *msg, size_t msg_size) {
    impl *r = p->r;
    fc_ctx *ctx = r->pub.ctx;
    fck_kernel *k = &r->pub.kernels[jb->kernel];
    fck_target *t = &k->targets[jb->arch];
    msg[0] = '\0';
    fcx_binary bin;
    bool found = false;
    fc_status st = fcx_lookup(p->cache, &t->key, &bin, &found, msg, msg_size);
    if (st != FC_OK) {
        settle(ctx, t, FCK_FAILED, st, msg);
        return;
    }
    if (found) {
        t->cubin = bin.cubin;
        t->cubin_size = bin.size;
        settle(ctx, t, FCK_CACHED, FC_OK, NULL);
        return;
    }
    fcx_kernel_src src;
    fcc_key_fields f;
    char *whole;
    if (miss_source(ctx, k, t, &r->held[jb->kernel], &src, &f, &whole) != FC_OK) {
        settle(ctx, t, FCK_FAILED, FC_ERR_NOMEM, "out of memory");
        return;
    }
    if (r->opt.stage == FCK_LOOKUP) {
        /* A miss says why: the nearest entry and the key fields that differ. */
        fcc_explanation *ex = NULL;
        if ((st = fcc_explain_miss(p->cache, &f, &ex)) != FC_OK) {
            snprintf(msg, msg_size, "kernel cache: %s", fcc_errmsg(p->cache));
            settle(ctx, t, FCK_FAILED, st, msg);
        } else {
            size_t need = fcc_explanation_format(ex, NULL, 0) + 1;
            char *why = need <= msg_size ? msg : fcg_malloc(ctx, need);
            if (why) {
                fcc_explanation_format(ex, why, need);
                settle(ctx, t, FCK_MISSED, FC_OK, why);
            } else {
                settle(ctx, t, FCK_FAILED, FC_ERR_NOMEM, "out of memory");
            }
            if (why && why != msg) fcg_free(ctx, why, need);
            fcc_explanation_free(ex);
        }
    } else if ((st = fcx_compile_missed(ctx, p->cache, &src, &f, &t->key, &bin, msg,
                                        msg_size)) != FC_OK) {
        settle(ctx, t, FCK_FAILED, st, *msg ? msg : fc_strerror(st));
    } else {
        t->cubin = bin.cubin;
        t->cubin_size = bin.size;
        t->compile_ms = bin.compile_ms;
        /* Not compiled: another process did it while this one waited for its lock. */
        settle(ctx, t, bin.compiled ? FCK_COMPILED : FCK_CACHED, FC_OK, NULL);
    }
    if (whole) fcg_strfree(ctx, whole);
}

/* Counts a finished job and reports it. Called with p->mu held. */
static void finished(pool *p, const job *jb) {
    impl *r = p->r;
    fck_kernel *k = &r->pub.kernels[jb->kernel];
    fck_state s = k->targets[jb->arch].state;
    fck_progress *g = &p->prog;
    g->done++;
    switch (s) {
    case FCK_COMPILED: g->compiled++, r->pub.compiled++; break;
    case FCK_CACHED: g->cached++, r->pub.cached++; break;
    case FCK_MISSED: g->missed++, r->pub.missed++; break;
    default:
        g->failed++, r->pub.failed++;
        if (!r->opt.keep_going) p->stop = true;
        break;
    }
    if (r->opt.progress) {
        g->elapsed_s = fcg_now_s() - p->t0;
        g->kernel = k;
        g->arch = jb->arch;
        r->opt.progress(g, r->opt.progress_user);
    }
}

static void *worker(void *arg) {
    pool *p = arg;
    fc_ctx *ctx = p->r->pub.ctx;
    char small[512];
    char *msg = fcg_malloc(ctx, MSG_MAX);
    size_t msg_size = msg ? MSG_MAX : sizeof small; /* a short message beats no build */
    if (!msg) msg = small;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        int j = !p->stop && p->next < p->njobs ? p->next++ : -1;
        pthread_mutex_unlock(&p->mu);
        if (j < 0) break;
        run_job(p, &p->jobs[j], msg, msg_size);
        pthread_mutex_lock(&p->mu);
        finished(p, &p->jobs[j]);
        pthread_cond_signal(&p->cv);
        pthread_mutex_unlock(&p->mu);
    }
    if (msg != small) fcg_free(ctx, msg, MSG_MAX);
    return NULL;
}

/* Every job handed out has finished, and no more will be. Called with p->mu held. */
static bool all_finished(const pool *p) {
    return p->prog.done == p->next && (p->stop || p->next == p->njobs);
}

/* Runs the jobs on `threads` workers while the calling thread reports progress. */
static void run_threads(pool *p, int threads) {
    pthread_t *th = fcg_calloc(p->r->pub.ctx, (size_t)threads * sizeof *th);
    int started = 0;
    for (int i = 0; th && i < threads; i++) {
        if (pthread_create(&th[i], NULL, worker, p) != 0) break;
        started++;
    }
    if (started == 0) worker(p); /* no thread could start: work here */
    pthread_mutex_lock(&p->mu);
    while (!all_finished(p)) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 100 * 1000 * 1000;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&p->cv, &p->mu, &until);
        if (p->r->opt.progress && !all_finished(p)) {
            p->prog.elapsed_s = fcg_now_s() - p->t0;
            p->prog.kernel = NULL;
            p->r->opt.progress(&p->prog, p->r->opt.progress_user);
        }
    }
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
    fcg_free(p->r->pub.ctx, th, (size_t)threads * sizeof *th);
}

fc_status fck_build(fck_result *pub) {
    impl *r = impl_of(pub);
    fc_ctx *ctx = pub->ctx;
    const fck_options *o = &r->opt;
    if (o->stage < FCK_LOOKUP) return FC_OK;
    int njobs = 0;
    for (int i = 0; i < pub->nkernel; i++)
        for (int a = 0; a < pub->narch && !pub->kernels[i].lib; a++)
            njobs += pub->kernels[i].targets[a].state == FCK_PENDING;
    pool p;
    memset(&p, 0, sizeof p);
    p.r = r;
    p.cache = o->cache;
    fc_status st;
    if (njobs == 0 && r->npend == 0) return FC_OK;
    if (!p.cache && (st = fcx_cache(ctx, &p.cache)) != FC_OK) return st;
    if (njobs == 0) {
        write_entries(r, p.cache);
        return FC_OK;
    }
    if (!(p.jobs = fcg_malloc(ctx, (size_t)njobs * sizeof *p.jobs)))
        return fcg_error(ctx, FC_ERR_NOMEM, "compile: out of memory");
    /* Arch-major: a build cut short has whole archs done. */
    for (int a = 0; a < pub->narch; a++)
        for (int i = 0; i < pub->nkernel; i++)
            if (!pub->kernels[i].lib && pub->kernels[i].targets[a].state == FCK_PENDING)
                p.jobs[p.njobs++] = (job){i, a};
    p.prog.total = njobs;
    p.t0 = fcg_now_s();
    int threads = o->threads;
    if (threads <= 0) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        threads = cpus > 0 ? (int)(cpus < 64 ? cpus : 64) : 1;
    }
    if (threads > njobs) threads = njobs;
    pthread_mutex_init(&p.mu, NULL);
    pthread_cond_init(&p.cv, NULL);
    if (threads == 1 && !o->progress) {
        worker(&p); /* the runtime's path: no thread to start, same order as the kernels */
    } else {
        run_threads(&p, threads);
    }
    pthread_mutex_destroy(&p.mu);
    pthread_cond_destroy(&p.cv);
    fcg_free(ctx, p.jobs, (size_t)njobs * sizeof *p.jobs);
    if (o->stage >= FCK_BINARY) write_entries(r, p.cache);
    /* The first failure in kernel order is the one to report, as a serial build would. */
    for (int i = 0; i < pub->nkernel; i++)
        for (int a = 0; a < pub->narch && !pub->kernels[i].lib; a++) {
            const fck_target *t = &pub->kernels[i].targets[a];
            if (t->state == FCK_FAILED)
                return fcg_error(ctx, t->status, "%s",
                                 t->message ? t->message : fc_strerror(t->status));
        }
    return FC_OK;
}

fc_status fck_compile(fc_ctx *ctx, fc_array *const *arrays, int n, const fck_options *opt,
                      fck_result **out) {
    fc_status st = fck_result_create(ctx, opt, out);
    if (st != FC_OK) return st;
    fc_status added = fck_add(*out, arrays, n);
    char saved[FCG_ERRMSG_MAX];
    if (added != FC_OK) memcpy(saved, ctx->errmsg, sizeof saved);
    /* The kernels before one that failed are built too, as a build in kernel order would have;
     * one of them failing is then the first failure. */
    if ((st = fck_build(*out)) != FC_OK) return st;
    if (added != FC_OK) memcpy(ctx->errmsg, saved, sizeof saved);
    return added;
}
