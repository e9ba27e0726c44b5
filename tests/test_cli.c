/*
 * test_cli.c - the fusec command line (tools/), run as a separate process: every command's
 * help, dump, graph --dot, explain, warm (twice, concurrently, killed halfway), the cache
 * commands (verify after corruption, export / import), FUSEC_REQUIRE_CACHED, and tracing.
 *
 * Every test works in a temporary directory of its own, and every fusec it starts gets
 * FUSEC_CACHE_DIR pointing there: never the user's cache. Expected values are computed
 * independently of the CLI where they can be: kernel keys from the plan and code generator
 * directly (for the trace), entries by reading the LMDB store raw, corruption made with raw
 * LMDB writes.
 */
#define _GNU_SOURCE /* memmem */
#include <criterion/criterion.h>
#include <fusec.h>

#include "cache.h"
#include "plan_entry.h"
#include "codegen.h"
#include "kcompile.h"
#include "plan.h"

#include "cli_util.h"

#include <errno.h>
#include <fcntl.h>
#include <lmdb.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define FC(name) FUSEC_TEST_DATA_DIR "/fc/" name
#define BENCH(name) FUSEC_SOURCE_DIR "/bench/fc/" name

/* ---- temporary directories ---------------------------------------------------------------- */

static cli_tmp tmp;

/* Memory the helpers hand out (paths, outputs), freed by cleanup(). */
static void *allocs[4096];
static int nallocs;

static void *track(void *p) {
    cr_assert_not_null(p);
    cr_assert_lt(nallocs, 4096);
    allocs[nallocs++] = p;
    return p;
}

static void make_tmp(void) { cli_tmp_make(&tmp, "fusec_cli_test"); }

static void cleanup(void) {
    cli_tmp_remove(&tmp);
    while (nallocs > 0) free(allocs[--nallocs]);
}

/* A path under the test's directory (a new string each call; freed by cleanup). */
static char *tmp_path(const char *name) {
    char *p = track(malloc(strlen(tmp.root) + strlen(name) + 2));
    sprintf(p, "%s/%s", tmp.root, name);
    return p;
}

static char *cache_dir(const char *name) {
    char *d = tmp_path(name);
    mkdir(d, 0755); /* fusec creates it too; tests that poll the store need it early */
    return d;
}

/* ---- running fusec ------------------------------------------------------------------------ */

static char *slurp(const char *path) { return track(cli_slurp(path)); }

/* r, its outputs to be freed by cleanup. */
static cli_result tracked(cli_result r) {
    track(r.out);
    track(r.err);
    return r;
}

/* Runs fusec with args (NULL-terminated, without the program name), the cache in `cache` and
 * `require` as FUSEC_REQUIRE_CACHED (NULL: unset each). */
static cli_result run_argv(const char *cache, const char *require, const char *const *args) {
    return tracked(cli_run(&tmp, cache, require, args));
}

/* run(cache, require, "warm", "x.fc", NULL) */
#define run(...) tracked(cli_runl(&tmp, __VA_ARGS__))

static int count_lines_starting(const char *text, const char *prefix) {
    int count = 0;
    size_t n = strlen(prefix);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        count += strncmp(p, prefix, n) == 0;
    return count;
}

static int count_substr(const char *text, const char *s) {
    int count = 0;
    for (const char *p = text; (p = strstr(p, s)); p += strlen(s)) count++;
    return count;
}

/* ---- keys ----------------------------------------------------------------------------------- */

#define MAX_KEYS 256

typedef struct keyset {
    int n;
    char hex[MAX_KEYS][33];
} keyset;

static bool keyset_has(const keyset *k, const char *hex) {
    for (int i = 0; i < k->n; i++)
        if (strcmp(k->hex[i], hex) == 0) return true;
    return false;
}

static void keyset_add(keyset *k, const char *hex) {
    if (keyset_has(k, hex)) return;
    cr_assert_lt(k->n, MAX_KEYS);
    snprintf(k->hex[k->n++], 33, "%s", hex);
}

/* Keys from `fusec dump` header lines ("// ==== kernel I of N: KIND, key HEX (ARCH)"). */
static void keys_from_dump(const char *text, keyset *k) {
    for (const char *p = text; (p = strstr(p, ", key ")); p += 6) {
        char hex[33];
        memcpy(hex, p + 6, 32);
        hex[32] = '\0';
        cr_assert_eq(strspn(hex, "0123456789abcdef"), 32, "bad key in dump: %s", hex);
        keyset_add(k, hex);
    }
}

/* Keys from `fusec cache list` (the first word of each line). */
/* Whether a `cache list` line is a plan entry's (compile/plan_entry.h): one per program and
 * arch that warm or a run wrote beside the kernels. */
static bool plan_line(const char *p) {
    const char *end = strchr(p, '\n');
    const char *hit = strstr(p, " UTC  plan entry: ");
    return hit && (!end || hit < end);
}

/* Plan entries listed. */
static int plan_lines(const char *text) {
    int n = 0;
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        n += *p != '\n' && plan_line(p);
    return n;
}

/* The kernels' keys of a `cache list` (plan entries left out) and their count. */
static void keys_from_list(const char *text, keyset *k, int *lines) {
    *lines = 0;
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        if (*p == '\n' || plan_line(p)) continue;
        char hex[33];
        memcpy(hex, p, 32);
        hex[32] = '\0';
        cr_assert_eq(strspn(hex, "0123456789abcdef"), 32, "bad list line: %.60s", p);
        keyset_add(k, hex);
        (*lines)++;
    }
}

static bool keysets_equal(const keyset *a, const keyset *b) {
    if (a->n != b->n) return false;
    for (int i = 0; i < a->n; i++)
        if (!keyset_has(b, a->hex[i])) return false;
    return true;
}

/* ---- the store, raw ------------------------------------------------------------------------- */

/* Entries in the store's "entries" database, or with kernels_only its kernels' (plan entries
 * left out; a value that does not decode counts as a kernel's); -1 while it does not exist. */
static long raw_count(const char *dir, bool kernels_only) {
    char data[600];
    snprintf(data, sizeof data, "%s/data.mdb", dir);
    if (access(data, R_OK) != 0) return -1;
    MDB_env *env;
    cr_assert_eq(mdb_env_create(&env), 0);
    mdb_env_set_maxdbs(env, 2);
    long count = -1;
    MDB_txn *txn;
    MDB_dbi dbi;
    MDB_cursor *cur;
    MDB_val k, v;
    if (mdb_env_open(env, dir, MDB_RDONLY, 0644) == 0 &&
        mdb_txn_begin(env, NULL, MDB_RDONLY, &txn) == 0) {
        if (mdb_dbi_open(txn, FCC_DB_ENTRIES, 0, &dbi) == 0 &&
            mdb_cursor_open(txn, dbi, &cur) == 0) {
            count = 0;
            for (int op = MDB_FIRST; mdb_cursor_get(cur, &k, &v, op) == 0; op = MDB_NEXT) {
                fcc_entry_info info;
                count += !kernels_only ||
                         fcc_decode_value(v.mv_data, v.mv_size, NULL, &info) !=
                             FCC_PROBLEM_NONE ||
                         strcmp(info.kernel_name, FCK_PLAN_ENTRY_NAME) != 0;
            }
            mdb_cursor_close(cur);
        }
        mdb_txn_abort(txn);
    }
    mdb_env_close(env);
    return count;
}

static long raw_entry_count(const char *dir) { return raw_count(dir, false); }
static long raw_kernel_count(const char *dir) { return raw_count(dir, true); }

/* Flips one payload byte of the first kernel entry (by key order; plan entries are passed
 * over); returns its key in hex. No fusec
 * process may have the store open (LMDB allows one open environment per process, and this
 * one is the test's). */
static void corrupt_first_entry(const char *dir, char hex[33]) {
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    MDB_cursor *cur;
    MDB_val k, v;
    cr_assert_eq(mdb_env_create(&env), 0);
    mdb_env_set_maxdbs(env, 2);
    cr_assert_eq(mdb_env_open(env, dir, 0, 0644), 0);
    cr_assert_eq(mdb_txn_begin(env, NULL, 0, &txn), 0);
    cr_assert_eq(mdb_dbi_open(txn, FCC_DB_ENTRIES, 0, &dbi), 0);
    cr_assert_eq(mdb_cursor_open(txn, dbi, &cur), 0);
    fcc_entry_info info;
    cr_assert_eq(mdb_cursor_get(cur, &k, &v, MDB_FIRST), 0);
    while (fcc_decode_value(v.mv_data, v.mv_size, NULL, &info) == FCC_PROBLEM_NONE &&
           strcmp(info.kernel_name, FCK_PLAN_ENTRY_NAME) == 0)
        cr_assert_eq(mdb_cursor_get(cur, &k, &v, MDB_NEXT), 0, "no kernel entry");
    cr_assert_eq(k.mv_size, 16);
    fcc_key key;
    memcpy(key.bytes, k.mv_data, 16);
    fcc_key_to_hex(&key, hex);
    cr_assert_gt(v.mv_size, FCC_ENTRY_HEADER_SIZE + 300);
    unsigned char *copy = malloc(v.mv_size);
    cr_assert_not_null(copy);
    memcpy(copy, v.mv_data, v.mv_size);
    copy[v.mv_size - 100] ^= 0x5a; /* inside the cubin */
    MDB_val nv = {v.mv_size, copy};
    mdb_cursor_close(cur);
    cr_assert_eq(mdb_put(txn, dbi, &k, &nv, 0), 0);
    cr_assert_eq(mdb_txn_commit(txn), 0);
    mdb_env_close(env);
    free(copy);
}

