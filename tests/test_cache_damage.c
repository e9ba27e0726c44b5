/*
 * test_cache_damage.c - a damaged kernel cache file is a miss, never a crash (issue 15).
 *
 * The matrix: every damage case (truncations of data.mdb, seeded byte flips, a file another
 * program wrote, a damaged or odd lock file) x every command that opens the cache (the cache
 * subcommands, warm, explain, run). Each cell starts from a copy of one good cache, damages
 * it, runs the command in a child process (bounded: a hang is a failure), then runs a normal
 * `warm` that must succeed. A cell is clean when neither run ends by a signal, hangs, or prints
 * a sanitizer report. The whole matrix is printed (cr_log_info, and to the file
 * $FUSEC_DAMAGE_MATRIX when set) before it is asserted, so a failing run still shows all of it.
 *
 * In-process tests at the end open damaged stores through cache/cache.h directly, at many more
 * truncation sizes and flip seeds than the CLI matrix can afford.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <fusec.h>

#include "cache.h"
#include "cli_util.h"

#include <fcntl.h>
#include <lmdb.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define FC(name) FUSEC_TEST_DATA_DIR "/fc/" name
#define PROG FC("w10_saxpy.fc")

static cli_tmp tmp;

static void cleanup(void) { cli_tmp_remove(&tmp); }

TestSuite(cache_damage, .fini = cleanup);

/* ---- files ------------------------------------------------------------------------------- */

static void path_join(char *out, size_t size, const char *dir, const char *name) {
    int n = snprintf(out, size, "%s/%s", dir, name);
    cr_assert(n > 0 && (size_t)n < size);
}

static void copy_file(const char *from, const char *to) {
    size_t len;
    char *buf = tu_read_file(from, &len);
    FILE *f = fopen(to, "wb");
    cr_assert_not_null(f, "%s", to);
    cr_assert_eq(fwrite(buf, 1, len, f), len);
    fclose(f);
    free(buf);
}

static void write_bytes(const char *path, const void *buf, size_t len) {
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "%s", path);
    if (len) cr_assert_eq(fwrite(buf, 1, len, f), len);
    fclose(f);
}

static long file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

/* xorshift64*: the seeded positions and bytes of the flips. */
static uint64_t next_rand(uint64_t *x) {
    *x ^= *x >> 12;
    *x ^= *x << 25;
    *x ^= *x >> 27;
    return *x * 0x2545F4914F6CDD1Dull;
}

/* ---- the damage cases -------------------------------------------------------------------- */

typedef enum kind {
    TRUNC,      /* data.mdb cut to arg bytes (-1: one page short, -2: half, -3: one byte short) */
    FLIP_ANY,   /* 16 bytes anywhere in data.mdb changed, seed arg */
    FLIP_NODES, /* 8 bytes near page headers and node areas changed, seed arg */
    RANDOM,     /* data.mdb replaced by 64 KiB of random bytes */
    TEXT,       /* data.mdb replaced by a text file */
    OTHER_LMDB, /* an LMDB environment of another program: plain keys in the main database */
    DUPSORT,    /* an LMDB environment whose "entries" database is MDB_DUPSORT */
    LOCK_EMPTY, /* lock.mdb empty */
    LOCK_RANDOM,/* lock.mdb 8 KiB of random bytes */
    LOCK_DIR,   /* lock.mdb a directory */
    DATA_DIR,   /* data.mdb a directory */
    DATA_FIFO   /* data.mdb a FIFO (a read of it would block forever) */
} kind;

typedef struct dcase {
    const char *name;
    kind kind;
    long arg;
} dcase;

