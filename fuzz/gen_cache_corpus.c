/*
 * fuzz/gen_cache_corpus.c - writes the seed corpus of the kernel cache's fuzz targets:
 *
 *   DIR/fuzz_cache_value/   stored values as fcc_put writes them (several archs, NVRTC and
 *                           codegen versions, options, summaries, meta and cubin sizes), one
 *                           converted to entry format 1 (no summary), and a few bad ones
 *   DIR/fuzz_cache_import/  exports as `fusec cache export` writes them: all entries, one,
 *                           none, signed with the fuzz key (fuzz/fuzz_cache_import.c), and
 *                           export format 1 (no header text)
 *
 * The values are real: a cache in a temporary directory is filled through fcc_put and
 * exported through fcc_export; the values are then read back out of the export. Run once
 * and check the output in (tests/test_cache.c checks the seeds still decode and import):
 *
 *     cmake --build build --target fuzz_gen_cache_corpus
 *     build/fuzz/fuzz_gen_cache_corpus fuzz/corpus
 */
#include "../cache/cache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

static const char fuzz_key[] = "fusec fuzz key (not a secret)"; /* as fuzz/fuzz_cache_import.c */

static uint32_t rd32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t rd64(const uint8_t *p) { return rd32(p) | (uint64_t)rd32(p + 4) << 32; }
static void wr32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static void wr64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static void die(const char *what) {
    fprintf(stderr, "gen_cache_corpus: %s\n", what);
    exit(1);
}

static uint8_t *read_all(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) die(path);
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    rewind(f);
    uint8_t *b = malloc(*n + 1);
    if (!b || fread(b, 1, *n, f) != *n) die(path);
    fclose(f);
    return b;
}

static void write_file(const char *dir, const char *name, const void *data, size_t n) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, n, f) != n || fclose(f) != 0) die(path);
}

static void export_to(fcc_cache *c, const char *dir, const char *name, const char *key) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (fcc_export_signed(c, path, key, key ? strlen(key) : 0, NULL) != FC_OK)
        die(fcc_errmsg(c));
}