/* ---- help --------------------------------------------------------------------------------- */

Test(cli, every_command_has_help) {
    make_tmp();
    const char *cmds[] = {"print", "hash", "run", "dump", "graph", "explain", "warm", "cache",
                          "version", "help"};
    cli_result top = run(NULL, NULL, "--help", NULL);
    cr_assert_eq(top.code, 0);
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        char prefix[64];
        snprintf(prefix, sizeof prefix, "\n  %s ", cmds[i]);
        cr_expect(strstr(top.out, prefix), "fusec --help does not list %s", cmds[i]);
        cli_result r = run(NULL, NULL, cmds[i], "--help", NULL);
        cr_expect_eq(r.code, 0, "%s --help: exit %d", cmds[i], r.code);
        snprintf(prefix, sizeof prefix, "usage: fusec %s", cmds[i]);
        if (strcmp(cmds[i], "help") == 0) snprintf(prefix, sizeof prefix, "usage: fusec <command>");
        cr_expect_eq(strncmp(r.out, prefix, strlen(prefix)), 0, "%s --help says: %.80s", cmds[i],
                     r.out);
        cr_expect_str_empty(r.err, "%s --help wrote to stderr: %s", cmds[i], r.err);
        /* `fusec help CMD` is the same text */
        cli_result h = run(NULL, NULL, "help", cmds[i], NULL);
        cr_expect_eq(h.code, 0);
        if (strcmp(cmds[i], "help") != 0) cr_expect_str_eq(h.out, r.out);
    }
    const char *subs[] = {"stats", "list", "verify", "clear", "export", "import"};
    for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++) {
        cli_result r = run(NULL, NULL, "cache", subs[i], "--help", NULL);
        cr_expect_eq(r.code, 0);
        cr_expect(strstr(r.out, subs[i]) && strncmp(r.out, "usage: fusec cache", 18) == 0);
    }
    /* The documented codes are listed. */
    cr_expect(strstr(top.out, "5 compile error") && strstr(top.out, "6 bad cache"));
    /* Errors: prefixed messages on stderr and the usage code. */
    cli_result bad = run(NULL, NULL, "warm", "--frobnicate", FC("w01_tanh_sin.fc"), NULL);
    cr_expect_eq(bad.code, 1);
    cr_expect_eq(strncmp(bad.err, "fusec: ", 7), 0, "%s", bad.err);
    cli_result nocmd = run(NULL, NULL, "frobnicate", NULL);
    cr_expect_eq(nocmd.code, 1);
    cli_result badarch = run(NULL, NULL, "dump", "--arch", "sm_5", FC("w01_tanh_sin.fc"), NULL);
    cr_expect_eq(badarch.code, 1);
    cr_expect(strstr(badarch.err, "sm_5"), "%s", badarch.err);
    cli_result nocache = run(NULL, NULL, "cache", "frobnicate", NULL);
    cr_expect_eq(nocache.code, 1);
    cli_result missing = run(NULL, NULL, "dump", FC("no_such_file.fc"), NULL);
    cr_expect_eq(missing.code, 4);
    cleanup();
}

/* ---- dump --------------------------------------------------------------------------------- */

static const struct {
    const char *file;
    int kernels;
} bench[] = {
    {"w01_tanh_sin.fc", 1},  {"w02_poly.fc", 1},         {"w03_sum.fc", 1},
    {"w04_softmax.fc", 1},   {"w05_leaky_relu.fc", 1},   {"w06_row_l2norm.fc", 1},
    {"w07_normalize_cols.fc", 2}, {"w08_mandelbrot.fc", 1}, {"w09_box_blur.fc", 1},
    {"w10_saxpy.fc", 1},     {"w11_col_mean_scaled.fc", 1},
};
#define NBENCH (int)(sizeof bench / sizeof bench[0])

/* The dump with its "// ==== kernel" lines removed: the arch-independent part. */
static char *strip_headers(const char *text) {
    char *s = track(malloc(strlen(text) + 1)), *o = s;
    for (const char *p = text; *p;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p + 1) : strlen(p);
        if (strncmp(p, "// ==== ", 8) != 0) {
            memcpy(o, p, n);
            o += n;
        }
        p += n;
    }
    *o = '\0';
    return s;
}

Test(cli, dump_prints_each_kernel_of_the_bench_programs) {
    make_tmp();
    for (int i = 0; i < NBENCH; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/bench/fc/%s", FUSEC_SOURCE_DIR, bench[i].file);
        cli_result r = run(NULL, NULL, "dump", path, NULL);
        cr_assert_eq(r.code, 0, "%s: exit %d: %s", bench[i].file, r.code, r.err);
        cr_expect_eq(count_lines_starting(r.out, "// ==== kernel "), bench[i].kernels,
                     "%s: %d kernels", bench[i].file,
                     count_lines_starting(r.out, "// ==== kernel "));
        cr_expect_eq(count_substr(r.out, "extern \"C\" __global__"), bench[i].kernels, "%s",
                     bench[i].file);
        keyset ks = {0};
        keys_from_dump(r.out, &ks);
        cr_expect_eq(ks.n, bench[i].kernels, "%s: %d distinct keys", bench[i].file, ks.n);
        char want[64];
        snprintf(want, sizeof want, "// ==== kernel %d of %d: ", bench[i].kernels - 1,
                 bench[i].kernels);
        cr_expect(strstr(r.out, want), "%s", bench[i].file);
        cr_expect(count_substr(r.out, "(sm_90)\n") == bench[i].kernels, "default arch sm_90");
        /* Deterministic; another arch changes the keys, not the source. */
        cli_result again = run(NULL, NULL, "dump", path, NULL);
        cr_expect_str_eq(again.out, r.out, "%s: two dumps differ", bench[i].file);
        cli_result other = run(NULL, NULL, "dump", "--arch", "sm_80", path, NULL);
        cr_assert_eq(other.code, 0);
        keyset ko = {0};
        keys_from_dump(other.out, &ko);
        for (int k = 0; k < ko.n; k++) cr_expect(!keyset_has(&ks, ko.hex[k]));
        char *a = strip_headers(r.out), *b = strip_headers(other.out);
        cr_expect_str_eq(a, b, "%s: the source depends on --arch", bench[i].file);
        /* --no-prelude leaves the kernel itself */
        cli_result np = run(NULL, NULL, "dump", "--no-prelude", path, NULL);
        cr_expect_eq(np.code, 0);
        cr_expect_eq(count_substr(r.out, "#endif /* FCX_PRELUDE_CUH */"), bench[i].kernels);
        cr_expect_eq(count_substr(np.out, "FCX_PRELUDE_CUH"), 0);
        cr_expect_eq(count_substr(np.out, "[the device prelude"), bench[i].kernels);
        cr_expect_eq(count_substr(np.out, "extern \"C\" __global__"), bench[i].kernels);
    }
    /* Unbound symbols are named. */
    cli_result unbound = run(NULL, NULL, "dump", FUSEC_SOURCE_DIR "/examples/fc/softmax.fc", NULL);
    cr_expect_eq(unbound.code, 2);
    cr_expect(strstr(unbound.err, "'n'") && strstr(unbound.err, "--set"), "%s", unbound.err);
    cleanup();
}

/* ---- graph --dot -------------------------------------------------------------------------- */

/* Checks DOT text: one digraph, braces balanced outside strings, every edge between declared
 * nodes. Returns the number of kernel clusters of the first program. */
