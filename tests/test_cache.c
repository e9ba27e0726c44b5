/*
 * test_cache.c - the kernel cache (cache/): keys, the in-process map, the LMDB store and its
 * failure modes.
 *
 * Every test works in its own temporary directory (never the user's cache). Payloads are
 * pseudo-random bytes from a per-key seed, so a value read back is compared with one computed
 * again independently. Corruption is made with raw LMDB writes (the store closed first: LMDB
 * forbids a second open of one environment in a process). Concurrency tests fork real
 * processes; a child reports through its exit status.
 */
#define _GNU_SOURCE /* nftw, unshare */
#include <criterion/criterion.h>
#include <dirent.h>
#include <fusec.h>

#include "../cache/cache.h"
#include "../cache/cache_int.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <lmdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

/* ---- helpers ----------------------------------------------------------------------------- */

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void rm_rf(const char *path) { nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS); }

static char tmp_root[256];

/* A fresh temporary directory for this test; removed by cleanup(). */
static const char *make_tmp(void) {
    snprintf(tmp_root, sizeof tmp_root, "/tmp/fusec_cache_test_XXXXXX");
    cr_assert_not_null(mkdtemp(tmp_root));
    return tmp_root;
}

static void cleanup(void) {
    if (tmp_root[0]) rm_rf(tmp_root);
}

static char *path_in(const char *dir, const char *name) {
    static char buf[4][512];
    static int next;
    char *p = buf[next++ & 3], parent[512];
    snprintf(parent, sizeof parent, "%s", dir); /* dir may be an earlier result */
    int n = snprintf(p, sizeof buf[0], "%s/%s", parent, name);
    cr_assert(n > 0 && (size_t)n < sizeof buf[0]);
    return p;
}

/* Deterministic bytes from a seed (xorshift64*), computed independently of the cache. */
static void fill_payload(uint32_t seed, uint8_t *buf, size_t n) {
    uint64_t x = 0x9E3779B97F4A7C15ull * (seed + 1);
    for (size_t i = 0; i < n; i++) {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        buf[i] = (uint8_t)((x * 0x2545F4914F6CDD1Dull) >> 56);
    }
}

/* Test kernel i: its key fields (pointing into the struct's own strings) and sizes. */
typedef struct kernel {
    char source[160], name[32], arch[16], options[64], summary[48];
    fcc_key_fields f;
    fcc_key key;
    size_t cubin_size, meta_size;
} kernel;

static void make_kernel(kernel *k, uint32_t i, size_t cubin_size) {
    memset(k, 0, sizeof *k);
    snprintf(k->name, sizeof k->name, "fk%u", i);
    snprintf(k->source, sizeof k->source,
             "extern \"C\" __global__ void fk%u(float *y, const float *x, long n) "
             "{ long i = threadIdx.x; if (i < n) y[i] = x[i] * %u.0f; }", i, i);
    snprintf(k->arch, sizeof k->arch, "sm_90");
    snprintf(k->options, sizeof k->options, "-default-device --std=c++17");
    snprintf(k->summary, sizeof k->summary, "elementwise: x0*c (test kernel %u)", i);
    k->f.codegen_version = 7;
    k->f.source = k->source;
    k->f.source_len = strlen(k->source);
    k->f.options = k->options;
    k->f.arch = k->arch;
    k->f.nvrtc_version = 12040;
    k->f.kernel_name = k->name;
    k->cubin_size = cubin_size;
    k->meta_size = 24 + i % 40;
    if (fcc_key_compute(&k->f, &k->key) != FC_OK) abort(); /* also used in forked children */
}

/* Puts kernel k with payloads from seed i. */
static fc_status put_kernel(fcc_cache *c, const kernel *k, uint32_t i) {
    uint8_t *cubin = malloc(k->cubin_size + 1), meta[64];
    if (!cubin) abort();
    fill_payload(i, cubin, k->cubin_size);
    fill_payload(i + 1000000u, meta, k->meta_size);
    fc_status st = fcc_put(c, &k->f, k->summary, cubin, k->cubin_size, meta, k->meta_size);
    free(cubin);
    return st;
}

/* Whether e holds exactly the payloads of kernel k / seed i. */
static bool entry_matches(const fcc_entry *e, const kernel *k, uint32_t i) {
    if (e->cubin_size != k->cubin_size || e->meta_size != k->meta_size) return false;
    if (strcmp(e->kernel_name, k->name) != 0 || strcmp(e->summary, k->summary) != 0) return false;
    if (((uintptr_t)e->cubin & 15) != 0) return false;
    uint8_t *want = malloc(k->cubin_size + 1), meta[64];
    if (!want) abort();
    fill_payload(i, want, k->cubin_size);
    fill_payload(i + 1000000u, meta, k->meta_size);
    bool ok = memcmp(want, e->cubin, k->cubin_size) == 0 &&
              memcmp(meta, e->meta, k->meta_size) == 0;
    free(want);
    return ok;
}

static fcc_cache *try_open(const char *dir, uint64_t initial, uint64_t cap, uint64_t touch) {
    fcc_options o = fcc_options_default();
    o.dir = dir;
    o.initial_map_size = initial;
    o.max_map_size = cap;
    o.touch_interval_us = touch;
    o.require_cached = 0;
    fcc_cache *c = NULL;
    return fcc_open(&o, &c) == FC_OK ? c : NULL;
}

static fcc_cache *open_cache(const char *dir, uint64_t initial, uint64_t cap, uint64_t touch) {
    fcc_cache *c = try_open(dir, initial, cap, touch);
    cr_assert_not_null(c);
    return c;
}

/* Forked children report through their exit status, never through Criterion's asserts. */
static fcc_cache *child_open(const char *dir, uint64_t initial, uint64_t cap) {
    fcc_cache *c = try_open(dir, initial, cap, 0);
    if (!c || !fcc_is_persistent(c)) _exit(20);
    return c;
}

static fcc_stats stats_of(fcc_cache *c) {
    fcc_stats s;
    cr_assert_eq(fcc_get_stats(c, &s), FC_OK, "%s", fcc_errmsg(c));
    return s;
}

static fcc_verify_result verify_of(fcc_cache *c) {
    fcc_verify_result r;
    cr_assert_eq(fcc_verify(c, false, NULL, NULL, &r), FC_OK, "%s", fcc_errmsg(c));
    return r;
}

/* Raw LMDB access to one database of the store (which must be closed). */
static MDB_env *raw_open_db(const char *dir, const char *db, MDB_txn **txn, MDB_dbi *dbi,
                            unsigned txn_flags) {
    MDB_env *env;
    cr_assert_eq(mdb_env_create(&env), 0);
    mdb_env_set_maxdbs(env, 2);
    mdb_env_set_mapsize(env, 64u << 20);
    cr_assert_eq(mdb_env_open(env, dir, 0, 0644), 0);
    cr_assert_eq(mdb_txn_begin(env, NULL, txn_flags, txn), 0);
    cr_assert_eq(mdb_dbi_open(*txn, db, 0, dbi), 0);
    return env;
}

static MDB_env *raw_open(const char *dir, MDB_txn **txn, MDB_dbi *dbi, unsigned txn_flags) {
    return raw_open_db(dir, FCC_DB_ENTRIES, txn, dbi, txn_flags);
}

static uint8_t *raw_get(const char *dir, const fcc_key *key, size_t *len) {
    MDB_txn *txn;
    MDB_dbi dbi;
    MDB_env *env = raw_open(dir, &txn, &dbi, MDB_RDONLY);
    MDB_val k = {16, (void *)key->bytes}, v;
    cr_assert_eq(mdb_get(txn, dbi, &k, &v), 0);
    uint8_t *copy = malloc(v.mv_size);
    memcpy(copy, v.mv_data, v.mv_size);
    *len = v.mv_size;
    mdb_txn_abort(txn);
    mdb_env_close(env);
    return copy;
}

static void raw_put(const char *dir, const fcc_key *key, const uint8_t *value, size_t len) {
    MDB_txn *txn;
    MDB_dbi dbi;
    MDB_env *env = raw_open(dir, &txn, &dbi, 0);
    MDB_val k = {16, (void *)key->bytes}, v = {len, (void *)value};
    cr_assert_eq(mdb_put(txn, dbi, &k, &v, 0), 0);
    cr_assert_eq(mdb_txn_commit(txn), 0);
    mdb_env_close(env);
}

TestSuite(cache, .fini = cleanup);

/* ---- keys -------------------------------------------------------------------------------- */

Test(cache, key_depends_on_every_field) {
    kernel k;
    make_kernel(&k, 3, 100);
    fcc_key base = k.key, other;
    fcc_key_fields f = k.f;
    char hex[33];
    fcc_key_to_hex(&base, hex);
    cr_assert_eq(strlen(hex), 32);
    cr_assert_eq(fcc_key_from_hex(hex, &other), FC_OK);
    cr_assert_eq(memcmp(&base, &other, 16), 0);
    cr_assert_eq(fcc_key_from_hex("0123", &other), FC_ERR_INVALID);
    cr_assert_eq(fcc_key_from_hex("zz23456789abcdef0123456789abcdef", &other), FC_ERR_INVALID);

    /* Same fields, separately built strings: same key. */
    char src2[160];
    strcpy(src2, k.source);
    f.source = src2;
    cr_assert_eq(fcc_key_compute(&f, &other), FC_OK);
    cr_assert_eq(memcmp(&base, &other, 16), 0);

    fcc_key_fields v[6];
    for (int i = 0; i < 6; i++) v[i] = k.f;
    v[0].codegen_version++;
    v[1].source_len--; /* one byte less of source */
    v[2].options = "-default-device";
    v[3].arch = "sm_80";
    v[4].nvrtc_version = 12060;
    v[5].kernel_name = "fk3b";
    for (int i = 0; i < 6; i++) {
        cr_assert_eq(fcc_key_compute(&v[i], &other), FC_OK);
        cr_assert_neq(memcmp(&base, &other, 16), 0, "field %d does not change the key", i);
    }
    /* Length prefixes: moving a byte between options and arch changes the key. */
    fcc_key_fields a = k.f, b = k.f;
    a.options = "ab";
    a.arch = "c";
    b.options = "a";
    b.arch = "bc";
    fcc_key ka, kb;
    fcc_key_compute(&a, &ka);
    fcc_key_compute(&b, &kb);
    cr_assert_neq(memcmp(&ka, &kb, 16), 0);

    fcc_key_fields bad = k.f;
    bad.arch = "";
    cr_assert_eq(fcc_key_compute(&bad, &other), FC_ERR_INVALID);
    bad = k.f;
    bad.kernel_name = NULL;
    cr_assert_eq(fcc_key_compute(&bad, &other), FC_ERR_NULL);
}