static const dcase cases[] = {
    {"trunc 0", TRUNC, 0},          {"trunc 1", TRUNC, 1},
    {"trunc 4095", TRUNC, 4095},    {"trunc 4096", TRUNC, 4096},
    {"trunc 8192", TRUNC, 8192},    {"trunc 12288", TRUNC, 12288},
    {"trunc page short", TRUNC, -1}, {"trunc half", TRUNC, -2},
    {"trunc byte short", TRUNC, -3},
    {"flip any s1", FLIP_ANY, 1},   {"flip any s2", FLIP_ANY, 2},
    {"flip any s3", FLIP_ANY, 3},   {"flip nodes s4", FLIP_NODES, 4},
    {"flip nodes s5", FLIP_NODES, 5}, {"flip nodes s6", FLIP_NODES, 6},
    {"flip nodes s7", FLIP_NODES, 7},
    {"random bytes", RANDOM, 0},    {"text file", TEXT, 0},
    {"other lmdb", OTHER_LMDB, 0},  {"dupsort lmdb", DUPSORT, 0},
    {"lock empty", LOCK_EMPTY, 0},  {"lock random", LOCK_RANDOM, 0},
    {"lock is dir", LOCK_DIR, 0},   {"data is dir", DATA_DIR, 0},
    {"data is fifo", DATA_FIFO, 0},
};
#define NCASES (int)(sizeof cases / sizeof cases[0])

static void flip(const char *data, uint64_t seed, int n, bool nodes) {
    int fd = open(data, O_RDWR);
    cr_assert_geq(fd, 0);
    long size = file_size(data);
    uint64_t x = 0x9E3779B97F4A7C15ull * (seed + 1);
    for (int i = 0; i < n; i++) {
        long at;
        if (nodes) { /* page headers and pointers (start) or nodes (end) of a page past the metas */
            long pages = size / 4096;
            long page = pages > 2 ? 2 + (long)(next_rand(&x) % (uint64_t)(pages - 2)) : 0;
            long off = (long)(next_rand(&x) % 96);
            at = page * 4096 + (next_rand(&x) & 1 ? off : 4095 - off);
        } else {
            at = (long)(next_rand(&x) % (uint64_t)size);
        }
        uint8_t b;
        cr_assert_eq(pread(fd, &b, 1, at), 1);
        b ^= (uint8_t)(1 + next_rand(&x) % 255);
        cr_assert_eq(pwrite(fd, &b, 1, at), 1);
    }
    close(fd);
}

static void raw_env(const char *dir, bool dupsort) {
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    cr_assert_eq(mdb_env_create(&env), 0);
    mdb_env_set_maxdbs(env, 4);
    cr_assert_eq(mdb_env_open(env, dir, 0, 0644), 0);
    cr_assert_eq(mdb_txn_begin(env, NULL, 0, &txn), 0);
    cr_assert_eq(mdb_dbi_open(txn, dupsort ? FCC_DB_ENTRIES : NULL,
                              dupsort ? MDB_CREATE | MDB_DUPSORT : 0, &dbi), 0);
    for (int i = 0; i < 50; i++) {
        char k[32], v[64];
        snprintf(k, sizeof k, "key%03d", i);
        snprintf(v, sizeof v, "another program's value %d", i);
        MDB_val kv = {strlen(k), k}, vv = {strlen(v), v};
        cr_assert_eq(mdb_put(txn, dbi, &kv, &vv, 0), 0);
    }
    cr_assert_eq(mdb_txn_commit(txn), 0);
    mdb_env_close(env);
}