static int check_dot(const char *dot, const char *what) {
    cr_assert_eq(strncmp(dot, "digraph ", 8), 0, "%s: %.40s", what, dot);
    int depth = 0, max_depth = 0;
    bool in_str = false;
    for (const char *p = dot; *p; p++) {
        if (in_str) {
            if (*p == '\\' && p[1]) p++;
            else if (*p == '"') in_str = false;
            continue;
        }
        if (*p == '"') in_str = true;
        else if (*p == '{') depth++, max_depth = depth > max_depth ? depth : max_depth;
        else if (*p == '}') {
            depth--;
            cr_assert_geq(depth, 0, "%s: unbalanced braces", what);
        }
    }
    cr_assert(!in_str, "%s: unterminated string", what);
    cr_assert_eq(depth, 0, "%s: unbalanced braces", what);
    cr_assert_geq(max_depth, 2, "%s: no cluster", what);
    /* Nodes declared "  ID [" and edges "  A -> B" (ids are p<P>[k<K>]n<N>). */
    char *decl[4096];
    int ndecl = 0;
    for (const char *p = dot; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        const char *s = p + strspn(p, " ");
        if (*s != 'p') continue;
        size_t idlen = strspn(s, "pkn0123456789");
        const char *after = s + idlen;
        if (strncmp(after, " [", 2) == 0) {
            cr_assert_lt(ndecl, 4096);
            decl[ndecl++] = strndup(s, idlen);
        }
    }
    for (const char *p = dot; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        const char *s = p + strspn(p, " ");
        const char *arrow = strstr(s, " -> ");
        const char *nl = strchr(s, '\n');
        if (*s != 'p' || !arrow || (nl && arrow > nl)) continue;
        char *a = strndup(s, (size_t)(arrow - s));
        const char *t = arrow + 4;
        char *b = strndup(t, strspn(t, "pkn0123456789"));
        bool da = false, db = false;
        for (int i = 0; i < ndecl; i++) {
            da |= strcmp(decl[i], a) == 0;
            db |= strcmp(decl[i], b) == 0;
        }
        cr_expect(da && db, "%s: edge %s -> %s between undeclared nodes", what, a, b);
        free(a);
        free(b);
    }
    for (int i = 0; i < ndecl; i++) free(decl[i]);
    return count_substr(dot, "subgraph cluster_p0k");
}

Test(cli, graph_dot_is_well_formed) {
    make_tmp();
    for (int i = 0; i < NBENCH; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/bench/fc/%s", FUSEC_SOURCE_DIR, bench[i].file);
        cli_result r = run(NULL, NULL, "graph", "--dot", path, NULL);
        cr_assert_eq(r.code, 0, "%s: %s", bench[i].file, r.err);
        cr_expect_eq(check_dot(r.out, bench[i].file), bench[i].kernels, "%s", bench[i].file);
        /* The text form lists the same kernels. */
        cli_result t = run(NULL, NULL, "graph", path, NULL);
        cr_assert_eq(t.code, 0);
        cr_expect_eq(count_lines_starting(t.out, "kernel "), bench[i].kernels);
    }
    /* A kernel too big to lay out (W8: hundreds of nodes) is one node counting its ops. */
    cli_result w8 = run(NULL, NULL, "graph", "--dot", BENCH("w08_mandelbrot.fc"), NULL);
    cr_assert_eq(w8.code, 0);
    cr_expect(strstr(w8.out, "  p0k0 [label=\"") && strstr(w8.out, " fused ops:\\n"), "%s",
              w8.out);
    cr_expect(strstr(w8.out, "where x"), "%s", w8.out);
    /* W7's boundary edges carry the reason; nodes carry op, dtype and shape. */
    cli_result w7 = run(NULL, NULL, "graph", "--dot", FC("w07_normalize_cols.fc"), NULL);
    cr_assert_eq(w7.code, 0);
    cr_expect_eq(count_substr(w7.out, "[color=red"), 2, "%s", w7.out);
    cr_expect(strstr(w7.out, "label=\"reduced axes are not the trailing"), "%s", w7.out);
    cr_expect(strstr(w7.out, "mean\\nf32 [12]"), "%s", w7.out);
    cr_expect_eq(count_substr(w7.out, " -> "), 6, "%s", w7.out);
    cr_expect(!strstr(w7.out, "fused ops:"));
    /* Several programs: one cluster per program around its kernels. */
    cli_result multi = run(NULL, NULL, "graph", "--dot", FC("w07_normalize_cols.fc"),
                           FC("w04_softmax.fc"), NULL);
    cr_assert_eq(multi.code, 0);
    check_dot(multi.out, "two programs");
    cr_expect_eq(count_substr(multi.out, "subgraph cluster_p0k"), 2);
    cr_expect_eq(count_substr(multi.out, "subgraph cluster_p1k"), 1);
    cr_expect_eq(count_substr(multi.out, "subgraph cluster_p0 {"), 1);
    cleanup();
}

/* ---- explain ------------------------------------------------------------------------------ */

Test(cli, explain_names_boundary_reasons_and_differing_key_fields) {
    make_tmp();
    char *cache = cache_dir("cache");
    cli_result w =
        run(cache, NULL, "warm", "-q", "--arch", "sm_80", FC("w07_normalize_cols.fc"), NULL);
    cr_assert_eq(w.code, 0, "%s", w.err);
    cr_assert_eq(cli_field(w.out, "compiled"), 2, "%s", w.out);

    cli_result e =
        run(cache, NULL, "explain", "--arch", "sm_90", FC("w07_normalize_cols.fc"), NULL);
    cr_assert_eq(e.code, 0, "%s", e.err);
    cr_expect(strstr(e.out, "kernel 0 -> kernel 1: mean f32[12] is stored: reduced axes are not "
                            "the trailing (row) axes"), "%s", e.out);
    cr_expect(strstr(e.out, "kernel 0 -> kernel 1: std f32[12] is stored"), "%s", e.out);
    cr_expect_eq(count_substr(e.out, ": not cached (key "), 2, "%s", e.out);
    cr_expect_eq(count_substr(e.out, "arch (sm_90 wanted, sm_80 cached)"), 2, "%s", e.out);
    cr_expect_eq(count_substr(e.out, "differs in"), 2);

    cli_result hit =
        run(cache, NULL, "explain", "--arch", "sm_80", FC("w07_normalize_cols.fc"), NULL);
    cr_assert_eq(hit.code, 0);
    cr_expect_eq(count_substr(hit.out, ": cached (key "), 2, "%s", hit.out);

    /* A boundary that exists only because an array was asked for as an output. */
    char *ob = tmp_path("output_boundary.fc");
    FILE *f = fopen(ob, "w");
    cr_assert_not_null(f);
    fputs("x = input f32 [16, 32]\nm = max(x, axis=1, keepdims=true)\ny = exp(x - m)\n"
          "out m, y\n", f);
    fclose(f);
    cli_result o = run(cache, NULL, "explain", ob, NULL);
    cr_assert_eq(o.code, 0, "%s", o.err);
    cr_expect(strstr(o.out, "kernel 0 -> kernel 1: max f32[16, 1] is stored: it is asked for "
                            "as an output"), "%s", o.out);
    /* A program that is one kernel has no boundary. */
    cli_result one = run(cache, NULL, "explain", FC("w04_softmax.fc"), NULL);
    cr_assert_eq(one.code, 0);
    cr_expect(strstr(one.out, "boundaries: none (the program is one kernel)"), "%s", one.out);
    cr_expect(strstr(one.out, "the cache") || strstr(one.out, "differs in"), "%s", one.out);
    cleanup();
}

/* ---- warm --------------------------------------------------------------------------------- */

static const char *const small_programs[] = {
    FC("w01_tanh_sin.fc"), FC("w02_poly.fc"), FC("w03_sum.fc"), FC("w04_softmax.fc"),
    FC("w05_leaky_relu.fc"), FC("w06_row_l2norm.fc"), FC("w07_normalize_cols.fc"),
    FC("w08_mandelbrot.fc"), FC("w09_box_blur.fc"), FC("w10_saxpy.fc"),
    FC("w11_col_mean_scaled.fc"),
};
#define NSMALL (int)(sizeof small_programs / sizeof small_programs[0])

/* args: the command and its options, then every small program. */
static cli_result run_with_programs(const char *cache, const char *require, const char *const *opts,
                                int nprog) {
    const char *args[64];
    int n = 0;
    for (; *opts; opts++) args[n++] = *opts;
    for (int i = 0; i < nprog; i++) args[n++] = small_programs[i];
    args[n] = NULL;
    return run_argv(cache, require, args);
}

/* The distinct keys of the first nprog small programs for arch, from dump. */
static void expected_keys(int nprog, const char *arch, keyset *ks) {
    const char *opts[] = {"dump", "--no-prelude", "--arch", arch, NULL};
    cli_result d = run_with_programs(NULL, NULL, opts, nprog);
    cr_assert_eq(d.code, 0, "%s", d.err);
    keys_from_dump(d.out, ks);
}