/* ---- basic round trips ------------------------------------------------------------------- */

Test(cache, put_get_round_trip_and_memory_hit) {
    const char *dir = make_tmp();
    fcc_cache *c = open_cache(dir, 0, 0, 0);
    cr_assert(fcc_is_persistent(c));
    cr_assert_null(fcc_take_warning(c));
    kernel k[5];
    for (uint32_t i = 0; i < 5; i++) {
        make_kernel(&k[i], i, 1000 + 3000 * i);
        fcc_entry e;
        bool found = true;
        cr_assert_eq(fcc_get(c, &k[i].key, &e, &found), FC_OK);
        cr_assert(!found);
        cr_assert_eq(put_kernel(c, &k[i], i), FC_OK, "%s", fcc_errmsg(c));
    }
    for (uint32_t i = 0; i < 5; i++) {
        fcc_entry e;
        bool found = false;
        cr_assert_eq(fcc_get(c, &k[i].key, &e, &found), FC_OK);
        cr_assert(found);
        cr_assert(entry_matches(&e, &k[i], i));
    }
    fcc_stats s = stats_of(c);
    cr_assert_eq(s.misses, 5);
    cr_assert_eq(s.memory_hits, 5); /* a put fills the in-process map */
    cr_assert_eq(s.disk_hits, 0);
    cr_assert_eq(s.entries, 5);
    cr_assert_eq(s.memory_entries, 5);
    cr_assert_eq(s.puts, 5);
    cr_assert(s.bytes > 1000 + 4000 + 7000 + 10000 + 13000);

    /* Overwriting a key keeps earlier pointers valid (ASan checks) and serves the new value. */
    fcc_entry before;
    bool found;
    fcc_get(c, &k[0].key, &before, &found);
    uint8_t first = ((const uint8_t *)before.cubin)[0];
    cr_assert_eq(put_kernel(c, &k[0], 0), FC_OK);
    cr_assert_eq(((const uint8_t *)before.cubin)[0], first);
    cr_assert_eq(stats_of(c).entries, 5);
    fcc_close(c);
}

Test(cache, persists_across_reopen) {
    const char *dir = make_tmp();
    kernel k[3];
    fcc_cache *c = open_cache(dir, 0, 0, 0);
    for (uint32_t i = 0; i < 3; i++) {
        make_kernel(&k[i], i, 5000 + i);
        cr_assert_eq(put_kernel(c, &k[i], i), FC_OK);
    }
    fcc_close(c);
    c = open_cache(dir, 0, 0, 0);
    for (uint32_t i = 0; i < 3; i++) {
        fcc_entry e;
        bool found = false;
        cr_assert_eq(fcc_get(c, &k[i].key, &e, &found), FC_OK);
        cr_assert(found);
        cr_assert(entry_matches(&e, &k[i], i));
    }
    fcc_stats s = stats_of(c);
    cr_assert_eq(s.disk_hits, 3);
    cr_assert_eq(s.memory_hits, 0);
    fcc_entry e;
    bool found;
    fcc_get(c, &k[1].key, &e, &found);
    cr_assert(found);
    s = stats_of(c);
    cr_assert_eq(s.memory_hits, 1); /* the second lookup stays in the process */
    cr_assert_eq(s.disk_hits, 3);
    fcc_close(c);
}

Test(cache, same_path_shares_one_store) {
    const char *dir = make_tmp();
    fcc_cache *a = open_cache(dir, 0, 0, 0);
    char alias[600];
    snprintf(alias, sizeof alias, "%s/./", dir); /* another spelling of the same directory */
    fcc_cache *b = open_cache(alias, 0, 0, 0);
    cr_assert_eq(a, b);
    kernel k;
    make_kernel(&k, 1, 300);
    cr_assert_eq(put_kernel(a, &k, 1), FC_OK);
    fcc_close(a);
    fcc_entry e;
    bool found = false;
    cr_assert_eq(fcc_get(b, &k.key, &e, &found), FC_OK); /* still open through b */
    cr_assert(found);
    cr_assert(entry_matches(&e, &k, 1));
    fcc_close(b);
}

typedef struct seen {
    int n;
    uint64_t bytes;
    char lines[4][256];
    char names[4][32];
} seen;

static int collect(const fcc_entry_info *info, void *user) {
    seen *s = user;
    if (s->n >= 4) return 1;
    cr_assert_eq(info->problem, FCC_PROBLEM_NONE);
    fcc_format_list_line(info, s->lines[s->n], sizeof s->lines[0]);
    snprintf(s->names[s->n], sizeof s->names[0], "%s", info->kernel_name);
    cr_assert(info->last_used_us > 0);
    s->bytes += info->value_size;
    s->n++;
    return 0;
}

Test(cache, list_stats_and_clear) {
    const char *dir = make_tmp();
    fcc_cache *c = open_cache(dir, 0, 0, 0);
    kernel k[4];
    for (uint32_t i = 0; i < 4; i++) {
        make_kernel(&k[i], i, 700 * (i + 1));
        cr_assert_eq(put_kernel(c, &k[i], i), FC_OK);
    }
    seen s;
    memset(&s, 0, sizeof s);
    cr_assert_eq(fcc_list(c, collect, &s), FC_OK);
    cr_assert_eq(s.n, 4);
    for (uint32_t i = 0; i < 4; i++) {
        bool listed = false;
        for (int j = 0; j < 4; j++) listed |= strcmp(s.names[j], k[i].name) == 0;
        cr_assert(listed, "%s not listed", k[i].name);
    }
    cr_assert_not_null(strstr(s.lines[0], "sm_90"), "%s", s.lines[0]);
    cr_assert_not_null(strstr(s.lines[0], "UTC"), "%s", s.lines[0]);
    cr_assert_not_null(strstr(s.lines[0], "UTC  elementwise: x0*c (test kernel "), "%s",
                       s.lines[0]);
    fcc_stats st = stats_of(c);
    cr_assert_eq(st.bytes, s.bytes);
    cr_assert_eq(st.entries, 4);
    cr_assert(st.map_size >= st.map_used && st.map_used > 0);

    fcc_entry held;
    bool found;
    fcc_get(c, &k[2].key, &held, &found);
    cr_assert_eq(fcc_clear(c), FC_OK);
    st = stats_of(c);
    cr_assert_eq(st.entries, 0);
    cr_assert_eq(st.memory_entries, 0);
    fcc_entry e;
    cr_assert_eq(fcc_get(c, &k[2].key, &e, &found), FC_OK);
    cr_assert(!found);
    cr_assert(entry_matches(&held, &k[2], 2)); /* handed-out entries outlive clear */
    fcc_close(c);
}

/* ---- corruption -------------------------------------------------------------------------- */

typedef struct bad_seen {
    int n;
    fcc_problem problem[8];
} bad_seen;

static void note_bad(const fcc_key *key, fcc_problem problem, void *user) {
    (void)key;
    bad_seen *b = user;
    if (b->n < 8) b->problem[b->n++] = problem;
}

/* Damages kernel k's stored value with damage(), checks it is a miss, then that a put heals it. */
static void check_corruption(int kind, fcc_problem expected) {
    const char *dir = make_tmp();
    kernel k, other;
    make_kernel(&k, 11, 9000);
    make_kernel(&other, 12, 800);
    fcc_cache *c = open_cache(dir, 0, 0, 0);
    cr_assert_eq(put_kernel(c, &k, 11), FC_OK);
    cr_assert_eq(put_kernel(c, &other, 12), FC_OK);
    fcc_close(c);

    size_t len;
    uint8_t *v = raw_get(dir, &k.key, &len);
    switch (kind) {
    case 0: v[len / 2] ^= 0x40; raw_put(dir, &k.key, v, len); break;     /* payload bit */
    case 1: raw_put(dir, &k.key, v, len - 100); break;                  /* truncated */
    case 2: v[0] ^= 1; raw_put(dir, &k.key, v, len); break;             /* magic */
    case 3: v[4] = 9; raw_put(dir, &k.key, v, len); break;              /* format version */
    case 4: raw_put(dir, &k.key, v, 5); break;                          /* a stub */
    default: {                                                          /* another's value */
        size_t olen;
        uint8_t *ov = raw_get(dir, &other.key, &olen);
        raw_put(dir, &k.key, ov, olen);
        free(ov);
    }
    }
    free(v);

    c = open_cache(dir, 0, 0, 0);
    fcc_entry e;
    bool found = true;
    cr_assert_eq(fcc_get(c, &k.key, &e, &found), FC_OK);
    cr_assert(!found, "a damaged entry was returned");
    fcc_stats s = stats_of(c);
    cr_assert_eq(s.bad_entries, 1);
    cr_assert_eq(s.misses, 1);

    bad_seen b = {0};
    fcc_verify_result r;
    cr_assert_eq(fcc_verify(c, false, note_bad, &b, &r), FC_OK);
    cr_assert_eq(r.checked, 2);
    cr_assert_eq(r.bad, 1);
    cr_assert_eq(b.n, 1);
    cr_assert_eq(b.problem[0], expected, "problem %d, expected %d", b.problem[0], expected);

    fcc_explanation *ex;
    cr_assert_eq(fcc_explain_miss(c, &k.f, &ex), FC_OK);
    cr_assert(ex->exact);
    cr_assert_eq(ex->exact_problem, expected);
    char text[512];
    fcc_explanation_format(ex, text, sizeof text);
    cr_assert_not_null(strstr(text, "unusable"), "%s", text);
    fcc_explanation_free(ex);

    /* The list shows it as bad; the next put overwrites it. */
    cr_assert_eq(put_kernel(c, &k, 11), FC_OK);
    r = verify_of(c);
    cr_assert_eq(r.bad, 0);
    fcc_close(c);
    c = open_cache(dir, 0, 0, 0);
    cr_assert_eq(fcc_get(c, &k.key, &e, &found), FC_OK);
    cr_assert(found);
    cr_assert(entry_matches(&e, &k, 11));
    cr_assert_eq(verify_of(c).bad, 0);
    fcc_close(c);
}

Test(cache, flipped_payload_byte_is_a_miss) { check_corruption(0, FCC_PROBLEM_CHECKSUM); }
Test(cache, truncated_value_is_a_miss) { check_corruption(1, FCC_PROBLEM_TRUNCATED); }
Test(cache, bad_magic_is_a_miss) { check_corruption(2, FCC_PROBLEM_MAGIC); }
Test(cache, unknown_format_is_a_miss) { check_corruption(3, FCC_PROBLEM_VERSION); }
Test(cache, stub_value_is_a_miss) { check_corruption(4, FCC_PROBLEM_TRUNCATED); }
Test(cache, value_under_wrong_key_is_a_miss) { check_corruption(5, FCC_PROBLEM_KEY); }

