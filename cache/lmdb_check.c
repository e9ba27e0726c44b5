/*
 * cache/lmdb_check.c - checks of an LMDB environment's files before LMDB maps them.
 *
 * LMDB 0.9 trusts its files: a data.mdb shorter than its meta page says is a SIGBUS on the
 * first touch of the map, and a page whose bounds or node offsets are wrong is read or copied
 * out of bounds (a heap overflow inside mdb_put). It has no checksums. So before the store
 * maps a file, these checks read it with pread: the meta pages (fcc_check_data_file), and
 * every page reachable from the snapshot about to be used (fcc_check_tree). The facts of the
 * format come from lmdb.h and mdb.c of LMDB 0.9 (64-bit: size_t and pgno_t are 8 bytes):
 *
 *   page header  0 pgno (size_t)  8 pad (u16)  10 flags (u16)  12 lower (u16)  14 upper (u16);
 *                an overflow page has its page count (u32) at 12; a page's node offsets (u16)
 *                follow the header, (lower - 16) / 2 of them
 *   meta page    16 magic 0xBEEFC0DE  20 data version 1  24 address  32 map size
 *                40 free DB, 88 main DB (each 48 bytes: u32 pad (the free DB's is the page
 *                size), u16 flags, u16 depth, branch, leaf, overflow pages, entries, root)
 *                136 last page  144 txnid; meta pages 0 and 1, the newer txnid in use
 *   node         0 lo (u16) 2 hi (u16) 4 flags (u16) 6 key size (u16) 8 key, then data; a leaf's
 *                data size is lo | hi << 16, a branch's child lo | hi << 16 | flags << 32;
 *                F_BIGDATA (1): the data is the page number of an overflow run, F_SUBDATA (2):
 *                a named database's 48-byte record, F_DUPDATA (4): duplicate keys
 *   free DB      key: a txnid; data: a count and that many page numbers (size_t)
 *   lock.mdb     u32 magic, u32 format, the reader mutex, u64 txnid, u32 reader count, padded
 *                to 64 bytes; the writer mutex padded to 64; then 64-byte reader slots
 */
#include "cache_int.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define LM_MAGIC 0xBEEFC0DEu
#define LM_DATA_VERSION 1u
#define LM_PAGEHDR 16u
#define LM_META_SIZE 152u /* header and meta, up to the txnid */
#define LM_P_INVALID (~(uint64_t)0)
#define LM_MAX_DEPTH 32u  /* LMDB's cursor stack */
#define LM_MAX_MAP (1ull << 44)
enum { P_BRANCH = 0x01, P_LEAF = 0x02, P_OVERFLOW = 0x04, P_META = 0x08, P_LEAF2 = 0x20,
       P_SUBP = 0x40 };
enum { F_BIGDATA = 0x01, F_SUBDATA = 0x02, F_DUPDATA = 0x04 };

static uint16_t rd16(const uint8_t *p) {
    uint16_t v;
    memcpy(&v, p, sizeof v);
    return v;
}
static uint32_t rd32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}
static uint64_t rd64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static void say(char *why, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(char *why, size_t size, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, size, fmt, ap);
    va_end(ap);
}

typedef struct lm_db {
    uint16_t flags, depth;
    uint64_t root;
} lm_db;

typedef struct lm_meta {
    uint32_t psize;
    uint64_t mapsize, last_pg, txnid;
    lm_db db[2]; /* free, main */
} lm_meta;

static lm_db db_at(const uint8_t *p) {
    lm_db d = {rd16(p + 4), rd16(p + 6), rd64(p + 40)};
    return d;
}

/* One meta page (LM_META_SIZE bytes at m). Returns false with why set when it is not LMDB's. */
static bool parse_meta(const uint8_t *m, int which, lm_meta *out, char *why, size_t size) {
    if (rd32(m + 16) != LM_MAGIC || !(rd16(m + 10) & P_META)) {
        say(why, size, "is not an LMDB file (meta page %d has no LMDB magic number)", which);
        return false;
    }
    if (rd32(m + 20) != LM_DATA_VERSION) {
        say(why, size, "is of LMDB data version %u, not %u", rd32(m + 20), LM_DATA_VERSION);
        return false;
    }
    out->psize = rd32(m + 40);
    out->mapsize = rd64(m + 32);
    out->db[0] = db_at(m + 40);
    out->db[1] = db_at(m + 88);
    out->last_pg = rd64(m + 136);
    out->txnid = rd64(m + 144);
    return true;
}