Test(cli, warm_twice_compiles_nothing_the_second_time) {
    make_tmp();
    char *cache = cache_dir("cache");
    keyset want = {0};
    expected_keys(NSMALL, "sm_90", &want);
    cr_assert_eq(want.n, 12); /* W7 has two kernels; no two programs share one */
    const char *opts[] = {"warm", "-j", "2", NULL};
    cli_result first = run_with_programs(cache, NULL, opts, NSMALL);
    cr_assert_eq(first.code, 0, "%s", first.err);
    cr_expect_eq(cli_field(first.out, "programs"), NSMALL);
    cr_expect_eq(cli_field(first.out, "compiled"), want.n, "%s", first.out);
    cr_expect_eq(cli_field(first.out, "already cached"), 0);
    cr_expect_eq(cli_field(first.out, "failed"), 0);
    cli_result second = run_with_programs(cache, NULL, opts, NSMALL);
    cr_assert_eq(second.code, 0, "%s", second.err);
    cr_expect_eq(cli_field(second.out, "compiled"), 0, "%s", second.out);
    cr_expect_eq(cli_field(second.out, "already cached"), want.n);
    cr_expect_lt(second.secs, 0.25 * first.secs, "second warm %.3f s, first %.3f s", second.secs,
                 first.secs);
    cr_log_info("warm of %d kernels: %.3f s; again: %.3f s", want.n, first.secs, second.secs);
    /* The store holds exactly those keys. */
    cli_result l = run(cache, NULL, "cache", "list", NULL);
    cr_assert_eq(l.code, 0);
    keyset got = {0};
    int lines;
    keys_from_list(l.out, &got, &lines);
    cr_expect_eq(lines, want.n);
    cr_expect(keysets_equal(&got, &want));
    cli_result s = run(cache, NULL, "cache", "stats", NULL);
    cr_assert_eq(s.code, 0);
    /* Beside the kernels, a plan entry per program (each has a generated kernel). */
    int plans = plan_lines(l.out);
    cr_expect_eq(plans, NSMALL, "%s", l.out);
    cr_expect_eq(cli_field(s.out, "entries"), want.n + plans, "%s", s.out);
    char split[64];
    snprintf(split, sizeof split, "(%d kernels, %d plan entries)", want.n, plans);
    cr_expect(strstr(s.out, split), "no '%s' in:\n%s", split, s.out);
    /* A duplicated program compiles once. */
    const char *dup[] = {"warm",           "-q", "--arch", "sm_80", small_programs[0],
                         small_programs[0], NULL};
    cli_result d = run_argv(cache, NULL, dup);
    cr_assert_eq(d.code, 0);
    cr_expect_eq(cli_field(d.out, "compiled"), 1, "%s", d.out);
    cr_expect(strstr(d.out, "1 duplicate kernel skipped"), "%s", d.out);
    cleanup();
}

Test(cli, concurrent_warms_store_one_entry_per_key) {
    make_tmp();
    char *cache = cache_dir("cache");
    enum { NPROC = 8, NPROG = 4 };
    keyset want = {0};
    expected_keys(NPROG, "sm_90", &want);
    const char *opts[] = {"warm", "-q", "-j", "1", NULL};
    const char *args[16];
    int n = 0;
    for (const char *const *o = opts; *o; o++) args[n++] = *o;
    for (int i = 0; i < NPROG; i++) args[n++] = small_programs[i];
    args[n] = NULL;
    cli_proc procs[NPROC];
    for (int i = 0; i < NPROC; i++) procs[i] = cli_spawn(&tmp, cache, NULL, args);
    long compiled = 0;
    for (int i = 0; i < NPROC; i++) {
        cli_result r = tracked(cli_wait(&procs[i]));
        cr_expect_eq(r.code, 0, "process %d: exit %d: %s", i, r.code, r.err);
        cr_expect_eq(cli_field(r.out, "compiled") + cli_field(r.out, "already cached"), want.n,
                     "%s", r.out);
        compiled += cli_field(r.out, "compiled");
    }
    cr_expect_geq(compiled, want.n);
    cr_log_info("8 concurrent warms of %d kernels compiled %ld in all", want.n, compiled);
    cli_result l = run(cache, NULL, "cache", "list", NULL);
    cr_assert_eq(l.code, 0);
    keyset got = {0};
    int lines;
    keys_from_list(l.out, &got, &lines);
    cr_expect_eq(lines, want.n, "%s", l.out);
    cr_expect(keysets_equal(&got, &want));
    cr_expect_eq(raw_kernel_count(cache), want.n);
    cli_result v = run(cache, NULL, "cache", "verify", NULL);
    cr_expect_eq(v.code, 0, "%s%s", v.out, v.err);
    cleanup();
}

/* A sort has no generated kernel, but warm builds its module (one per element dtype and
 * arch), so that a run on that GPU compiles nothing; a second warm finds it cached. */
Test(cli, warm_builds_the_sort_modules) {
    make_tmp();
    char *cache = cache_dir("sorts");
    const char *opts[] = {"warm", "-q", "--arch", "sm_90", BENCH("i11_sort.fc"),
                          BENCH("i11_argsort.fc"), NULL};
    cli_result first = run_argv(cache, NULL, opts);
    cr_assert_eq(first.code, 0, "%s", first.err);
    cr_expect_eq(cli_field(first.out, "compiled"), 1, "%s", first.out); /* f32, both programs */
    cr_expect_eq(cli_field(first.out, "already cached"), 1, "%s", first.out);
    cli_result second = run_argv(cache, NULL, opts);
    cr_assert_eq(second.code, 0, "%s", second.err);
    cr_expect_eq(cli_field(second.out, "compiled"), 0, "%s", second.out);
    cli_result l = run(cache, NULL, "cache", "list", NULL);
    cr_assert_eq(l.code, 0);
    cr_expect(strstr(l.out, "raw module") != NULL, "%s", l.out);
}

/* cholesky (and qr) run fusec's triangle copy kernels beside cuSOLVER: warm builds their one
 * module, so that a run on that GPU compiles nothing; a second warm finds it cached. */
Test(cli, warm_builds_the_triangle_module) {
    make_tmp();
    char *cache = cache_dir("tri");
    const char *opts[] = {"warm", "-q", "--arch", "sm_90", BENCH("i12_cholesky.fc"), NULL};
    cli_result first = run_argv(cache, NULL, opts);
    cr_assert_eq(first.code, 0, "%s", first.err);
    cr_expect_eq(cli_field(first.out, "compiled"), 1, "%s", first.out);
    cli_result second = run_argv(cache, NULL, opts);
    cr_assert_eq(second.code, 0, "%s", second.err);
    cr_expect_eq(cli_field(second.out, "compiled"), 0, "%s", second.out);
    cr_expect_eq(cli_field(second.out, "already cached"), 1, "%s", second.out);
    cli_result l = run(cache, NULL, "cache", "list", NULL);
    cr_assert_eq(l.code, 0);
    cr_expect(strstr(l.out, "raw module") != NULL, "%s", l.out);
}

/* A stack of small matrices takes the batched linear algebra (backend/cuda_batched.c): warm
 * builds its helper module beside cholesky's triangle copy, so that a run on that GPU
 * compiles nothing; with FUSEC_LINALG_BATCHED=0, as for the single large matrix of
 * i12_cholesky.fc above, the triangle module alone. */
Test(cli, warm_builds_the_batched_module) {
    make_tmp();
    char *prog = tmp_path("stack.fc");
    FILE *f = fopen(prog, "w");
    cr_assert_not_null(f);
    fputs("a = input f64 [1000, 4, 4]\n"
          "b = input f64 [1000, 4, 2]\n"
          "x = linalg.solve(a, b)\n"
          "l = linalg.cholesky(a)\n"
          "out x, l\n",
          f);
    cr_assert_eq(fclose(f), 0);
    const char *opts[] = {"warm", "-q", "--arch", "sm_90", prog, NULL};
    char *cache = cache_dir("batched");
    cli_result first = run_argv(cache, NULL, opts);
    cr_assert_eq(first.code, 0, "%s", first.err);
    /* the batched module for solve and for cholesky (the second finds it), the triangle's */
    cr_expect_eq(cli_field(first.out, "compiled"), 2, "%s", first.out);
    cr_expect_eq(cli_field(first.out, "already cached"), 1, "%s", first.out);
    cli_result second = run_argv(cache, NULL, opts);
    cr_assert_eq(second.code, 0, "%s", second.err);
    cr_expect_eq(cli_field(second.out, "compiled"), 0, "%s", second.out);
    cr_expect_eq(cli_field(second.out, "already cached"), 3, "%s", second.out);
    setenv("FUSEC_LINALG_BATCHED", "0", 1);
    cli_result off = run_argv(cache_dir("batched_off"), NULL, opts);
    unsetenv("FUSEC_LINALG_BATCHED");
    cr_assert_eq(off.code, 0, "%s", off.err);
    cr_expect_eq(cli_field(off.out, "compiled"), 1, "%s", off.out);
    cr_expect_eq(cli_field(off.out, "already cached"), 0, "%s", off.out);
    cleanup();
}