Test(cache, verify_deletes_bad_entries) {
    const char *dir = make_tmp();
    kernel k[3];
    fcc_cache *c = open_cache(dir, 0, 0, 0);
    for (uint32_t i = 0; i < 3; i++) {
        make_kernel(&k[i], i, 2000);
        cr_assert_eq(put_kernel(c, &k[i], i), FC_OK);
    }
    fcc_close(c);
    size_t len;
    uint8_t *v = raw_get(dir, &k[1].key, &len);
    v[len - 1] ^= 0xff;
    raw_put(dir, &k[1].key, v, len);
    free(v);
    /* A last-used stamp whose entry is gone. */
    MDB_txn *txn;
    MDB_dbi dbi;
    MDB_env *env = raw_open_db(dir, FCC_DB_LRU, &txn, &dbi, 0);
    uint8_t orphan[16] = {1, 2, 3}, stamp[8] = {1};
    MDB_val ok = {16, orphan}, ov = {8, stamp};
    cr_assert_eq(mdb_put(txn, dbi, &ok, &ov, 0), 0);
    cr_assert_eq(mdb_txn_commit(txn), 0);
    mdb_env_close(env);

    c = open_cache(dir, 0, 0, 0);
    fcc_verify_result r = verify_of(c);
    cr_assert_eq(r.bad, 1);
    cr_assert_eq(r.orphan_stamps, 1);
    cr_assert_eq(r.deleted, 0);
    cr_assert_eq(fcc_verify(c, true, NULL, NULL, &r), FC_OK, "%s", fcc_errmsg(c));
    cr_assert_eq(r.checked, 3);
    cr_assert_eq(r.bad, 1);
    cr_assert_eq(r.deleted, 1);
    r = verify_of(c);
    cr_assert_eq(r.checked, 2);
    cr_assert_eq(r.bad, 0);
    cr_assert_eq(r.orphan_stamps, 0); /* the stamp went with the entry */
    fcc_close(c);
}

/* ---- many processes ---------------------------------------------------------------------- */

#define SHARED_KEYS 40
#define PROCS 8

static int child_put_get(const char *dir, int who) {
    fcc_cache *c = child_open(dir, 64u << 10, 64u << 20);
    kernel *k = malloc(SHARED_KEYS * sizeof *k);
    for (uint32_t i = 0; i < SHARED_KEYS; i++) make_kernel(&k[i], i, 1000 + 997 * i);
    int rc = 0;
    for (int round = 0; round < SHARED_KEYS && !rc; round++) {
        uint32_t i = (uint32_t)((round * 7 + who * 5) % SHARED_KEYS); /* each its own order */
        fcc_entry e;
        bool found;
        if (fcc_get(c, &k[i].key, &e, &found) != FC_OK) rc = 11;
        else if (found && !entry_matches(&e, &k[i], i)) rc = 12;
        else if (!found && put_kernel(c, &k[i], i) != FC_OK) rc = 13;
    }
    fcc_close(c);
    /* A fresh store: everything from disk, none from this process's map. */
    c = child_open(dir, 64u << 10, 64u << 20);
    for (uint32_t i = 0; i < SHARED_KEYS && !rc; i++) {
        fcc_entry e;
        bool found = false;
        if (fcc_get(c, &k[i].key, &e, &found) != FC_OK || !found) rc = 14;
        else if (!entry_matches(&e, &k[i], i)) rc = 15;
    }
    fcc_close(c);
    free(k);
    return rc;
}

Test(cache, eight_processes_share_one_store) {
    const char *dir = make_tmp();
    pid_t pids[PROCS];
    for (int p = 0; p < PROCS; p++) {
        pids[p] = fork();
        cr_assert_neq(pids[p], -1);
        if (pids[p] == 0) _exit(child_put_get(dir, p));
    }
    for (int p = 0; p < PROCS; p++) {
        int status;
        cr_assert_eq(waitpid(pids[p], &status, 0), pids[p]);
        cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child %d: status %d", p,
                  status);
    }
    fcc_cache *c = open_cache(dir, 0, 0, 0);
    fcc_stats s = stats_of(c);
    cr_assert_eq(s.entries, SHARED_KEYS); /* exactly one entry per key */
    cr_assert(s.map_size > (64u << 10), "the small map never grew");
    fcc_verify_result r = verify_of(c);
    cr_assert_eq(r.checked, SHARED_KEYS);
    cr_assert_eq(r.bad, 0);
    cr_assert_eq(r.orphan_stamps, 0);
    fcc_close(c);
}

typedef struct thread_arg {
    fcc_cache *c;
    int who, rc;
} thread_arg;

static void *thread_main(void *p) {
    thread_arg *a = p;
    for (uint32_t n = 0; n < 30 && !a->rc; n++) {
        uint32_t i = (n * 3 + (uint32_t)a->who) % 12;
        kernel k;
        make_kernel(&k, i, 500 + 50 * i);
        fcc_entry e;
        bool found;
        if (fcc_get(a->c, &k.key, &e, &found) != FC_OK) a->rc = 1;
        else if (found && !entry_matches(&e, &k, i)) a->rc = 2;
        else if (!found && put_kernel(a->c, &k, i) != FC_OK) a->rc = 3;
    }
    return NULL;
}

Test(cache, threads_share_one_store) {
    const char *dir = make_tmp();
    fcc_cache *c = open_cache(dir, 0, 0, 0);
    pthread_t t[4];
    thread_arg a[4];
    for (int i = 0; i < 4; i++) {
        a[i] = (thread_arg){c, i, 0};
        cr_assert_eq(pthread_create(&t[i], NULL, thread_main, &a[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        cr_assert_eq(a[i].rc, 0, "thread %d failed: %d", i, a[i].rc);
    }
    fcc_stats s = stats_of(c);
    cr_assert_eq(s.entries, 12);
    cr_assert_eq(s.memory_hits + s.disk_hits + s.misses, 120);
    fcc_close(c);
}

/* ---- a writer killed mid-transaction ----------------------------------------------------- */

static uint32_t writer_size(uint32_t i) { return 20000 + (i * 7919u) % 40000u; }

/* Puts kernels base, base+1, ... until killed; one byte to wfd after 20 puts, then one every
 * 5 puts. Also reads, so a reader slot is in use too. */
static void endless_writer(const char *dir, int wfd, uint32_t base) {
    fcc_cache *c = child_open(dir, 64u << 10, 256u << 20);
    for (uint32_t n = 0;; n++) {
        kernel k;
        uint32_t i = base + n;
        make_kernel(&k, i, writer_size(i));
        if (put_kernel(c, &k, i) != FC_OK) _exit(3);
        fcc_entry e;
        bool found;
        if (fcc_get(c, &k.key, &e, &found) != FC_OK || !found) _exit(4);
        if (n >= 20 && n % 5 == 0 && write(wfd, "x", 1) != 1) _exit(5);
    }
}

static pid_t start_writer(const char *dir, uint32_t base, int *rfd) {
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        close(fds[0]);
        endless_writer(dir, fds[1], base);
    }
    close(fds[1]);
    *rfd = fds[0];
    return pid;
}

/* Waits (at most 20 s) for a progress byte from a writer. */
static bool progress(int rfd) {
    struct pollfd p = {rfd, POLLIN, 0};
    char x;
    return poll(&p, 1, 20000) == 1 && read(rfd, &x, 1) == 1;
}

static void kill_writer(pid_t pid, int rfd, long delay_ms) {
    struct timespec ts = {0, delay_ms * 1000000L};
    nanosleep(&ts, NULL);
    cr_assert_eq(kill(pid, SIGKILL), 0);
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "writer status %d", status);
    close(rfd);
}

Test(cache, writer_killed_with_sigkill_leaves_a_good_store) {
    const char *dir = make_tmp();
    /* Alone, twice, killed at different moments of a long series of puts. */
    for (int round = 0; round < 2; round++) {
        int rfd;
        pid_t pid = start_writer(dir, (uint32_t)round * 100000u, &rfd);
        cr_assert(progress(rfd), "the writer died early");
        kill_writer(pid, rfd, 1 + round * 7);
    }
    /* Beside a second writer, which must get past the dead one's write lock and reader slot
     * (the environment stays open throughout, so LMDB cannot just reset its lock file). */
    int rfd_a, rfd_b;
    pid_t a = start_writer(dir, 200000u, &rfd_a), b = start_writer(dir, 300000u, &rfd_b);
    cr_assert(progress(rfd_a) && progress(rfd_b), "a writer died early");
    kill_writer(a, rfd_a, 3);
    for (int i = 0; i < 3; i++) cr_assert(progress(rfd_b), "the survivor stopped writing");
    kill_writer(b, rfd_b, 2);

    fcc_cache *c = open_cache(dir, 0, 256u << 20, 0);
    fcc_verify_result r = verify_of(c);
    cr_assert(r.checked >= 4 * 21, "only %lu entries", (unsigned long)r.checked);
    cr_assert_eq(r.bad, 0);
    cr_assert_eq(r.orphan_stamps, 0);
    /* Each writer's first entries are there and intact. */
    for (uint32_t base = 0; base <= 300000u; base += 100000u)
        for (uint32_t n = 0; n <= 20; n++) {
            kernel k;
            uint32_t i = base + n;
            make_kernel(&k, i, writer_size(i));
            fcc_entry e;
            bool found = false;
            cr_assert_eq(fcc_get(c, &k.key, &e, &found), FC_OK);
            cr_assert(found, "entry %u lost", i);
            cr_assert(entry_matches(&e, &k, i));
        }
    kernel k;
    make_kernel(&k, 999999, 1234); /* and it still takes writes */
    cr_assert_eq(put_kernel(c, &k, 999999), FC_OK, "%s", fcc_errmsg(c));
    fcc_close(c);
}

/* ---- map growth and LRU eviction --------------------------------------------------------- */

Test(cache, map_grows_then_evicts_least_recently_used) {
    const char *dir = make_tmp();
    const uint64_t initial = 64u << 10, cap = 640u << 10;
    fcc_cache *c = open_cache(dir, initial, cap, 0); /* every use is stamped */
    enum { N = 120 };
    kernel *k = malloc(N * sizeof *k);
    uint64_t grown_at = 0;
    for (uint32_t i = 0; i < N; i++) {
        make_kernel(&k[i], i, 10000);
        cr_assert_eq(put_kernel(c, &k[i], i), FC_OK, "put %u: %s", i, fcc_errmsg(c));
        fcc_stats s = stats_of(c);
        if (!grown_at && s.grows) grown_at = i;
        cr_assert(s.map_size <= cap + cap / 16 + (256u << 10));
        fcc_entry e;
        bool found;
        cr_assert_eq(fcc_get(c, &k[0].key, &e, &found), FC_OK); /* keep kernel 0 in use */
        cr_assert(found);
    }
    fcc_stats s = stats_of(c);
    cr_assert(grown_at > 0, "the map never grew");
    cr_assert(s.map_size > initial);
    cr_assert(s.map_size >= cap);
    cr_assert(s.evictions > 0, "nothing was evicted");
    cr_assert(s.entries < N);
    cr_assert_eq(s.put_failures, 0);
    fcc_close(c);

    c = open_cache(dir, initial, cap, 0);
    fcc_entry e;
    bool found;
    cr_assert_eq(fcc_get(c, &k[0].key, &e, &found), FC_OK);
    cr_assert(found, "the most recently used entry was evicted");
    cr_assert(entry_matches(&e, &k[0], 0));
    for (uint32_t i = N - 5; i < N; i++) {
        cr_assert_eq(fcc_get(c, &k[i].key, &e, &found), FC_OK);
        cr_assert(found, "recent entry %u was evicted", i);
        cr_assert(entry_matches(&e, &k[i], i));
    }
    for (uint32_t i = 1; i <= 10; i++) {
        cr_assert_eq(fcc_get(c, &k[i].key, &e, &found), FC_OK);
        cr_assert(!found, "old entry %u survived", i);
    }
    cr_assert_eq(verify_of(c).bad, 0);
    fcc_close(c);
    free(k);
}

/* Processes that overflow a small cap together: every put succeeds, every hit is intact. */
static int child_thrash(const char *dir, int who) {
    fcc_cache *c = child_open(dir, 64u << 10, 256u << 10);
    uint32_t x = 2463534242u * (uint32_t)(who + 1);
    int rc = 0;
    for (int n = 0; n < 300 && !rc; n++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        uint32_t i = x % 60;
        kernel k;
        make_kernel(&k, i, 1000 + (i * 7919u) % 40000u);
        fcc_entry e;
        bool found;
        if (fcc_get(c, &k.key, &e, &found) != FC_OK) rc = 11;
        else if (found && !entry_matches(&e, &k, i)) rc = 12;
        else if (!found && put_kernel(c, &k, i) != FC_OK) rc = 13;
    }
    fcc_stats s;
    if (!rc && (fcc_get_stats(c, &s) != FC_OK || s.map_size > (256u + 256u) << 10)) rc = 14;
    fcc_close(c);
    return rc;
}

Test(cache, processes_evicting_together) {
    const char *dir = make_tmp();
    pid_t pids[4];
    for (int p = 0; p < 4; p++) {
        pids[p] = fork();
        cr_assert_neq(pids[p], -1);
        if (pids[p] == 0) _exit(child_thrash(dir, p));
    }
    for (int p = 0; p < 4; p++) {
        int status;
        cr_assert_eq(waitpid(pids[p], &status, 0), pids[p]);
        cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child %d: status %d", p,
                  status);
    }
    fcc_cache *c = open_cache(dir, 64u << 10, 256u << 10, 0);
    fcc_stats s = stats_of(c);
    cr_assert(s.entries > 0 && s.entries < 60);
    fcc_verify_result r = verify_of(c);
    cr_assert_eq(r.bad, 0);
    cr_assert_eq(r.orphan_stamps, 0);
    fcc_close(c);
}