/* Both meta pages; *newest is the one LMDB uses. 0 ok, 1 damaged, 2 too short for them. */
static int read_metas(int fd, uint64_t size, lm_meta m[2], int *newest, char *why, size_t n) {
    uint8_t buf[LM_META_SIZE];
    if (size < LM_META_SIZE || pread(fd, buf, sizeof buf, 0) != (ssize_t)sizeof buf) {
        say(why, n, "is truncated (%llu bytes, shorter than LMDB's meta pages)",
            (unsigned long long)size);
        return 2;
    }
    if (!parse_meta(buf, 0, &m[0], why, n)) return 1;
    uint32_t ps = m[0].psize;
    if (ps < 512 || ps > 65536 || (ps & (ps - 1))) {
        say(why, n, "has a meta page with page size %u", ps);
        return 1;
    }
    if (size < 2ull * ps || pread(fd, buf, sizeof buf, ps) != (ssize_t)sizeof buf) {
        say(why, n, "is truncated (%llu bytes, shorter than LMDB's two meta pages of %u)",
            (unsigned long long)size, ps);
        return 2;
    }
    if (!parse_meta(buf, 1, &m[1], why, n)) return 1;
    if (m[1].psize != ps) {
        say(why, n, "has meta pages of different page sizes (%u, %u)", ps, m[1].psize);
        return 1;
    }
    *newest = m[1].txnid > m[0].txnid;
    return 0;
}

/* Opens path to read, and fstats it: the descriptor of a regular file, else -1 with *state
 * saying why (NONE: missing; UNREADABLE: permissions; DAMAGED: not a regular file, or an
 * odd error). O_NONBLOCK: a FIFO planted in place of the file must not block the open. */
static int open_regular(const char *path, struct stat *st, fcc_file_state *state, char *why,
                        size_t n) {
    memset(st, 0, sizeof *st);
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        *state = errno == ENOENT ? FCC_FILE_NONE
                 : errno == EACCES || errno == EPERM ? FCC_FILE_UNREADABLE : FCC_FILE_DAMAGED;
        say(why, n, "cannot be opened (%s)", strerror(errno));
        return -1;
    }
    if (fstat(fd, st) != 0) {
        close(fd);
        *state = FCC_FILE_UNREADABLE;
        return -1;
    }
    if (!S_ISREG(st->st_mode)) {
        close(fd);
        say(why, n, "is not a regular file (%s)",
            S_ISDIR(st->st_mode) ? "a directory" : S_ISFIFO(st->st_mode) ? "a FIFO"
            : S_ISSOCK(st->st_mode) ? "a socket" : "a device");
        *state = FCC_FILE_DAMAGED;
        return -1;
    }
    return fd;
}

fcc_file_state fcc_check_data_file(const char *path, char *why, size_t n, struct stat *id) {
    if (sizeof(size_t) != 8) return FCC_FILE_OK; /* the layout above is LMDB's 64-bit one */
    for (int attempt = 0;; attempt++) {
        struct stat st;
        fcc_file_state state;
        int fd = open_regular(path, &st, &state, why, n);
        *id = st; /* also of a non-regular file: what gets moved aside */
        if (fd < 0) return state;
        if (st.st_size == 0) {
            close(fd);
            return FCC_FILE_NONE; /* LMDB writes a new environment into an empty file */
        }
        lm_meta m[2];
        int newest = 0;
        /* The meta pages first, the size after: a file only grows, so the size read after a
         * meta page is at least what that meta page needs. */
        int rc = read_metas(fd, (uint64_t)st.st_size, m, &newest, why, n);
        struct stat now;
        uint64_t size = fstat(fd, &now) == 0 ? (uint64_t)now.st_size : (uint64_t)st.st_size;
        close(fd);
        if (rc == 2 && attempt == 0) {
            /* Another process may be creating the environment (it writes both meta pages at
             * once): look again a moment later before calling it damaged. */
            struct timespec ts = {0, 50 * 1000 * 1000};
            nanosleep(&ts, NULL);
            continue;
        }
        if (rc) return FCC_FILE_DAMAGED;
        const lm_meta *cur = &m[newest];
        uint64_t ps = cur->psize;
        if (cur->last_pg < 1 || cur->last_pg > size / ps - 1) {
            say(why, n, "is truncated (%llu bytes, but its last page %llu ends at byte %llu)",
                (unsigned long long)size, (unsigned long long)cur->last_pg,
                (unsigned long long)((cur->last_pg + 1) * ps));
            return FCC_FILE_DAMAGED;
        }
        if (cur->mapsize > LM_MAX_MAP) {
            say(why, n, "has a meta page with map size %llu", (unsigned long long)cur->mapsize);
            return FCC_FILE_DAMAGED;
        }
        for (int d = 0; d < 2; d++)
            if (cur->db[d].root != LM_P_INVALID &&
                (cur->db[d].root < 2 || cur->db[d].root > cur->last_pg ||
                 cur->db[d].depth < 1 || cur->db[d].depth > LM_MAX_DEPTH)) {
                say(why, n, "has a meta page whose %s database root (page %llu, depth %u) is "
                    "not a page of the file", d ? "main" : "free",
                    (unsigned long long)cur->db[d].root, cur->db[d].depth);
                return FCC_FILE_DAMAGED;
            }
        return FCC_FILE_OK;
    }
}