Test(cli, warm_killed_midway_leaves_a_valid_cache) {
    make_tmp();
    char *cache = cache_dir("cache");
    enum { NPROG = 5 };
    keyset want = {0};
    expected_keys(NPROG, "sm_80", &want);
    expected_keys(NPROG, "sm_86", &want);
    expected_keys(NPROG, "sm_90", &want);
    cr_assert_eq(want.n, 3 * NPROG);
    const char *opts[] = {"warm", "-q", "-j", "1", "--arch", "sm_80,sm_86,sm_90", NULL};
    const char *args[16];
    int n = 0;
    for (const char *const *o = opts; *o; o++) args[n++] = *o;
    for (int i = 0; i < NPROG; i++) args[n++] = small_programs[i];
    args[n] = NULL;
    cli_proc proc = cli_spawn(&tmp, cache, NULL, args);
    /* Kill it as soon as the first entry is committed. */
    double t0 = cli_now();
    long seen = -1;
    while (cli_now() - t0 < 60) {
        seen = raw_entry_count(cache);
        if (seen >= 1) break;
        usleep(2000);
    }
    kill(proc.pid, SIGKILL);
    int code = tracked(cli_wait(&proc)).code;
    cr_assert_eq(code, 128 + SIGKILL, "the warm ended by itself (exit %d) before it was killed",
                 code);
    long left = raw_entry_count(cache);
    cr_assert_geq(left, 1);
    cr_assert_lt(left, want.n, "the warm had finished");
    cli_result v = run(cache, NULL, "cache", "verify", NULL);
    cr_expect_eq(v.code, 0, "%s%s", v.out, v.err);
    cr_expect_eq(cli_field(v.out, "bad"), 0);
    cr_expect_eq(cli_field(v.out, "checked"), left);
    /* The next warm finishes the job. */
    cli_result w = run_argv(cache, NULL, args);
    cr_assert_eq(w.code, 0, "%s", w.err);
    cr_expect_eq(cli_field(w.out, "compiled"), want.n - left, "%s", w.out);
    cr_expect_eq(cli_field(w.out, "already cached"), left);
    cr_log_info("killed after %ld of %d entries", left, want.n);
    cleanup();
}

/* ---- cache verify / corruption ------------------------------------------------------------ */

Test(cli, corrupted_entry_is_reported_and_recompiled) {
    make_tmp();
    char *cache = cache_dir("cache");
    const char *opts[] = {"warm", "-q", NULL};
    cli_result w = run_with_programs(cache, NULL, opts, 2);
    cr_assert_eq(w.code, 0, "%s", w.err);
    cr_assert_eq(cli_field(w.out, "compiled"), 2);
    cli_result ok = run(cache, NULL, "cache", "verify", NULL);
    cr_assert_eq(ok.code, 0, "%s", ok.err);
    cr_expect_eq(cli_field(ok.out, "checked"), 4, "2 kernels and 2 plan entries: %s", ok.out);

    char hex[33];
    corrupt_first_entry(cache, hex);
    cli_result v = run(cache, NULL, "cache", "verify", NULL);
    cr_expect_eq(v.code, 6, "%s%s", v.out, v.err);
    char line[64];
    snprintf(line, sizeof line, "bad %s: ", hex);
    cr_expect(strstr(v.out, line), "%s", v.out);
    cr_expect_eq(cli_field(v.out, "bad"), 1);
    cli_result l = run(cache, NULL, "cache", "list", NULL);
    cr_expect_eq(l.code, 0);
    cr_expect(strstr(l.out, hex), "%s", l.out);

    /* A lookup treats it as a miss: the next warm compiles it again, and all is well. */
    cli_result again = run_with_programs(cache, NULL, opts, 2);
    cr_assert_eq(again.code, 0, "%s", again.err);
    cr_expect_eq(cli_field(again.out, "compiled"), 1, "%s", again.out);
    cr_expect_eq(cli_field(again.out, "already cached"), 1);
    cli_result v2 = run(cache, NULL, "cache", "verify", NULL);
    cr_expect_eq(v2.code, 0, "%s%s", v2.out, v2.err);

    /* --delete-bad removes it instead. */
    corrupt_first_entry(cache, hex);
    cli_result d = run(cache, NULL, "cache", "verify", "--delete-bad", NULL);
    cr_expect_eq(d.code, 0, "%s%s", d.out, d.err);
    cr_expect_eq(cli_field(d.out, "deleted"), 1, "%s", d.out);
    cr_expect_eq(raw_kernel_count(cache), 1);
    cli_result c = run(cache, NULL, "cache", "clear", NULL);
    cr_expect_eq(c.code, 0);
    cr_expect_eq(raw_entry_count(cache), 0);
    cleanup();
}

/* warm writes each program's plan entry for every arch asked for, GPU or none here; another
 * process finds it (explain reports it per arch), and a run that compiles the program writes
 * it too. */
Test(cli, warm_writes_plan_entries_for_every_arch) {
    make_tmp();
    char *cache = cache_dir("cache");
    /* A product alone is a library call: nothing generated, no plan entry. */
    char *matmul = tmp_path("matmul.fc");
    FILE *f = fopen(matmul, "w");
    cr_assert_not_null(f);
    fputs("a = input f32 [64, 64]\nb = input f32 [64, 64]\ny = a @ b\nout y\n", f);
    fclose(f);
    cli_result miss = run(cache, NULL, "explain", "--arch", "sm_86", FC("w04_softmax.fc"), NULL);
    cr_assert_eq(miss.code, 0, "%s", miss.err);
    cr_expect(strstr(miss.out, "plan entry (sm_86): not cached"), "%s", miss.out);
    cli_result w = run(cache, NULL, "warm", "-q", "--arch", "sm_80,sm_86", FC("w04_softmax.fc"),
                       FC("w07_normalize_cols.fc"), matmul, NULL);
    cr_assert_eq(w.code, 0, "%s", w.err);
    const char *archs[] = {"sm_80", "sm_86"};
    for (int a = 0; a < 2; a++) {
        char want[64];
        snprintf(want, sizeof want, "plan entry (%s): cached", archs[a]);
        cli_result e = run(cache, NULL, "explain", "--arch", archs[a], FC("w04_softmax.fc"),
                           FC("w07_normalize_cols.fc"), NULL);
        cr_assert_eq(e.code, 0, "%s", e.err);
        const char *first = strstr(e.out, want);
        cr_expect(first && strstr(first + 1, want), "both programs' entries for %s:\n%s",
                  archs[a], e.out);
    }
    cli_result e = run(cache, NULL, "explain", "--arch", "sm_90", FC("w04_softmax.fc"), matmul,
                       NULL);
    cr_expect(strstr(e.out, "plan entry (sm_90): not cached"), "not warmed for sm_90:\n%s",
              e.out);
    cr_expect(strstr(e.out, "plan entry (sm_90): none needed (no generated kernel)"), "%s",
              e.out);
    /* 2 programs with kernels x 2 archs; the matmul is a library call alone: none */
    cli_result l = run(cache, NULL, "cache", "list", NULL);
    cr_expect_eq(plan_lines(l.out), 4, "%s", l.out);
    cli_result s = run(cache, NULL, "cache", "stats", NULL);
    cr_expect(strstr(s.out, "(6 kernels, 4 plan entries)"), "%s", s.out); /* 3 a arch */
    cli_result v = run(cache, NULL, "cache", "verify", NULL);
    cr_expect_eq(v.code, 0, "%s%s", v.out, v.err);
    cr_expect_eq(cli_field(v.out, "checked"), 10, "%s", v.out);
    cleanup();
}

Test(cli, require_cached_turns_a_miss_into_exit_5) {
    make_tmp();
    char *cache = cache_dir("cache");
    cli_result w = run(cache, NULL, "warm", "-q", "--arch", "sm_80", FC("w04_softmax.fc"), NULL);
    cr_assert_eq(w.code, 0, "%s", w.err);
    cr_assert_eq(cli_field(w.out, "compiled"), 1);
    cli_result miss = run(cache, "1", "warm", "-q", "--arch", "sm_90", FC("w04_softmax.fc"), NULL);
    cr_expect_eq(miss.code, 5, "%s", miss.err);
    cr_expect(strstr(miss.err, "FUSEC_REQUIRE_CACHED"), "%s", miss.err);
    cr_expect(strstr(miss.err, "arch (sm_90 wanted, sm_80 cached)"), "%s", miss.err);
    cr_expect_eq(cli_field(miss.out, "failed"), 1);
    cr_expect_eq(cli_field(miss.out, "compiled"), 0);
    cr_expect_eq(raw_kernel_count(cache), 1); /* nothing compiled */
    /* Cached for the arch asked for: success. "0" means off. */
    cli_result hit = run(cache, "1", "warm", "-q", "--arch", "sm_80", FC("w04_softmax.fc"), NULL);
    cr_expect_eq(hit.code, 0, "%s", hit.err);
    cr_expect_eq(cli_field(hit.out, "already cached"), 1);
    cli_result off = run(cache, "0", "warm", "-q", "--arch", "sm_90", FC("w04_softmax.fc"), NULL);
    cr_expect_eq(off.code, 0, "%s", off.err);
    cr_expect_eq(cli_field(off.out, "compiled"), 1);
    cleanup();
}