Test(cache, value_larger_than_half_the_cap_stays_in_memory) {
    const char *dir = make_tmp();
    fcc_cache *c = open_cache(dir, 64u << 10, 256u << 10, 0);
    kernel k;
    make_kernel(&k, 5, 200u << 10);
    cr_assert_eq(put_kernel(c, &k, 5), FC_ERR_IO);
    cr_assert_not_null(strstr(fcc_errmsg(c), "larger than half"));
    fcc_entry e;
    bool found = false;
    cr_assert_eq(fcc_get(c, &k.key, &e, &found), FC_OK);
    cr_assert(found); /* still usable in this process */
    cr_assert(entry_matches(&e, &k, 5));
    cr_assert_eq(stats_of(c).entries, 0);
    fcc_close(c);
}

/* ---- unusable directories ---------------------------------------------------------------- */

static void check_memory_only(fcc_cache *c, const char *expect_in_warning) {
    cr_assert(!fcc_is_persistent(c));
    const char *w = fcc_take_warning(c);
    cr_assert_not_null(w, "no warning");
    cr_assert_not_null(strstr(w, expect_in_warning), "warning: %s", w);
    cr_assert_null(fcc_take_warning(c), "warned twice");
    kernel k;
    make_kernel(&k, 2, 3000);
    cr_assert_eq(put_kernel(c, &k, 2), FC_OK);
    fcc_entry e;
    bool found = false;
    cr_assert_eq(fcc_get(c, &k.key, &e, &found), FC_OK);
    cr_assert(found);
    cr_assert(entry_matches(&e, &k, 2));
    fcc_stats s;
    cr_assert_eq(fcc_get_stats(c, &s), FC_OK);
    cr_assert(!s.persistent);
    cr_assert_eq(s.memory_entries, 1);
    fcc_verify_result r;
    cr_assert_eq(fcc_verify(c, false, NULL, NULL, &r), FC_ERR_IO);
    cr_assert_eq(fcc_export(c, "/nonexistent/x", NULL), FC_ERR_IO);
    fcc_explanation *ex;
    make_kernel(&k, 3, 3000);
    cr_assert_eq(fcc_explain_miss(c, &k.f, &ex), FC_OK);
    cr_assert(ex->found); /* the in-process entry is the nearest */
    fcc_explanation_free(ex);
}

Test(cache, path_under_a_regular_file_falls_back_to_memory) {
    const char *dir = make_tmp();
    char *file = path_in(dir, "file");
    FILE *f = fopen(file, "w");
    fputs("x", f);
    fclose(f);
    char *sub = path_in(file, "cache"); /* parent is a regular file: unusable even for root */
    fcc_cache *c = open_cache(sub, 0, 0, 0);
    check_memory_only(c, "cache");
    fcc_close(c);
}

Test(cache, regular_file_as_directory_falls_back_to_memory) {
    const char *dir = make_tmp();
    char *file = path_in(dir, "file");
    FILE *f = fopen(file, "w");
    fputs("x", f);
    fclose(f);
    fcc_cache *c = open_cache(file, 0, 0, 0);
    check_memory_only(c, "not a directory");
    fcc_close(c);
}

typedef struct seen_count {
    int n;
} seen_count;

static int count_entry(const fcc_entry_info *info, void *user) {
    (void)info;
    ((seen_count *)user)->n++;
    return 0;
}

/* Nothing on disk and an open that must not create it (read-only, or no_create): an empty
 * cache, not a fault. Every read sees no entries, exports are empty files, and no directory
 * or store appears. */
static void check_absent(fcc_cache *c, const char *must_not_exist) {
    cr_assert(fcc_is_absent(c));
    cr_assert(!fcc_is_persistent(c));
    cr_assert_null(fcc_take_warning(c), "an empty cache is no fault to warn about");
    fcc_stats s;
    cr_assert_eq(fcc_get_stats(c, &s), FC_OK);
    cr_assert_eq(s.entries, 0);
    seen_count n = {0};
    cr_assert_eq(fcc_list(c, count_entry, &n), FC_OK);
    cr_assert_eq(n.n, 0);
    fcc_verify_result r;
    cr_assert_eq(fcc_verify(c, false, NULL, NULL, &r), FC_OK);
    cr_assert_eq(r.checked, 0);
    cr_assert_eq(fcc_verify(c, true, NULL, NULL, &r), FC_OK);
    cr_assert_eq(fcc_clear(c), FC_OK);
    char *file = path_in(tmp_root, "empty.fcx");
    uint64_t count = 99;
    cr_assert_eq(fcc_export(c, file, &count), FC_OK, "%s", fcc_errmsg(c));
    cr_assert_eq(count, 0);
    kernel k;
    make_kernel(&k, 1, 500);
    bool found = true;
    cr_assert_eq(fcc_get(c, &k.key, NULL, &found), FC_OK);
    cr_assert(!found);
    cr_assert_eq(put_kernel(c, &k, 1), FC_OK); /* kept in memory */
    cr_assert_eq(fcc_get(c, &k.key, NULL, &found), FC_OK);
    cr_assert(found);
    struct stat st;
    cr_assert_neq(stat(must_not_exist, &st), 0, "%s was created", must_not_exist);
}

Test(cache, absent_store_is_an_empty_cache_and_is_not_created) {
    const char *dir = make_tmp();
    char *parent = path_in(dir, "fresh"), *missing = path_in(dir, "fresh/fusec");
    fcc_options o = fcc_options_default();
    o.dir = missing;
    o.read_only = true;
    fcc_cache *c = NULL;
    cr_assert_eq(fcc_open(&o, &c), FC_OK);
    check_absent(c, parent);
    fcc_close(c);
    /* no_create on a writable open; an existing directory without a store is absent too. */
    char *bare = path_in(dir, "bare");
    cr_assert_eq(mkdir(bare, 0755), 0);
    o = fcc_options_default();
    o.dir = bare;
    o.no_create = true;
    cr_assert_eq(fcc_open(&o, &c), FC_OK);
    check_absent(c, path_in(bare, "data.mdb"));
    fcc_close(c);
    /* The empty export is a valid file: a real store imports nothing from it. */
    c = open_cache(path_in(dir, "real"), 0, 0, 0);
    uint64_t count = 99;
    cr_assert_eq(fcc_import(c, path_in(dir, "empty.fcx"), &count), FC_OK, "%s", fcc_errmsg(c));
    cr_assert_eq(count, 0);
    fcc_close(c);
    /* With a store on disk, no_create opens it as usual (writable). */
    o.dir = path_in(dir, "real");
    cr_assert_eq(fcc_open(&o, &c), FC_OK);
    cr_assert(fcc_is_persistent(c) && !fcc_is_read_only(c) && !fcc_is_absent(c));
    fcc_close(c);
}

/* The summary describes the entry and is stored with it, but never keys it: a second put of the
 * same fields with another summary replaces the one entry. */