/* Makes dir a copy of the good cache in tmpl, then damages it as c says. */
static void make_damaged(const dcase *c, const char *tmpl, const char *dir) {
    char data[512], lock[512], from[512];
    cr_assert_eq(mkdir(dir, 0755), 0, "%s", dir);
    path_join(data, sizeof data, dir, "data.mdb");
    path_join(lock, sizeof lock, dir, "lock.mdb");
    if (c->kind == OTHER_LMDB || c->kind == DUPSORT) {
        raw_env(dir, c->kind == DUPSORT);
        return;
    }
    path_join(from, sizeof from, tmpl, "data.mdb");
    copy_file(from, data);
    path_join(from, sizeof from, tmpl, "lock.mdb");
    copy_file(from, lock);
    long size = file_size(data);
    uint64_t x = 12345;
    uint8_t rnd[65536];
    switch (c->kind) {
    case TRUNC: {
        long to = c->arg == -1 ? size - 4096 : c->arg == -2 ? size / 2
                  : c->arg == -3 ? size - 1 : c->arg;
        cr_assert_eq(truncate(data, to), 0);
        break;
    }
    case FLIP_ANY: flip(data, (uint64_t)c->arg, 16, false); break;
    case FLIP_NODES: flip(data, (uint64_t)c->arg, 8, true); break;
    case RANDOM:
        for (size_t i = 0; i < sizeof rnd; i++) rnd[i] = (uint8_t)next_rand(&x);
        write_bytes(data, rnd, sizeof rnd);
        break;
    case TEXT: {
        const char text[] = "This is not a kernel cache.\nJust some notes someone left here.\n";
        write_bytes(data, text, sizeof text - 1);
        break;
    }
    case LOCK_EMPTY: write_bytes(lock, "", 0); break;
    case LOCK_RANDOM:
        for (size_t i = 0; i < 8192; i++) rnd[i] = (uint8_t)next_rand(&x);
        write_bytes(lock, rnd, 8192);
        break;
    case LOCK_DIR:
        cr_assert_eq(unlink(lock), 0);
        cr_assert_eq(mkdir(lock, 0755), 0);
        break;
    case DATA_DIR:
        cr_assert_eq(unlink(data), 0);
        cr_assert_eq(mkdir(data, 0755), 0);
        break;
    case DATA_FIFO:
        cr_assert_eq(unlink(data), 0);
        cr_assert_eq(mkfifo(data, 0644), 0);
        break;
    case OTHER_LMDB:
    case DUPSORT:
        break; /* made above */
    }
}

/* ---- running the commands ---------------------------------------------------------------- */

typedef struct outcome {
    int code;     /* exit status, 128 + signal, or -1: hung (killed) */
    bool sanitizer; /* a sanitizer report on stderr */
    char err[240]; /* the first line of stderr */
} outcome;

/* Runs fusec with args (cache dir: cache), killing it after limit_s seconds. */
static outcome run_bounded(const char *cache, const char *const *args, double limit_s) {
    cli_proc p = cli_spawn(&tmp, cache, NULL, args);
    bool hung = false;
    for (;;) {
        int status;
        pid_t w = waitpid(p.pid, &status, WNOHANG);
        cr_assert_neq(w, -1);
        if (w == p.pid) {
            /* Reap done: read the outputs the way cli_wait would. */
            outcome o = {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
                         false, ""};
            char *err = cli_slurp(p.err_path);
            o.sanitizer = strstr(err, "Sanitizer") || strstr(err, "runtime error:");
            size_t n = strcspn(err, "\n");
            snprintf(o.err, sizeof o.err, "%.*s", (int)(n < 200 ? n : 200), err);
            free(err);
            if (hung) o.code = -1;
            return o;
        }
        if (!hung && cli_now() - p.t0 > limit_s) {
            kill(p.pid, SIGKILL);
            hung = true;
        }
        usleep(5000);
    }
}

typedef struct command {
    const char *name;
    const char *args[8]; /* "@EXPORT": a path for export's output; "@GOOD": a good export */
} command;

static const command commands[] = {
    {"stats", {"cache", "stats", NULL}},
    {"list", {"cache", "list", NULL}},
    {"verify", {"cache", "verify", NULL}},
    {"verify --delete-bad", {"cache", "verify", "--delete-bad", NULL}},
    {"clear", {"cache", "clear", NULL}},
    {"export", {"cache", "export", "@EXPORT", NULL}},
    {"import", {"cache", "import", "@GOOD", NULL}},
    {"warm", {"warm", "-q", PROG, NULL}},
    {"explain", {"explain", PROG, NULL}},
    {"run", {"run", PROG, NULL}},
};
#define NCOMMANDS (int)(sizeof commands / sizeof commands[0])

static bool clean(const outcome *o) { return o->code >= 0 && o->code < 128 && !o->sanitizer; }