fcc_file_state fcc_check_lock_file(const char *path, char *why, size_t n) {
    struct stat st;
    fcc_file_state state;
    int fd = open_regular(path, &st, &state, why, n);
    if (fd < 0) return state;
    state = FCC_FILE_OK;
    {
        /* Every process with the environment open holds a shared lock on byte 0. The first
         * one holds it exclusively while it writes the header, which may not be there yet:
         * only a header under shared locks is judged (four processes opening a new cache at
         * once saw another's half-made lock file as damaged). */
        struct flock fl;
        memset(&fl, 0, sizeof fl);
        fl.l_type = F_WRLCK;
        fl.l_whence = SEEK_SET;
        fl.l_len = 1;
        if (fcntl(fd, F_GETLK, &fl) == 0 && fl.l_type == F_RDLCK) {
            size_t mutex = sizeof(pthread_mutex_t);
            size_t count_at = ((8 + mutex + 7) & ~(size_t)7) + 8;
            size_t readers_at = ((count_at + 4 + 63) & ~(size_t)63) + ((mutex + 63) & ~(size_t)63);
            uint8_t hdr[8];
            uint8_t cnt[4];
            uint64_t size = (uint64_t)st.st_size;
            if (size < readers_at || pread(fd, hdr, 8, 0) != 8 ||
                pread(fd, cnt, 4, (off_t)count_at) != 4 || rd32(hdr) != LM_MAGIC ||
                rd32(cnt) > (size - readers_at) / 64) {
                say(why, n, "is in use by another process (%ld) and its header is not LMDB's",
                    (long)fl.l_pid);
                state = FCC_FILE_DAMAGED_IN_USE;
            }
        }
    }
    close(fd);
    return state;
}

/* ---- the tree walk ------------------------------------------------------------------------- */

enum { KIND_MAIN, KIND_NAMED, KIND_FREE };

typedef struct walker {
    int fd;
    uint64_t psize, last_pg;
    uint8_t *seen; /* a bit per page: each page belongs to one place only */
    char *why;
    size_t why_size;
    int result;    /* 0, 1 damaged, -1 cannot judge */
} walker;

static int damaged(walker *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int damaged(walker *w, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->why, w->why_size, fmt, ap);
    va_end(ap);
    w->result = 1;
    return 1;
}

static int cannot_judge(walker *w) {
    w->result = -1;
    return -1;
}

/* Marks pages [pgno, pgno + count) as used. */
static int mark(walker *w, uint64_t pgno, uint64_t count) {
    for (uint64_t p = pgno; p < pgno + count; p++) {
        if (w->seen[p / 8] & (1u << (p % 8)))
            return damaged(w, "has page %llu in two places", (unsigned long long)p);
        w->seen[p / 8] |= (uint8_t)(1u << (p % 8));
    }
    return 0;
}

static int read_at(walker *w, void *buf, size_t n, uint64_t at) {
    ssize_t got = pread(w->fd, buf, n, (off_t)at);
    if (got == (ssize_t)n) return 0;
    if (got >= 0)
        return damaged(w, "is truncated (byte %llu is past its end)",
                       (unsigned long long)(at + n));
    return cannot_judge(w);
}