Test(cache, summary_is_stored_but_not_keyed) {
    const char *dir = make_tmp();
    kernel k;
    make_kernel(&k, 5, 700);
    fcc_key before = k.key;
    fcc_cache *c = open_cache(dir, 0, 0, 0);
    cr_assert_eq(put_kernel(c, &k, 5), FC_OK);
    snprintf(k.summary, sizeof k.summary, "reduce over axis 1: sum(\x1b[31mx0)");
    cr_assert_eq(fcc_key_compute(&k.f, &k.key), FC_OK);
    cr_assert_eq(memcmp(before.bytes, k.key.bytes, 16), 0);
    cr_assert_eq(put_kernel(c, &k, 5), FC_OK);
    fcc_close(c);
    c = open_cache(dir, 0, 0, 0);
    cr_assert_eq(stats_of(c).entries, 1);
    fcc_entry e;
    bool found = false;
    cr_assert_eq(fcc_get(c, &k.key, &e, &found), FC_OK);
    cr_assert(found);
    cr_assert(entry_matches(&e, &k, 5));
    seen s;
    memset(&s, 0, sizeof s);
    cr_assert_eq(fcc_list(c, collect, &s), FC_OK);
    cr_assert_eq(s.n, 1);
    /* A terminal escape in a stored string never reaches the listing raw. */
    cr_assert_not_null(strstr(s.lines[0], "UTC  reduce over axis 1: sum(\\x1b[31mx0)"), "%s",
                       s.lines[0]);
    char big[5000];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    cr_assert_eq(fcc_put(c, &k.f, big, NULL, 0, NULL, 0), FC_ERR_INVALID);
    fcc_close(c);
}

/* Rewrites a format-2 value as format 1 would have stored it: version 1, no summary string
 * (and a zero where its length is), meta and cubin moved up, the checksum redone. */
static uint8_t *as_format_1(const uint8_t *v2, size_t len2, size_t *len1) {
    enum { H = FCC_ENTRY_HEADER_SIZE };
    const uint8_t *p2 = v2 + H;
    uint32_t name = 0, arch = 0, opts = 0, sum = 0;
    uint64_t meta = 0, cubin = 0;
    memcpy(&name, p2 + 104, 4); /* little-endian host: checked below */
    memcpy(&arch, p2 + 108, 4);
    memcpy(&opts, p2 + 112, 4);
    memcpy(&sum, p2 + 116, 4);
    memcpy(&meta, p2 + 120, 8);
    memcpy(&cubin, p2 + 128, 8);
    size_t strings = 136 + (size_t)name + arch + opts + 3;
    size_t meta2 = (strings + sum + 1 + 15) & ~(size_t)15, meta1 = (strings + 15) & ~(size_t)15;
    size_t cubin2 = (meta2 + meta + 15) & ~(size_t)15, cubin1 = (meta1 + meta + 15) & ~(size_t)15;
    cr_assert_eq(H + cubin2 + cubin, len2, "unexpected format-2 layout");
    size_t payload = cubin1 + cubin;
    uint8_t *v1 = calloc(1, H + payload);
    cr_assert_not_null(v1);
    memcpy(v1, v2, H);
    memcpy(v1 + H, p2, strings);
    memset(v1 + H + 116, 0, 4);
    memcpy(v1 + H + meta1, p2 + meta2, meta);
    memcpy(v1 + H + cubin1, p2 + cubin2, cubin);
    v1[4] = 1, v1[5] = 0;
    uint64_t size = payload, check = XXH3_64bits(v1 + H, payload);
    memcpy(v1 + 16, &size, 8);
    memcpy(v1 + 24, &check, 8);
    *len1 = H + payload;
    return v1;
}

/* Entries written by an older fusec (format 1, no summary) stay valid: hits, listed by their
 * kernel name, and never reported bad. */
Test(cache, format_1_entries_are_still_read) {
    const uint16_t one = 1;
    uint8_t little;
    memcpy(&little, &one, 1);
    if (!little) cr_skip_test("the format-1 rewrite reads little-endian fields in place");
    const char *dir = make_tmp();
    kernel k;
    make_kernel(&k, 9, 3000);
    fcc_cache *c = open_cache(dir, 0, 0, 0);
    cr_assert_eq(put_kernel(c, &k, 9), FC_OK);
    fcc_close(c);
    size_t len2, len1;
    uint8_t *v2 = raw_get(dir, &k.key, &len2);
    cr_assert_eq(v2[4], FCC_ENTRY_FORMAT_VERSION);
    uint8_t *v1 = as_format_1(v2, len2, &len1);
    raw_put(dir, &k.key, v1, len1);
    free(v1);
    free(v2);
    c = open_cache(dir, 0, 0, 0);
    fcc_entry e;
    bool found = false;
    cr_assert_eq(fcc_get(c, &k.key, &e, &found), FC_OK);
    cr_assert(found, "a format-1 entry was not read");
    k.summary[0] = '\0';
    cr_assert(entry_matches(&e, &k, 9));
    cr_assert_eq(verify_of(c).bad, 0);
    seen s;
    memset(&s, 0, sizeof s);
    cr_assert_eq(fcc_list(c, collect, &s), FC_OK);
    cr_assert_not_null(strstr(s.lines[0], "UTC  kernel fk9"), "%s", s.lines[0]);
    fcc_close(c);
}

Test(cache, missing_directory_is_created) {
    const char *dir = make_tmp();
    char *deep = path_in(dir, "a/b/c");
    fcc_cache *c = open_cache(deep, 0, 0, 0);
    cr_assert(fcc_is_persistent(c));
    struct stat st;
    cr_assert_eq(stat(deep, &st), 0);
    cr_assert(S_ISDIR(st.st_mode));
    fcc_close(c);
}

/* Runs fn(dir) in a child that has dropped root for nobody, so permissions apply. Returns the
 * child's exit status, or -1 when privileges could not be dropped. */
static int as_nobody(const char *dir, int (*fn)(const char *dir)) {
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) _exit(77);
        if (geteuid() == 0) _exit(77);
        _exit(fn(dir));
    }
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status));
    return WEXITSTATUS(status) == 77 ? -1 : WEXITSTATUS(status);
}

static int open_unwritable_empty(const char *dir) {
    fcc_cache *c = NULL;
    fcc_options o = fcc_options_default();
    o.dir = dir;
    if (fcc_open(&o, &c) != FC_OK) return 1;
    int rc = fcc_is_persistent(c) ? 2 : 0;
    const char *w = fcc_take_warning(c);
    if (!rc && (!w || !strstr(w, "not writable"))) rc = 3;
    kernel k;
    make_kernel(&k, 4, 100);
    fcc_entry e;
    bool found = false;
    if (!rc && (put_kernel(c, &k, 4) != FC_OK || fcc_get(c, &k.key, &e, &found) != FC_OK ||
                !found))
        rc = 4;
    fcc_close(c);
    return rc;
}

Test(cache, unwritable_directory_falls_back_to_memory) {
    const char *dir = make_tmp();
    chmod(dir, 0755); /* traversable by the unprivileged child */
    char *ro = path_in(dir, "ro");
    cr_assert_eq(mkdir(ro, 0500), 0);
    if (geteuid() == 0) cr_assert_eq(chown(ro, 65534, 65534), 0);
    int rc = geteuid() == 0 ? as_nobody(ro, open_unwritable_empty) : open_unwritable_empty(ro);
    if (rc < 0) cr_skip_test("cannot drop root privileges here; see the regular-file tests");
    cr_assert_eq(rc, 0, "child failed with %d", rc);
}

/* A directory holding a store that this user can read but not write: opened read-only. */
static int open_unwritable_store(const char *dir) {
    fcc_cache *c = NULL;
    fcc_options o = fcc_options_default();
    o.dir = dir;
    if (fcc_open(&o, &c) != FC_OK) return 1;
    int rc = 0;
    const char *w = fcc_take_warning(c);
    if (!fcc_is_persistent(c) || !fcc_is_read_only(c)) rc = 2;
    else if (!w || !strstr(w, "read-only")) rc = 3;
    kernel k;
    make_kernel(&k, 6, 4000);
    fcc_entry e;
    bool found = false;
    if (!rc && (fcc_get(c, &k.key, &e, &found) != FC_OK || !found || !entry_matches(&e, &k, 6)))
        rc = 4;
    make_kernel(&k, 7, 4000);
    if (!rc && put_kernel(c, &k, 7) != FC_OK) rc = 5; /* kept in memory */
    if (!rc && (fcc_get(c, &k.key, &e, &found) != FC_OK || !found)) rc = 6;
    fcc_close(c);
    return rc;
}

Test(cache, unwritable_directory_with_a_store_is_read_only) {
    if (geteuid() != 0) cr_skip_test("needs root to hand the store to another user");
    const char *dir = make_tmp();
    chmod(dir, 0755);
    char *ro = path_in(dir, "ro");
    fcc_cache *c = open_cache(ro, 0, 0, 0);
    kernel k;
    make_kernel(&k, 6, 4000);
    cr_assert_eq(put_kernel(c, &k, 6), FC_OK);
    fcc_close(c);
    /* The directory and data stay root's; the lock file is shared, as LMDB readers need. */
    cr_assert_eq(chmod(ro, 0755), 0);
    cr_assert_eq(chmod(path_in(ro, "lock.mdb"), 0666), 0);
    int rc = as_nobody(ro, open_unwritable_store);
    if (rc < 0) cr_skip_test("cannot drop root privileges here");
    cr_assert_eq(rc, 0, "child failed with %d", rc);
    c = open_cache(ro, 0, 0, 0);
    cr_assert_eq(stats_of(c).entries, 1); /* the child's put stayed in its memory */
    fcc_close(c);
}

Test(cache, read_only_open_reads_but_never_writes) {
    const char *dir = make_tmp();
    kernel k;
    make_kernel(&k, 8, 2500);
    fcc_cache *c = open_cache(dir, 0, 0, 0);
    cr_assert_eq(put_kernel(c, &k, 8), FC_OK);
    fcc_close(c);

    fcc_options o = fcc_options_default();
    o.dir = dir;
    o.read_only = true;
    cr_assert_eq(fcc_open(&o, &c), FC_OK);
    cr_assert(fcc_is_persistent(c));
    cr_assert(fcc_is_read_only(c));
    fcc_entry e;
    bool found = false;
    cr_assert_eq(fcc_get(c, &k.key, &e, &found), FC_OK);
    cr_assert(found);
    cr_assert(entry_matches(&e, &k, 8));
    kernel k2;
    make_kernel(&k2, 9, 2500);
    cr_assert_eq(put_kernel(c, &k2, 9), FC_OK);
    cr_assert_eq(fcc_clear(c), FC_ERR_IO);
    fcc_verify_result r;
    cr_assert_eq(fcc_verify(c, false, NULL, NULL, &r), FC_OK);
    cr_assert_eq(r.checked, 1);
    cr_assert_eq(fcc_import(c, "/nonexistent", NULL), FC_ERR_IO);
    fcc_close(c);

    c = open_cache(dir, 0, 0, 0);
    cr_assert_eq(stats_of(c).entries, 1);
    cr_assert_eq(fcc_get(c, &k2.key, &e, &found), FC_OK);
    cr_assert(!found);
    fcc_close(c);

    /* Read-only where no store is: an absent (empty) cache, nothing created, no warning
     * (absent_store_is_an_empty_cache_and_is_not_created has the rest). */
    o.dir = path_in(dir, "absent");
    cr_assert_eq(fcc_open(&o, &c), FC_OK);
    cr_assert(!fcc_is_persistent(c));
    cr_assert(fcc_is_absent(c));
    cr_assert_null(fcc_take_warning(c));
    fcc_close(c);
}