static void describe(const outcome *o, char *buf, size_t size) {
    if (o->code == -1) snprintf(buf, size, "HANG");
    else if (o->sanitizer) snprintf(buf, size, "SANITIZER");
    else if (o->code >= 128) snprintf(buf, size, "SIG%s", sigabbrev_np(o->code - 128));
    else snprintf(buf, size, "%d", o->code);
}

/* A good cache in tmpl (one kernel of PROG) and a good export of it in good. */
static void make_template(const char *tmpl, const char *good) {
    const char *warm[] = {"warm", "-q", PROG, NULL};
    outcome o = run_bounded(tmpl, warm, 120);
    cr_assert_eq(o.code, 0, "warm of the template: %s", o.err);
    const char *exp[] = {"cache", "export", good, NULL};
    o = run_bounded(tmpl, exp, 60);
    cr_assert_eq(o.code, 0, "export of the template: %s", o.err);
}

Test(cache_damage, every_command_on_every_damaged_cache_exits_cleanly) {
    cli_tmp_make(&tmp, "fusec_damage_test");
    char tmpl[512], good[512], exported[512];
    path_join(tmpl, sizeof tmpl, tmp.root, "template");
    path_join(good, sizeof good, tmp.root, "good.fcx");
    path_join(exported, sizeof exported, tmp.root, "out.fcx");
    make_template(tmpl, good);

    static char cell[NCASES][NCOMMANDS][48];
    int bad = 0, ran = 0;
    char first_bad[600] = "";
    /* FUSEC_DAMAGE_SAMPLE=N runs the cells with (case + command) % N == 0: every case and
     * every command still, a third of the cells at N = 3 (.ci/run's sanitizer pass, where each
     * child process costs several times more; the plain pass runs them all). */
    const char *sample_env = getenv("FUSEC_DAMAGE_SAMPLE");
    int sample = sample_env ? atoi(sample_env) : 1;
    if (sample < 1 || sample > NCOMMANDS) sample = 1;
    for (int i = 0; i < NCASES; i++)
        for (int j = 0; j < NCOMMANDS; j++) {
            if ((i + j) % sample) {
                snprintf(cell[i][j], sizeof cell[i][j], "-");
                continue;
            }
            ran++;
            char dir[280], name[16];
            snprintf(name, sizeof name, "c%d_%d", i, j);
            path_join(dir, sizeof dir, tmp.root, name);
            make_damaged(&cases[i], tmpl, dir);
            const char *args[8];
            for (int a = 0; a < 8; a++) {
                const char *s = commands[j].args[a];
                args[a] = s && strcmp(s, "@EXPORT") == 0 ? exported
                          : s && strcmp(s, "@GOOD") == 0 ? good : s;
            }
            outcome o = run_bounded(dir, args, 30);
            /* Then a normal use: warming the program must work. */
            const char *warm[] = {"warm", "-q", PROG, NULL};
            outcome then = run_bounded(dir, warm, 120);
            char a[24], b[24];
            describe(&o, a, sizeof a);
            describe(&then, b, sizeof b);
            snprintf(cell[i][j], sizeof cell[i][j], "%s/%s", a, b);
            if (!clean(&o) || !clean(&then) || then.code != 0) {
                if (!bad++)
                    snprintf(first_bad, sizeof first_bad, "%s x %s: %s (%s) then warm %s (%s)",
                             cases[i].name, commands[j].name, a, o.err, b, then.err);
            }
            tu_remove_dir(dir);
        }

    /* The matrix: command exit status / exit status of the warm after it. */
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    fprintf(m, "%-18s", "case \\ command");
    for (int j = 0; j < NCOMMANDS; j++) fprintf(m, " | %-10.10s", commands[j].name);
    fputc('\n', m);
    for (int i = 0; i < NCASES; i++) {
        fprintf(m, "%-18s", cases[i].name);
        for (int j = 0; j < NCOMMANDS; j++) fprintf(m, " | %-10s", cell[i][j]);
        fputc('\n', m);
    }
    fprintf(m, "cells not clean: %d of %d run (%d in all; FUSEC_DAMAGE_SAMPLE=%d)\n", bad, ran,
            NCASES * NCOMMANDS, sample);
    fclose(m);
    cr_log_info("cache damage matrix (command exit / exit of a warm after it):\n%s", text);
    const char *out = getenv("FUSEC_DAMAGE_MATRIX");
    if (out && *out) write_bytes(out, text, len);
    free(text);
    cr_expect_eq(bad, 0, "%d cells not clean; first: %s", bad, first_bad);
}