Test(cli, export_import_round_trip) {
    make_tmp();
    char *a = cache_dir("a"), *b = cache_dir("b"), *c = cache_dir("c");
    char *file = tmp_path("kernels.fcx");
    const char *opts[] = {"warm", "-q", "--arch", "sm_80,sm_90", NULL};
    cli_result w = run_with_programs(a, NULL, opts, 3);
    cr_assert_eq(w.code, 0, "%s", w.err);
    cr_assert_eq(cli_field(w.out, "compiled"), 6);
    cli_result e = run(a, NULL, "cache", "export", file, NULL);
    cr_assert_eq(e.code, 0, "%s", e.err);
    /* 6 kernels and 6 plan entries (3 programs, 2 archs) */
    cr_expect(strstr(e.out, "exported: 12 entries"), "%s", e.out);
    cli_result i = run(NULL, NULL, "cache", "import", file, "--cache-dir", b, NULL);
    cr_assert_eq(i.code, 0, "%s", i.err);
    cr_expect(strstr(i.out, "imported: 12 entries"), "%s", i.out);
    cli_result la = run(a, NULL, "cache", "list", NULL), lb = run(b, NULL, "cache", "list", NULL);
    keyset ka = {0}, kb = {0};
    int na, nb;
    keys_from_list(la.out, &ka, &na);
    keys_from_list(lb.out, &kb, &nb);
    cr_expect_eq(na, 6);
    cr_expect_eq(nb, 6);
    cr_expect(keysets_equal(&ka, &kb));
    /* The imported cache serves every kernel without compiling. */
    cli_result r = run_with_programs(b, "1", opts, 3);
    cr_expect_eq(r.code, 0, "%s", r.err);
    cr_expect_eq(cli_field(r.out, "already cached"), 6);
    cli_result v = run(b, NULL, "cache", "verify", NULL);
    cr_expect_eq(v.code, 0);
    /* A damaged export is refused whole. */
    FILE *f = fopen(file, "r+b");
    cr_assert_not_null(f);
    fseek(f, 200, SEEK_SET);
    int ch = fgetc(f);
    fseek(f, 200, SEEK_SET);
    fputc(ch ^ 0xff, f);
    fclose(f);
    cli_result bad = run(c, NULL, "cache", "import", file, NULL);
    cr_expect_eq(bad.code, 6, "%s%s", bad.out, bad.err);
    cr_expect(raw_entry_count(c) <= 0);
    cleanup();
}

/* A cache nothing was stored in yet (a fresh machine): every cache command but import finds it
 * empty, says so, exits 0 and creates nothing; the empty export it writes imports, and import
 * creates the cache. A directory that exists but holds no store is the same. */
Test(cli, cache_commands_on_a_missing_cache_report_it_empty) {
    make_tmp();
    char *parent = tmp_path("fresh"), *dir = tmp_path("fresh/fusec");
    char *file = tmp_path("empty.fcx");
    cli_result s = run(dir, NULL, "cache", "stats", NULL);
    cr_expect_eq(s.code, 0, "stats: exit %d: %s", s.code, s.err);
    cr_expect_eq(cli_field(s.out, "entries"), 0, "%s", s.out);
    cr_expect(strstr(s.err, "is empty"), "%s", s.err);
    cli_result l = run(NULL, NULL, "cache", "list", "--cache-dir", dir, NULL);
    cr_expect_eq(l.code, 0, "list: exit %d: %s", l.code, l.err);
    cr_expect_str_empty(l.out);
    cr_expect(strstr(l.err, "is empty"), "%s", l.err);
    cli_result v = run(dir, NULL, "cache", "verify", NULL);
    cr_expect_eq(v.code, 0, "verify: exit %d: %s", v.code, v.err);
    cr_expect_eq(cli_field(v.out, "checked"), 0, "%s", v.out);
    cr_expect_eq(cli_field(v.out, "bad"), 0, "%s", v.out);
    cli_result vd = run(dir, NULL, "cache", "verify", "--delete-bad", NULL);
    cr_expect_eq(vd.code, 0, "verify --delete-bad: exit %d: %s", vd.code, vd.err);
    cli_result c = run(dir, NULL, "cache", "clear", NULL);
    cr_expect_eq(c.code, 0, "clear: exit %d: %s", c.code, c.err);
    cr_expect(strstr(c.out, "cleared: 0 entries"), "%s", c.out);
    cli_result e = run(dir, NULL, "cache", "export", file, NULL);
    cr_expect_eq(e.code, 0, "export: exit %d: %s", e.code, e.err);
    cr_expect(strstr(e.out, "exported: 0 entries"), "%s", e.out);
    struct stat st;
    cr_expect_neq(stat(parent, &st), 0, "a command that stores nothing created %s", parent);
    cli_result i = run(dir, NULL, "cache", "import", file, NULL);
    cr_expect_eq(i.code, 0, "import: exit %d: %s", i.code, i.err);
    cr_expect(strstr(i.out, "imported: 0 entries"), "%s", i.out);
    cr_expect_eq(raw_entry_count(dir), 0, "import did not create the store");

    char *bare = cache_dir("bare"), data[600];
    snprintf(data, sizeof data, "%s/data.mdb", bare);
    const char *subs[] = {"stats", "list", "verify", "clear"};
    for (size_t k = 0; k < sizeof subs / sizeof subs[0]; k++) {
        cli_result r = run(bare, NULL, "cache", subs[k], NULL);
        cr_expect_eq(r.code, 0, "%s in a directory with no store: exit %d: %s", subs[k], r.code,
                     r.err);
    }
    cr_expect_neq(access(data, F_OK), 0, "a command that stores nothing created %s", data);
    cleanup();
}

/* The summary of a kernel in its line of `cache list` (the part after the time). */
static const char *summary_of(const char *list, const char *hex, char *buf, size_t size) {
    const char *line = strstr(list, hex), *at = line ? strstr(line, " UTC  ") : NULL;
    cr_assert_not_null(at, "no listed entry %s in:\n%s", hex, list);
    at += 6;
    size_t n = strcspn(at, "\n");
    cr_assert_lt(n, size);
    memcpy(buf, at, n);
    buf[n] = '\0';
    return buf;
}

/* `cache list` says what each kernel computes, from the summary stored with it at compile
 * time. The summary is no part of the key: the keys are dump's, and a program that differs
 * only in a constant (a kernel argument) finds its kernel cached. */
Test(cli, cache_list_says_what_each_kernel_computes) {
    make_tmp();
    char *cache = cache_dir("cache"), *other = cache_dir("other");
    const char *progs[] = {"warm", "-q", FC("w01_tanh_sin.fc"), FC("w03_sum.fc"),
                     FC("w04_softmax.fc"), FC("w07_normalize_cols.fc"), NULL};
    cli_result w = run_argv(cache, NULL, progs);
    cr_assert_eq(w.code, 0, "%s", w.err);
    cr_assert_eq(cli_field(w.out, "compiled"), 5, "%s", w.out);
    cli_result l = run(cache, NULL, "cache", "list", NULL);
    cr_assert_eq(l.code, 0, "%s", l.err);
    const char *want[] = {
        "elementwise: tanh(sin(x0)+c*x0)",
        "reduce over axis 0: sum(x0)",
        "row over axis 1: exp(x0-max(x0))/sum(exp(x0-max(x0)))",
        "reduce over axis 0: mean(x0); std(x0)",
        "elementwise: (x0-x1)/x2",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        char line[160];
        snprintf(line, sizeof line, " UTC  %s\n", want[i]);
        cr_expect(strstr(l.out, line), "no kernel listed as \"%s\" in:\n%s", want[i], l.out);
    }
    cr_expect_null(strstr(l.out, "fusec_kernel"), "%s", l.out);

    /* The same keys as dump computes, which knows nothing of summaries. */
    const char *dump_args[] = {"dump",   "--no-prelude", progs[2], progs[3],
                               progs[4], progs[5],       NULL};
    cli_result d = run_argv(NULL, NULL, dump_args);
    cr_assert_eq(d.code, 0, "%s", d.err);
    keyset from_dump = {0}, listed = {0};
    int lines;
    keys_from_dump(d.out, &from_dump);
    keys_from_list(l.out, &listed, &lines);
    cr_expect(keysets_equal(&from_dump, &listed));

    /* Deterministic: another cache warmed from the same programs says the same per key. */
    cli_result w2 = run_argv(other, NULL, progs);
    cr_assert_eq(w2.code, 0, "%s", w2.err);
    cli_result l2 = run(other, NULL, "cache", "list", NULL);
    for (int i = 0; i < listed.n; i++) {
        char a[256], b[256];
        cr_expect_str_eq(summary_of(l.out, listed.hex[i], a, sizeof a),
                         summary_of(l2.out, listed.hex[i], b, sizeof b));
    }

    /* Another constant: the same kernel, found in the cache. */
    char *alt = tmp_path("w01_other_constant.fc");
    FILE *f = fopen(alt, "w");
    cr_assert_not_null(f);
    fputs("x = input f32 [1000]\ny = tanh(sin(x) + 0.25 * x)\nout y\n", f);
    fclose(f);
    cli_result again = run(cache, NULL, "warm", "-q", alt, NULL);
    cr_expect_eq(again.code, 0, "%s", again.err);
    cr_expect_eq(cli_field(again.out, "already cached"), 1, "%s", again.out);
    cleanup();
}