/* A data.mdb that is not LMDB's is moved aside (kept), and a fresh store opened. */
Test(cache, invalid_lmdb_file_is_moved_aside) {
    const char *dir = make_tmp();
    FILE *f = fopen(path_in(dir, "data.mdb"), "w");
    for (int i = 0; i < 5000; i++) fputc(i * 37, f);
    fclose(f);
    fcc_cache *c = open_cache(dir, 0, 0, 0);
    cr_assert(fcc_is_persistent(c));
    const char *w = fcc_take_warning(c);
    cr_assert(w && strstr(w, "is not an LMDB file") && strstr(w, "moved it aside to") &&
              strstr(w, "data.mdb.damaged-"), "%s", w ? w : "(none)");
    cr_assert_not_null(fcc_damage(c));
    kernel k;
    make_kernel(&k, 1, 1000);
    cr_assert_eq(put_kernel(c, &k, 1), FC_OK);
    fcc_close(c);
    int moved = 0;
    DIR *d = opendir(dir);
    for (struct dirent *e; (e = readdir(d));) moved += strncmp(e->d_name, "data.mdb.damaged-", 17) == 0;
    closedir(d);
    cr_assert_eq(moved, 1);
}

/* ---- the environment --------------------------------------------------------------------- */

Test(cache, directory_from_the_environment) {
    const char *dir = make_tmp();
    char want[600];
    fcc_options o = fcc_options_default();
    fcc_cache *c;

    setenv("FUSEC_CACHE_DIR", path_in(dir, "explicit"), 1);
    cr_assert_eq(fcc_open(&o, &c), FC_OK);
    snprintf(want, sizeof want, "%s/explicit", dir);
    cr_assert_str_eq(fcc_dir(c), want);
    fcc_close(c);

    unsetenv("FUSEC_CACHE_DIR");
    setenv("XDG_CACHE_HOME", path_in(dir, "xdg"), 1);
    cr_assert_eq(fcc_open(&o, &c), FC_OK);
    snprintf(want, sizeof want, "%s/xdg/fusec", dir);
    cr_assert_str_eq(fcc_dir(c), want);
    cr_assert(fcc_is_persistent(c));
    fcc_close(c);

    setenv("XDG_CACHE_HOME", "relative/path", 1); /* XDG: relative values are ignored */
    setenv("HOME", path_in(dir, "home"), 1);
    cr_assert_eq(fcc_open(&o, &c), FC_OK);
    snprintf(want, sizeof want, "%s/home/.cache/fusec", dir);
    cr_assert_str_eq(fcc_dir(c), want);
    fcc_close(c);

    unsetenv("XDG_CACHE_HOME");
    unsetenv("HOME");
    cr_assert_eq(fcc_open(&o, &c), FC_OK);
    cr_assert_null(fcc_dir(c));
    check_memory_only(c, "unset");
    fcc_close(c);
}

Test(cache, cap_from_the_environment) {
    const char *dir = make_tmp();
    fcc_options o = fcc_options_default();
    o.dir = dir;
    fcc_cache *c;
    setenv("FUSEC_CACHE_MAX", "3M", 1);
    cr_assert_eq(fcc_open(&o, &c), FC_OK);
    cr_assert_eq(stats_of(c).map_cap, 3u << 20);
    cr_assert_null(fcc_take_warning(c));
    fcc_close(c);
    setenv("FUSEC_CACHE_MAX", "lots", 1);
    cr_assert_eq(fcc_open(&o, &c), FC_OK);
    cr_assert_eq(stats_of(c).map_cap, FCC_DEFAULT_MAX_MAP_SIZE);
    const char *w = fcc_take_warning(c);
    cr_assert(w && strstr(w, "FUSEC_CACHE_MAX"));
    fcc_close(c);
    unsetenv("FUSEC_CACHE_MAX");
    o.initial_map_size = 8u << 20;
    o.max_map_size = 1u << 20;
    c = (fcc_cache *)1;
    cr_assert_eq(fcc_open(&o, &c), FC_ERR_INVALID);
    cr_assert_null(c);
}

Test(cache, require_cached_flag) {
    fcc_options o = fcc_options_default();
    o.memory_only = true;
    fcc_cache *c;
    unsetenv("FUSEC_REQUIRE_CACHED");
    cr_assert_eq(fcc_open(&o, &c), FC_OK);
    cr_assert(!fcc_require_cached(c));
    fcc_close(c);
    setenv("FUSEC_REQUIRE_CACHED", "1", 1);
    cr_assert_eq(fcc_open(&o, &c), FC_OK);
    cr_assert(fcc_require_cached(c));
    /* What a caller does with it: a miss becomes an error, a hit is fine. */
    kernel k;
    make_kernel(&k, 1, 64);
    fcc_entry e;
    bool found = true;
    cr_assert_eq(fcc_get(c, &k.key, &e, &found), FC_OK);
    cr_assert(!found && fcc_require_cached(c));
    fcc_close(c);
    setenv("FUSEC_REQUIRE_CACHED", "0", 1);
    cr_assert_eq(fcc_open(&o, &c), FC_OK);
    cr_assert(!fcc_require_cached(c));
    fcc_close(c);
    setenv("FUSEC_REQUIRE_CACHED", "", 1);
    cr_assert_eq(fcc_open(&o, &c), FC_OK);
    cr_assert(!fcc_require_cached(c));
    fcc_close(c);
    setenv("FUSEC_REQUIRE_CACHED", "yes", 1);
    o.require_cached = 0; /* the option wins over the environment */
    cr_assert_eq(fcc_open(&o, &c), FC_OK);
    cr_assert(!fcc_require_cached(c));
    fcc_close(c);
    o.require_cached = -1;
    cr_assert_eq(fcc_open(&o, &c), FC_OK);
    cr_assert(fcc_require_cached(c));
    fcc_close(c);
}

/* ---- export / import --------------------------------------------------------------------- */

static uint8_t *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f);
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    rewind(f);
    uint8_t *buf = malloc(*len);
    cr_assert_eq(fread(buf, 1, *len, f), *len);
    fclose(f);
    return buf;
}

static void write_file(const char *path, const uint8_t *buf, size_t len) {
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(buf, 1, len, f), len);
    fclose(f);
}

Test(cache, export_import_round_trip) {
    const char *dir = make_tmp();
    enum { N = 20 };
    kernel k[N];
    char *src = path_in(dir, "src");
    fcc_cache *c = open_cache(src, 0, 0, 0);
    for (uint32_t i = 0; i < N; i++) {
        make_kernel(&k[i], i, 100 + 1500 * i);
        cr_assert_eq(put_kernel(c, &k[i], i), FC_OK);
    }
    char *file = path_in(dir, "kernels.fcx");
    uint64_t n = 0;
    cr_assert_eq(fcc_export(c, file, &n), FC_OK, "%s", fcc_errmsg(c));
    cr_assert_eq(n, N);
    fcc_close(c);

    char *dst = path_in(dir, "dst");
    c = open_cache(dst, 64u << 10, 64u << 20, 0);
    cr_assert_eq(fcc_import(c, file, &n), FC_OK, "%s", fcc_errmsg(c));
    cr_assert_eq(n, N);
    fcc_close(c);
    c = open_cache(dst, 0, 0, 0);
    for (uint32_t i = 0; i < N; i++) {
        fcc_entry e;
        bool found = false;
        cr_assert_eq(fcc_get(c, &k[i].key, &e, &found), FC_OK);
        cr_assert(found);
        cr_assert(entry_matches(&e, &k[i], i));
    }
    fcc_verify_result r = verify_of(c);
    cr_assert_eq(r.checked, N);
    cr_assert_eq(r.bad, 0);
    fcc_close(c);

    /* Import of a damaged file stores nothing. */
    size_t len;
    uint8_t *buf = read_file(file, &len);
    char damaged[512]; /* a copy: path_in's buffers are reused by the calls below */
    snprintf(damaged, sizeof damaged, "%s", path_in(dir, "damaged.fcx"));
    const size_t cuts[] = {len / 3, len - 1, 5};
    for (int t = 0; t < 4; t++) {
        if (t < 3) {
            write_file(damaged, buf, cuts[t]); /* truncated */
        } else {
            buf[len / 2] ^= 0x10; /* one flipped bit inside some entry */
            write_file(damaged, buf, len);
        }
        char *fresh = path_in(dir, t == 0 ? "f0" : t == 1 ? "f1" : t == 2 ? "f2" : "f3");
        c = open_cache(fresh, 0, 0, 0);
        cr_assert_eq(fcc_import(c, damaged, &n), FC_ERR_PARSE, "case %d", t);
        cr_assert_eq(n, 0);
        cr_assert_eq(stats_of(c).entries, 0, "case %d stored something", t);
        fcc_close(c);
    }
    free(buf);
}

Test(cache, export_skips_bad_entries) {
    const char *dir = make_tmp();
    kernel k[3];
    fcc_cache *c = open_cache(dir, 0, 0, 0);
    for (uint32_t i = 0; i < 3; i++) {
        make_kernel(&k[i], i, 3000);
        cr_assert_eq(put_kernel(c, &k[i], i), FC_OK);
    }
    fcc_close(c);
    size_t len;
    uint8_t *v = raw_get(dir, &k[0].key, &len);
    v[100] ^= 4;
    raw_put(dir, &k[0].key, v, len);
    free(v);
    c = open_cache(dir, 0, 0, 0);
    uint64_t n;
    char *file = path_in(dir, "out.fcx");
    cr_assert_eq(fcc_export(c, file, &n), FC_OK);
    cr_assert_eq(n, 2);
    cr_assert_eq(fcc_export(c, "/nonexistent-dir/out.fcx", &n), FC_ERR_IO);
    cr_assert_eq(access("/nonexistent-dir/out.fcx", F_OK), -1);
    fcc_close(c);
}

/* ---- explain ----------------------------------------------------------------------------- */

