/*
 * cache/cache_int.h - internal to cache/: the checks of an LMDB environment's files made
 * before LMDB maps them (lmdb_check.c), and SHA-256 / HMAC-SHA256 for exports (sha256.c).
 */
#ifndef FUSEC_CACHE_INT_H
#define FUSEC_CACHE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

/* ---- LMDB files ----------------------------------------------------------------------------- */

typedef enum fcc_file_state {
    FCC_FILE_OK,        /* looks like a whole LMDB environment file: safe to map */
    FCC_FILE_NONE,      /* missing or empty: LMDB makes a new environment */
    FCC_FILE_DAMAGED,   /* mapping it could crash, or it is not a fusec cache: why says */
    FCC_FILE_DAMAGED_IN_USE, /* lock.mdb damaged while other processes hold it: leave it be */
    FCC_FILE_UNREADABLE /* cannot be read (permissions...): LMDB's own open reports it */
} fcc_file_state;

/* data.mdb at path, by its meta pages (read with pread, never mapped): a regular file, both
 * meta pages present with LMDB's magic and data version, a sane page size, and the file long
 * enough for the newest meta page's last page. *id gets the file's identity (st_dev,
 * st_ino) when the result is OK or DAMAGED. */
fcc_file_state fcc_check_data_file(const char *path, char *why, size_t why_size, struct stat *id);

/* lock.mdb at path: damaged when it is not a regular file, or when another process holds it
 * and its header is not LMDB's (its reader count past the file's end would make LMDB read
 * out of bounds). Unheld, LMDB rebuilds the whole lock file, so its contents do not matter. */
fcc_file_state fcc_check_lock_file(const char *path, char *why, size_t why_size);

/* Walks every page reachable from snapshot txnid of the environment file fd (open, and held
 * by a read transaction of that snapshot, so no writer reuses its pages): page numbers, page
 * kinds, node offsets and sizes, overflow runs, the free list, and the main database's
 * layout (only our named databases, plain keys). Reads with pread.
 * @return 0: good; 1: damaged (why says how); -1: cannot judge (the snapshot moved on, an
 *         I/O error, out of memory): assume good. */
int fcc_check_tree(int fd, uint64_t txnid, char *why, size_t why_size);

/* ---- SHA-256 and HMAC-SHA256 ------------------------------------------------------------------ */

typedef struct fcc_sha256 {
    uint32_t h[8];
    uint64_t len;
    uint8_t buf[64];
    size_t fill;
} fcc_sha256;

void fcc_sha256_init(fcc_sha256 *s);
void fcc_sha256_update(fcc_sha256 *s, const void *data, size_t n);
void fcc_sha256_final(fcc_sha256 *s, uint8_t out[32]);

typedef struct fcc_hmac {
    fcc_sha256 inner, outer;
} fcc_hmac;

void fcc_hmac_init(fcc_hmac *m, const uint8_t *key, size_t key_len);
void fcc_hmac_update(fcc_hmac *m, const void *data, size_t n);
void fcc_hmac_final(fcc_hmac *m, uint8_t out[32]);

/* Compares n bytes in time independent of where they differ. */
bool fcc_digest_equal(const uint8_t *a, const uint8_t *b, size_t n);

#endif /* FUSEC_CACHE_INT_H */