/* ---- trace -------------------------------------------------------------------------------- */

/* Adds the keys (sm_90) of the kernels the plan of arrays compiles to. */
static void plan_keys(fc_ctx *ctx, fc_array **arrays, int n, keyset *ks) {
    fcp_plan *plan;
    cr_assert_eq(fcp_plan_build(ctx, arrays, n, &plan), FC_OK, "%s", fc_errmsg(ctx));
    for (int i = 0; i < plan->nkernel; i++) {
        fcx_kernel_src src;
        cr_assert_eq(fcx_generate(ctx, &plan->kernels[i], &src), FC_OK);
        char options[1024], msg[256];
        fcc_key_fields f;
        fcc_key key;
        cr_assert_eq(fcx_key_fields(&src, "sm_90", options, sizeof options, &f, msg, sizeof msg),
                     FC_OK);
        cr_assert_eq(fcc_key_compute(&f, &key), FC_OK);
        char hex[33];
        fcc_key_to_hex(&key, hex);
        keyset_add(ks, hex);
        fcx_kernel_src_free(ctx, &src);
    }
    fcp_plan_destroy(plan);
}

static fc_array *softmax(fc_array *x) {
    fc_array *e = fc_exp(fc_sub(x, fc_max(x, FC_AXES(1), true)));
    return fc_div(e, fc_sum(e, FC_AXES(1), true));
}

Test(cli, traced_programs_warm) {
    make_tmp();
    char *trace = tmp_path("trace.fc"), *cache = cache_dir("cache");
    keyset want = {0};
    fc_ctx_options opts;
    memset(&opts, 0, sizeof opts);
    opts.backend = FC_BACKEND_HOST;

    /* Context 1, traced with fc_set_trace: a random input evaluated first (so the softmax
     * program reads it as an input), then the softmax. */
    fc_ctx *ctx;
    unsetenv("FUSEC_TRACE");
    cr_assert_eq(fc_ctx_create(&ctx, &opts), FC_OK);
    cr_assert_eq(fc_set_trace(ctx, trace), FC_OK);
    fc_scope *s = fc_scope_open(ctx);
    fc_array *x = fc_random_uniform(ctx, FC_F32, FC_SHAPE(32, 64), 7);
    plan_keys(ctx, &x, 1, &want);
    cr_assert_eq(fc_eval(ctx, &x, 1), FC_OK);
    fc_array *y = softmax(x);
    plan_keys(ctx, &y, 1, &want);
    float head[4];
    cr_assert_eq(fc_read(y, head, 0, 4), FC_OK);
    cr_assert_eq(fc_read(y, head, 0, 4), FC_OK); /* has a value: nothing evaluated, no record */
    /* The same program on other data: the same text, written once per process. */
    fc_array *x2 = fc_random_uniform(ctx, FC_F32, FC_SHAPE(32, 64), 8);
    cr_assert_eq(fc_eval(ctx, &x2, 1), FC_OK); /* a new record: the seed differs */
    fc_array *y2 = softmax(x2);
    cr_assert_eq(fc_read(y2, head, 0, 4), FC_OK);
    plan_keys(ctx, &x2, 1, &want);
    fc_scope_close(s);
    fc_ctx_destroy(ctx);

    /* Context 2, traced through FUSEC_TRACE: host data and a two-kernel program. */
    setenv("FUSEC_TRACE", trace, 1);
    cr_assert_eq(fc_ctx_create(&ctx, &opts), FC_OK);
    unsetenv("FUSEC_TRACE");
    s = fc_scope_open(ctx);
    float data[48 * 16];
    for (int i = 0; i < 48 * 16; i++) data[i] = (float)((i * 37) % 101) / 7.0f;
    fc_array *d = fc_from_host(ctx, FC_F32, FC_SHAPE(48, 16), data);
    fc_array *z = fc_div(fc_sub(d, fc_mean(d, FC_AXES(0), false)), fc_std(d, FC_AXES(0), false, 0));
    plan_keys(ctx, &z, 1, &want);
    float zh[4];
    cr_assert_eq(fc_read(z, zh, 0, 4), FC_OK);
    fc_scope_close(s);
    fc_ctx_destroy(ctx);

    char *text = slurp(trace);
    cr_expect_eq(count_lines_starting(text, "# fusec trace: program "), 4, "%s", text);
    cr_expect_eq(count_substr(text, "\nout "), 4, "%s", text);
    cr_expect_eq(want.n, 4); /* random, softmax, W7's two */

    /* dump of the trace: exactly the kernels the runtime's plans have. */
    cli_result dmp = run(NULL, NULL, "dump", "--no-prelude", trace, NULL);
    cr_assert_eq(dmp.code, 0, "%s", dmp.err);
    cr_expect_eq(count_lines_starting(dmp.out, "// ==== program "), 4);
    keyset got = {0};
    keys_from_dump(dmp.out, &got);
    cr_expect(keysets_equal(&got, &want), "the trace's kernels differ from the evaluated ones");
    cli_result w = run(cache, NULL, "warm", trace, NULL);
    cr_assert_eq(w.code, 0, "%s", w.err);
    cr_expect_eq(cli_field(w.out, "programs"), 4, "%s", w.out);
    cr_expect_eq(cli_field(w.out, "compiled"), want.n, "%s", w.out);
    /* A broken program in a trace is reported with the file's own line number. */
    FILE *f = fopen(trace, "a");
    cr_assert_not_null(f);
    fputs("# fusec trace: program 9, pid 1\nx0 = input f32 [4]\ny0 = exp(x0 +)\nout y0\n", f);
    fclose(f);
    int lines = count_substr(text, "\n");
    cli_result bad = run(cache, NULL, "warm", trace, NULL);
    cr_expect_eq(bad.code, 2, "%s", bad.err);
    char where[64];
    snprintf(where, sizeof where, "trace.fc:%d:", lines + 3);
    cr_expect(strstr(bad.err, where), "expected %s in: %s", where, bad.err);
    cr_expect_eq(cli_field(bad.out, "already cached"), want.n, "%s", bad.out);
    /* Single-program commands refuse a trace. */
    cli_result pr = run(NULL, NULL, "print", trace, NULL);
    cr_expect_eq(pr.code, 2);
    cleanup();
}

/* An allocator that fails its Nth allocation and counts what is live. */
typedef struct failing {
    long calls, fail_at, live;
} failing;

static void *f_malloc(void *user, size_t size) {
    failing *f = user;
    if (++f->calls == f->fail_at) return NULL;
    f->live++;
    return malloc(size);
}

static void f_free(void *user, void *ptr, size_t size) {
    (void)size;
    failing *f = user;
    if (ptr) f->live--;
    free(ptr);
}

/* Tracing under allocation failure: every failing allocation leaves the evaluation's result
 * right (or a clean FC_ERR_NOMEM), the context's message untouched by the trace, and nothing
 * leaked. The program has an evaluated intermediate, so the trace rebuilds the graph. */