Test(cache, explain_names_the_field_that_differs) {
    const char *dir = make_tmp();
    fcc_cache *c = open_cache(dir, 0, 0, 0);
    fcc_explanation *ex;
    kernel k[4];
    for (uint32_t i = 0; i < 4; i++) make_kernel(&k[i], i, 500);
    char text[1024];

    cr_assert_eq(fcc_explain_miss(c, &k[0].f, &ex), FC_OK);
    cr_assert(!ex->found && !ex->exact);
    fcc_explanation_format(ex, text, sizeof text);
    cr_assert_str_eq(text, "the cache is empty");
    fcc_explanation_free(ex);

    for (uint32_t i = 0; i < 4; i++) cr_assert_eq(put_kernel(c, &k[i], i), FC_OK);

    /* Kernel 2 for another arch and NVRTC: nearest is kernel 2, two fields differ. */
    fcc_key_fields f = k[2].f;
    f.arch = "sm_80";
    f.nvrtc_version = 12060;
    cr_assert_eq(fcc_explain_miss(c, &f, &ex), FC_OK);
    cr_assert(ex->found && !ex->exact);
    cr_assert_str_eq(ex->nearest.kernel_name, "fk2");
    cr_assert_eq(ex->differ, (1u << FCC_FIELD_ARCH) | (1u << FCC_FIELD_NVRTC));
    size_t need = fcc_explanation_format(ex, text, sizeof text);
    cr_assert_eq(need, strlen(text));
    cr_assert_not_null(strstr(text, "arch (sm_80 wanted, sm_90 cached)"), "%s", text);
    cr_assert_not_null(strstr(text, "nvrtc (12.6 wanted, 12.4 cached)"), "%s", text);
    char small[16];
    cr_assert_eq(fcc_explanation_format(ex, small, sizeof small), need); /* truncates safely */
    cr_assert_eq(strlen(small), sizeof small - 1);
    fcc_explanation_free(ex);

    /* A changed source with the same name: nearest by name, the source differs. */
    f = k[1].f;
    f.source_len -= 3;
    f.codegen_version = 8;
    cr_assert_eq(fcc_explain_miss(c, &f, &ex), FC_OK);
    cr_assert_str_eq(ex->nearest.kernel_name, "fk1");
    cr_assert_eq(ex->differ, (1u << FCC_FIELD_SOURCE) | (1u << FCC_FIELD_CODEGEN));
    fcc_explanation_format(ex, text, sizeof text);
    cr_assert_not_null(strstr(text, "codegen (8 wanted, 7 cached)"), "%s", text);
    cr_assert_not_null(strstr(text, "source ("), "%s", text);
    fcc_explanation_free(ex);

    /* Options differ. */
    f = k[3].f;
    f.options = "-default-device";
    cr_assert_eq(fcc_explain_miss(c, &f, &ex), FC_OK);
    cr_assert_eq(ex->differ, 1u << FCC_FIELD_OPTIONS);
    fcc_explanation_format(ex, text, sizeof text);
    cr_assert_not_null(strstr(text, "\"-default-device\" wanted"), "%s", text);
    fcc_explanation_free(ex);

    /* A hit explained: the entry is there. */
    cr_assert_eq(fcc_explain_miss(c, &k[3].f, &ex), FC_OK);
    cr_assert(ex->exact);
    cr_assert_eq(ex->exact_problem, FCC_PROBLEM_NONE);
    cr_assert_eq(ex->differ, 0);
    fcc_explanation_free(ex);
    fcc_close(c);
}

/* ---- last-used stamps -------------------------------------------------------------------- */

static int stamp_of_first(const fcc_entry_info *info, void *user) {
    *(uint64_t *)user = info->last_used_us;
    return 1;
}

Test(cache, uses_are_stamped_at_most_once_per_interval) {
    const char *dir = make_tmp();
    kernel k;
    make_kernel(&k, 1, 100);
    fcc_cache *c = open_cache(dir, 0, 0, 3600ull * 1000000u); /* an hour */
    cr_assert_eq(put_kernel(c, &k, 1), FC_OK);
    uint64_t put_stamp = 0, later = 0;
    fcc_list(c, stamp_of_first, &put_stamp);
    cr_assert(put_stamp > 0);
    fcc_entry e;
    bool found;
    struct timespec ts = {0, 2000000};
    nanosleep(&ts, NULL);
    fcc_get(c, &k.key, &e, &found);
    cr_assert_eq(fcc_flush(c), FC_OK);
    fcc_list(c, stamp_of_first, &later);
    cr_assert_eq(later, put_stamp); /* within the interval: not rewritten */
    fcc_close(c);

    c = open_cache(dir, 0, 0, 0); /* interval 0: every use counts */
    fcc_get(c, &k.key, &e, &found);
    cr_assert(found);
    cr_assert_eq(fcc_flush(c), FC_OK);
    fcc_list(c, stamp_of_first, &later);
    cr_assert(later > put_stamp);
    fcc_close(c);
}

/* ---- imports that can be trusted ----------------------------------------------------------- */

/* Offset of the first entry's value in an export (format 2) and its size. */
static size_t first_value(const uint8_t *buf, size_t *vlen) {
    uint32_t mlen;
    memcpy(&mlen, buf + 16, 4);
    size_t rec = 24 + mlen;
    cr_assert_eq(memcmp(buf + rec, "ENTR", 4), 0);
    uint64_t len;
    memcpy(&len, buf + rec + 32, 8);
    *vlen = (size_t)len;
    return rec + 40;
}

/* Recomputes a value's checksum and the file's (sum_at: where the file checksum is). */
static void reseal(uint8_t *buf, size_t value_at, size_t vlen, size_t sum_at) {
    uint64_t h = XXH3_64bits(buf + value_at + 32, vlen - 32);
    memcpy(buf + value_at + 24, &h, 8);
    uint64_t f = XXH3_64bits(buf, sum_at);
    memcpy(buf + sum_at, &f, 8);
}

/* A store of 3 kernels exported to file (signed with key when key is not NULL). */
static void export_three(const char *dir, const char *file, const char *key) {
    fcc_cache *c = open_cache(path_in(dir, "src"), 0, 0, 0);
    for (uint32_t i = 0; i < 3; i++) {
        kernel k;
        make_kernel(&k, i, 2000 + 500 * i);
        cr_assert_eq(put_kernel(c, &k, i), FC_OK);
    }
    uint64_t n;
    cr_assert_eq(fcc_export_signed(c, file, key, key ? strlen(key) : 0, &n), FC_OK, "%s",
                 fcc_errmsg(c));
    cr_assert_eq(n, 3);
    fcc_close(c);
}

static fc_status import_into(const char *dir, const char *name, const char *file,
                             const char *key, char *msg, size_t msg_size) {
    fcc_cache *c = open_cache(path_in(dir, name), 0, 0, 0);
    uint64_t n = 99;
    char holds[256];
    fc_status st = fcc_import_signed(c, file, key, key ? strlen(key) : 0, &n, holds,
                                     sizeof holds);
    snprintf(msg, msg_size, "%s", st ? fcc_errmsg(c) : holds);
    if (st) cr_assert_eq(stats_of(c).entries, 0, "a refused import stored something");
    fcc_close(c);
    return st;
}

Test(cache, export_header_says_what_it_holds) {
    const char *dir = make_tmp();
    char file[512], msg[512];
    snprintf(file, sizeof file, "%s", path_in(dir, "x.fcx"));
    export_three(dir, file, NULL);
    size_t len;
    uint8_t *buf = read_file(file, &len);
    cr_assert_eq(memcmp(buf, "FUSECEXP", 8), 0);
    cr_assert_eq(buf[8], FCC_EXPORT_FORMAT_VERSION);
    const char *want = "archs: sm_90\nnvrtc: 12040\ncodegen: 7\nkey-format: 1\nentries: 3\n";
    cr_assert_eq(memcmp(buf + 24, want, strlen(want)), 0, "%.80s", (const char *)buf + 24);
    cr_assert_eq(import_into(dir, "d", file, NULL, msg, sizeof msg), FC_OK, "%s", msg);
    cr_assert_str_eq(msg, "3 entries for sm_90; NVRTC 12040; codegen 7; key format 1; not signed");
    /* The header says sm_80 only: an sm_90 entry is not what the file claims to hold. */
    memcpy(buf + 24 + 10, "80", 2);
    uint64_t f = XXH3_64bits(buf, len - 8);
    memcpy(buf + len - 8, &f, 8);
    write_file(file, buf, len);
    cr_assert_eq(import_into(dir, "e", file, NULL, msg, sizeof msg), FC_ERR_PARSE);
    cr_assert(strstr(msg, "not of what the export's header says it holds"), "%s", msg);
    free(buf);
}

Test(cache, import_refuses_edited_metadata_and_names) {
    const char *dir = make_tmp();
    char file[512], msg[512];
    snprintf(file, sizeof file, "%s", path_in(dir, "x.fcx"));
    export_three(dir, file, NULL);
    size_t len, vlen;
    uint8_t *orig = read_file(file, &len), *buf = malloc(len);
    size_t at = first_value(orig, &vlen);
    size_t strings = at + 32 + 136; /* the payload's strings: name NUL arch NUL ... */
    /* 1: the arch string edited (and every checksum made good): its field hash says no. */
    memcpy(buf, orig, len);
    const char *arch = (const char *)buf + strings + strlen((const char *)buf + strings) + 1;
    cr_assert_str_eq(arch, "sm_90");
    memcpy((char *)arch, "sm_80", 5);
    reseal(buf, at, vlen, len - 8);
    write_file(file, buf, len);
    cr_assert_eq(import_into(dir, "a", file, NULL, msg, sizeof msg), FC_ERR_PARSE);
    cr_assert(strstr(msg, "metadata does not match its key"), "%s", msg);
    /* 2: a kernel name with a terminal escape in it. */
    memcpy(buf, orig, len);
    buf[strings + 1] = 0x1b;
    reseal(buf, at, vlen, len - 8);
    write_file(file, buf, len);
    cr_assert_eq(import_into(dir, "b", file, NULL, msg, sizeof msg), FC_ERR_PARSE);
    cr_assert(strstr(msg, "bad kernel name"), "%s", msg);
    free(buf);
    free(orig);
}