/* ---- in-process: many more sizes and seeds ----------------------------------------------- */

/* Kernel i's key fields, for stores filled in-process. */
typedef struct kern {
    char source[96], name[16];
    fcc_key_fields f;
    fcc_key key;
} kern;

static void make_kern(kern *k, int i) {
    memset(k, 0, sizeof *k);
    snprintf(k->name, sizeof k->name, "fk%d", i);
    snprintf(k->source, sizeof k->source, "extern \"C\" __global__ void fk%d() {} // %d", i, i);
    k->f.codegen_version = 3;
    k->f.source = k->source;
    k->f.source_len = strlen(k->source);
    k->f.options = "-default-device";
    k->f.arch = "sm_90";
    k->f.nvrtc_version = 12040;
    k->f.kernel_name = k->name;
    cr_assert_eq(fcc_key_compute(&k->f, &k->key), FC_OK);
}

static fcc_cache *open_dir(const char *dir, bool read_only) {
    fcc_options o = fcc_options_default();
    o.dir = dir;
    o.read_only = read_only;
    o.require_cached = 0;
    fcc_cache *c = NULL;
    cr_assert_eq(fcc_open(&o, &c), FC_OK);
    return c;
}

enum { NKERN = 24 };

/* A good store in dir: NKERN kernels, small ones on leaf pages and large ones on overflow
 * pages, so that damage can land in every kind of page. */
static void fill_store(const char *dir) {
    fcc_cache *c = open_dir(dir, false);
    static uint8_t cubin[40000];
    for (size_t i = 0; i < sizeof cubin; i++) cubin[i] = (uint8_t)(i * 131 + 7);
    for (int i = 0; i < NKERN; i++) {
        kern k;
        make_kern(&k, i);
        size_t size = i % 3 == 0 ? 40000 : i % 3 == 1 ? 3000 : 200;
        cr_assert_eq(fcc_put(c, &k.f, "test", cubin, size, "m", 1), FC_OK, "%s", fcc_errmsg(c));
    }
    fcc_close(c);
}

static int count_info(const fcc_entry_info *info, void *user) {
    (void)info;
    ++*(int *)user;
    return 0;
}

/* Everything a user or an admin does with a store, on a possibly damaged one: must not crash
 * (ASan: must not touch memory it should not), and a put then a get must work. */
static void exercise(const char *dir, bool read_only) {
    fcc_cache *c = open_dir(dir, read_only);
    for (int i = 0; i < NKERN; i++) {
        kern k;
        make_kern(&k, i);
        fcc_entry e;
        bool found;
        cr_assert_eq(fcc_get(c, &k.key, &e, &found), FC_OK);
    }
    fcc_stats st;
    fcc_get_stats(c, &st);
    int n = 0;
    fcc_list(c, count_info, &n);
    fcc_verify_result vr;
    fcc_verify(c, !read_only, NULL, NULL, &vr);
    kern k;
    make_kern(&k, 1000);
    uint8_t cubin[5000] = {1, 2, 3};
    fc_status put = fcc_put(c, &k.f, "new", cubin, sizeof cubin, NULL, 0);
    cr_assert(put == FC_OK || put == FC_ERR_IO, "put: %d", put);
    fcc_entry e;
    bool found = false;
    cr_assert_eq(fcc_get(c, &k.key, &e, &found), FC_OK);
    cr_assert(found, "a put kernel is found (in memory at least)");
    if (!read_only) {
        cr_assert(fcc_is_persistent(c), "%s", fcc_damage(c) ? fcc_damage(c) : fcc_errmsg(c));
        cr_assert_eq(put, FC_OK, "%s", fcc_errmsg(c));
        cr_assert_eq(fcc_clear(c), FC_OK, "%s", fcc_errmsg(c));
    }
    fcc_close(c);
}