Test(cli, trace_survives_allocation_failures) {
    make_tmp();
    unsetenv("FUSEC_TRACE");
    int complete_records = 0;
    long tries = 0;
    /* The warnings of failed trace writes go to a file (one per context at most). */
    char *errfile = tmp_path("stderr.txt");
    fflush(stderr);
    int saved = dup(2), fe = open(errfile, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    cr_assert(saved >= 0 && fe >= 0);
    dup2(fe, 2);
    close(fe);
    for (long n = 1; n < 2000; n++) {
        failing f = {0, n, 0};
        fc_allocator alloc = {f_malloc, NULL, f_free, &f};
        fc_ctx_options opts;
        memset(&opts, 0, sizeof opts);
        opts.backend = FC_BACKEND_HOST;
        opts.allocator = &alloc;
        fc_ctx *ctx;
        if (fc_ctx_create(&ctx, &opts) != FC_OK) {
            cr_assert_eq(f.live, 0, "fail at %ld", n);
            continue;
        }
        /* A path of its own each time: a process writes each program once per file. */
        char name[64];
        snprintf(name, sizeof name, "trace%ld.fc", n);
        char *trace = tmp_path(name);
        bool traced = fc_set_trace(ctx, trace) == FC_OK;
        float v[6] = {1, 2, 3, 4, 5, 6}, out[6];
        fc_array *a = fc_from_host(ctx, FC_F32, FC_SHAPE(2, 3), v);
        fc_array *b = fc_mul(a, fc_f64(ctx, 2.0));
        fc_status st = fc_eval(ctx, &b, 1);
        fc_array *c = fc_sum(fc_exp(b), FC_AXES(1), false);
        if (st == FC_OK) st = fc_read(c, out, 0, 2);
        cr_assert(st == FC_OK || st == FC_ERR_NOMEM, "fail at %ld: %s", n, fc_strerror(st));
        if (st == FC_OK) {
            for (int r = 0; r < 2; r++) {
                double want = 0;
                for (int k = 0; k < 3; k++) want += exp(2.0 * v[3 * r + k]);
                cr_expect(fabs(out[r] - want) <= 1e-5 * want, "fail at %ld: %g vs %g", n, out[r],
                          want);
            }
        }
        fc_release(c);
        fc_release(b);
        fc_release(a);
        fc_ctx_destroy(ctx);
        cr_assert_eq(f.live, 0, "fail at %ld: %ld allocations leaked", n, f.live);
        if (traced && st == FC_OK && access(trace, R_OK) == 0) {
            char *text = slurp(trace);
            complete_records += count_substr(text, "# fusec trace:") == 2 &&
                                strstr(text, "x0 = input f32 [2, 3]\n");
        }
        if (f.calls < n) { /* nothing failed: every allocation has been tried */
            tries = n;
            break;
        }
    }
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    int warnings = count_substr(slurp(errfile), "fusec: warning: trace file ");
    cr_expect_leq(warnings, tries);
    cr_expect_gt(warnings, 0);
    cr_expect_gt(tries, 20, "the loop did not reach an allocation-free run");
    cr_expect_gt(complete_records, 0);
    cr_log_info("trace under allocation failure: %ld runs, %d complete traces", tries,
                complete_records);
    cleanup();
}

/* A trace file that cannot be written warns once and never fails an evaluation. */
Test(cli, trace_write_failure_warns_and_evaluates) {
    make_tmp();
    fc_ctx *ctx;
    fc_ctx_options opts;
    memset(&opts, 0, sizeof opts);
    opts.backend = FC_BACKEND_HOST;
    cr_assert_eq(fc_ctx_create(&ctx, &opts), FC_OK);
    char *bad = tmp_path("no/such/dir/trace.fc");
    cr_assert_eq(fc_set_trace(ctx, bad), FC_OK);
    /* Catch what goes to stderr meanwhile. */
    char *errfile = tmp_path("stderr.txt");
    fflush(stderr);
    int saved = dup(2), fe = open(errfile, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    cr_assert(saved >= 0 && fe >= 0);
    dup2(fe, 2);
    close(fe);
    fc_scope *s = fc_scope_open(ctx);
    float v[3] = {1, 2, 3}, out[3];
    fc_array *a = fc_from_host(ctx, FC_F32, FC_SHAPE(3), v);
    fc_array *b = fc_mul(a, fc_f64(ctx, 2.0));
    cr_assert_eq(fc_read(b, out, 0, 3), FC_OK);
    cr_expect(out[0] == 2 && out[1] == 4 && out[2] == 6);
    cr_expect_str_empty(fc_errmsg(ctx));
    fc_array *c = fc_add(a, fc_f64(ctx, 1.0));
    cr_assert_eq(fc_read(c, out, 0, 3), FC_OK);
    cr_expect(out[0] == 2 && out[2] == 4);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    char *err = slurp(errfile);
    cr_expect_eq(count_substr(err, "fusec: warning: trace file "), 1, "%s", err);
    cr_expect(strstr(err, "No such file or directory"), "%s", err);
    cr_assert_eq(fc_set_trace(ctx, NULL), FC_OK);
    fc_scope_close(s);
    fc_ctx_destroy(ctx);
    cr_expect_eq(access(bad, F_OK), -1);
    cleanup();
}

/* ---- issue 15: compile once across processes, trusted imports, small caps ------------------ */

/* 16 processes warm the same programs into one empty cache at once: each kernel is compiled
 * once in all (a per-key lock), and the store holds one entry per key. */
Test(cli, sixteen_concurrent_warms_compile_each_kernel_once) {
    make_tmp();
    char *cache = cache_dir("cache");
    enum { NPROC = 16 };
    keyset want = {0};
    expected_keys(NSMALL, "sm_90", &want);
    const char *args[32];
    int n = 0;
    args[n++] = "warm";
    args[n++] = "-q";
    args[n++] = "-j";
    args[n++] = "1";
    for (int i = 0; i < NSMALL; i++) args[n++] = small_programs[i];
    args[n] = NULL;
    cli_proc procs[NPROC];
    for (int i = 0; i < NPROC; i++) procs[i] = cli_spawn(&tmp, cache, NULL, args);
    long compiled = 0, cached = 0;
    for (int i = 0; i < NPROC; i++) {
        cli_result r = tracked(cli_wait(&procs[i]));
        cr_expect_eq(r.code, 0, "process %d: exit %d: %s", i, r.code, r.err);
        compiled += cli_field(r.out, "compiled");
        cached += cli_field(r.out, "already cached");
    }
    cr_log_info("%d concurrent warms of %d programs (%d kernels): %ld compiles in all, %ld "
                "found cached", NPROC, NSMALL, want.n, compiled, cached);
    cr_expect_eq(compiled, want.n, "each kernel compiled once in all");
    cr_expect_eq(compiled + cached, (long)NPROC * want.n);
    cli_result l = run(cache, NULL, "cache", "list", NULL);
    keyset got = {0};
    int lines;
    keys_from_list(l.out, &got, &lines);
    cr_expect_eq(lines, want.n, "%s", l.out);
    cr_expect(keysets_equal(&got, &want));
    cli_result v = run(cache, NULL, "cache", "verify", NULL);
    cr_expect_eq(v.code, 0, "%s%s", v.out, v.err);
    cleanup();
}

Test(cli, signed_export_and_import_refuse_what_they_should) {
    make_tmp();
    char *a = cache_dir("a"), *b = cache_dir("b");
    char *file = tmp_path("kernels.fcx"), *key = tmp_path("key"), *other = tmp_path("other");
    FILE *f = fopen(key, "w");
    fputs("a key of more than sixteen bytes\n", f);
    fclose(f);
    f = fopen(other, "w");
    fputs("another key, also long enough\n", f);
    fclose(f);
    cli_result w = run_with_programs(a, NULL, (const char *[]){"warm", "-q", NULL}, 2);
    cr_assert_eq(w.code, 0, "%s", w.err);
    cli_result e = run(a, NULL, "cache", "export", "--key", key, file, NULL);
    cr_assert_eq(e.code, 0, "%s", e.err);
    cli_result nokey = run(b, NULL, "cache", "import", file, NULL);
    cr_expect_eq(nokey.code, 6, "%s", nokey.err);
    cr_expect(strstr(nokey.err, "give its key (--key FILE)"), "%s", nokey.err);
    cli_result wrong = run(b, NULL, "cache", "import", "--key", other, file, NULL);
    cr_expect_eq(wrong.code, 6, "%s", wrong.err);
    cli_result ok = run(b, NULL, "cache", "import", "--key", key, file, NULL);
    cr_expect_eq(ok.code, 0, "%s", ok.err);
    cr_expect(strstr(ok.out, "holds: 4 entries for sm_90;") && /* 2 kernels, 2 plan entries */
              strstr(ok.out, "signed (HMAC-SHA256)"), "%s", ok.out);
    /* A FIFO is refused at once, never read (a read would block forever). */
    char *fifo = tmp_path("pipe");
    cr_assert_eq(mkfifo(fifo, 0644), 0);
    cli_result p = run(b, NULL, "cache", "import", fifo, NULL);
    cr_expect_eq(p.code, 4, "%s", p.err);
    cr_expect(strstr(p.err, "not a regular file (a FIFO)"), "%s", p.err);
    cr_expect_lt(p.secs, 5.0);
    cleanup();
}

Test(cli, cache_max_too_small_is_a_clear_message) {
    make_tmp();
    char *cache = cache_dir("cache");
    setenv("FUSEC_CACHE_MAX", "1", 1);
    cli_result w = run(cache, NULL, "warm", "-q", small_programs[9], NULL);
    unsetenv("FUSEC_CACHE_MAX");
    cr_expect_eq(w.code, 0, "%s", w.err);
    cr_expect(strstr(w.err, "FUSEC_CACHE_MAX=\"1\" is smaller than the least usable cache (1M"),
              "%s", w.err);
    cleanup();
}
