/*
 * fuzz/fuzz_cache_value.c - libFuzzer target: the kernel cache's entry decoder
 * (fcc_decode_value, cache/cache.c's parse_value) on arbitrary bytes.
 *
 * Each input is one stored value: the 32-byte header ("FCCE", version, header size, payload
 * size, XXH3-64 of the payload) and the payload (key, field hashes, lengths, strings, meta,
 * cubin), the bytes LMDB hands back or an export carries. The decoder runs on:
 *   1. the bytes as they are, with no key wanted and with the key they claim;
 *   2. the bytes with the payload checksum recomputed, so that mutations reach the layout,
 *      name and field checks behind it (a random payload almost never matches its XXH3);
 *   3. that again with the per-field hashes recomputed from the stored fields, when the
 *      layout decodes, so that the last check (FIELDS) is passed too.
 * Checked: no crash or sanitizer report, reading never leaves the value; a decoded value
 * lies inside it (strings NUL-terminated within, sizes adding up); the `fusec cache list`
 * line of any value, good or bad, is printable ASCII (names are escaped); a usable value
 * is stable: decoding it again with its own key gives the same problem (none).
 * Deterministic and leak-free: no state, no allocation kept.
 *
 * Build and run: tools/fuzz.sh [SECONDS] fuzz_cache_value (docs/ARCHITECTURE.md, "Fuzzing").
 * Without libFuzzer, ctest replays the seeds (fuzz_seeds_fuzz_cache_value, fuzz/replay.c).
 */
#include "../cache/cache.h"

#include "fuzz_util.h"

#include <stdbool.h>
#include <xxhash.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Decodes by problem, printed at exit (tools/fuzz.sh shows the line). */
static unsigned long long by_problem[FCC_PROBLEM_FIELDS + 1];

static void print_stats(void) {
    fprintf(stderr, "fuzz_cache_value: stats:");
    for (int i = 0; i <= FCC_PROBLEM_FIELDS; i++)
        fprintf(stderr, "%s %llu %s", i ? "," : "", by_problem[i],
                fcc_problem_name((fcc_problem)i));
    fputc('\n', stderr);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    atexit(print_stats);
    return 0;
}

#define HDR FCC_ENTRY_HEADER_SIZE

static uint32_t rd32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static void wr64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static bool inside(const uint8_t *v, size_t len, const void *p, size_t n) {
    const uint8_t *q = p;
    return q >= v && q <= v + len && n <= (size_t)(v + len - q);
}

static fcc_problem check(const uint8_t *v, size_t len, const fcc_key *want) {
    fcc_entry_info info;
    fcc_problem pr = fcc_decode_value(v, len, want, &info);
    if (pr > FCC_PROBLEM_FIELDS) fz_fail("fcc_decode_value returned %d", (int)pr);
    by_problem[pr]++;
    if (pr == FCC_PROBLEM_NONE) {
        const char *strs[] = {info.kernel_name, info.arch, info.options, info.summary};
        for (int i = 0; i < 4; i++) {
            if (i == 3 && !*strs[i]) continue; /* format 1: a static "" */
            if (!inside(v, len, strs[i], strlen(strs[i]) + 1))
                fz_fail("decoded string %d lies outside the value", i);
        }
        if (info.cubin_size > len || info.meta_size > len - info.cubin_size)
            fz_fail("decoded sizes (cubin %llu, meta %llu) exceed the value (%zu)",
                    (unsigned long long)info.cubin_size, (unsigned long long)info.meta_size, len);
        if (!fz_printable(info.kernel_name, strlen(info.kernel_name)) ||
            !fz_printable(info.arch, strlen(info.arch)))
            fz_fail("a decoded kernel name or arch is not printable");
        if (want && memcmp(info.key.bytes, want->bytes, 16) != 0)
            fz_fail("decoded under a key other than the one wanted");
        fcc_key own = info.key;
        if (fcc_decode_value(v, len, &own, NULL) != FCC_PROBLEM_NONE)
            fz_fail("a usable value is unusable under its own key");
    }
    char line[8192];
    size_t n = fcc_format_list_line(&info, line, sizeof line);
    if (n < sizeof line && !fz_printable(line, n))
        fz_fail("the cache list line is not printable ASCII: %s", line);
    return pr;
}

/* Recomputes the per-field hashes from the stored fields, for a value whose only problem is
 * that they do not match (its layout then holds: name, arch and options follow each other,
 * NUL-terminated, from payload offset 136; cache/cache.h). */
static void fix_fields(uint8_t *v, size_t len) {
    if (fcc_decode_value(v, len, NULL, NULL) != FCC_PROBLEM_FIELDS) return;
    uint8_t *p = v + HDR;
    const char *name = (const char *)p + 136;
    const char *arch = name + rd32(p + 104) + 1;
    const char *options = arch + rd32(p + 108) + 1;
    uint64_t h[FCC_FIELD_COUNT];
    h[FCC_FIELD_KEY_FORMAT] = XXH3_64bits(p + 80, 4);
    h[FCC_FIELD_CODEGEN] = XXH3_64bits(p + 84, 4);
    h[FCC_FIELD_SOURCE] = 0; /* not stored, not checked */
    h[FCC_FIELD_OPTIONS] = XXH3_64bits(options, strlen(options));
    h[FCC_FIELD_ARCH] = XXH3_64bits(arch, strlen(arch));
    h[FCC_FIELD_NVRTC] = XXH3_64bits(p + 88, 4);
    h[FCC_FIELD_KERNEL_NAME] = XXH3_64bits(name, strlen(name));
    for (int i = 0; i < FCC_FIELD_COUNT; i++)
        if (i != FCC_FIELD_SOURCE) wr64(p + 24 + 8 * i, h[i]);
    wr64(v + 24, XXH3_64bits(p, len - HDR));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* A copy of exactly size bytes, so that ASan sees any read past the value. */
    uint8_t *v = malloc(size ? size : 1);
    if (!v) return 0;
    memcpy(v, data, size);
    check(v, size, NULL);
    if (size >= HDR + 16) {
        fcc_key claimed;
        memcpy(claimed.bytes, v + HDR, 16);
        check(v, size, &claimed);
        fcc_key other = claimed;
        other.bytes[0] ^= 1;
        if (check(v, size, &other) == FCC_PROBLEM_NONE)
            fz_fail("a value decoded under a key other than its own");
    }
    if (size >= HDR && rd32(v) == 0x45434346u /* "FCCE" */) {
        wr64(v + 24, XXH3_64bits(v + HDR, size - HDR));
        check(v, size, NULL);
        if (size >= HDR + 136) {
            fix_fields(v, size);
            fcc_problem pr = check(v, size, NULL);
            if (pr == FCC_PROBLEM_FIELDS && rd32(v + HDR + 80) == FCC_KEY_FORMAT_VERSION)
                fz_fail("recomputed field hashes still do not match");
        }
    }
    free(v);
    return 0;
}