Test(cache, signed_export_refuses_edited_cubin) {
    const char *dir = make_tmp();
    const char *key = "0123456789abcdef-a-test-key";
    char file[512], msg[512];
    snprintf(file, sizeof file, "%s", path_in(dir, "signed.fcx"));
    export_three(dir, file, key);
    cr_assert_eq(import_into(dir, "ok", file, key, msg, sizeof msg), FC_OK, "%s", msg);
    cr_assert(strstr(msg, "signed (HMAC-SHA256)"), "%s", msg);
    /* Without the key, a signed export is refused; with another key too. */
    cr_assert_eq(import_into(dir, "nokey", file, NULL, msg, sizeof msg), FC_ERR_PARSE);
    cr_assert(strstr(msg, "give its key"), "%s", msg);
    cr_assert_eq(import_into(dir, "wrong", file, "another key, 16+ bytes", msg, sizeof msg),
                 FC_ERR_PARSE);
    cr_assert(strstr(msg, "signature does not match"), "%s", msg);
    /* The attack of issue 15: cubin bytes edited, the entry's and the file's checksums made
     * good again. The signature (over every byte) still says no. */
    size_t len, vlen;
    uint8_t *buf = read_file(file, &len);
    size_t at = first_value(buf, &vlen);
    buf[at + vlen - 10] ^= 0x5a; /* inside the cubin, the value's last bytes */
    reseal(buf, at, vlen, len - 40);
    write_file(file, buf, len);
    cr_assert_eq(import_into(dir, "edited", file, key, msg, sizeof msg), FC_ERR_PARSE);
    cr_assert(strstr(msg, "signature does not match"), "%s", msg);
    /* Unsigned, the same edit passes every check there is without a key: that is what the key
     * is for (documented), and a key given for an unsigned file is refused. */
    char plain[512];
    snprintf(plain, sizeof plain, "%s", path_in(dir, "plain.fcx"));
    fcc_cache *c = open_cache(path_in(dir, "src"), 0, 0, 0);
    cr_assert_eq(fcc_export(c, plain, NULL), FC_OK);
    fcc_close(c);
    cr_assert_eq(import_into(dir, "plainkey", plain, key, msg, sizeof msg), FC_ERR_PARSE);
    cr_assert(strstr(msg, "not signed"), "%s", msg);
    free(buf);
}

Test(cache, import_refuses_what_is_not_a_regular_file) {
    const char *dir = make_tmp();
    char fifo[512], msg[512];
    snprintf(fifo, sizeof fifo, "%s", path_in(dir, "pipe.fcx"));
    cr_assert_eq(mkfifo(fifo, 0644), 0);
    time_t t0 = time(NULL);
    cr_assert_eq(import_into(dir, "a", fifo, NULL, msg, sizeof msg), FC_ERR_IO);
    cr_assert(strstr(msg, "not a regular file (a FIFO)"), "%s", msg);
    cr_assert_leq(time(NULL) - t0, 2, "the FIFO blocked");
    cr_assert_eq(import_into(dir, "b", dir, NULL, msg, sizeof msg), FC_ERR_IO);
    cr_assert(strstr(msg, "a directory"), "%s", msg);
    cr_assert_eq(import_into(dir, "c", "/dev/null", NULL, msg, sizeof msg), FC_ERR_IO);
}

/* fcc_decode_value (the entry decoder alone, for fuzz/fuzz_cache_value.c) on the fuzz seed
 * corpus, which fuzz/gen_cache_corpus.c wrote through fcc_put and fcc_export: the seeds must
 * stay what their names say, and every export seed must import (a stale seed corpus would let
 * the fuzzers start from nothing but rejections). */
static uint8_t *read_seed(const char *dir, const char *name, size_t *n) {
    char path[1024];
    snprintf(path, sizeof path, "%s/fuzz/corpus/%s/%s", FUSEC_SOURCE_DIR, dir, name);
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    static uint8_t buf[4096];
    *n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    return buf;
}

Test(cache, decode_value_and_the_fuzz_seeds) {
    static const struct {
        const char *name;
        fcc_problem want;
    } values[] = {{"entry0", FCC_PROBLEM_NONE}, {"entry1", FCC_PROBLEM_NONE},
                  {"entry2", FCC_PROBLEM_NONE}, {"entry2_format1", FCC_PROBLEM_NONE},
                  {"entry3", FCC_PROBLEM_NONE}, {"entry4", FCC_PROBLEM_NONE},
                  {"entry0_truncated", FCC_PROBLEM_TRUNCATED},
                  {"entry0_bad_checksum", FCC_PROBLEM_CHECKSUM}};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        size_t n;
        const uint8_t *v = read_seed("fuzz_cache_value", values[i].name, &n);
        fcc_entry_info info;
        fcc_problem pr = fcc_decode_value(v, n, NULL, &info);
        cr_assert_eq(pr, values[i].want, "%s: %s", values[i].name, fcc_problem_name(pr));
        cr_assert_eq(info.value_size, n);
        if (pr != FCC_PROBLEM_NONE) continue;
        cr_assert(strcmp(info.kernel_name, "") != 0 && strcmp(info.arch, "") != 0);
        fcc_key own = info.key, other = info.key;
        other.bytes[15] ^= 1;
        cr_assert_eq(fcc_decode_value(v, n, &own, NULL), FCC_PROBLEM_NONE);
        cr_assert_eq(fcc_decode_value(v, n, &other, NULL), FCC_PROBLEM_KEY);
        if (strcmp(values[i].name, "entry2_format1") == 0) cr_assert_str_eq(info.summary, "");
    }
    cr_assert_eq(fcc_decode_value("FCC", 3, NULL, NULL), FCC_PROBLEM_TRUNCATED);
    cr_assert_eq(fcc_decode_value("not an entry", 12, NULL, NULL), FCC_PROBLEM_MAGIC);

    const char *dir = make_tmp();
    static const char *const exports[] = {"all.fcx", "all_format1.fcx", "one.fcx", "empty.fcx",
                                          "all_signed.fcx"};
    for (size_t i = 0; i < sizeof exports / sizeof exports[0]; i++) {
        char file[1024], name[8], msg[512];
        snprintf(file, sizeof file, "%s/fuzz/corpus/fuzz_cache_import/%s", FUSEC_SOURCE_DIR,
                 exports[i]);
        snprintf(name, sizeof name, "c%zu", i);
        const char *key = strstr(exports[i], "signed") ? "fusec fuzz key (not a secret)" : NULL;
        cr_assert_eq(import_into(dir, name, file, key, msg, sizeof msg), FC_OK, "%s: %s",
                     exports[i], msg);
    }
}

/* A cap smaller than what a program uses: its own kernels are evicted; counted (and said once
 * on stderr). */
Test(cache, cap_smaller_than_the_working_set_is_noticed) {
    const char *dir = make_tmp();
    fcc_cache *c = open_cache(dir, 64u << 10, 256u << 10, 0);
    for (uint32_t i = 0; i < 16; i++) {
        kernel k;
        make_kernel(&k, i, 40000);
        fcc_entry e;
        bool found;
        cr_assert_eq(fcc_get(c, &k.key, &e, &found), FC_OK);
        cr_assert_eq(put_kernel(c, &k, i), FC_OK, "%s", fcc_errmsg(c));
    }
    fcc_stats s = stats_of(c);
    cr_assert_gt(s.evictions, 0);
    cr_assert_gt(s.evicted_own, 0);
    fcc_close(c);
}

Test(cache, cache_max_too_small_says_so) {
    const char *dir = make_tmp();
    fcc_options o = fcc_options_default();
    o.dir = dir;
    fcc_cache *c;
    setenv("FUSEC_CACHE_MAX", "1", 1);
    cr_assert_eq(fcc_open(&o, &c), FC_OK);
    unsetenv("FUSEC_CACHE_MAX");
    cr_assert_eq(stats_of(c).map_cap, FCC_MIN_MAX_MAP_SIZE);
    const char *w = fcc_take_warning(c);
    cr_assert(w && strstr(w, "FUSEC_CACHE_MAX=\"1\" is smaller than the least usable"), "%s",
              w ? w : "(none)");
    cr_assert(fcc_is_persistent(c));
    fcc_close(c);
}

/* A full disk: a tmpfs of 160 KiB in a mount namespace of a child's own (root only; skipped
 * elsewhere). The put fails with a message that says so; the kernel is still found. */
Test(cache, full_disk_is_a_clear_message_and_the_kernel_stays_in_memory) {
    const char *dir = make_tmp();
    char mnt[512];
    snprintf(mnt, sizeof mnt, "%s", path_in(dir, "small"));
    cr_assert_eq(mkdir(mnt, 0755), 0);
    int pfd[2];
    cr_assert_eq(pipe(pfd), 0);
    pid_t pid = fork();
    if (pid == 0) {
        close(pfd[0]);
        char msg[600] = "";
        int rc = 0;
        if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
            mount("tmpfs", mnt, "tmpfs", 0, "size=160k") != 0) {
            rc = 77;
        } else {
            fcc_cache *c = child_open(mnt, 64u << 10, 64u << 20);
            fc_status st = FC_OK;
            kernel k;
            uint32_t i;
            for (i = 0; i < 64 && st == FC_OK; i++) {
                make_kernel(&k, i, 20000);
                st = put_kernel(c, &k, i);
            }
            snprintf(msg, sizeof msg, "%s", fcc_errmsg(c));
            fcc_entry e;
            bool found = false;
            fcc_get(c, &k.key, &e, &found);
            rc = st != FC_ERR_IO ? 1 : !strstr(msg, "the cache's disk is full") ? 2
                 : !found || !entry_matches(&e, &k, i - 1) ? 3 : 0;
            fcc_close(c);
        }
        if (write(pfd[1], msg, strlen(msg)) < 0) rc = 4;
        _exit(rc);
    }
    close(pfd[1]);
    char msg[600] = "";
    ssize_t got = read(pfd[0], msg, sizeof msg - 1);
    msg[got > 0 ? got : 0] = 0;
    close(pfd[0]);
    int status;
    waitpid(pid, &status, 0);
    cr_assert(WIFEXITED(status));
    if (WEXITSTATUS(status) == 77) cr_skip_test("no mount namespace here (needs root)");
    cr_assert_eq(WEXITSTATUS(status), 0, "case %d: %s", WEXITSTATUS(status), msg);
    cr_log_info("full disk: %s", msg);
}

/* SHA-256 and HMAC-SHA256 against the published vectors (FIPS 180-4 examples, RFC 4231 case 2),
 * across the padding boundary (56 bytes) and in pieces. */
static void hex_of(const uint8_t *d, char *out) {
    for (int i = 0; i < 32; i++) sprintf(out + 2 * i, "%02x", d[i]);
}

Test(cache, sha256_and_hmac_match_the_published_vectors) {
    static const struct { const char *msg, *digest; } v[] = {
        {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
        {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
    };
    char hex[65];
    uint8_t d[32];
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        fcc_sha256 s;
        fcc_sha256_init(&s);
        size_t n = strlen(v[i].msg);
        fcc_sha256_update(&s, v[i].msg, n / 3); /* in pieces */
        fcc_sha256_update(&s, v[i].msg + n / 3, n - n / 3);
        fcc_sha256_final(&s, d);
        hex_of(d, hex);
        cr_assert_str_eq(hex, v[i].digest, "message %zu", i);
    }
    fcc_hmac m;
    fcc_hmac_init(&m, (const uint8_t *)"Jefe", 4);
    fcc_hmac_update(&m, "what do ya want for nothing?", 28);
    fcc_hmac_final(&m, d);
    hex_of(d, hex);
    cr_assert_str_eq(hex, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}
