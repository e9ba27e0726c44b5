/*
 * fuzz/fuzz_cache_import.c - libFuzzer target: `fusec cache import` (fcc_import_signed) of
 * arbitrary bytes as an export file, into a cache in a private temporary directory.
 *
 * An export is "FUSECEXP", a version, flags (signed), a header text saying what it holds,
 * entry records (tag, key, last use, size, the stored value with its own checksum), an end
 * record with the count and an XXH3-64 of every byte before it, and for a signed export an
 * HMAC-SHA256 (cache/cache.h, fcc_export). Each input is imported twice:
 *   1. as it is, with the fuzz key when its header says it is signed (as a user would);
 *   2. fixed up: each value's payload checksum, the end record's count and file checksum and,
 *      for a signed export, its HMAC under the fuzz key recomputed, so that mutations get past
 *      the checksums to the header text, the per-entry checks and the store pass; or, when
 *      nothing needed fixing, as it is with the key choice the wrong way round ("signed but no
 *      key", "a key but not signed").
 * Checked: no crash, hang or sanitizer report; a failed import has a message and stores
 * nothing; a successful one stores exactly its entries, every one of which `cache verify`
 * then finds good and `cache list` prints as printable ASCII, as it does the line saying
 * what the file holds. The store is emptied after each input that stored anything, so every
 * input starts from an empty cache (deterministic); the store itself is opened once.
 *
 * Build and run: tools/fuzz.sh [SECONDS] fuzz_cache_import (docs/ARCHITECTURE.md, "Fuzzing").
 * Without libFuzzer, ctest replays the seeds (fuzz_seeds_fuzz_cache_import, fuzz/replay.c).
 */
#include "../cache/cache.h"
#include "../cache/cache_int.h"

#include "fuzz_util.h"

#include <stdbool.h>
#include <xxhash.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The key signed exports are checked with; fuzz/gen_cache_corpus.c signs its seeds with it. */
static const uint8_t fuzz_key[] = "fusec fuzz key (not a secret)";
static fcc_cache *store;
static fz_memfile in_file;

/* How far imports got, printed at exit (tools/fuzz.sh shows the line). */
static struct {
    unsigned long long imports, fixed_up, ok, stored;
} stats;

static void teardown(void) {
    fcc_close(store);
    fprintf(stderr, "fuzz_cache_import: stats: %llu imports (%llu of fixed-up files), %llu "
            "succeeded, %llu stored entries\n", stats.imports, stats.fixed_up, stats.ok,
            stats.stored);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/cache", fz_tempdir());
    fcc_options o = fcc_options_default();
    o.dir = dir;
    o.initial_map_size = 1u << 20;
    o.max_map_size = 64u << 20;
    o.require_cached = 0;
    if (fcc_open(&o, &store) != FC_OK || !fcc_is_persistent(store)) {
        fprintf(stderr, "fuzz_cache_import: cannot open a cache in %s\n", dir);
        exit(1);
    }
    atexit(teardown);
    fz_memfile_init(&in_file, "fuzz.fcx");
    return 0;
}

static uint32_t rd32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t rd64(const uint8_t *p) { return rd32(p) | (uint64_t)rd32(p + 4) << 32; }
static void wr64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

#define TAG_ENTRY 0x52544E45u
#define TAG_END 0x00444E45u

/* Recomputes what a fuzzer cannot guess (checksums, the count, the HMAC) along the records
 * of an export, as far as its structure holds. Returns whether it says it is signed. */