static int walk_page(walker *w, uint64_t pgno, unsigned level, int kind);

/* A named database's record (48 bytes) in the main database. */
static int walk_named(walker *w, const uint8_t *key, size_t ks, const uint8_t *rec) {
    if (!((ks == 7 && memcmp(key, "entries", 7) == 0) || (ks == 3 && memcmp(key, "lru", 3) == 0)))
        return damaged(w, "holds a database named '%.*s': not a fusec kernel cache",
                       (int)(ks < 40 ? ks : 40), (const char *)key);
    lm_db d = db_at(rec);
    if (d.flags != 0)
        return damaged(w, "holds a database with LMDB flags %#x: not a fusec kernel cache",
                       d.flags);
    if (d.root == LM_P_INVALID) return d.depth == 0 ? 0 : damaged(w, "has an empty database of "
                                                                     "depth %u", d.depth);
    if (d.depth < 1 || d.depth > LM_MAX_DEPTH)
        return damaged(w, "has a database of depth %u", d.depth);
    return walk_page(w, d.root, d.depth, KIND_NAMED);
}

/* A leaf node at offset off of page p (its bounds checked by the caller up to the key). */
static int walk_leaf_node(walker *w, const uint8_t *p, uint64_t pgno, size_t off, int kind) {
    uint16_t nflags = rd16(p + off + 4);
    size_t ks = rd16(p + off + 6);
    uint64_t dsize = rd16(p + off) | (uint64_t)rd16(p + off + 2) << 16;
    const uint8_t *key = p + off + 8;
    if (nflags & F_DUPDATA)
        return damaged(w, "holds duplicate keys (page %llu): not a fusec kernel cache",
                       (unsigned long long)pgno);
    if ((nflags & F_SUBDATA) != (kind == KIND_MAIN ? F_SUBDATA : 0))
        return damaged(w, "holds %s (page %llu): not a fusec kernel cache",
                       kind == KIND_MAIN ? "plain keys in its main database"
                                         : "a nested database",
                       (unsigned long long)pgno);
    const uint8_t *data = key + ks;
    uint8_t *big = NULL;
    if (nflags & F_BIGDATA) {
        if (off + 8 + ks + 8 > w->psize)
            return damaged(w, "has a node past the end of page %llu", (unsigned long long)pgno);
        uint64_t ov = rd64(data), npages = (LM_PAGEHDR - 1 + dsize) / w->psize + 1;
        if (ov < 2 || ov > w->last_pg || npages > w->last_pg - ov + 1)
            return damaged(w, "has a value on pages %llu..+%llu, past its last page %llu",
                           (unsigned long long)ov, (unsigned long long)npages,
                           (unsigned long long)w->last_pg);
        if (mark(w, ov, npages)) return 1;
        uint8_t hdr[LM_PAGEHDR];
        if (read_at(w, hdr, sizeof hdr, ov * w->psize)) return w->result;
        if (rd64(hdr) != ov || !(rd16(hdr + 10) & P_OVERFLOW) || rd32(hdr + 12) != npages)
            return damaged(w, "has a bad overflow page %llu", (unsigned long long)ov);
        if (kind == KIND_NAMED) return 0; /* a value of ours: its own checksum covers it */
        if (dsize > (64u << 20)) return damaged(w, "has a free list of %llu bytes",
                                                (unsigned long long)dsize);
        if (!(big = malloc(dsize ? dsize : 1))) return cannot_judge(w);
        if (read_at(w, big, dsize, ov * w->psize + LM_PAGEHDR)) {
            free(big);
            return w->result;
        }
        data = big;
    } else if (off + 8 + ks + dsize > w->psize) {
        return damaged(w, "has a node past the end of page %llu", (unsigned long long)pgno);
    }
    int rc = 0;
    if (kind == KIND_MAIN) {
        rc = dsize == 48 ? walk_named(w, key, ks, data)
                         : damaged(w, "has a database record of %llu bytes",
                                   (unsigned long long)dsize);
    } else if (kind == KIND_FREE) {
        uint64_t count = dsize >= 8 ? rd64(data) : 0;
        if (ks != 8 || dsize < 8 || count > dsize / 8 - 1)
            rc = damaged(w, "has a bad free-list record on page %llu", (unsigned long long)pgno);
        for (uint64_t i = 0; !rc && i < count; i++) {
            uint64_t id = rd64(data + 8 + 8 * i);
            if (id < 2 || id > w->last_pg)
                rc = damaged(w, "has a free list naming page %llu, past its last page %llu",
                             (unsigned long long)id, (unsigned long long)w->last_pg);
        }
    }
    free(big);
    return rc;
}