/* Entry format 1 of a format-2 value: no summary string (cache/cache.h). */
static size_t to_format1(const uint8_t *v, uint8_t *out) {
    const uint8_t *p = v + 32;
    uint32_t nl = rd32(p + 104), al = rd32(p + 108), ol = rd32(p + 112), sl = rd32(p + 116);
    uint64_t ms = rd64(p + 120), cs = rd64(p + 128);
    size_t strings = 136, meta2 = (strings + nl + al + ol + sl + 4 + 15) & ~(size_t)15;
    size_t cubin2 = (meta2 + ms + 15) & ~(size_t)15;
    size_t meta1 = (strings + nl + al + ol + 3 + 15) & ~(size_t)15;
    size_t cubin1 = (meta1 + ms + 15) & ~(size_t)15, end1 = cubin1 + cs;
    uint8_t *q = out + 32;
    memset(out, 0, 32 + end1);
    memcpy(q, p, strings + nl + al + ol + 3);
    wr32(q + 116, 0);
    memcpy(q + meta1, p + meta2, ms);
    memcpy(q + cubin1, p + cubin2, cs);
    memcpy(out, "FCCE", 4);
    wr32(out + 4, 1u | 32u << 16);
    wr64(out + 16, end1);
    wr64(out + 24, XXH3_64bits(q, end1));
    return 32 + end1;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s CORPUS_DIR (fuzz/corpus)\n", argv[0]);
        return 1;
    }
    char tmp[] = "/tmp/fusec-gen-corpus-XXXXXX", vdir[4096], idir[4096];
    if (!mkdtemp(tmp)) die("mkdtemp");
    snprintf(vdir, sizeof vdir, "%s/fuzz_cache_value", argv[1]);
    snprintf(idir, sizeof idir, "%s/fuzz_cache_import", argv[1]);
    char cdir[4200];
    snprintf(cdir, sizeof cdir, "%s/cache", tmp);
    fcc_options o = fcc_options_default();
    o.dir = cdir;
    o.require_cached = 0;
    fcc_cache *c;
    if (fcc_open(&o, &c) != FC_OK || !fcc_is_persistent(c)) die("cannot open a cache");

    export_to(c, idir, "empty.fcx", NULL);
    static const struct {
        const char *arch, *options, *name, *summary;
        uint32_t codegen, nvrtc;
        size_t meta, cubin;
    } kinds[] = {
        {"sm_90", "-default-device --use_fast_math", "fk0", "elementwise: exp(x0)", 7, 12040, 48,
         160},
        {"sm_80", "", "fk1", "", 7, 12040, 0, 1},
        {"sm_90a", "--std=c++17", "fusec_row_kernel", "row over axis 1: x0-max(x0)", 7, 12080,
         17, 333},
        {"sm_75", "-lineinfo", "k", "reduce over axis 0: sum(x0*c)", 6, 11080, 5, 0},
        {"sm_120", "-O3 -default-device", "_k9", "a \\ summary with a backslash", 8, 12090, 64, 64},
    };
    int nk = (int)(sizeof kinds / sizeof kinds[0]);
    for (int k = 0; k < nk; k++) {
        char src[128];
        snprintf(src, sizeof src, "extern \"C\" __global__ void %s() {} // %d", kinds[k].name, k);
        fcc_key_fields f = {.codegen_version = kinds[k].codegen, .source = src,
                            .source_len = strlen(src), .options = kinds[k].options,
                            .arch = kinds[k].arch, .nvrtc_version = kinds[k].nvrtc,
                            .kernel_name = kinds[k].name};
        uint8_t meta[64], cubin[400];
        for (size_t i = 0; i < sizeof meta; i++) meta[i] = (uint8_t)(i * 7 + k);
        for (size_t i = 0; i < sizeof cubin; i++) cubin[i] = (uint8_t)(i * 13 + 3 * k);
        if (fcc_put(c, &f, kinds[k].summary, cubin, kinds[k].cubin, meta, kinds[k].meta) != FC_OK)
            die(fcc_errmsg(c));
        if (k == 0) export_to(c, idir, "one.fcx", NULL);
    }
    export_to(c, idir, "all.fcx", NULL);
    export_to(c, idir, "all_signed.fcx", fuzz_key);

    /* The values, out of the export; and export format 1 of the same entries. */
    char path[4300];
    snprintf(path, sizeof path, "%s/all.fcx", idir);
    size_t n;
    uint8_t *b = read_all(path, &n);
    size_t pos = 24 + rd32(b + 16), v1start = pos;
    int count = 0;
    uint8_t f1[1024];
    while (rd32(b + pos) == 0x52544E45u) {
        size_t len = (size_t)rd64(b + pos + 32);
        char name[64];
        snprintf(name, sizeof name, "entry%d", count);
        write_file(vdir, name, b + pos + 40, len);
        if (count == 2 && len + 32 <= sizeof f1) {
            size_t l1 = to_format1(b + pos + 40, f1);
            write_file(vdir, "entry2_format1", f1, l1);
        }
        if (count == 0) {
            write_file(vdir, "entry0_truncated", b + pos + 40, len - 9);
            uint8_t bad[1024];
            memcpy(bad, b + pos + 40, len);
            bad[32 + 136] ^= 0x20; /* the kernel name: a checksum mismatch */
            write_file(vdir, "entry0_bad_checksum", bad, len);
        }
        pos += 40 + len;
        count++;
    }
    /* Format 1: the 16-byte header, then the same records and trailer. */
    size_t m = 16 + (n - v1start);
    uint8_t *e1 = malloc(m);
    if (!e1) die("out of memory");
    memcpy(e1, "FUSECEXP", 8);
    wr32(e1 + 8, 1);
    wr32(e1 + 12, 0);
    memcpy(e1 + 16, b + v1start, n - v1start);
    wr64(e1 + m - 8, XXH3_64bits(e1, m - 8));
    write_file(idir, "all_format1.fcx", e1, m);
    free(e1);
    free(b);
    fcc_close(c);
    char cmd[4300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (system(cmd) != 0) die("cannot remove the temporary cache");
    printf("gen_cache_corpus: %d values, 6 exports\n", count);
    return 0;
}