static bool fix_up(uint8_t *b, size_t size) {
    if (size < 16 || memcmp(b, "FUSECEXP", 8) != 0) return false;
    uint32_t version = rd32(b + 8);
    bool is_signed = version >= 2 && (rd32(b + 12) & 1u);
    size_t pos = 16;
    if (version >= 2) {
        if (size < 24 || rd32(b + 16) > size - 24) return is_signed;
        pos = 24 + rd32(b + 16);
    }
    uint64_t n = 0;
    while (size - pos >= 8) {
        uint32_t tag = rd32(b + pos);
        if (tag == TAG_END) {
            if (size - pos < 24) break;
            wr64(b + pos + 8, n);
            wr64(b + pos + 16, XXH3_64bits(b, pos + 16));
            if (is_signed && size - pos >= 56) {
                fcc_hmac m;
                fcc_hmac_init(&m, fuzz_key, sizeof fuzz_key - 1);
                fcc_hmac_update(&m, b, pos + 24);
                fcc_hmac_final(&m, b + pos + 24);
            }
            break;
        }
        if (tag != TAG_ENTRY || size - pos < 40) break;
        uint64_t len = rd64(b + pos + 32);
        if (len < FCC_ENTRY_HEADER_SIZE || len > size - pos - 40) break;
        uint8_t *v = b + pos + 40;
        wr64(v + 24, XXH3_64bits(v + FCC_ENTRY_HEADER_SIZE, (size_t)len - FCC_ENTRY_HEADER_SIZE));
        pos += 40 + (size_t)len;
        n++;
    }
    return is_signed;
}

static int list_visit(const fcc_entry_info *info, void *user) {
    (void)user;
    char line[8192];
    size_t n = fcc_format_list_line(info, line, sizeof line);
    if (n < sizeof line && !fz_printable(line, n))
        fz_fail("cache list prints an imported entry unescaped: %s", line);
    return 0;
}

static uint64_t stored_entries(void) {
    fcc_stats s;
    if (fcc_get_stats(store, &s) != FC_OK) fz_fail("cache stats: %s", fcc_errmsg(store));
    return s.entries;
}

static void import(const uint8_t *bytes, size_t size, bool with_key) {
    fz_memfile_set(&in_file, bytes, size);
    uint64_t count = 99;
    char holds[512];
    fc_status st = fcc_import_signed(store, in_file.path, with_key ? fuzz_key : NULL,
                                     with_key ? sizeof fuzz_key - 1 : 0, &count, holds,
                                     sizeof holds);
    uint64_t have = stored_entries();
    stats.imports++;
    if (st != FC_OK) {
        if (!fcc_errmsg(store)[0]) fz_fail("import failed (%s) without a message",
                                           fc_strerror(st));
        if (st != FC_ERR_PARSE && st != FC_ERR_NOMEM)
            fz_fail("import failed with %s: %s", fc_strerror(st), fcc_errmsg(store));
        if (count != 0) fz_fail("a failed import counts %llu entries", (unsigned long long)count);
        if (have) fz_fail("a failed check pass stored %llu entries", (unsigned long long)have);
        return;
    }
    stats.ok++;
    stats.stored += have;
    if (!fz_printable(holds, strlen(holds)))
        fz_fail("what the export holds is not printable: %s", holds);
    /* Entries with the same key overwrite each other: at most count are stored. */
    if (have > count || (count && !have))
        fz_fail("import of %llu entries left %llu in the cache", (unsigned long long)count,
                (unsigned long long)have);
    if (!have) return;
    fcc_verify_result vr;
    if (fcc_verify(store, false, NULL, NULL, &vr) != FC_OK)
        fz_fail("cache verify after an import: %s", fcc_errmsg(store));
    if (vr.bad) fz_fail("import stored %llu entries that verify finds bad",
                        (unsigned long long)vr.bad);
    if (fcc_list(store, list_visit, NULL) != FC_OK)
        fz_fail("cache list after an import: %s", fcc_errmsg(store));
    if (fcc_clear(store) != FC_OK) fz_fail("cache clear: %s", fcc_errmsg(store));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint8_t *b = malloc(size ? size : 1);
    if (!b) return 0;
    memcpy(b, data, size);
    bool is_signed = fix_up(b, size);
    /* As a user would: with the key when the file says it is signed. */
    import(data, size, is_signed);
    if (size && memcmp(b, data, size) != 0) {
        stats.fixed_up++;
        import(b, size, is_signed);
    } else {
        import(data, size, !is_signed); /* the wrong way round: refused */
    }
    free(b);
    return 0;
}