static int walk_page(walker *w, uint64_t pgno, unsigned level, int kind) {
    if (pgno < 2 || pgno > w->last_pg)
        return damaged(w, "points to page %llu, past its last page %llu",
                       (unsigned long long)pgno, (unsigned long long)w->last_pg);
    if (mark(w, pgno, 1)) return 1;
    uint8_t *p = malloc(w->psize);
    if (!p) return cannot_judge(w);
    int rc = read_at(w, p, w->psize, pgno * w->psize);
    if (rc) {
        free(p);
        return rc;
    }
    uint16_t flags = rd16(p + 10), lower = rd16(p + 12), upper = rd16(p + 14);
    unsigned want = level > 1 ? P_BRANCH : P_LEAF;
    if (rd64(p) != pgno)
        rc = damaged(w, "has page %llu saying it is page %llu", (unsigned long long)pgno,
                     (unsigned long long)rd64(p));
    else if ((flags & (P_BRANCH | P_LEAF | P_OVERFLOW | P_META | P_LEAF2 | P_SUBP)) != want)
        rc = damaged(w, "has page %llu of the wrong kind (flags %#x)", (unsigned long long)pgno,
                     flags);
    else if (lower < LM_PAGEHDR + 2 || lower > upper || upper > w->psize || (lower & 1))
        rc = damaged(w, "has page %llu with bad bounds (%u, %u)", (unsigned long long)pgno, lower,
                     upper);
    unsigned nkeys = rc ? 0 : (lower - LM_PAGEHDR) / 2;
    for (unsigned i = 0; !rc && i < nkeys; i++) {
        size_t off = rd16(p + LM_PAGEHDR + 2 * i);
        if (off < upper || off + 8 > w->psize || off + 8 + rd16(p + off + 6) > w->psize) {
            rc = damaged(w, "has node %u of page %llu outside the page", i,
                         (unsigned long long)pgno);
        } else if (level > 1) {
            uint64_t child = rd16(p + off) | (uint64_t)rd16(p + off + 2) << 16 |
                             (uint64_t)rd16(p + off + 4) << 32;
            rc = walk_page(w, child, level - 1, kind);
        } else {
            rc = walk_leaf_node(w, p, pgno, off, kind);
        }
    }
    free(p);
    return rc;
}

int fcc_check_tree(int fd, uint64_t txnid, char *why, size_t why_size) {
    if (sizeof(size_t) != 8) return 0;
    struct stat st;
    if (fstat(fd, &st) != 0) return -1;
    lm_meta m[2];
    int newest;
    char scratch[160];
    if (read_metas(fd, (uint64_t)st.st_size, m, &newest, scratch, sizeof scratch)) return -1;
    const lm_meta *cur = m[0].txnid == txnid ? &m[0] : m[1].txnid == txnid ? &m[1] : NULL;
    if (!cur) return -1; /* a writer has moved on past our snapshot's meta page */
    if (cur->last_pg > (uint64_t)st.st_size / cur->psize - 1) {
        say(why, why_size, "is truncated (%llu bytes, but its last page %llu ends at byte %llu)",
            (unsigned long long)st.st_size, (unsigned long long)cur->last_pg,
            (unsigned long long)((cur->last_pg + 1) * cur->psize));
        return 1;
    }
    walker w = {fd, cur->psize, cur->last_pg, calloc(cur->last_pg / 8 + 1, 1), why, why_size, 0};
    if (!w.seen) return -1;
    if (cur->db[1].flags != 0)
        damaged(&w, "has a main database with LMDB flags %#x: not a fusec kernel cache",
                cur->db[1].flags);
    for (int d = 0; d < 2 && !w.result; d++)
        if (cur->db[d].root != LM_P_INVALID)
            walk_page(&w, cur->db[d].root, cur->db[d].depth, d ? KIND_MAIN : KIND_FREE);
    free(w.seen);
    return w.result;
}