static void copy_store(const char *from, const char *to) {
    char a[600], b[600];
    mkdir(to, 0755);
    path_join(a, sizeof a, from, "data.mdb");
    path_join(b, sizeof b, to, "data.mdb");
    copy_file(a, b);
    path_join(a, sizeof a, from, "lock.mdb");
    path_join(b, sizeof b, to, "lock.mdb");
    copy_file(a, b);
}

Test(cache_damage, truncation_at_every_page_boundary_and_beside_it) {
    cli_tmp_make(&tmp, "fusec_damage_trunc");
    char good[280], data[600];
    path_join(good, sizeof good, tmp.root, "good");
    fill_store(good);
    path_join(data, sizeof data, good, "data.mdb");
    long size = file_size(data);
    cr_assert_gt(size, 40 * 4096);
    int ncut = 0;
    for (long to = 0; to <= size; to += 4096)
        for (long d = -1; d <= 1; d++) {
            long cut = to + d;
            if (cut < 0 || cut >= size) continue;
            for (int ro = 0; ro < 2; ro++) {
                char dir[280], name[16], cdata[600];
                snprintf(name, sizeof name, "t%ld_%d", cut % 100000000, ro);
                path_join(dir, sizeof dir, tmp.root, name);
                copy_store(good, dir);
                path_join(cdata, sizeof cdata, dir, "data.mdb");
                cr_assert_eq(truncate(cdata, cut), 0);
                exercise(dir, ro);
                tu_remove_dir(dir);
                ncut++;
            }
        }
    cr_log_info("%d truncations of a %ld-byte store, each opened writable and read-only", ncut,
                size);
}

Test(cache_damage, seeded_byte_flips_anywhere) {
    cli_tmp_make(&tmp, "fusec_damage_flip");
    char good[280], data[600];
    path_join(good, sizeof good, tmp.root, "good");
    fill_store(good);
    path_join(data, sizeof data, good, "data.mdb");
    int moved = 0;
    for (int seed = 1; seed <= 160; seed++) {
        char dir[280], name[16], cdata[600];
        snprintf(name, sizeof name, "s%d", seed);
        path_join(dir, sizeof dir, tmp.root, name);
        copy_store(good, dir);
        path_join(cdata, sizeof cdata, dir, "data.mdb");
        /* Half the seeds anywhere, half near page headers and nodes; 1 to 8 bytes each. */
        flip(cdata, (uint64_t)seed, 1 + seed % 8, seed % 2 == 0);
        fcc_cache *c = open_dir(dir, true);
        moved += fcc_damage(c) != NULL;
        fcc_close(c);
        exercise(dir, seed % 3 == 0);
        tu_remove_dir(dir);
    }
    cr_log_info("160 seeds: %d stores found damaged at open, the rest ran on", moved);
}

Test(cache_damage, foreign_and_odd_files) {
    cli_tmp_make(&tmp, "fusec_damage_foreign");
    char good[280];
    path_join(good, sizeof good, tmp.root, "good");
    fill_store(good);
    for (int i = 0; i < NCASES; i++) {
        if (cases[i].kind == TRUNC || cases[i].kind == FLIP_ANY || cases[i].kind == FLIP_NODES)
            continue;
        for (int ro = 0; ro < 2; ro++) {
            char dir[280], name[16];
            snprintf(name, sizeof name, "f%d_%d", i % 100, ro);
            path_join(dir, sizeof dir, tmp.root, name);
            make_damaged(&cases[i], good, dir);
            exercise(dir, ro);
            if (!ro && cases[i].kind != LOCK_EMPTY && cases[i].kind != LOCK_RANDOM) {
                /* What became of the files: moved aside, named in the message. */
                fcc_cache *c = open_dir(dir, true);
                cr_assert_null(fcc_damage(c), "%s: fresh after the move: %s", cases[i].name,
                               fcc_damage(c));
                fcc_close(c);
            }
            tu_remove_dir(dir);
        }
    }
}
